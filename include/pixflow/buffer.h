/* pixflow/buffer.h - refcounted memory blocks on the host or a device.
 *
 * A pf_buffer is the one ownership mechanism under frames, tensors and pools:
 * a pointer, a size, the memory domain it lives in, the device that owns it, an
 * atomic reference count and a free callback run when the last reference goes.
 *
 *   pf_buffer *b = NULL;
 *   if (pf_buffer_alloc_host(1 << 20, &b) < 0) ...;
 *   pf_buffer *view = NULL;
 *   pf_buffer_view(b, 4096, 1024, &view);   // keeps b alive
 *   pf_buffer_unref(&b);                    // memory still alive through view
 *   memset(pf_buffer_data(view), 0, pf_buffer_size(view));
 *   pf_buffer_unref(&view);                 // last ref: memory freed
 *
 * Thread safety: pf_buffer_ref / pf_buffer_unref may be called concurrently
 * from any threads on the same buffer. The bytes themselves are not protected:
 * writers must make sure nobody else reads while they write (in practice:
 * write only while pf_buffer_refcount() == 1, or order accesses on a stream).
 * Device-domain data pointers are device addresses and must not be
 * dereferenced on the host.
 */
#ifndef PIXFLOW_BUFFER_H
#define PIXFLOW_BUFFER_H

#include "core.h"

PF_BEGIN_DECLS

typedef struct pf_device pf_device; /* see device.h */
typedef struct pf_stream pf_stream; /* see device.h */
typedef struct pf_allocator pf_allocator; /* see device.h */
typedef struct pf_buffer pf_buffer;

typedef enum pf_mem_domain {
    PF_MEM_HOST = 0,   /* ordinary pageable host memory */
    PF_MEM_PINNED = 1, /* page-locked host memory, DMA-able by the device */
    PF_MEM_DEVICE = 2  /* device memory; not host-addressable */
} pf_mem_domain;

PF_API const char *pf_mem_domain_name(pf_mem_domain domain);

/* Called once, when the last reference to a buffer made by pf_buffer_wrap()
 * is dropped. `data` and `size` are the values given to pf_buffer_wrap(). It
 * may run on any thread that calls pf_buffer_unref(). */
typedef void (*pf_buffer_free_fn)(void *opaque, void *data, size_t size);

/* Allocates `size` bytes of host memory aligned to 64 bytes (PF_MEM_HOST,
 * device = the CPU device). size may be 0 (a valid, empty buffer).
 * The caller owns the one reference in *out. */
PF_API pf_status pf_buffer_alloc_host(size_t size, pf_buffer **out);

/* Wraps memory the caller already owns. `free_fn` (may be NULL: memory is not
 * freed) runs with `opaque` when the last reference is dropped. `device` is the
 * owning device (NULL means the CPU device). On failure free_fn is NOT called
 * and the caller keeps ownership of data. */
PF_API pf_status pf_buffer_wrap(void *data, size_t size, pf_mem_domain domain,
                                pf_device *device, pf_buffer_free_fn free_fn,
                                void *opaque, pf_buffer **out);

/* A new buffer for bytes [offset, offset + size) of `parent`, holding a
 * reference to the parent's storage (a view of a view references the
 * original storage). Fails with PF_ERR_INVALID if the range does not fit. */
PF_API pf_status pf_buffer_view(pf_buffer *parent, size_t offset, size_t size,
                                pf_buffer **out);

/* Adds a reference and returns `buf` (NULL-safe: returns NULL). */
PF_API pf_buffer *pf_buffer_ref(pf_buffer *buf);

/* Drops the reference held in *buf and sets *buf = NULL. Accepts NULL and
 * a pointer to NULL. */
PF_API void pf_buffer_unref(pf_buffer **buf);

PF_API void *pf_buffer_data(const pf_buffer *buf);
PF_API size_t pf_buffer_size(const pf_buffer *buf);
PF_API pf_mem_domain pf_buffer_domain(const pf_buffer *buf);
/* Owning device; never NULL (host buffers belong to the CPU device). */
PF_API pf_device *pf_buffer_device(const pf_buffer *buf);
/* Current number of references to this buffer object (a snapshot, only
 * informative under concurrency). Each view holds one reference on the
 * buffer it was made from. */
PF_API int pf_buffer_refcount(const pf_buffer *buf);

PF_END_DECLS

#endif
