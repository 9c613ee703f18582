/* SUM and MEAN_N: ONNX's variadic Sum/Mean with numpy broadcasting of all
 * inputs. F32 (Sum also I64/I32). Each run is accumulated input by input so
 * the inner loops stay contiguous; Mean divides the sum by the count as
 * ONNX's reference does. */
#include <string.h>

#include "ndutil.h"

typedef struct var_job {
    pf_ir_dtype dt;
    int n_in;
    bool mean;
    const void *in[PF_IR_MAX_INPUTS];
    void *o;
    pf_nd_bcast bc;
} var_job;

#define VAR_LOOP(T, UT)                                                                     \
    do {                                                                                    \
        T *po = (T *)j->o + oo;                                                             \
        for (int k = 0; k < j->n_in; k++) {                                                 \
            const T *pi = (const T *)j->in[k] + off[k];                                     \
            const int64_t s = st[k];                                                        \
            if (k == 0) {                                                                   \
                for (int64_t i = 0; i < n; i++) po[i] = pi[i * s];                          \
            } else if (s == 1) {                                                            \
                for (int64_t i = 0; i < n; i++) po[i] = (T)((UT)po[i] + (UT)pi[i]);         \
            } else {                                                                        \
                for (int64_t i = 0; i < n; i++) po[i] = (T)((UT)po[i] + (UT)pi[i * s]);     \
            }                                                                               \
        }                                                                                   \
    } while (0)

static void var_row(void *p, int64_t oo, const int64_t *off, int64_t n, const int64_t *st)
{
    const var_job *j = p;
    if (j->dt == PF_IR_F32) {
        VAR_LOOP(float, float);
        if (j->mean) {
            float *po = (float *)j->o + oo;
            const float cnt = (float)j->n_in;
            for (int64_t i = 0; i < n; i++) po[i] /= cnt;
        }
    } else if (j->dt == PF_IR_I64) {
        VAR_LOOP(int64_t, uint64_t);
    } else {
        VAR_LOOP(int32_t, uint32_t);
    }
}

static void var_range(void *p, int64_t lo, int64_t hi)
{
    const var_job *j = p;
    pf_nd_bcast_rows(&j->bc, lo, hi, var_row, p);
}

pf_status pf_nn_cpu_variadic(const pf_nn_cpu_args *a)
{
    const pf_ir_node *n = a->node;
    const pf_ir_value *vo = a->vout[0];
    var_job j;
    memset(&j, 0, sizeof j);
    j.mean = n->op == PF_IR_MEAN_N;
    j.dt = vo->dtype;
    if (n->n_in < 1 || n->n_in > PF_IR_MAX_INPUTS)
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "needs 1..%d inputs, has %d", PF_IR_MAX_INPUTS, n->n_in);
    if (!(j.dt == PF_IR_F32 || (!j.mean && (j.dt == PF_IR_I64 || j.dt == PF_IR_I32))))
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "dtype %s is not supported on the CPU",
                              pf_ir_dtype_name(j.dt));
    for (int k = 0; k < n->n_in; k++) {
        if (!a->vin[k] || !a->in[k])
            return pf_nn_cpu_fail(a, PF_ERR_INVALID, "input %d is missing", k);
        if (a->vin[k]->dtype != j.dt)
            return pf_nn_cpu_fail(a, PF_ERR_INVALID, "input '%s' has dtype %s, output %s",
                                  a->vin[k]->name, pf_ir_dtype_name(a->vin[k]->dtype),
                                  pf_ir_dtype_name(j.dt));
        j.in[k] = a->in[k];
    }
    j.n_in = n->n_in;
    j.o = a->out[0];
    if (vo->ndim < 0 || !pf_nd_bcast_init(&j.bc, vo->ndim, vo->dims, n->n_in, a->vin))
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "inputs do not broadcast to output '%s'", vo->name);
    pf_nd_parallel_range(a->pool, j.bc.total, 0, var_range, &j);
    return PF_OK;
}
