/* The rotated ROI the landmark model sees, from a detection (its eyes) or
 * from the previous frame's landmarks, and its inverse: crop coordinates back
 * to frame pixels. MediaPipe computes these on normalised rects and converts
 * with the image size; with square_long the result is the same rectangle as
 * working in pixels throughout, which is what is done here. The arithmetic
 * is faces_geom.h's, shared with the CUDA kernels. */
#include <math.h>

#include "faces_geom.h"

pf_face_roi pf_face_roi_from_detection(const pf_face_det *d)
{
    /* Keypoints 0 and 1: the subject's right eye and left eye. */
    return pf_fg_roi(d->box, d->kp[0][0], d->kp[0][1], d->kp[1][0], d->kp[1][1]);
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
    return pf_fg_roi(box, lm[3 * PF_FG_EYE_R], lm[3 * PF_FG_EYE_R + 1], lm[3 * PF_FG_EYE_L],
                     lm[3 * PF_FG_EYE_L + 1]);
}

void pf_face_roi_to_frame(const pf_face_roi *r, float u, float v, float *x, float *y)
{
    pf_fg_roi_to_frame(r, u, v, x, y);
}
