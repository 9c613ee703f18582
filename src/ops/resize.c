/* pf_ops_resize and pf_ops_resize_mask: the public wrappers of resize.
 *
 * Everything is checked here (frames or tensors, formats, sizes, dtypes,
 * interpolation, memory reachability, overlap) with messages naming the
 * argument and value; then the work is described as planes (resize.h) and
 * handed to the reference, the CPU path or the CUDA kernel: one call per
 * plane of a frame (NV12: Y and UV; I420: Y, U, V), one call for all planes
 * of a mask tensor. Nothing is allocated per call. */
#include <stdint.h>
#include <string.h>

#include "../core/error.h"
#include "../device/backend.h"
#include "check.h"
#include "ops_impl.h"
#include "resize.h"

#define FN "pf_ops_resize"
#define FN_MASK "pf_ops_resize_mask"

/* Any format; a plane's stride * rows at most INT64_MAX / 2. */
static const pf_ops_frame_rule frame_rule = {0, NULL, 0, INT64_MAX / 2};

static pf_status run_plane(pf_ops *ops, const pf_rs_plane *p, const char *fn)
{
    if (ops->dev->props.type == PF_DEVICE_CPU)
        return ops->reference ? pf_ref_resize(ops, p) : pf_cpu_resize(ops, p);
#ifdef PF_HAVE_CUDA
    return pf_cuda_resize(ops, p);
#else
    return pf_ops_no_backend(ops, fn);
#endif
}

/* Samples per pixel of plane `plane` of a format. */
static int plane_channels(pf_pixfmt fmt, int plane)
{
    switch (fmt) {
    case PF_PIXFMT_RGB24:
    case PF_PIXFMT_BGR24: return 3;
    case PF_PIXFMT_RGBA: return 4;
    case PF_PIXFMT_NV12: return plane == 1 ? 2 : 1;
    default: return 1; /* GRAY8, I420 */
    }
}

pf_status pf_ops_resize(pf_ops *ops, const pf_frame *src, pf_frame *dst, pf_interp interp)
{
    PF_CHECK_ARG(ops, FN, "ops is NULL");
    pf_ops_span ss, ds;
    pf_status st = pf_ops_check_frame(ops, FN, "src", src, &frame_rule, &ss);
    if (st == PF_OK) st = pf_ops_check_frame(ops, FN, "dst", dst, &frame_rule, &ds);
    if (st != PF_OK) return st;
    if (src->format != dst->format)
        return pf_set_error(PF_ERR_INVALID,
                            FN ": src is %s but dst is %s (resize keeps the format; "
                            "pf_ops_convert changes it)",
                            pf_pixfmt_name(src->format), pf_pixfmt_name(dst->format));
    st = pf_ops_check_interp(FN, interp);
    if (st == PF_OK) st = pf_ops_check_no_overlap(FN, &ss, &ds);
    if (st != PF_OK) return st;

    for (int q = 0; q < src->num_planes; q++) {
        size_t srow, srows, drow, drows;
        pf_pixfmt_plane_size(src->format, src->width, src->height, q, &srow, &srows);
        pf_pixfmt_plane_size(dst->format, dst->width, dst->height, q, &drow, &drows);
        pf_rs_plane p;
        memset(&p, 0, sizeof p);
        p.channels = plane_channels(src->format, q);
        p.src = src->data[q];
        p.dst = dst->data[q];
        p.src_stride = (int64_t)src->stride[q];
        p.dst_stride = (int64_t)dst->stride[q];
        p.sw = (int32_t)(srow / (size_t)p.channels);
        p.sh = (int32_t)srows;
        p.dw = (int32_t)(drow / (size_t)p.channels);
        p.dh = (int32_t)drows;
        p.count = 1;
        p.interp = (int32_t)interp;
        st = run_plane(ops, &p, FN);
        if (st != PF_OK) return st;
    }
    return PF_OK;
}

static pf_status check_mask(const pf_ops *ops, const pf_tensor *t, const char *name)
{
    if (t->dtype != PF_DTYPE_F32)
        return pf_set_error(PF_ERR_UNSUPPORTED, FN_MASK ": %s dtype is %s; masks must be f32",
                            name, pf_dtype_name(t->dtype));
    if (t->ndim < 2 || t->ndim > PF_TENSOR_MAX_DIMS)
        return pf_set_error(PF_ERR_INVALID,
                            FN_MASK ": %s has %d dimensions; masks are [..., H, W] (2..%d)", name,
                            t->ndim, PF_TENSOR_MAX_DIMS);
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] < 1)
            return pf_set_error(PF_ERR_INVALID, FN_MASK ": %s has dimension %d of size %lld "
                                "(masks must not be empty)",
                                name, d, (long long)t->shape[d]);
    const int64_t H = t->shape[t->ndim - 2], W = t->shape[t->ndim - 1];
    if (H > PF_FRAME_MAX_DIM || W > PF_FRAME_MAX_DIM)
        return pf_set_error(PF_ERR_INVALID, FN_MASK ": %s is %lldx%lld (W x H); at most %d each",
                            name, (long long)W, (long long)H, PF_FRAME_MAX_DIM);
    if (!pf_tensor_is_contiguous(t))
        return pf_set_error(PF_ERR_UNSUPPORTED, FN_MASK ": %s is not contiguous (innermost "
                            "strides %lld, %lld)",
                            name, (long long)t->strides[t->ndim - 2],
                            (long long)t->strides[t->ndim - 1]);
    if (!t->data) return pf_set_error(PF_ERR_INVALID, FN_MASK ": %s data is NULL", name);
    if ((uintptr_t)t->data % sizeof(float))
        return pf_set_error(PF_ERR_INVALID, FN_MASK ": %s data %p is not aligned for f32", name,
                            t->data);
    int64_t n = pf_tensor_numel(t);
    if (n / H / W > INT32_MAX)
        return pf_set_error(PF_ERR_INVALID, FN_MASK ": %s holds %lld planes (at most %d)", name,
                            (long long)(n / H / W), INT32_MAX);
    return pf_ops_check_memory(ops, FN_MASK, t->buf, t->data, pf_tensor_nbytes(t), name);
}

pf_status pf_ops_resize_mask(pf_ops *ops, const pf_tensor *src, pf_tensor *dst, pf_interp interp)
{
    PF_CHECK_ARG(ops, FN_MASK, "ops is NULL");
    PF_CHECK_ARG(src, FN_MASK, "src is NULL");
    PF_CHECK_ARG(dst, FN_MASK, "dst is NULL");
    pf_status st = check_mask(ops, src, "src");
    if (st == PF_OK) st = check_mask(ops, dst, "dst");
    if (st == PF_OK) st = pf_ops_check_interp(FN_MASK, interp);
    if (st != PF_OK) return st;
    if (src->ndim != dst->ndim)
        return pf_set_error(PF_ERR_INVALID,
                            FN_MASK ": src has %d dimensions but dst has %d (leading dims must "
                            "match)",
                            src->ndim, dst->ndim);
    for (int d = 0; d < src->ndim - 2; d++)
        if (src->shape[d] != dst->shape[d])
            return pf_set_error(PF_ERR_INVALID,
                                FN_MASK ": leading dimension %d is %lld in src but %lld in dst",
                                d, (long long)src->shape[d], (long long)dst->shape[d]);
    const uintptr_t s0 = (uintptr_t)src->data, s1 = s0 + pf_tensor_nbytes(src);
    const uintptr_t d0 = (uintptr_t)dst->data, d1 = d0 + pf_tensor_nbytes(dst);
    if (s0 < d1 && d0 < s1)
        return pf_set_error(PF_ERR_INVALID, FN_MASK ": src [%p, +%zu) and dst [%p, +%zu) overlap",
                            src->data, (size_t)(s1 - s0), dst->data, (size_t)(d1 - d0));

    const int nd = src->ndim;
    pf_rs_plane p;
    memset(&p, 0, sizeof p);
    p.src = src->data;
    p.dst = dst->data;
    p.sh = (int32_t)src->shape[nd - 2];
    p.sw = (int32_t)src->shape[nd - 1];
    p.dh = (int32_t)dst->shape[nd - 2];
    p.dw = (int32_t)dst->shape[nd - 1];
    p.src_stride = (int64_t)p.sw * 4;
    p.dst_stride = (int64_t)p.dw * 4;
    p.src_plane = p.src_stride * p.sh;
    p.dst_plane = p.dst_stride * p.dh;
    p.channels = 1;
    p.f32 = 1;
    p.count = (int32_t)(pf_tensor_numel(src) / ((int64_t)p.sw * p.sh));
    p.interp = (int32_t)interp;
    return run_plane(ops, &p, FN_MASK);
}
