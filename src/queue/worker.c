/* The worker loop (queue.h).
 *
 * Design. `concurrency` slot threads each own a Redis connection and loop:
 * take one entry (a retry that is due is first moved into the stream; an
 * entry silent on another worker past the visibility timeout is claimed
 * with XAUTOCLAIM; otherwise XREADGROUP blocks up to 500 ms for a new one),
 * check it, skip it when its job id is already done, run it through the
 * runner, then settle it with one script: result + done mark + XACK
 * (COMPLETE), retry later (RETRY), dead letter (DEAD) or back into the
 * stream (HANDBACK). A heartbeat thread with its own connection stamps the
 * worker every third of the visibility timeout and resets the idle time of
 * the running entries (XCLAIM to itself, only while still theirs), so only
 * the jobs of a silent worker are claimed by others.
 *
 * Failure model: a worker may die at any point. Before its settle script
 * runs, its entry stays pending and is claimed by another worker once idle
 * past the visibility timeout; the job runs again (outputs are written
 * atomically, so a second run replaces files whole). After the script, the
 * job is settled. A job whose settle script ran but whose worker could not
 * tell (Redis restarted) is settled again after reconnecting: the done set
 * makes the second COMPLETE record nothing. */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/error.h"
#include "../core/sys.h"
#include "conn.h"
#include "entry.h"
#include "keys.h"

#define MAX_SLOTS 64

pf_worker_params pf_worker_params_default(void)
{
    pf_worker_params p = {0};
    p.redis.connect_timeout_ms = 2000;
    p.redis.reconnect_timeout_ms = 60000;
    p.concurrency = 1;
    p.visibility_s = 60;
    p.max_attempts = 3;
    p.backoff_s = 1;
    p.backoff_max_s = 60;
    p.job_timeout_s = 3600;
    p.grace_s = 25;
    return p;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#ifdef PF_HAVE_HIREDIS

typedef struct slot_state {
    char entry_id[64]; /* the running entry, "" when idle */
} slot_state;

struct pf_worker {
    pf_worker_params p;
    char *url, *user, *password, *queue, *name, *root;
    pf_queue_keys k;
    int64_t visibility_ms;

    atomic_int stop;       /* 0 running, 1 stopping (grace), 2 stop now */
    atomic_llong stop_ms;  /* mono_ms() of the first stop request */
    atomic_int abort_io;   /* connections stop reconnecting */
    atomic_int slots_left; /* slot threads still running */
    atomic_bool ran;

    pf_mutex lock; /* slots[], stats, fatal */
    pf_cond wake;  /* the heartbeat thread's sleep */
    slot_state slots[MAX_SLOTS];
    pf_worker_stats stats;
    pf_status fatal;
    char fatal_msg[512];
};

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

pf_status pf_worker_create(const pf_worker_params *p, pf_worker **out)
{
    if (!out) return pf_set_error(PF_ERR_INVALID, "pf_worker_create: out is NULL");
    *out = NULL;
    if (!p) return pf_set_error(PF_ERR_INVALID, "pf_worker_create: params are NULL");
    if (!p->runner) return pf_set_error(PF_ERR_INVALID, "pf_worker_create: runner is NULL");
    if (p->concurrency < 1 || p->concurrency > MAX_SLOTS)
        return pf_set_error(PF_ERR_INVALID, "worker: concurrency %d is outside 1..%d",
                            p->concurrency, MAX_SLOTS);
    if (!(p->visibility_s >= 0.3 && p->visibility_s <= 86400))
        return pf_set_error(PF_ERR_INVALID, "worker: visibility timeout %g s is outside "
                            "[0.3, 86400]", p->visibility_s);
    if (p->max_attempts < 1 || p->max_attempts > 1000)
        return pf_set_error(PF_ERR_INVALID, "worker: max attempts %d is outside 1..1000",
                            p->max_attempts);
    if (!(p->backoff_s >= 0 && p->backoff_max_s >= p->backoff_s && p->backoff_max_s <= 86400))
        return pf_set_error(PF_ERR_INVALID, "worker: back-off %g s (max %g s) is not "
                            "0 <= backoff <= max <= 86400", p->backoff_s, p->backoff_max_s);
    if (!(p->job_timeout_s > 0 && p->job_timeout_s <= 7 * 86400))
        return pf_set_error(PF_ERR_INVALID, "worker: job timeout %g s is outside (0, 604800]",
                            p->job_timeout_s);
    if (!(p->grace_s >= 0 && p->grace_s <= 86400))
        return pf_set_error(PF_ERR_INVALID, "worker: grace %g s is outside [0, 86400]", p->grace_s);
    if (p->root && p->root[0] != '/')
        return pf_set_error(PF_ERR_INVALID, "worker: root '%s' is not an absolute path", p->root);

    pf_worker *w = calloc(1, sizeof *w);
    if (!w) return pf_set_error(PF_ERR_NOMEM, "pf_worker_create: out of host memory");
    w->p = *p;
    pf_status st = pf_queue_keys_make(p->queue, &w->k);
    if (st != PF_OK) {
        free(w);
        return st;
    }
    char host[256] = "host";
    gethostname(host, sizeof host - 1);
    char made[320];
    snprintf(made, sizeof made, "%s:%ld", host, (long)getpid());
    w->url = dup_or_null(p->redis.url);
    w->user = dup_or_null(p->redis.user);
    w->password = dup_or_null(p->redis.password);
    w->queue = dup_or_null(p->queue);
    w->name = strdup(p->name && p->name[0] ? p->name : made);
    w->root = dup_or_null(p->root);
    w->p.redis.url = w->url;
    w->p.redis.user = w->user;
    w->p.redis.password = w->password;
    w->p.queue = w->queue;
    w->p.name = w->name;
    w->p.root = w->root;
    w->visibility_ms = (int64_t)(p->visibility_s * 1000);
    pf_mutex_init(&w->lock);
    pf_cond_init(&w->wake);
    if (!w->name || (p->redis.url && !w->url) || (p->root && !w->root) ||
        (p->redis.password && !w->password) || (p->redis.user && !w->user)) {
        pf_worker_destroy(&w);
        return pf_set_error(PF_ERR_NOMEM, "pf_worker_create: out of host memory");
    }
    /* Connect once now so a wrong URL, password or server fails here. */
    pf_conn probe;
    st = pf_conn_open(&probe, &w->p.redis);
    if (st == PF_OK) st = pf_queue_ensure_group(&probe, &w->k);
    pf_conn_close(&probe);
    if (st != PF_OK) {
        pf_worker_destroy(&w);
        return st;
    }
    *out = w;
    return PF_OK;
}

void pf_worker_destroy(pf_worker **wp)
{
    if (!wp || !*wp) return;
    pf_worker *w = *wp;
    pf_mutex_destroy(&w->lock);
    pf_cond_destroy(&w->wake);
    free(w->url);
    free(w->user);
    if (w->password) {
        volatile char *v = w->password;
        while (*v) *v++ = 0;
        free(w->password);
    }
    free(w->queue);
    free(w->name);
    free(w->root);
    free(w);
    *wp = NULL;
}

void pf_worker_stop(pf_worker *w, bool now)
{
    if (!w) return;
    /* Only atomics and clock_gettime: async-signal-safe. */
    long long zero = 0;
    atomic_compare_exchange_strong(&w->stop_ms, &zero, (long long)mono_ms());
    int want = now ? 2 : 1;
    int cur = atomic_load(&w->stop);
    while (cur < want && !atomic_compare_exchange_weak(&w->stop, &cur, want)) {
    }
    if (now) atomic_store(&w->abort_io, 1);
}

bool pf_worker_job_cancelled(const pf_worker_job *job)
{
    if (!job || !job->worker) return false;
    pf_worker *w = (pf_worker *)job->worker;
    int s = atomic_load(&w->stop);
    if (s >= 2) return true;
    if (s == 1)
        return mono_ms() - atomic_load(&w->stop_ms) >= (int64_t)(w->p.grace_s * 1000);
    return false;
}

void pf_worker_stats_get(const pf_worker *w, pf_worker_stats *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!w) return;
    pf_worker *mw = (pf_worker *)w;
    pf_mutex_lock(&mw->lock);
    *out = mw->stats;
    pf_mutex_unlock(&mw->lock);
}

const char *pf_worker_name(const pf_worker *w) { return w ? w->name : NULL; }

static void set_fatal(pf_worker *w, pf_status st)
{
    pf_mutex_lock(&w->lock);
    if (w->fatal == PF_OK) {
        w->fatal = st;
        snprintf(w->fatal_msg, sizeof w->fatal_msg, "%s", pf_last_error());
    }
    pf_mutex_unlock(&w->lock);
    atomic_store(&w->stop, 2);
    atomic_store(&w->abort_io, 1);
}

#define STAT_ADD(w, field, n) \
    do { \
        pf_mutex_lock(&(w)->lock); \
        (w)->stats.field += (n); \
        pf_mutex_unlock(&(w)->lock); \
    } while (0)

/* Settling ---------------------------------------------------------------------------- */

typedef struct slot_ctx {
    pf_worker *w;
    int index;
    pf_conn conn;
    unsigned rng;
    char claim_cursor[64]; /* where XAUTOCLAIM goes on in the pending list */
} slot_ctx;

/* Runs a settle script; its integer reply (-1 on a non-integer reply). A
 * connection that cannot be restored is fatal for the worker: the entry
 * stays pending and another worker takes it after the visibility timeout. */
static long long settle(slot_ctx *s, const char *what, const char *script, int nkeys,
                        const char *const *keys, int nargs, const char *const *args)
{
    pf_status st;
    redisReply *r = pf_conn_eval(&s->conn, &st, script, nkeys, keys, nargs, args, NULL);
    if (!r) {
        pf_error_prefix(st, "worker %s: %s", s->w->name, what);
        set_fatal(s->w, st);
        return -1;
    }
    long long v = -1;
    if (r->type == REDIS_REPLY_INTEGER) v = r->integer;
    else PF_LOGE("worker %s: %s: %s", s->w->name, what, r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    freeReplyObject(r);
    return v;
}

/* The job id of an entry that failed the checks, if one can be read. */
static void salvage_id(const char *raw, size_t len, char *id, size_t size)
{
    id[0] = '\0';
    pf_json doc;
    if (pf_json_parse(raw, len, "entry", &doc) != PF_OK) return;
    const pf_json *v = pf_json_get(&doc, "id");
    if (v && v->type == PF_JSON_STRING && pf_job_id_valid(v->string))
        snprintf(id, size, "%s", v->string);
    pf_json_free(&doc);
}

/* Whether argv[i] names an output: the values of -o, --output, --mask-out
 * and --trace (also as --opt=value). */
static const char *output_of(const pf_job_entry *e, int i, bool *skip_next)
{
    static const char *const opts[] = {"-o", "--output", "--mask-out", "--trace"};
    const char *w = e->argv[i];
    *skip_next = false;
    for (size_t k = 0; k < sizeof opts / sizeof *opts; k++) {
        size_t n = strlen(opts[k]);
        if (strcmp(w, opts[k]) == 0 && i + 1 < e->argc) {
            *skip_next = true;
            return e->argv[i + 1];
        }
        if (strncmp(w, opts[k], n) == 0 && w[n] == '=') return w + n + 1;
    }
    return NULL;
}

/* Appends valid JSON without the whitespace between tokens: result entries
 * stay one line (`queue results` prints JSON Lines). */
static void append_compact(pf_sbuf *b, const char *s, size_t n)
{
    bool in_string = false;
    size_t run = 0; /* start of the pending run of bytes to copy */
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_string) {
            if (c == '\\') i++;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
            pf_sbuf_append(b, s + run, i - run);
            run = i + 1;
        }
    }
    pf_sbuf_append(b, s + run, n - run);
}

static void write_result(pf_sbuf *b, const pf_worker *w, const pf_job_entry *e, bool done,
                         int attempt, const pf_worker_outcome *o, int64_t started_ms,
                         int64_t finished_ms, double duration_s, const char *error)
{
    /* Compact: `queue results` prints one entry per line. */
    pf_json_writer jw;
    pf_json_writer_init(&jw, NULL, b, true, 17);
    pf_json_writer_object_begin(&jw, NULL);
    pf_json_writer_int(&jw, "v", PF_JOB_SCHEMA_VERSION);
    pf_json_writer_string(&jw, "id", e->id);
    pf_json_writer_string(&jw, "type", e->type);
    pf_json_writer_string(&jw, "status", done ? "done" : "failed");
    pf_json_writer_int(&jw, "exit", o ? o->exit_status : -1);
    pf_json_writer_int(&jw, "attempt", attempt);
    pf_json_writer_string(&jw, "worker", w->name);
    pf_json_writer_int(&jw, "submitted_ms", (long long)e->submitted_ms);
    pf_json_writer_int(&jw, "started_ms", (long long)started_ms);
    pf_json_writer_int(&jw, "finished_ms", (long long)finished_ms);
    pf_json_writer_decimal(&jw, "duration_s", (int64_t)llround(duration_s * 1e6), 6);
    pf_json_writer_array_begin(&jw, "outputs");
    for (int i = 1; i < e->argc; i++) {
        bool skip;
        const char *out = output_of(e, i, &skip);
        if (out) pf_json_writer_string(&jw, NULL, out);
        if (skip) i++;
    }
    pf_json_writer_array_end(&jw);
    if (error) pf_json_writer_string(&jw, "error", error);
    if (o && o->figures[0]) {
        size_t len = strnlen(o->figures, sizeof o->figures);
        pf_json fig;
        /* Only a well-formed object goes in as JSON: the result must parse. */
        if (pf_json_parse(o->figures, len, "figures", &fig) == PF_OK) {
            if (fig.type == PF_JSON_OBJECT) {
                PF_JSON_TEXT(&jw, ",\"figures\":");
                append_compact(b, o->figures, len);
            }
            pf_json_free(&fig);
        }
    }
    pf_json_writer_object_end(&jw);
    pf_json_writer_release(&jw);
}

/* Dead-letters an entry: the stream keeps `raw` as received and the error;
 * when the job id is known a "failed" result is recorded too. */
static void dead_letter(slot_ctx *s, const char *entry_id, const char *raw, const char *error,
                        const char *job_id, const char *result)
{
    pf_worker *w = s->w;
    const char *keys[] = {w->k.jobs, w->k.dead, w->k.results};
    const char *args[] = {PF_QUEUE_GROUP, entry_id, w->name, raw, error, job_id, w->name,
                          result ? result : ""};
    if (settle(s, "dead letter", PF_LUA_DEAD, 3, keys, 8, args) == 1) {
        STAT_ADD(w, dead, 1);
        PF_LOGW("worker %s: job %s -> dead letter: %s", w->name, job_id[0] ? job_id : entry_id,
                error);
    }
}

static int64_t backoff_ms(slot_ctx *s, int attempt)
{
    const pf_worker_params *p = &s->w->p;
    double d = p->backoff_s * pow(2.0, attempt - 1);
    if (d > p->backoff_max_s) d = p->backoff_max_s;
    double jitter = 0.75 + 0.5 * ((double)rand_r(&s->rng) / RAND_MAX);
    return (int64_t)(d * jitter * 1000);
}

/* Checks, runs and settles one entry. `deliveries`: how often Redis has
 * handed it out (0 when unknown). */
static void process(slot_ctx *s, const char *entry_id, const redisReply *fields, long long deliveries)
{
    pf_worker *w = s->w;
    const redisReply *raw = NULL;
    if (fields && fields->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i + 1 < fields->elements; i += 2)
            if (fields->element[i]->type == REDIS_REPLY_STRING &&
                strcmp(fields->element[i]->str, "job") == 0 &&
                fields->element[i + 1]->type == REDIS_REPLY_STRING)
                raw = fields->element[i + 1];
    if (!raw) {
        dead_letter(s, entry_id, "", "stream entry has no 'job' field", "", NULL);
        return;
    }
    pf_job_entry e;
    if (pf_job_entry_parse(raw->str, raw->len, false, w->root, &e) != PF_OK) {
        char err[PF_WORKER_ERROR_MAX], id[PF_JOB_ID_MAX];
        snprintf(err, sizeof err, "%s", pf_last_error());
        salvage_id(raw->str, raw->len, id, sizeof id);
        pf_sbuf res = {0};
        if (id[0]) {
            pf_job_entry stub = {.version = 1, .argc = 0};
            snprintf(stub.id, sizeof stub.id, "%s", id);
            snprintf(stub.type, sizeof stub.type, "?");
            int64_t now = pf_unix_ms();
            write_result(&res, w, &stub, false, 0, NULL, now, now, 0, err);
        }
        dead_letter(s, entry_id, raw->str, err, id, res.failed ? NULL : res.data);
        pf_sbuf_free(&res);
        return;
    }
    const char *done_keys[] = {w->k.jobs, w->k.done, w->k.results};
    int max_deliveries = 2 * w->p.max_attempts + 1;
    if (deliveries > max_deliveries) {
        char err[256];
        snprintf(err, sizeof err, "delivered %lld times without a result (the workers running "
                 "it died or lost Redis each time)", deliveries);
        pf_sbuf res = {0};
        int64_t now = pf_unix_ms();
        write_result(&res, w, &e, false, e.attempt, NULL, now, now, 0, err);
        dead_letter(s, entry_id, raw->str, err, e.id, res.failed ? NULL : res.data);
        pf_sbuf_free(&res);
        pf_job_entry_free(&e);
        return;
    }
    /* A redelivery of a job that is already done: acknowledge, do not run. */
    const char *ism[] = {"SISMEMBER", w->k.done, e.id};
    pf_status st;
    redisReply *r = pf_conn_cmd(&s->conn, &st, 0, 3, ism, NULL);
    if (!r) {
        set_fatal(w, st);
        pf_job_entry_free(&e);
        return;
    }
    bool already = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    if (already) {
        const char *args[] = {PF_QUEUE_GROUP, entry_id, e.id, ""};
        settle(s, "acknowledge duplicate", PF_LUA_COMPLETE, 3, done_keys, 4, args);
        STAT_ADD(w, duplicates, 1);
        PF_LOGI("worker %s: job %s is already done: acknowledged without running", w->name, e.id);
        pf_job_entry_free(&e);
        return;
    }

    pf_mutex_lock(&w->lock);
    snprintf(w->slots[s->index].entry_id, sizeof w->slots[s->index].entry_id, "%s", entry_id);
    pf_mutex_unlock(&w->lock);

    pf_worker_job job = {.id = e.id, .type = e.type, .argc = e.argc,
                         .argv = (const char *const *)e.argv, .attempt = e.attempt + 1,
                         .timeout_s = e.timeout_s > 0 ? e.timeout_s : w->p.job_timeout_s,
                         .slot = s->index, .worker = w};
    pf_worker_outcome *o = calloc(1, sizeof *o);
    if (!o) {
        set_fatal(w, pf_set_error(PF_ERR_NOMEM, "worker: out of host memory"));
        pf_job_entry_free(&e);
        return;
    }
    int64_t started = pf_unix_ms();
    int64_t t0 = mono_ms();
    w->p.runner(w->p.runner_arg, &job, o);
    double duration = (double)(mono_ms() - t0) / 1000.0;
    int64_t finished = pf_unix_ms();
    o->error[sizeof o->error - 1] = '\0';
    o->figures[sizeof o->figures - 1] = '\0';

    pf_mutex_lock(&w->lock);
    w->slots[s->index].entry_id[0] = '\0';
    w->stats.busy_s += duration;
    pf_mutex_unlock(&w->lock);

    if (o->handed_back) {
        pf_sbuf b = {0};
        pf_job_entry_write(&b, &e);
        const char *keys[] = {w->k.jobs};
        const char *args[] = {PF_QUEUE_GROUP, entry_id, w->name, b.data ? b.data : ""};
        if (!b.failed && settle(s, "hand back", PF_LUA_HANDBACK, 1, keys, 4, args) == 1) {
            STAT_ADD(w, handed_back, 1);
            PF_LOGW("worker %s: job %s handed back to the queue (stopping)", w->name, e.id);
        }
        pf_sbuf_free(&b);
    } else if (o->exit_status == 0) {
        pf_sbuf b = {0};
        write_result(&b, w, &e, true, job.attempt, o, started, finished, duration, NULL);
        const char *args[] = {PF_QUEUE_GROUP, entry_id, e.id, b.data ? b.data : ""};
        long long rec = b.failed ? -1 : settle(s, "record result", PF_LUA_COMPLETE, 3, done_keys,
                                               4, args);
        if (rec == 1) {
            STAT_ADD(w, done, 1);
            PF_LOGI("worker %s: job %s done in %.3f s", w->name, e.id, duration);
        } else if (rec == 0) {
            STAT_ADD(w, duplicates, 1);
            PF_LOGW("worker %s: job %s was done meanwhile by another worker: result not recorded "
                    "again", w->name, e.id);
        }
        pf_sbuf_free(&b);
    } else {
        STAT_ADD(w, failed, 1);
        char err[PF_WORKER_ERROR_MAX];
        snprintf(err, sizeof err, "%s", o->error[0] ? o->error : "failed");
        if (o->permanent || job.attempt >= w->p.max_attempts) {
            char why[PF_WORKER_ERROR_MAX + 64];
            snprintf(why, sizeof why, "%s (attempt %d of %d%s)", err, job.attempt,
                     w->p.max_attempts, o->permanent ? ", not retried" : "");
            e.attempt = job.attempt;
            free(e.last_error);
            e.last_error = strdup(err);
            pf_sbuf jb = {0}, rb = {0};
            pf_job_entry_write(&jb, &e);
            write_result(&rb, w, &e, false, job.attempt, o, started, finished, duration, why);
            if (!jb.failed)
                dead_letter(s, entry_id, jb.data, why, e.id, rb.failed ? NULL : rb.data);
            pf_sbuf_free(&jb);
            pf_sbuf_free(&rb);
        } else {
            int64_t delay = backoff_ms(s, job.attempt);
            e.attempt = job.attempt;
            free(e.last_error);
            e.last_error = strdup(err);
            pf_sbuf b = {0};
            pf_job_entry_write(&b, &e);
            char delay_s[24];
            snprintf(delay_s, sizeof delay_s, "%lld", (long long)delay);
            const char *keys[] = {w->k.jobs, w->k.delayed};
            const char *args[] = {PF_QUEUE_GROUP, entry_id, w->name, delay_s, b.data ? b.data : ""};
            if (!b.failed && settle(s, "schedule retry", PF_LUA_RETRY, 2, keys, 5, args) == 1)
                PF_LOGW("worker %s: job %s failed (attempt %d of %d): %s; retry in %.1f s",
                        w->name, e.id, job.attempt, w->p.max_attempts, err, (double)delay / 1000);
            pf_sbuf_free(&b);
        }
    }
    free(o);
    pf_job_entry_free(&e);
}

/* Taking entries ---------------------------------------------------------------------- */

static bool is_nogroup(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOGROUP", 7) == 0;
}

/* Moves due retries into the stream: how many are waiting (moved or not
 * yet due), or <0 when the connection is lost for good. */
static int promote(slot_ctx *s)
{
    const char *keys[] = {s->w->k.delayed, s->w->k.jobs};
    const char *args[] = {"100"};
    pf_status st;
    redisReply *r = pf_conn_eval(&s->conn, &st, PF_LUA_PROMOTE, 2, keys, 1, args, NULL);
    if (!r) {
        if (st != PF_ERR_CANCELLED) set_fatal(s->w, st);
        return -1;
    }
    int n = r->type == REDIS_REPLY_INTEGER ? (int)r->integer : 0;
    freeReplyObject(r);
    return n;
}

/* How many times the entry was delivered (XPENDING), 0 when unknown. */
static long long deliveries_of(slot_ctx *s, const char *id)
{
    const char *argv[] = {"XPENDING", s->w->k.jobs, PF_QUEUE_GROUP, id, id, "1"};
    pf_status st;
    redisReply *r = pf_conn_cmd(&s->conn, &st, 0, 6, argv, NULL);
    long long n = 0;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
        r->element[0]->type == REDIS_REPLY_ARRAY && r->element[0]->elements == 4)
        n = r->element[0]->element[3]->integer;
    if (r) freeReplyObject(r);
    return n;
}

/* One XAUTOCLAIM step from the slot's cursor: claims at most one entry idle
 * past the visibility timeout and processes it. Returns 1 when one was
 * processed, 0 when none, <0 on a fatal error; *wrapped when the scan of
 * the pending list is complete (the cursor is back at 0-0). */
static int claim_step(slot_ctx *s, bool *wrapped)
{
    pf_worker *w = s->w;
    char idle[24];
    snprintf(idle, sizeof idle, "%lld", (long long)w->visibility_ms);
    if (!s->claim_cursor[0]) snprintf(s->claim_cursor, sizeof s->claim_cursor, "0-0");
    const char *argv[] = {"XAUTOCLAIM", w->k.jobs, PF_QUEUE_GROUP, w->name, idle,
                          s->claim_cursor, "COUNT", "1"};
    pf_status st;
    *wrapped = true;
    redisReply *r = pf_conn_cmd(&s->conn, &st, 0, 8, argv, NULL);
    if (!r) return st;
    if (is_nogroup(r)) {
        freeReplyObject(r);
        snprintf(s->claim_cursor, sizeof s->claim_cursor, "0-0");
        return pf_queue_ensure_group(&s->conn, &w->k) == PF_OK ? 0 : -1;
    }
    int got = 0;
    /* XAUTOCLAIM examines at most 10 x COUNT pending entries per call: the
     * cursor carries the scan over the whole list across calls. */
    if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 && r->element[0]->type == REDIS_REPLY_STRING) {
        snprintf(s->claim_cursor, sizeof s->claim_cursor, "%s", r->element[0]->str);
        *wrapped = strcmp(s->claim_cursor, "0-0") == 0;
    }
    if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
        r->element[1]->type == REDIS_REPLY_ARRAY) {
        const redisReply *list = r->element[1];
        for (size_t i = 0; i < list->elements; i++) {
            const redisReply *e = list->element[i];
            if (e->type != REDIS_REPLY_ARRAY || e->elements < 2) continue;
            const char *id = e->element[0]->str;
            long long n = deliveries_of(s, id);
            STAT_ADD(w, claimed, 1);
            PF_LOGW("worker %s: claimed entry %s from a silent worker (delivery %lld)", w->name,
                    id, n);
            process(s, id, e->element[1], n);
            got = 1;
        }
    } else if (r->type == REDIS_REPLY_ERROR) {
        PF_LOGE("worker %s: XAUTOCLAIM: %s", w->name, r->str);
    }
    freeReplyObject(r);
    return got;
}

/* Claims and processes one entry of a silent worker if there is one,
 * scanning the whole pending list at most once. 1 / 0 / <0 as claim_step. */
static int claim_one(slot_ctx *s)
{
    for (int i = 0; i < 1000; i++) {
        bool wrapped;
        int got = claim_step(s, &wrapped);
        if (got != 0 || wrapped) return got;
    }
    return 0;
}

/* Reads one new entry (blocking up to 500 ms) and processes it. 1 / 0 / <0. */
static int read_one(slot_ctx *s)
{
    pf_worker *w = s->w;
    const char *argv[] = {"XREADGROUP", "GROUP", PF_QUEUE_GROUP, w->name, "COUNT", "1",
                          "BLOCK", "500", "STREAMS", w->k.jobs, ">"};
    pf_status st;
    redisReply *r = pf_conn_cmd(&s->conn, &st, 500, 11, argv, NULL);
    if (!r) return st;
    if (is_nogroup(r)) {
        freeReplyObject(r);
        return pf_queue_ensure_group(&s->conn, &w->k) == PF_OK ? 0 : -1;
    }
    int got = 0;
    /* [[stream, [[id, fields]...]]] or nil on timeout. */
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
        r->element[0]->type == REDIS_REPLY_ARRAY && r->element[0]->elements == 2) {
        const redisReply *list = r->element[0]->element[1];
        for (size_t i = 0; list->type == REDIS_REPLY_ARRAY && i < list->elements; i++) {
            const redisReply *e = list->element[i];
            if (e->type != REDIS_REPLY_ARRAY || e->elements < 2) continue;
            process(s, e->element[0]->str, e->element[1], 1);
            got = 1;
        }
    } else if (r->type == REDIS_REPLY_ERROR) {
        PF_LOGE("worker %s: XREADGROUP: %s", w->name, r->str);
        struct timespec ts = {0, 200 * 1000000L};
        nanosleep(&ts, NULL);
    }
    freeReplyObject(r);
    return got;
}

/* Whether nothing is waiting, running or retrying anywhere in the group. */
static bool queue_empty(slot_ctx *s)
{
    static const char script[] =
        "return redis.call('XLEN', KEYS[1]) + redis.call('ZCARD', KEYS[2])";
    const char *keys[] = {s->w->k.jobs, s->w->k.delayed};
    pf_status st;
    redisReply *r = pf_conn_eval(&s->conn, &st, script, 2, keys, 0, NULL, NULL);
    bool empty = r && r->type == REDIS_REPLY_INTEGER && r->integer == 0;
    if (r) freeReplyObject(r);
    return empty;
}

/* Processes the entries pending on this worker's own name that no slot is
 * running: deliveries whose reply was lost when the connection broke (Redis
 * restarted between sending an entry and our reading it), or left by a
 * previous process with the same --name. Without this they would wait for
 * the visibility timeout. Returns <0 on a fatal error. */
static int recover_own(slot_ctx *s)
{
    pf_worker *w = s->w;
    const char *argv[] = {"XREADGROUP", "GROUP", PF_QUEUE_GROUP, w->name, "COUNT", "100",
                          "STREAMS", w->k.jobs, "0"};
    pf_status st;
    redisReply *r = pf_conn_cmd(&s->conn, &st, 0, 9, argv, NULL);
    if (!r) return st;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
        r->element[0]->type == REDIS_REPLY_ARRAY && r->element[0]->elements == 2 &&
        r->element[0]->element[1]->type == REDIS_REPLY_ARRAY) {
        const redisReply *list = r->element[0]->element[1];
        for (size_t i = 0; i < list->elements && atomic_load(&w->stop) == 0; i++) {
            const redisReply *e = list->element[i];
            if (e->type != REDIS_REPLY_ARRAY || e->elements < 2) continue;
            const char *id = e->element[0]->str;
            /* Reserve it, unless a slot of this worker is running it. */
            bool running = false;
            pf_mutex_lock(&w->lock);
            for (int k = 0; k < w->p.concurrency; k++)
                running |= strcmp(w->slots[k].entry_id, id) == 0;
            if (!running)
                snprintf(w->slots[s->index].entry_id, sizeof w->slots[s->index].entry_id, "%s",
                         id);
            pf_mutex_unlock(&w->lock);
            if (running) continue;
            if (e->element[1]->type == REDIS_REPLY_ARRAY) {
                PF_LOGW("worker %s: entry %s was delivered to this worker but not run (lost "
                        "reply or earlier process): running it now", w->name, id);
                process(s, id, e->element[1], 0);
            } else {
                /* Deleted while pending: nothing to run, only the delivery to drop. */
                const char *ack[] = {"XACK", w->k.jobs, PF_QUEUE_GROUP, id};
                redisReply *a = pf_conn_cmd(&s->conn, &st, 0, 4, ack, NULL);
                if (a) freeReplyObject(a);
            }
            pf_mutex_lock(&w->lock);
            w->slots[s->index].entry_id[0] = '\0';
            pf_mutex_unlock(&w->lock);
        }
    }
    freeReplyObject(r);
    return 0;
}

static void *slot_main(void *arg)
{
    slot_ctx *s = arg;
    pf_worker *w = s->w;
    pf_status st = pf_conn_open(&s->conn, &w->p.redis);
    s->conn.abort = &w->abort_io;
    if (st != PF_OK) {
        set_fatal(w, st);
    } else {
        int64_t claim_every = w->visibility_ms / 2 > 1000 ? w->visibility_ms / 2 : 1000;
        int64_t next_claim = 0, next_promote = 0;
        int64_t recovered_at = -1; /* s->conn.reconnects when last recovered */
        while (atomic_load(&w->stop) == 0) {
            int64_t now = mono_ms();
            if (recovered_at != s->conn.reconnects) {
                /* At start and after every reconnection. */
                recovered_at = s->conn.reconnects;
                int r = recover_own(s);
                if (r < 0) {
                    if (r != PF_ERR_CANCELLED) set_fatal(w, (pf_status)r);
                    break;
                }
            }
            if (now >= next_promote) {
                /* Often while retries are waiting, else once a second. */
                int moved = promote(s);
                if (moved < 0) break;
                next_promote = now + (moved > 0 ? 250 : 1000);
            }
            int got = 0;
            if (now >= next_claim) {
                got = claim_one(s);
                next_claim = now + claim_every;
            }
            if (got == 0) got = read_one(s);
            if (got < 0) {
                if (got != PF_ERR_CANCELLED) set_fatal(w, (pf_status)got);
                break;
            }
            if (got == 0 && atomic_load(&w->stop) == 0) {
                /* Idle: look for jobs of silent workers now, then maybe end. */
                got = claim_one(s);
                next_claim = mono_ms() + claim_every;
                if (got < 0) {
                    set_fatal(w, (pf_status)got);
                    break;
                }
                if (got == 0 && w->p.exit_when_empty && queue_empty(s)) break;
            }
        }
    }
    STAT_ADD(w, reconnects, s->conn.reconnects);
    pf_conn_close(&s->conn);
    if (atomic_fetch_sub(&w->slots_left, 1) == 1) {
        pf_mutex_lock(&w->lock);
        pf_cond_broadcast(&w->wake);
        pf_mutex_unlock(&w->lock);
    }
    return NULL;
}

/* The heartbeat ---------------------------------------------------------------------- */

static void heartbeat(pf_worker *w, pf_conn *c)
{
    const char *args[3 + MAX_SLOTS];
    char ids[MAX_SLOTS][64];
    int n = 0;
    pf_mutex_lock(&w->lock);
    for (int i = 0; i < w->p.concurrency; i++)
        if (w->slots[i].entry_id[0]) {
            snprintf(ids[n], sizeof ids[n], "%s", w->slots[i].entry_id);
            n++;
        }
    pf_mutex_unlock(&w->lock);
    args[0] = PF_QUEUE_GROUP;
    args[1] = w->name;
    args[2] = w->name;
    for (int i = 0; i < n; i++) args[3 + i] = ids[i];
    const char *keys[] = {w->k.jobs, w->k.workers};
    pf_status st;
    redisReply *r = pf_conn_eval(c, &st, PF_LUA_HEARTBEAT, 2, keys, 3 + n, args, NULL);
    if (!r) {
        PF_LOGW("worker %s: heartbeat: %s", w->name, pf_last_error());
        return;
    }
    if (r->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i < r->elements && (int)i < n; i++)
            if (r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == 0)
                PF_LOGW("worker %s: entry %s was claimed by another worker (this one was "
                        "silent past the visibility timeout); its result will not be recorded "
                        "twice", w->name, ids[i]);
    freeReplyObject(r);
}

/* On a clean exit: the worker leaves the heartbeat hash, and the consumer
 * group when nothing is pending on it (a consumer is deleted with its
 * pending entries, so only an empty one). */
static void leave(pf_worker *w, pf_conn *c)
{
    static const char script[] =
        "redis.call('HDEL', KEYS[2], ARGV[2])\n"
        "local cs = redis.pcall('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])\n"
        "if type(cs) ~= 'table' or cs.err then return 0 end\n"
        "for _, c in ipairs(cs) do\n"
        "  if c[2] == ARGV[2] and c[4] == 0 then\n"
        "    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])\n"
        "    return 1\n"
        "  end\n"
        "end\n"
        "return 0\n";
    const char *keys[] = {w->k.jobs, w->k.workers};
    const char *args[] = {PF_QUEUE_GROUP, w->name};
    int saved = c->reconnect_timeout_ms;
    c->reconnect_timeout_ms = 0; /* best effort: never hold up an exit */
    pf_status st;
    redisReply *r = pf_conn_eval(c, &st, script, 2, keys, 2, args, NULL);
    if (r) freeReplyObject(r);
    c->reconnect_timeout_ms = saved;
}

pf_status pf_worker_run(pf_worker *w)
{
    PF_CHECK_ARG(w, "pf_worker_run", "w is NULL");
    if (atomic_exchange(&w->ran, true))
        return pf_set_error(PF_ERR_INVALID, "pf_worker_run: called twice on worker %s", w->name);
    pf_conn hb;
    pf_status st = pf_conn_open(&hb, &w->p.redis);
    if (st != PF_OK) return st;
    hb.abort = &w->abort_io;
    char url[512];
    PF_LOGI("worker %s: queue %s on %s, %d slot%s, visibility %.1f s", w->name, w->queue,
            pf_redis_url_redact(w->url, url, sizeof url), w->p.concurrency,
            w->p.concurrency == 1 ? "" : "s", w->p.visibility_s);
    heartbeat(w, &hb);

    slot_ctx *slots = calloc((size_t)w->p.concurrency, sizeof *slots);
    pf_thread *threads = calloc((size_t)w->p.concurrency, sizeof *threads);
    if (!slots || !threads) {
        free(slots);
        free(threads);
        pf_conn_close(&hb);
        return pf_set_error(PF_ERR_NOMEM, "pf_worker_run: out of host memory");
    }
    int started = 0;
    atomic_store(&w->slots_left, w->p.concurrency);
    for (int i = 0; i < w->p.concurrency; i++) {
        slots[i].w = w;
        slots[i].index = i;
        slots[i].rng = (unsigned)getpid() * 2654435761u + (unsigned)i;
        char name[16];
        snprintf(name, sizeof name, "pf-worker-%d", i % 100);
        st = pf_thread_start(&threads[i], name, slot_main, &slots[i]);
        if (st != PF_OK) {
            set_fatal(w, st);
            atomic_fetch_sub(&w->slots_left, w->p.concurrency - i);
            break;
        }
        started++;
    }
    int64_t period = w->visibility_ms / 3 > 50 ? w->visibility_ms / 3 : 50;
    pf_mutex_lock(&w->lock);
    while (atomic_load(&w->slots_left) > 0) {
        pf_cond_timedwait_until(&w->wake, &w->lock, pf_deadline_ns(period * 1000));
        if (atomic_load(&w->slots_left) == 0) break;
        pf_mutex_unlock(&w->lock);
        heartbeat(w, &hb);
        pf_mutex_lock(&w->lock);
    }
    pf_mutex_unlock(&w->lock);
    for (int i = 0; i < started; i++) pf_thread_join(threads[i]);
    free(slots);
    free(threads);
    pf_status fatal = w->fatal;
    if (fatal == PF_OK) leave(w, &hb);
    int64_t reconnects = hb.reconnects;
    pf_conn_close(&hb);
    STAT_ADD(w, reconnects, reconnects);
    if (fatal != PF_OK) return pf_set_error(fatal, "%s", w->fatal_msg);
    return PF_OK;
}

#else /* !PF_HAVE_HIREDIS */

struct pf_worker {
    int unused;
};


pf_status pf_worker_create(const pf_worker_params *p, pf_worker **out)
{
    if (out) *out = NULL;
    return pf_queue_unsupported();
}
void pf_worker_destroy(pf_worker **w)
{
    if (w) *w = NULL;
}
pf_status pf_worker_run(pf_worker *w) { return pf_queue_unsupported(); }
void pf_worker_stop(pf_worker *w, bool now) {}
bool pf_worker_job_cancelled(const pf_worker_job *job) { return false; }
void pf_worker_stats_get(const pf_worker *w, pf_worker_stats *out)
{
    if (out) memset(out, 0, sizeof *out);
}
const char *pf_worker_name(const pf_worker *w) { return NULL; }

#endif
