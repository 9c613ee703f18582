/* pixflow/thread.h - thread pool, bounded MPMC queue, SPSC ring buffer.
 *
 * Data-parallel kernels split their rows themselves from (ith, nth):
 *
 *   static void scale_rows(void *user, int ith, int nth) {
 *       job *j = user;
 *       int r0 = j->rows * ith / nth, r1 = j->rows * (ith + 1) / nth;
 *       for (int r = r0; r < r1; r++) ...;
 *   }
 *   pf_threadpool *tp = NULL;
 *   pf_threadpool_params tpp = pf_threadpool_params_default();
 *   pf_threadpool_create(&tpp, &tp);
 *   pf_threadpool_parallel_for(tp, 0, scale_rows, &j);   // returns when all done
 *   pf_threadpool_destroy(&tp);
 *
 * Queues pass fixed-size items by value (a pointer, a pf_frame, a struct):
 *
 *   pf_queue_params qp = { .capacity = 8, .item_size = sizeof(pf_frame) };
 *   pf_queue *q = NULL;  pf_queue_create(&qp, &q);
 *   pf_queue_push(q, &frame, PF_WAIT_FOREVER);      // producer
 *   while (pf_queue_pop(q, &frame, PF_WAIT_FOREVER) == PF_OK) ...;  // consumer
 *   pf_queue_close(q);   // producer is done: consumers drain, then get PF_EOF
 *
 * Timeouts (all push/pop calls): timeout_us == 0 never blocks and returns
 * PF_AGAIN when it cannot proceed; timeout_us < 0 (PF_WAIT_FOREVER) waits until
 * it can proceed or the queue is closed; timeout_us > 0 waits at most that
 * long and returns PF_TIMEOUT.
 */
#ifndef PIXFLOW_THREAD_H
#define PIXFLOW_THREAD_H

#include "core.h"

PF_BEGIN_DECLS

#define PF_WAIT_FOREVER ((int64_t)-1)

/* Thread pool ---------------------------------------------------------------- */

typedef struct pf_threadpool pf_threadpool;

typedef struct pf_threadpool_params {
    int num_threads;  /* total parallelism incl. the calling thread; 0 = pf_cpu_count() */
    const char *name; /* thread name prefix (max 10 chars used), NULL = "pf-pool" */
} pf_threadpool_params;

PF_API pf_threadpool_params pf_threadpool_params_default(void);

/* Starts num_threads - 1 worker threads. p NULL = defaults; num_threads
 * must be 0..1024. */
PF_API pf_status pf_threadpool_create(const pf_threadpool_params *p, pf_threadpool **out);

/* Runs every task already submitted, joins the workers, frees the pool and
 * sets *tp = NULL. Accepts NULL. Called from one of the pool's own threads it
 * logs an error and leaves the pool alone (a thread cannot join itself). */
PF_API void pf_threadpool_destroy(pf_threadpool **tp);

/* Maximum parallelism of parallel_for (workers + the calling thread). */
PF_API int pf_threadpool_size(const pf_threadpool *tp);

typedef void (*pf_parallel_fn)(void *user, int ith, int nth);

/* Calls fn(user, ith, nth) once for every ith in [0, nth), concurrently, and
 * returns when all calls have returned. nth <= 0 means pf_threadpool_size();
 * nth may exceed the pool size (calls are then shared out). The calling thread
 * takes part. Thread-safe: concurrent callers are served one after another.
 * Called from inside a pool thread it runs all nth calls on that thread
 * (no deadlock, no extra parallelism). */
PF_API pf_status pf_threadpool_parallel_for(pf_threadpool *tp, int nth, pf_parallel_fn fn,
                                            void *user);

typedef void (*pf_task_fn)(void *user);

/* Queues fn(user) to run on a worker thread, in submission order of start.
 * With a pool of size 1 (no workers) it runs fn immediately on the caller.
 * Thread-safe. */
PF_API pf_status pf_threadpool_submit(pf_threadpool *tp, pf_task_fn fn, void *user);

/* Blocks until every submitted task has finished. Thread-safe. Called from
 * inside a task it runs queued tasks itself and returns once every other
 * task has finished or is waiting too (so it cannot deadlock on itself). */
PF_API void pf_threadpool_wait_idle(pf_threadpool *tp);

/* Bounded MPMC queue ------------------------------------------------------- */

typedef struct pf_queue pf_queue;

typedef struct pf_queue_params {
    size_t capacity;  /* items, >= 1 */
    size_t item_size; /* bytes copied per push/pop, >= 1 */
} pf_queue_params;

/* Any number of threads may push and pop concurrently. FIFO: items come out
 * in the order their pushes completed. */
PF_API pf_status pf_queue_create(const pf_queue_params *p, pf_queue **out);
/* Frees the queue (items still inside are discarded without any callback)
 * and sets *q = NULL. No other thread may be using it. Accepts NULL. */
PF_API void pf_queue_destroy(pf_queue **q);
/* PF_OK, PF_AGAIN, PF_TIMEOUT, or PF_ERR_CLOSED once the queue is closed. */
PF_API pf_status pf_queue_push(pf_queue *q, const void *item, int64_t timeout_us);
/* PF_OK, PF_AGAIN, PF_TIMEOUT, or PF_EOF when closed and empty. */
PF_API pf_status pf_queue_pop(pf_queue *q, void *item, int64_t timeout_us);
/* Refuses further pushes and wakes every waiter; items inside stay poppable. */
PF_API void pf_queue_close(pf_queue *q);
PF_API size_t pf_queue_size(const pf_queue *q);
PF_API size_t pf_queue_capacity(const pf_queue *q);

/* SPSC ring buffer ----------------------------------------------------------- */

typedef struct pf_ring pf_ring;

typedef struct pf_ring_params {
    size_t capacity;  /* items, >= 1 (rounded up to a power of two internally) */
    size_t item_size; /* bytes copied per push/pop, >= 1 */
} pf_ring_params;

/* Exactly one producer thread and one consumer thread; lock-free on the fast
 * path. A blocking call that must wait spins for up to 20 us first (a small
 * ring's partner usually answers sooner than a sleep/wake round trip), then
 * sleeps. Same status codes and close semantics as pf_queue.
 * pf_ring_capacity() reports the capacity asked for: the ring never holds
 * more than that. */
PF_API pf_status pf_ring_create(const pf_ring_params *p, pf_ring **out);
PF_API void pf_ring_destroy(pf_ring **r);
PF_API pf_status pf_ring_push(pf_ring *r, const void *item, int64_t timeout_us);
PF_API pf_status pf_ring_pop(pf_ring *r, void *item, int64_t timeout_us);
PF_API void pf_ring_close(pf_ring *r);
PF_API size_t pf_ring_size(const pf_ring *r);
PF_API size_t pf_ring_capacity(const pf_ring *r);

PF_END_DECLS

#endif
