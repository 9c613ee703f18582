/* CONV_TRANSPOSE (1D and 2D, NCHW, groups, strides, dilation, pads,
 * output_padding, bias, fused act).
 *
 * Per image and group, sgemm forms every tap's contribution at once,
 * col[Mg*kh*kw, HW] = W_g^T[Mg*kh*kw, Cg] * X_g[Cg, HW], and col2im scatters
 * col into Y (pre-filled with the bias), threaded over output channels so
 * no two threads touch one plane. Input columns are taken in blocks to bound
 * the scratch. 1x1, stride 1, no pads needs no scatter: sgemm accumulates
 * straight into Y. output_padding only grows Y (shape inference sized it);
 * the extra rows/columns receive the bias alone, as in ONNX. */
#include "../../core/vectorize.h" /* first: compile flags for the row loops */

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "blas.h"
#include "kernels.h"

enum { CT_COL_CAP = 1 << 20, CT_MIN_COLS = 256 };

typedef pf_nn_conv_geom ct_geom;

/* Negative pads are allowed: they only shift or grow the output window (how
 * output_shape resolves when it exceeds the natural size). */
static int ct_geom_get(const pf_ir_graph *g, const pf_ir_node *n, ct_geom *s, char *why,
                       size_t why_size)
{
    if (pf_nn_conv_geom_read(g, n, "transposed conv", s, why, why_size)) return -1;
    if (s->oph < 0 || s->opw < 0) {
        snprintf(why, why_size, "output_padding must be >= 0");
        return -1;
    }
    s->M = s->w1 * s->group;
    if (s->C % s->group || s->w0 != s->C) {
        snprintf(why, why_size, "X has %lld channels, W is [%lld, %lld, ...] with group %lld",
                 (long long)s->C, (long long)s->w0, (long long)s->w1, (long long)s->group);
        return -1;
    }
    int64_t oh = s->sh * (s->H - 1) + s->oph + (s->kh - 1) * s->dh + 1 - s->pt - s->pb;
    int64_t ow = s->sw * (s->W - 1) + s->opw + (s->kw - 1) * s->dw + 1 - s->pl - s->pr;
    return pf_nn_conv_geom_finish(g, n, s, oh, ow, why, why_size);
}

static int ct_is_pointwise(const ct_geom *s)
{
    return s->kh == 1 && s->kw == 1 && s->sh == 1 && s->sw == 1 && s->pt == 0 && s->pl == 0 &&
           s->OH == s->H && s->OW == s->W;
}

static int64_t ct_block_cols(const ct_geom *s)
{
    int64_t rows = s->Mg * s->kh * s->kw, cols = s->H * s->W;
    int64_t b = CT_COL_CAP / (rows > 0 ? rows : 1);
    if (b < CT_MIN_COLS) b = CT_MIN_COLS;
    return b < cols ? b : cols;
}

size_t pf_nn_cpu_conv_transpose_scratch(const pf_ir_graph *g, const pf_ir_node *n)
{
    ct_geom s;
    char why[8];
    if (ct_geom_get(g, n, &s, why, sizeof why) || ct_is_pointwise(&s)) return 0;
    size_t bytes = (size_t)(s.Mg * s.kh * s.kw * ct_block_cols(&s)) * sizeof(float);
    return (bytes + 63) & ~(size_t)63;
}

typedef struct ct_job {
    const ct_geom *s;
    float *y;                 /* image n */
    const float *bias;
    const float *col;         /* [Mg*kh*kw, j1 - j0] */
    int64_t g, j0, j1;
    pf_ir_act act;
    float act_a, act_b;
} ct_job;

static void ct_fill_bias(void *ctx, int ith, int nth)
{
    const ct_job *j = ctx;
    int64_t plane = j->s->OH * j->s->OW;
    int64_t m0 = j->s->M * ith / nth, m1 = j->s->M * (ith + 1) / nth;
    for (int64_t m = m0; m < m1; m++) {
        float *y = j->y + m * plane, b = j->bias ? j->bias[m] : 0.0f;
        for (int64_t i = 0; i < plane; i++) y[i] = b;
    }
}

static void ct_act(void *ctx, int ith, int nth)
{
    const ct_job *j = ctx;
    int64_t plane = j->s->OH * j->s->OW;
    int64_t m0 = j->s->M * ith / nth, m1 = j->s->M * (ith + 1) / nth;
    pf_nn_cpu_apply_act(j->y + m0 * plane, (size_t)((m1 - m0) * plane), j->act, j->act_a,
                        j->act_b);
}

/* Scatters the column block into the group's output planes. Threads split
 * the group's output rows (channel, oy), so one channel (a mask head) still
 * uses every thread and no two threads touch one row. */
static void ct_col2im(void *ctx, int ith, int nth)
{
    const ct_job *j = ctx;
    const ct_geom *s = j->s;
    int64_t ncol = j->j1 - j->j0, kk = s->kh * s->kw, rows = s->Mg * s->OH;
    int64_t r0 = rows * ith / nth, r1 = rows * (ith + 1) / nth;
    for (int64_t m = r0 / s->OH; m < s->Mg && m * s->OH < r1; m++) {
        /* this thread's rows of channel m: [ylo, yhi) */
        int64_t ylo = r0 - m * s->OH, yhi = r1 - m * s->OH;
        if (ylo < 0) ylo = 0;
        if (yhi > s->OH) yhi = s->OH;
        float *yp = j->y + (j->g * s->Mg + m) * s->OH * s->OW;
        for (int64_t t = 0; t < kk; t++) {
            int64_t ky = t / s->kw, kx = t % s->kw;
            const float *crow = j->col + (m * kk + t) * ncol;
            /* valid ix: 0 <= ix*sw + off < OW */
            int64_t off = kx * s->dw - s->pl;
            int64_t vlo = off >= 0 ? 0 : (-off + s->sw - 1) / s->sw;
            int64_t vhi = s->OW - 1 - off < 0 ? 0 : (s->OW - 1 - off) / s->sw + 1;
            if (vhi > s->W) vhi = s->W;
            for (int64_t jj = j->j0; jj < j->j1;) {
                int64_t iy = jj / s->W, ix0 = jj % s->W;
                int64_t ix1 = s->W;
                if (iy * s->W + ix1 > j->j1) ix1 = j->j1 - iy * s->W;
                int64_t oy = iy * s->sh - s->pt + ky * s->dh;
                int64_t a0 = vlo > ix0 ? vlo : ix0, a1 = vhi < ix1 ? vhi : ix1;
                if (oy >= ylo && oy < yhi && a1 > a0) {
                    const float *c = crow + (jj - j->j0) + (a0 - ix0);
                    float *yr = yp + oy * s->OW + a0 * s->sw + off;
                    if (s->sw == 1)
                        for (int64_t i = 0; i < a1 - a0; i++) yr[i] += c[i];
                    else if (s->sw == 2)
                        for (int64_t i = 0; i < a1 - a0; i++) yr[2 * i] += c[i];
                    else
                        for (int64_t i = 0; i < a1 - a0; i++) yr[i * s->sw] += c[i];
                }
                jj += ix1 - ix0;
            }
        }
    }
}

pf_status pf_nn_cpu_conv_transpose(const pf_nn_cpu_args *a)
{
    ct_geom s;
    char why[200];
    if (ct_geom_get(a->g, a->node, &s, why, sizeof why))
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "%s", why);
    if (s.N == 0 || s.M == 0) return PF_OK; /* empty output (geometry has OH, OW >= 1) */
    int64_t rows = s.Mg * s.kh * s.kw, HW = s.H * s.W;
    if (rows > INT32_MAX || HW > INT32_MAX || s.OH * s.OW > INT32_MAX)
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "too large for 32-bit sgemm sizes");
    int pointwise = ct_is_pointwise(&s);
    if (!pointwise && a->scratch_bytes < pf_nn_cpu_conv_transpose_scratch(a->g, a->node))
        return pf_nn_cpu_fail(a, PF_ERR_INTERNAL, "scratch too small");
    const float *x = a->in[0], *w = a->in[1];
    const float *bias = a->node->n_in > 2 ? a->in[2] : NULL;
    int64_t blk = ct_block_cols(&s), plane = s.OH * s.OW;
    for (int64_t n = 0; n < s.N; n++) {
        ct_job j = {&s, (float *)a->out[0] + n * s.M * plane, bias, a->scratch, 0, 0, 0,
                    a->node->act, a->node->act_a, a->node->act_b};
        pf_nn_cpu_parallel(a->pool, ct_fill_bias, &j);
        for (int64_t g = 0; g < s.group; g++) {
            const float *xg = x + (n * s.C + g * s.Cg) * HW;
            const float *wg = w + g * s.Cg * rows;
            if (pointwise) {
                pf_nn_sgemm_pool(a->pool, 1, 0, (int)rows, (int)HW, (int)s.Cg, 1.0f, wg,
                                 (int)rows, xg, (int)HW, 1.0f, j.y + g * s.Mg * plane,
                                 (int)plane, NULL, NULL);
                continue;
            }
            for (int64_t j0 = 0; j0 < HW; j0 += blk) {
                int64_t j1 = j0 + blk < HW ? j0 + blk : HW;
                pf_nn_sgemm_pool(a->pool, 1, 0, (int)rows, (int)(j1 - j0), (int)s.Cg, 1.0f, wg,
                                 (int)rows, xg + j0, (int)HW, 0.0f, a->scratch, (int)(j1 - j0),
                                 NULL, NULL);
                j.g = g;
                j.j0 = j0;
                j.j1 = j1;
                pf_nn_cpu_parallel(a->pool, ct_col2im, &j);
            }
        }
        if (a->node->act != PF_IR_ACT_NONE) pf_nn_cpu_parallel(a->pool, ct_act, &j);
    }
    return PF_OK;
}
