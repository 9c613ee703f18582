/* The jobs as library calls (pixflow/jobs.h), through the public API only:
 * segment an image and a short video with pf_segment_start and check the
 * result and the files; pf_segmenter on an image byte-equal to the job's
 * (and the CLI's) output; reproject a generated equirect; cancel a running
 * job (interrupted, a complete output); bad params name the field;
 * pf_model_find's search order. Needs the selfie model (npm) and
 * .data/astronaut.png, .data/jobcheck/clip.y4m (scripts/fetch-media.sh):
 * exits 77 (skipped) without them. */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pf_test.h"
#include "pixflow/pixflow.h"

static char g_dir[256];        /* a fresh temporary directory */
static char g_astronaut[1024], g_clip[1024];

static const char *tmp(const char *name)
{
    static char buf[4][512];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s", g_dir, name);
    return b;
}

static bool exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0;
}

/* Messages of the jobs: kept (the last) and counted. */
static char g_msg[2048];
static int g_msgs;
static void on_message(void *user, pf_log_level level, const char *msg)
{
    (void)user;
    (void)level;
    snprintf(g_msg, sizeof g_msg, "%s", msg);
    g_msgs++;
    fprintf(stderr, "  job: %s\n", msg);
}

static pf_segment_params seg_params(const char *const *inputs, int n, const char *output)
{
    pf_segment_params p = pf_segment_params_default();
    p.inputs = inputs;
    p.num_inputs = n;
    p.output = output;
    p.on_message = on_message;
    return p;
}

/* Runs a job to its end; fills *r. */
static pf_status run(pf_job *job, pf_job_result *r)
{
    pf_status st;
    while ((st = pf_job_wait(job, 100000)) == PF_TIMEOUT) {
    }
    CHECK_OK(pf_job_get_result(job, r));
    return st;
}

static bool same_pixels(const pf_frame *a, const pf_frame *b)
{
    if (a->format != b->format || a->width != b->width || a->height != b->height) return false;
    int bpp = a->format == PF_PIXFMT_RGBA ? 4 : a->format == PF_PIXFMT_GRAY8 ? 1 : 3;
    for (int y = 0; y < a->height; y++)
        if (memcmp(a->data[0] + (size_t)y * a->stride[0], b->data[0] + (size_t)y * b->stride[0],
                   (size_t)a->width * bpp))
            return false;
    return true;
}

/* Cases ------------------------------------------------------------------------------------- */

static void segment_image(void)
{
    const char *in[] = {g_astronaut};
    pf_segment_params p = seg_params(in, 1, tmp("astro_seg.png"));
    p.mask_out = tmp("astro_mask.png");
    p.background = "#00ff00";
    pf_job *job = NULL;
    CHECK_OK(pf_segment_start(&p, &job));
    REQUIRE(job);
    pf_job_result r;
    CHECK_OK(run(job, &r));
    CHECK_EQ_INT(r.kind, PF_JOB_SEGMENT);
    CHECK_EQ_INT(r.status, PF_JOB_DONE);
    CHECK(!r.video);
    CHECK_EQ_INT(r.frames, 1);
    CHECK_EQ_INT(r.images, 1);
    CHECK_EQ_INT(r.failed, 0);
    CHECK(!strcmp(r.device, "cpu"));
    CHECK(r.model && strstr(r.model, "selfie_segmentation.tflite"));
    CHECK_EQ_INT(r.model_width, 256);
    CHECK_EQ_INT(r.model_height, 256);
    CHECK(r.mask_out && !strcmp(r.mask_out, tmp("astro_mask.png")));
    CHECK(!strcmp(r.output, tmp("astro_seg.png")));
    CHECK(r.elapsed_s > 0 && r.fps > 0);
    CHECK_EQ_INT(r.batch, 8);
    CHECK(!r.latency_mode);
    CHECK_OK(pf_job_print_stats(job, stdout));
    pf_job_destroy(&job);
    CHECK(job == NULL);
    pf_frame out = {0}, mask = {0};
    CHECK_OK(pf_image_read(tmp("astro_seg.png"), PF_PIXFMT_RGB24, &out));
    CHECK_OK(pf_image_read(tmp("astro_mask.png"), PF_PIXFMT_GRAY8, &mask));
    CHECK_EQ_INT(out.width, 512);
    CHECK_EQ_INT(mask.width, 512);
    /* A person in the middle, background in the corner (painted green). */
    if (mask.buf[0] && out.buf[0]) {
        CHECK(mask.data[0][(size_t)200 * mask.stride[0] + 256] > 128);
        CHECK(mask.data[0][5] < 64);
        CHECK(out.data[0][0] < 40 && out.data[0][1] > 200 && out.data[0][2] < 40);
    }
    pf_frame_unref(&out);
    pf_frame_unref(&mask);
}

static void segment_video(void)
{
    const char *in[] = {g_clip};
    pf_segment_params p = seg_params(in, 1, tmp("clip_seg.y4m"));
    p.max_frames = 12;
    pf_job *job = NULL;
    CHECK_OK(pf_segment_start(&p, &job));
    REQUIRE(job);
    pf_job_progress pg;
    CHECK_OK(pf_job_get_progress(job, &pg));
    CHECK_EQ_INT(pg.total, 12);
    pf_job_result r;
    CHECK_EQ_INT(pf_job_get_result(job, &r), PF_AGAIN); /* still running */
    CHECK_OK(run(job, &r));
    CHECK_EQ_INT(r.status, PF_JOB_DONE);
    CHECK(r.video);
    CHECK_EQ_INT(r.frames, 12);
    CHECK(r.decoder && r.decoder[0]);
    CHECK_EQ_INT(r.dropped, 0);
    CHECK_EQ_INT(r.num_streams, 0);
    CHECK(r.latency_p99_ms >= r.latency_p50_ms && r.latency_p50_ms > 0);
    CHECK_OK(pf_job_get_progress(job, &pg));
    CHECK_EQ_INT(pg.done, 12);
    pf_job_destroy(&job);
    /* 12 frames of 640x360 I420 in the Y4M written. */
    pf_video_reader_params rp = pf_video_reader_params_default();
    rp.path = tmp("clip_seg.y4m");
    pf_video_reader *vr = NULL;
    CHECK_OK(pf_video_reader_create(&rp, &vr));
    int frames = 0;
    pf_frame f = {0};
    while (vr && pf_video_reader_read(vr, &f) == PF_OK) {
        CHECK_EQ_INT(f.width, 640);
        frames++;
        pf_frame_unref(&f);
    }
    CHECK_EQ_INT(frames, 12);
    pf_video_reader_destroy(&vr);
}

/* The one-frame API gives the job's bytes (and the CLI's, when the test
 * knows where it is: PF_PIXFLOW_CLI). */
static void segmenter_equals_job(void)
{
    const char *in[] = {g_astronaut};
    pf_segment_params p = seg_params(in, 1, tmp("job_blur.png"));
    pf_job *job = NULL;
    CHECK_OK(pf_segment_start(&p, &job));
    REQUIRE(job);
    pf_job_result r;
    CHECK_OK(run(job, &r));
    pf_job_destroy(&job);

    pf_segmenter_params sp = pf_segmenter_params_default();
    pf_segmenter *seg = NULL;
    CHECK_OK(pf_segmenter_create(&sp, &seg));
    REQUIRE(seg);
    pf_frame img = {0}, comp = {0}, mask = {0}, want = {0};
    CHECK_OK(pf_image_read(g_astronaut, PF_PIXFMT_RGB24, &img));
    CHECK_OK(pf_segmenter_process(seg, &img, &comp, NULL));
    CHECK_OK(pf_image_read(tmp("job_blur.png"), PF_PIXFMT_RGB24, &want));
    CHECK(same_pixels(&comp, &want));
    /* The written file too, byte for byte. */
    CHECK_OK(pf_image_write(tmp("seg_blur.png"), &comp, NULL));
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", tmp("seg_blur.png"), tmp("job_blur.png"));
    CHECK(system(cmd) == 0);
    const char *cli = getenv("PF_PIXFLOW_CLI");
    if (cli && *cli) {
        snprintf(cmd, sizeof cmd, "'%s' segment '%s' -o '%s' --device cpu --quiet > /dev/null",
                 cli, g_astronaut, tmp("cli_blur.png"));
        CHECK(system(cmd) == 0);
        snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", tmp("seg_blur.png"), tmp("cli_blur.png"));
        CHECK(system(cmd) == 0);
    }
    /* With a mask: the job's mask and composite with --mask-out. */
    pf_segment_params p2 = seg_params(in, 1, tmp("job_m.png"));
    p2.mask_out = tmp("job_mask.png");
    CHECK_OK(pf_segment_start(&p2, &job));
    REQUIRE(job);
    CHECK_OK(run(job, &r));
    pf_job_destroy(&job);
    pf_frame_unref(&comp);
    pf_frame_unref(&want);
    CHECK_OK(pf_segmenter_process(seg, &img, &comp, &mask));
    CHECK_OK(pf_image_read(tmp("job_m.png"), PF_PIXFMT_RGB24, &want));
    CHECK(same_pixels(&comp, &want));
    pf_frame_unref(&want);
    CHECK_OK(pf_image_read(tmp("job_mask.png"), PF_PIXFMT_GRAY8, &want));
    CHECK(same_pixels(&mask, &want));
    CHECK_EQ_INT(mask.format, PF_PIXFMT_GRAY8);
    pf_frame_unref(&img);
    pf_frame_unref(&comp);
    pf_frame_unref(&mask);
    pf_frame_unref(&want);
    pf_segmenter_destroy(&seg);
    CHECK(seg == NULL);
}

static void reproject_equirect(void)
{
    /* A generated 512 x 256 equirect: colour by longitude and latitude. */
    pf_frame eq = {0};
    CHECK_OK(pf_frame_alloc(&eq, PF_PIXFMT_RGB24, 512, 256, NULL, NULL));
    REQUIRE(eq.buf[0]);
    for (int y = 0; y < 256; y++)
        for (int x = 0; x < 512; x++) {
            uint8_t *px = eq.data[0] + (size_t)y * eq.stride[0] + (size_t)x * 3;
            px[0] = (uint8_t)(x / 2);
            px[1] = (uint8_t)y;
            px[2] = 128;
        }
    CHECK_OK(pf_image_write(tmp("pano.png"), &eq, NULL));
    pf_frame_unref(&eq);
    const char *in[] = {tmp("pano.png")};
    pf_view views[2] = {{.yaw = 0, .fov = 90, .width = 64, .height = 48},
                        {.yaw = 180, .fov = 90, .width = 64, .height = 48}};
    pf_reproject_params p = pf_reproject_params_default();
    p.inputs = in;
    p.num_inputs = 1;
    p.output_dir = tmp("views");
    p.views = views;
    p.num_views = 2;
    p.format = PF_IMAGE_PNG;
    p.on_message = on_message;
    pf_job *job = NULL;
    CHECK_OK(pf_reproject_start(&p, &job));
    REQUIRE(job);
    pf_job_result r;
    CHECK_OK(run(job, &r));
    CHECK_EQ_INT(r.kind, PF_JOB_REPROJECT);
    CHECK_EQ_INT(r.status, PF_JOB_DONE);
    CHECK_EQ_INT(r.reproject.images_done, 1);
    CHECK_EQ_INT(r.reproject.files_written, 2);
    CHECK_EQ_INT(r.reproject.views_per_image, 2);
    CHECK_EQ_INT(r.failed, 0);
    CHECK(r.reproject.busy_count[PF_REPROJECT_KERNEL] == 1);
    CHECK(!strcmp(pf_reproject_stage_name(PF_REPROJECT_ENCODE), "encode"));
    pf_job_destroy(&job);
    pf_frame v = {0};
    CHECK_OK(pf_image_read(tmp("views/pano_view00.png"), PF_PIXFMT_RGB24, &v));
    CHECK_EQ_INT(v.width, 64);
    /* Looking forward (yaw 0): the centre column of the panorama, x ~ 256. */
    if (v.buf[0]) CHECK(abs(v.data[0][(size_t)24 * v.stride[0] + 32 * 3] - 128) <= 2);
    pf_frame_unref(&v);
    CHECK(exists(tmp("views/pano_view01.png")));
}

/* Ctrl-C: the job stops early, its video is complete under its name. */
static void cancel_running_job(void)
{
    const char *in[] = {g_clip};
    pf_segment_params p = seg_params(in, 1, tmp("cancel.y4m"));
    p.realtime = true; /* ~30 frames/s: a second of work, cancelled early */
    pf_job *job = NULL;
    CHECK_OK(pf_segment_start(&p, &job));
    REQUIRE(job);
    pf_job_progress pg = {0};
    while (pf_job_wait(job, 20000) == PF_TIMEOUT && pg.done < 3) pf_job_get_progress(job, &pg);
    pf_job_cancel_async(job);
    pf_job_cancel_async(job); /* idempotent */
    pf_job_result r;
    pf_status st = run(job, &r);
    CHECK_EQ_INT(st, PF_OK);
    CHECK_EQ_INT(r.status, PF_JOB_INTERRUPTED);
    CHECK(r.frames >= 3 && r.frames < 30);
    int64_t frames = r.frames;
    pf_job_destroy(&job);
    /* Renamed into place, every frame whole. */
    CHECK(exists(tmp("cancel.y4m")));
    pf_video_reader_params rp = pf_video_reader_params_default();
    rp.path = tmp("cancel.y4m");
    pf_video_reader *vr = NULL;
    CHECK_OK(pf_video_reader_create(&rp, &vr));
    int n = 0;
    pf_frame f = {0};
    pf_status rs;
    while (vr && (rs = pf_video_reader_read(vr, &f)) == PF_OK) {
        n++;
        pf_frame_unref(&f);
    }
    if (vr) CHECK_EQ_INT(rs, PF_EOF);
    CHECK_EQ_INT(n, frames);
    pf_video_reader_destroy(&vr);
    /* A job destroyed while it runs is cancelled and finished too. */
    CHECK_OK(pf_segment_start(&p, &job));
    pf_job_destroy(&job);
    CHECK(job == NULL);
    CHECK(exists(tmp("cancel.y4m")));
}

/* PF_ERR_INVALID naming the field, nothing reported, nothing written. */
static void bad_params(void)
{
    const char *in[] = {g_astronaut};
    const char *two[] = {g_clip, g_clip};
    pf_job *job = NULL;
    struct {
        const char *field;
        pf_segment_params p;
    } cases[8];
    int n = 0;
    cases[n].field = "batch";
    cases[n].p = seg_params(in, 1, tmp("never.png"));
    cases[n++].p.batch = 300;
    cases[n].field = "smooth";
    cases[n].p = seg_params(in, 1, tmp("never.png"));
    cases[n++].p.smooth = 2.0f;
    cases[n].field = "background";
    cases[n].p = seg_params(in, 1, tmp("never.png"));
    cases[n++].p.background = "#12345z";
    cases[n].field = "inputs";
    cases[n++].p = seg_params(in, 0, tmp("never.png"));
    cases[n].field = "crf";
    cases[n].p = seg_params(in, 1, tmp("never.png"));
    cases[n++].p.crf = 99;
    cases[n].field = "output";
    cases[n++].p = seg_params(two, 2, tmp("no_pattern.mp4"));
    for (int i = 0; i < n; i++) {
        g_msgs = 0;
        pf_status st = pf_segment_start(&cases[i].p, &job);
        CHECK_EQ_INT(st, PF_ERR_INVALID);
        CHECK(job == NULL);
        CHECK(!strncmp(pf_last_error(), cases[i].field, strlen(cases[i].field)));
        CHECK_EQ_INT(g_msgs, 0);
        fprintf(stderr, "  %s -> %s\n", cases[i].field, pf_last_error());
    }
    CHECK(!exists(tmp("never.png")));
    pf_reproject_params rp = pf_reproject_params_default();
    rp.inputs = in;
    rp.num_inputs = 1;
    rp.output_dir = tmp("never_views");
    rp.cube = PF_REPROJECT_CUBE_FACES;
    rp.cube_size = 64;
    rp.quality = 0;
    CHECK_EQ_INT(pf_reproject_start(&rp, &job), PF_ERR_INVALID);
    CHECK(!strncmp(pf_last_error(), "quality", 7));
    rp.quality = 90;
    rp.cube = PF_REPROJECT_NO_CUBE;
    CHECK_EQ_INT(pf_reproject_start(&rp, &job), PF_ERR_INVALID);
    CHECK(!strncmp(pf_last_error(), "views", 5));
    struct stat sb;
    CHECK(stat(tmp("never_views"), &sb) != 0);
    /* A failure that is not the params': reported, its own status. */
    const char *missing[] = {tmp("missing.png")};
    g_msgs = 0;
    pf_segment_params mp = seg_params(missing, 1, tmp("never.png"));
    pf_status st = pf_segment_start(&mp, &job);
    CHECK(st < 0 && st != PF_ERR_INVALID);
    CHECK(g_msgs > 0 && strstr(g_msg, "missing.png"));
    pf_segmenter_params gp = pf_segmenter_params_default();
    gp.smooth = 0;
    pf_segmenter *seg = NULL;
    CHECK_EQ_INT(pf_segmenter_create(&gp, &seg), PF_ERR_INVALID);
    CHECK(!strncmp(pf_last_error(), "smooth", 6));
}

static void model_find(void)
{
    char path[4096];
    CHECK_OK(pf_model_find("selfie", path, sizeof path));
    CHECK(strstr(path, "selfie_segmentation.tflite") != NULL);
    CHECK_OK(pf_model_find(NULL, path, sizeof path));
    CHECK_OK(pf_model_find("landscape", path, sizeof path));
    CHECK(strstr(path, "selfie_segmentation_landscape.tflite") != NULL);
    char real[4096];
    snprintf(real, sizeof real, "%s", path);
    /* $PIXFLOW_MODELS first, as a flat directory (the installed layout). */
    mkdir(tmp("models"), 0777);
    char link[512];
    snprintf(link, sizeof link, "%s/selfie_segmentation_landscape.tflite", tmp("models"));
    CHECK(symlink(real, link) == 0);
    const char *old = getenv("PIXFLOW_MODELS");
    char *keep = old ? strdup(old) : NULL;
    setenv("PIXFLOW_MODELS", tmp("models"), 1);
    CHECK_OK(pf_model_find("landscape", path, sizeof path));
    CHECK(!strcmp(path, link));
    if (keep) setenv("PIXFLOW_MODELS", keep, 1);
    else unsetenv("PIXFLOW_MODELS");
    free(keep);
    /* A path is taken as it is; a missing one is an error naming it. */
    CHECK_OK(pf_model_find(real, path, sizeof path));
    CHECK(!strcmp(path, real));
    CHECK_EQ_INT(pf_model_find(tmp("nope.tflite"), path, sizeof path), PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "nope.tflite") != NULL);
    CHECK_EQ_INT(pf_model_find("selfie", path, 1), PF_ERR_INVALID);
}

int main(void)
{
    const char *src = getenv("PF_SOURCE_DIR");
    if (!src) src = ".";
    snprintf(g_astronaut, sizeof g_astronaut, "%s/.data/astronaut.png", src);
    snprintf(g_clip, sizeof g_clip, "%s/.data/jobcheck/clip.y4m", src);
    char model[4096];
    if (!getenv("PIXFLOW_MODELS")) setenv("PIXFLOW_MODELS", src, 1);
    if (pf_model_find("selfie", model, sizeof model) != PF_OK || !exists(g_astronaut) ||
        !exists(g_clip)) {
        printf("SKIP: needs the selfie model, %s and %s\n", g_astronaut, g_clip);
        return 77;
    }
    setenv("PIXFLOW_DEVICE", "cpu", 1);
    snprintf(g_dir, sizeof g_dir, "/tmp/pf_test_jobs_XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    PF_RUN(bad_params);
    PF_RUN(model_find);
    PF_RUN(segment_image);
    PF_RUN(segmenter_equals_job);
    PF_RUN(segment_video);
    PF_RUN(reproject_equirect);
    PF_RUN(cancel_running_job);
    int rc = pf_test_finish();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (rc == 0 && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    return rc;
}
