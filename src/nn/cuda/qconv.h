/* Private to src/nn/cuda: the INT8 kernels (qconv.cu) and their host side
 * (qconv_exec.c), for the fused QCONV / QMATMUL nodes and runtime
 * QuantizeLinear / DequantizeLinear (ir.h gives the formulas).
 *
 * Two conv paths:
 * - igemm: an implicit GEMM on tensor cores (mma.sync m16n8k32, s8 x s8 ->
 *   s32), the structure of igemm.cu with bytes for halves: channels-last int8
 *   input, filter packed [M, kh, kw, C] (KRSC), int32 accumulators, then the
 *   requantizing epilogue. Needs: group 1, 2D, int8 input with zero point 0
 *   (symmetric activations), weight zero points 0, C % 16 == 0, channel
 *   stride 1 and other strides multiples of 16 (input), 32-bit extents.
 * - direct: one thread per output element, any strides/groups/zero points,
 *   int32 accumulation; depthwise convs and everything igemm refuses.
 * Epilogue (both): f = acc * scale[m] + bias[m] (+ residual) -> act, then
 * q = saturate(rint(f / y_scale) + y_zp) or f stored as float/half; the
 * multiply and add are rounded separately (__fmul_rn/__fadd_rn, no FMA) so
 * that with an F32 residual the result equals the CPU reference bit for
 * bit. */
#ifndef PF_NN_CUDA_QCONV_H
#define PF_NN_CUDA_QCONV_H

#include <stdint.h>

#include "cu_internal.h"

PF_BEGIN_DECLS

typedef struct pf_cu_qconv {
    int64_t n, c, h, w, m, oh, ow;      /* 1D convs: h = oh = 1 */
    int64_t x_st[4], y_st[4], z_st[4];  /* [N, C, H, W] strides in elements */
    int kh, kw, sh, sw, dh, dw, ph, pw, group, cg, mg;
    int x_dt, y_dt, z_dt;               /* pf_ir_dtype; z_dt -1 = no residual */
    int x_zp;
    float y_scale;                      /* 0 = float output */
    int y_zp;
    float z_scale;                      /* quantized residual: (z - z_zp) * z_scale */
    int z_zp;
    float m_scale;                      /* requantization before the residual (0 = none) */
    int m_zp, m_dt;
    int act;
    float act_a, act_b;
    const int8_t *wt;                   /* direct: [M, Cg, kh, kw]; igemm: [M, kh, kw, C] */
    const int32_t *w_zp;                /* direct: [M] or NULL */
    const float *scale;                 /* [M]: x_scale * w_scale[m] */
    const float *bias;                  /* [M] or NULL */
    int cfg;                            /* igemm tile config */
} pf_cu_qconv;

int pf_cu_qconv_ig_ok(const pf_cu_qconv *p);
int pf_cu_qconv_ig_configs(void);
int pf_cu_launch_qconv_ig(const pf_cu_qconv *p, const void *x, const void *z, void *y,
                          void *stream);
int pf_cu_launch_qconv_direct(const pf_cu_qconv *p, const void *x, const void *z, void *y,
                              void *stream);

/* QMATMUL: y[r, n] over rows r of A [rows, K] (row stride a_rs), B [K, N]
 * int8 row-major, scale [N], bias [N] or NULL; y row stride y_rs. */
typedef struct pf_cu_qmm {
    int64_t rows, k, n, a_rs, y_rs;
    int a_dt, y_dt, a_zp;
    float y_scale;
    int y_zp;
    int act;
    float act_a, act_b;
    const int8_t *b;
    const int32_t *b_zp;                /* [N] or NULL */
    const float *scale, *bias;
} pf_cu_qmm;
int pf_cu_launch_qmm(const pf_cu_qmm *p, const void *a, void *y, void *stream);

/* Per-tensor QuantizeLinear (quant = 1) / DequantizeLinear over index space s
 * (operand 0 = out, 1 = in). */
int pf_cu_launch_qdq(const pf_cu_nd *s, int quant, const void *in, int dt_in, void *out,
                     int dt_out, float scale, int zp, void *stream);

PF_END_DECLS

#endif
