/* Private: slot memory of pixflow IPC, one backend per kind of memory.
 *
 * A slot is one whole allocation (never part of a larger one, so a consumer
 * that maps it sees nothing else): a sealed memfd on the host, a VMM
 * allocation or a cudaMalloc block on a CUDA device. The producer allocates
 * and exports slots; a consumer imports them from the descriptors and
 * handles of the config message. CUDA slots also carry an interprocess
 * event: the producer records it after writing, a consumer's stream waits
 * on it. */
#ifndef PF_IPC_MEM_H
#define PF_IPC_MEM_H

#include <stdbool.h>

#include "ipc_msg.h"
#include "pixflow/device.h"

typedef struct ipc_slot_mem {
    pf_ipc_backend backend;
    uint8_t *ptr;           /* host address (memfd) or device address (CUDA) */
    uint64_t size;          /* bytes mapped */
    int fd;                 /* memfd, or the exported VMM handle (producer); -1 */
    int fd_send;            /* producer: the descriptor consumers get (memfd: read-only) */
    unsigned long long vmm; /* CUmemGenericAllocationHandle */
    void *event;            /* cudaEvent_t (CUDA) */
    int cuda_index;         /* device ordinal (CUDA) */
    bool imported;          /* consumer side */
    ipc_slot_handles handles; /* legacy memory handle, event handle */
} ipc_slot_mem;

/* Producer: a slot of at least `size` bytes (rounded up to the backend's
 * granularity: m->size) with its descriptor and handles. */
pf_status ipc_mem_alloc(pf_ipc_backend b, pf_device *dev, uint64_t size, ipc_slot_mem *m);
/* Consumer: maps a slot of `size` bytes from `fd` (memfd, VMM; taken: closed
 * here whatever happens) or from the handles (legacy), and opens the event. */
pf_status ipc_mem_import(pf_ipc_backend b, pf_device *dev, int fd, const ipc_slot_handles *h,
                         uint64_t size, ipc_slot_mem *m);
/* Releases what alloc or import made (either side). */
void ipc_mem_free(ipc_slot_mem *m);

/* CUDA: records the slot's event on `s` (producer) / makes `s` wait on it
 * (consumer). No-ops on the host. */
pf_status ipc_mem_fence_record(ipc_slot_mem *m, pf_stream *s);
pf_status ipc_mem_fence_wait(ipc_slot_mem *m, pf_stream *s);

/* The backend for slots on `dev`: memfd for the CPU; on CUDA VMM where the
 * device shares VMM memory through POSIX descriptors, else legacy;
 * PIXFLOW_IPC_CUDA=legacy|vmm forces one. */
pf_status ipc_mem_choose(pf_device *dev, pf_ipc_backend *out);
/* The CUDA device's UUID (zero on the CPU). */
pf_status ipc_mem_device_uuid(pf_device *dev, uint8_t uuid[16]);

/* Host side (ipc_mem_host.c), also the non-CUDA part of the dispatch. */
pf_status ipc_host_alloc(uint64_t size, ipc_slot_mem *m);
pf_status ipc_host_import(int fd, uint64_t size, ipc_slot_mem *m);
void ipc_host_free(ipc_slot_mem *m);
/* close(fd) when fd >= 0. */
void ipc_close_fd_quiet(int fd);

/* CUDA side (ipc_mem_cuda.c): PF_ERR_UNSUPPORTED in builds without CUDA. */
pf_status ipc_cuda_alloc(pf_ipc_backend b, pf_device *dev, uint64_t size, ipc_slot_mem *m);
pf_status ipc_cuda_import(pf_ipc_backend b, pf_device *dev, int fd, const ipc_slot_handles *h,
                          uint64_t size, ipc_slot_mem *m);
void ipc_cuda_free(ipc_slot_mem *m);
pf_status ipc_cuda_fence_record(ipc_slot_mem *m, pf_stream *s);
pf_status ipc_cuda_fence_wait(ipc_slot_mem *m, pf_stream *s);
pf_status ipc_cuda_choose(pf_device *dev, pf_ipc_backend *out);
pf_status ipc_cuda_uuid(pf_device *dev, uint8_t uuid[16]);

#endif
