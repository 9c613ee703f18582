/* Reading a pipeline's trace file back for tests: parses it with the strict
 * JSON checker (json_check.h) and flattens the events the pipeline writes
 * into arrays of spans (with their track's name, exact ns times, source,
 * seq and flow fields) and counters, plus the metadata object. Shared by the
 * CPU and CUDA pipeline tests. Header-only, static functions: include once.
 *
 * Times: the file writes microseconds with exactly three decimals, so
 * ts/dur convert back to exact integer nanoseconds (from the tracer's
 * origin); comparisons between spans are exact. */
#ifndef PF_TEST_PIPELINE_TRACE_CHECK_H
#define PF_TEST_PIPELINE_TRACE_CHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_check.h"

typedef struct tv_span {
    int pid, tid;
    const char *track;   /* thread_name of (pid, tid); "" if none */
    const char *name;
    int64_t ts, dur;     /* ns from the trace's origin */
    int64_t source, seq; /* -1 when absent */
    const char *bind;    /* flow id, NULL when not in a flow */
    bool flow_in, flow_out;
} tv_span;

typedef struct tv_counter {
    int pid;
    const char *name;
    int64_t ts;
    double value;
} tv_counter;

typedef struct tv_thread {
    int pid, tid;
    const char *name;
} tv_thread;

typedef struct trace_view {
    jval root;
    char *text;
    tv_span *spans;
    size_t nspans;
    tv_counter *ctrs;
    size_t nctrs;
    tv_thread *threads;
    size_t nthreads;
    const jval *meta;
    bool has_gpu_process; /* a process_name for pid 2 */
} trace_view;

/* "12.345" (us, three decimals, optional '-') -> 12345 ns; false if the
 * text is not in that form. */
static bool tv_us_ns(const jval *v, int64_t *out)
{
    if (!v || v->type != J_NUM || !v->raw) return false;
    const char *s = v->raw;
    bool neg = *s == '-';
    if (neg) s++;
    int64_t whole = 0;
    if (*s < '0' || *s > '9') return false;
    while (*s >= '0' && *s <= '9') whole = whole * 10 + (*s++ - '0');
    if (*s++ != '.') return false;
    int64_t frac = 0;
    for (int i = 0; i < 3; i++) {
        if (*s < '0' || *s > '9') return false;
        frac = frac * 10 + (*s++ - '0');
    }
    if (*s) return false;
    *out = (neg ? -1 : 1) * (whole * 1000 + frac);
    return true;
}

static int64_t tv_int(const jval *v, int64_t dflt)
{
    return v && v->type == J_NUM ? (int64_t)v->num : dflt;
}

static void tv_free(trace_view *tv)
{
    jfree(&tv->root);
    free(tv->text);
    free(tv->spans);
    free(tv->ctrs);
    free(tv->threads);
    memset(tv, 0, sizeof *tv);
}

/* Loads and checks the shape of every event; false (with a message on
 * stderr) if the file is missing, not strict JSON, or an event is malformed. */
static bool tv_load(const char *path, trace_view *tv)
{
    memset(tv, 0, sizeof *tv);
    size_t len = 0;
    tv->text = jread_file(path, &len);
    if (!tv->text) {
        fprintf(stderr, "  trace %s: cannot read\n", path);
        return false;
    }
    if (!jparse(tv->text, len, &tv->root)) return false;
    const jval *ev = jget(&tv->root, "traceEvents");
    tv->meta = jget(&tv->root, "metadata");
    if (!ev || ev->type != J_ARR || !tv->meta || tv->meta->type != J_OBJ) {
        fprintf(stderr, "  trace %s: no traceEvents array or metadata object\n", path);
        return false;
    }
    tv->spans = calloc(ev->n + 1, sizeof *tv->spans);
    tv->ctrs = calloc(ev->n + 1, sizeof *tv->ctrs);
    tv->threads = calloc(ev->n + 1, sizeof *tv->threads);
    if (!tv->spans || !tv->ctrs || !tv->threads) return false;
    for (size_t i = 0; i < ev->n; i++) {
        const jval *e = &ev->items[i];
        const jval *ph = jget(e, "ph"), *name = jget(e, "name"), *args = jget(e, "args");
        if (!ph || ph->type != J_STR || !name || name->type != J_STR) {
            fprintf(stderr, "  trace event %zu: no ph or name\n", i);
            return false;
        }
        int pid = (int)tv_int(jget(e, "pid"), -1), tid = (int)tv_int(jget(e, "tid"), -1);
        if (!strcmp(ph->str, "M")) {
            const jval *an = jget(args, "name");
            if (!strcmp(name->str, "thread_name") && an && an->type == J_STR)
                tv->threads[tv->nthreads++] = (tv_thread){pid, tid, an->str};
            if (!strcmp(name->str, "process_name") && pid == 2) tv->has_gpu_process = true;
        } else if (!strcmp(ph->str, "X")) {
            tv_span *s = &tv->spans[tv->nspans++];
            s->pid = pid;
            s->tid = tid;
            s->name = name->str;
            if (!tv_us_ns(jget(e, "ts"), &s->ts) || !tv_us_ns(jget(e, "dur"), &s->dur) ||
                s->dur < 0) {
                fprintf(stderr, "  trace event %zu: bad ts/dur\n", i);
                return false;
            }
            s->source = tv_int(jget(args, "source"), -1);
            s->seq = tv_int(jget(args, "seq"), -1);
            const jval *b = jget(e, "bind_id"), *fi = jget(e, "flow_in"), *fo = jget(e, "flow_out");
            s->bind = b && b->type == J_STR ? b->str : NULL;
            s->flow_in = fi && fi->type == J_BOOL && fi->b;
            s->flow_out = fo && fo->type == J_BOOL && fo->b;
        } else if (!strcmp(ph->str, "C")) {
            tv_counter *c = &tv->ctrs[tv->nctrs++];
            const jval *v = jget(args, "value");
            c->pid = pid;
            c->name = name->str;
            if (!tv_us_ns(jget(e, "ts"), &c->ts) || !v || v->type != J_NUM) {
                fprintf(stderr, "  trace event %zu: bad counter\n", i);
                return false;
            }
            c->value = v->num;
        }
    }
    for (size_t i = 0; i < tv->nspans; i++) {
        tv->spans[i].track = "";
        for (size_t k = 0; k < tv->nthreads; k++)
            if (tv->threads[k].pid == tv->spans[i].pid && tv->threads[k].tid == tv->spans[i].tid)
                tv->spans[i].track = tv->threads[k].name;
    }
    return true;
}

static int64_t tv_meta(const trace_view *tv, const char *key)
{
    return tv_int(jget(tv->meta, key), -1);
}

/* Spans on process `pid` (1 CPU, 2 GPU) whose track is `track` or, with
 * `prefix`, starts with "track#" (a stage's worker threads). */
static bool tv_on_track(const tv_span *s, int pid, const char *track, bool prefix)
{
    if (s->pid != pid) return false;
    if (!strcmp(s->track, track)) return true;
    size_t n = strlen(track);
    return prefix && !strncmp(s->track, track, n) && s->track[n] == '#';
}

/* The span of item `seq` (source `source`) on a stage's tracks; NULL if
 * none. *count receives how many there are (exactly one expected). */
static const tv_span *tv_find(const trace_view *tv, int pid, const char *track, int64_t source,
                              int64_t seq, int *count)
{
    const tv_span *found = NULL;
    int n = 0;
    for (size_t i = 0; i < tv->nspans; i++) {
        const tv_span *s = &tv->spans[i];
        if (s->seq == seq && s->source == source && tv_on_track(s, pid, track, true)) {
            if (!found) found = s;
            n++;
        }
    }
    if (count) *count = n;
    return found;
}

/* Spans on a stage's tracks (all worker threads). */
static int64_t tv_count_spans(const trace_view *tv, int pid, const char *track)
{
    int64_t n = 0;
    for (size_t i = 0; i < tv->nspans; i++) n += tv_on_track(&tv->spans[i], pid, track, true);
    return n;
}

/* Counter events named `name`; first/last values in file order (written
 * in recording order, which is time order per counter). */
static int64_t tv_count_counter(const trace_view *tv, const char *name, double *first,
                                double *last)
{
    int64_t n = 0;
    for (size_t i = 0; i < tv->nctrs; i++)
        if (!strcmp(tv->ctrs[i].name, name)) {
            if (!n && first) *first = tv->ctrs[i].value;
            if (last) *last = tv->ctrs[i].value;
            n++;
        }
    return n;
}

#endif
