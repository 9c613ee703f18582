/* Resize (ONNX semantics, any rank): nearest with the four rounding rules,
 * linear on up to three axes (the axes whose size or scale changes), every
 * coordinate transformation mode of pf_ir_coord_mode. One thread per output
 * element; coordinates in f32 like the CPU kernel's float math. */
#include <math.h>

#include "cu_common.cuh"

using namespace pfcu;

namespace {

__device__ __forceinline__ float src_coord(int mode, i64 x, i64 in, i64 out, float scale)
{
    switch (mode) {
    case PF_IR_COORD_ALIGN_CORNERS:
        return out > 1 ? (float)x * (float)(in - 1) / (float)(out - 1) : 0.0f;
    case PF_IR_COORD_ASYMMETRIC: return (float)x / scale;
    case PF_IR_COORD_PYTORCH_HALF_PIXEL:
        return out > 1 ? ((float)x + 0.5f) / scale - 0.5f : 0.0f;
    case PF_IR_COORD_TF_HALF_PIXEL_FOR_NN: return ((float)x + 0.5f) / scale;
    default: return ((float)x + 0.5f) / scale - 0.5f;
    }
}

__device__ __forceinline__ i64 nearest_idx(int rule, float x, i64 in)
{
    float r;
    switch (rule) {
    case PF_IR_NEAREST_ROUND_PREFER_CEIL: r = floorf(x + 0.5f); break;
    case PF_IR_NEAREST_FLOOR: r = floorf(x); break;
    case PF_IR_NEAREST_CEIL: r = ceilf(x); break;
    default: r = ceilf(x - 0.5f); break; /* round half down */
    }
    i64 k = (i64)r;
    return k < 0 ? 0 : (k >= in ? in - 1 : k);
}

__global__ void resize_k(pf_cu_resize p, const void *in, void *out, int dt, i64 n)
{
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        i64 r = i, oo = 0, base = 0;
        int na = 0;
        i64 k0[3] = {0, 0, 0}, k1[3] = {0, 0, 0}, st[3] = {0, 0, 0};
        float w[3] = {0, 0, 0};
        for (int d = p.nd - 1; d >= 0; d--) {
            const i64 c = r % p.out_dims[d];
            r /= p.out_dims[d];
            oo += c * p.out_st[d];
            const i64 len = p.in_dims[d], olen = p.out_dims[d];
            if (len == olen && p.scale[d] == 1.0f) {
                base += c * p.in_st[d];
                continue;
            }
            const float x = src_coord(p.coord, c, len, olen, p.scale[d]);
            if (p.mode == PF_IR_RESIZE_NEAREST || na == 3) {
                base += nearest_idx(p.nearest, x, len) * p.in_st[d];
                continue;
            }
            float xc = x < 0.0f ? 0.0f : x;
            if (xc > (float)(len - 1)) xc = (float)(len - 1);
            i64 a = (i64)floorf(xc);
            if (a > len - 1) a = len - 1;
            k0[na] = a;
            k1[na] = a + 1 < len ? a + 1 : len - 1;
            w[na] = xc - (float)a;
            st[na] = p.in_st[d];
            na++;
        }
        float acc = 0.0f;
        for (int corner = 0; corner < (1 << na); corner++) {
            float wt = 1.0f;
            i64 off = base;
            for (int q = 0; q < na; q++) {
                const bool hi = (corner >> q) & 1;
                wt *= hi ? w[q] : 1.0f - w[q];
                off += (hi ? k1[q] : k0[q]) * st[q];
            }
            if (wt != 0.0f || na == 0) acc += wt * ldf(in, dt, off);
        }
        stf(out, dt, oo, acc);
    }
}

} // namespace

extern "C" int pf_cu_launch_resize(const pf_cu_resize *p, const void *in, void *out, int dt,
                                   void *stream)
{
    i64 n = 1;
    for (int d = 0; d < p->nd; d++) n *= p->out_dims[d];
    if (n == 0) return 0;
    resize_k<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(*p, in, out, dt, n);
    return (int)cudaGetLastError();
}
