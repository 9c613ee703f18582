/* Graph rewrites run after specialisation: batch-norm folding, activation
 * fusion, identity bypass and dead-node removal, and the driver running all
 * of them (with constant folding) to a fixed point. Rewrites keep the node
 * order valid: a merged node writes the value its absorbed successor wrote,
 * whose consumers all come later anyway. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "ir.h"

static const pf_ir_value *const_f32(const pf_ir_graph *g, int v, int64_t numel)
{
    if (v < 0) return NULL;
    const pf_ir_value *val = &g->values[v];
    if (!val->data || val->dtype != PF_IR_F32 || pf_ir_value_numel(val) != numel) return NULL;
    return val;
}

/* The producer of value v when v feeds exactly one node and nothing else. */
static int sole_producer(const pf_ir_graph *g, int v)
{
    const pf_ir_value *val = &g->values[v];
    if (val->producer < 0 || val->is_output || val->n_uses != 1) return -1;
    if (g->nodes[val->producer].dead) return -1;
    return val->producer;
}

static pf_status fold_one_bn(pf_ir_graph *g, int bn_id, bool *done)
{
    pf_ir_node *bn = &g->nodes[bn_id];
    int x = bn->in[0];
    if (x < 0) return PF_OK;
    int p = sole_producer(g, x);
    if (p < 0) return PF_OK;
    pf_ir_node *cv = &g->nodes[p];
    if ((cv->op != PF_IR_CONV && cv->op != PF_IR_CONV_TRANSPOSE) || cv->act != PF_IR_ACT_NONE ||
        cv->out[0] != x)
        return PF_OK;
    const pf_ir_value *xv = &g->values[x];
    if (xv->ndim < 2 || xv->dims[1] < 1) return PF_OK;
    int64_t m = xv->dims[1];
    const pf_ir_value *sc = const_f32(g, bn->in[1], m), *bb = const_f32(g, bn->in[2], m),
                      *mean = const_f32(g, bn->in[3], m), *var = const_f32(g, bn->in[4], m);
    if (!sc || !bb || !mean || !var) return PF_OK;
    const pf_ir_value *w = cv->in[1] >= 0 ? &g->values[cv->in[1]] : NULL;
    if (!w || !w->data || w->dtype != PF_IR_F32 || w->ndim < 3) return PF_OK;
    const pf_ir_value *b = cv->n_in > 2 && cv->in[2] >= 0 ? &g->values[cv->in[2]] : NULL;
    if (b && !const_f32(g, cv->in[2], m)) return PF_OK;
    int64_t wn = pf_ir_value_numel(w);
    int64_t group = cv->attr.conv.group ? cv->attr.conv.group : 1;
    float *nw = malloc(sizeof(float) * (size_t)wn);
    float *nb = malloc(sizeof(float) * (size_t)m);
    double *s = malloc(sizeof(double) * (size_t)m);
    if (!nw || !nb || !s) {
        free(nw);
        free(nb);
        free(s);
        return pf_set_error(PF_ERR_NOMEM, "batch-norm folding: out of memory");
    }
    const float *scale = sc->data, *bias = bb->data, *mu = mean->data, *va = var->data;
    for (int64_t o = 0; o < m; o++) {
        s[o] = (double)scale[o] / sqrt((double)va[o] + (double)bn->attr.bn.epsilon);
        double ob = b ? ((const float *)b->data)[o] : 0.0;
        nb[o] = (float)((ob - (double)mu[o]) * s[o] + (double)bias[o]);
    }
    const float *wd = w->data;
    int64_t d0 = w->dims[0], d1 = w->dims[1], inner = wn / (d0 * d1);
    for (int64_t i = 0; i < d0; i++)
        for (int64_t j = 0; j < d1; j++) {
            /* Output channel of this weight slice: conv [M, C/g, k],
             * transposed conv [C, M/g, k] grouped by input channel. */
            int64_t o = cv->op == PF_IR_CONV ? i : (i / (d0 / group)) * d1 + j;
            const float *src = wd + (i * d1 + j) * inner;
            float *dst = nw + (i * d1 + j) * inner;
            for (int64_t t = 0; t < inner; t++) dst[t] = (float)((double)src[t] * s[o]);
        }
    free(s);
    int wid = -1, bid = -1;
    char wname[256], bname[256];
    snprintf(wname, sizeof wname, "%s_bnfold", w->name);
    snprintf(bname, sizeof bname, "%s_bnfold_bias", g->values[bn->out[0]].name);
    const char *wn_u = pf_ir_unique_name(g, wname);
    pf_status st = wn_u ? PF_OK : pf_set_error(PF_ERR_NOMEM, "batch-norm folding: out of memory");
    int64_t wdims[PF_IR_MAX_RANK];
    int wndim = w->ndim;
    memcpy(wdims, w->dims, sizeof wdims);
    if (st == PF_OK)
        st = pf_ir_add_const(g, wn_u, PF_IR_F32, wndim, wdims, nw, sizeof(float) * (size_t)wn,
                             &wid);
    const char *bn_u = st == PF_OK ? pf_ir_unique_name(g, bname) : NULL;
    if (st == PF_OK && !bn_u) st = pf_set_error(PF_ERR_NOMEM, "batch-norm folding: out of memory");
    if (st == PF_OK) st = pf_ir_add_const(g, bn_u, PF_IR_F32, 1, &m, nb, sizeof(float) * (size_t)m, &bid);
    free(nw);
    free(nb);
    if (st != PF_OK) return st;
    /* add_const may have moved the arrays. */
    bn = &g->nodes[bn_id];
    cv = &g->nodes[p];
    g->values[cv->in[1]].n_uses--;
    if (cv->n_in > 2 && cv->in[2] >= 0) g->values[cv->in[2]].n_uses--;
    cv->in[1] = wid;
    if (cv->n_in < 3) cv->n_in = 3;
    cv->in[2] = bid;
    g->values[wid].n_uses++;
    g->values[bid].n_uses++;
    cv->act = bn->act;
    cv->act_a = bn->act_a;
    cv->act_b = bn->act_b;
    cv->out[0] = bn->out[0];
    g->values[bn->out[0]].producer = p;
    g->values[x].producer = -1;
    bn->dead = true;
    for (int i = 0; i < bn->n_in; i++)
        if (bn->in[i] >= 0 && g->values[bn->in[i]].n_uses > 0) g->values[bn->in[i]].n_uses--;
    *done = true;
    return PF_OK;
}

pf_status pf_ir_fold_batchnorm(pf_ir_graph *g, int *n_folded)
{
    if (n_folded) *n_folded = 0;
    if (!g) return pf_set_error(PF_ERR_INVALID, "pf_ir_fold_batchnorm: graph is NULL");
    int cnt = 0;
    for (int k = 0; k < g->n_nodes; k++) {
        if (g->nodes[k].dead || g->nodes[k].op != PF_IR_BATCHNORM) continue;
        bool done = false;
        pf_status st = fold_one_bn(g, k, &done);
        if (st != PF_OK) return st;
        cnt += done;
    }
    pf_ir_recount(g);
    if (n_folded) *n_folded = cnt;
    return PF_OK;
}

static bool allows_act(pf_ir_op op)
{
    switch (op) {
    case PF_IR_CONV: case PF_IR_CONV_TRANSPOSE: case PF_IR_GEMM: case PF_IR_MATMUL:
    case PF_IR_BATCHNORM: case PF_IR_ADD: case PF_IR_SUB: case PF_IR_MUL: case PF_IR_DIV:
        return true;
    default: return false;
    }
}

/* The fused form of an activation node; false when it has none. */
bool pf_ir_act_of(const pf_ir_graph *g, const pf_ir_node *n, pf_ir_act *act, float *a, float *b)
{
    *a = 0.0f;
    *b = 0.0f;
    switch (n->op) {
    case PF_IR_RELU: *act = PF_IR_ACT_RELU; return true;
    case PF_IR_SIGMOID: *act = PF_IR_ACT_SIGMOID; return true;
    case PF_IR_TANH: *act = PF_IR_ACT_TANH; return true;
    case PF_IR_HARD_SWISH: *act = PF_IR_ACT_HARD_SWISH; return true;
    case PF_IR_LEAKY_RELU: *act = PF_IR_ACT_LEAKY_RELU; *a = n->attr.unary.alpha; return true;
    case PF_IR_HARD_SIGMOID:
        *act = PF_IR_ACT_HARD_SIGMOID;
        *a = n->attr.unary.alpha;
        *b = n->attr.unary.beta;
        return true;
    case PF_IR_CLIP:
        /* Only constant bounds (folding has moved them into the attr). */
        for (int i = 1; i < n->n_in; i++)
            if (n->in[i] >= 0) return false;
        (void)g;
        *act = PF_IR_ACT_CLIP;
        *a = n->attr.unary.alpha;
        *b = n->attr.unary.beta;
        return true;
    default: return false;
    }
}

pf_status pf_ir_fuse_activations(pf_ir_graph *g, int *n_fused)
{
    if (n_fused) *n_fused = 0;
    if (!g) return pf_set_error(PF_ERR_INVALID, "pf_ir_fuse_activations: graph is NULL");
    int cnt = 0;
    for (int k = 0; k < g->n_nodes; k++) {
        pf_ir_node *an = &g->nodes[k];
        pf_ir_act act;
        float a, b;
        if (an->dead || an->n_in < 1 || an->in[0] < 0 || !pf_ir_act_of(g, an, &act, &a, &b)) continue;
        int x = an->in[0];
        int p = sole_producer(g, x);
        if (p < 0) continue;
        pf_ir_node *pn = &g->nodes[p];
        if (!allows_act(pn->op) || pn->act != PF_IR_ACT_NONE || pn->out[0] != x) continue;
        if (g->values[x].dtype != PF_IR_F32 || g->values[an->out[0]].dtype != PF_IR_F32) continue;
        pn->act = act;
        pn->act_a = a;
        pn->act_b = b;
        pn->out[0] = an->out[0];
        g->values[an->out[0]].producer = p;
        g->values[x].producer = -1;
        g->values[x].n_uses = 0;
        an->dead = true;
        cnt++;
    }
    pf_ir_recount(g);
    if (n_fused) *n_fused = cnt;
    return PF_OK;
}

/* The value v stands for once bypassed identities are followed (alias[v] < 0: itself); compresses
 * the path so chains of identities resolve in amortised constant time. */
static int resolve_alias(int *alias, int v)
{
    int r = v;
    while (alias[r] >= 0) r = alias[r];
    while (alias[v] >= 0) {
        int next = alias[v];
        alias[v] = r;
        v = next;
    }
    return r;
}

pf_status pf_ir_remove_dead(pf_ir_graph *g, int *n_removed)
{
    if (n_removed) *n_removed = 0;
    if (!g) return pf_set_error(PF_ERR_INVALID, "pf_ir_remove_dead: graph is NULL");
    int cnt = 0;
    pf_ir_recount(g);
    /* Identities whose output is private are bypassed through an alias map applied to every
     * input in one sweep (rewriting the consumers and recounting per identity made a chain of
     * 100k identities quadratic). */
    int *alias = malloc(sizeof(int) * (size_t)(g->n_values ? g->n_values : 1));
    if (!alias) return pf_set_error(PF_ERR_NOMEM, "pf_ir_remove_dead: out of memory");
    for (int i = 0; i < g->n_values; i++) alias[i] = -1;
    bool any_alias = false;
    for (int k = 0; k < g->n_nodes; k++) {
        pf_ir_node *n = &g->nodes[k];
        if (n->dead || n->op != PF_IR_IDENTITY || n->in[0] < 0) continue;
        int x = resolve_alias(alias, n->in[0]), y = n->out[0];
        if (g->values[x].dtype != g->values[y].dtype || g->values[y].is_output) continue;
        alias[y] = x;
        n->dead = true;
        any_alias = true;
        cnt++;
    }
    if (any_alias) {
        for (int k = 0; k < g->n_nodes; k++) {
            pf_ir_node *n = &g->nodes[k];
            if (n->dead) continue;
            for (int i = 0; i < n->n_in; i++)
                if (n->in[i] >= 0) n->in[i] = resolve_alias(alias, n->in[i]);
        }
        pf_ir_recount(g);
    }
    free(alias);
    /* An identity writing a graph output: the output's name must survive, so x's producer
     * writes y directly when x is private to this identity. At most one per graph output. */
    for (int k = 0; k < g->n_nodes; k++) {
        pf_ir_node *n = &g->nodes[k];
        if (n->dead || n->op != PF_IR_IDENTITY || n->in[0] < 0) continue;
        int x = n->in[0], y = n->out[0];
        if (g->values[x].dtype != g->values[y].dtype || !g->values[y].is_output) continue;
        int p = sole_producer(g, x);
        if (p < 0) continue;
        pf_ir_node *pn = &g->nodes[p];
        for (int i = 0; i < pn->n_out; i++)
            if (pn->out[i] == x) pn->out[i] = y;
        n->dead = true;
        cnt++;
        /* Kept current by hand (a recount per identity would be quadratic again). */
        g->values[y].producer = p;
        g->values[x].producer = -1;
        g->values[x].n_uses = 0;
    }
    /* Consumers come after producers: one backward sweep finds every node
     * whose outputs end up unused. */
    for (int k = g->n_nodes - 1; k >= 0; k--) {
        pf_ir_node *n = &g->nodes[k];
        if (n->dead) continue;
        bool used = false;
        for (int i = 0; i < n->n_out; i++) {
            const pf_ir_value *v = &g->values[n->out[i]];
            used = used || v->n_uses > 0 || v->is_output;
        }
        if (used) continue;
        n->dead = true;
        cnt++;
        for (int i = 0; i < n->n_in; i++)
            if (n->in[i] >= 0 && g->values[n->in[i]].n_uses > 0) g->values[n->in[i]].n_uses--;
    }
    pf_status st = pf_ir_compact(g);
    if (st != PF_OK) return st;
    if (n_removed) *n_removed = cnt;
    return PF_OK;
}

pf_status pf_ir_optimize(pf_ir_graph *g, pf_ir_opt_report *report)
{
    pf_ir_opt_report r;
    memset(&r, 0, sizeof r);
    if (report) *report = r;
    if (!g) return pf_set_error(PF_ERR_INVALID, "pf_ir_optimize: graph is NULL");
    for (int round = 0; round < 8; round++) {
        int f = 0, b = 0, a = 0, d = 0, q = 0;
        /* Before folding: folding would turn the int8 weights' DequantizeLinear into floats. */
        pf_status st = pf_ir_fuse_quant(g, &q);
        if (st == PF_OK) st = pf_ir_fold_constants(g, &f);
        if (st == PF_OK) st = pf_ir_fold_batchnorm(g, &b);
        if (st == PF_OK) st = pf_ir_fuse_activations(g, &a);
        if (st == PF_OK) st = pf_ir_remove_dead(g, &d);
        if (st != PF_OK) return st;
        r.folded += f;
        r.bn_folded += b;
        r.act_fused += a;
        r.removed += d;
        r.quant_fused += q;
        if (!f && !b && !a && !d && !q) break;
    }
    if (report) *report = r;
    return pf_ir_validate(g);
}
