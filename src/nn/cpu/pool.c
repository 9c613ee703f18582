/* MAXPOOL (dilation, ceil_mode, pads; optional I64 indices; f32, u8, i8),
 * AVGPOOL (count_include_pad, ceil_mode), GLOBAL_AVGPOOL and GLOBAL_MAXPOOL,
 * all threaded over (n, c) planes.
 *
 * Output sizes come from the output value (shape inference applied
 * ceil_mode); a window is clipped to the input, pads never win a max. With
 * count_include_pad the divisor counts the taps inside the padded input
 * [-pad_begin, in + pad_end), so a ceil_mode window hanging past the end pad
 * does not count its overhang (onnxruntime and the ONNX reference agree). A
 * max window with no tap inside the input gives the lowest finite value, as
 * onnxruntime does.
 *
 * Average windows over unit-stride rows and global averages sum in sixteen
 * float lanes (vectorised; the order differs from a sequential sum by
 * rounding only), global ones adding each 1024-element chunk into a double. */
#include "../../core/vectorize.h" /* first: compile flags for the row loops */

#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"

enum { SUM_LANES = 16, SUM_CHUNK = 1024 };

/* Sum of n floats (n <= SUM_CHUNK keeps the float lanes accurate). */
WIDE_CLONES static float row_sum(const float *x, int64_t n)
{
    float lane[SUM_LANES] = {0};
    int64_t i = 0;
    for (; i + SUM_LANES <= n; i += SUM_LANES)
        for (int k = 0; k < SUM_LANES; k++) lane[k] += x[i + k];
    float s = 0.0f;
    for (int k = 0; k < SUM_LANES; k++) s += lane[k];
    for (; i < n; i++) s += x[i];
    return s;
}

typedef struct pool_job {
    pf_ir_op op;
    pf_ir_dtype dtype;
    const void *x;
    void *y;
    int64_t *idx;             /* MaxPool indices or NULL */
    int64_t planes, H, W, OH, OW;
    int64_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
    bool include_pad;
} pool_job;

/* Taps of one window along an axis: first tap index k0, past-last k1 (tap k
 * lies at start + k*d, inside [0, n)); also the count inside the padded
 * range. */
static void window(int64_t start, int64_t k, int64_t d, int64_t n, int64_t pe, int64_t *k0,
                   int64_t *k1, int64_t *padded)
{
    int64_t a = start >= 0 ? 0 : (-start + d - 1) / d;
    int64_t b = start > n - 1 ? 0 : (n - 1 - start) / d + 1;
    if (b > k) b = k;
    if (a > b) a = b;
    *k0 = a;
    *k1 = b;
    /* padded range [-pb, n + pe): start >= -pb always holds for a valid geometry */
    int64_t c = start > n + pe - 1 ? 0 : (n + pe - 1 - start) / d + 1;
    *padded = c < k ? c : k;
}

#define MAX_PLANE(T, NAME, LOWEST)                                                              \
    static void NAME(const pool_job *j, int64_t p)                                              \
    {                                                                                           \
        const T *x = (const T *)j->x + p * j->H * j->W;                                         \
        T *y = (T *)j->y + p * j->OH * j->OW;                                                   \
        for (int64_t oy = 0; oy < j->OH; oy++) {                                                \
            int64_t ys = oy * j->sh - j->pt, y0, y1, yc;                                        \
            window(ys, j->kh, j->dh, j->H, j->pb, &y0, &y1, &yc);                               \
            for (int64_t ox = 0; ox < j->OW; ox++) {                                            \
                int64_t xs = ox * j->sw - j->pl, x0, x1, xc;                                    \
                window(xs, j->kw, j->dw, j->W, j->pr, &x0, &x1, &xc);                           \
                T best = LOWEST;                                                                \
                int64_t at = -1;                                                                \
                for (int64_t ky = y0; ky < y1; ky++) {                                          \
                    const T *r = x + (ys + ky * j->dh) * j->W;                                  \
                    for (int64_t kx = x0; kx < x1; kx++) {                                      \
                        T v = r[xs + kx * j->dw];                                               \
                        if (at < 0 || v > best) {                                               \
                            best = v;                                                           \
                            at = (ys + ky * j->dh) * j->W + xs + kx * j->dw;                    \
                        }                                                                       \
                    }                                                                           \
                }                                                                               \
                y[oy * j->OW + ox] = best;                                                      \
                if (j->idx)                                                                     \
                    j->idx[(p * j->OH + oy) * j->OW + ox] = at < 0 ? 0 : p * j->H * j->W + at;  \
            }                                                                                   \
        }                                                                                       \
    }

MAX_PLANE(float, max_plane_f32, -FLT_MAX)
MAX_PLANE(uint8_t, max_plane_u8, 0)
MAX_PLANE(int8_t, max_plane_i8, INT8_MIN)

static void avg_plane(const pool_job *j, int64_t p)
{
    const float *x = (const float *)j->x + p * j->H * j->W;
    float *y = (float *)j->y + p * j->OH * j->OW;
    for (int64_t oy = 0; oy < j->OH; oy++) {
        int64_t ys = oy * j->sh - j->pt, y0, y1, yc;
        window(ys, j->kh, j->dh, j->H, j->pb, &y0, &y1, &yc);
        for (int64_t ox = 0; ox < j->OW; ox++) {
            int64_t xs = ox * j->sw - j->pl, x0, x1, xc;
            window(xs, j->kw, j->dw, j->W, j->pr, &x0, &x1, &xc);
            float sum = 0.0f;
            for (int64_t ky = y0; ky < y1; ky++) {
                const float *r = x + (ys + ky * j->dh) * j->W;
                if (j->dw == 1 && x1 - x0 >= SUM_LANES)
                    for (int64_t c = x0; c < x1; c += SUM_CHUNK)
                        sum += row_sum(r + xs + c, x1 - c < SUM_CHUNK ? x1 - c : SUM_CHUNK);
                else
                    for (int64_t kx = x0; kx < x1; kx++) sum += r[xs + kx * j->dw];
            }
            int64_t cnt = j->include_pad ? yc * xc : (y1 - y0) * (x1 - x0);
            y[oy * j->OW + ox] = cnt > 0 ? sum / (float)cnt : 0.0f;
        }
    }
}

static void global_plane(const pool_job *j, int64_t p)
{
    int64_t n = j->H * j->W;
    const float *x = (const float *)j->x + p * n;
    float *y = (float *)j->y + p;
    if (j->op == PF_IR_GLOBAL_AVGPOOL) {
        double s = 0.0;
        for (int64_t i = 0; i < n; i += SUM_CHUNK)
            s += row_sum(x + i, n - i < SUM_CHUNK ? n - i : SUM_CHUNK);
        *y = n > 0 ? (float)(s / (double)n) : 0.0f;
    } else {
        float m = n > 0 ? x[0] : -FLT_MAX;
        for (int64_t i = 1; i < n; i++) m = x[i] > m ? x[i] : m;
        *y = m;
    }
}

static void pool_planes(void *ctx, int ith, int nth)
{
    const pool_job *j = ctx;
    int64_t p0 = j->planes * ith / nth, p1 = j->planes * (ith + 1) / nth;
    for (int64_t p = p0; p < p1; p++) {
        if (j->op == PF_IR_GLOBAL_AVGPOOL || j->op == PF_IR_GLOBAL_MAXPOOL) global_plane(j, p);
        else if (j->op == PF_IR_AVGPOOL) avg_plane(j, p);
        else if (j->dtype == PF_IR_U8) max_plane_u8(j, p);
        else if (j->dtype == PF_IR_I8) max_plane_i8(j, p);
        else max_plane_f32(j, p);
    }
}

pf_status pf_nn_cpu_pool(const pf_nn_cpu_args *a)
{
    const pf_ir_node *nd = a->node;
    const pf_ir_value *vx = a->vin[0], *vy = a->vout[0];
    pf_ir_op op = nd->op;
    if (!vx) return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "needs input X");
    bool is_max = op == PF_IR_MAXPOOL;
    if (vx->dtype != vy->dtype ||
        !(vx->dtype == PF_IR_F32 || (is_max && (vx->dtype == PF_IR_U8 || vx->dtype == PF_IR_I8))))
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "dtype %s", pf_ir_dtype_name(vx->dtype));
    if (vx->ndim < 3 || vy->ndim != vx->ndim || vy->dims[0] != vx->dims[0] ||
        vy->dims[1] != vx->dims[1])
        return pf_nn_cpu_fail(a, PF_ERR_FORMAT, "X rank %d / Y rank %d: expected [N, C, ...] "
                              "with matching N, C", vx->ndim, vy->ndim);
    pool_job j;
    memset(&j, 0, sizeof j);
    j.op = op;
    j.dtype = vx->dtype;
    j.x = a->in[0];
    j.y = a->out[0];
    j.planes = vx->dims[0] * vx->dims[1];
    if (op == PF_IR_GLOBAL_AVGPOOL || op == PF_IR_GLOBAL_MAXPOOL) {
        int64_t n = 1;
        for (int i = 2; i < vx->ndim; i++) n *= vx->dims[i];
        for (int i = 2; i < vy->ndim; i++)
            if (vy->dims[i] != 1)
                return pf_nn_cpu_fail(a, PF_ERR_FORMAT, "global pool output dim %d is %lld, "
                                      "not 1", i, (long long)vy->dims[i]);
        j.H = 1;
        j.W = n;
        pf_nn_cpu_parallel(a->pool, pool_planes, &j);
        return PF_OK;
    }
    const pf_ir_pool_attr *at = &nd->attr.pool;
    int nsp = at->nsp;
    if ((nsp != 1 && nsp != 2) || vx->ndim != nsp + 2)
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "%d spatial dims, X rank %d (only 1D and "
                              "2D)", nsp, vx->ndim);
    j.H = j.OH = j.kh = j.sh = j.dh = 1;
    int d = 0;
    if (nsp == 2) {
        j.H = vx->dims[2];
        j.OH = vy->dims[2];
        j.kh = at->kernel[0];
        j.sh = at->stride[0];
        j.dh = at->dilation[0] > 0 ? at->dilation[0] : 1;
        j.pt = at->pad_begin[0];
        j.pb = at->pad_end[0];
        d = 1;
    }
    j.W = vx->dims[nsp + 1];
    j.OW = vy->dims[nsp + 1];
    j.kw = at->kernel[d];
    j.sw = at->stride[d];
    j.dw = at->dilation[d] > 0 ? at->dilation[d] : 1;
    j.pl = at->pad_begin[d];
    j.pr = at->pad_end[d];
    j.include_pad = at->count_include_pad;
    if (j.kh < 1 || j.kw < 1 || j.sh < 1 || j.sw < 1 || j.pt < 0 || j.pb < 0 || j.pl < 0 ||
        j.pr < 0)
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "kernel and strides must be >= 1, pads "
                              ">= 0 (unresolved attrs?)");
    /* Every window must start inside the padded input (ceil_mode adds at most
     * a window that starts before its end): guards the pad-count logic. */
    if ((j.OH - 1) * j.sh - j.pt > j.H - 1 + j.pb || (j.OW - 1) * j.sw - j.pl > j.W - 1 + j.pr)
        return pf_nn_cpu_fail(a, PF_ERR_FORMAT, "output [%lld, %lld] too large for input "
                              "[%lld, %lld] with these strides and pads", (long long)j.OH,
                              (long long)j.OW, (long long)j.H, (long long)j.W);
    if (is_max && nd->n_out > 1 && nd->out[1] >= 0) {
        if (a->vout[1]->dtype != PF_IR_I64)
            return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "MaxPool indices must be i64");
        j.idx = a->out[1];
    }
    pf_nn_cpu_parallel(a->pool, pool_planes, &j);
    return PF_OK;
}
