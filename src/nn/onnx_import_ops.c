/* ONNX import: convolutions, normalisation, pooling, linear algebra,
 * softmax and reductions (see onnx_import.c for the conventions). */
#include <stdio.h>
#include <string.h>

#include "../core/error.h"
#include "onnx_import_priv.h"

#define TRY(x) \
    do { \
        pf_status st_ = (x); \
        if (st_ != PF_OK) return st_; \
    } while (0)

/* Reads an INTS attribute of exactly `want` entries into out (absent: out
 * keeps its defaults). */
static pf_status ints_exact(pf_oimp *c, const pf_onnx_node *n, const char *name, size_t want,
                            int64_t *out)
{
    const int64_t *v;
    size_t cnt;
    TRY(pf_onnx_attr_ints(c->m, n, name, &v, &cnt));
    if (!v) return PF_OK;
    if (cnt != want)
        return pf_oimp_fail(c, n, PF_ERR_FORMAT, "attribute %s has %zu values, expected %zu",
                            name, cnt, want);
    for (size_t i = 0; i < cnt; i++) out[i] = v[i];
    return PF_OK;
}

static pf_status auto_pad_of(pf_oimp *c, const pf_onnx_node *n, pf_ir_auto_pad *out)
{
    const char *s;
    TRY(pf_onnx_attr_string(c->m, n, "auto_pad", "NOTSET", &s));
    if (!strcmp(s, "NOTSET")) *out = PF_IR_PAD_EXPLICIT;
    else if (!strcmp(s, "SAME_UPPER")) *out = PF_IR_PAD_SAME_UPPER;
    else if (!strcmp(s, "SAME_LOWER")) *out = PF_IR_PAD_SAME_LOWER;
    else if (!strcmp(s, "VALID")) *out = PF_IR_PAD_VALID;
    else return pf_oimp_unsupported_attr(c, n, "auto_pad", s);
    return PF_OK;
}

/* Spatial rank from kernel_shape, else from the weight's rank. */
static pf_status spatial_rank(pf_oimp *c, const pf_onnx_node *n, int w, int *nsp)
{
    const int64_t *ks;
    size_t cnt;
    TRY(pf_onnx_attr_ints(c->m, n, "kernel_shape", &ks, &cnt));
    if (ks) *nsp = (int)cnt;
    else if (w >= 0 && c->g->values[w].ndim >= 2) *nsp = c->g->values[w].ndim - 2;
    else
        return pf_oimp_fail(c, n, PF_ERR_UNSUPPORTED,
                            "kernel_shape is absent and the weight's shape is unknown at import");
    if (*nsp < 1 || *nsp > 2)
        return pf_oimp_fail(c, n, PF_ERR_UNSUPPORTED,
                            "%dD kernels are not supported (1D and 2D only)", *nsp);
    return PF_OK;
}

/* kernel/strides/dilations/pads shared by convolutions and pools. */
static pf_status window_attrs(pf_oimp *c, const pf_onnx_node *n, int nsp, int w, int64_t *kernel,
                              int64_t *stride, int64_t *dilation, int64_t *pb, int64_t *pe,
                              pf_ir_auto_pad *ap)
{
    int64_t pads[4] = {0, 0, 0, 0};
    for (int i = 0; i < 2; i++) {
        kernel[i] = 1;
        stride[i] = 1;
        dilation[i] = 1;
    }
    const int64_t *ks;
    size_t cnt;
    TRY(pf_onnx_attr_ints(c->m, n, "kernel_shape", &ks, &cnt));
    if (ks) {
        for (int i = 0; i < nsp; i++) kernel[i] = ks[i];
    } else if (w >= 0 && c->g->values[w].ndim == nsp + 2) {
        for (int i = 0; i < nsp; i++) kernel[i] = c->g->values[w].dims[2 + i];
    } else {
        return pf_oimp_fail(c, n, PF_ERR_UNSUPPORTED, "kernel_shape is absent");
    }
    TRY(ints_exact(c, n, "strides", (size_t)nsp, stride));
    TRY(ints_exact(c, n, "dilations", (size_t)nsp, dilation));
    TRY(ints_exact(c, n, "pads", 2 * (size_t)nsp, pads));
    for (int i = 0; i < nsp; i++) {
        if (kernel[i] < 1 || stride[i] < 1 || dilation[i] < 1)
            return pf_oimp_fail(c, n, PF_ERR_FORMAT, "kernel %lld, stride %lld and dilation %lld "
                                "must be >= 1", (long long)kernel[i], (long long)stride[i],
                                (long long)dilation[i]);
        pb[i] = pads[i];
        pe[i] = pads[nsp + i];
        if (pb[i] < 0 || pe[i] < 0)
            return pf_oimp_fail(c, n, PF_ERR_UNSUPPORTED, "negative pads are not supported");
    }
    return auto_pad_of(c, n, ap);
}

pf_status pf_oimp_conv_attr(pf_oimp *c, const pf_onnx_node *n, int w, pf_ir_attr *a)
{
    memset(a, 0, sizeof *a);
    pf_ir_conv_attr *cv = &a->conv;
    TRY(spatial_rank(c, n, w, &cv->nsp));
    TRY(window_attrs(c, n, cv->nsp, w, cv->kernel, cv->stride, cv->dilation, cv->pad_begin,
                     cv->pad_end, &cv->auto_pad));
    TRY(pf_onnx_attr_int(c->m, n, "group", 1, &cv->group));
    if (cv->group < 1) return pf_oimp_fail(c, n, PF_ERR_FORMAT, "group %lld < 1", (long long)cv->group);
    return PF_OK;
}

static pf_status convert_conv(pf_oimp *c, const pf_onnx_node *n, bool transpose)
{
    int in[3];
    TRY(pf_oimp_in_req(c, n, 0, &in[0]));
    TRY(pf_oimp_in_req(c, n, 1, &in[1]));
    TRY(pf_oimp_in(c, n, 2, &in[2]));
    pf_ir_attr a;
    TRY(pf_oimp_conv_attr(c, n, in[1], &a));
    pf_ir_conv_attr *cv = &a.conv;
    if (transpose) {
        TRY(ints_exact(c, n, "output_padding", (size_t)cv->nsp, cv->output_padding));
        const int64_t *os;
        size_t cnt;
        TRY(pf_onnx_attr_ints(c->m, n, "output_shape", &os, &cnt));
        if (os) {
            /* Some exporters write N and C too: keep the spatial tail. */
            if (cnt != (size_t)cv->nsp && cnt != (size_t)cv->nsp + 2)
                return pf_oimp_fail(c, n, PF_ERR_FORMAT, "output_shape has %zu values", cnt);
            for (int i = 0; i < cv->nsp; i++) cv->output_shape[i] = os[cnt - (size_t)cv->nsp + (size_t)i];
        }
    }
    return pf_oimp_emit_final(c, n, transpose ? PF_IR_CONV_TRANSPOSE : PF_IR_CONV, in,
                              in[2] >= 0 ? 3 : 2, &a);
}

static pf_status convert_pool(pf_oimp *c, const pf_onnx_node *n, pf_ir_op op)
{
    int x;
    TRY(pf_oimp_in_req(c, n, 0, &x));
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    pf_ir_pool_attr *p = &a.pool;
    if (op == PF_IR_MAXPOOL || op == PF_IR_AVGPOOL) {
        TRY(spatial_rank(c, n, -1, &p->nsp));
        TRY(window_attrs(c, n, p->nsp, -1, p->kernel, p->stride, p->dilation, p->pad_begin,
                         p->pad_end, &p->auto_pad));
        int64_t v;
        TRY(pf_onnx_attr_int(c->m, n, "ceil_mode", 0, &v));
        p->ceil_mode = v != 0;
        TRY(pf_onnx_attr_int(c->m, n, "count_include_pad", 0, &v));
        p->count_include_pad = v != 0;
        if (op == PF_IR_AVGPOOL && (p->dilation[0] != 1 || p->dilation[1] != 1))
            return pf_oimp_unsupported_attr(c, n, "dilations", "(not 1)");
    }
    return pf_oimp_emit_final(c, n, op, &x, 1, &a);
}

static pf_status convert_batchnorm(pf_oimp *c, const pf_onnx_node *n)
{
    int in[5];
    for (size_t k = 0; k < 5; k++) TRY(pf_oimp_in_req(c, n, k, &in[k]));
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    TRY(pf_onnx_attr_float(c->m, n, "epsilon", 1e-5f, &a.bn.epsilon));
    int64_t v;
    TRY(pf_onnx_attr_int(c->m, n, "training_mode", 0, &v));
    if (v) return pf_oimp_unsupported_attr(c, n, "training_mode", "1");
    TRY(pf_onnx_attr_int(c->m, n, "spatial", 1, &v));
    if (!v) return pf_oimp_unsupported_attr(c, n, "spatial", "0");
    return pf_oimp_emit_final(c, n, PF_IR_BATCHNORM, in, 5, &a);
}

static pf_status convert_gemm(pf_oimp *c, const pf_onnx_node *n)
{
    int in[3];
    TRY(pf_oimp_in_req(c, n, 0, &in[0]));
    TRY(pf_oimp_in_req(c, n, 1, &in[1]));
    TRY(pf_oimp_in(c, n, 2, &in[2]));
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    int64_t ta, tb;
    TRY(pf_onnx_attr_float(c->m, n, "alpha", 1.0f, &a.gemm.alpha));
    TRY(pf_onnx_attr_float(c->m, n, "beta", 1.0f, &a.gemm.beta));
    TRY(pf_onnx_attr_int(c->m, n, "transA", 0, &ta));
    TRY(pf_onnx_attr_int(c->m, n, "transB", 0, &tb));
    a.gemm.trans_a = ta != 0;
    a.gemm.trans_b = tb != 0;
    return pf_oimp_emit_final(c, n, PF_IR_GEMM, in, in[2] >= 0 ? 3 : 2, &a);
}

static pf_status convert_softmax(pf_oimp *c, const pf_onnx_node *n, pf_ir_op op)
{
    int x;
    TRY(pf_oimp_in_req(c, n, 0, &x));
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.axis.legacy = n->opset < 13;
    TRY(pf_onnx_attr_int(c->m, n, "axis", a.axis.legacy ? 1 : -1, &a.axis.axis));
    return pf_oimp_emit_final(c, n, op, &x, 1, &a);
}

static pf_status convert_reduce(pf_oimp *c, const pf_onnx_node *n, pf_ir_op op)
{
    int in[2] = {-1, -1};
    TRY(pf_oimp_in_req(c, n, 0, &in[0]));
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    pf_ir_reduce_attr *r = &a.reduce;
    int64_t v;
    TRY(pf_onnx_attr_int(c->m, n, "keepdims", 1, &v));
    r->keepdims = v != 0;
    /* ReduceSum takes axes as an input from opset 13 (the others from 18). */
    bool axes_input = op == PF_IR_REDUCE_SUM && n->opset >= 13;
    if (axes_input) {
        TRY(pf_onnx_attr_int(c->m, n, "noop_with_empty_axes", 0, &v));
        r->noop_with_empty_axes = v != 0;
        TRY(pf_oimp_in(c, n, 1, &in[1]));
        if (in[1] >= 0 && !pf_oimp_const(c, in[1]))
            return pf_oimp_emit_final(c, n, op, in, 2, &a);
        if (in[1] >= 0) TRY(pf_oimp_const_ints(c, n, in[1], "axes", r->axes, PF_IR_MAX_RANK, &r->n));
    } else {
        const int64_t *ax;
        size_t cnt;
        TRY(pf_onnx_attr_ints(c->m, n, "axes", &ax, &cnt));
        if (cnt > PF_IR_MAX_RANK)
            return pf_oimp_fail(c, n, PF_ERR_UNSUPPORTED, "%zu axes (at most %d)", cnt, PF_IR_MAX_RANK);
        for (size_t i = 0; i < cnt; i++) r->axes[i] = ax[i];
        r->n = (int)cnt;
    }
    return pf_oimp_emit_final(c, n, op, in, 1, &a);
}

static pf_status convert_argminmax(pf_oimp *c, const pf_onnx_node *n, pf_ir_op op)
{
    int x;
    TRY(pf_oimp_in_req(c, n, 0, &x));
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    int64_t v;
    a.reduce.n = 1;
    TRY(pf_onnx_attr_int(c->m, n, "axis", 0, &a.reduce.axes[0]));
    TRY(pf_onnx_attr_int(c->m, n, "keepdims", 1, &v));
    a.reduce.keepdims = v != 0;
    TRY(pf_onnx_attr_int(c->m, n, "select_last_index", 0, &v));
    a.reduce.select_last_index = v != 0;
    return pf_oimp_emit(c, n, op, &x, 1, 1, &a, PF_IR_I64, NULL);
}

static const struct {
    const char *name;
    pf_ir_op op;
} k_reduce[] = {
    {"ReduceMean", PF_IR_REDUCE_MEAN}, {"ReduceSum", PF_IR_REDUCE_SUM},
    {"ReduceMax", PF_IR_REDUCE_MAX},   {"ReduceMin", PF_IR_REDUCE_MIN},
    {"ReduceProd", PF_IR_REDUCE_PROD}, {"ReduceL2", PF_IR_REDUCE_L2},
    {"ReduceSumSquare", PF_IR_REDUCE_SUM_SQUARE},
};

pf_status pf_oimp_convert_nn(pf_oimp *c, const pf_onnx_node *n, bool *handled)
{
    const char *t = n->op_type;
    *handled = true;
    if (!strcmp(t, "Conv")) return convert_conv(c, n, false);
    if (!strcmp(t, "ConvTranspose")) return convert_conv(c, n, true);
    if (!strcmp(t, "BatchNormalization")) return convert_batchnorm(c, n);
    if (!strcmp(t, "MaxPool")) return convert_pool(c, n, PF_IR_MAXPOOL);
    if (!strcmp(t, "AveragePool")) return convert_pool(c, n, PF_IR_AVGPOOL);
    if (!strcmp(t, "GlobalAveragePool")) return convert_pool(c, n, PF_IR_GLOBAL_AVGPOOL);
    if (!strcmp(t, "GlobalMaxPool")) return convert_pool(c, n, PF_IR_GLOBAL_MAXPOOL);
    if (!strcmp(t, "Gemm")) return convert_gemm(c, n);
    if (!strcmp(t, "MatMul")) {
        int in[2];
        TRY(pf_oimp_in_req(c, n, 0, &in[0]));
        TRY(pf_oimp_in_req(c, n, 1, &in[1]));
        return pf_oimp_emit_final(c, n, PF_IR_MATMUL, in, 2, NULL);
    }
    if (!strcmp(t, "Softmax")) return convert_softmax(c, n, PF_IR_SOFTMAX);
    if (!strcmp(t, "LogSoftmax")) return convert_softmax(c, n, PF_IR_LOG_SOFTMAX);
    if (!strcmp(t, "ArgMax")) return convert_argminmax(c, n, PF_IR_ARGMAX);
    if (!strcmp(t, "ArgMin")) return convert_argminmax(c, n, PF_IR_ARGMIN);
    for (size_t i = 0; i < sizeof k_reduce / sizeof k_reduce[0]; i++)
        if (!strcmp(t, k_reduce[i].name)) return convert_reduce(c, n, k_reduce[i].op);
    *handled = false;
    return PF_OK;
}
