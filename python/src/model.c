/* model.c - pixflow.Model: a loaded model bound to a device (pf_model +
 * pf_nn_exec).
 *
 * run() takes arrays (NumPy, anything with the buffer protocol, DLPack
 * tensors such as torch.Tensor) and returns a dict of output arrays. The
 * executor is single-threaded, so runs from several Python threads take
 * turns on a lock taken without the GIL. On a GPU, host inputs are copied
 * to the device and the outputs come back as NumPy arrays; when every input
 * already lives on the GPU the outputs stay there as pixflow.Tensor
 * (DLPack). A run returns when its device work is complete: the producer of
 * an input may then reuse its memory at once (PyTorch's caching allocator
 * would, on its own stream). */
#include "pfpy.h"

#include <pthread.h>
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    pf_model *model;
    pf_nn_exec *exec;
    pf_device *device;
    pf_nn_precision precision;
    int max_batch;
    pthread_mutex_t lock;
    int lock_ready;
    PyObject *path;
} pfpy_model;

static PyTypeObject tensor_info_type;
static PyStructSequence_Field tensor_info_fields[] = {
    {"name", "input or output name"},
    {"shape", "dimensions; -1 marks the batch dimension of a model that takes any batch"},
    {"dtype", "'float32', 'float16', 'int32' or 'uint8'"},
    {"layout", "'nchw', 'nhwc' or 'none'"},
    {NULL}};
static PyStructSequence_Desc tensor_info_desc = {
    "pixflow.TensorInfo", "Name, shape, dtype and layout of a model input or output.",
    tensor_info_fields, 4};

static PyObject *io_info(pf_model_io io)
{
    PyObject *o = PyStructSequence_New(&tensor_info_type);
    if (!o) return NULL;
    PyObject *shape = PyTuple_New(io.ndim);
    for (int i = 0; shape && i < io.ndim; i++)
        PyTuple_SET_ITEM(shape, i, PyLong_FromLongLong(io.shape[i]));
    PyStructSequence_SET_ITEM(o, 0, PyUnicode_FromString(io.name));
    PyStructSequence_SET_ITEM(o, 1, shape ? shape : Py_NewRef(Py_None));
    PyStructSequence_SET_ITEM(o, 2, PyUnicode_FromString(pfpy_dtype_name(io.dtype)));
    PyStructSequence_SET_ITEM(o, 3, PyUnicode_FromString(pf_layout_name(io.layout)));
    return o;
}

static void model_dealloc(PyObject *self)
{
    pfpy_model *m = (pfpy_model *)self;
    Py_BEGIN_ALLOW_THREADS
    pf_nn_exec_destroy(&m->exec);
    pf_model_free(&m->model);
    Py_END_ALLOW_THREADS
    if (m->lock_ready) pthread_mutex_destroy(&m->lock);
    Py_XDECREF(m->path);
    Py_TYPE(self)->tp_free(self);
}

static int model_init(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"path", "device", "precision", "max_batch", NULL};
    pfpy_model *m = (pfpy_model *)self;
    PyObject *path_obj, *dev_obj = NULL, *prec_obj = NULL;
    int max_batch = 8;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOi:Model", kwlist, &path_obj, &dev_obj,
                                     &prec_obj, &max_batch))
        return -1;
    if (m->model) {
        PyErr_SetString(PyExc_RuntimeError, "Model is already initialised");
        return -1;
    }
    PyObject *path = NULL;
    if (!PyUnicode_FSDecoder(path_obj, &path)) return -1;
    static const char *const prec_names[] = {"fp32", "fp16", "float32", "float16", NULL};
    static const int prec_values[] = {PF_NN_FP32, PF_NN_FP16, PF_NN_FP32, PF_NN_FP16};
    int prec = PF_NN_FP32;
    if (pfpy_parse_choice(prec_obj, "precision", prec_names, prec_values, &prec) < 0 ||
        pfpy_device_parse(dev_obj ? dev_obj : Py_None, &m->device) < 0) {
        Py_DECREF(path);
        return -1;
    }
    if (max_batch < 1) {
        Py_DECREF(path);
        pfpy_raise_fmt(PF_ERR_INVALID, "max_batch %d: must be >= 1", max_batch);
        return -1;
    }
    const char *cpath = PyUnicode_AsUTF8(path);
    pf_status st;
    pf_model *model = NULL;
    pf_nn_exec *exec = NULL;
    Py_BEGIN_ALLOW_THREADS
    st = pf_model_load(cpath, &model);
    if (st == PF_OK) {
        pf_nn_exec_params p = pf_nn_exec_params_default();
        p.device = m->device;
        p.precision = (pf_nn_precision)prec;
        p.max_batch = max_batch;
        if (pf_device_props_get(m->device)->type == PF_DEVICE_CPU) p.pool = pfpy_cpu_pool();
        st = pf_nn_exec_create(model, &p, &exec);
    }
    Py_END_ALLOW_THREADS
    if (st != PF_OK) {
        pf_model_free(&model);
        Py_DECREF(path);
        pfpy_raise(st, cpath);
        return -1;
    }
    m->model = model;
    m->exec = exec;
    m->precision = (pf_nn_precision)prec;
    m->max_batch = max_batch;
    m->path = path;
    if (!m->lock_ready) {
        pthread_mutex_init(&m->lock, NULL);
        m->lock_ready = 1;
    }
    return 0;
}

static int check_ready(pfpy_model *m)
{
    if (!m->model) {
        PyErr_SetString(PyExc_RuntimeError, "Model was not initialised");
        return -1;
    }
    return 0;
}

static PyObject *model_ios(pfpy_model *m, int outputs)
{
    if (check_ready(m) < 0) return NULL;
    int n = outputs ? pf_model_num_outputs(m->model) : pf_model_num_inputs(m->model);
    PyObject *list = PyList_New(n);
    for (int i = 0; list && i < n; i++) {
        PyObject *o = io_info(outputs ? pf_model_output(m->model, i) : pf_model_input(m->model, i));
        if (!o) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, o);
    }
    return list;
}

static PyObject *model_inputs(PyObject *self, void *c) { return model_ios((pfpy_model *)self, 0); }
static PyObject *model_outputs(PyObject *self, void *c) { return model_ios((pfpy_model *)self, 1); }
static PyObject *model_device(PyObject *self, void *c)
{
    return pfpy_device_str(((pfpy_model *)self)->device);
}
static PyObject *model_path(PyObject *self, void *c)
{
    PyObject *p = ((pfpy_model *)self)->path;
    return Py_NewRef(p ? p : Py_None);
}
static PyObject *model_precision(PyObject *self, void *c)
{
    return PyUnicode_FromString(((pfpy_model *)self)->precision == PF_NN_FP16 ? "fp16" : "fp32");
}
static PyObject *model_max_batch(PyObject *self, void *c)
{
    return PyLong_FromLong(((pfpy_model *)self)->max_batch);
}

#define MAX_IO 64

/* The arrays for each model input, in model order (new references). */
static int gather_inputs(pfpy_model *m, PyObject *inputs, PyObject **objs, int n_in)
{
    if (PyDict_Check(inputs)) {
        if (PyDict_Size(inputs) != n_in) goto count;
        for (int i = 0; i < n_in; i++) {
            pf_model_io io = pf_model_input(m->model, i);
            PyObject *v = PyDict_GetItemString(inputs, io.name);
            if (!v) {
                PyObject *keys = PyDict_Keys(inputs), *r = keys ? PyObject_Repr(keys) : NULL;
                pfpy_raise_fmt(PF_ERR_INVALID, "Model.run: no array for input '%s' (got %s)",
                               io.name, r ? PyUnicode_AsUTF8(r) : "?");
                Py_XDECREF(r);
                Py_XDECREF(keys);
                return -1;
            }
            objs[i] = Py_NewRef(v);
        }
        return 0;
    }
    if (PyList_Check(inputs) || PyTuple_Check(inputs)) {
        if (PySequence_Size(inputs) != n_in) goto count;
        for (int i = 0; i < n_in; i++) objs[i] = PySequence_GetItem(inputs, i);
        return 0;
    }
    if (n_in == 1) {
        objs[0] = Py_NewRef(inputs);
        return 0;
    }
count:
    pfpy_raise_fmt(PF_ERR_INVALID, "Model.run: the model has %d inputs; pass a dict "
                   "{name: array} with all of them", n_in);
    return -1;
}

/* The device an object's memory lives on (CPU unless DLPack or a Tensor
 * says otherwise). */
static int object_on_gpu(PyObject *obj)
{
    if (PyObject_TypeCheck(obj, &pfpy_tensor_type))
        return pf_tensor_domain(&((pfpy_tensor *)obj)->t) == PF_MEM_DEVICE;
    if (PyObject_CheckBuffer(obj) || !PyObject_HasAttrString(obj, "__dlpack_device__")) return 0;
    PyObject *d = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
    int t = 0, id = 0;
    if (!d || !PyArg_ParseTuple(d, "ii", &t, &id)) {
        Py_XDECREF(d);
        PyErr_Clear();
        return 0;
    }
    Py_DECREF(d);
    return t == 2;
}

static PyObject *model_run(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"inputs", NULL};
    PyObject *inputs;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O:run", kwlist, &inputs)) return NULL;
    pfpy_model *m = (pfpy_model *)self;
    if (check_ready(m) < 0) return NULL;
    int n_in = pf_model_num_inputs(m->model), n_out = pf_model_num_outputs(m->model);
    if (n_in > MAX_IO || n_out > MAX_IO)
        return pfpy_raise_fmt(PF_ERR_UNSUPPORTED, "Model.run: more than %d inputs or outputs",
                              MAX_IO);
    /* Only the n_in / n_out first entries are used (and cleared: clearing
     * all 64 cost more than a small model's run). */
    PyObject *objs[MAX_IO];
    pfpy_array arrs[MAX_IO];
    pf_tensor dev_in[MAX_IO], outs[MAX_IO], host_outs[MAX_IO];
    memset(objs, 0, sizeof objs[0] * (size_t)n_in);
    memset(arrs, 0, sizeof arrs[0] * (size_t)n_in);
    memset(dev_in, 0, sizeof dev_in[0] * (size_t)n_in);
    memset(outs, 0, sizeof outs[0] * (size_t)n_out);
    memset(host_outs, 0, sizeof host_outs[0] * (size_t)n_out);
    PyObject *result = NULL;
    pfpy_ctx *ctx = NULL;
    int gpu = pf_device_props_get(m->device)->type != PF_DEVICE_CPU;
    int all_on_gpu = gpu;
    pf_status st = PF_OK;

    if (gather_inputs(m, inputs, objs, n_in) < 0) goto done;
    if (gpu) {
        Py_BEGIN_ALLOW_THREADS
        st = pfpy_ctx_acquire(m->device, &ctx);
        Py_END_ALLOW_THREADS
        if (st != PF_OK) {
            pfpy_raise(st, "Model.run");
            goto done;
        }
    }
    for (int i = 0; i < n_in; i++) {
        pf_model_io io = pf_model_input(m->model, i);
        char what[160];
        what[0] = 0;
        strcat(what, "input '");
        strncat(what, io.name, sizeof what - 10);
        strcat(what, "'");
        if (gpu && !object_on_gpu(objs[i])) all_on_gpu = 0;
        if (pfpy_array_get(objs[i], PFPY_READ, what, ctx ? pf_stream_native(ctx->stream) : NULL,
                           &arrs[i]) < 0)
            goto done;
        pf_mem_domain d = pf_tensor_domain(&arrs[i].t);
        if (!gpu && d == PF_MEM_DEVICE) {
            pfpy_raise_fmt(PF_ERR_UNSUPPORTED, "Model.run: %s lives on %s but the model runs on "
                           "cpu", what, pf_device_spec(arrs[i].device));
            goto done;
        }
        if (gpu && d == PF_MEM_DEVICE && arrs[i].device != m->device) {
            pfpy_raise_fmt(PF_ERR_UNSUPPORTED, "Model.run: %s lives on %s but the model runs on "
                           "%s", what, pf_device_spec(arrs[i].device), pf_device_spec(m->device));
            goto done;
        }
    }
    /* Output shapes: the model's, with the batch of the first input. */
    int64_t batch = arrs[0].t.ndim > 0 ? arrs[0].t.shape[0] : 1;
    for (int i = 0; i < n_out; i++) {
        pf_model_io io = pf_model_output(m->model, i);
        int64_t shape[PF_NN_MAX_DIMS];
        for (int k = 0; k < io.ndim; k++) shape[k] = io.shape[k] < 0 ? batch : io.shape[k];
        pf_dtype dt = io.dtype == PF_DTYPE_I32 ? PF_DTYPE_I32 : PF_DTYPE_F32;
        st = pf_tensor_alloc(&outs[i], dt, io.ndim, shape, io.layout, gpu ? ctx->alloc : NULL,
                             gpu ? ctx->stream : NULL);
        if (st == PF_OK && gpu && !all_on_gpu)
            st = pf_tensor_alloc(&host_outs[i], dt, io.ndim, shape, io.layout, NULL, NULL);
        if (st != PF_OK) {
            pfpy_raise(st, "Model.run: outputs");
            goto done;
        }
    }
    char err[1024] = "";
    Py_BEGIN_ALLOW_THREADS
    /* Host inputs of a GPU model go to the device first. */
    for (int i = 0; st == PF_OK && i < n_in; i++) {
        if (gpu && pf_tensor_domain(&arrs[i].t) != PF_MEM_DEVICE) {
            st = pf_tensor_alloc(&dev_in[i], arrs[i].t.dtype, arrs[i].t.ndim, arrs[i].t.shape,
                                 arrs[i].t.layout, ctx->alloc, ctx->stream);
            if (st == PF_OK)
                st = pf_memcpy_async(ctx->stream, dev_in[i].data, arrs[i].t.data,
                                     pf_tensor_nbytes(&arrs[i].t));
        } else {
            pf_tensor_ref(&dev_in[i], &arrs[i].t);
        }
    }
    if (st == PF_OK) {
        pthread_mutex_lock(&m->lock);
        st = pf_nn_exec_run(m->exec, ctx ? ctx->stream : NULL, dev_in, n_in, outs, n_out);
        pthread_mutex_unlock(&m->lock);
    }
    for (int i = 0; st == PF_OK && gpu && !all_on_gpu && i < n_out; i++)
        st = pf_memcpy_async(ctx->stream, host_outs[i].data, outs[i].data,
                             pf_tensor_nbytes(&outs[i]));
    if (st == PF_OK && ctx) st = pf_stream_synchronize(ctx->stream);
    if (st != PF_OK) snprintf(err, sizeof err, "%s", pf_last_error());
    Py_END_ALLOW_THREADS
    if (st != PF_OK) {
        pfpy_raise_fmt(st, "%s", *err ? err : pf_status_str(st));
        goto done;
    }
    result = PyDict_New();
    for (int i = 0; result && i < n_out; i++) {
        pf_tensor *t = gpu && !all_on_gpu ? &host_outs[i] : &outs[i];
        PyObject *o = pfpy_to_output(pfpy_tensor_new(t, gpu && all_on_gpu ? m->device : NULL));
        if (!o || PyDict_SetItemString(result, pf_model_output(m->model, i).name, o) < 0) {
            Py_XDECREF(o);
            Py_CLEAR(result);
            break;
        }
        Py_DECREF(o);
    }
done:
    for (int i = 0; i < n_in; i++) {
        pf_tensor_unref(&dev_in[i]);
        pfpy_array_release(&arrs[i]);
        Py_XDECREF(objs[i]);
    }
    for (int i = 0; i < n_out; i++) {
        pf_tensor_unref(&outs[i]);
        pf_tensor_unref(&host_outs[i]);
    }
    if (ctx) {
        Py_BEGIN_ALLOW_THREADS
        pfpy_ctx_release(ctx);
        Py_END_ALLOW_THREADS
    }
    return result;
}

static PyObject *model_repr(PyObject *self)
{
    pfpy_model *m = (pfpy_model *)self;
    if (!m->model) return PyUnicode_FromString("pixflow.Model(<uninitialised>)");
    return PyUnicode_FromFormat("pixflow.Model(%R, device='%s', precision='%s')", m->path,
                                pf_device_spec(m->device),
                                m->precision == PF_NN_FP16 ? "fp16" : "fp32");
}

static PyGetSetDef model_getset[] = {
    {"inputs", model_inputs, NULL,
     "The inputs: a list of TensorInfo (name, shape, dtype, layout).", NULL},
    {"outputs", model_outputs, NULL, "The outputs: a list of TensorInfo.", NULL},
    {"device", model_device, NULL, "The device the model runs on.", NULL},
    {"path", model_path, NULL, "The model file.", NULL},
    {"precision", model_precision, NULL, "'fp32' or 'fp16'.", NULL},
    {"max_batch", model_max_batch, NULL, "The largest batch run() accepts.", NULL},
    {NULL}};

static PyMethodDef model_methods[] = {
    {"run", (PyCFunction)(void (*)(void))model_run, METH_VARARGS | METH_KEYWORDS,
     "run(inputs)\n--\n\n"
     "Runs the model on `inputs`: a dict {input name: array}, a list in input order, or one "
     "array for a model with one input. Arrays are float32 or float16 (int32 for integer "
     "inputs), C-contiguous, shaped like the input with any batch 1..max_batch in the batch "
     "dimension; NumPy arrays, buffers and DLPack tensors (torch.Tensor) are read in place. "
     "Returns a dict {output name: array}: NumPy arrays, or pixflow.Tensor on the GPU when "
     "every input was on the model's GPU. The GIL is released while the model runs; runs from "
     "several threads take turns."},
    {NULL}};

static PyTypeObject model_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pixflow.Model",
    .tp_basicsize = sizeof(pfpy_model),
    .tp_dealloc = model_dealloc,
    .tp_repr = model_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Model(path, device='cpu', precision='fp32', max_batch=8)\n--\n\n"
              "An ONNX or TFLite model loaded and bound to a device ('cpu', 'cuda', 'cuda:N', "
              "'auto'). precision 'fp16' needs a GPU. Raises pixflow.IOError, FormatError or "
              "UnsupportedError with pixflow's message when the file cannot be used.",
    .tp_methods = model_methods,
    .tp_getset = model_getset,
    .tp_init = model_init,
    .tp_new = PyType_GenericNew,
};

int pfpy_model_init(PyObject *m)
{
    if (PyStructSequence_InitType2(&tensor_info_type, &tensor_info_desc) < 0) return -1;
    if (PyType_Ready(&model_type) < 0) return -1;
    if (PyModule_AddObjectRef(m, "Model", (PyObject *)&model_type) < 0) return -1;
    return PyModule_AddObjectRef(m, "TensorInfo", (PyObject *)&tensor_info_type);
}
