/* TFLite model view (tflite_reader.h) -> pf_ir_graph, subgraph 0.
 *
 * The file is NHWC; the IR is ONNX (NCHW). Every rank-4 runtime tensor is
 * carried as NCHW inside the graph (see tflite_import_priv.h): rank-4 graph
 * inputs keep their file name and NHWC shape and feed a TRANSPOSE to NCHW;
 * rank-4 graph outputs are a TRANSPOSE back to NHWC under the file's name.
 * Constants stay host data until an operator asks for them, so weights are
 * permuted once into ONNX layouts and FLOAT16 weights behind a DEQUANTIZE are
 * converted to F32 at import (the DEQUANTIZE itself disappears). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "tflite_import_priv.h"

const int64_t pf_timp_to_nchw[4] = {0, 3, 1, 2};
const int64_t pf_timp_to_nhwc[4] = {0, 2, 3, 1};

pf_status pf_timp_fail(const pf_timp *c, pf_status st, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->op_index < 0) return pf_set_error(st, "%s: %s", c->m->name, msg);
    const pf_tfl_operator *op = &c->sg->operators[c->op_index];
    const char *opname = op->custom_code ? op->custom_code : pf_tfl_builtin_name(op->builtin);
    const char *out = op->n_outputs > 0 && op->outputs[0] >= 0
                          ? c->sg->tensors[op->outputs[0]].name : "";
    return pf_set_error(st, "%s: operator %d (%s) -> '%s': %s", c->m->name, c->op_index, opname,
                        out, msg);
}

bool pf_timp_dtype(int t, pf_ir_dtype *out)
{
    switch (t) {
    case PF_TFL_FLOAT32: *out = PF_IR_F32; return true;
    case PF_TFL_FLOAT16: *out = PF_IR_F16; return true;
    case PF_TFL_FLOAT64: *out = PF_IR_F64; return true;
    case PF_TFL_INT32: *out = PF_IR_I32; return true;
    case PF_TFL_INT64: *out = PF_IR_I64; return true;
    case PF_TFL_UINT8: *out = PF_IR_U8; return true;
    case PF_TFL_INT8: *out = PF_IR_I8; return true;
    case PF_TFL_BOOL: *out = PF_IR_BOOL; return true;
    default: return false;
    }
}

bool pf_timp_batched(const pf_timp *c, int t)
{
    const pf_tfl_tensor *tt = &c->sg->tensors[t];
    if (!c->g->batch_symbol || tt->ndim < 1) return false;
    if (tt->shape_signature && tt->shape_signature[0] < 0) return true;
    return c->batch_all && !c->slots[t].cdata && tt->shape[0] == 1;
}

int pf_timp_shape(const pf_timp *c, int t, int64_t *dims)
{
    const pf_tfl_tensor *tt = &c->sg->tensors[t];
    for (int d = 0; d < tt->ndim && d < PF_IR_MAX_RANK; d++) dims[d] = tt->shape[d];
    if (tt->ndim > 0 && pf_timp_batched(c, t)) dims[0] = PF_IR_DIM_BATCH;
    return tt->ndim;
}

pf_status pf_timp_const(pf_timp *c, const char *prefix, pf_ir_dtype dt, int ndim,
                        const int64_t *dims, const void *data, size_t nbytes, int *id)
{
    const char *name = pf_ir_unique_name(c->g, prefix && *prefix ? prefix : "const");
    if (!name) return pf_set_error(PF_ERR_NOMEM, "%s: out of memory", c->m->name);
    return pf_ir_add_const(c->g, name, dt, ndim, dims, data, nbytes, id);
}

static pf_status fresh(pf_timp *c, const char *prefix, pf_ir_dtype dt, int *id)
{
    const char *name = pf_ir_unique_name(c->g, prefix && *prefix ? prefix : "t");
    if (!name) return pf_set_error(PF_ERR_NOMEM, "%s: out of memory", c->m->name);
    return pf_ir_add_value(c->g, name, dt, -1, NULL, id);
}

static const char *cur_name(const pf_timp *c)
{
    if (c->op_index < 0) return "io";
    const pf_tfl_operator *op = &c->sg->operators[c->op_index];
    return op->n_outputs > 0 && op->outputs[0] >= 0 ? c->sg->tensors[op->outputs[0]].name : "op";
}

static const char *cur_src(const pf_timp *c)
{
    if (c->op_index < 0) return "layout";
    const pf_tfl_operator *op = &c->sg->operators[c->op_index];
    return op->custom_code ? op->custom_code : pf_tfl_builtin_name(op->builtin);
}

pf_status pf_timp_node_tmp(pf_timp *c, pf_ir_op op, const int *in, int n_in,
                           const pf_ir_attr *attr, int *out)
{
    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s_%s", cur_name(c), pf_ir_op_name(op));
    pf_status st = fresh(c, prefix, c->g->values[in[0]].dtype, out);
    if (st != PF_OK) return st;
    return pf_ir_add_node(c->g, op, cur_name(c), cur_src(c), in, n_in, out, 1, attr, NULL);
}

pf_status pf_timp_transpose(pf_timp *c, int v, const int64_t *perm, int *out)
{
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.transpose.n = 4;
    memcpy(a.transpose.perm, perm, 4 * sizeof perm[0]);
    return pf_timp_node_tmp(c, PF_IR_TRANSPOSE, &v, 1, &a, out);
}

pf_status pf_timp_out_value(pf_timp *c, int t, int *id)
{
    pf_timp_slot *s = &c->slots[t];
    if (s->value >= 0 || s->cdata)
        return pf_timp_fail(c, PF_ERR_FORMAT, "tensor %d '%s' is written twice (or is a "
                            "constant)", t, c->sg->tensors[t].name);
    const pf_tfl_tensor *tt = &c->sg->tensors[t];
    pf_ir_dtype dt;
    if (!pf_timp_dtype(tt->type, &dt))
        return pf_timp_fail(c, PF_ERR_UNSUPPORTED, "tensor '%s' has type %s", tt->name,
                            pf_tfl_type_name(tt->type));
    pf_status st;
    if (s->out_value >= 0 && tt->ndim != 4) {
        st = PF_OK;
        *id = s->out_value; /* written directly under the file's name */
    } else {
        char prefix[200];
        snprintf(prefix, sizeof prefix, "%s%s", tt->name, tt->ndim == 4 ? "_nchw" : "");
        st = fresh(c, prefix, dt, id);
    }
    if (st == PF_OK) s->value = *id;
    return st;
}

pf_status pf_timp_node_out(pf_timp *c, pf_ir_op op, const int *in, int n_in,
                           const pf_ir_attr *attr, int t, int *node_id)
{
    int out;
    pf_status st = pf_timp_out_value(c, t, &out);
    if (st != PF_OK) return st;
    return pf_ir_add_node(c->g, op, cur_name(c), cur_src(c), in, n_in, &out, 1, attr, node_id);
}

static void permute4(const void *src, const int64_t *dims, const int *perm, size_t es, void *dst)
{
    int64_t od[4], istride[4];
    istride[3] = 1;
    for (int i = 2; i >= 0; i--) istride[i] = istride[i + 1] * dims[i + 1];
    for (int i = 0; i < 4; i++) od[i] = dims[perm[i]];
    size_t o = 0;
    for (int64_t a = 0; a < od[0]; a++)
        for (int64_t b = 0; b < od[1]; b++)
            for (int64_t cc = 0; cc < od[2]; cc++)
                for (int64_t d = 0; d < od[3]; d++) {
                    int64_t idx[4] = {a, b, cc, d}, off = 0;
                    for (int i = 0; i < 4; i++) off += idx[i] * istride[perm[i]];
                    memcpy((char *)dst + o * es, (const char *)src + (size_t)off * es, es);
                    o++;
                }
}

pf_status pf_timp_const_permuted(pf_timp *c, int t, const int *perm, int *id)
{
    const pf_timp_slot *s = &c->slots[t];
    const pf_tfl_tensor *tt = &c->sg->tensors[t];
    int64_t dims[PF_IR_MAX_RANK], od[4];
    if (!s->cdata || pf_timp_shape(c, t, dims) != 4)
        return pf_timp_fail(c, PF_ERR_INTERNAL, "tensor '%s' is not a 4D constant", tt->name);
    size_t es = pf_ir_dtype_size(s->cdtype);
    if ((uint64_t)dims[0] * (uint64_t)dims[1] * (uint64_t)dims[2] * (uint64_t)dims[3] * es !=
        s->cbytes)
        return pf_timp_fail(c, PF_ERR_FORMAT, "constant '%s' holds %zu bytes, not the %lld x %lld "
                            "x %lld x %lld elements of its shape", tt->name, s->cbytes,
                            (long long)dims[0], (long long)dims[1], (long long)dims[2],
                            (long long)dims[3]);
    void *buf = malloc(s->cbytes ? s->cbytes : 1);
    if (!buf) return pf_set_error(PF_ERR_NOMEM, "%s: out of memory", c->m->name);
    permute4(s->cdata, dims, perm, es, buf);
    for (int i = 0; i < 4; i++) od[i] = dims[perm[i]];
    pf_status st = pf_timp_const(c, tt->name, s->cdtype, 4, od, buf, s->cbytes, id);
    free(buf);
    return st;
}

pf_status pf_timp_value(pf_timp *c, int t, int *id)
{
    pf_timp_slot *s = &c->slots[t];
    if (s->value >= 0) {
        *id = s->value;
        return PF_OK;
    }
    if (!s->cdata)
        return pf_timp_fail(c, PF_ERR_FORMAT, "tensor %d '%s' is read before it is written", t,
                            c->sg->tensors[t].name);
    int64_t dims[PF_IR_MAX_RANK];
    int r = pf_timp_shape(c, t, dims);
    pf_status st;
    if (r == 4) {
        static const int perm[4] = {0, 3, 1, 2};
        st = pf_timp_const_permuted(c, t, perm, id);
    } else {
        st = pf_timp_const(c, c->sg->tensors[t].name, s->cdtype, r, dims, s->cdata, s->cbytes, id);
    }
    if (st == PF_OK) s->value = *id;
    return st;
}

pf_status pf_timp_value_nchw4(pf_timp *c, int t, int *id)
{
    int64_t dims[PF_IR_MAX_RANK];
    int r = pf_timp_shape(c, t, dims);
    if (r == 4) return pf_timp_value(c, t, id);
    if (r > 4)
        return pf_timp_fail(c, PF_ERR_UNSUPPORTED, "tensor '%s' of rank %d is combined with a 4D "
                            "one", c->sg->tensors[t].name, r);
    /* NHWC broadcasting aligns trailing dims: pad to [1.., dims] then go NCHW. */
    int64_t nhwc[4] = {1, 1, 1, 1}, nchw[4];
    for (int i = 0; i < r; i++) nhwc[4 - r + i] = dims[i];
    for (int i = 0; i < 4; i++) nchw[i] = nhwc[pf_timp_to_nchw[i]];
    const pf_timp_slot *s = &c->slots[t];
    if (s->value < 0 && s->cdata) /* same bytes: only the dims move */
        return pf_timp_const(c, c->sg->tensors[t].name, s->cdtype, 4, nchw, s->cdata, s->cbytes,
                             id);
    int v;
    pf_status st = pf_timp_value(c, t, &v);
    if (st != PF_OK) return st;
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.reshape.kind = PF_IR_RESHAPE_SHAPE;
    a.reshape.n = 4;
    memcpy(a.reshape.shape, nhwc, sizeof nhwc);
    int v4;
    if ((st = pf_timp_node_tmp(c, PF_IR_RESHAPE, &v, 1, &a, &v4)) != PF_OK) return st;
    return pf_timp_transpose(c, v4, pf_timp_to_nchw, id);
}

/* ---- driver ------------------------------------------------------------------- */

static pf_status setup_tensors(pf_timp *c)
{
    const pf_tfl_subgraph *sg = c->sg;
    for (int t = 0; t < sg->n_tensors; t++) {
        pf_timp_slot *s = &c->slots[t];
        const pf_tfl_tensor *tt = &sg->tensors[t];
        s->value = -1;
        s->out_value = -1;
        if (!tt->data) continue;
        if (tt->is_sparse)
            return pf_timp_fail(c, PF_ERR_UNSUPPORTED, "tensor '%s' is sparse", tt->name);
        if (!pf_timp_dtype(tt->type, &s->cdtype)) continue; /* refused if an op reads it */
        if (tt->ndim > PF_IR_MAX_RANK)
            return pf_timp_fail(c, PF_ERR_UNSUPPORTED, "tensor '%s' has rank %d", tt->name,
                                tt->ndim);
        s->cdata = tt->data;
        s->cbytes = tt->data_size;
    }
    return PF_OK;
}

static pf_status setup_inputs(pf_timp *c)
{
    const pf_tfl_subgraph *sg = c->sg;
    for (int i = 0; i < sg->n_inputs; i++) {
        int t = sg->inputs[i];
        const pf_tfl_tensor *tt = &sg->tensors[t];
        bool batch = (tt->shape_signature && tt->ndim > 0 && tt->shape_signature[0] < 0) ||
                     (c->batch_all && tt->ndim > 0 && tt->shape[0] == 1);
        if (batch && !c->g->batch_symbol && !(c->g->batch_symbol = strdup("batch")))
            return pf_set_error(PF_ERR_NOMEM, "%s: out of memory", c->m->name);
        for (int d = 1; tt->shape_signature && d < tt->ndim; d++)
            if (tt->shape_signature[d] < 0)
                return pf_timp_fail(c, PF_ERR_UNSUPPORTED, "graph input '%s': dimension %d is "
                                    "dynamic; only the first (batch) dimension may be",
                                    tt->name, d);
    }
    for (int i = 0; i < sg->n_inputs; i++) {
        int t = sg->inputs[i], id;
        const pf_tfl_tensor *tt = &sg->tensors[t];
        pf_ir_dtype dt;
        int64_t dims[PF_IR_MAX_RANK];
        if (c->slots[t].cdata) continue; /* an input with data is a constant */
        if (!pf_timp_dtype(tt->type, &dt))
            return pf_timp_fail(c, PF_ERR_UNSUPPORTED, "graph input '%s' has type %s", tt->name,
                                pf_tfl_type_name(tt->type));
        if (tt->ndim > PF_IR_MAX_RANK)
            return pf_timp_fail(c, PF_ERR_UNSUPPORTED, "graph input '%s' has rank %d", tt->name,
                                tt->ndim);
        int r = pf_timp_shape(c, t, dims);
        pf_status st = pf_ir_add_value(c->g, tt->name, dt, r, dims, &id);
        if (st == PF_OK) st = pf_ir_mark_input(c->g, id);
        if (st == PF_OK && r == 4) st = pf_timp_transpose(c, id, pf_timp_to_nchw, &id);
        if (st != PF_OK) return st;
        c->slots[t].value = id;
    }
    /* Output values exist up front so that their exact names stay free. */
    for (int i = 0; i < sg->n_outputs; i++) {
        int t = sg->outputs[i];
        const pf_tfl_tensor *tt = &sg->tensors[t];
        pf_ir_dtype dt;
        if (c->slots[t].out_value >= 0) continue;
        if (!pf_timp_dtype(tt->type, &dt))
            return pf_timp_fail(c, PF_ERR_UNSUPPORTED, "graph output '%s' has type %s", tt->name,
                                pf_tfl_type_name(tt->type));
        pf_status st = pf_ir_add_value(c->g, tt->name, dt, -1, NULL, &c->slots[t].out_value);
        if (st != PF_OK) return st;
    }
    return PF_OK;
}

static pf_status finish_outputs(pf_timp *c)
{
    const pf_tfl_subgraph *sg = c->sg;
    for (int i = 0; i < sg->n_outputs; i++) {
        int t = sg->outputs[i], v;
        int out = c->slots[t].out_value;
        pf_status st;
        if (c->g->values[out].producer < 0) {
            /* Rank 4: back to NHWC; anything else that was not written
             * directly (an input or constant) is copied by IDENTITY. */
            if ((st = pf_timp_value(c, t, &v)) != PF_OK) return st;
            pf_ir_attr a;
            memset(&a, 0, sizeof a);
            pf_ir_op op = PF_IR_IDENTITY;
            if (sg->tensors[t].ndim == 4) {
                op = PF_IR_TRANSPOSE;
                a.transpose.n = 4;
                memcpy(a.transpose.perm, pf_timp_to_nhwc, sizeof pf_timp_to_nhwc);
            }
            st = pf_ir_add_node(c->g, op, sg->tensors[t].name, "layout", &v, 1, &out, 1, &a,
                                NULL);
            if (st != PF_OK) return st;
        }
        if ((st = pf_ir_mark_output(c->g, out)) != PF_OK) return st;
    }
    return PF_OK;
}

static pf_status import_subgraph(pf_timp *c)
{
    pf_status st;
    c->op_index = -1;
    if ((st = setup_tensors(c)) != PF_OK) return st;
    if ((st = setup_inputs(c)) != PF_OK) return st;
    for (int i = 0; i < c->sg->n_operators; i++) {
        c->op_index = i;
        if ((st = pf_timp_convert_op(c, &c->sg->operators[i])) != PF_OK) return st;
    }
    c->op_index = -1;
    if ((st = finish_outputs(c)) != PF_OK) return st;
    return pf_ir_infer_shapes(c->g);
}

static pf_status from_tflite(const pf_tflite *m, bool batch_all, pf_ir_graph **out)
{
    if (!out) return pf_set_error(PF_ERR_INVALID, "pf_ir_from_tflite: out is NULL");
    *out = NULL;
    if (!m) return pf_set_error(PF_ERR_INVALID, "pf_ir_from_tflite: model is NULL");
    if (m->n_subgraphs < 1)
        return pf_set_error(PF_ERR_FORMAT, "%s: the model has no subgraph", m->name);
    pf_timp c;
    memset(&c, 0, sizeof c);
    c.m = m;
    c.sg = &m->subgraphs[0];
    c.op_index = -1;
    c.batch_all = batch_all;
    pf_status st = pf_ir_graph_create(m->name, &c.g);
    if (st != PF_OK) return st;
    c.slots = calloc(c.sg->n_tensors > 0 ? (size_t)c.sg->n_tensors : 1, sizeof *c.slots);
    if (!c.slots) st = pf_set_error(PF_ERR_NOMEM, "%s: out of memory", m->name);
    if (st == PF_OK && !(c.g->source_format = strdup("tflite")))
        st = pf_set_error(PF_ERR_NOMEM, "%s: out of memory", m->name);
    if (st == PF_OK) st = import_subgraph(&c);
    for (int t = 0; c.slots && t < c.sg->n_tensors; t++) free(c.slots[t].owned);
    free(c.slots);
    if (st != PF_OK) {
        pf_ir_graph_destroy(&c.g);
        return st;
    }
    *out = c.g;
    return PF_OK;
}

pf_status pf_ir_from_tflite(const pf_tflite *m, pf_ir_graph **out)
{
    return from_tflite(m, false, out);
}

pf_status pf_ir_from_tflite_batched(const pf_tflite *m, pf_ir_graph **out)
{
    return from_tflite(m, true, out);
}
