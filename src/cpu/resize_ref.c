/* The plain C reference of pf_ops_resize and pf_ops_resize_mask: the
 * definition of correct.
 *
 * One thread, one destination sample at a time, no tables: every tap and
 * weight is derived here again from the definitions in resize.h / ops.h
 * (the helpers the fast paths use are deliberately not called), so a mistake
 * in those shows up as a test failure instead of being copied into the
 * definition. What must be shared for bit-exact u8 results is only the float
 * arithmetic itself: weights are exact integers divided once in float, sums
 * go left to right from the first product through CV_MUL/CV_ADD, and u8
 * results use pf_cv_round (src/ops/convert.h). */
#include <math.h>
#include <string.h>

#include "../ops/ops_impl.h"
#include "../ops/resize.h"

/* The taps of destination index i along one axis (c destination pixels over
 * r source pixels), enumerated one at a time. */
typedef struct ref_axis {
    int mode;          /* 0 nearest, 1 bilinear, 2 box */
    int count;         /* taps */
    int k[2];          /* nearest: k[0]; bilinear: both taps (clamped) */
    float w[2];        /* bilinear weights */
    int first;         /* box: first source pixel */
    int64_t lo, hi;    /* box: covered interval in units of 1/c source pixel */
    int c, r;
} ref_axis;

static int clampi(int64_t v, int hi) { return v < 0 ? 0 : (v > hi ? hi : (int)v); }

static void ref_axis_init(ref_axis *a, int i, int c, int r, int interp)
{
    memset(a, 0, sizeof *a);
    a->c = c;
    a->r = r;
    if (interp == PF_INTERP_NEAREST) {
        /* floor((i + 0.5) r / c), exact in double. */
        a->mode = 0;
        a->count = 1;
        a->k[0] = clampi((int64_t)floor((i + 0.5) * r / c), r - 1);
    } else if (interp == PF_INTERP_AREA && r >= c) {
        a->mode = 2;
        a->lo = (int64_t)i * r;
        a->hi = (int64_t)(i + 1) * r;
        a->first = (int)(a->lo / c);
        a->count = (int)((a->hi + c - 1) / c) - a->first;
    } else {
        /* s = (i + 0.5) r / c - 0.5 = num / den exactly. */
        int64_t num = (int64_t)(2 * i + 1) * r - c, den = 2 * (int64_t)c;
        int64_t k0 = (int64_t)floor((double)num / (double)den);
        float fx = (float)(num - k0 * den) / (float)den;
        a->mode = 1;
        a->count = 2;
        a->k[0] = clampi(k0, r - 1);
        a->k[1] = clampi(k0 + 1, r - 1);
        a->w[0] = 1.0f - fx;
        a->w[1] = fx;
    }
}

static void ref_axis_tap(const ref_axis *a, int t, int *k, float *w)
{
    if (a->mode == 0) {
        *k = a->k[0];
        *w = 1.0f;
    } else if (a->mode == 1) {
        *k = a->k[t];
        *w = a->w[t];
    } else {
        int64_t kk = a->first + t, lo = kk * a->c, hi = lo + a->c;
        int64_t ov = (a->hi < hi ? a->hi : hi) - (a->lo > lo ? a->lo : lo);
        *k = (int)kk;
        *w = (float)ov / (float)a->r;
    }
}

static float sample(const pf_rs_plane *p, const uint8_t *src, int x, int y, int ch)
{
    const uint8_t *row = src + (int64_t)y * p->src_stride;
    if (p->f32) {
        float v;
        memcpy(&v, row + (int64_t)x * 4, sizeof v);
        return v;
    }
    return (float)row[(int64_t)x * p->channels + ch];
}

pf_status pf_ref_resize(pf_ops *ops, const pf_rs_plane *p)
{
    (void)ops;
    for (int n = 0; n < p->count; n++) {
        const uint8_t *src = (const uint8_t *)p->src + (int64_t)n * p->src_plane;
        uint8_t *dst = (uint8_t *)p->dst + (int64_t)n * p->dst_plane;
        for (int j = 0; j < p->dh; j++) {
            ref_axis ay;
            ref_axis_init(&ay, j, p->dh, p->sh, p->interp);
            uint8_t *drow = dst + (int64_t)j * p->dst_stride;
            for (int i = 0; i < p->dw; i++) {
                ref_axis ax;
                ref_axis_init(&ax, i, p->dw, p->sw, p->interp);
                for (int ch = 0; ch < p->channels; ch++) {
                    float v = 0.0f;
                    if (p->interp == PF_INTERP_NEAREST) {
                        v = sample(p, src, ax.k[0], ay.k[0], ch);
                    } else {
                        for (int t = 0; t < ay.count; t++) {
                            int ky, kx;
                            float wy, wx, h = 0.0f;
                            ref_axis_tap(&ay, t, &ky, &wy);
                            for (int s = 0; s < ax.count; s++) {
                                ref_axis_tap(&ax, s, &kx, &wx);
                                float prod = CV_MUL(wx, sample(p, src, kx, ky, ch));
                                h = s == 0 ? prod : CV_ADD(h, prod);
                            }
                            float prod = CV_MUL(wy, h);
                            v = t == 0 ? prod : CV_ADD(v, prod);
                        }
                    }
                    if (p->f32) memcpy(drow + (int64_t)i * 4, &v, sizeof v);
                    else drow[(int64_t)i * p->channels + ch] = pf_cv_round(v);
                }
            }
        }
    }
    return PF_OK;
}
