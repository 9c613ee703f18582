/* CUDA-graph cache: capture once per key, replay afterwards.
 *
 * Design:
 * - An entry owns a copy of the caller's key bytes and either an executable
 *   graph or an "uncapturable" marker (exec == NULL). Markers are ordinary
 *   entries: they take a slot, take part in LRU order and can be evicted, in
 *   which case the key is simply tried again later.
 * - Lookup: FNV-1a hash of the key into a fixed bucket array (chained), then
 *   length + memcmp. The entry also remembers the device it was captured on:
 *   an executable graph belongs to one device, so the same key on a stream of
 *   another device is a different entry.
 * - LRU: a doubly linked list, most recently used first; inserting beyond
 *   max_entries evicts from the tail and destroys its graph.
 * - The entry record (with its key copy) is allocated before capture starts,
 *   so once a graph exists nothing can fail for lack of host memory.
 *
 * Why work() may run twice for one run: when capture fails (graph_end
 * reports an error, e.g. because work() synchronized the capturing stream),
 * nothing work() issued during capture has executed - capture only records.
 * To keep the run's effect, work() is called again with the stream in normal
 * mode; the key is then marked uncapturable so later runs of that key go
 * straight to direct execution with a single call. (When capture cannot even
 * begin, e.g. the stream is already being captured by the caller, work() runs
 * once, directly, and the key is not marked: that is the stream's state, not
 * the work's fault.)
 *
 * An error returned by work() while capturing is returned unchanged when the
 * capture itself ended cleanly (nothing is cached). When work() failed AND
 * the capture was invalidated, the error is most likely the capture's fault
 * (e.g. pf_stream_synchronize() refused inside capture), so this is handled
 * as a capture failure: work() runs directly and its result is returned.
 *
 * Not thread-safe (one cache per stream/thread, as device.h says); a work
 * function calling back into the same cache gets PF_ERR_BUSY.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "backend.h"

#define DEFAULT_MAX_ENTRIES 64
#define MAX_BUCKETS (1u << 16)

typedef struct gc_entry gc_entry;
struct gc_entry {
    uint64_t hash;
    size_t key_len;
    unsigned char *key;      /* own copy; NULL when key_len == 0 */
    pf_device *dev;          /* device the graph belongs to */
    const pf_backend *be;    /* destroys exec */
    void *exec;              /* NULL: uncapturable marker */
    gc_entry *hnext;         /* bucket chain */
    gc_entry *prev, *next;   /* LRU list, head = most recent */
};

struct pf_graph_cache {
    int max_entries;
    int entries;
    size_t nbuckets;          /* power of two */
    gc_entry **buckets;
    gc_entry *head, *tail;
    bool running;             /* inside pf_graph_cache_run: re-entry guard */
    pf_graph_cache_stats stats;
};

pf_graph_cache_params pf_graph_cache_params_default(void)
{
    pf_graph_cache_params p = {.max_entries = DEFAULT_MAX_ENTRIES};
    return p;
}

static uint64_t hash_key(const void *key, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)len;
    const unsigned char *k = key;
    for (size_t i = 0; i < len; i++) {
        h ^= k[i];
        h *= 0x100000001b3ull;
    }
    return h ^ (h >> 29);
}

pf_status pf_graph_cache_create(const pf_graph_cache_params *p, pf_graph_cache **out)
{
    PF_CHECK_ARG(out, "pf_graph_cache_create", "out is NULL");
    *out = NULL;
    pf_graph_cache_params def = pf_graph_cache_params_default();
    if (!p) p = &def;
    if (p->max_entries < 0)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_graph_cache_create: max_entries %d is negative (0 = default %d)",
                            p->max_entries, DEFAULT_MAX_ENTRIES);
    pf_graph_cache *gc = calloc(1, sizeof *gc);
    if (!gc) return pf_set_error(PF_ERR_NOMEM, "pf_graph_cache_create: out of host memory");
    gc->max_entries = p->max_entries ? p->max_entries : DEFAULT_MAX_ENTRIES;
    /* About two buckets per entry keeps chains short; the array is capped so
     * a huge max_entries does not cost memory up front. */
    size_t nb = 16;
    while (nb < MAX_BUCKETS && nb < 2 * (size_t)gc->max_entries) nb <<= 1;
    gc->nbuckets = nb;
    gc->buckets = calloc(nb, sizeof *gc->buckets);
    if (!gc->buckets) {
        free(gc);
        return pf_set_error(PF_ERR_NOMEM, "pf_graph_cache_create: out of host memory");
    }
    *out = gc;
    return PF_OK;
}

static void entry_free(gc_entry *e)
{
    if (e->exec) e->be->graph_destroy(e->exec);
    free(e->key);
    free(e);
}

void pf_graph_cache_destroy(pf_graph_cache **pgc)
{
    if (!pgc || !*pgc) return;
    pf_graph_cache *gc = *pgc;
    *pgc = NULL;
    for (gc_entry *e = gc->head, *next; e; e = next) {
        next = e->next;
        entry_free(e);
    }
    free(gc->buckets);
    free(gc);
}

static gc_entry **bucket_of(pf_graph_cache *gc, uint64_t hash)
{
    return &gc->buckets[hash & (gc->nbuckets - 1)];
}

static gc_entry *find(pf_graph_cache *gc, pf_device *dev, const void *key, size_t len,
                      uint64_t hash)
{
    for (gc_entry *e = *bucket_of(gc, hash); e; e = e->hnext)
        if (e->hash == hash && e->key_len == len && e->dev == dev &&
            (len == 0 || memcmp(e->key, key, len) == 0))
            return e;
    return NULL;
}

static void lru_unlink(pf_graph_cache *gc, gc_entry *e)
{
    if (e->prev) e->prev->next = e->next;
    else gc->head = e->next;
    if (e->next) e->next->prev = e->prev;
    else gc->tail = e->prev;
    e->prev = e->next = NULL;
}

static void lru_push_front(pf_graph_cache *gc, gc_entry *e)
{
    e->prev = NULL;
    e->next = gc->head;
    if (gc->head) gc->head->prev = e;
    gc->head = e;
    if (!gc->tail) gc->tail = e;
}

/* Unlinks an entry from its bucket and the LRU list and frees it. */
static void remove_entry(pf_graph_cache *gc, gc_entry *e)
{
    for (gc_entry **pp = bucket_of(gc, e->hash); *pp; pp = &(*pp)->hnext) {
        if (*pp == e) {
            *pp = e->hnext;
            break;
        }
    }
    lru_unlink(gc, e);
    gc->entries--;
    entry_free(e);
}

/* A detached record holding a copy of the key; inserted later. */
static pf_status entry_new(pf_stream *s, const void *key, size_t len, uint64_t hash,
                           gc_entry **out)
{
    gc_entry *e = calloc(1, sizeof *e);
    if (!e) return pf_set_error(PF_ERR_NOMEM, "pf_graph_cache_run: out of host memory");
    if (len) {
        e->key = malloc(len);
        if (!e->key) {
            free(e);
            return pf_set_error(PF_ERR_NOMEM,
                                "pf_graph_cache_run: out of host memory for a key of %zu bytes",
                                len);
        }
        memcpy(e->key, key, len);
    }
    e->key_len = len;
    e->hash = hash;
    e->dev = s->dev;
    e->be = s->be;
    *out = e;
    return PF_OK;
}

/* Inserts a detached record as most recent, evicting the least recently used
 * entries beyond max_entries. */
static void insert(pf_graph_cache *gc, gc_entry *e)
{
    while (gc->entries >= gc->max_entries && gc->tail) {
        remove_entry(gc, gc->tail);
        gc->stats.evictions++;
    }
    gc_entry **b = bucket_of(gc, e->hash);
    e->hnext = *b;
    *b = e;
    lru_push_front(gc, e);
    gc->entries++;
}

/* Direct execution after a failed capture. `rec` (detached) becomes the
 * key's uncapturable marker when `mark` is set and the direct run succeeds;
 * otherwise it is freed. */
static pf_status fallback(pf_graph_cache *gc, pf_stream *s, gc_entry *rec, bool mark,
                          pf_graph_work_fn work, void *user)
{
    gc->stats.capture_failures++;
    PF_LOGD("pf_graph_cache: capture failed on %s (%s); running the work directly%s",
            s->dev->spec, pf_last_error(), mark ? " and marking its key uncapturable" : "");
    gc->stats.direct_runs++;
    pf_status st = work(user, s);
    if (st == PF_OK && mark) {
        /* Only a key whose direct run works is marked: a failing key is
         * retried with capture next time rather than judged on an error. */
        rec->exec = NULL;
        insert(gc, rec);
    } else {
        entry_free(rec);
    }
    return st;
}

static pf_status run_once(pf_graph_cache *gc, pf_stream *s, const void *key, size_t key_len,
                          pf_graph_work_fn work, void *user)
{
    const pf_backend *be = s->be;
    if (!be->graph_begin || !be->graph_end || !be->graph_launch || !be->graph_destroy) {
        gc->stats.direct_runs++;
        return work(user, s);
    }

    uint64_t hash = hash_key(key, key_len);
    gc_entry *e = find(gc, s->dev, key, key_len, hash);
    if (e) {
        lru_unlink(gc, e);
        lru_push_front(gc, e);
        if (!e->exec) {
            gc->stats.direct_runs++;
            return work(user, s);
        }
        pf_status st = be->graph_launch(e->exec, s->native);
        if (st != PF_OK) {
            /* A graph that failed to launch is not trusted again. */
            remove_entry(gc, e);
            return st;
        }
        gc->stats.replays++;
        return PF_OK;
    }

    gc_entry *rec = NULL;
    pf_status st = entry_new(s, key, key_len, hash, &rec);
    if (st != PF_OK) return st;

    /* A stream that cannot start capturing (e.g. it is already being
     * captured by the caller, whose graph then records this work) says
     * nothing about the work itself: run it directly without marking. */
    st = be->graph_begin(s->native);
    if (st != PF_OK) return fallback(gc, s, rec, false, work, user);

    pf_status wst = work(user, s);
    void *exec = NULL;
    pf_status est = be->graph_end(s->native, &exec);
    if (est != PF_OK) {
        /* graph_end left the capture error in pf_last_error() for the log. */
        return fallback(gc, s, rec, true, work, user);
    }
    if (wst != PF_OK) {
        /* Capture was fine but the work said no: return its status as is.
         * Its message is still the thread's last error (graph_end set none). */
        be->graph_destroy(exec);
        entry_free(rec);
        return wst;
    }

    rec->exec = exec;
    insert(gc, rec);
    gc->stats.captures++;
    /* Capture only recorded the work: launching it is what executes it. */
    st = be->graph_launch(exec, s->native);
    if (st != PF_OK) {
        remove_entry(gc, rec);
        return st;
    }
    return PF_OK;
}

pf_status pf_graph_cache_run(pf_graph_cache *gc, pf_stream *s, const void *key, size_t key_len,
                             pf_graph_work_fn work, void *user)
{
    PF_CHECK_ARG(gc, "pf_graph_cache_run", "cache is NULL");
    PF_CHECK_ARG(s, "pf_graph_cache_run", "stream is NULL");
    PF_CHECK_ARG(work, "pf_graph_cache_run", "work function is NULL");
    if (!key && key_len)
        return pf_set_error(PF_ERR_INVALID, "pf_graph_cache_run: key is NULL but key_len is %zu",
                            key_len);
    if (gc->running)
        return pf_set_error(PF_ERR_BUSY,
                            "pf_graph_cache_run: called from inside a work function of the "
                            "same cache (a cache is not re-entrant)");
    gc->running = true;
    pf_status st = run_once(gc, s, key, key_len, work, user);
    gc->running = false;
    return st;
}

pf_status pf_graph_cache_get_stats(const pf_graph_cache *gc, pf_graph_cache_stats *out)
{
    PF_CHECK_ARG(gc, "pf_graph_cache_get_stats", "cache is NULL");
    PF_CHECK_ARG(out, "pf_graph_cache_get_stats", "out is NULL");
    *out = gc->stats;
    out->entries = gc->entries;
    return PF_OK;
}
