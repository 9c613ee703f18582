/* pf_nn_exec: the public executor over a backend table (backend.h).
 *
 * Design
 * - The executor holds a model reference, a backend (CPU always; CUDA when
 *   compiled in and asked for) with its per-executor ctx, and a plan cache
 *   keyed by batch size. A plan is built on the first run at a batch size
 *   (or by pf_nn_exec_reserve for all of them): the model's graph
 *   specialised to that batch and optimised, handed to the backend, which
 *   keeps a pointer to it; the graph is freed after the plan.
 * - Every argument of a run is validated here so backends only do the fast
 *   path: counts, dtypes, contiguity, shapes (against the plan graph's
 *   values, so the batch dimension is checked too), memory domains and
 *   overlap of outputs with inputs. Messages name the tensor by its model
 *   name and the offending dim or dtype.
 * - The batch of a run comes from the caller's inputs: the dims that are
 *   symbolic in the model (PF_IR_DIM_BATCH) must all agree and lie in
 *   [1, max_batch]. Fixed-batch models have one plan, at their batch. On
 *   CUDA a run uses the plan of the next power of two (plan_batch), the
 *   backend copying the caller's rows into the plan's padded buffers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "backend.h"
#include "exec_observe.h"
#include "model.h"

typedef struct exec_plan {
    int64_t batch;
    pf_ir_graph *g;
    void *plan;
    int64_t runs;        /* the first two are logged (eager run, graph capture) */
} exec_plan;

struct pf_nn_exec {
    pf_model *model;
    const pf_nn_backend *be;
    void *ctx;
    pf_nn_exec_params params;
    pf_device_type dev_type;
    exec_plan *plans;
    int n_plans, cap_plans;
    bool bucketed;       /* CUDA, symbolic batch: plans at powers of two (see plan_batch) */
    int asked[32];       /* bucketed: runs that wanted bucket 2^i while it had no plan */
    int64_t runs;
    double last_run_ms;
    /* pf_nn_exec_run_observed (exec_observe.h): one extra plan, made on demand. */
    exec_plan obs;
    const char *const *obs_names;
    int obs_n_names;
};

pf_nn_exec_params pf_nn_exec_params_default(void)
{
    pf_nn_exec_params p;
    memset(&p, 0, sizeof p);
    p.device = NULL;
    p.precision = PF_NN_FP32;
    p.max_batch = 1;
    p.pool = NULL;
    p.cuda_graphs = true;
    p.allow_tf32 = false;
    p.memory_cap = 0;
    p.plan_cache = true;
    return p;
}

static const pf_nn_backend *pick_backend(pf_device_type t)
{
    if (t == PF_DEVICE_CPU) return &pf_nn_backend_cpu;
#ifdef PF_HAVE_CUDA
    if (t == PF_DEVICE_CUDA) return pf_nn_backend_cuda();
#endif
    return NULL;
}

pf_status pf_nn_exec_create(pf_model *m, const pf_nn_exec_params *p, pf_nn_exec **out)
{
    PF_CHECK_ARG(out, "pf_nn_exec_create", "NULL out");
    *out = NULL;
    PF_CHECK_ARG(m, "pf_nn_exec_create", "NULL model");
    pf_nn_exec_params prm = p ? *p : pf_nn_exec_params_default();
    const char *mname = pf_model_name(m);
    pf_device_type t = prm.device ? pf_device_get_type(prm.device) : PF_DEVICE_CPU;
    if (prm.precision != PF_NN_FP32 && prm.precision != PF_NN_FP16)
        return pf_set_error(PF_ERR_INVALID, "pf_nn_exec_create: %s: unknown precision %d", mname,
                            (int)prm.precision);
    if (t == PF_DEVICE_CPU && prm.precision == PF_NN_FP16)
        return pf_set_error(PF_ERR_UNSUPPORTED,
                            "pf_nn_exec_create: %s: the CPU executor computes in FP32 only; "
                            "use PF_NN_FP32 on the CPU (FP16 needs a CUDA device)", mname);
    if (pf_model_has_symbolic_batch(m)) {
        if (prm.max_batch < 1)
            return pf_set_error(PF_ERR_INVALID, "pf_nn_exec_create: %s: max_batch %d (must be "
                                ">= 1)", mname, prm.max_batch);
    } else {
        /* Fixed-batch models: max_batch is their batch, whatever was asked. */
        int64_t fb = pf_model_fixed_batch(m);
        prm.max_batch = fb > 0 && fb <= INT32_MAX ? (int)fb : 1;
    }
    const pf_nn_backend *be = pick_backend(t);
    if (!be)
        return pf_set_error(PF_ERR_UNSUPPORTED, "pf_nn_exec_create: %s: no nn executor for "
                            "device %s in this build", mname,
                            prm.device ? pf_device_spec(prm.device) : "cpu");
    pf_nn_exec *x = calloc(1, sizeof *x);
    if (!x) return pf_set_error(PF_ERR_NOMEM, "pf_nn_exec_create: out of memory");
    x->be = be;
    x->params = prm;
    x->dev_type = t;
    x->bucketed = t == PF_DEVICE_CUDA && pf_model_has_symbolic_batch(m) && prm.max_batch > 1;
    int64_t t0 = pf_time_ns();
    pf_status st = be->ctx_create(&x->params, &x->ctx);
    if (st) {
        free(x);
        return st;
    }
    PF_LOGD("nn %s: %s executor context in %.1f ms", mname, be->name,
            (double)(pf_time_ns() - t0) / 1e6);
    x->model = pf_model_ref(m);
    uint64_t hash = pf_model_content_hash(m);
    if (prm.plan_cache && be->ctx_bind_model && hash) be->ctx_bind_model(x->ctx, hash, mname);
    *out = x;
    return PF_OK;
}

void pf_nn_exec_destroy(pf_nn_exec **px)
{
    if (!px || !*px) return;
    pf_nn_exec *x = *px;
    *px = NULL;
    for (int i = 0; i < x->n_plans; i++) {
        x->be->plan_destroy(x->ctx, x->plans[i].plan);
        pf_ir_graph_destroy(&x->plans[i].g);
    }
    free(x->plans);
    if (x->obs.plan) x->be->plan_destroy(x->ctx, x->obs.plan);
    pf_ir_graph_destroy(&x->obs.g);
    x->be->ctx_destroy(x->ctx);
    pf_model_unref(&x->model);
    free(x);
}

static exec_plan *find_plan(pf_nn_exec *x, int64_t batch)
{
    for (int i = 0; i < x->n_plans; i++)
        if (x->plans[i].batch == batch) return &x->plans[i];
    return NULL;
}

static pf_status get_plan(pf_nn_exec *x, int64_t batch, exec_plan **out)
{
    exec_plan *e = find_plan(x, batch);
    if (e) {
        *out = e;
        return PF_OK;
    }
    if (x->n_plans == x->cap_plans) {
        int cap = x->cap_plans ? 2 * x->cap_plans : 4;
        exec_plan *n = realloc(x->plans, (size_t)cap * sizeof *n);
        if (!n) return pf_set_error(PF_ERR_NOMEM, "pf_nn_exec: out of memory");
        x->plans = n;
        x->cap_plans = cap;
    }
    int64_t t0 = pf_time_ns();
    pf_ir_graph *g = NULL;
    pf_status st = pf_model_graph_for_batch(x->model, batch, &g);
    if (st) return st;
    int64_t t1 = pf_time_ns();
    void *plan = NULL;
    st = x->be->plan_create(x->ctx, g, batch, &plan);
    if (st) {
        pf_ir_graph_destroy(&g);
        return st;
    }
    PF_LOGD("nn %s: plan for batch %lld: graph %.1f ms, %s plan %.1f ms",
            pf_model_name(x->model), (long long)batch, (double)(t1 - t0) / 1e6, x->be->name,
            (double)(pf_time_ns() - t1) / 1e6);
    e = &x->plans[x->n_plans++];
    e->batch = batch;
    e->g = g;
    e->plan = plan;
    e->runs = 0;
    *out = e;
    return PF_OK;
}

/* The plan batch for a run of `n`. On CUDA a run of n frames uses the plan
 * of the next power of two (capped at max_batch): the backend copies the
 * caller's n rows into the plan's own input buffers anyway, so padding is
 * free, while every new batch size would cost a plan (cuDNN algorithm
 * timing, a graph capture: ~0.1 s each). A dynamic batcher hands out many
 * sizes; this keeps them to log2(max_batch) + 1 plans. The CPU reads inputs
 * in place, so it plans each size it sees. */
static int64_t bucket_of(const pf_nn_exec *x, int64_t n)
{
    if (!x->bucketed) return n;
    int64_t b = 1;
    while (b < n) b <<= 1;
    return b < x->params.max_batch ? b : x->params.max_batch;
}

static int log2_of(int64_t b)
{
    int i = 0;
    while (i < 31 && ((int64_t)1 << i) < b) i++;
    return i;
}

/* Which plan a run of n uses. Its bucket's when that exists. When it does
 * not but a larger bucket has a plan, the run is padded into the smallest
 * such plan, until the bucket was wanted PF_NN_PLAN_AFTER times: a size a
 * batcher forms once or twice (the first partial batch while a decoder
 * starts, the last one of a file) then costs a padded run (a few ms of GPU
 * time at most) instead of a plan and a graph capture in the middle of a
 * run (12-25 ms warm, 0.1-0.4 s when it must be tuned, measured on an
 * H200), while a size that keeps coming gets its own plan. */
#define PF_NN_PLAN_AFTER 4
static int64_t plan_batch(pf_nn_exec *x, int64_t n)
{
    int64_t b = bucket_of(x, n);
    if (!x->bucketed || find_plan(x, b)) return b;
    int64_t best = 0;
    for (int i = 0; i < x->n_plans; i++)
        if (x->plans[i].batch > b && (!best || x->plans[i].batch < best)) best = x->plans[i].batch;
    if (best && ++x->asked[log2_of(b)] < PF_NN_PLAN_AFTER) return best;
    return b;
}

pf_status pf_nn_exec_reserve(pf_nn_exec *x)
{
    PF_CHECK_ARG(x, "pf_nn_exec_reserve", "NULL executor");
    exec_plan *e;
    if (!pf_model_has_symbolic_batch(x->model))
        return get_plan(x, pf_model_fixed_batch(x->model), &e);
    for (int b = 1; b <= x->params.max_batch; b++) {
        if (bucket_of(x, b) != b) continue;
        pf_status st = get_plan(x, b, &e);
        if (st) return st;
    }
    return PF_OK;
}

pf_status pf_nn_exec_reserve_batch(pf_nn_exec *x, int batch)
{
    PF_CHECK_ARG(x, "pf_nn_exec_reserve_batch", "NULL executor");
    exec_plan *e;
    if (!pf_model_has_symbolic_batch(x->model))
        return get_plan(x, pf_model_fixed_batch(x->model), &e);
    if (batch < 1 || batch > x->params.max_batch)
        return pf_set_error(PF_ERR_INVALID, "pf_nn_exec_reserve_batch: %s: batch %d outside "
                            "1..%d (max_batch)", pf_model_name(x->model), batch,
                            x->params.max_batch);
    return get_plan(x, bucket_of(x, batch), &e);
}

/* --- validation -------------------------------------------------------------------- */

static const char *exec_fn = "pf_nn_exec_run";

/* Which caller dtypes a graph value of dtype t accepts. */
static bool dtype_ok(pf_ir_dtype t, pf_dtype d)
{
    switch (t) {
    case PF_IR_F32: case PF_IR_F16: case PF_IR_F64:
        return d == PF_DTYPE_F32 || d == PF_DTYPE_F16;
    case PF_IR_I64: case PF_IR_I32: case PF_IR_I8:
        return d == PF_DTYPE_I32;
    case PF_IR_U8: case PF_IR_BOOL:
        return d == PF_DTYPE_U8;
    default:
        return false;
    }
}

static const char *accepted_dtypes(pf_ir_dtype t)
{
    switch (t) {
    case PF_IR_F32: case PF_IR_F16: case PF_IR_F64: return "f32 or f16";
    case PF_IR_I64: case PF_IR_I32: case PF_IR_I8: return "i32";
    case PF_IR_U8: case PF_IR_BOOL: return "u8";
    default: return "nothing (unsupported model dtype)";
    }
}

static void fmt_shape(char *buf, size_t size, int ndim, const int64_t *dims)
{
    size_t k = 0;
    k += (size_t)snprintf(buf + k, size - k, "[");
    for (int d = 0; d < ndim && k < size; d++)
        k += (size_t)snprintf(buf + k, size - k, "%s%lld", d ? ", " : "", (long long)dims[d]);
    if (k < size) snprintf(buf + k, size - k, "]");
}

static pf_status check_domain(pf_nn_exec *x, const pf_tensor *t, const char *kind, const char *name)
{
    pf_mem_domain d = t->buf ? pf_buffer_domain(t->buf) : PF_MEM_HOST;
    if (x->dev_type == PF_DEVICE_CPU) {
        if (d == PF_MEM_DEVICE)
            return pf_set_error(PF_ERR_INVALID, "%s: %s '%s' is in device memory; the CPU "
                                "executor needs host memory", exec_fn, kind, name);
        return PF_OK;
    }
    if (d != PF_MEM_DEVICE || pf_buffer_device(t->buf) != x->params.device)
        return pf_set_error(PF_ERR_INVALID, "%s: %s '%s' is %s memory; the %s executor needs "
                            "device memory of %s", exec_fn, kind, name,
                            t->buf ? pf_mem_domain_name(d) : "unowned host",
                            pf_device_spec(x->params.device), pf_device_spec(x->params.device));
    return PF_OK;
}

/* Checks one tensor against a plan graph value. */
static pf_status check_tensor(pf_nn_exec *x, const pf_tensor *t, const pf_ir_value *v,
                              const char *kind, int idx)
{
    const char *name = v->name;
    if (!dtype_ok(v->dtype, t->dtype))
        return pf_set_error(PF_ERR_INVALID, "%s: %s %d '%s' has dtype %s; the model's %s needs %s",
                            exec_fn, kind, idx, name, pf_dtype_name(t->dtype),
                            pf_ir_dtype_name(v->dtype), accepted_dtypes(v->dtype));
    if (t->ndim != v->ndim) {
        char want[160];
        fmt_shape(want, sizeof want, v->ndim, v->dims);
        return pf_set_error(PF_ERR_INVALID, "%s: %s %d '%s' has %d dims; the model needs %d %s",
                            exec_fn, kind, idx, name, t->ndim, v->ndim, want);
    }
    for (int d = 0; d < v->ndim; d++)
        if (t->shape[d] != v->dims[d]) {
            char want[160], got[160];
            fmt_shape(want, sizeof want, v->ndim, v->dims);
            fmt_shape(got, sizeof got, t->ndim, t->shape);
            return pf_set_error(PF_ERR_INVALID, "%s: %s %d '%s': dim %d is %lld, the model needs "
                                "%lld (shape %s, expected %s)", exec_fn, kind, idx, name, d,
                                (long long)t->shape[d], (long long)v->dims[d], got, want);
        }
    if (!pf_tensor_is_contiguous(t))
        return pf_set_error(PF_ERR_INVALID, "%s: %s %d '%s' is not contiguous (strides must be "
                            "row-major)", exec_fn, kind, idx, name);
    if (!t->data && pf_ir_value_numel(v) > 0)
        return pf_set_error(PF_ERR_INVALID, "%s: %s %d '%s' has no data", exec_fn, kind, idx, name);
    return check_domain(x, t, kind, name);
}

/* The batch of a run from the inputs' symbolic dims. */
static pf_status run_batch(pf_nn_exec *x, const pf_tensor *in, int64_t *batch)
{
    const pf_ir_graph *g = pf_model_graph(x->model);
    if (!pf_model_has_symbolic_batch(x->model)) {
        *batch = pf_model_fixed_batch(x->model);
        return PF_OK;
    }
    int64_t b = -1;
    const char *first = NULL;
    for (int i = 0; i < g->n_inputs; i++) {
        const pf_ir_value *v = &g->values[g->inputs[i]];
        for (int d = 0; d < v->ndim; d++) {
            if (v->dims[d] != PF_IR_DIM_BATCH) continue;
            if (d >= in[i].ndim)
                return pf_set_error(PF_ERR_INVALID, "%s: input %d '%s' has %d dims; the model "
                                    "needs %d", exec_fn, i, v->name, in[i].ndim, v->ndim);
            int64_t tb = in[i].shape[d];
            if (tb < 1 || tb > x->params.max_batch)
                return pf_set_error(PF_ERR_INVALID, "%s: input %d '%s': batch dim %d is %lld, "
                                    "outside 1..%d (max_batch)", exec_fn, i, v->name, d,
                                    (long long)tb, x->params.max_batch);
            if (b >= 0 && tb != b)
                return pf_set_error(PF_ERR_INVALID, "%s: input %d '%s' has batch %lld but input "
                                    "'%s' has %lld: all inputs need the same batch", exec_fn, i,
                                    v->name, (long long)tb, first, (long long)b);
            b = tb;
            first = v->name;
        }
    }
    *batch = b < 0 ? 1 : b;
    return PF_OK;
}

static bool overlaps(const pf_tensor *a, const pf_tensor *b)
{
    size_t na = pf_tensor_nbytes(a), nb = pf_tensor_nbytes(b);
    if (!a->data || !b->data || !na || !nb) return false;
    uintptr_t a0 = (uintptr_t)a->data, b0 = (uintptr_t)b->data;
    return a0 < b0 + nb && b0 < a0 + na;
}

/* v as the caller's tensor must be at `batch`: the model's symbolic dims
 * (-1 in its I/O description) take the run's batch where the plan (made for
 * plan_b >= batch) has its batch there. A symbolic dim that is not the batch
 * after specialisation (an output concatenated along the batch with more
 * rows: 2 + N) keeps the plan's value, so the caller's tensor must have it;
 * taking the batch there let a run write past the caller's buffer. */
static void at_batch(pf_ir_value *v, pf_model_io io, int64_t batch, int64_t plan_b)
{
    if (io.ndim != v->ndim) return;
    for (int d = 0; d < v->ndim; d++)
        if (io.shape[d] < 0 && v->dims[d] == plan_b) v->dims[d] = batch;
}

static pf_status validate(pf_nn_exec *x, const pf_tensor *in, int n_in, pf_tensor *out,
                          int n_out, exec_plan **plan)
{
    const pf_model *m = x->model;
    if (n_in != pf_model_num_inputs(m) || n_out != pf_model_num_outputs(m))
        return pf_set_error(PF_ERR_INVALID, "%s: %s: %d inputs and %d outputs given; the model "
                            "has %d and %d", exec_fn, pf_model_name(m), n_in, n_out,
                            pf_model_num_inputs(m), pf_model_num_outputs(m));
    if ((n_in && !in) || (n_out && !out))
        return pf_set_error(PF_ERR_INVALID, "%s: NULL tensor array", exec_fn);
    int64_t batch = 1;
    pf_status st = run_batch(x, in, &batch);
    if (st) return st;
    exec_plan *e = NULL;
    st = get_plan(x, plan_batch(x, batch), &e);
    if (st) return st;
    const pf_ir_graph *g = e->g;
    if (g->n_inputs != n_in || g->n_outputs != n_out)
        return pf_set_error(PF_ERR_INTERNAL, "%s: the batch-%lld graph has %d inputs, %d outputs",
                            exec_fn, (long long)e->batch, g->n_inputs, g->n_outputs);
    for (int i = 0; i < n_in; i++) {
        pf_ir_value v = g->values[g->inputs[i]];
        at_batch(&v, pf_model_input(m, i), batch, e->batch);
        st = check_tensor(x, &in[i], &v, "input", i);
        if (st) return st;
    }
    for (int i = 0; i < n_out; i++) {
        pf_ir_value v = g->values[g->outputs[i]];
        at_batch(&v, pf_model_output(m, i), batch, e->batch);
        st = check_tensor(x, &out[i], &v, "output", i);
        if (st) return st;
        for (int j = 0; j < n_in; j++)
            if (overlaps(&out[i], &in[j]))
                return pf_set_error(PF_ERR_INVALID, "%s: output %d '%s' overlaps input %d '%s'",
                                    exec_fn, i, g->values[g->outputs[i]].name, j,
                                    g->values[g->inputs[j]].name);
        for (int j = 0; j < i; j++)
            if (overlaps(&out[i], &out[j]))
                return pf_set_error(PF_ERR_INVALID, "%s: output %d '%s' overlaps output %d '%s'",
                                    exec_fn, i, g->values[g->outputs[i]].name, j,
                                    g->values[g->outputs[j]].name);
    }
    *plan = e;
    return PF_OK;
}

pf_status pf_nn_exec_run(pf_nn_exec *x, pf_stream *stream, const pf_tensor *inputs, int n_in,
                         pf_tensor *outputs, int n_out)
{
    PF_CHECK_ARG(x, exec_fn, "NULL executor");
    exec_plan *e = NULL;
    pf_status st = validate(x, inputs, n_in, outputs, n_out, &e);
    if (st) return st;
    int64_t t0 = pf_time_ns();
    st = x->be->plan_run(x->ctx, e->plan, stream, inputs, n_in, outputs, n_out);
    if (st) return st;
    x->last_run_ms = (double)(pf_time_ns() - t0) / 1e6;
    x->runs++;
    if (e->runs++ < 2)
        PF_LOGD("nn %s: batch-%lld plan, run %lld (%s): %.1f ms on the host",
                pf_model_name(x->model), (long long)e->batch, (long long)e->runs,
                e->runs == 1 ? "first" : "second: graph capture where enabled", x->last_run_ms);
    return PF_OK;
}

pf_status pf_nn_exec_get_stats(pf_nn_exec *x, pf_nn_exec_stats *out)
{
    PF_CHECK_ARG(x && out, "pf_nn_exec_get_stats", "NULL argument");
    memset(out, 0, sizeof *out);
    out->runs = x->runs;
    out->plans = x->n_plans;
    out->last_run_ms = x->last_run_ms;
    for (int i = 0; i < x->n_plans; i++)
        if (x->be->plan_stats) x->be->plan_stats(x->ctx, x->plans[i].plan, out);
    return PF_OK;
}

/* Zero-filled inputs and outputs of plan e where x's device reads them:
 * host memory on the CPU; on CUDA device memory from a temporary allocator,
 * filled on a temporary stream. For runs the caller has no data for
 * (profiling, the warm-up). zero_io_close waits for the stream and frees
 * everything; it is safe after a failed open. */
typedef struct zero_io {
    pf_allocator *alloc;
    pf_stream *stream;
    pf_tensor *t;      /* inputs then outputs, in the plan graph's order */
    int nt;
} zero_io;

static pf_status zero_io_open(pf_nn_exec *x, const exec_plan *e, const char *name, zero_io *z)
{
    memset(z, 0, sizeof *z);
    const pf_ir_graph *g = e->g;
    const bool cpu = x->dev_type == PF_DEVICE_CPU;
    pf_status st = PF_OK;
    if (!cpu) {
        pf_allocator_params ap = pf_allocator_params_default();
        ap.device = x->params.device;
        ap.domain = PF_MEM_DEVICE;
        ap.name = name;
        st = pf_allocator_create(&ap, &z->alloc);
        if (st == PF_OK) {
            pf_stream_params sp = pf_stream_params_default();
            sp.device = x->params.device;
            st = pf_stream_create(&sp, &z->stream);
        }
        if (st != PF_OK) return st;
    }
    z->nt = g->n_inputs + g->n_outputs;
    z->t = calloc((size_t)(z->nt ? z->nt : 1), sizeof *z->t);
    if (!z->t) return pf_set_error(PF_ERR_NOMEM, "%s: out of memory", name);
    for (int k = 0; k < z->nt && st == PF_OK; k++) {
        const pf_ir_value *v =
            &g->values[k < g->n_inputs ? g->inputs[k] : g->outputs[k - g->n_inputs]];
        pf_dtype d = PF_DTYPE_F32;
        if (!dtype_ok(v->dtype, d)) d = dtype_ok(v->dtype, PF_DTYPE_I32) ? PF_DTYPE_I32 : PF_DTYPE_U8;
        st = pf_tensor_alloc(&z->t[k], d, v->ndim, v->dims, PF_LAYOUT_NONE, z->alloc, z->stream);
        size_t nb = st == PF_OK ? pf_tensor_nbytes(&z->t[k]) : 0;
        if (nb && cpu) memset(z->t[k].data, 0, nb);
        else if (nb) st = pf_memset_async(z->stream, z->t[k].data, 0, nb);
    }
    return st;
}

static void zero_io_close(zero_io *z)
{
    if (z->stream) pf_stream_synchronize(z->stream);
    for (int k = 0; z->t && k < z->nt; k++) pf_tensor_unref(&z->t[k]);
    free(z->t);
    pf_stream_destroy(&z->stream);
    pf_allocator_destroy(&z->alloc);
    memset(z, 0, sizeof *z);
}

/* Profiling runs on zero-filled tensors the executor allocates where its
 * device reads them (host for the CPU, device memory through a temporary
 * allocator and stream on CUDA). */
pf_status pf_nn_exec_profile(pf_nn_exec *x, int batch, pf_nn_node_time *times, int cap, int *n)
{
    PF_CHECK_ARG(x, "pf_nn_exec_profile", "NULL executor");
    PF_CHECK_ARG(cap >= 0 && (times || cap == 0), "pf_nn_exec_profile", "times NULL with cap > 0");
    if (n) *n = 0;
    if (!x->be->plan_profile)
        return pf_set_error(PF_ERR_UNSUPPORTED, "pf_nn_exec_profile: the %s executor cannot "
                            "profile", x->be->name);
    int64_t b = batch;
    if (!pf_model_has_symbolic_batch(x->model)) {
        b = pf_model_fixed_batch(x->model);
        if (batch != b && batch != 0)
            return pf_set_error(PF_ERR_INVALID, "pf_nn_exec_profile: %s has a fixed batch of "
                                "%lld, not %d", pf_model_name(x->model), (long long)b, batch);
    } else if (batch < 1 || batch > x->params.max_batch) {
        return pf_set_error(PF_ERR_INVALID, "pf_nn_exec_profile: batch %d outside 1..%d", batch,
                            x->params.max_batch);
    }
    exec_plan *e = NULL;
    pf_status st = get_plan(x, b, &e);
    if (st) return st;
    zero_io z;
    st = zero_io_open(x, e, "nn-profile", &z);
    if (st == PF_OK)
        st = x->be->plan_profile(x->ctx, e->plan, z.stream, z.t, e->g->n_inputs,
                                 z.t + e->g->n_inputs, e->g->n_outputs, times, cap, n);
    zero_io_close(&z);
    return st;
}

/* --- warm-up ----------------------------------------------------------------------------- */

pf_status pf_nn_warmup(pf_model *m, const pf_nn_exec_params *p, int batch)
{
    PF_CHECK_ARG(m && p, "pf_nn_warmup", "NULL model or params");
    if (!p->device || pf_device_get_type(p->device) == PF_DEVICE_CPU) return PF_OK;
    pf_nn_exec_params prm = *p;
    if (batch < 1) batch = 1;
    if (prm.max_batch < batch) prm.max_batch = batch;
    int64_t t0 = pf_time_ns();
    pf_nn_exec *x = NULL;
    pf_status st = pf_nn_exec_create(m, &prm, &x);
    exec_plan *e = NULL;
    if (st == PF_OK)
        st = get_plan(x, pf_model_has_symbolic_batch(m) ? bucket_of(x, batch)
                                                        : pf_model_fixed_batch(m), &e);
    zero_io z;
    memset(&z, 0, sizeof z);
    if (st == PF_OK) st = zero_io_open(x, e, "nn-warmup", &z);
    if (st == PF_OK)
        st = x->be->plan_run(x->ctx, e->plan, z.stream, z.t, e->g->n_inputs,
                             z.t + e->g->n_inputs, e->g->n_outputs);
    if (st == PF_OK) st = pf_stream_synchronize(z.stream); /* a run's device error, here */
    zero_io_close(&z);
    pf_nn_exec_destroy(&x);
    if (st == PF_OK)
        PF_LOGD("nn %s: warm-up (plan and one run of batch %d) in %.1f ms", pf_model_name(m), batch,
                (double)(pf_time_ns() - t0) / 1e6);
    return st;
}

/* --- observed runs (exec_observe.h) ------------------------------------------------ */

static pf_status obs_plan(pf_nn_exec *x, int64_t batch, const char *const *names, int n_names)
{
    if (x->obs.plan && x->obs.batch == batch && x->obs_names == names &&
        x->obs_n_names == n_names)
        return PF_OK;
    if (x->obs.plan) x->be->plan_destroy(x->ctx, x->obs.plan);
    x->obs.plan = NULL;
    pf_ir_graph_destroy(&x->obs.g);
    pf_ir_graph *g = NULL;
    pf_status st = pf_model_graph_for_batch(x->model, batch, &g);
    if (st) return st;
    for (int k = 0; k < n_names && st == PF_OK; k++) {
        for (int v = 0; v < g->n_values; v++) {
            const pf_ir_value *val = &g->values[v];
            if (strcmp(val->name, names[k]) != 0) continue;
            if (!val->data && !val->is_input && !val->is_output && val->producer >= 0 &&
                val->dtype == PF_IR_F32 && val->ndim >= 0)
                st = pf_ir_mark_output(g, v);
            break;
        }
    }
    void *plan = NULL;
    if (st == PF_OK) st = x->be->plan_create(x->ctx, g, batch, &plan);
    if (st) {
        pf_ir_graph_destroy(&g);
        return st;
    }
    x->obs.g = g;
    x->obs.plan = plan;
    x->obs.batch = batch;
    x->obs_names = names;
    x->obs_n_names = n_names;
    return PF_OK;
}

pf_status pf_nn_exec_run_observed(pf_nn_exec *x, const pf_tensor *inputs, int n_in,
                                  pf_tensor *outputs, int n_out, const char *const *names,
                                  int n_names, pf_nn_observer_fn fn, void *user)
{
    PF_CHECK_ARG(x, "pf_nn_exec_run_observed", "NULL executor");
    PF_CHECK_ARG(fn && (names || n_names == 0) && n_names >= 0, "pf_nn_exec_run_observed",
                 "NULL callback or names");
    if (x->dev_type != PF_DEVICE_CPU)
        return pf_set_error(PF_ERR_UNSUPPORTED, "pf_nn_exec_run_observed: %s: observing values "
                            "needs the CPU executor", pf_model_name(x->model));
    exec_plan *e = NULL;
    pf_status st = validate(x, inputs, n_in, outputs, n_out, &e);
    if (st) return st;
    st = obs_plan(x, e->batch, names, n_names);
    if (st) return st;
    const pf_ir_graph *g = x->obs.g;
    int n_all = g->n_outputs, n_extra = n_all - n_out;
    pf_tensor *all = calloc((size_t)n_all, sizeof *all);
    if (!all) return pf_set_error(PF_ERR_NOMEM, "pf_nn_exec_run_observed: out of memory");
    for (int i = 0; i < n_out; i++) all[i] = outputs[i];
    for (int i = 0; i < n_extra && st == PF_OK; i++) {
        const pf_ir_value *v = &g->values[g->outputs[n_out + i]];
        st = pf_tensor_alloc(&all[n_out + i], PF_DTYPE_F32, v->ndim, v->dims, PF_LAYOUT_NONE,
                             NULL, NULL);
    }
    if (st == PF_OK) st = x->be->plan_run(x->ctx, x->obs.plan, NULL, inputs, n_in, all, n_all);
    for (int i = 0; i < n_extra; i++) {
        if (st == PF_OK) fn(user, g->values[g->outputs[n_out + i]].name, &all[n_out + i]);
        pf_tensor_unref(&all[n_out + i]);
    }
    free(all);
    if (st == PF_OK) x->runs++;
    return st;
}
