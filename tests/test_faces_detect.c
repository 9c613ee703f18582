/* Face detection post-processing (src/jobs/faces_detect.c, faces_roi.c):
 * MediaPipe's SSD anchors for both detector models, box + keypoint decoding,
 * weighted NMS on hand-made boxes (suppression, blending weights, ordering,
 * the face limit), the detection -> ROI rules and the ROI's inverse map. */
#include <math.h>

#include "jobs/faces_impl.h"
#include "pf_test.h"

#define NEAR(a, b, tol) (fabsf((float)(a) - (float)(b)) <= (tol))

static void test_anchors_short_range(void)
{
    static pf_face_anchor a[PF_FACE_MAX_ANCHORS];
    const pf_face_anchor_options o = pf_face_anchor_options_for(PF_FACE_SHORT_RANGE);
    REQUIRE(pf_face_anchors(&o, a, PF_FACE_MAX_ANCHORS) == 896);
    /* Stride 8: a 16x16 grid with 2 anchors per cell (aspect 1 + interpolated). */
    CHECK(NEAR(a[0].x, 0.5f / 16, 1e-7f) && NEAR(a[0].y, 0.5f / 16, 1e-7f));
    CHECK(a[1].x == a[0].x && a[1].y == a[0].y);
    CHECK(NEAR(a[2].x, 1.5f / 16, 1e-7f));
    CHECK(NEAR(a[511].x, 15.5f / 16, 1e-7f) && NEAR(a[511].y, 15.5f / 16, 1e-7f));
    /* Three stride-16 layers share an 8x8 grid: 6 anchors per cell. */
    CHECK(NEAR(a[512].x, 0.5f / 8, 1e-7f) && NEAR(a[512].y, 0.5f / 8, 1e-7f));
    CHECK(a[517].x == a[512].x && NEAR(a[518].x, 1.5f / 8, 1e-7f));
    CHECK(NEAR(a[895].x, 7.5f / 8, 1e-7f) && NEAR(a[895].y, 7.5f / 8, 1e-7f));
    /* Too small a buffer and bad options are refused, naming the field. */
    CHECK_EQ_INT(pf_face_anchors(&o, a, 100), -1);
    pf_face_anchor_options bad = o;
    bad.strides[2] = 0;
    bad.strides[3] = 0;
    CHECK_EQ_INT(pf_face_anchors(&bad, a, PF_FACE_MAX_ANCHORS), -1);
    CHECK(strstr(pf_last_error(), "strides[2]") != NULL);
}

static void test_anchors_full_range(void)
{
    static pf_face_anchor a[PF_FACE_MAX_ANCHORS];
    const pf_face_anchor_options o = pf_face_anchor_options_for(PF_FACE_FULL_RANGE);
    REQUIRE(pf_face_anchors(&o, a, PF_FACE_MAX_ANCHORS) == 2304);
    CHECK(NEAR(a[0].x, 0.5f / 48, 1e-7f) && NEAR(a[1].x, 1.5f / 48, 1e-7f));
    CHECK(NEAR(a[48].y, 1.5f / 48, 1e-7f) && NEAR(a[48].x, 0.5f / 48, 1e-7f));
    const pf_face_decode_params p = pf_face_decode_params_for(PF_FACE_FULL_RANGE);
    CHECK_EQ_INT(p.num_anchors, 2304);
    CHECK(p.scale == 192.0f && p.min_score == 0.6f && p.iou_threshold == 0.3f);
}

static void test_decode(void)
{
    pf_face_anchor a[2] = {{0.25f, 0.75f}, {0.5f, 0.5f}};
    float reg[2 * PF_FACE_COORDS] = {0}, cls[2] = {0.0f, 200.0f};
    float *r = reg + PF_FACE_COORDS; /* anchor 1 */
    r[0] = 12.8f;  /* centre x: +0.1 */
    r[1] = -6.4f;  /* centre y: -0.05 */
    r[2] = 25.6f;  /* width 0.2 */
    r[3] = 51.2f;  /* height 0.4 */
    for (int k = 0; k < PF_FACE_KEYPOINTS; k++) {
        r[4 + 2 * k] = (float)k * 12.8f;
        r[5 + 2 * k] = -(float)k * 12.8f;
    }
    const pf_face_det d = pf_face_decode_one(reg, cls, a, 1, 128.0f);
    CHECK(d.score == 1.0f); /* logit clipped to 100: sigmoid rounds to 1 */
    CHECK(NEAR(d.box[0], 0.5f, 1e-6f) && NEAR(d.box[2], 0.7f, 1e-6f));
    CHECK(NEAR(d.box[1], 0.25f, 1e-6f) && NEAR(d.box[3], 0.65f, 1e-6f));
    CHECK(NEAR(d.kp[3][0], 0.8f, 1e-6f) && NEAR(d.kp[3][1], 0.2f, 1e-6f));
    const pf_face_det z = pf_face_decode_one(reg, cls, a, 0, 128.0f);
    CHECK(z.score == 0.5f && z.box[0] == 0.25f && z.box[3] == 0.75f);
    CHECK(pf_face_score(-1000.0f) == pf_face_score(-100.0f)); /* clipped at +-100 */
}

static pf_face_det det(float score, float x0, float y0, float x1, float y1)
{
    pf_face_det d;
    memset(&d, 0, sizeof d);
    d.score = score;
    d.box[0] = x0;
    d.box[1] = y0;
    d.box[2] = x1;
    d.box[3] = y1;
    for (int k = 0; k < PF_FACE_KEYPOINTS; k++) {
        d.kp[k][0] = x0 + (float)k;
        d.kp[k][1] = y0;
    }
    return d;
}

static void test_iou(void)
{
    const float a[4] = {0, 0, 10, 10}, b[4] = {5, 0, 15, 10}, c[4] = {10, 0, 20, 10};
    const float e[4] = {3, 3, 3, 8};
    CHECK(NEAR(pf_face_iou(a, b), 50.0f / 150.0f, 1e-6f));
    CHECK(pf_face_iou(a, c) == 0.0f); /* touching is not overlapping */
    CHECK(pf_face_iou(a, a) == 1.0f);
    CHECK(pf_face_iou(a, e) == 0.0f); /* empty box */
}

static void test_nms_suppression_and_order(void)
{
    /* Two clusters and a loner; input order scrambled. */
    pf_face_det in[5] = {
        det(0.6f, 100, 100, 110, 110), /* loner, lowest */
        det(0.7f, 1, 0, 11, 10),       /* cluster A, IoU with A's best 9/11 */
        det(0.9f, 50, 50, 70, 70),     /* cluster B's best: the overall best */
        det(0.8f, 0, 0, 10, 10),       /* cluster A's best */
        det(0.85f, 52, 50, 72, 70),    /* cluster B */
    };
    pf_face_det out[5];
    int order[5];
    const int n = pf_face_nms_weighted(in, 5, 0.3f, 0, order, out);
    REQUIRE(n == 3);
    /* Descending score; each keeps its own best score. */
    CHECK(out[0].score == 0.9f && out[1].score == 0.8f && out[2].score == 0.6f);
    CHECK(out[0].box[0] > 50.0f && out[0].box[0] < 52.0f);
    CHECK(out[1].box[0] > 0.0f && out[1].box[0] < 1.0f);
    CHECK(out[2].box[0] == 100.0f);
    /* A box just under the threshold stays separate. */
    pf_face_det pair[2] = {det(0.9f, 0, 0, 10, 10), det(0.8f, 5.5f, 0, 15.5f, 10)};
    /* IoU = 45 / 155 = 0.29 < 0.3 */
    CHECK_EQ_INT(pf_face_nms_weighted(pair, 2, 0.3f, 0, order, out), 2);
}

static void test_nms_blending_weights(void)
{
    /* Scores 0.75 and 0.25: the blended box is 3:1 between the two. */
    pf_face_det in[2] = {det(0.25f, 4, 0, 14, 10), det(0.75f, 0, 0, 10, 10)};
    pf_face_det out[2];
    int order[2];
    REQUIRE(pf_face_nms_weighted(in, 2, 0.3f, 0, order, out) == 1);
    CHECK(out[0].score == 0.75f);
    CHECK(NEAR(out[0].box[0], 1.0f, 1e-6f) && NEAR(out[0].box[2], 11.0f, 1e-6f));
    CHECK(NEAR(out[0].box[1], 0.0f, 1e-6f) && NEAR(out[0].box[3], 10.0f, 1e-6f));
    for (int k = 0; k < PF_FACE_KEYPOINTS; k++) CHECK(NEAR(out[0].kp[k][0], 1.0f + (float)k, 1e-5f));
    /* A box overlapping only a suppressed member (not the best) is its own
     * group: overlap is always measured against the round's best box. */
    pf_face_det chain[3] = {det(0.9f, 0, 0, 10, 10), det(0.8f, 4, 0, 14, 10),
                            det(0.7f, 9, 0, 19, 10)};
    pf_face_det o3[3];
    int ord3[3];
    REQUIRE(pf_face_nms_weighted(chain, 3, 0.3f, 0, ord3, o3) == 2);
    CHECK(o3[1].score == 0.7f && o3[1].box[0] == 9.0f);
}

static void test_nms_max_faces_and_ties(void)
{
    pf_face_det in[6];
    for (int i = 0; i < 6; i++) in[i] = det(i < 2 ? 0.9f : 0.5f + 0.01f * (float)i, 20.0f * (float)i, 0, 20.0f * (float)i + 10, 10);
    pf_face_det out[6];
    int order[6];
    REQUIRE(pf_face_nms_weighted(in, 6, 0.3f, 3, order, out) == 3);
    /* Equal scores keep the lower input index first. */
    CHECK(out[0].box[0] == 0.0f && out[1].box[0] == 20.0f && out[2].box[0] == 100.0f);
    CHECK_EQ_INT(pf_face_nms_weighted(in, 0, 0.3f, 3, order, out), 0);
}

static void test_detect_cpu(void)
{
    /* Planted faces on the short-range anchors: each face lights three
     * neighbouring anchors; everything else is far below threshold. */
    static pf_face_anchor a[896];
    const pf_face_anchor_options o = pf_face_anchor_options_for(PF_FACE_SHORT_RANGE);
    REQUIRE(pf_face_anchors(&o, a, 896) == 896);
    static float reg[896 * PF_FACE_COORDS], cls[896];
    for (int i = 0; i < 896; i++) cls[i] = -8.0f;
    memset(reg, 0, sizeof reg);
    const int lit[6] = {100, 101, 102, 700, 701, 890};
    const float logit[6] = {3.0f, 2.0f, 1.0f, 4.0f, 0.5f, -0.1f}; /* -0.1: under 0.5 */
    for (int j = 0; j < 6; j++) {
        float *r = reg + lit[j] * PF_FACE_COORDS;
        r[2] = r[3] = 30.0f;
        cls[lit[j]] = logit[j];
    }
    const pf_face_decode_params p = pf_face_decode_params_for(PF_FACE_SHORT_RANGE);
    static unsigned char scratch[896 * (sizeof(pf_face_det) + sizeof(int))];
    REQUIRE(pf_face_scratch_size(&p) <= sizeof scratch);
    pf_face_det out[8];
    const int n = pf_face_detect_cpu(reg, cls, a, &p, 0, scratch, out, 8);
    REQUIRE(n == 2);
    CHECK(NEAR(out[0].score, pf_face_score(4.0f), 1e-7f));
    CHECK(NEAR(out[1].score, pf_face_score(3.0f), 1e-7f));
    /* Group 100..102: anchors 100/101 share a centre, 102 is 8 px right:
     * IoU (22/38) > 0.3, so all three blend, weighted by score. */
    const float s0 = pf_face_score(3.0f), s1 = pf_face_score(2.0f), s2 = pf_face_score(1.0f);
    const float cx = (s0 * a[100].x + s1 * a[101].x + s2 * a[102].x) / (s0 + s1 + s2);
    CHECK(NEAR(0.5f * (out[1].box[0] + out[1].box[2]), cx, 1e-6f));
    CHECK_EQ_INT(pf_face_detect_cpu(reg, cls, a, &p, 1, scratch, out, 8), 1);
    for (int i = 0; i < 896; i++) cls[i] = -8.0f;
    CHECK_EQ_INT(pf_face_detect_cpu(reg, cls, a, &p, 0, scratch, out, 8), 0);
}

static void test_roi_rules(void)
{
    /* Level eyes: no rotation; the box made square on its long side x 1.5. */
    pf_face_det d = det(0.9f, 100, 200, 140, 260);
    d.kp[0][0] = 110;
    d.kp[0][1] = 220;
    d.kp[1][0] = 130;
    d.kp[1][1] = 220;
    pf_face_roi r = pf_face_roi_from_detection(&d);
    CHECK(NEAR(r.rotation, 0.0f, 1e-7f));
    CHECK(r.cx == 120.0f && r.cy == 230.0f && r.w == 90.0f && r.h == 90.0f);
    /* The left eye (image right) lower by as much as it is right: the head
     * is rolled 45 degrees clockwise on screen, rotation +pi/4. */
    d.kp[1][1] = 240;
    d.kp[1][0] = 130;
    d.kp[0][0] = 110;
    d.kp[0][1] = 220;
    r = pf_face_roi_from_detection(&d);
    CHECK(NEAR(r.rotation, 0.78539816f, 1e-6f));
    /* The crop's x axis then runs along the eye line: the crop point
     * (1, 0.5) lies on it, side/2 from the centre. */
    float x, y;
    pf_face_roi_to_frame(&r, 1.0f, 0.5f, &x, &y);
    CHECK(NEAR(x, 120.0f + 45.0f * 0.70710678f, 1e-3f) && NEAR(y, 230.0f + 45.0f * 0.70710678f, 1e-3f));
    pf_face_roi_to_frame(&r, 0.5f, 0.5f, &x, &y);
    CHECK(NEAR(x, 120.0f, 1e-4f) && NEAR(y, 230.0f, 1e-4f));
    /* Eyes upside down (left eye on the image left): rotation pi -> -pi. */
    d.kp[0][0] = 130;
    d.kp[0][1] = 220;
    d.kp[1][0] = 110;
    d.kp[1][1] = 220;
    r = pf_face_roi_from_detection(&d);
    CHECK(NEAR(fabsf(r.rotation), 3.14159265f, 1e-6f));
}

static void test_roi_from_landmarks(void)
{
    static float lm[PF_FACE_LANDMARKS * 3];
    for (int i = 0; i < PF_FACE_LANDMARKS; i++) {
        lm[3 * i] = 50.0f + (float)(i % 20);      /* x in 50..69 */
        lm[3 * i + 1] = 10.0f + (float)(i % 31);  /* y in 10..40 */
        lm[3 * i + 2] = 0.0f;
    }
    lm[3 * 33 + 1] = lm[3 * 263 + 1] = 20.0f; /* level eye corners */
    lm[3 * 33] = 55.0f;
    lm[3 * 263] = 65.0f;
    float box[4];
    pf_face_landmarks_box(lm, PF_FACE_LANDMARKS, box);
    CHECK(box[0] == 50.0f && box[1] == 10.0f && box[2] == 69.0f && box[3] == 40.0f);
    const pf_face_roi r = pf_face_roi_from_landmarks(lm);
    CHECK(NEAR(r.rotation, 0.0f, 1e-7f));
    CHECK(r.cx == 59.5f && r.cy == 25.0f && NEAR(r.w, 45.0f, 1e-5f) && r.w == r.h);
}

int main(void)
{
    PF_RUN(test_anchors_short_range);
    PF_RUN(test_anchors_full_range);
    PF_RUN(test_decode);
    PF_RUN(test_iou);
    PF_RUN(test_nms_suppression_and_order);
    PF_RUN(test_nms_blending_weights);
    PF_RUN(test_nms_max_faces_and_ties);
    PF_RUN(test_detect_cpu);
    PF_RUN(test_roi_rules);
    PF_RUN(test_roi_from_landmarks);
    return pf_test_finish();
}
