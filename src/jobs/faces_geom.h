/* faces_geom.h - internal: the ROI geometry of the faces job as inline
 * functions shared verbatim by the CPU tracker (faces_roi.c) and the CUDA
 * kernels (src/cuda/face_track.cu), so both compute the same rectangles and
 * map landmarks back the same way (see faces_impl.h for MediaPipe's rules).
 * Pure functions: no state, thread-safe. */
#ifndef PF_JOBS_FACES_GEOM_H
#define PF_JOBS_FACES_GEOM_H

#include <math.h>

#include "faces_impl.h"

#ifdef __CUDACC__
#define PF_FG_HD static __host__ __device__ __forceinline__
#else
#define PF_FG_HD static inline
#endif

/* Sigmoid of the logit clipped to +-100 (score_clipping_thresh). */
PF_FG_HD float pf_fg_score(float logit)
{
    const float c = logit < -100.0f ? -100.0f : (logit > 100.0f ? 100.0f : logit);
    return 1.0f / (1.0f + expf(-c));
}

/* Intersection over union of two boxes (xmin, ymin, xmax, ymax); 0 when
 * either is empty or they do not overlap. */
PF_FG_HD float pf_fg_iou(const float *a, const float *b)
{
    const float aa = (a[2] - a[0]) * (a[3] - a[1]), ab = (b[2] - b[0]) * (b[3] - b[1]);
    if (!(aa > 0.0f) || !(ab > 0.0f)) return 0.0f;
    const float iw = fminf(a[2], b[2]) - fmaxf(a[0], b[0]);
    const float ih = fminf(a[3], b[3]) - fmaxf(a[1], b[1]);
    if (iw <= 0.0f || ih <= 0.0f) return 0.0f;
    const float inter = iw * ih;
    return inter / (aa + ab - inter);
}

/* MediaPipe's NormalizeRadians: into [-pi, pi). */
PF_FG_HD float pf_fg_normalize_radians(float a)
{
    const float two_pi = 6.28318530717958647692f;
    return a - two_pi * floorf((a + 3.14159265358979323846f) / two_pi);
}

/* DetectionsToRectsCalculator's rotation (target angle 0, from (x0, y0) to
 * (x1, y1)) followed by RectTransformationCalculator (shift 0, square_long,
 * scale 1.5) of box (xmin, ymin, xmax, ymax), all in pixels. */
PF_FG_HD pf_face_roi pf_fg_roi(const float box[4], float x0, float y0, float x1, float y1)
{
    pf_face_roi r;
    r.rotation = pf_fg_normalize_radians(0.0f - atan2f(-(y1 - y0), x1 - x0));
    r.cx = 0.5f * (box[0] + box[2]);
    r.cy = 0.5f * (box[1] + box[3]);
    const float w = box[2] - box[0], h = box[3] - box[1];
    const float side = (w > h ? w : h) * 1.5f;
    r.w = side;
    r.h = side;
    return r;
}

/* LandmarkProjectionCalculator: (u, v) normalised in the ROI's crop to frame
 * pixels: centre, rotate, scale, translate. */
PF_FG_HD void pf_fg_roi_to_frame(const pf_face_roi *r, float u, float v, float *x, float *y)
{
    const float c = cosf(r->rotation), s = sinf(r->rotation);
    const float dx = (u - 0.5f) * r->w, dy = (v - 0.5f) * r->h;
    *x = r->cx + c * dx - s * dy;
    *y = r->cy + s * dx + c * dy;
}

/* Landmarks 33 and 263 (the outer corners of the right and left eye) and the
 * landmarks' bounding box give the next frame's ROI. */
#define PF_FG_EYE_R 33
#define PF_FG_EYE_L 263

/* MediaPipe's six detection keypoints from the mesh: eye centres, nose tip,
 * mouth centre, ear tragions (subject's right first): the landmark pairs
 * averaged for keypoint k. */
PF_FG_HD void pf_fg_keypoint_pair(int k, int *a, int *b)
{
    const int pa[PF_FACE_KEYPOINTS] = {33, 362, 1, 13, 234, 454};
    const int pb[PF_FACE_KEYPOINTS] = {133, 263, 1, 14, 234, 454};
    *a = pa[k];
    *b = pb[k];
}

#endif
