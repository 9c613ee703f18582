/* The CPU executor backend (pf_nn_backend_cpu).
 *
 * Design
 * - A plan is a specialised graph (owned by exec.c) plus everything a run
 *   needs, allocated once at plan time so a run never calls malloc:
 *   one 64-byte aligned arena laid out by pf_ir_plan_memory (liveness-based
 *   reuse of intermediate values), one scratch block as large as the
 *   greediest node asks for (pf_nn_cpu_scratch_bytes), and one staging block.
 * - Every value gets a pointer before the run: constants point at their data
 *   in the graph, intermediates into the arena, graph inputs and outputs at
 *   the caller's tensors, so inputs are read and outputs written in place.
 * - Staging. A caller tensor whose dtype is not the graph value's (F16
 *   tensors of an F32 model, I32 tensors of an I64 model, F32 of an F16 or
 *   F64 model, ...) goes through a staging buffer instead: inputs are
 *   converted into it before the first node, outputs converted out of it
 *   after the last. Which I/O may need staging is known from the graph
 *   dtypes alone (any float value may meet an F16 or F32 tensor, any I64/I8
 *   value always needs conversion), so the staging block is sized at plan
 *   time for all of them; pages never touched by a run (F32 tensors on an
 *   F32 model) cost address space only. Integer outputs narrowed to I32 are
 *   range-checked: a value outside int32 fails the run naming the output.
 * - Graph outputs that no node writes (a constant after folding, a graph
 *   input passed through, the same value listed twice) are copied after the
 *   run, so every output tensor is always written.
 * - The threadpool is the caller's (params->pool) or the executor's own with
 *   pf_cpu_count() threads; kernels split work on it themselves. A run is
 *   synchronous whatever the stream.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/error.h"
#include "../../core/sys.h"
#include "../backend.h"
#include "kernels.h"
#include "ndutil.h"

#define CPU_ALIGN 64

typedef struct cpu_ctx {
    pf_threadpool *pool;
    bool own_pool;
    size_t memory_cap;          /* params.memory_cap: arena + scratch + staging per plan */
} cpu_ctx;

typedef struct cpu_plan {
    const pf_ir_graph *g;
    int64_t batch;
    void *arena;
    size_t arena_bytes;
    void *scratch;
    size_t scratch_bytes;
    void *staging;
    size_t staging_bytes;
    size_t *stage_off;       /* per graph I/O slot (inputs then outputs); SIZE_MAX = none */
    void **ptrs;             /* per value */
    size_t weight_bytes;
} cpu_plan;

static pf_status cpu_ctx_create(const pf_nn_exec_params *p, void **out)
{
    cpu_ctx *c = calloc(1, sizeof *c);
    if (!c) return pf_set_error(PF_ERR_NOMEM, "nn cpu executor: out of memory");
    if (p) c->memory_cap = p->memory_cap;
    if (p && p->pool) {
        c->pool = p->pool;
    } else {
        pf_threadpool_params tp = pf_threadpool_params_default();
        tp.num_threads = pf_cpu_count();
        tp.name = "pf-nn";
        pf_status st = pf_threadpool_create(&tp, &c->pool);
        if (st) {
            free(c);
            return st;
        }
        c->own_pool = true;
    }
    *out = c;
    return PF_OK;
}

static void cpu_ctx_destroy(void *ctx)
{
    cpu_ctx *c = ctx;
    if (!c) return;
    if (c->own_pool) pf_threadpool_destroy(&c->pool);
    free(c);
}

static void cpu_plan_free(cpu_plan *p)
{
    if (!p) return;
    pf_aligned_free(p->arena);
    pf_aligned_free(p->scratch);
    pf_aligned_free(p->staging);
    free(p->stage_off);
    free(p->ptrs);
    free(p);
}

/* Whether graph I/O of this dtype may meet a caller tensor of another dtype
 * (see the staging note above). U8/BOOL tensors are byte-identical to U8
 * caller tensors; I32 to I32. */
static bool may_need_staging(pf_ir_dtype t)
{
    return t == PF_IR_F32 || t == PF_IR_F16 || t == PF_IR_F64 || t == PF_IR_I64 ||
           t == PF_IR_I8;
}

static size_t align_up(size_t n) { return (n + CPU_ALIGN - 1) & ~(size_t)(CPU_ALIGN - 1); }

static pf_status cpu_plan_create(void *ctx, const pf_ir_graph *g, int64_t batch, void **out)
{
    const cpu_ctx *c = ctx;
    const char *name = g->name ? g->name : "model";
    cpu_plan *p = calloc(1, sizeof *p);
    if (!p) return pf_set_error(PF_ERR_NOMEM, "%s: out of memory", name);
    p->g = g;
    p->batch = batch;
    pf_status st = PF_OK;
    char why[256], desc[192];

    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].dead) continue;
        why[0] = '\0';
        if (!pf_nn_cpu_supports(g, i, why, sizeof why)) {
            st = pf_set_error(PF_ERR_UNSUPPORTED, "%s: %s: not supported on the CPU: %s", name,
                              pf_ir_node_desc(g, i, desc, sizeof desc),
                              why[0] ? why : "no kernel");
            goto fail;
        }
        size_t s = pf_nn_cpu_scratch_bytes(g, i);
        if (s > p->scratch_bytes) p->scratch_bytes = s;
    }

    pf_ir_mem_plan mp;
    memset(&mp, 0, sizeof mp);
    st = pf_ir_plan_memory(g, CPU_ALIGN, NULL, &mp);
    if (st) goto fail;
    p->arena_bytes = mp.arena_bytes;
    /* I/O staging offsets (dtype conversions of the caller's tensors), so
     * the cap is checked on the whole before anything big is allocated. */
    int n_io = g->n_inputs + g->n_outputs;
    p->stage_off = malloc((size_t)(n_io ? n_io : 1) * sizeof *p->stage_off);
    p->ptrs = calloc((size_t)(g->n_values ? g->n_values : 1), sizeof *p->ptrs);
    if (!p->stage_off || !p->ptrs) {
        pf_ir_mem_plan_free(&mp);
        st = pf_set_error(PF_ERR_NOMEM, "%s: out of memory for the batch-%lld plan", name,
                          (long long)batch);
        goto fail;
    }
    size_t off = 0;
    for (int k = 0; k < n_io; k++) {
        int v = k < g->n_inputs ? g->inputs[k] : g->outputs[k - g->n_inputs];
        const pf_ir_value *val = &g->values[v];
        p->stage_off[k] = SIZE_MAX;
        if (!may_need_staging(val->dtype)) continue;
        p->stage_off[k] = off;
        off += align_up(pf_ir_value_nbytes(val));
    }
    p->staging_bytes = off;
    const size_t cap = c ? c->memory_cap : 0;
    if (cap && (p->arena_bytes > cap || p->scratch_bytes > cap - p->arena_bytes ||
                off > cap - p->arena_bytes - p->scratch_bytes)) {
        pf_ir_mem_plan_free(&mp);
        st = pf_set_error(PF_ERR_NOMEM, "%s: the batch-%lld plan needs %zu B of arena + %zu B of "
                          "scratch + %zu B of I/O staging, over the executor's memory_cap of %zu B",
                          name, (long long)batch, p->arena_bytes, p->scratch_bytes, off, cap);
        goto fail;
    }
    p->arena = pf_aligned_alloc(CPU_ALIGN, p->arena_bytes);
    p->scratch = pf_aligned_alloc(CPU_ALIGN, p->scratch_bytes);
    if (!p->arena || !p->scratch) {
        pf_ir_mem_plan_free(&mp);
        st = pf_set_error(PF_ERR_NOMEM, "%s: out of memory for the batch-%lld plan (arena %zu B)",
                          name, (long long)batch, p->arena_bytes);
        goto fail;
    }
    for (int v = 0; v < g->n_values; v++) {
        const pf_ir_value *val = &g->values[v];
        if (val->data) {
            p->ptrs[v] = val->data;
            p->weight_bytes += val->nbytes;
        } else if (v < mp.n_values && mp.offsets[v] >= 0) {
            if ((size_t)mp.offsets[v] + pf_ir_value_nbytes(val) > p->arena_bytes) {
                pf_ir_mem_plan_free(&mp);
                st = pf_set_error(PF_ERR_INTERNAL, "%s: memory plan puts value '%s' outside "
                                  "the arena", name, val->name);
                goto fail;
            }
            p->ptrs[v] = (char *)p->arena + mp.offsets[v];
        }
    }
    pf_ir_mem_plan_free(&mp);

    p->staging = pf_aligned_alloc(CPU_ALIGN, off);
    if (!p->staging) {
        st = pf_set_error(PF_ERR_NOMEM, "%s: out of memory for %zu B of I/O staging", name, off);
        goto fail;
    }
    *out = p;
    return PF_OK;
fail:
    cpu_plan_free(p);
    return st;
}

static void cpu_plan_destroy(void *ctx, void *plan)
{
    (void)ctx;
    cpu_plan_free(plan);
}

/* --- dtype conversion between caller tensors and graph values ------------------------ */

static bool ir_is_float(pf_ir_dtype t) { return t == PF_IR_F32 || t == PF_IR_F16 || t == PF_IR_F64; }

static double load_f(const void *p, pf_ir_dtype t, size_t i)
{
    switch (t) {
    case PF_IR_F32: return ((const float *)p)[i];
    case PF_IR_F16: return pf_f16_to_f32(((const uint16_t *)p)[i]);
    case PF_IR_F64: return ((const double *)p)[i];
    default: return 0.0;
    }
}

static void store_f(void *p, pf_ir_dtype t, size_t i, double x)
{
    switch (t) {
    case PF_IR_F32: ((float *)p)[i] = (float)x; break;
    case PF_IR_F16: ((uint16_t *)p)[i] = pf_f32_to_f16((float)x); break;
    case PF_IR_F64: ((double *)p)[i] = x; break;
    default: break;
    }
}

static pf_ir_dtype ir_of_public(pf_dtype t)
{
    switch (t) {
    case PF_DTYPE_F32: return PF_IR_F32;
    case PF_DTYPE_F16: return PF_IR_F16;
    case PF_DTYPE_I32: return PF_IR_I32;
    default: return PF_IR_U8;
    }
}

static bool int_in_range(int64_t x, pf_ir_dtype t)
{
    switch (t) {
    case PF_IR_I32: return x >= INT32_MIN && x <= INT32_MAX;
    case PF_IR_I8: return x >= INT8_MIN && x <= INT8_MAX;
    case PF_IR_U8: case PF_IR_BOOL: return x >= 0 && x <= UINT8_MAX;
    default: return true;
    }
}

/* Converts n elements; integer narrowing out of range fails naming `what`. */
static pf_status convert(void *dst, pf_ir_dtype dt, const void *src, pf_ir_dtype st, size_t n,
                         const char *what)
{
    if (dt == st || ((dt == PF_IR_U8 || dt == PF_IR_BOOL) && (st == PF_IR_U8 || st == PF_IR_BOOL))) {
        if (n) memcpy(dst, src, n * pf_ir_dtype_size(dt));
        return PF_OK;
    }
    if (ir_is_float(dt) && ir_is_float(st)) {
        for (size_t i = 0; i < n; i++) store_f(dst, dt, i, load_f(src, st, i));
        return PF_OK;
    }
    if (!ir_is_float(dt) && !ir_is_float(st)) {
        for (size_t i = 0; i < n; i++) {
            int64_t x = pf_nd_load_i64(src, st, (int64_t)i);
            if (!int_in_range(x, dt))
                return pf_set_error(PF_ERR_INVALID, "%s: element %zu is %lld, outside the range "
                                    "of %s", what, i, (long long)x, pf_ir_dtype_name(dt));
            pf_nd_store_i64(dst, dt, (int64_t)i, x);
        }
        return PF_OK;
    }
    return pf_set_error(PF_ERR_INVALID, "%s: cannot convert %s to %s", what,
                        pf_ir_dtype_name(st), pf_ir_dtype_name(dt));
}

/* --- runs ---------------------------------------------------------------------------- */

/* Binds inputs/outputs and converts the inputs that need staging. */
static pf_status bind_io(cpu_plan *p, const pf_tensor *in, pf_tensor *out)
{
    const pf_ir_graph *g = p->g;
    for (int i = 0; i < g->n_inputs; i++) {
        const pf_ir_value *v = &g->values[g->inputs[i]];
        pf_ir_dtype ct = ir_of_public(in[i].dtype);
        bool same = ct == v->dtype || (ct == PF_IR_U8 && v->dtype == PF_IR_BOOL);
        if (same) {
            p->ptrs[g->inputs[i]] = in[i].data;
            continue;
        }
        if (p->stage_off[i] == SIZE_MAX)
            return pf_set_error(PF_ERR_INTERNAL, "input '%s': no staging for %s -> %s", v->name,
                                pf_dtype_name(in[i].dtype), pf_ir_dtype_name(v->dtype));
        void *dst = (char *)p->staging + p->stage_off[i];
        char what[160];
        snprintf(what, sizeof what, "input '%s'", v->name);
        pf_status st = convert(dst, v->dtype, in[i].data, ct, (size_t)pf_ir_value_numel(v), what);
        if (st) return st;
        p->ptrs[g->inputs[i]] = dst;
    }
    /* Outputs: the first binding of a value produced by a node wins; the
     * rest are filled after the run (finish_outputs). */
    for (int i = 0; i < g->n_outputs; i++) {
        int vid = g->outputs[i];
        const pf_ir_value *v = &g->values[vid];
        if (v->data || v->is_input || v->producer < 0) continue;
        bool first = true;
        for (int j = 0; j < i; j++)
            if (g->outputs[j] == vid) first = false;
        if (!first) continue;
        pf_ir_dtype ct = ir_of_public(out[i].dtype);
        bool same = ct == v->dtype || (ct == PF_IR_U8 && v->dtype == PF_IR_BOOL);
        if (same) {
            p->ptrs[vid] = out[i].data;
        } else {
            size_t k = (size_t)(g->n_inputs + i);
            if (p->stage_off[k] == SIZE_MAX)
                return pf_set_error(PF_ERR_INTERNAL, "output '%s': no staging for %s -> %s",
                                    v->name, pf_ir_dtype_name(v->dtype),
                                    pf_dtype_name(out[i].dtype));
            p->ptrs[vid] = (char *)p->staging + p->stage_off[k];
        }
    }
    return PF_OK;
}

static pf_status finish_outputs(cpu_plan *p, pf_tensor *out)
{
    const pf_ir_graph *g = p->g;
    for (int i = 0; i < g->n_outputs; i++) {
        int vid = g->outputs[i];
        const pf_ir_value *v = &g->values[vid];
        const void *src = p->ptrs[vid];
        if (src == out[i].data) continue; /* written in place */
        if (!src) return pf_set_error(PF_ERR_INTERNAL, "output '%s' was never bound", v->name);
        char what[160];
        snprintf(what, sizeof what, "output '%s'", v->name);
        pf_status st = convert(out[i].data, ir_of_public(out[i].dtype), src, v->dtype,
                               (size_t)pf_ir_value_numel(v), what);
        if (st) return st;
    }
    return PF_OK;
}

static pf_status run_node(cpu_ctx *c, cpu_plan *p, int i)
{
    const pf_ir_graph *g = p->g;
    const pf_ir_node *n = &g->nodes[i];
    const void *in[PF_IR_MAX_INPUTS];
    void *out[PF_IR_MAX_OUTPUTS];
    for (int k = 0; k < PF_IR_MAX_INPUTS; k++) in[k] = k < n->n_in && n->in[k] >= 0 ? p->ptrs[n->in[k]] : NULL;
    for (int k = 0; k < PF_IR_MAX_OUTPUTS; k++) out[k] = k < n->n_out && n->out[k] >= 0 ? p->ptrs[n->out[k]] : NULL;
    return pf_nn_cpu_run_node(g, i, in, out, c->pool, p->scratch, p->scratch_bytes);
}

static pf_status cpu_plan_run(void *ctx, void *plan, pf_stream *stream, const pf_tensor *in,
                              int n_in, pf_tensor *out, int n_out)
{
    (void)stream;
    (void)n_in;
    (void)n_out;
    cpu_ctx *c = ctx;
    cpu_plan *p = plan;
    pf_status st = bind_io(p, in, out);
    if (st) return st;
    for (int i = 0; i < p->g->n_nodes; i++) {
        if (p->g->nodes[i].dead) continue;
        st = run_node(c, p, i);
        if (st) return st;
    }
    return finish_outputs(p, out);
}

static pf_status cpu_plan_profile(void *ctx, void *plan, pf_stream *stream, const pf_tensor *in,
                                  int n_in, pf_tensor *out, int n_out, pf_nn_node_time *times,
                                  int cap, int *n)
{
    (void)stream;
    (void)n_in;
    (void)n_out;
    cpu_ctx *c = ctx;
    cpu_plan *p = plan;
    const pf_ir_graph *g = p->g;
    pf_status st = bind_io(p, in, out);
    if (st) return st;
    int k = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].dead) continue;
        int64_t t0 = pf_time_ns();
        st = run_node(c, p, i);
        int64_t t1 = pf_time_ns();
        if (st) return st;
        if (times && k < cap) {
            times[k].name = g->nodes[i].name;
            times[k].op = g->nodes[i].src_op && g->nodes[i].src_op[0]
                              ? g->nodes[i].src_op : pf_ir_op_name(g->nodes[i].op);
            times[k].ms = (double)(t1 - t0) / 1e6;
        }
        k++;
    }
    if (n) *n = k;
    return finish_outputs(p, out);
}

static void cpu_plan_stats(void *ctx, void *plan, pf_nn_exec_stats *acc)
{
    (void)ctx;
    cpu_plan *p = plan;
    if (p->arena_bytes > acc->arena_bytes) acc->arena_bytes = p->arena_bytes;
    /* Each plan's graph holds its own copy of the weights on the host. */
    acc->weight_bytes += p->weight_bytes;
}

const pf_nn_backend pf_nn_backend_cpu = {
    .name = "cpu",
    .ctx_create = cpu_ctx_create,
    .ctx_destroy = cpu_ctx_destroy,
    .plan_create = cpu_plan_create,
    .plan_destroy = cpu_plan_destroy,
    .plan_run = cpu_plan_run,
    .plan_profile = cpu_plan_profile,
    .plan_stats = cpu_plan_stats,
};
