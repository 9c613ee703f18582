/* ops.c - the image kernels (pixflow/ops.h) as functions on arrays.
 *
 * Each call runs where its main input lives: NumPy arrays and other host
 * buffers on the CPU, CUDA DLPack tensors (torch, CuPy, pixflow.Tensor) on
 * their GPU. Outputs are new arrays on the same side (NumPy on the host,
 * pixflow.Tensor on a GPU). The work runs without the GIL in a context
 * borrowed from the device's free list (device.c), and the call returns
 * once it is complete. */
#include "pfpy.h"

#include <math.h>

typedef struct {
    pf_device *dev;
    pfpy_ctx *ctx;
    int gpu;
} call;

static int call_begin(PyObject *primary, call *c)
{
    memset(c, 0, sizeof *c);
    if (pfpy_object_device(primary, &c->dev) < 0) return -1;
    c->gpu = pf_device_props_get(c->dev)->type != PF_DEVICE_CPU;
    if ((c->ctx = pfpy_ctx_try(c->dev)) != NULL) return 0;
    pf_status st;
    Py_BEGIN_ALLOW_THREADS
    st = pfpy_ctx_acquire(c->dev, &c->ctx);
    Py_END_ALLOW_THREADS
    if (st != PF_OK) {
        pfpy_raise(st, "device context");
        return -1;
    }
    return 0;
}

static void call_end(call *c)
{
    if (c->ctx) pfpy_ctx_release(c->ctx);
    c->ctx = NULL;
}

static void *call_stream(call *c)
{
    return c->gpu ? pf_stream_native(c->ctx->stream) : NULL;
}

/* Runs after the op was queued: waits for it, keeping pixflow's message. */
static pf_status finish(call *c, pf_status st, char *err, size_t size)
{
    if (st == PF_OK) st = pf_stream_synchronize(c->ctx->stream);
    if (st != PF_OK) snprintf(err, size, "%s", pf_last_error());
    return st;
}

static PyObject *fail(pf_status st, const char *err, const char *fn)
{
    return pfpy_raise_fmt(st, "%s", *err ? err : fn);
}

static const char *const interp_names[] = {"nearest", "bilinear", "area", NULL};
static const int interp_values[] = {PF_INTERP_NEAREST, PF_INTERP_BILINEAR, PF_INTERP_AREA};
static const char *const matrix_names[] = {"bt601", "bt709", NULL};
static const int matrix_values[] = {PF_YUV_BT601, PF_YUV_BT709};
static const char *const range_names[] = {"limited", "full", NULL};
static const int range_values[] = {PF_YUV_LIMITED, PF_YUV_FULL};

static int parse_size(PyObject *size, int *w, int *h)
{
    if (!PyArg_ParseTuple(size, "ii", w, h)) {
        PyErr_Clear();
        pfpy_raise_fmt(PF_ERR_INVALID, "size: expected (width, height)");
        return -1;
    }
    return 0;
}

static int parse_floats3(PyObject *o, const char *what, float v[3])
{
    if (!o || o == Py_None) return 0;
    double a, b, c;
    if (!PyArg_ParseTuple(o, "ddd", &a, &b, &c)) {
        PyErr_Clear();
        PyObject *t = PySequence_Check(o) ? PySequence_Tuple(o) : NULL;
        int ok = t && PyArg_ParseTuple(t, "ddd", &a, &b, &c);
        Py_XDECREF(t);
        if (!ok) {
            PyErr_Clear();
            pfpy_raise_fmt(PF_ERR_INVALID, "%s: expected 3 numbers", what);
            return -1;
        }
    }
    v[0] = (float)a, v[1] = (float)b, v[2] = (float)c;
    return 0;
}

/* preprocess ------------------------------------------------------------------- */

static PyObject *op_preprocess(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"images", "size", "format", "dtype", "layout", "interp", "letterbox",
                             "pad_value", "bgr", "mean", "std", "matrix", "range", "rois",
                             "return_info", NULL};
    PyObject *images, *size, *dtype_o = NULL, *layout_o = NULL, *interp_o = NULL, *mean_o = NULL,
             *std_o = NULL, *matrix_o = NULL, *range_o = NULL, *rois_o = Py_None;
    const char *format = NULL;
    int letterbox = 0, bgr = 0, return_info = 0;
    double pad_value = 114;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$zOOOpdpOOOOOp:preprocess", kwlist, &images,
                                     &size, &format, &dtype_o, &layout_o, &interp_o, &letterbox,
                                     &pad_value, &bgr, &mean_o, &std_o, &matrix_o, &range_o,
                                     &rois_o, &return_info))
        return NULL;
    int w, h;
    if (parse_size(size, &w, &h) < 0) return NULL;
    pf_preprocess_params p = pf_preprocess_params_default();
    pf_dtype dt = PF_DTYPE_F32;
    int layout = PF_LAYOUT_NCHW, interp = p.interp, matrix = p.matrix, range = p.range;
    static const char *const layout_names[] = {"nchw", "nhwc", NULL};
    static const int layout_values[] = {PF_LAYOUT_NCHW, PF_LAYOUT_NHWC};
    if ((dtype_o && pfpy_dtype_parse(dtype_o, &dt) < 0) ||
        pfpy_parse_choice(layout_o, "layout", layout_names, layout_values, &layout) < 0 ||
        pfpy_parse_choice(interp_o, "interp", interp_names, interp_values, &interp) < 0 ||
        pfpy_parse_choice(matrix_o, "matrix", matrix_names, matrix_values, &matrix) < 0 ||
        pfpy_parse_choice(range_o, "range", range_names, range_values, &range) < 0 ||
        parse_floats3(mean_o, "mean", p.mean) < 0 || parse_floats3(std_o, "std", p.std) < 0)
        return NULL;
    p.interp = (pf_interp)interp;
    p.matrix = (pf_yuv_matrix)matrix;
    p.range = (pf_yuv_range)range;
    p.letterbox = letterbox;
    p.bgr = bgr;
    p.pad_value = (float)pad_value;

    int single = !PyList_Check(images) && !PyTuple_Check(images);
    PyObject *seq = single ? PyTuple_Pack(1, images) : PySequence_Fast(images, "images");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1) {
        Py_DECREF(seq);
        return pfpy_raise_fmt(PF_ERR_INVALID, "preprocess: no images");
    }
    PyObject *result = NULL, *out_obj = NULL, *infos = NULL;
    pf_frame *frames = PyMem_Calloc((size_t)n, sizeof *frames);
    const pf_frame **srcs = PyMem_Calloc((size_t)n, sizeof *srcs);
    pf_rect *rois = NULL;
    pf_letterbox_info *info = PyMem_Calloc((size_t)n, sizeof *info);
    call c = {0};
    if (!frames || !srcs || !info) {
        PyErr_NoMemory();
        goto done;
    }
    if (call_begin(PySequence_Fast_GET_ITEM(seq, 0), &c) < 0) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (pfpy_frame_from_array(PySequence_Fast_GET_ITEM(seq, i), format, "images",
                                  call_stream(&c), &frames[i], NULL) < 0)
            goto done;
        srcs[i] = &frames[i];
    }
    if (rois_o != Py_None) {
        PyObject *rs = PySequence_Fast(rois_o, "rois");
        if (!rs) goto done;
        if (PySequence_Fast_GET_SIZE(rs) != n) {
            Py_DECREF(rs);
            pfpy_raise_fmt(PF_ERR_INVALID, "rois: %zd rectangles for %zd images",
                           PySequence_Fast_GET_SIZE(rs), n);
            goto done;
        }
        rois = PyMem_Calloc((size_t)n, sizeof *rois);
        for (Py_ssize_t i = 0; rois && i < n; i++) {
            if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(rs, i), "iiii", &rois[i].x, &rois[i].y,
                                  &rois[i].width, &rois[i].height)) {
                Py_DECREF(rs);
                goto done;
            }
        }
        Py_DECREF(rs);
        if (!rois) {
            PyErr_NoMemory();
            goto done;
        }
    }
    int64_t shape[4] = {n, 3, h, w};
    if (layout == PF_LAYOUT_NHWC) shape[1] = h, shape[2] = w, shape[3] = 3;
    pf_tensor dst = {0};
    pf_status st = pf_tensor_alloc(&dst, dt, 4, shape, (pf_layout)layout,
                                   c.gpu ? c.ctx->alloc : NULL, c.gpu ? c.ctx->stream : NULL);
    if (st != PF_OK) {
        pfpy_raise(st, "preprocess");
        goto done;
    }
    char err[1024] = "";
    Py_BEGIN_ALLOW_THREADS
    st = pf_ops_preprocess(c.ctx->ops, srcs, rois, (int)n, &dst, &p, info);
    st = finish(&c, st, err, sizeof err);
    Py_END_ALLOW_THREADS
    if (st != PF_OK) {
        pf_tensor_unref(&dst);
        fail(st, err, "preprocess");
        goto done;
    }
    out_obj = pfpy_to_output(pfpy_tensor_new(&dst, c.dev));
    if (!out_obj) goto done;
    if (!return_info) {
        result = out_obj;
        out_obj = NULL;
        goto done;
    }
    infos = PyList_New(n);
    for (Py_ssize_t i = 0; infos && i < n; i++)
        PyList_SET_ITEM(infos, i, Py_BuildValue(
            "{s:f,s:f,s:i,s:i,s:i,s:i}", "scale_x", info[i].scale_x, "scale_y", info[i].scale_y,
            "pad_left", info[i].pad_left, "pad_top", info[i].pad_top, "content_width",
            info[i].content_width, "content_height", info[i].content_height));
    if (infos) result = PyTuple_Pack(2, out_obj, infos);
done:
    for (Py_ssize_t i = 0; frames && i < n; i++) pf_frame_unref(&frames[i]);
    call_end(&c);
    PyMem_Free(frames);
    PyMem_Free(srcs);
    PyMem_Free(rois);
    PyMem_Free(info);
    Py_XDECREF(out_obj);
    Py_XDECREF(infos);
    Py_DECREF(seq);
    return result;
}

/* convert, resize -------------------------------------------------------------- */

/* Frame op skeleton: src array -> dst of `dfmt` w x h, run by `fn`. */
typedef pf_status (*frame_fn)(pf_ops *ops, const pf_frame *src, pf_frame *dst, const void *arg);

static PyObject *frame_op_call(call *cp, const pfpy_array *img, const char *format,
                               const char *out_format, int w, int h, frame_fn fn, const void *arg,
                               const char *name);

static PyObject *frame_op(PyObject *image, const char *format, const char *out_format, int w,
                          int h, frame_fn fn, const void *arg, const char *name)
{
    call c;
    if (call_begin(image, &c) < 0) return NULL;
    pfpy_array a;
    if (pfpy_array_get(image, PFPY_READ | PFPY_ROWS, "image", call_stream(&c), &a) < 0) {
        call_end(&c);
        return NULL;
    }
    PyObject *r = frame_op_call(&c, &a, format, out_format, w, h, fn, arg, name);
    pfpy_array_release(&a);
    return r;
}

/* Runs fn on the imported image; ends the call. */
static PyObject *frame_op_call(call *cp, const pfpy_array *img, const char *format,
                               const char *out_format, int w, int h, frame_fn fn, const void *arg,
                               const char *name)
{
    call c = *cp;
    pf_frame src = {0}, dst = {0};
    PyObject *out = NULL;
    pf_pixfmt dfmt;
    if (pfpy_frame_from_tensor(img, format, "image", &src, NULL) < 0) goto done;
    dfmt = src.format;
    if (out_format && pfpy_pixfmt_parse(out_format, &dfmt) < 0) goto done;
    if (w <= 0) w = src.width, h = src.height;
    if (pfpy_frame_alloc_array(dfmt, w, h, c.gpu ? c.ctx : NULL, &dst, &out) < 0) goto done;
    char err[1024] = "";
    pf_status st;
    Py_BEGIN_ALLOW_THREADS
    st = fn(c.ctx->ops, &src, &dst, arg);
    st = finish(&c, st, err, sizeof err);
    Py_END_ALLOW_THREADS
    if (st != PF_OK) {
        Py_CLEAR(out);
        fail(st, err, name);
    }
done:
    pf_frame_unref(&src);
    pf_frame_unref(&dst);
    call_end(&c);
    return pfpy_to_output(out);
}

static pf_status run_convert(pf_ops *ops, const pf_frame *s, pf_frame *d, const void *arg)
{
    return pf_ops_convert(ops, s, d, arg);
}

static PyObject *op_convert(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"image", "to", "format", "matrix", "range", NULL};
    PyObject *image, *matrix_o = NULL, *range_o = NULL;
    const char *to, *format = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Os|$zOO:convert", kwlist, &image, &to, &format,
                                     &matrix_o, &range_o))
        return NULL;
    int matrix = PF_YUV_BT601, range = PF_YUV_LIMITED;
    if (pfpy_parse_choice(matrix_o, "matrix", matrix_names, matrix_values, &matrix) < 0 ||
        pfpy_parse_choice(range_o, "range", range_names, range_values, &range) < 0)
        return NULL;
    pf_color_params cp = {(pf_yuv_matrix)matrix, (pf_yuv_range)range};
    return frame_op(image, format, to, 0, 0, run_convert, &cp, "convert");
}

static pf_status run_resize(pf_ops *ops, const pf_frame *s, pf_frame *d, const void *arg)
{
    return pf_ops_resize(ops, s, d, *(const pf_interp *)arg);
}

/* float32 [..., H, W] masks: pf_ops_resize_mask. Ends the call. */
static PyObject *resize_mask(call *cp, const pfpy_array *in, int w, int h, pf_interp interp)
{
    call c = *cp;
    pf_tensor src = in->t;      /* borrowed */
    PyObject *out = NULL;
    pf_tensor dst = {0};
    pf_status st = PF_ERR_INVALID;
    char err[1024] = "";
    if (src.ndim < 2 || !pf_tensor_is_contiguous(&src)) {
        pfpy_raise_fmt(PF_ERR_INVALID, "resize: a float mask is a contiguous [..., H, W] array");
        goto done;
    }
    int64_t shape[PF_TENSOR_MAX_DIMS];
    memcpy(shape, src.shape, sizeof shape);
    shape[src.ndim - 2] = h;
    shape[src.ndim - 1] = w;
    st = pf_tensor_alloc(&dst, PF_DTYPE_F32, src.ndim, shape, src.layout,
                         c.gpu ? c.ctx->alloc : NULL, c.gpu ? c.ctx->stream : NULL);
    if (st != PF_OK) {
        pfpy_raise(st, "resize");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    st = pf_ops_resize_mask(c.ctx->ops, &src, &dst, interp);
    st = finish(&c, st, err, sizeof err);
    Py_END_ALLOW_THREADS
    if (st != PF_OK) fail(st, err, "resize");
    else out = pfpy_tensor_new(&dst, c.dev);
done:
    pf_tensor_unref(&dst);
    call_end(&c);
    return pfpy_to_output(out);
}

static PyObject *op_resize(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"image", "size", "interp", "format", NULL};
    PyObject *image, *size, *interp_o = NULL;
    const char *format = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O$z:resize", kwlist, &image, &size, &interp_o,
                                     &format))
        return NULL;
    int w, h, interp = PF_INTERP_BILINEAR;
    if (parse_size(size, &w, &h) < 0 ||
        pfpy_parse_choice(interp_o, "interp", interp_names, interp_values, &interp) < 0)
        return NULL;
    pf_interp it = (pf_interp)interp;
    call c;
    if (call_begin(image, &c) < 0) return NULL;
    pfpy_array a;
    if (pfpy_array_get(image, PFPY_READ | PFPY_ROWS, "image", call_stream(&c), &a) < 0) {
        call_end(&c);
        return NULL;
    }
    PyObject *r;
    if (!format && a.t.dtype == PF_DTYPE_F32)
        r = resize_mask(&c, &a, w, h, it);
    else if (w < 1 || h < 1) {
        r = pfpy_raise_fmt(PF_ERR_INVALID, "size (%d, %d): must be >= 1", w, h);
        call_end(&c);
    } else
        r = frame_op_call(&c, &a, format, NULL, w, h, run_resize, &it, "resize");
    pfpy_array_release(&a);
    return r;
}

/* 360° reprojection -------------------------------------------------------------- */

static int parse_view(PyObject *o, pf_view *v)
{
    memset(v, 0, sizeof *v);
    v->fov = 90;
    v->width = 640;
    v->height = 480;
    if (PyDict_Check(o)) {
        static const char *keys[] = {"yaw", "pitch", "roll", "fov"};
        float *f[] = {&v->yaw, &v->pitch, &v->roll, &v->fov};
        for (int i = 0; i < 4; i++) {
            PyObject *x = PyDict_GetItemString(o, keys[i]);
            if (x) {
                *f[i] = (float)PyFloat_AsDouble(x);
                if (PyErr_Occurred()) return -1;
            }
        }
        PyObject *x = PyDict_GetItemString(o, "width");
        if (x && (v->width = (int)PyLong_AsLong(x)) == -1 && PyErr_Occurred()) return -1;
        x = PyDict_GetItemString(o, "height");
        if (x && (v->height = (int)PyLong_AsLong(x)) == -1 && PyErr_Occurred()) return -1;
        return 0;
    }
    if (!PyArg_ParseTuple(o, "ffffii", &v->yaw, &v->pitch, &v->roll, &v->fov, &v->width,
                          &v->height)) {
        PyErr_Clear();
        pfpy_raise_fmt(PF_ERR_INVALID, "views: each view is a dict (yaw, pitch, roll, fov, width, "
                       "height) or a tuple (yaw, pitch, roll, fov, width, height)");
        return -1;
    }
    return 0;
}

static PyObject *op_reproject(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"equirect", "views", "interp", "format", NULL};
    PyObject *image, *views_o, *interp_o = NULL;
    const char *format = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O$z:reproject", kwlist, &image, &views_o,
                                     &interp_o, &format))
        return NULL;
    int interp = PF_INTERP_BILINEAR;
    if (pfpy_parse_choice(interp_o, "interp", interp_names, interp_values, &interp) < 0)
        return NULL;
    PyObject *seq = PySequence_Fast(views_o, "views: expected a list of views");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1 || n > 64) {
        Py_DECREF(seq);
        return pfpy_raise_fmt(PF_ERR_INVALID, "views: %zd views (1..64)", n);
    }
    pf_view views[64];
    pf_frame dst[64];
    pf_frame *dsts[64];
    memset(dst, 0, sizeof dst);
    PyObject *list = NULL, *outs[64] = {0};
    pf_frame src = {0};
    call c = {0};
    for (Py_ssize_t i = 0; i < n; i++)
        if (parse_view(PySequence_Fast_GET_ITEM(seq, i), &views[i]) < 0) goto done;
    if (call_begin(image, &c) < 0) goto done;
    if (pfpy_frame_from_array(image, format, "equirect", call_stream(&c), &src, NULL) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (pfpy_frame_alloc_array(src.format, views[i].width, views[i].height,
                                   c.gpu ? c.ctx : NULL, &dst[i], &outs[i]) < 0)
            goto done;
        dsts[i] = &dst[i];
    }
    char err[1024] = "";
    pf_status st;
    Py_BEGIN_ALLOW_THREADS
    st = pf_ops_equirect_to_views(c.ctx->ops, &src, views, dsts, (int)n, (pf_interp)interp);
    st = finish(&c, st, err, sizeof err);
    Py_END_ALLOW_THREADS
    if (st != PF_OK) {
        fail(st, err, "reproject");
        goto done;
    }
    list = PyList_New(n);
    for (Py_ssize_t i = 0; list && i < n; i++) {
        PyList_SET_ITEM(list, i, pfpy_to_output(outs[i]));
        outs[i] = NULL;
        if (!PyList_GET_ITEM(list, i)) Py_CLEAR(list);
    }
done:
    for (int i = 0; i < 64; i++) {
        pf_frame_unref(&dst[i]);
        Py_XDECREF(outs[i]);
    }
    pf_frame_unref(&src);
    call_end(&c);
    Py_DECREF(seq);
    return list;
}

typedef struct {
    int face_size;
    pf_cube_layout layout;
    pf_interp interp;
} cube_args;

static pf_status run_cubemap(pf_ops *ops, const pf_frame *s, pf_frame *d, const void *arg)
{
    const cube_args *a = arg;
    return pf_ops_equirect_to_cubemap(ops, s, d, a->face_size, a->layout, a->interp);
}

static PyObject *op_cubemap(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"equirect", "face_size", "layout", "interp", "format", NULL};
    PyObject *image, *layout_o = NULL, *interp_o = NULL;
    const char *format = NULL;
    int face;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Oi|OO$z:cubemap", kwlist, &image, &face,
                                     &layout_o, &interp_o, &format))
        return NULL;
    static const char *const layout_names[] = {"3x2", "1x6", NULL};
    static const int layout_values[] = {PF_CUBE_3X2, PF_CUBE_1X6};
    int layout = PF_CUBE_3X2, interp = PF_INTERP_BILINEAR;
    if (pfpy_parse_choice(layout_o, "layout", layout_names, layout_values, &layout) < 0 ||
        pfpy_parse_choice(interp_o, "interp", interp_names, interp_values, &interp) < 0)
        return NULL;
    if (face < 1 || face > 16384)
        return pfpy_raise_fmt(PF_ERR_INVALID, "face_size %d: must be 1..16384", face);
    cube_args a = {face, (pf_cube_layout)layout, (pf_interp)interp};
    int w = layout == PF_CUBE_3X2 ? 3 * face : face;
    int h = layout == PF_CUBE_3X2 ? 2 * face : 6 * face;
    return frame_op(image, format, NULL, w, h, run_cubemap, &a, "cubemap");
}

/* Masks ---------------------------------------------------------------------------- */

/* One tensor in, one new tensor out of `dt` and src's shape (or `shape`). */
typedef pf_status (*mask_fn)(pf_ops *ops, const pf_tensor *src, pf_tensor *dst, const void *arg);

static PyObject *mask_op(PyObject *src_o, pf_dtype dt, int ndim, const int64_t *shape,
                         mask_fn fn, const void *arg, const char *name)
{
    call c;
    if (call_begin(src_o, &c) < 0) return NULL;
    pfpy_array a;
    if (pfpy_array_get(src_o, PFPY_READ, name, call_stream(&c), &a) < 0) {
        call_end(&c);
        return NULL;
    }
    PyObject *out = NULL;
    pf_tensor dst = {0};
    char err[1024] = "";
    pf_status st = pf_tensor_alloc(&dst, dt, shape ? ndim : a.t.ndim, shape ? shape : a.t.shape,
                                   a.t.layout, c.gpu ? c.ctx->alloc : NULL,
                                   c.gpu ? c.ctx->stream : NULL);
    if (st != PF_OK) {
        pfpy_raise(st, name);
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    st = fn(c.ctx->ops, &a.t, &dst, arg);
    st = finish(&c, st, err, sizeof err);
    Py_END_ALLOW_THREADS
    if (st != PF_OK) fail(st, err, name);
    else out = pfpy_tensor_new(&dst, c.dev);
done:
    pf_tensor_unref(&dst);
    pfpy_array_release(&a);
    call_end(&c);
    return pfpy_to_output(out);
}

typedef struct {
    int logits;
    float threshold;
} thr_args;

static pf_status run_threshold(pf_ops *ops, const pf_tensor *s, pf_tensor *d, const void *arg)
{
    const thr_args *a = arg;
    return pf_ops_mask_threshold(ops, s, a->logits, a->threshold, d);
}

static PyObject *op_mask_threshold(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"x", "threshold", "logits", NULL};
    PyObject *x;
    double thr = 0.5;
    int logits = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|d$p:mask_threshold", kwlist, &x, &thr, &logits))
        return NULL;
    thr_args a = {logits, (float)thr};
    return mask_op(x, PF_DTYPE_U8, 0, NULL, run_threshold, &a, "mask_threshold");
}

static pf_status run_feather(pf_ops *ops, const pf_tensor *s, pf_tensor *d, const void *arg)
{
    return pf_ops_mask_feather(ops, s, d, *(const float *)arg);
}

static PyObject *op_mask_feather(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"mask", "sigma", NULL};
    PyObject *x;
    float sigma;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Of:mask_feather", kwlist, &x, &sigma)) return NULL;
    return mask_op(x, PF_DTYPE_F32, 0, NULL, run_feather, &sigma, "mask_feather");
}

typedef struct {
    pf_morph_op op;
    int radius;
} morph_args;

static pf_status run_morph(pf_ops *ops, const pf_tensor *s, pf_tensor *d, const void *arg)
{
    const morph_args *a = arg;
    return pf_ops_mask_morph(ops, s, d, a->op, a->radius);
}

static PyObject *op_mask_morph(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"mask", "op", "radius", NULL};
    PyObject *x, *op_o;
    int radius;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOi:mask_morph", kwlist, &x, &op_o, &radius))
        return NULL;
    static const char *const names[] = {"erode", "dilate", "open", "close", NULL};
    static const int values[] = {PF_MORPH_ERODE, PF_MORPH_DILATE, PF_MORPH_OPEN, PF_MORPH_CLOSE};
    int op = 0;
    if (pfpy_parse_choice(op_o, "op", names, values, &op) < 0) return NULL;
    morph_args a = {(pf_morph_op)op, radius};
    return mask_op(x, PF_DTYPE_U8, 0, NULL, run_morph, &a, "mask_morph");
}

static PyObject *op_mask_argmax(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"logits", "cls", NULL};
    PyObject *x, *cls_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:mask_argmax", kwlist, &x, &cls_o)) return NULL;
    call c;
    if (call_begin(x, &c) < 0) return NULL;
    pfpy_array a;
    if (pfpy_array_get(x, PFPY_READ, "logits", call_stream(&c), &a) < 0) {
        call_end(&c);
        return NULL;
    }
    PyObject *result = NULL;
    pf_tensor labels = {0}, prob = {0};
    pf_status st;
    char err[1024] = "";
    int cls = cls_o == Py_None ? -1 : (int)PyLong_AsLong(cls_o);
    if (cls == -1 && PyErr_Occurred()) goto done;
    if (a.t.ndim != 4) {
        pfpy_raise_fmt(PF_ERR_INVALID, "mask_argmax: logits are [N, C, H, W] (NCHW; a tensor "
                       "with layout nhwc is read as [N, H, W, C])");
        goto done;
    }
    if (a.t.layout == PF_LAYOUT_NONE) a.t.layout = PF_LAYOUT_NCHW;
    int nhwc = a.t.layout == PF_LAYOUT_NHWC;
    int64_t shape[3] = {a.t.shape[0], a.t.shape[nhwc ? 1 : 2], a.t.shape[nhwc ? 2 : 3]};
    pf_allocator *al = c.gpu ? c.ctx->alloc : NULL;
    pf_stream *sm = c.gpu ? c.ctx->stream : NULL;
    st = pf_tensor_alloc(&labels, PF_DTYPE_U8, 3, shape, PF_LAYOUT_NONE, al, sm);
    if (st == PF_OK && cls >= 0)
        st = pf_tensor_alloc(&prob, PF_DTYPE_F32, 3, shape, PF_LAYOUT_NONE, al, sm);
    if (st != PF_OK) {
        pfpy_raise(st, "mask_argmax");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    st = pf_ops_mask_argmax(c.ctx->ops, &a.t, &labels, cls >= 0 ? &prob : NULL, cls >= 0 ? cls : 0);
    st = finish(&c, st, err, sizeof err);
    Py_END_ALLOW_THREADS
    if (st != PF_OK) {
        fail(st, err, "mask_argmax");
        goto done;
    }
    PyObject *lo = pfpy_to_output(pfpy_tensor_new(&labels, c.dev));
    PyObject *po = cls >= 0 ? pfpy_to_output(pfpy_tensor_new(&prob, c.dev)) : Py_NewRef(Py_None);
    if (lo && po) result = PyTuple_Pack(2, lo, po);
    Py_XDECREF(lo);
    Py_XDECREF(po);
done:
    pf_tensor_unref(&labels);
    pf_tensor_unref(&prob);
    pfpy_array_release(&a);
    call_end(&c);
    return result;
}

static PyObject *op_mask_temporal(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"state", "mask", "alpha", "reset", "cut", NULL};
    PyObject *state_o, *mask_o;
    float alpha, cut = 0;
    int reset = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOf|$pf:mask_temporal", kwlist, &state_o, &mask_o,
                                     &alpha, &reset, &cut))
        return NULL;
    call c;
    if (call_begin(state_o, &c) < 0) return NULL;
    pfpy_array s, m;
    memset(&m, 0, sizeof m);
    PyObject *r = NULL;
    if (pfpy_array_get(state_o, PFPY_WRITE, "state", call_stream(&c), &s) < 0) {
        call_end(&c);
        return NULL;
    }
    if (pfpy_array_get(mask_o, PFPY_READ, "mask", call_stream(&c), &m) == 0) {
        char err[1024] = "";
        pf_status st;
        Py_BEGIN_ALLOW_THREADS
        st = cut > 0 ? pf_ops_mask_temporal_cut(c.ctx->ops, &s.t, &m.t, alpha, cut, reset)
                     : pf_ops_mask_temporal(c.ctx->ops, &s.t, &m.t, alpha, reset);
        st = finish(&c, st, err, sizeof err);
        Py_END_ALLOW_THREADS
        if (st != PF_OK) fail(st, err, "mask_temporal");
        else r = Py_NewRef(state_o);
    }
    pfpy_array_release(&m);
    pfpy_array_release(&s);
    call_end(&c);
    return r;
}

/* Compositing ------------------------------------------------------------------------ */

static PyObject *op_composite(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"frame", "mask", "background", "sigma", "out_format", "format",
                             "matrix", "range", NULL};
    PyObject *frame_o, *mask_o, *bg_o = NULL, *matrix_o = NULL, *range_o = NULL;
    const char *out_format = NULL, *format = NULL;
    float sigma = 12;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O$fzzOO:composite", kwlist, &frame_o, &mask_o,
                                     &bg_o, &sigma, &out_format, &format, &matrix_o, &range_o))
        return NULL;
    pf_background bg = {.kind = PF_BG_BLUR, .blur_sigma = sigma};
    int matrix = 0, range = 0;
    if (pfpy_parse_choice(matrix_o, "matrix", matrix_names, matrix_values, &matrix) < 0 ||
        pfpy_parse_choice(range_o, "range", range_names, range_values, &range) < 0)
        return NULL;
    bg.matrix = (pf_yuv_matrix)matrix;
    bg.range = (pf_yuv_range)range;
    PyObject *image_o = NULL;
    if (bg_o && bg_o != Py_None) {
        if (PyUnicode_Check(bg_o)) {
            const char *s = PyUnicode_AsUTF8(bg_o);
            if (strcmp(s, "blur") == 0) bg.kind = PF_BG_BLUR;
            else if (strcmp(s, "none") == 0) bg.kind = PF_BG_NONE;
            else return pfpy_raise_fmt(PF_ERR_INVALID, "background '%s': expected 'blur', "
                                       "'none', an (r, g, b) tuple or an image array", s);
        } else if (PyTuple_Check(bg_o)) {
            int r, g, b;
            if (!PyArg_ParseTuple(bg_o, "iii", &r, &g, &b)) return NULL;
            if (r < 0 || r > 255 || g < 0 || g > 255 || b < 0 || b > 255)
                return pfpy_raise_fmt(PF_ERR_INVALID, "background colour (%d, %d, %d): 0..255",
                                      r, g, b);
            bg.kind = PF_BG_COLOR;
            bg.color[0] = (uint8_t)r, bg.color[1] = (uint8_t)g, bg.color[2] = (uint8_t)b;
        } else {
            bg.kind = PF_BG_IMAGE;
            image_o = bg_o;
        }
    }
    call c;
    if (call_begin(frame_o, &c) < 0) return NULL;
    pf_frame frame = {0}, image = {0}, dst = {0};
    pfpy_array mask;
    memset(&mask, 0, sizeof mask);
    PyObject *out = NULL;
    if (pfpy_frame_from_array(frame_o, format, "frame", call_stream(&c), &frame, NULL) < 0)
        goto done;
    if (image_o &&
        pfpy_frame_from_array(image_o, NULL, "background", call_stream(&c), &image, NULL) < 0)
        goto done;
    if (image_o) bg.image = &image;
    if (pfpy_array_get(mask_o, PFPY_READ, "mask", call_stream(&c), &mask) < 0) goto done;
    /* A model's NHWC mask [1, H, W, 1] is the same bytes as [1, H, W]. */
    if (mask.t.ndim >= 3 && mask.t.shape[mask.t.ndim - 1] == 1 &&
        pf_tensor_is_contiguous(&mask.t)) {
        mask.t.ndim--;
        mask.t.layout = PF_LAYOUT_NONE;
    }
    pf_pixfmt dfmt = frame.format == PF_PIXFMT_NV12 || frame.format == PF_PIXFMT_I420
                         ? PF_PIXFMT_RGB24 : frame.format;
    if (out_format && pfpy_pixfmt_parse(out_format, &dfmt) < 0) goto done;
    if (pfpy_frame_alloc_array(dfmt, frame.width, frame.height, c.gpu ? c.ctx : NULL, &dst,
                               &out) < 0)
        goto done;
    char err[1024] = "";
    pf_status st;
    Py_BEGIN_ALLOW_THREADS
    st = pf_ops_composite(c.ctx->ops, &frame, &mask.t, &bg, &dst);
    st = finish(&c, st, err, sizeof err);
    Py_END_ALLOW_THREADS
    if (st != PF_OK) {
        Py_CLEAR(out);
        fail(st, err, "composite");
    }
done:
    pf_frame_unref(&frame);
    pf_frame_unref(&image);
    pf_frame_unref(&dst);
    pfpy_array_release(&mask);
    call_end(&c);
    return pfpy_to_output(out);
}

PyMethodDef pfpy_ops_methods[] = {
    {"preprocess", (PyCFunction)(void (*)(void))op_preprocess, METH_VARARGS | METH_KEYWORDS,
     "preprocess(images, size, *, format=None, dtype='float32', layout='nchw', "
     "interp='bilinear', letterbox=False, pad_value=114.0, bgr=False, mean=(0, 0, 0), "
     "std=(1, 1, 1), matrix='bt601', range='limited', rois=None, return_info=False)\n--\n\n"
     "Fused preprocess of one image or a list of images (any sizes) into one batch tensor "
     "[N, 3, H, W] (or [N, H, W, 3] with layout='nhwc'): crop (rois: (x, y, w, h) per image), "
     "resize or letterbox to size=(width, height), channel order, (x / 255 - mean) / std, "
     "dtype. With return_info=True returns (tensor, [letterbox info dict per image])."},
    {"convert", (PyCFunction)(void (*)(void))op_convert, METH_VARARGS | METH_KEYWORDS,
     "convert(image, to, *, format=None, matrix='bt601', range='limited')\n--\n\n"
     "Colour conversion between rgb24, bgr24, rgba, gray8, nv12 and i420. `format` names the "
     "input's format where its shape does not ([H, W, 3] is rgb24 unless format='bgr24'; "
     "nv12/i420 arrays are [H * 3 / 2, W])."},
    {"resize", (PyCFunction)(void (*)(void))op_resize, METH_VARARGS | METH_KEYWORDS,
     "resize(image, size, interp='bilinear', *, format=None)\n--\n\n"
     "Resizes a uint8 image (any format) or a float32 mask [..., H, W] to size=(width, "
     "height); interp 'nearest', 'bilinear' or 'area'."},
    {"reproject", (PyCFunction)(void (*)(void))op_reproject, METH_VARARGS | METH_KEYWORDS,
     "reproject(equirect, views, interp='bilinear', *, format=None)\n--\n\n"
     "Perspective views of an equirectangular image: views is a list of dicts (yaw, pitch, "
     "roll, fov in degrees; width, height in pixels) or (yaw, pitch, roll, fov, width, "
     "height) tuples. Returns one image per view."},
    {"cubemap", (PyCFunction)(void (*)(void))op_cubemap, METH_VARARGS | METH_KEYWORDS,
     "cubemap(equirect, face_size, layout='3x2', interp='bilinear', *, format=None)\n--\n\n"
     "The six cube faces of an equirectangular image in one image (3x2 or 1x6)."},
    {"mask_threshold", (PyCFunction)(void (*)(void))op_mask_threshold, METH_VARARGS | METH_KEYWORDS,
     "mask_threshold(x, threshold=0.5, *, logits=False)\n--\n\n"
     "uint8 mask (255 where x >= threshold, sigmoid(x) with logits=True) of float32/float16 x."},
    {"mask_argmax", (PyCFunction)(void (*)(void))op_mask_argmax, METH_VARARGS | METH_KEYWORDS,
     "mask_argmax(logits, cls=None)\n--\n\n"
     "(labels, prob) of class logits [N, C, H, W]: uint8 argmax labels [N, H, W] and, with "
     "cls, the softmax probability of class cls (float32 [N, H, W]; else None)."},
    {"mask_feather", (PyCFunction)(void (*)(void))op_mask_feather, METH_VARARGS | METH_KEYWORDS,
     "mask_feather(mask, sigma)\n--\n\nGaussian feathering of a float32 mask [..., H, W]."},
    {"mask_morph", (PyCFunction)(void (*)(void))op_mask_morph, METH_VARARGS | METH_KEYWORDS,
     "mask_morph(mask, op, radius)\n--\n\n"
     "Morphology ('erode', 'dilate', 'open', 'close') of a uint8 mask with a square of side "
     "2 radius + 1."},
    {"mask_temporal", (PyCFunction)(void (*)(void))op_mask_temporal, METH_VARARGS | METH_KEYWORDS,
     "mask_temporal(state, mask, alpha, *, reset=False, cut=0.0)\n--\n\n"
     "state = alpha * mask + (1 - alpha) * state in place (float32, writable state); reset "
     "starts over, cut > 0 starts over when the mean change exceeds it. Returns state."},
    {"composite", (PyCFunction)(void (*)(void))op_composite, METH_VARARGS | METH_KEYWORDS,
     "composite(frame, mask, background='blur', *, sigma=12.0, out_format=None, format=None, "
     "matrix='bt601', range='limited')\n--\n\n"
     "frame over a background through mask (float32 0..1 or uint8, any size: sampled "
     "bilinearly; [H, W] with leading 1s, or a model's [1, H, W, 1]). background: 'blur' "
     "(sigma), 'none', an (r, g, b) tuple or an image array "
     "(resized). out_format 'rgb24', 'bgr24', 'rgba' (alpha from the mask) or 'nv12'."},
    {NULL}};
