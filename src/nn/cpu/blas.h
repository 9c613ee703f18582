/* Private: single-precision GEMM for the nn CPU kernels: OpenBLAS's
 * cblas_sgemm, loaded at run time (blas.c says why), or built-in blocked
 * loops when libopenblas is absent or PF_NN_BLAS=builtin. */
#ifndef PF_NN_CPU_BLAS_H
#define PF_NN_CPU_BLAS_H

#include <stddef.h>

#include "pixflow/core.h"

PF_BEGIN_DECLS

/* C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, row-major, with
 * leading dimensions lda/ldb/ldc in elements. Multi-threaded inside OpenBLAS
 * (its thread count is set once from pf_cpu_count()). Thread-safe. */
void pf_nn_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                 int lda, const float *B, int ldb, float beta, float *C, int ldc);
/* "openblas <version/config>" or "built-in loops". */
const char *pf_nn_blas_name(void);

PF_END_DECLS

#endif
