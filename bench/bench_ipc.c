/* bench_ipc: a 1080p frame handed between processes (pixflow/ipc.h).
 *
 *   latency     producer and consumer in two processes, one frame in flight
 *               (a pool of 1 slot: the next frame waits for the release).
 *               Zero copy: the producer publishes a slot it already holds
 *               the picture in; the time is publish -> the consumer's recv
 *               returning with the frame (message, wake-up, checks and, on
 *               CUDA, the stream wait on the slot's event). p50 / p99 over
 *               --iters frames.
 *   via_host    the baseline, the same hand-over when the frame has to be
 *               copied through host memory: CPU - the producer copies its
 *               frame into the shared slot and the consumer copies it out
 *               (two 1080p memcpys plus the message); CUDA - the D2H and
 *               H2D copies of one frame through pageable host memory
 *               (cudaMemcpy, as a staging hand-over does) plus the CPU
 *               message latency.
 *   throughput  frames per second through a pool of 8 slots with 1, 2 and 4
 *               BLOCK consumers that release each frame at once (the
 *               producer writes nothing: the protocol's own rate).
 *
 * Every process is a fresh child: the parent never initialises CUDA (not
 * fork-safe). Frames are NV12 1920x1080 (3,110,400 bytes).
 *
 *   bench_ipc [--device cpu|cuda] [--iters N] [--json]
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"

#ifdef PF_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#define FW 1920
#define FH 1080

typedef struct job {
    const char *path;
    const char *spec;
    int frames;
    int slots;
    int consumers;
    int copy;                 /* via_host on the CPU: copy in and out */
    int out_fd;               /* results pipe */
} job;

/* The child's device (NULL for the CPU) and a stream on it; exits on failure. */
static pf_device *child_device(const char *spec, pf_stream **s)
{
    pf_device *d = NULL;
    if (pf_device_select(spec ? spec : "cpu", &d) != PF_OK) {
        fprintf(stderr, "bench_ipc: %s\n", pf_last_error());
        _exit(3);
    }
    if (pf_device_get_type(d) != PF_DEVICE_CUDA) d = NULL;
    pf_stream_params sp = pf_stream_params_default();
    sp.device = d;
    if (pf_stream_create(&sp, s) != PF_OK) _exit(4);
    return d;
}

static int producer_main(job *j)
{
    pf_stream *s = NULL;
    pf_device *dev = child_device(j->spec, &s);
    pf_ipc_producer_params pp = pf_ipc_producer_params_default();
    pp.path = j->path;
    pp.device = dev;
    pp.format = PF_PIXFMT_NV12;
    pp.width = FW;
    pp.height = FH;
    pp.slots = j->slots;
    pf_ipc_producer *p = NULL;
    if (pf_ipc_producer_create(&pp, &p) != PF_OK) {
        fprintf(stderr, "bench_ipc: %s\n", pf_last_error());
        return 5;
    }
    pf_frame src = {0};
    if (j->copy && pf_frame_alloc(&src, PF_PIXFMT_NV12, FW, FH, NULL, NULL) != PF_OK) return 6;
    if (j->copy) memset(src.data[0], 7, src.stride[0] * FH);
    if (pf_ipc_producer_wait_consumers(p, j->consumers, 20000000) != PF_OK) return 7;
    int64_t t0 = pf_time_ns();
    for (int k = 0; k < j->frames; k++) {
        pf_frame f;
        if (pf_ipc_producer_acquire(p, 20000000, &f) != PF_OK) return 8;
        int64_t ts = pf_time_ns();
        if (j->copy) pf_frame_copy_async(&f, &src, s);
        else if (!dev) f.data[0][0] = (uint8_t)k; /* "writes" the frame */
        if (pf_ipc_producer_publish(p, &f, s, ts) != PF_OK) return 9;
    }
    double secs = (double)(pf_time_ns() - t0) / 1e9;
    /* Let the last releases come back before the end of stream. */
    for (int i = 0; i < 200; i++) {
        pf_ipc_producer_stats st;
        pf_ipc_producer_get_stats(p, &st);
        if (st.slots_free == j->slots) break;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    pf_ipc_producer_destroy(&p);
    pf_frame_unref(&src);
    pf_stream_destroy(&s);
    double fps = j->frames / secs;
    if (write(j->out_fd, &fps, sizeof fps) != sizeof fps) return 10;
    return 0;
}

static int consumer_main(job *j, bool report)
{
    pf_stream *s = NULL;
    pf_device *dev = child_device(j->spec, &s);
    pf_ipc_consumer_params cp = pf_ipc_consumer_params_default();
    cp.path = j->path;
    cp.device = dev;
    pf_ipc_consumer *c = NULL;
    if (pf_ipc_consumer_create(&cp, &c) != PF_OK) {
        fprintf(stderr, "bench_ipc: %s\n", pf_last_error());
        return 5;
    }
    pf_frame dst = {0};
    if (j->copy && pf_frame_alloc(&dst, PF_PIXFMT_NV12, FW, FH, NULL, NULL) != PF_OK) return 6;
    double *lat = calloc((size_t)j->frames, sizeof *lat);
    int n = 0;
    volatile uint8_t sink = 0;
    for (;;) {
        pf_frame f;
        pf_ipc_frame_info info;
        pf_status st = pf_ipc_consumer_recv(c, 20000000, s, &f, &info);
        if (st != PF_OK) break;
        if (j->copy) pf_frame_copy_async(&dst, &f, s);
        else if (!dev) sink ^= f.data[0][0];
        int64_t t = pf_time_ns();
        if (n < j->frames) lat[n++] = (double)(t - info.t_source_ns) / 1000.0;
        pf_frame_unref(&f);
    }
    (void)sink;
    double out[2] = {bench_median(lat, n), 0};
    qsort(lat, (size_t)n, sizeof *lat, bench_cmp_double);
    out[1] = n ? lat[(size_t)((n - 1) * 0.99)] : 0;
    free(lat);
    pf_frame_unref(&dst);
    pf_ipc_consumer_destroy(&c);
    pf_stream_destroy(&s);
    if (report && write(j->out_fd, out, sizeof out) != sizeof out) return 10;
    return n == j->frames ? 0 : 11;
}

/* Runs one producer and j->consumers consumers; fps from the producer,
 * p50/p99 latency (µs) from the first consumer. */
static int run(job *j, double *fps, double *p50, double *p99)
{
    int pp[2], cpipe[2];
    if (pipe(pp) || pipe(cpipe)) return -1;
    fflush(stdout);
    pid_t prod = fork();
    if (prod == 0) {
        j->out_fd = pp[1];
        _exit(producer_main(j));
    }
    pid_t cons[4];
    for (int i = 0; i < j->consumers; i++) {
        cons[i] = fork();
        if (cons[i] == 0) {
            j->out_fd = cpipe[1];
            _exit(consumer_main(j, i == 0));
        }
    }
    int bad = 0, status;
    waitpid(prod, &status, 0);
    bad |= !WIFEXITED(status) || WEXITSTATUS(status);
    for (int i = 0; i < j->consumers; i++) {
        waitpid(cons[i], &status, 0);
        bad |= !WIFEXITED(status) || WEXITSTATUS(status);
    }
    double lat[2] = {0, 0};
    if (read(pp[0], fps, sizeof *fps) != sizeof *fps) bad = 1;
    if (read(cpipe[0], lat, sizeof lat) != sizeof lat) bad = 1;
    *p50 = lat[0];
    *p99 = lat[1];
    close(pp[0]);
    close(pp[1]);
    close(cpipe[0]);
    close(cpipe[1]);
    return bad ? -1 : 0;
}

#ifdef PF_HAVE_CUDA
/* D2H + H2D of one frame through pageable host memory: µs, median. */
static int staging_child(int fd, int iters)
{
    size_t n = (size_t)FW * FH * 3 / 2;
    void *d = NULL;
    if (cudaMalloc(&d, n) != cudaSuccess) return 3;
    uint8_t *h = malloc(n);
    memset(h, 0, n);
    double *t = calloc((size_t)iters, sizeof *t);
    for (int i = 0; i < iters; i++) {
        int64_t t0 = pf_time_ns();
        cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost);
        cudaMemcpy(d, h, n, cudaMemcpyHostToDevice);
        t[i] = (double)(pf_time_ns() - t0) / 1000.0;
    }
    double med = bench_median(t, iters);
    return write(fd, &med, sizeof med) == sizeof med ? 0 : 4;
}
#endif

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    bench_args a = {.prog = "bench_ipc", .iters_help = "frames per measurement", .iters = 2000,
                    .max_iters = 1000000};
    int rc = bench_parse_args(argc, argv, &a);
    if (rc >= 0) return rc;
    const char *spec = a.spec ? a.spec : getenv("PIXFLOW_DEVICE");
    if (!spec || !strcmp(spec, "auto")) spec = "cpu";
    bool cuda = strncmp(spec, "cuda", 4) == 0;
    char dir[128], path[160];
    snprintf(dir, sizeof dir, "/tmp/pf-bench-ipc-%d", (int)getpid());
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/s.sock", dir);
    pf_log_set_level(PF_LOG_ERROR);

    job j = {.path = path, .spec = spec, .frames = a.iters, .slots = 1, .consumers = 1};
    double fps, lat50, lat99, base50 = 0, base99 = 0, staging = 0;
    if (run(&j, &fps, &lat50, &lat99) != 0) return bench_fail("bench_ipc", "latency run");
    /* Baseline: the frame copied through host memory. */
    job b = j;
    b.spec = "cpu";
    b.copy = 1;
    if (run(&b, &fps, &base50, &base99) != 0) return bench_fail("bench_ipc", "copy run");
#ifdef PF_HAVE_CUDA
    if (cuda) {
        int sp[2];
        if (pipe(sp)) return 1;
        pid_t c = fork();
        if (c == 0) _exit(staging_child(sp[1], a.iters < 200 ? a.iters : 200));
        int status;
        waitpid(c, &status, 0);
        if (read(sp[0], &staging, sizeof staging) != sizeof staging)
            return bench_fail("bench_ipc", "staging copy");
        /* The message itself: the CPU hand-over without copies. */
        job m = j;
        m.spec = "cpu";
        double mf, m50, m99;
        if (run(&m, &mf, &m50, &m99) != 0) return bench_fail("bench_ipc", "cpu message run");
        base50 = staging + m50;
        base99 = staging + m99;
    }
#endif
    double thr[3];
    int ncons[3] = {1, 2, 4};
    for (int i = 0; i < 3; i++) {
        job t = j;
        t.slots = 8;
        t.consumers = ncons[i];
        t.frames = a.iters * 5;
        double p50, p99;
        if (run(&t, &thr[i], &p50, &p99) != 0) return bench_fail("bench_ipc", "throughput run");
    }
    rmdir(dir);
    if (a.json) {
        printf("{\"device\":\"%s\",\"frame\":\"nv12 1920x1080\",\"frames\":%d,"
               "\"latency_us\":{\"p50\":%.2f,\"p99\":%.2f},\"bytes_copied\":0,"
               "\"via_host_us\":{\"p50\":%.2f,\"p99\":%.2f},\"staging_copy_us\":%.1f,"
               "\"throughput_fps\":{\"1\":%.0f,\"2\":%.0f,\"4\":%.0f}}\n",
               spec, a.iters, lat50, lat99, base50, base99, staging, thr[0], thr[1], thr[2]);
        return 0;
    }
    printf("bench_ipc on %s: NV12 1920x1080 frames (3,110,400 bytes), %d frames per run\n", spec,
           a.iters);
    printf("  hand-over latency, zero copy   p50 %8.1f us  p99 %8.1f us  (0 bytes copied)\n",
           lat50, lat99);
    printf("  through host memory (copies)   p50 %8.1f us  p99 %8.1f us%s\n", base50, base99,
           cuda ? "  (D2H + H2D staging + message)" : "  (memcpy in + memcpy out + message)");
    printf("  throughput, 8 slots            1 consumer %8.0f fps, 2: %8.0f fps, 4: %8.0f fps\n",
           thr[0], thr[1], thr[2]);
    return 0;
}
