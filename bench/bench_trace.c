/* bench_trace: what tracing costs the traced code, and what writing the
 * trace costs.
 *
 *   bench_trace [--device SPEC] [--iters N] [--json]
 *
 * Recording (N calls per thread, default 1,000,000; the median of 5 runs,
 * each on a fresh tracer sized to hold every event):
 *   span 1 thread    pf_trace_span, ns per call (loop included)
 *   span 4 threads   the same from 4 threads at once: ns per call per thread
 *                    (contention on the slot counter), and all threads' events/s
 *   counter          pf_trace_counter, 1 thread
 *   dropped          a call once the buffer is full (counting only)
 * GPU spans on the chosen device (min(N, 20000) calls, median of 5 runs):
 *   gpu_span         pf_trace_gpu_span on events already complete (resolved in
 *                    the call: CUDA event query + 2 elapsed-time reads; CPU
 *                    events are read directly)
 *   gpu_span pending the call on 512 event pairs not complete yet (CUDA only:
 *                    queued behind a 256 MiB memset), and the resolution of
 *                    those spans at flush, per span (flush time with them
 *                    minus flush time without)
 * Writing: pf_tracer_flush of 1,000,000 spans of 250,000 frames through 4
 * stages (every span in a flow) plus 1% counters: ms per million events, MB/s
 * and bytes per event, to $TMPDIR (default /tmp).
 * CUDA only, a calibration check: a device memset between two events,
 * bracketed by host clock reads around record..synchronize; the resolved span
 * must lie inside the bracket (widened by the calibration window).
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_common.h"
#include "core/sys.h"
#include "pixflow/pixflow.h"
#include "prof/trace_impl.h"

#define PROG "bench_trace"
#define REPS 5
#define MT 4

static char g_path[512];

static pf_tracer *new_tracer(size_t max_events, pf_device *gpu)
{
    pf_tracer_params p = pf_tracer_params_default();
    p.path = g_path;
    p.max_events = max_events;
    p.gpu = gpu;
    pf_tracer *t = NULL;
    if (pf_tracer_create(&p, &t) != PF_OK) {
        bench_fail(PROG, "pf_tracer_create");
        return NULL;
    }
    return t;
}

/* Drops the tracer without writing its events (the benchmark does not
 * want them, and formatting millions would slow the run down): destroy
 * writes, so forget the events and point it at /dev/null first. */
static void drop_tracer(pf_tracer **t)
{
    if (!*t) return;
    atomic_store(&(*t)->next, 0);
    free((*t)->path);
    (*t)->path = strdup("/dev/null"); /* a device: pf_output writes it in place */
    pf_tracer_destroy(t);
}

typedef struct span_arg {
    pf_tracer *t;
    int track, n;
    _Atomic int *go;
    double ns_per_call;
} span_arg;

static void *span_loop(void *arg)
{
    span_arg *a = arg;
    while (a->go && !atomic_load(a->go)) {
    }
    int64_t t0 = pf_time_ns();
    for (int i = 0; i < a->n; i++) pf_trace_span(a->t, a->track, "stage", t0 + i, t0 + i + 500, 0, i);
    a->ns_per_call = (double)(pf_time_ns() - t0) / a->n;
    return NULL;
}

/* Median over REPS of ns per pf_trace_span call with `threads` threads;
 * *rate gets the events/s of all threads together (median run). */
static int bench_spans(int n, int threads, double *ns, double *rate)
{
    double per[REPS], wall[REPS];
    for (int r = 0; r < REPS; r++) {
        pf_tracer *t = new_tracer((size_t)n * threads, NULL);
        if (!t) return -1;
        _Atomic int go = 0;
        span_arg a[MT];
        pf_thread th[MT];
        for (int i = 0; i < threads; i++) {
            char name[16];
            snprintf(name, sizeof name, "w%d", i);
            a[i] = (span_arg){t, pf_trace_track(t, name), n, threads > 1 ? &go : NULL, 0};
        }
        int64_t w0 = pf_time_ns();
        if (threads == 1) {
            span_loop(&a[0]);
        } else {
            for (int i = 0; i < threads; i++)
                if (pf_thread_start(&th[i], "bench-w", span_loop, &a[i]) != PF_OK)
                    return bench_fail(PROG, "pf_thread_start");
            atomic_store(&go, 1);
            for (int i = 0; i < threads; i++) pf_thread_join(th[i]);
        }
        wall[r] = (double)(pf_time_ns() - w0);
        double m = 0;
        for (int i = 0; i < threads; i++) m += a[i].ns_per_call;
        per[r] = m / threads;
        pf_tracer_stats st;
        pf_tracer_get_stats(t, &st);
        if (st.events != (uint64_t)n * (uint64_t)threads || st.dropped) {
            fprintf(stderr, PROG ": lost events: %llu kept, %llu dropped\n",
                    (unsigned long long)st.events, (unsigned long long)st.dropped);
            return -1;
        }
        drop_tracer(&t);
    }
    *ns = bench_median(per, REPS);
    *rate = (double)n * threads / (bench_median(wall, REPS) * 1e-9);
    return 0;
}

static int bench_counters(int n, double *ns)
{
    double per[REPS];
    for (int r = 0; r < REPS; r++) {
        pf_tracer *t = new_tracer((size_t)n, NULL);
        if (!t) return -1;
        int64_t t0 = pf_time_ns();
        for (int i = 0; i < n; i++) pf_trace_counter(t, "queue", t0 + i, (double)(i & 15));
        per[r] = (double)(pf_time_ns() - t0) / n;
        drop_tracer(&t);
    }
    *ns = bench_median(per, REPS);
    return 0;
}

static int bench_dropped(int n, double *ns)
{
    double per[REPS];
    for (int r = 0; r < REPS; r++) {
        pf_tracer *t = new_tracer(1, NULL);
        if (!t) return -1;
        int tk = pf_trace_track(t, "s");
        pf_trace_span(t, tk, "fill", 0, 1, -1, -1);
        int64_t t0 = pf_time_ns();
        for (int i = 0; i < n; i++) pf_trace_span(t, tk, "x", t0, t0 + 1, 0, i);
        per[r] = (double)(pf_time_ns() - t0) / n;
        pf_tracer_stats st;
        pf_tracer_get_stats(t, &st);
        if (st.dropped != (uint64_t)n) return -1;
        drop_tracer(&t);
    }
    *ns = bench_median(per, REPS);
    return 0;
}

typedef struct gpu_result {
    double span_ns;            /* resolved in the call */
    double pending_ns;         /* CUDA: events not complete yet */
    double resolve_ns;         /* CUDA: per pending span, at flush */
    int pending_measured;
    double calib_window_ns;
    double start_after_record_us, end_before_sync_us; /* calibration check */
    int calib_ok;              /* 1 ok, 0 failed, -1 not run */
} gpu_result;

static int bench_gpu(pf_device *dev, int n, gpu_result *g)
{
    memset(g, 0, sizeof *g);
    g->calib_ok = -1;
    bool cuda = pf_device_get_type(dev) == PF_DEVICE_CUDA;
    pf_tracer *t = new_tracer((size_t)n * 2 + 16, dev);
    if (!t) return -1;
    int tk = pf_trace_gpu_track(t, "stream");
    pf_stream_params sp = pf_stream_params_default();
    sp.device = dev;
    pf_stream *s = NULL;
    pf_event *e0 = NULL, *e1 = NULL;
    if (pf_stream_create(&sp, &s) != PF_OK || pf_event_create(dev, &e0) != PF_OK ||
        pf_event_create(dev, &e1) != PF_OK)
        return bench_fail(PROG, "stream/event");
    size_t bytes = (size_t)256 << 20;
    pf_allocator *alloc = NULL;
    pf_allocator_params ap = pf_allocator_params_default();
    ap.device = dev;
    ap.name = "bench_trace";
    pf_buffer *buf = NULL;
    if (pf_allocator_create(&ap, &alloc) != PF_OK ||
        pf_allocator_alloc(alloc, bytes, s, &buf) != PF_OK)
        return bench_fail(PROG, "device buffer");

    /* Complete events: the intended use. */
    pf_event_record(e0, s);
    pf_memset_async(s, pf_buffer_data(buf), 0, 4096);
    pf_event_record(e1, s);
    pf_stream_synchronize(s);
    double v[REPS];
    for (int r = 0; r < REPS; r++) {
        int64_t a = pf_time_ns();
        for (int i = 0; i < n / REPS; i++) pf_trace_gpu_span(t, tk, "kernel", e0, e1, 0, i);
        v[r] = (double)(pf_time_ns() - a) / (n / REPS);
    }
    g->span_ns = bench_median(v, REPS);

    if (cuda) {
        /* Pending: K event pairs behind a long memset, traced before they
         * complete, resolved by the flush. */
        enum { K = 512 };
        pf_event *ps[K], *pe[K];
        for (int i = 0; i < K; i++)
            if (pf_event_create(dev, &ps[i]) != PF_OK || pf_event_create(dev, &pe[i]) != PF_OK)
                return bench_fail(PROG, "pf_event_create");
        pf_memset_async(s, pf_buffer_data(buf), 1, bytes); /* keeps the stream busy */
        for (int i = 0; i < K; i++) {
            pf_event_record(ps[i], s);
            pf_memset_async(s, pf_buffer_data(buf), 2, 4096);
            pf_event_record(pe[i], s);
        }
        int64_t a = pf_time_ns();
        for (int i = 0; i < K; i++) pf_trace_gpu_span(t, tk, "pending", ps[i], pe[i], 1, i);
        g->pending_ns = (double)(pf_time_ns() - a) / K;
        pf_tracer_stats st;
        pf_tracer_get_stats(t, &st);
        g->pending_measured = (int)st.gpu_pending;
        pf_stream_synchronize(s);
        /* Resolution cost alone: the same flush with and without them. */
        a = pf_time_ns();
        pf_tracer_flush(t);
        double with = (double)(pf_time_ns() - a);
        a = pf_time_ns();
        pf_tracer_flush(t);
        double without = (double)(pf_time_ns() - a);
        g->resolve_ns = g->pending_measured ? (with - without) / g->pending_measured : 0;
        for (int i = 0; i < K; i++) {
            pf_event_destroy(&ps[i]);
            pf_event_destroy(&pe[i]);
        }

        /* Calibration check. */
        int64_t worst_w = 0;
        for (int i = 0; i < atomic_load(&t->calib_count); i++)
            if (t->calib[i].window_ns > worst_w) worst_w = t->calib[i].window_ns;
        g->calib_window_ns = (double)worst_w;
        pf_stream_synchronize(s);
        int64_t h0 = pf_time_ns();
        pf_event_record(e0, s);
        pf_memset_async(s, pf_buffer_data(buf), 3, bytes);
        pf_event_record(e1, s);
        pf_event_synchronize(e1);
        int64_t h1 = pf_time_ns();
        int64_t r0 = 0, r1 = 0;
        if (pf_trace_resolve_gpu(t, e0, e1, -1, true, &r0, &r1) == PF_OK) {
            g->start_after_record_us = (double)(r0 - h0) / 1e3;
            g->end_before_sync_us = (double)(h1 - r1) / 1e3;
            g->calib_ok = r0 >= h0 - worst_w && r1 <= h1 + worst_w && r1 >= r0;
        } else {
            g->calib_ok = 0;
        }
    }
    pf_buffer_unref(&buf);
    pf_allocator_destroy(&alloc);
    pf_event_destroy(&e0);
    pf_event_destroy(&e1);
    pf_stream_destroy(&s);
    drop_tracer(&t);
    return 0;
}

typedef struct flush_result {
    double ms_per_million, mb_per_s, bytes_per_event;
} flush_result;

static int bench_flush(flush_result *f)
{
    const int frames = 250000, stages = 4;
    const size_t n = (size_t)frames * stages + frames / 25;
    pf_tracer *t = new_tracer(n, NULL);
    if (!t) return -1;
    static const char *names[4] = {"decode", "preprocess", "infer", "encode"};
    int tk[4];
    for (int k = 0; k < stages; k++) tk[k] = pf_trace_track(t, names[k]);
    int64_t base = pf_time_ns();
    for (int fr = 0; fr < frames; fr++) {
        for (int k = 0; k < stages; k++) {
            int64_t s = base + (int64_t)fr * 4000 + k * 1000;
            pf_trace_span(t, tk[k], names[k], s, s + 900, fr & 3, fr);
        }
        if (fr % 25 == 0) pf_trace_counter(t, "queue decode->preprocess", base + fr * 4000, fr & 7);
    }
    double ms[3];
    for (int r = 0; r < 3; r++) {
        int64_t a = pf_time_ns();
        if (pf_tracer_flush(t) != PF_OK) return bench_fail(PROG, "pf_tracer_flush");
        ms[r] = (double)(pf_time_ns() - a) / 1e6;
    }
    struct stat stt;
    double size = stat(g_path, &stt) == 0 ? (double)stt.st_size : 0;
    double med = bench_median(ms, 3);
    f->ms_per_million = med * 1e6 / (double)n;
    f->mb_per_s = size / 1e6 / (med / 1e3);
    f->bytes_per_event = size / (double)n;
    drop_tracer(&t);
    remove(g_path);
    return 0;
}

int main(int argc, char **argv)
{
    bench_args args = {.prog = PROG, .iters = 1000000, .max_iters = 50000000,
                       .iters_help = "recording calls per thread per run"};
    pf_device *dev = NULL;
    int rc = bench_start(argc, argv, &args, &dev);
    if (rc >= 0) return rc;
    const int n = args.iters;
    const char *tmp = getenv("TMPDIR");
    snprintf(g_path, sizeof g_path, "%s/bench_trace_%d.json", tmp && tmp[0] ? tmp : "/tmp",
             (int)getpid());

    double span1 = 0, rate1 = 0, span4 = 0, rate4 = 0, counter = 0, dropped = 0;
    gpu_result g = {0};
    flush_result fl = {0};
    int gn = n < 20000 ? n : 20000;
    if (bench_spans(n, 1, &span1, &rate1) || bench_spans(n, MT, &span4, &rate4) ||
        bench_counters(n, &counter) || bench_dropped(n, &dropped) || bench_gpu(dev, gn, &g) ||
        bench_flush(&fl)) {
        fprintf(stderr, PROG ": failed\n");
        return 1;
    }
    bool cuda = pf_device_get_type(dev) == PF_DEVICE_CUDA;
    const pf_device_props *props = pf_device_props_get(dev);
    if (args.json) {
        printf("{\"bench\":\"trace\",\"device\":\"%s\",\"device_name\":\"", pf_device_spec(dev));
        bench_json_str(props->name);
        printf("\",\"iters\":%d,\"cpus\":%d,\"span_ns_1t\":%.2f,\"span_ns_%dt\":%.2f,"
               "\"events_per_s_1t\":%.0f,\"events_per_s_%dt\":%.0f,\"counter_ns\":%.2f,"
               "\"dropped_ns\":%.2f,\"gpu_span_ns\":%.1f",
               n, pf_cpu_count(), span1, MT, span4, rate1, MT, rate4, counter, dropped, g.span_ns);
        if (cuda)
            printf(",\"gpu_span_pending_ns\":%.1f,\"gpu_resolve_at_flush_ns\":%.1f,"
                   "\"calibration_window_ns\":%.0f,\"calibration_check\":%s,"
                   "\"span_start_after_record_us\":%.2f,\"span_end_before_sync_us\":%.2f",
                   g.pending_ns, g.resolve_ns, g.calib_window_ns, g.calib_ok ? "true" : "false",
                   g.start_after_record_us, g.end_before_sync_us);
        printf(",\"flush_ms_per_million_events\":%.1f,\"flush_mb_per_s\":%.1f,"
               "\"file_bytes_per_event\":%.1f}\n",
               fl.ms_per_million, fl.mb_per_s, fl.bytes_per_event);
    } else {
        printf("bench_trace on %s (%s), %d calls per thread per run, %d CPUs\n\n",
               pf_device_spec(dev), props->name, n, pf_cpu_count());
        printf("%-34s %12s\n", "recording", "ns per call");
        printf("%-34s %12.1f   (%.1f M events/s)\n", "span, 1 thread", span1, rate1 / 1e6);
        printf("%-34s %12.1f   (%.1f M events/s, all threads)\n", "span, 4 threads at once",
               span4, rate4 / 1e6);
        printf("%-34s %12.1f\n", "counter, 1 thread", counter);
        printf("%-34s %12.1f\n", "span with the buffer full (drop)", dropped);
        printf("%-34s %12.1f\n",
               cuda ? "gpu_span, events complete" : "gpu_span, CPU events", g.span_ns);
        if (cuda) {
            printf("%-34s %12.1f   (%d pending)\n", "gpu_span, events not complete",
                   g.pending_ns, g.pending_measured);
            printf("%-34s %12.1f\n", "  its resolution at flush, per span", g.resolve_ns);
        }
        printf("\nflush of 1,000,000 events in flows: %.1f ms per million events, %.0f MB/s, "
               "%.0f bytes per event\n",
               fl.ms_per_million, fl.mb_per_s, fl.bytes_per_event);
        if (cuda)
            printf("calibration check: %s (window %.1f us; the 256 MiB memset span starts %.1f us "
                   "after its record call and ends %.1f us before the host saw it done)\n",
                   g.calib_ok ? "ok" : "FAILED", g.calib_window_ns / 1e3,
                   g.start_after_record_us, g.end_before_sync_us);
    }
    return cuda && g.calib_ok == 0 ? 1 : 0;
}
