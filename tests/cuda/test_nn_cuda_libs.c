/* cuDNN and cuBLAS loaded at run time (src/nn/cuda/dl_libs.h):
 * - pf_nn_libraries() reports the three libraries, with a version and a path
 *   when loaded and the reason (naming the soname) when not;
 * - a missing library, or one that lacks a function, is reported as such and
 *   pf_cux_libs_require() refuses with a message naming it;
 * - on a GPU: the CUDA nn executor refuses with that message while cuDNN is
 *   missing, and works again once it is back (then runs a model).
 * The first two parts need no GPU: they run wherever CUDA is compiled in. */
#include "nn/cuda/dl_libs.h"
#include "pf_test.h"

#define ABSENT "libpixflow-test-absent-cudnn.so.9"

static bool has(const char *s, const char *part) { return s && strstr(s, part) != NULL; }

static void test_report(void)
{
    CHECK_EQ_INT(pf_nn_libraries(NULL, 0), 3);
    pf_nn_library l[4];
    memset(l, 0xAB, sizeof l);
    REQUIRE(pf_nn_libraries(l, 4) == 3);
    CHECK(strcmp(l[0].name, "cuDNN") == 0 && has(l[0].soname, "libcudnn.so."));
    CHECK(strcmp(l[1].name, "cuBLAS") == 0 && has(l[1].soname, "libcublas.so."));
    CHECK(strcmp(l[2].name, "cuBLASLt") == 0 && has(l[2].soname, "libcublasLt.so."));
    for (int i = 0; i < 3; i++) {
        printf("  %-8s %s: %s %s %s\n", l[i].name, l[i].soname,
               l[i].loaded ? "loaded" : "missing", l[i].loaded ? l[i].version : l[i].detail,
               l[i].path);
        if (l[i].loaded) {
            CHECK(l[i].version[0] >= '1' && l[i].version[0] <= '9' && has(l[i].version, "."));
            CHECK(l[i].path[0] == '/' && l[i].detail[0] == '\0');
        } else {
            CHECK(has(l[i].detail, l[i].soname) && l[i].version[0] == '\0');
        }
    }
    /* cap 1 fills one entry and still counts all. */
    memset(l, 0, sizeof l);
    CHECK_EQ_INT(pf_nn_libraries(l, 1), 3);
    CHECK(l[0].name != NULL && l[1].name == NULL);
}

static void test_missing_library_named(void)
{
    pf_cux_libs_testing_reload(ABSENT, NULL, NULL);
    CHECK_EQ_INT(pf_cux_libs_require(), PF_ERR_UNSUPPORTED);
    CHECK(has(pf_last_error(), "cuDNN") && has(pf_last_error(), ABSENT));
    printf("  message: %s\n", pf_last_error());
    pf_nn_library l[3];
    REQUIRE(pf_nn_libraries(l, 3) == 3);
    CHECK(!l[0].loaded && strcmp(l[0].soname, ABSENT) == 0 && has(l[0].detail, ABSENT));
    pf_cux_libs_testing_reload(NULL, NULL, NULL);
}

/* A library that is there but lacks the functions (libc here) is not half
 * used: reported with the first missing symbol, tables left empty. */
static void test_incomplete_library_named(void)
{
    pf_cux_libs_testing_reload(NULL, "libc.so.6", NULL);
    CHECK_EQ_INT(pf_cux_libs_require(), PF_ERR_UNSUPPORTED);
    pf_nn_library l[3];
    REQUIRE(pf_nn_libraries(l, 3) == 3);
    CHECK(!l[1].loaded && has(l[1].detail, "lacks cublasGetProperty"));
    CHECK(cublasGemmEx == NULL); /* the slot (dl_libs.h maps the name) */
    pf_cux_libs_testing_reload(NULL, NULL, NULL);
}

/* GPU only ------------------------------------------------------------------------------- */

static pf_device *g_dev;
static char g_model[1200];

static void test_executor_refuses_then_works(void)
{
    pf_model *m = NULL;
    REQUIRE(pf_model_load(g_model, &m) == PF_OK);
    pf_nn_exec_params p = pf_nn_exec_params_default();
    p.device = g_dev;
    pf_nn_exec *x = NULL;

    pf_cux_libs_testing_reload(ABSENT, NULL, NULL);
    CHECK_EQ_INT(pf_nn_exec_create(m, &p, &x), PF_ERR_UNSUPPORTED);
    CHECK(x == NULL && has(pf_last_error(), ABSENT));
    printf("  refused: %s\n", pf_last_error());

    pf_cux_libs_testing_reload(NULL, NULL, NULL);
    if (pf_cux_libs_require() != PF_OK) {
        printf("  cuDNN/cuBLAS not installed here: %s (the working half is not checked)\n",
               pf_last_error());
        pf_model_free(&m);
        return;
    }
    CHECK_OK(pf_nn_exec_create(m, &p, &x));
    CHECK_OK(pf_nn_exec_reserve(x));
    pf_nn_exec_destroy(&x);
    pf_model_free(&m);
}

int main(void)
{
    PF_RUN(test_report);
    PF_RUN(test_missing_library_named);
    PF_RUN(test_incomplete_library_named);

    const char *root = getenv("PF_SOURCE_DIR");
    snprintf(g_model, sizeof g_model, "%s/node_modules/@mediapipe/selfie_segmentation/"
             "selfie_segmentation.tflite", root && *root ? root : ".");
    FILE *f = fopen(g_model, "rb");
    if (pf_device_count(PF_DEVICE_CUDA) == 0 || !f ||
        pf_device_get(PF_DEVICE_CUDA, 0, &g_dev) != PF_OK) {
        printf("no CUDA device or no %s: the executor part is not run\n", g_model);
    } else {
        PF_RUN(test_executor_refuses_then_works);
    }
    if (f) fclose(f);
    return pf_test_finish();
}
