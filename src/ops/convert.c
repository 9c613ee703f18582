/* pf_ops_convert: the public wrapper of the colour conversions.
 *
 * Everything is checked here (frames, sizes, formats, parameters, memory
 * reachability, overlap: the shared checks of check.h) so the implementations
 * only compute. The wrapper also hands them the float coefficients
 * (pf_yuv_coeffs: double, rounded once), so the reference, the CPU path and
 * the CUDA kernel start from the same bits.
 * A format converted to itself is a plane-by-plane pf_memcpy2d_async on the
 * context's stream (threads are not worth it for a copy; on CUDA it is the
 * copy engine's job). Nothing is allocated per call. */
#include <stdint.h>
#include <string.h>

#include "../core/error.h"
#include "../device/backend.h"
#include "check.h"
#include "convert.h"
#include "ops_impl.h"

#define FN "pf_ops_convert"

/* Any format; a plane's stride * rows at most INT64_MAX / 2. */
static const pf_ops_frame_rule frame_rule = {0, NULL, 0, INT64_MAX / 2};

static void to_image(const pf_frame *f, pf_cv_image *d)
{
    memset(d, 0, sizeof *d);
    d->format = (int32_t)f->format;
    for (int q = 0; q < f->num_planes; q++) {
        d->plane[q] = f->data[q];
        d->stride[q] = (int64_t)f->stride[q];
    }
}

pf_status pf_ops_convert(pf_ops *ops, const pf_frame *src, pf_frame *dst,
                         const pf_color_params *params)
{
    PF_CHECK_ARG(ops, FN, "ops is NULL");
    pf_ops_span ss, ds;
    pf_status st = pf_ops_check_frame(ops, FN, "src", src, &frame_rule, &ss);
    if (st == PF_OK) st = pf_ops_check_frame(ops, FN, "dst", dst, &frame_rule, &ds);
    if (st != PF_OK) return st;
    if (src->width != dst->width || src->height != dst->height)
        return pf_set_error(PF_ERR_INVALID, FN ": src is %dx%d but dst is %dx%d (sizes must match)",
                            src->width, src->height, dst->width, dst->height);
    pf_color_params defaults = {PF_YUV_BT601, PF_YUV_LIMITED};
    const pf_color_params *cp = params ? params : &defaults;
    st = pf_ops_check_yuv(FN, "", cp->matrix, cp->range);
    if (st == PF_OK) st = pf_ops_check_no_overlap(FN, &ss, &ds);
    if (st != PF_OK) return st;

    pf_cv_params p;
    memset(&p, 0, sizeof p);
    to_image(src, &p.src);
    to_image(dst, &p.dst);
    p.width = src->width;
    p.height = src->height;
    pf_yuv_coeffs(cp->matrix, cp->range, &p.k);

    const int is_cpu = ops->dev->props.type == PF_DEVICE_CPU;
    if (is_cpu && ops->reference) return pf_ref_convert(ops, &p);
    if (src->format == dst->format) {
        for (int q = 0; q < src->num_planes; q++) {
            size_t row, rows;
            pf_pixfmt_plane_size(src->format, src->width, src->height, q, &row, &rows);
            st = pf_memcpy2d_async(ops->stream, dst->data[q], dst->stride[q], src->data[q],
                                   src->stride[q], row, rows);
            if (st != PF_OK) return st;
        }
        return PF_OK;
    }
    if (is_cpu) return pf_cpu_convert(ops, &p);
#ifdef PF_HAVE_CUDA
    return pf_cuda_convert(ops, &p);
#else
    return pf_ops_no_backend(ops, FN);
#endif
}
