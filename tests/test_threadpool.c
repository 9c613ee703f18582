/* pf_threadpool: parallel_for coverage and concurrency, serialised concurrent
 * callers, nesting, the task queue, wait_idle, destroy with pending tasks. */
#include <stdatomic.h>
#include <time.h>

#include "core/sys.h"
#include "pf_test.h"

#define MAX_NTH 4096

static void sleep_us(int64_t us)
{
    struct timespec ts = {.tv_sec = (time_t)(us / 1000000), .tv_nsec = (long)(us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static pf_threadpool *make_pool(int n)
{
    pf_threadpool_params p = pf_threadpool_params_default();
    p.num_threads = n;
    p.name = "test-pool";
    pf_threadpool *tp = NULL;
    pf_status st = pf_threadpool_create(&p, &tp);
    if (st != PF_OK) fprintf(stderr, "  create(%d): %s\n", n, pf_last_error());
    return tp;
}

/* Identity of the running thread, without pthread: the address of a thread-local. */
static _Thread_local char tl_self;
static _Thread_local int tl_marker;

/* Coverage ------------------------------------------------------------------ */

typedef struct cover_job {
    _Atomic int count[MAX_NTH];
    _Atomic long long sum;
    _Atomic int bad_nth;
    int expect_nth;
    int caller_marker;
    _Atomic int ith0_on_caller;
} cover_job;

static void cover_fn(void *user, int ith, int nth)
{
    cover_job *j = user;
    if (nth != j->expect_nth || ith < 0 || ith >= nth || ith >= MAX_NTH) {
        atomic_fetch_add(&j->bad_nth, 1);
        return;
    }
    atomic_fetch_add(&j->count[ith], 1);
    atomic_fetch_add(&j->sum, (long long)ith + 1);
    if (ith == 0) atomic_store(&j->ith0_on_caller, tl_marker == j->caller_marker);
    /* A little uneven work so claims interleave. */
    volatile unsigned x = 0;
    for (int i = 0; i < (ith % 7) * 50; i++) x += (unsigned)i;
}

static int check_cover(pf_threadpool *tp, int nth_arg, int expect_nth)
{
    static cover_job j;
    memset(&j, 0, sizeof j);
    j.expect_nth = expect_nth;
    j.caller_marker = ++tl_marker;
    pf_status st = pf_threadpool_parallel_for(tp, nth_arg, cover_fn, &j);
    int bad = 0;
    if (st != PF_OK) bad++;
    if (atomic_load(&j.bad_nth)) bad++;
    for (int i = 0; i < expect_nth; i++)
        if (atomic_load(&j.count[i]) != 1) bad++;
    long long want = (long long)expect_nth * (expect_nth + 1) / 2;
    if (atomic_load(&j.sum) != want) bad++;
    if (!atomic_load(&j.ith0_on_caller)) bad++;
    if (bad)
        fprintf(stderr, "  coverage nth_arg=%d expect=%d size=%d: %d problems (sum %lld want %lld)\n",
                nth_arg, expect_nth, pf_threadpool_size(tp), bad, (long long)atomic_load(&j.sum),
                want);
    return bad;
}

static void test_parallel_for_coverage(void)
{
    int sizes[] = {1, 2, 3, 4, pf_cpu_count()};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        pf_threadpool *tp = make_pool(sizes[s]);
        REQUIRE(tp);
        int n = pf_threadpool_size(tp);
        CHECK_EQ_INT(n, sizes[s]);
        int nths[] = {1, 2, n, 3 * n, 1000, MAX_NTH};
        for (size_t k = 0; k < sizeof nths / sizeof *nths; k++)
            CHECK_EQ_INT(check_cover(tp, nths[k], nths[k]), 0);
        CHECK_EQ_INT(check_cover(tp, 0, n), 0);  /* 0 = pool size */
        CHECK_EQ_INT(check_cover(tp, -5, n), 0); /* < 0 too */
        for (int rep = 0; rep < 200; rep++) {
            int nth = (int)pf_test_rand_range(1, 64);
            CHECK_EQ_INT(check_cover(tp, nth, nth), 0);
        }
        pf_threadpool_destroy(&tp);
        CHECK(tp == NULL);
    }
}

static void test_default_size(void)
{
    pf_threadpool *tp = NULL;
    CHECK_OK(pf_threadpool_create(NULL, &tp)); /* NULL params = defaults */
    REQUIRE(tp);
    CHECK_EQ_INT(pf_threadpool_size(tp), pf_cpu_count());
    CHECK_EQ_INT(check_cover(tp, 0, pf_cpu_count()), 0);
    pf_threadpool_destroy(&tp);
    pf_threadpool_params p = pf_threadpool_params_default();
    CHECK_EQ_INT(p.num_threads, 0);
    CHECK(p.name == NULL);
    CHECK_EQ_INT(pf_threadpool_size(NULL), 0);
}

/* Real concurrency: every call waits until all nth have arrived, which only
 * finishes if nth threads run at once. Bounded, so a broken pool fails. */
typedef struct barrier_job {
    _Atomic int arrived;
    _Atomic int timed_out;
    int nth;
} barrier_job;

static void barrier_fn(void *user, int ith, int nth)
{
    barrier_job *j = user;
    atomic_fetch_add(&j->arrived, 1);
    int64_t end = pf_time_ns() + 5000000000ll;
    while (atomic_load(&j->arrived) < nth) {
        if (pf_time_ns() > end) {
            atomic_store(&j->timed_out, 1);
            return;
        }
        sleep_us(50);
    }
}

static void test_parallel_for_concurrent(void)
{
    int sizes[] = {2, 4, 8};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        pf_threadpool *tp = make_pool(sizes[s]);
        REQUIRE(tp);
        for (int rep = 0; rep < 5; rep++) {
            barrier_job j = {.nth = sizes[s]};
            CHECK_OK(pf_threadpool_parallel_for(tp, sizes[s], barrier_fn, &j));
            CHECK_EQ_INT(atomic_load(&j.arrived), sizes[s]);
            CHECK_EQ_INT(atomic_load(&j.timed_out), 0);
        }
        pf_threadpool_destroy(&tp);
    }
}

/* Concurrent callers ------------------------------------------------------------------ */

typedef struct caller_ctx {
    pf_threadpool *tp;
    uint64_t seed;
    int calls;
    int failures;
} caller_ctx;

/* Detects fn calls of two different jobs overlapping in time. */
static pf_mutex overlap_lock;
static const void *overlap_job;
static int overlap_count, overlap_violations;

typedef struct counted_job {
    _Atomic int count[256];
} counted_job;

static void counted_fn(void *user, int ith, int nth)
{
    counted_job *j = user;
    pf_mutex_lock(&overlap_lock);
    if (overlap_job && overlap_job != j) overlap_violations++;
    overlap_job = j;
    overlap_count++;
    pf_mutex_unlock(&overlap_lock);
    atomic_fetch_add(&j->count[ith], 1);
    volatile unsigned x = 0;
    for (int i = 0; i < 200; i++) x += (unsigned)i;
    pf_mutex_lock(&overlap_lock);
    if (--overlap_count == 0) overlap_job = NULL;
    pf_mutex_unlock(&overlap_lock);
}

static void *caller_main(void *arg)
{
    caller_ctx *c = arg;
    uint64_t s = c->seed;
    for (int i = 0; i < c->calls; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        int nth = 1 + (int)((s >> 33) % 40);
        counted_job j;
        for (int k = 0; k < 256; k++) atomic_init(&j.count[k], 0);
        if (pf_threadpool_parallel_for(c->tp, nth, counted_fn, &j) != PF_OK) c->failures++;
        for (int k = 0; k < 256; k++)
            if (atomic_load(&j.count[k]) != (k < nth)) c->failures++;
    }
    return NULL;
}

static void test_concurrent_callers(void)
{
    pf_threadpool *tp = make_pool(4);
    REQUIRE(tp);
    pf_mutex_init(&overlap_lock);
    enum { NC = 4 };
    caller_ctx ctx[NC];
    pf_thread th[NC];
    for (int i = 0; i < NC; i++) {
        ctx[i] = (caller_ctx){.tp = tp, .seed = pf_test_rand(), .calls = 300};
        CHECK_OK(pf_thread_start(&th[i], "caller", caller_main, &ctx[i]));
    }
    for (int i = 0; i < NC; i++) pf_thread_join(th[i]);
    for (int i = 0; i < NC; i++) CHECK_EQ_INT(ctx[i].failures, 0);
    CHECK_EQ_INT(overlap_violations, 0);
    pf_mutex_destroy(&overlap_lock);
    pf_threadpool_destroy(&tp);
}

/* Nesting --------------------------------------------------------------------------- */

typedef struct nest_job {
    pf_threadpool *tp;
    _Atomic int outer[64];
    _Atomic int inner[64][16];
    _Atomic int wrong_thread;
    _Atomic int bad_status;
} nest_job;

typedef struct inner_ctx {
    nest_job *j;
    int outer_ith;
    const char *self;
} inner_ctx;

static void inner_fn(void *user, int ith, int nth)
{
    inner_ctx *c = user;
    if (&tl_self != c->self) atomic_fetch_add(&c->j->wrong_thread, 1);
    if (nth == 16 && ith >= 0 && ith < 16) atomic_fetch_add(&c->j->inner[c->outer_ith][ith], 1);
}

static void outer_fn(void *user, int ith, int nth)
{
    nest_job *j = user;
    atomic_fetch_add(&j->outer[ith], 1);
    inner_ctx c = {.j = j, .outer_ith = ith, .self = &tl_self};
    if (pf_threadpool_parallel_for(j->tp, 16, inner_fn, &c) != PF_OK)
        atomic_fetch_add(&j->bad_status, 1);
}

static void test_nested(void)
{
    pf_threadpool *tp = make_pool(3);
    REQUIRE(tp);
    for (int rep = 0; rep < 20; rep++) {
        static nest_job j;
        memset(&j, 0, sizeof j);
        j.tp = tp;
        int nth = (int)pf_test_rand_range(1, 64);
        CHECK_OK(pf_threadpool_parallel_for(tp, nth, outer_fn, &j));
        int bad = 0;
        for (int o = 0; o < 64; o++) {
            if (atomic_load(&j.outer[o]) != (o < nth)) bad++;
            for (int i = 0; i < 16; i++)
                if (atomic_load(&j.inner[o][i]) != (o < nth)) bad++;
        }
        CHECK_EQ_INT(bad, 0);
        CHECK_EQ_INT(atomic_load(&j.wrong_thread), 0);
        CHECK_EQ_INT(atomic_load(&j.bad_status), 0);
    }
    pf_threadpool_destroy(&tp);
}

/* A nested call on a *different* pool is a normal parallel call. */
typedef struct two_pool_job {
    pf_threadpool *other;
    _Atomic int total;
} two_pool_job;

static void two_inner(void *user, int ith, int nth)
{
    two_pool_job *j = user;
    atomic_fetch_add(&j->total, 1);
}

static void two_outer(void *user, int ith, int nth)
{
    two_pool_job *j = user;
    pf_threadpool_parallel_for(j->other, 10, two_inner, j);
}

static void test_nested_other_pool(void)
{
    pf_threadpool *a = make_pool(2), *b = make_pool(3);
    REQUIRE(a && b);
    two_pool_job j = {.other = b};
    CHECK_OK(pf_threadpool_parallel_for(a, 8, two_outer, &j));
    CHECK_EQ_INT(atomic_load(&j.total), 80);
    pf_threadpool_destroy(&a);
    pf_threadpool_destroy(&b);
}

/* parallel_for from a task runs serially on that worker. */
typedef struct task_pfor {
    pf_threadpool *tp;
    const char *task_self;
    _Atomic int calls, wrong_thread;
    pf_status st;
} task_pfor;

static void task_pfor_inner(void *user, int ith, int nth)
{
    task_pfor *t = user;
    if (&tl_self != t->task_self) atomic_fetch_add(&t->wrong_thread, 1);
    atomic_fetch_add(&t->calls, 1);
}

static void task_pfor_fn(void *user)
{
    task_pfor *t = user;
    t->task_self = &tl_self;
    t->st = pf_threadpool_parallel_for(t->tp, 9, task_pfor_inner, t);
}

static void test_parallel_for_from_task(void)
{
    pf_threadpool *tp = make_pool(3);
    REQUIRE(tp);
    task_pfor t = {.tp = tp, .st = PF_ERR_INTERNAL};
    CHECK_OK(pf_threadpool_submit(tp, task_pfor_fn, &t));
    pf_threadpool_wait_idle(tp);
    CHECK_OK(t.st);
    CHECK_EQ_INT(atomic_load(&t.calls), 9);
    CHECK_EQ_INT(atomic_load(&t.wrong_thread), 0);
    CHECK(t.task_self != &tl_self); /* it ran on a worker */
    pf_threadpool_destroy(&tp);
}

/* parallel_for is not held up by workers busy in long tasks: the caller runs
 * the calls itself. */
static _Atomic int gate_open;
static void gate_task(void *user)
{
    int64_t end = pf_time_ns() + 10000000000ll;
    while (!atomic_load(&gate_open) && pf_time_ns() < end) sleep_us(200);
}

static void test_parallel_for_busy_workers(void)
{
    pf_threadpool *tp = make_pool(3);
    REQUIRE(tp);
    atomic_store(&gate_open, 0);
    for (int i = 0; i < 2; i++) CHECK_OK(pf_threadpool_submit(tp, gate_task, NULL));
    sleep_us(20000); /* let both workers enter the tasks */
    int64_t t0 = pf_time_ns();
    CHECK_EQ_INT(check_cover(tp, 100, 100), 0);
    int64_t dt = pf_time_ns() - t0;
    CHECK(dt < 2000000000ll); /* not blocked until the 10 s gate */
    atomic_store(&gate_open, 1);
    pf_threadpool_wait_idle(tp);
    pf_threadpool_destroy(&tp);
}

/* Tasks ------------------------------------------------------------------------------ */

enum { NTASKS = 10000 };
static _Atomic int task_runs[NTASKS];
static _Atomic int task_ticket;
static int task_order[NTASKS];

static void count_task(void *user)
{
    int i = (int)(intptr_t)user;
    atomic_fetch_add(&task_runs[i], 1);
    task_order[atomic_fetch_add(&task_ticket, 1)] = i;
}

static void reset_tasks(void)
{
    for (int i = 0; i < NTASKS; i++) atomic_store(&task_runs[i], 0);
    atomic_store(&task_ticket, 0);
}

static int count_bad_runs(int n)
{
    int bad = 0;
    for (int i = 0; i < NTASKS; i++)
        if (atomic_load(&task_runs[i]) != (i < n)) bad++;
    return bad;
}

static void test_submit_many(void)
{
    int sizes[] = {2, 4, 5};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        pf_threadpool *tp = make_pool(sizes[s]);
        REQUIRE(tp);
        reset_tasks();
        int64_t t0 = pf_time_ns();
        for (int i = 0; i < NTASKS; i++)
            CHECK_OK(pf_threadpool_submit(tp, count_task, (void *)(intptr_t)i));
        pf_threadpool_wait_idle(tp);
        double dt = (double)(pf_time_ns() - t0) / 1e9;
        CHECK_EQ_INT(atomic_load(&task_ticket), NTASKS);
        CHECK_EQ_INT(count_bad_runs(NTASKS), 0);
        printf("  size %d: %d tasks in %.1f ms (%.2f M tasks/s)\n", sizes[s], NTASKS, dt * 1e3,
               NTASKS / dt / 1e6);
        if (sizes[s] == 2) {
            /* One worker: starts are strictly in submission order. */
            int out_of_order = 0;
            for (int i = 0; i < NTASKS; i++) out_of_order += task_order[i] != i;
            CHECK_EQ_INT(out_of_order, 0);
        }
        pf_threadpool_destroy(&tp);
    }
}

static void test_submit_size1_inline(void)
{
    pf_threadpool *tp = make_pool(1);
    REQUIRE(tp);
    reset_tasks();
    for (int i = 0; i < 100; i++) {
        CHECK_OK(pf_threadpool_submit(tp, count_task, (void *)(intptr_t)i));
        CHECK_EQ_INT(atomic_load(&task_runs[i]), 1); /* already ran */
    }
    pf_threadpool_wait_idle(tp);
    CHECK_EQ_INT(count_bad_runs(100), 0);
    pf_threadpool_destroy(&tp);
}

/* wait_idle really waits for slow tasks. */
static _Atomic int slow_done;
static void slow_task(void *user)
{
    sleep_us((int64_t)(intptr_t)user);
    atomic_fetch_add(&slow_done, 1);
}

static void test_wait_idle(void)
{
    pf_threadpool *tp = make_pool(3);
    REQUIRE(tp);
    pf_threadpool_wait_idle(tp); /* idle pool: returns at once */
    for (int round = 0; round < 3; round++) {
        atomic_store(&slow_done, 0);
        int n = 12;
        for (int i = 0; i < n; i++)
            CHECK_OK(pf_threadpool_submit(tp, slow_task,
                                          (void *)(intptr_t)pf_test_rand_range(1000, 10000)));
        pf_threadpool_wait_idle(tp);
        CHECK_EQ_INT(atomic_load(&slow_done), n);
    }
    pf_threadpool_destroy(&tp);
}

/* Tasks that submit tasks, and a task that waits for the others. */
typedef struct tree_ctx {
    pf_threadpool *tp;
    _Atomic int nodes;
    _Atomic int waited_ok;
} tree_ctx;

static tree_ctx tree;

static void tree_task(void *user)
{
    int depth = (int)(intptr_t)user;
    atomic_fetch_add(&tree.nodes, 1);
    if (depth < 8) {
        pf_threadpool_submit(tree.tp, tree_task, (void *)(intptr_t)(depth + 1));
        pf_threadpool_submit(tree.tp, tree_task, (void *)(intptr_t)(depth + 1));
    }
}

static void waiter_task(void *user)
{
    /* Waits (and helps) until every other task is done. */
    pf_threadpool_wait_idle(tree.tp);
    if (atomic_load(&tree.nodes) == 511) atomic_store(&tree.waited_ok, 1);
}

/* Queues `waiters` waiter tasks and the tree root behind the first one. While
 * this task runs, a waiter cannot see the pool idle before the root is queued. */
static void spawner_task(void *user)
{
    int waiters = (int)(intptr_t)user;
    pf_threadpool_submit(tree.tp, waiter_task, NULL);
    pf_threadpool_submit(tree.tp, tree_task, (void *)(intptr_t)0);
    for (int i = 1; i < waiters; i++) pf_threadpool_submit(tree.tp, waiter_task, NULL);
}

static void test_task_tree_and_wait_from_task(void)
{
    int sizes[] = {2, 3};
    for (size_t s = 0; s < 2; s++) {
        pf_threadpool *tp = make_pool(sizes[s]);
        REQUIRE(tp);
        tree.tp = tp;
        atomic_store(&tree.nodes, 0);
        atomic_store(&tree.waited_ok, 0);
        CHECK_OK(pf_threadpool_submit(tp, tree_task, (void *)(intptr_t)0));
        pf_threadpool_wait_idle(tp);
        CHECK_EQ_INT(atomic_load(&tree.nodes), 511);

        /* A task queues a waiter before the tree: with one worker the waiter
         * must run the whole tree itself (helping) or it would wait forever. */
        atomic_store(&tree.nodes, 0);
        atomic_store(&tree.waited_ok, 0);
        CHECK_OK(pf_threadpool_submit(tp, spawner_task, (void *)(intptr_t)1));
        pf_threadpool_wait_idle(tp);
        CHECK_EQ_INT(atomic_load(&tree.nodes), 511);
        CHECK_EQ_INT(atomic_load(&tree.waited_ok), 1);

        /* Two tasks waiting in wait_idle at once must not wait for each other. */
        atomic_store(&tree.nodes, 0);
        atomic_store(&tree.waited_ok, 0);
        CHECK_OK(pf_threadpool_submit(tp, spawner_task, (void *)(intptr_t)2));
        pf_threadpool_wait_idle(tp);
        CHECK_EQ_INT(atomic_load(&tree.nodes), 511);
        CHECK_EQ_INT(atomic_load(&tree.waited_ok), 1);
        pf_threadpool_destroy(&tp);
    }
}

/* wait_idle from several threads at once. */
typedef struct idle_waiter {
    pf_threadpool *tp;
    int ok;
} idle_waiter;

static void *idle_waiter_main(void *arg)
{
    idle_waiter *w = arg;
    pf_threadpool_wait_idle(w->tp);
    w->ok = atomic_load(&slow_done) == 20;
    return NULL;
}

static void test_wait_idle_concurrent(void)
{
    pf_threadpool *tp = make_pool(3);
    REQUIRE(tp);
    atomic_store(&slow_done, 0);
    for (int i = 0; i < 20; i++) CHECK_OK(pf_threadpool_submit(tp, slow_task, (void *)2000));
    idle_waiter w[3];
    pf_thread th[3];
    for (int i = 0; i < 3; i++) {
        w[i] = (idle_waiter){.tp = tp};
        CHECK_OK(pf_thread_start(&th[i], "waiter", idle_waiter_main, &w[i]));
    }
    for (int i = 0; i < 3; i++) {
        pf_thread_join(th[i]);
        CHECK(w[i].ok);
    }
    pf_threadpool_destroy(&tp);
}

static void test_destroy_runs_pending(void)
{
    int sizes[] = {2, 4};
    for (size_t s = 0; s < 2; s++) {
        pf_threadpool *tp = make_pool(sizes[s]);
        REQUIRE(tp);
        atomic_store(&slow_done, 0);
        /* Occupy every worker for 30 ms so the rest are still queued at destroy. */
        for (int i = 0; i < sizes[s] - 1; i++)
            CHECK_OK(pf_threadpool_submit(tp, slow_task, (void *)30000));
        for (int i = 0; i < 300; i++) CHECK_OK(pf_threadpool_submit(tp, slow_task, (void *)0));
        int before = atomic_load(&slow_done);
        pf_threadpool_destroy(&tp);
        CHECK(tp == NULL);
        CHECK(before < 300 + sizes[s] - 1); /* something was pending... */
        CHECK_EQ_INT(atomic_load(&slow_done), 300 + sizes[s] - 1); /* ...and ran */
    }
}

/* Errors ------------------------------------------------------------------------------- */

static void noop_task(void *user) { (void)user; }
static void noop_fn(void *user, int ith, int nth) { (void)user; }

static void test_invalid(void)
{
    pf_threadpool *tp = NULL;
    pf_threadpool_params p = pf_threadpool_params_default();
    CHECK_EQ_INT(pf_threadpool_create(&p, NULL), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "out") != NULL);
    p.num_threads = -3;
    CHECK_EQ_INT(pf_threadpool_create(&p, &tp), PF_ERR_INVALID);
    CHECK(tp == NULL);
    CHECK(strstr(pf_last_error(), "num_threads -3") != NULL);
    p.num_threads = 1000000;
    CHECK_EQ_INT(pf_threadpool_create(&p, &tp), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "1000000") != NULL);

    CHECK_EQ_INT(pf_threadpool_parallel_for(NULL, 4, noop_fn, NULL), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "tp is NULL") != NULL);
    CHECK_EQ_INT(pf_threadpool_submit(NULL, noop_task, NULL), PF_ERR_INVALID);
    tp = make_pool(2);
    REQUIRE(tp);
    CHECK_EQ_INT(pf_threadpool_parallel_for(tp, 4, NULL, NULL), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "fn is NULL") != NULL);
    CHECK_EQ_INT(pf_threadpool_submit(tp, NULL, NULL), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "fn is NULL") != NULL);
    pf_threadpool_destroy(&tp);
    pf_threadpool_destroy(&tp); /* NULL-safe */
    pf_threadpool_destroy(NULL);
    pf_threadpool_wait_idle(NULL);
}

/* destroy from inside one of the pool's own tasks would join itself: it is
 * refused with a logged error and the pool stays usable. */
static pf_mutex log_lock;
static char log_seen[512];

static void capture_log(void *user, pf_log_level level, const char *msg)
{
    (void)user;
    if (level != PF_LOG_ERROR) return;
    pf_mutex_lock(&log_lock);
    snprintf(log_seen, sizeof log_seen, "%s", msg);
    pf_mutex_unlock(&log_lock);
}

typedef struct self_destroy {
    pf_threadpool *tp;
    int still_there;
} self_destroy;

static void self_destroy_task(void *user)
{
    self_destroy *d = user;
    pf_threadpool *copy = d->tp;
    pf_threadpool_destroy(&copy);
    d->still_there = copy == d->tp;
}

static void test_destroy_from_worker_refused(void)
{
    pf_threadpool *tp = make_pool(2);
    REQUIRE(tp);
    pf_mutex_init(&log_lock);
    log_seen[0] = 0;
    pf_log_set_callback(capture_log, NULL);
    self_destroy d = {.tp = tp};
    CHECK_OK(pf_threadpool_submit(tp, self_destroy_task, &d));
    pf_threadpool_wait_idle(tp);
    pf_log_set_callback(NULL, NULL);
    CHECK(d.still_there);
    CHECK(strstr(log_seen, "pf_threadpool_destroy") != NULL);
    CHECK(strstr(log_seen, "test-pool") != NULL);
    CHECK_EQ_INT(check_cover(tp, 10, 10), 0); /* still works */
    pf_threadpool_destroy(&tp);
    CHECK(tp == NULL);
    pf_mutex_destroy(&log_lock);
}

/* Long names are cut, not overflowing the 15-char thread name. */
static void test_long_name(void)
{
    pf_threadpool_params p = {.num_threads = 12, .name = "a-very-long-pool-name-indeed"};
    pf_threadpool *tp = NULL;
    CHECK_OK(pf_threadpool_create(&p, &tp));
    REQUIRE(tp);
    CHECK_EQ_INT(check_cover(tp, 0, 12), 0);
    pf_threadpool_destroy(&tp);
}

/* Latency of small parallel_for calls, for the record. */
static void test_parallel_for_overhead(void)
{
    pf_threadpool *tp = make_pool(2);
    REQUIRE(tp);
    enum { N = 20000 };
    int64_t t0 = pf_time_ns();
    for (int i = 0; i < N; i++) pf_threadpool_parallel_for(tp, 2, noop_fn, NULL);
    double us = (double)(pf_time_ns() - t0) / 1e3 / N;
    /* With an empty fn the caller usually claims both calls before the worker
     * is awake: this is the cost of publishing and closing a job. */
    printf("  empty parallel_for(nth=2) on a pool of 2: %.2f us per call\n", us);
    pf_threadpool_destroy(&tp);
}

int main(void)
{
    pf_test_seed(0x7001);
    PF_RUN(test_invalid);
    PF_RUN(test_default_size);
    PF_RUN(test_parallel_for_coverage);
    PF_RUN(test_parallel_for_concurrent);
    PF_RUN(test_concurrent_callers);
    PF_RUN(test_nested);
    PF_RUN(test_nested_other_pool);
    PF_RUN(test_parallel_for_from_task);
    PF_RUN(test_parallel_for_busy_workers);
    PF_RUN(test_submit_many);
    PF_RUN(test_submit_size1_inline);
    PF_RUN(test_wait_idle);
    PF_RUN(test_task_tree_and_wait_from_task);
    PF_RUN(test_wait_idle_concurrent);
    PF_RUN(test_destroy_runs_pending);
    PF_RUN(test_destroy_from_worker_refused);
    PF_RUN(test_long_name);
    PF_RUN(test_parallel_for_overhead);
    return pf_test_finish();
}
