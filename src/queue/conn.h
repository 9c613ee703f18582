/* Internal: one Redis connection (hiredis) that survives server restarts.
 *
 * A command that fails on the connection (reset, EOF, timeout) closes it,
 * reconnects with exponential back-off (100 ms doubling to 5 s; each attempt
 * logged at warn level with the redacted URL) and sends the command again,
 * for at most reconnect_timeout_ms. Every command the queue sends may be
 * repeated that way: they are idempotent or their repetition is harmless
 * (docs/queue.md, "Redis restarts"). Error replies (-ERR...) are replies,
 * not connection failures: they are returned to the caller, except those
 * that mean "not now" (LOADING while a restarted server reads its AOF, BUSY,
 * TRYAGAIN, MASTERDOWN, CLUSTERDOWN), which are waited out like a lost
 * connection.
 *
 * Threading: one thread at a time per connection. */
#ifndef PF_QUEUE_CONN_H
#define PF_QUEUE_CONN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pixflow/queue.h"

#ifdef PF_HAVE_HIREDIS
#include <hiredis/hiredis.h>
#endif

typedef struct pf_conn {
    void *ctx;                  /* redisContext *, NULL while disconnected */
    char *host, *path, *user, *password;
    int port, db;
    int connect_timeout_ms, reconnect_timeout_ms;
    int command_timeout_ms;     /* socket timeout of one command (reads block longer) */
    char redacted[512];         /* the URL for messages */
    const atomic_int *abort;    /* NULL, or reconnecting stops when *abort != 0 */
    int64_t reconnects;
} pf_conn;

/* Parses a pf_redis_params URL into host/port/path/db/user (url.c).
 * PF_ERR_INVALID / PF_ERR_UNSUPPORTED with the redacted URL. */
pf_status pf_redis_url_parse(const char *url, pf_conn *c);

/* Parses the URL, connects, logs in and selects the db. */
pf_status pf_conn_open(pf_conn *c, const pf_redis_params *p);
void pf_conn_close(pf_conn *c);

#ifdef PF_HAVE_HIREDIS
/* Sends argv (lens may be NULL for C strings) and returns the reply, which
 * the caller frees (freeReplyObject). NULL when the connection could not be
 * restored in time or *abort was set: *st says which (PF_ERR_IO,
 * PF_ERR_CANCELLED) with a message. `block_ms`: the command may block on the
 * server this long (XREADGROUP BLOCK) before the socket timeout counts. */
redisReply *pf_conn_cmd(pf_conn *c, pf_status *st, int block_ms, int argc, const char **argv,
                        const size_t *lens);
/* EVAL script with nkeys keys and nargs arguments (arg_lens may be NULL). */
redisReply *pf_conn_eval(pf_conn *c, pf_status *st, const char *script, int nkeys,
                         const char *const *keys, int nargs, const char *const *args,
                         const size_t *arg_lens);
/* An error reply as a status and message ("CONTEXT: Redis: ERR ..."). */
pf_status pf_conn_reply_error(const redisReply *r, const char *context);
#endif

#endif
