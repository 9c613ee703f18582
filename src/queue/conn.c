/* One Redis connection with reconnection (conn.h says what is retried and
 * why that is safe). */
#include "conn.h"
#include "keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "../core/error.h"

#ifdef PF_HAVE_HIREDIS

static struct timeval tv_ms(int ms)
{
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    return tv;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void drop(pf_conn *c)
{
    if (c->ctx) redisFree(c->ctx);
    c->ctx = NULL;
}

/* One attempt: connect, AUTH, SELECT. The password is sent as an argument
 * of its own (never formatted into a string that could reach a message). */
static pf_status connect_once(pf_conn *c)
{
    drop(c);
    redisContext *ctx = c->path ? redisConnectUnixWithTimeout(c->path, tv_ms(c->connect_timeout_ms))
                                : redisConnectWithTimeout(c->host, c->port,
                                                          tv_ms(c->connect_timeout_ms));
    if (!ctx) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", c->redacted);
    if (ctx->err) {
        pf_status st = pf_set_error(PF_ERR_IO, "%s: cannot connect: %s", c->redacted, ctx->errstr);
        redisFree(ctx);
        return st;
    }
    redisSetTimeout(ctx, tv_ms(c->command_timeout_ms));
    if (!c->path) redisEnableKeepAlive(ctx);
    c->ctx = ctx;
    if (c->password && c->password[0]) {
        const char *argv[3] = {"AUTH", c->user ? c->user : c->password, c->password};
        redisReply *r = redisCommandArgv(ctx, c->user ? 3 : 2, argv, NULL);
        if (!r) {
            pf_status st = pf_set_error(PF_ERR_IO, "%s: AUTH: %s", c->redacted, ctx->errstr);
            drop(c);
            return st;
        }
        bool ok = r->type == REDIS_REPLY_STATUS;
        char why[256];
        snprintf(why, sizeof why, "%s", r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        freeReplyObject(r);
        if (!ok) {
            drop(c);
            /* Only the server's reason ("WRONGPASS invalid username-password
             * pair"): never the password. */
            return pf_set_error(PF_ERR_IO, "%s: login refused%s%s: %s", c->redacted,
                                c->user ? " for user " : "", c->user ? c->user : "", why);
        }
    }
    if (c->db) {
        char db[16];
        snprintf(db, sizeof db, "%d", c->db);
        const char *argv[2] = {"SELECT", db};
        redisReply *r = redisCommandArgv(ctx, 2, argv, NULL);
        bool ok = r && r->type == REDIS_REPLY_STATUS;
        pf_status st = ok ? PF_OK
                          : pf_set_error(PF_ERR_IO, "%s: SELECT %d: %s", c->redacted, c->db,
                                         r && r->type == REDIS_REPLY_ERROR ? r->str : ctx->errstr);
        if (r) freeReplyObject(r);
        if (!ok) {
            drop(c);
            return st;
        }
    }
    return PF_OK;
}

/* Connects again with back-off until reconnect_timeout_ms has passed. */
static pf_status reconnect(pf_conn *c, const char *why)
{
    int64_t start = mono_ms();
    int delay = 100;
    PF_LOGW("%s: connection lost (%s): reconnecting", c->redacted, why);
    for (int attempt = 1;; attempt++) {
        if (c->abort && atomic_load(c->abort))
            return pf_set_error(PF_ERR_CANCELLED, "%s: stopped while reconnecting", c->redacted);
        pf_status st = connect_once(c);
        if (st == PF_OK) {
            c->reconnects++;
            PF_LOGW("%s: reconnected after %d attempt%s (%.1f s)", c->redacted, attempt,
                    attempt == 1 ? "" : "s", (double)(mono_ms() - start) / 1000.0);
            return PF_OK;
        }
        int64_t spent = mono_ms() - start;
        if (spent + delay > c->reconnect_timeout_ms)
            return pf_set_error(PF_ERR_IO, "%s: still unreachable after %.1f s (%d attempts): %s",
                                c->redacted, (double)spent / 1000.0, attempt, pf_last_error());
        PF_LOGW("%s: reconnect attempt %d failed (%s); next in %d ms", c->redacted, attempt,
                pf_last_error(), delay);
        /* Sleep in slices so a stop request is seen promptly. */
        for (int slept = 0; slept < delay; slept += 50) {
            if (c->abort && atomic_load(c->abort)) break;
            sleep_ms(50);
        }
        delay = delay * 2 > 5000 ? 5000 : delay * 2;
    }
}

pf_status pf_conn_open(pf_conn *c, const pf_redis_params *p)
{
    memset(c, 0, sizeof *c);
    if (!p) return pf_set_error(PF_ERR_INVALID, "Redis params are NULL");
    pf_status st = pf_redis_url_parse(p->url, c);
    if (st != PF_OK) {
        pf_conn_close(c);
        return st;
    }
    if (p->user && p->user[0]) {
        free(c->user);
        c->user = strdup(p->user);
    }
    if (p->password && p->password[0]) c->password = strdup(p->password);
    c->connect_timeout_ms = p->connect_timeout_ms > 0 ? p->connect_timeout_ms : 2000;
    c->reconnect_timeout_ms = p->reconnect_timeout_ms >= 0 ? p->reconnect_timeout_ms : 60000;
    c->command_timeout_ms = 10000;
    if ((p->user && p->user[0] && !c->user) || (p->password && p->password[0] && !c->password)) {
        pf_conn_close(c);
        return pf_set_error(PF_ERR_NOMEM, "out of host memory");
    }
    st = connect_once(c);
    if (st != PF_OK) pf_conn_close(c);
    return st;
}

void pf_conn_close(pf_conn *c)
{
    if (!c) return;
    drop(c);
    free(c->host);
    free(c->path);
    free(c->user);
    if (c->password) {
        /* Not left in freed memory for a core dump to show. */
        volatile char *v = c->password;
        while (*v) *v++ = 0;
        free(c->password);
    }
    const atomic_int *abort_flag = c->abort;
    memset(c, 0, sizeof *c);
    c->abort = abort_flag;
}

/* Error replies that mean "not now" rather than "no": a server loading its
 * AOF after a restart, a replica without its master, a script running past
 * its time limit, a cluster slot moving. The command is sent again. */
static bool transient_error(const redisReply *r)
{
    static const char *const prefixes[] = {"LOADING", "BUSY ", "TRYAGAIN", "MASTERDOWN",
                                           "CLUSTERDOWN"};
    if (r->type != REDIS_REPLY_ERROR || !r->str) return false;
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (strncmp(r->str, prefixes[i], strlen(prefixes[i])) == 0) return true;
    return false;
}

redisReply *pf_conn_cmd(pf_conn *c, pf_status *st, int block_ms, int argc, const char **argv,
                        const size_t *lens)
{
    pf_status dummy;
    if (!st) st = &dummy;
    *st = PF_OK;
    int64_t transient_since = -1;
    int delay = 100;
    for (;;) {
        if (!c->ctx) {
            *st = reconnect(c, "not connected");
            if (*st != PF_OK) return NULL;
        }
        redisContext *ctx = c->ctx;
        if (block_ms > 0) redisSetTimeout(ctx, tv_ms(c->command_timeout_ms + block_ms));
        redisReply *r = redisCommandArgv(ctx, argc, argv, lens);
        if (block_ms > 0 && r) redisSetTimeout(ctx, tv_ms(c->command_timeout_ms));
        if (r && transient_error(r)) {
            int64_t now = mono_ms();
            if (transient_since < 0) {
                transient_since = now;
                PF_LOGW("%s: %.32s: %.200s: waiting", c->redacted, argv[0], r->str);
            }
            bool give_up = now - transient_since + delay > c->reconnect_timeout_ms ||
                           (c->abort && atomic_load(c->abort));
            if (give_up) return r; /* the caller sees the error reply */
            freeReplyObject(r);
            sleep_ms(delay);
            delay = delay * 2 > 2000 ? 2000 : delay * 2;
            continue;
        }
        if (r) return r;
        char why[192];
        snprintf(why, sizeof why, "%.32s: %.128s", argv[0], ctx->errstr[0] ? ctx->errstr : "no reply");
        drop(c);
        if (c->reconnect_timeout_ms == 0) {
            *st = pf_set_error(PF_ERR_IO, "%s: %s", c->redacted, why);
            return NULL;
        }
        *st = reconnect(c, why);
        if (*st != PF_OK) return NULL;
    }
}

redisReply *pf_conn_eval(pf_conn *c, pf_status *st, const char *script, int nkeys,
                         const char *const *keys, int nargs, const char *const *args,
                         const size_t *arg_lens)
{
    int argc = 3 + nkeys + nargs;
    const char *small_argv[32];
    size_t small_lens[32];
    const char **argv = argc <= 32 ? small_argv : malloc((size_t)argc * sizeof *argv);
    size_t *lens = argc <= 32 ? small_lens : malloc((size_t)argc * sizeof *lens);
    if (!argv || !lens) {
        if (argv != small_argv) free(argv);
        if (lens != small_lens) free(lens);
        *st = pf_set_error(PF_ERR_NOMEM, "EVAL: out of host memory");
        return NULL;
    }
    char nk[16];
    snprintf(nk, sizeof nk, "%d", nkeys);
    argv[0] = "EVAL";
    argv[1] = script;
    argv[2] = nk;
    for (int i = 0; i < nkeys; i++) argv[3 + i] = keys[i];
    for (int i = 0; i < nargs; i++) argv[3 + nkeys + i] = args[i];
    for (int i = 0; i < argc; i++) lens[i] = strlen(argv[i]);
    if (arg_lens)
        for (int i = 0; i < nargs; i++) lens[3 + nkeys + i] = arg_lens[i];
    redisReply *r = pf_conn_cmd(c, st, 0, argc, argv, lens);
    if (argv != small_argv) free(argv);
    if (lens != small_lens) free(lens);
    return r;
}

pf_status pf_conn_reply_error(const redisReply *r, const char *context)
{
    if (!r) return pf_set_error(PF_ERR_IO, "%s: no reply from Redis", context);
    if (r->type == REDIS_REPLY_ERROR)
        return pf_set_error(PF_ERR_IO, "%s: Redis: %.300s", context, r->str);
    return pf_set_error(PF_ERR_IO, "%s: unexpected reply type %d from Redis", context, r->type);
}

#else /* !PF_HAVE_HIREDIS */

pf_status pf_conn_open(pf_conn *c, const pf_redis_params *p)
{
    memset(c, 0, sizeof *c);
    (void)p;
    return pf_queue_unsupported();
}

void pf_conn_close(pf_conn *c)
{
    if (!c) return;
    free(c->host);
    free(c->path);
    free(c->user);
    free(c->password);
    memset(c, 0, sizeof *c);
}

#endif
