/* The light CPU kernels of the nn engine (unary, cast, binary, where,
 * sum/mean, reduce, argmax, softmax, data movement), each node built as a
 * one-node pf_ir_graph, shape-inferred and run through pf_nn_cpu_run_node on
 * a 4-thread pool, against plain references written index by index with
 * explicit broadcasting. Movement, integer and comparison results must match
 * bit for bit; float math within the tolerance stated at each check. Then
 * the ONNX conformance cases of these ops (importer + the same kernels).
 *
 * Exits 77 while the IR builder (ir.c) is not built yet. */
#include <dirent.h>
#include <math.h>

#include "core/error.h"
#include "nn/cpu/kernels.h"
#include "nn/import.h"
#include "nn/ir.h"
#include "nn/onnx_reader.h"
#include "pf_test.h"
#include "pixflow/tensor.h"

static pf_threadpool *g_pool;

/* ---- tensors ----------------------------------------------------------------- */

typedef struct tensor {
    pf_ir_dtype dt;
    int nd;
    int64_t dims[PF_IR_MAX_RANK];
    void *data;
} tensor;

static size_t dt_size(pf_ir_dtype t)
{
    static const size_t sz[PF_IR_DTYPE_COUNT] = {4, 2, 8, 4, 1, 1, 1, 8};
    return (unsigned)t < PF_IR_DTYPE_COUNT ? sz[t] : 0;
}

static int64_t t_numel(const tensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->nd; d++) n *= t->dims[d];
    return n;
}

static tensor t_new(pf_ir_dtype dt, int nd, const int64_t *dims)
{
    tensor t;
    memset(&t, 0, sizeof t);
    t.dt = dt;
    t.nd = nd;
    for (int d = 0; d < nd; d++) t.dims[d] = dims[d];
    int64_t n = t_numel(&t);
    t.data = calloc((size_t)(n > 0 ? n : 1), dt_size(dt));
    return t;
}

static tensor t_of(pf_ir_dtype dt, int nd, const int64_t *dims, const void *src)
{
    tensor t = t_new(dt, nd, dims);
    memcpy(t.data, src, (size_t)t_numel(&t) * dt_size(dt));
    return t;
}

static void t_free(tensor *t)
{
    free(t->data);
    t->data = NULL;
}

/* Exact for every integer dtype within 2^53 and every float. */
static double t_get(const tensor *t, int64_t i)
{
    switch (t->dt) {
    case PF_IR_F32: return ((const float *)t->data)[i];
    case PF_IR_F16: return pf_f16_to_f32(((const uint16_t *)t->data)[i]);
    case PF_IR_F64: return ((const double *)t->data)[i];
    case PF_IR_I64: return (double)((const int64_t *)t->data)[i];
    case PF_IR_I32: return ((const int32_t *)t->data)[i];
    case PF_IR_I8: return ((const int8_t *)t->data)[i];
    default: return ((const uint8_t *)t->data)[i];
    }
}

static int64_t t_geti(const tensor *t, int64_t i)
{
    if (t->dt == PF_IR_I64) return ((const int64_t *)t->data)[i];
    return (int64_t)t_get(t, i);
}

static void t_set(tensor *t, int64_t i, double v)
{
    switch (t->dt) {
    case PF_IR_F32: ((float *)t->data)[i] = (float)v; break;
    case PF_IR_F16: ((uint16_t *)t->data)[i] = pf_f32_to_f16((float)v); break;
    case PF_IR_F64: ((double *)t->data)[i] = v; break;
    case PF_IR_I64: ((int64_t *)t->data)[i] = (int64_t)v; break;
    case PF_IR_I32: ((int32_t *)t->data)[i] = (int32_t)v; break;
    case PF_IR_I8: ((int8_t *)t->data)[i] = (int8_t)v; break;
    case PF_IR_BOOL: ((uint8_t *)t->data)[i] = v != 0; break;
    default: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
    }
}

static double rnd_unit(void)
{
    return (double)(pf_test_rand() >> 11) / 9007199254740992.0;
}

/* Floats uniform in [lo, hi]; integer types integers in [lo, hi]; BOOL 0/1. */
static void t_rand(tensor *t, double lo, double hi)
{
    int64_t n = t_numel(t);
    for (int64_t i = 0; i < n; i++) {
        if (t->dt == PF_IR_F32 || t->dt == PF_IR_F64 || t->dt == PF_IR_F16)
            t_set(t, i, lo + (hi - lo) * rnd_unit());
        else if (t->dt == PF_IR_BOOL)
            t_set(t, i, (double)(pf_test_rand() & 1));
        else
            t_set(t, i, (double)pf_test_rand_range((int64_t)lo, (int64_t)hi));
    }
}

static tensor t_rand_new(pf_ir_dtype dt, int nd, const int64_t *dims, double lo, double hi)
{
    tensor t = t_new(dt, nd, dims);
    t_rand(&t, lo, hi);
    return t;
}

/* ---- index helpers for the references --------------------------------------- */

static void unravel(int64_t i, int nd, const int64_t *dims, int64_t *idx)
{
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = dims[d] ? i % dims[d] : 0;
        i = dims[d] ? i / dims[d] : 0;
    }
}

/* Offset in t of the output index oidx (rank ond), numpy-broadcast. */
static int64_t ravel_b(const int64_t *oidx, int ond, const tensor *t)
{
    int64_t off = 0;
    for (int d = 0; d < t->nd; d++) {
        int64_t i = t->dims[d] == 1 ? 0 : oidx[ond - t->nd + d];
        off = off * t->dims[d] + i;
    }
    return off;
}

static int bshape(const tensor *const *ts, int n, int64_t *dims)
{
    int nd = 0;
    for (int k = 0; k < n; k++) nd = ts[k]->nd > nd ? ts[k]->nd : nd;
    for (int d = 0; d < nd; d++) {
        dims[d] = 1;
        for (int k = 0; k < n; k++) {
            int e = d - (nd - ts[k]->nd);
            if (e >= 0 && ts[k]->dims[e] != 1) dims[d] = ts[k]->dims[e];
        }
    }
    return nd;
}

static bool same_shape(const tensor *y, int nd, const int64_t *dims)
{
    if (y->nd != nd) return false;
    for (int d = 0; d < nd; d++)
        if (y->dims[d] != dims[d]) return false;
    return true;
}

/* Mismatches of y against ref within |y - ref| <= atol + rtol * |ref| (NaN
 * matches NaN); prints the first few. */
static int cmp_close(const tensor *y, const double *ref, int64_t n, double atol, double rtol,
                     const char *what)
{
    int bad = 0;
    if (t_numel(y) != n) {
        fprintf(stderr, "  %s: %lld elements, expected %lld\n", what, (long long)t_numel(y), (long long)n);
        return 1;
    }
    for (int64_t i = 0; i < n; i++) {
        double v = t_get(y, i), r = ref[i];
        bool ok = (isnan(v) && isnan(r)) || (isinf(r) && v == r) || fabs(v - r) <= atol + rtol * fabs(r);
        if (!ok && bad++ < 3)
            fprintf(stderr, "  %s: [%lld] = %.9g, expected %.9g\n", what, (long long)i, v, r);
    }
    return bad;
}

/* Bitwise equality of data, dims and dtype. */
static int cmp_exact(const tensor *y, const tensor *ref, const char *what)
{
    if (y->dt != ref->dt || !same_shape(y, ref->nd, ref->dims)) {
        fprintf(stderr, "  %s: dtype/shape differ (rank %d vs %d)\n", what, y->nd, ref->nd);
        return 1;
    }
    int64_t n = t_numel(y);
    size_t es = dt_size(y->dt);
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (memcmp((char *)y->data + i * (int64_t)es, (char *)ref->data + i * (int64_t)es, es)) {
            if (bad++ < 3)
                fprintf(stderr, "  %s: [%lld] = %.9g, expected %.9g\n", what, (long long)i,
                        t_get(y, i), t_get(ref, i));
        }
    return bad;
}

/* ---- one-node graphs ------------------------------------------------------------ */

typedef struct spec {
    pf_ir_op op;
    pf_ir_attr attr;
    pf_ir_act act;
    float act_a, act_b;
    int n_in;
    const tensor *in[PF_IR_MAX_INPUTS];
    unsigned const_mask; /* inputs added as constants */
    int n_out;
    pf_ir_dtype out_dt[PF_IR_MAX_OUTPUTS];
    pf_threadpool *pool;
    bool serial;         /* run without the pool */
} spec;

static spec spec_new(pf_ir_op op, int n_in, pf_ir_dtype out_dt)
{
    spec s;
    memset(&s, 0, sizeof s);
    s.op = op;
    s.n_in = n_in;
    s.n_out = 1;
    s.out_dt[0] = out_dt;
    return s;
}

/* Builds, infers and runs the node; out[k] receive fresh tensors with the
 * inferred shapes (freed by the caller, also on failure). */
static pf_status run_spec(const spec *s, tensor *out)
{
    pf_ir_graph *g = NULL;
    pf_status st = pf_ir_graph_create("cpu_b", &g);
    for (int k = 0; k < s->n_out; k++) memset(&out[k], 0, sizeof out[k]);
    if (st != PF_OK) return st;
    int in_ids[PF_IR_MAX_INPUTS], out_ids[PF_IR_MAX_OUTPUTS], nid = -1;
    char name[32];
    for (int i = 0; i < s->n_in && st == PF_OK; i++) {
        const tensor *t = s->in[i];
        snprintf(name, sizeof name, "x%d", i);
        if (!t) {
            in_ids[i] = -1;
        } else if (s->const_mask & (1u << i)) {
            st = pf_ir_add_const(g, name, t->dt, t->nd, t->dims, t->data,
                                 (size_t)t_numel(t) * dt_size(t->dt), &in_ids[i]);
        } else {
            st = pf_ir_add_value(g, name, t->dt, t->nd, t->dims, &in_ids[i]);
            if (st == PF_OK) st = pf_ir_mark_input(g, in_ids[i]);
        }
    }
    for (int k = 0; k < s->n_out && st == PF_OK; k++) {
        snprintf(name, sizeof name, "y%d", k);
        st = pf_ir_add_value(g, name, s->out_dt[k], -1, NULL, &out_ids[k]);
        if (st == PF_OK) st = pf_ir_mark_output(g, out_ids[k]);
    }
    if (st == PF_OK)
        st = pf_ir_add_node(g, s->op, "n0", "Test", in_ids, s->n_in, out_ids, s->n_out, &s->attr, &nid);
    if (st == PF_OK) {
        g->nodes[nid].act = s->act;
        g->nodes[nid].act_a = s->act_a;
        g->nodes[nid].act_b = s->act_b;
        st = pf_ir_infer_shapes(g);
    }
    const void *ins[PF_IR_MAX_INPUTS] = {NULL};
    void *outs[PF_IR_MAX_OUTPUTS] = {NULL};
    for (int k = 0; k < s->n_out && st == PF_OK; k++) {
        const pf_ir_value *v = &g->values[out_ids[k]];
        if (v->ndim < 0) {
            st = pf_set_error(PF_ERR_INTERNAL, "output %d shape not inferred", k);
            break;
        }
        out[k] = t_new(v->dtype, v->ndim, v->dims);
        outs[k] = out[k].data;
    }
    for (int i = 0; i < s->n_in; i++) ins[i] = s->in[i] ? s->in[i]->data : NULL;
    void *scratch = NULL;
    size_t sb = 0;
    if (st == PF_OK) {
        sb = pf_nn_cpu_scratch_bytes(g, nid);
        scratch = sb ? aligned_alloc(64, (sb + 63) / 64 * 64) : NULL;
        st = pf_nn_cpu_run_node(g, nid, ins, outs, s->serial ? NULL : g_pool, scratch, sb);
    }
    free(scratch);
    pf_ir_graph_destroy(&g);
    return st;
}

/* ---- unary ------------------------------------------------------------------------ */

static double round_half_even(double x)
{
    double f = floor(x), d = x - f;
    if (d > 0.5) return f + 1;
    if (d < 0.5) return f;
    return fmod(f, 2.0) == 0.0 ? f : f + 1;
}

static double ref_unary(pf_ir_op op, double x, double a, double b)
{
    switch (op) {
    case PF_IR_RELU: return x > 0 ? x : 0;
    case PF_IR_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case PF_IR_TANH: return tanh(x);
    case PF_IR_HARD_SIGMOID: return fmax(0, fmin(1, a * x + b));
    case PF_IR_HARD_SWISH: return x * fmax(0, fmin(1, x / 6 + 0.5));
    case PF_IR_LEAKY_RELU: return x < 0 ? a * x : x;
    case PF_IR_CLIP: return fmin(fmax(x, a), b);
    case PF_IR_ELU: return x > 0 ? x : a * (exp(x) - 1);
    case PF_IR_SELU: return x > 0 ? b * x : b * (a * exp(x) - a);
    case PF_IR_SOFTPLUS: return log(1 + exp(x));
    case PF_IR_SOFTSIGN: return x / (1 + fabs(x));
    case PF_IR_ABS: return fabs(x);
    case PF_IR_NEG: return -x;
    case PF_IR_EXP: return exp(x);
    case PF_IR_LOG: return log(x);
    case PF_IR_SQRT: return sqrt(x);
    case PF_IR_RECIPROCAL: return 1 / x;
    case PF_IR_FLOOR: return floor(x);
    case PF_IR_CEIL: return ceil(x);
    case PF_IR_ROUND: return round_half_even(x);
    case PF_IR_ERF: return erf(x);
    case PF_IR_SIN: return sin(x);
    case PF_IR_COS: return cos(x);
    case PF_IR_SIGN: return x > 0 ? 1 : x < 0 ? -1 : 0;
    default: return NAN;
    }
}

static void test_unary_f32(void)
{
    static const pf_ir_op ops[] = {
        PF_IR_RELU, PF_IR_SIGMOID, PF_IR_TANH, PF_IR_HARD_SIGMOID, PF_IR_HARD_SWISH,
        PF_IR_LEAKY_RELU, PF_IR_CLIP, PF_IR_ELU, PF_IR_SELU, PF_IR_SOFTPLUS, PF_IR_SOFTSIGN,
        PF_IR_ABS, PF_IR_NEG, PF_IR_EXP, PF_IR_LOG, PF_IR_SQRT, PF_IR_RECIPROCAL, PF_IR_FLOOR,
        PF_IR_CEIL, PF_IR_ROUND, PF_IR_ERF, PF_IR_SIN, PF_IR_COS, PF_IR_SIGN};
    const int64_t shapes[3][3] = {{3, 5, 7}, {0, 3, 0}, {0, 0, 0}};
    const int ranks[3] = {3, 2, 0}; /* rank 0 = scalar */
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        for (int sh = 0; sh < 3; sh++) {
            bool pos = ops[k] == PF_IR_LOG || ops[k] == PF_IR_SQRT;
            tensor x = t_rand_new(PF_IR_F32, ranks[sh], shapes[sh], pos ? 0.01 : -4, 4);
            int64_t n = t_numel(&x);
            if (ops[k] == PF_IR_ROUND && n >= 6) {
                const float halves[6] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f};
                memcpy(x.data, halves, sizeof halves);
            }
            if (ops[k] == PF_IR_SIGN && n >= 1) ((float *)x.data)[0] = 0.0f;
            spec s = spec_new(ops[k], 1, PF_IR_F32);
            s.in[0] = &x;
            float a = 0, b = 0;
            if (ops[k] == PF_IR_LEAKY_RELU) a = 0.1f;
            if (ops[k] == PF_IR_CLIP) { a = -1.0f; b = 2.0f; }
            if (ops[k] == PF_IR_ELU) a = 1.5f;
            if (ops[k] == PF_IR_SELU) { a = 1.6732632f; b = 1.0507010f; }
            if (ops[k] == PF_IR_HARD_SIGMOID) { a = 0.2f; b = 0.5f; }
            s.attr.unary.alpha = a;
            s.attr.unary.beta = b;
            tensor y;
            CHECK_OK(run_spec(&s, &y));
            double *ref = malloc(sizeof(double) * (size_t)(n + 1));
            for (int64_t i = 0; i < n; i++) ref[i] = ref_unary(ops[k], t_get(&x, i), a, b);
            char what[64];
            snprintf(what, sizeof what, "%s rank %d", pf_ir_op_name(ops[k]), ranks[sh]);
            /* float math vs double reference: 2e-6 relative + 1e-6 absolute */
            CHECK(same_shape(&y, x.nd, x.dims));
            CHECK(cmp_close(&y, ref, n, 1e-6, 2e-6, what) == 0);
            free(ref);
            t_free(&x);
            t_free(&y);
        }
    }
}

static void test_unary_int(void)
{
    const pf_ir_op ops[3] = {PF_IR_ABS, PF_IR_NEG, PF_IR_SIGN};
    const pf_ir_dtype dts[2] = {PF_IR_I64, PF_IR_I32};
    const int64_t dims[2] = {4, 9};
    for (int k = 0; k < 3; k++)
        for (int t = 0; t < 2; t++) {
            tensor x = t_rand_new(dts[t], 2, dims, -1000000, 1000000);
            t_set(&x, 0, 0);
            spec s = spec_new(ops[k], 1, dts[t]);
            s.in[0] = &x;
            tensor y, ref = t_new(dts[t], 2, dims);
            CHECK_OK(run_spec(&s, &y));
            for (int64_t i = 0; i < t_numel(&x); i++) {
                int64_t v = t_geti(&x, i);
                int64_t r = ops[k] == PF_IR_ABS ? (v < 0 ? -v : v) : ops[k] == PF_IR_NEG ? -v
                          : (v > 0) - (v < 0);
                t_set(&ref, i, (double)r);
            }
            CHECK(cmp_exact(&y, &ref, pf_ir_op_name(ops[k])) == 0);
            t_free(&x); t_free(&y); t_free(&ref);
        }
    /* NOT on BOOL, IDENTITY on U8 */
    tensor b = t_rand_new(PF_IR_BOOL, 2, dims, 0, 1), nb = t_new(PF_IR_BOOL, 2, dims), y;
    for (int64_t i = 0; i < t_numel(&b); i++) t_set(&nb, i, t_get(&b, i) == 0);
    spec s = spec_new(PF_IR_NOT, 1, PF_IR_BOOL);
    s.in[0] = &b;
    CHECK_OK(run_spec(&s, &y));
    CHECK(cmp_exact(&y, &nb, "Not") == 0);
    t_free(&y);
    tensor u = t_rand_new(PF_IR_U8, 2, dims, 0, 255);
    s = spec_new(PF_IR_IDENTITY, 1, PF_IR_U8);
    s.in[0] = &u;
    CHECK_OK(run_spec(&s, &y));
    CHECK(cmp_exact(&y, &u, "Identity") == 0);
    t_free(&y);
    /* float math on F16 is refused by the kernel, naming the node */
    tensor h = t_rand_new(PF_IR_F16, 2, dims, -5, 5);
    s = spec_new(PF_IR_SIGMOID, 1, PF_IR_F16);
    s.in[0] = &h;
    CHECK(run_spec(&s, &y) == PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "'n0'") != NULL);
    t_free(&y);
    t_free(&b); t_free(&nb); t_free(&u); t_free(&h);
}

/* ---- cast -------------------------------------------------------------------------- */

static int64_t wrap_to(int64_t v, pf_ir_dtype t)
{
    int64_t m;
    switch (t) {
    case PF_IR_U8: m = v % 256; return m < 0 ? m + 256 : m;
    case PF_IR_I8: m = ((v % 256) + 256) % 256; return m > 127 ? m - 256 : m;
    case PF_IR_I32: m = ((v % 4294967296LL) + 4294967296LL) % 4294967296LL;
        return m > 2147483647LL ? m - 4294967296LL : m;
    default: return v;
    }
}

static void test_cast(void)
{
    const int64_t dims[1] = {41};
    for (int from = 0; from < PF_IR_DTYPE_COUNT; from++)
        for (int to = 0; to < PF_IR_DTYPE_COUNT; to++) {
            pf_ir_dtype f = (pf_ir_dtype)from, t = (pf_ir_dtype)to;
            bool ff = f == PF_IR_F32 || f == PF_IR_F16 || f == PF_IR_F64;
            double lo = f == PF_IR_U8 ? 0 : f == PF_IR_I8 ? -128 : f == PF_IR_BOOL ? 0 : -300;
            double hi = f == PF_IR_U8 ? 255 : f == PF_IR_I8 ? 127 : f == PF_IR_BOOL ? 1 : 300;
            tensor x = t_rand_new(f, 1, dims, lo, hi);
            if (ff) {
                t_set(&x, 0, 0.0);
                t_set(&x, 1, -0.75);
                t_set(&x, 2, 2.5);
            }
            spec s = spec_new(PF_IR_CAST, 1, t);
            s.attr.cast.to = t;
            s.in[0] = &x;
            tensor y, ref = t_new(t, 1, dims);
            CHECK_OK(run_spec(&s, &y));
            for (int64_t i = 0; i < dims[0]; i++) {
                double v = t_get(&x, i);
                if (t == PF_IR_BOOL) t_set(&ref, i, v != 0);
                else if (t == PF_IR_F32) ((float *)ref.data)[i] = (float)v;
                else if (t == PF_IR_F16) ((uint16_t *)ref.data)[i] = pf_f32_to_f16((float)v);
                else if (t == PF_IR_F64) ((double *)ref.data)[i] = v;
                else {
                    int64_t iv = ff ? (int64_t)trunc(v) : t_geti(&x, i);
                    t_set(&ref, i, (double)wrap_to(iv, t));
                }
            }
            char what[64];
            snprintf(what, sizeof what, "Cast %s -> %s", pf_ir_dtype_name(f), pf_ir_dtype_name(t));
            CHECK(cmp_exact(&y, &ref, what) == 0);
            t_free(&x); t_free(&y); t_free(&ref);
        }
    /* NaN -> BOOL is true; large I64 -> F64 exact */
    float nanv[2] = {NAN, 0.0f};
    int64_t d2[1] = {2};
    tensor x = t_of(PF_IR_F32, 1, d2, nanv), y;
    spec s = spec_new(PF_IR_CAST, 1, PF_IR_BOOL);
    s.attr.cast.to = PF_IR_BOOL;
    s.in[0] = &x;
    CHECK_OK(run_spec(&s, &y));
    CHECK(y.data && ((uint8_t *)y.data)[0] == 1 && ((uint8_t *)y.data)[1] == 0);
    t_free(&x); t_free(&y);
    int64_t big[2] = {(int64_t)1 << 52 | 1, -((int64_t)1 << 40) - 3};
    x = t_of(PF_IR_I64, 1, d2, big);
    s = spec_new(PF_IR_CAST, 1, PF_IR_F64);
    s.attr.cast.to = PF_IR_F64;
    s.in[0] = &x;
    CHECK_OK(run_spec(&s, &y));
    CHECK(y.data && ((double *)y.data)[0] == (double)big[0] && ((double *)y.data)[1] == (double)big[1]);
    t_free(&x); t_free(&y);
}

/* ---- binary ------------------------------------------------------------------------ */

typedef struct shape_pair { int na; int64_t a[4]; int nb; int64_t b[4]; } shape_pair;

static const shape_pair k_pairs[] = {
    {4, {2, 3, 4, 5}, 4, {2, 3, 4, 5}}, {4, {2, 3, 4, 5}, 1, {1}},  {1, {1}, 4, {2, 3, 4, 5}},
    {4, {2, 3, 4, 5}, 3, {3, 1, 1}},    {3, {3, 1, 1}, 4, {2, 3, 4, 5}},
    {2, {4, 1}, 3, {3, 1, 5}},          {0, {0}, 1, {5}},          {2, {2, 3}, 0, {0}},
    {2, {0, 3}, 2, {1, 3}},             {4, {2, 1, 4, 1}, 4, {1, 3, 1, 5}},
    {3, {2, 3, 1}, 1, {7}},
};

static double ref_bin_f(pf_ir_op op, float x, float y, bool c_fmod)
{
    switch (op) {
    case PF_IR_ADD: return (float)(x + y);
    case PF_IR_SUB: return (float)(x - y);
    case PF_IR_MUL: return (float)(x * y);
    case PF_IR_DIV: return (float)(x / y);
    case PF_IR_POW: return pow(x, y);
    case PF_IR_MAX: return fmax(x, y);
    case PF_IR_MIN: return fmin(x, y);
    case PF_IR_MOD: return c_fmod ? fmod(x, y) : x - floor((double)x / y) * y;
    case PF_IR_PRELU: return x < 0 ? (double)y * x : x;
    case PF_IR_EQUAL: return x == y;
    case PF_IR_LESS: return x < y;
    case PF_IR_GREATER: return x > y;
    case PF_IR_LESS_OR_EQUAL: return x <= y;
    case PF_IR_GREATER_OR_EQUAL: return x >= y;
    default: return NAN;
    }
}

static void test_binary_f32(void)
{
    static const pf_ir_op ops[] = {PF_IR_ADD, PF_IR_SUB, PF_IR_MUL, PF_IR_DIV, PF_IR_POW, PF_IR_MAX,
                                   PF_IR_MIN, PF_IR_MOD, PF_IR_EQUAL, PF_IR_LESS, PF_IR_GREATER,
                                   PF_IR_LESS_OR_EQUAL, PF_IR_GREATER_OR_EQUAL};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        for (size_t p = 0; p < sizeof k_pairs / sizeof k_pairs[0]; p++)
            for (int fm = 0; fm < (ops[k] == PF_IR_MOD ? 2 : 1); fm++) {
                pf_ir_op op = ops[k];
                bool cmp = op >= PF_IR_EQUAL;
                tensor a = t_rand_new(PF_IR_F32, k_pairs[p].na, k_pairs[p].a, op == PF_IR_POW ? 0.1 : -3, 3);
                tensor b = t_rand_new(PF_IR_F32, k_pairs[p].nb, k_pairs[p].b, -3, 3);
                if (cmp) { /* integer-valued so that equality happens */
                    for (int64_t i = 0; i < t_numel(&a); i++) t_set(&a, i, round(t_get(&a, i)));
                    for (int64_t i = 0; i < t_numel(&b); i++) t_set(&b, i, round(t_get(&b, i)));
                }
                if (op == PF_IR_DIV || op == PF_IR_MOD)
                    for (int64_t i = 0; i < t_numel(&b); i++)
                        if (fabs(t_get(&b, i)) < 0.5) t_set(&b, i, 0.5 + t_get(&b, i));
                spec s = spec_new(op, 2, cmp ? PF_IR_BOOL : PF_IR_F32);
                s.in[0] = &a;
                s.in[1] = &b;
                s.attr.unary.alpha = (float)fm;
                tensor y;
                CHECK_OK(run_spec(&s, &y));
                const tensor *ab[2] = {&a, &b};
                int64_t od[PF_IR_MAX_RANK], idx[PF_IR_MAX_RANK];
                int ond = bshape(ab, 2, od);
                tensor tmp = {PF_IR_F32, ond, {0}, NULL};
                memcpy(tmp.dims, od, sizeof od);
                int64_t n = t_numel(&tmp);
                double *ref = malloc(sizeof(double) * (size_t)(n + 1));
                for (int64_t i = 0; i < n; i++) {
                    unravel(i, ond, od, idx);
                    ref[i] = ref_bin_f(op, (float)t_get(&a, ravel_b(idx, ond, &a)),
                                       (float)t_get(&b, ravel_b(idx, ond, &b)), fm);
                }
                char what[80];
                snprintf(what, sizeof what, "%s fmod=%d pair %zu", pf_ir_op_name(op), fm, p);
                CHECK(same_shape(&y, ond, od));
                /* + - * / max min and comparisons are exact; pow, mod 1e-5 relative */
                bool exact = op != PF_IR_POW && op != PF_IR_MOD;
                CHECK(cmp_close(&y, ref, n, exact ? 0 : 1e-5, exact ? 0 : 1e-5, what) == 0);
                free(ref);
                t_free(&a); t_free(&b); t_free(&y);
            }
}

static int64_t ref_bin_i(pf_ir_op op, int64_t x, int64_t y, bool c_fmod)
{
    switch (op) {
    case PF_IR_ADD: return x + y;
    case PF_IR_SUB: return x - y;
    case PF_IR_MUL: return x * y;
    case PF_IR_DIV: return (int64_t)trunc((double)x / (double)y);
    case PF_IR_MAX: return x > y ? x : y;
    case PF_IR_MIN: return x < y ? x : y;
    case PF_IR_MOD:
        return c_fmod ? x - (int64_t)trunc((double)x / y) * y : x - (int64_t)floor((double)x / y) * y;
    case PF_IR_EQUAL: return x == y;
    case PF_IR_LESS: return x < y;
    case PF_IR_GREATER: return x > y;
    case PF_IR_LESS_OR_EQUAL: return x <= y;
    case PF_IR_GREATER_OR_EQUAL: return x >= y;
    default: return 0;
    }
}

static void test_binary_int(void)
{
    static const pf_ir_op ops[] = {PF_IR_ADD, PF_IR_SUB, PF_IR_MUL, PF_IR_DIV, PF_IR_MAX, PF_IR_MIN,
                                   PF_IR_MOD, PF_IR_EQUAL, PF_IR_LESS, PF_IR_GREATER,
                                   PF_IR_LESS_OR_EQUAL, PF_IR_GREATER_OR_EQUAL};
    const pf_ir_dtype dts[2] = {PF_IR_I64, PF_IR_I32};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        for (int t = 0; t < 2; t++)
            for (size_t p = 0; p < sizeof k_pairs / sizeof k_pairs[0]; p++)
                for (int fm = 0; fm < (ops[k] == PF_IR_MOD ? 2 : 1); fm++) {
                    pf_ir_op op = ops[k];
                    bool cmp = op >= PF_IR_EQUAL;
                    tensor a = t_rand_new(dts[t], k_pairs[p].na, k_pairs[p].a, -50, 50);
                    tensor b = t_rand_new(dts[t], k_pairs[p].nb, k_pairs[p].b, -9, 9);
                    for (int64_t i = 0; i < t_numel(&b); i++)
                        if (t_geti(&b, i) == 0) t_set(&b, i, 3);
                    spec s = spec_new(op, 2, cmp ? PF_IR_BOOL : dts[t]);
                    s.in[0] = &a;
                    s.in[1] = &b;
                    s.attr.unary.alpha = (float)fm;
                    tensor y;
                    CHECK_OK(run_spec(&s, &y));
                    const tensor *ab[2] = {&a, &b};
                    int64_t od[PF_IR_MAX_RANK], idx[PF_IR_MAX_RANK];
                    int ond = bshape(ab, 2, od);
                    tensor ref = t_new(cmp ? PF_IR_BOOL : dts[t], ond, od);
                    for (int64_t i = 0; i < t_numel(&ref); i++) {
                        unravel(i, ond, od, idx);
                        t_set(&ref, i, (double)ref_bin_i(op, t_geti(&a, ravel_b(idx, ond, &a)),
                                                          t_geti(&b, ravel_b(idx, ond, &b)), fm));
                    }
                    char what[80];
                    snprintf(what, sizeof what, "%s %s fmod=%d pair %zu", pf_ir_op_name(op),
                             pf_ir_dtype_name(dts[t]), fm, p);
                    CHECK(cmp_exact(&y, &ref, what) == 0);
                    t_free(&a); t_free(&b); t_free(&y); t_free(&ref);
                }
    /* division and modulo by zero give 0 instead of trapping */
    int32_t xa[3] = {5, -7, 0}, xb[3] = {0, 0, 0};
    int64_t d3[1] = {3};
    tensor a = t_of(PF_IR_I32, 1, d3, xa), b = t_of(PF_IR_I32, 1, d3, xb), y;
    for (int m = 0; m < 2; m++) {
        spec s = spec_new(m ? PF_IR_MOD : PF_IR_DIV, 2, PF_IR_I32);
        s.in[0] = &a;
        s.in[1] = &b;
        CHECK_OK(run_spec(&s, &y));
        CHECK(y.data && ((int32_t *)y.data)[0] == 0 && ((int32_t *)y.data)[1] == 0);
        t_free(&y);
    }
    t_free(&a); t_free(&b);
    /* POW with an I64 exponent on F32, and an F32 exponent on I64 */
    int64_t d4[1] = {4};
    float fb[4] = {1.5f, 2.0f, -3.0f, 0.5f};
    int64_t ie[4] = {2, 3, 2, 0}, ib[4] = {2, 3, -4, 7};
    float fe[4] = {2.0f, 0.5f, 2.0f, 1.0f};
    tensor x1 = t_of(PF_IR_F32, 1, d4, fb), e1 = t_of(PF_IR_I64, 1, d4, ie);
    spec s = spec_new(PF_IR_POW, 2, PF_IR_F32);
    s.in[0] = &x1;
    s.in[1] = &e1;
    CHECK_OK(run_spec(&s, &y));
    double r1[4] = {2.25, 8, 9, 1};
    CHECK(cmp_close(&y, r1, 4, 1e-6, 1e-6, "Pow f32^i64") == 0);
    t_free(&y);
    tensor x2 = t_of(PF_IR_I64, 1, d4, ib), e2 = t_of(PF_IR_F32, 1, d4, fe);
    s = spec_new(PF_IR_POW, 2, PF_IR_I64);
    s.in[0] = &x2;
    s.in[1] = &e2;
    CHECK_OK(run_spec(&s, &y));
    double r2[4] = {4, 1, 16, 7}; /* sqrt(3) truncates to 1 */
    CHECK(cmp_close(&y, r2, 4, 0, 0, "Pow i64^f32") == 0);
    t_free(&y);
    t_free(&x1); t_free(&e1); t_free(&x2); t_free(&e2);
}

/* I8/U8 arithmetic wraps like numpy; F16/F64 arithmetic is done in double
 * (F16 rounded on store), so the references are exact. */
static void test_binary_small_types(void)
{
    static const pf_ir_op ops[] = {PF_IR_ADD, PF_IR_SUB, PF_IR_MUL, PF_IR_DIV,
                                   PF_IR_MAX, PF_IR_MIN, PF_IR_MOD};
    const pf_ir_dtype dts[4] = {PF_IR_I8, PF_IR_U8, PF_IR_F16, PF_IR_F64};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        for (int t = 0; t < 4; t++)
            for (size_t p = 0; p < sizeof k_pairs / sizeof k_pairs[0]; p++)
                for (int fm = 0; fm < (ops[k] == PF_IR_MOD ? 2 : 1); fm++) {
                    const pf_ir_op op = ops[k];
                    const pf_ir_dtype dt = dts[t];
                    const bool fl = dt == PF_IR_F16 || dt == PF_IR_F64;
                    const double lo = dt == PF_IR_U8 ? 0 : -100;
                    tensor a = t_rand_new(dt, k_pairs[p].na, k_pairs[p].a, lo, 100);
                    tensor b = t_rand_new(dt, k_pairs[p].nb, k_pairs[p].b, dt == PF_IR_U8 ? 1 : -9, 9);
                    for (int64_t i = 0; i < t_numel(&b); i++)
                        if (t_get(&b, i) == 0) t_set(&b, i, 3);
                    spec s = spec_new(op, 2, dt);
                    s.in[0] = &a;
                    s.in[1] = &b;
                    s.attr.unary.alpha = (float)fm;
                    tensor y;
                    CHECK_OK(run_spec(&s, &y));
                    const tensor *ab[2] = {&a, &b};
                    int64_t od[PF_IR_MAX_RANK], idx[PF_IR_MAX_RANK];
                    int ond = bshape(ab, 2, od);
                    tensor ref = t_new(dt, ond, od);
                    for (int64_t i = 0; i < t_numel(&ref); i++) {
                        unravel(i, ond, od, idx);
                        const int64_t ia = ravel_b(idx, ond, &a), ib = ravel_b(idx, ond, &b);
                        if (fl) {
                            const double x = t_get(&a, ia), yv = t_get(&b, ib);
                            double r;
                            switch (op) {
                            case PF_IR_ADD: r = x + yv; break;
                            case PF_IR_SUB: r = x - yv; break;
                            case PF_IR_MUL: r = x * yv; break;
                            case PF_IR_DIV: r = x / yv; break;
                            case PF_IR_MAX: r = x > yv ? x : yv; break;
                            case PF_IR_MIN: r = x < yv ? x : yv; break;
                            default:
                                r = fmod(x, yv);
                                if (!fm && r != 0 && ((r < 0) != (yv < 0))) r += yv;
                                break;
                            }
                            t_set(&ref, i, r);
                        } else {
                            t_set(&ref, i, (double)wrap_to(ref_bin_i(op, t_geti(&a, ia),
                                                                     t_geti(&b, ib), fm), dt));
                        }
                    }
                    char what[80];
                    snprintf(what, sizeof what, "%s %s fmod=%d pair %zu", pf_ir_op_name(op),
                             pf_ir_dtype_name(dt), fm, p);
                    CHECK(cmp_exact(&y, &ref, what) == 0);
                    t_free(&a); t_free(&b); t_free(&y); t_free(&ref);
                }
    /* I8 division of -128 by -1 wraps to -128 (numpy), U8 by 0 gives 0. */
    int8_t xa[2] = {-128, 7}, xb[2] = {-1, 0};
    uint8_t ua[2] = {200, 9}, ub[2] = {0, 4};
    int64_t d2[1] = {2};
    tensor a = t_of(PF_IR_I8, 1, d2, xa), b = t_of(PF_IR_I8, 1, d2, xb), y;
    spec s = spec_new(PF_IR_DIV, 2, PF_IR_I8);
    s.in[0] = &a;
    s.in[1] = &b;
    CHECK_OK(run_spec(&s, &y));
    CHECK(y.data && ((int8_t *)y.data)[0] == -128 && ((int8_t *)y.data)[1] == 0);
    t_free(&y); t_free(&a); t_free(&b);
    a = t_of(PF_IR_U8, 1, d2, ua), b = t_of(PF_IR_U8, 1, d2, ub);
    s = spec_new(PF_IR_MOD, 2, PF_IR_U8);
    s.in[0] = &a;
    s.in[1] = &b;
    CHECK_OK(run_spec(&s, &y));
    CHECK(y.data && ((uint8_t *)y.data)[0] == 0 && ((uint8_t *)y.data)[1] == 1);
    t_free(&y); t_free(&a); t_free(&b);
}

/* Clip on integer types: constant bounds folded into the attrs, runtime
 * bound inputs, a missing bound (the type's limit) and lo > hi (hi wins). */
static void test_clip_int(void)
{
    int64_t d5[1] = {5};
    int8_t x8[5] = {-128, -3, 0, 4, 127};
    int64_t x64[5] = {INT64_MIN, -5000000000LL, 0, 5000000000LL, INT64_MAX};
    tensor y;
    /* attrs: [-2, 3] on I8 */
    tensor a = t_of(PF_IR_I8, 1, d5, x8);
    spec s = spec_new(PF_IR_CLIP, 1, PF_IR_I8);
    s.in[0] = &a;
    s.attr.unary.alpha = -2.0f;
    s.attr.unary.beta = 3.0f;
    CHECK_OK(run_spec(&s, &y));
    const int8_t want8[5] = {-2, -2, 0, 3, 3};
    CHECK(y.data && !memcmp(y.data, want8, 5));
    t_free(&y);
    /* attrs +-inf (no bounds): unchanged */
    s.attr.unary.alpha = -INFINITY;
    s.attr.unary.beta = INFINITY;
    CHECK_OK(run_spec(&s, &y));
    CHECK(y.data && !memcmp(y.data, x8, 5));
    t_free(&y);
    /* runtime I64 bounds beyond float precision; then lo > hi */
    int64_t lo = -4999999999LL, hi = 4999999999LL;
    int64_t d0[1] = {1};
    tensor b = t_of(PF_IR_I64, 1, d5, x64), tl = t_of(PF_IR_I64, 1, d0, &lo),
           th = t_of(PF_IR_I64, 1, d0, &hi);
    s = spec_new(PF_IR_CLIP, 3, PF_IR_I64);
    s.in[0] = &b;
    s.in[1] = &tl;
    s.in[2] = &th;
    s.attr.unary.alpha = -INFINITY;
    s.attr.unary.beta = INFINITY;
    CHECK_OK(run_spec(&s, &y));
    const int64_t want64[5] = {lo, lo, 0, hi, hi};
    CHECK(y.data && !memcmp(y.data, want64, sizeof want64));
    t_free(&y);
    s.in[1] = &th; /* lo = 4999999999 > hi = -4999999999: every value is hi */
    s.in[2] = &tl;
    CHECK_OK(run_spec(&s, &y));
    for (int i = 0; y.data && i < 5; i++) CHECK(((int64_t *)y.data)[i] == lo);
    t_free(&y);
    /* a bound of another dtype is refused with its name */
    tensor f = t_of(PF_IR_I32, 1, d0, (int32_t[]){1});
    s.in[1] = &f;
    CHECK(run_spec(&s, &y) == PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "Clip min") != NULL);
    t_free(&y);
    t_free(&a); t_free(&b); t_free(&tl); t_free(&th); t_free(&f);
}

static void test_binary_bool_act_prelu(void)
{
    const pf_ir_op lops[4] = {PF_IR_AND, PF_IR_OR, PF_IR_XOR, PF_IR_EQUAL};
    const int64_t da[3] = {2, 3, 4}, db[2] = {3, 1};
    for (int k = 0; k < 4; k++) {
        tensor a = t_rand_new(PF_IR_BOOL, 3, da, 0, 1), b = t_rand_new(PF_IR_BOOL, 2, db, 0, 1), y;
        spec s = spec_new(lops[k], 2, PF_IR_BOOL);
        s.in[0] = &a;
        s.in[1] = &b;
        CHECK_OK(run_spec(&s, &y));
        tensor ref = t_new(PF_IR_BOOL, 3, da);
        int64_t idx[3];
        for (int64_t i = 0; i < 24; i++) {
            unravel(i, 3, da, idx);
            int x = t_get(&a, i) != 0, z = t_get(&b, ravel_b(idx, 3, &b)) != 0;
            int r = k == 0 ? x && z : k == 1 ? x || z : k == 2 ? x != z : x == z;
            t_set(&ref, i, r);
        }
        CHECK(cmp_exact(&y, &ref, pf_ir_op_name(lops[k])) == 0);
        t_free(&a); t_free(&b); t_free(&y); t_free(&ref);
    }
    /* fused activations on Add (Relu) and Mul (Clip 0..6 = Relu6) */
    const int64_t dx[4] = {2, 3, 4, 5}, dc[3] = {3, 1, 1};
    for (int k = 0; k < 2; k++) {
        tensor a = t_rand_new(PF_IR_F32, 4, dx, -8, 8), b = t_rand_new(PF_IR_F32, 3, dc, -2, 2), y;
        spec s = spec_new(k ? PF_IR_MUL : PF_IR_ADD, 2, PF_IR_F32);
        s.in[0] = &a;
        s.in[1] = &b;
        s.act = k ? PF_IR_ACT_CLIP : PF_IR_ACT_RELU;
        s.act_a = 0.0f;
        s.act_b = 6.0f;
        CHECK_OK(run_spec(&s, &y));
        double ref[120];
        int64_t idx[4];
        for (int64_t i = 0; i < 120; i++) {
            unravel(i, 4, dx, idx);
            float x = (float)t_get(&a, i), z = (float)t_get(&b, ravel_b(idx, 4, &b));
            float v = k ? x * z : x + z;
            ref[i] = k ? fmin(fmax(v, 0), 6) : fmax(v, 0);
        }
        CHECK(cmp_close(&y, ref, 120, 0, 0, k ? "Mul+Relu6" : "Add+Relu") == 0);
        t_free(&a); t_free(&b); t_free(&y);
    }
    /* PRelu: slope [C,1,1], [1], [W] */
    const int64_t slopes[3][3] = {{3, 1, 1}, {1, 0, 0}, {5, 0, 0}};
    const int srank[3] = {3, 1, 1};
    for (int k = 0; k < 3; k++) {
        tensor x = t_rand_new(PF_IR_F32, 4, dx, -3, 3), sl = t_rand_new(PF_IR_F32, srank[k], slopes[k], 0, 1), y;
        spec s = spec_new(PF_IR_PRELU, 2, PF_IR_F32);
        s.in[0] = &x;
        s.in[1] = &sl;
        CHECK_OK(run_spec(&s, &y));
        double ref[120];
        int64_t idx[4];
        for (int64_t i = 0; i < 120; i++) {
            unravel(i, 4, dx, idx);
            ref[i] = ref_bin_f(PF_IR_PRELU, (float)t_get(&x, i), (float)t_get(&sl, ravel_b(idx, 4, &sl)), 0);
        }
        CHECK(cmp_close(&y, ref, 120, 0, 1e-7, "PRelu") == 0);
        t_free(&x); t_free(&sl); t_free(&y);
    }
}

static void test_where_variadic(void)
{
    const int64_t dc[3] = {2, 1, 4}, dxx[2] = {3, 1}, dy1[1] = {1}, od[3] = {2, 3, 4};
    const pf_ir_dtype dts[3] = {PF_IR_F32, PF_IR_I64, PF_IR_U8};
    for (int t = 0; t < 3; t++) {
        tensor c = t_rand_new(PF_IR_BOOL, 3, dc, 0, 1), x = t_rand_new(dts[t], 2, dxx, 0, 100);
        tensor yy = t_rand_new(dts[t], 1, dy1, 0, 100), y;
        spec s = spec_new(PF_IR_WHERE, 3, dts[t]);
        s.in[0] = &c;
        s.in[1] = &x;
        s.in[2] = &yy;
        CHECK_OK(run_spec(&s, &y));
        tensor ref = t_new(dts[t], 3, od);
        int64_t idx[3];
        for (int64_t i = 0; i < 24; i++) {
            unravel(i, 3, od, idx);
            bool cv = t_get(&c, ravel_b(idx, 3, &c)) != 0;
            t_set(&ref, i, cv ? t_get(&x, ravel_b(idx, 3, &x)) : t_get(&yy, 0));
        }
        CHECK(cmp_exact(&y, &ref, "Where") == 0);
        t_free(&c); t_free(&x); t_free(&yy); t_free(&y); t_free(&ref);
    }
    /* Sum / Mean of [2,3,4], [3,1], [4] */
    const int64_t d0[3] = {2, 3, 4}, d1[2] = {3, 1}, d2[1] = {4};
    for (int k = 0; k < 3; k++) {
        pf_ir_dtype dt = k == 2 ? PF_IR_I32 : PF_IR_F32;
        tensor a = t_rand_new(dt, 3, d0, -10, 10), b = t_rand_new(dt, 2, d1, -10, 10);
        tensor c = t_rand_new(dt, 1, d2, -10, 10), y;
        spec s = spec_new(k == 1 ? PF_IR_MEAN_N : PF_IR_SUM, 3, dt);
        s.in[0] = &a;
        s.in[1] = &b;
        s.in[2] = &c;
        CHECK_OK(run_spec(&s, &y));
        double ref[24];
        int64_t idx[3];
        for (int64_t i = 0; i < 24; i++) {
            unravel(i, 3, d0, idx);
            double v = t_get(&a, i) + t_get(&b, ravel_b(idx, 3, &b)) + t_get(&c, ravel_b(idx, 3, &c));
            ref[i] = k == 1 ? v / 3 : v;
        }
        CHECK(cmp_close(&y, ref, 24, 1e-5, 1e-6, k == 1 ? "Mean" : "Sum") == 0);
        t_free(&a); t_free(&b); t_free(&c); t_free(&y);
    }
}

/* ---- reductions ---------------------------------------------------------------------- */

static void test_reduce(void)
{
    static const pf_ir_op ops[] = {PF_IR_REDUCE_MEAN, PF_IR_REDUCE_SUM, PF_IR_REDUCE_MAX,
                                   PF_IR_REDUCE_MIN, PF_IR_REDUCE_PROD, PF_IR_REDUCE_L2,
                                   PF_IR_REDUCE_SUM_SQUARE};
    static const struct { int n; int64_t ax[4]; } sets[] = {
        {0, {0}}, {1, {0}}, {1, {1}}, {1, {3}}, {1, {-1}}, {2, {1, 2}}, {2, {0, 2}},
        {2, {0, 3}}, {4, {0, 1, 2, 3}}, {3, {-3, 2, 3}}};
    const int64_t dims[4] = {3, 4, 5, 6};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        for (size_t a = 0; a < sizeof sets / sizeof sets[0]; a++)
            for (int keep = 0; keep < 2; keep++) {
                pf_ir_op op = ops[k];
                tensor x = t_rand_new(PF_IR_F32, 4, dims, op == PF_IR_REDUCE_PROD ? 0.7 : -2,
                                      op == PF_IR_REDUCE_PROD ? 1.3 : 2);
                spec s = spec_new(op, 1, PF_IR_F32);
                s.in[0] = &x;
                s.attr.reduce.n = sets[a].n;
                memcpy(s.attr.reduce.axes, sets[a].ax, sizeof sets[a].ax);
                s.attr.reduce.keepdims = keep;
                tensor y;
                CHECK_OK(run_spec(&s, &y));
                bool red[4] = {sets[a].n == 0, sets[a].n == 0, sets[a].n == 0, sets[a].n == 0};
                for (int i = 0; i < sets[a].n; i++) red[(sets[a].ax[i] + 4) % 4] = true;
                int64_t kd[4];
                int kn = 0, exp_nd = 0;
                int64_t exp_dims[4];
                for (int d = 0; d < 4; d++) {
                    kd[d] = red[d] ? 1 : dims[d];
                    if (!red[d] || keep) exp_dims[exp_nd++] = kd[d];
                    kn += !red[d];
                }
                (void)kn;
                CHECK(same_shape(&y, exp_nd, exp_dims));
                int64_t nout = kd[0] * kd[1] * kd[2] * kd[3];
                double *ref = malloc(sizeof(double) * (size_t)nout);
                int64_t oi[4], ii[4];
                for (int64_t o = 0; o < nout; o++) {
                    unravel(o, 4, kd, oi);
                    double acc = op == PF_IR_REDUCE_PROD ? 1 : op == PF_IR_REDUCE_MAX ? -INFINITY
                               : op == PF_IR_REDUCE_MIN ? INFINITY : 0;
                    int64_t cnt = 0;
                    for (int64_t i = 0; i < 360; i++) {
                        unravel(i, 4, dims, ii);
                        bool match = true;
                        for (int d = 0; d < 4; d++) match = match && (red[d] || ii[d] == oi[d]);
                        if (!match) continue;
                        double v = t_get(&x, i);
                        cnt++;
                        if (op == PF_IR_REDUCE_MAX) acc = fmax(acc, v);
                        else if (op == PF_IR_REDUCE_MIN) acc = fmin(acc, v);
                        else if (op == PF_IR_REDUCE_PROD) acc *= v;
                        else if (op == PF_IR_REDUCE_L2 || op == PF_IR_REDUCE_SUM_SQUARE) acc += v * v;
                        else acc += v;
                    }
                    if (op == PF_IR_REDUCE_MEAN) acc /= (double)cnt;
                    if (op == PF_IR_REDUCE_L2) acc = sqrt(acc);
                    ref[o] = acc;
                }
                char what[80];
                snprintf(what, sizeof what, "%s axes set %zu keepdims %d", pf_ir_op_name(op), a, keep);
                /* float accumulation over <= 360 terms: 1e-5 absolute + relative */
                CHECK(cmp_close(&y, ref, nout, 1e-5, 1e-5, what) == 0);
                free(ref);
                t_free(&x); t_free(&y);
            }
    /* noop_with_empty_axes copies; an empty axis reduces to the identity */
    tensor x = t_rand_new(PF_IR_F32, 4, dims, -1, 1), y;
    spec s = spec_new(PF_IR_REDUCE_SUM, 1, PF_IR_F32);
    s.in[0] = &x;
    s.attr.reduce.noop_with_empty_axes = true;
    CHECK_OK(run_spec(&s, &y));
    CHECK(cmp_exact(&y, &x, "noop reduce") == 0);
    t_free(&x); t_free(&y);
    const int64_t de[3] = {2, 0, 3};
    for (int k = 0; k < 2; k++) {
        tensor e = t_new(PF_IR_F32, 3, de);
        s = spec_new(k ? PF_IR_REDUCE_PROD : PF_IR_REDUCE_SUM, 1, PF_IR_F32);
        s.in[0] = &e;
        s.attr.reduce.n = 1;
        s.attr.reduce.axes[0] = 1;
        CHECK_OK(run_spec(&s, &y));
        double ref[6] = {k, k, k, k, k, k};
        CHECK(cmp_close(&y, ref, 6, 0, 0, "empty reduce") == 0);
        t_free(&e); t_free(&y);
    }
    /* integers: exact */
    const int64_t di[3] = {3, 4, 5};
    const pf_ir_op iops[4] = {PF_IR_REDUCE_SUM, PF_IR_REDUCE_PROD, PF_IR_REDUCE_MAX, PF_IR_REDUCE_MIN};
    for (int k = 0; k < 4; k++)
        for (int t = 0; t < 2; t++) {
            pf_ir_dtype dt = t ? PF_IR_I32 : PF_IR_I64;
            tensor xi = t_rand_new(dt, 3, di, -3, 3);
            s = spec_new(iops[k], 1, dt);
            s.in[0] = &xi;
            s.attr.reduce.n = 2;
            s.attr.reduce.axes[0] = 0;
            s.attr.reduce.axes[1] = 2;
            CHECK_OK(run_spec(&s, &y));
            tensor ref = t_new(dt, 1, &di[1]);
            for (int64_t j = 0; j < 4; j++) {
                int64_t acc = k == 1 ? 1 : k == 2 ? INT64_MIN : k == 3 ? INT64_MAX : 0;
                for (int64_t i0 = 0; i0 < 3; i0++)
                    for (int64_t i2 = 0; i2 < 5; i2++) {
                        int64_t v = t_geti(&xi, (i0 * 4 + j) * 5 + i2);
                        acc = k == 0 ? acc + v : k == 1 ? acc * v : k == 2 ? (v > acc ? v : acc)
                                                                          : (v < acc ? v : acc);
                    }
                t_set(&ref, j, (double)acc);
            }
            CHECK(cmp_exact(&y, &ref, pf_ir_op_name(iops[k])) == 0);
            t_free(&xi); t_free(&y); t_free(&ref);
        }
}

static void test_argminmax(void)
{
    const int64_t dims[3] = {3, 4, 5};
    for (int op = 0; op < 2; op++)
        for (int t = 0; t < 2; t++)
            for (int ax = -1; ax < 3; ax++)
                for (int keep = 0; keep < 2; keep++)
                    for (int last = 0; last < 2; last++) {
                        /* few distinct values: ties are common */
                        tensor x = t_rand_new(t ? PF_IR_I64 : PF_IR_F32, 3, dims, 0, 3), y;
                        spec s = spec_new(op ? PF_IR_ARGMIN : PF_IR_ARGMAX, 1, PF_IR_I64);
                        s.in[0] = &x;
                        s.attr.reduce.n = 1;
                        s.attr.reduce.axes[0] = ax;
                        s.attr.reduce.keepdims = keep;
                        s.attr.reduce.select_last_index = last;
                        CHECK_OK(run_spec(&s, &y));
                        int a = (ax + 3) % 3;
                        int64_t od[3];
                        for (int d = 0; d < 3; d++) od[d] = d == a ? 1 : dims[d];
                        int64_t nout = od[0] * od[1] * od[2], oi[3];
                        double *ref = malloc(sizeof(double) * (size_t)nout);
                        for (int64_t o = 0; o < nout; o++) {
                            unravel(o, 3, od, oi);
                            int64_t best = -1;
                            double bv = 0;
                            for (int64_t r = 0; r < dims[a]; r++) {
                                int64_t ii[3] = {oi[0], oi[1], oi[2]};
                                ii[a] = r;
                                double v = t_get(&x, (ii[0] * 4 + ii[1]) * 5 + ii[2]);
                                bool better = best < 0 || (op ? v < bv : v > bv) || (last && v == bv);
                                if (better) { best = r; bv = v; }
                            }
                            ref[o] = (double)best;
                        }
                        CHECK(y.dt == PF_IR_I64 && y.nd == (keep ? 3 : 2));
                        CHECK(cmp_close(&y, ref, nout, 0, 0, op ? "ArgMin" : "ArgMax") == 0);
                        free(ref);
                        t_free(&x); t_free(&y);
                    }
}

static void test_softmax(void)
{
    const int64_t dims[4] = {2, 3, 4, 5};
    for (int lg = 0; lg < 2; lg++)
        for (int legacy = 0; legacy < 2; legacy++)
            for (int ax = -4; ax < 4; ax++) {
                tensor x = t_rand_new(PF_IR_F32, 4, dims, -5, 5), y;
                ((float *)x.data)[7] = 80.0f; /* exp would overflow without the max shift */
                spec s = spec_new(lg ? PF_IR_LOG_SOFTMAX : PF_IR_SOFTMAX, 1, PF_IR_F32);
                s.in[0] = &x;
                s.attr.axis.axis = ax;
                s.attr.axis.legacy = legacy;
                CHECK_OK(run_spec(&s, &y));
                int a = (ax + 4) % 4;
                double ref[120];
                int64_t idx[4], jdx[4];
                for (int64_t i = 0; i < 120; i++) {
                    unravel(i, 4, dims, idx);
                    /* the group of i: same index on dims outside the normalised set */
                    double m = -INFINITY, sum = 0;
                    for (int pass = 0; pass < 2; pass++)
                        for (int64_t j = 0; j < 120; j++) {
                            unravel(j, 4, dims, jdx);
                            bool same = true;
                            for (int d = 0; d < 4; d++) {
                                bool normed = legacy ? d >= a : d == a;
                                if (!normed && jdx[d] != idx[d]) same = false;
                            }
                            if (!same) continue;
                            double v = t_get(&x, j);
                            if (pass == 0) m = fmax(m, v);
                            else sum += exp(v - m);
                        }
                    double v = t_get(&x, i) - m;
                    ref[i] = lg ? v - log(sum) : exp(v) / sum;
                }
                char what[64];
                snprintf(what, sizeof what, "%s axis %d legacy %d", lg ? "LogSoftmax" : "Softmax", ax, legacy);
                /* 1e-6 absolute + 1e-5 relative */
                CHECK(cmp_close(&y, ref, 120, 1e-6, 1e-5, what) == 0);
                t_free(&x); t_free(&y);
            }
}

/* ---- movement ------------------------------------------------------------------------ */

static void test_concat_split(void)
{
    const pf_ir_dtype dts[3] = {PF_IR_F32, PF_IR_I64, PF_IR_U8};
    for (int t = 0; t < 3; t++)
        for (int ax = -3; ax < 3; ax++) {
            int a = (ax + 3) % 3;
            int64_t base[3] = {2, 3, 4};
            const int64_t sizes[3] = {2, 0, 3};
            tensor in[3];
            spec s = spec_new(PF_IR_CONCAT, 3, dts[t]);
            for (int k = 0; k < 3; k++) {
                int64_t d[3] = {base[0], base[1], base[2]};
                d[a] = sizes[k];
                in[k] = t_rand_new(dts[t], 3, d, 0, 200);
                s.in[k] = &in[k];
            }
            s.attr.axis.axis = ax;
            tensor y;
            CHECK_OK(run_spec(&s, &y));
            int64_t od[3] = {base[0], base[1], base[2]};
            od[a] = 5;
            tensor ref = t_new(dts[t], 3, od);
            int64_t idx[3];
            for (int64_t i = 0; i < t_numel(&ref); i++) {
                unravel(i, 3, od, idx);
                int k = 0;
                int64_t pos = idx[a];
                while (pos >= sizes[k]) pos -= sizes[k++];
                idx[a] = pos;
                t_set(&ref, i, t_get(&in[k], (idx[0] * in[k].dims[1] + idx[1]) * in[k].dims[2] + idx[2]));
            }
            CHECK(cmp_exact(&y, &ref, "Concat") == 0);
            /* Split the result back into the three parts */
            spec sp = spec_new(PF_IR_SPLIT, 1, dts[t]);
            sp.in[0] = &ref;
            sp.n_out = 3;
            sp.out_dt[1] = sp.out_dt[2] = dts[t];
            sp.attr.split.axis = ax;
            sp.attr.split.n = 3;
            memcpy(sp.attr.split.sizes, sizes, sizeof sizes);
            tensor parts[3];
            CHECK_OK(run_spec(&sp, parts));
            for (int k = 0; k < 3; k++) {
                CHECK(cmp_exact(&parts[k], &in[k], "Split") == 0);
                t_free(&parts[k]);
                t_free(&in[k]);
            }
            t_free(&y); t_free(&ref);
        }
    /* even split (sizes from the output count) along the last axis */
    const int64_t d[2] = {3, 6}, dh[2] = {3, 2};
    tensor x = t_rand_new(PF_IR_F32, 2, d, -1, 1), parts[3];
    spec sp = spec_new(PF_IR_SPLIT, 1, PF_IR_F32);
    sp.in[0] = &x;
    sp.n_out = 3;
    sp.attr.split.axis = -1;
    CHECK_OK(run_spec(&sp, parts));
    for (int k = 0; k < 3; k++) {
        tensor ref = t_new(PF_IR_F32, 2, dh);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 2; j++) t_set(&ref, i * 2 + j, t_get(&x, i * 6 + k * 2 + j));
        CHECK(cmp_exact(&parts[k], &ref, "even Split") == 0);
        t_free(&ref);
        t_free(&parts[k]);
    }
    t_free(&x);
}

static void test_reshape_shape_const(void)
{
    const int64_t d[3] = {2, 3, 4};
    tensor x = t_rand_new(PF_IR_I32, 3, d, -9, 9), y;
    spec s = spec_new(PF_IR_RESHAPE, 1, PF_IR_I32);
    s.in[0] = &x;
    s.attr.reshape.kind = PF_IR_RESHAPE_SHAPE;
    s.attr.reshape.n = 2;
    s.attr.reshape.shape[0] = 4;
    s.attr.reshape.shape[1] = -1;
    CHECK_OK(run_spec(&s, &y));
    const int64_t od[2] = {4, 6};
    CHECK(same_shape(&y, 2, od));
    CHECK(y.data && memcmp(y.data, x.data, 24 * 4) == 0);
    t_free(&y);
    /* Shape with start 1 and end -1 -> [3] ; whole shape */
    for (int k = 0; k < 2; k++) {
        s = spec_new(PF_IR_SHAPE, 1, PF_IR_I64);
        s.in[0] = &x;
        s.attr.slice.starts[0] = k ? 0 : 1;
        s.attr.slice.ends[0] = k ? INT64_MAX : -1;
        CHECK_OK(run_spec(&s, &y));
        int64_t n = k ? 3 : 1;
        CHECK(y.nd == 1 && y.dims[0] == n && y.dt == PF_IR_I64);
        for (int64_t i = 0; i < n && y.data; i++) CHECK_EQ_INT(((int64_t *)y.data)[i], d[i + (k ? 0 : 1)]);
        t_free(&y);
    }
    t_free(&x);
    /* ConstantOfShape in the output dtype */
    const pf_ir_dtype dts[4] = {PF_IR_F32, PF_IR_I64, PF_IR_BOOL, PF_IR_F16};
    const double vals[4] = {1.5, -7, 1, 0.25};
    int64_t shp[2] = {2, 3}, one[1] = {2};
    tensor sh = t_of(PF_IR_I64, 1, one, shp);
    for (int k = 0; k < 4; k++) {
        s = spec_new(PF_IR_CONSTANT_OF_SHAPE, 1, dts[k]);
        s.in[0] = &sh;
        s.const_mask = 1;
        s.attr.fill.value = vals[k];
        CHECK_OK(run_spec(&s, &y));
        tensor ref = t_new(dts[k], 2, shp);
        for (int i = 0; i < 6; i++) t_set(&ref, i, vals[k]);
        CHECK(cmp_exact(&y, &ref, "ConstantOfShape") == 0);
        t_free(&y); t_free(&ref);
    }
    t_free(&sh);
}

static void check_transpose(pf_ir_dtype dt, int nd, const int64_t *dims, const int64_t *perm, bool serial)
{
    tensor x = t_rand_new(dt, nd, dims, 0, 100), y;
    spec s = spec_new(PF_IR_TRANSPOSE, 1, dt);
    s.in[0] = &x;
    s.serial = serial;
    s.attr.transpose.n = nd;
    memcpy(s.attr.transpose.perm, perm, sizeof(int64_t) * (size_t)nd);
    CHECK_OK(run_spec(&s, &y));
    int64_t od[PF_IR_MAX_RANK], oi[PF_IR_MAX_RANK], ii[PF_IR_MAX_RANK];
    for (int d = 0; d < nd; d++) od[d] = dims[perm[d]];
    tensor ref = t_new(dt, nd, od);
    for (int64_t i = 0; i < t_numel(&ref); i++) {
        unravel(i, nd, od, oi);
        for (int d = 0; d < nd; d++) ii[perm[d]] = oi[d];
        int64_t off = 0;
        for (int d = 0; d < nd; d++) off = off * dims[d] + ii[d];
        memcpy((char *)ref.data + i * (int64_t)dt_size(dt), (char *)x.data + off * (int64_t)dt_size(dt), dt_size(dt));
    }
    char what[64];
    snprintf(what, sizeof what, "Transpose rank %d dtype %d", nd, (int)dt);
    CHECK(cmp_exact(&y, &ref, what) == 0);
    t_free(&x); t_free(&y); t_free(&ref);
}

static void test_transpose(void)
{
    const int64_t d4[4] = {2, 3, 4, 5};
    int64_t p[4];
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 4; c++) {
                int dd = 6 - a - b - c;
                if (a == b || a == c || b == c || dd < 0 || dd > 3 || dd == a || dd == b || dd == c) continue;
                p[0] = a; p[1] = b; p[2] = c; p[3] = dd;
                check_transpose(PF_IR_F32, 4, d4, p, false);
            }
    const int64_t d2[2] = {33, 70}, p2[2] = {1, 0};
    check_transpose(PF_IR_U8, 2, d2, p2, false);
    check_transpose(PF_IR_F16, 2, d2, p2, false);
    const int64_t d3[3] = {7, 1, 9}, p3[3] = {2, 0, 1};
    check_transpose(PF_IR_I64, 3, d3, p3, false);
    const int64_t d1[1] = {5}, p1[1] = {0};
    check_transpose(PF_IR_F32, 1, d1, p1, false);
    /* big NCHW <-> NHWC: threaded, tiled */
    const int64_t nchw[4] = {2, 64, 56, 57}, to_nhwc[4] = {0, 2, 3, 1}, to_nchw[4] = {0, 3, 1, 2};
    check_transpose(PF_IR_F32, 4, nchw, to_nhwc, false);
    check_transpose(PF_IR_F32, 4, nchw, to_nchw, false);
    const int64_t d6[6] = {2, 3, 2, 4, 3, 2}, p6[6] = {5, 3, 1, 0, 2, 4};
    check_transpose(PF_IR_I32, 6, d6, p6, false);
}

static void test_slice(void)
{
    static const struct {
        int n;
        int64_t axes[3], starts[3], ends[3], steps[3];
    } cases[] = {
        {3, {0, 1, 2}, {1, 0, 2}, {4, 6, 7}, {1, 2, 1}},
        {1, {-1}, {-1}, {INT64_MIN, 0, 0}, {-1, 0, 0}},
        {2, {2, 0}, {5, -2}, {1, 100}, {-2, 1}},
        {1, {1}, {4, 0, 0}, {1, 0, 0}, {1, 0, 0}},          /* empty */
        {2, {1, 2}, {-100, 100}, {100, -100}, {3, -3}},
        {1, {0}, {-3, 0, 0}, {-1, 0, 0}, {1, 0, 0}},
    };
    const int64_t dims[3] = {5, 6, 7};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tensor x = t_rand_new(PF_IR_F32, 3, dims, -1, 1), y;
        spec s = spec_new(PF_IR_SLICE, 1, PF_IR_F32);
        s.in[0] = &x;
        s.attr.slice.n = cases[c].n;
        for (int i = 0; i < cases[c].n; i++) {
            s.attr.slice.axes[i] = cases[c].axes[i];
            s.attr.slice.starts[i] = cases[c].starts[i];
            s.attr.slice.ends[i] = cases[c].ends[i];
            s.attr.slice.steps[i] = cases[c].steps[i];
        }
        CHECK_OK(run_spec(&s, &y));
        /* reference: enumerate the kept indices per axis as Python's range() */
        int64_t keep[3][16], nk[3];
        for (int d = 0; d < 3; d++) {
            int64_t st = 0, en = dims[d], sp = 1;
            for (int i = 0; i < cases[c].n; i++)
                if ((cases[c].axes[i] + 3) % 3 == d) {
                    st = cases[c].starts[i];
                    en = cases[c].ends[i];
                    sp = cases[c].steps[i];
                }
            int64_t D = dims[d];
            if (st < 0) st += D;
            if (en < 0 && en != INT64_MIN) en += D;
            if (en == INT64_MIN) en = -1;
            if (sp > 0) {
                st = st < 0 ? 0 : st > D ? D : st;
                en = en < 0 ? 0 : en > D ? D : en;
            } else {
                st = st < 0 ? -1 : st > D - 1 ? D - 1 : st;
                en = en < -1 ? -1 : en > D - 1 ? D - 1 : en;
            }
            nk[d] = 0;
            for (int64_t i = st; sp > 0 ? i < en : i > en; i += sp) keep[d][nk[d]++] = i;
        }
        tensor ref = t_new(PF_IR_F32, 3, nk);
        int64_t idx[3];
        for (int64_t i = 0; i < t_numel(&ref); i++) {
            unravel(i, 3, nk, idx);
            t_set(&ref, i, t_get(&x, (keep[0][idx[0]] * 6 + keep[1][idx[1]]) * 7 + keep[2][idx[2]]));
        }
        char what[32];
        snprintf(what, sizeof what, "Slice case %zu", c);
        CHECK(cmp_exact(&y, &ref, what) == 0);
        t_free(&x); t_free(&y); t_free(&ref);
    }
}

static int64_t bounce(int64_t s, int64_t n)
{
    if (n == 1) return 0;
    while (s < 0 || s >= n) {
        if (s < 0) s = -s;
        if (s >= n) s = 2 * (n - 1) - s;
    }
    return s;
}

static void test_pad(void)
{
    static const struct {
        pf_ir_pad_mode mode;
        int64_t b[3], e[3];
    } cases[] = {
        {PF_IR_PADMODE_CONSTANT, {1, 0, 2}, {0, 2, 1}},
        {PF_IR_PADMODE_REFLECT, {1, 2, 2}, {2, 1, 3}},
        {PF_IR_PADMODE_EDGE, {2, 3, 0}, {1, 0, 4}},
        {PF_IR_PADMODE_CONSTANT, {-1, 1, 0}, {0, -2, 2}},
        {PF_IR_PADMODE_EDGE, {0, -1, -2}, {-1, 2, 0}},
        {PF_IR_PADMODE_REFLECT, {0, 0, 0}, {0, 0, 0}},
    };
    const int64_t dims[3] = {3, 4, 5};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int t = 0; t < 2; t++) {
            pf_ir_dtype dt = t ? PF_IR_I64 : PF_IR_F32;
            tensor x = t_rand_new(dt, 3, dims, -100, 100), y;
            spec s = spec_new(PF_IR_PAD, 1, dt);
            s.in[0] = &x;
            s.attr.pad.n = 3;
            s.attr.pad.mode = cases[c].mode;
            s.attr.pad.value = 2.0;
            memcpy(s.attr.pad.begin, cases[c].b, sizeof cases[c].b);
            memcpy(s.attr.pad.end, cases[c].e, sizeof cases[c].e);
            CHECK_OK(run_spec(&s, &y));
            int64_t od[3], idx[3];
            for (int d = 0; d < 3; d++) od[d] = dims[d] + cases[c].b[d] + cases[c].e[d];
            tensor ref = t_new(dt, 3, od);
            for (int64_t i = 0; i < t_numel(&ref); i++) {
                unravel(i, 3, od, idx);
                bool outside = false;
                int64_t src[3];
                for (int d = 0; d < 3; d++) {
                    int64_t sidx = idx[d] - cases[c].b[d];
                    if (sidx < 0 || sidx >= dims[d]) {
                        if (cases[c].mode == PF_IR_PADMODE_CONSTANT) outside = true;
                        else if (cases[c].mode == PF_IR_PADMODE_EDGE) sidx = sidx < 0 ? 0 : dims[d] - 1;
                        else sidx = bounce(sidx, dims[d]);
                    }
                    src[d] = sidx;
                }
                t_set(&ref, i, outside ? 2.0 : t_get(&x, (src[0] * 4 + src[1]) * 5 + src[2]));
            }
            char what[32];
            snprintf(what, sizeof what, "Pad case %zu", c);
            CHECK(cmp_exact(&y, &ref, what) == 0);
            t_free(&x); t_free(&y); t_free(&ref);
        }
}

static void test_gather(void)
{
    const int64_t dims[3] = {4, 5, 6};
    static const struct { int axis; pf_ir_dtype it; int nd; int64_t d[2]; } cases[] = {
        {0, PF_IR_I64, 2, {2, 3}}, {1, PF_IR_I32, 0, {0, 0}}, {-1, PF_IR_I64, 1, {7, 0}},
        {2, PF_IR_I32, 2, {1, 0}}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int a = (cases[c].axis + 3) % 3;
        tensor x = t_rand_new(PF_IR_F32, 3, dims, -1, 1);
        tensor ix = t_rand_new(cases[c].it, cases[c].nd, cases[c].d, -dims[a], dims[a] - 1), y;
        spec s = spec_new(PF_IR_GATHER, 2, PF_IR_F32);
        s.in[0] = &x;
        s.in[1] = &ix;
        s.attr.axis.axis = cases[c].axis;
        CHECK_OK(run_spec(&s, &y));
        int64_t od[PF_IR_MAX_RANK], oi[PF_IR_MAX_RANK];
        int ond = 0;
        for (int d = 0; d < a; d++) od[ond++] = dims[d];
        for (int d = 0; d < ix.nd; d++) od[ond++] = ix.dims[d];
        for (int d = a + 1; d < 3; d++) od[ond++] = dims[d];
        tensor ref = t_new(PF_IR_F32, ond, od);
        for (int64_t i = 0; i < t_numel(&ref); i++) {
            unravel(i, ond, od, oi);
            int64_t flat = 0; /* index into the indices tensor */
            for (int d = 0; d < ix.nd; d++) flat = flat * ix.dims[d] + oi[a + d];
            int64_t src[3], k = 0;
            for (int d = 0; d < 3; d++) {
                if (d == a) {
                    int64_t v = t_geti(&ix, flat);
                    src[d] = v < 0 ? v + dims[a] : v;
                } else {
                    src[d] = oi[d < a ? k : k + ix.nd - 1];
                }
                k++;
            }
            t_set(&ref, i, t_get(&x, (src[0] * 5 + src[1]) * 6 + src[2]));
        }
        CHECK(cmp_exact(&y, &ref, "Gather") == 0);
        t_free(&x); t_free(&ix); t_free(&y); t_free(&ref);
    }
    /* an out-of-range runtime index fails, naming the node and the index */
    int64_t bad[3] = {1, 9, 0}, d3[1] = {3};
    tensor x = t_rand_new(PF_IR_F32, 3, dims, -1, 1), ix = t_of(PF_IR_I64, 1, d3, bad), y;
    spec s = spec_new(PF_IR_GATHER, 2, PF_IR_F32);
    s.in[0] = &x;
    s.in[1] = &ix;
    s.attr.axis.axis = 1;
    pf_status st = run_spec(&s, &y);
    CHECK(st == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "'n0'") != NULL);
    CHECK(strstr(pf_last_error(), "index 9") != NULL);
    t_free(&x); t_free(&ix); t_free(&y);
}

static void test_expand_tile(void)
{
    static const struct { int nx; int64_t dx[3]; int ns; int64_t s[3]; } cases[] = {
        {2, {3, 1}, 3, {2, 3, 4}}, {1, {1}, 2, {2, 2}}, {3, {2, 1, 4}, 2, {3, 1}}, {0, {0}, 1, {5}}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tensor x = t_rand_new(PF_IR_I64, cases[c].nx, cases[c].dx, -99, 99), y;
        spec s = spec_new(PF_IR_EXPAND, 1, PF_IR_I64);
        s.in[0] = &x;
        s.attr.reshape.kind = PF_IR_RESHAPE_SHAPE;
        s.attr.reshape.n = cases[c].ns;
        memcpy(s.attr.reshape.shape, cases[c].s, sizeof cases[c].s);
        CHECK_OK(run_spec(&s, &y));
        tensor st = t_new(PF_IR_I64, cases[c].ns, cases[c].s);
        const tensor *xs[2] = {&x, &st};
        int64_t od[PF_IR_MAX_RANK], idx[PF_IR_MAX_RANK];
        int ond = bshape(xs, 2, od);
        tensor ref = t_new(PF_IR_I64, ond, od);
        for (int64_t i = 0; i < t_numel(&ref); i++) {
            unravel(i, ond, od, idx);
            t_set(&ref, i, t_get(&x, ravel_b(idx, ond, &x)));
        }
        CHECK(cmp_exact(&y, &ref, "Expand") == 0);
        t_free(&x); t_free(&y); t_free(&st); t_free(&ref);
    }
    static const struct { int n; int64_t d[3], r[3]; } tc[] = {
        {3, {2, 3, 4}, {2, 1, 3}}, {1, {5}, {3}}, {2, {1, 3}, {4, 2}}, {2, {2, 3}, {0, 2}}};
    for (size_t c = 0; c < sizeof tc / sizeof tc[0]; c++) {
        tensor x = t_rand_new(PF_IR_U8, tc[c].n, tc[c].d, 0, 255), y;
        spec s = spec_new(PF_IR_TILE, 1, PF_IR_U8);
        s.in[0] = &x;
        s.attr.tile.n = tc[c].n;
        memcpy(s.attr.tile.repeats, tc[c].r, sizeof tc[c].r);
        CHECK_OK(run_spec(&s, &y));
        int64_t od[3], idx[3];
        for (int d = 0; d < tc[c].n; d++) od[d] = tc[c].d[d] * tc[c].r[d];
        tensor ref = t_new(PF_IR_U8, tc[c].n, od);
        for (int64_t i = 0; i < t_numel(&ref); i++) {
            unravel(i, tc[c].n, od, idx);
            int64_t off = 0;
            for (int d = 0; d < tc[c].n; d++) off = off * tc[c].d[d] + idx[d] % tc[c].d[d];
            t_set(&ref, i, t_get(&x, off));
        }
        CHECK(cmp_exact(&y, &ref, "Tile") == 0);
        t_free(&x); t_free(&y); t_free(&ref);
    }
}

static void test_depth_space(void)
{
    for (int k = 0; k < 3; k++) {
        const int64_t b = 2;
        int64_t dims[4] = {2, k < 2 ? 12 : 3, k < 2 ? 3 : 4, k < 2 ? 4 : 6};
        tensor x = t_rand_new(PF_IR_F32, 4, dims, -1, 1), y;
        spec s = spec_new(k < 2 ? PF_IR_DEPTH_TO_SPACE : PF_IR_SPACE_TO_DEPTH, 1, PF_IR_F32);
        s.in[0] = &x;
        s.attr.d2s.blocksize = b;
        s.attr.d2s.crd = k == 1;
        CHECK_OK(run_spec(&s, &y));
        int64_t N = dims[0], C = dims[1], H = dims[2], W = dims[3];
        int64_t od[4] = {N, k < 2 ? C / 4 : C * 4, k < 2 ? H * 2 : H / 2, k < 2 ? W * 2 : W / 2};
        tensor ref = t_new(PF_IR_F32, 4, od);
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t h = 0; h < H; h++)
                    for (int64_t w = 0; w < W; w++) {
                        double v = t_get(&x, ((n * C + c) * H + h) * W + w);
                        if (k < 2) {
                            /* input channel c -> (i, j, c') by mode */
                            int64_t Cp = C / 4, i, j, cp;
                            if (k == 0) { i = c / (2 * Cp); j = (c / Cp) % 2; cp = c % Cp; }
                            else { cp = c / 4; i = (c / 2) % 2; j = c % 2; }
                            t_set(&ref, ((n * Cp + cp) * (H * 2) + h * 2 + i) * (W * 2) + w * 2 + j, v);
                        } else {
                            int64_t i = h % 2, j = w % 2, oc = (i * 2 + j) * C + c;
                            t_set(&ref, ((n * C * 4 + oc) * (H / 2) + h / 2) * (W / 2) + w / 2, v);
                        }
                    }
        CHECK(cmp_exact(&y, &ref, k == 0 ? "DepthToSpace DCR" : k == 1 ? "DepthToSpace CRD" : "SpaceToDepth") == 0);
        t_free(&x); t_free(&y); t_free(&ref);
    }
}

/* Big inputs go through the pool; the results must equal the serial run
 * and the reference. */
static void test_threaded_large(void)
{
    const int64_t dx[4] = {4, 64, 32, 33}, dc[3] = {64, 1, 1};
    tensor a = t_rand_new(PF_IR_F32, 4, dx, -2, 2), b = t_rand_new(PF_IR_F32, 3, dc, -2, 2);
    tensor y1, y2;
    spec s = spec_new(PF_IR_ADD, 2, PF_IR_F32);
    s.in[0] = &a;
    s.in[1] = &b;
    CHECK_OK(run_spec(&s, &y1));
    s.serial = true;
    CHECK_OK(run_spec(&s, &y2));
    CHECK(cmp_exact(&y1, &y2, "threaded Add") == 0);
    int64_t n = t_numel(&a), idx[4];
    int bad = 0;
    for (int64_t i = 0; i < n && y1.data; i++) {
        unravel(i, 4, dx, idx);
        bad += ((float *)y1.data)[i] != (float)(((float *)a.data)[i] + ((float *)b.data)[idx[1]]);
    }
    CHECK(bad == 0);
    t_free(&y1); t_free(&y2);
    /* reduce over C and over HW; softmax over C; cast; pad */
    const pf_ir_op ops[5] = {PF_IR_REDUCE_MEAN, PF_IR_REDUCE_MAX, PF_IR_SOFTMAX, PF_IR_CAST, PF_IR_PAD};
    for (int k = 0; k < 5; k++) {
        s = spec_new(ops[k], 1, ops[k] == PF_IR_CAST ? PF_IR_F16 : PF_IR_F32);
        s.in[0] = &a;
        if (k < 2) {
            s.attr.reduce.n = k ? 2 : 1;
            s.attr.reduce.axes[0] = k ? 2 : 1;
            s.attr.reduce.axes[1] = 3;
            s.attr.reduce.keepdims = true;
        } else if (k == 2) {
            s.attr.axis.axis = 1;
        } else if (k == 3) {
            s.attr.cast.to = PF_IR_F16;
        } else {
            s.attr.pad.n = 4;
            s.attr.pad.mode = PF_IR_PADMODE_REFLECT;
            s.attr.pad.begin[2] = 3;
            s.attr.pad.end[3] = 2;
        }
        s.serial = false;
        CHECK_OK(run_spec(&s, &y1));
        s.serial = true;
        CHECK_OK(run_spec(&s, &y2));
        char what[48];
        snprintf(what, sizeof what, "threaded %s", pf_ir_op_name(ops[k]));
        CHECK(cmp_exact(&y1, &y2, what) == 0);
        if (k == 0 && y1.data) { /* spot-check the channel mean against doubles */
            double ref = 0;
            for (int c = 0; c < 64; c++) ref += t_get(&a, ((1 * 64 + c) * 32 + 5) * 33 + 7);
            CHECK(fabs(t_get(&y1, (1 * 32 + 5) * 33 + 7) - ref / 64) < 1e-5);
        }
        t_free(&y1); t_free(&y2);
    }
    t_free(&a); t_free(&b);
}

/* ---- ONNX conformance cases -------------------------------------------------------- */

static const char *const k_conf_prefixes[] = {
    "test_add", "test_sub", "test_mul", "test_div", "test_pow", "test_max_", "test_min_",
    "test_mod_", "test_prelu", "test_equal", "test_less", "test_greater", "test_and", "test_or",
    "test_xor", "test_not", "test_where", "test_sum_", "test_mean_", "test_relu", "test_sigmoid",
    "test_tanh", "test_hardsigmoid", "test_hardswish", "test_leakyrelu", "test_clip", "test_elu",
    "test_selu", "test_softplus", "test_softsign", "test_abs", "test_neg", "test_exp", "test_log",
    "test_sqrt", "test_reciprocal", "test_floor", "test_ceil", "test_round", "test_erf",
    "test_sin", "test_cos", "test_sign", "test_identity", "test_cast_", "test_softmax",
    "test_logsoftmax", "test_reduce_", "test_argmax", "test_argmin", "test_concat",
    "test_transpose", "test_slice", "test_pad", "test_constant_pad", "test_edge_pad",
    "test_reflect_pad", "test_gather_", "test_expand", "test_tile", "test_split",
    "test_depthtospace", "test_spacetodepth", "test_shape", "test_constantofshape",
    "test_reshape", "test_flatten", "test_squeeze", "test_unsqueeze", "test_dropout"};

static pf_ir_dtype dt_from_onnx(pf_onnx_dtype t, bool *ok)
{
    *ok = true;
    switch (t) {
    case PF_ONNX_FLOAT: return PF_IR_F32;
    case PF_ONNX_FLOAT16: return PF_IR_F16;
    case PF_ONNX_DOUBLE: return PF_IR_F64;
    case PF_ONNX_INT64: return PF_IR_I64;
    case PF_ONNX_INT32: return PF_IR_I32;
    case PF_ONNX_UINT8: return PF_IR_U8;
    case PF_ONNX_INT8: return PF_IR_I8;
    case PF_ONNX_BOOL: return PF_IR_BOOL;
    default: *ok = false; return PF_IR_F32;
    }
}

typedef enum conf_result { CONF_PASS, CONF_FAIL, CONF_SKIP } conf_result;

/* Runs every node of g in order on host buffers; inputs from the .pb files. */
static conf_result conf_run(const char *dir, pf_ir_graph *g, char *why, size_t why_size)
{
    conf_result res = CONF_PASS;
    void **buf = calloc((size_t)g->n_values, sizeof(void *));
    pf_onnx_tensor_data td;
    char path[1024];
    bool ok;
    for (int i = 0; i < g->n_inputs && res == CONF_PASS; i++) {
        snprintf(path, sizeof path, "%.900s/test_data_set_0/input_%d.pb", dir, i);
        const pf_ir_value *v = &g->values[g->inputs[i]];
        if (v->data) continue;
        if (pf_onnx_read_tensor_file(path, &td) != PF_OK) {
            snprintf(why, why_size, "input %d: %s", i, pf_last_error());
            res = CONF_SKIP;
            break;
        }
        pf_ir_dtype dt = dt_from_onnx(td.dtype, &ok);
        if (!ok || dt != v->dtype || (size_t)pf_ir_value_nbytes(v) != td.nbytes) {
            snprintf(why, why_size, "input %d '%s' does not match its file", i, v->name);
            res = CONF_SKIP;
        } else {
            buf[g->inputs[i]] = malloc(td.nbytes ? td.nbytes : 1);
            if (td.nbytes) memcpy(buf[g->inputs[i]], td.data, td.nbytes);
        }
        pf_onnx_tensor_data_free(&td);
    }
    for (int k = 0; k < g->n_nodes && res == CONF_PASS; k++) {
        const pf_ir_node *n = &g->nodes[k];
        if (n->dead) continue;
        const void *ins[PF_IR_MAX_INPUTS] = {NULL};
        void *outs[PF_IR_MAX_OUTPUTS] = {NULL};
        for (int i = 0; i < n->n_in; i++) {
            if (n->in[i] < 0) continue;
            const pf_ir_value *v = &g->values[n->in[i]];
            ins[i] = v->data ? v->data : buf[n->in[i]];
            if (!ins[i] && pf_ir_value_nbytes(v) > 0) {
                snprintf(why, why_size, "node %d input %d has no data", k, i);
                res = CONF_SKIP;
            }
        }
        for (int o = 0; o < n->n_out && res == CONF_PASS; o++) {
            const pf_ir_value *v = &g->values[n->out[o]];
            if (v->ndim < 0 || pf_ir_value_numel(v) < 0) {
                snprintf(why, why_size, "node %d output shape unknown", k);
                res = CONF_SKIP;
                break;
            }
            size_t nb = pf_ir_value_nbytes(v);
            buf[n->out[o]] = malloc(nb ? nb : 1);
            outs[o] = buf[n->out[o]];
        }
        if (res != CONF_PASS) break;
        size_t sb = pf_nn_cpu_scratch_bytes(g, k);
        void *scratch = sb ? aligned_alloc(64, (sb + 63) / 64 * 64) : NULL;
        pf_status st = pf_nn_cpu_run_node(g, k, ins, outs, g_pool, scratch, sb);
        free(scratch);
        if (st != PF_OK) {
            snprintf(why, why_size, "run: %s", pf_last_error());
            res = st == PF_ERR_UNSUPPORTED ? CONF_SKIP : CONF_FAIL;
        }
    }
    for (int i = 0; i < g->n_outputs && res == CONF_PASS; i++) {
        snprintf(path, sizeof path, "%.900s/test_data_set_0/output_%d.pb", dir, i);
        const pf_ir_value *v = &g->values[g->outputs[i]];
        const void *got = v->data ? v->data : buf[g->outputs[i]];
        if (pf_onnx_read_tensor_file(path, &td) != PF_OK) {
            snprintf(why, why_size, "output %d: %s", i, pf_last_error());
            res = CONF_SKIP;
            break;
        }
        pf_ir_dtype dt = dt_from_onnx(td.dtype, &ok);
        int64_t n = pf_ir_value_numel(v);
        bool shape_ok = ok && dt == v->dtype && n == td.numel && v->ndim == td.ndim;
        for (int d = 0; shape_ok && d < td.ndim; d++) shape_ok = v->dims[d] == td.dims[d];
        if (!shape_ok) {
            snprintf(why, why_size, "output %d '%s': dtype/shape differ from the expected", i, v->name);
            res = CONF_FAIL;
        } else if (n > 0) {
            tensor ty = {dt, 0, {0}, (void *)(uintptr_t)got}, tr = {dt, 0, {0}, td.data};
            ty.nd = tr.nd = 1;
            ty.dims[0] = tr.dims[0] = n;
            int bad;
            if (dt == PF_IR_F32 || dt == PF_IR_F16 || dt == PF_IR_F64) {
                double *ref = malloc(sizeof(double) * (size_t)n);
                for (int64_t j = 0; j < n; j++) ref[j] = t_get(&tr, j);
                /* ONNX's backend tests use rtol 1e-3, atol 1e-7; we ask 1e-4, 1e-5 */
                bad = cmp_close(&ty, ref, n, 1e-5, 1e-4, v->name);
                free(ref);
            } else {
                bad = cmp_exact(&ty, &tr, v->name);
            }
            if (bad) {
                snprintf(why, why_size, "output %d '%s': %d elements differ", i, v->name, bad);
                res = CONF_FAIL;
            }
        }
        pf_onnx_tensor_data_free(&td);
    }
    for (int i = 0; i < g->n_values; i++) free(buf[i]);
    free(buf);
    return res;
}

/* The conformance models feed shape-like operands (Slice starts, Pad pads,
 * Reshape shape, Tile repeats, ...) as graph inputs; a real model has them
 * as initializers. Give those inputs their file data, as constants, and let
 * the folder move them into attrs, so the kernels can run these cases. */
static bool shape_slot(pf_ir_op op, int slot)
{
    switch (op) {
    case PF_IR_CONSTANT_OF_SHAPE: return slot == 0;
    case PF_IR_RESHAPE: case PF_IR_EXPAND: case PF_IR_TILE: case PF_IR_SPLIT: case PF_IR_SLICE:
    case PF_IR_PAD: case PF_IR_REDUCE_MEAN: case PF_IR_REDUCE_SUM: case PF_IR_REDUCE_MAX:
    case PF_IR_REDUCE_MIN: case PF_IR_REDUCE_PROD: case PF_IR_REDUCE_L2:
    case PF_IR_REDUCE_SUM_SQUARE:
        return slot >= 1;
    default: return false;
    }
}

static pf_status conf_constify(pf_ir_graph *g, const char *dir)
{
    bool any = false;
    for (int i = 0; i < g->n_inputs; i++) {
        pf_ir_value *v = &g->values[g->inputs[i]];
        bool shape_like = false;
        for (int k = 0; k < g->n_nodes && !shape_like; k++)
            for (int j = 0; j < g->nodes[k].n_in; j++)
                if (g->nodes[k].in[j] == g->inputs[i] && shape_slot(g->nodes[k].op, j)) shape_like = true;
        if (!shape_like || v->data) continue;
        char path[1024];
        pf_onnx_tensor_data td;
        snprintf(path, sizeof path, "%.900s/test_data_set_0/input_%d.pb", dir, i);
        if (pf_onnx_read_tensor_file(path, &td) != PF_OK) return PF_ERR_IO;
        if (td.nbytes == pf_ir_value_nbytes(v)) {
            v->data = malloc(td.nbytes ? td.nbytes : 1);
            if (td.nbytes) memcpy(v->data, td.data, td.nbytes);
            v->nbytes = td.nbytes;
            any = true;
        }
        pf_onnx_tensor_data_free(&td);
    }
    if (!any) return PF_OK;
    int folded = 0;
    return pf_ir_fold_constants(g, &folded);
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_onnx_conformance(void)
{
    const char *root = "/usr/share/libonnx-testdata/data/node";
    if (!pf_onnx_available()) {
        printf("  (ONNX reader not built: conformance cases not run)\n");
        return;
    }
    DIR *dir = opendir(root);
    if (!dir) {
        printf("  (no %s: conformance cases not run)\n", root);
        return;
    }
    char **names = NULL;
    size_t nn = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(dir))) {
        bool match = false;
        for (size_t p = 0; p < sizeof k_conf_prefixes / sizeof k_conf_prefixes[0] && !match; p++)
            match = strncmp(de->d_name, k_conf_prefixes[p], strlen(k_conf_prefixes[p])) == 0;
        if (!match) continue;
        if (nn == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, cap * sizeof *names);
        }
        names[nn++] = strdup(de->d_name);
    }
    closedir(dir);
    qsort(names, nn, sizeof *names, name_cmp);
    int pass = 0, fail = 0, skip = 0;
    for (size_t i = 0; i < nn; i++) {
        char path[1024], why[512] = "";
        snprintf(path, sizeof path, "%s/%s/model.onnx", root, names[i]);
        pf_onnx_model *m = NULL;
        pf_ir_graph *g = NULL;
        conf_result r;
        if (pf_onnx_open(path, &m) != PF_OK) {
            snprintf(why, sizeof why, "read: %s", pf_last_error());
            r = CONF_SKIP;
        } else if (pf_ir_from_onnx(m, &g) != PF_OK) {
            snprintf(why, sizeof why, "import: %s", pf_last_error());
            r = CONF_SKIP;
        } else {
            snprintf(path, sizeof path, "%s/%s", root, names[i]);
            if (conf_constify(g, path) != PF_OK) {
                snprintf(why, sizeof why, "constant inputs: %s", pf_last_error());
                r = CONF_SKIP;
            } else {
                r = conf_run(path, g, why, sizeof why);
            }
        }
        if (r == CONF_PASS) pass++;
        else if (r == CONF_FAIL) {
            fail++;
            fprintf(stderr, "  conformance FAIL %s: %s\n", names[i], why);
        } else {
            skip++;
            if (getenv("PF_TEST_VERBOSE")) printf("  conformance skip %s: %s\n", names[i], why);
        }
        pf_ir_graph_destroy(&g);
        pf_onnx_close(&m);
        free(names[i]);
    }
    free(names);
    printf("  ONNX conformance: %d passed, %d failed, %d skipped (import/read refused) of %zu\n",
           pass, fail, skip, nn);
    CHECK(fail == 0);
}

int main(void)
{
    pf_ir_graph *probe = NULL;
    if (pf_ir_graph_create("probe", &probe) != PF_OK) {
        printf("SKIP: the IR builder is not available (%s)\n", pf_last_error());
        return 77;
    }
    pf_ir_graph_destroy(&probe);
    pf_test_seed(20240611);
    pf_threadpool_params tp = pf_threadpool_params_default();
    tp.num_threads = 4;
    if (pf_threadpool_create(&tp, &g_pool) != PF_OK) {
        fprintf(stderr, "threadpool: %s\n", pf_last_error());
        return 1;
    }
    PF_RUN(test_unary_f32);
    PF_RUN(test_unary_int);
    PF_RUN(test_cast);
    PF_RUN(test_binary_f32);
    PF_RUN(test_binary_int);
    PF_RUN(test_binary_small_types);
    PF_RUN(test_clip_int);
    PF_RUN(test_binary_bool_act_prelu);
    PF_RUN(test_where_variadic);
    PF_RUN(test_reduce);
    PF_RUN(test_argminmax);
    PF_RUN(test_softmax);
    PF_RUN(test_concat_split);
    PF_RUN(test_reshape_shape_const);
    PF_RUN(test_transpose);
    PF_RUN(test_slice);
    PF_RUN(test_pad);
    PF_RUN(test_gather);
    PF_RUN(test_expand_tile);
    PF_RUN(test_depth_space);
    PF_RUN(test_threaded_large);
    PF_RUN(test_onnx_conformance);
    pf_threadpool_destroy(&g_pool);
    return pf_test_finish();
}
