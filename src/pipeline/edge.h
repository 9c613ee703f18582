/* Private: one edge of a pipeline - a bounded FIFO of pf_items with a drop
 * policy (pipeline.h, "Edges"), statistics, end of stream and cancellation.
 *
 * Ownership: pf_edge_push always takes the item (it is queued, or released
 * and counted as dropped, or released on a closed/cancelled edge), except when
 * it returns PF_TIMEOUT or PF_AGAIN (BLOCK policy only): then the caller
 * still owns it. Many producers and consumers may use one edge.
 *
 * End of stream: the edge knows how many producers feed it
 * (pf_edge_add_producer); each calls pf_edge_close when done; once all have,
 * consumers drain what is queued and then get PF_EOF. Cancel drops everything
 * queued (counted as cancelled) and wakes everyone: pushes then release their
 * item and return PF_ERR_CANCELLED, pops return PF_ERR_CANCELLED. */
#ifndef PF_PIPELINE_EDGE_H
#define PF_PIPELINE_EDGE_H

#include <stdatomic.h>
#include <stdint.h>

#include "pixflow/pipeline.h"
#include "../core/sys.h"

typedef struct pf_edge pf_edge;

/* Fan-in: a consumer reading several edges sleeps on one pf_edge_notify that
 * all of them signal. Every push that queues an item, every close and cancel
 * bumps `gen` and, when a consumer sleeps (waiters > 0), signals `cv`
 * under `mu` - after letting go of the edge's own lock, so the edge lock and
 * `mu` are never held together by a producer. A consumer reads gen, scans its
 * edges without blocking, and sleeps only while gen is unchanged
 * (pf_edge_notify_wait), so a push between its scan and its sleep is never
 * missed (gen and waiters are sequentially consistent atomics: the producer
 * bumps gen then reads waiters, the consumer raises waiters then reads gen). */
typedef struct pf_edge_notify {
    pf_mutex mu;
    pf_cond cv;
    atomic_uint_fast64_t gen;
    atomic_int waiters;
} pf_edge_notify;

void pf_edge_notify_init(pf_edge_notify *n);
void pf_edge_notify_destroy(pf_edge_notify *n);
uint64_t pf_edge_notify_gen(pf_edge_notify *n);
/* Sleeps until gen differs from `seen` or the absolute deadline (pf_time_ns
 * clock; INT64_MAX = none) passes. */
void pf_edge_notify_wait(pf_edge_notify *n, uint64_t seen, int64_t deadline_ns);
/* Wakes one sleeper (a push: one item for one consumer) or all (close,
 * cancel, a new input edge). n may be NULL. */
void pf_edge_notify_signal(pf_edge_notify *n, bool all);

pf_status pf_edge_create(const pf_edge_params *p, const pf_clock *clock, pf_edge **out);
/* Releases queued items. No thread may be using the edge. */
void pf_edge_destroy(pf_edge **e);
void pf_edge_add_producer(pf_edge *e);
/* Before any push: the notifier to signal (fan-in consumers), and a hook
 * called with every item a policy drops, before it is released (per-stream
 * drop counts), outside the edge's lock. Either may be NULL. */
void pf_edge_set_hooks(pf_edge *e, pf_edge_notify *notify,
                       void (*on_drop)(void *user, const pf_item *victim), void *drop_user);
pf_status pf_edge_push(pf_edge *e, pf_item *item, int64_t timeout_us);
pf_status pf_edge_pop(pf_edge *e, pf_item *out, int64_t timeout_us);
/* Non-blocking pop of up to max items (for batchers); returns how many. */
int pf_edge_pop_many(pf_edge *e, pf_item *out, int max);
/* pf_edge_pop_many that also says whether the edge can still give items:
 * *state = PF_OK (live), PF_EOF (every producer closed and nothing is left)
 * or PF_ERR_CANCELLED. */
int pf_edge_take(pf_edge *e, pf_item *out, int max, pf_status *state);
void pf_edge_close(pf_edge *e);
void pf_edge_cancel(pf_edge *e);
int pf_edge_depth(pf_edge *e);
/* Fills counts, capacity, policy and depth figures (from/to left alone). */
void pf_edge_get_stats(pf_edge *e, pf_edge_stats *out);

#endif
