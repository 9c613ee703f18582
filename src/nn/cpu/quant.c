/* CPU kernels: QuantizeLinear and DequantizeLinear (ONNX semantics), and the
 * rounding/parameter helpers the integer conv and matmul kernels share.
 *
 * QuantizeLinear divides in float32 (x / scale, as ONNX's reference does
 * with float32 arrays), rounds half to even and saturates; DequantizeLinear
 * computes (x - zp) * scale in float32. Per-axis parameters are indexed by
 * the element's coordinate on attr axis (resolved by shape inference). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"

int32_t pf_nn_q_round_sat(double r, int32_t zp, pf_ir_dtype t)
{
    double lo = t == PF_IR_U8 ? 0.0 : -128.0, hi = t == PF_IR_U8 ? 255.0 : 127.0;
    if (r != r) return zp < lo ? (int32_t)lo : (zp > hi ? (int32_t)hi : zp);
    /* Clamp before converting: an out-of-range double -> int is undefined. */
    if (r < -1e9) r = -1e9;
    if (r > 1e9) r = 1e9;
    double v = nearbyint(r) + (double)zp; /* default rounding mode: half to even */
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    return (int32_t)v;
}

double pf_nn_q_param(const pf_nn_cpu_args *a, int input, int64_t i)
{
    const pf_ir_value *v = a->vin[input];
    if (!v || !a->in[input]) return 0.0;
    int64_t n = pf_ir_value_numel(v);
    int64_t k = n == 1 ? 0 : i;
    if (v->dtype == PF_IR_F32) return ((const float *)a->in[input])[k];
    return (double)pf_nn_q_load(a->in[input], v->dtype, (size_t)k);
}

/* Size of the axis and the number of elements after it (1, 1 per tensor). */
static void axis_geom(const pf_nn_cpu_args *a, int64_t *dim, int64_t *inner)
{
    const pf_ir_value *x = a->vin[0], *s = a->vin[1], *zp = a->vin[2];
    bool per = pf_ir_value_numel(s) != 1 || (zp && pf_ir_value_numel(zp) != 1);
    *dim = 1;
    *inner = 1;
    if (!per) return;
    int64_t ax = a->node->attr.axis.axis;
    *dim = x->dims[ax];
    for (int i = (int)ax + 1; i < x->ndim; i++) *inner *= x->dims[i];
}

static pf_status check(const pf_nn_cpu_args *a)
{
    const pf_ir_value *s = a->vin[1], *zp = a->vin[2];
    if (s->dtype != PF_IR_F32)
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "scale '%s' is %s (float32 only)", s->name,
                              pf_ir_dtype_name(s->dtype));
    int64_t dim, inner;
    axis_geom(a, &dim, &inner);
    int64_t ns = pf_ir_value_numel(s), nz = zp ? pf_ir_value_numel(zp) : 1;
    if ((ns != 1 && ns != dim) || (nz != 1 && nz != dim))
        return pf_nn_cpu_fail(a, PF_ERR_FORMAT, "scale/zero point sizes %lld/%lld do not match "
                              "axis size %lld", (long long)ns, (long long)nz, (long long)dim);
    return PF_OK;
}

pf_status pf_nn_cpu_quantize(const pf_nn_cpu_args *a)
{
    pf_status st = check(a);
    if (st != PF_OK) return st;
    const pf_ir_value *x = a->vin[0], *y = a->vout[0];
    int64_t n = pf_ir_value_numel(x), dim, inner;
    axis_geom(a, &dim, &inner);
    const float *scale = a->in[1];
    int64_t ns = pf_ir_value_numel(a->vin[1]);
    for (int64_t i = 0; i < n; i++) {
        int64_t ch = (i / inner) % dim;
        float s = scale[ns == 1 ? 0 : ch];
        int32_t zp = (int32_t)pf_nn_q_param(a, 2, ch);
        float xv = x->dtype == PF_IR_F32 ? ((const float *)a->in[0])[i]
                                         : (float)((const int32_t *)a->in[0])[i];
        pf_nn_q_store(a->out[0], y->dtype, (size_t)i, pf_nn_q_round_sat((double)(xv / s), zp, y->dtype));
    }
    return PF_OK;
}

pf_status pf_nn_cpu_dequantize(const pf_nn_cpu_args *a)
{
    pf_status st = check(a);
    if (st != PF_OK) return st;
    const pf_ir_value *x = a->vin[0];
    int64_t n = pf_ir_value_numel(x), dim, inner;
    axis_geom(a, &dim, &inner);
    const float *scale = a->in[1];
    int64_t ns = pf_ir_value_numel(a->vin[1]);
    float *y = a->out[0];
    for (int64_t i = 0; i < n; i++) {
        int64_t ch = (i / inner) % dim;
        int32_t zp = (int32_t)pf_nn_q_param(a, 2, ch);
        int32_t q = pf_nn_q_load(a->in[0], x->dtype, (size_t)i);
        y[i] = (float)((int64_t)q - zp) * scale[ns == 1 ? 0 : ch]; /* int32 data: no overflow */
    }
    return PF_OK;
}
