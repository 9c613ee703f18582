/* The built-in `mux` stage: a stream muxer in front of a model.
 *
 * The muxing itself is the runtime's: a stage with several input edges
 * (fanin.c) and a batch (batcher.c) forms batches across streams with
 * nvstreammux's rules (pipeline.h, "Many streams" and "Dynamic batcher").
 * This type only gives that a name and parameters in nvstreammux's terms
 * and passes each batch on in the order it was formed (round-robin over the
 * streams, FIFO within each), items unchanged: frames keep their source id,
 * and nothing is copied (a pass-through emits the same references, so no
 * transfer is asked for either: it accepts and produces its device's side). */
#include "builtin_impl.h"

static pf_status mux_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    (void)user;
    return bi_emit_all(ctx, items, n);
}

pf_status bi_mux_create(bi_args *a, pf_stage_desc *d)
{
    pf_status st;
    bi_stage *s = bi_stage_new(sizeof *s, a, d, &st);
    if (!s) return st;
    d->process = mux_process;
    int64_t batch = 1, timeout = 0;
    st = bi_int(a, "batch_size", 1, 1, PF_STATS_MAX_BATCH, &batch);
    if (st == PF_OK) st = bi_int(a, "timeout_us", 0, 0, 60000000, &timeout);
    d->batch.max_batch = (int)batch;
    d->batch.max_delay_us = timeout;
    return bi_create_end(s, d, st);
}
