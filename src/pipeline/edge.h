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

#include "pixflow/pipeline.h"

typedef struct pf_edge pf_edge;

pf_status pf_edge_create(const pf_edge_params *p, const pf_clock *clock, pf_edge **out);
/* Releases queued items. No thread may be using the edge. */
void pf_edge_destroy(pf_edge **e);
void pf_edge_add_producer(pf_edge *e);
pf_status pf_edge_push(pf_edge *e, pf_item *item, int64_t timeout_us);
pf_status pf_edge_pop(pf_edge *e, pf_item *out, int64_t timeout_us);
/* Non-blocking pop of up to max items (for batchers); returns how many. */
int pf_edge_pop_many(pf_edge *e, pf_item *out, int max);
void pf_edge_close(pf_edge *e);
void pf_edge_cancel(pf_edge *e);
int pf_edge_depth(pf_edge *e);
/* Fills counts, capacity, policy and depth figures (from/to left alone). */
void pf_edge_get_stats(pf_edge *e, pf_edge_stats *out);

#endif
