/* `pixflow run PIPELINE.yaml`: builds a pipeline from a YAML file, runs it to
 * the end with a progress line, and prints the statistics table (or JSON).
 *
 * Progress goes to stderr so that stdout carries only the result (the table
 * or the JSON document) and can be piped: on a terminal one line rewritten
 * about 4 times a second; otherwise a plain line every second. SIGINT and
 * SIGTERM cancel the pipeline through the async-signal-safe
 * pf_pipeline_cancel_async(); the statistics gathered so far are still
 * printed. A second signal is acknowledged and does not cut the outputs the
 * sinks are finishing (cli_signals_install).
 *
 * JSON output: the document pf_pipeline_write_stats_json() writes (its keys
 * are documented with it), unchanged. */
#define _POSIX_C_SOURCE 200809L

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "pixflow/io.h"
#include "pixflow/pixflow.h"

/* Exit status after an interrupt (128 + SIGINT, what shells report). */
#define RUN_EXIT_INTERRUPTED 130

static const cli_option run_options[] = {
    {"json", NULL, "print the statistics as one JSON object instead of the table"},
    {"trace", "FILE", "write a Chrome/Perfetto trace to FILE (overrides the file's 'trace')"},
    {"trace-counters", "MS", "device counter period in the trace, ms (0 = off; default 100)"},
    {"device", "SPEC", "run every stage on SPEC: auto, cpu, cuda, cuda:N (overrides the file; "
                         "without it, $PIXFLOW_DEVICE replaces the file's 'auto')"},
    {"mode", "MODE", "latency, throughput or custom (overrides the file's 'mode')"},
    {"count", "N", "every source stops after N items (overrides 'count' in the file)"},
    {"quiet", NULL, "no progress line"},
    CLI_OVERWRITE_OPTIONS,
    {"help", NULL, "show this help"},
    {NULL, NULL, NULL},
};

static void run_usage(FILE *f)
{
    fprintf(f, "usage: pixflow run PIPELINE.yaml [--json] [--trace FILE [--trace-counters MS]]\n"
               "                    [--device SPEC]\n"
               "                    [--mode latency|throughput|custom] [--count N] [--quiet]\n"
               "                    [-y | -n]\n\n"
               "Builds the pipeline described in PIPELINE.yaml (format: docs/pipeline-yaml.md),\n"
               "runs it until its sources end, showing items per second on stderr, and prints\n"
               "per-stage and per-edge statistics. Ctrl-C stops it early and still prints the\n"
               "statistics so far; a second Ctrl-C does not cut the outputs being finished.\n"
               "Sinks overwrite existing files (the default, or -y) unless -n is given; every\n"
               "file is written under a temporary name and renamed when complete; a sink whose\n"
               "file is a source's input is refused when the file is loaded.\n\n"
               "options:\n");
    cli_print_options(f, run_options);
    fprintf(f, "\nstage types:");
    for (int i = 0; pf_stage_builtin_type(i, NULL); i++)
        fprintf(f, "%s %s", i ? "," : "", pf_stage_builtin_type(i, NULL));
    fprintf(f, "\n\nexit status: 0 the pipeline ran to the end; 1 it could not be loaded or\n"
               "started, or a stage failed (the message names the file and line, or the stage\n"
               "and item); 2 bad usage, including a malformed --device; 130 interrupted\n");
}

/* Signals --------------------------------------------------------------------------------- */

/* Ctrl-C cancels the pipeline (cli_signals_install). */
static void cancel_pipeline(void *p) { pf_pipeline_cancel_async(p); }

/* Progress -------------------------------------------------------------------------------- */

typedef struct progress {
    bool tty;
    bool shown;              /* a TTY line is on screen */
    double last_print_s;
    double last_s;
    uint64_t last_items;
} progress;

static void progress_update(progress *pg, pf_pipeline *p)
{
    pf_pipeline_stats s;
    if (pf_pipeline_get_stats(p, &s) != PF_OK) return;
    double interval = pg->tty ? 0.25 : 1.0;
    if (s.elapsed_s - pg->last_print_s < interval * 0.9) return;
    double dt = s.elapsed_s - pg->last_s;
    double rate = dt > 0 ? (double)(s.items_completed - pg->last_items) / dt : 0;
    pg->last_s = s.elapsed_s;
    pg->last_items = s.items_completed;
    pg->last_print_s = s.elapsed_s;
    const char *bottleneck =
        s.bottleneck >= 0 && s.bottleneck < s.num_stages ? s.stages[s.bottleneck].name : "-";
    char line[256];
    snprintf(line, sizeof line,
             "%7.1f s  %10llu items  %9.1f items/s  dropped %llu  busiest: %s", s.elapsed_s,
             (unsigned long long)s.items_completed, rate, (unsigned long long)s.dropped,
             bottleneck ? bottleneck : "-");
    if (pg->tty) {
        fprintf(stderr, "\r\033[K%s", line);
        pg->shown = true;
    } else {
        fprintf(stderr, "%s\n", line);
    }
    fflush(stderr);
}

static void progress_clear(progress *pg)
{
    if (pg->tty && pg->shown) fprintf(stderr, "\r\033[K");
    pg->shown = false;
    fflush(stderr);
}

/* Command ------------------------------------------------------------------------------------- */

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "pixflow run: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see 'pixflow run --help')\n");
    return CLI_EXIT_USAGE;
}

int cmd_run(int argc, char **argv)
{
    cli_args a;
    if (!cli_parse("run", run_options, argc, argv, &a)) return CLI_EXIT_USAGE;
    if (cli_flag(run_options, &a, "help")) {
        run_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (a.positional_count != 1)
        return a.positional_count == 0
                   ? usage_error("expected a pipeline file%s", "")
                   : usage_error("unexpected argument '%s'; one pipeline file per run",
                                 a.positional[1]);
    const char *path = a.positional[0];
    if (!cli_overwrite_setup("run", run_options, &a)) return CLI_EXIT_USAGE;
    bool json = cli_flag(run_options, &a, "json");
    bool quiet = cli_flag(run_options, &a, "quiet");

    pf_pipeline_yaml_params yp = pf_pipeline_yaml_params_default();
    yp.path = path;
    yp.trace_path = cli_value(run_options, &a, "trace");
    const char *tc = cli_value(run_options, &a, "trace-counters");
    if (tc) {
        long v = 0;
        if (!cli_parse_long(tc, 0, PF_PIPELINE_TRACE_COUNTER_MS_MAX, &v))
            return usage_error("--trace-counters '%s': expected milliseconds 0..60000", tc);
        yp.trace_counter_ms = (int)v;
    }
    const char *mode = cli_value(run_options, &a, "mode");
    if (mode) {
        if (!strcmp(mode, "latency")) yp.mode = PF_MODE_LATENCY;
        else if (!strcmp(mode, "throughput")) yp.mode = PF_MODE_THROUGHPUT;
        else if (!strcmp(mode, "custom")) yp.mode = PF_MODE_CUSTOM;
        else return usage_error("--mode '%s': expected latency, throughput or custom", mode);
    }
    const char *count = cli_value(run_options, &a, "count");
    if (count) {
        long n = 0;
        if (!cli_parse_long(count, 1, LONG_MAX, &n))
            return usage_error("--count '%s': expected a positive integer", count);
        yp.count = n;
    }
    const char *device = cli_value(run_options, &a, "device");
    if (device) {
        pf_device *dev = NULL;
        pf_status st = pf_device_select(device, &dev);
        if (st == PF_ERR_INVALID) {
            fprintf(stderr, "pixflow run: --device: %s\n", pf_last_error());
            return CLI_EXIT_USAGE;
        }
        if (st != PF_OK) {
            fprintf(stderr, "pixflow run: --device: %s\n", pf_last_error());
            return CLI_EXIT_FAIL;
        }
        yp.device = device;
    }

    if (yp.trace_path && !cli_output_may_write("run", yp.trace_path)) return CLI_EXIT_FAIL;
    if (yp.trace_path && pf_output_same_file(yp.trace_path, path)) {
        fprintf(stderr, "pixflow run: --trace %s is the pipeline file %s (the same file): "
                        "writing it would destroy it\n", yp.trace_path, path);
        return CLI_EXIT_FAIL;
    }
    pf_pipeline *p = NULL;
    pf_status st = pf_pipeline_create_from_yaml(&yp, &p);
    if (st != PF_OK) {
        fprintf(stderr, "pixflow run: %s\n", pf_last_error());
        return CLI_EXIT_FAIL;
    }

    cli_signals_install(cancel_pipeline, p);
    st = pf_pipeline_start(p);
    if (st != PF_OK) {
        fprintf(stderr, "pixflow run: %s: cannot start: %s\n", path, pf_last_error());
        cli_signals_restore();
        pf_pipeline_destroy(&p);
        return CLI_EXIT_FAIL;
    }
    progress pg = {.tty = isatty(STDERR_FILENO) != 0};
    while ((st = pf_pipeline_wait(p, 250000)) == PF_TIMEOUT)
        if (!quiet) progress_update(&pg, p);
    char err[1024];
    snprintf(err, sizeof err, "%s", pf_last_error());
    progress_clear(&pg);
    cli_signals_restore();

    bool interrupted = st == PF_ERR_CANCELLED && cli_interrupted();
    if (json) {
        pf_pipeline_write_stats_json(p, stdout);
    } else {
        printf("%s: %s\n", path,
               st == PF_OK      ? "ran to the end"
               : interrupted    ? "interrupted; statistics so far"
                                : "failed; statistics so far");
        pf_pipeline_print_stats(p, stdout);
    }
    fflush(stdout);
    int code = CLI_EXIT_OK;
    if (interrupted) {
        fprintf(stderr, "pixflow run: %s: interrupted\n", path);
        code = RUN_EXIT_INTERRUPTED;
    } else if (st != PF_OK) {
        fprintf(stderr, "pixflow run: %s: %s: %s\n", path, pf_status_str(st), err);
        code = CLI_EXIT_FAIL;
    }
    pf_pipeline_destroy(&p); /* writes the trace, if any */
    if (yp.trace_path && code != CLI_EXIT_FAIL && !json)
        fprintf(stderr, "pixflow run: trace written to %s\n", yp.trace_path);
    return code;
}
