/* Private: shape, broadcasting and strided-copy helpers shared by the light
 * CPU kernels (unary, cast, binary, reduce, softmax, movement).
 *
 * Everything counts in elements, not bytes, unless a name says so. Kernels
 * read shapes from the graph values; these helpers never allocate, so they
 * may run inside pf_nn_cpu_parallel workers. */
#ifndef PF_NN_CPU_NDUTIL_H
#define PF_NN_CPU_NDUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

/* Work below this many elements runs on the calling thread: a pool wake-up
 * costs more than the loop. */
#define PF_ND_PAR_MIN 65536

/* Bytes of one element; 0 for an unknown dtype. */
size_t pf_nd_esize(pf_ir_dtype t);
/* Product of the value's dims (1 for rank 0); -1 if a dim is unknown. */
int64_t pf_nd_numel(const pf_ir_value *v);
/* Contiguous row-major strides of dims[0..nd). */
void pf_nd_strides(int nd, const int64_t *dims, int64_t *strides);
/* Writes v converted to dtype t at dst (ints truncate toward zero and
 * saturate; BOOL = v != 0). */
void pf_nd_store_double(void *dst, pf_ir_dtype t, double v);
/* Element i of an integer (I64/I32/I8/U8/BOOL) array, widened; 0 for other
 * dtypes. pf_nd_store_i64 writes x truncated to t (wrapping, as a C cast). */
int64_t pf_nd_load_i64(const void *p, pf_ir_dtype t, int64_t i);
void pf_nd_store_i64(void *p, pf_ir_dtype t, int64_t i, int64_t x);
/* Fills n elements of dtype t with v. */
void pf_nd_fill(void *dst, pf_ir_dtype t, double v, int64_t n);

/* Runs fn(ctx, lo, hi) over [0, total), split across the pool when total is
 * at least `grain` (PF_ND_PAR_MIN when 0), else once on the caller. */
typedef void (*pf_nd_range_fn)(void *ctx, int64_t lo, int64_t hi);
void pf_nd_parallel_range(pf_threadpool *pool, int64_t total, int64_t grain, pf_nd_range_fn fn,
                          void *ctx);

/* Numpy broadcasting of up to PF_ND_MAX_OPS inputs against a contiguous
 * output. After init, dims are the output's with neighbours merged where
 * every operand allows it; st[k][d] is input k's stride (0 = broadcast). */
#define PF_ND_MAX_OPS PF_IR_MAX_INPUTS
typedef struct pf_nd_bcast {
    int nd;                                     /* >= 1 */
    int nops;
    int64_t dims[PF_IR_MAX_RANK];
    int64_t st[PF_ND_MAX_OPS][PF_IR_MAX_RANK];
    int64_t total;
} pf_nd_bcast;

/* false when an input does not broadcast to the output shape. */
bool pf_nd_bcast_init(pf_nd_bcast *b, int out_nd, const int64_t *out_dims, int nops,
                      const pf_ir_value *const *ins);
/* Calls row(ctx, out_off, in_off[], n, in_step[]) for the runs of output
 * elements [lo, hi): n consecutive outputs from out_off, input k starting at
 * in_off[k] and moving by in_step[k] per element. */
typedef void (*pf_nd_row_fn)(void *ctx, int64_t out_off, const int64_t *in_off, int64_t n,
                             const int64_t *in_step);
void pf_nd_bcast_rows(const pf_nd_bcast *b, int64_t lo, int64_t hi, pf_nd_row_fn row, void *ctx);

/* Copies the strided view (dims, in_strides, in_base; strides may be zero
 * or negative) of `in` into the contiguous `out`, elements of esize bytes.
 * Merges dims, copies contiguous runs with memcpy and tiles transposes. */
void pf_nd_copy_strided(void *out, const void *in, size_t esize, int nd, const int64_t *dims,
                        int64_t in_base, const int64_t *in_strides, pf_threadpool *pool);

#endif
