/* pixflow/queue.h - scale-out on Redis Streams: a job queue that many
 * machines share, and the worker loop that takes jobs from it.
 *
 * A job is a pixflow command line (`reproject ...`, `segment ...`,
 * `run ...`) stored as one JSON entry of a Redis stream (the schema is in
 * docs/queue.md). Workers read it through a consumer group, run it, record
 * one result, then acknowledge it. Delivery is at least once; results are
 * exactly once per job id (a redelivered job that is already done is not
 * recorded twice). Jobs name their inputs and outputs on storage every worker
 * sees (a shared file system).
 *
 *   // submit
 *   pf_jobqueue_params qp = pf_jobqueue_params_default();
 *   qp.redis.url = "redis://10.0.0.5:6379";  qp.name = "pano";
 *   pf_jobqueue *q = NULL;
 *   if (pf_jobqueue_create(&qp, &q) < 0) ...;        // pf_last_error() says why
 *   const char *words[] = {"reproject", "/data/a.jpg", "-o", "/data/out", "--views", "8"};
 *   char id[PF_JOB_ID_MAX];
 *   pf_jobqueue_add(q, &(pf_job_spec){.argc = 6, .argv = words}, id, sizeof id);
 *   pf_jobqueue_destroy(&q);
 *
 *   // work: run jobs until told to stop (embedding applications pass their
 *   // own runner; `pixflow worker` runs each job as a child process)
 *   pf_worker_params wp = pf_worker_params_default();
 *   wp.redis.url = "redis://10.0.0.5:6379";  wp.queue = "pano";
 *   wp.runner = my_runner;  wp.runner_arg = ctx;
 *   pf_worker *w = NULL;
 *   pf_worker_create(&wp, &w);
 *   pf_worker_run(w);                                 // blocks; pf_worker_stop() ends it
 *   pf_worker_destroy(&w);
 *
 * Without hiredis at build time every function here returns
 * PF_ERR_UNSUPPORTED with a message saying so (pf_queue_available()).
 * TLS: Debian's hiredis 0.14 has none; a `rediss://` URL is refused (use a
 * TLS tunnel such as stunnel or spiped to reach a remote server). */
#ifndef PIXFLOW_QUEUE_H
#define PIXFLOW_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PF_JOB_SCHEMA_VERSION 1 /* the "v" of job and result entries */
#define PF_JOB_ID_MAX 128       /* job ids: 1..127 bytes of [A-Za-z0-9._:-] */
#define PF_JOB_MAX_WORDS 16384  /* words of one job's command line */

/* True when this build has the queue (hiredis). */
PF_API bool pf_queue_available(void);

/* Where the Redis server is and how to log in. Strings need only live for
 * the call that takes the params. */
typedef struct pf_redis_params {
    /* "redis://HOST[:PORT][/DB]" (port 6379, db 0 by default) or
     * "unix:///PATH[?db=DB]". A password in the URL is refused (it would be
     * visible in `ps` and shell history): use `password`. A user name in the
     * URL is accepted; `user` overrides it. */
    const char *url;
    const char *user;              /* Redis 6 ACL user, NULL for the default user */
    const char *password;          /* NULL or "": no AUTH */
    int connect_timeout_ms;        /* one connection attempt (default 2000) */
    /* A lost connection is retried with exponential back-off (100 ms doubling
     * to 5 s, each attempt logged at warn level) for this long before the
     * call fails with PF_ERR_IO (default 60000; 0 = fail at once). */
    int reconnect_timeout_ms;
} pf_redis_params;

/* A URL with its user name replaced by "***" (for logs), into buf; returns
 * buf. Never contains a password (URLs with one are refused anyway). */
PF_API const char *pf_redis_url_redact(const char *url, char *buf, size_t size);

/* The queue: submitting and operating -------------------------------------------------
 *
 * Keys of queue NAME (one hash slot: "{NAME}" is the cluster hash tag):
 *   pixflow:{NAME}:jobs      stream of job entries (consumer group "workers")
 *   pixflow:{NAME}:results   stream of result entries
 *   pixflow:{NAME}:dead      dead-letter stream (the entry, its error)
 *   pixflow:{NAME}:done      set of job ids with a "done" result
 *   pixflow:{NAME}:delayed   sorted set of jobs waiting for a retry, by due time
 *   pixflow:{NAME}:workers   hash worker -> last heartbeat
 * NAME: 1..64 bytes of [A-Za-z0-9._-].
 *
 * Threading: a pf_jobqueue is one connection; use it from one thread at a time
 * (create one per thread). */
typedef struct pf_jobqueue pf_jobqueue;

typedef struct pf_jobqueue_params {
    pf_redis_params redis;
    const char *name;
} pf_jobqueue_params;

PF_API pf_jobqueue_params pf_jobqueue_params_default(void);
/* Connects (and logs in). Errors: PF_ERR_INVALID (URL, name), PF_ERR_IO
 * (cannot connect, AUTH refused: the message has the redacted URL, never the
 * password), PF_ERR_UNSUPPORTED (no hiredis, rediss://). */
PF_API pf_status pf_jobqueue_create(const pf_jobqueue_params *p, pf_jobqueue **out);
PF_API void pf_jobqueue_destroy(pf_jobqueue **q);

/* One job to add. */
typedef struct pf_job_spec {
    const char *id;           /* NULL: a fresh unique id is made */
    int argc;                 /* 1..PF_JOB_MAX_WORDS */
    const char *const *argv;  /* argv[0] = the command: reproject, segment or run */
    double timeout_s;         /* 0: the worker's job timeout */
} pf_job_spec;

/* Validates the job as a worker will (command, words, paths: docs/queue.md)
 * and adds it. The id (given or made) is copied to id_out when not NULL.
 * PF_ERR_INVALID names the word that is refused. */
PF_API pf_status pf_jobqueue_add(pf_jobqueue *q, const pf_job_spec *job, char *id_out,
                                 size_t id_size);
/* Adds a job given as one JSON object (a line of a JSON Lines file):
 * {"argv": [...], "id": "...", "timeout_s": N} with only "argv" required
 * (or a full job entry as docs/queue.md describes). PF_ERR_FORMAT/INVALID
 * name the byte or field. */
PF_API pf_status pf_jobqueue_add_json(pf_jobqueue *q, const char *json, size_t len,
                                      char *id_out, size_t id_size);

/* Checks one JSON job line as pf_jobqueue_add_json would, without a
 * connection (to validate a whole file before adding any of it). Works in
 * builds without hiredis too. */
PF_API pf_status pf_job_validate_json(const char *json, size_t len);

/* Jobs by state. */
typedef struct pf_jobqueue_counts {
    int64_t waiting;   /* in the stream, not yet taken by a worker */
    int64_t running;   /* taken, not yet acknowledged (includes those of dead workers
                        * until another worker claims them) */
    int64_t retrying;  /* failed, waiting for their retry back-off */
    int64_t done;      /* distinct job ids with a "done" result */
    int64_t dead;      /* entries in the dead-letter stream */
    int64_t results;   /* entries in the results stream (done + failed) */
    int64_t workers;   /* workers that sent a heartbeat within the last minute */
} pf_jobqueue_counts;
PF_API pf_status pf_jobqueue_counts_get(pf_jobqueue *q, pf_jobqueue_counts *out);

/* Calls fn for each entry, oldest first, at most max_entries (0: all). For
 * results, `json` is the result entry (docs/queue.md; "" when the entry is
 * not a JSON object: anyone with access may write to the stream) and
 * `error` NULL; for dead letters, `json` is the refused entry as it was
 * (maybe not JSON) and `error` why. Strings live for the call. fn returns
 * false to stop early. Not thread-safe (one pf_jobqueue per thread). */
typedef bool (*pf_jobqueue_entry_fn)(void *arg, const char *entry_id, const char *json,
                                     const char *error);
PF_API pf_status pf_jobqueue_results(pf_jobqueue *q, size_t max_entries,
                                     pf_jobqueue_entry_fn fn, void *arg);
PF_API pf_status pf_jobqueue_dead(pf_jobqueue *q, size_t max_entries, pf_jobqueue_entry_fn fn,
                                  void *arg);

/* Moves dead letters back into the queue with their attempt count reset:
 * all of them (job_id NULL) or those of one job id. *moved (may be NULL) gets
 * how many. Entries that are not valid jobs stay in the dead-letter stream. */
PF_API pf_status pf_jobqueue_retry(pf_jobqueue *q, const char *job_id, int64_t *moved);

/* What pf_jobqueue_purge deletes (or'ed). */
enum {
    PF_JOBQUEUE_PURGE_WAITING = 1u << 0, /* jobs stream, its group, retries waiting */
    PF_JOBQUEUE_PURGE_RESULTS = 1u << 1, /* results and the done set */
    PF_JOBQUEUE_PURGE_DEAD = 1u << 2,    /* dead letters */
    PF_JOBQUEUE_PURGE_ALL = 7u | (1u << 3), /* everything, the workers' heartbeats too */
};
/* Deletes the chosen keys; *deleted (may be NULL) gets the number of entries
 * they held. Purging waiting jobs while workers run leaves their current jobs
 * to finish (their acknowledgements then find nothing). */
PF_API pf_status pf_jobqueue_purge(pf_jobqueue *q, unsigned what, int64_t *deleted);

/* The worker -------------------------------------------------------------------------- */

typedef struct pf_worker pf_worker;

/* A job handed to the runner. Everything lives until the runner returns. */
typedef struct pf_worker_job {
    const char *id;           /* the job id */
    const char *type;         /* "reproject", "segment" or "run" (= argv[0]) */
    int argc;
    const char *const *argv;  /* the command line, argv[argc] == NULL; already
                               * checked (docs/queue.md: no "..", no --list, ...) */
    int attempt;              /* 1 on the first try */
    double timeout_s;         /* the runner must give up after this (> 0) */
    int slot;                 /* which of the worker's concurrent slots, 0-based */
    const pf_worker *worker;
} pf_worker_job;

#define PF_WORKER_FIGURES_MAX 16384
#define PF_WORKER_ERROR_MAX 1024

/* What the runner reports (zeroed before the call). */
typedef struct pf_worker_outcome {
    int exit_status;   /* 0: done; anything else: failed (the CLI's exit codes) */
    bool permanent;    /* failed and retrying cannot help (bad command line): dead
                        * letter now instead of after the retries */
    bool handed_back;  /* the runner stopped because pf_worker_job_cancelled()
                        * said so: the job goes back to the queue untouched */
    char error[PF_WORKER_ERROR_MAX];       /* why it failed, one line */
    char figures[PF_WORKER_FIGURES_MAX];   /* a JSON object (the command's --json
                                            * summary) or "": stored in the result
                                            * as "figures" when it parses */
} pf_worker_outcome;

/* Runs one job. Called on the worker's slot threads, `concurrency` at once:
 * it must be thread-safe. It must return within job->timeout_s, and soon
 * after pf_worker_job_cancelled(job) turns true (then setting handed_back). */
typedef void (*pf_worker_runner)(void *arg, const pf_worker_job *job, pf_worker_outcome *out);

typedef struct pf_worker_params {
    pf_redis_params redis;
    const char *queue;           /* queue name */
    const char *name;            /* worker name, unique in the group; NULL: "HOST:PID" */
    int concurrency;             /* jobs at once, 1..64 (default 1) */
    double visibility_s;         /* a job silent this long on a worker is claimed by
                                  * another (default 60; heartbeats every third of it
                                  * keep a running job's claim fresh) */
    int max_attempts;            /* runs of a job before it is dead-lettered (default 3) */
    double backoff_s;            /* retry n waits backoff_s * 2^(n-1), +-25% (default 1) */
    double backoff_max_s;        /* cap of that wait (default 60) */
    double job_timeout_s;        /* default per-job limit (default 3600) */
    double grace_s;              /* after pf_worker_stop(): running jobs may finish for
                                  * this long, then are handed back (default 25) */
    bool exit_when_empty;        /* return once no job is waiting, retrying or running
                                  * anywhere in the group (after claiming what dead
                                  * workers left) */
    const char *root;            /* NULL, or absolute paths in jobs must be under it */
    pf_worker_runner runner;     /* required */
    void *runner_arg;
} pf_worker_params;

PF_API pf_worker_params pf_worker_params_default(void);

/* Checks the params and connects once (so a wrong URL or password fails
 * here). The worker owns copies of the strings. */
PF_API pf_status pf_worker_create(const pf_worker_params *p, pf_worker **out);
PF_API void pf_worker_destroy(pf_worker **w);

/* Runs the loop on `concurrency` slot threads plus a heartbeat thread until
 * pf_worker_stop() (then PF_OK once the jobs finished or were handed back),
 * the queue is empty with exit_when_empty (PF_OK), or Redis stayed
 * unreachable past reconnect_timeout_ms (PF_ERR_IO). One call per worker. */
PF_API pf_status pf_worker_run(pf_worker *w);

/* Asks the worker to stop taking jobs; running ones get grace_s to finish.
 * `now`: hand running jobs back at once. Async-signal-safe (a SIGTERM
 * handler may call it); any thread. */
PF_API void pf_worker_stop(pf_worker *w, bool now);

/* True when the runner must stop the job and report handed_back. Any thread. */
PF_API bool pf_worker_job_cancelled(const pf_worker_job *job);

typedef struct pf_worker_stats {
    int64_t done;         /* jobs with a result recorded by this worker */
    int64_t failed;       /* runs that failed (each retry counts) */
    int64_t dead;         /* jobs this worker dead-lettered (malformed ones included) */
    int64_t duplicates;   /* redelivered jobs found already done (not run or not recorded again) */
    int64_t claimed;      /* jobs claimed from silent workers */
    int64_t handed_back;  /* jobs returned to the queue on stop */
    int64_t reconnects;   /* successful reconnections to Redis */
    double busy_s;        /* time spent in the runner, all slots */
} pf_worker_stats;
/* A snapshot; any thread. */
PF_API void pf_worker_stats_get(const pf_worker *w, pf_worker_stats *out);
/* The worker's name (as given or made). */
PF_API const char *pf_worker_name(const pf_worker *w);

#ifdef __cplusplus
}
#endif

#endif
