/* Real models on a real photograph: MediaPipe's selfie segmentation (square
 * and landscape) and short-range face detector on .data/astronaut.png
 * (512x512, Eileen Collins in an orange flight suit, a flag at the left, a
 * shuttle model at the right, a black helmet in the bottom-right corner).
 *
 * What must hold (regions in image pixels, read off the photograph):
 *  - selfie masks: coverage (mask > 0.5) in [0.35, 0.70] of the frame (her
 *    head, about 140 x 175 px, and suit, about 340 x 320 px, make roughly
 *    50%; the helmet she holds may count or not, ~10%); mean >= 0.8 on her
 *    face and on the suit's torso; mean <= 0.2 in the two top corners (flag
 *    at the left, grey backdrop at the right) and on the backdrop right of
 *    the shuttle model.
 *  - face detection: the best anchor scores >= 0.5 and its box, mapped back
 *    through the letterbox transform, overlaps the reference face box with
 *    IoU >= 0.5; the eyes lie inside the box, her right eye left of her left
 *    eye, the nose below the eyes and the mouth below the nose. Run on the
 *    whole frame and on two crops whose letterbox pads (top and sides), so
 *    the mapping back is really exercised. Every anchor scoring >= 0.5 (the
 *    ones non-maximum suppression would merge) must also reach IoU >= 0.5.
 * The masks and the box drawing are written as PNGs to $PF_TEST_OUT (else
 * the working directory: the build's tests/ folder) for a person to look at.
 *
 * Skips (77) when the models (node_modules/@mediapipe) or the image are
 * absent: scripts/setup.sh installs both. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "face_decode.h"
#include "pf_test.h"
#include "pixflow/io.h"

#define IMG_W 512
#define IMG_H 512

typedef struct box {
    float x0, y0, x1, y1; /* image pixels, x1/y1 exclusive */
} box;

/* The face as marked by eye on a 4x zoom of the photograph with a 10 px
 * grid: forehead hairline (y 78) to chin (y 171), cheek (x 180) to cheek
 * (x 274); hair, ears and neck left out. Eyes at y ~103, mouth ~y 148. */
static const box k_face_ref = {180, 78, 274, 172};
static const box k_face_core = {195, 95, 260, 160};   /* eyes, nose, mouth */
static const box k_torso = {50, 255, 140, 340};        /* orange suit, left of the straps */
static const box k_bg[3] = {
    {0, 0, 40, 40},      /* top-left: flag */
    {472, 0, 512, 40},   /* top-right: grey backdrop */
    {472, 60, 512, 240}, /* backdrop right of the shuttle model */
};

static char g_root[1024], g_out[1024];
static pf_stream *g_stream;
static pf_ops *g_ops;
static pf_frame g_img;

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void model_path(char *buf, size_t size, const char *rel)
{
    snprintf(buf, size, "%s/node_modules/@mediapipe/%s", g_root, rel);
}

static void out_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", g_out, name);
}

/* Loads `rel`, checks that input 0 has shape in_shape (NHWC, batch 1), runs
 * it on the CPU and returns its outputs (allocated here, in model order;
 * the caller unrefs them). */
static bool run_cpu(const char *rel, const pf_tensor *in, pf_tensor *outs, int max_out, int *n_out)
{
    char path[1100];
    model_path(path, sizeof path, rel);
    pf_model *m = NULL;
    pf_nn_exec *x = NULL;
    bool ok = false;
    *n_out = 0;
    if (pf_model_load(path, &m) != PF_OK) {
        fprintf(stderr, "  pf_model_load(%s): %s\n", path, pf_last_error());
        goto done;
    }
    if (pf_model_num_inputs(m) != 1 || pf_model_num_outputs(m) > max_out) {
        fprintf(stderr, "  %s: %d inputs, %d outputs\n", rel, pf_model_num_inputs(m),
                pf_model_num_outputs(m));
        goto done;
    }
    pf_model_io mi = pf_model_input(m, 0);
    bool shape_ok = mi.ndim == in->ndim;
    for (int d = 1; shape_ok && d < mi.ndim; d++) shape_ok = mi.shape[d] == in->shape[d];
    if (!shape_ok) {
        fprintf(stderr, "  %s: input %s is not %lldx%lldx%lld\n", rel, mi.name,
                (long long)in->shape[1], (long long)in->shape[2], (long long)in->shape[3]);
        goto done;
    }
    const int no = pf_model_num_outputs(m);
    for (int i = 0; i < no; i++) {
        pf_model_io mo = pf_model_output(m, i);
        int64_t shape[PF_NN_MAX_DIMS];
        for (int d = 0; d < mo.ndim; d++) shape[d] = mo.shape[d] < 0 ? 1 : mo.shape[d];
        if (pf_tensor_alloc(&outs[i], PF_DTYPE_F32, mo.ndim, shape, PF_LAYOUT_NONE, NULL, NULL) !=
            PF_OK) {
            fprintf(stderr, "  %s: output %s: %s\n", rel, mo.name, pf_last_error());
            goto done;
        }
        *n_out = i + 1;
    }
    if (pf_nn_exec_create(m, NULL, &x) != PF_OK ||
        pf_nn_exec_run(x, NULL, in, 1, outs, no) != PF_OK) {
        fprintf(stderr, "  %s on the CPU: %s\n", rel, pf_last_error());
        goto done;
    }
    ok = true;
done:
    pf_nn_exec_destroy(&x);
    pf_model_free(&m);
    return ok;
}

static void unref_all(pf_tensor *t, int n)
{
    for (int i = 0; i < n; i++) pf_tensor_unref(&t[i]);
}

/* Preprocess the photograph (or a crop of it) into a new [1, h, w, 3] F32
 * tensor. */
static bool preprocess(int w, int h, float mean, float std, bool letterbox, const pf_rect *roi,
                       pf_tensor *dst, pf_letterbox_info *info)
{
    int64_t shape[4] = {1, h, w, 3};
    if (pf_tensor_alloc(dst, PF_DTYPE_F32, 4, shape, PF_LAYOUT_NHWC, NULL, NULL) != PF_OK)
        return false;
    pf_preprocess_params p = pf_preprocess_params_default();
    p.letterbox = letterbox;
    p.pad_value = 0.0f;  /* MediaPipe pads with zeros (black) */
    for (int c = 0; c < 3; c++) {
        p.mean[c] = mean;
        p.std[c] = std;
    }
    const pf_frame *src = &g_img;
    if (pf_ops_preprocess(g_ops, &src, roi, 1, dst, &p, info) != PF_OK) {
        fprintf(stderr, "  pf_ops_preprocess to %dx%d: %s\n", w, h, pf_last_error());
        return false;
    }
    return true;
}

/* ---- masks ---------------------------------------------------------------------- */

typedef struct mask_view {
    const float *m;
    int w, h;  /* mask size; it covers the whole image (stretched input) */
} mask_view;

/* Mean of the mask over the mask pixels whose centres fall in image box b. */
static double mask_mean(mask_view v, box b)
{
    double sum = 0;
    long n = 0;
    for (int y = 0; y < v.h; y++) {
        const float iy = ((float)y + 0.5f) * IMG_H / (float)v.h;
        if (iy < b.y0 || iy >= b.y1) continue;
        for (int x = 0; x < v.w; x++) {
            const float ix = ((float)x + 0.5f) * IMG_W / (float)v.w;
            if (ix < b.x0 || ix >= b.x1) continue;
            sum += v.m[(size_t)y * (size_t)v.w + (size_t)x];
            n++;
        }
    }
    return n ? sum / (double)n : -1.0;
}

static bool write_mask_png(mask_view v, const char *name)
{
    pf_frame f = {0};
    if (pf_frame_alloc(&f, PF_PIXFMT_GRAY8, v.w, v.h, NULL, NULL) != PF_OK) return false;
    for (int y = 0; y < v.h; y++)
        for (int x = 0; x < v.w; x++) {
            float m = v.m[(size_t)y * (size_t)v.w + (size_t)x];
            m = m < 0.0f ? 0.0f : (m > 1.0f ? 1.0f : m);
            f.data[0][(size_t)y * f.stride[0] + (size_t)x] = (uint8_t)lrintf(m * 255.0f);
        }
    char path[1200];
    out_path(path, sizeof path, name);
    pf_status st = pf_image_write(path, &f, NULL);
    if (st != PF_OK) fprintf(stderr, "  pf_image_write(%s): %s\n", path, pf_last_error());
    else printf("    wrote %s\n", path);
    pf_frame_unref(&f);
    return st == PF_OK;
}

/* Runs a selfie model on the stretched photograph and checks its mask. */
static void check_selfie(const char *rel, int w, int h, const char *png, double *coverage)
{
    pf_tensor in = {0}, out[2] = {{0}};
    int n_out = 0;
    bool ran = preprocess(w, h, 0.0f, 1.0f, false, NULL, &in, NULL) &&
               run_cpu(rel, &in, out, 2, &n_out);
    pf_tensor_unref(&in);
    CHECK(ran);
    if (!ran || n_out != 1 || out[0].ndim != 4 || out[0].shape[1] != h || out[0].shape[2] != w ||
        out[0].shape[3] != 1) {
        fprintf(stderr, "  %s: expected one [1,%d,%d,1] mask\n", rel, h, w);
        CHECK(false);
        unref_all(out, n_out);
        return;
    }
    mask_view v = {out[0].data, w, h};
    const int64_t n = (int64_t)w * h;
    int64_t above = 0, bad = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!(v.m[i] >= 0.0f && v.m[i] <= 1.0f)) bad++;
        if (v.m[i] > 0.5f) above++;
    }
    CHECK_EQ_INT(bad, 0);  /* a sigmoid output */
    *coverage = (double)above / (double)n;
    const double face = mask_mean(v, k_face_core), torso = mask_mean(v, k_torso);
    double bg[3];
    for (int i = 0; i < 3; i++) bg[i] = mask_mean(v, k_bg[i]);
    printf("    %s: coverage %.3f, face %.3f, torso %.3f, background %.3f %.3f %.3f\n", rel,
           *coverage, face, torso, bg[0], bg[1], bg[2]);
    CHECK(*coverage >= 0.35 && *coverage <= 0.70);
    CHECK(face >= 0.8);
    CHECK(torso >= 0.8);
    for (int i = 0; i < 3; i++) CHECK(bg[i] >= 0.0 && bg[i] <= 0.2);
    CHECK(write_mask_png(v, png));
    unref_all(out, n_out);
}

static void test_selfie_square(void)
{
    double cov = 0;
    check_selfie("selfie_segmentation/selfie_segmentation.tflite", 256, 256,
                 "selfie_segmentation_mask.png", &cov);
}

/* The landscape model takes 256 wide x 144 high. The square photograph is
 * stretched (MediaPipe's own graph does not keep the aspect ratio either):
 * the mask then covers the whole frame and its coverage is comparable. */
static void test_selfie_landscape(void)
{
    double cov = 0;
    check_selfie("selfie_segmentation/selfie_segmentation_landscape.tflite", 256, 144,
                 "selfie_segmentation_landscape_mask.png", &cov);
}

/* ---- face detection ------------------------------------------------------------ */

static void draw_rect(pf_frame *f, float x0, float y0, float x1, float y1, int t,
                      const uint8_t rgb[3])
{
    const int ix0 = (int)lrintf(x0), iy0 = (int)lrintf(y0), ix1 = (int)lrintf(x1) - 1,
              iy1 = (int)lrintf(y1) - 1;
    for (int y = iy0 - t / 2; y <= iy1 + t / 2; y++)
        for (int x = ix0 - t / 2; x <= ix1 + t / 2; x++) {
            if (x < 0 || y < 0 || x >= f->width || y >= f->height) continue;
            const bool edge = abs(x - ix0) <= t / 2 || abs(x - ix1) <= t / 2 ||
                              abs(y - iy0) <= t / 2 || abs(y - iy1) <= t / 2;
            if (!edge) continue;
            memcpy(f->data[0] + (size_t)y * f->stride[0] + (size_t)x * 3, rgb, 3);
        }
}

static void fill_square(pf_frame *f, float cx, float cy, int r, const uint8_t rgb[3])
{
    const int x = (int)lrintf(cx), y = (int)lrintf(cy);
    for (int yy = y - r; yy <= y + r; yy++)
        for (int xx = x - r; xx <= x + r; xx++)
            if (xx >= 0 && yy >= 0 && xx < f->width && yy < f->height)
                memcpy(f->data[0] + (size_t)yy * f->stride[0] + (size_t)xx * 3, rgb, 3);
}

/* Detects on `roi` of the photograph (letterboxed to 128x128) and returns
 * the best anchor in image pixels. */
static bool detect(const face_anchor *anchors, pf_rect roi, const float ref[4], face_det *out,
                   int *n_confident, float *min_iou)
{
    pf_tensor in = {0}, o[2] = {{0}};
    pf_letterbox_info lb;
    int n_out = 0;
    bool ok = preprocess(FACE_SR_INPUT, FACE_SR_INPUT, 0.5f, 0.5f, true, &roi, &in, &lb) &&
              run_cpu("face_detection/face_detection_short_range.tflite", &in, o, 2, &n_out);
    pf_tensor_unref(&in);
    if (ok && n_out != 2) {
        fprintf(stderr, "  face detector: %d outputs, expected 2\n", n_out);
        ok = false;
    }
    /* regressors [1, 896, 16] and classificators [1, 896, 1], in either order */
    const pf_tensor *reg = NULL, *cls = NULL;
    for (int i = 0; ok && i < 2; i++) {
        if (o[i].ndim == 3 && o[i].shape[1] == FACE_SR_ANCHORS && o[i].shape[2] == FACE_SR_VALUES)
            reg = &o[i];
        if (o[i].ndim == 3 && o[i].shape[1] == FACE_SR_ANCHORS && o[i].shape[2] == 1) cls = &o[i];
    }
    if (ok && (!reg || !cls)) {
        fprintf(stderr, "  face detector: outputs are not [1,896,16] + [1,896,1]\n");
        ok = false;
    }
    if (ok) {
        const int best = face_best_anchor(cls->data, FACE_SR_ANCHORS);
        face_det d = face_decode(reg->data, cls->data, anchors, best, (float)FACE_SR_INPUT);
        *out = face_to_image(d, &lb, roi, FACE_SR_INPUT, FACE_SR_INPUT);
        /* Every confident anchor (what non-maximum suppression would merge)
         * must land on the face too: neighbouring anchors sit at other
         * centres, so their offsets test the decoding beyond the best one. */
        *n_confident = 0;
        *min_iou = 1.0f;
        for (int i = 0; i < FACE_SR_ANCHORS; i++) {
            if (face_score(((const float *)cls->data)[i]) < 0.5f) continue;
            face_det c = face_decode(reg->data, cls->data, anchors, i, (float)FACE_SR_INPUT);
            c = face_to_image(c, &lb, roi, FACE_SR_INPUT, FACE_SR_INPUT);
            const float cb[4] = {c.xmin, c.ymin, c.xmax, c.ymax};
            *min_iou = fminf(*min_iou, face_iou(cb, ref));
            (*n_confident)++;
        }
        printf("    roi %dx%d+%d+%d (pad %d,%d): anchor %d score %.3f box [%.1f %.1f %.1f %.1f]"
               ", %d anchors >= 0.5 (min IoU %.3f)\n",
               roi.width, roi.height, roi.x, roi.y, lb.pad_left, lb.pad_top, best, out->score,
               out->xmin, out->ymin, out->xmax, out->ymax, *n_confident, *min_iou);
    }
    unref_all(o, n_out);
    return ok;
}

static void test_face_detection(void)
{
    face_anchor anchors[FACE_SR_ANCHORS];
    REQUIRE(face_sr_anchors(anchors, FACE_SR_ANCHORS) == FACE_SR_ANCHORS);
    /* The generator's layout: 16x16 cells of 2 first, then 8x8 cells of 6. */
    CHECK(fabsf(anchors[0].x - 0.5f / 16) < 1e-6f && fabsf(anchors[1].x - 0.5f / 16) < 1e-6f);
    CHECK(fabsf(anchors[2].x - 1.5f / 16) < 1e-6f);
    CHECK(fabsf(anchors[511].x - 15.5f / 16) < 1e-6f && fabsf(anchors[511].y - 15.5f / 16) < 1e-6f);
    CHECK(fabsf(anchors[512].x - 0.5f / 8) < 1e-6f && fabsf(anchors[517].x - 0.5f / 8) < 1e-6f);
    CHECK(fabsf(anchors[518].x - 1.5f / 8) < 1e-6f);
    CHECK(fabsf(anchors[895].x - 7.5f / 8) < 1e-6f && fabsf(anchors[895].y - 7.5f / 8) < 1e-6f);
    face_anchor small[10];
    CHECK_EQ_INT(face_sr_anchors(small, 10), -1);

    /* whole frame (square: no padding), a wide crop (pads top and bottom),
     * a tall crop (pads left and right) */
    const pf_rect rois[3] = {{0, 0, IMG_W, IMG_H}, {0, 0, IMG_W, 300}, {120, 20, 220, 400}};
    const float ref[4] = {k_face_ref.x0, k_face_ref.y0, k_face_ref.x1, k_face_ref.y1};
    face_det first = {0};
    for (int r = 0; r < 3; r++) {
        face_det d;
        int n_conf = 0;
        float min_iou = 0;
        const bool ok = detect(anchors, rois[r], ref, &d, &n_conf, &min_iou);
        CHECK(ok);
        if (!ok) continue;
        const float bx[4] = {d.xmin, d.ymin, d.xmax, d.ymax};
        const float iou = face_iou(bx, ref);
        printf("    IoU with the reference face box %.3f\n", iou);
        CHECK(d.score >= 0.5f);
        CHECK(iou >= 0.5f);
        CHECK(n_conf >= 1 && min_iou >= 0.5f);
        /* keypoints: eyes in the box, her right eye (image left) first,
         * nose below the eyes, mouth below the nose */
        for (int k = 0; k < 2; k++)
            CHECK(d.kp[k][0] > d.xmin && d.kp[k][0] < d.xmax && d.kp[k][1] > d.ymin &&
                  d.kp[k][1] < d.ymax);
        CHECK(d.kp[0][0] < d.kp[1][0]);
        CHECK(d.kp[2][1] > fmaxf(d.kp[0][1], d.kp[1][1]));
        CHECK(d.kp[3][1] > d.kp[2][1]);
        if (r == 0) first = d;
    }

    /* The picture: reference box blue, detection green, keypoints red. */
    pf_frame f = {0};
    REQUIRE(pf_frame_alloc(&f, PF_PIXFMT_RGB24, IMG_W, IMG_H, NULL, NULL) == PF_OK);
    for (int y = 0; y < IMG_H; y++)
        memcpy(f.data[0] + (size_t)y * f.stride[0], g_img.data[0] + (size_t)y * g_img.stride[0],
               (size_t)IMG_W * 3);
    static const uint8_t blue[3] = {40, 90, 255}, green[3] = {0, 230, 0}, red[3] = {255, 0, 0};
    draw_rect(&f, k_face_ref.x0, k_face_ref.y0, k_face_ref.x1, k_face_ref.y1, 1, blue);
    draw_rect(&f, first.xmin, first.ymin, first.xmax, first.ymax, 3, green);
    for (int k = 0; k < FACE_KEYPOINTS; k++) fill_square(&f, first.kp[k][0], first.kp[k][1], 2, red);
    char path[1200];
    out_path(path, sizeof path, "face_detection_short_range_box.png");
    CHECK_OK(pf_image_write(path, &f, NULL));
    printf("    wrote %s\n", path);
    pf_frame_unref(&f);
}

int main(void)
{
    const char *root = getenv("PF_SOURCE_DIR");
    snprintf(g_root, sizeof g_root, "%s", root && *root ? root : ".");
    const char *out = getenv("PF_TEST_OUT");
    snprintf(g_out, sizeof g_out, "%s", out && *out ? out : ".");

    static const char *needed[] = {
        "selfie_segmentation/selfie_segmentation.tflite",
        "selfie_segmentation/selfie_segmentation_landscape.tflite",
        "face_detection/face_detection_short_range.tflite",
    };
    char path[1200];
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++) {
        model_path(path, sizeof path, needed[i]);
        if (!exists(path)) {
            printf("SKIP: %s absent (scripts/setup.sh installs it)\n", path);
            return 77;
        }
    }
    snprintf(path, sizeof path, "%s/.data/astronaut.png", g_root);
    if (!exists(path)) {
        printf("SKIP: %s absent (scripts/setup.sh installs it)\n", path);
        return 77;
    }
    if (!pf_io_have_png()) {
        printf("SKIP: built without PNG support\n");
        return 77;
    }
    if (out && *out && mkdir(out, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "cannot create PF_TEST_OUT %s: %s\n", out, strerror(errno));
        return 1;
    }
    if (pf_image_read(path, PF_PIXFMT_RGB24, &g_img) != PF_OK) {
        fprintf(stderr, "pf_image_read: %s\n", pf_last_error());
        return 1;
    }
    if (g_img.width != IMG_W || g_img.height != IMG_H) {
        fprintf(stderr, "%s is %dx%d; the reference regions are for 512x512\n", path,
                g_img.width, g_img.height);
        return 1;
    }
    pf_stream_params sp = pf_stream_params_default();
    pf_ops_params op = pf_ops_params_default();
    if (pf_stream_create(&sp, &g_stream) != PF_OK ||
        (op.stream = g_stream, pf_ops_create(&op, &g_ops)) != PF_OK) {
        fprintf(stderr, "setup: %s\n", pf_last_error());
        return 1;
    }
    PF_RUN(test_selfie_square);
    PF_RUN(test_selfie_landscape);
    PF_RUN(test_face_detection);
    pf_ops_destroy(&g_ops);
    pf_stream_destroy(&g_stream);
    pf_frame_unref(&g_img);
    return pf_test_finish();
}
