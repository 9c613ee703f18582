/* INT8 kernels: the tensor-core implicit-GEMM conv (mma.sync m16n8k32 s8),
 * the direct conv and matmul, and per-tensor Quantize/DequantizeLinear.
 * qconv.h describes the paths and their requirements.
 *
 * The implicit GEMM mirrors igemm.cu (read it first): one CTA = a BM x BN
 * tile of (output pixels) x (output channels); BK = 64 bytes of K per
 * stage move global -> shared with cp.async in 16-byte chunks (16
 * channels), zero-filled outside the image (the padded value of a
 * zero-point-0 input is 0, so padding costs nothing); warps multiply with
 * ldmatrix + mma.sync. The byte layout of an m16n8k32 s8 fragment is the
 * one of an m16n8k16 f16 fragment, so the shared-memory tiles, strides (80
 * bytes a row: conflict-free ldmatrix) and fragment loads are igemm.cu's
 * with bytes for halves. Accumulators are int32 and exact. */
#include "cu_common.cuh"
#include "cu_mma.cuh"

extern "C" {
#include "qconv.h"
}

using namespace pfcu;

namespace {

constexpr int BK = 64;      /* bytes (int8 elements) of K per stage */
constexpr int LDSB = BK + 16;

__device__ __forceinline__ void mma_s8(int c[4], const unsigned a[4], const unsigned b[2])
{
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* The requantizing epilogue of one output element (qconv.h). */
__device__ __forceinline__ void q_store(const pf_cu_qconv &p, int acc, int ch, i64 yo, i64 zo,
                                        const void *z, void *y)
{
    float f = __fmul_rn((float)acc, p.scale[ch]);
    if (p.bias) f = __fadd_rn(f, p.bias[ch]);
    if (p.m_scale != 0.0f) {
        const float lo = p.m_dt == PF_IR_U8 ? 0.0f : -128.0f, hi = p.m_dt == PF_IR_U8 ? 255.0f : 127.0f;
        float q = __fdiv_rn(f, p.m_scale);
        if (q != q) q = 0.0f;
        q = fminf(fmaxf(q, -1e9f), 1e9f);
        q = fminf(fmaxf(rintf(q) + (float)p.m_zp, lo), hi);
        f = __fmul_rn(q - (float)p.m_zp, p.m_scale);
    }
    if (z) {
        float r;
        if (p.z_dt == PF_IR_I8 || p.z_dt == PF_IR_U8)
            r = __fmul_rn((float)((int)ldi(z, p.z_dt, zo) - p.z_zp), p.z_scale);
        else
            r = ldf(z, p.z_dt, zo);
        f = __fadd_rn(f, r);
    }
    f = act_f(p.act, f, p.act_a, p.act_b);
    if (p.y_scale != 0.0f) {
        const float lo = p.y_dt == PF_IR_U8 ? 0.0f : -128.0f, hi = p.y_dt == PF_IR_U8 ? 255.0f : 127.0f;
        float q = __fdiv_rn(f, p.y_scale);
        if (q != q) q = 0.0f;
        q = fminf(fmaxf(q, -1e9f), 1e9f);
        q = rintf(q) + (float)p.y_zp;
        q = fminf(fmaxf(q, lo), hi);
        sti(y, p.y_dt, yo, (i64)q);
    } else {
        stf(y, p.y_dt, yo, f);
    }
}

template <int BM, int BN, int WM, int WN, int ST>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
    qig_k(pf_cu_qconv p, const int8_t *__restrict__ x, const int8_t *__restrict__ w,
          const void *z, void *y)
{
    constexpr int WARPS_N = BN / WN, T = (BM / WM) * WARPS_N * 32;
    constexpr int MI = WM / 16, NI = WN / 8;
    constexpr int A_IT = BM * 4 / T, B_IT = BN * 4 / T;
    static_assert(A_IT >= 1 && B_IT >= 1 && BM * 4 % T == 0 && BN * 4 % T == 0, "tile");
    static_assert(NI % 2 == 0, "B fragments load in pairs");
    extern __shared__ __align__(16) unsigned char smraw[];
    int8_t *sA = (int8_t *)smraw;
    int8_t *sB = sA + ST * BM * LDSB;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int OH = (int)p.oh, OW = (int)p.ow;
    const int M = (int)(p.n * p.oh * p.ow), N = (int)p.m, C = (int)p.c, H = (int)p.h, W = (int)p.w;
    const int K = p.kh * p.kw * C;
    const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
    const int ntiles = (K + BK - 1) / BK;
    const int s2 = (int)p.x_st[2], s3 = (int)p.x_st[3];

    const int kc = tid & 3;
    int a_img[A_IT], a_iy[A_IT], a_ix[A_IT];
#pragma unroll
    for (int i = 0; i < A_IT; i++) {
        const int m = m0 + (tid >> 2) + i * (T / 4);
        if (m < M) {
            const int ox = m % OW, t = m / OW;
            const int oy = t % OH, b = t / OH;
            a_img[i] = b * (int)p.x_st[0];
            a_iy[i] = oy * p.sh - p.ph;
            a_ix[i] = ox * p.sw - p.pw;
        } else {
            a_img[i] = 0;
            a_iy[i] = -(1 << 29);
            a_ix[i] = 0;
        }
    }
    int b_off[B_IT];
#pragma unroll
    for (int i = 0; i < B_IT; i++) {
        const int n = n0 + (tid >> 2) + i * (T / 4);
        b_off[i] = n < N ? n * K : -1;
    }
    int kg = kc * 16, c, kx, ky;
    {
        const int tap = kg / C;
        c = kg - tap * C;
        ky = tap / p.kw;
        kx = tap - ky * p.kw;
    }

    auto load = [&](int stage) {
        const bool kin = kg < K;
        const int dy = ky * p.dh, dx = kx * p.dw;
#pragma unroll
        for (int i = 0; i < A_IT; i++) {
            const int row = (tid >> 2) + i * (T / 4);
            const int iy = a_iy[i] + dy, ix = a_ix[i] + dx;
            const bool ok = kin && (unsigned)iy < (unsigned)H && (unsigned)ix < (unsigned)W;
            const int8_t *src = ok ? x + a_img[i] + iy * s2 + ix * s3 + c : x;
            cp16(su32(sA + (stage * BM + row) * LDSB + kc * 16), src, ok);
        }
#pragma unroll
        for (int i = 0; i < B_IT; i++) {
            const int row = (tid >> 2) + i * (T / 4);
            const bool ok = kin && b_off[i] >= 0;
            const int8_t *src = ok ? w + b_off[i] + kg : w;
            cp16(su32(sB + (stage * BN + row) * LDSB + kc * 16), src, ok);
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

    int acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0;

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
        const int8_t *a = sA + (t % ST) * BM * LDSB;
        const int8_t *b = sB + (t % ST) * BN * LDSB;
#pragma unroll
        for (int ks = 0; ks < BK / 32; ks++) {
            unsigned af[MI][4], bf[NI][2];
#pragma unroll
            for (int i = 0; i < MI; i++)
                ldm4(af[i], su32(a + (wm * WM + i * 16 + (lane & 15)) * LDSB + ks * 32 +
                                 (lane >> 4) * 16));
#pragma unroll
            for (int j = 0; j < NI; j += 2) {
                unsigned r[4];
                ldm4(r, su32(b + (wn * WN + j * 8 + (lane & 7) + ((lane >> 4) << 3)) * LDSB +
                             ks * 32 + ((lane >> 3) & 1) * 16));
                bf[j][0] = r[0];
                bf[j][1] = r[1];
                bf[j + 1][0] = r[2];
                bf[j + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < MI; i++)
#pragma unroll
                for (int j = 0; j < NI; j++) mma_s8(acc[i][j], af[i], bf[j]);
        }
    }
    cp_wait<0>();

    const int g = lane >> 2, q = (lane & 3) * 2;
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int m = m0 + wm * WM + i * 16 + g + h * 8;
            if (m >= M) continue;
            const int ox = m % OW, t2 = m / OW;
            const int oy = t2 % OH, bb = t2 / OH;
            const i64 yo = (i64)bb * p.y_st[0] + (i64)oy * p.y_st[2] + (i64)ox * p.y_st[3];
            const i64 zo = (i64)bb * p.z_st[0] + (i64)oy * p.z_st[2] + (i64)ox * p.z_st[3];
#pragma unroll
            for (int j = 0; j < NI; j++) {
                const int n = n0 + wn * WN + j * 8 + q;
                if (n < N) q_store(p, acc[i][j][2 * h], n, yo + n * p.y_st[1], zo + n * p.z_st[1], z, y);
                if (n + 1 < N)
                    q_store(p, acc[i][j][2 * h + 1], n + 1, yo + (n + 1) * p.y_st[1],
                            zo + (n + 1) * p.z_st[1], z, y);
            }
        }
}

typedef void (*qig_fn)(pf_cu_qconv, const int8_t *, const int8_t *, const void *, void *);

struct cfg {
    qig_fn fn;
    int bm, bn, threads, smem;
};

template <int BM, int BN, int WM, int WN, int ST> cfg make()
{
    return cfg{qig_k<BM, BN, WM, WN, ST>, BM, BN, (BM / WM) * (BN / WN) * 32,
               ST * (BM + BN) * LDSB};
}

constexpr int NCFG = 4;

const cfg &config(int i)
{
    static const cfg t[NCFG] = {
        make<128, 128, 64, 32, 3>(),
        make<128, 64, 64, 32, 3>(),
        make<64, 128, 32, 32, 3>(),
        make<64, 64, 32, 32, 4>(),
    };
    return t[i];
}

bool a16(const void *q) { return ((uintptr_t)q & 15) == 0; }

long long span(const int64_t st[4], long long n, long long h, long long w, long long c)
{
    return st[0] * (n - 1) + st[1] * (c - 1) + st[2] * (h - 1) + st[3] * (w - 1) + 1;
}

__global__ void qconv_direct_k(pf_cu_qconv p, const void *x, const void *z, void *y, i64 total)
{
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (i64)gridDim.x * blockDim.x) {
        i64 r = i;
        const int ox = (int)(r % p.ow);
        r /= p.ow;
        const int oy = (int)(r % p.oh);
        r /= p.oh;
        const int m = (int)(r % p.m);
        const i64 b = r / p.m;
        const int grp = m / p.mg;
        const int wzp = p.w_zp ? p.w_zp[m] : 0;
        int acc = 0;
        for (int cc = 0; cc < p.cg; cc++) {
            const i64 xc = b * p.x_st[0] + (i64)(grp * p.cg + cc) * p.x_st[1];
            const int8_t *wp = p.wt + ((i64)m * p.cg + cc) * p.kh * p.kw;
            for (int ky = 0; ky < p.kh; ky++) {
                const int iy = oy * p.sh - p.ph + ky * p.dh;
                if (iy < 0 || iy >= p.h) continue;
                for (int kx = 0; kx < p.kw; kx++) {
                    const int ix = ox * p.sw - p.pw + kx * p.dw;
                    if (ix < 0 || ix >= p.w) continue;
                    const int xv = (int)ldi(x, p.x_dt, xc + iy * p.x_st[2] + ix * p.x_st[3]);
                    acc += (xv - p.x_zp) * ((int)wp[ky * p.kw + kx] - wzp);
                }
            }
        }
        const i64 yo = b * p.y_st[0] + m * p.y_st[1] + oy * p.y_st[2] + ox * p.y_st[3];
        const i64 zo = b * p.z_st[0] + m * p.z_st[1] + oy * p.z_st[2] + ox * p.z_st[3];
        q_store(p, acc, m, yo, zo, z, y);
    }
}

__global__ void qmm_k(pf_cu_qmm p, const void *a, void *y, i64 total)
{
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (i64)gridDim.x * blockDim.x) {
        const i64 r = i / p.n;
        const int n = (int)(i % p.n);
        const int bzp = p.b_zp ? p.b_zp[n] : 0;
        int acc = 0;
        for (i64 k = 0; k < p.k; k++)
            acc += ((int)ldi(a, p.a_dt, r * p.a_rs + k) - p.a_zp) * ((int)p.b[k * p.n + n] - bzp);
        pf_cu_qconv e;
        e.scale = p.scale;
        e.bias = p.bias;
        e.z_dt = -1;
        e.m_scale = 0.0f;
        e.act = p.act;
        e.act_a = p.act_a;
        e.act_b = p.act_b;
        e.y_scale = p.y_scale;
        e.y_zp = p.y_zp;
        e.y_dt = p.y_dt;
        q_store(e, acc, n, r * p.y_rs + n, 0, NULL, y);
    }
}

__global__ void qdq_k(pf_cu_nd s, int quant, const void *in, int dti, void *out, int dto,
                      float scale, int zp, i64 total)
{
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (i64)gridDim.x * blockDim.x) {
        i64 o0 = 0, o1 = 0, r = i;
        for (int d = s.nd - 1; d >= 0; d--) {
            const i64 c = d ? r % s.dims[d] : r;
            if (d) r /= s.dims[d];
            o0 += c * s.st[0][d];
            o1 += c * s.st[1][d];
        }
        if (quant) {
            const float lo = dto == PF_IR_U8 ? 0.0f : -128.0f, hi = dto == PF_IR_U8 ? 255.0f : 127.0f;
            float q = __fdiv_rn(ldf(in, dti, o1), scale);
            if (q != q) q = 0.0f;
            q = fminf(fmaxf(q, -1e9f), 1e9f);
            q = fminf(fmaxf(rintf(q) + (float)zp, lo), hi);
            sti(out, dto, o0, (i64)q);
        } else {
            stf(out, dto, o0, __fmul_rn((float)((int)ldi(in, dti, o1) - zp), scale));
        }
    }
}

} // namespace

extern "C" int pf_cu_qconv_ig_configs(void) { return NCFG; }

extern "C" int pf_cu_qconv_ig_ok(const pf_cu_qconv *p)
{
    if (p->group != 1 || p->x_dt != PF_IR_I8 || p->x_zp != 0 || p->w_zp || p->c < 16 ||
        p->c % 16 || p->n < 1 || p->m < 1 || p->oh < 1 || p->ow < 1)
        return 0;
    if (p->x_st[1] != 1 || p->x_st[0] % 16 || p->x_st[2] % 16 || p->x_st[3] % 16) return 0;
    for (int d = 0; d < 4; d++)
        if (p->x_st[d] < 0 || p->y_st[d] < 0 || p->z_st[d] < 0) return 0;
    const long long lim = 1ll << 30;
    const long long m = (long long)p->n * p->oh * p->ow, kk = (long long)p->kh * p->kw * p->c;
    return m < lim && kk < lim && kk * p->m < lim && span(p->x_st, p->n, p->h, p->w, p->c) < lim;
}

extern "C" int pf_cu_launch_qconv_ig(const pf_cu_qconv *p, const void *x, const void *z, void *y,
                                     void *stream)
{
    if (p->cfg < 0 || p->cfg >= NCFG || !a16(x) || !a16(p->wt)) return (int)cudaErrorInvalidValue;
    const cfg &f = config(p->cfg);
    if (f.smem > 48 * 1024) {
        cudaError_t e = cudaFuncSetAttribute(f.fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             f.smem);
        if (e != cudaSuccess) return (int)e;
    }
    const long long M = p->n * p->oh * p->ow;
    dim3 grid((unsigned)((M + f.bm - 1) / f.bm), (unsigned)((p->m + f.bn - 1) / f.bn), 1);
    if (grid.y > 65535) return (int)cudaErrorInvalidValue;
    f.fn<<<grid, f.threads, f.smem, (cudaStream_t)stream>>>(*p, (const int8_t *)x, p->wt, z, y);
    return (int)cudaGetLastError();
}

extern "C" int pf_cu_launch_qconv_direct(const pf_cu_qconv *p, const void *x, const void *z,
                                         void *y, void *stream)
{
    const long long total = p->n * p->m * p->oh * p->ow;
    qconv_direct_k<<<grid_for(total, 256), 256, 0, (cudaStream_t)stream>>>(*p, x, z, y, total);
    return (int)cudaGetLastError();
}

extern "C" int pf_cu_launch_qmm(const pf_cu_qmm *p, const void *a, void *y, void *stream)
{
    const long long total = p->rows * p->n;
    qmm_k<<<grid_for(total, 256), 256, 0, (cudaStream_t)stream>>>(*p, a, y, total);
    return (int)cudaGetLastError();
}

extern "C" int pf_cu_launch_qdq(const pf_cu_nd *s, int quant, const void *in, int dt_in, void *out,
                                int dt_out, float scale, int zp, void *stream)
{
    const long long total = pf_cu_nd_numel(s);
    if (total <= 0) return 0;
    qdq_k<<<grid_for(total, 256), 256, 0, (cudaStream_t)stream>>>(*s, quant, in, dt_in, out,
                                                                 dt_out, scale, zp, total);
    return (int)cudaGetLastError();
}
