/* ONNX model view (onnx_reader.h) -> pf_ir_graph.
 *
 * Values keep their ONNX names. Initializers and Constant nodes become IR
 * constants with their dtype unchanged (FLOAT16/DOUBLE stay F16/F64: a later
 * pass decides about float math); a graph input with an initializer of the
 * same name is that constant, not an input.
 *
 * Inputs that the IR wants constant (Reshape shape, Slice starts/ends/axes/
 * steps, Pad pads/constant_value, Resize scales/sizes, Upsample scales, Clip
 * min/max, Tile repeats, Expand shape, Squeeze/Unsqueeze axes, ReduceSum axes,
 * Split sizes) follow one rule per node, all or nothing:
 *   - when every such input of the node is a constant (or absent) at import,
 *     the values go into the node's attr and the node's inputs stop after its
 *     data inputs (X, or X and roi-free Resize: just X);
 *   - otherwise the node keeps all its ONNX inputs at their ONNX positions
 *     (constants included, omitted optional ones as -1), the attr holds only
 *     what came from ONNX attributes, and fold.c / pf_ir_specialize resolve
 *     the inputs once shapes are known (Resize's roi is always -1).
 * Where the IR attr has no field of its own: Resize sizes set the output
 * value's dims (ndim = their count); Expand's shape goes to attr.reshape
 * (kind SHAPE); Split without sizes has split.n = 0 (equal parts); Transpose
 * without perm has transpose.n = 0 (reversed axes); shape inference resolves
 * all of these. Computed Resize/Upsample scales or sizes use Resize-11's
 * input positions (X, -1, scales, sizes) whatever the source version.
 *
 * Mapping notes: Dropout and Identity become IDENTITY (Dropout's mask output,
 * MaxPool's Indices and BatchNormalization's training outputs are not
 * produced: a node consuming one is refused); Flatten/Squeeze/Unsqueeze become
 * RESHAPE with the matching kind; Upsample becomes RESIZE (asymmetric, nearest
 * floor as Upsample defines it); Max/Min with more than two inputs become
 * chains, Concat/Sum with more than PF_IR_MAX_INPUTS inputs become chains;
 * Mod's fmod goes to attr.unary.alpha (1 = C fmod, 0 = Python-style). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "onnx_import_priv.h"

/* ---- name map ------------------------------------------------------------- */

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static pf_status map_grow(pf_oimp *c)
{
    size_t ncap = c->cap ? c->cap * 2 : 256;
    const char **keys = calloc(ncap, sizeof *keys);
    int *ids = calloc(ncap, sizeof *ids);
    if (!keys || !ids) {
        free(keys);
        free(ids);
        return pf_set_error(PF_ERR_NOMEM, "%s: out of memory for the value map", c->m->name);
    }
    for (size_t i = 0; i < c->cap; i++) {
        if (!c->keys[i]) continue;
        size_t j = (size_t)hash_name(c->keys[i]) & (ncap - 1);
        while (keys[j]) j = (j + 1) & (ncap - 1);
        keys[j] = c->keys[i];
        ids[j] = c->ids[i];
    }
    free(c->keys);
    free(c->ids);
    c->keys = keys;
    c->ids = ids;
    c->cap = ncap;
    return PF_OK;
}

pf_status pf_oimp_bind(pf_oimp *c, const char *name, int id)
{
    if ((c->count + 1) * 2 > c->cap) {
        pf_status st = map_grow(c);
        if (st != PF_OK) return st;
    }
    size_t j = (size_t)hash_name(name) & (c->cap - 1);
    while (c->keys[j] && strcmp(c->keys[j], name) != 0) j = (j + 1) & (c->cap - 1);
    if (!c->keys[j]) c->count++;
    c->keys[j] = name;
    c->ids[j] = id;
    return PF_OK;
}

/* The bound id, or -3 when the name is unknown. */
static int map_find(const pf_oimp *c, const char *name)
{
    if (!c->cap) return -3;
    size_t j = (size_t)hash_name(name) & (c->cap - 1);
    while (c->keys[j]) {
        if (!strcmp(c->keys[j], name)) return c->ids[j];
        j = (j + 1) & (c->cap - 1);
    }
    return -3;
}

/* ---- messages ----------------------------------------------------------- */

pf_status pf_oimp_fail(const pf_oimp *c, const pf_onnx_node *n, pf_status st, const char *fmt,
                       ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pf_set_error(st, "%s: node %d '%s' (%s): %s", c->m->name, n->index, n->name,
                        n->op_type, msg);
}

pf_status pf_oimp_unsupported_attr(const pf_oimp *c, const pf_onnx_node *n, const char *attr,
                                   const char *value)
{
    return pf_oimp_fail(c, n, PF_ERR_UNSUPPORTED, "attribute %s=%s is not supported", attr,
                        value);
}

/* ---- inputs and constants ------------------------------------------------ */

pf_status pf_oimp_in(pf_oimp *c, const pf_onnx_node *n, size_t k, int *id)
{
    *id = -1;
    if (k >= n->n_inputs || !n->inputs[k][0]) return PF_OK;
    int v = map_find(c, n->inputs[k]);
    if (v == PF_OIMP_DROPPED)
        return pf_oimp_fail(c, n, PF_ERR_UNSUPPORTED,
                            "input %zu '%s' is an output pixflow does not compute (Dropout mask, "
                            "MaxPool Indices or BatchNormalization training statistics)",
                            k, n->inputs[k]);
    if (v < 0)
        return pf_oimp_fail(c, n, PF_ERR_FORMAT, "input %zu '%s' is not defined before the node",
                            k, n->inputs[k]);
    *id = v;
    return PF_OK;
}

pf_status pf_oimp_in_req(pf_oimp *c, const pf_onnx_node *n, size_t k, int *id)
{
    pf_status st = pf_oimp_in(c, n, k, id);
    if (st == PF_OK && *id < 0)
        return pf_oimp_fail(c, n, PF_ERR_FORMAT, "required input %zu is missing", k);
    return st;
}

const pf_ir_value *pf_oimp_const(const pf_oimp *c, int id)
{
    if (id < 0) return NULL;
    const pf_ir_value *v = &c->g->values[id];
    /* An empty constant has no data but is still a constant: nbytes 0, ndim set. */
    if (v->data || (v->producer < 0 && !v->is_input && v->ndim >= 0 && v->nbytes == 0))
        return v;
    return NULL;
}

bool pf_oimp_inputs_const(pf_oimp *c, const pf_onnx_node *n, size_t from, size_t to)
{
    for (size_t k = from; k <= to && k < n->n_inputs; k++) {
        int id;
        if (pf_oimp_in(c, n, k, &id) != PF_OK) return false;
        if (id >= 0 && !pf_oimp_const(c, id)) return false;
    }
    return true;
}

static pf_status const_numel(const pf_oimp *c, const pf_onnx_node *n, const pf_ir_value *v,
                             const char *what, int max, int *count)
{
    int64_t numel = pf_ir_value_numel(v);
    if (numel < 0 || numel > max)
        return pf_oimp_fail(c, n, PF_ERR_UNSUPPORTED,
                            "%s '%s' has %lld elements (at most %d are supported)", what, v->name,
                            (long long)numel, max);
    *count = (int)numel;
    return PF_OK;
}

pf_status pf_oimp_const_ints(const pf_oimp *c, const pf_onnx_node *n, int id, const char *what,
                             int64_t *out, int max, int *count)
{
    const pf_ir_value *v = pf_oimp_const(c, id);
    if (!v) return pf_oimp_fail(c, n, PF_ERR_INTERNAL, "%s is not a constant", what);
    pf_status st = const_numel(c, n, v, what, max, count);
    if (st != PF_OK) return st;
    for (int i = 0; i < *count; i++) {
        switch (v->dtype) {
        case PF_IR_I64: memcpy(&out[i], (const char *)v->data + 8 * (size_t)i, 8); break;
        case PF_IR_I32: {
            int32_t x;
            memcpy(&x, (const char *)v->data + 4 * (size_t)i, 4);
            out[i] = x;
            break;
        }
        case PF_IR_U8: case PF_IR_BOOL: out[i] = ((const uint8_t *)v->data)[i]; break;
        case PF_IR_I8: out[i] = ((const int8_t *)v->data)[i]; break;
        default:
            return pf_oimp_fail(c, n, PF_ERR_FORMAT, "%s '%s' has type %s, expected an integer",
                                what, v->name, pf_ir_dtype_name(v->dtype));
        }
    }
    return PF_OK;
}

static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 0x1f, f = h & 0x3ff;
    double s = (h & 0x8000) ? -1.0 : 1.0, r;
    if (e == 0) r = ldexp((double)f, -24);
    else if (e == 31) r = f ? NAN : INFINITY;
    else r = ldexp((double)(f | 0x400), e - 25);
    return s * r;
}

pf_status pf_oimp_const_doubles(const pf_oimp *c, const pf_onnx_node *n, int id,
                                const char *what, double *out, int max, int *count)
{
    const pf_ir_value *v = pf_oimp_const(c, id);
    if (!v) return pf_oimp_fail(c, n, PF_ERR_INTERNAL, "%s is not a constant", what);
    if (v->dtype != PF_IR_F32 && v->dtype != PF_IR_F64 && v->dtype != PF_IR_F16) {
        int64_t tmp[PF_IR_MAX_RANK * 2];
        pf_status st = pf_oimp_const_ints(c, n, id, what, tmp,
                                          max < PF_IR_MAX_RANK * 2 ? max : PF_IR_MAX_RANK * 2,
                                          count);
        if (st != PF_OK) return st;
        for (int i = 0; i < *count; i++) out[i] = (double)tmp[i];
        return PF_OK;
    }
    pf_status st = const_numel(c, n, v, what, max, count);
    if (st != PF_OK) return st;
    for (int i = 0; i < *count; i++) {
        const char *p = (const char *)v->data;
        if (v->dtype == PF_IR_F32) {
            float x;
            memcpy(&x, p + 4 * (size_t)i, 4);
            out[i] = x;
        } else if (v->dtype == PF_IR_F64) {
            memcpy(&out[i], p + 8 * (size_t)i, 8);
        } else {
            uint16_t h;
            memcpy(&h, p + 2 * (size_t)i, 2);
            out[i] = half_to_double(h);
        }
    }
    return PF_OK;
}

bool pf_oimp_dtype(int t, pf_ir_dtype *out)
{
    switch (t) {
    case PF_ONNX_FLOAT: *out = PF_IR_F32; return true;
    case PF_ONNX_FLOAT16: *out = PF_IR_F16; return true;
    case PF_ONNX_DOUBLE: *out = PF_IR_F64; return true;
    case PF_ONNX_INT64: *out = PF_IR_I64; return true;
    case PF_ONNX_INT32: *out = PF_IR_I32; return true;
    case PF_ONNX_UINT8: *out = PF_IR_U8; return true;
    case PF_ONNX_INT8: *out = PF_IR_I8; return true;
    case PF_ONNX_BOOL: *out = PF_IR_BOOL; return true;
    default: return false;
    }
}

/* ---- emitting nodes ---------------------------------------------------------- */

static pf_status fresh_value(pf_oimp *c, const char *prefix, pf_ir_dtype dt, int *id)
{
    const char *name = pf_ir_unique_name(c->g, prefix);
    if (!name) return pf_set_error(PF_ERR_NOMEM, "%s: out of memory for a value name", c->m->name);
    return pf_ir_add_value(c->g, name, dt, -1, NULL, id);
}

pf_status pf_oimp_emit(pf_oimp *c, const pf_onnx_node *n, pf_ir_op op, const int *in, int n_in,
                       int n_out, const pf_ir_attr *attr, pf_ir_dtype out_dtype, int *node_id)
{
    int out[PF_IR_MAX_OUTPUTS];
    pf_status st;
    if (n_in > PF_IR_MAX_INPUTS || n_out > PF_IR_MAX_OUTPUTS || n_out < 1)
        return pf_oimp_fail(c, n, PF_ERR_UNSUPPORTED, "%d inputs / %d outputs exceed the IR's %d / %d",
                            n_in, n_out, PF_IR_MAX_INPUTS, PF_IR_MAX_OUTPUTS);
    for (int k = 0; k < n_out; k++) {
        const char *name = (size_t)k < n->n_outputs ? n->outputs[k] : "";
        if (name[0]) {
            if (map_find(c, name) != -3)
                return pf_oimp_fail(c, n, PF_ERR_FORMAT, "output '%s' is defined twice", name);
            st = pf_ir_add_value(c->g, name, out_dtype, -1, NULL, &out[k]);
            if (st == PF_OK) st = pf_oimp_bind(c, name, out[k]);
        } else {
            st = fresh_value(c, "unused", out_dtype, &out[k]);
        }
        if (st != PF_OK) return st;
    }
    for (size_t k = (size_t)n_out; k < n->n_outputs; k++)
        if (n->outputs[k][0] && (st = pf_oimp_bind(c, n->outputs[k], PF_OIMP_DROPPED)) != PF_OK)
            return st;
    return pf_ir_add_node(c->g, op, n->name, n->op_type, in, n_in, out, n_out, attr, node_id);
}

pf_status pf_oimp_emit_tmp(pf_oimp *c, const pf_onnx_node *n, pf_ir_op op, const int *in,
                           int n_in, const pf_ir_attr *attr, int *out_value)
{
    char prefix[160];
    snprintf(prefix, sizeof prefix, "%s_part", n->n_outputs && n->outputs[0][0] ? n->outputs[0] : "tmp");
    pf_status st = fresh_value(c, prefix, PF_IR_F32, out_value);
    if (st != PF_OK) return st;
    return pf_ir_add_node(c->g, op, n->name, n->op_type, in, n_in, out_value, 1, attr, NULL);
}

pf_status pf_oimp_emit_final(pf_oimp *c, const pf_onnx_node *n, pf_ir_op op, const int *in,
                             int n_in, const pf_ir_attr *attr)
{
    return pf_oimp_emit(c, n, op, in, n_in, 1, attr, PF_IR_F32, NULL);
}

/* ---- graph inputs, constants ------------------------------------------------- */

static pf_status add_tensor_const(pf_oimp *c, const char *name, const pf_onnx_tensor *t, int *id)
{
    pf_ir_dtype dt;
    if (!pf_oimp_dtype(t->dtype, &dt))
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: constant '%s' has type %s, which pixflow "
                            "does not support", c->m->name, name, pf_onnx_dtype_name(t->dtype));
    if (t->ndim > PF_IR_MAX_RANK)
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: constant '%s' has rank %d (at most %d)",
                            c->m->name, name, t->ndim, PF_IR_MAX_RANK);
    pf_status st = pf_ir_add_const(c->g, name, dt, t->ndim, t->dims, t->data, t->nbytes, id);
    if (st == PF_OK) st = pf_oimp_bind(c, name, *id);
    return st;
}

static pf_status add_graph_input(pf_oimp *c, const pf_onnx_value_info *vi)
{
    pf_ir_dtype dt;
    int64_t dims[PF_IR_MAX_RANK];
    if (!pf_oimp_dtype(vi->dtype, &dt))
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: graph input '%s' has type %s, which pixflow "
                            "does not support", c->m->name, vi->name, pf_onnx_dtype_name(vi->dtype));
    if (vi->ndim < 0)
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: graph input '%s' has no shape; pixflow needs "
                            "its rank and dimensions", c->m->name, vi->name);
    if (vi->ndim > PF_IR_MAX_RANK)
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: graph input '%s' has rank %d (at most %d)",
                            c->m->name, vi->name, vi->ndim, PF_IR_MAX_RANK);
    for (int d = 0; d < vi->ndim; d++) {
        const pf_onnx_dim *dm = &vi->dims[d];
        if (dm->value >= 0) {
            dims[d] = dm->value;
            continue;
        }
        const char *sym = dm->param ? dm->param : "?";
        if (d != 0)
            return pf_set_error(PF_ERR_UNSUPPORTED, "%s: graph input '%s': dimension %d is "
                                "symbolic ('%s'); only the first (batch) dimension may be",
                                c->m->name, vi->name, d, sym);
        if (c->g->batch_symbol && strcmp(c->g->batch_symbol, sym) != 0)
            return pf_set_error(PF_ERR_UNSUPPORTED, "%s: graph input '%s': batch dimension '%s' "
                                "differs from '%s' of an earlier input (one batch size per model)",
                                c->m->name, vi->name, sym, c->g->batch_symbol);
        if (!c->g->batch_symbol && !(c->g->batch_symbol = strdup(sym)))
            return pf_set_error(PF_ERR_NOMEM, "%s: out of memory", c->m->name);
        dims[d] = PF_IR_DIM_BATCH;
    }
    int id;
    pf_status st = pf_ir_add_value(c->g, vi->name, dt, vi->ndim, dims, &id);
    if (st == PF_OK) st = pf_oimp_bind(c, vi->name, id);
    if (st == PF_OK) st = pf_ir_mark_input(c->g, id);
    return st;
}

/* Constant: the node's single output becomes a constant value. */
static pf_status convert_constant(pf_oimp *c, const pf_onnx_node *n)
{
    if (n->n_outputs < 1 || !n->outputs[0][0])
        return pf_oimp_fail(c, n, PF_ERR_FORMAT, "has no output");
    const char *out = n->outputs[0];
    if (map_find(c, out) != -3)
        return pf_oimp_fail(c, n, PF_ERR_FORMAT, "output '%s' is defined twice", out);
    if (n->n_attrs != 1)
        return pf_oimp_fail(c, n, PF_ERR_FORMAT, "needs exactly one value attribute (has %zu)",
                            n->n_attrs);
    const pf_onnx_attr *a = &n->attrs[0];
    int id;
    pf_status st;
    if (!strcmp(a->name, "value") && a->type == PF_ONNX_ATTR_TENSOR) {
        return add_tensor_const(c, out, a->t, &id);
    }
    if (!strcmp(a->name, "value_float") && a->type == PF_ONNX_ATTR_FLOAT) {
        st = pf_ir_add_const(c->g, out, PF_IR_F32, 0, NULL, &a->f, sizeof a->f, &id);
    } else if (!strcmp(a->name, "value_int") && a->type == PF_ONNX_ATTR_INT) {
        st = pf_ir_add_const(c->g, out, PF_IR_I64, 0, NULL, &a->i, sizeof a->i, &id);
    } else if (!strcmp(a->name, "value_floats") && a->type == PF_ONNX_ATTR_FLOATS) {
        int64_t d = (int64_t)a->n;
        st = pf_ir_add_const(c->g, out, PF_IR_F32, 1, &d, a->floats, a->n * sizeof(float), &id);
    } else if (!strcmp(a->name, "value_ints") && a->type == PF_ONNX_ATTR_INTS) {
        int64_t d = (int64_t)a->n;
        st = pf_ir_add_const(c->g, out, PF_IR_I64, 1, &d, a->ints, a->n * sizeof(int64_t), &id);
    } else {
        return pf_oimp_unsupported_attr(c, n, a->name, pf_onnx_attr_type_name(a->type));
    }
    if (st == PF_OK) st = pf_oimp_bind(c, out, id);
    return st;
}

static pf_status convert_node(pf_oimp *c, const pf_onnx_node *n)
{
    if (n->domain[0])
        return pf_oimp_fail(c, n, PF_ERR_UNSUPPORTED, "operator domain '%s' is not supported "
                            "(only the default ONNX domain)", n->domain);
    if (!strcmp(n->op_type, "Constant")) return convert_constant(c, n);
    bool handled = false;
    pf_status st = pf_oimp_convert_nn(c, n, &handled);
    if (handled) return st;
    st = pf_oimp_convert_elementwise(c, n, &handled);
    if (handled) return st;
    st = pf_oimp_convert_shape(c, n, &handled);
    if (handled) return st;
    st = pf_oimp_convert_quant(c, n, &handled);
    if (handled) return st;
    return pf_oimp_fail(c, n, PF_ERR_UNSUPPORTED, "operator %s (opset %lld) is not supported",
                        n->op_type, (long long)n->opset);
}

static pf_status import_graph(pf_oimp *c)
{
    const pf_onnx_model *m = c->m;
    pf_status st;
    int id;
    for (size_t i = 0; i < m->n_initializers; i++)
        if ((st = add_tensor_const(c, m->initializers[i].name, &m->initializers[i], &id)) != PF_OK)
            return st;
    for (size_t i = 0; i < m->n_inputs; i++) {
        if (m->inputs[i].is_initializer || map_find(c, m->inputs[i].name) >= 0) continue;
        if ((st = add_graph_input(c, &m->inputs[i])) != PF_OK) return st;
    }
    for (size_t i = 0; i < m->n_nodes; i++)
        if ((st = convert_node(c, &m->nodes[i])) != PF_OK) return st;
    for (size_t i = 0; i < m->n_outputs; i++) {
        int v = map_find(c, m->outputs[i].name);
        if (v < 0)
            return pf_set_error(PF_ERR_UNSUPPORTED, "%s: graph output '%s' is %s", m->name,
                                m->outputs[i].name,
                                v == PF_OIMP_DROPPED ? "an output pixflow does not compute"
                                                     : "produced by no node");
        if ((st = pf_ir_mark_output(c->g, v)) != PF_OK) return st;
    }
    return pf_ir_infer_shapes(c->g);
}

pf_status pf_ir_from_onnx(const pf_onnx_model *m, pf_ir_graph **out)
{
    if (!out) return pf_set_error(PF_ERR_INVALID, "pf_ir_from_onnx: out is NULL");
    *out = NULL;
    if (!m) return pf_set_error(PF_ERR_INVALID, "pf_ir_from_onnx: model is NULL");
    if (m->opset < PF_ONNX_OPSET_MIN || m->opset > PF_ONNX_OPSET_MAX)
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: default-domain opset %lld is outside %d..%d",
                            m->name, (long long)m->opset, PF_ONNX_OPSET_MIN, PF_ONNX_OPSET_MAX);
    pf_oimp c;
    memset(&c, 0, sizeof c);
    c.m = m;
    pf_status st = pf_ir_graph_create(m->name, &c.g);
    if (st != PF_OK) return st;
    c.g->opset = (int)m->opset;
    if (!c.g->source_format && !(c.g->source_format = strdup("onnx")))
        st = pf_set_error(PF_ERR_NOMEM, "%s: out of memory", m->name);
    if (st == PF_OK) st = import_graph(&c);
    free(c.keys);
    free(c.ids);
    if (st != PF_OK) {
        pf_ir_graph_destroy(&c.g);
        return st;
    }
    *out = c.g;
    return PF_OK;
}
