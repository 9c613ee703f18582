/* IR graph -> ONNX nodes (onnx_writer.h: pf_onnx_wmodel_from_ir).
 *
 * Every IR op has ONNX (opset 17) semantics already, so lowering is a table
 * of names plus the attributes. Two things the importers did must be undone:
 * fused activations (node->act) become a node of their own after the
 * producer, and operands the importers moved into attributes because they
 * were constant (Reshape's shape, Slice's starts/ends/axes/steps, Pad's pads,
 * Resize's scales, Clip's bounds, Tile's repeats, Expand's shape, Split's
 * sizes, ReduceSum's axes) become initializers again. When the importer kept
 * such an operand as an input (it was not constant), the input is written
 * as it is. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "onnx_writer.h"

#define TRY(x) do { pf_status st_ = (x); if (st_) return st_; } while (0)

typedef struct lower {
    const pf_ir_graph *g;
    pf_onnx_wmodel *w;
    int node;                 /* IR node being lowered */
    char nbuf[512];
} lower;

static const char *vname(const lower *c, int id) { return id < 0 ? "" : c->g->values[id].name; }

static pf_status fail(lower *c, pf_status st, const char *why)
{
    char d[256];
    return pf_set_error(st, "onnx writer: %s: %s: %s", c->g->name ? c->g->name : "graph",
                        pf_ir_node_desc(c->g, c->node, d, sizeof d), why);
}

/* A fresh initializer name derived from the node's first output. */
static const char *const_name(lower *c, const char *what)
{
    const pf_ir_node *n = &c->g->nodes[c->node];
    return pf_onnx_wmodel_fresh_name(c->w, vname(c, n->out[0]), what, c->nbuf, sizeof c->nbuf);
}

static pf_status add_i64_input(lower *c, const char *what, const int64_t *v, int n, char *name,
                               size_t size)
{
    snprintf(name, size, "%s", const_name(c, what));
    return pf_onnx_wmodel_add_i64s(c->w, name, v, n);
}

static const char *act_op(pf_ir_act a)
{
    switch (a) {
    case PF_IR_ACT_RELU: return "Relu";
    case PF_IR_ACT_CLIP: return "Clip";
    case PF_IR_ACT_SIGMOID: return "Sigmoid";
    case PF_IR_ACT_TANH: return "Tanh";
    case PF_IR_ACT_LEAKY_RELU: return "LeakyRelu";
    case PF_IR_ACT_HARD_SIGMOID: return "HardSigmoid";
    case PF_IR_ACT_HARD_SWISH: return "HardSwish";
    default: return NULL;
    }
}

/* The name -> op table of the ops that need nothing but inputs/outputs. */
static const char *plain_op(pf_ir_op op)
{
    switch (op) {
    case PF_IR_RELU: return "Relu";
    case PF_IR_SIGMOID: return "Sigmoid";
    case PF_IR_TANH: return "Tanh";
    case PF_IR_HARD_SWISH: return "HardSwish";
    case PF_IR_SOFTPLUS: return "Softplus";
    case PF_IR_SOFTSIGN: return "Softsign";
    case PF_IR_ABS: return "Abs";
    case PF_IR_NEG: return "Neg";
    case PF_IR_EXP: return "Exp";
    case PF_IR_LOG: return "Log";
    case PF_IR_SQRT: return "Sqrt";
    case PF_IR_RECIPROCAL: return "Reciprocal";
    case PF_IR_FLOOR: return "Floor";
    case PF_IR_CEIL: return "Ceil";
    case PF_IR_ROUND: return "Round";
    case PF_IR_ERF: return "Erf";
    case PF_IR_SIN: return "Sin";
    case PF_IR_COS: return "Cos";
    case PF_IR_NOT: return "Not";
    case PF_IR_SIGN: return "Sign";
    case PF_IR_IDENTITY: return "Identity";
    case PF_IR_ADD: return "Add";
    case PF_IR_SUB: return "Sub";
    case PF_IR_MUL: return "Mul";
    case PF_IR_DIV: return "Div";
    case PF_IR_POW: return "Pow";
    case PF_IR_MAX: return "Max";
    case PF_IR_MIN: return "Min";
    case PF_IR_PRELU: return "PRelu";
    case PF_IR_EQUAL: return "Equal";
    case PF_IR_LESS: return "Less";
    case PF_IR_GREATER: return "Greater";
    case PF_IR_LESS_OR_EQUAL: return "LessOrEqual";
    case PF_IR_GREATER_OR_EQUAL: return "GreaterOrEqual";
    case PF_IR_AND: return "And";
    case PF_IR_OR: return "Or";
    case PF_IR_XOR: return "Xor";
    case PF_IR_WHERE: return "Where";
    case PF_IR_SUM: return "Sum";
    case PF_IR_MEAN_N: return "Mean";
    case PF_IR_GATHER: return "Gather";
    case PF_IR_GLOBAL_AVGPOOL: return "GlobalAveragePool";
    case PF_IR_GLOBAL_MAXPOOL: return "GlobalMaxPool";
    case PF_IR_MATMUL: return "MatMul";
    case PF_IR_CONCAT: return "Concat";
    default: return NULL;
    }
}

/* kernel_shape, strides and ONNX's pads (all begins, then all ends). */
static pf_status window_attrs(pf_onnx_wnode *o, int nsp, const int64_t *kernel,
                              const int64_t *stride, const int64_t *begin, const int64_t *end)
{
    int64_t pads[4];
    for (int i = 0; i < nsp; i++) {
        pads[i] = begin[i];
        pads[nsp + i] = end[i];
    }
    TRY(pf_onnx_wnode_attr_ints(o, "kernel_shape", kernel, nsp));
    TRY(pf_onnx_wnode_attr_ints(o, "strides", stride, nsp));
    return pf_onnx_wnode_attr_ints(o, "pads", pads, 2 * nsp);
}

static pf_status conv_attrs(pf_onnx_wnode *o, const pf_ir_conv_attr *a, bool transpose)
{
    TRY(window_attrs(o, a->nsp, a->kernel, a->stride, a->pad_begin, a->pad_end));
    TRY(pf_onnx_wnode_attr_ints(o, "dilations", a->dilation, a->nsp));
    TRY(pf_onnx_wnode_attr_int(o, "group", a->group));
    if (transpose) TRY(pf_onnx_wnode_attr_ints(o, "output_padding", a->output_padding, a->nsp));
    return PF_OK;
}

static pf_status pool_attrs(pf_onnx_wnode *o, const pf_ir_pool_attr *a, bool max)
{
    TRY(window_attrs(o, a->nsp, a->kernel, a->stride, a->pad_begin, a->pad_end));
    TRY(pf_onnx_wnode_attr_int(o, "ceil_mode", a->ceil_mode));
    if (max) TRY(pf_onnx_wnode_attr_ints(o, "dilations", a->dilation, a->nsp));
    else TRY(pf_onnx_wnode_attr_int(o, "count_include_pad", a->count_include_pad));
    return PF_OK;
}

static const char *reduce_op(pf_ir_op op)
{
    switch (op) {
    case PF_IR_REDUCE_MEAN: return "ReduceMean";
    case PF_IR_REDUCE_SUM: return "ReduceSum";
    case PF_IR_REDUCE_MAX: return "ReduceMax";
    case PF_IR_REDUCE_MIN: return "ReduceMin";
    case PF_IR_REDUCE_PROD: return "ReduceProd";
    case PF_IR_REDUCE_L2: return "ReduceL2";
    case PF_IR_REDUCE_SUM_SQUARE: return "ReduceSumSquare";
    case PF_IR_ARGMAX: return "ArgMax";
    case PF_IR_ARGMIN: return "ArgMin";
    default: return NULL;
    }
}

/* Resize: the scales the IR resolved. ONNX sizes the output floor(in *
 * scale) with the float scale; when that misses the IR's output by float
 * rounding the scale is nudged up one float step at a time. */
static pf_status resize_scales(lower *c, const pf_ir_node *n, float *s)
{
    const pf_ir_value *x = &c->g->values[n->in[0]], *y = &c->g->values[n->out[0]];
    const pf_ir_resize_attr *a = &n->attr.resize;
    if (x->ndim != y->ndim || x->ndim < 1 || a->n != x->ndim)
        return fail(c, PF_ERR_UNSUPPORTED, "Resize without resolved scales");
    for (int d = 0; d < x->ndim; d++) {
        if (x->dims[d] < 0 || y->dims[d] < 0) {
            s[d] = 1.0f;
            continue;
        }
        s[d] = (float)a->scale[d];
        if (!a->has_scales && x->dims[d] > 0) {
            s[d] = (float)((double)y->dims[d] / (double)x->dims[d]);
            for (int k = 0; k < 4 && (int64_t)floor((double)x->dims[d] * s[d]) < y->dims[d]; k++)
                s[d] = nextafterf(s[d], INFINITY);
        }
    }
    return PF_OK;
}

static const char *coord_name(pf_ir_coord_mode m)
{
    switch (m) {
    case PF_IR_COORD_ALIGN_CORNERS: return "align_corners";
    case PF_IR_COORD_ASYMMETRIC: return "asymmetric";
    case PF_IR_COORD_PYTORCH_HALF_PIXEL: return "pytorch_half_pixel";
    case PF_IR_COORD_TF_HALF_PIXEL_FOR_NN: return "tf_half_pixel_for_nn";
    default: return "half_pixel";
    }
}

static const char *nearest_name(pf_ir_nearest_mode m)
{
    switch (m) {
    case PF_IR_NEAREST_ROUND_PREFER_CEIL: return "round_prefer_ceil";
    case PF_IR_NEAREST_FLOOR: return "floor";
    case PF_IR_NEAREST_CEIL: return "ceil";
    default: return "round_prefer_floor";
    }
}

static pf_status add_typed(pf_onnx_wmodel *w, const pf_ir_graph *g, int which, int v,
                           const char *name);

static pf_status lower_node(lower *c)
{
    const pf_ir_graph *g = c->g;
    const pf_ir_node *n = &g->nodes[c->node];
    const pf_ir_attr *a = &n->attr;
    const char *in[PF_IR_MAX_INPUTS + 4], *out[PF_IR_MAX_OUTPUTS];
    char extra[4][512];
    char preact[512];
    int n_in = n->n_in;
    for (int k = 0; k < n->n_in; k++) in[k] = vname(c, n->in[k]);
    for (int k = 0; k < n->n_out; k++) out[k] = vname(c, n->out[k]);
    const char *act = n->act != PF_IR_ACT_NONE ? act_op(n->act) : NULL;
    if (n->act != PF_IR_ACT_NONE && !act) return fail(c, PF_ERR_UNSUPPORTED, "unknown fused activation");
    if (act) {
        snprintf(preact, sizeof preact, "%s",
                 pf_onnx_wmodel_fresh_name(c->w, out[0], "/preact", c->nbuf, sizeof c->nbuf));
        out[0] = preact;
    }
    const char *name = n->name && *n->name ? n->name : NULL;
    char nm[64];
    if (!name) {
        snprintf(nm, sizeof nm, "%s_%d", pf_ir_op_name(n->op), c->node);
        name = nm;
    }
    const char *op = plain_op(n->op);
    pf_onnx_wnode *o = NULL;
    pf_ir_op k = n->op;
#define EMIT(opname, count) \
    do { o = pf_onnx_wmodel_add_node(c->w, opname, name, in, count, out, n->n_out); \
         if (!o) return PF_ERR_NOMEM; } while (0)
    if (op) {
        EMIT(op, n_in);
        if (k == PF_IR_CONCAT || k == PF_IR_GATHER) TRY(pf_onnx_wnode_attr_int(o, "axis", a->axis.axis));
    } else switch (k) {
    case PF_IR_CONV: case PF_IR_CONV_TRANSPOSE:
        EMIT(k == PF_IR_CONV ? "Conv" : "ConvTranspose", n_in > 2 && n->in[2] < 0 ? 2 : n_in);
        TRY(conv_attrs(o, &a->conv, k == PF_IR_CONV_TRANSPOSE));
        break;
    case PF_IR_BATCHNORM:
        EMIT("BatchNormalization", n_in);
        TRY(pf_onnx_wnode_attr_float(o, "epsilon", a->bn.epsilon));
        break;
    case PF_IR_HARD_SIGMOID: case PF_IR_LEAKY_RELU: case PF_IR_ELU: case PF_IR_SELU:
        EMIT(k == PF_IR_HARD_SIGMOID ? "HardSigmoid" : k == PF_IR_LEAKY_RELU ? "LeakyRelu"
             : k == PF_IR_ELU ? "Elu" : "Selu", 1);
        TRY(pf_onnx_wnode_attr_float(o, "alpha", a->unary.alpha));
        if (k == PF_IR_HARD_SIGMOID) TRY(pf_onnx_wnode_attr_float(o, "beta", a->unary.beta));
        if (k == PF_IR_SELU) TRY(pf_onnx_wnode_attr_float(o, "gamma", a->unary.beta));
        break;
    case PF_IR_CLIP:
        if (n_in == 1) {
            float lo = a->unary.alpha, hi = a->unary.beta;
            in[1] = in[2] = "";
            n_in = 1;
            if (isfinite(lo)) {
                snprintf(extra[0], sizeof extra[0], "%s", const_name(c, "/min"));
                TRY(pf_onnx_wmodel_add_f32s(c->w, extra[0], &lo, 1, true));
                in[1] = extra[0];
                n_in = 2;
            }
            if (isfinite(hi)) {
                snprintf(extra[1], sizeof extra[1], "%s", const_name(c, "/max"));
                TRY(pf_onnx_wmodel_add_f32s(c->w, extra[1], &hi, 1, true));
                in[2] = extra[1];
                n_in = 3;
            }
        }
        EMIT("Clip", n_in);
        break;
    case PF_IR_CAST:
        EMIT("Cast", 1);
        TRY(pf_onnx_wnode_attr_int(o, "to", pf_onnx_dtype_of_ir(a->cast.to)));
        break;
    case PF_IR_MOD: {
        EMIT("Mod", n_in);
        pf_ir_dtype t = g->values[n->out[0]].dtype;
        TRY(pf_onnx_wnode_attr_int(o, "fmod", t == PF_IR_F32 || t == PF_IR_F16 || t == PF_IR_F64));
        break;
    }
    case PF_IR_RESHAPE: {
        const pf_ir_reshape_attr *r = &a->reshape;
        if (n_in > 1) {
            EMIT("Reshape", 2);
            break;
        }
        if (r->kind == PF_IR_RESHAPE_FLATTEN) {
            EMIT("Flatten", 1);
            TRY(pf_onnx_wnode_attr_int(o, "axis", r->axis));
        } else if (r->kind == PF_IR_RESHAPE_SQUEEZE || r->kind == PF_IR_RESHAPE_UNSQUEEZE) {
            int cnt = 1;
            if (r->n > 0) {
                TRY(add_i64_input(c, "/axes", r->axes, r->n, extra[0], sizeof extra[0]));
                in[1] = extra[0];
                cnt = 2;
            }
            EMIT(r->kind == PF_IR_RESHAPE_SQUEEZE ? "Squeeze" : "Unsqueeze", cnt);
        } else {
            TRY(add_i64_input(c, "/shape", r->shape, r->n, extra[0], sizeof extra[0]));
            in[1] = extra[0];
            EMIT("Reshape", 2);
            if (r->allowzero) TRY(pf_onnx_wnode_attr_int(o, "allowzero", 1));
        }
        break;
    }
    case PF_IR_TRANSPOSE:
        EMIT("Transpose", 1);
        TRY(pf_onnx_wnode_attr_ints(o, "perm", a->transpose.perm, a->transpose.n));
        break;
    case PF_IR_SLICE:
        if (n_in == 1) {
            const pf_ir_slice_attr *s = &a->slice;
            TRY(add_i64_input(c, "/starts", s->starts, s->n, extra[0], sizeof extra[0]));
            TRY(add_i64_input(c, "/ends", s->ends, s->n, extra[1], sizeof extra[1]));
            TRY(add_i64_input(c, "/axes", s->axes, s->n, extra[2], sizeof extra[2]));
            TRY(add_i64_input(c, "/steps", s->steps, s->n, extra[3], sizeof extra[3]));
            for (int i = 0; i < 4; i++) in[1 + i] = extra[i];
            n_in = 5;
        }
        EMIT("Slice", n_in);
        break;
    case PF_IR_PAD: {
        static const char *const modes[] = {"constant", "reflect", "edge"};
        if (n_in == 1) {
            const pf_ir_pad_attr *p = &a->pad;
            int64_t pads[2 * PF_IR_MAX_RANK];
            for (int i = 0; i < p->n; i++) {
                pads[i] = p->begin[i];
                pads[p->n + i] = p->end[i];
            }
            TRY(add_i64_input(c, "/pads", pads, 2 * p->n, extra[0], sizeof extra[0]));
            in[1] = extra[0];
            n_in = 2;
            pf_ir_dtype t = g->values[n->in[0]].dtype;
            if (p->mode == PF_IR_PADMODE_CONSTANT && p->value != 0 && t == PF_IR_F32) {
                float v = (float)p->value;
                snprintf(extra[1], sizeof extra[1], "%s", const_name(c, "/value"));
                TRY(pf_onnx_wmodel_add_f32s(c->w, extra[1], &v, 1, true));
                in[2] = extra[1];
                n_in = 3;
            } else if (p->mode == PF_IR_PADMODE_CONSTANT && p->value != 0) {
                return fail(c, PF_ERR_UNSUPPORTED, "a non-zero pad value on a non-float tensor");
            }
        }
        EMIT("Pad", n_in);
        TRY(pf_onnx_wnode_attr_string(o, "mode", modes[a->pad.mode]));
        break;
    }
    case PF_IR_EXPAND: case PF_IR_TILE:
        if (n_in == 1) {
            if (k == PF_IR_EXPAND)
                TRY(add_i64_input(c, "/shape", a->reshape.shape, a->reshape.n, extra[0], sizeof extra[0]));
            else
                TRY(add_i64_input(c, "/repeats", a->tile.repeats, a->tile.n, extra[0], sizeof extra[0]));
            in[1] = extra[0];
            n_in = 2;
        }
        EMIT(k == PF_IR_EXPAND ? "Expand" : "Tile", n_in);
        break;
    case PF_IR_SHAPE:
        EMIT("Shape", 1);
        if (a->slice.starts[0]) TRY(pf_onnx_wnode_attr_int(o, "start", a->slice.starts[0]));
        if (a->slice.ends[0] != INT64_MAX && a->slice.ends[0] < g->values[n->in[0]].ndim)
            TRY(pf_onnx_wnode_attr_int(o, "end", a->slice.ends[0]));
        break;
    case PF_IR_CONSTANT_OF_SHAPE:
        EMIT("ConstantOfShape", 1);
        TRY(pf_onnx_wnode_attr_tensor1(o, "value", pf_onnx_dtype_of_ir(g->values[n->out[0]].dtype),
                                       a->fill.value));
        break;
    case PF_IR_SPLIT:
        if (n_in == 1 && a->split.n > 0) {
            TRY(add_i64_input(c, "/split", a->split.sizes, a->split.n, extra[0], sizeof extra[0]));
            in[1] = extra[0];
            n_in = 2;
        }
        EMIT("Split", n_in);
        TRY(pf_onnx_wnode_attr_int(o, "axis", a->split.axis));
        break;
    case PF_IR_DEPTH_TO_SPACE: case PF_IR_SPACE_TO_DEPTH:
        EMIT(k == PF_IR_DEPTH_TO_SPACE ? "DepthToSpace" : "SpaceToDepth", 1);
        TRY(pf_onnx_wnode_attr_int(o, "blocksize", a->d2s.blocksize));
        if (k == PF_IR_DEPTH_TO_SPACE)
            TRY(pf_onnx_wnode_attr_string(o, "mode", a->d2s.crd ? "CRD" : "DCR"));
        break;
    case PF_IR_RESIZE: {
        if (n_in > 1) {
            /* Scales or sizes computed at run time (from Shape of a batch-
             * symbolic value, as PyTorch exports interpolate(size=...)):
             * (X, roi, scales, sizes) as they are. */
            in[1] = "";
            EMIT("Resize", n_in);
            goto resize_attrs;
        }
        float s[PF_IR_MAX_RANK];
        TRY(resize_scales(c, n, s));
        snprintf(extra[0], sizeof extra[0], "%s", const_name(c, "/scales"));
        TRY(pf_onnx_wmodel_add_f32s(c->w, extra[0], s, g->values[n->in[0]].ndim, false));
        in[1] = "";
        in[2] = extra[0];
        EMIT("Resize", 3);
    resize_attrs:;
        const pf_ir_resize_attr *r = &a->resize;
        TRY(pf_onnx_wnode_attr_string(o, "mode", r->mode == PF_IR_RESIZE_LINEAR ? "linear" : "nearest"));
        TRY(pf_onnx_wnode_attr_string(o, "coordinate_transformation_mode", coord_name(r->coord)));
        if (r->mode == PF_IR_RESIZE_NEAREST)
            TRY(pf_onnx_wnode_attr_string(o, "nearest_mode", nearest_name(r->nearest)));
        break;
    }
    case PF_IR_MAXPOOL: case PF_IR_AVGPOOL:
        EMIT(k == PF_IR_MAXPOOL ? "MaxPool" : "AveragePool", 1);
        TRY(pool_attrs(o, &a->pool, k == PF_IR_MAXPOOL));
        break;
    case PF_IR_REDUCE_MEAN: case PF_IR_REDUCE_SUM: case PF_IR_REDUCE_MAX: case PF_IR_REDUCE_MIN:
    case PF_IR_REDUCE_PROD: case PF_IR_REDUCE_L2: case PF_IR_REDUCE_SUM_SQUARE: {
        const pf_ir_reduce_attr *r = &a->reduce;
        if (k == PF_IR_REDUCE_SUM && n_in == 1 && r->n > 0) {
            /* ReduceSum takes axes as an input from opset 13 on; the others at 18. */
            TRY(add_i64_input(c, "/axes", r->axes, r->n, extra[0], sizeof extra[0]));
            in[1] = extra[0];
            n_in = 2;
        }
        EMIT(reduce_op(k), n_in);
        if (k != PF_IR_REDUCE_SUM && r->n > 0) TRY(pf_onnx_wnode_attr_ints(o, "axes", r->axes, r->n));
        TRY(pf_onnx_wnode_attr_int(o, "keepdims", r->keepdims));
        if (k == PF_IR_REDUCE_SUM && r->noop_with_empty_axes)
            TRY(pf_onnx_wnode_attr_int(o, "noop_with_empty_axes", 1));
        break;
    }
    case PF_IR_ARGMAX: case PF_IR_ARGMIN:
        EMIT(reduce_op(k), 1);
        TRY(pf_onnx_wnode_attr_int(o, "axis", a->reduce.axes[0]));
        TRY(pf_onnx_wnode_attr_int(o, "keepdims", a->reduce.keepdims));
        if (a->reduce.select_last_index) TRY(pf_onnx_wnode_attr_int(o, "select_last_index", 1));
        break;
    case PF_IR_SOFTMAX: case PF_IR_LOG_SOFTMAX: {
        int nd = g->values[n->in[0]].ndim;
        int64_t ax = a->axis.axis < 0 ? a->axis.axis + nd : a->axis.axis;
        /* Opset < 13 Softmax flattens to 2-D at axis: the same as opset 13's
         * only when axis is the last dim. */
        if (a->axis.legacy && ax != nd - 1)
            return fail(c, PF_ERR_UNSUPPORTED, "legacy (opset < 13) Softmax on an inner axis");
        EMIT(k == PF_IR_SOFTMAX ? "Softmax" : "LogSoftmax", 1);
        TRY(pf_onnx_wnode_attr_int(o, "axis", ax));
        break;
    }
    case PF_IR_GEMM:
        EMIT("Gemm", n_in > 2 && n->in[2] < 0 ? 2 : n_in);
        TRY(pf_onnx_wnode_attr_float(o, "alpha", a->gemm.alpha));
        TRY(pf_onnx_wnode_attr_float(o, "beta", a->gemm.beta));
        TRY(pf_onnx_wnode_attr_int(o, "transA", a->gemm.trans_a));
        TRY(pf_onnx_wnode_attr_int(o, "transB", a->gemm.trans_b));
        break;
    default:
        return fail(c, PF_ERR_UNSUPPORTED, "no ONNX form for this op");
    }
#undef EMIT
    if (!act) return PF_OK;
    /* The fused activation: preact -> act -> the IR's output name. */
    const char *ain[3] = {preact, "", ""};
    const char *aout[1] = {vname(c, n->out[0])};
    int an = 1;
    float lo = n->act_a, hi = n->act_b;
    char aname[600];
    snprintf(aname, sizeof aname, "%s/%s", name, act);
    if (n->act == PF_IR_ACT_CLIP) {
        snprintf(extra[0], sizeof extra[0], "%s", const_name(c, "/min"));
        TRY(pf_onnx_wmodel_add_f32s(c->w, extra[0], &lo, 1, true));
        snprintf(extra[1], sizeof extra[1], "%s", const_name(c, "/max"));
        TRY(pf_onnx_wmodel_add_f32s(c->w, extra[1], &hi, 1, true));
        ain[1] = extra[0];
        ain[2] = extra[1];
        an = 3;
    }
    o = pf_onnx_wmodel_add_node(c->w, act, aname, ain, an, aout, 1);
    if (!o) return PF_ERR_NOMEM;
    if (n->act == PF_IR_ACT_LEAKY_RELU) TRY(pf_onnx_wnode_attr_float(o, "alpha", lo));
    if (n->act == PF_IR_ACT_HARD_SIGMOID) {
        TRY(pf_onnx_wnode_attr_float(o, "alpha", lo));
        TRY(pf_onnx_wnode_attr_float(o, "beta", hi));
    }
    return add_typed(c->w, g, 2, n->out[0], preact);
}

/* The rank of a value whose shape inference stopped (a Resize whose sizes
 * are computed at run time, and everything after it): ops that keep their
 * input's rank pass it on. -1 when unknown. ONNX's checker wants a shape (a
 * rank, dims may be unknown) on graph outputs. */
static int guess_rank(const pf_ir_graph *g, int v, int depth)
{
    const pf_ir_value *x = &g->values[v];
    if (x->ndim >= 0) return x->ndim;
    if (depth > 256 || x->producer < 0) return -1;
    const pf_ir_node *n = &g->nodes[x->producer];
    switch (n->op) {
    case PF_IR_CONV: case PF_IR_CONV_TRANSPOSE: case PF_IR_BATCHNORM: case PF_IR_RESIZE:
    case PF_IR_MAXPOOL: case PF_IR_AVGPOOL: case PF_IR_GLOBAL_AVGPOOL: case PF_IR_GLOBAL_MAXPOOL:
    case PF_IR_SOFTMAX: case PF_IR_LOG_SOFTMAX: case PF_IR_CONCAT: case PF_IR_SLICE:
    case PF_IR_TRANSPOSE: case PF_IR_DEPTH_TO_SPACE: case PF_IR_SPACE_TO_DEPTH: case PF_IR_PAD:
    case PF_IR_ADD: case PF_IR_SUB: case PF_IR_MUL: case PF_IR_DIV: case PF_IR_MAX: case PF_IR_MIN:
    case PF_IR_PRELU: case PF_IR_SUM: case PF_IR_MEAN_N: case PF_IR_WHERE: {
        int r = -1;
        for (int k = 0; k < n->n_in; k++) {
            if (n->in[k] < 0) continue;
            int rk = guess_rank(g, n->in[k], depth + 1);
            if (rk > r) r = rk;
            if (n->op == PF_IR_CONV || n->op == PF_IR_CONV_TRANSPOSE || n->op == PF_IR_RESIZE) break;
        }
        return r;
    }
    default:
        /* Unary elementwise ops (RELU .. CAST in ir.h's order) keep the rank. */
        if (n->op >= PF_IR_RELU && n->op <= PF_IR_CAST && n->n_in >= 1 && n->in[0] >= 0)
            return guess_rank(g, n->in[0], depth + 1);
        return -1;
    }
}

/* Adds value v (which 0 in, 1 out, 2 info) under `name`, with a guessed rank
 * and unknown dims where inference left it unknown; an info of unknown rank
 * is left out. */
static pf_status add_typed(pf_onnx_wmodel *w, const pf_ir_graph *g, int which, int v,
                           const char *name)
{
    const pf_ir_value *x = &g->values[v];
    int ndim = x->ndim;
    int64_t dims[PF_IR_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    if (ndim < 0) {
        ndim = guess_rank(g, v, 0);
        if (ndim > PF_IR_MAX_RANK) ndim = -1;
        for (int d = 0; d < ndim; d++) dims[d] = PF_ONNX_DIM_UNKNOWN;
        if (ndim < 0 && which == 2) return PF_OK;
    }
    return pf_onnx_wmodel_add_value(w, which, name, pf_onnx_dtype_of_ir(x->dtype), ndim, dims);
}

static pf_status lower_graph(lower *c)
{
    const pf_ir_graph *g = c->g;
    pf_onnx_wmodel *w = c->w;
    if (g->batch_symbol && *g->batch_symbol) {
        char *s = strdup(g->batch_symbol);
        if (!s) return pf_set_error(PF_ERR_NOMEM, "onnx writer: out of memory");
        free(w->batch_symbol);
        w->batch_symbol = s;
    }
    for (int i = 0; i < g->n_inputs; i++) {
        const pf_ir_value *v = &g->values[g->inputs[i]];
        TRY(pf_onnx_wmodel_add_value(w, 0, v->name, pf_onnx_dtype_of_ir(v->dtype), v->ndim, v->dims));
    }
    for (int i = 0; i < g->n_outputs; i++) {
        const pf_ir_value *v = &g->values[g->outputs[i]];
        if (v->data || v->is_input)
            return pf_set_error(PF_ERR_UNSUPPORTED, "onnx writer: %s: output '%s' is a %s, not "
                                "computed by a node", g->name ? g->name : "graph", v->name,
                                v->data ? "constant" : "graph input");
        TRY(add_typed(w, g, 1, g->outputs[i], v->name));
    }
    for (int i = 0; i < g->n_values; i++) {
        const pf_ir_value *v = &g->values[i];
        if (v->n_uses <= 0 && !v->is_output) continue;
        int dt = pf_onnx_dtype_of_ir(v->dtype);
        if (!dt)
            return pf_set_error(PF_ERR_UNSUPPORTED, "onnx writer: value '%s' has dtype %s",
                                v->name, pf_ir_dtype_name(v->dtype));
        if (v->data)
            TRY(pf_onnx_wmodel_add_init_borrowed(w, v->name, dt, v->ndim, v->dims, v->data, v->nbytes));
        else if (!v->is_input && !v->is_output)
            TRY(add_typed(w, g, 2, i, v->name));
    }
    for (c->node = 0; c->node < g->n_nodes; c->node++) {
        if (g->nodes[c->node].dead) continue;
        TRY(lower_node(c));
    }
    return PF_OK;
}

pf_status pf_onnx_wmodel_from_ir(const pf_ir_graph *g, pf_onnx_wmodel **out)
{
    *out = NULL;
    const char *base = g->name ? strrchr(g->name, '/') : NULL;
    pf_onnx_wmodel *w = NULL;
    TRY(pf_onnx_wmodel_create(base ? base + 1 : g->name, &w));
    lower c = {.g = g, .w = w, .node = 0};
    pf_status st = lower_graph(&c);
    if (st) {
        pf_onnx_wmodel_destroy(&w);
        return st;
    }
    *out = w;
    return PF_OK;
}
