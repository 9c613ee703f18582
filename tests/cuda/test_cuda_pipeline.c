/* Pipeline with CUDA stages: host frames -> (h2d inserted) -> CUDA stage ->
 * CUDA stage -> (d2h inserted) -> host sink that checks every byte.
 *
 * The CUDA stages only queue work on their streams and emit at once, so the
 * bytes come out right only if the runtime orders the streams (ready events
 * between stages), keeps inputs alive until the consuming stream has used
 * them (deferred release: otherwise the caching allocator hands a block back
 * to its producer while another stream still reads it), and the transfers
 * copy the right data. Frames are large (copies take a while) to make a
 * missing wait show up as wrong bytes.
 *
 * Traced runs read the trace file back (pipeline_trace_check.h) and check
 * what the CUDA stages add to it: a GPU track per CUDA stage with one span
 * per item, timed by events on the stage's stream, inside the window the
 * pipeline's causality allows (below), and the device's counters. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "pf_test.h"
#include "pipeline_trace_check.h"

#define W 1920
#define H 1080

static uint8_t pattern(int64_t seq, int x, int y) { return (uint8_t)(seq * 31 + x * 7 + y * 3); }

typedef struct src_state {
    int64_t n, made;
} src_state;

/* Host GRAY8 frames with a pattern of (seq, x, y). */
static pf_status host_source(void *user, pf_stage_ctx *ctx, pf_item *out)
{
    (void)ctx;
    src_state *s = user;
    if (s->made == s->n) return PF_EOF;
    pf_status st = pf_frame_alloc(&out->frame, PF_PIXFMT_GRAY8, W, H, NULL, NULL);
    if (st != PF_OK) return st;
    for (int y = 0; y < H; y++) {
        uint8_t *row = out->frame.data[0] + (size_t)y * out->frame.stride[0];
        for (int x = 0; x < W; x++) row[x] = pattern(s->made, x, y);
    }
    s->made++;
    return PF_OK;
}

/* A CUDA stage: out = in, then row `mark_row` := (seq & 0xFF) ^ salt. All
 * asynchronous on the stage's stream; the input is dropped at once. */
typedef struct cuda_stage {
    int mark_row;
    uint8_t salt;
    atomic_int wrong_domain;
} cuda_stage;

static pf_status cuda_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    cuda_stage *cs = user;
    pf_stream *s = pf_stage_stream(ctx);
    pf_allocator *a = pf_stage_allocator(ctx, PF_MEM_DEVICE);
    if (!a) return PF_ERR_NOMEM;
    for (int i = 0; i < n; i++) {
        pf_item *in = &items[i];
        if (pf_frame_domain(&in->frame) != PF_MEM_DEVICE) atomic_fetch_add(&cs->wrong_domain, 1);
        pf_item out = *in; /* metadata */
        memset(&out.frame, 0, sizeof out.frame);
        memset(&out.tensor, 0, sizeof out.tensor);
        pf_status st = pf_frame_alloc(&out.frame, PF_PIXFMT_GRAY8, W, H, a, s);
        if (st == PF_OK) st = pf_frame_copy_async(&out.frame, &in->frame, s);
        if (st == PF_OK)
            st = pf_memset_async(s, out.frame.data[0] + (size_t)cs->mark_row * out.frame.stride[0],
                                 (int)(((uint64_t)in->seq & 0xFF) ^ cs->salt), W);
        pf_item_unref(in);
        if (st == PF_OK) st = pf_stage_emit(ctx, &out);
        else pf_item_unref(&out);
        if (st != PF_OK) {
            for (int j = i + 1; j < n; j++) pf_item_unref(&items[j]);
            return st;
        }
    }
    return PF_OK;
}

typedef struct sink_state {
    int64_t count, next_seq;
    atomic_int bad;
    int64_t first_bad_seq;
} sink_state;

static pf_status host_sink(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    (void)ctx;
    sink_state *s = user;
    for (int i = 0; i < n; i++) {
        const pf_frame *f = &items[i].frame;
        int64_t seq = items[i].seq;
        int bad = seq != s->next_seq || pf_frame_domain(f) == PF_MEM_DEVICE;
        for (int y = 0; y < H && !bad; y++) {
            const uint8_t *row = f->data[0] + (size_t)y * f->stride[0];
            for (int x = 0; x < W; x++) {
                uint8_t want = y == 0 ? (uint8_t)((seq & 0xFF) ^ 0x11)
                             : y == 1 ? (uint8_t)((seq & 0xFF) ^ 0x22)
                                      : pattern(seq, x, y);
                if (row[x] != want) {
                    bad = 1;
                    break;
                }
            }
        }
        if (bad && !atomic_fetch_add(&s->bad, 1)) s->first_bad_seq = seq;
        s->next_seq = seq + 1;
        s->count++;
        pf_item_unref(&items[i]);
    }
    return PF_OK;
}

/* The CUDA parts of a traced run's file. GPU times are host times through
 * the tracer's calibration, exact to about its window (metadata
 * gpu_calibration_window_ns) plus clock drift over the run; between two GPU
 * spans only the event timer's resolution. Bounds, per item:
 *  - a CUDA stage's GPU span starts after its CPU span (the start event is
 *    recorded inside the CPU span, before process);
 *  - unbatched, it ends before the next CUDA stage's GPU span starts (that
 *    stream waits for the item's ready event, recorded just before the end
 *    event with nothing queued between them), and the last CUDA stage's
 *    before the d2h transfer's CPU span ends (it waits for the same event on
 *    the host). The next stage's CPU span may start before: a CUDA stage
 *    emits at once, so its consumer runs ahead of the GPU. */
typedef struct gpu_trace_expect {
    const char *path;
    pf_device *dev;
    int64_t n;
    const char *const *cuda_stages; /* in chain order */
    int ncuda;
    const char *const *cpu_stages;  /* every stage, CUDA ones included */
    int ncpu;
    const char *d2h;                /* the transfer after the last CUDA stage */
    bool unbatched;
    const char *const *edges;       /* queue counter names */
    int nedges;
} gpu_trace_expect;

static void check_gpu_trace(const gpu_trace_expect *x)
{
    trace_view tv;
    bool loaded = tv_load(x->path, &tv);
    remove(x->path);
    CHECK(loaded);
    if (!loaded) {
        tv_free(&tv);
        return;
    }
    CHECK_EQ_INT(tv_meta(&tv, "dropped_events"), 0);
    CHECK_EQ_INT(tv_meta(&tv, "rejected_events"), 0);
    CHECK_EQ_INT(tv_meta(&tv, "gpu_spans_failed"), 0);
    CHECK_EQ_INT(tv_meta(&tv, "gpu_spans_pending"), 0);
    CHECK_EQ_INT(tv_meta(&tv, "flows"), x->n);
    const jval *gd = jget(tv.meta, "gpu_device");
    CHECK(gd && gd->type == J_STR && !strcmp(gd->str, pf_device_spec(x->dev)));
    CHECK(tv.has_gpu_process);
    int64_t window = tv_meta(&tv, "gpu_calibration_window_ns");
    CHECK(window >= 0);
    const int64_t slack_abs = (window > 0 ? window : 0) + 50000, slack_rel = 20000;

    for (int k = 0; k < x->ncpu; k++) {
        CHECK_EQ_INT(tv_count_spans(&tv, 1, x->cpu_stages[k]), x->n);
    }
    int64_t gpu_spans = 0;
    for (size_t i = 0; i < tv.nspans; i++) gpu_spans += tv.spans[i].pid == 2;
    CHECK_EQ_INT(gpu_spans, (int64_t)x->ncuda * x->n);

    int64_t missing = 0, early = 0, late = 0;
    for (int k = 0; k < x->ncuda; k++) {
        const char *st = x->cuda_stages[k];
        for (int64_t i = 0; i < x->n; i++) {
            int cc = 0, gc = 0;
            const tv_span *c = tv_find(&tv, 1, st, 0, i, &cc);
            const tv_span *g = tv_find(&tv, 2, st, 0, i, &gc);
            if (cc != 1 || gc != 1 || !c || !g || strcmp(g->name, st) != 0) {
                missing++;
                continue;
            }
            if (g->ts < c->ts - slack_abs && early++ < 3)
                printf("  %s seq %lld: GPU span starts %lld ns before its CPU span\n", st,
                       (long long)i, (long long)(c->ts - g->ts));
            if (!x->unbatched) continue;
            int64_t limit, slack;
            const char *what;
            if (k + 1 < x->ncuda) {
                const tv_span *ng = tv_find(&tv, 2, x->cuda_stages[k + 1], 0, i, NULL);
                if (!ng) continue; /* counted as missing there */
                limit = ng->ts;
                slack = slack_rel;
                what = "the next CUDA stage's GPU span starts";
            } else {
                const tv_span *t = tv_find(&tv, 1, x->d2h, 0, i, NULL);
                if (!t) {
                    missing++;
                    continue;
                }
                limit = t->ts + t->dur;
                slack = slack_abs;
                what = "the d2h transfer's CPU span ends";
            }
            if (g->ts + g->dur > limit + slack && late++ < 3)
                printf("  %s seq %lld: GPU span ends %lld ns after %s\n", st, (long long)i,
                       (long long)(g->ts + g->dur - limit), what);
        }
    }
    CHECK_EQ_INT(missing, 0);
    CHECK_EQ_INT(early, 0);
    CHECK_EQ_INT(late, 0);

    /* device counters (the first sample is taken when the tracer starts) */
    double v = -1;
    CHECK(tv_count_counter(&tv, "GPU memory used MiB", NULL, &v) >= 1);
    CHECK(v > 0);
    if (pf_nvml_available(NULL, 0)) {
        double util = -1, power = -1, temp = -1;
        CHECK(tv_count_counter(&tv, "GPU utilization %", NULL, &util) >= 1);
        CHECK(tv_count_counter(&tv, "GPU power W", NULL, &power) >= 1);
        CHECK(tv_count_counter(&tv, "GPU temperature C", NULL, &temp) >= 1);
        CHECK(util >= 0 && util <= 100);
        CHECK(power > 0 && power < 5000);
        CHECK(temp > 0 && temp < 150);
        printf("  counters: util %.0f%%, power %.1f W, temperature %.0f C, memory %.0f MiB\n",
               util, power, temp, v);
    } else {
        printf("  counters: no NVML here; memory %.0f MiB\n", v);
    }
    for (size_t i = 0; i < tv.nctrs; i++)
        if (!strncmp(tv.ctrs[i].name, "GPU ", 4)) CHECK(tv.ctrs[i].pid == 2);
    for (int e = 0; e < x->nedges; e++) {
        double first = -1, last = -1;
        CHECK(tv_count_counter(&tv, x->edges[e], &first, &last) >= 2);
        CHECK(first == 0 && last == 0);
    }
    printf("  trace: %zu spans (%lld on GPU tracks), %zu counter samples, calibration window "
           "%lld ns\n",
           tv.nspans, (long long)gpu_spans, tv.nctrs, (long long)window);
    tv_free(&tv);
}

static void run_chain(pf_device *dev, int max_batch, bool strict, bool traced)
{
    int64_t n = 120;
    src_state src = {n, 0};
    cuda_stage ca = {0, 0x11, 0}, cb = {1, 0x22, 0};
    sink_state sink = {0};
    pf_pipeline_params pp = pf_pipeline_params_default();
    pp.name = "cuda";
    pp.strict_transfers = strict;
    char path[] = "/tmp/pf_test_cuda_pipeline_trace_XXXXXX";
    if (traced) {
        int fd = mkstemp(path);
        REQUIRE(fd >= 0);
        close(fd);
        pp.trace_path = path;
    }
    pf_pipeline *p = NULL;
    CHECK_OK(pf_pipeline_create(&pp, &p));
    REQUIRE(p);
    pf_stage_desc d = pf_stage_desc_default();
    d.name = "camera";
    d.source = host_source;
    d.user = &src;
    pf_stage *s0 = NULL, *s1 = NULL, *s2 = NULL, *s3 = NULL;
    CHECK_OK(pf_pipeline_add_stage(p, &d, &s0));
    d = pf_stage_desc_default();
    d.name = "mark0";
    d.process = cuda_process;
    d.user = &ca;
    d.device = dev;
    d.accepts = PF_MEM_DEVICE;
    d.produces = PF_MEM_DEVICE;
    d.batch.max_batch = max_batch;
    d.batch.max_delay_us = 1000;
    CHECK_OK(pf_pipeline_add_stage(p, &d, &s1));
    d.name = "mark1";
    d.user = &cb;
    CHECK_OK(pf_pipeline_add_stage(p, &d, &s2));
    d = pf_stage_desc_default();
    d.name = "check";
    d.process = host_sink;
    d.user = &sink;
    CHECK_OK(pf_pipeline_add_stage(p, &d, &s3));
    pf_edge_params ep = pf_edge_params_default();
    CHECK_OK(pf_pipeline_connect(p, s0, s1, &ep));
    CHECK_OK(pf_pipeline_connect(p, s1, s2, &ep));
    CHECK_OK(pf_pipeline_connect(p, s2, s3, &ep));
    if (strict) {
        CHECK_EQ_INT(pf_pipeline_start(p), PF_ERR_INVALID);
        CHECK(strstr(pf_last_error(), "camera -> mark0: producer makes host items, consumer "
                                      "accepts device on cuda:0") != NULL);
        printf("  strict: %s\n", pf_last_error());
        pf_pipeline_destroy(&p);
        return;
    }
    CHECK_OK(pf_pipeline_start(p));
    CHECK_OK(pf_pipeline_wait(p, PF_WAIT_FOREVER));
    CHECK_EQ_INT(sink.count, n);
    CHECK_EQ_INT(atomic_load(&sink.bad), 0);
    if (atomic_load(&sink.bad)) printf("  first wrong frame: seq %lld\n", (long long)sink.first_bad_seq);
    CHECK_EQ_INT(atomic_load(&ca.wrong_domain) + atomic_load(&cb.wrong_domain), 0);
    pf_pipeline_stats st;
    CHECK_OK(pf_pipeline_get_stats(p, &st));
    CHECK_EQ_INT(st.num_stages, 6); /* + h2d and d2h */
    CHECK_EQ_INT(st.transfers, 2 * n);
    int transfers = 0;
    for (int i = 0; i < st.num_stages; i++)
        if (st.stages[i].is_transfer) {
            transfers++;
            CHECK_EQ_INT(st.stages[i].transfers, n);
        }
    CHECK_EQ_INT(transfers, 2);
    CHECK(pf_pipeline_find_stage(p, "h2d:camera->mark0") != NULL);
    CHECK(pf_pipeline_find_stage(p, "d2h:mark1->check") != NULL);
    pf_pipeline_print_stats(p, stdout);
    pf_pipeline_destroy(&p);
    if (traced) {
        static const char *const cuda[] = {"mark0", "mark1"};
        static const char *const all[] = {"camera", "h2d:camera->mark0", "mark0", "mark1",
                                          "d2h:mark1->check", "check"};
        static const char *const edges[] = {
            "queue camera -> h2d:camera->mark0", "queue h2d:camera->mark0 -> mark0",
            "queue mark0 -> mark1", "queue mark1 -> d2h:mark1->check",
            "queue d2h:mark1->check -> check"};
        gpu_trace_expect x = {path, dev, n, cuda, 2, all, 6, "d2h:mark1->check",
                              max_batch == 1, edges, 5};
        check_gpu_trace(&x);
    }
}

static pf_device *g_dev;

static void test_cuda_chain(void) { run_chain(g_dev, 1, false, false); }
static void test_cuda_chain_batched(void) { run_chain(g_dev, 4, false, false); }
static void test_cuda_strict(void) { run_chain(g_dev, 1, true, false); }
static void test_cuda_chain_traced(void) { run_chain(g_dev, 1, false, true); }
static void test_cuda_chain_batched_traced(void) { run_chain(g_dev, 4, false, true); }

/* A CUDA source making device frames straight into a host sink (d2h only). */
typedef struct cuda_src {
    int64_t n, made;
} cuda_src;

static pf_status cuda_source(void *user, pf_stage_ctx *ctx, pf_item *out)
{
    cuda_src *s = user;
    if (s->made == s->n) return PF_EOF;
    pf_allocator *a = pf_stage_allocator(ctx, PF_MEM_DEVICE);
    if (!a) return PF_ERR_NOMEM;
    pf_stream *st = pf_stage_stream(ctx);
    pf_status r = pf_frame_alloc(&out->frame, PF_PIXFMT_GRAY8, W, H, a, st);
    if (r == PF_OK)
        r = pf_memset_async(st, out->frame.data[0], (int)(s->made & 0xFF),
                            out->frame.stride[0] * (size_t)H);
    if (r == PF_OK) s->made++;
    return r;
}

typedef struct flat_sink {
    int64_t count;
    int bad;
} flat_sink;

static pf_status flat_check(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    (void)ctx;
    flat_sink *s = user;
    for (int i = 0; i < n; i++) {
        const pf_frame *f = &items[i].frame;
        uint8_t want = (uint8_t)(items[i].seq & 0xFF);
        for (int y = 0; y < H; y += 7)
            for (int x = 0; x < W; x += 5)
                if (f->data[0][(size_t)y * f->stride[0] + (size_t)x] != want) s->bad++;
        s->count++;
        pf_item_unref(&items[i]);
    }
    return PF_OK;
}

static void run_source_to_host(bool traced)
{
    cuda_src src = {200, 0};
    flat_sink sink = {0, 0};
    pf_pipeline *p = NULL;
    pf_pipeline_params pp = pf_pipeline_params_default();
    char path[] = "/tmp/pf_test_cuda_pipeline_src_trace_XXXXXX";
    if (traced) {
        int fd = mkstemp(path);
        REQUIRE(fd >= 0);
        close(fd);
        pp.trace_path = path;
        pp.trace_counter_ms = 10;
    }
    CHECK_OK(pf_pipeline_create(&pp, &p));
    REQUIRE(p);
    pf_stage_desc d = pf_stage_desc_default();
    d.name = "gen";
    d.source = cuda_source;
    d.user = &src;
    d.device = g_dev;
    d.produces = PF_MEM_DEVICE;
    pf_stage *a = NULL, *b = NULL;
    CHECK_OK(pf_pipeline_add_stage(p, &d, &a));
    d = pf_stage_desc_default();
    d.name = "check";
    d.process = flat_check;
    d.user = &sink;
    CHECK_OK(pf_pipeline_add_stage(p, &d, &b));
    pf_edge_params ep = pf_edge_params_default();
    CHECK_OK(pf_pipeline_connect(p, a, b, &ep));
    CHECK_OK(pf_pipeline_start(p));
    CHECK_OK(pf_pipeline_wait(p, PF_WAIT_FOREVER));
    CHECK_EQ_INT(sink.count, 200);
    CHECK_EQ_INT(sink.bad, 0);
    pf_pipeline_stats st;
    CHECK_OK(pf_pipeline_get_stats(p, &st));
    CHECK_EQ_INT(st.transfers, 200);
    pf_pipeline_destroy(&p);
    if (traced) {
        /* a CUDA source: its calls are traced on the GPU like process calls */
        static const char *const cuda[] = {"gen"};
        static const char *const all[] = {"gen", "d2h:gen->check", "check"};
        static const char *const edges[] = {"queue gen -> d2h:gen->check",
                                            "queue d2h:gen->check -> check"};
        gpu_trace_expect x = {path, g_dev, 200, cuda, 1, all, 3, "d2h:gen->check", true,
                              edges, 2};
        check_gpu_trace(&x);
    }
}

static void test_cuda_source_to_host(void) { run_source_to_host(false); }
static void test_cuda_source_to_host_traced(void) { run_source_to_host(true); }

int main(void)
{
    g_dev = pf_test_cuda_device_or_skip();
    PF_RUN(test_cuda_chain);
    PF_RUN(test_cuda_chain_batched);
    PF_RUN(test_cuda_strict);
    PF_RUN(test_cuda_source_to_host);
    PF_RUN(test_cuda_chain_traced);
    PF_RUN(test_cuda_chain_batched_traced);
    PF_RUN(test_cuda_source_to_host_traced);
    return pf_test_finish();
}
