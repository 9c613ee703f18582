/* `pixflow bench segment|reproject INPUT...`: a whole job, measured the way
 * trtexec measures an engine, through the library's job API
 * (pf_segment_start / pf_reproject_start) with its per-frame callback.
 *
 * What is measured (times from pf_time_ns, the library's clock):
 *   t_call      just before the start call;
 *   per frame   when it was read and when it was complete (on_frame).
 * Figures:
 *   first frame       first completion - t_call; and the job's own
 *                     first_frame_ms (segment: from its pipeline's start, that
 *                     is after the model was loaded and the stages built:
 *                     issue 18's warm-start goal, <= 200 ms on the GPU with a
 *                     warm plan cache);
 *   whole-run fps     the job's own figure (what `pixflow segment` prints:
 *                     frames / time from t_run to the end);
 *   steady fps        frames after the warm-up / the time from the last
 *                     warm-up frame's completion to the last completion;
 *                     `throughput` is this figure;
 *   latency           read -> complete per frame after the warm-up
 *                     (p50/p90/p99/max, nearest rank);
 *   stages            busy shares (segment: the pipeline's stages; reproject:
 *                     its stages' busy time over elapsed x threads);
 *   GPU time          reproject on CUDA: upload, kernel, download per image
 *                     (events); segment: the job does not report it (null).
 * Outputs go nowhere (segment: -o null; reproject writes its views into a
 * temporary directory removed afterwards: its encode and write are part of
 * the job). --no-cache sets PIXFLOW_CACHE_DIR=off for this process: every
 * conv choice is timed again (the cold start). */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_plot.h"
#include "cli.h"
#include "job_ui.h"
#include "pixflow/pixflow.h"
#include "reproject_opts.h"

static const cli_option options[] = {
    {"device", "SPEC", "auto, cpu, cuda, cuda:N (default: $PIXFLOW_DEVICE or auto)"},
    {"frames", "N", "stop after N frames (segment: the first N; reproject: cancels after N)"},
    {"warmup", "N", "frames left out of the steady-state figures (default: 2 x batch, "
                    "at most a quarter of the frames; at most half)"},
    {"latency", NULL, "latency mode (segment: batch 1, one frame in flight; reproject: one "
                      "frame on the device at a time)"},
    {"batch", "N", "segment: frames per inference batch; reproject: frames in flight"},
    {"model", "MODEL", "segment: selfie (default), landscape or a model file"},
    {"views", "N[:FOV[:WxH]]", "reproject: N views around the horizon (default 8:90:1920x1080)"},
    {"no-cache", NULL, "PIXFLOW_CACHE_DIR=off: plan without the plan cache (a cold start)"},
    {"plot", "DIR", "write latency.svg and histogram.svg into DIR"},
    {"json", NULL, "print one JSON object"},
    {"help", NULL, "show this help"},
    {NULL, NULL, NULL},
};

static void usage(FILE *f, const char *sub)
{
    fprintf(f,
            "usage: pixflow bench %s INPUT... [--device SPEC] [--frames N] [--warmup N]\n"
            "                       [--latency | --batch N] [--no-cache] [--plot DIR] [--json]\n\n"
            "Runs the %s job on INPUT (outputs discarded) and reports throughput (steady\n"
            "state after the warm-up), the whole run's fps and their ratio, latency per frame\n"
            "(read -> complete: p50/p90/p99/max), the time to the first frame (from the\n"
            "start and from the model loaded), GPU time where the job measures it, and the\n"
            "stages' busy shares.\n\noptions:\n",
            sub, sub);
    cli_print_options(f, options);
}

/* Frames as the callback reports them ------------------------------------------------------ */

typedef struct collector {
    pthread_mutex_t lock;
    pf_job_frame *f;
    size_t n, cap;
    bool nomem;
    int64_t cancel_at; /* > 0: cancel the job after this many frames */
    pf_job *job;       /* set once started (reproject's --frames) */
} collector;

/* The callbacks' user: the cli_job_ui first (cli_job_message reads it as
 * one), the collector behind it. */
typedef struct ui_and_frames {
    cli_job_ui ui;
    collector *c;
} ui_and_frames;

static void on_frame(void *user, const pf_job_frame *fr)
{
    collector *c = ((ui_and_frames *)user)->c;
    pthread_mutex_lock(&c->lock);
    if (c->n == c->cap && !c->nomem) {
        size_t nc = c->cap ? 2 * c->cap : 4096;
        pf_job_frame *nf = realloc(c->f, nc * sizeof *nf);
        if (nf) {
            c->f = nf;
            c->cap = nc;
        } else {
            c->nomem = true;
        }
    }
    if (c->n < c->cap) c->f[c->n++] = *fr;
    bool stop = c->cancel_at > 0 && (int64_t)c->n >= c->cancel_at;
    pf_job *job = c->job;
    pthread_mutex_unlock(&c->lock);
    if (stop && job) pf_job_cancel_async(job);
}

static int cmp_done(const void *a, const void *b)
{
    const pf_job_frame *x = a, *y = b;
    return (x->t_done_ns > y->t_done_ns) - (x->t_done_ns < y->t_done_ns);
}

/* Figures -------------------------------------------------------------------------------------- */

typedef struct figures {
    size_t frames;
    size_t warmup;
    double first_ms, first_after_model_ms;   /* NAN: unknown */
    double whole_fps, wall_fps, steady_fps, ratio;
    double p50, p90, p99, max;
    double *lat;                              /* every frame's latency, ms, in done order */
} figures;

static void compute(collector *c, int64_t t_call, double after_model_ms, double job_fps, long warmup,
                    int batch, figures *g)
{
    memset(g, 0, sizeof *g);
    g->first_ms = g->first_after_model_ms = g->steady_fps = g->ratio = NAN;
    g->p50 = g->p90 = g->p99 = g->max = g->wall_fps = NAN;
    g->whole_fps = job_fps;
    size_t n = c->n;
    g->frames = n;
    if (!n) return;
    qsort(c->f, n, sizeof *c->f, cmp_done);
    /* Default: two batches, at most a quarter of the run; given: at most
     * half. Either way two frames stay for the steady state. */
    size_t w = warmup >= 0 ? (size_t)warmup : (size_t)(2 * (batch > 0 ? batch : 1));
    if (w > (warmup >= 0 ? n / 2 : n / 4)) w = warmup >= 0 ? n / 2 : n / 4;
    /* Whole batches: frames complete in bursts of a batch. */
    if (warmup < 0 && batch > 1 && w >= (size_t)batch) w -= w % (size_t)batch;
    if (n >= 2 && n - w < 2) w = n - 2;
    g->warmup = w;
    int64_t first = c->f[0].t_done_ns, last = c->f[n - 1].t_done_ns;
    g->first_ms = (double)(first - t_call) / 1e6;
    if (after_model_ms >= 0) g->first_after_model_ms = after_model_ms;
    if (last > t_call) g->wall_fps = (double)n / ((double)(last - t_call) / 1e9);
    /* From the last warm-up frame's completion (batches complete together:
     * counting from the first frame after it would drop a batch's time). */
    int64_t from = w ? c->f[w - 1].t_done_ns : c->f[0].t_done_ns;
    size_t counted = w ? n - w : n - 1;
    if (counted >= 1 && last > from)
        g->steady_fps = (double)counted / ((double)(last - from) / 1e9);
    if (g->steady_fps > 0 && job_fps > 0) g->ratio = job_fps / g->steady_fps;
    g->lat = malloc(n * sizeof *g->lat);
    double *sorted = malloc(n * sizeof *sorted);
    if (!g->lat || !sorted) {
        free(sorted);
        return;
    }
    for (size_t i = 0; i < n; i++) g->lat[i] = (double)(c->f[i].t_done_ns - c->f[i].t_start_ns) / 1e6;
    size_t m = n - w;
    memcpy(sorted, g->lat + w, m * sizeof *sorted);
    qsort(sorted, m, sizeof *sorted, bench_cmp_double);
    g->p50 = bench_quantile(sorted, m, 0.50);
    g->p90 = bench_quantile(sorted, m, 0.90);
    g->p99 = bench_quantile(sorted, m, 0.99);
    g->max = sorted[m - 1];
    free(sorted);
}

/* Reproject's stages as pf_job_stage (busy over elapsed x threads). */
static int reproject_stages(const pf_job_result *r, pf_job_stage *out)
{
    const pf_reproject_result *x = &r->reproject;
    int n = 0;
    for (int s = 0; s < PF_REPROJECT_STAGES; s++) {
        if (!x->busy_count[s]) continue;
        int th = x->stage_threads[s] > 0 ? x->stage_threads[s] : 1;
        out[n].name = pf_reproject_stage_name((pf_reproject_stage)s);
        out[n].busy = r->elapsed_s > 0 ? (double)x->busy_ns[s] / 1e9 / (r->elapsed_s * th) : 0;
        out[n].items = x->busy_count[s];
        out[n].items_per_s = r->elapsed_s > 0 ? (double)x->busy_count[s] / r->elapsed_s : 0;
        n++;
    }
    return n;
}

/* GPU ms per image of reproject's device stages (CUDA only), else NAN. */
static double gpu_ms(const pf_job_result *r, pf_reproject_stage s)
{
    const pf_reproject_result *x = &r->reproject;
    if (r->kind != PF_JOB_REPROJECT || !r->device || strncmp(r->device, "cuda", 4) != 0 ||
        !x->busy_count[s])
        return NAN;
    return (double)x->busy_ns[s] / 1e6 / (double)x->busy_count[s];
}

static void print_text(const char *sub, const pf_job_result *r, const figures *g,
                       const pf_job_stage *st, int nst, bool cache)
{
    const char *unit = r->kind == PF_JOB_SEGMENT ? "frames/s" : "images/s";
    printf("pixflow bench %s %s: %s (%s), %s", sub, r->input ? r->input : "", r->device,
           r->device_name ? r->device_name : "",
           r->latency_mode ? "latency mode" : "throughput mode");
    if (r->kind == PF_JOB_SEGMENT && !r->latency_mode) printf(", batch %d", r->batch);
    printf(", plan cache %s\n", cache ? "on" : "off");
    printf("  frames:          %zu (warm-up %zu), status %s\n", g->frames, g->warmup,
           pf_job_status_name(r->status));
    printf("  throughput:      %.2f %s (steady state, after the warm-up)\n", g->steady_fps, unit);
    printf("  whole run:       %.2f %s (the job's figure); steady/whole %.3f\n", g->whole_fps,
           unit, isfinite(g->ratio) ? 1.0 / g->ratio : NAN);
    printf("  latency (ms):    p50 %.3f  p90 %.3f  p99 %.3f  max %.3f (read -> complete)\n",
           g->p50, g->p90, g->p99, g->max);
    printf("  first frame:     %.1f ms from the start", g->first_ms);
    if (isfinite(g->first_after_model_ms))
        printf(", %.1f ms after the model was loaded", g->first_after_model_ms);
    printf("\n");
    double up = gpu_ms(r, PF_REPROJECT_UPLOAD), k = gpu_ms(r, PF_REPROJECT_KERNEL),
           down = gpu_ms(r, PF_REPROJECT_DOWNLOAD);
    if (isfinite(k))
        printf("  GPU time:        upload %.3f, kernel %.3f, download %.3f ms per image\n", up, k,
               down);
    else
        printf("  GPU time:        not measured by this job on this device\n");
    if (r->kind == PF_JOB_SEGMENT)
        printf("  transfers:       %lld host<->device copies (bytes: not counted by the job)\n",
               (long long)r->transfers);
    printf("  stages (busy):  ");
    for (int i = 0; i < nst; i++) printf(" %s %.0f%%", st[i].name, 100.0 * st[i].busy);
    printf("\n");
}

static void print_json(const char *sub, const pf_job_result *r, const figures *g,
                       const pf_job_stage *st, int nst, bool cache)
{
    cli_json j;
    cli_json_init(&j, stdout);
    cli_json_object_begin(&j, NULL);
    cli_json_string(&j, "command", sub);
    cli_json_string(&j, "status", pf_job_status_name(r->status));
    cli_json_string(&j, "input", r->input);
    cli_json_string(&j, "device", r->device);
    cli_json_string(&j, "device_name", r->device_name);
    cli_json_string(&j, "mode", r->latency_mode ? "latency" : "throughput");
    if (r->kind == PF_JOB_SEGMENT) {
        cli_json_int(&j, "batch", r->batch);
        cli_json_string(&j, "model", r->model);
    }
    cli_json_bool(&j, "plan_cache", cache);
    cli_json_uint(&j, "frames", g->frames);
    cli_json_uint(&j, "warmup", g->warmup);
    cli_json_string(&j, "unit", r->kind == PF_JOB_SEGMENT ? "frames/s" : "images/s");
    cli_json_double(&j, "throughput", g->steady_fps);
    cli_json_object_begin(&j, "latency_ms");
    cli_json_double(&j, "p50", g->p50);
    cli_json_double(&j, "p90", g->p90);
    cli_json_double(&j, "p99", g->p99);
    cli_json_double(&j, "max", g->max);
    cli_json_object_end(&j);
    cli_json_double(&j, "first_frame_ms", g->first_ms);
    cli_json_double(&j, "first_frame_after_model_ms", g->first_after_model_ms);
    cli_json_double(&j, "steady_fps", g->steady_fps);
    cli_json_double(&j, "whole_run_fps", g->whole_fps);
    cli_json_double(&j, "whole_run_over_steady", g->ratio);
    cli_json_double(&j, "wall_fps", g->wall_fps);
    cli_json_double(&j, "elapsed_s", r->elapsed_s);
    double k = gpu_ms(r, PF_REPROJECT_KERNEL);
    if (isfinite(k)) {
        cli_json_object_begin(&j, "gpu_ms_per_image");
        cli_json_double(&j, "upload", gpu_ms(r, PF_REPROJECT_UPLOAD));
        cli_json_double(&j, "kernel", k);
        cli_json_double(&j, "download", gpu_ms(r, PF_REPROJECT_DOWNLOAD));
        cli_json_object_end(&j);
    } else {
        cli_json_null(&j, "gpu_ms_per_image");
    }
    if (r->kind == PF_JOB_SEGMENT) cli_json_int(&j, "transfers", r->transfers);
    cli_json_null(&j, "h2d_bytes"); /* no job counts bytes yet */
    cli_json_null(&j, "d2h_bytes");
    cli_json_array_begin(&j, "stages");
    for (int i = 0; i < nst; i++) {
        cli_json_object_begin(&j, NULL);
        cli_json_string(&j, "name", st[i].name);
        cli_json_double(&j, "busy", st[i].busy);
        cli_json_double(&j, "items_per_s", st[i].items_per_s);
        cli_json_object_end(&j);
    }
    cli_json_array_end(&j);
    cli_json_object_end(&j);
    cli_json_finish(&j);
}

/* Removes the files of a directory this command made, then the directory. */
static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[4096];
            if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < sizeof p) unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Ctrl-C cancels the job (cli_signals_install). */
static void cancel_job(void *j) { pf_job_cancel_async(j); }

static int bench_job(int argc, char **argv, bool segment)
{
    const char *sub = segment ? "segment" : "reproject";
    char cmd[32];
    snprintf(cmd, sizeof cmd, "bench %s", sub);
    cli_args a;
    if (!cli_parse(cmd, options, argc, argv, &a)) return CLI_EXIT_USAGE;
    if (cli_flag(options, &a, "help")) {
        usage(stdout, sub);
        return CLI_EXIT_OK;
    }
    if (a.positional_count < 1) {
        fprintf(stderr, "pixflow %s: no INPUT (see 'pixflow %s --help')\n", cmd, cmd);
        return CLI_EXIT_USAGE;
    }
    long frames = 0, warmup = -1, batch = 0;
    const char *v;
    if ((v = cli_value(options, &a, "frames")) && !cli_parse_long(v, 1, 1L << 40, &frames)) {
        fprintf(stderr, "pixflow %s: --frames '%s': expected a positive integer\n", cmd, v);
        return CLI_EXIT_USAGE;
    }
    if ((v = cli_value(options, &a, "warmup")) && !cli_parse_long(v, 0, 1L << 40, &warmup)) {
        fprintf(stderr, "pixflow %s: --warmup '%s': expected 0 or a positive integer\n", cmd, v);
        return CLI_EXIT_USAGE;
    }
    if ((v = cli_value(options, &a, "batch")) && !cli_parse_long(v, 1, 256, &batch)) {
        fprintf(stderr, "pixflow %s: --batch '%s': expected 1..256\n", cmd, v);
        return CLI_EXIT_USAGE;
    }
    const bool latency = cli_flag(options, &a, "latency");
    if (latency && batch > 1) {
        fprintf(stderr, "pixflow %s: --latency runs one frame at a time: --batch %ld "
                        "contradicts it\n", cmd, batch);
        return CLI_EXIT_USAGE;
    }
    if (segment && cli_value(options, &a, "views")) {
        fprintf(stderr, "pixflow %s: --views is for 'pixflow bench reproject'\n", cmd);
        return CLI_EXIT_USAGE;
    }
    if (!segment && cli_value(options, &a, "model")) {
        fprintf(stderr, "pixflow %s: --model is for 'pixflow bench segment'\n", cmd);
        return CLI_EXIT_USAGE;
    }
    pf_view views[PF_REPROJECT_MAX_VIEWS];
    int nviews = 0;
    if (!segment) {
        const char *vs = cli_value(options, &a, "views");
        int n, w, h;
        float fov;
        char err[256];
        if (!rp_parse_views(vs ? vs : "8:90:1920x1080", &n, &fov, &w, &h, err, sizeof err) ||
            n > PF_REPROJECT_MAX_VIEWS) {
            fprintf(stderr, "pixflow %s: --views '%s': %s\n", cmd, vs ? vs : "",
                    n > PF_REPROJECT_MAX_VIEWS ? "more than 64 views" : err);
            return CLI_EXIT_USAGE;
        }
        for (int k = 0; k < n; k++)
            views[nviews++] = (pf_view){.yaw = (float)(360.0 * k / n), .fov = fov, .width = w,
                                        .height = h};
    }
    const bool json = cli_flag(options, &a, "json");
    const bool cache = !cli_flag(options, &a, "no-cache");
    const char *plot_dir = cli_value(options, &a, "plot");
    if (plot_dir && mkdir(plot_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "pixflow %s: --plot %s: %s\n", cmd, plot_dir, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    /* Before anything plans: the executors read it when they bind a model. */
    if (!cache) setenv("PIXFLOW_CACHE_DIR", "off", 1);

    pf_device *dev = NULL;
    pf_status st = pf_device_select(cli_value(options, &a, "device"), &dev);
    if (st != PF_OK) {
        fprintf(stderr, "pixflow %s: --device: %s\n", cmd, pf_last_error());
        return st == PF_ERR_INVALID ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
    }

    collector c;
    memset(&c, 0, sizeof c);
    pthread_mutex_init(&c.lock, NULL);
    ui_and_frames uf;
    cli_job_ui_init(&uf.ui, cmd, false);
    uf.c = &c;

    char tmpdir[4096] = "";
    pf_job *job = NULL;
    int64_t t_call = pf_time_ns();
    if (segment) {
        pf_segment_params sp = pf_segment_params_default();
        sp.inputs = (const char *const *)a.positional;
        sp.num_inputs = a.positional_count;
        sp.output = "null";
        sp.model = cli_value(options, &a, "model");
        sp.device = dev;
        sp.latency = latency;
        sp.batch = (int)batch;
        sp.max_frames = frames;
        sp.on_message = cli_job_message;
        sp.on_frame = on_frame;
        sp.user = &uf;
        t_call = pf_time_ns();
        st = pf_segment_start(&sp, &job);
    } else {
        const char *base = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/pixflow-bench-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(tmpdir)) {
            fprintf(stderr, "pixflow %s: temporary directory %s: %s\n", cmd, tmpdir,
                    strerror(errno));
            pthread_mutex_destroy(&c.lock);
            return CLI_EXIT_FAIL;
        }
        pf_reproject_params rp = pf_reproject_params_default();
        rp.inputs = (const char *const *)a.positional;
        rp.num_inputs = a.positional_count;
        rp.output_dir = tmpdir;
        rp.views = views;
        rp.num_views = nviews;
        rp.device = dev;
        rp.inflight = latency ? 1 : (int)batch;
        rp.on_message = cli_job_message;
        rp.on_frame = on_frame;
        rp.user = &uf;
        c.cancel_at = frames;
        t_call = pf_time_ns();
        st = pf_reproject_start(&rp, &job);
    }
    if (st != PF_OK) {
        int rc = cli_job_start_failed(&uf.ui, st);
        if (tmpdir[0]) remove_tree(tmpdir);
        pthread_mutex_destroy(&c.lock);
        free(c.f);
        return rc;
    }
    pthread_mutex_lock(&c.lock);
    c.job = job;
    bool reached = c.cancel_at > 0 && (int64_t)c.n >= c.cancel_at;
    pthread_mutex_unlock(&c.lock);
    if (reached) pf_job_cancel_async(job);
    cli_signals_install(cancel_job, job);
    pf_status wst = pf_job_wait(job, -1);
    cli_signals_restore();
    pf_job_result r;
    memset(&r, 0, sizeof r);
    pf_job_get_result(job, &r);

    figures g;
    compute(&c, t_call, segment ? r.first_frame_ms : -1, r.fps, warmup, r.batch, &g);
    pf_job_stage rst[PF_REPROJECT_STAGES];
    const pf_job_stage *stages = r.stages;
    int nst = r.num_stages;
    if (!segment) {
        nst = reproject_stages(&r, rst);
        stages = rst;
    }
    int rc = CLI_EXIT_OK;
    bool ended_ok = wst == PF_OK && (r.status == PF_JOB_DONE ||
                                      (r.status == PF_JOB_INTERRUPTED && frames > 0 &&
                                       !cli_interrupted()));
    if (!ended_ok || r.failed > 0) {
        fprintf(stderr, "pixflow %s: the job %s%s (%lld failed)\n", cmd,
                pf_job_status_name(r.status), wst == PF_OK ? "" : ": see above",
                (long long)r.failed);
        rc = CLI_EXIT_FAIL;
    }
    if (c.nomem) {
        fprintf(stderr, "pixflow %s: out of memory recording frames: the figures cover the "
                        "first %zu\n", cmd, c.n);
    }
    if (g.frames == 0) {
        fprintf(stderr, "pixflow %s: no frame finished: nothing to measure\n", cmd);
        rc = CLI_EXIT_FAIL;
    } else if (json) {
        print_json(sub, &r, &g, stages, nst, cache);
    } else {
        print_text(sub, &r, &g, stages, nst, cache);
    }
    if (plot_dir && g.frames > 0 && g.lat) {
        char title[512];
        snprintf(title, sizeof title, "pixflow bench %s %s, %s: latency per frame (read -> "
                 "complete), in completion order", sub, r.input ? r.input : "", r.device);
        bool ok = bench_plot_series(plot_dir, "latency", title, g.lat, (int)g.frames, g.p50,
                                    g.p99) &&
                  bench_plot_histogram(plot_dir, "histogram", title, g.lat + g.warmup,
                                       (int)(g.frames - g.warmup), 40);
        if (!ok) rc = CLI_EXIT_FAIL;
        else if (!json) printf("  plots in %s/\n", plot_dir);
    }
    free(g.lat);
    pf_job_destroy(&job);
    if (tmpdir[0]) remove_tree(tmpdir);
    pthread_mutex_destroy(&c.lock);
    free(c.f);
    return rc;
}

int cmd_bench_segment(int argc, char **argv) { return bench_job(argc, argv, true); }
int cmd_bench_reproject(int argc, char **argv) { return bench_job(argc, argv, false); }
