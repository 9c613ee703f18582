/* io pipeline stages (src/pipeline/builtin_io.c), built through their
 * constructors the way pf_stage_builtin does (they are not yet in the
 * registry): images dir -> image sink reproduces the files' pixels; a Y4M
 * file -> video sink reproduces its frames; bad parameters name the key. */
#include <sys/stat.h>
#include <unistd.h>

#include "pf_test.h"
#include "pipeline/builtin_io.h"
#include "pixflow/io.h"

static char tmpdir[256];

static pf_status make(bi_ctor ctor, const char *type, const char *name, const pf_stage_param *kv,
                      int n, pf_stage_desc *d)
{
    pf_stage_config cfg = {.name = name, .params = kv, .num_params = n};
    bi_args a;
    *d = pf_stage_desc_default();
    pf_status st = bi_args_init(&a, type, &cfg);
    if (st != PF_OK) return st;
    st = ctor(&a, d);
    if (st == PF_OK) st = bi_args_finish(&a);
    bi_args_free(&a);
    if (st != PF_OK && d->user && d->destroy) d->destroy(d->user);
    return st;
}

static pf_status run2(pf_stage_desc *src, pf_stage_desc *dst)
{
    pf_pipeline *p = NULL;
    pf_pipeline_params pp = pf_pipeline_params_default();
    pf_status st = pf_pipeline_create(&pp, &p);
    pf_stage *a = NULL, *b = NULL;
    if (st == PF_OK) st = pf_pipeline_add_stage(p, src, &a);
    if (st == PF_OK) st = pf_pipeline_add_stage(p, dst, &b);
    pf_edge_params ep = pf_edge_params_default();
    if (st == PF_OK) st = pf_pipeline_connect(p, a, b, &ep);
    if (st == PF_OK) st = pf_pipeline_start(p);
    if (st == PF_OK) st = pf_pipeline_wait(p, -1);
    pf_pipeline_destroy(&p);
    return st;
}

static bool same(const pf_frame *a, const pf_frame *b)
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

static void test_images(void)
{
    if (!pf_io_have_png()) return;
    char dir[300], out[300], path[400];
    snprintf(dir, sizeof dir, "%s/in", tmpdir);
    snprintf(out, sizeof out, "%s/out", tmpdir);
    REQUIRE(mkdir(dir, 0700) == 0 && mkdir(out, 0700) == 0);
    pf_frame src[3];
    for (int i = 0; i < 3; i++) {
        memset(&src[i], 0, sizeof src[i]);
        /* the third image has another size: decoded outside the pool */
        pf_frame_alloc(&src[i], PF_PIXFMT_RGB24, i == 2 ? 21 : 20, 10, NULL, NULL);
        for (int y = 0; y < 10; y++) pf_test_fill_random(src[i].data[0] + y * src[i].stride[0],
                                                         (size_t)src[i].width * 3);
        snprintf(path, sizeof path, "%s/img%d.png", dir, i);
        CHECK_OK(pf_image_write(path, &src[i], NULL));
    }
    pf_stage_param skv[] = {{"path", dir, 0}, {"pool", "2", 0}};
    snprintf(path, sizeof path, "%s/o_{seq}.png", out);
    pf_stage_param dkv[] = {{"path", path, 0}, {"compression", "1", 0}};
    pf_stage_desc s, d;
    CHECK_OK(make(bi_image_source_create, "io.image_source", "imgs", skv, 2, &s));
    CHECK_OK(make(bi_image_sink_create, "io.image_sink", "save", dkv, 2, &d));
    CHECK_OK(run2(&s, &d));
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/o_%06d.png", out, i);
        pf_frame f = {0};
        CHECK_OK(pf_image_read(path, PF_PIXFMT_RGB24, &f));
        CHECK(same(&f, &src[i]));
        pf_frame_unref(&f);
        pf_frame_unref(&src[i]);
    }
    /* Bad parameters fail at construction and name the key or the file. */
    pf_stage_param bad1[] = {{"path", "/nonexistent-pf/*.png", 0}};
    CHECK(make(bi_image_source_create, "io.image_source", "x", bad1, 1, &s) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "/nonexistent-pf/*.png") != NULL);
    pf_stage_param bad2[] = {{"path", "/nonexistent-pf/a.png", 0}};
    CHECK(make(bi_image_source_create, "io.image_source", "x", bad2, 1, &s) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "/nonexistent-pf/a.png") != NULL);
    pf_stage_param bad3[] = {{"path", "out.bmp", 0}};
    CHECK(make(bi_image_sink_create, "io.image_sink", "x", bad3, 1, &d) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "out.bmp") != NULL);
}

static void test_video(void)
{
    char in[300], out[300];
    snprintf(in, sizeof in, "%s/in.y4m", tmpdir);
    snprintf(out, sizeof out, "%s/out.y4m", tmpdir);
    pf_video_writer_params wp = pf_video_writer_params_default();
    wp.path = in;
    wp.width = 17;
    wp.height = 9;
    wp.input_format = PF_PIXFMT_I420;
    pf_video_writer *w = NULL;
    CHECK_OK(pf_video_writer_create(&wp, &w));
    REQUIRE(w);
    pf_frame src[5];
    for (int i = 0; i < 5; i++) {
        memset(&src[i], 0, sizeof src[i]);
        pf_frame_alloc(&src[i], PF_PIXFMT_I420, 17, 9, NULL, NULL);
        for (int p = 0; p < 3; p++) {
            size_t row, rows;
            pf_pixfmt_plane_size(PF_PIXFMT_I420, 17, 9, p, &row, &rows);
            for (size_t r = 0; r < rows; r++) pf_test_fill_random(src[i].data[p] + r * src[i].stride[p], row);
        }
        CHECK_OK(pf_video_writer_write(w, &src[i]));
    }
    pf_video_writer_destroy(&w);
    pf_stage_param skv[] = {{"path", in, 0}, {"pool", "2", 0}};
    pf_stage_param dkv[] = {{"path", out, 0}, {"fps", "25", 0}};
    pf_stage_desc s, d;
    CHECK_OK(make(bi_video_source_create, "io.video_source", "vin", skv, 2, &s));
    CHECK_OK(make(bi_video_sink_create, "io.video_sink", "vout", dkv, 2, &d));
    CHECK_OK(run2(&s, &d));
    pf_video_reader_params rp = pf_video_reader_params_default();
    rp.path = out;
    pf_video_reader *r = NULL;
    CHECK_OK(pf_video_reader_create(&rp, &r));
    REQUIRE(r);
    int n = 0;
    pf_frame f = {0};
    while (pf_video_reader_read(r, &f) == PF_OK) {
        if (n < 5) CHECK(same(&f, &src[n]));
        n++;
        pf_frame_unref(&f);
    }
    CHECK_EQ_INT(n, 5);
    pf_video_reader_destroy(&r);
    for (int i = 0; i < 5; i++) pf_frame_unref(&src[i]);
    pf_stage_param bad[] = {{"path", "/nonexistent-pf/v.y4m", 0}};
    CHECK(make(bi_video_source_create, "io.video_source", "x", bad, 1, &s) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "/nonexistent-pf/v.y4m") != NULL);
    pf_stage_param bad2[] = {{"path", "-", 0}, {"loop", "true", 0}};
    CHECK(make(bi_video_source_create, "io.video_source", "x", bad2, 2, &s) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "loop") != NULL);
}

int main(void)
{
    pf_test_seed(20261123);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/pf_test_io_stages.XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    PF_RUN(test_images);
    PF_RUN(test_video);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", tmpdir);
    return pf_test_finish();
}
