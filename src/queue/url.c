/* Redis URLs: redis://[USER@]HOST[:PORT][/DB] and unix:///PATH[?db=DB].
 * A password in the URL is refused rather than used: command lines are
 * visible to every user of the machine (ps, /proc) and end up in shell
 * history and job logs. Every message shows the URL redacted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "conn.h"

const char *pf_redis_url_redact(const char *url, char *buf, size_t size)
{
    if (!buf || !size) return buf;
    if (!url) {
        snprintf(buf, size, "(none)");
        return buf;
    }
    const char *auth = strstr(url, "://");
    auth = auth ? auth + 3 : url;
    const char *end = auth + strcspn(auth, "/?#");
    const char *at = NULL;
    for (const char *p = auth; p < end; p++)
        if (*p == '@') at = p;
    if (!at) snprintf(buf, size, "%s", url);
    else snprintf(buf, size, "%.*s***%s", (int)(auth - url), url, at);
    return buf;
}

static bool parse_int(const char *s, size_t n, long lo, long hi, long *out)
{
    if (n == 0 || n > 9) return false;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v < lo || v > hi) return false;
    *out = v;
    return true;
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

pf_status pf_redis_url_parse(const char *url, pf_conn *c)
{
    char red[512];
    pf_redis_url_redact(url, red, sizeof red);
    snprintf(c->redacted, sizeof c->redacted, "%s", red);
    if (!url || !*url) return pf_set_error(PF_ERR_INVALID, "Redis URL is empty");
    c->port = 6379;
    c->db = 0;
    if (strncmp(url, "rediss://", 9) == 0)
        return pf_set_error(PF_ERR_UNSUPPORTED,
                            "%s: TLS (rediss://) is not supported: this hiredis build (Debian's "
                            "0.14) has no TLS; reach the server through a TLS tunnel (stunnel, "
                            "spiped) on a local port", red);
    if (strncmp(url, "unix://", 7) == 0) {
        const char *p = url + 7;
        size_t n = strcspn(p, "?");
        if (n == 0 || p[0] != '/')
            return pf_set_error(PF_ERR_INVALID, "%s: expected unix:///PATH[?db=N]", red);
        c->path = dup_n(p, n);
        if (!c->path) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", red);
        if (p[n] == '?') {
            const char *q = p + n + 1;
            long db;
            if (strncmp(q, "db=", 3) != 0 || !parse_int(q + 3, strlen(q + 3), 0, 100000, &db))
                return pf_set_error(PF_ERR_INVALID, "%s: expected ?db=N after the path", red);
            c->db = (int)db;
        }
        return PF_OK;
    }
    if (strncmp(url, "redis://", 8) != 0)
        return pf_set_error(PF_ERR_INVALID,
                            "Redis URL '%s': expected redis://HOST[:PORT][/DB] or "
                            "unix:///PATH[?db=N]", red);
    const char *p = url + 8;
    const char *end = p + strcspn(p, "/?#");
    const char *at = NULL;
    for (const char *q = p; q < end; q++)
        if (*q == '@') at = q;
    if (at) {
        if (memchr(p, ':', (size_t)(at - p)))
            return pf_set_error(PF_ERR_INVALID,
                                "%s: a password in the URL is not accepted (it would show in "
                                "process lists and logs): set PIXFLOW_REDIS_PASSWORD or use "
                                "--redis-auth-file", red);
        if (at > p) {
            c->user = dup_n(p, (size_t)(at - p));
            if (!c->user) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", red);
        }
        p = at + 1;
    }
    const char *host_end;
    if (*p == '[') { /* [IPv6]:port */
        const char *rb = memchr(p, ']', (size_t)(end - p));
        if (!rb) return pf_set_error(PF_ERR_INVALID, "%s: unterminated [IPv6 address]", red);
        c->host = dup_n(p + 1, (size_t)(rb - p - 1));
        host_end = rb + 1;
    } else {
        host_end = p;
        while (host_end < end && *host_end != ':') host_end++;
        c->host = dup_n(p, (size_t)(host_end - p));
    }
    if (!c->host) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", red);
    if (!c->host[0]) return pf_set_error(PF_ERR_INVALID, "%s: no host", red);
    if (host_end < end) {
        long port;
        if (*host_end != ':' || !parse_int(host_end + 1, (size_t)(end - host_end - 1), 1, 65535,
                                           &port))
            return pf_set_error(PF_ERR_INVALID, "%s: port must be 1..65535", red);
        c->port = (int)port;
    }
    if (*end == '/' && end[1]) {
        long db;
        if (!parse_int(end + 1, strlen(end + 1), 0, 100000, &db))
            return pf_set_error(PF_ERR_INVALID, "%s: database must be a number after '/'", red);
        c->db = (int)db;
    } else if (*end && !(*end == '/' && !end[1])) {
        return pf_set_error(PF_ERR_INVALID, "%s: unexpected '%s' after the host", red, end);
    }
    return PF_OK;
}
