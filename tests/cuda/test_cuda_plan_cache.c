/* The plan cache on the GPU (src/nn/plan_cache.c + the conv choices of
 * src/nn/cuda/cudnn_conv.c): MediaPipe's selfie model in FP16 on cuda:0.
 *
 *   cold: an empty cache directory; every distinct conv is timed
 *         (convs_tuned > 0; a conv with the geometry of an earlier one of
 *         the model reads that one's choice: convs_cached counts those) and
 *         the file is written;
 *   warm: a new executor in the same process reads every choice
 *         (convs_tuned == 0, convs_cached == all the cold run's convs),
 *         plans faster,
 *         and its output is bit-identical to the cold one's (the same
 *         algorithms, engines and launch configs run);
 *   plan_cache = false: times again and leaves the file alone;
 *   a damaged file (one byte flipped): ignored, everything timed again,
 *         the file rewritten; the next executor reads it;
 *   PIXFLOW_NN_CONV=pixflow (a forced path): other entries, timed.
 *
 * Exits 77 without a GPU or without the model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cuda_test_util.h"

static pf_device *g_dev;
static pf_allocator *g_alloc;
static pf_stream *g_stream;
static pf_model *g_model;
static pf_tensor g_in;         /* host, random */
static char g_dir[256];

typedef struct run_result {
    pf_nn_exec_stats st;
    double plan_ms;            /* create + first run (plans, captures) */
    unsigned char *out;        /* host copy of output 0 */
    size_t out_bytes;
} run_result;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static bool run_once(bool cache, run_result *r)
{
    memset(r, 0, sizeof *r);
    pf_nn_exec_params p = pf_nn_exec_params_default();
    p.device = g_dev;
    p.precision = PF_NN_FP16;
    p.plan_cache = cache;
    pf_tensor din = {0}, dout = {0};
    pf_nn_exec *x = NULL;
    pf_model_io o = pf_model_output(g_model, 0);
    int64_t oshape[8];
    for (int d = 0; d < o.ndim && d < 8; d++) oshape[d] = o.shape[d] < 0 ? 1 : o.shape[d];
    bool ok = pf_tensor_alloc(&din, g_in.dtype, g_in.ndim, g_in.shape, g_in.layout, g_alloc,
                              g_stream) == PF_OK &&
              pf_memcpy_async(g_stream, din.data, g_in.data, pf_tensor_nbytes(&g_in)) == PF_OK &&
              pf_tensor_alloc(&dout, PF_DTYPE_F32, o.ndim, oshape, o.layout, g_alloc,
                              g_stream) == PF_OK &&
              pf_stream_synchronize(g_stream) == PF_OK;
    double t0 = now_ms();
    ok = ok && pf_nn_exec_create(g_model, &p, &x) == PF_OK &&
         pf_nn_exec_run(x, g_stream, &din, 1, &dout, 1) == PF_OK &&
         pf_stream_synchronize(g_stream) == PF_OK;
    r->plan_ms = now_ms() - t0;
    if (ok) {
        r->out_bytes = pf_tensor_nbytes(&dout);
        r->out = malloc(r->out_bytes);
        ok = r->out && pf_memcpy_async(g_stream, r->out, dout.data, r->out_bytes) == PF_OK &&
             pf_stream_synchronize(g_stream) == PF_OK && pf_nn_exec_get_stats(x, &r->st) == PF_OK;
    }
    if (!ok) fprintf(stderr, "  run: %s\n", pf_last_error());
    pf_nn_exec_destroy(&x);
    pf_tensor_unref(&din);
    pf_tensor_unref(&dout);
    return ok;
}

static int count_files(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "ls -A '%s' 2>/dev/null | wc -l", g_dir);
    FILE *f = popen(cmd, "r");
    int n = -1;
    if (f && fscanf(f, "%d", &n) != 1) n = -1;
    if (f) pclose(f);
    return n;
}

/* The one cache file's path. */
static bool cache_file(char *buf, size_t size)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "ls '%s'/plans-*.bin 2>/dev/null | head -1", g_dir);
    FILE *f = popen(cmd, "r");
    bool ok = f && fgets(buf, (int)size, f) != NULL;
    if (f) pclose(f);
    if (ok) buf[strcspn(buf, "\n")] = '\0';
    return ok && buf[0];
}

static void test_cold_warm(void)
{
    run_result cold, warm, off;
    REQUIRE(run_once(true, &cold));
    printf("  cold: %d convs tuned, %d cached, %.1f ms to the first output\n",
           cold.st.convs_tuned, cold.st.convs_cached, cold.plan_ms);
    CHECK(cold.st.convs_tuned > 0);
    CHECK_EQ_INT(count_files(), 1);
    REQUIRE(run_once(true, &warm));
    printf("  warm: %d convs tuned, %d cached, %.1f ms to the first output\n",
           warm.st.convs_tuned, warm.st.convs_cached, warm.plan_ms);
    CHECK_EQ_INT(warm.st.convs_tuned, 0);
    CHECK_EQ_INT(warm.st.convs_cached, cold.st.convs_tuned + cold.st.convs_cached);
    CHECK(warm.plan_ms < cold.plan_ms);
    CHECK(warm.out_bytes == cold.out_bytes && !memcmp(warm.out, cold.out, cold.out_bytes));

    char path[512];
    REQUIRE(cache_file(path, sizeof path));
    struct stat before, after;
    stat(path, &before);
    sleep(1); /* an mtime change would show */
    REQUIRE(run_once(false, &off));
    stat(path, &after);
    /* Without the cache nothing is shared, not even between equal convs. */
    CHECK(off.st.convs_tuned == cold.st.convs_tuned + cold.st.convs_cached);
    CHECK_EQ_INT(off.st.convs_cached, 0);
    CHECK(before.st_mtime == after.st_mtime && before.st_size == after.st_size);
    free(cold.out);
    free(warm.out);
    free(off.out);
}

static void test_damaged_file(void)
{
    char path[512];
    REQUIRE(cache_file(path, sizeof path));
    FILE *f = fopen(path, "r+b");
    REQUIRE(f != NULL);
    fseek(f, 40, SEEK_SET);
    int c = fgetc(f);
    fseek(f, 40, SEEK_SET);
    fputc(c ^ 0x55, f);
    fclose(f);
    run_result r1, r2;
    REQUIRE(run_once(true, &r1));
    CHECK(r1.st.convs_tuned > 0);
    REQUIRE(run_once(true, &r2));
    CHECK(r2.st.convs_tuned == 0 && r2.st.convs_cached == r1.st.convs_tuned + r1.st.convs_cached);
    free(r1.out);
    free(r2.out);
}

static void test_forced_path(void)
{
    setenv("PIXFLOW_NN_CONV", "pixflow", 1);
    run_result r1, r2;
    REQUIRE(run_once(true, &r1));
    CHECK(r1.st.convs_tuned > 0);
    REQUIRE(run_once(true, &r2));
    CHECK(r2.st.convs_tuned == 0 && r2.st.convs_cached == r1.st.convs_tuned + r1.st.convs_cached);
    unsetenv("PIXFLOW_NN_CONV");
    free(r1.out);
    free(r2.out);
}

int main(void)
{
    g_dev = pf_test_cuda_device_or_skip();
    const char *root = getenv("PF_SOURCE_DIR");
    char path[1200];
    snprintf(path, sizeof path,
             "%s/node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite",
             root && *root ? root : ".");
    struct stat sb;
    if (stat(path, &sb) != 0) {
        printf("SKIP: %s absent (scripts/setup.sh installs it)\n", path);
        return 77;
    }
    snprintf(g_dir, sizeof g_dir, "/tmp/pf_cuda_plan_cache_XXXXXX");
    if (!mkdtemp(g_dir)) return 1;
    setenv("PIXFLOW_CACHE_DIR", g_dir, 1);
    if (pf_model_load(path, &g_model) != PF_OK) {
        fprintf(stderr, "%s\n", pf_last_error());
        return 1;
    }
    pf_model_io in = pf_model_input(g_model, 0);
    int64_t shape[8];
    for (int d = 0; d < in.ndim && d < 8; d++) shape[d] = in.shape[d] < 0 ? 1 : in.shape[d];
    if (pf_tensor_alloc(&g_in, PF_DTYPE_F32, in.ndim, shape, in.layout, NULL, NULL) != PF_OK) {
        fprintf(stderr, "input tensor: %s\n", pf_last_error());
        return 1;
    }
    float *d = g_in.data;
    pf_test_seed(7);
    for (int64_t i = 0; i < pf_tensor_numel(&g_in); i++)
        d[i] = (float)(pf_test_rand() % 1000) / 1000.0f;
    g_alloc = pf_test_allocator_create(g_dev, "test-cuda-plan-cache", PF_MEM_DEVICE, 0);
    g_stream = make_stream(g_dev, 0);
    PF_RUN(test_cold_warm);
    PF_RUN(test_damaged_file);
    PF_RUN(test_forced_path);
    pf_stream_destroy(&g_stream);
    pf_allocator_destroy(&g_alloc);
    pf_tensor_unref(&g_in);
    pf_model_free(&g_model);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) return 1;
    return pf_test_finish();
}
