/* bench_nn: model inference time on one device.
 *
 *   bench_nn --device cuda:0 --model FILE [--batch N] [--precision fp16|fp32]
 *            [--runs 50] [--tf32] [--json]
 *
 * CUDA: the median of `runs` runs, each timed with events on the stream
 * around pf_nn_exec_run, with CUDA graphs on and off (two executors), after
 * warm-up runs that build the plan and capture the graph. Inputs and outputs
 * stay on the device (F32, uniform random inputs in [0, 1]), so the figure
 * is the executor's own time. CPU: the median wall time of a run
 * (FP32 only). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pixflow/pixflow.h"

typedef struct args {
    const char *device, *model, *precision;
    int batch, runs;
    bool json, tf32;
    int profile;                /* print the N slowest nodes (one eager run) */
} args;

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_nn --model FILE [--device cpu|cuda:N] [--batch N] "
                    "[--precision fp16|fp32] [--runs N] [--tf32] [--json] [--profile N]\n");
    return 2;
}

static int fail(const char *what)
{
    fprintf(stderr, "bench_nn: %s: %s\n", what, pf_last_error());
    return 1;
}

typedef struct bufs {
    pf_tensor in[8], out[8];
    int n_in, n_out;
} bufs;

static int make_bufs(pf_model *m, int batch, pf_allocator *alloc, pf_stream *s, bufs *b)
{
    memset(b, 0, sizeof *b);
    b->n_in = pf_model_num_inputs(m);
    b->n_out = pf_model_num_outputs(m);
    if (b->n_in > 8 || b->n_out > 8) return -1;
    for (int k = 0; k < b->n_in + b->n_out; k++) {
        const bool is_in = k < b->n_in;
        pf_model_io mi = is_in ? pf_model_input(m, k) : pf_model_output(m, k - b->n_in);
        int64_t shape[PF_NN_MAX_DIMS];
        for (int d = 0; d < mi.ndim; d++) shape[d] = mi.shape[d] < 0 ? batch : mi.shape[d];
        pf_tensor *t = is_in ? &b->in[k] : &b->out[k - b->n_in];
        pf_tensor h = {0};
        if (pf_tensor_alloc(t, mi.dtype, mi.ndim, shape, PF_LAYOUT_NONE, alloc, s)) return -1;
        if (!is_in) continue;
        if (pf_tensor_alloc(&h, mi.dtype, mi.ndim, shape, PF_LAYOUT_NONE, NULL, NULL)) return -1;
        uint32_t seed = 12345u + (uint32_t)k;
        int64_t n = pf_tensor_numel(&h);
        for (int64_t i = 0; i < n; i++) {
            seed = seed * 1664525u + 1013904223u;
            float v = (float)(seed >> 8) / 16777216.0f;
            if (mi.dtype == PF_DTYPE_F32) ((float *)h.data)[i] = v;
            else if (mi.dtype == PF_DTYPE_I32) ((int32_t *)h.data)[i] = 0;
        }
        if (alloc) {
            if (pf_memcpy_async(s, t->data, h.data, pf_tensor_nbytes(&h)) ||
                pf_stream_synchronize(s))
                return -1;
        } else {
            memcpy(t->data, h.data, pf_tensor_nbytes(&h));
        }
        pf_tensor_unref(&h);
    }
    return 0;
}

static void free_bufs(bufs *b)
{
    for (int k = 0; k < 8; k++) {
        pf_tensor_unref(&b->in[k]);
        pf_tensor_unref(&b->out[k]);
    }
}

/* Median ms of a.runs runs of x (events on CUDA, wall time on the CPU). */
static int time_runs(pf_nn_exec *x, pf_device *dev, pf_stream *s, bufs *b, const args *a,
                     double *med, double *best)
{
    double *t = calloc((size_t)a->runs, sizeof *t);
    pf_event *e0 = NULL, *e1 = NULL;
    if (!t) return -1;
    if (dev && (pf_event_create(dev, &e0) || pf_event_create(dev, &e1))) return -1;
    for (int w = 0; w < 5; w++)
        if (pf_nn_exec_run(x, s, b->in, b->n_in, b->out, b->n_out)) return -1;
    if (s && pf_stream_synchronize(s)) return -1;
    for (int r = 0; r < a->runs; r++) {
        if (dev) {
            float ms = 0;
            if (pf_event_record(e0, s) || pf_nn_exec_run(x, s, b->in, b->n_in, b->out, b->n_out) ||
                pf_event_record(e1, s) || pf_event_synchronize(e1) ||
                pf_event_elapsed_ms(e0, e1, &ms))
                return -1;
            t[r] = ms;
        } else {
            int64_t t0 = pf_time_ns();
            if (pf_nn_exec_run(x, NULL, b->in, b->n_in, b->out, b->n_out)) return -1;
            t[r] = (double)(pf_time_ns() - t0) / 1e6;
        }
    }
    *best = t[0];
    for (int r = 1; r < a->runs; r++)
        if (t[r] < *best) *best = t[r];
    *med = median(t, a->runs);
    free(t);
    pf_event_destroy(&e0);
    pf_event_destroy(&e1);
    return 0;
}

static int cmp_time(const void *a, const void *b)
{
    double x = ((const pf_nn_node_time *)a)->ms, y = ((const pf_nn_node_time *)b)->ms;
    return x > y ? -1 : x < y;
}

/* The `top` slowest nodes of one profiled run, and the sum over all. */
static int print_profile(pf_nn_exec *x, int batch, int top)
{
    enum { CAP = 4096 };
    pf_nn_node_time *t = calloc(CAP, sizeof *t);
    int n = 0;
    if (!t || pf_nn_exec_profile(x, batch, t, CAP, &n)) return -1;
    if (n > CAP) n = CAP;
    double sum = 0;
    for (int i = 0; i < n; i++) sum += t[i].ms;
    qsort(t, (size_t)n, sizeof *t, cmp_time);
    fprintf(stderr, "profile: %d nodes, %.3f ms in total; slowest:\n", n, sum);
    for (int i = 0; i < n && i < top; i++)
        fprintf(stderr, "  %8.3f ms  %-22s %s\n", t[i].ms, t[i].op ? t[i].op : "?",
                t[i].name ? t[i].name : "");
    /* Totals per op (or kernel family), largest first. */
    enum { FAM = 64 };
    const char *fam[FAM];
    double fms[FAM];
    int fn[FAM], nf = 0;
    for (int i = 0; i < n; i++) {
        const char *op = t[i].op ? t[i].op : "?";
        int j = 0;
        while (j < nf && strcmp(fam[j], op)) j++;
        if (j == nf) {
            if (nf == FAM) continue;
            fam[nf] = op, fms[nf] = 0, fn[nf] = 0, nf++;
        }
        fms[j] += t[i].ms, fn[j]++;
    }
    fprintf(stderr, "profile by op:\n");
    for (int done = 0; done < nf; done++) {
        int b = -1;
        for (int j = 0; j < nf; j++)
            if (fn[j] >= 0 && (b < 0 || fms[j] > fms[b])) b = j;
        fprintf(stderr, "  %8.3f ms  %4d x  %s\n", fms[b], fn[b], fam[b]);
        fn[b] = -1;
    }
    free(t);
    return 0;
}

int main(int argc, char **argv)
{
    args a = {"cpu", NULL, "fp32", 1, 50, false, false, 0};
    const char *env = getenv("PIXFLOW_DEVICE");
    if (env) a.device = env;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--json")) a.json = true;
        else if (!strcmp(o, "--tf32")) a.tf32 = true;
        else if (!v) return usage();
        else if (!strcmp(o, "--device")) a.device = v, i++;
        else if (!strcmp(o, "--model")) a.model = v, i++;
        else if (!strcmp(o, "--precision")) a.precision = v, i++;
        else if (!strcmp(o, "--batch")) a.batch = atoi(v), i++;
        else if (!strcmp(o, "--runs")) a.runs = atoi(v), i++;
        else if (!strcmp(o, "--profile")) a.profile = atoi(v), i++;
        else return usage();
    }
    if (!a.model || a.batch < 1 || a.runs < 1) return usage();
    pf_nn_precision prec;
    if (!strcmp(a.precision, "fp16")) prec = PF_NN_FP16;
    else if (!strcmp(a.precision, "fp32")) prec = PF_NN_FP32;
    else return usage();
    pf_device *dev = NULL;
    if (pf_device_select(a.device, &dev)) return fail(a.device);
    const bool cuda = pf_device_get_type(dev) == PF_DEVICE_CUDA;
    pf_model *m = NULL;
    if (pf_model_load(a.model, &m)) return fail(a.model);
    pf_stream *s = NULL;
    pf_allocator *alloc = NULL;
    if (cuda) {
        pf_stream_params sp = pf_stream_params_default();
        sp.device = dev;
        pf_allocator_params ap = pf_allocator_params_default();
        ap.device = dev;
        ap.name = "bench_nn";
        if (pf_stream_create(&sp, &s) || pf_allocator_create(&ap, &alloc)) return fail("setup");
    }
    /* A fixed-batch model runs at its own batch whatever --batch says; the
     * frames/s figures below would then be off by batch / fixed. */
    if (pf_model_num_inputs(m) > 0 && pf_model_input(m, 0).ndim > 0 &&
        pf_model_input(m, 0).shape[0] >= 0 && pf_model_input(m, 0).shape[0] != a.batch) {
        fprintf(stderr, "bench_nn: %s has a fixed batch of %lld; --batch %d is not possible\n",
                a.model, (long long)pf_model_input(m, 0).shape[0], a.batch);
        return 2;
    }
    bufs b;
    if (make_bufs(m, a.batch, alloc, s, &b)) return fail("buffers");
    double med[2] = {0, 0}, best[2] = {0, 0};
    pf_nn_exec_stats stats[2];
    memset(stats, 0, sizeof stats);
    const int modes = cuda ? 2 : 1;
    for (int g = 0; g < modes; g++) {
        pf_nn_exec_params p = pf_nn_exec_params_default();
        p.device = cuda ? dev : NULL;
        p.precision = prec;
        p.max_batch = a.batch;
        p.cuda_graphs = g == 0;
        p.allow_tf32 = a.tf32;
        pf_nn_exec *x = NULL;
        if (pf_nn_exec_create(m, &p, &x)) return fail("executor");
        if (time_runs(x, cuda ? dev : NULL, s, &b, &a, &med[g], &best[g])) return fail("run");
        pf_nn_exec_get_stats(x, &stats[g]);
        if (g == 0 && a.profile > 0 && print_profile(x, a.batch, a.profile)) return fail("profile");
        pf_nn_exec_destroy(&x);
    }
    const char *name = strrchr(a.model, '/') ? strrchr(a.model, '/') + 1 : a.model;
    if (a.json) {
        printf("{\"bench\":\"nn\",\"model\":\"%s\",\"device\":\"%s\",\"gpu\":\"%s\",\"batch\":%d,"
               "\"precision\":\"%s\",\"tf32\":%s,\"runs\":%d,\"median_ms_graph\":%.4f,"
               "\"best_ms_graph\":%.4f", name, pf_device_spec(dev),
               pf_device_props_get(dev)->name, a.batch, a.precision, a.tf32 ? "true" : "false",
               a.runs, med[0], best[0]);
        if (cuda)
            printf(",\"median_ms_eager\":%.4f,\"best_ms_eager\":%.4f,\"graphs\":%d", med[1],
                   best[1], stats[0].graphs);
        printf(",\"weight_bytes\":%zu,\"arena_bytes\":%zu}\n", stats[0].weight_bytes,
               stats[0].arena_bytes);
    } else {
        printf("bench_nn: %s on %s (%s), batch %d, %s, median of %d runs\n", name,
               pf_device_spec(dev), pf_device_props_get(dev)->name, a.batch, a.precision, a.runs);
        if (cuda) {
            printf("  CUDA graph on : %8.3f ms (best %.3f)  %.1f frames/s\n", med[0], best[0],
                   1000.0 * a.batch / med[0]);
            printf("  CUDA graph off: %8.3f ms (best %.3f)  %.1f frames/s\n", med[1], best[1],
                   1000.0 * a.batch / med[1]);
        } else {
            printf("  CPU           : %8.3f ms (best %.3f)  %.1f frames/s\n", med[0], best[0],
                   1000.0 * a.batch / med[0]);
        }
        printf("  weights %.2f MiB, arena %.2f MiB\n", stats[0].weight_bytes / 1048576.0,
               stats[0].arena_bytes / 1048576.0);
    }
    free_bufs(&b);
    pf_allocator_destroy(&alloc);
    pf_stream_destroy(&s);
    pf_model_free(&m);
    return 0;
}
