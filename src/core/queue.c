/* Bounded MPMC queue of fixed-size items copied in and out.
 *
 * One mutex and two condvars (not_full for producers, not_empty for
 * consumers) around a ring of capacity * item_size bytes. Each push enables at
 * most one pop and vice versa, so a successful operation signals one waiter of
 * the other side; close() broadcasts both. Timed waits loop on their predicate
 * against an absolute monotonic deadline, so spurious wakeups and wakeups that
 * another thread beat us to never lengthen or shorten the timeout.
 *
 * Signals go out only when a waiter counter says somebody sleeps, and under
 * the lock: signalling after unlocking measured a little faster with many
 * threads on few cores, but then a consumer that pops a producer's last item
 * and destroys the queue could free the condvar under the producer's signal.
 *
 * The item count is also kept in an atomic so pf_queue_size() (monitoring,
 * statistics) never takes the lock.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pixflow/thread.h"

#include "error.h"
#include "sys.h"

struct pf_queue {
    size_t capacity;
    size_t item_size;
    unsigned char *items;
    pf_mutex lock;
    pf_cond not_full;
    pf_cond not_empty;
    size_t head;      /* index of the oldest item; under lock */
    bool closed;      /* under lock */
    int push_waiters; /* threads asleep on not_full; under lock */
    int pop_waiters;  /* threads asleep on not_empty; under lock */
    _Atomic size_t count; /* written under lock, read anywhere */
};

pf_status pf_queue_create(const pf_queue_params *p, pf_queue **out)
{
    PF_CHECK_ARG(out, "pf_queue_create", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(p, "pf_queue_create", "params is NULL");
    if (p->capacity < 1)
        return pf_set_error(PF_ERR_INVALID, "pf_queue_create: capacity %zu must be >= 1",
                            p->capacity);
    if (p->item_size < 1)
        return pf_set_error(PF_ERR_INVALID, "pf_queue_create: item_size %zu must be >= 1",
                            p->item_size);
    if (p->capacity > SIZE_MAX / p->item_size)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_queue_create: capacity %zu x item_size %zu overflows size_t",
                            p->capacity, p->item_size);
    size_t bytes = p->capacity * p->item_size;
    pf_queue *q = calloc(1, sizeof *q);
    unsigned char *items = q ? pf_aligned_alloc(64, bytes) : NULL;
    if (!items) {
        char b[32];
        free(q);
        return pf_set_error(PF_ERR_NOMEM,
                            "pf_queue_create: cannot allocate %s for %zu items of %zu bytes",
                            pf_fmt_bytes(b, sizeof b, bytes), p->capacity, p->item_size);
    }
    q->capacity = p->capacity;
    q->item_size = p->item_size;
    q->items = items;
    pf_mutex_init(&q->lock);
    pf_cond_init(&q->not_full);
    pf_cond_init(&q->not_empty);
    atomic_init(&q->count, 0);
    *out = q;
    return PF_OK;
}

void pf_queue_destroy(pf_queue **pq)
{
    if (!pq || !*pq) return;
    pf_queue *q = *pq;
    pf_cond_destroy(&q->not_empty);
    pf_cond_destroy(&q->not_full);
    pf_mutex_destroy(&q->lock);
    pf_aligned_free(q->items);
    free(q);
    *pq = NULL;
}

/* Waits on `cv` until ready() holds or the queue is closed. Lock held.
 * Returns PF_OK to proceed (ready or closed: the caller checks which),
 * PF_AGAIN / PF_TIMEOUT when it must give up. `*waiters` counts sleepers so
 * the other side signals only when somebody sleeps. */
static pf_status wait_until(pf_queue *q, pf_cond *cv, int *waiters,
                            bool (*ready)(const pf_queue *), int64_t timeout_us)
{
    if (ready(q) || q->closed) return PF_OK;
    if (timeout_us == 0) return PF_AGAIN;
    pf_status st = PF_OK;
    int64_t deadline = timeout_us > 0 ? pf_deadline_ns(timeout_us) : 0;
    (*waiters)++;
    while (!ready(q) && !q->closed) {
        if (timeout_us < 0) {
            pf_cond_wait(cv, &q->lock);
        } else if (!pf_cond_timedwait_until(cv, &q->lock, deadline)) {
            if (!ready(q) && !q->closed) st = PF_TIMEOUT;
            break;
        }
    }
    (*waiters)--;
    return st;
}

static bool has_space(const pf_queue *q)
{
    return atomic_load_explicit(&q->count, memory_order_relaxed) < q->capacity;
}

static bool has_item(const pf_queue *q)
{
    return atomic_load_explicit(&q->count, memory_order_relaxed) > 0;
}

pf_status pf_queue_push(pf_queue *q, const void *item, int64_t timeout_us)
{
    PF_CHECK_ARG(q, "pf_queue_push", "queue is NULL");
    PF_CHECK_ARG(item, "pf_queue_push", "item is NULL");
    pf_mutex_lock(&q->lock);
    pf_status st = wait_until(q, &q->not_full, &q->push_waiters, has_space, timeout_us);
    if (st == PF_OK && q->closed) {
        pf_mutex_unlock(&q->lock);
        return pf_set_error(PF_ERR_CLOSED, "pf_queue_push: the queue is closed");
    }
    if (st == PF_OK) {
        size_t n = atomic_load_explicit(&q->count, memory_order_relaxed);
        size_t tail = q->head + n;
        if (tail >= q->capacity) tail -= q->capacity;
        memcpy(q->items + tail * q->item_size, item, q->item_size);
        atomic_store_explicit(&q->count, n + 1, memory_order_relaxed);
    }
    if (st == PF_OK && q->pop_waiters > 0) pf_cond_signal(&q->not_empty);
    pf_mutex_unlock(&q->lock);
    return st;
}

pf_status pf_queue_pop(pf_queue *q, void *item, int64_t timeout_us)
{
    PF_CHECK_ARG(q, "pf_queue_pop", "queue is NULL");
    PF_CHECK_ARG(item, "pf_queue_pop", "item is NULL");
    pf_mutex_lock(&q->lock);
    pf_status st = wait_until(q, &q->not_empty, &q->pop_waiters, has_item, timeout_us);
    if (st == PF_OK) {
        size_t n = atomic_load_explicit(&q->count, memory_order_relaxed);
        if (n == 0) {
            st = PF_EOF; /* closed and drained */
        } else {
            memcpy(item, q->items + q->head * q->item_size, q->item_size);
            if (++q->head == q->capacity) q->head = 0;
            atomic_store_explicit(&q->count, n - 1, memory_order_relaxed);
            if (q->push_waiters > 0) pf_cond_signal(&q->not_full);
        }
    }
    pf_mutex_unlock(&q->lock);
    return st;
}

void pf_queue_close(pf_queue *q)
{
    if (!q) return;
    pf_mutex_lock(&q->lock);
    q->closed = true;
    pf_cond_broadcast(&q->not_full);
    pf_cond_broadcast(&q->not_empty);
    pf_mutex_unlock(&q->lock);
}

size_t pf_queue_size(const pf_queue *q)
{
    return q ? atomic_load_explicit(&q->count, memory_order_relaxed) : 0;
}

size_t pf_queue_capacity(const pf_queue *q) { return q ? q->capacity : 0; }
