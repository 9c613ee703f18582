/* FP16 convolution as an implicit GEMM on tensor cores, channels-last.
 *
 * Why: cuDNN's legacy-API algorithms run the 1x1 and small-map convs of
 * MobileNet/ResNet-style models at batch 1 at 10-30x their arithmetic and
 * memory cost (LRASPP at 512x512: 28 convs at ~32 us each, where a GEMM
 * needs 2-5 us), and cannot take hard-swish or an aliased residual in their
 * epilogue. This kernel computes
 *   y[b, oy, ox, n] = r_act(act(sum_k A[m, k] * W[n, k] + bias[n]) + z[...])
 * with M = N*OH*OW output pixels (m), N = output channels (n) and
 * K = KH*KW*C taps (k = (ky*KW + kx)*C + c, the KRSC filter order), A being
 * the input gathered on the fly (im2col is never written). Zero padding,
 * stride and dilation are bounds checks on the gather.
 *
 * Structure (one CTA = one BM x BN output tile): BK = 32 slices of K move
 * global -> shared with cp.async (16-byte chunks of 8 channels, zero-filled
 * out of bounds), ST stages deep; warps take WM x WN sub-tiles and multiply
 * with ldmatrix + mma.sync m16n8k16 (f16 in, f32 accumulate). Shared rows are
 * BK + 8 halves (80 bytes) so the 8 row addresses of an ldmatrix fall in
 * distinct banks. Split-K (grid.z) gives small-M problems more CTAs: each
 * split writes f32 partials and a second kernel sums them and applies the
 * epilogue. Configs and split counts are timed per conv at plan time
 * (pf_cu_ig_tune). Requirements (pf_cu_ig_ok): C % 8 == 0, channel stride 1,
 * pixel/row/image strides multiples of 8, x and w 16-byte aligned, 32-bit
 * extents. */
#include "cu_common.cuh"
#include "cu_mma.cuh"

using namespace pfcu;

namespace {

constexpr int BK = 32;
constexpr int LDS = BK + 8;

__device__ __forceinline__ void mma16816(float c[4], const unsigned a[4], const unsigned b[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* Output element offsets of pixel m (image, row, column strides st). */
__device__ __forceinline__ int pix_off(const pf_cu_ig &p, int m, const long long *st)
{
    const int ox = m % p.ow, t = m / p.ow;
    const int oy = t % p.oh, b = t / p.oh;
    return b * (int)st[0] + oy * (int)st[2] + ox * (int)st[3];
}

/* The transcendental activations out of line: inlined into each of the
 * unrolled epilogue's 32-64 copies they made the kernel ~14k PTX lines, and
 * instruction-cache misses made the epilogue cost ~10 ns per output. */
__device__ __noinline__ float act_slow(int act, float v, float a, float b)
{
    return act_f(act, v, a, b);
}

__device__ __forceinline__ void act8(float (&v)[8], int act, float a, float b)
{
    switch (act) {
    case PF_IR_ACT_NONE: break;
#define PF_IG_8(expr) _Pragma("unroll") for (int e = 0; e < 8; e++) { float x = v[e]; v[e] = (expr); }
    case PF_IR_ACT_RELU: PF_IG_8(fmaxf(x, 0.0f)); break;
    case PF_IR_ACT_CLIP: PF_IG_8(fminf(fmaxf(x, a), b)); break;
    case PF_IR_ACT_HARD_SWISH: PF_IG_8(x * fmaxf(0.0f, fminf(1.0f, x / 6.0f + 0.5f))); break;
    default: PF_IG_8(act_slow(act, x, a, b)); break;
#undef PF_IG_8
    }
}

/* v += 8 halves from 16-byte aligned src. */
__device__ __forceinline__ void add8(float (&v)[8], const __half *src)
{
    const uint4 raw = *(const uint4 *)src;
    const __half2 *h2 = (const __half2 *)&raw;
#pragma unroll
    for (int e = 0; e < 4; e++) {
        const float2 f = __half22float2(h2[e]);
        v[2 * e] += f.x, v[2 * e + 1] += f.y;
    }
}

/* The epilogue on 8 consecutive channels n..n+7 of one pixel (N % 8 == 0,
 * 16-byte aligned rows): bias, act, + z, r_act, one 16-byte store. */
__device__ __forceinline__ void finish8(const pf_cu_ig &p, float (&v)[8], int n,
                                        const __half *__restrict__ bias, const __half *zp,
                                        __half *yp)
{
    if (bias) add8(v, bias + n);
    act8(v, p.act, p.act_a, p.act_b);
    if (zp) {
        add8(v, zp + n);
        act8(v, p.r_act, p.r_act_a, p.r_act_b);
    }
    uint4 out;
    __half2 *o2 = (__half2 *)&out;
#pragma unroll
    for (int e = 0; e < 4; e++) o2[e] = __floats2half2_rn(v[2 * e], v[2 * e + 1]);
    *(uint4 *)(yp + n) = out;
}

/* act over every accumulator, the switch outside the loops. */
template <int MI, int NI>
__device__ __forceinline__ void apply_act(float (&acc)[MI][NI][4], int act, float a, float b)
{
#define PF_IG_ALL(expr) \
    _Pragma("unroll") for (int i = 0; i < MI; i++) \
    _Pragma("unroll") for (int j = 0; j < NI; j++) \
    _Pragma("unroll") for (int e = 0; e < 4; e++) { float &v = acc[i][j][e]; v = (expr); }
    switch (act) {
    case PF_IR_ACT_NONE: break;
    case PF_IR_ACT_RELU: PF_IG_ALL(fmaxf(v, 0.0f)); break;
    case PF_IR_ACT_CLIP: PF_IG_ALL(fminf(fmaxf(v, a), b)); break;
    case PF_IR_ACT_HARD_SWISH: PF_IG_ALL(v * fmaxf(0.0f, fminf(1.0f, v / 6.0f + 0.5f))); break;
    default: PF_IG_ALL(act_slow(act, v, a, b)); break;
    }
#undef PF_IG_ALL
}

template <int BM, int BN, int WM, int WN, int ST>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
    ig_k(pf_cu_ig p, const __half *__restrict__ x, const __half *__restrict__ w,
         const __half *__restrict__ bias, const __half *z, __half *y, float *part)
{
    constexpr int WARPS_N = BN / WN, T = (BM / WM) * WARPS_N * 32;
    constexpr int MI = WM / 16, NI = WN / 8;
    constexpr int A_IT = BM * 4 / T, B_IT = BN * 4 / T;
    static_assert(A_IT >= 1 && B_IT >= 1 && BM * 4 % T == 0 && BN * 4 % T == 0, "tile");
    static_assert(NI % 2 == 0, "B fragments load in pairs");
    extern __shared__ __align__(16) unsigned char smraw[];
    __half *sA = (__half *)smraw;
    __half *sB = sA + ST * BM * LDS;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int M = p.m, N = p.k, K = p.kk, C = p.c, H = p.h, W = p.w;
    const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
    const int kb = blockIdx.z * p.k_per;
    const int ke = min(K, kb + p.k_per);
    const int ntiles = (ke - kb + BK - 1) / BK;
    const int s2 = (int)p.in_st[2], s3 = (int)p.in_st[3];

    /* This thread's A rows (output pixels) and B rows (output channels);
     * its 16-byte chunk within a BK slice is the same for all of them. */
    const int kc = tid & 3;
    int a_img[A_IT], a_iy[A_IT], a_ix[A_IT];
#pragma unroll
    for (int i = 0; i < A_IT; i++) {
        const int m = m0 + (tid >> 2) + i * (T / 4);
        if (m < M) {
            const int ox = m % p.ow, t = m / p.ow;
            const int oy = t % p.oh, b = t / p.oh;
            a_img[i] = b * (int)p.in_st[0];
            a_iy[i] = oy * p.sh - p.ph;
            a_ix[i] = ox * p.sw - p.pw;
        } else {
            a_img[i] = 0;
            a_iy[i] = -(1 << 29); /* fails every bounds check below */
            a_ix[i] = 0;
        }
    }
    int b_off[B_IT];
#pragma unroll
    for (int i = 0; i < B_IT; i++) {
        const int n = n0 + (tid >> 2) + i * (T / 4);
        b_off[i] = n < N ? n * K : -1;
    }
    /* k of this thread's chunk, as (ky, kx, c), advanced BK at a time. */
    int kg = kb + kc * 8, c, kx, ky;
    {
        const int tap = kg / C;
        c = kg - tap * C;
        ky = tap / p.kw;
        kx = tap - ky * p.kw;
    }

    auto load = [&](int stage) {
        const bool kin = kg < ke;
        const int dy = ky * p.dh, dx = kx * p.dw;
#pragma unroll
        for (int i = 0; i < A_IT; i++) {
            const int row = (tid >> 2) + i * (T / 4);
            const int iy = a_iy[i] + dy, ix = a_ix[i] + dx;
            const bool ok = kin && (unsigned)iy < (unsigned)H && (unsigned)ix < (unsigned)W;
            const __half *src = ok ? x + a_img[i] + iy * s2 + ix * s3 + c : x;
            cp16(su32(sA + (stage * BM + row) * LDS + kc * 8), src, ok);
        }
#pragma unroll
        for (int i = 0; i < B_IT; i++) {
            const int row = (tid >> 2) + i * (T / 4);
            const bool ok = kin && b_off[i] >= 0;
            const __half *src = ok ? w + b_off[i] + kg : w;
            cp16(su32(sB + (stage * BN + row) * LDS + kc * 8), src, ok);
        }
        kg += BK;
        c += BK;
        while (c >= C) {
            c -= C;
            if (++kx == p.kw) {
                kx = 0;
                ++ky;
            }
        }
    };

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;

#pragma unroll
    for (int s = 0; s < ST - 1; s++) {
        if (s < ntiles) load(s);
        cp_commit();
    }
    for (int t = 0; t < ntiles; t++) {
        cp_wait<ST - 2>();
        __syncthreads();
        const int nt = t + ST - 1;
        if (nt < ntiles) load(nt % ST);
        cp_commit();
        const __half *a = sA + (t % ST) * BM * LDS;
        const __half *b = sB + (t % ST) * BN * LDS;
#pragma unroll
        for (int ks = 0; ks < BK / 16; ks++) {
            unsigned af[MI][4], bf[NI][2];
#pragma unroll
            for (int i = 0; i < MI; i++)
                ldm4(af[i], su32(a + (wm * WM + i * 16 + (lane & 15)) * LDS + ks * 16 +
                                 (lane >> 4) * 8));
#pragma unroll
            for (int j = 0; j < NI; j += 2) {
                unsigned r[4];
                ldm4(r, su32(b + (wn * WN + j * 8 + (lane & 7) + ((lane >> 4) << 3)) * LDS +
                             ks * 16 + ((lane >> 3) & 1) * 8));
                bf[j][0] = r[0];
                bf[j][1] = r[1];
                bf[j + 1][0] = r[2];
                bf[j + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < MI; i++)
#pragma unroll
                for (int j = 0; j < NI; j++) mma16816(acc[i][j], af[i], bf[j]);
        }
    }
    cp_wait<0>();

    /* Accumulator (i, j, e): row g (+8 for e >= 2), columns q, q + 1.
     * each(f) calls f(i, h, m, j, n) for the fragments inside the output
     * (row m = pixel, n = the first of the fragment's two channels). */
    const int g = lane >> 2, q = (lane & 3) * 2;
    auto each = [&](auto &&f) {
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int m = m0 + wm * WM + i * 16 + g + h * 8;
                if (m >= M) continue;
#pragma unroll
                for (int j = 0; j < NI; j++) {
                    const int n = n0 + wn * WN + j * 8 + q;
                    if (n < N) f(i, h, m, j, n);
                }
            }
    };
    if (part) {
        float *pp = part + (size_t)blockIdx.z * (size_t)M * N;
        each([&](int i, int h, int m, int j, int n) {
            pp[m * N + n] = acc[i][j][2 * h];
            if (n + 1 < N) pp[m * N + n + 1] = acc[i][j][2 * h + 1];
        });
        return;
    }
    if (p.vec) {
        /* Staged: the f32 tile goes to shared memory (the pipeline buffers
         * are free now), then each thread finishes 8 channels of one pixel
         * with 16-byte loads of bias and z and a 16-byte store: whole
         * 128-byte lines instead of the fragments' 16 bytes per pixel. */
        constexpr int LDC = BN + 4;
        float *sC = (float *)smraw;
        __syncthreads();
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
            for (int h = 0; h < 2; h++)
#pragma unroll
                for (int j = 0; j < NI; j++)
                    *(float2 *)(sC + (wm * WM + i * 16 + g + h * 8) * LDC + wn * WN + j * 8 + q) =
                        make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
        __syncthreads();
        constexpr int CPR = BN / 8;
        for (int idx = tid; idx < BM * CPR; idx += T) {
            const int r = idx / CPR, cc = idx % CPR;
            const int m = m0 + r, n = n0 + cc * 8;
            if (m >= M || n >= N) continue;
            const float4 lo = *(const float4 *)(sC + r * LDC + cc * 8);
            const float4 hi = *(const float4 *)(sC + r * LDC + cc * 8 + 4);
            float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
            finish8(p, v, n, bias, z ? z + pix_off(p, m, p.z_st) : NULL,
                    y + pix_off(p, m, p.out_st));
        }
        return;
    }
    /* Epilogue in passes over all accumulators, each activation switch
     * outside its loop: per-element switches in the unrolled loops made
     * the kernel too big for the instruction cache. */
    if (bias) {
#pragma unroll
        for (int j = 0; j < NI; j++) {
            const int n = n0 + wn * WN + j * 8 + q;
            const float b0 = n < N ? __half2float(bias[n]) : 0.0f;
            const float b1 = n + 1 < N ? __half2float(bias[n + 1]) : 0.0f;
#pragma unroll
            for (int i = 0; i < MI; i++)
#pragma unroll
                for (int e = 0; e < 4; e++) acc[i][j][e] += e & 1 ? b1 : b0;
        }
    }
    apply_act<MI, NI>(acc, p.act, p.act_a, p.act_b);
    if (z) {
        each([&](int i, int h, int m, int j, int n) {
            const int zo = pix_off(p, m, p.z_st);
            acc[i][j][2 * h] += __half2float(z[zo + n]);
            if (n + 1 < N) acc[i][j][2 * h + 1] += __half2float(z[zo + n + 1]);
        });
        apply_act<MI, NI>(acc, p.r_act, p.r_act_a, p.r_act_b);
    }
    each([&](int i, int h, int m, int j, int n) {
        const int yo = pix_off(p, m, p.out_st);
        const float v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
        if (p.pairs && n + 1 < N) {
            *(__half2 *)(y + yo + n) = __floats2half2_rn(v0, v1);
        } else {
            y[yo + n] = __float2half_rn(v0);
            if (n + 1 < N) y[yo + n + 1] = __float2half_rn(v1);
        }
    });
}

/* The epilogue over the whole output, 8 channels a thread when p.vec, else
 * one; 32-bit indices (M*N < 2^30). Its input is the sum of the split-K
 * partials (part != NULL), or else y itself: a finished conv result another
 * path wrote, transformed in place (each thread reads its elements before
 * writing them). */
__global__ void ig_finish(pf_cu_ig p, const float *__restrict__ part,
                          const __half *__restrict__ bias, const __half *z, __half *y)
{
    const int M = p.m, N = p.k, total = M * N;
    const int step = p.vec ? 8 : 1;
    for (int i = (blockIdx.x * blockDim.x + threadIdx.x) * step; i < total;
         i += gridDim.x * blockDim.x * step) {
        const int m = i / N, n = i - m * N;
        const int zo = z ? pix_off(p, m, p.z_st) : 0, yo = pix_off(p, m, p.out_st);
        if (p.vec) {
            float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            if (!part) add8(v, y + yo + n);
            for (int k = 0; part && k < p.splits; k++) {
                const float4 a = *(const float4 *)(part + (size_t)k * total + i);
                const float4 b = *(const float4 *)(part + (size_t)k * total + i + 4);
                v[0] += a.x, v[1] += a.y, v[2] += a.z, v[3] += a.w;
                v[4] += b.x, v[5] += b.y, v[6] += b.z, v[7] += b.w;
            }
            finish8(p, v, n, bias, z ? z + zo : NULL, y + yo);
        } else {
            float v = part ? 0.0f : __half2float(y[yo + n]);
            for (int k = 0; part && k < p.splits; k++) v += part[(size_t)k * total + i];
            if (bias) v += __half2float(bias[n]);
            v = act_slow(p.act, v, p.act_a, p.act_b);
            if (z) v = act_slow(p.r_act, v + __half2float(z[zo + n]), p.r_act_a, p.r_act_b);
            y[yo + n] = __float2half_rn(v);
        }
    }
}

typedef void (*ig_fn)(pf_cu_ig, const __half *, const __half *, const __half *, const __half *,
                      __half *, float *);

struct cfg {
    ig_fn fn;
    int bm, bn, threads, smem;
};

template <int BM, int BN, int WM, int WN, int ST> cfg make()
{
    const int pipe = ST * (BM + BN) * LDS * 2, stage = BM * (BN + 4) * 4;
    return cfg{ig_k<BM, BN, WM, WN, ST>, BM, BN, (BM / WM) * (BN / WN) * 32,
               pipe > stage ? pipe : stage};
}

const cfg &config(int i)
{
    static const cfg t[PF_CU_IG_CONFIGS] = {
        make<128, 128, 64, 32, 3>(), /* large maps */
        make<128, 64, 64, 32, 3>(),
        make<64, 128, 32, 32, 3>(),
        make<64, 64, 32, 32, 4>(),   /* small maps, few channels */
    };
    return t[i];
}

bool a16(const void *q) { return ((uintptr_t)q & 15) == 0; }
bool a4(const void *q) { return ((uintptr_t)q & 3) == 0; }

long long span(const long long st[4], long long n, long long h, long long w, long long c)
{
    return st[0] * (n - 1) + st[1] * (c - 1) + st[2] * (h - 1) + st[3] * (w - 1) + 1;
}

/* Whether 8-channel vector epilogues fit y, bias and z (dims, strides,
 * 16-byte alignment). */
int vec_ok(const pf_cu_ig &p, const void *bias, const void *z, const void *y)
{
    return p.k % 8 == 0 && p.out_st[0] % 8 == 0 && p.out_st[2] % 8 == 0 &&
           p.out_st[3] % 8 == 0 && a16(y) && (!bias || a16(bias)) &&
           (!z || (a16(z) && p.z_st[0] % 8 == 0 && p.z_st[2] % 8 == 0 && p.z_st[3] % 8 == 0));
}

} // namespace

extern "C" int pf_cu_ig_ok(const pf_cu_ig *p)
{
    if (p->n < 1 || p->c < 8 || p->c % 8 || p->k < 1 || p->h < 1 || p->w < 1 || p->oh < 1 ||
        p->ow < 1 || p->kh < 1 || p->kw < 1 || p->sh < 1 || p->sw < 1 || p->dh < 1 ||
        p->dw < 1 || p->ph < 0 || p->pw < 0)
        return 0;
    if (p->in_st[1] != 1 || p->out_st[1] != 1 || p->z_st[1] != 1) return 0;
    for (int d = 0; d < 4; d++)
        if (p->in_st[d] < 0 || p->out_st[d] < 0 || p->z_st[d] < 0) return 0;
    if (p->in_st[0] % 8 || p->in_st[2] % 8 || p->in_st[3] % 8) return 0;
    const long long lim = 1ll << 30;
    const long long m = (long long)p->n * p->oh * p->ow, kk = (long long)p->kh * p->kw * p->c;
    return m < lim && kk < lim && kk * p->k < lim && m * p->k < lim &&
           span(p->in_st, p->n, p->h, p->w, p->c) < lim &&
           span(p->out_st, p->n, p->oh, p->ow, p->k) < lim &&
           span(p->z_st, p->n, p->oh, p->ow, p->k) < lim;
}

extern "C" int pf_cu_ig_epi_ok(const pf_cu_ig *p)
{
    if (p->n < 1 || p->k < 1 || p->oh < 1 || p->ow < 1 || p->out_st[1] != 1 || p->z_st[1] != 1)
        return 0;
    for (int d = 0; d < 4; d++)
        if (p->out_st[d] < 0 || p->z_st[d] < 0) return 0;
    const long long lim = 1ll << 30;
    return (long long)p->n * p->oh * p->ow * p->k < lim &&
           span(p->out_st, p->n, p->oh, p->ow, p->k) < lim &&
           span(p->z_st, p->n, p->oh, p->ow, p->k) < lim;
}

extern "C" void pf_cu_ig_set(pf_cu_ig *p, int cfg_i, int splits)
{
    p->m = (int)((long long)p->n * p->oh * p->ow);
    p->kk = p->kh * p->kw * p->c;
    p->cfg = cfg_i;
    const int tiles = (p->kk + BK - 1) / BK;
    if (splits < 1) splits = 1;
    if (splits > tiles) splits = tiles;
    const int per = (tiles + splits - 1) / splits;
    p->k_per = per * BK;
    p->splits = (tiles + per - 1) / per; /* no empty split */
}

extern "C" size_t pf_cu_ig_ws(const pf_cu_ig *p)
{
    return p->splits > 1 ? (size_t)p->splits * (size_t)p->m * (size_t)p->k * sizeof(float) : 0;
}

extern "C" int pf_cu_launch_ig_epi(const pf_cu_ig *pp, const void *bias, const void *z, void *y,
                                   void *stream)
{
    pf_cu_ig p = *pp;
    p.m = (int)((long long)p.n * p.oh * p.ow);
    p.vec = vec_ok(p, bias, z, y);
    const long long total = (long long)p.m * p.k / (p.vec ? 8 : 1);
    ig_finish<<<grid_for(total, 256), 256, 0, (cudaStream_t)stream>>>(
        p, NULL, (const __half *)bias, (const __half *)z, (__half *)y);
    return (int)cudaGetLastError();
}

extern "C" int pf_cu_launch_ig(const pf_cu_ig *pp, const void *x, const void *w, const void *bias,
                               const void *z, void *y, void *ws, void *stream)
{
    pf_cu_ig p = *pp;
    if (p.cfg < 0 || p.cfg >= PF_CU_IG_CONFIGS || p.splits < 1 || !a16(x) || !a16(w) ||
        (p.splits > 1 && (!ws || !a16(ws))))
        return (int)cudaErrorInvalidValue;
    p.pairs = p.k % 2 == 0 && p.out_st[0] % 2 == 0 && p.out_st[2] % 2 == 0 &&
              p.out_st[3] % 2 == 0 && a4(y);
    p.vec = vec_ok(p, bias, z, y);
    const cfg &f = config(p.cfg);
    cudaStream_t s = (cudaStream_t)stream;
    if (f.smem > 48 * 1024) {
        /* Raising the dynamic shared-memory limit is a function attribute,
         * not a stream operation: safe during graph capture. */
        cudaError_t e = cudaFuncSetAttribute(f.fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             f.smem);
        if (e != cudaSuccess) return (int)e;
    }
    dim3 grid((unsigned)((p.m + f.bm - 1) / f.bm), (unsigned)((p.k + f.bn - 1) / f.bn),
              (unsigned)p.splits);
    if (grid.y > 65535 || grid.z > 65535) return (int)cudaErrorInvalidValue;
    float *part = p.splits > 1 ? (float *)ws : NULL;
    f.fn<<<grid, f.threads, f.smem, s>>>(p, (const __half *)x, (const __half *)w,
                                         (const __half *)bias, part ? NULL : (const __half *)z,
                                         (__half *)y, part);
    if (part) {
        const long long total = (long long)p.m * p.k / (p.vec ? 8 : 1);
        ig_finish<<<grid_for(total, 256), 256, 0, s>>>(p, part, (const __half *)bias,
                                                        (const __half *)z, (__half *)y);
    }
    return (int)cudaGetLastError();
}

namespace {

struct tune_arg {
    const pf_cu_ig *t;
    const void *x, *w, *bias;
    void *y, *ws, *stream;
};

int launch_tuned(void *a)
{
    const tune_arg *q = (const tune_arg *)a;
    return pf_cu_launch_ig(q->t, q->x, q->w, q->bias, NULL, q->y, q->ws, q->stream);
}

} // namespace

extern "C" int pf_cu_ig_tune(pf_cu_ig *p, const void *x, const void *w, const void *bias,
                             void *y, void *ws, size_t ws_cap, void *stream, float *best_ms)
{
    int dev = 0, sms = 132;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    static const int split_opts[] = {1, 2, 3, 4, 6, 8, 12, 16};
    float best = -1.0f;
    int best_cfg = 0, best_split = 1, err = 0;
    for (int ci = 0; ci < PF_CU_IG_CONFIGS && !err; ci++) {
        const cfg &f = config(ci);
        const long long ctas = (long long)((p->n * (long long)p->oh * p->ow + f.bm - 1) / f.bm) *
                               ((p->k + f.bn - 1) / f.bn);
        if ((p->k + f.bn - 1) / f.bn > 65535) continue; /* grid.y limit: a wider tile may fit */
        for (unsigned si = 0; si < sizeof split_opts / sizeof *split_opts && !err; si++) {
            pf_cu_ig t = *p;
            pf_cu_ig_set(&t, ci, split_opts[si]);
            if (t.splits != split_opts[si] && split_opts[si] > 1) continue;
            /* Split only up to ~3 waves of CTAs, each split keeping >= 4
             * slices of K. */
            if (t.splits > 1 && (ctas * t.splits > 3ll * sms || t.k_per < 4 * BK)) continue;
            if (pf_cu_ig_ws(&t) > ws_cap) continue;
            float ms = -1.0f;
            tune_arg a = {&t, x, w, bias, y, ws, stream};
            if ((err = pf_cu_time_ms(launch_tuned, &a, stream, &ms))) break;
            if (best < 0 || ms < best) best = ms, best_cfg = ci, best_split = t.splits;
        }
    }
    if (err) return err;
    if (best < 0) return (int)cudaErrorInvalidConfiguration; /* no config fits the grid */
    pf_cu_ig_set(p, best_cfg, best_split);
    if (best_ms) *best_ms = best;
    return 0;
}
