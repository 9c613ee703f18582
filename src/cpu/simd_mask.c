/* AVX2 / AVX-512 kernels of the separable mask filters (simd.h's contract):
 * morphology's min/max over taps and the feather's weighted sums.
 *
 * Register blocking is the gain over the compiler-vectorised scalar loops,
 * which accumulate one tap at a time across the whole row (a load and a
 * store of the output per tap): here each output vector stays in a register
 * across all taps, so a tap costs one load and one min/max (or one mul and
 * one add). The feather keeps the reference's order per output,
 * ((0 + w0 b0) + w1 b1) + ..., with separate mul and add (no FMA): the same
 * bits. Four vectors per step hide the add latency. */
#include "simd.h"

#if PF_HAVE_X86_SIMD
#include <immintrin.h>

PF_TARGET_AVX2 static int minmax_taps_avx2(uint8_t *o, const uint8_t *b, int taps, int n,
                                           int is_max)
{
    int x = 0;
    for (; x + 32 <= n; x += 32) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(b + x));
        if (is_max)
            for (int k = 1; k < taps; k++)
                a = _mm256_max_epu8(a, _mm256_loadu_si256((const __m256i *)(b + x + k)));
        else
            for (int k = 1; k < taps; k++)
                a = _mm256_min_epu8(a, _mm256_loadu_si256((const __m256i *)(b + x + k)));
        _mm256_storeu_si256((__m256i *)(o + x), a);
    }
    return x;
}

PF_TARGET_AVX512 static int minmax_taps_avx512(uint8_t *o, const uint8_t *b, int taps, int n,
                                               int is_max)
{
    int x = 0;
    for (; x + 64 <= n; x += 64) {
        __m512i a = _mm512_loadu_si512(b + x);
        if (is_max)
            for (int k = 1; k < taps; k++) a = _mm512_max_epu8(a, _mm512_loadu_si512(b + x + k));
        else
            for (int k = 1; k < taps; k++) a = _mm512_min_epu8(a, _mm512_loadu_si512(b + x + k));
        _mm512_storeu_si512(o + x, a);
    }
    return x + minmax_taps_avx2(o + x, b + x, taps, n - x, is_max);
}

PF_TARGET_AVX2 static int minmax_rows_avx2(uint8_t *o, const uint8_t *const *rows, int nrows,
                                           int n, int is_max)
{
    int x = 0;
    for (; x + 32 <= n; x += 32) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(rows[0] + x));
        if (is_max)
            for (int k = 1; k < nrows; k++)
                a = _mm256_max_epu8(a, _mm256_loadu_si256((const __m256i *)(rows[k] + x)));
        else
            for (int k = 1; k < nrows; k++)
                a = _mm256_min_epu8(a, _mm256_loadu_si256((const __m256i *)(rows[k] + x)));
        _mm256_storeu_si256((__m256i *)(o + x), a);
    }
    return x;
}

PF_TARGET_AVX512 static int minmax_rows_avx512(uint8_t *o, const uint8_t *const *rows, int nrows,
                                               int n, int is_max)
{
    int x = 0;
    for (; x + 64 <= n; x += 64) {
        __m512i a = _mm512_loadu_si512(rows[0] + x);
        if (is_max)
            for (int k = 1; k < nrows; k++) a = _mm512_max_epu8(a, _mm512_loadu_si512(rows[k] + x));
        else
            for (int k = 1; k < nrows; k++) a = _mm512_min_epu8(a, _mm512_loadu_si512(rows[k] + x));
        _mm512_storeu_si512(o + x, a);
    }
    for (; x + 32 <= n; x += 32) { /* one half-width step */
        __m256i a = _mm256_loadu_si256((const __m256i *)(rows[0] + x));
        for (int k = 1; k < nrows; k++) {
            const __m256i b = _mm256_loadu_si256((const __m256i *)(rows[k] + x));
            a = is_max ? _mm256_max_epu8(a, b) : _mm256_min_epu8(a, b);
        }
        _mm256_storeu_si256((__m256i *)(o + x), a);
    }
    return x;
}

/* FIR: 4 vectors of 8 (AVX2) or 16 (AVX-512) outputs per step; a tail of
 * single vectors. `src(k)` is the k-th tap's input at the step's start. */
#define FIR_BODY(VT, W, SET1, ZERO, LOAD, STORE, MUL, ADD, SRC)                                 \
    int x = 0;                                                                                 \
    for (; x + 4 * (W) <= n; x += 4 * (W)) {                                                   \
        VT a0 = ZERO(), a1 = ZERO(), a2 = ZERO(), a3 = ZERO();                                 \
        for (int k = 0; k < taps; k++) {                                                       \
            const float *s = SRC;                                                              \
            const VT wk = SET1(w[k]);                                                          \
            a0 = ADD(a0, MUL(wk, LOAD(s)));                                                    \
            a1 = ADD(a1, MUL(wk, LOAD(s + (W))));                                              \
            a2 = ADD(a2, MUL(wk, LOAD(s + 2 * (W))));                                          \
            a3 = ADD(a3, MUL(wk, LOAD(s + 3 * (W))));                                          \
        }                                                                                      \
        STORE(o + x, a0), STORE(o + x + (W), a1), STORE(o + x + 2 * (W), a2);                  \
        STORE(o + x + 3 * (W), a3);                                                            \
    }                                                                                          \
    for (; x + (W) <= n; x += (W)) {                                                           \
        VT a0 = ZERO();                                                                        \
        for (int k = 0; k < taps; k++) {                                                       \
            const float *s = SRC;                                                              \
            a0 = ADD(a0, MUL(SET1(w[k]), LOAD(s)));                                            \
        }                                                                                      \
        STORE(o + x, a0);                                                                      \
    }                                                                                          \
    return x;

PF_TARGET_AVX2 static int fir_taps_avx2(float *o, const float *b, const float *w, int taps,
                                        int step, int n)
{
    FIR_BODY(__m256, 8, _mm256_set1_ps, _mm256_setzero_ps, _mm256_loadu_ps, _mm256_storeu_ps,
             _mm256_mul_ps, _mm256_add_ps, b + x + (size_t)k * step)
}

PF_TARGET_AVX512 static int fir_taps_avx512(float *o, const float *b, const float *w, int taps,
                                            int step, int n)
{
    FIR_BODY(__m512, 16, _mm512_set1_ps, _mm512_setzero_ps, _mm512_loadu_ps, _mm512_storeu_ps,
             _mm512_mul_ps, _mm512_add_ps, b + x + (size_t)k * step)
}

PF_TARGET_AVX2 static int fir_rows_avx2(float *o, const float *const *rows, const float *w,
                                        int taps, int n)
{
    FIR_BODY(__m256, 8, _mm256_set1_ps, _mm256_setzero_ps, _mm256_loadu_ps, _mm256_storeu_ps,
             _mm256_mul_ps, _mm256_add_ps, rows[k] + x)
}

PF_TARGET_AVX512 static int fir_rows_avx512(float *o, const float *const *rows, const float *w,
                                            int taps, int n)
{
    FIR_BODY(__m512, 16, _mm512_set1_ps, _mm512_setzero_ps, _mm512_loadu_ps, _mm512_storeu_ps,
             _mm512_mul_ps, _mm512_add_ps, rows[k] + x)
}
#endif

int pf_simd_minmax_taps(int level, uint8_t *o, const uint8_t *b, int taps, int n, int is_max)
{
#if PF_HAVE_X86_SIMD
    if (level >= PF_SIMD_AVX512) return minmax_taps_avx512(o, b, taps, n, is_max);
    if (level >= PF_SIMD_AVX2) return minmax_taps_avx2(o, b, taps, n, is_max);
#endif
    (void)level, (void)o, (void)b, (void)taps, (void)n, (void)is_max;
    return 0;
}

int pf_simd_minmax_rows(int level, uint8_t *o, const uint8_t *const *rows, int nrows, int n,
                        int is_max)
{
#if PF_HAVE_X86_SIMD
    if (level >= PF_SIMD_AVX512) return minmax_rows_avx512(o, rows, nrows, n, is_max);
    if (level >= PF_SIMD_AVX2) return minmax_rows_avx2(o, rows, nrows, n, is_max);
#endif
    (void)level, (void)o, (void)rows, (void)nrows, (void)n, (void)is_max;
    return 0;
}

int pf_simd_fir_taps(int level, float *o, const float *b, const float *w, int taps, int step,
                     int n)
{
#if PF_HAVE_X86_SIMD
    if (level >= PF_SIMD_AVX512) return fir_taps_avx512(o, b, w, taps, step, n);
    if (level >= PF_SIMD_AVX2) return fir_taps_avx2(o, b, w, taps, step, n);
#endif
    (void)level, (void)o, (void)b, (void)w, (void)taps, (void)step, (void)n;
    return 0;
}

int pf_simd_fir_rows(int level, float *o, const float *const *rows, const float *w, int taps,
                     int n)
{
#if PF_HAVE_X86_SIMD
    if (level >= PF_SIMD_AVX512) return fir_rows_avx512(o, rows, w, taps, n);
    if (level >= PF_SIMD_AVX2) return fir_rows_avx2(o, rows, w, taps, n);
#endif
    (void)level, (void)o, (void)rows, (void)w, (void)taps, (void)n;
    return 0;
}
