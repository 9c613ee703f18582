/* Logging: a level, a sink (stderr or the user's callback), PIXFLOW_LOG. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "sys.h"

static atomic_int log_level = -2; /* -2: not yet read from the environment */
static pf_mutex sink_lock = PTHREAD_MUTEX_INITIALIZER;
static pf_log_fn sink_fn;
static void *sink_user;

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

const char *pf_log_level_name(pf_log_level level)
{
    if (level == PF_LOG_QUIET) return "quiet";
    if (level < PF_LOG_ERROR || level > PF_LOG_TRACE) return "?";
    return level_names[level];
}

pf_status pf_log_level_parse(const char *name, pf_log_level *out)
{
    if (!name || !out) return pf_set_error(PF_ERR_INVALID, "pf_log_level_parse: NULL argument");
    if (!strcmp(name, "quiet")) {
        *out = PF_LOG_QUIET;
        return PF_OK;
    }
    for (int i = 0; i <= PF_LOG_TRACE; i++)
        if (!strcmp(name, level_names[i])) {
            *out = (pf_log_level)i;
            return PF_OK;
        }
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
        if (env && *env && pf_log_level_parse(env, &parsed) != PF_OK) {
            fprintf(stderr, "pixflow: warn: ignoring PIXFLOW_LOG='%s'\n", env);
            parsed = PF_LOG_WARN;
        }
        int expected = -2;
        atomic_compare_exchange_strong(&log_level, &expected, (int)parsed);
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

void pf_log(pf_log_level level, const char *fmt, ...)
{
    if (level < PF_LOG_ERROR || level > pf_log_get_level()) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pf_mutex_lock(&sink_lock);
    if (sink_fn)
        sink_fn(sink_user, level, msg);
    else
        fprintf(stderr, "pixflow: %s: %s\n", pf_log_level_name(level), msg);
    pf_mutex_unlock(&sink_lock);
}
