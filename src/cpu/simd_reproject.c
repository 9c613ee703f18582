/* AVX2 / AVX-512 row kernel of the CPU reprojection (simd.h's contract),
 * bilinear, 3 or 4 channels.
 *
 * Everything per pixel in vectors of 8 or 16: the ray, both atan2
 * polynomials (with the division and the square root, correctly rounded in
 * SIMD as in scalar), the bilinear taps, four 32-bit gathers (one per tap,
 * all channels at once) and the blend. reproject_math.h uses only correctly
 * rounded operations precisely so that this is possible: the output is the
 * reference's to the bit. The scalar CPU path vectorises the mapping with
 * SSE2 but gathers and blends one pixel at a time. The body is
 * simd_reproject_body.h, instantiated once per instruction set. */
#include <string.h>

#include "../ops/reproject.h"
#include "simd.h"

#if PF_HAVE_X86_SIMD
#include <immintrin.h>

/* AVX-512 (VBMI for the 4 -> 3 byte compaction) ------------------------------------------- */
#define FN PF_TARGET_AVX512VBMI static int rp_row_avx512
#define W 16
#define VF __m512
#define VI __m512i
#define VM __mmask16
#define F(x) _mm512_set1_ps(x)
#define I(x) _mm512_set1_epi32(x)
#define LOADI(p) _mm512_loadu_si512(p)
#define LOADF(p) _mm512_loadu_ps(p)
#define STOREF(p, v) _mm512_storeu_ps((p), (v))
#define ADD _mm512_add_ps
#define SUB _mm512_sub_ps
#define MUL _mm512_mul_ps
#define DIV _mm512_div_ps
#define SQRT _mm512_sqrt_ps
#define IADD _mm512_add_epi32
#define ISUB _mm512_sub_epi32
#define IMUL _mm512_mullo_epi32
#define IAND _mm512_and_si512
#define IOR _mm512_or_si512
#define GT(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_GT_OQ)
#define LT(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_LT_OQ)
#define IGT(a, b) _mm512_cmpgt_epi32_mask((a), (b))
#define IEQ(a, b) _mm512_cmpeq_epi32_mask((a), (b))
#define SEL(m, t, f) _mm512_mask_blend_ps((m), (f), (t))
#define ISEL(m, t, f) _mm512_mask_blend_epi32((m), (f), (t))
#define ABS(x) _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), I(0x7fffffff)))
#define NEG(x) _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(x), I((int)0x80000000u)))
#define CVTT _mm512_cvttps_epi32
#define CVT _mm512_cvtepi32_ps
#define GATHER(base, idx) _mm512_i32gather_epi32((idx), (const void *)(base), 1)
#define SRLV _mm512_srlv_epi32
#define SLLV _mm512_sllv_epi32
/* byte q of 48 <- byte q / 3 * 4 + q % 3 of the 16 packed pixels */
static const uint8_t k_pack3_bytes[64] = {
    0,  1,  2,  4,  5,  6,  8,  9,  10, 12, 13, 14, 16, 17, 18, 20, 21, 22, 24, 25, 26, 28,
    29, 30, 32, 33, 34, 36, 37, 38, 40, 41, 42, 44, 45, 46, 48, 49, 50, 52, 53, 54, 56, 57,
    58, 60, 61, 62, 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0};
#define PACK_PREP const __m512i k_pack3 = _mm512_loadu_si512(k_pack3_bytes)
#define STORE_PIXELS(o, px, C)                                                                \
    do {                                                                                      \
        if ((C) == 4) {                                                                       \
            _mm512_storeu_si512((o), (px));                                                   \
        } else {                                                                              \
            _mm512_mask_storeu_epi8((o), ((__mmask64)1 << 48) - 1,                            \
                                    _mm512_permutexvar_epi8(k_pack3, (px)));                  \
        }                                                                                     \
    } while (0)
#include "simd_reproject_body.h"
#undef FN
#undef W
#undef VF
#undef VI
#undef VM
#undef F
#undef I
#undef LOADI
#undef LOADF
#undef STOREF
#undef ADD
#undef SUB
#undef MUL
#undef DIV
#undef SQRT
#undef IADD
#undef ISUB
#undef IMUL
#undef IAND
#undef IOR
#undef GT
#undef LT
#undef IGT
#undef IEQ
#undef SEL
#undef ISEL
#undef ABS
#undef NEG
#undef CVTT
#undef CVT
#undef GATHER
#undef SRLV
#undef SLLV
#undef STORE_PIXELS
#undef PACK_PREP

/* AVX2 ---------------------------------------------------------------------------------- */
/* 8 pixels of 4 bytes -> 8 of 3: the low 12 bytes of each 128-bit half. */
PF_TARGET_AVX2 static inline void store3_avx2(uint8_t *o, __m256i px)
{
    const __m256i sh = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1,
                                        0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
    const __m256i c = _mm256_shuffle_epi8(px, sh);
    const __m128i lo = _mm256_castsi256_si128(c), hi = _mm256_extracti128_si256(c, 1);
    _mm_storel_epi64((__m128i *)(void *)o, lo);
    const int l2 = _mm_extract_epi32(lo, 2);
    memcpy(o + 8, &l2, 4);
    _mm_storel_epi64((__m128i *)(void *)(o + 12), hi);
    const int h2 = _mm_extract_epi32(hi, 2);
    memcpy(o + 20, &h2, 4);
}

#define FN PF_TARGET_AVX2 static int rp_row_avx2
#define PACK_PREP (void)0
#define W 8
#define VF __m256
#define VI __m256i
#define VM __m256i
#define F(x) _mm256_set1_ps(x)
#define I(x) _mm256_set1_epi32(x)
#define LOADI(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define LOADF(p) _mm256_loadu_ps(p)
#define STOREF(p, v) _mm256_storeu_ps((p), (v))
#define ADD _mm256_add_ps
#define SUB _mm256_sub_ps
#define MUL _mm256_mul_ps
#define DIV _mm256_div_ps
#define SQRT _mm256_sqrt_ps
#define IADD _mm256_add_epi32
#define ISUB _mm256_sub_epi32
#define IMUL _mm256_mullo_epi32
#define IAND _mm256_and_si256
#define IOR _mm256_or_si256
#define GT(a, b) _mm256_castps_si256(_mm256_cmp_ps((a), (b), _CMP_GT_OQ))
#define LT(a, b) _mm256_castps_si256(_mm256_cmp_ps((a), (b), _CMP_LT_OQ))
#define IGT(a, b) _mm256_cmpgt_epi32((a), (b))
#define IEQ(a, b) _mm256_cmpeq_epi32((a), (b))
#define SEL(m, t, f) _mm256_blendv_ps((f), (t), _mm256_castsi256_ps(m))
#define ISEL(m, t, f) _mm256_blendv_epi8((f), (t), (m))
#define ABS(x) _mm256_castsi256_ps(_mm256_and_si256(_mm256_castps_si256(x), I(0x7fffffff)))
#define NEG(x) _mm256_castsi256_ps(_mm256_xor_si256(_mm256_castps_si256(x), I((int)0x80000000u)))
#define CVTT _mm256_cvttps_epi32
#define CVT _mm256_cvtepi32_ps
#define GATHER(base, idx) _mm256_i32gather_epi32((const int *)(const void *)(base), (idx), 1)
#define SRLV _mm256_srlv_epi32
#define SLLV _mm256_sllv_epi32
#define STORE_PIXELS(o, px, C)                                                                \
    do {                                                                                      \
        if ((C) == 4) _mm256_storeu_si256((__m256i *)(void *)(o), (px));                      \
        else store3_avx2((o), (px));                                                          \
    } while (0)
#include "simd_reproject_body.h"
#endif

int pf_simd_reproject_ok(int level, const pf_rp_job *job)
{
    if (level < PF_SIMD_AVX2 || !PF_HAVE_X86_SIMD) return 0;
    if (job->interp != PF_INTERP_BILINEAR || (job->channels != 3 && job->channels != 4)) return 0;
    if (job->src_w < 2) return 0;
    /* 32-bit gather offsets */
    const uint64_t last = (uint64_t)(job->src_h - 1) * job->src_stride + (uint64_t)job->src_w * 4;
    return last < (uint64_t)INT32_MAX;
}

int pf_simd_reproject_row(int level, const pf_rp_job *job, int v, int j, int i0, int i1,
                          uint8_t *out, const float *cfx, const float *cfy, float *sfx, float *sfy)
{
#if PF_HAVE_X86_SIMD
    if (level >= PF_SIMD_AVX512 && pf_cpu_has_avx512vbmi())
        return rp_row_avx512(job, v, j, i0, i1, out, cfx, cfy, sfx, sfy);
    if (level >= PF_SIMD_AVX2) return rp_row_avx2(job, v, j, i0, i1, out, cfx, cfy, sfx, sfy);
#endif
    (void)level, (void)job, (void)v, (void)j, (void)out, (void)i1;
    (void)cfx, (void)cfy, (void)sfx, (void)sfy;
    return i0;
}
