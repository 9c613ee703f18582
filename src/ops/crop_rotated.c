/* pf_ops_crop_rotated: the public wrapper of the rotated crop. Checks every
 * frame, rectangle and the destination tensor (messages name the argument
 * and value), computes each rectangle's cosine and sine once, and hands
 * chunks of PF_CR_MAX_ITEMS crops to the backend. Nothing is allocated. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../core/error.h"
#include "../device/backend.h"
#include "check.h"
#include "crop_rotated.h"
#include "ops_impl.h"

#define FN "pf_ops_crop_rotated"

static const pf_ops_frame_rule frame_rule = {
    PF_OPS_FMT(PF_PIXFMT_RGB24) | PF_OPS_FMT(PF_PIXFMT_BGR24) | PF_OPS_FMT(PF_PIXFMT_RGBA),
    "rotated crops take RGB24, BGR24 or RGBA", 0, INT64_MAX / 2};

static pf_status run(pf_ops *ops, const pf_cr_params *p, const pf_cr_item *items)
{
    if (ops->dev->props.type == PF_DEVICE_CPU) return pf_ref_crop_rotated(ops, p, items);
#ifdef PF_HAVE_CUDA
    return pf_cuda_crop_rotated(ops, p, items);
#else
    return pf_ops_no_backend(ops, FN);
#endif
}

static int finite_rect(const pf_rotated_rect *r)
{
    return isfinite(r->cx) && isfinite(r->cy) && isfinite(r->width) && isfinite(r->height) &&
           isfinite(r->angle) && r->width > 0.0f && r->height > 0.0f;
}

pf_status pf_ops_crop_rotated(pf_ops *ops, const pf_frame *const *srcs, const pf_rotated_rect *rects,
                              int n, pf_tensor *dst, float scale, float bias)
{
    PF_CHECK_ARG(ops, FN, "ops is NULL");
    PF_CHECK_ARG(srcs, FN, "srcs is NULL");
    PF_CHECK_ARG(rects, FN, "rects is NULL");
    PF_CHECK_ARG(dst, FN, "dst is NULL");
    if (dst->dtype != PF_DTYPE_F32)
        return pf_set_error(PF_ERR_UNSUPPORTED, FN ": dst dtype is %s; crops are f32",
                            pf_dtype_name(dst->dtype));
    if (dst->ndim != 4 || dst->shape[3] != 3 || dst->shape[1] < 1 || dst->shape[2] < 1 ||
        dst->shape[1] > PF_FRAME_MAX_DIM || dst->shape[2] > PF_FRAME_MAX_DIM)
        return pf_set_error(PF_ERR_INVALID, FN ": dst must be [N, H, W, 3] (NHWC, H and W in "
                            "1..%d)", PF_FRAME_MAX_DIM);
    if (n < 1 || n != dst->shape[0])
        return pf_set_error(PF_ERR_INVALID, FN ": n is %d but dst holds %lld crops", n,
                            (long long)dst->shape[0]);
    if (!pf_tensor_is_contiguous(dst) || !dst->data)
        return pf_set_error(PF_ERR_UNSUPPORTED, FN ": dst is not contiguous or has no data");
    if (!isfinite(scale) || !isfinite(bias))
        return pf_set_error(PF_ERR_INVALID, FN ": scale %g / bias %g not finite", (double)scale,
                            (double)bias);
    pf_status st = pf_ops_check_memory(ops, FN, dst->buf, dst->data, pf_tensor_nbytes(dst), "dst");
    if (st != PF_OK) return st;
    const uintptr_t d0 = (uintptr_t)dst->data, d1 = d0 + pf_tensor_nbytes(dst);
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "srcs[%d]", i);
        pf_ops_span span;
        st = pf_ops_check_frame(ops, FN, name, srcs[i], &frame_rule, &span);
        if (st != PF_OK) return st;
        for (int q = 0; q < span.n; q++)
            if (span.lo[q] < d1 && d0 < span.hi[q])
                return pf_set_error(PF_ERR_INVALID, FN ": %s overlaps dst", name);
        if (!finite_rect(&rects[i]))
            return pf_set_error(PF_ERR_INVALID,
                                FN ": rects[%d] (centre %g,%g size %gx%g angle %g) must be finite "
                                "with a positive size",
                                i, (double)rects[i].cx, (double)rects[i].cy,
                                (double)rects[i].width, (double)rects[i].height,
                                (double)rects[i].angle);
    }

    const int32_t H = (int32_t)dst->shape[1], W = (int32_t)dst->shape[2];
    for (int base = 0; base < n; base += PF_CR_MAX_ITEMS) {
        pf_cr_item items[PF_CR_MAX_ITEMS];
        const int m = n - base < PF_CR_MAX_ITEMS ? n - base : PF_CR_MAX_ITEMS;
        memset(items, 0, sizeof items);
        for (int j = 0; j < m; j++) {
            const pf_frame *f = srcs[base + j];
            const pf_rotated_rect *r = &rects[base + j];
            pf_cr_item *it = &items[j];
            it->src = f->data[0];
            it->stride = (int64_t)f->stride[0];
            it->width = f->width;
            it->height = f->height;
            it->channels = f->format == PF_PIXFMT_RGBA ? 4 : 3;
            it->swap = f->format == PF_PIXFMT_BGR24;
            it->cx = r->cx;
            it->cy = r->cy;
            it->w = r->width;
            it->h = r->height;
            it->cos_a = (float)cos((double)r->angle);
            it->sin_a = (float)sin((double)r->angle);
        }
        pf_cr_params p;
        p.dst = (float *)dst->data + (size_t)base * (size_t)H * (size_t)W * 3;
        p.n = m;
        p.width = W;
        p.height = H;
        p.scale = scale;
        p.bias = bias;
        st = run(ops, &p, items);
        if (st != PF_OK) return st;
    }
    return PF_OK;
}
