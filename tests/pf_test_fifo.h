/* pf_test_fifo.h: checks shared by tests/test_queue.c (pf_queue, MPMC) and
 * tests/test_ring.c (pf_ring, SPSC). Both containers have the same API shape
 * - pf_X_create/destroy/push/pop/close/size/capacity with pf_X_params
 * {capacity, item_size} - and the same status codes, timeouts and close
 * semantics, so the single-threaded model check, the timeout bounds, the
 * wakeup checks (one producer thread, one consumer thread: valid for both)
 * and the close/drain rules are written once here.
 *
 * Use: name the container, then include; fifo_make() is then the test's
 * constructor too:
 *
 *   #define PF_TEST_FIFO queue  // pf_queue, pf_queue_push, ...
 *   #include "pf_test_fifo.h"
 *
 * A test that must adjust every container it makes defines
 * PF_TEST_FIFO_ON_MAKE(f) as well (test_ring.c: the spin time).
 *
 * Everything is static inline, so a test that does not call a check has no
 * unused-function warning. What only one container has (queue: several
 * producers and consumers; ring: exact capacity and the spin/sleep paths)
 * stays in its own test. */
#ifndef PF_TEST_FIFO_H
#define PF_TEST_FIFO_H

#include <time.h>

#include "core/sys.h"
#include "pf_test.h"

#ifndef PF_TEST_FIFO
#error "define PF_TEST_FIFO (queue or ring) before including pf_test_fifo.h"
#endif

#define PF_TEST_FIFO_CAT_(a, b, c) a##b##c
#define PF_TEST_FIFO_CAT(a, b, c) PF_TEST_FIFO_CAT_(a, b, c)
/* PF_TEST_FIFO_FN(push) is pf_queue_push or pf_ring_push. */
#define PF_TEST_FIFO_FN(op) PF_TEST_FIFO_CAT(pf_, PF_TEST_FIFO, _##op)
#define PF_TEST_FIFO_STR_(x) #x
#define PF_TEST_FIFO_STR(x) PF_TEST_FIFO_STR_(x)
/* "queue" or "ring", as the library's messages spell it. */
#define PF_TEST_FIFO_NAME PF_TEST_FIFO_STR(PF_TEST_FIFO)

typedef PF_TEST_FIFO_CAT(pf_, PF_TEST_FIFO, ) fifo_t;
typedef PF_TEST_FIFO_FN(params) fifo_params;

/* NULL, with the library's message on stderr, if creation fails. */
static inline fifo_t *fifo_make(size_t cap, size_t item_size)
{
    fifo_params p = {.capacity = cap, .item_size = item_size};
    fifo_t *f = NULL;
    if (PF_TEST_FIFO_FN(create)(&p, &f) != PF_OK)
        fprintf(stderr, "  create: %s\n", pf_last_error());
#ifdef PF_TEST_FIFO_ON_MAKE
    if (f) PF_TEST_FIFO_ON_MAKE(f);
#endif
    return f;
}
static inline pf_status fifo_push(fifo_t *f, const void *item, int64_t timeout_us)
{
    return PF_TEST_FIFO_FN(push)(f, item, timeout_us);
}
static inline pf_status fifo_pop(fifo_t *f, void *item, int64_t timeout_us)
{
    return PF_TEST_FIFO_FN(pop)(f, item, timeout_us);
}

static inline void sleep_us(int64_t us)
{
    struct timespec ts = {.tv_sec = (time_t)(us / 1000000), .tv_nsec = (long)(us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* What a polling caller does after PF_AGAIN: retry at once a few times, then
 * nap. (sched_yield() instead makes polling crawl on a loaded machine.) */
static inline void poll_backoff(int *tries)
{
    if (++*tries >= 64) {
        *tries = 0;
        sleep_us(1);
    }
}

/* Creation and call errors every container reports the same way; the
 * container's own limits (overflow, allocation size) are checked by its test. */
static inline void fifo_check_invalid(void)
{
    fifo_t *f = (fifo_t *)1;
    fifo_params p = {.capacity = 0, .item_size = 8};
    CHECK_EQ_INT(PF_TEST_FIFO_FN(create)(&p, &f), PF_ERR_INVALID);
    CHECK(f == NULL);
    CHECK(strstr(pf_last_error(), "capacity 0") != NULL);
    p = (fifo_params){.capacity = 4, .item_size = 0};
    CHECK_EQ_INT(PF_TEST_FIFO_FN(create)(&p, &f), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "item_size 0") != NULL);
    CHECK_EQ_INT(PF_TEST_FIFO_FN(create)(NULL, &f), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "params is NULL") != NULL);
    p = (fifo_params){.capacity = 4, .item_size = 4};
    CHECK_EQ_INT(PF_TEST_FIFO_FN(create)(&p, NULL), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "out is NULL") != NULL);

    f = fifo_make(2, 4);
    REQUIRE(f);
    uint32_t v = 1;
    CHECK_EQ_INT(fifo_push(f, NULL, 0), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "item is NULL") != NULL);
    CHECK_EQ_INT(fifo_pop(f, NULL, 0), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "item is NULL") != NULL);
    CHECK_EQ_INT(fifo_push(NULL, &v, 0), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), PF_TEST_FIFO_NAME " is NULL") != NULL);
    CHECK_EQ_INT(fifo_pop(NULL, &v, 0), PF_ERR_INVALID);
    CHECK_EQ_INT(PF_TEST_FIFO_FN(size)(NULL), 0);
    CHECK_EQ_INT(PF_TEST_FIFO_FN(capacity)(NULL), 0);
    PF_TEST_FIFO_FN(close)(NULL);
    PF_TEST_FIFO_FN(destroy)(&f);
    CHECK(f == NULL);
    PF_TEST_FIFO_FN(destroy)(&f);
    PF_TEST_FIFO_FN(destroy)(NULL);
}

/* `rounds` random capacities in [1, max_cap], `ops` random non-blocking
 * pushes and pops each, against an array model: FIFO order, PF_AGAIN exactly
 * when full or empty, a failed pop leaves the item alone, size() always right.
 * Items are 13 bytes (odd on purpose), distinct over 256 pushes. */
enum { FIFO_MODEL_ISZ = 13, FIFO_MODEL_MAXCAP = 32 };
static inline void fifo_check_model(int rounds, size_t max_cap, int ops)
{
    enum { ISZ = FIFO_MODEL_ISZ };
    REQUIRE(max_cap >= 1 && max_cap <= FIFO_MODEL_MAXCAP);
    for (int round = 0; round < rounds; round++) {
        size_t cap = (size_t)pf_test_rand_range(1, (int64_t)max_cap);
        fifo_t *f = fifo_make(cap, ISZ);
        REQUIRE(f);
        CHECK_EQ_INT(PF_TEST_FIFO_FN(capacity)(f), cap);
        unsigned char model[FIFO_MODEL_MAXCAP][ISZ];
        size_t mhead = 0, mcount = 0;
        unsigned char next = 0;
        for (int op = 0; op < ops; op++) {
            unsigned char item[ISZ];
            if (pf_test_rand() & 1) {
                for (int b = 0; b < ISZ; b++) item[b] = (unsigned char)(next * 7 + b * 31);
                pf_status st = fifo_push(f, item, 0);
                if (mcount == cap) {
                    CHECK_EQ_INT(st, PF_AGAIN);
                } else {
                    CHECK_EQ_INT(st, PF_OK);
                    memcpy(model[(mhead + mcount) % cap], item, ISZ);
                    mcount++;
                    next++;
                }
            } else {
                memset(item, 0xEE, ISZ);
                pf_status st = fifo_pop(f, item, 0);
                if (mcount == 0) {
                    CHECK_EQ_INT(st, PF_AGAIN);
                    CHECK_EQ_INT(item[0], 0xEE); /* untouched */
                } else {
                    CHECK_EQ_INT(st, PF_OK);
                    CHECK(memcmp(item, model[mhead], ISZ) == 0);
                    mhead = (mhead + 1) % cap;
                    mcount--;
                }
            }
            CHECK_EQ_INT(PF_TEST_FIFO_FN(size)(f), mcount);
        }
        PF_TEST_FIFO_FN(destroy)(&f);
    }
}

/* A timed wait that expires took at least its timeout and not much more. */
static inline void check_elapsed(int64_t t0, int64_t timeout_us)
{
    int64_t el_us = (pf_time_ns() - t0) / 1000;
    CHECK(el_us >= timeout_us);
    CHECK(el_us < timeout_us + 1000000); /* generous: the machine is shared */
    if (el_us < timeout_us || el_us >= timeout_us + 1000000)
        fprintf(stderr, "  timeout %lld us took %lld us\n", (long long)timeout_us,
                (long long)el_us);
}

/* Timed pops on empty and pushes on full return PF_TIMEOUT after their
 * timeout; a wait that can proceed does so whatever its timeout. */
static inline void fifo_check_timeouts(void)
{
    fifo_t *f = fifo_make(2, sizeof(int));
    REQUIRE(f);
    int v = 7;
    int64_t timeouts[] = {1, 1000, 20000, 50000};
    for (size_t i = 0; i < sizeof timeouts / sizeof *timeouts; i++) {
        int64_t t0 = pf_time_ns();
        CHECK_EQ_INT(fifo_pop(f, &v, timeouts[i]), PF_TIMEOUT);
        check_elapsed(t0, timeouts[i]);
    }
    CHECK_OK(fifo_push(f, &v, 1000));
    CHECK_OK(fifo_push(f, &v, PF_WAIT_FOREVER));
    for (size_t i = 0; i < sizeof timeouts / sizeof *timeouts; i++) {
        int64_t t0 = pf_time_ns();
        CHECK_EQ_INT(fifo_push(f, &v, timeouts[i]), PF_TIMEOUT);
        check_elapsed(t0, timeouts[i]);
    }
    /* A huge timeout must not overflow into "already expired". */
    CHECK_OK(fifo_pop(f, &v, INT64_MAX));
    CHECK_OK(fifo_push(f, &v, INT64_MAX));
    CHECK_EQ_INT(PF_TEST_FIFO_FN(size)(f), 2);
    PF_TEST_FIFO_FN(destroy)(&f);
}

/* The other thread acts after a delay; a long timed or blocking wait returns
 * early, when the other side lets it. */
typedef struct fifo_delayed {
    fifo_t *f;
    int64_t delay_us;
    int action; /* 0 push, 1 pop, 2 close */
    int value;
    pf_status st;
} fifo_delayed;

static inline void *fifo_delayed_main(void *arg)
{
    fifo_delayed *d = arg;
    sleep_us(d->delay_us);
    if (d->action == 0)
        d->st = fifo_push(d->f, &d->value, PF_WAIT_FOREVER);
    else if (d->action == 1)
        d->st = fifo_pop(d->f, &d->value, PF_WAIT_FOREVER);
    else
        PF_TEST_FIFO_FN(close)(d->f);
    return NULL;
}

/* Capacity 1, blocking and 10 s waits: a sleeping consumer is woken by a
 * push, a sleeping producer by a pop, and both by close (PF_EOF for the
 * consumer; PF_ERR_CLOSED for the producer, the item inside staying). */
static inline void fifo_check_wakeups(void)
{
    int64_t waits[] = {PF_WAIT_FOREVER, 10000000};
    for (int w = 0; w < 2; w++) {
        fifo_t *f = fifo_make(1, sizeof(int));
        REQUIRE(f);
        pf_thread th;
        /* consumer sleeps on empty, producer wakes it */
        fifo_delayed d = {.f = f, .delay_us = 20000, .action = 0, .value = 42};
        CHECK_OK(pf_thread_start(&th, "delayed", fifo_delayed_main, &d));
        int v = 0;
        int64_t t0 = pf_time_ns();
        CHECK_OK(fifo_pop(f, &v, waits[w]));
        CHECK(pf_time_ns() - t0 < 5000000000ll);
        CHECK_EQ_INT(v, 42);
        pf_thread_join(th);
        CHECK_OK(d.st);
        /* producer sleeps on full, consumer wakes it */
        v = 1;
        CHECK_OK(fifo_push(f, &v, 0));
        d = (fifo_delayed){.f = f, .delay_us = 20000, .action = 1};
        CHECK_OK(pf_thread_start(&th, "delayed", fifo_delayed_main, &d));
        v = 2;
        t0 = pf_time_ns();
        CHECK_OK(fifo_push(f, &v, waits[w]));
        CHECK(pf_time_ns() - t0 < 5000000000ll);
        pf_thread_join(th);
        CHECK_OK(d.st);
        CHECK_EQ_INT(d.value, 1);
        CHECK_OK(fifo_pop(f, &v, 0));
        CHECK_EQ_INT(v, 2);
        /* consumer sleeps on empty, close wakes it with PF_EOF */
        d = (fifo_delayed){.f = f, .delay_us = 20000, .action = 2};
        CHECK_OK(pf_thread_start(&th, "closer", fifo_delayed_main, &d));
        CHECK_EQ_INT(fifo_pop(f, &v, waits[w]), PF_EOF);
        pf_thread_join(th);
        PF_TEST_FIFO_FN(destroy)(&f);

        /* producer sleeps on full, close wakes it with PF_ERR_CLOSED; the item inside stays */
        f = fifo_make(1, sizeof(int));
        REQUIRE(f);
        v = 5;
        CHECK_OK(fifo_push(f, &v, 0));
        d = (fifo_delayed){.f = f, .delay_us = 20000, .action = 2};
        CHECK_OK(pf_thread_start(&th, "closer", fifo_delayed_main, &d));
        v = 6;
        CHECK_EQ_INT(fifo_push(f, &v, waits[w]), PF_ERR_CLOSED);
        CHECK(strstr(pf_last_error(), "closed") != NULL);
        pf_thread_join(th);
        CHECK_OK(fifo_pop(f, &v, PF_WAIT_FOREVER));
        CHECK_EQ_INT(v, 5);
        CHECK_EQ_INT(fifo_pop(f, &v, PF_WAIT_FOREVER), PF_EOF);
        PF_TEST_FIFO_FN(destroy)(&f);
    }
}

/* Close with `n` items inside (n < cap): idempotent; every push after it is
 * refused in every wait mode with the library's message; the items still
 * come out in order in every wait mode, then PF_EOF in every wait mode. */
static inline void fifo_check_close_drain(size_t cap, int n)
{
    static const int64_t modes[] = {0, 1000, PF_WAIT_FOREVER};
    fifo_t *f = fifo_make(cap, sizeof(int));
    REQUIRE(f);
    for (int i = 0; i < n; i++) CHECK_OK(fifo_push(f, &i, 0));
    PF_TEST_FIFO_FN(close)(f);
    PF_TEST_FIFO_FN(close)(f); /* idempotent */
    int v = 9;
    for (int m = 0; m < 3; m++) {
        pf_clear_error();
        CHECK_EQ_INT(fifo_push(f, &v, modes[m]), PF_ERR_CLOSED);
        CHECK(strstr(pf_last_error(), "pf_" PF_TEST_FIFO_NAME "_push: the " PF_TEST_FIFO_NAME
                                      " is closed") != NULL);
    }
    CHECK_EQ_INT(PF_TEST_FIFO_FN(size)(f), n);
    for (int i = 0; i < n; i++) {
        CHECK_OK(fifo_pop(f, &v, modes[i % 3]));
        CHECK_EQ_INT(v, i);
    }
    for (int m = 0; m < 3; m++) CHECK_EQ_INT(fifo_pop(f, &v, modes[m]), PF_EOF);
    PF_TEST_FIFO_FN(destroy)(&f);
}

/* The 64-bit LCG (Knuth's MMIX constants) the stress threads use to pick
 * wait modes and pauses: cheap, and each thread has its own state. */
static inline uint64_t fifo_lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s;
}

#endif
