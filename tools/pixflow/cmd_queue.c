/* `pixflow queue add|status|results|dead|retry|purge`: submitting jobs to a
 * Redis queue and operating it (docs/queue.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pixflow/pixflow.h"
#include "queue_opts.h"

static const cli_option options[] = {
    QUEUE_REDIS_OPTIONS,
    {"from", "FILE", "add: jobs from a JSON Lines file ('-' = stdin), one object a line"},
    {"id", "ID", "add: the job's id (default: a fresh unique id)"},
    {"timeout", "DUR", "add: the job's time limit (30s, 10m, 2h; default: the worker's)"},
    {"limit", "N", "results, dead: at most N entries, oldest first (default: all)"},
    {"job", "ID", "retry: only the dead letters of job ID (default: all)"},
    {"waiting", NULL, "purge: waiting and retrying jobs"},
    {"results", NULL, "purge: results and the done set"},
    {"dead", NULL, "purge: dead letters"},
    {"all", NULL, "purge: everything of the queue, heartbeats included"},
    {"json", NULL, "print the outcome as JSON"},
    {"help", NULL, "show this help"},
    {NULL, NULL, NULL},
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: pixflow queue add --redis URL --queue NAME [--id ID] [--timeout DUR] -- COMMAND ARGS...\n"
            "       pixflow queue add --redis URL --queue NAME --from FILE\n"
            "       pixflow queue status|results|dead --redis URL --queue NAME [--json] [--limit N]\n"
            "       pixflow queue retry --redis URL --queue NAME [--job ID]\n"
            "       pixflow queue purge --redis URL --queue NAME --waiting|--results|--dead|--all\n\n"
            "A job is a pixflow command line: reproject ..., segment ... or run ... (the words\n"
            "after '--'). Its paths must name storage every worker sees (a shared file\n"
            "system; relative paths resolve in each worker's directory, absolute ones must\n"
            "be under its --root); '..' in paths, '-' and --list are refused.\n"
            "  add      add one job (prints its id) or every line of a JSON Lines file:\n"
            "           {\"argv\": [\"reproject\", \"a.jpg\", \"-o\", \"out\", \"--views\", \"8\"],\n"
            "            \"id\": \"optional\", \"timeout_s\": 600}; the whole file is checked\n"
            "           first and nothing is added when a line is wrong\n"
            "  status   jobs by state: waiting, running, retrying, done, dead; live workers\n"
            "  results  result entries (JSON Lines; --json: one array)\n"
            "  dead     dead letters: the refused or failed entry and why\n"
            "  retry    move dead letters back into the queue (attempts reset)\n"
            "  purge    delete the chosen parts of the queue\n\n"
            "Credentials: $PIXFLOW_REDIS_PASSWORD or --redis-auth-file FILE, the ACL user\n"
            "in $PIXFLOW_REDIS_USER; never on the command line. No TLS (hiredis 0.14).\n\n"
            "options:\n");
    cli_print_options(f, options);
    fprintf(f, "\nexit status: 0 done; 1 Redis failed or refused; 2 bad usage or a bad job\n");
}

typedef struct queue_cmd {
    const char *sub;
    cli_args a;
    pf_jobqueue *q;
    bool json;
} queue_cmd;

static int fail(const char *sub, pf_status st)
{
    fprintf(stderr, "pixflow queue %s: %s\n", sub,
            pf_last_error()[0] ? pf_last_error() : pf_status_str(st));
    return CLI_EXIT_FAIL;
}

/* Reads all of FILE ("-": stdin) into a NUL-terminated buffer. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    if (buf && ferror(f)) {
        free(buf);
        buf = NULL;
    }
    if (f != stdin) fclose(f);
    if (buf) buf[n] = '\0';
    *len = n;
    return buf;
}

static int add_from(queue_cmd *c, const char *path)
{
    size_t len;
    char *text = read_file(path, &len);
    if (!text) {
        fprintf(stderr, "pixflow queue add: --from %s: %s\n", path, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    /* Check every line first: a file is added whole or not at all. */
    int bad = 0, jobs = 0;
    for (int pass = 0; pass < 2 && bad == 0; pass++) {
        if (pass == 1 && c->json) printf("{\"added\":%d,\"ids\":[", jobs);
        char *line = text;
        int lineno = 0, added = 0;
        while (*line) {
            char *nl = strchr(line, '\n');
            size_t n = nl ? (size_t)(nl - line) : strlen(line);
            lineno++;
            size_t t = n;
            while (t > 0 && (line[t - 1] == '\r' || line[t - 1] == ' ' || line[t - 1] == '\t')) t--;
            size_t s = 0;
            while (s < t && (line[s] == ' ' || line[s] == '\t')) s++;
            if (t > s) {
                if (pass == 0) {
                    if (pf_job_validate_json(line + s, t - s) != PF_OK) {
                        fprintf(stderr, "pixflow queue add: %s:%d: %s\n", path, lineno,
                                pf_last_error());
                        bad++;
                    }
                    jobs++;
                } else {
                    char id[PF_JOB_ID_MAX];
                    pf_status st = pf_jobqueue_add_json(c->q, line + s, t - s, id, sizeof id);
                    if (st != PF_OK) {
                        if (c->json) printf("]}\n");
                        fprintf(stderr, "pixflow queue add: %s:%d: %s (%d job%s added before "
                                        "it)\n", path, lineno, pf_last_error(), added,
                                added == 1 ? "" : "s");
                        free(text);
                        return CLI_EXIT_FAIL;
                    }
                    if (c->json) {
                        if (added) printf(",");
                        cli_json_write_escaped(stdout, id);
                    } else {
                        printf("%s\n", id);
                    }
                    added++;
                }
            }
            line = nl ? nl + 1 : line + n;
        }
    }
    free(text);
    if (bad) {
        fprintf(stderr, "pixflow queue add: %d bad line%s in %s: nothing added\n", bad,
                bad == 1 ? "" : "s", path);
        return CLI_EXIT_USAGE;
    }
    if (c->json) printf("]}\n");
    return CLI_EXIT_OK;
}

static int cmd_add(queue_cmd *c)
{
    const char *from = cli_value(options, &c->a, "from");
    if (from) {
        if (c->a.positional_count > 1) {
            fprintf(stderr, "pixflow queue add: --from FILE and a command line: give one\n");
            return CLI_EXIT_USAGE;
        }
        return add_from(c, from);
    }
    if (c->a.positional_count < 2) {
        fprintf(stderr, "pixflow queue add: no job: put the pixflow command after '--': "
                        "pixflow queue add ... -- reproject in.jpg -o out --views 8\n");
        return CLI_EXIT_USAGE;
    }
    pf_job_spec spec = {.id = cli_value(options, &c->a, "id"),
                        .argc = c->a.positional_count - 1,
                        .argv = c->a.positional + 1};
    const char *timeout = cli_value(options, &c->a, "timeout");
    if (timeout && !queue_parse_duration(timeout, 0.001, 604800, &spec.timeout_s)) {
        fprintf(stderr, "pixflow queue add: --timeout '%s': expected a duration such as 90s, "
                        "10m, 2h (at most 7 days)\n", timeout);
        return CLI_EXIT_USAGE;
    }
    char id[PF_JOB_ID_MAX];
    pf_status st = pf_jobqueue_add(c->q, &spec, id, sizeof id);
    if (st == PF_ERR_INVALID) {
        fprintf(stderr, "pixflow queue add: %s\n", pf_last_error());
        return CLI_EXIT_USAGE;
    }
    if (st != PF_OK) return fail("add", st);
    if (c->json) {
        printf("{\"added\":1,\"ids\":[");
        cli_json_write_escaped(stdout, id);
        printf("]}\n");
    } else {
        printf("%s\n", id);
    }
    return CLI_EXIT_OK;
}

static int cmd_status(queue_cmd *c, const char *name)
{
    pf_jobqueue_counts n;
    pf_status st = pf_jobqueue_counts_get(c->q, &n);
    if (st != PF_OK) return fail("status", st);
    if (c->json) {
        cli_json j;
        cli_json_init(&j, stdout);
        cli_json_object_begin(&j, NULL);
        cli_json_string(&j, "queue", name);
        cli_json_int(&j, "waiting", n.waiting);
        cli_json_int(&j, "running", n.running);
        cli_json_int(&j, "retrying", n.retrying);
        cli_json_int(&j, "done", n.done);
        cli_json_int(&j, "dead", n.dead);
        cli_json_int(&j, "results", n.results);
        cli_json_int(&j, "workers", n.workers);
        cli_json_object_end(&j);
        cli_json_finish(&j);
    } else {
        printf("queue %s: %lld waiting, %lld running, %lld retrying, %lld done, %lld dead; "
               "%lld worker%s alive\n", name, (long long)n.waiting, (long long)n.running,
               (long long)n.retrying, (long long)n.done, (long long)n.dead,
               (long long)n.workers, n.workers == 1 ? "" : "s");
    }
    return CLI_EXIT_OK;
}

typedef struct list_state {
    bool json, dead;
    int count;
} list_state;

static bool print_entry(void *arg, const char *entry_id, const char *json, const char *error)
{
    list_state *s = arg;
    if (!s->dead) {
        if (!json[0]) return true; /* not a result entry pixflow wrote */
        if (s->json) printf("%s\n  %s", s->count ? "," : "", json);
        else printf("%s\n", json);
    } else if (s->json) {
        printf("%s\n  {\"entry\":", s->count ? "," : "");
        cli_json_write_escaped(stdout, entry_id);
        printf(",\"error\":");
        cli_json_write_escaped(stdout, error);
        printf(",\"job\":");
        cli_json_write_escaped(stdout, json);
        printf("}");
    } else {
        printf("%s  %s\n  job: %s\n", entry_id, error, json);
    }
    s->count++;
    return true;
}

static int cmd_list(queue_cmd *c, bool dead)
{
    long limit = 0;
    const char *l = cli_value(options, &c->a, "limit");
    if (l && !cli_parse_long(l, 1, 100000000, &limit)) {
        fprintf(stderr, "pixflow queue %s: --limit '%s': expected a whole number >= 1\n",
                c->sub, l);
        return CLI_EXIT_USAGE;
    }
    list_state s = {c->json, dead, 0};
    if (c->json) printf("[");
    pf_status st = dead ? pf_jobqueue_dead(c->q, (size_t)limit, print_entry, &s)
                        : pf_jobqueue_results(c->q, (size_t)limit, print_entry, &s);
    if (c->json) printf("%s]\n", s.count ? "\n" : "");
    if (st != PF_OK) return fail(c->sub, st);
    return CLI_EXIT_OK;
}

static int cmd_retry(queue_cmd *c)
{
    int64_t moved = 0;
    pf_status st = pf_jobqueue_retry(c->q, cli_value(options, &c->a, "job"), &moved);
    if (st != PF_OK) return fail("retry", st);
    if (c->json) printf("{\"retried\":%lld}\n", (long long)moved);
    else printf("%lld dead letter%s moved back into the queue\n", (long long)moved,
                moved == 1 ? "" : "s");
    return CLI_EXIT_OK;
}

static int cmd_purge(queue_cmd *c)
{
    unsigned what = 0;
    if (cli_flag(options, &c->a, "waiting")) what |= PF_JOBQUEUE_PURGE_WAITING;
    if (cli_flag(options, &c->a, "results")) what |= PF_JOBQUEUE_PURGE_RESULTS;
    if (cli_flag(options, &c->a, "dead")) what |= PF_JOBQUEUE_PURGE_DEAD;
    if (cli_flag(options, &c->a, "all")) what |= PF_JOBQUEUE_PURGE_ALL;
    if (!what) {
        fprintf(stderr, "pixflow queue purge: say what to delete: --waiting, --results, --dead "
                        "or --all\n");
        return CLI_EXIT_USAGE;
    }
    int64_t deleted = 0;
    pf_status st = pf_jobqueue_purge(c->q, what, &deleted);
    if (st != PF_OK) return fail("purge", st);
    if (c->json) printf("{\"deleted\":%lld}\n", (long long)deleted);
    else printf("%lld entr%s deleted\n", (long long)deleted, deleted == 1 ? "y" : "ies");
    return CLI_EXIT_OK;
}

int cmd_queue(int argc, char **argv)
{
    queue_cmd c = {0};
    if (!cli_parse("queue", options, argc, argv, &c.a)) return CLI_EXIT_USAGE;
    if (cli_flag(options, &c.a, "help")) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (c.a.positional_count < 1) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    c.sub = c.a.positional[0];
    static const char *const subs[] = {"add", "status", "results", "dead", "retry", "purge"};
    bool known = false;
    for (size_t i = 0; i < sizeof subs / sizeof *subs; i++) known |= strcmp(c.sub, subs[i]) == 0;
    if (!known) {
        fprintf(stderr, "pixflow queue: unknown subcommand '%s': add, status, results, dead, "
                        "retry or purge (see 'pixflow queue --help')\n", c.sub);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(c.sub, "add") != 0 && c.a.positional_count > 1) {
        fprintf(stderr, "pixflow queue %s: unexpected argument '%s'\n", c.sub, c.a.positional[1]);
        return CLI_EXIT_USAGE;
    }
    const char *name = cli_value(options, &c.a, "queue");
    if (!name) {
        fprintf(stderr, "pixflow queue %s: --queue NAME is required\n", c.sub);
        return CLI_EXIT_USAGE;
    }
    c.json = cli_flag(options, &c.a, "json");
    if (!queue_check_available("queue")) return CLI_EXIT_FAIL;
    queue_ignore_sigpipe();
    pf_jobqueue_params p = pf_jobqueue_params_default();
    char pw[1024];
    if (!queue_redis_params("queue", cli_value(options, &c.a, "redis"),
                            cli_value(options, &c.a, "redis-auth-file"), &p.redis, pw, sizeof pw))
        return CLI_EXIT_USAGE;
    p.name = name;
    /* An operator's command should answer promptly, not wait out a restart. */
    p.redis.reconnect_timeout_ms = 5000;
    pf_status st = pf_jobqueue_create(&p, &c.q);
    memset(pw, 0, sizeof pw);
    if (st == PF_ERR_INVALID) {
        fprintf(stderr, "pixflow queue %s: %s\n", c.sub, pf_last_error());
        return CLI_EXIT_USAGE;
    }
    if (st != PF_OK) return fail(c.sub, st);
    int rc;
    if (strcmp(c.sub, "add") == 0) rc = cmd_add(&c);
    else if (strcmp(c.sub, "status") == 0) rc = cmd_status(&c, name);
    else if (strcmp(c.sub, "results") == 0) rc = cmd_list(&c, false);
    else if (strcmp(c.sub, "dead") == 0) rc = cmd_list(&c, true);
    else if (strcmp(c.sub, "retry") == 0) rc = cmd_retry(&c);
    else rc = cmd_purge(&c);
    pf_jobqueue_destroy(&c.q);
    return rc;
}
