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

/* Min/max kernels: two independent vectors per step (the tap chain of one
 * vector is serial; two keep both vector ports busy), then one, then the
 * AVX2 width for AVX-512's tail. OP is the epu8 max or min. */
#define MM_TAPS(VT, W, LOAD, STORE, OP)                                                        \
    for (; x + 2 * (W) <= n; x += 2 * (W)) {                                                   \
        VT a = LOAD(b + x), c = LOAD(b + x + (W));                                             \
        for (int k = 1; k < taps; k++) {                                                       \
            a = OP(a, LOAD(b + x + k));                                                        \
            c = OP(c, LOAD(b + x + (W) + k));                                                  \
        }                                                                                      \
        STORE(o + x, a), STORE(o + x + (W), c);                                                \
    }                                                                                          \
    for (; x + (W) <= n; x += (W)) {                                                           \
        VT a = LOAD(b + x);                                                                    \
        for (int k = 1; k < taps; k++) a = OP(a, LOAD(b + x + k));                             \
        STORE(o + x, a);                                                                       \
    }
#define MM_ROWS(VT, W, LOAD, STORE, OP)                                                        \
    for (; x + 2 * (W) <= n; x += 2 * (W)) {                                                   \
        VT a = LOAD(rows[0] + x), c = LOAD(rows[0] + x + (W));                                 \
        for (int k = 1; k < nrows; k++) {                                                      \
            a = OP(a, LOAD(rows[k] + x));                                                      \
            c = OP(c, LOAD(rows[k] + x + (W)));                                                \
        }                                                                                      \
        STORE(o + x, a), STORE(o + x + (W), c);                                                \
    }                                                                                          \
    for (; x + (W) <= n; x += (W)) {                                                           \
        VT a = LOAD(rows[0] + x);                                                              \
        for (int k = 1; k < nrows; k++) a = OP(a, LOAD(rows[k] + x));                          \
        STORE(o + x, a);                                                                       \
    }
#define LD256(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define ST256(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), (v))
#define LD512(p) _mm512_loadu_si512((const void *)(p))
#define ST512(p, v) _mm512_storeu_si512((void *)(p), (v))

PF_TARGET_AVX2 static int minmax_taps_avx2(uint8_t *o, const uint8_t *b, int taps, int n,
                                           int is_max)
{
    int x = 0;
    if (is_max) {
        MM_TAPS(__m256i, 32, LD256, ST256, _mm256_max_epu8)
    } else {
        MM_TAPS(__m256i, 32, LD256, ST256, _mm256_min_epu8)
    }
    return x;
}

PF_TARGET_AVX512 static int minmax_taps_avx512(uint8_t *o, const uint8_t *b, int taps, int n,
                                               int is_max)
{
    int x = 0;
    if (is_max) {
        MM_TAPS(__m512i, 64, LD512, ST512, _mm512_max_epu8)
        MM_TAPS(__m256i, 32, LD256, ST256, _mm256_max_epu8)
    } else {
        MM_TAPS(__m512i, 64, LD512, ST512, _mm512_min_epu8)
        MM_TAPS(__m256i, 32, LD256, ST256, _mm256_min_epu8)
    }
    return x;
}

PF_TARGET_AVX2 static int minmax_rows_avx2(uint8_t *o, const uint8_t *const *rows, int nrows,
                                           int n, int is_max)
{
    int x = 0;
    if (is_max) {
        MM_ROWS(__m256i, 32, LD256, ST256, _mm256_max_epu8)
    } else {
        MM_ROWS(__m256i, 32, LD256, ST256, _mm256_min_epu8)
    }
    return x;
}

PF_TARGET_AVX512 static int minmax_rows_avx512(uint8_t *o, const uint8_t *const *rows, int nrows,
                                               int n, int is_max)
{
    int x = 0;
    if (is_max) {
        MM_ROWS(__m512i, 64, LD512, ST512, _mm512_max_epu8)
        MM_ROWS(__m256i, 32, LD256, ST256, _mm256_max_epu8)
    } else {
        MM_ROWS(__m512i, 64, LD512, ST512, _mm512_min_epu8)
        MM_ROWS(__m256i, 32, LD256, ST256, _mm256_min_epu8)
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
