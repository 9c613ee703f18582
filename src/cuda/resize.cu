/* CUDA resize: one launch per plane geometry (a packed frame: one; NV12: Y
 * and UV; I420: three; a mask tensor: one for all its planes).
 *
 * Design
 * - One thread per destination pixel (all its channels), lanes along x, so a
 *   warp's stores are one contiguous run of a row and its tap loads fall in a
 *   short stretch of one or two source rows (a 1080p -> 512 downscale: about
 *   120 source pixels per warp and row), served by L1 through the read-only
 *   path. Planes of a mask are blockIdx.z (looping when there are more than
 *   the grid allows).
 * - Taps and weights come from the helpers of src/ops/resize.h (exact integer
 *   arithmetic, one correctly rounded division), computed per pixel in
 *   registers, in 32-bit integers where the products fit (every realistic
 *   size; 64-bit division is slow on the GPU) and resize.h's 64-bit
 *   versions otherwise, with identical results: no tables, nothing uploaded
 *   or allocated, capturable in a CUDA graph. The sums run in resize.h's order through the __f*_rn
 *   intrinsics (no FMA contraction), so u8 and f32 results equal the C
 *   reference's bit for bit.
 * - Channel count, sample type and interpolation are template parameters;
 *   the per-axis choice between bilinear and box (area shrinks one axis and
 *   grows the other) is a runtime flag, uniform over the grid. */
#include <cuda_runtime.h>

extern "C" {
#include "../ops/ops_impl.h"
#include "../ops/resize.h"
#include "cuda_internal.h"
}

namespace {

constexpr int BX = 32, BY = 8;

/* The taps of one destination index along one axis. */
struct axis {
    int box;      /* 1: box taps k0 .. k0 + n - 1; 0: bilinear k0, k1 */
    int i, c, r;  /* destination index, destination and source length */
    int k0, k1, n;
    float w0, w1;
    bool fits32;  /* every product below fits in 32 bits */
};

/* resize.h's tap arithmetic in 32-bit integers, for axes where
 * 2 (c + 1) (r + 1) < 2^31 (the common case; 64-bit division is slow on the
 * GPU). Exact integer arithmetic either way, so the results are identical. */
__device__ __forceinline__ void bilinear32(int i, int c, int r, int &k0, int &k1, float &fx)
{
    const int num = (2 * i + 1) * r - c, den = 2 * c;
    const int q = num >= 0 ? num / den : -((-num + den - 1) / den);
    const int rem = num - q * den;
    k0 = q < 0 ? 0 : (q > r - 1 ? r - 1 : q);
    k1 = q + 1 < 0 ? 0 : (q + 1 > r - 1 ? r - 1 : q + 1);
    fx = __fdiv_rn((float)rem, (float)den);
}

__device__ __forceinline__ int nearest32(int i, int c, int r)
{
    const int k = ((2 * i + 1) * r) / (2 * c);
    return k > r - 1 ? r - 1 : k;
}

__device__ __forceinline__ float box_weight(const axis &a, int k)
{
    if (!a.fits32) return pf_rs_box_weight(a.i, a.c, a.r, k);
    const int lo = a.i * a.r, hi = lo + a.r, s = k * a.c, e = s + a.c;
    return __fdiv_rn((float)((hi < e ? hi : e) - (lo > s ? lo : s)), (float)a.r);
}

__device__ __forceinline__ axis make_axis(int i, int c, int r, int mode, bool fits32)
{
    axis a;
    a.i = i, a.c = c, a.r = r;
    a.fits32 = fits32;
    a.box = mode == PF_RS_BOX;
    a.k1 = 0;
    a.w0 = a.w1 = 0.0f;
    if (a.box) {
        if (fits32) {
            const int lo = i * r;
            a.k0 = lo / c;
            a.n = (lo + r + c - 1) / c - a.k0;
        } else {
            a.n = pf_rs_box_first(i, c, r, &a.k0);
        }
    } else {
        float fx;
        if (fits32) bilinear32(i, c, r, a.k0, a.k1, fx);
        else pf_rs_bilinear(i, c, r, &a.k0, &a.k1, &fx);
        a.w0 = __fsub_rn(1.0f, fx);
        a.w1 = fx;
        a.n = 2;
    }
    return a;
}

__device__ __forceinline__ void tap(const axis &a, int t, int &k, float &w)
{
    if (a.box) {
        k = a.k0 + t;
        w = box_weight(a, k);
    } else {
        k = t ? a.k1 : a.k0;
        w = t ? a.w1 : a.w0;
    }
}

template <int C, bool F32>
__device__ __forceinline__ float load(const uint8_t *row, int x, int c)
{
    if (F32) return __ldg((const float *)row + x);
    return (float)__ldg(row + (int64_t)x * C + c);
}

template <int C, bool F32, bool NEAREST>
__global__ void __launch_bounds__(BX * BY)
    rs_kernel(const pf_rs_plane p, int xmode, int ymode, bool x32, bool y32)
{
    const int x = blockIdx.x * BX + threadIdx.x, y = blockIdx.y * BY + threadIdx.y;
    if (x >= p.dw || y >= p.dh) return;
    const int esize = F32 ? 4 : C;
    for (int n = blockIdx.z; n < p.count; n += gridDim.z) {
        const uint8_t *src = (const uint8_t *)p.src + (int64_t)n * p.src_plane;
        uint8_t *drow = (uint8_t *)p.dst + (int64_t)n * p.dst_plane + (int64_t)y * p.dst_stride;
        if (NEAREST) {
            const int kx = x32 ? nearest32(x, p.dw, p.sw) : pf_rs_nearest(x, p.dw, p.sw);
            const int ky = y32 ? nearest32(y, p.dh, p.sh) : pf_rs_nearest(y, p.dh, p.sh);
            const uint8_t *s = src + (int64_t)ky * p.src_stride + (int64_t)kx * esize;
#pragma unroll
            for (int b = 0; b < esize; b++) drow[(int64_t)x * esize + b] = __ldg(s + b);
            continue;
        }
        const axis ax = make_axis(x, p.dw, p.sw, xmode, x32);
        const axis ay = make_axis(y, p.dh, p.sh, ymode, y32);
        float v[C];
        for (int t = 0; t < ay.n; t++) {
            int ky, kx;
            float wy, wx;
            tap(ay, t, ky, wy);
            const uint8_t *row = src + (int64_t)ky * p.src_stride;
            float h[C];
            for (int s = 0; s < ax.n; s++) {
                tap(ax, s, kx, wx);
#pragma unroll
                for (int c = 0; c < C; c++) {
                    const float prod = __fmul_rn(wx, load<C, F32>(row, kx, c));
                    h[c] = s == 0 ? prod : __fadd_rn(h[c], prod);
                }
            }
#pragma unroll
            for (int c = 0; c < C; c++) {
                const float prod = __fmul_rn(wy, h[c]);
                v[c] = t == 0 ? prod : __fadd_rn(v[c], prod);
            }
        }
        if (F32) {
            ((float *)drow)[x] = v[0];
        } else {
#pragma unroll
            for (int c = 0; c < C; c++) drow[(int64_t)x * C + c] = pf_cv_round(v[c]);
        }
    }
}

template <int C, bool F32>
cudaError_t launch(const pf_rs_plane *p, cudaStream_t s)
{
    dim3 block(BX, BY);
    dim3 grid((unsigned)((p->dw + BX - 1) / BX), (unsigned)((p->dh + BY - 1) / BY),
              (unsigned)(p->count < 65535 ? p->count : 65535));
    const int xm = pf_rs_mode(p->interp, p->dw, p->sw), ym = pf_rs_mode(p->interp, p->dh, p->sh);
    const bool x32 = 2ll * (p->dw + 1) * (p->sw + 1) < 2147483647ll;
    const bool y32 = 2ll * (p->dh + 1) * (p->sh + 1) < 2147483647ll;
    if (p->interp == PF_INTERP_NEAREST)
        rs_kernel<C, F32, true><<<grid, block, 0, s>>>(*p, xm, ym, x32, y32);
    else
        rs_kernel<C, F32, false><<<grid, block, 0, s>>>(*p, xm, ym, x32, y32);
    return cudaGetLastError();
}

} /* namespace */

extern "C" pf_status pf_cuda_resize(pf_ops *ops, const pf_rs_plane *p)
{
    cudaStream_t s = (cudaStream_t)pf_stream_native(ops->stream);
    pf_status st = pf_cuda_use_stream_device(s);
    if (st != PF_OK) return st;
    cudaError_t err;
    if (p->f32) err = launch<1, true>(p, s);
    else if (p->channels == 1) err = launch<1, false>(p, s);
    else if (p->channels == 2) err = launch<2, false>(p, s);
    else if (p->channels == 3) err = launch<3, false>(p, s);
    else err = launch<4, false>(p, s);
    if (err != cudaSuccess)
        return pf_cuda_fail(err, "%s: kernel launch (%dx%d -> %dx%d, %d channel(s)%s, %d plane(s)) "
                            "on %s",
                            p->f32 ? "pf_ops_resize_mask" : "pf_ops_resize", p->sw, p->sh, p->dw,
                            p->dh, p->channels, p->f32 ? " f32" : "", p->count, ops->dev->spec);
    return PF_OK;
}
