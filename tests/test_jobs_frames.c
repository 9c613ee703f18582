/* The jobs' per-frame callback (pf_segment_params.on_frame,
 * pf_reproject_params.on_frame) and the segment result's stages, which
 * `pixflow bench segment|reproject` are built on: one call per finished frame
 * (as many as the result's frames), each seq once, read <= done, times
 * inside the run; the stages named in pipeline order with busy shares in
 * 0..1. Needs .data/jobcheck/clip.y4m, .data/astronaut.png and the selfie
 * model; exits 77 (skipped) without them. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pf_test.h"
#include "pixflow/pixflow.h"

#define MAX_FRAMES 256

typedef struct seen {
    pthread_mutex_t lock;
    int n;
    pf_job_frame f[MAX_FRAMES];
} seen;

static void on_frame(void *user, const pf_job_frame *f)
{
    seen *s = user;
    pthread_mutex_lock(&s->lock);
    if (s->n < MAX_FRAMES) s->f[s->n] = *f;
    s->n++;
    pthread_mutex_unlock(&s->lock);
}

static char g_clip[4096], g_image[4096], g_dir[64];

/* Every frame once (seq 0..n-1 of source 0), read before done, inside [t0, t1]. */
static void check_frames(const seen *s, int n, int64_t t0, int64_t t1)
{
    CHECK_EQ_INT(s->n, n);
    REQUIRE(s->n <= MAX_FRAMES);
    char once[MAX_FRAMES] = {0};
    for (int i = 0; i < s->n; i++) {
        const pf_job_frame *f = &s->f[i];
        CHECK(f->source == 0);
        CHECK(f->seq >= 0 && f->seq < MAX_FRAMES);
        if (f->seq >= 0 && f->seq < MAX_FRAMES) once[f->seq]++;
        CHECK(t0 <= f->t_start_ns && f->t_start_ns <= f->t_done_ns && f->t_done_ns <= t1);
    }
    for (int i = 0; i < n; i++) CHECK_EQ_INT(once[i], 1);
}

static void segment_frames(void)
{
    seen s = {.n = 0};
    pthread_mutex_init(&s.lock, NULL);
    const char *in[] = {g_clip};
    pf_segment_params p = pf_segment_params_default();
    p.inputs = in;
    p.num_inputs = 1;
    p.output = "null";
    p.batch = 4;
    p.max_frames = 10;
    p.on_frame = on_frame;
    p.user = &s;
    pf_job *job = NULL;
    int64_t t0 = pf_time_ns();
    CHECK_OK(pf_segment_start(&p, &job));
    REQUIRE(job);
    CHECK_OK(pf_job_wait(job, -1));
    int64_t t1 = pf_time_ns();
    pf_job_result r;
    CHECK_OK(pf_job_get_result(job, &r));
    CHECK_EQ_INT((int)r.frames, 10);
    check_frames(&s, 10, t0, t1);
    /* The stages: read first, write last, busy shares in range. */
    REQUIRE(r.num_stages >= 6 && r.stages);
    CHECK(!strcmp(r.stages[0].name, "read"));
    CHECK(!strcmp(r.stages[r.num_stages - 1].name, "write"));
    for (int i = 0; i < r.num_stages; i++) {
        CHECK(r.stages[i].busy >= 0 && r.stages[i].busy <= 1.0001);
        CHECK(r.stages[i].name && r.stages[i].name[0]);
    }
    pf_job_destroy(&job);
    pthread_mutex_destroy(&s.lock);
}

static void reproject_frames(void)
{
    seen s = {.n = 0};
    pthread_mutex_init(&s.lock, NULL);
    const char *in[] = {g_image};
    pf_view v = {.yaw = 0, .fov = 90, .width = 16, .height = 12};
    pf_reproject_params p = pf_reproject_params_default();
    p.inputs = in;
    p.num_inputs = 1;
    p.output_dir = g_dir;
    p.views = &v;
    p.num_views = 1;
    p.on_frame = on_frame;
    p.user = &s;
    pf_job *job = NULL;
    int64_t t0 = pf_time_ns();
    CHECK_OK(pf_reproject_start(&p, &job));
    REQUIRE(job);
    CHECK_OK(pf_job_wait(job, -1));
    int64_t t1 = pf_time_ns();
    pf_job_result r;
    CHECK_OK(pf_job_get_result(job, &r));
    CHECK_EQ_INT((int)r.frames, 1);
    check_frames(&s, 1, t0, t1);
    pf_job_destroy(&job);
    pthread_mutex_destroy(&s.lock);
    char out[4200];
    snprintf(out, sizeof out, "%s/astronaut_view00.jpg", g_dir);
    unlink(out);
}

int main(void)
{
    const char *src = getenv("PF_SOURCE_DIR");
    if (!src) src = ".";
    snprintf(g_clip, sizeof g_clip, "%s/.data/jobcheck/clip.y4m", src);
    snprintf(g_image, sizeof g_image, "%s/.data/astronaut.png", src);
    char model[4096];
    struct stat st;
    if (!getenv("PIXFLOW_MODELS")) setenv("PIXFLOW_MODELS", src, 1);
    if (pf_model_find("selfie", model, sizeof model) != PF_OK || stat(g_clip, &st) != 0 ||
        stat(g_image, &st) != 0) {
        printf("SKIP: needs the selfie model, %s and %s\n", g_clip, g_image);
        return 77;
    }
    setenv("PIXFLOW_DEVICE", "cpu", 1);
    snprintf(g_dir, sizeof g_dir, "/tmp/pf_test_jobs_frames_XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    PF_RUN(segment_frames);
    PF_RUN(reproject_frames);
    rmdir(g_dir);
    return pf_test_finish();
}
