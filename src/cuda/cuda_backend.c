/* The CUDA backend: device discovery, memory and the backend table.
 * Streams, events and copies live in cuda_stream.c, graph capture in
 * cuda_graph.c.
 *
 * Design notes:
 * - Discovery must be harmless on a machine with the toolkit but no GPU or
 *   no driver (CI, build hosts): cudart_static then fails cudaGetDeviceCount
 *   with cudaErrorInsufficientDriver or cudaErrorNoDevice, which becomes
 *   "0 devices" plus a detail line; nothing is printed and nothing aborts.
 * - Discovery reads properties with cudaGetDeviceProperties and
 *   cudaDeviceGetAttribute only; neither creates a CUDA context, so asking
 *   `pixflow info` costs no GPU memory.
 * - Calls that create per-device objects (memory, streams, events) first make
 *   the device current with cudaSetDevice, so a thread that last used another
 *   GPU never allocates on the wrong one. Stream-ordered calls run on the
 *   stream's device (see pf_cuda_use_stream_device).
 * - Every runtime error becomes a status plus a message naming the call
 *   (pf_cuda_fail); out-of-memory maps to PF_ERR_NOMEM so that callers (the
 *   caching allocator, batch shrinking) can react to it.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/sys.h"
#include "cuda_internal.h"

int pf_cuda_device_total;

/* Errors after which the context is unusable: every later call fails too. */
static int is_sticky(cudaError_t err)
{
    switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorLaunchTimeout: return 1;
    default: return 0;
    }
}

pf_status pf_cuda_fail(cudaError_t err, const char *fmt, ...)
{
    char call[192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(call, sizeof call, fmt, ap);
    va_end(ap);
    /* The failed call also stored err as the runtime's last error; consume it
     * here because it has been reported through our status. (Sticky errors
     * stay anyway: that is the runtime's rule.) */
    (void)cudaGetLastError();
    pf_status st = err == cudaErrorMemoryAllocation ? PF_ERR_NOMEM : PF_ERR_DEVICE;
    return pf_set_error(st, "%s failed: %s (%s)%s", call, cudaGetErrorString(err),
                        cudaGetErrorName(err),
                        is_sticky(err) ? "; the CUDA context is now unusable, every later "
                                         "call on this device will fail"
                                       : "");
}

int pf_cuda_is_teardown_error(cudaError_t err)
{
    return err == cudaErrorCudartUnloading || err == cudaErrorContextIsDestroyed;
}

pf_status pf_cuda_use_device(const pf_device *dev)
{
    cudaError_t err = cudaSetDevice(dev->props.index);
    if (err != cudaSuccess) return pf_cuda_fail(err, "cudaSetDevice(%d)", dev->props.index);
    return PF_OK;
}

pf_status pf_cuda_use_stream_device(cudaStream_t stream)
{
    if (pf_cuda_device_total <= 1) return PF_OK;
    int d = 0;
    cudaError_t err = cudaStreamGetDevice(stream, &d);
    if (err != cudaSuccess) return pf_cuda_fail(err, "cudaStreamGetDevice(%p)", (void *)stream);
    err = cudaSetDevice(d);
    if (err != cudaSuccess) return pf_cuda_fail(err, "cudaSetDevice(%d)", d);
    return PF_OK;
}

/* Discovery ------------------------------------------------------------------ */

static void put_detail(char *detail, size_t size, const char *fmt, ...) PF_PRINTF(3, 4);
static void put_detail(char *detail, size_t size, const char *fmt, ...)
{
    if (!detail || size == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, size, fmt, ap);
    va_end(ap);
}

/* Versions are encoded as 1000 * major + 10 * minor. */
static void fmt_version(char *buf, size_t size, int v)
{
    snprintf(buf, size, "%d.%d", v / 1000, (v % 1000) / 10);
}

static int attr(enum cudaDeviceAttr a, int dev)
{
    int v = 0;
    if (cudaDeviceGetAttribute(&v, a, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return v;
}

/* Fills one device's properties; returns 0 or the failing call's error. */
static cudaError_t read_props(int i, pf_device_props *p)
{
    struct cudaDeviceProp cp;
    memset(&cp, 0, sizeof cp);
    cudaError_t err = cudaGetDeviceProperties(&cp, i);
    if (err != cudaSuccess) return err;
    memset(p, 0, sizeof *p);
    p->type = PF_DEVICE_CUDA;
    p->index = i;
    size_t nlen = strnlen(cp.name, sizeof cp.name);
    if (nlen >= sizeof p->name) nlen = sizeof p->name - 1;
    memcpy(p->name, cp.name, nlen);
    p->name[nlen] = '\0';
    p->total_memory = cp.totalGlobalMem;
    p->cc_major = attr(cudaDevAttrComputeCapabilityMajor, i);
    p->cc_minor = attr(cudaDevAttrComputeCapabilityMinor, i);
    p->multiprocessors = attr(cudaDevAttrMultiProcessorCount, i);
    p->l2_cache_bytes = (size_t)attr(cudaDevAttrL2CacheSize, i);
    p->max_threads_per_block = attr(cudaDevAttrMaxThreadsPerBlock, i);
    p->async_engines = attr(cudaDevAttrAsyncEngineCount, i);
    p->unified_addressing = attr(cudaDevAttrUnifiedAddressing, i) != 0;
    p->concurrent_managed = attr(cudaDevAttrConcurrentManagedAccess, i) != 0;
    char bus[sizeof p->pci_bus_id];
    if (cudaDeviceGetPCIBusId(bus, (int)sizeof bus, i) == cudaSuccess) {
        /* The runtime prints hex digits in upper case; lspci and sysfs use
         * lower case, which is what people grep for. */
        for (size_t k = 0; k < sizeof bus && bus[k]; k++)
            bus[k] = (char)tolower((unsigned char)bus[k]);
        snprintf(p->pci_bus_id, sizeof p->pci_bus_id, "%s", bus);
    } else {
        (void)cudaGetLastError();
    }
    return cudaSuccess;
}

static int cuda_discover(pf_device *devs, int max, char *detail, size_t detail_size)
{
    int driver = 0, runtime = 0;
    char dv[16], rv[16];
    (void)cudaDriverGetVersion(&driver); /* 0 when no driver is installed */
    (void)cudaRuntimeGetVersion(&runtime);
    fmt_version(dv, sizeof dv, driver);
    fmt_version(rv, sizeof rv, runtime);

    if (max <= 0) {
        put_detail(detail, detail_size, "no device: no room for CUDA devices in the registry");
        return 0;
    }
    int count = 0;
    int64_t t0 = pf_time_ns();
    cudaError_t err = cudaGetDeviceCount(&count);
    PF_LOGD("cuda: driver initialised (cudaGetDeviceCount) in %.1f ms",
            (double)(pf_time_ns() - t0) / 1e6);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        const char *why = "cudaGetDeviceCount failed";
        char buf[96];
        if (err == cudaErrorInsufficientDriver) {
            if (driver == 0) {
                why = "CUDA driver not found";
            } else {
                snprintf(buf, sizeof buf, "CUDA driver %s is older than the runtime %s", dv, rv);
                why = buf;
            }
        } else if (err == cudaErrorNoDevice) {
            const char *vis = getenv("CUDA_VISIBLE_DEVICES");
            if (vis) {
                snprintf(buf, sizeof buf,
                         "no CUDA-capable GPU found (CUDA_VISIBLE_DEVICES='%.40s')", vis);
                why = buf;
            } else {
                why = "no CUDA-capable GPU found";
            }
        } else if (err == cudaErrorStubLibrary) {
            why = "libcuda.so.1 is the toolkit's stub, not a real driver (check LD_LIBRARY_PATH)";
        } else if (err == cudaErrorDevicesUnavailable) {
            why = "all CUDA GPUs are busy or unavailable (compute mode)";
        }
        put_detail(detail, detail_size, "no device: %s (%s: %s)", why, cudaGetErrorName(err),
                   cudaGetErrorString(err));
        return 0;
    }
    if (count <= 0) {
        put_detail(detail, detail_size, "no device: the CUDA driver %s reports no GPU", dv);
        return 0;
    }

    int n = 0;
    const char *stop_call = NULL;
    cudaError_t stop_err = cudaSuccess;
    for (int i = 0; i < count && i < max; i++) {
        pf_device *d = &devs[i];
        /* The registry indexes devices 0..n-1 and uses the index as the CUDA
         * ordinal, so a device whose properties cannot be read ends the list
         * rather than leaving a hole. */
        err = read_props(i, &d->props);
        if (err != cudaSuccess) {
            (void)cudaGetLastError();
            stop_call = "cudaGetDeviceProperties";
            stop_err = err;
            break;
        }
        d->be = &pf_cuda_backend;
        n++;
    }
    pf_cuda_device_total = n;

    if (!detail || detail_size == 0) return n;
    int len = snprintf(detail, detail_size, "CUDA runtime %s, driver %s", rv, dv);
    if (len < 0 || (size_t)len >= detail_size) return n;
    if (n == 0) {
        put_detail(detail, detail_size, "no device: %s(%d) failed: %s (CUDA runtime %s, driver %s)",
                   stop_call ? stop_call : "discovery", 0, cudaGetErrorString(stop_err), rv, dv);
    } else if (stop_call) {
        put_detail(detail + len, detail_size - (size_t)len,
                   "; %s(%d) failed: %s; using the first %d of %d GPUs", stop_call, n,
                   cudaGetErrorString(stop_err), n, count);
    } else if (count > max) {
        put_detail(detail + len, detail_size - (size_t)len, "; using the first %d of %d GPUs",
                   max, count);
    }
    return n;
}

/* Device-wide calls ------------------------------------------------------------ */

static pf_status cuda_mem_info(pf_device *dev, size_t *free_bytes, size_t *total_bytes)
{
    pf_status st = pf_cuda_use_device(dev);
    if (st != PF_OK) return st;
    size_t f = 0, t = 0;
    cudaError_t err = cudaMemGetInfo(&f, &t);
    if (err != cudaSuccess) return pf_cuda_fail(err, "cudaMemGetInfo on %s", dev->spec);
    *free_bytes = f;
    *total_bytes = t;
    return PF_OK;
}

static pf_status cuda_device_sync(pf_device *dev)
{
    pf_status st = pf_cuda_use_device(dev);
    if (st != PF_OK) return st;
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess) return pf_cuda_fail(err, "cudaDeviceSynchronize on %s", dev->spec);
    return PF_OK;
}

static pf_status cuda_mem_alloc(pf_device *dev, pf_mem_domain domain, size_t size, void **out)
{
    char b[32];
    *out = NULL;
    if (domain == PF_MEM_HOST) {
        /* Pageable host memory needs no runtime; 256-byte alignment like
         * cudaMalloc so code does not depend on the domain's alignment. */
        *out = pf_aligned_alloc(256, size);
        if (!*out)
            return pf_set_error(PF_ERR_NOMEM, "cannot allocate %s of host memory",
                                pf_fmt_bytes(b, sizeof b, size));
        return PF_OK;
    }
    if (domain != PF_MEM_DEVICE && domain != PF_MEM_PINNED)
        return pf_set_error(PF_ERR_INVALID, "cuda mem_alloc: unknown memory domain %d",
                            (int)domain);
    pf_status st = pf_cuda_use_device(dev);
    if (st != PF_OK) return st;
    /* cudaMalloc(0) succeeds with a NULL pointer; callers treat NULL as
     * failure, so ask for one byte instead. */
    size_t n = size ? size : 1;
    void *p = NULL;
    cudaError_t err;
    if (domain == PF_MEM_DEVICE) {
        err = cudaMalloc(&p, n);
        if (err != cudaSuccess)
            return pf_cuda_fail(err, "cudaMalloc(%s) on %s", pf_fmt_bytes(b, sizeof b, n),
                                dev->spec);
    } else {
        /* Portable: usable (DMA-able) by every GPU, not only the current one,
         * since a pinned pool may feed streams of several devices. */
        err = cudaHostAlloc(&p, n, cudaHostAllocPortable);
        if (err != cudaSuccess)
            return pf_cuda_fail(err, "cudaHostAlloc(%s, portable) for %s",
                                pf_fmt_bytes(b, sizeof b, n), dev->spec);
    }
    *out = p;
    return PF_OK;
}

static void cuda_mem_free(pf_device *dev, pf_mem_domain domain, void *ptr)
{
    if (!ptr) return;
    if (domain == PF_MEM_HOST) {
        pf_aligned_free(ptr);
        return;
    }
    cudaError_t err = cudaSetDevice(dev->props.index);
    const char *call = "cudaSetDevice";
    if (err == cudaSuccess) {
        if (domain == PF_MEM_DEVICE) {
            err = cudaFree(ptr);
            call = "cudaFree";
        } else {
            err = cudaFreeHost(ptr);
            call = "cudaFreeHost";
        }
    }
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        /* At process exit the runtime may be gone before our pools: the
         * memory is released with the process anyway. */
        if (!pf_cuda_is_teardown_error(err))
            PF_LOGW("%s(%p) on %s failed: %s (%s)", call, ptr, dev->spec,
                    cudaGetErrorString(err), cudaGetErrorName(err));
    }
}

/* cudaDeviceEnablePeerAccess is per (current device, peer): both ways, so a
 * copy on either device's stream reads or writes the other's memory over
 * NVLink or PCIe directly. */
static pf_status cuda_peer_enable(pf_device *a, pf_device *b, bool *ok)
{
    *ok = false;
    int ia = a->props.index, ib = b->props.index, ab = 0, ba = 0, cur = 0;
    if (cudaDeviceCanAccessPeer(&ab, ia, ib) != cudaSuccess ||
        cudaDeviceCanAccessPeer(&ba, ib, ia) != cudaSuccess) {
        (void)cudaGetLastError();
        return PF_OK;
    }
    if (!ab || !ba) return PF_OK;
    cudaGetDevice(&cur);
    cudaError_t e = cudaSuccess;
    for (int k = 0; k < 2 && e == cudaSuccess; k++) {
        e = cudaSetDevice(k ? ib : ia);
        if (e == cudaSuccess) e = cudaDeviceEnablePeerAccess(k ? ia : ib, 0);
        if (e == cudaErrorPeerAccessAlreadyEnabled) {
            (void)cudaGetLastError();
            e = cudaSuccess;
        }
    }
    cudaSetDevice(cur);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return pf_set_error(PF_ERR_DEVICE, "peer access between %s and %s: %s", a->spec, b->spec,
                            cudaGetErrorString(e));
    }
    *ok = true;
    return PF_OK;
}

const pf_backend pf_cuda_backend = {
    .type = PF_DEVICE_CUDA,
    .name = "cuda",
    .discover = cuda_discover,
    .mem_info = cuda_mem_info,
    .device_sync = cuda_device_sync,
    .peer_enable = cuda_peer_enable,
    .mem_alloc = cuda_mem_alloc,
    .mem_free = cuda_mem_free,
    .stream_create = pf_cuda_stream_create,
    .stream_destroy = pf_cuda_stream_destroy,
    .stream_sync = pf_cuda_stream_sync,
    .stream_query = pf_cuda_stream_query,
    .stream_launch_host = pf_cuda_stream_launch_host,
    .event_create = pf_cuda_event_create,
    .event_destroy = pf_cuda_event_destroy,
    .event_record = pf_cuda_event_record,
    .event_sync = pf_cuda_event_sync,
    .event_query = pf_cuda_event_query,
    .event_elapsed = pf_cuda_event_elapsed,
    .stream_wait_event = pf_cuda_stream_wait_event,
    .memcpy_async = pf_cuda_memcpy_async,
    .memcpy2d_async = pf_cuda_memcpy2d_async,
    .memset_async = pf_cuda_memset_async,
    .graph_begin = pf_cuda_graph_begin,
    .graph_end = pf_cuda_graph_end,
    .graph_launch = pf_cuda_graph_launch,
    .graph_destroy = pf_cuda_graph_destroy,
};
