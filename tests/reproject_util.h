/* reproject_util.h: helpers shared by tests/test_reproject.c and
 * tests/cuda/test_cuda_reproject.c: host frames with padded strides and an
 * offset inside their buffer (padding filled with a sentinel so stray writes
 * show), random sources and views, byte comparisons that say where frames
 * first differ.
 *
 * Header-only, everything static inline (a test that uses part of it has no
 * unused-function warnings); CMake globs only tests/test_*.c as tests. */
#ifndef PF_REPROJECT_UTIL_H
#define PF_REPROJECT_UTIL_H

#include "pf_test.h"

#define RP_SENTINEL 0xCD

/* REQUIRE for a call: evaluated once (REQUIRE evaluates its condition twice). */
#define RP_REQUIRE_OK(expr) \
    do { \
        pf_status rq_ = (expr); \
        if (rq_ != PF_OK) { \
            CHECK_OK(rq_); \
            fprintf(stderr, "  (from %s)\n", #expr); \
            return; \
        } \
    } while (0)

static const pf_pixfmt rp_formats[] = {PF_PIXFMT_RGB24, PF_PIXFMT_BGR24, PF_PIXFMT_RGBA,
                                       PF_PIXFMT_GRAY8};
#define RP_NFMT 4

static inline int rp_bpp(pf_pixfmt fmt)
{
    return fmt == PF_PIXFMT_RGBA ? 4 : fmt == PF_PIXFMT_GRAY8 ? 1 : 3;
}

/* A w x h host frame, rows `pad` bytes longer than needed, starting `offset`
 * bytes into its buffer; every byte of the buffer set to RP_SENTINEL. */
static inline pf_status rp_frame_make(pf_frame *f, pf_pixfmt fmt, int w, int h, size_t pad,
                                      size_t offset)
{
    size_t stride = (size_t)w * (size_t)rp_bpp(fmt) + pad;
    size_t strides[PF_FRAME_MAX_PLANES] = {stride, 0, 0};
    pf_buffer *b = NULL;
    pf_status st = pf_buffer_alloc_host(offset + stride * (size_t)h, &b);
    if (st != PF_OK) return st;
    memset(pf_buffer_data(b), RP_SENTINEL, pf_buffer_size(b));
    memset(f, 0, sizeof *f);
    st = pf_frame_wrap(f, fmt, w, h, b, offset, strides);
    pf_buffer_unref(&b);
    return st;
}

static inline void rp_fill_random(pf_frame *f)
{
    size_t row = (size_t)f->width * (size_t)rp_bpp(f->format);
    for (int y = 0; y < f->height; y++)
        for (size_t x = 0; x < row; x++)
            f->data[0][(size_t)y * f->stride[0] + x] = (uint8_t)pf_test_rand();
}

/* Whether everything of f's buffer outside its pixels still holds the
 * sentinel (nobody wrote past a row or before/after the frame). */
static inline int rp_padding_intact(const pf_frame *f)
{
    const uint8_t *base = pf_buffer_data(f->buf[0]);
    size_t size = pf_buffer_size(f->buf[0]);
    size_t off = (size_t)(f->data[0] - base), row = (size_t)f->width * (size_t)rp_bpp(f->format);
    for (size_t i = 0; i < size; i++) {
        int inside = 0;
        if (i >= off) {
            size_t rel = i - off, y = rel / f->stride[0], x = rel % f->stride[0];
            inside = y < (size_t)f->height && x < row;
        }
        if (!inside && base[i] != RP_SENTINEL) {
            fprintf(stderr, "  byte %zu of the buffer (outside the %dx%d frame) was written\n", i,
                    f->width, f->height);
            return 0;
        }
    }
    return 1;
}

/* 1 when the pixels are identical; else prints the first difference, the
 * number of differing bytes and the largest difference. */
static inline int rp_frames_equal(const pf_frame *a, const pf_frame *b, const char *what)
{
    size_t row = (size_t)a->width * (size_t)rp_bpp(a->format);
    size_t ndiff = 0;
    int maxd = 0, fx = -1, fy = -1, va = 0, vb = 0;
    for (int y = 0; y < a->height; y++)
        for (size_t x = 0; x < row; x++) {
            int p = a->data[0][(size_t)y * a->stride[0] + x];
            int q = b->data[0][(size_t)y * b->stride[0] + x];
            if (p != q) {
                if (!ndiff) {
                    fx = (int)x;
                    fy = y;
                    va = p;
                    vb = q;
                }
                ndiff++;
                if (abs(p - q) > maxd) maxd = abs(p - q);
            }
        }
    if (ndiff)
        fprintf(stderr,
                "  %s: %zu of %zu bytes differ (max |diff| %d); first at byte %d of row %d: %d "
                "vs %d\n",
                what, ndiff, row * (size_t)a->height, maxd, fx, fy, va, vb);
    return ndiff == 0;
}

static inline float rp_rand_float(float lo, float hi)
{
    return lo + (hi - lo) * (float)((double)(pf_test_rand() >> 11) / 9007199254740992.0);
}

/* Random angles (beyond +-360 too), fov anywhere in (0, 180), size up to
 * max_w x max_h (1x1 and single rows/columns included). */
static inline pf_view rp_random_view(int max_w, int max_h)
{
    pf_view v;
    v.yaw = rp_rand_float(-720.0f, 720.0f);
    v.pitch = rp_rand_float(-120.0f, 120.0f);
    v.roll = pf_test_rand() % 4 ? rp_rand_float(-200.0f, 200.0f) : 0.0f;
    int r = (int)(pf_test_rand() % 10);
    v.fov = r == 0 ? 0.01f : r == 1 ? 179.9f : rp_rand_float(1.0f, 175.0f);
    int s = (int)(pf_test_rand() % 8);
    v.width = s == 0 ? 1 : (int)pf_test_rand_range(1, max_w);
    v.height = s == 1 ? 1 : (int)pf_test_rand_range(1, max_h);
    return v;
}

/* Source pixels that encode their own coordinates (RGB24, x, y < 4096):
 * R = x & 255, G = (x >> 8) | (y >> 8) << 4, B = y & 255. */
static inline void rp_fill_coded(pf_frame *f)
{
    for (int y = 0; y < f->height; y++)
        for (int x = 0; x < f->width; x++) {
            uint8_t *p = f->data[0] + (size_t)y * f->stride[0] + (size_t)x * 3;
            p[0] = (uint8_t)(x & 255);
            p[1] = (uint8_t)((x >> 8) | ((y >> 8) << 4));
            p[2] = (uint8_t)(y & 255);
        }
}

static inline void rp_decode(const uint8_t *p, int *x, int *y)
{
    *x = p[0] | ((p[1] & 15) << 8);
    *y = p[2] | ((p[1] >> 4) << 8);
}

#endif
