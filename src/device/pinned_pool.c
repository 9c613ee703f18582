/* Pinned host pool: a fixed set of equal blocks of page-locked memory.
 *
 * Design
 * - All memory is one runtime allocation made at create (one cudaHostAlloc on
 *   CUDA: pinning is expensive and fragments the IOMMU mappings, so it is done
 *   once), cut into blocks whose stride is rounded up to 256 bytes so every
 *   block keeps the runtime's alignment. The CPU device uses ordinary host
 *   memory and reports it as PF_MEM_HOST.
 * - Each block has a record with an embedded pf_buffer; acquire pops a record
 *   from a LIFO free list (the most recently used block is the warmest in
 *   cache) and re-initialises its buffer, so acquire/release never mallocs.
 * - The last unref of a block's buffer pushes it back and signals one waiter.
 *   A waiter that gives up (timeout) while a block is free passes the signal
 *   on, so a wakeup is never lost to a waiter that is leaving.
 * - Lifetime: `refs` counts the handle, every block out and every thread
 *   inside acquire. destroy() closes the pool (waiters leave with
 *   PF_ERR_CLOSED) and drops the handle; whoever drops the last reference
 *   frees the memory and the struct. So a waiter that started before destroy
 *   never touches freed memory, and blocks still out stay valid.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/buffer_impl.h"
#include "../core/error.h"
#include "../core/sys.h"
#include "backend.h"

#define ALIGN 256u
#define POISON_BYTE 0xDB

typedef struct pool_block {
    pf_buffer buf;              /* handed out */
    pf_pinned_pool *pool;
    void *ptr;
    struct pool_block *next;    /* free list */
} pool_block;

struct pf_pinned_pool {
    pf_mutex mu;
    pf_cond cv;
    int refs;                   /* handle + blocks out + threads in acquire */
    bool closed;
    int waiters;
    pf_device *dev;
    pf_mem_domain alloc_domain; /* asked of the runtime */
    pf_mem_domain buf_domain;   /* reported by the buffers */
    void *mem;
    pool_block *blocks;         /* array of block_count records */
    pool_block *free_list;
    pf_pinned_pool_stats st;
    char name[64];
};

pf_pinned_pool_params pf_pinned_pool_params_default(void)
{
    pf_pinned_pool_params p = {0};
    p.device = NULL;
    p.block_size = 0;
    p.block_count = 0;
    p.name = NULL;
    return p;
}

static void pool_free(pf_pinned_pool *p)
{
    if (p->mem) p->dev->be->mem_free(p->dev, p->alloc_domain, p->mem);
    free(p->blocks);
    pf_cond_destroy(&p->cv);
    pf_mutex_destroy(&p->mu);
    free(p);
}

pf_status pf_pinned_pool_create(const pf_pinned_pool_params *prm, pf_pinned_pool **out)
{
    PF_CHECK_ARG(out, "pf_pinned_pool_create", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(prm, "pf_pinned_pool_create", "params is NULL");
    const char *name = prm->name && prm->name[0] ? prm->name : "pinned";
    if (prm->block_size < 1)
        return pf_set_error(PF_ERR_INVALID, "pf_pinned_pool_create: block_size %zu of pool '%s' "
                            "(must be >= 1)", prm->block_size, name);
    if (prm->block_count < 1)
        return pf_set_error(PF_ERR_INVALID, "pf_pinned_pool_create: block_count %d of pool '%s' "
                            "(must be >= 1)", prm->block_count, name);
    if (prm->block_size > SIZE_MAX - ALIGN)
        return pf_set_error(PF_ERR_INVALID, "pf_pinned_pool_create: block_size %zu of pool '%s' "
                            "is too large", prm->block_size, name);
    size_t stride = (prm->block_size + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    if (stride > SIZE_MAX / (size_t)prm->block_count)
        return pf_set_error(PF_ERR_INVALID, "pf_pinned_pool_create: %d blocks of %zu bytes in "
                            "pool '%s' overflow the address space", prm->block_count,
                            prm->block_size, name);
    size_t total = stride * (size_t)prm->block_count;
    pf_device *dev = prm->device ? prm->device : pf_cpu_device();
    if (!dev || !dev->be)
        return pf_set_error(PF_ERR_NO_DEVICE, "pf_pinned_pool_create: no usable device");
    bool pinned = dev->be->type != PF_DEVICE_CPU;

    pf_pinned_pool *p = calloc(1, sizeof *p);
    pool_block *blocks = calloc((size_t)prm->block_count, sizeof *blocks);
    if (!p || !blocks) {
        free(p);
        free(blocks);
        return pf_set_error(PF_ERR_NOMEM, "pf_pinned_pool_create: out of host memory for pool '%s'",
                            name);
    }
    p->dev = dev;
    p->alloc_domain = pinned ? PF_MEM_PINNED : PF_MEM_HOST;
    p->buf_domain = p->alloc_domain;
    p->blocks = blocks;
    snprintf(p->name, sizeof p->name, "%s", name);
    pf_status s = dev->be->mem_alloc(dev, p->alloc_domain, total, &p->mem);
    if (s != PF_OK) {
        char why[512], tb[32];
        snprintf(why, sizeof why, "%s", pf_last_error());
        free(blocks);
        free(p);
        return pf_set_error(s, "pf_pinned_pool_create: cannot allocate %s of %s memory on %s for "
                            "pool '%s' (%d blocks of %zu bytes): %s",
                            pf_fmt_bytes(tb, sizeof tb, total),
                            pf_mem_domain_name(pinned ? PF_MEM_PINNED : PF_MEM_HOST), dev->spec,
                            name, prm->block_count, prm->block_size, why);
    }
    pf_mutex_init(&p->mu);
    pf_cond_init(&p->cv);
    p->refs = 1;
    /* Build the free list so that block 0 is handed out first. */
    for (int i = prm->block_count - 1; i >= 0; i--) {
        pool_block *b = &blocks[i];
        b->pool = p;
        b->ptr = (char *)p->mem + (size_t)i * stride;
        b->next = p->free_list;
        p->free_list = b;
    }
    p->st.block_size = prm->block_size;
    p->st.block_count = prm->block_count;
    p->st.blocks_free = prm->block_count;
    p->st.min_blocks_free = prm->block_count;
    p->st.pinned = pinned;
    *out = p;
    return PF_OK;
}

/* Drops one reference with the lock held; unlocks; frees on the last one. */
static void unref_unlock(pf_pinned_pool *p)
{
    bool last = --p->refs == 0;
    pf_mutex_unlock(&p->mu);
    if (last) pool_free(p);
}

void pf_pinned_pool_destroy(pf_pinned_pool **pp)
{
    if (!pp || !*pp) return;
    pf_pinned_pool *p = *pp;
    *pp = NULL;
    pf_mutex_lock(&p->mu);
    p->closed = true;
    pf_cond_broadcast(&p->cv);
    unref_unlock(p);
}

static void block_return_cb(void *opaque, void *data, size_t size)
{
    (void)data;
    pool_block *b = opaque;
    pf_pinned_pool *p = b->pool;
    /* Exclusively ours until pushed: poison outside the lock. */
    if (pf_poison_enabled()) memset(b->ptr, POISON_BYTE, size);
    pf_mutex_lock(&p->mu);
    b->next = p->free_list;
    p->free_list = b;
    p->st.blocks_free++;
    if (p->waiters) pf_cond_signal(&p->cv);
    unref_unlock(p);
}

pf_status pf_pinned_pool_acquire(pf_pinned_pool *p, int64_t timeout_us, pf_buffer **out)
{
    PF_CHECK_ARG(out, "pf_pinned_pool_acquire", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(p, "pf_pinned_pool_acquire", "pool is NULL");
    pf_mutex_lock(&p->mu);
    if (p->closed) {
        pf_mutex_unlock(&p->mu);
        return pf_set_error(PF_ERR_CLOSED, "pf_pinned_pool_acquire: pool '%s' is closed", p->name);
    }
    if (!p->free_list) {
        if (timeout_us == 0) {
            p->st.timeouts++;
            pf_mutex_unlock(&p->mu);
            return PF_AGAIN;
        }
        /* Keep the pool alive while we sleep: destroy may run meanwhile. */
        p->refs++;
        p->waiters++;
        p->st.waits++;
        int64_t deadline = timeout_us > 0 ? pf_deadline_ns(timeout_us) : 0;
        pf_status st = PF_OK;
        while (!p->free_list && !p->closed) {
            if (timeout_us < 0) {
                pf_cond_wait(&p->cv, &p->mu);
            } else if (!pf_cond_timedwait_until(&p->cv, &p->mu, deadline)) {
                if (!p->free_list && !p->closed) st = PF_TIMEOUT;
                break;
            }
        }
        p->waiters--;
        if (p->closed) {
            st = pf_set_error(PF_ERR_CLOSED, "pf_pinned_pool_acquire: pool '%s' was closed while "
                              "waiting", p->name);
        } else if (st == PF_TIMEOUT) {
            p->st.timeouts++;
            /* A signal may have been meant for us as we timed out: pass it on. */
            if (p->free_list && p->waiters) pf_cond_signal(&p->cv);
        }
        if (st != PF_OK) {
            unref_unlock(p);
            return st;
        }
        p->refs--; /* the wait's reference becomes the block's below */
    }
    pool_block *b = p->free_list;
    p->free_list = b->next;
    b->next = NULL;
    p->st.blocks_free--;
    if (p->st.blocks_free < p->st.min_blocks_free) p->st.min_blocks_free = p->st.blocks_free;
    p->st.acquires++;
    p->refs++;
    pf_mutex_unlock(&p->mu);
    pf_buffer_init_embedded(&b->buf, b->ptr, p->st.block_size, p->buf_domain, p->dev,
                            block_return_cb, b);
    *out = &b->buf;
    return PF_OK;
}

pf_status pf_pinned_pool_get_stats(const pf_pinned_pool *cp, pf_pinned_pool_stats *out)
{
    PF_CHECK_ARG(out, "pf_pinned_pool_get_stats", "out is NULL");
    PF_CHECK_ARG(cp, "pf_pinned_pool_get_stats", "pool is NULL");
    pf_pinned_pool *p = (pf_pinned_pool *)cp; /* the lock is not logical state */
    pf_mutex_lock(&p->mu);
    *out = p->st;
    pf_mutex_unlock(&p->mu);
    return PF_OK;
}
