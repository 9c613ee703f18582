/* CPU reference of the integer matmuls: QLinearMatMul, MatMulInteger and
 * the fused QMATMUL (numpy matmul broadcasting over batch dims, 1-D operands
 * promoted as MatMul does).
 *
 * Parameters: a's zero point/scale per tensor or per row ([M]), b's per
 * tensor or per column ([N]), y's per tensor or per row (QLinearMatMul).
 * Sums are exact in int32 for K * 255 * 255 < 2^31 (K <= 33,000, checked).
 * Epilogues as in qconv.c: double for QLinearMatMul, QCONV's float order
 * for QMATMUL. */
#include <string.h>

#include "kernels.h"

typedef struct qmm {
    const pf_nn_cpu_args *a;
    int bi, azi, bzi;
    int64_t M, K, N, batches;
    int yb;                        /* batch rank of Y */
    int64_t ydim[PF_IR_MAX_RANK];  /* Y's batch dims */
    int64_t astr[PF_IR_MAX_RANK], bstr[PF_IR_MAX_RANK]; /* element strides per Y batch axis (0 = broadcast) */
} qmm;

static void batch_strides(const pf_ir_value *v, bool promoted, int yb, const int64_t *ydim,
                          int64_t mat, int64_t *str)
{
    int vb = promoted ? 0 : v->ndim - 2;
    int64_t s = mat;
    for (int i = yb - 1; i >= 0; i--) {
        int ax = i - (yb - vb);
        if (ax < 0 || v->dims[ax] == 1 || ydim[i] == 1) {
            str[i] = 0;
        } else {
            str[i] = s;
        }
        if (ax >= 0) s *= v->dims[ax];
    }
}

static void qmm_run(void *ctx, int ith, int nth)
{
    qmm *q = ctx;
    const pf_nn_cpu_args *a = q->a;
    const pf_ir_node *n = a->node;
    const pf_ir_value *A = a->vin[0], *Bv = a->vin[q->bi], *y = a->vout[0];
    int64_t jobs = q->batches * q->M;
    int64_t b0 = jobs * ith / nth, e0 = jobs * (ith + 1) / nth;
    for (int64_t t = b0; t < e0; t++) {
        int64_t bt = t / q->M, r = t % q->M;
        int64_t ao = 0, bo = 0, rem = bt;
        for (int i = q->yb - 1; i >= 0; i--) {
            int64_t idx = rem % q->ydim[i];
            rem /= q->ydim[i];
            ao += idx * q->astr[i];
            bo += idx * q->bstr[i];
        }
        int32_t azp = (int32_t)pf_nn_q_param(a, q->azi, r);
        for (int64_t col = 0; col < q->N; col++) {
            int32_t bzp = (int32_t)pf_nn_q_param(a, q->bzi, col);
            int32_t acc = 0;
            for (int64_t k = 0; k < q->K; k++) {
                int32_t av = pf_nn_q_load(a->in[0], A->dtype, (size_t)(ao + r * q->K + k));
                int32_t bv = pf_nn_q_load(a->in[q->bi], Bv->dtype, (size_t)(bo + k * q->N + col));
                acc += (av - azp) * (bv - bzp);
            }
            size_t oi = (size_t)((bt * q->M + r) * q->N + col);
            if (n->op == PF_IR_MATMUL_INTEGER) {
                ((int32_t *)a->out[0])[oi] = acc;
            } else if (n->op == PF_IR_QLINEAR_MATMUL) {
                double s = pf_nn_q_param(a, 1, r) * pf_nn_q_param(a, 4, col) / pf_nn_q_param(a, 6, r);
                pf_nn_q_store(a->out[0], y->dtype, oi,
                              pf_nn_q_round_sat((double)acc * s, (int32_t)pf_nn_q_param(a, 7, r),
                                                y->dtype));
            } else {
                float f = (float)acc * ((float)pf_nn_q_param(a, 1, 0) * (float)pf_nn_q_param(a, 4, col));
                if (n->n_in > 6 && a->in[6]) f += ((const float *)a->in[6])[col];
                f = pf_nn_act_scalar(f, n->act, n->act_a, n->act_b);
                if (n->n_in > 7 && a->in[7])
                    pf_nn_q_store(a->out[0], y->dtype, oi,
                                  pf_nn_q_round_sat((double)(f / (float)pf_nn_q_param(a, 7, 0)),
                                                    (int32_t)pf_nn_q_param(a, 8, 0), y->dtype));
                else
                    ((float *)a->out[0])[oi] = f;
            }
        }
    }
}

static bool param_ok(const pf_nn_cpu_args *a, int i, int64_t per)
{
    if (i >= a->node->n_in || !a->vin[i]) return true;
    int64_t n = pf_ir_value_numel(a->vin[i]);
    return n == 1 || n == per;
}

pf_status pf_nn_cpu_qmatmul(const pf_nn_cpu_args *a)
{
    qmm q;
    memset(&q, 0, sizeof q);
    q.a = a;
    pf_ir_op op = a->node->op;
    q.bi = op == PF_IR_MATMUL_INTEGER ? 1 : 3;
    q.azi = 2;
    q.bzi = op == PF_IR_MATMUL_INTEGER ? 3 : 5;
    const pf_ir_value *A = a->vin[0], *Bv = a->vin[q.bi], *y = a->vout[0];
    if (A->ndim < 1 || Bv->ndim < 1)
        return pf_nn_cpu_fail(a, PF_ERR_FORMAT, "scalar operand");
    bool pa = A->ndim == 1, pb = Bv->ndim == 1;
    q.K = A->dims[A->ndim - 1];
    q.M = pa ? 1 : A->dims[A->ndim - 2];
    q.N = pb ? 1 : Bv->dims[Bv->ndim - 1];
    if (q.K > 33000)
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "K %lld could overflow int32", (long long)q.K);
    q.yb = y->ndim - (pa ? 0 : 1) - (pb ? 0 : 1);
    q.batches = 1;
    for (int i = 0; i < q.yb; i++) {
        q.ydim[i] = y->dims[i];
        q.batches *= y->dims[i];
    }
    batch_strides(A, pa, q.yb, q.ydim, q.M * q.K, q.astr);
    batch_strides(Bv, pb, q.yb, q.ydim, q.K * q.N, q.bstr);
    if (!param_ok(a, q.azi, q.M) || !param_ok(a, q.bzi, q.N) ||
        (op != PF_IR_MATMUL_INTEGER && (!param_ok(a, 1, q.M) || !param_ok(a, 4, q.N))) ||
        (op == PF_IR_QLINEAR_MATMUL && (!param_ok(a, 6, q.M) || !param_ok(a, 7, q.M))) ||
        (op == PF_IR_QMATMUL && (!param_ok(a, 1, 1) || !param_ok(a, 2, 1))))
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "quantization parameters must be per tensor, "
                              "per row of a (%lld) or per column of b (%lld)", (long long)q.M,
                              (long long)q.N);
    pf_nn_cpu_parallel(a->pool, qmm_run, &q);
    return PF_OK;
}
