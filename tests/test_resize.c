#define _DEFAULT_SOURCE /* mmap flags, sysconf */
/* pf_ops_resize and pf_ops_resize_mask on the CPU: the multi-threaded path
 * against the C reference on random inputs (every format and interpolation,
 * 1x1 and odd sizes, padded strides, unaligned starts, up and down and mixed
 * axes), extreme scale factors (1920 -> 1, 1 -> 1920, 7680 -> 3), the
 * benchmark's 1080p shapes on a 3-thread pool, masks of several leading
 * shapes, known values worked out by hand, and bad input with its messages.
 *
 * Tolerance: none. u8 output must be bit-exact with the reference (ops.h),
 * and f32 masks are too: the CPU path performs the reference's float
 * operations in the reference's order (src/ops/resize.h), so any difference
 * at all is a bug (a wrong tap, weight or order), not rounding noise. The
 * bytes between rows (stride padding) must be left untouched. */
#include "guard_page.h"
#include "ops_test_util.h"

#include "device/backend.h"

#include <unistd.h>

#include "core/cpu_features.h"

static pf_stream *g_stream;

static const pf_pixfmt k_formats[] = {PF_PIXFMT_RGB24, PF_PIXFMT_BGR24, PF_PIXFMT_RGBA,
                                      PF_PIXFMT_GRAY8, PF_PIXFMT_NV12, PF_PIXFMT_I420};
#define NFMT 6

/* Reference and CPU path on one case: identical destination buffers. */
static void compare(pf_ops *ref, pf_ops *cpu, const pf_frame *src, int dw, int dh,
                    pf_interp interp, const char *label)
{
    pf_frame a = {0}, b = {0};
    const size_t offset = (size_t)pf_test_rand_range(0, 3);
    CHECK_OK(otu_make_frame(&a, src->format, dw, dh, 5, offset, OTU_RANDOM));
    CHECK_OK(otu_clone_frame(&b, &a));
    pf_status sa = pf_ops_resize(ref, src, &a, interp), sb = pf_ops_resize(cpu, src, &b, interp);
    CHECK_OK(sa);
    CHECK_OK(sb);
    if (sa == PF_OK && sb == PF_OK && !otu_same_bytes(&a, &b, label)) {
        fprintf(stderr, "  %s: %s %dx%d -> %dx%d interp %d\n", label, pf_pixfmt_name(src->format),
                src->width, src->height, dw, dh, (int)interp);
        CHECK(!"bit-exact");
    }
    pf_frame_unref(&a);
    pf_frame_unref(&b);
}

static void test_random_vs_reference(void)
{
    pf_ops *ref = otu_make_ops(g_stream, 1, NULL), *cpu = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ref && cpu);
    for (int it = 0; it < 60; it++) {
        int sw = (int)pf_test_rand_range(1, 50), sh = (int)pf_test_rand_range(1, 40);
        int dw = (int)pf_test_rand_range(1, 50), dh = (int)pf_test_rand_range(1, 40);
        if (it < 4) sw = sh = 1;
        if (it >= 4 && it < 8) dw = dh = 1;
        for (int f = 0; f < NFMT; f++) {
            pf_frame src = {0};
            CHECK_OK(otu_make_frame(&src, k_formats[f], sw, sh, 6, (size_t)(it % 5), OTU_RANDOM));
            for (int interp = 0; interp < 3; interp++) {
                char label[64];
                snprintf(label, sizeof label, "case %d", it);
                compare(ref, cpu, &src, dw, dh, (pf_interp)interp, label);
            }
            pf_frame_unref(&src);
        }
    }
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cpu);
}

/* The SIMD bilinear kernels (src/cpu/simd_resize.c: 16 values a block, a
 * 128-byte window per block with AVX-512 VBMI, gathers with AVX2, scalar
 * blocks for steeper downscales and row tails) at every level this CPU
 * has, the scalar path included, against the reference: u8 formats of 1,
 * 2 (NV12's UV), 3 and 4 channels, destination widths around the vector
 * width, upscales, mild and steep (> 7x) downscales, 1-pixel sources and
 * destinations, padded strides. Tolerance: none (bit-exact). */
static void test_simd_levels(void)
{
    pf_threadpool *pool3 = otu_make_pool(3);
    pf_ops *ref = otu_make_ops(g_stream, 1, NULL), *cpu = otu_make_ops(g_stream, 0, NULL),
           *cpu3 = otu_make_ops(g_stream, 0, pool3);
    REQUIRE(ref && cpu && cpu3);
    static const int sizes[][4] = {
        {1, 1, 17, 3},     {2, 3, 1, 1},    {16, 4, 17, 5},   {33, 9, 16, 4},
        {100, 7, 33, 12},  {64, 20, 63, 9}, {300, 30, 17, 7}, {450, 11, 40, 5},
        {1920, 8, 512, 3}, {97, 5, 200, 11}};
    static const pf_pixfmt fmts[] = {PF_PIXFMT_RGB24, PF_PIXFMT_RGBA, PF_PIXFMT_GRAY8,
                                     PF_PIXFMT_NV12};
    const int top = pf_cpu_simd_detected();
    for (int level = PF_SIMD_NONE; level <= top; level++) {
        pf_cpu_simd_cap(level);
        for (int k = 0; k < (int)(sizeof sizes / sizeof sizes[0]); k++)
            for (int f = 0; f < 4; f++) {
                pf_frame src = {0};
                CHECK_OK(otu_make_frame(&src, fmts[f], sizes[k][0], sizes[k][1],
                                        (size_t)pf_test_rand_range(0, 9),
                                        (size_t)pf_test_rand_range(0, 5), OTU_RANDOM));
                char label[96];
                snprintf(label, sizeof label, "simd %s case %d", pf_cpu_simd_name(level), k);
                compare(ref, k & 1 ? cpu3 : cpu, &src, sizes[k][2], sizes[k][3],
                        PF_INTERP_BILINEAR, label);
                pf_frame_unref(&src);
            }
    }
    pf_cpu_simd_cap(-1);
    printf("  simd levels checked: none .. %s\n", pf_cpu_simd_name(top));
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cpu);
    pf_ops_destroy(&cpu3);
    pf_threadpool_destroy(&pool3);
}

/* The bilinear kernels never read past a source image that ends at a page
 * boundary (AVX-512 masked window loads, AVX2 gathers only for the values
 * whose 4-byte reads stay inside the row): 1, 3 and 4 channels, up- and
 * downscales, at every level, against the reference. */
static void test_simd_source_end(void)
{
    pf_ops *ref = otu_make_ops(g_stream, 1, NULL), *cpu = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ref && cpu);
    static const pf_pixfmt fmts[] = {PF_PIXFMT_RGB24, PF_PIXFMT_RGBA, PF_PIXFMT_GRAY8};
    static const int sizes[][4] = {{37, 5, 16, 3}, {37, 5, 80, 9}, {200, 3, 33, 2}, {3, 2, 50, 4}};
    const int top = pf_cpu_simd_detected();
    for (int level = PF_SIMD_NONE; level <= top; level++) {
        pf_cpu_simd_cap(level);
        for (int f = 0; f < 3; f++)
            for (int k = 0; k < 4; k++) {
                pf_frame src = {0};
                void *map = NULL;
                size_t map_len = 0;
                CHECK_OK(guarded_frame(&src, fmts[f], sizes[k][0], sizes[k][1], &map, &map_len));
                if (!map) continue;
                compare(ref, cpu, &src, sizes[k][2], sizes[k][3], PF_INTERP_BILINEAR,
                        "simd source end");
                pf_frame_unref(&src);
                munmap(map, map_len);
            }
    }
    pf_cpu_simd_cap(-1);
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cpu);
}

/* Extreme factors and the benchmark's shapes, 1- and 3-thread pools. */
static void test_extreme_and_threads(void)
{
    pf_threadpool *pool3 = otu_make_pool(3), *pool1 = otu_make_pool(1);
    pf_ops *ref = otu_make_ops(g_stream, 1, NULL), *cpu3 = otu_make_ops(g_stream, 0, pool3),
           *cpu1 = otu_make_ops(g_stream, 0, pool1);
    REQUIRE(ref && cpu3 && cpu1);
    const struct {
        int sw, sh, dw, dh;
    } shapes[] = {{1920, 2, 1, 1}, {1, 1, 1920, 3}, {7680, 4, 3, 2}, {3, 7680, 2, 3},
                  {2, 1920, 5, 1}, {257, 129, 1023, 9}, {600, 400, 201, 133}, {97, 61, 97, 61}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int f = 0; f < NFMT; f++) {
            pf_frame src = {0};
            const int sw = shapes[s].sw, sh = shapes[s].sh;
            CHECK_OK(otu_make_frame(&src, k_formats[f], sw, sh, 4, 1, OTU_RANDOM));
            for (int interp = 0; interp < 3; interp++) {
                char label[64];
                snprintf(label, sizeof label, "shape %zu", s);
                compare(ref, (s + (size_t)interp) & 1 ? cpu1 : cpu3, &src, shapes[s].dw,
                        shapes[s].dh, (pf_interp)interp, label);
            }
            pf_frame_unref(&src);
        }
    /* 1080p RGB24 and NV12 -> 512x512, bilinear and area (the benchmark). */
    const pf_pixfmt big[] = {PF_PIXFMT_RGB24, PF_PIXFMT_NV12};
    for (int f = 0; f < 2; f++) {
        pf_frame src = {0};
        CHECK_OK(otu_make_frame(&src, big[f], 1920, 1080, 0, 0, OTU_RANDOM));
        compare(ref, cpu3, &src, 512, 512, PF_INTERP_BILINEAR, "1080p bilinear");
        compare(ref, cpu3, &src, 512, 512, PF_INTERP_AREA, "1080p area");
        pf_frame_unref(&src);
    }
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cpu3);
    pf_ops_destroy(&cpu1);
    pf_threadpool_destroy(&pool3);
    pf_threadpool_destroy(&pool1);
}

/* Known values ------------------------------------------------------------------ */

static uint8_t *px(const pf_frame *f, int plane, int x, int y, int bpp)
{
    return f->data[plane] + (size_t)y * f->stride[plane] + (size_t)x * (size_t)bpp;
}

/* GRAY8 w x 1 from values; resized to dw x 1 on ops; result in out[]. */
static void gray_row(pf_ops *ops, const int *v, int w, int dw, pf_interp interp, int *out)
{
    pf_frame s = {0}, d = {0};
    CHECK_OK(otu_make_frame(&s, PF_PIXFMT_GRAY8, w, 1, 0, 0, 0));
    CHECK_OK(otu_make_frame(&d, PF_PIXFMT_GRAY8, dw, 1, 0, 0, 0xAB));
    for (int i = 0; i < w; i++) s.data[0][i] = (uint8_t)v[i];
    CHECK_OK(pf_ops_resize(ops, &s, &d, interp));
    for (int i = 0; i < dw; i++) out[i] = d.data[0][i];
    pf_frame_unref(&s);
    pf_frame_unref(&d);
}

#define CHECK_ROW(ops, in, dw, interp, ...) \
    do { \
        const int in_[] = in, want_[] = __VA_ARGS__; \
        int got_[64]; \
        gray_row(ops, in_, (int)(sizeof in_ / sizeof in_[0]), dw, interp, got_); \
        for (int i_ = 0; i_ < (dw); i_++) CHECK_EQ_INT(got_[i_], want_[i_]); \
    } while (0)
#define V(...) {__VA_ARGS__}

static void test_known_rows(void)
{
    pf_ops *ops[2] = {otu_make_ops(g_stream, 0, NULL), otu_make_ops(g_stream, 1, NULL)};
    REQUIRE(ops[0] && ops[1]);
    for (int k = 0; k < 2; k++) {
        pf_ops *o = ops[k];
        /* Bilinear 2 -> 4: centres at -0.25 (clamped), 0.25, 0.75, 1.25. */
        CHECK_ROW(o, V(0, 100), 4, PF_INTERP_BILINEAR, {0, 25, 75, 100});
        /* Half up: 2 -> 4 of (0, 2): 0.5 -> 1, 1.5 -> 2. */
        CHECK_ROW(o, V(0, 2), 4, PF_INTERP_BILINEAR, {0, 1, 2, 2});
        /* Bilinear 4 -> 2: centres at 0.5 and 2.5 (half-pixel, not 0 and 2). */
        CHECK_ROW(o, V(0, 10, 20, 40), 2, PF_INTERP_BILINEAR, {5, 30});
        /* Nearest 2 -> 4: floor((i + 0.5) / 2): 0, 0, 1, 1. */
        CHECK_ROW(o, V(7, 9), 4, PF_INTERP_NEAREST, {7, 7, 9, 9});
        /* Nearest 4 -> 2 takes pixels 1 and 3 (floor((i + 0.5) * 2)). */
        CHECK_ROW(o, V(1, 2, 3, 4), 2, PF_INTERP_NEAREST, {2, 4});
        /* Nearest 3 -> 2: floor(0.75) = 0, floor(2.25) = 2. */
        CHECK_ROW(o, V(5, 6, 7), 2, PF_INTERP_NEAREST, {5, 7});
        /* Area, integer factors: exact means, halves round up. */
        CHECK_ROW(o, V(1, 2, 3, 4), 2, PF_INTERP_AREA, {2, 4});
        CHECK_ROW(o, V(10, 20, 31, 10, 20, 32), 2, PF_INTERP_AREA, {20, 21});
        /* Area 3 -> 2: (2 p0 + p1) / 3 and (p1 + 2 p2) / 3. */
        CHECK_ROW(o, V(30, 60, 90), 2, PF_INTERP_AREA, {40, 80});
        /* Area 5 -> 1: the mean 51.4 -> 51. */
        CHECK_ROW(o, V(0, 255, 1, 0, 1), 1, PF_INTERP_AREA, {51});
        /* Area upscale (an axis that grows) is bilinear. */
        CHECK_ROW(o, V(0, 100), 4, PF_INTERP_AREA, {0, 25, 75, 100});
        /* Same size: identity for every interpolation. */
        CHECK_ROW(o, V(3, 250, 0, 17, 255), 5, PF_INTERP_BILINEAR, {3, 250, 0, 17, 255});
        CHECK_ROW(o, V(3, 250, 0, 17, 255), 5, PF_INTERP_AREA, {3, 250, 0, 17, 255});
        CHECK_ROW(o, V(3, 250, 0, 17, 255), 5, PF_INTERP_NEAREST, {3, 250, 0, 17, 255});
    }
    pf_ops_destroy(&ops[0]);
    pf_ops_destroy(&ops[1]);
}

/* A solid colour stays solid at any size, format and interpolation. */
static void test_constant(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ops);
    for (int it = 0; it < 10; it++) {
        int sw = (int)pf_test_rand_range(1, 300), sh = (int)pf_test_rand_range(1, 200);
        int dw = (int)pf_test_rand_range(1, 300), dh = (int)pf_test_rand_range(1, 200);
        uint8_t colour[4];
        for (int c = 0; c < 4; c++) colour[c] = (uint8_t)pf_test_rand();
        if (it == 0) memset(colour, 255, 4);
        for (int f = 0; f < NFMT; f++) {
            pf_frame s = {0};
            CHECK_OK(otu_make_frame(&s, k_formats[f], sw, sh, 3, 0, 0));
            int bpp[3] = {k_formats[f] == PF_PIXFMT_RGBA ? 4 : (f < 2 ? 3 : 1),
                          k_formats[f] == PF_PIXFMT_NV12 ? 2 : 1, 1};
            for (int p = 0; p < s.num_planes; p++) {
                size_t row, rows;
                pf_pixfmt_plane_size(s.format, sw, sh, p, &row, &rows);
                for (size_t y = 0; y < rows; y++)
                    for (size_t x = 0; x < row; x++)
                        s.data[p][y * s.stride[p] + x] = colour[(x % (size_t)bpp[p] + (size_t)p) & 3];
            }
            for (int interp = 0; interp < 3; interp++) {
                pf_frame d = {0};
                CHECK_OK(otu_make_frame(&d, k_formats[f], dw, dh, 3, 0, OTU_RANDOM));
                CHECK_OK(pf_ops_resize(ops, &s, &d, (pf_interp)interp));
                int bad = 0;
                for (int p = 0; p < d.num_planes; p++) {
                    size_t row, rows;
                    pf_pixfmt_plane_size(d.format, dw, dh, p, &row, &rows);
                    for (size_t y = 0; y < rows; y++)
                        for (size_t x = 0; x < row; x++)
                            bad += d.data[p][y * d.stride[p] + x] !=
                                   colour[(x % (size_t)bpp[p] + (size_t)p) & 3];
                }
                if (bad)
                    fprintf(stderr, "  %s %dx%d -> %dx%d interp %d: %d bytes changed\n",
                            pf_pixfmt_name(s.format), sw, sh, dw, dh, interp, bad);
                CHECK_EQ_INT(bad, 0);
                pf_frame_unref(&d);
            }
            pf_frame_unref(&s);
        }
    }
    pf_ops_destroy(&ops);
}

/* 2D: area 2x2 -> 1x1 of RGB is the per-channel mean (half up); bilinear
 * 2x2 -> 3x3 centre is the mean of all four; NV12 chroma is resized at
 * chroma size (a 4x4 -> 2x2 nearest picks chroma sample (0, 0) -> (0, 0)
 * and the Y samples (1, 1), (3, 1), (1, 3), (3, 3)). */
static void test_known_2d(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ops);
    pf_frame s = {0}, d = {0};
    CHECK_OK(otu_make_frame(&s, PF_PIXFMT_RGB24, 2, 2, 2, 1, 0));
    const uint8_t v[4][3] = {{0, 10, 255}, {1, 20, 255}, {2, 30, 0}, {3, 41, 0}};
    for (int i = 0; i < 4; i++) memcpy(px(&s, 0, i & 1, i >> 1, 3), v[i], 3);
    CHECK_OK(otu_make_frame(&d, PF_PIXFMT_RGB24, 1, 1, 0, 0, 0));
    CHECK_OK(pf_ops_resize(ops, &s, &d, PF_INTERP_AREA));
    CHECK_EQ_INT(d.data[0][0], 2);   /* 1.5 -> 2 */
    CHECK_EQ_INT(d.data[0][1], 25);  /* 25.25 -> 25 */
    CHECK_EQ_INT(d.data[0][2], 128); /* 127.5 -> 128 */
    pf_frame_unref(&d);
    CHECK_OK(otu_make_frame(&d, PF_PIXFMT_RGB24, 3, 3, 1, 0, 0));
    CHECK_OK(pf_ops_resize(ops, &s, &d, PF_INTERP_BILINEAR));
    CHECK_EQ_INT(px(&d, 0, 1, 1, 3)[1], 25);
    CHECK_EQ_INT(px(&d, 0, 0, 0, 3)[1], 10); /* corners clamp to the corner pixels */
    CHECK_EQ_INT(px(&d, 0, 2, 2, 3)[1], 41);
    pf_frame_unref(&d);
    pf_frame_unref(&s);

    CHECK_OK(otu_make_frame(&s, PF_PIXFMT_NV12, 4, 4, 0, 0, 0));
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++) *px(&s, 0, x, y, 1) = (uint8_t)(10 * y + x);
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 2; x++) {
            px(&s, 1, x, y, 2)[0] = (uint8_t)(100 + 10 * y + x);
            px(&s, 1, x, y, 2)[1] = (uint8_t)(200 + 10 * y + x);
        }
    CHECK_OK(otu_make_frame(&d, PF_PIXFMT_NV12, 2, 2, 0, 0, 0));
    CHECK_OK(pf_ops_resize(ops, &s, &d, PF_INTERP_NEAREST));
    CHECK_EQ_INT(*px(&d, 0, 0, 0, 1), 11);
    CHECK_EQ_INT(*px(&d, 0, 1, 0, 1), 13);
    CHECK_EQ_INT(*px(&d, 0, 0, 1, 1), 31);
    CHECK_EQ_INT(*px(&d, 0, 1, 1, 1), 33);
    /* Chroma 2x2 -> 1x1 nearest: floor(0.5 * 2) = sample (1, 1). */
    CHECK_EQ_INT(px(&d, 1, 0, 0, 2)[0], 111);
    CHECK_EQ_INT(px(&d, 1, 0, 0, 2)[1], 211);
    pf_frame_unref(&d);
    pf_frame_unref(&s);
    pf_ops_destroy(&ops);
}

/* Masks ------------------------------------------------------------------------------ */

static pf_status make_mask(pf_tensor *t, int ndim, const int64_t *shape, float lo, float hi)
{
    memset(t, 0, sizeof *t);
    pf_status st = pf_tensor_alloc(t, PF_DTYPE_F32, ndim, shape,
                                   ndim == 4 ? PF_LAYOUT_NCHW : PF_LAYOUT_NONE, NULL, NULL);
    if (st != PF_OK) return st;
    float *d = t->data;
    for (int64_t i = 0; i < pf_tensor_numel(t); i++)
        d[i] = lo + (hi - lo) * (float)(pf_test_rand() % 1000001) / 1000000.0f;
    return PF_OK;
}

static void test_masks(void)
{
    pf_threadpool *pool3 = otu_make_pool(3);
    pf_ops *ref = otu_make_ops(g_stream, 1, NULL), *cpu = otu_make_ops(g_stream, 0, pool3);
    REQUIRE(ref && cpu);
    long values = 0;
    for (int it = 0; it < 40; it++) {
        int ndim = 2 + (int)(it % 3);
        int64_t ss[4], ds[4];
        for (int d = 0; d < ndim - 2; d++) ss[d] = ds[d] = pf_test_rand_range(1, 3);
        ss[ndim - 2] = pf_test_rand_range(1, it < 30 ? 40 : 300);
        ss[ndim - 1] = pf_test_rand_range(1, it < 30 ? 40 : 300);
        ds[ndim - 2] = pf_test_rand_range(1, it < 30 ? 40 : 300);
        ds[ndim - 1] = pf_test_rand_range(1, it < 30 ? 40 : 300);
        if (it == 0) ss[ndim - 1] = 1920, ss[ndim - 2] = 2, ds[ndim - 1] = ds[ndim - 2] = 1;
        if (it == 1) ss[ndim - 1] = ss[ndim - 2] = 1, ds[ndim - 1] = 1920, ds[ndim - 2] = 2;
        pf_tensor s, a, b;
        CHECK_OK(make_mask(&s, ndim, ss, it & 1 ? -8.0f : 0.0f, 1.0f));
        CHECK_OK(make_mask(&a, ndim, ds, 5.0f, 5.0f));
        CHECK_OK(make_mask(&b, ndim, ds, 6.0f, 6.0f));
        for (int interp = 0; interp < 3; interp++) {
            CHECK_OK(pf_ops_resize_mask(ref, &s, &a, (pf_interp)interp));
            CHECK_OK(pf_ops_resize_mask(cpu, &s, &b, (pf_interp)interp));
            const float *pa = a.data, *pb = b.data;
            int64_t n = pf_tensor_numel(&a), bad = 0;
            for (int64_t i = 0; i < n; i++)
                if (memcmp(&pa[i], &pb[i], sizeof(float))) {
                    if (!bad)
                        fprintf(stderr, "  mask case %d interp %d: element %lld %.9g vs %.9g\n", it,
                                interp, (long long)i, (double)pa[i], (double)pb[i]);
                    bad++;
                }
            CHECK_EQ_INT(bad, 0);
            values += n;
            /* Probabilities stay inside [min, max] of the source (convex
             * weights, up to float rounding). */
            if (!(it & 1))
                for (int64_t i = 0; i < n; i++) CHECK(pa[i] >= 0.0f && pa[i] <= 1.0000005f);
        }
        pf_tensor_unref(&s);
        pf_tensor_unref(&a);
        pf_tensor_unref(&b);
    }
    printf("masks: %ld f32 values bit-identical between CPU path and reference\n", values);
    /* Known: [1, 1, 2, 2] of (0, 1; 1, 0) bilinear to 4x4: the centre 2x2 is
     * 0.5 -/+ 0.125 (weights 0.75 / 0.25). */
    int64_t s22[4] = {1, 1, 2, 2}, s44[4] = {1, 1, 4, 4};
    pf_tensor s, d;
    CHECK_OK(make_mask(&s, 4, s22, 0, 0));
    CHECK_OK(make_mask(&d, 4, s44, 0, 0));
    float *sv = s.data, *dv = d.data;
    sv[1] = sv[2] = 1.0f;
    CHECK_OK(pf_ops_resize_mask(cpu, &s, &d, PF_INTERP_BILINEAR));
    CHECK(fabsf(dv[5] - 0.375f) < 1e-6f && fabsf(dv[6] - 0.625f) < 1e-6f);
    CHECK(dv[0] == 0.0f && dv[3] == 1.0f && dv[12] == 1.0f && dv[15] == 0.0f);
    pf_tensor_unref(&s);
    pf_tensor_unref(&d);
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cpu);
    pf_threadpool_destroy(&pool3);
}

/* Bad input ---------------------------------------------------------------------- */

static void test_bad_input(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ops);
    pf_frame src = {0}, dst = {0}, gray = {0};
    CHECK_OK(otu_make_frame(&src, PF_PIXFMT_RGB24, 20, 10, 0, 0, 7));
    CHECK_OK(otu_make_frame(&dst, PF_PIXFMT_RGB24, 8, 6, 0, 0, 0x5C));
    CHECK_OK(otu_make_frame(&gray, PF_PIXFMT_GRAY8, 8, 6, 0, 0, 0));
    EXPECT_ERR(pf_ops_resize(NULL, &src, &dst, PF_INTERP_AREA), PF_ERR_INVALID, "ops is NULL");
    EXPECT_ERR(pf_ops_resize(ops, NULL, &dst, PF_INTERP_AREA), PF_ERR_INVALID, "src is NULL");
    EXPECT_ERR(pf_ops_resize(ops, &src, NULL, PF_INTERP_AREA), PF_ERR_INVALID, "dst is NULL");
    EXPECT_ERR(pf_ops_resize(ops, &src, &gray, PF_INTERP_AREA), PF_ERR_INVALID,
               "src is rgb24 but dst is gray8");
    EXPECT_ERR(pf_ops_resize(ops, &src, &dst, (pf_interp)3), PF_ERR_INVALID, "interp 3");
    EXPECT_ERR(pf_ops_resize(ops, &src, &dst, (pf_interp)-1), PF_ERR_INVALID, "interp -1");
    pf_frame bad = dst;
    bad.width = 0;
    EXPECT_ERR(pf_ops_resize(ops, &src, &bad, PF_INTERP_NEAREST), PF_ERR_INVALID,
               "dst has size 0x6");
    bad = src;
    bad.height = PF_FRAME_MAX_DIM + 1;
    EXPECT_ERR(pf_ops_resize(ops, &bad, &dst, PF_INTERP_NEAREST), PF_ERR_INVALID,
               "src has size 20x65537");
    bad = src;
    bad.stride[0] = 10;
    EXPECT_ERR(pf_ops_resize(ops, &bad, &dst, PF_INTERP_NEAREST), PF_ERR_INVALID,
               "src plane 0 stride 10 < row of 60 bytes");
    bad = src;
    bad.data[0] = NULL;
    EXPECT_ERR(pf_ops_resize(ops, &bad, &dst, PF_INTERP_NEAREST), PF_ERR_INVALID,
               "src plane 0 data is NULL");
    bad = dst;
    bad.data[0] += 3;
    EXPECT_ERR(pf_ops_resize(ops, &src, &bad, PF_INTERP_NEAREST), PF_ERR_INVALID,
               "dst plane 0 needs 144 bytes");
    /* Overlap: a destination inside the source's rows. */
    pf_frame inside = {0};
    CHECK_OK(pf_frame_wrap(&inside, PF_PIXFMT_RGB24, 2, 2, src.buf[0], 100, NULL));
    EXPECT_ERR(pf_ops_resize(ops, &src, &inside, PF_INTERP_BILINEAR), PF_ERR_INVALID, "overlaps");
    pf_frame_unref(&inside);
    static uint8_t fake_mem[20 * 10 * 3];
    pf_buffer *db = otu_fake_gpu_buffer(fake_mem, sizeof fake_mem, 3);
    pf_frame ondev = {0};
    CHECK_OK(pf_frame_wrap(&ondev, PF_PIXFMT_RGB24, 20, 10, db, 0, NULL));
    EXPECT_ERR(pf_ops_resize(ops, &ondev, &dst, PF_INTERP_BILINEAR), PF_ERR_UNSUPPORTED,
               "src plane 0 is device memory of cuda:3, not readable by the CPU context");
    pf_frame_unref(&ondev);
    pf_buffer_unref(&db);
    for (int y = 0; y < 6; y++)
        for (int x = 0; x < 24; x++) CHECK_EQ_INT(dst.data[0][y * dst.stride[0] + x], 0x5C);

    /* Masks. */
    int64_t s4[4] = {2, 1, 16, 16}, d4[4] = {2, 1, 8, 8}, o4[4] = {3, 1, 8, 8};
    int64_t d3[3] = {2, 8, 8}, one[1] = {16};
    pf_tensor ms = {0}, md = {0}, mo = {0}, m3 = {0}, m1 = {0}, mu8 = {0}, slice = {0};
    CHECK_OK(pf_tensor_alloc(&ms, PF_DTYPE_F32, 4, s4, PF_LAYOUT_NCHW, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&md, PF_DTYPE_F32, 4, d4, PF_LAYOUT_NCHW, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&mo, PF_DTYPE_F32, 4, o4, PF_LAYOUT_NCHW, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&m3, PF_DTYPE_F32, 3, d3, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&m1, PF_DTYPE_F32, 1, one, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&mu8, PF_DTYPE_U8, 4, d4, PF_LAYOUT_NCHW, NULL, NULL));
    CHECK_OK(pf_tensor_slice(&slice, &ms, 3, 0, 8));
    EXPECT_ERR(pf_ops_resize_mask(NULL, &ms, &md, PF_INTERP_BILINEAR), PF_ERR_INVALID,
               "ops is NULL");
    EXPECT_ERR(pf_ops_resize_mask(ops, NULL, &md, PF_INTERP_BILINEAR), PF_ERR_INVALID,
               "src is NULL");
    EXPECT_ERR(pf_ops_resize_mask(ops, &ms, NULL, PF_INTERP_BILINEAR), PF_ERR_INVALID,
               "dst is NULL");
    EXPECT_ERR(pf_ops_resize_mask(ops, &ms, &mu8, PF_INTERP_BILINEAR), PF_ERR_UNSUPPORTED,
               "dst dtype is u8; masks must be f32");
    EXPECT_ERR(pf_ops_resize_mask(ops, &ms, &mo, PF_INTERP_BILINEAR), PF_ERR_INVALID,
               "leading dimension 0 is 2 in src but 3 in dst");
    EXPECT_ERR(pf_ops_resize_mask(ops, &ms, &m3, PF_INTERP_BILINEAR), PF_ERR_INVALID,
               "src has 4 dimensions but dst has 3");
    EXPECT_ERR(pf_ops_resize_mask(ops, &m1, &md, PF_INTERP_BILINEAR), PF_ERR_INVALID,
               "src has 1 dimensions");
    EXPECT_ERR(pf_ops_resize_mask(ops, &slice, &md, PF_INTERP_BILINEAR), PF_ERR_UNSUPPORTED,
               "src is not contiguous");
    EXPECT_ERR(pf_ops_resize_mask(ops, &ms, &md, (pf_interp)7), PF_ERR_INVALID, "interp 7");
    pf_tensor empty = md;
    empty.shape[2] = 0;
    EXPECT_ERR(pf_ops_resize_mask(ops, &ms, &empty, PF_INTERP_AREA), PF_ERR_INVALID,
               "dst has dimension 2 of size 0");
    pf_tensor alias = md;
    alias.data = ms.data;
    alias.buf = ms.buf;
    EXPECT_ERR(pf_ops_resize_mask(ops, &ms, &alias, PF_INTERP_AREA), PF_ERR_INVALID, "overlap");
    pf_tensor_unref(&ms);
    pf_tensor_unref(&md);
    pf_tensor_unref(&mo);
    pf_tensor_unref(&m3);
    pf_tensor_unref(&m1);
    pf_tensor_unref(&mu8);
    pf_tensor_unref(&slice);
    pf_frame_unref(&src);
    pf_frame_unref(&dst);
    pf_frame_unref(&gray);
    pf_ops_destroy(&ops);
}

int main(void)
{
    pf_test_seed(20261123);
    if (!(g_stream = otu_cpu_stream())) return 1;
    PF_RUN(test_random_vs_reference);
    PF_RUN(test_extreme_and_threads);
    PF_RUN(test_simd_levels);
    PF_RUN(test_simd_source_end);
    PF_RUN(test_known_rows);
    PF_RUN(test_constant);
    PF_RUN(test_known_2d);
    PF_RUN(test_masks);
    PF_RUN(test_bad_input);
    pf_stream_destroy(&g_stream);
    return pf_test_finish();
}
