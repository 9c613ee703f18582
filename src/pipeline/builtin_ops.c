/* Built-in stages wrapping the image kernels of ops.h: ops.convert,
 * ops.resize, ops.preprocess, ops.reproject, ops.mask_threshold and
 * ops.composite.
 *
 * Each process call runs the kernel on the worker's pf_ops context (on the
 * stage's stream) into outputs from the stage allocator and emits at once;
 * on a GPU the work is still queued when the item leaves, and the runtime
 * orders consumers after it. An item without the part a stage needs (a
 * frame, a tensor) fails the stage with a message naming the item. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "builtin_impl.h"

static const char *const interp_names[] = {"nearest", "bilinear", "area", NULL};

/* Shared item helpers -------------------------------------------------------------------- */

static pf_status need_frame(bi_stage *s, const pf_item *it)
{
    if (it->frame.buf[0]) return PF_OK;
    return bi_item_error(s, it, PF_ERR_INVALID, "the item has no frame");
}

/* Gives `dst` the timing, origin and media description of `src` (pts,
 * time base, duration, index, source, colour, aspect, and its ICC profile
 * as a reference: the pixels keep their colour meaning through the ops). */
static void copy_frame_stamp(pf_frame *dst, const pf_frame *src)
{
    int dw = dst->width, dh = dst->height;
    pf_frame_copy_props(dst, src);
    /* A resize that changes the shape changes the pixels' shape too: the
     * display aspect stays (as FFmpeg's scale filter does),
     * sar' = sar * (dh * sw) / (dw * sh). */
    if (src->sar.num > 0 && src->sar.den > 0 && dw > 0 && dh > 0 &&
        ((int64_t)dh * src->width != (int64_t)dw * src->height)) {
        dst->sar = pf_rational_reduce((int64_t)src->sar.num * dh * src->width,
                                      (int64_t)src->sar.den * dw * src->height);
    }
}

/* Colour of the YUV <-> RGB conversions of a stage: the YAML's `matrix` and
 * `range` when given, else each frame's own (pf_color_params_for: what the
 * decoder read from the stream). */
typedef struct yuv_choice {
    pf_color_params fixed;
    bool own_matrix, own_range;   /* the key was given */
} yuv_choice;

static pf_status yuv_choice_parse(bi_args *a, yuv_choice *c)
{
    c->own_matrix = bi_has(a, "matrix");
    c->own_range = bi_has(a, "range");
    return bi_yuv(a, &c->fixed.matrix, &c->fixed.range);
}

static pf_color_params yuv_for(const yuv_choice *c, const pf_frame *f)
{
    pf_color_params p = pf_color_params_for(f);
    if (c->own_matrix) p.matrix = c->fixed.matrix;
    if (c->own_range) p.range = c->fixed.range;
    return p;
}

/* The colour description of a YUV frame made with conversion `p`. */
static void stamp_yuv(pf_color_info *c, pf_color_params p)
{
    c->matrix = p.matrix == PF_YUV_BT709 ? 1 : 6;
    c->range = p.range == PF_YUV_FULL ? PF_COLOR_RANGE_FULL : PF_COLOR_RANGE_LIMITED;
}

/* Replaces the item's frame by `f` (taking it, stamped like the frame it
 * replaces) and emits the item. */
static pf_status emit_with_frame(pf_stage_ctx *ctx, pf_item *it, pf_frame *f)
{
    copy_frame_stamp(f, &it->frame);
    pf_frame_unref(&it->frame);
    it->frame = *f;
    memset(f, 0, sizeof *f);
    return bi_emit(ctx, it);
}

/* The worker's ops context and an output frame for a frame-to-frame kernel. */
static pf_status frame_op_begin(bi_stage *s, pf_stage_ctx *ctx, pf_ops **ops, pf_frame *out,
                                pf_pixfmt fmt, int w, int h)
{
    pf_status st = bi_ops(s, ctx, ops);
    if (st == PF_OK) st = bi_frame_alloc(s, ctx, out, fmt, w, h);
    return st;
}

/* After a frame-to-frame kernel: emits the item with `out` as its frame when
 * all went well; releases whatever of `out` is left either way. */
static pf_status frame_op_end(pf_stage_ctx *ctx, pf_item *it, pf_frame *out, pf_status st)
{
    if (st == PF_OK) st = emit_with_frame(ctx, it, out);
    pf_frame_unref(out);
    return st;
}

/* Runs `one` on each item while all goes well, then releases the items
 * (emitted ones are zeroed already). */
static pf_status for_each_item(void *s, pf_stage_ctx *ctx, pf_item *items, int n,
                               pf_status (*one)(void *s, pf_stage_ctx *ctx, pf_item *it))
{
    pf_status st = PF_OK;
    for (int i = 0; i < n && st == PF_OK; i++) st = one(s, ctx, &items[i]);
    bi_unref_items(items, n);
    return st;
}

/* ops.convert ------------------------------------------------------------------------------ */

typedef struct convert_stage {
    bi_stage base;
    pf_pixfmt format;
    yuv_choice color;
} convert_stage;

static pf_status convert_one(void *user, pf_stage_ctx *ctx, pf_item *it)
{
    convert_stage *s = user;
    pf_status st = need_frame(&s->base, it);
    if (st != PF_OK) return st;
    if (it->frame.format == s->format) return bi_emit(ctx, it); /* already there: no copy */
    pf_ops *ops;
    pf_frame out = {0};
    st = frame_op_begin(&s->base, ctx, &ops, &out, s->format, it->frame.width, it->frame.height);
    pf_color_params cp = yuv_for(&s->color, &it->frame);
    if (st == PF_OK)
        st = bi_item_failed(&s->base, it, pf_ops_convert(ops, &it->frame, &out, &cp),
                            "pf_ops_convert");
    /* emit_with_frame stamps out from it->frame: a YUV result says which
     * matrix and range made it. */
    if (st == PF_OK && (s->format == PF_PIXFMT_NV12 || s->format == PF_PIXFMT_I420))
        stamp_yuv(&it->frame.color, cp);
    return frame_op_end(ctx, it, &out, st);
}

static pf_status convert_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    return for_each_item(user, ctx, items, n, convert_one);
}

pf_status bi_convert_create(bi_args *a, pf_stage_desc *d)
{
    pf_status st;
    convert_stage *s = bi_stage_new(sizeof *s, a, d, &st);
    if (!s) return st;
    d->process = convert_process;
    st = bi_pixfmt(a, "format", PF_PIXFMT_NONE, true, &s->format);
    if (st == PF_OK) st = yuv_choice_parse(a, &s->color);
    return bi_create_end(s, d, st);
}

/* ops.resize ------------------------------------------------------------------------------- */

typedef struct resize_stage {
    bi_stage base;
    int width, height;
    pf_interp interp;
} resize_stage;

static pf_status resize_one(void *user, pf_stage_ctx *ctx, pf_item *it)
{
    resize_stage *s = user;
    pf_status st = need_frame(&s->base, it);
    if (st != PF_OK) return st;
    if (it->frame.width == s->width && it->frame.height == s->height) return bi_emit(ctx, it);
    pf_ops *ops;
    pf_frame out = {0};
    st = frame_op_begin(&s->base, ctx, &ops, &out, it->frame.format, s->width, s->height);
    if (st == PF_OK)
        st = bi_item_failed(&s->base, it, pf_ops_resize(ops, &it->frame, &out, s->interp),
                            "pf_ops_resize");
    return frame_op_end(ctx, it, &out, st);
}

static pf_status resize_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    return for_each_item(user, ctx, items, n, resize_one);
}

pf_status bi_resize_create(bi_args *a, pf_stage_desc *d)
{
    pf_status st;
    resize_stage *s = bi_stage_new(sizeof *s, a, d, &st);
    if (!s) return st;
    d->process = resize_process;
    int64_t w = 0, h = 0;
    int interp = 0;
    st = bi_int_req(a, "width", 1, PF_FRAME_MAX_DIM, &w);
    if (st == PF_OK) st = bi_int_req(a, "height", 1, PF_FRAME_MAX_DIM, &h);
    if (st == PF_OK) st = bi_enum(a, "interp", interp_names, PF_INTERP_BILINEAR, &interp);
    s->width = (int)w;
    s->height = (int)h;
    s->interp = (pf_interp)interp;
    return bi_create_end(s, d, st);
}

/* ops.preprocess ----------------------------------------------------------------------------- */

/* pf_ops_preprocess takes at most this many frames per call. */
#define PRE_CHUNK 64

typedef struct preprocess_stage {
    bi_stage base;
    int width, height;
    pf_dtype dtype;
    pf_layout layout;
    pf_preprocess_params pp;
    yuv_choice color;
} preprocess_stage;

static pf_status preprocess_chunk(preprocess_stage *s, pf_stage_ctx *ctx, pf_item *items, int n)
{
    const pf_frame *srcs[PRE_CHUNK];
    for (int i = 0; i < n; i++) {
        pf_status st = need_frame(&s->base, &items[i]);
        if (st != PF_OK) return st;
        srcs[i] = &items[i].frame;
    }
    int64_t shape[4] = {n, 3, s->height, s->width};
    if (s->layout == PF_LAYOUT_NHWC) {
        shape[1] = s->height;
        shape[2] = s->width;
        shape[3] = 3;
    }
    pf_ops *ops;
    pf_tensor batch = {0};
    pf_status st = bi_ops(&s->base, ctx, &ops);
    if (st == PF_OK) st = bi_tensor_alloc(&s->base, ctx, &batch, s->dtype, 4, shape, s->layout);
    if (st == PF_OK) {
        /* One call converts every frame with one matrix: the chunk shares
         * its first frame's colour (preprocess_process cuts chunks there). */
        pf_preprocess_params pp = s->pp;
        pf_color_params cp = yuv_for(&s->color, srcs[0]);
        pp.matrix = cp.matrix;
        pp.range = cp.range;
        st = pf_ops_preprocess(ops, srcs, NULL, n, &batch, &pp, NULL);
        st = bi_item_failed(&s->base, &items[0], st, "pf_ops_preprocess");
    }
    /* Each item gets its own [1, ...] view of the batch: one buffer, so a
     * batched consumer downstream finds the slices contiguous. */
    for (int i = 0; i < n && st == PF_OK; i++) {
        pf_tensor_unref(&items[i].tensor);
        st = pf_tensor_slice(&items[i].tensor, &batch, 0, i, 1);
    }
    pf_tensor_unref(&batch);
    return st;
}

static pf_status preprocess_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    preprocess_stage *s = user;
    pf_status st = PF_OK;
    int done = 0;
    while (done < n && st == PF_OK) {
        int k = n - done < PRE_CHUNK ? n - done : PRE_CHUNK;
        /* A chunk ends where the colour changes (two sources, a stream that
         * switches range): each call has one matrix. */
        if (items[done].frame.buf[0]) {
            pf_color_params c0 = yuv_for(&s->color, &items[done].frame);
            for (int j = 1; j < k; j++) {
                if (!items[done + j].frame.buf[0]) break;
                pf_color_params cj = yuv_for(&s->color, &items[done + j].frame);
                if (cj.matrix != c0.matrix || cj.range != c0.range) {
                    k = j;
                    break;
                }
            }
        }
        st = preprocess_chunk(s, ctx, items + done, k);
        for (int i = 0; i < k && st == PF_OK; i++, done++) st = bi_emit(ctx, &items[done]);
    }
    bi_unref_items(items, n);
    return st;
}

static pf_status parse_triplet(bi_args *a, const char *key, float def, float *out, bool nonzero)
{
    double v[3] = {def, def, def};
    int count = 0;
    pf_status st = bi_num_list(a, key, v, 3, 3, &count);
    if (st != PF_OK) return st;
    for (int c = 0; c < 3; c++) {
        if (nonzero && v[c] == 0)
            return bi_error(a, key, "%s '%s': values must not be 0", key, bi_str(a, key));
        out[c] = (float)v[c];
    }
    return PF_OK;
}

pf_status bi_preprocess_create(bi_args *a, pf_stage_desc *d)
{
    static const char *const dtypes[] = {"f32", "f16", NULL};
    static const char *const layouts[] = {"nchw", "nhwc", NULL};
    pf_status st;
    preprocess_stage *s = bi_stage_new(sizeof *s, a, d, &st);
    if (!s) return st;
    d->process = preprocess_process;
    s->pp = pf_preprocess_params_default();
    int64_t w = 0, h = 0;
    int dt = 0, lay = 0, interp = PF_INTERP_BILINEAR;
    double pad = 114;
    st = bi_int_req(a, "width", 1, PF_FRAME_MAX_DIM, &w);
    if (st == PF_OK) st = bi_int_req(a, "height", 1, PF_FRAME_MAX_DIM, &h);
    if (st == PF_OK) st = bi_enum(a, "dtype", dtypes, 0, &dt);
    if (st == PF_OK) st = bi_enum(a, "layout", layouts, 0, &lay);
    if (st == PF_OK) st = bi_enum(a, "interp", interp_names, PF_INTERP_BILINEAR, &interp);
    if (st == PF_OK) st = bi_bool(a, "letterbox", false, &s->pp.letterbox);
    if (st == PF_OK) st = bi_num(a, "pad_value", 114, 0, false, 255, false, &pad);
    if (st == PF_OK) st = bi_bool(a, "bgr", false, &s->pp.bgr);
    if (st == PF_OK) st = parse_triplet(a, "mean", 0.0f, s->pp.mean, false);
    if (st == PF_OK) st = parse_triplet(a, "std", 1.0f, s->pp.std, true);
    if (st == PF_OK) st = yuv_choice_parse(a, &s->color);
    s->width = (int)w;
    s->height = (int)h;
    s->dtype = dt == 0 ? PF_DTYPE_F32 : PF_DTYPE_F16;
    s->layout = lay == 0 ? PF_LAYOUT_NCHW : PF_LAYOUT_NHWC;
    s->pp.interp = (pf_interp)interp;
    s->pp.pad_value = (float)pad;
    return bi_create_end(s, d, st);
}

/* ops.reproject ------------------------------------------------------------------------------ */

#define MAX_VIEWS 64

typedef struct reproject_stage {
    bi_stage base;
    pf_view views[MAX_VIEWS];
    int num_views;
    pf_interp interp;
    bool mosaic;
} reproject_stage;

static pf_status reproject_one(reproject_stage *s, pf_stage_ctx *ctx, pf_item *it)
{
    pf_status st = need_frame(&s->base, it);
    if (st != PF_OK) return st;
    pf_ops *ops;
    st = bi_ops(&s->base, ctx, &ops);
    if (st != PF_OK) return st;
    const pf_frame *src = &it->frame;
    int n = s->num_views, w = s->views[0].width, h = s->views[0].height;
    pf_frame outs[MAX_VIEWS];
    pf_frame *dsts[MAX_VIEWS];
    memset(outs, 0, sizeof outs);
    int made = 0;
    pf_frame mosaic = {0};
    if (s->mosaic) {
        st = bi_frame_alloc(&s->base, ctx, &mosaic, src->format, w * n, h);
        if (st != PF_OK) return st;
        /* Views side by side: sub-frames borrowing the mosaic's memory. */
        int bpp = src->format == PF_PIXFMT_RGBA ? 4 : src->format == PF_PIXFMT_GRAY8 ? 1 : 3;
        for (int v = 0; v < n; v++) {
            outs[v] = mosaic;
            outs[v].width = w;
            outs[v].data[0] = mosaic.data[0] + (size_t)v * (size_t)w * (size_t)bpp;
            dsts[v] = &outs[v];
        }
    } else {
        for (; made < n && st == PF_OK; made++) {
            st = bi_frame_alloc(&s->base, ctx, &outs[made], src->format, s->views[made].width,
                                s->views[made].height);
            dsts[made] = &outs[made];
        }
    }
    if (st == PF_OK) {
        st = pf_ops_equirect_to_views(ops, src, s->views, dsts, n, s->interp);
        st = bi_item_failed(&s->base, it, st, "pf_ops_equirect_to_views");
    }
    /* Views are rendered with square pixels whatever the equirect's. */
    it->frame.sar = (pf_rational){0, 0};
    if (s->mosaic) return frame_op_end(ctx, it, &mosaic, st);
    for (int v = 0; v < n && st == PF_OK; v++) {
        pf_item out;
        memset(&out, 0, sizeof out);
        out.frame = outs[v];
        memset(&outs[v], 0, sizeof outs[v]);
        copy_frame_stamp(&out.frame, src);
        pf_tensor_ref(&out.tensor, &it->tensor);
        st = bi_emit_like(ctx, it, &out);
    }
    for (int v = 0; v < made; v++) pf_frame_unref(&outs[v]);
    return st;
}

static pf_status reproject_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    reproject_stage *s = user;
    pf_status st = PF_OK;
    for (int i = 0; i < n; i++) {
        if (st == PF_OK) st = reproject_one(s, ctx, &items[i]);
        pf_item_unref(&items[i]); /* emitted items were zeroed; views hold their own refs */
    }
    return st;
}

pf_status bi_reproject_create(bi_args *a, pf_stage_desc *d)
{
    static const char *const interps[] = {"nearest", "bilinear", NULL};
    pf_status st;
    reproject_stage *s = bi_stage_new(sizeof *s, a, d, &st);
    if (!s) return st;
    d->process = reproject_process;
    int64_t nviews = 4, w = 640, h = 480;
    double yaws[MAX_VIEWS], pitch = 0, roll = 0, fov = 90;
    int nyaws = 0, interp = 1;
    bool has_views = bi_has(a, "views"), has_yaws = bi_has(a, "yaws");
    st = bi_int(a, "views", 4, 1, MAX_VIEWS, &nviews);
    if (st == PF_OK) st = bi_num_list(a, "yaws", yaws, -1, MAX_VIEWS, &nyaws);
    if (st == PF_OK && has_views && has_yaws)
        st = bi_error(a, "yaws", "give either 'views' (evenly spaced yaws) or 'yaws', not both");
    if (st == PF_OK) st = bi_num(a, "pitch", 0, -1e6, false, 1e6, false, &pitch);
    if (st == PF_OK) st = bi_num(a, "roll", 0, -1e6, false, 1e6, false, &roll);
    if (st == PF_OK) st = bi_num(a, "fov", 90, 0, true, 180, true, &fov);
    if (st == PF_OK) st = bi_int(a, "width", 640, 1, PF_FRAME_MAX_DIM, &w);
    if (st == PF_OK) st = bi_int(a, "height", 480, 1, PF_FRAME_MAX_DIM, &h);
    if (st == PF_OK) st = bi_enum(a, "interp", interps, 1, &interp);
    if (st == PF_OK) st = bi_bool(a, "mosaic", false, &s->mosaic);
    if (st == PF_OK) {
        s->num_views = has_yaws ? nyaws : (int)nviews;
        if (s->mosaic && w * s->num_views > PF_FRAME_MAX_DIM)
            st = bi_error(a, "mosaic", "mosaic of %d views %lld pixels wide is wider than %d",
                          s->num_views, (long long)(w * s->num_views), PF_FRAME_MAX_DIM);
    }
    for (int v = 0; v < s->num_views && st == PF_OK; v++) {
        pf_view *pv = &s->views[v];
        pv->yaw = has_yaws ? (float)yaws[v] : (float)(360.0 * v / s->num_views);
        pv->pitch = (float)pitch;
        pv->roll = (float)roll;
        pv->fov = (float)fov;
        pv->width = (int)w;
        pv->height = (int)h;
    }
    s->interp = interp == 0 ? PF_INTERP_NEAREST : PF_INTERP_BILINEAR;
    return bi_create_end(s, d, st);
}

/* ops.mask_threshold ----------------------------------------------------------------------- */

typedef struct threshold_stage {
    bi_stage base;
    float threshold;
    bool logits;
    int channel;
} threshold_stage;

static pf_status threshold_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    threshold_stage *s = user;
    pf_status st = PF_OK;
    int i = 0;
    for (; i < n && st == PF_OK; i++) {
        pf_item *it = &items[i];
        if (!it->tensor.buf) {
            st = bi_item_error(&s->base, it, PF_ERR_INVALID,
                               "the item has no tensor (put ops.preprocess or a model before it)");
            break;
        }
        pf_tensor src = {0}, out = {0};
        pf_tensor_ref(&src, &it->tensor);
        if (s->channel >= 0) {
            pf_tensor_unref(&src);
            if (it->tensor.ndim != 4 || it->tensor.layout != PF_LAYOUT_NCHW)
                st = bi_item_error(&s->base, it, PF_ERR_INVALID,
                                   "channel %d needs a 4-D NCHW tensor; the item's is %d-D %s",
                                   s->channel, it->tensor.ndim, pf_layout_name(it->tensor.layout));
            else if (s->channel >= it->tensor.shape[1])
                st = bi_item_error(&s->base, it, PF_ERR_INVALID,
                                   "channel %d outside the tensor's %lld channels", s->channel,
                                   (long long)it->tensor.shape[1]);
            else
                st = pf_tensor_slice(&src, &it->tensor, 1, s->channel, 1);
        }
        pf_ops *ops;
        if (st == PF_OK) st = bi_ops(&s->base, ctx, &ops);
        if (st == PF_OK)
            st = bi_tensor_alloc(&s->base, ctx, &out, PF_DTYPE_U8, src.ndim, src.shape,
                                 src.layout);
        if (st == PF_OK) {
            st = pf_ops_mask_threshold(ops, &src, s->logits, s->threshold, &out);
            st = bi_item_failed(&s->base, it, st, "pf_ops_mask_threshold");
        }
        if (st == PF_OK) {
            pf_tensor_unref(&it->tensor);
            it->tensor = out;
            memset(&out, 0, sizeof out);
            st = bi_emit(ctx, it);
        }
        pf_tensor_unref(&out);
        pf_tensor_unref(&src);
    }
    bi_unref_items(items, n); /* emitted ones are zeroed already */
    return st;
}

pf_status bi_mask_threshold_create(bi_args *a, pf_stage_desc *d)
{
    pf_status st;
    threshold_stage *s = bi_stage_new(sizeof *s, a, d, &st);
    if (!s) return st;
    d->process = threshold_process;
    double thr = 0.5;
    int64_t ch = -1;
    st = bi_num(a, "threshold", 0.5, -1e30, false, 1e30, false, &thr);
    if (st == PF_OK) st = bi_bool(a, "logits", false, &s->logits);
    if (st == PF_OK) st = bi_int(a, "channel", -1, -1, 4096, &ch);
    s->threshold = (float)thr;
    s->channel = (int)ch;
    return bi_create_end(s, d, st);
}

/* ops.composite ------------------------------------------------------------------------------ */

#define GEN_MASKS 64   /* positions of the generated mask, cycled by seq */
#define GEN_SIZE 64    /* generated masks are GEN_SIZE x GEN_SIZE (composite upsamples) */

typedef enum { MASK_AUTO = 0, MASK_ITEM = 1, MASK_GENERATED = 2 } mask_mode;

typedef struct composite_stage {
    bi_stage base;
    mask_mode mask;
    pf_background bg;
    yuv_choice color;
    pf_pixfmt format;
    pf_tensor masks;   /* [GEN_MASKS, 1, GEN_SIZE, GEN_SIZE] f32, made on first use */
} composite_stage;

static void composite_free(bi_stage *b)
{
    composite_stage *s = (composite_stage *)b;
    pf_tensor_unref(&s->masks);
}

/* The masks may be stream-ordered memory of the stage's stream: they go
 * while the stream exists (stop), not at destroy. */
static void composite_stop(void *user)
{
    composite_stage *s = user;
    bi_stage_stop_common(&s->base);
    pf_mutex_lock(&s->base.mu);
    pf_tensor_unref(&s->masks);
    pf_mutex_unlock(&s->base.mu);
}

/* A soft ellipse sweeping left and right over GEN_MASKS steps. */
static void draw_masks(float *m)
{
    for (int k = 0; k < GEN_MASKS; k++) {
        double cx = 0.5 + 0.3 * sin(2 * 3.14159265358979323846 * k / GEN_MASKS), cy = 0.55;
        for (int y = 0; y < GEN_SIZE; y++)
            for (int x = 0; x < GEN_SIZE; x++) {
                double dx = ((x + 0.5) / GEN_SIZE - cx) / 0.22, dy = ((y + 0.5) / GEN_SIZE - cy) / 0.42;
                double d = sqrt(dx * dx + dy * dy);
                double v = (1.0 - d) / 0.15;
                m[((size_t)k * GEN_SIZE + (size_t)y) * GEN_SIZE + (size_t)x] =
                    (float)(v < 0 ? 0 : v > 1 ? 1 : v);
            }
    }
}

static pf_status make_masks(composite_stage *s, pf_stage_ctx *ctx)
{
    pf_status st = PF_OK;
    pf_mutex_lock(&s->base.mu);
    if (!s->masks.buf) {
        int64_t shape[4] = {GEN_MASKS, 1, GEN_SIZE, GEN_SIZE};
        pf_tensor host = {0}, dev = {0};
        st = pf_tensor_alloc(&host, PF_DTYPE_F32, 4, shape, PF_LAYOUT_NCHW, NULL, NULL);
        if (st == PF_OK) {
            draw_masks(host.data);
            if (s->base.domain == PF_MEM_HOST) {
                s->masks = host;
                memset(&host, 0, sizeof host);
            } else {
                pf_stream *stream = pf_stage_stream(ctx);
                st = bi_tensor_alloc(&s->base, ctx, &dev, PF_DTYPE_F32, 4, shape, PF_LAYOUT_NCHW);
                if (st == PF_OK)
                    st = pf_memcpy_async(stream, dev.data, host.data, pf_tensor_nbytes(&host));
                if (st == PF_OK) st = pf_stream_synchronize(stream);
                if (st == PF_OK) {
                    s->masks = dev;
                    memset(&dev, 0, sizeof dev);
                }
            }
        }
        pf_tensor_unref(&dev);
        pf_tensor_unref(&host);
    }
    pf_mutex_unlock(&s->base.mu);
    return st;
}

static pf_status composite_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    composite_stage *s = user;
    pf_status st = PF_OK;
    int i = 0;
    for (; i < n && st == PF_OK; i++) {
        pf_item *it = &items[i];
        st = need_frame(&s->base, it);
        if (st != PF_OK) break;
        bool use_item = s->mask == MASK_ITEM || (s->mask == MASK_AUTO && it->tensor.buf);
        if (use_item && !it->tensor.buf) {
            st = bi_item_error(&s->base, it, PF_ERR_INVALID,
                               "mask 'item' but the item has no tensor");
            break;
        }
        pf_tensor gen = {0};
        if (!use_item) {
            if (!s->masks.buf) st = make_masks(s, ctx);
            int64_t k = it->seq % GEN_MASKS;
            if (k < 0) k += GEN_MASKS;
            if (st == PF_OK) st = pf_tensor_slice(&gen, &s->masks, 0, k, 1);
        }
        pf_ops *ops;
        pf_frame out = {0};
        if (st == PF_OK)
            st = frame_op_begin(&s->base, ctx, &ops, &out, s->format, it->frame.width,
                                it->frame.height);
        if (st == PF_OK) {
            pf_background bg = s->bg;
            pf_color_params cp = yuv_for(&s->color, &it->frame);
            bg.matrix = cp.matrix;
            bg.range = cp.range;
            st = pf_ops_composite(ops, &it->frame, use_item ? &it->tensor : &gen, &bg, &out);
            st = bi_item_failed(&s->base, it, st, "pf_ops_composite");
            if (st == PF_OK && s->format == PF_PIXFMT_NV12) stamp_yuv(&it->frame.color, cp);
        }
        pf_tensor_unref(&gen);
        st = frame_op_end(ctx, it, &out, st);
    }
    bi_unref_items(items, n); /* emitted ones are zeroed already */
    return st;
}

pf_status bi_composite_create(bi_args *a, pf_stage_desc *d)
{
    static const char *const masks[] = {"auto", "item", "generated", NULL};
    static const char *const bgs[] = {"blur", "color", "none", NULL};
    static const char *const formats[] = {"rgb24", "bgr24", "rgba", "nv12", NULL};
    static const pf_pixfmt format_values[] = {PF_PIXFMT_RGB24, PF_PIXFMT_BGR24, PF_PIXFMT_RGBA,
                                              PF_PIXFMT_NV12};
    pf_status st;
    composite_stage *s = bi_stage_new(sizeof *s, a, d, &st);
    if (!s) return st;
    s->base.free_extra = composite_free;
    d->process = composite_process;
    d->stop = composite_stop;
    int mask = 0, bg = 0, fmt = 0;
    double sigma = 8, color[3] = {0, 177, 64};
    st = bi_enum(a, "mask", masks, MASK_AUTO, &mask);
    if (st == PF_OK) st = bi_enum(a, "background", bgs, 0, &bg);
    if (st == PF_OK) st = bi_num(a, "sigma", 8, 0, true, 64, false, &sigma);
    if (st == PF_OK) st = bi_num_list(a, "color", color, 3, 3, NULL);
    for (int c = 0; c < 3 && st == PF_OK; c++)
        if (color[c] < 0 || color[c] > 255 || color[c] != floor(color[c]))
            st = bi_error(a, "color", "color '%s': expected 3 integers 0..255 (R,G,B)",
                          bi_str(a, "color"));
    if (st == PF_OK) st = bi_enum(a, "format", formats, 0, &fmt);
    if (st == PF_OK) st = yuv_choice_parse(a, &s->color);
    s->mask = (mask_mode)mask;
    s->bg.kind = bg == 0 ? PF_BG_BLUR : bg == 1 ? PF_BG_COLOR : PF_BG_NONE;
    s->bg.blur_sigma = (float)sigma;
    for (int c = 0; c < 3; c++) s->bg.color[c] = (uint8_t)color[c];
    s->format = format_values[fmt];
    return bi_create_end(s, d, st);
}
