/* Gemm and MatMul through cuBLAS (row-major operands computed as the
 * column-major transpose: Y^T = B^T A^T, so no operand is copied).
 *
 * FP16: half operands with f32 accumulation (CUBLAS_COMPUTE_32F) on tensor
 * cores; FP32: exact f32 unless the executor allows TF32. Gemm's C is
 * broadcast into Y first and accumulated with beta. MatMul batches fold
 * into M when B is shared, else run strided-batched (a broadcast operand
 * gets stride 0); other broadcast patterns are refused at plan time. The
 * fused activation runs after through pf_nn_cuda_bias_act. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "../../core/error.h"
#include "exec_cuda.h"

static pf_status blas_fail(const pf_ir_graph *g, int node, const char *call, cublasStatus_t st)
{
    char d[160];
    return pf_set_error(PF_ERR_DEVICE, "%s: %s failed: %s", pf_cux_desc(g, node, d, sizeof d),
                        call, cublasGetStatusString(st));
}

static int64_t numel(const pf_nn_cu_tensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->dims[d];
    return n;
}

pf_status pf_cux_gemm_prepare(pf_cux_ctx *c, const pf_ir_graph *g, int node,
                              const pf_nn_cu_tensor *in, const pf_nn_cu_tensor *y,
                              pf_cux_gemm *gm)
{
    (void)c;
    const pf_ir_node *n = &g->nodes[node];
    char d[160];
    memset(gm, 0, sizeof *gm);
    gm->batch = 1;
    const pf_nn_cu_tensor *a = &in[0], *b = &in[1];
    if (n->op == PF_IR_GEMM) {
        const pf_ir_gemm_attr *at = &n->attr.gemm;
        if (a->ndim != 2 || b->ndim != 2)
            return pf_set_error(PF_ERR_UNSUPPORTED, "%s: Gemm needs 2D A and B",
                                pf_cux_desc(g, node, d, sizeof d));
        gm->trans_a = at->trans_a;
        gm->trans_b = at->trans_b;
        gm->m = at->trans_a ? a->dims[1] : a->dims[0];
        gm->k = at->trans_a ? a->dims[0] : a->dims[1];
        gm->n = at->trans_b ? b->dims[0] : b->dims[1];
        gm->lda = a->dims[1];
        gm->ldb = b->dims[1];
        gm->alpha = at->alpha;
        gm->beta = (n->n_in > 2 && n->in[2] >= 0) ? at->beta : 0.0f;
    } else {
        gm->matmul = true;
        gm->alpha = 1.0f;
        gm->m = a->ndim >= 2 ? a->dims[a->ndim - 2] : 1;
        gm->k = a->dims[a->ndim - 1];
        gm->n = b->ndim >= 2 ? b->dims[b->ndim - 1] : 1;
        gm->lda = gm->k;
        gm->ldb = gm->n;
        const int64_t mn = gm->m * gm->n;
        const int64_t batch = mn ? numel(y) / mn : 0;
        const int64_t ab = (gm->m * gm->k) != 0 ? numel(a) / (gm->m * gm->k) : 0;
        const int64_t bb = (gm->k * gm->n) != 0 ? numel(b) / (gm->k * gm->n) : 0;
        if (bb == 1 && ab == batch) {
            gm->m *= batch; /* A's batch rows stack: one GEMM */
        } else if ((ab == batch || ab == 1) && (bb == batch || bb == 1)) {
            gm->batch = batch;
            gm->stride_a = ab == 1 ? 0 : gm->m * gm->k;
            gm->stride_b = bb == 1 ? 0 : gm->k * gm->n;
            gm->stride_y = mn;
        } else {
            return pf_set_error(PF_ERR_UNSUPPORTED,
                                "%s: MatMul batch broadcast %lld x %lld -> %lld is not supported "
                                "on CUDA", pf_cux_desc(g, node, d, sizeof d), (long long)ab,
                                (long long)bb, (long long)batch);
        }
    }
    if (gm->m > INT_MAX || gm->n > INT_MAX || gm->k > INT_MAX || gm->batch > INT_MAX ||
        gm->lda > INT_MAX || gm->ldb > INT_MAX)
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: matrix dims beyond cuBLAS's int range",
                            pf_cux_desc(g, node, d, sizeof d));
    return PF_OK;
}

pf_status pf_cux_gemm_run(pf_cux_ctx *c, const pf_ir_graph *g, int node, const pf_cux_gemm *gm,
                          const pf_nn_cu_tensor *in, const pf_nn_cu_tensor *y, cudaStream_t s)
{
    const pf_ir_node *n = &g->nodes[node];
    const cudaDataType_t dt = c->fp16 ? CUDA_R_16F : CUDA_R_32F;
    const cublasComputeType_t ct =
        (!c->fp16 && c->p.allow_tf32) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    if (gm->m == 0 || gm->n == 0) return PF_OK;
    if (!gm->matmul && gm->beta != 0.0f) {
        /* Y = broadcast(C), then Y = alpha A B + beta Y. */
        const pf_nn_cu_tensor *ct_ = &in[2];
        pf_nn_cu_tensor v = *y;
        v.data = ct_->data;
        v.dtype = ct_->dtype;
        const int off = 2 - ct_->ndim;
        for (int dd = 0; dd < 2; dd++) {
            const int j = dd - off;
            v.strides[dd] = (j < 0 || ct_->dims[j] == 1) ? 0 : ct_->strides[j];
        }
        pf_status st = pf_nn_cuda_copy(&v, y, s);
        if (st != PF_OK) return st;
    }
    if (gm->k == 0) {
        /* An empty sum: alpha * 0 + beta * C. */
        if (gm->beta == 0.0f) {
            cudaError_t e = cudaMemsetAsync(y->data, 0, (size_t)(gm->m * gm->n * gm->batch) *
                                                            (c->fp16 ? 2 : 4), s);
            if (e != cudaSuccess) return pf_set_error(PF_ERR_DEVICE, "cudaMemsetAsync: %s",
                                                      cudaGetErrorString(e));
        }
    } else if (gm->batch == 1) {
        cublasStatus_t st = cublasGemmEx(
            c->cublas, gm->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
            gm->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)gm->n, (int)gm->m, (int)gm->k,
            &gm->alpha, in[1].data, dt, (int)gm->ldb, in[0].data, dt, (int)gm->lda, &gm->beta,
            y->data, dt, (int)gm->n, ct, CUBLAS_GEMM_DEFAULT);
        if (st != CUBLAS_STATUS_SUCCESS) return blas_fail(g, node, "cublasGemmEx", st);
    } else {
        cublasStatus_t st = cublasGemmStridedBatchedEx(
            c->cublas, CUBLAS_OP_N, CUBLAS_OP_N, (int)gm->n, (int)gm->m, (int)gm->k, &gm->alpha,
            in[1].data, dt, (int)gm->ldb, gm->stride_b, in[0].data, dt, (int)gm->lda,
            gm->stride_a, &gm->beta, y->data, dt, (int)gm->n, gm->stride_y, (int)gm->batch, ct,
            CUBLAS_GEMM_DEFAULT);
        if (st != CUBLAS_STATUS_SUCCESS)
            return blas_fail(g, node, "cublasGemmStridedBatchedEx", st);
    }
    if (n->act != PF_IR_ACT_NONE)
        return pf_nn_cuda_bias_act(y, y, NULL, n->act, n->act_a, n->act_b, s);
    return PF_OK;
}
