/* The CPU kernel table: pf_ir_op -> kernel, and the node entry point. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../../core/error.h"
#include "kernels.h"

typedef struct cpu_entry {
    pf_nn_cpu_fn fn;
    pf_nn_cpu_scratch_fn scratch;
} cpu_entry;

static cpu_entry entry_for(pf_ir_op op)
{
    cpu_entry e = {NULL, NULL};
    switch (op) {
    case PF_IR_CONV: e.fn = pf_nn_cpu_conv; e.scratch = pf_nn_cpu_conv_scratch; break;
    case PF_IR_CONV_TRANSPOSE:
        e.fn = pf_nn_cpu_conv_transpose;
        e.scratch = pf_nn_cpu_conv_transpose_scratch;
        break;
    case PF_IR_GEMM: e.fn = pf_nn_cpu_gemm; break;
    case PF_IR_MATMUL: e.fn = pf_nn_cpu_matmul; break;
    case PF_IR_MAXPOOL: case PF_IR_AVGPOOL: case PF_IR_GLOBAL_AVGPOOL: case PF_IR_GLOBAL_MAXPOOL:
        e.fn = pf_nn_cpu_pool;
        break;
    case PF_IR_BATCHNORM: e.fn = pf_nn_cpu_batchnorm; break;
    case PF_IR_RESIZE: e.fn = pf_nn_cpu_resize; break;
    case PF_IR_RELU: case PF_IR_SIGMOID: case PF_IR_TANH: case PF_IR_HARD_SIGMOID:
    case PF_IR_HARD_SWISH: case PF_IR_LEAKY_RELU: case PF_IR_CLIP: case PF_IR_ELU:
    case PF_IR_SELU: case PF_IR_SOFTPLUS: case PF_IR_SOFTSIGN: case PF_IR_ABS: case PF_IR_NEG:
    case PF_IR_EXP: case PF_IR_LOG: case PF_IR_SQRT: case PF_IR_RECIPROCAL: case PF_IR_FLOOR:
    case PF_IR_CEIL: case PF_IR_ROUND: case PF_IR_ERF: case PF_IR_SIN: case PF_IR_COS:
    case PF_IR_NOT: case PF_IR_SIGN: case PF_IR_IDENTITY:
        e.fn = pf_nn_cpu_unary;
        break;
    case PF_IR_CAST: e.fn = pf_nn_cpu_cast; break;
    case PF_IR_ADD: case PF_IR_SUB: case PF_IR_MUL: case PF_IR_DIV: case PF_IR_POW:
    case PF_IR_MAX: case PF_IR_MIN: case PF_IR_MOD: case PF_IR_PRELU: case PF_IR_EQUAL:
    case PF_IR_LESS: case PF_IR_GREATER: case PF_IR_LESS_OR_EQUAL: case PF_IR_GREATER_OR_EQUAL:
    case PF_IR_AND: case PF_IR_OR: case PF_IR_XOR:
        e.fn = pf_nn_cpu_binary;
        break;
    case PF_IR_WHERE: e.fn = pf_nn_cpu_where; break;
    case PF_IR_SUM: case PF_IR_MEAN_N: e.fn = pf_nn_cpu_variadic; break;
    case PF_IR_REDUCE_MEAN: case PF_IR_REDUCE_SUM: case PF_IR_REDUCE_MAX: case PF_IR_REDUCE_MIN:
    case PF_IR_REDUCE_PROD: case PF_IR_REDUCE_L2: case PF_IR_REDUCE_SUM_SQUARE:
        e.fn = pf_nn_cpu_reduce;
        break;
    case PF_IR_ARGMAX: case PF_IR_ARGMIN: e.fn = pf_nn_cpu_argminmax; break;
    case PF_IR_SOFTMAX: case PF_IR_LOG_SOFTMAX: e.fn = pf_nn_cpu_softmax; break;
    case PF_IR_CONCAT: e.fn = pf_nn_cpu_concat; break;
    case PF_IR_RESHAPE: e.fn = pf_nn_cpu_reshape; break;
    case PF_IR_TRANSPOSE: e.fn = pf_nn_cpu_transpose; break;
    case PF_IR_SLICE: e.fn = pf_nn_cpu_slice; break;
    case PF_IR_PAD: e.fn = pf_nn_cpu_pad; break;
    case PF_IR_GATHER: e.fn = pf_nn_cpu_gather; break;
    case PF_IR_EXPAND: e.fn = pf_nn_cpu_expand; break;
    case PF_IR_TILE: e.fn = pf_nn_cpu_tile; break;
    case PF_IR_SPLIT: e.fn = pf_nn_cpu_split; break;
    case PF_IR_DEPTH_TO_SPACE: case PF_IR_SPACE_TO_DEPTH: e.fn = pf_nn_cpu_depth_space; break;
    case PF_IR_SHAPE: e.fn = pf_nn_cpu_shape; break;
    case PF_IR_CONSTANT_OF_SHAPE: e.fn = pf_nn_cpu_constant_of_shape; break;
    case PF_IR_QUANTIZE_LINEAR: e.fn = pf_nn_cpu_quantize; break;
    case PF_IR_DEQUANTIZE_LINEAR: e.fn = pf_nn_cpu_dequantize; break;
    case PF_IR_QLINEAR_CONV: case PF_IR_CONV_INTEGER: case PF_IR_QCONV:
        e.fn = pf_nn_cpu_qconv;
        e.scratch = pf_nn_cpu_qconv_scratch;
        break;
    case PF_IR_QLINEAR_MATMUL: case PF_IR_MATMUL_INTEGER: case PF_IR_QMATMUL:
        e.fn = pf_nn_cpu_qmatmul;
        break;
    default: break;
    }
    return e;
}

bool pf_nn_cpu_supports(const pf_ir_graph *g, int node, char *why, size_t why_size)
{
    const pf_ir_node *n = &g->nodes[node];
    if (!entry_for(n->op).fn) {
        if (why && why_size) snprintf(why, why_size, "no CPU kernel for %s", pf_ir_op_name(n->op));
        return false;
    }
    return true;
}

size_t pf_nn_cpu_scratch_bytes(const pf_ir_graph *g, int node)
{
    cpu_entry e = entry_for(g->nodes[node].op);
    return e.scratch ? e.scratch(g, &g->nodes[node]) : 0;
}

pf_status pf_nn_cpu_run_node(const pf_ir_graph *g, int node, const void *const *in,
                             void *const *out, pf_threadpool *pool, void *scratch,
                             size_t scratch_bytes)
{
    const pf_ir_node *n = &g->nodes[node];
    cpu_entry e = entry_for(n->op);
    char desc[256];
    if (!e.fn)
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: no CPU kernel for %s",
                            pf_ir_node_desc(g, node, desc, sizeof desc), pf_ir_op_name(n->op));
    pf_nn_cpu_args a;
    memset(&a, 0, sizeof a);
    a.g = g;
    a.node = n;
    for (int i = 0; i < n->n_in; i++) {
        a.vin[i] = n->in[i] >= 0 ? &g->values[n->in[i]] : NULL;
        a.in[i] = n->in[i] >= 0 ? in[i] : NULL;
    }
    for (int i = 0; i < n->n_out; i++) {
        a.vout[i] = &g->values[n->out[i]];
        a.out[i] = out[i];
    }
    a.pool = pool;
    a.scratch = scratch;
    a.scratch_bytes = scratch_bytes;
    size_t need = e.scratch ? e.scratch(g, n) : 0;
    if (need > scratch_bytes)
        return pf_set_error(PF_ERR_INTERNAL, "%s: scratch %zu bytes < %zu needed",
                            pf_ir_node_desc(g, node, desc, sizeof desc), scratch_bytes, need);
    return e.fn(&a);
}

pf_status pf_nn_cpu_fail(const pf_nn_cpu_args *a, pf_status st, const char *fmt, ...)
{
    char desc[256], msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int id = (int)(a->node - a->g->nodes);
    return pf_set_error(st, "%s: %s", pf_ir_node_desc(a->g, id, desc, sizeof desc), msg);
}
