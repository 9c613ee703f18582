/* Thin pthread wrapper, clocks, aligned allocation. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "sys.h"

void pf_mutex_init(pf_mutex *m) { pthread_mutex_init(m, NULL); }
void pf_mutex_destroy(pf_mutex *m) { pthread_mutex_destroy(m); }
void pf_mutex_lock(pf_mutex *m) { pthread_mutex_lock(m); }
void pf_mutex_unlock(pf_mutex *m) { pthread_mutex_unlock(m); }

void pf_cond_init(pf_cond *c)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(c, &a);
    pthread_condattr_destroy(&a);
}

void pf_cond_destroy(pf_cond *c) { pthread_cond_destroy(c); }
void pf_cond_wait(pf_cond *c, pf_mutex *m) { pthread_cond_wait(c, m); }
void pf_cond_signal(pf_cond *c) { pthread_cond_signal(c); }
void pf_cond_broadcast(pf_cond *c) { pthread_cond_broadcast(c); }

bool pf_cond_timedwait_until(pf_cond *c, pf_mutex *m, int64_t deadline_ns)
{
    if (pf_time_ns() >= deadline_ns) return false;
    struct timespec ts = {.tv_sec = deadline_ns / 1000000000, .tv_nsec = deadline_ns % 1000000000};
    return pthread_cond_timedwait(c, m, &ts) != ETIMEDOUT;
}

int64_t pf_time_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t pf_deadline_ns(int64_t timeout_us)
{
    int64_t now = pf_time_ns();
    if (timeout_us > (INT64_MAX - now) / 1000) return INT64_MAX;
    return now + timeout_us * 1000;
}

int pf_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (int)n;
}

typedef struct thread_start {
    void *(*fn)(void *);
    void *arg;
    char name[16];
} thread_start;

static void *thread_entry(void *p)
{
    thread_start st = *(thread_start *)p;
    free(p);
    pthread_setname_np(pthread_self(), st.name);
    return st.fn(st.arg);
}

pf_status pf_thread_start(pf_thread *t, const char *name, void *(*fn)(void *), void *arg)
{
    thread_start *st = malloc(sizeof *st);
    if (!st) return pf_set_error(PF_ERR_NOMEM, "cannot start thread '%s': out of memory", name);
    st->fn = fn;
    st->arg = arg;
    snprintf(st->name, sizeof st->name, "%s", name ? name : "pixflow");
    int rc = pthread_create(t, NULL, thread_entry, st);
    if (rc) {
        free(st);
        return pf_set_error(PF_ERR_NOMEM, "cannot start thread '%s': %s", name, strerror(rc));
    }
    return PF_OK;
}

void pf_thread_join(pf_thread t) { pthread_join(t, NULL); }

void *pf_aligned_alloc(size_t align, size_t size)
{
    void *p = NULL;
    if (posix_memalign(&p, align, size ? size : 1)) return NULL;
    return p;
}

void pf_aligned_free(void *p) { free(p); }

bool pf_poison_enabled(void)
{
#ifndef NDEBUG
    return true;
#else
    const char *e = getenv("PIXFLOW_POISON");
    return e && e[0] == '1';
#endif
}
