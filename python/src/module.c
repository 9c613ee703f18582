/* module.c - the _pixflow extension module: init, versions, devices.
 * python/pixflow/__init__.py re-exports it as the `pixflow` package. */
#include "pfpy.h"

static PyObject *py_version(PyObject *self, PyObject *unused)
{
    return PyUnicode_FromString(pf_version_string());
}

static PyObject *py_build_info(PyObject *self, PyObject *unused)
{
    const pf_build_info *b = pf_get_build_info();
    return Py_BuildValue("{s:s,s:s,s:s,s:O,s:s,s:s,s:s,s:O,s:O,s:O}", "version", b->version,
                         "build_type", b->build_type, "c_compiler", b->c_compiler, "cuda",
                         b->cuda ? Py_True : Py_False, "cuda_compiler", b->cuda_compiler,
                         "cuda_arch", b->cuda_arch, "sanitize", b->sanitize, "png",
                         pf_io_have_png() ? Py_True : Py_False, "jpeg",
                         pf_io_have_jpeg() ? Py_True : Py_False, "ffmpeg",
                         pf_io_have_ffmpeg() ? Py_True : Py_False);
}

static PyObject *py_set_log_level(PyObject *self, PyObject *arg)
{
    const char *s = PyUnicode_AsUTF8(arg);
    if (!s) return NULL;
    pf_log_level lv;
    pf_status st = pf_log_level_parse(s, &lv);
    if (st != PF_OK) return pfpy_raise(st, "log level");
    pf_log_set_level(lv);
    Py_RETURN_NONE;
}

/* A C call that does nothing but cross into the library: the floor the
 * per-call overhead benchmark (bench/bench_python.py) measures against. */
static PyObject *py_noop(PyObject *self, PyObject *unused)
{
    int64_t t;
    Py_BEGIN_ALLOW_THREADS
    t = pf_time_ns();
    Py_END_ALLOW_THREADS
    (void)t;
    Py_RETURN_NONE;
}

/* Times `n` direct C calls of pf_ops_resize on a small RGB image on
 * `device` (what pixflow.ops.resize does for that image, minus Python: a
 * new output each call, the wait for the stream): the C side of the
 * overhead benchmark (bench/bench_python.py). Returns seconds per call. */
static PyObject *py_bench_c_resize(PyObject *self, PyObject *args)
{
    int n, w, h, dw, dh;
    PyObject *spec = Py_None;
    if (!PyArg_ParseTuple(args, "iiiii|O", &n, &w, &h, &dw, &dh, &spec)) return NULL;
    pf_device *dev;
    if (pfpy_device_parse(spec, &dev) < 0) return NULL;
    pfpy_ctx *ctx = NULL;
    pf_frame src = {0}, dst = {0};
    pf_status st;
    double sec = 0;
    Py_BEGIN_ALLOW_THREADS
    st = pfpy_ctx_acquire(dev, &ctx);
    if (st == PF_OK) st = pf_frame_alloc(&src, PF_PIXFMT_RGB24, w, h, ctx->alloc, ctx->stream);
    if (st == PF_OK) st = pf_memset_async(ctx->stream, src.data[0], 77, src.stride[0] * (size_t)h);
    if (st == PF_OK) {
        int64_t t0 = pf_time_ns();
        for (int i = 0; st == PF_OK && i < n; i++) {
            st = pf_frame_alloc(&dst, PF_PIXFMT_RGB24, dw, dh, ctx->alloc, ctx->stream);
            if (st == PF_OK) st = pf_ops_resize(ctx->ops, &src, &dst, PF_INTERP_BILINEAR);
            if (st == PF_OK) st = pf_stream_synchronize(ctx->stream);
            pf_frame_unref(&dst);
        }
        sec = (double)(pf_time_ns() - t0) / 1e9 / n;
    }
    pf_frame_unref(&src);
    if (ctx) pfpy_ctx_release(ctx);
    Py_END_ALLOW_THREADS
    if (st != PF_OK) return pfpy_raise(st, "bench");
    return PyFloat_FromDouble(sec);
}

/* Seconds per direct C pf_nn_exec_run of a model's first input (zeros,
 * batch 1) into fresh outputs on the CPU: the C side of Model.run's
 * overhead. (path, n) */
static PyObject *py_bench_c_model_run(PyObject *self, PyObject *args)
{
    const char *path;
    int n;
    if (!PyArg_ParseTuple(args, "si", &path, &n)) return NULL;
    pf_model *m = NULL;
    pf_nn_exec *x = NULL;
    pf_tensor in[8], out[8];
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    double sec = 0;
    pf_status st;
    Py_BEGIN_ALLOW_THREADS
    st = pf_model_load(path, &m);
    int ni = m ? pf_model_num_inputs(m) : 0, no = m ? pf_model_num_outputs(m) : 0;
    if (st == PF_OK && (ni > 8 || no > 8)) st = PF_ERR_UNSUPPORTED;
    if (st == PF_OK) {
        pf_nn_exec_params p = pf_nn_exec_params_default();
        p.pool = pfpy_cpu_pool();
        p.max_batch = 8;
        st = pf_nn_exec_create(m, &p, &x);
    }
    for (int i = 0; st == PF_OK && i < ni; i++) {
        pf_model_io io = pf_model_input(m, i);
        int64_t shape[PF_NN_MAX_DIMS];
        for (int k = 0; k < io.ndim; k++) shape[k] = io.shape[k] < 0 ? 1 : io.shape[k];
        st = pf_tensor_alloc(&in[i], io.dtype == PF_DTYPE_I32 ? PF_DTYPE_I32 : PF_DTYPE_F32,
                             io.ndim, shape, io.layout, NULL, NULL);
        if (st == PF_OK) memset(in[i].data, 0, pf_tensor_nbytes(&in[i]));
    }
    if (st == PF_OK) {
        int64_t t0 = pf_time_ns();
        for (int r = 0; st == PF_OK && r < n; r++) {
            for (int i = 0; st == PF_OK && i < no; i++) {
                pf_model_io io = pf_model_output(m, i);
                int64_t shape[PF_NN_MAX_DIMS];
                for (int k = 0; k < io.ndim; k++) shape[k] = io.shape[k] < 0 ? 1 : io.shape[k];
                st = pf_tensor_alloc(&out[i], io.dtype == PF_DTYPE_I32 ? PF_DTYPE_I32
                                                                      : PF_DTYPE_F32,
                                     io.ndim, shape, io.layout, NULL, NULL);
            }
            if (st == PF_OK) st = pf_nn_exec_run(x, NULL, in, ni, out, no);
            for (int i = 0; i < no; i++) pf_tensor_unref(&out[i]);
        }
        sec = (double)(pf_time_ns() - t0) / 1e9 / (n > 0 ? n : 1);
    }
    for (int i = 0; i < 8; i++) pf_tensor_unref(&in[i]);
    pf_nn_exec_destroy(&x);
    pf_model_free(&m);
    Py_END_ALLOW_THREADS
    if (st != PF_OK) return pfpy_raise(st, path);
    return PyFloat_FromDouble(sec);
}

static PyMethodDef module_methods[] = {
    {"devices", pfpy_devices, METH_NOARGS,
     "devices()\n--\n\nThe usable devices as specs: ['cpu'] or ['cpu', 'cuda:0', ...]. "
     "Never empty: the CPU is always there."},
    {"device_info", pfpy_device_info, METH_VARARGS,
     "device_info(device='cpu')\n--\n\nProperties of a device as a dict (name, memory, ...)."},
    {"version", py_version, METH_NOARGS, "version()\n--\n\nThe library's version string."},
    {"build_info", py_build_info, METH_NOARGS,
     "build_info()\n--\n\nHow the library was built (CUDA, compiler, image/video support)."},
    {"set_log_level", py_set_log_level, METH_O,
     "set_log_level(level)\n--\n\n'quiet', 'error', 'warn', 'info', 'debug' or 'trace'."},
    {"from_dlpack", pfpy_from_dlpack, METH_O,
     "from_dlpack(obj)\n--\n\nA pixflow.Tensor sharing the memory of a DLPack producer "
     "(torch.Tensor, cupy.ndarray, numpy.ndarray, ...): no copy."},
    {"_noop", py_noop, METH_NOARGS, "Benchmark helper: an empty call into the library."},
    {"_bench_c_resize", py_bench_c_resize, METH_VARARGS,
     "Benchmark helper: seconds per direct C pf_ops_resize call (n, w, h, dw, dh, device)."},
    {"_bench_c_model_run", py_bench_c_model_run, METH_VARARGS,
     "Benchmark helper: seconds per direct C pf_nn_exec_run on the CPU (path, n)."},
    {NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "pixflow._pixflow",
    "The pixflow C extension; use the `pixflow` package.", -1, module_methods, NULL, NULL, NULL,
    NULL};

PyMODINIT_FUNC PyInit__pixflow(void);
PyMODINIT_FUNC PyInit__pixflow(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    PyObject *ops = PyModule_New("pixflow._pixflow.ops");
    if (!ops || PyModule_AddFunctions(ops, pfpy_ops_methods) < 0 ||
        PyModule_AddObjectRef(m, "ops", ops) < 0 || pfpy_errors_init(m) < 0 ||
        pfpy_tensor_init_type(m) < 0 || pfpy_dlpack_init(m) < 0 || pfpy_model_init(m) < 0 ||
        pfpy_pipeline_init(m) < 0 || pfpy_jobs_init(m) < 0 ||
        PyModule_AddStringConstant(m, "__version__", pf_version_string()) < 0) {
        Py_XDECREF(ops);
        Py_DECREF(m);
        return NULL;
    }
    Py_DECREF(ops);
    return m;
}
