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

/* Times `n` direct C calls of pf_ops_resize on a small RGB image (what
 * pixflow.ops.resize does for that image, minus Python): the C side of the
 * overhead benchmark. Returns seconds per call. */
static PyObject *py_bench_c_resize(PyObject *self, PyObject *args)
{
    int n, w, h, dw, dh;
    if (!PyArg_ParseTuple(args, "iiiii", &n, &w, &h, &dw, &dh)) return NULL;
    pf_device *cpu;
    pf_device_get(PF_DEVICE_CPU, 0, &cpu);
    pfpy_ctx *ctx = NULL;
    pf_frame src = {0}, dst = {0};
    pf_status st;
    double sec = 0;
    Py_BEGIN_ALLOW_THREADS
    st = pfpy_ctx_acquire(cpu, &ctx);
    if (st == PF_OK) st = pf_frame_alloc(&src, PF_PIXFMT_RGB24, w, h, NULL, NULL);
    if (st == PF_OK) {
        memset(src.data[0], 77, src.stride[0] * (size_t)h);
        int64_t t0 = pf_time_ns();
        for (int i = 0; st == PF_OK && i < n; i++) {
            /* Like the Python call: a fresh output each time. */
            st = pf_frame_alloc(&dst, PF_PIXFMT_RGB24, dw, dh, NULL, NULL);
            if (st == PF_OK) st = pf_ops_resize(ctx->ops, &src, &dst, PF_INTERP_BILINEAR);
            if (st == PF_OK) st = pf_stream_synchronize(ctx->stream);
            pf_frame_unref(&dst);
        }
        sec = (double)(pf_time_ns() - t0) / 1e9 / n;
    }
    pf_frame_unref(&src);
    pfpy_ctx_release(ctx);
    Py_END_ALLOW_THREADS
    if (st != PF_OK) return pfpy_raise(st, "bench");
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
     "Benchmark helper: seconds per direct C pf_ops_resize call (n, w, h, dw, dh)."},
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
