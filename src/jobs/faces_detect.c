/* MediaPipe face detection post-processing on the CPU: SSD anchors, box and
 * keypoint decoding, weighted NMS. This is the reference the CUDA kernels in
 * src/cuda/face_detect.cu are checked against (tests/test_faces_detect.c,
 * tests/cuda/test_cuda_faces_detect.c); see faces_impl.h for the MediaPipe
 * options each step reproduces. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "faces_geom.h"

pf_face_anchor_options pf_face_anchor_options_for(pf_face_model m)
{
    pf_face_anchor_options o;
    memset(&o, 0, sizeof o);
    o.offset = 0.5f;
    if (m == PF_FACE_FULL_RANGE) {
        o.input_size = 192;
        o.num_layers = 1;
        o.strides[0] = 4;
        o.interpolated = 0; /* interpolated_scale_aspect_ratio: 0.0 */
    } else {
        o.input_size = 128;
        o.num_layers = 4;
        o.strides[0] = 8;
        o.strides[1] = 16;
        o.strides[2] = 16;
        o.strides[3] = 16;
        o.interpolated = 1; /* interpolated_scale_aspect_ratio: 1.0 (the default) */
    }
    return o;
}

pf_face_decode_params pf_face_decode_params_for(pf_face_model m)
{
    pf_face_decode_params p;
    const int full = m == PF_FACE_FULL_RANGE;
    p.num_anchors = full ? 2304 : 896;
    p.scale = full ? 192.0f : 128.0f;
    p.min_score = full ? 0.6f : 0.5f;
    p.iou_threshold = 0.3f;
    return p;
}

int pf_face_anchors(const pf_face_anchor_options *o, pf_face_anchor *out, int cap)
{
    if (!o || o->input_size <= 0 || o->num_layers <= 0 || o->num_layers > 8) {
        pf_set_error(PF_ERR_INVALID, "face anchors: input_size %d / num_layers %d out of range",
                     o ? o->input_size : 0, o ? o->num_layers : 0);
        return -1;
    }
    int n = 0;
    /* Consecutive layers of one stride share a feature map: each layer adds
     * its anchors (aspect 1, and the interpolated one) to every cell. */
    for (int l = 0; l < o->num_layers;) {
        int last = l;
        while (last < o->num_layers && o->strides[last] == o->strides[l]) last++;
        const int stride = o->strides[l];
        if (stride <= 0) {
            pf_set_error(PF_ERR_INVALID, "face anchors: strides[%d] = %d is not positive", l, stride);
            return -1;
        }
        const int per_cell = (last - l) * (o->interpolated ? 2 : 1);
        const int grid = (o->input_size + stride - 1) / stride;
        for (int y = 0; y < grid; y++)
            for (int x = 0; x < grid; x++)
                for (int a = 0; a < per_cell; a++) {
                    if (n >= cap) {
                        pf_set_error(PF_ERR_INVALID, "face anchors: more than cap %d anchors", cap);
                        return -1;
                    }
                    out[n].x = ((float)x + o->offset) / (float)grid;
                    out[n].y = ((float)y + o->offset) / (float)grid;
                    n++;
                }
        l = last;
    }
    return n;
}

float pf_face_score(float logit)
{
    return pf_fg_score(logit);
}

pf_face_det pf_face_decode_one(const float *reg, const float *cls, const pf_face_anchor *anchors,
                               int i, float scale)
{
    const float *r = reg + (size_t)i * PF_FACE_COORDS;
    const pf_face_anchor a = anchors[i];
    pf_face_det d;
    d.score = pf_face_score(cls[i]);
    /* Fixed-size anchors: the anchor's width and height are 1. */
    const float xc = r[0] / scale + a.x, yc = r[1] / scale + a.y;
    const float w = r[2] / scale, h = r[3] / scale;
    d.box[0] = xc - 0.5f * w;
    d.box[1] = yc - 0.5f * h;
    d.box[2] = xc + 0.5f * w;
    d.box[3] = yc + 0.5f * h;
    for (int k = 0; k < PF_FACE_KEYPOINTS; k++) {
        d.kp[k][0] = r[4 + 2 * k] / scale + a.x;
        d.kp[k][1] = r[5 + 2 * k] / scale + a.y;
    }
    return d;
}

float pf_face_iou(const float *a, const float *b)
{
    return pf_fg_iou(a, b);
}

/* Descending score, then ascending index: a total order, so the CPU and the
 * GPU sort (and so blend) the same way. */
/* qsort has no context argument; thread-local keeps concurrent trackers apart. */
static _Thread_local const pf_face_det *t_sort_dets;
static int by_score(const void *pa, const void *pb)
{
    const int a = *(const int *)pa, b = *(const int *)pb;
    const float sa = t_sort_dets[a].score, sb = t_sort_dets[b].score;
    if (sa != sb) return sa > sb ? -1 : 1;
    return (a > b) - (a < b);
}

int pf_face_nms_weighted(pf_face_det *dets, int n, float iou_threshold, int max_out, int *order,
                         pf_face_det *out)
{
    if (n <= 0) return 0;
    if (max_out <= 0 || max_out > n) max_out = n;
    for (int i = 0; i < n; i++) order[i] = i;
    t_sort_dets = dets;
    qsort(order, (size_t)n, sizeof *order, by_score);
    t_sort_dets = NULL;

    /* order[0..left) is the pool, kept in score order; each round takes its
     * head, blends the group overlapping it and compacts the rest. */
    int left = n, count = 0;
    while (left > 0 && count < max_out) {
        const pf_face_det *best = &dets[order[0]];
        double sum = 0.0, box[4] = {0, 0, 0, 0}, kp[PF_FACE_KEYPOINTS][2];
        memset(kp, 0, sizeof kp);
        int keep = 0;
        for (int j = 0; j < left; j++) {
            const pf_face_det *c = &dets[order[j]];
            if (j == 0 || pf_face_iou(best->box, c->box) > iou_threshold) {
                const double s = c->score;
                sum += s;
                for (int q = 0; q < 4; q++) box[q] += s * c->box[q];
                for (int k = 0; k < PF_FACE_KEYPOINTS; k++) {
                    kp[k][0] += s * c->kp[k][0];
                    kp[k][1] += s * c->kp[k][1];
                }
            } else {
                order[keep++] = order[j];
            }
        }
        pf_face_det w = *best;
        if (sum > 0.0) {
            for (int q = 0; q < 4; q++) w.box[q] = (float)(box[q] / sum);
            for (int k = 0; k < PF_FACE_KEYPOINTS; k++) {
                w.kp[k][0] = (float)(kp[k][0] / sum);
                w.kp[k][1] = (float)(kp[k][1] / sum);
            }
        }
        out[count++] = w;
        left = keep;
    }
    return count;
}

size_t pf_face_scratch_size(const pf_face_decode_params *p)
{
    return (size_t)p->num_anchors * (sizeof(pf_face_det) + sizeof(int));
}

int pf_face_detect_cpu(const float *reg, const float *cls, const pf_face_anchor *anchors,
                       const pf_face_decode_params *p, int max_out, void *scratch,
                       pf_face_det *out, int cap)
{
    pf_face_det *dets = scratch;
    int *order = (int *)(dets + p->num_anchors);
    int n = 0;
    for (int i = 0; i < p->num_anchors; i++) {
        /* The threshold is on the score, as MediaPipe's; comparing the logit
         * instead would save the sigmoid but differ at the boundary. */
        if (!(pf_face_score(cls[i]) >= p->min_score)) continue;
        dets[n++] = pf_face_decode_one(reg, cls, anchors, i, p->scale);
    }
    if (max_out <= 0 || max_out > cap) max_out = cap;
    return pf_face_nms_weighted(dets, n, p->iou_threshold, max_out, order, out);
}
