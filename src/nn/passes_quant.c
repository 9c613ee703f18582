/* QDQ fusion: DequantizeLinear -> Conv/MatMul/Gemm [-> act] [-> Add] [-> act]
 * [-> QuantizeLinear] chains become one QCONV / QMATMUL node (ir.h gives
 * their inputs and formula).
 *
 * Why before constant folding: a weight's DequantizeLinear has only
 * constant inputs, so folding would replace it by float weights and the
 * int8 values (and their per-channel scales) would be gone. Chains that do
 * not match keep their Q/DQ nodes (they run as elementwise ops) and folding
 * then turns the weights' DQ into floats as before.
 *
 * The fused node takes the slot of the last node it absorbs (the Q, Add or
 * act), so every input it reads (a residual produced between the conv and
 * the Add included) is produced earlier; the absorbed nodes die and
 * pf_ir_remove_dead drops DQ nodes nobody reads any more.
 *
 * Numerics: the fused node skips the float rounding of the unfused graph
 * (the conv's float sum of dequantized products, the residual Add) and
 * quantizes once; results may differ from the unfused graph by one step of
 * the output scale where a value lies near a rounding boundary. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "ir.h"

typedef struct qf {
    pf_ir_graph *g;
    int *use;   /* first consumer node of each value (-1 none) */
} qf;

static pf_ir_value *V(const qf *f, int v) { return &f->g->values[v]; }

static bool is_const(const qf *f, int v) { return v >= 0 && V(f, v)->data != NULL; }

static int64_t numel(const qf *f, int v) { return pf_ir_value_numel(V(f, v)); }

/* The live producer of v when it is `op`, else -1. */
static int producer_of(const qf *f, int v, pf_ir_op op)
{
    if (v < 0) return -1;
    int p = V(f, v)->producer;
    if (p < 0 || f->g->nodes[p].dead || f->g->nodes[p].op != op) return -1;
    return p;
}

/* The only consumer of v (one use, not a graph output), else -1. */
static int sole_consumer(const qf *f, int v)
{
    const pf_ir_value *val = V(f, v);
    if (val->is_output || val->n_uses != 1) return -1;
    int c = f->use[v];
    return c >= 0 && !f->g->nodes[c].dead ? c : -1;
}

/* A constant F32 scale of 1 or `per` entries. */
static bool scale_ok(const qf *f, int v, int64_t per)
{
    if (!is_const(f, v) || V(f, v)->dtype != PF_IR_F32) return false;
    int64_t n = numel(f, v);
    return n == 1 || (per > 0 && n == per && V(f, v)->ndim == 1);
}

/* An absent zero point, or a constant of dtype dt with 1 or `per` entries. */
static bool zp_ok(const qf *f, int v, pf_ir_dtype dt, int64_t per)
{
    if (v < 0) return true;
    if (!is_const(f, v) || V(f, v)->dtype != dt) return false;
    int64_t n = numel(f, v);
    return n == 1 || (per > 0 && n == per && V(f, v)->ndim == 1);
}

static int in_at(const pf_ir_node *n, int i) { return i < n->n_in ? n->in[i] : -1; }

/* DequantizeLinear of a runtime U8/I8 tensor with per-tensor constants. */
static int dq_activation(const qf *f, int v)
{
    int p = producer_of(f, v, PF_IR_DEQUANTIZE_LINEAR);
    if (p < 0) return -1;
    const pf_ir_node *n = &f->g->nodes[p];
    int x = n->in[0];
    if (is_const(f, x)) return -1;
    pf_ir_dtype dt = V(f, x)->dtype;
    if (dt != PF_IR_U8 && dt != PF_IR_I8) return -1;
    if (!scale_ok(f, n->in[1], 0) || !zp_ok(f, in_at(n, 2), dt, 0)) return -1;
    return p;
}

/* DequantizeLinear of a constant I8 weight, per tensor or per `axis` (size per). */
static int dq_weight(const qf *f, int v, int axis, int64_t per)
{
    int p = producer_of(f, v, PF_IR_DEQUANTIZE_LINEAR);
    if (p < 0) return -1;
    const pf_ir_node *n = &f->g->nodes[p];
    int w = n->in[0];
    if (!is_const(f, w) || V(f, w)->dtype != PF_IR_I8) return -1;
    /* Per axis when the scale or the zero point is (either can be). */
    int z = in_at(n, 2);
    bool per_axis = numel(f, n->in[1]) != 1 || (z >= 0 && numel(f, z) != 1);
    if (per_axis && n->attr.axis.axis != axis &&
        n->attr.axis.axis != axis - V(f, w)->ndim)
        return -1;
    if (!scale_ok(f, n->in[1], per) || !zp_ok(f, in_at(n, 2), PF_IR_I8, per)) return -1;
    return p;
}

/* The float bias [m]: a constant F32, or DequantizeLinear(constant I32);
 * *out = a new F32 constant (or the existing one), -1 when absent. */
static bool bias_of(qf *f, int v, int64_t m, int *out)
{
    *out = -1;
    if (v < 0) return true;
    /* One value per output channel: [m] (or [1, m]); a Gemm C of [m, 1]
     * is a row bias, not this. */
    const pf_ir_value *bv = V(f, v);
    if (bv->ndim != 1 && !(bv->ndim == 2 && bv->dims[0] == 1)) return false;
    if (is_const(f, v) && V(f, v)->dtype == PF_IR_F32 && numel(f, v) == m) {
        *out = v;
        return true;
    }
    int p = producer_of(f, v, PF_IR_DEQUANTIZE_LINEAR);
    if (p < 0) return false;
    const pf_ir_node *n = &f->g->nodes[p];
    int b = n->in[0], s = n->in[1], z = in_at(n, 2);
    if (!is_const(f, b) || V(f, b)->dtype != PF_IR_I32 || numel(f, b) != m) return false;
    if (V(f, b)->ndim != 1 && !(V(f, b)->ndim == 2 && V(f, b)->dims[0] == 1)) return false;
    if (!scale_ok(f, s, m) || !zp_ok(f, z, PF_IR_I32, m)) return false;
    float *d = malloc(sizeof(float) * (size_t)m);
    if (!d) return false;
    const int32_t *bq = V(f, b)->data;
    const float *sc = V(f, s)->data;
    const int32_t *zq = z >= 0 ? V(f, z)->data : NULL;
    int64_t ns = numel(f, s), nz = z >= 0 ? numel(f, z) : 0;
    for (int64_t i = 0; i < m; i++) {
        int32_t zp = zq ? zq[nz == 1 ? 0 : i] : 0;
        d[i] = (float)((int64_t)bq[i] - zp) * sc[ns == 1 ? 0 : i]; /* int64: no overflow */
    }
    int64_t dims[1] = {m};
    pf_status st = pf_ir_add_const(f->g, pf_ir_unique_name(f->g, "qbias"), PF_IR_F32, 1, dims, d,
                                   sizeof(float) * (size_t)m, out);
    free(d);
    return st == PF_OK;
}

/* A scalar F32 constant's value. */
static bool const_scalar(const qf *f, int v, float *x)
{
    if (!is_const(f, v) || V(f, v)->dtype != PF_IR_F32 || numel(f, v) != 1) return false;
    *x = *(const float *)V(f, v)->data;
    return true;
}

/* Activation node c as a fused act (Clip's bounds may still be constant inputs). */
static bool act_node(const qf *f, const pf_ir_node *c, pf_ir_act *act, float *a, float *b)
{
    if (c->op == PF_IR_CLIP) {
        *act = PF_IR_ACT_CLIP;
        *a = c->attr.unary.alpha;
        *b = c->attr.unary.beta;
        int lo = in_at(c, 1), hi = in_at(c, 2);
        if (lo >= 0 && !const_scalar(f, lo, a)) return false;
        if (hi >= 0 && !const_scalar(f, hi, b)) return false;
        if (c->n_in > 1 && lo < 0 && hi < 0) return false;
        if (c->n_in > 1 && lo < 0) *a = -FLT_MAX;
        if (c->n_in > 1 && hi < 0) *b = FLT_MAX;
        return true;
    }
    return pf_ir_act_of(f->g, c, act, a, b);
}

/* Whether DequantizeLinear d undoes QuantizeLinear q exactly (per-tensor
 * scale and zero point equal, d reading q's output). */
static bool same_qparams(const qf *f, const pf_ir_node *q, const pf_ir_node *d)
{
    if (d->op != PF_IR_DEQUANTIZE_LINEAR || d->in[0] != q->out[0]) return false;
    float a, b;
    if (!const_scalar(f, q->in[1], &a) || !const_scalar(f, d->in[1], &b) || a != b) return false;
    int zq = in_at(q, 2), zd = in_at(d, 2);
    int32_t za = 0, zb = 0;
    if (zq >= 0) {
        if (!is_const(f, zq) || numel(f, zq) != 1) return false;
        za = V(f, zq)->dtype == PF_IR_U8 ? *(const uint8_t *)V(f, zq)->data
                                         : *(const int8_t *)V(f, zq)->data;
    }
    if (zd >= 0) {
        if (!is_const(f, zd) || numel(f, zd) != 1) return false;
        zb = V(f, zd)->dtype == PF_IR_U8 ? *(const uint8_t *)V(f, zd)->data
                                         : *(const int8_t *)V(f, zd)->data;
    }
    return za == zb;
}

static bool same_shape(const pf_ir_value *a, const pf_ir_value *b)
{
    if (a->ndim < 0 || a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

/* The chain after the conv/matmul output: fills the fused inputs 7..11,
 * the act, the final value and the last absorbed node; kills absorbed nodes
 * only when commit. */
typedef struct tail {
    int last, out;
    pf_ir_act act;
    float act_a, act_b;
    int ys, yzp, r, rs, rzp, ms, mzp;
    int absorbed[8];
    int n_absorbed;
} tail;

static void walk_tail(const qf *f, int node, bool residual_ok, tail *t)
{
    const pf_ir_node *n = &f->g->nodes[node];
    memset(t, 0, sizeof *t);
    t->last = node;
    t->out = n->out[0];
    t->act = n->act;
    t->act_a = n->act_a;
    t->act_b = n->act_b;
    t->ys = t->yzp = t->r = t->rs = t->rzp = t->ms = t->mzp = -1;
    bool added = false;
    for (;;) {
        int c = sole_consumer(f, t->out);
        if (c < 0 || t->n_absorbed >= 6) return;
        const pf_ir_node *cn = &f->g->nodes[c];
        pf_ir_act act;
        float a, b;
        if (cn->in[0] == t->out && cn->op != PF_IR_QUANTIZE_LINEAR && t->act == PF_IR_ACT_NONE &&
            act_node(f, cn, &act, &a, &b)) {
            t->act = act;
            t->act_a = a;
            t->act_b = b;
        } else if (cn->op == PF_IR_ADD && residual_ok && !added && t->act == PF_IR_ACT_NONE &&
                   cn->act == PF_IR_ACT_NONE) {
            int other = cn->in[0] == t->out ? cn->in[1] : cn->in[0];
            if (other == t->out || !same_shape(V(f, other), V(f, t->out))) return;
            int dq = dq_activation(f, other);
            if (dq >= 0) {
                const pf_ir_node *d = &f->g->nodes[dq];
                t->r = d->in[0];
                t->rs = d->in[1];
                t->rzp = in_at(d, 2);
            } else if (V(f, other)->dtype == PF_IR_F32) {
                t->r = other;
            } else {
                return;
            }
            added = true;
        } else if (cn->op == PF_IR_QUANTIZE_LINEAR && cn->in[0] == t->out) {
            int zp = in_at(cn, 2);
            pf_ir_dtype dt = V(f, cn->out[0])->dtype;
            if (!scale_ok(f, cn->in[1], 0) || !zp_ok(f, zp, dt, 0)) return;
            /* Q -> DQ -> residual Add (how quantizers write a ResNet block's
             * conv -> Add): the pair becomes the fused node's m_scale/m_zp
             * requantization and the Add is absorbed. */
            int dq = sole_consumer(f, cn->out[0]);
            if (residual_ok && !added && t->act == PF_IR_ACT_NONE && dq >= 0 &&
                same_qparams(f, cn, &f->g->nodes[dq])) {
                int add = sole_consumer(f, f->g->nodes[dq].out[0]);
                if (add >= 0 && f->g->nodes[add].op == PF_IR_ADD &&
                    f->g->nodes[add].act == PF_IR_ACT_NONE) {
                    t->ms = cn->in[1]; /* kept: its rounding and saturation */
                    t->mzp = zp;
                    t->absorbed[t->n_absorbed++] = c;
                    t->absorbed[t->n_absorbed++] = dq;
                    t->last = dq;
                    t->out = f->g->nodes[dq].out[0];
                    continue;
                }
            }
            t->ys = cn->in[1];
            t->yzp = zp;
            t->absorbed[t->n_absorbed++] = c;
            t->last = c;
            t->out = cn->out[0];
            return;
        } else {
            return;
        }
        t->absorbed[t->n_absorbed++] = c;
        t->last = c;
        t->out = cn->out[0];
    }
}

/* Rewrites node `t->last` into the fused op with inputs in[0..11]. */
static pf_status emit(qf *f, int node, const tail *t, pf_ir_op op, int *in, int n_in,
                      const pf_ir_attr *attr)
{
    pf_ir_graph *g = f->g;
    pf_ir_node *src = &g->nodes[node];
    char *name = NULL, *src_op = NULL;
    size_t ln = strlen(src->name) + 1;
    name = malloc(ln);
    src_op = malloc(16);
    if (!name || !src_op) {
        free(name);
        free(src_op);
        return pf_set_error(PF_ERR_NOMEM, "pf_ir_fuse_quant: out of memory");
    }
    memcpy(name, src->name, ln);
    strcpy(src_op, op == PF_IR_QCONV ? "QConv" : "QMatMul");
    pf_ir_node *dst = &g->nodes[t->last];
    int out = t->out;
    if (dst != src) {
        free(dst->name);
        free(dst->src_op);
    } else {
        free(src->name);
        free(src->src_op);
    }
    memset(dst, 0, sizeof *dst);
    dst->op = op;
    dst->name = name;
    dst->src_op = src_op;
    while (n_in > 0 && in[n_in - 1] < 0) n_in--;
    dst->n_in = n_in;
    for (int i = 0; i < n_in; i++) dst->in[i] = in[i];
    dst->n_out = 1;
    dst->out[0] = out;
    if (attr) dst->attr = *attr;
    dst->act = t->act;
    dst->act_a = t->act_a;
    dst->act_b = t->act_b;
    g->values[out].producer = t->last;
    for (int i = 0; i < t->n_absorbed; i++)
        if (t->absorbed[i] != t->last) g->nodes[t->absorbed[i]].dead = true;
    if (t->last != node) g->nodes[node].dead = true;
    return PF_OK;
}

static pf_status fuse_conv(qf *f, int k, bool *done)
{
    *done = false;
    pf_ir_node *n = &f->g->nodes[k];
    if (n->n_out != 1) return PF_OK;
    int dqx = dq_activation(f, n->in[0]);
    const pf_ir_value *w = V(f, n->in[1]);
    if (dqx < 0 || w->ndim < 3) return PF_OK;
    int64_t m = w->dims[0];
    int dqw = dq_weight(f, n->in[1], 0, m);
    if (dqw < 0) return PF_OK;
    int bias;
    if (!bias_of(f, in_at(&f->g->nodes[k], 2), m, &bias)) return PF_OK;
    n = &f->g->nodes[k]; /* bias_of may have grown the arrays */
    tail t;
    walk_tail(f, k, true, &t);
    const pf_ir_node *x = &f->g->nodes[dqx], *wn = &f->g->nodes[dqw];
    int in[14] = {x->in[0], x->in[1], in_at(x, 2), wn->in[0], wn->in[1], in_at(wn, 2), bias,
                  t.ys, t.yzp, t.r, t.rs, t.rzp, t.ms, t.mzp};
    pf_ir_attr attr = n->attr;
    pf_status st = emit(f, k, &t, PF_IR_QCONV, in, 14, &attr);
    *done = st == PF_OK;
    return st;
}

/* Gemm B [N, K] (trans_b) as a new [K, N] I8 constant with the DQ's params. */
static pf_status fuse_matmul(qf *f, int k, bool *done)
{
    *done = false;
    pf_ir_node *n = &f->g->nodes[k];
    bool gemm = n->op == PF_IR_GEMM;
    if (gemm && (n->attr.gemm.trans_a || n->attr.gemm.alpha != 1.0f ||
                 (in_at(n, 2) >= 0 && n->attr.gemm.beta != 1.0f)))
        return PF_OK;
    int dqx = dq_activation(f, n->in[0]);
    const pf_ir_value *w = V(f, n->in[1]);
    if (dqx < 0 || w->ndim != 2) return PF_OK;
    bool tb = gemm && n->attr.gemm.trans_b;
    int64_t N = tb ? w->dims[0] : w->dims[1], K = tb ? w->dims[1] : w->dims[0];
    int dqw = dq_weight(f, n->in[1], tb ? 0 : 1, N);
    if (dqw < 0) return PF_OK;
    int bias = -1;
    if (gemm && !bias_of(f, in_at(n, 2), N, &bias)) return PF_OK;
    n = &f->g->nodes[k];
    int wq = f->g->nodes[dqw].in[0];
    if (tb) {
        int8_t *d = malloc((size_t)(K * N));
        if (!d) return pf_set_error(PF_ERR_NOMEM, "pf_ir_fuse_quant: out of memory");
        const int8_t *s = V(f, wq)->data;
        for (int64_t i = 0; i < N; i++)
            for (int64_t j = 0; j < K; j++) d[j * N + i] = s[i * K + j];
        int64_t dims[2] = {K, N};
        pf_status st = pf_ir_add_const(f->g, pf_ir_unique_name(f->g, "qweight_t"), PF_IR_I8, 2,
                                       dims, d, (size_t)(K * N), &wq);
        free(d);
        if (st != PF_OK) return st;
        n = &f->g->nodes[k];
    }
    tail t;
    walk_tail(f, k, false, &t);
    const pf_ir_node *x = &f->g->nodes[dqx], *wn = &f->g->nodes[dqw];
    int in[9] = {x->in[0], x->in[1], in_at(x, 2), wq, wn->in[1], in_at(wn, 2), bias, t.ys, t.yzp};
    pf_status st = emit(f, k, &t, PF_IR_QMATMUL, in, 9, NULL);
    *done = st == PF_OK;
    return st;
}

pf_status pf_ir_fuse_quant(pf_ir_graph *g, int *n_fused)
{
    if (n_fused) *n_fused = 0;
    if (!g) return pf_set_error(PF_ERR_INVALID, "pf_ir_fuse_quant: graph is NULL");
    bool any = false;
    for (int k = 0; k < g->n_nodes && !any; k++)
        any = !g->nodes[k].dead && g->nodes[k].op == PF_IR_DEQUANTIZE_LINEAR;
    if (!any) return PF_OK;
    pf_ir_recount(g);
    qf f = {g, NULL};
    /* Room for the constants this pass adds (bias, transposed weights): ids
     * past n_values at entry have no consumer yet. */
    f.use = malloc(sizeof(int) * (size_t)(g->n_values + 2 * g->n_nodes + 1));
    if (!f.use) return pf_set_error(PF_ERR_NOMEM, "pf_ir_fuse_quant: out of memory");
    for (int v = 0; v < g->n_values + 2 * g->n_nodes + 1; v++) f.use[v] = -1;
    for (int k = 0; k < g->n_nodes; k++) {
        const pf_ir_node *n = &g->nodes[k];
        if (n->dead) continue;
        for (int i = 0; i < n->n_in; i++)
            if (n->in[i] >= 0 && f.use[n->in[i]] < 0) f.use[n->in[i]] = k;
    }
    int cnt = 0;
    pf_status st = PF_OK;
    int n_nodes = g->n_nodes;
    for (int k = 0; k < n_nodes && st == PF_OK; k++) {
        const pf_ir_node *n = &g->nodes[k];
        if (n->dead) continue;
        bool done = false;
        if (n->op == PF_IR_CONV && n->n_in >= 2) st = fuse_conv(&f, k, &done);
        else if ((n->op == PF_IR_MATMUL || n->op == PF_IR_GEMM) && n->n_in >= 2)
            st = fuse_matmul(&f, k, &done);
        if (done) {
            cnt++;
            pf_ir_recount(g);
        }
    }
    free(f.use);
    pf_ir_recount(g);
    if (n_fused) *n_fused = cnt;
    return st;
}
