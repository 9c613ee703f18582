/* Private: mask post-processing and refinement between the public wrappers
 * (src/ops/mask.c) and the three implementations:
 *   pf_ref_mask_*   plain C reference, one thread   src/cpu/mask_ref.c
 *   pf_cpu_mask_*   multi-threaded CPU path          src/cpu/mask.c
 *   pf_cuda_mask_*  CUDA kernel launchers           src/cuda/mask.cu
 *
 * The wrappers validate everything (dtypes, shapes, contiguity, ranges,
 * overlaps, memory reachability) and flatten the tensors into the plain
 * descriptors below; implementations only compute and may assume every field
 * is valid and every count is >= 1 (empty tensors never reach them).
 *
 * Arithmetic that all three share, so that results agree (ops.h states it):
 *   sigmoid(x)  = 1.0f / (1.0f + expf(-x))                          float
 *   softmax     m = max_c x_c (first maximum), s = sum_{c = 0..C-1} expf(x_c - m)
 *               in that order, prob = expf(x_cls - m) / s            float
 *   temporal    state = alpha * mask + (1.0f - alpha) * state        float
 *   feather     weights from pf_mk_gauss_weights() (double, rounded to float
 *               once); horizontal pass then vertical pass, each
 *               acc = 0; for k = -R..R: acc += w[k + R] * x[clamp(i + k)]   float
 * The reference and the CPU path evaluate exactly these expressions in this
 * order with the same libm, so they agree to the bit; the CUDA kernels use
 * CUDA's expf (within 2 ulp of glibc's) and fused multiply-adds in the
 * feather sums, hence the tolerances in ops.h. Morphology is min/max of
 * integers and exact everywhere. */
#ifndef PF_OPS_MASK_H
#define PF_OPS_MASK_H

#include <stdint.h>
#include <string.h>

#include "pixflow/ops.h"

PF_BEGIN_DECLS

/* Largest feather radius: ceil(3 * 64). */
#define PF_MK_MAX_RADIUS 192
#define PF_MK_MAX_TAPS (2 * PF_MK_MAX_RADIUS + 1)
/* Largest morphology radius. */
#define PF_MK_MAX_MORPH_RADIUS 64

typedef struct pf_mk_threshold {
    const void *src;      /* n values, f32 or f16 */
    uint8_t *dst;         /* n values */
    int64_t n;
    int32_t f16;          /* src is IEEE half */
    int32_t logits;       /* compare sigmoid(src) */
    float threshold;
} pf_mk_threshold;

typedef struct pf_mk_argmax {
    const void *src;      /* [N, C, HW] (nchw) or [N, HW, C] (nhwc), f32 or f16 */
    uint8_t *labels;      /* [N, HW] or NULL */
    float *prob;          /* [N, HW] or NULL */
    int64_t n;            /* images */
    int64_t hw;           /* pixels per image */
    int32_t c;            /* classes, >= 1 (<= 255 when labels) */
    int32_t cls;          /* class of prob, 0..c-1 (when prob) */
    int32_t nhwc;
    int32_t f16;
} pf_mk_argmax;

typedef struct pf_mk_temporal {
    float *state;
    const float *mask;
    int64_t n;
    float alpha;          /* (0, 1] */
    int32_t reset;        /* state = mask */
    float cut;            /* > 0: also state = mask when mean |mask - state| > cut (a scene cut) */
} pf_mk_temporal;

/* Mean of |a[i] - b[i]| over n values, summed in double in index order (the CPU paths' scene-cut
 * test, so the reference and the optimised path decide alike). */
double pf_mk_mean_abs_diff(const float *a, const float *b, int64_t n);

/* Separable filters (feather, morphology) over `planes` planes of
 * height x width, stored one after another. */
typedef struct pf_mk_sep {
    const void *src;      /* feather: f32; morph: u8 */
    void *dst;
    int64_t planes;
    int32_t height, width;
    int32_t radius;       /* taps k = -radius..radius */
    int32_t op;           /* morph: pf_morph_op */
    const float *weights; /* feather: 2 radius + 1 weights (host memory) */
} pf_mk_sep;

pf_status pf_ref_mask_threshold(pf_ops *ops, const pf_mk_threshold *a);
pf_status pf_cpu_mask_threshold(pf_ops *ops, const pf_mk_threshold *a);
pf_status pf_ref_mask_argmax(pf_ops *ops, const pf_mk_argmax *a);
pf_status pf_cpu_mask_argmax(pf_ops *ops, const pf_mk_argmax *a);
pf_status pf_ref_mask_temporal(pf_ops *ops, const pf_mk_temporal *a);
pf_status pf_cpu_mask_temporal(pf_ops *ops, const pf_mk_temporal *a);
pf_status pf_ref_mask_feather(pf_ops *ops, const pf_mk_sep *a);
pf_status pf_cpu_mask_feather(pf_ops *ops, const pf_mk_sep *a);
pf_status pf_ref_mask_morph(pf_ops *ops, const pf_mk_sep *a);
pf_status pf_cpu_mask_morph(pf_ops *ops, const pf_mk_sep *a);
#ifdef PF_HAVE_CUDA
pf_status pf_cuda_mask_threshold(pf_ops *ops, const pf_mk_threshold *a);
pf_status pf_cuda_mask_argmax(pf_ops *ops, const pf_mk_argmax *a);
pf_status pf_cuda_mask_temporal(pf_ops *ops, const pf_mk_temporal *a);
pf_status pf_cuda_mask_feather(pf_ops *ops, const pf_mk_sep *a);
pf_status pf_cuda_mask_morph(pf_ops *ops, const pf_mk_sep *a);
#endif

/* The feather's kernel for `sigma` (0 < sigma <= 64): returns the radius
 * R = ceil(3 sigma) and fills w[0 .. 2R] with exp(-k^2 / (2 sigma^2)),
 * k = -R..R, normalised to sum 1, computed in double and rounded to float
 * once. w must hold PF_MK_MAX_TAPS floats. */
int pf_mk_gauss_weights(float sigma, float *w);

/* How many planes of `plane_bytes` each one pass of a separable filter
 * processes at a time, so that intermediate planes in scratch memory stay
 * near `cap` bytes (at least one plane, at most `planes`). */
static inline int64_t pf_mk_plane_group(int64_t planes, size_t plane_bytes, size_t cap)
{
    int64_t g = plane_bytes ? (int64_t)(cap / plane_bytes) : planes;
    if (g < 1) g = 1;
    return g < planes ? g : planes;
}

/* Exact IEEE half -> float for the CPU path (the reference uses the public
 * pf_f16_to_f32, an independent implementation the test compares this with):
 * the exponent/mantissa bits moved into float position and rebiased by one
 * multiplication by 2^112, which also turns half subnormals into the right
 * float normals; infinities and NaNs keep their payload. */
static inline float pf_mk_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t em = h & 0x7FFFu;
    uint32_t bits;
    if (em >= 0x7C00u) {
        bits = sign | 0x7F800000u | ((em & 0x3FFu) << 13);
    } else {
        uint32_t u = em << 13;
        float f;
        memcpy(&f, &u, sizeof f);
        f *= 0x1p112f;
        memcpy(&bits, &f, sizeof bits);
        bits |= sign;
    }
    float out;
    memcpy(&out, &bits, sizeof out);
    return out;
}

/* The same conversion for PF_MK_VB values at once, written without
 * branches (a mask selects the inf/NaN case) and with a fixed trip count,
 * so that GCC vectorises it at -O2. */
#define PF_MK_VB 64
static inline void pf_mk_f16_block(const uint16_t *h, float *out)
{
    uint32_t tmp[PF_MK_VB]; /* out written once at the end: no aliasing with h */
    for (int i = 0; i < PF_MK_VB; i++) {
        uint32_t sign = (uint32_t)(h[i] & 0x8000u) << 16;
        uint32_t em = h[i] & 0x7FFFu;
        uint32_t u = em << 13, bits;
        float f;
        memcpy(&f, &u, sizeof f);
        f *= 0x1p112f;
        memcpy(&bits, &f, sizeof bits);
        uint32_t special = sign | 0x7F800000u | ((em & 0x3FFu) << 13);
        uint32_t m = 0u - (uint32_t)(em >= 0x7C00u);
        tmp[i] = (special & m) | ((bits | sign) & ~m);
    }
    memcpy(out, tmp, sizeof tmp);
}

PF_END_DECLS

#endif
