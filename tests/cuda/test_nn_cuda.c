/* The CUDA nn executor against the CPU executor (whose kernels are the
 * reference), op by op on random inputs and edge shapes, then whole
 * MediaPipe models, graph replay vs eager, and two executors on two
 * streams.
 *
 * Tolerances (per element, r = CPU result, scale = max |r| over the output):
 *   FP32 (no TF32):  |cuda - r| <= 1e-5 + 1e-4 |r|
 *   FP16:            |cuda - r| <= 1e-2 |r| + 1e-2 scale
 *   whole models:    max |cuda - r| <= 1e-3 scale (FP32), 6e-2 scale + 1e-3 (FP16:
 *                    the floor covers masks near 0, below F16's resolution)
 * Integer outputs (ArgMax) must match exactly. Ops with discontinuities
 * (Floor, Ceil, Round, Sign, comparisons) run in FP32 only: rounding the
 * input to F16 legitimately moves values across the jump. */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "cuda_test_util.h"
#include "nn/ir.h"
#include "nn/model.h"

static pf_device *g_dev;
static pf_allocator *g_alloc;
static pf_stream *g_stream;

/* ---- graph building ------------------------------------------------------------- */

typedef struct gb {
    pf_ir_graph *g;
    bool ok;
    int n;
} gb;

static gb gb_new(const char *name)
{
    gb b = {NULL, true, 0};
    if (pf_ir_graph_create(name, &b.g) != PF_OK) b.ok = false;
    return b;
}

static int gb_in_dt(gb *b, pf_ir_dtype dt, int ndim, const int64_t *dims)
{
    char nm[32];
    snprintf(nm, sizeof nm, "in%d", b->n++);
    int v = -1;
    if (!b->ok) return -1;
    b->ok = pf_ir_add_value(b->g, nm, dt, ndim, dims, &v) == PF_OK &&
            pf_ir_mark_input(b->g, v) == PF_OK;
    return v;
}

static int gb_in(gb *b, int ndim, const int64_t *dims) { return gb_in_dt(b, PF_IR_F32, ndim, dims); }

static int gb_const(gb *b, int ndim, const int64_t *dims, float lo, float hi)
{
    char nm[32];
    snprintf(nm, sizeof nm, "w%d", b->n++);
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= dims[d];
    float *data = malloc((size_t)(n ? n : 1) * sizeof *data);
    for (int64_t i = 0; i < n; i++)
        data[i] = lo + (hi - lo) * (float)(pf_test_rand() % 100000) / 100000.0f;
    int v = -1;
    if (b->ok)
        b->ok = pf_ir_add_const(b->g, nm, PF_IR_F32, ndim, dims, data, (size_t)n * sizeof *data,
                                &v) == PF_OK;
    free(data);
    return v;
}

static int gb_const_i64(gb *b, int ndim, const int64_t *dims, const int64_t *vals, size_t n)
{
    char nm[32];
    snprintf(nm, sizeof nm, "i%d", b->n++);
    int v = -1;
    if (b->ok)
        b->ok = pf_ir_add_const(b->g, nm, PF_IR_I64, ndim, dims, vals, n * sizeof *vals, &v) ==
                PF_OK;
    return v;
}

/* A node with n_out fresh outputs; returns the first. */
static int gb_node(gb *b, pf_ir_op op, const int *in, int n_in, int n_out, const pf_ir_attr *attr,
                   pf_ir_act act, float aa, float ab)
{
    int outs[PF_IR_MAX_OUTPUTS];
    for (int i = 0; i < n_out; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "v%d", b->n++);
        if (b->ok) b->ok = pf_ir_add_value(b->g, nm, PF_IR_F32, -1, NULL, &outs[i]) == PF_OK;
    }
    int id = -1;
    if (b->ok)
        b->ok = pf_ir_add_node(b->g, op, "n", pf_ir_op_name(op), in, n_in, outs, n_out, attr,
                               &id) == PF_OK;
    if (b->ok) {
        b->g->nodes[id].act = act;
        b->g->nodes[id].act_a = aa;
        b->g->nodes[id].act_b = ab;
    }
    return b->ok ? outs[0] : -1;
}

static int gb1(gb *b, pf_ir_op op, int x, const pf_ir_attr *attr)
{
    return gb_node(b, op, &x, 1, 1, attr, PF_IR_ACT_NONE, 0, 0);
}

static int gb2(gb *b, pf_ir_op op, int x, int y, const pf_ir_attr *attr)
{
    int in[2] = {x, y};
    return gb_node(b, op, in, 2, 1, attr, PF_IR_ACT_NONE, 0, 0);
}

static pf_model *gb_model(gb *b, int out)
{
    if (b->ok) b->ok = pf_ir_mark_output(b->g, out) == PF_OK;
    if (b->ok) b->ok = pf_ir_infer_shapes(b->g) == PF_OK;
    pf_model *m = NULL;
    if (!b->ok) {
        fprintf(stderr, "  building %s: %s\n", b->g ? b->g->name : "?", pf_last_error());
        pf_ir_graph_destroy(&b->g);
        return NULL;
    }
    if (pf_model_from_graph(b->g, &m) != PF_OK) fprintf(stderr, "  model: %s\n", pf_last_error());
    b->g = NULL;
    return m;
}

/* ---- running and comparing ---------------------------------------------------------- */

typedef struct io {
    int n_in, n_out;
    pf_tensor hin[4], hout[4];    /* host: inputs, CPU outputs */
    pf_tensor din[4], dout[4];    /* device */
} io;

static float tget(const pf_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case PF_DTYPE_F16: return pf_f16_to_f32(((const uint16_t *)t->data)[i]);
    case PF_DTYPE_I32: return (float)((const int32_t *)t->data)[i];
    case PF_DTYPE_U8: return (float)((const uint8_t *)t->data)[i];
    default: return ((const float *)t->data)[i];
    }
}

static void shape_of(const pf_model_io *mi, int batch, int64_t *shape)
{
    for (int d = 0; d < mi->ndim; d++) shape[d] = mi->shape[d] < 0 ? batch : mi->shape[d];
}

/* Host inputs (uniform in [lo, hi]) and CPU outputs of m at `batch`. */
static bool io_setup(io *o, pf_model *m, int batch, float lo, float hi)
{
    memset(o, 0, sizeof *o);
    o->n_in = pf_model_num_inputs(m);
    o->n_out = pf_model_num_outputs(m);
    for (int i = 0; i < o->n_in; i++) {
        pf_model_io mi = pf_model_input(m, i);
        int64_t shape[PF_NN_MAX_DIMS];
        shape_of(&mi, batch, shape);
        if (pf_tensor_alloc(&o->hin[i], mi.dtype, mi.ndim, shape, PF_LAYOUT_NONE, NULL, NULL))
            return false;
        int64_t n = pf_tensor_numel(&o->hin[i]);
        for (int64_t k = 0; k < n; k++) {
            float v = lo + (hi - lo) * (float)(pf_test_rand() % 1000003) / 1000003.0f;
            if (mi.dtype == PF_DTYPE_F32) ((float *)o->hin[i].data)[k] = v;
            else if (mi.dtype == PF_DTYPE_I32) ((int32_t *)o->hin[i].data)[k] = (int32_t)v;
        }
    }
    for (int i = 0; i < o->n_out; i++) {
        pf_model_io mo = pf_model_output(m, i);
        int64_t shape[PF_NN_MAX_DIMS];
        shape_of(&mo, batch, shape);
        if (pf_tensor_alloc(&o->hout[i], mo.dtype, mo.ndim, shape, PF_LAYOUT_NONE, NULL, NULL))
            return false;
    }
    pf_nn_exec_params p = pf_nn_exec_params_default();
    p.max_batch = batch;
    pf_nn_exec *x = NULL;
    pf_status st = pf_nn_exec_create(m, &p, &x);
    if (st == PF_OK) st = pf_nn_exec_run(x, NULL, o->hin, o->n_in, o->hout, o->n_out);
    pf_nn_exec_destroy(&x);
    if (st != PF_OK) {
        fprintf(stderr, "  CPU run: %s\n", pf_last_error());
        return false;
    }
    return true;
}

static void io_free(io *o)
{
    for (int i = 0; i < 4; i++) {
        pf_tensor_unref(&o->hin[i]);
        pf_tensor_unref(&o->hout[i]);
        pf_tensor_unref(&o->din[i]);
        pf_tensor_unref(&o->dout[i]);
    }
}

/* Device copies of the inputs and room for the outputs (dtype out_dt for
 * float outputs). */
static bool io_device(io *o, pf_dtype out_dt)
{
    for (int i = 0; i < o->n_in; i++) {
        pf_tensor *h = &o->hin[i];
        if (pf_tensor_alloc(&o->din[i], h->dtype, h->ndim, h->shape, PF_LAYOUT_NONE, g_alloc,
                            g_stream))
            return false;
        cudaMemcpy(o->din[i].data, h->data, pf_tensor_nbytes(h), cudaMemcpyHostToDevice);
    }
    for (int i = 0; i < o->n_out; i++) {
        pf_tensor *h = &o->hout[i];
        pf_dtype dt = h->dtype == PF_DTYPE_F32 ? out_dt : h->dtype;
        if (pf_tensor_alloc(&o->dout[i], dt, h->ndim, h->shape, PF_LAYOUT_NONE, g_alloc, g_stream))
            return false;
    }
    return true;
}

/* Max |cuda - cpu| over output k, and whether every element is in tolerance. */
static bool compare_out(const pf_tensor *ref, const pf_tensor *dev, int tol_kind, double *max_err,
                        double *scale_out)
{
    const int64_t n = pf_tensor_numel(ref);
    size_t bytes = pf_tensor_nbytes(dev);
    unsigned char *h = malloc(bytes ? bytes : 1);
    cudaMemcpy(h, dev->data, bytes, cudaMemcpyDeviceToHost);
    pf_tensor hv = *dev;
    hv.data = h;
    double scale = 0, me = 0;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(tget(ref, i)));
    bool ok = true;
    int64_t first = -1;
    for (int64_t i = 0; i < n; i++) {
        const double r = tget(ref, i), c = tget(&hv, i);
        const double e = fabs(c - r);
        double tol;
        switch (tol_kind) {
        case 0: tol = 1e-5 + 1e-4 * fabs(r); break;         /* FP32 op */
        case 1: tol = 1e-2 * fabs(r) + 1e-2 * scale; break; /* FP16 op */
        case 2: tol = 1e-3 * scale; break;                  /* FP32 model */
        case 3: tol = 6e-2 * scale + 1e-3; break;           /* FP16 model */
        default: tol = 0; break;                            /* integers */
        }
        if (ref->dtype == PF_DTYPE_I32) tol = 0;
        if (!(e <= tol) && !(isnan(r) && isnan(c))) {
            if (first < 0) first = i;
            ok = false;
        }
        if (e > me || isnan(e)) me = isnan(e) ? INFINITY : e;
    }
    if (!ok)
        fprintf(stderr, "    first mismatch at %lld: cuda %g vs cpu %g (max err %g, scale %g)\n",
                (long long)first, (double)tget(&hv, first), (double)tget(ref, first), me, scale);
    free(h);
    *max_err = me;
    *scale_out = scale;
    return ok;
}

/* Runs m on CUDA in `prec` (runs times) and compares with the CPU. */
static bool run_cuda(pf_model *m, io *o, int batch, pf_nn_precision prec, bool graphs, int runs,
                     bool model_tol, const char *label)
{
    pf_nn_exec_params p = pf_nn_exec_params_default();
    p.device = g_dev;
    p.precision = prec;
    p.max_batch = batch;
    p.cuda_graphs = graphs;
    pf_nn_exec *x = NULL;
    bool ok = true;
    pf_status st = pf_nn_exec_create(m, &p, &x);
    for (int r = 0; r < runs && st == PF_OK; r++)
        st = pf_nn_exec_run(x, g_stream, o->din, o->n_in, o->dout, o->n_out);
    if (st == PF_OK) st = pf_stream_synchronize(g_stream);
    if (st != PF_OK) {
        fprintf(stderr, "  %s %s: %s\n", label, prec ? "fp16" : "fp32", pf_last_error());
        ok = false;
    }
    for (int k = 0; ok && k < o->n_out; k++) {
        double me, sc;
        const int tk = (prec ? 1 : 0) + (model_tol ? 2 : 0);
        if (!compare_out(&o->hout[k], &o->dout[k], tk, &me, &sc)) {
            fprintf(stderr, "  %s %s output %d out of tolerance\n", label, prec ? "fp16" : "fp32",
                    k);
            ok = false;
        }
        if (model_tol)
            printf("    %-40s %s out %d: max abs err %.3g (output scale %.3g)\n", label,
                   prec ? "fp16" : "fp32", k, me, sc);
    }
    pf_nn_exec_destroy(&x);
    return ok;
}

/* One op model checked in FP32 (always) and FP16 (unless fp32_only). */
static void check_model(pf_model *m, const char *label, float lo, float hi, bool fp32_only)
{
    if (!m) {
        fprintf(stderr, "  %s: no model\n", label);
        CHECK(m != NULL);
        return;
    }
    io o;
    bool ok = io_setup(&o, m, 1, lo, hi);
    if (ok) ok = io_device(&o, PF_DTYPE_F32);
    if (ok) ok = run_cuda(m, &o, 1, PF_NN_FP32, true, 2, false, label);
    if (ok && !fp32_only) ok = run_cuda(m, &o, 1, PF_NN_FP16, true, 2, false, label);
    if (!ok) fprintf(stderr, "  FAILED: %s\n", label);
    CHECK(ok);
    io_free(&o);
    pf_model_free(&m);
}

/* ---- op cases ---------------------------------------------------------------------- */

static const int64_t D4[4] = {2, 3, 5, 7};

static void test_unary(void)
{
    static const struct { pf_ir_op op; float a, b; bool fp32_only; } cases[] = {
        {PF_IR_RELU, 0, 0, false}, {PF_IR_SIGMOID, 0, 0, false}, {PF_IR_TANH, 0, 0, false},
        {PF_IR_HARD_SIGMOID, 0.2f, 0.5f, false}, {PF_IR_HARD_SWISH, 0, 0, false},
        {PF_IR_LEAKY_RELU, 0.1f, 0, false}, {PF_IR_CLIP, -0.5f, 0.5f, false},
        {PF_IR_ELU, 1.0f, 0, false}, {PF_IR_SELU, 1.6733f, 1.0507f, false},
        {PF_IR_SOFTPLUS, 0, 0, false}, {PF_IR_SOFTSIGN, 0, 0, false}, {PF_IR_ABS, 0, 0, false},
        {PF_IR_NEG, 0, 0, false}, {PF_IR_EXP, 0, 0, false}, {PF_IR_ERF, 0, 0, false},
        {PF_IR_SIN, 0, 0, false}, {PF_IR_COS, 0, 0, false}, {PF_IR_FLOOR, 0, 0, true},
        {PF_IR_CEIL, 0, 0, true}, {PF_IR_ROUND, 0, 0, true}, {PF_IR_SIGN, 0, 0, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gb b = gb_new("unary");
        int x = gb_in(&b, 4, D4);
        pf_ir_attr a;
        memset(&a, 0, sizeof a);
        a.unary.alpha = cases[i].a;
        a.unary.beta = cases[i].b;
        int y = gb1(&b, cases[i].op, x, &a);
        char label[64];
        snprintf(label, sizeof label, "unary %s", pf_ir_op_name(cases[i].op));
        check_model(gb_model(&b, y), label, -3, 3, cases[i].fp32_only);
    }
    /* Log, Sqrt, Reciprocal on positive values (after Exp). */
    const pf_ir_op pos[3] = {PF_IR_LOG, PF_IR_SQRT, PF_IR_RECIPROCAL};
    for (int i = 0; i < 3; i++) {
        gb b = gb_new("unary_pos");
        int x = gb_in(&b, 4, D4);
        int y = gb1(&b, pos[i], gb1(&b, PF_IR_EXP, x, NULL), NULL);
        check_model(gb_model(&b, y), pf_ir_op_name(pos[i]), -2, 2, false);
    }
}

static void test_binary(void)
{
    static const int64_t shapes[][5] = {
        /* ndim, dims of the second operand (broadcast against [2,3,5,7]) */
        {3, 3, 1, 7, 0}, {1, 1, 0, 0, 0}, {4, 2, 1, 5, 1}, {4, 2, 3, 5, 7}, {1, 7, 0, 0, 0},
    };
    const pf_ir_op ops[] = {PF_IR_ADD, PF_IR_SUB, PF_IR_MUL, PF_IR_MAX, PF_IR_MIN, PF_IR_PRELU};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
            gb b = gb_new("binary");
            int x = gb_in(&b, 4, D4);
            int y = gb_in(&b, (int)shapes[s][0], &shapes[s][1]);
            int in[2] = {x, y};
            int z = gb_node(&b, ops[i], in, 2, 1, NULL,
                            ops[i] == PF_IR_ADD ? PF_IR_ACT_RELU : PF_IR_ACT_NONE, 0, 0);
            char label[64];
            snprintf(label, sizeof label, "binary %s shape %zu", pf_ir_op_name(ops[i]), s);
            check_model(gb_model(&b, z), label, -2, 2, false);
        }
    }
    /* Div and Pow on positive operands; Where over each comparison. */
    {
        gb b = gb_new("div");
        int x = gb_in(&b, 4, D4);
        int64_t d3[3] = {3, 1, 7};
        int y = gb1(&b, PF_IR_EXP, gb_in(&b, 3, d3), NULL);
        check_model(gb_model(&b, gb2(&b, PF_IR_DIV, x, y, NULL)), "Div", -2, 2, false);
    }
    {
        gb b = gb_new("pow");
        int x = gb1(&b, PF_IR_EXP, gb_in(&b, 4, D4), NULL);
        int64_t d1[1] = {7};
        int y = gb_in(&b, 1, d1);
        check_model(gb_model(&b, gb2(&b, PF_IR_POW, x, y, NULL)), "Pow", -1, 1, false);
    }
    const pf_ir_op cmp[] = {PF_IR_LESS, PF_IR_GREATER, PF_IR_EQUAL, PF_IR_LESS_OR_EQUAL,
                            PF_IR_GREATER_OR_EQUAL};
    for (size_t i = 0; i < sizeof cmp / sizeof cmp[0]; i++) {
        gb b = gb_new("where");
        int x = gb_in(&b, 4, D4);
        int64_t d2[2] = {5, 7};
        int y = gb_in(&b, 2, d2);
        int c = gb2(&b, cmp[i], x, cmp[i] == PF_IR_EQUAL ? x : y, NULL);
        int in[3] = {c, x, y};
        int z = gb_node(&b, PF_IR_WHERE, in, 3, 1, NULL, PF_IR_ACT_NONE, 0, 0);
        char label[64];
        snprintf(label, sizeof label, "Where(%s)", pf_ir_op_name(cmp[i]));
        check_model(gb_model(&b, z), label, -2, 2, true);
    }
    for (int mean = 0; mean < 2; mean++) {
        gb b = gb_new("variadic");
        int64_t d1[1] = {7}, d3[3] = {3, 5, 1};
        int in[3] = {gb_in(&b, 4, D4), gb_in(&b, 1, d1), gb_in(&b, 3, d3)};
        int z = gb_node(&b, mean ? PF_IR_MEAN_N : PF_IR_SUM, in, 3, 1, NULL, PF_IR_ACT_NONE, 0, 0);
        check_model(gb_model(&b, z), mean ? "Mean" : "Sum", -2, 2, false);
    }
}

static void test_movement(void)
{
    pf_ir_attr a;
    for (int axis = 1; axis < 4; axis += 2) { /* Concat on C and W */
        gb b = gb_new("concat");
        int64_t d2[4] = {2, 3, 5, 7};
        d2[axis] = 4;
        int in[3] = {gb_in(&b, 4, D4), gb_in(&b, 4, d2), gb_in(&b, 4, D4)};
        memset(&a, 0, sizeof a);
        a.axis.axis = axis;
        check_model(gb_model(&b, gb_node(&b, PF_IR_CONCAT, in, 3, 1, &a, 0, 0, 0)), "Concat", -1,
                    1, false);
    }
    {
        gb b = gb_new("split");
        memset(&a, 0, sizeof a);
        a.split.axis = 2;
        a.split.n = 2;
        a.split.sizes[0] = 2;
        a.split.sizes[1] = 3;
        int x = gb_in(&b, 4, D4);
        int y0 = gb_node(&b, PF_IR_SPLIT, &x, 1, 2, &a, 0, 0, 0);
        /* Both parts reach the output through a Concat on H, swapped. */
        memset(&a, 0, sizeof a);
        a.axis.axis = 2;
        int in[2] = {y0 + 1, y0};
        check_model(gb_model(&b, gb_node(&b, PF_IR_CONCAT, in, 2, 1, &a, 0, 0, 0)) , "Split",
                    -1, 1, false);
    }
    {
        gb b = gb_new("transpose");
        memset(&a, 0, sizeof a);
        a.transpose.n = 4;
        const int64_t perm[4] = {0, 2, 3, 1};
        memcpy(a.transpose.perm, perm, sizeof perm);
        check_model(gb_model(&b, gb1(&b, PF_IR_TRANSPOSE, gb_in(&b, 4, D4), &a)), "Transpose", -1,
                    1, false);
    }
    for (int neg = 0; neg < 2; neg++) {
        gb b = gb_new("slice");
        memset(&a, 0, sizeof a);
        a.slice.n = 2;
        a.slice.axes[0] = 2, a.slice.starts[0] = neg ? 4 : 1, a.slice.ends[0] = neg ? 0 : 5,
        a.slice.steps[0] = neg ? -2 : 2;
        a.slice.axes[1] = 3, a.slice.starts[1] = 1, a.slice.ends[1] = 6, a.slice.steps[1] = 1;
        check_model(gb_model(&b, gb1(&b, PF_IR_SLICE, gb_in(&b, 4, D4), &a)),
                    neg ? "Slice step -2" : "Slice step 2", -1, 1, false);
    }
    for (int mode = 0; mode < 3; mode++) {
        gb b = gb_new("pad");
        memset(&a, 0, sizeof a);
        a.pad.n = 4;
        a.pad.begin[2] = 2, a.pad.end[2] = 1, a.pad.begin[3] = 1, a.pad.end[3] = mode ? 3 : -2;
        a.pad.mode = (pf_ir_pad_mode)mode;
        a.pad.value = 0.5;
        char label[32];
        snprintf(label, sizeof label, "Pad mode %d", mode);
        check_model(gb_model(&b, gb1(&b, PF_IR_PAD, gb_in(&b, 4, D4), &a)), label, -1, 1, false);
    }
    {
        gb b = gb_new("gather");
        int64_t id[2] = {2, 2}, iv[4] = {2, -1, 0, 1};
        int x = gb_in(&b, 4, D4);
        int i = gb_const_i64(&b, 2, id, iv, 4);
        memset(&a, 0, sizeof a);
        a.axis.axis = 2;
        check_model(gb_model(&b, gb2(&b, PF_IR_GATHER, x, i, &a)), "Gather", -1, 1, false);
    }
    {
        gb b = gb_new("expand");
        int64_t d2[2] = {3, 1};
        int x = gb_in(&b, 2, d2);
        int64_t od[3] = {2, 3, 4};
        int y = -1;
        if (b.ok) b.ok = pf_ir_add_value(b.g, "ex", PF_IR_F32, 3, od, &y) == PF_OK;
        int nid;
        if (b.ok) b.ok = pf_ir_add_node(b.g, PF_IR_EXPAND, "e", "Expand", &x, 1, &y, 1, NULL,
                                        &nid) == PF_OK;
        check_model(gb_model(&b, y), "Expand", -1, 1, false);
    }
    {
        gb b = gb_new("tile");
        int64_t d3[3] = {2, 3, 4};
        memset(&a, 0, sizeof a);
        a.tile.n = 3;
        a.tile.repeats[0] = 2, a.tile.repeats[1] = 1, a.tile.repeats[2] = 3;
        check_model(gb_model(&b, gb1(&b, PF_IR_TILE, gb_in(&b, 3, d3), &a)), "Tile", -1, 1,
                    false);
    }
    for (int k = 0; k < 3; k++) {
        gb b = gb_new("d2s");
        int64_t d[4] = {2, 8, 3, 5};
        if (k == 2) d[1] = 2, d[2] = 6, d[3] = 10;
        memset(&a, 0, sizeof a);
        a.d2s.blocksize = 2;
        a.d2s.crd = k == 1;
        check_model(gb_model(&b, gb1(&b, k == 2 ? PF_IR_SPACE_TO_DEPTH : PF_IR_DEPTH_TO_SPACE,
                                     gb_in(&b, 4, d), &a)),
                    k == 0 ? "DepthToSpace DCR" : k == 1 ? "DepthToSpace CRD" : "SpaceToDepth",
                    -1, 1, false);
    }
    {
        gb b = gb_new("reshape");
        memset(&a, 0, sizeof a);
        a.reshape.kind = PF_IR_RESHAPE_SHAPE;
        a.reshape.n = 2;
        a.reshape.shape[0] = 6, a.reshape.shape[1] = -1;
        check_model(gb_model(&b, gb1(&b, PF_IR_RESHAPE, gb_in(&b, 4, D4), &a)), "Reshape", -1, 1,
                    false);
    }
}

static void test_resize_pool(void)
{
    pf_ir_attr a;
    static const struct { int mode, coord, nearest; double s; } rs[] = {
        {PF_IR_RESIZE_NEAREST, PF_IR_COORD_ASYMMETRIC, PF_IR_NEAREST_FLOOR, 2.0},
        {PF_IR_RESIZE_NEAREST, PF_IR_COORD_HALF_PIXEL, PF_IR_NEAREST_ROUND_PREFER_FLOOR, 3.0},
        {PF_IR_RESIZE_LINEAR, PF_IR_COORD_HALF_PIXEL, 0, 2.0},
        {PF_IR_RESIZE_LINEAR, PF_IR_COORD_ALIGN_CORNERS, 0, 0.5},
        {PF_IR_RESIZE_LINEAR, PF_IR_COORD_PYTORCH_HALF_PIXEL, 0, 1.5},
        {PF_IR_RESIZE_LINEAR, PF_IR_COORD_ASYMMETRIC, 0, 2.0},
    };
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++) {
        gb b = gb_new("resize");
        int64_t d[4] = {1, 3, 6, 8};
        memset(&a, 0, sizeof a);
        a.resize.mode = (pf_ir_resize_mode)rs[i].mode;
        a.resize.coord = (pf_ir_coord_mode)rs[i].coord;
        a.resize.nearest = (pf_ir_nearest_mode)rs[i].nearest;
        a.resize.n = 4;
        a.resize.has_scales = true;
        a.resize.scale[0] = a.resize.scale[1] = 1.0;
        a.resize.scale[2] = a.resize.scale[3] = rs[i].s;
        char label[48];
        snprintf(label, sizeof label, "Resize case %zu", i);
        check_model(gb_model(&b, gb1(&b, PF_IR_RESIZE, gb_in(&b, 4, d), &a)), label, -1, 1,
                    rs[i].mode == PF_IR_RESIZE_NEAREST && rs[i].s == 3.0);
    }
    static const struct { pf_ir_op op; int k, s, pb, pe; bool ceil, incl; } ps[] = {
        {PF_IR_MAXPOOL, 3, 2, 1, 1, false, false}, {PF_IR_MAXPOOL, 2, 2, 0, 0, true, false},
        {PF_IR_AVGPOOL, 3, 1, 1, 1, false, false}, {PF_IR_AVGPOOL, 3, 2, 1, 1, false, true},
        {PF_IR_AVGPOOL, 2, 2, 0, 1, false, false},
    };
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        gb b = gb_new("pool");
        memset(&a, 0, sizeof a);
        a.pool.nsp = 2;
        for (int j = 0; j < 2; j++) {
            a.pool.kernel[j] = ps[i].k;
            a.pool.stride[j] = ps[i].s;
            a.pool.dilation[j] = 1;
            a.pool.pad_begin[j] = ps[i].pb;
            a.pool.pad_end[j] = ps[i].pe;
        }
        a.pool.ceil_mode = ps[i].ceil;
        a.pool.count_include_pad = ps[i].incl;
        char label[48];
        snprintf(label, sizeof label, "%s case %zu", pf_ir_op_name(ps[i].op), i);
        check_model(gb_model(&b, gb1(&b, ps[i].op, gb_in(&b, 4, D4), &a)), label, -1, 1, false);
    }
    for (int k = 0; k < 2; k++) { /* windows of >= 64 cells: the warp-per-output path */
        gb b = gb_new("bigpool");
        int64_t d[4] = {2, 4, 9, 12};
        memset(&a, 0, sizeof a);
        a.pool.nsp = 2;
        a.pool.kernel[0] = 9, a.pool.kernel[1] = 8;
        a.pool.stride[0] = a.pool.stride[1] = 1;
        a.pool.dilation[0] = a.pool.dilation[1] = 1;
        a.pool.pad_end[1] = k; /* AvgPool with a pad column, MaxPool without */
        check_model(gb_model(&b, gb1(&b, k ? PF_IR_AVGPOOL : PF_IR_MAXPOOL, gb_in(&b, 4, d), &a)),
                    k ? "AveragePool 9x8" : "MaxPool 9x8", -1, 1, false);
    }
    for (int k = 0; k < 2; k++) {
        gb b = gb_new("gpool");
        check_model(gb_model(&b, gb1(&b, k ? PF_IR_GLOBAL_MAXPOOL : PF_IR_GLOBAL_AVGPOOL,
                                     gb_in(&b, 4, D4), NULL)),
                    k ? "GlobalMaxPool" : "GlobalAveragePool", -1, 1, false);
    }
}

static void test_reduce_softmax(void)
{
    pf_ir_attr a;
    const pf_ir_op ops[] = {PF_IR_REDUCE_MEAN, PF_IR_REDUCE_SUM, PF_IR_REDUCE_MAX,
                            PF_IR_REDUCE_MIN, PF_IR_REDUCE_PROD, PF_IR_REDUCE_L2,
                            PF_IR_REDUCE_SUM_SQUARE};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        for (int keep = 0; keep < 2; keep++) {
            gb b = gb_new("reduce");
            memset(&a, 0, sizeof a);
            a.reduce.n = keep ? 1 : 2;
            a.reduce.axes[0] = keep ? 1 : 2;
            a.reduce.axes[1] = 3;
            a.reduce.keepdims = keep;
            char label[48];
            snprintf(label, sizeof label, "%s keepdims %d", pf_ir_op_name(ops[i]), keep);
            check_model(gb_model(&b, gb1(&b, ops[i], gb_in(&b, 4, D4), &a)), label,
                        ops[i] == PF_IR_REDUCE_PROD ? 0.5f : -1, ops[i] == PF_IR_REDUCE_PROD ? 1.5f : 1,
                        false);
        }
    }
    for (int k = 0; k < 2; k++) {
        gb b = gb_new("argmax");
        memset(&a, 0, sizeof a);
        a.reduce.n = 1;
        a.reduce.axes[0] = 1 + k;
        a.reduce.keepdims = k;
        check_model(gb_model(&b, gb1(&b, k ? PF_IR_ARGMIN : PF_IR_ARGMAX, gb_in(&b, 4, D4), &a)),
                    k ? "ArgMin" : "ArgMax", -1, 1, true);
    }
    static const struct { pf_ir_op op; int axis; bool legacy; int64_t w; } sm[] = {
        {PF_IR_SOFTMAX, 1, false, 7}, {PF_IR_SOFTMAX, 3, false, 7},
        {PF_IR_LOG_SOFTMAX, 1, false, 7}, {PF_IR_SOFTMAX, 1, true, 7},
        {PF_IR_SOFTMAX, 3, false, 3000}, /* a row longer than a warp's share: the block path */
    };
    for (size_t i = 0; i < sizeof sm / sizeof sm[0]; i++) {
        gb b = gb_new("softmax");
        memset(&a, 0, sizeof a);
        a.axis.axis = sm[i].axis;
        a.axis.legacy = sm[i].legacy;
        int64_t d[4] = {2, 3, 5, sm[i].w};
        char label[48];
        snprintf(label, sizeof label, "%s case %zu", pf_ir_op_name(sm[i].op), i);
        check_model(gb_model(&b, gb1(&b, sm[i].op, gb_in(&b, 4, d), &a)), label, -3, 3, false);
    }
    {
        gb b = gb_new("batchnorm");
        int64_t c1[1] = {3};
        int in[5] = {gb_in(&b, 4, D4), gb_const(&b, 1, c1, 0.5f, 1.5f),
                     gb_const(&b, 1, c1, -1, 1), gb_const(&b, 1, c1, -0.5f, 0.5f),
                     gb_const(&b, 1, c1, 0.5f, 2)};
        memset(&a, 0, sizeof a);
        a.bn.epsilon = 1e-5f;
        check_model(gb_model(&b, gb_node(&b, PF_IR_BATCHNORM, in, 5, 1, &a, 0, 0, 0)),
                    "BatchNormalization", -2, 2, false);
    }
}

static int conv(gb *b, pf_ir_op op, int x, int64_t cin, int64_t cout, int k, int s, int pb,
                int pe, int group, int dil, int nsp, pf_ir_act act)
{
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.conv.nsp = nsp;
    for (int j = 0; j < nsp; j++) {
        a.conv.kernel[j] = k;
        a.conv.stride[j] = s;
        a.conv.dilation[j] = dil;
        a.conv.pad_begin[j] = pb;
        a.conv.pad_end[j] = pe;
    }
    a.conv.group = group;
    int64_t wd[4] = {op == PF_IR_CONV ? cout : cin, op == PF_IR_CONV ? cin / group : cout / group,
                     k, k};
    const float r = 1.0f / sqrtf((float)(cin / group * k * k));
    int w = gb_const(b, 2 + nsp, wd, -r, r);
    int64_t bd[1] = {cout};
    int bias = gb_const(b, 1, bd, -0.5f, 0.5f);
    int in[3] = {x, w, bias};
    return gb_node(b, op, in, 3, 1, &a, act, 0.0f, 6.0f);
}

static void test_conv(void)
{
    static const struct { pf_ir_op op; int cin, cout, k, s, pb, pe, g, dil, nsp, act; int64_t h, w; } cs[] = {
        {PF_IR_CONV, 3, 16, 3, 1, 1, 1, 1, 1, 2, PF_IR_ACT_RELU, 9, 11},
        {PF_IR_CONV, 8, 16, 3, 2, 0, 1, 1, 1, 2, PF_IR_ACT_CLIP, 16, 12}, /* TFLite SAME s2 */
        {PF_IR_CONV, 16, 16, 3, 1, 1, 1, 16, 1, 2, PF_IR_ACT_NONE, 10, 10}, /* depthwise */
        {PF_IR_CONV, 8, 8, 3, 1, 2, 2, 2, 2, 2, PF_IR_ACT_HARD_SWISH, 9, 9}, /* dilated, grouped */
        {PF_IR_CONV, 16, 32, 1, 1, 0, 0, 1, 1, 2, PF_IR_ACT_NONE, 7, 7},
        {PF_IR_CONV, 4, 8, 3, 1, 1, 1, 1, 1, 1, PF_IR_ACT_RELU, 1, 20}, /* 1D */
        {PF_IR_CONV_TRANSPOSE, 16, 8, 2, 2, 0, 0, 1, 1, 2, PF_IR_ACT_NONE, 6, 5},
        {PF_IR_CONV_TRANSPOSE, 8, 8, 4, 2, 1, 1, 1, 1, 2, PF_IR_ACT_RELU, 5, 5},
        {PF_IR_CONV_TRANSPOSE, 8, 4, 3, 2, 0, 1, 1, 1, 2, PF_IR_ACT_SIGMOID, 6, 6}, /* asym */
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        gb b = gb_new("conv");
        int64_t d4[4] = {2, cs[i].cin, cs[i].h, cs[i].w}, d3[3] = {2, cs[i].cin, cs[i].w};
        int x = cs[i].nsp == 2 ? gb_in(&b, 4, d4) : gb_in(&b, 3, d3);
        int y = conv(&b, cs[i].op, x, cs[i].cin, cs[i].cout, cs[i].k, cs[i].s, cs[i].pb, cs[i].pe,
                     cs[i].g, cs[i].dil, cs[i].nsp, (pf_ir_act)cs[i].act);
        char label[48];
        snprintf(label, sizeof label, "%s case %zu", pf_ir_op_name(cs[i].op), i);
        check_model(gb_model(&b, y), label, -1, 1, false);
    }
}

/* conv() with explicit activation parameters, an optional bias and
 * separate begin/end pads per axis. */
static int conv_ex(gb *b, int x, int64_t cin, int64_t cout, int k, int s, const int *pb,
                   const int *pe, int group, int dil, pf_ir_act act, float aa, float ab,
                   bool bias)
{
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.conv.nsp = 2;
    for (int j = 0; j < 2; j++) {
        a.conv.kernel[j] = k;
        a.conv.stride[j] = s;
        a.conv.dilation[j] = dil;
        a.conv.pad_begin[j] = pb[j];
        a.conv.pad_end[j] = pe[j];
    }
    a.conv.group = group;
    int64_t wd[4] = {cout, cin / group, k, k};
    const float r = 1.0f / sqrtf((float)(cin / group * k * k));
    int in[3] = {x, gb_const(b, 4, wd, -r, r), -1};
    int64_t bd[1] = {cout};
    if (bias) in[2] = gb_const(b, 1, bd, -0.5f, 0.5f);
    return gb_node(b, PF_IR_CONV, in, bias ? 3 : 2, 1, &a, act, aa, ab);
}

/* Depthwise convs on channels-last inputs (pixflow's dwconv kernel) in the
 * shapes MobileNets use, and a channel multiplier (cuDNN grouped conv). */
static void test_dwconv(void)
{
    static const struct { int c, mult, k, s, dil, pb0, pb1, pe0, pe1, act; int64_t n, h, w; } cs[] = {
        {16, 1, 3, 2, 1, 1, 1, 1, 1, PF_IR_ACT_RELU, 2, 13, 10},       /* stride 2 */
        {24, 1, 5, 1, 1, 2, 2, 2, 2, PF_IR_ACT_HARD_SWISH, 2, 9, 11},  /* 5x5 */
        {10, 1, 5, 2, 1, 1, 2, 2, 1, PF_IR_ACT_NONE, 1, 12, 12},       /* 5x5 s2, odd C */
        {16, 1, 3, 1, 2, 2, 2, 2, 2, PF_IR_ACT_CLIP, 2, 10, 9},        /* dilation 2 */
        {8, 1, 3, 2, 1, 0, 0, 1, 1, PF_IR_ACT_RELU, 2, 16, 12},        /* TFLite SAME s2 */
        {6, 1, 3, 1, 1, 1, 0, 0, 2, PF_IR_ACT_SIGMOID, 1, 7, 8},       /* asymmetric */
        {8, 2, 3, 1, 1, 1, 1, 1, 1, PF_IR_ACT_NONE, 2, 6, 7},          /* multiplier 2 */
        {32, 1, 3, 1, 1, 1, 1, 1, 1, PF_IR_ACT_RELU, 8, 14, 14},       /* batch 8 */
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        gb b = gb_new("dwconv");
        int64_t d[4] = {cs[i].n, cs[i].c, cs[i].h, cs[i].w};
        const int pb[2] = {cs[i].pb0, cs[i].pb1}, pe[2] = {cs[i].pe0, cs[i].pe1};
        int y = conv_ex(&b, gb_in(&b, 4, d), cs[i].c, (int64_t)cs[i].c * cs[i].mult, cs[i].k,
                        cs[i].s, pb, pe, cs[i].c, cs[i].dil, (pf_ir_act)cs[i].act, 0.0f, 6.0f,
                        i % 2 == 0);
        char label[48];
        snprintf(label, sizeof label, "depthwise case %zu", i);
        check_model(gb_model(&b, y), label, -1, 1, false);
    }
}

/* ---- integer Clip, integer/float Mod, align_corners downscale -------------------------- */

/* Clip of an I8 value with only a min or only a max (the other bound the
 * importer's -inf/+inf). The CPU's Clip is F32 only, so the reference is
 * its F32 Clip over the same integer values (exact in f32); the CUDA
 * result (I8, read back as the model's I32 output) must match exactly. */
static void check_int_clip(float lo, float hi, const char *label)
{
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.unary.alpha = lo;
    a.unary.beta = hi;
    gb bf = gb_new("clip_f32");
    pf_model *mf = gb_model(&bf, gb1(&bf, PF_IR_CLIP, gb_in(&bf, 4, D4), &a));
    gb bi = gb_new("clip_i8");
    pf_model *mi = gb_model(&bi, gb1(&bi, PF_IR_CLIP, gb_in_dt(&bi, PF_IR_I8, 4, D4), &a));
    CHECK(mf != NULL && mi != NULL);
    pf_tensor xf = {0}, xi = {0}, ref = {0}, dx = {0}, dy = {0};
    bool ok = mf && mi && pf_model_output(mi, 0).dtype == PF_DTYPE_I32 &&
              pf_tensor_alloc(&xf, PF_DTYPE_F32, 4, D4, PF_LAYOUT_NONE, NULL, NULL) == PF_OK &&
              pf_tensor_alloc(&xi, PF_DTYPE_I32, 4, D4, PF_LAYOUT_NONE, NULL, NULL) == PF_OK &&
              pf_tensor_alloc(&ref, PF_DTYPE_F32, 4, D4, PF_LAYOUT_NONE, NULL, NULL) == PF_OK &&
              pf_tensor_alloc(&dx, PF_DTYPE_I32, 4, D4, PF_LAYOUT_NONE, g_alloc, g_stream) ==
                  PF_OK &&
              pf_tensor_alloc(&dy, PF_DTYPE_I32, 4, D4, PF_LAYOUT_NONE, g_alloc, g_stream) == PF_OK;
    const int64_t n = pf_tensor_numel(&xf);
    for (int64_t i = 0; ok && i < n; i++) {
        /* the whole int8 range, bounds themselves and their neighbours included */
        const int32_t v = (int32_t)pf_test_rand_range(-128, 127);
        ((int32_t *)xi.data)[i] = v;
        ((float *)xf.data)[i] = (float)v;
    }
    if (ok) {
        pf_nn_exec *x = NULL;
        pf_nn_exec_params p = pf_nn_exec_params_default();
        pf_status st = pf_nn_exec_create(mf, &p, &x);
        if (st == PF_OK) st = pf_nn_exec_run(x, NULL, &xf, 1, &ref, 1);
        pf_nn_exec_destroy(&x);
        if (st != PF_OK) fprintf(stderr, "  %s CPU: %s\n", label, pf_last_error());
        ok = st == PF_OK;
    }
    if (ok) cudaMemcpy(dx.data, xi.data, pf_tensor_nbytes(&xi), cudaMemcpyHostToDevice);
    for (int prec = 0; ok && prec < 2; prec++) {
        pf_nn_exec_params p = pf_nn_exec_params_default();
        p.device = g_dev;
        p.precision = prec ? PF_NN_FP16 : PF_NN_FP32;
        pf_nn_exec *x = NULL;
        pf_status st = pf_nn_exec_create(mi, &p, &x);
        cudaMemset(dy.data, 0x55, pf_tensor_nbytes(&dy));
        for (int r = 0; r < 2 && st == PF_OK; r++)
            st = pf_nn_exec_run(x, g_stream, &dx, 1, &dy, 1);
        if (st == PF_OK) st = pf_stream_synchronize(g_stream);
        pf_nn_exec_destroy(&x);
        if (st != PF_OK) {
            fprintf(stderr, "  %s CUDA: %s\n", label, pf_last_error());
            ok = false;
            break;
        }
        int32_t *h = malloc((size_t)n * sizeof *h);
        cudaMemcpy(h, dy.data, (size_t)n * sizeof *h, cudaMemcpyDeviceToHost);
        int64_t bad = 0, first = -1;
        for (int64_t i = 0; i < n; i++) {
            if ((float)h[i] != ((const float *)ref.data)[i]) {
                if (first < 0) first = i;
                bad++;
            }
        }
        if (bad)
            fprintf(stderr, "  %s %s: %lld of %lld differ; first at %lld: x %d, cuda %d, cpu %g\n",
                    label, prec ? "fp16" : "fp32", (long long)bad, (long long)n,
                    (long long)first, ((const int32_t *)xi.data)[first], h[first],
                    (double)((const float *)ref.data)[first]);
        ok = bad == 0;
        free(h);
    }
    if (!ok) fprintf(stderr, "  FAILED: %s\n", label);
    CHECK(ok);
    pf_tensor_unref(&xf);
    pf_tensor_unref(&xi);
    pf_tensor_unref(&ref);
    pf_tensor_unref(&dx);
    pf_tensor_unref(&dy);
    pf_model_free(&mf);
    pf_model_free(&mi);
}

static void test_int_clip_mod(void)
{
    check_int_clip(-INFINITY, 0.0f, "Clip int8 max 0 only");
    check_int_clip(0.0f, INFINITY, "Clip int8 min 0 only");
    check_int_clip(-FLT_MAX, 37.0f, "Clip int8 max 37 only (opset < 11 default min)");
    /* Integer bounds only: ONNX gives int8 Clip bounds of the input type (a
     * fractional bound is not a valid model), and the F32 reference would keep it. */
    check_int_clip(-6.0f, FLT_MAX, "Clip int8 min -6 only (opset < 11 default max)");
    check_int_clip(-3.0f, 4.0f, "Clip int8 min -3 max 4");

    /* Mod, fmod 0 (sign of the divisor) and 1 (C's %: sign of the dividend),
     * on I64 operands of both signs (zero divisors included: 0 on both),
     * same shape and broadcast. */
    static const int64_t d3[3] = {3, 1, 7};
    for (int fm = 0; fm < 2; fm++) {
        for (int bc = 0; bc < 2; bc++) {
            pf_ir_attr a;
            memset(&a, 0, sizeof a);
            a.unary.alpha = (float)fm;
            gb b = gb_new("mod_i64");
            int x = gb_in_dt(&b, PF_IR_I64, 4, D4);
            int y = bc ? gb_in_dt(&b, PF_IR_I64, 3, d3) : gb_in_dt(&b, PF_IR_I64, 4, D4);
            char label[64];
            snprintf(label, sizeof label, "Mod int64 fmod %d%s", fm, bc ? " broadcast" : "");
            check_model(gb_model(&b, gb2(&b, PF_IR_MOD, x, y, &a)), label, -40, 40, false);
        }
        /* F32 (fmod 0 is the CPU's Python-style extension); FP32 only, as
         * the result jumps where x crosses a multiple of y */
        pf_ir_attr a;
        memset(&a, 0, sizeof a);
        a.unary.alpha = (float)fm;
        gb b = gb_new("mod_f32");
        int x = gb_in(&b, 4, D4);
        int y = gb_in(&b, 3, d3);
        char label[64];
        snprintf(label, sizeof label, "Mod f32 fmod %d", fm);
        check_model(gb_model(&b, gb2(&b, PF_IR_MOD, x, y, &a)), label, -5, 5, true);
    }
}

/* Linear align_corners (and pytorch_half_pixel) downscales by a given
 * scale whose product with the input length is not the output length:
 * ONNX divides by scale * in - 1 (2.4 - 1 for in 4, scale 0.6), not by
 * out - 1. Covers the 4D fast paths (row-major, channels-last via a
 * conv, F16 rows of 8) and the generic kernel (rank 3), and outputs of
 * length 1 (resized length 1.2, and exactly 1). */
static void test_resize_align_corners_scales(void)
{
    static const struct { int nd; int64_t d[4]; double s[4]; int coord; } rs[] = {
        {4, {1, 1, 2, 4}, {1, 1, 0.6, 0.6}, PF_IR_COORD_ALIGN_CORNERS},  /* the ONNX case */
        {4, {2, 3, 9, 13}, {1, 1, 0.6, 0.7}, PF_IR_COORD_ALIGN_CORNERS},
        {4, {1, 2, 2, 5}, {1, 1, 0.5, 0.5}, PF_IR_COORD_ALIGN_CORNERS},  /* length 1.0 */
        {4, {1, 4, 7, 27}, {1, 1, 0.45, 0.6}, PF_IR_COORD_ALIGN_CORNERS}, /* 16 wide: rows of 8 */
        {4, {1, 1, 2, 4}, {1, 1, 0.6, 0.6}, PF_IR_COORD_PYTORCH_HALF_PIXEL},
        {3, {3, 6, 8}, {1, 0.6, 0.7}, PF_IR_COORD_ALIGN_CORNERS},         /* generic kernel */
        {4, {2, 5, 6, 8}, {1, 0.6, 0.7, 0.6}, PF_IR_COORD_ALIGN_CORNERS}, /* generic, C scaled */
    };
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++) {
        pf_ir_attr a;
        memset(&a, 0, sizeof a);
        a.resize.mode = PF_IR_RESIZE_LINEAR;
        a.resize.coord = (pf_ir_coord_mode)rs[i].coord;
        a.resize.n = rs[i].nd;
        a.resize.has_scales = true;
        for (int d = 0; d < rs[i].nd; d++) a.resize.scale[d] = rs[i].s[d];
        gb b = gb_new("resize_ac");
        char label[64];
        snprintf(label, sizeof label, "Resize linear scales case %zu", i);
        check_model(gb_model(&b, gb1(&b, PF_IR_RESIZE, gb_in(&b, rs[i].nd, rs[i].d), &a)), label,
                    -1, 1, false);
    }
    /* the same downscale of a conv's (channels-last) output */
    {
        pf_ir_attr a;
        memset(&a, 0, sizeof a);
        gb b = gb_new("resize_ac_nhwc");
        int64_t d[4] = {1, 8, 9, 13}, wd[4] = {8, 8, 1, 1};
        a.conv.nsp = 2;
        for (int j = 0; j < 2; j++) {
            a.conv.kernel[j] = 1;
            a.conv.stride[j] = 1;
            a.conv.dilation[j] = 1;
        }
        a.conv.group = 1;
        int in[2] = {gb_in(&b, 4, d), gb_const(&b, 4, wd, -0.5f, 0.5f)};
        int c = gb_node(&b, PF_IR_CONV, in, 2, 1, &a, PF_IR_ACT_NONE, 0, 0);
        memset(&a, 0, sizeof a);
        a.resize.mode = PF_IR_RESIZE_LINEAR;
        a.resize.coord = PF_IR_COORD_ALIGN_CORNERS;
        a.resize.n = 4;
        a.resize.has_scales = true;
        a.resize.scale[0] = a.resize.scale[1] = 1.0;
        a.resize.scale[2] = 0.6;
        a.resize.scale[3] = 0.7;
        check_model(gb_model(&b, gb1(&b, PF_IR_RESIZE, c, &a)), "Resize linear scales NHWC", -1,
                    1, false);
    }
}

/* Global pooling and resize reading channels-last values (a conv's output),
 * written row-major (graph output) and channels-last (read by a conv). */
static void test_nhwc_pool_resize(void)
{
    static const int zp[2] = {1, 1};
    /* k 4, 5: 40 channels of a 37x33 map at batch 1: two channel blocks, so
     * the pixels are split into slices (partials, then a combine). */
    for (int k = 0; k < 6; k++) {
        gb b = gb_new("nhwc_gpool");
        const bool big = k >= 4;
        int64_t d[4] = {big ? 1 : (k < 2 ? 2 : 8), 5, big ? 37 : 9, big ? 33 : 7};
        const int ch = big ? 40 : 12;
        int c = conv_ex(&b, gb_in(&b, 4, d), 5, ch, 3, 1, zp, zp, 1, 1, PF_IR_ACT_RELU, 0, 0, true);
        int p = gb1(&b, k % 2 ? PF_IR_GLOBAL_MAXPOOL : PF_IR_GLOBAL_AVGPOOL, c, NULL);
        static const int z0[2] = {0, 0};
        if (k >= 2 && !big)
            p = conv_ex(&b, p, 12, 6, 1, 1, z0, z0, 1, 1, PF_IR_ACT_NONE, 0, 0, true);
        char label[80];
        snprintf(label, sizeof label, "conv -> %s%s", k % 2 ? "GlobalMaxPool" : "GlobalAveragePool",
                 big ? ", 40x37x33, split pixels" : (k >= 2 ? " -> conv, batch 8" : ""));
        check_model(gb_model(&b, p), label, -1, 1, false);
    }
    static const struct { int mode, coord; double s; } rs[] = {
        {PF_IR_RESIZE_LINEAR, PF_IR_COORD_HALF_PIXEL, 2.0},
        {PF_IR_RESIZE_LINEAR, PF_IR_COORD_ALIGN_CORNERS, 0.5},
        {PF_IR_RESIZE_LINEAR, PF_IR_COORD_PYTORCH_HALF_PIXEL, 4.0},
        {PF_IR_RESIZE_NEAREST, PF_IR_COORD_ASYMMETRIC, 2.0},
    };
    for (size_t i = 0; i < 2 * sizeof rs / sizeof rs[0]; i++) {
        const size_t r = i / 2;
        gb b = gb_new("nhwc_resize");
        int64_t d[4] = {2, 4, 6, 8};
        int c = conv_ex(&b, gb_in(&b, 4, d), 4, 10, 3, 1, zp, zp, 1, 1, PF_IR_ACT_NONE, 0, 0, true);
        pf_ir_attr a;
        memset(&a, 0, sizeof a);
        a.resize.mode = (pf_ir_resize_mode)rs[r].mode;
        a.resize.coord = (pf_ir_coord_mode)rs[r].coord;
        a.resize.nearest = PF_IR_NEAREST_FLOOR;
        a.resize.n = 4;
        a.resize.has_scales = true;
        a.resize.scale[0] = a.resize.scale[1] = 1.0;
        a.resize.scale[2] = a.resize.scale[3] = rs[r].s;
        int y = gb1(&b, PF_IR_RESIZE, c, &a);
        if (i % 2) y = conv_ex(&b, y, 10, 3, 3, 1, zp, zp, 1, 1, PF_IR_ACT_NONE, 0, 0, true);
        char label[64];
        snprintf(label, sizeof label, "conv -> Resize case %zu%s", r, i % 2 ? " -> conv" : "");
        check_model(gb_model(&b, y), label, -1, 1, false);
    }
}

/* Convs on 1x1 spatial maps (fc1x1.cu): every activation, with and
 * without bias, batch 1 and 8, channel counts off multiples of 8; and the
 * squeeze-excite shape gpool -> conv -> conv -> Mul. */
static void test_conv_1x1_spatial(void)
{
    static const struct { pf_ir_act act; float a, b; } acts[] = {
        {PF_IR_ACT_NONE, 0, 0},          {PF_IR_ACT_RELU, 0, 0},
        {PF_IR_ACT_CLIP, 0.0f, 6.0f},    {PF_IR_ACT_SIGMOID, 0, 0},
        {PF_IR_ACT_TANH, 0, 0},          {PF_IR_ACT_LEAKY_RELU, 0.1f, 0},
        {PF_IR_ACT_HARD_SIGMOID, 1.0f / 6.0f, 0.5f}, {PF_IR_ACT_HARD_SWISH, 0, 0},
    };
    static const int64_t ch[][2] = {{37, 19}, {120, 30}, {5, 67}};
    static const int z0[2] = {0, 0};
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
        for (int v = 0; v < 4; v++) {
            const int64_t n = v % 2 ? 8 : 1;
            const int64_t *cc = ch[(i + (size_t)v) % 3];
            gb b = gb_new("conv1x1sp");
            int64_t d[4] = {n, cc[0], 1, 1};
            int y = conv_ex(&b, gb_in(&b, 4, d), cc[0], cc[1], 1, 1, z0, z0, 1, 1, acts[i].act,
                            acts[i].a, acts[i].b, v < 2);
            char label[64];
            snprintf(label, sizeof label, "1x1-spatial conv act %d %s batch %d C %d->%d",
                     (int)acts[i].act, v < 2 ? "bias" : "no bias", (int)n, (int)cc[0],
                     (int)cc[1]);
            check_model(gb_model(&b, y), label, -2, 2, false);
        }
    }
    for (int n = 1; n <= 8; n += 7) {
        gb b = gb_new("se");
        int64_t d[4] = {n, 36, 5, 6};
        static const int p1[2] = {1, 1};
        int x = conv_ex(&b, gb_in(&b, 4, d), 36, 36, 3, 1, p1, p1, 1, 1, PF_IR_ACT_RELU, 0, 0, true);
        int p = gb1(&b, PF_IR_GLOBAL_AVGPOOL, x, NULL);
        int f1 = conv_ex(&b, p, 36, 9, 1, 1, z0, z0, 1, 1, PF_IR_ACT_RELU, 0, 0, true);
        int f2 = conv_ex(&b, f1, 9, 36, 1, 1, z0, z0, 1, 1, PF_IR_ACT_HARD_SIGMOID, 1.0f / 6.0f,
                         0.5f, true);
        int m = gb2(&b, PF_IR_MUL, x, f2, NULL);
        int y = conv_ex(&b, m, 36, 12, 1, 1, z0, z0, 1, 1, PF_IR_ACT_NONE, 0, 0, true);
        check_model(gb_model(&b, y), n == 1 ? "squeeze-excite batch 1" : "squeeze-excite batch 8",
                    -1, 1, false);
    }
}

/* Per-channel operands against channels-last maps (the 16-byte
 * per-channel fast path when C % 8 == 0): squeeze-excite Mul in both
 * operand orders, batch 1 and 8, a Sub (channels first) and a Div, and a
 * constant [C, 1, 1] shared by the batch, with C 40 and 12 (no fast path). */
static void test_channel_bcast(void)
{
    static const int p1[2] = {1, 1};
    static const pf_ir_op ops[4] = {PF_IR_MUL, PF_IR_MUL, PF_IR_SUB, PF_IR_DIV};
    for (int v = 0; v < 16; v++) {
        const int64_t c = v & 8 ? 12 : 40, n = v & 1 ? 8 : 1;
        const int oi = (v >> 1) & 3;
        const bool first = oi == 1 || oi == 2; /* never divide by x (ReLU zeros) */
        gb b = gb_new("chan");
        int64_t d[4] = {n, c, 6, 5};
        int x = conv_ex(&b, gb_in(&b, 4, d), c, c, 3, 1, p1, p1, 1, 1, PF_IR_ACT_RELU, 0, 0, true);
        int sc;
        if (oi == 2) {
            int64_t cd[3] = {c, 1, 1};
            sc = gb_const(&b, 3, cd, -1, 1);
        } else {
            int p = gb1(&b, PF_IR_GLOBAL_AVGPOOL, x, NULL);
            sc = gb1(&b, PF_IR_SIGMOID, p, NULL); /* in (0, 1): a safe divisor */
        }
        int in[2] = {first ? sc : x, first ? x : sc};
        int m = gb_node(&b, ops[oi], in, 2, 1, NULL, oi == 2 ? PF_IR_ACT_RELU : PF_IR_ACT_NONE,
                        0, 0);
        int y = conv_ex(&b, m, c, 8, 3, 1, p1, p1, 1, 1, PF_IR_ACT_NONE, 0, 0, true);
        char label[80];
        snprintf(label, sizeof label, "per-channel %s%s C %d batch %d", pf_ir_op_name(ops[oi]),
                 first ? " (channels first)" : "", (int)c, (int)n);
        check_model(gb_model(&b, y), label, -1, 1, false);
    }
}

/* Residual Adds the executor folds into the conv before them (z input of
 * cuDNN's fused call): conv + Add, conv + Add + ReLU, both operand orders,
 * z a graph input or another conv's output, the ResNet downsample order
 * (the later conv absorbs), and Adds that must not be absorbed (conv
 * output read twice, z computed after the conv, Add output a graph
 * output). */
static void test_residual(void)
{
    static const int p1[2] = {1, 1}, z0[2] = {0, 0};
    for (int v = 0; v < 16; v++) {
        const bool relu = v & 1, swap = v & 2, z_conv = v & 4, b8 = v & 8;
        gb b = gb_new("residual");
        int64_t d[4] = {b8 ? 8 : 2, 16, 9, 10};
        int x = gb_in(&b, 4, d);
        int z = z_conv ? conv_ex(&b, x, 16, 16, 3, 1, p1, p1, 1, 1, PF_IR_ACT_RELU, 0, 0, true)
                       : x;
        int c = conv_ex(&b, z_conv ? z : x, 16, 16, 3, 1, p1, p1, 1, 1, PF_IR_ACT_NONE, 0, 0,
                        true);
        int in[2] = {swap ? z : c, swap ? c : z};
        int s = gb_node(&b, PF_IR_ADD, in, 2, 1, NULL, relu ? PF_IR_ACT_RELU : PF_IR_ACT_NONE, 0,
                        0);
        int y = conv_ex(&b, s, 16, 8, 1, 1, z0, z0, 1, 1, PF_IR_ACT_NONE, 0, 0, true);
        char label[80];
        snprintf(label, sizeof label, "residual conv + Add%s%s, z %s, batch %d",
                 relu ? " + ReLU" : "", swap ? " (z first)" : "", z_conv ? "conv" : "input",
                 b8 ? 8 : 2);
        check_model(gb_model(&b, y), label, -1, 1, false);
    }
    for (int v = 0; v < 2; v++) { /* bottleneck: conv1 -> conv2, downsample conv, Add + ReLU */
        gb b = gb_new("bottleneck");
        int64_t d[4] = {2, 8, 10, 10};
        int x = gb_in(&b, 4, d);
        int c1 = conv_ex(&b, x, 8, 12, 1, 1, z0, z0, 1, 1, PF_IR_ACT_RELU, 0, 0, true);
        int c2 = conv_ex(&b, c1, 12, 24, 3, 2, p1, p1, 1, 1, PF_IR_ACT_NONE, 0, 0, true);
        int ds = conv_ex(&b, x, 8, 24, 1, 2, z0, z0, 1, 1, PF_IR_ACT_NONE, 0, 0, true);
        int in[2] = {v ? ds : c2, v ? c2 : ds};
        int s = gb_node(&b, PF_IR_ADD, in, 2, 1, NULL, PF_IR_ACT_RELU, 0, 0);
        int y = conv_ex(&b, s, 24, 24, 3, 1, p1, p1, 1, 1, PF_IR_ACT_NONE, 0, 0, true);
        int in2[2] = {y, s}; /* a second residual on top */
        int s2 = gb_node(&b, PF_IR_ADD, in2, 2, 1, NULL, PF_IR_ACT_RELU, 0, 0);
        int o = conv_ex(&b, s2, 24, 4, 1, 1, z0, z0, 1, 1, PF_IR_ACT_NONE, 0, 0, true);
        check_model(gb_model(&b, o), v ? "bottleneck (downsample first)" : "bottleneck", -1, 1,
                    false);
    }
    for (int v = 0; v < 3; v++) { /* not absorbable */
        gb b = gb_new("residual_no");
        int64_t d[4] = {2, 8, 7, 7};
        int x = gb_in(&b, 4, d);
        int c = conv_ex(&b, x, 8, 8, 3, 1, p1, p1, 1, 1, PF_IR_ACT_NONE, 0, 0, true);
        int z = v == 1 ? conv_ex(&b, x, 8, 8, 1, 1, z0, z0, 1, 1, PF_IR_ACT_NONE, 0, 0, true) : x;
        int in[2] = {c, z};
        int s = gb_node(&b, PF_IR_ADD, in, 2, 1, NULL, PF_IR_ACT_RELU, 0, 0);
        int y = s;
        if (v == 0) { /* c read twice */
            int in2[2] = {s, c};
            y = gb_node(&b, PF_IR_MUL, in2, 2, 1, NULL, PF_IR_ACT_NONE, 0, 0);
        }
        if (v != 2) y = conv_ex(&b, y, 8, 4, 1, 1, z0, z0, 1, 1, PF_IR_ACT_NONE, 0, 0, true);
        static const char *const names[3] = {"conv read twice", "the later conv absorbs",
                                             "Add is the graph output"};
        char label[64];
        snprintf(label, sizeof label, "residual not absorbed: %s", names[v]);
        check_model(gb_model(&b, y), label, -1, 1, false);
    }
}

/* Convs in the shapes pixflow's implicit GEMM takes (C % 8 == 0): 1x1
 * expand/project, stride-2 downsample, dilated 3x3, asymmetric SAME pads,
 * hard-swish, and a chain of residual blocks. */
static void test_conv_igemm_shapes(void)
{
    static const int p0[2] = {0, 0}, p1[2] = {1, 1}, p2[2] = {2, 2}, s0[2] = {0, 0};
    static const struct { int cin, cout, k, s, dil; const int *pb, *pe; int act; int64_t n, h, w; } cs[] = {
        {16, 64, 1, 1, 1, p0, p0, PF_IR_ACT_HARD_SWISH, 1, 12, 12},
        {64, 24, 1, 1, 1, p0, p0, PF_IR_ACT_NONE, 2, 9, 7},
        {32, 48, 1, 2, 1, p0, p0, PF_IR_ACT_NONE, 2, 11, 11},
        {40, 40, 3, 1, 2, p2, p2, PF_IR_ACT_RELU, 1, 10, 13},
        {16, 24, 3, 2, 1, s0, p1, PF_IR_ACT_HARD_SWISH, 2, 16, 12},
        {8, 17, 3, 1, 1, p1, p1, PF_IR_ACT_CLIP, 3, 5, 6},
    };
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
        gb b = gb_new("conv_ig");
        int64_t d[4] = {cs[i].n, cs[i].cin, cs[i].h, cs[i].w};
        int x = gb_in(&b, 4, d);
        int y = conv_ex(&b, x, cs[i].cin, cs[i].cout, cs[i].k, cs[i].s, cs[i].pb, cs[i].pe, 1,
                        cs[i].dil, (pf_ir_act)cs[i].act, 0, 6, true);
        char label[64];
        snprintf(label, sizeof label, "conv (igemm shapes) case %zu", i);
        check_model(gb_model(&b, y), label, -1, 1, false);
    }
    /* A chain of residual blocks (conv sums with ReLU and hard-swish Adds). */
    gb b = gb_new("residual_chain");
    int64_t d[4] = {2, 16, 8, 8};
    int x = gb_in(&b, 4, d);
    int c1 = conv_ex(&b, x, 16, 32, 1, 1, p0, p0, 1, 1, PF_IR_ACT_RELU, 0, 0, true);
    int c2 = conv_ex(&b, c1, 32, 32, 3, 1, p1, p1, 1, 1, PF_IR_ACT_RELU, 0, 0, true);
    int c3 = conv_ex(&b, c2, 32, 32, 1, 1, p0, p0, 1, 1, PF_IR_ACT_NONE, 0, 0, true);
    int in[2] = {c3, c1};
    int s = gb_node(&b, PF_IR_ADD, in, 2, 1, NULL, PF_IR_ACT_RELU, 0, 0);
    int c4 = conv_ex(&b, s, 32, 32, 3, 1, p1, p1, 1, 1, PF_IR_ACT_NONE, 0, 0, true);
    int in2[2] = {s, c4};
    int s2 = gb_node(&b, PF_IR_ADD, in2, 2, 1, NULL, PF_IR_ACT_HARD_SWISH, 0, 0);
    int o = conv_ex(&b, s2, 32, 8, 1, 1, p0, p0, 1, 1, PF_IR_ACT_NONE, 0, 0, true);
    check_model(gb_model(&b, o), "residual chain", -1, 1, false);
}

/* Under PIXFLOW_NN_CONV=... the forced path must be the one that runs (a
 * silent fall-back would make the forced reruns test nothing): an FP16
 * 3x3 conv any path can take reports it in the per-node profile. */
static void check_forced_conv_path(const char *want)
{
    static const int p1[2] = {1, 1};
    gb b = gb_new("forced_path");
    int64_t d[4] = {1, 16, 12, 12};
    int x = gb_in(&b, 4, d);
    pf_model *m = gb_model(&b, conv_ex(&b, x, 16, 32, 3, 1, p1, p1, 1, 1, PF_IR_ACT_RELU, 0, 0,
                                       true));
    REQUIRE(m != NULL);
    pf_nn_exec_params p = pf_nn_exec_params_default();
    p.device = g_dev;
    p.precision = PF_NN_FP16;
    pf_nn_exec *ex = NULL;
    pf_nn_node_time t[8];
    int n = 0;
    CHECK_OK(pf_nn_exec_create(m, &p, &ex));
    if (ex) CHECK_OK(pf_nn_exec_profile(ex, 1, t, 8, &n));
    bool found = false;
    for (int i = 0; i < n; i++) found = found || (t[i].op && !strncmp(t[i].op, want, strlen(want)));
    if (!found) fprintf(stderr, "  forced conv path: no node ran %s\n", want);
    CHECK(found);
    pf_nn_exec_destroy(&ex);
    pf_model_free(&m);
}

static void test_forced_igemm(void) { check_forced_conv_path("Conv/igemm"); }
static void test_forced_legacy(void) { check_forced_conv_path("Conv/cudnn-"); }
static void test_forced_graph(void) { check_forced_conv_path("Conv/cudnn-graph"); }

static void test_gemm(void)
{
    pf_ir_attr a;
    for (int tb = 0; tb < 2; tb++) {
        gb b = gb_new("gemm");
        int64_t ad[2] = {5, 24}, bd[2] = {tb ? 10 : 24, tb ? 24 : 10}, cd[1] = {10};
        memset(&a, 0, sizeof a);
        a.gemm.alpha = 0.5f;
        a.gemm.beta = 2.0f;
        a.gemm.trans_b = tb;
        int in[3] = {gb_in(&b, 2, ad), gb_const(&b, 2, bd, -1, 1), gb_const(&b, 1, cd, -1, 1)};
        check_model(gb_model(&b, gb_node(&b, PF_IR_GEMM, in, 3, 1, &a, PF_IR_ACT_RELU, 0, 0)),
                    tb ? "Gemm transB" : "Gemm", -1, 1, false);
    }
    static const int64_t mm[][9] = {
        /* A ndim, dims..., B ndim, dims... */
        {4, 2, 3, 4, 5, 2, 5, 6, 0}, {3, 3, 4, 5, 3, 3, 5, 6, 0}, {2, 4, 5, 3, 3, 5, 6, 0, 0},
    };
    for (size_t i = 0; i < sizeof mm / sizeof mm[0]; i++) {
        gb b = gb_new("matmul");
        const int an = (int)mm[i][0];
        const int bn = (int)mm[i][1 + an];
        int x = gb_in(&b, an, &mm[i][1]);
        int y = gb_in(&b, bn, &mm[i][2 + an]);
        char label[32];
        snprintf(label, sizeof label, "MatMul case %zu", i);
        check_model(gb_model(&b, gb2(&b, PF_IR_MATMUL, x, y, NULL)), label, -1, 1, false);
    }
}

/* conv -> maxpool -> add -> resize -> concat with a conv branch -> softmax,
 * and conv -> reshape -> gemm: kernels on NHWC values and the conversions. */
static pf_model *make_chain(void)
{
    gb b = gb_new("chain");
    int64_t d[4] = {1, 3, 16, 16};
    int x = gb_in(&b, 4, d);
    int c1 = conv(&b, PF_IR_CONV, x, 3, 8, 3, 1, 1, 1, 1, 1, 2, PF_IR_ACT_RELU);
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.pool.nsp = 2;
    for (int j = 0; j < 2; j++) {
        a.pool.kernel[j] = 2;
        a.pool.stride[j] = 2;
        a.pool.dilation[j] = 1;
    }
    int p = gb1(&b, PF_IR_MAXPOOL, c1, &a);
    int64_t bd[3] = {8, 1, 1};
    int s = gb2(&b, PF_IR_ADD, p, gb_const(&b, 3, bd, -1, 1), NULL);
    memset(&a, 0, sizeof a);
    a.resize.mode = PF_IR_RESIZE_LINEAR;
    a.resize.n = 4;
    a.resize.has_scales = true;
    a.resize.scale[0] = a.resize.scale[1] = 1;
    a.resize.scale[2] = a.resize.scale[3] = 2;
    int r = gb1(&b, PF_IR_RESIZE, s, &a);
    int c2 = conv(&b, PF_IR_CONV, x, 3, 4, 1, 1, 0, 0, 1, 1, 2, PF_IR_ACT_NONE);
    memset(&a, 0, sizeof a);
    a.axis.axis = 1;
    int cin[2] = {r, c2};
    int cat = gb_node(&b, PF_IR_CONCAT, cin, 2, 1, &a, 0, 0, 0);
    int sm = gb1(&b, PF_IR_SOFTMAX, cat, &a);
    int c3 = conv(&b, PF_IR_CONV, sm, 12, 4, 3, 2, 1, 1, 1, 1, 2, PF_IR_ACT_NONE);
    memset(&a, 0, sizeof a);
    a.reshape.kind = PF_IR_RESHAPE_FLATTEN;
    a.reshape.axis = 1;
    int f = gb1(&b, PF_IR_RESHAPE, c3, &a);
    int64_t wd[2] = {4 * 8 * 8, 10};
    memset(&a, 0, sizeof a);
    a.gemm.alpha = 1;
    a.gemm.beta = 1;
    int gin[2] = {f, gb_const(&b, 2, wd, -0.1f, 0.1f)};
    int y = gb_node(&b, PF_IR_GEMM, gin, 2, 1, &a, PF_IR_ACT_NONE, 0, 0);
    return gb_model(&b, y);
}

static void test_chain(void) { check_model(make_chain(), "conv/pool/resize/concat/gemm chain", -1, 1, false); }

/* ---- graphs, streams, models --------------------------------------------------------------- */

/* Whether F32 buffers a and b (n bytes) agree within rel * max |a|. */
static bool f32_close(const unsigned char *a, const unsigned char *b, size_t n, double rel)
{
    const float *fa = (const float *)a, *fb = (const float *)b;
    double scale = 0, worst = 0;
    for (size_t i = 0; i < n / sizeof(float); i++) {
        if (fabs(fa[i]) > scale) scale = fabs(fa[i]);
        if (fabs(fa[i] - fb[i]) > worst) worst = fabs(fa[i] - fb[i]);
    }
    if (worst > rel * scale) fprintf(stderr, "  max abs diff %g at scale %g\n", worst, scale);
    return worst <= rel * scale;
}

static void test_graph_replay(void)
{
    pf_model *m = make_chain();
    REQUIRE(m != NULL);
    io o;
    REQUIRE(io_setup(&o, m, 1, -1, 1) && io_device(&o, PF_DTYPE_F32));
    pf_tensor eager_out = {0}, second = {0};
    CHECK_OK(pf_tensor_alloc(&eager_out, PF_DTYPE_F32, o.dout[0].ndim, o.dout[0].shape,
                             PF_LAYOUT_NONE, g_alloc, g_stream));
    CHECK_OK(pf_tensor_alloc(&second, PF_DTYPE_F32, o.dout[0].ndim, o.dout[0].shape,
                             PF_LAYOUT_NONE, g_alloc, g_stream));
    for (int prec = 0; prec < 2; prec++) {
        pf_nn_exec_params p = pf_nn_exec_params_default();
        p.device = g_dev;
        p.precision = (pf_nn_precision)prec;
        p.cuda_graphs = false;
        pf_nn_exec *eager = NULL, *gx = NULL;
        CHECK_OK(pf_nn_exec_create(m, &p, &eager));
        p.cuda_graphs = true;
        CHECK_OK(pf_nn_exec_create(m, &p, &gx));
        if (!eager || !gx) break;
        CHECK_OK(pf_nn_exec_run(eager, g_stream, o.din, 1, &eager_out, 1));
        for (int r = 0; r < 4; r++) CHECK_OK(pf_nn_exec_run(gx, g_stream, o.din, 1, o.dout, 1));
        /* New output pointer: the same graph replays (I/O copies are outside it). */
        for (int r = 0; r < 3; r++) CHECK_OK(pf_nn_exec_run(gx, g_stream, o.din, 1, &second, 1));
        CHECK_OK(pf_stream_synchronize(g_stream));
        size_t n = pf_tensor_nbytes(&eager_out);
        unsigned char *h0 = malloc(n), *h1 = malloc(n), *h2 = malloc(n);
        cudaMemcpy(h0, eager_out.data, n, cudaMemcpyDeviceToHost);
        cudaMemcpy(h1, o.dout[0].data, n, cudaMemcpyDeviceToHost);
        cudaMemcpy(h2, second.data, n, cudaMemcpyDeviceToHost);
        /* Replays of one graph are bit-identical; the eager executor is a
         * second plan whose cuDNN algorithms were timed separately (under
         * GPU load they may differ), so it agrees within the precision's
         * tolerance. */
        CHECK(first_mismatch(h1, h2, n) == NOWHERE);
        CHECK(f32_close(h0, h1, n, prec ? 1e-2 : 1e-5));
        pf_nn_exec_stats st;
        CHECK_OK(pf_nn_exec_get_stats(gx, &st));
        CHECK_EQ_INT(st.graphs, 1);
        CHECK_EQ_INT(st.runs, 7);
        CHECK(st.weight_bytes > 0 && st.arena_bytes > 0);
        printf("    graph replay %s: replays bit-identical, eager within tolerance, %d captures,"
               " last run %.3f ms\n",
               prec ? "fp16" : "fp32", st.graphs, st.last_run_ms);
        free(h0);
        free(h1);
        free(h2);
        pf_nn_exec_destroy(&eager);
        pf_nn_exec_destroy(&gx);
    }
    pf_tensor_unref(&eager_out);
    pf_tensor_unref(&second);
    io_free(&o);
    pf_model_free(&m);
}

/* Pipelines share a stage's stream between the executor and other threads
 * (the caching allocator records an event there when a buffer is freed).
 * A graph captured on that stream would swallow such a record and the
 * event would never complete: a second thread records and waits on events
 * on the caller's stream while the executor captures and replays. */
typedef struct recorder {
    cudaStream_t stream;
    volatile int stop;
    int records, failures;
} recorder;

static void *record_loop(void *arg)
{
    recorder *r = arg;
    cudaEvent_t e;
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
        r->failures++;
        return NULL;
    }
    while (!r->stop) {
        if (cudaEventRecord(e, r->stream) != cudaSuccess || cudaEventSynchronize(e) != cudaSuccess)
            r->failures++;
        r->records++;
    }
    cudaEventDestroy(e);
    return NULL;
}

static void test_capture_with_shared_stream(void)
{
    pf_model *m = make_chain();
    REQUIRE(m != NULL);
    io o;
    REQUIRE(io_setup(&o, m, 1, -1, 1) && io_device(&o, PF_DTYPE_F32));
    pf_tensor ref = {0}, outs[2] = {{0}};
    CHECK_OK(pf_tensor_alloc(&ref, PF_DTYPE_F32, o.dout[0].ndim, o.dout[0].shape, PF_LAYOUT_NONE,
                             g_alloc, g_stream));
    for (int k = 0; k < 2; k++)
        CHECK_OK(pf_tensor_alloc(&outs[k], PF_DTYPE_F32, o.dout[0].ndim, o.dout[0].shape,
                                 PF_LAYOUT_NONE, g_alloc, g_stream));
    pf_nn_exec_params p = pf_nn_exec_params_default();
    p.device = g_dev;
    p.cuda_graphs = false;
    pf_nn_exec *eager = NULL, *gx = NULL;
    CHECK_OK(pf_nn_exec_create(m, &p, &eager));
    p.cuda_graphs = true;
    CHECK_OK(pf_nn_exec_create(m, &p, &gx));
    if (eager && gx) {
        CHECK_OK(pf_nn_exec_run(eager, g_stream, o.din, 1, &ref, 1));
        recorder r = {.stream = (cudaStream_t)pf_stream_native(g_stream)};
        pthread_t th;
        REQUIRE(pthread_create(&th, NULL, record_loop, &r) == 0);
        for (int i = 0; i < 40; i++) CHECK_OK(pf_nn_exec_run(gx, g_stream, o.din, 1, &outs[i & 1], 1));
        CHECK_OK(pf_stream_synchronize(g_stream));
        r.stop = 1;
        pthread_join(th, NULL);
        CHECK_EQ_INT(r.failures, 0);
        size_t n = pf_tensor_nbytes(&ref);
        unsigned char *h0 = malloc(n), *h1 = malloc(n), *h2 = malloc(n);
        cudaMemcpy(h0, ref.data, n, cudaMemcpyDeviceToHost);
        cudaMemcpy(h1, outs[0].data, n, cudaMemcpyDeviceToHost);
        cudaMemcpy(h2, outs[1].data, n, cudaMemcpyDeviceToHost);
        /* One graph's replays are bit-identical; the eager executor is a
         * separately timed plan (see test_graph_replay). */
        CHECK(first_mismatch(h1, h2, n) == NOWHERE);
        CHECK(f32_close(h0, h1, n, 1e-5));
        pf_nn_exec_stats st;
        CHECK_OK(pf_nn_exec_get_stats(gx, &st));
        CHECK_EQ_INT(st.graphs, 1);
        printf("    capture beside a thread recording on the same stream: %d records, %d failures, "
               "%d capture\n", r.records, r.failures, st.graphs);
        free(h0);
        free(h1);
        free(h2);
    }
    pf_nn_exec_destroy(&eager);
    pf_nn_exec_destroy(&gx);
    pf_tensor_unref(&ref);
    pf_tensor_unref(&outs[0]);
    pf_tensor_unref(&outs[1]);
    io_free(&o);
    pf_model_free(&m);
}

static void test_two_streams(void)
{
    pf_model *m = make_chain();
    REQUIRE(m != NULL);
    io a, b;
    REQUIRE(io_setup(&a, m, 1, -1, 1) && io_device(&a, PF_DTYPE_F32));
    REQUIRE(io_setup(&b, m, 1, -2, 2) && io_device(&b, PF_DTYPE_F32));
    pf_stream *s1 = make_stream(g_dev, 0), *s2 = make_stream(g_dev, 0);
    REQUIRE(s1 && s2);
    pf_nn_exec_params p = pf_nn_exec_params_default();
    p.device = g_dev;
    pf_nn_exec *x1 = NULL, *x2 = NULL;
    CHECK_OK(pf_nn_exec_create(m, &p, &x1));
    CHECK_OK(pf_nn_exec_create(m, &p, &x2));
    for (int r = 0; r < 5 && x1 && x2; r++) {
        CHECK_OK(pf_nn_exec_run(x1, s1, a.din, 1, a.dout, 1));
        CHECK_OK(pf_nn_exec_run(x2, s2, b.din, 1, b.dout, 1));
    }
    CHECK_OK(pf_stream_synchronize(s1));
    CHECK_OK(pf_stream_synchronize(s2));
    double me, sc;
    CHECK(compare_out(&a.hout[0], &a.dout[0], 0, &me, &sc));
    CHECK(compare_out(&b.hout[0], &b.dout[0], 0, &me, &sc));
    pf_nn_exec_destroy(&x1);
    pf_nn_exec_destroy(&x2);
    pf_stream_destroy(&s1);
    pf_stream_destroy(&s2);
    io_free(&a);
    io_free(&b);
    pf_model_free(&m);
}

static void test_models(void)
{
    static const char *models[] = {
        "selfie_segmentation/selfie_segmentation.tflite",
        "selfie_segmentation/selfie_segmentation_landscape.tflite",
        "face_detection/face_detection_short_range.tflite",
        "face_detection/face_detection_full_range.tflite",
    };
    const char *root = getenv("PF_SOURCE_DIR");
    int ran = 0;
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/node_modules/@mediapipe/%s", root ? root : ".", models[i]);
        FILE *f = fopen(path, "rb");
        if (!f) {
            printf("    (%s not found: skipped)\n", path);
            continue;
        }
        fclose(f);
        pf_model *m = NULL;
        CHECK_OK(pf_model_load(path, &m));
        if (!m) continue;
        io o;
        bool ok = io_setup(&o, m, 1, 0, 1) && io_device(&o, PF_DTYPE_F32);
        CHECK(ok);
        if (ok) {
            CHECK(run_cuda(m, &o, 1, PF_NN_FP32, true, 3, true, models[i]));
            CHECK(run_cuda(m, &o, 1, PF_NN_FP16, true, 3, true, models[i]));
            ran++;
        }
        io_free(&o);
        pf_model_free(&m);
    }
    printf("    %d models compared\n", ran);
}

/* A dynamic batcher hands out any batch size; on CUDA an executor plans only
 * powers of two (capped at max_batch) and runs smaller batches padded:
 * batches 3..8 on one executor with max_batch 8 make two plans (4, 8) and
 * must equal the CPU at each batch, with graphs on and the padded rows
 * holding an earlier, larger run's data. */
static void test_batch_buckets(void)
{
    static const char *models[] = {
        "selfie_segmentation/selfie_segmentation.tflite",
        "face_detection/face_detection_short_range.tflite",
    };
    const char *root = getenv("PF_SOURCE_DIR");
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/node_modules/@mediapipe/%s", root ? root : ".", models[i]);
        pf_model *m = NULL;
        if (pf_model_load(path, &m) != PF_OK) {
            printf("    (%s not loadable: skipped)\n", path);
            continue;
        }
        if (pf_model_input(m, 0).shape[0] != -1) {
            printf("    (%s has a fixed batch: skipped)\n", models[i]);
            pf_model_free(&m);
            continue;
        }
        pf_nn_exec_params p = pf_nn_exec_params_default();
        p.device = g_dev;
        p.max_batch = 8;
        pf_nn_exec *x = NULL;
        CHECK_OK(pf_nn_exec_create(m, &p, &x));
        /* Each plan sees a full and a padded batch in turn, so padded rows
         * hold an earlier run's data, not the plan-time zeros. */
        static const int batches[] = {5, 8, 3, 4, 7, 3};
        for (int k = 0; x && k < (int)(sizeof batches / sizeof *batches); k++) {
            io o;
            bool ok = io_setup(&o, m, batches[k], 0, 1) && io_device(&o, PF_DTYPE_F32);
            CHECK(ok);
            for (int r = 0; ok && r < 2; r++)
                CHECK_OK(pf_nn_exec_run(x, g_stream, o.din, o.n_in, o.dout, o.n_out));
            CHECK_OK(pf_stream_synchronize(g_stream));
            for (int j = 0; ok && j < o.n_out; j++) {
                double me, sc;
                bool good = compare_out(&o.hout[j], &o.dout[j], 2, &me, &sc);
                CHECK(good);
                printf("    %-40s batch %d (plan %d) out %d: max abs err %.3g (scale %.3g)\n",
                       models[i], batches[k], batches[k] > 4 ? 8 : 4, j, me, sc);
            }
            io_free(&o);
        }
        pf_nn_exec_stats st;
        if (x) {
            CHECK_OK(pf_nn_exec_get_stats(x, &st));
            CHECK_EQ_INT(st.plans, 2);
        }
        pf_nn_exec_destroy(&x);
        pf_model_free(&m);
    }
}

int main(void)
{
    g_dev = pf_test_cuda_device_or_skip();
    pf_test_seed(20240611);
    g_alloc = pf_test_allocator_create(g_dev, "test-nn-cuda", PF_MEM_DEVICE, 0);
    g_stream = make_stream(g_dev, 0);
    if (!g_alloc || !g_stream) return 1;
    PF_RUN(test_unary);
    PF_RUN(test_binary);
    PF_RUN(test_movement);
    PF_RUN(test_resize_pool);
    PF_RUN(test_int_clip_mod);
    PF_RUN(test_resize_align_corners_scales);
    PF_RUN(test_reduce_softmax);
    PF_RUN(test_conv);
    PF_RUN(test_dwconv);
    PF_RUN(test_nhwc_pool_resize);
    PF_RUN(test_conv_1x1_spatial);
    PF_RUN(test_channel_bcast);
    PF_RUN(test_residual);
    PF_RUN(test_gemm);
    PF_RUN(test_chain);
    PF_RUN(test_graph_replay);
    PF_RUN(test_capture_with_shared_stream);
    PF_RUN(test_two_streams);
    PF_RUN(test_models);
    PF_RUN(test_batch_buckets);
    /* The convs again with the FP16 conv path forced each way (by default
     * it is timed per conv, so any may have run above). */
    setenv("PIXFLOW_NN_CONV", "pixflow", 1);
    PF_RUN(test_forced_igemm);
    PF_RUN(test_conv);
    PF_RUN(test_residual);
    PF_RUN(test_conv_igemm_shapes);
    PF_RUN(test_models);
    setenv("PIXFLOW_NN_CONV", "cudnn", 1);
    PF_RUN(test_forced_legacy); /* "Conv/cudnn-" + a legacy algorithm's name */
    PF_RUN(test_conv);
    PF_RUN(test_residual);
    PF_RUN(test_conv_igemm_shapes);
    setenv("PIXFLOW_NN_CONV", "cudnn-graph", 1);
    PF_RUN(test_forced_graph);
    PF_RUN(test_conv);
    PF_RUN(test_residual);
    PF_RUN(test_conv_igemm_shapes);
    PF_RUN(test_graph_replay);
    PF_RUN(test_models);
    unsetenv("PIXFLOW_NN_CONV");
    pf_stream_destroy(&g_stream);
    pf_allocator_destroy(&g_alloc);
    return pf_test_finish();
}
