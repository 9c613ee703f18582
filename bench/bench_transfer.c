/* bench_transfer: host<->device copy bandwidth for video frames, from a
 * pinned pool block versus pageable memory.
 *
 *   bench_transfer [--device SPEC] [--iters N] [--json]
 *
 * Frames: 1920x1080 RGB (6,220,800 B) and 7680x3840 RGB (88,473,600 B).
 * For each frame size, direction (host->device, device->host) and host
 * memory kind (a block of a pf_pinned_pool; pageable memory from malloc,
 * touched beforehand so its pages exist) the copy is issued N times (default
 * 50) after a warm-up, each one alone between two pf_events on one stream;
 * the table reports the median (and the fastest) in GB/s = 1e9 bytes/s, from
 * the events and, for reference, from the host clock around issue + sync.
 * bench/peer_torch_transfer.py measures the same with PyTorch.
 *
 * On the CPU device there is no transfer: "device" memory is host memory and
 * the numbers are host memcpy bandwidth (labelled so).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "pixflow/pixflow.h"

#define PROG "bench_transfer"

typedef struct frame_case {
    const char *name;
    size_t bytes;
} frame_case;

static const frame_case cases[] = {
    {"1080p_rgb", (size_t)1920 * 1080 * 3},
    {"8k_equirect_rgb", (size_t)7680 * 3840 * 3},
};
#define NCASES (sizeof cases / sizeof cases[0])

enum { H2D = 0, D2H = 1 };
enum { PINNED = 0, PAGEABLE = 1 };
static const char *dir_name[] = {"h2d", "d2h"};
static const char *host_name[] = {"pinned", "pageable"};

typedef struct result {
    double median_ms, min_ms, wall_median_ms;
} result;

static double gbps(size_t bytes, double ms)
{
    return ms > 0 ? (double)bytes / (ms * 1e-3) / 1e9 : 0;
}

static int fail(const char *what) { return bench_fail(PROG, what); }

/* Times `iters` copies of `n` bytes, each alone between two events. */
static int time_copies(pf_stream *s, pf_event *e0, pf_event *e1, void *dst, const void *src,
                       size_t n, int warm, int iters, double *ev_ms, double *wall_ms, result *r)
{
    for (int i = -warm; i < iters; i++) {
        int64_t t0 = pf_time_ns();
        if (pf_event_record(e0, s) != PF_OK) return fail("pf_event_record");
        if (pf_memcpy_async(s, dst, src, n) != PF_OK) return fail("pf_memcpy_async");
        if (pf_event_record(e1, s) != PF_OK) return fail("pf_event_record");
        if (pf_event_synchronize(e1) != PF_OK) return fail("pf_event_synchronize");
        int64_t t1 = pf_time_ns();
        float ms = 0;
        if (pf_event_elapsed_ms(e0, e1, &ms) != PF_OK) return fail("pf_event_elapsed_ms");
        if (i >= 0) {
            ev_ms[i] = ms;
            wall_ms[i] = (double)(t1 - t0) / 1e6;
        }
    }
    r->wall_median_ms = bench_median(wall_ms, iters);
    r->median_ms = bench_median(ev_ms, iters); /* sorts ev_ms */
    r->min_ms = ev_ms[0];
    return 0;
}

int main(int argc, char **argv)
{
    bench_args args = {.prog = PROG, .iters = 50, .max_iters = 1000000,
                       .iters_help = "timed copies per frame size, direction and memory"};
    pf_device *dev = NULL;
    int rc = bench_start(argc, argv, &args, &dev);
    if (rc >= 0) return rc;
    const int iters = args.iters;

    const pf_device_props *props = pf_device_props_get(dev);
    const int is_cpu = pf_device_get_type(dev) == PF_DEVICE_CPU;
    size_t max_bytes = 0;
    for (size_t c = 0; c < NCASES; c++)
        if (cases[c].bytes > max_bytes) max_bytes = cases[c].bytes;

    pf_stream_params sp = pf_stream_params_default();
    sp.device = dev;
    pf_stream *s = NULL;
    if (pf_stream_create(&sp, &s) != PF_OK) return fail("pf_stream_create");
    pf_event *e0 = NULL, *e1 = NULL;
    if (pf_event_create(dev, &e0) != PF_OK || pf_event_create(dev, &e1) != PF_OK)
        return fail("pf_event_create");

    /* Device side: one buffer from the caching allocator. */
    pf_allocator_params ap = pf_allocator_params_default();
    ap.device = dev;
    ap.name = "bench_transfer";
    pf_allocator *alloc = NULL;
    if (pf_allocator_create(&ap, &alloc) != PF_OK) return fail("pf_allocator_create");
    pf_buffer *dbuf = NULL;
    if (pf_allocator_alloc(alloc, max_bytes, s, &dbuf) != PF_OK) return fail("device buffer");

    /* Host side: a pinned pool block, and pageable memory touched up front
     * (untouched pages would add page faults to the first copies). */
    pf_pinned_pool_params pp = pf_pinned_pool_params_default();
    pp.device = dev;
    pp.block_size = max_bytes;
    pp.block_count = 1;
    pp.name = "bench_transfer";
    pf_pinned_pool *pool = NULL;
    if (pf_pinned_pool_create(&pp, &pool) != PF_OK) return fail("pf_pinned_pool_create");
    pf_buffer *pblk = NULL;
    if (pf_pinned_pool_acquire(pool, -1, &pblk) != PF_OK) return fail("pf_pinned_pool_acquire");
    pf_pinned_pool_stats pst;
    pf_pinned_pool_get_stats(pool, &pst);
    unsigned char *pinned = pf_buffer_data(pblk);
    unsigned char *pageable = malloc(max_bytes);
    unsigned char *check = malloc(max_bytes);
    double *ev_ms = malloc(sizeof(double) * (size_t)iters);
    double *wall_ms = malloc(sizeof(double) * (size_t)iters);
    if (!pageable || !check || !ev_ms || !wall_ms) {
        fprintf(stderr, PROG ": out of host memory\n");
        return 1;
    }
    for (size_t i = 0; i < max_bytes; i++) {
        pageable[i] = (unsigned char)(i * 131u + 7u);
        pinned[i] = (unsigned char)(i * 17u + 3u);
    }
    memset(check, 0, max_bytes);
    void *dptr = pf_buffer_data(dbuf);

    /* One verified round trip per host kind, so the numbers are for copies
     * that really move the data. */
    int verified = 1;
    unsigned char *hosts[2] = {pinned, pageable};
    for (int h = 0; h < 2; h++) {
        memset(check, 0, max_bytes);
        if (pf_memcpy_async(s, dptr, hosts[h], max_bytes) != PF_OK ||
            pf_memcpy_async(s, check, dptr, max_bytes) != PF_OK ||
            pf_stream_synchronize(s) != PF_OK)
            return fail("verification copy");
        if (memcmp(check, hosts[h], max_bytes) != 0) verified = 0;
    }
    if (!verified) {
        fprintf(stderr, PROG ": round trip through %s memory returned wrong data\n",
                pf_device_spec(dev));
        return 1;
    }

    const int warm = iters < 5 ? iters : 5;
    result res[NCASES][2][2];
    for (size_t c = 0; c < NCASES; c++)
        for (int d = 0; d < 2; d++)
            for (int h = 0; h < 2; h++) {
                void *host = hosts[h];
                void *dst = d == H2D ? dptr : host;
                const void *src = d == H2D ? (const void *)host : dptr;
                if (time_copies(s, e0, e1, dst, src, cases[c].bytes, warm, iters, ev_ms, wall_ms,
                                &res[c][d][h]))
                    return 1;
            }

    const char *kind = is_cpu ? "host memcpy (CPU device: no transfer)" : "host<->device";
    if (args.json) {
        printf("{\"bench\":\"transfer\",\"impl\":\"pixflow\",\"device\":\"%s\",\"device_name\":\"",
               pf_device_spec(dev));
        bench_json_str(props->name);
        printf("\",\"kind\":\"%s\",\"pinned_is_page_locked\":%s,\"iters\":%d,\"warmup\":%d,"
               "\"timing\":\"events\",\"unit\":\"GB/s (1e9 B/s), median\",\"cases\":[",
               kind, pst.pinned ? "true" : "false", iters, warm);
        int first = 1;
        for (size_t c = 0; c < NCASES; c++)
            for (int d = 0; d < 2; d++)
                for (int h = 0; h < 2; h++) {
                    const result *r = &res[c][d][h];
                    printf("%s{\"name\":\"%s\",\"bytes\":%zu,\"direction\":\"%s\",\"host\":\"%s\","
                           "\"median_ms\":%.4f,\"min_ms\":%.4f,\"gbps\":%.2f,\"best_gbps\":%.2f,"
                           "\"wall_median_ms\":%.4f,\"wall_gbps\":%.2f}",
                           first ? "" : ",", cases[c].name, cases[c].bytes, dir_name[d],
                           host_name[h], r->median_ms, r->min_ms,
                           gbps(cases[c].bytes, r->median_ms), gbps(cases[c].bytes, r->min_ms),
                           r->wall_median_ms, gbps(cases[c].bytes, r->wall_median_ms));
                    first = 0;
                }
        printf("]}\n");
    } else {
        printf("bench_transfer on %s (%s): %s\n", pf_device_spec(dev), props->name, kind);
        printf("%d copies per row after %d warm-up, each alone between two events; "
               "GB/s = 1e9 B/s\n",
               iters, warm);
        if (!pst.pinned)
            printf("note: the pinned pool is ordinary host memory on this device\n");
        printf("\n%-16s %11s %4s %-9s %10s %9s %9s %11s\n", "frame", "bytes", "dir", "host",
               "median ms", "GB/s", "best GB/s", "wall GB/s");
        for (size_t c = 0; c < NCASES; c++)
            for (int d = 0; d < 2; d++)
                for (int h = 0; h < 2; h++) {
                    const result *r = &res[c][d][h];
                    printf("%-16s %11zu %4s %-9s %10.3f %9.2f %9.2f %11.2f\n", cases[c].name,
                           cases[c].bytes, dir_name[d], host_name[h], r->median_ms,
                           gbps(cases[c].bytes, r->median_ms), gbps(cases[c].bytes, r->min_ms),
                           gbps(cases[c].bytes, r->wall_median_ms));
                }
        printf("\npinned / pageable (median):");
        for (size_t c = 0; c < NCASES; c++)
            for (int d = 0; d < 2; d++)
                printf(" %s %s %.2fx", cases[c].name, dir_name[d],
                       res[c][d][PAGEABLE].median_ms / res[c][d][PINNED].median_ms);
        printf("\n");
    }

    free(pageable);
    free(check);
    free(ev_ms);
    free(wall_ms);
    pf_buffer_unref(&pblk);
    pf_pinned_pool_destroy(&pool);
    pf_buffer_unref(&dbuf);
    pf_allocator_destroy(&alloc);
    pf_event_destroy(&e0);
    pf_event_destroy(&e1);
    pf_stream_destroy(&s);
    return 0;
}
