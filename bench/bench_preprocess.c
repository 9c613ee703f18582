/* bench_preprocess: the fused preprocess of the SPEC's target table,
 *   1920x1080 BGR24 u8 -> [N, 3, 512, 512] f16 NCHW RGB, bilinear,
 *   normalised with ImageNet mean/std, batch 1, 8 and 32,
 * against the device's own copy bandwidth measured in the same run.
 *
 *   bench_preprocess [--device SPEC] [--iters N] [--json]
 *
 * Method
 * - Inputs: 64 distinct random 1080p BGR frames (pixflow device frames,
 *   256-byte row pitch), used in rotation: 64 x 6.2 MB = 398 MB, eight times
 *   an H100/H200 L2 (50 MB), so no sample is served from a cache that real
 *   video would not have warmed either (bench/peer_torch_preprocess.py uses
 *   the same 64 frames' worth). One output tensor.
 * - A sample: [GPU only: a 64 MiB memset first, so the GPU is busy while the
 *   host issues the sample and the events time GPU work, not launch latency]
 *   event, 32 / N calls of pf_ops_preprocess on the next N frames each (every
 *   sample processes 32 frames), event. Reported: the median (and fastest)
 *   over --iters samples (default 50 on a GPU, 5 on the CPU) after warm-up, in
 *   microseconds per frame.
 * - Copy bandwidth: a 256 MiB device-to-device pf_memcpy_async between two
 *   events, median of 10, counting bytes read + written (2 x 256 MiB).
 * - Share of copy bandwidth, as the SPEC defines it: (bytes the op reads +
 *   writes) / time / copy bandwidth, where the op reads the whole source frame
 *   (1920 x 1080 x 3 = 6,220,800 B) and writes 512 x 512 x 3 x 2 = 1,572,864 B:
 *   7,793,664 B per frame. Also reported with the minimal-taps byte count:
 *   only the source pixels the bilinear taps touch (1024 columns x 1024 rows
 *   x 3 = 3,145,728 B) + the output = 4,718,592 B per frame.
 * - Correctness: the last batch-32 call's first frame is compared with the C
 *   reference on the host (f16: 1 ulp or 1e-4 (1/std + |mean/std|)); a
 *   mismatch fails the run.
 *
 * Prediction (written before the first GPU run). Minimal taps: the 4-tap
 * bilinear needs 1024 x 1024 source pixels = 3.15 MB + 1.57 MB written = 4.72
 * MB per frame, a floor of 4.72 MB / 4.0e12 B/s = 1.18 us/frame on an H200.
 * DRAM does not move bytes but 32-byte sectors, though: the taps touch columns
 * 3.75 px (11 bytes) apart and 1024 of 1080 rows, so every sector of those
 * rows is read, ~5.9 MB + 1.57 MB written ~ 7.5 MB of traffic, close to the
 * SPEC's 7.8 MB: the real floor is the SPEC's. Device copy on an H200 moves
 * ~4.0e12 B/s (read + write), an H100 ~3.0e12: floor = 7.8 MB / 4.0e12 = 1.95
 * us/frame on an H200 (the SPEC's 1.9), 2.6 us on an H100. The kernel is a
 * byte gather (12 one-byte loads per output pixel); with 32 consecutive
 * outputs per warp load (about three 128-B lines per instruction) the L1 needs
 * ~1.3 wavefronts per output pixel, below the ~2.7 cycles per pixel per SM
 * that 60% of copy bandwidth allows at batch 32 on an H200. Expected: batch 32
 * at 2.6-3.2 us/frame on an H200 (60-75% of copy bandwidth by the SPEC's
 * count); batch 1 worse (one frame is 512 blocks of 64 x 8 pixels, about 4 per
 * SM: one short wave whose ramp-up and tail are not hidden by a next frame).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "pixflow/pixflow.h"

#define PROG "bench_preprocess"
#define SRC_W 1920
#define SRC_H 1080
#define DST 512
#define POOL 64
#define PER_SAMPLE 32 /* frames per timed sample */
#define BUSY_BYTES ((size_t)64 << 20)

static const int batches[] = {1, 8, 32};
#define NB (int)(sizeof batches / sizeof batches[0])

static const double SPEC_BYTES = (double)SRC_W * SRC_H * 3 + (double)DST * DST * 3 * 2;

static int fail(const char *what) { return bench_fail(PROG, what); }

/* Distinct source indices the bilinear taps of `c` outputs over `r` inputs
 * touch (ops.h, Sampling: (i + 0.5) r / c - 0.5, taps floor and floor + 1,
 * clamped). */
static int taps_touched(int c, int r)
{
    char *seen = calloc((size_t)r, 1);
    int n = 0;
    if (!seen) return r;
    for (int i = 0; i < c; i++) {
        double s = (i + 0.5) * r / c - 0.5;
        int k0 = (int)floor(s);
        for (int k = k0; k <= k0 + 1; k++) {
            int kc = k < 0 ? 0 : (k > r - 1 ? r - 1 : k);
            if (!seen[kc]) seen[kc] = 1, n++;
        }
    }
    free(seen);
    return n;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static int half_order(uint16_t h) { return (h & 0x8000u) ? -(int)(h & 0x7FFFu) : (int)h; }

typedef struct result {
    double median_us, best_us; /* per frame */
} result;

int main(int argc, char **argv)
{
    bench_args args = {.prog = PROG, .iters = 50, .cpu_iters = 5, .max_iters = 100000,
                       .iters_help = "timed samples of 32 frames per batch size (default 50 on a "
                                     "GPU, 5 on the CPU)"};
    bench_env env;
    int rc = bench_open(argc, argv, &args, &env);
    if (rc >= 0) return rc;
    const int is_cpu = env.is_cpu, iters = args.iters;
    const int warm = is_cpu ? 1 : 3;
    pf_stream *hs = NULL; /* the host stream of the reference check */
    if (pf_stream_create(NULL, &hs) != PF_OK) return fail("pf_stream_create");

    /* Inputs: random host frames, copied to the device. */
    static pf_frame host[POOL], frames[POOL];
    for (int i = 0; i < POOL; i++) {
        if (pf_frame_alloc(&host[i], PF_PIXFMT_BGR24, SRC_W, SRC_H, NULL, NULL) != PF_OK)
            return fail("host frame");
        for (int y = 0; y < SRC_H; y++) {
            uint8_t *row = host[i].data[0] + (size_t)y * host[i].stride[0];
            for (int x = 0; x < SRC_W * 3; x += 8) {
                uint64_t r = bench_rand(&rng);
                memcpy(row + x, &r, 8); /* SRC_W * 3 is a multiple of 8 */
            }
        }
        if (pf_frame_alloc(&frames[i], PF_PIXFMT_BGR24, SRC_W, SRC_H, env.alloc, env.s) != PF_OK)
            return fail("device frame");
        if (pf_frame_copy_async(&frames[i], &host[i], env.s) != PF_OK) return fail("frame upload");
    }
    pf_tensor out = {0};
    int64_t shape[4] = {PER_SAMPLE, 3, DST, DST};
    if (pf_tensor_alloc(&out, PF_DTYPE_F16, 4, shape, PF_LAYOUT_NCHW, env.alloc, env.s) != PF_OK)
        return fail("output tensor");
    pf_buffer *ca = NULL, *cb = NULL; /* ca also keeps the GPU busy before each sample */
    if (pf_allocator_alloc(env.alloc, BENCH_COPY_BYTES, env.s, &ca) != PF_OK ||
        pf_allocator_alloc(env.alloc, BENCH_COPY_BYTES, env.s, &cb) != PF_OK)
        return fail("copy buffers");
    if (pf_memset_async(env.s, pf_buffer_data(ca), 1, BENCH_COPY_BYTES) != PF_OK ||
        pf_memset_async(env.s, pf_buffer_data(cb), 2, BENCH_COPY_BYTES) != PF_OK ||
        pf_stream_synchronize(env.s) != PF_OK)
        return fail("copy buffer init");

    pf_preprocess_params pp = pf_preprocess_params_default();
    pp.interp = PF_INTERP_BILINEAR;
    const float mean[3] = {0.485f, 0.456f, 0.406f}, stdv[3] = {0.229f, 0.224f, 0.225f};
    memcpy(pp.mean, mean, sizeof mean);
    memcpy(pp.std, stdv, sizeof stdv);

    double *samples = malloc(sizeof(double) * (size_t)(iters > 10 ? iters : 10));
    if (!samples) return fail("samples");

    /* Device copy bandwidth. */
    double copy_ms = 0, copy_gbps = 0;
    rc = bench_time_copies(&env, pf_buffer_data(cb), pf_buffer_data(ca), 10, samples, &copy_ms,
                           &copy_gbps);
    if (rc != 0) return rc;

    /* Preprocess. */
    result res[NB];
    int pos = 0, check_frame = 0;
    for (int b = 0; b < NB; b++) {
        const int n = batches[b], reps = PER_SAMPLE / n;
        pf_tensor dst = {0};
        if (pf_tensor_slice(&dst, &out, 0, 0, n) != PF_OK) return fail("pf_tensor_slice");
        for (int it = -warm; it < iters; it++) {
            if (!is_cpu &&
                pf_memset_async(env.s, pf_buffer_data(ca), it & 0xFF, BUSY_BYTES) != PF_OK)
                return fail("busy memset");
            if ((rc = bench_timer_start(&env)) != 0) return rc;
            for (int r = 0; r < reps; r++) {
                const pf_frame *srcs[PER_SAMPLE];
                check_frame = pos;
                for (int j = 0; j < n; j++) srcs[j] = &frames[(pos + j) % POOL];
                pos = (pos + n) % POOL;
                if (pf_ops_preprocess(env.ops, srcs, NULL, n, &dst, &pp, NULL) != PF_OK)
                    return fail("pf_ops_preprocess");
            }
            float ms = 0;
            if ((rc = bench_timer_stop(&env, &ms)) != 0) return rc;
            if (it >= 0) samples[it] = ms * 1e3 / PER_SAMPLE;
        }
        res[b].median_us = bench_median(samples, iters);
        res[b].best_us = samples[0];
        pf_tensor_unref(&dst);
    }

    /* The last call (batch 32) wrote frames check_frame.. into out[0..32):
     * compare out[0] with the C reference. */
    const size_t plane = (size_t)DST * DST, nvals = 3 * plane;
    uint16_t *got = malloc(nvals * 2);
    pf_tensor ref = {0};
    int64_t rshape[4] = {1, 3, DST, DST};
    if (!got || pf_tensor_alloc(&ref, PF_DTYPE_F16, 4, rshape, PF_LAYOUT_NCHW, NULL, NULL) != PF_OK)
        return fail("check buffers");
    if (pf_memcpy_async(env.s, got, out.data, nvals * 2) != PF_OK ||
        pf_stream_synchronize(env.s) != PF_OK)
        return fail("output download");
    pf_ops_params rp = pf_ops_params_default();
    rp.stream = hs;
    rp.reference = true;
    pf_ops *rops = NULL;
    const pf_frame *csrc[1] = {&host[check_frame]};
    if (pf_ops_create(&rp, &rops) != PF_OK ||
        pf_ops_preprocess(rops, csrc, NULL, 1, &ref, &pp, NULL) != PF_OK)
        return fail("reference");
    long bad = 0;
    for (size_t i = 0; i < nvals; i++) {
        int c = (int)(i / plane);
        uint16_t a = ((const uint16_t *)ref.data)[i], g = got[i];
        int ulps = abs(half_order(a) - half_order(g));
        double tol = 1e-4 * (1.0 / stdv[c] + mean[c] / stdv[c]);
        if (ulps > 1 && fabs((double)pf_f16_to_f32(a) - pf_f16_to_f32(g)) > tol) bad++;
    }

    const int cols = taps_touched(DST, SRC_W), rows = taps_touched(DST, SRC_H);
    const double min_bytes = (double)cols * rows * 3 + (double)DST * DST * 3 * 2;
    if (args.json) {
        bench_json_begin(&env, "preprocess");
        printf(",\"case\":\"1920x1080 bgr24 -> [N,3,512,512] f16 nchw rgb, bilinear, imagenet "
               "mean/std\",\"iters\":%d,\"warmup\":%d,\"frames_per_sample\":%d,\"pool_frames\":%d,"
               "\"copy_gbps\":%.1f,\"spec_bytes_per_frame\":%.0f,\"min_taps_bytes_per_frame\":%.0f,"
               "\"check_bad_values\":%ld,\"cases\":[",
               iters, warm, PER_SAMPLE, POOL, copy_gbps, SPEC_BYTES, min_bytes, bad);
        for (int b = 0; b < NB; b++) {
            double gb = SPEC_BYTES / (res[b].median_us * 1e-6) / 1e9;
            double gm = min_bytes / (res[b].median_us * 1e-6) / 1e9;
            printf("%s{\"batch\":%d,\"median_us_per_frame\":%.3f,\"best_us_per_frame\":%.3f,"
                   "\"gbps_spec\":%.1f,\"share_spec\":%.4f,\"gbps_min_taps\":%.1f,"
                   "\"share_min_taps\":%.4f}",
                   b ? "," : "", batches[b], res[b].median_us, res[b].best_us, gb, gb / copy_gbps,
                   gm, gm / copy_gbps);
        }
        printf("]}\n");
    } else {
        printf("bench_preprocess on %s (%s): 1920x1080 bgr24 -> [N,3,512,512] f16 nchw rgb, "
               "bilinear, ImageNet mean/std\n",
               pf_device_spec(env.dev), env.props->name);
        printf("%d samples of %d frames per batch size after %d warm-up; %d distinct input "
               "frames in rotation\n",
               iters, PER_SAMPLE, warm, POOL);
        printf("device copy (256 MiB, read + write): %.3f ms = %.1f GB/s\n", copy_ms, copy_gbps);
        printf("bytes per frame: SPEC count %.0f (whole frame + output), minimal taps %.0f "
               "(%d x %d source pixels + output)\n\n",
               SPEC_BYTES, min_bytes, cols, rows);
        printf("%5s %12s %12s %11s %9s %15s %12s\n", "batch", "us/frame", "best us", "GB/s SPEC",
               "of copy", "GB/s min-taps", "of copy");
        for (int b = 0; b < NB; b++) {
            double gb = SPEC_BYTES / (res[b].median_us * 1e-6) / 1e9;
            double gm = min_bytes / (res[b].median_us * 1e-6) / 1e9;
            printf("%5d %12.3f %12.3f %11.1f %8.1f%% %15.1f %11.1f%%\n", batches[b],
                   res[b].median_us, res[b].best_us, gb, 100 * gb / copy_gbps, gm,
                   100 * gm / copy_gbps);
        }
        double g32 = SPEC_BYTES / (res[NB - 1].median_us * 1e-6) / 1e9;
        printf("\nbench_preprocess: batch 32: %.2f us/frame = %.0f GB/s = %.0f%% of copy "
               "bandwidth (%.0f GB/s; SPEC target >= 60%%)\n",
               res[NB - 1].median_us, g32, 100 * g32 / copy_gbps, copy_gbps);
        printf("bench_preprocess: check vs C reference (frame %d of the last batch): %s "
               "(%zu values%s)\n",
               check_frame, bad ? "FAILED" : "ok", nvals,
               bad ? ", see the exit code" : ", f16 within 1 ulp or 1e-4 of the range");
    }

    free(got);
    free(samples);
    pf_tensor_unref(&ref);
    pf_ops_destroy(&rops);
    pf_tensor_unref(&out);
    pf_buffer_unref(&ca);
    pf_buffer_unref(&cb);
    for (int i = 0; i < POOL; i++) {
        pf_frame_unref(&frames[i]);
        pf_frame_unref(&host[i]);
    }
    bench_env_close(&env);
    pf_stream_destroy(&hs);
    if (bad) {
        fprintf(stderr, PROG ": %ld output values differ from the C reference\n", bad);
        return 1;
    }
    return 0;
}
