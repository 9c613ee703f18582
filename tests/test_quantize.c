/* Post-training quantization (src/nn/calib*.c, quantize*.c, the observer
 * hook in exec.c):
 *  - the observer: an observed run gives the same outputs as a plain run,
 *    hands over the named intermediate (a conv's fused-ReLU output: >= 0,
 *    the right shape, equal to the value computed by a model whose output it
 *    is) and skips unknown names; plain runs still work afterwards;
 *  - the range methods on known histograms: percentile of a uniform
 *    histogram, entropy keeps the whole range of a uniform histogram and
 *    clips the sparse tail of a peaked one;
 *  - pf_model_quantize on the MediaPipe selfie model with astronaut.png: the
 *    QDQ file (read back with our ONNX reader) has int8 per-channel weights
 *    with scale = max|w| / 127 of the source weights, every quantized conv
 *    reads a DequantizeLinear on both inputs, no float copy of a quantized
 *    weight is left; the simulated file loads in pixflow and its mask on
 *    messi5.jpg agrees with FP32 (IoU of mask > 0.5 >= 0.8), and so does
 *    the QDQ file run by pixflow where this build imports Q/DQ;
 *  - refusals naming the field: no images, percentile 0, a model without an
 *    image input.
 * Skips (77) without the selfie model or the images. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nn/exec_observe.h"
#include "nn/model.h"
#include "nn/onnx_reader.h"
#include "nn/quantize.h"
#include "pf_test.h"

static char g_root[1024], g_tmp[256];

static bool exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* x[N,2,4,4] -> conv 3x3 (fused ReLU) -> "mid" -> conv 1x1 -> "out". */
static pf_ir_graph *two_convs(bool mid_is_output)
{
    pf_ir_graph *g = NULL;
    if (pf_ir_graph_create("two_convs", &g)) return NULL;
    int64_t xd[4] = {PF_IR_DIM_BATCH, 2, 4, 4}, w1d[4] = {3, 2, 3, 3}, w2d[4] = {2, 3, 1, 1};
    float w1[54], w2[6];
    for (int i = 0; i < 54; i++) w1[i] = (float)((i * 5) % 9 - 4) / 4.0f;
    for (int i = 0; i < 6; i++) w2[i] = (float)(i - 2) / 3.0f;
    int x, a, b, mid, out;
    pf_ir_add_value(g, "x", PF_IR_F32, 4, xd, &x);
    pf_ir_add_const(g, "w1", PF_IR_F32, 4, w1d, w1, sizeof w1, &a);
    pf_ir_add_const(g, "w2", PF_IR_F32, 4, w2d, w2, sizeof w2, &b);
    pf_ir_add_value(g, "mid", PF_IR_F32, -1, NULL, &mid);
    pf_ir_add_value(g, "out", PF_IR_F32, -1, NULL, &out);
    pf_ir_attr at;
    memset(&at, 0, sizeof at);
    at.conv.nsp = 2;
    at.conv.kernel[0] = at.conv.kernel[1] = 3;
    at.conv.stride[0] = at.conv.stride[1] = at.conv.dilation[0] = at.conv.dilation[1] = 1;
    at.conv.pad_begin[0] = at.conv.pad_begin[1] = at.conv.pad_end[0] = at.conv.pad_end[1] = 1;
    at.conv.group = 1;
    int in1[2] = {x, a}, in2[2] = {mid, b}, node;
    pf_ir_add_node(g, PF_IR_CONV, "c1", "Conv", in1, 2, &mid, 1, &at, &node);
    g->nodes[node].act = PF_IR_ACT_RELU;
    at.conv.kernel[0] = at.conv.kernel[1] = 1;
    at.conv.pad_begin[0] = at.conv.pad_begin[1] = at.conv.pad_end[0] = at.conv.pad_end[1] = 0;
    pf_ir_add_node(g, PF_IR_CONV, "c2", "Conv", in2, 2, &out, 1, &at, NULL);
    pf_ir_mark_input(g, x);
    pf_ir_mark_output(g, out);
    if (mid_is_output) pf_ir_mark_output(g, mid);
    if (pf_ir_infer_shapes(g)) pf_ir_graph_destroy(&g);
    return g;
}

typedef struct seen {
    int calls;
    pf_tensor t;
} seen;

static void on_value(void *user, const char *name, const pf_tensor *t)
{
    seen *s = user;
    s->calls++;
    if (strcmp(name, "mid") != 0) return;
    pf_tensor_unref(&s->t);
    if (pf_tensor_alloc(&s->t, PF_DTYPE_F32, t->ndim, t->shape, PF_LAYOUT_NONE, NULL, NULL) == PF_OK)
        memcpy(s->t.data, t->data, pf_tensor_nbytes(t));
}

static void test_observer(void)
{
    pf_model *m = NULL, *ref = NULL;
    CHECK_OK(pf_model_from_graph(two_convs(false), &m));
    CHECK_OK(pf_model_from_graph(two_convs(true), &ref));
    REQUIRE(m && ref);
    int64_t xs[4] = {2, 2, 4, 4}, os[4] = {2, 2, 4, 4}, ms[4] = {2, 3, 4, 4};
    pf_tensor x, o1, o2, r[2];
    CHECK_OK(pf_tensor_alloc(&x, PF_DTYPE_F32, 4, xs, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&o1, PF_DTYPE_F32, 4, os, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&o2, PF_DTYPE_F32, 4, os, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&r[0], PF_DTYPE_F32, 4, os, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&r[1], PF_DTYPE_F32, 4, ms, PF_LAYOUT_NONE, NULL, NULL));
    float *xp = x.data;
    for (int i = 0; i < 64; i++) xp[i] = (float)((int)(pf_test_rand() % 201) - 100) / 50.0f;
    pf_nn_exec_params p = pf_nn_exec_params_default();
    p.max_batch = 2;
    pf_nn_exec *ex = NULL, *er = NULL;
    CHECK_OK(pf_nn_exec_create(m, &p, &ex));
    CHECK_OK(pf_nn_exec_create(ref, &p, &er));
    REQUIRE(ex && er);
    CHECK_OK(pf_nn_exec_run(ex, NULL, &x, 1, &o1, 1));
    seen s;
    memset(&s, 0, sizeof s);
    const char *names[] = {"mid", "no_such_value", "x"};
    CHECK_OK(pf_nn_exec_run_observed(ex, &x, 1, &o2, 1, names, 3, on_value, &s));
    CHECK_EQ_INT(s.calls, 1); /* "x" is a graph input, the other unknown */
    CHECK(!memcmp(o1.data, o2.data, pf_tensor_nbytes(&o1)));
    CHECK_OK(pf_nn_exec_run(er, NULL, &x, 1, r, 2));
    CHECK(s.t.data && s.t.ndim == 4 && s.t.shape[0] == 2 && s.t.shape[1] == 3);
    if (s.t.data && pf_tensor_nbytes(&s.t) == pf_tensor_nbytes(&r[1])) {
        CHECK(!memcmp(s.t.data, r[1].data, pf_tensor_nbytes(&r[1])));
        bool nonneg = true;
        for (int64_t k = 0; k < pf_tensor_numel(&s.t); k++) nonneg &= ((float *)s.t.data)[k] >= 0;
        CHECK(nonneg);
    }
    /* Plain runs after an observed one: unchanged. */
    memset(o2.data, 0, pf_tensor_nbytes(&o2));
    CHECK_OK(pf_nn_exec_run(ex, NULL, &x, 1, &o2, 1));
    CHECK(!memcmp(o1.data, o2.data, pf_tensor_nbytes(&o1)));
    pf_tensor_unref(&s.t);
    pf_tensor_unref(&x);
    pf_tensor_unref(&o1);
    pf_tensor_unref(&o2);
    pf_tensor_unref(&r[0]);
    pf_tensor_unref(&r[1]);
    pf_nn_exec_destroy(&ex);
    pf_nn_exec_destroy(&er);
    pf_model_free(&m);
    pf_model_free(&ref);
}

static void test_methods(void)
{
    uint64_t *h = calloc(PF_CALIB_BINS, sizeof *h);
    REQUIRE(h);
    for (int i = 0; i < PF_CALIB_BINS; i++) h[i] = 100;
    double w = 1.0 / PF_CALIB_BINS;
    CHECK(fabs(pf_calib_percentile_amax(h, PF_CALIB_BINS, w, 50) - 0.5) < 2 * w);
    CHECK(fabs(pf_calib_percentile_amax(h, PF_CALIB_BINS, w, 100) - 1.0) < 1e-9);
    /* Uniform: nothing to gain by clipping, entropy keeps (almost) all. */
    CHECK(pf_calib_entropy_amax(h, PF_CALIB_BINS, w) > 0.9);
    /* Peaked at small values with a sparse tail of single counts: clipped. */
    for (int i = 0; i < PF_CALIB_BINS; i++) h[i] = i < 200 ? 100000 / (1 + i) : (i % 97 == 0);
    double e = pf_calib_entropy_amax(h, PF_CALIB_BINS, w);
    CHECK(e >= 128 * w && e < 0.5);
    /* Minmax and percentile through pf_calib. */
    pf_calib c;
    const char *names[] = {"t"};
    CHECK_OK(pf_calib_init(&c, names, 1));
    float v[5] = {-3, 0.5f, 1, 2, -0.25f};
    pf_calib_observe(&c, &c.t[0], v, 5);
    CHECK_OK(pf_calib_begin_histograms(&c));
    pf_calib_observe(&c, &c.t[0], v, 5);
    pf_calib_finish(&c, PF_QUANT_MINMAX, 99.99);
    CHECK(c.t[0].amax == 3);
    pf_calib_finish(&c, PF_QUANT_PERCENTILE, 50);
    CHECK(c.t[0].amax > 0.9 && c.t[0].amax < 1.1);
    pf_calib_free(&c);
    free(h);
}

static const pf_onnx_node *producer_of(const pf_onnx_model *m, const char *v)
{
    int slot;
    int i = pf_onnx_find_producer(m, v, &slot);
    return i < 0 ? NULL : &m->nodes[i];
}

/* The QDQ file's structure, and weight scales against the source model. */
static void check_qdq(const char *path, const pf_model *src, int want_weights)
{
    pf_onnx_model *m = NULL;
    CHECK_OK(pf_onnx_open(path, &m));
    if (!m) return;
    CHECK(m->opset == 17);
    int convs_q = 0, weights_ok = 0, q = 0, dq = 0;
    for (size_t i = 0; i < m->n_nodes; i++) {
        const pf_onnx_node *n = &m->nodes[i];
        q += !strcmp(n->op_type, "QuantizeLinear");
        dq += !strcmp(n->op_type, "DequantizeLinear");
        if (strcmp(n->op_type, "Conv") != 0) continue;
        const pf_onnx_node *px = producer_of(m, n->inputs[0]), *pw = producer_of(m, n->inputs[1]);
        if (!pw) {
            /* A float conv (1x1 maps): its weight is a float initializer. */
            const pf_onnx_tensor *t = pf_onnx_find_initializer(m, n->inputs[1]);
            CHECK(t && t->dtype == PF_ONNX_FLOAT);
            continue;
        }
        convs_q++;
        CHECK(px && !strcmp(px->op_type, "DequantizeLinear"));
        CHECK(!strcmp(pw->op_type, "DequantizeLinear"));
        const pf_onnx_attr *ax = pf_onnx_node_attr(pw, "axis");
        CHECK(ax && ax->i == 0);
        const pf_onnx_tensor *wq = pf_onnx_find_initializer(m, pw->inputs[0]);
        const pf_onnx_tensor *ws = pf_onnx_find_initializer(m, pw->inputs[1]);
        CHECK(wq && wq->dtype == PF_ONNX_INT8 && ws && ws->dtype == PF_ONNX_FLOAT);
        if (!wq || !ws || ws->ndim != 1) continue;
        /* The source weight: the DQ's output is "<weight>/dequantized". */
        char name[512];
        snprintf(name, sizeof name, "%s", pw->outputs[0]);
        char *cut = strstr(name, "/dequantized");
        if (cut) *cut = 0;
        CHECK(pf_onnx_find_initializer(m, name) == NULL); /* the float copy is gone */
        const pf_ir_graph *g = pf_model_graph(src);
        for (int v = 0; v < g->n_values; v++) {
            if (strcmp(g->values[v].name, name) != 0 || !g->values[v].data) continue;
            const float *x = g->values[v].data;
            const float *s = ws->data;
            const int8_t *qv = wq->data;
            int64_t ch = g->values[v].dims[0], inner = pf_ir_value_numel(&g->values[v]) / ch;
            bool ok = ch == ws->dims[0];
            for (int64_t c = 0; ok && c < ch; c++) {
                float mx = 0;
                for (int64_t k = 0; k < inner; k++) mx = fmaxf(mx, fabsf(x[c * inner + k]));
                float want = mx > 0 ? mx / 127.0f : 1.0f;
                ok = fabsf(s[c] - want) <= 1e-6f * want;
                for (int64_t k = 0; ok && k < inner; k++)
                    ok = fabsf(qv[c * inner + k] * s[c] - x[c * inner + k]) <= 0.5f * s[c] * 1.0001f;
            }
            weights_ok += ok;
        }
    }
    printf("  %s: %d Q, %d DQ, %d int8 convs, %d weights checked\n", path, q, dq, convs_q, weights_ok);
    CHECK(convs_q > 10);
    CHECK_EQ_INT(weights_ok, convs_q);
    CHECK(want_weights >= convs_q);
    pf_onnx_close(&m);
}

static double mask_iou(pf_model *a, pf_model *b, const char *image)
{
    pf_quant_params p = pf_quant_params_default();
    p.calib = image;
    pf_quant_compare r;
    if (pf_model_compare(a, b, &p, &r) != PF_OK) return -1;
    return r.n_outputs == 1 && r.outputs[0].segmentation ? r.outputs[0].miou : -1;
}

static void test_selfie(void)
{
    char model[1200], astro[1100], messi[1100], qdq[300], sim[300];
    snprintf(model, sizeof model, "%s/node_modules/@mediapipe/selfie_segmentation/"
             "selfie_segmentation.tflite", g_root);
    snprintf(astro, sizeof astro, "%s/.data/astronaut.png", g_root);
    snprintf(messi, sizeof messi, "%s/.data/messi5.jpg", g_root);
    snprintf(qdq, sizeof qdq, "%s/selfie_qdq.onnx", g_tmp);
    snprintf(sim, sizeof sim, "%s/selfie_sim.onnx", g_tmp);
    pf_model *m = NULL, *s = NULL;
    CHECK_OK(pf_model_load(model, &m));
    REQUIRE(m);
    pf_quant_params p = pf_quant_params_default();
    p.calib = astro;
    pf_quant_report r;
    CHECK_OK(pf_model_quantize(m, &p, qdq, &r));
    CHECK_EQ_INT(r.images, 1);
    CHECK(r.nodes > 10 && r.weights == r.nodes && r.activations > 10 && r.residual_adds > 0);
    CHECK(strstr(r.norm, "[0,1]") != NULL && strstr(r.norm, "NHWC 256x256") != NULL);
    check_qdq(qdq, m, r.weights);
    p.simulate = true;
    CHECK_OK(pf_model_quantize(m, &p, sim, &r));
    CHECK_OK(pf_model_load(sim, &s));
    if (s) {
        double iou = mask_iou(m, s, messi);
        printf("  simulated int8 vs FP32 on messi5.jpg: mask IoU %.4f\n", iou);
        CHECK(iou >= 0.8);
        CHECK(mask_iou(m, m, messi) == 1.0);
    }
    pf_model_free(&s);
    /* The QDQ file itself, where this build imports Q/DQ (pixflow's int8
     * CPU path): the same agreement as the simulation. */
    pf_model *q = NULL;
    if (pf_model_load(qdq, &q) == PF_OK) {
        double iou = mask_iou(m, q, messi);
        printf("  QDQ file run by pixflow vs FP32 on messi5.jpg: mask IoU %.4f\n", iou);
        CHECK(iou >= 0.8);
    } else {
        printf("  this build does not import the QDQ file (%s): its run skipped\n", pf_last_error());
    }
    pf_model_free(&q);
    pf_model_free(&m);
}

static void test_refusals(void)
{
    char model[1200], empty[300], out[300];
    snprintf(model, sizeof model, "%s/node_modules/@mediapipe/selfie_segmentation/"
             "selfie_segmentation.tflite", g_root);
    snprintf(empty, sizeof empty, "%s/empty", g_tmp);
    snprintf(out, sizeof out, "%s/never.onnx", g_tmp);
    mkdir(empty, 0755);
    pf_model *m = NULL;
    CHECK_OK(pf_model_load(model, &m));
    REQUIRE(m);
    pf_quant_params p = pf_quant_params_default();
    p.calib = empty;
    CHECK_EQ_INT(pf_model_quantize(m, &p, out, NULL), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), empty) != NULL);
    p.calib = "/nonexistent/*.png";
    CHECK_EQ_INT(pf_model_quantize(m, &p, out, NULL), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "/nonexistent/*.png") != NULL);
    p.calib = empty;
    p.percentile = 0;
    CHECK_EQ_INT(pf_model_quantize(m, &p, out, NULL), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "percentile") != NULL);
    CHECK(!exists(out));
    pf_model_free(&m);
    /* No image input: the synthetic 2-channel graph. */
    CHECK_OK(pf_model_from_graph(two_convs(false), &m));
    p = pf_quant_params_default();
    p.calib = empty;
    CHECK_EQ_INT(pf_model_quantize(m, &p, out, NULL), PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "3 channels") != NULL);
    pf_model_free(&m);
}

int main(void)
{
    const char *src = getenv("PF_SOURCE_DIR");
    snprintf(g_root, sizeof g_root, "%s", src ? src : ".");
    snprintf(g_tmp, sizeof g_tmp, "/tmp/pf_quantize_XXXXXX");
    if (!mkdtemp(g_tmp)) return 1;
    pf_test_seed(18);
    PF_RUN(test_observer);
    PF_RUN(test_methods);
    char model[1200], astro[1100];
    snprintf(model, sizeof model, "%s/node_modules/@mediapipe/selfie_segmentation/"
             "selfie_segmentation.tflite", g_root);
    snprintf(astro, sizeof astro, "%s/.data/astronaut.png", g_root);
    bool have = exists(model) && exists(astro);
    if (have) {
        PF_RUN(test_selfie);
        PF_RUN(test_refusals);
    } else {
        printf("selfie model or .data images absent: the model cases skipped\n");
    }
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_tmp);
    int rc = pf_test_finish();
    return rc ? rc : have ? 0 : 77;
}
