/* Specialisation: a copy of the graph for one batch size with every shape
 * concrete. Shape -> Gather -> Concat -> Reshape style subgraphs become
 * constants once the batch is known (constant folding), which resolves the
 * "must be constant" inputs they feed; anything still unknown afterwards is
 * refused, naming the node. */
#include <stdio.h>

#include "../core/error.h"
#include "ir.h"

static bool has_pending_attr_input(const pf_ir_graph *g, const pf_ir_node *n, int *which)
{
    if (n->op == PF_IR_CONSTANT_OF_SHAPE) {
        if (n->in[0] >= 0 && !g->values[n->in[0]].data) {
            *which = 0;
            return true;
        }
        return false;
    }
    switch (n->op) {
    case PF_IR_RESHAPE: case PF_IR_EXPAND: case PF_IR_TILE: case PF_IR_SLICE: case PF_IR_PAD:
    case PF_IR_RESIZE: case PF_IR_CLIP: case PF_IR_SPLIT: case PF_IR_REDUCE_MEAN:
    case PF_IR_REDUCE_SUM: case PF_IR_REDUCE_MAX: case PF_IR_REDUCE_MIN: case PF_IR_REDUCE_PROD:
    case PF_IR_REDUCE_L2: case PF_IR_REDUCE_SUM_SQUARE:
        for (int i = 1; i < n->n_in; i++)
            if (n->in[i] >= 0 && !g->values[n->in[i]].data) {
                *which = i;
                return true;
            }
        return false;
    default: return false;
    }
}

static bool concrete(const pf_ir_value *v)
{
    if (v->ndim < 0) return false;
    for (int i = 0; i < v->ndim; i++)
        if (v->dims[i] < 0) return false;
    return true;
}

/* Every value a live node touches must be concrete; the first node with an
 * unknown output is named, with the reason when a computed input that must
 * be constant is the cause. */
static pf_status check_concrete(const pf_ir_graph *g, int64_t batch)
{
    char d[192];
    for (int k = 0; k < g->n_nodes; k++) {
        const pf_ir_node *n = &g->nodes[k];
        if (n->dead) continue;
        int which = -1;
        if (has_pending_attr_input(g, n, &which)) {
            const pf_ir_value *v = &g->values[n->in[which]];
            int p = v->producer;
            char pd[192] = "a graph input";
            if (p >= 0) pf_ir_node_desc(g, p, pd, sizeof pd);
            return pf_set_error(PF_ERR_UNSUPPORTED,
                                "%s: input %d '%s' must be constant but is computed at runtime "
                                "(by %s) even with batch %lld",
                                pf_ir_node_desc(g, k, d, sizeof d), which, v->name, pd,
                                (long long)batch);
        }
        for (int i = 0; i < n->n_out; i++) {
            const pf_ir_value *v = &g->values[n->out[i]];
            if (!concrete(v))
                return pf_set_error(PF_ERR_UNSUPPORTED,
                                    "%s: output '%s' has no concrete shape with batch %lld",
                                    pf_ir_node_desc(g, k, d, sizeof d), v->name,
                                    (long long)batch);
        }
    }
    for (int i = 0; i < g->n_outputs; i++)
        if (!concrete(&g->values[g->outputs[i]]))
            return pf_set_error(PF_ERR_UNSUPPORTED,
                                "%s: graph output '%s' has no concrete shape with batch %lld",
                                g->name, g->values[g->outputs[i]].name, (long long)batch);
    return PF_OK;
}

pf_status pf_ir_specialize(const pf_ir_graph *g, int64_t batch, pf_ir_graph **out)
{
    if (!g || !out) return pf_set_error(PF_ERR_INVALID, "pf_ir_specialize: NULL argument");
    *out = NULL;
    if (batch < 1)
        return pf_set_error(PF_ERR_INVALID, "%s: batch %lld (must be >= 1)", g->name,
                            (long long)batch);
    pf_ir_graph *s = NULL;
    pf_status st = pf_ir_graph_clone(g, &s);
    if (st != PF_OK) return st;
    for (int i = 0; i < s->n_inputs; i++) {
        pf_ir_value *v = &s->values[s->inputs[i]];
        if (v->ndim < 0) {
            st = pf_set_error(PF_ERR_UNSUPPORTED, "%s: graph input '%s' has an unknown rank",
                              g->name, v->name);
            goto fail;
        }
        for (int d = 0; d < v->ndim; d++)
            if (v->dims[d] == PF_IR_DIM_BATCH) v->dims[d] = batch;
    }
    st = pf_ir_infer_shapes(s);
    if (st == PF_OK) st = pf_ir_fold_constants(s, NULL);
    if (st == PF_OK) st = pf_ir_infer_shapes(s);
    if (st == PF_OK) st = check_concrete(s, batch);
    if (st == PF_OK) st = pf_ir_compact(s);
    if (st != PF_OK) goto fail;
    *out = s;
    return PF_OK;
fail:
    pf_ir_graph_destroy(&s);
    return st;
}
