/* CUDA face detection post-processing (src/cuda/face_detect.cu) against the
 * CPU reference (src/jobs/faces_detect.c): a batch of random detector
 * outputs (a few dozen anchors over the threshold, overlapping in clusters),
 * an image with none, both models' anchor sets, face limits 1, 5 and 100.
 * Counts must be equal; scores within 2e-7 (expf differs from glibc's by
 * up to 2 ulp) and boxes/keypoints within 1e-5 (the blended sums are the
 * same doubles in the same order; the scores weighting them may differ by
 * those ulps). Skips (77) without a GPU. */
#include <cuda_runtime.h>

#include "cuda_test_util.h"
#include "jobs/faces_impl.h"

#define BATCH 4

static float frand(float lo, float hi)
{
    return lo + (hi - lo) * (float)(pf_test_rand() >> 11) * (1.0f / 9007199254740992.0f);
}

/* Image b: b == 1 has no face; the others light clusters of anchors. */
static void fill(float *reg, float *cls, int anchors, int b)
{
    for (int i = 0; i < anchors; i++) {
        cls[i] = frand(-12.0f, -1.0f);
        float *r = reg + (size_t)i * PF_FACE_COORDS;
        for (int v = 0; v < PF_FACE_COORDS; v++) r[v] = frand(-6.0f, 6.0f);
        r[2] = frand(10.0f, 40.0f);
        r[3] = frand(10.0f, 40.0f);
    }
    if (b == 1) return;
    for (int c = 0; c < 12; c++) {
        const int centre = (int)(pf_test_rand() % (uint64_t)anchors);
        for (int k = -3; k <= 3; k++) {
            const int i = centre + k;
            if (i >= 0 && i < anchors) cls[i] = frand(-0.5f, 6.0f);
        }
    }
}

static void run_case(pf_face_model model, int max_out, cudaStream_t s)
{
    static pf_face_anchor anchors[PF_FACE_MAX_ANCHORS];
    const pf_face_anchor_options o = pf_face_anchor_options_for(model);
    const pf_face_decode_params p = pf_face_decode_params_for(model);
    REQUIRE(pf_face_anchors(&o, anchors, PF_FACE_MAX_ANCHORS) == p.num_anchors);
    const size_t nreg = (size_t)BATCH * p.num_anchors * PF_FACE_COORDS;
    const size_t ncls = (size_t)BATCH * p.num_anchors;
    float *reg = malloc(nreg * sizeof *reg), *cls = malloc(ncls * sizeof *cls);
    pf_face_det *cpu = malloc((size_t)BATCH * max_out * sizeof *cpu);
    pf_face_det *gpu = malloc((size_t)BATCH * max_out * sizeof *gpu);
    void *scratch = malloc(pf_face_scratch_size(&p));
    REQUIRE(reg && cls && cpu && gpu && scratch);
    for (int b = 0; b < BATCH; b++)
        fill(reg + (size_t)b * p.num_anchors * PF_FACE_COORDS, cls + (size_t)b * p.num_anchors,
             p.num_anchors, b);

    float *dreg = dmalloc(nreg * sizeof *reg), *dcls = dmalloc(ncls * sizeof *cls);
    pf_face_anchor *danch = dmalloc((size_t)p.num_anchors * sizeof *danch);
    pf_face_det *dout = dmalloc((size_t)BATCH * max_out * sizeof *dout);
    int *dcount = dmalloc(BATCH * sizeof(int));
    REQUIRE(cudaMemcpy(dreg, reg, nreg * sizeof *reg, cudaMemcpyHostToDevice) == cudaSuccess);
    REQUIRE(cudaMemcpy(dcls, cls, ncls * sizeof *cls, cudaMemcpyHostToDevice) == cudaSuccess);
    REQUIRE(cudaMemcpy(danch, anchors, (size_t)p.num_anchors * sizeof *danch,
                       cudaMemcpyHostToDevice) == cudaSuccess);
    pf_face_cuda_detect a = {dreg, dcls, danch, p, BATCH, max_out, dout, dcount};
    CHECK_OK(pf_cuda_face_detect(&a, s));
    int counts[BATCH];
    REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
    REQUIRE(cudaMemcpy(counts, dcount, sizeof counts, cudaMemcpyDeviceToHost) == cudaSuccess);
    REQUIRE(cudaMemcpy(gpu, dout, (size_t)BATCH * max_out * sizeof *gpu,
                       cudaMemcpyDeviceToHost) == cudaSuccess);

    for (int b = 0; b < BATCH; b++) {
        pf_face_det *c = cpu + (size_t)b * max_out, *g = gpu + (size_t)b * max_out;
        const int n = pf_face_detect_cpu(reg + (size_t)b * p.num_anchors * PF_FACE_COORDS,
                                         cls + (size_t)b * p.num_anchors, anchors, &p, max_out,
                                         scratch, c, max_out);
        printf("    model %d max %d image %d: cpu %d faces, cuda %d\n", (int)model, max_out, b,
               n, counts[b]);
        CHECK_EQ_INT(counts[b], n);
        if (b == 1) CHECK_EQ_INT(n, 0);
        else CHECK(n >= 1);
        for (int i = 0; i < n && i < counts[b]; i++) {
            CHECK(fabsf(c[i].score - g[i].score) <= 2e-7f);
            float worst = 0.0f;
            for (int q = 0; q < 4; q++) worst = fmaxf(worst, fabsf(c[i].box[q] - g[i].box[q]));
            for (int k = 0; k < PF_FACE_KEYPOINTS; k++)
                for (int q = 0; q < 2; q++)
                    worst = fmaxf(worst, fabsf(c[i].kp[k][q] - g[i].kp[k][q]));
            if (worst > 1e-5f) fprintf(stderr, "  image %d face %d: max diff %g\n", b, i, worst);
            CHECK(worst <= 1e-5f);
        }
    }
    cudaFree(dreg);
    cudaFree(dcls);
    cudaFree(danch);
    cudaFree(dout);
    cudaFree(dcount);
    free(reg);
    free(cls);
    free(cpu);
    free(gpu);
    free(scratch);
}

static cudaStream_t g_s;

static void test_short_range(void)
{
    run_case(PF_FACE_SHORT_RANGE, 100, g_s);
    run_case(PF_FACE_SHORT_RANGE, 5, g_s);
    run_case(PF_FACE_SHORT_RANGE, 1, g_s);
}

static void test_full_range(void) { run_case(PF_FACE_FULL_RANGE, 100, g_s); }

int main(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
        printf("no CUDA device: skipped\n");
        return 77;
    }
    if (cudaStreamCreate(&g_s) != cudaSuccess) return 1;
    PF_RUN(test_short_range);
    PF_RUN(test_full_range);
    cudaStreamDestroy(g_s);
    return pf_test_finish();
}
