/* Thread pool: data-parallel parallel_for and a FIFO task queue sharing one
 * set of workers.
 *
 * Design
 * - size - 1 worker threads; the caller of parallel_for is the size-th
 *   participant and always runs ith 0 (kernels may rely on that, as in ggml).
 * - parallel_for publishes one job {fn, user, nth} under the pool lock, wakes
 *   up to nth - 1 workers, runs ith 0, then every participant claims further
 *   ith values from an atomic counter until they run out. Claiming shares out
 *   nth > size for free and, more importantly, the caller never waits for a
 *   worker to *start*: if every worker is busy in a long task, the caller runs
 *   all calls itself. It waits only for workers that joined (job_refs) to
 *   finish the calls they claimed.
 * - A worker joins a job only under the lock while the job is open and not yet
 *   joined by it (job_gen), and the caller closes the job under the lock once
 *   job_refs is 0, so a late worker can never claim an index of the next job
 *   while still holding the previous fn.
 * - Concurrent callers are serialised by pfor_lock: one job at a time keeps the
 *   claiming trivial, and one kernel already uses every core.
 * - Re-entrancy: thread-locals record which pool a worker belongs to and the
 *   parallel_for calls a thread is inside. A nested call on the same pool runs
 *   serially on the calling thread; it would otherwise wait for pfor_lock held
 *   by its own outer call. (Cycles across two pools are not detected.)
 * - Tasks: a ring of {fn, user} that doubles when full, so steady state does
 *   no malloc per task. Workers take an open job first (latency-critical), then
 *   tasks in FIFO order.
 * - Workers sleep on a condvar and never spin: the machines we run on are
 *   often small and shared, and a spinning worker steals the caller's core.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pixflow/thread.h"

#include "error.h"
#include "sys.h"

#define POOL_MAX_THREADS 1024
#define POOL_TASKS_INITIAL 64 /* power of two */

typedef struct pool_task {
    pf_task_fn fn;
    void *user;
} pool_task;

struct pf_threadpool {
    int size;     /* workers + the calling thread */
    int nworkers; /* threads actually started */
    pf_thread *threads;
    char name[11];

    pf_mutex pfor_lock; /* serialises parallel_for callers */

    pf_mutex lock;   /* everything below */
    pf_cond work_cv; /* workers: a job opened, a task was queued, or shutdown */
    pf_cond done_cv; /* parallel_for caller: job_refs dropped to 0 */
    pf_cond idle_cv; /* wait_idle: the queue drained and tasks finished */

    bool job_open;
    uint64_t job_gen;
    pf_parallel_fn job_fn;
    void *job_user;
    int job_nth;
    int job_refs;         /* workers still running calls of the open job */
    _Atomic int job_next; /* next ith to claim; only read/written lock-free */

    pool_task *tasks; /* ring, task_cap is a power of two */
    size_t task_cap, task_head, task_count;
    int tasks_running;
    int tasks_waiting; /* running tasks blocked in wait_idle (they count as done there) */
    bool shutdown;
};

/* The parallel_for calls this thread is inside, innermost first. */
typedef struct pfor_frame {
    const pf_threadpool *tp;
    struct pfor_frame *prev;
} pfor_frame;

static _Thread_local pf_threadpool *tls_worker_pool; /* set for a worker's lifetime */
static _Thread_local pfor_frame *tls_pfor;
static _Thread_local int tls_task_depth; /* tasks this thread is running (nested by helping) */

static bool in_pool(const pf_threadpool *tp)
{
    if (tls_worker_pool == tp) return true;
    for (const pfor_frame *f = tls_pfor; f; f = f->prev)
        if (f->tp == tp) return true;
    return false;
}

static void run_claims(pf_threadpool *tp, pf_parallel_fn fn, void *user, int nth)
{
    for (;;) {
        int ith = atomic_fetch_add_explicit(&tp->job_next, 1, memory_order_relaxed);
        if (ith >= nth) return;
        fn(user, ith, nth);
    }
}

/* Wakes wait_idle callers when their condition may hold: nothing queued and
 * every running task is itself waiting in wait_idle (0 == 0 for outsiders). */
static void notify_idle_locked(pf_threadpool *tp)
{
    if (tp->task_count == 0 && tp->tasks_running == tp->tasks_waiting)
        pf_cond_broadcast(&tp->idle_cv);
}

/* Pops the head task and runs it with the lock released. Lock held on entry and exit. */
static void run_one_task_locked(pf_threadpool *tp)
{
    pool_task t = tp->tasks[tp->task_head];
    tp->task_head = (tp->task_head + 1) & (tp->task_cap - 1);
    tp->task_count--;
    tp->tasks_running++;
    pf_mutex_unlock(&tp->lock);
    tls_task_depth++;
    t.fn(t.user);
    tls_task_depth--;
    pf_mutex_lock(&tp->lock);
    tp->tasks_running--;
    notify_idle_locked(tp);
}

static void *worker_main(void *arg)
{
    pf_threadpool *tp = arg;
    tls_worker_pool = tp;
    uint64_t joined_gen = 0;
    pf_mutex_lock(&tp->lock);
    for (;;) {
        if (tp->job_open && tp->job_gen != joined_gen) {
            joined_gen = tp->job_gen;
            if (atomic_load_explicit(&tp->job_next, memory_order_relaxed) < tp->job_nth) {
                pf_parallel_fn fn = tp->job_fn;
                void *user = tp->job_user;
                int nth = tp->job_nth;
                tp->job_refs++;
                pf_mutex_unlock(&tp->lock);
                run_claims(tp, fn, user, nth);
                pf_mutex_lock(&tp->lock);
                /* Only one caller waits at a time (pfor_lock). */
                if (--tp->job_refs == 0) pf_cond_signal(&tp->done_cv);
            }
            continue;
        }
        if (tp->task_count > 0) {
            run_one_task_locked(tp);
            continue;
        }
        if (tp->shutdown) break;
        pf_cond_wait(&tp->work_cv, &tp->lock);
    }
    pf_mutex_unlock(&tp->lock);
    return NULL;
}

pf_threadpool_params pf_threadpool_params_default(void)
{
    pf_threadpool_params p = {.num_threads = 0, .name = NULL};
    return p;
}

static void pool_free(pf_threadpool *tp)
{
    pf_cond_destroy(&tp->idle_cv);
    pf_cond_destroy(&tp->done_cv);
    pf_cond_destroy(&tp->work_cv);
    pf_mutex_destroy(&tp->lock);
    pf_mutex_destroy(&tp->pfor_lock);
    free(tp->tasks);
    free(tp->threads);
    free(tp);
}

/* Lets the started workers drain the task queue and exit, then joins them. */
static void pool_stop(pf_threadpool *tp)
{
    pf_mutex_lock(&tp->lock);
    tp->shutdown = true;
    pf_cond_broadcast(&tp->work_cv);
    pf_mutex_unlock(&tp->lock);
    for (int i = 0; i < tp->nworkers; i++) pf_thread_join(tp->threads[i]);
}

pf_status pf_threadpool_create(const pf_threadpool_params *p, pf_threadpool **out)
{
    PF_CHECK_ARG(out, "pf_threadpool_create", "out is NULL");
    *out = NULL;
    pf_threadpool_params prm = p ? *p : pf_threadpool_params_default();
    if (prm.num_threads < 0 || prm.num_threads > POOL_MAX_THREADS)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_threadpool_create: num_threads %d out of range [0, %d] "
                            "(0 = number of cores)",
                            prm.num_threads, POOL_MAX_THREADS);
    int size = prm.num_threads ? prm.num_threads : pf_cpu_count();
    if (size > POOL_MAX_THREADS) size = POOL_MAX_THREADS;

    pf_threadpool *tp = calloc(1, sizeof *tp);
    if (!tp) return pf_set_error(PF_ERR_NOMEM, "pf_threadpool_create: out of host memory");
    tp->size = size;
    snprintf(tp->name, sizeof tp->name, "%s", prm.name ? prm.name : "pf-pool");
    tp->threads = calloc((size_t)size, sizeof *tp->threads);
    tp->task_cap = POOL_TASKS_INITIAL;
    tp->tasks = malloc(tp->task_cap * sizeof *tp->tasks);
    pf_mutex_init(&tp->pfor_lock);
    pf_mutex_init(&tp->lock);
    pf_cond_init(&tp->work_cv);
    pf_cond_init(&tp->done_cv);
    pf_cond_init(&tp->idle_cv);
    atomic_init(&tp->job_next, 0);
    if (!tp->threads || !tp->tasks) {
        pool_free(tp);
        return pf_set_error(PF_ERR_NOMEM, "pf_threadpool_create: out of host memory");
    }
    for (int i = 0; i < size - 1; i++) {
        char tname[32]; /* pf_thread_start cuts it to 15 chars */
        snprintf(tname, sizeof tname, "%s-%d", tp->name, i + 1);
        pf_status st = pf_thread_start(&tp->threads[i], tname, worker_main, tp);
        if (st != PF_OK) {
            char msg[256];
            snprintf(msg, sizeof msg, "%s", pf_last_error());
            pool_stop(tp);
            pool_free(tp);
            return pf_set_error(st, "pf_threadpool_create: worker %d of %d: %s", i + 1, size - 1,
                                msg);
        }
        tp->nworkers++;
    }
    *out = tp;
    return PF_OK;
}

void pf_threadpool_destroy(pf_threadpool **ptp)
{
    if (!ptp || !*ptp) return;
    pf_threadpool *tp = *ptp;
    if (tls_worker_pool == tp) {
        /* Joining ourselves would hang forever; leaking is the lesser evil. */
        PF_LOGE("pf_threadpool_destroy: called from a worker of pool '%s'; ignored", tp->name);
        return;
    }
    pool_stop(tp);
    pool_free(tp);
    *ptp = NULL;
}

int pf_threadpool_size(const pf_threadpool *tp) { return tp ? tp->size : 0; }

pf_status pf_threadpool_parallel_for(pf_threadpool *tp, int nth, pf_parallel_fn fn, void *user)
{
    PF_CHECK_ARG(tp, "pf_threadpool_parallel_for", "tp is NULL");
    PF_CHECK_ARG(fn, "pf_threadpool_parallel_for", "fn is NULL");
    if (nth <= 0) nth = tp->size;

    if (in_pool(tp)) {
        for (int i = 0; i < nth; i++) fn(user, i, nth);
        return PF_OK;
    }

    pfor_frame frame = {tp, tls_pfor};
    tls_pfor = &frame;
    pf_mutex_lock(&tp->pfor_lock);
    if (nth == 1 || tp->nworkers == 0) {
        for (int i = 0; i < nth; i++) fn(user, i, nth);
    } else {
        pf_mutex_lock(&tp->lock);
        tp->job_fn = fn;
        tp->job_user = user;
        tp->job_nth = nth;
        tp->job_refs = 0;
        tp->job_gen++;
        tp->job_open = true;
        atomic_store_explicit(&tp->job_next, 1, memory_order_relaxed); /* ith 0 is ours */
        int helpers = nth - 1;
        if (helpers >= tp->nworkers)
            pf_cond_broadcast(&tp->work_cv);
        else
            for (int i = 0; i < helpers; i++) pf_cond_signal(&tp->work_cv);
        pf_mutex_unlock(&tp->lock);

        fn(user, 0, nth);
        run_claims(tp, fn, user, nth);

        pf_mutex_lock(&tp->lock);
        while (tp->job_refs > 0) pf_cond_wait(&tp->done_cv, &tp->lock);
        tp->job_open = false;
        pf_mutex_unlock(&tp->lock);
    }
    pf_mutex_unlock(&tp->pfor_lock);
    tls_pfor = frame.prev;
    return PF_OK;
}

/* Doubles the ring, unrolling it so the head lands at index 0. */
static bool tasks_grow_locked(pf_threadpool *tp)
{
    size_t cap = tp->task_cap * 2;
    if (cap < tp->task_cap || cap > SIZE_MAX / sizeof *tp->tasks) return false;
    pool_task *t = malloc(cap * sizeof *t);
    if (!t) return false;
    for (size_t i = 0; i < tp->task_count; i++)
        t[i] = tp->tasks[(tp->task_head + i) & (tp->task_cap - 1)];
    free(tp->tasks);
    tp->tasks = t;
    tp->task_cap = cap;
    tp->task_head = 0;
    return true;
}

pf_status pf_threadpool_submit(pf_threadpool *tp, pf_task_fn fn, void *user)
{
    PF_CHECK_ARG(tp, "pf_threadpool_submit", "tp is NULL");
    PF_CHECK_ARG(fn, "pf_threadpool_submit", "fn is NULL");
    if (tp->nworkers == 0) {
        tls_task_depth++;
        fn(user);
        tls_task_depth--;
        return PF_OK;
    }
    pf_mutex_lock(&tp->lock);
    if (tp->task_count == tp->task_cap && !tasks_grow_locked(tp)) {
        size_t n = tp->task_count;
        pf_mutex_unlock(&tp->lock);
        return pf_set_error(PF_ERR_NOMEM,
                            "pf_threadpool_submit: cannot grow the queue of pool '%s' beyond %zu "
                            "pending tasks: out of host memory",
                            tp->name, n);
    }
    tp->tasks[(tp->task_head + tp->task_count) & (tp->task_cap - 1)] =
        (pool_task){.fn = fn, .user = user};
    tp->task_count++;
    pf_cond_signal(&tp->work_cv);
    pf_mutex_unlock(&tp->lock);
    return PF_OK;
}

void pf_threadpool_wait_idle(pf_threadpool *tp)
{
    if (!tp || tp->nworkers == 0) return; /* without workers tasks ran inside submit */
    /* A worker must not sleep while tasks are queued (it may be the only one
     * left to run them), so it helps; a task waiting here counts as finished
     * for the other waiting tasks, otherwise two of them would wait forever. */
    bool worker = tls_worker_pool == tp;
    bool in_task = worker && tls_task_depth > 0;
    pf_mutex_lock(&tp->lock);
    if (in_task) {
        tp->tasks_waiting++;
        notify_idle_locked(tp);
    }
    for (;;) {
        if (worker && tp->task_count > 0) {
            run_one_task_locked(tp);
            continue;
        }
        if (tp->task_count == 0 && tp->tasks_running == (in_task ? tp->tasks_waiting : 0)) break;
        pf_cond_wait(&tp->idle_cv, &tp->lock);
    }
    if (in_task) tp->tasks_waiting--;
    pf_mutex_unlock(&tp->lock);
}
