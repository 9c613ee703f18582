/* AVX-512 kernels of the CPU composite (simd.h's contract): the frame's
 * YUV 4:2:0 rows as R, G, B floats, and the bilinear rows of R, G, B floats
 * (background image and blur upsampling). Found by profiling `pixflow
 * segment --device cpu` with a blur background: these two were half of the
 * composite stage's time. AVX-512 only (F, BW, DQ, VL): with AVX2 the
 * compiler-vectorised loops of composite.c run, as before.
 *
 * YUV: pf_cmp_yuv2rgb's operations on 16 pixels, clamps by compares and
 * selects (v < 0 ? 0 : (v > 255 ? 255 : v): a max instruction would turn
 * -0 into +0), R, G, B interleaved by two permutes per 16 floats.
 *
 * Lerp: per output value v = 3x + c, from the plan: taps ia[v] = 3 k0 + c,
 * ib[v] = 3 k1 + c and weight f[v]; h0 = lerp(r0[ia], r0[ib], f), h1 the
 * same on r1, out = lerp(h0, h1, fy) (pf_cmp_lerp: a + f (b - a)). A block
 * of 16 values whose taps lie within 32 floats loads those (masked: never
 * past the row) and permutes; other blocks gather. */
#include <string.h>

#include "../ops/composite.h"
#include "simd.h"

#define ALIGN64(x) (((x) + 63) & ~(size_t)63)

size_t pf_simd_lerp3_bytes(int w)
{
    const size_t m = 3 * (size_t)w, blocks = (m + 15) / 16;
    return 3 * ALIGN64(m * 4) + ALIGN64(blocks * 4);
}

void pf_simd_lerp3_plan(pf_simd_lerp3_map *p, void *mem, const int32_t *k0, const int32_t *k1,
                        const float *f, size_t tap_stride, int w, int src_w)
{
    const int m = 3 * w;
    const size_t blocks = ((size_t)m + 15) / 16;
    uint8_t *b = mem;
    p->m = m;
    p->src_floats = 3 * src_w;
    p->ia = (int32_t *)(void *)b, b += ALIGN64((size_t)m * 4);
    p->ib = (int32_t *)(void *)b, b += ALIGN64((size_t)m * 4);
    p->f = (float *)(void *)b, b += ALIGN64((size_t)m * 4);
    p->base = (int32_t *)(void *)b;
    for (int x = 0; x < w; x++) {
        const int32_t a = *(const int32_t *)(const void *)((const uint8_t *)k0 + x * tap_stride);
        const int32_t c = *(const int32_t *)(const void *)((const uint8_t *)k1 + x * tap_stride);
        const float ff = *(const float *)(const void *)((const uint8_t *)f + x * tap_stride);
        for (int ch = 0; ch < 3; ch++) {
            p->ia[3 * x + ch] = 3 * a + ch;
            p->ib[3 * x + ch] = 3 * c + ch;
            p->f[3 * x + ch] = ff;
        }
    }
    for (size_t j = 0; j < blocks; j++) {
        const int v0 = (int)j * 16, n = m - v0 < 16 ? m - v0 : 16;
        int lo = p->ia[v0], hi = p->ia[v0];
        for (int q = 0; q < n; q++) {
            const int a = p->ia[v0 + q], c = p->ib[v0 + q];
            lo = a < lo ? a : lo, lo = c < lo ? c : lo;
            hi = a > hi ? a : hi, hi = c > hi ? c : hi;
        }
        p->base[j] = n == 16 && hi - lo < 32 ? lo : -1;
    }
}

static void lerp3_scalar(const pf_simd_lerp3_map *p, const float *r0, const float *r1, float fy,
                         float *out, int v0, int v1)
{
    for (int v = v0; v < v1; v++) {
        const float h0 = pf_cmp_lerp(r0[p->ia[v]], r0[p->ib[v]], p->f[v]);
        const float h1 = pf_cmp_lerp(r1[p->ia[v]], r1[p->ib[v]], p->f[v]);
        out[v] = pf_cmp_lerp(h0, h1, fy);
    }
}

#if PF_HAVE_X86_SIMD
#include <immintrin.h>

PF_TARGET_AVX512 static inline __m512 lerp16(__m512 a, __m512 b, __m512 f)
{
    return _mm512_add_ps(a, _mm512_mul_ps(f, _mm512_sub_ps(b, a)));
}

PF_TARGET_AVX512 static void lerp3_avx512(const pf_simd_lerp3_map *p, const float *r0,
                                          const float *r1, float fy, float *out)
{
    const int full = p->m / 16;
    const __m512 vfy = _mm512_set1_ps(fy);
    for (int j = 0; j < full; j++) {
        const int v0 = 16 * j, base = p->base[j];
        const __m512i ia = _mm512_loadu_si512(p->ia + v0), ib = _mm512_loadu_si512(p->ib + v0);
        const __m512 f = _mm512_loadu_ps(p->f + v0);
        __m512 a0, a1, b0, b1;
        if (base >= 0) {
            const int left = p->src_floats - base; /* floats of the row from base on */
            const __mmask16 m0 = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
            const int left1 = left - 16;
            const __mmask16 m1 = left1 >= 16 ? (__mmask16)0xffff
                                             : (left1 <= 0 ? 0 : (__mmask16)((1u << left1) - 1));
            const __m512i vb = _mm512_set1_epi32(base);
            const __m512i ra = _mm512_sub_epi32(ia, vb), rb = _mm512_sub_epi32(ib, vb);
            const __m512 p0 = _mm512_maskz_loadu_ps(m0, r0 + base);
            const __m512 p1 = _mm512_maskz_loadu_ps(m1, r0 + base + 16);
            const __m512 q0 = _mm512_maskz_loadu_ps(m0, r1 + base);
            const __m512 q1 = _mm512_maskz_loadu_ps(m1, r1 + base + 16);
            a0 = _mm512_permutex2var_ps(p0, ra, p1), a1 = _mm512_permutex2var_ps(p0, rb, p1);
            b0 = _mm512_permutex2var_ps(q0, ra, q1), b1 = _mm512_permutex2var_ps(q0, rb, q1);
        } else {
            a0 = _mm512_i32gather_ps(ia, r0, 4), a1 = _mm512_i32gather_ps(ib, r0, 4);
            b0 = _mm512_i32gather_ps(ia, r1, 4), b1 = _mm512_i32gather_ps(ib, r1, 4);
        }
        _mm512_storeu_ps(out + v0, lerp16(lerp16(a0, a1, f), lerp16(b0, b1, f), vfy));
    }
    lerp3_scalar(p, r0, r1, fy, out, 16 * full, p->m);
}

/* v < 0 ? 0 : (v > 255 ? 255 : v), selects exactly as written */
PF_TARGET_AVX512 static inline __m512 clamp255(__m512 v)
{
    const __m512 z = _mm512_setzero_ps(), top = _mm512_set1_ps(255.0f);
    v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, top, _CMP_GT_OQ), v, top);
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, z, _CMP_LT_OQ), v, z);
}

PF_TARGET_AVX512 static int yuvf_avx512(const float *k, const uint8_t *y, const uint8_t *u,
                                        const uint8_t *v, int cstep, int n, float *out)
{
    const __m512 k0 = _mm512_set1_ps(k[0]), k1 = _mm512_set1_ps(k[1]), k2 = _mm512_set1_ps(k[2]),
                 k3 = _mm512_set1_ps(k[3]), k4 = _mm512_set1_ps(k[4]), k5 = _mm512_set1_ps(k[5]);
    const __m512 c128 = _mm512_set1_ps(128.0f);
    const __m128i dup_even = _mm_setr_epi8(0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14);
    const __m128i dup_odd = _mm_setr_epi8(1, 1, 3, 3, 5, 5, 7, 7, 9, 9, 11, 11, 13, 13, 15, 15);
    const __m128i dup = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    /* float q of the 48 (block o = q / 16) is channel q % 3 of pixel q / 3:
     * first R and G from (r, g) (indices 16+ pick g), then B over it */
    int irg[3][16], ib[3][16];
    __mmask16 mb[3] = {0, 0, 0};
    for (int o = 0; o < 3; o++)
        for (int i = 0; i < 16; i++) {
            const int q = 16 * o + i, px = q / 3, c = q % 3;
            irg[o][i] = c == 1 ? 16 + px : px;
            ib[o][i] = px;
            if (c == 2) mb[o] |= (__mmask16)(1u << i);
        }
    __m512i vrg[3], vb[3];
    for (int o = 0; o < 3; o++) {
        vrg[o] = _mm512_loadu_si512(irg[o]);
        vb[o] = _mm512_loadu_si512(ib[o]);
    }
    int x = 0;
    for (; x + 16 <= n; x += 16) {
        const __m128i yv = _mm_loadu_si128((const __m128i *)(const void *)(y + x));
        __m128i uu, vv;
        if (cstep == 2) {
            const __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(u + x));
            uu = _mm_shuffle_epi8(c, dup_even);
            vv = _mm_shuffle_epi8(c, dup_odd);
        } else {
            uu = _mm_shuffle_epi8(_mm_loadl_epi64((const __m128i *)(const void *)(u + x / 2)), dup);
            vv = _mm_shuffle_epi8(_mm_loadl_epi64((const __m128i *)(const void *)(v + x / 2)), dup);
        }
        const __m512 Y = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(yv));
        const __m512 U = _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(uu)), c128);
        const __m512 V = _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(vv)), c128);
        const __m512 yy = _mm512_mul_ps(_mm512_sub_ps(Y, k0), k1);
        const __m512 r = clamp255(_mm512_add_ps(yy, _mm512_mul_ps(k2, V)));
        const __m512 g = clamp255(
            _mm512_sub_ps(_mm512_sub_ps(yy, _mm512_mul_ps(k3, U)), _mm512_mul_ps(k4, V)));
        const __m512 b = clamp255(_mm512_add_ps(yy, _mm512_mul_ps(k5, U)));
        float *o = out + 3 * (size_t)x;
        for (int q = 0; q < 3; q++) {
            const __m512 rg = _mm512_permutex2var_ps(r, vrg[q], g);
            _mm512_storeu_ps(o + 16 * q, _mm512_mask_permutexvar_ps(rg, mb[q], vb[q], b));
        }
    }
    return x;
}
#endif

int pf_simd_yuv_to_rgbf(int level, const float *k, const uint8_t *y, const uint8_t *u,
                        const uint8_t *v, int cstep, int n, float *out)
{
#if PF_HAVE_X86_SIMD
    if (level >= PF_SIMD_AVX512) return yuvf_avx512(k, y, u, v, cstep, n, out);
#endif
    (void)level, (void)k, (void)y, (void)u, (void)v, (void)cstep, (void)n, (void)out;
    return 0;
}

int pf_simd_lerp3(int level, const pf_simd_lerp3_map *p, const float *r0, const float *r1, float fy,
                  float *out)
{
#if PF_HAVE_X86_SIMD
    if (level >= PF_SIMD_AVX512) {
        lerp3_avx512(p, r0, r1, fy, out);
        return 1;
    }
#endif
    (void)level, (void)p, (void)r0, (void)r1, (void)fy, (void)out;
    return 0;
}
