/* `pixflow faces INPUT... [--json-out FILE.jsonl] [-o OUTPUT]`: faces in
 * images and videos through the library's face tracker (pf_face_tracker,
 * jobs.h): per frame one JSON Lines record
 *   {"stream": S, "frame": N, "pts": SECONDS|null, "faces": [{"id", "score",
 *    "box": [x0,y0,x1,y1], "keypoints": [[x,y] x6], "landmarks": [[x,y,z] x468]}]}
 * (pixels of the input frame; an image is one frame, pts 0), and with -o a
 * drawing: boxes (green), ids (white digits above the box), landmarks (cyan)
 * and the six keypoints (red). Each input is one stream. By default
 * (throughput) one tracker of N streams takes every stream's next frame in
 * one batch (detection and landmarks batched across streams; a stream that
 * ended is fed a small black frame whose results are dropped); --latency
 * gives each stream its own tracker and feeds frames one at a time. Summary
 * on stdout (--json: one object): frames, frames/s, p50/p99 latency per
 * frame (the batch's time: every frame of a batch waits for all), faces per
 * frame; --stats adds GPU time per batch and graph counts; --trace writes
 * the tracker's spans. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "pixflow/pixflow.h"

static const cli_option opts[] = {
    {"json-out", "FILE", "write one JSON object per frame (JSON Lines) to FILE ('-': stdout)"},
    {"output", "PATH", "draw boxes, ids and landmarks into an image or video (also -o; "
                       "one input)"},
    {"max-faces", "N", "faces tracked per stream, 1..256 (default 4)"},
    {"detect-every", "N", "run the detector every N frames, and whenever no face is tracked "
                          "(default 1)"},
    {"detector", "MODEL", "face_detection (short range, default), face_detection_full, or a "
                          "file"},
    {"landmarks", "MODEL", "face_landmark (default) or a file"},
    {"device", "SPEC", "cpu (default) or cuda[:N]: the whole per-frame chain on the GPU"},
    {"fp16", NULL, "CUDA: both models in fp16 (tensor cores)"},
    {"no-graph", NULL, "CUDA: launch the chain op by op instead of one CUDA graph per batch"},
    {"latency", NULL, "one frame at a time per stream (batch 1): lowest per-frame latency"},
    {"stats", NULL, "print the device, batches, GPU time per batch and graph counts"},
    {"preload", NULL, "read every input's frames into memory first (CUDA: device memory), "
                      "then run: the tracker's own throughput, without reading or uploads"},
    {"trace", "FILE", "write a Chrome/Perfetto trace of the run to FILE"},
    {"json", NULL, "print the summary as one JSON object"},
    {"quiet", NULL, "no progress"},
    {"help", NULL, "show this help"},
    {NULL, NULL, NULL},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: pixflow faces INPUT... [--json-out FILE.jsonl] [-o OUTPUT] [options]\n\n"
               "Face detection, 468-point landmarks and stable ids per stream (MediaPipe's\n"
               "models from npm). Inputs: images or videos, each its own stream.\n\n");
    cli_print_options(f, opts);
}

/* Drawing ------------------------------------------------------------------------------------ */

static void put(pf_frame *f, int x, int y, const unsigned char rgb[3])
{
    if (x < 0 || y < 0 || x >= f->width || y >= f->height) return;
    memcpy(f->data[0] + (size_t)y * f->stride[0] + (size_t)x * 3, rgb, 3);
}

static void rect(pf_frame *f, int x0, int y0, int x1, int y1, const unsigned char rgb[3])
{
    for (int t = 0; t < 2; t++) {
        for (int x = x0; x <= x1; x++) {
            put(f, x, y0 + t, rgb);
            put(f, x, y1 - t, rgb);
        }
        for (int y = y0; y <= y1; y++) {
            put(f, x0 + t, y, rgb);
            put(f, x1 - t, y, rgb);
        }
    }
}

/* 3x5 digits, one row of 3 bits per byte, top first; drawn at scale 2. */
static const unsigned char k_digits[10][5] = {
    {7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7}, {7, 1, 7, 1, 7}, {5, 5, 7, 1, 1},
    {7, 4, 7, 1, 7}, {7, 4, 7, 5, 7}, {7, 1, 1, 1, 1}, {7, 5, 7, 5, 7}, {7, 5, 7, 1, 7}};

static void number(pf_frame *f, int x, int y, int v, const unsigned char rgb[3])
{
    char s[16];
    snprintf(s, sizeof s, "%d", v);
    for (int i = 0; s[i]; i++)
        for (int r = 0; r < 5; r++)
            for (int c = 0; c < 3; c++)
                if (k_digits[s[i] - '0'][r] & (4 >> c))
                    for (int dy = 0; dy < 2; dy++)
                        for (int dx = 0; dx < 2; dx++)
                            put(f, x + i * 8 + c * 2 + dx, y + r * 2 + dy, rgb);
}

static void draw(pf_frame *f, const pf_face *faces, int n)
{
    static const unsigned char green[3] = {0, 255, 0}, cyan[3] = {0, 255, 255},
                               red[3] = {255, 0, 0}, white[3] = {255, 255, 255};
    for (int i = 0; i < n; i++) {
        const pf_face *fc = &faces[i];
        for (int k = 0; k < PF_FACE_LANDMARKS; k++)
            put(f, (int)fc->landmarks[k][0], (int)fc->landmarks[k][1], cyan);
        for (int k = 0; k < PF_FACE_KEYPOINTS; k++)
            for (int d = -1; d <= 1; d++)
                for (int e = -1; e <= 1; e++)
                    put(f, (int)fc->keypoints[k][0] + d, (int)fc->keypoints[k][1] + e, red);
        rect(f, (int)fc->box[0], (int)fc->box[1], (int)fc->box[2], (int)fc->box[3], green);
        number(f, (int)fc->box[0], (int)fc->box[1] - 13, fc->id, white);
    }
}

/* JSON Lines --------------------------------------------------------------------------------- */

static void write_record(FILE *o, int stream, int64_t frame, const pf_frame *f, const pf_face *faces,
                         int n, bool image)
{
    fprintf(o, "{\"stream\": %d, \"frame\": %lld, \"pts\": ", stream, (long long)frame);
    if (image) fputs("0", o);
    else if (f->pts == PF_NOPTS || f->time_base.den == 0) fputs("null", o);
    else fprintf(o, "%.6f", (double)f->pts * f->time_base.num / f->time_base.den);
    fputs(", \"faces\": [", o);
    for (int i = 0; i < n; i++) {
        const pf_face *fc = &faces[i];
        fprintf(o, "%s{\"id\": %d, \"score\": %.4f, \"box\": [%.2f, %.2f, %.2f, %.2f], "
                   "\"keypoints\": [",
                i ? ", " : "", fc->id, (double)fc->score, (double)fc->box[0], (double)fc->box[1],
                (double)fc->box[2], (double)fc->box[3]);
        for (int k = 0; k < PF_FACE_KEYPOINTS; k++)
            fprintf(o, "%s[%.2f, %.2f]", k ? ", " : "", (double)fc->keypoints[k][0],
                    (double)fc->keypoints[k][1]);
        fputs("], \"landmarks\": [", o);
        for (int k = 0; k < PF_FACE_LANDMARKS; k++)
            fprintf(o, "%s[%.2f, %.2f, %.2f]", k ? ", " : "", (double)fc->landmarks[k][0],
                    (double)fc->landmarks[k][1], (double)fc->landmarks[k][2]);
        fputs("]}", o);
    }
    fputs("]}\n", o);
}

/* Inputs ------------------------------------------------------------------------------------ */

typedef struct input {
    const char *path;
    bool image, ended;
    pf_frame image_frame;          /* an image: its one frame */
    pf_video_reader *r;
    int64_t next;                  /* frames read so far */
    pf_frame *pre;                 /* --preload: every frame, read before the run */
    int64_t n_pre;
} input;

/* Videos are read as I420 (the tracker converts: on CUDA on the device,
 * after uploading half the bytes of RGB), or RGB24 when frames are drawn. */
static pf_status input_open(input *in, const char *path, bool rgb)
{
    memset(in, 0, sizeof *in);
    in->path = path;
    pf_image_info info;
    if (pf_image_probe(path, &info) == PF_OK) {
        in->image = true;
        return pf_image_read(path, PF_PIXFMT_RGB24, &in->image_frame);
    }
    pf_video_reader_params rp = pf_video_reader_params_default();
    rp.path = path;
    rp.format = rgb ? PF_PIXFMT_RGB24 : PF_PIXFMT_I420;
    return pf_video_reader_create(&rp, &in->r);
}

static void input_close(input *in)
{
    for (int64_t i = 0; i < in->n_pre; i++) pf_frame_unref(&in->pre[i]);
    free(in->pre);
    pf_frame_unref(&in->image_frame);
    pf_video_reader_destroy(&in->r);
}

/* The input's next frame into *f (a new reference), or PF_EOF. */
static pf_status input_read(input *in, pf_frame *f)
{
    if (in->ended) return PF_EOF;
    pf_status st;
    if (in->pre) {
        st = in->next < in->n_pre ? PF_OK : PF_EOF;
        if (st == PF_OK) pf_frame_ref(f, &in->pre[in->next]);
    } else if (in->image) {
        st = in->next == 0 ? PF_OK : PF_EOF;
        if (st == PF_OK) pf_frame_ref(f, &in->image_frame);
    } else {
        st = pf_video_reader_read(in->r, f);
    }
    if (st == PF_EOF) in->ended = true;
    else if (st == PF_OK) in->next++;
    return st;
}

/* The run ------------------------------------------------------------------------------------ */

typedef struct run_state {
    pf_face_tracker_params tp;
    FILE *jsonl;
    const char *output;
    bool quiet, latency, tty;
    int n;                         /* inputs */
    input *in;
    pf_face_tracker **trackers;    /* latency: one per input; else one of n streams */
    pf_face *faces;                /* n x max_faces */
    int *counts;
    pf_frame *frames;              /* throughput: two rounds of one frame per input */
    pf_frame filler;               /* fed for a stream that has ended (results unused) */
    pf_video_writer *w;
    bool preload;
    pf_stream *dstream;            /* --preload on CUDA: the frames' device memory */
    pf_allocator *dalloc;
    pf_histogram *lat, *lat_warm; /* per frame, from round WARM_ROUNDS on / before */
    int64_t frames_done, faces_done;
    int64_t t_start, t_end;         /* the frame loop (trackers made, models planned) */
    int64_t t_steady, steady_frames; /* from round WARM_ROUNDS on: plans and graphs made */
} run_state;

static int fail(const char *what)
{
    fprintf(stderr, "pixflow faces: %s%s%s\n", what ? what : "", what ? ": " : "",
            pf_last_error());
    return CLI_EXIT_FAIL;
}

static pf_status open_writer(run_state *rs)
{
    const input *in = &rs->in[0];
    pf_video_info info;
    pf_video_reader_info(in->r, &info);
    pf_video_writer_params wp = pf_video_writer_params_default();
    wp.path = rs->output;
    wp.width = info.width;
    wp.height = info.height;
    if (info.fps.num > 0 && info.fps.den > 0) wp.fps = info.fps;
    wp.time_base = info.time_base;
    wp.input_format = PF_PIXFMT_RGB24;
    return pf_video_writer_create(&wp, &rs->w);
}

/* Outputs of stream s's frame: JSON Lines, drawing. */
static pf_status emit(run_state *rs, int s, int64_t index, pf_frame *f, const pf_face *faces,
                      int n)
{
    const input *in = &rs->in[s];
    if (rs->jsonl) write_record(rs->jsonl, s, index, f, faces, n, in->image);
    rs->frames_done++;
    rs->faces_done += n;
    if (!rs->output) return PF_OK;
    draw(f, faces, n);
    if (in->image) return pf_image_write(rs->output, f, NULL);
    return pf_video_writer_write(rs->w, f);
}

static void progress(run_state *rs, bool done)
{
    if (rs->quiet || !rs->tty) return;
    fprintf(stderr, "\rfaces: %lld frames, %.2f faces/frame%s", (long long)rs->frames_done,
            rs->frames_done ? (double)rs->faces_done / (double)rs->frames_done : 0.0,
            done ? "\n" : "");
}

/* Rounds before the steady state: the first runs of each chain variant plan
 * the executors and capture the graphs. */
#define WARM_ROUNDS 3

static void round_done(run_state *rs, int64_t round)
{
    if (round + 1 == WARM_ROUNDS) {
        rs->t_steady = pf_time_ns();
        rs->steady_frames = rs->frames_done;
    }
    if (round % 16 == 0) progress(rs, false);
}

/* One round of throughput mode: every stream's next frame. */
typedef struct round_buf {
    run_state *rs;
    pf_frame *frames;              /* n */
    int64_t *index;                /* n: the frame's index in its stream, -1: none */
    int live;                      /* streams that had a frame */
    int failed;                    /* 1 + the stream whose read failed; 0: none */
    char msg[512];                 /* its message (read on another thread) */
} round_buf;

static void read_round(round_buf *b)
{
    run_state *rs = b->rs;
    b->live = 0;
    b->failed = 0;
    for (int s = 0; s < rs->n; s++) {
        pf_frame_unref(&b->frames[s]);
        b->index[s] = -1;
        const pf_status st = input_read(&rs->in[s], &b->frames[s]);
        if (st == PF_OK) {
            b->index[s] = rs->in[s].next - 1;
            b->live++;
        } else if (st != PF_EOF) {
            b->failed = s + 1;
            snprintf(b->msg, sizeof b->msg, "%s: %s", rs->in[s].path, pf_last_error());
            return;
        }
    }
}

static void *read_round_thread(void *user)
{
    read_round(user);
    return NULL;
}

/* Throughput: every stream's next frame in one batch, until all ended. The
 * next round is read (decoded) on a second thread while the tracker runs
 * this one, so reading and the GPU chain overlap. */
static int run_batched(run_state *rs)
{
    const int cap = rs->tp.max_faces, n = rs->n;
    const pf_frame **ptrs = calloc((size_t)n, sizeof *ptrs);
    int64_t *index = calloc((size_t)n * 2, sizeof *index);
    if (!ptrs || !index) {
        free(ptrs);
        free(index);
        return CLI_EXIT_FAIL;
    }
    round_buf b[2];
    memset(b, 0, sizeof b);
    for (int k = 0; k < 2; k++) {
        b[k].rs = rs;
        b[k].frames = rs->frames + (size_t)k * n;
        b[k].index = index + (size_t)k * n;
    }
    int rc = CLI_EXIT_OK;
    read_round(&b[0]);
    for (int64_t round = 0; rc == CLI_EXIT_OK; round++) {
        round_buf *cur = &b[round & 1], *nxt = &b[(round + 1) & 1];
        if (cur->failed) {
            fprintf(stderr, "pixflow faces: %s\n", cur->msg);
            rc = CLI_EXIT_FAIL;
            break;
        }
        if (cur->live == 0) break;
        pthread_t th;
        const bool ahead = pthread_create(&th, NULL, read_round_thread, nxt) == 0;
        for (int s = 0; s < n; s++) ptrs[s] = cur->index[s] >= 0 ? &cur->frames[s] : &rs->filler;
        const int64_t t0 = pf_time_ns();
        if (pf_face_tracker_process_batch(rs->trackers[0], ptrs, n, rs->faces, cap,
                                          rs->counts) != PF_OK)
            rc = fail(NULL);
        const int64_t dt = pf_time_ns() - t0;
        for (int s = 0; s < n && rc == CLI_EXIT_OK; s++) {
            if (cur->index[s] < 0) continue;
            /* Each frame of the batch waited for all of it. */
            pf_histogram_record(round >= WARM_ROUNDS ? rs->lat : rs->lat_warm, dt);
            if (emit(rs, s, cur->index[s], &cur->frames[s], rs->faces + (size_t)s * cap,
                     rs->counts[s]) != PF_OK)
                rc = fail(rs->in[s].path);
        }
        if (ahead) pthread_join(th, NULL);
        else read_round(nxt);
        round_done(rs, round);
    }
    free(ptrs);
    free(index);
    return rc;
}

/* Latency: batch 1, each stream its own tracker, frames taken in turn. */
static int run_latency(run_state *rs)
{
    const int cap = rs->tp.max_faces;
    int rc = CLI_EXIT_OK;
    for (int64_t round = 0; rc == CLI_EXIT_OK; round++) {
        int live = 0;
        for (int s = 0; s < rs->n && rc == CLI_EXIT_OK; s++) {
            pf_frame f = {0};
            pf_status st = input_read(&rs->in[s], &f);
            if (st == PF_EOF) continue;
            if (st != PF_OK) {
                rc = fail(rs->in[s].path);
                break;
            }
            live++;
            int n = 0;
            const int64_t t0 = pf_time_ns();
            if (pf_face_tracker_process(rs->trackers[s], &f, rs->faces, cap, &n) != PF_OK)
                rc = fail(rs->in[s].path);
            else
                pf_histogram_record(round >= WARM_ROUNDS ? rs->lat : rs->lat_warm,
                                    pf_time_ns() - t0);
            if (rc == CLI_EXIT_OK && emit(rs, s, rs->in[s].next - 1, &f, rs->faces, n) != PF_OK)
                rc = fail(rs->in[s].path);
            pf_frame_unref(&f);
        }
        if (live == 0) break;
        round_done(rs, round);
    }
    return rc;
}

/* --preload: every input's frames read now, and on CUDA copied to device
 * memory, so the run measures the tracker alone. */
static int preload(run_state *rs)
{
    pf_device *dev = rs->tp.device;
    const bool cuda = dev && pf_device_get_type(dev) == PF_DEVICE_CUDA;
    if (cuda) {
        pf_stream_params sp = pf_stream_params_default();
        sp.device = dev;
        pf_allocator_params ap = pf_allocator_params_default();
        ap.device = dev;
        ap.name = "faces-preload";
        if (pf_stream_create(&sp, &rs->dstream) != PF_OK ||
            pf_allocator_create(&ap, &rs->dalloc) != PF_OK)
            return fail("--preload");
    }
    for (int s = 0; s < rs->n; s++) {
        input *in = &rs->in[s];
        pf_frame *pre = NULL; /* attached to the input once all is read */
        int64_t cap = 0, n = 0;
        for (;;) {
            pf_frame f = {0};
            const pf_status st = input_read(in, &f);
            if (st == PF_EOF) break;
            if (st != PF_OK) return fail(in->path);
            pf_frame *grown = n == cap ? realloc(pre, (size_t)(cap = cap ? 2 * cap : 64) *
                                                           sizeof *grown)
                                       : pre;
            if (!grown) {
                pf_frame_unref(&f);
                in->pre = pre; /* freed with the input */
                in->n_pre = n;
                return fail("--preload: out of memory");
            }
            pre = grown;
            pf_frame *slot = &pre[n];
            memset(slot, 0, sizeof *slot);
            if (!cuda) {
                *slot = f; /* the reference moves into the array */
            } else {
                pf_status cs = pf_frame_alloc(slot, f.format, f.width, f.height, rs->dalloc,
                                              rs->dstream);
                if (cs == PF_OK) cs = pf_frame_copy_async(slot, &f, rs->dstream);
                if (cs == PF_OK) cs = pf_stream_synchronize(rs->dstream);
                if (cs == PF_OK) pf_frame_copy_props(slot, &f);
                pf_frame_unref(&f);
                if (cs != PF_OK) {
                    pf_frame_unref(slot);
                    in->pre = pre;
                    in->n_pre = n;
                    return fail("--preload");
                }
            }
            n++;
        }
        in->pre = pre;
        in->n_pre = n;
        in->next = 0;
        in->ended = n == 0; /* no frame at all */
    }
    return CLI_EXIT_OK;
}

static int run_all(run_state *rs, const char *const *paths)
{
    int rc = CLI_EXIT_OK;
    const int n = rs->n, nt = rs->latency ? n : 1;
    rs->in = calloc((size_t)n, sizeof *rs->in);
    rs->trackers = calloc((size_t)nt, sizeof *rs->trackers);
    rs->faces = calloc((size_t)n * (size_t)rs->tp.max_faces, sizeof *rs->faces);
    rs->counts = calloc((size_t)n, sizeof *rs->counts);
    rs->frames = calloc((size_t)n * 2, sizeof *rs->frames); /* two rounds */
    if (!rs->in || !rs->trackers || !rs->faces || !rs->counts || !rs->frames ||
        pf_histogram_create(&rs->lat) != PF_OK || pf_histogram_create(&rs->lat_warm) != PF_OK)
        return CLI_EXIT_FAIL;
    for (int s = 0; s < n && rc == CLI_EXIT_OK; s++)
        if (input_open(&rs->in[s], paths[s], rs->output != NULL) != PF_OK) rc = fail(paths[s]);
    pf_face_tracker_params tp = rs->tp;
    tp.streams = rs->latency ? 1 : n;
    for (int i = 0; i < nt && rc == CLI_EXIT_OK; i++)
        if (pf_face_tracker_create(&tp, &rs->trackers[i]) != PF_OK) rc = fail(NULL);
    if (rc == CLI_EXIT_OK && rs->output && !rs->in[0].image && open_writer(rs) != PF_OK)
        rc = fail(rs->output);
    if (rc == CLI_EXIT_OK && rs->preload) rc = preload(rs);
    if (rc == CLI_EXIT_OK &&
        pf_frame_alloc(&rs->filler, PF_PIXFMT_RGB24, 64, 64, NULL, NULL) != PF_OK)
        rc = fail(NULL);
    if (rc == CLI_EXIT_OK) {
        for (int y = 0; y < 64; y++) memset(rs->filler.data[0] + (size_t)y * rs->filler.stride[0], 0, 64 * 3);
        rs->t_start = pf_time_ns();
        rc = rs->latency ? run_latency(rs) : run_batched(rs);
        rs->t_end = pf_time_ns();
        progress(rs, true);
    }
    if (rs->w && pf_video_writer_close(rs->w) != PF_OK && rc == CLI_EXIT_OK) rc = fail(rs->output);
    return rc;
}

static void run_free(run_state *rs)
{
    const int nt = rs->latency ? rs->n : 1;
    for (int i = 0; rs->trackers && i < nt; i++) pf_face_tracker_destroy(&rs->trackers[i]);
    for (int s = 0; rs->in && s < rs->n; s++) input_close(&rs->in[s]);
    for (int s = 0; rs->frames && s < 2 * rs->n; s++) pf_frame_unref(&rs->frames[s]);
    pf_frame_unref(&rs->filler);
    pf_video_writer_destroy(&rs->w);
    pf_histogram_destroy(&rs->lat);
    pf_histogram_destroy(&rs->lat_warm);
    if (rs->dstream) pf_stream_synchronize(rs->dstream);
    pf_allocator_destroy(&rs->dalloc);
    pf_stream_destroy(&rs->dstream);
    free(rs->trackers);
    free(rs->in);
    free(rs->faces);
    free(rs->counts);
    free(rs->frames);
}

/* The trackers' counters added up (gpu_ms: the mean over them). */
static pf_face_tracker_stats total_stats(const run_state *rs)
{
    pf_face_tracker_stats sum;
    memset(&sum, 0, sizeof sum);
    const int nt = rs->latency ? rs->n : 1;
    double ms = 0.0;
    for (int i = 0; rs->trackers && i < nt; i++) {
        pf_face_tracker_stats st;
        if (!rs->trackers[i] || pf_face_tracker_get_stats(rs->trackers[i], &st) != PF_OK) continue;
        sum.batches += st.batches;
        sum.graph_captures += st.graph_captures;
        sum.graph_replays += st.graph_replays;
        const int64_t w = st.gpu_batches ? st.gpu_batches : st.batches;
        ms += st.gpu_ms * (double)w;
        sum.gpu_batches += w;
    }
    sum.gpu_ms = sum.gpu_batches ? ms / (double)sum.gpu_batches : 0.0;
    return sum;
}

int cmd_faces(int argc, char **argv)
{
    /* -o is --output (cli_parse knows only long options and -h/-y/-n). */
    char **args = malloc((size_t)(argc > 0 ? argc : 1) * sizeof *args);
    if (!args) return CLI_EXIT_FAIL;
    static char long_output[] = "--output";
    for (int i = 0; i < argc; i++) args[i] = !strcmp(argv[i], "-o") ? long_output : argv[i];
    cli_args a;
    const bool parsed = cli_parse("faces", opts, argc, args, &a);
    free(args);
    if (!parsed) return CLI_EXIT_USAGE;
    if (cli_flag(opts, &a, "help")) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (a.positional_count < 1) {
        fprintf(stderr, "pixflow faces: no input (see 'pixflow faces --help')\n");
        return CLI_EXIT_USAGE;
    }
    if (a.positional_count > 64) {
        fprintf(stderr, "pixflow faces: %d inputs; at most 64 streams\n", a.positional_count);
        return CLI_EXIT_USAGE;
    }
    run_state rs;
    memset(&rs, 0, sizeof rs);
    pf_face_tracker_params *tp = &rs.tp;
    *tp = pf_face_tracker_params_default();
    long v;
    const char *s;
    if ((s = cli_value(opts, &a, "max-faces"))) {
        if (!cli_parse_long(s, 1, 256, &v)) {
            fprintf(stderr, "pixflow faces: --max-faces '%s' is not in 1..256\n", s);
            return CLI_EXIT_USAGE;
        }
        tp->max_faces = (int)v;
    }
    if ((s = cli_value(opts, &a, "detect-every"))) {
        if (!cli_parse_long(s, 1, 1000000, &v)) {
            fprintf(stderr, "pixflow faces: --detect-every '%s' is not in 1..1000000\n", s);
            return CLI_EXIT_USAGE;
        }
        tp->detect_every = (int)v;
    }
    tp->detector = cli_value(opts, &a, "detector");
    tp->landmarks = cli_value(opts, &a, "landmarks");
    tp->fp16 = cli_flag(opts, &a, "fp16");
    tp->cuda_graph = !cli_flag(opts, &a, "no-graph");
    if ((s = cli_value(opts, &a, "device"))) {
        if (pf_device_select(s, &tp->device) != PF_OK) {
            fprintf(stderr, "pixflow faces: --device %s: %s\n", s, pf_last_error());
            return CLI_EXIT_FAIL;
        }
    }
    rs.n = a.positional_count;
    rs.quiet = cli_flag(opts, &a, "quiet");
    rs.latency = cli_flag(opts, &a, "latency");
    rs.preload = cli_flag(opts, &a, "preload");
    rs.tty = isatty(2);
    rs.output = cli_value(opts, &a, "output");
    if (rs.output && rs.preload) {
        fprintf(stderr, "pixflow faces: --preload measures the tracker; it does not draw (-o)\n");
        return CLI_EXIT_USAGE;
    }
    if (rs.output && a.positional_count > 1) {
        fprintf(stderr, "pixflow faces: -o takes one input (got %d)\n", a.positional_count);
        return CLI_EXIT_USAGE;
    }
    const char *trace = cli_value(opts, &a, "trace");
    pf_tracer *tracer = NULL;
    if (trace) {
        pf_tracer_params trp = pf_tracer_params_default();
        trp.path = trace;
        trp.max_events = 1 << 16;
        if (tp->device && pf_device_get_type(tp->device) == PF_DEVICE_CUDA) trp.gpu = tp->device;
        if (pf_tracer_create(&trp, &tracer) != PF_OK) {
            fprintf(stderr, "pixflow faces: --trace %s: %s\n", trace, pf_last_error());
            return CLI_EXIT_FAIL;
        }
        tp->tracer = tracer;
    }
    const char *jpath = cli_value(opts, &a, "json-out");
    if (jpath) {
        rs.jsonl = strcmp(jpath, "-") ? fopen(jpath, "w") : stdout;
        if (!rs.jsonl) {
            fprintf(stderr, "pixflow faces: --json-out %s: cannot open for writing\n", jpath);
            pf_tracer_destroy(&tracer);
            return CLI_EXIT_FAIL;
        }
    }
    const int64_t t0 = pf_time_ns();
    int rc = run_all(&rs, (const char *const *)a.positional);
    const double secs = (double)(pf_time_ns() - t0) * 1e-9;
    if (rs.jsonl && rs.jsonl != stdout && fclose(rs.jsonl) != 0) {
        fprintf(stderr, "pixflow faces: --json-out %s: write failed\n", jpath);
        rc = CLI_EXIT_FAIL;
    }
    const pf_face_tracker_stats st = total_stats(&rs);
    /* Latency of the steady state; a short run (an image) has only the first. */
    const pf_histogram *lh = rs.lat && pf_histogram_count(rs.lat) ? rs.lat : rs.lat_warm;
    const double p50 = lh ? pf_histogram_quantile(lh, 0.5) / 1e6 : 0.0;
    const double p99 = lh ? pf_histogram_quantile(lh, 0.99) / 1e6 : 0.0;
    const double loop_s = (double)(rs.t_end - rs.t_start) * 1e-9;
    const double fps = loop_s > 0 ? (double)rs.frames_done / loop_s : 0.0;
    const double steady_s = rs.t_steady ? (double)(rs.t_end - rs.t_steady) * 1e-9 : 0.0;
    const int64_t steady_n = rs.t_steady ? rs.frames_done - rs.steady_frames : 0;
    const double fps_steady = steady_s > 0 && steady_n > 0 ? (double)steady_n / steady_s : fps;
    const double fpf = rs.frames_done ? (double)rs.faces_done / (double)rs.frames_done : 0.0;
    const char *dev = tp->device ? pf_device_spec(tp->device) : "cpu";
    const bool cuda = tp->device && pf_device_get_type(tp->device) == PF_DEVICE_CUDA;
    run_free(&rs);
    pf_tracer_destroy(&tracer); /* writes the trace */
    FILE *so = rs.jsonl == stdout ? stderr : stdout;
    if (rc != CLI_EXIT_OK && rs.frames_done == 0) return rc; /* nothing ran: the message says why */
    if (cli_flag(opts, &a, "json")) {
        cli_json j;
        cli_json_init(&j, so);
        cli_json_object_begin(&j, NULL);
        cli_json_int(&j, "streams", a.positional_count);
        cli_json_int(&j, "frames", (long long)rs.frames_done);
        cli_json_int(&j, "faces", (long long)rs.faces_done);
        cli_json_double(&j, "faces_per_frame", fpf);
        cli_json_double(&j, "seconds", secs);
        cli_json_double(&j, "fps", fps);
        cli_json_double(&j, "fps_steady", fps_steady);
        cli_json_double(&j, "latency_p50_ms", p50);
        cli_json_double(&j, "latency_p99_ms", p99);
        cli_json_string(&j, "mode", rs.latency ? "latency" : "throughput");
        cli_json_string(&j, "device", dev);
        cli_json_string(&j, "precision", tp->fp16 ? "fp16" : "fp32");
        cli_json_bool(&j, "graph", cuda && tp->cuda_graph);
        cli_json_bool(&j, "preload", rs.preload);
        cli_json_int(&j, "batches", (long long)st.batches);
        cli_json_double(&j, "gpu_ms_per_batch", st.gpu_ms);
        cli_json_int(&j, "gpu_batches", (long long)st.gpu_batches);
        cli_json_int(&j, "graph_captures", (long long)st.graph_captures);
        cli_json_int(&j, "graph_replays", (long long)st.graph_replays);
        cli_json_bool(&j, "ok", rc == CLI_EXIT_OK);
        cli_json_object_end(&j);
        cli_json_finish(&j);
    } else {
        fprintf(so, "faces: %d streams, %lld frames, %lld faces (%.2f per frame), %.2f s "
                    "(%.1f frames/s; %.1f after the first %d batches)\n"
                    "  latency   p50 %.2f ms, p99 %.2f ms per frame (%s)\n",
                a.positional_count, (long long)rs.frames_done, (long long)rs.faces_done, fpf,
                secs, fps, fps_steady, WARM_ROUNDS, p50, p99, rs.latency ? "latency mode, batch 1" : "throughput mode");
        if (cli_flag(opts, &a, "stats"))
            fprintf(so, "  device    %s, %s, %s\n  batches   %lld, GPU %.3f ms per batch; "
                        "graphs: %lld captured, %lld replays\n",
                    dev, tp->fp16 ? "fp16" : "fp32",
                    cuda ? (tp->cuda_graph ? "one CUDA graph per batch shape" : "no graph")
                         : "CPU",
                    (long long)st.batches, st.gpu_ms, (long long)st.graph_captures,
                    (long long)st.graph_replays);
        if (trace && rc == CLI_EXIT_OK && !rs.quiet)
            fprintf(stderr, "pixflow faces: trace written to %s\n", trace);
    }
    return rc;
}
