/* A program outside the pixflow tree, built against an installed pixflow
 * (tests/install_tree.sh builds it twice: with CMake's find_package and
 * with pkg-config). It runs the installed selfie segmentation model on the
 * CPU through the public API and checks that the mask is a mask.
 *
 * usage: consumer MODELS_DIR
 * exit status: 0 ok, 1 failure (the reason on stderr). */
#include <stdio.h>
#include <string.h>

#include <pixflow/pixflow.h>

static int fail(const char *what)
{
    fprintf(stderr, "consumer: %s: %s\n", what, pf_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: consumer MODELS_DIR\n");
        return 1;
    }
    /* The header this was compiled with and the library it loaded agree. */
    if (strcmp(pf_version_string(), PF_VERSION_STRING) != 0) {
        fprintf(stderr, "consumer: header %s, library %s\n", PF_VERSION_STRING,
                pf_version_string());
        return 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/selfie_segmentation.tflite", argv[1]);

    pf_model *m = NULL;
    if (pf_model_load(path, &m) != PF_OK) return fail(path);
    pf_model_io in = pf_model_input(m, 0), out = pf_model_output(m, 0);
    int rc = 1;
    pf_nn_exec *x = NULL;
    pf_tensor ti = {0}, to = {0};
    int64_t shape[PF_TENSOR_MAX_DIMS];
    for (int d = 0; d < in.ndim; d++) shape[d] = in.shape[d] < 0 ? 1 : in.shape[d];
    if (pf_tensor_alloc(&ti, PF_DTYPE_F32, in.ndim, shape, PF_LAYOUT_NONE, NULL, NULL) != PF_OK) {
        rc = fail("input tensor");
        goto done;
    }
    for (int d = 0; d < out.ndim; d++) shape[d] = out.shape[d] < 0 ? 1 : out.shape[d];
    if (pf_tensor_alloc(&to, PF_DTYPE_F32, out.ndim, shape, PF_LAYOUT_NONE, NULL, NULL) != PF_OK) {
        rc = fail("output tensor");
        goto done;
    }
    /* A grey picture with a brighter disc in the middle (RGB in [0, 1]). */
    float *px = ti.data;
    int64_t h = ti.shape[1], w = ti.shape[2], c = ti.shape[3];
    for (int64_t y = 0; y < h; y++)
        for (int64_t xx = 0; xx < w; xx++) {
            double dy = (double)y / (double)h - 0.5, dx = (double)xx / (double)w - 0.5;
            float v = dx * dx + dy * dy < 0.06 ? 0.8f : 0.3f;
            for (int64_t k = 0; k < c; k++) px[(y * w + xx) * c + k] = v;
        }
    /* NULL params: the CPU executor. */
    if (pf_nn_exec_create(m, NULL, &x) != PF_OK) {
        rc = fail("pf_nn_exec_create");
        goto done;
    }
    if (pf_nn_exec_run(x, NULL, &ti, 1, &to, 1) != PF_OK) {
        rc = fail("pf_nn_exec_run");
        goto done;
    }
    const float *mask = to.data;
    int64_t n = pf_tensor_numel(&to);
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!(mask[i] >= 0.0f && mask[i] <= 1.0f)) {
            fprintf(stderr, "consumer: mask[%lld] = %g is not in [0, 1]\n", (long long)i,
                    (double)mask[i]);
            goto done;
        }
        sum += mask[i];
    }
    printf("consumer: pixflow %s ran %s on the CPU: %lld mask values, mean %.4f\n",
           pf_version_string(), path, (long long)n, sum / (double)n);
    rc = 0;
done:
    pf_tensor_unref(&ti);
    pf_tensor_unref(&to);
    pf_nn_exec_destroy(&x);
    pf_model_free(&m);
    return rc;
}
