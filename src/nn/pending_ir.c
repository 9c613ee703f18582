/* TEMPORARY placeholders so the library links while this part is written;
 * the owner deletes this file when the real code lands. */
#include <stdarg.h>
#include "ir.h"
#include "../core/error.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"

size_t pf_ir_dtype_size(pf_ir_dtype t)
{
    return 0;
}

const char * pf_ir_dtype_name(pf_ir_dtype t)
{
    return NULL;
}

const char * pf_ir_op_name(pf_ir_op op)
{
    return NULL;
}

pf_status pf_ir_graph_create(const char *name, pf_ir_graph **out)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_ir_graph_create");
}

void pf_ir_graph_destroy(pf_ir_graph **g)
{
    
}

pf_status pf_ir_graph_clone(const pf_ir_graph *g, pf_ir_graph **out)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_ir_graph_clone");
}

pf_status pf_ir_add_value(pf_ir_graph *g, const char *name, pf_ir_dtype dtype, int ndim, const int64_t *dims, int *id)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_ir_add_value");
}

pf_status pf_ir_add_const(pf_ir_graph *g, const char *name, pf_ir_dtype dtype, int ndim, const int64_t *dims, const void *data, size_t nbytes, int *id)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_ir_add_const");
}

const char * pf_ir_unique_name(pf_ir_graph *g, const char *prefix)
{
    return NULL;
}

pf_status pf_ir_add_node(pf_ir_graph *g, pf_ir_op op, const char *name, const char *src_op, const int *in, int n_in, const int *out, int n_out, const pf_ir_attr *attr, int *node_id)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_ir_add_node");
}

pf_status pf_ir_mark_input(pf_ir_graph *g, int value)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_ir_mark_input");
}

pf_status pf_ir_mark_output(pf_ir_graph *g, int value)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_ir_mark_output");
}

void pf_ir_recount(pf_ir_graph *g)
{
    
}

pf_status pf_ir_compact(pf_ir_graph *g)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_ir_compact");
}

pf_status pf_ir_validate(const pf_ir_graph *g)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_ir_validate");
}

int64_t pf_ir_value_numel(const pf_ir_value *v)
{
    return 0;
}

size_t pf_ir_value_nbytes(const pf_ir_value *v)
{
    return 0;
}

const char * pf_ir_node_desc(const pf_ir_graph *g, int node, char *buf, size_t size)
{
    return NULL;
}

pf_status pf_ir_infer_shapes(pf_ir_graph *g)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_ir_infer_shapes");
}

pf_status pf_ir_infer_node(pf_ir_graph *g, int node)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_ir_infer_node");
}

pf_status pf_ir_specialize(const pf_ir_graph *g, int64_t batch, pf_ir_graph **out)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_ir_specialize");
}

pf_status pf_ir_fold_constants(pf_ir_graph *g, int *n_folded)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_ir_fold_constants");
}

pf_status pf_ir_fold_batchnorm(pf_ir_graph *g, int *n_folded)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_ir_fold_batchnorm");
}

pf_status pf_ir_fuse_activations(pf_ir_graph *g, int *n_fused)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_ir_fuse_activations");
}

pf_status pf_ir_remove_dead(pf_ir_graph *g, int *n_removed)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_ir_remove_dead");
}

pf_status pf_ir_optimize(pf_ir_graph *g, pf_ir_opt_report *report)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_ir_optimize");
}

pf_status pf_ir_plan_memory(const pf_ir_graph *g, size_t align, const size_t *elem_size, pf_ir_mem_plan *out)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_ir_plan_memory");
}

void pf_ir_mem_plan_free(pf_ir_mem_plan *p)
{
    
}

double pf_ir_node_flops(const pf_ir_graph *g, int node)
{
    return 0;
}
