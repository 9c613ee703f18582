/* dlpack.c - DLPack export (Tensor.__dlpack__) and import (from_dlpack, any
 * argument that has __dlpack__), without copies.
 *
 * Streams. A CUDA tensor made by pixflow carries an event recorded on the
 * pixflow stream that produced it. __dlpack__(stream=s) makes the
 * consumer's stream s wait for that event (no host blocking), which is
 * what the protocol asks of a producer. On import pixflow is the consumer:
 * it passes the stream it will use, so the producer orders its pending work
 * before it. The memory of an imported tensor stays the producer's: the
 * deleter runs when pixflow's last reference goes. */
#include "pfpy.h"
#include "dlpack.h"

/* Export ------------------------------------------------------------------------ */

typedef struct {
    union {
        pfdl_managed legacy;
        pfdl_managed_versioned versioned;
    } m;
    int64_t shape[PF_TENSOR_MAX_DIMS];
    int64_t strides[PF_TENSOR_MAX_DIMS];
} export_block;

static void export_release(void *ctx)
{
    PyGILState_STATE g = PyGILState_Ensure();
    Py_XDECREF((PyObject *)ctx);
    PyGILState_Release(g);
}

static void legacy_deleter(pfdl_managed *m)
{
    export_release(m->manager_ctx);
    PyMem_RawFree(m);   /* m is the first member of its export_block */
}

static void versioned_deleter(pfdl_managed_versioned *m)
{
    export_release(m->manager_ctx);
    PyMem_RawFree(m);
}

static void capsule_legacy_destructor(PyObject *cap)
{
    if (PyCapsule_IsValid(cap, "dltensor")) {    /* never consumed */
        pfdl_managed *m = PyCapsule_GetPointer(cap, "dltensor");
        if (m && m->deleter) m->deleter(m);
    }
}

static void capsule_versioned_destructor(PyObject *cap)
{
    if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        pfdl_managed_versioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
        if (m && m->deleter) m->deleter(m);
    }
}

static pfdl_device dl_device_of(const pfpy_tensor *o)
{
    const pf_device_props *p = pf_device_props_get(o->device);
    pf_mem_domain d = pf_tensor_domain(&o->t);
    if (d == PF_MEM_DEVICE) return (pfdl_device){PFDL_CUDA, p->index};
    if (d == PF_MEM_PINNED && p->type == PF_DEVICE_CUDA) return (pfdl_device){PFDL_CUDA_HOST, 0};
    return (pfdl_device){PFDL_CPU, 0};
}

static pfdl_dtype dl_dtype_of(pf_dtype dt)
{
    switch (dt) {
    case PF_DTYPE_U8: return (pfdl_dtype){PFDL_UINT, 8, 1};
    case PF_DTYPE_I32: return (pfdl_dtype){PFDL_INT, 32, 1};
    case PF_DTYPE_F16: return (pfdl_dtype){PFDL_FLOAT, 16, 1};
    default: return (pfdl_dtype){PFDL_FLOAT, 32, 1};
    }
}

PyObject *pfpy_tensor_dlpack_device(PyObject *self, PyObject *unused)
{
    pfdl_device d = dl_device_of((pfpy_tensor *)self);
    return Py_BuildValue("(ii)", d.device_type, d.device_id);
}

/* Orders the consumer's stream after the work that produced the tensor. */
static int sync_consumer(pfpy_tensor *o, PyObject *stream)
{
    if (!o->ready) return 0;                   /* complete, or a host tensor */
    void *s;
    if (stream == Py_None) {
        s = (void *)(uintptr_t)1;              /* CU_STREAM_LEGACY */
    } else {
        long long v = PyLong_AsLongLong(stream);
        if (v == -1 && PyErr_Occurred()) return -1;
        if (v == -1) return 0;                 /* the consumer syncs itself */
        if (v == 0) {
            PyErr_SetString(PyExc_ValueError, "__dlpack__: stream 0 is ambiguous (DLPack)");
            return -1;
        }
        s = (void *)(uintptr_t)v;
    }
    return pfpy_cu_stream_wait(pf_device_props_get(o->device)->index, s, o->ready);
}

PyObject *pfpy_tensor_dlpack(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OOOO:__dlpack__", kwlist, &stream, &max_version,
                                     &dl_device, &copy))
        return NULL;
    pfpy_tensor *o = (pfpy_tensor *)self;
    if (copy == Py_True) {
        PyErr_SetString(PyExc_BufferError, "__dlpack__: copy=True is not supported");
        return NULL;
    }
    if (dl_device != Py_None) {
        pfdl_device d = dl_device_of(o);
        int t = -1, id = -1;
        if (!PyArg_ParseTuple(dl_device, "ii", &t, &id)) return NULL;
        if (t != d.device_type || id != d.device_id) {
            PyErr_SetString(PyExc_BufferError, "__dlpack__: dl_device differs from the tensor's "
                            "device and copies are not made");
            return NULL;
        }
    }
    int versioned = 0;
    if (max_version != Py_None) {
        int major = 0, minor = 0;
        if (!PyArg_ParseTuple(max_version, "ii", &major, &minor)) return NULL;
        versioned = major >= 1;
    }
    if (sync_consumer(o, stream) < 0) return NULL;

    export_block *b = PyMem_RawCalloc(1, sizeof *b);
    if (!b) return PyErr_NoMemory();
    pfdl_tensor *t = versioned ? &b->m.versioned.dl_tensor : &b->m.legacy.dl_tensor;
    t->data = o->t.data;
    t->device = dl_device_of(o);
    t->ndim = o->t.ndim;
    t->dtype = dl_dtype_of(o->t.dtype);
    for (int i = 0; i < o->t.ndim; i++) {
        b->shape[i] = o->t.shape[i];
        b->strides[i] = o->t.strides[i];
    }
    t->shape = b->shape;
    t->strides = b->strides;
    t->byte_offset = 0;
    if (versioned) {
        b->m.versioned.version = (pfdl_version){1, 0};
        b->m.versioned.manager_ctx = Py_NewRef(self);
        b->m.versioned.deleter = versioned_deleter;
        b->m.versioned.flags = 0;
    } else {
        b->m.legacy.manager_ctx = Py_NewRef(self);
        b->m.legacy.deleter = legacy_deleter;
    }
    PyObject *cap = PyCapsule_New(b, versioned ? "dltensor_versioned" : "dltensor",
                                  versioned ? capsule_versioned_destructor
                                            : capsule_legacy_destructor);
    if (!cap) {
        Py_DECREF(self);
        PyMem_RawFree(b);
    }
    return cap;
}

/* Import ------------------------------------------------------------------------ */

typedef struct {
    void *managed;
    int versioned;
} import_ctx;

static void import_free(void *opaque, void *data, size_t size)
{
    import_ctx *c = opaque;
    PyGILState_STATE g = PyGILState_Ensure();
    if (c->versioned) {
        pfdl_managed_versioned *m = c->managed;
        if (m->deleter) m->deleter(m);
    } else {
        pfdl_managed *m = c->managed;
        if (m->deleter) m->deleter(m);
    }
    PyGILState_Release(g);
    PyMem_RawFree(c);
}

static int dtype_from_dl(pfdl_dtype d, pf_dtype *out)
{
    if (d.lanes == 1) {
        if (d.code == PFDL_UINT && d.bits == 8) return *out = PF_DTYPE_U8, 0;
        if (d.code == PFDL_INT && d.bits == 32) return *out = PF_DTYPE_I32, 0;
        if (d.code == PFDL_FLOAT && d.bits == 16) return *out = PF_DTYPE_F16, 0;
        if (d.code == PFDL_FLOAT && d.bits == 32) return *out = PF_DTYPE_F32, 0;
    }
    pfpy_raise_fmt(PF_ERR_INVALID, "DLPack dtype (code %d, %d bits, %d lanes) is not supported: "
                   "use uint8, int32, float16 or float32", d.code, d.bits, d.lanes);
    return -1;
}

/* The __dlpack__ capsule of obj, asking for a versioned one first. */
static PyObject *get_capsule(PyObject *obj, PyObject *stream)
{
    PyObject *meth = PyObject_GetAttrString(obj, "__dlpack__");
    if (!meth) return NULL;
    PyObject *kw = Py_BuildValue("{s:O,s:(ii)}", "stream", stream, "max_version", 1, 0);
    PyObject *empty = PyTuple_New(0);
    PyObject *cap = kw && empty ? PyObject_Call(meth, empty, kw) : NULL;
    if (!cap && PyErr_ExceptionMatches(PyExc_TypeError)) {
        /* A producer older than DLPack 1.0 knows no max_version. */
        PyErr_Clear();
        PyDict_DelItemString(kw, "max_version");
        cap = PyObject_Call(meth, empty, kw);
    }
    Py_XDECREF(kw);
    Py_XDECREF(empty);
    Py_DECREF(meth);
    return cap;
}

int pfpy_dlpack_import(PyObject *obj, void *stream, pf_tensor *out, pf_device **dev)
{
    /* CPU producers refuse any stream but None; CUDA ones get ours. */
    PyObject *devt = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
    int dtype_kind = PFDL_CPU, did = 0;
    if (!devt) return -1;
    if (!PyArg_ParseTuple(devt, "ii", &dtype_kind, &did)) {
        Py_DECREF(devt);
        return -1;
    }
    Py_DECREF(devt);
    PyObject *s;
    if (dtype_kind == PFDL_CUDA && stream) s = PyLong_FromVoidPtr(stream);
    else s = Py_NewRef(Py_None);
    PyObject *cap = get_capsule(obj, s);
    Py_DECREF(s);
    if (!cap) return -1;

    import_ctx *c = PyMem_RawCalloc(1, sizeof *c);
    if (!c) {
        Py_DECREF(cap);
        PyErr_NoMemory();
        return -1;
    }
    pfdl_tensor *t;
    uint64_t flags = 0;
    if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        pfdl_managed_versioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
        if (m->version.major > 1) {
            Py_DECREF(cap);
            PyMem_RawFree(c);
            pfpy_raise_fmt(PF_ERR_UNSUPPORTED, "DLPack version %u.%u is not supported",
                           m->version.major, m->version.minor);
            return -1;
        }
        c->managed = m;
        c->versioned = 1;
        t = &m->dl_tensor;
        flags = m->flags;
        PyCapsule_SetName(cap, "used_dltensor_versioned");
    } else if (PyCapsule_IsValid(cap, "dltensor")) {
        pfdl_managed *m = PyCapsule_GetPointer(cap, "dltensor");
        c->managed = m;
        t = &m->dl_tensor;
        PyCapsule_SetName(cap, "used_dltensor");
    } else {
        Py_DECREF(cap);
        PyMem_RawFree(c);
        PyErr_SetString(PyExc_TypeError, "__dlpack__ did not return a DLPack capsule");
        return -1;
    }
    Py_DECREF(cap);     /* the name says "used": its destructor leaves the tensor alone */
    (void)flags;        /* read-only tensors are only read by pixflow's inputs */

    pf_dtype dt;
    pf_mem_domain domain = PF_MEM_HOST;
    pf_device *d = NULL;
    pf_status st = PF_OK;
    if (dtype_from_dl(t->dtype, &dt) < 0) goto fail;
    if (t->ndim < 0 || t->ndim > PF_TENSOR_MAX_DIMS) {
        pfpy_raise_fmt(PF_ERR_INVALID, "DLPack tensor with %d dimensions", t->ndim);
        goto fail;
    }
    switch (t->device.device_type) {
    case PFDL_CPU: st = pf_device_get(PF_DEVICE_CPU, 0, &d); break;
    case PFDL_CUDA_HOST:
        domain = PF_MEM_PINNED;
        st = pf_device_get(PF_DEVICE_CUDA, 0, &d);
        break;
    case PFDL_CUDA:
        domain = PF_MEM_DEVICE;
        st = pf_device_get(PF_DEVICE_CUDA, t->device.device_id, &d);
        break;
    default:
        pfpy_raise_fmt(PF_ERR_UNSUPPORTED, "DLPack device type %d is not supported (CPU, CUDA "
                       "and CUDA host memory are)", t->device.device_type);
        goto fail;
    }
    if (st != PF_OK) {
        pfpy_raise(st, "DLPack device");
        goto fail;
    }
    int64_t strides[PF_TENSOR_MAX_DIMS], span = 1, numel = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        strides[i] = t->strides ? t->strides[i] : numel;
        if (strides[i] < 0) {
            pfpy_raise_fmt(PF_ERR_UNSUPPORTED, "DLPack tensor with negative strides");
            goto fail;
        }
        numel *= t->shape[i];
        if (t->shape[i] > 0) span += (t->shape[i] - 1) * strides[i];
    }
    if (numel == 0) span = 0;
    size_t es = pf_dtype_size(dt);
    pf_buffer *buf = NULL;
    st = pf_buffer_wrap((uint8_t *)t->data + t->byte_offset, (size_t)span * es, domain, d,
                        import_free, c, &buf);
    if (st != PF_OK) {
        pfpy_raise(st, "DLPack");
        goto fail;
    }
    st = pf_tensor_wrap(out, buf, 0, dt, t->ndim, t->shape, strides, PF_LAYOUT_NONE);
    pf_buffer_unref(&buf);     /* on failure this ran the deleter */
    if (st != PF_OK) {
        pfpy_raise(st, "DLPack");
        return -1;
    }
    if (dev) *dev = d;
    return 0;
fail:
    import_free(c, NULL, 0);
    return -1;
}

PyObject *pfpy_from_dlpack(PyObject *self, PyObject *obj)
{
    if (PyObject_TypeCheck(obj, &pfpy_tensor_type)) return Py_NewRef(obj);
    pf_tensor t = {0};
    pf_device *d = NULL;
    /* pixflow has no stream of its own here: the producer orders its work
     * before the legacy default stream (stream None). */
    if (pfpy_dlpack_import(obj, NULL, &t, &d) < 0) return NULL;
    int gpu = pf_tensor_domain(&t) == PF_MEM_DEVICE;
    pfpy_tensor *o = (pfpy_tensor *)pfpy_tensor_new(&t, d);
    if (o && gpu) {
        /* pixflow's streams do not wait for the legacy default stream by
         * themselves: record where it stands, and calls using this tensor
         * make their stream wait for that (pfpy_array_get). */
        o->stream = (void *)(uintptr_t)1;
        if (pfpy_cu_event_record(pf_device_props_get(d)->index, o->stream, &o->ready) < 0) {
            Py_DECREF(o);
            return NULL;
        }
    }
    return (PyObject *)o;
}

int pfpy_dlpack_init(PyObject *m)
{
    return 0;
}
