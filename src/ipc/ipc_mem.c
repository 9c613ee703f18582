/* Slot memory dispatch (ipc_mem.h): host slots here, CUDA slots in
 * ipc_mem_cuda.c. */
#include <string.h>

#include "ipc_mem.h"

#include "../core/error.h"

static bool on_cuda(pf_device *dev)
{
    return dev && pf_device_get_type(dev) == PF_DEVICE_CUDA;
}

pf_status ipc_mem_choose(pf_device *dev, pf_ipc_backend *out)
{
    if (!on_cuda(dev)) {
        *out = PF_IPC_BACKEND_MEMFD;
        return PF_OK;
    }
    return ipc_cuda_choose(dev, out);
}

pf_status ipc_mem_device_uuid(pf_device *dev, uint8_t uuid[16])
{
    memset(uuid, 0, 16);
    return on_cuda(dev) ? ipc_cuda_uuid(dev, uuid) : PF_OK;
}

pf_status ipc_mem_alloc(pf_ipc_backend b, pf_device *dev, uint64_t size, ipc_slot_mem *m)
{
    memset(m, 0, sizeof *m);
    m->fd = m->fd_send = -1;
    m->backend = b;
    if (b == PF_IPC_BACKEND_MEMFD) return ipc_host_alloc(size, m);
    return ipc_cuda_alloc(b, dev, size, m);
}

pf_status ipc_mem_import(pf_ipc_backend b, pf_device *dev, int fd, const ipc_slot_handles *h,
                         uint64_t size, ipc_slot_mem *m)
{
    memset(m, 0, sizeof *m);
    m->fd = m->fd_send = -1;
    m->backend = b;
    m->imported = true;
    if (b == PF_IPC_BACKEND_MEMFD) {
        if (on_cuda(dev))
            return pf_set_error(PF_ERR_UNSUPPORTED, "ipc: the producer shares host memory but "
                                "this consumer runs on %s: run both on the CPU or both on CUDA",
                                pf_device_spec(dev));
        return ipc_host_import(fd, size, m);
    }
    if (!on_cuda(dev)) {
        ipc_close_fd_quiet(fd);
        return pf_set_error(PF_ERR_UNSUPPORTED, "ipc: the producer shares CUDA memory (%s) but "
                            "this consumer runs on the CPU: run it on a CUDA device",
                            pf_ipc_backend_name(b));
    }
    return ipc_cuda_import(b, dev, fd, h, size, m);
}

void ipc_mem_free(ipc_slot_mem *m)
{
    if (m->backend == PF_IPC_BACKEND_MEMFD) ipc_host_free(m);
    else ipc_cuda_free(m);
}

pf_status ipc_mem_fence_record(ipc_slot_mem *m, pf_stream *s)
{
    return m->backend == PF_IPC_BACKEND_MEMFD ? PF_OK : ipc_cuda_fence_record(m, s);
}

pf_status ipc_mem_fence_wait(ipc_slot_mem *m, pf_stream *s)
{
    return m->backend == PF_IPC_BACKEND_MEMFD ? PF_OK : ipc_cuda_fence_wait(m, s);
}
