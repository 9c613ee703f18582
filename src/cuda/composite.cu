/* CUDA compositing: one fused kernel per call, after up to three small
 * kernels that prepare a blurred background.
 *
 * Design
 * - The blend kernel does everything per pixel in registers: mask sampling
 *   (bilinear from any mask size), frame fetch with YUV conversion, the
 *   background (colour; bilinear image resize; frame; blurred image),
 *   blend, rounding and the output format. A thread owns a 2-column x 8-row
 *   strip: an NV12 2x2 block is always one thread's (its chroma needs all
 *   four pixels; in place, all four are read before any is written), and
 *   column taps are computed once per strip. Background kind and NV12 output
 *   are template parameters; frame, image, mask and packed output formats
 *   are uniform runtime branches (a switch per pixel that every thread of a
 *   warp takes the same way costs nearly nothing, and 12 instantiations
 *   compile far faster than 300).
 * - Blur, sigma <= 8 (ops.h): blur_h_full converts each frame row segment
 *   once into shared memory and writes the horizontal pass as three float
 *   planes to scratch; the vertical pass is fused into the blend kernel: a
 *   thread slides down its 8 rows, reading each of the 8 + 2R rows of t once
 *   and adding it into the accumulators of every output row it reaches, so
 *   each output still sums k = 0..2R in increasing order (ops.h's order)
 *   while t is read (8 + 2R) / 8 times per pixel instead of 2R + 1.
 * - Blur, sigma > 8: blur_down box-averages q x q blocks (one thread per
 *   block, summing row by row as ops.h says), blur_small runs the horizontal
 *   and then the vertical pass on that q^2 times smaller image (one thread
 *   per pixel; the image is small enough to live in L2), and the blend
 *   kernel samples the result bilinearly.
 * - Bit-exact with the C reference: every float operation is an __f*_rn
 *   intrinsic (via composite.h's CMP_* macros), which nvcc never contracts
 *   into an FMA, in the reference's order; tap positions are exact integer
 *   arithmetic (32-bit when it fits, which gives the same integers).
 * - Parameters travel by value (__grid_constant__); intermediates live in
 *   pf_ops_scratch (device memory, grown once): nothing is allocated per
 *   call and every launch is capturable in a CUDA graph. */
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "../ops/composite.h"
#include "../ops/ops_impl.h"
#include "cuda_internal.h"
}

namespace {

constexpr int BX = 32, BY = 4; /* blend block: 32 x 4 threads */
constexpr int PY = 8;          /* rows per blend thread (even: whole NV12 blocks) */
constexpr int HSEG = 256;      /* blur_h_full: outputs per block (one row segment) */
constexpr int KIND_BLUR_SMALL = 5; /* PF_BG_BLUR with q > 1 (PF_BG_BLUR itself: q = 1) */

struct rgbf {
    float r, g, b;
};

struct rgb8 {
    uint8_t r, g, b;
};

__device__ __forceinline__ int clampi(int v, int hi) { return v < 0 ? 0 : (v > hi ? hi : v); }

/* pf_cmp_taps with 32-bit division where the operands fit (same integers). */
__device__ __forceinline__ void taps(int64_t num, int64_t den, int n, int &k0, int &k1, float &f)
{
    if (num >= -(1ll << 30) && num <= (1ll << 30) && den <= (1ll << 30)) {
        const int a = (int)num, d = (int)den;
        const int k = a >= 0 ? a / d : -((-a + d - 1) / d);
        const int rem = a - k * d;
        k0 = clampi(k, n - 1);
        k1 = clampi(k + 1, n - 1);
        f = CMP_DIV((float)rem, (float)d);
    } else {
        pf_cmp_taps(num, den, n, &k0, &k1, &f);
    }
}

/* Taps of frame index i (axis of c pixels) over a source axis of r pixels. */
__device__ __forceinline__ void axis_taps(int i, int c, int r, int &k0, int &k1, float &f)
{
    taps((2 * (int64_t)i + 1) * r - c, 2 * (int64_t)c, r, k0, k1, f);
}

/* A byte through the read-only (non-coherent) path, or a plain load: the
 * frame may be dst itself (in place), which __ldg's contract forbids, so
 * the blend kernel reads it with plain loads (each byte is read only by the
 * thread that later overwrites it). */
template <bool NC>
__device__ __forceinline__ float ld8(const uint8_t *p)
{
    return NC ? (float)__ldg(p) : (float)*p;
}

/* R, G, B floats of pixel (x, y) (ops.h: F). */
template <bool NC>
__device__ __forceinline__ rgbf fetch(const pf_cmp_image &im, const float *k, int x, int y)
{
    rgbf o;
    const uint8_t *p0 = im.plane[0] + (int64_t)y * im.stride[0];
    switch (im.format) {
    case PF_PIXFMT_RGB24: {
        const uint8_t *q = p0 + 3 * (int64_t)x;
        o.r = ld8<NC>(q), o.g = ld8<NC>(q + 1), o.b = ld8<NC>(q + 2);
        return o;
    }
    case PF_PIXFMT_BGR24: {
        const uint8_t *q = p0 + 3 * (int64_t)x;
        o.r = ld8<NC>(q + 2), o.g = ld8<NC>(q + 1), o.b = ld8<NC>(q);
        return o;
    }
    case PF_PIXFMT_RGBA: {
        const uint8_t *q = p0 + 4 * (int64_t)x;
        o.r = ld8<NC>(q), o.g = ld8<NC>(q + 1), o.b = ld8<NC>(q + 2);
        return o;
    }
    default: break;
    }
    float Y = ld8<NC>(p0 + x), U, V;
    if (im.format == PF_PIXFMT_NV12) {
        const uint8_t *uv = im.plane[1] + (int64_t)(y >> 1) * im.stride[1] + 2 * (x >> 1);
        U = ld8<NC>(uv);
        V = ld8<NC>(uv + 1);
    } else {
        U = ld8<NC>(im.plane[1] + (int64_t)(y >> 1) * im.stride[1] + (x >> 1));
        V = ld8<NC>(im.plane[2] + (int64_t)(y >> 1) * im.stride[2] + (x >> 1));
    }
    pf_cmp_yuv2rgb(Y, U, V, k, &o.r, &o.g, &o.b);
    return o;
}

__device__ __forceinline__ rgbf lerp3(const rgbf &a, const rgbf &b, float f)
{
    rgbf o = {pf_cmp_lerp(a.r, b.r, f), pf_cmp_lerp(a.g, b.g, f), pf_cmp_lerp(a.b, b.b, f)};
    return o;
}

__device__ __forceinline__ float mask_value(const pf_cmp_params &p, int y0, int y1, float fy,
                                            int x0, int x1, float fx)
{
    const int64_t r0 = (int64_t)y0 * p.mask_stride, r1 = (int64_t)y1 * p.mask_stride;
    float a, b, c, d;
    if (p.mask_u8) {
        const uint8_t *m = (const uint8_t *)p.mask;
        a = __ldg(m + r0 + x0), b = __ldg(m + r0 + x1), c = __ldg(m + r1 + x0),
        d = __ldg(m + r1 + x1);
    } else {
        const float *m = (const float *)p.mask;
        a = __ldg(m + r0 + x0), b = __ldg(m + r0 + x1), c = __ldg(m + r1 + x0),
        d = __ldg(m + r1 + x1);
    }
    float v = pf_cmp_lerp(pf_cmp_lerp(a, b, fx), pf_cmp_lerp(c, d, fx), fy);
    if (p.mask_u8) v = CMP_DIV(v, 255.0f);
    return pf_cmp_unit(v);
}

/* Blurred small image (three planes) at taps (x0, x1, fx) x (y0, y1, fy). */
__device__ __forceinline__ rgbf small_value(const float *t, int64_t pitch, int64_t plane, int y0,
                                            int y1, float fy, int x0, int x1, float fx)
{
    float v[3];
#pragma unroll
    for (int c = 0; c < 3; c++) {
        const float *s = t + c * plane;
        const float h0 = pf_cmp_lerp(__ldg(s + y0 * pitch + x0), __ldg(s + y0 * pitch + x1), fx);
        const float h1 = pf_cmp_lerp(__ldg(s + y1 * pitch + x0), __ldg(s + y1 * pitch + x1), fx);
        v[c] = pf_cmp_lerp(h0, h1, fy);
    }
    rgbf o = {v[0], v[1], v[2]};
    return o;
}

/* The blend kernel ---------------------------------------------------------------------- */

template <int KIND, bool NV12>
__global__ void __launch_bounds__(BX * BY)
    blend_kernel(const __grid_constant__ pf_cmp_params p, const float *__restrict__ t,
                 int64_t pitch, int64_t plane)
{
    __shared__ float sw[PF_CMP_MAX_TAPS];
    if (KIND == PF_BG_BLUR) {
        const int tid = threadIdx.y * BX + threadIdx.x;
        if (tid < PF_CMP_MAX_TAPS) sw[tid] = p.blur_wt[tid];
        __syncthreads();
    }
    const int W = p.width, H = p.height;
    const int x0 = 2 * (int)(blockIdx.x * BX + threadIdx.x);
    const int y0 = PY * (int)(blockIdx.y * BY + threadIdx.y);
    if (x0 >= W || y0 >= H) return;
    const int nx = W - x0 < 2 ? 1 : 2;
    const float *k = p.yuv;
    const bool yuv_in = p.frame.format == PF_PIXFMT_NV12 || p.frame.format == PF_PIXFMT_I420;

    if (KIND == PF_BG_NONE && NV12 && yuv_in) {
        /* The frame's own samples (ops.h, PF_BG_NONE). */
        for (int y = y0; y < y0 + PY && y < H; y++)
            for (int d = 0; d < nx; d++)
                p.dst[0][(int64_t)y * p.dst_stride[0] + x0 + d] =
                    p.frame.plane[0][(int64_t)y * p.frame.stride[0] + x0 + d];
        for (int y = y0; y < y0 + PY && y < H; y += 2) {
            const int cy = y >> 1, cx = x0 >> 1;
            uint8_t *uv = p.dst[1] + (int64_t)cy * p.dst_stride[1] + 2 * cx;
            uint8_t u, v;
            if (p.frame.format == PF_PIXFMT_NV12) {
                const uint8_t *s = p.frame.plane[1] + (int64_t)cy * p.frame.stride[1] + 2 * cx;
                u = s[0], v = s[1];
            } else {
                u = p.frame.plane[1][(int64_t)cy * p.frame.stride[1] + cx];
                v = p.frame.plane[2][(int64_t)cy * p.frame.stride[2] + cx];
            }
            uv[0] = u, uv[1] = v;
        }
        return;
    }

    /* Column taps of the strip's two columns (the second repeats the first
     * when the frame ends after one). */
    int mk0[2], mk1[2], bk0[2] = {0, 0}, bk1[2] = {0, 0};
    float mf[2], bf[2] = {0.0f, 0.0f};
#pragma unroll
    for (int d = 0; d < 2; d++) {
        const int x = x0 + (d < nx ? d : 0);
        axis_taps(x, W, p.mask_w, mk0[d], mk1[d], mf[d]);
        if (KIND == PF_BG_IMAGE) axis_taps(x, W, p.image.width, bk0[d], bk1[d], bf[d]);
        if (KIND == KIND_BLUR_SMALL)
            taps(2 * (int64_t)x + 1 - p.blur_q, 2 * (int64_t)p.blur_q, p.blur_w, bk0[d], bk1[d],
                 bf[d]);
    }

    /* Full-resolution blur: the vertical pass for the whole strip. */
    float acc[PY][2][3]; /* only PF_BG_BLUR uses it (registers vanish otherwise) */
    if (KIND == PF_BG_BLUR) {
#pragma unroll
        for (int j = 0; j < PY; j++)
#pragma unroll
            for (int d = 0; d < 2; d++) acc[j][d][0] = acc[j][d][1] = acc[j][d][2] = 0.0f;
        const int R = p.blur_r;
        for (int r = 0; r < PY + 2 * R; r++) {
            const int yy = clampi(y0 - R + r, H - 1);
            const float *row = t + (int64_t)yy * pitch + x0;
            float v[2][3];
#pragma unroll
            for (int d = 0; d < 2; d++)
#pragma unroll
                for (int c = 0; c < 3; c++) v[d][c] = __ldg(row + c * plane + (d < nx ? d : 0));
#pragma unroll
            for (int j = 0; j < PY; j++) {
                const int kk = r - j;
                if (kk >= 0 && kk <= 2 * R) {
                    const float w = sw[kk];
#pragma unroll
                    for (int d = 0; d < 2; d++)
#pragma unroll
                        for (int c = 0; c < 3; c++)
                            acc[j][d][c] = CMP_ADD(acc[j][d][c], CMP_MUL(w, v[d][c]));
                }
            }
        }
    }

    const int bpp = p.dst_format == PF_PIXFMT_RGBA ? 4 : 3;
    const bool bgr = p.dst_format == PF_PIXFMT_BGR24;
#pragma unroll
    for (int j = 0; j < PY; j += 2) {
        if (y0 + j >= H) break;
        const int rows = y0 + j + 1 < H ? 2 : 1;
        rgb8 out[2][2];
#pragma unroll
        for (int dy = 0; dy < 2; dy++) {
            if (dy >= rows) break;
            const int y = y0 + j + dy;
            int my0, my1, by0 = 0, by1 = 0;
            float mfy, bfy = 0.0f;
            axis_taps(y, H, p.mask_h, my0, my1, mfy);
            if (KIND == PF_BG_IMAGE) axis_taps(y, H, p.image.height, by0, by1, bfy);
            if (KIND == KIND_BLUR_SMALL)
                taps(2 * (int64_t)y + 1 - p.blur_q, 2 * (int64_t)p.blur_q, p.blur_h, by0, by1,
                     bfy);
#pragma unroll
            for (int dx = 0; dx < 2; dx++) {
                if (dx >= nx) break;
                const int x = x0 + dx;
                const rgbf f = fetch<false>(p.frame, k, x, y);
                const bool need_m = KIND != PF_BG_NONE || (!NV12 && bpp == 4);
                const float m =
                    need_m ? mask_value(p, my0, my1, mfy, mk0[dx], mk1[dx], mf[dx]) : 0.0f;
                rgb8 o;
                if (KIND == PF_BG_NONE) {
                    o.r = pf_cmp_q(f.r), o.g = pf_cmp_q(f.g), o.b = pf_cmp_q(f.b);
                } else {
                    rgbf b;
                    if (KIND == PF_BG_COLOR) {
                        b.r = p.color[0], b.g = p.color[1], b.b = p.color[2];
                    } else if (KIND == PF_BG_FRAME) {
                        b = fetch<true>(p.image, k, x, y);
                    } else if (KIND == PF_BG_IMAGE) {
                        const rgbf a0 = fetch<true>(p.image, k, bk0[dx], by0);
                        const rgbf a1 = fetch<true>(p.image, k, bk1[dx], by0);
                        const rgbf c0 = fetch<true>(p.image, k, bk0[dx], by1);
                        const rgbf c1 = fetch<true>(p.image, k, bk1[dx], by1);
                        b = lerp3(lerp3(a0, a1, bf[dx]), lerp3(c0, c1, bf[dx]), bfy);
                    } else if (KIND == PF_BG_BLUR) {
                        b.r = acc[j + dy][dx][0], b.g = acc[j + dy][dx][1],
                        b.b = acc[j + dy][dx][2];
                    } else { /* KIND_BLUR_SMALL */
                        b = small_value(t, pitch, plane, by0, by1, bfy, bk0[dx], bk1[dx], bf[dx]);
                    }
                    const float om = CMP_SUB(1.0f, m);
                    o.r = pf_cmp_q(pf_cmp_blend(m, om, f.r, b.r));
                    o.g = pf_cmp_q(pf_cmp_blend(m, om, f.g, b.g));
                    o.b = pf_cmp_q(pf_cmp_blend(m, om, f.b, b.b));
                }
                if (NV12) {
                    out[dy][dx] = o;
                } else {
                    uint8_t *q = p.dst[0] + (int64_t)y * p.dst_stride[0] + (int64_t)x * bpp;
                    q[0] = bgr ? o.b : o.r;
                    q[1] = o.g;
                    q[2] = bgr ? o.r : o.b;
                    if (bpp == 4) q[3] = pf_cmp_q(CMP_MUL(255.0f, m));
                }
            }
        }
        if (NV12) {
            const float *cy = p.rgb2yuv;
            int s0 = 0, s1 = 0, s2 = 0, n = 0;
#pragma unroll
            for (int dy = 0; dy < 2; dy++) {
                if (dy >= rows) break;
                uint8_t *q = p.dst[0] + (int64_t)(y0 + j + dy) * p.dst_stride[0] + x0;
#pragma unroll
                for (int dx = 0; dx < 2; dx++) {
                    if (dx >= nx) break;
                    const rgb8 o = out[dy][dx];
                    q[dx] = pf_cmp_dot3(cy, cy[9], (float)o.r, (float)o.g, (float)o.b);
                    s0 += o.r, s1 += o.g, s2 += o.b;
                    n++;
                }
            }
            const float fn = (float)n;
            const float R = CMP_DIV((float)s0, fn), G = CMP_DIV((float)s1, fn),
                        B = CMP_DIV((float)s2, fn);
            uint8_t *uv = p.dst[1] + (int64_t)((y0 + j) >> 1) * p.dst_stride[1] + x0;
            uv[0] = pf_cmp_dot3(cy + 3, 128.0f, R, G, B);
            uv[1] = pf_cmp_dot3(cy + 6, 128.0f, R, G, B);
        }
    }
}

/* Blur passes ----------------------------------------------------------------------------- */

/* Horizontal pass at full resolution: block (row, segment) converts the
 * frame's pixels [x0 - R, x0 + HSEG + R) of row y (clamped) once into shared
 * memory, then each thread sums its 2R + 1 taps. */
__global__ void __launch_bounds__(HSEG)
    blur_h_full(const __grid_constant__ pf_cmp_params p, float *__restrict__ t, int64_t pitch,
                int64_t plane)
{
    __shared__ float sw[PF_CMP_MAX_TAPS];
    __shared__ float s[3][HSEG + PF_CMP_MAX_TAPS - 1];
    const int tid = threadIdx.x, y = blockIdx.x, xs = blockIdx.y * HSEG;
    const int W = p.width, R = p.blur_r;
    if (tid < PF_CMP_MAX_TAPS) sw[tid] = p.blur_wt[tid];
    for (int i = tid; i < HSEG + 2 * R; i += HSEG) {
        const rgbf v = fetch<true>(p.frame, p.yuv, clampi(xs - R + i, W - 1), y);
        s[0][i] = v.r, s[1][i] = v.g, s[2][i] = v.b;
    }
    __syncthreads();
    const int x = xs + tid;
    if (x >= W) return;
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f;
    for (int kk = 0; kk <= 2 * R; kk++) {
        const float w = sw[kk];
        a0 = CMP_ADD(a0, CMP_MUL(w, s[0][tid + kk]));
        a1 = CMP_ADD(a1, CMP_MUL(w, s[1][tid + kk]));
        a2 = CMP_ADD(a2, CMP_MUL(w, s[2][tid + kk]));
    }
    float *o = t + (int64_t)y * pitch + x;
    o[0] = a0, o[plane] = a1, o[2 * plane] = a2;
}

/* Box average of q x q blocks: small pixel (i, j), rows then columns. */
__global__ void blur_down(const __grid_constant__ pf_cmp_params p, float *__restrict__ small,
                          int64_t pitch, int64_t plane)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= p.blur_w || j >= p.blur_h) return;
    const int q = p.blur_q;
    const int xe = min((i + 1) * q, p.width), ye = min((j + 1) * q, p.height);
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f;
    for (int y = j * q; y < ye; y++)
        for (int x = i * q; x < xe; x++) {
            const rgbf v = fetch<true>(p.frame, p.yuv, x, y);
            s0 = CMP_ADD(s0, v.r), s1 = CMP_ADD(s1, v.g), s2 = CMP_ADD(s2, v.b);
        }
    const float n = (float)((xe - i * q) * (ye - j * q));
    float *o = small + (int64_t)j * pitch + i;
    o[0] = CMP_DIV(s0, n), o[plane] = CMP_DIV(s1, n), o[2 * plane] = CMP_DIV(s2, n);
}

/* One pass of the small image's blur (horizontal or vertical), clamped. */
__global__ void blur_small(const __grid_constant__ pf_cmp_params p, const float *__restrict__ src,
                           float *__restrict__ dst, int64_t pitch, int64_t plane, int horizontal)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y * blockDim.y + threadIdx.y;
    const int w = p.blur_w, h = p.blur_h, R = p.blur_r;
    if (i >= w || j >= h) return;
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f;
    for (int kk = 0; kk <= 2 * R; kk++) {
        const int x = horizontal ? clampi(i + kk - R, w - 1) : i;
        const int y = horizontal ? j : clampi(j + kk - R, h - 1);
        const float wt = p.blur_wt[kk];
        const float *s = src + (int64_t)y * pitch + x;
        a0 = CMP_ADD(a0, CMP_MUL(wt, __ldg(s)));
        a1 = CMP_ADD(a1, CMP_MUL(wt, __ldg(s + plane)));
        a2 = CMP_ADD(a2, CMP_MUL(wt, __ldg(s + 2 * plane)));
    }
    float *o = dst + (int64_t)j * pitch + i;
    o[0] = a0, o[plane] = a1, o[2 * plane] = a2;
}

template <int KIND>
void launch_blend(const pf_cmp_params *p, const float *t, int64_t pitch, int64_t plane,
                  cudaStream_t s)
{
    dim3 block(BX, BY);
    dim3 grid((unsigned)(((p->width + 1) / 2 + BX - 1) / BX),
              (unsigned)(((p->height + PY - 1) / PY + BY - 1) / BY));
    if (p->dst_format == PF_PIXFMT_NV12)
        blend_kernel<KIND, true><<<grid, block, 0, s>>>(*p, t, pitch, plane);
    else
        blend_kernel<KIND, false><<<grid, block, 0, s>>>(*p, t, pitch, plane);
}

int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

} /* namespace */

extern "C" pf_status pf_cuda_composite(pf_ops *ops, const pf_cmp_params *p)
{
    cudaStream_t s = (cudaStream_t)pf_stream_native(ops->stream);
    pf_status st = pf_cuda_use_stream_device(s);
    if (st != PF_OK) return st;
    const float *t = nullptr;
    int64_t pitch = 0, plane = 0;
    int kind = p->kind;
    const char *stage = "blend";
    if (p->kind == PF_BG_BLUR) {
        /* Three float planes per image, rows padded to 128 bytes. */
        const bool full = p->blur_q == 1;
        pitch = round_up(p->blur_w, 32);
        plane = pitch * p->blur_h;
        const size_t bytes = (size_t)(full ? 3 : 9) * (size_t)plane * sizeof(float);
        void *mem = nullptr;
        st = pf_ops_scratch(ops, bytes, &mem);
        if (st != PF_OK) return st;
        float *base = (float *)mem;
        if (full) {
            stage = "blur_h_full";
            /* Rows on x: a grid's y extent stops at 65535. */
            dim3 grid((unsigned)p->height, (unsigned)((p->width + HSEG - 1) / HSEG));
            blur_h_full<<<grid, HSEG, 0, s>>>(*p, base, pitch, plane);
            t = base;
        } else {
            float *small = base, *tmp = base + 3 * plane, *blurred = base + 6 * plane;
            dim3 block(32, 8);
            dim3 grid((unsigned)((p->blur_w + 31) / 32), (unsigned)((p->blur_h + 7) / 8));
            stage = "blur_down";
            blur_down<<<grid, block, 0, s>>>(*p, small, pitch, plane);
            cudaError_t err = cudaGetLastError();
            if (err == cudaSuccess) {
                stage = "blur_small";
                blur_small<<<grid, block, 0, s>>>(*p, small, tmp, pitch, plane, 1);
                blur_small<<<grid, block, 0, s>>>(*p, tmp, blurred, pitch, plane, 0);
            } else {
                return pf_cuda_fail(err, "pf_ops_composite: %s launch (%dx%d) on %s", stage,
                                    p->width, p->height, ops->dev->spec);
            }
            t = blurred;
            kind = KIND_BLUR_SMALL;
        }
        cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess)
            return pf_cuda_fail(err, "pf_ops_composite: %s launch (%dx%d, sigma %g) on %s", stage,
                                p->width, p->height, (double)p->sigma, ops->dev->spec);
        stage = "blend";
    }
    switch (kind) {
    case PF_BG_NONE: launch_blend<PF_BG_NONE>(p, t, pitch, plane, s); break;
    case PF_BG_COLOR: launch_blend<PF_BG_COLOR>(p, t, pitch, plane, s); break;
    case PF_BG_IMAGE: launch_blend<PF_BG_IMAGE>(p, t, pitch, plane, s); break;
    case PF_BG_FRAME: launch_blend<PF_BG_FRAME>(p, t, pitch, plane, s); break;
    case PF_BG_BLUR: launch_blend<PF_BG_BLUR>(p, t, pitch, plane, s); break;
    default: launch_blend<KIND_BLUR_SMALL>(p, t, pitch, plane, s); break;
    }
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        return pf_cuda_fail(err, "pf_ops_composite: %s kernel launch (%dx%d %s -> %s, kind %d) on %s",
                            stage, p->width, p->height, pf_pixfmt_name((pf_pixfmt)p->frame.format),
                            pf_pixfmt_name((pf_pixfmt)p->dst_format), p->kind, ops->dev->spec);
    return PF_OK;
}
