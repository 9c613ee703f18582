/* Mask post-processing and refinement on CUDA against the C reference (run
 * on the CPU) on the same inputs: random shapes and values (logits,
 * probabilities, ties, +-0, +-inf, subnormals, huge), f16 and f32, NCHW and
 * NHWC, C from 1 to 255, sizes on both sides of the kernels' tile edges,
 * 1x1 planes, radii larger than the image, more planes than a grid takes
 * (70000), misaligned tensors (the scalar paths), 1080p frames of the
 * benchmark's shapes, pinned-memory inputs, a CUDA-graph capture and
 * replay, and memory the context cannot reach.
 *
 * Tolerances (ops.h, "Mask post-processing" / "Mask refinement"):
 * - u8 outputs are bit-exact, except threshold on logits: CUDA's expf may
 *   differ from glibc's by 1-2 ulp, so a value whose sigmoid (as the
 *   reference computes it) lies within 1e-6 of the threshold may fall on
 *   the other side; only such values may differ (they are counted).
 * - argmax prob: |diff| <= 1e-5 |ref| + 1e-37 (expf ulps; the floor covers
 *   results in the float subnormal range).
 * - temporal: 1e-5 relative (the kernel uses the reference's rounding, so
 *   it is expected to be exact; the worst ratio is printed).
 * - feather: 1e-5 |ref| + 1e-30 for masks in [0, 1] (every term is
 *   non-negative, so rounding differences stay relative); for signed
 *   inputs 1e-5 of the largest input magnitude (sums that cancel). The
 *   kernel uses fused multiply-adds, the reference separate ones.
 * - morphology: bit-exact.
 * The 1080p morphology cases compare with the CPU path, which test_mask
 * proves bit-identical to the reference (the 2-D reference would take
 * minutes there). */
#include "../mask_check.h"
#include "../ops_test_util.h"

static pf_device *g_dev;
static pf_stream *g_cs, *g_hs; /* CUDA stream, CPU stream */
static pf_allocator *g_dalloc, *g_palloc;
static pf_ops *g_ref, *g_cpu, *g_cuda;
static double g_worst_prob, g_worst_temporal, g_worst_feather;
static long g_boundary, g_values;

static pf_tensor host(pf_dtype dt, int ndim, const int64_t *shape, pf_layout layout)
{
    return mkc_new(dt, ndim, shape, layout, NULL, NULL);
}

/* A copy of host tensor h in memory from `alloc` (device or pinned). */
static pf_tensor upload(const pf_tensor *h, pf_allocator *alloc)
{
    pf_tensor d = mkc_new(h->dtype, h->ndim, h->shape, h->layout, alloc, g_cs);
    size_t n = pf_tensor_nbytes(h);
    if (n) CHECK_OK(pf_memcpy_async(g_cs, d.data, h->data, n));
    return d;
}

/* A poisoned device tensor shaped like h. */
static pf_tensor dev_like(const pf_tensor *h)
{
    pf_tensor d = mkc_new(h->dtype, h->ndim, h->shape, h->layout, g_dalloc, g_cs);
    size_t n = pf_tensor_nbytes(h);
    if (n) CHECK_OK(pf_memset_async(g_cs, d.data, 0x7F, n));
    return d;
}

/* d's bytes into host tensor h (same shape), after the stream is done. */
static void download(const pf_tensor *d, pf_tensor *h)
{
    size_t n = pf_tensor_nbytes(d);
    if (n) CHECK_OK(pf_memcpy_async(g_cs, h->data, d->data, n));
    CHECK_OK(pf_stream_synchronize(g_cs));
}

static void poison(pf_tensor *t) { memset(t->data, 0x7F, pf_tensor_nbytes(t)); }

/* Threshold ------------------------------------------------------------------------------- */

/* Differences are allowed only for logits whose reference sigmoid lies
 * within 1e-6 of the threshold. */
static long cmp_threshold(const pf_tensor *src, bool logits, float t, const uint8_t *ref,
                          const uint8_t *got, const char *label)
{
    long bad = 0;
    int64_t n = pf_tensor_numel(src);
    g_values += n;
    for (int64_t i = 0; i < n; i++) {
        if (ref[i] == got[i]) continue;
        if (logits) {
            float x = mkc_get(src, i), p = 1.0f / (1.0f + expf(-x));
            if (fabsf(p - t) <= 1e-6f) {
                g_boundary++;
                continue;
            }
        }
        if (bad++ < 3)
            fprintf(stderr, "  %s: element %lld is %d, reference %d (src %.9g, threshold %.9g)\n",
                    label, (long long)i, got[i], ref[i], (double)mkc_get(src, i), (double)t);
    }
    return bad;
}

/* One threshold case: src on the device, or at `offset` elements into a
 * larger device tensor (misaligned: the scalar path). */
static void threshold_case(const pf_tensor *src, bool logits, float t, int offset,
                           const char *label)
{
    pf_tensor ref = host(PF_DTYPE_U8, src->ndim, src->shape, PF_LAYOUT_NONE);
    pf_tensor got = host(PF_DTYPE_U8, src->ndim, src->shape, PF_LAYOUT_NONE);
    CHECK_OK(pf_ops_mask_threshold(g_ref, src, logits, t, &ref));
    int64_t n = pf_tensor_numel(src), big = n + offset;
    pf_tensor hbig = host(src->dtype, 1, &big, PF_LAYOUT_NONE);
    mkc_fill(&hbig, MKC_LOGITS);
    memcpy((uint8_t *)hbig.data + (size_t)offset * pf_dtype_size(src->dtype), src->data,
           pf_tensor_nbytes(src));
    pf_tensor hout = host(PF_DTYPE_U8, 1, &big, PF_LAYOUT_NONE);
    pf_tensor dbig = upload(&hbig, g_dalloc), ubig = dev_like(&hout), dsrc = {0}, flat = {0};
    CHECK_OK(pf_tensor_slice(&dsrc, &dbig, 0, offset, n));
    CHECK_OK(pf_tensor_slice(&flat, &ubig, 0, offset, n));
    pf_tensor src1 = dsrc; /* the same bytes with src's shape */
    src1.ndim = src->ndim;
    memcpy(src1.shape, src->shape, sizeof src->shape);
    memcpy(src1.strides, src->strides, sizeof src->strides);
    pf_tensor dst1 = flat;
    dst1.ndim = src->ndim;
    memcpy(dst1.shape, src->shape, sizeof src->shape);
    memcpy(dst1.strides, src->strides, sizeof src->strides);
    CHECK_OK(pf_ops_mask_threshold(g_cuda, &src1, logits, t, &dst1));
    download(&ubig, &hout);
    memcpy(got.data, (uint8_t *)hout.data + offset, (size_t)n);
    CHECK_EQ_INT(cmp_threshold(src, logits, t, ref.data, got.data, label), 0);
    /* Nothing outside the slice was written. */
    long outside = 0;
    for (int i = 0; i < offset; i++) outside += ((uint8_t *)hout.data)[i] != 0x7F;
    CHECK_EQ_INT(outside, 0);
    pf_tensor *all[] = {&ref, &got, &hbig, &dbig, &dsrc, &flat, &ubig, &hout};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) pf_tensor_unref(all[i]);
}

static void test_threshold(void)
{
    for (int it = 0; it < 120; it++) {
        int64_t shape[4];
        int ndim = (int)pf_test_rand_range(1, 4);
        for (int i = 0; i < ndim; i++) shape[i] = pf_test_rand_range(1, it % 10 ? 9 : 300);
        pf_dtype dt = pf_test_rand() & 1 ? PF_DTYPE_F16 : PF_DTYPE_F32;
        int kind = (int)(pf_test_rand() % MKC_KINDS);
        bool logits = pf_test_rand() & 1;
        pf_tensor src = host(dt, ndim, shape, PF_LAYOUT_NONE);
        mkc_fill(&src, kind);
        float t = it % 3 == 0 ? 0.5f : (float)mkc_unit();
        if (it % 7 == 0) t = mkc_get(&src, 0);
        if (!isfinite(t)) t = 0.5f;
        char label[48];
        snprintf(label, sizeof label, "threshold case %d", it);
        threshold_case(&src, logits, t, it % 4 == 3 ? (int)pf_test_rand_range(1, 3) : 0, label);
        pf_tensor_unref(&src);
    }
    /* The benchmark's shape: f32 probabilities at 1080p; and f16 logits. */
    int64_t s[4] = {1, 1, 1080, 1920};
    pf_tensor p = host(PF_DTYPE_F32, 4, s, PF_LAYOUT_NCHW);
    mkc_fill(&p, MKC_PROBS);
    threshold_case(&p, false, 0.5f, 0, "1080p probabilities");
    pf_tensor l = host(PF_DTYPE_F16, 4, s, PF_LAYOUT_NCHW);
    mkc_fill(&l, MKC_LOGITS);
    threshold_case(&l, true, 0.5f, 0, "1080p f16 logits");
    threshold_case(&l, true, 0.73f, 1, "1080p f16 logits, misaligned");
    pf_tensor_unref(&p);
    pf_tensor_unref(&l);
}

/* Argmax -------------------------------------------------------------------------------------- */

static void argmax_case(int64_t N, int C, int64_t H, int64_t W, int nhwc, pf_dtype dt, int kind,
                        int mode, int cls, const char *label)
{
    int64_t s4[4] = {N, nhwc ? H : C, nhwc ? W : H, nhwc ? C : W}, s3[3] = {N, H, W};
    pf_tensor src = host(dt, 4, s4, nhwc ? PF_LAYOUT_NHWC : PF_LAYOUT_NCHW);
    mkc_fill(&src, kind);
    pf_tensor rl = host(PF_DTYPE_U8, 3, s3, PF_LAYOUT_NONE), gl = host(PF_DTYPE_U8, 3, s3,
                                                                        PF_LAYOUT_NONE);
    pf_tensor rp = host(PF_DTYPE_F32, 3, s3, PF_LAYOUT_NONE), gp = host(PF_DTYPE_F32, 3, s3,
                                                                         PF_LAYOUT_NONE);
    const int want_l = mode != 1, want_p = mode != 0;
    CHECK_OK(pf_ops_mask_argmax(g_ref, &src, want_l ? &rl : NULL, want_p ? &rp : NULL, cls));
    pf_tensor ds = upload(&src, g_dalloc), dl = dev_like(&rl), dp = dev_like(&rp);
    CHECK_OK(pf_ops_mask_argmax(g_cuda, &ds, want_l ? &dl : NULL, want_p ? &dp : NULL, cls));
    download(&dl, &gl);
    download(&dp, &gp);
    size_t n = (size_t)(N * H * W);
    g_values += (long)n;
    if (want_l) CHECK_EQ_INT(mkc_cmp_bytes(rl.data, gl.data, n, label), 0);
    if (want_p) CHECK_EQ_INT(mkc_cmp_f32(rp.data, gp.data, n, 1e-5, 1e-37, label, &g_worst_prob), 0);
    pf_tensor *all[] = {&src, &rl, &gl, &rp, &gp, &ds, &dl, &dp};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) pf_tensor_unref(all[i]);
}

static void test_argmax(void)
{
    static const int cs[] = {1, 2, 3, 21, 0, 255};
    for (int it = 0; it < 150; it++) {
        int C = cs[pf_test_rand() % 6];
        if (C == 0) C = (int)pf_test_rand_range(4, 40);
        int64_t N = pf_test_rand_range(1, 3), H = pf_test_rand_range(1, 40),
                W = pf_test_rand_range(1, 70);
        if (it % 4 == 0) W &= ~(int64_t)3; /* hw % 4 == 0: the 4-pixel path */
        if (W == 0) W = 4;
        int kind = (int)(pf_test_rand() % MKC_KINDS);
        char label[96];
        snprintf(label, sizeof label, "argmax case %d ([%lld,%d,%lld,%lld])", it, (long long)N, C,
                 (long long)H, (long long)W);
        argmax_case(N, C, H, W, (int)(pf_test_rand() & 1),
                    pf_test_rand() & 1 ? PF_DTYPE_F16 : PF_DTYPE_F32,
                    kind == MKC_PROBS ? MKC_LOGITS : kind, (int)(pf_test_rand() % 3),
                    (int)pf_test_rand_range(0, C - 1), label);
    }
    argmax_case(1, 21, 1080, 1920, 0, PF_DTYPE_F16, MKC_LOGITS, 2, 15, "1080p 21 classes f16");
    argmax_case(2, 21, 37, 51, 1, PF_DTYPE_F16, MKC_TIES, 2, 15, "nhwc ties");
    argmax_case(3, 2, 1, 1, 0, PF_DTYPE_F32, MKC_SPECIAL, 2, 1, "1x1");
}

/* Temporal ------------------------------------------------------------------------------------- */

static void test_temporal(void)
{
    for (int it = 0; it < 40; it++) {
        int64_t n = it % 5 == 0 ? pf_test_rand_range(100000, 3000000) : pf_test_rand_range(1, 999);
        int offset = it % 3 == 2 ? (int)pf_test_rand_range(1, 3) : 0, big = (int)n + offset;
        int64_t nb = big;
        pf_tensor hs = host(PF_DTYPE_F32, 1, &n, PF_LAYOUT_NONE);
        pf_tensor hm = host(PF_DTYPE_F32, 1, &nb, PF_LAYOUT_NONE);
        pf_tensor got = host(PF_DTYPE_F32, 1, &n, PF_LAYOUT_NONE);
        pf_tensor ds = dev_like(&hs), dm = dev_like(&hm), dmv = {0};
        CHECK_OK(pf_tensor_slice(&dmv, &dm, 0, offset, n));
        char label[48];
        for (int f = 0; f < 4; f++) {
            mkc_fill(&hm, f == 2 ? MKC_SPECIAL : MKC_PROBS);
            CHECK_OK(pf_memcpy_async(g_cs, dm.data, hm.data, pf_tensor_nbytes(&hm)));
            pf_tensor mv = hm;
            mv.data = (float *)hm.data + offset;
            mv.shape[0] = n;
            mv.buf = NULL; /* plain host memory for the reference */
            float alpha = f == 3 ? 1.0f : (float)(0.05 + 0.9 * mkc_unit());
            bool reset = f == 0;
            CHECK_OK(pf_ops_mask_temporal(g_ref, &hs, &mv, alpha, reset));
            CHECK_OK(pf_ops_mask_temporal(g_cuda, &ds, &dmv, alpha, reset));
            download(&ds, &got);
            snprintf(label, sizeof label, "temporal case %d frame %d", it, f);
            CHECK_EQ_INT(mkc_cmp_f32(hs.data, got.data, (size_t)n, 1e-5, 0.0, label,
                                     &g_worst_temporal),
                         0);
            g_values += (long)n;
        }
        pf_tensor *all[] = {&hs, &hm, &got, &ds, &dm, &dmv};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) pf_tensor_unref(all[i]);
    }
}

/* Feather -------------------------------------------------------------------------------------- */

static void feather_case(int ndim, const int64_t *shape, float sigma, int kind, pf_allocator *src_mem,
                         const char *label)
{
    pf_tensor src = host(PF_DTYPE_F32, ndim, shape, PF_LAYOUT_NONE);
    pf_tensor ref = host(PF_DTYPE_F32, ndim, shape, PF_LAYOUT_NONE);
    pf_tensor got = host(PF_DTYPE_F32, ndim, shape, PF_LAYOUT_NONE);
    mkc_fill(&src, kind);
    CHECK_OK(pf_ops_mask_feather(g_ref, &src, &ref, sigma));
    pf_tensor ds = upload(&src, src_mem), dd = dev_like(&ref);
    CHECK_OK(pf_ops_mask_feather(g_cuda, &ds, &dd, sigma));
    download(&dd, &got);
    double abs = 1e-30;
    if (kind != MKC_PROBS) {
        double m = 0;
        for (int64_t i = 0; i < pf_tensor_numel(&src); i++) m = fmax(m, fabs(mkc_get(&src, i)));
        abs = 1e-5 * m;
    }
    size_t n = (size_t)pf_tensor_numel(&src);
    g_values += (long)n;
    CHECK_EQ_INT(mkc_cmp_f32(ref.data, got.data, n, 1e-5, abs, label, &g_worst_feather), 0);
    pf_tensor *all[] = {&src, &ref, &got, &ds, &dd};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) pf_tensor_unref(all[i]);
}

static void test_feather(void)
{
    /* Sizes on both sides of the tile edges (64 x 32 horizontal, 32 x 64
     * vertical), radii from 1 to 192 (larger than the image too). */
    static const int ws[] = {1, 2, 31, 32, 33, 63, 64, 65, 130};
    static const int hs[] = {1, 3, 31, 32, 33, 64, 65, 97};
    static const float sigmas[] = {1e-3f, 0.3f, 1.0f, 4.0f, 16.0f, 50.0f, 64.0f};
    int it = 0;
    for (size_t a = 0; a < sizeof ws / sizeof ws[0]; a++)
        for (size_t b = 0; b < sizeof hs / sizeof hs[0]; b++, it++) {
            int64_t shape[3] = {1 + it % 3, hs[b], ws[a]};
            float sigma = sigmas[it % 7];
            char label[80];
            snprintf(label, sizeof label, "feather %lldx%dx%d sigma %g", (long long)shape[0], hs[b],
                     ws[a], (double)sigma);
            feather_case(3, shape, sigma, it % 5 == 4 ? MKC_LOGITS : MKC_PROBS, g_dalloc, label);
        }
    for (int k = 0; k < 30; k++) {
        int64_t shape[4];
        int lead = (int)pf_test_rand_range(0, 2);
        for (int i = 0; i < lead; i++) shape[i] = pf_test_rand_range(1, 3);
        shape[lead] = pf_test_rand_range(1, 200);
        shape[lead + 1] = pf_test_rand_range(1, 200);
        float sigma = (float)(64.0 * mkc_unit()) + 1e-3f;
        feather_case(lead + 2, shape, sigma, MKC_PROBS, g_dalloc, "random feather");
    }
    /* More planes than grid.z takes (65535): the in-kernel plane loop. */
    int64_t many[3] = {70000, 1, 2};
    feather_case(3, many, 2.0f, MKC_PROBS, g_dalloc, "70000 planes");
    /* The benchmark's shapes. */
    int64_t hd[2] = {1080, 1920};
    feather_case(2, hd, 4.0f, MKC_PROBS, g_dalloc, "1080p sigma 4");
    feather_case(2, hd, 16.0f, MKC_PROBS, g_dalloc, "1080p sigma 16");
    /* A source in pinned host memory. */
    int64_t pin[3] = {2, 45, 77};
    feather_case(3, pin, 3.0f, MKC_PROBS, g_palloc, "pinned source");
}

/* Morphology ----------------------------------------------------------------------------------- */

static void morph_case(int ndim, const int64_t *shape, pf_morph_op op, int radius, pf_ops *oracle,
                       const char *label)
{
    pf_tensor src = host(PF_DTYPE_U8, ndim, shape, PF_LAYOUT_NONE);
    pf_tensor ref = host(PF_DTYPE_U8, ndim, shape, PF_LAYOUT_NONE);
    pf_tensor got = host(PF_DTYPE_U8, ndim, shape, PF_LAYOUT_NONE);
    const int H = (int)shape[ndim - 2], W = (int)shape[ndim - 1];
    const int64_t planes = pf_tensor_numel(&src) / ((int64_t)H * W);
    for (int64_t p = 0; p < planes; p++) mkc_fill_mask((uint8_t *)src.data + p * H * W, H, W);
    poison(&ref);
    CHECK_OK(pf_ops_mask_morph(oracle, &src, &ref, op, radius));
    pf_tensor ds = upload(&src, g_dalloc), dd = dev_like(&ref);
    CHECK_OK(pf_ops_mask_morph(g_cuda, &ds, &dd, op, radius));
    download(&dd, &got);
    size_t n = (size_t)pf_tensor_numel(&src);
    g_values += (long)n;
    CHECK_EQ_INT(mkc_cmp_bytes(ref.data, got.data, n, label), 0);
    pf_tensor *all[] = {&src, &ref, &got, &ds, &dd};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) pf_tensor_unref(all[i]);
}

static void test_morph(void)
{
    static const int ws[] = {1, 2, 31, 33, 63, 64, 65, 130};
    static const int hs[] = {1, 3, 32, 33, 64, 65, 97};
    static const int radii[] = {1, 2, 3, 7, 15, 40, 64};
    int it = 0;
    for (size_t a = 0; a < sizeof ws / sizeof ws[0]; a++)
        for (size_t b = 0; b < sizeof hs / sizeof hs[0]; b++, it++) {
            int64_t shape[3] = {1 + it % 2, hs[b], ws[a]};
            pf_morph_op op = (pf_morph_op)(it % 4);
            int r = radii[it % 7];
            char label[80];
            snprintf(label, sizeof label, "morph %dx%d op %d radius %d", hs[b], ws[a], op, r);
            morph_case(3, shape, op, r, g_ref, label);
        }
    for (int k = 0; k < 20; k++) {
        int64_t shape[2] = {pf_test_rand_range(1, 150), pf_test_rand_range(1, 150)};
        morph_case(2, shape, (pf_morph_op)(k % 4), (int)pf_test_rand_range(1, 20), g_ref,
                   "random morph");
    }
    int64_t many[3] = {70000, 2, 3};
    morph_case(3, many, PF_MORPH_CLOSE, 1, g_ref, "70000 planes");
    int64_t hd[2] = {1080, 1920};
    morph_case(2, hd, PF_MORPH_CLOSE, 3, g_cpu, "1080p close 3");
    morph_case(2, hd, PF_MORPH_CLOSE, 15, g_cpu, "1080p close 15");
    morph_case(2, hd, PF_MORPH_OPEN, 64, g_cpu, "1080p open 64");
}

/* Graph capture -------------------------------------------------------------------------------- */

typedef struct graph_work {
    pf_tensor *logits, *labels, *prob, *state, *soft, *mask, *morphed;
} graph_work;

/* The segmentation chain: argmax + softmax -> temporal -> feather, and
 * threshold -> close. */
static pf_status graph_fn(void *user, pf_stream *s)
{
    graph_work *w = user;
    (void)s;
    pf_status st = pf_ops_mask_argmax(g_cuda, w->logits, w->labels, w->prob, 1);
    if (st == PF_OK) st = pf_ops_mask_temporal(g_cuda, w->state, w->prob, 0.6f, false);
    if (st == PF_OK) st = pf_ops_mask_feather(g_cuda, w->state, w->soft, 2.5f);
    if (st == PF_OK) st = pf_ops_mask_threshold(g_cuda, w->soft, false, 0.5f, w->mask);
    if (st == PF_OK) st = pf_ops_mask_morph(g_cuda, w->mask, w->morphed, PF_MORPH_CLOSE, 2);
    return st;
}

static void test_graph_capture(void)
{
    pf_graph_cache *gc = NULL;
    CHECK_OK(pf_graph_cache_create(NULL, &gc));
    REQUIRE(gc);
    int64_t s4[4] = {1, 3, 50, 70}, s3[3] = {1, 50, 70};
    pf_tensor hl = host(PF_DTYPE_F16, 4, s4, PF_LAYOUT_NCHW);
    pf_tensor hst = host(PF_DTYPE_F32, 3, s3, PF_LAYOUT_NONE), hu8 = host(PF_DTYPE_U8, 3, s3,
                                                                          PF_LAYOUT_NONE);
    pf_tensor dl = upload(&hl, g_dalloc), dlab = dev_like(&hu8), dprob = dev_like(&hst),
              dstate = dev_like(&hst), dsoft = dev_like(&hst), dmask = dev_like(&hu8),
              dmor = dev_like(&hu8);
    /* The reference chain on the host. */
    pf_tensor rlab = host(PF_DTYPE_U8, 3, s3, PF_LAYOUT_NONE), rprob = host(PF_DTYPE_F32, 3, s3,
                                                                            PF_LAYOUT_NONE),
              rstate = host(PF_DTYPE_F32, 3, s3, PF_LAYOUT_NONE),
              rsoft = host(PF_DTYPE_F32, 3, s3, PF_LAYOUT_NONE),
              rmask = host(PF_DTYPE_U8, 3, s3, PF_LAYOUT_NONE),
              rmor = host(PF_DTYPE_U8, 3, s3, PF_LAYOUT_NONE);
    pf_tensor got8 = host(PF_DTYPE_U8, 3, s3, PF_LAYOUT_NONE), gotf = host(PF_DTYPE_F32, 3, s3,
                                                                           PF_LAYOUT_NONE);
    /* state starts at 0.5 on both sides; a first direct run grows the
     * context's scratch, so the capture never has to. */
    for (int i = 0; i < 50 * 70; i++) ((float *)rstate.data)[i] = 0.5f;
    CHECK_OK(pf_memcpy_async(g_cs, dstate.data, rstate.data, 50 * 70 * sizeof(float)));
    graph_work w = {&dl, &dlab, &dprob, &dstate, &dsoft, &dmask, &dmor};
    pf_tensor scratch_state = dev_like(&hst);
    graph_work warm = w;
    warm.state = &scratch_state;
    CHECK_OK(graph_fn(&warm, g_cs));
    const char key[] = "mask-chain";
    for (int round = 0; round < 3; round++) {
        mkc_fill(&hl, MKC_LOGITS);
        CHECK_OK(pf_memcpy_async(g_cs, dl.data, hl.data, pf_tensor_nbytes(&hl)));
        CHECK_OK(pf_graph_cache_run(gc, g_cs, key, sizeof key, graph_fn, &w));
        CHECK_OK(pf_ops_mask_argmax(g_ref, &hl, &rlab, &rprob, 1));
        CHECK_OK(pf_ops_mask_temporal(g_ref, &rstate, &rprob, 0.6f, false));
        CHECK_OK(pf_ops_mask_feather(g_ref, &rstate, &rsoft, 2.5f));
        /* Threshold and close from the reference's soft mask would diverge
         * at values within rounding of 0.5; chain them on the GPU's soft
         * mask instead so the comparison stays exact. */
        download(&dsoft, &gotf);
        CHECK_EQ_INT(mkc_cmp_f32(rsoft.data, gotf.data, 3500, 1e-5, 1e-30, "graph soft",
                                 &g_worst_feather),
                     0);
        CHECK_OK(pf_ops_mask_threshold(g_ref, &gotf, false, 0.5f, &rmask));
        CHECK_OK(pf_ops_mask_morph(g_ref, &rmask, &rmor, PF_MORPH_CLOSE, 2));
        download(&dlab, &got8);
        CHECK_EQ_INT(mkc_cmp_bytes(rlab.data, got8.data, 3500, "graph labels"), 0);
        download(&dmor, &got8);
        CHECK_EQ_INT(mkc_cmp_bytes(rmor.data, got8.data, 3500, "graph close"), 0);
        /* Keep the chains in step: the next frame starts from the GPU state. */
        download(&dstate, &rstate);
    }
    pf_graph_cache_stats gs = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(gs.captures, 1);
    CHECK_EQ_INT(gs.replays, 2);
    CHECK_EQ_INT(gs.capture_failures, 0);
    pf_tensor *all[] = {&hl, &hst, &hu8, &dl, &dlab, &dprob, &dstate, &dsoft, &dmask, &dmor,
                        &rlab, &rprob, &rstate, &rsoft, &rmask, &rmor, &got8, &gotf,
                        &scratch_state};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) pf_tensor_unref(all[i]);
    pf_graph_cache_destroy(&gc);
}

/* Unreachable memory --------------------------------------------------------------------------- */

static void test_unreachable(void)
{
    int64_t s2[2] = {8, 8};
    pf_tensor hf = host(PF_DTYPE_F32, 2, s2, PF_LAYOUT_NONE), hu = host(PF_DTYPE_U8, 2, s2,
                                                                        PF_LAYOUT_NONE);
    mkc_fill(&hf, MKC_PROBS);
    pf_tensor df = upload(&hf, g_dalloc), df2 = dev_like(&hf), du = dev_like(&hu),
              du2 = dev_like(&hu);
    pf_status st = pf_ops_mask_threshold(g_cuda, &hf, false, 0.5f, &du);
    CHECK_EQ_INT(st, PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "src is host memory") != NULL);
    st = pf_ops_mask_feather(g_cuda, &df, &hf, 1.0f);
    CHECK_EQ_INT(st, PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "dst is host memory") != NULL);
    st = pf_ops_mask_morph(g_cuda, &hu, &du, PF_MORPH_ERODE, 1);
    CHECK_EQ_INT(st, PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "not reachable from the") != NULL);
    st = pf_ops_mask_temporal(g_cuda, &df2, &hf, 0.5f, false);
    CHECK_EQ_INT(st, PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "mask is host memory") != NULL);
    /* And device memory is not readable by a CPU context. */
    st = pf_ops_mask_feather(g_cpu, &df, &df2, 1.0f);
    CHECK_EQ_INT(st, PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "src is device memory of") != NULL);
    CHECK_OK(pf_ops_mask_morph(g_cuda, &du, &du2, PF_MORPH_ERODE, 1));
    CHECK_OK(pf_stream_synchronize(g_cs));
    pf_tensor *all[] = {&hf, &hu, &df, &df2, &du, &du2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) pf_tensor_unref(all[i]);
}

int main(void)
{
    if (otu_cuda_setup(20261123, "mask", &g_dev, &g_cs, &g_hs, &g_dalloc, &g_palloc) != 0) return 1;
    g_ref = otu_make_ops(g_hs, 1, NULL);
    g_cpu = otu_make_ops(g_hs, 0, NULL);
    g_cuda = otu_make_ops(g_cs, 0, NULL);
    if (!g_ref || !g_cpu || !g_cuda) return pf_test_finish();
    PF_RUN(test_threshold);
    PF_RUN(test_argmax);
    PF_RUN(test_temporal);
    PF_RUN(test_feather);
    PF_RUN(test_morph);
    PF_RUN(test_graph_capture);
    PF_RUN(test_unreachable);
    printf("CUDA vs reference: %ld values; threshold boundary differences %ld; worst |diff| / "
           "bound: prob %.3f, temporal %.3f, feather %.3f\n",
           g_values, g_boundary, g_worst_prob, g_worst_temporal, g_worst_feather);
    pf_stream_synchronize(g_cs);
    pf_ops_destroy(&g_ref);
    pf_ops_destroy(&g_cpu);
    pf_ops_destroy(&g_cuda);
    otu_cuda_teardown(&g_cs, &g_hs, &g_dalloc, &g_palloc);
    return pf_test_finish();
}
