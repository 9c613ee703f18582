/* Convs whose input and output are 1x1 spatial maps (squeeze-excite fc
 * convs, LRASPP's scale branch): y[b, k] = act(sum_c w[k, c] x[b, c] +
 * bias[k]). cuDNN's algorithms take ~40 us on these tiny products after
 * timing; a warp per output dot product takes a few. One warp reads one
 * weight row (coalesced) and one input vector; f32 accumulation. */
#include "cu_common.cuh"

using namespace pfcu;

namespace {

__device__ __forceinline__ float tof(float v) { return v; }
__device__ __forceinline__ float tof(__half v) { return __half2float(v); }
__device__ __forceinline__ void put(float *p, float v) { *p = v; }
__device__ __forceinline__ void put(__half *p, float v) { *p = __float2half_rn(v); }

#define FC_WARPS 4

template <typename T>
__global__ void fc_k(pf_cu_fc p, const T *__restrict__ x, const T *__restrict__ w,
                     const T *__restrict__ bias, T *__restrict__ y)
{
    const int lane = threadIdx.x & 31;
    const long long k = (long long)blockIdx.x * FC_WARPS + (threadIdx.x >> 5);
    const long long b = blockIdx.y;
    if (k >= p.cout) return; /* a whole warp leaves together: no partial shuffles */
    const T *wr = w + k * p.cin;
    const T *xr = x + b * p.x_sn;
    float acc = 0.0f;
    for (long long c = lane; c < p.cin; c += 32) acc += tof(wr[c]) * tof(xr[c * p.x_sc]);
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (lane == 0) {
        if (bias) acc += tof(bias[k]);
        put(y + b * p.y_sn + k * p.y_sc, act_f(p.act, acc, p.act_a, p.act_b));
    }
}

} // namespace

extern "C" int pf_cu_fc_ok(const pf_cu_fc *p)
{
    return p->n >= 1 && p->n <= 65535 && p->cin >= 1 && p->cout >= 1 &&
           p->cout / FC_WARPS < (1ll << 30) && p->x_sn >= 0 && p->x_sc >= 0 && p->y_sn >= 0 &&
           p->y_sc >= 0;
}

extern "C" int pf_cu_launch_fc(const pf_cu_fc *p, const void *x, const void *w, const void *bias,
                               void *y, int dt, void *stream)
{
    if (!pf_cu_fc_ok(p)) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    const dim3 grid((unsigned)((p->cout + FC_WARPS - 1) / FC_WARPS), (unsigned)p->n);
    if (dt == PF_IR_F16)
        fc_k<__half><<<grid, 32 * FC_WARPS, 0, s>>>(*p, (const __half *)x, (const __half *)w,
                                                     (const __half *)bias, (__half *)y);
    else if (dt == PF_IR_F32)
        fc_k<float><<<grid, 32 * FC_WARPS, 0, s>>>(*p, (const float *)x, (const float *)w,
                                                    (const float *)bias, (float *)y);
    else
        return (int)cudaErrorInvalidValue;
    return (int)cudaGetLastError();
}
