/* pf_ops_convert: the public wrapper of the colour conversions, and the frame
 * checks the resize wrapper shares.
 *
 * Everything is checked here (frames, sizes, formats, parameters, memory
 * reachability, overlap) so the implementations only compute. The wrapper
 * also owns the float coefficients (pf_cv_coeffs: double, rounded once), so
 * the reference, the CPU path and the CUDA kernel start from the same bits.
 * A format converted to itself is a plane-by-plane pf_memcpy2d_async on the
 * context's stream (threads are not worth it for a copy; on CUDA it is the
 * copy engine's job). Nothing is allocated per call. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../core/error.h"
#include "../device/backend.h"
#include "convert.h"
#include "ops_impl.h"

#define FN "pf_ops_convert"

void pf_cv_coeffs(pf_yuv_matrix matrix, pf_yuv_range range, pf_cv_coeffs_t *out)
{
    const double kr = matrix == PF_YUV_BT709 ? 0.2126 : 0.299;
    const double kb = matrix == PF_YUV_BT709 ? 0.0722 : 0.114;
    const double kg = 1.0 - kr - kb;
    const int lim = range == PF_YUV_LIMITED;
    /* Limited range: Y = 16 + 219/255 Y', chroma = 128 + 224/255 C'. */
    const double ys = lim ? 255.0 / 219.0 : 1.0, cs = lim ? 255.0 / 224.0 : 1.0;
    const double yoff = lim ? 16.0 : 0.0;
    out->dec[0] = (float)yoff;
    out->dec[1] = (float)ys;
    out->dec[2] = (float)(2.0 * (1.0 - kr) * cs);           /* R from V */
    out->dec[3] = (float)(2.0 * kb * (1.0 - kb) / kg * cs); /* G from U */
    out->dec[4] = (float)(2.0 * kr * (1.0 - kr) / kg * cs); /* G from V */
    out->dec[5] = (float)(2.0 * (1.0 - kb) * cs);           /* B from U */
    /* The inverse: Y' = Kr R + Kg G + Kb B, U' = (B - Y') / (2 (1 - Kb)),
     * V' = (R - Y') / (2 (1 - Kr)), then scaled into the range. */
    const double bu = 2.0 * (1.0 - kb), rv = 2.0 * (1.0 - kr);
    const double enc[3][4] = {
        {kr / ys, kg / ys, kb / ys, yoff},
        {-kr / bu / cs, -kg / bu / cs, (1.0 - kb) / bu / cs, 128.0},
        {(1.0 - kr) / rv / cs, -kg / rv / cs, -kb / rv / cs, 128.0},
    };
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) out->enc[i][j] = (float)enc[i][j];
}

pf_status pf_cv_check_reachable(const pf_ops *ops, const char *fn, const pf_buffer *b,
                                const char *what)
{
    if (!b && ops->dev->props.type != PF_DEVICE_CPU)
        return pf_set_error(PF_ERR_UNSUPPORTED,
                            "%s: %s has no buffer, so it counts as pageable host memory, not "
                            "reachable from the %s context (wrap device or pinned memory in a "
                            "pf_buffer)",
                            fn, what, ops->dev->spec);
    pf_mem_domain d = pf_buffer_domain(b);
    pf_device *owner = b ? pf_buffer_device(b) : NULL;
    int owner_gpu = owner && owner->props.type != PF_DEVICE_CPU;
    const char *owner_name = owner ? owner->spec : "host";
    if (ops->dev->props.type == PF_DEVICE_CPU) {
        if (d == PF_MEM_DEVICE && owner_gpu)
            return pf_set_error(PF_ERR_UNSUPPORTED,
                                "%s: %s is device memory of %s, not readable by the CPU context "
                                "(copy it to host memory first)",
                                fn, what, owner_name);
        return PF_OK;
    }
    if (d == PF_MEM_DEVICE && owner == ops->dev) return PF_OK;
    if (d == PF_MEM_PINNED && owner_gpu) return PF_OK;
    return pf_set_error(PF_ERR_UNSUPPORTED,
                        "%s: %s is %s memory of %s, not reachable from the %s context (use "
                        "device memory of %s or pinned memory)",
                        fn, what, pf_mem_domain_name(d), owner_name, ops->dev->spec,
                        ops->dev->spec);
}

pf_status pf_cv_check_inside(const char *fn, const pf_buffer *b, const void *p, size_t n,
                             const char *what)
{
    if (!b) return PF_OK;
    const uint8_t *lo = pf_buffer_data(b), *q = p;
    size_t size = pf_buffer_size(b);
    if (!lo || q < lo || (size_t)(q - lo) > size || n > size - (size_t)(q - lo))
        return pf_set_error(PF_ERR_INVALID,
                            "%s: %s needs %zu bytes from %p but its buffer holds [%p, %p)", fn,
                            what, n, p, (const void *)lo, (const void *)(lo + size));
    return PF_OK;
}

pf_status pf_cv_check_frame(const pf_ops *ops, const char *fn, const char *name,
                            const pf_frame *f, unsigned allowed)
{
    char what[64];
    if (!f) return pf_set_error(PF_ERR_INVALID, "%s: %s is NULL", fn, name);
    if ((int)f->format <= PF_PIXFMT_NONE || f->format >= PF_PIXFMT_COUNT)
        return pf_set_error(PF_ERR_INVALID, "%s: %s has unknown pixel format %d", fn, name,
                            (int)f->format);
    if (allowed && !(allowed & (1u << f->format)))
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: %s format %s is not supported here", fn,
                            name, pf_pixfmt_name(f->format));
    if (f->width < 1 || f->height < 1 || f->width > PF_FRAME_MAX_DIM ||
        f->height > PF_FRAME_MAX_DIM)
        return pf_set_error(PF_ERR_INVALID, "%s: %s has size %dx%d (1..%d each)", fn, name,
                            f->width, f->height, PF_FRAME_MAX_DIM);
    const int planes = pf_pixfmt_num_planes(f->format);
    if (f->num_planes != planes)
        return pf_set_error(PF_ERR_INVALID, "%s: %s (%s) has %d planes, expected %d", fn, name,
                            pf_pixfmt_name(f->format), f->num_planes, planes);
    for (int p = 0; p < planes; p++) {
        size_t row, rows;
        pf_status st = pf_pixfmt_plane_size(f->format, f->width, f->height, p, &row, &rows);
        if (st != PF_OK) return st;
        if (!f->data[p])
            return pf_set_error(PF_ERR_INVALID, "%s: %s plane %d data is NULL", fn, name, p);
        if (f->stride[p] < row)
            return pf_set_error(PF_ERR_INVALID,
                                "%s: %s plane %d stride %zu < row of %zu bytes (%dx%d %s)", fn,
                                name, p, f->stride[p], row, f->width, f->height,
                                pf_pixfmt_name(f->format));
        if (f->stride[p] > (size_t)INT64_MAX / rows / 2)
            return pf_set_error(PF_ERR_INVALID, "%s: %s plane %d stride %zu too large", fn, name,
                                p, f->stride[p]);
        snprintf(what, sizeof what, "%s plane %d", name, p);
        st = pf_cv_check_inside(fn, f->buf[p], f->data[p], f->stride[p] * (rows - 1) + row,
                                what);
        if (st == PF_OK) st = pf_cv_check_reachable(ops, fn, f->buf[p], what);
        if (st != PF_OK) return st;
    }
    return PF_OK;
}

pf_status pf_cv_check_no_overlap(const char *fn, const pf_frame *a, const pf_frame *b)
{
    for (int i = 0; i < a->num_planes; i++) {
        size_t arow, arows;
        pf_pixfmt_plane_size(a->format, a->width, a->height, i, &arow, &arows);
        uintptr_t a0 = (uintptr_t)a->data[i], a1 = a0 + a->stride[i] * (arows - 1) + arow;
        for (int j = 0; j < b->num_planes; j++) {
            size_t brow, brows;
            pf_pixfmt_plane_size(b->format, b->width, b->height, j, &brow, &brows);
            uintptr_t b0 = (uintptr_t)b->data[j], b1 = b0 + b->stride[j] * (brows - 1) + brow;
            if (a0 < b1 && b0 < a1)
                return pf_set_error(PF_ERR_INVALID,
                                    "%s: src plane %d [%p, +%zu) overlaps dst plane %d [%p, +%zu) "
                                    "(in-place operation is not supported)",
                                    fn, i, (void *)a0, (size_t)(a1 - a0), j, (void *)b0,
                                    (size_t)(b1 - b0));
        }
    }
    return PF_OK;
}

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
    pf_status st = pf_cv_check_frame(ops, FN, "src", src, 0);
    if (st == PF_OK) st = pf_cv_check_frame(ops, FN, "dst", dst, 0);
    if (st != PF_OK) return st;
    if (src->width != dst->width || src->height != dst->height)
        return pf_set_error(PF_ERR_INVALID, FN ": src is %dx%d but dst is %dx%d (sizes must match)",
                            src->width, src->height, dst->width, dst->height);
    pf_color_params defaults = {PF_YUV_BT601, PF_YUV_LIMITED};
    const pf_color_params *cp = params ? params : &defaults;
    if ((int)cp->matrix != PF_YUV_BT601 && (int)cp->matrix != PF_YUV_BT709)
        return pf_set_error(PF_ERR_INVALID, FN ": matrix %d is not BT.601 (0) or BT.709 (1)",
                            (int)cp->matrix);
    if ((int)cp->range != PF_YUV_LIMITED && (int)cp->range != PF_YUV_FULL)
        return pf_set_error(PF_ERR_INVALID, FN ": range %d is not limited (0) or full (1)",
                            (int)cp->range);
    st = pf_cv_check_no_overlap(FN, src, dst);
    if (st != PF_OK) return st;

    pf_cv_params p;
    memset(&p, 0, sizeof p);
    to_image(src, &p.src);
    to_image(dst, &p.dst);
    p.width = src->width;
    p.height = src->height;
    pf_cv_coeffs(cp->matrix, cp->range, &p.k);

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
    return pf_set_error(PF_ERR_UNSUPPORTED, FN ": %s needs the CUDA backend, not built",
                        ops->dev->spec);
#endif
}
