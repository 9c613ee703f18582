/* TFLite import: one converter per operator (layout rules in
 * tflite_import_priv.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "tflite_import_priv.h"

/* Builtin codes of schema.fbs that tflite_reader.h does not name. */
#define TFL_OP_RELU_N1_TO_1 20
#define TFL_OP_PRELU 54

#define TRY(x) \
    do { \
        pf_status st_ = (x); \
        if (st_ != PF_OK) return st_; \
    } while (0)

static pf_ir_attr zeroed(void)
{
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    return a;
}

static int nin(const pf_tfl_operator *op, int k) { return k < op->n_inputs ? op->inputs[k] : -1; }

static int rank_of(const pf_timp *c, int t) { return c->sg->tensors[t].ndim; }

static pf_status need_inputs(pf_timp *c, const pf_tfl_operator *op, int lo, int hi)
{
    if (op->n_inputs < lo || op->n_inputs > hi || op->n_outputs != 1 || op->outputs[0] < 0)
        return pf_timp_fail(c, PF_ERR_FORMAT, "has %d inputs and %d outputs (expected %d..%d "
                            "and 1)", op->n_inputs, op->n_outputs, lo, hi);
    for (int k = 0; k < lo; k++)
        if (op->inputs[k] < 0) return pf_timp_fail(c, PF_ERR_FORMAT, "input %d is absent", k);
    return PF_OK;
}

/* Fused activation: on the node when the IR allows it there, else a node of its own. */
static pf_status emit_act(pf_timp *c, pf_ir_op op, const int *in, int n_in, const pf_ir_attr *a,
                          int act, int t_out)
{
    pf_ir_act ia = PF_IR_ACT_NONE;
    float lo = 0, hi = 0;
    pf_ir_op sep = PF_IR_OP_INVALID;
    switch (act) {
    case PF_TFL_ACT_NONE: break;
    case PF_TFL_ACT_RELU: ia = PF_IR_ACT_RELU; sep = PF_IR_RELU; break;
    case PF_TFL_ACT_RELU6: ia = PF_IR_ACT_CLIP; lo = 0; hi = 6; sep = PF_IR_CLIP; break;
    case PF_TFL_ACT_RELU_N1_TO_1: ia = PF_IR_ACT_CLIP; lo = -1; hi = 1; sep = PF_IR_CLIP; break;
    case PF_TFL_ACT_TANH: ia = PF_IR_ACT_TANH; sep = PF_IR_TANH; break;
    default: return pf_timp_fail(c, PF_ERR_UNSUPPORTED, "fused activation %d is not supported", act);
    }
    bool fusable = op == PF_IR_CONV || op == PF_IR_CONV_TRANSPOSE || op == PF_IR_GEMM ||
                   op == PF_IR_MATMUL || op == PF_IR_ADD || op == PF_IR_SUB || op == PF_IR_MUL ||
                   op == PF_IR_DIV;
    if (ia == PF_IR_ACT_NONE || fusable) {
        int node;
        TRY(pf_timp_node_out(c, op, in, n_in, a, t_out, &node));
        c->g->nodes[node].act = ia;
        c->g->nodes[node].act_a = lo;
        c->g->nodes[node].act_b = hi;
        return PF_OK;
    }
    int mid;
    TRY(pf_timp_node_tmp(c, op, in, n_in, a, &mid));
    pf_ir_attr u = zeroed();
    u.unary.alpha = lo;
    u.unary.beta = hi;
    return pf_timp_node_out(c, sep, &mid, 1, &u, t_out, NULL);
}

/* TFLite SAME: out = ceil(in / s), total pad = max((out-1)*s + (k-1)*d + 1 - in, 0),
 * the odd pixel at the end. */
static void same_pad(int64_t in, int64_t k, int64_t s, int64_t d, int64_t *b, int64_t *e)
{
    int64_t out = (in + s - 1) / s;
    int64_t total = (out - 1) * s + (k - 1) * d + 1 - in;
    if (total < 0) total = 0;
    *b = total / 2;
    *e = total - *b;
}

static pf_status spatial_in(pf_timp *c, int t, int64_t *h, int64_t *w)
{
    const pf_tfl_tensor *tt = &c->sg->tensors[t];
    *h = *w = 0;
    if (tt->ndim != 4)
        return pf_timp_fail(c, PF_ERR_FORMAT, "input '%s' has rank %d, expected 4 (NHWC)",
                            tt->name, tt->ndim);
    *h = tt->shape[1];
    *w = tt->shape[2];
    return PF_OK;
}

/* Weights as an IR constant permuted by perm, or a runtime TRANSPOSE. */
static pf_status weights(pf_timp *c, int t, const int *perm, int *id)
{
    if (rank_of(c, t) != 4)
        return pf_timp_fail(c, PF_ERR_FORMAT, "weights '%s' have rank %d, expected 4",
                            c->sg->tensors[t].name, rank_of(c, t));
    if (c->slots[t].cdata && c->slots[t].value < 0) return pf_timp_const_permuted(c, t, perm, id);
    /* A runtime 4D tensor is held NCHW ([0,3,1,2] of the file): compose. */
    int v;
    TRY(pf_timp_value(c, t, &v));
    int64_t p[4];
    static const int inv[4] = {0, 2, 3, 1}; /* file axis -> NCHW position */
    for (int i = 0; i < 4; i++) p[i] = inv[perm[i]];
    return pf_timp_transpose(c, v, p, id);
}

static pf_status bias(pf_timp *c, const pf_tfl_operator *op, int k, int *id)
{
    *id = -1;
    int t = nin(op, k);
    if (t < 0) return PF_OK;
    return pf_timp_value(c, t, id);
}

static pf_status convert_conv(pf_timp *c, const pf_tfl_operator *op, bool depthwise)
{
    TRY(need_inputs(c, op, 2, 3));
    int x = op->inputs[0], w = op->inputs[1];
    int64_t h, wd;
    TRY(spatial_in(c, x, &h, &wd));
    pf_ir_attr a = zeroed();
    pf_ir_conv_attr *cv = &a.conv;
    int pad, act;
    if (depthwise) {
        const pf_tfl_depthwise_opts *o = &op->opts.u.depthwise;
        if (op->opts.kind != PF_TFL_OPTS_DEPTHWISE_CONV2D)
            return pf_timp_fail(c, PF_ERR_FORMAT, "options are missing");
        cv->stride[0] = o->stride_h; cv->stride[1] = o->stride_w;
        cv->dilation[0] = o->dilation_h; cv->dilation[1] = o->dilation_w;
        pad = o->padding; act = o->activation;
    } else {
        const pf_tfl_conv2d_opts *o = &op->opts.u.conv2d;
        if (op->opts.kind != PF_TFL_OPTS_CONV2D)
            return pf_timp_fail(c, PF_ERR_FORMAT, "options are missing");
        cv->stride[0] = o->stride_h; cv->stride[1] = o->stride_w;
        cv->dilation[0] = o->dilation_h; cv->dilation[1] = o->dilation_w;
        pad = o->padding; act = o->activation;
    }
    const pf_tfl_tensor *wt = &c->sg->tensors[w], *xt = &c->sg->tensors[x];
    if (wt->ndim != 4) return pf_timp_fail(c, PF_ERR_FORMAT, "weights have rank %d", wt->ndim);
    cv->nsp = 2;
    cv->kernel[0] = wt->shape[1];
    cv->kernel[1] = wt->shape[2];
    int64_t cin = xt->shape[3];
    int in[3];
    TRY(pf_timp_value(c, x, &in[0]));
    if (depthwise) {
        /* [1, kh, kw, C*m] -> [C*m, 1, kh, kw], one group per input channel. */
        static const int perm[4] = {3, 0, 1, 2};
        if (wt->shape[0] != 1 || cin < 1 || wt->shape[3] % cin)
            return pf_timp_fail(c, PF_ERR_FORMAT, "depthwise weights [%d,%d,%d,%d] do not fit "
                                "%lld input channels", wt->shape[0], wt->shape[1], wt->shape[2],
                                wt->shape[3], (long long)cin);
        cv->group = cin;
        TRY(weights(c, w, perm, &in[1]));
    } else {
        static const int perm[4] = {0, 3, 1, 2}; /* [O, kh, kw, I] -> [O, I, kh, kw] */
        if (wt->shape[3] < 1 || cin % wt->shape[3])
            return pf_timp_fail(c, PF_ERR_FORMAT, "weights' %d input channels do not divide "
                                "the input's %lld", wt->shape[3], (long long)cin);
        cv->group = cin / wt->shape[3];
        TRY(weights(c, w, perm, &in[1]));
    }
    if (pad == PF_TFL_PADDING_SAME) {
        same_pad(h, cv->kernel[0], cv->stride[0], cv->dilation[0], &cv->pad_begin[0], &cv->pad_end[0]);
        same_pad(wd, cv->kernel[1], cv->stride[1], cv->dilation[1], &cv->pad_begin[1], &cv->pad_end[1]);
    }
    TRY(bias(c, op, 2, &in[2]));
    return emit_act(c, PF_IR_CONV, in, in[2] >= 0 ? 3 : 2, &a, act, op->outputs[0]);
}

/* TRANSPOSE_CONV (output_shape, weights, input, bias?) and MediaPipe's
 * Convolution2DTransposeBias (input, weights, bias): weights [O, kh, kw, I]
 * -> ONNX [I, O, kh, kw]. Pads follow from the wanted output size as TFLite
 * computes them (begin = total / 2); an output larger than the kernel
 * reaches becomes output_padding. */
static pf_status convert_transpose_conv(pf_timp *c, const pf_tfl_operator *op, bool mediapipe)
{
    int x, w, b = -1, act = PF_TFL_ACT_NONE, pad;
    int64_t sh, sw, oh, ow, h, wd;
    pf_ir_attr a = zeroed();
    pf_ir_conv_attr *cv = &a.conv;
    if (mediapipe) {
        TRY(need_inputs(c, op, 3, 3));
        if (op->opts.kind != PF_TFL_OPTS_CONV2D_TRANSPOSE_BIAS)
            return pf_timp_fail(c, PF_ERR_FORMAT, "custom options are missing");
        const pf_tfl_conv2d_transpose_bias_opts *o = &op->opts.u.conv2d_transpose_bias;
        x = op->inputs[0]; w = op->inputs[1]; b = op->inputs[2];
        sh = o->stride_h; sw = o->stride_w; pad = o->padding;
        TRY(spatial_in(c, x, &h, &wd));
        oh = pad == PF_TFL_PADDING_SAME ? h * sh : 0;
        ow = pad == PF_TFL_PADDING_SAME ? wd * sw : 0;
    } else {
        TRY(need_inputs(c, op, 3, 4));
        if (op->opts.kind != PF_TFL_OPTS_TRANSPOSE_CONV)
            return pf_timp_fail(c, PF_ERR_FORMAT, "options are missing");
        const pf_tfl_transpose_conv_opts *o = &op->opts.u.transpose_conv;
        x = op->inputs[2]; w = op->inputs[1]; b = nin(op, 3);
        sh = o->stride_h; sw = o->stride_w; pad = o->padding; act = o->activation;
        TRY(spatial_in(c, x, &h, &wd));
        const pf_timp_slot *s = &c->slots[op->inputs[0]];
        if (!s->cdata || s->cdtype != PF_IR_I32 || s->cbytes != 16)
            return pf_timp_fail(c, PF_ERR_UNSUPPORTED, "output_shape must be a constant int32[4]");
        int32_t os[4];
        memcpy(os, s->cdata, sizeof os);
        oh = os[1];
        ow = os[2];
    }
    const pf_tfl_tensor *wt = &c->sg->tensors[w];
    if (wt->ndim != 4) return pf_timp_fail(c, PF_ERR_FORMAT, "weights have rank %d", wt->ndim);
    cv->nsp = 2;
    cv->group = 1;
    cv->kernel[0] = wt->shape[1];
    cv->kernel[1] = wt->shape[2];
    cv->stride[0] = sh;
    cv->stride[1] = sw;
    cv->dilation[0] = cv->dilation[1] = 1;
    int64_t in_sz[2] = {h, wd}, out_sz[2] = {oh, ow};
    for (int i = 0; i < 2; i++) {
        int64_t full = (in_sz[i] - 1) * cv->stride[i] + cv->kernel[i];
        if (out_sz[i] == 0) out_sz[i] = full; /* VALID without a given size */
        int64_t total = full - out_sz[i];
        if (total >= 0) {
            cv->pad_begin[i] = pad == PF_TFL_PADDING_SAME ? total / 2 : 0;
            cv->pad_end[i] = total - cv->pad_begin[i];
        } else {
            cv->output_padding[i] = -total;
            if (-total >= cv->stride[i])
                return pf_timp_fail(c, PF_ERR_UNSUPPORTED, "output size %lld is beyond what "
                                    "the kernel reaches (%lld)", (long long)out_sz[i],
                                    (long long)full);
        }
    }
    static const int perm[4] = {3, 0, 1, 2};
    int in[3];
    TRY(pf_timp_value(c, x, &in[0]));
    TRY(weights(c, w, perm, &in[1]));
    in[2] = -1;
    if (b >= 0) TRY(pf_timp_value(c, b, &in[2]));
    return emit_act(c, PF_IR_CONV_TRANSPOSE, in, in[2] >= 0 ? 3 : 2, &a, act, op->outputs[0]);
}

static pf_status convert_pool(pf_timp *c, const pf_tfl_operator *op, pf_ir_op kind)
{
    TRY(need_inputs(c, op, 1, 1));
    if (op->opts.kind != PF_TFL_OPTS_POOL2D)
        return pf_timp_fail(c, PF_ERR_FORMAT, "options are missing");
    const pf_tfl_pool2d_opts *o = &op->opts.u.pool2d;
    int64_t h, w;
    TRY(spatial_in(c, op->inputs[0], &h, &w));
    pf_ir_attr a = zeroed();
    pf_ir_pool_attr *p = &a.pool;
    p->nsp = 2;
    p->kernel[0] = o->filter_h; p->kernel[1] = o->filter_w;
    p->stride[0] = o->stride_h; p->stride[1] = o->stride_w;
    p->dilation[0] = p->dilation[1] = 1;
    p->count_include_pad = false; /* TFLite averages over the valid pixels only */
    if (o->padding == PF_TFL_PADDING_SAME) {
        same_pad(h, p->kernel[0], p->stride[0], 1, &p->pad_begin[0], &p->pad_end[0]);
        same_pad(w, p->kernel[1], p->stride[1], 1, &p->pad_begin[1], &p->pad_end[1]);
    }
    int x;
    TRY(pf_timp_value(c, op->inputs[0], &x));
    return emit_act(c, kind, &x, 1, &a, o->activation, op->outputs[0]);
}

static pf_status convert_binary(pf_timp *c, const pf_tfl_operator *op, pf_ir_op kind)
{
    TRY(need_inputs(c, op, 2, 2));
    int in[2], act = op->opts.kind == PF_TFL_OPTS_ELEMENTWISE ? op->opts.u.elementwise.activation : 0;
    bool four = rank_of(c, op->inputs[0]) == 4 || rank_of(c, op->inputs[1]) == 4;
    for (int k = 0; k < 2; k++)
        TRY(four ? pf_timp_value_nchw4(c, op->inputs[k], &in[k]) : pf_timp_value(c, op->inputs[k], &in[k]));
    return emit_act(c, kind, in, 2, NULL, act, op->outputs[0]);
}

static pf_status convert_unary(pf_timp *c, const pf_tfl_operator *op, pf_ir_op kind, float alpha,
                               float beta)
{
    TRY(need_inputs(c, op, 1, 1));
    int x;
    pf_ir_attr a = zeroed();
    a.unary.alpha = alpha;
    a.unary.beta = beta;
    TRY(pf_timp_value(c, op->inputs[0], &x));
    return pf_timp_node_out(c, kind, &x, 1, &a, op->outputs[0], NULL);
}

/* NHWC axis of a rank-4 tensor -> its NCHW position. */
static int64_t nchw_axis(int64_t ax) { static const int64_t m[4] = {0, 2, 3, 1}; return m[ax]; }

static pf_status const_i32s(pf_timp *c, int t, const char *what, int64_t *out, int max, int *n)
{
    const pf_timp_slot *s = &c->slots[t];
    if (!s->cdata || (s->cdtype != PF_IR_I32 && s->cdtype != PF_IR_I64))
        return pf_timp_fail(c, PF_ERR_UNSUPPORTED, "%s must be a constant int32 tensor", what);
    size_t es = pf_ir_dtype_size(s->cdtype), cnt = s->cbytes / es;
    if (cnt > (size_t)max) return pf_timp_fail(c, PF_ERR_UNSUPPORTED, "%s has %zu entries", what, cnt);
    for (size_t i = 0; i < cnt; i++) {
        if (es == 4) {
            int32_t v;
            memcpy(&v, (const char *)s->cdata + 4 * i, 4);
            out[i] = v;
        } else {
            memcpy(&out[i], (const char *)s->cdata + 8 * i, 8);
        }
    }
    *n = (int)cnt;
    return PF_OK;
}

/* Output back to IR layout: a rank-4 result computed in NHWC goes to NCHW. */
static pf_status finish_nhwc(pf_timp *c, int v, int t)
{
    if (rank_of(c, t) != 4) {
        pf_ir_attr a = zeroed();
        return pf_timp_node_out(c, PF_IR_IDENTITY, &v, 1, &a, t, NULL);
    }
    pf_ir_attr a = zeroed();
    a.transpose.n = 4;
    memcpy(a.transpose.perm, pf_timp_to_nchw, sizeof pf_timp_to_nchw);
    return pf_timp_node_out(c, PF_IR_TRANSPOSE, &v, 1, &a, t, NULL);
}

static pf_status convert_reduce(pf_timp *c, const pf_tfl_operator *op, pf_ir_op kind)
{
    TRY(need_inputs(c, op, 2, 2));
    int x = op->inputs[0], r = rank_of(c, x), n, v;
    pf_ir_attr a = zeroed();
    TRY(const_i32s(c, op->inputs[1], "axes", a.reduce.axes, PF_IR_MAX_RANK, &n));
    a.reduce.n = n;
    bool keep = op->opts.kind == PF_TFL_OPTS_REDUCER && op->opts.u.reducer.keep_dims;
    TRY(pf_timp_value(c, x, &v));
    if (r != 4) {
        a.reduce.keepdims = keep;
        return pf_timp_node_out(c, kind, &v, 1, &a, op->outputs[0], NULL);
    }
    for (int i = 0; i < n; i++) {
        int64_t ax = a.reduce.axes[i] < 0 ? a.reduce.axes[i] + 4 : a.reduce.axes[i];
        if (ax < 0 || ax > 3) return pf_timp_fail(c, PF_ERR_FORMAT, "axis %lld", (long long)ax);
        a.reduce.axes[i] = nchw_axis(ax);
    }
    a.reduce.keepdims = true;
    if (keep) return pf_timp_node_out(c, kind, &v, 1, &a, op->outputs[0], NULL);
    /* Dropping axes in NCHW order would scramble the rest: reduce with
     * kept dims, go back to NHWC, then drop them there. */
    int red, nhwc, sq;
    TRY(pf_timp_node_tmp(c, kind, &v, 1, &a, &red));
    TRY(pf_timp_transpose(c, red, pf_timp_to_nhwc, &nhwc));
    pf_ir_attr s = zeroed();
    s.reshape.kind = PF_IR_RESHAPE_SQUEEZE;
    s.reshape.n = n;
    TRY(const_i32s(c, op->inputs[1], "axes", s.reshape.axes, PF_IR_MAX_RANK, &n));
    TRY(pf_timp_node_tmp(c, PF_IR_RESHAPE, &nhwc, 1, &s, &sq));
    return finish_nhwc(c, sq, op->outputs[0]);
}

static pf_status convert_resize(pf_timp *c, const pf_tfl_operator *op, bool bilinear)
{
    TRY(need_inputs(c, op, 2, 2));
    int x = op->inputs[0], n, v, node;
    int64_t size[PF_IR_MAX_RANK], dims[PF_IR_MAX_RANK];
    if (rank_of(c, x) != 4) return pf_timp_fail(c, PF_ERR_FORMAT, "input must be 4D");
    TRY(const_i32s(c, op->inputs[1], "size", size, PF_IR_MAX_RANK, &n));
    if (n != 2 || size[0] < 1 || size[1] < 1)
        return pf_timp_fail(c, PF_ERR_FORMAT, "size must hold 2 positive values");
    bool ac = false, hp = false;
    if (op->opts.kind == PF_TFL_OPTS_RESIZE) {
        ac = op->opts.u.resize.align_corners;
        hp = op->opts.u.resize.half_pixel_centers;
    }
    if (ac && hp)
        return pf_timp_fail(c, PF_ERR_UNSUPPORTED, "align_corners with half_pixel_centers");
    pf_ir_attr a = zeroed();
    pf_ir_resize_attr *r = &a.resize;
    r->mode = bilinear ? PF_IR_RESIZE_LINEAR : PF_IR_RESIZE_NEAREST;
    if (bilinear) {
        /* TF's half-pixel bilinear clamps source coordinates at 0 as ONNX does. */
        r->coord = ac ? PF_IR_COORD_ALIGN_CORNERS : hp ? PF_IR_COORD_HALF_PIXEL
                                                       : PF_IR_COORD_ASYMMETRIC;
    } else if (ac) {
        /* round((x) * (in-1)/(out-1)), halves away from zero (x >= 0). */
        r->coord = PF_IR_COORD_ALIGN_CORNERS;
        r->nearest = PF_IR_NEAREST_ROUND_PREFER_CEIL;
    } else if (hp) {
        /* floor((x + 0.5) * in/out) is ONNX's tf_half_pixel_for_nn with floor. */
        r->coord = PF_IR_COORD_TF_HALF_PIXEL_FOR_NN;
        r->nearest = PF_IR_NEAREST_FLOOR;
    } else {
        r->coord = PF_IR_COORD_ASYMMETRIC;
        r->nearest = PF_IR_NEAREST_FLOOR;
    }
    TRY(pf_timp_value(c, x, &v));
    TRY(pf_timp_node_out(c, PF_IR_RESIZE, &v, 1, &a, op->outputs[0], &node));
    pf_timp_shape(c, x, dims);
    pf_ir_value *out = &c->g->values[c->g->nodes[node].out[0]];
    out->ndim = 4;
    out->dims[0] = dims[0];
    out->dims[1] = dims[3];
    out->dims[2] = size[0];
    out->dims[3] = size[1];
    return PF_OK;
}

static pf_status convert_pad(pf_timp *c, const pf_tfl_operator *op)
{
    TRY(need_inputs(c, op, 2, 2));
    int x = op->inputs[0], r = rank_of(c, x), n, v;
    int64_t p[2 * PF_IR_MAX_RANK];
    TRY(const_i32s(c, op->inputs[1], "paddings", p, 2 * PF_IR_MAX_RANK, &n));
    if (n != 2 * r) return pf_timp_fail(c, PF_ERR_FORMAT, "paddings has %d values for rank %d", n, r);
    pf_ir_attr a = zeroed();
    a.pad.n = r;
    a.pad.mode = PF_IR_PADMODE_CONSTANT;
    for (int i = 0; i < r; i++) {
        int d = r == 4 ? (int)nchw_axis(i) : i;
        a.pad.begin[d] = p[2 * i];
        a.pad.end[d] = p[2 * i + 1];
    }
    TRY(pf_timp_value(c, x, &v));
    return pf_timp_node_out(c, PF_IR_PAD, &v, 1, &a, op->outputs[0], NULL);
}

static pf_status convert_reshape(pf_timp *c, const pf_tfl_operator *op)
{
    TRY(need_inputs(c, op, 1, 2));
    int x = op->inputs[0], out_t = op->outputs[0], v, n = 0;
    pf_ir_attr a = zeroed();
    a.reshape.kind = PF_IR_RESHAPE_SHAPE;
    if (nin(op, 1) >= 0 && c->slots[op->inputs[1]].cdata) {
        TRY(const_i32s(c, op->inputs[1], "shape", a.reshape.shape, PF_IR_MAX_RANK, &n));
    } else if (op->opts.kind == PF_TFL_OPTS_RESHAPE && op->opts.u.reshape.new_shape) {
        n = op->opts.u.reshape.n_new_shape;
        if (n > PF_IR_MAX_RANK) return pf_timp_fail(c, PF_ERR_UNSUPPORTED, "rank %d", n);
        for (int i = 0; i < n; i++) a.reshape.shape[i] = op->opts.u.reshape.new_shape[i];
    } else {
        /* The output tensor's static shape is the answer. */
        n = rank_of(c, out_t);
        for (int i = 0; i < n; i++) a.reshape.shape[i] = c->sg->tensors[out_t].shape[i];
    }
    a.reshape.n = n;
    /* A symbolic batch stays symbolic: copy dim 0 instead of the file's 1. */
    if (n > 0 && pf_timp_batched(c, x) && (a.reshape.shape[0] == 1 || a.reshape.shape[0] == -1))
        a.reshape.shape[0] = 0;
    TRY(pf_timp_value(c, x, &v));
    if (rank_of(c, x) == 4) TRY(pf_timp_transpose(c, v, pf_timp_to_nhwc, &v));
    if (rank_of(c, out_t) != 4) return pf_timp_node_out(c, PF_IR_RESHAPE, &v, 1, &a, out_t, NULL);
    int r;
    TRY(pf_timp_node_tmp(c, PF_IR_RESHAPE, &v, 1, &a, &r));
    return finish_nhwc(c, r, out_t);
}

static pf_status convert_concat(pf_timp *c, const pf_tfl_operator *op)
{
    if (op->n_inputs < 1 || op->n_inputs > PF_IR_MAX_INPUTS || op->n_outputs != 1)
        return pf_timp_fail(c, PF_ERR_UNSUPPORTED, "%d inputs (1..%d supported)", op->n_inputs,
                            PF_IR_MAX_INPUTS);
    if (op->opts.kind != PF_TFL_OPTS_CONCATENATION)
        return pf_timp_fail(c, PF_ERR_FORMAT, "options are missing");
    int r = rank_of(c, op->outputs[0]), in[PF_IR_MAX_INPUTS];
    int64_t axis = op->opts.u.concat.axis;
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) return pf_timp_fail(c, PF_ERR_FORMAT, "axis %d", op->opts.u.concat.axis);
    pf_ir_attr a = zeroed();
    a.axis.axis = r == 4 ? nchw_axis(axis) : axis;
    for (int k = 0; k < op->n_inputs; k++) {
        if (op->inputs[k] < 0) return pf_timp_fail(c, PF_ERR_FORMAT, "input %d is absent", k);
        TRY(pf_timp_value(c, op->inputs[k], &in[k]));
    }
    return emit_act(c, PF_IR_CONCAT, in, op->n_inputs, &a, op->opts.u.concat.activation,
                    op->outputs[0]);
}

static pf_status convert_softmax(pf_timp *c, const pf_tfl_operator *op)
{
    TRY(need_inputs(c, op, 1, 1));
    int x = op->inputs[0], v;
    float beta = op->opts.kind == PF_TFL_OPTS_SOFTMAX ? op->opts.u.softmax.beta : 1.0f;
    TRY(pf_timp_value(c, x, &v));
    if (beta != 1.0f) {
        int k, in2[2];
        TRY(pf_timp_const(c, "softmax_beta", PF_IR_F32, 0, NULL, &beta, sizeof beta, &k));
        in2[0] = v;
        in2[1] = k;
        TRY(pf_timp_node_tmp(c, PF_IR_MUL, in2, 2, NULL, &v));
    }
    pf_ir_attr a = zeroed();
    a.axis.axis = rank_of(c, x) == 4 ? 1 : -1; /* TFLite: the last (channel) axis */
    return pf_timp_node_out(c, PF_IR_SOFTMAX, &v, 1, &a, op->outputs[0], NULL);
}

static uint32_t half_to_float_bits(uint16_t h)
{
    uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, f = h & 0x3ff;
    if (e == 31) return s | 0x7f800000u | (f << 13);
    if (e == 0) {
        if (!f) return s;
        float v = ldexpf((float)f, -24);
        uint32_t b;
        memcpy(&b, &v, 4);
        return s | b;
    }
    return s | ((e + 112) << 23) | (f << 13);
}

static pf_status convert_dequantize(pf_timp *c, const pf_tfl_operator *op)
{
    TRY(need_inputs(c, op, 1, 1));
    int x = op->inputs[0], o = op->outputs[0];
    const pf_tfl_tensor *xt = &c->sg->tensors[x];
    pf_timp_slot *s = &c->slots[x], *so = &c->slots[o];
    if (c->sg->tensors[o].type != PF_TFL_FLOAT32)
        return pf_timp_fail(c, PF_ERR_UNSUPPORTED, "output type %s",
                            pf_tfl_type_name(c->sg->tensors[o].type));
    if (xt->type == PF_TFL_FLOAT16 && s->cdata && so->out_value < 0 && !so->cdata) {
        /* Fold: the F32 copy becomes the output tensor's constant data. A
         * DEQUANTIZE keeps the shape, so a file whose output tensor has
         * another element count is malformed (the data would not fit it). */
        size_t cnt = s->cbytes / 2;
        int64_t want = pf_tfl_tensor_numel(&c->sg->tensors[o]);
        if (want < 0 || (uint64_t)want != cnt)
            return pf_timp_fail(c, PF_ERR_FORMAT,
                                "input '%s' has %zu elements but output '%s' has %lld", xt->name,
                                cnt, c->sg->tensors[o].name, (long long)want);
        uint32_t *buf = malloc(cnt ? cnt * 4 : 1);
        if (!buf) return pf_set_error(PF_ERR_NOMEM, "%s: out of memory", c->m->name);
        for (size_t i = 0; i < cnt; i++) {
            uint16_t h;
            memcpy(&h, (const char *)s->cdata + 2 * i, 2);
            buf[i] = half_to_float_bits(h);
        }
        so->owned = buf;
        so->cdata = buf;
        so->cbytes = cnt * 4;
        so->cdtype = PF_IR_F32;
        return PF_OK;
    }
    if (xt->type != PF_TFL_FLOAT16 || xt->has_quantization)
        return pf_timp_fail(c, PF_ERR_UNSUPPORTED, "dequantizing %s%s is not supported",
                            pf_tfl_type_name(xt->type), xt->has_quantization ? " (quantized)" : "");
    int v;
    pf_ir_attr a = zeroed();
    a.cast.to = PF_IR_F32;
    TRY(pf_timp_value(c, x, &v));
    return pf_timp_node_out(c, PF_IR_CAST, &v, 1, &a, o, NULL);
}

static pf_status convert_fully_connected(pf_timp *c, const pf_tfl_operator *op)
{
    TRY(need_inputs(c, op, 2, 3));
    int x = op->inputs[0], w = op->inputs[1], in[3], act = 0;
    if (op->opts.kind == PF_TFL_OPTS_FULLY_CONNECTED) {
        act = op->opts.u.fully_connected.activation;
        if (op->opts.u.fully_connected.weights_format != 0)
            return pf_timp_fail(c, PF_ERR_UNSUPPORTED, "shuffled weights");
        if (op->opts.u.fully_connected.keep_num_dims && rank_of(c, x) != 2)
            return pf_timp_fail(c, PF_ERR_UNSUPPORTED, "keep_num_dims on rank %d", rank_of(c, x));
    }
    if (rank_of(c, w) != 2) return pf_timp_fail(c, PF_ERR_FORMAT, "weights must be 2D");
    TRY(pf_timp_value(c, x, &in[0]));
    if (rank_of(c, x) != 2) {
        /* Rows of the NHWC data, flattened as TFLite does. */
        if (rank_of(c, x) == 4) TRY(pf_timp_transpose(c, in[0], pf_timp_to_nhwc, &in[0]));
        pf_ir_attr r = zeroed();
        r.reshape.kind = PF_IR_RESHAPE_SHAPE;
        r.reshape.n = 2;
        r.reshape.shape[0] = -1;
        r.reshape.shape[1] = c->sg->tensors[w].shape[1];
        TRY(pf_timp_node_tmp(c, PF_IR_RESHAPE, &in[0], 1, &r, &in[0]));
    }
    TRY(pf_timp_value(c, w, &in[1]));
    TRY(bias(c, op, 2, &in[2]));
    pf_ir_attr a = zeroed();
    a.gemm.alpha = a.gemm.beta = 1.0f;
    a.gemm.trans_b = true;
    return emit_act(c, PF_IR_GEMM, in, in[2] >= 0 ? 3 : 2, &a, act, op->outputs[0]);
}

pf_status pf_timp_convert_op(pf_timp *c, const pf_tfl_operator *op)
{
    switch (op->builtin) {
    case PF_TFL_OP_CONV_2D: return convert_conv(c, op, false);
    case PF_TFL_OP_DEPTHWISE_CONV_2D: return convert_conv(c, op, true);
    case PF_TFL_OP_TRANSPOSE_CONV: return convert_transpose_conv(c, op, false);
    case PF_TFL_OP_ADD: return convert_binary(c, op, PF_IR_ADD);
    case PF_TFL_OP_SUB: return convert_binary(c, op, PF_IR_SUB);
    case PF_TFL_OP_MUL: return convert_binary(c, op, PF_IR_MUL);
    case PF_TFL_OP_DIV: return convert_binary(c, op, PF_IR_DIV);
    case TFL_OP_PRELU: return convert_binary(c, op, PF_IR_PRELU);
    case PF_TFL_OP_RELU: return convert_unary(c, op, PF_IR_RELU, 0, 0);
    case PF_TFL_OP_RELU6: return convert_unary(c, op, PF_IR_CLIP, 0, 6);
    case TFL_OP_RELU_N1_TO_1: return convert_unary(c, op, PF_IR_CLIP, -1, 1);
    case PF_TFL_OP_HARD_SWISH: return convert_unary(c, op, PF_IR_HARD_SWISH, 0, 0);
    case PF_TFL_OP_LOGISTIC: return convert_unary(c, op, PF_IR_SIGMOID, 0, 0);
    case PF_TFL_OP_TANH: return convert_unary(c, op, PF_IR_TANH, 0, 0);
    case PF_TFL_OP_LEAKY_RELU:
        return convert_unary(c, op, PF_IR_LEAKY_RELU,
                             op->opts.kind == PF_TFL_OPTS_LEAKY_RELU ? op->opts.u.leaky_relu.alpha
                                                                     : 0.2f, 0);
    case PF_TFL_OP_AVERAGE_POOL_2D: return convert_pool(c, op, PF_IR_AVGPOOL);
    case PF_TFL_OP_MAX_POOL_2D: return convert_pool(c, op, PF_IR_MAXPOOL);
    case PF_TFL_OP_MEAN: return convert_reduce(c, op, PF_IR_REDUCE_MEAN);
    case PF_TFL_OP_SUM: return convert_reduce(c, op, PF_IR_REDUCE_SUM);
    case PF_TFL_OP_REDUCE_MAX: return convert_reduce(c, op, PF_IR_REDUCE_MAX);
    case PF_TFL_OP_REDUCE_MIN: return convert_reduce(c, op, PF_IR_REDUCE_MIN);
    case PF_TFL_OP_REDUCE_PROD: return convert_reduce(c, op, PF_IR_REDUCE_PROD);
    case PF_TFL_OP_RESIZE_BILINEAR: return convert_resize(c, op, true);
    case PF_TFL_OP_RESIZE_NEAREST_NEIGHBOR: return convert_resize(c, op, false);
    case PF_TFL_OP_PAD: return convert_pad(c, op);
    case PF_TFL_OP_RESHAPE: return convert_reshape(c, op);
    case PF_TFL_OP_CONCATENATION: return convert_concat(c, op);
    case PF_TFL_OP_SOFTMAX: return convert_softmax(c, op);
    case PF_TFL_OP_DEQUANTIZE: return convert_dequantize(c, op);
    case PF_TFL_OP_FULLY_CONNECTED: return convert_fully_connected(c, op);
    case PF_TFL_OP_CUSTOM:
        if (op->custom_code && !strcmp(op->custom_code, PF_TFL_CUSTOM_CONV2D_TRANSPOSE_BIAS))
            return convert_transpose_conv(c, op, true);
        return pf_timp_fail(c, PF_ERR_UNSUPPORTED, "custom operator '%s' is not supported",
                            op->custom_code ? op->custom_code : "");
    default:
        return pf_timp_fail(c, PF_ERR_UNSUPPORTED, "operator %s (code %d) is not supported",
                            pf_tfl_builtin_name(op->builtin), op->builtin);
    }
}
