/* The argument checks the pf_ops wrappers share: see check.h. */
#include "check.h"

#include <stdio.h>

#include "../core/error.h"
#include "../device/backend.h"
#include "ops_impl.h"

pf_status pf_ops_check_reachable(const pf_ops *ops, const char *fn, const pf_buffer *b,
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

pf_status pf_ops_check_memory(const pf_ops *ops, const char *fn, const pf_buffer *b, const void *p,
                              size_t n, const char *what)
{
    if (b) {
        /* As integers: the pointers may belong to different objects. */
        const uintptr_t lo = (uintptr_t)pf_buffer_data(b), q = (uintptr_t)p;
        const size_t size = pf_buffer_size(b);
        if (!lo || q < lo || q - lo > size || n > size - (q - lo))
            return pf_set_error(PF_ERR_INVALID,
                                "%s: %s needs %zu bytes from %p but its buffer holds [%p, %p)",
                                fn, what, n, p, (void *)lo, (void *)(lo + size));
    }
    return pf_ops_check_reachable(ops, fn, b, what);
}

pf_status pf_ops_check_frame(const pf_ops *ops, const char *fn, const char *name,
                             const pf_frame *f, const pf_ops_frame_rule *rule, pf_ops_span *span)
{
    static const pf_ops_frame_rule any = {0, NULL, 0, 0};
    if (!rule) rule = &any;
    const int64_t max_extent = rule->max_extent ? rule->max_extent : INT64_MAX;
    char what[64];
    if (!f) return pf_set_error(PF_ERR_INVALID, "%s: %s is NULL", fn, name);
    if ((int)f->format <= PF_PIXFMT_NONE || f->format >= PF_PIXFMT_COUNT)
        return pf_set_error(PF_ERR_INVALID, "%s: %s has unknown pixel format %d", fn, name,
                            (int)f->format);
    if (rule->formats && !(rule->formats & PF_OPS_FMT(f->format)))
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: %s is %s; %s", fn, name,
                            pf_pixfmt_name(f->format), rule->formats_text);
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
        if (rule->max_stride && f->stride[p] > rule->max_stride)
            return pf_set_error(PF_ERR_INVALID, "%s: %s plane %d stride %zu exceeds %zu bytes",
                                fn, name, p, f->stride[p], rule->max_stride);
        if (f->stride[p] > (size_t)max_extent / rows)
            return pf_set_error(PF_ERR_INVALID, "%s: %s plane %d stride %zu too large", fn, name,
                                p, f->stride[p]);
        const size_t bytes = f->stride[p] * (rows - 1) + row;
        snprintf(what, sizeof what, "%s plane %d", name, p);
        st = pf_ops_check_memory(ops, fn, f->buf[p], f->data[p], bytes, what);
        if (st != PF_OK) return st;
        if (span) {
            span->lo[p] = (uintptr_t)f->data[p];
            span->hi[p] = span->lo[p] + bytes;
        }
    }
    if (span) span->n = planes;
    return PF_OK;
}

/* Index pair of the first planes of a and b that overlap; 0 when none do. */
static int first_overlap(const pf_ops_span *a, const pf_ops_span *b, int *ia, int *ib)
{
    for (int i = 0; i < a->n; i++)
        for (int j = 0; j < b->n; j++)
            if (a->lo[i] < b->hi[j] && b->lo[j] < a->hi[i]) {
                *ia = i;
                *ib = j;
                return 1;
            }
    return 0;
}

int pf_ops_spans_overlap(const pf_ops_span *a, const pf_ops_span *b)
{
    int i, j;
    return first_overlap(a, b, &i, &j);
}

pf_status pf_ops_check_no_overlap(const char *fn, const pf_ops_span *src, const pf_ops_span *dst)
{
    int i, j;
    if (!first_overlap(src, dst, &i, &j)) return PF_OK;
    return pf_set_error(PF_ERR_INVALID,
                        "%s: src plane %d [%p, +%zu) overlaps dst plane %d [%p, +%zu) "
                        "(in-place operation is not supported)",
                        fn, i, (void *)src->lo[i], (size_t)(src->hi[i] - src->lo[i]), j,
                        (void *)dst->lo[j], (size_t)(dst->hi[j] - dst->lo[j]));
}

pf_status pf_ops_check_interp(const char *fn, pf_interp interp)
{
    if ((int)interp < PF_INTERP_NEAREST || (int)interp > PF_INTERP_AREA)
        return pf_set_error(PF_ERR_INVALID,
                            "%s: interp %d is not nearest (0), bilinear (1) or area (2)", fn,
                            (int)interp);
    return PF_OK;
}

pf_status pf_ops_check_yuv(const char *fn, const char *prefix, pf_yuv_matrix matrix,
                           pf_yuv_range range)
{
    if ((int)matrix != PF_YUV_BT601 && (int)matrix != PF_YUV_BT709)
        return pf_set_error(PF_ERR_INVALID, "%s: %smatrix %d is not BT.601 (0) or BT.709 (1)", fn,
                            prefix, (int)matrix);
    if ((int)range != PF_YUV_LIMITED && (int)range != PF_YUV_FULL)
        return pf_set_error(PF_ERR_INVALID, "%s: %srange %d is not limited (0) or full (1)", fn,
                            prefix, (int)range);
    return PF_OK;
}

pf_status pf_ops_no_backend(const pf_ops *ops, const char *fn)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: %s needs the CUDA backend, not built", fn,
                        ops->dev->spec);
}
