/* Planning only the full batch (pf_nn_exec_reserve_batch) and padding the
 * rare smaller runs into it (src/nn/exec.c plan_batch), on cuda:0 with
 * MediaPipe's selfie model in FP16:
 *   - reserve_batch(8) on a max_batch-8 executor makes one plan;
 *   - runs of 1 row use it (no new plan) three times, and the result equals
 *     a batch-1 executor's within FP16 tolerance (another plan, possibly
 *     other conv algorithms: 2e-3 absolute on a sigmoid mask in [0, 1]);
 *   - the 4th run of 1 row plans batch 1 (plans == 2), same result;
 *   - reserve_batch outside 1..max_batch is refused naming the batch;
 *   - pf_nn_warmup plans and runs once on zeros (twice in a row works: it
 *     keeps nothing), is a no-op on the CPU and refuses a NULL model.
 * Exits 77 without a GPU or without the model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cuda_test_util.h"

static pf_device *g_dev;
static pf_allocator *g_alloc;
static pf_stream *g_stream;
static pf_model *g_model;
static pf_tensor g_in; /* device, batch 1, random */

static bool run1(pf_nn_exec *x, float *host_out, size_t n)
{
    pf_model_io o = pf_model_output(g_model, 0);
    int64_t shape[8];
    for (int d = 0; d < o.ndim && d < 8; d++) shape[d] = o.shape[d] < 0 ? 1 : o.shape[d];
    pf_tensor out = {0};
    bool ok = pf_tensor_alloc(&out, PF_DTYPE_F32, o.ndim, shape, o.layout, g_alloc, g_stream) ==
                  PF_OK &&
              pf_nn_exec_run(x, g_stream, &g_in, 1, &out, 1) == PF_OK &&
              pf_tensor_nbytes(&out) == n * sizeof(float) &&
              pf_memcpy_async(g_stream, host_out, out.data, n * sizeof(float)) == PF_OK &&
              pf_stream_synchronize(g_stream) == PF_OK;
    if (!ok) fprintf(stderr, "  run: %s\n", pf_last_error());
    pf_tensor_unref(&out);
    return ok;
}

static int plans_of(pf_nn_exec *x)
{
    pf_nn_exec_stats st;
    return pf_nn_exec_get_stats(x, &st) == PF_OK ? st.plans : -1;
}

static double max_diff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= m)) m = d; /* NaN counts as a difference */
    }
    return m;
}

static void test_pad_into_full_batch(void)
{
    pf_model_io o = pf_model_output(g_model, 0);
    size_t n = 1;
    for (int d = 0; d < o.ndim; d++) n *= (size_t)(o.shape[d] < 0 ? 1 : o.shape[d]);
    float *ref = malloc(n * sizeof *ref), *got = malloc(n * sizeof *got);
    REQUIRE(ref && got);

    pf_nn_exec_params p = pf_nn_exec_params_default();
    p.device = g_dev;
    p.precision = PF_NN_FP16;
    pf_nn_exec *one = NULL;
    REQUIRE(pf_nn_exec_create(g_model, &p, &one) == PF_OK);
    REQUIRE(run1(one, ref, n));
    pf_nn_exec_destroy(&one);

    p.max_batch = 8;
    pf_nn_exec *x = NULL;
    REQUIRE(pf_nn_exec_create(g_model, &p, &x) == PF_OK);
    CHECK(pf_nn_exec_reserve_batch(x, 8) == PF_OK);
    CHECK_EQ_INT(plans_of(x), 1);
    for (int k = 0; k < 3; k++) {
        REQUIRE(run1(x, got, n));
        CHECK_EQ_INT(plans_of(x), 1);
        double md = max_diff(ref, got, n);
        printf("  run %d of 1 row on the batch-8 plan: max |diff| %.2e\n", k + 1, md);
        CHECK(md <= 2e-3);
    }
    REQUIRE(run1(x, got, n));
    CHECK_EQ_INT(plans_of(x), 2);
    CHECK(max_diff(ref, got, n) <= 2e-3);

    CHECK(pf_nn_exec_reserve_batch(x, 9) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "batch 9") != NULL);
    CHECK(pf_nn_exec_reserve_batch(x, 0) == PF_ERR_INVALID);
    pf_nn_exec_destroy(&x);
    free(ref);
    free(got);
}

static void test_warmup(void)
{
    pf_nn_exec_params p = pf_nn_exec_params_default();
    p.device = g_dev;
    p.precision = PF_NN_FP16;
    p.max_batch = 4;
    CHECK(pf_nn_warmup(g_model, &p, 4) == PF_OK);
    CHECK(pf_nn_warmup(g_model, &p, 4) == PF_OK); /* again: nothing kept from the first */
    pf_nn_exec_params cpu = pf_nn_exec_params_default();
    CHECK(pf_nn_warmup(g_model, &cpu, 8) == PF_OK);
    CHECK(pf_nn_warmup(NULL, &p, 1) == PF_ERR_INVALID);
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
    if (pf_model_load(path, &g_model) != PF_OK) {
        fprintf(stderr, "%s\n", pf_last_error());
        return 1;
    }
    g_alloc = pf_test_allocator_create(g_dev, "test-cuda-nn-reserve", PF_MEM_DEVICE, 0);
    g_stream = make_stream(g_dev, 0);
    pf_model_io in = pf_model_input(g_model, 0);
    int64_t shape[8];
    for (int d = 0; d < in.ndim && d < 8; d++) shape[d] = in.shape[d] < 0 ? 1 : in.shape[d];
    pf_tensor h = {0};
    if (pf_tensor_alloc(&h, PF_DTYPE_F32, in.ndim, shape, in.layout, NULL, NULL) != PF_OK ||
        pf_tensor_alloc(&g_in, PF_DTYPE_F32, in.ndim, shape, in.layout, g_alloc, g_stream) !=
            PF_OK) {
        fprintf(stderr, "input tensors: %s\n", pf_last_error());
        return 1;
    }
    float *d = h.data;
    pf_test_seed(11);
    for (int64_t i = 0; i < pf_tensor_numel(&h); i++) d[i] = (float)(pf_test_rand() % 1000) / 1000.0f;
    if (pf_memcpy_async(g_stream, g_in.data, h.data, pf_tensor_nbytes(&h)) != PF_OK ||
        pf_stream_synchronize(g_stream) != PF_OK)
        return 1;
    PF_RUN(test_pad_into_full_batch);
    PF_RUN(test_warmup);
    pf_tensor_unref(&g_in);
    pf_tensor_unref(&h);
    pf_stream_destroy(&g_stream);
    pf_allocator_destroy(&g_alloc);
    pf_model_free(&g_model);
    return pf_test_finish();
}
