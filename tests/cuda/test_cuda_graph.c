/* pf_graph_cache on a CUDA stream: capture on the first run, replay after,
 * with new input contents at the same addresses verified after every run;
 * fallback to direct execution when the work does something capture
 * forbids; work errors; LRU eviction. Exits 77 (skipped) without a GPU. */
#include "cuda_test_util.h"

#include "core/error.h"

static pf_device *dev;
static pf_stream *s;

/* Buffers fixed for the whole test: graphs bake in addresses. */
typedef struct bufs {
    size_t n;                      /* multiple of 4 */
    unsigned char *in, *out1, *out2, *out3;   /* device */
    unsigned char *hin, *hout1, *hout2, *hout3; /* pinned */
    unsigned char *expect;         /* pageable scratch */
} bufs;

static bufs B;

typedef struct work_ctx {
    int calls;
    int host_calls;     /* host-node executions */
    int value;          /* memset value for keyed works */
    int sync_mode;      /* 1: raw cudaStreamSynchronize, 2: pf_stream_synchronize */
    int fail;           /* return an error after issuing work */
} work_ctx;

static int capturing(void)
{
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing((cudaStream_t)pf_stream_native(s), &cs) != cudaSuccess) return -1;
    return cs != cudaStreamCaptureStatusNone;
}

/* New random input, uploaded outside any graph. */
static void new_input(void)
{
    fill_random(B.hin, B.n);
    CHECK_OK(pf_memcpy_async(s, B.in, B.hin, B.n));
}

static void host_count(void *user) { ((work_ctx *)user)->host_calls++; }

#define TRY(expr) \
    do { \
        pf_status st_ = (expr); \
        if (st_ != PF_OK) return st_; \
    } while (0)

/* A mix of device copies, memsets, a 2D copy, a D2H copy into pinned memory
 * and a host node. */
static pf_status work_mix(void *user, pf_stream *st)
{
    work_ctx *w = user;
    w->calls++;
    size_t n = B.n, q = n / 4, wdt = n / 8;
    TRY(pf_memcpy_async(st, B.out1, B.in, n));
    TRY(pf_memset_async(st, B.out2, 0x5a, n));
    TRY(pf_memcpy_async(st, B.out2 + 1, B.in + n / 2, n / 2 - 1));
    TRY(pf_memset_async(st, B.out3, 0, n));
    TRY(pf_memcpy2d_async(st, B.out3, wdt, B.in, q, wdt, 4));
    TRY(pf_memcpy_async(st, B.hout3, B.out3, n)); /* D2H inside the graph */
    TRY(pf_stream_launch_host(st, host_count, w));
    return PF_OK;
}

static void expect_mix(void)
{
    size_t n = B.n, q = n / 4, wdt = n / 8;
    REQUIRE(n >= 8); /* also tells the compiler n / 2 - 1 cannot wrap */
    CHECK_OK(pf_memcpy_async(s, B.hout1, B.out1, n));
    CHECK_OK(pf_memcpy_async(s, B.hout2, B.out2, n));
    CHECK_OK(pf_stream_synchronize(s));
    CHECK(first_mismatch(B.hout1, B.hin, n) == NOWHERE);
    memset(B.expect, 0x5a, n);
    memcpy(B.expect + 1, B.hin + n / 2, n / 2 - 1);
    size_t bad = first_mismatch(B.hout2, B.expect, n);
    if (bad != NOWHERE) fprintf(stderr, "  out2 differs at byte %zu\n", bad);
    CHECK(bad == NOWHERE);
    memset(B.expect, 0, n);
    for (size_t r = 0; r < 4; r++) memcpy(B.expect + r * wdt, B.hin + r * q, wdt);
    CHECK(first_mismatch(B.hout3, B.expect, n) == NOWHERE);
}

static void test_capture_and_replay(void)
{
    pf_test_seed(0x9a9au);
    pf_graph_cache *gc = NULL;
    CHECK_OK(pf_graph_cache_create(NULL, &gc));
    REQUIRE(gc != NULL);
    work_ctx w = {0};
    const char key[] = "mix:n=3MiB+16";
    for (int it = 0; it < 12; it++) {
        new_input();
        memset(B.hout3, 0, B.n);
        CHECK_OK(pf_graph_cache_run(gc, s, key, sizeof key - 1, work_mix, &w));
        CHECK_EQ_INT(capturing(), 0);
        expect_mix();
        CHECK_EQ_INT(w.host_calls, it + 1); /* the host node runs on every replay */
    }
    CHECK_EQ_INT(w.calls, 1);
    pf_graph_cache_stats st = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(st.captures, 1);
    CHECK_EQ_INT(st.replays, 11);
    CHECK_EQ_INT(st.direct_runs, 0);
    CHECK_EQ_INT(st.capture_failures, 0);
    CHECK_EQ_INT(st.entries, 1);
    CHECK(cudaGetLastError() == cudaSuccess);
    pf_graph_cache_destroy(&gc);
}

/* Keyed works: fill out1 with the key's value, copy in -> out2. */
static pf_status work_fill(void *user, pf_stream *st)
{
    work_ctx *w = user;
    w->calls++;
    TRY(pf_memset_async(st, B.out1, w->value, B.n));
    TRY(pf_memcpy_async(st, B.out2, B.in, B.n));
    if (w->fail) return pf_set_error(PF_ERR_INVALID, "work refused on purpose (fail=%d)", w->fail);
    return PF_OK;
}

static void expect_fill(int value)
{
    CHECK_OK(pf_memcpy_async(s, B.hout1, B.out1, B.n));
    CHECK_OK(pf_memcpy_async(s, B.hout2, B.out2, B.n));
    CHECK_OK(pf_stream_synchronize(s));
    CHECK(first_not(B.hout1, (unsigned char)value, B.n) == NOWHERE);
    CHECK(first_mismatch(B.hout2, B.hin, B.n) == NOWHERE);
}

static void test_keys_alternate(void)
{
    pf_test_seed(0x4b4bu);
    pf_graph_cache *gc = NULL;
    CHECK_OK(pf_graph_cache_create(NULL, &gc));
    REQUIRE(gc != NULL);
    work_ctx wa = {.value = 0x21}, wb = {.value = 0x42};
    for (int it = 0; it < 10; it++) {
        work_ctx *w = (it % 3 == 1) ? &wb : &wa;
        const char *key = w == &wa ? "A" : "B";
        new_input();
        CHECK_OK(pf_graph_cache_run(gc, s, key, 1, work_fill, w));
        expect_fill(w->value);
    }
    CHECK_EQ_INT(wa.calls, 1);
    CHECK_EQ_INT(wb.calls, 1);
    pf_graph_cache_stats st = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(st.captures, 2);
    CHECK_EQ_INT(st.replays, 8);
    CHECK_EQ_INT(st.entries, 2);
    pf_graph_cache_destroy(&gc);
}

/* Synchronizes the capturing stream: capture is invalidated, the cache runs
 * the work directly and remembers the key. */
static pf_status work_sync(void *user, pf_stream *st)
{
    work_ctx *w = user;
    w->calls++;
    TRY(pf_memcpy_async(st, B.out2, B.in, B.n));
    if (w->sync_mode == 1) {
        (void)cudaStreamSynchronize((cudaStream_t)pf_stream_native(st)); /* ignored */
    } else {
        TRY(pf_stream_synchronize(st)); /* refused during capture: error returned */
    }
    TRY(pf_memset_async(st, B.out1, w->value, B.n));
    return PF_OK;
}

static void test_uncapturable_fallback(void)
{
    pf_test_seed(0xfa11u);
    for (int mode = 1; mode <= 2; mode++) {
        pf_graph_cache *gc = NULL;
        CHECK_OK(pf_graph_cache_create(NULL, &gc));
        REQUIRE(gc != NULL);
        work_ctx w = {.value = 0x30 + mode, .sync_mode = mode};
        new_input();
        CHECK_OK(pf_graph_cache_run(gc, s, "sync", 4, work_sync, &w));
        CHECK_EQ_INT(capturing(), 0);
        CHECK_EQ_INT(w.calls, 2); /* failed capture + direct run */
        expect_fill(w.value);
        pf_graph_cache_stats st = pf_test_graph_cache_stats(gc);
        CHECK_EQ_INT(st.capture_failures, 1);
        CHECK_EQ_INT(st.direct_runs, 1);
        CHECK_EQ_INT(st.captures, 0);
        CHECK_EQ_INT(st.entries, 1);
        CHECK(cudaGetLastError() == cudaSuccess); /* the capture error was consumed */

        for (int it = 0; it < 4; it++) {
            new_input();
            w.value++;
            CHECK_OK(pf_graph_cache_run(gc, s, "sync", 4, work_sync, &w));
            expect_fill(w.value); /* direct: the new value is used */
        }
        CHECK_EQ_INT(w.calls, 6);
        st = pf_test_graph_cache_stats(gc);
        CHECK_EQ_INT(st.capture_failures, 1);
        CHECK_EQ_INT(st.direct_runs, 5);
        CHECK_EQ_INT(st.replays, 0);

        /* The stream still captures other work. */
        work_ctx ok = {.value = 0x11};
        new_input();
        CHECK_OK(pf_graph_cache_run(gc, s, "ok", 2, work_fill, &ok));
        expect_fill(0x11);
        CHECK_EQ_INT(pf_test_graph_cache_stats(gc).captures, 1);
        pf_graph_cache_destroy(&gc);
    }
}

static void test_work_error(void)
{
    pf_graph_cache *gc = NULL;
    CHECK_OK(pf_graph_cache_create(NULL, &gc));
    REQUIRE(gc != NULL);
    CHECK_OK(pf_memset_async(s, B.out1, 0xe1, B.n));
    CHECK_OK(pf_stream_synchronize(s));
    work_ctx w = {.value = 0x77, .fail = 1};
    CHECK_EQ_INT(pf_graph_cache_run(gc, s, "err", 3, work_fill, &w), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "refused on purpose") != NULL);
    CHECK_EQ_INT(w.calls, 1);
    CHECK_EQ_INT(capturing(), 0);
    CHECK_EQ_INT(pf_test_graph_cache_stats(gc).entries, 0);
    /* The captured memset never ran. */
    CHECK_OK(pf_memcpy_async(s, B.hout1, B.out1, B.n));
    CHECK_OK(pf_stream_synchronize(s));
    CHECK(first_not(B.hout1, 0xe1, B.n) == NOWHERE);
    /* And the key works once the work does. */
    w.fail = 0;
    new_input();
    CHECK_OK(pf_graph_cache_run(gc, s, "err", 3, work_fill, &w));
    expect_fill(0x77);
    CHECK_EQ_INT(pf_test_graph_cache_stats(gc).captures, 1);
    pf_graph_cache_destroy(&gc);
}

static void test_lru_two_entries(void)
{
    pf_test_seed(0x1e0u);
    pf_graph_cache_params p = pf_graph_cache_params_default();
    p.max_entries = 2;
    pf_graph_cache *gc = NULL;
    CHECK_OK(pf_graph_cache_create(&p, &gc));
    REQUIRE(gc != NULL);
    work_ctx w[3] = {{.value = 1}, {.value = 2}, {.value = 3}};
    const char *keys[3] = {"k1", "k2", "k3"};
    /* k1 k2 k1 k3(evicts k2) k1(hit) k2(recapture, evicts k3) k3(recapture, evicts k1) */
    static const int seq[] = {0, 1, 0, 2, 0, 1, 2};
    static const int want_calls[][3] = {{1, 0, 0}, {1, 1, 0}, {1, 1, 0}, {1, 1, 1},
                                        {1, 1, 1}, {1, 2, 1}, {1, 2, 2}};
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
        int k = seq[i];
        new_input();
        CHECK_OK(pf_graph_cache_run(gc, s, keys[k], 2, work_fill, &w[k]));
        expect_fill(w[k].value);
        for (int j = 0; j < 3; j++) CHECK_EQ_INT(w[j].calls, want_calls[i][j]);
    }
    pf_graph_cache_stats st = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(st.captures, 5);
    CHECK_EQ_INT(st.replays, 2);
    CHECK_EQ_INT(st.evictions, 3);
    CHECK_EQ_INT(st.entries, 2);
    pf_graph_cache_destroy(&gc);
    CHECK(cudaGetLastError() == cudaSuccess);
}

int main(void)
{
    dev = pf_test_cuda_device_or_skip();
    s = make_stream(dev, 0);
    if (!s) return 1;
    B.n = 3 * MiB + 16;
    B.in = dmalloc(B.n);
    B.out1 = dmalloc(B.n);
    B.out2 = dmalloc(B.n);
    B.out3 = dmalloc(B.n);
    B.hin = hmalloc_pinned(B.n);
    B.hout1 = hmalloc_pinned(B.n);
    B.hout2 = hmalloc_pinned(B.n);
    B.hout3 = hmalloc_pinned(B.n);
    B.expect = malloc(B.n);
    if (!B.expect) return 1;

    PF_RUN(test_capture_and_replay);
    PF_RUN(test_keys_alternate);
    PF_RUN(test_uncapturable_fallback);
    PF_RUN(test_work_error);
    PF_RUN(test_lru_two_entries);

    pf_stream_destroy(&s);
    cudaFree(B.in);
    cudaFree(B.out1);
    cudaFree(B.out2);
    cudaFree(B.out3);
    cudaFreeHost(B.hin);
    cudaFreeHost(B.hout1);
    cudaFreeHost(B.hout2);
    cudaFreeHost(B.hout3);
    free(B.expect);
    return pf_test_finish();
}
