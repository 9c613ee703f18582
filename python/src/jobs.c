/* jobs.c - the flagship jobs (pixflow/jobs.h) as Python calls:
 * pixflow.segment(), pixflow.reproject() (files, folders, videos, streams;
 * run on the library's threads) and pixflow.Segmenter (one frame at a time
 * on the caller's thread).
 *
 * Waiting releases the GIL and wakes every 100 ms to run signal handlers:
 * Ctrl-C cancels the job (pf_job_cancel_async: what is in flight is
 * finished and written), waits for it to wind down and raises
 * KeyboardInterrupt. The job's messages (a skipped image, a failed output)
 * are collected and kept on the Job (`messages`); a failed job raises the
 * pixflow error of its status with them.
 *
 * Compiled only when the library has the jobs API (include/pixflow/jobs.h):
 * without it the package has no jobs and says so in pixflow.build_info(). */
#include "pfpy.h"

#if defined(__has_include)
#if __has_include(<pixflow/jobs.h>)
#define PFPY_HAVE_JOBS 1
#endif
#endif

#ifdef PFPY_HAVE_JOBS
#include <pixflow/jobs.h>

#include <pthread.h>

/* Messages, from any of the job's threads (no GIL there). */
typedef struct {
    pthread_mutex_t lock;
    char **lines;
    int n, cap;
} msg_log;

static void msg_add(void *user, pf_log_level level, const char *msg)
{
    msg_log *l = user;
    pthread_mutex_lock(&l->lock);
    if (l->n < 10000) {
        if (l->n == l->cap) {
            int cap = l->cap ? 2 * l->cap : 16;
            char **p = realloc(l->lines, (size_t)cap * sizeof *p);
            if (p) l->lines = p, l->cap = cap;
        }
        if (l->n < l->cap) {
            char *s = strdup(msg);
            if (s) l->lines[l->n++] = s;
        }
    }
    pthread_mutex_unlock(&l->lock);
    (void)level;
}

static PyObject *msg_list(msg_log *l)
{
    pthread_mutex_lock(&l->lock);
    PyObject *list = PyList_New(l->n);
    for (int i = 0; list && i < l->n; i++) {
        PyObject *s = PyUnicode_DecodeUTF8(l->lines[i], (Py_ssize_t)strlen(l->lines[i]), "replace");
        if (!s) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, s);
    }
    pthread_mutex_unlock(&l->lock);
    return list;
}

static void msg_free(msg_log *l)
{
    for (int i = 0; i < l->n; i++) free(l->lines[i]);
    free(l->lines);
    pthread_mutex_destroy(&l->lock);
}

/* pixflow.Job ---------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    pf_job *job;
    msg_log log;
    int ended;
    pf_status status;
    char error[1024];
} pfpy_job;

static PyTypeObject job_type;

static void job_dealloc(PyObject *self)
{
    pfpy_job *j = (pfpy_job *)self;
    if (j->job) {
        Py_BEGIN_ALLOW_THREADS
        pf_job_destroy(&j->job);     /* cancels a running job, finishes its outputs */
        Py_END_ALLOW_THREADS
    }
    msg_free(&j->log);
    Py_TYPE(self)->tp_free(self);
}

static pfpy_job *job_alloc(void)
{
    pfpy_job *j = (pfpy_job *)job_type.tp_alloc(&job_type, 0);
    if (j) pthread_mutex_init(&j->log.lock, NULL);
    return j;
}

static PyObject *job_messages(PyObject *self, void *c)
{
    return msg_list(&((pfpy_job *)self)->log);
}

static PyObject *result_dict(const pf_job_result *r)
{
    PyObject *d = Py_BuildValue(
        "{s:s,s:s,s:z,s:z,s:z,s:O,s:L,s:L,s:L,s:L,s:d,s:d,s:d,s:d,s:z,s:z,s:z,s:z,s:i,s:O}",
        "kind", r->kind == PF_JOB_SEGMENT ? "segment" : "reproject", "status",
        pf_job_status_name(r->status), "input", r->input, "output", r->output, "mask_out",
        r->mask_out, "video", r->video ? Py_True : Py_False, "frames", (long long)r->frames,
        "images", (long long)r->images, "failed", (long long)r->failed, "dropped",
        (long long)r->dropped, "fps", r->fps, "elapsed_s", r->elapsed_s, "latency_p50_ms",
        r->latency_p50_ms, "latency_p99_ms", r->latency_p99_ms, "decoder", r->decoder, "device",
        r->device, "device_name", r->device_name, "model", r->model, "batch", r->batch,
        "latency_mode", r->latency_mode ? Py_True : Py_False);
    if (!d) return NULL;
    if (r->num_streams > 0) {
        PyObject *streams = PyList_New(r->num_streams);
        for (int i = 0; streams && i < r->num_streams; i++) {
            const pf_job_stream *s = &r->streams[i];
            PyObject *e = Py_BuildValue("{s:z,s:z,s:O,s:L,s:L,s:d,s:z}", "input", s->input,
                                        "output", s->output, "output_failed",
                                        s->output_failed ? Py_True : Py_False, "frames",
                                        (long long)s->frames, "dropped", (long long)s->dropped,
                                        "fps", s->fps, "error", s->error);
            if (!e) Py_CLEAR(streams);
            else PyList_SET_ITEM(streams, i, e);
        }
        if (!streams || PyDict_SetItemString(d, "streams", streams) < 0) Py_CLEAR(d);
        Py_XDECREF(streams);
    }
    if (d && r->kind == PF_JOB_REPROJECT) {
        PyObject *rp = Py_BuildValue("{s:i,s:K,s:K,s:K}", "views_per_image",
                                     r->reproject.views_per_image, "images_done",
                                     (unsigned long long)r->reproject.images_done,
                                     "images_failed",
                                     (unsigned long long)r->reproject.images_failed,
                                     "files_written",
                                     (unsigned long long)r->reproject.files_written);
        if (!rp || PyDict_SetItemString(d, "reproject", rp) < 0) Py_CLEAR(d);
        Py_XDECREF(rp);
    }
    return d;
}

/* Raises the job's failure with its messages. */
static PyObject *raise_job(pfpy_job *j, pf_status st, const char *what)
{
    PyObject *msgs = msg_list(&j->log);
    Py_ssize_t n = msgs ? PyList_GET_SIZE(msgs) : 0;
    const char *last = n > 0 ? PyUnicode_AsUTF8(PyList_GET_ITEM(msgs, n - 1)) : NULL;
    pfpy_raise_fmt(st, "%s: %s", what, last ? last : (*j->error ? j->error : pf_status_str(st)));
    Py_XDECREF(msgs);
    return NULL;
}

/* Waits; 1 ended, 0 timed out, -1 exception (KeyboardInterrupt: cancelled
 * and wound down). timeout < 0 = forever. */
static int job_wait_impl(pfpy_job *j, double timeout_s)
{
    if (j->ended) return 1;
    double waited = 0;
    for (;;) {
        int64_t slice = 100000;
        if (timeout_s >= 0 && (timeout_s - waited) * 1e6 < (double)slice)
            slice = (int64_t)((timeout_s - waited) * 1e6);
        if (slice < 0) slice = 0;
        pf_status st;
        Py_BEGIN_ALLOW_THREADS
        st = pf_job_wait(j->job, slice);
        if (st < 0) snprintf(j->error, sizeof j->error, "%s", pf_last_error());
        Py_END_ALLOW_THREADS
        if (st != PF_TIMEOUT) {
            j->ended = 1;
            j->status = st;
            return 1;
        }
        waited += (double)slice / 1e6;
        if (PyErr_CheckSignals() < 0) {
            pf_job_cancel_async(j->job);
            Py_BEGIN_ALLOW_THREADS
            st = pf_job_wait(j->job, -1);
            Py_END_ALLOW_THREADS
            j->ended = 1;
            j->status = st;
            return -1;
        }
        if (timeout_s >= 0 && waited >= timeout_s) return 0;
    }
}

static PyObject *job_result_or_raise(pfpy_job *j)
{
    if (j->status < 0) return raise_job(j, j->status, "job failed");
    pf_job_result r;
    pf_status st = pf_job_get_result(j->job, &r);
    if (st != PF_OK) return pfpy_raise(st, "job result");
    PyObject *d = result_dict(&r);
    PyObject *m = d ? msg_list(&j->log) : NULL;
    if (m && PyDict_SetItemString(d, "messages", m) < 0) Py_CLEAR(d);
    Py_XDECREF(m);
    return d;
}

static PyObject *job_wait(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"timeout", NULL};
    PyObject *t = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:wait", kwlist, &t)) return NULL;
    double timeout = t == Py_None ? -1 : PyFloat_AsDouble(t);
    if (timeout == -1 && PyErr_Occurred()) return NULL;
    pfpy_job *j = (pfpy_job *)self;
    int r = job_wait_impl(j, timeout);
    if (r < 0) return NULL;
    if (r == 0) Py_RETURN_NONE;
    return job_result_or_raise(j);
}

static PyObject *job_progress(PyObject *self, PyObject *unused)
{
    pf_job_progress p;
    pf_status st = pf_job_get_progress(((pfpy_job *)self)->job, &p);
    if (st != PF_OK) return pfpy_raise(st, "progress");
    return Py_BuildValue("{s:L,s:L,s:L,s:d}", "done", (long long)p.done, "failed",
                         (long long)p.failed, "total", (long long)p.total, "elapsed_s",
                         p.elapsed_s);
}

static PyObject *job_cancel(PyObject *self, PyObject *unused)
{
    pf_job_cancel_async(((pfpy_job *)self)->job);
    Py_RETURN_NONE;
}

static PyObject *job_done(PyObject *self, void *c)
{
    pfpy_job *j = (pfpy_job *)self;
    if (!j->ended && job_wait_impl(j, 0) < 0) return NULL;
    return PyBool_FromLong(j->ended);
}

static PyObject *job_enter(PyObject *self, PyObject *unused) { return Py_NewRef(self); }

static PyObject *job_exit(PyObject *self, PyObject *args)
{
    pfpy_job *j = (pfpy_job *)self;
    if (!j->ended) {
        pf_job_cancel_async(j->job);
        if (job_wait_impl(j, -1) < 0) return NULL;
    }
    Py_RETURN_FALSE;
}

static PyGetSetDef job_getset[] = {
    {"messages", job_messages, NULL, "What the job reported so far (skipped inputs, ...).", NULL},
    {"done", job_done, NULL, "Whether the job has ended.", NULL},
    {NULL}};

static PyMethodDef job_methods[] = {
    {"wait", (PyCFunction)(void (*)(void))job_wait, METH_VARARGS | METH_KEYWORDS,
     "wait(timeout=None)\n--\n\nWaits for the end (seconds; None = forever) and returns the "
     "result dict, or None on timeout. Raises the job's error; Ctrl-C cancels the job."},
    {"progress", job_progress, METH_NOARGS, "{'done', 'failed', 'total', 'elapsed_s'} so far."},
    {"cancel", job_cancel, METH_NOARGS,
     "Stops early: what is in flight is finished and written (status 'interrupted')."},
    {"__enter__", job_enter, METH_NOARGS, NULL},
    {"__exit__", job_exit, METH_VARARGS, NULL},
    {NULL}};

static PyTypeObject job_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pixflow.Job",
    .tp_basicsize = sizeof(pfpy_job),
    .tp_dealloc = job_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A running segment or reproject job (pixflow.segment(..., wait=False)).",
    .tp_methods = job_methods,
    .tp_getset = job_getset,
};

/* Arguments ---------------------------------------------------------------------------- */

/* A str/PathLike or a list of them -> a NULL-terminated array of UTF-8
 * strings held by `keep` (a list of bytes objects). */
static const char **path_list(PyObject *obj, PyObject *keep, int *n)
{
    PyObject *seq;
    if (PyUnicode_Check(obj) || PyBytes_Check(obj) || PyObject_HasAttrString(obj, "__fspath__"))
        seq = PyTuple_Pack(1, obj);
    else
        seq = PySequence_Fast(obj, "inputs: expected a path or a list of paths");
    if (!seq) return NULL;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    const char **out = PyMem_Calloc((size_t)len + 1, sizeof *out);
    for (Py_ssize_t i = 0; out && i < len; i++) {
        PyObject *b = NULL;
        if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(seq, i), &b) ||
            PyList_Append(keep, b) < 0) {
            Py_XDECREF(b);
            PyMem_Free(out);
            Py_DECREF(seq);
            return NULL;
        }
        out[i] = PyBytes_AS_STRING(b);
        Py_DECREF(b);
    }
    Py_DECREF(seq);
    if (!out) PyErr_NoMemory();
    *n = (int)len;
    return out;
}

static int opt_path(PyObject *obj, PyObject *keep, const char **out)
{
    if (!obj || obj == Py_None) return 0;
    PyObject *b = NULL;
    if (!PyUnicode_FSConverter(obj, &b) || PyList_Append(keep, b) < 0) {
        Py_XDECREF(b);
        return -1;
    }
    *out = PyBytes_AS_STRING(b);
    Py_DECREF(b);
    return 0;
}

typedef pf_status (*start_fn)(const void *params, pf_job **out);

static pf_status start_segment(const void *p, pf_job **out) { return pf_segment_start(p, out); }
static pf_status start_reproject(const void *p, pf_job **out)
{
    return pf_reproject_start(p, out);
}

/* Starts a job (params already point their messages at j's log), then
 * waits (wait=True: the result dict) or returns the Job. Consumes j. */
static PyObject *start_job(pfpy_job *j, start_fn fn, const void *params, int wait,
                           const char *what)
{
    pf_status st;
    Py_BEGIN_ALLOW_THREADS
    st = fn(params, &j->job);
    Py_END_ALLOW_THREADS
    if (st != PF_OK) {
        snprintf(j->error, sizeof j->error, "%s", pf_last_error());
        PyObject *r = raise_job(j, st, what);
        Py_DECREF(j);
        return r;
    }
    if (!wait) return (PyObject *)j;
    PyObject *r = job_wait_impl(j, -1) < 0 ? NULL : job_result_or_raise(j);
    Py_DECREF(j);
    return r;
}

static PyObject *py_segment(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"inputs", "output", "mask_out", "model", "device", "background",
                             "alpha", "batch", "latency", "smooth", "max_frames", "trace",
                             "codec", "preset", "crf", "no_audio", "no_overwrite", "wait",
                             NULL};
    PyObject *inputs, *output = Py_None, *mask_out = Py_None, *model = Py_None,
             *device = Py_None, *background = Py_None, *trace = Py_None;
    const char *codec = NULL, *preset = NULL;
    int alpha = 0, batch = 0, latency = 0, crf = -1, no_audio = 0, no_overwrite = 0, wait = 1;
    double smooth = -1;
    long long max_frames = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$OOOOpipdLOzzippp:segment", kwlist, &inputs,
                                     &output, &mask_out, &model, &device, &background, &alpha,
                                     &batch, &latency, &smooth, &max_frames, &trace, &codec,
                                     &preset, &crf, &no_audio, &no_overwrite, &wait))
        return NULL;
    PyObject *keep = PyList_New(0);
    if (!keep) return NULL;
    pf_segment_params p = pf_segment_params_default();
    int n = 0;
    const char **in = path_list(inputs, keep, &n);
    pfpy_job *j = NULL;
    PyObject *r = NULL;
    if (!in || opt_path(output, keep, &p.output) < 0 || opt_path(mask_out, keep, &p.mask_out) < 0 ||
        opt_path(model, keep, &p.model) < 0 || opt_path(background, keep, &p.background) < 0 ||
        opt_path(trace, keep, &p.trace) < 0)
        goto done;
    if (device != Py_None && pfpy_device_parse(device, &p.device) < 0) goto done;
    p.inputs = in;
    p.num_inputs = n;
    p.alpha = alpha;
    p.batch = batch;
    p.latency = latency;
    if (smooth >= 0) p.smooth = (float)smooth;
    p.max_frames = max_frames;
    p.codec = codec;
    p.preset = preset;
    p.crf = crf;
    p.no_audio = no_audio;
    p.no_overwrite = no_overwrite;
    if (!(j = job_alloc())) goto done;
    p.on_message = msg_add;
    p.user = &j->log;
    r = start_job(j, start_segment, &p, wait, "segment");
done:
    PyMem_Free(in);
    Py_DECREF(keep);
    return r;
}

static int parse_views(PyObject *views_o, pf_view *views, int *n)
{
    PyObject *seq = PySequence_Fast(views_o, "views: expected a list of views");
    if (!seq) return -1;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    if (len < 1 || len > PF_REPROJECT_MAX_VIEWS) {
        Py_DECREF(seq);
        pfpy_raise_fmt(PF_ERR_INVALID, "views: %zd views (1..%d)", len, PF_REPROJECT_MAX_VIEWS);
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        PyObject *v = PySequence_Fast_GET_ITEM(seq, i);
        pf_view *w = &views[i];
        memset(w, 0, sizeof *w);
        w->fov = 90, w->width = 640, w->height = 480;
        int ok;
        if (PyDict_Check(v)) {
            PyObject *empty = PyTuple_New(0);
            static char *keys[] = {"yaw", "pitch", "roll", "fov", "width", "height", NULL};
            ok = empty && PyArg_ParseTupleAndKeywords(empty, v, "|ffffii", keys, &w->yaw,
                                                      &w->pitch, &w->roll, &w->fov, &w->width,
                                                      &w->height);
            Py_XDECREF(empty);
        } else {
            ok = PyArg_ParseTuple(v, "ffffii", &w->yaw, &w->pitch, &w->roll, &w->fov, &w->width,
                                  &w->height);
        }
        if (!ok) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    *n = (int)len;
    return 0;
}

static PyObject *py_reproject(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"inputs", "output_dir", "views", "cube", "cube_size", "interp",
                             "format", "quality", "every", "device", "trace", "no_overwrite",
                             "wait", NULL};
    PyObject *inputs, *out_dir, *views_o = Py_None, *cube_o = Py_None, *interp_o = NULL,
             *format_o = NULL, *device = Py_None, *trace = Py_None;
    int cube_size = 0, quality = 90, every = 1, no_overwrite = 0, wait = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O$OiOOiiOOpp:reproject", kwlist, &inputs,
                                     &out_dir, &views_o, &cube_o, &cube_size, &interp_o,
                                     &format_o, &quality, &every, &device, &trace,
                                     &no_overwrite, &wait))
        return NULL;
    static const char *const cube_names[] = {"faces", "3x2", "1x6", NULL};
    static const int cube_values[] = {PF_REPROJECT_CUBE_FACES, PF_REPROJECT_CUBE_3X2,
                                      PF_REPROJECT_CUBE_1X6};
    static const char *const interp_names[] = {"nearest", "bilinear", NULL};
    static const int interp_values[] = {PF_INTERP_NEAREST, PF_INTERP_BILINEAR};
    static const char *const fmt_names[] = {"jpeg", "jpg", "png", NULL};
    static const int fmt_values[] = {PF_IMAGE_JPEG, PF_IMAGE_JPEG, PF_IMAGE_PNG};
    pf_reproject_params p = pf_reproject_params_default();
    int cube = PF_REPROJECT_NO_CUBE, interp = p.interp, fmt = p.format;
    pf_view views[PF_REPROJECT_MAX_VIEWS];
    int nv = 0;
    if (pfpy_parse_choice(cube_o, "cube", cube_names, cube_values, &cube) < 0 ||
        pfpy_parse_choice(interp_o, "interp", interp_names, interp_values, &interp) < 0 ||
        pfpy_parse_choice(format_o, "format", fmt_names, fmt_values, &fmt) < 0)
        return NULL;
    if (views_o != Py_None && parse_views(views_o, views, &nv) < 0) return NULL;
    PyObject *keep = PyList_New(0);
    if (!keep) return NULL;
    int n = 0;
    const char **in = path_list(inputs, keep, &n);
    pfpy_job *j = NULL;
    PyObject *r = NULL;
    if (!in || opt_path(out_dir, keep, &p.output_dir) < 0 || opt_path(trace, keep, &p.trace) < 0)
        goto done;
    if (device != Py_None && pfpy_device_parse(device, &p.device) < 0) goto done;
    p.inputs = in;
    p.num_inputs = n;
    p.views = nv ? views : NULL;
    p.num_views = nv;
    p.cube = (pf_reproject_cube)cube;
    if (cube_size > 0) p.cube_size = cube_size;
    p.interp = (pf_interp)interp;
    p.format = (pf_image_format)fmt;
    p.quality = quality;
    p.every = every;
    p.no_overwrite = no_overwrite;
    if (!(j = job_alloc())) goto done;
    p.on_message = msg_add;
    p.user = &j->log;
    r = start_job(j, start_reproject, &p, wait, "reproject");
done:
    PyMem_Free(in);
    Py_DECREF(keep);
    return r;
}

/* pixflow.Segmenter ------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    pf_segmenter *seg;
    pthread_mutex_t lock;      /* one thread at a time per segmenter */
    int lock_ready;
} pfpy_segmenter;

static void segmenter_dealloc(PyObject *self)
{
    pfpy_segmenter *s = (pfpy_segmenter *)self;
    Py_BEGIN_ALLOW_THREADS
    pf_segmenter_destroy(&s->seg);
    Py_END_ALLOW_THREADS
    if (s->lock_ready) pthread_mutex_destroy(&s->lock);
    Py_TYPE(self)->tp_free(self);
}

static int segmenter_init(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"model", "device", "background", "alpha", "smooth", NULL};
    pfpy_segmenter *s = (pfpy_segmenter *)self;
    PyObject *model = Py_None, *device = Py_None, *background = Py_None;
    int alpha = 0;
    double smooth = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOpd:Segmenter", kwlist, &model, &device,
                                     &background, &alpha, &smooth))
        return -1;
    if (s->seg) {
        PyErr_SetString(PyExc_RuntimeError, "Segmenter is already initialised");
        return -1;
    }
    PyObject *keep = PyList_New(0);
    if (!keep) return -1;
    pf_segmenter_params p = pf_segmenter_params_default();
    int r = -1;
    if (opt_path(model, keep, &p.model) < 0 || opt_path(background, keep, &p.background) < 0)
        goto done;
    if (device != Py_None && pfpy_device_parse(device, &p.device) < 0) goto done;
    p.alpha = alpha;
    if (smooth >= 0) p.smooth = (float)smooth;
    pf_status st;
    Py_BEGIN_ALLOW_THREADS
    st = pf_segmenter_create(&p, &s->seg);
    Py_END_ALLOW_THREADS
    if (st != PF_OK) {
        pfpy_raise(st, "Segmenter");
        goto done;
    }
    pthread_mutex_init(&s->lock, NULL);
    s->lock_ready = 1;
    r = 0;
done:
    Py_DECREF(keep);
    return r;
}

static PyObject *segmenter_process(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"frame", "format", "composite", "mask", NULL};
    pfpy_segmenter *s = (pfpy_segmenter *)self;
    PyObject *frame_o;
    const char *format = NULL;
    int want_comp = 1, want_mask = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$zpp:process", kwlist, &frame_o, &format,
                                     &want_comp, &want_mask))
        return NULL;
    if (!s->seg) {
        PyErr_SetString(PyExc_RuntimeError, "Segmenter was not initialised");
        return NULL;
    }
    pf_frame in = {0}, comp = {0}, mask = {0};
    if (pfpy_frame_from_array(frame_o, format, "frame", NULL, &in, NULL) < 0) return NULL;
    pf_status st;
    char err[1024] = "";
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&s->lock);
    st = pf_segmenter_process(s->seg, &in, want_comp ? &comp : NULL, want_mask ? &mask : NULL);
    if (st != PF_OK) snprintf(err, sizeof err, "%s", pf_last_error());
    pthread_mutex_unlock(&s->lock);
    Py_END_ALLOW_THREADS
    pf_frame_unref(&in);
    PyObject *r = NULL;
    if (st != PF_OK) {
        pfpy_raise_fmt(st, "%s", *err ? err : "Segmenter.process");
    } else {
        PyObject *c = want_comp ? pfpy_frame_to_array(&comp, self) : Py_NewRef(Py_None);
        PyObject *m = c && want_mask ? pfpy_frame_to_array(&mask, self)
                                     : c ? Py_NewRef(Py_None) : NULL;
        if (c && m) r = PyTuple_Pack(2, c, m);
        Py_XDECREF(c);
        Py_XDECREF(m);
    }
    pf_frame_unref(&comp);
    pf_frame_unref(&mask);
    return r;
}

static PyMethodDef segmenter_methods[] = {
    {"process", (PyCFunction)(void (*)(void))segmenter_process, METH_VARARGS | METH_KEYWORDS,
     "process(frame, *, format=None, composite=True, mask=True)\n--\n\n"
     "Segments one image array: returns (composite, mask), the frame with its background "
     "replaced ([H, W, 3], or [H, W, 4] with alpha) and the 8-bit mask [H, W] (None for what "
     "was not asked). The GIL is released meanwhile; one thread at a time per Segmenter."},
    {NULL}};

static PyTypeObject segmenter_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pixflow.Segmenter",
    .tp_basicsize = sizeof(pfpy_segmenter),
    .tp_dealloc = segmenter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Segmenter(model=None, device=None, background=None, alpha=False, smooth=1.0)\n--\n\n"
              "Body segmentation one frame at a time on the calling thread: the segment job's "
              "chain (preprocess, model, mask, composite) without a pipeline. model: None or "
              "'selfie', 'landscape', or a model file; background: None (blur), '#RRGGBB', "
              "'none' or an image file; smooth < 1 blends each mask with the previous one "
              "(video).",
    .tp_methods = segmenter_methods,
    .tp_init = segmenter_init,
    .tp_new = PyType_GenericNew,
};

static PyObject *py_model_find(PyObject *self, PyObject *args)
{
    const char *name = NULL;
    if (!PyArg_ParseTuple(args, "|z:model_find", &name)) return NULL;
    char path[4096];
    pf_status st;
    Py_BEGIN_ALLOW_THREADS
    st = pf_model_find(name, path, sizeof path);
    Py_END_ALLOW_THREADS
    if (st != PF_OK) return pfpy_raise(st, "model_find");
    return PyUnicode_DecodeFSDefault(path);
}

static PyMethodDef jobs_methods[] = {
    {"segment", (PyCFunction)(void (*)(void))py_segment, METH_VARARGS | METH_KEYWORDS,
     "segment(inputs, output=None, *, mask_out=None, model=None, device=None, background=None, "
     "alpha=False, batch=0, latency=False, smooth=None, max_frames=0, trace=None, codec=None, "
     "preset=None, crf=-1, no_audio=False, no_overwrite=False, wait=True)\n--\n\n"
     "Body segmentation of images, folders, globs, videos or streams (what `pixflow segment` "
     "does). Returns the result dict (status, frames, fps, outputs, messages), or with "
     "wait=False a running pixflow.Job. Ctrl-C cancels it; outputs written so far are "
     "complete."},
    {"reproject", (PyCFunction)(void (*)(void))py_reproject, METH_VARARGS | METH_KEYWORDS,
     "reproject(inputs, output_dir, views=None, *, cube=None, cube_size=0, interp='bilinear', "
     "format='jpeg', quality=90, every=1, device=None, trace=None, no_overwrite=False, "
     "wait=True)\n--\n\n"
     "360-degree equirect images or videos to perspective views (views: dicts or (yaw, pitch, "
     "roll, fov, width, height) tuples) or cube maps (cube 'faces', '3x2', '1x6'), one file "
     "per view in output_dir (what `pixflow reproject` does). Returns the result dict, or a "
     "pixflow.Job with wait=False."},
    {"model_find", py_model_find, METH_VARARGS,
     "model_find(name=None)\n--\n\nThe path of a model by name ('selfie', 'landscape') or a "
     "checked path: $PIXFLOW_MODELS, the installed models, the source tree."},
    {NULL}};

int pfpy_jobs_init(PyObject *m)
{
    if (PyType_Ready(&job_type) < 0 || PyType_Ready(&segmenter_type) < 0) return -1;
    if (PyModule_AddObjectRef(m, "Job", (PyObject *)&job_type) < 0 ||
        PyModule_AddObjectRef(m, "Segmenter", (PyObject *)&segmenter_type) < 0)
        return -1;
    return PyModule_AddFunctions(m, jobs_methods);
}

#else /* no jobs API in this libpixflow */

int pfpy_jobs_init(PyObject *m)
{
    return 0;
}

#endif
