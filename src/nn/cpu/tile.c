/* TILE: output index i along d reads input index i % in_dim. Each output
 * row (innermost dim) is the input row repeated. */
#include <string.h>

#include "ndutil.h"

typedef struct tile_job {
    const unsigned char *in;
    unsigned char *out;
    size_t es;
    int r;
    int64_t idims[PF_IR_MAX_RANK], odims[PF_IR_MAX_RANK], ist[PF_IR_MAX_RANK];
} tile_job;

static void tile_rows(void *p, int64_t lo, int64_t hi)
{
    const tile_job *j = p;
    const int last = j->r - 1;
    const size_t rowb = (size_t)j->idims[last] * j->es;
    const int64_t reps = j->odims[last] / j->idims[last];
    for (int64_t row = lo; row < hi; row++) {
        int64_t rem = row, off = 0;
        for (int d = last - 1; d >= 0; d--) {
            off += (rem % j->odims[d]) % j->idims[d] * j->ist[d];
            rem /= j->odims[d];
        }
        unsigned char *o = j->out + (size_t)row * rowb * (size_t)reps;
        for (int64_t k = 0; k < reps; k++) memcpy(o + (size_t)k * rowb, j->in + (size_t)off * j->es, rowb);
    }
}

pf_status pf_nn_cpu_tile(const pf_nn_cpu_args *a)
{
    const pf_ir_value *vx = a->vin[0], *vy = a->vout[0];
    if (!vx || !a->in[0]) return pf_nn_cpu_fail(a, PF_ERR_INVALID, "missing input");
    const int r = vx->ndim;
    if (vy->ndim != r || vy->dtype != vx->dtype)
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "output '%s' rank/dtype differ from input", vy->name);
    tile_job j;
    memset(&j, 0, sizeof j);
    for (int d = 0; d < r; d++) {
        j.idims[d] = vx->dims[d];
        j.odims[d] = vy->dims[d];
        bool ok = vx->dims[d] == 0 ? vy->dims[d] == 0 : vy->dims[d] % vx->dims[d] == 0;
        if (!ok)
            return pf_nn_cpu_fail(a, PF_ERR_INVALID, "output dim %d (%lld) is not a multiple of input dim %lld",
                                  d, (long long)vy->dims[d], (long long)vx->dims[d]);
    }
    int64_t total = pf_nd_numel(vy);
    size_t es = pf_nd_esize(vx->dtype);
    if (total <= 0) return PF_OK;
    if (r == 0) {
        memcpy(a->out[0], a->in[0], es);
        return PF_OK;
    }
    j.in = a->in[0];
    j.out = a->out[0];
    j.es = es;
    j.r = r;
    pf_nd_strides(r, j.idims, j.ist);
    int64_t L = j.odims[r - 1];
    pf_nd_parallel_range(a->pool, total / L, PF_ND_PAR_MIN / L + 1, tile_rows, &j);
    return PF_OK;
}
