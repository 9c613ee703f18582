/* bench_segment_pipeline: the body-segmentation job end to end in the
 * pipeline runtime, in latency and throughput mode.
 *
 *   source.synthetic 1920x1080 rgb24 (device memory on a GPU)
 *     -> ops.preprocess 256x256 NHWC (f16 on a GPU, f32 on the CPU)
 *     -> nn.infer selfie_segmentation.tflite (fp16 on a GPU)
 *     -> ops.mask_post (temporal smoothing, alpha 0.7)
 *     -> ops.composite over a blur (sigma 12), rgb24
 *     -> a sink that waits for the item's device work and records latency
 *
 * Latency mode: batch 1 everywhere and one frame in flight: a gate after the
 * source lets the next frame in when the sink has completed the previous
 * one and stamps it then (as a camera delivering it at that moment), so the
 * figure is the chain's per-frame latency without queueing (PF_MODE_LATENCY
 * with an unpaced source would instead measure how often latest_only drops).
 * Per-frame latency = completion at the sink (after its stream has passed
 * the frame's work) minus that stamp; p50 and p99 over the frames after the
 * first WARMUP (which pay for plans, CUDA graphs and pools). Throughput
 * mode: PF_MODE_THROUGHPUT with batch 64 in front of preprocess and
 * nn.infer, every edge blocking; fps = frames after the warm-up divided by
 * the time from the warm-up's last completion to the last one.
 *
 * With --input FILE.h264 the source is pf_video_reader on the device (NVDEC
 * into device NV12 frames; a frame count of the file per run, no --frames),
 * so decode is part of the chain; the latency stamp is still the gate's
 * (decode of a frame overlaps the previous frame's work).
 *
 * The stage breakdown comes from the pipeline's statistics (per stage:
 * items/s, busy fraction, p50/p99 per process call, mean batch), with the
 * host<->device copies the runtime made (0 when everything stays on the
 * device). With
 * --trace FILE each mode runs twice, without and with a Perfetto trace
 * (written to FILE, FILE.latency.json for the latency run), and the trace
 * file's size and the difference in fps and p99 are reported.
 *
 *   bench_segment_pipeline --device cuda:0 [--frames N] [--input FILE.h264] [--batch N]
 *                          [--trace FILE] [--json]
 *
 * The model is node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite
 * under $PF_SOURCE_DIR, the current directory or its parents, or --model PATH. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench_common.h"
#include "pixflow/io.h"

#define PROG "bench_segment_pipeline"
#define WARMUP 16
#define MAX_STAGES 16

typedef struct options {
    const char *spec;
    const char *model;
    const char *trace;
    const char *input;  /* a video (NVDEC on a GPU) instead of synthetic frames */
    int batch;          /* throughput batch, default 64 */
    int frames;         /* per run; 0 = default per device */
    int json;
} options;

typedef struct stage_row {
    char name[32];
    double fps, busy, p50_us, p99_us, mean_batch;
} stage_row;

typedef struct run_result {
    const char *mode;
    int batch;
    bool traced;
    int64_t frames, completed, dropped, transfers;
    double fps, p50_ms, p99_ms, wall_s;
    long long trace_bytes;
    int nstages;
    stage_row stages[MAX_STAGES];
} run_result;

/* The sink ------------------------------------------------------------------------------ */

typedef struct sink_state {
    pf_histogram *lat;
    int64_t seen;
    int64_t t_first_ns, t_last_ns;  /* completion of frame WARMUP - 1 and of the last */
    bool closed_loop;               /* latency mode: the gate waits for the sink */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int in_flight;
} sink_state;

static pf_status sink_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    sink_state *s = user;
    /* Completion means the device work producing the frame is done. */
    pf_status st = pf_stream_synchronize(pf_stage_stream(ctx));
    int64_t now = pf_time_ns();
    for (int i = 0; i < n; i++) {
        if (s->seen >= WARMUP) pf_histogram_record(s->lat, now - items[i].t_source_ns);
        if (s->seen == WARMUP - 1) s->t_first_ns = now;
        s->seen++;
        pf_item_unref(&items[i]);
    }
    s->t_last_ns = now;
    if (s->closed_loop) {
        pthread_mutex_lock(&s->mu);
        s->in_flight -= n;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
    }
    return st;
}

/* Latency mode: one frame in flight, stamped when it enters. */
static pf_status gate_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    sink_state *s = user;
    pf_status st = PF_OK;
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&s->mu);
        while (s->in_flight > 0) pthread_cond_wait(&s->cv, &s->mu);
        s->in_flight++;
        pthread_mutex_unlock(&s->mu);
        items[i].t_source_ns = pf_time_ns();
        if (st == PF_OK) st = pf_stage_emit(ctx, &items[i]);
        else pf_item_unref(&items[i]);
        memset(&items[i], 0, sizeof items[i]);
    }
    return st;
}

/* A video file as the source: frames as the reader makes them (device NV12
 * with NVDEC). */
static pf_status video_source(void *user, pf_stage_ctx *ctx, pf_item *out)
{
    (void)ctx;
    return pf_video_reader_read(user, &out->frame);
}

static pf_stage *add_video_source(pf_pipeline *p, pf_device *dev, const char *path, int pool,
                                  pf_video_reader **reader)
{
    pf_video_reader_params rp = pf_video_reader_params_default();
    rp.path = path;
    rp.device = dev;
    rp.prefer_device = pf_device_get_type(dev) == PF_DEVICE_CUDA;
    rp.pool_size = pool;
    if (pf_video_reader_create(&rp, reader) != PF_OK) return NULL;
    pf_video_info info;
    pf_video_reader_info(*reader, &info);
    pf_stage_desc d = pf_stage_desc_default();
    d.name = "decode";
    d.source = video_source;
    d.user = *reader;
    if (info.hw_decode) {
        d.device = dev;
        d.produces = PF_MEM_DEVICE;
    }
    pf_stage *s = NULL;
    return pf_pipeline_add_stage(p, &d, &s) == PF_OK ? s : NULL;
}

/* Building and running ------------------------------------------------------------------- */

static pf_stage *add(pf_pipeline *p, const char *type, const char *name, pf_device *dev,
                     const pf_stage_param *kv, int n, int batch)
{
    pf_stage_config cfg = {.name = name, .params = kv, .num_params = n, .device = dev};
    pf_stage_desc d;
    if (pf_stage_builtin(type, &cfg, &d) != PF_OK) return NULL;
    if (batch > 1) {
        d.batch.max_batch = batch;
        d.batch.max_delay_us = 2000;
    }
    pf_stage *s = NULL;
    if (pf_pipeline_add_stage(p, &d, &s) != PF_OK) {
        d.destroy(d.user);
        return NULL;
    }
    return s;
}

static long long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

static int run_once(const options *o, pf_device *dev, bool latency, int frames, int batch,
                    const char *trace, run_result *r)
{
    bool gpu = pf_device_get_type(dev) == PF_DEVICE_CUDA;
    memset(r, 0, sizeof *r);
    r->mode = latency ? "latency" : "throughput";
    r->batch = batch;
    r->traced = trace != NULL;
    r->frames = frames;
    pf_pipeline_params pp = pf_pipeline_params_default();
    pp.name = r->mode;
    pp.mode = latency ? PF_MODE_CUSTOM : PF_MODE_THROUGHPUT; /* latency: see the top */
    pp.trace_path = trace;
    pp.trace_max_events = (size_t)frames * 16 + 65536;
    pf_pipeline *p = NULL;
    if (pf_pipeline_create(&pp, &p) != PF_OK) return bench_fail(PROG, "pf_pipeline_create");

    char count[24], pool[24];
    snprintf(count, sizeof count, "%d", frames);
    /* Frames in flight: two batches plus the queues. */
    snprintf(pool, sizeof pool, "%d", latency ? 16 : 2 * batch + 48);
    pf_stage_param src_kv[] = {{"width", "1920", 0}, {"height", "1080", 0}, {"count", count, 0},
                               {"pool", pool, 0}, {"speed", "8", 0}};
    pf_stage_param pre_kv[] = {{"width", "256", 0}, {"height", "256", 0}, {"layout", "nhwc", 0},
                               {"dtype", gpu ? "f16" : "f32", 0}};
    pf_stage_param inf_kv[] = {{"model", o->model, 0}, {"precision", gpu ? "fp16" : "fp32", 0},
                               {"reserve", "true", 0}};
    pf_stage_param post_kv[] = {{"alpha", "0.7", 0}};
    pf_stage_param comp_kv[] = {{"mask", "item", 0}, {"background", "blur", 0},
                                {"sigma", "12", 0}};
    sink_state sink = {.closed_loop = latency};
    pthread_mutex_init(&sink.mu, NULL);
    pthread_cond_init(&sink.cv, NULL);
    pf_stage *st[7] = {NULL};
    int ns = 0;
    bool ok = pf_histogram_create(&sink.lat) == PF_OK;
    pf_video_reader *reader = NULL;
    if (o->input)
        ok = ok && (st[ns++] = add_video_source(p, dev, o->input, latency ? 8 : 2 * batch + 48,
                                                &reader));
    else
        ok = ok && (st[ns++] = add(p, "source.synthetic", "source", dev, src_kv, 5, 1));
    if (ok && latency) {
        pf_stage_desc d = pf_stage_desc_default();
        d.name = "gate";
        d.process = gate_process;
        d.user = &sink;
        d.device = dev;
        d.accepts = d.produces = gpu ? PF_MEM_DEVICE : PF_MEM_HOST;
        ok = pf_pipeline_add_stage(p, &d, &st[ns++]) == PF_OK;
    }
    ok = ok && (st[ns++] = add(p, "ops.preprocess", "preprocess", dev, pre_kv, 4, batch));
    ok = ok && (st[ns++] = add(p, "nn.infer", "infer", dev, inf_kv, 3, batch));
    ok = ok && (st[ns++] = add(p, "ops.mask_post", "mask_post", dev, post_kv, 1, 1));
    ok = ok && (st[ns++] = add(p, "ops.composite", "composite", dev, comp_kv, 3, 1));
    if (ok) {
        pf_stage_desc d = pf_stage_desc_default();
        d.name = "sink";
        d.process = sink_process;
        d.user = &sink;
        d.device = dev;
        d.accepts = d.produces = gpu ? PF_MEM_DEVICE : PF_MEM_HOST;
        ok = pf_pipeline_add_stage(p, &d, &st[ns++]) == PF_OK;
    }
    int rc = ok ? 0 : bench_fail(PROG, "building the pipeline");
    pf_edge_params e = pf_edge_params_default();
    e.capacity = latency ? 1 : batch + 8;
    for (int i = 0; i + 1 < ns && !rc; i++)
        if (pf_pipeline_connect(p, st[i], st[i + 1], &e) != PF_OK)
            rc = bench_fail(PROG, "pf_pipeline_connect");
    int64_t t0 = pf_time_ns();
    if (!rc && pf_pipeline_start(p) != PF_OK) rc = bench_fail(PROG, "pf_pipeline_start");
    if (!rc && pf_pipeline_wait(p, -1) != PF_OK) rc = bench_fail(PROG, "the pipeline");
    r->wall_s = (double)(pf_time_ns() - t0) / 1e9;
    pf_pipeline_stats ps;
    if (!rc && pf_pipeline_get_stats(p, &ps) == PF_OK) {
        r->dropped = (int64_t)ps.dropped;
        r->transfers = (int64_t)ps.transfers;
        for (int i = 0; i < ps.num_stages && r->nstages < MAX_STAGES; i++) {
            const pf_stage_stats *s = &ps.stages[i];
            stage_row *row = &r->stages[r->nstages++];
            snprintf(row->name, sizeof row->name, "%s", s->name);
            row->fps = s->fps;
            row->busy = s->busy_fraction;
            row->p50_us = s->latency_p50_us;
            row->p99_us = s->latency_p99_us;
            row->mean_batch = s->batches ? (double)s->items_in / (double)s->batches : 0;
        }
    }
    r->completed = sink.seen;
    int64_t timed = sink.seen - WARMUP;
    if (timed > 0 && sink.t_last_ns > sink.t_first_ns)
        r->fps = (double)timed / ((double)(sink.t_last_ns - sink.t_first_ns) / 1e9);
    r->p50_ms = pf_histogram_quantile(sink.lat, 0.50) / 1e6;
    r->p99_ms = pf_histogram_quantile(sink.lat, 0.99) / 1e6;
    pf_pipeline_destroy(&p); /* writes the trace */
    pf_video_reader_destroy(&reader);
    if (o->input) r->frames = sink.seen;
    pf_histogram_destroy(&sink.lat);
    pthread_mutex_destroy(&sink.mu);
    pthread_cond_destroy(&sink.cv);
    if (!rc && trace) r->trace_bytes = file_size(trace);
    if (!rc && timed <= 0) {
        fprintf(stderr, "%s: %s: only %lld frames completed (need more than %d warm-up frames; "
                "raise --frames)\n", PROG, r->mode, (long long)sink.seen, WARMUP);
        rc = 1;
    }
    return rc;
}

/* Output ------------------------------------------------------------------------------------ */

static void print_table(const run_result *rs, int n)
{
    printf("%-11s %5s %6s %6s %7s %9s %8s %8s %9s  %s\n", "mode", "batch", "frames", "done",
           "dropped", "fps", "p50 ms", "p99 ms", "transfers", "trace");
    for (int i = 0; i < n; i++) {
        const run_result *r = &rs[i];
        char tb[32] = "off";
        if (r->traced) snprintf(tb, sizeof tb, "%lld bytes", r->trace_bytes);
        printf("%-11s %5d %6lld %6lld %7lld %9.1f %8.3f %8.3f %9lld  %s\n", r->mode, r->batch,
               (long long)r->frames, (long long)r->completed, (long long)r->dropped, r->fps,
               r->p50_ms, r->p99_ms, (long long)r->transfers, tb);
    }
    /* With a video input the decoders run ahead while the executor plans
     * (reserve), so fps after the warm-up includes frames decoded earlier:
     * the whole run's rate is the honest figure for decode + chain. */
    for (int i = 0; i < n; i++)
        if (rs[i].wall_s > 0)
            printf("%s%s: %lld frames in %.3f s including start-up = %.1f fps\n",
                   i ? "" : "\n", rs[i].mode, (long long)rs[i].completed, rs[i].wall_s,
                   (double)rs[i].completed / rs[i].wall_s);
    for (int i = 0; i < n; i++) {
        const run_result *r = &rs[i];
        if (r->traced) continue;
        printf("\nstage breakdown, %s (batch %d): busy = time in process / running time\n",
               r->mode, r->batch);
        printf("  %-12s %10s %7s %11s %11s %6s\n", "stage", "items/s", "busy", "p50 us/call",
               "p99 us/call", "batch");
        for (int k = 0; k < r->nstages; k++) {
            const stage_row *s = &r->stages[k];
            printf("  %-12s %10.1f %6.1f%% %11.1f %11.1f %6.2f\n", s->name, s->fps,
                   100 * s->busy, s->p50_us, s->p99_us, s->mean_batch);
        }
    }
    for (int i = 0; i + 1 < n; i++) {
        if (rs[i].traced || !rs[i + 1].traced) continue;
        const run_result *a = &rs[i], *b = &rs[i + 1];
        printf("\ntracing, %s: %lld bytes (%.0f bytes/frame); fps %.1f -> %.1f (%+.1f%%), "
               "p99 %.3f -> %.3f ms\n",
               a->mode, b->trace_bytes,
               b->completed ? (double)b->trace_bytes / (double)b->completed : 0.0, a->fps, b->fps,
               a->fps > 0 ? 100 * (b->fps - a->fps) / a->fps : 0.0, a->p99_ms, b->p99_ms);
    }
}

static void print_json(const char *device, const options *o, const run_result *rs, int n)
{
    printf("{\"bench\": \"segment_pipeline\", \"device\": \"");
    bench_json_str(device);
    printf("\", \"model\": \"");
    bench_json_str(o->model);
    printf("\", \"source\": \"");
    bench_json_str(o->input ? o->input : "1920x1080 rgb24 synthetic");
    printf("\", \"warmup_frames\": %d, \"runs\": [", WARMUP);
    for (int i = 0; i < n; i++) {
        const run_result *r = &rs[i];
        printf("%s\n  {\"mode\": \"%s\", \"batch\": %d, \"trace\": %s, \"frames\": %lld, "
               "\"completed\": %lld, \"dropped\": %lld, \"fps\": %.2f, \"p50_ms\": %.4f, "
               "\"p99_ms\": %.4f, \"wall_s\": %.3f, \"trace_bytes\": %lld, \"transfers\": %lld, "
               "\"stages\": [",
               i ? "," : "", r->mode, r->batch, r->traced ? "true" : "false",
               (long long)r->frames, (long long)r->completed, (long long)r->dropped, r->fps,
               r->p50_ms, r->p99_ms, r->wall_s, r->traced ? r->trace_bytes : 0,
               (long long)r->transfers);
        for (int k = 0; k < r->nstages; k++) {
            const stage_row *s = &r->stages[k];
            printf("%s{\"name\": \"", k ? ", " : "");
            bench_json_str(s->name);
            printf("\", \"items_per_s\": %.2f, \"busy\": %.4f, \"p50_us\": %.1f, "
                   "\"p99_us\": %.1f, \"mean_batch\": %.2f}",
                   s->fps, s->busy, s->p50_us, s->p99_us, s->mean_batch);
        }
        printf("]}");
    }
    printf("\n]}\n");
}

/* Main -------------------------------------------------------------------------------------- */

static const char *find_model(void)
{
    static char path[1024];
    const char *rel = "node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite";
    const char *roots[] = {getenv("PF_SOURCE_DIR"), ".", "..", "../..", "../../.."};
    for (int i = 0; i < 5; i++) {
        if (!roots[i]) continue;
        snprintf(path, sizeof path, "%s/%s", roots[i], rel);
        if (file_size(path) > 0) return path;
    }
    return NULL;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: %s [--device SPEC] [--frames N | --input FILE] [--batch N] [--model PATH]\n"
               "       [--trace FILE] [--json]\n"
               "  --device SPEC  auto, cpu, cuda, cuda:N (default: $PIXFLOW_DEVICE or auto)\n"
               "  --frames N     frames per run (default 3000 on a GPU, 96 on the CPU; the\n"
               "                 first %d of each run are warm-up and not timed)\n"
               "  --input FILE   decode this video instead (NVDEC for .h264/.hevc on a GPU)\n"
               "  --batch N      throughput-mode batch (default 64)\n"
               "  --model PATH   the selfie model (default: found under node_modules/)\n"
               "  --trace FILE   also run each mode with a trace, report its size and cost\n"
               "  --json         one JSON object instead of the tables\n",
            PROG, WARMUP);
}

static int parse(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (!strcmp(a, "--device") && has_value) o->spec = argv[++i];
        else if (!strcmp(a, "--model") && has_value) o->model = argv[++i];
        else if (!strcmp(a, "--trace") && has_value) o->trace = argv[++i];
        else if (!strcmp(a, "--input") && has_value) o->input = argv[++i];
        else if (!strcmp(a, "--batch") && has_value) {
            char *end = NULL;
            long v = strtol(argv[++i], &end, 10);
            if (!end || *end || v < 1 || v > 256) {
                fprintf(stderr, "%s: --batch '%s': expected 1..256\n", PROG, argv[i]);
                return 2;
            }
            o->batch = (int)v;
        }
        else if (!strcmp(a, "--json")) o->json = 1;
        else if (!strcmp(a, "--frames") && has_value) {
            char *end = NULL;
            long v = strtol(argv[++i], &end, 10);
            if (!end || *end || v <= WARMUP || v > 10000000) {
                fprintf(stderr, "%s: --frames '%s': expected %d..10000000\n", PROG, argv[i],
                        WARMUP + 1);
                return 2;
            }
            o->frames = (int)v;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "%s: unknown argument '%s'\n", PROG, a);
            usage(stderr);
            return 2;
        }
    }
    return -1;
}

int main(int argc, char **argv)
{
    options o;
    int rc = parse(argc, argv, &o);
    if (rc >= 0) return rc;
    rc = 0;
    if (!o.model) o.model = find_model();
    if (!o.model) {
        fprintf(stderr, "%s: selfie_segmentation.tflite not found under node_modules/@mediapipe "
                "(run npm ci, set PF_SOURCE_DIR or give --model)\n", PROG);
        return 1;
    }
    pf_device *dev = NULL;
    if (pf_device_select(o.spec, &dev) != PF_OK) return bench_fail(PROG, "device");
    bool gpu = pf_device_get_type(dev) == PF_DEVICE_CUDA;
    int frames = o.frames ? o.frames : gpu ? 3000 : 96;
    char device[160];
    snprintf(device, sizeof device, "%s (%s)", pf_device_spec(dev),
             pf_device_props_get(dev)->name);
    if (!o.json)
        printf("%s: %s, model %s, %s, %d per run (%d warm-up)\n\n", PROG, device, o.model,
               o.input ? o.input : "1920x1080 rgb24 synthetic frames", frames, WARMUP);
    char latency_trace[1100];
    if (o.trace) snprintf(latency_trace, sizeof latency_trace, "%s.latency.json", o.trace);
    run_result rs[4];
    int n = 0;
    for (int mode = 0; mode < 2 && !rc; mode++) {
        bool latency = mode == 0;
        int batch = latency ? 1 : o.batch ? o.batch : 64;
        for (int traced = 0; traced < (o.trace ? 2 : 1) && !rc; traced++) {
            const char *tp = traced ? (latency ? latency_trace : o.trace) : NULL;
            rc = run_once(&o, dev, latency, frames, batch, tp, &rs[n]);
            if (!rc) n++;
        }
    }
    if (rc) return rc;
    if (o.json)
        print_json(device, &o, rs, n);
    else
        print_table(rs, n);
    return 0;
}
