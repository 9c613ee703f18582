/* SOFTMAX and LOG_SOFTMAX (F32) along one axis.
 *
 * Opset >= 13 normalises along `axis` alone: the input is viewed as
 * [outer, R, inner]. Legacy models (attr axis.legacy, opset < 13) coerce the
 * input to 2D at `axis`: [prod(dims < axis), prod(dims >= axis)], i.e.
 * inner = 1 and R covers every trailing dim. With inner > 1 the columns are
 * processed in blocks of SM_BLOCK so that every pass reads whole rows. */
#include <math.h>
#include <string.h>

#include "ndutil.h"

/* Columns per block: wide enough that each row read is a few KiB (the
 * prefetcher's unit), small enough for the two stack arrays. */
#define SM_BLOCK 1024

typedef struct sm_job {
    bool log;
    const float *x;
    float *y;
    int64_t outer, R, inner, nblk;
} sm_job;

static void sm_contig(const sm_job *j, const float *x, float *y)
{
    float m = -INFINITY;
    for (int64_t r = 0; r < j->R; r++) m = x[r] > m ? x[r] : m;
    double s = 0.0;
    if (j->log) {
        for (int64_t r = 0; r < j->R; r++) s += exp((double)(x[r] - m));
        float ls = (float)log(s);
        for (int64_t r = 0; r < j->R; r++) y[r] = x[r] - m - ls;
    } else {
        for (int64_t r = 0; r < j->R; r++) {
            y[r] = expf(x[r] - m);
            s += y[r];
        }
        float inv = (float)(1.0 / s);
        for (int64_t r = 0; r < j->R; r++) y[r] *= inv;
    }
}

static void sm_strided(const sm_job *j, const float *x, float *y, int64_t w)
{
    float m[SM_BLOCK], s[SM_BLOCK];
    const int64_t in = j->inner;
    for (int64_t c = 0; c < w; c++) {
        m[c] = -INFINITY;
        s[c] = 0.0f;
    }
    for (int64_t r = 0; r < j->R; r++)
        for (int64_t c = 0; c < w; c++) m[c] = x[r * in + c] > m[c] ? x[r * in + c] : m[c];
    if (j->log) {
        for (int64_t r = 0; r < j->R; r++)
            for (int64_t c = 0; c < w; c++) s[c] += expf(x[r * in + c] - m[c]);
    } else {
        for (int64_t r = 0; r < j->R; r++)
            for (int64_t c = 0; c < w; c++) {
                float e = expf(x[r * in + c] - m[c]);
                s[c] += e;
                y[r * in + c] = e;
            }
    }
    if (j->log) {
        for (int64_t c = 0; c < w; c++) s[c] = m[c] + logf(s[c]);
        for (int64_t r = 0; r < j->R; r++)
            for (int64_t c = 0; c < w; c++) y[r * in + c] = x[r * in + c] - s[c];
    } else {
        for (int64_t c = 0; c < w; c++) s[c] = 1.0f / s[c];
        for (int64_t r = 0; r < j->R; r++)
            for (int64_t c = 0; c < w; c++) y[r * in + c] *= s[c];
    }
}

static void sm_range(void *p, int64_t lo, int64_t hi)
{
    const sm_job *j = p;
    for (int64_t t = lo; t < hi; t++) {
        int64_t o = t / j->nblk, c0 = (t % j->nblk) * SM_BLOCK;
        int64_t base = o * j->R * j->inner + c0;
        if (j->inner == 1) {
            sm_contig(j, j->x + base, j->y + base);
        } else {
            int64_t w = j->inner - c0 < SM_BLOCK ? j->inner - c0 : SM_BLOCK;
            sm_strided(j, j->x + base, j->y + base, w);
        }
    }
}

pf_status pf_nn_cpu_softmax(const pf_nn_cpu_args *a)
{
    const pf_ir_node *n = a->node;
    const pf_ir_value *vx = a->vin[0], *vy = a->vout[0];
    if (!vx || !a->in[0]) return pf_nn_cpu_fail(a, PF_ERR_INVALID, "missing input");
    if (vx->dtype != PF_IR_F32 || vy->dtype != PF_IR_F32)
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "dtype %s is not supported (F32 only)",
                              pf_ir_dtype_name(vx->dtype));
    int64_t cnt = pf_nd_numel(vx);
    if (cnt < 0 || cnt != pf_nd_numel(vy))
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "output '%s' does not match input '%s'", vy->name, vx->name);
    int r = vx->ndim;
    int64_t ax = n->attr.axis.axis;
    if (ax < 0) ax += r;
    /* a scalar has one element along its only (implicit) axis */
    if (r == 0 && ax == 0) {
        if (cnt) ((float *)a->out[0])[0] = n->op == PF_IR_LOG_SOFTMAX ? 0.0f : 1.0f;
        return PF_OK;
    }
    if (ax < 0 || ax >= r)
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "axis %lld out of range for rank %d",
                              (long long)n->attr.axis.axis, r);
    sm_job j = {n->op == PF_IR_LOG_SOFTMAX, a->in[0], a->out[0], 1, 1, 1, 1};
    for (int d = 0; d < ax; d++) j.outer *= vx->dims[d];
    if (n->attr.axis.legacy) {
        for (int d = (int)ax; d < r; d++) j.R *= vx->dims[d];
    } else {
        j.R = vx->dims[ax];
        for (int d = (int)ax + 1; d < r; d++) j.inner *= vx->dims[d];
    }
    if (cnt == 0) return PF_OK;
    j.nblk = j.inner == 1 ? 1 : (j.inner + SM_BLOCK - 1) / SM_BLOCK;
    int64_t tasks = j.outer * j.nblk;
    int64_t per = j.R * (j.inner < SM_BLOCK ? j.inner : SM_BLOCK);
    pf_nd_parallel_range(a->pool, tasks, PF_ND_PAR_MIN / (per > 0 ? per : 1) + 1, sm_range, &j);
    return PF_OK;
}
