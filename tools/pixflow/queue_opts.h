/* Options shared by `pixflow queue` and `pixflow worker`: where Redis is and
 * how to log in (never from the command line), and durations. */
#ifndef PF_TOOLS_QUEUE_OPTS_H
#define PF_TOOLS_QUEUE_OPTS_H

#include <stdbool.h>
#include <stddef.h>

#include "pixflow/queue.h"

/* Option table entries both commands have. */
#define QUEUE_REDIS_OPTIONS \
    {"redis", "URL", "redis://HOST[:PORT][/DB] or unix:///PATH (no password in it)"}, \
    {"queue", "NAME", "queue name: 1..64 of A-Z a-z 0-9 . _ -"}, \
    {"redis-auth-file", "FILE", "read the Redis password from FILE's first line"}

/* Fills p from --redis, the password from --redis-auth-file or else
 * $PIXFLOW_REDIS_PASSWORD, the ACL user from $PIXFLOW_REDIS_USER. The
 * password is copied into pw (size bytes). Prints "pixflow CMD: ..." and
 * returns false on a problem (missing --redis, unreadable file). */
bool queue_redis_params(const char *cmd, const char *url, const char *auth_file,
                        pf_redis_params *p, char *pw, size_t pw_size);

/* "30" or "30s", "500ms", "2m", "1h", "1.5s" into seconds in [lo, hi]. */
bool queue_parse_duration(const char *s, double lo, double hi, double *out);

/* Ignores SIGPIPE (hiredis writes to sockets a server may have closed: the
 * write must fail with EPIPE, not kill the process). */
void queue_ignore_sigpipe(void);

/* "pixflow CMD: this pixflow was built without the Redis queue ..." when
 * pf_queue_available() is false; returns whether it is available. */
bool queue_check_available(const char *cmd);

#endif
