/* `pixflow reproject`: progress on stderr, the summary table and the JSON
 * document on stdout, from the job's progress and result (pixflow/jobs.h). */
#ifndef PF_TOOLS_REPROJECT_REPORT_H
#define PF_TOOLS_REPROJECT_REPORT_H

#include "job_ui.h"
#include "reproject_opts.h"

typedef struct rp_progress {
    cli_job_ui *ui;
    bool quiet;
    double last_print_s;
} rp_progress;

void rp_progress_init(rp_progress *pg, cli_job_ui *ui, bool quiet);
/* A bar with rate and ETA on a terminal (rewritten ~4 times a second), else
 * a plain line every second. */
void rp_progress_update(rp_progress *pg, pf_job *job);

/* The summary (the job's stage table inside: pf_job_print_stats). */
void rp_print_summary(FILE *f, pf_job *job, const pf_job_result *r);
void rp_print_json(FILE *f, const pf_job_result *r);

#endif
