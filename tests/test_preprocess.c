/* pf_ops_preprocess on the CPU: the multi-threaded path against the C
 * reference on random inputs (every source format, odd and 1x1 sizes, padded
 * strides, unaligned starts, ROIs, mixed sizes in one batch, batches larger
 * than one chunk, both layouts and dtypes, every interpolation, letterbox,
 * channel order, mean/std, YUV matrix and range), known values worked out by
 * hand, and bad input with its messages. Tolerances: preprocess_check.h. */
#include "core/cpu_features.h"
#include "preprocess_check.h"

#include "device/backend.h"

static pf_stream *g_stream;

/* Runs the case on `ops` into a fresh tensor; -1 (after a failed CHECK) on
 * error. The caller unrefs the tensor. */
static int run_case(pf_ops *ops, const ppc_case *c, pf_tensor *t, pf_letterbox_info *info)
{
    const pf_frame *srcs[PPC_MAX_N];
    for (int i = 0; i < c->n; i++) srcs[i] = &c->src[i];
    memset(t, 0, sizeof *t);
    if (ppc_alloc_dst(c, t, NULL, NULL) != PF_OK) {
        CHECK_OK(ppc_alloc_dst(c, t, NULL, NULL));
        return -1;
    }
    /* Poison so a value the implementation forgets to write cannot pass. */
    memset(t->data, 0x7F, pf_tensor_nbytes(t));
    pf_status st = pf_ops_preprocess(ops, srcs, c->use_rois ? c->rois : NULL, c->n, t, &c->p, info);
    CHECK_OK(st);
    return st == PF_OK ? 0 : -1;
}

static ppc_stats g_stats;

/* Reference and CPU path on the same case. */
static void compare_case(pf_ops *ref, pf_ops *cpu, const ppc_case *c, const char *label)
{
    pf_tensor a, b;
    pf_letterbox_info ia[PPC_MAX_N], ib[PPC_MAX_N];
    if (run_case(ref, c, &a, ia) == 0 && run_case(cpu, c, &b, ib) == 0) {
        long bad = ppc_compare(c, a.data, b.data, 1e-5, label, &g_stats);
        CHECK_EQ_INT(bad, 0);
        CHECK(memcmp(ia, ib, sizeof(pf_letterbox_info) * (size_t)c->n) == 0);
    }
    pf_tensor_unref(&a);
    pf_tensor_unref(&b);
}

static void test_random_vs_reference(void)
{
    pf_ops *ref = otu_make_ops(g_stream, 1, NULL), *cpu = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ref && cpu);
    ppc_coverage cov;
    memset(&cov, 0, sizeof cov);
    for (int it = 0; it < 400; it++) {
        ppc_case c;
        int n = (int)pf_test_rand_range(1, 4);
        CHECK_OK(ppc_random_case(&c, n, it < 300 ? 24 : 90));
        char label[32];
        snprintf(label, sizeof label, "random case %d", it);
        compare_case(ref, cpu, &c, label);
        ppc_cover(&cov, &c);
        ppc_free(&c);
    }
    ppc_check_coverage(&cov);
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cpu);
}

/* The SIMD bilinear row kernel (src/cpu/simd_resize.c, planned with the
 * packed formats' channel offsets) at every level this CPU has: bit-exact
 * with the scalar CPU path (memcmp; the scalar path is held to the
 * reference within 1e-5 above, and so is each level here), on random cases
 * of every format, ROIs, letterboxes, widths up to 130. */
static void test_simd_levels(void)
{
    pf_ops *ref = otu_make_ops(g_stream, 1, NULL), *cpu = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ref && cpu);
    const int top = pf_cpu_simd_detected();
    for (int it = 0; it < 120; it++) {
        ppc_case c;
        CHECK_OK(ppc_random_case(&c, (int)pf_test_rand_range(1, 3), 130));
        if (it % 2) c.p.interp = PF_INTERP_BILINEAR;
        pf_tensor scalar, t;
        pf_letterbox_info ia[PPC_MAX_N], ib[PPC_MAX_N];
        pf_cpu_simd_cap(PF_SIMD_NONE);
        const int ok = run_case(cpu, &c, &scalar, ia) == 0;
        for (int level = PF_SIMD_AVX2; ok && level <= top; level++) {
            pf_cpu_simd_cap(level);
            if (run_case(cpu, &c, &t, ib) == 0) {
                const int same = memcmp(scalar.data, t.data, pf_tensor_nbytes(&t)) == 0;
                CHECK(same);
                if (!same) {
                    fprintf(stderr, "  simd %s case %d differs from the scalar path\n",
                            pf_cpu_simd_name(level), it);
                    ppc_describe(&c, 0);
                }
            }
            pf_tensor_unref(&t);
            char label[48];
            snprintf(label, sizeof label, "simd %s case %d", pf_cpu_simd_name(level), it);
            compare_case(ref, cpu, &c, label);
        }
        pf_tensor_unref(&scalar);
        ppc_free(&c);
    }
    pf_cpu_simd_cap(-1);
    printf("  simd levels checked: none .. %s\n", pf_cpu_simd_name(top));
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cpu);
}

/* Large downscales (many area taps), upscales, mixed axes, and a batch of
 * more than PF_PP_MAX_FRAMES frames (two chunks); pools of 1 and 3 threads. */
static void test_shapes_and_chunks(void)
{
    pf_threadpool *pool3 = otu_make_pool(3), *pool1 = otu_make_pool(1);
    pf_ops *ref = otu_make_ops(g_stream, 1, NULL), *cpu3 = otu_make_ops(g_stream, 0, pool3),
           *cpu1 = otu_make_ops(g_stream, 0, pool1);
    REQUIRE(ref && cpu3 && cpu1);
    struct {
        int sw, sh, W, H;
    } shapes[] = {{301, 203, 17, 9}, {7, 5, 61, 37}, {64, 8, 16, 32}, {5, 90, 40, 6},
                  {1, 1, 13, 11}, {250, 3, 1, 1}, {32, 32, 32, 32}, {40000, 2, 60000, 3}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int fi = 0; fi < PPC_NFMT; fi++)
            for (int interp = 0; interp < 3; interp++) {
                ppc_case c;
                pf_layout lay = interp == 1 ? PF_LAYOUT_NHWC : PF_LAYOUT_NCHW;
                pf_dtype dt = fi & 1 ? PF_DTYPE_F16 : PF_DTYPE_F32;
                CHECK_OK(ppc_shape_case(&c, ppc_formats[fi], shapes[s].sw, shapes[s].sh,
                                        shapes[s].W, shapes[s].H, lay, dt, (pf_interp)interp));
                char label[48];
                snprintf(label, sizeof label, "shape %zu fmt %d interp %d", s, fi, interp);
                compare_case(ref, (s & 1) ? cpu1 : cpu3, &c, label);
                ppc_free(&c);
            }
    /* The benchmark's shape: 1080p BGR24 and NV12 -> 512x512 f16 NCHW,
     * ImageNet mean/std, bilinear and area (5 x 3 taps per pixel). */
    for (int k = 0; k < 2; k++) {
        ppc_case c;
        memset(&c, 0, sizeof c);
        c.n = 2;
        CHECK_OK(ppc_make_frame(&c.src[0], PF_PIXFMT_BGR24, 1920, 1080, 0, 0));
        CHECK_OK(ppc_make_frame(&c.src[1], PF_PIXFMT_NV12, 1920, 1080, 0, 0));
        c.W = c.H = 512;
        c.layout = PF_LAYOUT_NCHW;
        c.dtype = PF_DTYPE_F16;
        c.p = pf_preprocess_params_default();
        c.p.interp = k ? PF_INTERP_AREA : PF_INTERP_BILINEAR;
        c.p.matrix = PF_YUV_BT709;
        const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
        memcpy(c.p.mean, mean, sizeof mean);
        memcpy(c.p.std, std, sizeof std);
        compare_case(ref, cpu3, &c, k ? "1080p area" : "1080p bilinear");
        ppc_free(&c);
    }

    /* 70 frames of mixed sizes: chunks of 64 + 6, each frame in its place. */
    ppc_case c;
    CHECK_OK(ppc_random_case(&c, 1, 12));
    ppc_free(&c);
    c.n = 0;
    for (int i = 0; i < 70; i++) {
        int w = (int)pf_test_rand_range(1, 12), h = (int)pf_test_rand_range(1, 12);
        CHECK_OK(ppc_make_frame(&c.src[i], ppc_formats[i % PPC_NFMT], w, h, 3, (size_t)(i & 3)));
        c.rois[i] = (pf_rect){0, 0, w, h};
        c.n = i + 1;
    }
    c.use_rois = 0;
    compare_case(ref, cpu3, &c, "70 frames");
    ppc_free(&c);
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cpu3);
    pf_ops_destroy(&cpu1);
    pf_threadpool_destroy(&pool3);
    pf_threadpool_destroy(&pool1);
}

/* The CPU path's f16 output is its f32 output rounded by pf_f32_to_f16, bit
 * for bit (it may convert with F16C instructions; the rounding must be the
 * same), on both layouts and with padding. */
static void test_f16_is_rounded_f32(void)
{
    pf_ops *cpu = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(cpu);
    for (int it = 0; it < 40; it++) {
        ppc_case c;
        CHECK_OK(ppc_random_case(&c, (int)pf_test_rand_range(1, 3), 60));
        pf_tensor a, b;
        c.dtype = PF_DTYPE_F32;
        int ok = run_case(cpu, &c, &a, NULL) == 0;
        c.dtype = PF_DTYPE_F16;
        ok = ok && run_case(cpu, &c, &b, NULL) == 0;
        if (ok) {
            long bad = 0;
            int64_t n = pf_tensor_numel(&a);
            for (int64_t i = 0; i < n; i++)
                if (pf_f32_to_f16(((const float *)a.data)[i]) != ((const uint16_t *)b.data)[i])
                    bad++;
            CHECK_EQ_INT(bad, 0);
        }
        pf_tensor_unref(&a);
        pf_tensor_unref(&b);
        ppc_free(&c);
    }
    pf_ops_destroy(&cpu);
}

/* Known values ------------------------------------------------------------------ */

static float expect_norm(double x, double mean, double std)
{
    return (float)((x / 255.0 - mean) / std);
}

/* Reads output value (n, c, y, x) of a [N,3,H,W] or [N,H,W,3] tensor as float. */
static float out_at(const pf_tensor *t, int n, int c, int y, int x)
{
    int64_t H = t->layout == PF_LAYOUT_NCHW ? t->shape[2] : t->shape[1];
    int64_t W = t->layout == PF_LAYOUT_NCHW ? t->shape[3] : t->shape[2];
    int64_t i = t->layout == PF_LAYOUT_NCHW ? ((n * 3 + c) * H + y) * W + x
                                            : ((n * H + y) * W + x) * 3 + c;
    return t->dtype == PF_DTYPE_F32 ? ((const float *)t->data)[i]
                                    : pf_f16_to_f32(((const uint16_t *)t->data)[i]);
}

/* A frame with every pixel (r, g, b) in any packed format. */
static void solid_packed(pf_frame *f, pf_pixfmt fmt, int w, int h, const uint8_t rgb[3])
{
    CHECK_OK(ppc_make_frame(f, fmt, w, h, 4, 1));
    int bpp = fmt == PF_PIXFMT_RGBA ? 4 : 3;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *p = f->data[0] + (size_t)y * f->stride[0] + (size_t)x * bpp;
            p[0] = fmt == PF_PIXFMT_BGR24 ? rgb[2] : rgb[0];
            p[1] = rgb[1];
            p[2] = fmt == PF_PIXFMT_BGR24 ? rgb[0] : rgb[2];
        }
}

static void solid_yuv(pf_frame *f, pf_pixfmt fmt, int w, int h, uint8_t Y, uint8_t U, uint8_t V)
{
    CHECK_OK(ppc_make_frame(f, fmt, w, h, 4, 1));
    for (int y = 0; y < h; y++) memset(f->data[0] + (size_t)y * f->stride[0], Y, (size_t)w);
    int cw = (w + 1) / 2, chh = (h + 1) / 2;
    for (int y = 0; y < chh; y++)
        for (int x = 0; x < cw; x++) {
            if (fmt == PF_PIXFMT_NV12) {
                f->data[1][(size_t)y * f->stride[1] + 2 * (size_t)x] = U;
                f->data[1][(size_t)y * f->stride[1] + 2 * (size_t)x + 1] = V;
            } else {
                f->data[1][(size_t)y * f->stride[1] + (size_t)x] = U;
                f->data[2][(size_t)y * f->stride[2] + (size_t)x] = V;
            }
        }
}

/* Every output value must be `want[c]`: exactly for the reference, within
 * the tolerance (f32) or 1 ulp (f16) for the CPU path. */
static void check_all(const pf_tensor *t, const float want[3], int exact, const pf_preprocess_params *p,
                      const char *what)
{
    int64_t N = t->shape[0];
    int64_t H = t->layout == PF_LAYOUT_NCHW ? t->shape[2] : t->shape[1];
    int64_t W = t->layout == PF_LAYOUT_NCHW ? t->shape[3] : t->shape[2];
    long bad = 0;
    for (int n = 0; n < N; n++)
        for (int c = 0; c < 3; c++) {
            float w = want[c];
            if (t->dtype == PF_DTYPE_F16) w = pf_f16_to_f32(pf_f32_to_f16(w));
            double tol = exact ? 0.0
                               : 1e-5 * (1.0 / fabs(p->std[c]) + fabs(p->mean[c] / p->std[c]));
            if (!exact && t->dtype == PF_DTYPE_F16) tol += fabs(w) / 1024.0; /* 1 ulp */
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    float g = out_at(t, n, c, y, x);
                    if (!(fabs((double)g - w) <= tol)) {
                        if (bad++ < 3)
                            fprintf(stderr, "  %s: (n %d, c %d, y %d, x %d) = %.9g, want %.9g\n",
                                    what, n, c, y, x, (double)g, (double)w);
                    }
                }
        }
    CHECK_EQ_INT(bad, 0);
}

static pf_tensor new_dst(int n, int W, int H, pf_layout layout, pf_dtype dt)
{
    pf_tensor t = {0};
    int64_t shape[4] = {n, 3, H, W};
    if (layout == PF_LAYOUT_NHWC) shape[1] = H, shape[2] = W, shape[3] = 3;
    CHECK_OK(pf_tensor_alloc(&t, dt, 4, shape, layout, NULL, NULL));
    if (t.data) memset(t.data, 0x7F, pf_tensor_nbytes(&t));
    return t;
}

/* A constant-colour frame gives (c / 255 - mean) / std everywhere, for every
 * packed format, interpolation, layout, dtype, size and letterbox (the pad
 * value is the same colour), and bgr swaps channels. */
static void test_constant_colour(void)
{
    pf_ops *ops[2] = {otu_make_ops(g_stream, 1, NULL), otu_make_ops(g_stream, 0, NULL)};
    REQUIRE(ops[0] && ops[1]);
    const uint8_t rgb[3] = {51, 200, 7};
    for (int fi = 0; fi < 3; fi++)
        for (int k = 0; k < 12; k++) {
            pf_frame f = {0};
            int w = (int)pf_test_rand_range(1, 50), h = (int)pf_test_rand_range(1, 50);
            solid_packed(&f, ppc_formats[fi], w, h, rgb);
            pf_preprocess_params p = pf_preprocess_params_default();
            p.interp = (pf_interp)(k % 3);
            p.bgr = k & 1;
            p.letterbox = (k & 2) != 0;
            p.mean[0] = 0.485f, p.mean[1] = 0.456f, p.mean[2] = 0.406f;
            p.std[0] = 0.229f, p.std[1] = 0.224f, p.std[2] = 0.225f;
            if (p.letterbox) p.pad_value = 0, p.mean[0] = p.mean[1] = p.mean[2] = 0;
            float want[3];
            for (int c = 0; c < 3; c++) {
                int sc = p.bgr ? 2 - c : c;
                want[c] = expect_norm(rgb[sc], p.mean[c], p.std[c]);
            }
            for (int o = 0; o < 2; o++) {
                pf_tensor t = new_dst(2, (int)pf_test_rand_range(1, 40),
                                      (int)pf_test_rand_range(1, 40),
                                      k & 4 ? PF_LAYOUT_NHWC : PF_LAYOUT_NCHW,
                                      k & 8 ? PF_DTYPE_F16 : PF_DTYPE_F32);
                const pf_frame *srcs[2] = {&f, &f};
                pf_letterbox_info info[2];
                CHECK_OK(pf_ops_preprocess(ops[o], srcs, NULL, 2, &t, &p, info));
                if (!p.letterbox) {
                    check_all(&t, want, o == 0, &p, o ? "constant (cpu)" : "constant (ref)");
                } else {
                    /* Letterboxed: the content box keeps the colour, the
                     * rest is pad value 0 with mean 0, i.e. exactly 0. */
                    int64_t H = t.layout == PF_LAYOUT_NCHW ? t.shape[2] : t.shape[1];
                    int64_t W = t.layout == PF_LAYOUT_NCHW ? t.shape[3] : t.shape[2];
                    long bad = 0;
                    for (int c = 0; c < 3; c++) {
                        float wv = want[c];
                        if (t.dtype == PF_DTYPE_F16) wv = pf_f16_to_f32(pf_f32_to_f16(wv));
                        float tol = o == 0 ? 0.0f : 1e-5f * (1.0f / p.std[c]) + fabsf(wv) / 1024;
                        for (int y = 0; y < H; y++)
                            for (int x = 0; x < W; x++) {
                                int in = x >= info[1].pad_left &&
                                         x < info[1].pad_left + info[1].content_width &&
                                         y >= info[1].pad_top &&
                                         y < info[1].pad_top + info[1].content_height;
                                float g = out_at(&t, 1, c, y, x);
                                if (in ? !(fabsf(g - wv) <= tol) : g != 0.0f) bad++;
                            }
                    }
                    CHECK_EQ_INT(bad, 0);
                }
                pf_tensor_unref(&t);
            }
            pf_frame_unref(&f);
        }
    pf_ops_destroy(&ops[0]);
    pf_ops_destroy(&ops[1]);
}

/* YUV constants: limited-range black and white are exactly 0 and 255 in the
 * reference (white clamps); a colour matches the coefficient table printed in
 * ops.h (six decimals, hence the 1e-5 bound on 0..1 values). */
static void test_yuv_known(void)
{
    pf_ops *ops[2] = {otu_make_ops(g_stream, 1, NULL), otu_make_ops(g_stream, 0, NULL)};
    REQUIRE(ops[0] && ops[1]);
    /* ops.h: y_off, y_scale, R<-V, G<-U, G<-V, B<-U per matrix and range. */
    static const double table[2][2][6] = {
        {{16, 1.164384, 1.596027, 0.391762, 0.812968, 2.017232},
         {0, 1.0, 1.402, 0.344136, 0.714136, 1.772}},
        {{16, 1.164384, 1.792741, 0.213249, 0.532909, 2.112402},
         {0, 1.0, 1.5748, 0.187324, 0.468124, 1.8556}}};
    for (int fmt = 0; fmt < 2; fmt++) {
        pf_pixfmt pf = fmt ? PF_PIXFMT_I420 : PF_PIXFMT_NV12;
        for (int o = 0; o < 2; o++) {
            pf_preprocess_params p = pf_preprocess_params_default();
            const pf_frame *srcs[1];
            pf_frame f = {0};
            /* Black and white, limited range. */
            uint8_t ys[2] = {16, 235};
            for (int k = 0; k < 2; k++) {
                solid_yuv(&f, pf, 5, 3, ys[k], 128, 128);
                srcs[0] = &f;
                pf_tensor t = new_dst(1, 4, 4, PF_LAYOUT_NCHW, PF_DTYPE_F32);
                CHECK_OK(pf_ops_preprocess(ops[o], srcs, NULL, 1, &t, &p, NULL));
                float want[3] = {(float)k, (float)k, (float)k};
                check_all(&t, want, o == 0, &p, k ? "white" : "black");
                pf_tensor_unref(&t);
                pf_frame_unref(&f);
            }
            /* A colour under every matrix and range, against the table. */
            for (int m = 0; m < 2; m++)
                for (int r = 0; r < 2; r++) {
                    p.matrix = (pf_yuv_matrix)m;
                    p.range = (pf_yuv_range)r;
                    p.interp = PF_INTERP_AREA;
                    const double Y = 120, U = 90, V = 170;
                    solid_yuv(&f, pf, 7, 6, (uint8_t)Y, (uint8_t)U, (uint8_t)V);
                    srcs[0] = &f;
                    const double *k = table[m][r];
                    double yy = (Y - k[0]) * k[1], u = U - 128, v = V - 128;
                    double rgb[3] = {yy + k[2] * v, yy - k[3] * u - k[4] * v, yy + k[5] * u};
                    pf_tensor t = new_dst(1, 3, 2, PF_LAYOUT_NHWC, PF_DTYPE_F32);
                    CHECK_OK(pf_ops_preprocess(ops[o], srcs, NULL, 1, &t, &p, NULL));
                    for (int c = 0; c < 3; c++) {
                        double want = fmin(fmax(rgb[c], 0.0), 255.0) / 255.0;
                        double got = out_at(&t, 0, c, 1, 2);
                        if (!(fabs(got - want) <= 1e-5))
                            fprintf(stderr, "  yuv m%d r%d c%d: %.7f want %.7f\n", m, r, c, got,
                                    want);
                        CHECK(fabs(got - want) <= 1e-5);
                    }
                    pf_tensor_unref(&t);
                    pf_frame_unref(&f);
                }
        }
    }
    pf_ops_destroy(&ops[0]);
    pf_ops_destroy(&ops[1]);
}

/* Writes RGB24 pixel values v(x, y) = base + 10 x + 40 y (+ channel). */
static void ramp_rgb(pf_frame *f, int w, int h)
{
    CHECK_OK(ppc_make_frame(f, PF_PIXFMT_RGB24, w, h, 3, 0));
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++)
                f->data[0][(size_t)y * f->stride[0] + 3 * (size_t)x + c] =
                    (uint8_t)(10 * x + 40 * y + 3 * c);
}

static double ramp(int x, int y, int c) { return 10 * x + 40 * y + 3 * c; }

/* 2x2 -> 1x1 bilinear is the average; identity size gives the source exactly
 * for every interpolation; nearest picks floor((i + 0.5) W / w); area 4x4 ->
 * 2x2 averages blocks and 3 -> 2 weights 1 : 0.5 and 0.5 : 1; a ROI selects
 * its pixels; bgr swaps channels; NHWC and NCHW put values where expected. */
static void test_known_resizes(void)
{
    pf_ops *ops[2] = {otu_make_ops(g_stream, 1, NULL), otu_make_ops(g_stream, 0, NULL)};
    REQUIRE(ops[0] && ops[1]);
    for (int o = 0; o < 2; o++) {
        const double tol = o == 0 ? 0.0 : 1e-5 * 2.0; /* std 0.5: R = 2 */
        pf_preprocess_params p = pf_preprocess_params_default();
        p.mean[0] = 0.25f, p.mean[1] = 0.5f, p.mean[2] = 0.75f;
        p.std[0] = p.std[1] = p.std[2] = 0.5f;
        pf_frame f = {0};
        const pf_frame *srcs[1] = {&f};

        /* 2x2 -> 1x1 bilinear: the average. */
        ramp_rgb(&f, 2, 2);
        pf_tensor t = new_dst(1, 1, 1, PF_LAYOUT_NCHW, PF_DTYPE_F32);
        CHECK_OK(pf_ops_preprocess(ops[o], srcs, NULL, 1, &t, &p, NULL));
        for (int c = 0; c < 3; c++) {
            double avg = (ramp(0, 0, c) + ramp(1, 0, c) + ramp(0, 1, c) + ramp(1, 1, c)) / 4;
            CHECK(fabs(out_at(&t, 0, c, 0, 0) - expect_norm(avg, p.mean[c], p.std[c])) <= tol);
        }
        pf_tensor_unref(&t);
        pf_frame_unref(&f);

        /* Identity size: every interpolation returns the source. */
        ramp_rgb(&f, 6, 5);
        for (int interp = 0; interp < 3; interp++) {
            p.interp = (pf_interp)interp;
            for (int lay = 0; lay < 2; lay++) {
                t = new_dst(1, 6, 5, lay ? PF_LAYOUT_NHWC : PF_LAYOUT_NCHW, PF_DTYPE_F32);
                CHECK_OK(pf_ops_preprocess(ops[o], srcs, NULL, 1, &t, &p, NULL));
                long bad = 0;
                for (int y = 0; y < 5; y++)
                    for (int x = 0; x < 6; x++)
                        for (int c = 0; c < 3; c++)
                            if (fabs(out_at(&t, 0, c, y, x) -
                                     expect_norm(ramp(x, y, c), p.mean[c], p.std[c])) > tol)
                                bad++;
                CHECK_EQ_INT(bad, 0);
                pf_tensor_unref(&t);
            }
        }
        /* ROI {1,2 3x2} at identity size, bgr: channel 0 is blue. */
        pf_rect roi = {1, 2, 3, 2};
        p.interp = PF_INTERP_BILINEAR;
        p.bgr = true;
        t = new_dst(1, 3, 2, PF_LAYOUT_NHWC, PF_DTYPE_F32);
        CHECK_OK(pf_ops_preprocess(ops[o], srcs, &roi, 1, &t, &p, NULL));
        for (int y = 0; y < 2; y++)
            for (int x = 0; x < 3; x++)
                for (int c = 0; c < 3; c++)
                    CHECK(fabs(out_at(&t, 0, c, y, x) -
                               expect_norm(ramp(1 + x, 2 + y, 2 - c), p.mean[c], p.std[c])) <= tol);
        pf_tensor_unref(&t);
        p.bgr = false;
        /* Nearest 6x5 -> 2x1: x = floor((i + 0.5) * 3) = 1, 4; y = floor(2.5) = 2. */
        p.interp = PF_INTERP_NEAREST;
        t = new_dst(1, 2, 1, PF_LAYOUT_NCHW, PF_DTYPE_F32);
        CHECK_OK(pf_ops_preprocess(ops[o], srcs, NULL, 1, &t, &p, NULL));
        for (int c = 0; c < 3; c++) {
            CHECK(fabs(out_at(&t, 0, c, 0, 0) - expect_norm(ramp(1, 2, c), p.mean[c], p.std[c])) <= tol);
            CHECK(fabs(out_at(&t, 0, c, 0, 1) - expect_norm(ramp(4, 2, c), p.mean[c], p.std[c])) <= tol);
        }
        pf_tensor_unref(&t);
        pf_frame_unref(&f);

        /* Area 4x4 -> 2x2: block averages. */
        ramp_rgb(&f, 4, 4);
        p.interp = PF_INTERP_AREA;
        t = new_dst(1, 2, 2, PF_LAYOUT_NCHW, PF_DTYPE_F32);
        CHECK_OK(pf_ops_preprocess(ops[o], srcs, NULL, 1, &t, &p, NULL));
        for (int y = 0; y < 2; y++)
            for (int x = 0; x < 2; x++)
                for (int c = 0; c < 3; c++) {
                    double s = 0;
                    for (int dy = 0; dy < 2; dy++)
                        for (int dx = 0; dx < 2; dx++) s += ramp(2 * x + dx, 2 * y + dy, c);
                    CHECK(fabs(out_at(&t, 0, c, y, x) - expect_norm(s / 4, p.mean[c], p.std[c])) <=
                          tol + 1e-6);
                }
        pf_tensor_unref(&t);
        pf_frame_unref(&f);

        /* Area 3x1 -> 2x1: (a + b/2) / 1.5 and (b/2 + c) / 1.5. */
        ramp_rgb(&f, 3, 1);
        t = new_dst(1, 2, 1, PF_LAYOUT_NCHW, PF_DTYPE_F32);
        CHECK_OK(pf_ops_preprocess(ops[o], srcs, NULL, 1, &t, &p, NULL));
        for (int c = 0; c < 3; c++) {
            double a = ramp(0, 0, c), b = ramp(1, 0, c), cc = ramp(2, 0, c);
            CHECK(fabs(out_at(&t, 0, c, 0, 0) - expect_norm((a + b / 2) / 1.5, p.mean[c], p.std[c])) <=
                  tol + 1e-6);
            CHECK(fabs(out_at(&t, 0, c, 0, 1) - expect_norm((b / 2 + cc) / 1.5, p.mean[c], p.std[c])) <=
                  tol + 1e-6);
        }
        pf_tensor_unref(&t);
        pf_frame_unref(&f);

        /* Bilinear upscale 2x1 -> 4x1: x = -0.25 (clamped: a), 0.25, 0.75, 1.25 (b). */
        ramp_rgb(&f, 2, 1);
        p.interp = PF_INTERP_BILINEAR;
        t = new_dst(1, 4, 1, PF_LAYOUT_NCHW, PF_DTYPE_F32);
        CHECK_OK(pf_ops_preprocess(ops[o], srcs, NULL, 1, &t, &p, NULL));
        for (int c = 0; c < 3; c++) {
            double a = ramp(0, 0, c), b = ramp(1, 0, c);
            double want[4] = {a, 0.75 * a + 0.25 * b, 0.25 * a + 0.75 * b, b};
            for (int x = 0; x < 4; x++)
                CHECK(fabs(out_at(&t, 0, c, 0, x) - expect_norm(want[x], p.mean[c], p.std[c])) <=
                      tol + 1e-6);
        }
        pf_tensor_unref(&t);
        pf_frame_unref(&f);
    }
    pf_ops_destroy(&ops[0]);
    pf_ops_destroy(&ops[1]);
}

/* 200x100 letterboxed into 64x64: content 64x32 at pad_top 16, pad_left 0,
 * scale 0.32; rows 0..15 and 48..63 are the pad value. A 100x200 source
 * gives the transposed geometry; a ROI's transform maps back to it. */
static void test_letterbox(void)
{
    pf_ops *ops[2] = {otu_make_ops(g_stream, 1, NULL), otu_make_ops(g_stream, 0, NULL)};
    REQUIRE(ops[0] && ops[1]);
    for (int o = 0; o < 2; o++) {
        pf_frame a = {0}, b = {0};
        CHECK_OK(ppc_make_frame(&a, PF_PIXFMT_BGR24, 200, 100, 0, 0));
        CHECK_OK(ppc_make_frame(&b, PF_PIXFMT_NV12, 100, 200, 2, 0));
        const pf_frame *srcs[2] = {&a, &b};
        pf_preprocess_params p = pf_preprocess_params_default();
        p.letterbox = true;
        p.pad_value = 114;
        p.mean[0] = p.mean[1] = p.mean[2] = 0.5f;
        p.std[0] = p.std[1] = p.std[2] = 0.25f;
        pf_letterbox_info info[2];
        memset(info, 0xAB, sizeof info);
        pf_tensor t = new_dst(2, 64, 64, PF_LAYOUT_NCHW, PF_DTYPE_F32);
        CHECK_OK(pf_ops_preprocess(ops[o], srcs, NULL, 2, &t, &p, info));
        CHECK_EQ_INT(info[0].content_width, 64);
        CHECK_EQ_INT(info[0].content_height, 32);
        CHECK_EQ_INT(info[0].pad_left, 0);
        CHECK_EQ_INT(info[0].pad_top, 16);
        CHECK(fabsf(info[0].scale_x - 0.32f) < 1e-7f && fabsf(info[0].scale_y - 0.32f) < 1e-7f);
        CHECK_EQ_INT(info[1].content_width, 32);
        CHECK_EQ_INT(info[1].content_height, 64);
        CHECK_EQ_INT(info[1].pad_left, 16);
        CHECK_EQ_INT(info[1].pad_top, 0);
        float pad = expect_norm(114, 0.5, 0.25);
        long pad_bad = 0, content_pad = 0;
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < 64; y++)
                for (int x = 0; x < 64; x++) {
                    float v0 = out_at(&t, 0, c, y, x), v1 = out_at(&t, 1, c, y, x);
                    int in0 = y >= 16 && y < 48, in1 = x >= 16 && x < 48;
                    if (!in0 && v0 != pad) pad_bad++;
                    if (!in1 && v1 != pad) pad_bad++;
                    /* Random content equals the pad value only by chance. */
                    if (in0 && v0 == pad) content_pad++;
                }
        CHECK_EQ_INT(pad_bad, 0);
        CHECK(content_pad < 64 * 32 * 3 / 20);
        pf_tensor_unref(&t);

        /* ROI + letterbox: info maps destination edges back to ROI edges. */
        pf_rect rois[2] = {{10, 20, 150, 50}, {0, 0, 100, 200}};
        t = new_dst(2, 30, 20, PF_LAYOUT_NHWC, PF_DTYPE_F16);
        CHECK_OK(pf_ops_preprocess(ops[o], srcs, rois, 2, &t, &p, info));
        /* 150x50 into 30x20: s = min(0.2, 0.4) = 0.2 -> 30x10 at top 5. */
        CHECK_EQ_INT(info[0].content_width, 30);
        CHECK_EQ_INT(info[0].content_height, 10);
        CHECK_EQ_INT(info[0].pad_top, 5);
        double sx = rois[0].x + (0 - info[0].pad_left) / info[0].scale_x;
        double ex = rois[0].x + (30 - info[0].pad_left) / info[0].scale_x;
        double sy = rois[0].y + (5 - info[0].pad_top) / info[0].scale_y;
        double ey = rois[0].y + (15 - info[0].pad_top) / info[0].scale_y;
        CHECK(fabs(sx - 10) < 1e-4 && fabs(ex - 160) < 1e-4);
        CHECK(fabs(sy - 20) < 1e-4 && fabs(ey - 70) < 1e-4);
        pf_tensor_unref(&t);

        /* Without letterbox the info is the plain stretch. */
        p.letterbox = false;
        t = new_dst(2, 50, 40, PF_LAYOUT_NCHW, PF_DTYPE_F16);
        CHECK_OK(pf_ops_preprocess(ops[o], srcs, NULL, 2, &t, &p, info));
        CHECK(info[0].content_width == 50 && info[0].content_height == 40);
        CHECK(info[0].pad_left == 0 && info[0].pad_top == 0);
        CHECK(fabsf(info[0].scale_x - 0.25f) < 1e-7f && fabsf(info[0].scale_y - 0.4f) < 1e-7f);
        pf_tensor_unref(&t);
        pf_frame_unref(&a);
        pf_frame_unref(&b);
    }
    pf_ops_destroy(&ops[0]);
    pf_ops_destroy(&ops[1]);
}

/* Bad input ----------------------------------------------------------------------- */

static void test_bad_input(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ops);
    pf_frame f = {0}, g = {0}, gray = {0};
    CHECK_OK(ppc_make_frame(&f, PF_PIXFMT_RGB24, 20, 10, 0, 0));
    CHECK_OK(ppc_make_frame(&g, PF_PIXFMT_I420, 7, 5, 0, 0));
    CHECK_OK(ppc_make_frame(&gray, PF_PIXFMT_GRAY8, 8, 8, 0, 0));
    const pf_frame *srcs[2] = {&f, &g};
    pf_preprocess_params p = pf_preprocess_params_default();
    pf_tensor t = new_dst(2, 8, 8, PF_LAYOUT_NCHW, PF_DTYPE_F32);
    CHECK_OK(pf_ops_preprocess(ops, srcs, NULL, 2, &t, &p, NULL));
    CHECK_OK(pf_ops_preprocess(ops, srcs, NULL, 2, &t, NULL, NULL)); /* NULL = defaults */

    EXPECT_ERR(pf_ops_preprocess(NULL, srcs, NULL, 2, &t, &p, NULL), PF_ERR_INVALID, "ops is NULL");
    EXPECT_ERR(pf_ops_preprocess(ops, NULL, NULL, 2, &t, &p, NULL), PF_ERR_INVALID, "srcs is NULL");
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, NULL, 2, NULL, &p, NULL), PF_ERR_INVALID, "dst is NULL");
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, NULL, 0, &t, &p, NULL), PF_ERR_INVALID, "n is 0");
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, NULL, -3, &t, &p, NULL), PF_ERR_INVALID, "n is -3");
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, NULL, 1, &t, &p, NULL), PF_ERR_INVALID,
               "n is 1 but dst holds 2 frames");
    const pf_frame *with_null[2] = {&f, NULL};
    EXPECT_ERR(pf_ops_preprocess(ops, with_null, NULL, 2, &t, &p, NULL), PF_ERR_INVALID,
               "srcs[1] is NULL");
    const pf_frame *with_gray[2] = {&gray, &f};
    EXPECT_ERR(pf_ops_preprocess(ops, with_gray, NULL, 2, &t, &p, NULL), PF_ERR_UNSUPPORTED,
               "srcs[0] is gray8");
    pf_frame bogus = f;
    bogus.format = (pf_pixfmt)42;
    const pf_frame *with_bogus[2] = {&f, &bogus};
    EXPECT_ERR(pf_ops_preprocess(ops, with_bogus, NULL, 2, &t, &p, NULL), PF_ERR_INVALID,
               "srcs[1] has unknown pixel format 42");
    bogus = f;
    bogus.stride[0] = 59;
    EXPECT_ERR(pf_ops_preprocess(ops, with_bogus, NULL, 2, &t, &p, NULL), PF_ERR_INVALID,
               "srcs[1] plane 0 stride 59 < row of 60 bytes");
    bogus = f;
    bogus.data[0] = NULL;
    EXPECT_ERR(pf_ops_preprocess(ops, with_bogus, NULL, 2, &t, &p, NULL), PF_ERR_INVALID,
               "srcs[1] plane 0 data is NULL");
    bogus = f;
    bogus.height = 11; /* one row more than its buffer holds */
    EXPECT_ERR(pf_ops_preprocess(ops, with_bogus, NULL, 2, &t, &p, NULL), PF_ERR_INVALID,
               "srcs[1] plane 0 needs 660 bytes");
    bogus = f;
    bogus.width = 0;
    EXPECT_ERR(pf_ops_preprocess(ops, with_bogus, NULL, 2, &t, &p, NULL), PF_ERR_INVALID,
               "srcs[1] has size 0x10");

    pf_rect rois[2] = {{0, 0, 20, 10}, {5, 1, 3, 4}};
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, rois, 2, &t, &p, NULL), PF_ERR_INVALID,
               "rois[1] {x 5, y 1, 3x4} is not inside srcs[1] (7x5)");
    rois[1] = (pf_rect){-1, 0, 2, 2};
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, rois, 2, &t, &p, NULL), PF_ERR_INVALID,
               "rois[1] {x -1, y 0, 2x2} is not inside");
    rois[1] = (pf_rect){2, 2, 0, 3};
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, rois, 2, &t, &p, NULL), PF_ERR_INVALID,
               "rois[1] {x 2, y 2, 0x3} is empty");
    rois[1] = (pf_rect){0x7FFFFFFF, 0, 2, 2};
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, rois, 2, &t, &p, NULL), PF_ERR_INVALID, "not inside");
    rois[1] = (pf_rect){6, 4, 1, 1};
    CHECK_OK(pf_ops_preprocess(ops, srcs, rois, 2, &t, &p, NULL));

    /* Destination. */
    pf_tensor d3 = {0};
    int64_t s3[3] = {2, 3, 64};
    CHECK_OK(pf_tensor_alloc(&d3, PF_DTYPE_F32, 3, s3, PF_LAYOUT_NONE, NULL, NULL));
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, NULL, 2, &d3, &p, NULL), PF_ERR_INVALID,
               "dst has 3 dimensions, expected 4");
    pf_tensor_unref(&d3);
    pf_tensor bad = t;
    bad.layout = PF_LAYOUT_NONE;
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, NULL, 2, &bad, &p, NULL), PF_ERR_INVALID,
               "dst layout is");
    pf_tensor d4 = new_dst(2, 8, 8, PF_LAYOUT_NHWC, PF_DTYPE_F32);
    bad = d4;
    bad.shape[3] = 4; /* same bytes would not suffice, but the channel check comes first */
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, NULL, 2, &bad, &p, NULL), PF_ERR_INVALID,
               "dst (nhwc) has 4 channels (dimension 3), expected 3");
    pf_tensor_unref(&d4);
    pf_tensor du8 = {0};
    int64_t s4[4] = {2, 3, 8, 8};
    CHECK_OK(pf_tensor_alloc(&du8, PF_DTYPE_U8, 4, s4, PF_LAYOUT_NCHW, NULL, NULL));
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, NULL, 2, &du8, &p, NULL), PF_ERR_UNSUPPORTED,
               "dst dtype u8");
    pf_tensor_unref(&du8);
    pf_tensor wide = new_dst(2, 16, 8, PF_LAYOUT_NCHW, PF_DTYPE_F32), sliced = {0};
    CHECK_OK(pf_tensor_slice(&sliced, &wide, 3, 0, 8));
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, NULL, 2, &sliced, &p, NULL), PF_ERR_UNSUPPORTED,
               "dst is not contiguous");
    pf_tensor_unref(&sliced);
    pf_tensor_unref(&wide);
    bad = t;
    bad.data = NULL;
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, NULL, 2, &bad, &p, NULL), PF_ERR_INVALID,
               "dst data is NULL");
    bad = t;
    bad.shape[3] = 9; /* claims more than its buffer */
    bad.strides[2] = 9, bad.strides[1] = 72, bad.strides[0] = 216;
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, NULL, 2, &bad, &p, NULL), PF_ERR_INVALID,
               "dst needs 1728 bytes");

    /* Parameters. */
    pf_preprocess_params q = p;
    q.std[1] = 0.0f;
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, NULL, 2, &t, &q, NULL), PF_ERR_INVALID, "std[1] is 0");
    q = p;
    q.std[2] = NAN;
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, NULL, 2, &t, &q, NULL), PF_ERR_INVALID, "std[2] is nan");
    q = p;
    q.mean[0] = INFINITY;
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, NULL, 2, &t, &q, NULL), PF_ERR_INVALID, "mean[0] is inf");
    q = p;
    q.interp = (pf_interp)7;
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, NULL, 2, &t, &q, NULL), PF_ERR_INVALID, "interp 7");
    q = p;
    q.pad_value = 300;
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, NULL, 2, &t, &q, NULL), PF_ERR_INVALID,
               "pad_value 300 outside 0..255");
    q = p;
    q.matrix = (pf_yuv_matrix)5;
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, NULL, 2, &t, &q, NULL), PF_ERR_INVALID, "matrix 5");
    q = p;
    q.range = (pf_yuv_range)-1;
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, NULL, 2, &t, &q, NULL), PF_ERR_INVALID, "range -1");

    /* Memory another device owns is not readable by the CPU context. A
     * stand-in device record is enough: only its type and name are read. */
    pf_buffer *devbuf = otu_fake_gpu_buffer(f.data[0], f.stride[0] * 10, 7);
    pf_frame onfake = {0};
    CHECK_OK(pf_frame_wrap(&onfake, PF_PIXFMT_RGB24, 20, 10, devbuf, 0, NULL));
    const pf_frame *with_fake[2] = {&f, &onfake};
    EXPECT_ERR(pf_ops_preprocess(ops, with_fake, NULL, 2, &t, &p, NULL), PF_ERR_UNSUPPORTED,
               "srcs[1] plane 0 is device memory of cuda:7, not readable by the CPU context");
    pf_tensor ondev = {0};
    CHECK_OK(pf_tensor_wrap(&ondev, devbuf, 0, PF_DTYPE_F16, 4, (int64_t[4]){1, 3, 2, 2}, NULL,
                            PF_LAYOUT_NCHW));
    EXPECT_ERR(pf_ops_preprocess(ops, srcs, NULL, 1, &ondev, &p, NULL), PF_ERR_UNSUPPORTED,
               "dst is device memory of cuda:7");
    pf_tensor_unref(&ondev);
    pf_frame_unref(&onfake);
    pf_buffer_unref(&devbuf);

    pf_tensor_unref(&t);
    pf_frame_unref(&f);
    pf_frame_unref(&g);
    pf_frame_unref(&gray);
    pf_ops_destroy(&ops);
}

int main(void)
{
    pf_test_seed(20261121);
    if (!(g_stream = otu_cpu_stream())) return 1;
    PF_RUN(test_random_vs_reference);
    PF_RUN(test_simd_levels);
    PF_RUN(test_shapes_and_chunks);
    PF_RUN(test_f16_is_rounded_f32);
    PF_RUN(test_constant_colour);
    PF_RUN(test_yuv_known);
    PF_RUN(test_known_resizes);
    PF_RUN(test_letterbox);
    PF_RUN(test_bad_input);
    printf("CPU path vs reference: %ld values, worst f32 |diff| / bound %.3f, worst f16 %d ulp\n",
           g_stats.values, g_stats.worst_f32, g_stats.worst_ulps);
    pf_stream_destroy(&g_stream);
    return pf_test_finish();
}
