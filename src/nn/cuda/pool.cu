/* MaxPool and AveragePool over [N, C, H, W] views of any storage order
 * (1D pools run with H = 1). One thread per output element; the window's
 * loads of neighbouring threads overlap and are served by L1. Windows of 64
 * cells or more get a warp per output instead.
 * AveragePool divides by the window cells inside the input, or with
 * count_include_pad by those inside the padded input (cells a ceil_mode
 * window reaches beyond the end padding never count). */
#include <math.h>

#include "cu_common.cuh"

using namespace pfcu;

namespace {

/* I is int when every offset fits (no 64-bit divisions); cl walks the
 * outputs channels-fastest, the storage order of NHWC values, so
 * neighbouring threads touch neighbouring addresses. */
template <typename I>
__global__ void pool_k(pf_cu_pool p, const void *in, void *out, int dt, I n, bool cl)
{
    const I OW = (I)p.ow, OH = (I)p.oh, C = (I)p.c;
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I r = i, ox, oy, c;
        if (cl) {
            c = r % C; r /= C;
            ox = r % OW; r /= OW;
            oy = r % OH; r /= OH;
        } else {
            ox = r % OW; r /= OW;
            oy = r % OH; r /= OH;
            c = r % C; r /= C;
        }
        const I b = r;
        const I y0 = oy * (I)p.sh - (I)p.ph, x0 = ox * (I)p.sw - (I)p.pw;
        const I base = b * (I)p.in_st[0] + c * (I)p.in_st[1];
        float acc = p.is_max ? -INFINITY : 0.0f;
        I cnt = 0, cnt_pad = 0;
        for (I ky = 0; ky < (I)p.kh; ky++) {
            const I y = y0 + ky * (I)p.dh;
            const bool yin = y >= 0 && y < (I)p.h;
            const bool ypad = y >= -(I)p.ph && y < (I)(p.h + p.peh);
            for (I kx = 0; kx < (I)p.kw; kx++) {
                const I x = x0 + kx * (I)p.dw;
                if (ypad && x >= -(I)p.pw && x < (I)(p.w + p.pew)) cnt_pad++;
                if (!yin || x < 0 || x >= (I)p.w) continue;
                const float v = ldf(in, dt, base + y * (I)p.in_st[2] + x * (I)p.in_st[3]);
                acc = p.is_max ? fmaxf(acc, v) : acc + v;
                cnt++;
            }
        }
        if (!p.is_max) {
            const I div = p.count_include_pad ? cnt_pad : cnt;
            acc = div ? acc / (float)div : 0.0f;
        }
        stf(out, dt, b * (I)p.out_st[0] + c * (I)p.out_st[1] + oy * (I)p.out_st[2] +
                         ox * (I)p.out_st[3], acc);
    }
}

/* Whether pool_k's offsets fit in int (strides non-negative). */
bool pool_fits32(const pf_cu_pool *p, i64 n)
{
    if (n >= (1ll << 31)) return false;
    const i64 in_d[4] = {p->n, p->c, p->h, p->w}, out_d[4] = {p->n, p->c, p->oh, p->ow};
    i64 si = 0, so = 0;
    for (int d = 0; d < 4; d++) {
        if (p->in_st[d] < 0 || p->out_st[d] < 0) return false;
        si += p->in_st[d] * (in_d[d] - 1);
        so += p->out_st[d] * (out_d[d] - 1);
    }
    const i64 reach = (p->kh + p->sh + p->ph + p->peh) * p->dh + (p->kw + p->sw + p->pw + p->pew) * p->dw;
    return si < (1ll << 30) && so < (1ll << 30) && reach < (1ll << 20);
}

/* GlobalAveragePool / GlobalMaxPool of a channels-last map: a block per
 * (image, 32 channels); lanes over channels (coalesced), the 8 warps over
 * the pixels, then a shared-memory reduction. */
__global__ void gpool_cl_k(const void *in, void *out, int dt, int C, int HW, int is_max,
                           long long in_sn, long long in_sp, long long out_sn, long long out_sc)
{
    __shared__ float sh[8][33];
    const int c = blockIdx.x * 32 + threadIdx.x;
    const int b = blockIdx.y;
    float acc = is_max ? -INFINITY : 0.0f;
    if (c < C) {
        /* Four independent chains so a thread keeps four loads in flight. */
        const i64 base = (i64)b * in_sn + c;
        const int step = blockDim.y;
        float a1 = acc, a2 = acc, a3 = acc;
        int q = threadIdx.y;
        for (; q + 3 * step < HW; q += 4 * step) {
            const float v0 = ldf(in, dt, base + (i64)q * in_sp);
            const float v1 = ldf(in, dt, base + (i64)(q + step) * in_sp);
            const float v2 = ldf(in, dt, base + (i64)(q + 2 * step) * in_sp);
            const float v3 = ldf(in, dt, base + (i64)(q + 3 * step) * in_sp);
            acc = is_max ? fmaxf(acc, v0) : acc + v0;
            a1 = is_max ? fmaxf(a1, v1) : a1 + v1;
            a2 = is_max ? fmaxf(a2, v2) : a2 + v2;
            a3 = is_max ? fmaxf(a3, v3) : a3 + v3;
        }
        for (; q < HW; q += step) {
            const float v = ldf(in, dt, base + (i64)q * in_sp);
            acc = is_max ? fmaxf(acc, v) : acc + v;
        }
        acc = is_max ? fmaxf(fmaxf(acc, a1), fmaxf(a2, a3)) : (acc + a1) + (a2 + a3);
    }
    sh[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y || c >= C) return;
    for (int k = 1; k < (int)blockDim.y; k++)
        acc = is_max ? fmaxf(acc, sh[k][threadIdx.x]) : acc + sh[k][threadIdx.x];
    if (!is_max) acc /= (float)HW;
    stf(out, dt, (i64)b * out_sn + (i64)c * out_sc, acc);
}

/* The same split over `S` slices of the pixels, for maps with few channel
 * blocks (SE blocks at batch 1: 30 blocks would leave most SMs idle): block
 * (channel group, image, slice) writes its partial (sum or max, f32) to
 * part[(b * S + s) * C + c]; gpool_fin_k combines the S partials. */
__global__ void gpool_part_k(const void *in, float *part, int dt, int C, int HW, int S, int is_max,
                             long long in_sn, long long in_sp)
{
    __shared__ float sh[8][33];
    const int c = blockIdx.x * 32 + threadIdx.x;
    const int b = blockIdx.y, sl = blockIdx.z;
    const int q0 = (int)((long long)HW * sl / S), q1 = (int)((long long)HW * (sl + 1) / S);
    float acc = is_max ? -INFINITY : 0.0f;
    if (c < C) {
        const i64 base = (i64)b * in_sn + c;
        for (int q = q0 + (int)threadIdx.y; q < q1; q += (int)blockDim.y) {
            const float v = ldf(in, dt, base + (i64)q * in_sp);
            acc = is_max ? fmaxf(acc, v) : acc + v;
        }
    }
    sh[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y || c >= C) return;
    for (int k = 1; k < (int)blockDim.y; k++)
        acc = is_max ? fmaxf(acc, sh[k][threadIdx.x]) : acc + sh[k][threadIdx.x];
    part[((i64)b * S + sl) * C + c] = acc;
}

__global__ void gpool_fin_k(const float *part, void *out, int dt, int n, int C, int HW, int S,
                            int is_max, long long out_sn, long long out_sc)
{
    const i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (i64)n * C) return;
    const int b = (int)(i / C), c = (int)(i % C);
    float acc = part[(i64)b * S * C + c];
    for (int sl = 1; sl < S; sl++) {
        const float v = part[((i64)b * S + sl) * C + c];
        acc = is_max ? fmaxf(acc, v) : acc + v;
    }
    if (!is_max) acc /= (float)HW;
    stf(out, dt, (i64)b * out_sn + (i64)c * out_sc, acc);
}

/* Large windows (SE blocks pool a whole 64x64 map into one value): one warp
 * per output, lanes striding over the window, then a shuffle reduction. */
__global__ void pool_warp_k(pf_cu_pool p, const void *in, void *out, int dt, i64 n)
{
    const i64 i = (i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (i >= n) return;
    i64 r = i;
    const i64 ox = r % p.ow; r /= p.ow;
    const i64 oy = r % p.oh; r /= p.oh;
    const i64 c = r % p.c;
    const i64 b = r / p.c;
    const i64 y0 = oy * p.sh - p.ph, x0 = ox * p.sw - p.pw;
    const i64 base = b * p.in_st[0] + c * p.in_st[1];
    float acc = p.is_max ? -INFINITY : 0.0f;
    float cnt = 0.0f, cnt_pad = 0.0f;
    const i64 win = p.kh * p.kw;
    for (i64 k = lane; k < win; k += 32) {
        const i64 ky = k / p.kw, kx = k - ky * p.kw;
        const i64 y = y0 + ky * p.dh, x = x0 + kx * p.dw;
        if (y >= -p.ph && y < p.h + p.peh && x >= -p.pw && x < p.w + p.pew) cnt_pad += 1.0f;
        if (y < 0 || y >= p.h || x < 0 || x >= p.w) continue;
        const float v = ldf(in, dt, base + y * p.in_st[2] + x * p.in_st[3]);
        acc = p.is_max ? fmaxf(acc, v) : acc + v;
        cnt += 1.0f;
    }
    for (int o = 16; o; o >>= 1) {
        const float v = __shfl_xor_sync(0xffffffffu, acc, o);
        acc = p.is_max ? fmaxf(acc, v) : acc + v;
        cnt += __shfl_xor_sync(0xffffffffu, cnt, o);
        cnt_pad += __shfl_xor_sync(0xffffffffu, cnt_pad, o);
    }
    if (lane) return;
    if (!p.is_max) {
        const float div = p.count_include_pad ? cnt_pad : cnt;
        acc = div > 0.0f ? acc / div : 0.0f;
    }
    stf(out, dt, b * p.out_st[0] + c * p.out_st[1] + oy * p.out_st[2] + ox * p.out_st[3], acc);
}

} // namespace

extern "C" int pf_cu_launch_pool(const pf_cu_pool *p, const void *in, void *out, int dt,
                                 void *stream)
{
    const i64 n = p->n * p->c * p->oh * p->ow;
    if (n == 0) return 0;
    if (p->kh * p->kw >= 64) {
        const i64 blocks = (n + 7) / 8;
        if (blocks > 0x7fffffffll) return (int)cudaErrorInvalidValue;
        pool_warp_k<<<(unsigned)blocks, 256, 0, (cudaStream_t)stream>>>(*p, in, out, dt, n);
        return (int)cudaGetLastError();
    }
    const bool cl = p->in_st[1] == 1 && p->out_st[1] == 1 && p->c > 1;
    if (pool_fits32(p, n))
        pool_k<int><<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(*p, in, out, dt, (int)n,
                                                                        cl);
    else
        pool_k<i64><<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(*p, in, out, dt, n, cl);
    return (int)cudaGetLastError();
}

extern "C" int pf_cu_launch_gpool_cl(const void *in, void *out, int dt, int64_t n, int64_t c,
                                     int64_t hw, int is_max, int64_t in_sn, int64_t in_sp,
                                     int64_t out_sn, int64_t out_sc, void *stream)
{
    if (n == 0 || c == 0) return 0;
    if (hw == 0 || n > 65535 || c >= (1ll << 31) || hw >= (1ll << 31))
        return (int)cudaErrorInvalidValue;
    dim3 grid((unsigned)((c + 31) / 32), (unsigned)n), block(32, 8);
    gpool_cl_k<<<grid, block, 0, (cudaStream_t)stream>>>(in, out, dt, (int)c, (int)hw, is_max,
                                                         in_sn, in_sp, out_sn, out_sc);
    return (int)cudaGetLastError();
}

extern "C" int pf_cu_launch_gpool_split(const void *in, void *out, float *part, int dt, int64_t n,
                                        int64_t c, int64_t hw, int64_t slices, int is_max,
                                        int64_t in_sn, int64_t in_sp, int64_t out_sn,
                                        int64_t out_sc, void *stream)
{
    if (hw == 0 || n > 65535 || slices < 1 || slices > 65535 || c >= (1ll << 31) ||
        hw >= (1ll << 31))
        return (int)cudaErrorInvalidValue;
    dim3 grid((unsigned)((c + 31) / 32), (unsigned)n, (unsigned)slices), block(32, 8);
    gpool_part_k<<<grid, block, 0, (cudaStream_t)stream>>>(in, part, dt, (int)c, (int)hw,
                                                           (int)slices, is_max, in_sn, in_sp);
    const int64_t total = n * c;
    gpool_fin_k<<<(unsigned)((total + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
        part, out, dt, (int)n, (int)c, (int)hw, (int)slices, is_max, out_sn, out_sc);
    return (int)cudaGetLastError();
}
