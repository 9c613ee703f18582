/* INT8: QDQ fusion (pf_ir_fuse_quant) and the CPU integer kernels.
 *
 * Graphs are built with the IR API, run node by node on the CPU kernels
 * before and after fusion, and compared: the fused node quantizes once where
 * the unfused graph rounds the float conv/add too, so quantized outputs may
 * differ by one step of the output scale (checked: never more, and rarely).
 * The fused node must also equal a direct evaluation of its formula (ir.h)
 * bit for bit, which the CPU fast path is held to as well. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "int8_graphs.h"
#include "nn/cpu/kernels.h"

/* Runs g on the CPU kernels; returns a copy of graph output 0 (caller frees). */
static void *run_graph(const pf_ir_graph *g, void *const *inputs, size_t *bytes)
{
    void **buf = calloc((size_t)g->n_values, sizeof *buf);
    bool *own = calloc((size_t)g->n_values, sizeof *own);
    for (int i = 0; i < g->n_inputs; i++) buf[g->inputs[i]] = inputs[i];
    for (int v = 0; v < g->n_values; v++)
        if (g->values[v].data) buf[v] = g->values[v].data;
    bool ok = true;
    for (int k = 0; k < g->n_nodes && ok; k++) {
        const pf_ir_node *n = &g->nodes[k];
        if (n->dead) continue;
        const void *in[PF_IR_MAX_INPUTS] = {0};
        void *out[PF_IR_MAX_OUTPUTS] = {0};
        for (int i = 0; i < n->n_in; i++) in[i] = n->in[i] >= 0 ? buf[n->in[i]] : NULL;
        for (int i = 0; i < n->n_out; i++) {
            size_t nb = pf_ir_value_nbytes(&g->values[n->out[i]]);
            buf[n->out[i]] = calloc(1, nb ? nb : 1);
            own[n->out[i]] = true;
            out[i] = buf[n->out[i]];
        }
        size_t sb = pf_nn_cpu_scratch_bytes(g, k);
        void *scratch = sb ? aligned_alloc(64, (sb + 63) / 64 * 64) : NULL;
        pf_status st = pf_nn_cpu_run_node(g, k, in, out, NULL, scratch, sb);
        free(scratch);
        if (st != PF_OK) {
            fprintf(stderr, "  run node %d: %s\n", k, pf_last_error());
            ok = false;
        }
    }
    void *res = NULL;
    if (ok) {
        const pf_ir_value *o = &g->values[g->outputs[0]];
        *bytes = pf_ir_value_nbytes(o);
        res = malloc(*bytes);
        memcpy(res, buf[g->outputs[0]], *bytes);
    }
    for (int v = 0; v < g->n_values; v++)
        if (own[v]) free(buf[v]);
    free(buf);
    free(own);
    return res;
}

static int count_op(const pf_ir_graph *g, pf_ir_op op)
{
    int c = 0;
    for (int k = 0; k < g->n_nodes; k++) c += !g->nodes[k].dead && g->nodes[k].op == op;
    return c;
}

/* Unfused vs fused: quantized outputs within 1 step, mostly equal; float within tol. */
static void compare_fused(pf_ir_graph *g, void *const *inputs, pf_ir_op fused_op,
                          int want_fused, int want_q_left)
{
    pf_ir_graph *f = NULL;
    CHECK_OK(pf_ir_infer_shapes(g));
    CHECK_OK(pf_ir_graph_clone(g, &f));
    REQUIRE(f != NULL);
    int nf = -1;
    CHECK_OK(pf_ir_fuse_quant(f, &nf));
    int nd = 0;
    CHECK_OK(pf_ir_remove_dead(f, &nd));
    CHECK_OK(pf_ir_infer_shapes(f));
    CHECK_OK(pf_ir_validate(f));
    CHECK_EQ_INT(nf, want_fused);
    CHECK_EQ_INT(count_op(f, fused_op), want_fused);
    CHECK_EQ_INT(count_op(f, PF_IR_CONV) + count_op(f, PF_IR_MATMUL) + count_op(f, PF_IR_GEMM), 0);
    CHECK_EQ_INT(count_op(f, PF_IR_QUANTIZE_LINEAR), want_q_left);
    size_t n1 = 0, n2 = 0;
    void *a = run_graph(g, inputs, &n1), *b = run_graph(f, inputs, &n2);
    REQUIRE(a && b && n1 == n2);
    const pf_ir_value *o = &g->values[g->outputs[0]];
    int64_t n = pf_ir_value_numel(o), diff = 0, big = 0;
    for (int64_t i = 0; i < n; i++) {
        if (o->dtype == PF_IR_F32) {
            float x = ((float *)a)[i], y = ((float *)b)[i];
            if (fabsf(x - y) > 1e-4f + 1e-4f * fabsf(x)) big++;
        } else {
            int32_t x = pf_nn_q_load(a, o->dtype, (size_t)i), y = pf_nn_q_load(b, o->dtype, (size_t)i);
            if (x != y) diff++;
            if (abs(x - y) > 1) big++;
        }
    }
    CHECK_EQ_INT(big, 0);
    CHECK(diff * 50 <= n); /* one-step differences: at rounding boundaries only (< 2%) */
    printf("    %lld outputs, %lld differ by one step\n", (long long)n, (long long)diff);
    free(a);
    free(b);
    pf_ir_graph_destroy(&f);
}

static void run_conv_case(const conv_case *cc)
{
    pf_ir_graph *g = NULL;
    float *xin = NULL, *rin = NULL;
    build_conv_case(cc, &g, &xin, &rin);
    REQUIRE(g != NULL);
    void *inputs[2] = {xin, rin};
    /* The residual's Q stays (it quantizes a graph input); x's Q too. */
    compare_fused(g, inputs, PF_IR_QCONV, 1, cc->residual ? 2 : 1);
    free(xin);
    free(rin);
    pf_ir_graph_destroy(&g);
}

static void test_fuse_conv(void)
{
    pf_test_seed(18);
    static const conv_case cases[] = {
        /* C, H, W, M, k, stride, dil, group, pad, dtype, xzp, yzp, residual, quant_out, dq_out,
         * qdq_mid */
        {5, 9, 11, 7, 3, 1, 1, 1, 1, PF_IR_U8, 128, 0, false, true, false, false},
        {5, 9, 11, 7, 3, 2, 1, 1, 1, PF_IR_I8, 0, 0, false, true, false, false},
        {6, 10, 9, 12, 3, 1, 2, 1, 2, PF_IR_I8, -3, 5, true, true, false, false},
        {16, 7, 7, 16, 3, 1, 1, 16, 1, PF_IR_I8, 0, 0, false, true, false, false}, /* depthwise */
        {33, 5, 6, 40, 1, 1, 1, 1, 0, PF_IR_U8, 100, 10, true, false, false, false},
        {8, 6, 6, 8, 3, 2, 1, 2, 1, PF_IR_U8, 128, 0, false, true, false, false},  /* grouped, stride 2 */
        {24, 8, 9, 24, 3, 1, 1, 1, 1, PF_IR_I8, 0, 0, true, true, false, true}, /* Q-DQ-Add */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        printf("  case %zu\n", i);
        run_conv_case(&cases[i]);
    }
}

/* Q(a) -> DQ -> MatMul(DQ(w per column)) -> Q, and Gemm(trans_b) with a DQ'd int32 bias. */
static void run_matmul_case(bool gemm)
{
    pf_ir_graph *g = NULL;
    CHECK_OK(pf_ir_graph_create("qmatmul", &g));
    REQUIRE(g != NULL);
    const int64_t K = 37, N = 10, M = 6;
    int x;
    if (gemm) CHECK_OK(pf_ir_add_value(g, "x", PF_IR_F32, 2, D(M, K), &x));
    else CHECK_OK(pf_ir_add_value(g, "x", PF_IR_F32, 3, D(2, M / 2, K), &x));
    CHECK_OK(pf_ir_mark_input(g, x));
    float sx = 2.0f / 255.0f;
    int zx = scalar_q(g, PF_IR_U8, 120);
    int xq = qdq(g, PF_IR_QUANTIZE_LINEAR, x, scalar_f(g, sx), zx, 1, PF_IR_U8);
    int xd = qdq(g, PF_IR_DEQUANTIZE_LINEAR, xq, scalar_f(g, sx), zx, 1, PF_IR_F32);
    int8_t w[37 * 10];
    float ws[10], bs[10];
    int32_t bq[10];
    for (int i = 0; i < K * N; i++) w[i] = (int8_t)pf_test_rand_range(-127, 127);
    for (int i = 0; i < N; i++) {
        ws[i] = frand(0.002f, 0.01f);
        bs[i] = sx * ws[i];
        bq[i] = (int32_t)pf_test_rand_range(-3000, 3000);
    }
    /* trans_b: w is [N, K], per-channel on axis 0; MatMul: [K, N], axis 1. */
    int wq = gemm ? cst(g, PF_IR_I8, 2, D(N, K), w) : cst(g, PF_IR_I8, 2, D(K, N), w);
    int wd = qdq(g, PF_IR_DEQUANTIZE_LINEAR, wq, cst(g, PF_IR_F32, 1, D(N), ws), -1, gemm ? 0 : 1,
                 PF_IR_F32);
    int y;
    if (gemm) {
        int bd = qdq(g, PF_IR_DEQUANTIZE_LINEAR, cst(g, PF_IR_I32, 1, D(N), bq),
                     cst(g, PF_IR_F32, 1, D(N), bs), -1, 0, PF_IR_F32);
        pf_ir_attr a;
        memset(&a, 0, sizeof a);
        a.gemm.alpha = a.gemm.beta = 1.0f;
        a.gemm.trans_b = true;
        int in[3] = {xd, wd, bd};
        y = node(g, PF_IR_GEMM, in, 3, &a, PF_IR_F32);
    } else {
        int in[2] = {xd, wd};
        y = node(g, PF_IR_MATMUL, in, 2, NULL, PF_IR_F32);
    }
    y = qdq(g, PF_IR_QUANTIZE_LINEAR, y, scalar_f(g, 4.0f / 127.0f), scalar_q(g, PF_IR_I8, 0), 1,
            PF_IR_I8);
    CHECK_OK(pf_ir_mark_output(g, y));
    float xin[6 * 37];
    for (int i = 0; i < M * K; i++) xin[i] = frand(-1.0f, 1.0f);
    void *inputs[1] = {xin};
    compare_fused(g, inputs, PF_IR_QMATMUL, 1, 1);
    pf_ir_graph_destroy(&g);
}

static void test_fuse_matmul(void)
{
    pf_test_seed(19);
    run_matmul_case(false);
    run_matmul_case(true);
}

/* Chains the pass must leave alone: a float weight, and a conv output read twice. */
static void test_fuse_refuses(void)
{
    pf_ir_graph *g = NULL;
    CHECK_OK(pf_ir_graph_create("nofuse", &g));
    REQUIRE(g != NULL);
    int x;
    CHECK_OK(pf_ir_add_value(g, "x", PF_IR_U8, 4, D(1, 2, 4, 4), &x));
    CHECK_OK(pf_ir_mark_input(g, x));
    int xd = qdq(g, PF_IR_DEQUANTIZE_LINEAR, x, scalar_f(g, 0.1f), -1, 1, PF_IR_F32);
    float wf[2 * 2] = {1, 2, 3, 4};
    int w = cst(g, PF_IR_F32, 4, D(2, 2, 1, 1), wf);
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.conv.nsp = 2;
    a.conv.kernel[0] = a.conv.kernel[1] = 1;
    a.conv.stride[0] = a.conv.stride[1] = a.conv.dilation[0] = a.conv.dilation[1] = 1;
    a.conv.group = 1;
    int in[2] = {xd, w};
    int y = node(g, PF_IR_CONV, in, 2, &a, PF_IR_F32);
    CHECK_OK(pf_ir_mark_output(g, y));
    CHECK_OK(pf_ir_infer_shapes(g));
    int nf = -1;
    CHECK_OK(pf_ir_fuse_quant(g, &nf));
    CHECK_EQ_INT(nf, 0);
    CHECK_EQ_INT(count_op(g, PF_IR_CONV), 1);
    pf_ir_graph_destroy(&g);

    /* A conv output read twice (a Q and a graph output): the conv fuses, its
     * tail does not (the float result is needed), so the Q stays. */
    CHECK_OK(pf_ir_graph_create("twice", &g));
    REQUIRE(g != NULL);
    CHECK_OK(pf_ir_add_value(g, "x", PF_IR_U8, 4, D(1, 2, 4, 4), &x));
    CHECK_OK(pf_ir_mark_input(g, x));
    xd = qdq(g, PF_IR_DEQUANTIZE_LINEAR, x, scalar_f(g, 0.1f), -1, 1, PF_IR_F32);
    int8_t wq[4] = {1, -2, 3, -4};
    float ws[2] = {0.5f, 0.25f};
    int wd = qdq(g, PF_IR_DEQUANTIZE_LINEAR, cst(g, PF_IR_I8, 4, D(2, 2, 1, 1), wq),
                 cst(g, PF_IR_F32, 1, D(2), ws), -1, 0, PF_IR_F32);
    int in2[2] = {xd, wd};
    y = node(g, PF_IR_CONV, in2, 2, &a, PF_IR_F32);
    int yq = qdq(g, PF_IR_QUANTIZE_LINEAR, y, scalar_f(g, 0.2f), scalar_q(g, PF_IR_I8, 0), 1,
                 PF_IR_I8);
    CHECK_OK(pf_ir_mark_output(g, y));
    CHECK_OK(pf_ir_mark_output(g, yq));
    CHECK_OK(pf_ir_infer_shapes(g));
    CHECK_OK(pf_ir_fuse_quant(g, &nf));
    CHECK_EQ_INT(nf, 1);
    CHECK_EQ_INT(count_op(g, PF_IR_QCONV), 1);
    CHECK_EQ_INT(count_op(g, PF_IR_QUANTIZE_LINEAR), 1);
    CHECK_EQ_INT(g->values[y].dtype, PF_IR_F32);
    pf_ir_graph_destroy(&g);

    /* A weight zero point per axis 1 with a scalar scale: not per output
     * channel, so not fused. */
    CHECK_OK(pf_ir_graph_create("zp_axis1", &g));
    REQUIRE(g != NULL);
    CHECK_OK(pf_ir_add_value(g, "x", PF_IR_U8, 4, D(1, 2, 4, 4), &x));
    CHECK_OK(pf_ir_mark_input(g, x));
    xd = qdq(g, PF_IR_DEQUANTIZE_LINEAR, x, scalar_f(g, 0.1f), -1, 1, PF_IR_F32);
    int8_t zp2[2] = {0, 1};
    wd = qdq(g, PF_IR_DEQUANTIZE_LINEAR, cst(g, PF_IR_I8, 4, D(2, 2, 1, 1), wq), scalar_f(g, 0.5f),
             cst(g, PF_IR_I8, 1, D(2), zp2), 1, PF_IR_F32);
    int in3[2] = {xd, wd};
    y = node(g, PF_IR_CONV, in3, 2, &a, PF_IR_F32);
    CHECK_OK(pf_ir_mark_output(g, y));
    CHECK_OK(pf_ir_infer_shapes(g));
    CHECK_OK(pf_ir_fuse_quant(g, &nf));
    CHECK_EQ_INT(nf, 0);
    pf_ir_graph_destroy(&g);
}

/* Shape inference refuses bad quantization inputs, naming them (the kernels
 * trust what it accepted). */
static void test_infer_refuses(void)
{
    pf_ir_graph *g = NULL;
    /* Per-axis scale with the axis out of range. */
    CHECK_OK(pf_ir_graph_create("bad_axis", &g));
    REQUIRE(g != NULL);
    int x;
    CHECK_OK(pf_ir_add_value(g, "x", PF_IR_F32, 2, D(3, 4), &x));
    CHECK_OK(pf_ir_mark_input(g, x));
    float s4[4] = {1, 2, 3, 4};
    int y = qdq(g, PF_IR_QUANTIZE_LINEAR, x, cst(g, PF_IR_F32, 1, D(4), s4), -1, 5, PF_IR_U8);
    CHECK_OK(pf_ir_mark_output(g, y));
    CHECK_EQ_INT(pf_ir_infer_shapes(g), PF_ERR_FORMAT);
    CHECK(strstr(pf_last_error(), "axis 5 out of range") != NULL);
    pf_ir_graph_destroy(&g);

    /* A zero point whose dtype differs from the data's. */
    CHECK_OK(pf_ir_graph_create("bad_zp", &g));
    REQUIRE(g != NULL);
    CHECK_OK(pf_ir_add_value(g, "x", PF_IR_I8, 2, D(3, 4), &x));
    CHECK_OK(pf_ir_mark_input(g, x));
    y = qdq(g, PF_IR_DEQUANTIZE_LINEAR, x, scalar_f(g, 0.5f), scalar_q(g, PF_IR_U8, 3), 1,
            PF_IR_F32);
    CHECK_OK(pf_ir_mark_output(g, y));
    CHECK_EQ_INT(pf_ir_infer_shapes(g), PF_ERR_FORMAT);
    CHECK(strstr(pf_last_error(), "zero point dtype differs") != NULL);
    pf_ir_graph_destroy(&g);

    /* QLinearConv: a bias of 1 entry for 16 output channels (the kernel reads
     * one per channel), then a float zero point. */
    for (int bad = 0; bad < 2; bad++) {
        CHECK_OK(pf_ir_graph_create("bad_qlinearconv", &g));
        REQUIRE(g != NULL);
        CHECK_OK(pf_ir_add_value(g, "x", PF_IR_U8, 4, D(1, 2, 3, 3), &x));
        CHECK_OK(pf_ir_mark_input(g, x));
        int8_t w[32] = {0};
        int32_t b1 = 7;
        float fz = 0.0f;
        int in[9] = {x, scalar_f(g, 0.1f),
                     bad ? cst(g, PF_IR_F32, 0, NULL, &fz) : scalar_q(g, PF_IR_U8, 0),
                     cst(g, PF_IR_I8, 4, D(16, 2, 1, 1), w), scalar_f(g, 0.1f),
                     scalar_q(g, PF_IR_I8, 0), scalar_f(g, 0.2f), scalar_q(g, PF_IR_U8, 0),
                     cst(g, PF_IR_I32, 1, D(1), &b1)};
        pf_ir_attr a;
        memset(&a, 0, sizeof a);
        a.conv.nsp = 2;
        a.conv.kernel[0] = a.conv.kernel[1] = 1;
        a.conv.stride[0] = a.conv.stride[1] = a.conv.dilation[0] = a.conv.dilation[1] = 1;
        a.conv.group = 1;
        y = node(g, PF_IR_QLINEAR_CONV, in, bad ? 8 : 9, &a, PF_IR_U8);
        CHECK_OK(pf_ir_mark_output(g, y));
        CHECK_EQ_INT(pf_ir_infer_shapes(g), PF_ERR_FORMAT);
        CHECK(strstr(pf_last_error(), bad ? "zero point dtype differs" : "bias must be 1D") !=
              NULL);
        pf_ir_graph_destroy(&g);
    }
}

/* The CPU fast path (im2col in u8 + the VNNI/AVX2 GEMM) against the plain-C
 * reference on fused QCONV graphs: equal bit for bit on every path the CPU
 * has (the int32 sums are exact, and both finish with the same epilogue). */
static void test_fast_path(void)
{
    pf_test_seed(20);
    static const conv_case cases[] = {
        {64, 13, 11, 40, 3, 1, 1, 1, 1, PF_IR_I8, 0, 0, false, true, false, false},
        {48, 16, 15, 24, 3, 2, 1, 1, 1, PF_IR_U8, 128, 3, false, true, false, false},
        {32, 12, 12, 33, 3, 1, 2, 1, 2, PF_IR_I8, -7, 0, true, true, false, false},
        {5, 9, 11, 7, 3, 1, 1, 1, 1, PF_IR_U8, 100, 0, false, true, false, false},
        {70, 9, 7, 67, 1, 1, 1, 1, 0, PF_IR_I8, 0, 0, true, false, false, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pf_ir_graph *g = NULL;
        float *xin = NULL, *rin = NULL;
        build_conv_case(&cases[i], &g, &xin, &rin);
        REQUIRE(g != NULL);
        CHECK_OK(pf_ir_infer_shapes(g));
        int nf = 0;
        CHECK_OK(pf_ir_fuse_quant(g, &nf));
        CHECK_OK(pf_ir_remove_dead(g, NULL));
        CHECK_OK(pf_ir_infer_shapes(g));
        CHECK_EQ_INT(nf, 1);
        int qn = -1;
        for (int k = 0; k < g->n_nodes; k++)
            if (g->nodes[k].op == PF_IR_QCONV) qn = k;
        REQUIRE(qn >= 0);
#if defined(__x86_64__)
        CHECK(pf_nn_cpu_scratch_bytes(g, qn) > 0); /* the fast path takes it */
#endif
        void *inputs[2] = {xin, rin};
        int prev = pf_nn_qgemm_force(PF_QG_SCALAR);
        size_t n0 = 0;
        void *ref = run_graph(g, inputs, &n0);
        REQUIRE(ref != NULL);
        int last = -1;
        for (int isa = PF_QG_AVX2; isa <= PF_QG_AVX512VNNI; isa++) {
            pf_nn_qgemm_force(isa);
            int used = pf_nn_qgemm_isa();
            if (used == last || used == PF_QG_SCALAR) continue; /* the CPU lacks it */
            last = used;
            size_t n1 = 0;
            void *fast = run_graph(g, inputs, &n1);
            REQUIRE(fast != NULL && n1 == n0);
            size_t ndiff = 0;
            for (size_t b = 0; b < n0; b++) ndiff += ((unsigned char *)fast)[b] != ((unsigned char *)ref)[b];
            printf("    case %zu %-12s: %zu bytes, %zu differ\n", i, pf_nn_qgemm_isa_name(used), n0,
                   ndiff);
            CHECK_EQ_INT(ndiff, 0);
            free(fast);
        }
        pf_nn_qgemm_force(prev);
        free(ref);
        free(xin);
        free(rin);
        pf_ir_graph_destroy(&g);
    }
}

static void test_round_sat(void)
{
    CHECK_EQ_INT(pf_nn_q_round_sat(2.5, 0, PF_IR_I8), 2);
    CHECK_EQ_INT(pf_nn_q_round_sat(3.5, 0, PF_IR_I8), 4);
    CHECK_EQ_INT(pf_nn_q_round_sat(-2.5, 0, PF_IR_I8), -2);
    CHECK_EQ_INT(pf_nn_q_round_sat(-0.5, 10, PF_IR_U8), 10);
    CHECK_EQ_INT(pf_nn_q_round_sat(300.0, 0, PF_IR_U8), 255);
    CHECK_EQ_INT(pf_nn_q_round_sat(-1.0, 0, PF_IR_U8), 0);
    CHECK_EQ_INT(pf_nn_q_round_sat(-200.0, 0, PF_IR_I8), -128);
    CHECK_EQ_INT(pf_nn_q_round_sat(120.0, 10, PF_IR_I8), 127);
    CHECK_EQ_INT(pf_nn_q_round_sat(1e30, 0, PF_IR_I8), 127);
    CHECK_EQ_INT(pf_nn_q_round_sat(NAN, 3, PF_IR_I8), 3);
}

int main(void)
{
    PF_RUN(test_round_sat);
    PF_RUN(test_fuse_conv);
    PF_RUN(test_fuse_matmul);
    PF_RUN(test_fuse_refuses);
    PF_RUN(test_fast_path);
    PF_RUN(test_infer_refuses);
    return pf_test_finish();
}
