/* Live inputs of pf_video_reader (pixflow/io.h): URL classification and
 * credential redaction, the protocol whitelist, dead and silent servers
 * (errors naming the redacted URL, bounded in time, never 0 frames and
 * EOF), a missing camera, realtime pacing of a file, and ffmpeg feeders on
 * loopback: MPEG-TS over TCP killed mid-stream and restarted (the reader
 * reconnects, pts keep increasing, the gap is counted) and over UDP.
 *
 * Every feeder is an `ffmpeg` process this test starts with a bounded
 * duration (-t) and kills and reaps itself; servers are threads on
 * ephemeral ports. Without the ffmpeg tool or FFmpeg in the build the
 * feeder cases are skipped (said on stdout). */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pf_test.h"

extern char **environ;

static double now_s(void)
{
    return (double)pf_time_ns() / 1e9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* A free loopback port of `type` (bound then closed: a race with other
 * processes is possible but harmless on a test machine). */
static int free_port(int type)
{
    int fd = socket(AF_INET, type, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int port = -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static bool have_ffmpeg_tool(void)
{
    return pf_io_have_ffmpeg() && system("ffmpeg -hide_banner -version >/dev/null 2>&1") == 0;
}

/* Starts `ffmpeg -re` sending `seconds` of a 30 fps 320x240 test pattern
 * as MPEG-TS to `url`; returns its pid (or -1). */
static pid_t feeder_start(const char *url, double seconds)
{
    char dur[32];
    snprintf(dur, sizeof dur, "%.2f", seconds);
    char *argv[] = {"ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-re", "-f",
                    "lavfi", "-i", "testsrc=size=320x240:rate=30", "-t", dur, "-c:v", "libx264",
                    "-preset", "ultrafast", "-tune", "zerolatency", "-g", "15", "-f", "mpegts",
                    (char *)url, NULL};
    pid_t pid = -1;
    if (posix_spawnp(&pid, "ffmpeg", NULL, NULL, argv, environ) != 0) return -1;
    return pid;
}

static void feeder_stop(pid_t *pid)
{
    if (*pid <= 0) return;
    kill(*pid, SIGKILL);
    waitpid(*pid, NULL, 0);
    *pid = -1;
}

/* -------------------------------------------------------------------------------------- */

static void test_classify(void)
{
    char b[256];
    CHECK(pf_io_is_url("rtsp://cam/x"));
    CHECK(pf_io_is_url("srt://127.0.0.1:9000?mode=caller"));
    CHECK(!pf_io_is_url("video.mp4"));
    CHECK(!pf_io_is_url("/tmp/a://b"));
    CHECK(!pf_io_is_url("c://x")); /* one letter: a drive, not a scheme */
    CHECK(!pf_io_is_url(NULL));
    CHECK(pf_io_url_scheme("RTSP://h/x", b, sizeof b) && strcmp(b, "rtsp") == 0);
    CHECK(pf_io_is_camera("/dev/video0"));
    CHECK(pf_io_is_camera("/dev/video12"));
    CHECK(!pf_io_is_camera("/dev/video"));
    CHECK(!pf_io_is_camera("/dev/video0x"));
    CHECK(pf_io_is_live("udp://127.0.0.1:1234"));
    CHECK(pf_io_is_live("/dev/video3"));
    CHECK(!pf_io_is_live("file:///tmp/x.mp4"));
    CHECK(!pf_io_is_live("x.mp4"));
    CHECK(pf_io_protocol_allowed(NULL, "rtsp"));
    CHECK(pf_io_protocol_allowed(NULL, "srt"));
    CHECK(pf_io_protocol_allowed(NULL, "https"));
    CHECK(!pf_io_protocol_allowed(NULL, "ftp"));
    CHECK(!pf_io_protocol_allowed(NULL, "http2")); /* whole names only */
    CHECK(pf_io_protocol_allowed("file,tcp", "tcp"));
    CHECK(!pf_io_protocol_allowed("file,tcp", "udp"));
}

static void test_redact(void)
{
    char b[256];
    CHECK(strcmp(pf_io_redact("rtsp://admin:hunter2@10.0.0.5:554/live", b, sizeof b),
                 "rtsp://admin:***@10.0.0.5:554/live") == 0);
    CHECK(strcmp(pf_io_redact("rtsp://admin@10.0.0.5/x", b, sizeof b),
                 "rtsp://admin:***@10.0.0.5/x") == 0);
    /* '@' in the path is not a credential; in the password it is. */
    CHECK(strcmp(pf_io_redact("http://h/a@b", b, sizeof b), "http://h/a@b") == 0);
    CHECK(strcmp(pf_io_redact("http://u:p@ss@h/a", b, sizeof b), "http://u:***@h/a") == 0);
    CHECK(strcmp(pf_io_redact("srt://h:9000?mode=caller&passphrase=verysecret1&latency=20", b,
                              sizeof b),
                 "srt://h:9000?mode=caller&passphrase=***&latency=20") == 0);
    CHECK(strcmp(pf_io_redact("in.mp4", b, sizeof b), "in.mp4") == 0);
    /* Truncation keeps the string terminated and never shows the secret. */
    char small[12];
    pf_io_redact("rtsp://u:hunter2@h/x", small, sizeof small);
    CHECK(strlen(small) == sizeof small - 1 && !strstr(small, "hunter2"));
}

static void test_url_name(void)
{
    char b[128];
    CHECK(strcmp(pf_io_url_name("rtsp://admin:hunter2@10.0.0.5:554/live/main", b, sizeof b),
                 "10.0.0.5_554_live_main") == 0);
    CHECK(strcmp(pf_io_url_name("udp://127.0.0.1:5000?overrun_nonfatal=1", b, sizeof b),
                 "127.0.0.1_5000") == 0);
    CHECK(strcmp(pf_io_url_name("srt://h:9000?passphrase=x#lobby", b, sizeof b), "lobby") == 0);
    CHECK(strcmp(pf_io_url_name("tcp://u:p@h:1/../etc/x", b, sizeof b), "h_1_.._etc_x") == 0);
    CHECK(strcmp(pf_io_url_name("in.mp4", b, sizeof b), "") == 0);
    CHECK(!strchr(pf_io_url_name("http://a/b/c#x/../y", b, sizeof b), '/'));
}

static void test_protocol_refused(void)
{
    pf_video_reader_params p = pf_video_reader_params_default();
    p.path = "ftp://bob:hunter2@127.0.0.1/x.ts";
    pf_video_reader *r = NULL;
    pf_status st = pf_video_reader_create(&p, &r);
    CHECK(st == PF_ERR_UNSUPPORTED || (!pf_io_have_ffmpeg() && st < 0));
    CHECK(!r);
    if (pf_io_have_ffmpeg()) CHECK(strstr(pf_last_error(), "protocol 'ftp' is not allowed"));
    CHECK(!strstr(pf_last_error(), "hunter2"));
    /* A narrower list refuses what the default allows. */
    p.path = "udp://127.0.0.1:9";
    p.protocols = "file,tcp";
    st = pf_video_reader_create(&p, &r);
    CHECK(st < 0 && strstr(pf_last_error(), "'udp'"));
}

static void test_missing_camera(void)
{
    pf_video_reader_params p = pf_video_reader_params_default();
    p.path = "/dev/video99";
    pf_video_reader *r = NULL;
    pf_status st = pf_video_reader_create(&p, &r);
    CHECK_EQ_INT(st, PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "/dev/video99: no such camera"));
}

static void test_closed_port(void)
{
    if (!pf_io_have_ffmpeg()) return;
    int port = free_port(SOCK_STREAM);
    REQUIRE(port > 0);
    char url[128];
    snprintf(url, sizeof url, "tcp://viewer:hunter2@127.0.0.1:%d", port);
    pf_video_reader_params p = pf_video_reader_params_default();
    p.path = url;
    pf_video_reader *r = NULL;
    pf_status st = pf_video_reader_create(&p, &r);
    CHECK_EQ_INT(st, PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "tcp://viewer:***@127.0.0.1:"));
    CHECK(!strstr(pf_last_error(), "hunter2"));
}

/* A server on a thread: accepts one connection, then closes it at once
 * (`hold_ms` 0) or holds it silent for hold_ms. */
typedef struct server {
    int fd, port, hold_ms;
    pthread_t th;
} server;

static void *server_main(void *arg)
{
    server *s = arg;
    int c = accept(s->fd, NULL, NULL);
    if (c >= 0) {
        if (s->hold_ms) sleep_ms(s->hold_ms);
        close(c);
    }
    return NULL;
}

static bool server_start(server *s, int hold_ms)
{
    s->hold_ms = hold_ms;
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(s->fd, 4) != 0 ||
        getsockname(s->fd, (struct sockaddr *)&a, &len) != 0)
        return false;
    s->port = ntohs(a.sin_port);
    return pthread_create(&s->th, NULL, server_main, s) == 0;
}

static void server_stop(server *s)
{
    /* shutdown() wakes a blocked accept(); the thread ends within hold_ms. */
    shutdown(s->fd, SHUT_RDWR);
    pthread_join(s->th, NULL);
    close(s->fd);
}

static void test_accept_then_close(void)
{
    if (!pf_io_have_ffmpeg()) return;
    server s;
    REQUIRE(server_start(&s, 0));
    char url[128];
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", s.port);
    pf_video_reader_params p = pf_video_reader_params_default();
    p.path = url;
    p.container = "mpegts"; /* no probing: the open itself succeeds, reading fails */
    pf_video_reader *r = NULL;
    pf_status st = pf_video_reader_create(&p, &r);
    if (st == PF_OK) {
        pf_frame f = {0};
        st = pf_video_reader_read(r, &f);
        pf_frame_unref(&f);
        pf_video_reader_destroy(&r);
    }
    CHECK(st < 0);
    CHECK(strstr(pf_last_error(), url));
    server_stop(&s);
    /* The same without a container: probing an empty stream fails. */
    REQUIRE(server_start(&s, 0));
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", s.port);
    p.path = url;
    p.container = NULL;
    st = pf_video_reader_create(&p, &r);
    CHECK(st < 0);
    CHECK(strstr(pf_last_error(), url));
    pf_video_reader_destroy(&r);
    server_stop(&s);
}

/* A server that accepts and says nothing: the open gives up at its
 * deadline instead of hanging. */
static void test_silent_server_times_out(void)
{
    if (!pf_io_have_ffmpeg()) return;
    server s;
    REQUIRE(server_start(&s, 3000));
    char url[128];
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", s.port);
    pf_video_reader_params p = pf_video_reader_params_default();
    p.path = url;
    p.open_timeout_ms = 400;
    pf_video_reader *r = NULL;
    double t0 = now_s();
    pf_status st = pf_video_reader_create(&p, &r);
    double took = now_s() - t0;
    CHECK_EQ_INT(st, PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "timed out") || strstr(pf_last_error(), "no data within"));
    CHECK(took < 2.0);
    printf("     silent server: refused after %.2f s: %s\n", took, pf_last_error());
    pf_video_reader_destroy(&r);
    server_stop(&s);
}

/* A Y4M file of n 16x16 frames at `fps`. */
static bool write_y4m(const char *path, int n, int fps)
{
    FILE *fp = fopen(path, "wb");
    if (!fp) return false;
    fprintf(fp, "YUV4MPEG2 W16 H16 F%d:1 C420jpeg\n", fps);
    uint8_t px[16 * 16 * 3 / 2];
    for (int i = 0; i < n; i++) {
        memset(px, i * 10, sizeof px);
        fprintf(fp, "FRAME\n");
        fwrite(px, 1, sizeof px, fp);
    }
    return fclose(fp) == 0;
}

static double read_all(const char *path, bool realtime, int *frames)
{
    pf_video_reader_params p = pf_video_reader_params_default();
    p.path = path;
    p.realtime = realtime;
    pf_video_reader *r = NULL;
    *frames = -1;
    if (pf_video_reader_create(&p, &r) != PF_OK) return -1;
    double t0 = now_s();
    pf_frame f = {0};
    int n = 0;
    while (pf_video_reader_read(r, &f) == PF_OK) {
        n++;
        pf_frame_unref(&f);
    }
    double took = now_s() - t0;
    pf_video_reader_destroy(&r);
    *frames = n;
    return took;
}

static void test_realtime_file(void)
{
    char path[] = "/tmp/pf_live_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    REQUIRE(write_y4m(path, 12, 20)); /* 11 intervals of 50 ms = 0.55 s */
    int n = 0;
    double fast = read_all(path, false, &n);
    CHECK_EQ_INT(n, 12);
    double paced = read_all(path, true, &n);
    CHECK_EQ_INT(n, 12);
    printf("     12 frames at 20 fps: %.3f s as fast as possible, %.3f s realtime\n", fast,
           paced);
    CHECK(fast < 0.3);
    CHECK(paced >= 0.54 && paced < 1.5);
    remove(path);
}

/* A TCP feeder listening on a free port for `seconds`: its listen URL into
 * listen_url, the client URL into url; the pid, or -1. */
static pid_t tcp_feeder(double seconds, char *listen_url, char *url, size_t size)
{
    int port = free_port(SOCK_STREAM);
    if (port <= 0) return -1;
    snprintf(listen_url, size, "tcp://127.0.0.1:%d?listen=1", port);
    snprintf(url, size, "tcp://127.0.0.1:%d", port);
    return feeder_start(listen_url, seconds);
}

/* Opens p's URL, retrying for up to 5 s while the feeder starts listening. */
static pf_status create_when_up(const pf_video_reader_params *p, pf_video_reader **r)
{
    pf_status st = PF_ERR_IO;
    for (int i = 0; i < 50 && st != PF_OK; i++) {
        st = pf_video_reader_create(p, r);
        if (st != PF_OK) sleep_ms(100);
    }
    return st;
}

/* open_later: a server that is not up at create. The reader is made
 * anyway (width 0, "not open yet"), read() opens it once the feeder
 * listens, and frames flow; with the retries spent first, read() fails
 * naming the URL without its password. */
static void test_open_later(void)
{
    if (!have_ffmpeg_tool()) {
        printf("     SKIP: no ffmpeg tool or no FFmpeg in the build\n");
        return;
    }
    int port = free_port(SOCK_STREAM);
    REQUIRE(port > 0);
    char listen_url[128], url[128];
    snprintf(listen_url, sizeof listen_url, "tcp://127.0.0.1:%d?listen=1", port);
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
    pf_video_reader_params p = pf_video_reader_params_default();
    p.path = url;
    p.retries = 20;
    p.retry_delay_ms = 100;
    p.retry_max_delay_ms = 200;
    p.read_timeout_ms = 2000;
    p.open_later = true;
    pf_video_reader *r = NULL;
    CHECK_OK(pf_video_reader_create(&p, &r));
    REQUIRE(r);
    pf_video_info info;
    CHECK_OK(pf_video_reader_info(r, &info));
    CHECK_EQ_INT(info.width, 0);
    CHECK(strstr(info.decoder, "not open yet") != NULL);
    sleep_ms(400);
    pid_t feeder = feeder_start(listen_url, 1.0);
    REQUIRE(feeder > 0);
    pf_frame f = {0};
    int n = 0;
    pf_status st;
    double t0 = now_s();
    while ((st = pf_video_reader_read(r, &f)) == PF_OK && now_s() - t0 < 20) {
        if (n == 0) {
            CHECK_EQ_INT(f.width, 320);
            CHECK_EQ_INT(pf_video_reader_info(r, &info), PF_OK);
            CHECK_EQ_INT(info.width, 320);
            CHECK_EQ_INT(info.height, 240);
        }
        n++;
        pf_frame_unref(&f);
        if (n == 15) feeder_stop(&feeder); /* then the retries run out: EOF */
    }
    pf_video_reader_stats rs;
    pf_video_reader_get_stats(r, &rs);
    pf_video_reader_destroy(&r);
    feeder_stop(&feeder);
    printf("     open later: %d frames, %llu failed open/reconnect attempts, end %s\n", n,
           (unsigned long long)rs.reconnect_failures, pf_status_str(st));
    CHECK(n >= 15);
    CHECK(rs.reconnect_failures >= 1); /* it was down at first */
    CHECK_EQ_INT(st, PF_EOF);

    /* Nobody ever listens: the attempts run out, and read() says so. */
    snprintf(url, sizeof url, "tcp://cam:hunter2@127.0.0.1:%d", port);
    p.path = url;
    p.retries = 2;
    p.retry_delay_ms = 20;
    p.retry_max_delay_ms = 40;
    CHECK_OK(pf_video_reader_create(&p, &r));
    REQUIRE(r);
    st = pf_video_reader_read(r, &f);
    CHECK_EQ_INT(st, PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "2 attempts to open it failed") != NULL);
    CHECK(strstr(pf_last_error(), "tcp://cam:***@127.0.0.1") != NULL);
    CHECK(!strstr(pf_last_error(), "hunter2"));
    CHECK_EQ_INT(pf_video_reader_read(r, &f), PF_ERR_IO); /* sticky */
    pf_video_reader_destroy(&r);
    /* Without open_later the same create fails at once (test_closed_port). */
}

static void test_tcp_reconnect(void)
{
    if (!have_ffmpeg_tool()) {
        printf("     SKIP: no ffmpeg tool or no FFmpeg in the build\n");
        return;
    }
    char listen_url[128], url[128];
    pid_t feeder = tcp_feeder(20, listen_url, url, sizeof url);
    REQUIRE(feeder > 0);
    pf_video_reader_params p = pf_video_reader_params_default();
    p.path = url;
    p.retries = 4;
    p.retry_delay_ms = 100;
    p.retry_max_delay_ms = 300;
    p.read_timeout_ms = 2000;
    pf_video_reader *r = NULL;
    pf_status st = create_when_up(&p, &r);
    if (st != PF_OK) {
        CHECK_OK(st);
        feeder_stop(&feeder);
        return;
    }
    pf_frame f = {0};
    int n = 0;
    bool increasing = true;
    int64_t last = INT64_MIN;
    pid_t second = -1;
    double t0 = now_s();
    while ((st = pf_video_reader_read(r, &f)) == PF_OK && now_s() - t0 < 30) {
        if (f.pts != PF_NOPTS) {
            if (f.pts <= last) increasing = false;
            last = f.pts;
        }
        n++;
        pf_frame_unref(&f);
        if (n == 30) {
            /* Killed mid-stream; back after about half a second. */
            feeder_stop(&feeder);
            sleep_ms(500);
            second = feeder_start(listen_url, 1.0);
        }
    }
    pf_video_reader_stats rs;
    pf_video_reader_get_stats(r, &rs);
    pf_video_reader_destroy(&r);
    feeder_stop(&feeder);
    feeder_stop(&second);
    printf("     tcp: %d frames, %llu reconnects, %llu failed attempts, gap %.2f s, about %llu "
           "frames missed, end %s\n",
           n, (unsigned long long)rs.reconnects, (unsigned long long)rs.reconnect_failures,
           rs.gap_us / 1e6, (unsigned long long)rs.frames_missed, pf_status_str(st));
    CHECK_EQ_INT(st, PF_EOF); /* the retries ran out after the second feeder ended */
    CHECK(n >= 30 + 20);      /* the second feeder's second of frames, mostly */
    CHECK(increasing);
    CHECK_EQ_INT(rs.reconnects, 1);
    CHECK(rs.gap_us >= 400000);
    CHECK(rs.frames_missed >= 10);
}

/* low_latency: packets straight to the decoder (no frame parser): every
 * frame still decodes, undamaged; a live stream that ends without retries
 * ends the reader with PF_EOF once it gave frames. */
static void test_tcp_low_latency(void)
{
    if (!have_ffmpeg_tool()) {
        printf("     SKIP: no ffmpeg tool or no FFmpeg in the build\n");
        return;
    }
    char listen_url[128], url[128];
    pid_t feeder = tcp_feeder(1.5, listen_url, url, sizeof url);
    REQUIRE(feeder > 0);
    pf_video_reader_params p = pf_video_reader_params_default();
    p.path = url;
    p.low_latency = true;
    pf_video_reader *r = NULL;
    pf_status st = create_when_up(&p, &r);
    int n = 0;
    if (st == PF_OK) {
        pf_frame f = {0};
        while ((st = pf_video_reader_read(r, &f)) == PF_OK) {
            n++;
            pf_frame_unref(&f);
        }
    }
    pf_video_reader_stats rs = {0};
    if (r) pf_video_reader_get_stats(r, &rs);
    pf_video_reader_destroy(&r);
    feeder_stop(&feeder);
    printf("     tcp low_latency: %d frames, %llu damaged, end %s\n", n,
           (unsigned long long)rs.corrupt_packets, pf_status_str(st));
    CHECK_EQ_INT(st, PF_EOF);
    CHECK(n >= 40);
    CHECK_EQ_INT(rs.corrupt_packets, 0);
}

/* nonblocking_retry: once the stream is gone for good, read() keeps
 * returning PF_AGAIN promptly (a caller can stop) under retries -1. */
static void test_nonblocking_retry(void)
{
    if (!have_ffmpeg_tool()) {
        printf("     SKIP: no ffmpeg tool or no FFmpeg in the build\n");
        return;
    }
    char listen_url[128], url[128];
    pid_t feeder = tcp_feeder(0.7, listen_url, url, sizeof url);
    REQUIRE(feeder > 0);
    pf_video_reader_params p = pf_video_reader_params_default();
    p.path = url;
    p.retries = -1;
    p.retry_delay_ms = 300;
    p.retry_max_delay_ms = 1000;
    p.nonblocking_retry = true;
    pf_video_reader *r = NULL;
    pf_status st = create_when_up(&p, &r);
    int frames = 0, agains = 0;
    double longest = 0, t_end = now_s() + 30;
    while (st == PF_OK && now_s() < t_end) {
        pf_frame f = {0};
        double t0 = now_s();
        st = pf_video_reader_read(r, &f);
        double took = now_s() - t0;
        if (st == PF_OK) {
            frames++;
            pf_frame_unref(&f);
        } else if (st == PF_AGAIN) {
            if (took > longest) longest = took;
            if (++agains < 25) st = PF_OK; /* about 2.5 s of waiting for the sender */
        }
    }
    pf_video_reader_stats rs = {0};
    if (r) pf_video_reader_get_stats(r, &rs);
    pf_video_reader_destroy(&r);
    feeder_stop(&feeder);
    printf("     nonblocking retry: %d frames, %d PF_AGAIN, longest call %.3f s, %llu failed "
           "attempts\n",
           frames, agains, longest, (unsigned long long)rs.reconnect_failures);
    CHECK_EQ_INT(st, PF_AGAIN);
    CHECK(frames >= 10);
    CHECK(longest < 0.3); /* a refused connect is quick; waits come in 100 ms slices */
    CHECK(rs.reconnect_failures >= 2);
}

static void test_udp(void)
{
    if (!have_ffmpeg_tool()) {
        printf("     SKIP: no ffmpeg tool or no FFmpeg in the build\n");
        return;
    }
    int port = free_port(SOCK_DGRAM);
    REQUIRE(port > 0);
    char url[128];
    snprintf(url, sizeof url, "udp://127.0.0.1:%d", port);
    pid_t feeder = feeder_start(url, 3.0);
    REQUIRE(feeder > 0);
    pf_video_reader_params p = pf_video_reader_params_default();
    p.path = url;
    p.open_timeout_ms = 3000;
    p.read_timeout_ms = 700; /* the stream's end is a stall on UDP */
    pf_video_reader *r = NULL;
    pf_status st = pf_video_reader_create(&p, &r);
    int n = 0;
    double t0 = now_s(), took = 0;
    if (st == PF_OK) {
        pf_frame f = {0};
        while ((st = pf_video_reader_read(r, &f)) == PF_OK) {
            n++;
            pf_frame_unref(&f);
        }
        took = now_s() - t0;
    }
    char msg[512];
    snprintf(msg, sizeof msg, "%s", pf_last_error());
    pf_video_reader_destroy(&r);
    feeder_stop(&feeder);
    printf("     udp: %d frames in %.2f s, end %s: %s\n", n, took, pf_status_str(st), msg);
    CHECK_EQ_INT(st, PF_ERR_IO);
    CHECK(strstr(msg, "stalled: no data for 700 ms"));
    CHECK(n >= 45);
    /* Paced by the sender (-re, 30 fps), not read faster. */
    CHECK(took >= n / 30.0 - 0.5);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    PF_RUN(test_classify);
    PF_RUN(test_redact);
    PF_RUN(test_url_name);
    PF_RUN(test_protocol_refused);
    PF_RUN(test_missing_camera);
    PF_RUN(test_closed_port);
    PF_RUN(test_accept_then_close);
    PF_RUN(test_silent_server_times_out);
    PF_RUN(test_realtime_file);
    PF_RUN(test_tcp_reconnect);
    PF_RUN(test_open_later);
    PF_RUN(test_tcp_low_latency);
    PF_RUN(test_nonblocking_retry);
    PF_RUN(test_udp);
    return pf_test_finish();
}
