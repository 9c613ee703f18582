/* Caching, stream-aware device allocator.
 *
 * Design
 * - Size classes: multiples of 512 B up to 4 KiB, then 8 classes per power of
 *   two: a request in (2^k, 2^(k+1)] is rounded up to a multiple of 2^(k-3).
 *   The rounding loss is < 2^(k-3) on a request > 2^k, i.e. < 12.5% (and at
 *   most 511 B below 4 KiB). Each class has its own bin (424 bins cover 64-bit
 *   sizes), so a lookup is an index computation, not a search.
 * - Blocks: one record per runtime allocation {pointer, class, owner stream,
 *   pending event, embedded pf_buffer}. The pf_buffer handed out IS the
 *   record's embedded one (pf_buffer_init_embedded), and records of blocks
 *   given back to the runtime go to a spare list, so a steady-state
 *   alloc/free cycle calls neither malloc nor the device runtime.
 * - Stream order: a block remembers the stream it was allocated on. When its
 *   last reference goes and that stream has a native handle (CUDA), an event
 *   is recorded on it (events come from a small free list; the CPU backend
 *   needs none since its work is done when issued). Alloc on stream S takes,
 *   in order of preference: a cached block of the class that needs no waiting
 *   (owned by S, or without event), one whose event has completed, else any
 *   one after making S wait for its event (cross_stream_reuses). A NULL S
 *   means "host ordering", so that last case blocks the host on the event.
 *   Only then is the runtime asked for memory.
 * - Cap: bytes_reserved (in use + cached, class bytes) never exceeds the cap.
 *   Before a runtime allocation that would cross it, cached blocks (largest
 *   classes first) are given back, after waiting for their events. A runtime
 *   PF_ERR_NOMEM releases the whole cache and retries once.
 * - Locking: one mutex guards everything, held across runtime calls too. That
 *   serialises the (rare) cudaMalloc/cudaFree calls with the fast path, which
 *   is acceptable since the steady state makes no runtime call, and it keeps
 *   the cap exact: nothing is ever "being freed" outside the counters.
 * - Lifetime: the struct is refcounted, one for the handle plus one per block
 *   out. destroy() trims and drops the handle; blocks coming back after that
 *   go straight to the runtime, and the last one frees the struct.
 * - Poisoning (debug or PIXFLOW_POISON=1): host-addressable blocks are filled
 *   with 0xDB when they come back, unless stream work may still touch them
 *   (a pending event): overwriting memory a DMA is reading would corrupt data.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/buffer_impl.h"
#include "../core/error.h"
#include "../core/sys.h"
#include "backend.h"

#define SMALL_LIMIT 4096u
#define SMALL_STEP 512u
#define NBINS (8 + 52 * 8) /* 512..4096, then k = 12..63 with 8 classes each */
#define ALIGN 256u
#define POISON_BYTE 0xDB

typedef struct alloc_event {
    void *native;
    struct alloc_event *next;
} alloc_event;

typedef struct block {
    pf_buffer buf;            /* handed out; must stay the first member */
    pf_allocator *owner;
    void *ptr;
    size_t cls;
    int bin;
    pf_stream *stream;        /* owner: the stream of the latest alloc */
    alloc_event *ev;          /* recorded on `stream` at free time, or NULL */
    struct block *next;       /* bin list or spare list */
} block;

struct pf_allocator {
    pf_mutex mu;
    int refs;                 /* 1 for the handle + 1 per block out */
    bool closed;              /* handle destroyed */
    pf_device *dev;           /* streams and events live here */
    pf_device *mem_dev;       /* memory comes from this device's backend */
    pf_mem_domain domain;     /* asked of the runtime */
    pf_mem_domain buf_domain; /* reported by the buffers */
    pf_device *buf_dev;
    bool host_visible;        /* poisoning allowed */
    block *bins[NBINS];
    block *spare;             /* records without memory */
    alloc_event *events;      /* idle events */
    pf_allocator_stats st;
    char name[64];
};

static inline int floor_log2(size_t v) { return 63 - __builtin_clzll((unsigned long long)v); }

size_t pf_allocator_size_class(size_t size)
{
    if (size == 0) return 0;
    if (size <= SMALL_LIMIT) return (size + SMALL_STEP - 1) & ~(size_t)(SMALL_STEP - 1);
    size_t step = (size_t)1 << (floor_log2(size - 1) - 3);
    if (size > SIZE_MAX - (step - 1)) return 0;
    return (size + step - 1) & ~(step - 1);
}

/* Bin of a size class (a value returned by pf_allocator_size_class). */
static int class_bin(size_t cls)
{
    if (cls <= SMALL_LIMIT) return (int)(cls / SMALL_STEP) - 1;
    int k = floor_log2(cls - 1);
    size_t step = (size_t)1 << (k - 3);
    size_t j = (cls - ((size_t)1 << k)) / step; /* 1..8 */
    return 8 + (k - 12) * 8 + (int)j - 1;
}

pf_allocator_params pf_allocator_params_default(void)
{
    pf_allocator_params p = {0};
    p.device = NULL;
    p.domain = PF_MEM_DEVICE;
    p.cap_bytes = 0;
    p.name = NULL;
    return p;
}

/* ---- events ---------------------------------------------------------------- */

static alloc_event *event_get(pf_allocator *a)
{
    alloc_event *e = a->events;
    if (e) {
        a->events = e->next;
        return e;
    }
    e = malloc(sizeof *e);
    if (!e) return NULL;
    if (a->dev->be->event_create(a->dev, &e->native) != PF_OK) {
        free(e);
        return NULL;
    }
    return e;
}

static void event_put(pf_allocator *a, alloc_event *e)
{
    e->next = a->events;
    a->events = e;
}

/* ---- runtime memory ------------------------------------------------------- */

static void block_free_cb(void *opaque, void *data, size_t size);

/* Gives a cached block back to the runtime (waits for its stream work). */
static void release_block(pf_allocator *a, block *b)
{
    if (b->ev) {
        pf_status s = a->dev->be->event_sync(b->ev->native);
        if (s < 0)
            PF_LOGE("allocator '%s': waiting for a block's stream work failed (%s): %s", a->name,
                    pf_status_str(s), pf_last_error());
        event_put(a, b->ev);
        b->ev = NULL;
    }
    a->mem_dev->be->mem_free(a->mem_dev, a->domain, b->ptr);
    b->ptr = NULL;
    b->stream = NULL;
    b->next = a->spare;
    a->spare = b;
    a->st.bytes_cached -= b->cls;
    a->st.bytes_reserved -= b->cls;
    a->st.runtime_frees++;
}

/* Releases cached blocks, largest classes first, until `need` more bytes fit
 * under `limit` reserved bytes (limit 0: release everything). */
static void release_cached(pf_allocator *a, size_t need, size_t limit)
{
    for (int i = NBINS - 1; i >= 0; i--) {
        while (a->bins[i]) {
            if (limit && a->st.bytes_reserved + need <= limit) return;
            block *b = a->bins[i];
            a->bins[i] = b->next;
            release_block(a, b);
        }
    }
}

static pf_status runtime_alloc(pf_allocator *a, size_t cls, void **out)
{
    pf_status s = a->mem_dev->be->mem_alloc(a->mem_dev, a->domain, cls, out);
    if (s == PF_OK && ((uintptr_t)*out & (ALIGN - 1))) {
        a->mem_dev->be->mem_free(a->mem_dev, a->domain, *out);
        *out = NULL;
        return pf_set_error(PF_ERR_INTERNAL,
                            "allocator '%s': backend %s returned memory not aligned to %u bytes",
                            a->name, a->mem_dev->be->name, ALIGN);
    }
    return s;
}

/* ---- lifetime ------------------------------------------------------------- */

static void allocator_free(pf_allocator *a)
{
    for (int i = 0; i < NBINS; i++) /* empty after trim; kept for safety */
        while (a->bins[i]) {
            block *b = a->bins[i];
            a->bins[i] = b->next;
            release_block(a, b);
        }
    while (a->spare) {
        block *b = a->spare;
        a->spare = b->next;
        free(b);
    }
    while (a->events) {
        alloc_event *e = a->events;
        a->events = e->next;
        a->dev->be->event_destroy(e->native);
        free(e);
    }
    pf_mutex_destroy(&a->mu);
    free(a);
}

pf_status pf_allocator_create(const pf_allocator_params *p, pf_allocator **out)
{
    PF_CHECK_ARG(out, "pf_allocator_create", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(p, "pf_allocator_create", "params is NULL");
    if (p->domain != PF_MEM_HOST && p->domain != PF_MEM_PINNED && p->domain != PF_MEM_DEVICE)
        return pf_set_error(PF_ERR_INVALID, "pf_allocator_create: unknown memory domain %d",
                            (int)p->domain);
    pf_device *dev = p->device ? p->device : pf_cpu_device();
    if (!dev || !dev->be)
        return pf_set_error(PF_ERR_NO_DEVICE, "pf_allocator_create: no usable device");
    pf_allocator *a = calloc(1, sizeof *a);
    if (!a) return pf_set_error(PF_ERR_NOMEM, "pf_allocator_create: out of host memory");
    pf_mutex_init(&a->mu);
    a->refs = 1;
    a->dev = dev;
    a->domain = p->domain;
    bool cpu = dev->be->type == PF_DEVICE_CPU;
    /* Pageable host memory is the CPU backend's business whatever the device;
     * the CUDA backend serves only device and pinned memory. */
    a->mem_dev = p->domain == PF_MEM_HOST ? pf_cpu_device() : dev;
    a->buf_dev = a->mem_dev;
    /* Pinned memory of the CPU device is plain host memory, and says so. */
    a->buf_domain = (cpu && p->domain == PF_MEM_PINNED) ? PF_MEM_HOST : p->domain;
    a->host_visible = p->domain != PF_MEM_DEVICE || a->mem_dev->be->type == PF_DEVICE_CPU;
    a->st.cap_bytes = p->cap_bytes;
    snprintf(a->name, sizeof a->name, "%s", p->name && p->name[0] ? p->name : "allocator");
    *out = a;
    return PF_OK;
}

void pf_allocator_destroy(pf_allocator **pa)
{
    if (!pa || !*pa) return;
    pf_allocator *a = *pa;
    *pa = NULL;
    pf_mutex_lock(&a->mu);
    release_cached(a, 0, 0);
    a->closed = true;
    bool last = --a->refs == 0;
    pf_mutex_unlock(&a->mu);
    if (last) allocator_free(a);
}

void pf_allocator_trim(pf_allocator *a)
{
    if (!a) return;
    pf_mutex_lock(&a->mu);
    release_cached(a, 0, 0);
    pf_mutex_unlock(&a->mu);
}

/* ---- free path -------------------------------------------------------------- */

/* Runs at the last unref of a block's buffer, on any thread. */
static void block_free_cb(void *opaque, void *data, size_t size)
{
    (void)data;
    (void)size;
    block *b = opaque;
    pf_allocator *a = b->owner;
    pf_stream *s = b->stream;
    bool pending = s && s->native;
    /* The block is exclusively ours now: poison it before taking the lock. */
    if (a->host_visible && !pending && pf_poison_enabled()) memset(b->ptr, POISON_BYTE, b->cls);

    pf_mutex_lock(&a->mu);
    a->st.bytes_in_use -= b->cls;
    a->st.blocks_in_use--;
    if (a->closed) {
        /* No cache any more: hand the memory back once the stream is done. */
        if (pending) s->be->stream_sync(s->native);
        a->st.bytes_reserved -= b->cls;
        a->st.runtime_frees++;
        a->mem_dev->be->mem_free(a->mem_dev, a->domain, b->ptr);
        b->ptr = NULL;
        b->stream = NULL;
        b->next = a->spare;
        a->spare = b;
    } else {
        if (pending) {
            alloc_event *e = event_get(a);
            pf_status st = e ? a->dev->be->event_record(e->native, s->native) : PF_ERR_DEVICE;
            if (st == PF_OK) {
                b->ev = e;
            } else {
                /* Without an event the only safe ordering is to finish the work now. */
                if (e) event_put(a, e);
                s->be->stream_sync(s->native);
            }
        }
        b->next = a->bins[b->bin];
        a->bins[b->bin] = b;
        a->st.bytes_cached += b->cls;
    }
    bool last = --a->refs == 0;
    pf_mutex_unlock(&a->mu);
    if (last) allocator_free(a);
}

/* ---- alloc path ------------------------------------------------------------- */

/* Unlinks and returns a cached block of bin `bin` usable on `s`, making `s`
 * (or the host, for s == NULL) wait where needed. NULL when the bin is empty.
 * Sets *st on a device failure (the block then stays cached). */
static block *take_cached(pf_allocator *a, int bin, pf_stream *s, pf_status *st)
{
    *st = PF_OK;
    block **pp, *b;
    /* 1: usable at once (no pending work, or ordered by being on the same stream). */
    for (pp = &a->bins[bin]; (b = *pp); pp = &b->next)
        if (!b->ev || (s && b->stream == s)) goto found;
    /* 2: the pending work has finished. */
    for (pp = &a->bins[bin]; (b = *pp); pp = &b->next)
        if (a->dev->be->event_query(b->ev->native) == PF_OK) goto found;
    /* 3: the most recently freed block, after a wait. */
    pp = &a->bins[bin];
    b = *pp;
    if (!b) return NULL;
    pf_status w = s && s->native ? a->dev->be->stream_wait_event(s->native, b->ev->native)
                                 : a->dev->be->event_sync(b->ev->native);
    if (w != PF_OK && s && s->native) w = a->dev->be->event_sync(b->ev->native);
    if (w != PF_OK) {
        *st = w;
        return NULL;
    }
    a->st.cross_stream_reuses++;
found:
    *pp = b->next;
    b->next = NULL;
    if (b->ev) {
        event_put(a, b->ev);
        b->ev = NULL;
    }
    return b;
}

static void fmt_figures(pf_allocator *a, char *buf, size_t n)
{
    char u[32], c[32];
    snprintf(buf, n, "in use %s, cached %s", pf_fmt_bytes(u, sizeof u, a->st.bytes_in_use),
             pf_fmt_bytes(c, sizeof c, a->st.bytes_cached));
}

pf_status pf_allocator_alloc(pf_allocator *a, size_t size, pf_stream *stream, pf_buffer **out)
{
    PF_CHECK_ARG(out, "pf_allocator_alloc", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(a, "pf_allocator_alloc", "allocator is NULL");
    if (size == 0)
        return pf_set_error(PF_ERR_INVALID, "pf_allocator_alloc: size 0 requested of allocator '%s'",
                            a->name);
    if (stream && stream->dev != a->dev)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_allocator_alloc: stream of device %s given to allocator '%s' of "
                            "device %s",
                            stream->dev ? stream->dev->spec : "?", a->name, a->dev->spec);
    char rq[32], cl[32], cp[32], fig[96];
    size_t cls = pf_allocator_size_class(size);
    pf_mutex_lock(&a->mu);
    if (cls == 0 || (a->st.cap_bytes && cls > a->st.cap_bytes)) {
        a->st.failures++;
        fmt_figures(a, fig, sizeof fig);
        pf_mutex_unlock(&a->mu);
        if (cls == 0)
            return pf_set_error(PF_ERR_NOMEM,
                                "pf_allocator_alloc: request of %zu bytes to allocator '%s' is "
                                "larger than any size class",
                                size, a->name);
        return pf_set_error(PF_ERR_NOMEM,
                            "pf_allocator_alloc: request of %s (class %s) exceeds the cap %s of "
                            "allocator '%s' (%s)",
                            pf_fmt_bytes(rq, sizeof rq, size), pf_fmt_bytes(cl, sizeof cl, cls),
                            pf_fmt_bytes(cp, sizeof cp, a->st.cap_bytes), a->name, fig);
    }
    int bin = class_bin(cls);
    pf_status st;
    block *b = take_cached(a, bin, stream, &st);
    if (b) {
        a->st.cache_hits++;
        a->st.bytes_cached -= cls;
    } else if (st != PF_OK) {
        a->st.failures++;
        pf_mutex_unlock(&a->mu);
        return st;
    } else {
        size_t cap = a->st.cap_bytes;
        if (cap && a->st.bytes_reserved + cls > cap) release_cached(a, cls, cap);
        if (cap && a->st.bytes_reserved + cls > cap) {
            a->st.failures++;
            fmt_figures(a, fig, sizeof fig);
            pf_mutex_unlock(&a->mu);
            return pf_set_error(PF_ERR_NOMEM,
                                "pf_allocator_alloc: request of %s (class %s) would exceed the cap "
                                "%s of allocator '%s' (%s)",
                                pf_fmt_bytes(rq, sizeof rq, size), pf_fmt_bytes(cl, sizeof cl, cls),
                                pf_fmt_bytes(cp, sizeof cp, cap), a->name, fig);
        }
        /* The record first: failing here must not leak runtime memory. */
        b = a->spare;
        if (b) {
            a->spare = b->next;
        } else if (!(b = malloc(sizeof *b))) {
            a->st.failures++;
            pf_mutex_unlock(&a->mu);
            return pf_set_error(PF_ERR_NOMEM, "pf_allocator_alloc: allocator '%s': out of host memory",
                                a->name);
        }
        void *p = NULL;
        st = runtime_alloc(a, cls, &p);
        if (st == PF_ERR_NOMEM && a->st.bytes_cached) {
            release_cached(a, 0, 0);
            st = runtime_alloc(a, cls, &p);
        }
        if (st != PF_OK) {
            b->next = a->spare;
            a->spare = b;
            a->st.failures++;
            fmt_figures(a, fig, sizeof fig);
            pf_mutex_unlock(&a->mu);
            char why[512];
            snprintf(why, sizeof why, "%s", pf_last_error());
            return pf_set_error(st,
                                "pf_allocator_alloc: allocator '%s' cannot get %s (class %s) of %s "
                                "memory on %s (%s): %s",
                                a->name, pf_fmt_bytes(rq, sizeof rq, size),
                                pf_fmt_bytes(cl, sizeof cl, cls), pf_mem_domain_name(a->domain),
                                a->mem_dev->spec, fig, why);
        }
        a->st.runtime_allocs++;
        a->st.bytes_reserved += cls;
        b->owner = a;
        b->ptr = p;
        b->cls = cls;
        b->bin = bin;
        b->ev = NULL;
        b->next = NULL;
    }
    b->stream = stream;
    a->st.bytes_in_use += cls;
    a->st.blocks_in_use++;
    a->st.requests++;
    if (a->st.bytes_in_use > a->st.peak_bytes_in_use) a->st.peak_bytes_in_use = a->st.bytes_in_use;
    if (a->st.bytes_reserved > a->st.peak_bytes_reserved)
        a->st.peak_bytes_reserved = a->st.bytes_reserved;
    a->refs++;
    pf_mutex_unlock(&a->mu);
    pf_buffer_init_embedded(&b->buf, b->ptr, size, a->buf_domain, a->buf_dev, block_free_cb, b);
    *out = &b->buf;
    return PF_OK;
}

/* ---- queries ------------------------------------------------------------------ */

pf_status pf_allocator_get_stats(const pf_allocator *ca, pf_allocator_stats *out)
{
    PF_CHECK_ARG(out, "pf_allocator_get_stats", "out is NULL");
    PF_CHECK_ARG(ca, "pf_allocator_get_stats", "allocator is NULL");
    pf_allocator *a = (pf_allocator *)ca; /* the lock is not part of the logical state */
    pf_mutex_lock(&a->mu);
    *out = a->st;
    pf_mutex_unlock(&a->mu);
    return PF_OK;
}

const char *pf_allocator_name(const pf_allocator *a) { return a ? a->name : ""; }
