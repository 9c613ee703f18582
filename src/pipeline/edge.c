/* Pipeline edge: a bounded FIFO of pf_items with a drop policy.
 *
 * Design. One mutex and two condvars (not_full for blocked producers,
 * not_empty for consumers) around a ring of `capacity` pf_item slots
 * allocated at create, so push and pop never allocate. Items are moved in and
 * out by value; the caller's struct is zeroed once the edge owns its
 * references, so a stray pf_item_unref afterwards is harmless.
 *
 * Policies act only when the ring is full (pipeline.h, "Edges"): BLOCK waits
 * for room (only this policy ever makes a producer sleep), DROP_OLDEST
 * replaces the head, DROP_NEWEST releases the incoming item, LATEST_ONLY
 * (capacity forced to 1) replaces whatever is queued. Items a policy drops
 * are released after the lock is let go: a buffer's free callback (a pool
 * return) may do real work and must not lengthen the critical section.
 *
 * Waking. Each push makes at most one pop possible and vice versa, so a
 * successful operation signals one waiter of the other side, and only when a
 * waiter counter says somebody sleeps; close and cancel broadcast. A woken
 * waiter re-checks its predicate before looking at its deadline, so a signal
 * that races a timeout is never wasted: the timed-out thread takes the slot
 * or the item it was woken for.
 *
 * Counters (under the lock) keep the invariant
 *     pushed == popped + dropped + cancelled + depth
 * where `pushed` counts every item the edge accepted (queued, or dropped by
 * the policy), `cancelled` the items queued when the edge was cancelled.
 * Pushes refused with an error (closed, cancelled, invalid) count nowhere:
 * their status tells the producer.
 *
 * Mean depth is time-weighted on the given clock: the depth is integrated
 * over time at every change (area += depth * dt), over the window from the
 * first push to the end of the edge (all producers closed and the queue
 * drained, or cancelled) or to "now" while it is still live. Before the first
 * push the figure is 0. The clock is read only when the depth changes or on
 * a stats call, never on policy drops that leave the depth unchanged.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "edge.h"

#include "../core/error.h"
#include "../core/sys.h"

#define EDGE_MAX_CAPACITY (1 << 20)

struct pf_edge {
    int capacity;
    pf_edge_policy policy;
    pf_clock clock;
    pf_item *slots;
    pf_edge_notify *notify;    /* fan-in consumer to wake; NULL none */
    void (*on_drop)(void *user, const pf_item *victim);
    void *drop_user;

    pf_mutex lock;
    pf_cond not_full;
    pf_cond not_empty;
    /* Everything below is under `lock`. */
    int head, count;
    int push_waiters, pop_waiters;
    int producers, closes;
    bool cancelled;

    uint64_t pushed, popped, dropped, cancelled_items;
    int depth_max;
    bool window_open;   /* the first push happened */
    bool window_closed; /* the edge ended: depth stays 0 from t_end on */
    int64_t t_first, t_last, t_end;
    double area;        /* integral of depth over [t_first, t_last], depth * ns */
};

static int64_t edge_now(const pf_edge *e)
{
    return e->clock.now_ns ? e->clock.now_ns(e->clock.user) : pf_time_ns();
}

static bool item_valid(const pf_item *it) { return it->frame.buf[0] || it->tensor.buf; }

/* All declared producers have closed (an edge nobody declared producers on
 * is closed by its first close). */
static bool is_closed(const pf_edge *e) { return e->closes > 0 && e->closes >= e->producers; }

/* Integrates the current depth up to the clock's now. Lock held. */
static void integrate(pf_edge *e, int64_t t)
{
    if (t > e->t_last) {
        e->area += (double)e->count * (double)(t - e->t_last);
        e->t_last = t;
    }
}

/* Changes the depth to `n`, integrating the old one. Lock held. */
static void set_depth(pf_edge *e, int n)
{
    if (n == e->count) return;
    if (!e->window_closed) {
        int64_t t = edge_now(e);
        if (!e->window_open) {
            e->window_open = true;
            e->t_first = e->t_last = t;
        } else {
            integrate(e, t);
        }
    }
    e->count = n;
    if (n > e->depth_max) e->depth_max = n;
}

/* Ends the depth window once the edge can never hold an item again. */
static void maybe_finish(pf_edge *e)
{
    if (e->window_closed || e->count != 0 || !(e->cancelled || is_closed(e))) return;
    e->window_closed = true;
    if (e->window_open) {
        int64_t t = edge_now(e);
        integrate(e, t);
        e->t_end = t > e->t_last ? t : e->t_last;
    }
}

pf_status pf_edge_create(const pf_edge_params *p, const pf_clock *clock, pf_edge **out)
{
    PF_CHECK_ARG(out, "pf_edge_create", "out is NULL");
    *out = NULL;
    pf_edge_params def = pf_edge_params_default();
    if (!p) p = &def;
    if ((int)p->policy < PF_EDGE_BLOCK || (int)p->policy > PF_EDGE_LATEST_ONLY)
        return pf_set_error(PF_ERR_INVALID, "pf_edge_create: unknown policy %d", (int)p->policy);
    if (p->capacity < 1 || p->capacity > EDGE_MAX_CAPACITY)
        return pf_set_error(PF_ERR_INVALID, "pf_edge_create: capacity %d out of range 1..%d",
                            p->capacity, EDGE_MAX_CAPACITY);
    int capacity = p->policy == PF_EDGE_LATEST_ONLY ? 1 : p->capacity;
    pf_edge *e = calloc(1, sizeof *e);
    pf_item *slots = e ? calloc((size_t)capacity, sizeof *slots) : NULL;
    if (!slots) {
        free(e);
        return pf_set_error(PF_ERR_NOMEM, "pf_edge_create: cannot allocate %d item slots",
                            capacity);
    }
    e->capacity = capacity;
    e->policy = p->policy;
    if (clock) e->clock = *clock;
    e->slots = slots;
    pf_mutex_init(&e->lock);
    pf_cond_init(&e->not_full);
    pf_cond_init(&e->not_empty);
    *out = e;
    return PF_OK;
}

void pf_edge_destroy(pf_edge **pe)
{
    if (!pe || !*pe) return;
    pf_edge *e = *pe;
    for (int i = 0; i < e->count; i++) pf_item_unref(&e->slots[(e->head + i) % e->capacity]);
    pf_cond_destroy(&e->not_empty);
    pf_cond_destroy(&e->not_full);
    pf_mutex_destroy(&e->lock);
    free(e->slots);
    free(e);
    *pe = NULL;
}

/* Notifier ------------------------------------------------------------------------- */

void pf_edge_notify_init(pf_edge_notify *n)
{
    pf_mutex_init(&n->mu);
    pf_cond_init(&n->cv);
    atomic_init(&n->gen, 0);
    atomic_init(&n->waiters, 0);
}

void pf_edge_notify_destroy(pf_edge_notify *n)
{
    pf_cond_destroy(&n->cv);
    pf_mutex_destroy(&n->mu);
}

uint64_t pf_edge_notify_gen(pf_edge_notify *n) { return atomic_load(&n->gen); }

void pf_edge_notify_wait(pf_edge_notify *n, uint64_t seen, int64_t deadline_ns)
{
    pf_mutex_lock(&n->mu);
    atomic_fetch_add(&n->waiters, 1);
    while (atomic_load(&n->gen) == seen) {
        if (deadline_ns == INT64_MAX) {
            pf_cond_wait(&n->cv, &n->mu);
        } else if (!pf_cond_timedwait_until(&n->cv, &n->mu, deadline_ns)) {
            break;
        }
    }
    atomic_fetch_sub(&n->waiters, 1);
    pf_mutex_unlock(&n->mu);
}

void pf_edge_notify_signal(pf_edge_notify *n, bool all)
{
    if (!n) return;
    atomic_fetch_add(&n->gen, 1);
    if (atomic_load(&n->waiters) > 0) {
        pf_mutex_lock(&n->mu);
        if (all) pf_cond_broadcast(&n->cv);
        else pf_cond_signal(&n->cv);
        pf_mutex_unlock(&n->mu);
    }
}

void pf_edge_set_hooks(pf_edge *e, pf_edge_notify *notify,
                       void (*on_drop)(void *user, const pf_item *victim), void *drop_user)
{
    if (!e) return;
    e->notify = notify;
    e->on_drop = on_drop;
    e->drop_user = drop_user;
}

void pf_edge_add_producer(pf_edge *e)
{
    if (!e) return;
    pf_mutex_lock(&e->lock);
    e->producers++;
    pf_mutex_unlock(&e->lock);
}

/* Appends the caller's item (room is known to exist) and zeroes it. */
static void enqueue(pf_edge *e, pf_item *item)
{
    int tail = e->head + e->count;
    if (tail >= e->capacity) tail -= e->capacity;
    e->slots[tail] = *item;
    memset(item, 0, sizeof *item);
    set_depth(e, e->count + 1);
    e->pushed++;
    if (e->pop_waiters > 0) pf_cond_signal(&e->not_empty);
}

/* Moves the head item to *out without touching the depth. */
static void take_head(pf_edge *e, pf_item *out)
{
    *out = e->slots[e->head];
    memset(&e->slots[e->head], 0, sizeof e->slots[e->head]);
    if (++e->head == e->capacity) e->head = 0;
}

/* Sleeps on cv once (until the deadline if timed). Returns false when the
 * deadline has passed. Lock held. */
static bool wait_once(pf_edge *e, pf_cond *cv, int *waiters, int64_t timeout_us,
                      int64_t *deadline)
{
    bool in_time = true;
    (*waiters)++;
    if (timeout_us < 0) {
        pf_cond_wait(cv, &e->lock);
    } else {
        if (*deadline == INT64_MIN) *deadline = pf_deadline_ns(timeout_us);
        in_time = pf_cond_timedwait_until(cv, &e->lock, *deadline);
    }
    (*waiters)--;
    return in_time;
}

pf_status pf_edge_push(pf_edge *e, pf_item *item, int64_t timeout_us)
{
    PF_CHECK_ARG(e, "pf_edge_push", "edge is NULL");
    PF_CHECK_ARG(item, "pf_edge_push", "item is NULL");
    if (!item_valid(item)) {
        int src = item->source;
        long long seq = (long long)item->seq;
        pf_item_unref(item); /* the edge always takes the item (edge.h) */
        return pf_set_error(PF_ERR_INVALID,
                            "pf_edge_push: item (source %d, seq %lld) has neither a frame nor a "
                            "tensor",
                            src, seq);
    }
    pf_item victim;
    bool have_victim = false, queued = false;
    bool expired = false;
    int64_t deadline = INT64_MIN;
    pf_status st = PF_OK;

    pf_mutex_lock(&e->lock);
    for (;;) {
        if (e->cancelled) {
            st = PF_ERR_CANCELLED;
            break;
        }
        if (is_closed(e)) {
            st = PF_ERR_CLOSED;
            break;
        }
        if (e->count < e->capacity) {
            enqueue(e, item);
            queued = true;
            break;
        }
        if (e->policy == PF_EDGE_DROP_NEWEST) {
            victim = *item;
            memset(item, 0, sizeof *item);
            have_victim = true;
            e->pushed++;
            e->dropped++;
            break;
        }
        if (e->policy == PF_EDGE_DROP_OLDEST || e->policy == PF_EDGE_LATEST_ONLY) {
            /* LATEST_ONLY has capacity 1, so "everything queued" is the head.
             * The depth is unchanged: one out, one in, no clock read. */
            take_head(e, &victim);
            have_victim = true;
            e->count--;
            e->dropped++;
            int tail = e->head + e->count;
            if (tail >= e->capacity) tail -= e->capacity;
            e->slots[tail] = *item;
            memset(item, 0, sizeof *item);
            e->count++;
            e->pushed++;
            break;
        }
        /* BLOCK and full. */
        if (timeout_us == 0) {
            st = PF_AGAIN;
            break;
        }
        if (expired) {
            st = PF_TIMEOUT;
            break;
        }
        expired = !wait_once(e, &e->not_full, &e->push_waiters, timeout_us, &deadline);
    }
    int capacity = e->capacity;
    pf_mutex_unlock(&e->lock);

    if (queued) pf_edge_notify_signal(e->notify, false);
    if (have_victim) {
        if (e->on_drop) e->on_drop(e->drop_user, &victim);
        pf_item_unref(&victim);
    }
    if (st == PF_ERR_CANCELLED || st == PF_ERR_CLOSED) {
        int src = item->source;
        long long seq = (long long)item->seq;
        pf_item_unref(item);
        return pf_set_error(st, "pf_edge_push: edge (capacity %d, %s) is %s; item (source %d, "
                                "seq %lld) released",
                            capacity, pf_edge_policy_name(e->policy),
                            st == PF_ERR_CANCELLED ? "cancelled" : "closed", src, seq);
    }
    return st;
}

pf_status pf_edge_pop(pf_edge *e, pf_item *out, int64_t timeout_us)
{
    PF_CHECK_ARG(e, "pf_edge_pop", "edge is NULL");
    PF_CHECK_ARG(out, "pf_edge_pop", "out is NULL");
    bool expired = false;
    int64_t deadline = INT64_MIN;
    pf_status st = PF_OK;

    pf_mutex_lock(&e->lock);
    for (;;) {
        if (e->cancelled) {
            st = PF_ERR_CANCELLED;
            break;
        }
        if (e->count > 0) {
            take_head(e, out);
            set_depth(e, e->count - 1);
            e->popped++;
            if (e->push_waiters > 0) pf_cond_signal(&e->not_full);
            maybe_finish(e);
            break;
        }
        if (is_closed(e)) {
            st = PF_EOF;
            break;
        }
        if (timeout_us == 0) {
            st = PF_AGAIN;
            break;
        }
        if (expired) {
            st = PF_TIMEOUT;
            break;
        }
        expired = !wait_once(e, &e->not_empty, &e->pop_waiters, timeout_us, &deadline);
    }
    int capacity = e->capacity;
    pf_mutex_unlock(&e->lock);
    if (st == PF_ERR_CANCELLED)
        return pf_set_error(st, "pf_edge_pop: edge (capacity %d, %s) is cancelled", capacity,
                            pf_edge_policy_name(e->policy));
    return st;
}

int pf_edge_take(pf_edge *e, pf_item *out, int max, pf_status *state)
{
    *state = PF_ERR_CANCELLED;
    if (!e || !out || max < 0) return 0;
    pf_mutex_lock(&e->lock);
    int n = 0;
    if (!e->cancelled) {
        n = e->count < max ? e->count : max;
        for (int i = 0; i < n; i++) take_head(e, &out[i]);
        if (n > 0) {
            set_depth(e, e->count - n);
            e->popped += (uint64_t)n;
            if (e->push_waiters > 0) {
                if (n == 1) pf_cond_signal(&e->not_full);
                else pf_cond_broadcast(&e->not_full);
            }
            maybe_finish(e);
        }
        *state = e->count == 0 && is_closed(e) ? PF_EOF : PF_OK;
    }
    pf_mutex_unlock(&e->lock);
    return n;
}

int pf_edge_pop_many(pf_edge *e, pf_item *out, int max)
{
    pf_status state;
    return pf_edge_take(e, out, max > 0 ? max : 0, &state);
}

void pf_edge_close(pf_edge *e)
{
    if (!e) return;
    pf_mutex_lock(&e->lock);
    int declared = e->producers > 0 ? e->producers : 1;
    if (e->closes < declared) {
        e->closes++;
    } else {
        PF_LOGW("pf_edge_close: edge already closed by all of its %d producer(s); ignored",
                declared);
    }
    if (is_closed(e)) {
        /* Consumers must see EOF once drained; a producer still blocked in a
         * push after every producer closed is a caller bug: it gets CLOSED. */
        pf_cond_broadcast(&e->not_empty);
        pf_cond_broadcast(&e->not_full);
        maybe_finish(e);
    }
    pf_mutex_unlock(&e->lock);
    pf_edge_notify_signal(e->notify, true);
}

void pf_edge_cancel(pf_edge *e)
{
    if (!e) return;
    pf_mutex_lock(&e->lock);
    if (!e->cancelled) {
        e->cancelled = true;
        int n = e->count;
        /* Released under the lock (unlike policy drops): cancel is rare, and
         * this way no thread can see the slots half emptied. */
        for (int i = 0; i < n; i++) {
            pf_item it;
            take_head(e, &it);
            pf_item_unref(&it);
        }
        set_depth(e, 0);
        e->head = 0;
        e->cancelled_items += (uint64_t)n;
        maybe_finish(e);
        pf_cond_broadcast(&e->not_empty);
        pf_cond_broadcast(&e->not_full);
    }
    pf_mutex_unlock(&e->lock);
    pf_edge_notify_signal(e->notify, true);
}

int pf_edge_depth(pf_edge *e)
{
    if (!e) return 0;
    pf_mutex_lock(&e->lock);
    int n = e->count;
    pf_mutex_unlock(&e->lock);
    return n;
}

void pf_edge_get_stats(pf_edge *e, pf_edge_stats *out)
{
    if (!e || !out) return;
    pf_mutex_lock(&e->lock);
    out->capacity = e->capacity;
    out->policy = e->policy;
    out->pushed = e->pushed;
    out->popped = e->popped;
    out->dropped = e->dropped;
    out->cancelled = e->cancelled_items;
    out->depth_max = e->depth_max;
    double mean = 0.0;
    if (e->window_open) {
        int64_t end = e->t_end;
        double area = e->area;
        if (!e->window_closed) {
            int64_t t = edge_now(e);
            end = t > e->t_last ? t : e->t_last;
            area += (double)e->count * (double)(end - e->t_last);
        }
        int64_t span = end - e->t_first;
        mean = span > 0 ? area / (double)span : (double)e->count;
    }
    out->depth_mean = mean;
    pf_mutex_unlock(&e->lock);
}
