/* pf_video_writer to network URLs (io.h "Network outputs") and discard:
 * a TCP receiver in this process gets an MPEG-TS stream with every frame;
 * schemes off the whitelist, file:// and file-only containers are refused
 * by name; credentials never reach a message; a receiver that stops reading
 * fails a write within write_timeout_ms, and one that never answers the
 * RTSP handshake fails the create within open_timeout_ms; discard sends no
 * flushed frames and no trailer (a FIFO shows every byte written). Skips
 * (77) without FFmpeg. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pf_test.h"

static char g_dir[512];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A receiver on 127.0.0.1 (ephemeral port): accepts one connection and
 * either reads everything until EOF (keeping the bytes) or never reads
 * until told to stop (a stalled peer; a small receive buffer so the sender
 * blocks soon). */
typedef struct receiver {
    int lfd, port;
    bool never_read;
    atomic_bool stop, done;
    uint8_t *data;
    size_t size, cap;
    pthread_t th;
} receiver;

static void *receiver_main(void *arg)
{
    receiver *r = arg;
    int fd = -1;
    while (!atomic_load(&r->stop) && fd < 0) {
        struct pollfd p = {r->lfd, POLLIN, 0};
        if (poll(&p, 1, 50) > 0) fd = accept(r->lfd, NULL, NULL);
    }
    while (fd >= 0 && !atomic_load(&r->stop)) {
        if (r->never_read) {
            struct timespec ts = {0, 20000000};
            nanosleep(&ts, NULL);
            continue;
        }
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0) continue;
        if (r->size == r->cap) {
            size_t cap = r->cap ? 2 * r->cap : 1 << 16;
            uint8_t *g = realloc(r->data, cap);
            if (!g) break;
            r->data = g;
            r->cap = cap;
        }
        ssize_t n = read(fd, r->data + r->size, r->cap - r->size);
        if (n <= 0) break;
        r->size += (size_t)n;
    }
    if (fd >= 0) close(fd);
    atomic_store(&r->done, true);
    return NULL;
}

static bool receiver_start(receiver *r, bool never_read)
{
    memset(r, 0, sizeof *r);
    r->never_read = never_read;
    r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (r->lfd < 0) return false;
    int small = 4096;
    if (never_read) setsockopt(r->lfd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(r->lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(r->lfd, 1) != 0 ||
        getsockname(r->lfd, (struct sockaddr *)&a, &len) != 0) {
        close(r->lfd);
        return false;
    }
    r->port = ntohs(a.sin_port);
    return pthread_create(&r->th, NULL, receiver_main, r) == 0;
}

/* Waits (at most 2 s) for the reader to see EOF, then stops it. */
static void receiver_end(receiver *r)
{
    for (int i = 0; i < 200 && !r->never_read && !atomic_load(&r->done); i++) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    atomic_store(&r->stop, true);
    pthread_join(r->th, NULL);
    close(r->lfd);
}

static void fill(pf_frame *f, unsigned seed)
{
    for (int p = 0; p < 3; p++) {
        int h = p ? f->height / 2 : f->height, w = p ? f->width / 2 : f->width;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                seed = seed * 1103515245u + 12345u;
                f->data[p][(size_t)y * f->stride[p] + x] = (uint8_t)(seed >> 16);
            }
    }
}

static pf_video_writer_params params(const char *url, int w, int h)
{
    pf_video_writer_params p = pf_video_writer_params_default();
    p.path = url;
    p.width = w;
    p.height = h;
    p.input_format = PF_PIXFMT_I420;
    p.fps = (pf_rational){25, 1};
    p.preset = "ultrafast";
    return p;
}

static bool no_secret(void)
{
    return !strstr(pf_last_error(), "secret");
}

/* 10 frames to tcp://user:secret@127.0.0.1:PORT: the receiver gets
 * MPEG-TS that decodes to 10 frames of the size written. */
static void test_tcp_stream(void)
{
    receiver r;
    REQUIRE(receiver_start(&r, false));
    char url[128], ts[600];
    snprintf(url, sizeof url, "tcp://user:secret@127.0.0.1:%d", r.port);
    pf_video_writer_params p = params(url, 160, 120);
    pf_video_writer *w = NULL;
    pf_frame f = {0};
    CHECK_OK(pf_frame_alloc(&f, PF_PIXFMT_I420, 160, 120, NULL, NULL));
    CHECK_OK(pf_video_writer_create(&p, &w));
    for (int i = 0; w && i < 10; i++) {
        fill(&f, (unsigned)i);
        CHECK_OK(pf_video_writer_write(w, &f));
    }
    if (w) CHECK_OK(pf_video_writer_close(w));
    pf_video_writer_destroy(&w);
    receiver_end(&r);
    CHECK(r.size >= 188 && r.size % 188 == 0 && r.data[0] == 0x47);
    snprintf(ts, sizeof ts, "%s/got.ts", g_dir);
    FILE *fp = fopen(ts, "wb");
    CHECK(fp && fwrite(r.data, 1, r.size, fp) == r.size);
    if (fp) fclose(fp);
    pf_video_reader_params rp = pf_video_reader_params_default();
    rp.path = ts;
    pf_video_reader *rd = NULL;
    CHECK_OK(pf_video_reader_create(&rp, &rd));
    int n = 0;
    pf_frame g = {0};
    while (rd && pf_video_reader_read(rd, &g) == PF_OK) {
        CHECK(g.width == 160 && g.height == 120);
        pf_frame_unref(&g);
        n++;
    }
    CHECK_EQ_INT(n, 10);
    pf_video_reader_destroy(&rd);
    pf_frame_unref(&f);
    free(r.data);
}

static void test_refused(void)
{
    pf_video_writer *w = NULL;
    pf_video_writer_params p = params("ftp://user:secret@127.0.0.1/x.ts", 64, 64);
    CHECK_EQ_INT(pf_video_writer_create(&p, &w), PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "'ftp'") && strstr(pf_last_error(), "user:***@"));
    CHECK(no_secret());
    p.path = "file:///tmp/x.ts";
    CHECK_EQ_INT(pf_video_writer_create(&p, &w), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "file://"));
    p.path = "tcp://127.0.0.1:9";
    p.container = "y4m";
    CHECK_EQ_INT(pf_video_writer_create(&p, &w), PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "'y4m'"));
    /* A whitelist without tcp refuses it (the caller's list). */
    p.container = NULL;
    p.protocols = "udp";
    CHECK_EQ_INT(pf_video_writer_create(&p, &w), PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "'tcp'"));
    /* Nobody listening: a clear I/O error naming the redacted URL. */
    receiver r;
    REQUIRE(receiver_start(&r, false));
    int port = r.port;
    atomic_store(&r.stop, true);
    pthread_join(r.th, NULL);
    close(r.lfd); /* the port is free again */
    char url[128];
    snprintf(url, sizeof url, "tcp://user:secret@127.0.0.1:%d?pwd=secret", port);
    p = params(url, 64, 64);
    double t0 = now_s();
    CHECK_EQ_INT(pf_video_writer_create(&p, &w), PF_ERR_IO);
    CHECK(now_s() - t0 < 5);
    CHECK(strstr(pf_last_error(), "user:***@127.0.0.1") && strstr(pf_last_error(), "pwd=***"));
    CHECK(no_secret());
    CHECK(w == NULL);
}

/* A receiver that accepts and never reads: once the socket buffers are
 * full a write blocks, and fails after write_timeout_ms (not before, not
 * much after), naming the URL without its password. */
static void test_write_deadline(void)
{
    receiver r;
    REQUIRE(receiver_start(&r, true));
    char url[128];
    snprintf(url, sizeof url, "tcp://user:secret@127.0.0.1:%d", r.port);
    pf_video_writer_params p = params(url, 320, 240);
    p.write_timeout_ms = 400;
    p.muxer_options = "send_buffer_size=4096";
    pf_video_writer *w = NULL;
    pf_frame f = {0};
    CHECK_OK(pf_frame_alloc(&f, PF_PIXFMT_I420, 320, 240, NULL, NULL));
    CHECK_OK(pf_video_writer_create(&p, &w));
    pf_status st = PF_OK;
    double took = 0;
    for (int i = 0; w && i < 400 && st == PF_OK; i++) {
        fill(&f, (unsigned)i * 7u + 1u); /* noise: large frames */
        double t0 = now_s();
        st = pf_video_writer_write(w, &f);
        took = now_s() - t0;
    }
    CHECK_EQ_INT(st, PF_ERR_IO);
    CHECK(took >= 0.35 && took < 3.0);
    CHECK(strstr(pf_last_error(), "timed out") && strstr(pf_last_error(), "user:***@"));
    CHECK(no_secret());
    /* The failed writer closes at once (no flush into the dead peer). */
    double t0 = now_s();
    CHECK_EQ_INT(pf_video_writer_close(w), PF_ERR_IO);
    CHECK(now_s() - t0 < 0.3);
    pf_video_writer_destroy(&w);
    receiver_end(&r);
    pf_frame_unref(&f);
}

/* RTSP to a server that accepts the connection and never answers: the
 * create fails within open_timeout_ms. */
static void test_open_deadline(void)
{
    receiver r;
    REQUIRE(receiver_start(&r, true));
    char url[128];
    snprintf(url, sizeof url, "rtsp://user:secret@127.0.0.1:%d/live", r.port);
    pf_video_writer_params p = params(url, 64, 64);
    p.open_timeout_ms = 400;
    pf_video_writer *w = NULL;
    double t0 = now_s();
    CHECK_EQ_INT(pf_video_writer_create(&p, &w), PF_ERR_IO);
    double took = now_s() - t0;
    CHECK(took >= 0.35 && took < 3.0);
    CHECK(strstr(pf_last_error(), "timed out") && strstr(pf_last_error(), "rtsp://user:***@"));
    CHECK(no_secret());
    receiver_end(&r);
}

static void test_unknown_muxer_option(void)
{
    char path[600];
    snprintf(path, sizeof path, "%s/opt.ts", g_dir);
    pf_video_writer_params p = params(path, 64, 64);
    p.muxer_options = "no_such_option=1";
    pf_video_writer *w = NULL;
    CHECK_EQ_INT(pf_video_writer_create(&p, &w), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "no_such_option"));
    struct stat sb;
    CHECK(stat(path, &sb) != 0); /* nothing left behind */
}

/* Discard: frames the encoder still holds are not flushed and no trailer
 * is written. A FIFO is written in place, so the reader sees every byte:
 * after 5 frames into x264's lookahead nothing has come out yet, and
 * discard must add nothing (a close writes the 5 frames). */
typedef struct fifo_reader {
    const char *path;
    size_t bytes;
    pthread_t th;
} fifo_reader;

static void *fifo_main(void *arg)
{
    fifo_reader *r = arg;
    int fd = open(r->path, O_RDONLY | O_CLOEXEC);
    uint8_t buf[65536];
    ssize_t n;
    while (fd >= 0 && (n = read(fd, buf, sizeof buf)) > 0) r->bytes += (size_t)n;
    if (fd >= 0) close(fd);
    return NULL;
}

static size_t fifo_run(const char *fifo, bool discard)
{
    fifo_reader r = {fifo, 0, 0};
    if (pthread_create(&r.th, NULL, fifo_main, &r) != 0) return (size_t)-1;
    pf_video_writer_params p = params(fifo, 320, 240);
    p.container = "mpegts";
    p.codec = "libx264";
    p.preset = "medium"; /* a 40-frame lookahead */
    pf_video_writer *w = NULL;
    pf_frame f = {0};
    CHECK_OK(pf_frame_alloc(&f, PF_PIXFMT_I420, 320, 240, NULL, NULL));
    CHECK_OK(pf_video_writer_create(&p, &w));
    for (int i = 0; w && i < 5; i++) {
        fill(&f, (unsigned)i);
        CHECK_OK(pf_video_writer_write(w, &f));
    }
    if (discard)
        pf_video_writer_discard(&w);
    else
        pf_video_writer_destroy(&w);
    pthread_join(r.th, NULL);
    pf_frame_unref(&f);
    return r.bytes;
}

static void test_discard_no_flush(void)
{
    if (!pf_video_have_encoder("libx264")) {
        printf("  (no libx264: discard case skipped)\n");
        return;
    }
    char fifo[600];
    snprintf(fifo, sizeof fifo, "%s/out.fifo", g_dir);
    REQUIRE(mkfifo(fifo, 0600) == 0);
    size_t closed = fifo_run(fifo, false), discarded = fifo_run(fifo, true);
    CHECK(closed > 1000);
    CHECK_EQ_INT(discarded, 0);
    unlink(fifo);
}

int main(void)
{
    if (!pf_io_have_ffmpeg()) {
        printf("SKIP: built without FFmpeg\n");
        return 77;
    }
    snprintf(g_dir, sizeof g_dir, "%s/pf_test_netout_XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    PF_RUN(test_tcp_stream);
    PF_RUN(test_refused);
    PF_RUN(test_write_deadline);
    PF_RUN(test_open_deadline);
    PF_RUN(test_unknown_muxer_option);
    PF_RUN(test_discard_no_flush);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    return pf_test_finish();
}
