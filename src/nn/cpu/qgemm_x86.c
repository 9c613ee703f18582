/* The int8 GEMM core of the CPU fast path (qconv.c): u8 x s8 -> s32 over
 * K packed in groups of four, as x86's dot-product instructions want them.
 *
 *   acc[m * ldc + p] = sum over kq < KQ, j < 4 of
 *                      w4[(m * KQ + kq) * 4 + j] (s8) * x4[(kq * P + p) * 4 + j] (u8)
 *
 * Paths, best first (pf_nn_qgemm_isa): AVX-512 VNNI (vpdpbusd on 16 int32
 * lanes), AVX-VNNI (the same on 8 lanes), AVX2 (u8/s8 widened to int16,
 * vpmaddwd: no saturation, unlike vpmaddubsw whose pair sums can exceed
 * int16), and plain C. Every path computes the same exact int32 sums (no
 * product or partial sum leaves int32: |w * x| <= 128 * 255, K <= 33,000 is
 * checked by the caller), so they agree bit for bit. The register tile is
 * 4 rows (output channels) x 2 vectors of pixels; the tails run in C. The
 * level follows pf_cpu_simd_level() (PF_CPU_SIMD caps it) and
 * pf_nn_qgemm_force() (tests). */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "../../core/cpu_features.h"
#include "kernels.h"

#if PF_HAVE_X86_SIMD
#include <immintrin.h>
#endif

static atomic_int g_force = -1;

int pf_nn_qgemm_force(int isa)
{
    return atomic_exchange(&g_force, isa);
}

int pf_nn_qgemm_isa(void)
{
    int f = atomic_load(&g_force);
#if PF_HAVE_X86_SIMD
    int lvl = pf_cpu_simd_level();
    int best = PF_QG_SCALAR;
    if (lvl >= PF_SIMD_AVX2) best = PF_QG_AVX2;
    if (lvl >= PF_SIMD_AVX2 && __builtin_cpu_supports("avxvnni")) best = PF_QG_AVXVNNI;
    if (lvl >= PF_SIMD_AVX512 && __builtin_cpu_supports("avx512vnni")) best = PF_QG_AVX512VNNI;
    if (f >= 0 && f < best) return f;
    if (f >= 0 && f > best) return best; /* a forced path the CPU lacks: the best it has */
    return best;
#else
    (void)f;
    return PF_QG_SCALAR;
#endif
}

const char *pf_nn_qgemm_isa_name(int isa)
{
    switch (isa) {
    case PF_QG_AVX512VNNI: return "avx512-vnni";
    case PF_QG_AVXVNNI: return "avx-vnni";
    case PF_QG_AVX2: return "avx2";
    default: return "scalar";
    }
}

static void tail(const int8_t *w4, const uint8_t *x4, int64_t KQ, int64_t P, int64_t m0,
                 int64_t m1, int64_t p0, int64_t p1, int32_t *acc, int64_t ldc)
{
    for (int64_t m = m0; m < m1; m++)
        for (int64_t p = p0; p < p1; p++) {
            int32_t s = 0;
            const int8_t *w = w4 + m * KQ * 4;
            for (int64_t kq = 0; kq < KQ; kq++) {
                const uint8_t *x = x4 + (kq * P + p) * 4;
                s += w[kq * 4] * x[0] + w[kq * 4 + 1] * x[1] + w[kq * 4 + 2] * x[2] +
                     w[kq * 4 + 3] * x[3];
            }
            acc[m * ldc + p] = s;
        }
}

#if PF_HAVE_X86_SIMD
__attribute__((target("avx512f,avx512bw,avx512vnni")))
static void gemm_avx512vnni(const int8_t *w4, const uint8_t *x4, int64_t M, int64_t KQ, int64_t P,
                            int32_t *acc, int64_t ldc)
{
    const int64_t M4 = M / 4 * 4, P32 = P / 32 * 32;
    for (int64_t m = 0; m < M4; m += 4) {
        const int32_t *w0 = (const int32_t *)(const void *)(w4 + m * KQ * 4);
        const int32_t *w1 = w0 + KQ, *w2 = w1 + KQ, *w3 = w2 + KQ;
        for (int64_t p = 0; p < P32; p += 32) {
            __m512i c00 = _mm512_setzero_si512(), c01 = c00, c10 = c00, c11 = c00, c20 = c00,
                    c21 = c00, c30 = c00, c31 = c00;
            for (int64_t kq = 0; kq < KQ; kq++) {
                const uint8_t *xp = x4 + (kq * P + p) * 4;
                const __m512i x0 = _mm512_loadu_si512((const void *)xp);
                const __m512i x1 = _mm512_loadu_si512((const void *)(xp + 64));
                __m512i b = _mm512_set1_epi32(w0[kq]);
                c00 = _mm512_dpbusd_epi32(c00, x0, b);
                c01 = _mm512_dpbusd_epi32(c01, x1, b);
                b = _mm512_set1_epi32(w1[kq]);
                c10 = _mm512_dpbusd_epi32(c10, x0, b);
                c11 = _mm512_dpbusd_epi32(c11, x1, b);
                b = _mm512_set1_epi32(w2[kq]);
                c20 = _mm512_dpbusd_epi32(c20, x0, b);
                c21 = _mm512_dpbusd_epi32(c21, x1, b);
                b = _mm512_set1_epi32(w3[kq]);
                c30 = _mm512_dpbusd_epi32(c30, x0, b);
                c31 = _mm512_dpbusd_epi32(c31, x1, b);
            }
            int32_t *o = acc + m * ldc + p;
            _mm512_storeu_si512((void *)o, c00);
            _mm512_storeu_si512((void *)(o + 16), c01);
            _mm512_storeu_si512((void *)(o + ldc), c10);
            _mm512_storeu_si512((void *)(o + ldc + 16), c11);
            _mm512_storeu_si512((void *)(o + 2 * ldc), c20);
            _mm512_storeu_si512((void *)(o + 2 * ldc + 16), c21);
            _mm512_storeu_si512((void *)(o + 3 * ldc), c30);
            _mm512_storeu_si512((void *)(o + 3 * ldc + 16), c31);
        }
    }
    tail(w4, x4, KQ, P, 0, M4, P32, P, acc, ldc);
    tail(w4, x4, KQ, P, M4, M, 0, P, acc, ldc);
}

__attribute__((target("avx2,avxvnni")))
static void gemm_avxvnni(const int8_t *w4, const uint8_t *x4, int64_t M, int64_t KQ, int64_t P,
                         int32_t *acc, int64_t ldc)
{
    const int64_t M4 = M / 4 * 4, P16 = P / 16 * 16;
    for (int64_t m = 0; m < M4; m += 4) {
        const int32_t *w0 = (const int32_t *)(const void *)(w4 + m * KQ * 4);
        const int32_t *w1 = w0 + KQ, *w2 = w1 + KQ, *w3 = w2 + KQ;
        for (int64_t p = 0; p < P16; p += 16) {
            __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00,
                    c21 = c00, c30 = c00, c31 = c00;
            for (int64_t kq = 0; kq < KQ; kq++) {
                const uint8_t *xp = x4 + (kq * P + p) * 4;
                const __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)xp);
                const __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(xp + 32));
                __m256i b = _mm256_set1_epi32(w0[kq]);
                c00 = _mm256_dpbusd_avx_epi32(c00, x0, b);
                c01 = _mm256_dpbusd_avx_epi32(c01, x1, b);
                b = _mm256_set1_epi32(w1[kq]);
                c10 = _mm256_dpbusd_avx_epi32(c10, x0, b);
                c11 = _mm256_dpbusd_avx_epi32(c11, x1, b);
                b = _mm256_set1_epi32(w2[kq]);
                c20 = _mm256_dpbusd_avx_epi32(c20, x0, b);
                c21 = _mm256_dpbusd_avx_epi32(c21, x1, b);
                b = _mm256_set1_epi32(w3[kq]);
                c30 = _mm256_dpbusd_avx_epi32(c30, x0, b);
                c31 = _mm256_dpbusd_avx_epi32(c31, x1, b);
            }
            int32_t *o = acc + m * ldc + p;
            _mm256_storeu_si256((__m256i *)(void *)o, c00);
            _mm256_storeu_si256((__m256i *)(void *)(o + 8), c01);
            _mm256_storeu_si256((__m256i *)(void *)(o + ldc), c10);
            _mm256_storeu_si256((__m256i *)(void *)(o + ldc + 8), c11);
            _mm256_storeu_si256((__m256i *)(void *)(o + 2 * ldc), c20);
            _mm256_storeu_si256((__m256i *)(void *)(o + 2 * ldc + 8), c21);
            _mm256_storeu_si256((__m256i *)(void *)(o + 3 * ldc), c30);
            _mm256_storeu_si256((__m256i *)(void *)(o + 3 * ldc + 8), c31);
        }
    }
    tail(w4, x4, KQ, P, 0, M4, P16, P, acc, ldc);
    tail(w4, x4, KQ, P, M4, M, 0, P, acc, ldc);
}

/* 8 pixels' 4 bytes each (32 bytes) times one row's 4 weights, as int32 sums:
 * the bytes widened to int16 in two halves, vpmaddwd with the weights
 * widened likewise (pairs), then the pair sums added. */
__attribute__((target("avx2")))
static inline __m256i dot4_avx2(__m256i x, __m256i wlo, __m256i whi)
{
    const __m256i xlo = _mm256_unpacklo_epi8(x, _mm256_setzero_si256());
    const __m256i xhi = _mm256_unpackhi_epi8(x, _mm256_setzero_si256());
    /* unpacklo takes bytes 0-7 of each 128-bit lane: pixels 0,1 (lane 0) and
     * 4,5 (lane 1); unpackhi pixels 2,3 and 6,7. vpmaddwd of xlo with the
     * weights (w0,w1,w2,w3 as int16, repeated) gives two partial sums per
     * pixel; hadd joins them: results in the order 0,1,2,3 | 4,5,6,7. */
    const __m256i plo = _mm256_madd_epi16(xlo, wlo);
    const __m256i phi = _mm256_madd_epi16(xhi, whi);
    return _mm256_hadd_epi32(plo, phi);
}

__attribute__((target("avx2")))
static void gemm_avx2(const int8_t *w4, const uint8_t *x4, int64_t M, int64_t KQ, int64_t P,
                      int32_t *acc, int64_t ldc)
{
    const int64_t P8 = P / 8 * 8;
    for (int64_t m = 0; m < M; m++) {
        const int8_t *w = w4 + m * KQ * 4;
        for (int64_t p = 0; p < P8; p += 8) {
            __m256i c = _mm256_setzero_si256();
            for (int64_t kq = 0; kq < KQ; kq++) {
                const int16_t a0 = w[kq * 4], a1 = w[kq * 4 + 1], a2 = w[kq * 4 + 2],
                              a3 = w[kq * 4 + 3];
                const __m256i wv = _mm256_setr_epi16(a0, a1, a2, a3, a0, a1, a2, a3, a0, a1, a2,
                                                     a3, a0, a1, a2, a3);
                const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(x4 + (kq * P + p) * 4));
                c = _mm256_add_epi32(c, dot4_avx2(x, wv, wv));
            }
            _mm256_storeu_si256((__m256i *)(void *)(acc + m * ldc + p), c);
        }
    }
    tail(w4, x4, KQ, P, 0, M, P8, P, acc, ldc);
}
#endif

void pf_nn_qgemm_u8s8(int isa, const int8_t *w4, const uint8_t *x4, int64_t M, int64_t KQ,
                      int64_t P, int32_t *acc, int64_t ldc)
{
#if PF_HAVE_X86_SIMD
    switch (isa) {
    case PF_QG_AVX512VNNI: gemm_avx512vnni(w4, x4, M, KQ, P, acc, ldc); return;
    case PF_QG_AVXVNNI: gemm_avxvnni(w4, x4, M, KQ, P, acc, ldc); return;
    case PF_QG_AVX2: gemm_avx2(w4, x4, M, KQ, P, acc, ldc); return;
    default: break;
    }
#else
    (void)isa;
#endif
    tail(w4, x4, KQ, P, 0, M, 0, P, acc, ldc);
}
