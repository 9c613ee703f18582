/* CONV (1D and 2D, NCHW, groups, dilation, explicit pads, bias, fused act).
 *
 * Three paths:
 * - one input channel per group (depthwise, incl. channel multipliers): a
 *   direct loop, threaded over output rows. Each output row is computed in
 *   one pass: the columns whose taps all lie inside the input run without
 *   bounds checks (3x3 with dilation 1 has its own fused nine-tap loop),
 *   the few border columns with checks; bias and act are applied while the
 *   row is still in L1. im2col would multiply the memory traffic by k*k for
 *   a product with one input channel.
 * - 1x1, stride 1, no pads: the input image of each group already is the
 *   [Cg, H*W] matrix of the product, so sgemm reads it in place.
 * - otherwise im2col (threaded over rows of the column matrix) into scratch,
 *   then sgemm per group. Column blocks bound the scratch (COL_CAP floats):
 *   Y[:, j0:j1] = W * col[:, j0:j1].
 * The products are split over the pool in tiles (pf_nn_sgemm_pool); bias and
 * act run on each tile as soon as it is done, while it is in cache. Products
 * with few input rows (Cg*kh*kw <= PW_SMALL_K: thin 1x1s, 3-channel stems)
 * skip sgemm for conv_pw.c's register-blocked loops, the non-1x1 ones with
 * their column matrix built per thread in L1-sized chunks. */
#include "../../core/vectorize.h" /* first: compile flags for the row loops */

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "blas.h"
#include "kernels.h"

/* Most floats of one im2col block (4 MiB); at least MIN_COLS columns. */
enum { COL_CAP = 1 << 20, MIN_COLS = 256 };

typedef pf_nn_conv_geom conv_geom;

/* Reads the geometry; 0 on success, else writes why. */
static int conv_geom_get(const pf_ir_graph *g, const pf_ir_node *n, conv_geom *s, char *why,
                         size_t why_size)
{
    if (pf_nn_conv_geom_read(g, n, "conv", s, why, why_size)) return -1;
    if (s->pt < 0 || s->pb < 0 || s->pl < 0 || s->pr < 0) {
        snprintf(why, why_size, "pads must be >= 0 (unresolved attrs?)");
        return -1;
    }
    s->M = s->w0;
    if (s->C % s->group || s->M % s->group || s->w1 * s->group != s->C) {
        snprintf(why, why_size, "X has %lld channels, W is [%lld, %lld, ...] with group %lld",
                 (long long)s->C, (long long)s->M, (long long)s->w1, (long long)s->group);
        return -1;
    }
    int64_t eh = (s->kh - 1) * s->dh + 1, ew = (s->kw - 1) * s->dw + 1;
    int64_t oh = (s->H + s->pt + s->pb - eh) / s->sh + 1;
    int64_t ow = (s->W + s->pl + s->pr - ew) / s->sw + 1;
    return pf_nn_conv_geom_finish(g, n, s, oh, ow, why, why_size);
}

/* Products with at most this many input rows (Cg*kh*kw) go to
 * pf_nn_cpu_pw_small instead of sgemm (conv_pw.c says why); non-1x1 ones
 * build their column matrix in L1-sized chunks, without scratch. */
enum { PW_SMALL_K = 32 };

static int conv_is_depthwise(const conv_geom *s) { return s->Cg == 1; }

static int conv_is_small_k(const conv_geom *s)
{
    return s->Cg * s->kh * s->kw <= PW_SMALL_K && s->Mg <= PF_NN_PW_MAX_M;
}

static int conv_is_pointwise(const conv_geom *s)
{
    return s->kh == 1 && s->kw == 1 && s->sh == 1 && s->sw == 1 && s->pt == 0 && s->pl == 0 &&
           s->pb == 0 && s->pr == 0;
}

static int64_t conv_block_cols(const conv_geom *s)
{
    int64_t K = s->Cg * s->kh * s->kw, cols = s->OH * s->OW;
    int64_t b = COL_CAP / (K > 0 ? K : 1);
    if (b < MIN_COLS) b = MIN_COLS;
    return b < cols ? b : cols;
}

size_t pf_nn_cpu_conv_scratch(const pf_ir_graph *g, const pf_ir_node *n)
{
    conv_geom s;
    char why[8];
    if (conv_geom_get(g, n, &s, why, sizeof why)) return 0;
    if (conv_is_depthwise(&s) || conv_is_pointwise(&s) || conv_is_small_k(&s)) return 0;
    size_t bytes = (size_t)(s.Cg * s.kh * s.kw * conv_block_cols(&s)) * sizeof(float);
    return (bytes + 63) & ~(size_t)63;
}

/* ---- depthwise ------------------------------------------------------------- */

typedef struct dw_job {
    const conv_geom *s;
    const float *x, *w, *bias;
    float *y;
    pf_ir_act act;
    float act_a, act_b;
    int64_t lo, hi;           /* output columns whose taps are all inside the row */
} dw_job;

/* Columns [ox0, ox1) with every tap checked (the borders). */
static void dw_cols_checked(const conv_geom *s, const float *xp, const float *w, float b,
                            int64_t oy, int64_t ox0, int64_t ox1, float *yr)
{
    int64_t iy0 = oy * s->sh - s->pt;
    for (int64_t ox = ox0; ox < ox1; ox++) {
        int64_t ix0 = ox * s->sw - s->pl;
        float acc = b;
        for (int64_t ky = 0; ky < s->kh; ky++) {
            int64_t iy = iy0 + ky * s->dh;
            if (iy < 0 || iy >= s->H) continue;
            const float *r = xp + iy * s->W;
            for (int64_t kx = 0; kx < s->kw; kx++) {
                int64_t ix = ix0 + kx * s->dw;
                if (ix >= 0 && ix < s->W) acc += w[ky * s->kw + kx] * r[ix];
            }
        }
        yr[ox] = acc;
    }
}

/* Interior columns, any kernel: one pass over the row per tap. */
WIDE_CLONES static void dw_cols_taps(const conv_geom *s, const float *xp, const float *w, float b,
                                     int64_t oy, int64_t lo, int64_t hi, float *restrict yr)
{
    int64_t iy0 = oy * s->sh - s->pt, sw = s->sw, n = hi - lo;
    float *restrict out = yr + lo;
    for (int64_t i = 0; i < n; i++) out[i] = b;
    for (int64_t ky = 0; ky < s->kh; ky++) {
        int64_t iy = iy0 + ky * s->dh;
        if (iy < 0 || iy >= s->H) continue;
        for (int64_t kx = 0; kx < s->kw; kx++) {
            const float wv = w[ky * s->kw + kx];
            const float *r = xp + iy * s->W + lo * sw - s->pl + kx * s->dw;
            if (sw == 1)
                for (int64_t i = 0; i < n; i++) out[i] += wv * r[i];
            else
                for (int64_t i = 0; i < n; i++) out[i] += wv * r[i * sw];
        }
    }
}

/* Interior columns of an interior row, 3x3 with dilation 1: nine taps fused. */
WIDE_CLONES static void dw_cols_3x3(const float *r0, const float *r1, const float *r2,
                                    const float *w, float b, int64_t sw, int64_t n,
                                    float *restrict out)
{
    const float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6],
                w7 = w[7], w8 = w[8];
    if (sw == 1) {
        for (int64_t i = 0; i < n; i++)
            out[i] = b + w0 * r0[i] + w1 * r0[i + 1] + w2 * r0[i + 2] + w3 * r1[i] +
                     w4 * r1[i + 1] + w5 * r1[i + 2] + w6 * r2[i] + w7 * r2[i + 1] +
                     w8 * r2[i + 2];
    } else {
        for (int64_t i = 0; i < n; i++) {
            int64_t j = i * sw;
            out[i] = b + w0 * r0[j] + w1 * r0[j + 1] + w2 * r0[j + 2] + w3 * r1[j] +
                     w4 * r1[j + 1] + w5 * r1[j + 2] + w6 * r2[j] + w7 * r2[j + 1] +
                     w8 * r2[j + 2];
        }
    }
}

static void dw_rows(void *ctx, int ith, int nth)
{
    const dw_job *j = ctx;
    const conv_geom *s = j->s;
    int64_t rows = s->N * s->M * s->OH;
    int64_t r0 = rows * ith / nth, r1 = rows * (ith + 1) / nth;
    int fused = s->kh == 3 && s->kw == 3 && s->dh == 1 && s->dw == 1;
    for (int64_t r = r0; r < r1; r++) {
        int64_t plane = r / s->OH, oy = r % s->OH;
        int64_t n = plane / s->M, m = plane % s->M;
        int64_t c = m / s->Mg;
        const float *xp = j->x + (n * s->C + c) * s->H * s->W;
        const float *w = j->w + m * s->kh * s->kw;
        float b = j->bias ? j->bias[m] : 0.0f;
        float *yr = j->y + r * s->OW;
        int64_t lo = j->lo, hi = j->hi;
        if (hi <= lo) {
            dw_cols_checked(s, xp, w, b, oy, 0, s->OW, yr);
        } else {
            dw_cols_checked(s, xp, w, b, oy, 0, lo, yr);
            int64_t iy0 = oy * s->sh - s->pt;
            if (fused && iy0 >= 0 && iy0 + 2 < s->H) {
                const float *rr = xp + iy0 * s->W + lo * s->sw - s->pl;
                dw_cols_3x3(rr, rr + s->W, rr + 2 * s->W, w, b, s->sw, hi - lo, yr + lo);
            } else {
                dw_cols_taps(s, xp, w, b, oy, lo, hi, yr);
            }
            dw_cols_checked(s, xp, w, b, oy, hi, s->OW, yr);
        }
        pf_nn_cpu_apply_act(yr, (size_t)s->OW, j->act, j->act_a, j->act_b);
    }
}

/* The fused act on one row: the activations of mobile nets (ReLU, ReLU6,
 * HardSwish) here in vector form, the rest through act.c. The formulas of
 * pf_nn_act_scalar, except x * (1/6) for x / 6 (within an ulp; a vector
 * division costs several multiplies). */
WIDE_CLONES static void row_act(float *restrict y, int64_t n, pf_ir_act act, float a, float b)
{
    switch (act) {
    case PF_IR_ACT_NONE: return;
    case PF_IR_ACT_RELU:
        for (int64_t i = 0; i < n; i++) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
        return;
    case PF_IR_ACT_CLIP:
        for (int64_t i = 0; i < n; i++) {
            float v = y[i] < a ? a : y[i];
            y[i] = v > b ? b : v;
        }
        return;
    case PF_IR_ACT_HARD_SWISH:
        for (int64_t i = 0; i < n; i++) {
            float t = y[i] * (1.0f / 6.0f) + 0.5f;
            t = t < 0.0f ? 0.0f : t;
            t = t > 1.0f ? 1.0f : t;
            y[i] = y[i] * t;
        }
        return;
    default: pf_nn_cpu_apply_act(y, (size_t)n, act, a, b); return;
    }
}

/* Most floats of the per-thread padded-row ring (48 KiB of stack). */
enum { DW_RING_FLOATS = 12288 };

/* Nine taps fused over unit-stride sources (p[t] already offset per tap). */
WIDE_CLONES static void dw_cols_9(const float *const *p, const float *w, float b, int64_t n,
                                  float *restrict out)
{
    const float *p0 = p[0], *p1 = p[1], *p2 = p[2], *p3 = p[3], *p4 = p[4], *p5 = p[5],
                *p6 = p[6], *p7 = p[7], *p8 = p[8];
    const float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6],
                w7 = w[7], w8 = w[8];
    for (int64_t i = 0; i < n; i++)
        out[i] = b + w0 * p0[i] + w1 * p1[i] + w2 * p2[i] + w3 * p3[i] + w4 * p4[i] +
                 w5 * p5[i] + w6 * p6[i] + w7 * p7[i] + w8 * p8[i];
}

/* out[i] += w * r[i], one tap. */
WIDE_CLONES static void dw_row_tap(float *restrict out, const float *r, float w, int64_t n)
{
    for (int64_t i = 0; i < n; i++) out[i] += w * r[i];
}

/* Most taps dw_cols_many takes (7x7); larger kernels go tap by tap. */
enum { DW_MANY_TAPS = 49 };

/* Sixteen floats, loadable from any float address (GCC vector extension:
 * one zmm in the AVX-512 clone, two ymm in the AVX2 one, SSE otherwise). */
#if defined(__GNUC__)
typedef float dw_v16 __attribute__((vector_size(64), aligned(4)));
#define DW_HAVE_V16 1
#else
#define DW_HAVE_V16 0
#endif

/* out[i] = b + sum_t w[t] * p[t][i] over unit-stride sources, 32 or 16
 * outputs at a time with the sums in registers: one call per row instead
 * of one per tap, and no reloading of out between taps. */
WIDE_CLONES static void dw_cols_many(const float *const *p, const float *w, int64_t taps, float b,
                                     int64_t n, float *restrict out)
{
    int64_t i0 = 0;
#if DW_HAVE_V16
    for (; i0 + 32 <= n; i0 += 32) {
        dw_v16 a0 = (dw_v16){0} + b, a1 = a0;
        for (int64_t t = 0; t < taps; t++) {
            const float *r = p[t] + i0;
            a0 += w[t] * *(const dw_v16 *)r;
            a1 += w[t] * *(const dw_v16 *)(r + 16);
        }
        *(dw_v16 *)(out + i0) = a0;
        *(dw_v16 *)(out + i0 + 16) = a1;
    }
    for (; i0 + 16 <= n; i0 += 16) {
        dw_v16 a0 = (dw_v16){0} + b;
        for (int64_t t = 0; t < taps; t++) a0 += w[t] * *(const dw_v16 *)(p[t] + i0);
        *(dw_v16 *)(out + i0) = a0;
    }
#endif
    for (int64_t i = i0; i < n; i++) {
        float acc = b;
        for (int64_t t = 0; t < taps; t++) acc += w[t] * p[t][i];
        out[i] = acc;
    }
}

/* dst[k] = src[k*sw + off] inside [0, n), else 0. */
WIDE_CLONES static void dw_fill_phase(float *restrict dst, int64_t len, const float *src,
                                      int64_t n, int64_t off, int64_t sw)
{
    int64_t k0 = off >= 0 ? 0 : (-off + sw - 1) / sw;
    int64_t k1 = n - 1 - off < 0 ? 0 : (n - 1 - off) / sw + 1;
    if (k1 > len) k1 = len;
    if (k0 > k1) k0 = k1;
    for (int64_t k = 0; k < k0; k++) dst[k] = 0.0f;
    const float *sp = src + (k0 * sw + off);
    if (sw == 2) /* a constant stride vectorises (permutes, not gathers) */
        for (int64_t k = 0; k < k1 - k0; k++) dst[k0 + k] = sp[2 * k];
    else
        for (int64_t k = 0; k < k1 - k0; k++) dst[k0 + k] = sp[k * sw];
    for (int64_t k = k1; k < len; k++) dst[k] = 0.0f;
}

/* Rows through zero-padded, stride-deinterleaved copies: padded input
 * column sw*k + q is kept at phase q, index k, so tap kx of output column i
 * (padded column sw*i + kx*dw) is phase (kx*dw) % sw at i + (kx*dw) / sw and
 * every tap is a unit-stride stream, borders included. Strided and narrow
 * convs then run the same vector loop as the interior of wide ones. The ring
 * holds the (kh-1)*dh+1 input rows one output row spans, plus a zero row;
 * consecutive output rows of one plane reuse the rows they share. */
#if defined(__GNUC__) && !defined(__clang__)
/* Only bookkeeping here (the rows run in the clones above); vectorising its
 * few-element loops made gathers and store-forwarding stalls that cost more
 * than a narrow row's arithmetic. */
__attribute__((optimize("no-tree-vectorize")))
#endif
static void dw_rows_padded(void *ctx, int ith, int nth)
{
    const dw_job *j = ctx;
    const conv_geom *s = j->s;
    float ring[DW_RING_FLOATS];
    int64_t tag[64];
    int64_t sw = s->sw, pw = s->W + s->pl + s->pr, ph = (pw + sw - 1) / sw, slot_len = sw * ph;
    int64_t R = (s->kh - 1) * s->dh + 1;
    float *zero = ring + R * slot_len;
    memset(zero, 0, (size_t)slot_len * sizeof(float));
    for (int64_t i = 0; i < R; i++) tag[i] = -1;
    int64_t rows = s->N * s->M * s->OH;
    int64_t r0 = rows * ith / nth, r1 = rows * (ith + 1) / nth;
    if (r0 >= r1) return; /* also keeps the divisions below off empty outputs */
    int64_t taps = s->kh * s->kw;
    int nine = taps == 9, many = taps <= DW_MANY_TAPS;
    const float *rp[64], *tp[DW_MANY_TAPS];
    /* where each tap reads in its ring row: computed once, as the divisions
     * per row would cost more than the row's arithmetic on small planes */
    int64_t toff[DW_MANY_TAPS];
    for (int64_t t = 0; many && t < taps; t++) {
        int64_t off = t % s->kw * s->dw;
        toff[t] = off % sw * ph + off / sw;
    }
    /* (n, m, oy) of row r, advanced by counting: divisions per row cost as
     * much as a narrow row's arithmetic */
    int64_t oy = r0 % s->OH, m = r0 / s->OH % s->M, n = r0 / s->OH / s->M;
    int64_t iy_first = oy * s->sh - s->pt, base = (iy_first % R + R) % R, sh_mod_r = s->sh % R;
    for (int64_t r = r0; r < r1; r++) {
        int64_t c = s->Mg == 1 ? m : m / s->Mg;
        const float *xp = j->x + (n * s->C + c) * s->H * s->W;
        const float *w = j->w + m * s->kh * s->kw;
        float b = j->bias ? j->bias[m] : 0.0f;
        float *yr = j->y + r * s->OW;
        int64_t iy0 = oy * s->sh - s->pt;
        /* ring slot of input row iy is iy % R (base: of iy0, kept by
         * counting); (kh-1)*dh < R, so one subtraction brings base + ky*dh
         * back into range */
        if (oy == 0) base = (iy0 % R + R) % R;
        for (int64_t ky = 0; ky < s->kh; ky++) {
            int64_t iy = iy0 + ky * s->dh;
            if (iy < 0 || iy >= s->H) {
                rp[ky] = zero;
                continue;
            }
            int64_t key = (n * s->C + c) * s->H + iy, slot = base + ky * s->dh;
            if (slot >= R) slot -= R;
            float *row = ring + slot * slot_len;
            if (tag[slot] != key) {
                const float *src = xp + iy * s->W;
                if (sw == 1) {
                    memset(row, 0, (size_t)s->pl * sizeof(float));
                    memcpy(row + s->pl, src, (size_t)s->W * sizeof(float));
                    memset(row + s->pl + s->W, 0, (size_t)(ph - s->pl - s->W) * sizeof(float));
                } else {
                    for (int64_t q = 0; q < sw; q++)
                        dw_fill_phase(row + q * ph, ph, src, s->W, q - s->pl, sw);
                }
                tag[slot] = key;
            }
            rp[ky] = row;
        }
        if (many)
            for (int64_t ky = 0, t = 0; ky < s->kh; ky++)
                for (int64_t kx = 0; kx < s->kw; kx++, t++) tp[t] = rp[ky] + toff[t];
        if (nine) {
            dw_cols_9(tp, w, b, s->OW, yr);
        } else if (many) {
            dw_cols_many(tp, w, taps, b, s->OW, yr);
        } else {
            for (int64_t i = 0; i < s->OW; i++) yr[i] = b;
            for (int64_t ky = 0; ky < s->kh; ky++)
                for (int64_t kx = 0; kx < s->kw; kx++) {
                    int64_t off = kx * s->dw;
                    dw_row_tap(yr, rp[ky] + off % sw * ph + off / sw, w[ky * s->kw + kx], s->OW);
                }
        }
        row_act(yr, s->OW, j->act, j->act_a, j->act_b);
        base += sh_mod_r;
        if (base >= R) base -= R;
        if (++oy == s->OH) {
            oy = 0;
            if (++m == s->M) {
                m = 0;
                n++;
            }
        }
    }
}

static void conv_depthwise(const pf_nn_cpu_args *a, const conv_geom *s)
{
    dw_job j = {s, a->in[0], a->in[1], a->node->n_in > 2 ? a->in[2] : NULL, a->out[0],
                a->node->act, a->node->act_a, a->node->act_b, 0, 0};
    /* ox*sw - pl >= 0 and ox*sw - pl + (kw-1)*dw <= W-1 */
    j.lo = (s->pl + s->sw - 1) / s->sw;
    int64_t last = s->W - 1 + s->pl - (s->kw - 1) * s->dw;
    j.hi = last < 0 ? 0 : last / s->sw + 1;
    if (j.hi > s->OW) j.hi = s->OW;
    if (j.lo > j.hi) j.lo = j.hi;
    int64_t pw = s->W + s->pl + s->pr, slot_len = s->sw * ((pw + s->sw - 1) / s->sw);
    int64_t R = (s->kh - 1) * s->dh + 1;
    if (s->kh <= 64 && R <= 64 && (R + 1) * slot_len <= DW_RING_FLOATS)
        pf_nn_cpu_parallel(a->pool, dw_rows_padded, &j);
    else
        pf_nn_cpu_parallel(a->pool, dw_rows, &j);
}

/* ---- im2col + sgemm ------------------------------------------------------------ */

typedef struct im2col_job {
    const conv_geom *s;
    const float *x;           /* first input channel of the group */
    float *col;               /* [Cg*kh*kw, j1 - j0] */
    int64_t j0, j1;
} im2col_job;

WIDE_CLONES static void im2col_rows(void *ctx, int ith, int nth)
{
    const im2col_job *j = ctx;
    const conv_geom *s = j->s;
    int64_t K = s->Cg * s->kh * s->kw, ncol = j->j1 - j->j0;
    int64_t k0 = K * ith / nth, k1 = K * (ith + 1) / nth;
    for (int64_t k = k0; k < k1; k++) {
        int64_t c = k / (s->kh * s->kw), ky = k / s->kw % s->kh, kx = k % s->kw;
        const float *xp = j->x + c * s->H * s->W;
        float *dst = j->col + k * ncol;
        /* valid ox: 0 <= ox*sw - pl + kx*dw < W */
        int64_t off = kx * s->dw - s->pl;
        int64_t vlo = off >= 0 ? 0 : (-off + s->sw - 1) / s->sw;
        int64_t vhi = s->W - 1 - off < 0 ? 0 : (s->W - 1 - off) / s->sw + 1;
        if (vhi > s->OW) vhi = s->OW;
        for (int64_t jj = j->j0; jj < j->j1;) {
            int64_t oy = jj / s->OW, ox0 = jj % s->OW;
            int64_t ox1 = s->OW;
            if (oy * s->OW + ox1 > j->j1) ox1 = j->j1 - oy * s->OW;
            float *d = dst + (jj - j->j0);   /* d[i] is column ox0 + i */
            int64_t iy = oy * s->sh - s->pt + ky * s->dh;
            if (iy < 0 || iy >= s->H) {
                memset(d, 0, (size_t)(ox1 - ox0) * sizeof(float));
            } else {
                int64_t a0 = vlo > ox0 ? vlo : ox0, a1 = vhi < ox1 ? vhi : ox1;
                /* A pad wider than this stretch of the row (vlo past ox1)
                 * leaves it all padding: never zero or copy past ox1. */
                if (a0 > ox1) a0 = ox1;
                if (a1 < a0) a1 = a0;
                /* r[i] is input column a0*sw + off + i*sw (>= 0 from vlo) */
                const float *r = xp + iy * s->W + a0 * s->sw + off;
                float *da = d + (a0 - ox0);
                for (int64_t ox = ox0; ox < a0; ox++) d[ox - ox0] = 0.0f;
                if (s->sw == 1)
                    memcpy(da, r, (size_t)(a1 - a0) * sizeof(float));
                else if (s->sw == 2)
                    for (int64_t i = 0; i < a1 - a0; i++) da[i] = r[2 * i];
                else
                    for (int64_t i = 0; i < a1 - a0; i++) da[i] = r[i * s->sw];
                for (int64_t ox = a1; ox < ox1; ox++) d[ox - ox0] = 0.0f;
            }
            jj += ox1 - ox0;
        }
    }
}

/* The epilogue of one sgemm tile: bias and act on rows [i0, i1) of the
 * group's output, columns [c0, c1), while the tile is still in cache. */
typedef struct conv_post {
    float *y;                 /* the group's output, [Mg, ldy] */
    const float *bias;        /* the group's bias; NULL: none */
    int64_t ldy;
    pf_ir_act act;
    float act_a, act_b;
} conv_post;

static void conv_post_tile(void *ctx, int i0, int i1, int c0, int c1)
{
    const conv_post *p = ctx;
    for (int i = i0; i < i1; i++) {
        float *y = p->y + i * p->ldy + c0;
        int64_t n = c1 - c0;
        if (p->bias) {
            const float b = p->bias[i];
            for (int64_t k = 0; k < n; k++) y[k] += b;
        }
        row_act(y, n, p->act, p->act_a, p->act_b);
    }
}


/* Columns per im2col chunk of the small-K path: [K, PW_CHUNK] stays in L1. */
enum { PW_CHUNK = 256 };

typedef struct pw_job {
    const float *w, *bias, *x;
    float *y;
    int64_t M, K, ldx, ldy, n;
    pf_ir_act act;
    float act_a, act_b;
    const conv_geom *s;       /* non-NULL: x is the image, im2col per chunk */
} pw_job;

static void pw_cols(void *ctx, int ith, int nth)
{
    const pw_job *j = ctx;
    /* split on multiples of 32 columns, the kernel's block */
    int64_t units = (j->n + 31) / 32;
    int64_t lo = units * ith / nth * 32, hi = units * (ith + 1) / nth * 32;
    if (hi > j->n) hi = j->n;
    if (lo >= hi) return;
    if (!j->s) {
        pf_nn_cpu_pw_small(j->w, j->bias, j->M, j->K, j->x + lo, j->ldx, j->y + lo, j->ldy,
                           hi - lo, j->act, j->act_a, j->act_b);
        return;
    }
    /* the column matrix chunk by chunk, each used while in L1 */
    float col[PW_SMALL_K * PW_CHUNK];
    for (int64_t c0 = lo; c0 < hi; c0 += PW_CHUNK) {
        int64_t c1 = hi - c0 < PW_CHUNK ? hi : c0 + PW_CHUNK;
        im2col_job ij = {j->s, j->x, col, c0, c1};
        im2col_rows(&ij, 0, 1);
        pf_nn_cpu_pw_small(j->w, j->bias, j->M, j->K, col, c1 - c0, j->y + c0, j->ldy, c1 - c0,
                           j->act, j->act_a, j->act_b);
    }
}

static void conv_gemm(const pf_nn_cpu_args *a, const conv_geom *s)
{
    const float *x = a->in[0], *w = a->in[1];
    const float *bias = a->node->n_in > 2 ? a->in[2] : NULL;
    float *y = a->out[0];
    int64_t K = s->Cg * s->kh * s->kw, cols = s->OH * s->OW, HW = s->H * s->W;
    int pointwise = conv_is_pointwise(s);
    int64_t blk = pointwise ? cols : conv_block_cols(s);
    int has_post = bias || a->node->act != PF_IR_ACT_NONE;
    for (int64_t n = 0; n < s->N; n++) {
        for (int64_t g = 0; g < s->group; g++) {
            const float *xg = x + (n * s->C + g * s->Cg) * HW;
            const float *wg = w + g * s->Mg * K;
            float *yg = y + (n * s->M + g * s->Mg) * cols;
            if (!pointwise && conv_is_small_k(s)) {
                pw_job pj = {wg, bias ? bias + g * s->Mg : NULL, xg, yg, s->Mg, K, 0, cols, cols,
                             a->node->act, a->node->act_a, a->node->act_b, s};
                if (s->Mg * K * cols < (1 << 16)) pw_cols(&pj, 0, 1);
                else pf_nn_cpu_parallel(a->pool, pw_cols, &pj);
                continue;
            }
            for (int64_t j0 = 0; j0 < cols; j0 += blk) {
                int64_t j1 = j0 + blk < cols ? j0 + blk : cols;
                const float *bm;
                int64_t ldb;
                if (pointwise) {
                    bm = xg + j0;
                    ldb = HW;
                } else {
                    im2col_job ij = {s, xg, a->scratch, j0, j1};
                    pf_nn_cpu_parallel(a->pool, im2col_rows, &ij);
                    bm = a->scratch;
                    ldb = j1 - j0;
                }
                if (conv_is_small_k(s)) {
                    pw_job pj = {wg, bias ? bias + g * s->Mg : NULL, bm, yg + j0, s->Mg, K,
                                 ldb, cols, j1 - j0, a->node->act, a->node->act_a,
                                 a->node->act_b, NULL};
                    if (s->Mg * K * (j1 - j0) < (1 << 16)) pw_cols(&pj, 0, 1);
                    else pf_nn_cpu_parallel(a->pool, pw_cols, &pj);
                    continue;
                }
                conv_post post = {yg + j0, bias ? bias + g * s->Mg : NULL, cols, a->node->act,
                                  a->node->act_a, a->node->act_b};
                pf_nn_sgemm_pool(a->pool, 0, 0, (int)s->Mg, (int)(j1 - j0), (int)K, 1.0f, wg,
                                 (int)K, bm, (int)ldb, 0.0f, yg + j0, (int)cols,
                                 has_post ? conv_post_tile : NULL, &post);
            }
        }
    }
}

pf_status pf_nn_cpu_conv(const pf_nn_cpu_args *a)
{
    conv_geom s;
    char why[200];
    if (conv_geom_get(a->g, a->node, &s, why, sizeof why))
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "%s", why);
    if (s.N == 0 || s.M == 0) return PF_OK; /* empty output (geometry has OH, OW >= 1) */
    int64_t K = s.Cg * s.kh * s.kw;
    if (K > INT32_MAX || s.OH * s.OW > INT32_MAX || s.H * s.W > INT32_MAX)
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "conv too large for 32-bit sgemm sizes");
    if (conv_is_depthwise(&s)) {
        conv_depthwise(a, &s);
        return PF_OK;
    }
    if (!conv_is_pointwise(&s) && a->scratch_bytes < pf_nn_cpu_conv_scratch(a->g, a->node))
        return pf_nn_cpu_fail(a, PF_ERR_INTERNAL, "scratch too small");
    conv_gemm(a, &s);
    return PF_OK;
}
