/* Pointwise (1x1) products with few input channels, without sgemm:
 * Y[m, j] = act(bias[m] + sum_k W[m, k] * X[k, j]).
 *
 * With K up to a few dozen (the expand/project convs of mobile nets at high
 * resolution) the product is bound by moving Y, not by multiplies, and
 * sgemm's extra passes dominate: packing, zeroing C for beta = 0, and the
 * separate bias/act epilogue. Here each output element is written once:
 * 4 output rows x 32 columns accumulate in registers over k, then bias and
 * act are applied to the column block while it is in L1. */
#include "../../core/vectorize.h" /* first: compile flags for the row loops */

#include <stdint.h>
#include <string.h>

#include "kernels.h"

/* Columns per block: bias/act run on [M, PW_BLOCK] while it is in cache. */
enum { PW_BLOCK = 256 };

#if defined(__GNUC__)
/* Sixteen floats loadable from any float address (GCC vector extension). */
typedef float pw_v16 __attribute__((vector_size(64), aligned(4)));

#define PW_LOAD(p) (*(const pw_v16 *)(p))
#define PW_STORE(p, v) (*(pw_v16 *)(p) = (v))
/* Inlined into each clone of pw_block, so compiled for its vector unit. */
#define PW_INLINE static inline __attribute__((always_inline))

/* Rows [m, m + 4) x columns [j, j + 32). */
PW_INLINE void pw_4x32(const float *w, const float *b, int64_t K, const float *x,
                           int64_t ldx, float *y, int64_t ldy)
{
    pw_v16 a00 = (pw_v16){0} + b[0], a01 = a00, a10 = (pw_v16){0} + b[1], a11 = a10,
           a20 = (pw_v16){0} + b[2], a21 = a20, a30 = (pw_v16){0} + b[3], a31 = a30;
    for (int64_t k = 0; k < K; k++) {
        const pw_v16 x0 = PW_LOAD(x + k * ldx), x1 = PW_LOAD(x + k * ldx + 16);
        const float w0 = w[k], w1 = w[K + k], w2 = w[2 * K + k], w3 = w[3 * K + k];
        a00 += w0 * x0;
        a01 += w0 * x1;
        a10 += w1 * x0;
        a11 += w1 * x1;
        a20 += w2 * x0;
        a21 += w2 * x1;
        a30 += w3 * x0;
        a31 += w3 * x1;
    }
    PW_STORE(y, a00);
    PW_STORE(y + 16, a01);
    PW_STORE(y + ldy, a10);
    PW_STORE(y + ldy + 16, a11);
    PW_STORE(y + 2 * ldy, a20);
    PW_STORE(y + 2 * ldy + 16, a21);
    PW_STORE(y + 3 * ldy, a30);
    PW_STORE(y + 3 * ldy + 16, a31);
}

/* One row x columns [j, j + 16). */
PW_INLINE void pw_1x16(const float *w, float b, int64_t K, const float *x, int64_t ldx,
                           float *y)
{
    pw_v16 a = (pw_v16){0} + b;
    for (int64_t k = 0; k < K; k++) a += w[k] * PW_LOAD(x + k * ldx);
    PW_STORE(y, a);
}
#define PW_HAVE_V16 1
#else
#define PW_HAVE_V16 0
#endif

/* Y[:, 0:n] of one column block (n <= PW_BLOCK) with the bias (b: M
 * values), before act. */
WIDE_CLONES static void pw_block(const float *w, const float *b, int64_t M, int64_t K,
                                 const float *x, int64_t ldx, float *y, int64_t ldy, int64_t n)
{
    int64_t m = 0, j32 = 0, j16 = 0;
#if PW_HAVE_V16
    j32 = n / 32 * 32;
    j16 = n / 16 * 16;
    for (; m + 4 <= M; m += 4)
        for (int64_t j = 0; j < j32; j += 32)
            pw_4x32(w + m * K, b + m, K, x + j, ldx, y + m * ldy + j, ldy);
    for (int64_t r = m; r < M; r++)
        for (int64_t j = 0; j < j32; j += 32) {
            pw_1x16(w + r * K, b[r], K, x + j, ldx, y + r * ldy + j);
            pw_1x16(w + r * K, b[r], K, x + j + 16, ldx, y + r * ldy + j + 16);
        }
    for (int64_t r = 0; r < M; r++)
        for (int64_t j = j32; j < j16; j += 16)
            pw_1x16(w + r * K, b[r], K, x + j, ldx, y + r * ldy + j);
#endif
    (void)m;
    for (int64_t r = 0; r < M; r++)
        for (int64_t j = j16; j < n; j++) {
            float acc = b[r];
            for (int64_t k = 0; k < K; k++) acc += w[r * K + k] * x[k * ldx + j];
            y[r * ldy + j] = acc;
        }
}

void pf_nn_cpu_pw_small(const float *w, const float *bias, int64_t M, int64_t K, const float *x,
                        int64_t ldx, float *y, int64_t ldy, int64_t n, pf_ir_act act,
                        float act_a, float act_b)
{
    float zeros[PF_NN_PW_MAX_M];
    if (!bias) {
        memset(zeros, 0, (size_t)M * sizeof(float));
        bias = zeros;
    }
    for (int64_t j0 = 0; j0 < n; j0 += PW_BLOCK) {
        int64_t nb = n - j0 < PW_BLOCK ? n - j0 : PW_BLOCK;
        pw_block(w, bias, M, K, x + j0, ldx, y + j0, ldy, nb);
        if (act != PF_IR_ACT_NONE)
            for (int64_t r = 0; r < M; r++)
                pf_nn_cpu_apply_act(y + r * ldy + j0, (size_t)nb, act, act_a, act_b);
    }
}
