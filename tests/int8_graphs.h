/* Shared by test_nn_int8.c and cuda/test_cuda_int8.c: QDQ graphs built with
 * the IR API (Q(x) -> DQ -> Conv(DQ(w), DQ(bias)) [-> Add(DQ(Q(r)))] -> Relu
 * [-> Q [-> DQ]]), random weights and inputs from pf_test_rand. */
#ifndef PF_TEST_INT8_GRAPHS_H
#define PF_TEST_INT8_GRAPHS_H

#include <stdlib.h>
#include <string.h>

#include "nn/ir.h"
#include "pf_test.h"

#ifndef D
#define D(...) ((const int64_t[]){__VA_ARGS__})
#endif
#define PF_INT8_TEST_YS (3.0f / 127.0f) /* the output scale of the conv cases */

static inline float frand(float lo, float hi)
{
    return lo + (hi - lo) * (float)(pf_test_rand() % 1000001) / 1000000.0f;
}

static inline int val(pf_ir_graph *g, pf_ir_dtype dt)
{
    int id = -1;
    CHECK_OK(pf_ir_add_value(g, pf_ir_unique_name(g, "v"), dt, -1, NULL, &id));
    return id;
}

static inline int cst(pf_ir_graph *g, pf_ir_dtype dt, int nd, const int64_t *dims, const void *data)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= dims[i];
    int id = -1;
    CHECK_OK(pf_ir_add_const(g, pf_ir_unique_name(g, "c"), dt, nd, dims, data,
                             (size_t)n * pf_ir_dtype_size(dt), &id));
    return id;
}

static inline int scalar_f(pf_ir_graph *g, float x) { return cst(g, PF_IR_F32, 0, NULL, &x); }

static inline int scalar_q(pf_ir_graph *g, pf_ir_dtype dt, int v)
{
    uint8_t u = (uint8_t)v;
    int8_t s = (int8_t)v;
    return cst(g, dt, 0, NULL, dt == PF_IR_U8 ? (const void *)&u : (const void *)&s);
}

static inline int node(pf_ir_graph *g, pf_ir_op op, const int *in, int n_in, const pf_ir_attr *attr,
                pf_ir_dtype dt)
{
    int out = val(g, dt);
    CHECK_OK(pf_ir_add_node(g, op, pf_ir_op_name(op), pf_ir_op_name(op), in, n_in, &out, 1, attr,
                            NULL));
    return out;
}

static inline int qdq(pf_ir_graph *g, pf_ir_op op, int x, int s, int z, int64_t axis, pf_ir_dtype dt)
{
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.axis.axis = axis;
    int in[3] = {x, s, z};
    return node(g, op, in, z >= 0 ? 3 : 2, &a, dt);
}

/* A QDQ conv: Q(x) -> DQ -> Conv(DQ(w per channel), DQ(bias int32)) [-> Add(DQ(Q(r)))] -> Relu -> Q. */
typedef struct conv_case {
    int64_t C, H, W, M, k, stride, dil, group, pad;
    pf_ir_dtype adt;     /* activations */
    int xzp, yzp;
    bool residual, quant_out;
    bool dq_out;         /* a DequantizeLinear after the final Q (float graph output) */
    bool qdq_mid;        /* Q -> DQ between the conv and the residual Add (ONNX Runtime's form) */
} conv_case;

/* Builds the case's graph (*g) and random inputs (*xin, *rin: caller frees). */
static inline void build_conv_case(const conv_case *cc, pf_ir_graph **gp, float **xin_out, float **rin_out)
{
    *gp = NULL;
    pf_ir_graph *g = NULL;
    CHECK_OK(pf_ir_graph_create("qconv", &g));
    REQUIRE(g != NULL);
    int64_t Cg = cc->C / cc->group;
    int x;
    CHECK_OK(pf_ir_add_value(g, "x", PF_IR_F32, 4, D(1, cc->C, cc->H, cc->W), &x));
    CHECK_OK(pf_ir_mark_input(g, x));
    float sx = 2.0f / 255.0f;
    int zx = scalar_q(g, cc->adt, cc->xzp);
    int xq = qdq(g, PF_IR_QUANTIZE_LINEAR, x, scalar_f(g, sx), zx, 1, cc->adt);
    int xd = qdq(g, PF_IR_DEQUANTIZE_LINEAR, xq, scalar_f(g, sx), zx, 1, PF_IR_F32);
    size_t wn = (size_t)(cc->M * Cg * cc->k * cc->k);
    int8_t *w = malloc(wn);
    for (size_t i = 0; i < wn; i++) w[i] = (int8_t)pf_test_rand_range(-127, 127);
    float *ws = malloc(sizeof(float) * (size_t)cc->M), *bs = malloc(sizeof(float) * (size_t)cc->M);
    int32_t *bq = malloc(sizeof(int32_t) * (size_t)cc->M);
    for (int64_t m = 0; m < cc->M; m++) {
        ws[m] = frand(0.002f, 0.01f);
        bs[m] = sx * ws[m];
        bq[m] = (int32_t)pf_test_rand_range(-2000, 2000);
    }
    int wq = cst(g, PF_IR_I8, 4, D(cc->M, Cg, cc->k, cc->k), w);
    int wd = qdq(g, PF_IR_DEQUANTIZE_LINEAR, wq, cst(g, PF_IR_F32, 1, D(cc->M), ws), -1, 0,
                 PF_IR_F32);
    int bd = qdq(g, PF_IR_DEQUANTIZE_LINEAR, cst(g, PF_IR_I32, 1, D(cc->M), bq),
                 cst(g, PF_IR_F32, 1, D(cc->M), bs), -1, 0, PF_IR_F32);
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.conv.nsp = 2;
    for (int i = 0; i < 2; i++) {
        a.conv.kernel[i] = cc->k;
        a.conv.stride[i] = cc->stride;
        a.conv.dilation[i] = cc->dil;
        a.conv.pad_begin[i] = a.conv.pad_end[i] = cc->pad;
    }
    a.conv.group = cc->group;
    int cin[3] = {xd, wd, bd};
    int y = node(g, PF_IR_CONV, cin, 3, &a, PF_IR_F32);
    int64_t OH = (cc->H + 2 * cc->pad - (cc->k - 1) * cc->dil - 1) / cc->stride + 1;
    int64_t OW = (cc->W + 2 * cc->pad - (cc->k - 1) * cc->dil - 1) / cc->stride + 1;
    int r = -1;
    float sr = 4.0f / 255.0f;
    if (cc->residual && cc->qdq_mid) {
        int ms = scalar_f(g, PF_INT8_TEST_YS / 2), mz = scalar_q(g, cc->adt, 0);
        y = qdq(g, PF_IR_QUANTIZE_LINEAR, y, ms, mz, 1, cc->adt);
        y = qdq(g, PF_IR_DEQUANTIZE_LINEAR, y, ms, mz, 1, PF_IR_F32);
    }
    if (cc->residual) {
        CHECK_OK(pf_ir_add_value(g, "r", PF_IR_F32, 4, D(1, cc->M, OH, OW), &r));
        CHECK_OK(pf_ir_mark_input(g, r));
        int zr = scalar_q(g, cc->adt, 0);
        int rq = qdq(g, PF_IR_QUANTIZE_LINEAR, r, scalar_f(g, sr), zr, 1, cc->adt);
        int rd = qdq(g, PF_IR_DEQUANTIZE_LINEAR, rq, scalar_f(g, sr), zr, 1, PF_IR_F32);
        int ain[2] = {rd, y};
        y = node(g, PF_IR_ADD, ain, 2, NULL, PF_IR_F32);
    }
    y = node(g, PF_IR_RELU, &y, 1, NULL, PF_IR_F32);
    if (cc->quant_out) {
        pf_ir_dtype odt = cc->adt;
        int ys = scalar_f(g, PF_INT8_TEST_YS), yz = scalar_q(g, odt, cc->yzp);
        y = qdq(g, PF_IR_QUANTIZE_LINEAR, y, ys, yz, 1, odt);
        if (cc->dq_out) y = qdq(g, PF_IR_DEQUANTIZE_LINEAR, y, ys, yz, 1, PF_IR_F32);
    }
    CHECK_OK(pf_ir_mark_output(g, y));
    float *xin = malloc(sizeof(float) * (size_t)(cc->C * cc->H * cc->W));
    for (int64_t i = 0; i < cc->C * cc->H * cc->W; i++) xin[i] = frand(-1.0f, 1.0f);
    float *rin = malloc(sizeof(float) * (size_t)(cc->M * OH * OW));
    for (int64_t i = 0; i < cc->M * OH * OW; i++) rin[i] = frand(-0.5f, 0.5f);
    free(w);
    free(ws);
    free(bs);
    free(bq);
    *gp = g;
    *xin_out = xin;
    *rin_out = rin;
}

#endif
