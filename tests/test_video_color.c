/* Colour fidelity of video read and write (issue 13): inputs made with the
 * ffmpeg command-line tool from three known RGB stripes, in full and limited
 * range, BT.601 and BT.709 (tagged and untagged), MJPEG's yuvj420p and 10-bit
 * H.264/HEVC; the reader must report the stream's colour and give back the
 * stripes' RGB within TOL (8-bit rounding of the encode plus the decode).
 * The writer must tag its output like its params and encode RGB with that
 * matrix and range (checked by decoding with the ffmpeg tool, which reads
 * the tags, and by ffprobe). Skips (77) without FFmpeg in the build or the
 * ffmpeg/ffprobe tools. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_test.h"

/* Largest difference allowed per channel: the encodes are lossless (qp 0)
 * or near it, so what is left is 8-bit YUV rounding (up to ~2 per channel
 * after the matrix) and the 10-bit -> 8-bit step. */
#define TOL 3
/* MJPEG quantises even flat areas a little. */
#define TOL_MJPEG 5

static char tmpdir[256];

static const uint8_t stripes[3][3] = {{192, 48, 32}, {16, 200, 240}, {8, 8, 8}};

static void tmp_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", tmpdir, name);
}

static int run(const char *cmd)
{
    int rc = system(cmd);
    if (rc != 0) fprintf(stderr, "  command failed (%d): %s\n", rc, cmd);
    return rc;
}

/* Makes PATH: 3 stripes W/3 wide, H high, 2 frames; `conv` is the scale
 * filter's conversion, `enc` the codec and tag options. */
static int make_input(const char *path, int w, int h, const char *conv, const char *enc)
{
    char cmd[2048];
    int sw = w / 3;
    snprintf(cmd, sizeof cmd,
             "ffmpeg -v error -y -f lavfi -i color=c=0xC03020:s=%dx%d:r=25:d=0.08 "
             "-f lavfi -i color=c=0x10C8F0:s=%dx%d:r=25:d=0.08 "
             "-f lavfi -i color=c=0x080808:s=%dx%d:r=25:d=0.08 "
             "-filter_complex 'hstack=inputs=3,scale=%s' %s '%s' </dev/null",
             sw, h, sw, h, sw, h, conv, enc, path);
    return run(cmd);
}

/* Largest channel difference between the centre of each stripe and its RGB. */
static int stripe_error(const pf_frame *f)
{
    int worst = 0, sw = f->width / 3;
    for (int s = 0; s < 3; s++) {
        const uint8_t *px = f->data[0] + (size_t)(f->height / 2) * f->stride[0] +
                            (size_t)(s * sw + sw / 2) * 3;
        for (int c = 0; c < 3; c++) {
            int d = abs((int)px[c] - (int)stripes[s][c]);
            if (d > worst) worst = d;
        }
    }
    return worst;
}

typedef struct color_case {
    const char *name, *file;
    int w, h;
    const char *conv, *enc;
    pf_color_range range;  /* what the reader must report */
    int matrix;            /* tag read (0 = untagged) */
    int depth;
    int tol;
} color_case;

static const color_case cases[] = {
    {"601 limited, tagged", "sd601.mp4", 330, 240,
     "out_color_matrix=bt601:out_range=tv,format=yuv420p",
     "-c:v libx264 -qp 0 -colorspace smpte170m -color_primaries smpte170m -color_trc smpte170m "
     "-color_range tv",
     PF_COLOR_RANGE_LIMITED, 6, 8, TOL},
    /* Untagged HD: BT.709 as players assume (swscale alone would use 601). */
    {"709 limited, untagged HD", "hd709.mp4", 1281, 720,
     "out_color_matrix=bt709:out_range=tv,format=yuv420p", "-c:v libx264 -qp 0",
     PF_COLOR_RANGE_UNSPECIFIED, 0, 8, TOL},
    /* Full range in a yuv420p H.264 stream (VUI full-range flag). */
    {"709 full, tagged", "full709.mkv", 330, 240,
     "out_color_matrix=bt709:out_range=pc,format=yuv420p",
     "-c:v libx264 -qp 0 -colorspace bt709 -color_primaries bt709 -color_trc bt709 "
     "-color_range pc",
     PF_COLOR_RANGE_FULL, 1, 8, TOL},
    {"MJPEG yuvj420p", "mjpeg.avi", 330, 240,
     "out_color_matrix=bt601:out_range=pc,format=yuvj420p", "-c:v mjpeg -q:v 1",
     PF_COLOR_RANGE_FULL, -1, 8, TOL_MJPEG},
    {"10-bit H.264", "h264_10.mkv", 330, 240,
     "out_color_matrix=bt709:out_range=tv,format=yuv420p10le",
     "-c:v libx264 -qp 0 -colorspace bt709 -color_range tv", PF_COLOR_RANGE_LIMITED, 1, 10, TOL},
    {"10-bit HEVC", "hevc_10.mkv", 330, 240,
     "out_color_matrix=bt709:out_range=tv,format=yuv420p10le",
     "-c:v libx265 -x265-params lossless=1:log-level=error -colorspace bt709 -color_range tv",
     PF_COLOR_RANGE_LIMITED, 1, 10, TOL},
};

static void check_case(const color_case *c)
{
    char path[512];
    tmp_path(path, sizeof path, c->file);
    if (make_input(path, c->w, c->h, c->conv, c->enc) != 0) {
        /* libx265 or 10-bit libx264 may be missing from a build of FFmpeg. */
        printf("  (%s: input not made, skipped)\n", c->name);
        return;
    }
    for (int pass = 0; pass < 2; pass++) {
        /* Pass 0: RGB from the reader; pass 1: I420 frames carrying their
         * colour, converted with pf_color_params_for (what stages do). */
        pf_video_reader_params rp = pf_video_reader_params_default();
        rp.path = path;
        rp.format = pass == 0 ? PF_PIXFMT_RGB24 : PF_PIXFMT_I420;
        pf_video_reader *r = NULL;
        CHECK_OK(pf_video_reader_create(&rp, &r));
        REQUIRE(r);
        pf_video_info info;
        CHECK_OK(pf_video_reader_info(r, &info));
        CHECK_EQ_INT(info.color.range, c->range);
        if (c->matrix >= 0) CHECK_EQ_INT(info.color.matrix, c->matrix);
        CHECK_EQ_INT(info.bit_depth, c->depth);
        pf_frame f = {0}, rgb = {0};
        CHECK_OK(pf_video_reader_read(r, &f));
        if (f.buf[0]) {
            const pf_frame *check = &f;
            if (pass == 1) {
                pf_stream *s = NULL;
                pf_ops *ops = NULL;
                pf_ops_params op = pf_ops_params_default();
                CHECK_OK(pf_stream_create(NULL, &s));
                op.stream = s;
                CHECK_OK(pf_ops_create(&op, &ops));
                CHECK_OK(pf_frame_alloc(&rgb, PF_PIXFMT_RGB24, f.width, f.height, NULL, NULL));
                pf_color_params cp = pf_color_params_for(&f);
                CHECK_OK(pf_ops_convert(ops, &f, &rgb, &cp));
                CHECK_OK(pf_stream_synchronize(s));
                pf_ops_destroy(&ops);
                pf_stream_destroy(&s);
                check = &rgb;
            }
            int err = stripe_error(check);
            if (err > c->tol)
                fprintf(stderr, "  %s (%s): stripes off by %d (> %d)\n", c->name,
                        pass ? "i420 + convert" : "rgb24", err, c->tol);
            CHECK(err <= c->tol);
        }
        pf_frame_unref(&rgb);
        pf_frame_unref(&f);
        pf_video_reader_destroy(&r);
    }
}

static void test_reader_color(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
}

/* The first line ffprobe prints for `entries` of the video stream. */
static void probe(const char *path, const char *entries, char *out, size_t size)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "ffprobe -v error -select_streams v:0 -show_entries stream=%s -of "
             "default=nw=1 '%s'",
             entries, path);
    out[0] = '\0';
    FILE *p = popen(cmd, "r");
    if (!p) return;
    size_t n = fread(out, 1, size - 1, p);
    out[n] = '\0';
    pclose(p);
}

/* Writes RGB stripes with the given colour; returns the decoded first frame's
 * stripe error (decoded by the ffmpeg tool, which follows the tags). */
static int write_and_decode(const char *name, pf_color_info color, char *tags, size_t tsize)
{
    char path[512], raw[600];
    tmp_path(path, sizeof path, name);
    snprintf(raw, sizeof raw, "%s.rgb", path);
    int w = 330, h = 240;
    pf_frame f = {0};
    if (pf_frame_alloc(&f, PF_PIXFMT_RGB24, w, h, NULL, NULL) != PF_OK) return 999;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            memcpy(f.data[0] + (size_t)y * f.stride[0] + (size_t)x * 3, stripes[x / (w / 3)], 3);
    pf_video_writer_params wp = pf_video_writer_params_default();
    wp.path = path;
    wp.width = w;
    wp.height = h;
    wp.input_format = PF_PIXFMT_RGB24;
    wp.color = color;
    wp.crf = 0;
    pf_video_writer *vw = NULL;
    pf_status st = pf_video_writer_create(&wp, &vw);
    for (int i = 0; i < 3 && st == PF_OK; i++) {
        f.pts = i;
        f.time_base = (pf_rational){1, 30};
        st = pf_video_writer_write(vw, &f);
    }
    if (st == PF_OK) st = pf_video_writer_close(vw);
    CHECK_OK(st);
    pf_video_writer_destroy(&vw);
    pf_frame_unref(&f);
    probe(path, "color_range,color_space,color_primaries,color_transfer", tags, tsize);
    char cmd[1200];
    snprintf(cmd, sizeof cmd,
             "ffmpeg -v error -y -i '%s' -frames:v 1 -f rawvideo -pix_fmt rgb24 '%s'", path, raw);
    if (run(cmd) != 0) return 999;
    FILE *fp = fopen(raw, "rb");
    if (!fp) return 999;
    pf_frame back = {0};
    pf_frame_alloc(&back, PF_PIXFMT_RGB24, w, h, NULL, NULL);
    size_t got = 0;
    for (int y = 0; y < h; y++) got += fread(back.data[0] + (size_t)y * back.stride[0], 1, (size_t)w * 3, fp);
    fclose(fp);
    int err = got == (size_t)w * h * 3 ? stripe_error(&back) : 999;
    pf_frame_unref(&back);
    return err;
}

static void test_writer_tags(void)
{
    char tags[512];
    pf_color_info full709 = {PF_COLOR_RANGE_FULL, 1, 1, 1};
    int err = write_and_decode("w_full709.mp4", full709, tags, sizeof tags);
    printf("  full 709: error %d, tags: %s", err, tags);
    CHECK(err <= TOL);
    CHECK(strstr(tags, "color_range=pc") && strstr(tags, "color_space=bt709") &&
          strstr(tags, "color_primaries=bt709") && strstr(tags, "color_transfer=bt709"));
    pf_color_info lim601 = {PF_COLOR_RANGE_LIMITED, 6, 6, 6};
    err = write_and_decode("w_lim601.mp4", lim601, tags, sizeof tags);
    printf("  limited 601: error %d, tags: %s", err, tags);
    CHECK(err <= TOL);
    CHECK(strstr(tags, "color_range=tv") && strstr(tags, "color_space=smpte170m") &&
          strstr(tags, "color_primaries=smpte170m") && strstr(tags, "color_transfer=smpte170m"));
}

/* A failing FFmpeg call reports FFmpeg's own reason, not only av_strerror's
 * generic text. */
static void test_ffmpeg_reason(void)
{
    char path[512];
    tmp_path(path, sizeof path, "reason.mp4");
    pf_video_writer_params wp = pf_video_writer_params_default();
    wp.path = path;
    wp.width = 64;
    wp.height = 64;
    wp.input_format = PF_PIXFMT_RGB24;
    wp.codec_pixfmt = "yuv410p"; /* libx264 has no such layout */
    pf_video_writer *vw = NULL;
    pf_status st = pf_video_writer_create(&wp, &vw);
    CHECK(st < 0);
    printf("  message: %s\n", pf_last_error());
    CHECK(strstr(pf_last_error(), "(FFmpeg: [") != NULL);
    CHECK(strstr(pf_last_error(), "yuv410p") != NULL);
    pf_video_writer_destroy(&vw);
}

static void test_parse_time(void)
{
    double s = -1;
    CHECK_OK(pf_parse_time("12.5", &s));
    CHECK(s == 12.5);
    CHECK_OK(pf_parse_time("01:02.5", &s));
    CHECK(s == 62.5);
    CHECK_OK(pf_parse_time("01:00:02.25", &s));
    CHECK(s == 3602.25);
    const char *bad[] = {"", "-1", "abc", "1:60", "1.5:02", "1:2:3:4", "12s", " 1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(pf_parse_time(bad[i], &s) == PF_ERR_INVALID);
        CHECK(strstr(pf_last_error(), bad[i]) != NULL);
    }
}

int main(void)
{
    if (!pf_io_have_ffmpeg() || system("ffmpeg -version >/dev/null 2>&1") != 0 ||
        system("ffprobe -version >/dev/null 2>&1") != 0) {
        printf("skipped: needs FFmpeg in the build and the ffmpeg/ffprobe tools\n");
        return 77;
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/pf_test_video_color.XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    PF_RUN(test_parse_time);
    PF_RUN(test_reader_color);
    PF_RUN(test_writer_tags);
    PF_RUN(test_ffmpeg_reason);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", tmpdir);
    return pf_test_finish();
}
