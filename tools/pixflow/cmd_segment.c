/* `pixflow segment INPUT [-o OUTPUT]`: body segmentation of a video, an
 * image or many images, with the background replaced (blur, a colour, an
 * image, or kept with an alpha channel) and optional 8-bit masks.
 *
 *   read -> ops.preprocess -> nn.infer -> ops.mask_post -> composite -> write
 *
 * Throughput mode (default) batches preprocess and inference (--batch) and
 * lets every edge block, so nothing is dropped; --latency runs batch 1 with
 * one frame in flight (the reader waits for the writer): the per-frame
 * latency without queueing, still without drops (a file is processed
 * completely). On a GPU, NVDEC decodes elementary streams into device
 * memory; -o null drops the composited frames instead of encoding them on
 * the CPU, so a run measures the GPU chain. On video the masks are smoothed over
 * time (--smooth). Progress goes to stderr (a bar on a terminal, a line a
 * second otherwise); the summary to stdout, or to stderr when the video
 * itself goes to stdout (-o -). SIGINT/SIGTERM cancel the pipeline; the
 * video so far is finished and renamed into place and the summary printed,
 * and later signals (GNU timeout sends two) do not cut that short. Outputs
 * are checked before the pipeline starts (seg_check_outputs: none may be an
 * input, two may not share a file, -n refuses existing ones) and written
 * through pf_output (a temporary renamed when complete). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "segment_job.h"

#define SEG_EXIT_INTERRUPTED 130

static const cli_option seg_options[] = {
    {"output", "PATH", "output file or directory (also -o); '-' = Y4M on stdout; 'null' = "
               "composite but write nothing (benchmarks); or a URL: udp://, tcp://, srt://, "
               "rtsp://, rtmp://"},
    {"background", "BG", "blur (default), #RRGGBB, an image file, or none"},
    {"mask-out", "PATH", "also write 8-bit masks: a directory, a file or a URL"},
    {"alpha", NULL, "RGBA output (PNG, or .mov/.mkv/.webm video) with the mask as alpha"},
    {"model", "MODEL", "selfie (default), landscape, or a model file path"},
    {"device", "SPEC", "auto, cpu, cuda, cuda:N (default: $PIXFLOW_DEVICE or auto)"},
    {"batch", "N", "frames per inference batch in throughput mode (default 8 CPU, 64 GPU)"},
    {"latency", NULL, "one frame at a time: lowest per-frame latency"},
    {"smooth", "A", "temporal smoothing of video masks, weight of the new mask (0.6; 1 = off); "
                          "starts over at a scene cut"},
    {"trace", "FILE", "write a Chrome/Perfetto trace of the run to FILE"},
    {"stats", NULL, "print the per-stage breakdown (items/s, busy, time per call, batch)"},
    {"json", NULL, "print the summary as one JSON object"},
    {"quiet", NULL, "no progress"},
    /* overwrite control (-y / -n) */
    CLI_OVERWRITE_OPTIONS,
    /* Encoder and trim (video output; parse_encode_options) */
    {"codec", "NAME", "video encoder (FFmpeg name: libx264, libx265, libvpx-vp9, mpeg4, ...; "
                      "default libx264, or mpeg4 where FFmpeg lacks it)"},
    {"crf", "N", "constant quality 0..63 (libx264 default 23; lower = better)"},
    {"preset", "NAME", "encoder preset (libx264: ultrafast..veryslow, default medium)"},
    {"bitrate", "RATE", "target bits/s instead of --crf: 2500000, 2500k, 2.5M"},
    {"frames", "N", "process at most N frames (video)"},
    {"start", "TIME", "start at TIME: seconds (12.5) or [HH:]MM:SS[.frac]; frame-accurate"},
    {"duration", "TIME", "process TIME from the start (same forms)"},
    {"no-audio", NULL, "leave out the input's audio and other streams (kept by default)"},
    {"realtime", NULL, "read files at their native frame rate (simulates cameras)"},
    {"retries", "N", "several inputs: a live input that fails, stalls or ends is reopened "
                     "up to N times in a row (default 3; -1 = forever), the others go on"},
    {"output-timeout", "MS", "network outputs (-o udp://, tcp://, srt://, rtsp://, rtmp://): "
                             "a receiver that takes no data for MS ms, or does not answer "
                             "the connect within MS, fails that output (default 5000 for "
                             "writes, 10000 for the connect)"},
    {"output-options", "K=V:K=V", "options of the output's protocol and muxer (FFmpeg names): "
                                  "pkt_size=1316, send_buffer_size=65536, "
                                  "rtsp_transport=udp, movflags=faststart, ..."},
    {"help", NULL, "show this help"},
    {NULL, NULL, NULL},
};

static void seg_usage(FILE *f)
{
    fprintf(f,
            "usage: pixflow segment INPUT... [-o OUTPUT] [--background blur|#RRGGBB|IMAGE|none]\n"
            "                       [--mask-out PATH] [--alpha] [--model MODEL] [--device SPEC]\n"
            "                       [--batch N | --latency] [--trace FILE] [--stats] [--json]\n"
            "                       [--quiet] [-y | -n] [--codec NAME] [--crf N | --bitrate RATE]\n"
            "                       [--preset NAME] [--start TIME] [--duration TIME]\n"
            "                       [--frames N] [--no-audio] [--realtime] [--retries N]\n"
            "                       [--output-timeout MS] [--output-options K=V:...]\n"
            "       pixflow segment VIDEO|URL VIDEO|URL... -o 'DIR/{name}_seg.mp4' [options]\n\n"
            "Finds the people in a video or images and replaces the background.\n"
            "INPUT: a video file (Y4M; other containers when built with FFmpeg), '-' for\n"
            "stdin (Y4M, or a container FFmpeg reads without seeking), a FIFO or /dev/fd/N,\n"
            "an image (PNG/JPEG), a directory of images, or a glob ('shots/*.jpg'). Files\n"
            "are told apart by content. Damaged video is decoded as far as it can be, the\n"
            "damage skipped and counted in the summary.\n"
            "Default outputs: NAME_seg.EXT in the current directory (video: .mp4, or .y4m\n"
            "for Y4M input or without FFmpeg; .mov with --alpha), stdout for stdin, and the\n"
            "directory 'segmented' for several images. The model is found in $PIXFLOW_MODELS,\n"
            "the source tree of this program, or the current directory (node_modules/).\n\n"
            "On a GPU an H.264/HEVC elementary stream (.h264/.hevc) is decoded by NVDEC and\n"
            "frames stay in device memory up to the output. Writing a video encodes on the\n"
            "CPU (libx264: tens to a few hundred 1080p frames/s), so to measure the GPU\n"
            "chain use '-o null': every frame is still decoded, segmented and composited,\n"
            "then dropped (masks are still written with --mask-out). --latency runs batch\n"
            "1 with one frame in flight; its p50/p99 are decode -> composite done.\n\n"
            "Outputs: an existing output is overwritten (the default, or -y) unless -n is\n"
            "given. Every file is written under a temporary name beside it and renamed into\n"
            "place when complete, so a failure or an interrupt never leaves half a file; an\n"
            "output that is an input (the same file, however named) or two inputs whose\n"
            "outputs share a name are refused before anything is written. Ctrl-C stops early\n"
            "and still finishes the video written so far; a second Ctrl-C does not cut it.\n\n"
            "A video output keeps the input's frame timing (no re-gridding), colour\n"
            "(range, matrix, primaries, transfer: tagged like the input; 10-bit input is\n"
            "written as 8-bit), sample aspect ratio and rotation, and copies its audio and\n"
            "subtitle streams unchanged (no re-encode) unless --no-audio; --start,\n"
            "--duration and --frames cut video and audio alike. Odd sizes are padded by\n"
            "one row/column (the edge repeated) for codecs that need even sizes.\n\n"
            "Several videos (files, URLs) run in one pipeline: a reader each, one batched\n"
            "model, a writer each. -o must then be a pattern with {name} (the input's stem,\n"
            "or a name from a URL's host, port and path, or its '#NAME') or {index} (its\n"
            "position from 0): -o 'out/{name}_seg.mp4'; --mask-out likewise. A live input\n"
            "that fails is reopened (--retries) while the others go on; the summary and\n"
            "--json add one line (a 'streams' entry) per input.\n\n"
            "Network outputs: -o udp://HOST:PORT, tcp://HOST:PORT, srt://HOST:PORT (MPEG-TS),\n"
            "rtsp://HOST:PORT/PATH (RTSP push to a server, RTP over TCP) or rtmp://... (FLV),\n"
            "H.264 with no B-frames and zerolatency; {name}/{index} work inside the URL.\n"
            "Frames are sent as fast as they are made: --realtime paces a file input. A\n"
            "receiver that goes away fails its output (within --output-timeout when it just\n"
            "stops reading); with several inputs that stream stops and the others go on,\n"
            "and the run exits 1. Passwords in URLs are never printed.\n\n"
            "options:\n");
    cli_print_options(f, seg_options);
    fprintf(f, "\nexit status: 0 all done; 1 a failure, or some images could not be read or\n"
               "written (each is named; the others are done); 2 bad usage; 130 interrupted\n");
}

/* Signals ------------------------------------------------------------------------------------ */

/* Ctrl-C cancels the pipeline (cli_signals_install). */
static void cancel_pipeline(void *p) { pf_pipeline_cancel_async(p); }

/* Options ------------------------------------------------------------------------------------ */

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "pixflow segment: ");
    fprintf(stderr, msg, arg);
    fprintf(stderr, " (see 'pixflow segment --help')\n");
    return CLI_EXIT_USAGE;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* --background: blur | none | #RRGGBB | an image file. */
static int parse_background(seg_job *job, const char *v)
{
    if (!v || !strcmp(v, "blur")) {
        job->bg = SEG_BG_BLUR;
        return CLI_EXIT_OK;
    }
    if (!strcmp(v, "none")) {
        job->bg = SEG_BG_NONE;
        return CLI_EXIT_OK;
    }
    if (v[0] == '#') {
        if (strlen(v) != 7) return usage_error("--background '%s': expected #RRGGBB", v);
        for (int c = 0; c < 3; c++) {
            int hi = hexval(v[1 + 2 * c]), lo = hexval(v[2 + 2 * c]);
            if (hi < 0 || lo < 0) return usage_error("--background '%s': expected #RRGGBB", v);
            job->color[c] = (uint8_t)(hi * 16 + lo);
        }
        job->bg = SEG_BG_COLOR;
        return CLI_EXIT_OK;
    }
    if (pf_image_read(v, PF_PIXFMT_RGB24, &job->bg_image) != PF_OK) {
        seg_error(job, "--background: %s (expected blur, none, #RRGGBB or an image)",
                  pf_last_error());
        return CLI_EXIT_FAIL;
    }
    job->bg = SEG_BG_IMAGE;
    job->bg_path = v;
    return CLI_EXIT_OK;
}

/* -o is an alias of --output: rewrite argv before the shared parser sees it. */
static char **alias_short_output(int argc, char **argv)
{
    char **copy = malloc(sizeof *copy * (size_t)(argc + 1));
    if (!copy) return NULL;
    static char long_output[] = "--output";
    for (int i = 0; i < argc; i++) copy[i] = !strcmp(argv[i], "-o") ? long_output : argv[i];
    copy[argc] = NULL;
    return copy;
}

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

/* "2500000", "2500k", "2.5M" -> bits/s; false when not a positive rate. */
static bool parse_rate(const char *v, int64_t *out)
{
    char *end = NULL;
    double x = strtod(v, &end);
    if (!end || end == v) return false;
    if (*end == 'k' || *end == 'K') x *= 1e3, end++;
    else if (*end == 'm' || *end == 'M') x *= 1e6, end++;
    if (*end || !(x >= 1000 && x <= 1e11)) return false;
    *out = (int64_t)(x + 0.5);
    return true;
}

/* --codec, --crf, --preset, --bitrate, --frames, --start, --duration,
 * --no-audio into the job; a usage error names the option and value. */
static int parse_encode_options(seg_job *job, const cli_args *a)
{
    const char *v;
    job->crf = -2;
    job->no_audio = cli_flag(seg_options, a, "no-audio");
    if ((v = cli_value(seg_options, a, "codec"))) {
        if (!pf_video_have_encoder(v))
            return usage_error("--codec '%s': FFmpeg has no such video encoder", v);
        job->codec = v;
    }
    if ((v = cli_value(seg_options, a, "preset"))) {
        if (!v[0]) return usage_error("--preset '%s': expected a preset name", v);
        job->preset = v;
    }
    long n = 0;
    if ((v = cli_value(seg_options, a, "crf"))) {
        if (!cli_parse_long(v, 0, 63, &n)) return usage_error("--crf '%s': expected 0..63", v);
        job->crf = (int)n;
    }
    if ((v = cli_value(seg_options, a, "bitrate"))) {
        if (!parse_rate(v, &job->bitrate))
            return usage_error("--bitrate '%s': expected bits/s >= 1000, e.g. 2500k or 2.5M", v);
        if (job->crf >= 0) return usage_error("--bitrate %s: give --crf or --bitrate, not both", v);
    }
    if ((v = cli_value(seg_options, a, "output-options"))) {
        if (!strchr(v, '='))
            return usage_error("--output-options '%s': expected key=value[:key=value...]", v);
        job->output_options = v;
    }
    if ((v = cli_value(seg_options, a, "output-timeout"))) {
        if (!cli_parse_long(v, 1, 3600000L, &n))
            return usage_error("--output-timeout '%s': expected milliseconds 1..3600000", v);
        job->output_timeout_ms = n;
    }
    if ((v = cli_value(seg_options, a, "frames"))) {
        if (!cli_parse_long(v, 1, 2000000000L, &n))
            return usage_error("--frames '%s': expected a frame count >= 1", v);
        job->max_frames = n;
    }
    if ((v = cli_value(seg_options, a, "start")) && pf_parse_time(v, &job->start_s) != PF_OK)
        return usage_error("--start '%s': expected seconds (12.5) or [HH:]MM:SS[.frac]", v);
    if ((v = cli_value(seg_options, a, "duration"))) {
        if (pf_parse_time(v, &job->duration_s) != PF_OK || !(job->duration_s > 0))
            return usage_error("--duration '%s': expected a time > 0: seconds (12.5) or "
                               "[HH:]MM:SS[.frac]",
                               v);
    }
    return CLI_EXIT_OK;
}

/* The model's input geometry (for ops.preprocess). */
static bool read_model(seg_job *job)
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

typedef struct seg_run {
    pf_device *dev;
    int batch;
    bool latency;
    const char *trace;
} seg_run;

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
static pf_status build(seg_job *job, const seg_run *r, pf_pipeline **out, char *err,
                       size_t errsize)
{
    bool gpu = r->dev && pf_device_get_type(r->dev) == PF_DEVICE_CUDA;
    pf_pipeline_params pp = pf_pipeline_params_default();
    pp.name = "segment";
    /* Latency: custom mode with batch 1 and the reader's gate (one frame in
     * flight), not PF_MODE_LATENCY, whose latest_only edges would drop
     * frames of a file that is read faster than it is processed. */
    pp.mode = r->latency ? PF_MODE_CUSTOM : PF_MODE_THROUGHPUT;
    pp.trace_path = r->trace;
    /* Frames paced like cameras (--realtime, live inputs) wait for the model's
     * plans instead of queueing behind them (every batch size is planned at
     * start then, below): their latency is the pipeline's, not start-up's. */
    bool paced = job->realtime || job->live;
    for (int i = 0; i < job->num_streams; i++) paced = paced || job->streams[i].live;
    pp.sources_wait_start = paced;
    if (r->trace && job->info.frame_count > 0)
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
    snprintf(batch, sizeof batch, "%d", r->batch);
    snprintf(alpha, sizeof alpha, "%g", job->kind == SEG_VIDEO ? (double)job->smooth : 1.0);
    pf_stage_param pre_kv[] = {{"width", w, 0}, {"height", h, 0},
                               {"layout", job->model_nhwc ? "nhwc" : "nchw", 0},
                               {"dtype", gpu ? "f16" : "f32", 0}};
    /* Latency mode plans batch 1 (and captures its CUDA graph) at start, so
     * the first frame's latency is not a plan's; paced inputs every batch
     * size the batcher may form (a new size mid-run is a plan: ~0.1-0.5 s). */
    pf_stage_param inf_kv[] = {{"model", job->model, 0},
                               {"precision", gpu ? "fp16" : "fp32", 0},
                               {"reserve", r->latency || paced ? "true" : "false", 0}};
    pf_stage_param post_kv[] = {{"alpha", alpha, 0}, {"size", "frame", 0}};
    pf_stage *s[6] = {NULL};
    /* Several inputs: one reader per stream, all into preprocess (a muxer:
     * round-robin batches across the streams), a demux after the
     * compositor and one writer per stream. */
    int ns = job->num_streams;
    pf_stage **reads = ns > 0 ? calloc((size_t)ns, sizeof *reads) : NULL;
    pf_stage **writes = ns > 0 ? calloc((size_t)ns, sizeof *writes) : NULL;
    if (ns > 0 && (!reads || !writes)) st = PF_ERR_NOMEM;
    for (int i = 0; i < ns && st == PF_OK; i++) st = seg_add_source(p, &job->streams[i], &reads[i]);
    if (st == PF_OK && ns == 0) st = seg_add_source(p, job, &s[0]);
    if (st == PF_OK)
        st = add_builtin(p, "ops.preprocess", "preprocess", r->dev, pre_kv, 4, r->batch, &s[1]);
    if (st == PF_OK)
        st = add_builtin(p, "nn.infer", "infer", r->dev, inf_kv, 3, r->batch, &s[2]);
    /* The mask goes to the frame's size only when it is written out;
     * composite samples the model's mask at every pixel anyway. */
    if (st == PF_OK)
        st = add_builtin(p, "ops.mask_post", "mask", r->dev, post_kv, job->mask_out[0] ? 2 : 1,
                         1, &s[3]);
    if (st == PF_OK) st = seg_add_composite(p, job, r->dev, &s[4]);
    if (st == PF_OK && ns == 0) st = seg_add_sink(p, job, &s[5]);
    if (st == PF_OK && ns > 0)
        st = add_builtin(p, "demux", "demux", r->dev, NULL, 0, 1, &s[5]);
    for (int i = 0; i < ns && st == PF_OK; i++) st = seg_add_sink(p, &job->streams[i], &writes[i]);
    pf_edge_params e = pf_edge_params_default();
    for (int i = 0; i < ns && st == PF_OK; i++) {
        e.capacity = r->latency ? 2 : r->batch + 8;
        st = pf_pipeline_connect(p, reads[i], s[1], &e);
    }
    for (int i = ns > 0 ? 1 : 0; i + 1 < 6 && st == PF_OK; i++) {
        e.capacity = r->latency ? 2 : i < 2 ? r->batch + 8 : 8;
        st = pf_pipeline_connect(p, s[i], s[i + 1], &e);
    }
    for (int i = 0; i < ns && st == PF_OK; i++) {
        e.capacity = r->latency ? 2 : 8;
        st = pf_pipeline_connect(p, s[5], writes[i], &e);
    }
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

/* Progress ------------------------------------------------------------------------------------- */

typedef struct progress {
    int64_t total;            /* frames expected; <= 0 unknown */
    int64_t t0_ns, last_ns;
    long long last_done;
    double rate;              /* smoothed frames/s */
} progress;

static void progress_update(seg_job *job, progress *pg)
{
    int64_t now = pf_time_ns();
    double interval = job->tty ? 0.25 : 1.0;
    if ((double)(now - pg->last_ns) / 1e9 < interval * 0.9) return;
    long long done = frames_done(job);
    double dt = (double)(now - pg->last_ns) / 1e9;
    double inst = dt > 0 ? (double)(done - pg->last_done) / dt : 0;
    pg->rate = pg->last_done == 0 && pg->rate == 0 ? inst : 0.7 * pg->rate + 0.3 * inst;
    pg->last_ns = now;
    pg->last_done = done;
    char eta[32] = "--:--";
    if (pg->total > 0 && pg->rate > 0 && done <= pg->total) {
        long s = (long)((double)(pg->total - done) / pg->rate + 0.5);
        snprintf(eta, sizeof eta, "%ld:%02ld", s / 60, s % 60);
    }
    double elapsed = (double)(now - pg->t0_ns) / 1e9;
    if (job->tty) {
        char bar[32];
        int width = 24, fill = 0;
        if (pg->total > 0) fill = (int)(width * (done < pg->total ? done : pg->total) / pg->total);
        for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '-';
        bar[width] = '\0';
        if (pg->total > 0)
            fprintf(stderr, "\r\033[K[%s] %3d%%  %lld/%lld frames  %.1f fps  ETA %s", bar,
                    (int)(100 * (done < pg->total ? done : pg->total) / pg->total), done,
                    (long long)pg->total, pg->rate, eta);
        else
            fprintf(stderr, "\r\033[K%lld frames  %.1f fps  %.0f s", done, pg->rate, elapsed);
        atomic_store(&job->progress_shown, 1);
    } else if (pg->total > 0) {
        fprintf(stderr, "segment: %lld/%lld frames, %.1f fps, ETA %s\n", done,
                (long long)pg->total, pg->rate, eta);
    } else {
        fprintf(stderr, "segment: %lld frames, %.1f fps, %.0f s\n", done, pg->rate, elapsed);
    }
    fflush(stderr);
}

/* Summary --------------------------------------------------------------------------------------- */

typedef struct summary {
    long long frames, failed, dropped, corrupt, transfers;
    double elapsed_s, fps, p50_ms, p99_ms;
    char busiest[64];          /* "" when unknown (copied: stats die with the pipeline) */
    double busiest_busy;
    const char *status;        /* "done", "interrupted", "failed" */
    struct seg_stream_sum {    /* several inputs: one per stream */
        long long frames, dropped, reconnects;
        double fps, p50_ms, p99_ms, gap_s;
        const char *error;     /* its input failed and it left: why; else NULL */
    } *streams;
    int streams_failed;
} summary;


static void gather(seg_job *job, pf_pipeline *p, double elapsed_s, summary *s)
{
    memset(s, 0, sizeof *s);
    s->frames = frames_done(job);
    if (job->num_streams > 0) s->streams = calloc((size_t)job->num_streams, sizeof *s->streams);
    for (int i = 0; s->streams && i < job->num_streams; i++) {
        seg_job *sj = &job->streams[i];
        s->streams[i].frames = atomic_load(&sj->frames_done);
        if (sj->stream_error[0]) {
            s->streams[i].error = sj->stream_error;
            s->streams_failed++;
        }
        pf_video_reader_stats rs;
        if (sj->reader && pf_video_reader_get_stats(sj->reader, &rs) == PF_OK) {
            s->corrupt += (long long)rs.corrupt_packets;
            s->streams[i].reconnects = (long long)rs.reconnects;
            s->streams[i].gap_s = (double)rs.gap_us / 1e6;
        }
    }
    s->failed = atomic_load(&job->images_failed);
    s->elapsed_s = elapsed_s;
    s->fps = elapsed_s > 0 ? (double)s->frames / elapsed_s : 0;
    pf_pipeline_stats ps;
    if (pf_pipeline_get_stats(p, &ps) == PF_OK) {
        s->dropped = (long long)ps.dropped;
        s->transfers = (long long)ps.transfers;
        s->p50_ms = ps.e2e_p50_us / 1000.0;
        s->p99_ms = ps.e2e_p99_us / 1000.0;
        for (int k = 0; s->streams && k < ps.num_streams; k++) {
            int i = ps.streams[k].source;
            if (i < 0 || i >= job->num_streams) continue;
            s->streams[i].fps = ps.streams[k].fps;
            s->streams[i].dropped = (long long)ps.streams[k].dropped;
            s->streams[i].p50_ms = ps.streams[k].e2e_p50_us / 1000.0;
            s->streams[i].p99_ms = ps.streams[k].e2e_p99_us / 1000.0;
        }
        if (ps.bottleneck >= 0 && ps.bottleneck < ps.num_stages) {
            snprintf(s->busiest, sizeof s->busiest, "%s", ps.stages[ps.bottleneck].name);
            s->busiest_busy = ps.stages[ps.bottleneck].busy_fraction;
        }
    }
    if (job->reader) {
        pf_video_reader_stats rs;
        if (pf_video_reader_get_stats(job->reader, &rs) == PF_OK)
            s->corrupt = (long long)rs.corrupt_packets;
    }
}

static void print_text(FILE *f, const seg_job *job, const seg_run *r, const summary *s)
{
    const pf_device_props *dp = r->dev ? pf_device_props_get(r->dev) : NULL;
    char shown[SEG_PATH_MAX]; /* a URL output without its credentials */
    fprintf(f, "pixflow segment: %s -> %s (%s)\n", job->input_label,
            job->null_output ? "<null>"
            : strcmp(job->output, "-") ? seg_shown(job->output, shown, sizeof shown)
                                       : "<stdout>",
            s->status);
    if (job->kind == SEG_IMAGES)
        fprintf(f, "  frames    %lld of %d images (%lld failed)\n", s->frames, job->num_inputs,
                s->failed);
    else
        fprintf(f, "  frames    %lld\n", s->frames);
    fprintf(f, "  fps       %.1f (%.2f s)\n", s->fps, s->elapsed_s);
    fprintf(f, "  latency   p50 %.2f ms, p99 %.2f ms per frame (%s, batch %d)\n", s->p50_ms,
            s->p99_ms, r->latency ? "latency mode" : "throughput mode", r->batch);
    fprintf(f, "  drops     %lld (corrupt packets skipped: %lld)\n", s->dropped, s->corrupt);
    fprintf(f, "  decode    %s\n", job->kind == SEG_VIDEO ? job->info.decoder : "images (CPU)");
    fprintf(f, "  transfers %lld host<->device copies\n", s->transfers);
    fprintf(f, "  device    %s (%s)\n", r->dev ? pf_device_spec(r->dev) : "cpu",
            dp ? dp->name : "");
    fprintf(f, "  model     %s (%dx%d)\n", job->model, job->model_w, job->model_h);
    if (job->mask_out[0])
        fprintf(f, "  masks     %s\n", seg_shown(job->mask_out, shown, sizeof shown));
    if (s->busiest[0]) fprintf(f, "  busiest   %s (%.0f%% busy)\n", s->busiest, 100 * s->busiest_busy);
    for (int i = 0; s->streams && i < job->num_streams; i++) {
        const seg_job *sj = &job->streams[i];
        fprintf(f, "  stream %d  %s -> %s: %lld frames, %.1f fps, %lld drops, p50 %.2f ms, "
                "p99 %.2f ms", i, sj->input_label,
                sj->null_output ? "<null>" : seg_shown(sj->output, shown, sizeof shown),
                s->streams[i].frames, s->streams[i].fps, s->streams[i].dropped,
                s->streams[i].p50_ms, s->streams[i].p99_ms);
        if (sj->live)
            fprintf(f, ", %lld reconnects, gap %.2f s", s->streams[i].reconnects,
                    s->streams[i].gap_s);
        if (s->streams[i].error) fprintf(f, ", FAILED: %s", s->streams[i].error);
        fprintf(f, "\n");
    }
}

static void print_json(FILE *f, const seg_job *job, const seg_run *r, const summary *s)
{
    cli_json j;
    cli_json_init(&j, f);
    cli_json_object_begin(&j, NULL);
    cli_json_string(&j, "status", s->status);
    cli_json_string(&j, "input", job->input_label);
    cli_json_string(&j, "kind", job->kind == SEG_VIDEO ? "video" : "images");
    char shown[SEG_PATH_MAX]; /* URLs without their credentials */
    cli_json_string(&j, "output", seg_shown(job->output, shown, sizeof shown));
    cli_json_string(&j, "mask_out",
                    job->mask_out[0] ? seg_shown(job->mask_out, shown, sizeof shown) : NULL);
    cli_json_int(&j, "frames", s->frames);
    if (job->kind == SEG_IMAGES) cli_json_int(&j, "images", job->num_inputs);
    cli_json_int(&j, "failed", s->failed);
    cli_json_double(&j, "fps", s->fps);
    cli_json_double(&j, "elapsed_s", s->elapsed_s);
    cli_json_double(&j, "latency_p50_ms", s->p50_ms);
    cli_json_double(&j, "latency_p99_ms", s->p99_ms);
    cli_json_int(&j, "dropped", s->dropped);
    cli_json_int(&j, "corrupt_packets", s->corrupt);
    cli_json_int(&j, "transfers", s->transfers);
    cli_json_string(&j, "decoder", job->kind == SEG_VIDEO ? job->info.decoder : NULL);
    cli_json_string(&j, "mode", r->latency ? "latency" : "throughput");
    cli_json_int(&j, "batch", r->batch);
    cli_json_string(&j, "device", r->dev ? pf_device_spec(r->dev) : "cpu");
    cli_json_string(&j, "model", job->model);
    cli_json_string(&j, "busiest_stage", s->busiest[0] ? s->busiest : NULL);
    if (s->streams) {
        cli_json_array_begin(&j, "streams");
        for (int i = 0; i < job->num_streams; i++) {
            const seg_job *sj = &job->streams[i];
            cli_json_object_begin(&j, NULL);
            cli_json_int(&j, "index", i);
            cli_json_string(&j, "input", sj->input_label);
            cli_json_string(&j, "output",
                            sj->null_output ? "null" : seg_shown(sj->output, shown, sizeof shown));
            cli_json_bool(&j, "output_failed", atomic_load(&sj->output_failed) != 0);
            cli_json_int(&j, "frames", s->streams[i].frames);
            cli_json_double(&j, "fps", s->streams[i].fps);
            cli_json_int(&j, "dropped", s->streams[i].dropped);
            cli_json_double(&j, "latency_p50_ms", s->streams[i].p50_ms);
            cli_json_double(&j, "latency_p99_ms", s->streams[i].p99_ms);
            cli_json_bool(&j, "live", sj->live);
            cli_json_int(&j, "reconnects", s->streams[i].reconnects);
            cli_json_double(&j, "gap_s", s->streams[i].gap_s);
            cli_json_string(&j, "error", s->streams[i].error);
            cli_json_object_end(&j);
        }
        cli_json_array_end(&j);
    }
    cli_json_object_end(&j);
    cli_json_finish(&j);
}

/* Command --------------------------------------------------------------------------------------- */

static int run_job(seg_job *job, seg_run *r, bool json, bool stats)
{
    pf_pipeline *p = NULL;
    char err[1024] = "";
    pf_status st = build(job, r, &p, err, sizeof err);
    if (st != PF_OK) {
        seg_error(job, "%s", err);
        return CLI_EXIT_FAIL;
    }
    cli_signals_install(cancel_pipeline, p);
    int64_t t0 = pf_time_ns();
    st = pf_pipeline_start(p);
    progress pg = {.t0_ns = t0, .last_ns = t0};
    pg.total = job->kind == SEG_IMAGES ? job->num_inputs : job->info.frame_count;
    if (job->kind == SEG_VIDEO && pg.total > 0) {
        /* What the trim options leave of it. */
        double fps = job->info.fps.num > 0 && job->info.fps.den > 0
                         ? (double)job->info.fps.num / job->info.fps.den
                         : 0;
        if (fps > 0) pg.total -= (int64_t)(job->start_s * fps + 0.5);
        if (fps > 0 && job->duration_s > 0 && pg.total > (int64_t)(job->duration_s * fps + 0.5))
            pg.total = (int64_t)(job->duration_s * fps + 0.5);
        if (job->max_frames > 0 && pg.total > job->max_frames) pg.total = job->max_frames;
        if (pg.total < 1) pg.total = 1;
    }
    if (st == PF_OK)
        while ((st = pf_pipeline_wait(p, 250000)) == PF_TIMEOUT)
            if (!job->quiet) progress_update(job, &pg);
    snprintf(err, sizeof err, "%s", pf_last_error());
    double elapsed = (double)(pf_time_ns() - t0) / 1e9;
    if (atomic_exchange(&job->progress_shown, 0)) fprintf(stderr, "\r\033[K");
    cli_signals_restore();
    bool interrupted = st == PF_ERR_CANCELLED && cli_interrupted();
    if (st != PF_OK && !interrupted) seg_error(job, "%s", err);
    summary s;
    gather(job, p, elapsed, &s);
    if (stats) pf_pipeline_print_stats(p, strcmp(job->output, "-") ? stdout : stderr);
    pf_pipeline_destroy(&p); /* closes the writers, writes the trace */
    bool failed = st != PF_OK || atomic_load(&job->write_failed);
    for (int i = 0; i < job->num_streams; i++) failed |= atomic_load(&job->streams[i].write_failed);
    if (!failed && !interrupted && job->kind == SEG_VIDEO && s.frames == 0 && job->start_s > 0) {
        /* Nothing to write: say why instead of leaving no output silently. */
        seg_error(job, "--start %g s: %s has no frames from there on", job->start_s,
                  job->input_label);
        failed = true;
    }
    s.status = interrupted ? "interrupted" : failed ? "failed" : "done";
    FILE *out = strcmp(job->output, "-") ? stdout : stderr;
    if (json)
        print_json(out, job, r, &s);
    else
        print_text(out, job, r, &s);
    fflush(out);
    free(s.streams);
    if (r->trace && !failed && !json && !job->quiet)
        fprintf(stderr, "pixflow segment: trace written to %s\n", r->trace);
    if (interrupted) return SEG_EXIT_INTERRUPTED;
    /* A stream whose input failed left the run while the others went on:
     * their outputs are complete, and the exit status says one is not. */
    return failed || s.failed > 0 || s.streams_failed > 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

int cmd_segment(int argc, char **argv)
{
    char **args = alias_short_output(argc, argv);
    if (!args) return CLI_EXIT_FAIL;
    cli_args a;
    bool parsed = cli_parse("segment", seg_options, argc, args, &a);
    free(args);
    if (!parsed) return CLI_EXIT_USAGE;
    if (cli_flag(seg_options, &a, "help")) {
        seg_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (!cli_overwrite_setup("segment", seg_options, &a)) return CLI_EXIT_USAGE;
    /* "-" is a positional argument (stdin) for the shared parser too. */
    if (a.positional_count == 0) return usage_error("expected an input%s", "");
    seg_job job;
    memset(&job, 0, sizeof job);
    job.quiet = cli_flag(seg_options, &a, "quiet");
    job.alpha = cli_flag(seg_options, &a, "alpha");
    job.tty = isatty(STDERR_FILENO) != 0;
    job.smooth = 0.6f;
    seg_run r = {.latency = cli_flag(seg_options, &a, "latency"),
                 .trace = cli_value(seg_options, &a, "trace")};
    bool json = cli_flag(seg_options, &a, "json");
    const char *v;
    long batch = 0;
    if ((v = cli_value(seg_options, &a, "batch"))) {
        if (!cli_parse_long(v, 1, 256, &batch)) return usage_error("--batch '%s': expected 1..256", v);
        if (r.latency) return usage_error("--batch %s: --latency runs batch 1", v);
    }
    if ((v = cli_value(seg_options, &a, "smooth"))) {
        char *end = NULL;
        double x = strtod(v, &end);
        if (!end || *end || !(x > 0 && x <= 1))
            return usage_error("--smooth '%s': expected a number in (0, 1]", v);
        job.smooth = (float)x;
    }
    int rc = parse_encode_options(&job, &a);
    if (rc != CLI_EXIT_OK) return rc;
    const char *bg = cli_value(seg_options, &a, "background");
    if (job.alpha && !bg) bg = "none";
    rc = parse_background(&job, bg);
    if (rc != CLI_EXIT_OK) {
        seg_job_free(&job);
        return rc;
    }
    const char *spec = cli_value(seg_options, &a, "device");
    pf_status st = pf_device_select(spec, &r.dev);
    if (st != PF_OK) {
        fprintf(stderr, "pixflow segment: --device: %s\n", pf_last_error());
        seg_job_free(&job);
        return st == PF_ERR_INVALID ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
    }
    bool gpu = pf_device_get_type(r.dev) == PF_DEVICE_CUDA;
    r.batch = r.latency ? 1 : batch ? (int)batch : gpu ? 64 : 8;
    job.dev = r.dev;
    job.gate = r.latency;
    const char *out_arg = cli_value(seg_options, &a, "output");
    job.null_output = out_arg && !strcmp(out_arg, "null");
    pthread_mutex_init(&job.gate_mu, NULL);
    pthread_cond_init(&job.gate_cv, NULL);
    rc = CLI_EXIT_FAIL;
    job.realtime = cli_flag(seg_options, &a, "realtime");
    job.retries = 3;
    if ((v = cli_value(seg_options, &a, "retries"))) {
        long n = 0;
        if (!cli_parse_long(v, -1, 1000000, &n)) {
            seg_job_free(&job);
            return usage_error("--retries '%s': expected -1..1000000", v);
        }
        job.retries = (int)n;
    }
    if (seg_multi_wanted(a.positional, a.positional_count)) {
        /* Several inputs, one pipeline (segment_multi.c). */
        if (seg_find_model(&job, cli_value(seg_options, &a, "model")) && read_model(&job)) {
            rc = seg_multi_plan(&job, a.positional, a.positional_count, out_arg,
                                cli_value(seg_options, &a, "mask-out"), r.trace, job.realtime);
            if (rc == CLI_EXIT_OK) {
                snprintf(job.output, sizeof job.output, "%s", job.null_output ? "null" : out_arg);
                if (cli_value(seg_options, &a, "mask-out"))
                    snprintf(job.mask_out, sizeof job.mask_out, "%s",
                             cli_value(seg_options, &a, "mask-out"));
                job.info = job.streams[0].info;
                job.info.frame_count = 0;
                for (int i = 0; i < job.num_streams; i++)
                    if (job.info.frame_count >= 0)
                        job.info.frame_count = job.streams[i].info.frame_count > 0
                                                   ? job.info.frame_count +
                                                         job.streams[i].info.frame_count
                                                   : -1;
                rc = run_job(&job, &r, json, cli_flag(seg_options, &a, "stats"));
            }
        }
        seg_multi_free(&job);
    } else if (seg_find_model(&job, cli_value(seg_options, &a, "model")) && read_model(&job) &&
        seg_collect_inputs(&job, a.positional, a.positional_count) &&
        seg_plan_outputs(&job, out_arg, cli_value(seg_options, &a, "mask-out")) &&
        seg_check_outputs(&job, r.trace))
        rc = run_job(&job, &r, json, cli_flag(seg_options, &a, "stats"));
    seg_job_free(&job);
    pthread_mutex_destroy(&job.gate_mu);
    pthread_cond_destroy(&job.gate_cv);
    return rc;
}
