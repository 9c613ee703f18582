/* The jobs' engine warm-up: while a job probes its inputs (on a GPU that is
 * mostly the CUDA context and the decoder sessions: ~0.5 s on an H200), a
 * thread per CUDA device loads what the job's first plan and run would load
 * (pf_nn_warmup: cuDNN/cuBLAS, kernel modules), so the pipeline's executor
 * plans in ~10-25 ms and its first run loads no code: the first frame comes
 * out sooner and the run is not stalled behind start-up. Nothing here is
 * needed for correctness: a failed warm-up is logged (debug) and the
 * pipeline's own executor reports any real error. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/sys.h"
#include "job_impl.h"
#include "pixflow/nn.h"

#define WARMUP_MAX_DEVICES 16

typedef struct warm_one {
    pf_thread th;
    bool started;
    pf_model *model;
    pf_nn_exec_params p;
    int batch;
} warm_one;

struct jobs_warmup {
    warm_one w[WARMUP_MAX_DEVICES];
    int n;
};

static void *warm_main(void *arg)
{
    warm_one *w = arg;
    pf_status st = pf_nn_warmup(w->model, &w->p, w->batch);
    /* Out of memory or a device error here may hit the job too (the same
     * GPU, the same context): say so where the user looks. */
    if (st == PF_ERR_NOMEM || st == PF_ERR_DEVICE)
        PF_LOGW("warm-up of the model on %s failed: %s", pf_device_spec(w->p.device),
                pf_last_error());
    else if (st != PF_OK)
        PF_LOGD("warm-up on %s skipped: %s", pf_device_spec(w->p.device), pf_last_error());
    return NULL;
}

jobs_warmup *jobs_warmup_start(const char *model_path, pf_device *const *devs, int ndevs,
                               pf_nn_precision precision, int batch)
{
    if (!model_path || ndevs < 1) return NULL;
    const char *env = getenv("PIXFLOW_WARMUP");
    if (env && !strcmp(env, "0")) return NULL;
    jobs_warmup *jw = calloc(1, sizeof *jw);
    if (!jw) return NULL;
    for (int i = 0; i < ndevs && i < WARMUP_MAX_DEVICES; i++) {
        if (!devs[i] || pf_device_get_type(devs[i]) != PF_DEVICE_CUDA) continue;
        warm_one *w = &jw->w[jw->n];
        /* Its own model object: the loaders' objects are not shared across
         * threads (a few ms for the models the jobs run). */
        if (pf_model_load(model_path, &w->model) != PF_OK) continue;
        w->p = pf_nn_exec_params_default();
        w->p.device = devs[i];
        w->p.precision = precision;
        w->p.max_batch = batch > 0 ? batch : 1;
        w->batch = w->p.max_batch;
        w->started = pf_thread_start(&w->th, "pf-warmup", warm_main, w) == PF_OK;
        if (!w->started) pf_model_free(&w->model);
        else jw->n++;
    }
    if (!jw->n) {
        free(jw);
        return NULL;
    }
    return jw;
}

void jobs_warmup_finish(jobs_warmup **pjw)
{
    if (!pjw || !*pjw) return;
    jobs_warmup *jw = *pjw;
    *pjw = NULL;
    for (int i = 0; i < jw->n; i++) {
        pf_thread_join(jw->w[i].th);
        pf_model_free(&jw->w[i].model);
    }
    free(jw);
}
