/* Work estimates per node, for reports and scheduling. Multiply-accumulate
 * ops count 2; elementwise and reduction ops one per element computed; pure
 * data movement (reshape, transpose, slice, concat, gather...) counts 0. */
#include "ir.h"

static double numel_d(const pf_ir_value *v)
{
    int64_t n = pf_ir_value_numel(v);
    return n < 0 ? -1.0 : (double)n;
}

double pf_ir_node_flops(const pf_ir_graph *g, int node)
{
    if (!g || node < 0 || node >= g->n_nodes) return 0.0;
    const pf_ir_node *n = &g->nodes[node];
    if (n->dead || n->out[0] < 0) return 0.0;
    const pf_ir_value *y = &g->values[n->out[0]];
    const pf_ir_value *x = n->n_in > 0 && n->in[0] >= 0 ? &g->values[n->in[0]] : NULL;
    const pf_ir_value *w = n->n_in > 1 && n->in[1] >= 0 ? &g->values[n->in[1]] : NULL;
    double out = numel_d(y);
    if (out < 0) return 0.0;
    switch (n->op) {
    case PF_IR_CONV: {
        /* Each output element: (C/g) * kernel MACs. */
        double per = w ? numel_d(w) / (double)(w->dims[0] ? w->dims[0] : 1) : 0.0;
        return per < 0 ? 0.0 : 2.0 * out * per;
    }
    case PF_IR_QCONV: case PF_IR_QLINEAR_CONV: case PF_IR_CONV_INTEGER: {
        /* As CONV, the weight at its QDQ position (int8 ops count as ops). */
        const int wi = n->op == PF_IR_CONV_INTEGER ? 1 : 3;
        const pf_ir_value *qw = n->n_in > wi && n->in[wi] >= 0 ? &g->values[n->in[wi]] : NULL;
        double per = qw ? numel_d(qw) / (double)(qw->dims[0] ? qw->dims[0] : 1) : 0.0;
        return per < 0 ? 0.0 : 2.0 * out * per;
    }
    case PF_IR_QMATMUL: case PF_IR_QLINEAR_MATMUL: case PF_IR_MATMUL_INTEGER:
        if (!x || x->ndim < 1) return 0.0;
        return 2.0 * out * (double)x->dims[x->ndim - 1];
    case PF_IR_CONV_TRANSPOSE: {
        /* Each input element scatters into (M/g) * kernel outputs. */
        double xin = x ? numel_d(x) : -1.0;
        double per = w ? numel_d(w) / (double)(w->dims[0] ? w->dims[0] : 1) : 0.0;
        return xin < 0 || per < 0 ? 0.0 : 2.0 * xin * per;
    }
    case PF_IR_GEMM: {
        if (!x || x->ndim != 2) return 0.0;
        double k = (double)(n->attr.gemm.trans_a ? x->dims[0] : x->dims[1]);
        return 2.0 * out * k;
    }
    case PF_IR_MATMUL: {
        if (!x || x->ndim < 1) return 0.0;
        return 2.0 * out * (double)x->dims[x->ndim - 1];
    }
    case PF_IR_MAXPOOL: case PF_IR_AVGPOOL: {
        double k = 1.0;
        for (int i = 0; i < n->attr.pool.nsp; i++) k *= (double)n->attr.pool.kernel[i];
        return out * k;
    }
    case PF_IR_GLOBAL_AVGPOOL: case PF_IR_GLOBAL_MAXPOOL: case PF_IR_REDUCE_MEAN:
    case PF_IR_REDUCE_SUM: case PF_IR_REDUCE_MAX: case PF_IR_REDUCE_MIN: case PF_IR_REDUCE_PROD:
    case PF_IR_REDUCE_L2: case PF_IR_REDUCE_SUM_SQUARE: case PF_IR_ARGMAX: case PF_IR_ARGMIN: {
        double xin = x ? numel_d(x) : -1.0;
        return xin < 0 ? 0.0 : xin;
    }
    case PF_IR_RESHAPE: case PF_IR_TRANSPOSE: case PF_IR_SLICE: case PF_IR_PAD:
    case PF_IR_GATHER: case PF_IR_EXPAND: case PF_IR_TILE: case PF_IR_SHAPE:
    case PF_IR_CONSTANT_OF_SHAPE: case PF_IR_SPLIT: case PF_IR_DEPTH_TO_SPACE:
    case PF_IR_SPACE_TO_DEPTH: case PF_IR_CONCAT: case PF_IR_IDENTITY: case PF_IR_CAST:
        return 0.0;
    case PF_IR_SUM: case PF_IR_MEAN_N:
        return out * (double)(n->n_in > 1 ? n->n_in - 1 : 1);
    default:
        return out;
    }
}
