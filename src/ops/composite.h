/* Private: compositing (pf_ops_composite) between its public wrapper
 * (src/ops/composite.c) and the three implementations:
 *   pf_ref_composite   plain C reference, one thread   src/cpu/composite_ref.c
 *   pf_cpu_composite   multi-threaded CPU path          src/cpu/composite.c
 *   pf_cuda_composite  CUDA kernel launcher             src/cuda/composite.cu
 *
 * The wrapper validates everything and fills one pf_cmp_params: plane
 * pointers and strides, the mask, the background, and the constants the fast
 * paths use (YUV matrices as floats, the blur's factor, radius and weights).
 * Implementations only compute and may assume every field is valid.
 *
 * The output is u8 and is compared bit for bit across implementations
 * (ops.h, Compositing: "identical bytes"). That holds only if every backend
 * performs the same IEEE single-precision operations in the same order, so
 * the per-pixel arithmetic of the CPU path and the CUDA kernels is written
 * once, below, with every operation spelled as CMP_MUL / CMP_ADD / CMP_SUB /
 * CMP_DIV: the __f*_rn intrinsics on CUDA (never contracted into FMAs) and
 * tiny functions in C (GCC leaves contraction off in ISO C mode, which the
 * build uses). The reference deliberately does NOT include these helpers: it
 * writes the formulas of ops.h again, so a mistake here shows up as a test
 * failure instead of being copied into the definition of correct. */
#ifndef PF_OPS_COMPOSITE_H
#define PF_OPS_COMPOSITE_H

#include <stdint.h>

#include "pixflow/ops.h"

#ifdef __CUDACC__
/* Device only: the __f*_rn intrinsics have no host versions. */
#define PF_CMP_HD static __device__ __forceinline__
#define CMP_MUL(a, b) __fmul_rn((a), (b))
#define CMP_ADD(a, b) __fadd_rn((a), (b))
#define CMP_SUB(a, b) __fsub_rn((a), (b))
#define CMP_DIV(a, b) __fdiv_rn((a), (b))
#else
#define PF_CMP_HD static inline
static inline float pf_cmp_mul_(float a, float b) { return a * b; }
static inline float pf_cmp_add_(float a, float b) { return a + b; }
static inline float pf_cmp_sub_(float a, float b) { return a - b; }
static inline float pf_cmp_div_(float a, float b) { return a / b; }
#define CMP_MUL(a, b) pf_cmp_mul_((a), (b))
#define CMP_ADD(a, b) pf_cmp_add_((a), (b))
#define CMP_SUB(a, b) pf_cmp_sub_((a), (b))
#define CMP_DIV(a, b) pf_cmp_div_((a), (b))
#endif

PF_BEGIN_DECLS

/* Most blur taps: 2 ceil(3 sigma) + 1 for sigma <= 8 (full resolution); the
 * downscaled path has sigma / q < 6, so at most 37. */
#define PF_CMP_MAX_TAPS 49
/* sigma above this blurs a q = floor(sigma / 4) times smaller image. */
#define PF_CMP_FULL_RES_SIGMA 8.0f

/* A frame as the implementations see it: RGB24/BGR24/RGBA plane 0; NV12 Y,
 * UV; I420 Y, U, V. */
typedef struct pf_cmp_image {
    const uint8_t *plane[3];
    int64_t stride[3];        /* bytes between rows */
    int32_t format;           /* pf_pixfmt */
    int32_t width, height;
    int32_t reserved;
} pf_cmp_image;

typedef struct pf_cmp_params {
    pf_cmp_image frame;
    pf_cmp_image image;       /* PF_BG_IMAGE, PF_BG_FRAME */
    uint8_t *dst[2];          /* RGB24/BGR24/RGBA: [0]; NV12: Y, UV */
    int64_t dst_stride[2];
    int32_t dst_format;
    int32_t width, height;    /* frame = dst size */
    int32_t kind;             /* pf_background_kind */
    const void *mask;         /* element [.., 0, 0] */
    int64_t mask_stride;      /* elements between mask rows */
    int32_t mask_w, mask_h;
    int32_t mask_u8;          /* 1: u8, 0: f32 */
    int32_t matrix, range;    /* the user's values (the reference uses these) */
    float sigma;              /* the user's blur_sigma */
    float color[3];           /* PF_BG_COLOR: R, G, B */
    /* Derived by the wrapper for the fast paths. */
    float yuv[6];             /* YUV -> RGB: y_off, y_scale, rv, gu, gv, bu */
    float rgb2yuv[10];        /* yr yg yb ur ug ub vr vg vb y_off */
    int32_t blur_q;           /* 1: full resolution; >= 2: downscale factor */
    int32_t blur_w, blur_h;   /* size of the image the blur runs on */
    int32_t blur_r;           /* radius: 2 blur_r + 1 weights */
    float blur_wt[PF_CMP_MAX_TAPS];
} pf_cmp_params;

pf_status pf_ref_composite(pf_ops *ops, const pf_cmp_params *p);
pf_status pf_cpu_composite(pf_ops *ops, const pf_cmp_params *p);
#ifdef PF_HAVE_CUDA
pf_status pf_cuda_composite(pf_ops *ops, const pf_cmp_params *p);
#endif

PF_END_DECLS

/* Shared per-pixel arithmetic (CPU path and CUDA) -------------------------------- */

/* Taps of position num / den (den > 0) on an axis of `n` source pixels:
 * k0 = floor, k1 = k0 + 1, both clamped to 0..n-1; *f = the remainder over
 * den, one division of two integers below 2^24 (exact in float), hence the
 * same bits everywhere. Mask/image axis i of c over r: num = (2i + 1) r - c,
 * den = 2c. Blur upsampling: num = 2x + 1 - q, den = 2q. */
PF_CMP_HD void pf_cmp_taps(int64_t num, int64_t den, int n, int *k0, int *k1, float *f)
{
    int64_t k = num >= 0 ? num / den : -((-num + den - 1) / den); /* floor division */
    int64_t rem = num - k * den;
    int64_t a = k, b = k + 1;
    *k0 = (int)(a < 0 ? 0 : (a > n - 1 ? n - 1 : a));
    *k1 = (int)(b < 0 ? 0 : (b > n - 1 ? n - 1 : b));
    *f = CMP_DIV((float)rem, (float)den);
}

PF_CMP_HD float pf_cmp_lerp(float a, float b, float f) { return CMP_ADD(a, CMP_MUL(f, CMP_SUB(b, a))); }

PF_CMP_HD float pf_cmp_clamp255(float v) { return v < 0.0f ? 0.0f : (v > 255.0f ? 255.0f : v); }

/* Round half up after clamping to 0..255 (NaN gives 0). */
PF_CMP_HD uint8_t pf_cmp_q(float v)
{
    v = v > 0.0f ? v : 0.0f;
    v = v < 255.0f ? v : 255.0f;
    return (uint8_t)(int)CMP_ADD(v, 0.5f);
}

/* m clamped to [0, 1], NaN -> 0. */
PF_CMP_HD float pf_cmp_unit(float m)
{
    m = m > 0.0f ? m : 0.0f;
    return m < 1.0f ? m : 1.0f;
}

/* One Y, U, V sample to R, G, B floats (k = pf_cmp_params.yuv). */
PF_CMP_HD void pf_cmp_yuv2rgb(float Y, float U, float V, const float *k, float *r, float *g,
                              float *b)
{
    float yy = CMP_MUL(CMP_SUB(Y, k[0]), k[1]);
    float u = CMP_SUB(U, 128.0f), v = CMP_SUB(V, 128.0f);
    *r = pf_cmp_clamp255(CMP_ADD(yy, CMP_MUL(k[2], v)));
    *g = pf_cmp_clamp255(CMP_SUB(CMP_SUB(yy, CMP_MUL(k[3], u)), CMP_MUL(k[4], v)));
    *b = pf_cmp_clamp255(CMP_ADD(yy, CMP_MUL(k[5], u)));
}

/* m * F + (1 - m) * B with om = 1 - m. */
PF_CMP_HD float pf_cmp_blend(float m, float om, float f, float b)
{
    return CMP_ADD(CMP_MUL(m, f), CMP_MUL(om, b));
}

/* ((c0 R + c1 G) + c2 B) + off. */
PF_CMP_HD uint8_t pf_cmp_dot3(const float *c, float off, float r, float g, float b)
{
    return pf_cmp_q(CMP_ADD(CMP_ADD(CMP_ADD(CMP_MUL(c[0], r), CMP_MUL(c[1], g)), CMP_MUL(c[2], b)),
                            off));
}

#endif
