/* pf_ring: parameter errors, capacity limits (1, non-powers of two), a model
 * check, timeouts, close/drain, and a 5e6-item producer/consumer run that
 * checks order and completeness under every wait mode. */
#include <stdatomic.h>

#include "core/sys.h"
#include "pf_test.h"

/* Internal hook in ring.c: spin time before sleeping; 0 forces every wait
 * through the mutex/condvar path, which is the one that can lose wakeups. */
void pf_ring_set_spin_ns_(pf_ring *r, int64_t ns);
static int64_t ring_spin_ns = -1; /* -1: leave the default */

/* Applied to every ring fifo_make() creates. */
static void apply_spin(pf_ring *r)
{
    if (ring_spin_ns >= 0) pf_ring_set_spin_ns_(r, ring_spin_ns);
}

/* fifo_make() and the checks pf_ring shares with pf_queue (model, timeouts,
 * wakeups, close). */
#define PF_TEST_FIFO ring
#define PF_TEST_FIFO_ON_MAKE apply_spin
#include "pf_test_fifo.h"

static void test_invalid(void)
{
    fifo_check_invalid();
    /* What is particular to pf_ring: its size limits. */
    pf_ring *r = (pf_ring *)1;
    pf_ring_params p = {.capacity = SIZE_MAX / 2 + 2, .item_size = 1};
    CHECK_EQ_INT(pf_ring_create(&p, &r), PF_ERR_INVALID); /* no power of two that large */
    CHECK(r == NULL);
    CHECK(strstr(pf_last_error(), "overflows") != NULL);
    p = (pf_ring_params){.capacity = SIZE_MAX / 8, .item_size = 16};
    CHECK_EQ_INT(pf_ring_create(&p, &r), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "item_size 16") != NULL);
}

/* The ring holds exactly the capacity asked for, not the rounded slot count. */
static void test_capacity_limits(void)
{
    size_t caps[] = {1, 2, 3, 5, 7, 8, 9, 100, 1000, 1024, 1025};
    for (size_t k = 0; k < sizeof caps / sizeof *caps; k++) {
        size_t cap = caps[k];
        pf_ring *r = fifo_make(cap, sizeof(uint64_t));
        REQUIRE(r);
        CHECK_EQ_INT(pf_ring_capacity(r), cap);
        for (int lap = 0; lap < 3; lap++) { /* three laps: the indices wrap the slots */
            uint64_t v;
            for (size_t i = 0; i < cap; i++) {
                v = lap * 100000 + i;
                CHECK_OK(pf_ring_push(r, &v, 0));
            }
            CHECK_EQ_INT(pf_ring_size(r), cap);
            v = 12345;
            CHECK_EQ_INT(pf_ring_push(r, &v, 0), PF_AGAIN);
            int64_t t0 = pf_time_ns();
            CHECK_EQ_INT(pf_ring_push(r, &v, 2000), PF_TIMEOUT);
            CHECK(pf_time_ns() - t0 >= 2000000);
            CHECK_EQ_INT(pf_ring_size(r), cap);
            for (size_t i = 0; i < cap; i++) {
                CHECK_OK(pf_ring_pop(r, &v, 0));
                CHECK_EQ_INT(v, lap * 100000 + i);
            }
            CHECK_EQ_INT(pf_ring_size(r), 0);
            CHECK_EQ_INT(pf_ring_pop(r, &v, 0), PF_AGAIN);
        }
        pf_ring_destroy(&r);
    }
}

/* Random single-threaded ops against an array model, odd item size. */
static void test_model(void) { fifo_check_model(20, 19, 3000); }

static void test_timeouts(void) { fifo_check_timeouts(); }

/* The other thread acts after a delay; a long timed or blocking wait returns
 * PF_OK early; close wakes both sides. */
static void test_wakeups(void) { fifo_check_wakeups(); }

static void test_close_drain(void) { fifo_check_close_drain(5, 4); }

/* Producer/consumer stress -------------------------------------------------------- */

typedef struct seq_item {
    uint64_t seq;
    uint64_t check; /* function of seq: catches torn or stale slot copies */
} seq_item;

static uint64_t seq_check(uint64_t s) { return ~s * 0x9E3779B97F4A7C15ull; }

typedef struct sp_ctx {
    pf_ring *r;
    uint64_t n;
    int mode; /* 0 blocking, 1 timed (short), 2 polling, 3 random mix */
    uint64_t seed;
    int slow; /* occasionally pause, so the other side sleeps */
    long again, timeouts;
    pf_status last;
} sp_ctx;

static int64_t pick_timeout(sp_ctx *c, uint64_t *s)
{
    int m = c->mode;
    if (m == 3) {
        fifo_lcg(s);
        m = (int)((*s >> 61) % 3);
    }
    return m == 0 ? PF_WAIT_FOREVER : m == 1 ? 200 : 0;
}

static void maybe_pause(sp_ctx *c, uint64_t i)
{
    if (c->slow && (i % 4096) == 0) sleep_us(200);
}

static void *sp_producer(void *arg)
{
    sp_ctx *c = arg;
    uint64_t s = c->seed;
    for (uint64_t i = 0; i < c->n; i++) {
        seq_item it = {.seq = i, .check = seq_check(i)};
        pf_status st;
        int tries = 0;
        for (;;) {
            st = pf_ring_push(c->r, &it, pick_timeout(c, &s));
            if (st == PF_AGAIN) {
                c->again++;
                poll_backoff(&tries);
            } else if (st == PF_TIMEOUT) {
                c->timeouts++;
            } else {
                break;
            }
        }
        if (st != PF_OK) {
            c->last = st;
            return NULL;
        }
        maybe_pause(c, i);
    }
    pf_ring_close(c->r);
    c->last = PF_OK;
    return NULL;
}

typedef struct sp_result {
    uint64_t count, order_errors, check_errors;
    size_t max_size;
    pf_status last;
} sp_result;

static sp_result sp_consume(sp_ctx *c)
{
    sp_result res = {0};
    uint64_t s = c->seed ^ 0xABCDEFull;
    seq_item it;
    pf_status st;
    int tries = 0;
    for (uint64_t i = 0;; i++) {
        st = pf_ring_pop(c->r, &it, pick_timeout(c, &s));
        if (st == PF_AGAIN) {
            c->again++;
            poll_backoff(&tries);
            continue;
        }
        tries = 0;
        if (st == PF_TIMEOUT) {
            c->timeouts++;
            continue;
        }
        if (st != PF_OK) break;
        if (it.seq != res.count) res.order_errors++;
        if (it.check != seq_check(it.seq)) res.check_errors++;
        res.count++;
        if ((res.count & 63) == 0) {
            size_t sz = pf_ring_size(c->r);
            if (sz > res.max_size) res.max_size = sz;
        }
        maybe_pause(c, i);
    }
    res.last = st;
    return res;
}

static void run_spsc(size_t cap, uint64_t n, int mode, int slow_producer, int slow_consumer,
                     const char *label)
{
    pf_ring *r = fifo_make(cap, sizeof(seq_item));
    REQUIRE(r);
    sp_ctx pc = {.r = r, .n = n, .mode = mode, .seed = pf_test_rand(), .slow = slow_producer};
    sp_ctx cc = {.r = r, .n = n, .mode = mode, .seed = pf_test_rand(), .slow = slow_consumer};
    pf_thread th;
    int64_t t0 = pf_time_ns();
    CHECK_OK(pf_thread_start(&th, "producer", sp_producer, &pc));
    sp_result res = sp_consume(&cc);
    pf_thread_join(th);
    double dt = (double)(pf_time_ns() - t0) / 1e9;
    CHECK_OK(pc.last);
    CHECK_EQ_INT(res.last, PF_EOF);
    CHECK_EQ_INT(res.count, n);
    CHECK_EQ_INT(res.order_errors, 0);
    CHECK_EQ_INT(res.check_errors, 0);
    CHECK(res.max_size <= cap);
    printf("  %-28s cap %5zu: %8llu items in %.2f s (%6.2f M items/s; again %ld/%ld, "
           "timeouts %ld/%ld)\n",
           label, cap, (unsigned long long)n, dt, (double)n / dt / 1e6, pc.again, cc.again,
           pc.timeouts, cc.timeouts);
    pf_ring_destroy(&r);
}

static void test_spsc_5m(void)
{
    run_spsc(1000, 5000000, 0, 0, 0, "blocking");
}

static void spsc_modes(uint64_t scale)
{
    run_spsc(3, 300000 / scale, 0, 0, 0, "blocking");
    run_spsc(1, 100000 / scale, 0, 0, 0, "blocking");
    run_spsc(64, 500000 / scale, 1, 0, 0, "timed 200us");
    run_spsc(5, 200000 / scale, 2, 0, 0, "polling");
    run_spsc(7, 500000 / scale, 3, 0, 0, "mixed");
    run_spsc(256, 500000 / scale, 3, 1, 0, "mixed, slow producer");
    run_spsc(256, 500000 / scale, 3, 0, 1, "mixed, slow consumer");
    run_spsc(1, 100000 / scale, 3, 0, 0, "mixed");
}

static void test_spsc_modes(void) { spsc_modes(1); }

/* Every wait sleeps at once: the mutex/condvar path carries the run. */
static void test_spsc_modes_no_spin(void)
{
    ring_spin_ns = 0;
    spsc_modes(10);
    run_spsc(1000, 500000, 0, 0, 0, "blocking");
    ring_spin_ns = -1;
}

/* Lost-wakeup hunt: short bursts separated by short sleeps on both sides, so
 * each side keeps finding the ring empty/full and going to sleep just as the
 * other one publishes. A lost wakeup hangs a blocking side; the timed side
 * would then see a long stall, which we bound. */
typedef struct burst_ctx {
    pf_ring *r;
    uint64_t n, seed;
    int64_t timeout; /* PF_WAIT_FOREVER, or a timed wait retried on PF_TIMEOUT */
    int64_t max_stall_ns;
    pf_status last;
} burst_ctx;

static void *burst_producer(void *arg)
{
    burst_ctx *c = arg;
    uint64_t s = c->seed;
    for (uint64_t i = 0; i < c->n;) {
        fifo_lcg(&s);
        int burst = 1 + (int)((s >> 40) % 8);
        for (int k = 0; k < burst && i < c->n; k++, i++) {
            seq_item it = {.seq = i, .check = seq_check(i)};
            pf_status st;
            while ((st = pf_ring_push(c->r, &it, c->timeout)) == PF_TIMEOUT) {}
            if (st != PF_OK) {
                c->last = st;
                return NULL;
            }
        }
        if ((s >> 20) & 1) sleep_us((int64_t)((s >> 50) % 30));
    }
    pf_ring_close(c->r);
    c->last = PF_OK;
    return NULL;
}

static void test_sleep_wake_bursts(void)
{
    int64_t timeouts[] = {PF_WAIT_FOREVER, 3000, PF_WAIT_FOREVER, 3000};
    for (int t = 0; t < 4; t++) {
        ring_spin_ns = t < 2 ? 0 : -1;
        pf_ring *r = fifo_make(4, sizeof(seq_item));
        REQUIRE(r);
        burst_ctx pc = {.r = r, .n = 10000, .seed = pf_test_rand(), .timeout = timeouts[t]};
        pf_thread th;
        CHECK_OK(pf_thread_start(&th, "bursts", burst_producer, &pc));
        uint64_t s = pf_test_rand(), count = 0, order_errors = 0;
        pf_status st;
        seq_item it;
        for (;;) {
            fifo_lcg(&s);
            st = pf_ring_pop(r, &it, timeouts[t]);
            if (st == PF_TIMEOUT) continue;
            if (st != PF_OK) break;
            if (it.seq != count || it.check != seq_check(it.seq)) order_errors++;
            count++;
            if (((s >> 33) % 6) == 0) sleep_us((int64_t)((s >> 50) % 30));
        }
        pf_thread_join(th);
        CHECK_OK(pc.last);
        CHECK_EQ_INT(st, PF_EOF);
        CHECK_EQ_INT(count, pc.n);
        CHECK_EQ_INT(order_errors, 0);
        pf_ring_destroy(&r);
    }
    ring_spin_ns = -1;
}

int main(void)
{
    pf_test_seed(0x5150);
    PF_RUN(test_invalid);
    PF_RUN(test_capacity_limits);
    PF_RUN(test_model);
    PF_RUN(test_timeouts);
    PF_RUN(test_wakeups);
    PF_RUN(test_close_drain);
    PF_RUN(test_spsc_5m);
    PF_RUN(test_spsc_modes);
    PF_RUN(test_spsc_modes_no_spin);
    PF_RUN(test_sleep_wake_bursts);
    return pf_test_finish();
}
