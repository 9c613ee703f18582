/* The face tracker on a CUDA device: the host side of the device-resident
 * chain (kernels in src/cuda/face_detect.cu and face_track.cu).
 *
 * Design
 * - One CUDA stream, S streams of frames per batch (S = 1 for
 *   pf_face_tracker_process), `slots` = max_faces faces per stream. Per
 *   batch: each frame is copied into the tracker's own device frame (so a
 *   captured graph always reads the same addresses), then the chain runs:
 *     [preprocess (letterbox 128 or 192) -> detector -> decode + weighted
 *      NMS]  (only when some stream detects this frame)
 *     -> associate + crop items -> rotated crops into the landmark batch
 *     -> landmark model (batch S x slots, padded) -> landmarks to pixels,
 *        lost/duplicate faces dropped, next ROIs -> one copy of the
 *        compact results to pinned host memory
 *   with no host synchronisation in between; the host waits once, at the
 *   end, and reads counts and faces.
 * - Decisions stay on the device (faces_impl.h): which stream detects this
 *   frame, the matching, new ids. The host keeps a mirror of each stream's
 *   track count and frame index (from the results it reads) only to choose
 *   between the chain with and without the detector; the device applies
 *   the same rule per stream.
 * - CUDA graphs: with params.cuda_graph the chain is captured once per key
 *   (detector or not, each stream's frame size, format and device address)
 *   in a pf_graph_cache and replayed: one launch plus the copy. The first
 *   run of each variant is direct (it plans the executors and loads the
 *   kernels); the executors run without their own graphs then, so their
 *   steps are captured into the frame's graph. Without cuda_graph the
 *   chain is launched op by op (each executor replays its own graph).
 * Not thread-safe (one thread per tracker, as jobs.h says). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "../ops/crop_rotated.h"
#include "faces_impl.h"

#ifdef PF_HAVE_CUDA

struct pf_face_gpu {
    int streams, slots, det_max;
    bool graph;
    pf_face_models m;
    pf_device *dev;
    pf_stream *stream;
    pf_ops *ops;
    pf_allocator *dalloc, *halloc;
    pf_nn_exec *det_x, *lm_x;
    pf_graph_cache *gc;
    bool warm[2];                  /* a direct run done (without, with detector) */
    pf_tensor det_in, det_out[2], crops, lm_out[2];
    pf_buffer *anchors, *dets, *state, *scratch, *out_dev, *out_host;
    size_t out_bytes, counts_bytes;
    pf_frame *frames;              /* [S] the device copies of the inputs (RGB) */
    pf_frame *yuv;                 /* [S] NV12/I420 inputs' device copies, converted
                                      into frames[s] inside the chain */
    bool *conv;                    /* [S] this batch's stream s came as YUV */
    pf_color_params *cp;           /* [S] its matrix and range */
    pf_letterbox_info *lb;         /* [S] */
    int *n_tracks, *frame_index;   /* [S] host mirror */
    pf_face_cuda_track args;       /* device pointers (fixed), sources per batch */
    pf_event *ev0, *ev1;
    pf_tracer *tracer;
    int track, gpu_track;
    double gpu_ms_total;           /* steady batches only (see pf_face_gpu_process) */
    int64_t gpu_batches, batches;
    double gpu_ms_all;             /* every batch, for a run with no steady one */
};

static pf_status dbuf(pf_face_gpu *g, size_t n, pf_buffer **out)
{
    return pf_allocator_alloc(g->dalloc, n ? n : 1, g->stream, out);
}

void pf_face_gpu_destroy(pf_face_gpu **gp)
{
    pf_face_gpu *g = gp ? *gp : NULL;
    if (!g) return;
    if (g->stream) pf_stream_synchronize(g->stream);
    pf_graph_cache_destroy(&g->gc);
    pf_nn_exec_destroy(&g->det_x);
    pf_nn_exec_destroy(&g->lm_x);
    pf_tensor_unref(&g->det_in);
    pf_tensor_unref(&g->crops);
    for (int i = 0; i < 2; i++) {
        pf_tensor_unref(&g->det_out[i]);
        pf_tensor_unref(&g->lm_out[i]);
    }
    pf_buffer_unref(&g->anchors);
    pf_buffer_unref(&g->dets);
    pf_buffer_unref(&g->state);
    pf_buffer_unref(&g->scratch);
    pf_buffer_unref(&g->out_dev);
    pf_buffer_unref(&g->out_host);
    for (int i = 0; g->frames && i < g->streams; i++) pf_frame_unref(&g->frames[i]);
    for (int i = 0; g->yuv && i < g->streams; i++) pf_frame_unref(&g->yuv[i]);
    free(g->frames);
    free(g->yuv);
    free(g->conv);
    free(g->cp);
    free(g->lb);
    free(g->n_tracks);
    free(g->frame_index);
    pf_event_destroy(&g->ev0);
    pf_event_destroy(&g->ev1);
    pf_ops_destroy(&g->ops);
    pf_allocator_destroy(&g->dalloc);
    pf_allocator_destroy(&g->halloc);
    pf_stream_destroy(&g->stream);
    free(g);
    *gp = NULL;
}

static pf_status out_tensor(pf_face_gpu *g, const pf_model *m, int i, int batch, pf_tensor *t)
{
    pf_model_io o = pf_model_output(m, i);
    int64_t shape[PF_NN_MAX_DIMS];
    for (int d = 0; d < o.ndim; d++) shape[d] = d == 0 ? batch : (o.shape[d] < 0 ? 1 : o.shape[d]);
    return pf_tensor_alloc(t, PF_DTYPE_F32, o.ndim, shape, PF_LAYOUT_NONE, g->dalloc, g->stream);
}

static pf_status make_exec(pf_face_gpu *g, pf_model *m, int batch, bool fp16, pf_nn_exec **x)
{
    pf_nn_exec_params xp = pf_nn_exec_params_default();
    xp.device = g->dev;
    xp.precision = fp16 ? PF_NN_FP16 : PF_NN_FP32;
    xp.max_batch = batch;
    /* Inside the frame's graph the executor's steps are captured with the
     * rest; its own graph would be a graph launched inside a capture. */
    xp.cuda_graphs = !g->graph;
    return pf_nn_exec_create(m, &xp, x);
}

pf_status pf_face_gpu_create(const pf_face_gpu_params *p, pf_face_gpu **out)
{
    *out = NULL;
    if (p->streams < 1 || p->streams > PF_FACE_MAX_STREAMS)
        return pf_set_error(PF_ERR_INVALID, "pf_face_tracker_create: streams %d not in 1..%d",
                            p->streams, PF_FACE_MAX_STREAMS);
    /* The landmark batch is streams x max_faces crops of 442 KB each (plus
     * the model's activations): 4096 of them is 1.8 GB of crops already. */
    if (p->streams * p->slots > 4096)
        return pf_set_error(PF_ERR_INVALID, "pf_face_tracker_create: streams %d x max_faces %d "
                            "= %d landmark slots on the GPU; at most 4096", p->streams, p->slots,
                            p->streams * p->slots);
    pf_face_gpu *g = calloc(1, sizeof *g);
    if (!g) return pf_set_error(PF_ERR_NOMEM, "pf_face_tracker_create: out of memory");
    const int S = p->streams, K = p->slots;
    g->streams = S;
    g->slots = K;
    g->graph = p->cuda_graph;
    g->m = p->models;
    g->dev = p->device;
    g->tracer = p->tracer;
    if (g->tracer) {
        g->track = pf_trace_track(g->tracer, "faces");
        g->gpu_track = pf_trace_gpu_track(g->tracer, "faces");
    }
    /* Enough NMS outputs that every detection the CPU tracker would match
     * or start a track with is kept (it takes them best first). */
    g->det_max = 2 * K + 16;
    pf_status st;
    pf_stream_params sp = pf_stream_params_default();
    sp.device = g->dev;
    if ((st = pf_stream_create(&sp, &g->stream)) != PF_OK) goto fail;
    pf_ops_params op = pf_ops_params_default();
    op.stream = g->stream;
    if ((st = pf_ops_create(&op, &g->ops)) != PF_OK) goto fail;
    pf_allocator_params ap = pf_allocator_params_default();
    ap.device = g->dev;
    ap.domain = PF_MEM_DEVICE;
    ap.name = "faces";
    if ((st = pf_allocator_create(&ap, &g->dalloc)) != PF_OK) goto fail;
    ap.domain = PF_MEM_PINNED;
    ap.name = "faces-results";
    if ((st = pf_allocator_create(&ap, &g->halloc)) != PF_OK) goto fail;
    if ((st = make_exec(g, g->m.det, S, p->fp16, &g->det_x)) != PF_OK) goto fail;
    if ((st = make_exec(g, g->m.lm, S * K, p->fp16, &g->lm_x)) != PF_OK) goto fail;
    /* The one batch size each model runs at: planned now, not on a frame. */
    if ((st = pf_nn_exec_reserve_batch(g->det_x, S)) != PF_OK) goto fail;
    if ((st = pf_nn_exec_reserve_batch(g->lm_x, S * K)) != PF_OK) goto fail;
    if (g->graph) {
        pf_graph_cache_params gp = pf_graph_cache_params_default();
        if ((st = pf_graph_cache_create(&gp, &g->gc)) != PF_OK) goto fail;
    }
    if ((st = pf_event_create(g->dev, &g->ev0)) != PF_OK) goto fail;
    if ((st = pf_event_create(g->dev, &g->ev1)) != PF_OK) goto fail;

    const int size = g->m.det_size, A = g->m.dp.num_anchors;
    const int64_t dshape[4] = {S, size, size, 3};
    const int64_t cshape[4] = {(int64_t)S * K, PF_FACE_LANDMARK_INPUT, PF_FACE_LANDMARK_INPUT, 3};
    if ((st = pf_tensor_alloc(&g->det_in, PF_DTYPE_F32, 4, dshape, PF_LAYOUT_NHWC, g->dalloc,
                              g->stream)) ||
        (st = pf_tensor_alloc(&g->crops, PF_DTYPE_F32, 4, cshape, PF_LAYOUT_NHWC, g->dalloc,
                              g->stream)) ||
        (st = out_tensor(g, g->m.det, 0, S, &g->det_out[0])) ||
        (st = out_tensor(g, g->m.det, 1, S, &g->det_out[1])) ||
        (st = out_tensor(g, g->m.lm, 0, S * K, &g->lm_out[0])) ||
        (st = out_tensor(g, g->m.lm, 1, S * K, &g->lm_out[1])))
        goto fail;
    /* Device memory: anchors; detections + counts; state (headers, tracks,
     * crop items); scratch (landmarks, boxes, presence); results. */
    const size_t n_slots = (size_t)S * K;
    const size_t det_bytes = (size_t)S * g->det_max * sizeof(pf_face_det);
    const size_t hdr_bytes = ((size_t)S * sizeof(pf_face_dhdr) + 255) & ~(size_t)255;
    const size_t trk_bytes = (n_slots * sizeof(pf_face_dtrack) + 255) & ~(size_t)255;
    const size_t lm_bytes = n_slots * PF_FACE_LANDMARKS * 3 * sizeof(float);
    g->counts_bytes = ((size_t)S * sizeof(int) + 255) & ~(size_t)255;
    g->out_bytes = g->counts_bytes + n_slots * sizeof(pf_face);
    if ((st = dbuf(g, (size_t)A * sizeof(pf_face_anchor), &g->anchors)) ||
        (st = dbuf(g, det_bytes + (size_t)S * sizeof(int), &g->dets)) ||
        (st = dbuf(g, hdr_bytes + trk_bytes + n_slots * sizeof(pf_cr_item), &g->state)) ||
        (st = dbuf(g, lm_bytes + n_slots * 5 * sizeof(float), &g->scratch)) ||
        (st = dbuf(g, g->out_bytes, &g->out_dev)) ||
        (st = pf_allocator_alloc(g->halloc, g->out_bytes, g->stream, &g->out_host)))
        goto fail;
    g->frames = calloc((size_t)S, sizeof *g->frames);
    g->yuv = calloc((size_t)S, sizeof *g->yuv);
    g->conv = calloc((size_t)S, sizeof *g->conv);
    g->cp = calloc((size_t)S, sizeof *g->cp);
    g->lb = calloc((size_t)S, sizeof *g->lb);
    g->n_tracks = calloc((size_t)S, sizeof *g->n_tracks);
    g->frame_index = calloc((size_t)S, sizeof *g->frame_index);
    pf_face_dhdr *hdr0 = calloc((size_t)S, sizeof *hdr0);
    if (!g->frames || !g->yuv || !g->conv || !g->cp || !g->lb || !g->n_tracks || !g->frame_index || !hdr0) {
        free(hdr0);
        st = pf_set_error(PF_ERR_NOMEM, "pf_face_tracker_create: out of memory");
        goto fail;
    }
    for (int s = 0; s < S; s++) hdr0[s].next_id = 1;
    char *state = pf_buffer_data(g->state), *scratch = pf_buffer_data(g->scratch);
    st = pf_memcpy_async(g->stream, pf_buffer_data(g->anchors), g->m.anchors,
                         (size_t)A * sizeof(pf_face_anchor));
    if (st == PF_OK) st = pf_memcpy_async(g->stream, state, hdr0, (size_t)S * sizeof *hdr0);
    /* Zeroed landmark input: the padded slots the model reads before any
     * crop was written hold numbers, not garbage. */
    if (st == PF_OK) st = pf_memset_async(g->stream, g->crops.data, 0, pf_tensor_nbytes(&g->crops));
    if (st == PF_OK) st = pf_stream_synchronize(g->stream);
    free(hdr0);
    if (st != PF_OK) goto fail;

    pf_face_cuda_track *a = &g->args;
    a->streams = S;
    a->slots = K;
    a->detect_every = p->detect_every;
    a->det_size = (float)size;
    a->det_max = g->det_max;
    a->hdr = (pf_face_dhdr *)state;
    a->tracks = (pf_face_dtrack *)(state + hdr_bytes);
    a->items = state + hdr_bytes + trk_bytes;
    a->crops = g->crops.data;
    a->lm_pts = g->lm_out[g->m.lm_pts].data;
    a->lm_flag = g->lm_out[g->m.lm_flag].data;
    a->lm = (float *)scratch;
    a->slot_box = (float *)(scratch + lm_bytes);
    a->slot_presence = a->slot_box + 4 * n_slots;
    a->out_counts = pf_buffer_data(g->out_dev);
    a->out = (pf_face *)((char *)pf_buffer_data(g->out_dev) + g->counts_bytes);
    *out = g;
    return PF_OK;
fail:;
    char keep[1024];
    snprintf(keep, sizeof keep, "%s", pf_last_error());
    pf_face_gpu_destroy(&g);
    return pf_set_error(st, "%s", keep);
}

/* The chain after the uploads; what a graph captures. */
typedef struct chain {
    pf_face_gpu *g;
    bool detect;
} chain;

static pf_status run_chain(void *user, pf_stream *stream)
{
    chain *c = user;
    pf_face_gpu *g = c->g;
    const int S = g->streams;
    void *cs = pf_stream_native(stream);
    pf_face_cuda_track a = g->args;
    pf_status st = PF_OK;
    for (int s = 0; s < S && st == PF_OK; s++)
        if (g->conv[s]) st = pf_ops_convert(g->ops, &g->yuv[s], &g->frames[s], &g->cp[s]);
    if (st == PF_OK && c->detect) {
        pf_preprocess_params pp = pf_preprocess_params_default();
        pp.letterbox = true;
        pp.pad_value = 0.0f;
        for (int ch = 0; ch < 3; ch++) {
            pp.mean[ch] = 0.5f;
            pp.std[ch] = 0.5f;
        }
        const pf_frame *srcs[PF_FACE_MAX_STREAMS];
        for (int s = 0; s < S; s++) srcs[s] = &g->frames[s];
        st = pf_ops_preprocess(g->ops, srcs, NULL, S, &g->det_in, &pp, g->lb);
        if (st == PF_OK) st = pf_nn_exec_run(g->det_x, stream, &g->det_in, 1, g->det_out, 2);
        pf_face_det *dets = pf_buffer_data(g->dets);
        int *counts = (int *)(dets + (size_t)S * g->det_max);
        pf_face_cuda_detect d = {g->det_out[g->m.det_reg].data,
                                 g->det_out[g->m.det_cls].data,
                                 pf_buffer_data(g->anchors),
                                 g->m.dp,
                                 S,
                                 g->det_max,
                                 dets,
                                 counts};
        if (st == PF_OK) st = pf_cuda_face_detect(&d, cs);
        a.dets = dets;
        a.det_counts = counts;
    } else {
        a.dets = NULL;
        a.det_counts = NULL;
    }
    for (int s = 0; s < S && st == PF_OK; s++) {
        const pf_frame *f = &g->frames[s];
        pf_face_cuda_src *src = &a.src[s];
        src->data = f->data[0];
        src->stride = (long long)f->stride[0];
        src->width = f->width;
        src->height = f->height;
        src->channels = f->format == PF_PIXFMT_RGBA ? 4 : 3;
        src->swap = f->format == PF_PIXFMT_BGR24;
        /* Without the detector the letterbox is unused; the last one known
         * (or zeros) is as good as any. */
        src->lb_scale_x = g->lb[s].scale_x;
        src->lb_scale_y = g->lb[s].scale_y;
        src->lb_pad_left = (float)g->lb[s].pad_left;
        src->lb_pad_top = (float)g->lb[s].pad_top;
    }
    if (st == PF_OK) st = pf_cuda_face_track_pre(&a, cs);
    if (st == PF_OK) st = pf_nn_exec_run(g->lm_x, stream, &g->crops, 1, g->lm_out, 2);
    if (st == PF_OK) st = pf_cuda_face_track_post(&a, cs);
    if (st == PF_OK)
        st = pf_memcpy_async(stream, pf_buffer_data(g->out_host), pf_buffer_data(g->out_dev),
                             g->out_bytes);
    return st;
}

/* The graph key: the variant and every stream's frame as the graph reads it. */
typedef struct chain_key {
    int detect;
    struct {
        const void *data, *yuv;
        int width, height, format, yuv_format, matrix, range;
        size_t stride;
    } f[PF_FACE_MAX_STREAMS];
} chain_key;

/* A frame of the tracker's own on the device, (re)allocated to in's shape. */
static pf_status own_frame(pf_face_gpu *g, pf_frame *f, pf_pixfmt fmt, const pf_frame *in)
{
    if (f->buf[0] && f->width == in->width && f->height == in->height && f->format == fmt)
        return PF_OK;
    pf_frame_unref(f);
    return pf_frame_alloc(f, fmt, in->width, in->height, g->dalloc, g->stream);
}

pf_status pf_face_gpu_process(pf_face_gpu *g, const pf_frame *const *frames, pf_face *faces,
                              int cap, int *n_faces)
{
    const int S = g->streams;
    pf_status st = PF_OK;
    const int64_t t0 = pf_time_ns();
    for (int s = 0; s < S && st == PF_OK; s++) {
        const pf_frame *in = frames[s];
        const bool yuv = in->format == PF_PIXFMT_NV12 || in->format == PF_PIXFMT_I420;
        if (!yuv && in->format != PF_PIXFMT_RGB24 && in->format != PF_PIXFMT_BGR24 &&
            in->format != PF_PIXFMT_RGBA)
            return pf_set_error(PF_ERR_UNSUPPORTED, "pf_face_tracker_process: frame %d is %s; "
                                "the tracker takes RGB24, BGR24, RGBA, NV12 or I420", s,
                                pf_pixfmt_name(in->format));
        /* YUV goes up as it is (half the bytes of RGB) and is converted on
         * the device, inside the chain. */
        g->conv[s] = yuv;
        g->cp[s] = pf_color_params_for(in);
        st = own_frame(g, &g->frames[s], yuv ? PF_PIXFMT_RGB24 : in->format, in);
        if (st == PF_OK && yuv) st = own_frame(g, &g->yuv[s], in->format, in);
        if (st == PF_OK) st = pf_frame_copy_async(yuv ? &g->yuv[s] : &g->frames[s], in, g->stream);
    }
    if (st != PF_OK) return st;
    bool detect = false;
    for (int s = 0; s < S; s++)
        detect |= g->n_tracks[s] == 0 || g->frame_index[s] % g->args.detect_every == 0;
    chain c = {g, detect};
    const int64_t t1 = pf_time_ns();
    const bool cached = g->graph && g->warm[detect];
    bool graphed = false;  /* the chain ran as a graph (captured or replayed) */
    bool replayed = false; /* ... from the cache, nothing captured */
    st = pf_event_record(g->ev0, g->stream);
    if (st == PF_OK) {
        if (!cached) {
            st = run_chain(&c, g->stream);
            g->warm[detect] = st == PF_OK;
        } else {
            chain_key k;
            memset(&k, 0, sizeof k);
            k.detect = detect;
            for (int s = 0; s < S; s++) {
                k.f[s].data = g->frames[s].data[0];
                k.f[s].width = g->frames[s].width;
                k.f[s].height = g->frames[s].height;
                k.f[s].format = (int)g->frames[s].format;
                k.f[s].stride = g->frames[s].stride[0];
                if (g->conv[s]) {
                    k.f[s].yuv = g->yuv[s].data[0];
                    k.f[s].yuv_format = (int)g->yuv[s].format;
                    k.f[s].matrix = (int)g->cp[s].matrix;
                    k.f[s].range = (int)g->cp[s].range;
                }
            }
            const size_t len = offsetof(chain_key, f) + (size_t)S * sizeof k.f[0];
            pf_graph_cache_stats before, after;
            pf_graph_cache_get_stats(g->gc, &before);
            st = pf_graph_cache_run(g->gc, g->stream, &k, len, run_chain, &c);
            pf_graph_cache_get_stats(g->gc, &after);
            graphed = after.replays > before.replays || after.captures > before.captures;
            replayed = after.replays > before.replays && after.captures == before.captures;
        }
    }
    if (st == PF_OK) st = pf_event_record(g->ev1, g->stream);
    const int64_t t2 = pf_time_ns();
    if (st == PF_OK) st = pf_stream_synchronize(g->stream);
    if (st != PF_OK) return st;
    const int64_t t3 = pf_time_ns();
    if (g->tracer) {
        /* The host's side of a batch: a launch (one graph, or the ops one
         * by one) and a single wait; the device's: one span. */
        pf_trace_span(g->tracer, g->track, "upload", t0, t1, -1, g->batches);
        pf_trace_span(g->tracer, g->track, graphed ? "graph launch" : "launch",
                      t1, t2, -1, g->batches);
        pf_trace_span(g->tracer, g->track, "wait", t2, t3, -1, g->batches);
        pf_trace_gpu_span(g->tracer, g->gpu_track, detect ? "faces chain (detect)" : "faces chain",
                          g->ev0, g->ev1, -1, g->batches);
    }
    float ms = 0.0f;
    if (pf_event_elapsed_ms(g->ev0, g->ev1, &ms) == PF_OK) {
        /* The events bracket host work too when the host is slow to queue
         * the chain: a capture and instantiation (graph), an executor's own
         * first capture (its 2nd run, without the graph). Those batches are
         * left out of the mean; what remains is the device's time. */
        const bool steady = g->graph ? replayed : g->batches >= 3;
        if (steady) {
            g->gpu_ms_total += ms;
            g->gpu_batches++;
        }
        g->gpu_ms_all += ms;
    }
    g->batches++;
    const char *host = pf_buffer_data(g->out_host);
    const int *counts = (const int *)host;
    const pf_face *res = (const pf_face *)(host + g->counts_bytes);
    for (int s = 0; s < S; s++) {
        const int n = counts[s];
        g->n_tracks[s] = n;
        g->frame_index[s]++;
        const int m = n < cap ? n : cap;
        if (m > 0)
            memcpy(faces + (size_t)s * cap, res + (size_t)s * g->slots, (size_t)m * sizeof *faces);
        n_faces[s] = m;
    }
    return PF_OK;
}

void pf_face_gpu_stats(const pf_face_gpu *g, pf_face_tracker_stats *out)
{
    out->batches = g->batches;
    out->gpu_batches = g->gpu_batches;
    out->gpu_ms = g->gpu_batches ? g->gpu_ms_total / (double)g->gpu_batches
                  : g->batches   ? g->gpu_ms_all / (double)g->batches
                                 : 0.0;
    pf_graph_cache_stats gs;
    memset(&gs, 0, sizeof gs);
    if (g->gc) pf_graph_cache_get_stats(g->gc, &gs);
    out->graph_captures = (int64_t)gs.captures;
    out->graph_replays = (int64_t)gs.replays;
}

#else
/* A build without CUDA: the driver is absent (faces_tracker.c refuses CUDA
 * devices); this keeps the translation unit non-empty. */
typedef int pf_face_gpu_absent;
#endif
