/* What `pixflow segment` and `pixflow reproject` share around a library job
 * (pixflow/jobs.h): the job's messages on stderr as "pixflow CMD: ..."
 * lines that never tear a progress line, and the params errors turned into
 * the command's usage messages. */
#ifndef PF_TOOLS_JOB_UI_H
#define PF_TOOLS_JOB_UI_H

#include <stdatomic.h>
#include <stdbool.h>

#include "pixflow/pixflow.h"

typedef struct cli_job_ui {
    const char *cmd;        /* "segment" */
    bool tty;               /* stderr is a terminal: progress is one rewritten line */
    atomic_int shown;       /* a progress line is on the terminal */
    atomic_int reported;    /* messages printed so far */
} cli_job_ui;

void cli_job_ui_init(cli_job_ui *ui, const char *cmd, bool quiet);
/* pf_job_message_fn: prints "pixflow CMD: MSG" (user = the cli_job_ui),
 * clearing a progress line first. Thread-safe. */
void cli_job_message(void *user, pf_log_level level, const char *msg);
/* Erases a progress line that is on the terminal. */
void cli_job_progress_clear(cli_job_ui *ui);

/* A failed start: a params error nobody reported (PF_ERR_INVALID) is a
 * usage error, printed with the command's option names (the library names
 * its params fields: output -> -o, mask_out -> --mask-out, ...) and a
 * pointer to --help: CLI_EXIT_USAGE. Anything else was reported by the job
 * as it happened: CLI_EXIT_FAIL. */
int cli_job_start_failed(cli_job_ui *ui, pf_status st);

#endif
