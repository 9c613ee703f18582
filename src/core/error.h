/* Internal: setting the thread-local error message, logging shorthands. */
#ifndef PF_CORE_ERROR_H
#define PF_CORE_ERROR_H

#include "pixflow/core.h"

/* Stores the formatted detail as the calling thread's last error and returns
 * `status`, so call sites read: return pf_set_error(PF_ERR_INVALID, "...", ...);
 * Arguments may point into the error slot (pf_last_error()): the message is formatted
 * apart and copied in. */
pf_status pf_set_error(pf_status status, const char *fmt, ...) PF_PRINTF(2, 3);

/* Puts "<formatted prefix>: " before the calling thread's last error (the usual way to add
 * context to a callee's message) and returns `status`. */
pf_status pf_error_prefix(pf_status status, const char *fmt, ...) PF_PRINTF(2, 3);

#define PF_LOGE(...) pf_log(PF_LOG_ERROR, __VA_ARGS__)
#define PF_LOGW(...) pf_log(PF_LOG_WARN, __VA_ARGS__)
#define PF_LOGI(...) pf_log(PF_LOG_INFO, __VA_ARGS__)
#define PF_LOGD(...) pf_log(PF_LOG_DEBUG, __VA_ARGS__)

/* Argument check for public wrappers: sets a message naming the argument. */
#define PF_CHECK_ARG(cond, fn, what) \
    do { \
        if (!(cond)) return pf_set_error(PF_ERR_INVALID, "%s: %s", (fn), (what)); \
    } while (0)

/* Formats a byte count as "1.50 GiB" into buf (for messages). */
const char *pf_fmt_bytes(char *buf, size_t size, size_t bytes);

#endif
