/* Private: the rotated crop between its public wrapper (src/ops/
 * crop_rotated.c) and its implementations:
 *   pf_ref_crop_rotated   plain C, one thread (also the CPU path)  src/cpu/crop_rotated_ref.c
 *   pf_cuda_crop_rotated  CUDA kernel launcher                     src/cuda/crop_rotated.cu
 *
 * The wrapper validates everything and computes each rectangle's cosine and
 * sine once (in double, rounded to float), so both backends sample the same
 * points; the per-pixel arithmetic is pf_cr_sample below, shared verbatim. */
#ifndef PF_OPS_CROP_ROTATED_H
#define PF_OPS_CROP_ROTATED_H

#include <stdint.h>

#include "pixflow/ops.h"

#ifdef __CUDACC__
#define PF_CR_HD static __host__ __device__ __forceinline__
#else
#define PF_CR_HD static inline
#endif

PF_BEGIN_DECLS

/* Crops per CUDA launch: the items travel as kernel parameters (nothing
 * uploaded, nothing allocated: safe to capture in a CUDA graph). */
#define PF_CR_MAX_ITEMS 32

typedef struct pf_cr_item {
    const uint8_t *src;       /* pixel (0, 0) of the source frame */
    int64_t stride;           /* bytes between rows */
    int32_t width, height;    /* source size, pixels */
    int32_t channels;         /* bytes per pixel: 3 (RGB24/BGR24) or 4 (RGBA) */
    int32_t swap;             /* 1: source is BGR24, output channel 0 = byte 2 */
    float cx, cy, w, h;       /* the rectangle, source pixels */
    float cos_a, sin_a;
} pf_cr_item;

typedef struct pf_cr_params {
    float *dst;               /* [n][height][width][3] of this chunk's first crop */
    int32_t n, width, height; /* crops in this chunk, output size */
    float scale, bias;        /* out = value * scale + bias, value in 0..255 */
} pf_cr_params;

pf_status pf_ref_crop_rotated(pf_ops *ops, const pf_cr_params *p, const pf_cr_item *items);
#ifdef PF_HAVE_CUDA
pf_status pf_cuda_crop_rotated(pf_ops *ops, const pf_cr_params *p, const pf_cr_item *items);
#endif

PF_END_DECLS

/* The source point output pixel (x, y) samples, in continuous pixel
 * coordinates (pixel k spans [k, k + 1)); see pf_ops_crop_rotated. */
PF_CR_HD void pf_cr_point(const pf_cr_item *it, int x, int y, int W, int H, float *sx, float *sy)
{
    const float u = ((float)x + 0.5f) / (float)W - 0.5f, v = ((float)y + 0.5f) / (float)H - 0.5f;
    const float dx = u * it->w, dy = v * it->h;
    /* Parenthesised and written out so no compiler contracts differently. */
    const float rx = it->cos_a * dx, ry = it->sin_a * dy;
    const float qx = it->sin_a * dx, qy = it->cos_a * dy;
    *sx = it->cx + (rx - ry);
    *sy = it->cy + (qx + qy);
}

/* Bilinear sample of channel-triplet at (sx, sy), edge pixels replicated
 * (MediaPipe's BORDER_REPLICATE for the landmark crop). */
PF_CR_HD void pf_cr_sample(const pf_cr_item *it, float sx, float sy, float out[3])
{
    float fx = sx - 0.5f, fy = sy - 0.5f;
    const float lim_x = (float)(it->width - 1), lim_y = (float)(it->height - 1);
    fx = fx < 0.0f ? 0.0f : (fx > lim_x ? lim_x : fx);
    fy = fy < 0.0f ? 0.0f : (fy > lim_y ? lim_y : fy);
    const int x0 = (int)fx, y0 = (int)fy;
    const int x1 = x0 + 1 < it->width ? x0 + 1 : x0, y1 = y0 + 1 < it->height ? y0 + 1 : y0;
    const float ax = fx - (float)x0, ay = fy - (float)y0;
    const uint8_t *r0 = it->src + (int64_t)y0 * it->stride, *r1 = it->src + (int64_t)y1 * it->stride;
    for (int c = 0; c < 3; c++) {
        const int cc = it->swap ? 2 - c : c;
        const float p00 = r0[x0 * it->channels + cc], p01 = r0[x1 * it->channels + cc];
        const float p10 = r1[x0 * it->channels + cc], p11 = r1[x1 * it->channels + cc];
        const float top = p00 + ax * (p01 - p00), bot = p10 + ax * (p11 - p10);
        out[c] = top + ay * (bot - top);
    }
}

#endif
