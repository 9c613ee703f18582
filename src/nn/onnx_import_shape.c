/* ONNX import: shape and data-movement ops (see onnx_import.c for the
 * "must be constant" input convention). */
#include <stdint.h>
#include <string.h>

#include "../core/error.h"
#include "onnx_import_priv.h"

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

/* Up to `max` entries of an INTS attribute; *count = -1 when absent. */
static pf_status attr_ints(pf_oimp *c, const pf_onnx_node *n, const char *name, int64_t *out,
                           int max, int *count)
{
    const int64_t *v;
    size_t cnt;
    TRY(pf_onnx_attr_ints(c->m, n, name, &v, &cnt));
    *count = -1;
    if (!v) return PF_OK;
    if (cnt > (size_t)max)
        return pf_oimp_fail(c, n, PF_ERR_UNSUPPORTED, "attribute %s has %zu values (at most %d)",
                            name, cnt, max);
    for (size_t i = 0; i < cnt; i++) out[i] = v[i];
    *count = (int)cnt;
    return PF_OK;
}

/* Inputs 0..n_inputs-1 of n into in[], returning how many. */
static pf_status all_inputs(pf_oimp *c, const pf_onnx_node *n, int *in, int max, int *n_in)
{
    if (n->n_inputs > (size_t)max)
        return pf_oimp_fail(c, n, PF_ERR_FORMAT, "has %zu inputs (at most %d)", n->n_inputs, max);
    TRY(pf_oimp_in_req(c, n, 0, &in[0]));
    for (size_t k = 1; k < n->n_inputs; k++) TRY(pf_oimp_in(c, n, k, &in[k]));
    *n_in = (int)n->n_inputs;
    return PF_OK;
}

static pf_status convert_concat(pf_oimp *c, const pf_onnx_node *n)
{
    pf_ir_attr a = zeroed();
    int64_t axis;
    if (!pf_onnx_node_attr(n, "axis"))
        return pf_oimp_fail(c, n, PF_ERR_FORMAT, "attribute axis is missing");
    TRY(pf_onnx_attr_int(c->m, n, "axis", 0, &axis));
    a.axis.axis = axis;
    int cnt = (int)n->n_inputs, ids[1024];
    if (cnt < 1 || cnt > 1024)
        return pf_oimp_fail(c, n, PF_ERR_UNSUPPORTED, "%d inputs (1..1024 supported)", cnt);
    for (int k = 0; k < cnt; k++) TRY(pf_oimp_in_req(c, n, (size_t)k, &ids[k]));
    /* Concatenation is associative: long lists become a left-leaning chain. */
    int acc = ids[0], pos = 1, chunk[PF_IR_MAX_INPUTS];
    if (cnt <= PF_IR_MAX_INPUTS) return pf_oimp_emit_final(c, n, PF_IR_CONCAT, ids, cnt, &a);
    for (;;) {
        int m = 0;
        chunk[m++] = acc;
        while (m < PF_IR_MAX_INPUTS && pos < cnt) chunk[m++] = ids[pos++];
        if (pos == cnt) return pf_oimp_emit_final(c, n, PF_IR_CONCAT, chunk, m, &a);
        TRY(pf_oimp_emit_tmp(c, n, PF_IR_CONCAT, chunk, m, &a, &acc));
    }
}

static pf_status convert_reshape(pf_oimp *c, const pf_onnx_node *n)
{
    int in[2];
    pf_ir_attr a = zeroed();
    int64_t v;
    a.reshape.kind = PF_IR_RESHAPE_SHAPE;
    TRY(pf_onnx_attr_int(c->m, n, "allowzero", 0, &v));
    a.reshape.allowzero = v != 0;
    TRY(pf_oimp_in_req(c, n, 0, &in[0]));
    TRY(pf_oimp_in_req(c, n, 1, &in[1]));
    if (!pf_oimp_const(c, in[1])) return pf_oimp_emit_final(c, n, PF_IR_RESHAPE, in, 2, &a);
    TRY(pf_oimp_const_ints(c, n, in[1], "shape", a.reshape.shape, PF_IR_MAX_RANK, &a.reshape.n));
    return pf_oimp_emit_final(c, n, PF_IR_RESHAPE, in, 1, &a);
}

static pf_status convert_flatten(pf_oimp *c, const pf_onnx_node *n)
{
    int x;
    pf_ir_attr a = zeroed();
    a.reshape.kind = PF_IR_RESHAPE_FLATTEN;
    TRY(pf_oimp_in_req(c, n, 0, &x));
    TRY(pf_onnx_attr_int(c->m, n, "axis", 1, &a.reshape.axis));
    return pf_oimp_emit_final(c, n, PF_IR_RESHAPE, &x, 1, &a);
}

/* Squeeze/Unsqueeze: axes are an attribute before opset 13, an input after. */
static pf_status convert_squeeze(pf_oimp *c, const pf_onnx_node *n, bool unsqueeze)
{
    int in[2] = {-1, -1};
    pf_ir_attr a = zeroed();
    a.reshape.kind = unsqueeze ? PF_IR_RESHAPE_UNSQUEEZE : PF_IR_RESHAPE_SQUEEZE;
    TRY(pf_oimp_in_req(c, n, 0, &in[0]));
    if (n->opset < 13) {
        int cnt;
        TRY(attr_ints(c, n, "axes", a.reshape.axes, PF_IR_MAX_RANK, &cnt));
        if (cnt < 0 && unsqueeze)
            return pf_oimp_fail(c, n, PF_ERR_FORMAT, "attribute axes is missing");
        a.reshape.n = cnt < 0 ? 0 : cnt;
        return pf_oimp_emit_final(c, n, PF_IR_RESHAPE, in, 1, &a);
    }
    TRY(unsqueeze ? pf_oimp_in_req(c, n, 1, &in[1]) : pf_oimp_in(c, n, 1, &in[1]));
    if (in[1] >= 0 && !pf_oimp_const(c, in[1]))
        return pf_oimp_emit_final(c, n, PF_IR_RESHAPE, in, 2, &a);
    if (in[1] >= 0)
        TRY(pf_oimp_const_ints(c, n, in[1], "axes", a.reshape.axes, PF_IR_MAX_RANK, &a.reshape.n));
    if (unsqueeze && a.reshape.n == 0)
        return pf_oimp_fail(c, n, PF_ERR_FORMAT, "axes is empty");
    return pf_oimp_emit_final(c, n, PF_IR_RESHAPE, in, 1, &a);
}

static pf_status convert_transpose(pf_oimp *c, const pf_onnx_node *n)
{
    int x, cnt;
    pf_ir_attr a = zeroed();
    TRY(pf_oimp_in_req(c, n, 0, &x));
    TRY(attr_ints(c, n, "perm", a.transpose.perm, PF_IR_MAX_RANK, &cnt));
    /* n = 0: ONNX's default (reversed axes), resolved by shape inference. */
    a.transpose.n = cnt < 0 ? 0 : cnt;
    return pf_oimp_emit_final(c, n, PF_IR_TRANSPOSE, &x, 1, &a);
}

static pf_status convert_slice(pf_oimp *c, const pf_onnx_node *n)
{
    pf_ir_attr a = zeroed();
    pf_ir_slice_attr *s = &a.slice;
    int in[5] = {-1, -1, -1, -1, -1}, n_in = 1;
    int ns = -1, ne = -1, na = -1, nst = -1;
    if (n->opset < 10) {
        TRY(pf_oimp_in_req(c, n, 0, &in[0]));
        TRY(attr_ints(c, n, "starts", s->starts, PF_IR_MAX_RANK, &ns));
        TRY(attr_ints(c, n, "ends", s->ends, PF_IR_MAX_RANK, &ne));
        TRY(attr_ints(c, n, "axes", s->axes, PF_IR_MAX_RANK, &na));
        if (ns < 0 || ne < 0) return pf_oimp_fail(c, n, PF_ERR_FORMAT, "starts or ends is missing");
    } else {
        TRY(all_inputs(c, n, in, 5, &n_in));
        if (in[1] < 0 || in[2] < 0)
            return pf_oimp_fail(c, n, PF_ERR_FORMAT, "starts or ends is missing");
        if (!pf_oimp_inputs_const(c, n, 1, 4))
            return pf_oimp_emit_final(c, n, PF_IR_SLICE, in, n_in, &a);
        TRY(pf_oimp_const_ints(c, n, in[1], "starts", s->starts, PF_IR_MAX_RANK, &ns));
        TRY(pf_oimp_const_ints(c, n, in[2], "ends", s->ends, PF_IR_MAX_RANK, &ne));
        if (in[3] >= 0) TRY(pf_oimp_const_ints(c, n, in[3], "axes", s->axes, PF_IR_MAX_RANK, &na));
        if (in[4] >= 0) TRY(pf_oimp_const_ints(c, n, in[4], "steps", s->steps, PF_IR_MAX_RANK, &nst));
    }
    if (ne != ns || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
        return pf_oimp_fail(c, n, PF_ERR_FORMAT, "starts (%d), ends (%d), axes (%d) and steps "
                            "(%d) differ in length", ns, ne, na, nst);
    s->n = ns;
    for (int i = 0; i < ns; i++) {
        if (na < 0) s->axes[i] = i;
        if (nst < 0) s->steps[i] = 1;
        if (s->steps[i] == 0) return pf_oimp_fail(c, n, PF_ERR_FORMAT, "step %d is 0", i);
    }
    return pf_oimp_emit_final(c, n, PF_IR_SLICE, in, 1, &a);
}

static pf_status convert_pad(pf_oimp *c, const pf_onnx_node *n)
{
    pf_ir_attr a = zeroed();
    pf_ir_pad_attr *p = &a.pad;
    int in[4] = {-1, -1, -1, -1}, n_in = 1;
    int64_t pads[2 * PF_IR_MAX_RANK];
    int np = -1;
    const char *mode;
    TRY(pf_onnx_attr_string(c->m, n, "mode", "constant", &mode));
    if (!strcmp(mode, "constant")) p->mode = PF_IR_PADMODE_CONSTANT;
    else if (!strcmp(mode, "reflect")) p->mode = PF_IR_PADMODE_REFLECT;
    else if (!strcmp(mode, "edge")) p->mode = PF_IR_PADMODE_EDGE;
    else return pf_oimp_unsupported_attr(c, n, "mode", mode);
    if (n->opset < 11) {
        float v;
        TRY(pf_oimp_in_req(c, n, 0, &in[0]));
        TRY(attr_ints(c, n, "pads", pads, 2 * PF_IR_MAX_RANK, &np));
        TRY(pf_onnx_attr_float(c->m, n, "value", 0.0f, &v));
        p->value = v;
        if (np < 0) return pf_oimp_fail(c, n, PF_ERR_FORMAT, "attribute pads is missing");
    } else {
        TRY(all_inputs(c, n, in, 3, &n_in));
        if (in[1] < 0) return pf_oimp_fail(c, n, PF_ERR_FORMAT, "pads is missing");
        if (!pf_oimp_inputs_const(c, n, 1, 2))
            return pf_oimp_emit_final(c, n, PF_IR_PAD, in, n_in, &a);
        TRY(pf_oimp_const_ints(c, n, in[1], "pads", pads, 2 * PF_IR_MAX_RANK, &np));
        if (in[2] >= 0) {
            int cnt;
            TRY(pf_oimp_const_doubles(c, n, in[2], "constant_value", &p->value, 1, &cnt));
            if (cnt != 1) return pf_oimp_fail(c, n, PF_ERR_FORMAT, "constant_value is empty");
        }
    }
    if (np % 2)
        return pf_oimp_fail(c, n, PF_ERR_FORMAT, "pads has an odd number of values (%d)", np);
    p->n = np / 2;
    for (int i = 0; i < p->n; i++) {
        p->begin[i] = pads[i];
        p->end[i] = pads[p->n + i];
    }
    return pf_oimp_emit_final(c, n, PF_IR_PAD, in, 1, &a);
}

/* Tile/Expand: one "must be constant" integer list at input 1. Expand's
 * target shape has no attr of its own: it travels in attr.reshape.shape. */
static pf_status convert_tile_expand(pf_oimp *c, const pf_onnx_node *n, pf_ir_op op)
{
    int in[2];
    pf_ir_attr a = zeroed();
    TRY(pf_oimp_in_req(c, n, 0, &in[0]));
    TRY(pf_oimp_in_req(c, n, 1, &in[1]));
    if (!pf_oimp_const(c, in[1])) return pf_oimp_emit_final(c, n, op, in, 2, &a);
    if (op == PF_IR_TILE)
        TRY(pf_oimp_const_ints(c, n, in[1], "repeats", a.tile.repeats, PF_IR_MAX_RANK, &a.tile.n));
    else
        TRY(pf_oimp_const_ints(c, n, in[1], "shape", a.reshape.shape, PF_IR_MAX_RANK, &a.reshape.n));
    return pf_oimp_emit_final(c, n, op, in, 1, &a);
}

static pf_status convert_split(pf_oimp *c, const pf_onnx_node *n)
{
    int in[2] = {-1, -1}, cnt = -1;
    pf_ir_attr a = zeroed();
    TRY(pf_oimp_in_req(c, n, 0, &in[0]));
    TRY(pf_onnx_attr_int(c->m, n, "axis", 0, &a.split.axis));
    int n_out = (int)n->n_outputs;
    if (n_out < 1 || n_out > PF_IR_MAX_OUTPUTS)
        return pf_oimp_fail(c, n, PF_ERR_UNSUPPORTED, "%d outputs (1..%d supported)", n_out,
                            PF_IR_MAX_OUTPUTS);
    if (n->opset < 13) {
        TRY(attr_ints(c, n, "split", a.split.sizes, PF_IR_MAX_OUTPUTS, &cnt));
    } else {
        TRY(pf_oimp_in(c, n, 1, &in[1]));
        if (in[1] >= 0 && !pf_oimp_const(c, in[1]))
            return pf_oimp_emit(c, n, PF_IR_SPLIT, in, 2, n_out, &a, PF_IR_F32, NULL);
        if (in[1] >= 0)
            TRY(pf_oimp_const_ints(c, n, in[1], "split", a.split.sizes, PF_IR_MAX_OUTPUTS, &cnt));
    }
    if (cnt >= 0 && cnt != n_out)
        return pf_oimp_fail(c, n, PF_ERR_FORMAT, "split has %d sizes for %d outputs", cnt, n_out);
    /* n = 0: equal parts, resolved by shape inference. */
    a.split.n = cnt < 0 ? 0 : cnt;
    return pf_oimp_emit(c, n, PF_IR_SPLIT, in, 1, n_out, &a, PF_IR_F32, NULL);
}

static pf_status convert_d2s(pf_oimp *c, const pf_onnx_node *n, pf_ir_op op)
{
    int x;
    pf_ir_attr a = zeroed();
    TRY(pf_oimp_in_req(c, n, 0, &x));
    TRY(pf_onnx_attr_int(c->m, n, "blocksize", 0, &a.d2s.blocksize));
    if (a.d2s.blocksize < 1)
        return pf_oimp_fail(c, n, PF_ERR_FORMAT, "blocksize %lld < 1", (long long)a.d2s.blocksize);
    if (op == PF_IR_DEPTH_TO_SPACE) {
        const char *mode;
        TRY(pf_onnx_attr_string(c->m, n, "mode", "DCR", &mode));
        if (!strcmp(mode, "CRD")) a.d2s.crd = true;
        else if (strcmp(mode, "DCR") != 0) return pf_oimp_unsupported_attr(c, n, "mode", mode);
    }
    return pf_oimp_emit_final(c, n, op, &x, 1, &a);
}

static pf_status convert_shape_op(pf_oimp *c, const pf_onnx_node *n)
{
    int x;
    pf_ir_attr a = zeroed();
    TRY(pf_oimp_in_req(c, n, 0, &x));
    a.slice.n = 1;
    TRY(pf_onnx_attr_int(c->m, n, "start", 0, &a.slice.starts[0]));
    TRY(pf_onnx_attr_int(c->m, n, "end", INT64_MAX, &a.slice.ends[0]));
    a.slice.steps[0] = 1;
    return pf_oimp_emit(c, n, PF_IR_SHAPE, &x, 1, 1, &a, PF_IR_I64, NULL);
}

static pf_status convert_constant_of_shape(pf_oimp *c, const pf_onnx_node *n)
{
    int x;
    pf_ir_attr a = zeroed();
    pf_ir_dtype dt = PF_IR_F32;
    const pf_onnx_tensor *t;
    TRY(pf_oimp_in_req(c, n, 0, &x));
    TRY(pf_onnx_attr_tensor(c->m, n, "value", &t));
    if (t) {
        if (t->numel != 1)
            return pf_oimp_fail(c, n, PF_ERR_FORMAT, "value has %lld elements, expected 1",
                                (long long)t->numel);
        if (!pf_oimp_dtype(t->dtype, &dt))
            return pf_oimp_unsupported_attr(c, n, "value", pf_onnx_dtype_name(t->dtype));
        const void *p = t->data;
        switch (dt) {
        case PF_IR_F32: { float v; memcpy(&v, p, 4); a.fill.value = v; break; }
        case PF_IR_F64: memcpy(&a.fill.value, p, 8); break;
        case PF_IR_I64: { int64_t v; memcpy(&v, p, 8); a.fill.value = (double)v; break; }
        case PF_IR_I32: { int32_t v; memcpy(&v, p, 4); a.fill.value = v; break; }
        case PF_IR_U8: case PF_IR_BOOL: a.fill.value = *(const uint8_t *)p; break;
        case PF_IR_I8: a.fill.value = *(const int8_t *)p; break;
        default: return pf_oimp_unsupported_attr(c, n, "value", pf_onnx_dtype_name(t->dtype));
        }
    }
    return pf_oimp_emit(c, n, PF_IR_CONSTANT_OF_SHAPE, &x, 1, 1, &a, dt, NULL);
}

pf_status pf_oimp_convert_shape(pf_oimp *c, const pf_onnx_node *n, bool *handled)
{
    const char *t = n->op_type;
    *handled = true;
    if (!strcmp(t, "Concat")) return convert_concat(c, n);
    if (!strcmp(t, "Reshape")) return convert_reshape(c, n);
    if (!strcmp(t, "Flatten")) return convert_flatten(c, n);
    if (!strcmp(t, "Squeeze")) return convert_squeeze(c, n, false);
    if (!strcmp(t, "Unsqueeze")) return convert_squeeze(c, n, true);
    if (!strcmp(t, "Transpose")) return convert_transpose(c, n);
    if (!strcmp(t, "Slice")) return convert_slice(c, n);
    if (!strcmp(t, "Pad")) return convert_pad(c, n);
    if (!strcmp(t, "Tile")) return convert_tile_expand(c, n, PF_IR_TILE);
    if (!strcmp(t, "Expand")) return convert_tile_expand(c, n, PF_IR_EXPAND);
    if (!strcmp(t, "Split")) return convert_split(c, n);
    if (!strcmp(t, "DepthToSpace")) return convert_d2s(c, n, PF_IR_DEPTH_TO_SPACE);
    if (!strcmp(t, "SpaceToDepth")) return convert_d2s(c, n, PF_IR_SPACE_TO_DEPTH);
    if (!strcmp(t, "Shape")) return convert_shape_op(c, n);
    if (!strcmp(t, "ConstantOfShape")) return convert_constant_of_shape(c, n);
    if (!strcmp(t, "Gather")) {
        int in[2];
        pf_ir_attr a = zeroed();
        TRY(pf_oimp_in_req(c, n, 0, &in[0]));
        TRY(pf_oimp_in_req(c, n, 1, &in[1]));
        TRY(pf_onnx_attr_int(c->m, n, "axis", 0, &a.axis.axis));
        return pf_oimp_emit_final(c, n, PF_IR_GATHER, in, 2, &a);
    }
    if (!strcmp(t, "Resize")) return pf_oimp_convert_resize(c, n, false);
    if (!strcmp(t, "Upsample")) return pf_oimp_convert_resize(c, n, true);
    *handled = false;
    return PF_OK;
}
