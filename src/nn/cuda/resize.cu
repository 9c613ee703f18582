/* Resize (ONNX semantics, any rank): nearest with the four rounding rules,
 * linear on up to three axes (the axes whose size or scale changes), every
 * coordinate transformation mode of pf_ir_coord_mode. One thread per output
 * element; coordinates in f32 (the CPU's rs_coord uses double), mapped with
 * the given scale and the resized length scale * in as ONNX does. */
#include <math.h>

#include "cu_common.cuh"

using namespace pfcu;

namespace {

/* rlen: the resized length scale * in (pf_cu_resize), which is not the
 * output length when a scale was given (in 4, scale 0.6: 2.4, 2 outputs). */
__device__ __forceinline__ float src_coord(int mode, i64 x, i64 in, float rlen, float scale)
{
    switch (mode) {
    case PF_IR_COORD_ALIGN_CORNERS:
        return rlen != 1.0f ? (float)x * (float)(in - 1) / (rlen - 1.0f) : 0.0f;
    case PF_IR_COORD_ASYMMETRIC: return (float)x / scale;
    case PF_IR_COORD_PYTORCH_HALF_PIXEL:
        return rlen > 1.0f ? ((float)x + 0.5f) / scale - 0.5f : 0.0f;
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
            const float x = src_coord(p.coord, c, len, p.rlen[d], p.scale[d]);
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

/* One spatial axis of the 4D fast path: source taps and the weight of the
 * upper one, with the generic kernel's float math (results match it). */
__device__ __forceinline__ void axis_taps(const pf_cu_resize &p, int d, int c, int &k0, int &k1,
                                          float &w)
{
    const i64 len = p.in_dims[d], olen = p.out_dims[d];
    w = 0.0f;
    if (len == olen && p.scale[d] == 1.0f) {
        k0 = k1 = c;
        return;
    }
    const float x = src_coord(p.coord, c, len, p.rlen[d], p.scale[d]);
    if (p.mode == PF_IR_RESIZE_NEAREST) {
        k0 = k1 = (int)nearest_idx(p.nearest, x, len);
        return;
    }
    float xc = x < 0.0f ? 0.0f : x;
    if (xc > (float)(len - 1)) xc = (float)(len - 1);
    int a = (int)floorf(xc);
    if (a > len - 1) a = (int)len - 1;
    k0 = a;
    k1 = a + 1 < len ? a + 1 : (int)len - 1;
    w = xc - (float)a;
}

/* 4D resize of H and W only (N and C kept), 32-bit index math, one thread
 * per output element walked in the output's storage order (channels
 * fastest for NHWC) so stores coalesce. The generic kernel's 64-bit
 * divisions made the final 512x512 upsample cost ~20x its bandwidth. */
template <typename T>
__global__ void resize_hw_k(pf_cu_resize p, const T *__restrict__ in, T *__restrict__ out, int n,
                            bool cl)
{
    const int C = (int)p.out_dims[1], OH = (int)p.out_dims[2], OW = (int)p.out_dims[3];
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int r = i, c, ox, oy;
        if (cl) {
            c = r % C; r /= C;
            ox = r % OW; r /= OW;
            oy = r % OH; r /= OH;
        } else {
            ox = r % OW; r /= OW;
            oy = r % OH; r /= OH;
            c = r % C; r /= C;
        }
        const int b = r;
        int y0, y1, x0, x1;
        float wy, wx;
        axis_taps(p, 2, oy, y0, y1, wy);
        axis_taps(p, 3, ox, x0, x1, wx);
        const int base = b * (int)p.in_st[0] + c * (int)p.in_st[1];
        const int sy = (int)p.in_st[2], sx = (int)p.in_st[3];
        float acc = 0.0f;
        /* Corner order and weight products as in resize_k (x is axis q = 0). */
        float wt = 1.0f - wx;
        wt *= 1.0f - wy;
        if (wt != 0.0f) acc += wt * (float)in[base + y0 * sy + x0 * sx];
        wt = wx;
        wt *= 1.0f - wy;
        if (wt != 0.0f) acc += wt * (float)in[base + y0 * sy + x1 * sx];
        wt = 1.0f - wx;
        wt *= wy;
        if (wt != 0.0f) acc += wt * (float)in[base + y1 * sy + x0 * sx];
        wt = wx;
        wt *= wy;
        if (wt != 0.0f) acc += wt * (float)in[base + y1 * sy + x1 * sx];
        out[b * (int)p.out_st[0] + c * (int)p.out_st[1] + oy * (int)p.out_st[2] +
            ox * (int)p.out_st[3]] = (T)acc;
    }
}

/* Row-major output: blocks along a row of W, grid.y = output row, grid.z =
 * image x channel, so the only division is for (image, channel) and the
 * vertical taps are per block row. */
template <typename T>
__global__ void resize_hw_rm_k(pf_cu_resize p, const T *__restrict__ in, T *__restrict__ out)
{
    const int ox = blockIdx.x * blockDim.x + threadIdx.x;
    if (ox >= (int)p.out_dims[3]) return;
    const int oy = blockIdx.y, C = (int)p.out_dims[1];
    const int c = blockIdx.z % C, b = blockIdx.z / C;
    int y0, y1, x0, x1;
    float wy, wx;
    axis_taps(p, 2, oy, y0, y1, wy);
    axis_taps(p, 3, ox, x0, x1, wx);
    const int base = b * (int)p.in_st[0] + c * (int)p.in_st[1];
    const int sy = (int)p.in_st[2], sx = (int)p.in_st[3];
    float acc = 0.0f;
    float wt = 1.0f - wx;
    wt *= 1.0f - wy;
    if (wt != 0.0f) acc += wt * (float)in[base + y0 * sy + x0 * sx];
    wt = wx;
    wt *= 1.0f - wy;
    if (wt != 0.0f) acc += wt * (float)in[base + y0 * sy + x1 * sx];
    wt = 1.0f - wx;
    wt *= wy;
    if (wt != 0.0f) acc += wt * (float)in[base + y1 * sy + x0 * sx];
    wt = wx;
    wt *= wy;
    if (wt != 0.0f) acc += wt * (float)in[base + y1 * sy + x1 * sx];
    out[b * (int)p.out_st[0] + c * (int)p.out_st[1] + oy * (int)p.out_st[2] +
        ox * (int)p.out_st[3]] = (T)acc;
}

/* resize_hw_rm_k for F16 with eight outputs of a row a thread and one
 * 16-byte store (OW % 8 == 0, aligned output rows): the per-thread setup
 * and the 2-byte stores, not bandwidth, bounded the final upsample of the
 * segmentation models (~270 GB/s). Same float math per element. */
__global__ void resize_hw_rm8_k(pf_cu_resize p, const __half *__restrict__ in,
                                __half *__restrict__ out)
{
    const int ox0 = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (ox0 >= (int)p.out_dims[3]) return;
    const int oy = blockIdx.y, C = (int)p.out_dims[1];
    const int c = blockIdx.z % C, b = blockIdx.z / C;
    int y0, y1;
    float wy;
    axis_taps(p, 2, oy, y0, y1, wy);
    const int base = b * (int)p.in_st[0] + c * (int)p.in_st[1];
    const int sy = (int)p.in_st[2], sx = (int)p.in_st[3];
    const __half *r0 = in + base + y0 * sy, *r1 = in + base + y1 * sy;
    uint4 v;
    __half *h = (__half *)&v;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        int x0, x1;
        float wx;
        axis_taps(p, 3, ox0 + j, x0, x1, wx);
        float acc = 0.0f;
        float wt = 1.0f - wx;
        wt *= 1.0f - wy;
        if (wt != 0.0f) acc += wt * __half2float(r0[x0 * sx]);
        wt = wx;
        wt *= 1.0f - wy;
        if (wt != 0.0f) acc += wt * __half2float(r0[x1 * sx]);
        wt = 1.0f - wx;
        wt *= wy;
        if (wt != 0.0f) acc += wt * __half2float(r1[x0 * sx]);
        wt = wx;
        wt *= wy;
        if (wt != 0.0f) acc += wt * __half2float(r1[x1 * sx]);
        h[j] = __float2half(acc);
    }
    *(uint4 *)(out + b * (int)p.out_st[0] + c * (int)p.out_st[1] + oy * (int)p.out_st[2] + ox0) =
        v;
}

bool hw_only(const pf_cu_resize *p, i64 n)
{
    if (p->nd != 4 || n >= (1ll << 31)) return false;
    for (int d = 0; d < 2; d++)
        if (p->in_dims[d] != p->out_dims[d] || p->scale[d] != 1.0f) return false;
    if (p->mode != PF_IR_RESIZE_NEAREST && p->mode != PF_IR_RESIZE_LINEAR) return false;
    i64 span_in = 0, span_out = 0;
    for (int d = 0; d < 4; d++) {
        if (p->in_st[d] < 0 || p->out_st[d] < 0) return false;
        span_in += p->in_st[d] * (p->in_dims[d] - 1);
        span_out += p->out_st[d] * (p->out_dims[d] - 1);
    }
    return span_in < (1ll << 31) && span_out < (1ll << 31);
}

} // namespace

extern "C" int pf_cu_launch_resize(const pf_cu_resize *p, const void *in, void *out, int dt,
                                   void *stream)
{
    i64 n = 1;
    for (int d = 0; d < p->nd; d++) n *= p->out_dims[d];
    if (n == 0) return 0;
    if ((dt == PF_IR_F16 || dt == PF_IR_F32) && hw_only(p, n)) {
        const bool cl = p->out_st[1] == 1 && p->out_dims[1] > 1;
        cudaStream_t s = (cudaStream_t)stream;
        const i64 planes = p->out_dims[0] * p->out_dims[1];
        if (!cl && planes <= 65535 && p->out_dims[2] <= 65535) {
            if (dt == PF_IR_F16 && p->out_st[3] == 1 && p->out_dims[3] % 8 == 0 &&
                p->out_st[2] % 8 == 0 && p->out_st[1] % 8 == 0 && p->out_st[0] % 8 == 0 &&
                ((uintptr_t)out & 15) == 0) {
                const i64 threads = p->out_dims[3] / 8;
                dim3 g8((unsigned)((threads + 63) / 64), (unsigned)p->out_dims[2],
                        (unsigned)planes);
                resize_hw_rm8_k<<<g8, 64, 0, s>>>(*p, (const __half *)in, (__half *)out);
                return (int)cudaGetLastError();
            }
            dim3 grid((unsigned)((p->out_dims[3] + 127) / 128), (unsigned)p->out_dims[2],
                      (unsigned)planes);
            if (dt == PF_IR_F16)
                resize_hw_rm_k<__half><<<grid, 128, 0, s>>>(*p, (const __half *)in, (__half *)out);
            else
                resize_hw_rm_k<float><<<grid, 128, 0, s>>>(*p, (const float *)in, (float *)out);
            return (int)cudaGetLastError();
        }
        if (dt == PF_IR_F16)
            resize_hw_k<__half><<<grid_for(n, 256), 256, 0, s>>>(*p, (const __half *)in,
                                                                 (__half *)out, (int)n, cl);
        else
            resize_hw_k<float><<<grid_for(n, 256), 256, 0, s>>>(*p, (const float *)in,
                                                                (float *)out, (int)n, cl);
        return (int)cudaGetLastError();
    }
    resize_k<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(*p, in, out, dt, n);
    return (int)cudaGetLastError();
}
