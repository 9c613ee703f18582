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

__global__ void pool_k(pf_cu_pool p, const void *in, void *out, int dt, i64 n)
{
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        i64 r = i;
        const i64 ox = r % p.ow; r /= p.ow;
        const i64 oy = r % p.oh; r /= p.oh;
        const i64 c = r % p.c;
        const i64 b = r / p.c;
        const i64 y0 = oy * p.sh - p.ph, x0 = ox * p.sw - p.pw;
        const i64 base = b * p.in_st[0] + c * p.in_st[1];
        float acc = p.is_max ? -INFINITY : 0.0f;
        i64 cnt = 0, cnt_pad = 0;
        for (i64 ky = 0; ky < p.kh; ky++) {
            const i64 y = y0 + ky * p.dh;
            const bool yin = y >= 0 && y < p.h;
            const bool ypad = y >= -p.ph && y < p.h + p.peh;
            for (i64 kx = 0; kx < p.kw; kx++) {
                const i64 x = x0 + kx * p.dw;
                if (ypad && x >= -p.pw && x < p.w + p.pew) cnt_pad++;
                if (!yin || x < 0 || x >= p.w) continue;
                const float v = ldf(in, dt, base + y * p.in_st[2] + x * p.in_st[3]);
                acc = p.is_max ? fmaxf(acc, v) : acc + v;
                cnt++;
            }
        }
        if (!p.is_max) {
            const i64 div = p.count_include_pad ? cnt_pad : cnt;
            acc = div ? acc / (float)div : 0.0f;
        }
        stf(out, dt, b * p.out_st[0] + c * p.out_st[1] + oy * p.out_st[2] + ox * p.out_st[3], acc);
    }
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
    pool_k<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(*p, in, out, dt, n);
    return (int)cudaGetLastError();
}
