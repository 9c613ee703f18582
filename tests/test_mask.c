/* Mask post-processing and refinement on the CPU: pf_ops_mask_threshold,
 * _argmax, _temporal, _feather and _morph.
 *
 * - The multi-threaded CPU path against the C reference on random inputs:
 *   random shapes (scalars, 1x1, odd sizes, batches and extra leading
 *   dimensions), f16 and f32, NCHW and NHWC, C from 1 to 255 (21 included),
 *   logits, probabilities, exact ties and special values (+-0, +-inf,
 *   subnormals, huge), every morphology op and radii up to 64, sigmas up to
 *   64, thread pools of 1 and 3 and the context's own. Both evaluate the
 *   same float expressions in the same order (src/ops/mask.h), so every
 *   output, float or u8, must be bit-identical (memcmp).
 * - Plane groups: many large planes (more than one group of intermediates)
 *   against the same op applied one plane at a time.
 * - Known values worked out by hand, on both the reference and the CPU path.
 * - Bad input, with the messages checked. */
#include "mask_check.h"
#include "ops_test_util.h"

#include "device/backend.h"
#include "ops/mask.h"

#include "core/cpu_features.h"

static pf_stream *g_stream;
static pf_threadpool *g_pool1, *g_pool3;

/* The reference context and three CPU-path contexts (own pool, 1, 3 threads). */
static pf_ops *g_ref, *g_cpu[3];

static pf_ops *some_cpu(int it) { return g_cpu[it % 3]; }

static pf_tensor host(pf_dtype dt, int ndim, const int64_t *shape, pf_layout layout)
{
    return mkc_new(dt, ndim, shape, layout, NULL, NULL);
}

/* Poisons a tensor so values an implementation forgets to write cannot pass. */
static void poison(pf_tensor *t) { memset(t->data, 0x7F, pf_tensor_nbytes(t)); }

static long same_bytes(const pf_tensor *a, const pf_tensor *b, const char *label)
{
    return mkc_cmp_bytes(a->data, b->data, pf_tensor_nbytes(a), label);
}

/* f16 ------------------------------------------------------------------------------------ */

static void test_f16_conversion(void)
{
    /* The CPU path's scalar and block conversions against the public one,
     * for every half (NaN: any NaN of the same sign). */
    static uint16_t all[65536];
    static float blk[65536];
    for (uint32_t h = 0; h < 65536; h++) all[h] = (uint16_t)h;
    for (uint32_t h = 0; h < 65536; h += PF_MK_VB) pf_mk_f16_block(all + h, blk + h);
    long bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float a = pf_mk_f16_to_f32((uint16_t)h), b = pf_f16_to_f32((uint16_t)h), c = blk[h];
        int ok = isnan(b) ? isnan(a) && signbit(a) == signbit(b) && isnan(c) &&
                                signbit(c) == signbit(b)
                          : memcmp(&a, &b, 4) == 0 && memcmp(&c, &b, 4) == 0;
        if (!ok && bad++ < 3) fprintf(stderr, "  half 0x%04x: %g, %g vs %g\n", h, a, c, b);
    }
    CHECK_EQ_INT(bad, 0);
}

/* Random shapes ------------------------------------------------------------------------------ */

/* ndim 0..4 with dims 1..7, or one large 1-D run. */
static int random_shape(int64_t *shape, int it)
{
    if (it % 25 == 0) {
        shape[0] = pf_test_rand_range(50000, 200000);
        return 1;
    }
    int ndim = (int)pf_test_rand_range(0, 4);
    for (int i = 0; i < ndim; i++) shape[i] = pf_test_rand_range(1, 7);
    return ndim;
}

static void test_threshold_random(void)
{
    int kinds[MKC_KINDS] = {0}, logit_cases = 0, f16_cases = 0;
    for (int it = 0; it < 250; it++) {
        int64_t shape[4];
        int ndim = random_shape(shape, it);
        pf_dtype dt = pf_test_rand() & 1 ? PF_DTYPE_F16 : PF_DTYPE_F32;
        int kind = (int)(pf_test_rand() % MKC_KINDS);
        bool logits = pf_test_rand() & 1;
        pf_tensor src = host(dt, ndim, shape, PF_LAYOUT_NONE);
        pf_tensor a = host(PF_DTYPE_U8, ndim, shape, PF_LAYOUT_NONE);
        pf_tensor b = host(PF_DTYPE_U8, ndim, shape, PF_LAYOUT_NONE);
        mkc_fill(&src, kind);
        /* Thresholds: random, the usual 0.5, 0 and 1, or a value of the
         * input itself (probabilities: equality must give 255). */
        float t;
        switch (pf_test_rand() % 4) {
        case 0: t = 0.5f; break;
        case 1: t = pf_test_rand() & 1 ? 0.0f : 1.0f; break;
        case 2: t = mkc_get(&src, (int64_t)(pf_test_rand() % (uint64_t)pf_tensor_numel(&src))); break;
        default: t = (float)mkc_unit(); break;
        }
        if (!isfinite(t)) t = 0.25f;
        poison(&a);
        poison(&b);
        CHECK_OK(pf_ops_mask_threshold(g_ref, &src, logits, t, &a));
        CHECK_OK(pf_ops_mask_threshold(some_cpu(it), &src, logits, t, &b));
        char label[64];
        snprintf(label, sizeof label, "threshold case %d (%s, %s)", it, pf_dtype_name(dt),
                 logits ? "logits" : "probabilities");
        CHECK_EQ_INT(same_bytes(&a, &b, label), 0);
        long odd = 0;
        for (int64_t i = 0; i < pf_tensor_numel(&a); i++) {
            uint8_t v = ((uint8_t *)a.data)[i];
            odd += v != 0 && v != 255;
        }
        CHECK_EQ_INT(odd, 0);
        kinds[kind]++;
        logit_cases += logits;
        f16_cases += dt == PF_DTYPE_F16;
        pf_tensor_unref(&src);
        pf_tensor_unref(&a);
        pf_tensor_unref(&b);
    }
    for (int k = 0; k < MKC_KINDS; k++) CHECK(kinds[k] > 0);
    CHECK(logit_cases > 0 && logit_cases < 250);
    CHECK(f16_cases > 0 && f16_cases < 250);
}

static void test_argmax_random(void)
{
    static const int cs[] = {1, 2, 3, 21, 0 /* random */, 255};
    int layouts[2] = {0}, outs[3] = {0}, c21 = 0, c1 = 0;
    for (int it = 0; it < 200; it++) {
        int C = cs[pf_test_rand() % 6];
        if (C == 0) C = (int)pf_test_rand_range(4, 40);
        int64_t N = pf_test_rand_range(1, 3), H = pf_test_rand_range(1, 13),
                W = pf_test_rand_range(1, 19);
        if (it % 10 == 0) H = W = 1;
        if (it % 37 == 0) { /* one big enough to split over threads in chunks */
            N = 2;
            H = 48;
            W = 97;
            C = 21;
        }
        int nhwc = pf_test_rand() & 1;
        pf_dtype dt = pf_test_rand() & 1 ? PF_DTYPE_F16 : PF_DTYPE_F32;
        int kind = (int)(pf_test_rand() % MKC_KINDS);
        if (kind == MKC_PROBS) kind = MKC_LOGITS;
        int mode = (int)(pf_test_rand() % 3); /* labels, prob, both */
        int cls = (int)pf_test_rand_range(0, C - 1);
        int64_t s4[4] = {N, nhwc ? H : C, nhwc ? W : H, nhwc ? C : W}, s3[3] = {N, H, W};
        pf_tensor src = host(dt, 4, s4, nhwc ? PF_LAYOUT_NHWC : PF_LAYOUT_NCHW);
        mkc_fill(&src, kind);
        pf_tensor la = host(PF_DTYPE_U8, 3, s3, PF_LAYOUT_NONE),
                  lb = host(PF_DTYPE_U8, 3, s3, PF_LAYOUT_NONE),
                  pa = host(PF_DTYPE_F32, 3, s3, PF_LAYOUT_NONE),
                  pb = host(PF_DTYPE_F32, 3, s3, PF_LAYOUT_NONE);
        poison(&la);
        poison(&lb);
        poison(&pa);
        poison(&pb);
        const int want_l = mode != 1, want_p = mode != 0;
        CHECK_OK(pf_ops_mask_argmax(g_ref, &src, want_l ? &la : NULL, want_p ? &pa : NULL, cls));
        CHECK_OK(pf_ops_mask_argmax(some_cpu(it), &src, want_l ? &lb : NULL, want_p ? &pb : NULL,
                                    cls));
        char label[96];
        snprintf(label, sizeof label, "argmax case %d ([%lld,%d,%lld,%lld] %s %s)", it,
                 (long long)N, C, (long long)H, (long long)W, nhwc ? "nhwc" : "nchw",
                 pf_dtype_name(dt));
        if (want_l) {
            CHECK_EQ_INT(same_bytes(&la, &lb, label), 0);
            long out_of_range = 0;
            for (int64_t i = 0; i < N * H * W; i++) out_of_range += ((uint8_t *)la.data)[i] >= C;
            CHECK_EQ_INT(out_of_range, 0);
        }
        if (want_p) {
            CHECK_EQ_INT(same_bytes(&pa, &pb, label), 0);
            if (kind != MKC_SPECIAL) {
                long bad = 0;
                for (int64_t i = 0; i < N * H * W; i++) {
                    float p = ((float *)pa.data)[i];
                    bad += !(p >= 0.0f && p <= 1.0f);
                }
                CHECK_EQ_INT(bad, 0);
            }
        }
        layouts[nhwc]++;
        outs[mode]++;
        c21 += C == 21;
        c1 += C == 1;
        pf_tensor_unref(&src);
        pf_tensor_unref(&la);
        pf_tensor_unref(&lb);
        pf_tensor_unref(&pa);
        pf_tensor_unref(&pb);
    }
    CHECK(layouts[0] > 0 && layouts[1] > 0);
    CHECK(outs[0] > 0 && outs[1] > 0 && outs[2] > 0);
    CHECK(c21 > 0 && c1 > 0);

    /* prob alone with more classes than the CPU path caches per chunk
     * (1024): the softmax pass re-reads the class planes. */
    for (int k = 0; k < 4; k++) {
        int64_t C = 1500, s4[4] = {2, k & 2 ? 3 : C, k & 2 ? 70 : 3, k & 2 ? C : 70},
                s3[3] = {2, 3, 70};
        pf_tensor src = host(k & 1 ? PF_DTYPE_F16 : PF_DTYPE_F32, 4, s4,
                             k & 2 ? PF_LAYOUT_NHWC : PF_LAYOUT_NCHW);
        mkc_fill(&src, MKC_LOGITS);
        pf_tensor pa = host(PF_DTYPE_F32, 3, s3, PF_LAYOUT_NONE),
                  pb = host(PF_DTYPE_F32, 3, s3, PF_LAYOUT_NONE);
        CHECK_OK(pf_ops_mask_argmax(g_ref, &src, NULL, &pa, 1234));
        CHECK_OK(pf_ops_mask_argmax(g_cpu[k % 3], &src, NULL, &pb, 1234));
        CHECK_EQ_INT(same_bytes(&pa, &pb, "1500 classes"), 0);
        pf_tensor_unref(&src);
        pf_tensor_unref(&pa);
        pf_tensor_unref(&pb);
    }
}

static void test_temporal_random(void)
{
    for (int it = 0; it < 60; it++) {
        int64_t shape[4];
        int ndim = random_shape(shape, it);
        pf_tensor sa = host(PF_DTYPE_F32, ndim, shape, PF_LAYOUT_NONE);
        pf_tensor sb = host(PF_DTYPE_F32, ndim, shape, PF_LAYOUT_NONE);
        pf_tensor m = host(PF_DTYPE_F32, ndim, shape, PF_LAYOUT_NONE);
        poison(&sa);
        poison(&sb);
        char label[48];
        for (int f = 0; f < 5; f++) {
            mkc_fill(&m, f == 3 ? MKC_SPECIAL : MKC_PROBS);
            float alpha = f == 4 ? 1.0f : (float)(0.01 + 0.99 * mkc_unit());
            bool reset = f == 0 || pf_test_rand() % 8 == 0;
            CHECK_OK(pf_ops_mask_temporal(g_ref, &sa, &m, alpha, reset));
            CHECK_OK(pf_ops_mask_temporal(some_cpu(it + f), &sb, &m, alpha, reset));
            snprintf(label, sizeof label, "temporal case %d frame %d", it, f);
            CHECK_EQ_INT(same_bytes(&sa, &sb, label), 0);
        }
        pf_tensor_unref(&sa);
        pf_tensor_unref(&sb);
        pf_tensor_unref(&m);
    }
}

/* [..., H, W] with 0..2 leading dims. */
static int random_planes_shape(int64_t *shape, int maxhw)
{
    int lead = (int)pf_test_rand_range(0, 2);
    for (int i = 0; i < lead; i++) shape[i] = pf_test_rand_range(1, 3);
    shape[lead] = pf_test_rand_range(1, maxhw);
    shape[lead + 1] = pf_test_rand_range(1, maxhw);
    return lead + 2;
}

static void test_feather_random(void)
{
    for (int it = 0; it < 120; it++) {
        int64_t shape[4];
        int ndim = random_planes_shape(shape, it % 4 ? 24 : 45);
        float sigma;
        switch (it % 6) {
        case 0: sigma = 64.0f; break;
        case 1: sigma = (float)(1e-3 + mkc_unit()); break;
        case 2: sigma = (float)(2.0 + 14.0 * mkc_unit()); break;
        case 3: sigma = 1e-6f; break;
        case 4: sigma = 16.0f; break;
        default: sigma = (float)(64.0 * mkc_unit()) + 1e-3f; break;
        }
        pf_tensor src = host(PF_DTYPE_F32, ndim, shape, PF_LAYOUT_NONE);
        pf_tensor a = host(PF_DTYPE_F32, ndim, shape, PF_LAYOUT_NONE);
        pf_tensor b = host(PF_DTYPE_F32, ndim, shape, PF_LAYOUT_NONE);
        mkc_fill(&src, it % 5 == 0 ? MKC_LOGITS : MKC_PROBS);
        poison(&a);
        poison(&b);
        CHECK_OK(pf_ops_mask_feather(g_ref, &src, &a, sigma));
        CHECK_OK(pf_ops_mask_feather(some_cpu(it), &src, &b, sigma));
        char label[80];
        snprintf(label, sizeof label, "feather case %d (%lldx%lld, sigma %g)", it,
                 (long long)shape[ndim - 2], (long long)shape[ndim - 1], (double)sigma);
        CHECK_EQ_INT(same_bytes(&a, &b, label), 0);
        pf_tensor_unref(&src);
        pf_tensor_unref(&a);
        pf_tensor_unref(&b);
    }
}

static void test_morph_random(void)
{
    int per_op[4] = {0};
    for (int it = 0; it < 160; it++) {
        int64_t shape[4];
        int ndim = random_planes_shape(shape, it % 4 ? 24 : 45);
        int radius = it % 10 == 0 ? 64 : (it % 3 ? (int)pf_test_rand_range(1, 3)
                                                 : (int)pf_test_rand_range(1, 12));
        pf_morph_op op = (pf_morph_op)(it % 4);
        pf_tensor src = host(PF_DTYPE_U8, ndim, shape, PF_LAYOUT_NONE);
        pf_tensor a = host(PF_DTYPE_U8, ndim, shape, PF_LAYOUT_NONE);
        pf_tensor b = host(PF_DTYPE_U8, ndim, shape, PF_LAYOUT_NONE);
        const int H = (int)shape[ndim - 2], W = (int)shape[ndim - 1];
        for (int64_t p = 0; p < pf_tensor_numel(&src) / ((int64_t)H * W); p++)
            mkc_fill_mask((uint8_t *)src.data + (size_t)p * H * W, H, W);
        poison(&a);
        poison(&b);
        CHECK_OK(pf_ops_mask_morph(g_ref, &src, &a, op, radius));
        CHECK_OK(pf_ops_mask_morph(some_cpu(it), &src, &b, op, radius));
        char label[80];
        snprintf(label, sizeof label, "morph case %d (%dx%d, op %d, radius %d)", it, H, W, op,
                 radius);
        CHECK_EQ_INT(same_bytes(&a, &b, label), 0);
        per_op[op]++;
        pf_tensor_unref(&src);
        pf_tensor_unref(&a);
        pf_tensor_unref(&b);
    }
    for (int k = 0; k < 4; k++) CHECK(per_op[k] > 0);
}

/* The SIMD kernels of the separable filters (src/cpu/simd_mask.c: 16 to 64
 * values a step) and the streaming morphology (src/cpu/morph_stream.c,
 * used with SIMD) at every level this CPU has, the scalar path included,
 * against the reference: widths around the vector widths, 1-pixel and
 * 1-row planes, several planes, radii up to 64 (rings of 129 rows), pools
 * of 1, 3 and the default. Tolerance: none (memcmp, as above). */
static void test_simd_levels(void)
{
    static const int widths[] = {1, 15, 16, 17, 31, 33, 63, 64, 65, 130, 200};
    static const int heights[] = {1, 2, 9, 70};
    const int top = pf_cpu_simd_detected();
    int cases = 0;
    for (int level = PF_SIMD_NONE; level <= top; level++) {
        pf_cpu_simd_cap(level);
        for (int wi = 0; wi < (int)(sizeof widths / sizeof widths[0]); wi++)
            for (int hi = 0; hi < (int)(sizeof heights / sizeof heights[0]); hi++) {
                const int it = wi * 4 + hi;
                int64_t shape[3] = {1 + it % 2, heights[hi], widths[wi]};
                const int H = heights[hi], W = widths[wi];
                pf_tensor src = host(PF_DTYPE_F32, 3, shape, PF_LAYOUT_NONE);
                pf_tensor a = host(PF_DTYPE_F32, 3, shape, PF_LAYOUT_NONE);
                pf_tensor b = host(PF_DTYPE_F32, 3, shape, PF_LAYOUT_NONE);
                mkc_fill(&src, it % 3 ? MKC_PROBS : MKC_LOGITS);
                const float sigma = it % 5 == 0 ? 12.0f : (it % 2 ? 4.0f : 1.0f);
                poison(&a);
                poison(&b);
                CHECK_OK(pf_ops_mask_feather(g_ref, &src, &a, sigma));
                CHECK_OK(pf_ops_mask_feather(some_cpu(it), &src, &b, sigma));
                char label[96];
                snprintf(label, sizeof label, "simd %s feather %dx%d sigma %g",
                         pf_cpu_simd_name(level), H, W, (double)sigma);
                CHECK_EQ_INT(same_bytes(&a, &b, label), 0);
                pf_tensor_unref(&src);
                pf_tensor_unref(&a);
                pf_tensor_unref(&b);

                pf_tensor ms = host(PF_DTYPE_U8, 3, shape, PF_LAYOUT_NONE);
                pf_tensor ma = host(PF_DTYPE_U8, 3, shape, PF_LAYOUT_NONE);
                pf_tensor mb = host(PF_DTYPE_U8, 3, shape, PF_LAYOUT_NONE);
                for (int64_t p = 0; p < shape[0]; p++)
                    mkc_fill_mask((uint8_t *)ms.data + (size_t)p * H * W, H, W);
                for (int op = 0; op < 4; op++) {
                    const int radius = it % 7 == 0 ? 64 : 1 + (it + op) % 7;
                    poison(&ma);
                    poison(&mb);
                    CHECK_OK(pf_ops_mask_morph(g_ref, &ms, &ma, (pf_morph_op)op, radius));
                    CHECK_OK(pf_ops_mask_morph(some_cpu(it + op), &ms, &mb, (pf_morph_op)op,
                                               radius));
                    snprintf(label, sizeof label, "simd %s morph %dx%d op %d radius %d",
                             pf_cpu_simd_name(level), H, W, op, radius);
                    CHECK_EQ_INT(same_bytes(&ma, &mb, label), 0);
                    cases++;
                }
                pf_tensor_unref(&ms);
                pf_tensor_unref(&ma);
                pf_tensor_unref(&mb);
            }
    }
    pf_cpu_simd_cap(-1);
    CHECK(cases > 0);
    printf("  simd levels checked: none .. %s\n", pf_cpu_simd_name(top));
}

/* More planes than one group of intermediates (32 MiB) holds: the batched
 * call must equal the op applied to each plane alone (which the random
 * tests check against the reference). */
static void test_plane_groups(void)
{
    pf_ops *cpu = g_cpu[2];
    /* f32 planes of 4.5 MB: groups of 7, so 9 planes take two groups. */
    const int64_t H = 1024, W = 1100;
    int64_t shape[3] = {9, H, W}, one[2] = {H, W};
    pf_tensor src = host(PF_DTYPE_F32, 3, shape, PF_LAYOUT_NONE);
    pf_tensor dst = host(PF_DTYPE_F32, 3, shape, PF_LAYOUT_NONE);
    pf_tensor s1 = host(PF_DTYPE_F32, 2, one, PF_LAYOUT_NONE);
    pf_tensor d1 = host(PF_DTYPE_F32, 2, one, PF_LAYOUT_NONE);
    mkc_fill(&src, MKC_PROBS);
    poison(&dst);
    CHECK_OK(pf_ops_mask_feather(cpu, &src, &dst, 1.5f));
    long bad = 0;
    const size_t plane = (size_t)(H * W);
    for (int p = 0; p < 9; p++) {
        memcpy(s1.data, (float *)src.data + p * plane, plane * sizeof(float));
        CHECK_OK(pf_ops_mask_feather(cpu, &s1, &d1, 1.5f));
        bad += memcmp(d1.data, (float *)dst.data + p * plane, plane * sizeof(float)) != 0;
    }
    CHECK_EQ_INT(bad, 0);
    pf_tensor_unref(&src);
    pf_tensor_unref(&dst);
    pf_tensor_unref(&s1);
    pf_tensor_unref(&d1);

    /* u8, two intermediates per plane for close (groups of 14) and one for
     * erode (groups of 29): 17 planes take two groups for close. */
    int64_t ushape[3] = {17, H, W};
    src = host(PF_DTYPE_U8, 3, ushape, PF_LAYOUT_NONE);
    dst = host(PF_DTYPE_U8, 3, ushape, PF_LAYOUT_NONE);
    s1 = host(PF_DTYPE_U8, 2, one, PF_LAYOUT_NONE);
    d1 = host(PF_DTYPE_U8, 2, one, PF_LAYOUT_NONE);
    for (int p = 0; p < 17; p++) mkc_fill_mask((uint8_t *)src.data + p * plane, (int)H, (int)W);
    for (int op = PF_MORPH_ERODE; op <= PF_MORPH_CLOSE; op += 3) {
        poison(&dst);
        CHECK_OK(pf_ops_mask_morph(cpu, &src, &dst, (pf_morph_op)op, 2));
        bad = 0;
        for (int p = 0; p < 17; p++) {
            memcpy(s1.data, (uint8_t *)src.data + p * plane, plane);
            CHECK_OK(pf_ops_mask_morph(cpu, &s1, &d1, (pf_morph_op)op, 2));
            bad += memcmp(d1.data, (uint8_t *)dst.data + p * plane, plane) != 0;
        }
        CHECK_EQ_INT(bad, 0);
    }
    pf_tensor_unref(&src);
    pf_tensor_unref(&dst);
    pf_tensor_unref(&s1);
    pf_tensor_unref(&d1);
}

/* Known values --------------------------------------------------------------------------------- */

/* Runs every known-value case on the reference and on the CPU path. */
#define BOTH(ops) for (pf_ops *ops, **it_ = (pf_ops *[]){g_ref, g_cpu[1], NULL}; (ops = *it_); it_++)

static void test_threshold_known(void)
{
    BOTH(ops)
    {
        /* A ramp 0, 0.01, ..., 1 against 0.5: 255 from index 50 on (0.5 is
         * exactly representable, and equality counts). */
        int64_t n = 101;
        pf_tensor src = host(PF_DTYPE_F32, 1, &n, PF_LAYOUT_NONE);
        pf_tensor h = host(PF_DTYPE_F16, 1, &n, PF_LAYOUT_NONE);
        pf_tensor dst = host(PF_DTYPE_U8, 1, &n, PF_LAYOUT_NONE);
        for (int i = 0; i < n; i++) ((float *)src.data)[i] = (float)i / 100.0f;
        ((float *)src.data)[50] = 0.5f;
        CHECK_OK(pf_ops_mask_threshold(ops, &src, false, 0.5f, &dst));
        long bad = 0;
        for (int i = 0; i < n; i++) bad += ((uint8_t *)dst.data)[i] != (i >= 50 ? 255 : 0);
        CHECK_EQ_INT(bad, 0);
        /* Logits -5 .. 5 in steps of 0.1 (f16 and f32) against 0.5:
         * sigmoid(0) is exactly 0.5, and -1e-6 stays below (1 / (1 +
         * expf(1e-6)) is 0.49999976 in float; -1e-7 would round to 0.5). */
        for (int i = 0; i < n; i++) {
            float x = (float)(i - 50) / 10.0f;
            ((float *)src.data)[i] = x;
            ((uint16_t *)h.data)[i] = pf_f32_to_f16(x);
        }
        ((float *)src.data)[49] = -1e-6f;
        ((uint16_t *)h.data)[49] = pf_f32_to_f16(-1e-3f);
        for (int k = 0; k < 2; k++) {
            CHECK_OK(pf_ops_mask_threshold(ops, k ? &h : &src, true, 0.5f, &dst));
            bad = 0;
            for (int i = 0; i < n; i++) bad += ((uint8_t *)dst.data)[i] != (i >= 50 ? 255 : 0);
            CHECK_EQ_INT(bad, 0);
        }
        /* Threshold 0.9: sigmoid(x) >= 0.9 from x = ln 9 = 2.197 on, so
         * 2.2 (index 72) is the first at 255. */
        CHECK_OK(pf_ops_mask_threshold(ops, &src, true, 0.9f, &dst));
        bad = 0;
        for (int i = 0; i < n; i++) bad += ((uint8_t *)dst.data)[i] != (i >= 72 ? 255 : 0);
        CHECK_EQ_INT(bad, 0);
        /* NaN is never above a threshold; +-inf are 1 and 0. */
        float sp[3] = {NAN, INFINITY, -INFINITY};
        int64_t three = 3;
        pf_tensor s3 = host(PF_DTYPE_F32, 1, &three, PF_LAYOUT_NONE);
        pf_tensor d3 = host(PF_DTYPE_U8, 1, &three, PF_LAYOUT_NONE);
        memcpy(s3.data, sp, sizeof sp);
        CHECK_OK(pf_ops_mask_threshold(ops, &s3, true, 0.5f, &d3));
        CHECK(((uint8_t *)d3.data)[0] == 0 && ((uint8_t *)d3.data)[1] == 255 &&
              ((uint8_t *)d3.data)[2] == 0);
        /* Scalars (ndim 0) are one element. */
        pf_tensor sc = host(PF_DTYPE_F32, 0, NULL, PF_LAYOUT_NONE);
        pf_tensor dc = host(PF_DTYPE_U8, 0, NULL, PF_LAYOUT_NONE);
        *(float *)sc.data = 0.7f;
        CHECK_OK(pf_ops_mask_threshold(ops, &sc, false, 0.7f, &dc));
        CHECK_EQ_INT(*(uint8_t *)dc.data, 255);
        pf_tensor_unref(&sc);
        pf_tensor_unref(&dc);
        pf_tensor_unref(&s3);
        pf_tensor_unref(&d3);
        pf_tensor_unref(&src);
        pf_tensor_unref(&h);
        pf_tensor_unref(&dst);
    }
}

static void test_argmax_known(void)
{
    BOTH(ops)
    {
        for (int nhwc = 0; nhwc < 2; nhwc++) {
            /* 4 pixels, 6 classes: all equal -> 0; a tie of classes 2 and 5 at
             * the maximum -> 2; a single maximum at 5; a one-hot (x_4 = 3,
             * the rest 0). */
            const int C = 6, P = 4;
            const float v[4][6] = {{1, 1, 1, 1, 1, 1},
                                   {0, -1, 7, 3, 6, 7},
                                   {-9, -8, -7, -6, -5, -4},
                                   {0, 0, 0, 0, 3, 0}};
            const int want[4] = {0, 2, 5, 4};
            int64_t s4[4] = {1, nhwc ? 1 : C, nhwc ? P : 1, nhwc ? C : P}, s3[3] = {1, 1, P};
            pf_tensor src = host(PF_DTYPE_F32, 4, s4, nhwc ? PF_LAYOUT_NHWC : PF_LAYOUT_NCHW);
            for (int p = 0; p < P; p++)
                for (int c = 0; c < C; c++)
                    ((float *)src.data)[nhwc ? p * C + c : c * P + p] = v[p][c];
            pf_tensor lab = host(PF_DTYPE_U8, 3, s3, PF_LAYOUT_NONE);
            pf_tensor prob = host(PF_DTYPE_F32, 3, s3, PF_LAYOUT_NONE);
            CHECK_OK(pf_ops_mask_argmax(ops, &src, &lab, &prob, 4));
            for (int p = 0; p < P; p++) CHECK_EQ_INT(((uint8_t *)lab.data)[p], want[p]);
            const float *pr = prob.data;
            CHECK(fabs(pr[0] - 1.0 / 6.0) < 1e-7);
            double e3 = exp(3.0);
            CHECK(fabs(pr[3] - e3 / (e3 + 5.0)) < 1e-6 * (e3 / (e3 + 5.0)));
            double s2 = 0;
            for (int c = 0; c < C; c++) s2 += exp(v[2][c] + 4.0);
            CHECK(fabs(pr[2] - exp(-1.0) / s2) < 1e-6 * (exp(-1.0) / s2));
            /* The same one-hot pixel, class 0: 1 / (e^3 + 5). */
            CHECK_OK(pf_ops_mask_argmax(ops, &src, NULL, &prob, 0));
            CHECK(fabs(pr[3] - 1.0 / (e3 + 5.0)) < 1e-6 / (e3 + 5.0));
            /* Softmax of a one-hot over 21 classes sums to 1 across classes. */
            pf_tensor_unref(&src);
            pf_tensor_unref(&lab);
            pf_tensor_unref(&prob);
        }
        /* 21 classes, one pixel, one-hot at k: probabilities of all classes
         * sum to 1 and class k gets e^L / (e^L + 20). */
        int64_t s4[4] = {1, 21, 1, 1}, s3[3] = {1, 1, 1};
        pf_tensor src = host(PF_DTYPE_F16, 4, s4, PF_LAYOUT_NCHW);
        pf_tensor prob = host(PF_DTYPE_F32, 3, s3, PF_LAYOUT_NONE);
        pf_tensor lab = host(PF_DTYPE_U8, 3, s3, PF_LAYOUT_NONE);
        for (int c = 0; c < 21; c++) ((uint16_t *)src.data)[c] = pf_f32_to_f16(c == 15 ? 2.5f : 0.0f);
        double total = 0;
        for (int c = 0; c < 21; c++) {
            CHECK_OK(pf_ops_mask_argmax(ops, &src, &lab, &prob, c));
            total += *(float *)prob.data;
            CHECK_EQ_INT(*(uint8_t *)lab.data, 15);
            if (c == 15) {
                double e = exp(2.5);
                CHECK(fabs(*(float *)prob.data - e / (e + 20.0)) < 1e-6);
            }
        }
        CHECK(fabs(total - 1.0) < 1e-6);
        pf_tensor_unref(&src);
        pf_tensor_unref(&prob);
        pf_tensor_unref(&lab);
    }
}

static void test_temporal_known(void)
{
    BOTH(ops)
    {
        /* state 0.2 (by reset), then a constant mask 0.9 with alpha 0.25:
         * s_n = 0.9 + 0.75^n (0.2 - 0.9). */
        int64_t shape[2] = {3, 5};
        pf_tensor s = host(PF_DTYPE_F32, 2, shape, PF_LAYOUT_NONE);
        pf_tensor m = host(PF_DTYPE_F32, 2, shape, PF_LAYOUT_NONE);
        for (int i = 0; i < 15; i++) ((float *)m.data)[i] = 0.2f;
        CHECK_OK(pf_ops_mask_temporal(ops, &s, &m, 0.25f, true));
        CHECK(memcmp(s.data, m.data, sizeof(float) * 15) == 0);
        for (int i = 0; i < 15; i++) ((float *)m.data)[i] = 0.9f;
        double worst = 0;
        for (int n = 1; n <= 40; n++) {
            CHECK_OK(pf_ops_mask_temporal(ops, &s, &m, 0.25f, false));
            double want = 0.9 + pow(0.75, n) * (0.2 - 0.9);
            for (int i = 0; i < 15; i++) {
                double d = fabs(((float *)s.data)[i] - want);
                if (d > worst) worst = d;
            }
        }
        CHECK(worst < 1e-6);
        /* alpha 1: state becomes the mask exactly. */
        for (int i = 0; i < 15; i++) ((float *)m.data)[i] = (float)i / 7.0f;
        CHECK_OK(pf_ops_mask_temporal(ops, &s, &m, 1.0f, false));
        CHECK(memcmp(s.data, m.data, sizeof(float) * 15) == 0);
        pf_tensor_unref(&s);
        pf_tensor_unref(&m);
    }
}

static void test_feather_known(void)
{
    /* The weights: symmetric, sum 1, the Gaussian shape, radius ceil(3 sigma). */
    float w[PF_MK_MAX_TAPS];
    const float sigmas[] = {0.3f, 1.0f, 3.0f, 4.0f, 16.0f, 64.0f};
    for (size_t si = 0; si < sizeof sigmas / sizeof sigmas[0]; si++) {
        float sg = sigmas[si];
        int R = pf_mk_gauss_weights(sg, w);
        CHECK_EQ_INT(R, (int)ceil(3.0 * sg));
        double sum = 0, norm = 0;
        for (int k = -R; k <= R; k++) norm += exp(-(double)k * k / (2.0 * sg * sg));
        for (int k = -R; k <= R; k++) {
            sum += w[k + R];
            CHECK(w[k + R] == w[R - k]);
            double g = exp(-(double)k * k / (2.0 * sg * sg)) / norm;
            CHECK(fabs(w[k + R] - g) <= 1e-7 * g);
        }
        CHECK(fabs(sum - 1.0) < 1e-6);
    }

    BOTH(ops)
    {
        /* A constant stays constant (up to the float sum of the weights). */
        int64_t shape[3] = {2, 23, 31};
        pf_tensor src = host(PF_DTYPE_F32, 3, shape, PF_LAYOUT_NONE);
        pf_tensor dst = host(PF_DTYPE_F32, 3, shape, PF_LAYOUT_NONE);
        for (int i = 0; i < 2 * 23 * 31; i++) ((float *)src.data)[i] = 0.7f;
        for (int k = 0; k < 3; k++) {
            CHECK_OK(pf_ops_mask_feather(ops, &src, &dst, k == 0 ? 0.5f : (k == 1 ? 4.0f : 64.0f)));
            double worst = 0;
            for (int i = 0; i < 2 * 23 * 31; i++)
                worst = fmax(worst, fabs(((float *)dst.data)[i] - 0.7));
            CHECK(worst < 1e-6);
        }
        pf_tensor_unref(&src);
        pf_tensor_unref(&dst);

        /* A single bright pixel in the middle of 41 x 41 with sigma 3
         * (R = 9): the output is exactly the outer product w[dy] w[dx] (one
         * non-zero term per sum), so it is symmetric under both flips and
         * the transpose, zero beyond R, and sums to 1. */
        const int S = 41, c = 20;
        int64_t sq[2] = {S, S};
        src = host(PF_DTYPE_F32, 2, sq, PF_LAYOUT_NONE);
        dst = host(PF_DTYPE_F32, 2, sq, PF_LAYOUT_NONE);
        memset(src.data, 0, sizeof(float) * S * S);
        ((float *)src.data)[c * S + c] = 1.0f;
        CHECK_OK(pf_ops_mask_feather(ops, &src, &dst, 3.0f));
        int R = pf_mk_gauss_weights(3.0f, w);
        const float *o = dst.data;
        long asym = 0, wrong = 0;
        double total = 0;
        for (int y = 0; y < S; y++)
            for (int x = 0; x < S; x++) {
                float v = o[y * S + x];
                total += v;
                asym += v != o[y * S + (S - 1 - x)] || v != o[(S - 1 - y) * S + x] ||
                        v != o[x * S + y];
                int dy = y - c, dx = x - c;
                float want = abs(dy) <= R && abs(dx) <= R ? w[dy + R] * w[dx + R] : 0.0f;
                wrong += v != want;
            }
        CHECK_EQ_INT(asym, 0);
        CHECK_EQ_INT(wrong, 0);
        CHECK(fabs(total - 1.0) < 1e-5);
        CHECK(o[c * S + c + R] > 0.0f && o[c * S + c + R + 1] == 0.0f);

        /* Edge clamp: the same pixel in the corner keeps all its mass in the
         * image; out[0][0] = (sum of w[k] for k <= 0)^2 since every tap left
         * of or above the corner reads it again. */
        memset(src.data, 0, sizeof(float) * S * S);
        ((float *)src.data)[0] = 1.0f;
        CHECK_OK(pf_ops_mask_feather(ops, &src, &dst, 3.0f));
        float half = 0.0f;
        for (int k = 0; k <= R; k++) half += w[k];
        CHECK(fabs(o[0] - (double)half * half) < 1e-6);
        /* Along the first row: a[x] = sum of w[k] for k <= R - x (the taps
         * that land on the corner), times a[0] from the vertical pass. */
        wrong = 0;
        for (int x = 0; x < S; x++) {
            double ax = 0;
            for (int k = 0; k <= 2 * R; k++) ax += x + k - R <= 0 ? w[k] : 0.0;
            wrong += fabs(o[x] - ax * half) > 1e-6;
        }
        CHECK_EQ_INT(wrong, 0);
        pf_tensor_unref(&src);
        pf_tensor_unref(&dst);
    }
}

static void test_morph_known(void)
{
    BOTH(ops)
    {
        const int H = 30, W = 37;
        int64_t shape[2] = {H, W};
        pf_tensor src = host(PF_DTYPE_U8, 2, shape, PF_LAYOUT_NONE);
        pf_tensor dst = host(PF_DTYPE_U8, 2, shape, PF_LAYOUT_NONE);
        uint8_t *s = src.data, *d = dst.data;
        /* A single pixel: erosion removes it; dilation makes it a
         * (2r + 1)^2 square, clipped at the edges. */
        const int pts[3][2] = {{15, 18}, {0, 0}, {29, 35}}; /* (y, x) */
        for (int k = 0; k < 3; k++)
            for (int r = 1; r <= 4; r += 3) {
                memset(s, 0, (size_t)H * W);
                const int py = pts[k][0], px = pts[k][1];
                s[py * W + px] = 255;
                CHECK_OK(pf_ops_mask_morph(ops, &src, &dst, PF_MORPH_ERODE, r));
                long bad = 0;
                for (int i = 0; i < H * W; i++) bad += d[i] != 0;
                CHECK_EQ_INT(bad, 0);
                CHECK_OK(pf_ops_mask_morph(ops, &src, &dst, PF_MORPH_DILATE, r));
                bad = 0;
                for (int y = 0; y < H; y++)
                    for (int x = 0; x < W; x++)
                        bad += d[y * W + x] != (abs(y - py) <= r && abs(x - px) <= r ? 255 : 0);
                CHECK_EQ_INT(bad, 0);
            }
        /* Open removes specks smaller than the 5 x 5 element (r = 2) and
         * keeps a 7 x 7 block as it is. */
        memset(s, 0, (size_t)H * W);
        for (int y = 10; y < 17; y++) memset(s + y * W + 20, 255, 7);
        s[2 * W + 3] = 255;
        s[5 * W + 30] = s[5 * W + 31] = s[6 * W + 30] = s[6 * W + 31] = 255;
        for (int y = 22; y < 26; y++) memset(s + y * W + 5, 255, 4); /* 4 x 4 < 5 x 5 */
        CHECK_OK(pf_ops_mask_morph(ops, &src, &dst, PF_MORPH_OPEN, 2));
        long bad = 0;
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                bad += d[y * W + x] != (y >= 10 && y < 17 && x >= 20 && x < 27 ? 255 : 0);
        CHECK_EQ_INT(bad, 0);
        /* Close fills holes smaller than the element and keeps the rest:
         * 255 everywhere except a 1-pixel hole, a 2 x 3 hole and a 4 x 4
         * hole (r = 2 fills all three), and a 9 x 9 hole that stays. */
        memset(s, 255, (size_t)H * W);
        s[3 * W + 3] = 0;
        s[8 * W + 10] = s[8 * W + 11] = s[8 * W + 12] = s[9 * W + 10] = s[9 * W + 11] =
            s[9 * W + 12] = 0;
        for (int y = 20; y < 24; y++) memset(s + y * W + 4, 0, 4);
        for (int y = 12; y < 21; y++) memset(s + y * W + 22, 0, 9);
        CHECK_OK(pf_ops_mask_morph(ops, &src, &dst, PF_MORPH_CLOSE, 2));
        bad = 0;
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                bad += d[y * W + x] != (y >= 12 && y < 21 && x >= 22 && x < 31 ? 0 : 255);
        CHECK_EQ_INT(bad, 0);
        /* Min and max of other values: a ramp row eroded by r takes the
         * value r pixels to the left (clipped at the start). */
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) s[y * W + x] = (uint8_t)(x * 7);
        CHECK_OK(pf_ops_mask_morph(ops, &src, &dst, PF_MORPH_ERODE, 3));
        bad = 0;
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) bad += d[y * W + x] != (uint8_t)((x < 3 ? 0 : x - 3) * 7);
        CHECK_EQ_INT(bad, 0);
        pf_tensor_unref(&src);
        pf_tensor_unref(&dst);
    }
}

/* Empty tensors are valid and nothing is touched. */
static void test_empty(void)
{
    BOTH(ops)
    {
        int64_t e2[2] = {0, 5}, e4[4] = {1, 21, 0, 4}, e3[3] = {1, 0, 4};
        pf_tensor a = host(PF_DTYPE_F32, 2, e2, PF_LAYOUT_NONE), b = host(PF_DTYPE_F32, 2, e2,
                                                                         PF_LAYOUT_NONE);
        pf_tensor u = host(PF_DTYPE_U8, 2, e2, PF_LAYOUT_NONE), v = host(PF_DTYPE_U8, 2, e2,
                                                                        PF_LAYOUT_NONE);
        CHECK_OK(pf_ops_mask_threshold(ops, &a, true, 0.5f, &u));
        CHECK_OK(pf_ops_mask_temporal(ops, &a, &b, 0.5f, false));
        CHECK_OK(pf_ops_mask_feather(ops, &a, &b, 2.0f));
        CHECK_OK(pf_ops_mask_morph(ops, &u, &v, PF_MORPH_CLOSE, 3));
        pf_tensor s = host(PF_DTYPE_F16, 4, e4, PF_LAYOUT_NCHW);
        pf_tensor l = host(PF_DTYPE_U8, 3, e3, PF_LAYOUT_NONE);
        CHECK_OK(pf_ops_mask_argmax(ops, &s, &l, NULL, 0));
        pf_tensor_unref(&a);
        pf_tensor_unref(&b);
        pf_tensor_unref(&u);
        pf_tensor_unref(&v);
        pf_tensor_unref(&s);
        pf_tensor_unref(&l);
    }
}

/* Bad input ------------------------------------------------------------------------------------ */

static void test_bad_input(void)
{
    pf_ops *ops = g_cpu[0];
    int64_t s2[2] = {6, 8}, s2b[2] = {6, 9}, s1[1] = {48};
    pf_tensor f = host(PF_DTYPE_F32, 2, s2, PF_LAYOUT_NONE);
    pf_tensor g = host(PF_DTYPE_F32, 2, s2, PF_LAYOUT_NONE);
    pf_tensor u = host(PF_DTYPE_U8, 2, s2, PF_LAYOUT_NONE);
    pf_tensor v = host(PF_DTYPE_U8, 2, s2, PF_LAYOUT_NONE);
    pf_tensor ub = host(PF_DTYPE_U8, 2, s2b, PF_LAYOUT_NONE);
    pf_tensor fb = host(PF_DTYPE_F32, 2, s2b, PF_LAYOUT_NONE);
    pf_tensor i32 = host(PF_DTYPE_I32, 2, s2, PF_LAYOUT_NONE);
    pf_tensor flat = host(PF_DTYPE_F32, 1, s1, PF_LAYOUT_NONE);
    pf_tensor flatu = host(PF_DTYPE_U8, 1, s1, PF_LAYOUT_NONE);
    mkc_fill(&f, MKC_PROBS);
    memset(u.data, 0, 48);

    /* Threshold. */
    EXPECT_ERR(pf_ops_mask_threshold(NULL, &f, false, 0.5f, &u), PF_ERR_INVALID, "ops is NULL");
    EXPECT_ERR(pf_ops_mask_threshold(ops, NULL, false, 0.5f, &u), PF_ERR_INVALID,
               "pf_ops_mask_threshold: src is NULL");
    EXPECT_ERR(pf_ops_mask_threshold(ops, &f, false, 0.5f, NULL), PF_ERR_INVALID, "dst is NULL");
    EXPECT_ERR(pf_ops_mask_threshold(ops, &i32, false, 0.5f, &u), PF_ERR_UNSUPPORTED,
               "src dtype i32; expected f32 or f16");
    EXPECT_ERR(pf_ops_mask_threshold(ops, &f, false, 0.5f, &g), PF_ERR_UNSUPPORTED,
               "dst dtype f32; expected u8");
    EXPECT_ERR(pf_ops_mask_threshold(ops, &f, false, 0.5f, &ub), PF_ERR_INVALID,
               "dst shape [6, 9] does not match src shape [6, 8]");
    EXPECT_ERR(pf_ops_mask_threshold(ops, &f, false, 0.5f, &flatu), PF_ERR_INVALID,
               "dst shape [48] does not match src shape [6, 8]");
    EXPECT_ERR(pf_ops_mask_threshold(ops, &f, true, NAN, &u), PF_ERR_INVALID,
               "threshold nan (must be finite)");
    EXPECT_ERR(pf_ops_mask_threshold(ops, &f, true, INFINITY, &u), PF_ERR_INVALID,
               "threshold inf");
    pf_tensor alias = u; /* u8 view of f's first bytes */
    alias.data = f.data;
    alias.buf = f.buf;
    EXPECT_ERR(pf_ops_mask_threshold(ops, &f, false, 0.5f, &alias), PF_ERR_INVALID,
               "dst overlaps src in memory");
    pf_tensor wide = host(PF_DTYPE_F32, 2, (int64_t[2]){6, 16}, PF_LAYOUT_NONE), sl = {0};
    CHECK_OK(pf_tensor_slice(&sl, &wide, 1, 0, 8));
    EXPECT_ERR(pf_ops_mask_threshold(ops, &sl, false, 0.5f, &u), PF_ERR_UNSUPPORTED,
               "src is not contiguous (shape [6, 8], strides 16 1)");
    pf_tensor bad = f;
    bad.data = NULL;
    EXPECT_ERR(pf_ops_mask_threshold(ops, &bad, false, 0.5f, &u), PF_ERR_INVALID,
               "src data is NULL");
    bad = f;
    bad.shape[0] = -2;
    EXPECT_ERR(pf_ops_mask_threshold(ops, &bad, false, 0.5f, &u), PF_ERR_INVALID,
               "src shape[0] is -2");
    bad = f;
    bad.ndim = 9;
    EXPECT_ERR(pf_ops_mask_threshold(ops, &bad, false, 0.5f, &u), PF_ERR_INVALID,
               "src has 9 dimensions (0..8)");
    bad = f;
    bad.dtype = (pf_dtype)17;
    EXPECT_ERR(pf_ops_mask_threshold(ops, &bad, false, 0.5f, &u), PF_ERR_INVALID,
               "src has unknown dtype 17");
    bad = u;
    bad.data = (uint8_t *)u.data + 8; /* claims 8 bytes past its buffer */
    EXPECT_ERR(pf_ops_mask_threshold(ops, &f, false, 0.5f, &bad), PF_ERR_INVALID,
               "dst needs 48 bytes from");

    /* Argmax. */
    int64_t s4[4] = {2, 3, 6, 8}, s3[3] = {2, 6, 8}, s3b[3] = {2, 8, 6};
    pf_tensor lg = host(PF_DTYPE_F32, 4, s4, PF_LAYOUT_NCHW);
    mkc_fill(&lg, MKC_LOGITS);
    pf_tensor lab = host(PF_DTYPE_U8, 3, s3, PF_LAYOUT_NONE);
    pf_tensor pr = host(PF_DTYPE_F32, 3, s3, PF_LAYOUT_NONE);
    pf_tensor labb = host(PF_DTYPE_U8, 3, s3b, PF_LAYOUT_NONE);
    CHECK_OK(pf_ops_mask_argmax(ops, &lg, &lab, &pr, 2));
    EXPECT_ERR(pf_ops_mask_argmax(NULL, &lg, &lab, &pr, 2), PF_ERR_INVALID, "ops is NULL");
    EXPECT_ERR(pf_ops_mask_argmax(ops, NULL, &lab, &pr, 2), PF_ERR_INVALID, "src is NULL");
    EXPECT_ERR(pf_ops_mask_argmax(ops, &lg, NULL, NULL, 2), PF_ERR_INVALID,
               "labels and prob are both NULL");
    EXPECT_ERR(pf_ops_mask_argmax(ops, &lg, &lab, &pr, 3), PF_ERR_INVALID,
               "cls 3 outside 0..2 (src has 3 classes)");
    EXPECT_ERR(pf_ops_mask_argmax(ops, &lg, NULL, &pr, -1), PF_ERR_INVALID, "cls -1 outside 0..2");
    CHECK_OK(pf_ops_mask_argmax(ops, &lg, &lab, NULL, -1)); /* cls unused without prob */
    EXPECT_ERR(pf_ops_mask_argmax(ops, &lg, &labb, NULL, 0), PF_ERR_INVALID,
               "labels shape [2, 8, 6] does not match [N, H, W] = [2, 6, 8] of src (nchw)");
    EXPECT_ERR(pf_ops_mask_argmax(ops, &lg, &pr, NULL, 0), PF_ERR_UNSUPPORTED,
               "labels dtype f32; expected u8");
    EXPECT_ERR(pf_ops_mask_argmax(ops, &lg, NULL, &lab, 0), PF_ERR_UNSUPPORTED,
               "prob dtype u8; expected f32");
    EXPECT_ERR(pf_ops_mask_argmax(ops, &f, &lab, NULL, 0), PF_ERR_INVALID,
               "src has 2 dimensions, expected 4");
    bad = lg;
    bad.layout = PF_LAYOUT_NONE;
    EXPECT_ERR(pf_ops_mask_argmax(ops, &bad, &lab, NULL, 0), PF_ERR_INVALID,
               "src layout is none, expected nchw or nhwc");
    bad = lg;
    bad.layout = PF_LAYOUT_NHWC; /* [N, H, W, C] = [2, 3, 6, 8]: labels must be [2, 3, 6] */
    EXPECT_ERR(pf_ops_mask_argmax(ops, &bad, &lab, NULL, 0), PF_ERR_INVALID,
               "labels shape [2, 6, 8] does not match [N, H, W] = [2, 3, 6] of src (nhwc)");
    pf_tensor big = host(PF_DTYPE_F16, 4, (int64_t[4]){1, 256, 1, 2}, PF_LAYOUT_NCHW);
    pf_tensor l12 = host(PF_DTYPE_U8, 3, (int64_t[3]){1, 1, 2}, PF_LAYOUT_NONE);
    pf_tensor p12 = host(PF_DTYPE_F32, 3, (int64_t[3]){1, 1, 2}, PF_LAYOUT_NONE);
    mkc_fill(&big, MKC_LOGITS);
    EXPECT_ERR(pf_ops_mask_argmax(ops, &big, &l12, NULL, 0), PF_ERR_INVALID,
               "src (nchw) has 256 classes (dimension 1); labels are u8, so C must be <= 255");
    CHECK_OK(pf_ops_mask_argmax(ops, &big, NULL, &p12, 255)); /* prob alone: any C */
    bad = lg;
    bad.dtype = PF_DTYPE_U8;
    EXPECT_ERR(pf_ops_mask_argmax(ops, &bad, &lab, NULL, 0), PF_ERR_UNSUPPORTED,
               "src dtype u8; expected f32 or f16");
    pf_tensor zc = host(PF_DTYPE_F32, 4, (int64_t[4]){2, 0, 6, 8}, PF_LAYOUT_NCHW);
    EXPECT_ERR(pf_ops_mask_argmax(ops, &zc, &lab, NULL, 0), PF_ERR_INVALID,
               "src (nchw) has 0 classes (dimension 1)");
    pf_tensor both = pr; /* labels inside prob's bytes */
    both.dtype = PF_DTYPE_U8;
    EXPECT_ERR(pf_ops_mask_argmax(ops, &lg, &both, &pr, 0), PF_ERR_INVALID,
               "prob overlaps labels in memory");
    pf_tensor lin = lab;
    lin.data = lg.data;
    lin.buf = lg.buf;
    EXPECT_ERR(pf_ops_mask_argmax(ops, &lg, &lin, NULL, 0), PF_ERR_INVALID,
               "labels overlaps src in memory");

    /* Temporal. */
    EXPECT_ERR(pf_ops_mask_temporal(NULL, &f, &g, 0.5f, false), PF_ERR_INVALID, "ops is NULL");
    EXPECT_ERR(pf_ops_mask_temporal(ops, NULL, &g, 0.5f, false), PF_ERR_INVALID,
               "state is NULL");
    EXPECT_ERR(pf_ops_mask_temporal(ops, &f, NULL, 0.5f, false), PF_ERR_INVALID, "mask is NULL");
    EXPECT_ERR(pf_ops_mask_temporal(ops, &f, &g, 0.0f, false), PF_ERR_INVALID,
               "alpha 0 outside (0, 1]");
    EXPECT_ERR(pf_ops_mask_temporal(ops, &f, &g, 1.5f, false), PF_ERR_INVALID,
               "alpha 1.5 outside (0, 1]");
    EXPECT_ERR(pf_ops_mask_temporal(ops, &f, &g, NAN, true), PF_ERR_INVALID,
               "alpha nan outside (0, 1]");
    EXPECT_ERR(pf_ops_mask_temporal(ops, &f, &fb, 0.5f, false), PF_ERR_INVALID,
               "mask shape [6, 9] does not match state shape [6, 8]");
    EXPECT_ERR(pf_ops_mask_temporal(ops, &f, &u, 0.5f, false), PF_ERR_UNSUPPORTED,
               "mask dtype u8; expected f32");
    EXPECT_ERR(pf_ops_mask_temporal(ops, &f, &f, 0.5f, false), PF_ERR_INVALID,
               "mask overlaps state in memory");

    /* Feather. */
    EXPECT_ERR(pf_ops_mask_feather(NULL, &f, &g, 2.0f), PF_ERR_INVALID, "ops is NULL");
    EXPECT_ERR(pf_ops_mask_feather(ops, &f, NULL, 2.0f), PF_ERR_INVALID,
               "pf_ops_mask_feather: dst is NULL");
    EXPECT_ERR(pf_ops_mask_feather(ops, &f, &g, 0.0f), PF_ERR_INVALID, "sigma 0 outside (0, 64]");
    EXPECT_ERR(pf_ops_mask_feather(ops, &f, &g, 64.5f), PF_ERR_INVALID,
               "sigma 64.5 outside (0, 64]");
    EXPECT_ERR(pf_ops_mask_feather(ops, &f, &g, -1.0f), PF_ERR_INVALID, "sigma -1 outside");
    EXPECT_ERR(pf_ops_mask_feather(ops, &f, &g, NAN), PF_ERR_INVALID, "sigma nan outside");
    CHECK_OK(pf_ops_mask_feather(ops, &f, &g, 64.0f));
    EXPECT_ERR(pf_ops_mask_feather(ops, &f, &f, 2.0f), PF_ERR_INVALID,
               "dst overlaps src in memory (they may not alias)");
    pf_tensor shifted = g; /* starts inside f: partial overlap */
    shifted.data = (float *)f.data + 5;
    shifted.buf = f.buf;
    shifted.shape[0] = 5;
    pf_tensor f5 = f;
    f5.shape[0] = 5;
    EXPECT_ERR(pf_ops_mask_feather(ops, &f5, &shifted, 2.0f), PF_ERR_INVALID,
               "dst overlaps src in memory");
    EXPECT_ERR(pf_ops_mask_feather(ops, &u, &v, 2.0f), PF_ERR_UNSUPPORTED,
               "src dtype u8; expected f32");
    EXPECT_ERR(pf_ops_mask_feather(ops, &f, &fb, 2.0f), PF_ERR_INVALID,
               "dst shape [6, 9] does not match src shape [6, 8]");
    EXPECT_ERR(pf_ops_mask_feather(ops, &flat, &flat, 2.0f), PF_ERR_INVALID,
               "src has 1 dimension; expected [..., H, W]");
    pf_tensor tall = f;
    tall.shape[0] = 70000;
    tall.shape[1] = 0; /* empty, so no buffer range applies */
    tall.strides[0] = 0;
    pf_tensor tall2 = tall;
    tall2.data = g.data;
    EXPECT_ERR(pf_ops_mask_feather(ops, &tall, &tall2, 2.0f), PF_ERR_INVALID,
               "src plane is 70000 x 0 (H x W); at most 65536 each");

    /* Morph. */
    EXPECT_ERR(pf_ops_mask_morph(NULL, &u, &v, PF_MORPH_OPEN, 2), PF_ERR_INVALID, "ops is NULL");
    EXPECT_ERR(pf_ops_mask_morph(ops, NULL, &v, PF_MORPH_OPEN, 2), PF_ERR_INVALID,
               "pf_ops_mask_morph: src is NULL");
    EXPECT_ERR(pf_ops_mask_morph(ops, &u, &v, PF_MORPH_OPEN, 0), PF_ERR_INVALID,
               "radius 0 outside 1..64");
    EXPECT_ERR(pf_ops_mask_morph(ops, &u, &v, PF_MORPH_OPEN, 65), PF_ERR_INVALID,
               "radius 65 outside 1..64");
    EXPECT_ERR(pf_ops_mask_morph(ops, &u, &v, (pf_morph_op)4, 2), PF_ERR_INVALID,
               "op 4 is not erode (0), dilate (1), open (2) or close (3)");
    EXPECT_ERR(pf_ops_mask_morph(ops, &u, &u, PF_MORPH_DILATE, 2), PF_ERR_INVALID,
               "dst overlaps src in memory (they may not alias)");
    EXPECT_ERR(pf_ops_mask_morph(ops, &f, &g, PF_MORPH_DILATE, 2), PF_ERR_UNSUPPORTED,
               "src dtype f32; expected u8");
    EXPECT_ERR(pf_ops_mask_morph(ops, &u, &g, PF_MORPH_DILATE, 2), PF_ERR_UNSUPPORTED,
               "dst dtype f32; expected u8");
    EXPECT_ERR(pf_ops_mask_morph(ops, &u, &ub, PF_MORPH_DILATE, 2), PF_ERR_INVALID,
               "dst shape [6, 9] does not match src shape [6, 8]");
    CHECK_OK(pf_ops_mask_morph(ops, &u, &v, PF_MORPH_CLOSE, 64));

    /* Memory another device owns is not readable by the CPU context. A
     * stand-in device record is enough: only its type and name are read. */
    pf_buffer *devbuf = otu_fake_gpu_buffer(wide.data, 96 * sizeof(float), 7);
    pf_tensor ondev = {0}, ondev_u = {0};
    CHECK_OK(pf_tensor_wrap(&ondev, devbuf, 0, PF_DTYPE_F32, 2, s2, NULL, PF_LAYOUT_NONE));
    CHECK_OK(pf_tensor_wrap(&ondev_u, devbuf, 0, PF_DTYPE_U8, 2, s2, NULL, PF_LAYOUT_NONE));
    EXPECT_ERR(pf_ops_mask_threshold(ops, &ondev, false, 0.5f, &u), PF_ERR_UNSUPPORTED,
               "src is device memory of cuda:7, not readable by the CPU context");
    EXPECT_ERR(pf_ops_mask_feather(ops, &f, &ondev, 1.0f), PF_ERR_UNSUPPORTED,
               "pf_ops_mask_feather: dst is device memory of cuda:7");
    EXPECT_ERR(pf_ops_mask_temporal(ops, &ondev, &f, 0.5f, false), PF_ERR_UNSUPPORTED,
               "state is device memory of cuda:7");
    EXPECT_ERR(pf_ops_mask_morph(ops, &u, &ondev_u, PF_MORPH_ERODE, 1), PF_ERR_UNSUPPORTED,
               "dst is device memory of cuda:7");
    pf_tensor ondev_p = {0};
    CHECK_OK(pf_tensor_wrap(&ondev_p, devbuf, 0, PF_DTYPE_F32, 3, s3, NULL, PF_LAYOUT_NONE));
    EXPECT_ERR(pf_ops_mask_argmax(ops, &lg, NULL, &ondev_p, 0), PF_ERR_UNSUPPORTED,
               "prob is device memory of cuda:7");
    pf_tensor_unref(&ondev_p);
    pf_tensor_unref(&ondev);
    pf_tensor_unref(&ondev_u);
    pf_buffer_unref(&devbuf);

    pf_tensor *all[] = {&f, &g, &u, &v, &ub, &fb, &i32, &flat, &flatu, &wide, &sl, &lg, &lab, &pr,
                        &labb, &big, &l12, &p12, &zc};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) pf_tensor_unref(all[i]);
}

int main(void)
{
    pf_test_seed(20261122);
    if (!(g_stream = otu_cpu_stream())) return 1;
    pf_threadpool_params tpp = pf_threadpool_params_default();
    tpp.num_threads = 1;
    if (pf_threadpool_create(&tpp, &g_pool1) != PF_OK) return 1;
    tpp.num_threads = 3;
    if (pf_threadpool_create(&tpp, &g_pool3) != PF_OK) return 1;
    g_ref = otu_make_ops(g_stream, 1, NULL);
    g_cpu[0] = otu_make_ops(g_stream, 0, NULL);
    g_cpu[1] = otu_make_ops(g_stream, 0, g_pool3);
    g_cpu[2] = otu_make_ops(g_stream, 0, g_pool1);
    if (!g_ref || !g_cpu[0] || !g_cpu[1] || !g_cpu[2]) return pf_test_finish();
    PF_RUN(test_f16_conversion);
    PF_RUN(test_threshold_random);
    PF_RUN(test_argmax_random);
    PF_RUN(test_temporal_random);
    PF_RUN(test_feather_random);
    PF_RUN(test_morph_random);
    PF_RUN(test_simd_levels);
    PF_RUN(test_plane_groups);
    PF_RUN(test_threshold_known);
    PF_RUN(test_argmax_known);
    PF_RUN(test_temporal_known);
    PF_RUN(test_feather_known);
    PF_RUN(test_morph_known);
    PF_RUN(test_empty);
    PF_RUN(test_bad_input);
    pf_ops_destroy(&g_ref);
    for (int i = 0; i < 3; i++) pf_ops_destroy(&g_cpu[i]);
    pf_threadpool_destroy(&g_pool1);
    pf_threadpool_destroy(&g_pool3);
    pf_stream_destroy(&g_stream);
    return pf_test_finish();
}
