/* AVX2 kernel of the YUV 4:2:0 -> RGB24 row (simd.h's contract).
 *
 * 16 pixels per step: 16 luma bytes, 8 chroma pairs duplicated to 16 per
 * channel (pixels 2j and 2j + 1 share chroma j, as in the scalar pairs
 * loop), then pf_cv_yuv_to_rgb's operations on two vectors of 8 floats:
 * yy = (Y - k0) * k1; R = yy + k2 V; G = (yy - k3 U) - k4 V; B = yy + k5 U;
 * rounding (int)(x + 0.5) by truncation (cvttps, as the C cast) and the
 * clamp to [0, 255] by saturating packs (exact for every value the formula
 * can produce, |x| < 2^15). R, G, B (16 bytes each) are interleaved into 48
 * bytes with byte shuffles. */
#include "simd.h"

#if PF_HAVE_X86_SIMD
#include <immintrin.h>

/* out[o] = OR over c of shuffle(channel c, k_rgb_mask[o][c]): byte i of the
 * 48-byte group comes from channel i % 3, pixel i / 3 (0x80: zero). */
static const uint8_t k_rgb_mask[3][3][16] = {
    {{0x00, 0x80, 0x80, 0x01, 0x80, 0x80, 0x02, 0x80, 0x80, 0x03, 0x80, 0x80, 0x04, 0x80, 0x80, 0x05},
     {0x80, 0x00, 0x80, 0x80, 0x01, 0x80, 0x80, 0x02, 0x80, 0x80, 0x03, 0x80, 0x80, 0x04, 0x80, 0x80},
     {0x80, 0x80, 0x00, 0x80, 0x80, 0x01, 0x80, 0x80, 0x02, 0x80, 0x80, 0x03, 0x80, 0x80, 0x04, 0x80}},
    {{0x80, 0x80, 0x06, 0x80, 0x80, 0x07, 0x80, 0x80, 0x08, 0x80, 0x80, 0x09, 0x80, 0x80, 0x0a, 0x80},
     {0x05, 0x80, 0x80, 0x06, 0x80, 0x80, 0x07, 0x80, 0x80, 0x08, 0x80, 0x80, 0x09, 0x80, 0x80, 0x0a},
     {0x80, 0x05, 0x80, 0x80, 0x06, 0x80, 0x80, 0x07, 0x80, 0x80, 0x08, 0x80, 0x80, 0x09, 0x80, 0x80}},
    {{0x80, 0x0b, 0x80, 0x80, 0x0c, 0x80, 0x80, 0x0d, 0x80, 0x80, 0x0e, 0x80, 0x80, 0x0f, 0x80, 0x80},
     {0x80, 0x80, 0x0b, 0x80, 0x80, 0x0c, 0x80, 0x80, 0x0d, 0x80, 0x80, 0x0e, 0x80, 0x80, 0x0f, 0x80},
     {0x0a, 0x80, 0x80, 0x0b, 0x80, 0x80, 0x0c, 0x80, 0x80, 0x0d, 0x80, 0x80, 0x0e, 0x80, 0x80, 0x0f}},
};

/* 8 bytes (low half of v) -> 8 floats. */
PF_TARGET_AVX2 static inline __m256 u8_to_ps(__m128i v)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
}

/* 8 chroma bytes -> 8 floats of (c - 128), exact like (float)(c - 128). */
PF_TARGET_AVX2 static inline __m256 chroma_ps(__m128i v)
{
    return _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_cvtepu8_epi32(v), _mm256_set1_epi32(128)));
}

/* (int)(x + 0.5) of 16 values (two vectors), saturated to [0, 255]. */
PF_TARGET_AVX2 static inline __m128i round_u8(__m256 lo, __m256 hi)
{
    const __m256 half = _mm256_set1_ps(0.5f);
    const __m256i a = _mm256_cvttps_epi32(_mm256_add_ps(lo, half));
    const __m256i b = _mm256_cvttps_epi32(_mm256_add_ps(hi, half));
    /* packs works per 128-bit lane: a0-3 b0-3 | a4-7 b4-7; reorder */
    const __m256i s = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xd8);
    return _mm_packus_epi16(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
}

PF_TARGET_AVX2 static int yuv_avx2(const float *k, const uint8_t *y, const uint8_t *u,
                                   const uint8_t *v, int cstep, int w, uint8_t *rgb)
{
    const __m256 k0 = _mm256_set1_ps(k[0]), k1 = _mm256_set1_ps(k[1]), k2 = _mm256_set1_ps(k[2]),
                 k3 = _mm256_set1_ps(k[3]), k4 = _mm256_set1_ps(k[4]), k5 = _mm256_set1_ps(k[5]);
    const __m128i dup_even = _mm_setr_epi8(0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14);
    const __m128i dup_odd = _mm_setr_epi8(1, 1, 3, 3, 5, 5, 7, 7, 9, 9, 11, 11, 13, 13, 15, 15);
    const __m128i dup = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    __m128i m[3][3];
    for (int o = 0; o < 3; o++)
        for (int c = 0; c < 3; c++) m[o][c] = _mm_loadu_si128((const __m128i *)k_rgb_mask[o][c]);
    int x = 0;
    for (; x + 16 <= w; x += 16) {
        const __m128i yv = _mm_loadu_si128((const __m128i *)(y + x));
        __m128i uu, vv;
        if (cstep == 2) { /* u points at U0 V0 U1 V1 ... (v == u + 1) */
            const __m128i c = _mm_loadu_si128((const __m128i *)(u + x));
            uu = _mm_shuffle_epi8(c, dup_even);
            vv = _mm_shuffle_epi8(c, dup_odd);
        } else {
            uu = _mm_shuffle_epi8(_mm_loadl_epi64((const __m128i *)(u + x / 2)), dup);
            vv = _mm_shuffle_epi8(_mm_loadl_epi64((const __m128i *)(v + x / 2)), dup);
        }
        __m256 r[2], g[2], b[2];
        for (int h = 0; h < 2; h++) {
            const __m256 Y = u8_to_ps(h ? _mm_srli_si128(yv, 8) : yv);
            const __m256 U = chroma_ps(h ? _mm_srli_si128(uu, 8) : uu);
            const __m256 V = chroma_ps(h ? _mm_srli_si128(vv, 8) : vv);
            const __m256 yy = _mm256_mul_ps(_mm256_sub_ps(Y, k0), k1);
            r[h] = _mm256_add_ps(yy, _mm256_mul_ps(k2, V));
            g[h] = _mm256_sub_ps(_mm256_sub_ps(yy, _mm256_mul_ps(k3, U)), _mm256_mul_ps(k4, V));
            b[h] = _mm256_add_ps(yy, _mm256_mul_ps(k5, U));
        }
        const __m128i R = round_u8(r[0], r[1]), G = round_u8(g[0], g[1]), B = round_u8(b[0], b[1]);
        uint8_t *o = rgb + 3 * (size_t)x;
        for (int q = 0; q < 3; q++) {
            const __m128i t = _mm_or_si128(
                _mm_or_si128(_mm_shuffle_epi8(R, m[q][0]), _mm_shuffle_epi8(G, m[q][1])),
                _mm_shuffle_epi8(B, m[q][2]));
            _mm_storeu_si128((__m128i *)(o + 16 * q), t);
        }
    }
    return x;
}

/* AVX-512 (BW, VBMI for the byte permute): the same operations on 16
 * floats; the clamp is max(0) then an unsigned saturating narrow; R, G, B of
 * 16 pixels sit in bytes 0-15, 16-31, 32-47 of one register and a single
 * byte permute interleaves them. */

PF_TARGET_AVX512VBMI static inline __m128i round_u8_512(__m512 x)
{
    const __m512i t = _mm512_cvttps_epi32(_mm512_add_ps(x, _mm512_set1_ps(0.5f)));
    return _mm512_cvtusepi32_epi8(_mm512_max_epi32(t, _mm512_setzero_si512()));
}

PF_TARGET_AVX512VBMI static int yuv_avx512(const float *k, const uint8_t *y, const uint8_t *u,
                                           const uint8_t *v, int cstep, int w, uint8_t *rgb)
{
    const __m512 k0 = _mm512_set1_ps(k[0]), k1 = _mm512_set1_ps(k[1]), k2 = _mm512_set1_ps(k[2]),
                 k3 = _mm512_set1_ps(k[3]), k4 = _mm512_set1_ps(k[4]), k5 = _mm512_set1_ps(k[5]);
    const __m128i dup_even = _mm_setr_epi8(0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14);
    const __m128i dup_odd = _mm_setr_epi8(1, 1, 3, 3, 5, 5, 7, 7, 9, 9, 11, 11, 13, 13, 15, 15);
    const __m128i dup = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    const __m512i c128 = _mm512_set1_epi32(128);
    /* byte i of 48 <- channel i % 3 (16-byte block), pixel i / 3 */
    uint8_t idx_b[64];
    for (int i = 0; i < 64; i++) idx_b[i] = (uint8_t)(i < 48 ? (i % 3) * 16 + i / 3 : 0);
    const __m512i idx = _mm512_loadu_si512(idx_b);
    const __mmask64 st48 = ((__mmask64)1 << 48) - 1;
    int x = 0;
    for (; x + 16 <= w; x += 16) {
        const __m128i yv = _mm_loadu_si128((const __m128i *)(y + x));
        __m128i uu, vv;
        if (cstep == 2) {
            const __m128i c = _mm_loadu_si128((const __m128i *)(u + x));
            uu = _mm_shuffle_epi8(c, dup_even);
            vv = _mm_shuffle_epi8(c, dup_odd);
        } else {
            uu = _mm_shuffle_epi8(_mm_loadl_epi64((const __m128i *)(u + x / 2)), dup);
            vv = _mm_shuffle_epi8(_mm_loadl_epi64((const __m128i *)(v + x / 2)), dup);
        }
        const __m512 Y = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(yv));
        const __m512 U = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(uu), c128));
        const __m512 V = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(vv), c128));
        const __m512 yy = _mm512_mul_ps(_mm512_sub_ps(Y, k0), k1);
        const __m512 r = _mm512_add_ps(yy, _mm512_mul_ps(k2, V));
        const __m512 g = _mm512_sub_ps(_mm512_sub_ps(yy, _mm512_mul_ps(k3, U)), _mm512_mul_ps(k4, V));
        const __m512 b = _mm512_add_ps(yy, _mm512_mul_ps(k5, U));
        __m512i rgb3 = _mm512_castsi128_si512(round_u8_512(r));
        rgb3 = _mm512_inserti32x4(rgb3, round_u8_512(g), 1);
        rgb3 = _mm512_inserti32x4(rgb3, round_u8_512(b), 2);
        _mm512_mask_storeu_epi8(rgb + 3 * (size_t)x, st48, _mm512_permutexvar_epi8(idx, rgb3));
    }
    return x;
}
#endif

int pf_simd_yuv_to_rgb(int level, const float *k, const uint8_t *y, const uint8_t *u,
                       const uint8_t *v, int cstep, int w, uint8_t *rgb)
{
#if PF_HAVE_X86_SIMD
    if (level >= PF_SIMD_AVX512 && pf_cpu_has_avx512vbmi())
        return yuv_avx512(k, y, u, v, cstep, w, rgb);
    if (level >= PF_SIMD_AVX2) return yuv_avx2(k, y, u, v, cstep, w, rgb);
#endif
    (void)level, (void)k, (void)y, (void)u, (void)v, (void)cstep, (void)w, (void)rgb;
    return 0;
}
