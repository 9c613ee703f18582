/* bench_reproject: equirect 7680x3840 RGB24 -> 8 perspective views of
 * 1920x1080 (yaw 0, 45, ..., 315; pitch 0; fov 90), bilinear, one
 * pf_ops_equirect_to_views call per image, all 8 views in it.
 *
 *   bench_reproject [--device SPEC] [--iters N] [--json]
 *
 * The source is a smooth generated pattern (integer triangle waves that the
 * PyTorch peer, bench/peer_torch_reproject.py, reproduces bit for bit), in
 * the device's memory. Each image is timed alone between two pf_events after
 * a warm-up; the table reports the median and the fastest in ms per image.
 *
 * The floor: the bytes an ideal kernel moves over the measured copy
 * bandwidth. Written: 8 * 1920 * 1080 * 3 B. Read: at most the whole source
 * (88.5 MB), at least the source pixels the views touch (the bilinear taps
 * of every output pixel, counted here on the host with the same float
 * mapping). Copy bandwidth: a 256 MiB device-to-device pf_memcpy_async timed
 * with events in the same run, counting read + write bytes. "Share" is the
 * floor (written + touched) over the measured time: the fraction of copy
 * bandwidth the op reaches.
 *
 * On the CPU device the same runs on the pf_ops thread pool (default 3
 * images instead of 20) and the copy is a host memcpy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "ops/reproject.h"
#include "pixflow/pixflow.h"

#define PROG "bench_reproject"
#define SRC_W 7680
#define SRC_H 3840
#define NVIEWS 8
#define VIEW_W 1920
#define VIEW_H 1080
#define CENTRE 64 /* side of the centre square whose mean is printed */

static int fail(const char *what) { return bench_fail(PROG, what); }

/* Source pixels read by bilinear taps of all views (host, same mapping). */
static size_t touched_pixels(const pf_view *views, int n)
{
    size_t words = ((size_t)SRC_W * SRC_H + 63) / 64, count = 0;
    uint64_t *bits = calloc(words, sizeof *bits);
    if (!bits) return 0;
    for (int v = 0; v < n; v++) {
        pf_rp_view g;
        pf_rp_view_setup(&views[v], &g);
        for (int j = 0; j < g.height; j++) {
            pf_rp_row row = pf_rp_row_base(&g, j);
            for (int i = 0; i < g.width; i++) {
                float fx, fy;
                pf_rp_map_row(&g, row, i, SRC_W, SRC_H, &fx, &fy);
                pf_rp_taps t = pf_rp_bilinear(fx, fy, SRC_W, SRC_H);
                size_t idx[4] = {(size_t)t.y0 * SRC_W + (size_t)t.x0,
                                 (size_t)t.y0 * SRC_W + (size_t)t.x1,
                                 (size_t)t.y1 * SRC_W + (size_t)t.x0,
                                 (size_t)t.y1 * SRC_W + (size_t)t.x1};
                for (int k = 0; k < 4; k++) bits[idx[k] >> 6] |= 1ull << (idx[k] & 63);
            }
        }
    }
    for (size_t w = 0; w < words; w++) count += (size_t)__builtin_popcountll(bits[w]);
    free(bits);
    return count;
}

int main(int argc, char **argv)
{
    bench_args args = {.prog = PROG, .iters = 20, .cpu_iters = 3, .max_iters = 100000,
                       .iters_help = "timed images (default 20; 3 on the CPU)"};
    bench_env env;
    int rc = bench_open(argc, argv, &args, &env);
    if (rc >= 0) return rc;
    const int iters = args.iters;
    const int warm = env.is_cpu ? 1 : 3;
    const int copy_iters = env.is_cpu ? 3 : 10;

    /* Source: generated on the host, copied to the device once. */
    pf_frame hsrc = {0}, src = {0}, dst[NVIEWS], centre = {0};
    pf_frame *dsts[NVIEWS];
    if (pf_frame_alloc(&hsrc, PF_PIXFMT_RGB24, SRC_W, SRC_H, NULL, NULL) != PF_OK ||
        pf_frame_alloc(&src, PF_PIXFMT_RGB24, SRC_W, SRC_H, env.alloc, env.s) != PF_OK)
        return fail("source frames");
    bench_fill_rgb(&hsrc, 0); /* periods dividing SRC_W: continuous across the wrap */
    if (pf_frame_copy_async(&src, &hsrc, env.s) != PF_OK) return fail("source upload");
    pf_view views[NVIEWS];
    for (int v = 0; v < NVIEWS; v++) {
        views[v] = (pf_view){.yaw = 45.0f * v, .pitch = 0, .roll = 0, .fov = 90,
                             .width = VIEW_W, .height = VIEW_H};
        memset(&dst[v], 0, sizeof dst[v]);
        if (pf_frame_alloc(&dst[v], PF_PIXFMT_RGB24, VIEW_W, VIEW_H, env.alloc, env.s) != PF_OK)
            return fail("view frames");
        dsts[v] = &dst[v];
    }

    double *ms = malloc(sizeof(double) * (size_t)(iters > copy_iters ? iters : copy_iters));
    if (!ms) return fail("host memory");
    for (int i = -warm; i < iters; i++) {
        float t = 0;
        if ((rc = bench_timer_start(&env)) != 0) return rc;
        if (pf_ops_equirect_to_views(env.ops, &src, views, dsts, NVIEWS, PF_INTERP_BILINEAR) !=
            PF_OK)
            return fail("pf_ops_equirect_to_views");
        if ((rc = bench_timer_stop(&env, &t)) != 0) return rc;
        if (i >= 0) ms[i] = t;
    }
    const double median = bench_median(ms, iters), best = ms[0];

    /* View 0's centre square, for comparison with the peer. */
    double mean[3] = {0, 0, 0};
    if (pf_frame_alloc(&centre, PF_PIXFMT_RGB24, VIEW_W, VIEW_H, NULL, NULL) != PF_OK ||
        pf_frame_copy_async(&centre, &dst[0], env.s) != PF_OK ||
        pf_stream_synchronize(env.s) != PF_OK)
        return fail("view download");
    for (int y = (VIEW_H - CENTRE) / 2; y < (VIEW_H + CENTRE) / 2; y++)
        for (int x = (VIEW_W - CENTRE) / 2; x < (VIEW_W + CENTRE) / 2; x++)
            for (int c = 0; c < 3; c++)
                mean[c] += centre.data[0][(size_t)y * centre.stride[0] + (size_t)x * 3 + c];
    for (int c = 0; c < 3; c++) mean[c] /= CENTRE * CENTRE;

    /* Copy bandwidth in the same run. */
    double copy_gbps = 0;
    if ((rc = bench_copy_bandwidth(&env, copy_iters, ms, &copy_gbps)) != 0) return rc;

    const size_t written = (size_t)NVIEWS * VIEW_W * VIEW_H * 3;
    const size_t whole = (size_t)SRC_W * SRC_H * 3;
    const size_t touched = touched_pixels(views, NVIEWS) * 3;
    const double floor_ms = bench_floor_s((double)(written + touched), copy_gbps) * 1e3;
    const double floor_whole_ms = bench_floor_s((double)(written + whole), copy_gbps) * 1e3;
    const double share = floor_ms / median;

    if (args.json) {
        bench_json_begin(&env, "reproject");
        printf(",\"src\":\"%dx%d rgb24\",\"views\":%d,\"view\":\"%dx%d\",\"fov\":90,"
               "\"interp\":\"bilinear\",\"iters\":%d,\"warmup\":%d,\"timing\":\"events\","
               "\"median_ms\":%.4f,\"min_ms\":%.4f,\"bytes_written\":%zu,"
               "\"bytes_read_whole_source\":%zu,\"bytes_read_touched\":%zu,"
               "\"copy_gbps\":%.2f,\"copy_bytes\":%zu,\"floor_ms\":%.4f,"
               "\"floor_whole_source_ms\":%.4f,\"share_of_copy_bandwidth\":%.4f,"
               "\"view0_centre_mean\":[%.3f,%.3f,%.3f]}\n",
               SRC_W, SRC_H, NVIEWS, VIEW_W, VIEW_H, iters, warm, median, best, written, whole,
               touched, copy_gbps, 2 * BENCH_COPY_BYTES, floor_ms, floor_whole_ms, share, mean[0],
               mean[1], mean[2]);
    } else {
        printf("bench_reproject on %s (%s): %dx%d rgb24 -> %d views %dx%d (yaw 0..315 step 45, "
               "fov 90), bilinear\n",
               pf_device_spec(env.dev), env.props->name, SRC_W, SRC_H, NVIEWS, VIEW_W, VIEW_H);
        bench_print_method(iters, "images", warm);
        printf("%-34s %10s\n", "", "ms/image");
        printf("%-34s %10.3f\n", "median", median);
        printf("%-34s %10.3f\n", "fastest", best);
        printf("%-34s %10.3f\n", "floor (written + touched source)", floor_ms);
        printf("%-34s %10.3f\n", "floor (written + whole source)", floor_whole_ms);
        printf("\nbytes: written %.1f MB, source %.1f MB whole / %.1f MB touched by the views\n",
               written / 1e6, whole / 1e6, touched / 1e6);
        bench_print_copy(&env, copy_gbps);
        printf("\nview 0 centre %dx%d mean: %.3f %.3f %.3f\n", CENTRE, CENTRE, mean[0], mean[1],
               mean[2]);
        printf("bench_reproject: %.3f ms/image median on %s, floor %.3f ms: %.0f%% of copy "
               "bandwidth\n",
               median, pf_device_spec(env.dev), floor_ms, 100.0 * share);
    }

    free(ms);
    pf_frame_unref(&centre);
    for (int v = 0; v < NVIEWS; v++) pf_frame_unref(&dst[v]);
    pf_frame_unref(&src);
    pf_frame_unref(&hsrc);
    bench_env_close(&env);
    return 0;
}
