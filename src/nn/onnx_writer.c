/* The ONNX writer's model builder and protobuf serialiser (onnx_writer.h).
 *
 * Wire format by hand: every field is a tag varint ((field << 3) | wire
 * type) followed by a varint, a fixed32, or a length-delimited payload.
 * Nested messages are built into their own buffer and appended with their
 * length; only the tensor payloads are large, and those are copied once into
 * the GraphProto buffer and once into the ModelProto's (fine at the sizes of
 * vision models; an 160 MB DeepLabV3 costs ~0.1 s). */
#define _POSIX_C_SOURCE 200809L

#include "onnx_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "pixflow/tensor.h"

/* ---- byte buffer and wire format ------------------------------------------------ */

typedef struct pbuf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} pbuf;

static void pb_reserve(pbuf *b, size_t more)
{
    if (b->oom || b->n + more <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more) cap *= 2;
    uint8_t *q = realloc(b->p, cap);
    if (!q) {
        b->oom = true;
        return;
    }
    b->p = q;
    b->cap = cap;
}

static void pb_bytes(pbuf *b, const void *d, size_t n)
{
    pb_reserve(b, n);
    if (b->oom || !n) return;
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void pb_varint(pbuf *b, uint64_t v)
{
    uint8_t t[10];
    int k = 0;
    do {
        t[k] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) t[k] |= 0x80;
        k++;
    } while (v);
    pb_bytes(b, t, (size_t)k);
}

static void pb_tag(pbuf *b, int field, int wire) { pb_varint(b, ((uint64_t)field << 3) | (uint64_t)wire); }
static void pb_int(pbuf *b, int field, int64_t v)
{
    pb_tag(b, field, 0);
    pb_varint(b, (uint64_t)v); /* negative int64: 10-byte two's complement, as protobuf does */
}
static void pb_len(pbuf *b, int field, const void *d, size_t n)
{
    pb_tag(b, field, 2);
    pb_varint(b, n);
    pb_bytes(b, d, n);
}
static void pb_str(pbuf *b, int field, const char *s) { pb_len(b, field, s, strlen(s)); }
static void pb_float(pbuf *b, int field, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint8_t t[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
    pb_tag(b, field, 5);
    pb_bytes(b, t, 4);
}
/* Appends sub as a length-delimited field and empties it. */
static void pb_msg(pbuf *b, int field, pbuf *sub)
{
    if (sub->oom) b->oom = true;
    pb_len(b, field, sub->p, sub->n);
    sub->n = 0;
}

/* ---- builder ------------------------------------------------------------------ */

static char *dup(const char *s)
{
    char *d = strdup(s ? s : "");
    if (!d) pf_set_error(PF_ERR_NOMEM, "onnx writer: out of memory");
    return d;
}

static bool grow(void **arr, int *cap, int n, size_t elem)
{
    if (n < *cap) return true;
    int c = *cap ? 2 * *cap : 16;
    void *q = realloc(*arr, (size_t)c * elem);
    if (!q) {
        pf_set_error(PF_ERR_NOMEM, "onnx writer: out of memory");
        return false;
    }
    memset((char *)q + (size_t)*cap * elem, 0, (size_t)(c - *cap) * elem);
    *arr = q;
    *cap = c;
    return true;
}

int pf_onnx_dtype_of_ir(pf_ir_dtype t)
{
    switch (t) {
    case PF_IR_F32: return 1;
    case PF_IR_U8: return 2;
    case PF_IR_I8: return 3;
    case PF_IR_I32: return 6;
    case PF_IR_I64: return 7;
    case PF_IR_BOOL: return 9;
    case PF_IR_F16: return 10;
    case PF_IR_F64: return 11;
    default: return 0;
    }
}

pf_status pf_onnx_wmodel_create(const char *graph_name, pf_onnx_wmodel **out)
{
    *out = NULL;
    pf_onnx_wmodel *w = calloc(1, sizeof *w);
    if (!w) return pf_set_error(PF_ERR_NOMEM, "onnx writer: out of memory");
    w->graph_name = dup(graph_name && *graph_name ? graph_name : "pixflow");
    w->batch_symbol = dup("N");
    if (!w->graph_name || !w->batch_symbol) {
        pf_onnx_wmodel_destroy(&w);
        return PF_ERR_NOMEM;
    }
    *out = w;
    return PF_OK;
}

static void free_node(pf_onnx_wnode *n)
{
    free(n->op_type);
    free(n->name);
    for (int k = 0; k < n->n_in; k++) free(n->in ? n->in[k] : NULL);
    for (int k = 0; k < n->n_out; k++) free(n->out ? n->out[k] : NULL);
    free(n->in);
    free(n->out);
    for (int k = 0; k < n->n_attrs; k++) {
        free(n->attrs[k].name);
        free(n->attrs[k].s);
        free(n->attrs[k].ints);
    }
}

static void free_values(pf_onnx_wvalue *v, int n)
{
    for (int i = 0; i < n; i++) free(v[i].name);
    free(v);
}

void pf_onnx_wmodel_destroy(pf_onnx_wmodel **pw)
{
    if (!pw || !*pw) return;
    pf_onnx_wmodel *w = *pw;
    *pw = NULL;
    for (int i = 0; i < w->n_nodes; i++) free_node(&w->nodes[i]);
    free(w->nodes);
    for (int i = 0; i < w->n_inits; i++) {
        free(w->inits[i].name);
        free(w->inits[i].owned);
    }
    free(w->inits);
    free_values(w->inputs, w->n_inputs);
    free_values(w->outputs, w->n_outputs);
    free_values(w->infos, w->n_infos);
    free(w->graph_name);
    free(w->batch_symbol);
    free(w);
}

pf_onnx_wnode *pf_onnx_wmodel_insert_node(pf_onnx_wmodel *w, int pos, const char *op_type,
                                          const char *name, const char *const *in, int n_in,
                                          const char *const *out, int n_out)
{
    if (!grow((void **)&w->nodes, &w->cap_nodes, w->n_nodes, sizeof *w->nodes)) return NULL;
    if (pos < 0 || pos > w->n_nodes) pos = w->n_nodes;
    memmove(&w->nodes[pos + 1], &w->nodes[pos], (size_t)(w->n_nodes - pos) * sizeof *w->nodes);
    pf_onnx_wnode *n = &w->nodes[pos];
    memset(n, 0, sizeof *n);
    w->n_nodes++;
    n->op_type = dup(op_type);
    n->name = dup(name);
    n->in = calloc((size_t)(n_in ? n_in : 1), sizeof *n->in);
    n->out = calloc((size_t)(n_out ? n_out : 1), sizeof *n->out);
    bool ok = n->op_type && n->name && n->in && n->out;
    for (int k = 0; ok && k < n_in; k++) ok = (n->in[k] = dup(in[k])) != NULL, n->n_in = k + 1;
    for (int k = 0; ok && k < n_out; k++) ok = (n->out[k] = dup(out[k])) != NULL, n->n_out = k + 1;
    if (!ok) {
        pf_set_error(PF_ERR_NOMEM, "onnx writer: out of memory");
        free_node(n);
        memmove(&w->nodes[pos], &w->nodes[pos + 1], (size_t)(w->n_nodes - pos - 1) * sizeof *w->nodes);
        w->n_nodes--;
        return NULL;
    }
    return n;
}

pf_onnx_wnode *pf_onnx_wmodel_add_node(pf_onnx_wmodel *w, const char *op_type, const char *name,
                                       const char *const *in, int n_in, const char *const *out,
                                       int n_out)
{
    return pf_onnx_wmodel_insert_node(w, w->n_nodes, op_type, name, in, n_in, out, n_out);
}

static pf_onnx_wattr *new_attr(pf_onnx_wnode *n, const char *name, pf_onnx_wattr_type t)
{
    if (n->n_attrs == PF_ONNX_WMAX_ATTRS) {
        pf_set_error(PF_ERR_INTERNAL, "onnx writer: node '%s' (%s): more than %d attributes",
                     n->name, n->op_type, PF_ONNX_WMAX_ATTRS);
        return NULL;
    }
    pf_onnx_wattr *a = &n->attrs[n->n_attrs];
    memset(a, 0, sizeof *a);
    a->name = dup(name);
    if (!a->name) return NULL;
    a->type = t;
    n->n_attrs++;
    return a;
}

pf_status pf_onnx_wnode_attr_int(pf_onnx_wnode *n, const char *name, int64_t v)
{
    pf_onnx_wattr *a = new_attr(n, name, PF_ONNX_WATTR_INT);
    if (!a) return PF_ERR_INTERNAL;
    a->i = v;
    return PF_OK;
}

pf_status pf_onnx_wnode_attr_float(pf_onnx_wnode *n, const char *name, float v)
{
    pf_onnx_wattr *a = new_attr(n, name, PF_ONNX_WATTR_FLOAT);
    if (!a) return PF_ERR_INTERNAL;
    a->f = v;
    return PF_OK;
}

pf_status pf_onnx_wnode_attr_string(pf_onnx_wnode *n, const char *name, const char *v)
{
    pf_onnx_wattr *a = new_attr(n, name, PF_ONNX_WATTR_STRING);
    if (!a) return PF_ERR_INTERNAL;
    a->s = dup(v);
    return a->s ? PF_OK : PF_ERR_NOMEM;
}

pf_status pf_onnx_wnode_attr_ints(pf_onnx_wnode *n, const char *name, const int64_t *v, int count)
{
    pf_onnx_wattr *a = new_attr(n, name, PF_ONNX_WATTR_INTS);
    if (!a) return PF_ERR_INTERNAL;
    a->ints = malloc((size_t)(count ? count : 1) * sizeof *a->ints);
    if (!a->ints) return pf_set_error(PF_ERR_NOMEM, "onnx writer: out of memory");
    if (count) memcpy(a->ints, v, (size_t)count * sizeof *v);
    a->n = count;
    return PF_OK;
}

pf_status pf_onnx_wnode_attr_tensor1(pf_onnx_wnode *n, const char *name, int dtype, double v)
{
    pf_onnx_wattr *a = new_attr(n, name, PF_ONNX_WATTR_TENSOR);
    if (!a) return PF_ERR_INTERNAL;
    a->t_dtype = dtype;
    a->t_value = v;
    return PF_OK;
}

pf_status pf_onnx_wnode_set_input(pf_onnx_wnode *n, int k, const char *name)
{
    char *s = dup(name);
    if (!s) return PF_ERR_NOMEM;
    free(n->in[k]);
    n->in[k] = s;
    return PF_OK;
}

static pf_status add_init(pf_onnx_wmodel *w, const char *name, int dtype, int ndim,
                          const int64_t *dims, const void *data, size_t nbytes, bool copy)
{
    if (ndim < 0 || ndim > PF_IR_MAX_RANK)
        return pf_set_error(PF_ERR_INTERNAL, "onnx writer: initializer '%s' has rank %d", name, ndim);
    if (!grow((void **)&w->inits, &w->cap_inits, w->n_inits, sizeof *w->inits)) return PF_ERR_NOMEM;
    pf_onnx_winit *t = &w->inits[w->n_inits];
    memset(t, 0, sizeof *t);
    t->name = dup(name);
    if (!t->name) return PF_ERR_NOMEM;
    if (copy && nbytes) {
        t->owned = malloc(nbytes);
        if (!t->owned) {
            free(t->name);
            return pf_set_error(PF_ERR_NOMEM, "onnx writer: out of memory (%zu bytes)", nbytes);
        }
        memcpy(t->owned, data, nbytes);
        t->data = t->owned;
    } else {
        t->data = data;
    }
    t->dtype = dtype;
    t->ndim = ndim;
    if (ndim) memcpy(t->dims, dims, (size_t)ndim * sizeof *dims);
    t->nbytes = nbytes;
    w->n_inits++;
    return PF_OK;
}

pf_status pf_onnx_wmodel_add_init(pf_onnx_wmodel *w, const char *name, int dtype, int ndim,
                                  const int64_t *dims, const void *data, size_t nbytes)
{
    return add_init(w, name, dtype, ndim, dims, data, nbytes, true);
}

pf_status pf_onnx_wmodel_add_init_borrowed(pf_onnx_wmodel *w, const char *name, int dtype,
                                           int ndim, const int64_t *dims, const void *data,
                                           size_t nbytes)
{
    return add_init(w, name, dtype, ndim, dims, data, nbytes, false);
}

pf_status pf_onnx_wmodel_add_i64s(pf_onnx_wmodel *w, const char *name, const int64_t *v, int n)
{
    int64_t d = n;
    return add_init(w, name, 7, 1, &d, v, (size_t)n * sizeof *v, true);
}

pf_status pf_onnx_wmodel_add_f32s(pf_onnx_wmodel *w, const char *name, const float *v, int n,
                                  bool scalar)
{
    int64_t d = n;
    return add_init(w, name, 1, scalar ? 0 : 1, &d, v, (size_t)n * sizeof *v, true);
}

const pf_onnx_winit *pf_onnx_wmodel_find_init(const pf_onnx_wmodel *w, const char *name)
{
    for (int i = 0; i < w->n_inits; i++)
        if (!strcmp(w->inits[i].name, name)) return &w->inits[i];
    return NULL;
}

pf_status pf_onnx_wmodel_add_value(pf_onnx_wmodel *w, int which, const char *name, int dtype,
                                   int ndim, const int64_t *dims)
{
    pf_onnx_wvalue **arr = which == 0 ? &w->inputs : which == 1 ? &w->outputs : &w->infos;
    int *n = which == 0 ? &w->n_inputs : which == 1 ? &w->n_outputs : &w->n_infos;
    int *cap = which == 0 ? &w->cap_inputs : which == 1 ? &w->cap_outputs : &w->cap_infos;
    if (!grow((void **)arr, cap, *n, sizeof **arr)) return PF_ERR_NOMEM;
    pf_onnx_wvalue *v = &(*arr)[*n];
    memset(v, 0, sizeof *v);
    v->name = dup(name);
    if (!v->name) return PF_ERR_NOMEM;
    v->dtype = dtype;
    v->ndim = ndim > PF_IR_MAX_RANK ? -1 : ndim;
    if (v->ndim > 0) memcpy(v->dims, dims, (size_t)ndim * sizeof *dims);
    (*n)++;
    return PF_OK;
}

const pf_onnx_wvalue *pf_onnx_wmodel_find_info(const pf_onnx_wmodel *w, const char *name)
{
    for (int i = 0; i < w->n_infos; i++)
        if (!strcmp(w->infos[i].name, name)) return &w->infos[i];
    for (int i = 0; i < w->n_inputs; i++)
        if (!strcmp(w->inputs[i].name, name)) return &w->inputs[i];
    for (int i = 0; i < w->n_outputs; i++)
        if (!strcmp(w->outputs[i].name, name)) return &w->outputs[i];
    return NULL;
}

static bool name_used(const pf_onnx_wmodel *w, const char *s)
{
    if (pf_onnx_wmodel_find_init(w, s) || pf_onnx_wmodel_find_info(w, s)) return true;
    for (int i = 0; i < w->n_nodes; i++)
        for (int k = 0; k < w->nodes[i].n_out; k++)
            if (!strcmp(w->nodes[i].out[k], s)) return true;
    return false;
}

const char *pf_onnx_wmodel_fresh_name(pf_onnx_wmodel *w, const char *prefix, const char *suffix,
                                      char *buf, size_t size)
{
    snprintf(buf, size, "%s%s", prefix, suffix);
    while (name_used(w, buf)) snprintf(buf, size, "%s%s_%d", prefix, suffix, ++w->n_names);
    return buf;
}

/* ---- serialisation ------------------------------------------------------------ */

static void write_value(pbuf *b, int field, const pf_onnx_wvalue *v, const char *sym, pbuf *t)
{
    /* ValueInfoProto{name=1, type=2: TypeProto{tensor_type=1: {elem_type=1, shape=2}}} */
    pbuf tensor = {0}, shape = {0}, dim = {0};
    pb_int(&tensor, 1, v->dtype);
    if (v->ndim >= 0) {
        for (int d = 0; d < v->ndim; d++) {
            if (v->dims[d] >= 0) pb_int(&dim, 1, v->dims[d]);
            else if (v->dims[d] == PF_IR_DIM_BATCH) pb_str(&dim, 2, sym);
            pb_msg(&shape, 1, &dim);
        }
        pb_msg(&tensor, 2, &shape);
    }
    pbuf type = {0};
    pb_msg(&type, 1, &tensor);
    pb_str(t, 1, v->name);
    pb_msg(t, 2, &type);
    pb_msg(b, field, t);
    if (tensor.oom || shape.oom || dim.oom || type.oom) b->oom = true;
    free(tensor.p);
    free(shape.p);
    free(dim.p);
    free(type.p);
}

static void write_tensor(pbuf *t, const char *name, int dtype, int ndim, const int64_t *dims,
                         const void *data, size_t nbytes)
{
    /* TensorProto{dims=1, data_type=2, name=8, raw_data=9}. Raw bytes are
     * little-endian, which is the host order of every machine pixflow runs on. */
    for (int d = 0; d < ndim; d++) pb_int(t, 1, dims[d]);
    pb_int(t, 2, dtype);
    if (name && *name) pb_str(t, 8, name);
    pb_len(t, 9, data, nbytes);
}

static void write_attr(pbuf *b, const pf_onnx_wattr *a, pbuf *t)
{
    /* AttributeProto{name=1, f=2, i=3, s=4, t=5, ints=8, type=20} */
    pb_str(t, 1, a->name);
    switch (a->type) {
    case PF_ONNX_WATTR_FLOAT: pb_float(t, 2, a->f); break;
    case PF_ONNX_WATTR_INT: pb_int(t, 3, a->i); break;
    case PF_ONNX_WATTR_STRING: pb_str(t, 4, a->s); break;
    case PF_ONNX_WATTR_INTS:
        for (int k = 0; k < a->n; k++) pb_int(t, 8, a->ints[k]);
        break;
    case PF_ONNX_WATTR_TENSOR: {
        uint8_t raw[8];
        size_t nb = 4;
        switch (a->t_dtype) {
        case 1: { float f = (float)a->t_value; memcpy(raw, &f, 4); break; }
        case 6: { int32_t v = (int32_t)a->t_value; memcpy(raw, &v, 4); break; }
        case 7: { int64_t v = (int64_t)a->t_value; memcpy(raw, &v, 8); nb = 8; break; }
        case 11: memcpy(raw, &a->t_value, 8); nb = 8; break;
        default: raw[0] = (uint8_t)(int)a->t_value; nb = 1; break; /* U8, I8, BOOL */
        }
        if (a->t_dtype == 10) { /* F16 */
            uint16_t h = pf_f32_to_f16((float)a->t_value);
            memcpy(raw, &h, 2);
            nb = 2;
        }
        pbuf tt = {0};
        int64_t one = 1;
        write_tensor(&tt, NULL, a->t_dtype, 1, &one, raw, nb);
        pb_msg(t, 5, &tt);
        free(tt.p);
        break;
    }
    }
    pb_int(t, 20, a->type);
    pb_msg(b, 5, t);
}

pf_status pf_onnx_wmodel_serialize(const pf_onnx_wmodel *w, uint8_t **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    pbuf g = {0}, t = {0}, sub = {0};
    /* GraphProto{node=1, name=2, initializer=5, input=11, output=12, value_info=13} */
    for (int i = 0; i < w->n_nodes; i++) {
        const pf_onnx_wnode *n = &w->nodes[i];
        for (int k = 0; k < n->n_in; k++) pb_str(&t, 1, n->in[k]);
        for (int k = 0; k < n->n_out; k++) pb_str(&t, 2, n->out[k]);
        if (*n->name) pb_str(&t, 3, n->name);
        pb_str(&t, 4, n->op_type);
        for (int k = 0; k < n->n_attrs; k++) write_attr(&t, &n->attrs[k], &sub);
        pb_msg(&g, 1, &t);
    }
    pb_str(&g, 2, w->graph_name);
    for (int i = 0; i < w->n_inits; i++) {
        const pf_onnx_winit *it = &w->inits[i];
        write_tensor(&t, it->name, it->dtype, it->ndim, it->dims, it->data, it->nbytes);
        pb_msg(&g, 5, &t);
    }
    for (int i = 0; i < w->n_inputs; i++) write_value(&g, 11, &w->inputs[i], w->batch_symbol, &t);
    for (int i = 0; i < w->n_outputs; i++) write_value(&g, 12, &w->outputs[i], w->batch_symbol, &t);
    for (int i = 0; i < w->n_infos; i++) write_value(&g, 13, &w->infos[i], w->batch_symbol, &t);
    /* ModelProto{ir_version=1, producer_name=2, producer_version=3, graph=7,
     * opset_import=8: {domain=1, version=2}} */
    pbuf m = {0};
    pb_int(&m, 1, PF_ONNX_WRITE_IR_VERSION);
    pb_str(&m, 2, "pixflow");
    pb_str(&m, 3, "1");
    pb_msg(&m, 7, &g);
    pb_int(&t, 2, PF_ONNX_WRITE_OPSET);
    pb_msg(&m, 8, &t);
    bool oom = g.oom || t.oom || sub.oom || m.oom;
    free(g.p);
    free(t.p);
    free(sub.p);
    if (oom) {
        free(m.p);
        return pf_set_error(PF_ERR_NOMEM, "onnx writer: out of memory serialising '%s'",
                            w->graph_name);
    }
    *data = m.p;
    *size = m.n;
    return PF_OK;
}

pf_status pf_onnx_wmodel_save(const pf_onnx_wmodel *w, const char *path)
{
    uint8_t *d = NULL;
    size_t n = 0;
    pf_status st = pf_onnx_wmodel_serialize(w, &d, &n);
    if (st) return st;
    size_t plen = strlen(path) + 8;
    char *tmp = malloc(plen);
    if (!tmp) {
        free(d);
        return pf_set_error(PF_ERR_NOMEM, "onnx writer: out of memory");
    }
    snprintf(tmp, plen, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    bool ok = f && fwrite(d, 1, n, f) == n;
    if (f && fclose(f) != 0) ok = false;
    free(d);
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        free(tmp);
        return pf_set_error(PF_ERR_IO, "onnx writer: cannot write %s", path);
    }
    free(tmp);
    return PF_OK;
}
