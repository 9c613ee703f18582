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
#define COPY_BYTES ((size_t)256 << 20)

static int fail(const char *what) { return bench_fail(PROG, what); }

/* Triangle wave of period p (even) over 0..255, integer-exact. */
static int tri(int t, int p) { return abs((t % p) - p / 2) * 510 / p; }

static void fill_rgb(pf_frame *f)
{
    for (int y = 0; y < f->height; y++) {
        uint8_t *row = f->data[0] + (size_t)y * f->stride[0];
        for (int x = 0; x < f->width; x++) {
            row[3 * x + 0] = (uint8_t)tri(x, 512);
            row[3 * x + 1] = (uint8_t)tri(y, 256);
            row[3 * x + 2] = (uint8_t)tri(x + 2 * y, 1536);
        }
    }
}

/* Y = tri(x + y, 512), U = tri(x, 256), V = tri(y, 128) (chroma coordinates). */
static void fill_nv12(pf_frame *f)
{
    for (int y = 0; y < f->height; y++)
        for (int x = 0; x < f->width; x++)
            f->data[0][(size_t)y * f->stride[0] + (size_t)x] = (uint8_t)tri(x + y, 512);
    for (int y = 0; y < (f->height + 1) / 2; y++)
        for (int x = 0; x < (f->width + 1) / 2; x++) {
            uint8_t *uv = f->data[1] + (size_t)y * f->stride[1] + 2 * (size_t)x;
            uv[0] = (uint8_t)tri(x, 256);
            uv[1] = (uint8_t)tri(y, 128);
        }
}

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
    int iters_given = 0;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--iters")) iters_given = 1;
    bench_args args = {.prog = PROG, .iters = 50, .max_iters = 100000,
                       .iters_help = "timed frames per case (default 50; 20 on the CPU)"};
    pf_device *dev = NULL;
    int rc = bench_start(argc, argv, &args, &dev);
    if (rc >= 0) return rc;
    const int is_cpu = pf_device_get_type(dev) == PF_DEVICE_CPU;
    const int iters = iters_given ? args.iters : (is_cpu ? 20 : 50);
    const int warm = is_cpu ? 2 : 5;
    const int copy_iters = is_cpu ? 5 : 20;
    const pf_device_props *props = pf_device_props_get(dev);

    pf_stream_params sp = pf_stream_params_default();
    sp.device = dev;
    pf_stream *s = NULL;
    if (pf_stream_create(&sp, &s) != PF_OK) return fail("pf_stream_create");
    pf_event *e0 = NULL, *e1 = NULL;
    if (pf_event_create(dev, &e0) != PF_OK || pf_event_create(dev, &e1) != PF_OK)
        return fail("pf_event_create");
    pf_ops_params op = pf_ops_params_default();
    op.stream = s;
    pf_ops *ops = NULL;
    if (pf_ops_create(&op, &ops) != PF_OK) return fail("pf_ops_create");
    pf_allocator_params ap = pf_allocator_params_default();
    ap.device = dev;
    ap.name = PROG;
    pf_allocator *alloc = NULL;
    if (pf_allocator_create(&ap, &alloc) != PF_OK) return fail("pf_allocator_create");

    pf_frame hrgb = {0}, hnv = {0}, rgb = {0}, nv = {0}, small = {0}, big = {0};
    if (pf_frame_alloc(&hrgb, PF_PIXFMT_RGB24, SRC_W, SRC_H, NULL, NULL) != PF_OK ||
        pf_frame_alloc(&hnv, PF_PIXFMT_NV12, SRC_W, SRC_H, NULL, NULL) != PF_OK ||
        pf_frame_alloc(&rgb, PF_PIXFMT_RGB24, SRC_W, SRC_H, alloc, s) != PF_OK ||
        pf_frame_alloc(&nv, PF_PIXFMT_NV12, SRC_W, SRC_H, alloc, s) != PF_OK ||
        pf_frame_alloc(&small, PF_PIXFMT_RGB24, DST_W, DST_H, alloc, s) != PF_OK ||
        pf_frame_alloc(&big, PF_PIXFMT_RGB24, SRC_W, SRC_H, alloc, s) != PF_OK)
        return fail("frames");
    fill_rgb(&hrgb);
    fill_nv12(&hnv);
    if (pf_frame_copy_async(&rgb, &hrgb, s) != PF_OK || pf_frame_copy_async(&nv, &hnv, s) != PF_OK)
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

    /* Copy bandwidth in the same run: device-to-device, read + write. */
    pf_buffer *ca = NULL, *cb = NULL;
    if (pf_allocator_alloc(alloc, COPY_BYTES, s, &ca) != PF_OK ||
        pf_allocator_alloc(alloc, COPY_BYTES, s, &cb) != PF_OK)
        return fail("copy buffers");
    if (pf_memset_async(s, pf_buffer_data(ca), 0x5A, COPY_BYTES) != PF_OK ||
        pf_memset_async(s, pf_buffer_data(cb), 0x00, COPY_BYTES) != PF_OK)
        return fail("pf_memset_async");
    for (int i = -2; i < copy_iters; i++) {
        if (pf_event_record(e0, s) != PF_OK ||
            pf_memcpy_async(s, pf_buffer_data(cb), pf_buffer_data(ca), COPY_BYTES) != PF_OK ||
            pf_event_record(e1, s) != PF_OK || pf_event_synchronize(e1) != PF_OK)
            return fail("copy");
        float t = 0;
        if (pf_event_elapsed_ms(e0, e1, &t) != PF_OK) return fail("pf_event_elapsed_ms");
        if (i >= 0) ms[i] = t;
    }
    const double copy_ms = bench_median(ms, copy_iters);
    const double copy_gbps = 2.0 * (double)COPY_BYTES / (copy_ms * 1e-3) / 1e9;
    pf_buffer_unref(&ca);
    pf_buffer_unref(&cb);

    for (int c = 0; c < ncases; c++) {
        bench_case *bc = &cases[c];
        bc->bytes = frame_bytes(bc->src) + frame_bytes(bc->dst);
        for (int i = -warm; i < iters; i++) {
            if (pf_event_record(e0, s) != PF_OK) return fail("pf_event_record");
            pf_status st = bc->kind == 0 ? pf_ops_resize(ops, bc->src, bc->dst, bc->interp)
                                         : pf_ops_convert(ops, bc->src, bc->dst, NULL);
            if (st != PF_OK) return fail(bc->name);
            if (pf_event_record(e1, s) != PF_OK || pf_event_synchronize(e1) != PF_OK)
                return fail("pf_event_record");
            float t = 0;
            if (pf_event_elapsed_ms(e0, e1, &t) != PF_OK) return fail("pf_event_elapsed_ms");
            if (i >= 0) ms[i] = t;
        }
        bc->median_us = 1e3 * bench_median(ms, iters);
        bc->min_us = 1e3 * ms[0];
        bc->share = (double)bc->bytes / (bc->median_us * 1e-6) / (copy_gbps * 1e9);
        if (output_mean(bc->dst, s, &bc->mean_out) != 0) return fail("output download");
    }

    if (args.json) {
        printf("{\"bench\":\"resize\",\"impl\":\"pixflow\",\"device\":\"%s\",\"device_name\":\"",
               pf_device_spec(dev));
        bench_json_str(props->name);
        printf("\",\"iters\":%d,\"warmup\":%d,\"timing\":\"events\",\"copy_gbps\":%.2f,"
               "\"copy_bytes\":%zu,\"cases\":[",
               iters, warm, copy_gbps, 2 * COPY_BYTES);
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
               pf_device_spec(dev), props->name, iters, warm);
        printf("%-42s %10s %10s %9s %8s %7s %11s\n", "", "median us", "fastest us", "MB moved",
               "GB/s", "share", "output mean");
        for (int c = 0; c < ncases; c++)
            printf("%-42s %10.1f %10.1f %9.2f %8.1f %6.1f%% %11.3f\n", cases[c].name,
                   cases[c].median_us, cases[c].min_us, cases[c].bytes / 1e6,
                   (double)cases[c].bytes / (cases[c].median_us * 1e-6) / 1e9,
                   100.0 * cases[c].share, cases[c].mean_out);
        printf("\ncopy bandwidth (%s 256 MiB, read + write): %.1f GB/s; share = (source + output "
               "bytes) / median time / copy bandwidth\n",
               is_cpu ? "host memcpy" : "device-to-device", copy_gbps);
    }

    free(ms);
    pf_frame_unref(&hrgb);
    pf_frame_unref(&hnv);
    pf_frame_unref(&rgb);
    pf_frame_unref(&nv);
    pf_frame_unref(&small);
    pf_frame_unref(&big);
    pf_allocator_destroy(&alloc);
    pf_ops_destroy(&ops);
    pf_event_destroy(&e0);
    pf_event_destroy(&e1);
    pf_stream_destroy(&s);
    return 0;
}
