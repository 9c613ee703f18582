/* Fused activations and the parallel helper shared by the CPU kernels. */
#include "../../core/vectorize.h" /* first: compile flags for the row loops */

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"

float pf_nn_act_scalar(float x, pf_ir_act act, float a, float b)
{
    switch (act) {
    case PF_IR_ACT_NONE: return x;
    case PF_IR_ACT_RELU: return x > 0.0f ? x : 0.0f;
    case PF_IR_ACT_CLIP: return x < a ? a : (x > b ? b : x);
    case PF_IR_ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case PF_IR_ACT_TANH: return tanhf(x);
    case PF_IR_ACT_LEAKY_RELU: return x >= 0.0f ? x : a * x;
    case PF_IR_ACT_HARD_SIGMOID: {
        float y = a * x + b;
        return y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y);
    }
    case PF_IR_ACT_HARD_SWISH: {
        float y = x / 6.0f + 0.5f;
        return x * (y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y));
    }
    }
    return x;
}

/* e^x for x <= 0 (clamped at -87: e^-87 is still a normal float), in plain
 * arithmetic the vectoriser takes: x = n ln2 + r with |r| <= ln2/2 (ln2 in
 * two parts, Cody-Waite), e^r by Cephes' expf polynomial (relative error
 * ~1e-7), 2^n by building the exponent bits. */
static inline float exp_nonpos(float x)
{
    x = x < -87.0f ? -87.0f : x;
    float n = floorf(x * 1.44269504088896341f + 0.5f);
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float e = p * r * r + r + 1.0f;
    int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return e * scale;
}

/* Vector loops for the activations that mobile nets fuse; the rest (tanh,
 * and none of these is hot) per element through pf_nn_act_scalar. Sigmoid
 * uses exp of -|x| only (no overflow): 1/(1+e) for x >= 0, e/(1+e) below,
 * within a few ulp of the expf form; HardSwish multiplies by 1/6 rather than
 * dividing (within an ulp; a vector division costs several multiplies). */
WIDE_CLONES void pf_nn_cpu_apply_act(float *restrict x, size_t n, pf_ir_act act, float a, float b)
{
    switch (act) {
    case PF_IR_ACT_NONE: return;
    case PF_IR_ACT_RELU:
        for (size_t i = 0; i < n; i++) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
        return;
    case PF_IR_ACT_CLIP:
        for (size_t i = 0; i < n; i++) x[i] = x[i] < a ? a : (x[i] > b ? b : x[i]);
        return;
    case PF_IR_ACT_LEAKY_RELU:
        for (size_t i = 0; i < n; i++) x[i] = x[i] >= 0.0f ? x[i] : a * x[i];
        return;
    case PF_IR_ACT_HARD_SIGMOID:
        for (size_t i = 0; i < n; i++) {
            float y = a * x[i] + b;
            x[i] = y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y);
        }
        return;
    case PF_IR_ACT_HARD_SWISH:
        for (size_t i = 0; i < n; i++) {
            float y = x[i] * (1.0f / 6.0f) + 0.5f;
            x[i] = x[i] * (y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y));
        }
        return;
    case PF_IR_ACT_SIGMOID:
        for (size_t i = 0; i < n; i++) {
            float v = x[i], e = exp_nonpos(v < 0.0f ? v : -v), s = 1.0f / (1.0f + e);
            x[i] = v >= 0.0f ? s : e * s;
        }
        return;
    default:
        for (size_t i = 0; i < n; i++) x[i] = pf_nn_act_scalar(x[i], act, a, b);
        return;
    }
}

void pf_nn_cpu_parallel(pf_threadpool *pool, void (*fn)(void *ctx, int ith, int nth), void *ctx)
{
    if (!pool || pf_threadpool_size(pool) <= 1) {
        fn(ctx, 0, 1);
        return;
    }
    pf_threadpool_parallel_for(pool, 0, fn, ctx);
}
