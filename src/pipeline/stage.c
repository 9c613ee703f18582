/* Stage workers: the source and process loops, batching, emit with fan-out,
 * ordered re-sequencing, GPU readiness, end of stream and error propagation.
 *
 * Each stage runs `threads` workers. A source worker claims an item slot
 * (max_items) and a pacing deadline under the stage's src_mu, sleeps until the
 * deadline (absolute: t_start + k / fps, so the rate never drifts; when it
 * falls more than a period behind it skips the missed ticks instead of
 * bursting), calls the source, fills seq/source/t_source_ns, and emits.
 *
 * A process worker takes one item (no batching) or forms a batch through the
 * batcher, which it shares with the stage's other workers under in_mu, from
 * the stage's input edges (one or several: fanin.c): it moves what the edges
 * hold into the batcher without blocking, takes a batch when the batcher
 * says so, and otherwise sleeps on the stage's notifier (any input edge
 * changing wakes it) until the batcher's deadline.
 *
 * Ordered stages (threads > 1, `ordered`): each batch gets a ticket when it is
 * taken from the input (under in_mu, so tickets follow input order). A worker
 * may emit only while the stage's emit_turn equals its ticket, and passes the
 * turn on when its process call returns, so outputs leave in input order
 * while the process calls themselves overlap (work done before the first
 * emit runs in parallel).
 *
 * GPU stages (on a CUDA device). Emit records an event on the worker's stream
 * and puts it in item.ready; a consumer makes its stream wait on it before
 * process (a CPU consumer's stream blocks the host instead), so the host never
 * waits for the GPU between GPU stages. Deferred release: a GPU process call
 * only queues work and typically drops its input at once; device memory from
 * a stream-ordered allocator then goes back to the producer's stream while the
 * consumer's stream may still read it. So the runtime keeps its own reference
 * to a GPU stage's inputs until an event recorded after the call has
 * completed (at most PL_DEFER calls in flight; the oldest is waited for when
 * the window is full, which also bounds how far the host runs ahead).
 *
 * GPU spans (tracing). A GPU stage's calls also get spans on a GPU track of
 * the worker's name: the time its stream spent on the work queued by the
 * call. Each defer slot has a start event, recorded on the stream just
 * before the call (after the waits for the inputs' producers, so the span
 * starts when this stage's work can start), and an end event, recorded by
 * each emit of the call just before the item's ready event (so the last
 * emit's record is the end). Not the defer event recorded after the call:
 * on a stream that has gone idle an event completes when the host records
 * it, and between an emit and the call's return the host may wait (the
 * push, ordering, being descheduled) after the consumer already has the
 * item, so that end could fall after the consumer finished. Work a call
 * queues after its last emit is left out of its span; a call that emitted
 * nothing ends at its defer event. The pair is handed to pf_trace_gpu_span()
 * (once per item of the call, with its source and seq) when the slot is
 * released after its end event completed, which resolves the span at once
 * (prof.h), so the events are reused only after that: no extra waits, no
 * allocation. A slot released without its end event known complete (a
 * failed wait, teardown) traces nothing. GPU sources go through the same
 * window while tracing (the window is otherwise only for inputs), which
 * bounds a traced GPU source to PL_DEFER calls ahead of its stream. The
 * CPU span of a traced GPU call starts before the start event is recorded,
 * so the GPU span starts inside it; the record is left out of the stage's
 * latency statistics.
 *
 * Busy time and per-call latency leave out time blocked in emit (back
 * pressure, ordering), otherwise the stage upstream of a bottleneck would look
 * like the bottleneck. A push is first tried without blocking, so the clock
 * is read only when it really waits. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "pipeline_impl.h"

static inline bool stopping(const pf_pipeline *p) { return atomic_load(&p->stopping) != 0; }

static inline void add64(atomic_uint_fast64_t *a, uint64_t v)
{
    atomic_fetch_add_explicit(a, v, memory_order_relaxed);
}

bool pl_location_matches(const pf_buffer *buf, pf_mem_domain want, pf_device *want_dev)
{
    pf_mem_domain d = pf_buffer_domain(buf);
    if (pl_domain_is_host(want)) return pl_domain_is_host(d);
    return !pl_domain_is_host(d) && pf_buffer_device(buf) == want_dev;
}

/* Context API ------------------------------------------------------------------- */

pf_stream *pf_stage_stream(pf_stage_ctx *ctx) { return ctx ? ctx->stream : NULL; }
pf_device *pf_stage_device(pf_stage_ctx *ctx) { return ctx ? ctx->st->dev : NULL; }

int pf_stage_limit_batch(pf_stage_ctx *ctx, int max_batch)
{
    if (!ctx) return 0;
    pf_stage *s = ctx->st;
    int now = s->batcher ? pf_batcher_limit(s->batcher, max_batch) : 1;
    int prev = atomic_exchange(&s->batch_limit, now);
    if (now < prev || prev == 0) atomic_fetch_add(&s->batch_limits, 1);
    return now;
}
int pf_stage_thread_index(pf_stage_ctx *ctx) { return ctx ? ctx->index : -1; }

pf_allocator *pf_stage_allocator(pf_stage_ctx *ctx, pf_mem_domain domain)
{
    if (!ctx || (unsigned)domain > PF_MEM_DEVICE) return NULL;
    /* Cached per worker: the pipeline's table is behind its lock. */
    if (!ctx->alloc[domain]) ctx->alloc[domain] = pl_get_allocator(ctx->st->pl, ctx->st->dev, domain);
    return ctx->alloc[domain];
}

/* Errors ---------------------------------------------------------------------------- */

/* Records "stage NAME: item (source S, seq N): detail" as the pipeline's
 * error. An emit that failed because the pipeline is already stopping is the
 * unwinding of an earlier error, not a new one. */
static void fail_item(pf_stage_ctx *ctx, pf_status st, const char *detail, int32_t source,
                      int64_t seq, int n)
{
    pf_stage *s = ctx->st;
    pf_pipeline *p = s->pl;
    if (st == PF_ERR_CANCELLED && stopping(p)) return;
    add64(&s->errors, 1);
    if (!detail || !*detail) detail = pf_status_str(st);
    char msg[sizeof p->errmsg];
    if (n > 1)
        snprintf(msg, sizeof msg, "stage %s: item (source %d, seq %" PRId64 ") and %d more: %s",
                 s->name, (int)source, seq, n - 1, detail);
    else
        snprintf(msg, sizeof msg, "stage %s: item (source %d, seq %" PRId64 "): %s", s->name,
                 (int)source, seq, detail);
    pl_fail(p, st, msg);
}

static void fail_stage(pf_stage_ctx *ctx, pf_status st, const char *what, const char *detail)
{
    pf_stage *s = ctx->st;
    pf_pipeline *p = s->pl;
    if (st == PF_ERR_CANCELLED && stopping(p)) return;
    add64(&s->errors, 1);
    if (!detail || !*detail) detail = pf_status_str(st);
    char msg[sizeof p->errmsg];
    snprintf(msg, sizeof msg, "stage %s: %s: %s", s->name, what, detail);
    pl_fail(p, st, msg);
}

/* Ordering ------------------------------------------------------------------------- */

/* Waits until this worker's batch may emit. */
static pf_status wait_turn(pf_stage_ctx *ctx)
{
    pf_stage *s = ctx->st;
    pf_mutex_lock(&s->ord_mu);
    if (s->emit_turn != ctx->ticket) {
        int64_t t = pl_now(s->pl);
        while (s->emit_turn != ctx->ticket && !stopping(s->pl)) pf_cond_wait(&s->ord_cv, &s->ord_mu);
        ctx->blocked_ns += pl_now(s->pl) - t;
    }
    bool ok = s->emit_turn == ctx->ticket;
    pf_mutex_unlock(&s->ord_mu);
    return ok ? PF_OK : pf_set_error(PF_ERR_CANCELLED, "stage %s: pipeline stopping", s->name);
}

/* After process: waits for the turn (a batch that emitted nothing must not
 * let a later one overtake an earlier one) and passes it on. */
static void finish_turn(pf_stage_ctx *ctx)
{
    pf_stage *s = ctx->st;
    pf_mutex_lock(&s->ord_mu);
    while (s->emit_turn != ctx->ticket && !stopping(s->pl)) pf_cond_wait(&s->ord_cv, &s->ord_mu);
    if (s->emit_turn == ctx->ticket) {
        s->emit_turn++;
        pf_cond_broadcast(&s->ord_cv);
    }
    pf_mutex_unlock(&s->ord_mu);
    ctx->ticket = -1;
}

void pl_stage_wake(pf_stage *s)
{
    if (!s->w) return;
    pf_mutex_lock(&s->ord_mu);
    pf_cond_broadcast(&s->ord_cv);
    pf_mutex_unlock(&s->ord_mu);
}

/* Emit ----------------------------------------------------------------------------- */

static pf_status push(pf_stage_ctx *ctx, pf_edge *e, pf_item *it)
{
    pf_status st = pf_edge_push(e, it, 0);
    if (st == PF_AGAIN || st == PF_TIMEOUT) {
        int64_t t = pl_now(ctx->st->pl);
        st = pf_edge_push(e, it, PF_WAIT_FOREVER);
        ctx->blocked_ns += pl_now(ctx->st->pl) - t;
        if (st == PF_AGAIN || st == PF_TIMEOUT) { /* not for an endless wait; keep ownership sane */
            pf_item_unref(it);
            st = pf_set_error(PF_ERR_INTERNAL, "edge push returned %s on an endless wait",
                              pf_status_str(st));
        }
    }
    return st;
}

/* Emits to every output (output < 0) or to that one. */
static pf_status emit_item(pf_stage_ctx *ctx, pf_item *item, int output)
{
    pf_stage *s = ctx->st;
    if (s->gpu) {
        if (ctx->gspan_open) {
            /* The traced call's end so far, before the ready event (stage.c
             * "GPU spans"); no end event: no span rather than a short one. */
            int slot = (ctx->defer_head + ctx->defer_count) % PL_DEFER;
            ctx->gspan_end_set[slot] = pf_event_record(ctx->gspan_end[slot], ctx->stream) == PF_OK;
            if (!ctx->gspan_end_set[slot]) {
                ctx->gspan_n[slot] = 0;
                ctx->gspan_open = false;
            }
        }
        pf_event *ev = ctx->ready[ctx->ready_pos++ % PL_READY_RING];
        pf_status st = pf_event_record(ev, ctx->stream);
        if (st != PF_OK) {
            pf_item_unref(item);
            return st;
        }
        item->ready = ev;
    } else {
        item->ready = NULL;
    }
    if (s->ordered && ctx->ticket >= 0) {
        pf_status st = wait_turn(ctx);
        if (st != PF_OK) {
            pf_item_unref(item);
            return st;
        }
    }
    add64(&s->items_out, 1);
    if (s->nout == 0) {
        pf_item_unref(item);
        return PF_OK;
    }
    if (output >= 0) return push(ctx, s->out[output]->e, item);
    pf_status res = PF_OK;
    for (int i = 0; i < s->nout; i++) {
        pf_item copy, *it = item;
        if (i < s->nout - 1) {
            pf_item_ref(&copy, item);
            copy.ready = item->ready;
            it = &copy;
        }
        pf_status st = push(ctx, s->out[i]->e, it);
        if (st < 0 && res == PF_OK) res = st;
    }
    /* Every push took its item (queued, dropped or released). */
    memset(item, 0, sizeof *item);
    return res;
}

/* The checks of pf_stage_emit (`all` outputs) and pf_stage_emit_to
 * (`output`), then the emit. A refused item is released. */
static pf_status checked_emit(const char *fn, pf_stage_ctx *ctx, bool all, int output,
                              pf_item *item)
{
    PF_CHECK_ARG(ctx && item, fn, "ctx or item is NULL");
    pf_status st = PF_OK;
    if (!all && (output < 0 || output >= ctx->st->nout))
        st = pf_set_error(PF_ERR_INVALID,
                          "%s: stage '%s': output %d out of range (it has %d output edge(s))",
                          fn, ctx->st->name, output, ctx->st->nout);
    else if (!item->frame.buf[0] && !item->tensor.buf)
        st = pf_set_error(PF_ERR_INVALID,
                          "%s: stage '%s': item (source %d, seq %" PRId64
                          ") has neither a frame nor a tensor",
                          fn, ctx->st->name, (int)item->source, item->seq);
    else if (!ctx->in_call)
        st = pf_set_error(PF_ERR_INVALID,
                          "%s: stage '%s': emit only from inside its source, process or start "
                          "function",
                          fn, ctx->st->name);
    if (st != PF_OK) {
        pf_item_unref(item);
        return st;
    }
    return emit_item(ctx, item, all ? -1 : output);
}

pf_status pf_stage_emit(pf_stage_ctx *ctx, pf_item *item)
{
    return checked_emit("pf_stage_emit", ctx, true, -1, item);
}

pf_status pf_stage_emit_to(pf_stage_ctx *ctx, int output, pf_item *item)
{
    return checked_emit("pf_stage_emit_to", ctx, false, output, item);
}

int pf_stage_num_outputs(pf_stage_ctx *ctx) { return ctx ? ctx->st->nout : 0; }

int pf_stage_output_index(pf_stage_ctx *ctx, const char *name)
{
    if (!ctx || !name) return -1;
    pf_stage *s = ctx->st;
    for (int i = 0; i < s->nout; i++) {
        pf_stage *to = s->out[i]->to;
        /* An inserted transfer stands between: its one output names the stage. */
        if (to->is_transfer && to->nout == 1) to = to->out[0]->to;
        if (!strcmp(to->name, name)) return i;
    }
    return -1;
}

void pf_stage_drop(pf_stage_ctx *ctx, pf_item *item)
{
    if (!item) return;
    if (ctx) {
        add64(&ctx->st->dropped, 1);
        pl_stream_drop(ctx->st->pl->streams, item->source);
    }
    pf_item_unref(item);
}

/* GPU deferred release ------------------------------------------------------------------- */

/* Releases the oldest slot. `complete`: its defer event is known to have
 * completed (queried or waited for), so its GPU spans can be traced. */
static void defer_release_head(pf_stage_ctx *ctx, bool complete)
{
    pf_stage *s = ctx->st;
    pf_tracer *tr = s->pl->tracer;
    int mb = s->max_batch, slot = ctx->defer_head;
    if (complete && tr && ctx->gspan_n[slot] > 0) {
        /* Both events are complete (the start precedes the end on the same
         * stream): resolved now, so the slot's events may be recorded again. */
        for (int k = 0; k < ctx->gspan_n[slot]; k++)
            pf_trace_gpu_span(tr, ctx->gpu_track, s->name, ctx->gspan_ev[slot],
                              ctx->gspan_end_set[slot] ? ctx->gspan_end[slot] : ctx->defer_ev[slot],
                              ctx->gspan_source[slot * mb + k], ctx->gspan_seq[slot * mb + k]);
    }
    ctx->gspan_n[slot] = 0;
    ctx->gspan_end_set[slot] = false;
    for (int k = 0; k < ctx->defer_n[slot]; k++) pf_item_unref(&ctx->defer_items[slot * mb + k]);
    ctx->defer_n[slot] = 0;
    ctx->defer_head = (slot + 1) % PL_DEFER;
    ctx->defer_count--;
}

static void defer_hold(pf_stage_ctx *ctx, const pf_item *items, int n)
{
    if (ctx->defer_count == PL_DEFER) {
        bool ok = pf_event_synchronize(ctx->defer_ev[ctx->defer_head]) == PF_OK;
        if (!ok)
            PF_LOGW("stage %s: waiting for its stream failed: %s", ctx->st->name, pf_last_error());
        defer_release_head(ctx, ok);
    }
    int mb = ctx->st->max_batch, slot = (ctx->defer_head + ctx->defer_count) % PL_DEFER;
    for (int k = 0; k < n; k++) pf_item_ref(&ctx->defer_items[slot * mb + k], &items[k]);
    ctx->defer_n[slot] = n;
}

static void defer_commit(pf_stage_ctx *ctx)
{
    int slot = (ctx->defer_head + ctx->defer_count) % PL_DEFER;
    ctx->gspan_open = false;
    ctx->defer_count++;
    if (pf_event_record(ctx->defer_ev[slot], ctx->stream) != PF_OK) {
        /* No event: wait for the stream instead, then everything may go
         * (this slot has no end event: no GPU span). */
        ctx->gspan_n[slot] = 0;
        bool ok = pf_stream_synchronize(ctx->stream) == PF_OK;
        while (ctx->defer_count) defer_release_head(ctx, ok);
        return;
    }
    while (ctx->defer_count && pf_event_query(ctx->defer_ev[ctx->defer_head]) == PF_OK)
        defer_release_head(ctx, true);
}

static void defer_flush(pf_stage_ctx *ctx)
{
    if (!ctx->defer_count) return;
    bool ok = pf_stream_synchronize(ctx->stream) == PF_OK;
    if (!ok) PF_LOGW("stage %s: waiting for its stream failed: %s", ctx->st->name, pf_last_error());
    while (ctx->defer_count) defer_release_head(ctx, ok);
}

/* GPU spans ------------------------------------------------------------------------------- */

/* Before a traced GPU call, after defer_hold: records the start event of the
 * slot the call will commit. Returns the host time taken just before the
 * record (the CPU span's start), 0 if the record failed (no GPU span). */
static int64_t gspan_begin(pf_stage_ctx *ctx)
{
    int slot = (ctx->defer_head + ctx->defer_count) % PL_DEFER;
    ctx->gspan_n[slot] = 0;
    ctx->gspan_end_set[slot] = false;
    int64_t t = pf_time_ns();
    if (pf_event_record(ctx->gspan_ev[slot], ctx->stream) != PF_OK) {
        PF_LOGD("stage %s: no GPU span: %s", ctx->st->name, pf_last_error());
        return 0;
    }
    return t;
}

/* The items of the call whose start event gspan_begin recorded. */
static void gspan_items(pf_stage_ctx *ctx, const int32_t *source, const int64_t *seq, int n)
{
    int mb = ctx->st->max_batch, slot = (ctx->defer_head + ctx->defer_count) % PL_DEFER;
    for (int k = 0; k < n; k++) {
        ctx->gspan_source[slot * mb + k] = source[k];
        ctx->gspan_seq[slot * mb + k] = seq[k];
    }
    ctx->gspan_n[slot] = n;
}

/* Sources ------------------------------------------------------------------------------- */

/* Sleeps until `deadline` on the pipeline clock; false when stopped. */
static bool sleep_until(pf_pipeline *p, int64_t deadline)
{
    bool ok = true;
    pf_mutex_lock(&p->mu);
    for (;;) {
        if (stopping(p) || atomic_load(&p->cancel_flag)) {
            ok = false;
            break;
        }
        int64_t now = pl_now(p);
        if (now >= deadline) break;
        /* A fake clock is polled (it may jump); the real one is the
         * condition variable's own clock. */
        int64_t until = p->clock.now_ns ? pf_time_ns() + (deadline - now < 1000000 ? deadline - now
                                                                                  : 1000000)
                                        : deadline;
        pf_cond_timedwait_until(&p->cv, &p->mu, until);
    }
    pf_mutex_unlock(&p->mu);
    return ok;
}

static bool should_stop(pf_pipeline *p)
{
    if (stopping(p)) return true;
    if (atomic_load(&p->cancel_flag)) {
        pf_pipeline_cancel(p); /* a cancel_async noticed here */
        return true;
    }
    return false;
}

static void source_loop(pf_stage_ctx *ctx)
{
    pf_stage *s = ctx->st;
    pf_pipeline *p = s->pl;
    bool paced_init = false;
    for (;;) {
        if (should_stop(p)) break;
        int64_t deadline = 0;
        pf_mutex_lock(&s->src_mu);
        if (s->d.max_items && s->claimed >= s->d.max_items) {
            pf_mutex_unlock(&s->src_mu);
            break;
        }
        s->claimed++;
        if (s->period_ns) {
            int64_t now = pl_now(p);
            if (!paced_init && s->next_deadline == 0) s->next_deadline = p->t_start;
            paced_init = true;
            int64_t dl = s->next_deadline;
            if (dl < now - s->period_ns) dl = now; /* late: skip missed ticks */
            s->next_deadline = dl + s->period_ns;
            deadline = dl;
        }
        pf_mutex_unlock(&s->src_mu);
        if (s->period_ns && !sleep_until(p, deadline)) break;

        pf_item item;
        memset(&item, 0, sizeof item);
        int64_t tg = 0; /* traced GPU source: host time before the start event */
        if (ctx->gspan_on) {
            defer_hold(ctx, NULL, 0);
            tg = gspan_begin(ctx);
        }
        ctx->blocked_ns = 0;
        ctx->in_call = true;
        int64_t tr0 = p->tracer && p->clock.now_ns ? pf_time_ns() : 0;
        int64_t t0 = pl_now(p);
        pf_status st = s->d.source(s->d.user, ctx, &item);
        int64_t t1 = pl_now(p);
        int64_t tr1 = p->tracer && p->clock.now_ns ? pf_time_ns() : 0;
        ctx->in_call = false;
        if (st != PF_OK) {
            char detail[512];
            snprintf(detail, sizeof detail, "%s", st < 0 ? pf_last_error() : "");
            pf_item_unref(&item);
            pf_mutex_lock(&s->src_mu);
            s->claimed--; /* nothing made */
            int64_t seq = s->next_seq;
            pf_mutex_unlock(&s->src_mu);
            if (st == PF_EOF) break;
            if (st < 0 && s->d.source_errors_leave && !stopping(p)) {
                /* One stream's failure is not the pipeline's: it leaves, the
                 * others go on (counted and logged, not the run's status). */
                add64(&s->errors, 1);
                PF_LOGW("pipeline '%s': source %s (stream %d) failed and leaves: %s", p->name,
                        s->name, (int)s->source_ordinal, detail);
                break;
            }
            if (st < 0) {
                fail_item(ctx, st, detail, s->source_ordinal, seq, 1);
                break;
            }
            continue; /* PF_AGAIN and friends: nothing this time */
        }
        pf_mutex_lock(&s->src_mu);
        int64_t seq = s->next_seq++;
        pf_mutex_unlock(&s->src_mu);
        if (item.seq <= 0) item.seq = seq;
        if (item.source <= 0) item.source = s->source_ordinal;
        if (item.t_source_ns <= 0) item.t_source_ns = t1;
        if (!item.frame.buf[0] && !item.tensor.buf) {
            int32_t src = item.source;
            pf_item_unref(&item);
            fail_item(ctx, PF_ERR_INVALID,
                      "the source returned an item with neither a frame nor a tensor", src, seq, 1);
            break;
        }
        if (ctx->gspan_on) {
            /* The end (defer) event goes before emit's ready event: nothing
             * is queued between them, so the span ends when the item is ready
             * (gspan_open is not set for a source: its emit comes after). */
            if (tg) gspan_items(ctx, &item.source, &item.seq, 1);
            defer_commit(ctx);
        }
        int64_t work = t1 - t0 - ctx->blocked_ns;
        if (work < 0) work = 0;
        add64(&s->items_in, 1);
        add64(&s->busy_ns, (uint64_t)work);
        pf_histogram_record(s->lat, work);
        if (p->tracer) {
            if (!p->clock.now_ns) { /* the pipeline clock is the trace's clock */
                tr0 = t0;
                tr1 = t1;
            }
            if (tg) tr0 = tg;
            pf_trace_span(p->tracer, ctx->track, s->name, tr0, tr1, item.source, item.seq);
        }
        int32_t src = item.source;
        int64_t iseq = item.seq;
        ctx->blocked_ns = 0;
        pl_stream_in(p->streams, src, t1);
        st = emit_item(ctx, &item, -1);
        if (st < 0) {
            fail_item(ctx, st, pf_last_error(), src, iseq, 1);
            break;
        }
    }
}

/* Process ------------------------------------------------------------------------------- */

static pf_status acquire_single(pf_stage_ctx *ctx, int *n)
{
    pf_status st = pl_fanin_pop(ctx, &ctx->batch[0]);
    *n = st == PF_OK ? 1 : 0;
    return st;
}

/* Forms a batch from the input edges (fanin.c) through the batcher. */
static pf_status acquire_batch(pf_stage_ctx *ctx, int *n)
{
    pf_stage *s = ctx->st;
    pf_pipeline *p = s->pl;
    pf_batcher *b = s->batcher;
    pf_status res;
    *n = 0;
    pf_mutex_lock(&s->in_mu);
    for (;;) {
        if (stopping(p)) {
            res = PF_ERR_CANCELLED;
            break;
        }
        uint64_t seen = pf_edge_notify_gen(&s->notify);
        /* Everything already queued joins the batcher (fairness needs to
         * see it), up to the batcher's capacity, a share of the room per
         * edge. In one pass: each edge gives what it has at once, so a
         * producer blocked on a full edge is woken once per pass, not once
         * per item. */
        int room = s->batch_cap - pf_batcher_count(b);
        int64_t now = pl_now(p);
        if (room > 0 && !s->in_eos) {
            int k = pl_fanin_drain(s, ctx->drain, room);
            for (int i = 0; i < k; i++)
                if (pf_batcher_add(b, &ctx->drain[i], now) != PF_OK) pf_item_unref(&ctx->drain[i]);
        }
        if (stopping(p)) {
            res = PF_ERR_CANCELLED;
            break;
        }
        if (pf_batcher_ready(b, now, s->in_eos)) {
            *n = pf_batcher_take(b, ctx->batch, now);
            if (s->ordered) ctx->ticket = s->next_ticket++;
            res = PF_OK;
            break;
        }
        if (s->in_eos) {
            res = PF_EOF;
            break;
        }
        /* Sleep until an edge changes or the batch's deadline (the batcher
         * is not full here: a full one holds max_batch and is ready). */
        int64_t dl = pf_batcher_deadline(b), until = INT64_MAX;
        if (dl != INT64_MAX) {
            int64_t left = dl - now;
            if (left < 1000) left = 1000;
            /* A fake clock (tests) is polled at least every millisecond. */
            if (p->clock.now_ns && left > 1000000) left = 1000000;
            until = pf_time_ns() + left;
        }
        pl_fanin_wait(s, seen, until);
    }
    pf_mutex_unlock(&s->in_mu);
    return res;
}

/* Runs process on ctx->batch[0..n); false when the worker must stop. */
static bool run_batch(pf_stage_ctx *ctx, int n)
{
    pf_stage *s = ctx->st;
    pf_pipeline *p = s->pl;
    pf_item *items = ctx->batch;
    for (int i = 0; i < n; i++) {
        ctx->m_source[i] = items[i].source;
        ctx->m_seq[i] = items[i].seq;
        ctx->m_tsrc[i] = items[i].t_source_ns;
    }
    if (!s->is_transfer) {
        pf_event *last = NULL;
        for (int i = 0; i < n; i++) {
            const pf_buffer *parts[2] = {items[i].frame.buf[0], items[i].tensor.buf};
            static const char *const names[2] = {"frame", "tensor"};
            for (int k = 0; k < 2; k++) {
                if (!parts[k] || pl_location_matches(parts[k], s->d.accepts, s->dev)) continue;
                char detail[400];
                pf_mem_domain d = pf_buffer_domain(parts[k]);
                snprintf(detail, sizeof detail,
                         "%s in %s memory on %s, but the stage accepts %s memory%s%s (the "
                         "producer's `produces` does not match what it emits)",
                         names[k], pf_mem_domain_name(d), pf_device_spec(pf_buffer_device(parts[k])),
                         pf_mem_domain_name(s->d.accepts),
                         pl_domain_is_host(s->d.accepts) ? "" : " on ",
                         pl_domain_is_host(s->d.accepts) ? "" : pf_device_spec(s->dev));
                int32_t src = items[i].source;
                int64_t seq = items[i].seq;
                for (int j = 0; j < n; j++) pf_item_unref(&items[j]);
                fail_item(ctx, PF_ERR_INVALID, detail, src, seq, 1);
                if (s->ordered) finish_turn(ctx);
                return false;
            }
            if (items[i].ready && items[i].ready != last) {
                pf_status st = pf_stream_wait_event(ctx->stream, items[i].ready);
                last = items[i].ready;
                if (st != PF_OK) {
                    char detail[400];
                    snprintf(detail, sizeof detail, "waiting for the producer's stream: %s",
                             pf_last_error());
                    int32_t src = items[i].source;
                    int64_t seq = items[i].seq;
                    for (int j = 0; j < n; j++) pf_item_unref(&items[j]);
                    fail_item(ctx, st, detail, src, seq, 1);
                    if (s->ordered) finish_turn(ctx);
                    return false;
                }
            }
            items[i].ready = NULL;
        }
    }
    if (s->gpu) defer_hold(ctx, items, n);
    int64_t tg = 0; /* traced GPU call: host time before the start event */
    if (ctx->gspan_on && (tg = gspan_begin(ctx)) != 0) {
        gspan_items(ctx, ctx->m_source, ctx->m_seq, n);
        ctx->gspan_open = true; /* its emits record the end event */
    }

    ctx->blocked_ns = 0;
    ctx->in_call = true;
    int64_t tr0 = p->tracer && p->clock.now_ns ? pf_time_ns() : 0;
    int64_t t0 = pl_now(p);
    pf_status st = s->d.process(s->d.user, ctx, items, n);
    int64_t t1 = pl_now(p);
    int64_t tr1 = p->tracer && p->clock.now_ns ? pf_time_ns() : 0;
    ctx->in_call = false;
    char detail[512];
    detail[0] = 0;
    if (st < 0) snprintf(detail, sizeof detail, "%s", pf_last_error());
    if (s->ordered) finish_turn(ctx);
    if (s->gpu) defer_commit(ctx);

    int64_t work = t1 - t0 - ctx->blocked_ns;
    if (work < 0) work = 0;
    add64(&s->items_in, (uint64_t)n);
    add64(&s->batches, 1);
    add64(&s->batch_hist[n <= PF_STATS_MAX_BATCH ? n : PF_STATS_MAX_BATCH], 1);
    add64(&s->busy_ns, (uint64_t)work);
    pf_histogram_record(s->lat, work);
    if (p->tracer) {
        if (!p->clock.now_ns) {
            tr0 = t0;
            tr1 = t1;
        }
        if (tg) tr0 = tg;
        for (int i = 0; i < n; i++)
            pf_trace_span(p->tracer, ctx->track, s->name, tr0, tr1, ctx->m_source[i], ctx->m_seq[i]);
    }
    if (s->nout == 0) {
        for (int i = 0; i < n; i++) {
            int64_t e2e = ctx->m_tsrc[i] > 0 ? t1 - ctx->m_tsrc[i] : -1;
            if (e2e >= 0) pf_histogram_record(p->e2e, e2e);
            pl_stream_out(p->streams, ctx->m_source[i], t1, e2e);
        }
        add64(&p->completed, (uint64_t)n);
    }
    if (st < 0) {
        fail_item(ctx, st, detail, ctx->m_source[0], ctx->m_seq[0], n);
        return false;
    }
    return true;
}

static void process_loop(pf_stage_ctx *ctx)
{
    pf_stage *s = ctx->st;
    for (;;) {
        if (stopping(s->pl)) break;
        int n = 0;
        pf_status st = s->batcher ? acquire_batch(ctx, &n) : acquire_single(ctx, &n);
        if (st != PF_OK) break; /* PF_EOF, or cancelled */
        if (!run_batch(ctx, n)) break;
    }
}

/* Worker ---------------------------------------------------------------------------------- */

void *pl_worker_main(void *arg)
{
    pf_stage_ctx *ctx = arg;
    pf_stage *s = ctx->st;
    pf_pipeline *p = s->pl;
    pf_status st = PF_OK;
    if (s->d.start && !stopping(p)) {
        ctx->in_call = true;
        st = s->d.start(s->d.user, ctx);
        ctx->in_call = false;
        if (st < 0) fail_stage(ctx, st, "start", pf_last_error());
    }
    if (s->d.start && !s->d.source && !s->live) pl_started(p, 1);
    if (st >= 0 && s->d.source && p->sources_wait_start) pl_wait_started(p);
    if (st >= 0) {
        if (s->d.source)
            source_loop(ctx);
        else
            process_loop(ctx);
    }
    if (s->gpu) defer_flush(ctx);
    if (atomic_fetch_sub(&s->active, 1) == 1) {
        /* The last worker of the stage: what a stop left in the batcher goes,
         * then end of stream flows on. */
        if (s->batcher) {
            while (pf_batcher_count(s->batcher) > 0) {
                int n = pf_batcher_take(s->batcher, ctx->batch, pl_now(p));
                if (n <= 0) break;
                for (int i = 0; i < n; i++) pf_item_unref(&ctx->batch[i]);
            }
        }
        for (int i = 0; i < s->nout; i++) pf_edge_close(s->out[i]->e);
        if (s->d.stop) s->d.stop(s->d.user);
        pl_stage_finished(p, s);
    }
    return NULL;
}

/* Setup -------------------------------------------------------------------------------- */

pf_status pl_stage_prepare(pf_stage *s)
{
    pf_pipeline *p = s->pl;
    int mb = s->max_batch;
    s->w = calloc((size_t)s->nthreads, sizeof *s->w);
    if (!s->w) return pf_set_error(PF_ERR_NOMEM, "pf_pipeline_start: out of host memory");
    pf_mutex_init(&s->ord_mu);
    pf_cond_init(&s->ord_cv);
    pf_mutex_init(&s->src_mu);
    s->period_ns = s->d.fps > 0 ? (int64_t)(1e9 / s->d.fps + 0.5) : 0;
    if (s->period_ns < 1 && s->d.fps > 0) s->period_ns = 1;
    atomic_store(&s->t_end, 0);
    if (mb > 1) {
        pf_batch_params bp = s->d.batch;
        bp.max_batch = mb;
        s->batch_cap = mb;
        for (int i = 0; i < s->nin; i++) s->batch_cap += s->in[i]->params.capacity;
        pf_status st = pf_batcher_create(&bp, s->batch_cap, &s->batcher);
        if (st != PF_OK) return st;
    }
    for (int k = 0; k < s->nthreads; k++) {
        pf_stage_ctx *c = &s->w[k];
        c->st = s;
        c->index = k;
        c->ticket = -1;
        c->batch = calloc((size_t)mb, sizeof *c->batch);
        if (s->batcher && !(c->drain = calloc((size_t)s->batch_cap, sizeof *c->drain)))
            return pf_set_error(PF_ERR_NOMEM, "pf_pipeline_start: out of host memory");
        c->m_source = calloc((size_t)mb, sizeof *c->m_source);
        c->m_seq = calloc((size_t)mb, sizeof *c->m_seq);
        c->m_tsrc = calloc((size_t)mb, sizeof *c->m_tsrc);
        if (!c->batch || !c->m_source || !c->m_seq || !c->m_tsrc)
            return pf_set_error(PF_ERR_NOMEM, "pf_pipeline_start: out of host memory");
        pf_stream_params sp = pf_stream_params_default();
        sp.device = s->dev;
        pf_status st = pf_stream_create(&sp, &c->stream);
        if (st != PF_OK) return st;
        if (s->gpu) {
            for (int i = 0; i < PL_READY_RING; i++)
                if ((st = pf_event_create(s->dev, &c->ready[i])) != PF_OK) return st;
            for (int i = 0; i < PL_DEFER; i++)
                if ((st = pf_event_create(s->dev, &c->defer_ev[i])) != PF_OK) return st;
            c->defer_items = calloc((size_t)PL_DEFER * (size_t)mb, sizeof *c->defer_items);
            if (!c->defer_items)
                return pf_set_error(PF_ERR_NOMEM, "pf_pipeline_start: out of host memory");
        }
        if (s->nthreads > 1)
            snprintf(c->track_name, sizeof c->track_name, "%s#%d", s->name, k);
        else
            snprintf(c->track_name, sizeof c->track_name, "%s", s->name);
        c->track = p->tracer ? pf_trace_track(p->tracer, c->track_name) : 0;
        /* GPU spans: events of the tracer's device, or of the CPU on the
         * forced test path (the tracer reads CPU events as host times). */
        c->gpu_track = -1;
        if (p->tracer && s->gpu &&
            (s->dev == p->trace_gpu || pf_device_get_type(s->dev) == PF_DEVICE_CPU)) {
            c->gpu_track = pf_trace_gpu_track(p->tracer, c->track_name);
            if (c->gpu_track < 0) {
                PF_LOGW("stage %s: no GPU track in the trace: %s", s->name, pf_last_error());
                continue;
            }
            for (int i = 0; i < PL_DEFER; i++) {
                if ((st = pf_event_create(s->dev, &c->gspan_ev[i])) != PF_OK) return st;
                if ((st = pf_event_create(s->dev, &c->gspan_end[i])) != PF_OK) return st;
            }
            c->gspan_source = calloc((size_t)PL_DEFER * (size_t)mb, sizeof *c->gspan_source);
            c->gspan_seq = calloc((size_t)PL_DEFER * (size_t)mb, sizeof *c->gspan_seq);
            if (!c->gspan_source || !c->gspan_seq)
                return pf_set_error(PF_ERR_NOMEM, "pf_pipeline_start: out of host memory");
            c->gspan_on = true;
        }
    }
    return PF_OK;
}

void pl_stage_release(pf_stage *s)
{
    if (!s->w) return;
    for (int k = 0; k < s->nthreads; k++) {
        pf_stage_ctx *c = &s->w[k];
        if (c->defer_items) {
            while (c->defer_count) defer_release_head(c, false);
            free(c->defer_items);
        }
        for (int i = 0; i < PL_READY_RING; i++) pf_event_destroy(&c->ready[i]);
        for (int i = 0; i < PL_DEFER; i++) pf_event_destroy(&c->defer_ev[i]);
        for (int i = 0; i < PL_DEFER; i++) pf_event_destroy(&c->gspan_ev[i]);
        for (int i = 0; i < PL_DEFER; i++) pf_event_destroy(&c->gspan_end[i]);
        free(c->gspan_source);
        free(c->gspan_seq);
        pf_stream_destroy(&c->stream);
        free(c->batch);
        free(c->drain);
        free(c->m_source);
        free(c->m_seq);
        free(c->m_tsrc);
    }
    pf_batcher_destroy(&s->batcher);
    pf_mutex_destroy(&s->ord_mu);
    pf_cond_destroy(&s->ord_cv);
    pf_mutex_destroy(&s->src_mu);
    free(s->w);
    s->w = NULL;
}
