/* GATHER along one axis, any data dtype, I64/I32 indices (negative count
 * from the end). Every index is checked before anything is written; an
 * out-of-range one fails naming the node, the position and the value. */
#include <inttypes.h>
#include <string.h>

#include "ndutil.h"

typedef struct gather_job {
    const unsigned char *data;
    unsigned char *out;
    const void *idx;
    bool i64;
    int64_t nidx, K;
    size_t chunk;   /* bytes per (outer, index) */
} gather_job;

static int64_t index_at(const gather_job *j, int64_t i)
{
    int64_t v = j->i64 ? ((const int64_t *)j->idx)[i] : ((const int32_t *)j->idx)[i];
    return v < 0 ? v + j->K : v;
}

static void gather_range(void *p, int64_t lo, int64_t hi)
{
    const gather_job *j = p;
    for (int64_t t = lo; t < hi; t++) {
        int64_t o = t / j->nidx, i = t % j->nidx;
        memcpy(j->out + (size_t)t * j->chunk, j->data + (size_t)(o * j->K + index_at(j, i)) * j->chunk,
               j->chunk);
    }
}

pf_status pf_nn_cpu_gather(const pf_nn_cpu_args *a)
{
    const pf_ir_value *vd = a->vin[0], *vi = a->vin[1], *vy = a->vout[0];
    if (a->node->n_in < 2 || !vd || !vi || !a->in[0] || (!a->in[1] && pf_nd_numel(vi) > 0))
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "needs data and indices");
    if (vi->dtype != PF_IR_I64 && vi->dtype != PF_IR_I32)
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "indices '%s' must be I64 or I32", vi->name);
    const int r = vd->ndim;
    int64_t ax = a->node->attr.axis.axis;
    if (ax < 0) ax += r;
    if (ax < 0 || ax >= r)
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "axis %lld out of range for rank %d",
                              (long long)a->node->attr.axis.axis, r);
    gather_job j;
    memset(&j, 0, sizeof j);
    j.data = a->in[0];
    j.out = a->out[0];
    j.idx = a->in[1];
    j.i64 = vi->dtype == PF_IR_I64;
    j.K = vd->dims[ax];
    j.nidx = pf_nd_numel(vi);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < ax; d++) outer *= vd->dims[d];
    for (int d = (int)ax + 1; d < r; d++) inner *= vd->dims[d];
    j.chunk = (size_t)inner * pf_nd_esize(vd->dtype);
    if (vy->dtype != vd->dtype || pf_nd_numel(vy) != outer * j.nidx * inner || vy->ndim != r - 1 + vi->ndim)
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "output '%s' does not match data '%s' gathered by '%s'",
                              vy->name, vd->name, vi->name);
    for (int64_t i = 0; i < j.nidx; i++) {
        int64_t v = index_at(&j, i);
        if (v < 0 || v >= j.K) {
            int64_t raw = j.i64 ? ((const int64_t *)j.idx)[i] : ((const int32_t *)j.idx)[i];
            return pf_nn_cpu_fail(a, PF_ERR_INVALID,
                                  "index %" PRId64 " at position %" PRId64 " of '%s' is out of range "
                                  "[-%" PRId64 ", %" PRId64 ") for axis %" PRId64 " of '%s'",
                                  raw, i, vi->name, j.K, j.K, ax, vd->name);
        }
    }
    int64_t tasks = outer * j.nidx;
    if (tasks == 0 || j.chunk == 0) return PF_OK;
    pf_nd_parallel_range(a->pool, tasks, (int64_t)(4 * PF_ND_PAR_MIN / j.chunk) + 1, gather_range, &j);
    return PF_OK;
}
