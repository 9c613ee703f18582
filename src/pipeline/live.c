/* Live changes: stages added and connected while the pipeline runs, then
 * started together (pipeline.h, "Live changes"): a camera joining a running
 * muxer.
 *
 * Design. add_stage works as before (stage_new under p->mu) and marks the
 * stage `live`; it does not run yet. A live connect checks what can be done
 * without stopping anything: the producer is a stage that has not been
 * launched (a running stage's output list is read by its workers without a
 * lock, so it never grows), no transfer is needed (those are planned at
 * start), the consumer is not finished. The edge is created at once (the
 * mode applied to it) and appended to p->edges under p->mu, and to the
 * consumer's input list under its in_mu; if the consumer's input has
 * already ended (every edge closed and drained) the edge is refused there,
 * under the same lock the consumer decides end of input under, so an edge
 * is never added to a stage that has let its input go. The consumer's
 * notifier is then signalled, so sleeping workers scan the new list.
 *
 * pf_pipeline_start_added prepares the stages not yet launched (contexts,
 * streams, batcher) and starts their workers, counting them in
 * stages_running under p->mu first (the pipeline cannot finish while they
 * run). The new edge keeps the consumer's input open from the connect on:
 * a consumer whose other sources all end waits for the joined one. */
#include <stdio.h>
#include <stdlib.h>

#include "../core/error.h"
#include "pipeline_impl.h"

pf_status pl_live_connect(pf_pipeline *p, pf_stage *from, pf_stage *to, const pf_edge_params *ep)
{
    static const char fn[] = "pf_pipeline_connect";
    if (from->launched)
        return pf_set_error(PF_ERR_INVALID,
                            "%s: %s -> %s: '%s' is running; while the pipeline runs only a stage "
                            "added since it started can gain an output",
                            fn, from->name, to->name, from->name);
    if (!pl_locations_match(from, to))
        return pf_set_error(PF_ERR_UNSUPPORTED,
                            "%s: %s -> %s: the memory sides differ (a transfer would be needed); "
                            "transfers are inserted only at start",
                            fn, from->name, to->name);
    pf_edge_params params = *ep;
    pf_mutex_lock(&p->mu);
    if (p->state != PL_RUNNING || atomic_load(&p->stopping)) {
        pf_mutex_unlock(&p->mu);
        return pf_set_error(PF_ERR_INVALID, "%s: pipeline '%s' has finished or is stopping", fn,
                            p->name);
    }
    if (to->launched && atomic_load(&to->active) == 0) {
        pf_mutex_unlock(&p->mu);
        return pf_set_error(PF_ERR_INVALID, "%s: %s -> %s: '%s' has finished", fn, from->name,
                            to->name, to->name);
    }
    pf_mutex_lock(&to->in_mu);
    pf_status st = PF_OK;
    if (to->launched && to->in_eos)
        st = pf_set_error(PF_ERR_INVALID,
                          "%s: %s -> %s: the input of '%s' has ended (all its producers "
                          "finished)",
                          fn, from->name, to->name, to->name);
    pl_edge *e = NULL;
    if (st == PF_OK) st = pl_edge_new(p, from, to, &params, -1, fn, &e);
    if (st == PF_OK) {
        pl_apply_mode_edge(p, e);
        st = pl_edge_open(p, e);
        if (st != PF_OK) {
            /* Undo the records (nothing can have used them: in_mu and p->mu
             * are held, and `from` does not run). */
            p->nedges--;
            from->nout--;
            to->nin--;
            free(e->label);
            free(e->counter);
            free(e);
        }
    }
    pf_mutex_unlock(&to->in_mu);
    pf_mutex_unlock(&p->mu);
    if (st == PF_OK) pf_edge_notify_signal(&to->notify, true);
    return st;
}

pf_status pf_pipeline_start_added(pf_pipeline *p)
{
    static const char fn[] = "pf_pipeline_start_added";
    PF_CHECK_ARG(p, fn, "pipeline is NULL");
    pf_mutex_lock(&p->mu);
    if (p->state != PL_RUNNING || atomic_load(&p->stopping)) {
        pf_mutex_unlock(&p->mu);
        return pf_set_error(PF_ERR_INVALID,
                            "%s: pipeline '%s' is not running (start it with pf_pipeline_start)",
                            fn, p->name);
    }
    int first = -1, count = 0;
    pf_status st = PF_OK;
    for (int i = 0; i < p->nstages && st == PF_OK; i++) {
        pf_stage *s = p->stages[i];
        if (s->launched) continue;
        if (!s->d.source && s->nin == 0)
            st = pf_set_error(PF_ERR_INVALID,
                              "%s: stage '%s' has no input edge (only sources run without one)",
                              fn, s->name);
        if (first < 0) first = i;
        count++;
    }
    if (st == PF_OK && count == 0)
        st = pf_set_error(PF_ERR_INVALID, "%s: pipeline '%s': no stage was added since it started",
                          fn, p->name);
    if (st != PF_OK) {
        pf_mutex_unlock(&p->mu);
        return st;
    }
    /* Counted now: the pipeline cannot finish while these are being started. */
    p->stages_running += count;
    int n = p->nstages;
    for (int i = first; i < n; i++) {
        pf_stage *s = p->stages[i];
        if (s->launched) continue;
        s->launched = true;
        pl_apply_mode_stage(p, s);
        atomic_store(&s->active, s->nthreads);
    }
    pf_mutex_unlock(&p->mu);

    /* The stage table may grow only from this (the control) thread, so
     * indices first..n stay valid without the lock. */
    pf_status failed = PF_OK;
    char msg[512];
    msg[0] = 0;
    for (int i = first; i < n; i++) {
        pf_stage *s = p->stages[i];
        if (!s->live || s->w) continue;
        if (failed == PF_OK) {
            failed = pl_stage_prepare(s);
            if (failed != PF_OK) snprintf(msg, sizeof msg, "%s: stage '%s': %s", fn, s->name,
                                          pf_last_error());
        }
        for (int k = 0; failed == PF_OK && k < s->nthreads; k++) {
            char tn[32];
            snprintf(tn, sizeof tn, "pf:%s", s->name);
            failed = pf_thread_start(&s->w[k].thread, tn, pl_worker_main, &s->w[k]);
            if (failed != PF_OK)
                snprintf(msg, sizeof msg, "%s: stage '%s': %s", fn, s->name, pf_last_error());
            else
                s->w[k].thread_started = true;
        }
    }
    if (failed == PF_OK) return PF_OK;
    pl_fail(p, failed, msg);
    /* Workers that never started will never finish their stage. */
    for (int i = first; i < n; i++) {
        pf_stage *s = p->stages[i];
        if (!s->live) continue;
        int never = s->nthreads;
        for (int k = 0; s->w && k < s->nthreads; k++) never -= s->w[k].thread_started;
        if (never && atomic_fetch_sub(&s->active, never) == never) {
            for (int j = 0; j < s->nout; j++) pf_edge_close(s->out[j]->e);
            pl_stage_finished(p, s);
        }
    }
    return pf_set_error(failed, "%s", msg);
}
