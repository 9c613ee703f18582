/* WHERE: cond ? X : Y with numpy broadcasting of all three, any dtype of X/Y
 * (cond is BOOL). */
#include <string.h>

#include "ndutil.h"

typedef struct where_job {
    const uint8_t *c;
    const void *x, *y;
    void *o;
    size_t es;
    pf_nd_bcast bc;
} where_job;

#define WHERE_LOOP(T)                                                                     \
    do {                                                                                  \
        const T *px = (const T *)j->x, *py = (const T *)j->y;                             \
        T *po = (T *)j->o + oo;                                                           \
        for (int64_t i = 0; i < n; i++)                                                   \
            po[i] = j->c[off[0] + i * st[0]] ? px[off[1] + i * st[1]] : py[off[2] + i * st[2]]; \
    } while (0)

static void where_row(void *p, int64_t oo, const int64_t *off, int64_t n, const int64_t *st)
{
    const where_job *j = p;
    switch (j->es) {
    case 1: WHERE_LOOP(uint8_t); break;
    case 2: WHERE_LOOP(uint16_t); break;
    case 4: WHERE_LOOP(uint32_t); break;
    default: WHERE_LOOP(uint64_t); break;
    }
}

static void where_range(void *p, int64_t lo, int64_t hi)
{
    const where_job *j = p;
    pf_nd_bcast_rows(&j->bc, lo, hi, where_row, p);
}

pf_status pf_nn_cpu_where(const pf_nn_cpu_args *a)
{
    const pf_ir_value *vc = a->vin[0], *vx = a->vin[1], *vy = a->vin[2], *vo = a->vout[0];
    if (a->node->n_in < 3 || !vc || !vx || !vy || !a->in[0] || !a->in[1] || !a->in[2])
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "needs three inputs (cond, X, Y)");
    if (vc->dtype != PF_IR_BOOL || vx->dtype != vy->dtype || vo->dtype != vx->dtype ||
        pf_nd_esize(vx->dtype) == 0)
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "needs a BOOL condition and X, Y, output of one dtype");
    where_job j;
    memset(&j, 0, sizeof j);
    const pf_ir_value *ins[3] = {vc, vx, vy};
    if (vo->ndim < 0 || !pf_nd_bcast_init(&j.bc, vo->ndim, vo->dims, 3, ins))
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "inputs do not broadcast to output '%s'", vo->name);
    j.c = a->in[0];
    j.x = a->in[1];
    j.y = a->in[2];
    j.o = a->out[0];
    j.es = pf_nd_esize(vx->dtype);
    pf_nd_parallel_range(a->pool, j.bc.total, 0, where_range, &j);
    return PF_OK;
}
