/* REDUCE_* and ARGMAX/ARGMIN on the CPU.
 *
 * The input's dims are merged into alternating runs of kept and reduced
 * axes (keepdims only changes the output shape, not the data order). When
 * the innermost run is reduced, each output sums a contiguous run in double;
 * when it is kept, whole rows of K outputs are combined in float, so that
 * reducing the channel axis of NCHW streams memory instead of striding it.
 * F32 for every op; SUM, MAX, MIN, PROD also on I64/I32 (exact, wrapping).
 * An empty reduction gives the identity: 0, 1, -inf for MAX, +inf for MIN
 * (integers: their limits), NaN for MEAN. */
#include <math.h>
#include <string.h>

#include "ndutil.h"

typedef struct red_job {
    pf_ir_op op;
    pf_ir_dtype dt;
    const void *in;
    void *out;
    int ng;                          /* merged groups */
    int64_t size[PF_IR_MAX_RANK];
    int64_t st[PF_IR_MAX_RANK];      /* input strides */
    bool red[PF_IR_MAX_RANK];
    int64_t rcount;                  /* elements reduced into each output */
} red_job;

static double init_f(pf_ir_op op)
{
    switch (op) {
    case PF_IR_REDUCE_MAX: return -INFINITY;
    case PF_IR_REDUCE_MIN: return INFINITY;
    case PF_IR_REDUCE_PROD: return 1.0;
    default: return 0.0;
    }
}

static float finish_f(pf_ir_op op, double acc, int64_t cnt)
{
    if (op == PF_IR_REDUCE_MEAN) return (float)(acc / (double)cnt);
    if (op == PF_IR_REDUCE_L2) return (float)sqrt(acc);
    return (float)acc;
}

/* Decomposes output index o over the kept groups (skipping group `skip`)
 * into an input offset. */
static int64_t kept_offset(const red_job *j, int64_t o, int skip)
{
    int64_t off = 0;
    for (int g = j->ng - 1; g >= 0; g--) {
        if (j->red[g] || g == skip) continue;
        off += (o % j->size[g]) * j->st[g];
        o /= j->size[g];
    }
    return off;
}

/* Odometer over the reduced groups except `skip`: returns false when done. */
static bool next_reduced(const red_job *j, int64_t *idx, int64_t *off, int skip)
{
    for (int g = j->ng - 1; g >= 0; g--) {
        if (!j->red[g] || g == skip) continue;
        if (++idx[g] < j->size[g]) {
            *off += j->st[g];
            return true;
        }
        *off -= (idx[g] - 1) * j->st[g];
        idx[g] = 0;
    }
    return false;
}

/* Innermost group reduced: one output at a time over contiguous runs. */
static void red_inner(void *p, int64_t lo, int64_t hi)
{
    const red_job *j = p;
    const int last = j->ng - 1;
    const int64_t L = j->size[last];
    const float *x = j->in;
    float *y = j->out;
    for (int64_t o = lo; o < hi; o++) {
        int64_t idx[PF_IR_MAX_RANK] = {0};
        int64_t off = kept_offset(j, o, -1);
        double acc = init_f(j->op);
        if (j->rcount > 0) do {
            const float *r = x + off;
            switch (j->op) {
            case PF_IR_REDUCE_MEAN: case PF_IR_REDUCE_SUM:
                for (int64_t i = 0; i < L; i++) acc += r[i];
                break;
            case PF_IR_REDUCE_L2: case PF_IR_REDUCE_SUM_SQUARE:
                for (int64_t i = 0; i < L; i++) acc += (double)r[i] * r[i];
                break;
            case PF_IR_REDUCE_PROD: for (int64_t i = 0; i < L; i++) acc *= r[i]; break;
            case PF_IR_REDUCE_MAX:
                for (int64_t i = 0; i < L; i++) acc = (r[i] > acc || r[i] != r[i]) ? r[i] : acc;
                break;
            case PF_IR_REDUCE_MIN:
                for (int64_t i = 0; i < L; i++) acc = (r[i] < acc || r[i] != r[i]) ? r[i] : acc;
                break;
            default: break;
            }
        } while (next_reduced(j, idx, &off, last));
        y[o] = finish_f(j->op, acc, j->rcount);
    }
}

/* Innermost group kept (K outputs per row): rows combined elementwise. */
static void red_outer(void *p, int64_t lo, int64_t hi)
{
    const red_job *j = p;
    const int last = j->ng - 1;
    const int64_t K = j->size[last];
    const float *x = j->in;
    for (int64_t row = lo; row < hi; row++) {
        float *y = (float *)j->out + row * K;
        int64_t idx[PF_IR_MAX_RANK] = {0};
        int64_t off = kept_offset(j, row, last);
        const float init = (float)init_f(j->op);
        for (int64_t k = 0; k < K; k++) y[k] = init;
        if (j->rcount > 0) do {
            const float *r = x + off;
            switch (j->op) {
            case PF_IR_REDUCE_MEAN: case PF_IR_REDUCE_SUM:
                for (int64_t k = 0; k < K; k++) y[k] += r[k];
                break;
            case PF_IR_REDUCE_L2: case PF_IR_REDUCE_SUM_SQUARE:
                for (int64_t k = 0; k < K; k++) y[k] += r[k] * r[k];
                break;
            case PF_IR_REDUCE_PROD: for (int64_t k = 0; k < K; k++) y[k] *= r[k]; break;
            case PF_IR_REDUCE_MAX:
                for (int64_t k = 0; k < K; k++) y[k] = (r[k] > y[k] || r[k] != r[k]) ? r[k] : y[k];
                break;
            case PF_IR_REDUCE_MIN:
                for (int64_t k = 0; k < K; k++) y[k] = (r[k] < y[k] || r[k] != r[k]) ? r[k] : y[k];
                break;
            default: break;
            }
        } while (next_reduced(j, idx, &off, -1));
        if (j->op == PF_IR_REDUCE_MEAN)
            for (int64_t k = 0; k < K; k++) y[k] = (float)((double)y[k] / (double)j->rcount);
        else if (j->op == PF_IR_REDUCE_L2)
            for (int64_t k = 0; k < K; k++) y[k] = sqrtf(y[k]);
    }
}

/* Integer SUM/MAX/MIN/PROD: a plain gather per output (shape arithmetic,
 * small tensors). */
static void red_int(void *p, int64_t lo, int64_t hi)
{
    const red_job *j = p;
    const bool i64 = j->dt == PF_IR_I64;
    for (int64_t o = lo; o < hi; o++) {
        int64_t idx[PF_IR_MAX_RANK] = {0};
        int64_t off = kept_offset(j, o, -1);
        uint64_t acc = j->op == PF_IR_REDUCE_PROD ? 1u : 0u;
        int64_t best = j->op == PF_IR_REDUCE_MAX ? (i64 ? INT64_MIN : INT32_MIN)
                                                 : (i64 ? INT64_MAX : INT32_MAX);
        if (j->rcount > 0) do {
            int64_t v = i64 ? ((const int64_t *)j->in)[off] : ((const int32_t *)j->in)[off];
            switch (j->op) {
            case PF_IR_REDUCE_SUM: acc += (uint64_t)v; break;
            case PF_IR_REDUCE_PROD: acc *= (uint64_t)v; break;
            case PF_IR_REDUCE_MAX: best = v > best ? v : best; break;
            default: best = v < best ? v : best; break;
            }
        } while (next_reduced(j, idx, &off, -2));
        int64_t r = (j->op == PF_IR_REDUCE_SUM || j->op == PF_IR_REDUCE_PROD) ? (int64_t)acc : best;
        if (i64) ((int64_t *)j->out)[o] = r;
        else ((int32_t *)j->out)[o] = (int32_t)(uint32_t)(uint64_t)r;
    }
}

pf_status pf_nn_cpu_reduce(const pf_nn_cpu_args *a)
{
    const pf_ir_node *n = a->node;
    const pf_ir_reduce_attr *ra = &n->attr.reduce;
    const pf_ir_value *vx = a->vin[0], *vy = a->vout[0];
    if (!vx || !a->in[0]) return pf_nn_cpu_fail(a, PF_ERR_INVALID, "missing input");
    const bool int_ok = n->op == PF_IR_REDUCE_SUM || n->op == PF_IR_REDUCE_MAX ||
                        n->op == PF_IR_REDUCE_MIN || n->op == PF_IR_REDUCE_PROD;
    if (vx->dtype != vy->dtype ||
        !(vx->dtype == PF_IR_F32 || (int_ok && (vx->dtype == PF_IR_I64 || vx->dtype == PF_IR_I32))))
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "dtype %s is not supported by %s on the CPU",
                              pf_ir_dtype_name(vx->dtype), pf_ir_op_name(n->op));
    int64_t nin = pf_nd_numel(vx), nout = pf_nd_numel(vy);
    if (nin < 0 || nout < 0) return pf_nn_cpu_fail(a, PF_ERR_INVALID, "shapes are not concrete");
    if (ra->n == 0 && ra->noop_with_empty_axes) {
        if (nin != nout) return pf_nn_cpu_fail(a, PF_ERR_INVALID, "no-op reduction changes the size");
        if (nin) memcpy(a->out[0], a->in[0], (size_t)nin * pf_nd_esize(vx->dtype));
        return PF_OK;
    }
    bool red[PF_IR_MAX_RANK] = {false};
    if (ra->n < 0 || ra->n > PF_IR_MAX_RANK)
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "%d axes", ra->n);
    for (int i = 0; i < ra->n; i++) {
        int64_t ax = ra->axes[i] < 0 ? ra->axes[i] + vx->ndim : ra->axes[i];
        if (ax < 0 || ax >= vx->ndim)
            return pf_nn_cpu_fail(a, PF_ERR_INVALID, "axis %lld out of range for rank %d",
                                  (long long)ra->axes[i], vx->ndim);
        red[ax] = true;
    }
    if (ra->n == 0)
        for (int d = 0; d < vx->ndim; d++) red[d] = true;
    red_job j;
    memset(&j, 0, sizeof j);
    j.op = n->op;
    j.dt = vx->dtype;
    j.in = a->in[0];
    j.out = a->out[0];
    j.rcount = 1;
    int64_t kept = 1;
    /* merge neighbours of the same kind, dropping unit dims */
    int64_t st[PF_IR_MAX_RANK];
    pf_nd_strides(vx->ndim, vx->dims, st);
    for (int d = 0; d < vx->ndim; d++) {
        if (red[d]) j.rcount *= vx->dims[d];
        else kept *= vx->dims[d];
        if (vx->dims[d] == 1) continue;
        if (j.ng > 0 && j.red[j.ng - 1] == red[d]) {
            j.size[j.ng - 1] *= vx->dims[d];
            j.st[j.ng - 1] = st[d];
        } else {
            j.size[j.ng] = vx->dims[d];
            j.st[j.ng] = st[d];
            j.red[j.ng] = red[d];
            j.ng++;
        }
    }
    if (kept != nout)
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "output '%s' has %lld elements, expected %lld",
                              vy->name, (long long)nout, (long long)kept);
    if (nout == 0) return PF_OK;
    if (j.ng == 0 || j.rcount == 0) {
        /* all unit dims, or an empty reduction: a kept-only or trivial view */
        j.size[j.ng] = 1;
        j.st[j.ng] = 0;
        j.red[j.ng] = true;
        j.ng++;
    }
    const int64_t work_per = j.rcount > 0 ? j.rcount : 1;
    if (j.dt != PF_IR_F32) {
        pf_nd_parallel_range(a->pool, nout, PF_ND_PAR_MIN / work_per + 1, red_int, &j);
    } else if (j.red[j.ng - 1]) {
        pf_nd_parallel_range(a->pool, nout, PF_ND_PAR_MIN / work_per + 1, red_inner, &j);
    } else {
        int64_t K = j.size[j.ng - 1];
        pf_nd_parallel_range(a->pool, nout / K, PF_ND_PAR_MIN / (work_per * K) + 1, red_outer, &j);
    }
    return PF_OK;
}

/* ---- ArgMax / ArgMin ---------------------------------------------------------- */

typedef struct arg_job {
    bool is_max, last;
    pf_ir_dtype dt;
    const void *in;
    int64_t *out;
    int64_t outer, R, inner;
} arg_job;

static double arg_load(const arg_job *j, int64_t i)
{
    switch (j->dt) {
    case PF_IR_F32: return ((const float *)j->in)[i];
    case PF_IR_I32: return ((const int32_t *)j->in)[i];
    default: return (double)((const int64_t *)j->in)[i];
    }
}

static bool arg_better(const arg_job *j, double v, double best)
{
    if (j->is_max) return j->last ? v >= best : v > best;
    return j->last ? v <= best : v < best;
}

static void arg_range(void *p, int64_t lo, int64_t hi)
{
    const arg_job *j = p;
    for (int64_t o = lo; o < hi; o++) {
        int64_t oi = o / j->inner, ii = o % j->inner;
        int64_t base = oi * j->R * j->inner + ii;
        if (j->dt == PF_IR_I64) {
            /* exact comparison: int64 does not round-trip through double */
            const int64_t *x = (const int64_t *)j->in + base;
            int64_t best = x[0], bi = 0;
            for (int64_t r = 1; r < j->R; r++) {
                int64_t v = x[r * j->inner];
                bool b = j->is_max ? (j->last ? v >= best : v > best) : (j->last ? v <= best : v < best);
                if (b) { best = v; bi = r; }
            }
            j->out[o] = bi;
            continue;
        }
        double best = arg_load(j, base);
        int64_t bi = 0;
        for (int64_t r = 1; r < j->R; r++) {
            double v = arg_load(j, base + r * j->inner);
            if (arg_better(j, v, best)) {
                best = v;
                bi = r;
            }
        }
        j->out[o] = bi;
    }
}

pf_status pf_nn_cpu_argminmax(const pf_nn_cpu_args *a)
{
    const pf_ir_node *n = a->node;
    const pf_ir_value *vx = a->vin[0], *vy = a->vout[0];
    if (!vx || !a->in[0]) return pf_nn_cpu_fail(a, PF_ERR_INVALID, "missing input");
    if (!(vx->dtype == PF_IR_F32 || vx->dtype == PF_IR_I64 || vx->dtype == PF_IR_I32) ||
        vy->dtype != PF_IR_I64)
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "needs F32/I64/I32 input and I64 output");
    int64_t ax = n->attr.reduce.axes[0];
    if (ax < 0) ax += vx->ndim;
    if (ax < 0 || ax >= vx->ndim)
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "axis %lld out of range for rank %d",
                              (long long)n->attr.reduce.axes[0], vx->ndim);
    arg_job j = {n->op == PF_IR_ARGMAX, n->attr.reduce.select_last_index, vx->dtype, a->in[0],
                 a->out[0], 1, vx->dims[ax], 1};
    for (int d = 0; d < ax; d++) j.outer *= vx->dims[d];
    for (int d = (int)ax + 1; d < vx->ndim; d++) j.inner *= vx->dims[d];
    int64_t nout = j.outer * j.inner;
    if (nout != pf_nd_numel(vy))
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "output '%s' has %lld elements, expected %lld",
                              vy->name, (long long)pf_nd_numel(vy), (long long)nout);
    if (nout == 0) return PF_OK;
    if (j.R == 0) return pf_nn_cpu_fail(a, PF_ERR_INVALID, "arg of an empty axis");
    pf_nd_parallel_range(a->pool, nout, PF_ND_PAR_MIN / j.R + 1, arg_range, &j);
    return PF_OK;
}
