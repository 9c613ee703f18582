/* Per-stream statistics: counters and end-to-end latency per source id.
 *
 * Design. Recording happens on every worker for every item, so it takes no
 * lock: a fixed open-addressing table of PL_MAX_STREAMS atomic pointers,
 * probed linearly from a hash of the source id. A stream's record is made on
 * its first item (one malloc and a histogram per stream, under the table's
 * mutex so two threads never make the same stream twice) and published with
 * an atomic store; readers that see NULL at its slot take the mutex and look
 * again. Records are never removed before the pipeline is destroyed. Past
 * PL_MAX_STREAMS distinct ids new streams are not tracked (counted in
 * `untracked`, logged once).
 *
 * fps is items_out over the stream's own window, its first item in to its
 * last item out, so a camera that joined late or left early is not diluted
 * by the rest of the run. */
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "pipeline_impl.h"

typedef struct pl_stream {
    int32_t source;
    atomic_uint_fast64_t in, out, dropped;
    _Atomic int64_t t_first, t_last;
    pf_histogram *e2e;
} pl_stream;

struct pl_streams {
    pf_mutex mu;
    _Atomic(pl_stream *) slot[PL_MAX_STREAMS];
    atomic_uint_fast64_t untracked;
};

static uint32_t stream_hash(int32_t source)
{
    uint32_t h = (uint32_t)source * 0x9e3779b1u;
    return (h ^ (h >> 16)) & (PL_MAX_STREAMS - 1);
}

pf_status pl_streams_create(pl_streams **out)
{
    pl_streams *s = calloc(1, sizeof *s);
    if (!s) return pf_set_error(PF_ERR_NOMEM, "pipeline: out of host memory (stream table)");
    pf_mutex_init(&s->mu);
    for (int i = 0; i < PL_MAX_STREAMS; i++) atomic_init(&s->slot[i], NULL);
    atomic_init(&s->untracked, 0);
    *out = s;
    return PF_OK;
}

void pl_streams_destroy(pl_streams **ps)
{
    if (!ps || !*ps) return;
    pl_streams *s = *ps;
    for (int i = 0; i < PL_MAX_STREAMS; i++) {
        pl_stream *r = atomic_load(&s->slot[i]);
        if (!r) continue;
        pf_histogram_destroy(&r->e2e);
        free(r);
    }
    pf_mutex_destroy(&s->mu);
    free(s);
    *ps = NULL;
}

/* The record of `source`, made if needed; NULL when the table is full. */
static pl_stream *stream_get(pl_streams *s, int32_t source)
{
    uint32_t h = stream_hash(source);
    for (uint32_t k = 0; k < PL_MAX_STREAMS; k++) {
        pl_stream *r = atomic_load_explicit(&s->slot[(h + k) & (PL_MAX_STREAMS - 1)],
                                            memory_order_acquire);
        if (!r) break;
        if (r->source == source) return r;
    }
    pl_stream *found = NULL;
    pf_mutex_lock(&s->mu);
    for (uint32_t k = 0; k < PL_MAX_STREAMS; k++) {
        _Atomic(pl_stream *) *slot = &s->slot[(h + k) & (PL_MAX_STREAMS - 1)];
        pl_stream *r = atomic_load(slot);
        if (r && r->source == source) {
            found = r;
            break;
        }
        if (r) continue;
        r = calloc(1, sizeof *r);
        if (r && pf_histogram_create(&r->e2e) != PF_OK) {
            free(r);
            r = NULL;
        }
        if (!r) break;
        r->source = source;
        atomic_store_explicit(slot, r, memory_order_release);
        found = r;
        break;
    }
    pf_mutex_unlock(&s->mu);
    if (!found && atomic_fetch_add(&s->untracked, 1) == 0)
        PF_LOGW("pipeline: stream %d and later new streams are not tracked (table of %d full or "
                "out of memory)",
                (int)source, PL_MAX_STREAMS);
    return found;
}

static void min_time(_Atomic int64_t *a, int64_t t)
{
    int64_t cur = atomic_load_explicit(a, memory_order_relaxed);
    while ((cur == 0 || t < cur) &&
           !atomic_compare_exchange_weak_explicit(a, &cur, t, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
}

static void max_time(_Atomic int64_t *a, int64_t t)
{
    int64_t cur = atomic_load_explicit(a, memory_order_relaxed);
    while (t > cur && !atomic_compare_exchange_weak_explicit(a, &cur, t, memory_order_relaxed,
                                                             memory_order_relaxed)) {
    }
}

void pl_stream_in(pl_streams *s, int32_t source, int64_t now_ns)
{
    pl_stream *r = s ? stream_get(s, source) : NULL;
    if (!r) return;
    atomic_fetch_add_explicit(&r->in, 1, memory_order_relaxed);
    min_time(&r->t_first, now_ns > 0 ? now_ns : 1);
}

void pl_stream_out(pl_streams *s, int32_t source, int64_t now_ns, int64_t e2e_ns)
{
    pl_stream *r = s ? stream_get(s, source) : NULL;
    if (!r) return;
    atomic_fetch_add_explicit(&r->out, 1, memory_order_relaxed);
    if (e2e_ns >= 0) {
        pf_histogram_record(r->e2e, e2e_ns);
        min_time(&r->t_first, now_ns - e2e_ns > 0 ? now_ns - e2e_ns : 1);
    }
    max_time(&r->t_last, now_ns);
}

void pl_stream_drop(pl_streams *s, int32_t source)
{
    pl_stream *r = s ? stream_get(s, source) : NULL;
    if (r) atomic_fetch_add_explicit(&r->dropped, 1, memory_order_relaxed);
}

void pl_stream_on_drop(void *user, const pf_item *victim)
{
    pf_pipeline *p = user;
    pl_stream_drop(p->streams, victim->source);
}

static int cmp_source(const void *a, const void *b)
{
    int32_t x = ((const pf_stream_stats *)a)->source, y = ((const pf_stream_stats *)b)->source;
    return (x > y) - (x < y);
}

int pl_streams_snapshot(pl_streams *s, pf_stream_stats **arr, int *cap, int64_t now_ns)
{
    (void)now_ns;
    if (!s) return 0;
    int n = 0;
    for (int i = 0; i < PL_MAX_STREAMS; i++) {
        pl_stream *r = atomic_load_explicit(&s->slot[i], memory_order_acquire);
        if (!r) continue;
        if (n == *cap) {
            int nc = *cap ? *cap * 2 : 16;
            pf_stream_stats *na = realloc(*arr, (size_t)nc * sizeof *na);
            if (!na) break; /* a shorter snapshot rather than none */
            *arr = na;
            *cap = nc;
        }
        pf_stream_stats *o = &(*arr)[n++];
        memset(o, 0, sizeof *o);
        o->source = r->source;
        o->items_in = atomic_load_explicit(&r->in, memory_order_relaxed);
        o->items_out = atomic_load_explicit(&r->out, memory_order_relaxed);
        o->dropped = atomic_load_explicit(&r->dropped, memory_order_relaxed);
        int64_t t0 = atomic_load(&r->t_first), t1 = atomic_load(&r->t_last);
        o->fps = t0 > 0 && t1 > t0 ? (double)o->items_out / ((double)(t1 - t0) / 1e9) : 0;
        o->e2e_p50_us = pf_histogram_quantile(r->e2e, 0.50) / 1e3;
        o->e2e_p99_us = pf_histogram_quantile(r->e2e, 0.99) / 1e3;
    }
    if (n > 1) qsort(*arr, (size_t)n, sizeof **arr, cmp_source);
    return n;
}
