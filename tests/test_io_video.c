/* io video: Y4M and raw round trips (exact), a Y4M stream through a fifo,
 * the strict Y4M parser (bad headers, 4:4:4 averaged to 4:2:0, truncated
 * frames), the reader's pool, and through FFmpeg (when built with it): H.264
 * in MP4 round trip (PSNR, pts, frame count), alpha through a lossless codec,
 * truncated and damaged files that decode with corrupt packets counted. */
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pf_test.h"
#include "pixflow/io.h"

static char tmpdir[256];

static void tmp_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", tmpdir, name);
}

static void fill_random(pf_frame *f)
{
    for (int i = 0; i < f->num_planes; i++) {
        size_t row, rows;
        pf_pixfmt_plane_size(f->format, f->width, f->height, i, &row, &rows);
        for (size_t r = 0; r < rows; r++) pf_test_fill_random(f->data[i] + r * f->stride[i], row);
    }
}

static bool same_frame(const pf_frame *a, const pf_frame *b)
{
    if (a->format != b->format || a->width != b->width || a->height != b->height) return false;
    for (int i = 0; i < a->num_planes; i++) {
        size_t row, rows;
        pf_pixfmt_plane_size(a->format, a->width, a->height, i, &row, &rows);
        for (size_t r = 0; r < rows; r++)
            if (memcmp(a->data[i] + r * a->stride[i], b->data[i] + r * b->stride[i], row)) return false;
    }
    return true;
}

static pf_video_reader *open_reader(const char *path, pf_pixfmt fmt, const char *container)
{
    pf_video_reader_params rp = pf_video_reader_params_default();
    rp.path = path;
    rp.format = fmt;
    rp.container = container;
    rp.pool_size = 3;
    pf_video_reader *r = NULL;
    pf_status st = pf_video_reader_create(&rp, &r);
    if (st != PF_OK) fprintf(stderr, "  open %s: %s\n", path, pf_last_error());
    return r;
}

/* Writes n random frames of fmt through the writer, reads them back as
 * read_fmt and compares with `expect` (the frames converted as the round trip should). */
static void y4m_roundtrip(pf_pixfmt fmt, int w, int h, int n)
{
    char path[512];
    tmp_path(path, sizeof path, "rt.y4m");
    pf_video_writer_params wp = pf_video_writer_params_default();
    wp.path = path;
    wp.width = w;
    wp.height = h;
    wp.fps = (pf_rational){25, 1};
    wp.input_format = fmt;
    pf_video_writer *wr = NULL;
    CHECK_OK(pf_video_writer_create(&wp, &wr));
    REQUIRE(wr);
    pf_frame src[4];
    REQUIRE(n <= 4);
    for (int i = 0; i < n; i++) {
        memset(&src[i], 0, sizeof src[i]);
        pf_frame_alloc(&src[i], fmt, w, h, NULL, NULL);
        fill_random(&src[i]);
        CHECK_OK(pf_video_writer_write(wr, &src[i]));
    }
    CHECK_OK(pf_video_writer_close(wr));
    CHECK(pf_video_writer_write(wr, &src[0]) == PF_ERR_CLOSED);
    pf_video_writer_destroy(&wr);
    CHECK(wr == NULL);

    pf_video_reader *r = open_reader(path, fmt, NULL);
    REQUIRE(r);
    pf_video_info info;
    CHECK_OK(pf_video_reader_info(r, &info));
    CHECK(info.width == w && info.height == h && info.format == fmt);
    CHECK(info.fps.num == 25 && info.fps.den == 1);
    CHECK(info.time_base.num == 1 && info.time_base.den == 25);
    CHECK_EQ_INT(info.frame_count, n);
    CHECK(strcmp(info.container, "y4m") == 0);
    for (int i = 0; i < n; i++) {
        pf_frame f = {0};
        CHECK_OK(pf_video_reader_read(r, &f));
        CHECK(same_frame(&f, &src[i]));
        CHECK(f.pts == i && f.index == i);
        pf_frame_unref(&f);
    }
    pf_frame f = {0};
    CHECK(pf_video_reader_read(r, &f) == PF_EOF);
    CHECK(pf_video_reader_read(r, &f) == PF_EOF);
    pf_video_reader_stats stats;
    CHECK_OK(pf_video_reader_get_stats(r, &stats));
    CHECK_EQ_INT(stats.frames, n);
    CHECK_EQ_INT(stats.corrupt_packets, 0);
    pf_video_reader_destroy(&r);
    for (int i = 0; i < n; i++) pf_frame_unref(&src[i]);
}

static void test_y4m_roundtrip(void)
{
    y4m_roundtrip(PF_PIXFMT_I420, 33, 17, 3);
    y4m_roundtrip(PF_PIXFMT_I420, 1, 1, 2);
    y4m_roundtrip(PF_PIXFMT_GRAY8, 7, 5, 2);  /* Cmono */
    y4m_roundtrip(PF_PIXFMT_NV12, 16, 9, 2);  /* stored I420: samples moved, exact */
}

/* The reader's pool: frames outlive the reader; a full pool is PF_ERR_BUSY. */
static void test_pool(void)
{
    char path[512];
    tmp_path(path, sizeof path, "pool.y4m");
    FILE *fp = fopen(path, "wb");
    REQUIRE(fp);
    fprintf(fp, "YUV4MPEG2 W4 H2 F30000:1001 It A0:0 C420mpeg2 XYSCSS=420MPEG2\n");
    for (int i = 0; i < 5; i++) {
        fprintf(fp, "FRAME Ip XFOO=1\n");
        for (int k = 0; k < 8 + 2 + 2; k++) fputc(i * 16 + k, fp);
    }
    fclose(fp);
    pf_video_reader_params rp = pf_video_reader_params_default();
    rp.path = path;
    rp.pool_size = 2;
    rp.pool_timeout_us = 0;
    pf_video_reader *r = NULL;
    CHECK_OK(pf_video_reader_create(&rp, &r));
    REQUIRE(r);
    pf_frame a = {0}, b = {0}, c = {0};
    CHECK_OK(pf_video_reader_read(r, &a));
    CHECK_OK(pf_video_reader_read(r, &b));
    CHECK(pf_video_reader_read(r, &c) == PF_ERR_BUSY);
    CHECK(strstr(pf_last_error(), "pool.y4m") != NULL);
    CHECK(a.data[0][0] == 0 && b.data[0][0] == 16 && b.data[1][0] == 16 + 8);
    CHECK(b.time_base.num == 1001 && b.time_base.den == 30000 && b.pts == 1);
    uint8_t *slot = a.data[0];
    pf_frame_unref(&a);
    CHECK_OK(pf_video_reader_read(r, &c)); /* the retry after BUSY reads frame 2 */
    CHECK(c.data[0] == slot && c.data[0][0] == 32 && c.index == 2);
    pf_video_reader_stats st;
    pf_video_reader_get_stats(r, &st);
    CHECK_EQ_INT(st.pool_waits, 1);
    pf_video_reader_destroy(&r);
    CHECK(b.data[0][1] == 17 && c.data[2][1] == 32 + 11); /* still valid after destroy */
    pf_frame_unref(&b);
    pf_frame_unref(&c);
}

/* C444 and C422 are averaged to 4:2:0; RGB24 output goes through pf_ops_convert. */
static void test_y4m_chroma(void)
{
    char path[512];
    tmp_path(path, sizeof path, "c444.y4m");
    const int w = 5, h = 3;
    uint8_t y[15], u[15], v[15];
    pf_test_fill_random(y, 15);
    pf_test_fill_random(u, 15);
    pf_test_fill_random(v, 15);
    for (int mode = 0; mode < 2; mode++) {
        int cw = mode == 0 ? w : (w + 1) / 2;
        FILE *fp = fopen(path, "wb");
        REQUIRE(fp);
        fprintf(fp, "YUV4MPEG2 W%d H%d F25:1 C%s\nFRAME\n", w, h, mode == 0 ? "444" : "422");
        fwrite(y, 1, 15, fp);
        fwrite(u, 1, (size_t)(cw * h), fp);
        fwrite(v, 1, (size_t)(cw * h), fp);
        fclose(fp);
        pf_video_reader *r = open_reader(path, PF_PIXFMT_I420, NULL);
        REQUIRE(r);
        pf_frame f = {0};
        CHECK_OK(pf_video_reader_read(r, &f));
        REQUIRE(f.data[0]);
        int bad = 0;
        for (int yy = 0; yy < h; yy++)
            if (memcmp(f.data[0] + yy * f.stride[0], y + yy * w, w)) bad++;
        for (int cy = 0; cy < 2; cy++)
            for (int cx = 0; cx < 3; cx++) {
                unsigned su = 0, sv = 0, n = 0;
                for (int dy = 0; dy < 2; dy++)
                    for (int dx = 0; dx < (mode == 0 ? 2 : 1); dx++) {
                        int sy = 2 * cy + dy < h ? 2 * cy + dy : 2 * cy;
                        int sx = mode == 0 ? (2 * cx + dx < w ? 2 * cx + dx : 2 * cx) : cx;
                        su += u[sy * cw + sx];
                        sv += v[sy * cw + sx];
                        n++;
                    }
                if (f.data[1][cy * f.stride[1] + cx] != (su + n / 2) / n) bad++;
                if (f.data[2][cy * f.stride[2] + cx] != (sv + n / 2) / n) bad++;
            }
        CHECK_EQ_INT(bad, 0);
        pf_frame_unref(&f);
        CHECK(pf_video_reader_read(r, &f) == PF_EOF);
        pf_video_reader_destroy(&r);
    }
    /* RGB24 out: the same as pf_ops_convert of the I420 frame. */
    pf_video_reader *ri = open_reader(path, PF_PIXFMT_I420, NULL);
    pf_video_reader *rr = open_reader(path, PF_PIXFMT_RGB24, NULL);
    REQUIRE(ri && rr);
    pf_frame fi = {0}, fr = {0}, ref = {0};
    CHECK_OK(pf_video_reader_read(ri, &fi));
    CHECK_OK(pf_video_reader_read(rr, &fr));
    pf_stream *s = NULL;
    pf_ops *ops = NULL;
    CHECK_OK(pf_stream_create(NULL, &s));
    pf_ops_params op = pf_ops_params_default();
    op.stream = s;
    CHECK_OK(pf_ops_create(&op, &ops));
    CHECK_OK(pf_frame_alloc(&ref, PF_PIXFMT_RGB24, w, h, NULL, NULL));
    CHECK_OK(pf_ops_convert(ops, &fi, &ref, NULL));
    CHECK_OK(pf_stream_synchronize(s));
    CHECK(same_frame(&ref, &fr));
    pf_frame_unref(&fi);
    pf_frame_unref(&fr);
    pf_frame_unref(&ref);
    pf_ops_destroy(&ops);
    pf_stream_destroy(&s);
    pf_video_reader_destroy(&ri);
    pf_video_reader_destroy(&rr);
}

/* XCOLORRANGE=FULL (FFmpeg's Y4M extension) is read as full range and
 * written back for full-range output; A (aspect) both ways. Y = 32 with
 * neutral chroma is RGB 32 in full range, 19 if taken as limited (the old
 * reader ignored the tag and darkened such input). */
static void test_y4m_color_range(void)
{
    char path[512], out[512];
    tmp_path(path, sizeof path, "full.y4m");
    tmp_path(out, sizeof out, "full_out.y4m");
    const int w = 4, h = 2;
    for (int full = 0; full < 2; full++) {
        FILE *fp = fopen(path, "wb");
        REQUIRE(fp);
        fprintf(fp, "YUV4MPEG2 W%d H%d F25:1 A4:3 C420jpeg XYSCSS=420JPEG%s\nFRAME\n", w, h,
                full ? " XCOLORRANGE=FULL" : "");
        for (int i = 0; i < w * h; i++) fputc(32, fp);
        for (int i = 0; i < w * h / 2; i++) fputc(128, fp);
        fclose(fp);
        pf_video_reader *r = open_reader(path, PF_PIXFMT_RGB24, NULL);
        REQUIRE(r);
        pf_video_info info;
        CHECK_OK(pf_video_reader_info(r, &info));
        CHECK_EQ_INT(info.color.range, full ? PF_COLOR_RANGE_FULL : PF_COLOR_RANGE_UNSPECIFIED);
        CHECK(info.sar.num == 4 && info.sar.den == 3);
        pf_frame f = {0};
        CHECK_OK(pf_video_reader_read(r, &f));
        REQUIRE(f.data[0]);
        CHECK_EQ_INT(f.data[0][0], full ? 32 : 19);
        CHECK_EQ_INT(f.color.range, info.color.range);
        CHECK(f.sar.num == 4 && f.sar.den == 3);
        /* Written back from RGB with the input's colour: the same samples
         * and the same tags. */
        pf_video_writer_params wp = pf_video_writer_params_default();
        wp.path = out;
        wp.width = w;
        wp.height = h;
        wp.input_format = PF_PIXFMT_RGB24;
        wp.color = f.color;
        wp.sar = f.sar;
        pf_video_writer *vw = NULL;
        CHECK_OK(pf_video_writer_create(&wp, &vw));
        CHECK_OK(pf_video_writer_write(vw, &f));
        CHECK_OK(pf_video_writer_close(vw));
        pf_video_writer_destroy(&vw);
        pf_frame_unref(&f);
        pf_video_reader_destroy(&r);
        char line[128] = "";
        fp = fopen(out, "rb");
        REQUIRE(fp);
        CHECK(fgets(line, sizeof line, fp) != NULL);
        fclose(fp);
        CHECK((strstr(line, "XCOLORRANGE=FULL") != NULL) == (full != 0));
        CHECK(strstr(line, " A4:3 ") != NULL);
        pf_video_reader *r2 = open_reader(out, PF_PIXFMT_I420, NULL);
        REQUIRE(r2);
        CHECK_OK(pf_video_reader_read(r2, &f));
        REQUIRE(f.data[0]);
        CHECK_EQ_INT(f.data[0][0], 32); /* the luma survives the RGB round trip */
        pf_frame_unref(&f);
        pf_video_reader_destroy(&r2);
    }
}

static pf_status open_text(const char *text, size_t n, pf_video_reader **r)
{
    char path[512];
    tmp_path(path, sizeof path, "bad.y4m");
    FILE *fp = fopen(path, "wb");
    if (!fp) return PF_ERR_IO;
    fwrite(text, 1, n, fp);
    fclose(fp);
    pf_video_reader_params rp = pf_video_reader_params_default();
    rp.path = path;
    return pf_video_reader_create(&rp, r);
}

static void test_y4m_bad(void)
{
    static const struct {
        const char *text;
        pf_status want;
        const char *detail;
    } cases[] = {
        {"YUV4MPEG2 W16 H16", PF_ERR_FORMAT, "no newline"},
        {"YUV4MPEG2 H16 F25:1\n", PF_ERR_FORMAT, "missing width"},
        {"YUV4MPEG2 W16\n", PF_ERR_FORMAT, "missing height"},
        {"YUV4MPEG2 W0 H16\n", PF_ERR_FORMAT, "0x16"},
        {"YUV4MPEG2 W70000 H16\n", PF_ERR_FORMAT, "out of range"},
        {"YUV4MPEG2 W-4 H16\n", PF_ERR_FORMAT, "'W-4'"},
        {"YUV4MPEG2 W16 H16 W8\n", PF_ERR_FORMAT, "twice"},
        {"YUV4MPEG2 W16 H16  F25:1\n", PF_ERR_FORMAT, "empty tag"},
        {"YUV4MPEG2 W16 H16 F25\n", PF_ERR_FORMAT, "'F25'"},
        {"YUV4MPEG2 W16 H16 F25:0\n", PF_ERR_FORMAT, "'F25:0'"},
        {"YUV4MPEG2 W16 H16 Iz\n", PF_ERR_FORMAT, "'Iz'"},
        {"YUV4MPEG2 W16 H16 Q3\n", PF_ERR_FORMAT, "unknown tag 'Q3'"},
        {"YUV4MPEG2 W16 H16 C420p10\n", PF_ERR_UNSUPPORTED, "C420p10"},
        {"YUV4MPEG2 W16 H16 C444alpha\n", PF_ERR_UNSUPPORTED, "444alpha"},
        {"YUV4MPEG2 W16 H16 Cfoo\n", PF_ERR_FORMAT, "'Cfoo'"},
        {"YUV4MPEG W16 H16\n", PF_ERR_FORMAT, "signature"},
        {"", PF_ERR_FORMAT, "empty file"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pf_video_reader *r = NULL;
        pf_status st = open_text(cases[i].text, strlen(cases[i].text), &r);
        if (st != cases[i].want || !strstr(pf_last_error(), cases[i].detail) ||
            !strstr(pf_last_error(), "bad.y4m"))
            fprintf(stderr, "  case %zu: %s: %s\n", i, pf_status_str(st), pf_last_error());
        CHECK(st == cases[i].want);
        CHECK(strstr(pf_last_error(), cases[i].detail) != NULL);
        CHECK(r == NULL);
    }
    /* Frame-level damage after a good frame: a stream cut inside the next
     * frame (its payload or FRAME line) or a damaged FRAME line keeps the
     * whole frames, ends there (PF_EOF, sticky) and counts the damage, as
     * ffmpeg keeps what decodes; a bad first FRAME line is an error. */
    static const char good[] = "YUV4MPEG2 W2 H2 Cmono\nFRAME\nabcd";
    char buf[128];
    const char *tails[] = {"FRAMX\nabcd", "FRAME\nab", "FRAME", "FRAME  \nabcd", "FRAME\n", ""};
    for (int i = 0; i < 6; i++) {
        snprintf(buf, sizeof buf, "%s%s", good, tails[i]);
        pf_video_reader *r = NULL;
        CHECK_OK(open_text(buf, strlen(buf), &r));
        REQUIRE(r);
        pf_frame f = {0};
        CHECK_OK(pf_video_reader_read(r, &f));
        CHECK(f.format == PF_PIXFMT_GRAY8 && f.data[0][0] == 'a' && f.data[0][f.stride[0]] == 'c');
        pf_frame_unref(&f);
        pf_status st = pf_video_reader_read(r, &f);
        if (st != PF_EOF) fprintf(stderr, "  tail %d: %s: %s\n", i, pf_status_str(st), pf_last_error());
        CHECK(st == PF_EOF);
        CHECK(f.data[0] == NULL);
        CHECK(pf_video_reader_read(r, &f) == PF_EOF); /* sticky */
        pf_video_reader_stats stats;
        pf_video_reader_get_stats(r, &stats);
        CHECK_EQ_INT(stats.frames, 1);
        int want_corrupt = tails[i][0] ? 1 : 0; /* "FRAME\n" and no payload is cut too */
        CHECK_EQ_INT(stats.corrupt_packets, want_corrupt);
        pf_video_reader_destroy(&r);
    }
    {
        /* A damaged first FRAME line: nothing whole came before it. */
        static const char bad_first[] = "YUV4MPEG2 W2 H2 Cmono\nFRAMX\nabcd";
        pf_video_reader *r = NULL;
        CHECK_OK(open_text(bad_first, strlen(bad_first), &r));
        pf_frame f = {0};
        CHECK(pf_video_reader_read(r, &f) == PF_ERR_FORMAT);
        CHECK(strstr(pf_last_error(), "expected a FRAME line") != NULL);
        CHECK(strstr(pf_last_error(), "bad.y4m") != NULL);
        CHECK(pf_video_reader_read(r, &f) == PF_ERR_FORMAT); /* sticky */
        pf_video_reader_destroy(&r);
    }
    /* Missing file, bad parameters. */
    pf_video_reader_params rp = pf_video_reader_params_default();
    pf_video_reader *r = NULL;
    rp.path = "/nonexistent-pf/x.y4m";
    CHECK(pf_video_reader_create(&rp, &r) == PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "/nonexistent-pf/x.y4m") != NULL);
    rp.format = PF_PIXFMT_COUNT;
    CHECK(pf_video_reader_create(&rp, &r) == PF_ERR_INVALID);
    rp = pf_video_reader_params_default();
    rp.path = "x.raw";
    CHECK(pf_video_reader_create(&rp, &r) == PF_ERR_INVALID); /* raw without a size */
    CHECK(strstr(pf_last_error(), "raw_width") != NULL);
}

typedef struct fifo_job {
    char path[512];
    int frames;
} fifo_job;

static void *fifo_writer(void *arg)
{
    fifo_job *j = arg;
    FILE *fp = fopen(j->path, "wb");
    if (!fp) return NULL;
    fprintf(fp, "YUV4MPEG2 W3 H3 F10:1 C420jpeg\n");
    for (int i = 0; i < j->frames; i++) {
        fprintf(fp, "FRAME\n");
        for (int k = 0; k < 9 + 4 + 4; k++) fputc((i * 7 + k) & 0xff, fp);
    }
    fclose(fp);
    return NULL;
}

/* A pipe: no seeking, no size; frames arrive as they are written. */
static void test_y4m_fifo(void)
{
    fifo_job j = {.frames = 50};
    tmp_path(j.path, sizeof j.path, "pipe.y4m");
    REQUIRE(mkfifo(j.path, 0600) == 0);
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, fifo_writer, &j) == 0);
    pf_video_reader *r = open_reader(j.path, PF_PIXFMT_NV12, NULL);
    int n = 0, bad = 0;
    if (r) {
        pf_video_info info;
        pf_video_reader_info(r, &info);
        CHECK(info.frame_count == -1);
        pf_frame f = {0};
        while (pf_video_reader_read(r, &f) == PF_OK) {
            /* NV12: U and V interleaved. */
            if (f.data[0][f.stride[0] + 1] != ((n * 7 + 4) & 0xff) || f.data[1][0] != ((n * 7 + 9) & 0xff) ||
                f.data[1][1] != ((n * 7 + 13) & 0xff))
                bad++;
            n++;
            pf_frame_unref(&f);
        }
        pf_video_reader_destroy(&r);
    }
    pthread_join(t, NULL);
    CHECK_EQ_INT(n, 50);
    CHECK_EQ_INT(bad, 0);
}

static void test_raw(void)
{
    char path[512];
    tmp_path(path, sizeof path, "frames.raw");
    pf_video_writer_params wp = pf_video_writer_params_default();
    wp.path = path;
    wp.width = 9;
    wp.height = 4;
    wp.input_format = PF_PIXFMT_RGB24;
    pf_video_writer *w = NULL;
    CHECK_OK(pf_video_writer_create(&wp, &w));
    REQUIRE(w);
    pf_frame src[3];
    for (int i = 0; i < 3; i++) {
        memset(&src[i], 0, sizeof src[i]);
        pf_frame_alloc(&src[i], PF_PIXFMT_RGB24, 9, 4, NULL, NULL);
        fill_random(&src[i]);
        CHECK_OK(pf_video_writer_write(w, &src[i]));
    }
    pf_frame wrong = {0};
    pf_frame_alloc(&wrong, PF_PIXFMT_RGB24, 8, 4, NULL, NULL);
    CHECK(pf_video_writer_write(w, &wrong) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "8x4") != NULL);
    pf_frame_unref(&wrong);
    CHECK_EQ_INT(pf_video_writer_frame_count(w), 3);
    pf_video_writer_destroy(&w);
    pf_video_reader_params rp = pf_video_reader_params_default();
    rp.path = path;
    rp.raw_width = 9;
    rp.raw_height = 4;
    rp.raw_format = PF_PIXFMT_RGB24;
    rp.format = PF_PIXFMT_RGB24;
    pf_video_reader *r = NULL;
    CHECK_OK(pf_video_reader_create(&rp, &r));
    REQUIRE(r);
    pf_video_info info;
    pf_video_reader_info(r, &info);
    CHECK_EQ_INT(info.frame_count, 3);
    for (int i = 0; i < 3; i++) {
        pf_frame f = {0};
        CHECK_OK(pf_video_reader_read(r, &f));
        CHECK(same_frame(&f, &src[i]));
        pf_frame_unref(&f);
        pf_frame_unref(&src[i]);
    }
    pf_frame f = {0};
    CHECK(pf_video_reader_read(r, &f) == PF_EOF);
    pf_video_reader_destroy(&r);
}

static void test_writer_errors(void)
{
    pf_video_writer_params wp = pf_video_writer_params_default();
    wp.path = "/nonexistent-dir-pf/out.y4m";
    wp.width = 16;
    wp.height = 16;
    wp.input_format = PF_PIXFMT_I420;
    pf_video_writer *w = NULL;
    CHECK(pf_video_writer_create(&wp, &w) == PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "/nonexistent-dir-pf/out.y4m") &&
          strstr(pf_last_error(), "directory does not exist"));
    wp.path = "x.y4m";
    wp.width = 0;
    CHECK(pf_video_writer_create(&wp, &w) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "0x16") != NULL);
    wp.width = 16;
    wp.input_format = PF_PIXFMT_NONE;
    CHECK(pf_video_writer_create(&wp, &w) == PF_ERR_INVALID);
    if (!pf_io_have_ffmpeg()) {
        char path[512];
        tmp_path(path, sizeof path, "x.mp4");
        wp.path = path;
        wp.input_format = PF_PIXFMT_I420;
        CHECK(pf_video_writer_create(&wp, &w) == PF_ERR_UNSUPPORTED);
        CHECK(strstr(pf_last_error(), "without FFmpeg") != NULL);
    }
}

/* FFmpeg ---------------------------------------------------------------------------------- */

/* A moving pattern: gradients plus a bright square that moves 3 px a frame. */
static void pattern(pf_frame *f, int t)
{
    for (int y = 0; y < f->height; y++)
        for (int x = 0; x < f->width; x++) {
            uint8_t *p = f->data[0] + (size_t)y * f->stride[0] + (size_t)x * 3;
            bool sq = x >= 20 + 3 * t && x < 60 + 3 * t && y >= 30 && y < 70;
            p[0] = sq ? 250 : (uint8_t)(x + t);
            p[1] = sq ? 240 : (uint8_t)(y * 2);
            p[2] = sq ? 30 : (uint8_t)(128 + 60 * sin((x + y + 4 * t) * 0.05));
        }
}

static double psnr_rgb(const pf_frame *a, const pf_frame *b)
{
    double se = 0;
    size_t n = 0;
    for (int y = 0; y < a->height; y++)
        for (int x = 0; x < a->width * 3; x++) {
            double d = (double)a->data[0][(size_t)y * a->stride[0] + x] -
                       b->data[0][(size_t)y * b->stride[0] + x];
            se += d * d;
            n++;
        }
    return se == 0 ? 99 : 10 * log10(255.0 * 255.0 / (se / (double)n));
}

static pf_status encode_pattern(const char *path, int n, const char *codec)
{
    pf_video_writer_params wp = pf_video_writer_params_default();
    wp.path = path;
    wp.width = 320;
    wp.height = 240;
    wp.fps = (pf_rational){30, 1};
    wp.input_format = PF_PIXFMT_RGB24;
    wp.codec = codec;
    wp.crf = 18;
    wp.preset = "veryfast";
    wp.gop = 10;
    pf_video_writer *w = NULL;
    pf_status st = pf_video_writer_create(&wp, &w);
    if (st != PF_OK) return st;
    pf_frame f = {0};
    pf_frame_alloc(&f, PF_PIXFMT_RGB24, 320, 240, NULL, NULL);
    for (int t = 0; t < n && st == PF_OK; t++) {
        pattern(&f, t);
        f.pts = t * 3000; /* 90 kHz clock: rescaled to 1/30 */
        f.time_base = (pf_rational){1, 90000};
        st = pf_video_writer_write(w, &f);
    }
    pf_frame_unref(&f);
    pf_status cst = pf_video_writer_close(w);
    pf_video_writer_destroy(&w);
    return st != PF_OK ? st : cst;
}

static void test_ffmpeg_h264(void)
{
    if (!pf_io_have_ffmpeg()) {
        printf("  (skipped: built without FFmpeg)\n");
        return;
    }
    char path[512];
    tmp_path(path, sizeof path, "moving.mp4");
    pf_status st = encode_pattern(path, 30, "libx264");
    if (st == PF_ERR_UNSUPPORTED) {
        printf("  (skipped: %s)\n", pf_last_error());
        return;
    }
    CHECK_OK(st);
    pf_video_reader *r = open_reader(path, PF_PIXFMT_RGB24, NULL);
    REQUIRE(r);
    pf_video_info info;
    CHECK_OK(pf_video_reader_info(r, &info));
    CHECK(info.width == 320 && info.height == 240 && info.format == PF_PIXFMT_RGB24);
    CHECK(strcmp(info.codec, "h264") == 0);
    CHECK(info.fps.num == 30 && info.fps.den == 1);
    CHECK_EQ_INT(info.frame_count, 30);
    CHECK(!info.hw_decode && strstr(info.decoder, "(cpu)"));
    pf_frame ref = {0};
    pf_frame_alloc(&ref, PF_PIXFMT_RGB24, 320, 240, NULL, NULL);
    int n = 0, low = 0;
    int64_t last = INT64_MIN;
    bool mono = true;
    double worst = 99;
    pf_frame f = {0};
    while ((st = pf_video_reader_read(r, &f)) == PF_OK) {
        pattern(&ref, n);
        double p = psnr_rgb(&f, &ref);
        if (p < worst) worst = p;
        if (p <= 30) low++;
        if (f.pts == PF_NOPTS || f.pts <= last) mono = false;
        last = f.pts;
        CHECK(f.index == n);
        CHECK(f.time_base.num > 0 && f.time_base.den > 0);
        n++;
        pf_frame_unref(&f);
    }
    CHECK(st == PF_EOF);
    CHECK_EQ_INT(n, 30);
    CHECK_EQ_INT(low, 0);
    if (low) fprintf(stderr, "  worst PSNR %.1f dB\n", worst);
    CHECK(mono);
    pf_video_reader_stats stats;
    pf_video_reader_get_stats(r, &stats);
    CHECK_EQ_INT(stats.corrupt_packets, 0);
    CHECK_EQ_INT(stats.frames, 30);
    pf_video_reader_destroy(&r);
    /* NV12 output from the same file (the decoder's yuv420p, samples moved). */
    r = open_reader(path, PF_PIXFMT_NV12, NULL);
    REQUIRE(r);
    n = 0;
    while (pf_video_reader_read(r, &f) == PF_OK) {
        CHECK(f.format == PF_PIXFMT_NV12 && f.num_planes == 2);
        n++;
        pf_frame_unref(&f);
    }
    CHECK_EQ_INT(n, 30);
    pf_video_reader_destroy(&r);
    pf_frame_unref(&ref);
}

/* '%' in a file name: "pct 100%.mp4" is one file written through a
 * temporary and renamed (it once went straight to FFmpeg as if it were an
 * image pattern, bypassing the temporary); "seq_%03d.png" is a pattern:
 * FFmpeg's image2 writes one PNG per frame. */
static void test_ffmpeg_percent_names(void)
{
    if (!pf_io_have_ffmpeg()) {
        printf("  (skipped: built without FFmpeg)\n");
        return;
    }
    char path[512];
    tmp_path(path, sizeof path, "pct 100%.mp4");
    pf_status st = encode_pattern(path, 5, NULL);
    CHECK_OK(st);
    pf_video_reader *r = open_reader(path, PF_PIXFMT_RGB24, NULL);
    REQUIRE(r);
    int n = 0;
    pf_frame f = {0};
    while (pf_video_reader_read(r, &f) == PF_OK) {
        n++;
        pf_frame_unref(&f);
    }
    pf_video_reader_destroy(&r);
    CHECK_EQ_INT(n, 5);
    /* Through a temporary: a discarded writer leaves no file at the name. */
    char gone[512];
    tmp_path(gone, sizeof gone, "gone 50%.mp4");
    pf_video_writer_params wp = pf_video_writer_params_default();
    wp.path = gone;
    wp.width = 64;
    wp.height = 48;
    wp.input_format = PF_PIXFMT_RGB24;
    pf_video_writer *w = NULL;
    CHECK_OK(pf_video_writer_create(&wp, &w));
    if (w) {
        pf_frame g = {0};
        CHECK_OK(pf_frame_alloc(&g, PF_PIXFMT_RGB24, 64, 48, NULL, NULL));
        for (int t = 0; t < 3; t++) CHECK_OK(pf_video_writer_write(w, &g));
        pf_frame_unref(&g);
        pf_video_writer_discard(&w);
    }
    FILE *left = fopen(gone, "rb");
    CHECK(left == NULL);
    if (left) fclose(left);
    /* The pattern: one PNG per frame, numbered from 1. */
    char seq[512], first[512], last[512];
    tmp_path(seq, sizeof seq, "seq_%03d.png");
    tmp_path(first, sizeof first, "seq_001.png");
    tmp_path(last, sizeof last, "seq_004.png");
    st = encode_pattern(seq, 4, "png");
    if (st == PF_ERR_UNSUPPORTED) { /* a small FFmpeg (the GPU machine's) has no image2/png */
        printf("  (pattern part skipped: %s)\n", pf_last_error());
        return;
    }
    CHECK_OK(st);
    FILE *a = fopen(first, "rb"), *b = fopen(last, "rb");
    CHECK(a != NULL && b != NULL);
    if (a) fclose(a);
    if (b) fclose(b);
}

static void test_ffmpeg_alpha(void)
{
    if (!pf_io_have_ffmpeg()) return;
    char path[512];
    tmp_path(path, sizeof path, "alpha.mov");
    pf_video_writer_params wp = pf_video_writer_params_default();
    wp.path = path;
    wp.width = 31;
    wp.height = 17;
    wp.input_format = PF_PIXFMT_RGBA;
    wp.codec = "png";
    pf_video_writer *w = NULL;
    pf_status st = pf_video_writer_create(&wp, &w);
    if (st == PF_ERR_UNSUPPORTED) return;
    CHECK_OK(st);
    REQUIRE(w);
    pf_frame src[3];
    for (int i = 0; i < 3; i++) {
        memset(&src[i], 0, sizeof src[i]);
        pf_frame_alloc(&src[i], PF_PIXFMT_RGBA, 31, 17, NULL, NULL);
        fill_random(&src[i]);
        CHECK_OK(pf_video_writer_write(w, &src[i]));
    }
    CHECK_OK(pf_video_writer_close(w));
    pf_video_writer_destroy(&w);
    pf_video_reader *r = open_reader(path, PF_PIXFMT_RGBA, NULL);
    REQUIRE(r);
    for (int i = 0; i < 3; i++) {
        pf_frame f = {0};
        CHECK_OK(pf_video_reader_read(r, &f));
        CHECK(same_frame(&f, &src[i])); /* lossless, alpha kept */
        pf_frame_unref(&f);
        pf_frame_unref(&src[i]);
    }
    pf_video_reader_destroy(&r);
}

static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long sz = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *d = malloc((size_t)sz);
    *n = fread(d, 1, (size_t)sz, fp);
    fclose(fp);
    return d;
}

static void decode_all(const char *path, int *frames, pf_video_reader_stats *stats, pf_status *end)
{
    *frames = 0;
    memset(stats, 0, sizeof *stats);
    pf_video_reader *r = open_reader(path, PF_PIXFMT_I420, NULL);
    *end = PF_ERR_INTERNAL;
    if (!r) return;
    pf_frame f = {0};
    while ((*end = pf_video_reader_read(r, &f)) == PF_OK) {
        (*frames)++;
        pf_frame_unref(&f);
    }
    pf_video_reader_get_stats(r, stats);
    pf_video_reader_destroy(&r);
}

static void test_ffmpeg_damaged(void)
{
    if (!pf_io_have_ffmpeg()) return;
    char path[512], bad[512];
    tmp_path(path, sizeof path, "long.mkv");
    pf_status st = encode_pattern(path, 60, "libx264");
    if (st == PF_ERR_UNSUPPORTED) return;
    CHECK_OK(st);
    size_t n = 0;
    uint8_t *d = slurp(path, &n);
    REQUIRE(d && n > 1000);
    /* Truncated: the stream ends inside a packet. */
    tmp_path(bad, sizeof bad, "cut.mkv");
    FILE *fp = fopen(bad, "wb");
    fwrite(d, 1, n * 6 / 10, fp);
    fclose(fp);
    int frames;
    pf_video_reader_stats stats;
    decode_all(bad, &frames, &stats, &st);
    printf("  truncated: %d frames, %" PRIu64 " packets, %" PRIu64 " corrupt, end %s\n", frames,
           stats.packets, stats.corrupt_packets, pf_status_str(st));
    CHECK(st == PF_EOF);
    CHECK(frames > 10 && frames < 60);
    CHECK(stats.corrupt_packets > 0);
    /* Damaged: garbage over a stretch in the middle of the file. */
    tmp_path(bad, sizeof bad, "damaged.mkv");
    for (size_t i = n / 2; i < n / 2 + 400 && i < n; i++) d[i] = (uint8_t)(pf_test_rand() | 1);
    fp = fopen(bad, "wb");
    fwrite(d, 1, n, fp);
    fclose(fp);
    decode_all(bad, &frames, &stats, &st);
    printf("  damaged: %d frames, %" PRIu64 " packets, %" PRIu64 " corrupt, end %s\n", frames,
           stats.packets, stats.corrupt_packets, pf_status_str(st));
    CHECK(st == PF_EOF);
    CHECK(frames > 30);
    CHECK(stats.corrupt_packets > 0);
    free(d);
    /* Not a video at all; a missing file. */
    tmp_path(bad, sizeof bad, "text.mp4");
    fp = fopen(bad, "wb");
    fputs("this is not a video file\n", fp);
    fclose(fp);
    pf_video_reader *r = open_reader(bad, PF_PIXFMT_I420, NULL);
    CHECK(r == NULL);
    CHECK(strstr(pf_last_error(), "text.mp4") != NULL);
    tmp_path(bad, sizeof bad, "missing.mp4");
    pf_video_reader_params rp = pf_video_reader_params_default();
    rp.path = bad;
    CHECK(pf_video_reader_create(&rp, &r) == PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "missing.mp4") != NULL);
    /* Unknown encoder. */
    tmp_path(bad, sizeof bad, "x.mkv");
    CHECK(encode_pattern(bad, 1, "no-such-codec") == PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "no-such-codec") != NULL);
}

int main(void)
{
    pf_test_seed(20261122);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/pf_test_io_video.XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    PF_RUN(test_y4m_roundtrip);
    PF_RUN(test_pool);
    PF_RUN(test_y4m_chroma);
    PF_RUN(test_y4m_color_range);
    PF_RUN(test_y4m_bad);
    PF_RUN(test_y4m_fifo);
    PF_RUN(test_raw);
    PF_RUN(test_writer_errors);
    PF_RUN(test_ffmpeg_h264);
    PF_RUN(test_ffmpeg_percent_names);
    PF_RUN(test_ffmpeg_alpha);
    PF_RUN(test_ffmpeg_damaged);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", tmpdir);
    return pf_test_finish();
}
