/* RESIZE, nearest (any dtype) and linear (f32), any rank, with the
 * coordinate modes and nearest modes of ir.h.
 *
 * Coordinates follow the ONNX reference implementation (which generated the
 * conformance data): x_orig = f(x_out, scale[d]) with the scale the graph
 * gives, and the "resized length" in align_corners and pytorch_half_pixel
 * is scale * in_len, which is the output length when sizes were given but
 * not always when scales were (in 4, scale 0.6 -> length 2.4, 2 outputs).
 * Neighbours outside the input take the edge value, so linear clamps
 * x_orig to [0, in - 1] and nearest clamps the index; a nearest x_orig that
 * is an integer selects itself in every mode.
 *
 * Linear interpolates only the axes whose scale is not 1 (or whose length
 * changes): 4-D NCHW with unit N, C scales is plain bilinear. The work is
 * split over output rows (all axes but the last); each row gathers the
 * corner rows of the interpolated outer axes (2^k of them) and applies the
 * last axis' taps, which are computed once per block of columns.
 *
 * Bilinear-like rows (at most two corner rows, last axis interpolated) keep
 * the last axis' interpolation of each corner row in a two-slot cache: when
 * upscaling, consecutive output rows share their corner rows, so the gather
 * runs once per input row and each output row is one vector blend. The
 * arithmetic is the same as the general loop's, in the same order. */
#include "../../core/vectorize.h" /* first: compile flags for the row loops */

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"

enum { RS_BLOCK = 512 };

typedef struct rs_job {
    const pf_ir_resize_attr *at;
    const unsigned char *x;
    unsigned char *y;
    size_t esize;
    int rank;
    int64_t in[PF_IR_MAX_RANK], out[PF_IR_MAX_RANK], istride[PF_IR_MAX_RANK];
    bool interp[PF_IR_MAX_RANK]; /* linear along this axis */
    int64_t rows;                /* product of out[0..rank-2] */
} rs_job;

static double rs_coord(const pf_ir_resize_attr *at, int d, int64_t xo, int64_t in_len,
                       int64_t out_len)
{
    double scale = at->scale[d];
    double len = scale * (double)in_len;
    /* scale = out/in rounds: snap to the output length when they agree */
    if (fabs(len - (double)out_len) <= 1e-6 * (out_len > 1 ? (double)out_len : 1.0))
        len = (double)out_len;
    switch (at->coord) {
    case PF_IR_COORD_HALF_PIXEL: return ((double)xo + 0.5) / scale - 0.5;
    case PF_IR_COORD_PYTORCH_HALF_PIXEL:
        return len > 1.0 ? ((double)xo + 0.5) / scale - 0.5 : 0.0;
    case PF_IR_COORD_ALIGN_CORNERS:
        return len == 1.0 ? 0.0 : (double)xo * (double)(in_len - 1) / (len - 1.0);
    case PF_IR_COORD_ASYMMETRIC: return (double)xo / scale;
    case PF_IR_COORD_TF_HALF_PIXEL_FOR_NN: return ((double)xo + 0.5) / scale;
    }
    return 0.0;
}

static int64_t rs_clamp(int64_t i, int64_t n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }

/* Source taps of output index xo on axis d: i0, i1 and the weight of i1. */
static void rs_taps(const rs_job *j, int d, int64_t xo, int64_t *i0, int64_t *i1, float *w)
{
    int64_t n = j->in[d];
    double x = rs_coord(j->at, d, xo, n, j->out[d]);
    if (j->interp[d]) {
        if (!(x > 0.0)) x = 0.0; /* also NaN */
        if (x > (double)(n - 1)) x = (double)(n - 1);
        int64_t f = (int64_t)floor(x);
        *i0 = f;
        *i1 = f + 1 < n ? f + 1 : n - 1;
        *w = (float)(x - (double)f);
        return;
    }
    if (!isfinite(x)) x = x > 0 ? (double)n : 0.0;
    if (x > (double)n) x = (double)n;
    if (x < -1.0) x = -1.0;
    double f = floor(x), r = x - f;
    int64_t k = (int64_t)f;
    if (r != 0.0) {
        switch (j->at->nearest) {
        case PF_IR_NEAREST_ROUND_PREFER_FLOOR: k += r > 0.5; break;
        case PF_IR_NEAREST_ROUND_PREFER_CEIL: k += r >= 0.5; break;
        case PF_IR_NEAREST_FLOOR: break;
        case PF_IR_NEAREST_CEIL: k += 1; break;
        }
    }
    *i0 = *i1 = rs_clamp(k, n);
    *w = 0.0f;
}

/* h[i] = s[x0[i]] + wx[i] * (s[x1[i]] - s[x0[i]]): one corner row along the
 * last axis. */
WIDE_CLONES static void rs_hrow(const float *s, const int32_t *x0, const int32_t *x1,
                                const float *wx, int64_t n, float *restrict h)
{
    for (int64_t i = 0; i < n; i++) h[i] = s[x0[i]] + wx[i] * (s[x1[i]] - s[x0[i]]);
}

WIDE_CLONES static void rs_blend2(const float *h0, const float *h1, float w0, float w1, int64_t n,
                                  float *restrict y)
{
    for (int64_t i = 0; i < n; i++) y[i] = w0 * h0[i] + w1 * h1[i];
}

WIDE_CLONES static void rs_blend1(const float *h0, float w0, int64_t n, float *restrict y)
{
    for (int64_t i = 0; i < n; i++) y[i] = w0 * h0[i];
}

/* Where a thread is among the rows: the index of each outer axis (kept by
 * counting, not dividing, as rows advance one at a time), and per axis the
 * taps of the last index asked, which most rows repeat. */
typedef struct rs_cursor {
    int64_t idx[PF_IR_MAX_RANK];
    int64_t o[PF_IR_MAX_RANK], i0[PF_IR_MAX_RANK], i1[PF_IR_MAX_RANK];
    float w[PF_IR_MAX_RANK];
    /* the row axis (rank - 2) changes every row: its taps are kept for
     * every index up to RS_BLOCK, filled as first asked */
    int32_t y0[RS_BLOCK], y1[RS_BLOCK];
    float yw[RS_BLOCK];
    unsigned char yok[RS_BLOCK];
} rs_cursor;

static void rs_seek(const rs_job *j, rs_cursor *tc, int64_t q)
{
    for (int d = j->rank - 2; d >= 0; d--) {
        tc->idx[d] = q % j->out[d];
        q /= j->out[d];
    }
}

static void rs_next(const rs_job *j, rs_cursor *tc)
{
    for (int d = j->rank - 2; d >= 0; d--) {
        if (++tc->idx[d] < j->out[d]) return;
        tc->idx[d] = 0;
    }
}

/* Corner row offsets and weights of the cursor's row (all axes but the
 * last); returns how many. Not vectorised: the loops run over one to a few
 * corners, and 2-wide vectors there wait on the scalar stores just made
 * (store forwarding fails), which cost more than the whole row. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-vectorize")))
#endif
static int rs_corners(const rs_job *j, rs_cursor *tc, int64_t *coff, float *cw)
{
    int last = j->rank - 1, nc = 1;
    coff[0] = 0;
    cw[0] = 1.0f;
    for (int d = last - 1; d >= 0; d--) {
        int64_t o = tc->idx[d], i0, i1;
        float w;
        if (d == last - 1 && o < RS_BLOCK) {
            if (!tc->yok[o]) {
                rs_taps(j, d, o, &i0, &i1, &w);
                tc->y0[o] = (int32_t)i0;
                tc->y1[o] = (int32_t)i1;
                tc->yw[o] = w;
                tc->yok[o] = 1;
            }
            i0 = tc->y0[o];
            i1 = tc->y1[o];
            w = tc->yw[o];
        } else {
            if (tc->o[d] != o) {
                rs_taps(j, d, o, &tc->i0[d], &tc->i1[d], &tc->w[d]);
                tc->o[d] = o;
            }
            i0 = tc->i0[d];
            i1 = tc->i1[d];
            w = tc->w[d];
        }
        if (j->interp[d] && i1 != i0) {
            for (int c = 0; c < nc; c++) {
                coff[nc + c] = coff[c] + i1 * j->istride[d];
                cw[nc + c] = cw[c] * w;
                coff[c] += i0 * j->istride[d];
                cw[c] *= 1.0f - w;
            }
            nc *= 2;
        } else {
            for (int c = 0; c < nc; c++) coff[c] += i0 * j->istride[d];
        }
    }
    return nc;
}

/* The cached slot holding corner row `off`, or -1. */
static int rs_find(const int64_t *key, int64_t off)
{
    return key[0] == off ? 0 : (key[1] == off ? 1 : -1);
}

static void rs_rows(void *ctx, int ith, int nth)
{
    const rs_job *j = ctx;
    int r = j->rank, last = r - 1;
    int64_t q0 = j->rows * ith / nth, q1 = j->rows * (ith + 1) / nth;
    int64_t ow = j->out[last];
    /* 32-bit column indices: the gathers take 16 lanes, not 8 */
    int32_t x0[RS_BLOCK], x1[RS_BLOCK];
    float wx[RS_BLOCK];
    float hbuf[2][RS_BLOCK];
    int64_t key[2];
    int64_t coff[1 << (PF_IR_MAX_RANK - 1)];
    float cw[1 << (PF_IR_MAX_RANK - 1)];
    const float *xf = (const float *)j->x;
    rs_cursor tc;
    for (int d = 0; d < PF_IR_MAX_RANK; d++) tc.o[d] = -1;
    memset(tc.yok, 0, sizeof tc.yok);
    /* column blocks outside, rows inside: the taps and the cached corner
     * rows stay valid across the rows of one block */
    for (int64_t b0 = 0; b0 < ow; b0 += RS_BLOCK) {
        int64_t bn = ow - b0 < RS_BLOCK ? ow - b0 : RS_BLOCK;
        for (int64_t i = 0; i < bn; i++) {
            int64_t i0, i1;
            rs_taps(j, last, b0 + i, &i0, &i1, &wx[i]);
            x0[i] = (int32_t)i0;
            x1[i] = (int32_t)i1;
        }
        key[0] = key[1] = -1;
        rs_seek(j, &tc, q0);
        for (int64_t q = q0; q < q1; q++, rs_next(j, &tc)) {
            int nc = rs_corners(j, &tc, coff, cw);
            unsigned char *yrow = j->y + (size_t)(q * ow) * j->esize;
            if (j->interp[last] && nc <= 2) {
                int s0 = rs_find(key, coff[0]), s1 = nc > 1 ? rs_find(key, coff[1]) : -1;
                if (s0 < 0) {
                    s0 = s1 == 0 ? 1 : 0;
                    rs_hrow(xf + coff[0], x0, x1, wx, bn, hbuf[s0]);
                    key[s0] = coff[0];
                }
                if (nc > 1 && s1 < 0) {
                    s1 = 1 - s0;
                    rs_hrow(xf + coff[1], x0, x1, wx, bn, hbuf[s1]);
                    key[s1] = coff[1];
                }
                float *y = (float *)yrow + b0;
                if (nc > 1) rs_blend2(hbuf[s0], hbuf[s1], cw[0], cw[1], bn, y);
                else rs_blend1(hbuf[s0], cw[0], bn, y);
                continue;
            }
            if (j->interp[last] || nc > 1) {
                float *y = (float *)yrow + b0;
                for (int64_t i = 0; i < bn; i++) {
                    float acc = 0.0f;
                    for (int c = 0; c < nc; c++) {
                        const float *s = xf + coff[c];
                        acc += cw[c] * (s[x0[i]] + wx[i] * (s[x1[i]] - s[x0[i]]));
                    }
                    y[i] = acc;
                }
                continue;
            }
            const unsigned char *s = j->x + (size_t)coff[0] * j->esize;
            unsigned char *y = yrow + (size_t)b0 * j->esize;
            switch (j->esize) {
            case 1: for (int64_t i = 0; i < bn; i++) y[i] = s[x0[i]]; break;
            case 2:
                for (int64_t i = 0; i < bn; i++) memcpy(y + 2 * i, s + 2 * x0[i], 2);
                break;
            case 4:
                for (int64_t i = 0; i < bn; i++) memcpy(y + 4 * i, s + 4 * x0[i], 4);
                break;
            default:
                for (int64_t i = 0; i < bn; i++) memcpy(y + 8 * i, s + 8 * x0[i], 8);
                break;
            }
        }
    }
}

pf_status pf_nn_cpu_resize(const pf_nn_cpu_args *a)
{
    const pf_ir_value *vx = a->vin[0], *vy = a->vout[0];
    const pf_ir_resize_attr *at = &a->node->attr.resize;
    if (!vx) return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "needs input X");
    if (at->exclude_outside)
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "exclude_outside=1 is not supported");
    if (at->mode != PF_IR_RESIZE_NEAREST && at->mode != PF_IR_RESIZE_LINEAR)
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "mode %d", (int)at->mode);
    if ((unsigned)at->coord > PF_IR_COORD_TF_HALF_PIXEL_FOR_NN ||
        (unsigned)at->nearest > PF_IR_NEAREST_CEIL)
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "coordinate mode %d / nearest mode %d",
                              (int)at->coord, (int)at->nearest);
    if (vy->dtype != vx->dtype || vx->ndim < 1 || vy->ndim != vx->ndim || at->n != vx->ndim)
        return pf_nn_cpu_fail(a, PF_ERR_FORMAT, "X rank %d, Y rank %d, %d scales", vx->ndim,
                              vy->ndim, at->n);
    rs_job j;
    memset(&j, 0, sizeof j);
    j.at = at;
    j.x = a->in[0];
    j.y = a->out[0];
    j.esize = pf_ir_dtype_size(vx->dtype);
    j.rank = vx->ndim;
    if (at->mode == PF_IR_RESIZE_LINEAR ? vx->dtype != PF_IR_F32
                                        : !(j.esize == 1 || j.esize == 2 || j.esize == 4 ||
                                            j.esize == 8))
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "dtype %s for %s resize",
                              pf_ir_dtype_name(vx->dtype),
                              at->mode == PF_IR_RESIZE_LINEAR ? "linear" : "nearest");
    int64_t st = 1, numel_out = 1;
    for (int d = j.rank - 1; d >= 0; d--) {
        j.in[d] = vx->dims[d];
        j.out[d] = vy->dims[d];
        j.istride[d] = st;
        st *= j.in[d];
        numel_out *= j.out[d];
        if (!(at->scale[d] > 0.0) || !isfinite(at->scale[d]))
            return pf_nn_cpu_fail(a, PF_ERR_FORMAT, "scale[%d] = %g", d, at->scale[d]);
        j.interp[d] = at->mode == PF_IR_RESIZE_LINEAR &&
                      (at->scale[d] != 1.0 || j.out[d] != j.in[d]);
    }
    if (numel_out == 0) return PF_OK;
    for (int d = j.rank - 2; d < j.rank; d++)
        if (d >= 0 && j.in[d] > INT32_MAX)
            return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "axis %d of %lld elements (at most "
                                  "2^31-1)", d, (long long)j.in[d]);
    if (st == 0)
        return pf_nn_cpu_fail(a, PF_ERR_FORMAT, "empty input, non-empty output");
    j.rows = numel_out / j.out[j.rank - 1];
    pf_nn_cpu_parallel(a->pool, rs_rows, &j);
    return PF_OK;
}
