/* ONNX import: unary and binary elementwise ops, Clip, Cast, Where and the
 * variadic Sum/Mean/Max/Min (see onnx_import.c for the conventions). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "../core/error.h"
#include "onnx_import_priv.h"

#define TRY(x) \
    do { \
        pf_status st_ = (x); \
        if (st_ != PF_OK) return st_; \
    } while (0)

typedef struct unary_def {
    const char *name;
    pf_ir_op op;
    const char *alpha_name, *beta_name;
    float alpha, beta;
} unary_def;

static const unary_def k_unary[] = {
    {"Relu", PF_IR_RELU, NULL, NULL, 0, 0},
    {"Sigmoid", PF_IR_SIGMOID, NULL, NULL, 0, 0},
    {"Tanh", PF_IR_TANH, NULL, NULL, 0, 0},
    {"HardSigmoid", PF_IR_HARD_SIGMOID, "alpha", "beta", 0.2f, 0.5f},
    {"HardSwish", PF_IR_HARD_SWISH, NULL, NULL, 0, 0},
    {"LeakyRelu", PF_IR_LEAKY_RELU, "alpha", NULL, 0.01f, 0},
    {"Elu", PF_IR_ELU, "alpha", NULL, 1.0f, 0},
    {"Selu", PF_IR_SELU, "alpha", "gamma", 1.67326319217681884765625f,
     1.05070102214813232421875f},
    {"Softplus", PF_IR_SOFTPLUS, NULL, NULL, 0, 0},
    {"Softsign", PF_IR_SOFTSIGN, NULL, NULL, 0, 0},
    {"Abs", PF_IR_ABS, NULL, NULL, 0, 0},
    {"Neg", PF_IR_NEG, NULL, NULL, 0, 0},
    {"Exp", PF_IR_EXP, NULL, NULL, 0, 0},
    {"Log", PF_IR_LOG, NULL, NULL, 0, 0},
    {"Sqrt", PF_IR_SQRT, NULL, NULL, 0, 0},
    {"Reciprocal", PF_IR_RECIPROCAL, NULL, NULL, 0, 0},
    {"Floor", PF_IR_FLOOR, NULL, NULL, 0, 0},
    {"Ceil", PF_IR_CEIL, NULL, NULL, 0, 0},
    {"Round", PF_IR_ROUND, NULL, NULL, 0, 0},
    {"Erf", PF_IR_ERF, NULL, NULL, 0, 0},
    {"Sin", PF_IR_SIN, NULL, NULL, 0, 0},
    {"Cos", PF_IR_COS, NULL, NULL, 0, 0},
    {"Not", PF_IR_NOT, NULL, NULL, 0, 0},
    {"Sign", PF_IR_SIGN, NULL, NULL, 0, 0},
    {"Identity", PF_IR_IDENTITY, NULL, NULL, 0, 0},
};

typedef struct binary_def {
    const char *name;
    pf_ir_op op;
    bool boolean_out;
} binary_def;

static const binary_def k_binary[] = {
    {"Add", PF_IR_ADD, false},          {"Sub", PF_IR_SUB, false},
    {"Mul", PF_IR_MUL, false},          {"Div", PF_IR_DIV, false},
    {"Pow", PF_IR_POW, false},          {"PRelu", PF_IR_PRELU, false},
    {"Equal", PF_IR_EQUAL, true},       {"Less", PF_IR_LESS, true},
    {"Greater", PF_IR_GREATER, true},   {"LessOrEqual", PF_IR_LESS_OR_EQUAL, true},
    {"GreaterOrEqual", PF_IR_GREATER_OR_EQUAL, true},
    {"And", PF_IR_AND, true},           {"Or", PF_IR_OR, true},
    {"Xor", PF_IR_XOR, true},
};

static pf_status convert_unary(pf_oimp *c, const pf_onnx_node *n, const unary_def *d)
{
    int x;
    TRY(pf_oimp_in_req(c, n, 0, &x));
    if (n->n_inputs > 1)
        return pf_oimp_fail(c, n, PF_ERR_FORMAT, "has %zu inputs, expected 1", n->n_inputs);
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.unary.alpha = d->alpha;
    a.unary.beta = d->beta;
    if (d->alpha_name) TRY(pf_onnx_attr_float(c->m, n, d->alpha_name, d->alpha, &a.unary.alpha));
    if (d->beta_name) TRY(pf_onnx_attr_float(c->m, n, d->beta_name, d->beta, &a.unary.beta));
    return pf_oimp_emit_final(c, n, d->op, &x, 1, &a);
}

/* Clip: bounds are attributes before opset 11, optional inputs after. */
static pf_status convert_clip(pf_oimp *c, const pf_onnx_node *n)
{
    int in[3] = {-1, -1, -1};
    TRY(pf_oimp_in_req(c, n, 0, &in[0]));
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.unary.alpha = -INFINITY;
    a.unary.beta = INFINITY;
    if (n->opset < 11) {
        TRY(pf_onnx_attr_float(c->m, n, "min", -FLT_MAX, &a.unary.alpha));
        TRY(pf_onnx_attr_float(c->m, n, "max", FLT_MAX, &a.unary.beta));
        return pf_oimp_emit_final(c, n, PF_IR_CLIP, in, 1, &a);
    }
    /* Bounds as inputs: constant ones move into the attrs in fold.c (which
     * keeps an integer bound a float cannot hold as an input). */
    TRY(pf_oimp_in(c, n, 1, &in[1]));
    TRY(pf_oimp_in(c, n, 2, &in[2]));
    return pf_oimp_emit_final(c, n, PF_IR_CLIP, in, 3, &a);
}

static pf_status convert_cast(pf_oimp *c, const pf_onnx_node *n)
{
    int x;
    int64_t to;
    TRY(pf_oimp_in_req(c, n, 0, &x));
    TRY(pf_onnx_attr_int(c->m, n, "to", -1, &to));
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    if (to < 0) return pf_oimp_fail(c, n, PF_ERR_FORMAT, "attribute 'to' is missing");
    if (!pf_oimp_dtype((int)to, &a.cast.to))
        return pf_oimp_unsupported_attr(c, n, "to", pf_onnx_dtype_name((int)to));
    return pf_oimp_emit(c, n, PF_IR_CAST, &x, 1, 1, &a, a.cast.to, NULL);
}

static pf_status convert_binary(pf_oimp *c, const pf_onnx_node *n, pf_ir_op op, bool boolean_out,
                                const pf_ir_attr *a)
{
    int in[2];
    if (n->n_inputs != 2)
        return pf_oimp_fail(c, n, PF_ERR_FORMAT, "has %zu inputs, expected 2", n->n_inputs);
    TRY(pf_oimp_in_req(c, n, 0, &in[0]));
    TRY(pf_oimp_in_req(c, n, 1, &in[1]));
    return pf_oimp_emit(c, n, op, in, 2, 1, a, boolean_out ? PF_IR_BOOL : PF_IR_F32, NULL);
}

/* Sum/Mean/Max/Min with any number of inputs. Sum and Max/Min are
 * associative, so long lists become chains; Mean is refused past the IR's
 * input limit (it would need a rescale). */
static pf_status convert_variadic(pf_oimp *c, const pf_onnx_node *n, pf_ir_op op)
{
    int ids[256];
    int cnt = (int)n->n_inputs;
    if (cnt < 1) return pf_oimp_fail(c, n, PF_ERR_FORMAT, "has no inputs");
    if (cnt > 256)
        return pf_oimp_fail(c, n, PF_ERR_UNSUPPORTED, "%d inputs (at most 256)", cnt);
    for (int k = 0; k < cnt; k++) TRY(pf_oimp_in_req(c, n, (size_t)k, &ids[k]));
    if (cnt == 1 && (op == PF_IR_MAX || op == PF_IR_MIN))
        return pf_oimp_emit_final(c, n, PF_IR_IDENTITY, ids, 1, NULL);
    int width = (op == PF_IR_MAX || op == PF_IR_MIN) ? 2 : PF_IR_MAX_INPUTS;
    if (op == PF_IR_MEAN_N && cnt > width)
        return pf_oimp_fail(c, n, PF_ERR_UNSUPPORTED, "%d inputs (at most %d)", cnt, width);
    /* Fold from the left: acc = op(acc, next width-1 inputs). */
    int acc = ids[0], pos = 1;
    int chunk[PF_IR_MAX_INPUTS];
    if (cnt <= width) return pf_oimp_emit_final(c, n, op, ids, cnt, NULL);
    for (;;) {
        int m = 0;
        chunk[m++] = acc;
        while (m < width && pos < cnt) chunk[m++] = ids[pos++];
        if (pos == cnt) return pf_oimp_emit_final(c, n, op, chunk, m, NULL);
        TRY(pf_oimp_emit_tmp(c, n, op, chunk, m, NULL, &acc));
    }
}

pf_status pf_oimp_convert_elementwise(pf_oimp *c, const pf_onnx_node *n, bool *handled)
{
    const char *t = n->op_type;
    *handled = true;
    for (size_t i = 0; i < sizeof k_unary / sizeof k_unary[0]; i++)
        if (!strcmp(t, k_unary[i].name)) return convert_unary(c, n, &k_unary[i]);
    for (size_t i = 0; i < sizeof k_binary / sizeof k_binary[0]; i++)
        if (!strcmp(t, k_binary[i].name))
            return convert_binary(c, n, k_binary[i].op, k_binary[i].boolean_out, NULL);
    if (!strcmp(t, "Mod")) {
        int64_t fmod_;
        TRY(pf_onnx_attr_int(c->m, n, "fmod", 0, &fmod_));
        pf_ir_attr a;
        memset(&a, 0, sizeof a);
        a.unary.alpha = fmod_ ? 1.0f : 0.0f;
        return convert_binary(c, n, PF_IR_MOD, false, &a);
    }
    if (!strcmp(t, "Dropout")) {
        /* Inference: the output is the input; ratio and training_mode (opset
         * 12 inputs) only matter when training. */
        int x, tm;
        TRY(pf_oimp_in_req(c, n, 0, &x));
        TRY(pf_oimp_in(c, n, 2, &tm));
        if (tm >= 0) {
            int64_t v = 0;
            int cnt = 0;
            if (!pf_oimp_const(c, tm))
                return pf_oimp_fail(c, n, PF_ERR_UNSUPPORTED, "training_mode must be a constant");
            TRY(pf_oimp_const_ints(c, n, tm, "training_mode", &v, 1, &cnt));
            if (cnt == 1 && v) return pf_oimp_unsupported_attr(c, n, "training_mode", "true");
        }
        return pf_oimp_emit_final(c, n, PF_IR_IDENTITY, &x, 1, NULL);
    }
    if (!strcmp(t, "Clip")) return convert_clip(c, n);
    if (!strcmp(t, "Cast")) return convert_cast(c, n);
    if (!strcmp(t, "Where")) {
        int in[3];
        for (size_t k = 0; k < 3; k++) TRY(pf_oimp_in_req(c, n, k, &in[k]));
        return pf_oimp_emit_final(c, n, PF_IR_WHERE, in, 3, NULL);
    }
    if (!strcmp(t, "Sum")) return convert_variadic(c, n, PF_IR_SUM);
    if (!strcmp(t, "Mean")) return convert_variadic(c, n, PF_IR_MEAN_N);
    if (!strcmp(t, "Max")) return convert_variadic(c, n, PF_IR_MAX);
    if (!strcmp(t, "Min")) return convert_variadic(c, n, PF_IR_MIN);
    *handled = false;
    return PF_OK;
}
