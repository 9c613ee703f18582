/* bench_live_input: the cost and latency of a live input through
 * pf_video_reader (CPU decode).
 *
 * An `ffmpeg -re` feeder (started and stopped here) serves a test pattern as
 * MPEG-TS over TCP on loopback (default 1280x720 at 30 fps, x264 ultrafast
 * zerolatency). Its frames are stamped with the wall clock (setpts on
 * RTCTIME in a 1/90000 time base, seconds since midnight UTC, -copyts)
 * before the feeder encodes
 * them, so `wall clock when read() returns - pts` is the latency from the
 * feeder's stamp to the frame out: the feeder's encode and mux, loopback
 * TCP, demux, decode and conversion to the output format. The first
 * --skip frames are left out (the packets read for stream analysis at open
 * come out in one burst). CPU cost: this process's user + system time over
 * the frames read (the feeder is another process).
 *
 *   bench_live_input [--size WxH] [--fps N] [--seconds S] [--format i420|nv12|rgb24]
 *                    [--threads N] [--skip N] [--low-latency] [--json] */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pixflow/pixflow.h"

extern char **environ;

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const char *size = "1280x720", *format = "i420";
    int fps = 30, threads = 0, skip = 30, json = 0, low_latency = 0;
    double seconds = 10;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--size") && v) size = argv[++i];
        else if (!strcmp(a, "--fps") && v) fps = atoi(argv[++i]);
        else if (!strcmp(a, "--seconds") && v) seconds = atof(argv[++i]);
        else if (!strcmp(a, "--format") && v) format = argv[++i];
        else if (!strcmp(a, "--threads") && v) threads = atoi(argv[++i]);
        else if (!strcmp(a, "--skip") && v) skip = atoi(argv[++i]);
        else if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--low-latency")) low_latency = 1;
        else {
            fprintf(stderr,
                    "usage: bench_live_input [--size WxH] [--fps N] [--seconds S] [--format "
                    "i420|nv12|rgb24] [--threads N] [--skip N] [--low-latency] [--json]\n");
            return strcmp(a, "--help") ? 2 : 0;
        }
    }
    pf_pixfmt pfmt = !strcmp(format, "nv12")    ? PF_PIXFMT_NV12
                     : !strcmp(format, "rgb24") ? PF_PIXFMT_RGB24
                                                : PF_PIXFMT_I420;
    int port = free_port();
    if (port < 0) return 1;
    /* Seconds since midnight UTC fit MPEG-TS's 33-bit 90 kHz pts (26.5 h). */
    double now = wall_s();
    long long midnight_us = (long long)(now / 86400) * 86400LL * 1000000LL;
    char src[128], vf[160], out[128];
    snprintf(src, sizeof src, "testsrc2=size=%s:rate=%d:duration=%.2f", size, fps, seconds);
    /* settb first: in the source's 1/fps time base the stamps would be
     * rounded to whole frames. */
    snprintf(vf, sizeof vf, "settb=1/90000,setpts=(RTCTIME-%lld)/(TB*1000000)", midnight_us);
    snprintf(out, sizeof out, "tcp://127.0.0.1:%d?listen=1", port);
    char *fargv[] = {"ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-re", "-f",
                     "lavfi", "-i", src, "-vf", vf, "-copyts", "-fps_mode", "passthrough",
                     "-enc_time_base", "1/90000", "-flush_packets", "1", "-muxdelay", "0", "-muxpreload", "0", "-c:v", "libx264",
                     "-preset", "ultrafast", "-tune", "zerolatency", "-g", "30", "-f", "mpegts",
                     out, NULL};
    pid_t feeder;
    if (posix_spawnp(&feeder, "ffmpeg", NULL, NULL, fargv, environ) != 0) {
        fprintf(stderr, "bench_live_input: cannot start ffmpeg\n");
        return 1;
    }
    char url[64];
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
    pf_video_reader_params p = pf_video_reader_params_default();
    p.path = url;
    p.format = pfmt;
    p.threads = threads;
    p.low_latency = low_latency;
    pf_video_reader *r = NULL;
    pf_status st = PF_ERR_IO;
    for (int i = 0; i < 100 && st != PF_OK; i++) {
        st = pf_video_reader_create(&p, &r);
        if (st != PF_OK) usleep(50000);
    }
    if (st != PF_OK) {
        fprintf(stderr, "bench_live_input: %s\n", pf_last_error());
        kill(feeder, SIGKILL);
        waitpid(feeder, NULL, 0);
        return 1;
    }
    size_t cap = (size_t)(seconds * fps) + 64, n = 0;
    double *lat = malloc(cap * sizeof *lat);
    int frames = 0;
    double c0 = 0, t0 = 0;
    pf_frame f = {0};
    while (lat && pf_video_reader_read(r, &f) == PF_OK) {
        double t = wall_s();
        frames++;
        if (frames == skip) { /* cost measured from here, like the latency */
            c0 = cpu_s();
            t0 = t;
        }
        if (frames > skip && f.pts != PF_NOPTS && n < cap) {
            double pts_s = (double)f.pts * f.time_base.num / f.time_base.den;
            lat[n++] = (t - (double)midnight_us / 1e6 - pts_s) * 1e3;
        }
        pf_frame_unref(&f);
    }
    double cpu = cpu_s() - c0, wall = wall_s() - t0;
    pf_video_info info;
    pf_video_reader_info(r, &info);
    pf_video_reader_destroy(&r);
    kill(feeder, SIGKILL);
    waitpid(feeder, NULL, 0);
    if (!n) {
        fprintf(stderr, "bench_live_input: no frames after the first %d\n", skip);
        free(lat);
        return 1;
    }
    qsort(lat, n, sizeof *lat, cmp_d);
    double p50 = lat[n / 2], p99 = lat[(size_t)((double)(n - 1) * 0.99)], mx = lat[n - 1];
    double per = cpu / (double)n * 1e3;
    if (json)
        printf("{\"size\":\"%s\",\"fps\":%d,\"format\":\"%s\",\"decoder\":\"%s\",\"frames\":%zu,"
               "\"cpu_ms_per_frame\":%.3f,\"cpu_cores\":%.3f,\"latency_ms_p50\":%.2f,"
               "\"latency_ms_p99\":%.2f,\"latency_ms_max\":%.2f,\"low_latency\":%d}\n",
               size, fps, format, info.decoder, n, per, cpu / wall, p50, p99, mx, low_latency);
    else
        printf("live %s@%d MPEG-TS/TCP -> %s (%s): %zu frames, CPU %.3f ms/frame (%.1f%% of one "
               "core), latency feeder stamp -> frame out p50 %.2f ms p99 %.2f ms max %.2f ms%s\n",
               size, fps, format, info.decoder, n, per, 100 * cpu / wall, p50, p99, mx,
               low_latency ? " (low_latency)" : "");
    free(lat);
    return 0;
}
