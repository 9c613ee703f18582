/* BATCHNORM in inference form, X [N, C, ...] (rank >= 2), with the fused
 * act: y = (x - mean) / sqrt(var + eps) * scale + bias, folded per channel
 * into y = x * k + b (k and b computed in double), threaded over planes. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"

typedef struct bn_job {
    const float *x, *scale, *bias, *mean, *var;
    float *y;
    int64_t C, planes, inner;
    double eps;
    pf_ir_act act;
    float act_a, act_b;
} bn_job;

static void bn_planes(void *ctx, int ith, int nth)
{
    const bn_job *j = ctx;
    int64_t p0 = j->planes * ith / nth, p1 = j->planes * (ith + 1) / nth;
    for (int64_t p = p0; p < p1; p++) {
        int64_t c = p % j->C;
        double inv = 1.0 / sqrt((double)j->var[c] + j->eps);
        float k = (float)(j->scale[c] * inv);
        float b = (float)(j->bias[c] - (double)j->mean[c] * j->scale[c] * inv);
        const float *x = j->x + p * j->inner;
        float *y = j->y + p * j->inner;
        for (int64_t i = 0; i < j->inner; i++) y[i] = x[i] * k + b;
        pf_nn_cpu_apply_act(y, (size_t)j->inner, j->act, j->act_a, j->act_b);
    }
}

pf_status pf_nn_cpu_batchnorm(const pf_nn_cpu_args *a)
{
    if (a->node->n_in < 5)
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "needs X, scale, bias, mean, var");
    const pf_ir_value *vx = a->vin[0], *vy = a->vout[0];
    for (int i = 0; i < 5; i++)
        if (!a->vin[i] || a->vin[i]->dtype != PF_IR_F32)
            return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "input %d missing or not f32", i);
    if (vx->ndim < 2 || vy->ndim != vx->ndim || vy->dtype != PF_IR_F32)
        return pf_nn_cpu_fail(a, PF_ERR_FORMAT, "X must be [N, C, ...] f32 (rank %d)", vx->ndim);
    int64_t C = vx->dims[1], inner = 1;
    for (int i = 1; i < 5; i++) {
        const pf_ir_value *v = a->vin[i];
        int64_t n = 1;
        for (int d = 0; d < v->ndim; d++) n *= v->dims[d];
        if (n != C)
            return pf_nn_cpu_fail(a, PF_ERR_FORMAT, "parameter %d has %lld elements, X has %lld "
                                  "channels", i, (long long)n, (long long)C);
    }
    for (int d = 0; d < vx->ndim; d++) {
        if (vy->dims[d] != vx->dims[d])
            return pf_nn_cpu_fail(a, PF_ERR_FORMAT, "Y dim %d is %lld, X's %lld", d,
                                  (long long)vy->dims[d], (long long)vx->dims[d]);
        if (d >= 2) inner *= vx->dims[d];
    }
    bn_job j = {a->in[0], a->in[1], a->in[2], a->in[3], a->in[4], a->out[0], C,
                vx->dims[0] * C, inner, a->node->attr.bn.epsilon, a->node->act,
                a->node->act_a, a->node->act_b};
    if (C > 0) pf_nn_cpu_parallel(a->pool, bn_planes, &j);
    return PF_OK;
}
