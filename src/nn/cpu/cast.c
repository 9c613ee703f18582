/* CAST between every IR dtype, ONNX rules.
 *
 * Elements go through a wide intermediate in blocks: integers (and BOOL) as
 * int64 so that I64 -> I64-like casts stay exact, floats as double. Float to
 * integer truncates toward zero (NaN gives 0; out-of-range values saturate
 * at the int64 limits first and then wrap to narrower types, which is what
 * numpy, ONNX's reference, does on x86 for values within int64). Integer to
 * narrower integer wraps (two's complement). Anything to BOOL is != 0. */
#include <math.h>
#include <string.h>

#include "ndutil.h"
#include "pixflow/tensor.h"

#define CAST_BLOCK 256

static bool is_float(pf_ir_dtype t)
{
    return t == PF_IR_F32 || t == PF_IR_F16 || t == PF_IR_F64;
}

static void load_f(const void *src, pf_ir_dtype t, int64_t i0, int n, double *w)
{
    if (t == PF_IR_F32) {
        const float *s = (const float *)src + i0;
        for (int i = 0; i < n; i++) w[i] = s[i];
    } else if (t == PF_IR_F16) {
        const uint16_t *s = (const uint16_t *)src + i0;
        for (int i = 0; i < n; i++) w[i] = pf_f16_to_f32(s[i]);
    } else {
        memcpy(w, (const double *)src + i0, (size_t)n * sizeof(double));
    }
}

static void load_i(const void *src, pf_ir_dtype t, int64_t i0, int n, int64_t *w)
{
    switch (t) {
    case PF_IR_I64: memcpy(w, (const int64_t *)src + i0, (size_t)n * sizeof(int64_t)); break;
    case PF_IR_I32: { const int32_t *s = (const int32_t *)src + i0; for (int i = 0; i < n; i++) w[i] = s[i]; break; }
    case PF_IR_I8: { const int8_t *s = (const int8_t *)src + i0; for (int i = 0; i < n; i++) w[i] = s[i]; break; }
    default: { const uint8_t *s = (const uint8_t *)src + i0; for (int i = 0; i < n; i++) w[i] = s[i]; break; }
    }
}

static int64_t f_to_i64(double v)
{
    if (isnan(v)) return 0;
    if (v >= 9223372036854775808.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

static void store_f(void *dst, pf_ir_dtype t, int64_t i0, int n, const double *w)
{
    switch (t) {
    case PF_IR_F32: { float *d = (float *)dst + i0; for (int i = 0; i < n; i++) d[i] = (float)w[i]; break; }
    /* F64 -> F16 rounds twice (via f32): off by one ulp of f16 at most in rare ties. */
    case PF_IR_F16: { uint16_t *d = (uint16_t *)dst + i0; for (int i = 0; i < n; i++) d[i] = pf_f32_to_f16((float)w[i]); break; }
    case PF_IR_F64: memcpy((double *)dst + i0, w, (size_t)n * sizeof(double)); break;
    case PF_IR_BOOL: { uint8_t *d = (uint8_t *)dst + i0; for (int i = 0; i < n; i++) d[i] = w[i] != 0.0; break; }
    case PF_IR_I64: { int64_t *d = (int64_t *)dst + i0; for (int i = 0; i < n; i++) d[i] = f_to_i64(w[i]); break; }
    case PF_IR_I32: { int32_t *d = (int32_t *)dst + i0; for (int i = 0; i < n; i++) d[i] = (int32_t)(uint32_t)(uint64_t)f_to_i64(w[i]); break; }
    case PF_IR_I8: { int8_t *d = (int8_t *)dst + i0; for (int i = 0; i < n; i++) d[i] = (int8_t)(uint8_t)(uint64_t)f_to_i64(w[i]); break; }
    case PF_IR_U8: { uint8_t *d = (uint8_t *)dst + i0; for (int i = 0; i < n; i++) d[i] = (uint8_t)(uint64_t)f_to_i64(w[i]); break; }
    default: break;
    }
}

static void store_i(void *dst, pf_ir_dtype t, int64_t i0, int n, const int64_t *w)
{
    switch (t) {
    case PF_IR_F32: { float *d = (float *)dst + i0; for (int i = 0; i < n; i++) d[i] = (float)w[i]; break; }
    case PF_IR_F16: { uint16_t *d = (uint16_t *)dst + i0; for (int i = 0; i < n; i++) d[i] = pf_f32_to_f16((float)w[i]); break; }
    case PF_IR_F64: { double *d = (double *)dst + i0; for (int i = 0; i < n; i++) d[i] = (double)w[i]; break; }
    case PF_IR_BOOL: { uint8_t *d = (uint8_t *)dst + i0; for (int i = 0; i < n; i++) d[i] = w[i] != 0; break; }
    case PF_IR_I64: memcpy((int64_t *)dst + i0, w, (size_t)n * sizeof(int64_t)); break;
    case PF_IR_I32: { int32_t *d = (int32_t *)dst + i0; for (int i = 0; i < n; i++) d[i] = (int32_t)(uint32_t)(uint64_t)w[i]; break; }
    case PF_IR_I8: { int8_t *d = (int8_t *)dst + i0; for (int i = 0; i < n; i++) d[i] = (int8_t)(uint8_t)(uint64_t)w[i]; break; }
    case PF_IR_U8: { uint8_t *d = (uint8_t *)dst + i0; for (int i = 0; i < n; i++) d[i] = (uint8_t)(uint64_t)w[i]; break; }
    default: break;
    }
}

typedef struct cast_job {
    const void *in;
    void *out;
    pf_ir_dtype from, to;
} cast_job;

static void cast_range(void *p, int64_t lo, int64_t hi)
{
    const cast_job *j = p;
    double wf[CAST_BLOCK];
    int64_t wi[CAST_BLOCK];
    for (int64_t i0 = lo; i0 < hi; i0 += CAST_BLOCK) {
        int n = (int)(hi - i0 < CAST_BLOCK ? hi - i0 : CAST_BLOCK);
        if (is_float(j->from)) {
            load_f(j->in, j->from, i0, n, wf);
            store_f(j->out, j->to, i0, n, wf);
        } else {
            load_i(j->in, j->from, i0, n, wi);
            store_i(j->out, j->to, i0, n, wi);
        }
    }
}

pf_status pf_nn_cpu_cast(const pf_nn_cpu_args *a)
{
    const pf_ir_value *vx = a->vin[0], *vy = a->vout[0];
    if (!vx || !a->in[0]) return pf_nn_cpu_fail(a, PF_ERR_INVALID, "missing input");
    int64_t cnt = pf_nd_numel(vx);
    if (cnt < 0 || cnt != pf_nd_numel(vy))
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "output '%s' has %lld elements, input '%s' %lld",
                              vy->name, (long long)pf_nd_numel(vy), vx->name, (long long)cnt);
    if (pf_nd_esize(vx->dtype) == 0 || pf_nd_esize(vy->dtype) == 0)
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "cast from dtype %d to %d", (int)vx->dtype,
                              (int)vy->dtype);
    if (vx->dtype == vy->dtype) {
        if (cnt) memcpy(a->out[0], a->in[0], (size_t)cnt * pf_nd_esize(vx->dtype));
        return PF_OK;
    }
    cast_job j = {a->in[0], a->out[0], vx->dtype, vy->dtype};
    pf_nd_parallel_range(a->pool, cnt, 0, cast_range, &j);
    return PF_OK;
}
