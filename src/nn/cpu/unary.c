/* Unary elementwise ops (RELU .. SIGN, IDENTITY) on the CPU.
 *
 * Float math is F32 only; ABS, NEG, SIGN also run on I64/I32 as ONNX
 * allows; NOT is BOOL only; IDENTITY copies any dtype. CLIP takes its bounds
 * from attr unary (alpha = min, beta = max) unless inputs 1/2 carry them. */
#include <math.h>
#include <string.h>

#include "ndutil.h"

typedef struct unary_job {
    pf_ir_op op;
    pf_ir_dtype dt;
    float alpha, beta;
    const void *in;
    void *out;
} unary_job;

static float sigmoidf(float x)
{
    /* exp of a non-positive argument only: no overflow for large |x|. */
    if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}

static void unary_f32(const unary_job *j, int64_t lo, int64_t hi)
{
    const float *x = (const float *)j->in;
    float *y = (float *)j->out;
    const float a = j->alpha, b = j->beta;
    switch (j->op) {
    case PF_IR_RELU: for (int64_t i = lo; i < hi; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f; break;
    case PF_IR_SIGMOID: for (int64_t i = lo; i < hi; i++) y[i] = sigmoidf(x[i]); break;
    case PF_IR_TANH: for (int64_t i = lo; i < hi; i++) y[i] = tanhf(x[i]); break;
    case PF_IR_HARD_SIGMOID:
        for (int64_t i = lo; i < hi; i++) y[i] = fmaxf(0.0f, fminf(1.0f, a * x[i] + b));
        break;
    case PF_IR_HARD_SWISH:
        for (int64_t i = lo; i < hi; i++)
            y[i] = x[i] * fmaxf(0.0f, fminf(1.0f, x[i] * (1.0f / 6.0f) + 0.5f));
        break;
    case PF_IR_LEAKY_RELU: for (int64_t i = lo; i < hi; i++) y[i] = x[i] < 0.0f ? a * x[i] : x[i]; break;
    case PF_IR_CLIP:
        /* comparisons, not fmin/fmax: NaN stays NaN as in ONNX */
        for (int64_t i = lo; i < hi; i++) y[i] = x[i] < a ? a : (x[i] > b ? b : x[i]);
        break;
    case PF_IR_ELU:
        for (int64_t i = lo; i < hi; i++) y[i] = x[i] > 0.0f ? x[i] : a * expm1f(x[i]);
        break;
    case PF_IR_SELU:
        for (int64_t i = lo; i < hi; i++) y[i] = x[i] > 0.0f ? b * x[i] : b * a * expm1f(x[i]);
        break;
    case PF_IR_SOFTPLUS:
        /* log(1 + e^x) without overflow for large x */
        for (int64_t i = lo; i < hi; i++)
            y[i] = x[i] > 0.0f ? x[i] + log1pf(expf(-x[i])) : log1pf(expf(x[i]));
        break;
    case PF_IR_SOFTSIGN: for (int64_t i = lo; i < hi; i++) y[i] = x[i] / (1.0f + fabsf(x[i])); break;
    case PF_IR_ABS: for (int64_t i = lo; i < hi; i++) y[i] = fabsf(x[i]); break;
    case PF_IR_NEG: for (int64_t i = lo; i < hi; i++) y[i] = -x[i]; break;
    case PF_IR_EXP: for (int64_t i = lo; i < hi; i++) y[i] = expf(x[i]); break;
    case PF_IR_LOG: for (int64_t i = lo; i < hi; i++) y[i] = logf(x[i]); break;
    case PF_IR_SQRT: for (int64_t i = lo; i < hi; i++) y[i] = sqrtf(x[i]); break;
    case PF_IR_RECIPROCAL: for (int64_t i = lo; i < hi; i++) y[i] = 1.0f / x[i]; break;
    case PF_IR_FLOOR: for (int64_t i = lo; i < hi; i++) y[i] = floorf(x[i]); break;
    case PF_IR_CEIL: for (int64_t i = lo; i < hi; i++) y[i] = ceilf(x[i]); break;
    /* ONNX Round is half-to-even: the default rounding mode of nearbyint */
    case PF_IR_ROUND: for (int64_t i = lo; i < hi; i++) y[i] = nearbyintf(x[i]); break;
    case PF_IR_ERF: for (int64_t i = lo; i < hi; i++) y[i] = erff(x[i]); break;
    case PF_IR_SIN: for (int64_t i = lo; i < hi; i++) y[i] = sinf(x[i]); break;
    case PF_IR_COS: for (int64_t i = lo; i < hi; i++) y[i] = cosf(x[i]); break;
    case PF_IR_SIGN:
        for (int64_t i = lo; i < hi; i++)
            y[i] = x[i] > 0.0f ? 1.0f : (x[i] < 0.0f ? -1.0f : x[i] == 0.0f ? 0.0f : x[i]);
        break;
    default: break;
    }
}

/* Integer ABS/NEG wrap at the minimum (two's complement), as numpy does;
 * done in unsigned arithmetic so it is defined behaviour. */
#define UNARY_INT(T, UT)                                                                   \
    static void unary_##T(const unary_job *j, int64_t lo, int64_t hi)                      \
    {                                                                                      \
        const T *x = (const T *)j->in;                                                     \
        T *y = (T *)j->out;                                                                \
        switch (j->op) {                                                                   \
        case PF_IR_ABS:                                                                    \
            for (int64_t i = lo; i < hi; i++) y[i] = x[i] < 0 ? (T)(0u - (UT)x[i]) : x[i]; \
            break;                                                                         \
        case PF_IR_NEG: for (int64_t i = lo; i < hi; i++) y[i] = (T)(0u - (UT)x[i]); break; \
        case PF_IR_SIGN: for (int64_t i = lo; i < hi; i++) y[i] = (T)((x[i] > 0) - (x[i] < 0)); break; \
        default: break;                                                                    \
        }                                                                                  \
    }
UNARY_INT(int64_t, uint64_t)
UNARY_INT(int32_t, uint32_t)

static void unary_range(void *p, int64_t lo, int64_t hi)
{
    const unary_job *j = p;
    if (j->op == PF_IR_NOT) {
        const uint8_t *x = j->in;
        uint8_t *y = j->out;
        for (int64_t i = lo; i < hi; i++) y[i] = !x[i];
    } else if (j->dt == PF_IR_F32) {
        unary_f32(j, lo, hi);
    } else if (j->dt == PF_IR_I64) {
        unary_int64_t(j, lo, hi);
    } else {
        unary_int32_t(j, lo, hi);
    }
}

/* Clip's bound input k (1 min, 2 max) as one element of dtype t: *out is
 * its data, or NULL when the bound is absent (the attr applies). */
static pf_status clip_bound(const pf_nn_cpu_args *a, int k, pf_ir_dtype t, const void **out)
{
    *out = NULL;
    const pf_ir_value *vb = k < a->node->n_in ? a->vin[k] : NULL;
    if (!vb || !a->in[k]) return PF_OK;
    if (vb->dtype != t || pf_nd_numel(vb) != 1)
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "Clip %s '%s' must be one %s value",
                              k == 1 ? "min" : "max", vb->name, pf_ir_dtype_name(t));
    *out = a->in[k];
    return PF_OK;
}

/* Clip on I64/I32/I8/U8: the bounds are the attrs (constant bounds) or
 * inputs 1 and 2 of the input's type (opset >= 11, computed at run time);
 * an absent bound is the type's limit. */
static pf_status clip_int(const pf_nn_cpu_args *a, pf_ir_dtype t, int64_t cnt)
{
    const pf_ir_node *n = a->node;
    int64_t lo, hi;
    switch (t) {
    case PF_IR_I64: lo = INT64_MIN, hi = INT64_MAX; break;
    case PF_IR_I32: lo = INT32_MIN, hi = INT32_MAX; break;
    case PF_IR_I8: lo = INT8_MIN, hi = INT8_MAX; break;
    case PF_IR_U8: lo = 0, hi = UINT8_MAX; break;
    default:
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "dtype %s of '%s' is not supported by Clip on the CPU",
                              pf_ir_dtype_name(t), a->vin[0]->name);
    }
    /* Constant bounds a float holds exactly were folded into the attrs;
     * others stay inputs (fold.c). */
    const int64_t tmin = lo, tmax = hi;
    const double fa = n->attr.unary.alpha, fb = n->attr.unary.beta;
    if (fa > (double)tmin) lo = fa >= (double)tmax ? tmax : (int64_t)ceil(fa);
    if (fb < (double)tmax) hi = fb <= (double)tmin ? tmin : (int64_t)floor(fb);
    for (int k = 1; k <= 2; k++) {
        const void *b;
        pf_status st = clip_bound(a, k, t, &b);
        if (st != PF_OK) return st;
        if (b && k == 1) lo = pf_nd_load_i64(b, t, 0);
        if (b && k == 2) hi = pf_nd_load_i64(b, t, 0);
    }
    for (int64_t i = 0; i < cnt; i++) {
        int64_t v = pf_nd_load_i64(a->in[0], t, i);
        if (v < lo) v = lo; /* ONNX: min(max(x, lo), hi): hi wins when lo > hi */
        if (v > hi) v = hi;
        pf_nd_store_i64(a->out[0], t, i, v); /* v lies within the type's range */
    }
    return PF_OK;
}

pf_status pf_nn_cpu_unary(const pf_nn_cpu_args *a)
{
    const pf_ir_node *n = a->node;
    const pf_ir_value *vx = a->vin[0], *vy = a->vout[0];
    if (n->n_in < 1 || !vx || !a->in[0])
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "missing input");
    int64_t cnt = pf_nd_numel(vx);
    if (cnt < 0 || cnt != pf_nd_numel(vy) || vx->dtype != vy->dtype)
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "output '%s' does not match input '%s' in shape or dtype",
                              vy->name, vx->name);
    if (n->op == PF_IR_IDENTITY) {
        if (cnt) memcpy(a->out[0], a->in[0], (size_t)cnt * pf_nd_esize(vx->dtype));
        return PF_OK;
    }
    if (n->op == PF_IR_CLIP && vx->dtype != PF_IR_F32) return clip_int(a, vx->dtype, cnt);
    bool ok;
    if (n->op == PF_IR_NOT) ok = vx->dtype == PF_IR_BOOL;
    else if (n->op == PF_IR_ABS || n->op == PF_IR_NEG || n->op == PF_IR_SIGN)
        ok = vx->dtype == PF_IR_F32 || vx->dtype == PF_IR_I64 || vx->dtype == PF_IR_I32;
    else ok = vx->dtype == PF_IR_F32;
    if (!ok)
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "dtype %s of '%s' is not supported by %s on the CPU",
                              pf_ir_dtype_name(vx->dtype), vx->name, pf_ir_op_name(n->op));
    unary_job j = {n->op, vx->dtype, n->attr.unary.alpha, n->attr.unary.beta, a->in[0], a->out[0]};
    if (n->op == PF_IR_CLIP) {
        /* opset >= 11 bounds computed at run time arrive as inputs 1, 2 (one
         * element each); absent ones keep the attr's -inf/+inf */
        for (int k = 1; k <= 2; k++) {
            const void *b;
            pf_status st = clip_bound(a, k, PF_IR_F32, &b);
            if (st != PF_OK) return st;
            if (b && k == 1) j.alpha = *(const float *)b;
            if (b && k == 2) j.beta = *(const float *)b;
        }
    }
    pf_nd_parallel_range(a->pool, cnt, 0, unary_range, &j);
    return PF_OK;
}
