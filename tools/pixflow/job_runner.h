/* The runner `pixflow worker` gives the library's worker loop: each job is
 * this same pixflow binary run as a child process on the job's words. */
#ifndef PF_TOOLS_JOB_RUNNER_H
#define PF_TOOLS_JOB_RUNNER_H

#include <stdbool.h>

#include "pixflow/queue.h"

typedef struct job_runner {
    char exe[4096];       /* this binary (/proc/self/exe resolved at start) */
    const char *device;   /* NULL, or appended to every job as --device SPEC */
    bool dry_run;         /* record jobs done without running them (benchmarks) */
} job_runner;

/* Resolves the binary. False with a message on stderr. */
bool job_runner_init(job_runner *r, const char *device, bool dry_run);

/* pf_worker_runner: arg is a job_runner. */
void job_runner_run(void *arg, const pf_worker_job *job, pf_worker_outcome *out);

#endif
