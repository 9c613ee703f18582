/* Data movement without arithmetic: CONCAT, SPLIT, RESHAPE, SHAPE and
 * CONSTANT_OF_SHAPE, any dtype. Concat and Split view every tensor as
 * [outer, axis * inner] and copy one contiguous chunk per (outer, input). */
#include <string.h>

#include "ndutil.h"

typedef struct cat_job {
    bool split;                         /* false: many -> one; true: one -> many */
    int n;
    unsigned char *big;                 /* the concatenated tensor */
    unsigned char *part[PF_IR_MAX_INPUTS];
    size_t part_bytes[PF_IR_MAX_INPUTS]; /* per outer index */
    size_t row_bytes;                   /* sum of part_bytes */
} cat_job;

static void cat_range(void *p, int64_t lo, int64_t hi)
{
    const cat_job *j = p;
    for (int64_t o = lo; o < hi; o++) {
        unsigned char *b = j->big + (size_t)o * j->row_bytes;
        for (int k = 0; k < j->n; k++) {
            unsigned char *q = j->part[k] + (size_t)o * j->part_bytes[k];
            if (j->part_bytes[k]) {
                if (j->split) memcpy(q, b, j->part_bytes[k]);
                else memcpy(b, q, j->part_bytes[k]);
            }
            b += j->part_bytes[k];
        }
    }
}

/* Fills j from the big tensor's shape and the parts; checks that the parts'
 * dims match the big one's except along the axis, and sum to it. */
static pf_status cat_setup(const pf_nn_cpu_args *a, cat_job *j, const pf_ir_value *big,
                           const pf_ir_value *const *parts, int n, int64_t axis,
                           int64_t *outer)
{
    const int r = big->ndim;
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r)
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "axis %lld out of range for rank %d", (long long)axis, r);
    size_t es = pf_nd_esize(big->dtype);
    int64_t inner = 1, sum = 0;
    *outer = 1;
    for (int d = 0; d < axis; d++) *outer *= big->dims[d];
    for (int d = (int)axis + 1; d < r; d++) inner *= big->dims[d];
    for (int k = 0; k < n; k++) {
        const pf_ir_value *v = parts[k];
        if (!v || v->ndim != r || v->dtype != big->dtype)
            return pf_nn_cpu_fail(a, PF_ERR_INVALID, "part %d ('%s') differs in rank or dtype", k,
                                  v ? v->name : "?");
        for (int d = 0; d < r; d++)
            if (d != axis && v->dims[d] != big->dims[d])
                return pf_nn_cpu_fail(a, PF_ERR_INVALID, "part '%s' dim %d is %lld, expected %lld",
                                      v->name, d, (long long)v->dims[d], (long long)big->dims[d]);
        sum += v->dims[axis];
        j->part_bytes[k] = (size_t)(v->dims[axis] * inner) * es;
    }
    if (sum != big->dims[axis])
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "parts sum to %lld along axis %lld, tensor has %lld",
                              (long long)sum, (long long)axis, (long long)big->dims[axis]);
    j->n = n;
    j->row_bytes = (size_t)(big->dims[axis] * inner) * es;
    return PF_OK;
}

pf_status pf_nn_cpu_concat(const pf_nn_cpu_args *a)
{
    const pf_ir_node *n = a->node;
    cat_job j;
    memset(&j, 0, sizeof j);
    int64_t outer;
    if (n->n_in < 1) return pf_nn_cpu_fail(a, PF_ERR_INVALID, "no inputs");
    pf_status st = cat_setup(a, &j, a->vout[0], a->vin, n->n_in, n->attr.axis.axis, &outer);
    if (st != PF_OK) return st;
    j.big = a->out[0];
    for (int k = 0; k < n->n_in; k++) {
        if (!a->in[k] && j.part_bytes[k]) return pf_nn_cpu_fail(a, PF_ERR_INVALID, "input %d missing", k);
        j.part[k] = (unsigned char *)(uintptr_t)a->in[k];
    }
    int64_t bytes = outer * (int64_t)j.row_bytes;
    pf_nd_parallel_range(a->pool, outer, bytes >= 4 * PF_ND_PAR_MIN && j.row_bytes
                         ? (int64_t)(4 * PF_ND_PAR_MIN / j.row_bytes) + 1 : outer + 1, cat_range, &j);
    return PF_OK;
}

pf_status pf_nn_cpu_split(const pf_nn_cpu_args *a)
{
    const pf_ir_node *n = a->node;
    cat_job j;
    memset(&j, 0, sizeof j);
    int64_t outer;
    if (!a->vin[0] || !a->in[0]) return pf_nn_cpu_fail(a, PF_ERR_INVALID, "missing input");
    if (n->n_out < 1) return pf_nn_cpu_fail(a, PF_ERR_INVALID, "no outputs");
    pf_status st = cat_setup(a, &j, a->vin[0], a->vout, n->n_out, n->attr.split.axis, &outer);
    if (st != PF_OK) return st;
    j.split = true;
    j.big = (unsigned char *)(uintptr_t)a->in[0];
    for (int k = 0; k < n->n_out; k++) j.part[k] = a->out[k];
    int64_t bytes = outer * (int64_t)j.row_bytes;
    pf_nd_parallel_range(a->pool, outer, bytes >= 4 * PF_ND_PAR_MIN && j.row_bytes
                         ? (int64_t)(4 * PF_ND_PAR_MIN / j.row_bytes) + 1 : outer + 1, cat_range, &j);
    return PF_OK;
}

pf_status pf_nn_cpu_reshape(const pf_nn_cpu_args *a)
{
    const pf_ir_value *vx = a->vin[0], *vy = a->vout[0];
    if (!vx || !a->in[0]) return pf_nn_cpu_fail(a, PF_ERR_INVALID, "missing input");
    int64_t cnt = pf_nd_numel(vx);
    if (cnt < 0 || cnt != pf_nd_numel(vy) || vx->dtype != vy->dtype)
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "output '%s' (%lld elements) does not match input '%s' (%lld)",
                              vy->name, (long long)pf_nd_numel(vy), vx->name, (long long)cnt);
    if (cnt) memcpy(a->out[0], a->in[0], (size_t)cnt * pf_nd_esize(vx->dtype));
    return PF_OK;
}

pf_status pf_nn_cpu_shape(const pf_nn_cpu_args *a)
{
    const pf_ir_value *vx = a->vin[0], *vy = a->vout[0];
    if (!vx) return pf_nn_cpu_fail(a, PF_ERR_INVALID, "missing input");
    if (vy->dtype != PF_IR_I64) return pf_nn_cpu_fail(a, PF_ERR_INVALID, "output must be I64");
    const int r = vx->ndim;
    /* ONNX Shape's start: negative counts from the end, then clamped */
    int64_t start = a->node->attr.slice.starts[0];
    if (start < 0) start += r;
    start = start < 0 ? 0 : start > r ? r : start;
    int64_t cnt = pf_nd_numel(vy);
    if (cnt < 0 || start + cnt > r)
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "output '%s' has %lld dims from %lld, input rank %d",
                              vy->name, (long long)cnt, (long long)start, r);
    int64_t *y = a->out[0];
    for (int64_t i = 0; i < cnt; i++) y[i] = vx->dims[start + i];
    return PF_OK;
}

pf_status pf_nn_cpu_constant_of_shape(const pf_nn_cpu_args *a)
{
    const pf_ir_value *vy = a->vout[0];
    int64_t cnt = pf_nd_numel(vy);
    if (cnt < 0 || pf_nd_esize(vy->dtype) == 0)
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "output '%s' has no concrete shape or dtype", vy->name);
    pf_nd_fill(a->out[0], vy->dtype, a->node->attr.fill.value, cnt);
    return PF_OK;
}
