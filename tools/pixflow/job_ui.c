/* Messages and start errors of the job commands (job_ui.h). */
#define _POSIX_C_SOURCE 200809L

#include "job_ui.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

void cli_job_ui_init(cli_job_ui *ui, const char *cmd, bool quiet)
{
    ui->cmd = cmd;
    ui->tty = isatty(STDERR_FILENO) != 0 && !quiet;
    atomic_init(&ui->shown, 0);
    atomic_init(&ui->reported, 0);
}

void cli_job_message(void *user, pf_log_level level, const char *msg)
{
    (void)level;
    cli_job_ui *ui = user;
    /* One line, whole, though several streams open (and fail) at once. */
    flockfile(stderr);
    if (atomic_exchange(&ui->shown, 0)) fputs("\r\033[K", stderr);
    fprintf(stderr, "pixflow %s: %s\n", ui->cmd, msg);
    fflush(stderr);
    funlockfile(stderr);
    atomic_fetch_add(&ui->reported, 1);
}

void cli_job_progress_clear(cli_job_ui *ui)
{
    if (atomic_exchange(&ui->shown, 0)) fputs("\r\033[K", stderr);
    fflush(stderr);
}

int cli_job_start_failed(cli_job_ui *ui, pf_status st)
{
    if (st != PF_ERR_INVALID || atomic_load(&ui->reported) > 0) return CLI_EXIT_FAIL;
    static const char *const fields[][2] = {
        {"output ", "-o "}, {"mask_out ", "--mask-out "}, {"inputs: ", ""},
        {"background ", "--background "}, {"output_dir", "-o"},
    };
    const char *msg = pf_last_error();
    const char *opt = "";
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        size_t n = strlen(fields[i][0]);
        if (!strncmp(msg, fields[i][0], n)) {
            opt = fields[i][1];
            msg += n;
            break;
        }
    }
    fprintf(stderr, "pixflow %s: %s%s (see 'pixflow %s --help')\n", ui->cmd, opt, msg, ui->cmd);
    return CLI_EXIT_USAGE;
}
