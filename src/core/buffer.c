/* Refcounted buffers: the ownership mechanism under frames, tensors, pools. */
#include <stdlib.h>

#include "../device/backend.h"
#include "buffer_impl.h"
#include "error.h"
#include "sys.h"

const char *pf_mem_domain_name(pf_mem_domain domain)
{
    switch (domain) {
    case PF_MEM_HOST: return "host";
    case PF_MEM_PINNED: return "pinned";
    case PF_MEM_DEVICE: return "device";
    }
    return "?";
}

void pf_buffer_init_embedded(pf_buffer *b, void *data, size_t size, pf_mem_domain domain,
                             pf_device *device, pf_buffer_free_fn free_fn, void *opaque)
{
    atomic_init(&b->refcount, 1);
    b->data = data;
    b->size = size;
    b->domain = domain;
    b->device = device ? device : pf_cpu_device();
    b->free_fn = free_fn;
    b->opaque = opaque;
    b->embedded = 1;
}

pf_status pf_buffer_wrap(void *data, size_t size, pf_mem_domain domain, pf_device *device,
                         pf_buffer_free_fn free_fn, void *opaque, pf_buffer **out)
{
    PF_CHECK_ARG(out, "pf_buffer_wrap", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(data || size == 0, "pf_buffer_wrap", "data is NULL but size > 0");
    if (domain != PF_MEM_HOST && domain != PF_MEM_PINNED && domain != PF_MEM_DEVICE)
        return pf_set_error(PF_ERR_INVALID, "pf_buffer_wrap: unknown memory domain %d",
                            (int)domain);
    pf_buffer *b = malloc(sizeof *b);
    if (!b) return pf_set_error(PF_ERR_NOMEM, "pf_buffer_wrap: out of host memory");
    pf_buffer_init_embedded(b, data, size, domain, device, free_fn, opaque);
    b->embedded = 0;
    *out = b;
    return PF_OK;
}

static void free_host(void *opaque, void *data, size_t size)
{
    (void)opaque;
    (void)size;
    pf_aligned_free(data);
}

pf_status pf_buffer_alloc_host(size_t size, pf_buffer **out)
{
    PF_CHECK_ARG(out, "pf_buffer_alloc_host", "out is NULL");
    *out = NULL;
    void *p = pf_aligned_alloc(64, size);
    if (!p) {
        char b[32];
        return pf_set_error(PF_ERR_NOMEM, "cannot allocate %s of host memory",
                            pf_fmt_bytes(b, sizeof b, size));
    }
    pf_status st = pf_buffer_wrap(p, size, PF_MEM_HOST, NULL, free_host, NULL, out);
    if (st != PF_OK) pf_aligned_free(p);
    return st;
}

static void free_view(void *opaque, void *data, size_t size)
{
    (void)data;
    (void)size;
    pf_buffer *parent = opaque;
    pf_buffer_unref(&parent);
}

pf_status pf_buffer_view(pf_buffer *parent, size_t offset, size_t size, pf_buffer **out)
{
    PF_CHECK_ARG(out, "pf_buffer_view", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(parent, "pf_buffer_view", "parent is NULL");
    if (offset > parent->size || size > parent->size - offset)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_buffer_view: range [%zu, %zu + %zu) outside a buffer of %zu bytes",
                            offset, offset, size, parent->size);
    pf_buffer *b = malloc(sizeof *b);
    if (!b) return pf_set_error(PF_ERR_NOMEM, "pf_buffer_view: out of host memory");
    pf_buffer_init_embedded(b, (char *)parent->data + offset, size, parent->domain,
                            parent->device, free_view, pf_buffer_ref(parent));
    b->embedded = 0;
    *out = b;
    return PF_OK;
}

pf_buffer *pf_buffer_ref(pf_buffer *buf)
{
    if (buf) atomic_fetch_add_explicit(&buf->refcount, 1, memory_order_relaxed);
    return buf;
}

void pf_buffer_unref(pf_buffer **pbuf)
{
    if (!pbuf || !*pbuf) return;
    pf_buffer *b = *pbuf;
    *pbuf = NULL;
    /* acq_rel: the thread running free_fn must see every write made through
     * the other references before they were dropped. */
    int prev = atomic_fetch_sub_explicit(&b->refcount, 1, memory_order_acq_rel);
    if (prev > 1) return;
    if (prev < 1) {
        PF_LOGE("pf_buffer_unref: buffer %p released more often than referenced", (void *)b);
        return;
    }
    int embedded = b->embedded;
    pf_buffer_free_fn fn = b->free_fn;
    void *opaque = b->opaque, *data = b->data;
    size_t size = b->size;
    if (!embedded) free(b);
    /* For embedded records the pool may reuse `b` as soon as fn runs. */
    if (fn) fn(opaque, data, size);
}

void *pf_buffer_data(const pf_buffer *buf) { return buf ? buf->data : NULL; }
size_t pf_buffer_size(const pf_buffer *buf) { return buf ? buf->size : 0; }
pf_mem_domain pf_buffer_domain(const pf_buffer *buf) { return buf ? buf->domain : PF_MEM_HOST; }
pf_device *pf_buffer_device(const pf_buffer *buf) { return buf ? buf->device : pf_cpu_device(); }
int pf_buffer_refcount(const pf_buffer *buf)
{
    return buf ? atomic_load_explicit(&((pf_buffer *)buf)->refcount, memory_order_relaxed) : 0;
}
