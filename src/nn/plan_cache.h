/* Internal: tuned choices on disk (the executors' plan cache).
 *
 * What is stored: small records of what plan-time tuning chose (a conv's
 * algorithm, kernel config, engine), never the plans or graphs themselves,
 * keyed by an entry text that describes the problem exactly (the conv's
 * shapes, strides, pads, batch, activation...). One file holds the entries
 * of one `key` text: the model's content hash, the device name and compute
 * capability, driver/cuDNN/cuBLAS versions, the precision and the format
 * version; any change of those is another file, so a stale choice is never
 * applied to another model, device or library version.
 *
 * Where: $PIXFLOW_CACHE_DIR, else $XDG_CACHE_HOME/pixflow, else
 * $HOME/.cache/pixflow (made with mode 0700). PIXFLOW_CACHE_DIR=off (or
 * empty) disables the cache.
 *
 * Safety: a file is read whole and checked (magic, format version, its key
 * text equal to ours, sizes in bounds, a 64-bit checksum over everything);
 * a file that fails any check is ignored with one log line and rebuilt.
 * Writes go to a temporary file in the same directory, renamed over the old
 * one, so a reader sees the old file or the new one, never half of either.
 * Before writing, the file on disk is read again and its entries merged
 * with ours, so concurrent processes that tune different problems keep
 * each other's entries (when two rename at once, the later wins and the
 * other's new entries are tuned again next time: lost work, never a wrong
 * choice). A failed write (full disk, read-only directory) is one log line;
 * the run goes on.
 *
 * Thread-safe: the calls lock the cache. */
#ifndef PF_NN_PLAN_CACHE_H
#define PF_NN_PLAN_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pixflow/core.h"

#define PF_PLAN_CACHE_FORMAT 1
#define PF_PLAN_CACHE_MAX_KEY 4096   /* file key text and entry key text, bytes */
#define PF_PLAN_CACHE_MAX_VALUE 1024 /* one entry's value, bytes */
#define PF_PLAN_CACHE_MAX_ENTRIES 100000
#define PF_PLAN_CACHE_CHECK_SEED 0x706c616e63616368ull /* pf_hash64 seed of the checksum */

typedef struct pf_plan_cache pf_plan_cache;

typedef struct pf_plan_cache_stats {
    int64_t hits, misses, stored; /* lookups answered / not; entries added this run */
    bool loaded;                  /* a valid file was read at open */
    bool rejected;                /* a file was there but failed its checks */
    bool write_failed;
} pf_plan_cache_stats;

/* The cache directory (see above) into buf; false when disabled or no
 * directory can be named. Does not create it. */
bool pf_plan_cache_dir(char *buf, size_t size);

/* Opens the cache of `key` (printable text) and loads its file if there is
 * a valid one. NULL when the cache is disabled or out of memory: callers
 * treat NULL as an always-empty cache (every call below accepts NULL). */
pf_plan_cache *pf_plan_cache_open(const char *key);

/* Copies the value of entry `ekey` into val when one of exactly `size`
 * bytes exists; false otherwise (a miss). */
bool pf_plan_cache_get(pf_plan_cache *c, const char *ekey, void *val, size_t size);

/* Adds or replaces entry `ekey` (kept in memory until flush). */
void pf_plan_cache_put(pf_plan_cache *c, const char *ekey, const void *val, size_t size);

/* Writes the entries when something was added since the last flush
 * (merged with the file on disk, atomically). PF_OK, or the error
 * (logged once; the cache stays usable in memory). */
pf_status pf_plan_cache_flush(pf_plan_cache *c);

void pf_plan_cache_get_stats(pf_plan_cache *c, pf_plan_cache_stats *out);

/* The file's path into buf (for logs and tests); false when c is NULL. */
bool pf_plan_cache_path(const pf_plan_cache *c, char *buf, size_t size);

/* Flushes and frees; *c = NULL. */
void pf_plan_cache_close(pf_plan_cache **c);

/* Parses a cache file's bytes: calls add(arg, ekey, value, vsize) for each
 * entry of a valid file whose key is `key`. PF_OK, or PF_ERR_FORMAT with a
 * message saying which check failed (nothing is added then). Exposed for
 * the fuzzer. */
pf_status pf_plan_cache_parse(const void *data, size_t size, const char *key,
                              void (*add)(void *arg, const char *ekey, const void *val,
                                          size_t vsize),
                              void *arg);

#endif
