/* GEMM (alpha, beta, transA/B, C broadcast to [M, N]) and MATMUL (numpy
 * batch broadcasting, 1-D operands promoted and their unit dim dropped),
 * both with the fused act, both on sgemm. MatMul with a 2-D (or 1-D) B is
 * one sgemm over all of A's batch rows at once: the batches of A are
 * contiguous, so [..., M, K] is one [batch*M, K] matrix. Products are split
 * over the pool (pf_nn_sgemm_pool), the act applied per tile where the
 * product is one call. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "blas.h"
#include "kernels.h"

/* The fused act on each finished tile (pf_nn_sgemm_pool), while in cache. */
typedef struct act_post {
    float *y;
    int64_t ldy;
    pf_ir_act act;
    float a, b;
} act_post;

static void act_tile(void *ctx, int i0, int i1, int j0, int j1)
{
    const act_post *p = ctx;
    for (int i = i0; i < i1; i++)
        pf_nn_cpu_apply_act(p->y + i * p->ldy + j0, (size_t)(j1 - j0), p->act, p->a, p->b);
}

/* Batched MatMul: product t of `batch`, its operands found through the
 * broadcast batch dims. */
typedef struct mm_job {
    const float *A, *B;
    float *y;
    int64_t M, N, K;
    int nb;
    const int64_t *bd, *sa, *sb;
    int64_t batch;
} mm_job;

static void mm_one(const mm_job *j, int64_t t, pf_threadpool *pool)
{
    int64_t rem = t, oa = 0, ob = 0;
    for (int i = j->nb - 1; i >= 0; i--) {
        int64_t idx = rem % j->bd[i];
        rem /= j->bd[i];
        oa += idx * j->sa[i];
        ob += idx * j->sb[i];
    }
    pf_nn_sgemm_pool(pool, 0, 0, (int)j->M, (int)j->N, (int)j->K, 1.0f, j->A + oa, (int)j->K,
                     j->B + ob, (int)j->N, 0.0f, j->y + t * j->M * j->N, (int)j->N, NULL, NULL);
}

static void mm_batches(void *ctx, int ith, int nth)
{
    const mm_job *j = ctx;
    for (int64_t t = j->batch * ith / nth; t < j->batch * (ith + 1) / nth; t++) mm_one(j, t, NULL);
}

static int dims_fit_int(int64_t a, int64_t b, int64_t c)
{
    return a >= 0 && b >= 0 && c >= 0 && a <= INT32_MAX && b <= INT32_MAX && c <= INT32_MAX;
}

pf_status pf_nn_cpu_gemm(const pf_nn_cpu_args *a)
{
    const pf_ir_value *va = a->vin[0], *vb = a->node->n_in > 1 ? a->vin[1] : NULL;
    const pf_ir_value *vc = a->node->n_in > 2 ? a->vin[2] : NULL, *vy = a->vout[0];
    const pf_ir_gemm_attr *at = &a->node->attr.gemm;
    if (!va || !vb) return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "needs inputs A and B");
    if (va->dtype != PF_IR_F32 || vb->dtype != PF_IR_F32 || vy->dtype != PF_IR_F32 ||
        (vc && vc->dtype != PF_IR_F32))
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "dtype %s (only f32)",
                              pf_ir_dtype_name(va->dtype));
    if (va->ndim != 2 || vb->ndim != 2 || vy->ndim != 2 || (vc && vc->ndim > 2))
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "ranks A %d, B %d, C %d, Y %d (A, B, Y "
                              "must be 2-D, C at most 2-D)", va->ndim, vb->ndim,
                              vc ? vc->ndim : 0, vy->ndim);
    int64_t M = at->trans_a ? va->dims[1] : va->dims[0];
    int64_t K = at->trans_a ? va->dims[0] : va->dims[1];
    int64_t Kb = at->trans_b ? vb->dims[1] : vb->dims[0];
    int64_t N = at->trans_b ? vb->dims[0] : vb->dims[1];
    if (K != Kb || vy->dims[0] != M || vy->dims[1] != N)
        return pf_nn_cpu_fail(a, PF_ERR_FORMAT, "A [%lld, %lld]%s x B [%lld, %lld]%s does not "
                              "give Y [%lld, %lld]", (long long)va->dims[0],
                              (long long)va->dims[1], at->trans_a ? "^T" : "",
                              (long long)vb->dims[0], (long long)vb->dims[1],
                              at->trans_b ? "^T" : "", (long long)vy->dims[0],
                              (long long)vy->dims[1]);
    if (!dims_fit_int(M, N, K))
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "too large for 32-bit sgemm sizes");
    float *y = a->out[0];
    float beta = 0.0f;
    if (vc && at->beta != 0.0f) {
        int64_t cm = vc->ndim == 2 ? vc->dims[0] : 1;
        int64_t cn = vc->ndim >= 1 ? vc->dims[vc->ndim - 1] : 1;
        if ((cm != 1 && cm != M) || (cn != 1 && cn != N))
            return pf_nn_cpu_fail(a, PF_ERR_FORMAT, "C [%lld, %lld] does not broadcast to "
                                  "[%lld, %lld]", (long long)cm, (long long)cn, (long long)M,
                                  (long long)N);
        const float *c = a->in[2];
        for (int64_t i = 0; i < M; i++) {
            const float *cr = c + (cm == 1 ? 0 : i) * cn;
            float *yr = y + i * N;
            if (cn == 1)
                for (int64_t j = 0; j < N; j++) yr[j] = at->beta * cr[0];
            else
                for (int64_t j = 0; j < N; j++) yr[j] = at->beta * cr[j];
        }
        beta = 1.0f;
    }
    act_post post = {y, N, a->node->act, a->node->act_a, a->node->act_b};
    pf_nn_sgemm_pool(a->pool, at->trans_a, at->trans_b, (int)M, (int)N, (int)K, at->alpha,
                     a->in[0], (int)va->dims[1], a->in[1], (int)vb->dims[1], beta, y, (int)N,
                     post.act != PF_IR_ACT_NONE ? act_tile : NULL, &post);
    return PF_OK;
}

pf_status pf_nn_cpu_matmul(const pf_nn_cpu_args *a)
{
    const pf_ir_value *va = a->vin[0], *vb = a->node->n_in > 1 ? a->vin[1] : NULL;
    const pf_ir_value *vy = a->vout[0];
    if (!va || !vb) return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "needs inputs A and B");
    if (va->dtype != PF_IR_F32 || vb->dtype != PF_IR_F32 || vy->dtype != PF_IR_F32)
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "dtype %s (only f32)",
                              pf_ir_dtype_name(va->dtype));
    int ra = va->ndim, rb = vb->ndim;
    if (ra < 1 || rb < 1)
        return pf_nn_cpu_fail(a, PF_ERR_FORMAT, "operands must have rank >= 1 (got %d, %d)",
                              ra, rb);
    int64_t M = ra >= 2 ? va->dims[ra - 2] : 1, K = va->dims[ra - 1];
    int64_t Kb = rb >= 2 ? vb->dims[rb - 2] : vb->dims[0], N = rb >= 2 ? vb->dims[rb - 1] : 1;
    /* Batch dims, right-aligned to the longer one. */
    int nba = ra > 2 ? ra - 2 : 0, nbb = rb > 2 ? rb - 2 : 0;
    int nb = nba > nbb ? nba : nbb;
    int64_t bd[PF_IR_MAX_RANK], sa[PF_IR_MAX_RANK], sb[PF_IR_MAX_RANK];
    int64_t batch = 1, stra = M * K, strb = K * N;
    for (int i = nb - 1; i >= 0; i--) {
        int ia = i - (nb - nba), ib = i - (nb - nbb);
        int64_t da = ia >= 0 ? va->dims[ia] : 1, db = ib >= 0 ? vb->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return pf_nn_cpu_fail(a, PF_ERR_FORMAT, "batch dims %lld and %lld do not broadcast",
                                  (long long)da, (long long)db);
        bd[i] = da > db ? da : db;
        if (da == 0 || db == 0) bd[i] = 0;
        sa[i] = da == 1 ? 0 : stra;
        sb[i] = db == 1 ? 0 : strb;
        stra *= da;
        strb *= db;
        batch *= bd[i];
    }
    /* Expected output: batch dims, then M unless A was 1-D, N unless B was 1-D. */
    int64_t ye[PF_IR_MAX_RANK + 2];
    int ry = 0;
    for (int i = 0; i < nb; i++) ye[ry++] = bd[i];
    if (ra >= 2) ye[ry++] = M;
    if (rb >= 2) ye[ry++] = N;
    int ok = K == Kb && ry == vy->ndim;
    for (int i = 0; ok && i < ry; i++) ok = ye[i] == vy->dims[i];
    if (!ok)
        return pf_nn_cpu_fail(a, PF_ERR_FORMAT, "A (rank %d, [.., %lld, %lld]) x B (rank %d, "
                              "[.., %lld, %lld]) does not match the output value (rank %d)",
                              ra, (long long)M, (long long)K, rb, (long long)Kb, (long long)N,
                              vy->ndim);
    const float *A = a->in[0], *B = a->in[1];
    float *y = a->out[0];
    if (nbb == 0 || batch == 0) {
        if (!dims_fit_int(batch * M, N, K))
            return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "too large for 32-bit sgemm sizes");
        act_post post = {y, N, a->node->act, a->node->act_a, a->node->act_b};
        pf_nn_sgemm_pool(a->pool, 0, 0, (int)(batch * M), (int)N, (int)K, 1.0f, A, (int)K, B,
                         (int)N, 0.0f, y, (int)N, post.act != PF_IR_ACT_NONE ? act_tile : NULL,
                         &post);
        return PF_OK;
    } else {
        if (!dims_fit_int(M, N, K))
            return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "too large for 32-bit sgemm sizes");
        mm_job j = {A, B, y, M, N, K, nb, bd, sa, sb, batch};
        /* small products (attention heads): one thread per batch range;
         * large ones: each product split over the pool */
        if (M * N * K < ((int64_t)1 << 17)) pf_nn_cpu_parallel(a->pool, mm_batches, &j);
        else
            for (int64_t t = 0; t < batch; t++) mm_one(&j, t, a->pool);
    }
    pf_nn_cpu_apply_act(y, (size_t)(batch * M * N), a->node->act, a->node->act_a,
                        a->node->act_b);
    return PF_OK;
}
