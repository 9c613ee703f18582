/* faces_impl.h - internal to the faces job (src/jobs/faces_*.c and its CUDA
 * kernels in src/cuda/face_*.cu): MediaPipe's face detection post-processing
 * (SSD anchors, box + keypoint decoding, weighted NMS) and the geometry that
 * turns a detection or a landmark set into the rotated ROI the landmark model
 * sees, and landmarks back into frame pixels.
 *
 * Everything here follows MediaPipe's graphs for the same models so the
 * numbers agree with theirs:
 * - anchors: SsdAnchorsCalculator with the options of
 *   face_detection_short_range.pbtxt (128x128, strides 8,16,16,16, aspect 1
 *   plus the interpolated scale, offset 0.5, fixed anchor size: 896 anchors)
 *   and face_detection_full_range.pbtxt (192x192, stride 4, no interpolated
 *   scale: 48x48 = 2304 anchors);
 * - decoding: TensorsToDetectionsCalculator (reverse_output_order: x, y, w, h,
 *   then six x, y keypoints, all in input pixels, divided by the input size
 *   and offset by the anchor centre; score = sigmoid of the logit clipped to
 *   +-100; kept when score >= min_score);
 * - NMS: NonMaxSuppressionCalculator, WEIGHTED algorithm, IoU overlap: the
 *   best remaining detection collects every remaining box whose IoU with it
 *   is above the threshold (itself included); its box and keypoints become
 *   the score-weighted average of that group, its score stays its own, and
 *   the group leaves the pool. Output is in descending score order.
 * - ROI: face_detection_front_detection_to_roi.pbtxt (rotation from keypoint
 *   0 to keypoint 1, the eyes, target angle 0; the box made square on its
 *   long side in pixels, then scaled by 1.5) and, for tracked faces,
 *   face_landmark_landmarks_to_roi.pbtxt (the landmarks' bounding box,
 *   rotation from landmark 33 to 263, the same square-and-scale).
 *
 * Coordinates are normalised to the detector input (0..1) until mapped to
 * frame pixels by the caller's letterbox. All functions are pure (no
 * allocation, no globals) and thread-safe. */
#ifndef PF_JOBS_FACES_IMPL_H
#define PF_JOBS_FACES_IMPL_H

#include <stddef.h>

#include "pixflow/core.h"
#include "pixflow/jobs.h"
#include "pixflow/nn.h"

/* PF_FACE_KEYPOINTS and PF_FACE_LANDMARKS come from pixflow/jobs.h. */
#define PF_FACE_COORDS 16        /* regressors per anchor: 4 box + 6 x 2 keypoints */
#define PF_FACE_LANDMARK_INPUT 192
#define PF_FACE_MAX_ANCHORS 2304 /* the full-range model's; short range has 896 */

typedef enum pf_face_model {
    PF_FACE_SHORT_RANGE = 0,     /* face_detection_short_range.tflite: 128x128, 896 anchors */
    PF_FACE_FULL_RANGE = 1,      /* face_detection_full_range.tflite: 192x192, 2304 anchors */
} pf_face_model;

/* SsdAnchorsCalculatorOptions, the fields these models use. */
typedef struct pf_face_anchor_options {
    int input_size;              /* square input, pixels */
    int num_layers;
    int strides[8];
    float offset;                /* anchor_offset_x = anchor_offset_y */
    int interpolated;            /* interpolated_scale_aspect_ratio > 0: a second anchor per layer */
} pf_face_anchor_options;

typedef struct pf_face_anchor {
    float x, y;                  /* centre, normalised; fixed size 1 x 1 */
} pf_face_anchor;

/* One detection in normalised coordinates (or pixels after mapping). */
typedef struct pf_face_det {
    float score;
    float box[4];                /* xmin, ymin, xmax, ymax */
    float kp[PF_FACE_KEYPOINTS][2];
} pf_face_det;

/* Decoding parameters for one model. */
typedef struct pf_face_decode_params {
    int num_anchors;
    float scale;                 /* x/y/w/h_scale: the input size */
    float min_score;             /* min_score_thresh (0.5 short range, 0.6 full range) */
    float iou_threshold;         /* min_suppression_threshold: 0.3 */
} pf_face_decode_params;

/* A rotated rectangle in pixels: centre, size, rotation (radians, counter-
 * clockwise as seen with y down is positive: MediaPipe's convention). */
typedef struct pf_face_roi {
    float cx, cy, w, h, rotation;
} pf_face_roi;

/* The options MediaPipe's graph gives model m. */
pf_face_anchor_options pf_face_anchor_options_for(pf_face_model m);
pf_face_decode_params pf_face_decode_params_for(pf_face_model m);

/* Fills out[0..cap) with the anchors of o in MediaPipe's order (layer group
 * of equal strides, row, column, anchor). Returns the count, or -1 (with
 * pf_last_error naming the field) when o is invalid or cap is too small. */
int pf_face_anchors(const pf_face_anchor_options *o, pf_face_anchor *out, int cap);

/* Decodes anchor i from the raw regressors reg[i*16 ..] and logit cls[i]. */
pf_face_det pf_face_decode_one(const float *reg, const float *cls, const pf_face_anchor *anchors,
                               int i, float scale);

/* Sigmoid of the logit clipped to +-100 (score_clipping_thresh). */
float pf_face_score(float logit);

/* Intersection over union of two boxes (xmin, ymin, xmax, ymax); 0 when
 * either is empty or they do not overlap. */
float pf_face_iou(const float *a, const float *b);

/* The whole CPU post-processing of one image: decode every anchor with score
 * >= p->min_score, weighted NMS, at most max_out detections (max_out <= 0:
 * no limit beyond cap) written to out in descending score order. scratch
 * must hold p->num_anchors detections and p->num_anchors ints (see
 * pf_face_scratch_size). Returns the count. */
size_t pf_face_scratch_size(const pf_face_decode_params *p);
int pf_face_detect_cpu(const float *reg, const float *cls, const pf_face_anchor *anchors,
                       const pf_face_decode_params *p, int max_out, void *scratch,
                       pf_face_det *out, int cap);

/* Weighted NMS over dets[0..n) (any order; dets is reordered in place),
 * writing at most max_out (<= 0: n) results to out. order must hold n ints.
 * Ties in score keep the lower input index first. Returns the count. */
int pf_face_nms_weighted(pf_face_det *dets, int n, float iou_threshold, int max_out, int *order,
                         pf_face_det *out);

/* The landmark ROI of a detection in frame pixels (frame_w x frame_h). */
pf_face_roi pf_face_roi_from_detection(const pf_face_det *d_px);

/* The next frame's ROI from 468 landmarks (x, y, z triples) in pixels. */
pf_face_roi pf_face_roi_from_landmarks(const float *lm_px);

/* Maps a point (u, v) given in the ROI's crop, normalised (0..1), into frame
 * pixels; z (normalised like x) scales by the ROI width. This is the inverse
 * of the rotated crop: the crop samples the frame at exactly these points. */
void pf_face_roi_to_frame(const pf_face_roi *r, float u, float v, float *x, float *y);

/* Bounding box (xmin, ymin, xmax, ymax) of n (x, y, z) landmarks. */
void pf_face_landmarks_box(const float *lm, int n, float box[4]);

/* The CUDA post-processing of a batch of detector outputs
 * (src/cuda/face_detect.cu): per image, what pf_face_detect_cpu computes,
 * with the count in device memory. Every pointer is device memory on the
 * stream's device; reg/cls hold batch consecutive images ([anchors][16] and
 * [anchors] floats each), out batch x max_out detections, counts batch ints.
 * At most 1024 candidates per image pass the threshold (the first in anchor
 * order); max_out >= 1. Asynchronous on stream (a cudaStream_t); no host
 * synchronisation, no allocation: capturable in a CUDA graph. */
typedef struct pf_face_cuda_detect {
    const float *reg, *cls;
    const pf_face_anchor *anchors;
    pf_face_decode_params params;
    int batch, max_out;
    pf_face_det *out;
    int *counts;
} pf_face_cuda_detect;
pf_status pf_cuda_face_detect(const pf_face_cuda_detect *p, void *stream);

/* The device-resident tracker's kernels (src/cuda/face_track.cu), driven by
 * src/jobs/faces_tracker_cuda.c. S streams of `slots` (max_faces) faces
 * each; every array below is device memory laid out [stream][slot]. All
 * per-frame decisions (detect or track, matching, new ids, dropping lost
 * and duplicate faces) are taken on the device from the state it keeps, so
 * the host never reads a count between the steps; the only copy back is
 * the `out` block. The rules are the CPU tracker's (faces_tracker.c). */
#define PF_FACE_MAX_STREAMS 64
#define PF_FACE_LOST_FLAG 0.5f    /* face flag (sigmoid) under this: the face is lost */
#define PF_FACE_MATCH_IOU 0.3f    /* detection to track matching */
#define PF_FACE_MERGE_IOU 0.5f    /* tracks overlapping more are one face */

typedef struct pf_face_dtrack {
    int id;
    float det_score;
    float box[4];                 /* last landmark box (or detection box), pixels */
    pf_face_roi roi;              /* the crop of the coming landmark run */
} pf_face_dtrack;

typedef struct pf_face_dhdr {
    int n_tracks;                 /* tracks[0..n_tracks) live */
    int next_id;                  /* from 1, never reused */
    int frame;                    /* frames processed */
    int pad;
} pf_face_dhdr;

/* One stream's frame as the kernels read it (device memory, packed RGB24,
 * BGR24 or RGBA) and the detector letterbox that maps its detections back. */
typedef struct pf_face_cuda_src {
    const unsigned char *data;
    long long stride;             /* bytes between rows */
    int width, height, channels, swap;
    float lb_scale_x, lb_scale_y, lb_pad_left, lb_pad_top;
} pf_face_cuda_src;

typedef struct pf_face_cuda_track {
    int streams, slots, detect_every;
    float det_size;               /* detector input side, pixels */
    const pf_face_det *dets;      /* [S][det_max] normalised; NULL: no detector ran */
    const int *det_counts;        /* [S] */
    int det_max;
    pf_face_dhdr *hdr;            /* [S] */
    pf_face_dtrack *tracks;       /* [S][slots] */
    void *items;                  /* [S * slots] crop items (pf_cr_item), scratch */
    float *crops;                 /* [S * slots][192][192][3]: the landmark input */
    const float *lm_pts;          /* [S * slots][468 * 3]: the landmark output */
    const float *lm_flag;         /* [S * slots] face flag logits */
    float *lm;                    /* [S * slots][468][3] scratch: landmarks in pixels */
    float *slot_box;              /* [S * slots][4] scratch */
    float *slot_presence;         /* [S * slots] scratch */
    pf_face *out;                 /* [S][slots]: the frame's faces, compact */
    int *out_counts;              /* [S] */
    pf_face_cuda_src src[PF_FACE_MAX_STREAMS];
} pf_face_cuda_track;

/* Before the landmark model: detections into tracks, the crop items, the
 * rotated crops into `crops`. After it: landmarks to pixels, lost and
 * duplicate faces dropped, next ROIs, `out` written. Asynchronous on
 * stream, nothing allocated: capturable. */
pf_status pf_cuda_face_track_pre(const pf_face_cuda_track *p, void *stream);
pf_status pf_cuda_face_track_post(const pf_face_cuda_track *p, void *stream);

/* The models as the tracker validated them (faces_tracker.c): borrowed by
 * the CUDA driver. */
typedef struct pf_face_models {
    pf_model *det, *lm;
    int det_reg, det_cls;         /* detector output indices: [N,A,16], [N,A,1] */
    int lm_pts, lm_flag;          /* landmark output indices: [N,1,1,1404], [N,1,1,1] */
    int det_size;                 /* 128 or 192 */
    pf_face_decode_params dp;
    const pf_face_anchor *anchors;
} pf_face_models;

/* The CUDA driver (faces_tracker_cuda.c; CUDA builds only). process takes
 * `streams` frames (one per stream, in stream order) and writes stream s's
 * faces to faces[s * cap ..] and their count to n_faces[s]. */
typedef struct pf_face_gpu pf_face_gpu;
typedef struct pf_face_gpu_params {
    pf_device *device;
    pf_face_models models;
    int streams, slots, detect_every;
    bool fp16, cuda_graph;
    pf_tracer *tracer;            /* borrowed, may be NULL */
} pf_face_gpu_params;
pf_status pf_face_gpu_create(const pf_face_gpu_params *p, pf_face_gpu **out);
void pf_face_gpu_destroy(pf_face_gpu **g);
pf_status pf_face_gpu_process(pf_face_gpu *g, const pf_frame *const *frames, pf_face *faces,
                              int cap, int *n_faces);
void pf_face_gpu_stats(const pf_face_gpu *g, pf_face_tracker_stats *out);

#endif
