/* errors.c - pf_status -> Python exceptions.
 *
 * pixflow.Error is the base of every exception the package raises for a
 * failed library call; each error status has its own subclass, which also
 * derives from the built-in exception a Python programmer would catch for
 * that kind of failure (InvalidError is a ValueError, IOError an OSError,
 * NoMemoryError a MemoryError, ...). The message is pixflow's own
 * (pf_last_error(): it names the file, field or value); `.status` holds the
 * numeric pf_status and `.status_name` pf_status_str(). */
#include "pfpy.h"

#include <stdarg.h>

typedef struct {
    pf_status st;
    const char *name;       /* pixflow.<name> */
    const char *base;       /* builtins.<base> mixed in, or NULL */
    const char *doc;
    PyObject *cls;
} pfpy_error_kind;

static PyObject *pfpy_error_base;

static pfpy_error_kind kinds[] = {
    {PF_ERR_INVALID, "InvalidError", "ValueError",
     "A bad argument or value (the message names it).", NULL},
    {PF_ERR_NOMEM, "NoMemoryError", "MemoryError",
     "Out of host or device memory, or over a pool cap.", NULL},
    {PF_ERR_UNSUPPORTED, "UnsupportedError", "NotImplementedError",
     "A valid request this build or device cannot do.", NULL},
    {PF_ERR_NO_DEVICE, "NoDeviceError", NULL,
     "The requested device does not exist or is unusable.", NULL},
    {PF_ERR_DEVICE, "DeviceError", NULL, "A device runtime call failed (a CUDA error).", NULL},
    {PF_ERR_IO, "IOError", "OSError", "Reading or writing a file, pipe or stream failed.", NULL},
    {PF_ERR_FORMAT, "FormatError", "ValueError",
     "Malformed input data (file, model, config).", NULL},
    {PF_ERR_CLOSED, "ClosedError", NULL, "The queue, pool or object was closed.", NULL},
    {PF_ERR_BUSY, "BusyError", NULL, "The resource is still in use.", NULL},
    {PF_ERR_CANCELLED, "CancelledError", NULL, "The operation was cancelled.", NULL},
    {PF_ERR_INTERNAL, "InternalError", NULL, "A broken invariant inside pixflow: a bug.", NULL},
    {PF_TIMEOUT, "TimeoutError", "TimeoutError", "A timed wait expired.", NULL},
};

int pfpy_errors_init(PyObject *m)
{
    pfpy_error_base = PyErr_NewExceptionWithDoc(
        "pixflow.Error",
        "Base class of pixflow's exceptions. `status` is the pf_status code, `status_name` "
        "its name; str(e) is pixflow's message.",
        PyExc_RuntimeError, NULL);
    if (!pfpy_error_base || PyModule_AddObjectRef(m, "Error", pfpy_error_base) < 0) return -1;
    PyObject *builtins = PyEval_GetBuiltins();
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        PyObject *bases;
        if (kinds[i].base) {
            PyObject *b = PyDict_GetItemString(builtins, kinds[i].base);
            if (!b) return -1;
            bases = PyTuple_Pack(2, pfpy_error_base, b);
        } else {
            bases = PyTuple_Pack(1, pfpy_error_base);
        }
        if (!bases) return -1;
        char full[64];
        snprintf(full, sizeof full, "pixflow.%s", kinds[i].name);
        kinds[i].cls = PyErr_NewExceptionWithDoc(full, kinds[i].doc, bases, NULL);
        Py_DECREF(bases);
        if (!kinds[i].cls || PyModule_AddObjectRef(m, kinds[i].name, kinds[i].cls) < 0) return -1;
    }
    return 0;
}

PyObject *pfpy_error_class(pf_status st)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (kinds[i].st == st) return kinds[i].cls;
    return pfpy_error_base;
}

static PyObject *raise_msg(pf_status st, const char *msg)
{
    PyObject *cls = pfpy_error_class(st);
    PyObject *args = Py_BuildValue("(s)", msg);
    if (!args) return NULL;
    PyObject *exc = PyObject_Call(cls, args, NULL);
    Py_DECREF(args);
    if (!exc) return NULL;
    PyObject *code = PyLong_FromLong(st);
    PyObject *name = PyUnicode_FromString(pf_status_str(st));
    if (code && name) {
        PyObject_SetAttrString(exc, "status", code);
        PyObject_SetAttrString(exc, "status_name", name);
    }
    Py_XDECREF(code);
    Py_XDECREF(name);
    PyErr_SetObject(cls, exc);
    Py_DECREF(exc);
    return NULL;
}

PyObject *pfpy_raise(pf_status st, const char *what)
{
    const char *msg = pf_last_error();
    char buf[1200];
    if (!msg || !*msg) {
        snprintf(buf, sizeof buf, "%s: %s", what ? what : "pixflow", pf_status_str(st));
        msg = buf;
    }
    return raise_msg(st, msg);
}

PyObject *pfpy_raise_fmt(pf_status st, const char *fmt, ...)
{
    char buf[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return raise_msg(st, buf);
}

pf_status pfpy_status_from_exception(char *msg, size_t size)
{
    PyObject *value = pfpy_take_exception();
    PyObject *type = value ? Py_NewRef((PyObject *)Py_TYPE(value)) : NULL;
    pf_status st = PF_ERR_INVALID;
    if (value && PyObject_HasAttrString(value, "status")) {
        PyObject *s = PyObject_GetAttrString(value, "status");
        if (s && PyLong_Check(s)) st = (pf_status)PyLong_AsLong(s);
        Py_XDECREF(s);
        if (st >= 0) st = PF_ERR_INTERNAL;
    } else if (type && PyErr_GivenExceptionMatches(type, PyExc_KeyboardInterrupt)) {
        st = PF_ERR_CANCELLED;
    }
    PyObject *str = value ? PyObject_Str(value) : NULL;
    const char *tname = type ? ((PyTypeObject *)type)->tp_name : "exception";
    const char *text = str ? PyUnicode_AsUTF8(str) : NULL;
    snprintf(msg, size, "%s: %s", tname, text ? text : "");
    PyErr_Clear();
    Py_XDECREF(str);
    Py_XDECREF(type);
    Py_XDECREF(value);
    return st;
}

int pfpy_parse_choice(PyObject *obj, const char *what, const char *const *names,
                      const int *values, int *out)
{
    if (obj == NULL || obj == Py_None) return 0;
    const char *s = PyUnicode_Check(obj) ? PyUnicode_AsUTF8(obj) : NULL;
    if (s) {
        for (int i = 0; names[i]; i++) {
            if (strcmp(s, names[i]) == 0) {
                *out = values[i];
                return 0;
            }
        }
    }
    char list[256] = "";
    for (int i = 0; names[i]; i++) {
        size_t n = strlen(list);
        snprintf(list + n, sizeof list - n, "%s'%s'", i ? ", " : "", names[i]);
    }
    PyObject *r = PyObject_Repr(obj);
    pfpy_raise_fmt(PF_ERR_INVALID, "%s %s: expected one of %s", what,
                   r ? PyUnicode_AsUTF8(r) : "?", list);
    Py_XDECREF(r);
    return -1;
}
