/* PAD: constant, reflect and edge modes; negative pads crop. Output rows
 * (the innermost dim) are built from one contiguous memcpy of the source
 * run plus per-element borders; in constant mode a row whose outer index
 * falls in the padding is all fill. */
#include <string.h>

#include "ndutil.h"

typedef struct pad_job {
    const unsigned char *in;
    unsigned char *out;
    size_t es;
    int r;
    pf_ir_pad_mode mode;
    int64_t idims[PF_IR_MAX_RANK], odims[PF_IR_MAX_RANK], begin[PF_IR_MAX_RANK];
    int64_t ist[PF_IR_MAX_RANK];
    unsigned char fill[8];
} pad_job;

/* Source index of output index o along d, or -1 for constant padding. */
static int64_t pad_src(const pad_job *j, int d, int64_t o)
{
    const int64_t n = j->idims[d];
    int64_t s = o - j->begin[d];
    if (s >= 0 && s < n) return s;
    if (j->mode == PF_IR_PADMODE_CONSTANT) return -1;
    if (j->mode == PF_IR_PADMODE_EDGE) return s < 0 ? 0 : n - 1;
    if (n == 1) return 0;
    /* reflect without repeating the edge: period 2(n-1) */
    int64_t p = 2 * (n - 1);
    s %= p;
    if (s < 0) s += p;
    return s >= n ? p - s : s;
}

static void pad_rows(void *p, int64_t lo, int64_t hi)
{
    const pad_job *j = p;
    const int last = j->r - 1;
    const int64_t L = j->odims[last], es = (int64_t)j->es;
    for (int64_t row = lo; row < hi; row++) {
        unsigned char *o = j->out + row * L * es;
        int64_t rem = row, off = 0;
        bool fill_row = false;
        for (int d = last - 1; d >= 0; d--) {
            int64_t s = pad_src(j, d, rem % j->odims[d]);
            rem /= j->odims[d];
            if (s < 0) fill_row = true;
            else off += s * j->ist[d];
        }
        if (fill_row) {
            for (int64_t i = 0; i < L; i++) memcpy(o + i * es, j->fill, j->es);
            continue;
        }
        const unsigned char *src = j->in + off * es;
        int64_t b = j->begin[last], n = j->idims[last];
        int64_t m0 = b > 0 ? b : 0, m1 = b + n < L ? b + n : L;
        if (m1 > m0) memcpy(o + m0 * es, src + (m0 - b) * es, (size_t)((m1 - m0) * es));
        else m0 = m1 = 0;
        for (int64_t i = 0; i < L; i++) {
            if (i >= m0 && i < m1) { i = m1 - 1; continue; }
            int64_t s = pad_src(j, last, i);
            memcpy(o + i * es, s < 0 ? j->fill : src + s * es, j->es);
        }
    }
}

pf_status pf_nn_cpu_pad(const pf_nn_cpu_args *a)
{
    const pf_ir_pad_attr *pa = &a->node->attr.pad;
    const pf_ir_value *vx = a->vin[0], *vy = a->vout[0];
    if (!vx || !a->in[0]) return pf_nn_cpu_fail(a, PF_ERR_INVALID, "missing input");
    const int r = vx->ndim;
    if (vy->ndim != r || vy->dtype != vx->dtype || pa->n != r)
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "pads for rank %d, input '%s' rank %d, output rank %d",
                              pa->n, vx->name, r, vy->ndim);
    pad_job j;
    memset(&j, 0, sizeof j);
    j.in = a->in[0];
    j.out = a->out[0];
    j.es = pf_nd_esize(vx->dtype);
    j.mode = pa->mode;
    pf_nd_store_double(j.fill, vx->dtype, pa->value);
    int64_t total = pf_nd_numel(vy);
    for (int d = 0; d < r; d++) {
        j.idims[d] = vx->dims[d];
        j.odims[d] = vy->dims[d];
        j.begin[d] = pa->begin[d];
        if (vy->dims[d] != vx->dims[d] + pa->begin[d] + pa->end[d] || vy->dims[d] < 0)
            return pf_nn_cpu_fail(a, PF_ERR_INVALID, "output dim %d is %lld, expected %lld + %lld + %lld", d,
                                  (long long)vy->dims[d], (long long)vx->dims[d], (long long)pa->begin[d],
                                  (long long)pa->end[d]);
        if (vx->dims[d] == 0 && vy->dims[d] > 0 && pa->mode != PF_IR_PADMODE_CONSTANT)
            return pf_nn_cpu_fail(a, PF_ERR_INVALID, "cannot %s-pad the empty dim %d",
                                  pa->mode == PF_IR_PADMODE_EDGE ? "edge" : "reflect", d);
    }
    if (total <= 0) return PF_OK;
    if (r == 0) {
        memcpy(a->out[0], a->in[0], j.es);
        return PF_OK;
    }
    j.r = r;
    pf_nd_strides(r, j.idims, j.ist);
    int64_t L = j.odims[r - 1];
    pf_nd_parallel_range(a->pool, total / L, PF_ND_PAR_MIN / L + 1, pad_rows, &j);
    return PF_OK;
}
