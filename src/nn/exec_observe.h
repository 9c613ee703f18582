/* Private: observing intermediate values during an executor run (exec.c),
 * for calibration (src/nn/calib_run.c) and debugging.
 *
 *   static void seen(void *user, const char *name, const pf_tensor *t) {...}
 *   const char *names[] = {"conv1_out", "relu3_out"};
 *   pf_nn_exec_run_observed(x, in, 1, out, 1, names, 2, seen, user);
 *
 * The run computes what pf_nn_exec_run computes (same validation, same
 * outputs) and also hands every named value to `fn` once, after the run,
 * as a contiguous host F32 tensor at the run's batch, valid only during the
 * call. How: the executor keeps a second plan per batch size whose graph
 * also lists the observed values as graph outputs, so the backend writes
 * them to buffers of the caller's (here: exec.c's) instead of reusing their
 * arena memory; normal runs and their plans are untouched and cost nothing
 * extra. Names that are not runtime F32 values of the plan's graph (folded
 * into constants, graph inputs, integer values) are skipped silently: the
 * callback is simply not called for them. The observed plan is made for the
 * first set of names and reused while the set is the same (pointer and
 * count); another set rebuilds it. CPU executors only for now
 * (PF_ERR_UNSUPPORTED on CUDA). Threads: as pf_nn_exec_run. */
#ifndef PF_NN_EXEC_OBSERVE_H
#define PF_NN_EXEC_OBSERVE_H

#include "pixflow/nn.h"

PF_BEGIN_DECLS

typedef void (*pf_nn_observer_fn)(void *user, const char *value_name, const pf_tensor *t);

pf_status pf_nn_exec_run_observed(pf_nn_exec *x, const pf_tensor *inputs, int n_in,
                                  pf_tensor *outputs, int n_out, const char *const *names,
                                  int n_names, pf_nn_observer_fn fn, void *user);

PF_END_DECLS

#endif
