/* SPSC ring buffer: lock-free on the fast path, sleeping only when it must.
 *
 * Indices. `tail` (written by the producer) and `head` (written by the
 * consumer) count items forever and are reduced modulo the power-of-two slot
 * count only to address a slot; tail - head is the fill level, and the ring is
 * full at the capacity the user asked for, not at the slot count. Each side
 * keeps a private copy of the other side's index on its own cache line and
 * reloads it only when the copy says full/empty, so a side reads the other's
 * line when its copy runs out, not for every item.
 * Release stores of the indices publish the slot contents; acquire loads
 * consume them.
 *
 * Waiting. A side that must wait first spins for up to RING_SPIN_NS (20 us)
 * re-reading the other index: with small rings between two busy threads the
 * other side is usually running and about to publish, and a futex sleep plus
 * wakeup costs both sides several microseconds per item (measured on 2 cores:
 * capacity 3 went from 0.3 to ~5 M items/s). The price: with large rings the
 * consumer now takes items one by one as they appear instead of sleeping and
 * draining batches (5e6 items through capacity 1000: ~8 instead of ~20 M
 * items/s), and up to 20 us of CPU per wait. Then it sleeps.
 *
 * Sleeping. A side that must sleep takes the mutex, sets its `*_waiting` flag,
 * issues a seq_cst fence and re-checks the index before sleeping on its
 * condvar. The other side, after its release store of the index, issues a
 * seq_cst fence and reads the flag: this is the store-buffering (Dekker)
 * pattern, so at least one of them sees the other's store. Either the waiter
 * sees the new index and does not sleep, or the waker sees the flag, takes the
 * mutex (which the waiter holds from setting the flag until cond_wait releases
 * it, so the signal cannot fall between check and sleep), clears the flag and
 * signals. Clearing the flag in the waker means one signal per sleep, not one
 * per item while the sleeper is waking up; the waiter sets it again on every
 * loop iteration. The fence costs one mfence-class instruction per operation;
 * the mutex is only touched when somebody sleeps.
 *
 * Close. `closed` is stored before the closer takes the mutex and broadcasts,
 * so a waiter either sees it under the mutex or is already asleep and gets the
 * broadcast. A consumer that finds the ring empty and closed loads the tail
 * once more before returning PF_EOF, so items pushed before the close are
 * never lost.
 */
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pixflow/thread.h"

#include "error.h"
#include "sys.h"

#define CACHE_LINE 64
#ifndef RING_SPIN_NS
#define RING_SPIN_NS 20000 /* spin this long before sleeping (see top) */
#endif

struct pf_ring {
    /* read-only after create */
    size_t capacity; /* what the user asked for: the fill limit */
    size_t mask;     /* slot count - 1 */
    size_t item_size;
    int64_t spin_ns; /* RING_SPIN_NS; tests set 0 to force the sleeping path */
    unsigned char *slots;

    /* producer's line */
    alignas(CACHE_LINE) _Atomic size_t tail;
    size_t head_cache; /* producer's copy of head */

    /* consumer's line */
    alignas(CACHE_LINE) _Atomic size_t head;
    size_t tail_cache; /* consumer's copy of tail */

    /* rarely written: the flags are read on every operation, all of it is
     * written only when a side sleeps or on close */
    alignas(CACHE_LINE) _Atomic int producer_waiting;
    _Atomic int consumer_waiting;
    _Atomic bool closed;
    pf_mutex lock;
    pf_cond not_full;
    pf_cond not_empty;
};

pf_status pf_ring_create(const pf_ring_params *p, pf_ring **out)
{
    PF_CHECK_ARG(out, "pf_ring_create", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(p, "pf_ring_create", "params is NULL");
    if (p->capacity < 1)
        return pf_set_error(PF_ERR_INVALID, "pf_ring_create: capacity %zu must be >= 1",
                            p->capacity);
    if (p->item_size < 1)
        return pf_set_error(PF_ERR_INVALID, "pf_ring_create: item_size %zu must be >= 1",
                            p->item_size);
    size_t slots = 1;
    while (slots < p->capacity && slots <= SIZE_MAX / 4) slots <<= 1;
    if (slots < p->capacity || slots > SIZE_MAX / p->item_size)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_ring_create: capacity %zu x item_size %zu (rounded up to %zu "
                            "slots) overflows size_t",
                            p->capacity, p->item_size, slots);
    size_t bytes = slots * p->item_size;
    pf_ring *r = pf_aligned_alloc(CACHE_LINE, sizeof *r);
    unsigned char *mem = r ? pf_aligned_alloc(CACHE_LINE, bytes) : NULL;
    if (!mem) {
        char b[32];
        pf_aligned_free(r);
        return pf_set_error(PF_ERR_NOMEM,
                            "pf_ring_create: cannot allocate %s for %zu slots of %zu bytes",
                            pf_fmt_bytes(b, sizeof b, bytes), slots, p->item_size);
    }
    memset(r, 0, sizeof *r);
    r->capacity = p->capacity;
    r->mask = slots - 1;
    r->item_size = p->item_size;
    r->spin_ns = RING_SPIN_NS;
    r->slots = mem;
    pf_mutex_init(&r->lock);
    pf_cond_init(&r->not_full);
    pf_cond_init(&r->not_empty);
    atomic_init(&r->tail, 0);
    atomic_init(&r->head, 0);
    atomic_init(&r->producer_waiting, 0);
    atomic_init(&r->consumer_waiting, 0);
    atomic_init(&r->closed, false);
    *out = r;
    return PF_OK;
}

/* Internal, for tests: how long a waiting side spins before it sleeps (0 =
 * sleep at once). Set before the ring is shared. Not in a header on purpose. */
void pf_ring_set_spin_ns_(pf_ring *r, int64_t ns);
void pf_ring_set_spin_ns_(pf_ring *r, int64_t ns)
{
    if (r) r->spin_ns = ns < 0 ? 0 : ns;
}

void pf_ring_destroy(pf_ring **pr)
{
    if (!pr || !*pr) return;
    pf_ring *r = *pr;
    pf_cond_destroy(&r->not_empty);
    pf_cond_destroy(&r->not_full);
    pf_mutex_destroy(&r->lock);
    pf_aligned_free(r->slots);
    pf_aligned_free(r);
    *pr = NULL;
}

/* After publishing an index: wakes the other side if it sleeps (see top). */
static void wake(pf_ring *r, _Atomic int *waiting, pf_cond *cv)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (!atomic_load_explicit(waiting, memory_order_relaxed)) return;
    pf_mutex_lock(&r->lock);
    if (atomic_load_explicit(waiting, memory_order_relaxed)) {
        atomic_store_explicit(waiting, 0, memory_order_relaxed);
        pf_cond_signal(cv);
    }
    pf_mutex_unlock(&r->lock);
}

static bool producer_can_go(pf_ring *r, size_t t)
{
    return t - atomic_load_explicit(&r->head, memory_order_acquire) < r->capacity ||
           atomic_load_explicit(&r->closed, memory_order_acquire);
}

static bool consumer_can_go(pf_ring *r, size_t h)
{
    return atomic_load_explicit(&r->tail, memory_order_acquire) != h ||
           atomic_load_explicit(&r->closed, memory_order_acquire);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Spins until can_go() or pf_time_ns() reaches end_ns; true if it may go. */
static bool spin_until(pf_ring *r, bool (*can_go)(pf_ring *, size_t), size_t idx, int64_t end_ns)
{
    for (;;) {
        for (int i = 0; i < 64; i++) {
            cpu_relax();
            if (can_go(r, idx)) return true;
        }
        if (pf_time_ns() >= end_ns) return false;
    }
}

/* Waits until can_go() or the deadline: spins briefly, then sleeps.
 * Returns false on timeout. */
static bool sleep_until(pf_ring *r, _Atomic int *waiting, pf_cond *cv,
                        bool (*can_go)(pf_ring *, size_t), size_t idx, int64_t timeout_us)
{
    int64_t deadline = timeout_us > 0 ? pf_deadline_ns(timeout_us) : INT64_MAX;
    int64_t spin_end = pf_time_ns() + r->spin_ns;
    if (spin_until(r, can_go, idx, spin_end < deadline ? spin_end : deadline)) return true;
    bool ok = true;
    pf_mutex_lock(&r->lock);
    for (;;) {
        atomic_store_explicit(waiting, 1, memory_order_relaxed);
        atomic_thread_fence(memory_order_seq_cst);
        if (can_go(r, idx)) break;
        if (timeout_us < 0) {
            pf_cond_wait(cv, &r->lock);
        } else if (!pf_cond_timedwait_until(cv, &r->lock, deadline)) {
            ok = can_go(r, idx);
            break;
        }
    }
    atomic_store_explicit(waiting, 0, memory_order_relaxed);
    pf_mutex_unlock(&r->lock);
    return ok;
}

pf_status pf_ring_push(pf_ring *r, const void *item, int64_t timeout_us)
{
    PF_CHECK_ARG(r, "pf_ring_push", "ring is NULL");
    PF_CHECK_ARG(item, "pf_ring_push", "item is NULL");
    size_t t = atomic_load_explicit(&r->tail, memory_order_relaxed); /* ours */
    for (;;) {
        if (atomic_load_explicit(&r->closed, memory_order_acquire))
            return pf_set_error(PF_ERR_CLOSED, "pf_ring_push: the ring is closed");
        if (t - r->head_cache < r->capacity) break;
        r->head_cache = atomic_load_explicit(&r->head, memory_order_acquire);
        if (t - r->head_cache < r->capacity) break;
        if (timeout_us == 0) return PF_AGAIN;
        if (!sleep_until(r, &r->producer_waiting, &r->not_full, producer_can_go, t, timeout_us))
            return PF_TIMEOUT;
        /* Loop: re-check closed, refresh head_cache. A timed wait never loops
         * back into sleep_until with a fresh deadline: it returned true only
         * because there is space or the ring is closed. */
    }
    memcpy(r->slots + (t & r->mask) * r->item_size, item, r->item_size);
    atomic_store_explicit(&r->tail, t + 1, memory_order_release);
    wake(r, &r->consumer_waiting, &r->not_empty);
    return PF_OK;
}

pf_status pf_ring_pop(pf_ring *r, void *item, int64_t timeout_us)
{
    PF_CHECK_ARG(r, "pf_ring_pop", "ring is NULL");
    PF_CHECK_ARG(item, "pf_ring_pop", "item is NULL");
    size_t h = atomic_load_explicit(&r->head, memory_order_relaxed); /* ours */
    for (;;) {
        if (r->tail_cache != h) break;
        r->tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (r->tail_cache != h) break;
        if (atomic_load_explicit(&r->closed, memory_order_acquire)) {
            /* Pushes that happened before the close are visible now. */
            r->tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
            if (r->tail_cache != h) break;
            return PF_EOF;
        }
        if (timeout_us == 0) return PF_AGAIN;
        if (!sleep_until(r, &r->consumer_waiting, &r->not_empty, consumer_can_go, h, timeout_us))
            return PF_TIMEOUT;
    }
    memcpy(item, r->slots + (h & r->mask) * r->item_size, r->item_size);
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
    wake(r, &r->producer_waiting, &r->not_full);
    return PF_OK;
}

void pf_ring_close(pf_ring *r)
{
    if (!r) return;
    atomic_store_explicit(&r->closed, true, memory_order_seq_cst);
    pf_mutex_lock(&r->lock);
    pf_cond_broadcast(&r->not_full);
    pf_cond_broadcast(&r->not_empty);
    pf_mutex_unlock(&r->lock);
}

size_t pf_ring_size(const pf_ring *r)
{
    if (!r) return 0;
    /* head first: it never passes the tail, so the difference cannot wrap. */
    size_t h = atomic_load_explicit(&r->head, memory_order_acquire);
    size_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
    size_t n = t - h;
    return n > r->capacity ? r->capacity : n;
}

size_t pf_ring_capacity(const pf_ring *r) { return r ? r->capacity : 0; }
