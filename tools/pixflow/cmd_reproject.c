/* `pixflow reproject INPUT... -o DIR`: 360-degree equirect images or videos
 * to perspective views or cube maps, as a batch job (the pipeline is in
 * reproject_run.c; options in reproject_opts.c; inputs and output names in
 * reproject_inputs.c; the summary in reproject_report.c).
 *
 * Progress goes to stderr (a bar with rate and ETA rewritten 4 times a
 * second on a terminal, a plain line every second otherwise) so that stdout
 * carries only the summary or the JSON document. SIGINT/SIGTERM stop taking
 * new inputs; what is decoded is finished and the summary printed (exit
 * 130). A second signal is acknowledged and does not cut the files being
 * written (cli_signals_install). */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "reproject_report.h"
#include "reproject_run.h"

#define RP_EXIT_INTERRUPTED 130

/* Signals ------------------------------------------------------------------------------------ */

/* Ctrl-C cancels the run (cli_signals_install). */
static void cancel_run(void *r) { rp_run_cancel(r); }

/* Output directory ------------------------------------------------------------------------------ */

/* mkdir -p, then proves the directory writable by creating and removing a
 * file (access() says yes to root even on a read-only mount). */
static bool prepare_out_dir(const char *dir)
{
    char path[PATH_MAX];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path - 64) {
        fprintf(stderr, "pixflow reproject: output directory '%s': bad path\n", dir);
        return false;
    }
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0') continue;
        char keep = path[i];
        path[i] = '\0';
        struct stat st;
        if (stat(path, &st) != 0) {
            if (mkdir(path, 0777) != 0 && errno != EEXIST) {
                fprintf(stderr, "pixflow reproject: %s: cannot create the output directory: %s\n",
                        path, strerror(errno));
                return false;
            }
        } else if (!S_ISDIR(st.st_mode)) {
            fprintf(stderr, "pixflow reproject: %s: cannot be the output directory: %s is not "
                            "a directory\n", dir, path);
            return false;
        }
        path[i] = keep;
    }
    snprintf(path, sizeof path, "%s/.pixflow-write-test-%ld", dir, (long)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        fprintf(stderr, "pixflow reproject: %s: the output directory is not writable: %s\n", dir,
                strerror(errno));
        return false;
    }
    close(fd);
    unlink(path);
    return true;
}

/* Command ------------------------------------------------------------------------------------- */

static int select_device(const char *spec, pf_device **dev)
{
    pf_status st = pf_device_select(spec, dev);
    if (st == PF_OK) return CLI_EXIT_OK;
    fprintf(stderr, "pixflow reproject: --device: %s\n", pf_last_error());
    return st == PF_ERR_INVALID ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
}

static int run_job(const rp_config *cfg, const rp_inputs *in, pf_device *dev)
{
    rp_run *r = NULL;
    if (rp_run_create(cfg, in, dev, &r) != PF_OK) return CLI_EXIT_FAIL;
    rp_progress pg;
    rp_progress_init(&pg, isatty(STDERR_FILENO) != 0, cfg->quiet);
    rp_report_set_tty(pg.tty && !cfg->quiet);
    cli_signals_install(cancel_run, r);
    pf_status st = rp_run_start(r);
    if (st == PF_OK) {
        while (rp_run_wait(r, 250000) == PF_TIMEOUT) rp_progress_update(&pg, r);
    }
    cli_signals_restore();
    rp_progress_clear(&pg);
    rp_report_set_tty(false);

    rp_stats s;
    rp_run_get_stats(r, &s);
    bool interrupted = cli_interrupted();
    uint64_t failures = s.images_failed + (uint64_t)in->expand_failures;
    if (cfg->json) rp_print_json(stdout, cfg, dev, &s, failures, interrupted);
    else rp_print_summary(stdout, cfg, dev, &s, failures, interrupted);
    fflush(stdout);
    rp_run_destroy(&r); /* writes the trace */
    if (cfg->trace_path && !cfg->quiet)
        fprintf(stderr, "pixflow reproject: trace written to %s\n", cfg->trace_path);
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
    pf_device *dev = NULL;
    rc = select_device(cfg.device, &dev);
    if (rc != CLI_EXIT_OK) {
        rp_config_free(&cfg);
        return rc;
    }
    if (!prepare_out_dir(cfg.out_dir)) {
        rp_config_free(&cfg);
        return CLI_EXIT_FAIL;
    }
    rp_inputs in;
    if (!rp_inputs_expand(&in, cfg.inputs, cfg.num_inputs, cfg.list_path)) {
        rp_inputs_free(&in);
        rp_config_free(&cfg);
        return CLI_EXIT_FAIL;
    }
    rc = rp_check_outputs(&in, &cfg) ? run_job(&cfg, &in, dev) : CLI_EXIT_FAIL;
    rp_inputs_free(&in);
    rp_config_free(&cfg);
    return rc;
}
