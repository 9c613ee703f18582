/* Internal: the one small wrapper all pixflow threading goes through
 * (pthreads underneath), plus aligned host allocation.
 *
 * pf_cond_timedwait_us takes a relative timeout and uses CLOCK_MONOTONIC, so
 * changes of the wall clock never stretch or cut a wait. */
#ifndef PF_CORE_SYS_H
#define PF_CORE_SYS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pixflow/core.h"

typedef pthread_mutex_t pf_mutex;
typedef pthread_cond_t pf_cond;
typedef pthread_t pf_thread;

void pf_mutex_init(pf_mutex *m);
void pf_mutex_destroy(pf_mutex *m);
void pf_mutex_lock(pf_mutex *m);
void pf_mutex_unlock(pf_mutex *m);

void pf_cond_init(pf_cond *c);   /* CLOCK_MONOTONIC */
void pf_cond_destroy(pf_cond *c);
void pf_cond_wait(pf_cond *c, pf_mutex *m);
/* Returns false once `deadline_ns` has passed (spurious wakeups happen:
 * callers loop on their predicate with a deadline from pf_deadline_ns). */
bool pf_cond_timedwait_until(pf_cond *c, pf_mutex *m, int64_t deadline_ns);
void pf_cond_signal(pf_cond *c);
void pf_cond_broadcast(pf_cond *c);

/* deadline = now + timeout_us (in pf_time_ns units). */
int64_t pf_deadline_ns(int64_t timeout_us);

/* Starts fn(arg) on a new thread named `name` (truncated to 15 chars). */
pf_status pf_thread_start(pf_thread *t, const char *name, void *(*fn)(void *), void *arg);
void pf_thread_join(pf_thread t);

/* Host memory aligned to `align` (a power of two >= sizeof(void *)); size 0
 * returns a unique non-NULL pointer. NULL on failure (no message set). */
void *pf_aligned_alloc(size_t align, size_t size);
void pf_aligned_free(void *p);

/* Whether debug poisoning of freed pool memory is on (debug builds, or the
 * environment variable PIXFLOW_POISON=1). */
bool pf_poison_enabled(void);

#endif
