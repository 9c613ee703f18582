/* Private: the fused preprocess between its public wrapper (src/ops/
 * preprocess.c) and the three implementations:
 *   pf_ref_preprocess   plain C reference, one thread   src/cpu/preprocess_ref.c
 *   pf_cpu_preprocess   multi-threaded CPU path          src/cpu/preprocess.c
 *   pf_cuda_preprocess  CUDA kernel launcher             src/cuda/preprocess.cu
 *
 * The wrapper validates everything, computes the letterbox geometry of every
 * frame and hands the backends a chunk of at most PF_PP_MAX_FRAMES frame
 * descriptors plus the call's parameters. Implementations only compute; they
 * may assume every field below is valid (formats supported, ROIs inside their
 * frames, content boxes inside the destination, std != 0).
 *
 * Tap arithmetic shared by the CPU path and the CUDA kernel (pf_pp_taps_*) is
 * exact integer arithmetic followed by one float division of two exact
 * integers, so both compute bit-identical source indices and weights. The
 * reference deliberately does NOT use these helpers: it computes coordinates
 * in double straight from the formulas in ops.h, so a mistake here shows up as
 * a test failure instead of being copied into the definition of correct. */
#ifndef PF_OPS_PREPROCESS_H
#define PF_OPS_PREPROCESS_H

#include <stdint.h>

#include "pixflow/ops.h"

#ifdef __CUDACC__
#define PF_PP_HD static __host__ __device__ __forceinline__
#else
#define PF_PP_HD static inline
#endif

PF_BEGIN_DECLS

/* Frames per backend call. The wrapper splits larger batches into chunks
 * (each chunk one kernel launch on CUDA, with its descriptors passed by value
 * as kernel parameters: nothing is uploaded, nothing is allocated per call,
 * and the launch is safe to capture in a CUDA graph). */
#define PF_PP_MAX_FRAMES 64

/* One source frame, as the implementations see it. Coordinates are in pixels
 * of plane 0; roi_* is the source rectangle (already validated to lie inside
 * the frame), content_* the destination box it is resized into (the whole
 * destination without letterbox). */
typedef struct pf_pp_frame {
    const uint8_t *plane[3];  /* RGB/BGR/RGBA: [0]; NV12: Y, UV; I420: Y, U, V */
    int64_t stride[3];        /* bytes between rows of each plane */
    int32_t format;           /* pf_pixfmt: RGB24, BGR24, RGBA, NV12 or I420 */
    int32_t roi_x, roi_y, roi_w, roi_h;
    int32_t pad_left, pad_top, content_w, content_h;
    int32_t reserved;         /* keeps the struct a multiple of 8 bytes */
} pf_pp_frame;

/* Per-call parameters, the same for every frame of the call. */
typedef struct pf_pp_params {
    void *dst;                /* element [0, 0, 0, 0] of this chunk's first frame */
    int32_t n;                /* frames in this chunk, 1..PF_PP_MAX_FRAMES */
    int32_t width, height;    /* destination W x H */
    int32_t nchw;             /* 1: [N,3,H,W]; 0: [N,H,W,3] */
    int32_t f16;              /* 1: IEEE half; 0: float */
    int32_t interp;           /* pf_interp */
    int32_t bgr;              /* output channel 0 is blue */
    int32_t matrix, range;    /* pf_yuv_matrix, pf_yuv_range (YUV sources) */
    /* The user's values, in output channel order (the reference uses these). */
    float mean[3], std[3], pad_value;
    /* Derived by the wrapper for the fast paths: out = x * scale + bias with
     * x in 0..255 (scale = 1 / (255 std), bias = -mean / std), and the
     * normalised padding value per output channel. */
    float scale[3], bias[3], pad_out[3];
    /* YUV -> RGB in float (pf_yuv_coeffs' dec): y_off, y_scale, rv, gu, gv, bu. */
    float yuv[6];
} pf_pp_params;

pf_status pf_ref_preprocess(pf_ops *ops, const pf_pp_params *p, const pf_pp_frame *frames);
pf_status pf_cpu_preprocess(pf_ops *ops, const pf_pp_params *p, const pf_pp_frame *frames);
#ifdef PF_HAVE_CUDA
pf_status pf_cuda_preprocess(pf_ops *ops, const pf_pp_params *p, const pf_pp_frame *frames);
#endif

PF_END_DECLS

/* Tap arithmetic (CPU path and CUDA) -------------------------------------------
 *
 * Destination index i in 0..c-1 of an axis whose content is c pixels long
 * samples a source axis of r pixels (the ROI extent; indices returned are
 * relative to the ROI, clamped into 0..r-1).
 *
 * Bilinear: the source coordinate (i + 0.5) r / c - 0.5 equals
 * num / (2c) with num = (2i + 1) r - c, an exact integer. Its floor and
 * remainder give the left tap and the weight of the right one,
 * fx = rem / (2c), computed as one float division of two integers below 2^24
 * (both exact in float), hence identical on every backend. */
PF_PP_HD void pf_pp_taps_bilinear(int i, int c, int r, int *k0, int *k1, float *fx)
{
    int64_t num = (int64_t)(2 * i + 1) * r - c, den = 2 * (int64_t)c;
    int64_t q = num >= 0 ? num / den : -((-num + den - 1) / den); /* floor division */
    int64_t rem = num - q * den;
    int a = (int)q, b = (int)q + 1;
    *k0 = a < 0 ? 0 : (a > r - 1 ? r - 1 : a);
    *k1 = b < 0 ? 0 : (b > r - 1 ? r - 1 : b);
    *fx = (float)rem / (float)den;
}

/* Nearest: floor((i + 0.5) r / c) = floor((2i + 1) r / (2c)), clamped. */
PF_PP_HD int pf_pp_taps_nearest(int i, int c, int r)
{
    int64_t k = ((int64_t)(2 * i + 1) * r) / (2 * (int64_t)c);
    return k > r - 1 ? r - 1 : (int)k;
}

/* Area (only where r >= c): destination pixel i covers the source interval
 * [i r / c, (i + 1) r / c). In units of 1/c source pixel that is
 * [i r, (i + 1) r) and source pixel k is [k c, (k + 1) c): overlaps are exact
 * integers and the weight of k is overlap / r. *k0 = first source pixel,
 * return value = number of taps (at most pf_pp_area_max_taps(c, r)). */
PF_PP_HD int pf_pp_area_first(int i, int c, int r, int *k0)
{
    int64_t lo = (int64_t)i * r, hi = lo + r;
    int64_t first = lo / c, last = (hi + c - 1) / c; /* [first, last) */
    *k0 = (int)first;
    return (int)(last - first);
}

PF_PP_HD float pf_pp_area_weight(int i, int c, int r, int k)
{
    int64_t lo = (int64_t)i * r, hi = lo + r;
    int64_t a = (int64_t)k * c, b = a + c;
    int64_t ov = (hi < b ? hi : b) - (lo > a ? lo : a);
    return (float)ov / (float)r;
}

/* The most taps any destination pixel needs along an area axis: the interval
 * is r / c long, so it touches at most ceil(r / c) + 1 source pixels. */
PF_PP_HD int pf_pp_area_max_taps(int c, int r) { return (r + c - 1) / c + 1; }

#endif
