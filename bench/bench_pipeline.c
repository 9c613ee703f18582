/* bench_pipeline: what the runtime itself costs per item, without and with
 * tracing.
 *
 * A source and a chain of 1, 2 and 4 empty stages (each emits what it gets;
 * the last one drops it), joined by BLOCK edges of capacity 64. Items are
 * views of one small host buffer, so the figure is the runtime's own work:
 * the source call, one push and one pop per edge, one process call per
 * stage, statistics. Reported per item and per hop (edge + stage), the
 * median of 5 runs; the target is < 5 us per hop.
 *
 * Tracing: every chain also runs with params.trace_path set (runs alternate
 * off/on so drift on a shared machine hits both alike). The per-item figure
 * is the time from pf_pipeline_start() returning to pf_pipeline_wait()
 * returning over the items; what tracing costs once is reported apart: the
 * start (the tracer's buffer, trace_max_events x 64 bytes, allocated and
 * touched there; sized here to the run: (stages + 1) spans per item plus
 * room for the queue counters) and the file written at destroy. Reported:
 * us/item off and on (wall clock) and their difference, the process's CPU
 * time per item (all threads, from getrusage) off and on, their difference
 * per item and per span (on a loaded or small machine the wall figure
 * mostly measures scheduling; CPU time is the steadier measure of what the
 * recording costs), the trace file's bytes and events per item, and
 * whether any event was dropped.
 *
 * Fan-in: the same items from 2 and 8 sources (each its own stream) into
 * one empty stage, with batching off and (8 sources) as a muxer (batch 8,
 * no delay), next to 1 source into one stage (the 1-stage chain): wall and
 * CPU time per item, items/s through the
 * consumer, and per item what the fan-in adds (the consumer scans 8 edges,
 * every producer signals one notifier). Median of 5 runs, untraced.
 *
 * Every stage is a thread: with fewer cores than stages + 1 the threads take
 * turns and hand-offs include context switches, so run it on a machine with
 * enough cores for the numbers that matter. --device is accepted for the
 * common command line; the stages are CPU stages. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench_common.h"

#define RUNS 5

typedef struct src_state {
    pf_buffer *buf;
    int64_t n, made;
} src_state;

static pf_status source(void *user, pf_stage_ctx *ctx, pf_item *out)
{
    (void)ctx;
    src_state *s = user;
    if (s->made == s->n) return PF_EOF;
    int64_t shape[1] = {64};
    pf_status st = pf_tensor_wrap(&out->tensor, s->buf, 0, PF_DTYPE_U8, 1, shape, NULL,
                                  PF_LAYOUT_NONE);
    if (st == PF_OK) s->made++;
    return st;
}

static pf_status pass(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    (void)user;
    for (int i = 0; i < n; i++) {
        pf_status st = pf_stage_emit(ctx, &items[i]);
        if (st != PF_OK) {
            for (int j = i + 1; j < n; j++) pf_item_unref(&items[j]);
            return st;
        }
    }
    return PF_OK;
}

static pf_status drop(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    (void)user;
    (void)ctx;
    for (int i = 0; i < n; i++) pf_item_unref(&items[i]);
    return PF_OK;
}

typedef struct run_result {
    double run_s;       /* start returned -> wait returned */
    double cpu_s;       /* CPU time of the process (all threads) over run_s */
    double start_s;     /* pf_pipeline_start() */
    double destroy_s;   /* pf_pipeline_destroy(): writes the trace */
    long long bytes;    /* trace file size */
    long long events;   /* written_events from the trace's metadata */
    long long dropped;  /* dropped_events */
} run_result;

static double cpu_seconds(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* A number after "key": in the trace file's metadata (at its end); -1 if absent. */
static long long trace_meta(const char *path, const char *key)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    char tail[4096];
    long long v = -1;
    if (fseek(f, -(long)sizeof tail + 1, SEEK_END) != 0) rewind(f);
    size_t n = fread(tail, 1, sizeof tail - 1, f);
    tail[n] = 0;
    fclose(f);
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *at = strstr(tail, pat);
    if (at) v = strtoll(at + strlen(pat), NULL, 10);
    return v;
}

/* One untraced run of n items from `nsrc` sources (n / nsrc each) into one
 * empty stage batching `batch`; returns the run's seconds, < 0 on failure;
 * *cpu_s the process's CPU time over the run. */
static double run_fanin(int nsrc, int64_t n, int batch, pf_buffer *buf, double *cpu_s)
{
    pf_pipeline_params pp = pf_pipeline_params_default();
    pp.name = "fanin";
    pf_pipeline *p = NULL;
    if (pf_pipeline_create(&pp, &p) != PF_OK) return -1;
    src_state src[8];
    pf_stage_desc d = pf_stage_desc_default();
    d.name = "mux";
    d.process = drop;
    d.batch.max_batch = batch;
    pf_stage *mux = NULL, *s = NULL;
    int rc = pf_pipeline_add_stage(p, &d, &mux) == PF_OK ? 0 : -1;
    pf_edge_params ep = pf_edge_params_default();
    ep.capacity = 64;
    for (int k = 0; k < nsrc && rc == 0; k++) {
        char name[16];
        snprintf(name, sizeof name, "src%d", k);
        src[k] = (src_state){buf, n / nsrc + (k < n % nsrc), 0};
        d = pf_stage_desc_default();
        d.name = name;
        d.source = source;
        d.user = &src[k];
        if (pf_pipeline_add_stage(p, &d, &s) != PF_OK || pf_pipeline_connect(p, s, mux, &ep) != PF_OK)
            rc = -1;
    }
    int64_t t0 = 0, t1 = 0;
    if (rc == 0) {
        double c0 = cpu_seconds();
        t0 = pf_time_ns();
        if (pf_pipeline_start(p) != PF_OK || pf_pipeline_wait(p, PF_WAIT_FOREVER) != PF_OK) rc = -1;
        t1 = pf_time_ns();
        *cpu_s = cpu_seconds() - c0;
    }
    pf_pipeline_destroy(&p);
    return rc == 0 ? (t1 - t0) / 1e9 : -1;
}

/* One run of n items through `stages` empty stages; traced to trace_path
 * when it is not NULL. */
static int run_chain(int stages, int64_t n, pf_buffer *buf, const char *trace_path, run_result *r)
{
    memset(r, 0, sizeof *r);
    pf_pipeline_params pp = pf_pipeline_params_default();
    pp.name = "bench";
    pp.trace_path = trace_path;
    if (trace_path) {
        /* every span of the run, plus the queue counters: one sample per
         * edge each 1 ms when the depth changed (65536: a minute on 1 edge) */
        int64_t ev = (int64_t)(stages + 1) * n + 65536;
        pp.trace_max_events = ev < ((int64_t)1 << 26) ? (size_t)ev : (size_t)1 << 26;
    }
    pf_pipeline *p = NULL;
    if (pf_pipeline_create(&pp, &p) != PF_OK) return -1;
    src_state src = {buf, n, 0};
    pf_stage_desc d = pf_stage_desc_default();
    d.name = "src";
    d.source = source;
    d.user = &src;
    pf_stage *prev = NULL, *s = NULL;
    int rc = 0;
    if (pf_pipeline_add_stage(p, &d, &prev) != PF_OK) rc = -1;
    pf_edge_params ep = pf_edge_params_default();
    ep.capacity = 64;
    ep.policy = PF_EDGE_BLOCK;
    for (int i = 0; i < stages && rc == 0; i++) {
        char name[16];
        snprintf(name, sizeof name, "s%d", i);
        d = pf_stage_desc_default();
        d.name = name;
        d.process = i == stages - 1 ? drop : pass;
        if (pf_pipeline_add_stage(p, &d, &s) != PF_OK || pf_pipeline_connect(p, prev, s, &ep) != PF_OK)
            rc = -1;
        prev = s;
    }
    int64_t t0 = pf_time_ns();
    if (rc == 0 && pf_pipeline_start(p) != PF_OK) rc = -1;
    int64_t t1 = pf_time_ns();
    double c1 = cpu_seconds();
    if (rc == 0 && pf_pipeline_wait(p, PF_WAIT_FOREVER) != PF_OK) rc = -1;
    int64_t t2 = pf_time_ns();
    r->cpu_s = cpu_seconds() - c1;
    pf_pipeline_destroy(&p);
    int64_t t3 = pf_time_ns();
    r->start_s = (t1 - t0) / 1e9;
    r->run_s = (t2 - t1) / 1e9;
    r->destroy_s = (t3 - t2) / 1e9;
    if (rc == 0 && trace_path) {
        FILE *f = fopen(trace_path, "rb");
        if (f) {
            fseek(f, 0, SEEK_END);
            r->bytes = ftell(f);
            fclose(f);
        }
        r->events = trace_meta(trace_path, "written_events");
        r->dropped = trace_meta(trace_path, "dropped_events");
        if (r->bytes <= 0 || r->events < 0) {
            fprintf(stderr, "bench_pipeline: trace %s was not written\n", trace_path);
            rc = -1;
        }
    }
    return rc;
}

int main(int argc, char **argv)
{
    bench_args a = {.prog = "bench_pipeline",
                    .iters_help = "items per run",
                    .iters = 200000,
                    .max_iters = 100000000};
    pf_device *dev = NULL;
    int rc = bench_start(argc, argv, &a, &dev);
    if (rc >= 0) return rc;
    pf_buffer *buf = NULL;
    if (pf_buffer_alloc_host(64, &buf) != PF_OK) return bench_fail(a.prog, "buffer");
    char path[] = "/tmp/bench_pipeline_trace_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        pf_buffer_unref(&buf);
        fprintf(stderr, "%s: cannot make a temporary trace file in /tmp\n", a.prog);
        return 1;
    }
    close(fd);
    enum { NC = 3 };
    const int chains[NC] = {1, 2, 4};
    /* per item: wall and CPU time (all threads), tracing off / on */
    double off_us[NC], on_us[NC], cpu_off[NC], cpu_on[NC];
    double start_ms[NC], start_off_ms[NC], write_ms[NC], bytes_item[NC], events_item[NC];
    long long dropped[NC];
    for (int c = 0; c < NC; c++) {
        double w0[RUNS], w1[RUNS], c0[RUNS], c1[RUNS], st0[RUNS], st1[RUNS], wr[RUNS];
        run_result r;
        dropped[c] = 0;
        for (int k = 0; k < RUNS; k++) {
            if (run_chain(chains[c], a.iters, buf, NULL, &r) != 0) goto fail;
            w0[k] = r.run_s;
            c0[k] = r.cpu_s;
            st0[k] = r.start_s;
            if (run_chain(chains[c], a.iters, buf, path, &r) != 0) goto fail;
            w1[k] = r.run_s;
            c1[k] = r.cpu_s;
            st1[k] = r.start_s;
            wr[k] = r.destroy_s;
            if (r.dropped > dropped[c]) dropped[c] = r.dropped;
        }
        const double per_item = 1e6 / a.iters;
        off_us[c] = bench_median(w0, RUNS) * per_item;
        on_us[c] = bench_median(w1, RUNS) * per_item;
        cpu_off[c] = bench_median(c0, RUNS) * per_item;
        cpu_on[c] = bench_median(c1, RUNS) * per_item;
        start_off_ms[c] = bench_median(st0, RUNS) * 1e3;
        start_ms[c] = bench_median(st1, RUNS) * 1e3;
        write_ms[c] = bench_median(wr, RUNS) * 1e3;
        /* the last run's file: runs differ only in their counter samples */
        bytes_item[c] = (double)r.bytes / a.iters;
        events_item[c] = (double)r.events / a.iters;
    }
    /* fan-in: 1 source (baseline), 2 and 8 sources, 8 sources batched by 8 */
    enum { NF = 4 };
    const int fan_src[NF] = {1, 2, 8, 8}, fan_batch[NF] = {1, 1, 1, 8};
    double fan_us[NF], fan_cpu[NF];
    for (int c = 0; c < NF; c++) {
        double w[RUNS], cw[RUNS];
        for (int k = 0; k < RUNS; k++)
            if ((w[k] = run_fanin(fan_src[c], a.iters, fan_batch[c], buf, &cw[k])) < 0) goto fail;
        fan_us[c] = bench_median(w, RUNS) * 1e6 / a.iters;
        fan_cpu[c] = bench_median(cw, RUNS) * 1e6 / a.iters;
    }
    pf_buffer_unref(&buf);
    remove(path);
    int cores = pf_cpu_count();
    if (a.json) {
        printf("{\"bench\":\"pipeline\",\"items\":%d,\"runs\":%d,\"cores\":%d,\"edge_capacity\":64,"
               "\"target_us_per_hop\":5,\"chains\":[",
               a.iters, RUNS, cores);
        for (int c = 0; c < NC; c++)
            printf("%s{\"stages\":%d,\"us_per_item\":%.4f,\"us_per_hop\":%.4f,\"items_per_s\":%.0f,"
                   "\"cpu_us_per_item\":%.4f,"
                   "\"trace\":{\"us_per_item\":%.4f,\"overhead_us_per_item\":%.4f,"
                   "\"cpu_us_per_item\":%.4f,\"cpu_overhead_us_per_item\":%.4f,"
                   "\"cpu_overhead_us_per_span\":%.4f,\"spans_per_item\":%d,"
                   "\"bytes_per_item\":%.1f,\"events_per_item\":%.3f,\"dropped_events\":%lld,"
                   "\"start_ms\":%.2f,\"start_ms_untraced\":%.2f,\"write_ms\":%.2f}}",
                   c ? "," : "", chains[c], off_us[c], off_us[c] / chains[c], 1e6 / off_us[c],
                   cpu_off[c], on_us[c], on_us[c] - off_us[c], cpu_on[c], cpu_on[c] - cpu_off[c],
                   (cpu_on[c] - cpu_off[c]) / (chains[c] + 1), chains[c] + 1, bytes_item[c],
                   events_item[c], dropped[c], start_ms[c], start_off_ms[c], write_ms[c]);
        printf("],\"fanin\":[");
        for (int c = 0; c < NF; c++)
            printf("%s{\"sources\":%d,\"batch\":%d,\"us_per_item\":%.4f,\"items_per_s\":%.0f,"
                   "\"cpu_us_per_item\":%.4f}",
                   c ? "," : "", fan_src[c], fan_batch[c], fan_us[c], 1e6 / fan_us[c], fan_cpu[c]);
        printf("]}\n");
    } else {
        printf("pipeline runtime overhead: empty stages, BLOCK edges of capacity 64, %d items, "
               "median of %d runs, %d cores\n",
               a.iters, RUNS, cores);
        printf("%8s %14s %14s %14s %14s\n", "stages", "us/item", "us/hop", "items/s",
               "CPU us/item");
        for (int c = 0; c < NC; c++)
            printf("%8d %14.3f %14.3f %14.0f %14.3f%s\n", chains[c], off_us[c],
                   off_us[c] / chains[c], 1e6 / off_us[c], cpu_off[c],
                   off_us[c] / chains[c] < 5 ? "" : "  (over the 5 us target)");
        printf("\ntracing on: a span per item per stage (stages + 1 per item), flows, queue "
               "counters; runs alternate off/on\n");
        printf("%8s %9s %9s %9s %9s %9s %9s %9s %10s %9s %9s %9s\n", "", "wall", "wall",
               "wall", "CPU", "CPU", "CPU", "CPU", "file", "events", "start", "write");
        printf("%8s %9s %9s %9s %9s %9s %9s %9s %10s %9s %9s %9s\n", "stages", "off us/it",
               "on us/it", "+us/it", "off us/it", "on us/it", "+us/it", "+us/span", "B/item",
               "/item", "ms", "ms");
        for (int c = 0; c < NC; c++)
            printf("%8d %9.3f %9.3f %+9.3f %9.3f %9.3f %+9.3f %+9.3f %10.1f %9.2f %9.1f %9.1f%s\n",
                   chains[c], off_us[c], on_us[c], on_us[c] - off_us[c], cpu_off[c], cpu_on[c],
                   cpu_on[c] - cpu_off[c], (cpu_on[c] - cpu_off[c]) / (chains[c] + 1),
                   bytes_item[c], events_item[c], start_ms[c], write_ms[c],
                   dropped[c] ? "  (events dropped)" : "");
        printf("CPU: process CPU time (all threads) over the run, per item. start: "
               "pf_pipeline_start with tracing (untraced %.1f ms): mostly the trace buffer, "
               "sized to the run. write: the file, at destroy\n",
               start_off_ms[NC - 1]);
        printf("\nfan-in: N sources (own streams, edges of capacity 64) into one empty stage, "
               "untraced\n");
        printf("%8s %8s %14s %14s %14s %14s\n", "sources", "batch", "us/item", "items/s",
               "vs 1 source", "CPU us/item");
        for (int c = 0; c < NF; c++)
            printf("%8d %8d %14.3f %14.0f %13.2fx %14.3f\n", fan_src[c], fan_batch[c], fan_us[c],
                   1e6 / fan_us[c], fan_us[0] / fan_us[c], fan_cpu[c]);
        if (cores < 10)
            printf("note: %d cores for up to 9 threads: hand-offs include context switches\n",
                   cores);
    }
    return 0;
fail:
    pf_buffer_unref(&buf);
    remove(path);
    return bench_fail(a.prog, "pipeline run");
}
