/* AVX2 / AVX-512 kernels of the bilinear resize (simd.h's contract).
 *
 * Horizontal pass: the taps of each output value are arbitrary source
 * bytes, so the pass is a gather. The plan expands the per-pixel taps to
 * per-value byte indices and weights once per call. AVX-512 with VBMI: a
 * block of 16 output values whose taps lie within 128 bytes of the source
 * row (any downscale up to ~7x for 3 channels) loads those 128 bytes with
 * masked loads (never past the row) and picks its 16 + 16 bytes with two
 * byte permutes, precomputed offsets in the plan; other blocks go scalar.
 * AVX2: 32-bit gathers masked to the low byte, for the values whose 4-byte
 * reads stay inside the row (`safe`), scalar after. Then w0 a + w1 b in
 * float (mul, mul, add: the reference's operations).
 *
 * Vertical blend of two rows (bilinear): w0 h0 + w1 h1, + 0.5, truncation,
 * clamp (the reference's vblend and pf_cv_round_row), 16 or 8 at a time. */
#include <string.h>

#include "../ops/convert.h" /* CV_MUL, CV_ADD: no contraction in any compiler */
#include "simd.h"

#define ALIGN64(x) (((x) + 63) & ~(size_t)63)

size_t pf_simd_bilin_bytes(int m)
{
    const size_t blocks = ((size_t)m + 15) / 16;
    return 4 * ALIGN64((size_t)m * 4) + ALIGN64(blocks * 4) + ALIGN64(blocks * 32);
}

void pf_simd_bilin_plan(pf_simd_bilin *p, void *mem, const int32_t *k, const float *w, int dw,
                        int C, int bpp, const int *off, int row_bytes)
{
    const int m = dw * C;
    const size_t blocks = ((size_t)m + 15) / 16;
    uint8_t *b = mem;
    p->m = m;
    p->row_bytes = row_bytes;
    p->ia = (int32_t *)(void *)b, b += ALIGN64((size_t)m * 4);
    p->ib = (int32_t *)(void *)b, b += ALIGN64((size_t)m * 4);
    p->w0 = (float *)(void *)b, b += ALIGN64((size_t)m * 4);
    p->w1 = (float *)(void *)b, b += ALIGN64((size_t)m * 4);
    p->base = (int32_t *)(void *)b, b += ALIGN64(blocks * 4);
    p->rel = b;
    p->safe = 0;
    for (int i = 0; i < dw; i++)
        for (int c = 0; c < C; c++) {
            const int v = i * C + c;
            const int o = off ? off[c] : c;
            p->ia[v] = k[2 * i] * bpp + o;
            p->ib[v] = k[2 * i + 1] * bpp + o;
            p->w0[v] = w[2 * i];
            p->w1[v] = w[2 * i + 1];
        }
    /* AVX2: the leading values whose 4-byte reads end inside the row */
    int safe = 0;
    while (safe < m && p->ia[safe] + 4 <= p->row_bytes && p->ib[safe] + 4 <= p->row_bytes) safe++;
    p->safe = safe;
    for (size_t j = 0; j < blocks; j++) {
        const int v0 = (int)j * 16, n = m - v0 < 16 ? m - v0 : 16;
        int lo = p->ia[v0], hi = p->ia[v0];
        for (int q = 0; q < n; q++) {
            const int a = p->ia[v0 + q], bb = p->ib[v0 + q];
            lo = a < lo ? a : lo, lo = bb < lo ? bb : lo;
            hi = a > hi ? a : hi, hi = bb > hi ? bb : hi;
        }
        uint8_t *r = p->rel + j * 32;
        if (n == 16 && hi - lo < 128) {
            p->base[j] = lo;
            for (int q = 0; q < 16; q++) {
                r[q] = (uint8_t)(p->ia[v0 + q] - lo);
                r[16 + q] = (uint8_t)(p->ib[v0 + q] - lo);
            }
        } else {
            p->base[j] = -1;
            memset(r, 0, 32);
        }
    }
}

static void bilin_scalar(const pf_simd_bilin *p, const uint8_t *row, float *h, int v0, int v1)
{
    for (int v = v0; v < v1; v++)
        h[v] = CV_ADD(CV_MUL(p->w0[v], (float)row[p->ia[v]]), CV_MUL(p->w1[v], (float)row[p->ib[v]]));
}

#if PF_HAVE_X86_SIMD
#include <immintrin.h>


PF_TARGET_AVX512VBMI static int bilin_avx512(const pf_simd_bilin *p, const uint8_t *row, float *h)
{
    const int m = p->m, full = m / 16, row_bytes = p->row_bytes;
    /* the plan's arrays in locals: h may alias them as far as the compiler
     * knows, which would reload every pointer after each store */
    const int32_t *bases = p->base;
    const uint8_t *rels = p->rel;
    const float *w0 = p->w0, *w1 = p->w1;
    for (int j = 0; j < full; j++) {
        const int v0 = 16 * j, base = bases[j];
        if (base < 0) {
            bilin_scalar(p, row, h + 0, v0, v0 + 16);
            continue;
        }
        const int left = row_bytes - base; /* bytes of the row from base on */
        const __mmask64 m0 = left >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << left) - 1);
        const int left1 = left - 64;
        const __mmask64 m1 = left1 >= 64 ? ~(__mmask64)0
                                          : (left1 <= 0 ? 0 : (((__mmask64)1 << left1) - 1));
        const __m512i lo = _mm512_maskz_loadu_epi8(m0, row + base);
        const __m512i hi = _mm512_maskz_loadu_epi8(m1, row + base + 64);
        const __m512i rel = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(rels + 32 * j)));
        const __m512i ab = _mm512_permutex2var_epi8(lo, rel, hi); /* bytes 0-15 a, 16-31 b */
        const __m512 a = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm512_castsi512_si128(ab)));
        const __m512 b = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(ab, 1)));
        const __m512 r = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(w0 + v0), a),
                                       _mm512_mul_ps(_mm512_loadu_ps(w1 + v0), b));
        _mm512_storeu_ps(h + v0, r);
    }
    bilin_scalar(p, row, h, 16 * full, m);
    return m;
}

PF_TARGET_AVX2 static int bilin_avx2(const pf_simd_bilin *p, const uint8_t *row, float *h)
{
    const __m256i ff = _mm256_set1_epi32(0xff);
    int v = 0;
    for (; v + 8 <= p->safe; v += 8) {
        const __m256i ia = _mm256_loadu_si256((const __m256i *)(p->ia + v));
        const __m256i ib = _mm256_loadu_si256((const __m256i *)(p->ib + v));
        const __m256i ga = _mm256_and_si256(_mm256_i32gather_epi32((const int *)(const void *)row, ia, 1), ff);
        const __m256i gb = _mm256_and_si256(_mm256_i32gather_epi32((const int *)(const void *)row, ib, 1), ff);
        const __m256 r = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(p->w0 + v), _mm256_cvtepi32_ps(ga)),
                                       _mm256_mul_ps(_mm256_loadu_ps(p->w1 + v), _mm256_cvtepi32_ps(gb)));
        _mm256_storeu_ps(h + v, r);
    }
    bilin_scalar(p, row, h, v, p->m);
    return p->m;
}

PF_TARGET_AVX512 static int blend2_avx512(uint8_t *d, const float *h0, const float *h1, float w0,
                                          float w1, int n)
{
    const __m512 a = _mm512_set1_ps(w0), b = _mm512_set1_ps(w1), half = _mm512_set1_ps(0.5f);
    int x = 0;
    for (; x + 16 <= n; x += 16) {
        const __m512 v = _mm512_add_ps(_mm512_mul_ps(a, _mm512_loadu_ps(h0 + x)),
                                       _mm512_mul_ps(b, _mm512_loadu_ps(h1 + x)));
        const __m512i t = _mm512_cvttps_epi32(_mm512_add_ps(v, half));
        _mm_storeu_si128((__m128i *)(d + x),
                         _mm512_cvtusepi32_epi8(_mm512_max_epi32(t, _mm512_setzero_si512())));
    }
    return x;
}

PF_TARGET_AVX2 static int blend2_avx2(uint8_t *d, const float *h0, const float *h1, float w0,
                                      float w1, int n)
{
    const __m256 a = _mm256_set1_ps(w0), b = _mm256_set1_ps(w1), half = _mm256_set1_ps(0.5f);
    int x = 0;
    for (; x + 16 <= n; x += 16) {
        __m256i t[2];
        for (int q = 0; q < 2; q++) {
            const __m256 v = _mm256_add_ps(_mm256_mul_ps(a, _mm256_loadu_ps(h0 + x + 8 * q)),
                                           _mm256_mul_ps(b, _mm256_loadu_ps(h1 + x + 8 * q)));
            t[q] = _mm256_cvttps_epi32(_mm256_add_ps(v, half));
        }
        const __m256i s = _mm256_permute4x64_epi64(_mm256_packs_epi32(t[0], t[1]), 0xd8);
        _mm_storeu_si128((__m128i *)(d + x), _mm_packus_epi16(_mm256_castsi256_si128(s),
                                                              _mm256_extracti128_si256(s, 1)));
    }
    return x;
}
#endif

int pf_simd_bilinear_h_u8(int level, const pf_simd_bilin *p, const uint8_t *row, float *h)
{
#if PF_HAVE_X86_SIMD
    if (level >= PF_SIMD_AVX512 && pf_cpu_has_avx512vbmi()) return bilin_avx512(p, row, h);
    if (level >= PF_SIMD_AVX2) return bilin_avx2(p, row, h);
#endif
    bilin_scalar(p, row, h, 0, p->m);
    return p->m;
}

int pf_simd_blend2_u8(int level, uint8_t *d, const float *h0, const float *h1, float w0, float w1,
                      int n)
{
#if PF_HAVE_X86_SIMD
    if (level >= PF_SIMD_AVX512) return blend2_avx512(d, h0, h1, w0, w1, n);
    if (level >= PF_SIMD_AVX2) return blend2_avx2(d, h0, h1, w0, w1, n);
#endif
    (void)level, (void)d, (void)h0, (void)h1, (void)w0, (void)w1, (void)n;
    return 0;
}
