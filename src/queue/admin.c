/* The queue seen from submitters and operators: add, counts, results, dead
 * letters, retry, purge (queue.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "conn.h"
#include "entry.h"
#include "keys.h"

pf_jobqueue_params pf_jobqueue_params_default(void)
{
    pf_jobqueue_params p = {0};
    p.redis.connect_timeout_ms = 2000;
    p.redis.reconnect_timeout_ms = 60000;
    return p;
}

#ifdef PF_HAVE_HIREDIS

bool pf_queue_available(void) { return true; }

struct pf_jobqueue {
    pf_conn conn;
    pf_queue_keys k;
};

pf_status pf_queue_ensure_group(pf_conn *c, const pf_queue_keys *k)
{
    /* From id 0: jobs added before the first worker started are read too. */
    const char *argv[] = {"XGROUP", "CREATE", k->jobs, PF_QUEUE_GROUP, "0", "MKSTREAM"};
    pf_status st;
    redisReply *r = pf_conn_cmd(c, &st, 0, 6, argv, NULL);
    if (!r) return st;
    st = PF_OK;
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "BUSYGROUP", 9) != 0)
        st = pf_conn_reply_error(r, "XGROUP CREATE");
    freeReplyObject(r);
    return st;
}

pf_status pf_jobqueue_create(const pf_jobqueue_params *p, pf_jobqueue **out)
{
    if (!out) return pf_set_error(PF_ERR_INVALID, "pf_jobqueue_create: out is NULL");
    *out = NULL;
    if (!p) return pf_set_error(PF_ERR_INVALID, "pf_jobqueue_create: params are NULL");
    pf_jobqueue *q = calloc(1, sizeof *q);
    if (!q) return pf_set_error(PF_ERR_NOMEM, "pf_jobqueue_create: out of host memory");
    pf_status st = pf_queue_keys_make(p->name, &q->k);
    if (st == PF_OK) st = pf_conn_open(&q->conn, &p->redis);
    if (st != PF_OK) {
        free(q);
        return st;
    }
    *out = q;
    return PF_OK;
}

void pf_jobqueue_destroy(pf_jobqueue **q)
{
    if (!q || !*q) return;
    pf_conn_close(&(*q)->conn);
    free(*q);
    *q = NULL;
}

static pf_status xadd_entry(pf_jobqueue *q, const pf_job_entry *e, char *id_out, size_t id_size)
{
    pf_sbuf b = {0};
    pf_job_entry_write(&b, e);
    if (b.failed) {
        pf_sbuf_free(&b);
        return pf_set_error(PF_ERR_NOMEM, "job %s: out of host memory", e->id);
    }
    const char *argv[] = {"XADD", q->k.jobs, "*", "job", b.data};
    size_t lens[] = {4, strlen(q->k.jobs), 1, 3, b.len};
    pf_status st;
    redisReply *r = pf_conn_cmd(&q->conn, &st, 0, 5, argv, lens);
    pf_sbuf_free(&b);
    if (!r) return pf_error_prefix(st, "job %s", e->id);
    st = r->type == REDIS_REPLY_STRING ? PF_OK : pf_conn_reply_error(r, "XADD");
    freeReplyObject(r);
    if (st == PF_OK && id_out && id_size) snprintf(id_out, id_size, "%s", e->id);
    return st;
}

pf_status pf_jobqueue_add(pf_jobqueue *q, const pf_job_spec *job, char *id_out, size_t id_size)
{
    PF_CHECK_ARG(q, "pf_jobqueue_add", "q is NULL");
    pf_job_entry e;
    pf_status st = pf_job_entry_from_spec(job, &e);
    if (st != PF_OK) return st;
    st = xadd_entry(q, &e, id_out, id_size);
    pf_job_entry_free(&e);
    return st;
}

pf_status pf_jobqueue_add_json(pf_jobqueue *q, const char *json, size_t len, char *id_out,
                               size_t id_size)
{
    PF_CHECK_ARG(q, "pf_jobqueue_add_json", "q is NULL");
    pf_job_entry e;
    pf_status st = pf_job_entry_parse(json, len, true, NULL, &e);
    if (st != PF_OK) return st;
    st = xadd_entry(q, &e, id_out, id_size);
    pf_job_entry_free(&e);
    return st;
}

pf_status pf_jobqueue_counts_get(pf_jobqueue *q, pf_jobqueue_counts *out)
{
    PF_CHECK_ARG(q && out, "pf_jobqueue_counts_get", "q or out is NULL");
    memset(out, 0, sizeof *out);
    const char *keys[] = {q->k.jobs, q->k.delayed, q->k.done, q->k.dead, q->k.results,
                          q->k.workers};
    const char *args[] = {PF_QUEUE_GROUP, "60000"};
    pf_status st;
    redisReply *r = pf_conn_eval(&q->conn, &st, PF_LUA_COUNTS, 6, keys, 2, args, NULL);
    if (!r) return st;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 7) {
        st = pf_conn_reply_error(r, "queue counts");
        freeReplyObject(r);
        return st;
    }
    int64_t *f[] = {&out->waiting, &out->running, &out->retrying, &out->done, &out->dead,
                    &out->results, &out->workers};
    for (int i = 0; i < 7; i++) *f[i] = r->element[i]->integer;
    freeReplyObject(r);
    return PF_OK;
}

/* The value of field `name` in a stream entry's [field, value, ...] array. */
static const redisReply *entry_field(const redisReply *fields, const char *name)
{
    if (!fields || fields->type != REDIS_REPLY_ARRAY) return NULL;
    for (size_t i = 0; i + 1 < fields->elements; i += 2) {
        const redisReply *k = fields->element[i];
        if (k->type == REDIS_REPLY_STRING && strcmp(k->str, name) == 0)
            return fields->element[i + 1];
    }
    return NULL;
}

/* Walks a stream oldest first in pages, calling visit(entry_id, fields). */
typedef bool (*visit_fn)(void *arg, const char *id, const redisReply *fields);

static pf_status walk_stream(pf_jobqueue *q, const char *key, size_t max, visit_fn visit,
                             void *arg)
{
    char start[64] = "-";
    size_t seen = 0;
    for (;;) {
        size_t want = 1000;
        if (max && max - seen < want) want = max - seen;
        if (want == 0) return PF_OK;
        char count[24];
        snprintf(count, sizeof count, "%zu", want);
        const char *argv[] = {"XRANGE", key, start, "+", "COUNT", count};
        pf_status st;
        redisReply *r = pf_conn_cmd(&q->conn, &st, 0, 6, argv, NULL);
        if (!r) return st;
        if (r->type != REDIS_REPLY_ARRAY) {
            st = pf_conn_reply_error(r, "XRANGE");
            freeReplyObject(r);
            return st;
        }
        bool more = r->elements == want;
        for (size_t i = 0; i < r->elements; i++) {
            const redisReply *e = r->element[i];
            if (e->type != REDIS_REPLY_ARRAY || e->elements < 2) continue;
            snprintf(start, sizeof start, "(%s", e->element[0]->str);
            seen++;
            if (!visit(arg, e->element[0]->str, e->element[1])) {
                freeReplyObject(r);
                return PF_OK;
            }
        }
        freeReplyObject(r);
        if (!more) return PF_OK;
    }
}

typedef struct list_ctx {
    pf_jobqueue_entry_fn fn;
    void *arg;
    bool dead;
} list_ctx;

static bool list_visit(void *arg, const char *id, const redisReply *fields)
{
    list_ctx *c = arg;
    const redisReply *v = entry_field(fields, c->dead ? "job" : "result");
    const redisReply *err = c->dead ? entry_field(fields, "error") : NULL;
    const char *json = v && v->type == REDIS_REPLY_STRING ? v->str : "";
    if (!c->dead) {
        /* Anyone with access can XADD to the results stream: hand on only
         * entries that parse, so callers may embed them as JSON. */
        pf_json doc;
        if (pf_json_parse(json, strlen(json), "result entry", &doc) != PF_OK) json = "";
        else if (doc.type != PF_JSON_OBJECT) json = "";
        pf_json_free(&doc);
    }
    const char *error = c->dead ? (err && err->type == REDIS_REPLY_STRING ? err->str : "") : NULL;
    return c->fn(c->arg, id, json, error);
}

pf_status pf_jobqueue_results(pf_jobqueue *q, size_t max_entries, pf_jobqueue_entry_fn fn,
                              void *arg)
{
    PF_CHECK_ARG(q && fn, "pf_jobqueue_results", "q or fn is NULL");
    list_ctx c = {fn, arg, false};
    return walk_stream(q, q->k.results, max_entries, list_visit, &c);
}

pf_status pf_jobqueue_dead(pf_jobqueue *q, size_t max_entries, pf_jobqueue_entry_fn fn,
                           void *arg)
{
    PF_CHECK_ARG(q && fn, "pf_jobqueue_dead", "q or fn is NULL");
    list_ctx c = {fn, arg, true};
    return walk_stream(q, q->k.dead, max_entries, list_visit, &c);
}

typedef struct retry_ctx {
    pf_jobqueue *q;
    const char *job_id;
    int64_t moved;
    pf_status st;
} retry_ctx;

static bool retry_visit(void *arg, const char *id, const redisReply *fields)
{
    retry_ctx *c = arg;
    const redisReply *v = entry_field(fields, "job");
    if (!v || v->type != REDIS_REPLY_STRING) return true;
    pf_job_entry e;
    if (pf_job_entry_parse(v->str, v->len, true, NULL, &e) != PF_OK) return true; /* stays */
    if (c->job_id && strcmp(c->job_id, e.id) != 0) {
        pf_job_entry_free(&e);
        return true;
    }
    e.attempt = 0;
    pf_sbuf b = {0};
    pf_job_entry_write(&b, &e);
    pf_job_entry_free(&e);
    if (b.failed) {
        pf_sbuf_free(&b);
        c->st = pf_set_error(PF_ERR_NOMEM, "retry: out of host memory");
        return false;
    }
    const char *keys[] = {c->q->k.dead, c->q->k.jobs};
    const char *args[] = {id, b.data};
    redisReply *r = pf_conn_eval(&c->q->conn, &c->st, PF_LUA_REVIVE, 2, keys, 2, args, NULL);
    pf_sbuf_free(&b);
    if (!r) return false;
    if (r->type == REDIS_REPLY_INTEGER) c->moved += r->integer;
    else c->st = pf_conn_reply_error(r, "retry");
    freeReplyObject(r);
    return c->st == PF_OK;
}

pf_status pf_jobqueue_retry(pf_jobqueue *q, const char *job_id, int64_t *moved)
{
    PF_CHECK_ARG(q, "pf_jobqueue_retry", "q is NULL");
    if (moved) *moved = 0;
    retry_ctx c = {q, job_id, 0, PF_OK};
    pf_status st = walk_stream(q, q->k.dead, 0, retry_visit, &c);
    if (moved) *moved = c.moved;
    return st != PF_OK ? st : c.st;
}

#define PF_LUA_PURGE \
    "local n = 0\n" \
    "for _, k in ipairs(KEYS) do\n" \
    "  local t = redis.call('TYPE', k).ok\n" \
    "  if t == 'stream' then n = n + redis.call('XLEN', k)\n" \
    "  elseif t == 'set' then n = n + redis.call('SCARD', k)\n" \
    "  elseif t == 'zset' then n = n + redis.call('ZCARD', k)\n" \
    "  elseif t == 'hash' then n = n + redis.call('HLEN', k) end\n" \
    "  redis.call('DEL', k)\n" \
    "end\n" \
    "return n\n"

pf_status pf_jobqueue_purge(pf_jobqueue *q, unsigned what, int64_t *deleted)
{
    PF_CHECK_ARG(q, "pf_jobqueue_purge", "q is NULL");
    if (deleted) *deleted = 0;
    const char *keys[6];
    int n = 0;
    if (what & PF_JOBQUEUE_PURGE_WAITING) {
        keys[n++] = q->k.jobs;
        keys[n++] = q->k.delayed;
    }
    if (what & PF_JOBQUEUE_PURGE_RESULTS) {
        keys[n++] = q->k.results;
        keys[n++] = q->k.done;
    }
    if (what & PF_JOBQUEUE_PURGE_DEAD) keys[n++] = q->k.dead;
    if ((what & PF_JOBQUEUE_PURGE_ALL) == PF_JOBQUEUE_PURGE_ALL) keys[n++] = q->k.workers;
    if (n == 0) return pf_set_error(PF_ERR_INVALID, "pf_jobqueue_purge: nothing chosen");
    pf_status st;
    redisReply *r = pf_conn_eval(&q->conn, &st, PF_LUA_PURGE, n, keys, 0, NULL, NULL);
    if (!r) return st;
    st = r->type == REDIS_REPLY_INTEGER ? PF_OK : pf_conn_reply_error(r, "purge");
    if (st == PF_OK && deleted) *deleted = r->integer;
    freeReplyObject(r);
    return st;
}

#else /* !PF_HAVE_HIREDIS: every call says the build has no queue. */

bool pf_queue_available(void) { return false; }

struct pf_jobqueue {
    int unused;
};


pf_status pf_jobqueue_create(const pf_jobqueue_params *p, pf_jobqueue **out)
{
    (void)p;
    if (out) *out = NULL;
    return pf_queue_unsupported();
}
void pf_jobqueue_destroy(pf_jobqueue **q)
{
    if (q) *q = NULL;
}
pf_status pf_jobqueue_add(pf_jobqueue *q, const pf_job_spec *job, char *id_out, size_t id_size)
{
    return pf_queue_unsupported();
}
pf_status pf_jobqueue_add_json(pf_jobqueue *q, const char *json, size_t len, char *id_out,
                               size_t id_size)
{
    return pf_queue_unsupported();
}
pf_status pf_jobqueue_counts_get(pf_jobqueue *q, pf_jobqueue_counts *out) { return pf_queue_unsupported(); }
pf_status pf_jobqueue_results(pf_jobqueue *q, size_t max_entries, pf_jobqueue_entry_fn fn,
                              void *arg)
{
    return pf_queue_unsupported();
}
pf_status pf_jobqueue_dead(pf_jobqueue *q, size_t max_entries, pf_jobqueue_entry_fn fn,
                           void *arg)
{
    return pf_queue_unsupported();
}
pf_status pf_jobqueue_retry(pf_jobqueue *q, const char *job_id, int64_t *moved)
{
    return pf_queue_unsupported();
}
pf_status pf_jobqueue_purge(pf_jobqueue *q, unsigned what, int64_t *deleted) { return pf_queue_unsupported(); }

#endif
