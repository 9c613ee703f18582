/* CUDA colour conversion: one launch per frame.
 *
 * Design
 * - One thread per 2x2 pixel block (the unit of NV12/I420 chroma): it reads
 *   the block's source pixels (a YUV source's chroma sample once), decodes
 *   them to 8-bit R, G, B and encodes them into the destination: four packed
 *   pixels, or four luma samples plus the block's chroma from the mean R, G,
 *   B of the pixels it has (edge blocks of odd sizes have 1 or 2).
 * - Lanes of a warp take consecutive blocks along x, so every load and store
 *   instruction of a warp touches one contiguous run of a row (64 pixels:
 *   e.g. 64 Y bytes, 192 RGB bytes), which the L1/L2 coalesce into whole
 *   sectors. Bytes are loaded singly through the read-only path: frames may
 *   start and stride at any byte, so wider vector loads would need alignment
 *   the API does not promise.
 * - The arithmetic is src/ops/convert.h's, compiled with the __f*_rn
 *   intrinsics (no FMA contraction), so the bytes equal the C reference's.
 * - Source and destination formats are template parameters (30 small
 *   kernels; the host picks one), so the per-pixel code has no format
 *   branches. Parameters travel by value: nothing allocated, nothing uploaded,
 *   safe to capture in a CUDA graph. */
#include <cuda_runtime.h>

extern "C" {
#include "../ops/convert.h"
#include "../ops/ops_impl.h"
#include "cuda_internal.h"
}

namespace {

constexpr int BX = 32, BY = 8;

struct px3 {
    int r, g, b;
};

__device__ __forceinline__ const uint8_t *at(const pf_cv_image &f, int plane, int x, int y, int bpp)
{
    return f.plane[plane] + (int64_t)y * f.stride[plane] + (int64_t)x * bpp;
}

/* R, G, B of a packed or gray source pixel. */
template <int F>
__device__ __forceinline__ px3 load_packed(const pf_cv_image &s, int x, int y)
{
    px3 o;
    if (F == PF_PIXFMT_GRAY8) {
        o.r = o.g = o.b = __ldg(at(s, 0, x, y, 1));
    } else {
        const uint8_t *q = at(s, 0, x, y, F == PF_PIXFMT_RGBA ? 4 : 3);
        int c0 = __ldg(q), c1 = __ldg(q + 1), c2 = __ldg(q + 2);
        o.r = F == PF_PIXFMT_BGR24 ? c2 : c0;
        o.g = c1;
        o.b = F == PF_PIXFMT_BGR24 ? c0 : c2;
    }
    return o;
}

template <int F>
__device__ __forceinline__ void store_packed(const pf_cv_image &d, int x, int y, px3 c)
{
    if (F == PF_PIXFMT_GRAY8) {
        *(uint8_t *)at(d, 0, x, y, 1) = pf_cv_luma(c.r, c.g, c.b);
        return;
    }
    uint8_t *q = (uint8_t *)at(d, 0, x, y, F == PF_PIXFMT_RGBA ? 4 : 3);
    q[0] = (uint8_t)(F == PF_PIXFMT_BGR24 ? c.b : c.r);
    q[1] = (uint8_t)c.g;
    q[2] = (uint8_t)(F == PF_PIXFMT_BGR24 ? c.r : c.b);
    if (F == PF_PIXFMT_RGBA) q[3] = 255;
}

/* The block's chroma sample of a YUV frame (pointers to U and V). */
template <int F>
__device__ __forceinline__ void chroma_ptr(const pf_cv_image &f, int bx, int by, uint8_t **u,
                                           uint8_t **v)
{
    if (F == PF_PIXFMT_NV12) {
        *u = (uint8_t *)at(f, 1, bx, by, 2);
        *v = *u + 1;
    } else {
        *u = (uint8_t *)at(f, 1, bx, by, 1);
        *v = (uint8_t *)at(f, 2, bx, by, 1);
    }
}

template <int SF, int DF>
__global__ void __launch_bounds__(BX * BY) cv_kernel(const pf_cv_params p)
{
    const int bx = blockIdx.x * BX + threadIdx.x, by = blockIdx.y * BY + threadIdx.y;
    const int x0 = 2 * bx, y0 = 2 * by;
    if (x0 >= p.width || y0 >= p.height) return;
    const int nx = x0 + 1 < p.width ? 2 : 1, ny = y0 + 1 < p.height ? 2 : 1;
    const bool syuv = SF == PF_PIXFMT_NV12 || SF == PF_PIXFMT_I420;
    const bool dyuv = DF == PF_PIXFMT_NV12 || DF == PF_PIXFMT_I420;

    if (syuv && dyuv) { /* NV12 <-> I420: move samples */
        for (int j = 0; j < ny; j++)
            for (int i = 0; i < nx; i++)
                *(uint8_t *)at(p.dst, 0, x0 + i, y0 + j, 1) = __ldg(at(p.src, 0, x0 + i, y0 + j, 1));
        uint8_t *su, *sv, *du, *dv;
        chroma_ptr<SF>(p.src, bx, by, &su, &sv);
        chroma_ptr<DF>(p.dst, bx, by, &du, &dv);
        *du = __ldg(su);
        *dv = __ldg(sv);
        return;
    }

    px3 c[2][2];
    if (syuv) {
        uint8_t *su, *sv;
        chroma_ptr<SF>(p.src, bx, by, &su, &sv);
        const int U = __ldg(su), V = __ldg(sv);
        for (int j = 0; j < ny; j++)
            for (int i = 0; i < nx; i++) {
                uint8_t r, g, b;
                pf_cv_yuv_to_rgb(p.k.dec, __ldg(at(p.src, 0, x0 + i, y0 + j, 1)), U, V, &r, &g, &b);
                c[j][i].r = r, c[j][i].g = g, c[j][i].b = b;
            }
    } else {
        for (int j = 0; j < ny; j++)
            for (int i = 0; i < nx; i++) c[j][i] = load_packed<SF>(p.src, x0 + i, y0 + j);
    }

    if (!dyuv) {
        for (int j = 0; j < ny; j++)
            for (int i = 0; i < nx; i++) store_packed<DF>(p.dst, x0 + i, y0 + j, c[j][i]);
        return;
    }
    int sr = 0, sg = 0, sb = 0;
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++) {
            *(uint8_t *)at(p.dst, 0, x0 + i, y0 + j, 1) =
                pf_cv_encode(p.k.enc[0], (float)c[j][i].r, (float)c[j][i].g, (float)c[j][i].b);
            sr += c[j][i].r, sg += c[j][i].g, sb += c[j][i].b;
        }
    uint8_t *du, *dv;
    chroma_ptr<DF>(p.dst, bx, by, &du, &dv);
    pf_cv_chroma(p.k.enc, sr, sg, sb, nx * ny, du, dv);
}

template <int SF, int DF>
cudaError_t launch2(const pf_cv_params *p, cudaStream_t s)
{
    dim3 block(BX, BY);
    const int bw = (p->width + 1) / 2, bh = (p->height + 1) / 2;
    dim3 grid((unsigned)((bw + BX - 1) / BX), (unsigned)((bh + BY - 1) / BY));
    cv_kernel<SF, DF><<<grid, block, 0, s>>>(*p);
    return cudaGetLastError();
}

template <int SF>
cudaError_t launch1(const pf_cv_params *p, cudaStream_t s)
{
    switch (p->dst.format) {
    case PF_PIXFMT_RGB24: return launch2<SF, PF_PIXFMT_RGB24>(p, s);
    case PF_PIXFMT_BGR24: return launch2<SF, PF_PIXFMT_BGR24>(p, s);
    case PF_PIXFMT_RGBA: return launch2<SF, PF_PIXFMT_RGBA>(p, s);
    case PF_PIXFMT_GRAY8: return launch2<SF, PF_PIXFMT_GRAY8>(p, s);
    case PF_PIXFMT_NV12: return launch2<SF, PF_PIXFMT_NV12>(p, s);
    default: return launch2<SF, PF_PIXFMT_I420>(p, s);
    }
}

} /* namespace */

extern "C" pf_status pf_cuda_convert(pf_ops *ops, const pf_cv_params *p)
{
    cudaStream_t s = (cudaStream_t)pf_stream_native(ops->stream);
    pf_status st = pf_cuda_use_stream_device(s);
    if (st != PF_OK) return st;
    cudaError_t err;
    switch (p->src.format) {
    case PF_PIXFMT_RGB24: err = launch1<PF_PIXFMT_RGB24>(p, s); break;
    case PF_PIXFMT_BGR24: err = launch1<PF_PIXFMT_BGR24>(p, s); break;
    case PF_PIXFMT_RGBA: err = launch1<PF_PIXFMT_RGBA>(p, s); break;
    case PF_PIXFMT_GRAY8: err = launch1<PF_PIXFMT_GRAY8>(p, s); break;
    case PF_PIXFMT_NV12: err = launch1<PF_PIXFMT_NV12>(p, s); break;
    default: err = launch1<PF_PIXFMT_I420>(p, s); break;
    }
    if (err != cudaSuccess)
        return pf_cuda_fail(err, "pf_ops_convert: kernel launch (%dx%d %s -> %s) on %s", p->width,
                            p->height, pf_pixfmt_name((pf_pixfmt)p->src.format),
                            pf_pixfmt_name((pf_pixfmt)p->dst.format), ops->dev->spec);
    return PF_OK;
}
