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
#include <stdio.h>
#include <string.h>

#include "../core/error.h"
#include "../device/backend.h"
#include "composite.h"
#include "ops_impl.h"

#define FN "pf_ops_composite"

static const char *kind_name(int k)
{
    static const char *names[] = {"PF_BG_NONE", "PF_BG_COLOR", "PF_BG_IMAGE", "PF_BG_BLUR",
                                  "PF_BG_FRAME"};
    return k >= 0 && k <= 4 ? names[k] : "?";
}

static int is_input_format(pf_pixfmt f)
{
    return f == PF_PIXFMT_RGB24 || f == PF_PIXFMT_BGR24 || f == PF_PIXFMT_RGBA ||
           f == PF_PIXFMT_NV12 || f == PF_PIXFMT_I420;
}

static int is_output_format(pf_pixfmt f)
{
    return f == PF_PIXFMT_RGB24 || f == PF_PIXFMT_BGR24 || f == PF_PIXFMT_RGBA ||
           f == PF_PIXFMT_NV12;
}

/* Whether memory of buffer `b` can be read or written by the context's
 * device. Memory without a buffer counts as pageable host memory (what
 * pf_frame_domain / pf_tensor_domain report). CPU: anything but another
 * device's memory. CUDA: its own device memory, or page-locked memory that a
 * CUDA device allocated (a CPU-device "pinned" buffer is ordinary heap). */
static pf_status check_reachable(const pf_ops *ops, const pf_buffer *b, const char *what)
{
    if (!b && ops->dev->props.type != PF_DEVICE_CPU)
        return pf_set_error(PF_ERR_UNSUPPORTED,
                            FN ": %s has no buffer, so it counts as pageable host memory, not "
                            "reachable from the %s context (wrap device or pinned memory in a "
                            "pf_buffer)",
                            what, ops->dev->spec);
    pf_mem_domain d = pf_buffer_domain(b);
    pf_device *owner = b ? pf_buffer_device(b) : NULL;
    int owner_gpu = owner && owner->props.type != PF_DEVICE_CPU;
    const char *owner_name = owner ? owner->spec : "host";
    if (ops->dev->props.type == PF_DEVICE_CPU) {
        if (d == PF_MEM_DEVICE && owner_gpu)
            return pf_set_error(PF_ERR_UNSUPPORTED,
                                FN ": %s is device memory of %s, not readable by the CPU "
                                "context (copy it to host memory first)",
                                what, owner_name);
        return PF_OK;
    }
    if (d == PF_MEM_DEVICE && owner == ops->dev) return PF_OK;
    if (d == PF_MEM_PINNED && owner_gpu) return PF_OK;
    return pf_set_error(PF_ERR_UNSUPPORTED,
                        FN ": %s is %s memory of %s, not reachable from the %s context "
                        "(use device memory of %s or pinned memory)",
                        what, pf_mem_domain_name(d), owner_name, ops->dev->spec, ops->dev->spec);
}

/* [p, p + n) must lie inside b's bytes (when there is a buffer to check). */
static pf_status check_inside(const pf_buffer *b, const void *p, size_t n, const char *what)
{
    if (!b) return PF_OK;
    const uint8_t *lo = pf_buffer_data(b), *q = p;
    size_t size = pf_buffer_size(b);
    if (!lo || q < lo || (size_t)(q - lo) > size || n > size - (size_t)(q - lo))
        return pf_set_error(PF_ERR_INVALID,
                            FN ": %s needs %zu bytes from %p but its buffer holds [%p, %p)", what,
                            n, p, (const void *)lo, (const void *)(lo + size));
    return PF_OK;
}

/* Byte range [lo, hi) of every plane, for the overlap checks. */
typedef struct span {
    uintptr_t lo[3], hi[3];
    int n;
} span;

/* `name` is "frame", "bg->image" or "dst"; `out` selects the output formats. */
static pf_status check_frame(const pf_ops *ops, const pf_frame *f, const char *name, int out,
                             span *sp)
{
    char what[48];
    if ((int)f->format <= PF_PIXFMT_NONE || f->format >= PF_PIXFMT_COUNT)
        return pf_set_error(PF_ERR_INVALID, FN ": %s has unknown pixel format %d", name,
                            (int)f->format);
    if (out ? !is_output_format(f->format) : !is_input_format(f->format))
        return pf_set_error(PF_ERR_UNSUPPORTED, FN ": %s is %s; %s", name,
                            pf_pixfmt_name(f->format),
                            out ? "the output must be rgb24, bgr24, rgba or nv12"
                                : "it must be rgb24, bgr24, rgba, nv12 or i420");
    if (f->width < 1 || f->height < 1 || f->width > PF_FRAME_MAX_DIM ||
        f->height > PF_FRAME_MAX_DIM)
        return pf_set_error(PF_ERR_INVALID, FN ": %s has size %dx%d (1..%d each)", name, f->width,
                            f->height, PF_FRAME_MAX_DIM);
    int planes = pf_pixfmt_num_planes(f->format);
    if (f->num_planes != planes)
        return pf_set_error(PF_ERR_INVALID, FN ": %s (%s) has %d planes, expected %d", name,
                            pf_pixfmt_name(f->format), f->num_planes, planes);
    sp->n = planes;
    for (int p = 0; p < planes; p++) {
        size_t row, rows;
        pf_status st = pf_pixfmt_plane_size(f->format, f->width, f->height, p, &row, &rows);
        if (st != PF_OK) return st;
        if (!f->data[p])
            return pf_set_error(PF_ERR_INVALID, FN ": %s plane %d data is NULL", name, p);
        if (f->stride[p] < row)
            return pf_set_error(PF_ERR_INVALID,
                                FN ": %s plane %d stride %zu < row of %zu bytes (%dx%d %s)", name,
                                p, f->stride[p], row, f->width, f->height,
                                pf_pixfmt_name(f->format));
        if (f->stride[p] > (size_t)INT32_MAX)
            return pf_set_error(PF_ERR_INVALID, FN ": %s plane %d stride %zu exceeds %d bytes",
                                name, p, f->stride[p], INT32_MAX);
        size_t bytes = f->stride[p] * (rows - 1) + row;
        snprintf(what, sizeof what, "%s plane %d", name, p);
        st = check_inside(f->buf[p], f->data[p], bytes, what);
        if (st == PF_OK) st = check_reachable(ops, f->buf[p], what);
        if (st != PF_OK) return st;
        sp->lo[p] = (uintptr_t)f->data[p];
        sp->hi[p] = sp->lo[p] + bytes;
    }
    return PF_OK;
}

static pf_status check_mask(const pf_ops *ops, const pf_tensor *t, span *sp)
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
    pf_status st = check_inside(t->buf, t->data, bytes, "mask");
    if (st == PF_OK) st = check_reachable(ops, t->buf, "mask");
    sp->n = 1;
    sp->lo[0] = (uintptr_t)t->data;
    sp->hi[0] = sp->lo[0] + bytes;
    return st;
}

static int spans_overlap(const span *a, const span *b)
{
    for (int i = 0; i < a->n; i++)
        for (int j = 0; j < b->n; j++)
            if (a->lo[i] < b->hi[j] && b->lo[j] < a->hi[i]) return 1;
    return 0;
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

/* Kr and Kb of each matrix; every coefficient follows from them (ops.h).
 * Computed in double, rounded once to float. */
static void yuv_coeffs(pf_yuv_matrix matrix, pf_yuv_range range, float to_rgb[6],
                       float to_yuv[10])
{
    double kr = matrix == PF_YUV_BT709 ? 0.2126 : 0.299;
    double kb = matrix == PF_YUV_BT709 ? 0.0722 : 0.114;
    double kg = 1.0 - kr - kb;
    int lim = range == PF_YUV_LIMITED;
    double ys = lim ? 255.0 / 219.0 : 1.0, cs = lim ? 255.0 / 224.0 : 1.0;
    double iys = lim ? 219.0 / 255.0 : 1.0, ics = lim ? 224.0 / 255.0 : 1.0;
    to_rgb[0] = lim ? 16.0f : 0.0f;
    to_rgb[1] = (float)ys;
    to_rgb[2] = (float)(2.0 * (1.0 - kr) * cs);
    to_rgb[3] = (float)(2.0 * kb * (1.0 - kb) / kg * cs);
    to_rgb[4] = (float)(2.0 * kr * (1.0 - kr) / kg * cs);
    to_rgb[5] = (float)(2.0 * (1.0 - kb) * cs);
    to_yuv[0] = (float)(kr * iys);
    to_yuv[1] = (float)(kg * iys);
    to_yuv[2] = (float)(kb * iys);
    to_yuv[3] = (float)(-kr * ics / (2.0 * (1.0 - kb)));
    to_yuv[4] = (float)(-kg * ics / (2.0 * (1.0 - kb)));
    to_yuv[5] = (float)(ics / 2.0);
    to_yuv[6] = (float)(ics / 2.0);
    to_yuv[7] = (float)(-kg * ics / (2.0 * (1.0 - kr)));
    to_yuv[8] = (float)(-kb * ics / (2.0 * (1.0 - kr)));
    to_yuv[9] = lim ? 16.0f : 0.0f;
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

    span sf, sd, sm, si;
    pf_status st = check_frame(ops, frame, "frame", 0, &sf);
    if (st == PF_OK) st = check_frame(ops, dst, "dst", 1, &sd);
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
    if ((int)bg->matrix != PF_YUV_BT601 && (int)bg->matrix != PF_YUV_BT709)
        return pf_set_error(PF_ERR_INVALID, FN ": bg->matrix %d is not BT.601 (0) or BT.709 (1)",
                            (int)bg->matrix);
    if ((int)bg->range != PF_YUV_LIMITED && (int)bg->range != PF_YUV_FULL)
        return pf_set_error(PF_ERR_INVALID, FN ": bg->range %d is not limited (0) or full (1)",
                            (int)bg->range);
    if (kind == PF_BG_BLUR && !(bg->blur_sigma > 0.0f && bg->blur_sigma <= 64.0f))
        return pf_set_error(PF_ERR_INVALID, FN ": bg->blur_sigma %g outside (0, 64] (PF_BG_BLUR)",
                            (double)bg->blur_sigma);
    si.n = 0;
    if (kind == PF_BG_IMAGE || kind == PF_BG_FRAME) {
        if (!bg->image)
            return pf_set_error(PF_ERR_INVALID, FN ": bg->image is NULL (needed by %s)",
                                kind_name(kind));
        st = check_frame(ops, bg->image, "bg->image", 0, &si);
        if (st != PF_OK) return st;
        if (kind == PF_BG_FRAME &&
            (bg->image->width != dst->width || bg->image->height != dst->height))
            return pf_set_error(PF_ERR_INVALID,
                                FN ": bg->image is %dx%d but PF_BG_FRAME needs the output size "
                                "%dx%d (use PF_BG_IMAGE to resize)",
                                bg->image->width, bg->image->height, dst->width, dst->height);
    }

    /* Overlaps: in place (dst is the frame) is fine; nothing else is. */
    if (spans_overlap(&sd, &sf) && !same_frame(dst, frame))
        return pf_set_error(PF_ERR_INVALID,
                            FN ": dst overlaps frame in memory without being the same frame "
                            "(in place needs the same format, planes and strides)");
    if (spans_overlap(&sd, &sm))
        return pf_set_error(PF_ERR_INVALID, FN ": dst overlaps mask in memory");
    if (si.n && spans_overlap(&sd, &si))
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
    yuv_coeffs(bg->matrix, bg->range, p.yuv, p.rgb2yuv);
    if (kind == PF_BG_BLUR) blur_setup(bg->blur_sigma, p.width, p.height, &p);

    if (ops->dev->props.type == PF_DEVICE_CPU)
        return ops->reference ? pf_ref_composite(ops, &p) : pf_cpu_composite(ops, &p);
#ifdef PF_HAVE_CUDA
    return pf_cuda_composite(ops, &p);
#else
    return pf_set_error(PF_ERR_UNSUPPORTED, FN ": %s needs the CUDA backend, not built",
                        ops->dev->spec);
#endif
}
