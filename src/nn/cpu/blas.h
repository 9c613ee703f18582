/* Private: single-precision GEMM for the nn CPU kernels: OpenBLAS's
 * cblas_sgemm, loaded at run time (blas.c says why), or built-in blocked
 * loops when libopenblas is absent or PF_NN_BLAS=builtin. */
#ifndef PF_NN_CPU_BLAS_H
#define PF_NN_CPU_BLAS_H

#include <stddef.h>

#include "pixflow/core.h"
#include "pixflow/thread.h"

PF_BEGIN_DECLS

/* C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, row-major, with
 * leading dimensions lda/ldb/ldc in elements. One thread: OpenBLAS is set to
 * one thread and the kernels split products over their own pool
 * (pf_nn_sgemm_pool), so two thread sets never fight over the cores and
 * epilogues run while the tile is still in cache. Thread-safe. */
void pf_nn_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                 int lda, const float *B, int ldb, float beta, float *C, int ldc);

/* Called once per finished tile C[i0:i1, j0:j1] (e.g. bias + activation),
 * on the thread that computed it, while the tile is still in cache. */
typedef void (*pf_nn_gemm_post_fn)(void *ctx, int i0, int i1, int j0, int j1);

/* pf_nn_sgemm split into tiles over `pool` (NULL: this thread only): column
 * ranges per thread when N is wide enough, else row ranges; each range in
 * tiles of a few hundred KiB. `post` (may be NULL) runs on each tile. */
void pf_nn_sgemm_pool(pf_threadpool *pool, int trans_a, int trans_b, int M, int N, int K,
                      float alpha, const float *A, int lda, const float *B, int ldb, float beta,
                      float *C, int ldc, pf_nn_gemm_post_fn post, void *ctx);
/* "openblas <version/config>" or "built-in loops". */
const char *pf_nn_blas_name(void);

PF_END_DECLS

#endif
