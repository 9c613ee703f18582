/* Private: pixflow's own CUDA kernels for the nn ops cuDNN/cuBLAS do not
 * cover (everything except CONV, CONV_TRANSPOSE, GEMM, MATMUL, which the
 * executor maps to cuDNN/cuBLAS).
 *
 * Tensors are described logically with explicit element strides, so one
 * kernel serves NCHW and NHWC physical layouts (an NHWC activation is the
 * logical [N,C,H,W] value with strides {H*W*C, 1, W*C, C}). Float values are
 * F32 or F16 (the executor's precision; F16 math accumulates in f32);
 * indices I64/I32; comparisons output BOOL (u8). Kernels never allocate;
 * temporary memory comes from `scratch` (pf_nn_cuda_kernel_scratch bytes).
 * All launches go on `stream` (a cudaStream_t passed as void *), are
 * capturable into CUDA graphs (no sync, no malloc, no host reads of device
 * data) and return PF_ERR_DEVICE with the CUDA error and the node named
 * if a launch fails. Dense same-layout operands take a vectorised fast path. */
#ifndef PF_NN_CUDA_KERNELS_H
#define PF_NN_CUDA_KERNELS_H

#include <stdbool.h>
#include <stddef.h>

#include "../ir.h"

PF_BEGIN_DECLS

typedef struct pf_nn_cu_tensor {
    void *data;                         /* device pointer; NULL = absent optional input */
    pf_ir_dtype dtype;
    int ndim;
    int64_t dims[PF_IR_MAX_RANK];       /* logical (the IR value's shape) */
    int64_t strides[PF_IR_MAX_RANK];    /* elements */
} pf_nn_cu_tensor;

/* Runs node `node` of g (shapes concrete; attrs resolved). in/out follow the
 * node's inputs/outputs. Constant inputs are passed as device tensors too
 * (the executor uploads them in its precision). */
pf_status pf_nn_cuda_run_node(const pf_ir_graph *g, int node, const pf_nn_cu_tensor *in,
                              const pf_nn_cu_tensor *out, void *stream, void *scratch,
                              size_t scratch_bytes);
bool pf_nn_cuda_kernel_supports(const pf_ir_graph *g, int node, char *why, size_t why_size);
size_t pf_nn_cuda_kernel_scratch(const pf_ir_graph *g, int node);

/* dst = act(src) elementwise (src may equal dst), for activations cuDNN could
 * not fuse; also applies a per-channel bias first when bias != NULL
 * (bias[dims[1]] in dst's dtype). */
pf_status pf_nn_cuda_bias_act(const pf_nn_cu_tensor *src, const pf_nn_cu_tensor *dst,
                              const void *bias, pf_ir_act act, float a, float b, void *stream);
/* dst = act(a + b) elementwise, all three of one shape (dst may equal a
 * or b): the unfused form of a residual Add a conv absorbed. */
pf_status pf_nn_cuda_add_act(const pf_nn_cu_tensor *a, const pf_nn_cu_tensor *b,
                             const pf_nn_cu_tensor *dst, pf_ir_act act, float aa, float ab,
                             void *stream);
/* Strided copy with dtype conversion (F32 <-> F16, I64 <-> I32, same type):
 * layout changes, input casts and output casts. Shapes must match. */
pf_status pf_nn_cuda_copy(const pf_nn_cu_tensor *src, const pf_nn_cu_tensor *dst, void *stream);

PF_END_DECLS

#endif
