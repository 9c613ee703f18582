/* Fused activations and the parallel helper shared by the CPU kernels. */
#include <math.h>

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

void pf_nn_cpu_apply_act(float *x, size_t n, pf_ir_act act, float a, float b)
{
    if (act == PF_IR_ACT_NONE) return;
    if (act == PF_IR_ACT_RELU) {
        for (size_t i = 0; i < n; i++) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
        return;
    }
    if (act == PF_IR_ACT_CLIP) {
        for (size_t i = 0; i < n; i++) x[i] = x[i] < a ? a : (x[i] > b ? b : x[i]);
        return;
    }
    for (size_t i = 0; i < n; i++) x[i] = pf_nn_act_scalar(x[i], act, a, b);
}

void pf_nn_cpu_parallel(pf_threadpool *pool, void (*fn)(void *ctx, int ith, int nth), void *ctx)
{
    if (!pool || pf_threadpool_size(pool) <= 1) {
        fn(ctx, 0, 1);
        return;
    }
    pf_threadpool_parallel_for(pool, 0, fn, ctx);
}
