/* CUDA mask post-processing and refinement: threshold, argmax/softmax,
 * temporal smoothing (elementwise), feather and morphology (separable).
 *
 * Design
 * - Elementwise kernels (threshold, temporal, argmax over NCHW) give each
 *   thread V = 4 consecutive pixels when the size and every pointer allow
 *   16-byte (f32) / 8-byte (f16) loads and matching stores, else one; a
 *   grid-stride loop covers any count with a bounded grid. NCHW argmax reads
 *   each class plane coalesced along W; the second (softmax) pass re-reads a
 *   thread's C values, which were read moments before and come from L1/L2,
 *   not DRAM. NHWC argmax gives a thread one pixel's C contiguous values.
 * - Arithmetic follows src/ops/mask.h: sigmoid 1 / (1 + expf(-x)) with
 *   CUDA's expf (not __expf; IEEE division), softmax with the first maximum
 *   and the sum over c in order, temporal with __fmul_rn/__fadd_rn (no
 *   contraction, so it equals the reference bit for bit). expf differs from
 *   glibc's by up to 2 ulp, so a sigmoid within about 1e-7 of the threshold
 *   may land on the other side, and softmax probabilities differ by a few
 *   ulp; ops.h states the tolerances.
 * - Separable filters run as two kernels per stage through intermediate
 *   planes in pf_ops_scratch (device memory; grows once), planes processed
 *   in groups so the intermediates stay near SCRATCH_CAP.
 *   Horizontal pass: a block of 8 warps owns a tile of 32 rows x 64 output
 *   columns. The block loads its 32 rows x (64 + 2R) inputs into shared
 *   memory (coalesced along x, edge-clamped at load, so no tap ever
 *   branches); then lane = row, warp = group of 8 adjacent output columns:
 *   a thread slides a window of 8 inputs in registers along its row, so per
 *   tap it does one shared load, one weight load (the same address for the
 *   whole warp: a broadcast) and 8 FMAs or min/max. The row pitch is odd, so
 *   the 32 lanes (32 rows) hit 32 different banks. Results go back through
 *   shared memory and are stored coalesced along x.
 *   Vertical pass: a block owns 32 columns (lane = column, coalesced along x
 *   for loads and stores) x 64 output rows (8 per warp, the same register
 *   window sliding down a column of the (64 + 2R) x 32 shared tile).
 *   Tiles are float (u8 values are exact in float). Feather tiles exceed the
 *   default 48 KB of shared memory for R > ~150 (sigma > 50): the launch opts
 *   in to the larger limit with cudaFuncSetAttribute.
 * - Feather taps use fused multiply-adds in the reference's order (k
 *   ascending, horizontal then vertical); min/max is exact. Weights travel in
 *   the kernel parameter (__grid_constant__: read from the constant bank
 *   without a copy), so nothing is uploaded per call and every launch can be
 *   captured in a CUDA graph. */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

extern "C" {
#include "../ops/mask.h"
#include "../ops/ops_impl.h"
#include "cuda_internal.h"
}

/* Kernel bodies are __host__ __device__ and take thread and block indices
 * as arguments, with the kernels only looping and synchronizing around
 * them: the same bodies can then be run on the host, block by block and
 * phase by phase, to check the index arithmetic where no GPU is at hand. */
#define MK_HD __host__ __device__ __forceinline__
#ifdef __CUDA_ARCH__
#define MK_LDG(p) __ldg(p)
#else
#define MK_LDG(p) (*(p))
#endif

namespace {

constexpr int EW_THREADS = 256;
constexpr int64_t EW_MAX_BLOCKS = 65536;           /* grid-stride beyond this */
constexpr size_t SCRATCH_CAP = (size_t)64 << 20;  /* intermediate planes per group */

unsigned ew_blocks(int64_t units)
{
    int64_t b = (units + EW_THREADS - 1) / EW_THREADS;
    if (b < 1) b = 1;
    return (unsigned)(b < EW_MAX_BLOCKS ? b : EW_MAX_BLOCKS);
}

bool aligned(const void *p, size_t a) { return ((uintptr_t)p % a) == 0; }

__device__ __forceinline__ int64_t gtid() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t gstride() { return (int64_t)gridDim.x * blockDim.x; }

MK_HD float h2f(unsigned short u) { return __half2float(__ushort_as_half(u)); }

/* V consecutive values from element i of src (f32 or f16) as floats; i is a
 * multiple of V and src is aligned for the vector load (checked by the
 * launcher). */
template <bool F16, int V>
MK_HD void ldv(const void *src, int64_t i, float *x)
{
    if (F16) {
        const unsigned short *h = (const unsigned short *)src + i;
        if (V == 4) {
            uint2 r = MK_LDG((const uint2 *)h);
            x[0] = h2f((unsigned short)(r.x & 0xFFFFu));
            x[1] = h2f((unsigned short)(r.x >> 16));
            x[2] = h2f((unsigned short)(r.y & 0xFFFFu));
            x[3] = h2f((unsigned short)(r.y >> 16));
        } else {
            for (int j = 0; j < V; j++) x[j] = h2f(MK_LDG(h + j));
        }
    } else {
        const float *f = (const float *)src + i;
        if (V == 4) {
            float4 r = MK_LDG((const float4 *)f);
            x[0] = r.x;
            x[1] = r.y;
            x[2] = r.z;
            x[3] = r.w;
        } else {
            for (int j = 0; j < V; j++) x[j] = MK_LDG(f + j);
        }
    }
}

template <int V>
MK_HD void st_u8(uint8_t *dst, int64_t i, const uint8_t *v)
{
    if (V == 4) *(uchar4 *)(dst + i) = make_uchar4(v[0], v[1], v[2], v[3]);
    else
        for (int j = 0; j < V; j++) dst[i + j] = v[j];
}

template <int V>
MK_HD void st_f32(float *dst, int64_t i, const float *v)
{
    if (V == 4) *(float4 *)(dst + i) = make_float4(v[0], v[1], v[2], v[3]);
    else
        for (int j = 0; j < V; j++) dst[i + j] = v[j];
}

/* Threshold ---------------------------------------------------------------------------------- */

MK_HD uint8_t thr(float x, bool logits, float t)
{
    float p = logits ? 1.0f / (1.0f + expf(-x)) : x;
    return p >= t ? 255 : 0;
}

/* Elements [i, i + V). */
template <bool F16, int V>
MK_HD void threshold_body(const void *src, uint8_t *dst, int64_t i, bool logits, float t)
{
    float x[V];
    uint8_t o[V];
    ldv<F16, V>(src, i, x);
    for (int j = 0; j < V; j++) o[j] = thr(x[j], logits, t);
    st_u8<V>(dst, i, o);
}

/* Groups of V elements, then the n % V tail one element per thread. */
template <bool F16, int V>
__global__ void __launch_bounds__(EW_THREADS)
    threshold_kernel(const void *src, uint8_t *dst, int64_t n, bool logits, float t)
{
    const int64_t groups = n / V;
    for (int64_t g = gtid(); g < groups; g += gstride())
        threshold_body<F16, V>(src, dst, g * V, logits, t);
    const int64_t i = groups * V + gtid();
    if (i < n) threshold_body<F16, 1>(src, dst, i, logits, t);
}

template <bool F16>
cudaError_t launch_threshold(const pf_mk_threshold *a, cudaStream_t s)
{
    const size_t es = F16 ? 2 : 4;
    const bool v4 = aligned(a->src, 4 * es) && aligned(a->dst, 4);
    if (v4)
        threshold_kernel<F16, 4><<<ew_blocks(a->n / 4 + 1), EW_THREADS, 0, s>>>(
            a->src, a->dst, a->n, a->logits != 0, a->threshold);
    else
        threshold_kernel<F16, 1><<<ew_blocks(a->n), EW_THREADS, 0, s>>>(
            a->src, a->dst, a->n, a->logits != 0, a->threshold);
    return cudaGetLastError();
}

/* Argmax / softmax ----------------------------------------------------------------------------- */

/* Pixels [p, p + V): V consecutive pixels of one image (NCHW only, since
 * hw % V == 0), or one NHWC pixel (V = 1). */
template <bool F16, bool NHWC, int V>
MK_HD void argmax_body(const void *src, uint8_t *labels, float *prob, int64_t p, int64_t hw,
                       int C, int cls)
{
    int64_t base, step;
    if (NHWC) {
        base = p * C;
        step = 1;
    } else {
        const int64_t img = p / hw;
        base = img * C * hw + (p - img * hw);
        step = hw;
    }
    float best[V], x[V];
    uint8_t label[V];
    ldv<F16, V>(src, base, best);
    for (int j = 0; j < V; j++) label[j] = 0;
    for (int c = 1; c < C; c++) {
        ldv<F16, V>(src, base + c * step, x);
        for (int j = 0; j < V; j++)
            if (x[j] > best[j]) { /* strict: the lowest index wins ties */
                best[j] = x[j];
                label[j] = (uint8_t)c;
            }
    }
    if (labels) st_u8<V>(labels, p, label);
    if (prob) {
        float sum[V], out[V];
        for (int j = 0; j < V; j++) sum[j] = 0.0f;
        for (int c = 0; c < C; c++) {
            ldv<F16, V>(src, base + c * step, x);
            for (int j = 0; j < V; j++) sum[j] += expf(x[j] - best[j]);
        }
        ldv<F16, V>(src, base + (int64_t)cls * step, x);
        for (int j = 0; j < V; j++) out[j] = expf(x[j] - best[j]) / sum[j];
        st_f32<V>(prob, p, out);
    }
}

template <bool F16, bool NHWC, int V>
__global__ void __launch_bounds__(EW_THREADS)
    argmax_kernel(const void *src, uint8_t *labels, float *prob, int64_t pixels, int64_t hw,
                  int C, int cls)
{
    const int64_t groups = pixels / V;
    for (int64_t g = gtid(); g < groups; g += gstride())
        argmax_body<F16, NHWC, V>(src, labels, prob, g * V, hw, C, cls);
}

template <bool F16>
cudaError_t launch_argmax(const pf_mk_argmax *a, cudaStream_t s)
{
    const int64_t pixels = a->n * a->hw;
    if (a->nhwc) {
        argmax_kernel<F16, true, 1><<<ew_blocks(pixels), EW_THREADS, 0, s>>>(
            a->src, a->labels, a->prob, pixels, a->hw, a->c, a->cls);
        return cudaGetLastError();
    }
    const size_t es = F16 ? 2 : 4;
    const bool v4 = a->hw % 4 == 0 && aligned(a->src, 4 * es) &&
                    (!a->labels || aligned(a->labels, 4)) && (!a->prob || aligned(a->prob, 16));
    if (v4)
        argmax_kernel<F16, false, 4><<<ew_blocks(pixels / 4), EW_THREADS, 0, s>>>(
            a->src, a->labels, a->prob, pixels, a->hw, a->c, a->cls);
    else
        argmax_kernel<F16, false, 1><<<ew_blocks(pixels), EW_THREADS, 0, s>>>(
            a->src, a->labels, a->prob, pixels, a->hw, a->c, a->cls);
    return cudaGetLastError();
}

/* Temporal smoothing --------------------------------------------------------------------------- */

MK_HD float blend(float alpha, float m, float beta, float s)
{
#ifdef __CUDA_ARCH__
    return __fadd_rn(__fmul_rn(alpha, m), __fmul_rn(beta, s)); /* no contraction */
#else
    return alpha * m + beta * s;
#endif
}

/* Elements [i, i + V). state is written by the kernel: plain loads. */
template <int V>
MK_HD void temporal_body(float *state, const float *mask, int64_t i, float alpha, float beta,
                         bool reset)
{
    float m[V], o[V];
    ldv<false, V>(mask, i, m);
    if (reset) {
        st_f32<V>(state, i, m);
        return;
    }
    if (V == 4) {
        float4 r = *(const float4 *)(state + i);
        o[0] = r.x;
        o[1] = r.y;
        o[2] = r.z;
        o[3] = r.w;
    } else {
        for (int j = 0; j < V; j++) o[j] = state[i + j];
    }
    for (int j = 0; j < V; j++) o[j] = blend(alpha, m[j], beta, o[j]);
    st_f32<V>(state, i, o);
}

/* Sum of |mask - state| into *sum (zeroed before): the scene-cut test. The decision is read by
 * temporal_kernel on the device, so the stream never waits for the host. */
__global__ void __launch_bounds__(EW_THREADS)
    abs_diff_sum_kernel(const float *state, const float *mask, int64_t n, float *sum)
{
    float acc = 0.0f;
    for (int64_t i = gtid(); i < n; i += gstride()) acc += fabsf(mask[i] - state[i]);
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(sum, acc);
}

/* cut_sum non-NULL: reset also when *cut_sum (abs_diff_sum_kernel's) exceeds cut_limit. */
template <int V>
__global__ void __launch_bounds__(EW_THREADS)
    temporal_kernel(float *state, const float *mask, int64_t n, float alpha, float beta,
                    bool reset, const float *cut_sum, float cut_limit)
{
    if (cut_sum && *cut_sum > cut_limit) reset = true;
    const int64_t groups = n / V;
    for (int64_t g = gtid(); g < groups; g += gstride())
        temporal_body<V>(state, mask, g * V, alpha, beta, reset);
    const int64_t i = groups * V + gtid();
    if (i < n) temporal_body<1>(state, mask, i, alpha, beta, reset);
}

/* Separable filters ---------------------------------------------------------------------------- */

constexpr int SEP_WARPS = 8;                    /* warps per block */
constexpr int SEP_PX = 8;                       /* outputs per thread (register window) */
constexpr int H_TILE_W = SEP_WARPS * SEP_PX;    /* horizontal: 64 output columns ... */
constexpr int H_TILE_H = 32;                    /* ... x 32 rows (one per lane) */
constexpr int V_TILE_W = 32;                    /* vertical: 32 columns (one per lane) ... */
constexpr int V_TILE_H = SEP_WARPS * SEP_PX;    /* ... x 64 output rows */

enum { SEP_GAUSS = 0, SEP_MAX = 1, SEP_MIN = 2 };

struct sep_args {
    const void *src;
    void *dst;
    long long planes;
    int width, height, radius;
    float w[PF_MK_MAX_TAPS];   /* SEP_GAUSS only */
};

MK_HD int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

MK_HD float ldf(const float *p) { return MK_LDG(p); }
MK_HD float ldf(const uint8_t *p) { return (float)MK_LDG(p); }
MK_HD void stf(float *p, float v) { *p = v; }
MK_HD void stf(uint8_t *p, float v) { *p = (uint8_t)v; }

template <int MODE>
MK_HD float sep_identity()
{
    return MODE == SEP_MIN ? 255.0f : 0.0f;
}

template <int MODE>
MK_HD float sep_tap(float acc, float v, float w)
{
    if (MODE == SEP_GAUSS) return fmaf(w, v, acc);
    if (MODE == SEP_MAX) return fmaxf(acc, v);
    return fminf(acc, v);
}

/* The register window: acc[i] over in[(i + k) * step], k = 0 .. 2R, for the
 * SEP_PX outputs i of this thread (in[] is the tile, already edge-clamped). */
template <int MODE>
MK_HD void sep_window(const sep_args &a, const float *in, int step, float *acc)
{
    const int taps = 2 * a.radius + 1;
    float win[SEP_PX];
#pragma unroll
    for (int i = 0; i < SEP_PX; i++) {
        acc[i] = sep_identity<MODE>();
        win[i] = in[i * step];
    }
    for (int k = 0; k < taps; k++) {
        const float wk = MODE == SEP_GAUSS ? a.w[k] : 0.0f;
#pragma unroll
        for (int i = 0; i < SEP_PX; i++) acc[i] = sep_tap<MODE>(acc[i], win[i], wk);
        if (k + 1 < taps) {
#pragma unroll
            for (int i = 0; i < SEP_PX - 1; i++) win[i] = win[i + 1];
            win[SEP_PX - 1] = in[(k + SEP_PX) * step];
        }
    }
}

/* Horizontal pass, block (bx, by), plane p; thread (lane, warp). Tile:
 * H_TILE_H rows x (H_TILE_W + 2R) input columns, row pitch h_pitch(R). */
MK_HD int h_pitch(int R) { return H_TILE_W + 2 * R + 1; } /* odd: 32 lanes, 32 banks */

MK_HD bool h_active(const sep_args &a, int bx, int by, int lane, int warp)
{
    return by * H_TILE_H + lane < a.height && bx * H_TILE_W + warp * SEP_PX < a.width;
}

/* Phase 1: load the tile (coalesced along x, edge-clamped). */
template <typename Tin>
MK_HD void h_load(const sep_args &a, long long p, int bx, int by, int lane, int warp, float *tile)
{
    const int R = a.radius, W = a.width, H = a.height, pitch = h_pitch(R);
    const int span = H_TILE_W + 2 * R, x0 = bx * H_TILE_W, y0 = by * H_TILE_H;
    const Tin *src = (const Tin *)a.src + p * (long long)W * H;
    for (int r = warp; r < H_TILE_H && y0 + r < H; r += SEP_WARPS) {
        const Tin *row = src + (long long)(y0 + r) * W;
        for (int c = lane; c < span; c += 32)
            tile[r * pitch + c] = ldf(row + clampi(x0 - R + c, 0, W - 1));
    }
}

/* Phase 2 (active threads): SEP_PX adjacent outputs of row `lane`. */
template <int MODE>
MK_HD void h_compute(const sep_args &a, const float *tile, int lane, int warp, float *acc)
{
    sep_window<MODE>(a, tile + lane * h_pitch(a.radius) + warp * SEP_PX, 1, acc);
}

/* Phase 3 (active threads): results back into the tile. */
MK_HD void h_stage(const sep_args &a, float *tile, int lane, int warp, const float *acc)
{
#pragma unroll
    for (int i = 0; i < SEP_PX; i++) tile[lane * h_pitch(a.radius) + warp * SEP_PX + i] = acc[i];
}

/* Phase 4: store the tile's outputs, coalesced along x. */
template <typename Tout>
MK_HD void h_store(const sep_args &a, long long p, int bx, int by, int lane, int warp,
                   const float *tile)
{
    const int W = a.width, H = a.height, pitch = h_pitch(a.radius);
    const int x0 = bx * H_TILE_W, y0 = by * H_TILE_H;
    Tout *dst = (Tout *)a.dst + p * (long long)W * H;
    for (int r = warp; r < H_TILE_H && y0 + r < H; r += SEP_WARPS) {
        Tout *row = dst + (long long)(y0 + r) * W;
        for (int c = lane; c < H_TILE_W; c += 32)
            if (x0 + c < W) stf(row + x0 + c, tile[r * pitch + c]);
    }
}

template <int MODE, typename Tin, typename Tout>
__global__ void __launch_bounds__(32 * SEP_WARPS) hpass_kernel(const __grid_constant__ sep_args a)
{
    extern __shared__ float tile[];
    const int lane = threadIdx.x, warp = threadIdx.y, bx = blockIdx.x, by = blockIdx.y;
    const bool active = h_active(a, bx, by, lane, warp);
    for (long long p = blockIdx.z; p < a.planes; p += gridDim.z) {
        h_load<Tin>(a, p, bx, by, lane, warp, tile);
        __syncthreads();
        float acc[SEP_PX];
        if (active) h_compute<MODE>(a, tile, lane, warp, acc);
        __syncthreads(); /* every thread is done reading the tile */
        if (active) h_stage(a, tile, lane, warp, acc);
        __syncthreads();
        h_store<Tout>(a, p, bx, by, lane, warp, tile);
        __syncthreads(); /* before the next plane's loads overwrite the tile */
    }
}

/* Vertical pass, block (bx, by), plane p; thread (lane = column, warp).
 * Tile: (V_TILE_H + 2R) input rows x V_TILE_W columns. */
MK_HD bool v_active(const sep_args &a, int bx, int by, int lane, int warp)
{
    return bx * V_TILE_W + lane < a.width && by * V_TILE_H + warp * SEP_PX < a.height;
}

/* Phase 1: load the tile (coalesced along x, rows edge-clamped). */
template <typename Tin>
MK_HD void v_load(const sep_args &a, long long p, int bx, int by, int lane, int warp, float *tile)
{
    const int R = a.radius, W = a.width, H = a.height;
    const int span = V_TILE_H + 2 * R, x = bx * V_TILE_W + lane, y0 = by * V_TILE_H;
    if (x >= W) return;
    const Tin *src = (const Tin *)a.src + p * (long long)W * H;
    for (int r = warp; r < span; r += SEP_WARPS)
        tile[r * V_TILE_W + lane] = ldf(src + (long long)clampi(y0 - R + r, 0, H - 1) * W + x);
}

/* Phase 2 (active threads): SEP_PX outputs down column `lane`, stored
 * straight away (coalesced along x across the warp). */
template <int MODE, typename Tout>
MK_HD void v_compute_store(const sep_args &a, long long p, int bx, int by, int lane, int warp,
                           const float *tile)
{
    const int W = a.width, H = a.height, x = bx * V_TILE_W + lane;
    const int y = by * V_TILE_H + warp * SEP_PX;
    float acc[SEP_PX];
    sep_window<MODE>(a, tile + warp * SEP_PX * V_TILE_W + lane, V_TILE_W, acc);
    Tout *dst = (Tout *)a.dst + p * (long long)W * H;
#pragma unroll
    for (int i = 0; i < SEP_PX; i++)
        if (y + i < H) stf(dst + (long long)(y + i) * W + x, acc[i]);
}

template <int MODE, typename Tin, typename Tout>
__global__ void __launch_bounds__(32 * SEP_WARPS) vpass_kernel(const __grid_constant__ sep_args a)
{
    extern __shared__ float tile[];
    const int lane = threadIdx.x, warp = threadIdx.y, bx = blockIdx.x, by = blockIdx.y;
    const bool active = v_active(a, bx, by, lane, warp);
    for (long long p = blockIdx.z; p < a.planes; p += gridDim.z) {
        v_load<Tin>(a, p, bx, by, lane, warp, tile);
        __syncthreads();
        if (active) v_compute_store<MODE, Tout>(a, p, bx, by, lane, warp, tile);
        __syncthreads(); /* before the next plane's loads overwrite the tile */
    }
}

/* Shared memory of a pass, in bytes. */
size_t h_smem(int R) { return sizeof(float) * H_TILE_H * (size_t)h_pitch(R); }
size_t v_smem(int R) { return sizeof(float) * V_TILE_W * (size_t)(V_TILE_H + 2 * R); }

template <typename K>
cudaError_t allow_smem(K kernel, size_t smem)
{
    if (smem <= 48 * 1024) return cudaSuccess;
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
}

unsigned grid_planes(long long planes) { return (unsigned)(planes < 65535 ? planes : 65535); }

/* One pass over a.planes planes: horizontal or vertical. */
template <int MODE, typename Tin, typename Tout>
cudaError_t launch_pass(bool horizontal, const sep_args &a, cudaStream_t s)
{
    const dim3 block(32, SEP_WARPS);
    cudaError_t err;
    if (horizontal) {
        const size_t smem = h_smem(a.radius);
        if ((err = allow_smem(hpass_kernel<MODE, Tin, Tout>, smem)) != cudaSuccess) return err;
        const dim3 grid((unsigned)((a.width + H_TILE_W - 1) / H_TILE_W),
                        (unsigned)((a.height + H_TILE_H - 1) / H_TILE_H), grid_planes(a.planes));
        hpass_kernel<MODE, Tin, Tout><<<grid, block, smem, s>>>(a);
    } else {
        const size_t smem = v_smem(a.radius);
        if ((err = allow_smem(vpass_kernel<MODE, Tin, Tout>, smem)) != cudaSuccess) return err;
        const dim3 grid((unsigned)((a.width + V_TILE_W - 1) / V_TILE_W),
                        (unsigned)((a.height + V_TILE_H - 1) / V_TILE_H), grid_planes(a.planes));
        vpass_kernel<MODE, Tin, Tout><<<grid, block, smem, s>>>(a);
    }
    return cudaGetLastError();
}

/* One erosion or dilation stage on u8 planes: in -> mid -> out. */
template <int MODE>
cudaError_t morph_stage(sep_args &a, const void *in, void *mid, void *out, cudaStream_t s)
{
    a.src = in;
    a.dst = mid;
    cudaError_t err = launch_pass<MODE, uint8_t, uint8_t>(true, a, s);
    if (err != cudaSuccess) return err;
    a.src = mid;
    a.dst = out;
    return launch_pass<MODE, uint8_t, uint8_t>(false, a, s);
}

cudaError_t morph_stage_op(bool dilate, sep_args &a, const void *in, void *mid, void *out,
                           cudaStream_t s)
{
    return dilate ? morph_stage<SEP_MAX>(a, in, mid, out, s)
                  : morph_stage<SEP_MIN>(a, in, mid, out, s);
}

} /* namespace */

/* Entry points --------------------------------------------------------------------------------- */

static pf_status begin(pf_ops *ops, cudaStream_t *s)
{
    *s = (cudaStream_t)pf_stream_native(ops->stream);
    return pf_cuda_use_stream_device(*s);
}

extern "C" pf_status pf_cuda_mask_threshold(pf_ops *ops, const pf_mk_threshold *a)
{
    cudaStream_t s;
    pf_status st = begin(ops, &s);
    if (st != PF_OK) return st;
    cudaError_t err = a->f16 ? launch_threshold<true>(a, s) : launch_threshold<false>(a, s);
    if (err != cudaSuccess)
        return pf_cuda_fail(err, "pf_ops_mask_threshold: kernel launch (%lld %s values) on %s",
                            (long long)a->n, a->f16 ? "f16" : "f32", ops->dev->spec);
    return PF_OK;
}

extern "C" pf_status pf_cuda_mask_argmax(pf_ops *ops, const pf_mk_argmax *a)
{
    cudaStream_t s;
    pf_status st = begin(ops, &s);
    if (st != PF_OK) return st;
    cudaError_t err = a->f16 ? launch_argmax<true>(a, s) : launch_argmax<false>(a, s);
    if (err != cudaSuccess)
        return pf_cuda_fail(err,
                            "pf_ops_mask_argmax: kernel launch (%lld images of %lld pixels, %d "
                            "classes, %s %s) on %s",
                            (long long)a->n, (long long)a->hw, a->c, a->nhwc ? "nhwc" : "nchw",
                            a->f16 ? "f16" : "f32", ops->dev->spec);
    return PF_OK;
}

extern "C" pf_status pf_cuda_mask_temporal(pf_ops *ops, const pf_mk_temporal *a)
{
    cudaStream_t s;
    pf_status st = begin(ops, &s);
    if (st != PF_OK) return st;
    const float beta = 1.0f - a->alpha; /* the reference's (1.0f - alpha) */
    float *cut_sum = NULL;
    /* Sum in float with atomics: a mean right at the threshold may be decided differently
     * from the CPU's double sum (ops.h says so). */
    const float cut_limit = (float)((double)a->cut * (double)a->n);
    cudaError_t err = cudaSuccess;
    if (!a->reset && a->cut > 0) {
        void *mem = NULL;
        st = pf_ops_scratch(ops, sizeof(float), &mem);
        if (st != PF_OK) return st;
        cut_sum = (float *)mem;
        err = cudaMemsetAsync(cut_sum, 0, sizeof(float), s);
        if (err == cudaSuccess)
            abs_diff_sum_kernel<<<ew_blocks(a->n), EW_THREADS, 0, s>>>(a->state, a->mask, a->n,
                                                                      cut_sum);
    }
    if (err == cudaSuccess && aligned(a->state, 16) && aligned(a->mask, 16))
        temporal_kernel<4><<<ew_blocks(a->n / 4 + 1), EW_THREADS, 0, s>>>(
            a->state, a->mask, a->n, a->alpha, beta, a->reset != 0, cut_sum, cut_limit);
    else if (err == cudaSuccess)
        temporal_kernel<1><<<ew_blocks(a->n), EW_THREADS, 0, s>>>(
            a->state, a->mask, a->n, a->alpha, beta, a->reset != 0, cut_sum, cut_limit);
    if (err == cudaSuccess) err = cudaGetLastError();
    if (err != cudaSuccess)
        return pf_cuda_fail(err, "pf_ops_mask_temporal: kernel launch (%lld values) on %s",
                            (long long)a->n, ops->dev->spec);
    return PF_OK;
}

extern "C" pf_status pf_cuda_mask_feather(pf_ops *ops, const pf_mk_sep *m)
{
    cudaStream_t s;
    pf_status st = begin(ops, &s);
    if (st != PF_OK) return st;
    const size_t plane = (size_t)m->height * (size_t)m->width;
    const int64_t group = pf_mk_plane_group(m->planes, plane * sizeof(float), SCRATCH_CAP);
    void *tmp = NULL;
    st = pf_ops_scratch(ops, (size_t)group * plane * sizeof(float), &tmp);
    if (st != PF_OK) return st;
    sep_args a;
    memset(&a, 0, sizeof a);
    a.width = m->width;
    a.height = m->height;
    a.radius = m->radius;
    memcpy(a.w, m->weights, sizeof(float) * (size_t)(2 * m->radius + 1));
    cudaError_t err = cudaSuccess;
    for (int64_t p0 = 0; p0 < m->planes && err == cudaSuccess; p0 += group) {
        const size_t off = (size_t)p0 * plane;
        a.planes = m->planes - p0 < group ? m->planes - p0 : group;
        a.src = (const float *)m->src + off;
        a.dst = tmp;
        err = launch_pass<SEP_GAUSS, float, float>(true, a, s);
        if (err != cudaSuccess) break;
        a.src = tmp;
        a.dst = (float *)m->dst + off;
        err = launch_pass<SEP_GAUSS, float, float>(false, a, s);
    }
    if (err != cudaSuccess)
        return pf_cuda_fail(err,
                            "pf_ops_mask_feather: kernel launch (%lld planes of %dx%d, radius %d) "
                            "on %s",
                            (long long)m->planes, m->width, m->height, m->radius, ops->dev->spec);
    return PF_OK;
}

extern "C" pf_status pf_cuda_mask_morph(pf_ops *ops, const pf_mk_sep *m)
{
    cudaStream_t s;
    pf_status st = begin(ops, &s);
    if (st != PF_OK) return st;
    const size_t plane = (size_t)m->height * (size_t)m->width;
    const bool two = m->op == PF_MORPH_OPEN || m->op == PF_MORPH_CLOSE;
    const int64_t group = pf_mk_plane_group(m->planes, plane * (two ? 2 : 1), SCRATCH_CAP);
    const size_t tmp_bytes = ((size_t)group * plane + 255) & ~(size_t)255;
    void *mem = NULL;
    st = pf_ops_scratch(ops, tmp_bytes * (two ? 2 : 1), &mem);
    if (st != PF_OK) return st;
    uint8_t *ta = (uint8_t *)mem, *tb = ta + tmp_bytes;
    sep_args a;
    memset(&a, 0, sizeof a);
    a.width = m->width;
    a.height = m->height;
    a.radius = m->radius;
    const bool first_max = m->op == PF_MORPH_DILATE || m->op == PF_MORPH_CLOSE;
    cudaError_t err = cudaSuccess;
    for (int64_t p0 = 0; p0 < m->planes && err == cudaSuccess; p0 += group) {
        const size_t off = (size_t)p0 * plane;
        const uint8_t *src = (const uint8_t *)m->src + off;
        uint8_t *dst = (uint8_t *)m->dst + off;
        a.planes = m->planes - p0 < group ? m->planes - p0 : group;
        if (!two) {
            err = morph_stage_op(first_max, a, src, ta, dst, s);
        } else {
            err = morph_stage_op(first_max, a, src, ta, tb, s);
            if (err == cudaSuccess) err = morph_stage_op(!first_max, a, tb, ta, dst, s);
        }
    }
    if (err != cudaSuccess)
        return pf_cuda_fail(err,
                            "pf_ops_mask_morph: kernel launch (%lld planes of %dx%d, op %d, "
                            "radius %d) on %s",
                            (long long)m->planes, m->width, m->height, m->op, m->radius,
                            ops->dev->spec);
    return PF_OK;
}
