/* The segment job (jobs.h: pf_segment_start): body segmentation of a
 * video, an image or many images, with the background replaced (blur, a
 * colour, an image, or kept with an alpha channel) and optional 8-bit masks.
 *
 *   read -> ops.preprocess -> nn.infer -> ops.mask_post -> composite -> write
 *
 * Throughput mode (default) batches preprocess and inference and lets every
 * edge block, so nothing is dropped; latency mode runs batch 1 with one
 * frame in flight (the reader waits for the writer): the per-frame latency
 * without queueing, still without drops (a file is processed completely).
 * On a GPU, NVDEC decodes elementary streams into device memory; output
 * "null" drops the composited frames instead of encoding them on the CPU,
 * so a run measures the GPU chain. On video the masks are smoothed over
 * time. A cancel (pf_job_cancel_async) stops the pipeline; the video so far
 * is finished and renamed into place. Outputs are checked before the
 * pipeline starts (seg_check_outputs: none may be an input, two may not
 * share a file, no_overwrite refuses existing ones) and written through
 * pf_output (a temporary renamed when complete). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "jobs/segment_impl.h"

/* A running segment job: the parent seg_job (its streams inside) and what
 * the run needs besides. */
typedef struct seg_task {
    seg_job job;
    jobs_sink sink;
    pf_job *pub;
    int batch;
    bool latency;
    char *trace;
    char *strings[4];          /* copies of params strings the job points to */
    pf_pipeline *p;
    pf_status start_status;    /* pf_pipeline_start's */
    char start_err[1024];      /* its message */
    int64_t t0_ns;
    int64_t total;             /* frames expected, <= 0 unknown */
    char busiest[64];
    char devices[256];         /* several GPUs: "cuda:0,cuda:1" */
    pf_job_stream *streams;    /* the result's */
    jobs_warmup *warm;         /* the engine warm-up while inputs are probed (warmup.c) */
    pf_job_stage *stages;      /* the result's, names in stage_names */
    char (*stage_names)[64];
} seg_task;

pf_segment_params pf_segment_params_default(void)
{
    pf_segment_params p;
    memset(&p, 0, sizeof p);
    p.smooth = 0.6f;
    p.crf = -1;
    p.retries = 3;
    return p;
}

/* Params ------------------------------------------------------------------------------------- */

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* What needs no file: ranges and syntax. PF_ERR_INVALID naming the field. */
static pf_status check_params(const pf_segment_params *p)
{
    if (!p->inputs || p->num_inputs < 1)
        return pf_set_error(PF_ERR_INVALID, "inputs: expected at least one input (num_inputs %d)",
                            p->num_inputs);
    for (int i = 0; i < p->num_inputs; i++)
        if (!p->inputs[i] || !p->inputs[i][0])
            return pf_set_error(PF_ERR_INVALID, "inputs[%d]: empty", i);
    if (p->batch < 0 || p->batch > 256)
        return pf_set_error(PF_ERR_INVALID, "batch %d: expected 1..256 (0 = default)", p->batch);
    if (p->batch > 1 && p->latency)
        return pf_set_error(PF_ERR_INVALID, "batch %d: latency mode runs batch 1", p->batch);
    if (!(p->smooth > 0 && p->smooth <= 1))
        return pf_set_error(PF_ERR_INVALID, "smooth %g: expected a number in (0, 1]",
                            (double)p->smooth);
    if (p->crf > 63)
        return pf_set_error(PF_ERR_INVALID, "crf %d: expected 0..63 (-1 = default)", p->crf);
    if (p->bitrate != 0 && !(p->bitrate >= 1000 && p->bitrate <= 100000000000LL))
        return pf_set_error(PF_ERR_INVALID, "bitrate %lld: expected bits/s >= 1000",
                            (long long)p->bitrate);
    if (p->bitrate > 0 && p->crf >= 0)
        return pf_set_error(PF_ERR_INVALID, "bitrate %lld: give crf or bitrate, not both",
                            (long long)p->bitrate);
    if (p->codec && !pf_video_have_encoder(p->codec))
        return pf_set_error(PF_ERR_INVALID, "codec '%s': FFmpeg has no such video encoder",
                            p->codec);
    if (p->preset && !p->preset[0])
        return pf_set_error(PF_ERR_INVALID, "preset '': expected a preset name");
    if (p->max_frames < 0)
        return pf_set_error(PF_ERR_INVALID, "max_frames %lld: expected >= 0",
                            (long long)p->max_frames);
    if (!(p->start_s >= 0 && isfinite(p->start_s)))
        return pf_set_error(PF_ERR_INVALID, "start_s %g: expected a time >= 0", p->start_s);
    if (!(p->duration_s >= 0 && isfinite(p->duration_s)))
        return pf_set_error(PF_ERR_INVALID, "duration_s %g: expected a time >= 0 (0 = to the end)",
                            p->duration_s);
    if (p->retries < -1)
        return pf_set_error(PF_ERR_INVALID, "retries %d: expected -1 (forever) or more",
                            p->retries);
    if (p->output_timeout_ms < 0 || p->output_timeout_ms > 3600000)
        return pf_set_error(PF_ERR_INVALID, "output_timeout_ms %lld: expected 0..3600000",
                            (long long)p->output_timeout_ms);
    if (p->num_devices < 0 || p->num_devices > SEG_MAX_DEVICES ||
        (p->num_devices > 0 && !p->devices))
        return pf_set_error(PF_ERR_INVALID, "num_devices %d: expected 0..%d with devices[]",
                            p->num_devices, SEG_MAX_DEVICES);
    for (int i = 0; i < p->num_devices; i++) {
        if (!p->devices[i]) return pf_set_error(PF_ERR_INVALID, "devices[%d]: NULL", i);
        for (int k = 0; k < i; k++)
            if (p->devices[k] == p->devices[i])
                return pf_set_error(PF_ERR_INVALID, "devices[%d]: %s is also devices[%d]", i,
                                    pf_device_spec(p->devices[i]), k);
    }
    for (int i = 0; p->device_of && i < p->num_inputs; i++)
        if (p->device_of[i] < 0 || p->device_of[i] >= (p->num_devices ? p->num_devices : 1))
            return pf_set_error(PF_ERR_INVALID, "device_of[%d] %d: expected 0..%d (an index "
                                "into devices)", i, p->device_of[i],
                                (p->num_devices ? p->num_devices : 1) - 1);
    if (p->output_options && !strchr(p->output_options, '='))
        return pf_set_error(PF_ERR_INVALID, "output_options '%s': expected key=value[:key=value...]",
                            p->output_options);
    return seg_check_background(p->background);
}

pf_status seg_check_background(const char *bg)
{
    if (bg && bg[0] == '#') {
        bool ok = strlen(bg) == 7;
        for (int c = 1; ok && c < 7; c++) ok = hexval(bg[c]) >= 0;
        if (!ok) return pf_set_error(PF_ERR_INVALID, "background '%s': expected #RRGGBB", bg);
    }
    if (bg && !bg[0])
        return pf_set_error(PF_ERR_INVALID,
                            "background '': expected blur, none, #RRGGBB or an image");
    return PF_OK;
}

/* blur | none | #RRGGBB (checked) | an image file (read here: reported). */
pf_status seg_load_background(seg_job *job, const char *v)
{
    if (!v || !strcmp(v, "blur")) {
        job->bg = SEG_BG_BLUR;
        return PF_OK;
    }
    if (!strcmp(v, "none")) {
        job->bg = SEG_BG_NONE;
        return PF_OK;
    }
    if (v[0] == '#') {
        for (int c = 0; c < 3; c++)
            job->color[c] = (uint8_t)(hexval(v[1 + 2 * c]) * 16 + hexval(v[2 + 2 * c]));
        job->bg = SEG_BG_COLOR;
        return PF_OK;
    }
    pf_status st = pf_image_read(v, PF_PIXFMT_RGB24, &job->bg_image);
    if (st != PF_OK) {
        seg_error(job, "--background: %s (expected blur, none, #RRGGBB or an image)",
                  pf_last_error());
        return st;
    }
    job->bg = SEG_BG_IMAGE;
    return PF_OK;
}

/* Model ---------------------------------------------------------------------------------------- */

/* "[1, 896, 16]" */
static void shape_str(const pf_model_io *io, char *buf, size_t size)
{
    size_t k = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < io->ndim && k < size; d++)
        k += (size_t)snprintf(buf + k, size - k, "%s%lld", d ? ", " : "", (long long)io->shape[d]);
    if (k < size) snprintf(buf + k, size - k, "]");
}

/* The job takes one output, a one-channel mask: [1, H, W, 1], [1, 1, H, W]
 * or [1, H, W] (what ops.mask_post reads without `channel`/`softmax`). A
 * detector or a class map would give a garbage mask with exit 0. */
static bool check_mask_output(seg_job *job, const pf_model *m)
{
    int n = pf_model_num_outputs(m);
    bool ok = n == 1;
    pf_model_io o = pf_model_output(m, 0);
    if (ok) {
        const int64_t *s = o.shape;
        bool nhwc = o.ndim == 4 && s[3] == 1, nchw = o.ndim == 4 && s[1] == 1;
        int64_t h = nhwc ? s[1] : nchw ? s[2] : o.ndim == 3 ? s[1] : 0;
        int64_t w = nhwc ? s[2] : nchw ? s[3] : o.ndim == 3 ? s[2] : 0;
        ok = (o.ndim == 3 || nhwc || nchw) && o.ndim >= 3 && s[0] <= 1 && h >= 4 && w >= 4;
    }
    if (ok) return true;
    char shapes[512] = "";
    size_t k = 0;
    for (int i = 0; i < n && i < 8 && k < sizeof shapes; i++) {
        pf_model_io io = pf_model_output(m, i);
        char one[160];
        shape_str(&io, one, sizeof one);
        k += (size_t)snprintf(shapes + k, sizeof shapes - k, "%s'%s' %s", i ? ", " : "",
                              io.name, one);
    }
    bool classes = n == 1 && o.ndim == 4 && o.shape[1] > 1 && o.shape[3] > 1;
    seg_error(job, "%s is not a person segmenter: it has %d output%s (%s); segment needs one "
              "mask output [1, H, W, 1], [1, 1, H, W] or [1, H, W]%s", job->model, n,
              n == 1 ? "" : "s", shapes,
              classes ? " (a class map [1, C, H, W] needs ops.mask_post with 'channel' or "
                        "'softmax' in a pipeline file: pixflow run)" : "");
    return false;
}

bool seg_read_model(seg_job *job)
{
    pf_model *m = NULL;
    if (pf_model_load(job->model, &m) != PF_OK) {
        seg_error(job, "%s", pf_last_error());
        return false;
    }
    pf_model_io in = pf_model_input(m, 0);
    bool ok = pf_model_num_inputs(m) == 1 && in.ndim == 4;
    if (ok) {
        job->model_nhwc = in.layout != PF_LAYOUT_NCHW && in.shape[3] == 3;
        job->model_h = (int)(job->model_nhwc ? in.shape[1] : in.shape[2]);
        job->model_w = (int)(job->model_nhwc ? in.shape[2] : in.shape[3]);
        ok = job->model_w > 0 && job->model_h > 0;
    }
    if (!ok) seg_error(job, "%s: expected one image input [1, H, W, 3] or [1, 3, H, W]", job->model);
    if (ok) ok = check_mask_output(job, m);
    pf_model_free(&m);
    return ok;
}

/* Pipeline ------------------------------------------------------------------------------------- */

static pf_status add_builtin(pf_pipeline *p, const char *type, const char *name, pf_device *dev,
                             const pf_stage_param *kv, int n, int batch, pf_stage **out)
{
    pf_stage_config cfg = {.name = name, .params = kv, .num_params = n, .device = dev};
    pf_stage_desc d;
    pf_status st = pf_stage_builtin(type, &cfg, &d);
    if (st != PF_OK) return st;
    if (batch > 1) {
        /* Long enough for a batch to fill when the decoder hiccups: every
         * new batch size costs the executor a plan (and a CUDA graph). */
        d.batch.max_batch = batch;
        d.batch.max_delay_us = 10000;
    }
    st = pf_pipeline_add_stage(p, &d, out);
    if (st != PF_OK) d.destroy(d.user);
    return st;
}

/* Builds the pipeline; on failure the message is in err. */
static pf_status build(seg_task *t, pf_pipeline **out, char *err, size_t errsize)
{
    seg_job *job = &t->job;
    pf_device *dev = job->dev;
    bool gpu = dev && pf_device_get_type(dev) == PF_DEVICE_CUDA;
    pf_pipeline_params pp = pf_pipeline_params_default();
    pp.name = "segment";
    /* Latency: custom mode with batch 1 and the reader's gate (one frame in
     * flight), not PF_MODE_LATENCY, whose latest_only edges would drop
     * frames of a file that is read faster than it is processed. */
    pp.mode = t->latency ? PF_MODE_CUSTOM : PF_MODE_THROUGHPUT;
    pp.trace_path = t->trace;
    /* Frames paced like cameras (realtime, live inputs) wait for the model's
     * plans instead of queueing behind them (every batch size is planned at
     * start then, below): their latency is the pipeline's, not start-up's. */
    bool paced = job->realtime || job->live;
    for (int i = 0; i < job->num_streams; i++) paced = paced || job->streams[i].live;
    pp.sources_wait_start = paced;
    if (t->trace && job->info.frame_count > 0)
        pp.trace_max_events = (size_t)job->info.frame_count * 24 + 65536;
    pf_pipeline *p = NULL;
    pf_status st = pf_pipeline_create(&pp, &p);
    if (st != PF_OK) {
        snprintf(err, errsize, "%s", pf_last_error());
        return st;
    }
    char w[16], h[16], batch[16], alpha[32];
    snprintf(w, sizeof w, "%d", job->model_w);
    snprintf(h, sizeof h, "%d", job->model_h);
    snprintf(batch, sizeof batch, "%d", t->batch);
    snprintf(alpha, sizeof alpha, "%g", job->kind == SEG_VIDEO ? (double)job->smooth : 1.0);
    pf_stage_param pre_kv[] = {{"width", w, 0}, {"height", h, 0},
                               {"layout", job->model_nhwc ? "nhwc" : "nchw", 0},
                               {"dtype", gpu ? "f16" : "f32", 0}};
    /* Latency mode plans batch 1 (and captures its CUDA graph) at start, so
     * the first frame's latency is not a plan's; paced inputs every batch
     * size the batcher may form (a new size mid-run is a plan: ~0.1-0.5 s).
     * Throughput mode plans the full batch at start and pads the few
     * partial batches (decoder start, end of file) into it (reserve max). */
    pf_stage_param inf_kv[] = {{"model", job->model, 0},
                               {"precision", gpu ? "fp16" : "fp32", 0},
                               {"reserve", t->latency || paced ? "true" : "max", 0}};
    pf_stage_param post_kv[] = {{"alpha", alpha, 0}, {"size", "frame", 0}};
    /* One input: read -> preprocess -> infer -> mask -> composite -> write.
     * Several: one reader per stream, all into preprocess (a muxer:
     * round-robin batches across the streams), a demux after the compositor
     * and one writer per stream. Several GPUs: that chain once per device
     * (a model replica each, batches formed per device), fed by the streams
     * assigned to it; the demux of each routes its streams to their writers. */
    int ns = job->num_streams;
    const int nchains = ns > 0 && job->ndevs > 1 ? job->ndevs : 1;
    pf_stage **reads = ns > 0 ? calloc((size_t)ns, sizeof *reads) : NULL;
    pf_stage **writes = ns > 0 ? calloc((size_t)ns, sizeof *writes) : NULL;
    char *routes = ns > 0 ? malloc((size_t)ns * 24 + 1) : NULL;
    if (ns > 0 && (!reads || !writes || !routes)) st = PF_ERR_NOMEM;
    for (int i = 0; i < ns && st == PF_OK; i++) st = seg_add_source(p, &job->streams[i], &reads[i]);
    pf_stage *s[6] = {NULL};
    if (st == PF_OK && ns == 0) st = seg_add_source(p, job, &s[0]);
    for (int g = 0; g < nchains && st == PF_OK; g++) {
        pf_device *cdev = nchains > 1 ? job->devs[g] : dev;
        char sfx[16] = "", names[5][48];
        if (nchains > 1) snprintf(sfx, sizeof sfx, "_gpu%d", g);
        static const char *const base[5] = {"preprocess", "infer", "mask", "composite", "demux"};
        for (int k = 0; k < 5; k++) snprintf(names[k], sizeof names[k], "%s%s", base[k], sfx);
        st = add_builtin(p, "ops.preprocess", names[0], cdev, pre_kv, 4, t->batch, &s[1]);
        if (st == PF_OK)
            st = add_builtin(p, "nn.infer", names[1], cdev, inf_kv, 3, t->batch, &s[2]);
        /* The mask goes to the frame's size only when it is written out;
         * composite samples the model's mask at every pixel anyway. */
        if (st == PF_OK)
            st = add_builtin(p, "ops.mask_post", names[2], cdev, post_kv,
                             job->mask_out[0] ? 2 : 1, 1, &s[3]);
        if (st == PF_OK) st = seg_add_composite(p, job, cdev, names[3], &s[4]);
        if (st == PF_OK && ns == 0) st = seg_add_sink(p, job, &s[5]);
        /* The demux's routes: this chain's streams (source id = input
         * position) to its outputs in connect order. */
        size_t rl = 0;
        int outs = 0;
        if (routes) routes[0] = '\0';
        for (int i = 0; i < ns && nchains > 1; i++)
            if (job->streams[i].dev == cdev)
                rl += (size_t)snprintf(routes + rl, 24, "%s%d:%d", rl ? "," : "", i, outs++);
        pf_stage_param dm_kv[] = {{"routes", routes, 0}};
        if (st == PF_OK && ns > 0)
            st = add_builtin(p, "demux", names[4], cdev, nchains > 1 ? dm_kv : NULL,
                             nchains > 1 ? 1 : 0, 1, &s[5]);
        pf_edge_params e = pf_edge_params_default();
        for (int i = 0; i < ns && st == PF_OK; i++) {
            if (job->streams[i].dev != cdev && nchains > 1) continue;
            e.capacity = t->latency ? 2 : t->batch + 8;
            st = pf_pipeline_connect(p, reads[i], s[1], &e);
        }
        for (int i = ns > 0 ? 1 : 0; i + 1 < 6 && st == PF_OK; i++) {
            e.capacity = t->latency ? 2 : i < 2 ? t->batch + 8 : 8;
            st = pf_pipeline_connect(p, s[i], s[i + 1], &e);
        }
        for (int i = 0; i < ns && st == PF_OK; i++) {
            if (job->streams[i].dev != cdev && nchains > 1) continue;
            if ((st = seg_add_sink(p, &job->streams[i], &writes[i])) != PF_OK) break;
            e.capacity = t->latency ? 2 : 8;
            st = pf_pipeline_connect(p, s[5], writes[i], &e);
        }
    }
    free(routes);
    free(reads);
    free(writes);
    if (st != PF_OK) {
        snprintf(err, errsize, "%s", pf_last_error());
        pf_pipeline_destroy(&p);
        return st;
    }
    *out = p;
    return PF_OK;
}

/* Frames written: the parent's, or its streams' together. */
static long long frames_done(seg_job *job)
{
    long long n = atomic_load(&job->frames_done);
    for (int i = 0; i < job->num_streams; i++) n += atomic_load(&job->streams[i].frames_done);
    return n;
}

/* Frames expected: the input's count, less what the trim options leave out. */
static int64_t expected_frames(const seg_job *job)
{
    int64_t total = job->kind == SEG_IMAGES ? job->num_inputs : job->info.frame_count;
    if (job->kind == SEG_VIDEO && total > 0) {
        double fps = job->info.fps.num > 0 && job->info.fps.den > 0
                         ? (double)job->info.fps.num / job->info.fps.den
                         : 0;
        if (fps > 0) total -= (int64_t)(job->start_s * fps + 0.5);
        if (fps > 0 && job->duration_s > 0 && total > (int64_t)(job->duration_s * fps + 0.5))
            total = (int64_t)(job->duration_s * fps + 0.5);
        if (job->max_frames > 0 && total > job->max_frames) total = job->max_frames;
        if (total < 1) total = 1;
    }
    return total;
}

/* Result ---------------------------------------------------------------------------------------- */

static void gather(seg_task *t, double elapsed_s, pf_job_result *r)
{
    seg_job *job = &t->job;
    r->input = job->input_label;
    r->output = seg_shown(job->output, job->output_shown, sizeof job->output_shown);
    r->mask_out = job->mask_out[0] ? seg_shown(job->mask_out, job->mask_shown,
                                               sizeof job->mask_shown)
                                   : NULL;
    r->video = job->kind == SEG_VIDEO;
    r->frames = frames_done(job);
    r->images = job->kind == SEG_IMAGES ? job->num_inputs : 0;
    r->failed = atomic_load(&job->images_failed);
    r->elapsed_s = elapsed_s;
    r->fps = elapsed_s > 0 ? (double)r->frames / elapsed_s : 0;
    long long first = atomic_load(&job->first_out_ns);
    for (int i = 0; i < job->num_streams; i++) {
        long long f = atomic_load(&job->streams[i].first_out_ns);
        if (f && (!first || f < first)) first = f;
    }
    r->first_frame_ms = first ? (double)(first - t->t0_ns) / 1e6 : -1;
    r->decoder = job->kind == SEG_VIDEO ? job->info.decoder : NULL;
    r->latency_mode = t->latency;
    r->batch = t->batch;
    const pf_device_props *dp = job->dev ? pf_device_props_get(job->dev) : NULL;
    r->device = job->dev ? pf_device_spec(job->dev) : "cpu";
    if (job->ndevs > 1) {
        size_t k = 0;
        for (int i = 0; i < job->ndevs && k < sizeof t->devices; i++)
            k += (size_t)snprintf(t->devices + k, sizeof t->devices - k, "%s%s", i ? "," : "",
                                  pf_device_spec(job->devs[i]));
        r->device = t->devices;
    }
    r->device_name = dp ? dp->name : "";
    r->model = job->model;
    r->model_width = job->model_w;
    r->model_height = job->model_h;
    if (job->num_streams > 0) t->streams = calloc((size_t)job->num_streams, sizeof *t->streams);
    for (int i = 0; t->streams && i < job->num_streams; i++) {
        seg_job *sj = &job->streams[i];
        pf_job_stream *s = &t->streams[i];
        s->input = sj->input_label;
        s->output = sj->null_output ? "null"
                                    : seg_shown(sj->output, sj->output_shown,
                                                sizeof sj->output_shown);
        s->output_failed = atomic_load(&sj->output_failed) != 0;
        s->live = sj->live;
        s->device = sj->dev ? pf_device_spec(sj->dev) : "cpu";
        s->frames = atomic_load(&sj->frames_done);
        if (sj->stream_error[0]) {
            s->error = sj->stream_error;
            r->streams_failed++;
        }
        pf_video_reader_stats rs;
        if (sj->reader && pf_video_reader_get_stats(sj->reader, &rs) == PF_OK) {
            r->corrupt_packets += (int64_t)rs.corrupt_packets;
            s->reconnects = (int64_t)rs.reconnects;
            s->gap_s = (double)rs.gap_us / 1e6;
        }
    }
    r->streams = t->streams;
    r->num_streams = t->streams ? job->num_streams : 0;
    pf_pipeline_stats ps;
    if (pf_pipeline_get_stats(t->p, &ps) == PF_OK) {
        r->dropped = (int64_t)ps.dropped;
        r->transfers = (int64_t)ps.transfers;
        r->latency_p50_ms = ps.e2e_p50_us / 1000.0;
        r->latency_p99_ms = ps.e2e_p99_us / 1000.0;
        for (int k = 0; t->streams && k < ps.num_streams; k++) {
            int i = ps.streams[k].source;
            if (i < 0 || i >= job->num_streams) continue;
            t->streams[i].fps = ps.streams[k].fps;
            t->streams[i].dropped = (int64_t)ps.streams[k].dropped;
            t->streams[i].latency_p50_ms = ps.streams[k].e2e_p50_us / 1000.0;
            t->streams[i].latency_p99_ms = ps.streams[k].e2e_p99_us / 1000.0;
        }
        if (ps.num_stages > 0 && !t->stages) {
            t->stages = calloc((size_t)ps.num_stages, sizeof *t->stages);
            t->stage_names = calloc((size_t)ps.num_stages, sizeof *t->stage_names);
        }
        for (int k = 0; t->stages && t->stage_names && k < ps.num_stages; k++) {
            const pf_stage_stats *ss = &ps.stages[k];
            snprintf(t->stage_names[k], sizeof t->stage_names[k], "%s", ss->name ? ss->name : "");
            t->stages[k] = (pf_job_stage){t->stage_names[k], ss->busy_fraction, ss->fps,
                                          ss->items_in};
            r->stages = t->stages;
            r->num_stages = k + 1;
        }
        if (ps.bottleneck >= 0 && ps.bottleneck < ps.num_stages) {
            snprintf(t->busiest, sizeof t->busiest, "%s", ps.stages[ps.bottleneck].name);
            r->busiest_stage = t->busiest;
            r->busiest_busy = ps.stages[ps.bottleneck].busy_fraction;
        }
    }
    if (job->reader) {
        pf_video_reader_stats rs;
        if (pf_video_reader_get_stats(job->reader, &rs) == PF_OK)
            r->corrupt_packets = (int64_t)rs.corrupt_packets;
    }
}

/* Job ops ---------------------------------------------------------------------------------------- */

static pf_status seg_wait(pf_job *j, int64_t timeout_us)
{
    seg_task *t = j->impl;
    seg_job *job = &t->job;
    pf_status st = t->start_status;
    if (st == PF_OK) st = pf_pipeline_wait(t->p, timeout_us);
    if (st == PF_TIMEOUT) return st;
    char err[1024];
    snprintf(err, sizeof err, "%s", t->start_status != PF_OK ? t->start_err : pf_last_error());
    double elapsed = (double)(pf_time_ns() - t->t0_ns) / 1e9;
    bool interrupted = st == PF_ERR_CANCELLED && j->cancelled;
    if (st != PF_OK && !interrupted) seg_error(job, "%s", err);
    pf_job_result *r = &j->result;
    gather(t, elapsed, r);
    bool failed = st != PF_OK || atomic_load(&job->write_failed);
    for (int i = 0; i < job->num_streams; i++) failed |= atomic_load(&job->streams[i].write_failed);
    if (!failed && !interrupted && job->kind == SEG_VIDEO && r->frames == 0 && job->start_s > 0) {
        /* Nothing to write: say why instead of leaving no output silently. */
        seg_error(job, "--start %g s: %s has no frames from there on", job->start_s,
                  job->input_label);
        failed = true;
    }
    r->status = interrupted ? PF_JOB_INTERRUPTED : failed ? PF_JOB_FAILED : PF_JOB_DONE;
    if (interrupted || !failed) return PF_OK;
    return pf_set_error(st != PF_OK && !interrupted ? st : PF_ERR_IO, "%s",
                        st != PF_OK ? err : "an output failed (reported)");
}

static void seg_cancel_async(pf_job *j)
{
    seg_task *t = j->impl;
    if (t->p) pf_pipeline_cancel_async(t->p);
}

static void seg_progress(pf_job *j, pf_job_progress *pg)
{
    seg_task *t = j->impl;
    pg->done = frames_done(&t->job);
    pg->failed = atomic_load(&t->job.images_failed);
    pg->total = t->total;
    pg->elapsed_s = (double)(pf_time_ns() - t->t0_ns) / 1e9;
}

static pf_status seg_print_stats(pf_job *j, FILE *f)
{
    seg_task *t = j->impl;
    return t->p ? pf_pipeline_print_stats(t->p, f) : PF_OK;
}

static void task_free(seg_task *t)
{
    jobs_warmup_finish(&t->warm);
    pf_pipeline_destroy(&t->p); /* closes what is open, writes the trace */
    seg_multi_free(&t->job);
    seg_job_free(&t->job);
    pthread_mutex_destroy(&t->job.gate_mu);
    pthread_cond_destroy(&t->job.gate_cv);
    for (size_t i = 0; i < sizeof t->strings / sizeof t->strings[0]; i++) free(t->strings[i]);
    free(t->trace);
    free(t->streams);
    free(t->stages);
    free(t->stage_names);
    free(t);
}

static void seg_destroy(pf_job *j)
{
    task_free(j->impl);
}

static const job_ops seg_ops = {seg_wait, seg_cancel_async, seg_progress, seg_print_stats,
                                seg_destroy};

/* Start ------------------------------------------------------------------------------------------ */

static const char *keep(seg_task *t, int slot, const char *s)
{
    if (!s) return NULL;
    t->strings[slot] = strdup(s);
    return t->strings[slot] ? t->strings[slot] : "";
}

/* Everything before the pipeline: model, inputs, outputs. */
/* The model is known and readable: warm its code on the job's GPUs while
 * the inputs are probed (warmup.c). */
static void start_warmup(seg_task *t)
{
    seg_job *job = &t->job;
    pf_device *one[1] = {job->dev};
    t->warm = jobs_warmup_start(job->model, job->ndevs > 1 ? job->devs : one,
                                job->ndevs > 1 ? job->ndevs : 1, PF_NN_FP16, t->batch);
}

static pf_status prepare(seg_task *t, const pf_segment_params *p)
{
    seg_job *job = &t->job;
    pf_status st;
    if (job->ndevs > 1 && !seg_multi_wanted(p->inputs, p->num_inputs))
        return pf_set_error(PF_ERR_INVALID, "devices: %d devices need several video inputs "
                            "(one stream runs on one device)", job->ndevs);
    if (seg_multi_wanted(p->inputs, p->num_inputs)) {
        /* Several inputs, one pipeline (segment_multi.c). */
        if (!seg_find_model(job, p->model) || !seg_read_model(job)) return PF_ERR_FORMAT;
        start_warmup(t);
        st = seg_multi_plan(job, p->inputs, p->num_inputs, p->output, p->mask_out, t->trace,
                            job->realtime);
        if (st != PF_OK) return st;
        snprintf(job->output, sizeof job->output, "%s", job->null_output ? "null" : p->output);
        if (p->mask_out) snprintf(job->mask_out, sizeof job->mask_out, "%s", p->mask_out);
        job->info = job->streams[0].info;
        job->info.frame_count = 0;
        for (int i = 0; i < job->num_streams; i++)
            if (job->info.frame_count >= 0)
                job->info.frame_count = job->streams[i].info.frame_count > 0
                                            ? job->info.frame_count +
                                                  job->streams[i].info.frame_count
                                            : -1;
        return PF_OK;
    }
    if (!seg_find_model(job, p->model) || !seg_read_model(job)) return PF_ERR_FORMAT;
    start_warmup(t);
    if (!seg_collect_inputs(job, p->inputs, p->num_inputs)) return PF_ERR_IO;
    if (!seg_plan_outputs(job, p->output, p->mask_out)) return PF_ERR_IO;
    if (!seg_check_outputs(job, t->trace)) return PF_ERR_IO;
    return PF_OK;
}

pf_status pf_segment_start(const pf_segment_params *p, pf_job **out)
{
    PF_CHECK_ARG(p && out, "pf_segment_start", "params or out is NULL");
    *out = NULL;
    pf_status st = check_params(p);
    if (st != PF_OK) return st;
    seg_task *t = calloc(1, sizeof *t);
    if (!t) return pf_set_error(PF_ERR_NOMEM, "pf_segment_start: out of memory");
    seg_job *job = &t->job;
    t->sink = (jobs_sink){p->on_message, p->user, p->on_frame};
    job->sink = &t->sink;
    pthread_mutex_init(&job->gate_mu, NULL);
    pthread_cond_init(&job->gate_cv, NULL);
    job->alpha = p->alpha;
    job->smooth = p->smooth;
    job->no_overwrite = p->no_overwrite;
    job->codec = keep(t, 0, p->codec);
    job->preset = keep(t, 1, p->preset);
    job->output_options = keep(t, 2, p->output_options);
    job->crf = p->crf >= 0 ? p->crf : -2;
    job->bitrate = p->bitrate;
    job->max_frames = p->max_frames;
    job->start_s = p->start_s;
    job->duration_s = p->duration_s;
    job->no_audio = p->no_audio;
    job->realtime = p->realtime;
    job->retries = p->retries;
    job->output_timeout_ms = p->output_timeout_ms;
    t->latency = p->latency;
    t->trace = p->trace ? strdup(p->trace) : NULL;
    const char *bg = p->background;
    if (job->alpha && !bg) bg = "none";
    st = seg_load_background(job, bg);
    if (st == PF_OK && job->bg == SEG_BG_IMAGE) job->bg_path = keep(t, 3, bg);
    job->dev = p->num_devices > 0 ? p->devices[0] : p->device;
    job->ndevs = p->num_devices;
    for (int i = 0; i < p->num_devices; i++) job->devs[i] = p->devices[i];
    job->device_of = p->device_of;
    if (st == PF_OK && !job->dev && (st = pf_device_select(NULL, &job->dev)) != PF_OK)
        seg_error(job, "device: %s", pf_last_error());
    int64_t t_dev = pf_time_ns();
    if (st == PF_OK) {
        bool gpu = pf_device_get_type(job->dev) == PF_DEVICE_CUDA;
        t->batch = t->latency ? 1 : p->batch ? p->batch : gpu ? 64 : 8;
        job->gate = t->latency;
        job->null_output = p->output && !strcmp(p->output, "null");
        st = prepare(t, p);
    }
    int64_t t_prep = pf_time_ns();
    char err[1024] = "";
    if (st == PF_OK && (st = build(t, &t->p, err, sizeof err)) != PF_OK)
        seg_error(job, "%s", err);
    int64_t t_built = pf_time_ns();
    jobs_warmup_finish(&t->warm);
    PF_LOGD("segment: start-up: inputs probed in %.1f ms, pipeline built (model loaded) in %.1f "
            "ms, then waited %.1f ms for the warm-up", (double)(t_prep - t_dev) / 1e6,
            (double)(t_built - t_prep) / 1e6, (double)(pf_time_ns() - t_built) / 1e6);
    if (st == PF_OK && !(t->pub = jobs_new(PF_JOB_SEGMENT, &seg_ops, t)))
        st = pf_set_error(PF_ERR_NOMEM, "pf_segment_start: out of memory");
    if (st != PF_OK) {
        /* A params error keeps its message for the caller (pf_last_error). */
        char keep_err[1024];
        snprintf(keep_err, sizeof keep_err, "%s", pf_last_error());
        task_free(t);
        return pf_set_error(st, "%s", keep_err);
    }
    t->total = expected_frames(job);
    if (t->total <= 0) t->total = -1; /* unknown: a live input, no frame count */
    t->t0_ns = pf_time_ns();
    /* A start that fails is the run's failure: pf_job_wait reports it and
     * the result says so, as for an error while running. */
    t->start_status = pf_pipeline_start(t->p);
    if (t->start_status != PF_OK) snprintf(t->start_err, sizeof t->start_err, "%s", pf_last_error());
    *out = t->pub;
    return PF_OK;
}
