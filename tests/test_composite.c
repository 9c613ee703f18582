/* pf_ops_composite on the CPU: the multi-threaded path against the C
 * reference, byte for byte (ops.h defines the result operation by operation
 * in single precision, so the tolerance is zero), on random inputs covering
 * every frame format x output format x background kind with random sizes
 * (1x1 and odd included), padded strides, odd offsets, f32 and u8 masks of
 * other sizes and shapes, both blur regimes, both YUV matrices and ranges;
 * known values worked out independently (m = 1 gives the frame, m = 0 the
 * background, alpha = mask, standard YUV values, a blurred step against the
 * Gaussian's integral, monotone and symmetric); in place; bad input with
 * its messages. */
#include "core/cpu_features.h"
#include <math.h>

#include "composite_check.h"

static pf_stream *g_stream;

/* Runs the case into a fresh dst (random bytes, so a pixel the
 * implementation forgets to write differs between two runs). */
static pf_status run_case(pf_ops *ops, const cc_case *c, pf_frame *dst)
{
    pf_status st = cc_make_frame(dst, c->out, c->w, c->h, (int)pf_test_rand_range(0, 7),
                                 (size_t)pf_test_rand_range(0, 5));
    if (st != PF_OK) return st;
    return pf_ops_composite(ops, &c->frame, &c->mask, &c->bg, dst);
}

static long g_cases, g_bytes;

/* Reference and CPU path on one case: identical bytes. */
static void compare_case(pf_ops *ref, pf_ops *cpu, const cc_case *c, const char *label)
{
    pf_frame a = {0}, b = {0};
    pf_status sa = run_case(ref, c, &a), sb = run_case(cpu, c, &b);
    CHECK_OK(sa);
    CHECK_OK(sb);
    if (sa == PF_OK && sb == PF_OK) {
        cc_diff d = cc_compare(&a, &b);
        g_cases++;
        g_bytes += d.bytes;
        CHECK_EQ_INT(d.differing, 0);
        if (d.differing) {
            cc_print_case(c, label);
            fprintf(stderr, "    %ld of %ld bytes differ (max %d), first plane %d byte %d row %d\n",
                    d.differing, d.bytes, d.max_abs, d.plane, d.x, d.y);
        }
    } else {
        cc_print_case(c, label);
    }
    pf_frame_unref(&a);
    pf_frame_unref(&b);
}

static void test_random_vs_reference(void)
{
    pf_threadpool *pool3 = otu_make_pool(3), *pool1 = otu_make_pool(1);
    pf_ops *ref = otu_make_ops(g_stream, 1, NULL), *cpu3 = otu_make_ops(g_stream, 0, pool3),
           *cpu1 = otu_make_ops(g_stream, 0, pool1);
    REQUIRE(ref && cpu3 && cpu1);
    for (int i = 0; i < CC_SWEEP(12); i++) {
        cc_case c;
        char label[64];
        int rep;
        pf_status st = cc_sweep_case(&c, i, 23, 90, &rep, label, sizeof label);
        CHECK_OK(st);
        if (st == PF_OK) compare_case(ref, (rep & 1) ? cpu1 : cpu3, &c, label);
        cc_free(&c);
    }
    printf("     %ld cases, %ld output bytes compared\n", g_cases, g_bytes);
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cpu3);
    pf_ops_destroy(&cpu1);
    pf_threadpool_destroy(&pool3);
    pf_threadpool_destroy(&pool1);
}

/* The AVX-512 kernels (src/cpu/simd_composite.c: YUV rows to floats, the
 * bilinear lerp of image backgrounds and blur upsampling, 16 values a
 * block; the blur's FIR rows of simd_mask.c) and the scalar path, at every
 * level this CPU has, against the reference over the sweep of input and
 * output formats and background kinds; sizes up to 130 pixels (several
 * blocks and a tail), odd strides. Tolerance: none (bit-exact). */
static void test_simd_levels(void)
{
    pf_threadpool *pool3 = otu_make_pool(3);
    pf_ops *ref = otu_make_ops(g_stream, 1, NULL), *cpu3 = otu_make_ops(g_stream, 0, pool3),
           *cpu = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ref && cpu3 && cpu);
    const int top = pf_cpu_simd_detected();
    for (int level = PF_SIMD_NONE; level <= top; level++) {
        pf_cpu_simd_cap(level);
        for (int i = 0; i < CC_SWEEP(3); i++) {
            cc_case c;
            char label[64];
            int rep;
            pf_status st = cc_sweep_case(&c, i, 33, 130, &rep, label, sizeof label);
            CHECK_OK(st);
            if (st == PF_OK) compare_case(ref, (rep & 1) ? cpu : cpu3, &c, label);
            cc_free(&c);
        }
    }
    pf_cpu_simd_cap(-1);
    printf("  simd levels checked: none .. %s\n", pf_cpu_simd_name(top));
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cpu3);
    pf_ops_destroy(&cpu);
    pf_threadpool_destroy(&pool3);
}

/* The benchmark's shapes, scaled down for the reference: a model-size mask
 * upsampled onto a larger frame, both blur regimes, a resized image. */
static void test_larger_shapes(void)
{
    pf_ops *ref = otu_make_ops(g_stream, 1, NULL), *cpu = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ref && cpu);
    const struct {
        pf_pixfmt in, out;
        int kind;
        float sigma;
    } cases[] = {{PF_PIXFMT_RGB24, PF_PIXFMT_RGB24, PF_BG_BLUR, 4.0f},
                 {PF_PIXFMT_RGB24, PF_PIXFMT_RGB24, PF_BG_BLUR, 32.0f},
                 {PF_PIXFMT_NV12, PF_PIXFMT_NV12, PF_BG_BLUR, 13.0f},
                 {PF_PIXFMT_NV12, PF_PIXFMT_NV12, PF_BG_COLOR, 0},
                 {PF_PIXFMT_BGR24, PF_PIXFMT_RGBA, PF_BG_IMAGE, 0},
                 {PF_PIXFMT_I420, PF_PIXFMT_RGB24, PF_BG_BLUR, 64.0f}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cc_case c;
        memset(&c, 0, sizeof c);
        c.w = 301;
        c.h = 169;
        c.out = cases[i].out;
        CHECK_OK(cc_make_frame(&c.frame, cases[i].in, c.w, c.h, 0, 0));
        CHECK_OK(cc_make_mask(&c.mask, PF_DTYPE_F32, 256, 256, 4, 0, CC_MASK_RAMP));
        c.bg.kind = (pf_background_kind)cases[i].kind;
        c.bg.blur_sigma = cases[i].sigma;
        c.bg.color[0] = 0;
        c.bg.color[1] = 177;
        c.bg.color[2] = 64;
        c.bg.matrix = PF_YUV_BT709;
        if (cases[i].kind == PF_BG_IMAGE) {
            CHECK_OK(cc_make_frame(&c.image, PF_PIXFMT_NV12, 640, 360, 0, 0));
            c.bg.image = &c.image;
        }
        char label[32];
        snprintf(label, sizeof label, "larger case %zu", i);
        compare_case(ref, cpu, &c, label);
        cc_free(&c);
    }
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cpu);
}

/* Known values --------------------------------------------------------------------- */

static void fill_packed(pf_frame *f, const uint8_t rgb[3])
{
    int bpp = f->format == PF_PIXFMT_RGBA ? 4 : 3, bgr = f->format == PF_PIXFMT_BGR24;
    for (int y = 0; y < f->height; y++)
        for (int x = 0; x < f->width; x++) {
            uint8_t *p = f->data[0] + (size_t)y * f->stride[0] + (size_t)x * bpp;
            p[0] = bgr ? rgb[2] : rgb[0];
            p[1] = rgb[1];
            p[2] = bgr ? rgb[0] : rgb[2];
        }
}

/* R, G, B of pixel (x, y) of a packed frame. */
static void px_rgb(const pf_frame *f, int x, int y, uint8_t rgb[3])
{
    int bpp = f->format == PF_PIXFMT_RGBA ? 4 : 3, bgr = f->format == PF_PIXFMT_BGR24;
    const uint8_t *p = f->data[0] + (size_t)y * f->stride[0] + (size_t)x * bpp;
    rgb[0] = bgr ? p[2] : p[0];
    rgb[1] = p[1];
    rgb[2] = bgr ? p[0] : p[2];
}

static pf_status composite_to(pf_ops *ops, const pf_frame *frame, const pf_tensor *mask,
                              const pf_background *bg, pf_pixfmt out, pf_frame *dst)
{
    pf_status st = cc_make_frame(dst, out, frame->width, frame->height, 3, 1);
    if (st != PF_OK) return st;
    return pf_ops_composite(ops, frame, mask, bg, dst);
}

/* m = 1 everywhere (f32 1.0 or u8 255, mask of another size) gives the
 * frame's bytes whatever the background; m = 0 gives the background. */
static void test_mask_one_and_zero(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ops);
    pf_frame img = {0};
    CHECK_OK(cc_make_frame(&img, PF_PIXFMT_I420, 40, 30, 2, 0));
    for (int fi = 0; fi < 3; fi++)
        for (int oi = 0; oi < 3; oi++)
            for (int kind = 1; kind < CC_NKIND; kind++) {
                pf_frame frame = {0}, out = {0}, bgf = {0};
                const int w = 37, h = 21;
                CHECK_OK(cc_make_frame(&frame, cc_in_formats[fi], w, h, 5, 3));
                CHECK_OK(cc_make_frame(&bgf, PF_PIXFMT_RGB24, w, h, 1, 0));
                pf_tensor ones = {0};
                CHECK_OK(cc_make_mask(&ones, (kind & 1) ? PF_DTYPE_U8 : PF_DTYPE_F32, 19, 50, 3, 1,
                                      CC_MASK_ONE));
                pf_background bg = {.kind = (pf_background_kind)kind, .color = {1, 2, 3},
                                    .blur_sigma = kind == PF_BG_BLUR ? 20.0f : 0.0f};
                bg.image = kind == PF_BG_FRAME ? &bgf : &img;
                CHECK_OK(composite_to(ops, &frame, &ones, &bg, cc_out_formats[oi], &out));
                long bad = 0;
                for (int y = 0; y < h; y++)
                    for (int x = 0; x < w; x++) {
                        uint8_t a[3], b[3];
                        px_rgb(&frame, x, y, a);
                        px_rgb(&out, x, y, b);
                        bad += memcmp(a, b, 3) != 0;
                        if (out.format == PF_PIXFMT_RGBA)
                            bad += out.data[0][(size_t)y * out.stride[0] + 4 * (size_t)x + 3] !=
                                   255;
                    }
                CHECK_EQ_INT(bad, 0);
                pf_frame_unref(&out);

                /* m = 0: the colour, or the FRAME background, exactly. */
                if (kind == PF_BG_COLOR || kind == PF_BG_FRAME) {
                    pf_tensor zeros = {0};
                    CHECK_OK(cc_make_mask(&zeros, (kind & 1) ? PF_DTYPE_F32 : PF_DTYPE_U8, 3, 2,
                                          2, 0, CC_MASK_ZERO));
                    CHECK_OK(composite_to(ops, &frame, &zeros, &bg, cc_out_formats[oi], &out));
                    bad = 0;
                    for (int y = 0; y < h; y++)
                        for (int x = 0; x < w; x++) {
                            uint8_t a[3], b[3];
                            if (kind == PF_BG_COLOR) memcpy(a, bg.color, 3);
                            else px_rgb(&bgf, x, y, a);
                            px_rgb(&out, x, y, b);
                            bad += memcmp(a, b, 3) != 0;
                            if (out.format == PF_PIXFMT_RGBA)
                                bad += out.data[0][(size_t)y * out.stride[0] + 4 * (size_t)x + 3] !=
                                       0;
                        }
                    CHECK_EQ_INT(bad, 0);
                    pf_frame_unref(&out);
                    pf_tensor_unref(&zeros);
                }
                pf_tensor_unref(&ones);
                pf_frame_unref(&frame);
                pf_frame_unref(&bgf);
            }
    pf_frame_unref(&img);
    pf_ops_destroy(&ops);
}

/* RGBA alpha = the mask: u8 of the frame's size byte for byte, f32 rounded
 * half up; PF_BG_NONE keeps the colour bytes. */
static void test_alpha_is_mask(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ops);
    const int w = 33, h = 17;
    pf_frame frame = {0}, out = {0};
    CHECK_OK(cc_make_frame(&frame, PF_PIXFMT_BGR24, w, h, 4, 2));
    pf_background none = {.kind = PF_BG_NONE};
    for (int dt = 0; dt < 2; dt++) {
        pf_tensor m = {0};
        CHECK_OK(cc_make_mask(&m, dt ? PF_DTYPE_F32 : PF_DTYPE_U8, w, h, 2, 3, CC_MASK_RANDOM));
        CHECK_OK(composite_to(ops, &frame, &m, &none, PF_PIXFMT_RGBA, &out));
        long bad = 0;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                uint8_t a[3], b[3];
                px_rgb(&frame, x, y, a);
                px_rgb(&out, x, y, b);
                bad += memcmp(a, b, 3) != 0;
                int alpha = out.data[0][(size_t)y * out.stride[0] + 4 * (size_t)x + 3], want;
                size_t idx = (size_t)y * (size_t)m.strides[0] + (size_t)x;
                if (dt) {
                    /* A mask of the frame's size reads its own value: the
                     * definition's float expression, exactly. */
                    float v = ((const float *)m.data)[idx];
                    v = v > 0.0f ? (v < 1.0f ? v : 1.0f) : 0.0f;
                    want = (int)(255.0f * v + 0.5f);
                    bad += alpha != want;
                } else {
                    want = ((const uint8_t *)m.data)[idx];
                    bad += alpha != want;
                }
            }
        CHECK_EQ_INT(bad, 0);
        pf_frame_unref(&out);
        pf_tensor_unref(&m);
    }
    pf_frame_unref(&frame);
    pf_ops_destroy(&ops);
}

/* NV12 output of a solid colour (m = 0), against the standard values of
 * BT.601 limited range (Y 16..235, chroma 16..240): black 16/128/128, white
 * 235/128/128, red 81/90/240, green 145/54/34, blue 41/240/110. */
static void test_nv12_known_colours(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ops);
    const struct {
        uint8_t rgb[3], y, u, v;
    } cols[] = {{{0, 0, 0}, 16, 128, 128},     {{255, 255, 255}, 235, 128, 128},
                {{255, 0, 0}, 81, 90, 240},    {{0, 255, 0}, 145, 54, 34},
                {{0, 0, 255}, 41, 240, 110}};
    pf_frame frame = {0}, out = {0};
    CHECK_OK(cc_make_frame(&frame, PF_PIXFMT_RGB24, 7, 5, 0, 0));
    pf_tensor zeros = {0};
    CHECK_OK(cc_make_mask(&zeros, PF_DTYPE_F32, 7, 5, 2, 0, CC_MASK_ZERO));
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
        pf_background bg = {.kind = PF_BG_COLOR};
        memcpy(bg.color, cols[i].rgb, 3);
        CHECK_OK(composite_to(ops, &frame, &zeros, &bg, PF_PIXFMT_NV12, &out));
        long bad = 0;
        for (int y = 0; y < 5; y++)
            for (int x = 0; x < 7; x++) bad += out.data[0][(size_t)y * out.stride[0] + x] != cols[i].y;
        for (int y = 0; y < 3; y++)
            for (int x = 0; x < 4; x++) {
                const uint8_t *uv = out.data[1] + (size_t)y * out.stride[1] + 2 * (size_t)x;
                bad += uv[0] != cols[i].u || uv[1] != cols[i].v;
            }
        if (bad)
            fprintf(stderr, "  colour %d %d %d: got Y %d U %d V %d\n", cols[i].rgb[0],
                    cols[i].rgb[1], cols[i].rgb[2], out.data[0][0], out.data[1][0],
                    out.data[1][1]);
        CHECK_EQ_INT(bad, 0);
        pf_frame_unref(&out);
    }
    pf_tensor_unref(&zeros);
    pf_frame_unref(&frame);
    pf_ops_destroy(&ops);
}

/* NV12 output = the RGB24 output of the same call converted by ops.h's
 * formulas (computed here in double: equal within rounding, and the chroma
 * of a 2x2 block (odd sizes: edge blocks of 2 or 1 pixels) from the mean). */
static void test_nv12_is_converted_rgb(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ops);
    for (int t = 0; t < 8; t++) {
        cc_case c;
        CHECK_OK(cc_random_case(&c, cc_in_formats[t % CC_NIN], PF_PIXFMT_RGB24,
                                t & 1 ? PF_BG_BLUR : PF_BG_IMAGE, 31));
        pf_frame rgb = {0}, nv = {0};
        CHECK_OK(composite_to(ops, &c.frame, &c.mask, &c.bg, PF_PIXFMT_RGB24, &rgb));
        CHECK_OK(composite_to(ops, &c.frame, &c.mask, &c.bg, PF_PIXFMT_NV12, &nv));
        double kr = c.bg.matrix == PF_YUV_BT709 ? 0.2126 : 0.299;
        double kb = c.bg.matrix == PF_YUV_BT709 ? 0.0722 : 0.114, kg = 1 - kr - kb;
        int lim = c.bg.range == PF_YUV_LIMITED;
        double ys = lim ? 219.0 / 255 : 1, cs = lim ? 224.0 / 255 : 1, yoff = lim ? 16 : 0;
        long bad = 0;
        for (int by = 0; by < (c.h + 1) / 2; by++)
            for (int bx = 0; bx < (c.w + 1) / 2; bx++) {
                double s[3] = {0, 0, 0};
                int n = 0;
                for (int y = 2 * by; y < 2 * by + 2 && y < c.h; y++)
                    for (int x = 2 * bx; x < 2 * bx + 2 && x < c.w; x++) {
                        uint8_t p[3];
                        px_rgb(&rgb, x, y, p);
                        double Y = yoff + (kr * p[0] + kg * p[1] + kb * p[2]) * ys;
                        bad += fabs(nv.data[0][(size_t)y * nv.stride[0] + x] - Y) > 0.5001;
                        for (int k = 0; k < 3; k++) s[k] += p[k];
                        n++;
                    }
                for (int k = 0; k < 3; k++) s[k] /= n;
                double L = kr * s[0] + kg * s[1] + kb * s[2];
                double U = 128 + (s[2] - L) / (2 * (1 - kb)) * cs;
                double V = 128 + (s[0] - L) / (2 * (1 - kr)) * cs;
                U = U > 255 ? 255 : U;
                V = V > 255 ? 255 : V;
                const uint8_t *uv = nv.data[1] + (size_t)by * nv.stride[1] + 2 * (size_t)bx;
                bad += fabs(uv[0] - U) > 0.5001 || fabs(uv[1] - V) > 0.5001;
            }
        if (bad) cc_print_case(&c, "nv12 vs rgb24");
        CHECK_EQ_INT(bad, 0);
        pf_frame_unref(&rgb);
        pf_frame_unref(&nv);
        cc_free(&c);
    }
    pf_ops_destroy(&ops);
}

/* PF_BG_NONE: the frame unchanged (RGB output), a YUV frame's own samples
 * (NV12 output; I420 chroma interleaved). */
static void test_none_keeps_frame(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ops);
    pf_tensor m = {0};
    CHECK_OK(cc_make_mask(&m, PF_DTYPE_F32, 5, 5, 2, 0, CC_MASK_RANDOM));
    pf_background none = {.kind = PF_BG_NONE};
    for (int fi = 0; fi < CC_NIN; fi++) {
        const int w = 13, h = 9;
        pf_frame frame = {0}, out = {0};
        CHECK_OK(cc_make_frame(&frame, cc_in_formats[fi], w, h, 3, 1));
        int yuv = fi >= 3;
        CHECK_OK(composite_to(ops, &frame, &m, &none, yuv ? PF_PIXFMT_NV12 : PF_PIXFMT_RGB24,
                              &out));
        long bad = 0;
        if (!yuv) {
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    uint8_t a[3], b[3];
                    px_rgb(&frame, x, y, a);
                    px_rgb(&out, x, y, b);
                    bad += memcmp(a, b, 3) != 0;
                }
        } else {
            for (int y = 0; y < h; y++)
                bad += memcmp(frame.data[0] + (size_t)y * frame.stride[0],
                              out.data[0] + (size_t)y * out.stride[0], (size_t)w) != 0;
            for (int y = 0; y < (h + 1) / 2; y++)
                for (int x = 0; x < (w + 1) / 2; x++) {
                    const uint8_t *uv = out.data[1] + (size_t)y * out.stride[1] + 2 * (size_t)x;
                    uint8_t u, v;
                    if (frame.format == PF_PIXFMT_NV12) {
                        u = frame.data[1][(size_t)y * frame.stride[1] + 2 * (size_t)x];
                        v = frame.data[1][(size_t)y * frame.stride[1] + 2 * (size_t)x + 1];
                    } else {
                        u = frame.data[1][(size_t)y * frame.stride[1] + (size_t)x];
                        v = frame.data[2][(size_t)y * frame.stride[2] + (size_t)x];
                    }
                    bad += uv[0] != u || uv[1] != v;
                }
        }
        CHECK_EQ_INT(bad, 0);
        pf_frame_unref(&out);
        pf_frame_unref(&frame);
    }
    pf_tensor_unref(&m);
    pf_ops_destroy(&ops);
}

/* A constant frame blurs to itself, in both regimes and at the edges. */
static void test_blur_constant(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ops);
    const float sigmas[] = {0.3f, 1.0f, 3.7f, 8.0f, 8.5f, 17.0f, 33.3f, 64.0f};
    const uint8_t col[3] = {10, 128, 250};
    pf_tensor zeros = {0};
    CHECK_OK(cc_make_mask(&zeros, PF_DTYPE_U8, 4, 4, 2, 0, CC_MASK_ZERO));
    for (size_t i = 0; i < sizeof sigmas / sizeof sigmas[0]; i++) {
        pf_frame frame = {0}, out = {0};
        CHECK_OK(cc_make_frame(&frame, PF_PIXFMT_RGB24, 77, 45, 2, 0));
        fill_packed(&frame, col);
        pf_background bg = {.kind = PF_BG_BLUR, .blur_sigma = sigmas[i]};
        CHECK_OK(composite_to(ops, &frame, &zeros, &bg, PF_PIXFMT_BGR24, &out));
        long bad = 0;
        for (int y = 0; y < 45; y++)
            for (int x = 0; x < 77; x++) {
                uint8_t b[3];
                px_rgb(&out, x, y, b);
                bad += memcmp(b, col, 3) != 0;
            }
        if (bad) fprintf(stderr, "  sigma %g: %ld pixels changed\n", (double)sigmas[i], bad);
        CHECK_EQ_INT(bad, 0);
        pf_frame_unref(&out);
        pf_frame_unref(&frame);
    }
    pf_tensor_unref(&zeros);
    pf_ops_destroy(&ops);
}

/* 255 * P(edge side) for a step at `edge` blurred by a Gaussian of sigma:
 * pixel x (centre x + 0.5) of a frame black below edge, white from it. */
static double step_blur(double x, double edge, double sigma)
{
    return 255.0 * 0.5 * erfc(-(x + 0.5 - edge) / (sigma * sqrt(2.0)));
}

/* A half-black/half-white frame (split vertically, then horizontally),
 * blurred: monotone across the edge, symmetric about it, 0 and 255 far from
 * it, and within 1.25 levels of the exact Gaussian integral (rounding 0.5,
 * the discrete kernel the rest; for sigma > 8 the box and bilinear steps
 * add at most 0.8% width: measured worst 0.94 levels at sigma 2, 0.75 at
 * 12, 0.67 at 64). */
static void test_blur_step(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ops);
    const float sigmas[] = {2.0f, 4.0f, 8.0f, 12.0f, 32.0f, 64.0f};
    pf_tensor zeros = {0};
    CHECK_OK(cc_make_mask(&zeros, PF_DTYPE_F32, 1, 1, 2, 0, CC_MASK_ZERO));
    for (size_t i = 0; i < sizeof sigmas / sizeof sigmas[0]; i++)
        for (int vertical = 0; vertical < 2; vertical++) {
            /* L divisible by every q used (3, 8, 16) and by 2q: the block grid
             * is symmetric about the split. */
            const int L = 1536, T = 6; /* along and across the split */
            const int w = vertical ? T : L, h = vertical ? L : T;
            pf_frame frame = {0}, out = {0};
            CHECK_OK(cc_make_frame(&frame, PF_PIXFMT_RGB24, w, h, 0, 0));
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    int s = vertical ? y : x;
                    memset(frame.data[0] + (size_t)y * frame.stride[0] + 3 * (size_t)x,
                           s < L / 2 ? 0 : 255, 3);
                }
            pf_background bg = {.kind = PF_BG_BLUR, .blur_sigma = sigmas[i]};
            CHECK_OK(composite_to(ops, &frame, &zeros, &bg, PF_PIXFMT_RGB24, &out));
            long bad_mono = 0, bad_sym = 0, bad_val = 0, bad_flat = 0;
            double worst = 0;
            for (int a = 0; a < T; a++) {
                int prev = -1;
                for (int s = 0; s < L; s++) {
                    int x = vertical ? a : s, y = vertical ? s : a;
                    int xm = vertical ? a : L - 1 - s, ym = vertical ? L - 1 - s : a;
                    const uint8_t *p = out.data[0] + (size_t)y * out.stride[0] + 3 * (size_t)x;
                    const uint8_t *q = out.data[0] + (size_t)ym * out.stride[0] + 3 * (size_t)xm;
                    bad_flat += p[0] != p[1] || p[1] != p[2];
                    bad_mono += p[0] < prev;
                    prev = p[0];
                    bad_sym += abs(p[0] + q[0] - 255) > 1;
                    double e = fabs(p[0] - step_blur(s, L / 2, sigmas[i]));
                    if (e > worst) worst = e;
                    bad_val += e > 1.25;
                }
            }
            printf("     sigma %-4g %s: worst %.2f levels from the exact Gaussian\n",
                   (double)sigmas[i], vertical ? "vertical  " : "horizontal", worst);
            const uint8_t *first = out.data[0];
            const uint8_t *last = out.data[0] + (size_t)(h - 1) * out.stride[0] + 3 * (size_t)(w - 1);
            if (bad_mono || bad_sym || bad_val || bad_flat || first[0] != 0 || last[0] != 255)
                fprintf(stderr,
                        "  sigma %g %s: monotone %ld, symmetric %ld, flat %ld, vs Gaussian %ld "
                        "(worst %.2f levels), ends %d %d\n",
                        (double)sigmas[i], vertical ? "vertical" : "horizontal", bad_mono,
                        bad_sym, bad_flat, bad_val, worst, first[0], last[0]);
            CHECK_EQ_INT(bad_mono, 0);
            CHECK_EQ_INT(bad_sym, 0);
            CHECK_EQ_INT(bad_flat, 0);
            CHECK_EQ_INT(bad_val, 0);
            CHECK_EQ_INT(first[0], 0);
            CHECK_EQ_INT(last[0], 255);
            pf_frame_unref(&out);
            pf_frame_unref(&frame);
        }
    pf_tensor_unref(&zeros);
    pf_ops_destroy(&ops);
}

/* Bilinear taps worked out by hand (OpenCV's INTER_LINEAR gives the same):
 * 2 pixels {0, 255} stretched to 4 sample at -0.25, 0.25, 0.75, 1.25 ->
 * {0, 63.75, 191.25, 255} -> {0, 64, 191, 255}; the same for a 2x1 mask
 * {0, 1} read back as RGBA alpha, and a 1x2 image stretched vertically. An
 * image of the output's size comes through unchanged. */
static void test_known_resize(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ops);
    const uint8_t want[4] = {0, 64, 191, 255};
    pf_tensor zero = {0}, ramp = {0};
    CHECK_OK(cc_make_mask(&zero, PF_DTYPE_F32, 1, 1, 2, 0, CC_MASK_ZERO));
    int64_t shp[2] = {1, 2};
    CHECK_OK(pf_tensor_alloc(&ramp, PF_DTYPE_F32, 2, shp, PF_LAYOUT_NONE, NULL, NULL));
    ((float *)ramp.data)[0] = 0.0f;
    ((float *)ramp.data)[1] = 1.0f;
    for (int vertical = 0; vertical < 2; vertical++) {
        pf_frame frame = {0}, img = {0}, out = {0};
        const int fw = vertical ? 1 : 4, fh = vertical ? 4 : 1;
        CHECK_OK(cc_make_frame(&frame, PF_PIXFMT_RGB24, fw, fh, 0, 0));
        CHECK_OK(cc_make_frame(&img, PF_PIXFMT_BGR24, vertical ? 1 : 2, vertical ? 2 : 1, 0, 0));
        const uint8_t black[3] = {0, 0, 0};
        fill_packed(&img, black);
        memset(img.data[0] + (vertical ? img.stride[0] : 3), 255, 3);
        pf_background bg = {.kind = PF_BG_IMAGE, .image = &img};
        CHECK_OK(composite_to(ops, &frame, &zero, &bg, PF_PIXFMT_RGB24, &out));
        for (int i = 0; i < 4; i++) {
            uint8_t p[3];
            px_rgb(&out, vertical ? 0 : i, vertical ? i : 0, p);
            CHECK_EQ_INT(p[0], want[i]);
            CHECK_EQ_INT(p[2], want[i]);
        }
        pf_frame_unref(&out);
        pf_frame_unref(&img);
        pf_frame_unref(&frame);
    }
    pf_frame frame = {0}, out = {0}, img = {0};
    CHECK_OK(cc_make_frame(&frame, PF_PIXFMT_RGB24, 4, 1, 0, 0));
    pf_background none = {.kind = PF_BG_NONE};
    CHECK_OK(composite_to(ops, &frame, &ramp, &none, PF_PIXFMT_RGBA, &out));
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(out.data[0][4 * i + 3], want[i]);
    pf_frame_unref(&out);
    pf_frame_unref(&frame);
    /* Same-size image: its own bytes. */
    CHECK_OK(cc_make_frame(&frame, PF_PIXFMT_RGB24, 23, 17, 2, 1));
    CHECK_OK(cc_make_frame(&img, PF_PIXFMT_RGBA, 23, 17, 2, 1));
    pf_background same = {.kind = PF_BG_IMAGE, .image = &img};
    CHECK_OK(composite_to(ops, &frame, &zero, &same, PF_PIXFMT_BGR24, &out));
    long bad = 0;
    for (int y = 0; y < 17; y++)
        for (int x = 0; x < 23; x++) {
            uint8_t a[3], b[3];
            px_rgb(&img, x, y, a);
            px_rgb(&out, x, y, b);
            bad += memcmp(a, b, 3) != 0;
        }
    CHECK_EQ_INT(bad, 0);
    pf_frame_unref(&out);
    pf_frame_unref(&img);
    pf_frame_unref(&frame);
    pf_tensor_unref(&zero);
    pf_tensor_unref(&ramp);
    pf_ops_destroy(&ops);
}

/* Mask shapes [H, W], [1, H, W], [1, 1, H, W], padded rows: same output.
 * A u8 mask v and the f32 mask v / 255 agree within the rounding of one
 * division (the u8 mask is interpolated on raw values, then divided). */
static void test_mask_shapes(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ops);
    pf_frame frame = {0}, out[4];
    CHECK_OK(cc_make_frame(&frame, PF_PIXFMT_RGB24, 29, 23, 2, 0));
    pf_background bg = {.kind = PF_BG_COLOR, .color = {200, 30, 90}};
    uint64_t seed = pf_test_rand();
    for (int k = 0; k < 4; k++) {
        pf_tensor m = {0};
        pf_test_rng_state = seed; /* same values for every shape */
        CHECK_OK(cc_make_mask(&m, PF_DTYPE_F32, 11, 7, k < 3 ? k + 2 : 4, k == 3 ? 5 : 0,
                              CC_MASK_RANDOM));
        memset(&out[k], 0, sizeof out[k]);
        CHECK_OK(composite_to(ops, &frame, &m, &bg, PF_PIXFMT_RGBA, &out[k]));
        if (k) {
            cc_diff d = cc_compare(&out[0], &out[k]);
            CHECK_EQ_INT(d.differing, 0);
        }
        pf_tensor_unref(&m);
    }
    for (int k = 0; k < 4; k++) pf_frame_unref(&out[k]);
    pf_frame_unref(&frame);
    pf_ops_destroy(&ops);
}

/* dst = frame (in place) gives what a separate dst gets, for packed and NV12
 * frames and every background kind (the blur reads neighbours: its passes
 * finish before the blend writes). */
static void test_in_place(void)
{
    pf_ops *cpu = otu_make_ops(g_stream, 0, NULL), *ref = otu_make_ops(g_stream, 1, NULL);
    REQUIRE(cpu && ref);
    const pf_pixfmt fmts[] = {PF_PIXFMT_RGB24, PF_PIXFMT_BGR24, PF_PIXFMT_RGBA, PF_PIXFMT_NV12};
    for (int fi = 0; fi < 4; fi++)
        for (int kind = 0; kind < CC_NKIND; kind++)
            for (int which = 0; which < 2; which++) {
                pf_ops *ops = which ? ref : cpu;
                cc_case c;
                CHECK_OK(cc_random_case(&c, fmts[fi], fmts[fi], kind, 40));
                if (kind == PF_BG_BLUR) c.bg.blur_sigma = (fi & 1) ? 3.0f : 20.0f;
                pf_frame sep = {0}, copy = {0};
                CHECK_OK(composite_to(ops, &c.frame, &c.mask, &c.bg, c.out, &sep));
                CHECK_OK(cc_make_frame(&copy, c.frame.format, c.w, c.h, 0, 0));
                CHECK_OK(pf_frame_copy_async(&copy, &c.frame, g_stream));
                CHECK_OK(pf_stream_synchronize(g_stream));
                CHECK_OK(pf_ops_composite(ops, &copy, &c.mask, &c.bg, &copy));
                cc_diff d = cc_compare(&sep, &copy);
                if (d.differing) cc_print_case(&c, which ? "in place (reference)" : "in place");
                CHECK_EQ_INT(d.differing, 0);
                pf_frame_unref(&sep);
                pf_frame_unref(&copy);
                cc_free(&c);
            }
    pf_ops_destroy(&cpu);
    pf_ops_destroy(&ref);
}

/* Bad input -------------------------------------------------------------------------- */

static void test_bad_input(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 0, NULL);
    REQUIRE(ops);
    const int w = 12, h = 10;
    pf_frame frame = {0}, dst = {0}, small = {0}, gray = {0}, i420 = {0}, img = {0};
    CHECK_OK(cc_make_frame(&frame, PF_PIXFMT_RGB24, w, h, 0, 0));
    CHECK_OK(cc_make_frame(&dst, PF_PIXFMT_RGB24, w, h, 0, 0));
    CHECK_OK(cc_make_frame(&small, PF_PIXFMT_RGB24, w - 2, h, 0, 0));
    CHECK_OK(cc_make_frame(&gray, PF_PIXFMT_GRAY8, w, h, 0, 0));
    CHECK_OK(cc_make_frame(&i420, PF_PIXFMT_I420, w, h, 0, 0));
    CHECK_OK(cc_make_frame(&img, PF_PIXFMT_NV12, 5, 7, 0, 0));
    pf_tensor mask = {0}, f16 = {0}, batch = {0}, flat = {0};
    CHECK_OK(cc_make_mask(&mask, PF_DTYPE_F32, 8, 8, 2, 0, CC_MASK_RANDOM));
    int64_t shp[3] = {2, 8, 8};
    CHECK_OK(pf_tensor_alloc(&batch, PF_DTYPE_F32, 3, shp, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&f16, PF_DTYPE_F16, 2, shp + 1, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&flat, PF_DTYPE_F32, 1, shp + 1, PF_LAYOUT_NONE, NULL, NULL));
    pf_background bg = {.kind = PF_BG_COLOR};

    /* Snapshot of dst: no error may write to it. */
    size_t dbytes = dst.stride[0] * (size_t)h;
    uint8_t *before = malloc(dbytes);
    REQUIRE(before);
    memcpy(before, dst.data[0], dbytes);

    EXPECT_ERR(pf_ops_composite(NULL, &frame, &mask, &bg, &dst), PF_ERR_INVALID, "ops is NULL");
    EXPECT_ERR(pf_ops_composite(ops, NULL, &mask, &bg, &dst), PF_ERR_INVALID, "frame is NULL");
    EXPECT_ERR(pf_ops_composite(ops, &frame, NULL, &bg, &dst), PF_ERR_INVALID, "mask is NULL");
    EXPECT_ERR(pf_ops_composite(ops, &frame, &mask, NULL, &dst), PF_ERR_INVALID, "bg is NULL");
    EXPECT_ERR(pf_ops_composite(ops, &frame, &mask, &bg, NULL), PF_ERR_INVALID, "dst is NULL");
    EXPECT_ERR(pf_ops_composite(ops, &gray, &mask, &bg, &dst), PF_ERR_UNSUPPORTED,
               "frame is gray8");
    EXPECT_ERR(pf_ops_composite(ops, &frame, &mask, &bg, &i420), PF_ERR_UNSUPPORTED, "dst is i420");
    EXPECT_ERR(pf_ops_composite(ops, &frame, &mask, &bg, &small), PF_ERR_INVALID,
               "dst is 10x10 but frame is 12x10");
    pf_frame bad = frame;
    bad.format = (pf_pixfmt)42;
    EXPECT_ERR(pf_ops_composite(ops, &bad, &mask, &bg, &dst), PF_ERR_INVALID,
               "frame has unknown pixel format 42");
    bad = frame;
    bad.stride[0] = 3 * w - 1;
    EXPECT_ERR(pf_ops_composite(ops, &bad, &mask, &bg, &dst), PF_ERR_INVALID,
               "frame plane 0 stride 35 < row of 36 bytes");
    bad = frame;
    bad.data[0] += 4;
    EXPECT_ERR(pf_ops_composite(ops, &bad, &mask, &bg, &dst), PF_ERR_INVALID,
               "frame plane 0 needs 360 bytes");
    bad = frame;
    bad.width = 0;
    EXPECT_ERR(pf_ops_composite(ops, &bad, &mask, &bg, &dst), PF_ERR_INVALID,
               "frame has size 0x10");
    bad = dst;
    bad.data[0] = NULL;
    EXPECT_ERR(pf_ops_composite(ops, &frame, &mask, &bg, &bad), PF_ERR_INVALID,
               "dst plane 0 data is NULL");

    EXPECT_ERR(pf_ops_composite(ops, &frame, &f16, &bg, &dst), PF_ERR_UNSUPPORTED,
               "mask dtype is f16");
    EXPECT_ERR(pf_ops_composite(ops, &frame, &batch, &bg, &dst), PF_ERR_INVALID,
               "mask dimension 0 is 2");
    EXPECT_ERR(pf_ops_composite(ops, &frame, &flat, &bg, &dst), PF_ERR_INVALID,
               "mask has 1 dimensions");
    pf_tensor tm = mask;
    tm.strides[1] = 2;
    EXPECT_ERR(pf_ops_composite(ops, &frame, &tm, &bg, &dst), PF_ERR_UNSUPPORTED,
               "mask last dimension has stride 2");
    tm = mask;
    tm.strides[0] = 7;
    EXPECT_ERR(pf_ops_composite(ops, &frame, &tm, &bg, &dst), PF_ERR_INVALID,
               "mask row stride 7 outside 8..");
    tm = mask;
    tm.data = (uint8_t *)tm.data + 2;
    EXPECT_ERR(pf_ops_composite(ops, &frame, &tm, &bg, &dst), PF_ERR_INVALID,
               "is not aligned to its 4-byte f32");
    tm = mask;
    tm.shape[0] = 9; /* one row past the buffer */
    EXPECT_ERR(pf_ops_composite(ops, &frame, &tm, &bg, &dst), PF_ERR_INVALID,
               "mask needs 288 bytes");

    pf_background b2 = bg;
    b2.kind = (pf_background_kind)7;
    EXPECT_ERR(pf_ops_composite(ops, &frame, &mask, &b2, &dst), PF_ERR_INVALID, "bg->kind 7");
    b2 = bg;
    b2.matrix = (pf_yuv_matrix)3;
    EXPECT_ERR(pf_ops_composite(ops, &frame, &mask, &b2, &dst), PF_ERR_INVALID, "bg->matrix 3");
    b2 = bg;
    b2.range = (pf_yuv_range)-1;
    EXPECT_ERR(pf_ops_composite(ops, &frame, &mask, &b2, &dst), PF_ERR_INVALID, "bg->range -1");
    const float bad_sigmas[] = {0.0f, -1.0f, 64.5f, NAN, INFINITY};
    for (int i = 0; i < 5; i++) {
        b2 = bg;
        b2.kind = PF_BG_BLUR;
        b2.blur_sigma = bad_sigmas[i];
        EXPECT_ERR(pf_ops_composite(ops, &frame, &mask, &b2, &dst), PF_ERR_INVALID, "blur_sigma");
    }
    b2 = bg;
    b2.kind = PF_BG_BLUR;
    b2.blur_sigma = 65.0f;
    EXPECT_ERR(pf_ops_composite(ops, &frame, &mask, &b2, &dst), PF_ERR_INVALID,
               "bg->blur_sigma 65 outside (0, 64]");
    b2 = bg;
    b2.kind = PF_BG_IMAGE;
    EXPECT_ERR(pf_ops_composite(ops, &frame, &mask, &b2, &dst), PF_ERR_INVALID,
               "bg->image is NULL (needed by PF_BG_IMAGE)");
    b2.kind = PF_BG_FRAME;
    EXPECT_ERR(pf_ops_composite(ops, &frame, &mask, &b2, &dst), PF_ERR_INVALID,
               "bg->image is NULL (needed by PF_BG_FRAME)");
    b2.image = &img;
    EXPECT_ERR(pf_ops_composite(ops, &frame, &mask, &b2, &dst), PF_ERR_INVALID,
               "bg->image is 5x7 but PF_BG_FRAME needs the output size 12x10");
    b2.kind = PF_BG_IMAGE;
    b2.image = &gray;
    EXPECT_ERR(pf_ops_composite(ops, &frame, &mask, &b2, &dst), PF_ERR_UNSUPPORTED,
               "bg->image is gray8");

    /* Overlaps: dst inside the frame's bytes but not the frame itself; dst
     * over the mask; dst over the image. */
    pf_frame shifted = {0};
    size_t strides[3] = {frame.stride[0], 0, 0};
    CHECK_OK(pf_frame_wrap(&shifted, PF_PIXFMT_RGB24, w, h - 1, frame.buf[0], 3, strides));
    pf_frame shifted_src = frame;
    shifted_src.height = h - 1;
    EXPECT_ERR(pf_ops_composite(ops, &shifted_src, &mask, &bg, &shifted), PF_ERR_INVALID,
               "dst overlaps frame");
    pf_frame over_mask = {0};
    size_t ms[3] = {3 * 4, 0, 0};
    CHECK_OK(pf_frame_wrap(&over_mask, PF_PIXFMT_RGB24, 4, 4, mask.buf, 0, ms));
    pf_frame f4 = {0};
    CHECK_OK(cc_make_frame(&f4, PF_PIXFMT_RGB24, 4, 4, 0, 0));
    EXPECT_ERR(pf_ops_composite(ops, &f4, &mask, &bg, &over_mask), PF_ERR_INVALID,
               "dst overlaps mask");
    b2 = bg;
    b2.kind = PF_BG_IMAGE;
    b2.image = &f4;
    pf_frame f4b = {0};
    CHECK_OK(cc_make_frame(&f4b, PF_PIXFMT_RGB24, 4, 4, 0, 0));
    EXPECT_ERR(pf_ops_composite(ops, &f4b, &mask, &b2, &f4), PF_ERR_INVALID,
               "dst overlaps bg->image");
    /* In place with another format over the same bytes is an overlap too. */
    pf_frame as_bgr = frame;
    as_bgr.format = PF_PIXFMT_BGR24;
    EXPECT_ERR(pf_ops_composite(ops, &frame, &mask, &bg, &as_bgr), PF_ERR_INVALID,
               "dst overlaps frame");

    CHECK(memcmp(before, dst.data[0], dbytes) == 0);
    free(before);
    pf_frame_unref(&shifted);
    pf_frame_unref(&over_mask);
    pf_frame_unref(&f4);
    pf_frame_unref(&f4b);
    pf_frame_unref(&frame);
    pf_frame_unref(&dst);
    pf_frame_unref(&small);
    pf_frame_unref(&gray);
    pf_frame_unref(&i420);
    pf_frame_unref(&img);
    pf_tensor_unref(&mask);
    pf_tensor_unref(&f16);
    pf_tensor_unref(&batch);
    pf_tensor_unref(&flat);
    pf_ops_destroy(&ops);
}

int main(void)
{
    pf_test_seed(20261122);
    if (!(g_stream = otu_cpu_stream())) return 1;
    PF_RUN(test_random_vs_reference);
    PF_RUN(test_larger_shapes);
    PF_RUN(test_simd_levels);
    PF_RUN(test_mask_one_and_zero);
    PF_RUN(test_alpha_is_mask);
    PF_RUN(test_nv12_known_colours);
    PF_RUN(test_nv12_is_converted_rgb);
    PF_RUN(test_none_keeps_frame);
    PF_RUN(test_blur_constant);
    PF_RUN(test_blur_step);
    PF_RUN(test_known_resize);
    PF_RUN(test_mask_shapes);
    PF_RUN(test_in_place);
    PF_RUN(test_bad_input);
    pf_stream_destroy(&g_stream);
    return pf_test_finish();
}
