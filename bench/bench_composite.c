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

static int fail(const char *what) { return bench_fail(PROG, what); }

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
    bench_args args = {.prog = PROG, .iters = 50, .cpu_iters = 3, .max_iters = 100000,
                       .iters_help = "timed frames per case (default 50; 3 on the CPU)"};
    bench_env env;
    int rc = bench_open(argc, argv, &args, &env);
    if (rc >= 0) return rc;
    const int iters = args.iters;
    const int warm = env.is_cpu ? 1 : 5;
    const int copy_iters = env.is_cpu ? 3 : 10;

    /* Inputs: generated on the host, copied to the device once. */
    pf_frame h_rgb = {0}, h_img = {0}, h_nv = {0}, rgb = {0}, img = {0}, nv = {0};
    pf_frame out_rgb = {0}, out_nv = {0}, back = {0};
    if (pf_frame_alloc(&h_rgb, PF_PIXFMT_RGB24, W, H, NULL, NULL) != PF_OK ||
        pf_frame_alloc(&h_img, PF_PIXFMT_RGB24, W, H, NULL, NULL) != PF_OK ||
        pf_frame_alloc(&h_nv, PF_PIXFMT_NV12, W, H, NULL, NULL) != PF_OK ||
        pf_frame_alloc(&rgb, PF_PIXFMT_RGB24, W, H, env.alloc, env.s) != PF_OK ||
        pf_frame_alloc(&img, PF_PIXFMT_RGB24, W, H, env.alloc, env.s) != PF_OK ||
        pf_frame_alloc(&nv, PF_PIXFMT_NV12, W, H, env.alloc, env.s) != PF_OK ||
        pf_frame_alloc(&out_rgb, PF_PIXFMT_RGB24, W, H, env.alloc, env.s) != PF_OK ||
        pf_frame_alloc(&out_nv, PF_PIXFMT_NV12, W, H, env.alloc, env.s) != PF_OK)
        return fail("frames");
    bench_fill_rgb(&h_rgb, 0);
    bench_fill_rgb(&h_img, 1);
    bench_fill_nv12(&h_nv, 1); /* limited range */
    if (pf_frame_copy_async(&rgb, &h_rgb, env.s) != PF_OK ||
        pf_frame_copy_async(&img, &h_img, env.s) != PF_OK ||
        pf_frame_copy_async(&nv, &h_nv, env.s) != PF_OK)
        return fail("frame upload");
    pf_tensor h_mask = {0}, mask = {0};
    const int64_t mshape[4] = {1, 1, MASK, MASK};
    if (pf_tensor_alloc(&h_mask, PF_DTYPE_F32, 4, mshape, PF_LAYOUT_NCHW, NULL, NULL) != PF_OK ||
        pf_tensor_alloc(&mask, PF_DTYPE_F32, 4, mshape, PF_LAYOUT_NCHW, env.alloc, env.s) != PF_OK)
        return fail("mask");
    fill_mask(h_mask.data);
    if (pf_memcpy_async(env.s, mask.data, h_mask.data, pf_tensor_nbytes(&h_mask)) != PF_OK)
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
            float ms = 0;
            if ((rc = bench_timer_start(&env)) != 0) return rc;
            if (pf_ops_composite(env.ops, in, &mask, &bg, out) != PF_OK)
                return fail("pf_ops_composite");
            if ((rc = bench_timer_stop(&env, &ms)) != 0) return rc;
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
            pf_frame_copy_async(&back, out, env.s) != PF_OK ||
            pf_stream_synchronize(env.s) != PF_OK)
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

    /* Copy bandwidth in the same run. */
    double copy_gbps = 0;
    if ((rc = bench_copy_bandwidth(&env, copy_iters, us, &copy_gbps)) != 0) return rc;
    for (int c = 0; c < ncases; c++)
        cases[c].floor_us = bench_floor_s((double)cases[c].bytes, copy_gbps) * 1e6;

    if (args.json) {
        bench_json_begin(&env, "composite");
        printf(",\"frame\":\"%dx%d\",\"mask\":\"f32 %dx%d\",\"iters\":%d,\"warmup\":%d,"
               "\"timing\":\"events\",\"copy_gbps\":%.2f,\"copy_bytes\":%zu,\"cases\":[",
               W, H, MASK, MASK, iters, warm, copy_gbps, 2 * BENCH_COPY_BYTES);
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
               pf_device_spec(env.dev), env.props->name, W, H, MASK, MASK);
        bench_print_method(iters, "frames per case", warm);
        printf("%-22s %11s %11s %10s %10s %7s   %s\n", "case", "median us", "fastest us",
               "MB moved", "floor us", "share", "output mean (nv12: Y)");
        for (int c = 0; c < ncases; c++) {
            const bench_case *bc = &cases[c];
            printf("%-22s %11.1f %11.1f %10.2f %10.2f %6.1f%%   %.2f %.2f %.2f\n", bc->name,
                   bc->median_us, bc->min_us, bc->bytes / 1e6, bc->floor_us,
                   100.0 * bc->floor_us / bc->median_us, bc->mean[0], bc->mean[1], bc->mean[2]);
        }
        printf("\n");
        bench_print_copy(&env, copy_gbps);
        printf("\nfloor = (frame + mask + image read, output written) / copy bandwidth\n");
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
    bench_env_close(&env);
    return 0;
}
