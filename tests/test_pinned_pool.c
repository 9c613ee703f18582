/* Pinned host pool on the CPU device: exhaustion with the three timeout
 * modes, wakeups, close while waiting, lifetime after destroy, poisoning,
 * statistics and a many-thread hammer with data checks. */
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/sys.h"
#include "device/backend.h"
#include "pf_test.h"

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static pf_pinned_pool *make(const char *name, size_t block_size, int count)
{
    pf_pinned_pool_params p = pf_pinned_pool_params_default();
    p.block_size = block_size;
    p.block_count = count;
    p.name = name;
    pf_pinned_pool *pool = NULL;
    if (pf_pinned_pool_create(&p, &pool) != PF_OK) fprintf(stderr, "  create: %s\n", pf_last_error());
    return pool;
}

/* Waits (up to 5 s) until some thread is blocked inside acquire. */
static int wait_for_waits(const pf_pinned_pool *p, uint64_t waits)
{
    for (int i = 0; i < 5000; i++) {
        if (pf_test_pinned_pool_stats(p).waits >= waits) return 1;
        sleep_ms(1);
    }
    return 0;
}

static void test_exhaustion_and_timeouts(void)
{
    enum { N = 4 };
    const size_t bs = 1000; /* not a multiple of the alignment */
    pf_pinned_pool *p = make("exhaust", bs, N);
    REQUIRE(p);
    pf_pinned_pool_stats s = pf_test_pinned_pool_stats(p);
    CHECK_EQ_INT(s.block_size, bs);
    CHECK_EQ_INT(s.block_count, N);
    CHECK_EQ_INT(s.blocks_free, N);
    CHECK_EQ_INT(s.min_blocks_free, N);
    CHECK(!s.pinned); /* the CPU device has no page-locked memory */

    pf_buffer *b[N + 1] = {0};
    for (int i = 0; i < N; i++) {
        CHECK_OK(pf_pinned_pool_acquire(p, 0, &b[i]));
        REQUIRE(b[i]);
        CHECK_EQ_INT(pf_buffer_size(b[i]), bs);
        CHECK_EQ_INT(pf_buffer_domain(b[i]), PF_MEM_HOST);
        CHECK(pf_buffer_device(b[i]) == pf_cpu_device());
        CHECK(((uintptr_t)pf_buffer_data(b[i]) & 255) == 0);
        CHECK_EQ_INT(pf_buffer_refcount(b[i]), 1);
        memset(pf_buffer_data(b[i]), i + 1, bs);
    }
    /* Distinct, non-overlapping blocks. */
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            if (i == j) continue;
            uintptr_t x = (uintptr_t)pf_buffer_data(b[i]), y = (uintptr_t)pf_buffer_data(b[j]);
            CHECK(x + bs <= y || y + bs <= x);
        }
    for (int i = 0; i < N; i++) {
        unsigned char *d = pf_buffer_data(b[i]);
        CHECK(d[0] == i + 1 && d[bs - 1] == i + 1);
    }
    s = pf_test_pinned_pool_stats(p);
    CHECK_EQ_INT(s.blocks_free, 0);
    CHECK_EQ_INT(s.min_blocks_free, 0);
    CHECK_EQ_INT(s.acquires, N);
    CHECK_EQ_INT(s.waits, 0);

    CHECK_EQ_INT(pf_pinned_pool_acquire(p, 0, &b[N]), PF_AGAIN);
    CHECK(b[N] == NULL);
    s = pf_test_pinned_pool_stats(p);
    CHECK_EQ_INT(s.timeouts, 1);
    CHECK_EQ_INT(s.waits, 0);

    int64_t t0 = pf_time_ns();
    CHECK_EQ_INT(pf_pinned_pool_acquire(p, 30000, &b[N]), PF_TIMEOUT);
    int64_t waited = pf_time_ns() - t0;
    CHECK(waited >= 30000000);
    CHECK(waited < 3000000000LL);
    CHECK(b[N] == NULL);
    s = pf_test_pinned_pool_stats(p);
    CHECK_EQ_INT(s.timeouts, 2);
    CHECK_EQ_INT(s.waits, 1);
    CHECK_EQ_INT(s.acquires, N);

    /* An extra reference keeps the block out; the last one returns it. */
    pf_buffer *r = pf_buffer_ref(b[2]);
    pf_buffer_unref(&b[2]);
    CHECK_EQ_INT(pf_test_pinned_pool_stats(p).blocks_free, 0);
    CHECK_EQ_INT(pf_pinned_pool_acquire(p, 0, &b[N]), PF_AGAIN);
    void *d2 = pf_buffer_data(r);
    pf_buffer_unref(&r);
    CHECK_EQ_INT(pf_test_pinned_pool_stats(p).blocks_free, 1);
    CHECK_OK(pf_pinned_pool_acquire(p, 0, &b[2]));
    CHECK(pf_buffer_data(b[2]) == d2);
    CHECK_EQ_INT(pf_buffer_refcount(b[2]), 1); /* the record was re-initialised */

    for (int i = 0; i < N; i++) pf_buffer_unref(&b[i]);
    s = pf_test_pinned_pool_stats(p);
    CHECK_EQ_INT(s.blocks_free, N);
    CHECK_EQ_INT(s.min_blocks_free, 0);
    CHECK_EQ_INT(s.acquires, N + 1);
    CHECK_EQ_INT(s.timeouts, 3);
    pf_pinned_pool_destroy(&p);
    CHECK(p == NULL);
    pf_pinned_pool_destroy(&p);
    pf_pinned_pool_destroy(NULL);
}

typedef struct waiter {
    pf_pinned_pool *pool;
    int64_t timeout_us;
    pf_status st;
    pf_buffer *buf;
    int64_t waited_ns;
    char msg[256];
} waiter;

static void *waiter_thread(void *arg)
{
    waiter *w = arg;
    int64_t t0 = pf_time_ns();
    w->st = pf_pinned_pool_acquire(w->pool, w->timeout_us, &w->buf);
    w->waited_ns = pf_time_ns() - t0;
    snprintf(w->msg, sizeof w->msg, "%s", pf_last_error());
    return NULL;
}

static void test_wakeup(void)
{
    static const int64_t timeouts[2] = {PF_WAIT_FOREVER, 10 * 1000 * 1000};
    for (int m = 0; m < 2; m++) {
        pf_pinned_pool *p = make("wake", 4096, 2);
        REQUIRE(p);
        pf_buffer *a = NULL, *b = NULL;
        CHECK_OK(pf_pinned_pool_acquire(p, 0, &a));
        CHECK_OK(pf_pinned_pool_acquire(p, 0, &b));
        REQUIRE(a && b);
        void *pa = pf_buffer_data(a);
        waiter w = {.pool = p, .timeout_us = timeouts[m], .st = PF_ERR_INTERNAL};
        pf_thread t;
        CHECK_OK(pf_thread_start(&t, "waiter", waiter_thread, &w));
        CHECK(wait_for_waits(p, 1));
        sleep_ms(20);
        CHECK(w.buf == NULL); /* still blocked */
        pf_buffer_unref(&a);
        pf_thread_join(t);
        CHECK_OK(w.st);
        CHECK(w.buf && pf_buffer_data(w.buf) == pa);
        CHECK(w.waited_ns >= 20000000);
        CHECK(w.waited_ns < 5000000000LL); /* woken, not timed out */
        pf_pinned_pool_stats s = pf_test_pinned_pool_stats(p);
        CHECK_EQ_INT(s.waits, 1);
        CHECK_EQ_INT(s.timeouts, 0);
        CHECK_EQ_INT(s.acquires, 3);
        pf_buffer_unref(&w.buf);
        pf_buffer_unref(&b);
        pf_pinned_pool_destroy(&p);
    }
}

static void test_destroy_with_blocks_out(void)
{
    pf_pinned_pool *p = make("orphans", 10000, 3);
    REQUIRE(p);
    pf_buffer *b[3] = {0};
    for (int i = 0; i < 3; i++) CHECK_OK(pf_pinned_pool_acquire(p, 0, &b[i]));
    pf_buffer_unref(&b[1]);
    pf_pinned_pool_destroy(&p);
    CHECK(p == NULL);
    /* The blocks still out stay valid and writable. */
    REQUIRE(b[0] && b[2]);
    memset(pf_buffer_data(b[0]), 0x42, 10000);
    memset(pf_buffer_data(b[2]), 0x43, 10000);
    CHECK(((unsigned char *)pf_buffer_data(b[0]))[9999] == 0x42);
    pf_buffer_unref(&b[2]);
    CHECK(((unsigned char *)pf_buffer_data(b[0]))[0] == 0x42);
    pf_buffer_unref(&b[0]); /* last: frees everything (ASan checks) */
}

static void test_destroy_wakes_waiters(void)
{
    pf_pinned_pool *p = make("closing", 512, 1);
    REQUIRE(p);
    pf_buffer *held = NULL;
    CHECK_OK(pf_pinned_pool_acquire(p, 0, &held));
    enum { NW = 3 };
    waiter w[NW];
    pf_thread t[NW];
    static const int64_t timeouts[NW] = {PF_WAIT_FOREVER, 60 * 1000 * 1000, PF_WAIT_FOREVER};
    for (int i = 0; i < NW; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].pool = p;
        w[i].timeout_us = timeouts[i];
        w[i].st = PF_ERR_INTERNAL;
        CHECK_OK(pf_thread_start(&t[i], "waiter", waiter_thread, &w[i]));
    }
    /* Destroy only once every waiter is inside acquire (the header's rule). */
    CHECK(wait_for_waits(p, NW));
    pf_pinned_pool_destroy(&p);
    for (int i = 0; i < NW; i++) {
        pf_thread_join(t[i]);
        CHECK_EQ_INT(w[i].st, PF_ERR_CLOSED);
        CHECK(w[i].buf == NULL);
        CHECK(strstr(w[i].msg, "'closing'") != NULL);
        CHECK(strstr(w[i].msg, "closed") != NULL);
        CHECK(w[i].waited_ns < 30000000000LL);
    }
    /* The held block is still usable, and its return frees the pool. */
    memset(pf_buffer_data(held), 1, 512);
    pf_buffer_unref(&held);
}

/* Whoever drops the last reference frees the pool: here the returning block
 * and the leaving waiter race for it (both orders happen over the rounds). */
static void test_destroy_last_ref_race(void)
{
    for (int round = 0; round < 50; round++) {
        pf_pinned_pool *p = make("race", 256, 1);
        REQUIRE(p);
        pf_buffer *held = NULL;
        CHECK_OK(pf_pinned_pool_acquire(p, 0, &held));
        waiter w = {.pool = p, .timeout_us = PF_WAIT_FOREVER, .st = PF_ERR_INTERNAL};
        pf_thread t;
        CHECK_OK(pf_thread_start(&t, "waiter", waiter_thread, &w));
        CHECK(wait_for_waits(p, 1));
        pf_pinned_pool_destroy(&p);
        pf_buffer_unref(&held);
        pf_thread_join(t);
        CHECK_EQ_INT(w.st, PF_ERR_CLOSED);
        CHECK(w.buf == NULL);
    }
}

static void test_poison(void)
{
    if (!pf_poison_enabled()) {
        printf("  (poisoning off in this build: not checked)\n");
        return;
    }
    pf_pinned_pool *p = make("poison", 3000, 2);
    REQUIRE(p);
    pf_buffer *b = NULL;
    CHECK_OK(pf_pinned_pool_acquire(p, 0, &b));
    REQUIRE(b);
    unsigned char *d = pf_buffer_data(b);
    memset(d, 0x11, 3000);
    pf_buffer_unref(&b);
    CHECK_OK(pf_pinned_pool_acquire(p, 0, &b)); /* LIFO: the same block */
    REQUIRE(b);
    CHECK(pf_buffer_data(b) == d);
    size_t bad = 0;
    for (size_t i = 0; i < 3000; i++) bad += d[i] != 0xDB;
    CHECK_EQ_INT(bad, 0);
    pf_buffer_unref(&b);
    pf_pinned_pool_destroy(&p);
}

static void test_invalid(void)
{
    pf_pinned_pool_params prm = pf_pinned_pool_params_default();
    pf_pinned_pool *p = NULL;
    CHECK_EQ_INT(pf_pinned_pool_create(&prm, &p), PF_ERR_INVALID); /* size 0 */
    CHECK(strstr(pf_last_error(), "block_size 0") != NULL);
    prm.block_size = 64;
    prm.block_count = 0;
    prm.name = "bad";
    CHECK_EQ_INT(pf_pinned_pool_create(&prm, &p), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "block_count 0") != NULL);
    CHECK(strstr(pf_last_error(), "'bad'") != NULL);
    prm.block_count = -3;
    CHECK_EQ_INT(pf_pinned_pool_create(&prm, &p), PF_ERR_INVALID);
    prm.block_count = 1 << 30;
    prm.block_size = SIZE_MAX / 4;
    CHECK_EQ_INT(pf_pinned_pool_create(&prm, &p), PF_ERR_INVALID);
    CHECK(p == NULL);
    prm.block_count = 2;
    CHECK_EQ_INT(pf_pinned_pool_create(NULL, &p), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_pinned_pool_create(&prm, NULL), PF_ERR_INVALID);

    /* The name is copied. */
    char name[16] = "copied";
    prm.block_size = 64;
    prm.name = name;
    CHECK_OK(pf_pinned_pool_create(&prm, &p));
    REQUIRE(p);
    strcpy(name, "xxxxxx");
    pf_buffer *b = (pf_buffer *)&prm;
    CHECK_EQ_INT(pf_pinned_pool_acquire(NULL, 0, &b), PF_ERR_INVALID);
    CHECK(b == NULL);
    CHECK_EQ_INT(pf_pinned_pool_acquire(p, 0, NULL), PF_ERR_INVALID);
    pf_pinned_pool_stats s;
    CHECK_EQ_INT(pf_pinned_pool_get_stats(NULL, &s), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_pinned_pool_get_stats(p, NULL), PF_ERR_INVALID);
    /* A closed-pool message names the pool by its copied name: close with a waiter. */
    pf_buffer *x = NULL, *y = NULL;
    CHECK_OK(pf_pinned_pool_acquire(p, 0, &x));
    CHECK_OK(pf_pinned_pool_acquire(p, 0, &y));
    waiter w = {.pool = p, .timeout_us = PF_WAIT_FOREVER, .st = PF_ERR_INTERNAL};
    pf_thread t;
    CHECK_OK(pf_thread_start(&t, "waiter", waiter_thread, &w));
    CHECK(wait_for_waits(p, 1));
    pf_pinned_pool_destroy(&p);
    pf_thread_join(t);
    CHECK_EQ_INT(w.st, PF_ERR_CLOSED);
    CHECK(strstr(w.msg, "'copied'") != NULL);
    pf_buffer_unref(&x);
    pf_buffer_unref(&y);
}

/* Hammer --------------------------------------------------------------------- */

typedef struct hammer_arg {
    pf_pinned_pool *pool;
    int id, iters;
    size_t block_size;
    uint64_t acquired, timeouts, corrupt, errors;
    atomic_int *holders;
    int max_holders;
} hammer_arg;

static void *hammer_thread(void *arg)
{
    hammer_arg *h = arg;
    for (int i = 0; i < h->iters; i++) {
        pf_buffer *b = NULL;
        /* Mix the three modes: non-blocking, short timed, forever. */
        int64_t to = i % 3 == 0 ? 0 : i % 3 == 1 ? 200 : PF_WAIT_FOREVER;
        pf_status st = pf_pinned_pool_acquire(h->pool, to, &b);
        if (st == PF_AGAIN || st == PF_TIMEOUT) {
            h->timeouts++;
            continue;
        }
        if (st != PF_OK || !b || pf_buffer_size(b) != h->block_size) {
            h->errors++;
            pf_buffer_unref(&b);
            continue;
        }
        int now = atomic_fetch_add(h->holders, 1) + 1;
        if (now > h->max_holders) h->max_holders = now;
        h->acquired++;
        unsigned char v = (unsigned char)(h->id * 31 + i);
        unsigned char *d = pf_buffer_data(b);
        memset(d, v, h->block_size);
        if (i % 7 == 0) sched_yield();
        for (size_t j = 0; j < h->block_size; j++)
            if (d[j] != v) {
                h->corrupt++;
                break;
            }
        atomic_fetch_sub(h->holders, 1);
        pf_buffer_unref(&b);
    }
    return NULL;
}

static void test_hammer(void)
{
    enum { NT = 8, BLOCKS = 3, ITERS = 20000 };
    const size_t bs = 2000;
    pf_pinned_pool *p = make("hammer", bs, BLOCKS);
    REQUIRE(p);
    atomic_int holders;
    atomic_init(&holders, 0);
    hammer_arg h[NT];
    pf_thread t[NT];
    for (int i = 0; i < NT; i++) {
        memset(&h[i], 0, sizeof h[i]);
        h[i].pool = p;
        h[i].id = i;
        h[i].iters = ITERS;
        h[i].block_size = bs;
        h[i].holders = &holders;
        CHECK_OK(pf_thread_start(&t[i], "hammer", hammer_thread, &h[i]));
    }
    uint64_t acquired = 0, timeouts = 0;
    int max_holders = 0;
    for (int i = 0; i < NT; i++) {
        pf_thread_join(t[i]);
        CHECK_EQ_INT(h[i].errors, 0);
        CHECK_EQ_INT(h[i].corrupt, 0);
        acquired += h[i].acquired;
        timeouts += h[i].timeouts;
        if (h[i].max_holders > max_holders) max_holders = h[i].max_holders;
    }
    CHECK(max_holders <= BLOCKS);
    pf_pinned_pool_stats s = pf_test_pinned_pool_stats(p);
    CHECK_EQ_INT(s.acquires, acquired);
    CHECK_EQ_INT(s.timeouts, timeouts);
    CHECK_EQ_INT(acquired + timeouts, (uint64_t)NT * ITERS);
    CHECK_EQ_INT(s.blocks_free, BLOCKS);
    CHECK_EQ_INT(s.min_blocks_free, 0);
    CHECK(s.waits <= (uint64_t)NT * ITERS);
    printf("  hammer: %" PRIu64 " acquires, %" PRIu64 " waits, %" PRIu64 " timeouts\n",
           s.acquires, s.waits, s.timeouts);
    pf_pinned_pool_destroy(&p);
}

int main(void)
{
    setenv("PIXFLOW_POISON", "1", 1); /* exercise poisoning in every build type */
    pf_test_seed(7);
    PF_RUN(test_exhaustion_and_timeouts);
    PF_RUN(test_wakeup);
    PF_RUN(test_destroy_with_blocks_out);
    PF_RUN(test_destroy_wakes_waiters);
    PF_RUN(test_destroy_last_ref_race);
    PF_RUN(test_poison);
    PF_RUN(test_invalid);
    PF_RUN(test_hammer);
    return pf_test_finish();
}
