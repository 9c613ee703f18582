/* tensor.c - pixflow.Tensor: a pf_tensor seen from Python.
 *
 * Host tensors export the buffer protocol, so numpy.asarray(t),
 * memoryview(t) and anything else that reads buffers share pixflow's memory
 * (the exporter stays alive while a view exists). Every tensor, host or
 * device, exports DLPack (dlpack.c). Results of the package's functions are
 * handed out as NumPy arrays when they live on the host (pfpy_to_output)
 * and as Tensors when they live on a GPU. */
#include "pfpy.h"

#include <structmember.h>

#ifdef PFPY_HAVE_NUMPY
/* NumPy's C API makes the output arrays directly (about 0.3 us instead of
 * the 3 us of numpy.asarray parsing the buffer's format string): a part of
 * the per-call overhead budget (5 us). Built against the NumPy found at
 * configure time; without it numpy.asarray does the same job. */
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pfpy_numpy_api
#include <numpy/arrayobject.h>
static int numpy_api;   /* import_array succeeded */
#endif

static PyObject *np_asarray;      /* numpy.asarray, or Py_None without NumPy */

static const char *const dtype_names[PF_DTYPE_COUNT] = {"uint8", "int32", "float16", "float32"};

const char *pfpy_dtype_name(pf_dtype dt)
{
    return (unsigned)dt < PF_DTYPE_COUNT ? dtype_names[dt] : "?";
}

int pfpy_dtype_parse(PyObject *obj, pf_dtype *out)
{
    PyObject *s = NULL;
    if (PyUnicode_Check(obj)) {
        s = Py_NewRef(obj);
    } else if (PyObject_HasAttrString(obj, "__name__")) {   /* numpy.float32 */
        s = PyObject_GetAttrString(obj, "__name__");
    } else if (PyObject_HasAttrString(obj, "name")) {       /* numpy.dtype('float32') */
        s = PyObject_GetAttrString(obj, "name");
    }
    const char *n = s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : NULL;
    static const struct { const char *name; pf_dtype dt; } alias[] = {
        {"uint8", PF_DTYPE_U8}, {"u8", PF_DTYPE_U8}, {"int32", PF_DTYPE_I32},
        {"i32", PF_DTYPE_I32}, {"float16", PF_DTYPE_F16}, {"f16", PF_DTYPE_F16},
        {"half", PF_DTYPE_F16}, {"float32", PF_DTYPE_F32}, {"f32", PF_DTYPE_F32},
        {"float", PF_DTYPE_F32}};
    for (size_t i = 0; n && i < sizeof alias / sizeof alias[0]; i++) {
        if (strcmp(n, alias[i].name) == 0) {
            *out = alias[i].dt;
            Py_DECREF(s);
            return 0;
        }
    }
    PyObject *r = PyObject_Repr(obj);
    pfpy_raise_fmt(PF_ERR_INVALID, "dtype %s: expected 'uint8', 'int32', 'float16' or 'float32'",
                   r ? PyUnicode_AsUTF8(r) : "?");
    Py_XDECREF(r);
    Py_XDECREF(s);
    return -1;
}

PyObject *pfpy_tensor_new(pf_tensor *t, pf_device *dev)
{
    pfpy_tensor *o = PyObject_New(pfpy_tensor, &pfpy_tensor_type);
    if (!o) {
        pf_tensor_unref(t);
        return NULL;
    }
    o->t = *t;
    memset(t, 0, sizeof *t);
    o->device = dev ? dev : pf_buffer_device(o->t.buf);
    o->stream = NULL;
    o->ready = NULL;
    o->owner = NULL;
    o->exports = 0;
    return (PyObject *)o;
}

static void tensor_dealloc(PyObject *self)
{
    pfpy_tensor *o = (pfpy_tensor *)self;
    if (o->ready) pfpy_cu_event_destroy(pf_device_props_get(o->device)->index, o->ready);
    pf_buffer *b = o->t.buf;
    o->t.buf = NULL;
    /* The last reference may release Python-owned memory (pfpy_buffer_wrap),
     * which takes the GIL we hold: fine, PyGILState_Ensure nests. The
     * buffer goes before the owner: a pipeline's pool must outlive it. */
    pf_buffer_unref(&b);
    Py_XDECREF(o->owner);
    PyObject_Free(self);
}

static int is_host(const pfpy_tensor *o)
{
    return pf_tensor_domain(&o->t) != PF_MEM_DEVICE;
}

/* Py_buffer shape/strides point into this block, freed in releasebuffer. */
typedef struct {
    Py_ssize_t shape[PF_TENSOR_MAX_DIMS];
    Py_ssize_t strides[PF_TENSOR_MAX_DIMS];
} buffer_dims;

static int tensor_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    pfpy_tensor *o = (pfpy_tensor *)self;
    if (!is_host(o)) {
        PyErr_Format(PyExc_BufferError,
                     "pixflow.Tensor on %s: device memory has no buffer interface; use DLPack "
                     "(torch.from_dlpack(t)) or t.cpu()", pf_device_spec(o->device));
        return -1;
    }
    if ((flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS ||
        (flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS ||
        (flags & PyBUF_STRIDES) != PyBUF_STRIDES) {
        if (!pf_tensor_is_contiguous(&o->t)) {
            PyErr_SetString(PyExc_BufferError, "pixflow.Tensor is not contiguous");
            return -1;
        }
    }
    buffer_dims *d = PyMem_Malloc(sizeof *d);
    if (!d) {
        PyErr_NoMemory();
        return -1;
    }
    size_t es = pf_dtype_size(o->t.dtype);
    for (int i = 0; i < o->t.ndim; i++) {
        d->shape[i] = (Py_ssize_t)o->t.shape[i];
        d->strides[i] = (Py_ssize_t)(o->t.strides[i] * (int64_t)es);
    }
    static const char *const formats[PF_DTYPE_COUNT] = {"B", "i", "e", "f"};
    view->obj = Py_NewRef(self);
    view->buf = o->t.data;
    view->len = (Py_ssize_t)(pf_tensor_numel(&o->t) * (int64_t)es);
    view->readonly = 0;
    view->itemsize = (Py_ssize_t)es;
    view->format = (flags & PyBUF_FORMAT) ? (char *)formats[o->t.dtype] : NULL;
    view->ndim = o->t.ndim;
    view->shape = (flags & PyBUF_ND) == PyBUF_ND ? d->shape : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? d->strides : NULL;
    view->suboffsets = NULL;
    view->internal = d;
    o->exports++;
    return 0;
}

static void tensor_releasebuffer(PyObject *self, Py_buffer *view)
{
    PyMem_Free(view->internal);
    ((pfpy_tensor *)self)->exports--;
}

static PyBufferProcs tensor_as_buffer = {tensor_getbuffer, tensor_releasebuffer};

static PyObject *tensor_shape(PyObject *self, void *c)
{
    pfpy_tensor *o = (pfpy_tensor *)self;
    PyObject *t = PyTuple_New(o->t.ndim);
    for (int i = 0; t && i < o->t.ndim; i++)
        PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(o->t.shape[i]));
    return t;
}

static PyObject *tensor_strides(PyObject *self, void *c)
{
    pfpy_tensor *o = (pfpy_tensor *)self;
    PyObject *t = PyTuple_New(o->t.ndim);
    for (int i = 0; t && i < o->t.ndim; i++)
        PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(o->t.strides[i]));
    return t;
}

static PyObject *tensor_dtype(PyObject *self, void *c)
{
    return PyUnicode_FromString(pfpy_dtype_name(((pfpy_tensor *)self)->t.dtype));
}

static PyObject *tensor_device(PyObject *self, void *c)
{
    return pfpy_device_str(((pfpy_tensor *)self)->device);
}

static PyObject *tensor_layout(PyObject *self, void *c)
{
    return PyUnicode_FromString(pf_layout_name(((pfpy_tensor *)self)->t.layout));
}

static PyObject *tensor_ndim(PyObject *self, void *c)
{
    return PyLong_FromLong(((pfpy_tensor *)self)->t.ndim);
}

static PyObject *tensor_data_ptr(PyObject *self, void *c)
{
    return PyLong_FromVoidPtr(((pfpy_tensor *)self)->t.data);
}

static PyGetSetDef tensor_getset[] = {
    {"shape", tensor_shape, NULL, "Dimensions, outermost first (a tuple of ints).", NULL},
    {"strides", tensor_strides, NULL, "Strides in elements (a tuple of ints).", NULL},
    {"dtype", tensor_dtype, NULL, "'uint8', 'int32', 'float16' or 'float32'.", NULL},
    {"device", tensor_device, NULL, "Where the memory lives: 'cpu', 'cuda:0', ...", NULL},
    {"layout", tensor_layout, NULL, "'nchw', 'nhwc' or 'none'.", NULL},
    {"ndim", tensor_ndim, NULL, "Number of dimensions.", NULL},
    {"data_ptr", tensor_data_ptr, NULL, "Address of element [0, ...] (host or device).", NULL},
    {NULL}};

/* Copies into a new contiguous tensor on `dev` (synchronously). */
static PyObject *tensor_to(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"device", NULL};
    PyObject *spec = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:to", kwlist, &spec)) return NULL;
    pfpy_tensor *o = (pfpy_tensor *)self;
    pf_device *dst_dev;
    if (pfpy_device_parse(spec, &dst_dev) < 0) return NULL;
    if (!pf_tensor_is_contiguous(&o->t))
        return pfpy_raise_fmt(PF_ERR_UNSUPPORTED, "Tensor.to: tensor is not contiguous");
    /* The copy runs on a stream of the GPU side (the CPU stream cannot reach
     * device memory). */
    pf_device *run_dev = pf_device_props_get(dst_dev)->type != PF_DEVICE_CPU ? dst_dev : o->device;
    pfpy_ctx *ctx = NULL;
    pf_tensor out = {0};
    pf_status st;
    Py_BEGIN_ALLOW_THREADS
    st = pfpy_ctx_acquire(run_dev, &ctx);
    if (st == PF_OK) {
        int on_gpu = pf_device_props_get(dst_dev)->type != PF_DEVICE_CPU;
        st = pf_tensor_alloc(&out, o->t.dtype, o->t.ndim, o->t.shape, o->t.layout,
                             on_gpu ? ctx->alloc : NULL, on_gpu ? ctx->stream : NULL);
        if (st == PF_OK) st = pf_memcpy_async(ctx->stream, out.data, o->t.data,
                                              pf_tensor_nbytes(&o->t));
        if (st == PF_OK) st = pf_stream_synchronize(ctx->stream);
        pfpy_ctx_release(ctx);
    }
    Py_END_ALLOW_THREADS
    if (st != PF_OK) {
        pf_tensor_unref(&out);
        return pfpy_raise(st, "Tensor.to");
    }
    return pfpy_tensor_new(&out, dst_dev);
}

static PyObject *tensor_cpu(PyObject *self, PyObject *unused)
{
    if (is_host((pfpy_tensor *)self)) return Py_NewRef(self);
    PyObject *args = Py_BuildValue("(s)", "cpu");
    PyObject *r = args ? tensor_to(self, args, NULL) : NULL;
    Py_XDECREF(args);
    return r;
}

static PyObject *tensor_numpy(PyObject *self, PyObject *unused)
{
    PyObject *host = tensor_cpu(self, NULL);
    if (!host) return NULL;
    if (np_asarray == Py_None) {
        Py_DECREF(host);
        PyErr_SetString(PyExc_ImportError, "Tensor.numpy() needs NumPy");
        return NULL;
    }
    PyObject *a = PyObject_CallOneArg(np_asarray, host);
    Py_DECREF(host);
    return a;
}

static PyObject *tensor_repr(PyObject *self)
{
    pfpy_tensor *o = (pfpy_tensor *)self;
    char shape[160] = "";
    size_t n = 0;
    for (int i = 0; i < o->t.ndim && n < sizeof shape; i++)
        n += (size_t)snprintf(shape + n, sizeof shape - n, "%s%lld", i ? ", " : "",
                              (long long)o->t.shape[i]);
    return PyUnicode_FromFormat("pixflow.Tensor(shape=(%s), dtype=%s, device=%s)", shape,
                                pfpy_dtype_name(o->t.dtype), pf_device_spec(o->device));
}

static PyMethodDef tensor_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))pfpy_tensor_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
     "A DLPack capsule sharing this tensor's memory. `stream` is the consumer's CUDA stream "
     "(an int: 1 legacy default, 2 per-thread default, else a cudaStream_t; None = legacy "
     "default; -1 = no synchronisation): it is made to wait for the work that produced the "
     "tensor. With max_version >= (1, 0) a versioned capsule is returned."},
    {"__dlpack_device__", pfpy_tensor_dlpack_device, METH_NOARGS,
     "(device_type, device_id) as DLPack numbers: (1, 0) CPU, (2, N) CUDA, (3, 0) pinned."},
    {"to", (PyCFunction)(void (*)(void))tensor_to, METH_VARARGS | METH_KEYWORDS,
     "to(device)\n--\n\nA contiguous copy on `device` ('cpu', 'cuda:0')."},
    {"cpu", tensor_cpu, METH_NOARGS, "This tensor when on the host, else a host copy."},
    {"numpy", tensor_numpy, METH_NOARGS,
     "A NumPy array of the host data (shared; a device tensor is copied first)."},
    {NULL}};

PyTypeObject pfpy_tensor_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pixflow.Tensor",
    .tp_basicsize = sizeof(pfpy_tensor),
    .tp_dealloc = tensor_dealloc,
    .tp_repr = tensor_repr,
    .tp_as_buffer = &tensor_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An n-dimensional array owned by pixflow, on the host or a GPU.\n\n"
              "Host tensors share their memory through the buffer protocol "
              "(numpy.asarray(t)); all tensors through DLPack (torch.from_dlpack(t), "
              "cupy.from_dlpack(t)). Functions of this package return NumPy arrays for host "
              "results and Tensors for GPU results.",
    .tp_methods = tensor_methods,
    .tp_getset = tensor_getset,
};

int pfpy_tensor_init_type(PyObject *m)
{
    if (PyType_Ready(&pfpy_tensor_type) < 0) return -1;
    if (PyModule_AddObjectRef(m, "Tensor", (PyObject *)&pfpy_tensor_type) < 0) return -1;
    PyObject *np = PyImport_ImportModule("numpy");
    if (np) {
        np_asarray = PyObject_GetAttrString(np, "asarray");
        Py_DECREF(np);
    }
    if (!np_asarray) {
        PyErr_Clear();
        np_asarray = Py_NewRef(Py_None);
    }
#ifdef PFPY_HAVE_NUMPY
    if (np_asarray != Py_None) {
        /* A NumPy other than the one built against (its C API version
         * differs) leaves numpy.asarray in charge. */
        numpy_api = _import_array() == 0;
        if (!numpy_api) PyErr_Clear();
    }
#endif
    return 0;
}

PyObject *pfpy_to_output(PyObject *tensor)
{
    if (!tensor || np_asarray == Py_None || !is_host((pfpy_tensor *)tensor)) return tensor;
#ifdef PFPY_HAVE_NUMPY
    if (numpy_api) {
        pfpy_tensor *o = (pfpy_tensor *)tensor;
        static const int types[PF_DTYPE_COUNT] = {NPY_UINT8, NPY_INT32, NPY_FLOAT16, NPY_FLOAT32};
        npy_intp dims[PF_TENSOR_MAX_DIMS], strides[PF_TENSOR_MAX_DIMS];
        size_t es = pf_dtype_size(o->t.dtype);
        for (int i = 0; i < o->t.ndim; i++) {
            dims[i] = (npy_intp)o->t.shape[i];
            strides[i] = (npy_intp)(o->t.strides[i] * (int64_t)es);
        }
        PyObject *arr = PyArray_New(&PyArray_Type, o->t.ndim, dims, types[o->t.dtype], strides,
                                    o->t.data, (int)es, NPY_ARRAY_WRITEABLE, NULL);
        if (!arr) {
            Py_DECREF(tensor);
            return NULL;
        }
        /* The array keeps the tensor (and so pixflow's memory) alive. */
        if (PyArray_SetBaseObject((PyArrayObject *)arr, tensor) < 0) {
            Py_DECREF(arr);
            return NULL;
        }
        PyArray_UpdateFlags((PyArrayObject *)arr, NPY_ARRAY_ALIGNED | NPY_ARRAY_C_CONTIGUOUS |
                                                      NPY_ARRAY_F_CONTIGUOUS);
        return arr;
    }
#endif
    PyObject *a = PyObject_CallOneArg(np_asarray, tensor);
    Py_DECREF(tensor);
    return a;
}
