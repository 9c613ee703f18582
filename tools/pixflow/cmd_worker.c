/* `pixflow worker`: takes jobs from a Redis queue and runs them, each as a
 * child pixflow process (job_runner.c), through the library's worker loop
 * (pixflow/queue.h). */
#define _GNU_SOURCE /* realpath, sigaction */

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "job_runner.h"
#include "pixflow/pixflow.h"
#include "queue_opts.h"

static const cli_option options[] = {
    QUEUE_REDIS_OPTIONS,
    {"device", "SPEC", "run every job on SPEC: auto, cpu, cuda, cuda:N (overrides the job's)"},
    {"concurrency", "N", "jobs at once, 1..64 (default 1)"},
    {"exit-when-empty", NULL, "exit 0 once nothing is waiting, retrying or running in the group"},
    {"name", "NAME", "worker name, unique in the queue (default HOST:PID)"},
    {"root", "DIR", "absolute paths in jobs must be under DIR (default: the current directory)"},
    {"visibility", "DUR", "a job silent this long is claimed by another worker (default 60s)"},
    {"max-attempts", "N", "runs of a failing job before its dead letter (default 3)"},
    {"backoff", "DUR", "wait before retry n: DUR * 2^(n-1), +-25% (default 1s)"},
    {"backoff-max", "DUR", "longest wait before a retry (default 60s)"},
    {"job-timeout", "DUR", "time limit of a job that sets none (default 1h)"},
    {"grace", "DUR", "on SIGTERM, time for running jobs to finish before hand-back (default 25s)"},
    {"reconnect-timeout", "DUR", "give up when Redis stays unreachable this long (default 60s)"},
    {"dry-run", NULL, "record jobs done without running them (measures the queue itself)"},
    {"json", NULL, "print the summary as one JSON object"},
    {"quiet", NULL, "no line per job"},
    {"help", NULL, "show this help"},
    {NULL, NULL, NULL},
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: pixflow worker --redis URL --queue NAME [--device SPEC] [--concurrency N]\n"
            "                      [--exit-when-empty] [options]\n\n"
            "Takes jobs from the queue (a Redis Streams consumer group) and runs each as a\n"
            "child pixflow process on the job's command line, then records its result (status,\n"
            "outputs, figures, worker, duration) and acknowledges it. A failed job is retried\n"
            "with back-off, then moved to the dead-letter stream with its error; a job that\n"
            "crashes or exceeds its time limit is killed without harming the worker. Jobs of a\n"
            "worker silent past the visibility timeout are claimed by others. Outputs are\n"
            "written under a temporary name and renamed when complete. SIGTERM or Ctrl-C:\n"
            "finish the running jobs (for --grace), else hand them back, then exit; a second\n"
            "signal hands them back at once. Lost connections to Redis are retried with\n"
            "back-off. Jobs name files on storage every worker sees (docs/queue.md).\n\n"
            "Credentials: $PIXFLOW_REDIS_PASSWORD or --redis-auth-file FILE, the ACL user in\n"
            "$PIXFLOW_REDIS_USER (never on the command line; removed from the jobs'\n"
            "environment). Durations: 500ms, 30s, 10m, 1h.\n\n"
            "options:\n");
    cli_print_options(f, options);
    fprintf(f, "\nexit status: 0 stopped or the queue is empty (--exit-when-empty); 1 Redis\n"
               "unreachable or refused; 2 bad usage\n");
}

static pf_worker *volatile g_worker;
static volatile sig_atomic_t g_signals;

static void on_signal(int sig)
{
    (void)sig;
    int n = ++g_signals;
    pf_worker *w = g_worker;
    if (w) pf_worker_stop(w, n > 1);
    static const char first[] = "pixflow worker: stopping: finishing the running jobs (signal "
                                "again to hand them back now)\n";
    static const char again[] = "pixflow worker: handing the running jobs back\n";
    ssize_t ignored = n > 1 ? write(2, again, sizeof again - 1) : write(2, first, sizeof first - 1);
    (void)ignored;
}

static bool duration_opt(const char *name, const char *val, double lo, double hi, double *out)
{
    if (!val) return true;
    if (queue_parse_duration(val, lo, hi, out)) return true;
    fprintf(stderr, "pixflow worker: --%s '%s': expected a duration in [%gs, %gs] such as 500ms, "
                    "30s, 10m, 1h\n", name, val, lo, hi);
    return false;
}

int cmd_worker(int argc, char **argv)
{
    cli_args a;
    if (!cli_parse("worker", options, argc, argv, &a)) return CLI_EXIT_USAGE;
    if (cli_flag(options, &a, "help")) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (a.positional_count > 0) {
        fprintf(stderr, "pixflow worker: unexpected argument '%s' (see 'pixflow worker --help')\n",
                a.positional[0]);
        return CLI_EXIT_USAGE;
    }
    pf_worker_params p = pf_worker_params_default();
    p.queue = cli_value(options, &a, "queue");
    if (!p.queue) {
        fprintf(stderr, "pixflow worker: --queue NAME is required\n");
        return CLI_EXIT_USAGE;
    }
    p.name = cli_value(options, &a, "name");
    p.exit_when_empty = cli_flag(options, &a, "exit-when-empty");
    const char *v;
    long n;
    if ((v = cli_value(options, &a, "concurrency"))) {
        if (!cli_parse_long(v, 1, 64, &n)) {
            fprintf(stderr, "pixflow worker: --concurrency '%s': expected 1..64\n", v);
            return CLI_EXIT_USAGE;
        }
        p.concurrency = (int)n;
    }
    if ((v = cli_value(options, &a, "max-attempts"))) {
        if (!cli_parse_long(v, 1, 1000, &n)) {
            fprintf(stderr, "pixflow worker: --max-attempts '%s': expected 1..1000\n", v);
            return CLI_EXIT_USAGE;
        }
        p.max_attempts = (int)n;
    }
    double reconnect_s = 60;
    if (!duration_opt("visibility", cli_value(options, &a, "visibility"), 0.3, 86400,
                      &p.visibility_s) ||
        !duration_opt("backoff", cli_value(options, &a, "backoff"), 0, 86400, &p.backoff_s) ||
        !duration_opt("backoff-max", cli_value(options, &a, "backoff-max"), 0, 86400,
                      &p.backoff_max_s) ||
        !duration_opt("job-timeout", cli_value(options, &a, "job-timeout"), 0.001, 604800,
                      &p.job_timeout_s) ||
        !duration_opt("grace", cli_value(options, &a, "grace"), 0, 86400, &p.grace_s) ||
        !duration_opt("reconnect-timeout", cli_value(options, &a, "reconnect-timeout"), 0, 86400,
                      &reconnect_s))
        return CLI_EXIT_USAGE;
    if (p.backoff_max_s < p.backoff_s) p.backoff_max_s = p.backoff_s;
    p.redis.reconnect_timeout_ms = (int)(reconnect_s * 1000);

    char root[PATH_MAX];
    const char *root_opt = cli_value(options, &a, "root");
    if (!realpath(root_opt ? root_opt : ".", root)) {
        fprintf(stderr, "pixflow worker: --root %s: %s\n", root_opt ? root_opt : ".",
                strerror(errno));
        return CLI_EXIT_USAGE;
    }
    p.root = root;

    job_runner runner;
    if (!job_runner_init(&runner, cli_value(options, &a, "device"),
                         cli_flag(options, &a, "dry-run")))
        return CLI_EXIT_FAIL;
    p.runner = job_runner_run;
    p.runner_arg = &runner;

    if (!queue_check_available("worker")) return CLI_EXIT_FAIL;
    queue_ignore_sigpipe();
    char pw[1024];
    if (!queue_redis_params("worker", cli_value(options, &a, "redis"),
                            cli_value(options, &a, "redis-auth-file"), &p.redis, pw, sizeof pw))
        return CLI_EXIT_USAGE;
    bool quiet = cli_flag(options, &a, "quiet");
    /* A line per job (info) unless --quiet or PIXFLOW_LOG says otherwise. */
    if (!quiet && !getenv("PIXFLOW_LOG") && pf_log_get_level() < PF_LOG_INFO)
        pf_log_set_level(PF_LOG_INFO);

    pf_worker *w = NULL;
    pf_status st = pf_worker_create(&p, &w);
    memset(pw, 0, sizeof pw);
    if (st != PF_OK) {
        fprintf(stderr, "pixflow worker: %s\n", pf_last_error());
        return st == PF_ERR_INVALID ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
    }
    g_worker = w;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    int64_t t0 = pf_time_ns();
    st = pf_worker_run(w);
    double wall = (double)(pf_time_ns() - t0) / 1e9;
    if (st != PF_OK) fprintf(stderr, "pixflow worker: %s\n", pf_last_error());

    pf_worker_stats s;
    pf_worker_stats_get(w, &s);
    if (cli_flag(options, &a, "json")) {
        cli_json j;
        cli_json_init(&j, stdout);
        cli_json_object_begin(&j, NULL);
        cli_json_string(&j, "worker", pf_worker_name(w));
        cli_json_string(&j, "queue", p.queue);
        cli_json_bool(&j, "ok", st == PF_OK);
        cli_json_int(&j, "done", s.done);
        cli_json_int(&j, "failed_runs", s.failed);
        cli_json_int(&j, "dead", s.dead);
        cli_json_int(&j, "duplicates", s.duplicates);
        cli_json_int(&j, "claimed", s.claimed);
        cli_json_int(&j, "handed_back", s.handed_back);
        cli_json_int(&j, "reconnects", s.reconnects);
        cli_json_double(&j, "busy_s", s.busy_s);
        cli_json_double(&j, "wall_s", wall);
        cli_json_object_end(&j);
        cli_json_finish(&j);
    } else if (!quiet) {
        fprintf(stderr, "pixflow worker %s: %lld done, %lld failed runs, %lld dead-lettered, "
                        "%lld duplicates skipped, %lld claimed from silent workers, %lld handed "
                        "back, %lld reconnects in %.1f s\n", pf_worker_name(w),
                (long long)s.done, (long long)s.failed, (long long)s.dead,
                (long long)s.duplicates, (long long)s.claimed, (long long)s.handed_back,
                (long long)s.reconnects, wall);
    }
    g_worker = NULL;
    pf_worker_destroy(&w);
    return st == PF_OK ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
