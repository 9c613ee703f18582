/* Built-in stages "ipc.sink" and "ipc.source": a pipeline's frames handed
 * to pipelines in other processes (pixflow/ipc.h).
 *
 * ipc.sink owns a producer, made at the first frame (the pool takes that
 * frame's geometry; a frame of another size later is an error) so that no
 * size has to be repeated in the YAML file. Each frame is copied once into
 * a free slot on the stage's stream (memcpy on the CPU, a device-to-device
 * copy on CUDA, fenced by the slot's event) and announced to the consumers;
 * the consumers read the slot itself. Copying at the sink keeps the pool
 * independent of the upstream stages' allocators; a C program that writes
 * straight into slots (pf_ipc_producer_acquire) saves that copy too.
 * The producer goes at stop: consumers then see a clean end of stream.
 *
 * ipc.source owns a consumer, connected at start (waiting up to timeout_ms
 * for the producer to appear). Its frames are views of the producer's
 * slots (read-only host memory, or device memory waited on through the
 * slot's fence on the stage's stream), released to the producer when the
 * pipeline drops them. A clean end of stream ends the source (PF_EOF); a
 * producer that died stops the pipeline with an error saying so. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "builtin_impl.h"
#include "pixflow/ipc.h"

/* How long a source call waits for a frame before letting the runtime look
 * for a cancel (PF_AGAIN). */
#define IPC_SOURCE_POLL_US 200000

static const char *const policies[] = {"default", "block", "latest_only", "drop", NULL};

static pf_ipc_policy policy_of(int i)
{
    return i == 0 ? PF_IPC_DEFAULT : i == 1 ? PF_IPC_BLOCK : PF_IPC_LATEST_ONLY;
}

/* The end-of-run line: on stderr with `print` (stdout carries --json), else
 * at info level. */
static void emit_report(bool print, const char *line)
{
    if (print) fprintf(stderr, "%s\n", line);
    else PF_LOGI("%s", line);
}

/* ipc.sink ------------------------------------------------------------------------------------ */

typedef struct ipc_sink {
    bi_stage base;
    char *path;
    int slots;
    pf_ipc_policy policy;
    int max_held;
    int64_t stall_ms, wait_consumers, wait_ms, slot_ms;
    bool print;
    pf_ipc_producer *prod;      /* made at the first frame, under base.mu */
} ipc_sink;

static void ipc_sink_report(ipc_sink *s)
{
    pf_ipc_producer_stats st;
    if (!s->prod || pf_ipc_producer_get_stats(s->prod, &st) != PF_OK) return;
    char line[640];
    snprintf(line, sizeof line,
           "ipc.sink %s: %s, %llu frames published, %llu sent, %llu dropped for latest_only "
           "consumers, %llu with no consumer; consumers: %llu attached, %llu left, %llu "
           "disconnected for faults, %llu refused; %llu slots reclaimed",
           s->base.name, pf_ipc_backend_name(st.backend), (unsigned long long)st.published,
           (unsigned long long)st.sent, (unsigned long long)st.dropped,
           (unsigned long long)st.unconsumed, (unsigned long long)st.consumers_attached,
           (unsigned long long)st.consumers_gone, (unsigned long long)st.consumers_dropped,
           (unsigned long long)st.consumers_refused, (unsigned long long)st.slots_reclaimed);
    emit_report(s->print, line);
}

static void ipc_sink_free(bi_stage *b)
{
    ipc_sink *s = (ipc_sink *)b;
    pf_ipc_producer_destroy(&s->prod);
    free(s->path);
}

static void ipc_sink_stop(void *user)
{
    ipc_sink *s = user;
    bi_stage_stop_common(&s->base);
    pf_mutex_lock(&s->base.mu);
    ipc_sink_report(s);
    pf_ipc_producer_destroy(&s->prod); /* consumers get their end of stream now */
    pf_mutex_unlock(&s->base.mu);
}

static pf_status ipc_sink_open(ipc_sink *s, const pf_frame *f)
{
    pf_ipc_producer_params pp = pf_ipc_producer_params_default();
    pp.path = s->path;
    pp.device = s->base.device;
    pp.format = f->format;
    pp.width = f->width;
    pp.height = f->height;
    pp.slots = s->slots;
    pp.default_policy = s->policy;
    pp.default_max_held = s->max_held;
    pp.stall_timeout_ms = s->stall_ms;
    pf_status st = pf_ipc_producer_create(&pp, &s->prod);
    if (st != PF_OK) return st;
    if (s->wait_consumers > 0) {
        PF_LOGI("ipc.sink %s: waiting for %lld consumer(s) on %s", s->base.name,
                (long long)s->wait_consumers, s->path);
        st = pf_ipc_producer_wait_consumers(s->prod, (int)s->wait_consumers, s->wait_ms * 1000);
        if (st == PF_TIMEOUT)
            PF_LOGW("ipc.sink %s: %lld consumer(s) wanted, fewer attached within %lld ms: "
                    "going on", s->base.name, (long long)s->wait_consumers, (long long)s->wait_ms);
    }
    return PF_OK;
}

static pf_status ipc_sink_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    ipc_sink *s = user;
    pf_status st = PF_OK;
    for (int i = 0; i < n && st == PF_OK; i++) {
        pf_item *it = &items[i];
        if (!it->frame.buf[0]) {
            st = bi_item_error(&s->base, it, PF_ERR_INVALID, "ipc.sink takes frames; this item "
                               "has none");
            break;
        }
        pf_mutex_lock(&s->base.mu);
        if (!s->prod) st = ipc_sink_open(s, &it->frame);
        pf_ipc_producer *prod = s->prod;
        pf_mutex_unlock(&s->base.mu);
        if (st != PF_OK) {
            st = bi_item_failed(&s->base, it, st, NULL);
            break;
        }
        st = pf_ipc_producer_send(prod, &it->frame, pf_stage_stream(ctx), it->t_source_ns,
                                  s->slot_ms < 0 ? -1 : s->slot_ms * 1000);
        if (st != PF_OK) st = bi_item_failed(&s->base, it, st < 0 ? st : PF_ERR_BUSY, NULL);
    }
    bi_unref_items(items, n);
    return st;
}

pf_status bi_ipc_sink_create(bi_args *a, pf_stage_desc *d)
{
    pf_status st;
    ipc_sink *s = bi_stage_new(sizeof *s, a, d, &st);
    if (!s) return st;
    s->base.free_extra = ipc_sink_free;
    d->process = ipc_sink_process;
    d->stop = ipc_sink_stop;
    const char *path = bi_str(a, "path");
    int64_t slots = 8, held = 2;
    int pol = 1;
    if (!path || !path[0]) st = bi_error(a, "path", "missing required parameter 'path' (the "
                                         "socket, in a private folder)");
    if (st == PF_OK && !(s->path = strdup(path)))
        st = pf_set_error(PF_ERR_NOMEM, "ipc.sink: out of host memory");
    if (st == PF_OK) st = bi_int(a, "slots", 8, 1, PF_IPC_MAX_SLOTS, &slots);
    if (st == PF_OK) st = bi_enum(a, "policy", policies, 1, &pol);
    if (st == PF_OK) st = bi_int(a, "max_held", 2, 1, PF_IPC_MAX_SLOTS, &held);
    if (st == PF_OK) st = bi_int(a, "stall_timeout_ms", 10000, 0, 3600000, &s->stall_ms);
    if (st == PF_OK) st = bi_int(a, "wait_consumers", 0, 0, PF_IPC_MAX_CONSUMERS,
                                 &s->wait_consumers);
    if (st == PF_OK) st = bi_int(a, "wait_timeout_ms", 30000, 0, 3600000, &s->wait_ms);
    if (st == PF_OK) st = bi_int(a, "slot_timeout_ms", 60000, -1, 3600000, &s->slot_ms);
    if (st == PF_OK) st = bi_bool(a, "print", false, &s->print);
    if (st == PF_OK && pol == 0)
        st = bi_error(a, "policy", "policy 'default': a sink sets the default (block, "
                      "latest_only or drop)");
    s->slots = (int)slots;
    s->max_held = (int)held;
    s->policy = policy_of(pol);
    return bi_create_end(s, d, st);
}

/* ipc.source ---------------------------------------------------------------------------------- */

typedef struct ipc_source {
    bi_stage base;
    char *path;
    pf_ipc_policy policy;
    int max_held;
    int64_t timeout_ms, frame_timeout_ms;
    bool print;
    pf_ipc_consumer *cons;      /* made at start */
    int64_t last_frame_ns;
} ipc_source;

static void ipc_source_free(bi_stage *b)
{
    ipc_source *s = (ipc_source *)b;
    pf_ipc_consumer_destroy(&s->cons);
    free(s->path);
}

static void ipc_source_stop(void *user)
{
    ipc_source *s = user;
    bi_stage_stop_common(&s->base);
    pf_mutex_lock(&s->base.mu);
    pf_ipc_consumer_info in;
    char line[512];
    if (s->cons && pf_ipc_consumer_get_info(s->cons, &in) == PF_OK) {
        snprintf(line, sizeof line,
               "ipc.source %s: %s, %dx%d %s, policy %s: %llu frames received, %llu skipped for "
               "newer ones, %llu published while not taken", s->base.name,
               pf_ipc_backend_name(in.backend), in.width, in.height, pf_pixfmt_name(in.format),
               pf_ipc_policy_name(in.policy), (unsigned long long)in.received,
               (unsigned long long)in.skipped, (unsigned long long)in.gaps);
        emit_report(s->print, line);
    }
    pf_ipc_consumer_destroy(&s->cons);
    pf_mutex_unlock(&s->base.mu);
}

static pf_status ipc_source_start(void *user, pf_stage_ctx *ctx)
{
    ipc_source *s = user;
    pf_status st = bi_stage_start(user, ctx);
    if (st != PF_OK) return st;
    pf_mutex_lock(&s->base.mu);
    if (!s->cons) {
        pf_ipc_consumer_params cp = pf_ipc_consumer_params_default();
        cp.path = s->path;
        cp.device = s->base.device;
        cp.policy = s->policy;
        cp.max_held = s->max_held;
        cp.connect_timeout_ms = s->timeout_ms;
        cp.name = s->base.name;
        st = pf_ipc_consumer_create(&cp, &s->cons);
        if (st == PF_OK) {
            pf_ipc_consumer_info in;
            pf_ipc_consumer_get_info(s->cons, &in);
            PF_LOGI("ipc.source %s: attached to %s (%s, %dx%d %s, %d slots, policy %s)",
                    s->base.name, s->path, pf_ipc_backend_name(in.backend), in.width, in.height,
                    pf_pixfmt_name(in.format), in.slots, pf_ipc_policy_name(in.policy));
        }
        s->last_frame_ns = pf_time_ns();
    }
    pf_mutex_unlock(&s->base.mu);
    return st;
}

static pf_status ipc_source_generate(void *user, pf_stage_ctx *ctx, pf_item *out)
{
    ipc_source *s = user;
    pf_frame f;
    pf_ipc_frame_info info;
    pf_status st = pf_ipc_consumer_recv(s->cons, IPC_SOURCE_POLL_US, pf_stage_stream(ctx), &f,
                                        &info);
    if (st == PF_TIMEOUT || st == PF_AGAIN) {
        if (s->frame_timeout_ms > 0 &&
            pf_time_ns() - s->last_frame_ns > s->frame_timeout_ms * 1000000)
            return pf_set_error(PF_ERR_IO, "ipc.source %s: no frame from %s for %lld ms",
                                s->base.name, s->path, (long long)s->frame_timeout_ms);
        return PF_AGAIN;
    }
    if (st != PF_OK) return st; /* PF_EOF ends the source; errors name the cause */
    s->last_frame_ns = pf_time_ns();
    memset(out, 0, sizeof *out);
    out->frame = f;
    out->source = f.source;
    out->seq = (int64_t)info.seq;
    out->t_source_ns = info.t_source_ns;
    return PF_OK;
}

pf_status bi_ipc_source_create(bi_args *a, pf_stage_desc *d)
{
    pf_status st;
    ipc_source *s = bi_stage_new(sizeof *s, a, d, &st);
    if (!s) return st;
    s->base.free_extra = ipc_source_free;
    d->start = ipc_source_start;
    d->stop = ipc_source_stop;
    d->source = ipc_source_generate;
    const char *path = bi_str(a, "path");
    int pol = 0;
    int64_t held = 0, count = 0;
    if (!path || !path[0]) st = bi_error(a, "path", "missing required parameter 'path' (the "
                                         "producer's socket)");
    if (st == PF_OK && !(s->path = strdup(path)))
        st = pf_set_error(PF_ERR_NOMEM, "ipc.source: out of host memory");
    if (st == PF_OK) st = bi_enum(a, "policy", policies, 0, &pol);
    if (st == PF_OK) st = bi_int(a, "max_held", 0, 0, PF_IPC_MAX_SLOTS, &held);
    if (st == PF_OK) st = bi_int(a, "timeout_ms", 10000, 0, 3600000, &s->timeout_ms);
    if (st == PF_OK) st = bi_int(a, "frame_timeout_ms", 0, 0, 3600000, &s->frame_timeout_ms);
    if (st == PF_OK) st = bi_int(a, "count", 0, 0, INT64_MAX, &count);
    if (st == PF_OK) st = bi_bool(a, "print", false, &s->print);
    s->policy = policy_of(pol);
    s->max_held = (int)held;
    d->max_items = count;
    return bi_create_end(s, d, st);
}
