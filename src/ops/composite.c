/* pf_ops_composite: the public wrapper of compositing.
 *
 * Everything is checked here (frame, mask, background, dst, memory
 * reachability, overlaps) with messages that name the argument and its
 * value, so the three implementations only compute. The wrapper also derives
 * the constants the fast paths share - YUV matrices rounded to float, the
 * blur's downscale factor, radius and weights - so the CPU path and the CUDA
 * kernels cannot disagree about them (the reference derives them again from
 * the user's values, which checks this file). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../core/error.h"
#include "../device/backend.h"
#include "check.h"
#include "composite.h"
#include "ops_impl.h"
#include "yuv.h"

#define FN "pf_ops_composite"

static const char *kind_name(int k)
{
    static const char *names[] = {"PF_BG_NONE", "PF_BG_COLOR", "PF_BG_IMAGE", "PF_BG_BLUR",
                                  "PF_BG_FRAME"};
    return k >= 0 && k <= 4 ? names[k] : "?";
}

/* Kernels index rows with 32 bits: strides up to INT32_MAX. */
static const pf_ops_frame_rule input_rule = {
    PF_OPS_FMT(PF_PIXFMT_RGB24) | PF_OPS_FMT(PF_PIXFMT_BGR24) | PF_OPS_FMT(PF_PIXFMT_RGBA) |
        PF_OPS_FMT(PF_PIXFMT_NV12) | PF_OPS_FMT(PF_PIXFMT_I420),
    "it must be rgb24, bgr24, rgba, nv12 or i420", INT32_MAX, 0};
static const pf_ops_frame_rule output_rule = {
    PF_OPS_FMT(PF_PIXFMT_RGB24) | PF_OPS_FMT(PF_PIXFMT_BGR24) | PF_OPS_FMT(PF_PIXFMT_RGBA) |
        PF_OPS_FMT(PF_PIXFMT_NV12),
    "the output must be rgb24, bgr24, rgba or nv12", INT32_MAX, 0};

static pf_status check_mask(const pf_ops *ops, const pf_tensor *t, pf_ops_span *sp)
{
    if ((int)t->dtype < 0 || t->dtype >= PF_DTYPE_COUNT)
        return pf_set_error(PF_ERR_INVALID, FN ": mask has unknown dtype %d", (int)t->dtype);
    if (t->dtype != PF_DTYPE_F32 && t->dtype != PF_DTYPE_U8)
        return pf_set_error(PF_ERR_UNSUPPORTED, FN ": mask dtype is %s; f32 and u8 are supported",
                            pf_dtype_name(t->dtype));
    if (t->ndim < 2 || t->ndim > PF_TENSOR_MAX_DIMS)
        return pf_set_error(PF_ERR_INVALID,
                            FN ": mask has %d dimensions; expected [H, W] or [1, .., 1, H, W]",
                            t->ndim);
    for (int d = 0; d < t->ndim - 2; d++)
        if (t->shape[d] != 1)
            return pf_set_error(PF_ERR_INVALID,
                                FN ": mask dimension %d is %lld; the leading dimensions of "
                                "[.., H, W] must be 1 (one mask per frame)",
                                d, (long long)t->shape[d]);
    int64_t h = t->shape[t->ndim - 2], w = t->shape[t->ndim - 1];
    if (h < 1 || w < 1 || h > PF_FRAME_MAX_DIM || w > PF_FRAME_MAX_DIM)
        return pf_set_error(PF_ERR_INVALID, FN ": mask size %lldx%lld (W x H) outside 1..%d",
                            (long long)w, (long long)h, PF_FRAME_MAX_DIM);
    if (w > 1 && t->strides[t->ndim - 1] != 1)
        return pf_set_error(PF_ERR_UNSUPPORTED,
                            FN ": mask last dimension has stride %lld; it must be contiguous (1)",
                            (long long)t->strides[t->ndim - 1]);
    int64_t rs = t->strides[t->ndim - 2];
    if (h > 1 && (rs < w || rs > (int64_t)INT32_MAX))
        return pf_set_error(PF_ERR_INVALID, FN ": mask row stride %lld outside %lld..%d elements",
                            (long long)rs, (long long)w, INT32_MAX);
    if (!t->data) return pf_set_error(PF_ERR_INVALID, FN ": mask data is NULL");
    size_t es = pf_dtype_size(t->dtype);
    if ((uintptr_t)t->data % es)
        return pf_set_error(PF_ERR_INVALID, FN ": mask data %p is not aligned to its %zu-byte %s",
                            t->data, es, pf_dtype_name(t->dtype));
    size_t bytes = ((size_t)(h - 1) * (size_t)(h > 1 ? rs : 0) + (size_t)w) * es;
    pf_status st = pf_ops_check_memory(ops, FN, t->buf, t->data, bytes, "mask");
    sp->n = 1;
    sp->lo[0] = (uintptr_t)t->data;
    sp->hi[0] = sp->lo[0] + bytes;
    return st;
}

static int same_frame(const pf_frame *a, const pf_frame *b)
{
    if (a->format != b->format || a->width != b->width || a->height != b->height) return 0;
    for (int p = 0; p < a->num_planes; p++)
        if (a->data[p] != b->data[p] || a->stride[p] != b->stride[p]) return 0;
    return 1;
}

static void to_image(const pf_frame *f, pf_cmp_image *im)
{
    memset(im, 0, sizeof *im);
    im->format = (int32_t)f->format;
    im->width = f->width;
    im->height = f->height;
    for (int p = 0; p < f->num_planes; p++) {
        im->plane[p] = f->data[p];
        im->stride[p] = (int64_t)f->stride[p];
    }
}

/* The YUV -> RGB floats as they are, RGB -> YUV as the nine factors then the
 * Y offset (yr yg yb ur ug ub vr vg vb y_off: U and V add 128 themselves). */
static void yuv_setup(pf_yuv_matrix matrix, pf_yuv_range range, pf_cmp_params *p)
{
    pf_yuv_coeffs_t k;
    pf_yuv_coeffs(matrix, range, &k);
    memcpy(p->yuv, k.dec, sizeof p->yuv);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) p->rgb2yuv[3 * r + c] = k.enc[r][c];
    p->rgb2yuv[9] = k.enc[0][3];
}

/* Blur geometry and weights (ops.h, PF_BG_BLUR). */
static void blur_setup(float sigma, int W, int H, pf_cmp_params *p)
{
    int q = 1;
    double s = sigma;
    if (sigma > PF_CMP_FULL_RES_SIGMA) {
        q = (int)floor(s / 4.0);
        s = s / q;
    }
    int r = (int)ceil(3.0 * s);
    if (r > (PF_CMP_MAX_TAPS - 1) / 2) r = (PF_CMP_MAX_TAPS - 1) / 2; /* not reached: s <= 8 */
    double g[PF_CMP_MAX_TAPS], sum = 0.0;
    for (int k = -r; k <= r; k++) {
        g[k + r] = exp(-(double)k * k / (2.0 * s * s));
        sum += g[k + r];
    }
    for (int k = 0; k < PF_CMP_MAX_TAPS; k++) p->blur_wt[k] = k <= 2 * r ? (float)(g[k] / sum) : 0.0f;
    p->blur_q = q;
    p->blur_r = r;
    p->blur_w = (W + q - 1) / q;
    p->blur_h = (H + q - 1) / q;
}

pf_status pf_ops_composite(pf_ops *ops, const pf_frame *frame, const pf_tensor *mask,
                           const pf_background *bg, pf_frame *dst)
{
    PF_CHECK_ARG(ops, FN, "ops is NULL");
    PF_CHECK_ARG(frame, FN, "frame is NULL");
    PF_CHECK_ARG(mask, FN, "mask is NULL");
    PF_CHECK_ARG(bg, FN, "bg is NULL");
    PF_CHECK_ARG(dst, FN, "dst is NULL");

    pf_ops_span sf, sd, sm, si;
    pf_status st = pf_ops_check_frame(ops, FN, "frame", frame, &input_rule, &sf);
    if (st == PF_OK) st = pf_ops_check_frame(ops, FN, "dst", dst, &output_rule, &sd);
    if (st != PF_OK) return st;
    if (dst->width != frame->width || dst->height != frame->height)
        return pf_set_error(PF_ERR_INVALID, FN ": dst is %dx%d but frame is %dx%d", dst->width,
                            dst->height, frame->width, frame->height);
    st = check_mask(ops, mask, &sm);
    if (st != PF_OK) return st;

    const int kind = (int)bg->kind;
    if (kind < PF_BG_NONE || kind > PF_BG_FRAME)
        return pf_set_error(PF_ERR_INVALID, FN ": bg->kind %d is not a pf_background_kind (0..4)",
                            kind);
    st = pf_ops_check_yuv(FN, "bg->", bg->matrix, bg->range);
    if (st != PF_OK) return st;
    if (kind == PF_BG_BLUR && !(bg->blur_sigma > 0.0f && bg->blur_sigma <= 64.0f))
        return pf_set_error(PF_ERR_INVALID, FN ": bg->blur_sigma %g outside (0, 64] (PF_BG_BLUR)",
                            (double)bg->blur_sigma);
    si.n = 0;
    if (kind == PF_BG_IMAGE || kind == PF_BG_FRAME) {
        if (!bg->image)
            return pf_set_error(PF_ERR_INVALID, FN ": bg->image is NULL (needed by %s)",
                                kind_name(kind));
        st = pf_ops_check_frame(ops, FN, "bg->image", bg->image, &input_rule, &si);
        if (st != PF_OK) return st;
        if (kind == PF_BG_FRAME &&
            (bg->image->width != dst->width || bg->image->height != dst->height))
            return pf_set_error(PF_ERR_INVALID,
                                FN ": bg->image is %dx%d but PF_BG_FRAME needs the output size "
                                "%dx%d (use PF_BG_IMAGE to resize)",
                                bg->image->width, bg->image->height, dst->width, dst->height);
    }

    /* Overlaps: in place (dst is the frame) is fine; nothing else is. */
    if (pf_ops_spans_overlap(&sd, &sf) && !same_frame(dst, frame))
        return pf_set_error(PF_ERR_INVALID,
                            FN ": dst overlaps frame in memory without being the same frame "
                            "(in place needs the same format, planes and strides)");
    if (pf_ops_spans_overlap(&sd, &sm))
        return pf_set_error(PF_ERR_INVALID, FN ": dst overlaps mask in memory");
    if (si.n && pf_ops_spans_overlap(&sd, &si))
        return pf_set_error(PF_ERR_INVALID, FN ": dst overlaps bg->image in memory");

    pf_cmp_params p;
    memset(&p, 0, sizeof p);
    to_image(frame, &p.frame);
    if (si.n) to_image(bg->image, &p.image);
    for (int q = 0; q < dst->num_planes && q < 2; q++) {
        p.dst[q] = dst->data[q];
        p.dst_stride[q] = (int64_t)dst->stride[q];
    }
    p.dst_format = (int32_t)dst->format;
    p.width = frame->width;
    p.height = frame->height;
    p.kind = kind;
    p.mask = mask->data;
    p.mask_h = (int32_t)mask->shape[mask->ndim - 2];
    p.mask_w = (int32_t)mask->shape[mask->ndim - 1];
    p.mask_stride = p.mask_h > 1 ? mask->strides[mask->ndim - 2] : p.mask_w;
    p.mask_u8 = mask->dtype == PF_DTYPE_U8;
    p.matrix = (int32_t)bg->matrix;
    p.range = (int32_t)bg->range;
    p.sigma = bg->blur_sigma;
    for (int c = 0; c < 3; c++) p.color[c] = (float)bg->color[c];
    yuv_setup(bg->matrix, bg->range, &p);
    if (kind == PF_BG_BLUR) blur_setup(bg->blur_sigma, p.width, p.height, &p);

    if (ops->dev->props.type == PF_DEVICE_CPU)
        return ops->reference ? pf_ref_composite(ops, &p) : pf_cpu_composite(ops, &p);
#ifdef PF_HAVE_CUDA
    return pf_cuda_composite(ops, &p);
#else
    return pf_ops_no_backend(ops, FN);
#endif
}
