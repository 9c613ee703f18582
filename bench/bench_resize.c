/* bench_resize: the resize and colour-conversion kernels on 1080p frames.
 *
 *   bench_resize [--device SPEC] [--iters N] [--json]
 *
 * Cases (one call per frame, frames in the device's memory):
 *   resize  1920x1080 RGB24 -> 512x512 RGB24, bilinear
 *   resize  1920x1080 RGB24 -> 512x512 RGB24, area (5 x 4 taps per pixel)
 *   convert 1920x1080 NV12 -> RGB24, BT.601 limited range
 * Sources are smooth generated patterns (integer triangle waves that the
 * PyTorch peer, bench/peer_torch_resize.py, reproduces bit for bit); each
 * case prints the mean of its output bytes so the two can be compared.
 *
 * Timing: each call alone between two pf_events after a warm-up; the median
 * and the fastest in microseconds per frame. Bytes = source read once + output
 * written once (the least any implementation moves); "share" is those bytes
 * over the median time, divided by the copy bandwidth measured in the same
 * run (a 256 MiB device-to-device pf_memcpy_async, counting read + write; on
 * the CPU device a host memcpy), i.e. the fraction of copy bandwidth the
 * kernel reaches.
 *
 * On the CPU device the same runs on the pf_ops thread pool (all cores). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "pixflow/pixflow.h"

#define PROG "bench_resize"
#define SRC_W 1920
#define SRC_H 1080
#define DST_W 512
#define DST_H 512

static int fail(const char *what) { return bench_fail(PROG, what); }

typedef struct bench_case {
    const char *name, *json_name;
    int kind;                 /* 0 resize, 1 convert */
    pf_interp interp;
    const pf_frame *src;
    pf_frame *dst;
    size_t bytes;             /* read + written */
    double median_us, min_us, mean_out, share;
} bench_case;

static size_t frame_bytes(const pf_frame *f)
{
    size_t total = 0;
    for (int p = 0; p < f->num_planes; p++) {
        size_t row, rows;
        pf_pixfmt_plane_size(f->format, f->width, f->height, p, &row, &rows);
        total += row * rows;
    }
    return total;
}

/* Mean of the output bytes (all planes, no padding), via a host copy. */
static int output_mean(const pf_frame *f, pf_stream *s, double *mean)
{
    pf_frame h = {0};
    if (pf_frame_alloc(&h, f->format, f->width, f->height, NULL, NULL) != PF_OK ||
        pf_frame_copy_async(&h, f, s) != PF_OK || pf_stream_synchronize(s) != PF_OK)
        return -1;
    double sum = 0;
    size_t n = 0;
    for (int p = 0; p < h.num_planes; p++) {
        size_t row, rows;
        pf_pixfmt_plane_size(h.format, h.width, h.height, p, &row, &rows);
        for (size_t y = 0; y < rows; y++)
            for (size_t x = 0; x < row; x++) sum += h.data[p][y * h.stride[p] + x];
        n += row * rows;
    }
    pf_frame_unref(&h);
    *mean = sum / (double)n;
    return 0;
}

int main(int argc, char **argv)
{
    bench_args args = {.prog = PROG, .iters = 50, .cpu_iters = 20, .max_iters = 100000,
                       .iters_help = "timed frames per case (default 50; 20 on the CPU)"};
    bench_env env;
    int rc = bench_open(argc, argv, &args, &env);
    if (rc >= 0) return rc;
    const int iters = args.iters;
    const int warm = env.is_cpu ? 2 : 5;
    const int copy_iters = env.is_cpu ? 5 : 20;

    pf_frame hrgb = {0}, hnv = {0}, rgb = {0}, nv = {0}, small = {0}, big = {0};
    if (pf_frame_alloc(&hrgb, PF_PIXFMT_RGB24, SRC_W, SRC_H, NULL, NULL) != PF_OK ||
        pf_frame_alloc(&hnv, PF_PIXFMT_NV12, SRC_W, SRC_H, NULL, NULL) != PF_OK ||
        pf_frame_alloc(&rgb, PF_PIXFMT_RGB24, SRC_W, SRC_H, env.alloc, env.s) != PF_OK ||
        pf_frame_alloc(&nv, PF_PIXFMT_NV12, SRC_W, SRC_H, env.alloc, env.s) != PF_OK ||
        pf_frame_alloc(&small, PF_PIXFMT_RGB24, DST_W, DST_H, env.alloc, env.s) != PF_OK ||
        pf_frame_alloc(&big, PF_PIXFMT_RGB24, SRC_W, SRC_H, env.alloc, env.s) != PF_OK)
        return fail("frames");
    bench_fill_rgb(&hrgb, 0);
    bench_fill_nv12(&hnv, 0);
    if (pf_frame_copy_async(&rgb, &hrgb, env.s) != PF_OK ||
        pf_frame_copy_async(&nv, &hnv, env.s) != PF_OK)
        return fail("source upload");

    bench_case cases[] = {
        {"resize rgb24 1080p -> 512x512 bilinear", "resize_bilinear", 0, PF_INTERP_BILINEAR,
         &rgb, &small, 0, 0, 0, 0, 0},
        {"resize rgb24 1080p -> 512x512 area", "resize_area", 0, PF_INTERP_AREA, &rgb, &small, 0,
         0, 0, 0, 0},
        {"convert nv12 -> rgb24 1080p (BT.601 ltd)", "convert_nv12_rgb24", 1, PF_INTERP_NEAREST,
         &nv, &big, 0, 0, 0, 0, 0},
    };
    const int ncases = (int)(sizeof cases / sizeof cases[0]);

    double *ms = malloc(sizeof(double) * (size_t)(iters > copy_iters ? iters : copy_iters));
    if (!ms) return fail("host memory");

    /* Copy bandwidth in the same run. */
    double copy_gbps = 0;
    if ((rc = bench_copy_bandwidth(&env, copy_iters, ms, &copy_gbps)) != 0) return rc;

    for (int c = 0; c < ncases; c++) {
        bench_case *bc = &cases[c];
        bc->bytes = frame_bytes(bc->src) + frame_bytes(bc->dst);
        for (int i = -warm; i < iters; i++) {
            float t = 0;
            if ((rc = bench_timer_start(&env)) != 0) return rc;
            pf_status st = bc->kind == 0 ? pf_ops_resize(env.ops, bc->src, bc->dst, bc->interp)
                                         : pf_ops_convert(env.ops, bc->src, bc->dst, NULL);
            if (st != PF_OK) return fail(bc->name);
            if ((rc = bench_timer_stop(&env, &t)) != 0) return rc;
            if (i >= 0) ms[i] = t;
        }
        bc->median_us = 1e3 * bench_median(ms, iters);
        bc->min_us = 1e3 * ms[0];
        bc->share = (double)bc->bytes / (bc->median_us * 1e-6) / (copy_gbps * 1e9);
        if (output_mean(bc->dst, env.s, &bc->mean_out) != 0) return fail("output download");
    }

    if (args.json) {
        bench_json_begin(&env, "resize");
        printf(",\"iters\":%d,\"warmup\":%d,\"timing\":\"events\",\"copy_gbps\":%.2f,"
               "\"copy_bytes\":%zu,\"cases\":[",
               iters, warm, copy_gbps, 2 * BENCH_COPY_BYTES);
        for (int c = 0; c < ncases; c++)
            printf("%s{\"case\":\"%s\",\"median_us\":%.3f,\"min_us\":%.3f,\"bytes\":%zu,"
                   "\"gbps\":%.2f,\"share_of_copy_bandwidth\":%.4f,\"output_mean\":%.4f}",
                   c ? "," : "", cases[c].json_name, cases[c].median_us, cases[c].min_us,
                   cases[c].bytes, (double)cases[c].bytes / (cases[c].median_us * 1e-6) / 1e9,
                   cases[c].share, cases[c].mean_out);
        printf("]}\n");
    } else {
        printf("bench_resize on %s (%s): %d frames per case after %d warm-up, each alone between "
               "two events\n\n",
               pf_device_spec(env.dev), env.props->name, iters, warm);
        printf("%-42s %10s %10s %9s %8s %7s %11s\n", "", "median us", "fastest us", "MB moved",
               "GB/s", "share", "output mean");
        for (int c = 0; c < ncases; c++)
            printf("%-42s %10.1f %10.1f %9.2f %8.1f %6.1f%% %11.3f\n", cases[c].name,
                   cases[c].median_us, cases[c].min_us, cases[c].bytes / 1e6,
                   (double)cases[c].bytes / (cases[c].median_us * 1e-6) / 1e9,
                   100.0 * cases[c].share, cases[c].mean_out);
        printf("\n");
        bench_print_copy(&env, copy_gbps);
        printf("; share = (source + output bytes) / median time / copy bandwidth\n");
    }

    free(ms);
    pf_frame_unref(&hrgb);
    pf_frame_unref(&hnv);
    pf_frame_unref(&rgb);
    pf_frame_unref(&nv);
    pf_frame_unref(&small);
    pf_frame_unref(&big);
    bench_env_close(&env);
    return 0;
}
