/* IPC on CUDA between processes: a producer and 2 consumers in separate
 * processes exchange device frames through the VMM path (cuMemCreate + POSIX
 * descriptors) and the legacy path (cudaIpcGetMemHandle), forced in turn
 * with PIXFLOW_IPC_CUDA. The producer writes a pattern derived from the
 * sequence number with a kernel on its stream and publishes without
 * synchronising (the slot's interprocess event is the only fence); each
 * consumer checks every byte with a kernel on its own stream, which waits
 * on that event, and counts mismatches on the GPU. A consumer on the CPU is
 * refused by a CUDA producer.
 *
 *   ipc_cuda_vmm     2000 frames to 2 BLOCK consumers, 0 mismatches, clean end
 *   ipc_cuda_legacy  the same through cudaIpc handles
 *
 * CUDA is not fork-safe once initialised: the parent never touches it;
 * every process that uses the GPU is a fresh child. Exit 77 without a GPU. */
#include <cuda_runtime.h>

#include "ipc_test_util.h"
#include "pf_test.h"

#define FRAMES 2000
#define W 640
#define H 360

__global__ void fill_kernel(uint8_t *p, size_t stride, int row, int rows, unsigned seq, int plane)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < row && y < rows)
        p[(size_t)y * stride + x] = (uint8_t)(seq * 31u + (unsigned)plane * 17u + (unsigned)x +
                                              (unsigned)y * 7u);
}

__global__ void check_kernel(const uint8_t *p, size_t stride, int row, int rows, unsigned seq,
                             int plane, unsigned long long *bad)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < row && y < rows &&
        p[(size_t)y * stride + x] != (uint8_t)(seq * 31u + (unsigned)plane * 17u + (unsigned)x +
                                                (unsigned)y * 7u))
        atomicAdd(bad, 1ull);
}

static void planes(const pf_frame *f, unsigned seq, cudaStream_t s, unsigned long long *bad)
{
    for (int p = 0; p < f->num_planes; p++) {
        size_t row, rows;
        pf_pixfmt_plane_size(f->format, f->width, f->height, p, &row, &rows);
        dim3 grid((unsigned)((row + 255) / 256), (unsigned)rows);
        if (bad)
            check_kernel<<<grid, 256, 0, s>>>(f->data[p], f->stride[p], (int)row, (int)rows, seq,
                                              p, bad);
        else
            fill_kernel<<<grid, 256, 0, s>>>(f->data[p], f->stride[p], (int)row, (int)rows, seq,
                                             p);
    }
}

typedef struct args {
    const char *path;
    pf_ipc_backend want;
} args;

/* cuda:0 and a stream on it (in the child that will use them). */
static bool gpu_stream(pf_device **dev, pf_stream **stream)
{
    *dev = NULL;
    *stream = NULL;
    if (pf_device_select("cuda:0", dev) != PF_OK) return false;
    pf_stream_params sp = pf_stream_params_default();
    sp.device = *dev;
    return pf_stream_create(&sp, stream) == PF_OK;
}

static int producer_main(void *arg)
{
    args *a = (args *)arg;
    pf_device *dev;
    pf_stream *stream;
    if (!gpu_stream(&dev, &stream)) return 77;
    pf_ipc_producer_params pp = pf_ipc_producer_params_default();
    pp.path = a->path;
    pp.device = dev;
    pp.format = PF_PIXFMT_NV12;
    pp.width = W;
    pp.height = H;
    pp.slots = 6;
    pf_ipc_producer *prod = NULL;
    if (pf_ipc_producer_create(&pp, &prod) != PF_OK) {
        fprintf(stderr, "producer: %s\n", pf_last_error());
        return pf_last_error()[0] && strstr(pf_last_error(), "PIXFLOW_IPC_CUDA=vmm") ? 77 : 11;
    }
    pf_ipc_producer_stats s;
    pf_ipc_producer_get_stats(prod, &s);
    if (s.backend != a->want) return 12;
    if (pf_ipc_producer_wait_consumers(prod, 2, 20000000) != PF_OK) return 13;
    cudaStream_t cs = (cudaStream_t)pf_stream_native(stream);
    for (unsigned k = 1; k <= FRAMES; k++) {
        pf_frame f;
        if (pf_ipc_producer_acquire(prod, 20000000, &f) != PF_OK) return 14;
        planes(&f, k, cs, NULL);
        if (pf_ipc_producer_publish(prod, &f, stream, 0) != PF_OK) {
            fprintf(stderr, "producer: %s\n", pf_last_error());
            return 15;
        }
    }
    pf_stream_synchronize(stream);
    pf_ipc_producer_get_stats(prod, &s);
    pf_ipc_producer_destroy(&prod);
    pf_stream_destroy(&stream);
    return s.published == FRAMES ? 0 : 16;
}

static int consumer_main(void *arg)
{
    args *a = (args *)arg;
    pf_device *dev;
    pf_stream *stream;
    if (!gpu_stream(&dev, &stream)) return 20;
    pf_ipc_consumer_params cp = pf_ipc_consumer_params_default();
    cp.path = a->path;
    cp.device = dev;
    pf_ipc_consumer *c = NULL;
    if (pf_ipc_consumer_create(&cp, &c) != PF_OK) {
        fprintf(stderr, "consumer: %s\n", pf_last_error());
        return 21;
    }
    unsigned long long *bad = NULL;
    if (cudaMalloc(&bad, sizeof *bad) != cudaSuccess) return 22;
    cudaMemset(bad, 0, sizeof *bad);
    cudaStream_t cs = (cudaStream_t)pf_stream_native(stream);
    int n = 0, code = 0;
    for (;;) {
        pf_frame f;
        pf_ipc_frame_info info;
        pf_status st = pf_ipc_consumer_recv(c, 20000000, stream, &f, &info);
        if (st == PF_EOF) break;
        if (st != PF_OK) {
            fprintf(stderr, "consumer: %s\n", pf_last_error());
            code = 23;
            break;
        }
        if (pf_frame_domain(&f) != PF_MEM_DEVICE) code = 24;
        planes(&f, (unsigned)info.seq, cs, bad);
        /* Release only once the check has read the slot. */
        pf_stream_synchronize(stream);
        pf_frame_unref(&f);
        n++;
    }
    unsigned long long h = 1;
    cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost);
    if (!code && h) {
        fprintf(stderr, "consumer: %llu bytes differ\n", h);
        code = 25;
    }
    if (!code && n != FRAMES) {
        fprintf(stderr, "consumer: %d frames\n", n);
        code = 26;
    }
    pf_ipc_consumer_destroy(&c);
    cudaFree(bad);
    pf_stream_destroy(&stream);
    return code;
}

/* A CPU consumer cannot read a CUDA producer's slots. */
static int cpu_consumer_main(void *arg)
{
    args *a = (args *)arg;
    pf_log_set_level(PF_LOG_QUIET);
    pf_ipc_consumer_params cp = pf_ipc_consumer_params_default();
    cp.path = a->path;
    pf_ipc_consumer *c = NULL;
    return pf_ipc_consumer_create(&cp, &c) == PF_ERR_UNSUPPORTED ? 0 : 30;
}

static int probe_main(void *arg)
{
    (void)arg;
    return pf_device_count(PF_DEVICE_CUDA) > 0 ? 0 : 77;
}

static void exchange(const char *mode, pf_ipc_backend want)
{
    char dir[256], path[300];
    ipc_test_dir(dir, sizeof dir, mode);
    snprintf(path, sizeof path, "%s/s.sock", dir);
    setenv("PIXFLOW_IPC_CUDA", mode, 1);
    args a = {path, want};
    int64_t t0 = pf_time_ns();
    pid_t prod = ipc_spawn(producer_main, &a, 120);
    pid_t c1 = ipc_spawn(consumer_main, &a, 120);
    pid_t c2 = ipc_spawn(consumer_main, &a, 120);
    int rp = ipc_wait(prod, 120000);
    if (rp == 77) {
        printf("  %s sharing unavailable on this GPU: skipped\n", mode);
        kill(c1, SIGKILL);
        kill(c2, SIGKILL);
        ipc_wait(c1, 1000);
        ipc_wait(c2, 1000);
        rmdir(dir);
        return;
    }
    CHECK_EQ_INT(rp, 0);
    CHECK_EQ_INT(ipc_wait(c1, 120000), 0);
    CHECK_EQ_INT(ipc_wait(c2, 120000), 0);
    printf("  %s: %d frames of %dx%d nv12 to 2 consumers in %.2f s\n", mode, FRAMES, W, H,
           (double)(pf_time_ns() - t0) / 1e9);
    unsetenv("PIXFLOW_IPC_CUDA");
    rmdir(dir);
}

static void ipc_cuda_vmm(void) { exchange("vmm", PF_IPC_BACKEND_CUDA_VMM); }
static void ipc_cuda_legacy(void) { exchange("legacy", PF_IPC_BACKEND_CUDA_LEGACY); }

/* A CUDA producer with a CPU consumer: the consumer is refused cleanly. */
static void ipc_cuda_cpu_consumer(void)
{
    char dir[256], path[300];
    ipc_test_dir(dir, sizeof dir, "cpu");
    snprintf(path, sizeof path, "%s/s.sock", dir);
    args a = {path, PF_IPC_BACKEND_CUDA_VMM};
    setenv("PIXFLOW_IPC_CUDA", "auto", 1);
    /* The producer waits for 2 consumers that never come: kill it after. */
    pid_t prod = ipc_spawn(producer_main, &a, 60);
    pid_t c = ipc_spawn(cpu_consumer_main, &a, 60);
    CHECK_EQ_INT(ipc_wait(c, 60000), 0);
    kill(prod, SIGKILL);
    ipc_wait(prod, 5000);
    unlink(path);
    rmdir(dir);
    unsetenv("PIXFLOW_IPC_CUDA");
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    pid_t probe = ipc_spawn(probe_main, NULL, 60);
    if (ipc_wait(probe, 60000) != 0) {
        printf("no CUDA device: skipped\n");
        return 77;
    }
    PF_RUN(ipc_cuda_vmm);
    PF_RUN(ipc_cuda_legacy);
    PF_RUN(ipc_cuda_cpu_consumer);
    return pf_test_finish();
}
