/* Shape, broadcasting and strided-copy helpers of the light CPU kernels.
 *
 * Both iterators first drop size-1 dims and merge neighbours whose strides
 * chain (stride[d] == stride[d+1] * dims[d+1] for every operand), so a
 * same-shape add becomes one long run and [N,C,H,W] + [C,1,1] becomes
 * [N, C, H*W] with the bias constant along each run. */
#include <math.h>
#include <string.h>

#include "ndutil.h"
#include "pixflow/tensor.h"

size_t pf_nd_esize(pf_ir_dtype t)
{
    switch (t) {
    case PF_IR_F32: case PF_IR_I32: return 4;
    case PF_IR_F16: return 2;
    case PF_IR_I64: case PF_IR_F64: return 8;
    case PF_IR_U8: case PF_IR_I8: case PF_IR_BOOL: return 1;
    default: return 0;
    }
}

int64_t pf_nd_numel(const pf_ir_value *v)
{
    if (v->ndim < 0) return -1;
    int64_t n = 1;
    for (int d = 0; d < v->ndim; d++) {
        if (v->dims[d] < 0) return -1;
        n *= v->dims[d];
    }
    return n;
}

void pf_nd_strides(int nd, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        strides[d] = s;
        s *= dims[d];
    }
}

static int64_t sat_i64(double v, double lo, double hi)
{
    if (isnan(v)) return 0;
    if (v <= lo) return (int64_t)lo;
    if (v >= hi) return (int64_t)hi;
    return (int64_t)v;
}

int64_t pf_nd_load_i64(const void *p, pf_ir_dtype t, int64_t i)
{
    switch (t) {
    case PF_IR_I64: return ((const int64_t *)p)[i];
    case PF_IR_I32: return ((const int32_t *)p)[i];
    case PF_IR_I8: return ((const int8_t *)p)[i];
    case PF_IR_U8: case PF_IR_BOOL: return ((const uint8_t *)p)[i];
    default: return 0;
    }
}

void pf_nd_store_i64(void *p, pf_ir_dtype t, int64_t i, int64_t x)
{
    switch (t) {
    case PF_IR_I64: ((int64_t *)p)[i] = x; break;
    case PF_IR_I32: ((int32_t *)p)[i] = (int32_t)x; break;
    case PF_IR_I8: ((int8_t *)p)[i] = (int8_t)x; break;
    case PF_IR_U8: case PF_IR_BOOL: ((uint8_t *)p)[i] = (uint8_t)x; break;
    default: break;
    }
}

void pf_nd_store_double(void *dst, pf_ir_dtype t, double v)
{
    switch (t) {
    case PF_IR_F32: { float f = (float)v; memcpy(dst, &f, 4); break; }
    case PF_IR_F16: { uint16_t h = pf_f32_to_f16((float)v); memcpy(dst, &h, 2); break; }
    case PF_IR_F64: memcpy(dst, &v, 8); break;
    case PF_IR_I64: {
        /* 2^63 is exact in double; INT64_MAX is not, so compare against it. */
        int64_t i = isnan(v) ? 0 : v >= 9223372036854775808.0 ? INT64_MAX
                  : v <= -9223372036854775808.0 ? INT64_MIN : (int64_t)v;
        memcpy(dst, &i, 8);
        break;
    }
    case PF_IR_I32: { int32_t i = (int32_t)sat_i64(v, INT32_MIN, INT32_MAX); memcpy(dst, &i, 4); break; }
    case PF_IR_U8: *(uint8_t *)dst = (uint8_t)sat_i64(v, 0, 255); break;
    case PF_IR_I8: *(int8_t *)dst = (int8_t)sat_i64(v, -128, 127); break;
    case PF_IR_BOOL: *(uint8_t *)dst = v != 0.0; break;
    default: break;
    }
}

void pf_nd_fill(void *dst, pf_ir_dtype t, double v, int64_t n)
{
    size_t es = pf_nd_esize(t);
    if (n <= 0 || es == 0) return;
    unsigned char *d = dst;
    pf_nd_store_double(d, t, v);
    /* Doubling memcpy: log2(n) calls whatever the element size. */
    int64_t have = 1;
    while (have < n) {
        int64_t c = have < n - have ? have : n - have;
        memcpy(d + (size_t)have * es, d, (size_t)c * es);
        have += c;
    }
}

/* ---- parallel ranges ---------------------------------------------------------- */

typedef struct range_job {
    pf_nd_range_fn fn;
    void *ctx;
    int64_t total;
} range_job;

static void range_worker(void *p, int ith, int nth)
{
    const range_job *j = p;
    int64_t lo = j->total / nth * ith + (j->total % nth) * ith / nth;
    int64_t hi = j->total / nth * (ith + 1) + (j->total % nth) * (ith + 1) / nth;
    if (hi > lo) j->fn(j->ctx, lo, hi);
}

void pf_nd_parallel_range(pf_threadpool *pool, int64_t total, int64_t grain, pf_nd_range_fn fn,
                          void *ctx)
{
    if (total <= 0) return;
    if (grain <= 0) grain = PF_ND_PAR_MIN;
    if (!pool || total < grain) {
        fn(ctx, 0, total);
        return;
    }
    range_job j = {fn, ctx, total};
    pf_nn_cpu_parallel(pool, range_worker, &j);
}

/* ---- broadcasting ------------------------------------------------------------- */

bool pf_nd_bcast_init(pf_nd_bcast *b, int out_nd, const int64_t *out_dims, int nops,
                      const pf_ir_value *const *ins)
{
    int64_t dims[PF_IR_MAX_RANK];
    int64_t st[PF_ND_MAX_OPS][PF_IR_MAX_RANK];
    memset(b, 0, sizeof *b);
    if (out_nd < 0 || out_nd > PF_IR_MAX_RANK || nops < 0 || nops > PF_ND_MAX_OPS) return false;
    b->nops = nops;
    b->total = 1;
    for (int d = 0; d < out_nd; d++) {
        dims[d] = out_dims[d];
        b->total *= out_dims[d];
    }
    for (int k = 0; k < nops; k++) {
        const pf_ir_value *v = ins[k];
        if (v->ndim < 0 || v->ndim > out_nd) return false;
        int64_t vst[PF_IR_MAX_RANK];
        pf_nd_strides(v->ndim, v->dims, vst);
        int lead = out_nd - v->ndim;
        for (int d = 0; d < out_nd; d++) {
            if (d < lead) {
                st[k][d] = 0;
                continue;
            }
            int64_t id = v->dims[d - lead];
            if (id == dims[d]) st[k][d] = id == 1 ? 0 : vst[d - lead];
            else if (id == 1) st[k][d] = 0;
            else return false;
        }
    }
    /* Drop unit dims, then merge chained neighbours (outer into inner). */
    int nd = 0;
    for (int d = 0; d < out_nd; d++) {
        if (dims[d] == 1) continue;
        bool merge = nd > 0;
        for (int k = 0; k < nops && merge; k++)
            merge = st[k][nd - 1] == st[k][d] * dims[d];
        if (merge) {
            b->dims[nd - 1] *= dims[d];
            for (int k = 0; k < nops; k++) b->st[k][nd - 1] = st[k][d];
        } else {
            b->dims[nd] = dims[d];
            for (int k = 0; k < nops; k++) b->st[k][nd] = st[k][d];
            nd++;
        }
    }
    if (nd == 0) {
        b->dims[0] = 1;
        for (int k = 0; k < nops; k++) b->st[k][0] = 0;
        nd = 1;
    }
    b->nd = nd;
    return true;
}

void pf_nd_bcast_rows(const pf_nd_bcast *b, int64_t lo, int64_t hi, pf_nd_row_fn row, void *ctx)
{
    int64_t idx[PF_IR_MAX_RANK];
    int64_t off[PF_ND_MAX_OPS], step[PF_ND_MAX_OPS];
    const int nd = b->nd, last = b->nd - 1;
    int64_t rem = lo;
    for (int d = last; d >= 0; d--) {
        idx[d] = rem % b->dims[d];
        rem /= b->dims[d];
    }
    for (int k = 0; k < b->nops; k++) step[k] = b->st[k][last];
    int64_t pos = lo;
    while (pos < hi) {
        for (int k = 0; k < b->nops; k++) {
            int64_t o = 0;
            for (int d = 0; d < nd; d++) o += idx[d] * b->st[k][d];
            off[k] = o;
        }
        int64_t n = b->dims[last] - idx[last];
        if (n > hi - pos) n = hi - pos;
        row(ctx, pos, off, n, step);
        pos += n;
        idx[last] += n;
        for (int d = last; d > 0 && idx[d] >= b->dims[d]; d--) {
            idx[d] = 0;
            idx[d - 1]++;
        }
    }
}

/* ---- strided copy --------------------------------------------------------------- */

typedef struct copy_job {
    unsigned char *out;
    const unsigned char *in;
    size_t es;
    int nd;
    int64_t dims[PF_IR_MAX_RANK];
    int64_t st[PF_IR_MAX_RANK];
    int64_t base;
    /* tiled transpose: dim tk has input stride 1, the last dim does not */
    int tk;
    int64_t tiles_k, n_outer;
} copy_job;

static void copy_run(unsigned char *o, const unsigned char *in, size_t es, int64_t off,
                     int64_t step, int64_t n)
{
    if (step == 1) {
        memcpy(o, in + off * (int64_t)es, (size_t)n * es);
        return;
    }
    switch (es) {
    case 1: for (int64_t i = 0; i < n; i++) o[i] = in[off + i * step]; break;
    case 2: {
        uint16_t *d = (uint16_t *)(void *)o;
        const uint16_t *s = (const uint16_t *)(const void *)in;
        for (int64_t i = 0; i < n; i++) d[i] = s[off + i * step];
        break;
    }
    case 4: {
        uint32_t *d = (uint32_t *)(void *)o;
        const uint32_t *s = (const uint32_t *)(const void *)in;
        for (int64_t i = 0; i < n; i++) d[i] = s[off + i * step];
        break;
    }
    case 8: {
        uint64_t *d = (uint64_t *)(void *)o;
        const uint64_t *s = (const uint64_t *)(const void *)in;
        for (int64_t i = 0; i < n; i++) d[i] = s[off + i * step];
        break;
    }
    default:
        for (int64_t i = 0; i < n; i++) memcpy(o + i * (int64_t)es, in + (off + i * step) * (int64_t)es, es);
        break;
    }
}

static void copy_rows(void *p, int64_t lo, int64_t hi)
{
    const copy_job *j = p;
    const int last = j->nd - 1;
    int64_t idx[PF_IR_MAX_RANK];
    int64_t rem = lo;
    for (int d = last; d >= 0; d--) {
        idx[d] = rem % j->dims[d];
        rem /= j->dims[d];
    }
    int64_t pos = lo;
    while (pos < hi) {
        int64_t off = j->base;
        for (int d = 0; d < j->nd; d++) off += idx[d] * j->st[d];
        int64_t n = j->dims[last] - idx[last];
        if (n > hi - pos) n = hi - pos;
        copy_run(j->out + pos * (int64_t)j->es, j->in, j->es, off, j->st[last], n);
        pos += n;
        idx[last] += n;
        for (int d = last; d > 0 && idx[d] >= j->dims[d]; d--) {
            idx[d] = 0;
            idx[d - 1]++;
        }
    }
}

#define PF_ND_TILE 32

/* One task = one outer index and one band of PF_ND_TILE along dim tk: reads
 * go along tk (input stride 1), writes along the last dim (output stride 1),
 * both within a tile that stays in L1. */
static void copy_tiles(void *p, int64_t lo, int64_t hi)
{
    const copy_job *j = p;
    const int last = j->nd - 1, tk = j->tk;
    int64_t ost[PF_IR_MAX_RANK];
    pf_nd_strides(j->nd, j->dims, ost);
    const int64_t K = j->dims[tk], L = j->dims[last], sl = j->st[last], ok = ost[tk];
    for (int64_t t = lo; t < hi; t++) {
        int64_t outer = t / j->tiles_k, kb = (t % j->tiles_k) * PF_ND_TILE;
        int64_t ke = kb + PF_ND_TILE < K ? kb + PF_ND_TILE : K;
        int64_t ioff = j->base, ooff = 0, rem = outer;
        for (int d = last; d >= 0; d--) {
            if (d == last || d == tk) continue;
            int64_t i = rem % j->dims[d];
            rem /= j->dims[d];
            ioff += i * j->st[d];
            ooff += i * ost[d];
        }
        for (int64_t lb = 0; lb < L; lb += PF_ND_TILE) {
            int64_t le = lb + PF_ND_TILE < L ? lb + PF_ND_TILE : L;
            for (int64_t k = kb; k < ke; k++) {
                unsigned char *o = j->out + (ooff + k * ok + lb) * (int64_t)j->es;
                copy_run(o, j->in, j->es, ioff + k + lb * sl, sl, le - lb);
            }
        }
    }
}

void pf_nd_copy_strided(void *out, const void *in, size_t esize, int nd, const int64_t *dims,
                        int64_t in_base, const int64_t *in_strides, pf_threadpool *pool)
{
    copy_job j;
    memset(&j, 0, sizeof j);
    j.out = out;
    j.in = in;
    j.es = esize;
    j.base = in_base;
    int64_t total = 1;
    int m = 0;
    for (int d = 0; d < nd; d++) {
        total *= dims[d];
        if (dims[d] == 1) continue;
        if (m > 0 && j.st[m - 1] == in_strides[d] * dims[d]) {
            j.dims[m - 1] *= dims[d];
            j.st[m - 1] = in_strides[d];
        } else {
            j.dims[m] = dims[d];
            j.st[m] = in_strides[d];
            m++;
        }
    }
    if (total <= 0) return;
    if (m == 0) {
        j.dims[0] = 1;
        j.st[0] = 1;
        m = 1;
    }
    j.nd = m;
    const int last = m - 1;
    int tk = -1;
    if (j.st[last] != 1 && j.dims[last] >= 4)
        for (int d = 0; d < last; d++)
            if (j.st[d] == 1 && j.dims[d] >= 4) tk = d;
    if (tk >= 0) {
        j.tk = tk;
        j.tiles_k = (j.dims[tk] + PF_ND_TILE - 1) / PF_ND_TILE;
        j.n_outer = total / (j.dims[tk] * j.dims[last]);
        int64_t tasks = j.n_outer * j.tiles_k;
        /* grain in tasks: each task moves up to 32 * L elements */
        int64_t grain = PF_ND_PAR_MIN / (PF_ND_TILE * j.dims[last]) + 1;
        pf_nd_parallel_range(pool, tasks, grain, copy_tiles, &j);
        return;
    }
    pf_nd_parallel_range(pool, total, 0, copy_rows, &j);
}
