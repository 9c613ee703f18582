/* `pixflow faces INPUT... [--json-out FILE.jsonl] [-o OUTPUT]`: faces in
 * images and videos through the library's face tracker (pf_face_tracker,
 * jobs.h): per frame one JSON Lines record
 *   {"stream": S, "frame": N, "pts": SECONDS|null, "faces": [{"id", "score",
 *    "box": [x0,y0,x1,y1], "keypoints": [[x,y] x6], "landmarks": [[x,y,z] x468]}]}
 * (pixels of the input frame; an image is one frame, pts 0), and with -o a
 * drawing: boxes (green), ids (white digits above the box), landmarks (cyan)
 * and the six keypoints (red). Each input is one stream with its own
 * tracker; inputs run one after the other (the multi-stream muxer and the
 * CUDA path come later). Summary on stdout (--json: one object). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    {"device", "SPEC", "cpu (default; the CUDA path is not written yet)"},
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

/* One input -------------------------------------------------------------------------------- */

typedef struct run_state {
    const pf_face_tracker_params *tp;
    FILE *jsonl;
    const char *output;
    bool quiet;
    int64_t frames, faces;
} run_state;

static bool is_image(const char *path)
{
    pf_image_info info;
    return pf_image_probe(path, &info) == PF_OK;
}

static int run_input(run_state *rs, int stream, const char *path)
{
    pf_face_tracker *t = NULL;
    if (pf_face_tracker_create(rs->tp, &t) != PF_OK) {
        fprintf(stderr, "pixflow faces: %s\n", pf_last_error());
        return CLI_EXIT_FAIL;
    }
    pf_face *faces = calloc(256, sizeof *faces);
    int rc = CLI_EXIT_OK;
    if (!faces) {
        rc = CLI_EXIT_FAIL;
        goto done;
    }
    const int cap = rs->tp->max_faces;
    if (is_image(path)) {
        pf_frame f = {0};
        int n = 0;
        if (pf_image_read(path, PF_PIXFMT_RGB24, &f) != PF_OK ||
            pf_face_tracker_process(t, &f, faces, cap, &n) != PF_OK ||
            (rs->jsonl && (write_record(rs->jsonl, stream, 0, &f, faces, n, true), false))) {
            fprintf(stderr, "pixflow faces: %s\n", pf_last_error());
            rc = CLI_EXIT_FAIL;
        } else if (rs->output) {
            draw(&f, faces, n);
            if (pf_image_write(rs->output, &f, NULL) != PF_OK) {
                fprintf(stderr, "pixflow faces: %s\n", pf_last_error());
                rc = CLI_EXIT_FAIL;
            }
        }
        if (rc == CLI_EXIT_OK) {
            rs->frames++;
            rs->faces += n;
            if (!rs->quiet) fprintf(stderr, "%s: %d faces\n", path, n);
        }
        pf_frame_unref(&f);
        goto done;
    }
    pf_video_reader_params rp = pf_video_reader_params_default();
    rp.path = path;
    rp.format = PF_PIXFMT_RGB24;
    pf_video_reader *r = NULL;
    pf_video_writer *w = NULL;
    if (pf_video_reader_create(&rp, &r) != PF_OK) {
        fprintf(stderr, "pixflow faces: %s\n", pf_last_error());
        rc = CLI_EXIT_FAIL;
        goto done;
    }
    pf_video_info info;
    pf_video_reader_info(r, &info);
    if (rs->output) {
        pf_video_writer_params wp = pf_video_writer_params_default();
        wp.path = rs->output;
        wp.width = info.width;
        wp.height = info.height;
        if (info.fps.num > 0 && info.fps.den > 0) wp.fps = info.fps;
        wp.time_base = info.time_base;
        wp.input_format = PF_PIXFMT_RGB24;
        if (pf_video_writer_create(&wp, &w) != PF_OK) {
            fprintf(stderr, "pixflow faces: %s\n", pf_last_error());
            rc = CLI_EXIT_FAIL;
        }
    }
    for (int64_t k = 0; rc == CLI_EXIT_OK; k++) {
        pf_frame f = {0};
        pf_status st = pf_video_reader_read(r, &f);
        if (st == PF_EOF) break;
        int n = 0;
        if (st == PF_OK) st = pf_face_tracker_process(t, &f, faces, cap, &n);
        if (st == PF_OK && rs->jsonl) write_record(rs->jsonl, stream, k, &f, faces, n, false);
        if (st == PF_OK && w) {
            draw(&f, faces, n);
            st = pf_video_writer_write(w, &f);
        }
        pf_frame_unref(&f);
        if (st != PF_OK) {
            fprintf(stderr, "pixflow faces: %s: frame %lld: %s\n", path, (long long)k,
                    pf_last_error());
            rc = CLI_EXIT_FAIL;
            break;
        }
        rs->frames++;
        rs->faces += n;
    }
    if (w && pf_video_writer_close(w) != PF_OK && rc == CLI_EXIT_OK) {
        fprintf(stderr, "pixflow faces: %s\n", pf_last_error());
        rc = CLI_EXIT_FAIL;
    }
    pf_video_writer_destroy(&w);
    pf_video_reader_destroy(&r);
    if (!rs->quiet && rc == CLI_EXIT_OK) fprintf(stderr, "%s: done\n", path);
done:
    free(faces);
    pf_face_tracker_destroy(&t);
    return rc;
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
    pf_face_tracker_params tp = pf_face_tracker_params_default();
    long v;
    const char *s;
    if ((s = cli_value(opts, &a, "max-faces"))) {
        if (!cli_parse_long(s, 1, 256, &v)) {
            fprintf(stderr, "pixflow faces: --max-faces '%s' is not in 1..256\n", s);
            return CLI_EXIT_USAGE;
        }
        tp.max_faces = (int)v;
    }
    if ((s = cli_value(opts, &a, "detect-every"))) {
        if (!cli_parse_long(s, 1, 1000000, &v)) {
            fprintf(stderr, "pixflow faces: --detect-every '%s' is not in 1..1000000\n", s);
            return CLI_EXIT_USAGE;
        }
        tp.detect_every = (int)v;
    }
    tp.detector = cli_value(opts, &a, "detector");
    tp.landmarks = cli_value(opts, &a, "landmarks");
    if ((s = cli_value(opts, &a, "device"))) {
        if (pf_device_select(s, &tp.device) != PF_OK) {
            fprintf(stderr, "pixflow faces: --device %s: %s\n", s, pf_last_error());
            return CLI_EXIT_FAIL;
        }
    }
    run_state rs = {0};
    rs.tp = &tp;
    rs.quiet = cli_flag(opts, &a, "quiet");
    rs.output = cli_value(opts, &a, "output");
    if (rs.output && a.positional_count > 1) {
        fprintf(stderr, "pixflow faces: -o takes one input (got %d)\n", a.positional_count);
        return CLI_EXIT_USAGE;
    }
    const char *jpath = cli_value(opts, &a, "json-out");
    if (jpath) {
        rs.jsonl = strcmp(jpath, "-") ? fopen(jpath, "w") : stdout;
        if (!rs.jsonl) {
            fprintf(stderr, "pixflow faces: --json-out %s: cannot open for writing\n", jpath);
            return CLI_EXIT_FAIL;
        }
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = CLI_EXIT_OK;
    for (int i = 0; i < a.positional_count; i++)
        if (run_input(&rs, i, a.positional[i]) != CLI_EXIT_OK) rc = CLI_EXIT_FAIL;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rs.jsonl && rs.jsonl != stdout && fclose(rs.jsonl) != 0) {
        fprintf(stderr, "pixflow faces: --json-out %s: write failed\n", jpath);
        rc = CLI_EXIT_FAIL;
    }
    const double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    FILE *so = rs.jsonl == stdout ? stderr : stdout;
    if (cli_flag(opts, &a, "json"))
        fprintf(so, "{\"streams\": %d, \"frames\": %lld, \"faces\": %lld, \"seconds\": %.3f, "
                    "\"fps\": %.2f, \"ok\": %s}\n",
                a.positional_count, (long long)rs.frames, (long long)rs.faces, secs,
                secs > 0 ? (double)rs.frames / secs : 0.0, rc == CLI_EXIT_OK ? "true" : "false");
    else
        fprintf(so, "faces: %d streams, %lld frames, %lld faces, %.2f s (%.1f frames/s)\n",
                a.positional_count, (long long)rs.frames, (long long)rs.faces, secs,
                secs > 0 ? (double)rs.frames / secs : 0.0);
    return rc;
}
