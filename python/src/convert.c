/* convert.c - Python arrays in, pixflow tensors and frames, without copies.
 *
 * Inputs are read in place: a buffer-protocol exporter (NumPy arrays,
 * memoryviews, bytearrays, pixflow.Tensor) is wrapped with pf_buffer_wrap
 * around the exporter's memory, a DLPack producer (PyTorch, CuPy, JAX) is
 * imported through its capsule. The wrapping pf_buffer keeps the Python
 * side alive until the library drops its last reference, on whatever thread
 * that happens (the free callback takes the GIL). Only objects that are
 * neither (lists, scalars) go through numpy.ascontiguousarray. */
#include "pfpy.h"

typedef struct {
    Py_buffer view;
} pin;

static void pin_release(void *opaque, void *data, size_t size)
{
    pin *p = opaque;
    PyGILState_STATE g = PyGILState_Ensure();
    PyBuffer_Release(&p->view);
    PyGILState_Release(g);
    PyMem_RawFree(p);
}

int pfpy_buffer_wrap(Py_buffer *view, size_t size, pf_buffer **out)
{
    pin *p = PyMem_RawMalloc(sizeof *p);
    if (!p) {
        PyBuffer_Release(view);
        PyErr_NoMemory();
        return -1;
    }
    p->view = *view;
    pf_status st = pf_buffer_wrap(view->buf, size, PF_MEM_HOST, NULL, pin_release, p, out);
    if (st != PF_OK) {
        PyBuffer_Release(&p->view);
        PyMem_RawFree(p);
        pfpy_raise(st, "buffer");
        return -1;
    }
    return 0;
}

/* The pf_dtype of a struct-module format string, or -1. */
static int format_dtype(const char *f, Py_ssize_t itemsize)
{
    if (!f) return PF_DTYPE_U8;
    if (*f == '<' || *f == '=' || *f == '@') f++;
    if (f[0] && f[1]) return -1;
    switch (*f) {
    case 'B': return PF_DTYPE_U8;
    case 'e': return PF_DTYPE_F16;
    case 'f': return PF_DTYPE_F32;
    case 'i':
    case 'l':
        return itemsize == 4 ? PF_DTYPE_I32 : -1;
    default: return -1;
    }
}

static const char *format_name(const char *f)
{
    if (!f) return "bytes";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    switch (*f) {
    case 'd': return "float64";
    case 'l':
    case 'q': return "int64";
    case 'b': return "int8";
    case 'h': return "int16";
    case 'H': return "uint16";
    case '?': return "bool";
    default: return f;
    }
}

/* With PFPY_ROWS the outermost dimension may have any stride >= the rest's
 * size (rows of an image with padding, a row slice of a bigger image); the
 * inner dimensions must be contiguous. */
static int from_buffer(PyObject *obj, int flags, const char *what, pfpy_array *out)
{
    Py_buffer view;
    int req = ((flags & PFPY_ROWS) ? PyBUF_STRIDES : PyBUF_C_CONTIGUOUS) | PyBUF_FORMAT |
              (flags & PFPY_WRITE ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &view, req) < 0) {
        if (PyErr_ExceptionMatches(PyExc_BufferError) || PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            /* Exporters refuse PyBUF_C_CONTIGUOUS for strided data. */
            pfpy_raise_fmt(PF_ERR_INVALID,
                           "%s: the array must be C-contiguous%s (numpy.ascontiguousarray "
                           "makes a copy that is)", what,
                           flags & PFPY_WRITE ? " and writable" : "");
            return -1;
        }
        return -1;
    }
    int dt = format_dtype(view.format, view.itemsize);
    if (dt < 0) {
        pfpy_raise_fmt(PF_ERR_INVALID, "%s: dtype %s is not supported: use uint8, int32, "
                       "float16 or float32", what, format_name(view.format));
        PyBuffer_Release(&view);
        return -1;
    }
    if (view.ndim > PF_TENSOR_MAX_DIMS) {
        pfpy_raise_fmt(PF_ERR_INVALID, "%s: %d dimensions (at most %d)", what, view.ndim,
                       PF_TENSOR_MAX_DIMS);
        PyBuffer_Release(&view);
        return -1;
    }
    int64_t shape[PF_TENSOR_MAX_DIMS];
    int ndim = view.ndim;
    for (int i = 0; i < ndim; i++) shape[i] = view.shape ? view.shape[i] : view.len;
    if (ndim == 0 && view.len != view.itemsize) {   /* bytes-like without shape */
        ndim = 1;
        shape[0] = view.len / (view.itemsize ? view.itemsize : 1);
    }
    int64_t strides[PF_TENSOR_MAX_DIMS];
    const int64_t *sp = NULL;
    size_t span = (size_t)view.len;
    if ((flags & PFPY_ROWS) && view.strides && ndim >= 1) {
        int64_t inner = 1;
        for (int i = ndim - 1; i >= 1; i--) {
            if (view.strides[i] != inner * view.itemsize) goto strided;
            strides[i] = inner;
            inner *= shape[i];
        }
        if (view.strides[0] < inner * view.itemsize || view.strides[0] % view.itemsize)
            goto strided;
        strides[0] = view.strides[0] / view.itemsize;
        sp = strides;
        span = shape[0] > 0
                   ? (size_t)((shape[0] - 1) * view.strides[0] + inner * view.itemsize) : 0;
    }
    pf_buffer *buf = NULL;
    if (pfpy_buffer_wrap(&view, span, &buf) < 0) return -1;
    pf_status st = pf_tensor_wrap(&out->t, buf, 0, (pf_dtype)dt, ndim, shape, sp,
                                  PF_LAYOUT_NONE);
    pf_buffer_unref(&buf);
    if (st != PF_OK) {
        pfpy_raise(st, what);
        return -1;
    }
    out->device = pf_buffer_device(out->t.buf);
    return 0;
strided:
    PyBuffer_Release(&view);
    pfpy_raise_fmt(PF_ERR_INVALID, "%s: only the rows of an image may be strided; the pixels of "
                   "a row must be contiguous (numpy.ascontiguousarray makes a copy that is)", what);
    return -1;
}

int pfpy_array_get(PyObject *obj, int flags, const char *what, void *stream, pfpy_array *out)
{
    memset(out, 0, sizeof *out);
    if (PyObject_TypeCheck(obj, &pfpy_tensor_type)) {
        pfpy_tensor *t = (pfpy_tensor *)obj;
        if (t->ready && stream && t->stream != stream &&
            pfpy_cu_stream_wait(pf_device_props_get(t->device)->index, stream, t->ready) < 0)
            return -1;
        pf_tensor_ref(&out->t, &t->t);
        out->device = t->device;
        return 0;
    }
    if (PyObject_CheckBuffer(obj)) return from_buffer(obj, flags, what, out);
    if (PyObject_HasAttrString(obj, "__dlpack__")) {
        out->from_dlpack = 1;
        if (pfpy_dlpack_import(obj, stream, &out->t, &out->device) < 0) return -1;
        if (!pf_tensor_is_contiguous(&out->t)) {
            pfpy_array_release(out);
            pfpy_raise_fmt(PF_ERR_INVALID, "%s: the tensor must be contiguous (.contiguous())",
                           what);
            return -1;
        }
        return 0;
    }
    if (flags & PFPY_WRITE) {
        PyErr_Format(PyExc_TypeError, "%s: expected a writable array, got %s", what,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    PyObject *np = PyImport_ImportModule("numpy");
    if (!np) return -1;
    PyObject *arr = PyObject_CallMethod(np, "ascontiguousarray", "O", obj);
    Py_DECREF(np);
    if (!arr) return -1;
    int r = from_buffer(arr, flags, what, out);
    Py_DECREF(arr);
    return r;
}

void pfpy_array_release(pfpy_array *a)
{
    pf_tensor_unref(&a->t);
}

/* Frames ------------------------------------------------------------------------ */

int pfpy_pixfmt_parse(const char *name, pf_pixfmt *out)
{
    pf_status st = pf_pixfmt_parse(name, out);
    if (st != PF_OK) {
        pfpy_raise_fmt(PF_ERR_INVALID, "format '%s': expected rgb24, bgr24, rgba, gray8, nv12 "
                       "or i420", name);
        return -1;
    }
    return 0;
}

/* The frame format an array shape means when none is given. */
static int guess_format(const pf_tensor *t, pf_pixfmt *fmt)
{
    if (t->ndim == 2 || (t->ndim == 3 && t->shape[2] == 1)) *fmt = PF_PIXFMT_GRAY8;
    else if (t->ndim == 3 && t->shape[2] == 3) *fmt = PF_PIXFMT_RGB24;
    else if (t->ndim == 3 && t->shape[2] == 4) *fmt = PF_PIXFMT_RGBA;
    else return -1;
    return 0;
}

int pfpy_frame_from_array(PyObject *obj, const char *format, const char *what, void *stream,
                          pf_frame *out, pf_device **dev)
{
    pfpy_array a;
    if (pfpy_array_get(obj, PFPY_READ | PFPY_ROWS, what, stream, &a) < 0) return -1;
    int r = pfpy_frame_from_tensor(&a, format, what, out, dev);
    pfpy_array_release(&a);
    return r;
}

int pfpy_frame_from_tensor(const pfpy_array *in, const char *format, const char *what,
                           pf_frame *out, pf_device **dev)
{
    pfpy_array a = *in;     /* borrowed: not released here */
    pf_pixfmt fmt = PF_PIXFMT_NONE;
    if (format && pfpy_pixfmt_parse(format, &fmt) < 0) goto fail;
    if (a.t.dtype != PF_DTYPE_U8) {
        pfpy_raise_fmt(PF_ERR_INVALID, "%s: images are uint8 arrays, got %s", what,
                       pfpy_dtype_name(a.t.dtype));
        goto fail;
    }
    if (!format && guess_format(&a.t, &fmt) < 0) {
        pfpy_raise_fmt(PF_ERR_INVALID, "%s: an image array is [H, W], [H, W, 3] or [H, W, 4] "
                       "(got %d dimensions%s)", what, a.t.ndim,
                       a.t.ndim == 3 ? " with another channel count" : "");
        goto fail;
    }
    int h = a.t.ndim >= 1 ? (int)a.t.shape[0] : 0, w = a.t.ndim >= 2 ? (int)a.t.shape[1] : 0;
    int want_c = fmt == PF_PIXFMT_RGBA                                ? 4
                 : fmt == PF_PIXFMT_RGB24 || fmt == PF_PIXFMT_BGR24 ? 3
                                                                    : 1;
    int yuv = fmt == PF_PIXFMT_NV12 || fmt == PF_PIXFMT_I420;
    int c = a.t.ndim == 3 ? (int)a.t.shape[2] : 1;
    if (a.t.ndim < 2 || a.t.ndim > 3 || c != want_c) {
        pfpy_raise_fmt(PF_ERR_INVALID, "%s: a %s image is a [H, W%s] uint8 array", what,
                       pf_pixfmt_name(fmt), want_c > 1 ? (want_c == 3 ? ", 3" : ", 4") : "");
        goto fail;
    }
    if (yuv) {
        if (h % 3 || (h / 3) % 2 || w % 2) {
            pfpy_raise_fmt(PF_ERR_INVALID, "%s: a %s array is [H * 3 / 2, W] with H and W even "
                           "(got [%d, %d])", what, pf_pixfmt_name(fmt), h, w);
            goto fail;
        }
        h = h / 3 * 2;
    }
    size_t strides[PF_FRAME_MAX_PLANES] = {(size_t)a.t.strides[0]};
    if (fmt == PF_PIXFMT_NV12) strides[1] = strides[0];
    if (fmt == PF_PIXFMT_I420) strides[1] = strides[2] = strides[0] / 2;
    size_t off = (size_t)((uint8_t *)a.t.data - (uint8_t *)pf_buffer_data(a.t.buf));
    pf_status st = pf_frame_wrap(out, fmt, w, h, a.t.buf, off, strides);
    if (st != PF_OK) {
        pfpy_raise(st, what);
        goto fail;
    }
    if (dev) *dev = a.device;
    return 0;
fail:
    return -1;
}

int pfpy_frame_alloc_array(pf_pixfmt fmt, int w, int h, pfpy_ctx *ctx, pf_frame *frame,
                           PyObject **tensor_obj)
{
    int64_t shape[3] = {h, w, 0};
    int ndim = 3;
    switch (fmt) {
    case PF_PIXFMT_RGB24:
    case PF_PIXFMT_BGR24: shape[2] = 3; break;
    case PF_PIXFMT_RGBA: shape[2] = 4; break;
    case PF_PIXFMT_GRAY8: ndim = 2; break;
    case PF_PIXFMT_NV12:
    case PF_PIXFMT_I420:
        if (w % 2 || h % 2) {
            pfpy_raise_fmt(PF_ERR_INVALID, "%s output: width and height must be even (%dx%d)",
                           pf_pixfmt_name(fmt), w, h);
            return -1;
        }
        shape[0] = (int64_t)h * 3 / 2;
        ndim = 2;
        break;
    default:
        pfpy_raise_fmt(PF_ERR_INVALID, "output format %d", (int)fmt);
        return -1;
    }
    int gpu = ctx && ctx->alloc;
    pf_tensor t = {0};
    pf_status st = pf_tensor_alloc(&t, PF_DTYPE_U8, ndim, shape, PF_LAYOUT_NONE,
                                   gpu ? ctx->alloc : NULL, gpu ? ctx->stream : NULL);
    if (st != PF_OK) {
        pfpy_raise(st, "output");
        return -1;
    }
    st = pf_frame_wrap(frame, fmt, w, h, t.buf, 0, NULL);
    if (st != PF_OK) {
        pf_tensor_unref(&t);
        pfpy_raise(st, "output");
        return -1;
    }
    *tensor_obj = pfpy_tensor_new(&t, ctx ? ctx->device : NULL);
    if (!*tensor_obj) {
        pf_frame_unref(frame);
        return -1;
    }
    return 0;
}

static PyObject *owned(PyObject *tensor, PyObject *owner)
{
    if (tensor && owner) ((pfpy_tensor *)tensor)->owner = Py_NewRef(owner);
    return pfpy_to_output(tensor);
}

PyObject *pfpy_frame_to_array(const pf_frame *f, PyObject *owner)
{
    int c = f->format == PF_PIXFMT_RGBA ? 4 : f->format == PF_PIXFMT_RGB24 ||
            f->format == PF_PIXFMT_BGR24 ? 3 : 1;
    pf_tensor t = {0};
    pf_status st;
    if (f->format == PF_PIXFMT_NV12 || f->format == PF_PIXFMT_I420) {
        /* Zero copy only where the planes form one [H * 3 / 2, W] block. */
        size_t w = (size_t)f->width, h = (size_t)f->height;
        uint8_t *base = f->data[0];
        int planar_ok = f->format == PF_PIXFMT_NV12
                            ? f->stride[1] == w
                            : f->stride[1] == w / 2 && f->stride[2] == w / 2 &&
                                  f->data[2] == f->data[1] + w / 2 * h / 2;
        int packed = f->width % 2 == 0 && f->height % 2 == 0 && f->stride[0] == w &&
                     f->buf[1] == f->buf[0] && f->data[1] == base + w * h && planar_ok;
        if (packed && pf_frame_domain(f) != PF_MEM_DEVICE) {
            int64_t shape[2] = {(int64_t)(h * 3 / 2), (int64_t)w};
            size_t off = (size_t)(base - (uint8_t *)pf_buffer_data(f->buf[0]));
            st = pf_tensor_wrap(&t, f->buf[0], off, PF_DTYPE_U8, 2, shape, NULL, PF_LAYOUT_NONE);
            if (st != PF_OK) return pfpy_raise(st, "frame");
            return owned(pfpy_tensor_new(&t, NULL), owner);
        }
        if (pf_frame_domain(f) == PF_MEM_DEVICE || f->width % 2 || f->height % 2)
            return pfpy_raise_fmt(PF_ERR_UNSUPPORTED, "a %dx%d %s frame in %s memory has no "
                                  "array form", f->width, f->height, pf_pixfmt_name(f->format),
                                  pf_mem_domain_name(pf_frame_domain(f)));
        pf_frame dst = {0};
        PyObject *obj = NULL;
        if (pfpy_frame_alloc_array(f->format, f->width, f->height, NULL, &dst, &obj) < 0)
            return NULL;
        for (int p = 0; p < f->num_planes; p++) {
            size_t row, rows;
            pf_pixfmt_plane_size(f->format, f->width, f->height, p, &row, &rows);
            for (size_t r = 0; r < rows; r++)
                memcpy(dst.data[p] + r * dst.stride[p], f->data[p] + r * f->stride[p], row);
        }
        pf_frame_unref(&dst);
        return pfpy_to_output(obj);
    }
    int64_t shape[3] = {f->height, f->width, c};
    int64_t strides[3] = {(int64_t)f->stride[0], c, 1};
    size_t off = (size_t)(f->data[0] - (uint8_t *)pf_buffer_data(f->buf[0]));
    st = pf_tensor_wrap(&t, f->buf[0], off, PF_DTYPE_U8, c == 1 ? 2 : 3, shape,
                        c == 1 ? (int64_t[]){(int64_t)f->stride[0], 1} : strides, PF_LAYOUT_NONE);
    if (st != PF_OK) return pfpy_raise(st, "frame");
    return owned(pfpy_tensor_new(&t, NULL), owner);
}

int pfpy_object_device(PyObject *obj, pf_device **dev)
{
    if (PyObject_TypeCheck(obj, &pfpy_tensor_type)) {
        *dev = ((pfpy_tensor *)obj)->device;
        if (pf_tensor_domain(&((pfpy_tensor *)obj)->t) != PF_MEM_DEVICE)
            pf_device_get(PF_DEVICE_CPU, 0, dev);
        return 0;
    }
    pf_device_get(PF_DEVICE_CPU, 0, dev);
    if (PyObject_CheckBuffer(obj) || !PyObject_HasAttrString(obj, "__dlpack_device__")) return 0;
    PyObject *d = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
    int t = 0, id = 0;
    if (!d) return -1;
    if (!PyArg_ParseTuple(d, "ii", &t, &id)) {
        Py_DECREF(d);
        return -1;
    }
    Py_DECREF(d);
    if (t == 2) {
        pf_status st = pf_device_get(PF_DEVICE_CUDA, id, dev);
        if (st != PF_OK) {
            pfpy_raise(st, "device of the array");
            return -1;
        }
    }
    return 0;
}
