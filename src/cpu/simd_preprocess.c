/* AVX-512 kernel of the preprocess's output rows (simd.h's contract): the
 * interleaved R, G, B floats of a filtered row, normalised and split into
 * the three planes of an NCHW destination, out_c[i] = acc[3 i + s_c] * sc_c
 * + bi_c (mul then add, no FMA: write_row's operations). 16 pixels a step:
 * three loads and, per channel, two permutes pick every third float. */
#include "simd.h"

#if PF_HAVE_X86_SIMD
#include <immintrin.h>

PF_TARGET_AVX512 static int planar3_avx512(const float *acc, int n, const float *sc,
                                           const float *bi, const int *src_c, float *const *out)
{
    __m512i lo[3], hi[3];
    __mmask16 from2[3];
    for (int c = 0; c < 3; c++) {
        int a[16], b[16];
        from2[c] = 0;
        for (int i = 0; i < 16; i++) {
            const int q = 3 * i + src_c[c]; /* float of the 48 */
            a[i] = q < 32 ? q : 0;
            b[i] = q >= 32 ? q - 32 : 0;
            if (q >= 32) from2[c] |= (__mmask16)(1u << i);
        }
        lo[c] = _mm512_loadu_si512(a);
        hi[c] = _mm512_loadu_si512(b);
    }
    int x = 0;
    for (; x + 16 <= n; x += 16) {
        const float *p = acc + 3 * (size_t)x;
        const __m512 v0 = _mm512_loadu_ps(p), v1 = _mm512_loadu_ps(p + 16),
                     v2 = _mm512_loadu_ps(p + 32);
        for (int c = 0; c < 3; c++) {
            const __m512 t = _mm512_mask_permutexvar_ps(_mm512_permutex2var_ps(v0, lo[c], v1),
                                                        from2[c], hi[c], v2);
            _mm512_storeu_ps(out[c] + x, _mm512_add_ps(_mm512_mul_ps(t, _mm512_set1_ps(sc[c])),
                                                       _mm512_set1_ps(bi[c])));
        }
    }
    return x;
}
#endif

int pf_simd_planar3_affine(int level, const float *acc, int n, const float *sc, const float *bi,
                           const int *src_c, float *const *out)
{
#if PF_HAVE_X86_SIMD
    if (level >= PF_SIMD_AVX512) return planar3_avx512(acc, n, sc, bi, src_c, out);
#endif
    (void)level, (void)acc, (void)n, (void)sc, (void)bi, (void)src_c, (void)out;
    return 0;
}
