/* pf_ops_convert on the CPU: the multi-threaded path against the C reference
 * on random inputs (every ordered pair of the six formats, 1x1 and odd
 * sizes, padded strides, unaligned starts, both matrices and ranges, pools
 * of 1 and 3 threads, frames big enough to be split), known values worked out
 * by hand, and bad input with its messages.
 *
 * Tolerance: none. Outputs are u8 and the CPU path must be bit-exact with the
 * reference (ops.h: "the CPU and CUDA paths are bit-exact with the
 * reference"); every visible byte of every plane is compared, and the bytes
 * between rows (stride padding) must be left untouched. */
#include "ops_test_util.h"

#include "core/cpu_features.h"
#include "device/backend.h"
#include "ops/convert.h"

static pf_stream *g_stream;

static const pf_pixfmt k_formats[] = {PF_PIXFMT_RGB24, PF_PIXFMT_BGR24, PF_PIXFMT_RGBA,
                                      PF_PIXFMT_GRAY8, PF_PIXFMT_NV12, PF_PIXFMT_I420};
#define NFMT 6
#define IS_YUV(f) ((f) == PF_PIXFMT_NV12 || (f) == PF_PIXFMT_I420)

/* Reference and CPU path from the same source into two destinations that
 * start as identical random bytes: identical buffers afterwards. */
static void compare(pf_ops *ref, pf_ops *cpu, const pf_frame *src, pf_pixfmt dfmt,
                    const pf_color_params *cp, const char *label)
{
    pf_frame a = {0}, b = {0};
    CHECK_OK(otu_make_frame(&a, dfmt, src->width, src->height, 5, (size_t)pf_test_rand_range(0, 3),
                            OTU_RANDOM));
    CHECK_OK(otu_clone_frame(&b, &a));
    pf_status sa = pf_ops_convert(ref, src, &a, cp), sb = pf_ops_convert(cpu, src, &b, cp);
    CHECK_OK(sa);
    CHECK_OK(sb);
    if (sa == PF_OK && sb == PF_OK) CHECK(otu_same_bytes(&a, &b, label));
    pf_frame_unref(&a);
    pf_frame_unref(&b);
}

static void test_random_vs_reference(void)
{
    pf_ops *ref = otu_make_ops(g_stream, 1, NULL), *cpu = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ref && cpu);
    for (int it = 0; it < 40; it++) {
        int w = it < 4 ? 1 + (it & 1) : (int)pf_test_rand_range(1, 41);
        int h = it < 4 ? 1 + (it >> 1) : (int)pf_test_rand_range(1, 29);
        pf_color_params cp = {(pf_yuv_matrix)(it & 1), (pf_yuv_range)((it >> 1) & 1)};
        for (int s = 0; s < NFMT; s++) {
            pf_frame src = {0};
            CHECK_OK(otu_make_frame(&src, k_formats[s], w, h, 6, (size_t)(it % 5), OTU_RANDOM));
            for (int d = 0; d < NFMT; d++) {
                char label[96];
                snprintf(label, sizeof label, "case %d %s -> %s %dx%d", it,
                         pf_pixfmt_name(k_formats[s]), pf_pixfmt_name(k_formats[d]), w, h);
                compare(ref, cpu, &src, k_formats[d], (it % 7 == 3) ? NULL : &cp, label);
            }
            pf_frame_unref(&src);
        }
    }
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cpu);
}

/* Frames large enough to be split over threads (odd sizes, so the last row
 * pair and the last chroma column are partial), pools of 3 and 1 threads. */
static void test_threads(void)
{
    pf_threadpool *pool3 = otu_make_pool(3), *pool1 = otu_make_pool(1);
    pf_ops *ref = otu_make_ops(g_stream, 1, NULL), *cpu3 = otu_make_ops(g_stream, 0, pool3),
           *cpu1 = otu_make_ops(g_stream, 0, pool1);
    REQUIRE(ref && cpu3 && cpu1);
    const int sizes[][2] = {{333, 251}, {640, 97}, {2, 30001}};
    for (int k = 0; k < 3; k++)
        for (int s = 0; s < NFMT; s++) {
            pf_frame src = {0};
            const int w = sizes[k][0], h = sizes[k][1];
            CHECK_OK(otu_make_frame(&src, k_formats[s], w, h, 9, 1, OTU_RANDOM));
            for (int d = 0; d < NFMT; d++) {
                char label[96];
                snprintf(label, sizeof label, "%s -> %s %dx%d", pf_pixfmt_name(k_formats[s]),
                         pf_pixfmt_name(k_formats[d]), sizes[k][0], sizes[k][1]);
                pf_color_params cp = {(pf_yuv_matrix)(d & 1), (pf_yuv_range)(s & 1)};
                compare(ref, (k & 1) ? cpu1 : cpu3, &src, k_formats[d], &cp, label);
            }
            pf_frame_unref(&src);
        }
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cpu3);
    pf_ops_destroy(&cpu1);
    pf_threadpool_destroy(&pool3);
    pf_threadpool_destroy(&pool1);
}

/* The SIMD kernels (src/cpu/simd_convert.c: 16 pixels a step) at every
 * level this CPU has, the scalar path (level none) included, against the
 * reference: widths around the vector width (1, 15, 16, 17, ...), odd
 * heights, padded strides and unaligned starts, both pools. Tolerance:
 * none (bit-exact, like the rest of this file). */
static void test_simd_levels(void)
{
    pf_threadpool *pool3 = otu_make_pool(3);
    pf_ops *ref = otu_make_ops(g_stream, 1, NULL), *cpu = otu_make_ops(g_stream, 0, NULL),
           *cpu3 = otu_make_ops(g_stream, 0, pool3);
    REQUIRE(ref && cpu && cpu3);
    static const int widths[] = {1, 2, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 100, 161};
    static const int heights[] = {1, 2, 3, 8, 67};
    static const pf_pixfmt srcs[] = {PF_PIXFMT_NV12, PF_PIXFMT_I420};
    const int top = pf_cpu_simd_detected();
    for (int level = PF_SIMD_NONE; level <= top; level++) {
        pf_cpu_simd_cap(level);
        for (int wi = 0; wi < (int)(sizeof widths / sizeof widths[0]); wi++)
            for (int hi = 0; hi < (int)(sizeof heights / sizeof heights[0]); hi++)
                for (int s = 0; s < 2; s++) {
                    const int w = widths[wi], h = heights[hi];
                    pf_frame src = {0};
                    CHECK_OK(otu_make_frame(&src, srcs[s], w, h, (size_t)pf_test_rand_range(0, 9),
                                            (size_t)pf_test_rand_range(0, 7), OTU_RANDOM));
                    for (int d = 0; d < NFMT; d++) {
                        char label[96];
                        snprintf(label, sizeof label, "simd %s: %s -> %s %dx%d",
                                 pf_cpu_simd_name(level), pf_pixfmt_name(srcs[s]),
                                 pf_pixfmt_name(k_formats[d]), w, h);
                        pf_color_params cp = {(pf_yuv_matrix)((wi + d) & 1),
                                              (pf_yuv_range)((hi + s) & 1)};
                        compare(ref, (wi + hi) & 1 ? cpu3 : cpu, &src, k_formats[d], &cp, label);
                    }
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

/* Known values ------------------------------------------------------------------ */

static uint8_t *px(const pf_frame *f, int plane, int x, int y, int bpp)
{
    return f->data[plane] + (size_t)y * f->stride[plane] + (size_t)x * (size_t)bpp;
}

/* Sets every pixel of a packed/gray frame to (r, g, b) (gray: r). */
static void fill_rgb(pf_frame *f, int r, int g, int b)
{
    for (int y = 0; y < f->height; y++)
        for (int x = 0; x < f->width; x++) {
            switch (f->format) {
            case PF_PIXFMT_GRAY8: *px(f, 0, x, y, 1) = (uint8_t)r; break;
            case PF_PIXFMT_BGR24: {
                uint8_t *q = px(f, 0, x, y, 3);
                q[0] = (uint8_t)b, q[1] = (uint8_t)g, q[2] = (uint8_t)r;
                break;
            }
            default: {
                uint8_t *q = px(f, 0, x, y, f->format == PF_PIXFMT_RGBA ? 4 : 3);
                q[0] = (uint8_t)r, q[1] = (uint8_t)g, q[2] = (uint8_t)b;
                if (f->format == PF_PIXFMT_RGBA) q[3] = 17;
                break;
            }
            }
        }
}

static void fill_yuv(pf_frame *f, int Y, int U, int V)
{
    for (int y = 0; y < f->height; y++) memset(px(f, 0, 0, y, 1), Y, (size_t)f->width);
    for (int y = 0; y < (f->height + 1) / 2; y++)
        for (int x = 0; x < (f->width + 1) / 2; x++) {
            if (f->format == PF_PIXFMT_NV12) {
                px(f, 1, x, y, 2)[0] = (uint8_t)U;
                px(f, 1, x, y, 2)[1] = (uint8_t)V;
            } else {
                *px(f, 1, x, y, 1) = (uint8_t)U;
                *px(f, 2, x, y, 1) = (uint8_t)V;
            }
        }
}

/* Every pixel of frame f equal to pixel (0, 0) (all planes). */
static int is_constant(const pf_frame *f)
{
    for (int p = 0; p < f->num_planes; p++) {
        size_t row, rows;
        pf_pixfmt_plane_size(f->format, f->width, f->height, p, &row, &rows);
        int bpp = f->format == PF_PIXFMT_RGBA ? 4 : (f->format == PF_PIXFMT_RGB24 ||
                                                     f->format == PF_PIXFMT_BGR24) ? 3
                                                  : (f->format == PF_PIXFMT_NV12 && p == 1) ? 2
                                                                                             : 1;
        for (size_t y = 0; y < rows; y++)
            for (size_t x = 0; x < row; x++)
                if (f->data[p][y * f->stride[p] + x] != f->data[p][x % (size_t)bpp]) return 0;
    }
    return 1;
}

/* A solid colour stays solid through every conversion (odd sizes included:
 * edge chroma blocks average fewer pixels of the same colour). */
static void test_constant_colour(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 0, NULL), *ref = otu_make_ops(g_stream, 1, NULL);
    REQUIRE(ops && ref);
    for (int it = 0; it < 12; it++) {
        int w = (int)pf_test_rand_range(1, 300), h = (int)pf_test_rand_range(1, 120);
        int r = (int)pf_test_rand_range(0, 255), g = (int)pf_test_rand_range(0, 255),
            b = (int)pf_test_rand_range(0, 255);
        for (int s = 0; s < NFMT; s++) {
            pf_frame src = {0};
            CHECK_OK(otu_make_frame(&src, k_formats[s], w, h, 3, 0, 0));
            if (IS_YUV(k_formats[s])) fill_yuv(&src, r, g, b);
            else fill_rgb(&src, r, g, b);
            for (int d = 0; d < NFMT; d++) {
                pf_frame dst = {0};
                CHECK_OK(otu_make_frame(&dst, k_formats[d], w, h, 3, 0, OTU_RANDOM));
                pf_color_params cp = {(pf_yuv_matrix)(it & 1), (pf_yuv_range)((it >> 1) & 1)};
                CHECK_OK(pf_ops_convert((d & 1) ? ops : ref, &src, &dst, &cp));
                if (!is_constant(&dst)) {
                    fprintf(stderr, "  %s -> %s %dx%d not constant\n", pf_pixfmt_name(k_formats[s]),
                            pf_pixfmt_name(k_formats[d]), w, h);
                    CHECK(!"constant");
                }
                pf_frame_unref(&dst);
            }
            pf_frame_unref(&src);
        }
    }
    pf_ops_destroy(&ops);
    pf_ops_destroy(&ref);
}

/* Converts a 1x1 frame (or w x h) and returns pixel (0, 0) channel bytes. */
static void convert1(pf_ops *ops, const pf_frame *src, pf_pixfmt dfmt, const pf_color_params *cp,
                     pf_frame *dst)
{
    CHECK_OK(otu_make_frame(dst, dfmt, src->width, src->height, 0, 0, 0xEE));
    CHECK_OK(pf_ops_convert(ops, src, dst, cp));
}

static void test_gray_round_trip(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ops);
    /* All 256 levels in one 256x1 row; through each packed format and back. */
    pf_frame g = {0};
    CHECK_OK(otu_make_frame(&g, PF_PIXFMT_GRAY8, 256, 3, 2, 1, 0));
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 256; x++) *px(&g, 0, x, y, 1) = (uint8_t)x;
    const pf_pixfmt mids[] = {PF_PIXFMT_RGB24, PF_PIXFMT_BGR24, PF_PIXFMT_RGBA};
    for (int m = 0; m < 3; m++) {
        pf_frame mid = {0}, back = {0};
        convert1(ops, &g, mids[m], NULL, &mid);
        for (int x = 0; x < 256; x++) {
            const uint8_t *q = px(&mid, 0, x, 1, mids[m] == PF_PIXFMT_RGBA ? 4 : 3);
            CHECK(q[0] == x && q[1] == x && q[2] == x);
            if (mids[m] == PF_PIXFMT_RGBA) CHECK_EQ_INT(q[3], 255);
        }
        convert1(ops, &mid, PF_PIXFMT_GRAY8, NULL, &back);
        for (int x = 0; x < 256; x++) CHECK_EQ_INT(*px(&back, 0, x, 2, 1), x);
        pf_frame_unref(&mid);
        pf_frame_unref(&back);
    }
    /* Through full-range YUV, gray comes back within 1 (one rounding on the
     * way in, one on the way out); chroma is exactly neutral. */
    for (int fi = 0; fi < 2; fi++) {
        pf_color_params cp = {PF_YUV_BT709, PF_YUV_FULL};
        pf_frame mid = {0}, back = {0};
        convert1(ops, &g, fi ? PF_PIXFMT_I420 : PF_PIXFMT_NV12, &cp, &mid);
        for (int x = 0; x < 128; x++) {
            if (fi) {
                CHECK_EQ_INT(*px(&mid, 1, x, 0, 1), 128);
                CHECK_EQ_INT(*px(&mid, 2, x, 1, 1), 128);
            } else {
                CHECK_EQ_INT(px(&mid, 1, x, 1, 2)[0], 128);
                CHECK_EQ_INT(px(&mid, 1, x, 1, 2)[1], 128);
            }
        }
        for (int x = 0; x < 256; x++) CHECK_EQ_INT(*px(&mid, 0, x, 0, 1), x); /* full: Y = gray */
        convert1(ops, &mid, PF_PIXFMT_GRAY8, &cp, &back);
        for (int x = 0; x < 256; x++) CHECK_EQ_INT(*px(&back, 0, x, 1, 1), x);
        pf_frame_unref(&mid);
        pf_frame_unref(&back);
    }
    pf_frame_unref(&g);
    pf_ops_destroy(&ops);
}

/* Black and white levels of every matrix and range, and textbook values. */
static void test_yuv_known(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 0, NULL), *ref = otu_make_ops(g_stream, 1, NULL);
    REQUIRE(ops && ref);
    for (int m = 0; m < 2; m++)
        for (int r = 0; r < 2; r++)
            for (int fi = 0; fi < 2; fi++) {
                pf_color_params cp = {(pf_yuv_matrix)m, (pf_yuv_range)r};
                const int lo = r == PF_YUV_LIMITED ? 16 : 0, hi = r == PF_YUV_LIMITED ? 235 : 255;
                pf_frame s = {0}, d = {0};
                CHECK_OK(otu_make_frame(&s, fi ? PF_PIXFMT_I420 : PF_PIXFMT_NV12, 3, 3, 1, 0, 0));
                fill_yuv(&s, lo, 128, 128);
                convert1(fi ? ref : ops, &s, PF_PIXFMT_RGB24, &cp, &d);
                const uint8_t *q = px(&d, 0, 2, 2, 3);
                CHECK(q[0] == 0 && q[1] == 0 && q[2] == 0);
                pf_frame_unref(&d);
                fill_yuv(&s, hi, 128, 128);
                convert1(fi ? ops : ref, &s, PF_PIXFMT_RGB24, &cp, &d);
                q = px(&d, 0, 1, 1, 3);
                CHECK(q[0] == 255 && q[1] == 255 && q[2] == 255);
                pf_frame_unref(&d);
                /* And back: black and white RGB give exactly lo/hi, 128, 128. */
                pf_frame rgb = {0}, yuv = {0};
                CHECK_OK(otu_make_frame(&rgb, PF_PIXFMT_RGB24, 2, 2, 0, 0, 255));
                convert1(ops, &rgb, PF_PIXFMT_NV12, &cp, &yuv);
                CHECK_EQ_INT(*px(&yuv, 0, 1, 1, 1), hi);
                CHECK_EQ_INT(px(&yuv, 1, 0, 0, 2)[0], 128);
                CHECK_EQ_INT(px(&yuv, 1, 0, 0, 2)[1], 128);
                pf_frame_unref(&yuv);
                fill_rgb(&rgb, 0, 0, 0);
                convert1(ref, &rgb, PF_PIXFMT_I420, &cp, &yuv);
                CHECK_EQ_INT(*px(&yuv, 0, 0, 1, 1), lo);
                CHECK_EQ_INT(*px(&yuv, 1, 0, 0, 1), 128);
                CHECK_EQ_INT(*px(&yuv, 2, 0, 0, 1), 128);
                pf_frame_unref(&yuv);
                pf_frame_unref(&rgb);
                pf_frame_unref(&s);
            }
    /* BT.601 limited primaries (the textbook table): red (81, 90, 240),
     * green (145, 54, 34), blue (41, 240, 110). */
    const int rgbv[3][3] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}};
    const int yuvv[3][3] = {{81, 90, 240}, {145, 54, 34}, {41, 240, 110}};
    for (int k = 0; k < 3; k++) {
        pf_frame rgb = {0}, yuv = {0};
        CHECK_OK(otu_make_frame(&rgb, PF_PIXFMT_BGR24, 1, 1, 0, 0, 0));
        fill_rgb(&rgb, rgbv[k][0], rgbv[k][1], rgbv[k][2]);
        convert1(ops, &rgb, PF_PIXFMT_I420, NULL, &yuv);
        CHECK_EQ_INT(*px(&yuv, 0, 0, 0, 1), yuvv[k][0]);
        CHECK_EQ_INT(*px(&yuv, 1, 0, 0, 1), yuvv[k][1]);
        CHECK_EQ_INT(*px(&yuv, 2, 0, 0, 1), yuvv[k][2]);
        pf_frame_unref(&yuv);
        pf_frame_unref(&rgb);
    }
    /* Luma of (10, 20, 30): 2.99 + 11.74 + 3.42 = 18.15 -> 18; of
     * (200, 100, 50): 59.8 + 58.7 + 5.7 = 124.2 -> 124; RGBA alpha dropped. */
    pf_frame c = {0}, g = {0};
    CHECK_OK(otu_make_frame(&c, PF_PIXFMT_RGBA, 2, 1, 0, 0, 0));
    uint8_t *q = px(&c, 0, 0, 0, 4);
    q[0] = 10, q[1] = 20, q[2] = 30, q[3] = 99, q[4] = 200, q[5] = 100, q[6] = 50, q[7] = 0;
    convert1(ops, &c, PF_PIXFMT_GRAY8, NULL, &g);
    CHECK_EQ_INT(*px(&g, 0, 0, 0, 1), 18);
    CHECK_EQ_INT(*px(&g, 0, 1, 0, 1), 124);
    pf_frame_unref(&g);
    /* RGBA -> BGR24 -> RGBA: channels swapped and back, alpha 255. */
    pf_frame bgr = {0}, back = {0};
    convert1(ops, &c, PF_PIXFMT_BGR24, NULL, &bgr);
    q = px(&bgr, 0, 0, 0, 3);
    CHECK(q[0] == 30 && q[1] == 20 && q[2] == 10 && q[3] == 50 && q[4] == 100 && q[5] == 200);
    convert1(ops, &bgr, PF_PIXFMT_RGBA, NULL, &back);
    q = px(&back, 0, 0, 0, 4);
    CHECK(q[0] == 10 && q[1] == 20 && q[2] == 30 && q[3] == 255 && q[7] == 255);
    pf_frame_unref(&bgr);
    pf_frame_unref(&back);
    pf_frame_unref(&c);
    pf_ops_destroy(&ops);
    pf_ops_destroy(&ref);
}

/* 3x3 RGB -> I420: chroma block (1, 1) is the corner pixel alone, (1, 0) the
 * mean of the two right-edge pixels of rows 0-1 (mean of (0,0,0) and
 * (255,255,255) is grey 127.5: U = V = 128). NV12 <-> I420 moves samples. */
static void test_chroma_blocks(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ops);
    pf_frame rgb = {0}, a = {0}, b = {0}, c = {0};
    CHECK_OK(otu_make_frame(&rgb, PF_PIXFMT_RGB24, 3, 3, 2, 0, 0));
    uint8_t *q = px(&rgb, 0, 2, 2, 3);
    q[0] = 255, q[1] = 0, q[2] = 0;                /* corner: pure red */
    q = px(&rgb, 0, 2, 0, 3);
    q[0] = q[1] = q[2] = 255;                      /* right edge: white over black */
    convert1(ops, &rgb, PF_PIXFMT_I420, NULL, &a);
    CHECK_EQ_INT(*px(&a, 1, 1, 1, 1), 90);
    CHECK_EQ_INT(*px(&a, 2, 1, 1, 1), 240);
    CHECK_EQ_INT(*px(&a, 1, 1, 0, 1), 128);
    CHECK_EQ_INT(*px(&a, 2, 1, 0, 1), 128);
    CHECK_EQ_INT(*px(&a, 1, 0, 0, 1), 128);
    CHECK_EQ_INT(*px(&a, 0, 2, 2, 1), 81);
    CHECK_EQ_INT(*px(&a, 0, 2, 0, 1), 235);
    CHECK_EQ_INT(*px(&a, 0, 0, 0, 1), 16);
    /* Random I420 -> NV12 -> I420 is the identity; samples land in place. */
    pf_frame_unref(&a);
    CHECK_OK(otu_make_frame(&a, PF_PIXFMT_I420, 7, 5, 3, 1, OTU_RANDOM));
    convert1(ops, &a, PF_PIXFMT_NV12, NULL, &b);
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 4; x++) {
            CHECK_EQ_INT(px(&b, 1, x, y, 2)[0], *px(&a, 1, x, y, 1));
            CHECK_EQ_INT(px(&b, 1, x, y, 2)[1], *px(&a, 2, x, y, 1));
        }
    convert1(ops, &b, PF_PIXFMT_I420, NULL, &c);
    for (int p = 0; p < 3; p++)
        for (int y = 0; y < (p ? 3 : 5); y++)
            CHECK(memcmp(px(&a, p, 0, y, 1), px(&c, p, 0, y, 1), p ? 4 : 7) == 0);
    pf_frame_unref(&a);
    pf_frame_unref(&b);
    pf_frame_unref(&c);
    pf_frame_unref(&rgb);
    pf_ops_destroy(&ops);
}

/* RGB -> NV12 -> RGB of smooth content comes back close (chroma is shared by
 * 2x2 blocks, so only content constant over blocks is checked): within 2. */
static void test_yuv_round_trip(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ops);
    for (int m = 0; m < 2; m++) {
        pf_color_params cp = {(pf_yuv_matrix)m, PF_YUV_FULL};
        pf_frame rgb = {0}, yuv = {0}, back = {0};
        CHECK_OK(otu_make_frame(&rgb, PF_PIXFMT_RGB24, 64, 64, 0, 0, 0));
        for (int y = 0; y < 64; y++)
            for (int x = 0; x < 64; x++) {
                uint8_t *q = px(&rgb, 0, x, y, 3);
                q[0] = (uint8_t)(4 * (x / 2) * 2), q[1] = (uint8_t)(4 * (y / 2) * 2),
                q[2] = (uint8_t)(((x / 2) * 16 + (y / 2) * 8) & 255);
            }
        convert1(ops, &rgb, PF_PIXFMT_NV12, &cp, &yuv);
        convert1(ops, &yuv, PF_PIXFMT_RGB24, &cp, &back);
        int worst = 0;
        for (int y = 0; y < 64; y++)
            for (int x = 0; x < 64 * 3; x++) {
                int d = abs(px(&rgb, 0, 0, y, 3)[x] - px(&back, 0, 0, y, 3)[x]);
                if (d > worst) worst = d;
            }
        CHECK(worst <= 2);
        pf_frame_unref(&rgb);
        pf_frame_unref(&yuv);
        pf_frame_unref(&back);
    }
    pf_ops_destroy(&ops);
}

/* A format to itself is a copy (both contexts), padding untouched. */
static void test_same_format_copy(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 0, NULL), *ref = otu_make_ops(g_stream, 1, NULL);
    REQUIRE(ops && ref);
    for (int s = 0; s < NFMT; s++) {
        pf_frame src = {0}, a = {0}, b = {0};
        CHECK_OK(otu_make_frame(&src, k_formats[s], 13, 7, 4, 2, OTU_RANDOM));
        CHECK_OK(otu_make_frame(&a, k_formats[s], 13, 7, 4, 0, 0x33));
        CHECK_OK(otu_clone_frame(&b, &a));
        CHECK_OK(pf_ops_convert(ops, &src, &a, NULL));
        CHECK_OK(pf_ops_convert(ref, &src, &b, NULL));
        CHECK(otu_same_bytes(&a, &b, "same format"));
        for (int p = 0; p < src.num_planes; p++) {
            size_t row, rows;
            pf_pixfmt_plane_size(src.format, 13, 7, p, &row, &rows);
            for (size_t y = 0; y < rows; y++) {
                CHECK(memcmp(a.data[p] + y * a.stride[p], src.data[p] + y * src.stride[p], row) ==
                      0);
                for (size_t x = row; x < a.stride[p] && y + 1 < rows; x++)
                    CHECK_EQ_INT(a.data[p][y * a.stride[p] + x], 0x33);
            }
        }
        pf_frame_unref(&src);
        pf_frame_unref(&a);
        pf_frame_unref(&b);
    }
    pf_ops_destroy(&ops);
    pf_ops_destroy(&ref);
}

/* Every (Y, U, V) triple through YUV -> RGB24, and every (R, G, B) through
 * RGB24 -> NV12 luma and -> GRAY8, against the reference's per-pixel formulas
 * (pf_cv_yuv_to_rgb, pf_cv_encode, pf_cv_luma in src/ops/convert.h): the CPU
 * path's tabulated products must give the same bytes for all 2^24 inputs,
 * for `combos` matrix/range pairs. A 4096x4096 frame holds each triple once:
 * 2x2 block i carries chroma (U, V) = (i >> 14, (i >> 6) & 255) and the four
 * luma values 4 (i & 63) + 0..3; the RGB frame holds pixel p = (r, g, b) =
 * (p >> 16, (p >> 8) & 255, p & 255). */
static void test_exhaustive(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ops);
    enum { S = 4096 };
    pf_frame yuv = {0}, rgb = {0}, out = {0}, nv = {0}, gray = {0};
    CHECK_OK(pf_frame_alloc(&yuv, PF_PIXFMT_I420, S, S, NULL, NULL));
    CHECK_OK(pf_frame_alloc(&rgb, PF_PIXFMT_RGB24, S, S, NULL, NULL));
    CHECK_OK(pf_frame_alloc(&out, PF_PIXFMT_RGB24, S, S, NULL, NULL));
    CHECK_OK(pf_frame_alloc(&nv, PF_PIXFMT_NV12, S, S, NULL, NULL));
    CHECK_OK(pf_frame_alloc(&gray, PF_PIXFMT_GRAY8, S, S, NULL, NULL));
    REQUIRE(yuv.data[0] && rgb.data[0] && out.data[0] && nv.data[0] && gray.data[0]);
    for (int by = 0; by < S / 2; by++)
        for (int bx = 0; bx < S / 2; bx++) {
            int i = by * (S / 2) + bx;
            *px(&yuv, 1, bx, by, 1) = (uint8_t)(i >> 14);
            *px(&yuv, 2, bx, by, 1) = (uint8_t)((i >> 6) & 255);
            for (int k = 0; k < 4; k++)
                *px(&yuv, 0, 2 * bx + (k & 1), 2 * by + (k >> 1), 1) = (uint8_t)(4 * (i & 63) + k);
        }
    for (int y = 0; y < S; y++)
        for (int x = 0; x < S; x++) {
            int p = y * S + x;
            uint8_t *q = px(&rgb, 0, x, y, 3);
            q[0] = (uint8_t)(p >> 16), q[1] = (uint8_t)(p >> 8), q[2] = (uint8_t)p;
        }
    CHECK_OK(pf_ops_convert(ops, &rgb, &gray, NULL));
    long bad = 0;
    for (int y = 0; y < S; y++)
        for (int x = 0; x < S; x++) {
            const uint8_t *q = px(&rgb, 0, x, y, 3);
            bad += *px(&gray, 0, x, y, 1) != pf_cv_luma(q[0], q[1], q[2]);
        }
    CHECK_EQ_INT(bad, 0);
    for (int combo = 0; combo < 4; combo++) {
        pf_color_params cp = {(pf_yuv_matrix)(combo & 1), (pf_yuv_range)(combo >> 1)};
        pf_yuv_coeffs_t k;
        pf_yuv_coeffs(cp.matrix, cp.range, &k);
        CHECK_OK(pf_ops_convert(ops, &yuv, &out, &cp));
        CHECK_OK(pf_ops_convert(ops, &rgb, &nv, &cp));
        long bad_rgb = 0, bad_y = 0;
        for (int y = 0; y < S; y++)
            for (int x = 0; x < S; x++) {
                uint8_t r, g, b;
                pf_cv_yuv_to_rgb(k.dec, *px(&yuv, 0, x, y, 1), *px(&yuv, 1, x / 2, y / 2, 1),
                                 *px(&yuv, 2, x / 2, y / 2, 1), &r, &g, &b);
                const uint8_t *o = px(&out, 0, x, y, 3);
                bad_rgb += o[0] != r || o[1] != g || o[2] != b;
                const uint8_t *q = px(&rgb, 0, x, y, 3);
                bad_y += *px(&nv, 0, x, y, 1) != pf_cv_encode(k.enc[0], q[0], q[1], q[2]);
            }
        if (bad_rgb || bad_y)
            fprintf(stderr, "  matrix %d range %d: %ld RGB and %ld Y mismatches\n", (int)cp.matrix,
                    (int)cp.range, bad_rgb, bad_y);
        CHECK_EQ_INT(bad_rgb, 0);
        CHECK_EQ_INT(bad_y, 0);
    }
    pf_frame_unref(&yuv);
    pf_frame_unref(&rgb);
    pf_frame_unref(&out);
    pf_frame_unref(&nv);
    pf_frame_unref(&gray);
    pf_ops_destroy(&ops);
}

/* Bad input ---------------------------------------------------------------------- */

static void test_bad_input(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ops);
    pf_frame src = {0}, dst = {0}, small = {0};
    CHECK_OK(otu_make_frame(&src, PF_PIXFMT_NV12, 20, 10, 0, 0, 7));
    CHECK_OK(otu_make_frame(&dst, PF_PIXFMT_RGB24, 20, 10, 0, 0, 0x5C));
    CHECK_OK(otu_make_frame(&small, PF_PIXFMT_RGB24, 20, 9, 0, 0, 0));
    EXPECT_ERR(pf_ops_convert(NULL, &src, &dst, NULL), PF_ERR_INVALID, "ops is NULL");
    EXPECT_ERR(pf_ops_convert(ops, NULL, &dst, NULL), PF_ERR_INVALID, "src is NULL");
    EXPECT_ERR(pf_ops_convert(ops, &src, NULL, NULL), PF_ERR_INVALID, "dst is NULL");
    EXPECT_ERR(pf_ops_convert(ops, &src, &small, NULL), PF_ERR_INVALID,
               "src is 20x10 but dst is 20x9");
    pf_color_params cp = {(pf_yuv_matrix)5, PF_YUV_FULL};
    EXPECT_ERR(pf_ops_convert(ops, &src, &dst, &cp), PF_ERR_INVALID, "matrix 5");
    cp = (pf_color_params){PF_YUV_BT709, (pf_yuv_range)-1};
    EXPECT_ERR(pf_ops_convert(ops, &src, &dst, &cp), PF_ERR_INVALID, "range -1");

    pf_frame bad = src;
    bad.format = (pf_pixfmt)42;
    EXPECT_ERR(pf_ops_convert(ops, &bad, &dst, NULL), PF_ERR_INVALID,
               "src has unknown pixel format 42");
    bad = dst;
    bad.format = PF_PIXFMT_NONE;
    EXPECT_ERR(pf_ops_convert(ops, &src, &bad, NULL), PF_ERR_INVALID,
               "dst has unknown pixel format 0");
    bad = src;
    bad.width = 0;
    EXPECT_ERR(pf_ops_convert(ops, &bad, &dst, NULL), PF_ERR_INVALID, "src has size 0x10");
    bad = dst;
    bad.height = -4;
    EXPECT_ERR(pf_ops_convert(ops, &src, &bad, NULL), PF_ERR_INVALID, "dst has size 20x-4");
    bad = src;
    bad.num_planes = 1;
    EXPECT_ERR(pf_ops_convert(ops, &bad, &dst, NULL), PF_ERR_INVALID,
               "src (nv12) has 1 planes, expected 2");
    bad = src;
    bad.data[1] = NULL;
    EXPECT_ERR(pf_ops_convert(ops, &bad, &dst, NULL), PF_ERR_INVALID, "src plane 1 data is NULL");
    bad = dst;
    bad.stride[0] = 59;
    EXPECT_ERR(pf_ops_convert(ops, &src, &bad, NULL), PF_ERR_INVALID,
               "dst plane 0 stride 59 < row of 60 bytes");
    bad = dst;
    bad.stride[0] = 61; /* the last row then ends past the buffer */
    EXPECT_ERR(pf_ops_convert(ops, &src, &bad, NULL), PF_ERR_INVALID,
               "dst plane 0 needs 609 bytes");
    bad = src;
    bad.data[1] += 1;
    EXPECT_ERR(pf_ops_convert(ops, &bad, &dst, NULL), PF_ERR_INVALID, "src plane 1 needs 100 bytes");

    /* In place (or any overlap) is refused. */
    pf_frame rgb2 = dst;
    rgb2.format = PF_PIXFMT_BGR24;
    EXPECT_ERR(pf_ops_convert(ops, &dst, &rgb2, NULL), PF_ERR_INVALID,
               "src plane 0 [");
    CHECK(strstr(pf_last_error(), "overlaps dst plane 0") != NULL);

    /* Device memory of a GPU the CPU context cannot read (a stand-in device
     * record: only its type and name are looked at). */
    static uint8_t fake_mem[20 * 10 * 3];
    pf_buffer *db = otu_fake_gpu_buffer(fake_mem, sizeof fake_mem, 7);
    pf_frame ondev = {0};
    CHECK_OK(pf_frame_wrap(&ondev, PF_PIXFMT_RGB24, 20, 10, db, 0, NULL));
    EXPECT_ERR(pf_ops_convert(ops, &src, &ondev, NULL), PF_ERR_UNSUPPORTED,
               "dst plane 0 is device memory of cuda:7, not readable by the CPU context");
    pf_frame_unref(&ondev);
    pf_buffer_unref(&db);

    /* Nothing was written by any failed call. */
    for (int y = 0; y < 10; y++)
        for (int x = 0; x < 60; x++) CHECK_EQ_INT(dst.data[0][y * dst.stride[0] + x], 0x5C);
    pf_frame_unref(&src);
    pf_frame_unref(&dst);
    pf_frame_unref(&small);
    pf_ops_destroy(&ops);
}

int main(void)
{
    pf_test_seed(20261122);
    if (!(g_stream = otu_cpu_stream())) return 1;
    PF_RUN(test_random_vs_reference);
    PF_RUN(test_threads);
    PF_RUN(test_simd_levels);
    PF_RUN(test_constant_colour);
    PF_RUN(test_gray_round_trip);
    PF_RUN(test_yuv_known);
    PF_RUN(test_chroma_blocks);
    PF_RUN(test_yuv_round_trip);
    PF_RUN(test_same_format_copy);
    PF_RUN(test_exhaustive);
    PF_RUN(test_bad_input);
    pf_stream_destroy(&g_stream);
    return pf_test_finish();
}
