/* bench_pipeline: what the runtime itself costs per item.
 *
 * A source and a chain of 1, 2 and 4 empty stages (each emits what it gets;
 * the last one drops it), joined by BLOCK edges of capacity 64. Items are
 * views of one small host buffer, so the figure is the runtime's own work:
 * the source call, one push and one pop per edge, one process call per
 * stage, statistics. Reported per item and per hop (edge + stage), the
 * median of 5 runs; the target is < 5 us per hop.
 *
 * Every stage is a thread: with fewer cores than stages + 1 the threads take
 * turns and hand-offs include context switches, so run it on a machine with
 * enough cores for the numbers that matter. --device is accepted for the
 * common command line; the stages are CPU stages. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* One run: seconds for n items through `stages` empty stages. */
static int run_chain(int stages, int64_t n, pf_buffer *buf, double *secs)
{
    pf_pipeline_params pp = pf_pipeline_params_default();
    pp.name = "bench";
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
    if (rc == 0 && pf_pipeline_wait(p, PF_WAIT_FOREVER) != PF_OK) rc = -1;
    *secs = (pf_time_ns() - t0) / 1e9;
    pf_pipeline_destroy(&p);
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
    const int chains[] = {1, 2, 4};
    double per_item[3], per_hop[3];
    for (int c = 0; c < 3; c++) {
        double t[RUNS];
        for (int r = 0; r < RUNS; r++)
            if (run_chain(chains[c], a.iters, buf, &t[r]) != 0) {
                pf_buffer_unref(&buf);
                return bench_fail(a.prog, "pipeline run");
            }
        double med = bench_median(t, RUNS);
        per_item[c] = med * 1e6 / a.iters;
        per_hop[c] = per_item[c] / chains[c];
    }
    pf_buffer_unref(&buf);
    int cores = pf_cpu_count();
    if (a.json) {
        printf("{\"bench\":\"pipeline\",\"items\":%d,\"runs\":%d,\"cores\":%d,\"edge_capacity\":64,"
               "\"target_us_per_hop\":5,\"chains\":[",
               a.iters, RUNS, cores);
        for (int c = 0; c < 3; c++)
            printf("%s{\"stages\":%d,\"us_per_item\":%.4f,\"us_per_hop\":%.4f,\"items_per_s\":%.0f}",
                   c ? "," : "", chains[c], per_item[c], per_hop[c], 1e6 / per_item[c]);
        printf("]}\n");
    } else {
        printf("pipeline runtime overhead: empty stages, BLOCK edges of capacity 64, %d items, "
               "median of %d runs, %d cores\n",
               a.iters, RUNS, cores);
        printf("%8s %14s %14s %14s\n", "stages", "us/item", "us/hop", "items/s");
        for (int c = 0; c < 3; c++)
            printf("%8d %14.3f %14.3f %14.0f%s\n", chains[c], per_item[c], per_hop[c],
                   1e6 / per_item[c], per_hop[c] < 5 ? "" : "  (over the 5 us target)");
        if (cores < 6)
            printf("note: %d cores for up to 5 threads: hand-offs include context switches\n",
                   cores);
    }
    return 0;
}
