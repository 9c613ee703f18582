/* Logging: a level, a sink (stderr or the user's callback), PIXFLOW_LOG. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "sys.h"

static atomic_int log_level = -2; /* -2: not yet read from the environment */
static pf_mutex sink_lock = PTHREAD_MUTEX_INITIALIZER;
static pf_log_fn sink_fn;
static void *sink_user;

/* PIXFLOW_LOG_TIME=1 prefixes stderr lines with the time since the library
 * was loaded (about the process start for the CLI): start-up costs (context,
 * handles, plans, the first frame) read straight off a debug log. */
static int64_t load_ns;
static int log_time = -1;

__attribute__((constructor)) static void log_mark_load(void) { load_ns = pf_time_ns(); }

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

const char *pf_log_level_name(pf_log_level level)
{
    if (level == PF_LOG_QUIET) return "quiet";
    if (level < PF_LOG_ERROR || level > PF_LOG_TRACE) return "?";
    return level_names[level];
}

/* Parses without touching the error slot: pf_log_get_level() uses it, and pf_set_error() logs,
 * so reporting a bad PIXFLOW_LOG through pf_set_error() would ask for the level it is reading. */
static bool parse_level(const char *name, pf_log_level *out)
{
    if (!strcmp(name, "quiet")) {
        *out = PF_LOG_QUIET;
        return true;
    }
    for (int i = 0; i <= PF_LOG_TRACE; i++)
        if (!strcmp(name, level_names[i])) {
            *out = (pf_log_level)i;
            return true;
        }
    return false;
}

pf_status pf_log_level_parse(const char *name, pf_log_level *out)
{
    if (!name || !out) return pf_set_error(PF_ERR_INVALID, "pf_log_level_parse: NULL argument");
    if (parse_level(name, out)) return PF_OK;
    return pf_set_error(PF_ERR_INVALID,
                        "unknown log level '%s' (expected quiet|error|warn|info|debug|trace)",
                        name);
}

pf_log_level pf_log_get_level(void)
{
    int lv = atomic_load(&log_level);
    if (lv == -2) {
        pf_log_level parsed = PF_LOG_WARN;
        const char *env = getenv("PIXFLOW_LOG");
        bool bad = env && *env && !parse_level(env, &parsed);
        if (bad) parsed = PF_LOG_WARN;
        int expected = -2;
        /* Only the thread that settles the level warns, so a bad value is reported once. */
        if (atomic_compare_exchange_strong(&log_level, &expected, (int)parsed) && bad)
            fprintf(stderr,
                    "pixflow: warn: ignoring PIXFLOW_LOG='%s' (expected "
                    "quiet|error|warn|info|debug|trace); using 'warn'\n",
                    env);
        lv = atomic_load(&log_level);
    }
    return (pf_log_level)lv;
}

void pf_log_set_level(pf_log_level level) { atomic_store(&log_level, (int)level); }

void pf_log_set_callback(pf_log_fn fn, void *user)
{
    pf_mutex_lock(&sink_lock);
    sink_fn = fn;
    sink_user = user;
    pf_mutex_unlock(&sink_lock);
}

/* Set while this thread is inside pf_log(): a user callback (or anything it calls) that logs or
 * sets an error would otherwise re-enter the sink, deadlock on sink_lock or recurse without end.
 * Such nested messages are dropped. */
static _Thread_local bool in_log;

void pf_log(pf_log_level level, const char *fmt, ...)
{
    if (in_log || level < PF_LOG_ERROR || level > pf_log_get_level()) return;
    in_log = true;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pf_mutex_lock(&sink_lock);
    if (sink_fn)
        sink_fn(sink_user, level, msg);
    else {
        if (log_time < 0) {
            const char *e = getenv("PIXFLOW_LOG_TIME");
            log_time = e && *e && strcmp(e, "0") != 0;
        }
        if (log_time)
            fprintf(stderr, "pixflow: [+%.1f ms] %s: %s\n", (double)(pf_time_ns() - load_ns) / 1e6,
                    pf_log_level_name(level), msg);
        else
            fprintf(stderr, "pixflow: %s: %s\n", pf_log_level_name(level), msg);
    }
    pf_mutex_unlock(&sink_lock);
    in_log = false;
}
