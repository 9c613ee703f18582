/* The rotated ROI the landmark model sees, from a detection (its eyes) or
 * from the previous frame's landmarks, and its inverse: crop coordinates back
 * to frame pixels. MediaPipe computes these on normalised rects and converts
 * with the image size; with square_long the result is the same rectangle as
 * working in pixels throughout, which is what is done here. */
#include <math.h>

#include "faces_impl.h"

/* MediaPipe's NormalizeRadians: into [-pi, pi). */
static float normalize_radians(float a)
{
    const float two_pi = 6.28318530717958647692f;
    return a - two_pi * floorf((a + 3.14159265358979323846f) / two_pi);
}

/* DetectionsToRectsCalculator's rotation (target angle 0) followed by
 * RectTransformationCalculator (shift 0, square_long, scale 1.5). */
static pf_face_roi roi_from(const float box[4], float x0, float y0, float x1, float y1)
{
    pf_face_roi r;
    r.rotation = normalize_radians(0.0f - atan2f(-(y1 - y0), x1 - x0));
    r.cx = 0.5f * (box[0] + box[2]);
    r.cy = 0.5f * (box[1] + box[3]);
    const float w = box[2] - box[0], h = box[3] - box[1];
    const float side = (w > h ? w : h) * 1.5f;
    r.w = side;
    r.h = side;
    return r;
}

pf_face_roi pf_face_roi_from_detection(const pf_face_det *d)
{
    /* Keypoints 0 and 1: the subject's right eye and left eye. */
    return roi_from(d->box, d->kp[0][0], d->kp[0][1], d->kp[1][0], d->kp[1][1]);
}

void pf_face_landmarks_box(const float *lm, int n, float box[4])
{
    box[0] = box[2] = lm[0];
    box[1] = box[3] = lm[1];
    for (int i = 1; i < n; i++) {
        const float x = lm[3 * i], y = lm[3 * i + 1];
        box[0] = fminf(box[0], x);
        box[1] = fminf(box[1], y);
        box[2] = fmaxf(box[2], x);
        box[3] = fmaxf(box[3], y);
    }
}

pf_face_roi pf_face_roi_from_landmarks(const float *lm)
{
    float box[4];
    pf_face_landmarks_box(lm, PF_FACE_LANDMARKS, box);
    /* Landmarks 33 and 263: the outer corners of the right and left eye. */
    return roi_from(box, lm[3 * 33], lm[3 * 33 + 1], lm[3 * 263], lm[3 * 263 + 1]);
}

void pf_face_roi_to_frame(const pf_face_roi *r, float u, float v, float *x, float *y)
{
    /* LandmarkProjectionCalculator: centre, rotate, scale, translate. */
    const float c = cosf(r->rotation), s = sinf(r->rotation);
    const float dx = (u - 0.5f) * r->w, dy = (v - 0.5f) * r->h;
    *x = r->cx + c * dx - s * dy;
    *y = r->cy + s * dx + c * dy;
}
