/* `pixflow bench model MODEL`: trtexec-like measurement of the inference
 * engine on random inputs of the model's shapes.
 *
 * Phases (all after one untimed planning run, which is reported: its time
 * and the plan cache's share of the conv choices):
 *   latency     --iters runs, each alone: host copy of the inputs to the
 *               device (H2D), the run, the outputs back (D2H), synchronised;
 *               per run the host wall time of the three and each one's time
 *               between events on the stream (GPU time; the CPU executor's
 *               events are host timestamps). Percentiles over the runs.
 *   throughput  --iters runs queued back to back on the stream (inputs and
 *               outputs stay on the device, as in a pipeline), one
 *               synchronisation at the end: inferences/s = batch x runs / wall.
 * --sweep runs both phases at batch 1, 2, 4, ... --batch and picks the batch
 * with the highest throughput whose p99 latency is within --max-latency;
 * --profile adds the per-node table (pf_nn_exec_profile: GPU time per IR
 * node, graphs off); --plot DIR writes latency.svg, histogram.svg (and
 * sweep.svg). --json prints one object. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench_plot.h"
#include "cli.h"
#include "cmd_model.h"

#define MAX_IO 16

static const cli_option model_options[] = {
    {"device", "SPEC", "cpu, cuda, cuda:N (default: $PIXFLOW_DEVICE or cpu)"},
    {"precision", "P", "fp32 (default) or fp16 (CUDA only)"},
    {"batch", "N", "batch size (1..1024, default 1); with --sweep the largest tried"},
    {"iters", "N", "timed runs per phase (default 200; 50 on the CPU)"},
    {"warmup", "N", "untimed runs before each phase (default 10)"},
    {"sweep", NULL, "batch 1, 2, 4, ... --batch: throughput and latency of each"},
    {"max-latency", "MS", "--sweep: the best batch keeps its p99 latency within MS"},
    {"profile", NULL, "per-node GPU time (the 15 slowest nodes, and the total by op)"},
    {"no-cache", NULL, "CUDA: time the conv choices again instead of the plan cache"},
    {"plot", "DIR", "write latency.svg, histogram.svg (and sweep.svg) into DIR"},
    {"json", NULL, "print one JSON object"},
    {"help", NULL, "show this help"},
    {NULL, NULL, NULL},
};

static void model_usage(FILE *f)
{
    fprintf(f,
            "usage: pixflow bench model MODEL [--device SPEC] [--precision fp32|fp16]\n"
            "                         [--batch N] [--iters N] [--warmup N] [--sweep\n"
            "                         [--max-latency MS]] [--profile] [--no-cache]\n"
            "                         [--plot DIR] [--json]\n\n"
            "Measures the model on random inputs: the first run (planning), latency per run\n"
            "(H2D + run + D2H, each alone: p50/p90/p99/max, GPU time from events) and\n"
            "throughput (runs queued back to back, data on the device).\n\n"
            "options:\n");
    cli_print_options(f, model_options);
}

typedef struct bench_io {
    int n_in, n_out;
    pf_tensor host_in[MAX_IO], dev_in[MAX_IO], dev_out[MAX_IO], host_out[MAX_IO];
} bench_io;

typedef struct figures {
    int batch;
    double plan_ms;
    int convs_tuned, convs_cached;
    double lat_min, lat_mean, lat_p50, lat_p90, lat_p99, lat_max; /* host wall, ms */
    double gpu_p50, h2d_p50, d2h_p50;                               /* events, ms */
    double throughput;                                              /* inferences/s */
    double thr_wall_ms;
    size_t in_bytes, out_bytes;
    double *lat;                                                    /* per run, ms */
    int n_lat;
} figures;

static void io_free(bench_io *io)
{
    for (int i = 0; i < MAX_IO; i++) {
        pf_tensor_unref(&io->host_in[i]);
        pf_tensor_unref(&io->dev_in[i]);
        pf_tensor_unref(&io->dev_out[i]);
        pf_tensor_unref(&io->host_out[i]);
    }
}

/* Random inputs of the model's shapes at `batch` (symbolic dims), and
 * device tensors for inputs and outputs. */
static bool io_make(pf_model *m, model_dev *d, int batch, bench_io *io, figures *fg)
{
    memset(io, 0, sizeof *io);
    io->n_in = pf_model_num_inputs(m);
    io->n_out = pf_model_num_outputs(m);
    if (io->n_in > MAX_IO || io->n_out > MAX_IO) {
        fprintf(stderr, "pixflow bench model: more than %d inputs or outputs\n", MAX_IO);
        return false;
    }
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < io->n_in + io->n_out; i++) {
        bool in = i < io->n_in;
        pf_model_io mio = in ? pf_model_input(m, i) : pf_model_output(m, i - io->n_in);
        int64_t shape[PF_TENSOR_MAX_DIMS];
        for (int k = 0; k < mio.ndim; k++) shape[k] = mio.shape[k] < 0 ? batch : mio.shape[k];
        pf_dtype dt = mio.dtype == PF_DTYPE_F16 ? PF_DTYPE_F32 : mio.dtype;
        pf_layout lay = mio.ndim == 4 ? mio.layout : PF_LAYOUT_NONE;
        if (in) {
            pf_tensor *h = &io->host_in[i];
            if (pf_tensor_alloc(h, dt, mio.ndim, shape, lay, NULL, NULL) != PF_OK) return false;
            size_t nb = pf_tensor_nbytes(h);
            unsigned char *b = h->data;
            if (dt == PF_DTYPE_F32) {
                float *f = h->data;
                for (int64_t k = 0; k < pf_tensor_numel(h); k++) {
                    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                    f[k] = (float)((seed >> 40) & 0xffff) / 65535.0f;
                }
            } else {
                memset(b, 0, nb); /* integer inputs (ids, sizes): zeros are valid */
            }
            fg->in_bytes += nb;
            if (model_dev_upload(d, h, &io->dev_in[i]) != PF_OK) return false;
        } else {
            int o = i - io->n_in;
            if (model_dev_alloc(d, dt, mio.ndim, shape, &io->dev_out[o]) != PF_OK) return false;
            if (pf_tensor_alloc(&io->host_out[o], dt, mio.ndim, shape, lay, NULL, NULL) != PF_OK)
                return false;
            fg->out_bytes += pf_tensor_nbytes(&io->host_out[o]);
        }
    }
    return true;
}

typedef struct evs {
    pf_event *e[4];
} evs;

static pf_status copy_in(model_dev *d, bench_io *io)
{
    pf_status st = PF_OK;
    for (int i = 0; i < io->n_in && st == PF_OK && d->cuda; i++)
        st = pf_memcpy_async(d->stream, io->dev_in[i].data, io->host_in[i].data,
                             pf_tensor_nbytes(&io->host_in[i]));
    return st;
}

static pf_status copy_out(model_dev *d, bench_io *io)
{
    pf_status st = PF_OK;
    for (int i = 0; i < io->n_out && st == PF_OK && d->cuda; i++)
        st = pf_memcpy_async(d->stream, io->host_out[i].data, io->dev_out[i].data,
                             pf_tensor_nbytes(&io->dev_out[i]));
    return st;
}

/* The stream the events sit on (CPU: a CPU stream, events are timestamps). */
static pf_stream *bench_stream(model_dev *d, pf_stream **cpu)
{
    if (d->stream) return d->stream;
    if (!*cpu) {
        pf_stream_params sp = pf_stream_params_default();
        if (pf_stream_create(&sp, cpu) != PF_OK) return NULL;
    }
    return *cpu;
}

/* One batch size: planning run, latency phase, throughput phase. */
static bool measure(pf_model *m, model_dev *d, pf_nn_precision prec, bool cache, int batch,
                    int iters, int warmup, figures *fg)
{
    memset(fg, 0, sizeof *fg);
    fg->batch = batch;
    bench_io io;
    pf_nn_exec *x = NULL;
    pf_stream *cpu = NULL;
    evs ev = {{NULL}};
    bool ok = io_make(m, d, batch, &io, fg);
    pf_nn_exec_params xp = pf_nn_exec_params_default();
    xp.device = d->dev;
    xp.precision = prec;
    xp.max_batch = batch;
    xp.plan_cache = cache;
    pf_stream *s = ok ? bench_stream(d, &cpu) : NULL;
    ok = ok && s && pf_nn_exec_create(m, &xp, &x) == PF_OK;
    for (int k = 0; k < 4 && ok; k++) ok = pf_event_create(d->dev, &ev.e[k]) == PF_OK;
    fg->lat = ok ? calloc((size_t)iters, sizeof *fg->lat) : NULL;
    double *gpu = ok ? calloc((size_t)iters * 3, sizeof *gpu) : NULL;
    ok = ok && fg->lat && gpu;
    /* Planning: the first run. */
    int64_t t0 = pf_time_ns();
    ok = ok && pf_nn_exec_run(x, d->stream, io.dev_in, io.n_in, io.dev_out, io.n_out) == PF_OK &&
         (!d->stream || pf_stream_synchronize(d->stream) == PF_OK);
    fg->plan_ms = (double)(pf_time_ns() - t0) / 1e6;
    pf_nn_exec_stats xs;
    if (ok && pf_nn_exec_get_stats(x, &xs) == PF_OK) {
        fg->convs_tuned = xs.convs_tuned;
        fg->convs_cached = xs.convs_cached;
    }
    /* Latency. */
    for (int i = -warmup; i < iters && ok; i++) {
        int64_t a = pf_time_ns();
        ok = pf_event_record(ev.e[0], s) == PF_OK && copy_in(d, &io) == PF_OK &&
             pf_event_record(ev.e[1], s) == PF_OK &&
             pf_nn_exec_run(x, d->stream, io.dev_in, io.n_in, io.dev_out, io.n_out) == PF_OK &&
             pf_event_record(ev.e[2], s) == PF_OK && copy_out(d, &io) == PF_OK &&
             pf_event_record(ev.e[3], s) == PF_OK && pf_event_synchronize(ev.e[3]) == PF_OK;
        int64_t b = pf_time_ns();
        if (!ok || i < 0) continue;
        fg->lat[i] = (double)(b - a) / 1e6;
        float ms[3] = {0, 0, 0};
        for (int k = 0; k < 3; k++) pf_event_elapsed_ms(ev.e[k], ev.e[k + 1], &ms[k]);
        gpu[i] = ms[1];
        gpu[iters + i] = ms[0];
        gpu[2 * iters + i] = ms[2];
    }
    if (ok) {
        fg->n_lat = iters;
        double *sorted = malloc(sizeof *sorted * (size_t)iters);
        if (sorted) {
            memcpy(sorted, fg->lat, sizeof *sorted * (size_t)iters);
            qsort(sorted, (size_t)iters, sizeof *sorted, bench_cmp_double);
            double sum = 0;
            for (int i = 0; i < iters; i++) sum += sorted[i];
            fg->lat_min = sorted[0];
            fg->lat_max = sorted[iters - 1];
            fg->lat_mean = sum / iters;
            fg->lat_p50 = bench_quantile(sorted, iters, 0.50);
            fg->lat_p90 = bench_quantile(sorted, iters, 0.90);
            fg->lat_p99 = bench_quantile(sorted, iters, 0.99);
            free(sorted);
        }
        for (int k = 0; k < 3; k++) qsort(gpu + k * iters, (size_t)iters, sizeof *gpu, bench_cmp_double);
        fg->gpu_p50 = bench_quantile(gpu, iters, 0.5);
        fg->h2d_p50 = bench_quantile(gpu + iters, iters, 0.5);
        fg->d2h_p50 = bench_quantile(gpu + 2 * iters, iters, 0.5);
    }
    /* Throughput: back to back, data on the device. */
    for (int i = 0; i < warmup && ok; i++)
        ok = pf_nn_exec_run(x, d->stream, io.dev_in, io.n_in, io.dev_out, io.n_out) == PF_OK;
    if (ok && d->stream) ok = pf_stream_synchronize(d->stream) == PF_OK;
    int64_t a = pf_time_ns();
    for (int i = 0; i < iters && ok; i++)
        ok = pf_nn_exec_run(x, d->stream, io.dev_in, io.n_in, io.dev_out, io.n_out) == PF_OK;
    if (ok && d->stream) ok = pf_stream_synchronize(d->stream) == PF_OK;
    fg->thr_wall_ms = (double)(pf_time_ns() - a) / 1e6;
    fg->throughput = fg->thr_wall_ms > 0 ? (double)batch * iters / (fg->thr_wall_ms / 1e3) : 0;
    free(gpu);
    for (int k = 0; k < 4; k++) pf_event_destroy(&ev.e[k]);
    pf_nn_exec_destroy(&x);
    pf_stream_destroy(&cpu);
    io_free(&io);
    if (!ok) {
        free(fg->lat);
        fg->lat = NULL;
    }
    return ok;
}

static void print_figures(const figures *f, bool cuda)
{
    printf("  batch %d\n", f->batch);
    printf("    first run     %.1f ms (plans the batch size", f->plan_ms);
    if (f->convs_tuned + f->convs_cached)
        printf("; conv choices: %d timed, %d from the plan cache", f->convs_tuned,
               f->convs_cached);
    printf(")\n");
    printf("    throughput    %.1f inferences/s (%.1f runs/s)\n", f->throughput,
           f->throughput / f->batch);
    printf("    latency (ms)  min %.3f  mean %.3f  p50 %.3f  p90 %.3f  p99 %.3f  max %.3f "
           "(host, H2D + run + D2H)\n",
           f->lat_min, f->lat_mean, f->lat_p50, f->lat_p90, f->lat_p99, f->lat_max);
    printf("    %s  run %.3f ms, H2D %.3f ms (%.2f MB), D2H %.3f ms (%.2f MB) (p50)\n",
           cuda ? "GPU time   " : "events     ", f->gpu_p50, f->h2d_p50, f->in_bytes / 1e6,
           f->d2h_p50, f->out_bytes / 1e6);
}

static void json_figures(cli_json *j, const char *key, const figures *f)
{
    cli_json_object_begin(j, key);
    cli_json_int(j, "batch", f->batch);
    cli_json_double(j, "throughput", f->throughput);
    cli_json_double(j, "first_run_ms", f->plan_ms);
    cli_json_int(j, "convs_tuned", f->convs_tuned);
    cli_json_int(j, "convs_cached", f->convs_cached);
    cli_json_double(j, "latency_min_ms", f->lat_min);
    cli_json_double(j, "latency_mean_ms", f->lat_mean);
    cli_json_double(j, "latency_p50_ms", f->lat_p50);
    cli_json_double(j, "latency_p90_ms", f->lat_p90);
    cli_json_double(j, "latency_p99_ms", f->lat_p99);
    cli_json_double(j, "latency_max_ms", f->lat_max);
    cli_json_object_begin(j, "latency");
    cli_json_double(j, "p50", f->lat_p50);
    cli_json_double(j, "p90", f->lat_p90);
    cli_json_double(j, "p99", f->lat_p99);
    cli_json_double(j, "max", f->lat_max);
    cli_json_object_end(j);
    cli_json_double(j, "gpu_run_ms", f->gpu_p50);
    cli_json_double(j, "h2d_ms", f->h2d_p50);
    cli_json_double(j, "d2h_ms", f->d2h_p50);
    cli_json_uint(j, "h2d_bytes", f->in_bytes);
    cli_json_uint(j, "d2h_bytes", f->out_bytes);
    cli_json_object_end(j);
}

/* --profile: per node, slowest first, and totals by op. */
static bool profile(pf_model *m, model_dev *d, pf_nn_precision prec, int batch, bool json,
                    cli_json *j)
{
    pf_nn_exec_params xp = pf_nn_exec_params_default();
    xp.device = d->dev;
    xp.precision = prec;
    xp.max_batch = batch;
    pf_nn_exec *x = NULL;
    int cap = 4096, n = 0;
    pf_nn_node_time *t = calloc((size_t)cap, sizeof *t);
    bool ok = t && pf_nn_exec_create(m, &xp, &x) == PF_OK &&
              pf_nn_exec_profile(x, batch, t, cap, &n) == PF_OK;
    if (ok) {
        if (n > cap) n = cap;
        double total = 0;
        for (int i = 0; i < n; i++) total += t[i].ms;
        /* by time, descending */
        for (int i = 1; i < n; i++)
            for (int k = i; k > 0 && t[k].ms > t[k - 1].ms; k--) {
                pf_nn_node_time tmp = t[k];
                t[k] = t[k - 1];
                t[k - 1] = tmp;
            }
        if (json) {
            cli_json_object_begin(j, "profile");
            cli_json_double(j, "total_ms", total);
            cli_json_array_begin(j, "nodes");
            for (int i = 0; i < n; i++) {
                cli_json_object_begin(j, NULL);
                cli_json_string(j, "name", t[i].name);
                cli_json_string(j, "op", t[i].op);
                cli_json_double(j, "ms", t[i].ms);
                cli_json_object_end(j);
            }
            cli_json_array_end(j);
            cli_json_object_end(j);
        } else {
            printf("  profile (batch %d, node by node, no graph): %d nodes, %.3f ms in all\n",
                   batch, n, total);
            printf("    %-40s %-24s %9s %6s\n", "node", "op", "ms", "share");
            for (int i = 0; i < n && i < 15; i++)
                printf("    %-40.40s %-24.24s %9.4f %5.1f%%\n", t[i].name, t[i].op, t[i].ms,
                       total > 0 ? 100 * t[i].ms / total : 0);
            /* totals by op */
            printf("    by op:");
            for (int i = 0; i < n; i++) {
                bool seen = false;
                for (int k = 0; k < i && !seen; k++) seen = !strcmp(t[k].op, t[i].op);
                if (seen) continue;
                double sum = 0;
                for (int k = i; k < n; k++)
                    if (!strcmp(t[k].op, t[i].op)) sum += t[k].ms;
                printf(" %s %.3f ms;", t[i].op, sum);
            }
            printf("\n");
        }
    }
    pf_nn_exec_destroy(&x);
    free(t);
    return ok;
}

static int usage_error(const char *fmt, const char *v)
{
    fprintf(stderr, "pixflow bench model: ");
    fprintf(stderr, fmt, v);
    fprintf(stderr, " (see 'pixflow bench model --help')\n");
    return CLI_EXIT_USAGE;
}

static int bench_model(int argc, char **argv)
{
    cli_args a;
    if (!cli_parse("bench model", model_options, argc, argv, &a)) return CLI_EXIT_USAGE;
    if (cli_flag(model_options, &a, "help")) {
        model_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (a.positional_count != 1) return usage_error("expected one MODEL%s", "");
    const char *path = a.positional[0];
    pf_nn_precision prec;
    const char *v;
    if (!model_parse_precision(cli_value(model_options, &a, "precision"), &prec))
        return usage_error("--precision '%s': expected fp32 or fp16",
                           cli_value(model_options, &a, "precision"));
    long batch = 1, iters = -1, warmup = 10;
    if ((v = cli_value(model_options, &a, "batch")) && !cli_parse_long(v, 1, 1024, &batch))
        return usage_error("--batch '%s': expected 1..1024", v);
    if ((v = cli_value(model_options, &a, "iters")) && !cli_parse_long(v, 1, 1000000, &iters))
        return usage_error("--iters '%s': expected 1..1000000", v);
    if ((v = cli_value(model_options, &a, "warmup")) && !cli_parse_long(v, 0, 100000, &warmup))
        return usage_error("--warmup '%s': expected 0..100000", v);
    double max_lat = INFINITY;
    if ((v = cli_value(model_options, &a, "max-latency"))) {
        char *end = NULL;
        max_lat = strtod(v, &end);
        if (!end || *end || !(max_lat > 0)) return usage_error("--max-latency '%s': expected ms > 0", v);
        if (!cli_flag(model_options, &a, "sweep"))
            return usage_error("--max-latency %s: only with --sweep", v);
    }
    const bool json = cli_flag(model_options, &a, "json"), sweep = cli_flag(model_options, &a, "sweep");
    const char *plot_dir = cli_value(model_options, &a, "plot");
    if (plot_dir && mkdir(plot_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "pixflow bench model: --plot %s: %s\n", plot_dir, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    model_dev d;
    if (!model_dev_open(cli_value(model_options, &a, "device"), &d)) {
        fprintf(stderr, "pixflow bench model: --device: %s\n", pf_last_error());
        return CLI_EXIT_FAIL;
    }
    if (iters < 0) iters = d.cuda ? 200 : 50;
    pf_model *m = NULL;
    if (pf_model_load(path, &m) != PF_OK) {
        fprintf(stderr, "pixflow bench model: %s\n", pf_last_error());
        model_dev_close(&d);
        return CLI_EXIT_FAIL;
    }
    bool symbolic = false;
    for (int i = 0; i < pf_model_num_inputs(m); i++) {
        pf_model_io io = pf_model_input(m, i);
        for (int k = 0; k < io.ndim; k++) symbolic |= io.shape[k] < 0;
    }
    if (!symbolic && batch > 1) {
        fprintf(stderr, "pixflow bench model: %s has a fixed batch; --batch %ld is ignored\n",
                path, batch);
        batch = 1;
    }
    const bool cache = !cli_flag(model_options, &a, "no-cache");
    int nb = 0;
    int sizes[12];
    for (int b = 1; sweep && b < batch && nb < 11; b *= 2) sizes[nb++] = b;
    sizes[nb++] = (int)batch;
    figures fg[12];
    memset(fg, 0, sizeof fg);
    int rc = CLI_EXIT_OK, best = -1;
    const pf_device_props *dp = pf_device_props_get(d.dev);
    if (!json)
        printf("pixflow bench model %s: %s (%s), %s, %ld runs per phase after %ld warm-up\n",
               path, pf_device_spec(d.dev), dp ? dp->name : "", prec == PF_NN_FP16 ? "fp16" : "fp32",
               iters, warmup);
    for (int i = 0; i < nb; i++) {
        if (!measure(m, &d, prec, cache, sizes[i], (int)iters, (int)warmup, &fg[i])) {
            fprintf(stderr, "pixflow bench model: batch %d: %s\n", sizes[i], pf_last_error());
            rc = CLI_EXIT_FAIL;
            nb = i;
            break;
        }
        if (!json) print_figures(&fg[i], d.cuda);
        if (fg[i].lat_p99 <= max_lat && (best < 0 || fg[i].throughput > fg[best].throughput))
            best = i;
    }
    cli_json j;
    if (json && nb > 0) {
        cli_json_init(&j, stdout);
        cli_json_object_begin(&j, NULL);
        cli_json_string(&j, "model", path);
        cli_json_string(&j, "device", pf_device_spec(d.dev));
        cli_json_string(&j, "device_name", dp ? dp->name : NULL);
        cli_json_string(&j, "precision", prec == PF_NN_FP16 ? "fp16" : "fp32");
        cli_json_int(&j, "iters", iters);
        /* The top level is the (last, or best under --max-latency) batch's
         * figures; --sweep adds them all. */
        const figures *top = &fg[best >= 0 ? best : nb - 1];
        cli_json_int(&j, "batch", top->batch);
        cli_json_double(&j, "throughput", top->throughput);
        cli_json_double(&j, "latency_p50_ms", top->lat_p50);
        cli_json_double(&j, "latency_p90_ms", top->lat_p90);
        cli_json_double(&j, "latency_p99_ms", top->lat_p99);
        cli_json_double(&j, "latency_max_ms", top->lat_max);
        cli_json_object_begin(&j, "latency");
        cli_json_double(&j, "p50", top->lat_p50);
        cli_json_double(&j, "p90", top->lat_p90);
        cli_json_double(&j, "p99", top->lat_p99);
        cli_json_double(&j, "max", top->lat_max);
        cli_json_object_end(&j);
        cli_json_double(&j, "gpu_run_ms", top->gpu_p50);
        cli_json_double(&j, "first_run_ms", fg[0].plan_ms);
        json_figures(&j, "result", top);
        if (sweep) {
            cli_json_array_begin(&j, "sweep");
            for (int i = 0; i < nb; i++) json_figures(&j, NULL, &fg[i]);
            cli_json_array_end(&j);
            if (isfinite(max_lat)) cli_json_double(&j, "max_latency_ms", max_lat);
            cli_json_int(&j, "best_batch", best >= 0 ? fg[best].batch : -1);
        }
    }
    if (sweep && !json && nb > 0) {
        if (best >= 0)
            printf("  best: batch %d, %.1f inferences/s, p99 %.3f ms%s\n", fg[best].batch,
                   fg[best].throughput, fg[best].lat_p99,
                   isfinite(max_lat) ? " (within --max-latency)" : "");
        else
            printf("  no batch keeps p99 within --max-latency %.3f ms\n", max_lat);
    }
    if (rc == CLI_EXIT_OK && cli_flag(model_options, &a, "profile") &&
        !profile(m, &d, prec, (int)batch, json, &j)) {
        fprintf(stderr, "pixflow bench model: --profile: %s\n", pf_last_error());
        rc = CLI_EXIT_FAIL;
    }
    if (json && nb > 0) {
        cli_json_object_end(&j);
        cli_json_finish(&j);
    }
    if (plot_dir && nb > 0) {
        const figures *f = &fg[nb - 1];
        char title[512];
        snprintf(title, sizeof title, "%s, %s %s, batch %d: latency per run (H2D + run + D2H)",
                 path, pf_device_spec(d.dev), prec == PF_NN_FP16 ? "fp16" : "fp32", f->batch);
        bool ok = bench_plot_series(plot_dir, "latency", title, f->lat, f->n_lat, f->lat_p50,
                                    f->lat_p99) &&
                  bench_plot_histogram(plot_dir, "histogram", title, f->lat, f->n_lat, 40);
        if (ok && nb > 1) {
            double x[12], y[12], y2[12];
            for (int i = 0; i < nb; i++) x[i] = fg[i].batch, y[i] = fg[i].throughput,
                                         y2[i] = fg[i].lat_p99;
            snprintf(title, sizeof title, "%s, %s: throughput and p99 latency by batch", path,
                     pf_device_spec(d.dev));
            ok = bench_plot_curve(plot_dir, "sweep", title, "batch", "inferences/s",
                                  "p99 latency (ms)", x, y, y2, nb);
        }
        if (!ok) rc = CLI_EXIT_FAIL;
        else if (!json) printf("  plots in %s/\n", plot_dir);
    }
    for (int i = 0; i < 12; i++) free(fg[i].lat);
    pf_model_free(&m);
    model_dev_close(&d);
    return rc;
}

static void bench_usage(FILE *f)
{
    fprintf(f, "usage: pixflow bench model MODEL [options]   the inference engine on a model\n"
               "       pixflow bench ops [options]           the image ops at video sizes\n"
               "       pixflow bench segment INPUT... [options]    the segment job, end to end\n"
               "       pixflow bench reproject INPUT... [options]  the reproject job, end to end\n\n"
               "'pixflow bench SUBCOMMAND --help' lists each one's options.\n");
}

int cmd_bench(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        bench_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    if (!strcmp(argv[1], "model")) return bench_model(argc - 1, argv + 1);
    if (!strcmp(argv[1], "ops")) return cmd_bench_ops(argc - 1, argv + 1);
    if (!strcmp(argv[1], "segment")) return cmd_bench_segment(argc - 1, argv + 1);
    if (!strcmp(argv[1], "reproject")) return cmd_bench_reproject(argc - 1, argv + 1);
    fprintf(stderr, "pixflow bench: unknown subcommand '%s' (see 'pixflow bench --help')\n",
            argv[1]);
    return CLI_EXIT_USAGE;
}
