/* Built-in stages around the inference engine: nn.infer (a model on the
 * items' tensors) and ops.mask_post (a model's output -> a mask that
 * ops.composite and the mask writers take).
 *
 * nn.infer design. The model is loaded and checked when the stage is made,
 * so a YAML file with a wrong path or a model nn.infer cannot feed fails at
 * load with the line. Executors are made per worker thread in start(): an
 * executor runs on one thread at a time, and start() is the first point
 * where the stage's effective batch size is known (the pipeline mode may
 * have forced it to 1). A process call gets up to max_batch items; their
 * tensors are normally [1, ...] slices of one preprocess batch lying back to
 * back in one buffer, so the batch input is a view of that buffer (no copy);
 * anything else is gathered with stream-ordered copies into a tensor from
 * the stage allocator. The outputs come from the stage allocator too (cached
 * blocks: nothing is allocated in the steady state) and each item leaves
 * with its [b, ...] slice of the output, its frame untouched.
 *
 * ops.mask_post design. Model outputs come as [1, H, W, 1] (TFLite NHWC),
 * [1, 1, H, W] or [1, C, H, W]; ops.composite wants [..., H, W] with leading
 * dims 1. A single-channel output is re-described as [1, 1, H, W] without a
 * copy; several classes go through pf_ops_mask_argmax (softmax probability of
 * one class) or a channel slice. Then, optionally: temporal smoothing with
 * one state tensor per source (pf_ops_mask_temporal_cut; reset when a source
 * restarts, and at a scene cut: mean |mask - state| above `scene_cut`, 0.1 by
 * default, so one shot's mask does not ghost into the next), feathering, and
 * a resize to the frame's size. */
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "builtin_impl.h"
#include "pipeline_impl.h"
#include "pixflow/nn.h"

/* Shared ----------------------------------------------------------------------------------- */

static void shape_str(char *buf, size_t size, int ndim, const int64_t *shape)
{
    size_t len = 0;
    buf[0] = '\0';
    len += (size_t)snprintf(buf + len, size - len, "[");
    for (int i = 0; i < ndim && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld", i ? ", " : "",
                                (long long)shape[i]);
    if (len < size) snprintf(buf + len, size - len, "]");
}

/* The calling worker's thread index, checked against BI_MAX_THREADS. */
static pf_status thread_slot(const bi_stage *s, pf_stage_ctx *ctx, int *ti)
{
    *ti = pf_stage_thread_index(ctx);
    if (*ti < 0 || *ti >= BI_MAX_THREADS)
        return pf_set_error(PF_ERR_UNSUPPORTED,
                            "%s: worker thread %d; built-in stages support at most %d threads",
                            s->type, *ti, BI_MAX_THREADS);
    return PF_OK;
}

/* Replaces the item's tensor by `t` (taking it) and emits the item. */
static pf_status emit_with_tensor(pf_stage_ctx *ctx, pf_item *it, pf_tensor *t)
{
    pf_tensor_unref(&it->tensor);
    it->tensor = *t;
    memset(t, 0, sizeof *t);
    return bi_emit(ctx, it);
}

/* nn.infer ---------------------------------------------------------------------------------- */

typedef struct infer_stage {
    bi_stage base;
    pf_model *model;
    pf_nn_precision precision;
    bool reserve;               /* every batch size at start */
    bool reserve_max;           /* only max_batch at start (smaller runs padded into it) */
    int in_index;               /* the model input fed from the items */
    int out_index;              /* the model output the items leave with */
    int n_out;
    pf_model_io in_io;
    int64_t fixed_batch;        /* > 0: the model's batch is fixed at this */
    int64_t memory_cap;         /* per executor, bytes; 0 = none (pf_nn_exec_params) */
    pf_nn_exec *exec[BI_MAX_THREADS];
    int cap[BI_MAX_THREADS];    /* rows per run of that worker's executor */
} infer_stage;

static void infer_release(infer_stage *s)
{
    for (int i = 0; i < BI_MAX_THREADS; i++) pf_nn_exec_destroy(&s->exec[i]);
}

static void infer_free(bi_stage *b)
{
    infer_stage *s = (infer_stage *)b;
    infer_release(s);
    pf_model_free(&s->model);
}

/* Executors hold device memory used on the stage's streams: they go while
 * the streams exist. */
static void infer_stop(void *user)
{
    infer_stage *s = user;
    bi_stage_stop_common(&s->base);
    pf_mutex_lock(&s->base.mu);
    infer_release(s);
    pf_mutex_unlock(&s->base.mu);
}

static pf_status infer_start(void *user, pf_stage_ctx *ctx)
{
    infer_stage *s = user;
    int ti;
    pf_status st = thread_slot(&s->base, ctx, &ti);
    if (st != PF_OK) return st;
    int max_batch = ctx->st->max_batch; /* after the mode's override */
    if (s->fixed_batch > 0) max_batch = (int)s->fixed_batch;
    pf_nn_exec_params xp = pf_nn_exec_params_default();
    xp.device = s->base.device;
    xp.precision = s->precision;
    xp.max_batch = max_batch;
    xp.memory_cap = (size_t)s->memory_cap;
    pf_nn_exec *x = NULL;
    st = pf_nn_exec_create(s->model, &xp, &x);
    if (st == PF_OK && s->reserve) st = pf_nn_exec_reserve(x);
    else if (st == PF_OK && s->reserve_max) st = pf_nn_exec_reserve_batch(x, max_batch);
    if (st != PF_OK) {
        char msg[768];
        snprintf(msg, sizeof msg, "%s", pf_last_error());
        pf_nn_exec_destroy(&x);
        return pf_set_error(st, "nn.infer: cannot prepare the model for batch %d: %s", max_batch,
                            msg);
    }
    pf_mutex_lock(&s->base.mu);
    s->exec[ti] = x;
    s->cap[ti] = max_batch;
    pf_mutex_unlock(&s->base.mu);
    return PF_OK;
}

/* Checks an item's tensor against the model input: same rank, same dims
 * past the batch, a float dtype, contiguous. *rows = its batch dim. */
static pf_status infer_check(infer_stage *s, const pf_item *it, const pf_tensor *first,
                             int64_t *rows)
{
    const pf_tensor *t = &it->tensor;
    const pf_model_io *io = &s->in_io;
    if (!t->buf)
        return bi_item_error(&s->base, it, PF_ERR_INVALID,
                             "the item has no tensor (put ops.preprocess before nn.infer)");
    char want[160], got[160];
    shape_str(want, sizeof want, io->ndim, io->shape);
    shape_str(got, sizeof got, t->ndim, t->shape);
    bool match = t->ndim == io->ndim && t->ndim >= 1;
    for (int d = 1; d < t->ndim && match; d++) match = t->shape[d] == io->shape[d];
    if (!match) {
        const char *hint = "";
        if (t->ndim == 4 && io->ndim == 4 && io->layout == PF_LAYOUT_NHWC &&
            t->layout == PF_LAYOUT_NCHW)
            hint = " (the model is NHWC: give ops.preprocess layout: nhwc)";
        else if (t->ndim == 4 && io->ndim == 4 && io->layout == PF_LAYOUT_NCHW &&
                 t->layout == PF_LAYOUT_NHWC)
            hint = " (the model is NCHW: give ops.preprocess layout: nchw)";
        return bi_item_error(&s->base, it, PF_ERR_INVALID,
                             "the item's tensor %s %s does not fit model input '%s' %s (-1 = "
                             "any batch)%s",
                             got, pf_layout_name(t->layout), io->name, want, hint);
    }
    if (t->dtype != PF_DTYPE_F32 && t->dtype != PF_DTYPE_F16 && t->dtype != io->dtype)
        return bi_item_error(&s->base, it, PF_ERR_INVALID,
                             "the item's tensor is %s; model input '%s' takes f32 or f16",
                             pf_dtype_name(t->dtype), io->name);
    if (first && t->dtype != first->dtype)
        return bi_item_error(&s->base, it, PF_ERR_INVALID,
                             "items of one batch have tensors of dtypes %s and %s",
                             pf_dtype_name(first->dtype), pf_dtype_name(t->dtype));
    if (!pf_tensor_is_contiguous(t))
        return bi_item_error(&s->base, it, PF_ERR_INVALID, "the item's tensor %s is not "
                             "contiguous", got);
    if (t->shape[0] < 1)
        return bi_item_error(&s->base, it, PF_ERR_INVALID, "the item's tensor %s is empty", got);
    *rows = t->shape[0];
    return PF_OK;
}

/* The batch input of items[0..n) (rows in all): a view when their tensors lie
 * back to back in one buffer, else a gathered copy. */
static pf_status infer_gather(infer_stage *s, pf_stage_ctx *ctx, pf_item *items, int n,
                              int64_t rows, pf_tensor *in)
{
    const pf_tensor *t0 = &items[0].tensor;
    int64_t shape[PF_TENSOR_MAX_DIMS];
    memcpy(shape, t0->shape, sizeof shape);
    shape[0] = rows;
    if (n == 1) {
        pf_tensor_ref(in, t0);
        return PF_OK;
    }
    bool adjacent = true;
    const char *next = t0->data;
    for (int i = 0; i < n && adjacent; i++) {
        const pf_tensor *t = &items[i].tensor;
        adjacent = t->buf == t0->buf && (const char *)t->data == next;
        next = (const char *)t->data + pf_tensor_nbytes(t);
    }
    if (adjacent) {
        size_t offset = (size_t)((const char *)t0->data - (const char *)pf_buffer_data(t0->buf));
        return pf_tensor_wrap(in, t0->buf, offset, t0->dtype, t0->ndim, shape, NULL, t0->layout);
    }
    pf_status st = bi_tensor_alloc(&s->base, ctx, in, t0->dtype, t0->ndim, shape, t0->layout);
    char *dst = in->data;
    for (int i = 0; i < n && st == PF_OK; i++) {
        size_t nb = pf_tensor_nbytes(&items[i].tensor);
        st = pf_memcpy_async(pf_stage_stream(ctx), dst, items[i].tensor.data, nb);
        dst += nb;
    }
    if (st != PF_OK) {
        pf_tensor_unref(in);
        return bi_item_failed(&s->base, &items[0], st, "gathering the batch");
    }
    return PF_OK;
}

/* Runs the executor over `rows` rows of `in` into outs[] in runs of at most
 * *cap rows (views along the batch dim; all contiguous). Out of memory at
 * more than one row (planning a batch size, or running it) halves *cap and
 * tells the batcher, instead of failing the item: the run goes on in
 * smaller batches (logged, counted in the stage's stats). */
static pf_status infer_run(infer_stage *s, pf_stage_ctx *ctx, pf_nn_exec *x, int *cap,
                           const pf_item *it, const pf_tensor *in, pf_tensor *outs, int64_t rows)
{
    pf_tensor ins = {0}, os[PF_NN_MAX_DIMS];
    pf_status st = PF_OK;
    for (int64_t off = 0, k = 0; off < rows && st == PF_OK; off += k) {
        k = rows - off < *cap ? rows - off : *cap;
        if (s->fixed_batch > 0 && k != s->fixed_batch)
            return bi_item_error(&s->base, it, PF_ERR_INVALID,
                                 "model input '%s' has a fixed batch of %lld; this run has %lld "
                                 "rows", s->in_io.name, (long long)s->fixed_batch, (long long)k);
        memset(os, 0, sizeof os);
        if (off == 0 && k == rows) {
            st = pf_nn_exec_run(x, pf_stage_stream(ctx), in, 1, outs, s->n_out);
        } else {
            st = pf_tensor_slice(&ins, in, 0, off, k);
            for (int o = 0; o < s->n_out && st == PF_OK; o++)
                st = pf_tensor_slice(&os[o], &outs[o], 0, off, k);
            if (st == PF_OK) st = pf_nn_exec_run(x, pf_stage_stream(ctx), &ins, 1, os, s->n_out);
            pf_tensor_unref(&ins);
            for (int o = 0; o < s->n_out; o++) pf_tensor_unref(&os[o]);
        }
        if (st == PF_ERR_NOMEM && k > 1 && s->fixed_batch <= 0) {
            int smaller = 1;
            while (smaller * 2 < k) smaller *= 2;
            PF_LOGW("nn.infer '%s': out of memory at batch %lld (%s); batches of at most %d "
                    "from now on", s->base.name, (long long)k, pf_last_error(), smaller);
            *cap = pf_stage_limit_batch(ctx, smaller);
            if (*cap > smaller) *cap = smaller;
            st = PF_OK;
            k = 0; /* the same rows again, in smaller runs */
            continue;
        }
        st = bi_item_failed(&s->base, it, st, "pf_nn_exec_run");
    }
    return st;
}

/* One group of items whose rows fit one output allocation. */
static pf_status infer_group(infer_stage *s, pf_stage_ctx *ctx, pf_nn_exec *x, int *cap,
                             pf_item *items, int n, int64_t rows)
{
    pf_tensor in = {0}, outs[PF_NN_MAX_DIMS];
    memset(outs, 0, sizeof outs);
    pf_status st = infer_gather(s, ctx, items, n, rows, &in);
    for (int o = 0; o < s->n_out && st == PF_OK; o++) {
        pf_model_io io = pf_model_output(s->model, o);
        int64_t shape[PF_TENSOR_MAX_DIMS] = {0};
        for (int d = 0; d < io.ndim; d++) shape[d] = io.shape[d];
        if (io.ndim >= 1) shape[0] = rows;
        pf_dtype dt = io.dtype == PF_DTYPE_I32 ? PF_DTYPE_I32 : PF_DTYPE_F32;
        pf_layout lay = io.ndim == 4 ? io.layout : PF_LAYOUT_NONE;
        st = bi_tensor_alloc(&s->base, ctx, &outs[o], dt, io.ndim, shape, lay);
        st = bi_item_failed(&s->base, &items[0], st, "allocating the output");
    }
    if (st == PF_OK) st = infer_run(s, ctx, x, cap, &items[0], &in, outs, rows);
    int64_t off = 0;
    for (int i = 0; i < n && st == PF_OK; i++) {
        pf_tensor mine = {0};
        int64_t b = items[i].tensor.shape[0];
        st = pf_tensor_slice(&mine, &outs[s->out_index], 0, off, b);
        off += b;
        if (st == PF_OK) st = emit_with_tensor(ctx, &items[i], &mine);
    }
    pf_tensor_unref(&in);
    for (int o = 0; o < s->n_out; o++) pf_tensor_unref(&outs[o]);
    return st;
}

static pf_status infer_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    infer_stage *s = user;
    int ti;
    pf_status st = thread_slot(&s->base, ctx, &ti);
    pf_nn_exec *x = st == PF_OK ? s->exec[ti] : NULL;
    if (st == PF_OK && !x)
        st = pf_set_error(PF_ERR_INTERNAL, "nn.infer: worker %d has no executor", ti);
    int cap = st == PF_OK ? s->cap[ti] : 1;
    const int cap0 = cap;
    /* Items go in groups whose rows fit one run; an item with more rows than
     * a run takes is a group of its own, run in pieces. */
    int i = 0;
    while (i < n && st == PF_OK) {
        int64_t rows = 0, r;
        int j = i;
        while (j < n && st == PF_OK) {
            st = infer_check(s, &items[j], j > i ? &items[i].tensor : NULL, &r);
            if (st != PF_OK || (j > i && rows + r > cap)) break;
            rows += r;
            j++;
        }
        if (st == PF_OK) st = infer_group(s, ctx, x, &cap, items + i, j - i, rows);
        i = j;
    }
    if (cap != cap0) s->cap[ti] = cap; /* this worker's thread owns its slot */
    bi_unref_items(items, n); /* emitted ones are zeroed already */
    return st;
}

pf_status bi_infer_create(bi_args *a, pf_stage_desc *d)
{
    static const char *const precisions[] = {"fp32", "fp16", NULL};
    pf_status st;
    infer_stage *s = bi_stage_new(sizeof *s, a, d, &st);
    if (!s) return st;
    s->base.free_extra = infer_free;
    d->process = infer_process;
    d->start = infer_start;
    d->stop = infer_stop;
    int prec = 0;
    int64_t batch = 1, delay = 0;
    const char *path = bi_str(a, "model");
    const char *in_name = bi_str(a, "input");
    const char *out_name = bi_str(a, "output");
    st = bi_enum(a, "precision", precisions, 0, &prec);
    if (st == PF_OK) st = bi_int(a, "batch", 1, 1, PF_STATS_MAX_BATCH, &batch);
    if (st == PF_OK) st = bi_int(a, "delay_us", 0, 0, 60000000, &delay);
    const char *rv = st == PF_OK ? bi_str(a, "reserve") : NULL;
    if (rv && !strcmp(rv, "max")) s->reserve_max = true;
    else if (rv && !pf_parse_bool(rv, &s->reserve))
        st = bi_error(a, "reserve", "reserve '%s': expected true, false or max", rv);
    if (st == PF_OK)
        st = bi_int(a, "memory_cap", 0, 0, (int64_t)1 << 50, &s->memory_cap);
    if (st == PF_OK && !path)
        st = bi_error(a, NULL, "missing required parameter 'model' (an .onnx or .tflite file)");
    s->precision = prec == 1 ? PF_NN_FP16 : PF_NN_FP32;
    if (st == PF_OK && s->precision == PF_NN_FP16 && !s->base.cuda)
        st = bi_error(a, "precision", "precision 'fp16' needs a CUDA device; this stage runs on "
                      "the CPU (use fp32)");
    if (st == PF_OK) {
        st = pf_model_load(path, &s->model);
        if (st != PF_OK) {
            /* Keep the loader's status (I/O, format, unsupported) with the
             * stage's location in front of its message. */
            char msg[768], full[1024];
            snprintf(msg, sizeof msg, "%s", pf_last_error());
            bi_error(a, "model", "model '%s': %s", path, msg);
            snprintf(full, sizeof full, "%s", pf_last_error());
            st = pf_set_error(st, "%s", full);
        }
    }
    if (st == PF_OK) {
        int nin = pf_model_num_inputs(s->model);
        s->n_out = pf_model_num_outputs(s->model);
        s->in_index = in_name ? pf_model_find_input(s->model, in_name) : 0;
        s->out_index = out_name ? pf_model_find_output(s->model, out_name) : 0;
        if (nin != 1)
            st = bi_error(a, "model", "model '%s' has %d inputs; nn.infer feeds exactly one", path,
                          nin);
        else if (s->n_out < 1 || s->n_out > PF_NN_MAX_DIMS)
            st = bi_error(a, "model", "model '%s' has %d outputs; nn.infer takes 1..%d", path,
                          s->n_out, PF_NN_MAX_DIMS);
        else if (s->in_index < 0)
            st = bi_error(a, "input", "input '%s': model '%s' has no input of that name (it has "
                          "'%s')", in_name, path, pf_model_input(s->model, 0).name);
        else if (s->out_index < 0)
            st = bi_error(a, "output", "output '%s': model '%s' has no output of that name (the "
                          "first is '%s')", out_name, path, pf_model_output(s->model, 0).name);
    }
    if (st == PF_OK) {
        s->in_io = pf_model_input(s->model, s->in_index);
        if (s->in_io.ndim < 1)
            st = bi_error(a, "model", "model '%s': input '%s' is a scalar; nn.infer needs a "
                          "batch dimension", path, s->in_io.name);
        else
            s->fixed_batch = s->in_io.shape[0] > 0 ? s->in_io.shape[0] : 0;
    }
    d->batch.max_batch = (int)batch;
    d->batch.max_delay_us = delay;
    return bi_create_end(s, d, st);
}

/* ops.mask_post ------------------------------------------------------------------------------ */

/* Sources with temporal state (item.source values, any int32): the table
 * grows as streams join (a camera per source), up to the pipeline's
 * stream limit. */
#define MP_MAX_SOURCES 4096

typedef struct mp_state {
    bool used;
    int32_t source;
    int64_t last_seq;
    pf_tensor state;            /* f32 [1, 1, H, W] at the model's resolution */
} mp_state;

typedef struct mask_post_stage {
    bi_stage base;
    int channel;                /* -1: the tensor must have one channel */
    bool softmax;
    int cls;
    float alpha;                /* temporal smoothing; 1 = off */
    float cut;                  /* scene-cut threshold of the smoothing (mean |mask - state|);
                                   0 = never */
    float feather;              /* sigma in mask pixels; 0 = off */
    bool to_frame;              /* resize to the item's frame */
    pf_interp interp;
    mp_state *states;           /* nstates slots, grown by doubling */
    int nstates;
} mask_post_stage;

static void mp_release(mask_post_stage *s)
{
    for (int i = 0; i < s->nstates; i++) {
        pf_tensor_unref(&s->states[i].state);
        s->states[i].used = false;
    }
}

static void mp_free(bi_stage *b)
{
    mask_post_stage *s = (mask_post_stage *)b;
    mp_release(s);
    free(s->states);
    s->states = NULL;
    s->nstates = 0;
}

/* State tensors are stream-ordered memory of the stage's stream. */
static void mp_stop(void *user)
{
    mask_post_stage *s = user;
    bi_stage_stop_common(&s->base);
    mp_release(s);
}

static pf_status mp_start(void *user, pf_stage_ctx *ctx)
{
    mask_post_stage *s = user;
    if (s->alpha < 1.0f && ctx->st->nthreads > 1)
        return pf_set_error(PF_ERR_INVALID,
                            "ops.mask_post: temporal smoothing (alpha %g) keeps per-source "
                            "state and needs threads: 1 (the stage has %d)",
                            (double)s->alpha, ctx->st->nthreads);
    return PF_OK;
}

/* Geometry of a model output: channels C, height H, width W, and whether the
 * channels are the last dim (NHWC). Leading (batch) dims must be 1. */
static pf_status mp_geometry(mask_post_stage *s, const pf_item *it, int64_t *c, int64_t *h,
                             int64_t *w, bool *nhwc)
{
    const pf_tensor *t = &it->tensor;
    char got[160];
    shape_str(got, sizeof got, t->ndim, t->shape);
    *nhwc = false;
    if (t->ndim == 4) {
        if (t->shape[0] != 1)
            return bi_item_error(&s->base, it, PF_ERR_INVALID,
                                 "tensor %s holds %lld masks; ops.mask_post takes one per item "
                                 "(nn.infer gives each item its own)",
                                 got, (long long)t->shape[0]);
        *nhwc = t->layout == PF_LAYOUT_NHWC;
        *c = *nhwc ? t->shape[3] : t->shape[1];
        *h = *nhwc ? t->shape[1] : t->shape[2];
        *w = *nhwc ? t->shape[2] : t->shape[3];
    } else if (t->ndim == 3 || t->ndim == 2) {
        if (t->ndim == 3 && t->shape[0] != 1)
            return bi_item_error(&s->base, it, PF_ERR_INVALID,
                                 "tensor %s: a 3-D mask must be [1, H, W]", got);
        *c = 1;
        *h = t->shape[t->ndim - 2];
        *w = t->shape[t->ndim - 1];
    } else {
        return bi_item_error(&s->base, it, PF_ERR_INVALID,
                             "tensor %s: expected [1, C, H, W], [1, H, W, C], [1, H, W] or [H, W]",
                             got);
    }
    if (*c < 1 || *h < 1 || *w < 1 || *h > PF_FRAME_MAX_DIM || *w > PF_FRAME_MAX_DIM)
        return bi_item_error(&s->base, it, PF_ERR_INVALID, "tensor %s: empty or too large", got);
    if (!pf_tensor_is_contiguous(t))
        return bi_item_error(&s->base, it, PF_ERR_INVALID, "tensor %s is not contiguous", got);
    return PF_OK;
}

/* The item's mask as f32 [1, 1, H, W] (a view when no arithmetic is needed). */
static pf_status mp_base(mask_post_stage *s, pf_stage_ctx *ctx, pf_ops *ops, const pf_item *it,
                         pf_tensor *out)
{
    const pf_tensor *t = &it->tensor;
    int64_t c = 0, h = 0, w = 0;
    bool nhwc = false;
    pf_status st = mp_geometry(s, it, &c, &h, &w, &nhwc);
    if (st != PF_OK) return st;
    int64_t shape[4] = {1, 1, h, w};
    if (s->softmax) {
        if (t->ndim != 4)
            return bi_item_error(&s->base, it, PF_ERR_INVALID,
                                 "softmax needs a 4-D [1, C, H, W] or [1, H, W, C] tensor");
        if (s->cls >= c)
            return bi_item_error(&s->base, it, PF_ERR_INVALID,
                                 "class %d outside the tensor's %lld channels", s->cls,
                                 (long long)c);
        pf_tensor prob = {0};
        int64_t pshape[3] = {1, h, w};
        st = bi_tensor_alloc(&s->base, ctx, &prob, PF_DTYPE_F32, 3, pshape, PF_LAYOUT_NONE);
        if (st == PF_OK)
            st = bi_item_failed(&s->base, it, pf_ops_mask_argmax(ops, t, NULL, &prob, s->cls),
                                "pf_ops_mask_argmax");
        if (st == PF_OK)
            st = pf_tensor_wrap(out, prob.buf,
                                (size_t)((char *)prob.data - (char *)pf_buffer_data(prob.buf)),
                                PF_DTYPE_F32, 4, shape, NULL, PF_LAYOUT_NCHW);
        pf_tensor_unref(&prob);
        return st;
    }
    if (t->dtype != PF_DTYPE_F32)
        return bi_item_error(&s->base, it, PF_ERR_INVALID,
                             "the tensor is %s; ops.mask_post takes f32 (or f16 with softmax)",
                             pf_dtype_name(t->dtype));
    size_t plane = (size_t)h * (size_t)w;
    size_t offset = (size_t)((const char *)t->data - (const char *)pf_buffer_data(t->buf));
    if (c > 1) {
        if (s->channel < 0)
            return bi_item_error(&s->base, it, PF_ERR_INVALID,
                                 "the tensor has %lld channels: set channel (one channel's "
                                 "probabilities) or softmax with class (logits per class)",
                                 (long long)c);
        if (s->channel >= c)
            return bi_item_error(&s->base, it, PF_ERR_INVALID,
                                 "channel %d outside the tensor's %lld channels", s->channel,
                                 (long long)c);
        if (nhwc)
            return bi_item_error(&s->base, it, PF_ERR_INVALID,
                                 "channel %d of an NHWC tensor with %lld channels is strided; "
                                 "use softmax with class, or an NCHW model",
                                 s->channel, (long long)c);
        offset += (size_t)s->channel * plane * sizeof(float);
    } else if (s->channel > 0) {
        return bi_item_error(&s->base, it, PF_ERR_INVALID,
                             "channel %d but the tensor has one channel", s->channel);
    }
    return pf_tensor_wrap(out, t->buf, offset, PF_DTYPE_F32, 4, shape, NULL, PF_LAYOUT_NCHW);
}

/* The temporal state slot of `source` (a free one when new; the table
 * doubles when full). NULL past MP_MAX_SOURCES or out of memory. A linear
 * scan: a few hundred compares per item at most, next to a mask pass. */
static mp_state *mp_slot(mask_post_stage *s, int32_t source)
{
    mp_state *free_slot = NULL;
    for (int i = 0; i < s->nstates; i++) {
        if (s->states[i].used && s->states[i].source == source) return &s->states[i];
        if (!s->states[i].used && !free_slot) free_slot = &s->states[i];
    }
    if (free_slot || s->nstates >= MP_MAX_SOURCES) return free_slot;
    int n = s->nstates ? 2 * s->nstates : 16;
    if (n > MP_MAX_SOURCES) n = MP_MAX_SOURCES;
    mp_state *grown = realloc(s->states, (size_t)n * sizeof *grown);
    if (!grown) return NULL;
    memset(grown + s->nstates, 0, (size_t)(n - s->nstates) * sizeof *grown);
    free_slot = &grown[s->nstates];
    s->states = grown;
    s->nstates = n;
    return free_slot;
}

static pf_status mp_temporal(mask_post_stage *s, pf_stage_ctx *ctx, pf_ops *ops,
                             const pf_item *it, pf_tensor *mask)
{
    mp_state *slot = mp_slot(s, it->source);
    if (!slot)
        return bi_item_error(&s->base, it, PF_ERR_UNSUPPORTED,
                             "temporal smoothing keeps state for at most %d sources",
                             MP_MAX_SOURCES);
    /* A new source, a restarted one (seq went back) or a new size starts over. */
    bool reset = !slot->used || it->seq <= slot->last_seq || !slot->state.buf ||
                 slot->state.shape[2] != mask->shape[2] || slot->state.shape[3] != mask->shape[3];
    pf_status st = PF_OK;
    if (!slot->state.buf || slot->state.shape[2] != mask->shape[2] ||
        slot->state.shape[3] != mask->shape[3]) {
        pf_tensor_unref(&slot->state);
        st = bi_tensor_alloc(&s->base, ctx, &slot->state, PF_DTYPE_F32, 4, mask->shape,
                             PF_LAYOUT_NCHW);
        if (st != PF_OK) return st;
    }
    slot->used = true;
    slot->source = it->source;
    slot->last_seq = it->seq;
    /* A scene cut starts over too (decided by the op, on the device when it runs there). */
    st = pf_ops_mask_temporal_cut(ops, &slot->state, mask, s->alpha, s->cut, reset);
    if (st != PF_OK) return bi_item_failed(&s->base, it, st, "pf_ops_mask_temporal_cut");
    /* The item leaves with a copy: the state changes with the next frame
     * while consumers may still read this one. A following feather, or a
     * resize to a frame of another size, makes that copy anyway (a frame of
     * the model's size is not resized: it needs the copy here, or every
     * mask still queued would change with the state). */
    pf_tensor_unref(mask);
    bool resized = s->to_frame && (slot->state.shape[2] != it->frame.height ||
                                   slot->state.shape[3] != it->frame.width);
    if (s->feather > 0 || resized) {
        pf_tensor_ref(mask, &slot->state);
        return PF_OK;
    }
    st = bi_tensor_alloc(&s->base, ctx, mask, PF_DTYPE_F32, 4, slot->state.shape, PF_LAYOUT_NCHW);
    if (st == PF_OK)
        st = pf_memcpy_async(pf_stage_stream(ctx), mask->data, slot->state.data,
                             pf_tensor_nbytes(&slot->state));
    return bi_item_failed(&s->base, it, st, "copying the smoothed mask");
}

static pf_status mp_one(mask_post_stage *s, pf_stage_ctx *ctx, pf_item *it)
{
    if (!it->tensor.buf)
        return bi_item_error(&s->base, it, PF_ERR_INVALID,
                             "the item has no tensor (put nn.infer before ops.mask_post)");
    if (s->to_frame && !it->frame.buf[0])
        return bi_item_error(&s->base, it, PF_ERR_INVALID,
                             "resize 'frame' but the item has no frame");
    pf_ops *ops;
    pf_tensor mask = {0}, tmp = {0};
    pf_status st = bi_ops(&s->base, ctx, &ops);
    if (st == PF_OK) st = mp_base(s, ctx, ops, it, &mask);
    if (st == PF_OK && s->alpha < 1.0f) st = mp_temporal(s, ctx, ops, it, &mask);
    if (st == PF_OK && s->feather > 0) {
        st = bi_tensor_alloc(&s->base, ctx, &tmp, PF_DTYPE_F32, 4, mask.shape, PF_LAYOUT_NCHW);
        if (st == PF_OK)
            st = bi_item_failed(&s->base, it, pf_ops_mask_feather(ops, &mask, &tmp, s->feather),
                                "pf_ops_mask_feather");
        pf_tensor_unref(&mask);
        mask = tmp;
        memset(&tmp, 0, sizeof tmp);
    }
    if (st == PF_OK && s->to_frame &&
        (mask.shape[2] != it->frame.height || mask.shape[3] != it->frame.width)) {
        int64_t shape[4] = {1, 1, it->frame.height, it->frame.width};
        st = bi_tensor_alloc(&s->base, ctx, &tmp, PF_DTYPE_F32, 4, shape, PF_LAYOUT_NCHW);
        if (st == PF_OK)
            st = bi_item_failed(&s->base, it, pf_ops_resize_mask(ops, &mask, &tmp, s->interp),
                                "pf_ops_resize_mask");
        pf_tensor_unref(&mask);
        mask = tmp;
        memset(&tmp, 0, sizeof tmp);
    }
    if (st == PF_OK) st = emit_with_tensor(ctx, it, &mask);
    pf_tensor_unref(&mask);
    pf_tensor_unref(&tmp);
    return st;
}

static pf_status mp_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    mask_post_stage *s = user;
    pf_status st = PF_OK;
    for (int i = 0; i < n && st == PF_OK; i++) st = mp_one(s, ctx, &items[i]);
    bi_unref_items(items, n);
    return st;
}

pf_status bi_mask_post_create(bi_args *a, pf_stage_desc *d)
{
    static const char *const sizes[] = {"model", "frame", NULL};
    static const char *const interps[] = {"nearest", "bilinear", "area", NULL};
    pf_status st;
    mask_post_stage *s = bi_stage_new(sizeof *s, a, d, &st);
    if (!s) return st;
    s->base.free_extra = mp_free;
    d->process = mp_process;
    d->start = mp_start;
    d->stop = mp_stop;
    int64_t channel = -1, cls = -1;
    double alpha = 1, feather = 0, cut = 0.1;
    int size = 0, interp = PF_INTERP_BILINEAR;
    bool has_cls = bi_has(a, "class");
    st = bi_int(a, "channel", -1, -1, 4096, &channel);
    if (st == PF_OK) st = bi_bool(a, "softmax", false, &s->softmax);
    if (st == PF_OK) st = bi_int(a, "class", -1, 0, 254, &cls);
    if (st == PF_OK && s->softmax && !has_cls)
        st = bi_error(a, "softmax", "softmax needs 'class' (the person class index)");
    if (st == PF_OK && !s->softmax && has_cls)
        st = bi_error(a, "class", "'class' applies with softmax: true");
    if (st == PF_OK && s->softmax && channel >= 0)
        st = bi_error(a, "channel", "give either 'channel' or softmax with 'class', not both");
    if (st == PF_OK) st = bi_num(a, "alpha", 1, 0, true, 1, false, &alpha);
    if (st == PF_OK) st = bi_num(a, "scene_cut", 0.1, 0, false, 1, false, &cut);
    if (st == PF_OK) st = bi_num(a, "feather", 0, 0, false, 64, false, &feather);
    if (st == PF_OK) st = bi_enum(a, "size", sizes, 0, &size);
    if (st == PF_OK) st = bi_enum(a, "interp", interps, PF_INTERP_BILINEAR, &interp);
    s->channel = (int)channel;
    s->cls = (int)cls;
    s->alpha = (float)alpha;
    s->cut = (float)cut;
    s->feather = (float)feather;
    s->to_frame = size == 1;
    s->interp = (pf_interp)interp;
    return bi_create_end(s, d, st);
}
