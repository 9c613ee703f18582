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
 * itself goes to stdout (-o -). SIGINT/SIGTERM cancel the job; the video
 * so far is finished and renamed into place and the summary printed, and
 * later signals (GNU timeout sends two) do not cut that short.
 *
 * The job itself is the library's (pf_segment_start, src/jobs/): this file
 * parses the options into its params, shows progress and prints the
 * summary from its result. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "job_ui.h"

#define SEG_EXIT_INTERRUPTED 130

static const cli_option seg_options[] = {
    {"output", "PATH", "output file or directory (also -o); '-' = Y4M on stdout; 'null' = "
               "composite but write nothing (benchmarks); or a URL: udp://, tcp://, srt://, "
               "rtsp://, rtmp://"},
    {"background", "BG", "blur (default), #RRGGBB, an image file, or none"},
    {"mask-out", "PATH", "also write 8-bit masks: a directory, a file or a URL"},
    {"alpha", NULL, "RGBA output (PNG, or .mov/.mkv/.webm video) with the mask as alpha"},
    {"model", "MODEL", "selfie (default), landscape, or a model file path"},
    {"device", "SPEC", "auto, cpu, cuda, cuda:N (default: $PIXFLOW_DEVICE or auto); several "
                       "videos: a list cuda:0,cuda:1 or cuda:all spreads the streams over GPUs"},
    {"assign", "LIST", "several GPUs: input i on the device at position LIST[i] of --device "
                       "(e.g. 0,0,1,1; default round-robin)"},
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
            "the installed models (share/pixflow/models beside the library), the source\n"
            "tree of this program, or the current directory (node_modules/).\n\n"
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

/* Ctrl-C cancels the job (cli_signals_install). */
static void cancel_job(void *j) { pf_job_cancel_async(j); }

/* Options ------------------------------------------------------------------------------------ */

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "pixflow segment: ");
    fprintf(stderr, msg, arg);
    fprintf(stderr, " (see 'pixflow segment --help')\n");
    return CLI_EXIT_USAGE;
}

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* --background: blur | none | #RRGGBB | an image file (read by the job). */
static int check_background(const char *v)
{
    if (!v || v[0] != '#') return CLI_EXIT_OK;
    bool ok = strlen(v) == 7;
    for (int c = 1; ok && c < 7; c++) ok = is_hex(v[c]);
    return ok ? CLI_EXIT_OK : usage_error("--background '%s': expected #RRGGBB", v);
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
 * --no-audio, --output-options, --output-timeout into the params; a usage
 * error names the option and value. */
static int parse_encode_options(pf_segment_params *sp, const cli_args *a)
{
    const char *v;
    sp->no_audio = cli_flag(seg_options, a, "no-audio");
    if ((v = cli_value(seg_options, a, "codec"))) {
        if (!pf_video_have_encoder(v))
            return usage_error("--codec '%s': FFmpeg has no such video encoder", v);
        sp->codec = v;
    }
    if ((v = cli_value(seg_options, a, "preset"))) {
        if (!v[0]) return usage_error("--preset '%s': expected a preset name", v);
        sp->preset = v;
    }
    long n = 0;
    if ((v = cli_value(seg_options, a, "crf"))) {
        if (!cli_parse_long(v, 0, 63, &n)) return usage_error("--crf '%s': expected 0..63", v);
        sp->crf = (int)n;
    }
    if ((v = cli_value(seg_options, a, "bitrate"))) {
        if (!parse_rate(v, &sp->bitrate))
            return usage_error("--bitrate '%s': expected bits/s >= 1000, e.g. 2500k or 2.5M", v);
        if (sp->crf >= 0) return usage_error("--bitrate %s: give --crf or --bitrate, not both", v);
    }
    if ((v = cli_value(seg_options, a, "output-options"))) {
        if (!strchr(v, '='))
            return usage_error("--output-options '%s': expected key=value[:key=value...]", v);
        sp->output_options = v;
    }
    if ((v = cli_value(seg_options, a, "output-timeout"))) {
        if (!cli_parse_long(v, 1, 3600000L, &n))
            return usage_error("--output-timeout '%s': expected milliseconds 1..3600000", v);
        sp->output_timeout_ms = n;
    }
    if ((v = cli_value(seg_options, a, "frames"))) {
        if (!cli_parse_long(v, 1, 2000000000L, &n))
            return usage_error("--frames '%s': expected a frame count >= 1", v);
        sp->max_frames = n;
    }
    if ((v = cli_value(seg_options, a, "start")) && pf_parse_time(v, &sp->start_s) != PF_OK)
        return usage_error("--start '%s': expected seconds (12.5) or [HH:]MM:SS[.frac]", v);
    if ((v = cli_value(seg_options, a, "duration"))) {
        if (pf_parse_time(v, &sp->duration_s) != PF_OK || !(sp->duration_s > 0))
            return usage_error("--duration '%s': expected a time > 0: seconds (12.5) or "
                               "[HH:]MM:SS[.frac]",
                               v);
    }
    return CLI_EXIT_OK;
}

/* Progress ------------------------------------------------------------------------------------- */

typedef struct progress {
    int64_t last_ns;
    long long last_done;
    double rate;              /* smoothed frames/s */
} progress;

static void progress_update(cli_job_ui *ui, pf_job *job, progress *pg)
{
    int64_t now = pf_time_ns();
    double interval = ui->tty ? 0.25 : 1.0;
    if ((double)(now - pg->last_ns) / 1e9 < interval * 0.9) return;
    pf_job_progress jp;
    if (pf_job_get_progress(job, &jp) != PF_OK) return;
    long long done = jp.done;
    int64_t total = jp.total;
    double dt = (double)(now - pg->last_ns) / 1e9;
    double inst = dt > 0 ? (double)(done - pg->last_done) / dt : 0;
    pg->rate = pg->last_done == 0 && pg->rate == 0 ? inst : 0.7 * pg->rate + 0.3 * inst;
    pg->last_ns = now;
    pg->last_done = done;
    char eta[32] = "--:--";
    if (total > 0 && pg->rate > 0 && done <= total) {
        long s = (long)((double)(total - done) / pg->rate + 0.5);
        snprintf(eta, sizeof eta, "%ld:%02ld", s / 60, s % 60);
    }
    double elapsed = jp.elapsed_s;
    flockfile(stderr);
    if (ui->tty) {
        char bar[32];
        int width = 24, fill = 0;
        if (total > 0) fill = (int)(width * (done < total ? done : total) / total);
        for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '-';
        bar[width] = '\0';
        if (total > 0)
            fprintf(stderr, "\r\033[K[%s] %3d%%  %lld/%lld frames  %.1f fps  ETA %s", bar,
                    (int)(100 * (done < total ? done : total) / total), done, (long long)total,
                    pg->rate, eta);
        else
            fprintf(stderr, "\r\033[K%lld frames  %.1f fps  %.0f s", done, pg->rate, elapsed);
        atomic_store(&ui->shown, 1);
    } else if (total > 0) {
        fprintf(stderr, "segment: %lld/%lld frames, %.1f fps, ETA %s\n", done, (long long)total,
                pg->rate, eta);
    } else {
        fprintf(stderr, "segment: %lld frames, %.1f fps, %.0f s\n", done, pg->rate, elapsed);
    }
    fflush(stderr);
    funlockfile(stderr);
}

/* Summary --------------------------------------------------------------------------------------- */

static void print_text(FILE *f, const pf_job_result *r)
{
    bool null_out = !strcmp(r->output, "null");
    fprintf(f, "pixflow segment: %s -> %s (%s)\n", r->input,
            null_out ? "<null>" : strcmp(r->output, "-") ? r->output : "<stdout>",
            pf_job_status_name(r->status));
    if (!r->video)
        fprintf(f, "  frames    %lld of %lld images (%lld failed)\n", (long long)r->frames,
                (long long)r->images, (long long)r->failed);
    else
        fprintf(f, "  frames    %lld\n", (long long)r->frames);
    fprintf(f, "  fps       %.1f (%.2f s)\n", r->fps, r->elapsed_s);
    fprintf(f, "  latency   p50 %.2f ms, p99 %.2f ms per frame (%s, batch %d)\n",
            r->latency_p50_ms, r->latency_p99_ms,
            r->latency_mode ? "latency mode" : "throughput mode", r->batch);
    fprintf(f, "  drops     %lld (corrupt packets skipped: %lld)\n", (long long)r->dropped,
            (long long)r->corrupt_packets);
    fprintf(f, "  decode    %s\n", r->video ? r->decoder : "images (CPU)");
    fprintf(f, "  transfers %lld host<->device copies\n", (long long)r->transfers);
    fprintf(f, "  device    %s (%s)\n", r->device, r->device_name);
    fprintf(f, "  model     %s (%dx%d)\n", r->model, r->model_width, r->model_height);
    if (r->mask_out) fprintf(f, "  masks     %s\n", r->mask_out);
    if (r->busiest_stage)
        fprintf(f, "  busiest   %s (%.0f%% busy)\n", r->busiest_stage, 100 * r->busiest_busy);
    for (int i = 0; i < r->num_streams; i++) {
        const pf_job_stream *s = &r->streams[i];
        fprintf(f, "  stream %d  %s -> %s: %lld frames, %.1f fps, %lld drops, p50 %.2f ms, "
                "p99 %.2f ms", i, s->input, strcmp(s->output, "null") ? s->output : "<null>",
                (long long)s->frames, s->fps, (long long)s->dropped, s->latency_p50_ms,
                s->latency_p99_ms);
        if (s->live)
            fprintf(f, ", %lld reconnects, gap %.2f s", (long long)s->reconnects, s->gap_s);
        if (strchr(r->device, ',')) fprintf(f, ", on %s", s->device);
        if (s->error) fprintf(f, ", FAILED: %s", s->error);
        fprintf(f, "\n");
    }
}

static void print_json(FILE *f, const pf_job_result *r)
{
    cli_json j;
    cli_json_init(&j, f);
    cli_json_object_begin(&j, NULL);
    cli_json_string(&j, "status", pf_job_status_name(r->status));
    cli_json_string(&j, "input", r->input);
    cli_json_string(&j, "kind", r->video ? "video" : "images");
    cli_json_string(&j, "output", r->output);
    cli_json_string(&j, "mask_out", r->mask_out);
    cli_json_int(&j, "frames", r->frames);
    if (!r->video) cli_json_int(&j, "images", r->images);
    cli_json_int(&j, "failed", r->failed);
    cli_json_double(&j, "fps", r->fps);
    cli_json_double(&j, "elapsed_s", r->elapsed_s);
    cli_json_double(&j, "latency_p50_ms", r->latency_p50_ms);
    cli_json_double(&j, "latency_p99_ms", r->latency_p99_ms);
    if (r->first_frame_ms >= 0) cli_json_double(&j, "first_frame_ms", r->first_frame_ms);
    cli_json_int(&j, "dropped", r->dropped);
    cli_json_int(&j, "corrupt_packets", r->corrupt_packets);
    cli_json_int(&j, "transfers", r->transfers);
    cli_json_string(&j, "decoder", r->video ? r->decoder : NULL);
    cli_json_string(&j, "mode", r->latency_mode ? "latency" : "throughput");
    cli_json_int(&j, "batch", r->batch);
    cli_json_string(&j, "device", r->device);
    cli_json_string(&j, "model", r->model);
    cli_json_string(&j, "busiest_stage", r->busiest_stage);
    if (r->num_streams > 0) {
        cli_json_array_begin(&j, "streams");
        for (int i = 0; i < r->num_streams; i++) {
            const pf_job_stream *s = &r->streams[i];
            cli_json_object_begin(&j, NULL);
            cli_json_int(&j, "index", i);
            cli_json_string(&j, "input", s->input);
            cli_json_string(&j, "output", s->output);
            cli_json_bool(&j, "output_failed", s->output_failed);
            cli_json_int(&j, "frames", s->frames);
            cli_json_double(&j, "fps", s->fps);
            cli_json_int(&j, "dropped", s->dropped);
            cli_json_double(&j, "latency_p50_ms", s->latency_p50_ms);
            cli_json_double(&j, "latency_p99_ms", s->latency_p99_ms);
            cli_json_bool(&j, "live", s->live);
            cli_json_int(&j, "reconnects", s->reconnects);
            cli_json_double(&j, "gap_s", s->gap_s);
            cli_json_string(&j, "error", s->error);
            cli_json_string(&j, "device", s->device);
            cli_json_object_end(&j);
        }
        cli_json_array_end(&j);
    }
    cli_json_object_end(&j);
    cli_json_finish(&j);
}

/* Command --------------------------------------------------------------------------------------- */

static int run_job(const pf_segment_params *sp, bool quiet, bool json, bool stats)
{
    cli_job_ui *ui = sp->user;
    pf_job *job = NULL;
    pf_status st = pf_segment_start(sp, &job);
    if (st != PF_OK) return cli_job_start_failed(ui, st);
    cli_signals_install(cancel_job, job);
    progress pg = {.last_ns = pf_time_ns()};
    while (pf_job_wait(job, 250000) == PF_TIMEOUT)
        if (!quiet) progress_update(ui, job, &pg);
    cli_job_progress_clear(ui);
    cli_signals_restore();
    pf_job_result r;
    pf_job_get_result(job, &r);
    /* The video itself may go to stdout: then the summary goes to stderr. */
    FILE *out = strcmp(r.output, "-") ? stdout : stderr;
    if (stats) pf_job_print_stats(job, out);
    if (json)
        print_json(out, &r);
    else
        print_text(out, &r);
    fflush(out);
    bool failed = r.status == PF_JOB_FAILED;
    int rc = r.status == PF_JOB_INTERRUPTED                   ? SEG_EXIT_INTERRUPTED
             : failed || r.failed > 0 || r.streams_failed > 0 ? CLI_EXIT_FAIL
                                                              : CLI_EXIT_OK;
    pf_job_destroy(&job); /* writes the trace */
    if (sp->trace && r.status == PF_JOB_DONE && !json && !quiet)
        fprintf(stderr, "pixflow segment: trace written to %s\n", sp->trace);
    return rc;
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
    bool quiet = cli_flag(seg_options, &a, "quiet");
    cli_job_ui ui;
    cli_job_ui_init(&ui, "segment", quiet);
    pf_segment_params sp = pf_segment_params_default();
    sp.on_message = cli_job_message;
    sp.user = &ui;
    sp.inputs = a.positional;
    sp.num_inputs = a.positional_count;
    sp.alpha = cli_flag(seg_options, &a, "alpha");
    sp.latency = cli_flag(seg_options, &a, "latency");
    sp.trace = cli_value(seg_options, &a, "trace");
    sp.no_overwrite = cli_flag(seg_options, &a, "no-overwrite");
    bool json = cli_flag(seg_options, &a, "json");
    const char *v;
    long batch = 0;
    if ((v = cli_value(seg_options, &a, "batch"))) {
        if (!cli_parse_long(v, 1, 256, &batch)) return usage_error("--batch '%s': expected 1..256", v);
        if (sp.latency) return usage_error("--batch %s: --latency runs batch 1", v);
        sp.batch = (int)batch;
    }
    if ((v = cli_value(seg_options, &a, "smooth"))) {
        char *end = NULL;
        double x = strtod(v, &end);
        if (!end || *end || !(x > 0 && x <= 1))
            return usage_error("--smooth '%s': expected a number in (0, 1]", v);
        sp.smooth = (float)x;
    }
    int rc = parse_encode_options(&sp, &a);
    if (rc != CLI_EXIT_OK) return rc;
    sp.background = cli_value(seg_options, &a, "background");
    rc = check_background(sp.background);
    if (rc != CLI_EXIT_OK) return rc;
    const char *spec = cli_value(seg_options, &a, "device");
    pf_device *devs[16];
    int ndevs = 0;
    pf_status st = PF_OK;
    if (spec && (strchr(spec, ',') || !strcmp(spec, "cuda:all"))) {
        /* Several GPUs: a list, or every CUDA device. */
        if (!strcmp(spec, "cuda:all")) {
            for (int i = 0; i < pf_device_count(PF_DEVICE_CUDA) && ndevs < 16 && st == PF_OK; i++)
                st = pf_device_get(PF_DEVICE_CUDA, i, &devs[ndevs++]);
            if (st == PF_OK && ndevs == 0) {
                fprintf(stderr, "pixflow segment: --device cuda:all: no CUDA device\n");
                return CLI_EXIT_FAIL;
            }
        } else {
            char list[256];
            snprintf(list, sizeof list, "%s", spec);
            for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && st == PF_OK;
                 tok = strtok_r(NULL, ",", &save)) {
                if (ndevs == 16) return usage_error("--device '%s': at most 16 devices", spec);
                st = pf_device_select(tok, &devs[ndevs++]);
            }
        }
        sp.devices = devs;
        sp.num_devices = ndevs;
        if (st == PF_OK) sp.device = devs[0];
    } else {
        st = pf_device_select(spec, &sp.device);
    }
    if (st != PF_OK) {
        fprintf(stderr, "pixflow segment: --device: %s\n", pf_last_error());
        return st == PF_ERR_INVALID ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
    }
    int assign[CLI_MAX_POSITIONAL];
    if ((v = cli_value(seg_options, &a, "assign"))) {
        int k = 0;
        const char *q = v;
        while (*q && k < a.positional_count) {
            char *end = NULL;
            long x = strtol(q, &end, 10);
            if (end == q || x < 0 || x >= (ndevs ? ndevs : 1) || (*end && *end != ','))
                return usage_error("--assign '%s': expected one device position (0.. the "
                                   "number of --device entries - 1) per input, comma-separated",
                                   v);
            assign[k++] = (int)x;
            q = *end ? end + 1 : end;
        }
        if (k != a.positional_count || *q)
            return usage_error("--assign '%s': expected one device position per input", v);
        sp.device_of = assign;
    }
    sp.output = cli_value(seg_options, &a, "output");
    sp.mask_out = cli_value(seg_options, &a, "mask-out");
    sp.model = cli_value(seg_options, &a, "model");
    sp.realtime = cli_flag(seg_options, &a, "realtime");
    if ((v = cli_value(seg_options, &a, "retries"))) {
        long n = 0;
        if (!cli_parse_long(v, -1, 1000000, &n))
            return usage_error("--retries '%s': expected -1..1000000", v);
        sp.retries = (int)n;
    }
    return run_job(&sp, quiet, json, cli_flag(seg_options, &a, "stats"));
}
