/* CUDA fused preprocess: one launch per chunk of up to PF_PP_MAX_FRAMES
 * frames (the whole batch for n <= 64).
 *
 * Design
 * - Grid (x tiles, y tiles, frame). A block is 32 x 8 threads and covers an
 *   output tile of 128 x 16 pixels: each thread computes PX = 4 pixels along
 *   x, 32 apart (x = tile_x + lane + 32 k), on PY = 2 rows, 8 apart. Source
 *   column taps are computed once per pixel column and reused for both rows;
 *   row taps once per row for all four pixels. Up to 4 frames per launch use
 *   2 x 1 pixels per thread (64 x 8 tiles) so one frame still fills the GPU.
 * - Why lanes take consecutive x rather than each thread a run of adjacent
 *   pixels: every load instruction of a warp then gathers taps of 32
 *   consecutive output pixels, which for a 1080p -> 512 downscale lie in
 *   about 360 bytes (3 cache lines) of a source row, instead of 1440 bytes
 *   (12 lines) when each lane owns 4 adjacent outputs. The gather costs L1
 *   wavefronts per line touched, and that, not DRAM, is what limits a byte
 *   gather at full bandwidth. Stores are equally coalesced: one warp store
 *   writes 32 consecutive halves (64 bytes) of one channel plane (NCHW), so
 *   half2 pairs would not save DRAM traffic, only store instructions, at the
 *   price of the wider gathers above.
 * - The source is read with __ldg (read-only path) one byte per channel and
 *   tap; YUV taps are converted from their own Y and covering chroma sample
 *   before weighting, exactly as the C reference does. Everything stays in
 *   registers: convert, interpolate, normalise (one FMA), write 3 channels.
 * - Tap indices and weights come from src/ops/preprocess.h (exact integer
 *   arithmetic), in 32-bit arithmetic when the products fit (the common case)
 *   and 64-bit otherwise; both give identical results. So the CUDA kernel
 *   and the CPU path sample the same pixels with the same float weights.
 * - Descriptors travel as one kernel parameter (__grid_constant__, indexed by
 *   blockIdx.z): no upload, no scratch, nothing allocated per call, and the
 *   launch is capturable in a CUDA graph. Three parameter sizes (4, 32 and 64
 *   frames) keep small batches from paying for a 5.8 KB parameter block.
 * - Format and interpolation are template parameters (the switch runs once
 *   per block: a block never spans two frames); layout and dtype are uniform
 *   runtime branches. */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

extern "C" {
#include "../ops/ops_impl.h"
#include "../ops/preprocess.h"
#include "cuda_internal.h"
}

namespace {

constexpr int BX = 32, BY = 8;
/* Pixels per thread along x (32 apart) and rows per thread (8 apart): 4 x 2
 * for batches, 2 x 1 for up to 4 frames, where a 512 x 512 frame would
 * otherwise be 128 blocks for 132 SMs (one block, 8 warps, per SM). */
__host__ __device__ constexpr int px_for(int cap) { return cap <= 4 ? 2 : 4; }
__host__ __device__ constexpr int py_for(int cap) { return cap <= 4 ? 1 : 2; }

template <int CAP>
struct pp_args {
    pf_pp_params p;
    pf_pp_frame f[CAP];
};

__device__ __forceinline__ int clampi(int v, int hi) { return v < 0 ? 0 : (v > hi ? hi : v); }

/* Bilinear taps of destination index i (c content pixels over r source
 * pixels): the same integers as pf_pp_taps_bilinear, in 32-bit arithmetic
 * when (2i + 1) r fits (checked per frame and axis by the caller). */
__device__ __forceinline__ void taps_bilinear(int i, int c, int r, bool fits32, int &k0, int &k1,
                                              float &fx)
{
    if (fits32) {
        int num = (2 * i + 1) * r - c, den = 2 * c;
        int q = num >= 0 ? num / den : -((-num + den - 1) / den);
        int rem = num - q * den;
        k0 = clampi(q, r - 1);
        k1 = clampi(q + 1, r - 1);
        fx = (float)rem / (float)den;
    } else {
        pf_pp_taps_bilinear(i, c, r, &k0, &k1, &fx);
    }
}

__device__ __forceinline__ int taps_nearest(int i, int c, int r, bool fits32)
{
    if (fits32) {
        int k = ((2 * i + 1) * r) / (2 * c);
        return k > r - 1 ? r - 1 : k;
    }
    return pf_pp_taps_nearest(i, c, r);
}

/* One axis of one output pixel: nearest (a), bilinear (a, b, w = weight of
 * b) or box (first source index a, b taps, i for the weights). */
struct axis {
    int a, b, i;
    float w;
};

template <int INTERP>
__device__ __forceinline__ axis make_axis(int i, int c, int r, bool fits32, bool box)
{
    axis ax;
    ax.i = i;
    ax.w = 0.0f;
    ax.b = 0;
    if (INTERP == PF_INTERP_NEAREST) {
        ax.a = taps_nearest(i, c, r, fits32);
    } else if (INTERP == PF_INTERP_AREA && box) {
        ax.b = pf_pp_area_first(i, c, r, &ax.a);
    } else {
        taps_bilinear(i, c, r, fits32, ax.a, ax.b, ax.w);
    }
    return ax;
}

struct rgb {
    float r, g, b;
};

__device__ __forceinline__ float clamp255(float v) { return fminf(fmaxf(v, 0.0f), 255.0f); }

/* R, G, B of source pixel (X, Y) in frame coordinates. */
template <int FMT>
__device__ __forceinline__ rgb fetch(const pf_pp_frame &f, const float *k, int X, int Y)
{
    rgb o;
    if (FMT == PF_PIXFMT_RGB24 || FMT == PF_PIXFMT_BGR24 || FMT == PF_PIXFMT_RGBA) {
        const int bpp = FMT == PF_PIXFMT_RGBA ? 4 : 3;
        const uint8_t *p = f.plane[0] + (int64_t)Y * f.stride[0] + (int64_t)X * bpp;
        float c0 = __ldg(p), c1 = __ldg(p + 1), c2 = __ldg(p + 2);
        o.r = FMT == PF_PIXFMT_BGR24 ? c2 : c0;
        o.g = c1;
        o.b = FMT == PF_PIXFMT_BGR24 ? c0 : c2;
        return o;
    }
    float y = __ldg(f.plane[0] + (int64_t)Y * f.stride[0] + X), u, v;
    if (FMT == PF_PIXFMT_NV12) {
        const uint8_t *uv = f.plane[1] + (int64_t)(Y >> 1) * f.stride[1] + 2 * (X >> 1);
        u = __ldg(uv);
        v = __ldg(uv + 1);
    } else {
        u = __ldg(f.plane[1] + (int64_t)(Y >> 1) * f.stride[1] + (X >> 1));
        v = __ldg(f.plane[2] + (int64_t)(Y >> 1) * f.stride[2] + (X >> 1));
    }
    float yy = (y - k[0]) * k[1], cu = u - 128.0f, cv = v - 128.0f;
    o.r = clamp255(yy + k[2] * cv);
    o.g = clamp255(yy - k[3] * cu - k[4] * cv);
    o.b = clamp255(yy + k[5] * cu);
    return o;
}

/* Horizontal pass over one source row Y: sum_x wx * pixel. */
template <int INTERP, int FMT>
__device__ __forceinline__ rgb hpass(const pf_pp_frame &f, const float *k, const axis &ax, bool box,
                                     int c, int r, int Y)
{
    const int X0 = f.roi_x;
    if (INTERP == PF_INTERP_NEAREST) return fetch<FMT>(f, k, X0 + ax.a, Y);
    if (INTERP == PF_INTERP_AREA && box) {
        rgb s = {0.0f, 0.0f, 0.0f};
        for (int t = 0; t < ax.b; t++) {
            float w = pf_pp_area_weight(ax.i, c, r, ax.a + t);
            rgb q = fetch<FMT>(f, k, X0 + ax.a + t, Y);
            s.r += w * q.r;
            s.g += w * q.g;
            s.b += w * q.b;
        }
        return s;
    }
    rgb q0 = fetch<FMT>(f, k, X0 + ax.a, Y), q1 = fetch<FMT>(f, k, X0 + ax.b, Y);
    float w0 = 1.0f - ax.w, w1 = ax.w;
    rgb s = {w0 * q0.r + w1 * q1.r, w0 * q0.g + w1 * q1.g, w0 * q0.b + w1 * q1.b};
    return s;
}

/* The interpolated RGB (0..255) of content pixel (ax, ay). */
template <int INTERP, int FMT>
__device__ __forceinline__ rgb sample(const pf_pp_frame &f, const float *k, const axis &ax,
                                      const axis &ay, bool boxx, bool boxy)
{
    const int cw = f.content_w, rw = f.roi_w;
    if (INTERP == PF_INTERP_NEAREST) return hpass<INTERP, FMT>(f, k, ax, boxx, cw, rw, f.roi_y + ay.a);
    if (INTERP == PF_INTERP_AREA && boxy) {
        rgb s = {0.0f, 0.0f, 0.0f};
        for (int t = 0; t < ay.b; t++) {
            float w = pf_pp_area_weight(ay.i, f.content_h, f.roi_h, ay.a + t);
            rgb h = hpass<INTERP, FMT>(f, k, ax, boxx, cw, rw, f.roi_y + ay.a + t);
            s.r += w * h.r;
            s.g += w * h.g;
            s.b += w * h.b;
        }
        return s;
    }
    rgb h0 = hpass<INTERP, FMT>(f, k, ax, boxx, cw, rw, f.roi_y + ay.a);
    rgb h1 = hpass<INTERP, FMT>(f, k, ax, boxx, cw, rw, f.roi_y + ay.b);
    float w0 = 1.0f - ay.w, w1 = ay.w;
    rgb s = {w0 * h0.r + w1 * h1.r, w0 * h0.g + w1 * h1.g, w0 * h0.b + w1 * h1.b};
    return s;
}

__device__ __forceinline__ void store3(const pf_pp_params &p, int n, int x, int y, float v0,
                                       float v1, float v2)
{
    const size_t W = (size_t)p.width, H = (size_t)p.height;
    if (p.nchw) {
        const size_t plane = H * W;
        const size_t i = (size_t)n * 3 * plane + (size_t)y * W + (size_t)x;
        if (p.f16) {
            __half *o = (__half *)p.dst + i;
            o[0] = __float2half_rn(v0);
            o[plane] = __float2half_rn(v1);
            o[2 * plane] = __float2half_rn(v2);
        } else {
            float *o = (float *)p.dst + i;
            o[0] = v0;
            o[plane] = v1;
            o[2 * plane] = v2;
        }
    } else {
        const size_t i = (((size_t)n * H + (size_t)y) * W + (size_t)x) * 3;
        if (p.f16) {
            __half *o = (__half *)p.dst + i;
            o[0] = __float2half_rn(v0);
            o[1] = __float2half_rn(v1);
            o[2] = __float2half_rn(v2);
        } else {
            float *o = (float *)p.dst + i;
            o[0] = v0;
            o[1] = v1;
            o[2] = v2;
        }
    }
}

template <int INTERP, int FMT, int PX, int PY>
__device__ __forceinline__ void pp_frame(const pf_pp_params &p, const pf_pp_frame &f, int n)
{
    constexpr int TILE_W = BX * PX, TILE_H = BY * PY;
    const int W = p.width, H = p.height;
    const int cw = f.content_w, ch = f.content_h, pl = f.pad_left, pt = f.pad_top;
    const int rw = f.roi_w, rh = f.roi_h;
    /* (2i + 1) r < 2 c r: 32-bit taps when that fits. */
    const bool fx32 = 2ll * cw * rw < 2147483647ll, fy32 = 2ll * ch * rh < 2147483647ll;
    const bool boxx = INTERP == PF_INTERP_AREA && rw >= cw;
    const bool boxy = INTERP == PF_INTERP_AREA && rh >= ch;
    const float k[6] = {p.yuv[0], p.yuv[1], p.yuv[2], p.yuv[3], p.yuv[4], p.yuv[5]};
    /* Output channel c = source channel (R, G, B)[bgr ? 2 - c : c]. */
    const bool bgr = p.bgr != 0;
    const int x0 = blockIdx.x * TILE_W + threadIdx.x;
    const int y0 = blockIdx.y * TILE_H + threadIdx.y;

    axis ax[PX];
    bool xin[PX];
#pragma unroll
    for (int q = 0; q < PX; q++) {
        const int i = x0 + BX * q - pl;
        xin[q] = i >= 0 && i < cw;
        ax[q] = make_axis<INTERP>(xin[q] ? i : 0, cw, rw, fx32, boxx);
    }
#pragma unroll
    for (int ry = 0; ry < PY; ry++) {
        const int y = y0 + BY * ry;
        if (y >= H) break;
        const int j = y - pt;
        const bool yin = j >= 0 && j < ch;
        const axis ay = make_axis<INTERP>(yin ? j : 0, ch, rh, fy32, boxy);
#pragma unroll
        for (int q = 0; q < PX; q++) {
            const int x = x0 + BX * q;
            if (x >= W) break;
            float v0 = p.pad_out[0], v1 = p.pad_out[1], v2 = p.pad_out[2];
            if (yin && xin[q]) {
                rgb s = sample<INTERP, FMT>(f, k, ax[q], ay, boxx, boxy);
                const float a = bgr ? s.b : s.r, c = bgr ? s.r : s.b;
                v0 = fmaf(a, p.scale[0], p.bias[0]);
                v1 = fmaf(s.g, p.scale[1], p.bias[1]);
                v2 = fmaf(c, p.scale[2], p.bias[2]);
            }
            store3(p, n, x, y, v0, v1, v2);
        }
    }
}

template <int CAP, int INTERP>
__global__ void __launch_bounds__(BX * BY) pp_kernel(const __grid_constant__ pp_args<CAP> args)
{
    const int n = blockIdx.z;
    const pf_pp_frame &f = args.f[n];
    constexpr int PX = px_for(CAP), PY = py_for(CAP);
    switch (f.format) {
    case PF_PIXFMT_RGB24: pp_frame<INTERP, PF_PIXFMT_RGB24, PX, PY>(args.p, f, n); break;
    case PF_PIXFMT_BGR24: pp_frame<INTERP, PF_PIXFMT_BGR24, PX, PY>(args.p, f, n); break;
    case PF_PIXFMT_RGBA: pp_frame<INTERP, PF_PIXFMT_RGBA, PX, PY>(args.p, f, n); break;
    case PF_PIXFMT_NV12: pp_frame<INTERP, PF_PIXFMT_NV12, PX, PY>(args.p, f, n); break;
    case PF_PIXFMT_I420: pp_frame<INTERP, PF_PIXFMT_I420, PX, PY>(args.p, f, n); break;
    default: break; /* validated by the wrapper */
    }
}

template <int CAP>
cudaError_t launch(const pf_pp_params *p, const pf_pp_frame *frames, cudaStream_t s)
{
    pp_args<CAP> a;
    a.p = *p;
    for (int i = 0; i < p->n; i++) a.f[i] = frames[i];
    for (int i = p->n; i < CAP; i++) a.f[i] = frames[0]; /* never read; defined bytes */
    constexpr int TILE_W = BX * px_for(CAP), TILE_H = BY * py_for(CAP);
    dim3 block(BX, BY);
    dim3 grid((unsigned)((p->width + TILE_W - 1) / TILE_W),
              (unsigned)((p->height + TILE_H - 1) / TILE_H), (unsigned)p->n);
    switch (p->interp) {
    case PF_INTERP_NEAREST: pp_kernel<CAP, PF_INTERP_NEAREST><<<grid, block, 0, s>>>(a); break;
    case PF_INTERP_AREA: pp_kernel<CAP, PF_INTERP_AREA><<<grid, block, 0, s>>>(a); break;
    default: pp_kernel<CAP, PF_INTERP_BILINEAR><<<grid, block, 0, s>>>(a); break;
    }
    return cudaGetLastError();
}

} /* namespace */

extern "C" pf_status pf_cuda_preprocess(pf_ops *ops, const pf_pp_params *p,
                                        const pf_pp_frame *frames)
{
    cudaStream_t s = (cudaStream_t)pf_stream_native(ops->stream);
    pf_status st = pf_cuda_use_stream_device(s);
    if (st != PF_OK) return st;
    cudaError_t err;
    if (p->n <= 4) err = launch<4>(p, frames, s);
    else if (p->n <= 32) err = launch<32>(p, frames, s);
    else err = launch<PF_PP_MAX_FRAMES>(p, frames, s);
    if (err != cudaSuccess)
        return pf_cuda_fail(err, "pf_ops_preprocess: kernel launch (%d frames -> %dx%d %s %s) on %s",
                            p->n, p->width, p->height, p->nchw ? "nchw" : "nhwc",
                            p->f16 ? "f16" : "f32", ops->dev->spec);
    return PF_OK;
}
