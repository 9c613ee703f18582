/* pipeline.c - pixflow.Pipeline and pixflow.Item: pipelines from YAML or
 * built in code, Python callables as stages, iteration over outputs.
 *
 * Threads and the GIL. Stages run on pixflow's worker threads. A Python
 * stage (a callable or a source iterable) takes the GIL only around the
 * call into Python; built-in stages never take it. Every wait of the
 * calling thread (next(), wait(), run()) releases the GIL and wakes every
 * 100 ms to run signal handlers, so Ctrl-C cancels the pipeline and raises
 * KeyboardInterrupt.
 *
 * Outputs. p.output("stage") adds a collector stage fed by that stage; its
 * items go into one bounded queue the iterator reads (an item names the
 * stage it came from). When every collector has stopped the queue closes
 * and iteration ends; then the pipeline's status is checked, and a stage
 * error is raised (the Python exception itself when a Python stage raised
 * it). Items nobody iterates over are dropped by wait() and run(). */
#include "pfpy.h"

#include <stdatomic.h>
#include <structmember.h>

/* pixflow.Item ------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    PyObject *frame, *tensor, *format, *stage;
    long long source, seq, pts;
} pfpy_item;

static PyMemberDef item_members[] = {
    {"frame", T_OBJECT, offsetof(pfpy_item, frame), 0,
     "The image: a NumPy array ([H, W, 3], [H, W, 4], [H, W], or [H * 3 / 2, W] for "
     "nv12/i420), a pixflow.Tensor in GPU memory, or None."},
    {"tensor", T_OBJECT, offsetof(pfpy_item, tensor), 0,
     "A tensor travelling with the item, or None."},
    {"format", T_OBJECT, offsetof(pfpy_item, format), 0,
     "The frame's pixel format ('rgb24', 'nv12', ...); None = from the array's shape."},
    {"stage", T_OBJECT, offsetof(pfpy_item, stage), 0, "The stage whose output this is."},
    {"source", T_LONGLONG, offsetof(pfpy_item, source), 0, "Source (stream) id."},
    {"seq", T_LONGLONG, offsetof(pfpy_item, seq), 0, "Sequence number within its source."},
    {"pts", T_LONGLONG, offsetof(pfpy_item, pts), 0, "Presentation time stamp (frame units)."},
    {NULL}};

static void item_dealloc(PyObject *self)
{
    pfpy_item *it = (pfpy_item *)self;
    Py_XDECREF(it->frame);
    Py_XDECREF(it->tensor);
    Py_XDECREF(it->format);
    Py_XDECREF(it->stage);
    Py_TYPE(self)->tp_free(self);
}

static int item_init(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"frame", "tensor", "source", "seq", "format", NULL};
    pfpy_item *it = (pfpy_item *)self;
    PyObject *frame = Py_None, *tensor = Py_None, *format = Py_None;
    long long source = 0, seq = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOLLO:Item", kwlist, &frame, &tensor, &source,
                                     &seq, &format))
        return -1;
    Py_XSETREF(it->frame, Py_NewRef(frame));
    Py_XSETREF(it->tensor, Py_NewRef(tensor));
    Py_XSETREF(it->format, Py_NewRef(format));
    if (!it->stage) it->stage = Py_NewRef(Py_None);
    it->source = source;
    it->seq = seq;
    it->pts = PF_NOPTS;
    return 0;
}

static PyObject *item_repr(PyObject *self)
{
    pfpy_item *it = (pfpy_item *)self;
    return PyUnicode_FromFormat("pixflow.Item(stage=%R, source=%lld, seq=%lld, frame=%s, "
                                "tensor=%s)",
                                it->stage ? it->stage : Py_None, it->source, it->seq,
                                it->frame && it->frame != Py_None ? "..." : "None",
                                it->tensor && it->tensor != Py_None ? "..." : "None");
}

static PyTypeObject item_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pixflow.Item",
    .tp_basicsize = sizeof(pfpy_item),
    .tp_dealloc = item_dealloc,
    .tp_repr = item_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Item(frame=None, tensor=None, source=0, seq=-1, format=None)\n--\n\n"
              "What flows through a pipeline: a frame and/or a tensor with its source and "
              "sequence number. Arrays share pixflow's memory.",
    .tp_members = item_members,
    .tp_init = item_init,
    .tp_new = PyType_GenericNew,
};

/* pf_item -> Item (new references to the memory). Needs the GIL. */
static PyObject *item_to_py(const pf_item *in, const char *stage, PyObject *owner)
{
    pfpy_item *it = (pfpy_item *)PyType_GenericNew(&item_type, NULL, NULL);
    if (!it) return NULL;
    it->source = in->source;
    it->seq = in->seq;
    it->pts = in->frame.pts;
    it->stage = stage ? PyUnicode_FromString(stage) : Py_NewRef(Py_None);
    it->format = in->frame.buf[0] ? PyUnicode_FromString(pf_pixfmt_name(in->frame.format))
                                  : Py_NewRef(Py_None);
    it->frame = in->frame.buf[0] ? pfpy_frame_to_array(&in->frame, owner) : Py_NewRef(Py_None);
    if (in->tensor.buf) {
        pf_tensor t = {0};
        pf_tensor_ref(&t, &in->tensor);
        PyObject *to = pfpy_tensor_new(&t, NULL);
        if (to && owner) ((pfpy_tensor *)to)->owner = Py_NewRef(owner);
        it->tensor = pfpy_to_output(to);
    } else {
        it->tensor = Py_NewRef(Py_None);
    }
    if (!it->stage || !it->format || !it->frame || !it->tensor) {
        Py_DECREF(it);
        return NULL;
    }
    return (PyObject *)it;
}

/* An Item or a bare array (a tensor) -> pf_item; `like` gives source and
 * seq to bare arrays. Needs the GIL. */
static int item_from_py(PyObject *obj, const pf_item *like, pf_item *out)
{
    memset(out, 0, sizeof *out);
    if (like) {
        out->source = like->source;
        out->seq = like->seq;
        out->t_source_ns = like->t_source_ns;
        out->priority = like->priority;
    }
    PyObject *frame = NULL, *tensor = NULL, *format = NULL;
    if (PyObject_TypeCheck(obj, &item_type)) {
        pfpy_item *it = (pfpy_item *)obj;
        frame = it->frame, tensor = it->tensor, format = it->format;
        out->source = (int32_t)it->source;
        if (it->seq >= 0) out->seq = it->seq;
    } else {
        tensor = obj;
    }
    const char *fmt = format && PyUnicode_Check(format) ? PyUnicode_AsUTF8(format) : NULL;
    if (frame && frame != Py_None) {
        if (pfpy_frame_from_array(frame, fmt, "item.frame", NULL, &out->frame, NULL) < 0) return -1;
        if (like) pf_frame_copy_props(&out->frame, &like->frame);
        if (PyObject_TypeCheck(obj, &item_type) && ((pfpy_item *)obj)->pts != PF_NOPTS)
            out->frame.pts = ((pfpy_item *)obj)->pts;
    }
    if (tensor && tensor != Py_None) {
        pfpy_array a;
        if (pfpy_array_get(tensor, PFPY_READ, "item.tensor", NULL, &a) < 0) {
            pf_item_unref(out);
            return -1;
        }
        out->tensor = a.t;
    }
    if (!out->frame.buf[0] && !out->tensor.buf) {
        pfpy_raise_fmt(PF_ERR_INVALID, "a pipeline item needs a frame or a tensor");
        return -1;
    }
    return 0;
}

/* pixflow.Pipeline ----------------------------------------------------------------- */

typedef struct {
    pf_item item;
    int output;
} out_entry;

#define PFPY_MAX_OUTPUTS 64

typedef struct pfpy_pipeline {
    PyObject_HEAD
    pf_pipeline *p;
    pf_queue *outq;
    char *out_names[PFPY_MAX_OUTPUTS];
    int n_outputs;
    atomic_int outputs_open;
    atomic_int closing;          /* collectors stop pushing */
    int started, finished;
    int closed;                  /* close(): stopped; destroyed at dealloc */
    pf_status status;
    char message[1024];
    PyObject *py_error;          /* the first exception a Python stage raised */
} pfpy_pipeline;

typedef struct {
    pfpy_pipeline *owner;        /* borrowed: the pipeline outlives its stages */
    PyObject *fn;                /* callable, or iterator for sources */
    int output;                  /* collectors: index into out_names */
    char name[128];
} stage_state;

static void save_py_error(pfpy_pipeline *o)
{
    if (!o->py_error) {
        o->py_error = pfpy_take_exception();
    } else {
        PyErr_Clear();
    }
}

/* Collector: items into the output queue; waits in slices so a cancel or
 * close is seen. */
static pf_status collect_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    stage_state *s = user;
    pf_status st = PF_OK;
    for (int i = 0; i < n; i++) {
        out_entry e = {items[i], s->output};
        memset(&items[i], 0, sizeof items[i]);
        do {
            st = atomic_load(&s->owner->closing) ? PF_ERR_CLOSED
                                                 : pf_queue_push(s->owner->outq, &e, 50000);
        } while (st == PF_TIMEOUT);
        if (st != PF_OK) {
            pf_item_unref(&e.item);
            for (int k = i + 1; k < n; k++) pf_item_unref(&items[k]);
            return st == PF_ERR_CLOSED ? PF_OK : st;
        }
    }
    return PF_OK;
}

static void collect_stop(void *user)
{
    stage_state *s = user;
    if (atomic_fetch_sub(&s->owner->outputs_open, 1) == 1) pf_queue_close(s->owner->outq);
}

static void state_destroy(void *user)
{
    stage_state *s = user;
    if (s->fn) {
        PyGILState_STATE g = PyGILState_Ensure();
        Py_CLEAR(s->fn);
        PyGILState_Release(g);
    }
    free(s);
}

/* Emits what a Python stage returned: None (nothing), an Item or array,
 * or a list/tuple of them. */
static pf_status emit_result(pf_stage_ctx *ctx, PyObject *r, const pf_item *like)
{
    if (r == Py_None) return PF_OK;
    if (PyList_Check(r) || PyTuple_Check(r)) {
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(r); i++) {
            pf_status st = emit_result(ctx, PySequence_Fast_GET_ITEM(r, i), like);
            if (st != PF_OK) return st;
        }
        return PF_OK;
    }
    pf_item out;
    if (item_from_py(r, like, &out) < 0) return PF_ERR_INVALID;
    pf_status st;
    Py_BEGIN_ALLOW_THREADS
    st = pf_stage_emit(ctx, &out);     /* may block on a full edge: not with the GIL */
    Py_END_ALLOW_THREADS
    return st;
}

static pf_status py_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    stage_state *s = user;
    pf_status st = PF_OK;
    PyGILState_STATE g = PyGILState_Ensure();
    for (int i = 0; i < n; i++) {
        if (st == PF_OK) {
            PyObject *it = item_to_py(&items[i], s->name, (PyObject *)s->owner);
            PyObject *r = it ? PyObject_CallOneArg(s->fn, it) : NULL;
            Py_XDECREF(it);
            if (r) {
                st = emit_result(ctx, r, &items[i]);
                Py_DECREF(r);
            } else {
                st = PF_ERR_INVALID;
            }
            if (st != PF_OK && PyErr_Occurred()) {
                if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) st = PF_ERR_CANCELLED;
                save_py_error(s->owner);
            }
        }
        pf_item_unref(&items[i]);
    }
    PyGILState_Release(g);
    return st;
}

static pf_status py_source(void *user, pf_stage_ctx *ctx, pf_item *out)
{
    stage_state *s = user;
    pf_status st = PF_OK;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *r = PyIter_Next(s->fn);
    if (!r) {
        if (PyErr_Occurred()) {
            st = PyErr_ExceptionMatches(PyExc_KeyboardInterrupt) ? PF_ERR_CANCELLED
                                                                  : PF_ERR_INVALID;
            save_py_error(s->owner);
        } else {
            st = PF_EOF;
        }
    } else {
        if (item_from_py(r, NULL, out) < 0) {
            st = PF_ERR_INVALID;
            save_py_error(s->owner);
        }
        Py_DECREF(r);
    }
    PyGILState_Release(g);
    return st;
}

static int check_open(pfpy_pipeline *o, int need_unstarted)
{
    if (!o->p || o->closed) {
        PyErr_SetString(PyExc_RuntimeError, "the pipeline is closed");
        return -1;
    }
    if (need_unstarted && o->started) {
        PyErr_SetString(PyExc_RuntimeError, "the pipeline has already started");
        return -1;
    }
    return 0;
}

static int make_queue(pfpy_pipeline *o)
{
    pf_queue_params qp = {.capacity = 64, .item_size = sizeof(out_entry)};
    pf_status st = pf_queue_create(&qp, &o->outq);
    if (st != PF_OK) {
        pfpy_raise(st, "Pipeline");
        return -1;
    }
    return 0;
}

static int pipeline_init(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"name", "mode", "trace", NULL};
    pfpy_pipeline *o = (pfpy_pipeline *)self;
    const char *name = NULL, *trace = NULL;
    PyObject *mode_o = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|zOz:Pipeline", kwlist, &name, &mode_o, &trace))
        return -1;
    static const char *const names[] = {"custom", "latency", "throughput", NULL};
    static const int values[] = {PF_MODE_CUSTOM, PF_MODE_LATENCY, PF_MODE_THROUGHPUT};
    int mode = PF_MODE_CUSTOM;
    if (pfpy_parse_choice(mode_o, "mode", names, values, &mode) < 0) return -1;
    if (o->p) {
        PyErr_SetString(PyExc_RuntimeError, "Pipeline is already initialised");
        return -1;
    }
    pf_pipeline_params pp = pf_pipeline_params_default();
    pp.name = name ? name : "python";
    pp.mode = (pf_pipeline_mode)mode;
    pp.trace_path = trace;
    pf_status st = pf_pipeline_create(&pp, &o->p);
    if (st != PF_OK) {
        pfpy_raise(st, "Pipeline");
        return -1;
    }
    return make_queue(o);
}

static PyObject *pipeline_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    PyObject *self = type->tp_alloc(type, 0);
    if (self) ((pfpy_pipeline *)self)->status = PF_OK;
    return self;
}

static PyTypeObject pipeline_type;

static PyObject *pipeline_from_yaml(PyObject *cls, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"source", "device", "count", "mode", "trace", NULL};
    PyObject *src;
    const char *device = NULL, *trace = NULL;
    long long count = 0;
    PyObject *mode_o = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$zLOz:from_yaml", kwlist, &src, &device, &count,
                                     &mode_o, &trace))
        return NULL;
    static const char *const names[] = {"custom", "latency", "throughput", NULL};
    static const int values[] = {PF_MODE_CUSTOM, PF_MODE_LATENCY, PF_MODE_THROUGHPUT};
    int mode = -1;
    if (pfpy_parse_choice(mode_o, "mode", names, values, &mode) < 0) return NULL;
    PyObject *path = NULL;
    if (!PyUnicode_FSDecoder(src, &path)) return NULL;
    const char *text = PyUnicode_AsUTF8(path);
    pf_pipeline_yaml_params yp = pf_pipeline_yaml_params_default();
    /* A string with a newline or a ':' before any '/' is YAML text; else a path. */
    int is_text = strchr(text, '\n') != NULL;
    if (is_text) {
        yp.text = text;
        yp.text_len = strlen(text);
        yp.path = "<string>";
    } else {
        yp.path = text;
    }
    yp.device = device;
    yp.count = count;
    yp.mode = mode;
    yp.trace_path = trace;
    pfpy_pipeline *o = (pfpy_pipeline *)pipeline_new((PyTypeObject *)cls, NULL, NULL);
    if (!o) {
        Py_DECREF(path);
        return NULL;
    }
    pf_status st;
    Py_BEGIN_ALLOW_THREADS
    st = pf_pipeline_create_from_yaml(&yp, &o->p);
    Py_END_ALLOW_THREADS
    if (st != PF_OK) {
        pfpy_raise(st, yp.path);
        Py_DECREF(path);
        Py_DECREF(o);
        return NULL;
    }
    Py_DECREF(path);
    if (make_queue(o) < 0) {
        Py_DECREF(o);
        return NULL;
    }
    return (PyObject *)o;
}

static pf_stage *find_stage(pfpy_pipeline *o, PyObject *name_o)
{
    const char *name = PyUnicode_Check(name_o) ? PyUnicode_AsUTF8(name_o) : NULL;
    pf_stage *s = name ? pf_pipeline_find_stage(o->p, name) : NULL;
    if (!s) {
        PyObject *r = PyObject_Repr(name_o);
        pfpy_raise_fmt(PF_ERR_INVALID, "no stage named %s", r ? PyUnicode_AsUTF8(r) : "?");
        Py_XDECREF(r);
    }
    return s;
}

/* Adds a stage and returns its name; `desc.user` is owned by the pipeline
 * after a success, by the caller after a failure. */
static PyObject *add_desc(pfpy_pipeline *o, pf_stage_desc *d)
{
    pf_stage *s = NULL;
    pf_status st = pf_pipeline_add_stage(o->p, d, &s);
    if (st != PF_OK) return pfpy_raise(st, "add stage");
    return PyUnicode_FromString(pf_stage_name(s));
}

static int auto_name(pfpy_pipeline *o, const char *prefix, const char *given, char *buf, size_t n)
{
    if (given) {
        snprintf(buf, n, "%s", given);
        return 0;
    }
    for (int i = 0; i < 100000; i++) {
        snprintf(buf, n, "%s%d", prefix, i);
        if (!pf_pipeline_find_stage(o->p, buf)) return 0;
    }
    return -1;
}

static PyObject *param_str(PyObject *v)
{
    if (v == Py_True) return PyUnicode_FromString("true");
    if (v == Py_False) return PyUnicode_FromString("false");
    if (PyList_Check(v) || PyTuple_Check(v)) {
        PyObject *parts = PyList_New(0);
        for (Py_ssize_t i = 0; parts && i < PySequence_Size(v); i++) {
            PyObject *x = PySequence_GetItem(v, i), *s = x ? PyObject_Str(x) : NULL;
            if (!s || PyList_Append(parts, s) < 0) Py_CLEAR(parts);
            Py_XDECREF(x);
            Py_XDECREF(s);
        }
        if (!parts) return NULL;
        PyObject *sep = PyUnicode_FromString(",");
        PyObject *r = sep ? PyUnicode_Join(sep, parts) : NULL;
        Py_XDECREF(sep);
        Py_DECREF(parts);
        return r;
    }
    return PyObject_Str(v);
}

static PyObject *pipeline_add(PyObject *self, PyObject *args, PyObject *kw)
{
    pfpy_pipeline *o = (pfpy_pipeline *)self;
    if (check_open(o, 0) < 0) return NULL;
    const char *type;
    if (!PyArg_ParseTuple(args, "s:add", &type)) return NULL;
    /* Generic keys first; the rest are the built-in's parameters. */
    const char *name = NULL;
    PyObject *dev_o = NULL;
    int threads = 0, batch = 0;
    Py_ssize_t np = kw ? PyDict_Size(kw) : 0;
    pf_stage_param *params = PyMem_Calloc((size_t)np + 1, sizeof *params);
    PyObject *keep = PyList_New(0), *result = NULL;
    int n = 0;
    if (!params || !keep) goto done;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (kw && PyDict_Next(kw, &pos, &k, &v)) {
        const char *key = PyUnicode_AsUTF8(k);
        if (!key) goto done;
        if (strcmp(key, "name") == 0) {
            name = PyUnicode_AsUTF8(v);
            if (!name) goto done;
        } else if (strcmp(key, "device") == 0) {
            dev_o = v;
        } else if (strcmp(key, "threads") == 0) {
            threads = (int)PyLong_AsLong(v);
        } else if (strcmp(key, "stage_batch") == 0) {
            batch = (int)PyLong_AsLong(v);
        } else {
            PyObject *s = param_str(v);
            if (!s || PyList_Append(keep, s) < 0) {
                Py_XDECREF(s);
                goto done;
            }
            Py_DECREF(s);
            params[n].key = key;
            params[n].value = PyUnicode_AsUTF8(s);
            n++;
        }
        if (PyErr_Occurred()) goto done;
    }
    char nm[128];
    if (auto_name(o, type, name, nm, sizeof nm) < 0) goto done;
    pf_device *dev = NULL;
    if (dev_o && pfpy_device_parse(dev_o, &dev) < 0) goto done;
    pf_stage_config cfg = {.name = nm, .params = params, .num_params = n, .device = dev};
    pf_stage_desc d;
    pf_status st = pf_stage_builtin(type, &cfg, &d);
    if (st != PF_OK) {
        pfpy_raise(st, type);
        goto done;
    }
    if (threads > 0) d.threads = threads;
    if (batch > 0) d.batch.max_batch = batch;
    result = add_desc(o, &d);
    if (!result && d.destroy) d.destroy(d.user);
done:
    PyMem_Free(params);
    Py_XDECREF(keep);
    return result;
}

static PyObject *add_python_stage(pfpy_pipeline *o, PyObject *fn, const char *name, int threads,
                                  int source, int ordered)
{
    if (check_open(o, 0) < 0) return NULL;
    stage_state *s = calloc(1, sizeof *s);
    if (!s) return PyErr_NoMemory();
    s->owner = o;
    if (source) {
        s->fn = PyObject_GetIter(fn);
        if (!s->fn) {
            free(s);
            return NULL;
        }
    } else {
        if (!PyCallable_Check(fn)) {
            free(s);
            PyErr_SetString(PyExc_TypeError, "add_function: expected a callable");
            return NULL;
        }
        s->fn = Py_NewRef(fn);
    }
    if (auto_name(o, source ? "python_source" : "python", name, s->name, sizeof s->name) < 0) {
        Py_DECREF(s->fn);
        free(s);
        return pfpy_raise_fmt(PF_ERR_INVALID, "no free stage name");
    }
    pf_stage_desc d = pf_stage_desc_default();
    d.name = s->name;
    if (source) d.source = py_source;
    else d.process = py_process;
    d.destroy = state_destroy;
    d.user = s;
    if (threads > 0) d.threads = threads;
    d.ordered = ordered;
    PyObject *r = add_desc(o, &d);
    if (!r) {
        Py_DECREF(s->fn);
        free(s);
    }
    return r;
}

static PyObject *pipeline_add_function(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"fn", "name", "threads", "ordered", NULL};
    PyObject *fn;
    const char *name = NULL;
    int threads = 1, ordered = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|z$ip:add_function", kwlist, &fn, &name,
                                     &threads, &ordered))
        return NULL;
    return add_python_stage((pfpy_pipeline *)self, fn, name, threads, 0, ordered);
}

static PyObject *pipeline_add_source(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"iterable", "name", NULL};
    PyObject *it;
    const char *name = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|z:add_source", kwlist, &it, &name)) return NULL;
    return add_python_stage((pfpy_pipeline *)self, it, name, 1, 1, 0);
}

static PyObject *pipeline_connect(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"src", "dst", "capacity", "policy", NULL};
    pfpy_pipeline *o = (pfpy_pipeline *)self;
    PyObject *a, *b, *policy_o = NULL;
    int capacity = 4;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|iO:connect", kwlist, &a, &b, &capacity,
                                     &policy_o))
        return NULL;
    if (check_open(o, 0) < 0) return NULL;
    static const char *const names[] = {"block", "drop_oldest", "drop_newest", "latest_only", NULL};
    static const int values[] = {PF_EDGE_BLOCK, PF_EDGE_DROP_OLDEST, PF_EDGE_DROP_NEWEST,
                                 PF_EDGE_LATEST_ONLY};
    pf_edge_params ep = pf_edge_params_default();
    int policy = PF_EDGE_BLOCK;
    if (pfpy_parse_choice(policy_o, "policy", names, values, &policy) < 0) return NULL;
    ep.capacity = capacity;
    ep.policy = (pf_edge_policy)policy;
    pf_stage *sa = find_stage(o, a), *sb = sa ? find_stage(o, b) : NULL;
    if (!sb) return NULL;
    pf_status st = pf_pipeline_connect(o->p, sa, sb, &ep);
    if (st != PF_OK) return pfpy_raise(st, "connect");
    Py_RETURN_NONE;
}

static PyObject *pipeline_output(PyObject *self, PyObject *args)
{
    pfpy_pipeline *o = (pfpy_pipeline *)self;
    PyObject *name_o;
    if (!PyArg_ParseTuple(args, "U:output", &name_o)) return NULL;
    if (check_open(o, 1) < 0) return NULL;
    pf_stage *from = find_stage(o, name_o);
    if (!from) return NULL;
    if (o->n_outputs >= PFPY_MAX_OUTPUTS)
        return pfpy_raise_fmt(PF_ERR_INVALID, "at most %d outputs", PFPY_MAX_OUTPUTS);
    stage_state *s = calloc(1, sizeof *s);
    if (!s) return PyErr_NoMemory();
    s->owner = o;
    s->output = o->n_outputs;
    snprintf(s->name, sizeof s->name, "%s>python", PyUnicode_AsUTF8(name_o));
    pf_stage_desc d = pf_stage_desc_default();
    d.name = s->name;
    d.process = collect_process;
    d.stop = collect_stop;
    d.destroy = state_destroy;
    d.user = s;
    /* Collectors take what their stage makes, host or device. */
    pf_stage *to = NULL;
    pf_status st = pf_pipeline_add_stage(o->p, &d, &to);
    if (st != PF_OK) {
        free(s);
        return pfpy_raise(st, "output");
    }
    pf_edge_params ep = pf_edge_params_default();
    st = pf_pipeline_connect(o->p, from, to, &ep);
    if (st != PF_OK) return pfpy_raise(st, "output");
    o->out_names[o->n_outputs++] = strdup(PyUnicode_AsUTF8(name_o));
    Py_RETURN_NONE;
}

static int start(pfpy_pipeline *o)
{
    if (check_open(o, 0) < 0) return -1;
    if (o->started) return 0;
    atomic_store(&o->outputs_open, o->n_outputs);
    if (o->n_outputs == 0) pf_queue_close(o->outq);
    pf_status st;
    Py_BEGIN_ALLOW_THREADS
    st = pf_pipeline_start(o->p);
    Py_END_ALLOW_THREADS
    if (st != PF_OK) {
        pfpy_raise(st, "start");
        return -1;
    }
    o->started = 1;
    return 0;
}

static PyObject *pipeline_start(PyObject *self, PyObject *unused)
{
    if (start((pfpy_pipeline *)self) < 0) return NULL;
    Py_RETURN_NONE;
}

/* A signal handler raised (KeyboardInterrupt): cancel, wait for the
 * workers to unwind, leave the exception set. Returns -1. */
static int interrupted(pfpy_pipeline *o)
{
    atomic_store(&o->closing, 1);
    Py_BEGIN_ALLOW_THREADS
    pf_pipeline_cancel(o->p);
    pf_pipeline_wait(o->p, -1);
    Py_END_ALLOW_THREADS
    o->finished = 1;
    o->status = PF_ERR_CANCELLED;
    return -1;
}

/* After the outputs ended (or with none): waits for the pipeline and
 * raises its error. Checks signals every 100 ms. */
static int finish(pfpy_pipeline *o)
{
    if (o->finished) goto report;
    for (;;) {
        pf_status st;
        char msg[1024] = "";
        Py_BEGIN_ALLOW_THREADS
        st = pf_pipeline_wait(o->p, 100000);
        if (st < 0) snprintf(msg, sizeof msg, "%s", pf_last_error());
        Py_END_ALLOW_THREADS
        if (st != PF_TIMEOUT) {
            o->status = st;
            snprintf(o->message, sizeof o->message, "%s", msg);
            o->finished = 1;
            break;
        }
        if (PyErr_CheckSignals() < 0) return interrupted(o);
    }
report:
    if (o->status == PF_OK) return 0;
    if (o->py_error) {
        /* The Python exception itself, with pixflow's message as its cause. */
        PyObject *exc = o->py_error;
        o->py_error = NULL;
        pfpy_raise_fmt(o->status, "%s", o->message);
        PyObject *cause = pfpy_take_exception();
        PyException_SetCause(exc, cause);
        pfpy_restore_exception(exc);
        o->status = PF_OK;   /* raised once */
        return -1;
    }
    pfpy_raise_fmt(o->status, "%s", *o->message ? o->message : pf_status_str(o->status));
    o->status = PF_OK;
    return -1;
}

/* Next output entry: 1 got one, 0 the outputs ended, -1 error/interrupt. */
static int pop_output(pfpy_pipeline *o, out_entry *e)
{
    for (;;) {
        /* Before every pop, not only after a timeout: drain() pops without
         * returning to Python, and items may come faster than the timeout.
         * The check reads one flag unless a signal arrived. */
        if (PyErr_CheckSignals() < 0) return interrupted(o);
        pf_status st;
        Py_BEGIN_ALLOW_THREADS
        st = pf_queue_pop(o->outq, e, 100000);
        Py_END_ALLOW_THREADS
        if (st == PF_OK) return 1;
        if (st == PF_EOF || st == PF_ERR_CLOSED) return 0;
        if (st != PF_TIMEOUT && st != PF_AGAIN) {
            pfpy_raise(st, "pipeline output");
            return -1;
        }
    }
}

static PyObject *pipeline_iter(PyObject *self)
{
    if (start((pfpy_pipeline *)self) < 0) return NULL;
    return Py_NewRef(self);
}

static PyObject *pipeline_next(PyObject *self)
{
    pfpy_pipeline *o = (pfpy_pipeline *)self;
    if (!o->p || !o->started) {
        PyErr_SetString(PyExc_RuntimeError, "iterate with `for item in pipeline`");
        return NULL;
    }
    out_entry e;
    int r = pop_output(o, &e);
    if (r < 0) return NULL;
    if (r == 0) {
        if (finish(o) < 0) return NULL;
        return NULL;    /* StopIteration */
    }
    PyObject *it = item_to_py(&e.item, o->out_names[e.output], self);
    pf_item_unref(&e.item);
    return it;
}

static int drain(pfpy_pipeline *o)
{
    out_entry e;
    int r;
    while ((r = pop_output(o, &e)) == 1) pf_item_unref(&e.item);
    return r;
}

static PyObject *stats_dict(pfpy_pipeline *o);

static PyObject *pipeline_wait(PyObject *self, PyObject *unused)
{
    pfpy_pipeline *o = (pfpy_pipeline *)self;
    if (check_open(o, 0) < 0) return NULL;
    if (!o->started) {
        PyErr_SetString(PyExc_RuntimeError, "the pipeline was not started");
        return NULL;
    }
    if (drain(o) < 0 || finish(o) < 0) return NULL;
    return stats_dict(o);
}

static PyObject *pipeline_run(PyObject *self, PyObject *unused)
{
    if (start((pfpy_pipeline *)self) < 0) return NULL;
    return pipeline_wait(self, NULL);
}

static PyObject *pipeline_cancel(PyObject *self, PyObject *unused)
{
    pfpy_pipeline *o = (pfpy_pipeline *)self;
    if (o->p) {
        atomic_store(&o->closing, 1);
        Py_BEGIN_ALLOW_THREADS
        pf_pipeline_cancel(o->p);
        Py_END_ALLOW_THREADS
    }
    Py_RETURN_NONE;
}

static PyObject *stats_dict(pfpy_pipeline *o)
{
    pf_pipeline_stats s;
    pf_status st = pf_pipeline_get_stats(o->p, &s);
    if (st != PF_OK) return pfpy_raise(st, "stats");
    PyObject *stages = PyList_New(0);
    for (int i = 0; stages && i < s.num_stages; i++) {
        const pf_stage_stats *g = &s.stages[i];
        PyObject *d = Py_BuildValue("{s:s,s:K,s:K,s:d,s:d,s:d,s:d,s:d,s:K,s:K,s:O}", "name",
                                    g->name, "items_in", (unsigned long long)g->items_in,
                                    "items_out", (unsigned long long)g->items_out, "fps", g->fps,
                                    "busy", g->busy_fraction, "p50_us", g->latency_p50_us,
                                    "p95_us", g->latency_p95_us, "p99_us", g->latency_p99_us,
                                    "errors", (unsigned long long)g->errors, "dropped",
                                    (unsigned long long)g->dropped, "transfer",
                                    g->is_transfer ? Py_True : Py_False);
        if (!d || PyList_Append(stages, d) < 0) Py_CLEAR(stages);
        Py_XDECREF(d);
    }
    if (!stages) return NULL;
    return Py_BuildValue("{s:d,s:K,s:d,s:d,s:d,s:d,s:K,s:K,s:N}", "elapsed_s", s.elapsed_s,
                         "items", (unsigned long long)s.items_completed, "fps", s.fps,
                         "e2e_p50_us", s.e2e_p50_us, "e2e_p95_us", s.e2e_p95_us, "e2e_p99_us",
                         s.e2e_p99_us, "dropped", (unsigned long long)s.dropped, "transfers",
                         (unsigned long long)s.transfers, "stages", stages);
}

static PyObject *pipeline_stats(PyObject *self, PyObject *unused)
{
    pfpy_pipeline *o = (pfpy_pipeline *)self;
    if (check_open(o, 0) < 0) return NULL;
    return stats_dict(o);
}

/* close(): stops the workers and drops what waits in the output queue,
 * but keeps the pf_pipeline: arrays handed out may still point into its
 * stages' pools (they hold a reference to this object), so it is
 * destroyed by the dealloc that follows the last of them. */
static void stop_pipeline(pfpy_pipeline *o)
{
    if (!o->p || o->closed) return;
    o->closed = 1;
    atomic_store(&o->closing, 1);
    Py_BEGIN_ALLOW_THREADS
    pf_pipeline_cancel(o->p);
    if (o->started) pf_pipeline_wait(o->p, -1);
    if (o->outq) {
        out_entry e;
        pf_queue_close(o->outq);
        while (pf_queue_pop(o->outq, &e, 0) == PF_OK) pf_item_unref(&e.item);
    }
    Py_END_ALLOW_THREADS
    o->finished = 1;
}

static void close_pipeline(pfpy_pipeline *o)
{
    if (!o->p) return;
    atomic_store(&o->closing, 1);
    pf_pipeline *p = o->p;
    pf_queue *q = o->outq;
    o->p = NULL;
    o->outq = NULL;
    /* Stage destructors take the GIL: release it. */
    Py_BEGIN_ALLOW_THREADS
    pf_pipeline_destroy(&p);
    if (q) {
        out_entry e;
        pf_queue_close(q);
        while (pf_queue_pop(q, &e, 0) == PF_OK) pf_item_unref(&e.item);
        pf_queue_destroy(&q);
    }
    Py_END_ALLOW_THREADS
    for (int i = 0; i < o->n_outputs; i++) free(o->out_names[i]);
    o->n_outputs = 0;
}

static PyObject *pipeline_close(PyObject *self, PyObject *unused)
{
    stop_pipeline((pfpy_pipeline *)self);
    Py_RETURN_NONE;
}

static PyObject *pipeline_enter(PyObject *self, PyObject *unused)
{
    return Py_NewRef(self);
}

static PyObject *pipeline_exit(PyObject *self, PyObject *args)
{
    stop_pipeline((pfpy_pipeline *)self);
    Py_RETURN_FALSE;
}

static void pipeline_dealloc(PyObject *self)
{
    pfpy_pipeline *o = (pfpy_pipeline *)self;
    close_pipeline(o);
    Py_XDECREF(o->py_error);
    Py_TYPE(self)->tp_free(self);
}

static PyMethodDef pipeline_methods[] = {
    {"from_yaml", (PyCFunction)(void (*)(void))pipeline_from_yaml,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "from_yaml(source, *, device=None, count=0, mode=None, trace=None)\n--\n\n"
     "A pipeline from a YAML file path or YAML text (a string with a newline), in the format "
     "of docs/pipeline-yaml.md. device overrides every stage's device, count stops every "
     "source after that many items."},
    {"add", (PyCFunction)(void (*)(void))pipeline_add, METH_VARARGS | METH_KEYWORDS,
     "add(type, *, name=None, device=None, threads=0, stage_batch=0, **params)\n--\n\n"
     "Adds a built-in stage ('source.synthetic', 'ops.resize', 'nn.infer', ...; see "
     "docs/pipeline-yaml.md) with its parameters as keywords; returns the stage's name."},
    {"add_function", (PyCFunction)(void (*)(void))pipeline_add_function,
     METH_VARARGS | METH_KEYWORDS,
     "add_function(fn, name=None, *, threads=1, ordered=False)\n--\n\n"
     "A Python stage: fn(item) gets each pixflow.Item and returns an Item (or an array: the "
     "item's new tensor), a list of them, or None to drop it. The GIL is held only while fn "
     "runs. An exception stops the pipeline and is re-raised by the iteration or wait()."},
    {"add_source", (PyCFunction)(void (*)(void))pipeline_add_source, METH_VARARGS | METH_KEYWORDS,
     "add_source(iterable, name=None)\n--\n\n"
     "A Python source: each value of the iterable (an Item, or an array taken as a tensor) "
     "becomes an item; the source ends with the iterable."},
    {"connect", (PyCFunction)(void (*)(void))pipeline_connect, METH_VARARGS | METH_KEYWORDS,
     "connect(src, dst, capacity=4, policy='block')\n--\n\n"
     "An edge between two stages (names); policy 'block', 'drop_oldest', 'drop_newest' or "
     "'latest_only'."},
    {"output", pipeline_output, METH_VARARGS,
     "output(stage)\n--\n\nIterating over the pipeline yields the items `stage` emits."},
    {"start", pipeline_start, METH_NOARGS, "Starts the workers (iteration starts it too)."},
    {"wait", pipeline_wait, METH_NOARGS,
     "Waits until the pipeline has drained (items not iterated over are dropped) and returns "
     "its statistics; raises the error that stopped it. Ctrl-C cancels it."},
    {"run", pipeline_run, METH_NOARGS, "start() then wait()."},
    {"cancel", pipeline_cancel, METH_NOARGS, "Stops the sources and unwinds (thread-safe)."},
    {"stats", pipeline_stats, METH_NOARGS, "Statistics so far: fps, latencies, per-stage figures."},
    {"close", pipeline_close, METH_NOARGS, "Cancels if running and frees the pipeline."},
    {"__enter__", pipeline_enter, METH_NOARGS, NULL},
    {"__exit__", pipeline_exit, METH_VARARGS, NULL},
    {NULL}};

static PyTypeObject pipeline_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pixflow.Pipeline",
    .tp_basicsize = sizeof(pfpy_pipeline),
    .tp_dealloc = pipeline_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Pipeline(name=None, mode='custom', trace=None)\n--\n\n"
              "A graph of stages on pixflow's worker threads: built in code (add, "
              "add_function, add_source, connect) or with Pipeline.from_yaml. Name outputs "
              "with output(stage) and iterate: `for item in p: ...`.",
    .tp_iter = pipeline_iter,
    .tp_iternext = pipeline_next,
    .tp_methods = pipeline_methods,
    .tp_init = pipeline_init,
    .tp_new = pipeline_new,
};

int pfpy_pipeline_init(PyObject *m)
{
    if (PyType_Ready(&item_type) < 0 || PyType_Ready(&pipeline_type) < 0) return -1;
    if (PyModule_AddObjectRef(m, "Item", (PyObject *)&item_type) < 0) return -1;
    return PyModule_AddObjectRef(m, "Pipeline", (PyObject *)&pipeline_type);
}
