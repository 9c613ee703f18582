/* face_decode.h - anchors and box decoding for MediaPipe's short-range face
 * detector (face_detection_short_range.tflite, BlazeFace).
 *
 * The model sees a 128x128 RGB image in [-1, 1] and answers, per anchor,
 * 16 regressors (box centre offset, box size, six keypoints, all in input
 * pixels) and one logit. The anchors are not in the file: they come from
 * MediaPipe's SSD anchor generator with the short-range options
 *   strides 8, 16, 16, 16; 2 anchors per layer (aspect 1 and the
 *   interpolated one); offset 0.5; fixed anchor size 1
 * so layers of equal stride share one feature map: 16x16 cells x 2 anchors
 * + 8x8 cells x 6 anchors = 896, ordered layer group, row, column, anchor.
 * With fixed-size anchors only the centres matter.
 *
 * Header-only (static inline) so tests can share it; it is meant to move
 * into the CLI when a `detect-faces` command needs it. Depends only on
 * pixflow/ops.h for the letterbox transform. */
#ifndef PF_FACE_DECODE_H
#define PF_FACE_DECODE_H

#include <math.h>
#include <stdbool.h>

#include "pixflow/ops.h"

#define FACE_SR_INPUT 128
#define FACE_SR_ANCHORS 896
#define FACE_SR_VALUES 16     /* regressors per anchor */
#define FACE_KEYPOINTS 6      /* right eye, left eye, nose, mouth, right ear, left ear
                                 (the subject's right: the image's left) */

typedef struct face_anchor {
    float x, y;               /* centre, normalised to the input (0..1) */
} face_anchor;

typedef struct face_det {
    int anchor;
    float score;              /* sigmoid of the clipped logit */
    float xmin, ymin, xmax, ymax;
    float kp[FACE_KEYPOINTS][2];
} face_det;

/* Fills out[0..cap) with the anchors of the given layer strides (layers of
 * equal, adjacent strides share one grid; each layer adds `per_layer`
 * anchors per cell). Returns the anchor count, or -1 when cap is too small
 * or a stride is not positive. */
static inline int face_anchors_generate(const int *strides, int n_layers, int per_layer,
                                        int input_size, face_anchor *out, int cap)
{
    int n = 0;
    for (int l = 0; l < n_layers;) {
        int last = l;
        while (last < n_layers && strides[last] == strides[l]) last++;
        if (strides[l] <= 0) return -1;
        const int per_cell = (last - l) * per_layer;
        const int grid = (input_size + strides[l] - 1) / strides[l];
        for (int y = 0; y < grid; y++)
            for (int x = 0; x < grid; x++)
                for (int a = 0; a < per_cell; a++) {
                    if (n >= cap) return -1;
                    out[n].x = ((float)x + 0.5f) / (float)grid;
                    out[n].y = ((float)y + 0.5f) / (float)grid;
                    n++;
                }
        l = last;
    }
    return n;
}

/* The 896 anchors of the short-range model. Returns 896 (or -1 if cap < 896). */
static inline int face_sr_anchors(face_anchor *out, int cap)
{
    static const int strides[4] = {8, 16, 16, 16};
    return face_anchors_generate(strides, 4, 2, FACE_SR_INPUT, out, cap);
}

static inline float face_score(float logit)
{
    const float c = logit < -100.0f ? -100.0f : (logit > 100.0f ? 100.0f : logit);
    return 1.0f / (1.0f + expf(-c));
}

/* Decodes anchor i from raw regressors reg[i * 16 ..] and logit cls[i] into
 * normalised input coordinates (0..1 over the 128x128 input). */
static inline face_det face_decode(const float *reg, const float *cls, const face_anchor *anchors,
                                   int i, float input_size)
{
    const float *r = reg + (size_t)i * FACE_SR_VALUES;
    const face_anchor a = anchors[i];
    face_det d;
    d.anchor = i;
    d.score = face_score(cls[i]);
    const float xc = r[0] / input_size + a.x, yc = r[1] / input_size + a.y;
    const float w = r[2] / input_size, h = r[3] / input_size;
    d.xmin = xc - 0.5f * w;
    d.xmax = xc + 0.5f * w;
    d.ymin = yc - 0.5f * h;
    d.ymax = yc + 0.5f * h;
    for (int k = 0; k < FACE_KEYPOINTS; k++) {
        d.kp[k][0] = r[4 + 2 * k] / input_size + a.x;
        d.kp[k][1] = r[5 + 2 * k] / input_size + a.y;
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

/* Intersection over union of two boxes given as (xmin, ymin, xmax, ymax). */
static inline float face_iou(const float *a, const float *b)
{
    const float iw = fminf(a[2], b[2]) - fmaxf(a[0], b[0]);
    const float ih = fminf(a[3], b[3]) - fmaxf(a[1], b[1]);
    if (iw <= 0.0f || ih <= 0.0f) return 0.0f;
    const float inter = iw * ih;
    const float ua = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
    return ua > 0.0f ? inter / ua : 0.0f;
}

#endif
