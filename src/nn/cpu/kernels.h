/* Private: the CPU kernels of the nn module (fp32 math; shape/index ops on
 * their integer types too).
 *
 * One entry point runs one IR node on host memory:
 *
 *   pf_nn_cpu_run_node(g, node_id, in_ptrs, out_ptrs, pool, scratch, scratch_bytes);
 *
 * in[i] points to the contiguous row-major data of g->values[node->in[i]]
 * (NULL for an absent optional input), out[i] to room for
 * g->values[node->out[i]]; shapes and dtypes are read from the graph, which
 * must be shape-inferred with every dim concrete. Outputs never alias inputs.
 * `pool` (may be NULL = one thread) splits work as parallel_for(ith, nth);
 * kernels allocate nothing: temporary memory comes from `scratch`, at least
 * pf_nn_cpu_scratch_bytes(g, node) bytes, 64-byte aligned.
 *
 * These kernels are both the CPU executor and the reference the CUDA
 * executor is checked against; conv/convtranspose/gemm/matmul go through
 * OpenBLAS sgemm (im2col where needed), with a naive loop reference kept in
 * tests/. Unsupported dtype/attr combinations return PF_ERR_UNSUPPORTED
 * naming the node (pf_nn_cpu_supports() says so up front).
 *
 * The dispatch table (dispatch.c) maps each pf_ir_op to a pf_nn_cpu_fn; the
 * kernel files implement the functions declared below. */
#ifndef PF_NN_CPU_KERNELS_H
#define PF_NN_CPU_KERNELS_H

#include <stdbool.h>
#include <stddef.h>

#include "../ir.h"
#include "pixflow/thread.h"

PF_BEGIN_DECLS

typedef struct pf_nn_cpu_args {
    const pf_ir_graph *g;
    const pf_ir_node *node;
    const pf_ir_value *vin[PF_IR_MAX_INPUTS];   /* NULL for absent optional inputs */
    const pf_ir_value *vout[PF_IR_MAX_OUTPUTS];
    const void *in[PF_IR_MAX_INPUTS];
    void *out[PF_IR_MAX_OUTPUTS];
    pf_threadpool *pool;                        /* may be NULL */
    void *scratch;
    size_t scratch_bytes;
} pf_nn_cpu_args;

typedef pf_status (*pf_nn_cpu_fn)(const pf_nn_cpu_args *a);
typedef size_t (*pf_nn_cpu_scratch_fn)(const pf_ir_graph *g, const pf_ir_node *n);

pf_status pf_nn_cpu_run_node(const pf_ir_graph *g, int node, const void *const *in,
                             void *const *out, pf_threadpool *pool, void *scratch,
                             size_t scratch_bytes);
size_t pf_nn_cpu_scratch_bytes(const pf_ir_graph *g, int node);
/* true when the CPU can run the node; otherwise writes the reason to why. */
bool pf_nn_cpu_supports(const pf_ir_graph *g, int node, char *why, size_t why_size);

/* Shared helpers (act.c). */
/* Applies node->act in place to n floats. */
void pf_nn_cpu_apply_act(float *x, size_t n, pf_ir_act act, float a, float b);
float pf_nn_act_scalar(float x, pf_ir_act act, float a, float b);
/* Runs fn(ctx, ith, nth) over the pool, or once with (0, 1) without one. */
void pf_nn_cpu_parallel(pf_threadpool *pool, void (*fn)(void *ctx, int ith, int nth), void *ctx);
/* Error helper: sets the message "<node desc>: <fmt...>" and returns st. */
pf_status pf_nn_cpu_fail(const pf_nn_cpu_args *a, pf_status st, const char *fmt, ...);

/* conv_geom.c: the geometry of a CONV / CONV_TRANSPOSE node. Spatial
 * fields of 1D convs are H = OH = kh = sh = dh = 1, pads 0. */
typedef struct pf_nn_conv_geom {
    int64_t N, C, H, W;                 /* input */
    int64_t M, OH, OW, YN, YC;          /* output (M set by the op; YN, YC: Y's dims) */
    int64_t kh, kw, sh, sw, dh, dw;
    int64_t pt, pl, pb, pr;             /* pad begin (top, left) and end (bottom, right) */
    int64_t oph, opw;                   /* ConvTranspose output_padding */
    int64_t w0, w1;                     /* W's first two dims */
    int64_t group, Cg, Mg;              /* Cg, Mg: set by pf_nn_conv_geom_finish */
} pf_nn_conv_geom;
/* Inputs, ranks (`what` names the op in the message), f32 dtypes, strides
 * and dilations >= 1; fills everything but M, Cg, Mg. 0, or -1 with `why`. */
int pf_nn_conv_geom_read(const pf_ir_graph *g, const pf_ir_node *n, const char *what,
                         pf_nn_conv_geom *s, char *why, size_t why_size);
/* With s->M set by the op and its expected output size oh x ow: sets Cg, Mg
 * and checks Y's dims and the bias [M]. 0, or -1 with `why`. */
int pf_nn_conv_geom_finish(const pf_ir_graph *g, const pf_ir_node *n, pf_nn_conv_geom *s,
                           int64_t oh, int64_t ow, char *why, size_t why_size);

/* ---- Kernels, by file ------------------------------------------------------- */
/* conv.c */
pf_status pf_nn_cpu_conv(const pf_nn_cpu_args *a);
size_t pf_nn_cpu_conv_scratch(const pf_ir_graph *g, const pf_ir_node *n);
/* conv_pw.c: Y[M, n] (row stride ldy) = act(bias + W[M, K] * X[K, n] (row
 * stride ldx)) for small K, one thread; bias may be NULL. M <= PF_NN_PW_MAX_M. */
enum { PF_NN_PW_MAX_M = 4096 };
void pf_nn_cpu_pw_small(const float *w, const float *bias, int64_t M, int64_t K, const float *x,
                        int64_t ldx, float *y, int64_t ldy, int64_t n, pf_ir_act act,
                        float act_a, float act_b);
/* conv_transpose.c */
pf_status pf_nn_cpu_conv_transpose(const pf_nn_cpu_args *a);
size_t pf_nn_cpu_conv_transpose_scratch(const pf_ir_graph *g, const pf_ir_node *n);
/* gemm.c: GEMM, MATMUL */
pf_status pf_nn_cpu_gemm(const pf_nn_cpu_args *a);
pf_status pf_nn_cpu_matmul(const pf_nn_cpu_args *a);
/* pool.c: MAXPOOL, AVGPOOL, GLOBAL_AVGPOOL, GLOBAL_MAXPOOL */
pf_status pf_nn_cpu_pool(const pf_nn_cpu_args *a);
/* batchnorm.c */
pf_status pf_nn_cpu_batchnorm(const pf_nn_cpu_args *a);
/* resize.c */
pf_status pf_nn_cpu_resize(const pf_nn_cpu_args *a);
/* unary.c: RELU .. SIGN, IDENTITY, CAST */
pf_status pf_nn_cpu_unary(const pf_nn_cpu_args *a);
pf_status pf_nn_cpu_cast(const pf_nn_cpu_args *a);
/* binary.c: ADD .. XOR, PRELU, WHERE, SUM, MEAN_N */
pf_status pf_nn_cpu_binary(const pf_nn_cpu_args *a);
pf_status pf_nn_cpu_where(const pf_nn_cpu_args *a);
pf_status pf_nn_cpu_variadic(const pf_nn_cpu_args *a);
/* reduce.c: REDUCE_*, ARGMAX, ARGMIN */
pf_status pf_nn_cpu_reduce(const pf_nn_cpu_args *a);
pf_status pf_nn_cpu_argminmax(const pf_nn_cpu_args *a);
/* softmax.c: SOFTMAX, LOG_SOFTMAX */
pf_status pf_nn_cpu_softmax(const pf_nn_cpu_args *a);
/* movement.c: CONCAT, RESHAPE, TRANSPOSE, SLICE, PAD, GATHER, EXPAND, TILE,
 * SPLIT, DEPTH_TO_SPACE, SPACE_TO_DEPTH, SHAPE, CONSTANT_OF_SHAPE */
pf_status pf_nn_cpu_concat(const pf_nn_cpu_args *a);
pf_status pf_nn_cpu_reshape(const pf_nn_cpu_args *a);
pf_status pf_nn_cpu_transpose(const pf_nn_cpu_args *a);
pf_status pf_nn_cpu_slice(const pf_nn_cpu_args *a);
pf_status pf_nn_cpu_pad(const pf_nn_cpu_args *a);
pf_status pf_nn_cpu_gather(const pf_nn_cpu_args *a);
pf_status pf_nn_cpu_expand(const pf_nn_cpu_args *a);
pf_status pf_nn_cpu_tile(const pf_nn_cpu_args *a);
pf_status pf_nn_cpu_split(const pf_nn_cpu_args *a);
pf_status pf_nn_cpu_depth_space(const pf_nn_cpu_args *a);
pf_status pf_nn_cpu_shape(const pf_nn_cpu_args *a);
pf_status pf_nn_cpu_constant_of_shape(const pf_nn_cpu_args *a);

/* ---- Quantization (quant.c, qconv.c, qgemm.c) --------------------------------
 * The plain C reference: int32 accumulation (exact), requantization in
 * double for the ONNX QLinear ops (as ONNX's reference does) and in float
 * for the fused QCONV/QMATMUL (the fast paths' order: f = acc * (xs*ws) +
 * bias, then f / ys), rounding half to even, saturating. */
/* Element i of a U8/I8/I32 tensor as int32. */
static inline int32_t pf_nn_q_load(const void *p, pf_ir_dtype t, size_t i)
{
    if (t == PF_IR_U8) return ((const uint8_t *)p)[i];
    if (t == PF_IR_I8) return ((const int8_t *)p)[i];
    return ((const int32_t *)p)[i];
}
/* round half to even of r plus zp, saturated to t (U8 or I8); NaN -> zp. */
int32_t pf_nn_q_round_sat(double r, int32_t zp, pf_ir_dtype t);
/* Stores v (already in range) into element i of a U8/I8 tensor. */
static inline void pf_nn_q_store(void *p, pf_ir_dtype t, size_t i, int32_t v)
{
    if (t == PF_IR_U8) ((uint8_t *)p)[i] = (uint8_t)v;
    else ((int8_t *)p)[i] = (int8_t)v;
}
/* Entry i of a per-tensor (numel 1) or per-channel parameter; absent (NULL) = 0. */
double pf_nn_q_param(const pf_nn_cpu_args *a, int input, int64_t i);
pf_status pf_nn_cpu_quantize(const pf_nn_cpu_args *a);   /* QUANTIZE_LINEAR */
pf_status pf_nn_cpu_dequantize(const pf_nn_cpu_args *a); /* DEQUANTIZE_LINEAR */
pf_status pf_nn_cpu_qconv(const pf_nn_cpu_args *a);      /* QLINEAR_CONV, CONV_INTEGER, QCONV */
size_t pf_nn_cpu_qconv_scratch(const pf_ir_graph *g, const pf_ir_node *n);
/* qgemm_x86.c: the fast path's u8 x s8 GEMM (see there); isa = PF_QG_*. */
enum { PF_QG_SCALAR = 0, PF_QG_AVX2 = 1, PF_QG_AVXVNNI = 2, PF_QG_AVX512VNNI = 3 };
int pf_nn_qgemm_isa(void);
/* Tests: use at most `isa` (-1 = the best the CPU has); returns the previous setting. */
int pf_nn_qgemm_force(int isa);
const char *pf_nn_qgemm_isa_name(int isa);
void pf_nn_qgemm_u8s8(int isa, const int8_t *w4, const uint8_t *x4, int64_t M, int64_t KQ,
                      int64_t P, int32_t *acc, int64_t ldc);
pf_status pf_nn_cpu_qmatmul(const pf_nn_cpu_args *a);    /* QLINEAR_MATMUL, MATMUL_INTEGER, QMATMUL */

PF_END_DECLS

#endif
