/* Private: the loaded model behind the public pf_model, for exec.c and the
 * backends.
 *
 * A pf_model holds the imported graph after one run of pf_ir_optimize on its
 * symbolic shapes, its I/O lists in public terms and the source op
 * histogram. It is immutable after load except for the lazily computed
 * batch-1 summary (guarded by a mutex), so several executors and threads
 * may share it. It is refcounted: pf_model_free drops the caller's
 * reference, each executor holds one more (pf_model_ref/pf_model_unref). */
#ifndef PF_NN_MODEL_H
#define PF_NN_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "ir.h"
#include "pixflow/nn.h"

PF_BEGIN_DECLS

/* A model around a graph built in code (tests, tools that synthesise
 * graphs): takes ownership of `g` (also on failure), runs the passes and
 * builds the I/O lists as pf_model_load does. Reported as ONNX. */
pf_status pf_model_from_graph(pf_ir_graph *g, pf_model **out);

/* Takes a reference (returns m); NULL-safe. */
pf_model *pf_model_ref(pf_model *m);
/* Drops a reference; the last one frees the model. NULL-safe; sets *m = NULL. */
void pf_model_unref(pf_model **m);

/* The symbolic, optimised graph (owned by the model, read-only). */
const pf_ir_graph *pf_model_graph(const pf_model *m);
/* The file name used in messages. */
const char *pf_model_name(const pf_model *m);
/* True when some graph input has the symbolic batch dimension. */
bool pf_model_has_symbolic_batch(const pf_model *m);
/* pf_hash64 of the bytes the model was loaded from (file or memory), or 0
 * for a model built from a graph: the plan cache's model id. */
uint64_t pf_model_content_hash(const pf_model *m);
/* The batch of a fixed-batch model: dim 0 of the first input of rank >= 1
 * (1 when there is none). Meaningless for symbolic models. */
int64_t pf_model_fixed_batch(const pf_model *m);

/* A copy of the graph specialised to `batch` (every shape concrete) and
 * optimised: what an executor plans for that batch size. The caller owns
 * *out (pf_ir_graph_destroy). Symbolic models accept batch >= 1; fixed-batch
 * models only their own batch (PF_ERR_INVALID otherwise, naming both).
 * `report` (may be NULL) receives the passes' report of this copy. */
pf_status pf_model_graph_for_batch(pf_model *m, int64_t batch, pf_ir_graph **out);
pf_status pf_model_graph_for_batch_report(pf_model *m, int64_t batch, pf_ir_graph **out,
                                          pf_ir_opt_report *report);

PF_END_DECLS

#endif
