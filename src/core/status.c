/* Status names, the thread-local error message, version queries. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

static _Thread_local char last_error[1024];

const char *pf_status_str(pf_status status)
{
    switch (status) {
    case PF_OK: return "ok";
    case PF_AGAIN: return "try again";
    case PF_EOF: return "end of stream";
    case PF_TIMEOUT: return "timed out";
    case PF_ERR_INVALID: return "invalid argument";
    case PF_ERR_NOMEM: return "out of memory";
    case PF_ERR_UNSUPPORTED: return "unsupported";
    case PF_ERR_NO_DEVICE: return "no such device";
    case PF_ERR_DEVICE: return "device error";
    case PF_ERR_IO: return "i/o error";
    case PF_ERR_FORMAT: return "malformed data";
    case PF_ERR_CLOSED: return "closed";
    case PF_ERR_BUSY: return "busy";
    case PF_ERR_CANCELLED: return "cancelled";
    case PF_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

pf_status pf_set_error(pf_status status, const char *fmt, ...)
{
    /* Format into scratch, then copy: an argument may point into last_error itself
     * (pf_set_error(st, "x: %s", pf_last_error())), and vsnprintf with overlapping source and
     * destination is undefined (glibc overwrites the message while still reading it). */
    char scratch[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(scratch, sizeof scratch, fmt, ap);
    va_end(ap);
    memcpy(last_error, scratch, strlen(scratch) + 1);
    pf_log(PF_LOG_DEBUG, "%s: %s", pf_status_str(status), last_error);
    return status;
}

pf_status pf_error_prefix(pf_status status, const char *fmt, ...)
{
    char prefix[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    return pf_set_error(status, "%s: %s", prefix, last_error);
}

const char *pf_last_error(void) { return last_error; }

void pf_clear_error(void) { last_error[0] = '\0'; }

const char *pf_version_string(void) { return PF_VERSION_STRING; }

int pf_version_code(void) { return PF_VERSION_CODE; }

const char *pf_fmt_bytes(char *buf, size_t size, size_t bytes)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, size, "%zu B", bytes);
    else
        snprintf(buf, size, "%.2f %s", v, units[u]);
    return buf;
}
