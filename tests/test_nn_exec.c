/* The public nn executor (pf_model + pf_nn_exec on the CPU backend):
 * hand-built graphs with known answers (batch handling, plan cache, dtype
 * staging, argument validation, lifetime), an ONNX conformance case read
 * through pf_nn_read_onnx_tensor, and MediaPipe's selfie segmentation and
 * face detection, whose batch-1 files load batchable (batch 4 == 4 x batch 1;
 * skipped, exit 77, when the npm models are absent and nothing else ran).
 * Float comparisons: exact ops (add, relu, cast) are compared to a C
 * reference within 1e-6; the conformance case within rtol 1e-3/atol 1e-5. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nn/ir.h"
#include "nn/model.h"
#include "pf_test.h"

static bool contains(const char *s, const char *sub) { return s && strstr(s, sub) != NULL; }

/* y = relu(x + b), x [N, 4] (N symbolic unless fixed > 0), b [4]. */
static pf_model *make_add_relu(int64_t fixed)
{
    pf_ir_graph *g = NULL;
    if (pf_ir_graph_create("add_relu", &g) != PF_OK) return NULL;
    int64_t xd[2] = {fixed > 0 ? fixed : PF_IR_DIM_BATCH, 4}, bd[1] = {4};
    float b[4] = {1.0f, -2.0f, 0.5f, -0.25f};
    int x, bias, t, y, node;
    bool ok = pf_ir_add_value(g, "x", PF_IR_F32, 2, xd, &x) == PF_OK &&
              pf_ir_add_const(g, "b", PF_IR_F32, 1, bd, b, sizeof b, &bias) == PF_OK &&
              pf_ir_add_value(g, "t", PF_IR_F32, -1, NULL, &t) == PF_OK &&
              pf_ir_add_value(g, "y", PF_IR_F32, -1, NULL, &y) == PF_OK;
    int in1[2] = {x, bias}, out1[1] = {t}, in2[1] = {t}, out2[1] = {y};
    ok = ok && pf_ir_add_node(g, PF_IR_ADD, "add", "Add", in1, 2, out1, 1, NULL, &node) == PF_OK &&
         pf_ir_add_node(g, PF_IR_RELU, "relu", "Relu", in2, 1, out2, 1, NULL, &node) == PF_OK &&
         pf_ir_mark_input(g, x) == PF_OK && pf_ir_mark_output(g, y) == PF_OK &&
         pf_ir_infer_shapes(g) == PF_OK;
    if (!ok) {
        fprintf(stderr, "  building add_relu: %s\n", pf_last_error());
        pf_ir_graph_destroy(&g);
        return NULL;
    }
    pf_model *m = NULL;
    if (pf_model_from_graph(g, &m) != PF_OK) fprintf(stderr, "  model: %s\n", pf_last_error());
    return m;
}

static float add_relu_ref(float x, int col)
{
    static const float b[4] = {1.0f, -2.0f, 0.5f, -0.25f};
    float v = x + b[col];
    return v > 0 ? v : 0;
}

static void fill(pf_tensor *t, uint32_t seed)
{
    int64_t n = pf_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        float v = (float)((seed >> 8) & 0xffff) / 65535.0f * 6.0f - 3.0f;
        if (t->dtype == PF_DTYPE_F32) ((float *)t->data)[i] = v;
        else if (t->dtype == PF_DTYPE_F16) ((uint16_t *)t->data)[i] = pf_f32_to_f16(v);
    }
}

static float get(const pf_tensor *t, int64_t i)
{
    return t->dtype == PF_DTYPE_F16 ? pf_f16_to_f32(((const uint16_t *)t->data)[i])
                                    : ((const float *)t->data)[i];
}

static void check_add_relu(const pf_tensor *x, const pf_tensor *y, float tol)
{
    int64_t n = pf_tensor_numel(x);
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        /* Round the reference the way an F16 output would be. */
        float want = add_relu_ref(get(x, i), (int)(i % 4));
        if (y->dtype == PF_DTYPE_F16) want = pf_f16_to_f32(pf_f32_to_f16(want));
        if (fabsf(get(y, i) - want) > tol) bad++;
    }
    CHECK_EQ_INT(bad, 0);
}

static void test_batches_and_cache(void)
{
    pf_model *m = make_add_relu(0);
    REQUIRE(m);
    CHECK_EQ_INT(pf_model_num_inputs(m), 1);
    pf_model_io io = pf_model_input(m, 0);
    CHECK(!strcmp(io.name, "x"));
    CHECK_EQ_INT(io.ndim, 2);
    CHECK_EQ_INT(io.shape[0], -1);
    CHECK_EQ_INT(io.shape[1], 4);
    CHECK_EQ_INT(io.dtype, PF_DTYPE_F32);
    CHECK_EQ_INT(pf_model_find_output(m, "y"), 0);
    CHECK_EQ_INT(pf_model_find_output(m, "nope"), -1);
    CHECK(!strcmp(pf_model_input(m, 5).name, ""));

    pf_nn_exec_params p = pf_nn_exec_params_default();
    CHECK_EQ_INT(p.max_batch, 1);
    CHECK(p.cuda_graphs);
    p.max_batch = 4;
    pf_nn_exec *x = NULL;
    CHECK_OK(pf_nn_exec_create(m, &p, &x));
    REQUIRE(x);
    pf_nn_exec_stats s;
    CHECK_OK(pf_nn_exec_get_stats(x, &s));
    CHECK_EQ_INT(s.plans, 0); /* lazy */
    int batches[] = {1, 3, 3, 1, 4};
    for (int k = 0; k < 5; k++) {
        int64_t sh[2] = {batches[k], 4};
        pf_tensor in = {0}, out = {0};
        CHECK_OK(pf_tensor_alloc(&in, PF_DTYPE_F32, 2, sh, PF_LAYOUT_NONE, NULL, NULL));
        CHECK_OK(pf_tensor_alloc(&out, PF_DTYPE_F32, 2, sh, PF_LAYOUT_NONE, NULL, NULL));
        fill(&in, (uint32_t)k + 1);
        CHECK_OK(pf_nn_exec_run(x, NULL, &in, 1, &out, 1));
        check_add_relu(&in, &out, 1e-6f);
        pf_tensor_unref(&in);
        pf_tensor_unref(&out);
    }
    CHECK_OK(pf_nn_exec_get_stats(x, &s));
    CHECK_EQ_INT(s.plans, 3); /* 1, 3, 4: repeated sizes reuse their plan */
    CHECK_EQ_INT(s.runs, 5);
    CHECK_OK(pf_nn_exec_reserve(x));
    CHECK_OK(pf_nn_exec_get_stats(x, &s));
    CHECK_EQ_INT(s.plans, 4);
    /* reserve_batch: a planned size adds nothing; outside 1..max_batch is
     * refused naming the batch; the CPU plans sizes as given (no buckets). */
    CHECK_OK(pf_nn_exec_reserve_batch(x, 2));
    CHECK_OK(pf_nn_exec_get_stats(x, &s));
    CHECK_EQ_INT(s.plans, 4);
    CHECK(pf_nn_exec_reserve_batch(x, 5) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "batch 5") != NULL);
    CHECK(pf_nn_exec_reserve_batch(x, 0) == PF_ERR_INVALID);
    CHECK(pf_nn_exec_reserve_batch(NULL, 1) == PF_ERR_INVALID);
    /* The warm-up is a no-op on the CPU and refuses NULLs. */
    CHECK_OK(pf_nn_warmup(m, &p, 4));
    CHECK(pf_nn_warmup(NULL, &p, 1) == PF_ERR_INVALID);
    CHECK(pf_nn_warmup(m, NULL, 1) == PF_ERR_INVALID);

    pf_nn_node_time t[8];
    int n = 0;
    CHECK_OK(pf_nn_exec_profile(x, 2, t, 8, &n));
    CHECK(n >= 1 && n <= 2); /* add + relu, or add with relu fused */
    for (int i = 0; i < n && i < 8; i++) CHECK(t[i].name && t[i].op && t[i].ms >= 0);
    pf_nn_exec_destroy(&x);
    CHECK(x == NULL);
    pf_nn_exec_destroy(&x);
    pf_model_free(&m);
}

static void test_f16_staging(void)
{
    pf_model *m = make_add_relu(0);
    REQUIRE(m);
    pf_nn_exec_params p = pf_nn_exec_params_default();
    p.max_batch = 2;
    pf_nn_exec *x = NULL;
    CHECK_OK(pf_nn_exec_create(m, &p, &x));
    REQUIRE(x);
    int64_t sh[2] = {2, 4};
    /* f16 in/f32 out, f32 in/f16 out, f16 both */
    pf_dtype combos[3][2] = {{PF_DTYPE_F16, PF_DTYPE_F32}, {PF_DTYPE_F32, PF_DTYPE_F16},
                             {PF_DTYPE_F16, PF_DTYPE_F16}};
    for (int k = 0; k < 3; k++) {
        pf_tensor in = {0}, out = {0};
        CHECK_OK(pf_tensor_alloc(&in, combos[k][0], 2, sh, PF_LAYOUT_NONE, NULL, NULL));
        CHECK_OK(pf_tensor_alloc(&out, combos[k][1], 2, sh, PF_LAYOUT_NONE, NULL, NULL));
        fill(&in, 7u + (uint32_t)k);
        CHECK_OK(pf_nn_exec_run(x, NULL, &in, 1, &out, 1));
        check_add_relu(&in, &out, 1e-6f);
        pf_tensor_unref(&in);
        pf_tensor_unref(&out);
    }
    pf_nn_exec_destroy(&x);
    pf_model_free(&m);
}

static void test_validation(void)
{
    pf_model *m = make_add_relu(0);
    REQUIRE(m);
    pf_nn_exec_params p = pf_nn_exec_params_default();
    p.precision = PF_NN_FP16;
    pf_nn_exec *x = NULL;
    CHECK_EQ_INT(pf_nn_exec_create(m, &p, &x), PF_ERR_UNSUPPORTED);
    CHECK(contains(pf_last_error(), "FP32"));
    CHECK(x == NULL);
    p = pf_nn_exec_params_default();
    p.max_batch = 0;
    CHECK_EQ_INT(pf_nn_exec_create(m, &p, &x), PF_ERR_INVALID);
    p.max_batch = 2;
    CHECK_OK(pf_nn_exec_create(m, &p, &x));
    REQUIRE(x);

    int64_t good[2] = {2, 4}, wide[2] = {2, 5}, big[2] = {3, 4}, flat[1] = {8};
    pf_tensor in = {0}, out = {0}, bad = {0};
    CHECK_OK(pf_tensor_alloc(&in, PF_DTYPE_F32, 2, good, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&out, PF_DTYPE_F32, 2, good, PF_LAYOUT_NONE, NULL, NULL));
    fill(&in, 3);

    /* counts */
    CHECK_EQ_INT(pf_nn_exec_run(x, NULL, &in, 0, &out, 1), PF_ERR_INVALID);
    CHECK(contains(pf_last_error(), "inputs"));
    CHECK_EQ_INT(pf_nn_exec_run(x, NULL, &in, 1, &out, 2), PF_ERR_INVALID);
    /* dtype */
    CHECK_OK(pf_tensor_alloc(&bad, PF_DTYPE_I32, 2, good, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_EQ_INT(pf_nn_exec_run(x, NULL, &bad, 1, &out, 1), PF_ERR_INVALID);
    CHECK(contains(pf_last_error(), "'x'") && contains(pf_last_error(), "i32"));
    CHECK_EQ_INT(pf_nn_exec_run(x, NULL, &in, 1, &bad, 1), PF_ERR_INVALID);
    CHECK(contains(pf_last_error(), "'y'"));
    pf_tensor_unref(&bad);
    /* a non-batch dim */
    CHECK_OK(pf_tensor_alloc(&bad, PF_DTYPE_F32, 2, wide, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_EQ_INT(pf_nn_exec_run(x, NULL, &bad, 1, &out, 1), PF_ERR_INVALID);
    CHECK(contains(pf_last_error(), "'x'") && contains(pf_last_error(), "dim 1 is 5"));
    pf_tensor_unref(&bad);
    /* batch over max_batch */
    CHECK_OK(pf_tensor_alloc(&bad, PF_DTYPE_F32, 2, big, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_EQ_INT(pf_nn_exec_run(x, NULL, &bad, 1, &out, 1), PF_ERR_INVALID);
    CHECK(contains(pf_last_error(), "max_batch"));
    /* output batch disagreeing with the input's */
    CHECK_EQ_INT(pf_nn_exec_run(x, NULL, &in, 1, &bad, 1), PF_ERR_INVALID);
    CHECK(contains(pf_last_error(), "'y'") && contains(pf_last_error(), "dim 0"));
    pf_tensor_unref(&bad);
    /* rank */
    CHECK_OK(pf_tensor_alloc(&bad, PF_DTYPE_F32, 1, flat, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_EQ_INT(pf_nn_exec_run(x, NULL, &bad, 1, &out, 1), PF_ERR_INVALID);
    CHECK(contains(pf_last_error(), "'x'"));
    pf_tensor_unref(&bad);
    /* not contiguous: a column slice of a wider tensor */
    pf_tensor wide_t = {0};
    CHECK_OK(pf_tensor_alloc(&wide_t, PF_DTYPE_F32, 2, wide, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_OK(pf_tensor_slice(&bad, &wide_t, 1, 0, 4));
    CHECK_EQ_INT(pf_nn_exec_run(x, NULL, &bad, 1, &out, 1), PF_ERR_INVALID);
    CHECK(contains(pf_last_error(), "contiguous"));
    pf_tensor_unref(&bad);
    pf_tensor_unref(&wide_t);
    /* output aliasing the input */
    CHECK_EQ_INT(pf_nn_exec_run(x, NULL, &in, 1, &in, 1), PF_ERR_INVALID);
    CHECK(contains(pf_last_error(), "overlaps"));
    /* and the good call still works after all that */
    CHECK_OK(pf_nn_exec_run(x, NULL, &in, 1, &out, 1));
    check_add_relu(&in, &out, 1e-6f);
    pf_tensor_unref(&in);
    pf_tensor_unref(&out);
    pf_nn_exec_destroy(&x);
    pf_model_free(&m);
}

static void test_fixed_batch_and_lifetime(void)
{
    pf_model *m = make_add_relu(2);
    REQUIRE(m);
    CHECK_EQ_INT(pf_model_input(m, 0).shape[0], 2);
    pf_ir_graph *g = NULL;
    CHECK_EQ_INT(pf_model_graph_for_batch(m, 3, &g), PF_ERR_INVALID);
    CHECK(g == NULL);
    CHECK_OK(pf_model_graph_for_batch(m, 2, &g));
    pf_ir_graph_destroy(&g);

    pf_nn_exec_params p = pf_nn_exec_params_default(); /* max_batch 1: a fixed model ignores it */
    pf_nn_exec *x = NULL;
    CHECK_OK(pf_nn_exec_create(m, &p, &x));
    REQUIRE(x);
    pf_model_free(&m); /* the executor keeps the model alive */
    CHECK(m == NULL);
    int64_t sh[2] = {2, 4}, sh1[2] = {1, 4};
    pf_tensor in = {0}, out = {0}, in1 = {0};
    CHECK_OK(pf_tensor_alloc(&in, PF_DTYPE_F32, 2, sh, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&out, PF_DTYPE_F32, 2, sh, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&in1, PF_DTYPE_F32, 2, sh1, PF_LAYOUT_NONE, NULL, NULL));
    fill(&in, 11);
    CHECK_OK(pf_nn_exec_reserve(x));
    CHECK_OK(pf_nn_exec_run(x, NULL, &in, 1, &out, 1));
    check_add_relu(&in, &out, 1e-6f);
    CHECK_EQ_INT(pf_nn_exec_run(x, NULL, &in1, 1, &out, 1), PF_ERR_INVALID);
    CHECK(contains(pf_last_error(), "dim 0 is 1"));
    pf_nn_exec_stats s;
    CHECK_OK(pf_nn_exec_get_stats(x, &s));
    CHECK_EQ_INT(s.plans, 1);
    pf_tensor_unref(&in);
    pf_tensor_unref(&in1);
    pf_tensor_unref(&out);
    pf_nn_exec_destroy(&x);
}

/* x I64 [N, 3] -> Cast(float) -> y: the caller exchanges I64 as I32. */
static void test_i64_input(void)
{
    pf_ir_graph *g = NULL;
    REQUIRE(pf_ir_graph_create("cast", &g) == PF_OK);
    int64_t xd[2] = {PF_IR_DIM_BATCH, 3};
    int xv, yv, node;
    pf_ir_attr at;
    memset(&at, 0, sizeof at);
    at.cast.to = PF_IR_F32;
    bool ok = pf_ir_add_value(g, "ids", PF_IR_I64, 2, xd, &xv) == PF_OK &&
              pf_ir_add_value(g, "f", PF_IR_F32, -1, NULL, &yv) == PF_OK;
    int in[1], out[1];
    in[0] = xv;
    out[0] = yv;
    ok = ok && pf_ir_add_node(g, PF_IR_CAST, "cast", "Cast", in, 1, out, 1, &at, &node) == PF_OK &&
         pf_ir_mark_input(g, xv) == PF_OK && pf_ir_mark_output(g, yv) == PF_OK &&
         pf_ir_infer_shapes(g) == PF_OK;
    if (!ok) pf_ir_graph_destroy(&g);
    REQUIRE(ok);
    pf_model *m = NULL;
    CHECK_OK(pf_model_from_graph(g, &m));
    REQUIRE(m);
    CHECK_EQ_INT(pf_model_input(m, 0).dtype, PF_DTYPE_I32);
    pf_nn_exec *x = NULL;
    CHECK_OK(pf_nn_exec_create(m, NULL, &x));
    REQUIRE(x);
    int64_t sh[2] = {1, 3};
    pf_tensor ti = {0}, to = {0};
    CHECK_OK(pf_tensor_alloc(&ti, PF_DTYPE_I32, 2, sh, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&to, PF_DTYPE_F32, 2, sh, PF_LAYOUT_NONE, NULL, NULL));
    int32_t vals[3] = {-7, 0, 2000000000};
    memcpy(ti.data, vals, sizeof vals);
    CHECK_OK(pf_nn_exec_run(x, NULL, &ti, 1, &to, 1));
    for (int i = 0; i < 3; i++) CHECK(((float *)to.data)[i] == (float)vals[i]);
    /* F32 is not an integer input */
    CHECK_EQ_INT(pf_nn_exec_run(x, NULL, &to, 1, &to, 1), PF_ERR_INVALID);
    CHECK(contains(pf_last_error(), "'ids'"));
    pf_tensor_unref(&ti);
    pf_tensor_unref(&to);
    pf_nn_exec_destroy(&x);
    pf_model_free(&m);
}

static int ran_real;

/* An ONNX conformance case: model + .pb tensors through the public API. */
static void test_onnx_case(void)
{
    const char *dir = "/usr/share/libonnx-testdata/data/node/test_relu";
    char path[512];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("  (skipped: %s absent)\n", path);
        return;
    }
    fclose(f);
    pf_model *m = NULL;
    pf_status st = pf_model_load(path, &m);
    if (st == PF_ERR_UNSUPPORTED && !contains(pf_last_error(), "Relu")) {
        printf("  (skipped: %s)\n", pf_last_error()); /* a build without the ONNX reader */
        return;
    }
    CHECK_OK(st);
    REQUIRE(m);
    ran_real = 1;
    CHECK_EQ_INT(pf_model_get_format(m), PF_MODEL_ONNX);
    pf_model_summary s;
    CHECK_OK(pf_model_get_summary(m, &s));
    CHECK(!strcmp(s.format, "onnx"));
    CHECK_EQ_INT(s.n_nodes_source, 1);
    CHECK_EQ_INT(s.n_op_kinds, 1);
    CHECK(!strcmp(s.ops[0].op, "Relu"));
    pf_tensor in = {0}, want = {0}, out = {0};
    char name[64];
    snprintf(path, sizeof path, "%s/test_data_set_0/input_0.pb", dir);
    CHECK_OK(pf_nn_read_onnx_tensor(path, &in, name, sizeof name));
    CHECK(!strcmp(name, "x"));
    snprintf(path, sizeof path, "%s/test_data_set_0/output_0.pb", dir);
    CHECK_OK(pf_nn_read_onnx_tensor(path, &want, NULL, 0));
    CHECK_EQ_INT(pf_nn_read_onnx_tensor("/nonexistent.pb", &out, NULL, 0), PF_ERR_IO);
    REQUIRE(in.data && want.data);
    CHECK_OK(pf_tensor_alloc(&out, PF_DTYPE_F32, want.ndim, want.shape, PF_LAYOUT_NONE, NULL, NULL));
    pf_nn_exec *x = NULL;
    CHECK_OK(pf_nn_exec_create(m, NULL, &x));
    CHECK_OK(pf_nn_exec_run(x, NULL, &in, 1, &out, 1));
    int64_t n = pf_tensor_numel(&out), bad = 0;
    for (int64_t i = 0; i < n; i++) {
        float g = ((float *)out.data)[i], w = ((float *)want.data)[i];
        if (fabsf(g - w) > 1e-5f + 1e-3f * fabsf(w)) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    pf_tensor_unref(&in);
    pf_tensor_unref(&want);
    pf_tensor_unref(&out);
    pf_nn_exec_destroy(&x);
    pf_model_free(&m);
}

static const char *mediapipe_path(char *buf, size_t size, const char *rel)
{
    const char *root = getenv("PF_SOURCE_DIR");
    snprintf(buf, size, "%s/node_modules/@mediapipe/%s", root ? root : "/work/main", rel);
    FILE *f = fopen(buf, "rb");
    if (!f) return NULL;
    fclose(f);
    return buf;
}

/* params.memory_cap on the CPU: a plan whose arena + scratch + staging
 * exceed it fails with PF_ERR_NOMEM naming the sizes; a generous cap runs.
 * First a small graph whose F16 I/O needs staging beyond the cap; then the
 * selfie model, whose arena alone is over 64 KiB. */
static void test_cpu_memory_cap(void)
{
    pf_model *am = make_add_relu(0);
    REQUIRE(am);
    int64_t sh[2] = {512, 4};
    pf_tensor hx = {0}, hy = {0};
    CHECK_OK(pf_tensor_alloc(&hx, PF_DTYPE_F16, 2, sh, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&hy, PF_DTYPE_F16, 2, sh, PF_LAYOUT_NONE, NULL, NULL));
    memset(hx.data, 0, pf_tensor_nbytes(&hx));
    for (int k = 0; k < 2; k++) {
        pf_nn_exec_params p = pf_nn_exec_params_default();
        /* x and y staged F16 <-> F32: 2 x 8 KiB; the sums live in y */
        p.memory_cap = k ? (size_t)1 << 20 : (size_t)12 << 10;
        p.max_batch = 512;
        pf_nn_exec *x = NULL;
        CHECK_OK(pf_nn_exec_create(am, &p, &x));
        REQUIRE(x);
        pf_status st = pf_nn_exec_run(x, NULL, &hx, 1, &hy, 1);
        if (k) {
            CHECK_OK(st);
        } else {
            CHECK_EQ_INT(st, PF_ERR_NOMEM);
            printf("  %s\n", pf_last_error());
            CHECK(strstr(pf_last_error(), "0 B of arena + 0 B of scratch + 16384 B of I/O "
                                          "staging, over the executor's memory_cap of 12288 B"));
        }
        pf_nn_exec_destroy(&x);
    }
    pf_tensor_unref(&hx);
    pf_tensor_unref(&hy);
    pf_model_free(&am);

    char path[1024];
    if (!mediapipe_path(path, sizeof path, "selfie_segmentation/selfie_segmentation.tflite")) {
        printf("  (skipped: MediaPipe models absent)\n");
        return;
    }
    pf_model *m = NULL;
    CHECK_OK(pf_model_load(path, &m));
    REQUIRE(m);
    int64_t ish[4] = {1, 256, 256, 3}, osh[4] = {1, 256, 256, 1};
    pf_tensor in = {0}, out = {0};
    CHECK_OK(pf_tensor_alloc(&in, PF_DTYPE_F32, 4, ish, PF_LAYOUT_NHWC, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&out, PF_DTYPE_F32, 4, osh, PF_LAYOUT_NHWC, NULL, NULL));
    fill(&in, 7);
    for (int k = 0; k < 2; k++) {
        pf_nn_exec_params p = pf_nn_exec_params_default();
        p.memory_cap = k ? (size_t)1 << 30 : (size_t)64 << 10;
        pf_nn_exec *x = NULL;
        CHECK_OK(pf_nn_exec_create(m, &p, &x));
        REQUIRE(x);
        pf_status st = pf_nn_exec_run(x, NULL, &in, 1, &out, 1);
        if (k) {
            CHECK_OK(st);
        } else {
            CHECK_EQ_INT(st, PF_ERR_NOMEM);
            CHECK(strstr(pf_last_error(), "memory_cap of 65536 B") != NULL);
        }
        pf_nn_exec_destroy(&x);
    }
    pf_tensor_unref(&in);
    pf_tensor_unref(&out);
    pf_model_free(&m);
}

static void test_selfie_segmentation(void)
{
    char path[1024];
    if (!mediapipe_path(path, sizeof path, "selfie_segmentation/selfie_segmentation.tflite")) {
        printf("  (skipped: MediaPipe models absent)\n");
        return;
    }
    ran_real = 1;
    pf_model *m = NULL;
    CHECK_OK(pf_model_load(path, &m));
    REQUIRE(m);
    CHECK_EQ_INT(pf_model_get_format(m), PF_MODEL_TFLITE);
    REQUIRE(pf_model_num_inputs(m) == 1 && pf_model_num_outputs(m) >= 1);
    pf_model_io ii = pf_model_input(m, 0), oo = pf_model_output(m, 0);
    CHECK_EQ_INT(ii.ndim, 4);
    CHECK_EQ_INT(ii.shape[1], 256);
    CHECK_EQ_INT(ii.shape[2], 256);
    CHECK_EQ_INT(ii.shape[3], 3);
    CHECK_EQ_INT(ii.layout, PF_LAYOUT_NHWC);
    CHECK_EQ_INT(oo.ndim, 4);
    CHECK_EQ_INT(oo.shape[3], 1);
    pf_model_summary s;
    CHECK_OK(pf_model_get_summary(m, &s));
    CHECK(!strcmp(s.format, "tflite"));
    CHECK(s.flops > 1e8);  /* ~0.1-1 GFLOP network */
    CHECK(s.n_params > 1e4);
    CHECK(s.arena_bytes > 0 && s.arena_bytes <= s.naive_bytes);

    pf_nn_exec *x = NULL;
    CHECK_OK(pf_nn_exec_create(m, NULL, &x));
    REQUIRE(x);
    int64_t ish[4] = {1, 256, 256, 3}, osh[4] = {1, 256, 256, 1};
    pf_tensor in = {0}, out = {0};
    CHECK_OK(pf_tensor_alloc(&in, PF_DTYPE_F32, 4, ish, PF_LAYOUT_NHWC, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&out, PF_DTYPE_F32, 4, osh, PF_LAYOUT_NHWC, NULL, NULL));
    /* A bright ellipse ("a head") on a dark gradient. */
    float *px = in.data;
    for (int y = 0; y < 256; y++)
        for (int xx = 0; xx < 256; xx++) {
            float dx = (xx - 128) / 60.0f, dy = (y - 110) / 80.0f;
            bool inside = dx * dx + dy * dy < 1.0f;
            for (int c = 0; c < 3; c++)
                px[(y * 256 + xx) * 3 + c] = inside ? 0.8f - 0.1f * c : 0.1f + 0.2f * y / 255.0f;
        }
    CHECK_OK(pf_nn_exec_run(x, NULL, &in, 1, &out, 1));
    int64_t n = pf_tensor_numel(&out), outside = 0;
    float mn = 1e9f, mx = -1e9f;
    for (int64_t i = 0; i < n; i++) {
        float v = ((float *)out.data)[i];
        if (!(v >= 0.0f && v <= 1.0f)) outside++;
        if (v < mn) mn = v;
        if (v > mx) mx = v;
    }
    CHECK_EQ_INT(outside, 0);
    printf("  selfie mask range [%.4f, %.4f]\n", mn, mx);
    pf_nn_exec_stats st;
    CHECK_OK(pf_nn_exec_get_stats(x, &st));
    CHECK(st.arena_bytes > 0);
    CHECK(st.last_run_ms > 0);
    printf("  selfie run %.2f ms, arena %zu B\n", st.last_run_ms, st.arena_bytes);
    /* The file fixes the batch at 1, but the model is fully convolutional,
     * so it loads with a symbolic batch; beyond max_batch (1 here) a batch
     * is refused, naming the input. */
    CHECK_EQ_INT(ii.shape[0], -1);
    CHECK_EQ_INT(oo.shape[0], -1);
    int64_t ish2[4] = {2, 256, 256, 3};
    pf_tensor in2 = {0};
    CHECK_OK(pf_tensor_alloc(&in2, PF_DTYPE_F32, 4, ish2, PF_LAYOUT_NHWC, NULL, NULL));
    CHECK_EQ_INT(pf_nn_exec_run(x, NULL, &in2, 1, &out, 1), PF_ERR_INVALID);
    CHECK(contains(pf_last_error(), ii.name));
    pf_tensor_unref(&in2);
    pf_tensor_unref(&in);
    pf_tensor_unref(&out);
    pf_nn_exec_destroy(&x);
    pf_model_free(&m);
}

/* A batch-1 TFLite file made batchable at load: one run at batch 4 must
 * equal four runs at batch 1, output by output (within 1e-6: the kernels
 * are the same, only the work split over threads may differ). */
static void check_batch_equals_singles(const char *rel, float lo, float hi)
{
    char path[1024];
    if (!mediapipe_path(path, sizeof path, rel)) {
        printf("  (skipped: %s absent)\n", rel);
        return;
    }
    ran_real = 1;
    enum { B = 4, MAXOUT = 4 };
    pf_model *m = NULL;
    CHECK_OK(pf_model_load(path, &m));
    REQUIRE(m);
    int n_out = pf_model_num_outputs(m);
    REQUIRE(pf_model_num_inputs(m) == 1 && n_out >= 1 && n_out <= MAXOUT);
    pf_model_io ii = pf_model_input(m, 0);
    CHECK_EQ_INT(ii.shape[0], -1);
    pf_nn_exec_params p = pf_nn_exec_params_default();
    p.max_batch = B;
    pf_nn_exec *x = NULL;
    CHECK_OK(pf_nn_exec_create(m, &p, &x));
    REQUIRE(x);
    int64_t shb[PF_NN_MAX_DIMS], sh1[PF_NN_MAX_DIMS];
    pf_tensor in = {0}, in1 = {0}, outb[MAXOUT] = {{0}}, out1[MAXOUT] = {{0}};
    memcpy(shb, ii.shape, sizeof shb);
    shb[0] = B;
    memcpy(sh1, ii.shape, sizeof sh1);
    sh1[0] = 1;
    CHECK_OK(pf_tensor_alloc(&in, PF_DTYPE_F32, ii.ndim, shb, ii.layout, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&in1, PF_DTYPE_F32, ii.ndim, sh1, ii.layout, NULL, NULL));
    int64_t n_in1 = pf_tensor_numel(&in1);
    uint32_t seed = 12345u;
    for (int64_t i = 0; i < n_in1 * B; i++) {
        seed = seed * 1664525u + 1013904223u;
        ((float *)in.data)[i] = lo + (hi - lo) * (float)((seed >> 8) & 0xffff) / 65535.0f;
    }
    for (int k = 0; k < n_out; k++) {
        pf_model_io oo = pf_model_output(m, k);
        CHECK_EQ_INT(oo.shape[0], -1);
        memcpy(shb, oo.shape, sizeof shb);
        shb[0] = B;
        memcpy(sh1, oo.shape, sizeof sh1);
        sh1[0] = 1;
        CHECK_OK(pf_tensor_alloc(&outb[k], PF_DTYPE_F32, oo.ndim, shb, oo.layout, NULL, NULL));
        CHECK_OK(pf_tensor_alloc(&out1[k], PF_DTYPE_F32, oo.ndim, sh1, oo.layout, NULL, NULL));
    }
    CHECK_OK(pf_nn_exec_run(x, NULL, &in, 1, outb, n_out));
    double worst = 0;
    int64_t bad = 0;
    for (int b = 0; b < B; b++) {
        memcpy(in1.data, (const float *)in.data + b * n_in1, (size_t)n_in1 * sizeof(float));
        CHECK_OK(pf_nn_exec_run(x, NULL, &in1, 1, out1, n_out));
        for (int k = 0; k < n_out; k++) {
            int64_t n1 = pf_tensor_numel(&out1[k]);
            const float *want = out1[k].data, *got = (const float *)outb[k].data + b * n1;
            for (int64_t i = 0; i < n1; i++) {
                double d = fabs((double)got[i] - want[i]);
                if (d > worst) worst = d;
                if (!(d <= 1e-6)) bad++;
            }
        }
    }
    CHECK_EQ_INT(bad, 0);
    printf("  %s: batch %d vs %d x batch 1: max |diff| %.3g over %d outputs\n", rel, B, B, worst,
           n_out);
    pf_nn_exec_stats st;
    CHECK_OK(pf_nn_exec_get_stats(x, &st));
    CHECK_EQ_INT(st.plans, 2);
    for (int k = 0; k < n_out; k++) {
        pf_tensor_unref(&outb[k]);
        pf_tensor_unref(&out1[k]);
    }
    pf_tensor_unref(&in);
    pf_tensor_unref(&in1);
    pf_nn_exec_destroy(&x);
    pf_model_free(&m);
}

static void test_tflite_batching(void)
{
    check_batch_equals_singles("selfie_segmentation/selfie_segmentation.tflite", 0.0f, 1.0f);
    /* Has RESHAPE to [1, 896, 16] and [1, 896, 1]: the 1 must follow the batch. */
    check_batch_equals_singles("face_detection/face_detection_short_range.tflite", -1.0f, 1.0f);
}

static void test_load_errors(void)
{
    pf_model *m = NULL;
    CHECK_EQ_INT(pf_model_load("/nonexistent/model.onnx", &m), PF_ERR_IO);
    CHECK(contains(pf_last_error(), "/nonexistent/model.onnx"));
    CHECK(m == NULL);
    static const unsigned char junk[16] = {0x10, 0, 0, 0, 'T', 'F', 'L', '3', 1, 2, 3};
    pf_status st = pf_model_load_memory(junk, sizeof junk, "junk.tflite", &m);
    CHECK(st == PF_ERR_FORMAT);
    CHECK(contains(pf_last_error(), "junk.tflite"));
    CHECK(m == NULL);
    pf_model_free(&m);
    CHECK(pf_model_num_inputs(NULL) == 0);
}

int main(void)
{
    PF_RUN(test_load_errors);
    PF_RUN(test_batches_and_cache);
    PF_RUN(test_f16_staging);
    PF_RUN(test_validation);
    PF_RUN(test_fixed_batch_and_lifetime);
    PF_RUN(test_i64_input);
    PF_RUN(test_onnx_case);
    PF_RUN(test_selfie_segmentation);
    PF_RUN(test_cpu_memory_cap);
    PF_RUN(test_tflite_batching);
    return pf_test_finish();
}
