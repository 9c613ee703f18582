/* CPU reference of the integer convolutions: QLinearConv, ConvInteger and
 * the fused QCONV (ir.h gives each one's inputs and formula).
 *
 * Plain loops: for each output element the int32 sum over (c, ky, kx) of
 * (x - x_zp) * (w - w_zp[m]); taps in the padding contribute nothing (the
 * padded value is x_zp). The sum is exact as long as C/g * kh * kw * 255 *
 * 255 < 2^31 (over 33,000 taps), which shape checks below enforce. The
 * epilogue is per op: ConvInteger stores the sum; QLinearConv adds the int32
 * bias and requantizes in double with x_scale * w_scale / y_scale; QCONV
 * computes f = acc * (x_scale * w_scale[m]) + bias[m] in float, adds the
 * residual, applies the act and quantizes f / y_scale (or stores f). The
 * fast paths (below, and CUDA) reproduce QCONV's float order. */
#include <math.h>
#include <string.h>

#include "kernels.h"

typedef struct qgeom {
    int64_t N, C, H, W, M, OH, OW, kh, kw, sh, sw, dh, dw, pt, pl, group, Cg, Mg;
} qgeom;

static pf_status read_geom(const pf_nn_cpu_args *a, int xi, int wi, qgeom *q)
{
    const pf_ir_value *x = a->vin[xi], *w = a->vin[wi], *y = a->vout[0];
    const pf_ir_conv_attr *c = &a->node->attr.conv;
    memset(q, 0, sizeof *q);
    if (x->ndim != w->ndim || (x->ndim != 3 && x->ndim != 4) || y->ndim != x->ndim)
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "needs 1D or 2D convolution data");
    bool d1 = x->ndim == 3;
    q->N = x->dims[0];
    q->C = x->dims[1];
    q->H = d1 ? 1 : x->dims[2];
    q->W = x->dims[x->ndim - 1];
    q->M = w->dims[0];
    q->OH = d1 ? 1 : y->dims[2];
    q->OW = y->dims[y->ndim - 1];
    int s = d1 ? 0 : 1; /* attr index of the W axis */
    q->kh = d1 ? 1 : c->kernel[0];
    q->kw = c->kernel[s];
    q->sh = d1 ? 1 : c->stride[0];
    q->sw = c->stride[s];
    q->dh = d1 ? 1 : c->dilation[0];
    q->dw = c->dilation[s];
    q->pt = d1 ? 0 : c->pad_begin[0];
    q->pl = c->pad_begin[s];
    q->group = c->group;
    q->Cg = q->C / q->group;
    q->Mg = q->M / q->group;
    if (q->Cg * q->kh * q->kw > 33000)
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "%lld taps per output could overflow int32",
                              (long long)(q->Cg * q->kh * q->kw));
    return PF_OK;
}

typedef struct qconv_job {
    const pf_nn_cpu_args *a;
    qgeom q;
    int xi, wi;
    pf_status st;
} qconv_job;

/* The float epilogue of QCONV for output element (n, m, pixel) with sum acc. */
static void qconv_epilogue(const pf_nn_cpu_args *a, int64_t m, size_t oi, int32_t acc)
{
    const pf_ir_node *n = a->node;
    float xs = (float)pf_nn_q_param(a, 1, 0);
    float ws = (float)pf_nn_q_param(a, 4, m);
    float f = (float)acc * (xs * ws);
    if (n->n_in > 6 && a->in[6]) f += ((const float *)a->in[6])[m];
    if (n->n_in > 12 && a->in[12]) {
        /* The Q -> DQ pair the fusion looked through (ir.h). */
        float ms = (float)pf_nn_q_param(a, 12, 0);
        int32_t mzp = (int32_t)pf_nn_q_param(a, 13, 0);
        pf_ir_dtype mdt = n->n_in > 13 && a->vin[13] ? a->vin[13]->dtype : PF_IR_U8;
        f = (float)(pf_nn_q_round_sat((double)(f / ms), mzp, mdt) - mzp) * ms;
    }
    if (n->n_in > 9 && a->in[9]) {
        const pf_ir_value *r = a->vin[9];
        if (r->dtype == PF_IR_F32) f += ((const float *)a->in[9])[oi];
        else
            f += (float)(pf_nn_q_load(a->in[9], r->dtype, oi) - (int32_t)pf_nn_q_param(a, 11, 0)) *
                 (float)pf_nn_q_param(a, 10, 0);
    }
    f = pf_nn_act_scalar(f, n->act, n->act_a, n->act_b);
    const pf_ir_value *y = a->vout[0];
    if (n->n_in > 7 && a->in[7]) {
        float ys = (float)pf_nn_q_param(a, 7, 0);
        int32_t yzp = (int32_t)pf_nn_q_param(a, 8, 0);
        pf_nn_q_store(a->out[0], y->dtype, oi, pf_nn_q_round_sat((double)(f / ys), yzp, y->dtype));
    } else {
        ((float *)a->out[0])[oi] = f;
    }
}

static void qconv_run(void *ctx, int ith, int nth)
{
    qconv_job *j = ctx;
    const pf_nn_cpu_args *a = j->a;
    const qgeom *q = &j->q;
    const pf_ir_node *n = a->node;
    const pf_ir_value *x = a->vin[j->xi], *w = a->vin[j->wi], *y = a->vout[0];
    int xzi = n->op == PF_IR_CONV_INTEGER ? 2 : j->xi + 2;
    int wzi = n->op == PF_IR_CONV_INTEGER ? 3 : j->wi + 2;
    int32_t xzp = (int32_t)pf_nn_q_param(a, xzi, 0);
    double xs = 0, ys = 1;
    int32_t yzp = 0;
    if (n->op == PF_IR_QLINEAR_CONV) {
        xs = pf_nn_q_param(a, 1, 0);
        ys = pf_nn_q_param(a, 6, 0);
        yzp = (int32_t)pf_nn_q_param(a, 7, 0);
    }
    int64_t jobs = q->N * q->M;
    int64_t b = jobs * ith / nth, e = jobs * (ith + 1) / nth;
    for (int64_t t = b; t < e; t++) {
        int64_t in = t / q->M, m = t % q->M, g = m / q->Mg;
        int32_t wzp = (int32_t)pf_nn_q_param(a, wzi, m);
        for (int64_t oy = 0; oy < q->OH; oy++)
            for (int64_t ox = 0; ox < q->OW; ox++) {
                int32_t acc = 0;
                for (int64_t c = 0; c < q->Cg; c++) {
                    size_t xb = (size_t)(((in * q->C) + g * q->Cg + c) * q->H * q->W);
                    size_t wb = (size_t)(((m * q->Cg) + c) * q->kh * q->kw);
                    for (int64_t ky = 0; ky < q->kh; ky++) {
                        int64_t iy = oy * q->sh - q->pt + ky * q->dh;
                        if (iy < 0 || iy >= q->H) continue;
                        for (int64_t kx = 0; kx < q->kw; kx++) {
                            int64_t ix = ox * q->sw - q->pl + kx * q->dw;
                            if (ix < 0 || ix >= q->W) continue;
                            int32_t xv = pf_nn_q_load(a->in[j->xi], x->dtype,
                                                      xb + (size_t)(iy * q->W + ix));
                            int32_t wv = pf_nn_q_load(a->in[j->wi], w->dtype,
                                                      wb + (size_t)(ky * q->kw + kx));
                            acc += (xv - xzp) * (wv - wzp);
                        }
                    }
                }
                size_t oi = (size_t)(((in * q->M + m) * q->OH + oy) * q->OW + ox);
                if (n->op == PF_IR_CONV_INTEGER) {
                    ((int32_t *)a->out[0])[oi] = acc;
                } else if (n->op == PF_IR_QLINEAR_CONV) {
                    int64_t bias = n->n_in > 8 && a->in[8] ? ((const int32_t *)a->in[8])[m] : 0;
                    double r = (double)((int64_t)acc + bias) *
                               (xs * pf_nn_q_param(a, 4, m) / ys);
                    pf_nn_q_store(a->out[0], y->dtype, oi, pf_nn_q_round_sat(r, yzp, y->dtype));
                } else {
                    qconv_epilogue(a, m, oi, acc);
                }
            }
    }
}

/* ---- Fast path (QCONV, group 1, weight zero points 0) -------------------------
 * Per chunk of QF_PB output pixels: the im2col of the chunk in u8 with K in
 * groups of four ([K/4][pixel][4]: int8 inputs shifted by +128, padded taps
 * holding the zero point, likewise shifted), one u8 x s8 GEMM against the
 * weights packed [M][K/4][4] (qgemm_x86.c), then the sums corrected by
 * (x_zp + shift) * sum(w[m]) and the reference epilogue: the corrected sum
 * is the reference's exact int32 sum, so the outputs are equal bit for bit.
 * Weights are packed into scratch on each run (M*K bytes against M*K*P
 * multiply-adds: noise). Scratch: the packed weights and their sums, then
 * QF_SLOTS worker slots (im2col chunk + int32 tile); workers past QF_SLOTS
 * idle. */
enum { QF_PB = 64, QF_SLOTS = 16 };

static bool fast_ok(const pf_ir_graph *g, const pf_ir_node *n)
{
    if (n->op != PF_IR_QCONV || n->attr.conv.group != 1 || n->n_in < 5) return false;
    const pf_ir_value *x = &g->values[n->in[0]], *w = &g->values[n->in[3]];
    if ((x->dtype != PF_IR_U8 && x->dtype != PF_IR_I8) || !w->data || w->dtype != PF_IR_I8 ||
        w->ndim < 3)
        return false;
    if (n->n_in > 5 && n->in[5] >= 0) {
        const pf_ir_value *z = &g->values[n->in[5]];
        if (!z->data) return false;
        for (int64_t i = 0; i < pf_ir_value_numel(z); i++)
            if (pf_nn_q_load(z->data, z->dtype, (size_t)i) != 0) return false;
    }
    return true;
}

static void fast_sizes(const pf_ir_value *w, int64_t *M, int64_t *K, int64_t *KQ)
{
    *M = w->dims[0];
    *K = pf_ir_value_numel(w) / *M;
    *KQ = (*K + 3) / 4;
}

static size_t slot_bytes(int64_t M, int64_t KQ)
{
    return ((size_t)(KQ * 4 * QF_PB) + (size_t)(M * QF_PB) * 4 + 63) & ~(size_t)63;
}

size_t pf_nn_cpu_qconv_scratch(const pf_ir_graph *g, const pf_ir_node *n)
{
    if (!fast_ok(g, n)) return 0;
    int64_t M, K, KQ;
    fast_sizes(&g->values[n->in[3]], &M, &K, &KQ);
    size_t head = (((size_t)(M * KQ * 4) + (size_t)M * 4) + 63) & ~(size_t)63;
    return head + QF_SLOTS * slot_bytes(M, KQ);
}

typedef struct fast_job {
    const pf_nn_cpu_args *a;
    qgeom q;
    int64_t K, KQ;
    const int8_t *w4;
    const int32_t *wsum;
    unsigned char *slots;
    int isa;
} fast_job;

static void fast_run(void *ctx, int ith, int nth)
{
    fast_job *j = ctx;
    const pf_nn_cpu_args *a = j->a;
    const qgeom *q = &j->q;
    int nw = nth < QF_SLOTS ? nth : QF_SLOTS;
    if (ith >= nw) return;
    uint8_t *x4 = j->slots + (size_t)ith * slot_bytes(q->M, j->KQ);
    int32_t *acc = (int32_t *)(void *)(x4 + (size_t)(j->KQ * 4 * QF_PB));
    const pf_ir_value *xv = a->vin[0];
    const bool s8 = xv->dtype == PF_IR_I8;
    const int32_t xzp = (int32_t)pf_nn_q_param(a, 2, 0);
    const int32_t shift = s8 ? 128 : 0;
    const uint8_t padv = (uint8_t)(xzp + shift);
    const int32_t corr = xzp + shift;
    const int64_t P = q->OH * q->OW, chunks_per = (P + QF_PB - 1) / QF_PB;
    const int64_t total = q->N * chunks_per, taps = q->kh * q->kw;
    for (int64_t t = ith; t < total; t += nw) {
        const int64_t b = t / chunks_per, p0 = (t % chunks_per) * QF_PB;
        const int64_t pn = P - p0 < QF_PB ? P - p0 : QF_PB;
        const uint8_t *xb = (const uint8_t *)a->in[0] + (size_t)(b * q->C * q->H * q->W);
        for (int64_t k = 0; k < j->KQ * 4; k++) {
            uint8_t *dst = x4 + (k / 4) * pn * 4 + (k % 4);
            if (k >= j->K) {
                for (int64_t pp = 0; pp < pn; pp++) dst[pp * 4] = 0;
                continue;
            }
            const int64_t c = k / taps, r = k % taps, ky = r / q->kw, kx = r % q->kw;
            const uint8_t *xc = xb + (size_t)(c * q->H * q->W);
            int64_t oy = (p0) / q->OW, ox = p0 % q->OW;
            for (int64_t pp = 0; pp < pn; pp++) {
                const int64_t iy = oy * q->sh - q->pt + ky * q->dh;
                const int64_t ix = ox * q->sw - q->pl + kx * q->dw;
                uint8_t v = padv;
                if (iy >= 0 && iy < q->H && ix >= 0 && ix < q->W) {
                    v = xc[iy * q->W + ix];
                    if (s8) v ^= 0x80;
                }
                dst[pp * 4] = v;
                if (++ox == q->OW) {
                    ox = 0;
                    oy++;
                }
            }
        }
        pf_nn_qgemm_u8s8(j->isa, j->w4, x4, q->M, j->KQ, pn, acc, pn);
        for (int64_t m = 0; m < q->M; m++) {
            const int32_t c = corr * j->wsum[m];
            for (int64_t pp = 0; pp < pn; pp++) {
                size_t oi = (size_t)((b * q->M + m) * P + p0 + pp);
                qconv_epilogue(a, m, oi, acc[m * pn + pp] - c);
            }
        }
    }
}

static pf_status qconv_fast(const pf_nn_cpu_args *a, const qgeom *q)
{
    fast_job j;
    memset(&j, 0, sizeof j);
    j.a = a;
    j.q = *q;
    int64_t M;
    fast_sizes(a->vin[3], &M, &j.K, &j.KQ);
    int8_t *w4 = a->scratch;
    int32_t *wsum = (int32_t *)(void *)(w4 + M * j.KQ * 4);
    const int8_t *w = a->in[3];
    for (int64_t m = 0; m < M; m++) {
        int32_t s = 0;
        for (int64_t k = 0; k < j.KQ * 4; k++) {
            int8_t v = k < j.K ? w[m * j.K + k] : 0;
            w4[m * j.KQ * 4 + k] = v;
            s += v;
        }
        wsum[m] = s;
    }
    j.w4 = w4;
    j.wsum = wsum;
    size_t head = (((size_t)(M * j.KQ * 4) + (size_t)M * 4) + 63) & ~(size_t)63;
    j.slots = (unsigned char *)a->scratch + head;
    j.isa = pf_nn_qgemm_isa();
    pf_nn_cpu_parallel(a->pool, fast_run, &j);
    return PF_OK;
}

pf_status pf_nn_cpu_qconv(const pf_nn_cpu_args *a)
{
    qconv_job j;
    memset(&j, 0, sizeof j);
    j.a = a;
    j.xi = 0;
    j.wi = a->node->op == PF_IR_CONV_INTEGER ? 1 : 3;
    pf_status st = read_geom(a, j.xi, j.wi, &j.q);
    if (st != PF_OK) return st;
    int wzi = a->node->op == PF_IR_CONV_INTEGER ? 3 : 5;
    const pf_ir_value *wz = a->node->n_in > wzi ? a->vin[wzi] : NULL;
    if (wz && pf_ir_value_numel(wz) != 1 && pf_ir_value_numel(wz) != j.q.M)
        return pf_nn_cpu_fail(a, PF_ERR_FORMAT, "weight zero point '%s' has %lld entries for %lld "
                              "output channels", wz->name, (long long)pf_ir_value_numel(wz),
                              (long long)j.q.M);
    if (a->node->op != PF_IR_CONV_INTEGER) {
        const pf_ir_value *ws = a->vin[4];
        if (pf_ir_value_numel(ws) != 1 && pf_ir_value_numel(ws) != j.q.M)
            return pf_nn_cpu_fail(a, PF_ERR_FORMAT, "weight scale '%s' has %lld entries for %lld "
                                  "output channels", ws->name, (long long)pf_ir_value_numel(ws),
                                  (long long)j.q.M);
    }
    if (a->scratch && a->scratch_bytes >= pf_nn_cpu_qconv_scratch(a->g, a->node) &&
        pf_nn_cpu_qconv_scratch(a->g, a->node) > 0 && pf_nn_qgemm_isa() != PF_QG_SCALAR)
        return qconv_fast(a, &j.q);
    pf_nn_cpu_parallel(a->pool, qconv_run, &j);
    return j.st;
}
