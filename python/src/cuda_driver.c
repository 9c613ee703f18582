/* cuda_driver.c - CUDA events for DLPack stream synchronisation, through the
 * driver API loaded at run time.
 *
 * The DLPack protocol hands raw cudaStream_t values across libraries:
 * __dlpack__(stream=s) asks the producer to make the consumer's stream s
 * wait for the work that produced the tensor. libpixflow exposes its streams
 * (pf_stream_native) but no raw events, and the extension must load on
 * machines without CUDA, so the few driver calls needed here come from
 * libcuda.so.1 opened on first use. Streams and events of PyTorch, CuPy and
 * pixflow all live in the device's primary context, which is made current
 * around each call. */
#include "pfpy.h"

#include <dlfcn.h>
#include <pthread.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUevent;

static struct {
    int ok;
    CUresult (*init)(unsigned);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*primary_retain)(CUcontext *, CUdevice);
    CUresult (*ctx_push)(CUcontext);
    CUresult (*ctx_pop)(CUcontext *);
    CUresult (*event_create)(CUevent *, unsigned);
    CUresult (*event_record)(CUevent, CUstream);
    CUresult (*stream_wait)(CUstream, CUevent, unsigned);
    CUresult (*event_destroy)(CUevent);
    CUresult (*error_string)(CUresult, const char **);
    CUcontext ctx[64];
} cu;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t cu_lock = PTHREAD_MUTEX_INITIALIZER;

static void cu_load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
#define SYM(field, name) \
    if (!(*(void **)&cu.field = dlsym(h, name))) return
    SYM(init, "cuInit");
    SYM(device_get, "cuDeviceGet");
    SYM(primary_retain, "cuDevicePrimaryCtxRetain");
    SYM(ctx_push, "cuCtxPushCurrent_v2");
    SYM(ctx_pop, "cuCtxPopCurrent_v2");
    SYM(event_create, "cuEventCreate");
    SYM(event_record, "cuEventRecord");
    SYM(stream_wait, "cuStreamWaitEvent");
    SYM(event_destroy, "cuEventDestroy_v2");
    SYM(error_string, "cuGetErrorString");
#undef SYM
    cu.ok = cu.init(0) == 0;
}

int pfpy_cu_available(void)
{
    pthread_once(&cu_once, cu_load);
    return cu.ok;
}

static int cu_fail(const char *what, CUresult r)
{
    const char *s = NULL;
    if (cu.error_string) cu.error_string(r, &s);
    pfpy_raise_fmt(PF_ERR_DEVICE, "%s: CUDA driver error %d (%s)", what, r, s ? s : "?");
    return -1;
}

/* Makes GPU `index`'s primary context current on this thread. */
static int cu_enter(int index)
{
    if (!pfpy_cu_available()) {
        pfpy_raise_fmt(PF_ERR_NO_DEVICE, "CUDA driver (libcuda.so.1) not available");
        return -1;
    }
    if (index < 0 || index >= 64) return cu_fail("device index", 101);
    pthread_mutex_lock(&cu_lock);
    CUresult r = 0;
    if (!cu.ctx[index]) {
        CUdevice d;
        r = cu.device_get(&d, index);
        if (r == 0) r = cu.primary_retain(&cu.ctx[index], d);
    }
    CUcontext c = cu.ctx[index];
    pthread_mutex_unlock(&cu_lock);
    if (r != 0) return cu_fail("cuDevicePrimaryCtxRetain", r);
    r = cu.ctx_push(c);
    if (r != 0) return cu_fail("cuCtxPushCurrent", r);
    return 0;
}

static void cu_leave(void)
{
    CUcontext c;
    cu.ctx_pop(&c);
}

int pfpy_cu_event_record(int index, void *stream, pfpy_cuevent *out)
{
    if (cu_enter(index) < 0) return -1;
    CUevent e = NULL;
    CUresult r = cu.event_create(&e, 0x2 /* CU_EVENT_DISABLE_TIMING */);
    if (r == 0) {
        r = cu.event_record(e, (CUstream)stream);
        if (r != 0) cu.event_destroy(e);
    }
    cu_leave();
    if (r != 0) return cu_fail("cuEventRecord", r);
    *out = e;
    return 0;
}

int pfpy_cu_stream_wait(int index, void *stream, pfpy_cuevent ev)
{
    if (cu_enter(index) < 0) return -1;
    CUresult r = cu.stream_wait((CUstream)stream, (CUevent)ev, 0);
    cu_leave();
    return r != 0 ? cu_fail("cuStreamWaitEvent", r) : 0;
}

void pfpy_cu_event_destroy(int index, pfpy_cuevent ev)
{
    if (!ev || !pfpy_cu_available()) return;
    cu.event_destroy((CUevent)ev);
}
