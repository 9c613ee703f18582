/* The ONNX writer (src/nn/onnx_writer*.c): models imported from TFLite
 * (MediaPipe selfie segmentation, square and landscape; the short-range face
 * detector) and from ONNX (libonnx-testdata node models covering conv,
 * conv-transpose, pooling, gemm, matmul, softmax, split, depth-to-space,
 * reduce, flatten, ...; Resize, Pad, Reshape, Clip and fused activations
 * come with the MediaPipe models and a graph built here)
 * are written back as ONNX, read again by our own importer and run on the
 * CPU on the same random inputs: every output must equal the source
 * model's within float rounding (max |d| <= 1e-5 * (1 + max |ref|)).
 * Symbolic-batch models run at batch 2, so the written dim_param really
 * carries the batch. The written files are also checked by Debian's
 * python3-onnx, onnx.checker.check_model(full_check=True) (shape inference
 * included), when /usr/bin/python3 has the module (else that part is
 * skipped and said so). Skips (77) when no model is present. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nn/model.h"
#include "nn/onnx_writer.h"
#include "pf_test.h"

static char g_root[1024], g_tmp[256];
static int g_models, g_written;

static bool exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

static void fill_inputs(pf_model *m, int64_t batch, pf_tensor *t, int n)
{
    for (int i = 0; i < n; i++) {
        pf_model_io io = pf_model_input(m, i);
        int64_t shape[PF_NN_MAX_DIMS];
        for (int d = 0; d < io.ndim; d++) shape[d] = io.shape[d] < 0 ? batch : io.shape[d];
        pf_dtype dt = io.dtype == PF_DTYPE_F32 ? PF_DTYPE_F32 : io.dtype;
        CHECK_OK(pf_tensor_alloc(&t[i], dt, io.ndim, shape, PF_LAYOUT_NONE, NULL, NULL));
        if (dt == PF_DTYPE_F32) {
            float *p = t[i].data;
            for (int64_t k = 0; k < pf_tensor_numel(&t[i]); k++)
                p[k] = (float)((int64_t)(pf_test_rand() % 2001) - 1000) / 1000.0f;
        } else {
            memset(t[i].data, 0, pf_tensor_nbytes(&t[i]));
        }
    }
}

/* Runs m on `in` into freshly allocated F32 outputs. */
static pf_status run(pf_model *m, int64_t batch, const pf_tensor *in, pf_tensor *out)
{
    pf_nn_exec_params p = pf_nn_exec_params_default();
    p.max_batch = (int)batch;
    pf_nn_exec *x = NULL;
    pf_status st = pf_nn_exec_create(m, &p, &x);
    if (st) return st;
    int no = pf_model_num_outputs(m);
    for (int i = 0; i < no && st == PF_OK; i++) {
        pf_model_io io = pf_model_output(m, i);
        int64_t shape[PF_NN_MAX_DIMS];
        for (int d = 0; d < io.ndim; d++) shape[d] = io.shape[d] < 0 ? batch : io.shape[d];
        st = pf_tensor_alloc(&out[i], io.dtype, io.ndim, shape, PF_LAYOUT_NONE, NULL, NULL);
    }
    if (st == PF_OK) st = pf_nn_exec_run(x, NULL, in, pf_model_num_inputs(m), out, no);
    pf_nn_exec_destroy(&x);
    return st;
}

static void round_trip(const char *path, const char *label)
{
    if (!exists(path)) {
        printf("  %s: absent, skipped\n", label);
        return;
    }
    pf_model *a = NULL, *b = NULL;
    if (pf_model_load(path, &a) != PF_OK) {
        /* The reader's limits (an opset before 7, ...) are not the writer's. */
        printf("  %s: not loadable here (%s), skipped\n", label, pf_last_error());
        return;
    }
    g_models++;
    pf_onnx_wmodel *w = NULL;
    CHECK_OK(pf_onnx_wmodel_from_ir(pf_model_graph(a), &w));
    uint8_t *bytes = NULL;
    size_t size = 0;
    if (w) CHECK_OK(pf_onnx_wmodel_serialize(w, &bytes, &size));
    char out_path[512];
    snprintf(out_path, sizeof out_path, "%s/%s.onnx", g_tmp, label);
    if (w) CHECK_OK(pf_onnx_wmodel_save(w, out_path));
    pf_onnx_wmodel_destroy(&w);
    if (bytes) {
        g_written++;
        CHECK_OK(pf_model_load_memory(bytes, size, label, &b));
    }
    free(bytes);
    if (!b) {
        pf_model_free(&a);
        return;
    }
    CHECK_EQ_INT(pf_model_get_format(b), PF_MODEL_ONNX);
    CHECK_EQ_INT(pf_model_num_inputs(b), pf_model_num_inputs(a));
    CHECK_EQ_INT(pf_model_num_outputs(b), pf_model_num_outputs(a));
    int64_t batch = pf_model_has_symbolic_batch(a) ? 2 : 1;
    CHECK(pf_model_has_symbolic_batch(b) == pf_model_has_symbolic_batch(a));
    int ni = pf_model_num_inputs(a), no = pf_model_num_outputs(a);
    pf_tensor in[8], oa[8], ob[8];
    memset(in, 0, sizeof in);
    memset(oa, 0, sizeof oa);
    memset(ob, 0, sizeof ob);
    if (ni <= 8 && no <= 8) {
        fill_inputs(a, batch, in, ni);
        CHECK_OK(run(a, batch, in, oa));
        CHECK_OK(run(b, batch, in, ob));
        for (int i = 0; i < no; i++) {
            if (!oa[i].data || !ob[i].data || oa[i].dtype != PF_DTYPE_F32) continue;
            CHECK(pf_tensor_numel(&oa[i]) == pf_tensor_numel(&ob[i]));
            const float *pa = oa[i].data, *pb = ob[i].data;
            double md = 0, mr = 0;
            for (int64_t k = 0; k < pf_tensor_numel(&oa[i]); k++) {
                double d = fabs((double)pa[k] - pb[k]);
                if (d > md || d != d) md = d;
                if (fabs(pa[k]) > mr) mr = fabs(pa[k]);
            }
            printf("  %s: output %d max |d| %.3g (max |ref| %.3g)\n", label, i, md, mr);
            CHECK(md <= 1e-5 * (1 + mr));
        }
    }
    for (int i = 0; i < 8; i++) {
        pf_tensor_unref(&in[i]);
        pf_tensor_unref(&oa[i]);
        pf_tensor_unref(&ob[i]);
    }
    pf_model_free(&a);
    pf_model_free(&b);
}

static void test_mediapipe(void)
{
    static const char *const rel[][2] = {
        {"selfie_segmentation/selfie_segmentation.tflite", "selfie"},
        {"selfie_segmentation/selfie_segmentation_landscape.tflite", "selfie_landscape"},
        {"face_detection/face_detection_short_range.tflite", "face_short"},
    };
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char p[1200];
        snprintf(p, sizeof p, "%s/node_modules/@mediapipe/%s", g_root, rel[i][0]);
        round_trip(p, rel[i][1]);
    }
}

static void test_onnx_models(void)
{
    /* Node tests (operands are graph inputs; most PyTorch exports in the
     * package are opset 6, below the reader's 7). Models with weights as
     * initializers are the MediaPipe ones above. */
    static const char *const names[] = {
        "node/test_conv_with_strides_padding", "node/test_convtranspose",
        "node/test_averagepool_2d_pads", "node/test_maxpool_2d_pads",
        "node/test_gemm_default_matrix_bias", "node/test_matmul_4d", "node/test_softmax_axis_1",
        "node/test_transpose_default", "node/test_concat_2d_axis_1", "node/test_hardswish",
        "node/test_split_equal_parts_1d", "node/test_depthtospace_crd_mode",
        "node/test_reduce_mean_keepdims_random", "node/test_leakyrelu", "node/test_sigmoid",
        "node/test_flatten_axis1",
        "pytorch-converted/test_MaxPool2d_stride_padding_dilation",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char p[512], label[128];
        snprintf(p, sizeof p, "/usr/share/libonnx-testdata/data/%s/model.onnx", names[i]);
        snprintf(label, sizeof label, "%s", strrchr(names[i], '/') + 1);
        round_trip(p, label);
    }
}

/* A graph whose activation is fused and whose Reshape/Slice/Clip operands
 * live in attributes: the writer must put them back as ops and inputs. */
static void test_fused_and_attrs(void)
{
    pf_ir_graph *g = NULL;
    CHECK_OK(pf_ir_graph_create("fused", &g));
    if (!g) return;
    int64_t xd[4] = {PF_IR_DIM_BATCH, 2, 4, 4}, wd[4] = {3, 2, 3, 3}, bd[1] = {3};
    float wv[54], bv[3] = {0.1f, -0.2f, 0.3f};
    for (int i = 0; i < 54; i++) wv[i] = (float)((i * 7) % 11 - 5) / 5.0f;
    int x, wt, b, y, z;
    CHECK_OK(pf_ir_add_value(g, "x", PF_IR_F32, 4, xd, &x));
    CHECK_OK(pf_ir_add_const(g, "w", PF_IR_F32, 4, wd, wv, sizeof wv, &wt));
    CHECK_OK(pf_ir_add_const(g, "b", PF_IR_F32, 1, bd, bv, sizeof bv, &b));
    CHECK_OK(pf_ir_add_value(g, "y", PF_IR_F32, -1, NULL, &y));
    CHECK_OK(pf_ir_add_value(g, "z", PF_IR_F32, -1, NULL, &z));
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.conv.nsp = 2;
    a.conv.kernel[0] = a.conv.kernel[1] = 3;
    a.conv.stride[0] = a.conv.stride[1] = 1;
    a.conv.dilation[0] = a.conv.dilation[1] = 1;
    a.conv.pad_begin[0] = a.conv.pad_begin[1] = a.conv.pad_end[0] = a.conv.pad_end[1] = 1;
    a.conv.group = 1;
    int in[3] = {x, wt, b}, node;
    CHECK_OK(pf_ir_add_node(g, PF_IR_CONV, "conv", "Conv", in, 3, &y, 1, &a, &node));
    g->nodes[node].act = PF_IR_ACT_CLIP;
    g->nodes[node].act_a = 0;
    g->nodes[node].act_b = 0.5f;
    memset(&a, 0, sizeof a);
    a.reshape.kind = PF_IR_RESHAPE_SHAPE;
    a.reshape.n = 2;
    a.reshape.shape[0] = 0;
    a.reshape.shape[1] = -1;
    CHECK_OK(pf_ir_add_node(g, PF_IR_RESHAPE, "flat", "Reshape", &y, 1, &z, 1, &a, NULL));
    CHECK_OK(pf_ir_mark_input(g, x));
    CHECK_OK(pf_ir_mark_output(g, z));
    g->batch_symbol = strdup("batch");
    CHECK_OK(pf_ir_infer_shapes(g));
    pf_onnx_wmodel *w = NULL;
    CHECK_OK(pf_onnx_wmodel_from_ir(g, &w));
    if (w) {
        bool has_clip = false, has_reshape = false;
        for (int i = 0; i < w->n_nodes; i++) {
            if (!strcmp(w->nodes[i].op_type, "Clip")) has_clip = w->nodes[i].n_in == 3;
            if (!strcmp(w->nodes[i].op_type, "Reshape")) has_reshape = w->nodes[i].n_in == 2;
        }
        CHECK(has_clip);
        CHECK(has_reshape);
        CHECK(!strcmp(w->batch_symbol, "batch"));
        char p[512];
        snprintf(p, sizeof p, "%s/fused.onnx", g_tmp);
        CHECK_OK(pf_onnx_wmodel_save(w, p));
        pf_onnx_wmodel_destroy(&w);
        pf_model *m = NULL;
        CHECK_OK(pf_model_load(p, &m));
        if (m) {
            CHECK(pf_model_has_symbolic_batch(m));
            pf_model_io o = pf_model_output(m, 0);
            CHECK_EQ_INT(o.ndim, 2);
            CHECK(o.shape[1] == 48);
            /* Clip(0, 0.5) after the conv: every output in [0, 0.5]. */
            pf_tensor t[1], out[1];
            memset(out, 0, sizeof out);
            fill_inputs(m, 3, t, 1);
            CHECK_OK(run(m, 3, t, out));
            bool in_range = out[0].data != NULL;
            for (int64_t k = 0; in_range && k < pf_tensor_numel(&out[0]); k++) {
                float v = ((float *)out[0].data)[k];
                in_range = v >= 0 && v <= 0.5f;
            }
            CHECK(in_range);
            pf_tensor_unref(&t[0]);
            pf_tensor_unref(&out[0]);
            pf_model_free(&m);
        }
    }
    pf_ir_graph_destroy(&g);
}

/* What PyTorch writes for interpolate(size=x.shape[-2:]) with a dynamic
 * batch (LRASPP, DeepLabV3): Resize's sizes computed from Shape ops, and
 * after it a conv with a fused Relu and an Add whose shapes stay unknown in
 * the symbolic graph (written with their rank, unknown dims). Made with
 * python3-onnx's helpers (skipped without them). */
static void test_runtime_resize(void)
{
    if (system("/usr/bin/python3 -c 'import onnx.helper' >/dev/null 2>&1") != 0) {
        printf("  python3-onnx absent: skipped\n");
        return;
    }
    char path[512], cmd[4096];
    snprintf(path, sizeof path, "%s/src_resize_shape.onnx.in", g_tmp);
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 - '%s' <<'EOF'\n"
             "import sys, numpy as np, onnx\n"
             "from onnx import helper as h, TensorProto as T, numpy_helper as nh\n"
             "w = nh.from_array((np.arange(108, dtype=np.float32).reshape(4, 3, 3, 3) %% 7 - 3) / 5, 'w')\n"
             "i64 = lambda n, v: nh.from_array(np.array(v, dtype=np.int64), n)\n"
             "nodes = [h.make_node('Conv', ['x', 'w'], ['c'], pads=[1, 1, 1, 1], strides=[2, 2]),\n"
             "         h.make_node('Relu', ['c'], ['r']),\n"
             "         h.make_node('Shape', ['x'], ['sx']), h.make_node('Shape', ['r'], ['sr']),\n"
             "         h.make_node('Slice', ['sx', 'two', 'four'], ['hw']),\n"
             "         h.make_node('Slice', ['sr', 'zero', 'two'], ['nc']),\n"
             "         h.make_node('Concat', ['nc', 'hw'], ['sizes'], axis=0),\n"
             "         h.make_node('Resize', ['r', '', '', 'sizes'], ['y'], mode='linear',\n"
             "                     coordinate_transformation_mode='pytorch_half_pixel'),\n"
             "         h.make_node('Conv', ['y', 'w2'], ['z']), h.make_node('Relu', ['z'], ['zr']),\n"
             "         h.make_node('Add', ['zr', 'y'], ['out'])]\n"
             "w2 = nh.from_array((np.arange(16, dtype=np.float32).reshape(4, 4, 1, 1) %% 5 - 2) / 3, 'w2')\n"
             "g = h.make_graph(nodes, 'g', [h.make_tensor_value_info('x', T.FLOAT, ['N', 3, 16, 16])],\n"
             "                 [h.make_tensor_value_info('out', T.FLOAT, ['N', 4, 16, 16])],\n"
             "                 [w, w2, i64('zero', [0]), i64('two', [2]), i64('four', [4])])\n"
             "onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 17)]), sys.argv[1])\n"
             "EOF",
             path);
    REQUIRE(system(cmd) == 0);
    round_trip(path, "resize_shape");
}

/* Debian's python3-onnx checks every file written above. */
static void test_onnx_checker(void)
{
    if (system("/usr/bin/python3 -c 'import onnx.checker' >/dev/null 2>&1") != 0) {
        printf("  python3-onnx absent (/usr/bin/python3): checker part skipped\n");
        return;
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c \"import glob, onnx, sys\n"
             "fs = sorted(glob.glob('%s/*.onnx'))\n"
             "for f in fs: onnx.checker.check_model(onnx.load(f), full_check=True)\n"
             "print('  onnx.checker: %%d files pass' %% len(fs))\"", g_tmp);
    CHECK(system(cmd) == 0);
}

int main(void)
{
    const char *src = getenv("PF_SOURCE_DIR");
    snprintf(g_root, sizeof g_root, "%s", src ? src : ".");
    snprintf(g_tmp, sizeof g_tmp, "/tmp/pf_onnx_writer_XXXXXX");
    if (!mkdtemp(g_tmp)) return 1;
    pf_test_seed(18);
    PF_RUN(test_fused_and_attrs);
    PF_RUN(test_mediapipe);
    PF_RUN(test_onnx_models);
    PF_RUN(test_runtime_resize);
    PF_RUN(test_onnx_checker);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    if (getenv("PF_KEEP_TMP")) cmd[0] = 0;
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_tmp);
    if (g_models == 0) {
        printf("no model found: skipped\n");
        return 77;
    }
    return pf_test_finish();
}
