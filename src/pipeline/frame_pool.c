/* Fixed frame pool (see frame_pool.h). */
#include <stdlib.h>
#include <string.h>

#include "../core/buffer_impl.h"
#include "../core/error.h"
#include "../core/sys.h"
#include "frame_pool.h"

typedef struct slot {
    pf_buffer buf;          /* embedded record handed out (through frames) */
    pf_frame_pool *pool;
    uint8_t *data;
    struct slot *next;      /* free list */
} slot;

struct pf_frame_pool {
    pf_mutex mu;
    pf_cond cv;
    int refs;               /* 1 for the handle + 1 per slot out */
    bool closed;
    pf_pixfmt format;
    int width, height, count, free_count;
    size_t strides[PF_FRAME_MAX_PLANES];
    size_t frame_bytes;
    pf_allocator *alloc;    /* private: one block for all slots */
    pf_buffer *block;
    slot *slots;
    slot *free_list;
};

static void pool_free(pf_frame_pool *p)
{
    pf_buffer_unref(&p->block);
    pf_allocator_destroy(&p->alloc);
    pf_cond_destroy(&p->cv);
    pf_mutex_destroy(&p->mu);
    free(p->slots);
    free(p);
}

/* Drops one reference; frees the pool at zero (called without the lock). */
static void pool_release(pf_frame_pool *p, bool last)
{
    if (last) pool_free(p);
}

static void slot_back(void *opaque, void *data, size_t size)
{
    (void)data;
    (void)size;
    slot *s = opaque;
    pf_frame_pool *p = s->pool;
    pf_mutex_lock(&p->mu);
    s->next = p->free_list;
    p->free_list = s;
    p->free_count++;
    bool last = --p->refs == 0;
    pf_cond_signal(&p->cv);
    pf_mutex_unlock(&p->mu);
    pool_release(p, last);
}

pf_status pf_frame_pool_create(const pf_frame_pool_params *prm, pf_frame_pool **out)
{
    PF_CHECK_ARG(out, "pf_frame_pool_create", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(prm, "pf_frame_pool_create", "params is NULL");
    const char *name = prm->name ? prm->name : "frames";
    if (prm->count < 1)
        return pf_set_error(PF_ERR_INVALID, "frame pool '%s': count %d < 1", name, prm->count);
    size_t offsets[PF_FRAME_MAX_PLANES], total;
    size_t strides[PF_FRAME_MAX_PLANES];
    pf_status st = pf_frame_layout(prm->format, prm->width, prm->height, 256, strides, offsets,
                                   &total);
    if (st != PF_OK) return st;
    size_t slot_bytes = (total + 255) & ~(size_t)255;
    if (slot_bytes == 0 || (size_t)prm->count > SIZE_MAX / slot_bytes)
        return pf_set_error(PF_ERR_INVALID, "frame pool '%s': %d frames of %zu bytes overflow",
                            name, prm->count, slot_bytes);

    pf_frame_pool *p = calloc(1, sizeof *p);
    slot *slots = calloc((size_t)prm->count, sizeof *slots);
    if (!p || !slots) {
        free(p);
        free(slots);
        return pf_set_error(PF_ERR_NOMEM, "frame pool '%s': out of host memory", name);
    }
    p->slots = slots;
    p->format = prm->format;
    p->width = prm->width;
    p->height = prm->height;
    p->count = prm->count;
    p->frame_bytes = total;
    memcpy(p->strides, strides, sizeof strides);
    pf_mutex_init(&p->mu);
    pf_cond_init(&p->cv);

    pf_allocator_params ap = pf_allocator_params_default();
    ap.device = prm->device;
    ap.domain = prm->domain;
    ap.name = name;
    st = pf_allocator_create(&ap, &p->alloc);
    if (st == PF_OK) st = pf_allocator_alloc(p->alloc, slot_bytes * (size_t)prm->count, NULL, &p->block);
    if (st != PF_OK) {
        pool_free(p);
        return st;
    }
    uint8_t *base = pf_buffer_data(p->block);
    for (int i = prm->count - 1; i >= 0; i--) {
        slot *s = &slots[i];
        s->pool = p;
        s->data = base + (size_t)i * slot_bytes;
        s->next = p->free_list;
        p->free_list = s;
    }
    p->free_count = prm->count;
    p->refs = 1;
    *out = p;
    return PF_OK;
}

void pf_frame_pool_destroy(pf_frame_pool **pp)
{
    if (!pp || !*pp) return;
    pf_frame_pool *p = *pp;
    *pp = NULL;
    pf_mutex_lock(&p->mu);
    p->closed = true;
    bool last = --p->refs == 0;
    pf_cond_broadcast(&p->cv);
    pf_mutex_unlock(&p->mu);
    pool_release(p, last);
}

pf_status pf_frame_pool_acquire(pf_frame_pool *p, int64_t timeout_us, pf_frame *out)
{
    PF_CHECK_ARG(p && out, "pf_frame_pool_acquire", "NULL argument");
    int64_t deadline = timeout_us > 0 ? pf_deadline_ns(timeout_us) : 0;
    pf_mutex_lock(&p->mu);
    while (!p->free_list && !p->closed) {
        if (timeout_us == 0) {
            pf_mutex_unlock(&p->mu);
            return PF_AGAIN;
        }
        if (timeout_us < 0) {
            pf_cond_wait(&p->cv, &p->mu);
        } else if (!pf_cond_timedwait_until(&p->cv, &p->mu, deadline) && !p->free_list) {
            pf_mutex_unlock(&p->mu);
            return PF_TIMEOUT;
        }
    }
    if (p->closed) {
        pf_mutex_unlock(&p->mu);
        return pf_set_error(PF_ERR_CLOSED, "frame pool: closed");
    }
    slot *s = p->free_list;
    p->free_list = s->next;
    p->free_count--;
    p->refs++;
    pf_mutex_unlock(&p->mu);

    pf_buffer_init_embedded(&s->buf, s->data, p->frame_bytes, pf_buffer_domain(p->block),
                            pf_buffer_device(p->block), slot_back, s);
    pf_buffer *b = &s->buf;
    pf_status st = pf_frame_wrap(out, p->format, p->width, p->height, b, 0, p->strides);
    pf_buffer_unref(&b); /* the frame's planes hold the references now (or it goes back) */
    return st;
}

int pf_frame_pool_free_count(pf_frame_pool *p)
{
    pf_mutex_lock(&p->mu);
    int n = p->free_count;
    pf_mutex_unlock(&p->mu);
    return n;
}

int pf_frame_pool_count(const pf_frame_pool *p)
{
    return p->count;
}
