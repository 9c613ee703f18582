/* Private: colour conversion between its public wrapper (src/ops/convert.c)
 * and the three implementations:
 *   pf_ref_convert   plain C reference, one thread, one pixel at a time   src/cpu/convert_ref.c
 *   pf_cpu_convert   multi-threaded CPU path, rows split by (ith, nth)     src/cpu/convert.c
 *   pf_cuda_convert  CUDA kernel launcher, one launch per frame            src/cuda/convert.cu
 *
 * Why the per-pixel arithmetic lives here, shared word for word by all three:
 * outputs are u8, and the project compares integer outputs bit-exactly across
 * implementations. That holds only if every implementation performs the same
 * IEEE single-precision operations in the same order, so
 *   - every float operation goes through CV_MUL/CV_ADD/CV_SUB: on CUDA the
 *     __f*_rn intrinsics, which nvcc never contracts into FMAs; in C tiny
 *     functions, so no compiler fuses across them (GCC leaves contraction off
 *     in ISO C mode anyway, which the build uses);
 *   - the coefficients are computed once in double by the wrapper
 *     (pf_yuv_coeffs, yuv.h) and handed to every backend as the same float
 *     bits;
 *   - rounding is one definition, pf_cv_round: clamp to [0, 255], add 0.5f,
 *     truncate ("round half up from the float value", ops.h).
 * What the reference does NOT share is the control flow: it walks pixels and
 * 2x2 blocks directly, while the CPU path works on rows and the kernel on
 * blocks, so a wrong index, stride, plane or block edge in a fast path shows
 * up as a mismatch.
 *
 * Every conversion factors through 8-bit RGB: the source pixel is decoded to
 * (R, G, B) integers (exact for RGB24/BGR24/RGBA/GRAY8; YUV rounded by
 * pf_cv_round), then encoded into the destination format. The one exception
 * is NV12 <-> I420 (and a format to itself), which moves samples unchanged. */
#ifndef PF_OPS_CONVERT_H
#define PF_OPS_CONVERT_H

#include <stdint.h>

#include "pixflow/ops.h"
#include "yuv.h"

#ifdef __CUDACC__
#define PF_CV_FN static __device__ __forceinline__
#define CV_MUL(a, b) __fmul_rn((a), (b))
#define CV_ADD(a, b) __fadd_rn((a), (b))
#define CV_SUB(a, b) __fsub_rn((a), (b))
#else
#define PF_CV_FN static inline
static inline float pf_cv_mul_(float a, float b) { return a * b; }
static inline float pf_cv_add_(float a, float b) { return a + b; }
static inline float pf_cv_sub_(float a, float b) { return a - b; }
#define CV_MUL(a, b) pf_cv_mul_((a), (b))
#define CV_ADD(a, b) pf_cv_add_((a), (b))
#define CV_SUB(a, b) pf_cv_sub_((a), (b))
#endif

PF_BEGIN_DECLS

/* One frame as the implementations see it (validated by the wrapper). */
typedef struct pf_cv_image {
    uint8_t *plane[3];        /* RGB/BGR/RGBA/GRAY: [0]; NV12: Y, UV; I420: Y, U, V */
    int64_t stride[3];        /* bytes between rows */
    int32_t format;           /* pf_pixfmt */
    int32_t reserved;
} pf_cv_image;

typedef struct pf_cv_params {
    pf_cv_image src, dst;
    int32_t width, height;    /* both frames, pixels of plane 0 */
    pf_yuv_coeffs_t k;        /* from pf_yuv_coeffs() */
} pf_cv_params;

/* src and dst formats differ (the wrapper copies a format to itself with
 * pf_memcpy2d_async, or on a reference context with pf_ref_convert, which
 * also handles equal formats). */
pf_status pf_ref_convert(pf_ops *ops, const pf_cv_params *p);
pf_status pf_cpu_convert(pf_ops *ops, const pf_cv_params *p);
#ifdef PF_HAVE_CUDA
pf_status pf_cuda_convert(pf_ops *ops, const pf_cv_params *p);
#endif

PF_END_DECLS

/* Per-pixel arithmetic (all three implementations) -------------------------- */

#define PF_CV_GRAY_R 0.299f
#define PF_CV_GRAY_G 0.587f
#define PF_CV_GRAY_B 0.114f

/* Round half up from the float value, clamped to 0..255. */
PF_CV_FN uint8_t pf_cv_round(float v)
{
    v = v < 0.0f ? 0.0f : (v > 255.0f ? 255.0f : v);
    return (uint8_t)(int)CV_ADD(v, 0.5f);
}

/* R, G, B of one pixel from its Y and the chroma sample covering it. */
PF_CV_FN void pf_cv_yuv_to_rgb(const float *k, int Y, int U, int V, uint8_t *r, uint8_t *g,
                               uint8_t *b)
{
    const float yy = CV_MUL(CV_SUB((float)Y, k[0]), k[1]);
    const float u = (float)(U - 128), v = (float)(V - 128);
    *r = pf_cv_round(CV_ADD(yy, CV_MUL(k[2], v)));
    *g = pf_cv_round(CV_SUB(CV_SUB(yy, CV_MUL(k[3], u)), CV_MUL(k[4], v)));
    *b = pf_cv_round(CV_ADD(yy, CV_MUL(k[5], u)));
}

/* BT.601 luma, full range: ((0.299 R + 0.587 G) + 0.114 B). */
PF_CV_FN uint8_t pf_cv_luma(int r, int g, int b)
{
    return pf_cv_round(CV_ADD(CV_ADD(CV_MUL(PF_CV_GRAY_R, (float)r), CV_MUL(PF_CV_GRAY_G, (float)g)),
                              CV_MUL(PF_CV_GRAY_B, (float)b)));
}

/* One YUV output from (possibly averaged) R, G, B: ((cr R + cg G) + cb B) + off. */
PF_CV_FN uint8_t pf_cv_encode(const float *row, float r, float g, float b)
{
    return pf_cv_round(
        CV_ADD(CV_ADD(CV_ADD(CV_MUL(row[0], r), CV_MUL(row[1], g)), CV_MUL(row[2], b)), row[3]));
}

/* The chroma of a 2x2 block (or the 1, 2 pixels an odd edge leaves): sums of
 * the block's R, G, B (exact integers) times 1 / count (1, 1/2 or 1/4: the
 * means are exact), then the U and V rows. */
PF_CV_FN void pf_cv_chroma(const float (*enc)[4], int sr, int sg, int sb, int count, uint8_t *u,
                           uint8_t *v)
{
    const float inv = count == 4 ? 0.25f : (count == 2 ? 0.5f : 1.0f);
    const float r = CV_MUL((float)sr, inv), g = CV_MUL((float)sg, inv), b = CV_MUL((float)sb, inv);
    *u = pf_cv_encode(enc[1], r, g, b);
    *v = pf_cv_encode(enc[2], r, g, b);
}

#define PF_CV_IS_YUV(fmt) ((fmt) == PF_PIXFMT_NV12 || (fmt) == PF_PIXFMT_I420)

#ifndef __CUDACC__
/* pf_cv_round over m values, for the CPU paths, written so that compilers
 * vectorize it: clamping the integer after the conversion instead of the
 * float before it gives the same byte for every |v| < 2^31 (in [0, 255] the
 * float clamp does nothing; below -0.5 the sum truncates to <= 0, in
 * [-0.5, 0) to 0; above 255 it truncates to >= 255), and integer min/max
 * need no branches. The tests compare against pf_cv_round's results. */
static inline void pf_cv_round_row(uint8_t *restrict d, const float *restrict v, int m)
{
    for (int i = 0; i < m; i++) {
        int t = (int)CV_ADD(v[i], 0.5f);
        t = t < 0 ? 0 : t;
        t = t > 255 ? 255 : t;
        d[i] = (uint8_t)t;
    }
}
#endif

#endif
