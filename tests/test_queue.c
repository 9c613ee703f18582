/* pf_queue: parameter errors, FIFO against a model, non-blocking and timed
 * calls, close semantics with blocked producers and consumers, capacity 1,
 * and a 4 x 4 producer/consumer stress that checks nothing is lost,
 * duplicated or reordered per producer. */
#include <stdatomic.h>

#include "core/sys.h"
#include "pf_test.h"

/* fifo_make() and the checks pf_queue shares with pf_ring (model, timeouts,
 * wakeups, close). */
#define PF_TEST_FIFO queue
#include "pf_test_fifo.h"

static void test_invalid(void)
{
    fifo_check_invalid();
    /* What is particular to pf_queue: its size limits. */
    pf_queue *q = (pf_queue *)1;
    pf_queue_params p = {.capacity = SIZE_MAX / 2, .item_size = 3};
    CHECK_EQ_INT(pf_queue_create(&p, &q), PF_ERR_INVALID);
    CHECK(q == NULL);
    CHECK(strstr(pf_last_error(), "overflows") != NULL);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) /* they abort on absurd sizes */
    /* Too big to allocate: NOMEM with the size in the message, no crash. */
    p = (pf_queue_params){.capacity = (SIZE_MAX >> 2) / 64, .item_size = 64};
    CHECK_EQ_INT(pf_queue_create(&p, &q), PF_ERR_NOMEM);
    CHECK(strstr(pf_last_error(), "cannot allocate") != NULL);
#endif
}

/* Random single-threaded ops against an array model, odd item size, wrap-around. */
static void test_model(void) { fifo_check_model(20, 17, 2000); }

static void test_nonblocking(void)
{
    pf_queue *q = fifo_make(3, sizeof(int));
    REQUIRE(q);
    int v = 0;
    CHECK_EQ_INT(pf_queue_pop(q, &v, 0), PF_AGAIN);
    for (int i = 0; i < 3; i++) CHECK_OK(pf_queue_push(q, &i, 0));
    CHECK_EQ_INT(pf_queue_size(q), 3);
    v = 99;
    CHECK_EQ_INT(pf_queue_push(q, &v, 0), PF_AGAIN);
    CHECK_EQ_INT(pf_queue_size(q), 3);
    for (int i = 0; i < 3; i++) {
        CHECK_OK(pf_queue_pop(q, &v, 0));
        CHECK_EQ_INT(v, i);
    }
    CHECK_EQ_INT(pf_queue_pop(q, &v, 0), PF_AGAIN);
    pf_queue_destroy(&q);
}

static void test_timeouts(void) { fifo_check_timeouts(); }

/* A timed or blocking wait that the other side satisfies in time returns
 * PF_OK early; close wakes both sides. */
static void test_wakeups(void) { fifo_check_wakeups(); }

/* Close ------------------------------------------------------------------------------ */

static void test_close_basic(void) { fifo_check_close_drain(4, 3); }

typedef struct closer_ctx {
    pf_queue *q;
    int64_t timeout;
    int got;
    long long sum;
    pf_status last;
    _Atomic int *started;
} closer_ctx;

static void *drain_main(void *arg)
{
    closer_ctx *c = arg;
    atomic_fetch_add(c->started, 1);
    int v;
    pf_status st;
    while ((st = pf_queue_pop(c->q, &v, c->timeout)) == PF_OK || st == PF_TIMEOUT) {
        if (st == PF_OK) {
            c->got++;
            c->sum += v;
            sleep_us(100); /* slow consumer: items are still inside at close */
        }
    }
    c->last = st;
    return NULL;
}

static void *blocked_push_main(void *arg)
{
    closer_ctx *c = arg;
    atomic_fetch_add(c->started, 1);
    int v = 1000;
    pf_status st;
    while ((st = pf_queue_push(c->q, &v, c->timeout)) == PF_OK || st == PF_TIMEOUT)
        if (st == PF_OK) c->got++;
    c->last = st;
    return NULL;
}

static void test_close_wakes_consumers(void)
{
    enum { NC = 3, N = 100 };
    pf_queue *q = fifo_make(8, sizeof(int));
    REQUIRE(q);
    _Atomic int started = 0;
    closer_ctx c[NC];
    pf_thread th[NC];
    for (int i = 0; i < NC; i++) {
        c[i] = (closer_ctx){.q = q, .timeout = i == 2 ? 3000 : PF_WAIT_FOREVER, .started = &started};
        CHECK_OK(pf_thread_start(&th[i], "drain", drain_main, &c[i]));
    }
    while (atomic_load(&started) < NC) sleep_us(100);
    sleep_us(10000); /* consumers are now blocked on the empty queue */
    for (int i = 0; i < N; i++) CHECK_OK(pf_queue_push(q, &i, PF_WAIT_FOREVER));
    pf_queue_close(q);
    int got = 0;
    long long sum = 0;
    for (int i = 0; i < NC; i++) {
        pf_thread_join(th[i]);
        CHECK_EQ_INT(c[i].last, PF_EOF);
        got += c[i].got;
        sum += c[i].sum;
    }
    CHECK_EQ_INT(got, N);
    CHECK_EQ_INT(sum, (long long)N * (N - 1) / 2);
    CHECK_EQ_INT(pf_queue_size(q), 0);
    pf_queue_destroy(&q);

    /* Close with consumers blocked and nothing pushed at all. */
    q = fifo_make(2, sizeof(int));
    REQUIRE(q);
    atomic_store(&started, 0);
    for (int i = 0; i < NC; i++) {
        c[i] = (closer_ctx){.q = q, .timeout = PF_WAIT_FOREVER, .started = &started};
        CHECK_OK(pf_thread_start(&th[i], "drain", drain_main, &c[i]));
    }
    while (atomic_load(&started) < NC) sleep_us(100);
    sleep_us(10000);
    pf_queue_close(q);
    for (int i = 0; i < NC; i++) {
        pf_thread_join(th[i]);
        CHECK_EQ_INT(c[i].last, PF_EOF);
        CHECK_EQ_INT(c[i].got, 0);
    }
    pf_queue_destroy(&q);
}

static void test_close_wakes_producers(void)
{
    enum { NP = 3 };
    pf_queue *q = fifo_make(2, sizeof(int));
    REQUIRE(q);
    int a = 1, b = 2;
    CHECK_OK(pf_queue_push(q, &a, 0));
    CHECK_OK(pf_queue_push(q, &b, 0));
    _Atomic int started = 0;
    closer_ctx c[NP];
    pf_thread th[NP];
    for (int i = 0; i < NP; i++) {
        c[i] = (closer_ctx){.q = q, .timeout = i == 0 ? 2000 : PF_WAIT_FOREVER, .started = &started};
        CHECK_OK(pf_thread_start(&th[i], "blocked", blocked_push_main, &c[i]));
    }
    while (atomic_load(&started) < NP) sleep_us(100);
    sleep_us(10000); /* producers are now blocked on the full queue */
    CHECK_EQ_INT(pf_queue_size(q), 2);
    pf_queue_close(q);
    for (int i = 0; i < NP; i++) {
        pf_thread_join(th[i]);
        CHECK_EQ_INT(c[i].last, PF_ERR_CLOSED);
        CHECK_EQ_INT(c[i].got, 0);
    }
    /* The two items pushed before the close are still there, in order. */
    int v;
    CHECK_OK(pf_queue_pop(q, &v, PF_WAIT_FOREVER));
    CHECK_EQ_INT(v, 1);
    CHECK_OK(pf_queue_pop(q, &v, PF_WAIT_FOREVER));
    CHECK_EQ_INT(v, 2);
    CHECK_EQ_INT(pf_queue_pop(q, &v, PF_WAIT_FOREVER), PF_EOF);
    pf_queue_destroy(&q);
}

/* Capacity 1: strict ping-pong between a producer and a consumer. */
typedef struct pp_ctx {
    pf_queue *q;
    int n;
    int errors;
    size_t max_size;
} pp_ctx;

static void *pp_producer(void *arg)
{
    pp_ctx *c = arg;
    for (int i = 0; i < c->n; i++) {
        int64_t to = (i % 3 == 0) ? PF_WAIT_FOREVER : 100000;
        pf_status st;
        while ((st = pf_queue_push(c->q, &i, to)) == PF_TIMEOUT) {}
        if (st != PF_OK) c->errors++;
        size_t s = pf_queue_size(c->q);
        if (s > c->max_size) c->max_size = s;
    }
    pf_queue_close(c->q);
    return NULL;
}

static void test_capacity_one(void)
{
    pf_queue *q = fifo_make(1, sizeof(int));
    REQUIRE(q);
    int v = 3;
    CHECK_OK(pf_queue_push(q, &v, 0));
    CHECK_EQ_INT(pf_queue_push(q, &v, 0), PF_AGAIN);
    CHECK_EQ_INT(pf_queue_size(q), 1);
    CHECK_OK(pf_queue_pop(q, &v, 0));
    CHECK_EQ_INT(pf_queue_pop(q, &v, 0), PF_AGAIN);

    pp_ctx c = {.q = q, .n = 50000};
    pf_thread th;
    CHECK_OK(pf_thread_start(&th, "pp", pp_producer, &c));
    int expect = 0, bad = 0;
    pf_status st;
    while ((st = pf_queue_pop(q, &v, expect % 2 ? PF_WAIT_FOREVER : 100000)) != PF_EOF) {
        if (st == PF_TIMEOUT) continue;
        if (st != PF_OK || v != expect) bad++;
        expect++;
    }
    pf_thread_join(th);
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(expect, c.n);
    CHECK_EQ_INT(c.errors, 0);
    CHECK(c.max_size <= 1);
    pf_queue_destroy(&q);
}

/* MPMC stress -------------------------------------------------------------------------- */

enum { NPROD = 4, NCONS = 4, MAX_PER_PROD = 200000 };

typedef struct mp_item {
    uint32_t producer;
    uint32_t seq;
    uint64_t check; /* a function of (producer, seq): catches torn copies */
} mp_item;

static uint64_t item_check(uint32_t p, uint32_t s)
{
    return ((uint64_t)p << 40) ^ (uint64_t)s * 0x9E3779B97F4A7C15ull;
}

static _Atomic unsigned char mp_seen[NPROD][MAX_PER_PROD];
static uint32_t mp_per_prod;

typedef struct mp_ctx {
    pf_queue *q;
    uint32_t id;
    uint64_t seed;
    /* consumer results */
    long count, order_errors, range_errors, check_errors;
    size_t max_size;
    pf_status last;
} mp_ctx;

static void *mp_producer(void *arg)
{
    mp_ctx *c = arg;
    uint64_t s = c->seed;
    for (uint32_t i = 0; i < mp_per_prod; i++) {
        mp_item it = {.producer = c->id, .seq = i, .check = item_check(c->id, i)};
        fifo_lcg(&s);
        int mode = (int)((s >> 59) & 7); /* mix polling, timed and blocking pushes */
        pf_status st;
        int tries = 0;
        if (mode == 0) {
            while ((st = pf_queue_push(c->q, &it, 0)) == PF_AGAIN) poll_backoff(&tries);
        } else if (mode <= 2) {
            while ((st = pf_queue_push(c->q, &it, 500)) == PF_TIMEOUT) {}
        } else {
            st = pf_queue_push(c->q, &it, PF_WAIT_FOREVER);
        }
        if (st != PF_OK) {
            c->last = st;
            return NULL;
        }
    }
    c->last = PF_OK;
    return NULL;
}

static void *mp_consumer(void *arg)
{
    mp_ctx *c = arg;
    int64_t last_seq[NPROD];
    for (int p = 0; p < NPROD; p++) last_seq[p] = -1;
    uint64_t s = c->seed;
    mp_item it;
    pf_status st;
    int tries = 0;
    for (;;) {
        fifo_lcg(&s);
        int mode = (int)((s >> 59) & 7);
        st = pf_queue_pop(c->q, &it, mode == 0 ? 0 : mode <= 2 ? 500 : PF_WAIT_FOREVER);
        if (st == PF_AGAIN) poll_backoff(&tries);
        if (st == PF_AGAIN || st == PF_TIMEOUT) continue;
        if (st != PF_OK) break;
        c->count++;
        if (it.producer >= NPROD || it.seq >= mp_per_prod) {
            c->range_errors++;
            continue;
        }
        if (it.check != item_check(it.producer, it.seq)) c->check_errors++;
        if ((int64_t)it.seq <= last_seq[it.producer]) c->order_errors++;
        last_seq[it.producer] = it.seq;
        atomic_fetch_add_explicit(&mp_seen[it.producer][it.seq], 1, memory_order_relaxed);
        size_t sz = pf_queue_size(c->q);
        if (sz > c->max_size) c->max_size = sz;
    }
    c->last = st;
    return NULL;
}

static void run_mpmc(size_t cap, uint32_t per_prod)
{
    mp_per_prod = per_prod;
    pf_queue *q = fifo_make(cap, sizeof(mp_item));
    REQUIRE(q);
    for (int p = 0; p < NPROD; p++)
        for (uint32_t i = 0; i < per_prod; i++)
            atomic_store_explicit(&mp_seen[p][i], 0, memory_order_relaxed);
    mp_ctx prod[NPROD], cons[NCONS];
    pf_thread pt[NPROD], ct[NCONS];
    int64_t t0 = pf_time_ns();
    for (int i = 0; i < NCONS; i++) {
        cons[i] = (mp_ctx){.q = q, .id = (uint32_t)i, .seed = pf_test_rand()};
        CHECK_OK(pf_thread_start(&ct[i], "cons", mp_consumer, &cons[i]));
    }
    for (int i = 0; i < NPROD; i++) {
        prod[i] = (mp_ctx){.q = q, .id = (uint32_t)i, .seed = pf_test_rand()};
        CHECK_OK(pf_thread_start(&pt[i], "prod", mp_producer, &prod[i]));
    }
    for (int i = 0; i < NPROD; i++) {
        pf_thread_join(pt[i]);
        CHECK_OK(prod[i].last);
    }
    pf_queue_close(q);
    long total = 0, order = 0, range = 0, chk = 0;
    size_t max_size = 0;
    for (int i = 0; i < NCONS; i++) {
        pf_thread_join(ct[i]);
        CHECK_EQ_INT(cons[i].last, PF_EOF);
        total += cons[i].count;
        order += cons[i].order_errors;
        range += cons[i].range_errors;
        chk += cons[i].check_errors;
        if (cons[i].max_size > max_size) max_size = cons[i].max_size;
    }
    double dt = (double)(pf_time_ns() - t0) / 1e9;
    long missing = 0, dup = 0;
    for (int p = 0; p < NPROD; p++)
        for (uint32_t i = 0; i < per_prod; i++) {
            int n = atomic_load_explicit(&mp_seen[p][i], memory_order_relaxed);
            missing += n == 0;
            dup += n > 1;
        }
    CHECK_EQ_INT(total, (long)NPROD * per_prod);
    CHECK_EQ_INT(missing, 0);
    CHECK_EQ_INT(dup, 0);
    CHECK_EQ_INT(order, 0);
    CHECK_EQ_INT(range, 0);
    CHECK_EQ_INT(chk, 0);
    CHECK(max_size <= cap);
    printf("  %dx%d threads, capacity %zu: %ld items in %.2f s (%.2f M items/s)\n", NPROD, NCONS,
           cap, total, dt, (double)total / dt / 1e6);
    pf_queue_destroy(&q);
}

static void test_mpmc_stress(void)
{
    run_mpmc(64, MAX_PER_PROD);
}

static void test_mpmc_tiny(void)
{
    /* Every item makes somebody wait: fewer items keep it short. */
    run_mpmc(2, 10000);
}

int main(void)
{
    pf_test_seed(0x0E0E);
    PF_RUN(test_invalid);
    PF_RUN(test_model);
    PF_RUN(test_nonblocking);
    PF_RUN(test_timeouts);
    PF_RUN(test_wakeups);
    PF_RUN(test_close_basic);
    PF_RUN(test_close_wakes_consumers);
    PF_RUN(test_close_wakes_producers);
    PF_RUN(test_capacity_one);
    PF_RUN(test_mpmc_stress);
    PF_RUN(test_mpmc_tiny);
    return pf_test_finish();
}
