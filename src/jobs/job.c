/* The public pf_job calls (jobs.h), dispatched to the job kind's ops. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "jobs/job_impl.h"

void jobs_say(const jobs_sink *s, pf_log_level level, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (s && s->fn) s->fn(s->user, level, msg);
    else pf_log(level, "%s", msg);
}

pf_job *jobs_new(pf_job_kind kind, const job_ops *ops, void *impl)
{
    pf_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->ops = ops;
    j->impl = impl;
    j->result.kind = kind;
    j->result.status = PF_JOB_RUNNING;
    return j;
}

const char *pf_job_status_name(pf_job_status s)
{
    switch (s) {
    case PF_JOB_RUNNING: return "running";
    case PF_JOB_DONE: return "done";
    case PF_JOB_INTERRUPTED: return "interrupted";
    case PF_JOB_FAILED: return "failed";
    }
    return "?";
}

pf_status pf_job_wait(pf_job *j, int64_t timeout_us)
{
    PF_CHECK_ARG(j, "pf_job_wait", "job is NULL");
    if (j->ended) return j->end_status;
    pf_status st = j->ops->wait(j, timeout_us);
    if (st == PF_TIMEOUT) return st;
    j->ended = true;
    j->end_status = st;
    return st;
}

void pf_job_cancel_async(pf_job *j)
{
    if (!j) return;
    j->cancelled = 1;
    j->ops->cancel_async(j);
}

pf_status pf_job_get_progress(pf_job *j, pf_job_progress *p)
{
    PF_CHECK_ARG(j && p, "pf_job_get_progress", "job or progress is NULL");
    memset(p, 0, sizeof *p);
    j->ops->progress(j, p);
    return PF_OK;
}

pf_status pf_job_get_result(const pf_job *j, pf_job_result *r)
{
    PF_CHECK_ARG(j && r, "pf_job_get_result", "job or result is NULL");
    if (!j->ended) {
        pf_set_error(PF_AGAIN, "pf_job_get_result: the job is still running (pf_job_wait)");
        return PF_AGAIN;
    }
    *r = j->result;
    return PF_OK;
}

pf_status pf_job_print_stats(pf_job *j, FILE *f)
{
    PF_CHECK_ARG(j && f, "pf_job_print_stats", "job or file is NULL");
    if (!j->ended)
        return pf_set_error(PF_ERR_INVALID, "pf_job_print_stats: the job is still running");
    return j->ops->print_stats(j, f);
}

void pf_job_destroy(pf_job **jp)
{
    pf_job *j = jp ? *jp : NULL;
    if (!j) return;
    if (!j->ended) {
        /* Cancel, then let the job finish its outputs. */
        pf_job_cancel_async(j);
        while (pf_job_wait(j, 100000) == PF_TIMEOUT) {
        }
    }
    j->ops->destroy(j);
    free(j);
    *jp = NULL;
}
