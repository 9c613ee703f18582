/* Pipeline with CUDA stages: host frames -> (h2d inserted) -> CUDA stage ->
 * CUDA stage -> (d2h inserted) -> host sink that checks every byte.
 *
 * The CUDA stages only queue work on their streams and emit at once, so the
 * bytes come out right only if the runtime orders the streams (ready events
 * between stages), keeps inputs alive until the consuming stream has used
 * them (deferred release: otherwise the caching allocator hands a block back
 * to its producer while another stream still reads it), and the transfers
 * copy the right data. Frames are large (copies take a while) to make a
 * missing wait show up as wrong bytes. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "pf_test.h"

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

static void run_chain(pf_device *dev, int max_batch, bool strict)
{
    int64_t n = 120;
    src_state src = {n, 0};
    cuda_stage ca = {0, 0x11, 0}, cb = {1, 0x22, 0};
    sink_state sink = {0};
    pf_pipeline_params pp = pf_pipeline_params_default();
    pp.name = "cuda";
    pp.strict_transfers = strict;
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
}

static pf_device *g_dev;

static void test_cuda_chain(void) { run_chain(g_dev, 1, false); }
static void test_cuda_chain_batched(void) { run_chain(g_dev, 4, false); }
static void test_cuda_strict(void) { run_chain(g_dev, 1, true); }

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

static void test_cuda_source_to_host(void)
{
    cuda_src src = {200, 0};
    flat_sink sink = {0, 0};
    pf_pipeline *p = NULL;
    pf_pipeline_params pp = pf_pipeline_params_default();
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
}

int main(void)
{
    g_dev = pf_test_cuda_device_or_skip();
    PF_RUN(test_cuda_chain);
    PF_RUN(test_cuda_chain_batched);
    PF_RUN(test_cuda_strict);
    PF_RUN(test_cuda_source_to_host);
    return pf_test_finish();
}
