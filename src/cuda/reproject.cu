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
 * (__ldg): neighbouring threads read neighbouring source pixels.
 *
 * Where the time goes (H200, 7680x3840 RGB24 -> 8 x 1920x1080 bilinear,
 * bench/bench_reproject.c, Nsight Compute): instruction issue, not memory
 * (moving the bytes alone would take 0.019 ms; the issue slots are ~88%
 * busy). About 208 instructions a pixel, most of them the float formula
 * itself: two atan2 (IEEE division, polynomial without FMA), a square root,
 * the rotation, the blend. What the kernel adds to the formula is kept small
 * (kernel times of the same configuration):
 *   - each bilinear tap row is a pair of adjacent pixels, 2 * C adjacent
 *     bytes, read as the 2 or 3 aligned words that cover them
 *     (rp_pair_words) instead of 2 * C byte loads: for RGB24 6 loads a pixel
 *     instead of 12. The byte loads were what held issue back (74% busy):
 *     0.160 -> 0.127 ms;
 *   - byte -> float, float -> byte and floor are exact float tricks
 *     (rp_m23, rp_blend_m23, rp_floor: the same bits as the C code, fewer
 *     instructions), camera x is xc0 + k (exact), and the word addresses are
 *     one 64-bit offset from the source rounded down to 4 bytes; a source
 *     stride that is a multiple of 4 (RGB24 of a width divisible by 4, RGBA,
 *     most padded layouts) gets a kernel whose second tap row reuses the
 *     first's alignment: 0.127 -> 0.119 ms. */
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
    const uint8_t *src_words; /* src rounded down to a multiple of 4 bytes */
    unsigned src_stride;
    unsigned src_misalign; /* src - src_words */
    int src_w, src_h;
    int n;
    /* Bilinear taps with x0 in [0, words_xlim) and y0 - 1 in [0, words_ylim)
     * are read as words (see rp_pair_words); 0 where the source is too small. */
    int words_xlim, words_ylim;
    rp_kview v[PF_RP_MAX_VIEWS];
};

static_assert(sizeof(rp_kparams) <= 4096, "reprojection kernel parameters exceed 4 KB");

/* Exact stand-ins for conversions of reproject_math.h: each gives the same
 * bits as the C code it replaces, in fewer instructions and none on the
 * conversion unit. They rest on the floats in [2^23, 2^24) being exactly the
 * integers. */
#define RP_M23 8388608.0f  /* 2^23 */
#define RP_M23_BITS 0x4B000000u
#define RP_M23H 12582912.0f /* 1.5 * 2^23 */
#define RP_M23H_BITS 0x4B400000

/* pf_rp_ifloor(v), and (float)pf_rp_ifloor(v), for |v| < 2^22 (source
 * coordinates stay within about [-1, 65537]): 1.5 * 2^23 + v lies in
 * [2^23, 2^24), so the sum rounded down is 1.5 * 2^23 + floor(v) exactly,
 * its bits are RP_M23H_BITS + floor(v), and subtracting 1.5 * 2^23 again is
 * exact. */
static __device__ __forceinline__ float rp_floor(float v, int *iv)
{
    const float m = __fadd_rd(v, RP_M23H);
    *iv = __float_as_int(m) - RP_M23H_BITS;
    return __fsub_rn(m, RP_M23H);
}

static __device__ __forceinline__ int rp_ifloor(float v)
{
    return __float_as_int(__fadd_rd(v, RP_M23H)) - RP_M23H_BITS;
}

/* A byte b as the bits of the float 2^23 + b. (float)b is that float minus
 * 2^23, and the difference of two such floats is the difference of their
 * bytes, both exact. */
static __device__ __forceinline__ uint32_t rp_m23(uint32_t b) { return RP_M23_BITS | b; }

/* pf_rp_blend on taps given by rp_m23, the same operations in the same
 * order; returns a word whose low byte is the result. v + 0.5f is in
 * [0.5, 255.5] (a blend of bytes, rounded monotonically), so adding 2^23
 * rounding towards zero gives 2^23 + (int)(v + 0.5f) exactly. */
static __device__ __forceinline__ uint32_t rp_blend_m23(uint32_t pa, uint32_t pb, uint32_t pc,
                                                        uint32_t pd, float ax, float ay)
{
    const float fa = __uint_as_float(pa), fb = __uint_as_float(pb);
    const float fc = __uint_as_float(pc), fd = __uint_as_float(pd);
    const float a = __fsub_rn(fa, RP_M23), c = __fsub_rn(fc, RP_M23);
    const float top = __fadd_rn(a, __fmul_rn(ax, __fsub_rn(fb, fa)));
    const float bot = __fadd_rn(c, __fmul_rn(ax, __fsub_rn(fd, fc)));
    const float v = __fadd_rn(top, __fmul_rn(ay, __fsub_rn(bot, top)));
    return __float_as_uint(__fadd_rz(__fadd_rn(v, 0.5f), RP_M23));
}

/* The 2 * C bytes of two horizontally adjacent source pixels, as rp_m23
 * values, from the aligned words w[0..NW) that cover them; sh's bits 3..4
 * are the first byte's place in w[0] (funnel shifts use sh & 31). All NW
 * words are read whatever the alignment (a predicated-off load still takes
 * its issue slot, and the predicate costs more), so up to 3 bytes before the
 * pair and 6 past it are read: the caller makes sure those are the source's
 * (its rows or the padding between them). */
template <int C>
static __device__ __forceinline__ void rp_pair_words(const uint32_t *w, unsigned sh, uint32_t *t0,
                                                     uint32_t *t1)
{
    constexpr int NV = (2 * C + 3) / 4, NW = NV + 1;
    uint32_t wd[NW], v[NV];
#pragma unroll
    for (int q = 0; q < NW; q++) wd[q] = __ldg(w + q);
#pragma unroll
    for (int q = 0; q < NV; q++) v[q] = __funnelshift_r(wd[q], wd[q + 1], sh);
#pragma unroll
    for (int c = 0; c < C; c++) {
        t0[c] = __byte_perm(v[c >> 2], RP_M23_BITS, 0x7440 | (c & 3));
        t1[c] = __byte_perm(v[(C + c) >> 2], RP_M23_BITS, 0x7440 | ((C + c) & 3));
    }
}

/* SA4: the source stride is a multiple of 4, so a tap's second row has the
 * first row's alignment (one address computation instead of two). */
template <int C, bool BIL, bool SA4>
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
    /* pf_rp_cam_x(width, i0 + k) = xc0 + k exactly (half-integers < 2^17). */
    const float xc0 = pf_rp_cam_x(g.width, i0);
    uint32_t px[RP_PX * C]; /* low bytes: the output bytes */
#pragma unroll
    for (int k = 0; k < RP_PX; k++) {
        /* Pixels past the row's end are computed too (their taps are valid
         * source pixels) and never stored: no divergence in the loop. The
         * steps of pf_rp_map_row, with the camera x above. */
        const float xc = __fadd_rn(xc0, (float)k);
        const float wx = __fadd_rn(__fmul_rn(g.m00, xc), row.bx);
        const float wy = __fadd_rn(__fmul_rn(g.m10, xc), row.by);
        const float wz = __fadd_rn(__fmul_rn(g.m20, xc), row.bz);
        const float fx = pf_rp_fx(wx, wz, W);
        const float fy = pf_rp_fy(wy, RP_SQRT(pf_rp_horiz2(wx, wz)), H);
        if (BIL) {
            /* pf_rp_bilinear with rp_floor. */
            const float sx = __fsub_rn(fx, 0.5f), sy = __fsub_rn(fy, 0.5f);
            int xr, yr;
            const float ax = __fsub_rn(sx, rp_floor(sx, &xr));
            const float ay = __fsub_rn(sy, rp_floor(sy, &yr));
            uint32_t ta[C], tb[C], tc[C], td[C];
            if ((unsigned)xr < (unsigned)p.words_xlim &&
                (unsigned)(yr - 1) < (unsigned)p.words_ylim) {
                /* x1 = x0 + 1 (no wrap), y0 = yr >= 1, y1 = yr + 1 <= H - 2 (no
                 * clamp): the words read around both pairs lie in rows 0..H-1
                 * (launch: rows of >= 6 bytes). Offsets from src_words. */
                const size_t off0 = (size_t)(unsigned)yr * p.src_stride +
                                    (unsigned)(xr * C + (int)p.src_misalign);
                const uint32_t *w0 = (const uint32_t *)(p.src_words + (off0 & ~(size_t)3));
                const unsigned sh0 = (unsigned)off0 << 3;
                rp_pair_words<C>(w0, sh0, ta, tb);
                if (SA4) {
                    rp_pair_words<C>(w0 + (p.src_stride >> 2), sh0, tc, td);
                } else {
                    const size_t off1 = off0 + p.src_stride;
                    rp_pair_words<C>((const uint32_t *)(p.src_words + (off1 & ~(size_t)3)),
                                     (unsigned)off1 << 3, tc, td);
                }
            } else {
                /* Wrapped or clamped taps (the seam, the poles, tiny sources). */
                const int x0 = pf_rp_wrap_x(xr, W), x1 = x0 + 1 >= W ? 0 : x0 + 1;
                const int y0 = pf_rp_clamp_y(yr, H), y1 = pf_rp_clamp_y(yr + 1, H);
                const uint8_t *r0 = p.src + (size_t)y0 * p.src_stride;
                const uint8_t *r1 = p.src + (size_t)y1 * p.src_stride;
                const int o0 = x0 * C, o1 = x1 * C;
#pragma unroll
                for (int c = 0; c < C; c++) {
                    ta[c] = rp_m23(__ldg(r0 + o0 + c));
                    tb[c] = rp_m23(__ldg(r0 + o1 + c));
                    tc[c] = rp_m23(__ldg(r1 + o0 + c));
                    td[c] = rp_m23(__ldg(r1 + o1 + c));
                }
            }
#pragma unroll
            for (int c = 0; c < C; c++)
                px[k * C + c] = rp_blend_m23(ta[c], tb[c], tc[c], td[c], ax, ay);
        } else {
            /* pf_rp_nearest with rp_ifloor. */
            const int x = pf_rp_wrap_x(rp_ifloor(fx), W);
            const int y = pf_rp_clamp_y(rp_ifloor(fy), H);
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
            w[q] = __byte_perm(__byte_perm(px[4 * q], px[4 * q + 1], 0x0040),
                               __byte_perm(px[4 * q + 2], px[4 * q + 3], 0x0040), 0x5410);
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
                for (int c = 0; c < C; c++) out[k * C + c] = (uint8_t)px[k * C + c];
            }
    }
}

template <int C>
static void launch(bool bil, dim3 grid, dim3 block, cudaStream_t s, rp_kparams &p)
{
    /* Word reads need rows of >= 6 bytes: then the 3 bytes before a tap
     * pair and the 6 after it (rp_pair_words) stay inside the rows of a
     * tap row >= 1 and the row below it, both in the frame. */
    const bool words = p.src_h >= 4 && (long long)p.src_w * C >= 6;
    p.words_xlim = words ? p.src_w - 1 : 0;
    p.words_ylim = words ? p.src_h - 3 : 0;
    if (!bil) rp_kernel<C, false, false><<<grid, block, 0, s>>>(p);
    else if (p.src_stride % 4 == 0) rp_kernel<C, true, true><<<grid, block, 0, s>>>(p);
    else rp_kernel<C, true, false><<<grid, block, 0, s>>>(p);
}

extern "C" pf_status pf_cuda_equirect_to_views(pf_ops *ops, const pf_rp_job *job)
{
    rp_kparams p;
    p.src = job->src;
    p.src_misalign = (unsigned)((uintptr_t)job->src & 3);
    p.src_words = job->src - p.src_misalign;
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
