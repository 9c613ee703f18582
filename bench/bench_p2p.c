/* bench_p2p: frame copies between two GPUs, directly (peer-to-peer over
 * NVLink or PCIe, what the pipeline's transfers use where
 * pf_device_peer_access pairs the devices) versus through pinned host memory
 * (device -> pinned block -> other device, what they do otherwise).
 *
 *   bench_p2p [--iters N] [--json]      (cuda:0 -> cuda:1; needs two GPUs)
 *
 * Frames: 1920x1080 RGB (6,220,800 B) and 7680x3840 RGB (88,473,600 B).
 * Each copy is issued alone between two events (on the destination's stream
 * for the direct copy; the staged copy is its two halves, each timed on its
 * own device's stream and summed, the host waiting in between as the
 * transfer stage does); the median of N (default 50) after a warm-up, in
 * GB/s = 1e9 B/s and microseconds per frame. The first copy of each kind is
 * checked byte for byte. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "pixflow/pixflow.h"

#define PROG "bench_p2p"

static int fail(const char *what) { return bench_fail(PROG, what); }

typedef struct side {
    pf_device *dev;
    pf_stream *s;
    pf_event *e0, *e1;
    pf_allocator *a;
    pf_buffer *buf;
} side;

static int open_side(side *x, int index, size_t bytes)
{
    if (pf_device_get(PF_DEVICE_CUDA, index, &x->dev) != PF_OK) return fail("pf_device_get");
    pf_stream_params sp = pf_stream_params_default();
    sp.device = x->dev;
    pf_allocator_params ap = pf_allocator_params_default();
    ap.device = x->dev;
    ap.name = PROG;
    if (pf_stream_create(&sp, &x->s) != PF_OK || pf_event_create(x->dev, &x->e0) != PF_OK ||
        pf_event_create(x->dev, &x->e1) != PF_OK || pf_allocator_create(&ap, &x->a) != PF_OK ||
        pf_allocator_alloc(x->a, bytes, x->s, &x->buf) != PF_OK)
        return fail("device setup");
    return 0;
}

/* One copy of n bytes on x's stream, timed by x's events. */
static int timed(side *x, void *dst, const void *src, size_t n, float *ms)
{
    if (pf_event_record(x->e0, x->s) != PF_OK || pf_memcpy_async(x->s, dst, src, n) != PF_OK ||
        pf_event_record(x->e1, x->s) != PF_OK || pf_event_synchronize(x->e1) != PF_OK ||
        pf_event_elapsed_ms(x->e0, x->e1, ms) != PF_OK)
        return fail("copy");
    return 0;
}

int main(int argc, char **argv)
{
    bench_args args = {.prog = PROG, .iters = 50, .max_iters = 100000,
                       .iters_help = "timed copies per frame size and path"};
    int rc = bench_parse_args(argc, argv, &args);
    if (rc >= 0) return rc;
    if (pf_device_count(PF_DEVICE_CUDA) < 2) {
        fprintf(stderr, PROG ": needs two CUDA devices (found %d)\n",
                pf_device_count(PF_DEVICE_CUDA));
        return 2;
    }
    static const struct { const char *name; size_t bytes; } cases[] = {
        {"1080p_rgb", (size_t)1920 * 1080 * 3}, {"8k_equirect_rgb", (size_t)7680 * 3840 * 3}};
    const size_t max_bytes = cases[1].bytes;
    side a = {0}, b = {0};
    if (open_side(&a, 0, max_bytes) || open_side(&b, 1, max_bytes)) return 1;
    bool peer = pf_device_peer_access(a.dev, b.dev);
    pf_pinned_pool_params pp = pf_pinned_pool_params_default();
    pp.device = a.dev;
    pp.block_size = max_bytes;
    pp.block_count = 1;
    pp.name = PROG;
    pf_pinned_pool *pool = NULL;
    pf_buffer *blk = NULL;
    if (pf_pinned_pool_create(&pp, &pool) != PF_OK || pf_pinned_pool_acquire(pool, -1, &blk) != PF_OK)
        return fail("pinned block");
    unsigned char *host = malloc(max_bytes), *check = malloc(max_bytes);
    double *ms_v = malloc(sizeof(double) * (size_t)args.iters);
    if (!host || !check || !ms_v) return fail("host memory");
    for (size_t i = 0; i < max_bytes; i++) host[i] = (unsigned char)(i * 131u + 7u);
    if (pf_memcpy_async(a.s, pf_buffer_data(a.buf), host, max_bytes) != PF_OK ||
        pf_stream_synchronize(a.s) != PF_OK)
        return fail("upload");
    const pf_device_props *pa = pf_device_props_get(a.dev), *pb = pf_device_props_get(b.dev);
    if (!args.json)
        printf("%s: %s -> %s (%s), median of %d\n%-16s %-8s %10s %10s\n", PROG, pa->name, pb->name,
               peer ? "peer access" : "no peer access", args.iters, "frame", "path", "GB/s",
               "us/frame");
    for (size_t c = 0; c < 2; c++) {
        const size_t n = cases[c].bytes;
        for (int path = 0; path < 2; path++) {
            if (path == 0 && !peer) continue;
            for (int i = -3; i < args.iters; i++) {
                float m1 = 0, m2 = 0;
                if (pf_memset_async(b.s, pf_buffer_data(b.buf), 0, n) != PF_OK) return fail("memset");
                if (path == 0) {
                    if (timed(&b, pf_buffer_data(b.buf), pf_buffer_data(a.buf), n, &m1)) return 1;
                } else if (timed(&a, pf_buffer_data(blk), pf_buffer_data(a.buf), n, &m1) ||
                           timed(&b, pf_buffer_data(b.buf), pf_buffer_data(blk), n, &m2)) {
                    return 1;
                }
                if (i == -3) {
                    if (pf_memcpy_async(b.s, check, pf_buffer_data(b.buf), n) != PF_OK ||
                        pf_stream_synchronize(b.s) != PF_OK)
                        return fail("readback");
                    if (memcmp(check, host, n) != 0) {
                        fprintf(stderr, PROG ": %s %s: the copy differs\n", cases[c].name,
                                path ? "staged" : "p2p");
                        return 1;
                    }
                }
                if (i >= 0) ms_v[i] = (double)m1 + (double)m2;
            }
            double med = bench_median(ms_v, args.iters);
            double gbs = (double)n / (med * 1e-3) / 1e9;
            if (args.json)
                printf("{\"bench\":\"p2p\",\"frame\":\"%s\",\"bytes\":%zu,\"path\":\"%s\","
                       "\"gbps\":%.2f,\"us_per_frame\":%.1f,\"peer_access\":%s}\n",
                       cases[c].name, n, path ? "host_staged" : "p2p", gbs, med * 1e3,
                       peer ? "true" : "false");
            else
                printf("%-16s %-8s %10.2f %10.1f\n", cases[c].name, path ? "staged" : "p2p", gbs,
                       med * 1e3);
        }
    }
    free(host);
    free(check);
    free(ms_v);
    pf_buffer_unref(&blk);
    pf_pinned_pool_destroy(&pool);
    side *sides[2] = {&a, &b};
    for (int k = 0; k < 2; k++) {
        pf_buffer_unref(&sides[k]->buf);
        pf_allocator_destroy(&sides[k]->a);
        pf_event_destroy(&sides[k]->e0);
        pf_event_destroy(&sides[k]->e1);
        pf_stream_destroy(&sides[k]->s);
    }
    return 0;
}
