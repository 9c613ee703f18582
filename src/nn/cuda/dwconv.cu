/* Depthwise convolution (group = in channels = out channels) on
 * channels-last activations, with bias and the fused activation.
 *
 * cuDNN's grouped NHWC fp16 paths ran these 30-90x below memory bandwidth
 * (0.9 ms for one 5x5 layer of LRASPP at batch 8), so pixflow runs them
 * itself: one thread per output element, channels fastest, so a warp reads
 * 32 neighbouring channels of one input pixel per tap (coalesced) and the
 * taps of neighbouring pixels hit L1/L2. Weights are [kh, kw, C] (the
 * PF_CUX_FILTER_RSK form), read coalesced across the warp as well. Math in
 * f32, 32-bit index math (the launcher checks the spans). */
#include "cu_common.cuh"

using namespace pfcu;

namespace {

/* K = 3 or 5: the window is unrolled, so each thread issues all its loads
 * before the first FMA waits (rolled loops left the kernel latency-bound:
 * ~40 us a layer at batch 1); K = 0 takes kh/kw from p. */
template <typename T, int K>
__global__ void dw_k(pf_cu_dw p, const T *__restrict__ x, const T *__restrict__ w,
                     const T *__restrict__ bias, T *__restrict__ y, int n)
{
    const int C = (int)p.c, OW = (int)p.ow, OH = (int)p.oh, H = (int)p.h, W = (int)p.w;
    const int kh = K ? K : p.kh, kw = K ? K : p.kw;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int r = i;
        const int c = r % C;
        r /= C;
        const int ox = r % OW;
        r /= OW;
        const int oy = r % OH;
        const int b = r / OH;
        const int y0 = oy * p.sh - p.ph, x0 = ox * p.sw - p.pw;
        const T *xb = x + b * (int)p.in_st[0] + c;
        float acc = bias ? (float)bias[c] : 0.0f;
#pragma unroll
        for (int ky = 0; ky < kh; ky++) {
            const int iy = y0 + ky * p.dh;
            if (iy < 0 || iy >= H) continue;
            const T *xr = xb + iy * (int)p.in_st[2];
            const T *wr = w + ky * kw * C + c;
#pragma unroll
            for (int kx = 0; kx < kw; kx++) {
                const int ix = x0 + kx * p.dw;
                if (ix < 0 || ix >= W) continue;
                acc = fmaf((float)xr[ix * (int)p.in_st[3]], (float)wr[kx * C], acc);
            }
        }
        y[b * (int)p.out_st[0] + c + oy * (int)p.out_st[2] + ox * (int)p.out_st[3]] =
            (T)act_f(p.act, acc, p.act_a, p.act_b);
    }
}

/* F16 with two channels a thread (C and the pixel strides even): half the
 * threads and index math, 4-byte accesses; per channel the same FMA order
 * as dw_k, so results are identical. Strides below are in half2 units. */
template <int K>
__global__ void dw_h2_k(pf_cu_dw p, const __half2 *__restrict__ x, const __half2 *__restrict__ w,
                        const __half2 *__restrict__ bias, __half2 *__restrict__ y, int n)
{
    const int C2 = (int)p.c / 2, OW = (int)p.ow, OH = (int)p.oh, H = (int)p.h, W = (int)p.w;
    const int kh = K ? K : p.kh, kw = K ? K : p.kw;
    const int s0 = (int)p.in_st[0] / 2, s2 = (int)p.in_st[2] / 2, s3 = (int)p.in_st[3] / 2;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int r = i;
        const int c = r % C2;
        r /= C2;
        const int ox = r % OW;
        r /= OW;
        const int oy = r % OH;
        const int b = r / OH;
        const int y0 = oy * p.sh - p.ph, x0 = ox * p.sw - p.pw;
        const __half2 *xb = x + b * s0 + c;
        float2 acc = bias ? __half22float2(bias[c]) : make_float2(0.0f, 0.0f);
#pragma unroll
        for (int ky = 0; ky < kh; ky++) {
            const int iy = y0 + ky * p.dh;
            if (iy < 0 || iy >= H) continue;
            const __half2 *xr = xb + iy * s2;
            const __half2 *wr = w + ky * kw * C2 + c;
#pragma unroll
            for (int kx = 0; kx < kw; kx++) {
                const int ix = x0 + kx * p.dw;
                if (ix < 0 || ix >= W) continue;
                const float2 v = __half22float2(xr[ix * s3]), q = __half22float2(wr[kx * C2]);
                acc.x = fmaf(v.x, q.x, acc.x);
                acc.y = fmaf(v.y, q.y, acc.y);
            }
        }
        y[(b * (int)p.out_st[0] + oy * (int)p.out_st[2] + ox * (int)p.out_st[3]) / 2 + c] =
            __floats2half2_rn(act_f(p.act, acc.x, p.act_a, p.act_b),
                              act_f(p.act, acc.y, p.act_a, p.act_b));
    }
}

bool al4(const void *q) { return ((uintptr_t)q & 3) == 0; }

template <typename T>
void launch_t(const pf_cu_dw *p, const T *x, const T *w, const T *b, T *y, int n, cudaStream_t s)
{
    const unsigned g = grid_for(n, 256);
    if (p->kh == 3 && p->kw == 3) dw_k<T, 3><<<g, 256, 0, s>>>(*p, x, w, b, y, n);
    else if (p->kh == 5 && p->kw == 5) dw_k<T, 5><<<g, 256, 0, s>>>(*p, x, w, b, y, n);
    else dw_k<T, 0><<<g, 256, 0, s>>>(*p, x, w, b, y, n);
}

} // namespace

extern "C" int pf_cu_dw_ok(const pf_cu_dw *p)
{
    if (p->in_st[1] != 1 || p->out_st[1] != 1) return 0;
    const long long in_d[4] = {p->n, p->c, p->h, p->w}, out_d[4] = {p->n, p->c, p->oh, p->ow};
    long long si = 0, so = 0;
    for (int d = 0; d < 4; d++) {
        if (p->in_st[d] < 0 || p->out_st[d] < 0 || in_d[d] < 1 || out_d[d] < 1) return 0;
        si += p->in_st[d] * (in_d[d] - 1);
        so += p->out_st[d] * (out_d[d] - 1);
    }
    if (p->n * p->c * p->oh * p->ow >= (1ll << 31)) return 0;
    return si < (1ll << 30) && so < (1ll << 30) && p->c * p->kh * p->kw < (1ll << 30) &&
           p->kh > 0 && p->kw > 0 && p->sh > 0 && p->sw > 0 && p->dh > 0 && p->dw > 0;
}

extern "C" int pf_cu_launch_dwconv(const pf_cu_dw *p, const void *x, const void *w,
                                   const void *bias, void *y, int dt, void *stream)
{
    const long long n = p->n * p->c * p->oh * p->ow;
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    const bool pairs = dt == PF_IR_F16 && p->c % 2 == 0 && p->in_st[0] % 2 == 0 &&
                       p->in_st[2] % 2 == 0 && p->in_st[3] % 2 == 0 && p->out_st[0] % 2 == 0 &&
                       p->out_st[2] % 2 == 0 && p->out_st[3] % 2 == 0 && al4(x) && al4(w) &&
                       al4(y) && (!bias || al4(bias));
    if (pairs) {
        const int n2 = (int)(n / 2);
        const unsigned g = grid_for(n2, 256);
        const __half2 *xh = (const __half2 *)x, *wh = (const __half2 *)w, *bh = (const __half2 *)bias;
        __half2 *yh = (__half2 *)y;
        if (p->kh == 3 && p->kw == 3) dw_h2_k<3><<<g, 256, 0, s>>>(*p, xh, wh, bh, yh, n2);
        else if (p->kh == 5 && p->kw == 5) dw_h2_k<5><<<g, 256, 0, s>>>(*p, xh, wh, bh, yh, n2);
        else dw_h2_k<0><<<g, 256, 0, s>>>(*p, xh, wh, bh, yh, n2);
    } else if (dt == PF_IR_F16) {
        launch_t<__half>(p, (const __half *)x, (const __half *)w, (const __half *)bias,
                         (__half *)y, (int)n, s);
    } else if (dt == PF_IR_F32) {
        launch_t<float>(p, (const float *)x, (const float *)w, (const float *)bias, (float *)y,
                        (int)n, s);
    } else {
        return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}
