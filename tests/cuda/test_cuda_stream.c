/* CUDA streams and events: cross-stream ordering through events, queries
 * while busy, event timing, host callbacks, priorities, cross-backend waits.
 * Exits 77 (skipped) without a usable GPU.
 *
 * "Busy" is made deterministic with a host callback that spins until the
 * test opens a gate, so no check depends on how fast the GPU is. */
#include <stdatomic.h>

#include "cuda_test_util.h"

#include "core/sys.h"
#include "device/backend.h"

static pf_device *dev;

static pf_event *new_event(pf_device *d)
{
    pf_event *e = NULL;
    CHECK_OK(pf_event_create(d, &e));
    return e;
}

/* A gate a host callback spins on (bounded: 20 s, so a broken test cannot
 * hang the runner forever). */
typedef struct gate {
    atomic_int open;
    atomic_int entered;
    atomic_int timed_out;
} gate;

static void gate_fn(void *user)
{
    gate *g = user;
    atomic_store(&g->entered, 1);
    int64_t deadline = pf_time_ns() + 20 * (int64_t)1000000000;
    while (!atomic_load(&g->open)) {
        if (pf_time_ns() > deadline) {
            atomic_store(&g->timed_out, 1);
            return;
        }
    }
}

static void test_stream_basics(void)
{
    pf_stream *s = make_stream(dev, 0);
    REQUIRE(s != NULL);
    CHECK(pf_stream_device(s) == dev);
    cudaStream_t cs = (cudaStream_t)pf_stream_native(s);
    CHECK(cs != NULL);
    unsigned flags = 0;
    CHECK(cudaStreamGetFlags(cs, &flags) == cudaSuccess);
    CHECK(flags & cudaStreamNonBlocking);
    CHECK_OK(pf_stream_query(s)); /* nothing issued: idle */
    CHECK_OK(pf_stream_synchronize(s));
    pf_stream_destroy(&s);
    CHECK(s == NULL);
    pf_stream_destroy(&s);
}

static void test_priority_clamped(void)
{
    int least = 0, greatest = 0;
    CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest) == cudaSuccess);
    int asks[] = {0, -1, 1, -1000, 1000, greatest, least};
    for (size_t i = 0; i < sizeof asks / sizeof asks[0]; i++) {
        pf_stream *s = make_stream(dev, asks[i]);
        REQUIRE(s != NULL);
        int want = asks[i] < greatest ? greatest : asks[i] > least ? least : asks[i];
        int got = 12345;
        CHECK(cudaStreamGetPriority((cudaStream_t)pf_stream_native(s), &got) == cudaSuccess);
        CHECK_EQ_INT(got, want);
        /* And the stream works. */
        void *d = dmalloc(4096);
        unsigned char h[4096];
        CHECK_OK(pf_memset_async(s, d, 0x3c, sizeof h));
        CHECK_OK(pf_memcpy_async(s, h, d, sizeof h));
        CHECK_OK(pf_stream_synchronize(s));
        CHECK(first_not(h, 0x3c, sizeof h) == NOWHERE);
        cudaFree(d);
        pf_stream_destroy(&s);
    }
}

/* Stream B waits for an event recorded on A after a long chain of writes:
 * B's copy must see all of A's writes. */
static void test_event_orders_streams(void)
{
    pf_test_seed(0x0bde5u);
    pf_stream *a = make_stream(dev, 0), *b = make_stream(dev, 0);
    REQUIRE(a && b);
    pf_event *e = new_event(dev);
    REQUIRE(e != NULL);
    const size_t busy_n = 256 * MiB, max_n = 96 * MiB;
    unsigned char *busy = dmalloc(busy_n);
    unsigned char *x = dmalloc(max_n);
    unsigned char *src = hmalloc_pinned(max_n), *out = hmalloc_pinned(max_n);
    unsigned char *expect = malloc(max_n);
    REQUIRE(expect != NULL);
    gate g = {0};

    for (int round = 0; round < 12; round++) {
        size_t n = round == 0 ? 1 : round == 1 ? 7 : (size_t)pf_test_rand_range(1, (int64_t)max_n);
        for (size_t i = 0; i < n; i++) src[i] = (unsigned char)pf_test_rand();
        size_t half = n / 2, quarter = n / 4;
        /* Stale contents B would see without the wait. */
        CHECK(cudaMemset(x, 0x11, n) == cudaSuccess);
        CHECK(cudaDeviceSynchronize() == cudaSuccess);

        /* On A: hold the stream (gate on odd rounds, big memsets on even
         * rounds), then the writes B must see. */
        if (round & 1) {
            atomic_store(&g.open, 0);
            CHECK_OK(pf_stream_launch_host(a, gate_fn, &g));
        } else {
            for (int k = 0; k < 8; k++) CHECK_OK(pf_memset_async(a, busy, k, busy_n));
        }
        CHECK_OK(pf_memset_async(a, x, 0xab, n));
        CHECK_OK(pf_memcpy_async(a, x, src, half));
        CHECK_OK(pf_memset_async(a, x + half, 0x5c, quarter));
        CHECK_OK(pf_event_record(e, a));

        CHECK_OK(pf_stream_wait_event(b, e));
        CHECK_OK(pf_memcpy_async(b, out, x, n));
        if (round & 1) {
            /* B cannot have finished: A is held by the gate. */
            CHECK_EQ_INT(pf_stream_query(b), PF_AGAIN);
            atomic_store(&g.open, 1);
        }
        CHECK_OK(pf_stream_synchronize(b));

        memset(expect, 0xab, n);
        memcpy(expect, src, half);
        memset(expect + half, 0x5c, quarter);
        size_t bad = first_mismatch(out, expect, n);
        if (bad != NOWHERE)
            fprintf(stderr, "  round %d n=%zu: byte %zu is 0x%02x, expected 0x%02x\n", round, n,
                    bad, out[bad], expect[bad]);
        CHECK(bad == NOWHERE);
        CHECK_OK(pf_stream_synchronize(a));
    }
    CHECK(!atomic_load(&g.timed_out));
    free(expect);
    cudaFreeHost(src);
    cudaFreeHost(out);
    cudaFree(x);
    cudaFree(busy);
    pf_event_destroy(&e);
    CHECK(e == NULL);
    pf_stream_destroy(&a);
    pf_stream_destroy(&b);
}

static void test_query_while_busy(void)
{
    pf_stream *s = make_stream(dev, 0);
    REQUIRE(s != NULL);
    pf_event *e = new_event(dev), *never = new_event(dev);
    REQUIRE(e && never);
    gate g = {0};
    void *d = dmalloc(MiB);

    CHECK_OK(pf_event_query(never)); /* never recorded: complete */
    CHECK_OK(pf_event_synchronize(never));

    CHECK_OK(pf_stream_launch_host(s, gate_fn, &g));
    CHECK_OK(pf_memset_async(s, d, 1, MiB));
    CHECK_OK(pf_event_record(e, s));
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(pf_stream_query(s), PF_AGAIN);
        CHECK_EQ_INT(pf_event_query(e), PF_AGAIN);
    }
    /* PF_AGAIN is not an error: nothing left behind in the runtime. */
    CHECK(cudaGetLastError() == cudaSuccess);
    atomic_store(&g.open, 1);
    CHECK_OK(pf_event_synchronize(e));
    CHECK_OK(pf_event_query(e));
    CHECK_OK(pf_stream_synchronize(s));
    CHECK_OK(pf_stream_query(s));
    CHECK(atomic_load(&g.entered) && !atomic_load(&g.timed_out));
    cudaFree(d);
    pf_event_destroy(&e);
    pf_event_destroy(&never);
    pf_stream_destroy(&s);
}

static void test_event_timing(void)
{
    pf_stream *s = make_stream(dev, 0);
    REQUIRE(s != NULL);
    pf_event *e0 = new_event(dev), *e1 = new_event(dev), *e2 = new_event(dev);
    REQUIRE(e0 && e1 && e2);
    const size_t n = 256 * MiB;
    void *p = dmalloc(n), *q = dmalloc(n);
    CHECK_OK(pf_memset_async(s, p, 7, n));
    CHECK_OK(pf_memcpy_async(s, q, p, n)); /* warm-up */

    for (int round = 0; round < 3; round++) {
        CHECK_OK(pf_event_record(e0, s));
        CHECK_OK(pf_memcpy_async(s, q, p, n));
        CHECK_OK(pf_event_record(e1, s));
        CHECK_OK(pf_memcpy_async(s, q, p, n));
        CHECK_OK(pf_memcpy_async(s, p, q, n));
        CHECK_OK(pf_event_record(e2, s));
        CHECK_OK(pf_event_synchronize(e2));
        float t01 = -1, t12 = -1, t02 = -1;
        CHECK_OK(pf_event_elapsed_ms(e0, e1, &t01));
        CHECK_OK(pf_event_elapsed_ms(e1, e2, &t12));
        CHECK_OK(pf_event_elapsed_ms(e0, e2, &t02));
        printf("  256 MiB D2D copy: %.3f ms (%.0f GB/s), two copies %.3f ms\n", t01,
               (double)n / (t01 * 1e-3) / 1e9, t12);
        CHECK(t01 > 0.0f && t12 > 0.0f);
        CHECK(t02 >= t01 && t02 >= t12);
        CHECK(fabs((double)t02 - (double)(t01 + t12)) <= 0.01 * t02 + 0.01);
        CHECK(t12 > t01);              /* twice the bytes take longer */
        CHECK((double)n / (t01 * 1e-3) < 20e12); /* no faster than physics */
    }

    /* Elapsed time of an event not yet complete: PF_AGAIN, not garbage. */
    gate g = {0};
    CHECK_OK(pf_event_record(e0, s));
    CHECK_OK(pf_stream_launch_host(s, gate_fn, &g));
    CHECK_OK(pf_event_record(e1, s));
    float ms = -1;
    pf_status st = pf_event_elapsed_ms(e0, e1, &ms);
    CHECK_EQ_INT(st, PF_AGAIN);
    CHECK(cudaGetLastError() == cudaSuccess);
    atomic_store(&g.open, 1);
    CHECK_OK(pf_event_synchronize(e1));
    CHECK_OK(pf_event_elapsed_ms(e0, e1, &ms));
    CHECK(ms >= 0.0f);

    /* Never recorded: refused by the wrapper with a message. */
    pf_event *fresh = new_event(dev);
    CHECK_EQ_INT(pf_event_elapsed_ms(fresh, e1, &ms), PF_ERR_INVALID);
    pf_event_destroy(&fresh);

    cudaFree(p);
    cudaFree(q);
    pf_event_destroy(&e0);
    pf_event_destroy(&e1);
    pf_event_destroy(&e2);
    pf_stream_destroy(&s);
}

/* Host callback: runs after the work before it and before the work after. */
typedef struct host_check {
    const unsigned char *seen;   /* written by earlier device work */
    size_t n;
    unsigned char expect;
    unsigned char *publish;      /* read by later device work */
    unsigned char value;
    int ran;
    size_t bad_at;
} host_check;

static void host_check_fn(void *user)
{
    host_check *h = user;
    h->ran++;
    h->bad_at = first_not(h->seen, h->expect, h->n);
    memset(h->publish, h->value, h->n);
}

typedef struct seq_log {
    int order[16];
    atomic_int count;
} seq_log;

typedef struct seq_item {
    seq_log *log;
    int id;
} seq_item;

static void seq_fn(void *user)
{
    seq_item *it = user;
    int k = atomic_fetch_add(&it->log->count, 1);
    if (k < 16) it->log->order[k] = it->id;
}

static void test_launch_host_ordering(void)
{
    pf_test_seed(0x4057u);
    pf_stream *s = make_stream(dev, 0);
    REQUIRE(s != NULL);
    const size_t max_n = 64 * MiB;
    unsigned char *x = dmalloc(max_n), *x2 = dmalloc(max_n);
    unsigned char *h = hmalloc_pinned(max_n), *h2 = hmalloc_pinned(max_n),
                  *h3 = hmalloc_pinned(max_n);
    for (int round = 0; round < 6; round++) {
        size_t n = round == 0 ? max_n : (size_t)pf_test_rand_range(1, (int64_t)max_n);
        unsigned char v = (unsigned char)(0x40 + round), w = (unsigned char)(0x70 + round);
        memset(h, 0, n);
        memset(h2, 0, n);
        memset(h3, 0, n);
        host_check hc = {.seen = h, .n = n, .expect = v, .publish = h2, .value = w};
        CHECK_OK(pf_memset_async(s, x, v, n));
        CHECK_OK(pf_memcpy_async(s, h, x, n));
        CHECK_OK(pf_stream_launch_host(s, host_check_fn, &hc));
        CHECK_OK(pf_memcpy_async(s, x2, h2, n));
        CHECK_OK(pf_memcpy_async(s, h3, x2, n));
        CHECK_OK(pf_stream_synchronize(s));
        CHECK_EQ_INT(hc.ran, 1);
        CHECK(hc.bad_at == NOWHERE);           /* earlier work was complete */
        CHECK(first_not(h3, w, n) == NOWHERE); /* later work saw fn's writes */
    }

    /* Several callbacks between device work run in issue order. */
    seq_log log;
    memset(&log, 0, sizeof log);
    seq_item items[10];
    for (int i = 0; i < 10; i++) {
        items[i].log = &log;
        items[i].id = i;
        CHECK_OK(pf_memset_async(s, x, i, 8 * MiB));
        CHECK_OK(pf_stream_launch_host(s, seq_fn, &items[i]));
    }
    CHECK_OK(pf_stream_synchronize(s));
    CHECK_EQ_INT(atomic_load(&log.count), 10);
    for (int i = 0; i < 10; i++) CHECK_EQ_INT(log.order[i], i);

    CHECK_EQ_INT(pf_stream_launch_host(s, NULL, NULL), PF_ERR_INVALID);
    cudaFree(x);
    cudaFree(x2);
    cudaFreeHost(h);
    cudaFreeHost(h2);
    cudaFreeHost(h3);
    pf_stream_destroy(&s);
}

/* Cross-backend waits: a CUDA stream waiting on a CPU event returns at once;
 * a CPU stream waiting on a CUDA event blocks until it completes. */
static void *open_later(void *arg)
{
    gate *g = arg;
    int64_t until = pf_time_ns() + 50 * 1000000;
    while (pf_time_ns() < until) {
    }
    atomic_store(&g->open, 1);
    return NULL;
}

static void test_cross_backend_wait(void)
{
    pf_stream *gs = make_stream(dev, 0), *cs = NULL;
    CHECK_OK(pf_stream_create(NULL, &cs));
    REQUIRE(gs && cs);
    pf_event *ce = new_event(NULL), *ge = new_event(dev);
    REQUIRE(ce && ge);
    CHECK_OK(pf_event_record(ce, cs));
    CHECK_OK(pf_stream_wait_event(gs, ce));
    CHECK_EQ_INT(pf_event_record(ce, gs), PF_ERR_INVALID); /* event of another device */

    gate g = {0};
    CHECK_OK(pf_stream_launch_host(gs, gate_fn, &g));
    CHECK_OK(pf_event_record(ge, gs));
    pf_thread t;
    CHECK_OK(pf_thread_start(&t, "opener", open_later, &g));
    int64_t t0 = pf_time_ns();
    CHECK_OK(pf_stream_wait_event(cs, ge)); /* blocks until the gate opens */
    int64_t waited = pf_time_ns() - t0;
    pf_thread_join(t);
    CHECK_OK(pf_event_query(ge));
    CHECK(waited >= 40 * 1000000);
    CHECK(!atomic_load(&g.timed_out));
    pf_event_destroy(&ce);
    pf_event_destroy(&ge);
    pf_stream_destroy(&gs);
    pf_stream_destroy(&cs);
}

/* Destroying a stream waits for its work. */
static void test_destroy_waits(void)
{
    pf_stream *s = make_stream(dev, 0);
    REQUIRE(s != NULL);
    const size_t n = 32 * MiB;
    unsigned char *x = dmalloc(n), *h = hmalloc_pinned(n);
    memset(h, 0, n);
    gate g = {0};
    CHECK_OK(pf_stream_launch_host(s, gate_fn, &g));
    CHECK_OK(pf_memset_async(s, x, 0x99, n));
    CHECK_OK(pf_memcpy_async(s, h, x, n));
    pf_thread t;
    CHECK_OK(pf_thread_start(&t, "opener", open_later, &g));
    pf_stream_destroy(&s);
    pf_thread_join(t);
    CHECK(first_not(h, 0x99, n) == NOWHERE);
    cudaFree(x);
    cudaFreeHost(h);
}

int main(void)
{
    dev = pf_test_cuda_device_or_skip();
    PF_RUN(test_stream_basics);
    PF_RUN(test_priority_clamped);
    PF_RUN(test_event_orders_streams);
    PF_RUN(test_query_while_busy);
    PF_RUN(test_event_timing);
    PF_RUN(test_launch_host_ordering);
    PF_RUN(test_cross_backend_wait);
    PF_RUN(test_destroy_waits);
    return pf_test_finish();
}
