/* pf_ops_preprocess: the public wrapper of the fused preprocess.
 *
 * Everything is checked here (frames, ROIs, destination tensor, parameters,
 * memory reachability) so the three implementations only compute. The
 * wrapper also owns the letterbox geometry (one place decides the content box
 * and the reported transform) and the float constants the fast paths use, so
 * the CPU path and the CUDA kernel cannot disagree about them. Batches larger
 * than PF_PP_MAX_FRAMES are processed in chunks with the descriptors on the
 * stack: nothing is allocated per call. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../core/error.h"
#include "../device/backend.h"
#include "check.h"
#include "ops_impl.h"
#include "preprocess.h"
#include "yuv.h"

#define FN "pf_ops_preprocess"

pf_preprocess_params pf_preprocess_params_default(void)
{
    pf_preprocess_params p;
    memset(&p, 0, sizeof p);
    p.interp = PF_INTERP_BILINEAR;
    p.letterbox = false;
    p.pad_value = 114.0f;
    p.bgr = false;
    for (int c = 0; c < 3; c++) {
        p.mean[c] = 0.0f;
        p.std[c] = 1.0f;
    }
    p.matrix = PF_YUV_BT601;
    p.range = PF_YUV_LIMITED;
    return p;
}

static const pf_ops_frame_rule source_rule = {
    PF_OPS_FMT(PF_PIXFMT_RGB24) | PF_OPS_FMT(PF_PIXFMT_BGR24) | PF_OPS_FMT(PF_PIXFMT_RGBA) |
        PF_OPS_FMT(PF_PIXFMT_NV12) | PF_OPS_FMT(PF_PIXFMT_I420),
    "sources must be rgb24, bgr24, rgba, nv12 or i420", 0, INT64_MAX};

static pf_status check_frame(const pf_ops *ops, const pf_frame *f, int i)
{
    char name[32];
    snprintf(name, sizeof name, "srcs[%d]", i);
    return pf_ops_check_frame(ops, FN, name, f, &source_rule, NULL);
}

static pf_status check_roi(const pf_frame *f, const pf_rect *r, int i)
{
    if (r->width < 1 || r->height < 1)
        return pf_set_error(PF_ERR_INVALID, FN ": rois[%d] {x %d, y %d, %dx%d} is empty", i, r->x,
                            r->y, r->width, r->height);
    if (r->x < 0 || r->y < 0 || r->width > f->width || r->height > f->height ||
        r->x > f->width - r->width || r->y > f->height - r->height)
        return pf_set_error(PF_ERR_INVALID,
                            FN ": rois[%d] {x %d, y %d, %dx%d} is not inside srcs[%d] (%dx%d)", i,
                            r->x, r->y, r->width, r->height, i, f->width, f->height);
    return PF_OK;
}

static pf_status check_dst(const pf_ops *ops, const pf_tensor *t, int n, int64_t *h, int64_t *w)
{
    if (t->ndim != 4)
        return pf_set_error(PF_ERR_INVALID, FN ": dst has %d dimensions, expected 4 (%s)", t->ndim,
                            "[N, 3, H, W] or [N, H, W, 3]");
    int cdim;
    if (t->layout == PF_LAYOUT_NCHW) {
        cdim = 1;
        *h = t->shape[2];
        *w = t->shape[3];
    } else if (t->layout == PF_LAYOUT_NHWC) {
        cdim = 3;
        *h = t->shape[1];
        *w = t->shape[2];
    } else {
        return pf_set_error(PF_ERR_INVALID, FN ": dst layout is %s, expected nchw or nhwc",
                            pf_layout_name(t->layout));
    }
    if (t->shape[cdim] != 3)
        return pf_set_error(PF_ERR_INVALID,
                            FN ": dst (%s) has %lld channels (dimension %d), expected 3",
                            pf_layout_name(t->layout), (long long)t->shape[cdim], cdim);
    if (t->shape[0] != n)
        return pf_set_error(PF_ERR_INVALID, FN ": n is %d but dst holds %lld frames (shape[0])", n,
                            (long long)t->shape[0]);
    if (*h < 1 || *w < 1 || *h > PF_FRAME_MAX_DIM || *w > PF_FRAME_MAX_DIM)
        return pf_set_error(PF_ERR_INVALID, FN ": dst size %lldx%lld (W x H) outside 1..%d",
                            (long long)*w, (long long)*h, PF_FRAME_MAX_DIM);
    if (t->dtype != PF_DTYPE_F32 && t->dtype != PF_DTYPE_F16)
        return pf_set_error(PF_ERR_UNSUPPORTED, FN ": dst dtype %s; f32 and f16 are supported",
                            pf_dtype_name(t->dtype));
    if (!pf_tensor_is_contiguous(t))
        return pf_set_error(PF_ERR_UNSUPPORTED,
                            FN ": dst is not contiguous (strides %lld %lld %lld %lld)",
                            (long long)t->strides[0], (long long)t->strides[1],
                            (long long)t->strides[2], (long long)t->strides[3]);
    if (!t->data) return pf_set_error(PF_ERR_INVALID, FN ": dst data is NULL");
    size_t frame_bytes = 3 * (size_t)*h * (size_t)*w * pf_dtype_size(t->dtype);
    if ((size_t)n > SIZE_MAX / frame_bytes)
        return pf_set_error(PF_ERR_INVALID, FN ": dst of %d x %zu bytes overflows size_t", n,
                            frame_bytes);
    size_t bytes = (size_t)n * frame_bytes;
    return pf_ops_check_memory(ops, FN, t->buf, t->data, bytes, "dst");
}

static pf_status check_params(const pf_preprocess_params *p)
{
    pf_status st = pf_ops_check_interp(FN, p->interp);
    if (st == PF_OK) st = pf_ops_check_yuv(FN, "", p->matrix, p->range);
    if (st != PF_OK) return st;
    if (!isfinite(p->pad_value) || p->pad_value < 0.0f || p->pad_value > 255.0f)
        return pf_set_error(PF_ERR_INVALID, FN ": pad_value %g outside 0..255",
                            (double)p->pad_value);
    for (int c = 0; c < 3; c++) {
        if (!isfinite(p->std[c]) || p->std[c] == 0.0f)
            return pf_set_error(PF_ERR_INVALID, FN ": std[%d] is %g (must be finite and nonzero)",
                                c, (double)p->std[c]);
        if (!isfinite(p->mean[c]))
            return pf_set_error(PF_ERR_INVALID, FN ": mean[%d] is %g (must be finite)", c,
                                (double)p->mean[c]);
    }
    return PF_OK;
}

/* Content box and transform of one frame (see ops.h, Fused preprocess). */
static void letterbox(int rw, int rh, int W, int H, bool on, pf_pp_frame *d,
                      pf_letterbox_info *info)
{
    int cw = W, ch = H;
    if (on) {
        double s = fmin((double)W / rw, (double)H / rh);
        cw = (int)lround(rw * s);
        ch = (int)lround(rh * s);
        if (cw < 1) cw = 1;
        if (cw > W) cw = W;
        if (ch < 1) ch = 1;
        if (ch > H) ch = H;
    }
    d->content_w = cw;
    d->content_h = ch;
    d->pad_left = (W - cw) / 2;
    d->pad_top = (H - ch) / 2;
    if (info) {
        info->scale_x = (float)((double)cw / rw);
        info->scale_y = (float)((double)ch / rh);
        info->pad_left = d->pad_left;
        info->pad_top = d->pad_top;
        info->content_width = cw;
        info->content_height = ch;
    }
}

pf_status pf_ops_preprocess(pf_ops *ops, const pf_frame *const *srcs, const pf_rect *rois, int n,
                            pf_tensor *dst, const pf_preprocess_params *params,
                            pf_letterbox_info *info)
{
    PF_CHECK_ARG(ops, FN, "ops is NULL");
    PF_CHECK_ARG(srcs, FN, "srcs is NULL");
    PF_CHECK_ARG(dst, FN, "dst is NULL");
    if (n < 1) return pf_set_error(PF_ERR_INVALID, FN ": n is %d (must be >= 1)", n);
    pf_preprocess_params defaults = pf_preprocess_params_default();
    const pf_preprocess_params *pp = params ? params : &defaults;

    int64_t H = 0, W = 0;
    pf_status st = check_dst(ops, dst, n, &H, &W);
    if (st == PF_OK) st = check_params(pp);
    for (int i = 0; st == PF_OK && i < n; i++) {
        st = check_frame(ops, srcs[i], i);
        if (st == PF_OK && rois) st = check_roi(srcs[i], &rois[i], i);
    }
    if (st != PF_OK) return st;

    pf_pp_params p;
    memset(&p, 0, sizeof p);
    p.width = (int32_t)W;
    p.height = (int32_t)H;
    p.nchw = dst->layout == PF_LAYOUT_NCHW;
    p.f16 = dst->dtype == PF_DTYPE_F16;
    p.interp = (int32_t)pp->interp;
    p.bgr = pp->bgr;
    p.matrix = (int32_t)pp->matrix;
    p.range = (int32_t)pp->range;
    p.pad_value = pp->pad_value;
    for (int c = 0; c < 3; c++) {
        p.mean[c] = pp->mean[c];
        p.std[c] = pp->std[c];
        double inv = 1.0 / pp->std[c];
        p.scale[c] = (float)(inv / 255.0);
        p.bias[c] = (float)(-(double)pp->mean[c] * inv);
        p.pad_out[c] = (float)(((double)pp->pad_value / 255.0 - pp->mean[c]) * inv);
    }
    pf_yuv_coeffs_t yk;
    pf_yuv_coeffs(pp->matrix, pp->range, &yk);
    memcpy(p.yuv, yk.dec, sizeof p.yuv);

    const int is_cpu = ops->dev->props.type == PF_DEVICE_CPU;
    const size_t frame_elems = 3 * (size_t)H * (size_t)W;
    const size_t esize = pf_dtype_size(dst->dtype);
    pf_pp_frame frames[PF_PP_MAX_FRAMES];
    for (int k = 0; k < n; k += PF_PP_MAX_FRAMES) {
        int m = n - k < PF_PP_MAX_FRAMES ? n - k : PF_PP_MAX_FRAMES;
        for (int j = 0; j < m; j++) {
            const pf_frame *f = srcs[k + j];
            pf_pp_frame *d = &frames[j];
            memset(d, 0, sizeof *d);
            d->format = (int32_t)f->format;
            for (int q = 0; q < f->num_planes; q++) {
                d->plane[q] = f->data[q];
                d->stride[q] = (int64_t)f->stride[q];
            }
            pf_rect r = rois ? rois[k + j] : (pf_rect){0, 0, f->width, f->height};
            d->roi_x = r.x;
            d->roi_y = r.y;
            d->roi_w = r.width;
            d->roi_h = r.height;
            letterbox(r.width, r.height, (int)W, (int)H, pp->letterbox, d,
                      info ? &info[k + j] : NULL);
        }
        p.n = m;
        p.dst = (uint8_t *)dst->data + (size_t)k * frame_elems * esize;
        if (is_cpu) {
            st = ops->reference ? pf_ref_preprocess(ops, &p, frames)
                                : pf_cpu_preprocess(ops, &p, frames);
        } else {
#ifdef PF_HAVE_CUDA
            st = pf_cuda_preprocess(ops, &p, frames);
#else
            st = pf_ops_no_backend(ops, FN);
#endif
        }
        if (st != PF_OK) return st;
    }
    return PF_OK;
}
