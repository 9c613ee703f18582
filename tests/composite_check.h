/* composite_check.h: what tests/test_composite.c (CPU) and
 * tests/cuda/test_cuda_composite.c share - random frames with padded strides
 * and odd offsets, masks of every accepted shape, random compositing cases
 * covering every frame format x output format x background kind, and a
 * byte comparison of two output frames that says where they first differ
 * (on top of ops_test_util.h).
 *
 * Header-only (static inline), like preprocess_check.h; CMake globs
 * tests/test_*.c as tests and leaves this file alone. */
#ifndef PF_COMPOSITE_CHECK_H
#define PF_COMPOSITE_CHECK_H

#include "ops_test_util.h"

static const pf_pixfmt cc_in_formats[] = {PF_PIXFMT_RGB24, PF_PIXFMT_BGR24, PF_PIXFMT_RGBA,
                                          PF_PIXFMT_NV12, PF_PIXFMT_I420};
static const pf_pixfmt cc_out_formats[] = {PF_PIXFMT_RGB24, PF_PIXFMT_BGR24, PF_PIXFMT_RGBA,
                                           PF_PIXFMT_NV12};
#define CC_NIN 5
#define CC_NOUT 4
#define CC_NKIND 5

/* A host frame in one buffer starting `offset` bytes in, each plane's stride
 * padded by 0..pad_max bytes, every byte (padding included) random. */
static inline pf_status cc_make_frame(pf_frame *f, pf_pixfmt fmt, int w, int h, int pad_max,
                                      size_t offset)
{
    return otu_make_frame(f, fmt, w, h, pad_max, offset, OTU_RANDOM);
}

/* Mask values: random, all-ones, all-zeros, or a smooth ramp with saturated
 * ends (what a segmentation model produces). */
enum { CC_MASK_RANDOM = 0, CC_MASK_ONE = 1, CC_MASK_ZERO = 2, CC_MASK_RAMP = 3 };

/* A host mask tensor of ndim dims ([.., 1, h, w]), rows padded by row_pad
 * elements. f32 random values run a little outside 0..1 to exercise the
 * clamp. */
static inline pf_status cc_make_mask(pf_tensor *t, pf_dtype dt, int w, int h, int ndim,
                                     int row_pad, int values)
{
    int64_t shape[PF_TENSOR_MAX_DIMS], strides[PF_TENSOR_MAX_DIMS];
    const int64_t rs = w + row_pad;
    for (int d = 0; d < ndim; d++) {
        shape[d] = 1;
        strides[d] = rs * h;
    }
    shape[ndim - 2] = h;
    shape[ndim - 1] = w;
    strides[ndim - 2] = rs;
    strides[ndim - 1] = 1;
    const size_t es = pf_dtype_size(dt), n = (size_t)rs * (size_t)h;
    pf_buffer *b = NULL;
    pf_status st = pf_buffer_alloc_host(n * es, &b);
    if (st != PF_OK) return st;
    uint8_t *d = pf_buffer_data(b);
    for (size_t i = 0; i < n; i++) {
        int x = (int)(i % (size_t)rs), y = (int)(i / (size_t)rs);
        if (x >= w) { /* padding: NaN / 0x55, never to be read */
            float nan = NAN;
            if (dt == PF_DTYPE_U8) d[i] = 0x55;
            else memcpy(d + i * es, &nan, sizeof nan);
            continue;
        }
        double v;
        switch (values) {
        case CC_MASK_ONE: v = 1.0; break;
        case CC_MASK_ZERO: v = 0.0; break;
        case CC_MASK_RAMP: v = 1.5 * (x + y) / (double)(w + h) - 0.25; break;
        default: v = (double)(pf_test_rand() % 1401) / 1000.0 - 0.2; break;
        }
        if (dt == PF_DTYPE_U8) {
            double u = values == CC_MASK_RANDOM ? (double)(pf_test_rand() & 255) : v * 255.0;
            d[i] = (uint8_t)(u < 0 ? 0 : (u > 255 ? 255 : u + 0.5));
        } else {
            float fv = (float)v;
            memcpy(d + i * es, &fv, sizeof fv);
        }
    }
    memset(t, 0, sizeof *t);
    st = pf_tensor_wrap(t, b, 0, dt, ndim, shape, strides, PF_LAYOUT_NONE);
    pf_buffer_unref(&b);
    return st;
}

/* One compositing case on the host. */
typedef struct cc_case {
    pf_frame frame, image;
    pf_tensor mask;
    pf_background bg;
    pf_pixfmt out;
    int w, h;
} cc_case;

static inline void cc_free(cc_case *c)
{
    pf_frame_unref(&c->frame);
    pf_frame_unref(&c->image);
    pf_tensor_unref(&c->mask);
}

static inline float cc_rand_sigma(void)
{
    /* Both regimes: full resolution (<= 8) and downscaled (> 8); the edges. */
    switch (pf_test_rand() % 6) {
    case 0: return 8.0f;
    case 1: return 8.01f;
    case 2: return 0.2f + (float)(pf_test_rand() % 7800) / 1000.0f;
    case 3: return 64.0f;
    default: return 8.0f + (float)(pf_test_rand() % 56001) / 1000.0f + 0.001f;
    }
}

/* A random case of the given formats and kind, frame up to max_dim. */
static inline pf_status cc_random_case(cc_case *c, pf_pixfmt in, pf_pixfmt out, int kind,
                                       int max_dim)
{
    memset(c, 0, sizeof *c);
    c->w = (int)pf_test_rand_range(1, max_dim);
    c->h = (int)pf_test_rand_range(1, max_dim);
    if (pf_test_rand() % 10 == 0) c->w = c->h = 1;
    c->out = out;
    pf_status st = cc_make_frame(&c->frame, in, c->w, c->h, (int)pf_test_rand_range(0, 9),
                                 (size_t)pf_test_rand_range(0, 7));
    if (st != PF_OK) return st;
    int mw = c->w, mh = c->h;
    if (pf_test_rand() % 3) {
        mw = (int)pf_test_rand_range(1, max_dim + 8);
        mh = (int)pf_test_rand_range(1, max_dim + 8);
    }
    pf_dtype dt = (pf_test_rand() & 1) ? PF_DTYPE_F32 : PF_DTYPE_U8;
    int values = pf_test_rand() % 4 == 0 ? CC_MASK_RAMP : CC_MASK_RANDOM;
    st = cc_make_mask(&c->mask, dt, mw, mh, (int)pf_test_rand_range(2, 4),
                      (int)pf_test_rand_range(0, 3), values);
    if (st != PF_OK) return st;
    memset(&c->bg, 0, sizeof c->bg);
    c->bg.kind = (pf_background_kind)kind;
    c->bg.matrix = (pf_yuv_matrix)pf_test_rand_range(0, 1);
    c->bg.range = (pf_yuv_range)pf_test_rand_range(0, 1);
    for (int k = 0; k < 3; k++) c->bg.color[k] = (uint8_t)pf_test_rand();
    if (kind == PF_BG_BLUR) c->bg.blur_sigma = cc_rand_sigma();
    if (kind == PF_BG_IMAGE || kind == PF_BG_FRAME) {
        int iw = c->w, ih = c->h;
        if (kind == PF_BG_IMAGE && pf_test_rand() % 4) {
            iw = (int)pf_test_rand_range(1, 2 * max_dim);
            ih = (int)pf_test_rand_range(1, 2 * max_dim);
        }
        pf_pixfmt ifmt = cc_in_formats[pf_test_rand() % CC_NIN];
        st = cc_make_frame(&c->image, ifmt, iw, ih, (int)pf_test_rand_range(0, 5),
                           (size_t)pf_test_rand_range(0, 3));
        if (st != PF_OK) return st;
        c->bg.image = &c->image;
    }
    return PF_OK;
}

/* The sweep of random cases: every frame format x output format x
 * background kind, repeated. Case i (0 .. CC_SWEEP(reps) - 1) is from
 * repetition *rep, with frames up to `large` pixels on every third
 * repetition and `small` otherwise; its label goes to label[n]. */
#define CC_SWEEP(reps) ((reps) * CC_NIN * CC_NOUT * CC_NKIND)
static inline pf_status cc_sweep_case(cc_case *c, int i, int small, int large, int *rep,
                                      char *label, size_t n)
{
    const int kind = i % CC_NKIND, oi = i / CC_NKIND % CC_NOUT;
    const int fi = i / (CC_NKIND * CC_NOUT) % CC_NIN;
    *rep = i / (CC_NKIND * CC_NOUT * CC_NIN);
    snprintf(label, n, "rep %d %s->%s kind %d", *rep, pf_pixfmt_name(cc_in_formats[fi]),
             pf_pixfmt_name(cc_out_formats[oi]), kind);
    return cc_random_case(c, cc_in_formats[fi], cc_out_formats[oi], kind,
                          *rep % 3 == 2 ? large : small);
}

/* Differences between two frames of one format and size, visible bytes only. */
typedef struct cc_diff {
    long bytes, differing, over1;
    int max_abs;
    int plane, x, y; /* first difference (x in bytes) */
} cc_diff;

static inline cc_diff cc_compare(const pf_frame *a, const pf_frame *b)
{
    cc_diff d = {0, 0, 0, 0, -1, -1, -1};
    for (int p = 0; p < a->num_planes; p++) {
        size_t row, rows;
        if (pf_pixfmt_plane_size(a->format, a->width, a->height, p, &row, &rows) != PF_OK) break;
        for (size_t y = 0; y < rows; y++) {
            const uint8_t *ra = a->data[p] + y * a->stride[p], *rb = b->data[p] + y * b->stride[p];
            for (size_t x = 0; x < row; x++) {
                int e = abs((int)ra[x] - (int)rb[x]);
                d.bytes++;
                if (!e) continue;
                if (d.differing++ == 0) d.plane = p, d.x = (int)x, d.y = (int)y;
                if (e > 1) d.over1++;
                if (e > d.max_abs) d.max_abs = e;
            }
        }
    }
    return d;
}

static inline void cc_print_case(const cc_case *c, const char *label)
{
    fprintf(stderr,
            "  %s: frame %s %dx%d -> %s, mask %s %lldx%lld, bg kind %d sigma %g matrix %d "
            "range %d%s%s\n",
            label, pf_pixfmt_name(c->frame.format), c->w, c->h, pf_pixfmt_name(c->out),
            pf_dtype_name(c->mask.dtype), (long long)c->mask.shape[c->mask.ndim - 1],
            (long long)c->mask.shape[c->mask.ndim - 2], (int)c->bg.kind,
            (double)c->bg.blur_sigma, (int)c->bg.matrix, (int)c->bg.range,
            c->bg.image ? ", image " : "", c->bg.image ? pf_pixfmt_name(c->image.format) : "");
}

#endif
