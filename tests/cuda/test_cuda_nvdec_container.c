/* NVDEC for every container (video_reader.c, packet mode of
 * video_ffmpeg.c): an MP4 (H.264 with B-frames and AAC audio), an MKV
 * (HEVC) and an MPEG-TS (H.264) read with prefer_device on the GPU must
 * decode on NVDEC and give exactly the frames FFmpeg's CPU decoder gives
 * for the same file (H.264/HEVC decoding is exact), with the same pts,
 * index and count, with one decoder and with three GOP by GOP (each
 * demuxing the file itself); a 10-bit HEVC MKV, which NVDEC here does not take,
 * must fall back to the CPU and still read every frame. Realtime pacing
 * by container pts: 30 frames at 24 fps take about 1.2 s.
 *
 * Inputs: $PF_SOURCE_DIR/.data/jobcheck/ (scripts/make-jobcheck-sample.sh:
 * clip.mp4, clip_hevc.mkv, clip.ts, clip10.mkv). Exits 77 without a GPU,
 * NVDEC, FFmpeg in the build or the files. */
#include <stdlib.h>
#include <time.h>

#include "cuda_test_util.h"
#include "io/nvdec.h"
#include "pixflow/io.h"

#define MAXF 256

static pf_device *g_dev;
static pf_stream *g_stream;
static char g_dir[1024];

static bool exists(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* NV12 host copy of any frame. */
static bool to_host(const pf_frame *f, pf_frame *h)
{
    pf_status st = pf_frame_alloc(h, PF_PIXFMT_NV12, f->width, f->height, NULL, NULL);
    if (st == PF_OK) st = pf_frame_copy_async(h, f, g_stream);
    if (st == PF_OK) st = pf_stream_synchronize(g_stream);
    CHECK_OK(st);
    return st == PF_OK;
}

static bool same_nv12(const pf_frame *a, const pf_frame *b)
{
    if (a->width != b->width || a->height != b->height) return false;
    for (int y = 0; y < a->height; y++)
        if (memcmp(a->data[0] + (size_t)y * a->stride[0], b->data[0] + (size_t)y * b->stride[0],
                   (size_t)a->width))
            return false;
    size_t cw = 2 * (size_t)((a->width + 1) / 2);
    for (int y = 0; y < (a->height + 1) / 2; y++)
        if (memcmp(a->data[1] + (size_t)y * a->stride[1], b->data[1] + (size_t)y * b->stride[1],
                   cw))
            return false;
    return true;
}

static pf_video_reader *open_reader(const char *path, bool gpu, bool realtime)
{
    pf_video_reader_params rp = pf_video_reader_params_default();
    rp.path = path;
    rp.format = PF_PIXFMT_NV12;
    rp.pool_size = 8;
    rp.realtime = realtime;
    if (gpu) {
        rp.device = g_dev;
        rp.prefer_device = true;
    }
    pf_video_reader *r = NULL;
    CHECK_OK(pf_video_reader_create(&rp, &r));
    return r;
}

/* NVDEC vs the CPU decoder on one file, with `decoders` NVDEC decoders
 * (PIXFLOW_NVDEC_DECODERS: 1, or several GOP by GOP). */
static void check_file_with(const char *name, bool want_hw, int want_frames, const char *decoders)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    if (!exists(path)) {
        printf("  %s absent (scripts/make-jobcheck-sample.sh --force)\n", path);
        CHECK(exists(path));
        return;
    }
    setenv("PIXFLOW_NVDEC_DECODERS", decoders, 1);
    pf_video_reader *g = open_reader(path, true, false), *c = open_reader(path, false, false);
    unsetenv("PIXFLOW_NVDEC_DECODERS");
    if (!g || !c) {
        pf_video_reader_destroy(&g);
        pf_video_reader_destroy(&c);
        return;
    }
    pf_video_info gi, ci;
    CHECK_OK(pf_video_reader_info(g, &gi));
    CHECK_OK(pf_video_reader_info(c, &ci));
    CHECK_EQ_INT(gi.hw_decode, want_hw);
    CHECK(!want_hw || strstr(gi.decoder, "nvdec") != NULL);
    CHECK_EQ_INT(gi.width, ci.width);
    CHECK_EQ_INT(gi.height, ci.height);
    CHECK_EQ_INT(gi.frame_count, ci.frame_count);
    CHECK(gi.fps.num * ci.fps.den == ci.fps.num * gi.fps.den);
    int n = 0, bad_pix = 0, bad_pts = 0;
    pf_status sg, sc;
    for (;;) {
        pf_frame fg = {0}, fc = {0};
        sg = pf_video_reader_read(g, &fg);
        sc = pf_video_reader_read(c, &fc);
        if (sg != PF_OK || sc != PF_OK) {
            pf_frame_unref(&fg);
            pf_frame_unref(&fc);
            break;
        }
        if (want_hw) CHECK_EQ_INT(pf_frame_domain(&fg), PF_MEM_DEVICE);
        pf_frame h = {0};
        if (to_host(&fg, &h) && !same_nv12(&h, &fc)) bad_pix++;
        /* same instant: the CPU path's pts are in the stream time base too */
        if (fg.pts * fg.time_base.num * fc.time_base.den !=
            fc.pts * fc.time_base.num * fg.time_base.den)
            bad_pts++;
        if (fg.index != n || fc.index != n) bad_pts++;
        pf_frame_unref(&h);
        pf_frame_unref(&fg);
        pf_frame_unref(&fc);
        n++;
    }
    CHECK_EQ_INT(sg, PF_EOF);
    CHECK_EQ_INT(sc, PF_EOF);
    pf_video_reader_stats gs;
    CHECK_OK(pf_video_reader_get_stats(g, &gs));
    printf("  %s: '%s' %d frames, %d pixel and %d pts mismatches, %llu packets, %llu damaged\n",
           name, gi.decoder, n, bad_pix, bad_pts, (unsigned long long)gs.packets,
           (unsigned long long)gs.corrupt_packets);
    CHECK_EQ_INT(n, want_frames);
    CHECK_EQ_INT(bad_pix, 0);
    CHECK_EQ_INT(bad_pts, 0);
    CHECK_EQ_INT((int)gs.corrupt_packets, 0);
    pf_video_reader_destroy(&g);
    pf_video_reader_destroy(&c);
}

static void check_file(const char *name, bool want_hw, int want_frames)
{
    check_file_with(name, want_hw, want_frames, "1");
    check_file_with(name, want_hw, want_frames, "3");
}

static void test_mp4_h264(void) { check_file("clip.mp4", true, 30); }
static void test_mkv_hevc(void) { check_file("clip_hevc.mkv", true, 30); }
static void test_ts_h264(void) { check_file("clip.ts", true, 30); }
static void test_hevc_10bit_on_cpu(void) { check_file("clip10.mkv", false, 30); }

/* --realtime on an NVDEC input is paced by the container's pts. */
static void test_realtime(void)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/clip.mp4", g_dir);
    pf_video_reader *r = open_reader(path, true, true);
    if (!r) return;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pf_frame f = {0};
    int n = 0;
    while (pf_video_reader_read(r, &f) == PF_OK) {
        pf_frame_unref(&f);
        n++;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("  realtime: %d frames in %.3f s\n", n, s);
    CHECK_EQ_INT(n, 30);
    CHECK(s > 1.0 && s < 1.6); /* 29 frame periods at 23.976 fps = 1.21 s */
    pf_video_reader_destroy(&r);
}

int main(void)
{
    const char *src = getenv("PF_SOURCE_DIR");
    snprintf(g_dir, sizeof g_dir, "%s/.data/jobcheck", src && *src ? src : ".");
    g_dev = pf_test_cuda_device_or_skip();
    char why[512];
    if (!pf_nvdec_available(why, sizeof why) || !pf_io_have_ffmpeg()) {
        printf("SKIP: NVDEC or FFmpeg: %s\n", pf_io_have_ffmpeg() ? why : "no FFmpeg");
        pf_test_finish();
        return 77;
    }
    char first[1100];
    snprintf(first, sizeof first, "%s/clip_hevc.mkv", g_dir);
    if (!exists(first)) {
        printf("SKIP: %s is missing (scripts/make-jobcheck-sample.sh)\n", first);
        pf_test_finish();
        return 77;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    g_stream = make_stream(g_dev, 0);
    PF_RUN(test_mp4_h264);
    PF_RUN(test_mkv_hevc);
    PF_RUN(test_ts_h264);
    PF_RUN(test_hevc_10bit_on_cpu);
    PF_RUN(test_realtime);
    pf_stream_destroy(&g_stream);
    return pf_test_finish();
}
