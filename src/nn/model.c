/* pf_model: loading (format by content), import, the symbolic graph's passes,
 * I/O lists, the summary, and per-batch graphs for the executors.
 *
 * Design
 * - The file's format is decided from its bytes: a FlatBuffer with the TFLite
 *   file identifier "TFL3" at bytes 4..7 is TFLite, anything else goes to the
 *   ONNX reader (a protobuf has no magic number). Readers keep the path for
 *   their messages; the model keeps it too, so every later error (shape
 *   inference at a batch size, a kernel refusing a node) can name the file.
 * - pf_ir_optimize runs once on the symbolic graph at load. Executors ask for
 *   a specialised copy per batch size (pf_model_graph_for_batch), which is
 *   optimised again: with concrete shapes more folds (Shape -> Gather ->
 *   Concat chains) become possible.
 * - The summary needs the batch-1 graph (FLOPs, arena). Computing it costs a
 *   specialisation, which `inspect` wants but a pipeline loading a model does
 *   not, so it is computed on first request and cached under a mutex.
 * - The model is refcounted with an atomic counter: pf_model_free drops the
 *   user's reference and executors hold their own.
 * - TFLite files usually fix the batch at 1 without a shape_signature, which
 *   would make executors run one frame at a time. When every input has dim
 *   0 == 1 and there is no batch symbol, the file is imported a second time
 *   with that 1 taken as the symbolic batch (try_symbolic_batch); the copy
 *   is kept only if it specialises at batch 2 and 3 with dim 0 of every
 *   output equal to the batch, so a model whose dim 0 is not a batch (or
 *   that reshapes it away) stays fixed at 1.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/error.h"
#include "../core/hash.h"
#include "../core/sys.h"
#include "import.h"
#include "model.h"
#include "onnx_reader.h"
#include "tflite_import_priv.h"
#include "tflite_reader.h"

typedef struct model_op_count {
    char *op;
    int count;
} model_op_count;

struct pf_model {
    atomic_int refs;
    pf_model_format format;
    char *name;
    pf_ir_graph *graph;            /* symbolic, optimised */
    pf_ir_opt_report load_report;
    int opset;
    int n_nodes_source;
    model_op_count *ops;           /* source op histogram, in first-seen order */
    int n_ops;
    pf_model_io *inputs, *outputs;
    int n_inputs, n_outputs;
    bool symbolic;
    int64_t fixed_batch;
    uint64_t content_hash;         /* of the loaded bytes; 0 = built from a graph */

    pf_mutex lock;                 /* guards the lazily computed summary */
    bool have_summary;
    pf_status summary_status;
    char *summary_error;
    pf_model_summary summary;
};

static char *model_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* --- source op histogram ---------------------------------------------------------- */

static pf_status count_op(pf_model *m, const char *op)
{
    for (int i = 0; i < m->n_ops; i++)
        if (!strcmp(m->ops[i].op, op)) {
            m->ops[i].count++;
            return PF_OK;
        }
    model_op_count *n = realloc(m->ops, (size_t)(m->n_ops + 1) * sizeof *n);
    if (!n) return pf_set_error(PF_ERR_NOMEM, "%s: out of memory", m->name);
    m->ops = n;
    m->ops[m->n_ops].op = model_strdup(op);
    if (!m->ops[m->n_ops].op) return pf_set_error(PF_ERR_NOMEM, "%s: out of memory", m->name);
    m->ops[m->n_ops].count = 1;
    m->n_ops++;
    return PF_OK;
}

static pf_status histogram_onnx(pf_model *m, const pf_onnx_model *o)
{
    char buf[256];
    for (size_t i = 0; i < o->n_nodes; i++) {
        const pf_onnx_node *n = &o->nodes[i];
        if (n->domain[0])
            snprintf(buf, sizeof buf, "%s.%s", n->domain, n->op_type);
        else
            snprintf(buf, sizeof buf, "%s", n->op_type);
        pf_status st = count_op(m, buf);
        if (st) return st;
    }
    m->n_nodes_source = (int)o->n_nodes;
    return PF_OK;
}

static pf_status histogram_tflite(pf_model *m, const pf_tflite *t)
{
    if (t->n_subgraphs < 1) return PF_OK;
    const pf_tfl_subgraph *g = &t->subgraphs[0];
    for (int32_t i = 0; i < g->n_operators; i++) {
        const pf_tfl_operator *op = &g->operators[i];
        const char *name = op->custom_code ? op->custom_code : pf_tfl_builtin_name(op->builtin);
        pf_status st = count_op(m, name ? name : "?");
        if (st) return st;
    }
    m->n_nodes_source = g->n_operators;
    return PF_OK;
}

/* --- I/O lists ---------------------------------------------------------------------- */

static pf_dtype public_dtype(pf_ir_dtype t)
{
    switch (t) {
    case PF_IR_I64: case PF_IR_I32: case PF_IR_I8: return PF_DTYPE_I32;
    case PF_IR_U8: case PF_IR_BOOL: return PF_DTYPE_U8;
    default: return PF_DTYPE_F32; /* F32, F16, F64: exchanged as F32 (or F16) */
    }
}

static void fill_io(const pf_model *m, const pf_ir_value *v, pf_model_io *io)
{
    memset(io, 0, sizeof *io);
    io->name = v->name;
    io->dtype = public_dtype(v->dtype);
    io->ndim = v->ndim < 0 ? 0 : v->ndim;
    if (io->ndim > PF_NN_MAX_DIMS) io->ndim = PF_NN_MAX_DIMS;
    for (int d = 0; d < io->ndim; d++) io->shape[d] = v->dims[d] < 0 ? -1 : v->dims[d];
    if (io->ndim == 4 && io->dtype == PF_DTYPE_F32)
        io->layout = m->format == PF_MODEL_TFLITE ? PF_LAYOUT_NHWC : PF_LAYOUT_NCHW;
}

/* Outputs whose shape the symbolic graph leaves unknown (shape inference
 * stops at ops whose rule needs concrete dims) are described from the
 * graphs specialised at batch 1 and 2: a dim that differs is the batch. */
static void fill_unknown_outputs(pf_model *m)
{
    bool any = false;
    for (int i = 0; i < m->n_outputs; i++)
        if (m->graph->values[m->graph->outputs[i]].ndim < 0) any = true;
    if (!any) return;
    pf_ir_graph *g1 = NULL, *g2 = NULL;
    int64_t b1 = m->symbolic ? 1 : m->fixed_batch;
    if (pf_model_graph_for_batch(m, b1, &g1) != PF_OK) goto out;
    if (m->symbolic && pf_model_graph_for_batch(m, 2, &g2) != PF_OK) goto out;
    for (int i = 0; i < m->n_outputs; i++) {
        if (m->graph->values[m->graph->outputs[i]].ndim >= 0) continue;
        if (i >= g1->n_outputs) break;
        const pf_ir_value *v1 = &g1->values[g1->outputs[i]];
        fill_io(m, v1, &m->outputs[i]);
        m->outputs[i].name = m->graph->values[m->graph->outputs[i]].name;
        if (g2 && i < g2->n_outputs) {
            const pf_ir_value *v2 = &g2->values[g2->outputs[i]];
            for (int d = 0; d < m->outputs[i].ndim && d < v2->ndim; d++)
                if (v2->dims[d] != v1->dims[d]) m->outputs[i].shape[d] = -1;
        }
    }
out:
    pf_clear_error();
    pf_ir_graph_destroy(&g1);
    pf_ir_graph_destroy(&g2);
}

static pf_status build_io(pf_model *m)
{
    const pf_ir_graph *g = m->graph;
    m->n_inputs = g->n_inputs;
    m->n_outputs = g->n_outputs;
    m->inputs = calloc((size_t)(g->n_inputs ? g->n_inputs : 1), sizeof *m->inputs);
    m->outputs = calloc((size_t)(g->n_outputs ? g->n_outputs : 1), sizeof *m->outputs);
    if (!m->inputs || !m->outputs) return pf_set_error(PF_ERR_NOMEM, "%s: out of memory", m->name);
    m->symbolic = false;
    m->fixed_batch = -1;
    for (int i = 0; i < g->n_inputs; i++) {
        const pf_ir_value *v = &g->values[g->inputs[i]];
        for (int d = 0; d < v->ndim; d++)
            if (v->dims[d] == PF_IR_DIM_BATCH) m->symbolic = true;
        if (m->fixed_batch < 0 && v->ndim >= 1 && v->dims[0] >= 0) m->fixed_batch = v->dims[0];
        fill_io(m, v, &m->inputs[i]);
    }
    if (m->fixed_batch < 0) m->fixed_batch = 1;
    for (int i = 0; i < g->n_outputs; i++) fill_io(m, &g->values[g->outputs[i]], &m->outputs[i]);
    fill_unknown_outputs(m);
    return PF_OK;
}

/* --- loading ------------------------------------------------------------------------ */

static pf_status model_new(const char *name, pf_model_format fmt, pf_model **out)
{
    pf_model *m = calloc(1, sizeof *m);
    if (!m) return pf_set_error(PF_ERR_NOMEM, "%s: out of memory", name);
    atomic_init(&m->refs, 1);
    m->format = fmt;
    m->name = model_strdup(name);
    pf_mutex_init(&m->lock);
    *out = m;
    if (!m->name) return pf_set_error(PF_ERR_NOMEM, "%s: out of memory", name);
    return PF_OK;
}

/* Import is done; optimise and describe. */
static pf_status model_finish(pf_model *m)
{
    pf_status st = pf_ir_optimize(m->graph, &m->load_report);
    if (st) return st;
    return build_io(m);
}

/* True when the graph has inputs, none symbolic, and each has dim 0 == 1. */
static bool fixed_batch_one(const pf_ir_graph *g)
{
    if (g->batch_symbol || g->n_inputs < 1) return false;
    for (int i = 0; i < g->n_inputs; i++) {
        const pf_ir_value *v = &g->values[g->inputs[i]];
        if (v->ndim < 1 || v->dims[0] != 1) return false;
    }
    return true;
}

/* The batch-symbolic candidate is accepted when it specialises at `batch`
 * and every graph output's dim 0 is the batch. */
static bool batches_to(const pf_ir_graph *g, int64_t batch)
{
    pf_ir_graph *s = NULL;
    bool ok = pf_ir_specialize(g, batch, &s) == PF_OK;
    for (int i = 0; ok && i < s->n_outputs; i++) {
        const pf_ir_value *v = &s->values[s->outputs[i]];
        ok = v->ndim >= 1 && v->dims[0] == batch;
    }
    pf_ir_graph_destroy(&s);
    return ok;
}

/* Replaces m->graph (fixed batch 1, not yet optimised) by the optimised
 * batch-symbolic import of `t` when that one is valid; otherwise leaves
 * the model as it is. *done tells whether the passes have run. A failure of
 * the candidate is not an error: the fixed graph is still good. */
static pf_status try_symbolic_batch(pf_model *m, const pf_tflite *t, bool *done)
{
    *done = false;
    if (!fixed_batch_one(m->graph)) return PF_OK;
    pf_ir_graph *g = NULL;
    pf_ir_opt_report rep;
    memset(&rep, 0, sizeof rep);
    bool ok = pf_ir_from_tflite_batched(t, &g) == PF_OK && g->batch_symbol &&
              pf_ir_optimize(g, &rep) == PF_OK && batches_to(g, 2) && batches_to(g, 3);
    if (!ok) {
        PF_LOGD("%s: the fixed batch of 1 stays (a symbolic batch does not specialise: %s)",
                m->name, pf_last_error());
        pf_clear_error();
        pf_ir_graph_destroy(&g);
        return PF_OK;
    }
    pf_ir_graph_destroy(&m->graph);
    m->graph = g;
    m->load_report = rep;
    *done = true;
    return PF_OK;
}

static bool is_tflite(const unsigned char *head, size_t n)
{
    return n >= 8 && !memcmp(head + 4, "TFL3", 4);
}

/* pf_hash64 of a file's bytes (mapped, not copied); 0 when it cannot be
 * read (the plan cache is then not used for the model). */
static uint64_t hash_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat sb;
    uint64_t h = 0;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) {
        void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            h = pf_hash64(p, (size_t)sb.st_size, 0);
            if (!h) h = 1; /* 0 means "no hash" */
            munmap(p, (size_t)sb.st_size);
        }
    }
    close(fd);
    return h;
}

uint64_t pf_model_content_hash(const pf_model *m) { return m ? m->content_hash : 0; }

static pf_status load_common(const char *path, const void *data, size_t size, const char *name,
                             pf_model **out)
{
    unsigned char head[8] = {0};
    size_t nhead = 0;
    if (path) {
        FILE *f = fopen(path, "rb");
        if (!f) return pf_set_error(PF_ERR_IO, "%s: cannot open the model file", path);
        nhead = fread(head, 1, sizeof head, f);
        fclose(f);
    } else {
        nhead = size < sizeof head ? size : sizeof head;
        if (nhead) memcpy(head, data, nhead);
    }
    pf_model_format fmt = is_tflite(head, nhead) ? PF_MODEL_TFLITE : PF_MODEL_ONNX;
    pf_model *m = NULL;
    pf_status st = model_new(name, fmt, &m);
    bool optimised = false;
    if (st) goto fail;
    if (fmt == PF_MODEL_TFLITE) {
        pf_tflite *t = NULL;
        st = path ? pf_tflite_open(path, &t) : pf_tflite_open_memory(data, size, name, &t);
        if (st == PF_OK) st = histogram_tflite(m, t);
        if (st == PF_OK) st = pf_ir_from_tflite(t, &m->graph);
        if (st == PF_OK && m->graph) st = try_symbolic_batch(m, t, &optimised);
        pf_tflite_close(&t);
    } else {
        pf_onnx_model *o = NULL;
        st = path ? pf_onnx_open(path, &o) : pf_onnx_open_memory(data, size, name, &o);
        if (st == PF_OK) {
            m->opset = (int)o->opset;
            st = histogram_onnx(m, o);
        }
        if (st == PF_OK) st = pf_ir_from_onnx(o, &m->graph);
        pf_onnx_close(&o);
    }
    if (st == PF_OK && !m->graph)
        st = pf_set_error(PF_ERR_INTERNAL, "%s: the importer returned no graph", name);
    if (st == PF_OK) st = optimised ? build_io(m) : model_finish(m);
    if (st) goto fail;
    m->content_hash = path ? hash_file(path) : pf_hash64(data, size, 0) | 1;
    *out = m;
    return PF_OK;
fail:
    pf_model_unref(&m);
    /* Errors from shape inference and the passes name the node and value;
     * the user also needs the file. */
    if (!strstr(pf_last_error(), name)) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", pf_last_error());
        pf_set_error(st, "%s: %s", name, msg);
    }
    return st;
}

pf_status pf_model_load(const char *path, pf_model **out)
{
    PF_CHECK_ARG(out, "pf_model_load", "NULL out");
    *out = NULL;
    PF_CHECK_ARG(path && *path, "pf_model_load", "NULL or empty path");
    return load_common(path, NULL, 0, path, out);
}

pf_status pf_model_load_memory(const void *data, size_t size, const char *name, pf_model **out)
{
    PF_CHECK_ARG(out, "pf_model_load_memory", "NULL out");
    *out = NULL;
    PF_CHECK_ARG(data || size == 0, "pf_model_load_memory", "NULL data");
    return load_common(NULL, data, size, name ? name : "<memory>", out);
}

pf_status pf_model_from_graph(pf_ir_graph *g, pf_model **out)
{
    if (!out) {
        pf_ir_graph_destroy(&g);
        return pf_set_error(PF_ERR_INVALID, "pf_model_from_graph: NULL out");
    }
    *out = NULL;
    if (!g) return pf_set_error(PF_ERR_INVALID, "pf_model_from_graph: NULL graph");
    pf_model *m = NULL;
    pf_status st = model_new(g->name ? g->name : "<graph>", PF_MODEL_ONNX, &m);
    if (st) {
        pf_ir_graph_destroy(&g);
        pf_model_unref(&m);
        return st;
    }
    m->graph = g;
    m->opset = g->opset;
    for (int i = 0; i < g->n_nodes && st == PF_OK; i++)
        st = count_op(m, g->nodes[i].src_op && g->nodes[i].src_op[0] ? g->nodes[i].src_op
                                                                    : pf_ir_op_name(g->nodes[i].op));
    m->n_nodes_source = g->n_nodes;
    if (st == PF_OK) st = model_finish(m);
    if (st) {
        pf_model_unref(&m);
        return st;
    }
    *out = m;
    return PF_OK;
}

/* --- lifetime ----------------------------------------------------------------------- */

pf_model *pf_model_ref(pf_model *m)
{
    if (m) atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
    return m;
}

void pf_model_unref(pf_model **pm)
{
    if (!pm || !*pm) return;
    pf_model *m = *pm;
    *pm = NULL;
    if (atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) != 1) return;
    pf_ir_graph_destroy(&m->graph);
    for (int i = 0; i < m->n_ops; i++) free(m->ops[i].op);
    free(m->ops);
    free(m->inputs);
    free(m->outputs);
    free(m->summary_error);
    pf_mutex_destroy(&m->lock);
    free(m->name);
    free(m);
}

void pf_model_free(pf_model **m) { pf_model_unref(m); }

/* --- accessors ---------------------------------------------------------------------- */

const pf_ir_graph *pf_model_graph(const pf_model *m) { return m->graph; }
const char *pf_model_name(const pf_model *m) { return m->name; }
bool pf_model_has_symbolic_batch(const pf_model *m) { return m->symbolic; }
int64_t pf_model_fixed_batch(const pf_model *m) { return m->fixed_batch; }

pf_model_format pf_model_get_format(const pf_model *m) { return m ? m->format : (pf_model_format)0; }
int pf_model_num_inputs(const pf_model *m) { return m ? m->n_inputs : 0; }
int pf_model_num_outputs(const pf_model *m) { return m ? m->n_outputs : 0; }

static pf_model_io io_none(void)
{
    pf_model_io io;
    memset(&io, 0, sizeof io);
    io.name = "";
    return io;
}

pf_model_io pf_model_input(const pf_model *m, int i)
{
    return m && i >= 0 && i < m->n_inputs ? m->inputs[i] : io_none();
}

pf_model_io pf_model_output(const pf_model *m, int i)
{
    return m && i >= 0 && i < m->n_outputs ? m->outputs[i] : io_none();
}

int pf_model_find_input(const pf_model *m, const char *name)
{
    if (!m || !name) return -1;
    for (int i = 0; i < m->n_inputs; i++)
        if (!strcmp(m->inputs[i].name, name)) return i;
    return -1;
}

int pf_model_find_output(const pf_model *m, const char *name)
{
    if (!m || !name) return -1;
    for (int i = 0; i < m->n_outputs; i++)
        if (!strcmp(m->outputs[i].name, name)) return i;
    return -1;
}

/* --- per-batch graphs --------------------------------------------------------------- */

pf_status pf_model_graph_for_batch_report(pf_model *m, int64_t batch, pf_ir_graph **out,
                                          pf_ir_opt_report *report)
{
    PF_CHECK_ARG(m && out, "pf_model_graph_for_batch", "NULL argument");
    *out = NULL;
    if (report) memset(report, 0, sizeof *report);
    if (m->symbolic && batch < 1)
        return pf_set_error(PF_ERR_INVALID, "%s: batch %lld out of range (>= 1)", m->name,
                            (long long)batch);
    if (!m->symbolic && batch != m->fixed_batch)
        return pf_set_error(PF_ERR_INVALID,
                            "%s: the model has a fixed batch of %lld; batch %lld asked for",
                            m->name, (long long)m->fixed_batch, (long long)batch);
    /* pf_ir_specialize wants batch >= 1; a fixed model has no symbolic dim
     * for it to set, so any value works (its inputs may have dim 0 == 0). */
    pf_ir_graph *g = NULL;
    pf_status st = pf_ir_specialize(m->graph, batch >= 1 ? batch : 1, &g);
    if (st) return st;
    pf_ir_opt_report rep;
    memset(&rep, 0, sizeof rep);
    st = pf_ir_optimize(g, &rep);
    if (st) {
        pf_ir_graph_destroy(&g);
        return st;
    }
    if (report) *report = rep;
    *out = g;
    return PF_OK;
}

pf_status pf_model_graph_for_batch(pf_model *m, int64_t batch, pf_ir_graph **out)
{
    return pf_model_graph_for_batch_report(m, batch, out, NULL);
}

/* --- frozen inputs ------------------------------------------------------------------- */

/* The operands pf_ir_specialize refuses when not constant (see nn.h). */
static bool is_value_operand(const pf_ir_node *n, int slot)
{
    switch (n->op) {
    case PF_IR_CONSTANT_OF_SHAPE: return slot == 0;
    case PF_IR_RESHAPE: case PF_IR_EXPAND: case PF_IR_TILE: case PF_IR_SLICE: case PF_IR_PAD:
    case PF_IR_RESIZE: case PF_IR_CLIP: case PF_IR_SPLIT: case PF_IR_REDUCE_MEAN:
    case PF_IR_REDUCE_SUM: case PF_IR_REDUCE_MAX: case PF_IR_REDUCE_MIN: case PF_IR_REDUCE_PROD:
    case PF_IR_REDUCE_L2: case PF_IR_REDUCE_SUM_SQUARE:
        return slot >= 1;
    default: return false;
    }
}

bool pf_model_input_needs_value(const pf_model *m, int i)
{
    if (!m || i < 0 || i >= m->n_inputs) return false;
    const pf_ir_graph *g = m->graph;
    int vid = g->inputs[i];
    for (int k = 0; k < g->n_nodes; k++) {
        const pf_ir_node *n = &g->nodes[k];
        if (n->dead) continue;
        for (int s = 0; s < n->n_in; s++)
            if (n->in[s] == vid && is_value_operand(n, s)) return true;
    }
    return false;
}

/* The tensor's elements in the graph value's dtype (malloc'd). */
static pf_status frozen_data(const pf_model *m, const pf_ir_value *v, const pf_tensor *t,
                             void **out, size_t *nbytes)
{
    int64_t n = pf_tensor_numel(t);
    size_t es = pf_ir_dtype_size(v->dtype);
    bool fv = v->dtype == PF_IR_F32 || v->dtype == PF_IR_F16 || v->dtype == PF_IR_F64;
    bool iv = v->dtype == PF_IR_I64 || v->dtype == PF_IR_I32 || v->dtype == PF_IR_I8;
    bool ok = (fv && (t->dtype == PF_DTYPE_F32 || t->dtype == PF_DTYPE_F16)) ||
              (iv && t->dtype == PF_DTYPE_I32) ||
              ((v->dtype == PF_IR_U8 || v->dtype == PF_IR_BOOL) && t->dtype == PF_DTYPE_U8);
    if (!ok || !es)
        return pf_set_error(PF_ERR_INVALID, "%s: frozen input '%s': a %s value for a %s input",
                            m->name, v->name, pf_dtype_name(t->dtype), pf_ir_dtype_name(v->dtype));
    *nbytes = (size_t)n * es;
    unsigned char *d = malloc(*nbytes ? *nbytes : 1);
    if (!d) return pf_set_error(PF_ERR_NOMEM, "%s: out of memory", m->name);
    for (int64_t i = 0; i < n; i++) {
        double x = 0;
        int64_t k = 0;
        switch (t->dtype) {
        case PF_DTYPE_F32: x = ((const float *)t->data)[i]; break;
        case PF_DTYPE_F16: x = pf_f16_to_f32(((const uint16_t *)t->data)[i]); break;
        case PF_DTYPE_I32: k = ((const int32_t *)t->data)[i]; break;
        default: k = ((const uint8_t *)t->data)[i]; break;
        }
        switch (v->dtype) {
        case PF_IR_F32: ((float *)d)[i] = (float)x; break;
        case PF_IR_F16: ((uint16_t *)d)[i] = pf_f32_to_f16((float)x); break;
        case PF_IR_F64: ((double *)d)[i] = x; break;
        case PF_IR_I64: ((int64_t *)d)[i] = k; break;
        case PF_IR_I32: ((int32_t *)d)[i] = (int32_t)k; break;
        case PF_IR_I8:
            if (k < INT8_MIN || k > INT8_MAX) {
                free(d);
                return pf_set_error(PF_ERR_INVALID, "%s: frozen input '%s': element %lld is "
                                    "%lld, outside int8", m->name, v->name, (long long)i,
                                    (long long)k);
            }
            ((int8_t *)d)[i] = (int8_t)k;
            break;
        case PF_IR_BOOL: d[i] = k != 0; break;
        default: d[i] = (unsigned char)k; break;
        }
    }
    *out = d;
    return PF_OK;
}

pf_status pf_model_freeze_inputs(const pf_model *m, int n, const char *const *names,
                                 const pf_tensor *values, pf_model **out)
{
    PF_CHECK_ARG(out, "pf_model_freeze_inputs", "NULL out");
    *out = NULL;
    PF_CHECK_ARG(m && n >= 0 && (n == 0 || (names && values)), "pf_model_freeze_inputs",
                 "NULL argument");
    pf_ir_graph *g = NULL;
    pf_status st = pf_ir_graph_clone(m->graph, &g);
    if (st) return st;
    for (int k = 0; k < n && st == PF_OK; k++) {
        int idx = pf_model_find_input(m, names[k]);
        if (idx < 0) {
            st = pf_set_error(PF_ERR_INVALID, "%s: no input '%s' to freeze", m->name,
                              names[k] ? names[k] : "(null)");
            break;
        }
        pf_ir_value *v = &g->values[g->inputs[idx]];
        const pf_tensor *t = &values[k];
        if (!v->is_input) {
            st = pf_set_error(PF_ERR_INVALID, "%s: input '%s' frozen twice", m->name, v->name);
            break;
        }
        if (t->ndim != v->ndim || !pf_tensor_is_contiguous(t)) {
            st = pf_set_error(PF_ERR_INVALID, "%s: frozen input '%s': %d dims%s; the input has %d",
                              m->name, v->name, t->ndim,
                              pf_tensor_is_contiguous(t) ? "" : " (not contiguous)", v->ndim);
            break;
        }
        for (int d = 0; d < v->ndim && st == PF_OK; d++)
            if (v->dims[d] != PF_IR_DIM_BATCH && v->dims[d] != t->shape[d])
                st = pf_set_error(PF_ERR_INVALID, "%s: frozen input '%s': dim %d is %lld, the "
                                  "input needs %lld", m->name, v->name, d,
                                  (long long)t->shape[d], (long long)v->dims[d]);
        if (st) break;
        void *data = NULL;
        size_t nbytes = 0;
        st = frozen_data(m, v, t, &data, &nbytes);
        if (st) break;
        for (int d = 0; d < v->ndim; d++) v->dims[d] = t->shape[d];
        v->data = data;
        v->nbytes = nbytes;
        v->is_input = false;
    }
    if (st == PF_OK) {
        int w = 0;
        for (int i = 0; i < g->n_inputs; i++)
            if (g->values[g->inputs[i]].is_input) g->inputs[w++] = g->inputs[i];
        g->n_inputs = w;
        pf_ir_recount(g);
        st = pf_ir_infer_shapes(g);
    }
    pf_model *fm = NULL;
    if (st == PF_OK) st = model_new(m->name, m->format, &fm);
    if (st) {
        pf_ir_graph_destroy(&g);
        pf_model_unref(&fm);
        return st;
    }
    fm->graph = g;
    fm->opset = m->opset;
    fm->n_nodes_source = m->n_nodes_source;
    for (int i = 0; i < m->n_ops && st == PF_OK; i++)
        for (int c = 0; c < m->ops[i].count && st == PF_OK; c++) st = count_op(fm, m->ops[i].op);
    if (st == PF_OK) st = model_finish(fm);
    if (st) {
        pf_model_unref(&fm);
        return st;
    }
    *out = fm;
    return PF_OK;
}

/* --- summary ------------------------------------------------------------------------ */

static int64_t count_params(const pf_ir_graph *g)
{
    int64_t n = 0;
    for (int i = 0; i < g->n_values; i++) {
        const pf_ir_value *v = &g->values[i];
        if (!v->data) continue;
        if (v->dtype != PF_IR_F32 && v->dtype != PF_IR_F16 && v->dtype != PF_IR_F64) continue;
        int64_t k = pf_ir_value_numel(v);
        if (k > 0) n += k;
    }
    return n;
}

static pf_status compute_summary(pf_model *m, pf_model_summary *s)
{
    memset(s, 0, sizeof *s);
    s->format = m->format == PF_MODEL_TFLITE ? "tflite" : "onnx";
    s->opset = m->opset;
    s->n_nodes_source = m->n_nodes_source;
    s->folded = m->load_report.folded;
    s->bn_folded = m->load_report.bn_folded;
    s->act_fused = m->load_report.act_fused;
    s->removed = m->load_report.removed;
    for (int i = 0; i < m->n_ops && s->n_op_kinds < PF_MODEL_MAX_OP_KINDS; i++) {
        s->ops[s->n_op_kinds].op = m->ops[i].op;
        s->ops[s->n_op_kinds].count = m->ops[i].count;
        s->n_op_kinds++;
    }
    pf_ir_graph *g = NULL;
    pf_ir_opt_report rep;
    pf_status st = pf_model_graph_for_batch_report(m, m->symbolic ? 1 : m->fixed_batch, &g, &rep);
    if (st) return st;
    /* What the batch-1 specialisation folded on top of the load-time passes. */
    s->folded += rep.folded;
    s->bn_folded += rep.bn_folded;
    s->act_fused += rep.act_fused;
    s->removed += rep.removed;
    s->n_nodes = g->n_nodes;
    s->n_params = count_params(g);
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].dead) s->flops += pf_ir_node_flops(g, i);
    pf_ir_mem_plan mp;
    memset(&mp, 0, sizeof mp);
    st = pf_ir_plan_memory(g, 64, NULL, &mp);
    if (st == PF_OK) {
        s->arena_bytes = mp.arena_bytes;
        s->naive_bytes = mp.naive_bytes;
        pf_ir_mem_plan_free(&mp);
    }
    pf_ir_graph_destroy(&g);
    return st;
}

pf_status pf_model_get_summary(const pf_model *cm, pf_model_summary *out)
{
    PF_CHECK_ARG(cm && out, "pf_model_get_summary", "NULL argument");
    /* The cache is the only mutable part of a model; callers see it as const. */
    pf_model *m = (pf_model *)cm;
    pf_mutex_lock(&m->lock);
    if (!m->have_summary) {
        m->summary_status = compute_summary(m, &m->summary);
        if (m->summary_status) m->summary_error = model_strdup(pf_last_error());
        m->have_summary = true;
    }
    pf_status st = m->summary_status;
    if (st == PF_OK) *out = m->summary;
    pf_mutex_unlock(&m->lock);
    if (st) return pf_set_error(st, "%s", m->summary_error ? m->summary_error : "summary failed");
    return PF_OK;
}
