/* The inference stages on the CPU: nn.infer and ops.mask_post.
 *
 * ops.mask_post runs on generated model outputs (always): the NHWC
 * single-channel view (no copy), a channel of an NCHW tensor, the softmax of
 * a class against pf_ops_mask_argmax, temporal smoothing against the
 * formula of pf_ops_mask_temporal (exact bits), a restart resetting the
 * state, the resize to the frame, and the errors.
 *
 * nn.infer runs the MediaPipe selfie model (node_modules/@mediapipe, found
 * through $PF_SOURCE_DIR; the test exits 77 when it is absent) through
 * source.synthetic -> ops.preprocess -> nn.infer on a few 1080p-like frames,
 * in throughput (batch 4) and latency (batch 1) modes. The preprocessed
 * tensors are captured on a second branch, so each mask is compared with a
 * direct pf_nn_exec_run on the very tensor the stage got. With a memory cap
 * below what a batch-4 plan needs, nn.infer lowers its batch (and the
 * batcher's) instead of failing, and every mask still matches. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_test.h"

#define MAX_CAP 512

/* Helpers ------------------------------------------------------------------------------ */

static char model_path[1024];

static bool find_model(void)
{
    const char *root = getenv("PF_SOURCE_DIR");
    const char *rel = "node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite";
    const char *cands[] = {root, ".", "..", "../.."};
    for (int i = 0; i < 4; i++) {
        if (!cands[i]) continue;
        snprintf(model_path, sizeof model_path, "%s/%s", cands[i], rel);
        FILE *f = fopen(model_path, "rb");
        if (f) {
            fclose(f);
            return true;
        }
    }
    model_path[0] = '\0';
    return false;
}

/* A sink keeping the items it gets (single worker; read after wait). */
typedef struct capture {
    pf_item items[MAX_CAP];
    int n;
    atomic_int overflow;
} capture;

static pf_status capture_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    (void)ctx;
    capture *c = user;
    for (int i = 0; i < n; i++) {
        if (c->n < MAX_CAP) {
            c->items[c->n++] = items[i];
            memset(&items[i], 0, sizeof items[i]);
        } else {
            atomic_fetch_add(&c->overflow, 1);
            pf_item_unref(&items[i]);
        }
    }
    return PF_OK;
}

static void capture_release(capture *c)
{
    for (int i = 0; i < c->n; i++) pf_item_unref(&c->items[i]);
    c->n = 0;
}

static const pf_item *capture_find(const capture *c, int64_t seq)
{
    for (int i = 0; i < c->n; i++)
        if (c->items[i].seq == seq) return &c->items[i];
    return NULL;
}

static pf_stage *add_capture(pf_pipeline *p, const char *name, capture *c)
{
    pf_stage_desc d = pf_stage_desc_default();
    d.name = name;
    d.process = capture_process;
    d.user = c;
    pf_stage *s = NULL;
    CHECK_OK(pf_pipeline_add_stage(p, &d, &s));
    return s;
}

static pf_stage *add_builtin(pf_pipeline *p, const char *type, const char *name,
                             const pf_stage_param *kv, int n, pf_status *status)
{
    pf_stage_config cfg = {.name = name, .params = kv, .num_params = n};
    pf_stage_desc d;
    pf_status st = pf_stage_builtin(type, &cfg, &d);
    if (status) *status = st;
    if (st != PF_OK) {
        if (!status) fprintf(stderr, "  %s '%s': %s\n", type, name, pf_last_error());
        return NULL;
    }
    pf_stage *s = NULL;
    st = pf_pipeline_add_stage(p, &d, &s);
    if (st != PF_OK) {
        d.destroy(d.user);
        if (status) *status = st;
        return NULL;
    }
    return s;
}

static void connect(pf_pipeline *p, pf_stage *a, pf_stage *b)
{
    pf_edge_params e = pf_edge_params_default();
    e.capacity = 8;
    CHECK_OK(pf_pipeline_connect(p, a, b, &e));
}

/* Deterministic floats in [lo, hi) from (seed, index). */
static float gen_value(uint64_t seed, uint64_t i, float lo, float hi)
{
    uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull ^ (i + 1) * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 29;
    return lo + (hi - lo) * (float)((double)(x >> 11) / 9007199254740992.0);
}

/* A source of model-like outputs: items with a float tensor of a given
 * shape and layout (values from gen_value(index, k), the index in
 * item.user) and a small frame. */
typedef struct tsrc {
    int count;
    int next;
    int ndim;
    int64_t shape[4];
    pf_layout layout;
    float lo, hi;
    int frame_w, frame_h;
    int restart_at;       /* seq goes back to 0 at this item (-1: never) */
    int sources;          /* > 0: item k comes from source k % sources */
} tsrc;

static pf_status tsrc_fn(void *user, pf_stage_ctx *ctx, pf_item *out)
{
    (void)ctx;
    tsrc *s = user;
    if (s->next >= s->count) return PF_EOF;
    int k = s->next++;
    /* The runtime numbers items whose seq is left at 0: a restart uses
     * seqs that go back without reaching 0. */
    int64_t seq = s->restart_at >= 0 && k >= s->restart_at ? 1 + k - s->restart_at : 100 + k;
    pf_status st = pf_tensor_alloc(&out->tensor, PF_DTYPE_F32, s->ndim, s->shape, s->layout,
                                   NULL, NULL);
    if (st != PF_OK) return st;
    float *v = out->tensor.data;
    int64_t numel = pf_tensor_numel(&out->tensor);
    for (int64_t i = 0; i < numel; i++) v[i] = gen_value((uint64_t)k, (uint64_t)i, s->lo, s->hi);
    st = pf_frame_alloc(&out->frame, PF_PIXFMT_RGB24, s->frame_w, s->frame_h, NULL, NULL);
    if (st != PF_OK) return st;
    memset(out->frame.data[0], 90, out->frame.stride[0] * (size_t)s->frame_h);
    out->seq = seq;
    if (s->sources > 0) out->source = k % s->sources;
    out->user = (void *)(intptr_t)k; /* which values the tensor holds */
    return PF_OK;
}

static uint64_t item_index(const pf_item *it)
{
    return (uint64_t)(intptr_t)it->user;
}

static pf_stage *add_tsrc(pf_pipeline *p, tsrc *s)
{
    pf_stage_desc d = pf_stage_desc_default();
    d.name = "outputs";
    d.source = tsrc_fn;
    d.user = s;
    pf_stage *st = NULL;
    CHECK_OK(pf_pipeline_add_stage(p, &d, &st));
    return st;
}

/* A CPU ops context for the references. */
typedef struct ref_ops {
    pf_stream *stream;
    pf_ops *ops;
} ref_ops;

static bool ref_ops_make(ref_ops *r)
{
    memset(r, 0, sizeof *r);
    pf_stream_params sp = pf_stream_params_default();
    if (pf_stream_create(&sp, &r->stream) != PF_OK) return false;
    pf_ops_params op = pf_ops_params_default();
    op.stream = r->stream;
    return pf_ops_create(&op, &r->ops) == PF_OK;
}

static void ref_ops_free(ref_ops *r)
{
    pf_ops_destroy(&r->ops);
    pf_stream_destroy(&r->stream);
}

static bool run_to_end(pf_pipeline *p, pf_status *st_out, char *err, size_t errsize)
{
    pf_status st = pf_pipeline_start(p);
    if (st == PF_OK) st = pf_pipeline_wait(p, 120 * 1000000LL);
    if (err) snprintf(err, errsize, "%s", pf_last_error());
    if (st_out) *st_out = st;
    return st == PF_OK;
}

static bool is_mask_shape(const pf_tensor *t, int64_t h, int64_t w)
{
    return t->buf && t->dtype == PF_DTYPE_F32 && t->ndim == 4 && t->shape[0] == 1 &&
           t->shape[1] == 1 && t->shape[2] == h && t->shape[3] == w &&
           pf_tensor_is_contiguous(t);
}

/* ops.mask_post on generated outputs ----------------------------------------------------- */

/* [1, H, W, 1] NHWC: re-described as [1, 1, H, W] sharing the buffer. */
static void test_mask_post_view(void)
{
    pf_pipeline_params pp = pf_pipeline_params_default();
    pf_pipeline *p = NULL;
    REQUIRE(pf_pipeline_create(&pp, &p) == PF_OK);
    tsrc src = {.count = 3, .ndim = 4, .shape = {1, 37, 53, 1}, .layout = PF_LAYOUT_NHWC,
                .lo = 0, .hi = 1, .frame_w = 64, .frame_h = 48, .restart_at = -1};
    capture cap = {0};
    pf_stage *a = add_tsrc(p, &src);
    pf_stage *b = add_builtin(p, "ops.mask_post", "post", NULL, 0, NULL);
    pf_stage *c = add_capture(p, "cap", &cap);
    REQUIRE(a && b && c);
    connect(p, a, b);
    connect(p, b, c);
    char err[512];
    pf_status st;
    CHECK(run_to_end(p, &st, err, sizeof err));
    CHECK_EQ_INT(cap.n, 3);
    for (int i = 0; i < cap.n; i++) {
        const pf_item *it = &cap.items[i];
        CHECK(is_mask_shape(&it->tensor, 37, 53));
        CHECK(it->frame.buf[0] != NULL && it->frame.width == 64);
        const float *v = it->tensor.data;
        int bad = 0;
        for (int k = 0; k < 37 * 53; k++)
            bad += v[k] != gen_value(item_index(it), (uint64_t)k, 0, 1);
        CHECK_EQ_INT(bad, 0);
        CHECK(pf_buffer_refcount(it->tensor.buf) >= 1);
    }
    capture_release(&cap);
    pf_pipeline_destroy(&p);
}

/* [1, 3, H, W] with channel 2; softmax of class 1 against pf_ops_mask_argmax. */
static void test_mask_post_channel_softmax(void)
{
    ref_ops r;
    REQUIRE(ref_ops_make(&r));
    for (int mode = 0; mode < 2; mode++) {
        pf_pipeline_params pp = pf_pipeline_params_default();
        pf_pipeline *p = NULL;
        REQUIRE(pf_pipeline_create(&pp, &p) == PF_OK);
        tsrc src = {.count = 2, .ndim = 4, .shape = {1, 3, 17, 23}, .layout = PF_LAYOUT_NCHW,
                    .lo = -4, .hi = 4, .frame_w = 40, .frame_h = 30, .restart_at = -1};
        pf_stage_param ch[] = {{"channel", "2", 0}};
        pf_stage_param sm[] = {{"softmax", "true", 0}, {"class", "1", 0}};
        capture cap = {0};
        pf_stage *a = add_tsrc(p, &src);
        pf_stage *b = add_builtin(p, "ops.mask_post", "post", mode ? sm : ch, mode ? 2 : 1, NULL);
        pf_stage *c = add_capture(p, "cap", &cap);
        REQUIRE(a && b && c);
        connect(p, a, b);
        connect(p, b, c);
        CHECK(run_to_end(p, NULL, NULL, 0));
        CHECK_EQ_INT(cap.n, 2);
        for (int i = 0; i < cap.n; i++) {
            const pf_item *it = &cap.items[i];
            CHECK(is_mask_shape(&it->tensor, 17, 23));
            if (!is_mask_shape(&it->tensor, 17, 23)) continue;
            const float *v = it->tensor.data;
            int bad = 0;
            if (mode == 0) {
                for (int k = 0; k < 17 * 23; k++)
                    bad += v[k] != gen_value(item_index(it), (uint64_t)(2 * 17 * 23 + k), -4, 4);
            } else {
                pf_tensor in = {0}, prob = {0};
                int64_t pshape[3] = {1, 17, 23};
                CHECK_OK(pf_tensor_alloc(&in, PF_DTYPE_F32, 4, src.shape, PF_LAYOUT_NCHW, NULL,
                                         NULL));
                CHECK_OK(pf_tensor_alloc(&prob, PF_DTYPE_F32, 3, pshape, PF_LAYOUT_NONE, NULL,
                                         NULL));
                float *x = in.data;
                for (int k = 0; k < 3 * 17 * 23; k++)
                    x[k] = gen_value(item_index(it), (uint64_t)k, -4, 4);
                CHECK_OK(pf_ops_mask_argmax(r.ops, &in, NULL, &prob, 1));
                const float *e = prob.data;
                for (int k = 0; k < 17 * 23; k++) bad += v[k] != e[k];
                pf_tensor_unref(&in);
                pf_tensor_unref(&prob);
            }
            CHECK_EQ_INT(bad, 0);
        }
        capture_release(&cap);
        pf_pipeline_destroy(&p);
    }
    ref_ops_free(&r);
}

/* Temporal smoothing (alpha 0.25) with a restart at item 3, feathering off,
 * resize to the frame: compared with the formula and pf_ops_resize_mask. The
 * masks are noise (every frame a "scene cut"), so the cut test is off here
 * (scene_cut 0; tests/test_mask_scene_cut.c covers it). */
static void test_mask_post_temporal_resize(void)
{
    ref_ops r;
    REQUIRE(ref_ops_make(&r));
    const int H = 19, W = 29, FW = 50, FH = 31, N = 6, RESTART = 3;
    const float alpha = 0.25f;
    for (int resize = 0; resize < 2; resize++) {
        pf_pipeline_params pp = pf_pipeline_params_default();
        pf_pipeline *p = NULL;
        REQUIRE(pf_pipeline_create(&pp, &p) == PF_OK);
        tsrc src = {.count = N, .ndim = 4, .shape = {1, H, W, 1}, .layout = PF_LAYOUT_NHWC,
                    .lo = 0, .hi = 1, .frame_w = FW, .frame_h = FH, .restart_at = RESTART};
        pf_stage_param kv[] = {{"alpha", "0.25", 0}, {"scene_cut", "0", 0}, {"size", "frame", 0}};
        capture cap = {0};
        pf_stage *a = add_tsrc(p, &src);
        pf_stage *b = add_builtin(p, "ops.mask_post", "post", kv, resize ? 3 : 2, NULL);
        pf_stage *c = add_capture(p, "cap", &cap);
        REQUIRE(a && b && c);
        connect(p, a, b);
        connect(p, b, c);
        CHECK(run_to_end(p, NULL, NULL, 0));
        CHECK_EQ_INT(cap.n, N);
        float *state = calloc((size_t)(H * W), sizeof *state);
        pf_tensor st_t = {0}, rs = {0};
        int64_t sshape[4] = {1, 1, H, W}, fshape[4] = {1, 1, FH, FW};
        CHECK_OK(pf_tensor_alloc(&st_t, PF_DTYPE_F32, 4, sshape, PF_LAYOUT_NCHW, NULL, NULL));
        CHECK_OK(pf_tensor_alloc(&rs, PF_DTYPE_F32, 4, fshape, PF_LAYOUT_NCHW, NULL, NULL));
        int bad = 0;
        for (int i = 0; i < N && i < cap.n; i++) {
            const pf_item *it = &cap.items[i]; /* one worker everywhere: arrival order */
            CHECK_EQ_INT(item_index(it), i);
            bool reset = i == 0 || i == RESTART;
            for (int k = 0; k < H * W; k++) {
                float m = gen_value((uint64_t)i, (uint64_t)k, 0, 1);
                state[k] = reset ? m : alpha * m + (1.0f - alpha) * state[k];
            }
            const float *expect = state;
            if (resize) {
                memcpy(st_t.data, state, sizeof(float) * (size_t)(H * W));
                CHECK_OK(pf_ops_resize_mask(r.ops, &st_t, &rs, PF_INTERP_BILINEAR));
                expect = rs.data;
            }
            int eh = resize ? FH : H, ew = resize ? FW : W;
            CHECK(is_mask_shape(&it->tensor, eh, ew));
            if (!is_mask_shape(&it->tensor, eh, ew)) continue;
            const float *v = it->tensor.data;
            for (int k = 0; k < eh * ew; k++) bad += v[k] != expect[k];
        }
        CHECK_EQ_INT(bad, 0);
        free(state);
        pf_tensor_unref(&st_t);
        pf_tensor_unref(&rs);
        capture_release(&cap);
        pf_pipeline_destroy(&p);
    }
    ref_ops_free(&r);
}

/* Temporal state for many sources (cameras): 150 sources, 3 items each,
 * interleaved; each source's masks follow the formula with its own state
 * (the table grows past its first 16 slots; it once stopped at 64). */
static void test_mask_post_many_sources(void)
{
    const int H = 5, W = 7, S = 150, N = 3 * S;
    const float alpha = 0.25f;
    pf_pipeline_params pp = pf_pipeline_params_default();
    pf_pipeline *p = NULL;
    REQUIRE(pf_pipeline_create(&pp, &p) == PF_OK);
    tsrc src = {.count = N, .ndim = 4, .shape = {1, H, W, 1}, .layout = PF_LAYOUT_NHWC, .lo = 0,
                .hi = 1, .frame_w = 8, .frame_h = 6, .restart_at = -1, .sources = S};
    pf_stage_param kv[] = {{"alpha", "0.25", 0}, {"scene_cut", "0", 0}};
    capture cap = {0};
    pf_stage *a = add_tsrc(p, &src);
    pf_stage *b = add_builtin(p, "ops.mask_post", "post", kv, 2, NULL);
    pf_stage *c = add_capture(p, "cap", &cap);
    REQUIRE(a && b && c);
    connect(p, a, b);
    connect(p, b, c);
    char err[512] = "";
    CHECK(run_to_end(p, NULL, err, sizeof err));
    if (err[0]) printf("     %s\n", err);
    CHECK_EQ_INT(cap.n, N);
    float *state = calloc((size_t)(S * H * W), sizeof *state);
    REQUIRE(state);
    int bad = 0;
    for (int i = 0; i < N && i < cap.n; i++) {
        const pf_item *it = &cap.items[i];
        CHECK_EQ_INT(item_index(it), i);
        CHECK_EQ_INT(it->source, i % S);
        float *st = state + (size_t)(i % S) * (size_t)(H * W);
        for (int k = 0; k < H * W; k++) {
            float m = gen_value((uint64_t)i, (uint64_t)k, 0, 1);
            st[k] = i < S ? m : alpha * m + (1.0f - alpha) * st[k];
        }
        if (!is_mask_shape(&it->tensor, H, W)) {
            bad++;
            continue;
        }
        const float *v = it->tensor.data;
        for (int k = 0; k < H * W; k++) bad += v[k] != st[k];
    }
    CHECK_EQ_INT(bad, 0);
    free(state);
    capture_release(&cap);
    pf_pipeline_destroy(&p);
}

/* Parameters and items the stages refuse, with messages naming them. */
static void test_errors(void)
{
    pf_stage_desc d;
    pf_stage_config cfg = {.name = "x"};
    pf_stage_param sm[] = {{"softmax", "true", 0}};
    cfg.params = sm;
    cfg.num_params = 1;
    CHECK(pf_stage_builtin("ops.mask_post", &cfg, &d) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "class") != NULL);
    pf_stage_param al[] = {{"alpha", "0", 0}};
    cfg.params = al;
    CHECK(pf_stage_builtin("ops.mask_post", &cfg, &d) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "alpha") != NULL);
    pf_stage_param un[] = {{"sigma", "3", 0}};
    cfg.params = un;
    CHECK(pf_stage_builtin("ops.mask_post", &cfg, &d) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "sigma") != NULL);

    cfg.num_params = 0;
    CHECK(pf_stage_builtin("nn.infer", &cfg, &d) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "model") != NULL);
    pf_stage_param missing[] = {{"model", "/nonexistent/dir/m.tflite", 0}};
    cfg.params = missing;
    cfg.num_params = 1;
    pf_status st = pf_stage_builtin("nn.infer", &cfg, &d);
    CHECK(st < 0);
    CHECK(strstr(pf_last_error(), "/nonexistent/dir/m.tflite") != NULL);
    pf_stage_param f16[] = {{"model", "m.tflite", 0}, {"precision", "fp16", 0}};
    cfg.params = f16;
    cfg.num_params = 2;
    CHECK(pf_stage_builtin("nn.infer", &cfg, &d) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "fp16") != NULL);
    pf_stage_param bb[] = {{"model", "m.tflite", 0}, {"batch", "0", 0}};
    cfg.params = bb;
    CHECK(pf_stage_builtin("nn.infer", &cfg, &d) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "batch") != NULL);
    pf_stage_param rv[] = {{"model", "m.tflite", 0}, {"reserve", "sometimes", 0}};
    cfg.params = rv;
    CHECK(pf_stage_builtin("nn.infer", &cfg, &d) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "reserve 'sometimes'") != NULL);
    CHECK(strstr(pf_last_error(), "max") != NULL);

    /* A tensor holding two masks stops the pipeline naming the shape. */
    pf_pipeline_params pp = pf_pipeline_params_default();
    pf_pipeline *p = NULL;
    REQUIRE(pf_pipeline_create(&pp, &p) == PF_OK);
    tsrc src = {.count = 2, .ndim = 4, .shape = {2, 1, 8, 8}, .layout = PF_LAYOUT_NCHW,
                .lo = 0, .hi = 1, .frame_w = 8, .frame_h = 8, .restart_at = -1};
    capture cap = {0};
    pf_stage *a = add_tsrc(p, &src);
    pf_stage *b = add_builtin(p, "ops.mask_post", "post", NULL, 0, NULL);
    pf_stage *c = add_capture(p, "cap", &cap);
    REQUIRE(a && b && c);
    connect(p, a, b);
    connect(p, b, c);
    char err[512];
    CHECK(!run_to_end(p, &st, err, sizeof err));
    CHECK(st == PF_ERR_INVALID);
    CHECK(strstr(err, "post") != NULL && strstr(err, "2 masks") != NULL);
    capture_release(&cap);
    pf_pipeline_destroy(&p);
}

/* nn.infer with the selfie model ---------------------------------------------------------------- */

#define FRAMES 6

/* source.synthetic 1920x1080 -> preprocess (NHWC 256x256, batched) -> fan-out:
 * a capture of the inputs, and nn.infer -> capture of the masks. */
/* The pipeline is handed back in *out: the captured tensors come from its
 * stage allocators and must be released before it is destroyed. */
static const char *g_memory_cap; /* nn.infer's memory_cap in run_selfie; NULL = none */

static void run_selfie(pf_pipeline_mode mode, int batch, const char *layout, capture *ins,
                       capture *outs, pf_status *result, char *err, size_t errsize,
                       pf_pipeline **out)
{
    pf_pipeline_params pp = pf_pipeline_params_default();
    pp.mode = mode;
    pf_pipeline *p = NULL;
    *out = NULL;
    *result = pf_pipeline_create(&pp, &p);
    if (*result != PF_OK) return;
    char count[16], bs[16];
    snprintf(count, sizeof count, "%d", FRAMES);
    snprintf(bs, sizeof bs, "%d", batch);
    pf_stage_param src_kv[] = {{"width", "1920", 0}, {"height", "1080", 0}, {"count", count, 0},
                               {"speed", "40", 0}, {"pool", "16", 0}};
    pf_stage_param pre_kv[] = {{"width", "256", 0}, {"height", "256", 0}, {"layout", layout, 0}};
    pf_stage_param inf_kv[] = {{"model", model_path, 0}, {"batch", bs, 0},
                               {"delay_us", "200000", 0}, {"memory_cap", g_memory_cap, 0}};
    pf_stage *src = add_builtin(p, "source.synthetic", "camera", src_kv, 5, NULL);
    pf_stage_config pcfg = {.name = "pre", .params = pre_kv, .num_params = 3};
    pf_stage_desc pd;
    pf_stage *pre = NULL;
    CHECK_OK(pf_stage_builtin("ops.preprocess", &pcfg, &pd));
    pd.batch.max_batch = batch;
    pd.batch.max_delay_us = 200000;
    CHECK_OK(pf_pipeline_add_stage(p, &pd, &pre));
    pf_stage *inf = add_builtin(p, "nn.infer", "infer", inf_kv, g_memory_cap ? 4 : 3, NULL);
    pf_stage *ci = add_capture(p, "inputs", ins);
    pf_stage *co = add_capture(p, "masks", outs);
    if (!src || !pre || !inf || !ci || !co) {
        *result = PF_ERR_INTERNAL;
        snprintf(err, errsize, "could not build the pipeline");
        pf_pipeline_destroy(&p);
        return;
    }
    pf_edge_params e = pf_edge_params_default();
    e.capacity = 16; /* latency mode lowers capacities and may drop: counted below */
    CHECK_OK(pf_pipeline_connect(p, src, pre, &e));
    CHECK_OK(pf_pipeline_connect(p, pre, ci, &e));
    CHECK_OK(pf_pipeline_connect(p, pre, inf, &e));
    CHECK_OK(pf_pipeline_connect(p, inf, co, &e));
    run_to_end(p, result, err, errsize);
    pf_pipeline_stats s;
    if (*result == PF_OK && pf_pipeline_get_stats(p, &s) == PF_OK) {
        for (int i = 0; i < s.num_stages; i++)
            if (!strcmp(s.stages[i].name, "infer")) {
                printf("  infer: %llu items in %llu calls (batch <= %d)\n",
                       (unsigned long long)s.stages[i].items_in,
                       (unsigned long long)s.stages[i].batches, batch);
                if (mode == PF_MODE_LATENCY) CHECK_EQ_INT(s.stages[i].batch_hist[1],
                                                          s.stages[i].batches);
                if (g_memory_cap) {
                    printf("  infer: batch lowered to %d (%llu times) under memory_cap %s\n",
                           s.stages[i].batch_limit,
                           (unsigned long long)s.stages[i].batch_limits, g_memory_cap);
                    CHECK(s.stages[i].batch_limit >= 1 && s.stages[i].batch_limit < batch);
                    CHECK(s.stages[i].batch_limits >= 1);
                    CHECK_EQ_INT(s.stages[i].errors, 0);
                    /* No batch above the limit once it was lowered: the largest
                     * batch seen is the first (failed, then split) one. */
                } else {
                    CHECK_EQ_INT(s.stages[i].batch_limits, 0);
                }
            }
    }
    *out = p;
}

/* Direct run of the model on `in` ([1, 256, 256, 3]); max |diff| with `mask`. */
static double compare_direct(pf_nn_exec *x, const pf_tensor *in, const pf_tensor *mask,
                             double *min_v, double *max_v)
{
    pf_tensor out = {0};
    if (pf_tensor_alloc(&out, PF_DTYPE_F32, mask->ndim, mask->shape, mask->layout, NULL, NULL) !=
        PF_OK)
        return 1e9;
    pf_status st = pf_nn_exec_run(x, NULL, in, 1, &out, 1);
    double worst = st == PF_OK ? 0 : 1e9;
    if (st != PF_OK) fprintf(stderr, "  direct run: %s\n", pf_last_error());
    const float *a = out.data, *b = mask->data;
    int64_t n = pf_tensor_numel(&out);
    for (int64_t i = 0; i < n && st == PF_OK; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= worst)) worst = d; /* NaN counts as the worst */
        if (b[i] < *min_v) *min_v = b[i];
        if (b[i] > *max_v) *max_v = b[i];
    }
    pf_tensor_unref(&out);
    return worst;
}

static void test_selfie_modes(void)
{
    pf_model *m = NULL;
    CHECK_OK(pf_model_load(model_path, &m));
    REQUIRE(m != NULL);
    pf_model_io in = pf_model_input(m, 0), out = pf_model_output(m, 0);
    printf("  model input '%s' [%lld,%lld,%lld,%lld] %s, output '%s' [%lld,%lld,%lld,%lld]\n",
           in.name, (long long)in.shape[0], (long long)in.shape[1], (long long)in.shape[2],
           (long long)in.shape[3], pf_layout_name(in.layout), out.name, (long long)out.shape[0],
           (long long)out.shape[1], (long long)out.shape[2], (long long)out.shape[3]);
    pf_nn_exec_params xp = pf_nn_exec_params_default();
    pf_nn_exec *x = NULL;
    CHECK_OK(pf_nn_exec_create(m, &xp, &x));
    REQUIRE(x != NULL);
    const struct {
        pf_pipeline_mode mode;
        int batch;
        double tol;
    } runs[] = {{PF_MODE_THROUGHPUT, 4, 1e-4}, {PF_MODE_LATENCY, 4, 1e-5}};
    for (int r = 0; r < 2; r++) {
        capture ins = {0}, outs = {0};
        pf_status st;
        char err[1024] = "";
        pf_pipeline *p = NULL;
        run_selfie(runs[r].mode, runs[r].batch, "nhwc", &ins, &outs, &st, err, sizeof err, &p);
        if (st != PF_OK) fprintf(stderr, "  run %d: %s: %s\n", r, pf_status_str(st), err);
        CHECK_OK(st);
        if (runs[r].mode == PF_MODE_THROUGHPUT) CHECK_EQ_INT(outs.n, FRAMES);
        CHECK(outs.n >= 1);
        double worst = 0, lo = 1e9, hi = -1e9;
        int compared = 0;
        for (int i = 0; i < outs.n; i++) {
            const pf_item *mi = &outs.items[i];
            const pf_item *ii = capture_find(&ins, mi->seq);
            CHECK(ii != NULL);
            if (!ii) continue;
            CHECK(mi->frame.buf[0] != NULL && mi->frame.width == 1920 && mi->frame.height == 1080);
            CHECK(mi->tensor.ndim == 4 && mi->tensor.shape[0] == 1 &&
                  mi->tensor.shape[1] == out.shape[1] && mi->tensor.shape[2] == out.shape[2] &&
                  mi->tensor.shape[3] == out.shape[3] && mi->tensor.dtype == PF_DTYPE_F32);
            double d = compare_direct(x, &ii->tensor, &mi->tensor, &lo, &hi);
            if (d > worst) worst = d;
            compared++;
        }
        printf("  %s: %d masks, max |pipeline - direct| = %.3g, values in [%.4f, %.4f]\n",
               runs[r].mode == PF_MODE_LATENCY ? "latency" : "throughput", compared, worst, lo,
               hi);
        CHECK(compared == outs.n);
        CHECK(worst <= runs[r].tol);
        CHECK(lo >= 0.0 && hi <= 1.0); /* a sigmoid output */
        capture_release(&ins);
        capture_release(&outs);
        pf_pipeline_destroy(&p);
    }
    pf_nn_exec_destroy(&x);
    pf_model_free(&m);
}

/* The bytes a batch-b plan of the model needs on the CPU (from the
 * executor's own refusal under a 1-byte cap, which names them). */
static size_t plan_bytes(pf_model *m, int b)
{
    pf_nn_exec_params xp = pf_nn_exec_params_default();
    xp.memory_cap = 1;
    xp.max_batch = b;
    pf_nn_exec *x = NULL;
    if (pf_nn_exec_create(m, &xp, &x) != PF_OK) return 0;
    pf_model_io io = pf_model_input(m, 0), oo = pf_model_output(m, 0);
    int64_t ish[4] = {b, io.shape[1], io.shape[2], io.shape[3]};
    int64_t osh[4] = {b, oo.shape[1], oo.shape[2], oo.shape[3]};
    pf_tensor in = {0}, out = {0};
    size_t a = 0, sc = 0, io_b = 0;
    if (pf_tensor_alloc(&in, PF_DTYPE_F32, 4, ish, io.layout, NULL, NULL) == PF_OK &&
        pf_tensor_alloc(&out, PF_DTYPE_F32, 4, osh, oo.layout, NULL, NULL) == PF_OK &&
        pf_nn_exec_run(x, NULL, &in, 1, &out, 1) == PF_ERR_NOMEM) {
        const char *msg = strstr(pf_last_error(), "needs ");
        if (!msg || sscanf(msg, "needs %zu B of arena + %zu B of scratch + %zu B", &a, &sc,
                           &io_b) != 3)
            a = sc = io_b = 0;
    }
    pf_tensor_unref(&in);
    pf_tensor_unref(&out);
    pf_nn_exec_destroy(&x);
    return a + sc + io_b;
}

static void test_selfie_out_of_memory(void)
{
    pf_model *m = NULL;
    CHECK_OK(pf_model_load(model_path, &m));
    REQUIRE(m != NULL);
    size_t b1 = plan_bytes(m, 1), b4 = plan_bytes(m, 4);
    printf("  plan bytes: batch 1 %zu, batch 4 %zu\n", b1, b4);
    REQUIRE(b1 > 0 && b4 > b1);
    char cap[32];
    snprintf(cap, sizeof cap, "%zu", b1 + (b4 - b1) / 4); /* batch 1 fits, batch 4 does not */
    pf_nn_exec_params xp = pf_nn_exec_params_default();
    pf_nn_exec *x = NULL;
    CHECK_OK(pf_nn_exec_create(m, &xp, &x));
    capture ins = {0}, outs = {0};
    pf_status st;
    char err[1024] = "";
    pf_pipeline *p = NULL;
    g_memory_cap = cap;
    run_selfie(PF_MODE_THROUGHPUT, 4, "nhwc", &ins, &outs, &st, err, sizeof err, &p);
    g_memory_cap = NULL;
    if (st != PF_OK) fprintf(stderr, "  %s: %s\n", pf_status_str(st), err);
    CHECK_OK(st);
    CHECK_EQ_INT(outs.n, FRAMES);
    double worst = 0, lo = 1e9, hi = -1e9;
    for (int i = 0; i < outs.n; i++) {
        const pf_item *ii = capture_find(&ins, outs.items[i].seq);
        CHECK(ii != NULL);
        if (!ii) continue;
        double d = compare_direct(x, &ii->tensor, &outs.items[i].tensor, &lo, &hi);
        if (d > worst) worst = d;
    }
    printf("  max |pipeline - direct| = %.3g over %d masks\n", worst, outs.n);
    CHECK(worst <= 1e-4);
    capture_release(&ins);
    capture_release(&outs);
    pf_pipeline_destroy(&p);
    pf_nn_exec_destroy(&x);
    pf_model_free(&m);
}

/* NCHW tensors for an NHWC model stop the pipeline with a hint. */
static void test_selfie_wrong_layout(void)
{
    capture ins = {0}, outs = {0};
    pf_status st;
    char err[1024] = "";
    pf_pipeline *p = NULL;
    run_selfie(PF_MODE_THROUGHPUT, 2, "nchw", &ins, &outs, &st, err, sizeof err, &p);
    CHECK(st == PF_ERR_INVALID);
    CHECK(strstr(err, "infer") != NULL && strstr(err, "layout: nhwc") != NULL);
    if (!strstr(err, "layout: nhwc")) fprintf(stderr, "  message: %s\n", err);
    CHECK_EQ_INT(outs.n, 0);
    capture_release(&ins);
    capture_release(&outs);
    pf_pipeline_destroy(&p);
}

/* The whole chain of examples/segment.yaml built in C, with the mask
 * resized to the frame and composited. */
static void test_selfie_chain(void)
{
    pf_pipeline_params pp = pf_pipeline_params_default();
    pf_pipeline *p = NULL;
    REQUIRE(pf_pipeline_create(&pp, &p) == PF_OK);
    pf_stage_param src_kv[] = {{"width", "640", 0}, {"height", "360", 0}, {"count", "5", 0}};
    pf_stage_param pre_kv[] = {{"width", "256", 0}, {"height", "256", 0}, {"layout", "nhwc", 0}};
    pf_stage_param inf_kv[] = {{"model", model_path, 0}};
    pf_stage_param post_kv[] = {{"alpha", "0.6", 0}, {"feather", "1.5", 0}, {"size", "frame", 0}};
    pf_stage_param comp_kv[] = {{"mask", "item", 0}, {"background", "color", 0}};
    capture cap = {0};
    pf_stage *s[6] = {
        add_builtin(p, "source.synthetic", "camera", src_kv, 3, NULL),
        add_builtin(p, "ops.preprocess", "pre", pre_kv, 3, NULL),
        add_builtin(p, "nn.infer", "infer", inf_kv, 1, NULL),
        add_builtin(p, "ops.mask_post", "post", post_kv, 3, NULL),
        add_builtin(p, "ops.composite", "blend", comp_kv, 2, NULL),
        add_capture(p, "cap", &cap),
    };
    for (int i = 0; i < 6; i++) REQUIRE(s[i] != NULL);
    for (int i = 0; i + 1 < 6; i++) connect(p, s[i], s[i + 1]);
    char err[1024];
    pf_status st;
    CHECK(run_to_end(p, &st, err, sizeof err));
    if (st != PF_OK) fprintf(stderr, "  %s\n", err);
    CHECK_EQ_INT(cap.n, 5);
    for (int i = 0; i < cap.n; i++) {
        CHECK(cap.items[i].frame.width == 640 && cap.items[i].frame.format == PF_PIXFMT_RGB24);
        CHECK(is_mask_shape(&cap.items[i].tensor, 360, 640));
    }
    capture_release(&cap);
    pf_pipeline_destroy(&p);
}

int main(void)
{
    PF_RUN(test_mask_post_view);
    PF_RUN(test_mask_post_channel_softmax);
    PF_RUN(test_mask_post_temporal_resize);
    PF_RUN(test_mask_post_many_sources);
    PF_RUN(test_errors);
    if (!find_model()) {
        printf("skip: node_modules/@mediapipe/selfie_segmentation not found (set "
               "PF_SOURCE_DIR; npm ci installs it)\n");
        int rc = pf_test_finish();
        return rc ? rc : 77;
    }
    printf("model %s\n", model_path);
    PF_RUN(test_selfie_modes);
    PF_RUN(test_selfie_wrong_layout);
    PF_RUN(test_selfie_out_of_memory);
    PF_RUN(test_selfie_chain);
    return pf_test_finish();
}
