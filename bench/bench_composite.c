/* bench_composite: background replacement of a 1080p frame with a model-size
 * mask (the segmentation job's last step), one pf_ops_composite per frame.
 *
 *   bench_composite [--device SPEC] [--iters N] [--json]
 *
 * Cases (all 1920x1080, mask f32 [1, 1, 256, 256] upsampled in the kernel):
 *   rgb24 -> rgb24 over a colour; over a 1080p rgb24 image; over the frame
 *   blurred with sigma 4 (full resolution) and sigma 32 (the downscaled
 *   path); nv12 -> nv12 over a colour and over the blur with sigma 32.
 * Inputs are generated patterns (integer triangle waves and an ellipse mask
 * that bench/peer_torch_composite.py reproduces) in the device's memory.
 * Each frame is timed alone between two pf_events after a warm-up; the
 * table gives the median and the fastest in µs per frame.
 *
 * The floor: the bytes an ideal kernel must move - frame, mask and image
 * read once, output written once (blur intermediates are the
 * implementation's business, not counted) - over the copy bandwidth
 * measured in the same run (a 256 MiB device-to-device pf_memcpy_async,
 * read + write bytes). "Share" = floor / median: the fraction of copy
 * bandwidth the op reaches.
 *
 * On the CPU device the same runs on the pf_ops thread pool (default 3
 * frames per case instead of 50) and the copy is a host memcpy. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "pixflow/pixflow.h"

#define PROG "bench_composite"
#define W 1920
#define H 1080
#define MASK 256
#define COPY_BYTES ((size_t)256 << 20)

static int fail(const char *what) { return bench_fail(PROG, what); }

/* Triangle wave of period p (even) over 0..255, integer-exact. */
static int tri(int t, int p) { return abs((t % p) - p / 2) * 510 / p; }

static void fill_rgb(pf_frame *f, int variant)
{
    for (int y = 0; y < f->height; y++) {
        uint8_t *row = f->data[0] + (size_t)y * f->stride[0];
        for (int x = 0; x < f->width; x++) {
            row[3 * x + 0] = (uint8_t)tri(x + 64 * variant, 512);
            row[3 * x + 1] = (uint8_t)tri(y + 32 * variant, 256);
            row[3 * x + 2] = (uint8_t)tri(x + 2 * y, variant ? 640 : 1536);
        }
    }
}

/* Y a triangle wave in 16..235, chroma in 16..240 (limited range). */
static void fill_nv12(pf_frame *f)
{
    for (int y = 0; y < f->height; y++)
        for (int x = 0; x < f->width; x++)
            f->data[0][(size_t)y * f->stride[0] + x] = (uint8_t)(16 + tri(x + y, 512) * 219 / 255);
    for (int y = 0; y < (f->height + 1) / 2; y++)
        for (int x = 0; x < (f->width + 1) / 2; x++) {
            uint8_t *uv = f->data[1] + (size_t)y * f->stride[1] + 2 * (size_t)x;
            uv[0] = (uint8_t)(16 + tri(x, 256) * 224 / 255);
            uv[1] = (uint8_t)(16 + tri(y, 128) * 224 / 255);
        }
}

/* A soft ellipse (a person-like blob): 1 inside, 0 outside, a ramp of
 * about 1/8 of the radius between. Exact in float for the peer. */
static void fill_mask(float *m)
{
    for (int y = 0; y < MASK; y++)
        for (int x = 0; x < MASK; x++) {
            float dx = (x - 128.0f) / 70.0f, dy = (y - 150.0f) / 110.0f;
            float v = (1.0f - (dx * dx + dy * dy)) * 4.0f;
            m[y * MASK + x] = v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
        }
}

typedef struct bench_case {
    const char *name;
    pf_pixfmt fmt;          /* frame and output */
    pf_background_kind kind;
    float sigma;
    double median_us, min_us, floor_us;
    size_t bytes;
    double mean[3];         /* of the output's first plane bytes per channel (NV12: Y only) */
} bench_case;

int main(int argc, char **argv)
{
    int iters_given = 0;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--iters")) iters_given = 1;
    bench_args args = {.prog = PROG, .iters = 50, .max_iters = 100000,
                       .iters_help = "timed frames per case (default 50; 3 on the CPU)"};
    pf_device *dev = NULL;
    int rc = bench_start(argc, argv, &args, &dev);
    if (rc >= 0) return rc;
    const int is_cpu = pf_device_get_type(dev) == PF_DEVICE_CPU;
    const int iters = iters_given ? args.iters : (is_cpu ? 3 : 50);
    const int warm = is_cpu ? 1 : 5;
    const int copy_iters = is_cpu ? 3 : 10;
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

    /* Inputs: generated on the host, copied to the device once. */
    pf_frame h_rgb = {0}, h_img = {0}, h_nv = {0}, rgb = {0}, img = {0}, nv = {0};
    pf_frame out_rgb = {0}, out_nv = {0}, back = {0};
    if (pf_frame_alloc(&h_rgb, PF_PIXFMT_RGB24, W, H, NULL, NULL) != PF_OK ||
        pf_frame_alloc(&h_img, PF_PIXFMT_RGB24, W, H, NULL, NULL) != PF_OK ||
        pf_frame_alloc(&h_nv, PF_PIXFMT_NV12, W, H, NULL, NULL) != PF_OK ||
        pf_frame_alloc(&rgb, PF_PIXFMT_RGB24, W, H, alloc, s) != PF_OK ||
        pf_frame_alloc(&img, PF_PIXFMT_RGB24, W, H, alloc, s) != PF_OK ||
        pf_frame_alloc(&nv, PF_PIXFMT_NV12, W, H, alloc, s) != PF_OK ||
        pf_frame_alloc(&out_rgb, PF_PIXFMT_RGB24, W, H, alloc, s) != PF_OK ||
        pf_frame_alloc(&out_nv, PF_PIXFMT_NV12, W, H, alloc, s) != PF_OK)
        return fail("frames");
    fill_rgb(&h_rgb, 0);
    fill_rgb(&h_img, 1);
    fill_nv12(&h_nv);
    if (pf_frame_copy_async(&rgb, &h_rgb, s) != PF_OK ||
        pf_frame_copy_async(&img, &h_img, s) != PF_OK ||
        pf_frame_copy_async(&nv, &h_nv, s) != PF_OK)
        return fail("frame upload");
    pf_tensor h_mask = {0}, mask = {0};
    const int64_t mshape[4] = {1, 1, MASK, MASK};
    if (pf_tensor_alloc(&h_mask, PF_DTYPE_F32, 4, mshape, PF_LAYOUT_NCHW, NULL, NULL) != PF_OK ||
        pf_tensor_alloc(&mask, PF_DTYPE_F32, 4, mshape, PF_LAYOUT_NCHW, alloc, s) != PF_OK)
        return fail("mask");
    fill_mask(h_mask.data);
    if (pf_memcpy_async(s, mask.data, h_mask.data, pf_tensor_nbytes(&h_mask)) != PF_OK)
        return fail("mask upload");

    bench_case cases[] = {
        {"rgb24 colour", PF_PIXFMT_RGB24, PF_BG_COLOR, 0, 0, 0, 0, 0, {0}},
        {"rgb24 image 1080p", PF_PIXFMT_RGB24, PF_BG_IMAGE, 0, 0, 0, 0, 0, {0}},
        {"rgb24 blur sigma 4", PF_PIXFMT_RGB24, PF_BG_BLUR, 4.0f, 0, 0, 0, 0, {0}},
        {"rgb24 blur sigma 32", PF_PIXFMT_RGB24, PF_BG_BLUR, 32.0f, 0, 0, 0, 0, {0}},
        {"nv12 colour", PF_PIXFMT_NV12, PF_BG_COLOR, 0, 0, 0, 0, 0, {0}},
        {"nv12 blur sigma 32", PF_PIXFMT_NV12, PF_BG_BLUR, 32.0f, 0, 0, 0, 0, {0}},
    };
    const int ncases = (int)(sizeof cases / sizeof cases[0]);
    const int most = iters > copy_iters ? iters : copy_iters;
    double *us = malloc(sizeof(double) * (size_t)most);
    if (!us) return fail("host memory");

    for (int c = 0; c < ncases; c++) {
        bench_case *bc = &cases[c];
        const int yuv = bc->fmt == PF_PIXFMT_NV12;
        pf_frame *in = yuv ? &nv : &rgb, *out = yuv ? &out_nv : &out_rgb;
        pf_background bg = {.kind = bc->kind, .color = {0, 177, 64}, .blur_sigma = bc->sigma};
        if (bc->kind == PF_BG_IMAGE) bg.image = &img;
        for (int i = -warm; i < iters; i++) {
            if (pf_event_record(e0, s) != PF_OK) return fail("pf_event_record");
            if (pf_ops_composite(ops, in, &mask, &bg, out) != PF_OK)
                return fail("pf_ops_composite");
            if (pf_event_record(e1, s) != PF_OK) return fail("pf_event_record");
            if (pf_event_synchronize(e1) != PF_OK) return fail("pf_event_synchronize");
            float ms = 0;
            if (pf_event_elapsed_ms(e0, e1, &ms) != PF_OK) return fail("pf_event_elapsed_ms");
            if (i >= 0) us[i] = 1e3 * ms;
        }
        bc->median_us = bench_median(us, iters);
        bc->min_us = us[0];
        const size_t frame_bytes = yuv ? (size_t)W * H * 3 / 2 : (size_t)W * H * 3;
        bc->bytes = 2 * frame_bytes + (size_t)MASK * MASK * 4 +
                    (bc->kind == PF_BG_IMAGE ? (size_t)W * H * 3 : 0);
        /* Mean of each channel of the output (NV12: the Y plane), to compare
         * with the peer. */
        memset(&back, 0, sizeof back);
        if (pf_frame_alloc(&back, bc->fmt, W, H, NULL, NULL) != PF_OK ||
            pf_frame_copy_async(&back, out, s) != PF_OK || pf_stream_synchronize(s) != PF_OK)
            return fail("output download");
        const int nch = yuv ? 1 : 3;
        for (int k = 0; k < 3; k++) bc->mean[k] = 0;
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                for (int k = 0; k < nch; k++)
                    bc->mean[k] += back.data[0][(size_t)y * back.stride[0] + (size_t)x * nch + k];
        for (int k = 0; k < nch; k++) bc->mean[k] /= (double)W * H;
        pf_frame_unref(&back);
    }

    /* Copy bandwidth in the same run: device-to-device, read + write. */
    pf_buffer *ca = NULL, *cb = NULL;
    if (pf_allocator_alloc(alloc, COPY_BYTES, s, &ca) != PF_OK ||
        pf_allocator_alloc(alloc, COPY_BYTES, s, &cb) != PF_OK)
        return fail("copy buffers");
    if (pf_memset_async(s, pf_buffer_data(ca), 0x5A, COPY_BYTES) != PF_OK)
        return fail("pf_memset_async");
    for (int i = -2; i < copy_iters; i++) {
        if (pf_event_record(e0, s) != PF_OK ||
            pf_memcpy_async(s, pf_buffer_data(cb), pf_buffer_data(ca), COPY_BYTES) != PF_OK ||
            pf_event_record(e1, s) != PF_OK || pf_event_synchronize(e1) != PF_OK)
            return fail("copy");
        float ms = 0;
        if (pf_event_elapsed_ms(e0, e1, &ms) != PF_OK) return fail("pf_event_elapsed_ms");
        if (i >= 0) us[i] = 1e3 * ms;
    }
    const double copy_us = bench_median(us, copy_iters);
    const double copy_gbps = 2.0 * (double)COPY_BYTES / (copy_us * 1e-6) / 1e9;
    pf_buffer_unref(&ca);
    pf_buffer_unref(&cb);
    for (int c = 0; c < ncases; c++)
        cases[c].floor_us = (double)cases[c].bytes / (copy_gbps * 1e9) * 1e6;

    if (args.json) {
        printf("{\"bench\":\"composite\",\"impl\":\"pixflow\",\"device\":\"%s\",\"device_name\":\"",
               pf_device_spec(dev));
        bench_json_str(props->name);
        printf("\",\"frame\":\"%dx%d\",\"mask\":\"f32 %dx%d\",\"iters\":%d,\"warmup\":%d,"
               "\"timing\":\"events\",\"copy_gbps\":%.2f,\"copy_bytes\":%zu,\"cases\":[",
               W, H, MASK, MASK, iters, warm, copy_gbps, 2 * COPY_BYTES);
        for (int c = 0; c < ncases; c++) {
            const bench_case *bc = &cases[c];
            printf("%s{\"name\":\"%s\",\"median_us\":%.2f,\"min_us\":%.2f,\"bytes\":%zu,"
                   "\"floor_us\":%.2f,\"share_of_copy_bandwidth\":%.4f,"
                   "\"output_mean\":[%.3f,%.3f,%.3f]}",
                   c ? "," : "", bc->name, bc->median_us, bc->min_us, bc->bytes, bc->floor_us,
                   bc->floor_us / bc->median_us, bc->mean[0], bc->mean[1], bc->mean[2]);
        }
        printf("]}\n");
    } else {
        printf("bench_composite on %s (%s): %dx%d frame, f32 %dx%d mask upsampled in the op\n",
               pf_device_spec(dev), props->name, W, H, MASK, MASK);
        printf("%d frames per case after %d warm-up, each alone between two events\n\n", iters,
               warm);
        printf("%-22s %11s %11s %10s %10s %7s   %s\n", "case", "median us", "fastest us",
               "MB moved", "floor us", "share", "output mean (nv12: Y)");
        for (int c = 0; c < ncases; c++) {
            const bench_case *bc = &cases[c];
            printf("%-22s %11.1f %11.1f %10.2f %10.2f %6.1f%%   %.2f %.2f %.2f\n", bc->name,
                   bc->median_us, bc->min_us, bc->bytes / 1e6, bc->floor_us,
                   100.0 * bc->floor_us / bc->median_us, bc->mean[0], bc->mean[1], bc->mean[2]);
        }
        printf("\ncopy bandwidth (%s 256 MiB, read + write): %.1f GB/s\n",
               is_cpu ? "host memcpy" : "device-to-device", copy_gbps);
        printf("floor = (frame + mask + image read, output written) / copy bandwidth\n");
    }

    free(us);
    pf_tensor_unref(&mask);
    pf_tensor_unref(&h_mask);
    pf_frame_unref(&out_rgb);
    pf_frame_unref(&out_nv);
    pf_frame_unref(&rgb);
    pf_frame_unref(&img);
    pf_frame_unref(&nv);
    pf_frame_unref(&h_rgb);
    pf_frame_unref(&h_img);
    pf_frame_unref(&h_nv);
    pf_allocator_destroy(&alloc);
    pf_ops_destroy(&ops);
    pf_event_destroy(&e0);
    pf_event_destroy(&e1);
    pf_stream_destroy(&s);
    return 0;
}
