/* CUDA kernel of the 360° reprojection: all views of one source in one
 * launch, coordinates computed in the kernel (no map in memory).
 *
 * Parameters travel by value: the per-view constants (pf_rp_view from the
 * wrapper, the same bits the C reference uses), each view's destination
 * pointer and stride, 56 bytes a view, 3.6 KB for 64 views, under the
 * classic 4 KB kernel-parameter limit, so nothing is uploaded per call and
 * the launch is capturable in a CUDA graph. __grid_constant__ lets a block
 * index its view's entry without a copy to local memory.
 *
 * Grid: x over groups of RP_PX pixels, y over rows, z over views; a block is
 * 32 x 8 threads, a warp covers 128 consecutive pixels of one row. Blocks
 * past a smaller view's size exit at once. Each thread maps and samples
 * RP_PX = 4 pixels with reproject_math.h (every operation an __f*_rn
 * intrinsic: no FMA contraction, so the bytes equal the C reference's) and
 * writes them as 32-bit words when the row allows (12 bytes of RGB24 = 3
 * words), bytes otherwise. The source is read through the read-only cache
 * (__ldg): neighbouring threads read neighbouring source pixels. */
#include <cuda_runtime.h>

#include <stddef.h>
#include <stdint.h>

extern "C" {
#include "../ops/reproject.h"
#include "cuda_internal.h"
}

#define RP_BX 32
#define RP_BY 8
#define RP_PX 4

struct rp_kview {
    uint8_t *dst;
    pf_rp_view g;
    unsigned stride;
};

struct rp_kparams {
    const uint8_t *src;
    unsigned src_stride;
    int src_w, src_h;
    int n;
    rp_kview v[PF_RP_MAX_VIEWS];
};

static_assert(sizeof(rp_kparams) <= 4096, "reprojection kernel parameters exceed 4 KB");

template <int C, bool BIL>
__global__ void __launch_bounds__(RP_BX *RP_BY)
    rp_kernel(const __grid_constant__ rp_kparams p)
{
    const rp_kview &kv = p.v[blockIdx.z];
    const int j = (int)(blockIdx.y * RP_BY + threadIdx.y);
    const int i0 = (int)(blockIdx.x * RP_BX + threadIdx.x) * RP_PX;
    const pf_rp_view g = kv.g;
    if (j >= g.height || i0 >= g.width) return;

    const int W = p.src_w, H = p.src_h;
    const pf_rp_row row = pf_rp_row_base(&g, j);
    uint8_t px[RP_PX * C];
#pragma unroll
    for (int k = 0; k < RP_PX; k++) {
        /* Pixels past the row's end are computed too (their taps are valid
         * source pixels) and never stored: no divergence in the loop. */
        float fx, fy;
        pf_rp_map_row(&g, row, i0 + k, W, H, &fx, &fy);
        if (BIL) {
            const pf_rp_taps t = pf_rp_bilinear(fx, fy, W, H);
            const uint8_t *r0 = p.src + (size_t)t.y0 * p.src_stride;
            const uint8_t *r1 = p.src + (size_t)t.y1 * p.src_stride;
            const int o0 = t.x0 * C, o1 = t.x1 * C;
#pragma unroll
            for (int c = 0; c < C; c++)
                px[k * C + c] = pf_rp_blend(__ldg(r0 + o0 + c), __ldg(r0 + o1 + c),
                                            __ldg(r1 + o0 + c), __ldg(r1 + o1 + c), t.ax, t.ay);
        } else {
            int x, y;
            pf_rp_nearest(fx, fy, W, H, &x, &y);
            const uint8_t *s = p.src + (size_t)y * p.src_stride + (size_t)x * C;
#pragma unroll
            for (int c = 0; c < C; c++) px[k * C + c] = __ldg(s + c);
        }
    }

    uint8_t *out = kv.dst + (size_t)j * kv.stride + (size_t)i0 * C;
    const int cnt = g.width - i0 < RP_PX ? g.width - i0 : RP_PX;
    if (cnt == RP_PX && ((uintptr_t)out & 3) == 0) {
        /* RP_PX * C bytes = C words, little-endian like the byte order. */
        uint32_t w[C];
#pragma unroll
        for (int q = 0; q < C; q++)
            w[q] = (uint32_t)px[4 * q] | ((uint32_t)px[4 * q + 1] << 8) |
                   ((uint32_t)px[4 * q + 2] << 16) | ((uint32_t)px[4 * q + 3] << 24);
        bool done = false;
        if constexpr (C == 4) {
            if (((uintptr_t)out & 15) == 0) {
                *(uint4 *)out = make_uint4(w[0], w[1], w[2], w[3]);
                done = true;
            }
        }
        if (!done) {
#pragma unroll
            for (int q = 0; q < C; q++) ((uint32_t *)out)[q] = w[q];
        }
    } else {
        /* Unrolled with constant indices so px stays in registers. */
#pragma unroll
        for (int k = 0; k < RP_PX; k++)
            if (k < cnt) {
#pragma unroll
                for (int c = 0; c < C; c++) out[k * C + c] = px[k * C + c];
            }
    }
}

template <int C>
static void launch(bool bil, dim3 grid, dim3 block, cudaStream_t s, const rp_kparams &p)
{
    if (bil) rp_kernel<C, true><<<grid, block, 0, s>>>(p);
    else rp_kernel<C, false><<<grid, block, 0, s>>>(p);
}

extern "C" pf_status pf_cuda_equirect_to_views(pf_ops *ops, const pf_rp_job *job)
{
    rp_kparams p;
    p.src = job->src;
    p.src_stride = (unsigned)job->src_stride; /* the wrapper checked <= INT32_MAX */
    p.src_w = job->src_w;
    p.src_h = job->src_h;
    p.n = job->n;
    int maxw = 1, maxh = 1;
    for (int v = 0; v < job->n; v++) {
        p.v[v].dst = job->dst[v];
        p.v[v].g = job->views[v];
        p.v[v].stride = (unsigned)job->dst_stride[v];
        if (job->views[v].width > maxw) maxw = job->views[v].width;
        if (job->views[v].height > maxh) maxh = job->views[v].height;
    }
    const int span = RP_BX * RP_PX;
    dim3 block(RP_BX, RP_BY, 1);
    dim3 grid((unsigned)((maxw + span - 1) / span), (unsigned)((maxh + RP_BY - 1) / RP_BY),
              (unsigned)job->n);

    pf_status st = pf_cuda_use_device(ops->dev);
    if (st != PF_OK) return st;
    cudaStream_t s = (cudaStream_t)pf_stream_native(ops->stream);
    const bool bil = job->interp == PF_INTERP_BILINEAR;
    switch (job->channels) {
    case 1: launch<1>(bil, grid, block, s, p); break;
    case 3: launch<3>(bil, grid, block, s, p); break;
    default: launch<4>(bil, grid, block, s, p); break;
    }
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        return pf_cuda_fail(err,
                            "reprojection kernel launch (%d views, %dx%d source, %d channels, "
                            "grid %ux%ux%u) on %s",
                            job->n, job->src_w, job->src_h, job->channels, grid.x, grid.y,
                            grid.z, pf_device_spec(ops->dev));
    return PF_OK;
}
