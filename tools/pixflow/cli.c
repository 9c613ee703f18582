/* Shared CLI helpers (see cli.h). */
/* sigaction */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700

#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pixflow/io.h"

/* Options ----------------------------------------------------------------------------- */

int cli_option_index(const cli_option *opts, const char *name)
{
    for (int i = 0; opts[i].name && i < CLI_MAX_OPTIONS; i++)
        if (strcmp(opts[i].name, name) == 0) return i;
    return -1;
}

/* Matches "--name" or "--name=value" against the table; *eq points at '=' or NULL. */
static int match_long(const cli_option *opts, const char *arg, const char **eq)
{
    const char *body = arg + 2;
    *eq = strchr(body, '=');
    size_t len = *eq ? (size_t)(*eq - body) : strlen(body);
    for (int i = 0; opts[i].name && i < CLI_MAX_OPTIONS; i++)
        if (strlen(opts[i].name) == len && strncmp(opts[i].name, body, len) == 0) return i;
    return -1;
}

bool cli_parse(const char *cmd, const cli_option *opts, int argc, char **argv, cli_args *out)
{
    memset(out, 0, sizeof *out);
    bool only_positional = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        bool is_option = !only_positional && arg[0] == '-' && arg[1] != '\0';
        if (is_option && strcmp(arg, "--") == 0) {
            only_positional = true;
            continue;
        }
        if (!is_option) {
            if (out->positional_count == CLI_MAX_POSITIONAL) {
                fprintf(stderr, "pixflow %s: too many arguments (at most %d)\n", cmd,
                        CLI_MAX_POSITIONAL);
                return false;
            }
            out->positional[out->positional_count++] = arg;
            continue;
        }
        const char *eq = NULL;
        int idx = -1;
        if (strcmp(arg, "-h") == 0) {
            idx = cli_option_index(opts, "help");
        } else if (strcmp(arg, "-y") == 0) {
            idx = cli_option_index(opts, "overwrite");
        } else if (strcmp(arg, "-n") == 0) {
            idx = cli_option_index(opts, "no-overwrite");
        } else if (strcmp(arg, "-o") == 0) {
            idx = cli_option_index(opts, "output");
        } else if (arg[1] == '-') {
            idx = match_long(opts, arg, &eq);
        }
        if (idx < 0) {
            fprintf(stderr, "pixflow %s: unknown option '%s' (see 'pixflow %s --help')\n", cmd,
                    arg, cmd);
            return false;
        }
        const cli_option *o = &opts[idx];
        if (!o->metavar) {
            if (eq) {
                fprintf(stderr, "pixflow %s: option --%s takes no value (got '%s')\n", cmd,
                        o->name, eq + 1);
                return false;
            }
            out->set[idx] = true;
            continue;
        }
        const char *value = NULL;
        if (eq) {
            value = eq + 1;
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            fprintf(stderr, "pixflow %s: option --%s needs a value (--%s %s)\n", cmd, o->name,
                    o->name, o->metavar);
            return false;
        }
        if (!value[0]) {
            fprintf(stderr, "pixflow %s: option --%s needs a non-empty value (--%s %s)\n", cmd,
                    o->name, o->name, o->metavar);
            return false;
        }
        out->set[idx] = true;
        out->value[idx] = value;
    }
    return true;
}

bool cli_flag(const cli_option *opts, const cli_args *a, const char *name)
{
    int i = cli_option_index(opts, name);
    return i >= 0 && a->set[i];
}

const char *cli_value(const cli_option *opts, const cli_args *a, const char *name)
{
    int i = cli_option_index(opts, name);
    return i >= 0 && a->set[i] ? a->value[i] : NULL;
}

bool cli_parse_long(const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    const long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

void cli_print_options(FILE *f, const cli_option *opts)
{
    int width = 0;
    for (int i = 0; opts[i].name; i++) {
        int w = (int)strlen(opts[i].name) + 2 +
                (opts[i].metavar ? 1 + (int)strlen(opts[i].metavar) : 0);
        if (w > width) width = w;
    }
    for (int i = 0; opts[i].name; i++) {
        char left[96];
        snprintf(left, sizeof left, "--%s%s%s", opts[i].name, opts[i].metavar ? " " : "",
                 opts[i].metavar ? opts[i].metavar : "");
        fprintf(f, "  %-*s  %s\n", width, left, opts[i].help);
    }
}

/* JSON ------------------------------------------------------------------------------------ */

void cli_json_init(cli_json *j, FILE *f)
{
    pf_json_writer_params p = pf_json_writer_params_default();
    p.file = f;
    p.double_digits = 6;
    j->w = NULL;
    if (pf_json_writer_create(&p, &j->w) != PF_OK)
        fprintf(stderr, "pixflow: JSON output: %s\n", pf_last_error());
}

void cli_json_object_begin(cli_json *j, const char *key)
{
    if (j->w) pf_json_writer_object_begin(j->w, key);
}
void cli_json_object_end(cli_json *j)
{
    if (j->w) pf_json_writer_object_end(j->w);
}
void cli_json_array_begin(cli_json *j, const char *key)
{
    if (j->w) pf_json_writer_array_begin(j->w, key);
}
void cli_json_array_end(cli_json *j)
{
    if (j->w) pf_json_writer_array_end(j->w);
}
void cli_json_string(cli_json *j, const char *key, const char *value)
{
    if (j->w) pf_json_writer_string(j->w, key, value);
}
void cli_json_int(cli_json *j, const char *key, long long value)
{
    if (j->w) pf_json_writer_int(j->w, key, value);
}
void cli_json_uint(cli_json *j, const char *key, unsigned long long value)
{
    if (j->w) pf_json_writer_uint(j->w, key, value);
}
void cli_json_double(cli_json *j, const char *key, double value)
{
    if (j->w) pf_json_writer_double(j->w, key, value);
}
void cli_json_bool(cli_json *j, const char *key, bool value)
{
    if (j->w) pf_json_writer_bool(j->w, key, value);
}
void cli_json_null(cli_json *j, const char *key)
{
    if (j->w) pf_json_writer_null(j->w, key);
}

void cli_json_write_escaped(FILE *f, const char *s) { pf_json_write_string(f, s); }

void cli_json_finish(cli_json *j)
{
    if (!j->w) return;
    if (pf_json_writer_finish(j->w) != PF_OK)
        fprintf(stderr, "pixflow: JSON output: %s\n", pf_last_error());
    pf_json_writer_destroy(&j->w);
}

/* Formatting ---------------------------------------------------------------------------- */

const char *cli_fmt_bytes(char *buf, size_t size, uint64_t bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) {
        snprintf(buf, size, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        u++;
    }
    /* 1023.999 KiB would print as "1024.00 KiB": step up instead. */
    if (v >= 1023.995 && u < 6) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, size, "%.2f %s", v, units[u]);
    return buf;
}

/* Signals ------------------------------------------------------------------------------ */

static void (*volatile g_cancel)(void *);
static void *volatile g_cancel_arg;
static volatile sig_atomic_t g_interrupted;

static void on_signal(int sig)
{
    (void)sig;
    int saved = errno;
    if (!g_interrupted) {
        g_interrupted = 1;
        void (*fn)(void *) = g_cancel;
        if (fn) fn(g_cancel_arg);
    } else {
        /* write(2) is async-signal-safe; stdio is not. */
        static const char msg[] = "\npixflow: already stopping: finishing the outputs and the "
                                  "summary (SIGKILL to abandon them)\n";
        ssize_t rc = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)rc;
    }
    errno = saved;
}

static void set_handlers(void (*handler)(int), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = handler;
    sa.sa_flags = flags;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

void cli_signals_install(void (*cancel)(void *arg), void *arg)
{
    g_interrupted = 0;
    g_cancel_arg = arg;
    g_cancel = cancel;
    /* No SA_RESETHAND: a second signal must not kill the process while it
     * writes a video's trailer and renames its outputs into place. */
    set_handlers(on_signal, 0);
    /* Over a file size limit (ulimit -f) a write fails with EFBIG and the
     * output is dropped with a message, instead of SIGXFSZ killing the
     * process. */
    signal(SIGXFSZ, SIG_IGN);
}

void cli_signals_restore(void)
{
    /* The handler stays (outputs are finalized after the wait returns):
     * without a cancel function it only marks and acknowledges. */
    g_cancel = NULL;
    g_cancel_arg = NULL;
}

bool cli_interrupted(void) { return g_interrupted != 0; }

/* Outputs ---------------------------------------------------------------------------------- */

bool cli_overwrite_setup(const char *cmd, const cli_option *opts, const cli_args *a)
{
    bool yes = cli_flag(opts, a, "overwrite"), no = cli_flag(opts, a, "no-overwrite");
    if (yes && no) {
        fprintf(stderr, "pixflow %s: -y (overwrite) and -n (never overwrite) contradict each "
                        "other (see 'pixflow %s --help')\n", cmd, cmd);
        return false;
    }
    pf_output_set_default_flags(no ? PF_OUTPUT_NO_OVERWRITE : 0);
    return true;
}

bool cli_output_may_write(const char *cmd, const char *path)
{
    if (!(pf_output_default_flags() & PF_OUTPUT_NO_OVERWRITE) || !path || !strcmp(path, "-"))
        return true;
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return true;
    fprintf(stderr, "pixflow %s: %s: already exists (not overwritten: -n; -y overwrites)\n", cmd,
            path);
    return false;
}
