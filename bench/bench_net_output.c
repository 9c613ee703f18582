/* bench_net_output: the latency a live network output adds (pf_video_writer
 * to tcp://, MPEG-TS, libx264 zerolatency).
 *
 * One thread writes generated frames (a moving gradient with a noisy patch,
 * default 1280x720) at their frame rate into a writer whose URL is
 * tcp://127.0.0.1:PORT; another reads them back with pf_video_reader on
 * tcp://127.0.0.1:PORT?listen=1 (low_latency: no parser delay), both in
 * this process on loopback. TCP loses nothing and the encoder has no
 * B-frames, so the k-th frame read is the k-th written (checked by pts).
 * Per frame it reports:
 *   write    time inside pf_video_writer_write (convert, encode, mux, send)
 *   e2e      write() called -> the frame returned by the reader's read():
 *            encode + mux + TCP + demux + decode (what a receiver sees)
 * The first --skip frames are left out (the reader's stream analysis at
 * open holds the first ~1 s and gives it in one burst).
 *
 *   bench_net_output [--size WxH] [--fps N] [--seconds S] [--preset NAME]
 *                    [--codec NAME] [--muxer-options K=V:...] [--skip N] [--json] */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "pixflow/pixflow.h"

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

typedef struct run {
    int w, h, fps, n, port;
    const char *preset, *codec, *mux;
    double *t_begin, *t_end, *t_read;
    int64_t *pts;
    int read_n;
    pf_status reader_st, writer_st;
    char reader_err[512], writer_err[512];
} run;

static void *reader_main(void *arg)
{
    run *r = arg;
    char url[64];
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d?listen=1", r->port);
    pf_video_reader_params p = pf_video_reader_params_default();
    p.path = url;
    p.low_latency = true;
    p.open_timeout_ms = 20000;
    pf_video_reader *rd = NULL;
    r->reader_st = pf_video_reader_create(&p, &rd);
    if (r->reader_st != PF_OK) {
        snprintf(r->reader_err, sizeof r->reader_err, "%s", pf_last_error());
        return NULL;
    }
    pf_frame f = {0};
    while (r->read_n < r->n && pf_video_reader_read(rd, &f) == PF_OK) {
        r->t_read[r->read_n] = mono_s();
        r->pts[r->read_n] = f.pts;
        r->read_n++;
        pf_frame_unref(&f);
    }
    pf_video_reader_destroy(&rd);
    return NULL;
}

static void draw(pf_frame *f, int i)
{
    for (int y = 0; y < f->height; y++) {
        uint8_t *row = f->data[0] + (size_t)y * f->stride[0];
        for (int x = 0; x < f->width; x++) row[x] = (uint8_t)(x + y + 4 * i);
    }
    unsigned s = (unsigned)i * 2654435761u;
    for (int y = f->height / 3; y < f->height / 2; y++) {
        uint8_t *row = f->data[0] + (size_t)y * f->stride[0];
        for (int x = f->width / 3; x < f->width / 2; x++) {
            s = s * 1103515245u + 12345u;
            row[x] = (uint8_t)(s >> 24);
        }
    }
    for (int p = 1; p < 3; p++)
        for (int y = 0; y < f->height / 2; y++)
            memset(f->data[p] + (size_t)y * f->stride[p], 128 + (p == 1 ? i % 32 : -(i % 32)),
                   (size_t)f->width / 2);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(double *v, int n, double q)
{
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    int k = (int)(q * (n - 1) + 0.5);
    return v[k];
}

int main(int argc, char **argv)
{
    run r = {.w = 1280, .h = 720, .fps = 30, .preset = "medium", .codec = NULL};
    double seconds = 10;
    int skip = 45;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--size") && v && sscanf(v, "%dx%d", &r.w, &r.h) == 2) i++;
        else if (!strcmp(a, "--fps") && v) r.fps = atoi(argv[++i]);
        else if (!strcmp(a, "--seconds") && v) seconds = atof(argv[++i]);
        else if (!strcmp(a, "--preset") && v) r.preset = argv[++i];
        else if (!strcmp(a, "--codec") && v) r.codec = argv[++i];
        else if (!strcmp(a, "--muxer-options") && v) r.mux = argv[++i];
        else if (!strcmp(a, "--skip") && v) skip = atoi(argv[++i]);
        else if (!strcmp(a, "--json")) json = true;
        else {
            fprintf(stderr,
                    "usage: bench_net_output [--size WxH] [--fps N] [--seconds S] "
                    "[--preset NAME] [--codec NAME] [--muxer-options K=V:..] [--skip N] "
                    "[--json]\n");
            return 2;
        }
    }
    if (!pf_io_have_ffmpeg()) {
        fprintf(stderr, "bench_net_output: built without FFmpeg\n");
        return 77;
    }
    r.n = (int)(seconds * r.fps);
    if (r.fps <= 0 || r.n <= skip || r.w <= 0 || r.h <= 0) {
        fprintf(stderr, "bench_net_output: need fps > 0 and more frames than --skip\n");
        return 2;
    }
    r.port = free_port();
    r.t_begin = calloc((size_t)r.n, sizeof(double));
    r.t_end = calloc((size_t)r.n, sizeof(double));
    r.t_read = calloc((size_t)r.n, sizeof(double));
    r.pts = calloc((size_t)r.n, sizeof(int64_t));
    pthread_t th;
    if (r.port < 0 || !r.t_begin || !r.t_end || !r.t_read || !r.pts ||
        pthread_create(&th, NULL, reader_main, &r) != 0) {
        fprintf(stderr, "bench_net_output: setup failed\n");
        return 1;
    }
    sleep_s(0.3); /* the reader listens */
    char url[64];
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", r.port);
    pf_video_writer_params p = pf_video_writer_params_default();
    p.path = url;
    p.width = r.w;
    p.height = r.h;
    p.input_format = PF_PIXFMT_I420;
    p.fps = (pf_rational){r.fps, 1};
    p.preset = r.preset;
    if (r.codec) p.codec = r.codec;
    p.muxer_options = r.mux;
    pf_video_writer *w = NULL;
    pf_frame f = {0};
    r.writer_st = pf_frame_alloc(&f, PF_PIXFMT_I420, r.w, r.h, NULL, NULL);
    if (r.writer_st == PF_OK) r.writer_st = pf_video_writer_create(&p, &w);
    double t0 = mono_s();
    for (int i = 0; r.writer_st == PF_OK && i < r.n; i++) {
        draw(&f, i);
        f.pts = i;
        f.time_base = (pf_rational){1, r.fps};
        /* Paced: frame i is due at t0 + i / fps (a camera). */
        double due = t0 + (double)i / r.fps, now = mono_s();
        if (due > now) sleep_s(due - now);
        r.t_begin[i] = mono_s();
        r.writer_st = pf_video_writer_write(w, &f);
        r.t_end[i] = mono_s();
    }
    if (r.writer_st != PF_OK) snprintf(r.writer_err, sizeof r.writer_err, "%s", pf_last_error());
    if (w) pf_video_writer_close(w);
    pf_video_writer_destroy(&w);
    pthread_join(th, NULL);
    pf_frame_unref(&f);
    if (r.writer_st != PF_OK || r.reader_st != PF_OK) {
        fprintf(stderr, "bench_net_output: %s\n",
                r.writer_st != PF_OK ? r.writer_err : r.reader_err);
        return 1;
    }
    int m = 0, order_errors = 0;
    double *wr = calloc((size_t)r.n, sizeof(double)), *e2e = calloc((size_t)r.n, sizeof(double));
    for (int i = skip; i < r.read_n; i++) {
        if (i > 0 && r.pts[i] <= r.pts[i - 1]) order_errors++;
        wr[m] = 1e3 * (r.t_end[i] - r.t_begin[i]);
        e2e[m] = 1e3 * (r.t_read[i] - r.t_begin[i]);
        m++;
    }
    double w50 = pct(wr, m, 0.5), w99 = pct(wr, m, 0.99), e50 = pct(e2e, m, 0.5),
           e99 = pct(e2e, m, 0.99), emax = m ? e2e[m - 1] : 0;
    if (json)
        printf("{\"size\": \"%dx%d\", \"fps\": %d, \"preset\": \"%s\", \"frames_written\": %d, "
               "\"frames_read\": %d, \"measured\": %d, \"order_errors\": %d, "
               "\"write_p50_ms\": %.2f, \"write_p99_ms\": %.2f, \"e2e_p50_ms\": %.2f, "
               "\"e2e_p99_ms\": %.2f, \"e2e_max_ms\": %.2f}\n",
               r.w, r.h, r.fps, r.preset, r.n, r.read_n, m, order_errors, w50, w99, e50, e99,
               emax);
    else
        printf("tcp output %dx%d@%d, preset %s: %d written, %d read, %d measured (%d out of "
               "order)\n  write() p50 %.2f ms, p99 %.2f ms\n  write -> read p50 %.2f ms, p99 "
               "%.2f ms, max %.2f ms\n",
               r.w, r.h, r.fps, r.preset, r.n, r.read_n, m, order_errors, w50, w99, e50, e99,
               emax);
    free(wr);
    free(e2e);
    free(r.t_begin);
    free(r.t_end);
    free(r.t_read);
    free(r.pts);
    return r.read_n == r.n && order_errors == 0 ? 0 : 1;
}
