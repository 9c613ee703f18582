/* Pipeline statistics: a snapshot built from the workers' atomic counters,
 * the latency histograms and the edges' own counts; the end-of-run table and
 * the same content as JSON.
 *
 * Rates use each stage's own running time (start to its last worker's end,
 * or now), so a stage that finished early is not diluted by the rest of the
 * run. The bottleneck is the stage with the highest busy fraction: time spent
 * inside its source/process function, less the time it sat blocked in emit
 * waiting for room downstream, over its running time and threads.
 * Per-stream figures (streams.c) follow the stages in the table when there
 * are several streams, and are always in the JSON ("streams"). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "pipeline_impl.h"

static uint64_t ld(atomic_uint_fast64_t *a) { return atomic_load_explicit(a, memory_order_relaxed); }

/* Fills the snapshot arrays; caller holds p->mu. */
static pf_status snapshot(pf_pipeline *p, pf_pipeline_stats *out)
{
    if (p->snap_ns < p->nstages) {
        pf_stage_stats *n = realloc(p->snap_stages, (size_t)p->nstages * sizeof *n);
        if (!n) return pf_set_error(PF_ERR_NOMEM, "pf_pipeline_get_stats: out of host memory");
        p->snap_stages = n;
        p->snap_ns = p->nstages;
    }
    if (p->snap_ne < p->nedges) {
        pf_edge_stats *n = realloc(p->snap_edges, (size_t)p->nedges * sizeof *n);
        if (!n) return pf_set_error(PF_ERR_NOMEM, "pf_pipeline_get_stats: out of host memory");
        p->snap_edges = n;
        p->snap_ne = p->nedges;
    }
    memset(out, 0, sizeof *out);
    int64_t now = pl_now(p);
    bool started = p->state != PL_CREATED;
    int64_t end = p->state == PL_FINISHED ? p->t_end : now;
    out->elapsed_s = started ? (double)(end - p->t_start) / 1e9 : 0;
    out->items_completed = ld(&p->completed);
    out->fps = out->elapsed_s > 0 ? (double)out->items_completed / out->elapsed_s : 0;
    out->e2e_p50_us = pf_histogram_quantile(p->e2e, 0.50) / 1e3;
    out->e2e_p95_us = pf_histogram_quantile(p->e2e, 0.95) / 1e3;
    out->e2e_p99_us = pf_histogram_quantile(p->e2e, 0.99) / 1e3;
    out->bottleneck = -1;
    double best = -1;
    for (int i = 0; i < p->nstages; i++) {
        pf_stage *s = p->stages[i];
        pf_stage_stats *ss = &p->snap_stages[i];
        memset(ss, 0, sizeof *ss);
        ss->name = s->name;
        ss->items_in = ld(&s->items_in);
        ss->items_out = ld(&s->items_out);
        int64_t t_end = atomic_load(&s->t_end);
        double run_s = started ? (double)((t_end ? t_end : now) - p->t_start) / 1e9 : 0;
        ss->fps = run_s > 0 ? (double)ss->items_in / run_s : 0;
        ss->busy_fraction = run_s > 0 ? (double)ld(&s->busy_ns) / 1e9 / (run_s * s->nthreads) : 0;
        if (ss->busy_fraction > 1) ss->busy_fraction = 1;
        ss->latency_p50_us = pf_histogram_quantile(s->lat, 0.50) / 1e3;
        ss->latency_p95_us = pf_histogram_quantile(s->lat, 0.95) / 1e3;
        ss->latency_p99_us = pf_histogram_quantile(s->lat, 0.99) / 1e3;
        ss->errors = ld(&s->errors);
        ss->batches = ld(&s->batches);
        for (int k = 0; k <= PF_STATS_MAX_BATCH; k++) ss->batch_hist[k] = ld(&s->batch_hist[k]);
        ss->is_transfer = s->is_transfer;
        ss->transfers = ld(&s->transfers);
        ss->transfers_p2p = ld(&s->transfers_p2p);
        ss->batch_limit = atomic_load(&s->batch_limit);
        ss->batch_limits = ld(&s->batch_limits);
        ss->dropped = ld(&s->dropped);
        out->transfers += ss->transfers;
        out->transfers_p2p += ss->transfers_p2p;
        if (started && ss->busy_fraction > best) {
            best = ss->busy_fraction;
            out->bottleneck = i;
        }
    }
    for (int i = 0; i < p->nedges; i++) {
        pl_edge *e = p->edges[i];
        pf_edge_stats *es = &p->snap_edges[i];
        memset(es, 0, sizeof *es);
        if (e->e) {
            pf_edge_get_stats(e->e, es);
        } else {
            es->capacity = e->params.capacity;
            es->policy = e->params.policy;
        }
        es->from = e->from->name;
        es->to = e->to->name;
        out->dropped += es->dropped;
    }
    out->num_streams = pl_streams_snapshot(p->streams, &p->snap_streams, &p->snap_nstr, now);
    out->streams = p->snap_streams;
    out->num_stages = p->nstages;
    out->num_edges = p->nedges;
    out->stages = p->snap_stages;
    out->edges = p->snap_edges;
    return PF_OK;
}

pf_status pf_pipeline_get_stats(pf_pipeline *p, pf_pipeline_stats *out)
{
    PF_CHECK_ARG(p && out, "pf_pipeline_get_stats", "pipeline or out is NULL");
    pf_mutex_lock(&p->mu);
    pf_status st = snapshot(p, out);
    pf_mutex_unlock(&p->mu);
    return st;
}

static double mean_batch(const pf_stage_stats *s)
{
    return s->batches ? (double)s->items_in / (double)s->batches : 0;
}

pf_status pf_pipeline_print_stats(pf_pipeline *p, FILE *f)
{
    PF_CHECK_ARG(p && f, "pf_pipeline_print_stats", "pipeline or file is NULL");
    pf_pipeline_stats s;
    pf_status st = pf_pipeline_get_stats(p, &s);
    if (st != PF_OK) return st;
    fprintf(f, "pipeline '%s': %.3f s, %" PRIu64 " items reached sinks (%.1f/s), end-to-end p50 %.1f us "
               "p95 %.1f us p99 %.1f us, %" PRIu64 " dropped, %" PRIu64 " copies by transfers\n",
            p->name, s.elapsed_s, s.items_completed, s.fps, s.e2e_p50_us, s.e2e_p95_us,
            s.e2e_p99_us, s.dropped, s.transfers);
    fprintf(f, "%-28s %4s %10s %10s %10s %6s %10s %10s %10s %8s %6s %6s\n", "stage", "thr", "in",
            "out", "items/s", "busy", "p50 us", "p95 us", "p99 us", "batches", "batch", "errors");
    for (int i = 0; i < s.num_stages; i++) {
        const pf_stage_stats *ss = &s.stages[i];
        char name[64];
        snprintf(name, sizeof name, "%s%s", ss->name, ss->is_transfer ? " [transfer]" : "");
        fprintf(f, "%-28s %4d %10" PRIu64 " %10" PRIu64 " %10.1f %5.1f%% %10.1f %10.1f %10.1f %8" PRIu64
                   " %6.2f %6" PRIu64 "\n",
                name, p->stages[i]->nthreads, ss->items_in, ss->items_out, ss->fps,
                100 * ss->busy_fraction, ss->latency_p50_us, ss->latency_p95_us,
                ss->latency_p99_us, ss->batches, mean_batch(ss), ss->errors);
        if (p->stages[i]->max_batch > 1 && ss->batches) {
            fprintf(f, "%-28s batch sizes:", "");
            for (int k = 1; k <= PF_STATS_MAX_BATCH; k++)
                if (ss->batch_hist[k]) fprintf(f, " %d:%" PRIu64, k, ss->batch_hist[k]);
            fprintf(f, "\n");
        }
        if (ss->batch_limits)
            fprintf(f, "%-28s batch lowered to %d (%" PRIu64 " times, out of memory)\n", "",
                    ss->batch_limit, ss->batch_limits);
        if (ss->is_transfer)
            fprintf(f, "%-28s copies: %" PRIu64 " (%" PRIu64 " device to device peer-to-peer)\n",
                    "", ss->transfers, ss->transfers_p2p);
    }
    if (s.bottleneck >= 0)
        fprintf(f, "bottleneck: %s (busy %.1f%%)\n", s.stages[s.bottleneck].name,
                100 * s.stages[s.bottleneck].busy_fraction);
    for (int i = 0; i < s.num_stages; i++)
        if (s.stages[i].dropped)
            fprintf(f, "stage %s dropped %" PRIu64 " item(s) on purpose\n", s.stages[i].name,
                    s.stages[i].dropped);
    if (s.num_streams > 1) {
        fprintf(f, "%-10s %10s %10s %9s %10s %10s %10s\n", "stream", "in", "out", "dropped",
                "fps", "e2e p50 us", "e2e p99 us");
        for (int i = 0; i < s.num_streams; i++) {
            const pf_stream_stats *t = &s.streams[i];
            fprintf(f, "%-10d %10" PRIu64 " %10" PRIu64 " %9" PRIu64 " %10.1f %10.1f %10.1f\n",
                    (int)t->source, t->items_in, t->items_out, t->dropped, t->fps, t->e2e_p50_us,
                    t->e2e_p99_us);
        }
    }
    fprintf(f, "%-40s %5s %-12s %10s %10s %9s %9s %7s %5s\n", "edge", "cap", "policy", "pushed",
            "popped", "dropped", "cancelled", "depth", "max");
    for (int i = 0; i < s.num_edges; i++) {
        const pf_edge_stats *es = &s.edges[i];
        char name[128];
        snprintf(name, sizeof name, "%s -> %s", es->from, es->to);
        fprintf(f, "%-40s %5d %-12s %10" PRIu64 " %10" PRIu64 " %9" PRIu64 " %9" PRIu64
                   " %7.2f %5d\n",
                name, es->capacity, pf_edge_policy_name(es->policy), es->pushed, es->popped,
                es->dropped, es->cancelled, es->depth_mean, es->depth_max);
    }
    return PF_OK;
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* JSON has no NaN or infinity. */
static double fin(double v) { return v == v && v < 1e300 && v > -1e300 ? v : 0; }

pf_status pf_pipeline_write_stats_json(pf_pipeline *p, FILE *f)
{
    PF_CHECK_ARG(p && f, "pf_pipeline_write_stats_json", "pipeline or file is NULL");
    pf_pipeline_stats s;
    pf_status st = pf_pipeline_get_stats(p, &s);
    if (st != PF_OK) return st;
    fprintf(f, "{\"name\":");
    json_str(f, p->name);
    fprintf(f,
            ",\"elapsed_s\":%.6f,\"items_completed\":%" PRIu64 ",\"fps\":%.3f,"
            "\"e2e_us\":{\"p50\":%.3f,\"p95\":%.3f,\"p99\":%.3f},\"dropped\":%" PRIu64
            ",\"transfers\":%" PRIu64 ",\"bottleneck\":",
            fin(s.elapsed_s), s.items_completed, fin(s.fps), fin(s.e2e_p50_us), fin(s.e2e_p95_us),
            fin(s.e2e_p99_us), s.dropped, s.transfers);
    if (s.bottleneck >= 0)
        json_str(f, s.stages[s.bottleneck].name);
    else
        fprintf(f, "null");
    fprintf(f, ",\"stages\":[");
    for (int i = 0; i < s.num_stages; i++) {
        const pf_stage_stats *ss = &s.stages[i];
        fprintf(f, "%s{\"name\":", i ? "," : "");
        json_str(f, ss->name);
        fprintf(f,
                ",\"threads\":%d,\"items_in\":%" PRIu64 ",\"items_out\":%" PRIu64
                ",\"fps\":%.3f,\"busy_fraction\":%.4f,\"latency_us\":{\"p50\":%.3f,\"p95\":%.3f,"
                "\"p99\":%.3f},\"errors\":%" PRIu64 ",\"batches\":%" PRIu64 ",\"batch_hist\":{",
                p->stages[i]->nthreads, ss->items_in, ss->items_out, fin(ss->fps),
                fin(ss->busy_fraction), fin(ss->latency_p50_us), fin(ss->latency_p95_us),
                fin(ss->latency_p99_us), ss->errors, ss->batches);
        bool first = true;
        for (int k = 0; k <= PF_STATS_MAX_BATCH; k++)
            if (ss->batch_hist[k]) {
                fprintf(f, "%s\"%d\":%" PRIu64, first ? "" : ",", k, ss->batch_hist[k]);
                first = false;
            }
        fprintf(f, "},\"is_transfer\":%s,\"transfers\":%" PRIu64 ",\"dropped\":%" PRIu64 "}",
                ss->is_transfer ? "true" : "false", ss->transfers, ss->dropped);
    }
    fprintf(f, "],\"edges\":[");
    for (int i = 0; i < s.num_edges; i++) {
        const pf_edge_stats *es = &s.edges[i];
        fprintf(f, "%s{\"from\":", i ? "," : "");
        json_str(f, es->from);
        fprintf(f, ",\"to\":");
        json_str(f, es->to);
        fprintf(f,
                ",\"capacity\":%d,\"policy\":\"%s\",\"pushed\":%" PRIu64 ",\"popped\":%" PRIu64
                ",\"dropped\":%" PRIu64 ",\"cancelled\":%" PRIu64
                ",\"depth_mean\":%.4f,\"depth_max\":%d}",
                es->capacity, pf_edge_policy_name(es->policy), es->pushed, es->popped,
                es->dropped, es->cancelled, fin(es->depth_mean), es->depth_max);
    }
    fprintf(f, "],\"streams\":[");
    for (int i = 0; i < s.num_streams; i++) {
        const pf_stream_stats *t = &s.streams[i];
        fprintf(f,
                "%s{\"source\":%d,\"items_in\":%" PRIu64 ",\"items_out\":%" PRIu64
                ",\"dropped\":%" PRIu64 ",\"fps\":%.3f,\"e2e_us\":{\"p50\":%.3f,\"p99\":%.3f}}",
                i ? "," : "", (int)t->source, t->items_in, t->items_out, t->dropped, fin(t->fps),
                fin(t->e2e_p50_us), fin(t->e2e_p99_us));
    }
    fprintf(f, "]}\n");
    return ferror(f) ? pf_set_error(PF_ERR_IO, "pf_pipeline_write_stats_json: write failed") : PF_OK;
}
