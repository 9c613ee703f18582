/* The face tracker on a CUDA device (src/jobs/faces_tracker_cuda.c,
 * src/cuda/face_track.cu) against the CPU tracker with the real models:
 * astronaut.png (1 face, then the same frame tracked without the
 * detector), the astronaut's face tiled 4 x 4 (16 faces, full-range
 * detector), a blank frame (none), a clip of a window sliding over the
 * astronaut with detection every 3rd frame (ids and tracking), the same
 * clip as I420 (converted on the device), 4 streams in one batch (each
 * stream as its own CPU tracker sees it) and a frame in device memory.
 * Every case runs fp32 with the frame's CUDA graph, fp32 without it, and
 * fp16 with it.
 *
 * Per frame: the same face count and ids, then per face
 *   fp32: box corners within 1.0 px, landmarks (x, y) within 1.5 px (mean
 *         under 0.25 px), face flag within 1e-3;
 *   fp16: box corners within 4 px, landmarks within 6 px (mean under
 *         1.5 px), face flag within 2e-2.
 * (The detector and landmark model differ from the CPU's only by the
 * convolution arithmetic in fp32; the next frame's ROI comes from these
 * landmarks, so differences carry over a clip but do not grow: the model
 * pulls the landmarks back onto the face.) The graph cache is checked too:
 * with cuda_graph, later frames are replays; without, nothing is captured;
 * a trace of 6 frames shows one graph launch and one wait per frame.
 * Skips (77) without a GPU or without the models. */
#include <math.h>
#include <unistd.h>

#include "jobs/faces_impl.h"
#include "pf_test.h"

static char g_det[1024], g_det_full[1024], g_lm[1024];
static pf_frame g_img;
static pf_device *g_dev;

typedef struct variant {
    const char *name;
    bool fp16, graph;
    float box_tol, lm_tol, lm_mean_tol, flag_tol;
} variant;

static const variant k_variants[3] = {
    {"fp32 graph", false, true, 1.0f, 1.5f, 0.25f, 1e-3f},
    {"fp32 no-graph", false, false, 1.0f, 1.5f, 0.25f, 1e-3f},
    {"fp16 graph", true, true, 4.0f, 6.0f, 1.5f, 2e-2f},
};

static pf_face_tracker *make(pf_device *dev, const variant *v, const char *det, int max_faces,
                             int detect_every, int streams)
{
    pf_face_tracker_params p = pf_face_tracker_params_default();
    p.detector = det;
    p.landmarks = g_lm;
    p.device = dev;
    p.max_faces = max_faces;
    p.detect_every = detect_every;
    p.streams = streams;
    if (v) {
        p.fp16 = v->fp16;
        p.cuda_graph = v->graph;
    }
    pf_face_tracker *t = NULL;
    CHECK_OK(pf_face_tracker_create(&p, &t));
    return t;
}

/* Worst differences seen over a whole test, printed for the record. */
static float g_worst_box, g_worst_lm;

static void compare(const variant *v, const char *what, int frame, const pf_face *c, int nc,
                    const pf_face *g, int ng)
{
    if (nc != ng) fprintf(stderr, "  %s %s frame %d: cpu %d faces, cuda %d\n", v->name, what,
                          frame, nc, ng);
    CHECK_EQ_INT(ng, nc);
    for (int i = 0; i < nc && i < ng; i++) {
        CHECK_EQ_INT(g[i].id, c[i].id);
        float box = 0.0f, lm = 0.0f;
        double sum = 0.0;
        for (int q = 0; q < 4; q++) box = fmaxf(box, fabsf(g[i].box[q] - c[i].box[q]));
        for (int k = 0; k < PF_FACE_LANDMARKS; k++) {
            const float d = fmaxf(fabsf(g[i].landmarks[k][0] - c[i].landmarks[k][0]),
                                  fabsf(g[i].landmarks[k][1] - c[i].landmarks[k][1]));
            lm = fmaxf(lm, d);
            sum += d;
        }
        const double mean = sum / PF_FACE_LANDMARKS;
        g_worst_box = fmaxf(g_worst_box, box);
        g_worst_lm = fmaxf(g_worst_lm, lm);
        if (box > v->box_tol || lm > v->lm_tol || mean > v->lm_mean_tol)
            fprintf(stderr, "  %s %s frame %d face %d: box %.3f lm max %.3f mean %.3f px\n",
                    v->name, what, frame, i, (double)box, (double)lm, mean);
        CHECK(box <= v->box_tol);
        CHECK(lm <= v->lm_tol);
        CHECK(mean <= v->lm_mean_tol);
        CHECK(fabsf(g[i].score - c[i].score) <= v->flag_tol);
        for (int k = 0; k < PF_FACE_KEYPOINTS; k++)
            CHECK(fabsf(g[i].keypoints[k][0] - c[i].keypoints[k][0]) <= v->lm_tol &&
                  fabsf(g[i].keypoints[k][1] - c[i].keypoints[k][1]) <= v->lm_tol);
    }
}

static pf_face g_cpu[64], g_gpu[64];

/* Runs frames[0..n) through a CPU and a CUDA tracker and compares each. */
static void run_clip(const variant *v, const char *what, const char *det, int max_faces,
                     int detect_every, const pf_frame *frames, int n, int expect_first)
{
    pf_face_tracker *tc = make(NULL, NULL, det, max_faces, detect_every, 1);
    pf_face_tracker *tg = make(g_dev, v, det, max_faces, detect_every, 1);
    REQUIRE(tc && tg);
    for (int i = 0; i < n; i++) {
        int nc = -1, ng = -1;
        CHECK_OK(pf_face_tracker_process(tc, &frames[i], g_cpu, 64, &nc));
        CHECK_OK(pf_face_tracker_process(tg, &frames[i], g_gpu, 64, &ng));
        if (i == 0 && expect_first >= 0) CHECK_EQ_INT(nc, expect_first);
        compare(v, what, i, g_cpu, nc, g_gpu, ng);
    }
    pf_face_tracker_stats st;
    CHECK_OK(pf_face_tracker_get_stats(tg, &st));
    printf("    %s %s: %d frames, gpu %.3f ms/frame, %lld captures %lld replays\n", v->name,
           what, n, st.gpu_ms, (long long)st.graph_captures, (long long)st.graph_replays);
    CHECK(st.batches == n);
    if (!v->graph) CHECK(st.graph_captures == 0 && st.graph_replays == 0);
    /* The first run of each variant (with/without detector) is direct. */
    else if (n >= 3 && detect_every == 1) CHECK(st.graph_captures >= 1 && st.graph_replays >= 1);
    pf_face_tracker_destroy(&tc);
    pf_face_tracker_destroy(&tg);
}

static void copy_window(pf_frame *out, int x0, int y0, int w, int h)
{
    REQUIRE(pf_frame_alloc(out, PF_PIXFMT_RGB24, w, h, NULL, NULL) == PF_OK);
    for (int y = 0; y < h; y++)
        memcpy(out->data[0] + (size_t)y * out->stride[0],
               g_img.data[0] + (size_t)(y0 + y) * g_img.stride[0] + (size_t)x0 * 3, (size_t)w * 3);
}

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

static void blank(pf_frame *out, int w, int h)
{
    REQUIRE(pf_frame_alloc(out, PF_PIXFMT_RGB24, w, h, NULL, NULL) == PF_OK);
    for (int y = 0; y < h; y++) memset(out->data[0] + (size_t)y * out->stride[0], 0, (size_t)w * 3);
}

static void test_astronaut(void)
{
    /* Frame 0 detects, 1.. track from landmarks (detect_every 1 still
     * detects every frame: both variants of the graph get used). */
    const pf_frame frames[4] = {g_img, g_img, g_img, g_img};
    for (int v = 0; v < 3; v++) {
        run_clip(&k_variants[v], "astronaut", g_det, 4, 1, frames, 4, 1);
        run_clip(&k_variants[v], "astronaut tracked", g_det, 4, 1000, frames, 4, 1);
    }
}

static void test_tiles(void)
{
    pf_frame f;
    tile(&f, 127, 25, 200, 200, 4);
    const pf_frame frames[3] = {f, f, f};
    for (int v = 0; v < 3; v++) run_clip(&k_variants[v], "4x4 tiles", g_det_full, 16, 1, frames, 3, 16);
    pf_frame_unref(&f);
}

static void test_blank(void)
{
    pf_frame f;
    blank(&f, 640, 480);
    const pf_frame frames[3] = {f, f, f};
    for (int v = 0; v < 3; v++) run_clip(&k_variants[v], "blank", g_det, 4, 1, frames, 3, 0);
    pf_frame_unref(&f);
}

#define CLIP 12

static void test_moving(void)
{
    pf_frame frames[CLIP];
    for (int i = 0; i < CLIP; i++) copy_window(&frames[i], 20 + 6 * i, 0, 320, 320);
    for (int v = 0; v < 3; v++) run_clip(&k_variants[v], "moving clip", g_det, 4, 3, frames, CLIP, 1);
    for (int i = 0; i < CLIP; i++) pf_frame_unref(&frames[i]);
}

/* The moving clip as I420 frames: the CUDA tracker uploads and converts
 * them on the device, the CPU tracker on the host (the same bytes: the
 * conversion is bit-exact between backends), so the tolerances stay. */
static void test_yuv(void)
{
    pf_stream *st = NULL;
    pf_ops *ops = NULL;
    REQUIRE(pf_stream_create(NULL, &st) == PF_OK);
    pf_ops_params op = pf_ops_params_default();
    op.stream = st;
    REQUIRE(pf_ops_create(&op, &ops) == PF_OK);
    pf_frame rgb[CLIP], yuv[CLIP];
    for (int i = 0; i < CLIP; i++) {
        copy_window(&rgb[i], 20 + 6 * i, 0, 320, 320);
        REQUIRE(pf_frame_alloc(&yuv[i], PF_PIXFMT_I420, 320, 320, NULL, NULL) == PF_OK);
        CHECK_OK(pf_ops_convert(ops, &rgb[i], &yuv[i], NULL));
    }
    for (int v = 0; v < 3; v++) run_clip(&k_variants[v], "I420 clip", g_det, 4, 3, yuv, CLIP, 1);
    for (int i = 0; i < CLIP; i++) {
        pf_frame_unref(&rgb[i]);
        pf_frame_unref(&yuv[i]);
    }
    pf_ops_destroy(&ops);
    pf_stream_destroy(&st);
}

/* 4 streams in one batch: astronaut, blank, the moving clip, the clip
 * backwards; each must match its own CPU tracker. */
static void test_batch(void)
{
    pf_frame clip[CLIP], none;
    for (int i = 0; i < CLIP; i++) copy_window(&clip[i], 20 + 6 * i, 0, 320, 320);
    blank(&none, 320, 240);
    enum { S = 4 };
    for (int v = 0; v < 3; v++) {
        const variant *var = &k_variants[v];
        pf_face_tracker *tg = make(g_dev, var, g_det, 4, 2, S);
        pf_face_tracker *tc[S];
        for (int s = 0; s < S; s++) tc[s] = make(NULL, NULL, g_det, 4, 2, 1);
        REQUIRE(tg);
        static pf_face gf[S * 8], cf[8];
        for (int i = 0; i < CLIP; i++) {
            const pf_frame *in[S] = {&g_img, &none, &clip[i], &clip[CLIP - 1 - i]};
            int ng[S];
            CHECK_OK(pf_face_tracker_process_batch(tg, in, S, gf, 8, ng));
            for (int s = 0; s < S; s++) {
                int nc = -1;
                CHECK_OK(pf_face_tracker_process(tc[s], in[s], cf, 8, &nc));
                compare(var, "batch", i, cf, nc, gf + s * 8, ng[s]);
            }
        }
        pf_face_tracker_stats st;
        CHECK_OK(pf_face_tracker_get_stats(tg, &st));
        printf("    %s batch of %d streams: gpu %.3f ms/batch, %lld replays\n", var->name, S,
               st.gpu_ms, (long long)st.graph_replays);
        /* A batch must have one frame per stream. */
        const pf_frame *two[2] = {&g_img, &g_img};
        int n2[2];
        CHECK(pf_face_tracker_process_batch(tg, two, 2, gf, 8, n2) == PF_ERR_INVALID);
        pf_face_tracker_destroy(&tg);
        for (int s = 0; s < S; s++) pf_face_tracker_destroy(&tc[s]);
    }
    for (int i = 0; i < CLIP; i++) pf_frame_unref(&clip[i]);
    pf_frame_unref(&none);
}

static void test_device_frame(void)
{
    /* A frame already in device memory gives what its host copy gives. */
    pf_allocator_params ap = pf_allocator_params_default();
    ap.device = g_dev;
    pf_allocator *a = NULL;
    pf_stream_params sp = pf_stream_params_default();
    sp.device = g_dev;
    pf_stream *s = NULL;
    REQUIRE(pf_allocator_create(&ap, &a) == PF_OK && pf_stream_create(&sp, &s) == PF_OK);
    pf_frame d;
    REQUIRE(pf_frame_alloc(&d, PF_PIXFMT_RGB24, g_img.width, g_img.height, a, s) == PF_OK);
    CHECK_OK(pf_frame_copy_async(&d, &g_img, s));
    CHECK_OK(pf_stream_synchronize(s));
    pf_face_tracker *t1 = make(g_dev, &k_variants[0], g_det, 4, 1, 1);
    pf_face_tracker *t2 = make(g_dev, &k_variants[0], g_det, 4, 1, 1);
    REQUIRE(t1 && t2);
    int n1 = -1, n2 = -1;
    CHECK_OK(pf_face_tracker_process(t1, &g_img, g_cpu, 64, &n1));
    CHECK_OK(pf_face_tracker_process(t2, &d, g_gpu, 64, &n2));
    CHECK_EQ_INT(n1, 1);
    compare(&k_variants[0], "device frame", 0, g_cpu, n1, g_gpu, n2);
    pf_face_tracker_destroy(&t1);
    pf_face_tracker_destroy(&t2);
    pf_frame_unref(&d);
    pf_stream_destroy(&s);
    pf_allocator_destroy(&a);
}

static int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

/* The trace of 6 frames with the graph: the first runs the chain directly
 * ("launch"), the other 5 are one "graph launch" each; every frame one
 * "wait" on the host and one device span of the chain. */
static void test_trace(void)
{
    char path[] = "/tmp/pf_faces_traceXXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    pf_tracer_params trp = pf_tracer_params_default();
    trp.path = path;
    trp.max_events = 4096;
    trp.gpu = g_dev;
    pf_tracer *tr = NULL;
    CHECK_OK(pf_tracer_create(&trp, &tr));
    REQUIRE(tr);
    pf_face_tracker_params p = pf_face_tracker_params_default();
    p.detector = g_det;
    p.landmarks = g_lm;
    p.device = g_dev;
    p.tracer = tr;
    pf_face_tracker *t = NULL;
    CHECK_OK(pf_face_tracker_create(&p, &t));
    REQUIRE(t);
    for (int i = 0; i < 6; i++) {
        int n = -1;
        CHECK_OK(pf_face_tracker_process(t, &g_img, g_gpu, 64, &n));
        CHECK_EQ_INT(n, 1);
    }
    pf_face_tracker_destroy(&t);
    pf_tracer_destroy(&tr);
    FILE *f = fopen(path, "rb");
    REQUIRE(f);
    static char text[1 << 20];
    const size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = '\0';
    fclose(f);
    unlink(path);
    const int graph = count_of(text, "\"graph launch\""), direct = count_of(text, "\"launch\"");
    const int waits = count_of(text, "\"wait\""), chains = count_of(text, "\"faces chain");
    printf("    trace: %d graph launches, %d direct, %d waits, %d device spans\n", graph, direct,
           waits, chains);
    CHECK_EQ_INT(graph, 5);
    CHECK_EQ_INT(direct, 1);
    CHECK_EQ_INT(waits, 6);
    CHECK_EQ_INT(chains, 6);
}

int main(void)
{
    g_dev = pf_test_cuda_device_or_skip();
    const char *root = getenv("PF_SOURCE_DIR");
    if (!root || !*root) root = ".";
    snprintf(g_det, sizeof g_det,
             "%s/node_modules/@mediapipe/face_detection/face_detection_short_range.tflite", root);
    snprintf(g_det_full, sizeof g_det_full,
             "%s/node_modules/@mediapipe/face_detection/face_detection_full_range.tflite", root);
    const char *lm = getenv("PF_FACE_LANDMARK_MODEL");
    if (lm && *lm) snprintf(g_lm, sizeof g_lm, "%s", lm);
    else snprintf(g_lm, sizeof g_lm, "%s/node_modules/@mediapipe/face_mesh/face_landmark.tflite", root);
    char astro[1100];
    snprintf(astro, sizeof astro, "%s/.data/astronaut.png", root);
    if (access(g_det, R_OK) || access(g_det_full, R_OK) || access(g_lm, R_OK) ||
        access(astro, R_OK)) {
        printf("SKIP: models or images missing (%s, %s, %s)\n", g_det, g_lm, astro);
        return 77;
    }
    if (pf_image_read(astro, PF_PIXFMT_RGB24, &g_img) != PF_OK) {
        fprintf(stderr, "%s\n", pf_last_error());
        return 1;
    }
    PF_RUN(test_astronaut);
    PF_RUN(test_tiles);
    PF_RUN(test_blank);
    PF_RUN(test_moving);
    PF_RUN(test_yuv);
    PF_RUN(test_batch);
    PF_RUN(test_device_frame);
    PF_RUN(test_trace);
    printf("    worst differences over the run: box %.3f px, landmark %.3f px\n",
           (double)g_worst_box, (double)g_worst_lm);
    pf_frame_unref(&g_img);
    return pf_test_finish();
}
