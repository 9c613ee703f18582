/* BatchNormalization (inference) when the graph passes could not fold it
 * into a convolution: per-channel affine on dim 1, then the fused act. */
#include "cu_common.cuh"

using namespace pfcu;

namespace {

__global__ void bn_k(pf_cu_bn p, const void *in, void *out, int dt, i64 n)
{
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        i64 r = i, oi = 0, oo = 0, ch = 0;
        for (int d = p.nd - 1; d >= 0; d--) {
            const i64 c = r % p.dims[d];
            r /= p.dims[d];
            oi += c * p.in_st[d];
            oo += c * p.out_st[d];
            if (d == 1) ch = c;
        }
        const float x = ldf(in, dt, oi);
        const float y = (x - ldf(p.mean, p.dt_p, ch)) * rsqrtf(ldf(p.var, p.dt_p, ch) + p.eps) *
                            ldf(p.scale, p.dt_p, ch) + ldf(p.bias, p.dt_p, ch);
        stf(out, dt, oo, act_f(p.act, y, p.act_a, p.act_b));
    }
}

} // namespace

extern "C" int pf_cu_launch_bn(const pf_cu_bn *p, const void *in, void *out, int dt, void *stream)
{
    i64 n = 1;
    for (int d = 0; d < p->nd; d++) n *= p->dims[d];
    if (n == 0) return 0;
    bn_k<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(*p, in, out, dt, n);
    return (int)cudaGetLastError();
}
