/* Private: resize between its public wrappers (src/ops/resize.c:
 * pf_ops_resize, pf_ops_resize_mask) and the three implementations:
 *   pf_ref_resize   plain C reference, one thread, one output sample at a time   src/cpu/resize_ref.c
 *   pf_cpu_resize   multi-threaded CPU path, separable, rows by (ith, nth)       src/cpu/resize.c
 *   pf_cuda_resize  CUDA kernel launcher, one launch per plane geometry          src/cuda/resize.cu
 *
 * The wrappers validate everything and describe the work as planes
 * (pf_rs_plane): a packed frame is one plane of 1, 3 or 4 channels; NV12 is a
 * Y plane and an interleaved UV plane of 2 channels at chroma size; I420 is
 * three planes; a mask tensor [..., H, W] is `count` equal f32 planes of one
 * channel back to back.
 *
 * The definition (ops.h, Sampling), per axis, for destination index i of c
 * pixels over a source axis of r pixels:
 *   nearest   k = floor((2i + 1) r / (2c))
 *   bilinear  s = ((2i + 1) r - c) / (2c) (the centre-aligned coordinate as an
 *             exact fraction), k0 = floor(s), fx = s - k0, taps k0 and k0 + 1
 *             clamped into 0..r-1 with weights 1 - fx and fx
 *   box       (area on an axis that shrinks or keeps its size) destination
 *             pixel i covers source [i r / c, (i + 1) r / c); every source
 *             pixel k it overlaps is a tap, weight = overlap / (r / c)
 *   area on an axis that grows is bilinear.
 * Weights are integers divided once in float (fx = rem / (2c), box weight =
 * overlap_in_1/c_units / r: both operands exact integers < 2^24), so every
 * implementation has the same weights bit for bit. A sample is
 *   v = sum_t wy_t * (sum_s wx_s * p(s, t))
 * with both sums taken left to right from the first product (t, s in
 * increasing source order), through CV_MUL/CV_ADD (no FMA contraction, see
 * convert.h); u8 results are pf_cv_round(v) (clamp, + 0.5f, truncate), f32
 * results are v. Nearest copies the sample. The reference derives taps and
 * weights again in its own code; the CPU path and the kernel use the helpers
 * below. */
#ifndef PF_OPS_RESIZE_H
#define PF_OPS_RESIZE_H

#include <stdint.h>

#include "convert.h"

#ifdef __CUDACC__
#define PF_RS_FN static __host__ __device__ __forceinline__
#else
#define PF_RS_FN static inline
#endif

PF_BEGIN_DECLS

/* Axis modes. */
#define PF_RS_NEAREST 0
#define PF_RS_BILINEAR 1
#define PF_RS_BOX 2

typedef struct pf_rs_plane {
    const void *src;
    void *dst;
    int64_t src_stride, dst_stride;   /* bytes between rows */
    int64_t src_plane, dst_plane;     /* bytes between planes when count > 1 */
    int32_t sw, sh, dw, dh;           /* source and destination size, pixels */
    int32_t channels;                 /* samples per pixel, 1..4 */
    int32_t f32;                      /* 1: float samples (masks), 0: u8 */
    int32_t count;                    /* planes of this geometry, >= 1 */
    int32_t interp;                   /* pf_interp */
} pf_rs_plane;

pf_status pf_ref_resize(pf_ops *ops, const pf_rs_plane *p);
pf_status pf_cpu_resize(pf_ops *ops, const pf_rs_plane *p);
#ifdef PF_HAVE_CUDA
pf_status pf_cuda_resize(pf_ops *ops, const pf_rs_plane *p);
#endif

PF_END_DECLS

/* Tap arithmetic (CPU path and CUDA) -------------------------------------------- */

PF_RS_FN int pf_rs_mode(int interp, int c, int r)
{
    if (interp == PF_INTERP_NEAREST) return PF_RS_NEAREST;
    if (interp == PF_INTERP_AREA && r >= c) return PF_RS_BOX;
    return PF_RS_BILINEAR;
}

PF_RS_FN float pf_rs_div(float a, float b)
{
#ifdef __CUDA_ARCH__
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}

PF_RS_FN int pf_rs_nearest(int i, int c, int r)
{
    int64_t k = ((int64_t)(2 * i + 1) * r) / (2 * (int64_t)c);
    return k > r - 1 ? r - 1 : (int)k;
}

/* Bilinear taps k0, k1 (clamped) and the weight of k1. */
PF_RS_FN void pf_rs_bilinear(int i, int c, int r, int *k0, int *k1, float *fx)
{
    const int64_t num = (int64_t)(2 * i + 1) * r - c, den = 2 * (int64_t)c;
    const int64_t q = num >= 0 ? num / den : -((-num + den - 1) / den); /* floor */
    const int64_t rem = num - q * den;
    const int64_t a = q, b = q + 1;
    *k0 = a < 0 ? 0 : (a > r - 1 ? r - 1 : (int)a);
    *k1 = b < 0 ? 0 : (b > r - 1 ? r - 1 : (int)b);
    *fx = pf_rs_div((float)rem, (float)den);
}

/* Box: first source pixel and number of taps of destination pixel i. In units
 * of 1/c source pixel, i covers [i r, (i + 1) r) and pixel k is [k c, (k+1) c). */
PF_RS_FN int pf_rs_box_first(int i, int c, int r, int *k0)
{
    const int64_t lo = (int64_t)i * r, hi = lo + r;
    const int64_t first = lo / c, last = (hi + c - 1) / c;
    *k0 = (int)first;
    return (int)(last - first);
}

PF_RS_FN float pf_rs_box_weight(int i, int c, int r, int k)
{
    const int64_t lo = (int64_t)i * r, hi = lo + r;
    const int64_t a = (int64_t)k * c, b = a + c;
    const int64_t ov = (hi < b ? hi : b) - (lo > a ? lo : a);
    return pf_rs_div((float)ov, (float)r);
}

/* Most taps a box destination pixel can need: the interval is r / c long. */
PF_RS_FN int pf_rs_box_max_taps(int c, int r) { return (r + c - 1) / c + 1; }

#endif
