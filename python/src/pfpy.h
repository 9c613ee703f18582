/* pfpy.h - shared declarations of the pixflow Python extension (_pixflow).
 *
 * One file per area: module.c (module init, devices, versions), errors.c
 * (pf_status -> exceptions), device.c (per-device contexts: stream, ops,
 * allocator), cuda_driver.c (events through the CUDA driver API, loaded at
 * run time), tensor.c (pixflow.Tensor: buffer protocol exporter), convert.c
 * (any Python array -> pf_tensor / pf_frame without copies), dlpack.c
 * (__dlpack__, from_dlpack), model.c, ops.c, pipeline.c, jobs.c.
 *
 * GIL rule: every call into libpixflow that can take time runs between
 * Py_BEGIN_ALLOW_THREADS and Py_END_ALLOW_THREADS; Python objects are only
 * touched with the GIL held. Buffers lent by Python objects are released by
 * a pf_buffer free callback that takes the GIL itself (pfpy_pin_*), so the
 * library may drop its last reference on any thread.
 */
#ifndef PFPY_H
#define PFPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pixflow/pixflow.h>

/* errors.c ---------------------------------------------------------------- */

/* Adds pixflow.Error and its subclasses to the module. */
int pfpy_errors_init(PyObject *m);
/* Raises the exception class of `st` with pf_last_error() (or `what` when
 * the library left no message) and returns NULL. */
PyObject *pfpy_raise(pf_status st, const char *what);
/* Raises the class of `st` with a formatted message; returns NULL. */
PyObject *pfpy_raise_fmt(pf_status st, const char *fmt, ...);
/* The exception class for a status (borrowed). */
PyObject *pfpy_error_class(pf_status st);
/* Converts the current Python exception into a pf_status plus
 * pf_set_error-like message for the library (Python callables inside
 * pipelines). Clears the exception. Needs the GIL. */
pf_status pfpy_status_from_exception(char *msg, size_t size);

/* device.c ---------------------------------------------------------------- */

/* What one call needs on a device: a stream, an ops context and an allocator
 * for outputs. Contexts are kept in a free list per device and lent to one
 * thread at a time (pf_ops is single-threaded), so parallel callers each get
 * their own. */
typedef struct pfpy_ctx {
    pf_device *device;
    pf_stream *stream;
    pf_ops *ops;
    pf_allocator *alloc;       /* device memory for CUDA outputs; NULL on the CPU */
    struct pfpy_ctx *next;
} pfpy_ctx;

/* Parses a device spec object (None/str) into a device; raises on error. */
int pfpy_device_parse(PyObject *spec, pf_device **out);
/* Borrows a context for `dev` (creating one when the list is empty).
 * Callable without the GIL; sets pf_last_error on failure. */
pf_status pfpy_ctx_acquire(pf_device *dev, pfpy_ctx **out);
void pfpy_ctx_release(pfpy_ctx *ctx);
/* A context from the free list or NULL, without creating one: quick enough
 * to call with the GIL held (the lock is never held across anything that
 * waits). */
pfpy_ctx *pfpy_ctx_try(pf_device *dev);
/* The process-wide CPU thread pool shared by ops contexts and executors. */
pf_threadpool *pfpy_cpu_pool(void);
PyObject *pfpy_devices(PyObject *self, PyObject *args);
PyObject *pfpy_device_info(PyObject *self, PyObject *args);
/* "cpu" / "cuda:0" as a Python str. */
PyObject *pfpy_device_str(pf_device *dev);

/* cuda_driver.c ------------------------------------------------------------ */

/* Events on CUDA streams without linking CUDA: libcuda.so.1 is opened on
 * first use. All return 0 on success and -1 with a Python exception set. */
typedef void *pfpy_cuevent;
int pfpy_cu_available(void);
/* Records a new event on `stream` (a cudaStream_t) of GPU `index`. */
int pfpy_cu_event_record(int index, void *stream, pfpy_cuevent *out);
/* Makes `stream` wait for `ev` (no host blocking). */
int pfpy_cu_stream_wait(int index, void *stream, pfpy_cuevent ev);
void pfpy_cu_event_destroy(int index, pfpy_cuevent ev);

/* tensor.c ----------------------------------------------------------------- */

/* pixflow.Tensor: owns one pf_tensor reference. Host tensors export the
 * buffer protocol (numpy.asarray(t) shares the memory); every tensor
 * exports DLPack. `ready` is the event recorded on `stream` after the work
 * that produced it (CUDA only; NULL when complete). */
typedef struct pfpy_tensor {
    PyObject_HEAD
    pf_tensor t;
    pf_device *device;
    void *stream;              /* cudaStream_t the producing work ran on, or NULL */
    pfpy_cuevent ready;
    PyObject *owner;           /* keeps an imported producer alive, or NULL */
    Py_ssize_t exports;        /* live buffer-protocol views */
} pfpy_tensor;

extern PyTypeObject pfpy_tensor_type;
int pfpy_tensor_init_type(PyObject *m);
/* A new pixflow.Tensor taking over the reference in *t (t is zeroed). */
PyObject *pfpy_tensor_new(pf_tensor *t, pf_device *dev);
/* Host tensors become NumPy arrays (zero copy, the array's base keeps the
 * tensor alive) when NumPy is importable; device tensors stay Tensors.
 * Steals the reference to `tensor`. */
PyObject *pfpy_to_output(PyObject *tensor);
const char *pfpy_dtype_name(pf_dtype dt);
int pfpy_dtype_parse(PyObject *obj, pf_dtype *out);

/* convert.c ---------------------------------------------------------------- */

/* A borrowed view of a Python array as a pf_tensor: buffer protocol (any
 * C-contiguous buffer), a pixflow.Tensor, or DLPack (__dlpack__), in that
 * order; anything else goes through numpy.ascontiguousarray (lists). The
 * pf_tensor holds a reference that keeps the Python memory alive (released
 * with the GIL taken, on whatever thread drops it last). */
typedef struct pfpy_array {
    pf_tensor t;
    pf_device *device;         /* where the memory lives */
    int from_dlpack;
} pfpy_array;

enum { PFPY_READ = 0, PFPY_WRITE = 1, PFPY_ROWS = 2 /* outer stride may be padded */ };
/* `what` names the argument in messages. `stream`: a cudaStream_t the data
 * will be used on (DLPack producers order their work before it), or NULL. */
int pfpy_array_get(PyObject *obj, int flags, const char *what, void *stream, pfpy_array *out);
void pfpy_array_release(pfpy_array *a);
/* The device whose memory `obj` lives in (pixflow.Tensor, DLPack's
 * __dlpack_device__; the CPU for everything else). */
int pfpy_object_device(PyObject *obj, pf_device **dev);
/* Wraps `size` bytes from view->buf into a pf_buffer that releases the
 * Py_buffer (with the GIL) when its last reference goes. On failure the
 * Py_buffer is released and a Python exception set. */
int pfpy_buffer_wrap(Py_buffer *view, size_t size, pf_buffer **out);

/* Frames: an image array -> pf_frame sharing its memory.
 *   [H, W, 3] u8 rgb24 (or bgr24 with format="bgr24"), [H, W, 4] rgba,
 *   [H, W] or [H, W, 1] gray8, [H * 3 / 2, W] nv12 or i420 (format given;
 *   even sizes). Rows may be padded (a row slice of a bigger image). */
int pfpy_frame_from_array(PyObject *obj, const char *format, const char *what, void *stream,
                          pf_frame *out, pf_device **dev);
/* The same for an array already imported (PFPY_ROWS); `a` stays the
 * caller's. */
int pfpy_frame_from_tensor(const pfpy_array *a, const char *format, const char *what,
                           pf_frame *out, pf_device **dev);
/* The array shape a frame of `fmt` w x h is returned in, and the frame
 * wrapped around a new tensor of that shape (host or ctx's device). */
int pfpy_frame_alloc_array(pf_pixfmt fmt, int w, int h, pfpy_ctx *ctx, pf_frame *frame,
                           PyObject **tensor_obj);
/* A frame as an array object (zero copy when its planes allow; YUV frames
 * whose planes are not one [H * 3 / 2, W] block are copied). `owner` (may
 * be NULL) is kept alive as long as the array: the object whose pools the
 * frame's memory came from (a pipeline, a segmenter), which must outlive
 * the buffers it handed out. */
PyObject *pfpy_frame_to_array(const pf_frame *f, PyObject *owner);
int pfpy_pixfmt_parse(const char *name, pf_pixfmt *out);

/* dlpack.c ----------------------------------------------------------------- */

int pfpy_dlpack_init(PyObject *m);
PyObject *pfpy_tensor_dlpack(PyObject *self, PyObject *args, PyObject *kw);
PyObject *pfpy_tensor_dlpack_device(PyObject *self, PyObject *unused);
PyObject *pfpy_from_dlpack(PyObject *self, PyObject *obj);
/* Imports obj.__dlpack__(stream=...) as a pf_tensor view (the capsule's
 * deleter runs when the view's last reference goes). */
int pfpy_dlpack_import(PyObject *obj, void *stream, pf_tensor *out, pf_device **dev);

/* model.c, ops.c, pipeline.c, jobs.c ------------------------------------------ */

int pfpy_model_init(PyObject *m);
extern PyMethodDef pfpy_ops_methods[];
int pfpy_pipeline_init(PyObject *m);
int pfpy_jobs_init(PyObject *m);

/* Helpers ------------------------------------------------------------------- */

/* The current exception as one object (cleared), and setting it back:
 * PyErr_GetRaisedException/SetRaisedException from Python 3.12 on, the
 * older fetch/restore triple before (deprecated in 3.12). */
static inline PyObject *pfpy_take_exception(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (v && tb) PyException_SetTraceback(v, tb);
    Py_XDECREF(t);
    Py_XDECREF(tb);
    return v;
#endif
}

static inline void pfpy_restore_exception(PyObject *exc)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(exc);
#else
    PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(exc)), exc, PyException_GetTraceback(exc));
#endif
}

/* Enum names: returns 0 and sets *out, or -1 with ValueError naming the
 * argument and the choices. names is NULL-terminated; values parallel. */
int pfpy_parse_choice(PyObject *obj, const char *what, const char *const *names,
                      const int *values, int *out);

#endif
