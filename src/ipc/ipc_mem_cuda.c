/* CUDA slots for pixflow IPC (ipc_mem.h).
 *
 * VMM (preferred): each slot is cuMemCreate'd with POSIX file-descriptor
 * handles requested, mapped into the producer's address space, and
 * exported once as a descriptor (cuMemExportToShareableHandle) that travels
 * to consumers by SCM_RIGHTS; a consumer imports it
 * (cuMemImportFromShareableHandle), reserves an address range, maps it and
 * grants its device access. The driver keeps the memory until every
 * process has unmapped it, so a producer that dies does not pull memory
 * from under a consumer. Legacy (where the device cannot export POSIX
 * descriptors, or PIXFLOW_IPC_CUDA=legacy): cudaMalloc per slot (a whole
 * allocation) and cudaIpcGetMemHandle / cudaIpcOpenMemHandle.
 *
 * Driver entry points come from cudaGetDriverEntryPointByVersion, so
 * nothing links libcuda (cuda.h is used for its types only). Every slot
 * has an interprocess event (cudaEventInterprocess, no timing) shared by
 * cudaIpcGetEventHandle: the producer records it after the frame's copy,
 * a consumer's stream waits on it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc_mem.h"

#include "../core/error.h"

#ifndef PF_HAVE_CUDA

static pf_status no_cuda(void)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "ipc: this build has no CUDA backend");
}

pf_status ipc_cuda_alloc(pf_ipc_backend b, pf_device *dev, uint64_t size, ipc_slot_mem *m)
{
    (void)b, (void)dev, (void)size, (void)m;
    return no_cuda();
}

pf_status ipc_cuda_import(pf_ipc_backend b, pf_device *dev, int fd, const ipc_slot_handles *h,
                          uint64_t size, ipc_slot_mem *m)
{
    (void)b, (void)dev, (void)h, (void)size, (void)m;
    ipc_close_fd_quiet(fd);
    return no_cuda();
}

void ipc_cuda_free(ipc_slot_mem *m) { (void)m; }
pf_status ipc_cuda_fence_record(ipc_slot_mem *m, pf_stream *s)
{
    (void)m, (void)s;
    return no_cuda();
}
pf_status ipc_cuda_fence_wait(ipc_slot_mem *m, pf_stream *s)
{
    (void)m, (void)s;
    return no_cuda();
}
pf_status ipc_cuda_choose(pf_device *dev, pf_ipc_backend *out)
{
    (void)dev, (void)out;
    return no_cuda();
}
pf_status ipc_cuda_uuid(pf_device *dev, uint8_t uuid[16])
{
    (void)dev, (void)uuid;
    return no_cuda();
}

#else

#include <cuda.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <unistd.h>

#include "../cuda/cuda_internal.h"

typedef CUresult (*fn_cuDeviceGet)(CUdevice *, int);
typedef CUresult (*fn_cuDeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
typedef CUresult (*fn_cuMemCreate)(CUmemGenericAllocationHandle *, size_t,
                                   const CUmemAllocationProp *, unsigned long long);
typedef CUresult (*fn_cuMemRelease)(CUmemGenericAllocationHandle);
typedef CUresult (*fn_cuMemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr,
                                           unsigned long long);
typedef CUresult (*fn_cuMemAddressFree)(CUdeviceptr, size_t);
typedef CUresult (*fn_cuMemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                                unsigned long long);
typedef CUresult (*fn_cuMemUnmap)(CUdeviceptr, size_t);
typedef CUresult (*fn_cuMemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
typedef CUresult (*fn_cuMemExportToShareableHandle)(void *, CUmemGenericAllocationHandle,
                                                    CUmemAllocationHandleType,
                                                    unsigned long long);
typedef CUresult (*fn_cuMemImportFromShareableHandle)(CUmemGenericAllocationHandle *, void *,
                                                      CUmemAllocationHandleType);
typedef CUresult (*fn_cuMemGetAllocationGranularity)(size_t *, const CUmemAllocationProp *,
                                                     CUmemAllocationGranularity_flags);

static struct {
    fn_cuDeviceGet DeviceGet;
    fn_cuDeviceGetAttribute DeviceGetAttribute;
    fn_cuMemCreate MemCreate;
    fn_cuMemRelease MemRelease;
    fn_cuMemAddressReserve MemAddressReserve;
    fn_cuMemAddressFree MemAddressFree;
    fn_cuMemMap MemMap;
    fn_cuMemUnmap MemUnmap;
    fn_cuMemSetAccess MemSetAccess;
    fn_cuMemExportToShareableHandle MemExport;
    fn_cuMemImportFromShareableHandle MemImport;
    fn_cuMemGetAllocationGranularity MemGranularity;
    pf_status status;
    char error[256];
} drv;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;

static void load_one(const char *name, void **fn)
{
    if (drv.status != PF_OK) return;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    /* 12000: the ABI these signatures were written against. */
    cudaError_t e = cudaGetDriverEntryPointByVersion(name, fn, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !*fn) {
        (void)cudaGetLastError();
        drv.status = PF_ERR_UNSUPPORTED;
        snprintf(drv.error, sizeof drv.error, "the driver has no %s (%s)", name,
                 e != cudaSuccess ? cudaGetErrorString(e) : "symbol not found");
    }
}

static void load_driver(void)
{
    drv.status = PF_OK;
    load_one("cuDeviceGet", (void **)&drv.DeviceGet);
    load_one("cuDeviceGetAttribute", (void **)&drv.DeviceGetAttribute);
    load_one("cuMemCreate", (void **)&drv.MemCreate);
    load_one("cuMemRelease", (void **)&drv.MemRelease);
    load_one("cuMemAddressReserve", (void **)&drv.MemAddressReserve);
    load_one("cuMemAddressFree", (void **)&drv.MemAddressFree);
    load_one("cuMemMap", (void **)&drv.MemMap);
    load_one("cuMemUnmap", (void **)&drv.MemUnmap);
    load_one("cuMemSetAccess", (void **)&drv.MemSetAccess);
    load_one("cuMemExportToShareableHandle", (void **)&drv.MemExport);
    load_one("cuMemImportFromShareableHandle", (void **)&drv.MemImport);
    load_one("cuMemGetAllocationGranularity", (void **)&drv.MemGranularity);
}

static pf_status driver(void)
{
    pthread_once(&drv_once, load_driver);
    if (drv.status != PF_OK)
        return pf_set_error(drv.status, "ipc: CUDA VMM unavailable: %s", drv.error);
    return PF_OK;
}

static pf_status cu_fail(CUresult r, const char *what)
{
    return pf_set_error(r == CUDA_ERROR_OUT_OF_MEMORY ? PF_ERR_NOMEM : PF_ERR_DEVICE,
                        "ipc: %s failed (CUresult %d)", what, (int)r);
}

/* Makes the device current with its primary context alive (driver calls
 * need a current context). */
static pf_status use_device(pf_device *dev)
{
    pf_status st = pf_cuda_use_device(dev);
    if (st != PF_OK) return st;
    cudaError_t e = cudaFree(NULL);
    if (e != cudaSuccess) return pf_cuda_fail(e, "cudaFree(NULL) on %s", pf_device_spec(dev));
    return PF_OK;
}

static void alloc_prop(CUmemAllocationProp *prop, CUdevice d)
{
    memset(prop, 0, sizeof *prop);
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = d;
    prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
}

static bool vmm_supported(pf_device *dev, char *why, size_t ws)
{
    if (driver() != PF_OK) {
        snprintf(why, ws, "%s", pf_last_error());
        return false;
    }
    CUdevice d;
    int vmm = 0, fd = 0;
    if (drv.DeviceGet(&d, pf_device_props_get(dev)->index) != CUDA_SUCCESS ||
        drv.DeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                               d) != CUDA_SUCCESS ||
        drv.DeviceGetAttribute(&fd, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                               d) != CUDA_SUCCESS) {
        snprintf(why, ws, "cuDeviceGetAttribute failed");
        return false;
    }
    if (!vmm || !fd) {
        snprintf(why, ws, "%s has %s", pf_device_spec(dev),
                 !vmm ? "no virtual memory management" : "no POSIX descriptor handles");
        return false;
    }
    return true;
}

pf_status ipc_cuda_choose(pf_device *dev, pf_ipc_backend *out)
{
    const char *force = getenv("PIXFLOW_IPC_CUDA");
    pf_status st = use_device(dev);
    if (st != PF_OK) return st;
    if (force && strcmp(force, "legacy") == 0) {
        *out = PF_IPC_BACKEND_CUDA_LEGACY;
        return PF_OK;
    }
    char why[256] = "";
    bool ok = vmm_supported(dev, why, sizeof why);
    if (force && strcmp(force, "vmm") == 0) {
        if (!ok)
            return pf_set_error(PF_ERR_UNSUPPORTED, "ipc: PIXFLOW_IPC_CUDA=vmm but %s", why);
        *out = PF_IPC_BACKEND_CUDA_VMM;
        return PF_OK;
    }
    if (force && force[0] && strcmp(force, "auto") != 0)
        return pf_set_error(PF_ERR_INVALID, "ipc: PIXFLOW_IPC_CUDA '%s': expected auto, vmm or "
                            "legacy", force);
    if (!ok) PF_LOGI("ipc: CUDA VMM sharing unavailable (%s): using cudaIpc handles", why);
    *out = ok ? PF_IPC_BACKEND_CUDA_VMM : PF_IPC_BACKEND_CUDA_LEGACY;
    return PF_OK;
}

pf_status ipc_cuda_uuid(pf_device *dev, uint8_t uuid[16])
{
    struct cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, pf_device_props_get(dev)->index);
    if (e != cudaSuccess) return pf_cuda_fail(e, "cudaGetDeviceProperties");
    memcpy(uuid, p.uuid.bytes, 16);
    return PF_OK;
}

static pf_status make_event(ipc_slot_mem *m)
{
    cudaEvent_t ev = NULL;
    cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventInterprocess | cudaEventDisableTiming);
    if (e != cudaSuccess) return pf_cuda_fail(e, "cudaEventCreateWithFlags(interprocess)");
    m->event = ev;
    cudaIpcEventHandle_t h;
    e = cudaIpcGetEventHandle(&h, ev);
    if (e != cudaSuccess) return pf_cuda_fail(e, "cudaIpcGetEventHandle");
    memcpy(m->handles.event, &h, sizeof h < IPC_HANDLE_BYTES ? sizeof h : IPC_HANDLE_BYTES);
    return PF_OK;
}

static pf_status vmm_map(ipc_slot_mem *m, CUdevice d, CUmemGenericAllocationHandle h)
{
    CUdeviceptr ptr = 0;
    CUresult r = drv.MemAddressReserve(&ptr, m->size, 0, 0, 0);
    if (r != CUDA_SUCCESS) return cu_fail(r, "cuMemAddressReserve");
    r = drv.MemMap(ptr, m->size, 0, h, 0);
    if (r != CUDA_SUCCESS) {
        drv.MemAddressFree(ptr, m->size);
        return cu_fail(r, "cuMemMap");
    }
    m->ptr = (uint8_t *)(uintptr_t)ptr; /* from here ipc_cuda_free undoes it */
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = d;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    r = drv.MemSetAccess(ptr, m->size, &acc, 1);
    if (r != CUDA_SUCCESS) return cu_fail(r, "cuMemSetAccess");
    return PF_OK;
}

pf_status ipc_cuda_alloc(pf_ipc_backend b, pf_device *dev, uint64_t size, ipc_slot_mem *m)
{
    m->cuda_index = pf_device_props_get(dev)->index;
    pf_status st = use_device(dev);
    if (st != PF_OK) return st;
    if (b == PF_IPC_BACKEND_CUDA_LEGACY) {
        m->size = (size + 255) & ~(uint64_t)255;
        void *p = NULL;
        cudaError_t e = cudaMalloc(&p, m->size);
        if (e != cudaSuccess) return pf_cuda_fail(e, "cudaMalloc(%llu) for an IPC slot",
                                                  (unsigned long long)m->size);
        m->ptr = p;
        cudaIpcMemHandle_t h;
        e = cudaIpcGetMemHandle(&h, p);
        if (e != cudaSuccess) {
            st = pf_cuda_fail(e, "cudaIpcGetMemHandle");
            ipc_cuda_free(m);
            return st;
        }
        memcpy(m->handles.mem, &h, sizeof h < IPC_HANDLE_BYTES ? sizeof h : IPC_HANDLE_BYTES);
    } else {
        if ((st = driver()) != PF_OK) return st;
        CUdevice d;
        CUresult r = drv.DeviceGet(&d, m->cuda_index);
        if (r != CUDA_SUCCESS) return cu_fail(r, "cuDeviceGet");
        CUmemAllocationProp prop;
        alloc_prop(&prop, d);
        size_t gran = 0;
        r = drv.MemGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
        if (r != CUDA_SUCCESS || gran == 0) return cu_fail(r, "cuMemGetAllocationGranularity");
        m->size = (size + gran - 1) / gran * gran;
        CUmemGenericAllocationHandle h = 0;
        r = drv.MemCreate(&h, m->size, &prop, 0);
        if (r != CUDA_SUCCESS) return cu_fail(r, "cuMemCreate(POSIX descriptor handle)");
        m->vmm = h;
        int fd = -1;
        r = drv.MemExport(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
        if (r != CUDA_SUCCESS) {
            ipc_cuda_free(m);
            return cu_fail(r, "cuMemExportToShareableHandle");
        }
        m->fd = fd; /* sent to consumers as it is (fd_send stays -1) */
        st = vmm_map(m, d, h);
        if (st != PF_OK) {
            ipc_cuda_free(m);
            return st;
        }
    }
    st = make_event(m);
    if (st != PF_OK) ipc_cuda_free(m);
    return st;
}

pf_status ipc_cuda_import(pf_ipc_backend b, pf_device *dev, int fd, const ipc_slot_handles *h,
                          uint64_t size, ipc_slot_mem *m)
{
    m->cuda_index = pf_device_props_get(dev)->index;
    m->size = size;
    pf_status st = use_device(dev);
    if (st != PF_OK) {
        ipc_close_fd_quiet(fd);
        return st;
    }
    if (b == PF_IPC_BACKEND_CUDA_LEGACY) {
        cudaIpcMemHandle_t mh;
        memcpy(&mh, h->mem, sizeof mh);
        void *p = NULL;
        cudaError_t e = cudaIpcOpenMemHandle(&p, mh, cudaIpcMemLazyEnablePeerAccess);
        if (e != cudaSuccess) return pf_cuda_fail(e, "cudaIpcOpenMemHandle");
        m->ptr = p;
    } else {
        if ((st = driver()) != PF_OK) {
            ipc_close_fd_quiet(fd);
            return st;
        }
        CUdevice d;
        CUresult r = drv.DeviceGet(&d, m->cuda_index);
        CUmemGenericAllocationHandle gh = 0;
        if (r == CUDA_SUCCESS)
            r = drv.MemImport(&gh, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
        ipc_close_fd_quiet(fd); /* the imported handle keeps the memory */
        if (r != CUDA_SUCCESS) return cu_fail(r, "cuMemImportFromShareableHandle");
        m->vmm = gh;
        st = vmm_map(m, d, gh);
        if (st != PF_OK) {
            ipc_cuda_free(m);
            return st;
        }
    }
    cudaIpcEventHandle_t eh;
    memcpy(&eh, h->event, sizeof eh);
    cudaEvent_t ev = NULL;
    cudaError_t e = cudaIpcOpenEventHandle(&ev, eh);
    if (e != cudaSuccess) {
        st = pf_cuda_fail(e, "cudaIpcOpenEventHandle");
        ipc_cuda_free(m);
        return st;
    }
    m->event = ev;
    return PF_OK;
}

void ipc_cuda_free(ipc_slot_mem *m)
{
    /* The last frame may be released on any thread: make the slot's device
     * current for the driver calls below. */
    if (m->ptr || m->event || m->vmm) cudaSetDevice(m->cuda_index);
    if (m->event) cudaEventDestroy((cudaEvent_t)m->event);
    m->event = NULL;
    if (m->backend == PF_IPC_BACKEND_CUDA_LEGACY) {
        if (m->ptr) {
            if (m->imported) cudaIpcCloseMemHandle(m->ptr);
            else cudaFree(m->ptr);
        }
    } else if (drv.status == PF_OK && drv.MemUnmap) {
        if (m->ptr) {
            CUdeviceptr p = (CUdeviceptr)(uintptr_t)m->ptr;
            drv.MemUnmap(p, m->size);
            drv.MemAddressFree(p, m->size);
        }
        if (m->vmm) drv.MemRelease((CUmemGenericAllocationHandle)m->vmm);
    }
    (void)cudaGetLastError(); /* teardown errors are not the next call's */
    m->ptr = NULL;
    m->vmm = 0;
    ipc_close_fd_quiet(m->fd);
    m->fd = -1;
}

pf_status ipc_cuda_fence_record(ipc_slot_mem *m, pf_stream *s)
{
    if (!s || !pf_stream_native(s))
        return pf_set_error(PF_ERR_INVALID, "ipc: publishing CUDA memory needs the CUDA stream "
                            "that wrote it");
    cudaError_t e = cudaEventRecord((cudaEvent_t)m->event, (cudaStream_t)pf_stream_native(s));
    return e == cudaSuccess ? PF_OK : pf_cuda_fail(e, "cudaEventRecord(IPC fence)");
}

pf_status ipc_cuda_fence_wait(ipc_slot_mem *m, pf_stream *s)
{
    if (!s || !pf_stream_native(s))
        return pf_set_error(PF_ERR_INVALID, "ipc: receiving CUDA frames needs a CUDA stream "
                            "to order the reads after the producer's fence");
    cudaError_t e = cudaStreamWaitEvent((cudaStream_t)pf_stream_native(s),
                                        (cudaEvent_t)m->event, 0);
    return e == cudaSuccess ? PF_OK : pf_cuda_fail(e, "cudaStreamWaitEvent(IPC fence)");
}

#endif
