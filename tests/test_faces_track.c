/* The face tracker on the CPU (src/jobs/faces_tracker.c) with the real
 * models: astronaut.png has one face (box and eye/mouth landmarks checked
 * against a hand-measured box), a blank frame none, a frame of 2 x 2
 * astronaut faces four with distinct ids, ids stable over a moving crop,
 * the detector skipped between detection frames, models with the wrong
 * outputs refused naming the expected shapes, several streams fed as one
 * batch (the same faces as separate trackers), an I420 frame (converted by
 * the tracker). messi5.jpg: what it finds is
 * printed (one face, the player's; see docs/faces.md).
 * Skips (77) when the models (node_modules/@mediapipe, face_landmark.tflite
 * from scripts/setup.sh, or $PF_FACE_LANDMARK_MODEL) or images are absent. */
#include <math.h>
#include <unistd.h>

#include "jobs/faces_impl.h"
#include "pf_test.h"

static char g_det[1024], g_det_full[1024], g_lm[1024], g_astro[1024], g_messi[1024];
static pf_frame g_img;
/* The astronaut's face, measured by hand on the image (tests/test_nn_models.c). */
static const float k_face[4] = {180, 78, 274, 172};

static pf_face_tracker *make_with(const char *det, int max_faces, int detect_every)
{
    pf_face_tracker_params p = pf_face_tracker_params_default();
        p.detector = det;
    p.landmarks = g_lm;
    p.max_faces = max_faces;
    p.detect_every = detect_every;
    pf_face_tracker *t = NULL;
    CHECK_OK(pf_face_tracker_create(&p, &t));
    return t;
}

static pf_face_tracker *make(int max_faces, int detect_every)
{
    return make_with(g_det, max_faces, detect_every);
}

static bool inside(const float *pt, const float *box)
{
    return pt[0] >= box[0] && pt[0] <= box[2] && pt[1] >= box[1] && pt[1] <= box[3];
}

static pf_face g_faces[16];

static void test_astronaut(void)
{
    pf_face_tracker *t = make(4, 1);
    REQUIRE(t);
    int n = -1;
    CHECK_OK(pf_face_tracker_process(t, &g_img, g_faces, 16, &n));
    REQUIRE(n == 1);
    const pf_face *f = &g_faces[0];
    printf("    astronaut: id %d score %.3f det %.3f box [%.1f %.1f %.1f %.1f] IoU %.3f\n", f->id,
           (double)f->score, (double)f->detection_score, (double)f->box[0], (double)f->box[1],
           (double)f->box[2], (double)f->box[3], (double)pf_face_iou(f->box, k_face));
    CHECK(f->id == 1 && f->score > 0.9f && f->detection_score > 0.7f);
    CHECK(pf_face_iou(f->box, k_face) > 0.5f);
    /* Eye corners (33, 133, 362, 263), lips (13, 14), nose tip (1) inside the face. */
    static const int idx[7] = {33, 133, 362, 263, 13, 14, 1};
    for (int i = 0; i < 7; i++) CHECK(inside(f->landmarks[idx[i]], k_face));
    /* The subject's right eye is on the image's left, above the mouth. */
    CHECK(f->keypoints[0][0] < f->keypoints[1][0]);
    CHECK(f->keypoints[0][1] < f->keypoints[3][1] && f->keypoints[1][1] < f->keypoints[3][1]);
    const char *dump = getenv("PF_FACES_DUMP");
    FILE *df = dump && *dump ? fopen(dump, "w") : NULL;
    for (int i = 0; df && i < PF_FACE_LANDMARKS; i++)
        fprintf(df, "%.1f %.1f\n", (double)f->landmarks[i][0], (double)f->landmarks[i][1]);
    if (df) fclose(df);
    /* The same frame again: tracked (no detector), the same id. */
    CHECK_OK(pf_face_tracker_process(t, &g_img, g_faces, 16, &n));
    CHECK(n == 1 && g_faces[0].id == 1);
    pf_face_tracker_destroy(&t);
}

static void test_blank(void)
{
    pf_face_tracker *t = make(4, 1);
    REQUIRE(t);
    pf_frame b;
    REQUIRE(pf_frame_alloc(&b, PF_PIXFMT_RGB24, 640, 480, NULL, NULL) == PF_OK);
    for (int y = 0; y < 480; y++) memset(b.data[0] + (size_t)y * b.stride[0], 0, 640 * 3);
    int n = -1;
    CHECK_OK(pf_face_tracker_process(t, &b, g_faces, 16, &n));
    CHECK_EQ_INT(n, 0);
    pf_frame_unref(&b);
    pf_face_tracker_destroy(&t);
}

/* A w x h RGB24 frame of the astronaut's region (x0, y0) tiled k x k. */
static void tile(pf_frame *out, int x0, int y0, int w, int h, int k)
{
    REQUIRE(pf_frame_alloc(out, PF_PIXFMT_RGB24, w * k, h * k, NULL, NULL) == PF_OK);
    for (int ty = 0; ty < k; ty++)
        for (int y = 0; y < h; y++)
            for (int tx = 0; tx < k; tx++)
                memcpy(out->data[0] + (size_t)(ty * h + y) * out->stride[0] + (size_t)tx * w * 3,
                       g_img.data[0] + (size_t)(y0 + y) * g_img.stride[0] + (size_t)x0 * 3,
                       (size_t)w * 3);
}

static void test_tiled_faces(void)
{
    /* 4 x 4 tiles of the 200x200 around the face: 16 faces of ~94 px in an
     * 800x800 frame, ~23 px at the full-range detector's 192x192 input
     * (with 256x256 tiles, 18 px, one of the 16 was missed). */
    pf_face_tracker *t = make_with(g_det_full, 16, 1);
    REQUIRE(t);
    pf_frame f;
    tile(&f, 127, 25, 200, 200, 4);
    int n = -1;
    CHECK_OK(pf_face_tracker_process(t, &f, g_faces, 16, &n));
    printf("    4x4 tiles of 200x200: %d faces\n", n);
    CHECK_EQ_INT(n, 16);
    /* Each tile's face sits in its own tile. */
    int seen[16] = {0};
    for (int i = 0; i < n; i++) {
        const float cx = 0.5f * (g_faces[i].box[0] + g_faces[i].box[2]);
        const float cy = 0.5f * (g_faces[i].box[1] + g_faces[i].box[3]);
        const int tx = (int)(cx / 200.0f), ty = (int)(cy / 200.0f);
        if (tx >= 0 && tx < 4 && ty >= 0 && ty < 4) seen[ty * 4 + tx]++;
    }
    for (int i = 0; i < 16; i++) CHECK_EQ_INT(seen[i], 1);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) CHECK(g_faces[i].id != g_faces[j].id);
    pf_frame_unref(&f);
    pf_face_tracker_destroy(&t);
}

static void test_moving_ids(void)
{
    /* A 320x320 window sliding 6 px a frame over the astronaut: the face
     * moves; detection every 3rd frame; the id must stay 1 throughout. */
    pf_face_tracker *t = make(4, 3);
    REQUIRE(t);
    int ok_frames = 0;
    for (int i = 0; i < 12; i++) {
        pf_frame w;
        const int x0 = 20 + 6 * i;
        REQUIRE(pf_frame_alloc(&w, PF_PIXFMT_RGB24, 320, 320, NULL, NULL) == PF_OK);
        for (int y = 0; y < 320; y++)
            memcpy(w.data[0] + (size_t)y * w.stride[0],
                   g_img.data[0] + (size_t)y * g_img.stride[0] + (size_t)x0 * 3, 320 * 3);
        int n = -1;
        CHECK_OK(pf_face_tracker_process(t, &w, g_faces, 16, &n));
        const float shifted[4] = {k_face[0] - (float)x0, k_face[1], k_face[2] - (float)x0, k_face[3]};
        if (n == 1 && g_faces[0].id == 1 && pf_face_iou(g_faces[0].box, shifted) > 0.5f) ok_frames++;
        pf_frame_unref(&w);
    }
    CHECK_EQ_INT(ok_frames, 12);
    pf_face_tracker_destroy(&t);
}

static void test_messi(void)
{
    pf_frame m;
    if (pf_image_read(g_messi, PF_PIXFMT_RGB24, &m) != PF_OK) {
        printf("    %s: not readable, skipped\n", g_messi);
        return;
    }
    /* Short range (faces within ~2 m: large in the frame) and full range. */
    pf_face_tracker *t = make(8, 1);
    REQUIRE(t);
    int n = -1;
    CHECK_OK(pf_face_tracker_process(t, &m, g_faces, 16, &n));
    printf("    messi5.jpg (%dx%d), short range: %d faces\n", m.width, m.height, n);
    pf_face_tracker_destroy(&t);
    t = make_with(g_det_full, 8, 1);
    REQUIRE(t);
    CHECK_OK(pf_face_tracker_process(t, &m, g_faces, 16, &n));
    printf("    messi5.jpg, full range: %d faces\n", n);
    /* The player's face (looked at on a drawing: the crowd behind is
     * blurred and too small); the box centre lies on it. */
    const float player[4] = {215, 85, 270, 140};
    CHECK(n == 1);
    if (n >= 1) {
        const float c[2] = {0.5f * (g_faces[0].box[0] + g_faces[0].box[2]),
                            0.5f * (g_faces[0].box[1] + g_faces[0].box[3])};
        CHECK(inside(c, player));
    }
    for (int i = 0; i < n; i++)
        printf("      id %d score %.3f det %.3f box [%.0f %.0f %.0f %.0f]\n", g_faces[i].id,
               (double)g_faces[i].score, (double)g_faces[i].detection_score,
               (double)g_faces[i].box[0], (double)g_faces[i].box[1], (double)g_faces[i].box[2],
               (double)g_faces[i].box[3]);
    pf_frame_unref(&m);
    pf_face_tracker_destroy(&t);
}

static void test_wrong_models(void)
{
    pf_face_tracker_params p = pf_face_tracker_params_default();
        p.detector = g_det;
    p.landmarks = g_det; /* a detector where the landmark model belongs */
    pf_face_tracker *t = NULL;
    CHECK(pf_face_tracker_create(&p, &t) == PF_ERR_FORMAT && t == NULL);
    CHECK(strstr(pf_last_error(), "[N,192,192,3]") != NULL);
    p.landmarks = g_lm;
    p.detector = g_lm; /* 192x192 input, but landmark outputs */
    CHECK(pf_face_tracker_create(&p, &t) == PF_ERR_FORMAT && t == NULL);
    printf("    %s\n", pf_last_error());
    CHECK(strstr(pf_last_error(), "[N,2304,16] (boxes + keypoints) and [N,2304,1]") != NULL);
    CHECK(strstr(pf_last_error(), "[-1,1,1,1404]") != NULL || strstr(pf_last_error(), "1404") != NULL);
    p.detector = g_det;
    p.max_faces = 0;
    CHECK(pf_face_tracker_create(&p, &t) == PF_ERR_INVALID);
}

static void test_streams(void)
{
    /* Several streams on the CPU: each stream is its own tracker, so a
     * batch gives what separate trackers give; a one-frame call and a batch
     * of the wrong size are refused naming the count; fp16 needs CUDA. */
    pf_face_tracker_params p = pf_face_tracker_params_default();
    p.detector = g_det;
    p.landmarks = g_lm;
    p.streams = 2;
    pf_face_tracker *t = NULL, *one = make(4, 1);
    CHECK_OK(pf_face_tracker_create(&p, &t));
    REQUIRE(t && one);
    pf_frame b;
    REQUIRE(pf_frame_alloc(&b, PF_PIXFMT_RGB24, 320, 240, NULL, NULL) == PF_OK);
    for (int y = 0; y < 240; y++) memset(b.data[0] + (size_t)y * b.stride[0], 0, 320 * 3);
    static pf_face two[2 * 4], ref[4];
    for (int i = 0; i < 3; i++) {
        const pf_frame *in[2] = {&b, &g_img};
        int n[2] = {-1, -1}, nr = -1;
        CHECK_OK(pf_face_tracker_process_batch(t, in, 2, two, 4, n));
        CHECK_OK(pf_face_tracker_process(one, &g_img, ref, 4, &nr));
        CHECK_EQ_INT(n[0], 0);
        CHECK_EQ_INT(n[1], 1);
        CHECK_EQ_INT(nr, 1);
        if (n[1] == 1 && nr == 1) CHECK(memcmp(&two[4], &ref[0], sizeof ref[0]) == 0);
    }
    int n1 = -1;
    CHECK(pf_face_tracker_process(t, &g_img, two, 4, &n1) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "2 streams") != NULL);
    const pf_frame *in1[1] = {&g_img};
    int n[2];
    CHECK(pf_face_tracker_process_batch(t, in1, 1, two, 4, n) == PF_ERR_INVALID);
    pf_face_tracker_stats st;
    CHECK_OK(pf_face_tracker_get_stats(t, &st));
    CHECK(st.batches == 3 && st.graph_captures == 0 && st.gpu_ms == 0.0);
    pf_face_tracker_destroy(&t);
    pf_face_tracker_destroy(&one);
    p.streams = 1;
    p.fp16 = true;
    CHECK(pf_face_tracker_create(&p, &t) == PF_ERR_UNSUPPORTED && t == NULL);
    p.fp16 = false;
    p.streams = 65;
    CHECK(pf_face_tracker_create(&p, &t) == PF_ERR_INVALID && t == NULL);
    pf_frame_unref(&b);
}

/* frame f as I420 (BT.601 limited, pixflow's CPU conversion) in *out. */
static void to_i420(const pf_frame *f, pf_frame *out)
{
    pf_stream *s = NULL;
    pf_ops *ops = NULL;
    REQUIRE(pf_stream_create(NULL, &s) == PF_OK);
    pf_ops_params op = pf_ops_params_default();
    op.stream = s;
    REQUIRE(pf_ops_create(&op, &ops) == PF_OK);
    REQUIRE(pf_frame_alloc(out, PF_PIXFMT_I420, f->width, f->height, NULL, NULL) == PF_OK);
    CHECK_OK(pf_ops_convert(ops, f, out, NULL));
    pf_ops_destroy(&ops);
    pf_stream_destroy(&s);
}

static void test_yuv_input(void)
{
    /* An I420 frame is converted by the tracker and gives the RGB frame's
     * face (the round trip through 4:2:0 moves the box by a pixel or so). */
    pf_frame yuv;
    to_i420(&g_img, &yuv);
    pf_face_tracker *a = make(4, 1), *b = make(4, 1);
    REQUIRE(a && b);
    static pf_face fy[4], fr[4];
    int ny = -1, nr = -1;
    CHECK_OK(pf_face_tracker_process(a, &yuv, fy, 4, &ny));
    CHECK_OK(pf_face_tracker_process(b, &g_img, fr, 4, &nr));
    CHECK_EQ_INT(ny, 1);
    CHECK_EQ_INT(nr, 1);
    if (ny == 1 && nr == 1) {
        float d = 0.0f;
        for (int q = 0; q < 4; q++) d = fmaxf(d, fabsf(fy[0].box[q] - fr[0].box[q]));
        printf("    I420 vs RGB24: box differs by %.2f px\n", (double)d);
        CHECK(d < 3.0f);
    }
    pf_face_tracker_destroy(&a);
    pf_face_tracker_destroy(&b);
    pf_frame_unref(&yuv);
}

static void test_model_names(void)
{
    /* The job's default names resolve through pf_model_find (the source
     * tree's node_modules when run from the build folder). */
    char path[4096];
    CHECK_OK(pf_model_find("face_detection", path, sizeof path));
    CHECK(strstr(path, "face_detection/face_detection_short_range.tflite") != NULL);
    CHECK_OK(pf_model_find("face_detection_full", path, sizeof path));
    CHECK(strstr(path, "face_detection_full_range.tflite") != NULL);
    CHECK(pf_model_find("face_nothing", path, sizeof path) == PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "face_landmark") != NULL);
}

int main(void)
{
    const char *root = getenv("PF_SOURCE_DIR");
    if (!root || !*root) root = ".";
    snprintf(g_det, sizeof g_det,
             "%s/node_modules/@mediapipe/face_detection/face_detection_short_range.tflite", root);
    snprintf(g_det_full, sizeof g_det_full,
             "%s/node_modules/@mediapipe/face_detection/face_detection_full_range.tflite", root);
    const char *lm = getenv("PF_FACE_LANDMARK_MODEL");
    if (lm && *lm) snprintf(g_lm, sizeof g_lm, "%s", lm);
    else snprintf(g_lm, sizeof g_lm, "%s/node_modules/@mediapipe/face_mesh/face_landmark.tflite", root);
    snprintf(g_astro, sizeof g_astro, "%s/.data/astronaut.png", root);
    snprintf(g_messi, sizeof g_messi, "%s/.data/messi5.jpg", root);
    if (access(g_det, R_OK) || access(g_lm, R_OK) || access(g_astro, R_OK)) {
        printf("SKIP: models or images missing (%s, %s, %s)\n", g_det, g_lm, g_astro);
        return 77;
    }
    if (pf_image_read(g_astro, PF_PIXFMT_RGB24, &g_img) != PF_OK) {
        fprintf(stderr, "%s\n", pf_last_error());
        return 1;
    }
    PF_RUN(test_astronaut);
    PF_RUN(test_blank);
    PF_RUN(test_tiled_faces);
    PF_RUN(test_moving_ids);
    PF_RUN(test_messi);
    PF_RUN(test_wrong_models);
    PF_RUN(test_streams);
    PF_RUN(test_yuv_input);
    PF_RUN(test_model_names);
    pf_frame_unref(&g_img);
    return pf_test_finish();
}
