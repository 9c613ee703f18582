/* Private: the dynamic batcher's decision logic (pipeline.h, "Dynamic
 * batcher"), separate from threads and edges so it can be tested with a fake
 * clock. Not thread-safe: one stage worker owns it.
 *
 *   pf_batcher_add(b, &item, now)            // takes ownership (PF_AGAIN if full)
 *   if (pf_batcher_ready(b, now, eos)) n = pf_batcher_take(b, out, now);
 *   else wait until pf_batcher_deadline(b) or a new item arrives. */
#ifndef PF_PIPELINE_BATCHER_H
#define PF_PIPELINE_BATCHER_H

#include <stdbool.h>

#include "pixflow/pipeline.h"

typedef struct pf_batcher pf_batcher;

/* capacity: requests it may hold waiting (>= max_batch). */
pf_status pf_batcher_create(const pf_batch_params *p, int capacity, pf_batcher **out);
/* Releases waiting items. */
void pf_batcher_destroy(pf_batcher **b);
/* Takes the item (arrival time `now_ns`); PF_AGAIN when at capacity (the
 * caller keeps it). */
pf_status pf_batcher_add(pf_batcher *b, pf_item *item, int64_t now_ns);
int pf_batcher_count(const pf_batcher *b);
/* Lowers the largest batch formed from now on to max_batch (never raises
 * it; any thread); returns the limit now in force. */
int pf_batcher_limit(pf_batcher *b, int max_batch);
/* Whether a batch should be formed now: max_batch waiting, or the delay
 * (pf_batcher_deadline) has run out, or eos with anything waiting. */
bool pf_batcher_ready(const pf_batcher *b, int64_t now_ns, bool eos);
/* When the delay of the batch being collected runs out (INT64_MAX if none):
 * max_delay after its first frame - the oldest waiting request's arrival,
 * or the last take for a request that was already waiting then. */
int64_t pf_batcher_deadline(const pf_batcher *b);
/* Moves up to max_batch items into out[] by the fairness rules; returns n.
 * now_ns starts the next batch's collection (see pf_batcher_deadline). */
int pf_batcher_take(pf_batcher *b, pf_item *out, int64_t now_ns);

#endif
