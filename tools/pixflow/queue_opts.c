/* Redis options of `pixflow queue` and `pixflow worker` (queue_opts.h).
 * Credentials come from the environment or a file, never from the command
 * line: arguments are visible to every user (ps, /proc/PID/cmdline) and are
 * kept in shell histories and job logs. */
#define _POSIX_C_SOURCE 200809L /* sigaction */

#include "queue_opts.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

bool queue_check_available(const char *cmd)
{
    if (pf_queue_available()) return true;
    fprintf(stderr, "pixflow %s: this pixflow was built without the Redis queue (hiredis was "
                    "not found at build time: install libhiredis-dev and rebuild)\n", cmd);
    return false;
}

void queue_ignore_sigpipe(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
}

static bool read_password_file(const char *cmd, const char *path, char *pw, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "pixflow %s: --redis-auth-file %s: %s\n", cmd, path, strerror(errno));
        return false;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && (st.st_mode & 077))
        fprintf(stderr, "pixflow %s: warning: %s is readable by other users (chmod 600 it)\n",
                cmd, path);
    bool ok = fgets(pw, (int)size, f) != NULL;
    fclose(f);
    if (ok) pw[strcspn(pw, "\r\n")] = '\0';
    if (!ok || !pw[0]) {
        fprintf(stderr, "pixflow %s: --redis-auth-file %s: the first line (the password) is "
                        "empty\n", cmd, path);
        return false;
    }
    return true;
}

bool queue_redis_params(const char *cmd, const char *url, const char *auth_file,
                        pf_redis_params *p, char *pw, size_t pw_size)
{
    if (!url) {
        fprintf(stderr, "pixflow %s: --redis URL is required (see 'pixflow %s --help')\n", cmd,
                cmd);
        return false;
    }
    p->url = url;
    pw[0] = '\0';
    if (auth_file) {
        if (!read_password_file(cmd, auth_file, pw, pw_size)) return false;
    } else {
        const char *env = getenv("PIXFLOW_REDIS_PASSWORD");
        if (env) snprintf(pw, pw_size, "%s", env);
    }
    p->password = pw[0] ? pw : NULL;
    const char *user = getenv("PIXFLOW_REDIS_USER");
    p->user = user && user[0] ? user : NULL;
    return true;
}

bool queue_parse_duration(const char *s, double lo, double hi, double *out)
{
    if (!s || !*s) return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0) return false;
    double scale = 1;
    if (strcmp(end, "ms") == 0) scale = 0.001;
    else if (strcmp(end, "s") == 0 || *end == '\0') scale = 1;
    else if (strcmp(end, "m") == 0) scale = 60;
    else if (strcmp(end, "h") == 0) scale = 3600;
    else return false;
    v *= scale;
    if (v < lo || v > hi) return false;
    *out = v;
    return true;
}
