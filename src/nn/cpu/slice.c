/* SLICE: a strided view (negative steps included) copied out. Shape
 * inference has resolved and clamped starts; the output value's dims give
 * the element count per axis, and every index read is checked against the
 * input before copying. */
#include <string.h>

#include "ndutil.h"

pf_status pf_nn_cpu_slice(const pf_nn_cpu_args *a)
{
    const pf_ir_slice_attr *s = &a->node->attr.slice;
    const pf_ir_value *vx = a->vin[0], *vy = a->vout[0];
    if (!vx || !a->in[0]) return pf_nn_cpu_fail(a, PF_ERR_INVALID, "missing input");
    const int r = vx->ndim;
    if (vy->ndim != r || vy->dtype != vx->dtype || s->n < 0 || s->n > r)
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "output '%s' rank/dtype differ from input '%s'",
                              vy->name, vx->name);
    int64_t start[PF_IR_MAX_RANK], step[PF_IR_MAX_RANK], ist[PF_IR_MAX_RANK], st[PF_IR_MAX_RANK];
    for (int d = 0; d < r; d++) {
        start[d] = 0;
        step[d] = 1;
    }
    for (int i = 0; i < s->n; i++) {
        int64_t ax = s->axes[i] < 0 ? s->axes[i] + r : s->axes[i];
        if (ax < 0 || ax >= r)
            return pf_nn_cpu_fail(a, PF_ERR_INVALID, "axis %lld out of range for rank %d", (long long)s->axes[i], r);
        if (s->steps[i] == 0) return pf_nn_cpu_fail(a, PF_ERR_INVALID, "step 0 on axis %lld", (long long)ax);
        int64_t dim = vx->dims[ax], b = s->starts[i];
        if (b < 0) b += dim;
        int64_t hi = s->steps[i] > 0 ? dim : dim - 1;
        start[ax] = b < 0 ? 0 : b > hi ? hi : b;
        step[ax] = s->steps[i];
    }
    pf_nd_strides(r, vx->dims, ist);
    int64_t base = 0;
    for (int d = 0; d < r; d++) {
        int64_t cnt = vy->dims[d];
        if (cnt <= 1) step[d] = 1; /* one element or none: the step is never taken */
        if (cnt > 0) {
            /* Overflow-checked: steps come from the file (INT64_MIN seen). */
            int64_t span, last;
            const bool wrap = __builtin_mul_overflow(cnt - 1, step[d], &span) ||
                              __builtin_add_overflow(start[d], span, &last);
            if (wrap || start[d] < 0 || start[d] >= vx->dims[d] || last < 0 ||
                last >= vx->dims[d])
                return pf_nn_cpu_fail(a, PF_ERR_INVALID,
                                      "axis %d: %lld elements from %lld step %lld leave the input dim %lld",
                                      d, (long long)cnt, (long long)start[d], (long long)step[d],
                                      (long long)vx->dims[d]);
        }
        base += start[d] * ist[d];
        st[d] = step[d] * ist[d]; /* |step| < dim here, so within the input's span */
    }
    pf_nd_copy_strided(a->out[0], a->in[0], pf_nd_esize(vx->dtype), r, vy->dims, base, st, a->pool);
    return PF_OK;
}
