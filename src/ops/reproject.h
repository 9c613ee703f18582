/* Private: the 360° reprojection job and its three implementations.
 *
 * src/ops/reproject.c (the public wrappers) validates everything, computes
 * the per-view constants once (pf_rp_view_setup) and fills a pf_rp_job; a
 * cube map is the same job with six views writing into sub-rectangles of one
 * frame. The implementations only compute, all with the float formula of
 * reproject_math.h, so their outputs are identical bytes:
 *   pf_ref_equirect_to_views   plain C reference, one thread (src/cpu/reproject_ref.c)
 *   pf_cpu_equirect_to_views   rows split over ops->pool (src/cpu/reproject.c)
 *   pf_cuda_equirect_to_views  one kernel launch on the ops stream (src/cuda/reproject.cu) */
#ifndef PF_OPS_REPROJECT_H
#define PF_OPS_REPROJECT_H

#include <stddef.h>
#include <stdint.h>

#include "ops_impl.h"
#include "reproject_math.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PF_RP_MAX_VIEWS 64

typedef struct pf_rp_job {
    const uint8_t *src;       /* host or device address, per the context's device */
    size_t src_stride;        /* bytes between rows (validated <= INT32_MAX) */
    int src_w, src_h;
    int channels;             /* bytes per pixel: 1, 3 or 4 (channel order is kept) */
    pf_interp interp;         /* PF_INTERP_NEAREST or PF_INTERP_BILINEAR */
    int n;                    /* 1..PF_RP_MAX_VIEWS */
    pf_rp_view views[PF_RP_MAX_VIEWS];
    uint8_t *dst[PF_RP_MAX_VIEWS];
    size_t dst_stride[PF_RP_MAX_VIEWS];
} pf_rp_job;

/* Per-view constants from a validated view (finite angles, 0 < fov < 180,
 * sizes >= 1), computed in double from ops.h's definition and rounded once:
 * angles are reduced modulo 360° first and their sines and cosines are exact
 * at multiples of 90°, so yaw and yaw + 360 give the same bits and cube faces
 * are exactly axis-aligned. */
void pf_rp_view_setup(const pf_view *view, pf_rp_view *out);

void pf_ref_equirect_to_views(const pf_rp_job *job);
pf_status pf_cpu_equirect_to_views(pf_ops *ops, const pf_rp_job *job);
#ifdef PF_HAVE_CUDA
pf_status pf_cuda_equirect_to_views(pf_ops *ops, const pf_rp_job *job);
#endif

#ifdef __cplusplus
}
#endif

#endif
