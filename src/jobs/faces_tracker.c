/* The face tracker: detection, landmark ROIs, landmarks and stable ids for
 * one stream, MediaPipe's face mesh graph in C.
 *
 * Design
 * - Per frame: the detector runs when the frame index is a multiple of
 *   detect_every or no face is being tracked; otherwise each tracked face's
 *   ROI comes from its landmarks of the previous frame (as MediaPipe does),
 *   so the detector is skipped.
 * - On a detection frame every detection is matched to the tracked faces by
 *   IoU of its box with the track's landmark box (>= 0.3, best first); a
 *   matched track keeps its id and its landmark ROI (the tighter one), an
 *   unmatched detection starts a track with a new id and a detection ROI.
 * - All ROIs of the frame are cropped into one batch and the landmark model
 *   runs once; a face whose face flag (sigmoid) is under 0.5 is dropped (the
 *   face was lost: the next frame detects again). Tracks whose landmark boxes
 *   overlap (IoU > 0.5) are merged, keeping the older id.
 * - This file loads and checks the models for both backends and is the
 *   CPU driver (everything synchronous). On a CUDA device the same rules
 *   run device-resident (faces_tracker_cuda.c, src/cuda/face_track.cu).
 * - Several streams (params.streams > 1): the CUDA driver batches them; on
 *   the CPU the tracker holds one single-stream tracker per stream and
 *   runs them in turn (the CPU executor gains nothing from a batch).
 * Ids count up from 1 per tracker and are never reused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "faces_geom.h"
#include "pixflow/nn.h"
#include "pixflow/ops.h"

#define LOST_FLAG PF_FACE_LOST_FLAG
#define MATCH_IOU PF_FACE_MATCH_IOU
#define MERGE_IOU PF_FACE_MERGE_IOU

typedef struct track {
    int id;
    pf_face_roi roi;          /* for this frame's crop */
    float box[4];             /* last landmark box (pixels) */
    float det_score;
} track;

struct pf_face_tracker {
    pf_stream *stream;        /* owned */
    pf_ops *ops;
    pf_model *det_m, *lm_m;
    pf_nn_exec *det_x, *lm_x;
    int det_reg, det_cls, lm_pts, lm_flag;
    int input;                /* detector input size */
    pf_face_decode_params dp;
    pf_face_anchor anchors[PF_FACE_MAX_ANCHORS];
    void *scratch;
    pf_face_det *dets;
    pf_tensor det_in, det_out[2], lm_in, lm_out[2];
    int max_faces, detect_every;
    int64_t frame;
    int next_id;
    track *tracks, *next;
    int n_tracks;
    float *lm;                /* max_faces x 468 x 3, this frame's landmarks */
    pf_frame rgb;             /* an NV12/I420 frame converted (CPU) */
    int streams;
    pf_face_tracker **subs;   /* CPU, streams > 1: one tracker per stream */
    int64_t batches;
    pf_tracer *tracer;
    int track;
#ifdef PF_HAVE_CUDA
    pf_face_gpu *gpu;         /* CUDA: the device-resident driver */
#endif
};

pf_face_tracker_params pf_face_tracker_params_default(void)
{
    pf_face_tracker_params p;
    memset(&p, 0, sizeof p);
    p.max_faces = 4;
    p.detect_every = 1;
    p.streams = 1;
    p.cuda_graph = true;
    return p;
}

/* The model named (pf_model_find) or the default name; *path keeps the file. */
static pf_status load(const char *name, const char *dflt, char *path, size_t size, pf_model **m)
{
    pf_status st = pf_model_find(name ? name : dflt, path, size);
    return st == PF_OK ? pf_model_load(path, m) : st;
}

static void shape_text(const pf_model_io *o, char *buf, size_t n)
{
    size_t k = 0;
    k += (size_t)snprintf(buf + k, n - k, "[");
    for (int d = 0; d < o->ndim && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, d ? ",%lld" : "%lld", (long long)o->shape[d]);
    if (k < n) snprintf(buf + k, n - k, "]");
}

/* Finds the outputs of shapes [N, ..., a] and [N, ..., b] (trailing dims
 * after the batch multiply to a and b); fails naming what was expected. */
static pf_status find_outputs(const pf_model *m, const char *path, const char *expect,
                              int64_t lead, int64_t a, int64_t b, int *ia, int *ib)
{
    *ia = *ib = -1;
    const int n = pf_model_num_outputs(m);
    char got[256] = "";
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        pf_model_io o = pf_model_output(m, i);
        char s[96];
        shape_text(&o, s, sizeof s);
        if (k < sizeof got) k += (size_t)snprintf(got + k, sizeof got - k, "%s%s", i ? ", " : "", s);
        int64_t inner = 1;
        for (int d = 1; d < o.ndim; d++) inner *= o.shape[d];
        const int64_t second = o.ndim >= 2 ? o.shape[1] : -1;
        if (o.dtype != PF_DTYPE_F32) continue;
        if (lead > 0 && second != lead) continue;
        if (inner == (lead > 0 ? lead : 1) * a && *ia < 0) *ia = i;
        else if (inner == (lead > 0 ? lead : 1) * b && *ib < 0) *ib = i;
    }
    if (n != 2 || *ia < 0 || *ib < 0)
        return pf_set_error(PF_ERR_FORMAT, "%s: outputs must be %s; the model has %d: %s", path,
                            expect, n, got);
    return PF_OK;
}

static pf_status alloc_out(const pf_model *m, int i, int batch, pf_tensor *t)
{
    pf_model_io o = pf_model_output(m, i);
    int64_t shape[PF_NN_MAX_DIMS];
    for (int d = 0; d < o.ndim; d++) shape[d] = d == 0 ? batch : (o.shape[d] < 0 ? 1 : o.shape[d]);
    return pf_tensor_alloc(t, PF_DTYPE_F32, o.ndim, shape, PF_LAYOUT_NONE, NULL, NULL);
}

pf_status pf_face_tracker_create(const pf_face_tracker_params *p, pf_face_tracker **out)
{
    PF_CHECK_ARG(p && out, "pf_face_tracker_create", "params or out is NULL");
    *out = NULL;
    const bool cuda = p->device && pf_device_props_get(p->device)->type == PF_DEVICE_CUDA;
    if (p->device && !cuda && pf_device_props_get(p->device)->type != PF_DEVICE_CPU)
        return pf_set_error(PF_ERR_UNSUPPORTED, "pf_face_tracker_create: device %s: the "
                            "tracker runs on the CPU or a CUDA device",
                            pf_device_spec(p->device));
#ifndef PF_HAVE_CUDA
    if (cuda)
        return pf_set_error(PF_ERR_UNSUPPORTED, "pf_face_tracker_create: this build has no CUDA");
#endif
    if (!cuda && p->fp16)
        return pf_set_error(PF_ERR_UNSUPPORTED, "pf_face_tracker_create: fp16 needs a CUDA "
                            "device (the CPU executor is fp32)");
    if (p->streams < 1 || p->streams > PF_FACE_MAX_STREAMS)
        return pf_set_error(PF_ERR_INVALID, "pf_face_tracker_create: streams %d not in 1..%d",
                            p->streams, PF_FACE_MAX_STREAMS);
    if (p->max_faces < 1 || p->max_faces > 256)
        return pf_set_error(PF_ERR_INVALID, "pf_face_tracker_create: max_faces %d not in 1..256",
                            p->max_faces);
    if (p->detect_every < 1)
        return pf_set_error(PF_ERR_INVALID, "pf_face_tracker_create: detect_every %d < 1",
                            p->detect_every);
    pf_face_tracker *t = calloc(1, sizeof *t);
    if (!t) return pf_set_error(PF_ERR_NOMEM, "pf_face_tracker_create: out of memory");
    t->max_faces = p->max_faces;
    t->detect_every = p->detect_every;
    t->next_id = 1;
    t->streams = p->streams;
    t->tracer = p->tracer;
    t->track = p->tracer ? pf_trace_track(p->tracer, "faces") : -1;
    pf_status st;
    char det_path[4096], lm_path[4096];
    if (!cuda && p->streams > 1) {
        t->subs = calloc((size_t)p->streams, sizeof *t->subs);
        if (!t->subs) {
            st = pf_set_error(PF_ERR_NOMEM, "pf_face_tracker_create: out of memory");
            goto fail;
        }
        pf_face_tracker_params one = *p;
        one.streams = 1;
        for (int i = 0; i < p->streams; i++)
            if ((st = pf_face_tracker_create(&one, &t->subs[i])) != PF_OK) goto fail;
        *out = t;
        return PF_OK;
    }
    if ((st = pf_stream_create(NULL, &t->stream)) != PF_OK) goto fail;
    pf_ops_params op = pf_ops_params_default();
    op.stream = t->stream;
    if ((st = pf_ops_create(&op, &t->ops)) != PF_OK) goto fail;
    st = load(p->detector, "face_detection", det_path, sizeof det_path, &t->det_m);
    if (st != PF_OK) goto fail;
    st = load(p->landmarks, "face_landmark", lm_path, sizeof lm_path, &t->lm_m);
    if (st != PF_OK) goto fail;

    /* The detector: 128x128 (short range, 896 anchors) or 192x192 (full). */
    pf_model_io in = pf_model_input(t->det_m, 0);
    const int size = in.ndim == 4 ? (int)in.shape[1] : 0;
    if (pf_model_num_inputs(t->det_m) != 1 || (size != 128 && size != 192) ||
        in.shape[2] != size || in.shape[3] != 3) {
        st = pf_set_error(PF_ERR_FORMAT, "%s: the face detector's input must be [N,128,128,3] "
                          "(short range) or [N,192,192,3] (full range)", det_path);
        goto fail;
    }
    const pf_face_model fm = size == 192 ? PF_FACE_FULL_RANGE : PF_FACE_SHORT_RANGE;
    t->dp = pf_face_decode_params_for(fm);
    t->input = size;
    const pf_face_anchor_options ao = pf_face_anchor_options_for(fm);
    if (pf_face_anchors(&ao, t->anchors, PF_FACE_MAX_ANCHORS) != t->dp.num_anchors) {
        st = PF_ERR_INTERNAL;
        goto fail;
    }
    char expect[96];
    snprintf(expect, sizeof expect, "[N,%d,16] (boxes + keypoints) and [N,%d,1] (scores)",
             t->dp.num_anchors, t->dp.num_anchors);
    st = find_outputs(t->det_m, det_path, expect, t->dp.num_anchors, 16, 1, &t->det_reg,
                      &t->det_cls);
    if (st != PF_OK) goto fail;
    in = pf_model_input(t->lm_m, 0);
    if (pf_model_num_inputs(t->lm_m) != 1 || in.ndim != 4 || in.shape[1] != 192 ||
        in.shape[2] != 192 || in.shape[3] != 3) {
        st = pf_set_error(PF_ERR_FORMAT, "%s: the face landmark model's input must be "
                          "[N,192,192,3]", lm_path);
        goto fail;
    }
    st = find_outputs(t->lm_m, lm_path,
                      "[N,1,1,1404] (468 x 3 landmarks) and [N,1,1,1] (face flag)", 0, 1404, 1,
                      &t->lm_pts, &t->lm_flag);
    if (st != PF_OK) goto fail;
#ifdef PF_HAVE_CUDA
    if (cuda) {
        pf_face_gpu_params gp;
        memset(&gp, 0, sizeof gp);
        gp.device = p->device;
        gp.models = (pf_face_models){t->det_m, t->lm_m,     t->det_reg, t->det_cls, t->lm_pts,
                                     t->lm_flag, t->input, t->dp,      t->anchors};
        gp.streams = p->streams;
        gp.slots = p->max_faces;
        gp.detect_every = p->detect_every;
        gp.fp16 = p->fp16;
        gp.cuda_graph = p->cuda_graph;
        gp.tracer = p->tracer;
        if ((st = pf_face_gpu_create(&gp, &t->gpu)) != PF_OK) goto fail;
        *out = t;
        return PF_OK;
    }
#endif

    pf_nn_exec_params xp = pf_nn_exec_params_default();
    if ((st = pf_nn_exec_create(t->det_m, &xp, &t->det_x)) != PF_OK) goto fail;
    xp.max_batch = t->max_faces;
    if ((st = pf_nn_exec_create(t->lm_m, &xp, &t->lm_x)) != PF_OK) goto fail;

    const int64_t dshape[4] = {1, size, size, 3};
    const int64_t lshape[4] = {t->max_faces, 192, 192, 3};
    if ((st = pf_tensor_alloc(&t->det_in, PF_DTYPE_F32, 4, dshape, PF_LAYOUT_NHWC, NULL, NULL)) ||
        (st = pf_tensor_alloc(&t->lm_in, PF_DTYPE_F32, 4, lshape, PF_LAYOUT_NHWC, NULL, NULL)) ||
        (st = alloc_out(t->det_m, 0, 1, &t->det_out[0])) ||
        (st = alloc_out(t->det_m, 1, 1, &t->det_out[1])) ||
        (st = alloc_out(t->lm_m, 0, t->max_faces, &t->lm_out[0])) ||
        (st = alloc_out(t->lm_m, 1, t->max_faces, &t->lm_out[1])))
        goto fail;
    t->scratch = malloc(pf_face_scratch_size(&t->dp));
    t->dets = malloc((size_t)t->dp.num_anchors * sizeof *t->dets);
    t->tracks = calloc((size_t)t->max_faces * 2, sizeof *t->tracks);
    t->next = calloc((size_t)t->max_faces * 2, sizeof *t->next);
    t->lm = malloc((size_t)t->max_faces * PF_FACE_LANDMARKS * 3 * sizeof *t->lm);
    if (!t->scratch || !t->dets || !t->tracks || !t->next || !t->lm) {
        st = pf_set_error(PF_ERR_NOMEM, "pf_face_tracker_create: out of memory");
        goto fail;
    }
    *out = t;
    return PF_OK;
fail:
    pf_face_tracker_destroy(&t);
    return st;
}

void pf_face_tracker_destroy(pf_face_tracker **tp)
{
    if (!tp || !*tp) return;
    pf_face_tracker *t = *tp;
#ifdef PF_HAVE_CUDA
    pf_face_gpu_destroy(&t->gpu); /* before the models it borrows */
#endif
    for (int i = 0; t->subs && i < t->streams; i++) pf_face_tracker_destroy(&t->subs[i]);
    free(t->subs);
    pf_nn_exec_destroy(&t->det_x);
    pf_nn_exec_destroy(&t->lm_x);
    pf_model_free(&t->det_m);
    pf_model_free(&t->lm_m);
    pf_ops_destroy(&t->ops);
    pf_stream_destroy(&t->stream);
    pf_tensor_unref(&t->det_in);
    pf_tensor_unref(&t->lm_in);
    for (int i = 0; i < 2; i++) {
        pf_tensor_unref(&t->det_out[i]);
        pf_tensor_unref(&t->lm_out[i]);
    }
    free(t->scratch);
    free(t->dets);
    free(t->tracks);
    free(t->next);
    free(t->lm);
    pf_frame_unref(&t->rgb);
    free(t);
    *tp = NULL;
}

/* Detector on the whole frame (letterboxed, [-1, 1], black padding as
 * MediaPipe), detections mapped to frame pixels. Returns the count. */
static pf_status detect(pf_face_tracker *t, const pf_frame *f, int *n)
{
    pf_preprocess_params pp = pf_preprocess_params_default();
    pp.letterbox = true;
    pp.pad_value = 0.0f;
    for (int c = 0; c < 3; c++) {
        pp.mean[c] = 0.5f;
        pp.std[c] = 0.5f;
    }
    pf_letterbox_info lb;
    pf_status st = pf_ops_preprocess(t->ops, &f, NULL, 1, &t->det_in, &pp, &lb);
    if (st == PF_OK) st = pf_nn_exec_run(t->det_x, t->stream, &t->det_in, 1, t->det_out, 2);
    if (st != PF_OK) return st;
    *n = pf_face_detect_cpu(t->det_out[t->det_reg].data, t->det_out[t->det_cls].data, t->anchors,
                            &t->dp, 0, t->scratch, t->dets, t->dp.num_anchors);
    const float s = (float)t->input;
    for (int i = 0; i < *n; i++) {
        pf_face_det *d = &t->dets[i];
#define MX(v) (((v) * s - (float)lb.pad_left) / lb.scale_x)
#define MY(v) (((v) * s - (float)lb.pad_top) / lb.scale_y)
        d->box[0] = MX(d->box[0]);
        d->box[2] = MX(d->box[2]);
        d->box[1] = MY(d->box[1]);
        d->box[3] = MY(d->box[3]);
        for (int k = 0; k < PF_FACE_KEYPOINTS; k++) {
            d->kp[k][0] = MX(d->kp[k][0]);
            d->kp[k][1] = MY(d->kp[k][1]);
        }
#undef MX
#undef MY
    }
    return PF_OK;
}

/* Detections into tracks: matched tracks keep id and landmark ROI. */
static void associate(pf_face_tracker *t, int n_det)
{
    bool used[512] = {false};
    for (int i = 0; i < n_det; i++) {
        const pf_face_det *d = &t->dets[i];
        int best = -1;
        float best_iou = MATCH_IOU;
        for (int j = 0; j < t->n_tracks && j < 512; j++) {
            const float iou = pf_face_iou(d->box, t->tracks[j].box);
            if (!used[j] && iou >= best_iou) {
                best = j;
                best_iou = iou;
            }
        }
        if (best >= 0) {
            used[best] = true;
            t->tracks[best].det_score = d->score;
            continue;
        }
        if (t->n_tracks >= t->max_faces) continue; /* detections come best first */
        track *nt = &t->tracks[t->n_tracks++];
        nt->id = t->next_id++;
        nt->roi = pf_face_roi_from_detection(d);
        memcpy(nt->box, d->box, sizeof nt->box);
        nt->det_score = d->score;
        used[t->n_tracks - 1] = true;
    }
}

/* MediaPipe's six detection keypoints from the mesh: eye centres, nose tip,
 * mouth centre, ear tragions (subject's right first). */
static void keypoints_from_mesh(const float *lm, float kp[PF_FACE_KEYPOINTS][2])
{
    for (int k = 0; k < PF_FACE_KEYPOINTS; k++) {
        int a, b;
        pf_fg_keypoint_pair(k, &a, &b);
        for (int c = 0; c < 2; c++) kp[k][c] = 0.5f * (lm[3 * a + c] + lm[3 * b + c]);
    }
}

static pf_status process_cpu(pf_face_tracker *t, const pf_frame *f, pf_face *faces, int cap,
                             int *n_faces);

pf_status pf_face_tracker_process(pf_face_tracker *t, const pf_frame *f, pf_face *faces, int cap,
                                  int *n_faces)
{
    PF_CHECK_ARG(t && f && n_faces && (faces || cap == 0), "pf_face_tracker_process",
                 "tracker, frame, faces or n_faces is NULL");
    *n_faces = 0;
    if (t->streams != 1)
        return pf_set_error(PF_ERR_INVALID, "pf_face_tracker_process: the tracker has %d "
                            "streams; feed them with pf_face_tracker_process_batch", t->streams);
    t->batches++;
#ifdef PF_HAVE_CUDA
    if (t->gpu) return pf_face_gpu_process(t->gpu, &f, faces, cap, n_faces);
#endif
    const int64_t t0 = t->tracer ? pf_time_ns() : 0;
    pf_status st = PF_OK;
    if (f->format == PF_PIXFMT_NV12 || f->format == PF_PIXFMT_I420) {
        /* The crop samples RGB: convert once, then detect and crop from it. */
        if (!t->rgb.buf[0] || t->rgb.width != f->width || t->rgb.height != f->height) {
            pf_frame_unref(&t->rgb);
            st = pf_frame_alloc(&t->rgb, PF_PIXFMT_RGB24, f->width, f->height, NULL, NULL);
        }
        const pf_color_params cp = pf_color_params_for(f);
        if (st == PF_OK) st = pf_ops_convert(t->ops, f, &t->rgb, &cp);
        if (st != PF_OK) return st;
        f = &t->rgb;
    }
    st = process_cpu(t, f, faces, cap, n_faces);
    if (t->tracer) pf_trace_span(t->tracer, t->track, "process", t0, pf_time_ns(), -1, t->frame);
    return st;
}

static pf_status process_cpu(pf_face_tracker *t, const pf_frame *f, pf_face *faces, int cap,
                             int *n_faces)
{
    pf_status st;
    if (t->n_tracks == 0 || t->frame % t->detect_every == 0) {
        int n_det = 0;
        if ((st = detect(t, f, &n_det)) != PF_OK) return st;
        associate(t, n_det);
    }
    t->frame++;
    const int n = t->n_tracks;
    if (n == 0) return PF_OK;

    /* One landmark batch for every face of the frame. */
    pf_rotated_rect rects[256];
    const pf_frame *srcs[256];
    for (int i = 0; i < n; i++) {
        const pf_face_roi *r = &t->tracks[i].roi;
        rects[i] = (pf_rotated_rect){r->cx, r->cy, r->w, r->h, r->rotation};
        srcs[i] = f;
    }
    pf_tensor in = t->lm_in, outs[2] = {t->lm_out[0], t->lm_out[1]};
    in.shape[0] = n; /* a view of the first n rows: the executor takes any batch <= max */
    outs[0].shape[0] = n;
    outs[1].shape[0] = n;
    st = pf_ops_crop_rotated(t->ops, srcs, rects, n, &in, 1.0f / 255.0f, 0.0f);
    if (st == PF_OK) st = pf_nn_exec_run(t->lm_x, t->stream, &in, 1, outs, 2);
    if (st != PF_OK) return st;

    const float *pts = t->lm_out[t->lm_pts].data, *flag = t->lm_out[t->lm_flag].data;
    int kept = 0;
    for (int i = 0; i < n; i++) {
        track tr = t->tracks[i];
        const float presence = pf_face_score(flag[i]);
        if (presence < LOST_FLAG) continue;
        float *lm = t->lm + (size_t)kept * PF_FACE_LANDMARKS * 3;
        const float *p = pts + (size_t)i * PF_FACE_LANDMARKS * 3;
        for (int k = 0; k < PF_FACE_LANDMARKS; k++) {
            pf_face_roi_to_frame(&tr.roi, p[3 * k] / 192.0f, p[3 * k + 1] / 192.0f, &lm[3 * k],
                                 &lm[3 * k + 1]);
            lm[3 * k + 2] = p[3 * k + 2] / 192.0f * tr.roi.w;
        }
        pf_face_landmarks_box(lm, PF_FACE_LANDMARKS, tr.box);
        /* Drop a face that duplicates an earlier (older) one. */
        bool dup = false;
        for (int j = 0; j < kept && !dup; j++) dup = pf_face_iou(tr.box, t->next[j].box) > MERGE_IOU;
        if (dup) continue;
        tr.roi = pf_face_roi_from_landmarks(lm);
        t->next[kept] = tr;
        if (kept < cap) {
            pf_face *o = &faces[kept];
            o->id = tr.id;
            o->score = presence;
            o->detection_score = tr.det_score;
            memcpy(o->box, tr.box, sizeof o->box);
            keypoints_from_mesh(lm, o->keypoints);
            memcpy(o->landmarks, lm, sizeof o->landmarks);
        }
        kept++;
    }
    memcpy(t->tracks, t->next, (size_t)kept * sizeof *t->tracks);
    t->n_tracks = kept;
    *n_faces = kept < cap ? kept : cap;
    return PF_OK;
}

pf_status pf_face_tracker_process_batch(pf_face_tracker *t, const pf_frame *const *frames, int n,
                                        pf_face *faces, int cap, int *n_faces)
{
    PF_CHECK_ARG(t && frames && n_faces && (faces || cap == 0), "pf_face_tracker_process_batch",
                 "tracker, frames, faces or n_faces is NULL");
    if (n != t->streams)
        return pf_set_error(PF_ERR_INVALID, "pf_face_tracker_process_batch: %d frames for a "
                            "tracker of %d streams (one frame per stream)", n, t->streams);
    for (int s = 0; s < n; s++) {
        n_faces[s] = 0;
        if (!frames[s])
            return pf_set_error(PF_ERR_INVALID, "pf_face_tracker_process_batch: frames[%d] is "
                                "NULL", s);
    }
#ifdef PF_HAVE_CUDA
    if (t->gpu) {
        t->batches++;
        return pf_face_gpu_process(t->gpu, frames, faces, cap, n_faces);
    }
#endif
    if (!t->subs) return pf_face_tracker_process(t, frames[0], faces, cap, n_faces);
    t->batches++;
    for (int s = 0; s < n; s++) {
        pf_status st = pf_face_tracker_process(t->subs[s], frames[s], faces + (size_t)s * cap, cap,
                                               &n_faces[s]);
        if (st != PF_OK) return st;
    }
    return PF_OK;
}

pf_status pf_face_tracker_get_stats(const pf_face_tracker *t, pf_face_tracker_stats *out)
{
    PF_CHECK_ARG(t && out, "pf_face_tracker_get_stats", "tracker or out is NULL");
    memset(out, 0, sizeof *out);
#ifdef PF_HAVE_CUDA
    if (t->gpu) pf_face_gpu_stats(t->gpu, out);
#endif
    out->batches = t->batches;
    return PF_OK;
}
