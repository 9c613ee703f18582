/* `pixflow reproject INPUT... -o DIR`: 360-degree equirect images or videos
 * to perspective views or cube maps, as a batch job (the job is the
 * library's, pf_reproject_start in src/jobs/; options in reproject_opts.c;
 * progress and the summary in reproject_report.c).
 *
 * Progress goes to stderr (a bar with rate and ETA rewritten 4 times a
 * second on a terminal, a plain line every second otherwise) so that stdout
 * carries only the summary or the JSON document. SIGINT/SIGTERM stop taking
 * new inputs; what is decoded is finished and the summary printed (exit
 * 130). A second signal is acknowledged and does not cut the files being
 * written (cli_signals_install). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>

#include "cli.h"
#include "reproject_report.h"

#define RP_EXIT_INTERRUPTED 130

/* Signals ------------------------------------------------------------------------------------ */

/* Ctrl-C cancels the job (cli_signals_install). */
static void cancel_job(void *j) { pf_job_cancel_async(j); }

/* Command ------------------------------------------------------------------------------------- */

static int run_job(rp_config *cfg)
{
    cli_job_ui ui;
    cli_job_ui_init(&ui, "reproject", cfg->quiet);
    cfg->p.on_message = cli_job_message;
    cfg->p.user = &ui;
    pf_job *job = NULL;
    pf_status st = pf_reproject_start(&cfg->p, &job);
    if (st != PF_OK) return cli_job_start_failed(&ui, st);
    rp_progress pg;
    rp_progress_init(&pg, &ui, cfg->quiet);
    cli_signals_install(cancel_job, job);
    while ((st = pf_job_wait(job, 250000)) == PF_TIMEOUT) rp_progress_update(&pg, job);
    cli_signals_restore();
    cli_job_progress_clear(&ui);
    pf_job_result r;
    pf_job_get_result(job, &r);
    if (cfg->json) rp_print_json(stdout, &r);
    else rp_print_summary(stdout, job, &r);
    fflush(stdout);
    uint64_t failures = (uint64_t)r.failed;
    bool interrupted = r.status == PF_JOB_INTERRUPTED;
    pf_job_destroy(&job); /* writes the trace */
    if (cfg->p.trace && !cfg->quiet)
        fprintf(stderr, "pixflow reproject: trace written to %s\n", cfg->p.trace);
    if (st != PF_OK) return CLI_EXIT_FAIL;
    if (interrupted) {
        fprintf(stderr, "pixflow reproject: interrupted\n");
        return RP_EXIT_INTERRUPTED;
    }
    if (failures) {
        fprintf(stderr, "pixflow reproject: %llu input%s failed (named above)\n",
                (unsigned long long)failures, failures == 1 ? "" : "s");
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}

int cmd_reproject(int argc, char **argv)
{
    rp_config cfg;
    bool help = false;
    int rc = rp_config_parse(argc, argv, &cfg, &help);
    if (rc != CLI_EXIT_OK || help) {
        if (help) rp_usage(stdout);
        rp_config_free(&cfg);
        return rc;
    }
    pf_status st = pf_device_select(cfg.device, &cfg.p.device);
    if (st != PF_OK) {
        fprintf(stderr, "pixflow reproject: --device: %s\n", pf_last_error());
        rp_config_free(&cfg);
        return st == PF_ERR_INVALID ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
    }
    rc = run_job(&cfg);
    rp_config_free(&cfg);
    return rc;
}
