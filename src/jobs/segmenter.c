/* pf_segmenter (jobs.h): the segment job's chain for one frame at a time on
 * the caller's thread, with the calls the job's stages make and the same
 * settings, so an image gives the job's bytes:
 *
 *   preprocess (model size, f32; f16 on a GPU) -> model -> the mask view
 *   [1, 1, h, w] -> (smoothing) -> (resized to the frame when the mask is
 *   asked for: the job's mask_post does that only with mask_out, and the
 *   compositor then reads that mask) -> composite -> (GRAY8 mask)
 *
 * On a GPU a host frame is uploaded, and its composite downloaded, on the
 * segmenter's stream; the mask is always made on the host. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "jobs/segment_impl.h"

struct pf_segmenter {
    seg_job job;              /* model and background, as the job holds them */
    pf_device *dev;
    bool cuda;
    float smooth;
    pf_stream *stream;
    pf_ops *ops;
    pf_model *model;
    pf_nn_exec *exec;
    pf_allocator *dev_alloc;  /* CUDA: device frames and tensors */
    pf_background bg;
    pf_frame bg_image;        /* the background image where the ops run */
    pf_tensor state;          /* smoothing state (smooth < 1) */
    char msg[1024];           /* the last message of seg_* helpers */
};

/* The seg_* helpers report through a sink: here it keeps the message for
 * pf_last_error. */
static void keep_message(void *user, pf_log_level level, const char *msg)
{
    (void)level;
    snprintf(user, 1024, "%s", msg);
}

pf_segmenter_params pf_segmenter_params_default(void)
{
    pf_segmenter_params p;
    memset(&p, 0, sizeof p);
    p.smooth = 1.0f;
    return p;
}

void pf_segmenter_destroy(pf_segmenter **sp)
{
    pf_segmenter *s = sp ? *sp : NULL;
    if (!s) return;
    if (s->stream) pf_stream_synchronize(s->stream);
    pf_tensor_unref(&s->state);
    pf_frame_unref(&s->bg_image);
    pf_nn_exec_destroy(&s->exec);
    pf_model_free(&s->model);
    pf_ops_destroy(&s->ops);
    pf_allocator_destroy(&s->dev_alloc);
    pf_stream_destroy(&s->stream);
    pf_frame_unref(&s->job.bg_image);
    free((void *)s->job.sink);
    free(s);
    *sp = NULL;
}

pf_status pf_segmenter_create(const pf_segmenter_params *p, pf_segmenter **out)
{
    PF_CHECK_ARG(p && out, "pf_segmenter_create", "params or out is NULL");
    *out = NULL;
    if (!(p->smooth > 0 && p->smooth <= 1))
        return pf_set_error(PF_ERR_INVALID, "smooth %g: expected a number in (0, 1]",
                            (double)p->smooth);
    pf_status st = seg_check_background(p->background);
    if (st != PF_OK) return st;
    pf_segmenter *s = calloc(1, sizeof *s);
    jobs_sink *sink = calloc(1, sizeof *sink);
    if (!s || !sink) {
        free(s);
        free(sink);
        return pf_set_error(PF_ERR_NOMEM, "pf_segmenter_create: out of memory");
    }
    *sink = (jobs_sink){keep_message, s->msg, NULL};
    s->job.sink = sink;
    s->job.alpha = p->alpha;
    s->smooth = p->smooth;
    s->dev = p->device;
    if (!s->dev && (st = pf_device_select(NULL, &s->dev)) != PF_OK) goto fail;
    s->cuda = pf_device_get_type(s->dev) == PF_DEVICE_CUDA;
    const char *bg = p->background ? p->background : p->alpha ? "none" : "blur";
    if ((st = seg_load_background(&s->job, bg)) != PF_OK) goto fail_msg;
    if (!seg_find_model(&s->job, p->model)) {
        st = PF_ERR_IO;
        goto fail_msg;
    }
    if (!seg_read_model(&s->job)) {
        st = PF_ERR_FORMAT;
        goto fail_msg;
    }
    seg_background(&s->job, &s->bg);
    pf_stream_params sp = pf_stream_params_default();
    sp.device = s->dev;
    if ((st = pf_stream_create(&sp, &s->stream)) != PF_OK) goto fail;
    pf_ops_params op = pf_ops_params_default();
    op.stream = s->stream;
    if ((st = pf_ops_create(&op, &s->ops)) != PF_OK) goto fail;
    if (s->cuda) {
        pf_allocator_params ap = pf_allocator_params_default();
        ap.device = s->dev;
        ap.domain = PF_MEM_DEVICE;
        ap.name = "segmenter";
        if ((st = pf_allocator_create(&ap, &s->dev_alloc)) != PF_OK) goto fail;
    }
    if ((st = pf_model_load(s->job.model, &s->model)) != PF_OK) goto fail;
    pf_nn_exec_params xp = pf_nn_exec_params_default();
    xp.device = s->dev;
    xp.precision = s->cuda ? PF_NN_FP16 : PF_NN_FP32;
    xp.max_batch = 1;
    if ((st = pf_nn_exec_create(s->model, &xp, &s->exec)) != PF_OK) goto fail;
    if ((st = pf_nn_exec_reserve(s->exec)) != PF_OK) goto fail;
    if (s->job.bg == SEG_BG_IMAGE) {
        const pf_frame *host = &s->job.bg_image;
        if (!s->cuda) {
            pf_frame_ref(&s->bg_image, host);
        } else {
            st = pf_frame_alloc(&s->bg_image, host->format, host->width, host->height,
                                s->dev_alloc, s->stream);
            if (st == PF_OK) st = pf_frame_copy_async(&s->bg_image, host, s->stream);
            if (st == PF_OK) st = pf_stream_synchronize(s->stream);
            if (st != PF_OK) goto fail;
        }
        s->bg.image = &s->bg_image;
    }
    *out = s;
    return PF_OK;
fail_msg:
    pf_set_error(st, "%s", s->msg);
fail:;
    char keep[1024];
    snprintf(keep, sizeof keep, "%s", pf_last_error());
    pf_segmenter_destroy(&s);
    return pf_set_error(st, "%s", keep);
}

static bool on_device(const pf_frame *f)
{
    return pf_frame_domain(f) == PF_MEM_DEVICE;
}

/* The model's mask of `src` as f32 [1, 1, h, w] in `mask` (the executor's
 * output, viewed), after smoothing. */
static pf_status infer(pf_segmenter *s, const pf_frame *src, pf_tensor *mask)
{
    seg_job *job = &s->job;
    pf_allocator *a = s->dev_alloc; /* NULL = host */
    int64_t shape[4] = {1, 3, job->model_h, job->model_w};
    if (job->model_nhwc) {
        shape[1] = job->model_h;
        shape[2] = job->model_w;
        shape[3] = 3;
    }
    pf_tensor in = {0}, out = {0};
    pf_status st = pf_tensor_alloc(&in, s->cuda ? PF_DTYPE_F16 : PF_DTYPE_F32, 4, shape,
                                   job->model_nhwc ? PF_LAYOUT_NHWC : PF_LAYOUT_NCHW, a,
                                   s->stream);
    if (st == PF_OK) {
        pf_preprocess_params pp = pf_preprocess_params_default();
        pf_color_params cp = pf_color_params_for(src);
        pp.matrix = cp.matrix;
        pp.range = cp.range;
        const pf_frame *srcs[1] = {src};
        st = pf_ops_preprocess(s->ops, srcs, NULL, 1, &in, &pp, NULL);
    }
    pf_model_io io = pf_model_output(s->model, 0);
    int64_t oshape[PF_TENSOR_MAX_DIMS] = {0};
    for (int d = 0; d < io.ndim; d++) oshape[d] = io.shape[d];
    if (io.ndim >= 1) oshape[0] = 1;
    if (st == PF_OK)
        st = pf_tensor_alloc(&out, PF_DTYPE_F32, io.ndim, oshape,
                             io.ndim == 4 ? io.layout : PF_LAYOUT_NONE, a, s->stream);
    if (st == PF_OK) st = pf_nn_exec_run(s->exec, s->stream, &in, 1, &out, 1);
    pf_tensor_unref(&in);
    /* One channel: [1, H, W, 1], [1, 1, H, W] or [1, H, W] (seg_read_model). */
    int64_t h = io.ndim == 4 ? (out.layout == PF_LAYOUT_NHWC ? out.shape[1] : out.shape[2])
                             : out.shape[1];
    int64_t w = io.ndim == 4 ? (out.layout == PF_LAYOUT_NHWC ? out.shape[2] : out.shape[3])
                             : out.shape[2];
    int64_t mshape[4] = {1, 1, h, w};
    if (st == PF_OK)
        st = pf_tensor_wrap(mask, out.buf,
                            (size_t)((char *)out.data - (char *)pf_buffer_data(out.buf)),
                            PF_DTYPE_F32, 4, mshape, NULL, PF_LAYOUT_NCHW);
    pf_tensor_unref(&out);
    if (st != PF_OK || s->smooth >= 1.0f) return st;
    /* Smoothing over successive frames (the job's mask_post, scene cut 0.1). */
    bool reset = !s->state.buf || s->state.shape[2] != h || s->state.shape[3] != w;
    if (reset) {
        pf_tensor_unref(&s->state);
        st = pf_tensor_alloc(&s->state, PF_DTYPE_F32, 4, mshape, PF_LAYOUT_NCHW, a, s->stream);
    }
    if (st == PF_OK) st = pf_ops_mask_temporal_cut(s->ops, &s->state, mask, s->smooth, 0.1f, reset);
    pf_tensor_unref(mask);
    if (st == PF_OK) st = pf_tensor_alloc(mask, PF_DTYPE_F32, 4, mshape, PF_LAYOUT_NCHW, a, s->stream);
    if (st == PF_OK)
        st = pf_memcpy_async(s->stream, mask->data, s->state.data, pf_tensor_nbytes(&s->state));
    return st;
}

/* `t` (device or host) as a host tensor in `host` (a reference when it is
 * on the host already). */
static pf_status to_host(pf_segmenter *s, const pf_tensor *t, pf_tensor *host)
{
    if (!s->cuda) {
        pf_tensor_ref(host, t);
        return PF_OK;
    }
    pf_status st = pf_tensor_alloc(host, t->dtype, t->ndim, t->shape, t->layout, NULL, NULL);
    if (st == PF_OK) st = pf_memcpy_async(s->stream, host->data, t->data, pf_tensor_nbytes(t));
    return st;
}

pf_status pf_segmenter_process(pf_segmenter *s, const pf_frame *in, pf_frame *composite_out,
                               pf_frame *mask_out)
{
    PF_CHECK_ARG(s && in, "pf_segmenter_process", "segmenter or frame is NULL");
    PF_CHECK_ARG(in->buf[0] && in->width > 0 && in->height > 0, "pf_segmenter_process",
                 "the input frame is empty");
    bool dev_in = on_device(in);
    if (dev_in && !s->cuda)
        return pf_set_error(PF_ERR_INVALID, "pf_segmenter_process: a device frame, but the "
                            "segmenter runs on the CPU");
    if (composite_out) pf_frame_unref(composite_out);
    if (mask_out) pf_frame_unref(mask_out);
    pf_frame up = {0}, comp = {0};
    pf_tensor mask = {0}, full = {0}, hmask = {0};
    const pf_frame *src = in;
    pf_status st = PF_OK;
    if (s->cuda && !dev_in) {
        st = pf_frame_alloc(&up, in->format, in->width, in->height, s->dev_alloc, s->stream);
        if (st == PF_OK) st = pf_frame_copy_async(&up, in, s->stream);
        if (st == PF_OK) pf_frame_copy_props(&up, in);
        src = &up;
    }
    if (st == PF_OK) st = infer(s, src, &mask);
    /* With a mask asked for, the job resizes it to the frame before the
     * compositor, which then reads that one. */
    const pf_tensor *cmask = &mask;
    if (st == PF_OK && mask_out &&
        (mask.shape[2] != in->height || mask.shape[3] != in->width)) {
        int64_t shape[4] = {1, 1, in->height, in->width};
        st = pf_tensor_alloc(&full, PF_DTYPE_F32, 4, shape, PF_LAYOUT_NCHW, s->dev_alloc,
                             s->stream);
        if (st == PF_OK) st = pf_ops_resize_mask(s->ops, &mask, &full, PF_INTERP_BILINEAR);
        cmask = &full;
    }
    if (st == PF_OK && composite_out) {
        st = pf_frame_alloc(&comp, s->job.alpha ? PF_PIXFMT_RGBA : PF_PIXFMT_RGB24, in->width,
                            in->height, s->dev_alloc, s->stream);
        if (st == PF_OK) {
            pf_color_params cp = pf_color_params_for(src);
            pf_background bg = s->bg;
            bg.matrix = cp.matrix;
            bg.range = cp.range;
            st = pf_ops_composite(s->ops, src, cmask, &bg, &comp);
        }
        if (st == PF_OK && s->cuda && !dev_in) {
            /* Back to the host, where the frame came from. */
            st = pf_frame_alloc(composite_out, comp.format, comp.width, comp.height, NULL, NULL);
            if (st == PF_OK) st = pf_frame_copy_async(composite_out, &comp, s->stream);
        } else if (st == PF_OK) {
            pf_frame_ref(composite_out, &comp);
        }
        if (st == PF_OK) pf_frame_copy_props(composite_out, in);
    }
    if (st == PF_OK && mask_out) st = to_host(s, cmask, &hmask);
    if (st == PF_OK) st = pf_stream_synchronize(s->stream);
    if (st == PF_OK && mask_out) {
        st = seg_mask_to_gray(&hmask, mask_out);
        if (st == PF_OK) {
            pf_frame_copy_props(mask_out, in);
            pf_buffer_unref(&mask_out->icc); /* a mask, not the image's colours */
        }
    }
    pf_frame_unref(&up);
    pf_frame_unref(&comp);
    pf_tensor_unref(&mask);
    pf_tensor_unref(&full);
    pf_tensor_unref(&hmask);
    if (st != PF_OK) {
        if (composite_out) pf_frame_unref(composite_out);
        if (mask_out) pf_frame_unref(mask_out);
    }
    return st;
}
