/* Internal: the pf_buffer struct, so pools can embed and reuse buffer records
 * (the steady state then allocates nothing, not even the small header). */
#ifndef PF_CORE_BUFFER_IMPL_H
#define PF_CORE_BUFFER_IMPL_H

#include <stdatomic.h>

#include "pixflow/buffer.h"

struct pf_buffer {
    atomic_int refcount;
    void *data;
    size_t size;
    pf_mem_domain domain;
    pf_device *device;
    pf_buffer_free_fn free_fn;  /* runs at the last unref */
    void *opaque;
    int embedded;               /* 1: the struct belongs to a pool; not freed here */
};

/* Initialises a pool-owned record to one reference. On the last unref only
 * free_fn(opaque, data, size) runs; the record's storage is the pool's. */
void pf_buffer_init_embedded(pf_buffer *b, void *data, size_t size, pf_mem_domain domain,
                             pf_device *device, pf_buffer_free_fn free_fn, void *opaque);

#endif
