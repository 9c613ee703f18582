/* The plain C reference of the fused preprocess: the definition of correct.
 *
 * One thread, one output pixel at a time, double precision, straight from the
 * formulas in include/pixflow/ops.h (Sampling, Fused preprocess). It shares
 * nothing with the fast paths but the descriptors: coordinates, weights and
 * YUV coefficients are derived here again from the documented definitions. */
#include <math.h>

#include "../ops/ops_impl.h"
#include "../ops/preprocess.h"

/* Source taps along one axis for destination index i of c content pixels
 * over r source pixels (ROI-relative). Enumerated lazily so an area tap list
 * of any length needs no storage. */
typedef struct ref_axis {
    int mode;          /* 0 nearest, 1 bilinear, 2 box (area over a shrinking axis) */
    int k0, count;     /* first source index (unclamped) and number of taps */
    double fx;         /* bilinear: weight of the right tap */
    double lo, hi;     /* box: covered source interval */
    int r;
} ref_axis;

static void ref_axis_init(ref_axis *a, int i, int c, int r, int interp)
{
    a->r = r;
    if (interp == PF_INTERP_NEAREST) {
        /* floor((i + 0.5) * r / c): exact in double (the true value is a
         * fraction with denominator 2c, far coarser than double's spacing). */
        a->mode = 0;
        a->k0 = (int)floor((i + 0.5) * r / c);
        a->count = 1;
    } else if (interp == PF_INTERP_AREA && r >= c) {
        a->mode = 2;
        a->lo = (double)i * r / c;
        a->hi = (double)(i + 1) * r / c;
        a->k0 = (int)floor(a->lo);
        a->count = (int)ceil(a->hi) - a->k0;
    } else {
        /* Bilinear; also area over a growing axis (OpenCV's fallback). */
        double s = (i + 0.5) * r / c - 0.5;
        double f = floor(s);
        a->mode = 1;
        a->k0 = (int)f;
        a->fx = s - f;
        a->count = 2;
    }
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* Tap t: source index (clamped into the ROI) and weight. */
static void ref_axis_tap(const ref_axis *a, int t, int *k, double *w)
{
    int raw = a->k0 + t;
    *k = clampi(raw, 0, a->r - 1);
    if (a->mode == 0) {
        *w = 1.0;
    } else if (a->mode == 1) {
        *w = t == 0 ? 1.0 - a->fx : a->fx;
    } else {
        double l = fmax(a->lo, (double)raw), h = fmin(a->hi, (double)raw + 1.0);
        *w = (h - l) / (a->hi - a->lo);
    }
}

static double clamp255(double v) { return v < 0.0 ? 0.0 : (v > 255.0 ? 255.0 : v); }

/* R, G, B (0..255) of the source pixel at frame coordinates (x, y). YUV:
 * the pixel's own Y and the chroma sample covering it, (x/2, y/2). */
static void ref_pixel(const pf_pp_frame *f, int x, int y, const double yuv[6], double rgb[3])
{
    const uint8_t *p;
    switch (f->format) {
    case PF_PIXFMT_RGB24:
        p = f->plane[0] + y * f->stride[0] + 3 * (int64_t)x;
        rgb[0] = p[0], rgb[1] = p[1], rgb[2] = p[2];
        return;
    case PF_PIXFMT_BGR24:
        p = f->plane[0] + y * f->stride[0] + 3 * (int64_t)x;
        rgb[0] = p[2], rgb[1] = p[1], rgb[2] = p[0];
        return;
    case PF_PIXFMT_RGBA:
        p = f->plane[0] + y * f->stride[0] + 4 * (int64_t)x;
        rgb[0] = p[0], rgb[1] = p[1], rgb[2] = p[2];
        return;
    default: break;
    }
    double Y = f->plane[0][y * f->stride[0] + x], U, V;
    if (f->format == PF_PIXFMT_NV12) {
        const uint8_t *uv = f->plane[1] + (y / 2) * f->stride[1] + 2 * (int64_t)(x / 2);
        U = uv[0];
        V = uv[1];
    } else { /* I420 */
        U = f->plane[1][(y / 2) * f->stride[1] + x / 2];
        V = f->plane[2][(y / 2) * f->stride[2] + x / 2];
    }
    double yy = (Y - yuv[0]) * yuv[1], u = U - 128.0, v = V - 128.0;
    rgb[0] = clamp255(yy + yuv[2] * v);
    rgb[1] = clamp255(yy - yuv[3] * u - yuv[4] * v);
    rgb[2] = clamp255(yy + yuv[5] * u);
}

/* ops.h's coefficients, from Kr and Kb, in double. */
static void ref_yuv(int matrix, int range, double out[6])
{
    double kr = matrix == PF_YUV_BT709 ? 0.2126 : 0.299;
    double kb = matrix == PF_YUV_BT709 ? 0.0722 : 0.114;
    double kg = 1.0 - kr - kb;
    int lim = range == PF_YUV_LIMITED;
    double cs = lim ? 255.0 / 224.0 : 1.0;
    out[0] = lim ? 16.0 : 0.0;
    out[1] = lim ? 255.0 / 219.0 : 1.0;
    out[2] = 2.0 * (1.0 - kr) * cs;
    out[3] = 2.0 * kb * (1.0 - kb) / kg * cs;
    out[4] = 2.0 * kr * (1.0 - kr) / kg * cs;
    out[5] = 2.0 * (1.0 - kb) * cs;
}

static void ref_store(const pf_pp_params *p, int f, int x, int y, int c, double v)
{
    size_t W = (size_t)p->width, H = (size_t)p->height;
    size_t idx = p->nchw ? (((size_t)f * 3 + (size_t)c) * H + (size_t)y) * W + (size_t)x
                         : (((size_t)f * H + (size_t)y) * W + (size_t)x) * 3 + (size_t)c;
    if (p->f16) ((uint16_t *)p->dst)[idx] = pf_f32_to_f16((float)v);
    else ((float *)p->dst)[idx] = (float)v;
}

pf_status pf_ref_preprocess(pf_ops *ops, const pf_pp_params *p, const pf_pp_frame *frames)
{
    (void)ops;
    double yuv[6];
    ref_yuv(p->matrix, p->range, yuv);
    /* Output channel c takes source channel src_c[c] of (R, G, B). */
    const int src_c[3] = {p->bgr ? 2 : 0, 1, p->bgr ? 0 : 2};
    for (int n = 0; n < p->n; n++) {
        const pf_pp_frame *f = &frames[n];
        for (int y = 0; y < p->height; y++) {
            for (int x = 0; x < p->width; x++) {
                int i = x - f->pad_left, j = y - f->pad_top;
                double rgb[3] = {p->pad_value, p->pad_value, p->pad_value};
                if (i >= 0 && i < f->content_w && j >= 0 && j < f->content_h) {
                    ref_axis ax, ay;
                    ref_axis_init(&ax, i, f->content_w, f->roi_w, p->interp);
                    ref_axis_init(&ay, j, f->content_h, f->roi_h, p->interp);
                    rgb[0] = rgb[1] = rgb[2] = 0.0;
                    for (int ty = 0; ty < ay.count; ty++) {
                        int ky;
                        double wy;
                        ref_axis_tap(&ay, ty, &ky, &wy);
                        double row[3] = {0.0, 0.0, 0.0};
                        for (int tx = 0; tx < ax.count; tx++) {
                            int kx;
                            double wx, px[3];
                            ref_axis_tap(&ax, tx, &kx, &wx);
                            ref_pixel(f, f->roi_x + kx, f->roi_y + ky, yuv, px);
                            for (int c = 0; c < 3; c++) row[c] += wx * px[c];
                        }
                        for (int c = 0; c < 3; c++) rgb[c] += wy * row[c];
                    }
                }
                for (int c = 0; c < 3; c++) {
                    double v = (rgb[src_c[c]] / 255.0 - (double)p->mean[c]) / (double)p->std[c];
                    ref_store(p, n, x, y, c, v);
                }
            }
        }
    }
    return PF_OK;
}
