/* device.c - devices and the per-device contexts calls run in.
 *
 * A call on arrays needs a stream, an ops context and (on a GPU) an
 * allocator for its outputs. Making them costs far more than the call, so
 * each device keeps a free list of contexts: a call borrows one, and a
 * thread calling while another holds the device's only context gets a new
 * one (pf_ops is single-threaded). The lists only grow to the number of
 * threads that ever called at once; contexts live until exit. CPU contexts
 * share one thread pool (pf_threadpool_parallel_for serves concurrent
 * callers in turn). */
#include "pfpy.h"

#include <pthread.h>

#define PFPY_MAX_DEVICES 17   /* the CPU + 16 GPUs */

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static pfpy_ctx *free_ctx[PFPY_MAX_DEVICES];
static pf_threadpool *cpu_pool;
static pthread_once_t cpu_pool_once = PTHREAD_ONCE_INIT;

static void make_cpu_pool(void)
{
    pf_threadpool_params tp = pf_threadpool_params_default();
    tp.name = "pf-py";
    if (pf_threadpool_create(&tp, &cpu_pool) != PF_OK) cpu_pool = NULL;
}

pf_threadpool *pfpy_cpu_pool(void)
{
    pthread_once(&cpu_pool_once, make_cpu_pool);
    return cpu_pool;
}

static int device_slot(pf_device *dev)
{
    const pf_device_props *p = pf_device_props_get(dev);
    if (p->type == PF_DEVICE_CPU) return 0;
    return p->index + 1 < PFPY_MAX_DEVICES ? p->index + 1 : -1;
}

pfpy_ctx *pfpy_ctx_try(pf_device *dev)
{
    int slot = device_slot(dev);
    if (slot < 0) return NULL;
    pthread_mutex_lock(&ctx_lock);
    pfpy_ctx *c = free_ctx[slot];
    if (c) free_ctx[slot] = c->next;
    pthread_mutex_unlock(&ctx_lock);
    if (c) c->next = NULL;
    return c;
}

pf_status pfpy_ctx_acquire(pf_device *dev, pfpy_ctx **out)
{
    pfpy_ctx *c0 = pfpy_ctx_try(dev);
    if (c0) {
        *out = c0;
        return PF_OK;
    }
    pfpy_ctx *c = calloc(1, sizeof *c);
    if (!c) return PF_ERR_NOMEM;
    c->device = dev;
    pf_stream_params sp = pf_stream_params_default();
    sp.device = dev;
    pf_status st = pf_stream_create(&sp, &c->stream);
    if (st == PF_OK) {
        pf_ops_params op = pf_ops_params_default();
        op.stream = c->stream;
        op.pool = pfpy_cpu_pool();
        st = pf_ops_create(&op, &c->ops);
    }
    if (st == PF_OK && pf_device_props_get(dev)->type != PF_DEVICE_CPU) {
        pf_allocator_params ap = pf_allocator_params_default();
        ap.device = dev;
        ap.domain = PF_MEM_DEVICE;
        ap.name = "python";
        st = pf_allocator_create(&ap, &c->alloc);
    }
    if (st != PF_OK) {
        pf_ops_destroy(&c->ops);
        pf_stream_destroy(&c->stream);
        free(c);
        return st;
    }
    *out = c;
    return PF_OK;
}

void pfpy_ctx_release(pfpy_ctx *c)
{
    if (!c) return;
    int slot = device_slot(c->device);
    if (slot < 0) {
        pf_ops_destroy(&c->ops);
        pf_allocator_destroy(&c->alloc);
        pf_stream_destroy(&c->stream);
        free(c);
        return;
    }
    pthread_mutex_lock(&ctx_lock);
    c->next = free_ctx[slot];
    free_ctx[slot] = c;
    pthread_mutex_unlock(&ctx_lock);
}

PyObject *pfpy_device_str(pf_device *dev)
{
    return PyUnicode_FromString(pf_device_spec(dev));
}

int pfpy_device_parse(PyObject *spec, pf_device **out)
{
    const char *s = NULL;
    if (spec && spec != Py_None) {
        if (!PyUnicode_Check(spec)) {
            PyErr_Format(PyExc_TypeError, "device: expected a str like 'cpu', 'cuda:0' or "
                         "'auto', got %s", Py_TYPE(spec)->tp_name);
            return -1;
        }
        s = PyUnicode_AsUTF8(spec);
        if (!s) return -1;
    }
    pf_status st;
    Py_BEGIN_ALLOW_THREADS
    st = pf_device_select(s ? s : "cpu", out);
    Py_END_ALLOW_THREADS
    if (st != PF_OK) {
        pfpy_raise(st, "device");
        return -1;
    }
    return 0;
}

PyObject *pfpy_devices(PyObject *self, PyObject *args)
{
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    for (int t = 0; t < PF_DEVICE_TYPE_COUNT; t++) {
        int n;
        Py_BEGIN_ALLOW_THREADS
        n = pf_device_count((pf_device_type)t);
        Py_END_ALLOW_THREADS
        for (int i = 0; i < n; i++) {
            pf_device *d = NULL;
            if (pf_device_get((pf_device_type)t, i, &d) != PF_OK) continue;
            PyObject *s = pfpy_device_str(d);
            if (!s || PyList_Append(list, s) < 0) {
                Py_XDECREF(s);
                Py_DECREF(list);
                return NULL;
            }
            Py_DECREF(s);
        }
    }
    return list;
}

PyObject *pfpy_device_info(PyObject *self, PyObject *args)
{
    PyObject *spec = Py_None;
    if (!PyArg_ParseTuple(args, "|O:device_info", &spec)) return NULL;
    pf_device *d;
    if (pfpy_device_parse(spec, &d) < 0) return NULL;
    const pf_device_props *p = pf_device_props_get(d);
    size_t free_b = 0, total_b = 0;
    pf_status st;
    Py_BEGIN_ALLOW_THREADS
    st = pf_device_memory(d, &free_b, &total_b);
    Py_END_ALLOW_THREADS
    if (st != PF_OK) return pfpy_raise(st, "device_info");
    return Py_BuildValue("{s:N,s:s,s:s,s:i,s:(ii),s:i,s:n,s:n,s:n,s:s}",
                         "spec", pfpy_device_str(d), "type", pf_device_type_name(p->type),
                         "name", p->name, "index", p->index, "compute_capability",
                         p->cc_major, p->cc_minor, "multiprocessors", p->multiprocessors,
                         "total_memory", (Py_ssize_t)p->total_memory, "free_memory",
                         (Py_ssize_t)free_b, "l2_cache_bytes", (Py_ssize_t)p->l2_cache_bytes,
                         "pci_bus_id", p->pci_bus_id);
}
