/* preprocess_check.h: what the CPU and CUDA preprocess tests share - random
 * source frames with padded strides and unaligned starts, random cases
 * (formats, sizes, ROIs, layouts, dtypes, interpolations, letterbox,
 * channel order, mean/std, YUV matrix and range), and the comparison of an
 * implementation's output with the C reference's within a stated tolerance.
 *
 * Tolerance, per output channel c, with R = 1 / |std[c]| (the output span of
 * a 0..255 pixel) and B = |mean[c] / std[c]| (its offset):
 *   f32: |got - ref| <= factor * (R + B)
 *   f16: at most 1 ulp apart, or within the f32 bound.
 * The reference computes in double; the fast paths in float with exactly the
 * same taps, so their error is a few float roundings of values up to 255
 * (about 1e-6 of R + B). The CPU test uses factor 1e-5; the CUDA test 1e-4
 * (FMA contraction and a different summation order are allowed there). A
 * wrong tap or weight moves a value by a visible fraction of R, far above
 * either bound.
 *
 * Header-only, everything static inline (CMake takes only tests/test_*.c
 * and tests/cuda/test_*.c as tests). */
#ifndef PF_PREPROCESS_CHECK_H
#define PF_PREPROCESS_CHECK_H

#include "ops_test_util.h"

#define PPC_MAX_N 80 /* frames per case: above PF_PP_MAX_FRAMES on purpose */

static const pf_pixfmt ppc_formats[] = {PF_PIXFMT_RGB24, PF_PIXFMT_BGR24, PF_PIXFMT_RGBA,
                                        PF_PIXFMT_NV12, PF_PIXFMT_I420};
#define PPC_NFMT 5

typedef struct ppc_case {
    int n;
    pf_frame src[PPC_MAX_N];
    pf_rect rois[PPC_MAX_N];
    int use_rois;
    int W, H;
    pf_layout layout;
    pf_dtype dtype;
    pf_preprocess_params p;
} ppc_case;

/* A host frame inside a buffer of its own, starting `offset` bytes in (an
 * unaligned start when odd), each stride row + 0..pad_max bytes, every byte
 * of the buffer (padding included) random. */
static inline pf_status ppc_make_frame(pf_frame *f, pf_pixfmt fmt, int w, int h, int pad_max,
                                       size_t offset)
{
    return otu_make_frame(f, fmt, w, h, pad_max, offset, OTU_RANDOM);
}

static inline void ppc_free(ppc_case *c)
{
    for (int i = 0; i < c->n; i++) pf_frame_unref(&c->src[i]);
}

static inline float ppc_randf(float lo, float hi)
{
    return lo + (hi - lo) * (float)(pf_test_rand() % 1000001) / 1000000.0f;
}

/* Random parameters: interp, letterbox, bgr, matrix, range, pad, mean, std
 * (std sometimes negative, small or large). */
static inline void ppc_random_params(pf_preprocess_params *p)
{
    *p = pf_preprocess_params_default();
    p->interp = (pf_interp)pf_test_rand_range(0, 2);
    p->letterbox = pf_test_rand() & 1;
    p->bgr = pf_test_rand() & 1;
    p->matrix = (pf_yuv_matrix)pf_test_rand_range(0, 1);
    p->range = (pf_yuv_range)pf_test_rand_range(0, 1);
    p->pad_value = (float)pf_test_rand_range(0, 255);
    for (int c = 0; c < 3; c++) {
        p->mean[c] = ppc_randf(-1.0f, 1.0f);
        p->std[c] = ppc_randf(0.05f, 2.0f);
        if (pf_test_rand() % 8 == 0) p->std[c] = -p->std[c];
    }
}

/* A random case of n frames with sizes up to max_dim (1x1 and thin frames
 * included), every format, random ROIs (or none), random destination. */
static inline pf_status ppc_random_case(ppc_case *c, int n, int max_dim)
{
    memset(c, 0, sizeof *c);
    c->use_rois = pf_test_rand() % 3 != 0;
    for (int i = 0; i < n; i++) {
        int w, h, kind = (int)pf_test_rand_range(0, 9);
        if (kind == 0) w = h = 1;
        else if (kind == 1) w = 1, h = (int)pf_test_rand_range(1, max_dim);
        else if (kind == 2) w = (int)pf_test_rand_range(1, max_dim), h = 1;
        else w = (int)pf_test_rand_range(1, max_dim), h = (int)pf_test_rand_range(1, max_dim);
        pf_pixfmt fmt = ppc_formats[pf_test_rand_range(0, PPC_NFMT - 1)];
        pf_status st = ppc_make_frame(&c->src[i], fmt, w, h, (int)pf_test_rand_range(0, 9),
                                      (size_t)pf_test_rand_range(0, 7));
        if (st != PF_OK) return st;
        c->n = i + 1;
        pf_rect r = {0, 0, w, h};
        if (c->use_rois && pf_test_rand() % 4 != 0) {
            r.width = (int)pf_test_rand_range(1, w);
            r.height = (int)pf_test_rand_range(1, h);
            r.x = (int)pf_test_rand_range(0, w - r.width);
            r.y = (int)pf_test_rand_range(0, h - r.height);
        }
        c->rois[i] = r;
    }
    c->W = (int)pf_test_rand_range(1, max_dim);
    c->H = (int)pf_test_rand_range(1, max_dim);
    if (pf_test_rand() % 8 == 0) c->W = c->H = 1;
    c->layout = (pf_test_rand() & 1) ? PF_LAYOUT_NCHW : PF_LAYOUT_NHWC;
    c->dtype = (pf_test_rand() & 1) ? PF_DTYPE_F32 : PF_DTYPE_F16;
    ppc_random_params(&c->p);
    return PF_OK;
}

/* One whole frame of `fmt`, sw x sh (strides padded by up to 5 bytes, 3
 * bytes into its buffer), into a W x H destination of `layout` and `dtype`;
 * random parameters but `interp`. */
static inline pf_status ppc_shape_case(ppc_case *c, pf_pixfmt fmt, int sw, int sh, int W, int H,
                                       pf_layout layout, pf_dtype dtype, pf_interp interp)
{
    memset(c, 0, sizeof *c);
    c->n = 1;
    pf_status st = ppc_make_frame(&c->src[0], fmt, sw, sh, 5, 3);
    c->rois[0] = (pf_rect){0, 0, sw, sh};
    c->W = W;
    c->H = H;
    c->layout = layout;
    c->dtype = dtype;
    ppc_random_params(&c->p);
    c->p.interp = interp;
    return st;
}

/* Which source formats and interpolations a run of random cases used: each
 * must have come up at least once, or the run proved less than it claims. */
typedef struct ppc_coverage {
    int per_fmt[PF_PIXFMT_COUNT], per_interp[3];
} ppc_coverage;

static inline void ppc_cover(ppc_coverage *cv, const ppc_case *c)
{
    for (int i = 0; i < c->n; i++) cv->per_fmt[c->src[i].format]++;
    cv->per_interp[c->p.interp]++;
}

static inline void ppc_check_coverage(const ppc_coverage *cv)
{
    for (int i = 0; i < PPC_NFMT; i++) CHECK(cv->per_fmt[ppc_formats[i]] > 0);
    for (int i = 0; i < 3; i++) CHECK(cv->per_interp[i] > 0);
}

static inline pf_status ppc_alloc_dst(const ppc_case *c, pf_tensor *t, pf_allocator *alloc,
                                      pf_stream *s)
{
    int64_t shape[4] = {c->n, 3, c->H, c->W};
    if (c->layout == PF_LAYOUT_NHWC) {
        shape[1] = c->H;
        shape[2] = c->W;
        shape[3] = 3;
    }
    return pf_tensor_alloc(t, c->dtype, 4, shape, c->layout, alloc, s);
}

static inline const char *ppc_interp_name(pf_interp i)
{
    return i == PF_INTERP_NEAREST ? "nearest" : i == PF_INTERP_BILINEAR ? "bilinear" : "area";
}

static inline void ppc_describe(const ppc_case *c, int frame)
{
    const pf_frame *f = &c->src[frame];
    const pf_rect *r = &c->rois[frame];
    fprintf(stderr,
            "    case: n %d, dst %dx%d %s %s, %s, letterbox %d, bgr %d, matrix %d, range %d, "
            "pad %g\n    frame %d: %dx%d %s strides %zu/%zu/%zu, roi {%d,%d %dx%d}%s\n",
            c->n, c->W, c->H, pf_layout_name(c->layout), pf_dtype_name(c->dtype),
            ppc_interp_name(c->p.interp), c->p.letterbox, c->p.bgr, (int)c->p.matrix,
            (int)c->p.range, (double)c->p.pad_value, frame, f->width, f->height,
            pf_pixfmt_name(f->format), f->stride[0], f->stride[1], f->stride[2], r->x, r->y,
            r->width, r->height, c->use_rois ? "" : " (rois NULL)");
}

/* Half bits as a signed integer that is monotonic in the value (+0 and -0
 * both map to 0), so ulp distance is a difference. */
static inline int ppc_half_order(uint16_t h)
{
    return (h & 0x8000u) ? -(int)(h & 0x7FFFu) : (int)h;
}

/* Largest deviations seen, accumulated over ppc_compare calls: f32 outputs
 * as |diff| / bound (<= 1 passes), f16 outputs in ulps where they differ
 * by more than the f32 bound (<= 1 passes). */
typedef struct ppc_stats {
    double worst_f32;
    int worst_ulps;
    long values;
} ppc_stats;

/* Compares `got` (host copy of the output) with the reference output `ref`,
 * both laid out as the case's destination. Returns the number of values out
 * of tolerance; prints the first few with their position. */
static inline long ppc_compare(const ppc_case *c, const void *ref, const void *got, double factor,
                               const char *label, ppc_stats *stats)
{
    const size_t W = (size_t)c->W, H = (size_t)c->H;
    long bad = 0;
    for (int n = 0; n < c->n; n++)
        for (int ch = 0; ch < 3; ch++) {
            double R = 1.0 / fabs((double)c->p.std[ch]);
            double B = fabs((double)c->p.mean[ch] / (double)c->p.std[ch]);
            double tol = factor * (R + B);
            for (size_t y = 0; y < H; y++)
                for (size_t x = 0; x < W; x++) {
                    size_t i = c->layout == PF_LAYOUT_NCHW
                                   ? (((size_t)n * 3 + (size_t)ch) * H + y) * W + x
                                   : (((size_t)n * H + y) * W + x) * 3 + (size_t)ch;
                    double a, b;
                    int ok;
                    if (c->dtype == PF_DTYPE_F32) {
                        a = ((const float *)ref)[i];
                        b = ((const float *)got)[i];
                        double ratio = fabs(a - b) / tol;
                        if (!(ratio == ratio)) ratio = 1e30; /* NaN */
                        ok = ratio <= 1.0;
                        if (stats && ratio > stats->worst_f32) stats->worst_f32 = ratio;
                    } else {
                        uint16_t ha = ((const uint16_t *)ref)[i], hb = ((const uint16_t *)got)[i];
                        a = pf_f16_to_f32(ha);
                        b = pf_f16_to_f32(hb);
                        int ulps = abs(ppc_half_order(ha) - ppc_half_order(hb));
                        ok = ulps <= 1 || fabs(a - b) <= tol;
                        /* Near zero halves are dense: there the f32 bound
                         * decides, and ulps are not worth reporting. */
                        if (stats && fabs(a - b) > tol && ulps > stats->worst_ulps)
                            stats->worst_ulps = ulps;
                    }
                    if (stats) stats->values++;
                    if (!ok) {
                        if (bad < 4) {
                            fprintf(stderr,
                                    "  %s: frame %d channel %d at (x %zu, y %zu): got %.9g, "
                                    "reference %.9g, bound %.3g\n",
                                    label, n, ch, x, y, b, a, tol);
                            if (bad == 0) ppc_describe(c, n);
                        }
                        bad++;
                    }
                }
        }
    return bad;
}

#endif
