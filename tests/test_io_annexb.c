/* The demuxer's packet mode (video_impl.h, pf_ffdec_open_packets), which
 * feeds NVDEC from any container: on this machine's CPU, every access unit
 * it gives must be Annex B, and the elementary stream they make must
 * decode (with FFmpeg's CPU decoder) to exactly the frames of the original
 * file, in number and in every byte, with the packets' pts the frames'
 * presentation times. Clips are made at test time by the ffmpeg tool: H.264
 * with B-frames in MP4 (length-prefixed: the filter runs), HEVC in MKV,
 * H.264 in MPEG-TS (Annex B already: no filter) and in MOV with AAC audio;
 * VP9 and 10-bit H.264 must come back as "not packets" with the CPU decoder
 * open and working. A cut MP4 gives its whole packets and a counted damage,
 * never a crash. Without the ffmpeg tool or FFmpeg in the build: skipped. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/video_impl.h"
#include "pf_test.h"
#include "pixflow/io.h"

static char dir[256];

static bool have_ffmpeg_tool(void)
{
    return pf_io_have_ffmpeg() && system("ffmpeg -hide_banner -version >/dev/null 2>&1") == 0;
}

/* ffmpeg -f lavfi testsrc2 (every frame differs) -> dir/name with `codec`. */
static bool make_clip(const char *name, const char *codec_args, const char *extra_in)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "ffmpeg -hide_banner -nostdin -loglevel error -y -f lavfi -i "
             "testsrc2=size=96x64:rate=25:duration=1.2 %s %s '%s/%s' </dev/null",
             extra_in, codec_args, dir, name);
    return system(cmd) == 0;
}

static void path_of(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", dir, name);
}

/* Reads every frame of `path` (container: NULL = guess) on the CPU as I420. */
static int decode_all(const char *path, const char *container, pf_frame *frames, int max)
{
    pf_video_reader_params p = pf_video_reader_params_default();
    p.path = path;
    p.container = container;
    p.format = PF_PIXFMT_I420;
    p.pool_size = max + 2;
    pf_video_reader *r = NULL;
    if (pf_video_reader_create(&p, &r) != PF_OK) {
        printf("     open %s: %s\n", path, pf_last_error());
        return -1;
    }
    int n = 0;
    pf_frame f;
    while (n < max && pf_video_reader_read(r, &f) == PF_OK) frames[n++] = f;
    pf_video_reader_destroy(&r);
    return n;
}

static bool same_pixels(const pf_frame *a, const pf_frame *b)
{
    if (a->width != b->width || a->height != b->height) return false;
    for (int pl = 0; pl < 3; pl++) {
        int w = pl ? (a->width + 1) / 2 : a->width, h = pl ? (a->height + 1) / 2 : a->height;
        for (int y = 0; y < h; y++)
            if (memcmp(a->data[pl] + (size_t)y * a->stride[pl],
                       b->data[pl] + (size_t)y * b->stride[pl], (size_t)w) != 0)
                return false;
    }
    return true;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

#define MAXF 64

/* Packets of `name` -> an elementary stream; it and the original decode to
 * the same frames; the packets' pts sorted are the frames' pts. */
static void check_packets(const char *name, pf_es_codec want)
{
    char path[512], es[520];
    path_of(path, sizeof path, name);
    snprintf(es, sizeof es, "%s.es", path);
    pf_video_reader_params p = pf_video_reader_params_default();
    p.path = path;
    pf_ffdec *d = NULL;
    pf_video_info info;
    memset(&info, 0, sizeof info);
    bool packets = false;
    pf_es_codec codec = PF_ES_UNKNOWN;
    CHECK_OK(pf_ffdec_open_packets(&p, name, NULL, &d, &info, &packets, &codec));
    REQUIRE(d && packets);
    CHECK_EQ_INT(codec, want);
    CHECK_EQ_INT(info.width, 96);
    CHECK_EQ_INT(info.height, 64);
    FILE *fp = fopen(es, "wb");
    REQUIRE(fp);
    pf_video_reader_stats stats;
    memset(&stats, 0, sizeof stats);
    int64_t pts[MAXF];
    int n = 0, annexb = 0, params_first = 0;
    const uint8_t *au;
    size_t size;
    int64_t t;
    pf_status st;
    while ((st = pf_ffdec_read_au(d, &au, &size, &t, &stats)) == PF_OK && n < MAXF) {
        bool sc = size >= 4 && au[0] == 0 && au[1] == 0 && (au[2] == 1 || (au[2] == 0 && au[3] == 1));
        annexb += sc;
        if (n == 0 && sc) { /* the first unit starts with a parameter set */
            size_t k = au[2] == 1 ? 3 : 4;
            int type = want == PF_ES_H264 ? au[k] & 0x1f : (au[k] >> 1) & 0x3f;
            params_first = want == PF_ES_H264 ? type == 7 || type == 9 || type == 6
                                              : type == 32 || type == 35 || type == 39;
        }
        pts[n++] = t;
        CHECK(fwrite(au, 1, size, fp) == size);
    }
    fclose(fp);
    CHECK_EQ_INT(st, PF_EOF);
    CHECK_EQ_INT(annexb, n);
    CHECK(params_first);
    CHECK_EQ_INT((int)stats.packets, n);
    CHECK_EQ_INT((int)stats.corrupt_packets, 0);
    pf_ffdec_close(&d);

    static pf_frame a[MAXF], b[MAXF];
    int na = decode_all(path, NULL, a, MAXF);
    int nb = decode_all(es, want == PF_ES_H264 ? "h264" : "hevc", b, MAXF);
    CHECK_EQ_INT(na, 30);
    CHECK_EQ_INT(nb, na);
    CHECK_EQ_INT(n, na);
    int same = 0;
    for (int i = 0; i < na && i < nb; i++) same += same_pixels(&a[i], &b[i]);
    CHECK_EQ_INT(same, na);
    /* Packets carry presentation times in decode order; sorted, they are
     * the decoded frames' pts (what NVDEC's parser hands out). */
    qsort(pts, (size_t)n, sizeof pts[0], cmp_i64);
    int pts_same = 0;
    for (int i = 0; i < na && i < n; i++) pts_same += pts[i] == a[i].pts;
    CHECK_EQ_INT(pts_same, na);
    for (int i = 0; i < na; i++) pf_frame_unref(&a[i]);
    for (int i = 0; i < nb; i++) pf_frame_unref(&b[i]);
}

static void test_mp4_h264_bframes(void)
{
    REQUIRE(make_clip("a.mp4", "-c:v libx264 -bf 2 -g 12 -pix_fmt yuv420p", ""));
    check_packets("a.mp4", PF_ES_H264);
}

static void test_mkv_hevc(void)
{
    REQUIRE(make_clip("b.mkv", "-c:v libx265 -x265-params log-level=error -pix_fmt yuv420p", ""));
    check_packets("b.mkv", PF_ES_HEVC);
}

static void test_ts_h264(void)
{
    REQUIRE(make_clip("c.ts", "-c:v libx264 -bf 2 -pix_fmt yuv420p -f mpegts", ""));
    check_packets("c.ts", PF_ES_H264);
}

static void test_mov_with_audio(void)
{
    REQUIRE(make_clip("d.mov", "-map 0:v -map 1:a -c:v libx264 -pix_fmt yuv420p -c:a aac -shortest",
                      "-f lavfi -i sine=frequency=440:duration=1.2"));
    check_packets("d.mov", PF_ES_H264);
}

/* Not for NVDEC: the CPU decoder is opened instead and reads every frame. */
static void check_cpu_fallback(const char *name)
{
    char path[512];
    path_of(path, sizeof path, name);
    pf_video_reader_params p = pf_video_reader_params_default();
    p.path = path;
    pf_ffdec *d = NULL;
    pf_video_info info;
    memset(&info, 0, sizeof info);
    bool packets = true;
    pf_es_codec codec = PF_ES_H264;
    CHECK_OK(pf_ffdec_open_packets(&p, name, NULL, &d, &info, &packets, &codec));
    REQUIRE(d);
    CHECK(!packets);
    CHECK_EQ_INT(codec, PF_ES_UNKNOWN);
    const uint8_t *au;
    size_t size;
    int64_t t;
    pf_video_reader_stats stats;
    memset(&stats, 0, sizeof stats);
    CHECK(pf_ffdec_read_au(d, &au, &size, &t, &stats) == PF_ERR_INVALID);
    pf_frame f = {0};
    REQUIRE(pf_frame_alloc(&f, PF_PIXFMT_I420, info.width, info.height, NULL, NULL) == PF_OK);
    int n = 0;
    while (pf_ffdec_read(d, &f, &stats) == PF_OK) n++;
    CHECK_EQ_INT(n, 30);
    pf_frame_unref(&f);
    pf_ffdec_close(&d);
}

static void test_vp9_falls_back(void)
{
    REQUIRE(make_clip("e.webm", "-c:v libvpx-vp9 -deadline realtime -pix_fmt yuv420p", ""));
    check_cpu_fallback("e.webm");
}

static void test_h264_10bit_falls_back(void)
{
    REQUIRE(make_clip("f.mp4", "-c:v libx264 -pix_fmt yuv420p10le", ""));
    check_cpu_fallback("f.mp4");
}

/* An MP4 cut in its media data: whole packets come out, the rest is
 * counted as damage or ends the stream; no crash, no hang. */
static void test_cut_mp4(void)
{
    char path[512], cut[512];
    path_of(cut, sizeof cut, "cut.mp4");
    REQUIRE(make_clip("g.mp4", "-c:v libx264 -bf 2 -pix_fmt yuv420p -movflags +faststart", ""));
    path_of(path, sizeof path, "g.mp4");
    struct stat sb;
    REQUIRE(stat(path, &sb) == 0);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "head -c %lld '%s' > '%s'", (long long)(sb.st_size * 2 / 3), path,
             cut);
    REQUIRE(system(cmd) == 0);
    pf_video_reader_params p = pf_video_reader_params_default();
    p.path = cut;
    pf_ffdec *d = NULL;
    pf_video_info info;
    bool packets = false;
    pf_es_codec codec;
    CHECK_OK(pf_ffdec_open_packets(&p, "cut.mp4", NULL, &d, &info, &packets, &codec));
    REQUIRE(d && packets);
    pf_video_reader_stats stats;
    memset(&stats, 0, sizeof stats);
    const uint8_t *au;
    size_t size;
    int64_t t;
    int n = 0;
    pf_status st;
    while ((st = pf_ffdec_read_au(d, &au, &size, &t, &stats)) == PF_OK) n++;
    CHECK_EQ_INT(st, PF_EOF);
    CHECK(n > 5 && n < 30);
    CHECK(stats.corrupt_packets >= 1);
    pf_ffdec_close(&d);
}

int main(void)
{
    if (!have_ffmpeg_tool()) {
        printf("SKIP: no ffmpeg tool or no FFmpeg in the build\n");
        return 77;
    }
    snprintf(dir, sizeof dir, "/tmp/pf-annexb-XXXXXX");
    if (!mkdtemp(dir)) return 1;
    PF_RUN(test_mp4_h264_bframes);
    PF_RUN(test_mkv_hevc);
    PF_RUN(test_ts_h264);
    PF_RUN(test_mov_with_audio);
    PF_RUN(test_vp9_falls_back);
    PF_RUN(test_h264_10bit_falls_back);
    PF_RUN(test_cut_mp4);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("could not remove %s\n", dir);
    return pf_test_finish();
}
