/* Pipeline graph: building, validation, transfer insertion, modes, and the
 * run lifecycle.
 *
 * Validation happens as early as it can: names and the source/process choice
 * at add_stage, cycles at connect (a depth-first walk up the inputs of the
 * producer looking for the consumer), and what needs the whole graph
 * (stages without input, memory domains) at start. A stage may have several
 * input edges (fan-in, fanin.c); a transfer is inserted per edge.
 *
 * Stopping. A stop (first error, or cancel) is recorded once under the
 * pipeline lock; then every edge is cancelled, which wakes each worker
 * blocked in a push or pop, and the stages' ordering and pacing waits are
 * woken. Workers see `stopping`, leave their loops, and the last worker of
 * each stage closes its output edges and runs its stop callback, exactly as
 * on a normal end of stream. cancel_async only sets an atomic flag (safe in a
 * signal handler); sources poll it at each item and a watcher thread polls it
 * every 2 ms, so a pipeline whose sources are blocked still stops.
 *
 * Tracing (params.trace_path). The tracer is made at start, sized by
 * trace_max_events, with the first CUDA device any stage runs on as its GPU
 * (GPU time calibration, device counters every trace_counter_ms); a
 * CPU-only pipeline gets no device and no counters. Stages record their
 * spans (stage.c); the watcher samples every edge's queue depth into a
 * counter each 1 ms, writing only changes, plus every edge at start and at
 * the end, so each edge has a counter track even when the run is shorter
 * than one period. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "../device/backend.h"
#include "pipeline_impl.h"

int pl_test_force_gpu_path = 0;

#define WATCH_PERIOD_US 2000
#define TRACE_PERIOD_US 1000

pf_pipeline_params pf_pipeline_params_default(void)
{
    pf_pipeline_params p;
    memset(&p, 0, sizeof p);
    p.name = "pipeline";
    p.mode = PF_MODE_CUSTOM;
    p.trace_counter_ms = PL_TRACE_COUNTER_MS;
    return p;
}

pf_stage_desc pf_stage_desc_default(void)
{
    pf_stage_desc d;
    memset(&d, 0, sizeof d);
    d.threads = 1;
    d.accepts = PF_MEM_HOST;
    d.produces = PF_MEM_HOST;
    d.batch.max_batch = 1;
    d.batch.max_delay_us = 0;
    return d;
}

static char *dupstr(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

pf_status pf_pipeline_create(const pf_pipeline_params *pp, pf_pipeline **out)
{
    PF_CHECK_ARG(out, "pf_pipeline_create", "out is NULL");
    *out = NULL;
    pf_pipeline_params def = pf_pipeline_params_default();
    if (!pp) pp = &def;
    if ((int)pp->mode < PF_MODE_CUSTOM || (int)pp->mode > PF_MODE_THROUGHPUT)
        return pf_set_error(PF_ERR_INVALID, "pf_pipeline_create: unknown mode %d", (int)pp->mode);
    if (pp->trace_counter_ms < 0 || pp->trace_counter_ms > PF_PIPELINE_TRACE_COUNTER_MS_MAX)
        return pf_set_error(PF_ERR_INVALID, "pf_pipeline_create: trace_counter_ms %d is not 0..%d",
                            pp->trace_counter_ms, PF_PIPELINE_TRACE_COUNTER_MS_MAX);
    /* The tracer's own limit, checked now rather than at start. */
    const size_t max_events = ((size_t)1 << 32) - 2;
    if (pp->trace_max_events > max_events)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_pipeline_create: trace_max_events %zu exceeds %zu",
                            pp->trace_max_events, max_events);
    pf_pipeline *p = calloc(1, sizeof *p);
    if (!p) return pf_set_error(PF_ERR_NOMEM, "pf_pipeline_create: out of host memory");
    p->name = dupstr(pp->name && *pp->name ? pp->name : "pipeline");
    p->trace_path = pp->trace_path && *pp->trace_path ? dupstr(pp->trace_path) : NULL;
    if (!p->name || (pp->trace_path && *pp->trace_path && !p->trace_path)) {
        free(p->name);
        free(p->trace_path);
        free(p);
        return pf_set_error(PF_ERR_NOMEM, "pf_pipeline_create: out of host memory");
    }
    p->mode = pp->mode;
    p->strict = pp->strict_transfers;
    p->trace_counter_ms = pp->trace_counter_ms;
    p->trace_max_events = pp->trace_max_events;
    p->clock = pp->clock;
    p->sources_wait_start = pp->sources_wait_start;
    pf_mutex_init(&p->mu);
    pf_cond_init(&p->cv);
    pf_mutex_init(&p->join_mu);
    atomic_init(&p->stopping, 0);
    atomic_init(&p->cancel_flag, 0);
    atomic_init(&p->edges_cancelled, 0);
    atomic_init(&p->completed, 0);
    pf_status st = pf_histogram_create(&p->e2e);
    if (st == PF_OK) st = pl_streams_create(&p->streams);
    if (st != PF_OK) {
        pf_pipeline *q = p;
        pf_pipeline_destroy(&q);
        return st;
    }
    *out = p;
    return PF_OK;
}

static void stage_free(pf_stage *s)
{
    if (!s) return;
    pl_stage_release(s);
    /* The stage's own state (built-ins keep theirs here); streams are gone by
     * now, so anything tied to a stream was released in `stop`. */
    if (s->d.destroy) s->d.destroy(s->d.user);
    pl_transfer_destroy(&s->xfer);
    pf_histogram_destroy(&s->lat);
    pf_edge_notify_destroy(&s->notify);
    pf_mutex_destroy(&s->in_mu);
    free(s->in);
    free(s->out);
    free(s->name);
    free(s);
}

static void join_all(pf_pipeline *p)
{
    pf_mutex_lock(&p->join_mu);
    if (!p->joined) {
        for (int i = 0; i < p->nstages; i++) {
            pf_stage *s = p->stages[i];
            for (int k = 0; s->w && k < s->nthreads; k++)
                if (s->w[k].thread_started) {
                    pf_thread_join(s->w[k].thread);
                    s->w[k].thread_started = false;
                }
        }
        if (p->watcher_started) {
            pf_thread_join(p->watcher);
            p->watcher_started = false;
        }
        p->joined = true;
    }
    pf_mutex_unlock(&p->join_mu);
}

void pf_pipeline_destroy(pf_pipeline **pp)
{
    if (!pp || !*pp) return;
    pf_pipeline *p = *pp;
    *pp = NULL;
    if (p->state != PL_CREATED) {
        if (p->state == PL_RUNNING) pf_pipeline_cancel(p);
        pf_mutex_lock(&p->mu);
        while (p->state != PL_FINISHED) pf_cond_wait(&p->cv, &p->mu);
        pf_mutex_unlock(&p->mu);
        join_all(p);
    }
    /* The tracer goes first: its events name stages and edges. Queued items
     * go before the stages' streams: releasing a stream-ordered buffer
     * records an event on the stream it was allocated on. */
    pf_tracer_destroy(&p->tracer);
    for (int i = 0; i < p->nedges; i++) {
        pl_edge *e = p->edges[i];
        pf_edge_destroy(&e->e);
        free(e->label);
        free(e->counter);
        free(e);
    }
    for (int i = 0; i < p->nstages; i++) stage_free(p->stages[i]);
    for (int i = 0; i < p->nallocs; i++) pf_allocator_destroy(&p->allocs[i].a);
    free(p->stages);
    free(p->edges);
    free(p->snap_stages);
    free(p->snap_edges);
    pf_histogram_destroy(&p->e2e);
    pl_streams_destroy(&p->streams);
    free(p->snap_streams);
    pf_cond_destroy(&p->cv);
    pf_mutex_destroy(&p->mu);
    pf_mutex_destroy(&p->join_mu);
    free(p->name);
    free(p->trace_path);
    free(p);
}

pf_stage *pf_pipeline_find_stage(pf_pipeline *p, const char *name)
{
    if (!p || !name) return NULL;
    for (int i = 0; i < p->nstages; i++)
        if (!strcmp(p->stages[i]->name, name)) return p->stages[i];
    return NULL;
}

const char *pf_stage_name(const pf_stage *stage) { return stage ? stage->name : NULL; }

/* Appends a stage record (no checks beyond memory). Caller holds p->mu
 * (the table may be read by get_stats, the watcher and stops meanwhile). */
static pf_status stage_new(pf_pipeline *p, const pf_stage_desc *d, const char *fn, pf_stage **out)
{
    if (p->nstages == p->cap_stages) {
        int cap = p->cap_stages ? p->cap_stages * 2 : 8;
        pf_stage **ns = realloc(p->stages, (size_t)cap * sizeof *ns);
        if (!ns) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", fn);
        p->stages = ns;
        p->cap_stages = cap;
    }
    pf_stage *s = calloc(1, sizeof *s);
    if (!s) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", fn);
    s->name = dupstr(d->name);
    pf_status st = s->name ? pf_histogram_create(&s->lat) : PF_ERR_NOMEM;
    if (st != PF_OK) {
        free(s->name);
        free(s);
        return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", fn);
    }
    s->pl = p;
    s->d = *d;
    s->d.name = s->name;
    s->dev = d->device ? d->device : pf_cpu_device();
    s->gpu = pf_device_get_type(s->dev) == PF_DEVICE_CUDA || pl_test_force_gpu_path;
    s->nthreads = d->threads;
    s->max_batch = d->batch.max_batch;
    s->source_ordinal = -1;
    s->live = p->state != PL_CREATED;
    pf_edge_notify_init(&s->notify);
    pf_mutex_init(&s->in_mu);
    s->index = p->nstages;
    p->stages[p->nstages++] = s;
    *out = s;
    return PF_OK;
}

pf_status pf_pipeline_add_stage(pf_pipeline *p, const pf_stage_desc *d, pf_stage **out)
{
    static const char fn[] = "pf_pipeline_add_stage";
    if (out) *out = NULL;
    PF_CHECK_ARG(p && d, fn, "pipeline or desc is NULL");
    if (p->state == PL_FINISHED || atomic_load(&p->stopping))
        return pf_set_error(PF_ERR_INVALID, "%s: pipeline '%s' has finished or is stopping", fn,
                            p->name);
    if (!d->name || !*d->name)
        return pf_set_error(PF_ERR_INVALID, "%s: stage name is empty", fn);
    if (pf_pipeline_find_stage(p, d->name))
        return pf_set_error(PF_ERR_INVALID, "%s: duplicate stage name '%s' in pipeline '%s'", fn,
                            d->name, p->name);
    if (!d->source == !d->process)
        return pf_set_error(PF_ERR_INVALID,
                            "%s: stage '%s' must set exactly one of source and process (%s)", fn,
                            d->name, d->source ? "both are set" : "neither is set");
    if (d->threads < 1 || d->threads > 256)
        return pf_set_error(PF_ERR_INVALID, "%s: stage '%s': threads %d out of range 1..256", fn,
                            d->name, d->threads);
    if (d->batch.max_batch < 1 || d->batch.max_batch > PF_STATS_MAX_BATCH)
        return pf_set_error(PF_ERR_INVALID, "%s: stage '%s': max_batch %d out of range 1..%d",
                            fn, d->name, d->batch.max_batch, PF_STATS_MAX_BATCH);
    if (d->batch.max_delay_us < 0)
        return pf_set_error(PF_ERR_INVALID, "%s: stage '%s': max_delay_us %lld is negative", fn,
                            d->name, (long long)d->batch.max_delay_us);
    if (d->source && d->batch.max_batch > 1)
        return pf_set_error(PF_ERR_INVALID, "%s: stage '%s': a source cannot batch (max_batch %d)",
                            fn, d->name, d->batch.max_batch);
    if (!(d->fps >= 0) || d->fps > 1e9)
        return pf_set_error(PF_ERR_INVALID, "%s: stage '%s': fps %g out of range 0..1e9", fn,
                            d->name, d->fps);
    if (d->max_items < 0)
        return pf_set_error(PF_ERR_INVALID, "%s: stage '%s': max_items %lld is negative", fn,
                            d->name, (long long)d->max_items);
    if ((unsigned)d->accepts > PF_MEM_DEVICE || (unsigned)d->produces > PF_MEM_DEVICE)
        return pf_set_error(PF_ERR_INVALID, "%s: stage '%s': unknown memory domain %d", fn,
                            d->name, (unsigned)d->accepts > PF_MEM_DEVICE ? (int)d->accepts
                                                                           : (int)d->produces);
    pf_stage *s = NULL;
    pf_mutex_lock(&p->mu);
    pf_status st = stage_new(p, d, fn, &s);
    if (st == PF_OK && d->source) s->source_ordinal = p->nsources++;
    pf_mutex_unlock(&p->mu);
    if (st != PF_OK) return st;
    if (out) *out = s;
    return PF_OK;
}

/* Appends an edge record from -> to; it becomes to's input number `slot`
 * (replacing that one: a transfer stands in between) or, with slot < 0, its
 * next input. Caller holds p->mu; to->in_mu too when `to` runs. */
pf_status pl_edge_new(pf_pipeline *p, pf_stage *from, pf_stage *to, const pf_edge_params *ep,
                      int slot, const char *fn, pl_edge **out)
{
    if (slot < 0 && to->nin == to->cap_in) {
        int cap = to->cap_in ? to->cap_in * 2 : 2;
        pl_edge **ni = realloc(to->in, (size_t)cap * sizeof *ni);
        if (!ni) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", fn);
        to->in = ni;
        to->cap_in = cap;
    }
    if (p->nedges == p->cap_edges) {
        int cap = p->cap_edges ? p->cap_edges * 2 : 8;
        pl_edge **ne = realloc(p->edges, (size_t)cap * sizeof *ne);
        if (!ne) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", fn);
        p->edges = ne;
        p->cap_edges = cap;
    }
    if (from->nout == from->cap_out) {
        int cap = from->cap_out ? from->cap_out * 2 : 4;
        pl_edge **no = realloc(from->out, (size_t)cap * sizeof *no);
        if (!no) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", fn);
        from->out = no;
        from->cap_out = cap;
    }
    pl_edge *e = calloc(1, sizeof *e);
    size_t n = strlen(from->name) + strlen(to->name) + 16;
    char *label = malloc(n), *counter = malloc(n + 8);
    if (!e || !label || !counter) {
        free(e);
        free(label);
        free(counter);
        return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", fn);
    }
    snprintf(label, n, "%s -> %s", from->name, to->name);
    snprintf(counter, n + 8, "queue %s", label);
    e->label = label;
    e->counter = counter;
    e->from = from;
    e->to = to;
    e->params = *ep;
    e->index = p->nedges;
    p->edges[p->nedges++] = e;
    from->out[from->nout++] = e;
    if (slot < 0) to->in[to->nin++] = e;
    else to->in[slot] = e;
    *out = e;
    return PF_OK;
}

/* Whether `target` is `s` or upstream of it: depth-first over the inputs,
 * each stage visited once (seen[] by stage index), so diamonds cost no
 * more than the edges; the depth is at most the stage count (acyclic). */
static bool reaches_seen(const pf_stage *s, const pf_stage *target, bool *seen)
{
    if (s == target) return true;
    if (seen[s->index]) return false;
    seen[s->index] = true;
    for (int i = 0; i < s->nin; i++)
        if (reaches_seen(s->in[i]->from, target, seen)) return true;
    return false;
}

/* reaches_seen with a fresh visit set; -1 when out of memory. */
static int reaches(const pf_pipeline *p, const pf_stage *s, const pf_stage *target)
{
    bool *seen = calloc((size_t)p->nstages + 1, sizeof *seen);
    if (!seen) return -1;
    int r = reaches_seen(s, target, seen);
    free(seen);
    return r;
}

/* "target -> ... -> s": one path up from s to target (reaches() is true). */
static void upstream_path(const pf_pipeline *p, const pf_stage *s, const pf_stage *target,
                          char *buf, size_t n)
{
    const pf_stage *chain[64];
    int len = 0;
    const pf_stage *cur = s;
    while (len < 64) {
        chain[len++] = cur;
        if (cur == target) break;
        const pf_stage *next = NULL;
        for (int i = 0; i < cur->nin && !next; i++)
            if (reaches(p, cur->in[i]->from, target) == 1) next = cur->in[i]->from;
        if (!next) break;
        cur = next;
    }
    size_t used = 0;
    buf[0] = 0;
    for (int i = len - 1; i >= 0 && used < n; i--)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", chain[i]->name, i ? " -> " : "");
}

static bool stage_in(pf_pipeline *p, const pf_stage *s)
{
    for (int i = 0; i < p->nstages; i++)
        if (p->stages[i] == s) return true;
    return false;
}

pf_status pf_pipeline_connect(pf_pipeline *p, pf_stage *from, pf_stage *to,
                              const pf_edge_params *e)
{
    static const char fn[] = "pf_pipeline_connect";
    PF_CHECK_ARG(p && from && to, fn, "pipeline or stage is NULL");
    if (p->state == PL_FINISHED || atomic_load(&p->stopping))
        return pf_set_error(PF_ERR_INVALID, "%s: pipeline '%s' has finished or is stopping", fn,
                            p->name);
    if (!stage_in(p, from) || !stage_in(p, to))
        return pf_set_error(PF_ERR_INVALID, "%s: stage '%s' is not part of pipeline '%s'", fn,
                            stage_in(p, from) ? to->name : from->name, p->name);
    pf_edge_params def = pf_edge_params_default();
    if (!e) e = &def;
    if (e->capacity < 1)
        return pf_set_error(PF_ERR_INVALID, "%s: %s -> %s: capacity %d must be >= 1", fn,
                            from->name, to->name, e->capacity);
    if ((unsigned)e->policy > PF_EDGE_LATEST_ONLY)
        return pf_set_error(PF_ERR_INVALID, "%s: %s -> %s: unknown policy %d", fn, from->name,
                            to->name, (int)e->policy);
    if (to->d.source)
        return pf_set_error(PF_ERR_INVALID, "%s: %s -> %s: '%s' is a source and takes no input",
                            fn, from->name, to->name, to->name);
    int cyc = reaches(p, from, to);
    if (cyc < 0) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", fn);
    if (cyc) {
        char path[512];
        upstream_path(p, from, to, path, sizeof path);
        return pf_set_error(PF_ERR_INVALID, "%s: %s -> %s would close a cycle: %s -> %s", fn,
                            from->name, to->name, path, to->name);
    }
    if (p->state != PL_CREATED) return pl_live_connect(p, from, to, e);
    pf_mutex_lock(&p->mu);
    pl_edge *pe = NULL;
    pf_status st = pl_edge_new(p, from, to, e, -1, fn, &pe);
    pf_mutex_unlock(&p->mu);
    return st;
}

/* Domains ------------------------------------------------------------------------ */

/* Whether items made by `from` can be read by `to` as declared. */
bool pl_locations_match(const pf_stage *from, const pf_stage *to)
{
    bool fh = pl_domain_is_host(from->d.produces), th = pl_domain_is_host(to->d.accepts);
    if (fh != th) return false;
    return fh || from->dev == to->dev;
}

static const char *side_words(pf_mem_domain d) { return pl_domain_is_host(d) ? "host" : "device"; }

static pf_status insert_transfer(pf_pipeline *p, pl_edge *e)
{
    static const char fn[] = "pf_pipeline_start";
    pf_stage *from = e->from, *to = e->to;
    pf_stage_desc d = pf_stage_desc_default();
    const char *kind = pl_transfer_kind(from, to);
    char name[256];
    snprintf(name, sizeof name, "%s:%s->%s", kind, from->name, to->name);
    for (int k = 2; pf_pipeline_find_stage(p, name); k++)
        snprintf(name, sizeof name, "%s:%s->%s#%d", kind, from->name, to->name, k);
    d.name = name;
    d.process = pl_transfer_process;
    d.accepts = from->d.produces;
    d.produces = to->d.accepts;
    /* The stage's own device is the device side (the source side for d2d). */
    d.device = !pl_domain_is_host(from->d.produces) ? from->dev : to->dev;
    int slot = 0;
    while (slot < to->nin && to->in[slot] != e) slot++;
    pf_stage *t = NULL;
    pf_status st = stage_new(p, &d, fn, &t);
    if (st != PF_OK) return st;
    t->is_transfer = true;
    t->gpu = false; /* it synchronises its own streams before emitting */
    st = pl_transfer_create(p, from, to, &t->xfer);
    if (st != PF_OK) return st;
    t->d.user = t->xfer;
    /* from -> t keeps the configured edge (its policy drops before the
     * copy, not after); t -> to blocks with the same capacity. */
    e->to = t;
    if (t->cap_in < 1) {
        t->in = malloc(sizeof *t->in);
        if (!t->in) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", fn);
        t->cap_in = 1;
    }
    t->in[0] = e;
    t->nin = 1;
    size_t n = strlen(from->name) + strlen(t->name) + 16;
    char *label = malloc(n), *counter = malloc(n + 8);
    if (!label || !counter) {
        free(label);
        free(counter);
        return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", fn);
    }
    snprintf(label, n, "%s -> %s", from->name, t->name);
    snprintf(counter, n + 8, "queue %s", label);
    free(e->label);
    free(e->counter);
    e->label = label;
    e->counter = counter;
    pf_edge_params ep = pf_edge_params_default();
    ep.capacity = e->params.capacity;
    ep.policy = PF_EDGE_BLOCK;
    pl_edge *ne = NULL;
    return pl_edge_new(p, t, to, &ep, slot, fn, &ne);
}

static pf_status check_domains(pf_pipeline *p)
{
    int n = p->nedges; /* transfers append edges that need no check */
    for (int i = 0; i < n; i++) {
        pl_edge *e = p->edges[i];
        if (pl_locations_match(e->from, e->to)) continue;
        if (p->strict) {
            char pd[64] = "", cd[64] = "";
            if (!pl_domain_is_host(e->from->d.produces))
                snprintf(pd, sizeof pd, " on %s", pf_device_spec(e->from->dev));
            if (!pl_domain_is_host(e->to->d.accepts))
                snprintf(cd, sizeof cd, " on %s", pf_device_spec(e->to->dev));
            return pf_set_error(PF_ERR_INVALID,
                                "pf_pipeline_start: %s: producer makes %s items%s, consumer "
                                "accepts %s%s (strict_transfers forbids inserting a transfer)",
                                e->label, side_words(e->from->d.produces), pd,
                                side_words(e->to->d.accepts), cd);
        }
        pf_status st = insert_transfer(p, e);
        if (st != PF_OK) return st;
        PF_LOGI("pipeline '%s': inserted transfer stage '%s'", p->name,
                p->stages[p->nstages - 1]->name);
    }
    return PF_OK;
}

void pl_apply_mode_edge(pf_pipeline *p, pl_edge *e)
{
    {
        if (p->mode == PF_MODE_LATENCY) {
            /* The freshest frame per stream: after a source, and into a
             * stage with several inputs (a muxer: one edge per stream). */
            if (e->from->d.source || e->to->nin > 1) {
                e->params.policy = PF_EDGE_LATEST_ONLY;
                e->params.capacity = 1;
            } else if (e->params.capacity > 2) {
                e->params.capacity = 2;
            }
        } else if (p->mode == PF_MODE_THROUGHPUT) {
            e->params.policy = PF_EDGE_BLOCK;
        }
        if (e->params.policy == PF_EDGE_LATEST_ONLY) e->params.capacity = 1;
    }
}

void pl_apply_mode_stage(pf_pipeline *p, pf_stage *s)
{
    if (p->mode == PF_MODE_LATENCY) s->max_batch = 1;
    s->ordered = s->d.ordered && s->nthreads > 1 && !s->d.source;
}

static void apply_mode(pf_pipeline *p)
{
    for (int i = 0; i < p->nedges; i++) pl_apply_mode_edge(p, p->edges[i]);
    for (int i = 0; i < p->nstages; i++) pl_apply_mode_stage(p, p->stages[i]);
}

/* Lifecycle ------------------------------------------------------------------------ */

/* Queue depths into the trace: every edge (all) or those that changed. Only
 * the thread that owns last_depth calls it: start before the workers and the
 * watcher run, then the watcher. */
static void trace_queues(pf_pipeline *p, bool all)
{
    int64_t now = pf_time_ns();
    pf_mutex_lock(&p->mu); /* edges may be added while running */
    for (int i = 0; i < p->nedges; i++) {
        pl_edge *e = p->edges[i];
        if (!e->e) continue;
        int depth = pf_edge_depth(e->e);
        if (all || depth != e->last_depth) {
            pf_trace_counter(p->tracer, e->counter, now, depth);
            e->last_depth = depth;
        }
    }
    pf_mutex_unlock(&p->mu);
}

static void *watcher_main(void *arg)
{
    pf_pipeline *p = arg;
    int64_t period = (p->tracer ? TRACE_PERIOD_US : WATCH_PERIOD_US) * 1000;
    pf_mutex_lock(&p->mu);
    while (p->state == PL_RUNNING) {
        pf_cond_timedwait_until(&p->cv, &p->mu, pf_time_ns() + period);
        if (p->state != PL_RUNNING) break;
        bool cancel = atomic_load(&p->cancel_flag) && !atomic_load(&p->edges_cancelled);
        pf_mutex_unlock(&p->mu);
        if (cancel) pf_pipeline_cancel(p);
        if (p->tracer) trace_queues(p, false);
        pf_mutex_lock(&p->mu);
    }
    pf_mutex_unlock(&p->mu);
    /* Every worker is done: the final depths close each counter track. */
    if (p->tracer) trace_queues(p, true);
    return NULL;
}

/* Everything start() builds before the workers run. */
static pf_status prepare(pf_pipeline *p)
{
    apply_mode(p);
    pf_status st;
    for (int i = 0; i < p->nedges; i++) {
        pl_edge *e = p->edges[i];
        st = pl_edge_open(p, e);
        if (st != PF_OK) return st;
    }
    if (p->trace_path) {
        pf_tracer_params tp = pf_tracer_params_default();
        tp.path = p->trace_path;
        tp.process_name = p->name;
        if (p->trace_max_events) tp.max_events = p->trace_max_events;
        /* One tracer calibrates one device: the first CUDA device in stage
         * order (user stages come before the inserted transfers). */
        for (int i = 0; i < p->nstages && !p->trace_gpu; i++)
            if (pf_device_get_type(p->stages[i]->dev) == PF_DEVICE_CUDA)
                p->trace_gpu = p->stages[i]->dev;
        for (int i = 0; i < p->nstages; i++) {
            pf_stage *s = p->stages[i];
            if (p->trace_gpu && s->gpu && pf_device_get_type(s->dev) == PF_DEVICE_CUDA &&
                s->dev != p->trace_gpu)
                PF_LOGW("pipeline '%s': trace: stage '%s' runs on %s, but GPU time is traced "
                        "on %s only: its GPU track is left out",
                        p->name, s->name, pf_device_spec(s->dev), pf_device_spec(p->trace_gpu));
        }
        tp.gpu = p->trace_gpu;
        tp.counter_period_ms = p->trace_gpu ? p->trace_counter_ms : 0;
        st = pf_tracer_create(&tp, &p->tracer);
        if (st != PF_OK) return st;
    }
    for (int i = 0; i < p->nstages; i++) {
        pf_stage *s = p->stages[i];
        if (s->is_transfer) {
            /* What the consumer may hold at once: its queue plus one batch
             * per worker, kept longer by GPU consumers (deferred release). */
            pf_stage *c = s->out[0]->to;
            int hold = c->nthreads * c->max_batch * (c->gpu ? PL_DEFER + 1 : 1);
            pl_transfer_configure(s->xfer, s->out[0]->params.capacity, hold);
        }
        st = pl_stage_prepare(s);
        if (st != PF_OK) return st;
    }
    return PF_OK;
}

pf_status pf_pipeline_start(pf_pipeline *p)
{
    static const char fn[] = "pf_pipeline_start";
    PF_CHECK_ARG(p, fn, "pipeline is NULL");
    if (p->state != PL_CREATED)
        return pf_set_error(PF_ERR_INVALID, "%s: pipeline '%s' is already started", fn, p->name);
    if (p->broken)
        return pf_set_error(PF_ERR_INVALID,
                            "%s: a previous start of pipeline '%s' failed; build a new one", fn,
                            p->name);
    if (p->nsources == 0)
        return pf_set_error(PF_ERR_INVALID, "%s: pipeline '%s' has no source stage", fn, p->name);
    for (int i = 0; i < p->nstages; i++)
        if (!p->stages[i]->d.source && p->stages[i]->nin == 0)
            return pf_set_error(PF_ERR_INVALID,
                                "%s: stage '%s' has no input edge (only sources run without one)",
                                fn, p->stages[i]->name);
    /* Under the lock: get_stats may read the stage table meanwhile. */
    pf_mutex_lock(&p->mu);
    pf_status st = check_domains(p);
    pf_mutex_unlock(&p->mu);
    if (st != PF_OK) {
        /* A strict refusal changed nothing; a failed insertion may have. */
        if (!p->strict) p->broken = true;
        return st;
    }
    st = prepare(p);
    if (st != PF_OK) {
        p->broken = true;
        return st;
    }

    /* Every edge starts its counter track empty (the watcher adds changes). */
    if (p->tracer) trace_queues(p, true);

    pf_mutex_lock(&p->mu);
    p->t_start = pl_now(p);
    p->state = PL_RUNNING;
    p->stages_running = p->nstages;
    p->starting = 0;
    for (int i = 0; i < p->nstages; i++)
        if (!p->stages[i]->d.source && p->stages[i]->d.start) p->starting += p->stages[i]->nthreads;
    pf_mutex_unlock(&p->mu);

    /* From here on failures go through pl_fail so that the workers already
     * running unwind; start still reports the failure. */
    pf_status failed = PF_OK;
    for (int i = 0; i < p->nstages; i++) {
        pf_stage *s = p->stages[i];
        atomic_store(&s->active, s->nthreads);
        s->launched = true;
    }
    for (int i = 0; i < p->nstages && failed == PF_OK; i++) {
        pf_stage *s = p->stages[i];
        for (int k = 0; k < s->nthreads; k++) {
            char tn[32];
            snprintf(tn, sizeof tn, "pf:%s", s->name);
            st = pf_thread_start(&s->w[k].thread, tn, pl_worker_main, &s->w[k]);
            if (st != PF_OK) {
                failed = st;
                break;
            }
            s->w[k].thread_started = true;
        }
    }
    if (failed != PF_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s: %s", fn, pf_last_error());
        pl_fail(p, failed, msg);
        /* Stages whose workers never started will never finish by themselves. */
        for (int i = 0; i < p->nstages; i++) {
            pf_stage *s = p->stages[i];
            int never = 0;
            for (int k = 0; k < s->nthreads; k++) never += !s->w[k].thread_started;
            if (never && !s->d.source && s->d.start) pl_started(p, never);
            if (never && atomic_fetch_sub(&s->active, never) == never) {
                for (int j = 0; j < s->nout; j++) pf_edge_close(s->out[j]->e);
                pl_stage_finished(p, s);
            }
        }
        pf_set_error(failed, "%s", msg);
        return failed;
    }
    if (pf_thread_start(&p->watcher, "pf:watch", watcher_main, p) == PF_OK)
        p->watcher_started = true;
    else
        PF_LOGW("pipeline '%s': no watcher thread (%s): cancel_async works only through the "
                "sources", p->name, pf_last_error());
    if (atomic_load(&p->cancel_flag)) pf_pipeline_cancel(p); /* cancelled before start */
    return PF_OK;
}

void pl_started(pf_pipeline *p, int workers)
{
    pf_mutex_lock(&p->mu);
    p->starting -= workers;
    if (p->starting <= 0) pf_cond_broadcast(&p->cv);
    pf_mutex_unlock(&p->mu);
}

void pl_wait_started(pf_pipeline *p)
{
    pf_mutex_lock(&p->mu);
    while (p->starting > 0 && !atomic_load(&p->stopping)) pf_cond_wait(&p->cv, &p->mu);
    pf_mutex_unlock(&p->mu);
}

void pl_stage_finished(pf_pipeline *p, pf_stage *s)
{
    atomic_store(&s->t_end, pl_now(p));
    pf_mutex_lock(&p->mu);
    if (--p->stages_running == 0) {
        p->state = PL_FINISHED;
        p->t_end = pl_now(p);
        pf_cond_broadcast(&p->cv);
    }
    pf_mutex_unlock(&p->mu);
}

void pl_stop_all(pf_pipeline *p)
{
    if (atomic_exchange(&p->edges_cancelled, 1)) return;
    /* Under the lock: stages and edges may be added while running. */
    pf_mutex_lock(&p->mu);
    for (int i = 0; i < p->nedges; i++)
        if (p->edges[i]->e) pf_edge_cancel(p->edges[i]->e);
    for (int i = 0; i < p->nstages; i++) pl_stage_wake(p->stages[i]);
    pf_cond_broadcast(&p->cv); /* paced sources */
    pf_mutex_unlock(&p->mu);
}

void pl_fail(pf_pipeline *p, pf_status status, const char *msg)
{
    pf_mutex_lock(&p->mu);
    bool first = !p->status_set && p->state != PL_FINISHED;
    if (first) {
        p->status = status;
        p->status_set = true;
        snprintf(p->errmsg, sizeof p->errmsg, "%s", msg);
        atomic_store(&p->stopping, 1);
    }
    bool running = p->state == PL_RUNNING;
    pf_mutex_unlock(&p->mu);
    if (first && running) pl_stop_all(p);
}

pf_status pf_pipeline_wait(pf_pipeline *p, int64_t timeout_us)
{
    PF_CHECK_ARG(p, "pf_pipeline_wait", "pipeline is NULL");
    if (p->state == PL_CREATED)
        return pf_set_error(PF_ERR_INVALID, "pf_pipeline_wait: pipeline '%s' is not started",
                            p->name);
    int64_t deadline = timeout_us > 0 ? pf_deadline_ns(timeout_us) : 0;
    pf_mutex_lock(&p->mu);
    while (p->state != PL_FINISHED) {
        if (timeout_us == 0) {
            pf_mutex_unlock(&p->mu);
            return PF_AGAIN;
        }
        if (timeout_us < 0) {
            pf_cond_wait(&p->cv, &p->mu);
        } else if (!pf_cond_timedwait_until(&p->cv, &p->mu, deadline) &&
                   p->state != PL_FINISHED) {
            pf_mutex_unlock(&p->mu);
            return PF_TIMEOUT;
        }
    }
    pf_status st = p->status_set ? p->status : PF_OK;
    char msg[sizeof p->errmsg];
    memcpy(msg, p->errmsg, sizeof msg);
    pf_mutex_unlock(&p->mu);
    join_all(p);
    if (st < 0) return pf_set_error(st, "%s", msg);
    return PF_OK;
}

void pf_pipeline_cancel(pf_pipeline *p)
{
    if (!p) return;
    atomic_store(&p->cancel_flag, 1);
    pf_mutex_lock(&p->mu);
    bool started = p->state != PL_CREATED;
    pf_mutex_unlock(&p->mu);
    if (!started) return; /* start() sees the flag */
    char msg[300];
    snprintf(msg, sizeof msg, "pipeline '%s' was cancelled", p->name);
    pl_fail(p, PF_ERR_CANCELLED, msg);
    /* pl_fail only stops a pipeline whose status was not set yet; make sure
     * the edges go even when an error raced with the cancel. */
    pf_mutex_lock(&p->mu);
    bool running = p->state == PL_RUNNING;
    pf_mutex_unlock(&p->mu);
    if (running) {
        atomic_store(&p->stopping, 1);
        pl_stop_all(p);
    }
}

void pf_pipeline_cancel_async(pf_pipeline *p)
{
    if (p) atomic_store(&p->cancel_flag, 1);
}

pf_allocator *pl_get_allocator(pf_pipeline *p, pf_device *dev, pf_mem_domain domain)
{
    pf_allocator *a = NULL;
    pf_mutex_lock(&p->mu);
    for (int i = 0; i < p->nallocs; i++)
        if (p->allocs[i].dev == dev && p->allocs[i].domain == domain) a = p->allocs[i].a;
    if (!a) {
        if (p->nallocs == (int)(sizeof p->allocs / sizeof p->allocs[0])) {
            pf_set_error(PF_ERR_NOMEM, "pipeline '%s': too many allocators (device/domain pairs)",
                         p->name);
        } else {
            char name[160];
            snprintf(name, sizeof name, "%s/%s/%s", p->name, pf_device_spec(dev),
                     pf_mem_domain_name(domain));
            pf_allocator_params ap = pf_allocator_params_default();
            ap.device = dev;
            ap.domain = domain;
            ap.name = name;
            if (pf_allocator_create(&ap, &a) == PF_OK) {
                p->allocs[p->nallocs].dev = dev;
                p->allocs[p->nallocs].domain = domain;
                p->allocs[p->nallocs].a = a;
                p->nallocs++;
            }
        }
    }
    pf_mutex_unlock(&p->mu);
    return a;
}
