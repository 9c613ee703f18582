/* face_decode.h - the model tests' view of the face detector's decoding
 * (tests/test_nn_models.c, tests/cuda/test_cuda_nn_models.c): a thin layer
 * over the library's own post-processing (src/jobs/faces_detect.c, checked
 * by tests/test_faces_detect.c), so the tests exercise the real anchors and
 * decoding. What stays here is test-only: the single best anchor and the
 * letterbox map used to compare one anchor against a hand-measured box. */
#ifndef PF_FACE_DECODE_H
#define PF_FACE_DECODE_H

#include <math.h>
#include <stdbool.h>

#include "jobs/faces_impl.h"
#include "pixflow/ops.h"

#define FACE_SR_INPUT 128
#define FACE_SR_ANCHORS 896
#define FACE_SR_VALUES PF_FACE_COORDS
#define FACE_KEYPOINTS PF_FACE_KEYPOINTS

typedef pf_face_anchor face_anchor;

typedef struct face_det {
    int anchor;
    float score;
    float xmin, ymin, xmax, ymax;
    float kp[FACE_KEYPOINTS][2];
} face_det;

/* The short-range model's 896 anchors (-1 if cap < 896). */
static inline int face_sr_anchors(face_anchor *out, int cap)
{
    const pf_face_anchor_options o = pf_face_anchor_options_for(PF_FACE_SHORT_RANGE);
    return pf_face_anchors(&o, out, cap);
}

static inline float face_score(float logit) { return pf_face_score(logit); }

/* Anchor i decoded by the library, normalised to the input (0..1). */
static inline face_det face_decode(const float *reg, const float *cls, const face_anchor *anchors,
                                   int i, float input_size)
{
    const pf_face_det p = pf_face_decode_one(reg, cls, anchors, i, input_size);
    face_det d;
    d.anchor = i;
    d.score = p.score;
    d.xmin = p.box[0];
    d.ymin = p.box[1];
    d.xmax = p.box[2];
    d.ymax = p.box[3];
    for (int k = 0; k < FACE_KEYPOINTS; k++) {
        d.kp[k][0] = p.kp[k][0];
        d.kp[k][1] = p.kp[k][1];
    }
    return d;
}

/* Index of the anchor with the highest logit (first on ties), -1 if n < 1. */
static inline int face_best_anchor(const float *cls, int n)
{
    int best = n > 0 ? 0 : -1;
    for (int i = 1; i < n; i++)
        if (cls[i] > cls[best]) best = i;
    return best;
}

/* Maps a detection in normalised input coordinates back to source pixels
 * through pf_ops_preprocess's letterbox report (src = roi + (dst - pad) /
 * scale); works unchanged for a stretched input (pad 0, per-axis scale). */
static inline face_det face_to_image(face_det d, const pf_letterbox_info *lb, pf_rect roi,
                                     int input_w, int input_h)
{
#define FACE_MAPX(v) ((float)roi.x + ((v) * (float)input_w - (float)lb->pad_left) / lb->scale_x)
#define FACE_MAPY(v) ((float)roi.y + ((v) * (float)input_h - (float)lb->pad_top) / lb->scale_y)
    d.xmin = FACE_MAPX(d.xmin);
    d.xmax = FACE_MAPX(d.xmax);
    d.ymin = FACE_MAPY(d.ymin);
    d.ymax = FACE_MAPY(d.ymax);
    for (int k = 0; k < FACE_KEYPOINTS; k++) {
        d.kp[k][0] = FACE_MAPX(d.kp[k][0]);
        d.kp[k][1] = FACE_MAPY(d.kp[k][1]);
    }
#undef FACE_MAPX
#undef FACE_MAPY
    return d;
}

static inline float face_iou(const float *a, const float *b) { return pf_face_iou(a, b); }

#endif
