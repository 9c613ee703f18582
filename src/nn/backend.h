/* Private: what an nn executor backend implements (CPU: src/nn/cpu/exec_cpu.c,
 * CUDA: src/nn/cuda/exec_cuda.c).
 *
 * exec.c (the public pf_nn_exec) owns the model reference and a plan cache
 * keyed by batch size. For each batch size it asks pf_model for the graph
 * specialised to that batch and optimised (concrete shapes, constants
 * folded, BN folded, activations fused) and hands it to plan_create; the
 * graph outlives the plan. A backend ctx is per executor (weights on the
 * device are shared by all its plans: a constant of the same name and same
 * bytes is uploaded once). exec.c validates every argument of a run (count,
 * dtype F32/F16/I32, contiguity, shape vs the plan's graph inputs/outputs,
 * memory domain reachable from the device) before plan_run, so backends only
 * do the fast path. */
#ifndef PF_NN_BACKEND_H
#define PF_NN_BACKEND_H

#include "ir.h"
#include "pixflow/nn.h"

PF_BEGIN_DECLS

typedef struct pf_nn_backend {
    const char *name; /* "cpu", "cuda" */
    pf_status (*ctx_create)(const pf_nn_exec_params *p, void **ctx);
    void (*ctx_destroy)(void *ctx);
    /* Tells the ctx which model it plans (its content hash and name), so it
     * can use the on-disk plan cache. Optional (NULL); called once after
     * ctx_create, only when the cache is wanted. */
    void (*ctx_bind_model)(void *ctx, uint64_t model_hash, const char *model_name);
    pf_status (*plan_create)(void *ctx, const pf_ir_graph *g, int64_t batch, void **plan);
    void (*plan_destroy)(void *ctx, void *plan);
    /* Tensors in graph input/output order, already validated. stream NULL =
     * the ctx's own. CUDA: asynchronous; a captured graph replays when the
     * pointers match the captured ones, otherwise the backend re-captures or
     * copies (the backend documents which). */
    pf_status (*plan_run)(void *ctx, void *plan, pf_stream *stream, const pf_tensor *in, int n_in,
                          pf_tensor *out, int n_out);
    /* Runs once node by node, timing each (synchronous). Optional (NULL). */
    pf_status (*plan_profile)(void *ctx, void *plan, pf_stream *stream, const pf_tensor *in,
                              int n_in, pf_tensor *out, int n_out, pf_nn_node_time *times,
                              int cap, int *n);
    /* Stats of the plan/ctx: arena bytes, device weight bytes, graphs. */
    void (*plan_stats)(void *ctx, void *plan, pf_nn_exec_stats *acc);
} pf_nn_backend;

extern const pf_nn_backend pf_nn_backend_cpu;
/* NULL when built without CUDA. */
const pf_nn_backend *pf_nn_backend_cuda(void);

PF_END_DECLS

#endif
