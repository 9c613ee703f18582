/* Device helpers shared by the nn kernel files: loads and stores of any IR
 * dtype by a run-time code (the switch is uniform across a launch, so it
 * costs a predictable branch, and one kernel serves every dtype pair), the
 * fused activations, and the launch geometry. */
#ifndef PF_NN_CUDA_CU_COMMON_CUH
#define PF_NN_CUDA_CU_COMMON_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "cu_internal.h"
}

namespace pfcu {

typedef long long i64;

__device__ __forceinline__ float ldf(const void *p, int dt, i64 i)
{
    switch (dt) {
    case PF_IR_F32: return ((const float *)p)[i];
    case PF_IR_F16: return __half2float(((const __half *)p)[i]);
    case PF_IR_I64: return (float)((const i64 *)p)[i];
    case PF_IR_I32: return (float)((const int *)p)[i];
    case PF_IR_U8:
    case PF_IR_BOOL: return (float)((const unsigned char *)p)[i];
    case PF_IR_I8: return (float)((const signed char *)p)[i];
    case PF_IR_F64: return (float)((const double *)p)[i];
    default: return 0.0f;
    }
}

__device__ __forceinline__ i64 ldi(const void *p, int dt, i64 i)
{
    switch (dt) {
    case PF_IR_F32: return (i64)((const float *)p)[i];
    case PF_IR_F16: return (i64)__half2float(((const __half *)p)[i]);
    case PF_IR_I64: return ((const i64 *)p)[i];
    case PF_IR_I32: return ((const int *)p)[i];
    case PF_IR_U8:
    case PF_IR_BOOL: return ((const unsigned char *)p)[i];
    case PF_IR_I8: return ((const signed char *)p)[i];
    case PF_IR_F64: return (i64)((const double *)p)[i];
    default: return 0;
    }
}

__device__ __forceinline__ void stf(void *p, int dt, i64 i, float v)
{
    switch (dt) {
    case PF_IR_F32: ((float *)p)[i] = v; break;
    case PF_IR_F16: ((__half *)p)[i] = __float2half_rn(v); break;
    case PF_IR_I64: ((i64 *)p)[i] = (i64)v; break;
    case PF_IR_I32: ((int *)p)[i] = (int)v; break;
    case PF_IR_U8: ((unsigned char *)p)[i] = (unsigned char)v; break;
    case PF_IR_I8: ((signed char *)p)[i] = (signed char)v; break;
    case PF_IR_BOOL: ((unsigned char *)p)[i] = v != 0.0f; break;
    case PF_IR_F64: ((double *)p)[i] = v; break;
    default: break;
    }
}

__device__ __forceinline__ void sti(void *p, int dt, i64 i, i64 v)
{
    switch (dt) {
    case PF_IR_F32: ((float *)p)[i] = (float)v; break;
    case PF_IR_F16: ((__half *)p)[i] = __float2half_rn((float)v); break;
    case PF_IR_I64: ((i64 *)p)[i] = v; break;
    case PF_IR_I32: ((int *)p)[i] = (int)v; break;
    case PF_IR_U8: ((unsigned char *)p)[i] = (unsigned char)v; break;
    case PF_IR_I8: ((signed char *)p)[i] = (signed char)v; break;
    case PF_IR_BOOL: ((unsigned char *)p)[i] = v != 0; break;
    case PF_IR_F64: ((double *)p)[i] = (double)v; break;
    default: break;
    }
}

__device__ __forceinline__ bool is_float(int dt)
{
    return dt == PF_IR_F32 || dt == PF_IR_F16 || dt == PF_IR_F64;
}

__device__ __forceinline__ float sigmoidf_(float x) { return 1.0f / (1.0f + expf(-x)); }

__device__ __forceinline__ float act_f(int act, float x, float a, float b)
{
    switch (act) {
    case PF_IR_ACT_RELU: return x > 0.0f ? x : 0.0f;
    case PF_IR_ACT_CLIP: return fminf(fmaxf(x, a), b);
    case PF_IR_ACT_SIGMOID: return sigmoidf_(x);
    case PF_IR_ACT_TANH: return tanhf(x);
    case PF_IR_ACT_LEAKY_RELU: return x >= 0.0f ? x : a * x;
    case PF_IR_ACT_HARD_SIGMOID: return fmaxf(0.0f, fminf(1.0f, a * x + b));
    case PF_IR_ACT_HARD_SWISH: return x * fmaxf(0.0f, fminf(1.0f, x / 6.0f + 0.5f));
    default: return x;
    }
}

/* Blocks for a grid-stride loop over n items. */
static inline unsigned grid_for(long long n, int threads)
{
    long long b = (n + threads - 1) / threads;
    if (b < 1) b = 1;
    if (b > (1ll << 20)) b = 1ll << 20;
    return (unsigned)b;
}

} // namespace pfcu

#endif
