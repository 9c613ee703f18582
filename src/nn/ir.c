/* The nn graph IR: names, building, cloning, compaction and validation.
 *
 * A graph is allocated as the first member of a private wrapper so that
 * strings handed out by pf_ir_unique_name() have an owner without adding a
 * field to pf_ir_graph (the struct is shared with importers and executors).
 * Graphs must therefore come from pf_ir_graph_create() or pf_ir_graph_clone().
 * Name lookups go through a hash index in the wrapper (a linear scan per added
 * value made importing a 100k-node chain quadratic: 46 s). Values are only
 * appended (new_value) or moved by pf_ir_compact(), which rebuilds the index;
 * values appended since the last lookup are indexed lazily, and a hit is checked
 * against the value's name, so an index that went stale some other way is
 * rebuilt instead of answering wrongly. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "ir.h"

typedef struct ir_graph_priv {
    pf_ir_graph g; /* first: a pf_ir_graph * is a ir_graph_priv * */
    char **pool;   /* strings returned by pf_ir_unique_name */
    int n_pool, cap_pool;
    unsigned long counter;
    int *index;      /* value ids by name hash, open addressing, -1 empty; cap_index a power of 2 */
    int cap_index;
    int n_indexed;   /* values [0, n_indexed) are in the index */
} ir_graph_priv;

static char *dupstr(const char *s)
{
    if (!s) s = "";
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

size_t pf_ir_dtype_size(pf_ir_dtype t)
{
    switch (t) {
    case PF_IR_F32: return 4;
    case PF_IR_F16: return 2;
    case PF_IR_I64: return 8;
    case PF_IR_I32: return 4;
    case PF_IR_U8: return 1;
    case PF_IR_I8: return 1;
    case PF_IR_BOOL: return 1;
    case PF_IR_F64: return 8;
    case PF_IR_DTYPE_COUNT: break;
    }
    return 0;
}

const char *pf_ir_dtype_name(pf_ir_dtype t)
{
    static const char *const names[PF_IR_DTYPE_COUNT] = {
        [PF_IR_F32] = "float32", [PF_IR_F16] = "float16", [PF_IR_I64] = "int64",
        [PF_IR_I32] = "int32",   [PF_IR_U8] = "uint8",    [PF_IR_I8] = "int8",
        [PF_IR_BOOL] = "bool",   [PF_IR_F64] = "float64",
    };
    if ((unsigned)t >= PF_IR_DTYPE_COUNT) return "?";
    return names[t];
}

const char *pf_ir_op_name(pf_ir_op op)
{
    static const char *const names[PF_IR_OP_COUNT] = {
        [PF_IR_OP_INVALID] = "Invalid",
        [PF_IR_CONV] = "Conv",
        [PF_IR_CONV_TRANSPOSE] = "ConvTranspose",
        [PF_IR_BATCHNORM] = "BatchNormalization",
        [PF_IR_RELU] = "Relu",
        [PF_IR_SIGMOID] = "Sigmoid",
        [PF_IR_TANH] = "Tanh",
        [PF_IR_HARD_SIGMOID] = "HardSigmoid",
        [PF_IR_HARD_SWISH] = "HardSwish",
        [PF_IR_LEAKY_RELU] = "LeakyRelu",
        [PF_IR_CLIP] = "Clip",
        [PF_IR_ELU] = "Elu",
        [PF_IR_SELU] = "Selu",
        [PF_IR_SOFTPLUS] = "Softplus",
        [PF_IR_SOFTSIGN] = "Softsign",
        [PF_IR_ABS] = "Abs",
        [PF_IR_NEG] = "Neg",
        [PF_IR_EXP] = "Exp",
        [PF_IR_LOG] = "Log",
        [PF_IR_SQRT] = "Sqrt",
        [PF_IR_RECIPROCAL] = "Reciprocal",
        [PF_IR_FLOOR] = "Floor",
        [PF_IR_CEIL] = "Ceil",
        [PF_IR_ROUND] = "Round",
        [PF_IR_ERF] = "Erf",
        [PF_IR_SIN] = "Sin",
        [PF_IR_COS] = "Cos",
        [PF_IR_NOT] = "Not",
        [PF_IR_SIGN] = "Sign",
        [PF_IR_IDENTITY] = "Identity",
        [PF_IR_CAST] = "Cast",
        [PF_IR_ADD] = "Add",
        [PF_IR_SUB] = "Sub",
        [PF_IR_MUL] = "Mul",
        [PF_IR_DIV] = "Div",
        [PF_IR_POW] = "Pow",
        [PF_IR_MAX] = "Max",
        [PF_IR_MIN] = "Min",
        [PF_IR_MOD] = "Mod",
        [PF_IR_PRELU] = "PRelu",
        [PF_IR_EQUAL] = "Equal",
        [PF_IR_LESS] = "Less",
        [PF_IR_GREATER] = "Greater",
        [PF_IR_LESS_OR_EQUAL] = "LessOrEqual",
        [PF_IR_GREATER_OR_EQUAL] = "GreaterOrEqual",
        [PF_IR_AND] = "And",
        [PF_IR_OR] = "Or",
        [PF_IR_XOR] = "Xor",
        [PF_IR_WHERE] = "Where",
        [PF_IR_SUM] = "Sum",
        [PF_IR_MEAN_N] = "Mean",
        [PF_IR_CONCAT] = "Concat",
        [PF_IR_RESHAPE] = "Reshape",
        [PF_IR_TRANSPOSE] = "Transpose",
        [PF_IR_SLICE] = "Slice",
        [PF_IR_PAD] = "Pad",
        [PF_IR_GATHER] = "Gather",
        [PF_IR_EXPAND] = "Expand",
        [PF_IR_TILE] = "Tile",
        [PF_IR_SHAPE] = "Shape",
        [PF_IR_CONSTANT_OF_SHAPE] = "ConstantOfShape",
        [PF_IR_SPLIT] = "Split",
        [PF_IR_DEPTH_TO_SPACE] = "DepthToSpace",
        [PF_IR_SPACE_TO_DEPTH] = "SpaceToDepth",
        [PF_IR_RESIZE] = "Resize",
        [PF_IR_MAXPOOL] = "MaxPool",
        [PF_IR_AVGPOOL] = "AveragePool",
        [PF_IR_GLOBAL_AVGPOOL] = "GlobalAveragePool",
        [PF_IR_GLOBAL_MAXPOOL] = "GlobalMaxPool",
        [PF_IR_REDUCE_MEAN] = "ReduceMean",
        [PF_IR_REDUCE_SUM] = "ReduceSum",
        [PF_IR_REDUCE_MAX] = "ReduceMax",
        [PF_IR_REDUCE_MIN] = "ReduceMin",
        [PF_IR_REDUCE_PROD] = "ReduceProd",
        [PF_IR_REDUCE_L2] = "ReduceL2",
        [PF_IR_REDUCE_SUM_SQUARE] = "ReduceSumSquare",
        [PF_IR_ARGMAX] = "ArgMax",
        [PF_IR_ARGMIN] = "ArgMin",
        [PF_IR_SOFTMAX] = "Softmax",
        [PF_IR_LOG_SOFTMAX] = "LogSoftmax",
        [PF_IR_GEMM] = "Gemm",
        [PF_IR_MATMUL] = "MatMul",
        [PF_IR_QUANTIZE_LINEAR] = "QuantizeLinear",
        [PF_IR_DEQUANTIZE_LINEAR] = "DequantizeLinear",
        [PF_IR_QLINEAR_CONV] = "QLinearConv",
        [PF_IR_QLINEAR_MATMUL] = "QLinearMatMul",
        [PF_IR_CONV_INTEGER] = "ConvInteger",
        [PF_IR_MATMUL_INTEGER] = "MatMulInteger",
        [PF_IR_QCONV] = "QConv",
        [PF_IR_QMATMUL] = "QMatMul",
    };
    if ((unsigned)op >= PF_IR_OP_COUNT || !names[op]) return "?";
    return names[op];
}

pf_status pf_ir_graph_create(const char *name, pf_ir_graph **out)
{
    if (!out) return pf_set_error(PF_ERR_INVALID, "pf_ir_graph_create: out is NULL");
    *out = NULL;
    ir_graph_priv *p = calloc(1, sizeof *p);
    if (!p) return pf_set_error(PF_ERR_NOMEM, "pf_ir_graph_create: out of memory");
    p->g.name = dupstr(name);
    if (!p->g.name) {
        free(p);
        return pf_set_error(PF_ERR_NOMEM, "pf_ir_graph_create: out of memory");
    }
    *out = &p->g;
    return PF_OK;
}

static void free_value(pf_ir_value *v)
{
    free(v->name);
    free(v->data);
    v->name = NULL;
    v->data = NULL;
}

static void free_node(pf_ir_node *n)
{
    free(n->name);
    free(n->src_op);
    n->name = NULL;
    n->src_op = NULL;
}

void pf_ir_graph_destroy(pf_ir_graph **gp)
{
    if (!gp || !*gp) return;
    pf_ir_graph *g = *gp;
    ir_graph_priv *p = (ir_graph_priv *)g;
    for (int i = 0; i < g->n_values; i++) free_value(&g->values[i]);
    for (int i = 0; i < g->n_nodes; i++) free_node(&g->nodes[i]);
    free(g->values);
    free(g->nodes);
    free(g->inputs);
    free(g->outputs);
    free(g->name);
    free(g->batch_symbol);
    free(g->source_format);
    for (int i = 0; i < p->n_pool; i++) free(p->pool[i]);
    free(p->pool);
    free(p->index);
    free(p);
    *gp = NULL;
}

static pf_status nomem(const char *what)
{
    return pf_set_error(PF_ERR_NOMEM, "%s: out of memory", what);
}

pf_status pf_ir_graph_clone(const pf_ir_graph *g, pf_ir_graph **out)
{
    if (!g || !out) return pf_set_error(PF_ERR_INVALID, "pf_ir_graph_clone: NULL argument");
    *out = NULL;
    pf_ir_graph *c = NULL;
    pf_status st = pf_ir_graph_create(g->name, &c);
    if (st != PF_OK) return st;
    c->opset = g->opset;
    if ((g->batch_symbol && !(c->batch_symbol = dupstr(g->batch_symbol))) ||
        (g->source_format && !(c->source_format = dupstr(g->source_format))))
        goto fail;
    if (g->n_values) {
        c->values = calloc((size_t)g->n_values, sizeof *c->values);
        if (!c->values) goto fail;
        c->cap_values = g->n_values;
        for (int i = 0; i < g->n_values; i++) {
            pf_ir_value *d = &c->values[i];
            *d = g->values[i];
            d->name = NULL;
            d->data = NULL;
            c->n_values = i + 1;
            if (!(d->name = dupstr(g->values[i].name))) goto fail;
            if (g->values[i].data) {
                d->data = malloc(g->values[i].nbytes ? g->values[i].nbytes : 1);
                if (!d->data) goto fail;
                memcpy(d->data, g->values[i].data, g->values[i].nbytes);
            }
        }
    }
    if (g->n_nodes) {
        c->nodes = calloc((size_t)g->n_nodes, sizeof *c->nodes);
        if (!c->nodes) goto fail;
        c->cap_nodes = g->n_nodes;
        for (int i = 0; i < g->n_nodes; i++) {
            pf_ir_node *d = &c->nodes[i];
            *d = g->nodes[i];
            d->name = NULL;
            d->src_op = NULL;
            c->n_nodes = i + 1;
            if (!(d->name = dupstr(g->nodes[i].name)) || !(d->src_op = dupstr(g->nodes[i].src_op)))
                goto fail;
        }
    }
    if (g->n_inputs) {
        if (!(c->inputs = malloc(sizeof(int) * (size_t)g->n_inputs))) goto fail;
        memcpy(c->inputs, g->inputs, sizeof(int) * (size_t)g->n_inputs);
        c->n_inputs = g->n_inputs;
    }
    if (g->n_outputs) {
        if (!(c->outputs = malloc(sizeof(int) * (size_t)g->n_outputs))) goto fail;
        memcpy(c->outputs, g->outputs, sizeof(int) * (size_t)g->n_outputs);
        c->n_outputs = g->n_outputs;
    }
    *out = c;
    return PF_OK;
fail:
    pf_ir_graph_destroy(&c);
    return nomem("pf_ir_graph_clone");
}

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void index_insert(ir_graph_priv *p, int id)
{
    uint32_t mask = (uint32_t)p->cap_index - 1;
    for (uint32_t h = name_hash(p->g.values[id].name) & mask;; h = (h + 1) & mask)
        if (p->index[h] < 0) {
            p->index[h] = id;
            return;
        }
}

/* Brings the index up to date: values [n_indexed, n_values) are added, growing the table to keep
 * it at most half full; it is rebuilt from scratch when it has none yet (cap_index 0: new graph,
 * or after pf_ir_compact() moved ids). False when out of memory (callers then scan). */
static bool index_update(ir_graph_priv *p)
{
    const pf_ir_graph *g = &p->g;
    if (g->n_values > (1 << 28)) return false;
    if (!p->cap_index || p->n_indexed > g->n_values || g->n_values * 2 > p->cap_index) {
        int cap = 64;
        while (cap < g->n_values * 2) cap *= 2;
        int *idx = malloc(sizeof(int) * (size_t)cap);
        if (!idx) return false;
        free(p->index);
        p->index = idx;
        p->cap_index = cap;
        p->n_indexed = 0;
        memset(idx, 0xff, sizeof(int) * (size_t)cap); /* all -1 */
    }
    for (; p->n_indexed < g->n_values; p->n_indexed++)
        if (g->values[p->n_indexed].name) index_insert(p, p->n_indexed);
    return true;
}

static int find_value_scan(const pf_ir_graph *g, const char *name)
{
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i].name && strcmp(g->values[i].name, name) == 0) return i;
    return -1;
}

static int find_value(const pf_ir_graph *g, const char *name)
{
    ir_graph_priv *p = (ir_graph_priv *)g;
    if (!index_update(p)) return find_value_scan(g, name);
    uint32_t mask = (uint32_t)p->cap_index - 1;
    for (uint32_t h = name_hash(name) & mask; p->index[h] >= 0; h = (h + 1) & mask) {
        int id = p->index[h];
        if (id >= g->n_values || !g->values[id].name) {
            p->cap_index = 0; /* stale (ids moved without pf_ir_compact): rebuild next time */
            return find_value_scan(g, name);
        }
        if (!strcmp(g->values[id].name, name)) return id;
    }
    return -1;
}

static pf_status grow(void **arr, int *cap, int need, size_t elem)
{
    if (need <= *cap) return PF_OK;
    int nc = *cap ? *cap : 16;
    while (nc < need) {
        if (nc > (1 << 28)) return PF_ERR_NOMEM;
        nc *= 2;
    }
    void *p = realloc(*arr, (size_t)nc * elem);
    if (!p) return PF_ERR_NOMEM;
    memset((char *)p + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
    *arr = p;
    *cap = nc;
    return PF_OK;
}

static pf_status new_value(pf_ir_graph *g, const char *name, pf_ir_dtype dtype, int ndim,
                           const int64_t *dims, const char *fn, int *id)
{
    if (!g || !name) return pf_set_error(PF_ERR_INVALID, "%s: NULL graph or name", fn);
    if ((unsigned)dtype >= PF_IR_DTYPE_COUNT)
        return pf_set_error(PF_ERR_INVALID, "%s: value '%s': bad dtype %d", fn, name, (int)dtype);
    if (ndim < -1 || ndim > PF_IR_MAX_RANK)
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: value '%s': rank %d (at most %d)", fn, name,
                            ndim, PF_IR_MAX_RANK);
    if (ndim > 0 && !dims)
        return pf_set_error(PF_ERR_INVALID, "%s: value '%s': dims is NULL", fn, name);
    for (int i = 0; i < ndim; i++)
        if (dims[i] < 0 && dims[i] != PF_IR_DIM_BATCH)
            return pf_set_error(PF_ERR_FORMAT, "%s: value '%s': dim %d is %lld", fn, name, i,
                                (long long)dims[i]);
    if (find_value(g, name) >= 0)
        return pf_set_error(PF_ERR_FORMAT, "%s: duplicate value name '%s'", fn, name);
    if (grow((void **)&g->values, &g->cap_values, g->n_values + 1, sizeof *g->values) != PF_OK)
        return nomem(fn);
    pf_ir_value *v = &g->values[g->n_values];
    memset(v, 0, sizeof *v);
    if (!(v->name = dupstr(name))) return nomem(fn);
    v->dtype = dtype;
    v->ndim = ndim;
    for (int i = 0; i < ndim; i++) v->dims[i] = dims[i];
    v->producer = -1;
    if (id) *id = g->n_values;
    g->n_values++;
    return PF_OK;
}

pf_status pf_ir_add_value(pf_ir_graph *g, const char *name, pf_ir_dtype dtype, int ndim,
                          const int64_t *dims, int *id)
{
    return new_value(g, name, dtype, ndim, dims, "pf_ir_add_value", id);
}

pf_status pf_ir_add_const(pf_ir_graph *g, const char *name, pf_ir_dtype dtype, int ndim,
                          const int64_t *dims, const void *data, size_t nbytes, int *id)
{
    static const char fn[] = "pf_ir_add_const";
    if (ndim < 0 || ndim > PF_IR_MAX_RANK)
        return pf_set_error(PF_ERR_FORMAT, "%s: constant '%s': rank %d", fn, name ? name : "?",
                            ndim);
    for (int i = 0; i < ndim; i++)
        if (dims[i] < 0)
            return pf_set_error(PF_ERR_FORMAT, "%s: constant '%s': dim %d is %lld", fn,
                                name ? name : "?", i, (long long)dims[i]);
    pf_ir_value tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.dtype = dtype;
    tmp.ndim = ndim;
    for (int i = 0; i < ndim; i++) tmp.dims[i] = dims[i];
    if ((unsigned)dtype >= PF_IR_DTYPE_COUNT)
        return pf_set_error(PF_ERR_INVALID, "%s: constant '%s': bad dtype %d", fn,
                            name ? name : "?", (int)dtype);
    size_t want = pf_ir_value_nbytes(&tmp);
    if (pf_ir_value_numel(&tmp) < 0 || want != nbytes)
        return pf_set_error(PF_ERR_FORMAT, "%s: constant '%s': %zu bytes given, shape needs %zu",
                            fn, name ? name : "?", nbytes, want);
    if (nbytes && !data)
        return pf_set_error(PF_ERR_INVALID, "%s: constant '%s': data is NULL", fn,
                            name ? name : "?");
    void *copy = malloc(nbytes ? nbytes : 1);
    if (!copy) return nomem(fn);
    if (nbytes) memcpy(copy, data, nbytes);
    int vid = -1;
    pf_status st = new_value(g, name, dtype, ndim, dims, fn, &vid);
    if (st != PF_OK) {
        free(copy);
        return st;
    }
    g->values[vid].data = copy;
    g->values[vid].nbytes = nbytes;
    if (id) *id = vid;
    return PF_OK;
}

const char *pf_ir_unique_name(pf_ir_graph *g, const char *prefix)
{
    if (!g) return NULL;
    ir_graph_priv *p = (ir_graph_priv *)g;
    if (!prefix) prefix = "v";
    size_t len = strlen(prefix) + 24;
    char *s = malloc(len);
    if (!s) return NULL;
    for (;;) {
        snprintf(s, len, "%s_%lu", prefix, p->counter++);
        if (find_value(g, s) < 0) break;
    }
    if (grow((void **)&p->pool, &p->cap_pool, p->n_pool + 1, sizeof *p->pool) != PF_OK) {
        free(s);
        return NULL;
    }
    p->pool[p->n_pool++] = s;
    return s;
}

pf_status pf_ir_add_node(pf_ir_graph *g, pf_ir_op op, const char *name, const char *src_op,
                         const int *in, int n_in, const int *out, int n_out,
                         const pf_ir_attr *attr, int *node_id)
{
    static const char fn[] = "pf_ir_add_node";
    const char *nm = name ? name : "";
    if (!g) return pf_set_error(PF_ERR_INVALID, "%s: graph is NULL", fn);
    if (op <= PF_IR_OP_INVALID || op >= PF_IR_OP_COUNT)
        return pf_set_error(PF_ERR_INVALID, "%s: node '%s': bad op %d", fn, nm, (int)op);
    if (n_in < 0 || n_in > PF_IR_MAX_INPUTS || (n_in && !in))
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: node '%s' (%s): %d inputs (at most %d)", fn,
                            nm, pf_ir_op_name(op), n_in, PF_IR_MAX_INPUTS);
    if (n_out < 1 || n_out > PF_IR_MAX_OUTPUTS || !out)
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: node '%s' (%s): %d outputs (1..%d)", fn, nm,
                            pf_ir_op_name(op), n_out, PF_IR_MAX_OUTPUTS);
    for (int i = 0; i < n_in; i++)
        if (in[i] < -1 || in[i] >= g->n_values)
            return pf_set_error(PF_ERR_INVALID, "%s: node '%s' (%s): input %d has bad id %d", fn,
                                nm, pf_ir_op_name(op), i, in[i]);
    for (int i = 0; i < n_out; i++) {
        if (out[i] < 0 || out[i] >= g->n_values)
            return pf_set_error(PF_ERR_INVALID, "%s: node '%s' (%s): output %d has bad id %d",
                                fn, nm, pf_ir_op_name(op), i, out[i]);
        const pf_ir_value *v = &g->values[out[i]];
        if (v->producer >= 0 || v->data || v->is_input)
            return pf_set_error(PF_ERR_FORMAT,
                                "%s: node '%s' (%s): output '%s' already has a producer "
                                "(or is a constant or graph input)",
                                fn, nm, pf_ir_op_name(op), v->name);
        for (int j = 0; j < i; j++)
            if (out[j] == out[i])
                return pf_set_error(PF_ERR_FORMAT, "%s: node '%s' (%s): output '%s' twice", fn,
                                    nm, pf_ir_op_name(op), v->name);
    }
    if (grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof *g->nodes) != PF_OK)
        return nomem(fn);
    pf_ir_node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->name = dupstr(nm);
    n->src_op = dupstr(src_op ? src_op : pf_ir_op_name(op));
    if (!n->name || !n->src_op) {
        free_node(n);
        return nomem(fn);
    }
    n->op = op;
    n->n_in = n_in;
    n->n_out = n_out;
    for (int i = 0; i < PF_IR_MAX_INPUTS; i++) n->in[i] = i < n_in ? in[i] : -1;
    for (int i = 0; i < PF_IR_MAX_OUTPUTS; i++) n->out[i] = i < n_out ? out[i] : -1;
    if (attr) n->attr = *attr;
    for (int i = 0; i < n_in; i++)
        if (in[i] >= 0) g->values[in[i]].n_uses++;
    for (int i = 0; i < n_out; i++) g->values[out[i]].producer = g->n_nodes;
    if (node_id) *node_id = g->n_nodes;
    g->n_nodes++;
    return PF_OK;
}

static pf_status append_id(int **arr, int *n, int v)
{
    int *p = realloc(*arr, sizeof(int) * (size_t)(*n + 1));
    if (!p) return PF_ERR_NOMEM;
    p[*n] = v;
    *arr = p;
    (*n)++;
    return PF_OK;
}

pf_status pf_ir_mark_input(pf_ir_graph *g, int value)
{
    if (!g || value < 0 || value >= g->n_values)
        return pf_set_error(PF_ERR_INVALID, "pf_ir_mark_input: bad value id %d", value);
    pf_ir_value *v = &g->values[value];
    if (v->is_input) return PF_OK;
    if (v->producer >= 0 || v->data)
        return pf_set_error(PF_ERR_FORMAT,
                            "pf_ir_mark_input: value '%s' is produced by a node or constant",
                            v->name);
    if (append_id(&g->inputs, &g->n_inputs, value) != PF_OK) return nomem("pf_ir_mark_input");
    v->is_input = true;
    return PF_OK;
}

pf_status pf_ir_mark_output(pf_ir_graph *g, int value)
{
    if (!g || value < 0 || value >= g->n_values)
        return pf_set_error(PF_ERR_INVALID, "pf_ir_mark_output: bad value id %d", value);
    if (append_id(&g->outputs, &g->n_outputs, value) != PF_OK) return nomem("pf_ir_mark_output");
    g->values[value].is_output = true;
    g->values[value].n_uses++;
    return PF_OK;
}

void pf_ir_recount(pf_ir_graph *g)
{
    if (!g) return;
    for (int i = 0; i < g->n_values; i++) {
        g->values[i].producer = -1;
        g->values[i].n_uses = 0;
    }
    for (int k = 0; k < g->n_nodes; k++) {
        const pf_ir_node *n = &g->nodes[k];
        if (n->dead) continue;
        for (int i = 0; i < n->n_in; i++)
            if (n->in[i] >= 0 && n->in[i] < g->n_values) g->values[n->in[i]].n_uses++;
        for (int i = 0; i < n->n_out; i++)
            if (n->out[i] >= 0 && n->out[i] < g->n_values) g->values[n->out[i]].producer = k;
    }
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] >= 0 && g->outputs[i] < g->n_values) g->values[g->outputs[i]].n_uses++;
}

pf_status pf_ir_compact(pf_ir_graph *g)
{
    if (!g) return pf_set_error(PF_ERR_INVALID, "pf_ir_compact: graph is NULL");
    int *remap = malloc(sizeof(int) * (size_t)(g->n_values + 1));
    char *keep = calloc((size_t)g->n_values + 1, 1);
    if (!remap || !keep) {
        free(remap);
        free(keep);
        return nomem("pf_ir_compact");
    }
    for (int i = 0; i < g->n_values; i++)
        keep[i] = g->values[i].is_input || g->values[i].is_output;
    for (int k = 0; k < g->n_nodes; k++) {
        const pf_ir_node *n = &g->nodes[k];
        if (n->dead) continue;
        for (int i = 0; i < n->n_in; i++)
            if (n->in[i] >= 0) keep[n->in[i]] = 1;
        for (int i = 0; i < n->n_out; i++) keep[n->out[i]] = 1;
    }
    for (int i = 0; i < g->n_outputs; i++) keep[g->outputs[i]] = 1;
    for (int i = 0; i < g->n_inputs; i++) keep[g->inputs[i]] = 1;
    int nv = 0;
    for (int i = 0; i < g->n_values; i++) {
        if (keep[i]) {
            remap[i] = nv;
            if (nv != i) g->values[nv] = g->values[i];
            nv++;
        } else {
            remap[i] = -1;
            free_value(&g->values[i]);
        }
    }
    int nn = 0;
    for (int k = 0; k < g->n_nodes; k++) {
        if (g->nodes[k].dead) {
            free_node(&g->nodes[k]);
            continue;
        }
        if (nn != k) g->nodes[nn] = g->nodes[k];
        pf_ir_node *n = &g->nodes[nn];
        for (int i = 0; i < n->n_in; i++)
            if (n->in[i] >= 0) n->in[i] = remap[n->in[i]];
        for (int i = 0; i < n->n_out; i++) n->out[i] = remap[n->out[i]];
        nn++;
    }
    for (int i = 0; i < g->n_inputs; i++) g->inputs[i] = remap[g->inputs[i]];
    for (int i = 0; i < g->n_outputs; i++) g->outputs[i] = remap[g->outputs[i]];
    g->n_values = nv;
    g->n_nodes = nn;
    ((ir_graph_priv *)g)->cap_index = 0; /* ids moved: rebuild the name index on next lookup */
    free(remap);
    free(keep);
    pf_ir_recount(g);
    return PF_OK;
}

/* Input/output arity per op: computed "must be constant" inputs stay at
 * their ONNX positions until folding moves them into attrs. */
static void arity(pf_ir_op op, int *min_in, int *max_in, int *max_out)
{
    *max_out = 1;
    switch (op) {
    case PF_IR_CONV: case PF_IR_CONV_TRANSPOSE: case PF_IR_GEMM: *min_in = 2; *max_in = 3; return;
    case PF_IR_BATCHNORM: *min_in = 5; *max_in = 5; return;
    case PF_IR_CLIP: case PF_IR_PAD: *min_in = 1; *max_in = 3; return;
    case PF_IR_ADD: case PF_IR_SUB: case PF_IR_MUL: case PF_IR_DIV: case PF_IR_POW:
    case PF_IR_MAX: case PF_IR_MIN: case PF_IR_MOD: case PF_IR_PRELU: case PF_IR_EQUAL:
    case PF_IR_LESS: case PF_IR_GREATER: case PF_IR_LESS_OR_EQUAL: case PF_IR_GREATER_OR_EQUAL:
    case PF_IR_AND: case PF_IR_OR: case PF_IR_XOR: case PF_IR_GATHER: case PF_IR_MATMUL:
        *min_in = 2; *max_in = 2; return;
    case PF_IR_WHERE: *min_in = 3; *max_in = 3; return;
    case PF_IR_SUM: case PF_IR_MEAN_N: case PF_IR_CONCAT:
        *min_in = 1; *max_in = PF_IR_MAX_INPUTS; return;
    case PF_IR_RESHAPE: case PF_IR_EXPAND: case PF_IR_TILE:
    case PF_IR_REDUCE_MEAN: case PF_IR_REDUCE_SUM: case PF_IR_REDUCE_MAX: case PF_IR_REDUCE_MIN:
    case PF_IR_REDUCE_PROD: case PF_IR_REDUCE_L2: case PF_IR_REDUCE_SUM_SQUARE:
        *min_in = 1; *max_in = 2; return;
    case PF_IR_SPLIT: *min_in = 1; *max_in = 2; *max_out = PF_IR_MAX_OUTPUTS; return;
    case PF_IR_SLICE: *min_in = 1; *max_in = 5; return;
    case PF_IR_RESIZE: *min_in = 1; *max_in = 4; return;
    case PF_IR_QUANTIZE_LINEAR: case PF_IR_DEQUANTIZE_LINEAR: *min_in = 2; *max_in = 3; return;
    case PF_IR_QLINEAR_CONV: *min_in = 8; *max_in = 9; return;
    case PF_IR_QLINEAR_MATMUL: *min_in = 8; *max_in = 8; return;
    case PF_IR_CONV_INTEGER: case PF_IR_MATMUL_INTEGER: *min_in = 2; *max_in = 4; return;
    case PF_IR_QCONV: *min_in = 5; *max_in = 14; return;
    case PF_IR_QMATMUL: *min_in = 5; *max_in = 9; return;
    default: *min_in = 1; *max_in = 1; return;
    }
}

pf_status pf_ir_validate(const pf_ir_graph *g)
{
    char d[192];
    if (!g) return pf_set_error(PF_ERR_INVALID, "pf_ir_validate: graph is NULL");
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] < 0 || g->inputs[i] >= g->n_values)
            return pf_set_error(PF_ERR_FORMAT, "%s: graph input %d has bad id %d", g->name, i,
                                g->inputs[i]);
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] < 0 || g->outputs[i] >= g->n_values)
            return pf_set_error(PF_ERR_FORMAT, "%s: graph output %d has bad id %d", g->name, i,
                                g->outputs[i]);
    int *prod = malloc(sizeof(int) * (size_t)(g->n_values + 1));
    if (!prod) return nomem("pf_ir_validate");
    for (int i = 0; i < g->n_values; i++) prod[i] = -1;
    pf_status st = PF_OK;
    for (int k = 0; k < g->n_nodes && st == PF_OK; k++) {
        const pf_ir_node *n = &g->nodes[k];
        if (n->dead) continue;
        pf_ir_node_desc(g, k, d, sizeof d);
        if (n->op <= PF_IR_OP_INVALID || n->op >= PF_IR_OP_COUNT) {
            st = pf_set_error(PF_ERR_FORMAT, "%s: bad op %d", d, (int)n->op);
            break;
        }
        int min_in, max_in, max_out;
        arity(n->op, &min_in, &max_in, &max_out);
        if (n->n_in < min_in || n->n_in > max_in || n->n_out < 1 || n->n_out > max_out) {
            st = pf_set_error(PF_ERR_FORMAT, "%s: %d inputs, %d outputs (expects %d..%d in, "
                              "1..%d out)", d, n->n_in, n->n_out, min_in, max_in, max_out);
            break;
        }
        for (int i = 0; i < n->n_in; i++) {
            int v = n->in[i];
            if (v == -1) {
                if (i < min_in) {
                    st = pf_set_error(PF_ERR_FORMAT, "%s: required input %d is absent", d, i);
                    break;
                }
                continue;
            }
            if (v < 0 || v >= g->n_values) {
                st = pf_set_error(PF_ERR_FORMAT, "%s: input %d has bad id %d", d, i, v);
                break;
            }
            const pf_ir_value *val = &g->values[v];
            if (!val->data && !val->is_input && prod[v] < 0) {
                st = pf_set_error(PF_ERR_FORMAT,
                                  "%s: input %d '%s' is not produced by an earlier node "
                                  "(not topologically ordered, or dangling)",
                                  d, i, val->name);
                break;
            }
        }
        for (int i = 0; i < n->n_out && st == PF_OK; i++) {
            int v = n->out[i];
            if (v < 0 || v >= g->n_values) {
                st = pf_set_error(PF_ERR_FORMAT, "%s: output %d has bad id %d", d, i, v);
                break;
            }
            const pf_ir_value *val = &g->values[v];
            if (prod[v] >= 0 || val->data || val->is_input) {
                st = pf_set_error(PF_ERR_FORMAT,
                                  "%s: output '%s' already produced (or a constant/input)", d,
                                  val->name);
                break;
            }
            prod[v] = k;
        }
    }
    for (int i = 0; i < g->n_outputs && st == PF_OK; i++) {
        const pf_ir_value *v = &g->values[g->outputs[i]];
        if (!v->data && !v->is_input && prod[g->outputs[i]] < 0)
            st = pf_set_error(PF_ERR_FORMAT, "%s: graph output '%s' has no producer", g->name,
                              v->name);
    }
    free(prod);
    return st;
}

int64_t pf_ir_value_numel(const pf_ir_value *v)
{
    if (!v || v->ndim < 0) return -1;
    int64_t n = 1;
    for (int i = 0; i < v->ndim; i++) {
        int64_t d = v->dims[i];
        if (d < 0) return -1;
        if (d && n > INT64_MAX / d) return -1;
        n *= d;
    }
    return n;
}

size_t pf_ir_value_nbytes(const pf_ir_value *v)
{
    int64_t n = pf_ir_value_numel(v);
    size_t es = v ? pf_ir_dtype_size(v->dtype) : 0;
    if (n < 0 || !es) return 0;
    if ((uint64_t)n > SIZE_MAX / es) return 0;
    return (size_t)n * es;
}

const char *pf_ir_node_desc(const pf_ir_graph *g, int node, char *buf, size_t size)
{
    if (!buf || !size) return "";
    if (!g || node < 0 || node >= g->n_nodes) {
        snprintf(buf, size, "node %d", node);
        return buf;
    }
    const pf_ir_node *n = &g->nodes[node];
    const char *src = n->src_op && n->src_op[0] ? n->src_op : pf_ir_op_name(n->op);
    snprintf(buf, size, "node %d '%s' (%s)", node, n->name ? n->name : "", src);
    return buf;
}
