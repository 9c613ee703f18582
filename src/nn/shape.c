/* Shape inference with ONNX (opset 17) rules.
 *
 * Each node's outputs get dtype and dims from its inputs and attrs; attrs that
 * depend on shapes (auto_pad, slice bounds, negative axes, resize scales,
 * default perms) are resolved in place so executors read final values.
 * Resolution is idempotent: re-running on an inferred graph (as
 * pf_ir_specialize does) gives the same attrs.
 *
 * Unknowns: an output whose shape cannot be known yet (an input of unknown
 * rank, a "must be constant" input still computed at runtime, a rule that
 * would need the batch value) is left at ndim -1; that is not an error here.
 * pf_ir_specialize() refuses any value that is still unknown afterwards.
 * PF_IR_DIM_BATCH flows through dims that are merely carried.
 *
 * One deviation: a resolved Slice end of -1 with a negative step means
 * "stop before index 0" (it is stored that way), so a raw ONNX end of -1
 * with a negative step (always an empty slice) is read the same way. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../core/error.h"
#include "ir.h"

#define B PF_IR_DIM_BATCH

typedef struct shp {
    int ndim;
    int64_t d[PF_IR_MAX_RANK];
} shp;

static const char *fmt_dims(const pf_ir_value *v, char *buf, size_t size)
{
    if (!v) {
        snprintf(buf, size, "(absent)");
        return buf;
    }
    if (v->ndim < 0) {
        snprintf(buf, size, "[?]");
        return buf;
    }
    size_t o = 0;
    o += (size_t)snprintf(buf + o, size - o, "[");
    for (int i = 0; i < v->ndim && o < size; i++) {
        if (v->dims[i] == B)
            o += (size_t)snprintf(buf + o, size - o, "%sN", i ? "," : "");
        else
            o += (size_t)snprintf(buf + o, size - o, "%s%lld", i ? "," : "", (long long)v->dims[i]);
    }
    if (o < size) snprintf(buf + o, size - o, "]");
    return buf;
}

/* "<node desc>: <msg>" with PF_ERR_FORMAT (or st). */
static pf_status node_err(const pf_ir_graph *g, int node, pf_status st, const char *fmt, ...)
    PF_PRINTF(4, 5);
static pf_status node_err(const pf_ir_graph *g, int node, pf_status st, const char *fmt, ...)
{
    char desc[192], msg[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pf_set_error(st, "%s: %s", pf_ir_node_desc(g, node, desc, sizeof desc), msg);
}

typedef struct ctx {
    pf_ir_graph *g;
    int id;
    pf_ir_node *n;
} ctx;

static const pf_ir_value *IN(const ctx *c, int i)
{
    if (i >= c->n->n_in || c->n->in[i] < 0) return NULL;
    return &c->g->values[c->n->in[i]];
}

static pf_status bad_input(const ctx *c, int i, const char *what)
{
    char b[128];
    const pf_ir_value *v = IN(c, i);
    return node_err(c->g, c->id, PF_ERR_FORMAT, "input %d '%s' %s: %s", i, v ? v->name : "-",
                    fmt_dims(v, b, sizeof b), what);
}

static void set_out(ctx *c, int k, pf_ir_dtype dt, const shp *s)
{
    pf_ir_value *v = &c->g->values[c->n->out[k]];
    v->dtype = dt;
    if (!s) {
        v->ndim = -1;
        return;
    }
    v->ndim = s->ndim;
    for (int i = 0; i < s->ndim; i++) v->dims[i] = s->d[i];
}

static void set_unknown(ctx *c)
{
    for (int k = 0; k < c->n->n_out; k++) c->g->values[c->n->out[k]].ndim = -1;
}

/* The usual way out when a shape cannot be known yet: outputs unknown, the
 * first output's dtype known. */
static pf_status unknown_as(ctx *c, pf_ir_dtype dtype)
{
    set_unknown(c);
    c->g->values[c->n->out[0]].dtype = dtype;
    return PF_OK;
}

static shp shape_of(const pf_ir_value *v)
{
    shp s;
    memset(&s, 0, sizeof s);
    s.ndim = v->ndim;
    for (int i = 0; i < v->ndim && i < PF_IR_MAX_RANK; i++) s.d[i] = v->dims[i];
    return s;
}

static bool known(const pf_ir_value *v) { return v && v->ndim >= 0; }

static bool is_float(pf_ir_dtype t) { return t == PF_IR_F32 || t == PF_IR_F16 || t == PF_IR_F64; }

/* Normalises an axis into [0, rank); false when out of range. */
static bool norm_axis(int64_t *axis, int rank)
{
    int64_t a = *axis;
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return false;
    *axis = a;
    return true;
}

/* Multidirectional broadcast of a into acc (acc first). A symbolic batch
 * against 1 stays symbolic; against k > 1 it becomes k (the batch must be 1
 * or k, which re-inference after specialisation checks). */
static pf_status bcast(const ctx *c, shp *acc, const pf_ir_value *v, int idx)
{
    int r = acc->ndim > v->ndim ? acc->ndim : v->ndim;
    shp o;
    memset(&o, 0, sizeof o);
    o.ndim = r;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - acc->ndim), ib = i - (r - v->ndim);
        int64_t a = ia >= 0 ? acc->d[ia] : 1, b = ib >= 0 ? v->dims[ib] : 1;
        int64_t d;
        if (a == b) d = a;
        else if (a == 1) d = b;
        else if (b == 1) d = a;
        else if (a == B) d = b;
        else if (b == B) d = a;
        else {
            char b1[128], b2[128];
            const pf_ir_value *v0 = IN(c, 0);
            return node_err(c->g, c->id, PF_ERR_FORMAT,
                            "cannot broadcast input %d '%s' %s with %s (input 0 '%s' %s): "
                            "dims %lld and %lld at output axis %d",
                            idx, v->name, fmt_dims(v, b1, sizeof b1), idx ? "the others" : "",
                            v0 ? v0->name : "-", fmt_dims(v0, b2, sizeof b2), (long long)a,
                            (long long)b, i);
        }
        o.d[i] = d;
    }
    *acc = o;
    return PF_OK;
}

/* Output size of one conv/pool spatial axis with explicit pads; -1 when the
 * window does not fit. */
static int64_t window_out(int64_t in, int64_t k, int64_t s, int64_t dil, int64_t pb, int64_t pe,
                          bool ceil_mode)
{
    int64_t ek = (k - 1) * dil + 1;
    int64_t span = in + pb + pe - ek;
    if (span < 0) return -1;
    int64_t o = span / s + (ceil_mode && span % s ? 1 : 0) + 1;
    /* PyTorch's and ONNX Runtime's rule: the last window must start inside
     * the input or the left padding. */
    if (ceil_mode && (o - 1) * s >= in + pb) o--;
    return o;
}

/* SAME_UPPER/SAME_LOWER: output ceil(in/s), padding split with the odd
 * element at the end (UPPER) or the beginning (LOWER). */
static void same_pads(int64_t in, int64_t k, int64_t s, int64_t dil, bool upper, int64_t *pb,
                      int64_t *pe)
{
    int64_t out = (in + s - 1) / s;
    int64_t ek = (k - 1) * dil + 1;
    int64_t total = (out - 1) * s + ek - in;
    if (total < 0) total = 0;
    if (upper) {
        *pb = total / 2;
        *pe = total - total / 2;
    } else {
        *pb = total - total / 2;
        *pe = total / 2;
    }
}

static pf_status check_window_attr(const ctx *c, int nsp, const int64_t *k, const int64_t *s,
                                   const int64_t *dil, const int64_t *pb, const int64_t *pe)
{
    /* The bound keeps every size computation far from int64 overflow. */
    const int64_t lim = (int64_t)1 << 24;
    for (int i = 0; i < nsp; i++)
        if (k[i] < 1 || s[i] < 1 || dil[i] < 1 || pb[i] < 0 || pe[i] < 0 || k[i] > lim ||
            s[i] > lim || dil[i] > lim || pb[i] > lim || pe[i] > lim)
            return node_err(c->g, c->id, PF_ERR_FORMAT,
                            "spatial axis %d: kernel %lld, stride %lld, dilation %lld, pads "
                            "%lld/%lld (kernel, stride, dilation 1..2^24, pads 0..2^24)",
                            i, (long long)k[i], (long long)s[i], (long long)dil[i],
                            (long long)pb[i], (long long)pe[i]);
    return PF_OK;
}

static pf_status infer_conv(ctx *c)
{
    pf_ir_conv_attr *a = &c->n->attr.conv;
    const pf_ir_value *x = IN(c, 0), *w = IN(c, 1), *bias = IN(c, 2);
    if (!known(x) || !known(w)) {
        set_unknown(c);
        return PF_OK;
    }
    bool tr = c->n->op == PF_IR_CONV_TRANSPOSE;
    if (x->ndim < 3 || x->ndim > 4) return bad_input(c, 0, "conv input must be 3D or 4D");
    int nsp = x->ndim - 2;
    if (a->nsp && a->nsp != nsp)
        return bad_input(c, 0, "rank does not match the conv's spatial dims");
    a->nsp = nsp;
    if (w->ndim != x->ndim) return bad_input(c, 1, "weight rank differs from the input's");
    for (int i = 0; i < nsp; i++) {
        if (w->dims[2 + i] < 0) return bad_input(c, 1, "weight dims must be concrete");
        if (a->kernel[i] == 0) a->kernel[i] = w->dims[2 + i];
        if (a->kernel[i] != w->dims[2 + i])
            return bad_input(c, 1, "weight spatial dims differ from attr kernel_shape");
        if (a->stride[i] == 0) a->stride[i] = 1;
        if (a->dilation[i] == 0) a->dilation[i] = 1;
    }
    if (a->group == 0) a->group = 1;
    if (a->group < 1) return node_err(c->g, c->id, PF_ERR_FORMAT, "group %lld", (long long)a->group);
    pf_status st;
    if (!tr) {
        st = check_window_attr(c, nsp, a->kernel, a->stride, a->dilation, a->pad_begin,
                               a->pad_end);
    } else {
        /* A ConvTranspose's pads may be negative (an output_shape beyond the
         * full size, resolved below, grows the output window): the check
         * takes their magnitude. */
        const int64_t big = (int64_t)1 << 25; /* stands for any |pad| past the limit */
        int64_t pb[2] = {0, 0}, pe[2] = {0, 0};
        for (int i = 0; i < nsp; i++) {
            pb[i] = a->pad_begin[i] >= 0 ? a->pad_begin[i]
                                         : (a->pad_begin[i] < -big ? big : -a->pad_begin[i]);
            pe[i] = a->pad_end[i] >= 0 ? a->pad_end[i]
                                       : (a->pad_end[i] < -big ? big : -a->pad_end[i]);
        }
        st = check_window_attr(c, nsp, a->kernel, a->stride, a->dilation, pb, pe);
    }
    if (st != PF_OK) return st;
    int64_t cin = x->dims[1];
    int64_t m;
    if (!tr) {
        if (cin >= 0 && cin != w->dims[1] * a->group)
            return node_err(c->g, c->id, PF_ERR_FORMAT,
                            "input 0 '%s' has %lld channels but weight '%s' expects %lld x "
                            "group %lld",
                            x->name, (long long)cin, w->name, (long long)w->dims[1],
                            (long long)a->group);
        m = w->dims[0];
        if (m % a->group)
            return bad_input(c, 1, "output channels not divisible by group");
    } else {
        if (cin >= 0 && cin != w->dims[0])
            return node_err(c->g, c->id, PF_ERR_FORMAT,
                            "input 0 '%s' has %lld channels but weight '%s' has %lld",
                            x->name, (long long)cin, w->name, (long long)w->dims[0]);
        if (w->dims[0] % a->group) return bad_input(c, 1, "input channels not divisible by group");
        m = w->dims[1] * a->group;
    }
    if (bias && known(bias) && (bias->ndim != 1 || bias->dims[0] != m))
        return bad_input(c, 2, "bias must be 1D with one entry per output channel");
    shp o;
    memset(&o, 0, sizeof o);
    o.ndim = x->ndim;
    o.d[0] = x->dims[0];
    o.d[1] = m;
    for (int i = 0; i < nsp; i++) {
        int64_t in = x->dims[2 + i];
        int64_t k = a->kernel[i], s = a->stride[i], dil = a->dilation[i];
        int64_t ek = (k - 1) * dil + 1;
        if (in < 0) return bad_input(c, 0, "spatial dims must be concrete");
        if (!tr) {
            if (a->auto_pad == PF_IR_PAD_SAME_UPPER || a->auto_pad == PF_IR_PAD_SAME_LOWER)
                same_pads(in, k, s, dil, a->auto_pad == PF_IR_PAD_SAME_UPPER, &a->pad_begin[i],
                          &a->pad_end[i]);
            else if (a->auto_pad == PF_IR_PAD_VALID)
                a->pad_begin[i] = a->pad_end[i] = 0;
            int64_t od = window_out(in, k, s, dil, a->pad_begin[i], a->pad_end[i], false);
            if (od < 1)
                return node_err(c->g, c->id, PF_ERR_FORMAT,
                                "input 0 '%s' spatial axis %d size %lld + pads %lld/%lld is "
                                "smaller than the dilated kernel %lld",
                                x->name, i, (long long)in, (long long)a->pad_begin[i],
                                (long long)a->pad_end[i], (long long)ek);
            o.d[2 + i] = od;
        } else {
            int64_t op = a->output_padding[i];
            if (op < 0 || (op >= s && op >= dil))
                return node_err(c->g, c->id, PF_ERR_FORMAT,
                                "output_padding %lld on axis %d must be < stride or dilation",
                                (long long)op, i);
            int64_t full = s * (in - 1) + op + ek;
            int64_t od;
            if (a->output_shape[i] > 0 || a->auto_pad == PF_IR_PAD_SAME_UPPER ||
                a->auto_pad == PF_IR_PAD_SAME_LOWER) {
                od = a->output_shape[i] > 0 ? a->output_shape[i] : in * s;
                /* An output beyond the full size (total < 0) is allowed: the
                 * pads go negative as in the ONNX reference, whose halves
                 * floor (Python //), so with NOTSET one extra row or column
                 * lands at the end, as output_padding would put it. */
                int64_t total = full - od;
                if (total < -((int64_t)1 << 24))
                    return node_err(c->g, c->id, PF_ERR_FORMAT,
                                    "output size %lld on axis %d exceeds the full "
                                    "transposed-conv size %lld by more than 2^24",
                                    (long long)od, i, (long long)full);
                int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
                if (a->auto_pad == PF_IR_PAD_SAME_UPPER) {
                    a->pad_begin[i] = half;
                    a->pad_end[i] = total - half;
                } else {
                    a->pad_begin[i] = total - half;
                    a->pad_end[i] = half;
                }
            } else {
                if (a->auto_pad == PF_IR_PAD_VALID) a->pad_begin[i] = a->pad_end[i] = 0;
                od = full - a->pad_begin[i] - a->pad_end[i];
            }
            if (od < 1)
                return node_err(c->g, c->id, PF_ERR_FORMAT,
                                "output size %lld on axis %d (pads %lld/%lld)", (long long)od, i,
                                (long long)a->pad_begin[i], (long long)a->pad_end[i]);
            o.d[2 + i] = od;
        }
    }
    /* Pads now say everything: later re-inference keeps them. */
    a->auto_pad = PF_IR_PAD_EXPLICIT;
    if (tr) a->output_shape[0] = a->output_shape[1] = 0;
    set_out(c, 0, x->dtype, &o);
    return PF_OK;
}

static pf_status infer_pool(ctx *c)
{
    const pf_ir_value *x = IN(c, 0);
    if (!known(x)) {
        set_unknown(c);
        return PF_OK;
    }
    if (x->ndim < 3 || x->ndim > 4) return bad_input(c, 0, "pooling input must be 3D or 4D");
    shp o = shape_of(x);
    int nsp = x->ndim - 2;
    if (c->n->op == PF_IR_GLOBAL_AVGPOOL || c->n->op == PF_IR_GLOBAL_MAXPOOL) {
        for (int i = 0; i < nsp; i++) o.d[2 + i] = 1;
        set_out(c, 0, x->dtype, &o);
        return PF_OK;
    }
    pf_ir_pool_attr *a = &c->n->attr.pool;
    if (a->nsp && a->nsp != nsp) return bad_input(c, 0, "rank does not match kernel_shape");
    a->nsp = nsp;
    for (int i = 0; i < nsp; i++) {
        if (a->stride[i] == 0) a->stride[i] = 1;
        if (a->dilation[i] == 0) a->dilation[i] = 1;
    }
    pf_status st = check_window_attr(c, nsp, a->kernel, a->stride, a->dilation, a->pad_begin,
                                     a->pad_end);
    if (st != PF_OK) return st;
    for (int i = 0; i < nsp; i++) {
        int64_t in = x->dims[2 + i];
        if (in < 0) return bad_input(c, 0, "spatial dims must be concrete");
        if (a->auto_pad == PF_IR_PAD_SAME_UPPER || a->auto_pad == PF_IR_PAD_SAME_LOWER)
            same_pads(in, a->kernel[i], a->stride[i], a->dilation[i],
                      a->auto_pad == PF_IR_PAD_SAME_UPPER, &a->pad_begin[i], &a->pad_end[i]);
        else if (a->auto_pad == PF_IR_PAD_VALID)
            a->pad_begin[i] = a->pad_end[i] = 0;
        /* SAME and VALID define their output without ceil_mode. */
        bool cm = a->ceil_mode && a->auto_pad == PF_IR_PAD_EXPLICIT;
        int64_t od = window_out(in, a->kernel[i], a->stride[i], a->dilation[i], a->pad_begin[i],
                                a->pad_end[i], cm);
        if (od < 1)
            return node_err(c->g, c->id, PF_ERR_FORMAT,
                            "input 0 '%s' spatial axis %d size %lld + pads %lld/%lld is smaller "
                            "than the (dilated) kernel %lld",
                            x->name, i, (long long)in, (long long)a->pad_begin[i],
                            (long long)a->pad_end[i],
                            (long long)((a->kernel[i] - 1) * a->dilation[i] + 1));
        o.d[2 + i] = od;
    }
    if (a->auto_pad != PF_IR_PAD_EXPLICIT) {
        a->auto_pad = PF_IR_PAD_EXPLICIT;
        a->ceil_mode = false;
    }
    set_out(c, 0, x->dtype, &o);
    return PF_OK;
}

static pf_status infer_elementwise(ctx *c, pf_ir_dtype out_dt)
{
    shp acc;
    memset(&acc, 0, sizeof acc);
    bool first = true;
    for (int i = 0; i < c->n->n_in; i++) {
        const pf_ir_value *v = IN(c, i);
        if (!v) continue;
        if (!known(v)) {
            return unknown_as(c, out_dt);
        }
        if (first) {
            acc = shape_of(v);
            first = false;
            continue;
        }
        pf_status st = bcast(c, &acc, v, i);
        if (st != PF_OK) return st;
    }
    if (first) return node_err(c->g, c->id, PF_ERR_FORMAT, "no inputs");
    set_out(c, 0, out_dt, &acc);
    return PF_OK;
}

static pf_status infer_binary(ctx *c)
{
    const pf_ir_value *a = IN(c, 0), *b = IN(c, 1);
    if (!a || !b) return node_err(c->g, c->id, PF_ERR_FORMAT, "needs two inputs");
    pf_ir_op op = c->n->op;
    bool cmp = op == PF_IR_EQUAL || op == PF_IR_LESS || op == PF_IR_GREATER ||
               op == PF_IR_LESS_OR_EQUAL || op == PF_IR_GREATER_OR_EQUAL;
    bool logic = op == PF_IR_AND || op == PF_IR_OR || op == PF_IR_XOR;
    if (logic && (a->dtype != PF_IR_BOOL || b->dtype != PF_IR_BOOL))
        return node_err(c->g, c->id, PF_ERR_FORMAT, "inputs must be bool (got %s, %s)",
                        pf_ir_dtype_name(a->dtype), pf_ir_dtype_name(b->dtype));
    if (!logic && op != PF_IR_POW && a->dtype != b->dtype)
        return node_err(c->g, c->id, PF_ERR_FORMAT, "input dtypes differ: '%s' %s, '%s' %s",
                        a->name, pf_ir_dtype_name(a->dtype), b->name, pf_ir_dtype_name(b->dtype));
    return infer_elementwise(c, cmp || logic ? PF_IR_BOOL : a->dtype);
}

static pf_status infer_prelu(ctx *c)
{
    const pf_ir_value *x = IN(c, 0), *s = IN(c, 1);
    if (!known(x) || !known(s)) {
        set_unknown(c);
        return PF_OK;
    }
    shp acc = shape_of(x);
    pf_status st = bcast(c, &acc, s, 1);
    if (st != PF_OK) return st;
    if (acc.ndim != x->ndim) return bad_input(c, 1, "slope must broadcast to input 0");
    for (int i = 0; i < acc.ndim; i++)
        if (acc.d[i] != x->dims[i] && x->dims[i] != B)
            return bad_input(c, 1, "slope must broadcast to input 0");
    shp o = shape_of(x);
    set_out(c, 0, x->dtype, &o);
    return PF_OK;
}

static pf_status infer_concat(ctx *c)
{
    const pf_ir_value *v0 = IN(c, 0);
    if (!v0) return node_err(c->g, c->id, PF_ERR_FORMAT, "input 0 is absent");
    for (int i = 0; i < c->n->n_in; i++)
        if (!known(IN(c, i))) {
            return unknown_as(c, v0->dtype);
        }
    int r = v0->ndim;
    int64_t axis = c->n->attr.axis.axis;
    if (!norm_axis(&axis, r))
        return node_err(c->g, c->id, PF_ERR_FORMAT, "axis %lld out of range for rank %d",
                        (long long)c->n->attr.axis.axis, r);
    c->n->attr.axis.axis = axis;
    shp o = shape_of(v0);
    int64_t sum = 0;
    bool sym = false;
    for (int i = 0; i < c->n->n_in; i++) {
        const pf_ir_value *v = IN(c, i);
        if (v->ndim != r) return bad_input(c, i, "rank differs from input 0's");
        if (v->dtype != v0->dtype) return bad_input(c, i, "dtype differs from input 0's");
        for (int d = 0; d < r; d++) {
            if (d == axis) continue;
            if (v->dims[d] == o.d[d]) continue;
            if (v->dims[d] == B || o.d[d] == B) {
                if (o.d[d] == B) o.d[d] = v->dims[d];
                continue;
            }
            return node_err(c->g, c->id, PF_ERR_FORMAT,
                            "input %d '%s' dim %d is %lld, input 0 '%s' has %lld (only axis "
                            "%lld may differ)",
                            i, v->name, d, (long long)v->dims[d], v0->name, (long long)o.d[d],
                            (long long)axis);
        }
        if (v->dims[axis] == B) sym = true;
        else sum += v->dims[axis];
    }
    if (sym) {
        /* Concatenating along the batch needs its value. */
        return unknown_as(c, v0->dtype);
    }
    o.d[axis] = sum;
    set_out(c, 0, v0->dtype, &o);
    return PF_OK;
}

/* A "must be constant" input still wired as an input: a runtime value, or
 * a constant that folding has not moved into the attr yet. Either way the
 * attr is not final, so the output stays unknown. */
static bool pending_input(const ctx *c, int i)
{
    return IN(c, i) != NULL;
}

static int64_t prod_range(const shp *s, int from, int to, bool *sym)
{
    int64_t p = 1;
    for (int i = from; i < to; i++) {
        if (s->d[i] == B) *sym = true;
        else if (s->d[i] && p > INT64_MAX / s->d[i]) p = INT64_MAX; /* never matches */
        else p *= s->d[i];
    }
    return p;
}

static pf_status infer_reshape(ctx *c)
{
    const pf_ir_value *x = IN(c, 0);
    pf_ir_reshape_attr *a = &c->n->attr.reshape;
    if (!x) return node_err(c->g, c->id, PF_ERR_FORMAT, "input 0 is absent");
    if (!known(x) || (c->n->n_in > 1 && pending_input(c, 1))) {
        return unknown_as(c, x->dtype);
    }
    shp in = shape_of(x), o;
    memset(&o, 0, sizeof o);
    int r = x->ndim;
    int nsym = 0;
    for (int i = 0; i < r; i++) nsym += in.d[i] == B;
    bool sym = false;
    switch (a->kind) {
    case PF_IR_RESHAPE_SHAPE: {
        if (a->n < 0 || a->n > PF_IR_MAX_RANK)
            return node_err(c->g, c->id, PF_ERR_UNSUPPORTED, "target rank %d", a->n);
        o.ndim = a->n;
        int infer_at = -1;
        bool batch_kept = false;
        int64_t known_prod = 1;
        for (int i = 0; i < a->n; i++) {
            int64_t t = a->shape[i];
            if (t == -1) {
                if (infer_at >= 0)
                    return node_err(c->g, c->id, PF_ERR_FORMAT, "shape has two -1 entries");
                infer_at = i;
                continue;
            }
            if (t == 0 && !a->allowzero) {
                if (i >= r)
                    return node_err(c->g, c->id, PF_ERR_FORMAT,
                                    "shape[%d] = 0 copies a dim beyond input rank %d", i, r);
                t = in.d[i];
                if (t == B) {
                    batch_kept = true;
                    o.d[i] = B;
                    continue;
                }
            }
            if (t < 0)
                return node_err(c->g, c->id, PF_ERR_FORMAT, "shape[%d] = %lld", i,
                                (long long)a->shape[i]);
            o.d[i] = t;
            if (t && known_prod > INT64_MAX / t)
                return node_err(c->g, c->id, PF_ERR_FORMAT, "target shape overflows");
            known_prod *= t;
        }
        int64_t in_prod = prod_range(&in, 0, r, &sym);
        if (a->allowzero && infer_at >= 0 && known_prod == 0)
            return node_err(c->g, c->id, PF_ERR_FORMAT, "allowzero with both 0 and -1");
        if (sym && !batch_kept) {
            if (infer_at < 0 || known_prod == 0 || in_prod != known_prod) {
                /* The result depends on the batch value. */
                return unknown_as(c, x->dtype);
            }
            o.d[infer_at] = B;
        } else {
            if (infer_at >= 0) {
                if (known_prod == 0 || in_prod % known_prod)
                    goto mismatch;
                o.d[infer_at] = in_prod / known_prod;
            } else if (known_prod != in_prod) {
                goto mismatch;
            }
        }
        break;
    mismatch:
        {
            char b1[128];
            return node_err(c->g, c->id, PF_ERR_FORMAT,
                            "input 0 '%s' %s (%lld elements) cannot be reshaped to the target "
                            "(%lld known elements%s)",
                            x->name, fmt_dims(x, b1, sizeof b1), (long long)in_prod,
                            (long long)known_prod, infer_at >= 0 ? " and a -1" : "");
        }
    }
    case PF_IR_RESHAPE_FLATTEN: {
        int64_t axis = a->axis;
        if (axis < 0) axis += r;
        if (axis < 0 || axis > r)
            return node_err(c->g, c->id, PF_ERR_FORMAT, "flatten axis %lld for rank %d",
                            (long long)a->axis, r);
        a->axis = axis;
        bool s0 = false, s1 = false;
        int64_t p0 = prod_range(&in, 0, (int)axis, &s0), p1 = prod_range(&in, (int)axis, r, &s1);
        o.ndim = 2;
        o.d[0] = p0;
        o.d[1] = p1;
        if ((s0 && p0 != 1) || (s1 && p1 != 1)) {
            return unknown_as(c, x->dtype);
        }
        if (s0) o.d[0] = B;
        if (s1) o.d[1] = B;
        break;
    }
    case PF_IR_RESHAPE_SQUEEZE: {
        bool drop[PF_IR_MAX_RANK] = {false};
        if (a->n == 0) {
            if (nsym) return unknown_as(c, x->dtype); /* whether the batch is 1 decides */
            for (int i = 0; i < r; i++) drop[i] = in.d[i] == 1;
        } else {
            for (int k = 0; k < a->n; k++) {
                int64_t ax = a->axes[k];
                if (!norm_axis(&ax, r))
                    return node_err(c->g, c->id, PF_ERR_FORMAT,
                                    "squeeze axis %lld out of range for rank %d",
                                    (long long)a->axes[k], r);
                if (drop[ax])
                    return node_err(c->g, c->id, PF_ERR_FORMAT, "squeeze axis %lld repeated",
                                    (long long)ax);
                if (in.d[ax] != 1 && in.d[ax] != B) {
                    char b1[128];
                    return node_err(c->g, c->id, PF_ERR_FORMAT,
                                    "cannot squeeze axis %lld of input 0 '%s' %s: dim is %lld",
                                    (long long)ax, x->name, fmt_dims(x, b1, sizeof b1),
                                    (long long)in.d[ax]);
                }
                a->axes[k] = ax;
                drop[ax] = true;
            }
        }
        o.ndim = 0;
        for (int i = 0; i < r; i++)
            if (!drop[i]) o.d[o.ndim++] = in.d[i];
        break;
    }
    case PF_IR_RESHAPE_UNSQUEEZE: {
        int orank = r + a->n;
        if (a->n < 1 || orank > PF_IR_MAX_RANK)
            return node_err(c->g, c->id, PF_ERR_UNSUPPORTED,
                            "unsqueeze of rank %d by %d axes (result rank 1..%d)", r, a->n,
                            PF_IR_MAX_RANK);
        bool ins[PF_IR_MAX_RANK] = {false};
        for (int k = 0; k < a->n; k++) {
            int64_t ax = a->axes[k];
            if (!norm_axis(&ax, orank))
                return node_err(c->g, c->id, PF_ERR_FORMAT,
                                "unsqueeze axis %lld out of range for output rank %d",
                                (long long)a->axes[k], orank);
            if (ins[ax])
                return node_err(c->g, c->id, PF_ERR_FORMAT, "unsqueeze axis %lld repeated",
                                (long long)ax);
            ins[ax] = true;
            a->axes[k] = ax;
        }
        o.ndim = orank;
        for (int i = 0, j = 0; i < orank; i++) o.d[i] = ins[i] ? 1 : in.d[j++];
        break;
    }
    default:
        return node_err(c->g, c->id, PF_ERR_FORMAT, "bad reshape kind %d", (int)a->kind);
    }
    set_out(c, 0, x->dtype, &o);
    return PF_OK;
}

static pf_status infer_transpose(ctx *c)
{
    const pf_ir_value *x = IN(c, 0);
    if (!known(x)) {
        set_unknown(c);
        if (x) c->g->values[c->n->out[0]].dtype = x->dtype;
        return PF_OK;
    }
    pf_ir_transpose_attr *a = &c->n->attr.transpose;
    int r = x->ndim;
    if (a->n == 0 && r > 0) {
        a->n = r;
        for (int i = 0; i < r; i++) a->perm[i] = r - 1 - i;
    }
    if (a->n != r)
        return node_err(c->g, c->id, PF_ERR_FORMAT, "perm has %d entries, input 0 '%s' rank %d",
                        a->n, x->name, r);
    bool seen[PF_IR_MAX_RANK] = {false};
    shp o;
    memset(&o, 0, sizeof o);
    o.ndim = r;
    for (int i = 0; i < r; i++) {
        int64_t p = a->perm[i];
        if (!norm_axis(&p, r) || seen[p])
            return node_err(c->g, c->id, PF_ERR_FORMAT, "perm is not a permutation of 0..%d",
                            r - 1);
        seen[p] = true;
        a->perm[i] = p;
        o.d[i] = x->dims[p];
    }
    set_out(c, 0, x->dtype, &o);
    return PF_OK;
}

/* Resolves one slice axis as ONNX does; returns the output length. */
static int64_t slice_resolve(int64_t dim, int64_t *start, int64_t *end, int64_t step)
{
    int64_t s = *start, e = *end;
    if (s < 0) s = s < -dim ? 0 : s + dim;
    if (step > 0) {
        if (e < 0) e = e < -dim ? 0 : e + dim;
        if (s > dim) s = dim;
        if (e > dim) e = dim;
        *start = s;
        *end = e;
        return e > s ? (e - s - 1) / step + 1 : 0;
    }
    /* Negative step: a stored -1 is the resolved "before index 0". */
    if (e < -1) e = e < -dim ? -1 : e + dim;
    if (s > dim - 1) s = dim - 1;
    if (e > dim - 1) e = dim - 1;
    *start = s;
    *end = e;
    int64_t ns = step == INT64_MIN ? INT64_MAX : -step;
    return s > e ? (s - e - 1) / ns + 1 : 0;
}

static pf_status infer_slice(ctx *c)
{
    const pf_ir_value *x = IN(c, 0);
    if (!x) return node_err(c->g, c->id, PF_ERR_FORMAT, "input 0 is absent");
    bool pend = false;
    for (int i = 1; i < c->n->n_in; i++) pend = pend || pending_input(c, i);
    if (!known(x) || pend) {
        return unknown_as(c, x->dtype);
    }
    pf_ir_slice_attr *a = &c->n->attr.slice;
    int r = x->ndim;
    if (a->n < 0 || a->n > r)
        return node_err(c->g, c->id, PF_ERR_FORMAT, "%d slice axes for input rank %d", a->n, r);
    shp o = shape_of(x);
    bool seen[PF_IR_MAX_RANK] = {false};
    for (int k = 0; k < a->n; k++) {
        int64_t ax = a->axes[k];
        if (!norm_axis(&ax, r) || seen[ax])
            return node_err(c->g, c->id, PF_ERR_FORMAT,
                            "slice axis %lld out of range for rank %d or repeated",
                            (long long)a->axes[k], r);
        seen[ax] = true;
        a->axes[k] = ax;
        if (a->steps[k] == 0)
            return node_err(c->g, c->id, PF_ERR_FORMAT, "slice step 0 on axis %lld",
                            (long long)ax);
        if (x->dims[ax] == B) {
            /* Slicing the batch: only the full range keeps it symbolic. */
            if (a->steps[k] == 1 && a->starts[k] == 0 && a->ends[k] == INT64_MAX) continue;
            return unknown_as(c, x->dtype);
        }
    }
    for (int k = 0; k < a->n; k++) {
        int64_t ax = a->axes[k];
        if (x->dims[ax] == B) continue;
        o.d[ax] = slice_resolve(x->dims[ax], &a->starts[k], &a->ends[k], a->steps[k]);
    }
    set_out(c, 0, x->dtype, &o);
    return PF_OK;
}

static pf_status infer_pad(ctx *c)
{
    const pf_ir_value *x = IN(c, 0);
    if (!x) return node_err(c->g, c->id, PF_ERR_FORMAT, "input 0 is absent");
    if (!known(x) || pending_input(c, 1) || pending_input(c, 2)) {
        return unknown_as(c, x->dtype);
    }
    pf_ir_pad_attr *a = &c->n->attr.pad;
    int r = x->ndim;
    if (a->n != r)
        return node_err(c->g, c->id, PF_ERR_FORMAT,
                        "pads for rank %d, input 0 '%s' has rank %d", a->n, x->name, r);
    shp o = shape_of(x);
    for (int i = 0; i < r; i++) {
        if (o.d[i] == B) {
            if (a->begin[i] || a->end[i]) {
                return unknown_as(c, x->dtype);
            }
            continue;
        }
        if (a->mode == PF_IR_PADMODE_REFLECT &&
            (a->begin[i] >= o.d[i] || a->end[i] >= o.d[i]) && (a->begin[i] > 0 || a->end[i] > 0))
            return node_err(c->g, c->id, PF_ERR_FORMAT,
                            "reflect pad %lld/%lld on axis %d needs pads < dim %lld",
                            (long long)a->begin[i], (long long)a->end[i], i,
                            (long long)o.d[i]);
        const int64_t lim = (int64_t)1 << 40;
        if (a->begin[i] > lim || a->begin[i] < -lim || a->end[i] > lim || a->end[i] < -lim)
            return node_err(c->g, c->id, PF_ERR_FORMAT, "pads %lld/%lld on axis %d",
                            (long long)a->begin[i], (long long)a->end[i], i);
        int64_t d = o.d[i] + a->begin[i] + a->end[i];
        if (d < 0)
            return node_err(c->g, c->id, PF_ERR_FORMAT,
                            "pads %lld/%lld on axis %d crop more than dim %lld",
                            (long long)a->begin[i], (long long)a->end[i], i, (long long)o.d[i]);
        o.d[i] = d;
    }
    set_out(c, 0, x->dtype, &o);
    return PF_OK;
}

static pf_status infer_gather(ctx *c)
{
    const pf_ir_value *x = IN(c, 0), *idx = IN(c, 1);
    if (!x || !idx) return node_err(c->g, c->id, PF_ERR_FORMAT, "needs data and indices");
    if (idx->dtype != PF_IR_I64 && idx->dtype != PF_IR_I32)
        return bad_input(c, 1, "indices must be int64 or int32");
    if (!known(x) || !known(idx)) {
        return unknown_as(c, x->dtype);
    }
    int r = x->ndim;
    int64_t axis = c->n->attr.axis.axis;
    if (r < 1 || !norm_axis(&axis, r))
        return node_err(c->g, c->id, PF_ERR_FORMAT, "axis %lld out of range for rank %d",
                        (long long)c->n->attr.axis.axis, r);
    c->n->attr.axis.axis = axis;
    if (r - 1 + idx->ndim > PF_IR_MAX_RANK)
        return node_err(c->g, c->id, PF_ERR_UNSUPPORTED, "result rank %d", r - 1 + idx->ndim);
    int64_t dim = x->dims[axis];
    if (idx->data && dim >= 0) {
        int64_t ni = pf_ir_value_numel(idx);
        for (int64_t i = 0; i < ni; i++) {
            int64_t v = idx->dtype == PF_IR_I64 ? ((const int64_t *)idx->data)[i]
                                                : ((const int32_t *)idx->data)[i];
            if (v < -dim || v >= dim)
                return node_err(c->g, c->id, PF_ERR_FORMAT,
                                "index %lld (entry %lld of '%s') out of range for dim %lld of "
                                "'%s'",
                                (long long)v, (long long)i, idx->name, (long long)dim, x->name);
        }
    }
    shp o;
    memset(&o, 0, sizeof o);
    for (int i = 0; i < axis; i++) o.d[o.ndim++] = x->dims[i];
    for (int i = 0; i < idx->ndim; i++) o.d[o.ndim++] = idx->dims[i];
    for (int i = (int)axis + 1; i < r; i++) o.d[o.ndim++] = x->dims[i];
    set_out(c, 0, x->dtype, &o);
    return PF_OK;
}

/* Expand reads its target from attr reshape (kind SHAPE, n, shape[]), which
 * the importer or the folder fills from the ONNX shape input. */
static pf_status infer_expand(ctx *c)
{
    const pf_ir_value *x = IN(c, 0);
    if (!x) return node_err(c->g, c->id, PF_ERR_FORMAT, "input 0 is absent");
    if (!known(x) || pending_input(c, 1)) {
        return unknown_as(c, x->dtype);
    }
    const pf_ir_reshape_attr *a = &c->n->attr.reshape;
    if (a->n < 0 || a->n > PF_IR_MAX_RANK)
        return node_err(c->g, c->id, PF_ERR_UNSUPPORTED, "target rank %d", a->n);
    pf_ir_value t;
    memset(&t, 0, sizeof t);
    t.name = (char *)"shape";
    t.ndim = a->n;
    for (int i = 0; i < a->n; i++) {
        if (a->shape[i] < 0)
            return node_err(c->g, c->id, PF_ERR_FORMAT, "shape[%d] = %lld", i,
                            (long long)a->shape[i]);
        t.dims[i] = a->shape[i];
    }
    shp acc = shape_of(x);
    pf_status st = bcast(c, &acc, &t, 1);
    if (st != PF_OK) return st;
    set_out(c, 0, x->dtype, &acc);
    return PF_OK;
}

static pf_status infer_tile(ctx *c)
{
    const pf_ir_value *x = IN(c, 0);
    if (!x) return node_err(c->g, c->id, PF_ERR_FORMAT, "input 0 is absent");
    if (!known(x) || pending_input(c, 1)) {
        return unknown_as(c, x->dtype);
    }
    const pf_ir_tile_attr *a = &c->n->attr.tile;
    if (a->n != x->ndim)
        return node_err(c->g, c->id, PF_ERR_FORMAT, "%d repeats for input 0 '%s' of rank %d",
                        a->n, x->name, x->ndim);
    shp o = shape_of(x);
    for (int i = 0; i < o.ndim; i++) {
        if (a->repeats[i] < 0)
            return node_err(c->g, c->id, PF_ERR_FORMAT, "repeats[%d] = %lld", i,
                            (long long)a->repeats[i]);
        if (o.d[i] == B) {
            if (a->repeats[i] == 1) continue;
            return unknown_as(c, x->dtype);
        }
        if (o.d[i] && a->repeats[i] > INT64_MAX / 2 / o.d[i])
            return node_err(c->g, c->id, PF_ERR_FORMAT, "repeats[%d] = %lld overflows", i,
                            (long long)a->repeats[i]);
        o.d[i] *= a->repeats[i];
    }
    set_out(c, 0, x->dtype, &o);
    return PF_OK;
}

static pf_status infer_shape_op(ctx *c)
{
    const pf_ir_value *x = IN(c, 0);
    if (!known(x)) {
        return unknown_as(c, PF_IR_I64);
    }
    pf_ir_slice_attr *a = &c->n->attr.slice;
    int64_t r = x->ndim;
    int64_t s = a->starts[0], e = a->ends[0];
    if (s < 0) s += r;
    if (e < 0) e += r;
    s = s < 0 ? 0 : (s > r ? r : s);
    e = e < 0 ? 0 : (e > r ? r : e);
    a->starts[0] = s;
    a->ends[0] = e;
    shp o;
    memset(&o, 0, sizeof o);
    o.ndim = 1;
    o.d[0] = e > s ? e - s : 0;
    set_out(c, 0, PF_IR_I64, &o);
    return PF_OK;
}

static bool read_int(const pf_ir_value *v, int64_t i, int64_t *out)
{
    switch (v->dtype) {
    case PF_IR_I64: *out = ((const int64_t *)v->data)[i]; return true;
    case PF_IR_I32: *out = ((const int32_t *)v->data)[i]; return true;
    default: return false;
    }
}

static pf_status infer_constant_of_shape(ctx *c)
{
    const pf_ir_value *s = IN(c, 0);
    pf_ir_dtype dt = c->g->values[c->n->out[0]].dtype;
    if (!s) return node_err(c->g, c->id, PF_ERR_FORMAT, "input 0 is absent");
    if (!s->data) {
        set_unknown(c);
        return PF_OK;
    }
    int64_t n = pf_ir_value_numel(s);
    if (s->ndim != 1 || n > PF_IR_MAX_RANK)
        return bad_input(c, 0, "shape must be a 1D tensor of at most 8 entries");
    shp o;
    memset(&o, 0, sizeof o);
    o.ndim = (int)n;
    for (int i = 0; i < n; i++) {
        if (!read_int(s, i, &o.d[i])) return bad_input(c, 0, "shape must be int64");
        if (o.d[i] < 0) return bad_input(c, 0, "negative dim");
    }
    set_out(c, 0, dt, &o);
    return PF_OK;
}

static pf_status infer_split(ctx *c)
{
    const pf_ir_value *x = IN(c, 0);
    if (!x) return node_err(c->g, c->id, PF_ERR_FORMAT, "input 0 is absent");
    if (!known(x) || pending_input(c, 1)) {
        set_unknown(c);
        for (int k = 0; k < c->n->n_out; k++) c->g->values[c->n->out[k]].dtype = x->dtype;
        return PF_OK;
    }
    pf_ir_split_attr *a = &c->n->attr.split;
    int64_t axis = a->axis;
    if (!norm_axis(&axis, x->ndim))
        return node_err(c->g, c->id, PF_ERR_FORMAT, "axis %lld out of range for rank %d",
                        (long long)a->axis, x->ndim);
    a->axis = axis;
    int64_t dim = x->dims[axis];
    int k = c->n->n_out;
    if (dim == B) {
        set_unknown(c);
        for (int i = 0; i < k; i++) c->g->values[c->n->out[i]].dtype = x->dtype;
        return PF_OK;
    }
    if (a->n == 0) {
        if (dim % k)
            return node_err(c->g, c->id, PF_ERR_FORMAT,
                            "dim %lld of axis %lld does not split evenly into %d outputs",
                            (long long)dim, (long long)axis, k);
        a->n = k;
        for (int i = 0; i < k; i++) a->sizes[i] = dim / k;
    }
    if (a->n != k)
        return node_err(c->g, c->id, PF_ERR_FORMAT, "%d split sizes for %d outputs", a->n, k);
    int64_t sum = 0;
    for (int i = 0; i < k; i++) {
        /* Each size is checked against the dim before adding: sizes from
         * the file can be near INT64_MAX, and their sum must not wrap. */
        if (a->sizes[i] < 0 || a->sizes[i] > dim - sum)
            return node_err(c->g, c->id, PF_ERR_FORMAT,
                            "split size %lld (output %d) exceeds what is left of axis %lld "
                            "(%lld of %lld)",
                            (long long)a->sizes[i], i, (long long)axis, (long long)(dim - sum),
                            (long long)dim);
        sum += a->sizes[i];
    }
    if (sum != dim)
        return node_err(c->g, c->id, PF_ERR_FORMAT,
                        "split sizes add up to %lld, axis %lld of '%s' is %lld", (long long)sum,
                        (long long)axis, x->name, (long long)dim);
    for (int i = 0; i < k; i++) {
        shp o = shape_of(x);
        o.d[axis] = a->sizes[i];
        set_out(c, i, x->dtype, &o);
    }
    return PF_OK;
}

static pf_status infer_d2s(ctx *c)
{
    const pf_ir_value *x = IN(c, 0);
    if (!known(x)) {
        set_unknown(c);
        if (x) c->g->values[c->n->out[0]].dtype = x->dtype;
        return PF_OK;
    }
    if (x->ndim != 4) return bad_input(c, 0, "must be 4D NCHW");
    int64_t b = c->n->attr.d2s.blocksize;
    if (b < 1) return node_err(c->g, c->id, PF_ERR_FORMAT, "blocksize %lld", (long long)b);
    shp o = shape_of(x);
    if (c->n->op == PF_IR_DEPTH_TO_SPACE) {
        if (o.d[1] % (b * b)) return bad_input(c, 0, "channels not divisible by blocksize^2");
        o.d[1] /= b * b;
        o.d[2] *= b;
        o.d[3] *= b;
    } else {
        if (o.d[2] % b || o.d[3] % b) return bad_input(c, 0, "H, W not divisible by blocksize");
        o.d[1] *= b * b;
        o.d[2] /= b;
        o.d[3] /= b;
    }
    set_out(c, 0, x->dtype, &o);
    return PF_OK;
}

/* Scales case: out = floor(in * scale). Sizes case: the importer (or the
 * folder) set the output value's dims to the sizes; scale = out / in. */
static pf_status infer_resize(ctx *c)
{
    const pf_ir_value *x = IN(c, 0);
    pf_ir_value *y = &c->g->values[c->n->out[0]];
    pf_ir_resize_attr *a = &c->n->attr.resize;
    if (!x) return node_err(c->g, c->id, PF_ERR_FORMAT, "input 0 is absent");
    bool pend = false;
    for (int i = 1; i < c->n->n_in; i++) pend = pend || pending_input(c, i);
    if (!known(x) || pend) {
        return unknown_as(c, x->dtype);
    }
    int r = x->ndim;
    shp o = shape_of(x);
    if (a->has_scales) {
        if (a->n != r)
            return node_err(c->g, c->id, PF_ERR_FORMAT, "%d scales for input 0 '%s' of rank %d",
                            a->n, x->name, r);
        for (int i = 0; i < r; i++) {
            if (!(a->scale[i] > 0))
                return node_err(c->g, c->id, PF_ERR_FORMAT, "scale[%d] = %g", i, a->scale[i]);
            if (o.d[i] == B) {
                if (a->scale[i] == 1.0) continue;
                return unknown_as(c, x->dtype);
            }
            /* ONNX: floor(in * scale); the epsilon absorbs scales such as
             * 1/3 given as float that land a hair below an integer. */
            double v = (double)o.d[i] * a->scale[i];
            if (v > 1e15)
                return node_err(c->g, c->id, PF_ERR_FORMAT, "scale %g on axis %d too large",
                                a->scale[i], i);
            int64_t d = (int64_t)(v + 1e-9 * (v > 1 ? v : 1));
            if (d < 1)
                return node_err(c->g, c->id, PF_ERR_FORMAT,
                                "scale %g on axis %d gives an empty output", a->scale[i], i);
            o.d[i] = d;
        }
    } else {
        if (y->ndim != r)
            return node_err(c->g, c->id, PF_ERR_FORMAT,
                            "resize by sizes: output '%s' needs rank %d dims (has %d)", y->name,
                            r, y->ndim);
        a->n = r;
        for (int i = 0; i < r; i++) {
            o.d[i] = y->dims[i];
            if (o.d[i] == B) {
                /* A carried batch (an earlier inference wrote it). */
                o.d[i] = x->dims[i];
                a->scale[i] = 1.0;
                continue;
            }
            if (x->dims[i] == B || o.d[i] == B) {
                a->scale[i] = 0; /* known once the batch is */
                continue;
            }
            if (o.d[i] < 1 || x->dims[i] < 1)
                return node_err(c->g, c->id, PF_ERR_FORMAT, "resize axis %d from %lld to %lld",
                                i, (long long)x->dims[i], (long long)o.d[i]);
            a->scale[i] = (double)o.d[i] / (double)x->dims[i];
        }
    }
    set_out(c, 0, x->dtype, &o);
    return PF_OK;
}

static pf_status infer_reduce(ctx *c)
{
    const pf_ir_value *x = IN(c, 0);
    pf_ir_op op = c->n->op;
    bool arg = op == PF_IR_ARGMAX || op == PF_IR_ARGMIN;
    pf_ir_dtype dt = arg ? PF_IR_I64 : (x ? x->dtype : PF_IR_F32);
    if (!x) return node_err(c->g, c->id, PF_ERR_FORMAT, "input 0 is absent");
    if (!known(x) || pending_input(c, 1)) {
        return unknown_as(c, dt);
    }
    pf_ir_reduce_attr *a = &c->n->attr.reduce;
    int r = x->ndim;
    bool red[PF_IR_MAX_RANK] = {false};
    if (arg) {
        if (a->n == 0) {
            a->n = 1;
            a->axes[0] = 0;
        }
        if (a->n != 1)
            return node_err(c->g, c->id, PF_ERR_FORMAT, "%d axes (ArgMax/ArgMin take one)", a->n);
    }
    if (a->n < 0 || a->n > PF_IR_MAX_RANK)
        return node_err(c->g, c->id, PF_ERR_FORMAT, "%d reduce axes", a->n);
    if (a->n == 0) {
        if (!a->noop_with_empty_axes)
            for (int i = 0; i < r; i++) red[i] = true;
    }
    for (int k = 0; k < a->n; k++) {
        int64_t ax = a->axes[k];
        if (!norm_axis(&ax, r) || red[ax])
            return node_err(c->g, c->id, PF_ERR_FORMAT,
                            "reduce axis %lld out of range for rank %d or repeated",
                            (long long)a->axes[k], r);
        red[ax] = true;
        a->axes[k] = ax;
    }
    shp o;
    memset(&o, 0, sizeof o);
    for (int i = 0; i < r; i++) {
        if (!red[i]) o.d[o.ndim++] = x->dims[i];
        else if (a->keepdims) o.d[o.ndim++] = 1;
        if (red[i] && x->dims[i] == 0 && (arg || op == PF_IR_REDUCE_MAX || op == PF_IR_REDUCE_MIN))
            return bad_input(c, 0, "reducing an empty axis has no max/min");
    }
    set_out(c, 0, dt, &o);
    return PF_OK;
}

static pf_status infer_softmax(ctx *c)
{
    const pf_ir_value *x = IN(c, 0);
    if (!known(x)) {
        set_unknown(c);
        if (x) c->g->values[c->n->out[0]].dtype = x->dtype;
        return PF_OK;
    }
    int64_t axis = c->n->attr.axis.axis;
    if (x->ndim == 0 || !norm_axis(&axis, x->ndim))
        return node_err(c->g, c->id, PF_ERR_FORMAT, "axis %lld out of range for rank %d",
                        (long long)c->n->attr.axis.axis, x->ndim);
    c->n->attr.axis.axis = axis;
    shp o = shape_of(x);
    set_out(c, 0, x->dtype, &o);
    return PF_OK;
}

static pf_status infer_gemm(ctx *c)
{
    const pf_ir_value *A = IN(c, 0), *Bv = IN(c, 1), *C = IN(c, 2);
    if (!known(A) || !known(Bv) || (C && !known(C))) {
        set_unknown(c);
        if (A) c->g->values[c->n->out[0]].dtype = A->dtype;
        return PF_OK;
    }
    const pf_ir_gemm_attr *a = &c->n->attr.gemm;
    if (A->ndim != 2) return bad_input(c, 0, "Gemm input A must be 2D");
    if (Bv->ndim != 2) return bad_input(c, 1, "Gemm input B must be 2D");
    int64_t m = a->trans_a ? A->dims[1] : A->dims[0], k = a->trans_a ? A->dims[0] : A->dims[1];
    int64_t k2 = a->trans_b ? Bv->dims[1] : Bv->dims[0], n = a->trans_b ? Bv->dims[0] : Bv->dims[1];
    if (k != k2 && k != B && k2 != B) {
        char b1[128], b2[128];
        return node_err(c->g, c->id, PF_ERR_FORMAT,
                        "inner dims differ: A '%s' %s%s, B '%s' %s%s (K %lld vs %lld)", A->name,
                        fmt_dims(A, b1, sizeof b1), a->trans_a ? "^T" : "", Bv->name,
                        fmt_dims(Bv, b2, sizeof b2), a->trans_b ? "^T" : "", (long long)k,
                        (long long)k2);
    }
    shp o;
    memset(&o, 0, sizeof o);
    o.ndim = 2;
    o.d[0] = m;
    o.d[1] = n;
    if (C) {
        shp t = o;
        pf_status st = bcast(c, &t, C, 2);
        if (st != PF_OK) return st;
        if (t.ndim != 2 || (t.d[0] != m && m != B) || t.d[1] != n)
            return bad_input(c, 2, "C must broadcast to [M, N]");
    }
    set_out(c, 0, A->dtype, &o);
    return PF_OK;
}

static pf_status infer_matmul(ctx *c)
{
    const pf_ir_value *A = IN(c, 0), *Bv = IN(c, 1);
    if (!known(A) || !known(Bv)) {
        set_unknown(c);
        if (A) c->g->values[c->n->out[0]].dtype = A->dtype;
        return PF_OK;
    }
    if (A->ndim < 1 || Bv->ndim < 1) return bad_input(c, A->ndim < 1 ? 0 : 1, "scalar operand");
    /* 1-D operands are promoted ([K] -> [1,K] and [K] -> [K,1]) and the
     * added dim removed again. */
    pf_ir_value a = *A, b = *Bv;
    bool pa = false, pb = false;
    if (a.ndim == 1) {
        a.ndim = 2;
        a.dims[1] = A->dims[0];
        a.dims[0] = 1;
        pa = true;
    }
    if (b.ndim == 1) {
        b.ndim = 2;
        b.dims[0] = Bv->dims[0];
        b.dims[1] = 1;
        pb = true;
    }
    int64_t k = a.dims[a.ndim - 1], k2 = b.dims[b.ndim - 2];
    if (k != k2 && k != B && k2 != B) {
        char b1[128], b2[128];
        return node_err(c->g, c->id, PF_ERR_FORMAT,
                        "inner dims differ: '%s' %s and '%s' %s (K %lld vs %lld)", A->name,
                        fmt_dims(A, b1, sizeof b1), Bv->name, fmt_dims(Bv, b2, sizeof b2),
                        (long long)k, (long long)k2);
    }
    pf_ir_value ba = a, bb = b;
    ba.ndim = a.ndim - 2;
    bb.ndim = b.ndim - 2;
    shp acc = shape_of(&ba);
    pf_status st = bcast(c, &acc, &bb, 1);
    if (st != PF_OK) return st;
    if (!pa) acc.d[acc.ndim++] = a.dims[a.ndim - 2];
    if (!pb) acc.d[acc.ndim++] = b.dims[b.ndim - 1];
    set_out(c, 0, A->dtype, &acc);
    return PF_OK;
}

static pf_status infer_unary(ctx *c, pf_ir_dtype dt)
{
    const pf_ir_value *x = IN(c, 0);
    if (!x) return node_err(c->g, c->id, PF_ERR_FORMAT, "input 0 is absent");
    if (!known(x)) {
        return unknown_as(c, dt);
    }
    shp o = shape_of(x);
    set_out(c, 0, dt, &o);
    return PF_OK;
}

static pf_status infer_batchnorm(ctx *c)
{
    const pf_ir_value *x = IN(c, 0);
    if (!x) return node_err(c->g, c->id, PF_ERR_FORMAT, "input 0 is absent");
    if (known(x)) {
        if (x->ndim < 2) return bad_input(c, 0, "needs [N, C, ...]");
        for (int i = 1; i < 5; i++) {
            const pf_ir_value *p = IN(c, i);
            if (!p) return bad_input(c, i, "parameter is absent");
            if (known(p) && (p->ndim != 1 || (x->dims[1] >= 0 && p->dims[0] != x->dims[1])))
                return bad_input(c, i, "parameter must be [C]");
        }
    }
    return infer_unary(c, x->dtype);
}

static pf_status infer_where(ctx *c)
{
    const pf_ir_value *cond = IN(c, 0), *x = IN(c, 1), *y = IN(c, 2);
    if (!cond || !x || !y) return node_err(c->g, c->id, PF_ERR_FORMAT, "needs three inputs");
    if (cond->dtype != PF_IR_BOOL) return bad_input(c, 0, "condition must be bool");
    if (x->dtype != y->dtype)
        return node_err(c->g, c->id, PF_ERR_FORMAT, "X '%s' is %s, Y '%s' is %s", x->name,
                        pf_ir_dtype_name(x->dtype), y->name, pf_ir_dtype_name(y->dtype));
    return infer_elementwise(c, x->dtype);
}

static pf_status check_outputs(ctx *c)
{
    int mn = 1, mx = 1;
    if (c->n->op == PF_IR_SPLIT) mx = PF_IR_MAX_OUTPUTS;
    if (c->n->n_out < mn || c->n->n_out > mx)
        return node_err(c->g, c->id, PF_ERR_FORMAT, "%d outputs", c->n->n_out);
    for (int k = 0; k < c->n->n_out; k++)
        if (c->n->out[k] < 0 || c->n->out[k] >= c->g->n_values)
            return node_err(c->g, c->id, PF_ERR_FORMAT, "output %d has bad id", k);
    for (int i = 0; i < c->n->n_in; i++)
        if (c->n->in[i] < -1 || c->n->in[i] >= c->g->n_values)
            return node_err(c->g, c->id, PF_ERR_FORMAT, "input %d has bad id", i);
    return PF_OK;
}

/* Every inferred output must have a byte size that fits comfortably in
 * int64/size_t: pf_ir_value_nbytes() answers 0 on overflow, which the folder,
 * the planner and the kernels would take for an empty tensor and then write
 * the real (huge) count into a tiny buffer. No real model comes near 2^40
 * bytes in one tensor; the bound also keeps sums of sizes from overflowing. */
#define MAX_TENSOR_BYTES ((int64_t)1 << 40)

/* True when v's concrete dims (a symbolic batch taken as 1) need more than
 * MAX_TENSOR_BYTES. */
static bool too_large(const pf_ir_value *v, bool *symbolic)
{
    *symbolic = false;
    if (v->ndim < 0) return false;
    int64_t n = 1;
    for (int i = 0; i < v->ndim; i++) {
        int64_t d = v->dims[i];
        if (d < 0) {
            *symbolic = true; /* bounded again once the batch is known */
            continue;
        }
        if (d && n > MAX_TENSOR_BYTES / d) return true;
        n *= d;
    }
    int64_t es = (int64_t)pf_ir_dtype_size(v->dtype);
    return es && n > MAX_TENSOR_BYTES / es;
}

static pf_status check_output_sizes(const ctx *c)
{
    for (int k = 0; k < c->n->n_out; k++) {
        const pf_ir_value *v = &c->g->values[c->n->out[k]];
        bool symbolic;
        if (!too_large(v, &symbolic)) continue;
        char b[128];
        return node_err(c->g, c->id, PF_ERR_FORMAT,
                        "output %d '%s' %s is too large (over 2^40 bytes%s)", k, v->name,
                        fmt_dims(v, b, sizeof b), symbolic ? ", the batch taken as 1" : "");
    }
    return PF_OK;
}

/* ---- Quantization ops ---------------------------------------------------
 * The conv- and matmul-like ones reuse infer_conv/infer_matmul on a copy of
 * the node whose inputs are moved to Conv's/MatMul's positions. */

static bool is_q8(pf_ir_dtype t) { return t == PF_IR_U8 || t == PF_IR_I8; }

/* A scale or zero point: per tensor (one element) or, when per_dim >= 0,
 * also 1-D with per_dim entries. */
static pf_status check_qparam(ctx *c, int i, int64_t per_dim, const char *what)
{
    const pf_ir_value *v = IN(c, i);
    if (!known(v)) return PF_OK;
    int64_t n = pf_ir_value_numel(v);
    if (n == 1 && v->ndim <= 1) return PF_OK;
    if (per_dim >= 0 && v->ndim == 1 && v->dims[0] == per_dim) return PF_OK;
    char b[160];
    snprintf(b, sizeof b, "%s must be a scalar%s", what,
             per_dim >= 0 ? " or 1-D with one entry per channel" : "");
    return bad_input(c, i, b);
}

static pf_status infer_qdq(ctx *c)
{
    const pf_ir_value *x = IN(c, 0), *scale = IN(c, 1), *zp = IN(c, 2);
    bool q = c->n->op == PF_IR_QUANTIZE_LINEAR;
    pf_ir_dtype dt = PF_IR_F32;
    if (q) {
        dt = zp ? zp->dtype : PF_IR_U8;
        if (!is_q8(dt)) return bad_input(c, 2, "zero point must be uint8 or int8");
        if (x && x->dtype != PF_IR_F32 && x->dtype != PF_IR_I32)
            return bad_input(c, 0, "QuantizeLinear needs float32 or int32");
    } else {
        if (x && !is_q8(x->dtype) && x->dtype != PF_IR_I32)
            return bad_input(c, 0, "DequantizeLinear needs uint8, int8 or int32");
        if (zp && x && zp->dtype != x->dtype)
            return bad_input(c, 2, "zero point dtype differs from the input's");
    }
    if (scale && scale->dtype != PF_IR_F32) return bad_input(c, 1, "scale must be float32");
    if (!known(x)) return unknown_as(c, dt);
    int64_t *axis = &c->n->attr.axis.axis;
    int64_t per = -1;
    bool per_axis = (known(scale) && pf_ir_value_numel(scale) != 1) ||
                    (known(zp) && pf_ir_value_numel(zp) != 1);
    if (per_axis) {
        if (*axis < 0) *axis += x->ndim;
        if (*axis < 0 || *axis >= x->ndim)
            return node_err(c->g, c->id, PF_ERR_FORMAT, "axis %lld out of range for rank %d",
                            (long long)*axis, x->ndim);
        per = x->dims[*axis];
    }
    pf_status st = check_qparam(c, 1, per, "scale");
    if (st == PF_OK && zp) st = check_qparam(c, 2, per, "zero point");
    if (st != PF_OK) return st;
    shp o = shape_of(x);
    set_out(c, 0, dt, &o);
    return PF_OK;
}

/* Conv rules on inputs xi (data), wi (weight), bi (bias or -1); output dt. */
static pf_status infer_conv_at(ctx *c, int xi, int wi, int bi, pf_ir_dtype dt)
{
    pf_ir_node tmp = *c->n;
    tmp.op = PF_IR_CONV;
    tmp.n_in = 3;
    tmp.in[0] = c->n->in[xi];
    tmp.in[1] = c->n->in[wi];
    tmp.in[2] = bi >= 0 && bi < c->n->n_in ? c->n->in[bi] : -1;
    ctx t = {c->g, c->id, &tmp};
    pf_status st = infer_conv(&t);
    c->n->attr = tmp.attr;
    c->g->values[c->n->out[0]].dtype = dt;
    return st;
}

static pf_status infer_matmul_at(ctx *c, int ai, int bi, pf_ir_dtype dt)
{
    pf_ir_node tmp = *c->n;
    tmp.op = PF_IR_MATMUL;
    tmp.n_in = 2;
    tmp.in[0] = c->n->in[ai];
    tmp.in[1] = c->n->in[bi];
    ctx t = {c->g, c->id, &tmp};
    pf_status st = infer_matmul(&t);
    c->g->values[c->n->out[0]].dtype = dt;
    return st;
}

/* Scale input si (F32) and zero point zi (the dtype of data input di, or any
 * 8-bit type when di < 0) of a quantized op: per tensor, or per channel with
 * `per` entries (per < 0: per tensor only; PER_UNKNOWN: the channel count is
 * not known yet, sizes are left to the kernels). Absent inputs pass. */
#define PER_UNKNOWN INT64_MIN
static pf_status qparams(ctx *c, int si, int zi, int di, int64_t per)
{
    const pf_ir_value *sv = si >= 0 ? IN(c, si) : NULL, *zv = zi >= 0 ? IN(c, zi) : NULL;
    const pf_ir_value *dv = di >= 0 ? IN(c, di) : NULL;
    if (sv && sv->dtype != PF_IR_F32) return bad_input(c, si, "scale must be float32");
    if (zv && dv && zv->dtype != dv->dtype)
        return bad_input(c, zi, "zero point dtype differs from its tensor's");
    if (zv && !dv && !is_q8(zv->dtype)) return bad_input(c, zi, "zero point must be uint8 or int8");
    if (per == PER_UNKNOWN) return PF_OK;
    pf_status st = sv ? check_qparam(c, si, per, "scale") : PF_OK;
    if (st == PF_OK && zv) st = check_qparam(c, zi, per, "zero point");
    return st;
}

/* Output channels of conv weight input wi, rows of A (ai) / columns of B (bi). */
static int64_t qdim(ctx *c, int vi, int from_end)
{
    const pf_ir_value *v = IN(c, vi);
    if (!known(v) || v->ndim < 1) return PER_UNKNOWN;
    if (from_end < 0) return v->dims[0];
    if (v->ndim < from_end) return 1; /* a 1-D A has one row */
    int64_t d = v->dims[v->ndim - from_end];
    return d < 0 ? PER_UNKNOWN : d;
}

static pf_status infer_quant_op(ctx *c)
{
    const pf_ir_node *n = c->n;
    const bool integer = n->op == PF_IR_CONV_INTEGER || n->op == PF_IR_MATMUL_INTEGER;
    for (int i = 0; i < n->n_in; i++) {
        const pf_ir_value *v = IN(c, i);
        bool data = integer ? i < 2 : (i == 0 || i == 3);
        if (v && data && !is_q8(v->dtype)) return bad_input(c, i, "must be uint8 or int8");
    }
    pf_ir_dtype ydt;
    pf_status st = PF_OK;
#define QP(si, zi, di, per) \
    do { \
        if (st == PF_OK) st = qparams(c, si, zi, di, per); \
    } while (0)
    switch (n->op) {
    case PF_IR_QLINEAR_CONV: case PF_IR_QLINEAR_MATMUL: {
        const bool mm = n->op == PF_IR_QLINEAR_MATMUL;
        ydt = IN(c, 7)->dtype;
        if (!is_q8(ydt)) return bad_input(c, 7, "y zero point must be uint8 or int8");
        const int64_t rows = mm ? qdim(c, 0, 2) : -1, cols = mm ? qdim(c, 3, 1) : qdim(c, 3, -1);
        QP(1, 2, 0, rows);
        QP(4, 5, 3, cols);
        QP(6, 7, -1, rows);
        if (st != PF_OK) return st;
        if (mm) return infer_matmul_at(c, 0, 3, ydt);
        if (IN(c, 8) && IN(c, 8)->dtype != PF_IR_I32) return bad_input(c, 8, "bias must be int32");
        return infer_conv_at(c, 0, 3, 8, ydt);
    }
    case PF_IR_CONV_INTEGER:
        QP(-1, 2, 0, -1);
        QP(-1, 3, 1, qdim(c, 1, -1));
        return st != PF_OK ? st : infer_conv_at(c, 0, 1, -1, PF_IR_I32);
    case PF_IR_MATMUL_INTEGER:
        QP(-1, 2, 0, qdim(c, 0, 2));
        QP(-1, 3, 1, qdim(c, 1, 1));
        return st != PF_OK ? st : infer_matmul_at(c, 0, 1, PF_IR_I32);
    case PF_IR_QCONV: case PF_IR_QMATMUL: {
        const bool mm = n->op == PF_IR_QMATMUL;
        ydt = IN(c, 7) ? (IN(c, 8) ? IN(c, 8)->dtype : PF_IR_U8) : PF_IR_F32;
        if (IN(c, 6) && IN(c, 6)->dtype != PF_IR_F32) return bad_input(c, 6, "bias must be float32");
        QP(1, 2, 0, -1);
        QP(4, 5, 3, mm ? qdim(c, 3, 1) : qdim(c, 3, -1));
        QP(7, 8, -1, -1);
        if (IN(c, 9) && is_q8(IN(c, 9)->dtype)) QP(10, 11, 9, -1);
        QP(12, 13, -1, -1);
        if (st != PF_OK) return st;
        if (mm) return infer_matmul_at(c, 0, 3, ydt);
        return infer_conv_at(c, 0, 3, 6, ydt);
    }
    default: break;
    }
#undef QP
    return node_err(c->g, c->id, PF_ERR_INTERNAL, "not a quantization op");
}

static pf_status infer_op(ctx *c);

pf_status pf_ir_infer_node(pf_ir_graph *g, int node)
{
    if (!g || node < 0 || node >= g->n_nodes)
        return pf_set_error(PF_ERR_INVALID, "pf_ir_infer_node: bad node %d", node);
    ctx c = {g, node, &g->nodes[node]};
    if (c.n->dead) return PF_OK;
    pf_status st = check_outputs(&c);
    if (st == PF_OK) st = infer_op(&c);
    if (st == PF_OK) st = check_output_sizes(&c);
    return st;
}

static pf_status infer_op(ctx *cp)
{
    ctx c = *cp;
    pf_ir_graph *g = c.g;
    int node = c.id;
    const pf_ir_value *x = IN(&c, 0);
    switch (c.n->op) {
    case PF_IR_CONV: case PF_IR_CONV_TRANSPOSE: return infer_conv(&c);
    case PF_IR_BATCHNORM: return infer_batchnorm(&c);
    case PF_IR_NOT:
        if (x && x->dtype != PF_IR_BOOL) return bad_input(&c, 0, "Not needs bool");
        return infer_unary(&c, PF_IR_BOOL);
    case PF_IR_RELU: case PF_IR_SIGMOID: case PF_IR_TANH: case PF_IR_HARD_SIGMOID:
    case PF_IR_HARD_SWISH: case PF_IR_LEAKY_RELU: case PF_IR_ELU: case PF_IR_SELU:
    case PF_IR_SOFTPLUS: case PF_IR_SOFTSIGN: case PF_IR_EXP: case PF_IR_LOG: case PF_IR_SQRT:
    case PF_IR_RECIPROCAL: case PF_IR_FLOOR: case PF_IR_CEIL: case PF_IR_ROUND: case PF_IR_ERF:
    case PF_IR_SIN: case PF_IR_COS:
        if (x && !is_float(x->dtype)) return bad_input(&c, 0, "needs a float tensor");
        return infer_unary(&c, x ? x->dtype : PF_IR_F32);
    case PF_IR_CLIP: /* computed bounds do not change the shape */
    case PF_IR_ABS: case PF_IR_NEG: case PF_IR_SIGN: case PF_IR_IDENTITY:
        return infer_unary(&c, x ? x->dtype : PF_IR_F32);
    case PF_IR_CAST:
        if ((unsigned)c.n->attr.cast.to >= PF_IR_DTYPE_COUNT)
            return node_err(g, node, PF_ERR_FORMAT, "bad cast target %d", (int)c.n->attr.cast.to);
        return infer_unary(&c, c.n->attr.cast.to);
    case PF_IR_ADD: case PF_IR_SUB: case PF_IR_MUL: case PF_IR_DIV: case PF_IR_POW:
    case PF_IR_MAX: case PF_IR_MIN: case PF_IR_MOD: case PF_IR_EQUAL: case PF_IR_LESS:
    case PF_IR_GREATER: case PF_IR_LESS_OR_EQUAL: case PF_IR_GREATER_OR_EQUAL: case PF_IR_AND:
    case PF_IR_OR: case PF_IR_XOR:
        return infer_binary(&c);
    case PF_IR_PRELU: return infer_prelu(&c);
    case PF_IR_WHERE: return infer_where(&c);
    case PF_IR_SUM: case PF_IR_MEAN_N:
        for (int i = 1; i < c.n->n_in; i++)
            if (IN(&c, i) && x && IN(&c, i)->dtype != x->dtype)
                return bad_input(&c, i, "dtype differs from input 0's");
        return infer_elementwise(&c, x ? x->dtype : PF_IR_F32);
    case PF_IR_CONCAT: return infer_concat(&c);
    case PF_IR_RESHAPE: return infer_reshape(&c);
    case PF_IR_TRANSPOSE: return infer_transpose(&c);
    case PF_IR_SLICE: return infer_slice(&c);
    case PF_IR_PAD: return infer_pad(&c);
    case PF_IR_GATHER: return infer_gather(&c);
    case PF_IR_EXPAND: return infer_expand(&c);
    case PF_IR_TILE: return infer_tile(&c);
    case PF_IR_SHAPE: return infer_shape_op(&c);
    case PF_IR_CONSTANT_OF_SHAPE: return infer_constant_of_shape(&c);
    case PF_IR_SPLIT: return infer_split(&c);
    case PF_IR_DEPTH_TO_SPACE: case PF_IR_SPACE_TO_DEPTH: return infer_d2s(&c);
    case PF_IR_RESIZE: return infer_resize(&c);
    case PF_IR_MAXPOOL: case PF_IR_AVGPOOL: case PF_IR_GLOBAL_AVGPOOL: case PF_IR_GLOBAL_MAXPOOL:
        return infer_pool(&c);
    case PF_IR_REDUCE_MEAN: case PF_IR_REDUCE_SUM: case PF_IR_REDUCE_MAX: case PF_IR_REDUCE_MIN:
    case PF_IR_REDUCE_PROD: case PF_IR_REDUCE_L2: case PF_IR_REDUCE_SUM_SQUARE:
    case PF_IR_ARGMAX: case PF_IR_ARGMIN:
        return infer_reduce(&c);
    case PF_IR_SOFTMAX: case PF_IR_LOG_SOFTMAX: return infer_softmax(&c);
    case PF_IR_GEMM: return infer_gemm(&c);
    case PF_IR_MATMUL: return infer_matmul(&c);
    case PF_IR_QUANTIZE_LINEAR: case PF_IR_DEQUANTIZE_LINEAR: return infer_qdq(&c);
    case PF_IR_QLINEAR_CONV: case PF_IR_QLINEAR_MATMUL: case PF_IR_CONV_INTEGER:
    case PF_IR_MATMUL_INTEGER: case PF_IR_QCONV: case PF_IR_QMATMUL:
        return infer_quant_op(&c);
    case PF_IR_OP_INVALID: case PF_IR_OP_COUNT: break;
    }
    return node_err(g, node, PF_ERR_FORMAT, "bad op %d", (int)c.n->op);
}

pf_status pf_ir_infer_shapes(pf_ir_graph *g)
{
    if (!g) return pf_set_error(PF_ERR_INVALID, "pf_ir_infer_shapes: graph is NULL");
    for (int i = 0; i < g->n_inputs; i++) {
        const pf_ir_value *v = &g->values[g->inputs[i]];
        bool symbolic;
        if (too_large(v, &symbolic)) {
            char b[128];
            return pf_set_error(PF_ERR_FORMAT, "graph input '%s' %s is too large (over 2^40 bytes%s)",
                                v->name, fmt_dims(v, b, sizeof b),
                                symbolic ? ", the batch taken as 1" : "");
        }
    }
    for (int k = 0; k < g->n_nodes; k++) {
        pf_status st = pf_ir_infer_node(g, k);
        if (st != PF_OK) return st;
    }
    return PF_OK;
}
