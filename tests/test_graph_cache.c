/* pf_graph_cache on the CPU: real CPU streams (every run direct) and a fake
 * backend with graph slots, so the capture / replay / fallback / LRU logic is
 * checked in CI and under the sanitizers without a GPU.
 *
 * The fake backend models a stream as an accumulator: an "op" either changes
 * the accumulator at once (normal mode) or is recorded (capture mode); a
 * graph replays the recorded ops. The accumulator is order-sensitive, so a
 * replayed graph must apply exactly the captured ops in the captured order. */
#include "pf_test.h"

#include "core/error.h"
#include "device/backend.h"

/* Fake backend --------------------------------------------------------------- */

#define FAKE_MAX_OPS 64

typedef struct fake_stream {
    int capturing;
    int invalidated;    /* a forbidden call happened during capture */
    int fail_begin;     /* next graph_begin fails */
    int fail_end;       /* next graph_end fails (like an instantiate error) */
    int fail_launch;    /* next graph_launch fails */
    int rec[FAKE_MAX_OPS];
    int nrec;
    uint64_t acc;       /* the "device memory" */
    int live_execs;     /* graphs created and not yet destroyed */
    int launches;
    int begins;
} fake_stream;

typedef struct fake_exec {
    fake_stream *owner;
    int ops[FAKE_MAX_OPS];
    int nops;
} fake_exec;

static uint64_t apply_op(uint64_t acc, int v) { return acc * 1000003u + (uint64_t)(unsigned)v; }

static pf_status fake_begin(void *stream)
{
    fake_stream *fs = stream;
    fs->begins++;
    if (fs->fail_begin) {
        fs->fail_begin = 0;
        return pf_set_error(PF_ERR_DEVICE, "fake graph_begin refused");
    }
    if (fs->capturing) return pf_set_error(PF_ERR_DEVICE, "fake: already capturing");
    fs->capturing = 1;
    fs->invalidated = 0;
    fs->nrec = 0;
    return PF_OK;
}

static pf_status fake_end(void *stream, void **exec)
{
    fake_stream *fs = stream;
    *exec = NULL;
    if (!fs->capturing) return pf_set_error(PF_ERR_DEVICE, "fake: not capturing");
    fs->capturing = 0;
    if (fs->invalidated) return pf_set_error(PF_ERR_DEVICE, "fake: capture invalidated");
    if (fs->fail_end) {
        fs->fail_end = 0;
        return pf_set_error(PF_ERR_DEVICE, "fake: instantiate failed");
    }
    fake_exec *e = calloc(1, sizeof *e);
    if (!e) return pf_set_error(PF_ERR_NOMEM, "fake: out of memory");
    e->owner = fs;
    e->nops = fs->nrec;
    memcpy(e->ops, fs->rec, sizeof e->ops);
    fs->live_execs++;
    *exec = e;
    return PF_OK;
}

static pf_status fake_launch(void *exec, void *stream)
{
    fake_stream *fs = stream;
    fake_exec *e = exec;
    if (fs->capturing) return pf_set_error(PF_ERR_DEVICE, "fake: launch while capturing");
    if (fs->fail_launch) {
        fs->fail_launch = 0;
        return pf_set_error(PF_ERR_DEVICE, "fake graph_launch refused");
    }
    for (int i = 0; i < e->nops; i++) fs->acc = apply_op(fs->acc, e->ops[i]);
    fs->launches++;
    return PF_OK;
}

static void fake_destroy(void *exec)
{
    fake_exec *e = exec;
    e->owner->live_execs--;
    free(e);
}

static const pf_backend fake_be = {
    .type = PF_DEVICE_CUDA,
    .name = "fake",
    .graph_begin = fake_begin,
    .graph_end = fake_end,
    .graph_launch = fake_launch,
    .graph_destroy = fake_destroy,
};

static pf_device fake_dev0 = {.be = &fake_be, .spec = "fake:0"};
static pf_device fake_dev1 = {.be = &fake_be, .spec = "fake:1"};

static void fake_stream_init(pf_stream *s, fake_stream *fs, pf_device *dev)
{
    memset(fs, 0, sizeof *fs);
    s->be = &fake_be;
    s->dev = dev;
    s->native = fs;
}

/* Issues one op on the stream: recorded while capturing, else applied. */
static void fake_op(pf_stream *s, int v)
{
    fake_stream *fs = s->native;
    if (fs->capturing) {
        if (fs->nrec < FAKE_MAX_OPS) fs->rec[fs->nrec++] = v;
        else fs->invalidated = 1;
    } else {
        fs->acc = apply_op(fs->acc, v);
    }
}

/* A synchronize: forbidden during capture (invalidates it, like CUDA). */
static pf_status fake_sync(pf_stream *s)
{
    fake_stream *fs = s->native;
    if (fs->capturing) {
        fs->invalidated = 1;
        return pf_set_error(PF_ERR_DEVICE, "fake: synchronize during capture");
    }
    return PF_OK;
}

/* Work functions ---------------------------------------------------------------- */

typedef struct work_ctx {
    int calls;
    int ops[8];
    int nops;
    int sync_mode;        /* 0 none, 1 sync and ignore error, 2 sync and return its error */
    pf_status ret;        /* returned after issuing the ops (PF_OK normally) */
    pf_graph_cache *gc;   /* for the re-entry test */
    pf_status inner;      /* status of a nested run */
} work_ctx;

static pf_status work_ops(void *user, pf_stream *s)
{
    work_ctx *w = user;
    w->calls++;
    for (int i = 0; i < w->nops; i++) {
        fake_op(s, w->ops[i]);
        if (i == 0 && w->sync_mode) {
            pf_status st = fake_sync(s);
            if (w->sync_mode == 2 && st != PF_OK) return st;
        }
    }
    if (w->ret != PF_OK) return pf_set_error(w->ret, "work failed on purpose (code %d)", 42);
    return PF_OK;
}

static uint64_t expect_after(uint64_t acc, const work_ctx *w, int times)
{
    for (int t = 0; t < times; t++)
        for (int i = 0; i < w->nops; i++) acc = apply_op(acc, w->ops[i]);
    return acc;
}

static work_ctx make_work(int n, int base)
{
    work_ctx w;
    memset(&w, 0, sizeof w);
    w.nops = n;
    for (int i = 0; i < n; i++) w.ops[i] = base + i * 7 + 1;
    return w;
}

static pf_graph_cache *new_cache(int max_entries)
{
    pf_graph_cache_params p = pf_graph_cache_params_default();
    p.max_entries = max_entries;
    pf_graph_cache *gc = NULL;
    CHECK_OK(pf_graph_cache_create(&p, &gc));
    return gc;
}

/* Tests: creation and arguments --------------------------------------------------- */

static void test_create_and_args(void)
{
    pf_graph_cache_params d = pf_graph_cache_params_default();
    CHECK_EQ_INT(d.max_entries, 64);

    CHECK_EQ_INT(pf_graph_cache_create(&d, NULL), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "out") != NULL);

    pf_graph_cache *gc = (pf_graph_cache *)&d; /* must be reset to NULL on failure */
    pf_graph_cache_params bad = {.max_entries = -3};
    CHECK_EQ_INT(pf_graph_cache_create(&bad, &gc), PF_ERR_INVALID);
    CHECK(gc == NULL);
    CHECK(strstr(pf_last_error(), "-3") != NULL);

    CHECK_OK(pf_graph_cache_create(NULL, &gc)); /* NULL params = defaults */
    REQUIRE(gc != NULL);
    pf_graph_cache_stats st = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(st.captures, 0);
    CHECK_EQ_INT(st.replays, 0);
    CHECK_EQ_INT(st.direct_runs, 0);
    CHECK_EQ_INT(st.capture_failures, 0);
    CHECK_EQ_INT(st.evictions, 0);
    CHECK_EQ_INT(st.entries, 0);

    CHECK_EQ_INT(pf_graph_cache_get_stats(NULL, &st), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_graph_cache_get_stats(gc, NULL), PF_ERR_INVALID);

    pf_stream *s = NULL;
    CHECK_OK(pf_stream_create(NULL, &s));
    REQUIRE(s != NULL);
    work_ctx w = make_work(0, 0); /* no fake ops: this is a CPU stream */
    const char key[] = "k";

    CHECK_EQ_INT(pf_graph_cache_run(NULL, s, key, 1, work_ops, &w), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "cache") != NULL);
    CHECK_EQ_INT(pf_graph_cache_run(gc, NULL, key, 1, work_ops, &w), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "stream") != NULL);
    CHECK_EQ_INT(pf_graph_cache_run(gc, s, key, 1, NULL, &w), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "work") != NULL);
    CHECK_EQ_INT(pf_graph_cache_run(gc, s, NULL, 3, work_ops, &w), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "key_len is 3") != NULL);
    CHECK_EQ_INT(w.calls, 0);
    st = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(st.direct_runs, 0);

    /* A NULL key of length 0 is the empty key: valid. */
    CHECK_OK(pf_graph_cache_run(gc, s, NULL, 0, work_ops, &w));
    CHECK_EQ_INT(w.calls, 1);

    pf_stream_destroy(&s);
    pf_graph_cache_destroy(&gc);
    CHECK(gc == NULL);
    pf_graph_cache_destroy(&gc);  /* pointer to NULL */
    pf_graph_cache_destroy(NULL);
}

/* CPU streams: every run direct ------------------------------------------------------ */

typedef struct cpu_work {
    int calls;
    unsigned char *buf;
    size_t n;
    int value;
} cpu_work;

static pf_status cpu_fill(void *user, pf_stream *s)
{
    cpu_work *w = user;
    w->calls++;
    return pf_memset_async(s, w->buf, w->value, w->n);
}

static void test_cpu_every_run_direct(void)
{
    pf_test_seed(0x6a0fu);
    pf_graph_cache *gc = new_cache(4);
    REQUIRE(gc != NULL);
    pf_stream *s = NULL;
    CHECK_OK(pf_stream_create(NULL, &s));
    REQUIRE(s != NULL);
    unsigned char buf[256];
    cpu_work w = {.buf = buf, .n = sizeof buf};
    const int runs = 300;
    for (int r = 0; r < runs; r++) {
        unsigned char key[40];
        size_t len = (size_t)pf_test_rand_range(0, (int64_t)sizeof key);
        for (size_t i = 0; i < len; i++) key[i] = (unsigned char)pf_test_rand();
        /* Repeat a few keys too: still direct, never cached. */
        if (r % 3 == 0) len = 2, key[0] = 'x', key[1] = 'y';
        w.value = (int)(pf_test_rand() & 0xff);
        int before = w.calls;
        CHECK_OK(pf_graph_cache_run(gc, s, key, len, cpu_fill, &w));
        CHECK_EQ_INT(w.calls, before + 1);
        CHECK(buf[0] == (unsigned char)w.value && buf[sizeof buf - 1] == (unsigned char)w.value);
    }
    pf_graph_cache_stats st = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(st.direct_runs, runs);
    CHECK_EQ_INT(st.captures, 0);
    CHECK_EQ_INT(st.replays, 0);
    CHECK_EQ_INT(st.capture_failures, 0);
    CHECK_EQ_INT(st.evictions, 0);
    CHECK_EQ_INT(st.entries, 0);
    pf_stream_destroy(&s);
    pf_graph_cache_destroy(&gc);
}

static void test_cpu_errors_propagate(void)
{
    pf_graph_cache *gc = new_cache(0);
    REQUIRE(gc != NULL);
    pf_stream *s = NULL;
    CHECK_OK(pf_stream_create(NULL, &s));
    REQUIRE(s != NULL);
    work_ctx w = make_work(0, 0);
    w.ret = PF_ERR_IO;
    CHECK_EQ_INT(pf_graph_cache_run(gc, s, "e", 1, work_ops, &w), PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "on purpose (code 42)") != NULL);
    CHECK_EQ_INT(w.calls, 1);
    /* Positive flow signals come back unchanged too. */
    w.ret = PF_AGAIN;
    CHECK_EQ_INT(pf_graph_cache_run(gc, s, "e", 1, work_ops, &w), PF_AGAIN);
    CHECK_EQ_INT(w.calls, 2);
    w.ret = PF_OK;
    CHECK_OK(pf_graph_cache_run(gc, s, "e", 1, work_ops, &w));
    CHECK_EQ_INT(w.calls, 3);
    pf_graph_cache_stats st = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(st.direct_runs, 3);
    CHECK_EQ_INT(st.entries, 0);
    pf_stream_destroy(&s);
    pf_graph_cache_destroy(&gc);
}

/* Fake graph backend -------------------------------------------------------------------- */

static void test_capture_then_replay(void)
{
    pf_stream s;
    fake_stream fs;
    fake_stream_init(&s, &fs, &fake_dev0);
    pf_graph_cache *gc = new_cache(8);
    REQUIRE(gc != NULL);
    work_ctx w = make_work(5, 100);
    uint64_t expect = 0;

    CHECK_OK(pf_graph_cache_run(gc, &s, "shape:1x3x512x512", 17, work_ops, &w));
    expect = expect_after(expect, &w, 1);
    CHECK_EQ_INT(w.calls, 1);
    CHECK(fs.acc == expect); /* captured AND executed (by the launch) */
    CHECK_EQ_INT(fs.launches, 1);
    CHECK_EQ_INT(fs.capturing, 0);
    for (int i = 0; i < 10; i++) {
        CHECK_OK(pf_graph_cache_run(gc, &s, "shape:1x3x512x512", 17, work_ops, &w));
        expect = expect_after(expect, &w, 1);
    }
    CHECK_EQ_INT(w.calls, 1); /* replays do not call work */
    CHECK(fs.acc == expect);
    pf_graph_cache_stats st = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(st.captures, 1);
    CHECK_EQ_INT(st.replays, 10);
    CHECK_EQ_INT(st.direct_runs, 0);
    CHECK_EQ_INT(st.entries, 1);
    CHECK_EQ_INT(fs.live_execs, 1);
    pf_graph_cache_destroy(&gc);
    CHECK_EQ_INT(fs.live_execs, 0); /* destroy releases the graphs */
}

typedef struct keyed {
    const char *bytes;
    size_t len;
    int group; /* keys with the same group are the same key */
} keyed;

static void test_key_handling(void)
{
    pf_stream s;
    fake_stream fs;
    fake_stream_init(&s, &fs, &fake_dev0);
    pf_graph_cache *gc = new_cache(64);
    REQUIRE(gc != NULL);

    static const keyed keys[] = {
        {"ab", 2, 0},      {"abc", 3, 1},      {"abd", 3, 2},     {"ab\0", 3, 3},
        {"a\0b", 3, 4},    {"", 0, 5},         {NULL, 0, 5},      {"abcdefgh", 8, 6},
        {"abcdefgi", 8, 7}, {"b", 1, 8},       {"abc\0\0", 5, 9}, {"abc\0", 4, 10},
    };
    const int nkeys = (int)(sizeof keys / sizeof keys[0]);
    const int ngroups = 11;
    work_ctx w[16];
    for (int g = 0; g < ngroups; g++) w[g] = make_work(3, 1000 * (g + 1));

    uint64_t expect = 0;
    for (int round = 0; round < 3; round++) {
        for (int k = 0; k < nkeys; k++) {
            work_ctx *wk = &w[keys[k].group];
            CHECK_OK(pf_graph_cache_run(gc, &s, keys[k].bytes, keys[k].len, work_ops, wk));
            expect = expect_after(expect, wk, 1);
            CHECK(fs.acc == expect); /* each key replays its own ops */
        }
    }
    for (int g = 0; g < ngroups; g++) CHECK_EQ_INT(w[g].calls, 1);
    pf_graph_cache_stats st = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(st.captures, ngroups);
    CHECK_EQ_INT(st.replays, 3 * nkeys - ngroups);
    CHECK_EQ_INT(st.entries, ngroups);

    /* The cache keeps its own copy of the key: reusing the caller's buffer
     * with other bytes is a different key, and the old bytes still hit. */
    char buf[8];
    memcpy(buf, "KEY1", 4);
    work_ctx a = make_work(2, 7), b = make_work(2, 9);
    CHECK_OK(pf_graph_cache_run(gc, &s, buf, 4, work_ops, &a));
    memcpy(buf, "KEY2", 4);
    CHECK_OK(pf_graph_cache_run(gc, &s, buf, 4, work_ops, &b));
    memcpy(buf, "KEY1", 4);
    CHECK_OK(pf_graph_cache_run(gc, &s, buf, 4, work_ops, &a));
    CHECK_EQ_INT(a.calls, 1);
    CHECK_EQ_INT(b.calls, 1);

    /* The same key on another device is another graph. */
    pf_stream s1;
    fake_stream fs1;
    fake_stream_init(&s1, &fs1, &fake_dev1);
    CHECK_OK(pf_graph_cache_run(gc, &s1, "ab", 2, work_ops, &w[0]));
    CHECK_EQ_INT(w[0].calls, 2);
    CHECK(fs1.acc == expect_after(0, &w[0], 1));
    CHECK_EQ_INT(fs1.live_execs, 1);

    pf_graph_cache_destroy(&gc);
    CHECK_EQ_INT(fs.live_execs, 0);
    CHECK_EQ_INT(fs1.live_execs, 0);
}

/* Many random keys: more than the bucket count, so chains are exercised. */
static void test_many_random_keys(void)
{
    pf_test_seed(0xc0ffeeu);
    pf_stream s;
    fake_stream fs;
    fake_stream_init(&s, &fs, &fake_dev0);
    enum { N = 700 };
    pf_graph_cache *gc = new_cache(N);
    REQUIRE(gc != NULL);
    static unsigned char keys[N][24];
    static size_t lens[N];
    static work_ctx w[N];
    for (int i = 0; i < N; i++) {
        /* Distinct by construction: the first two bytes encode i. */
        lens[i] = (size_t)pf_test_rand_range(2, 24);
        keys[i][0] = (unsigned char)(i & 0xff);
        keys[i][1] = (unsigned char)(i >> 8);
        for (size_t j = 2; j < lens[i]; j++) keys[i][j] = (unsigned char)pf_test_rand();
        w[i] = make_work(1, i * 3);
    }
    uint64_t expect = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < N; i++) {
            int k = pass ? (int)(pf_test_rand() % N) : i;
            CHECK_OK(pf_graph_cache_run(gc, &s, keys[k], lens[k], work_ops, &w[k]));
            expect = expect_after(expect, &w[k], 1);
        }
    }
    CHECK(fs.acc == expect);
    int calls = 0;
    for (int i = 0; i < N; i++) calls += w[i].calls;
    CHECK_EQ_INT(calls, N);
    pf_graph_cache_stats st = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(st.captures, N);
    CHECK_EQ_INT(st.replays, N);
    CHECK_EQ_INT(st.evictions, 0);
    CHECK_EQ_INT(st.entries, N);
    pf_graph_cache_destroy(&gc);
    CHECK_EQ_INT(fs.live_execs, 0);
}

static void test_uncapturable_falls_back(void)
{
    for (int mode = 1; mode <= 2; mode++) {
        pf_stream s;
        fake_stream fs;
        fake_stream_init(&s, &fs, &fake_dev0);
        pf_graph_cache *gc = new_cache(8);
        REQUIRE(gc != NULL);
        work_ctx w = make_work(4, 50);
        w.sync_mode = mode; /* 1: ignores the refused sync, 2: returns its error */

        CHECK_OK(pf_graph_cache_run(gc, &s, "sync", 4, work_ops, &w));
        CHECK_EQ_INT(w.calls, 2);          /* capture attempt + direct run */
        CHECK(fs.acc == expect_after(0, &w, 1)); /* effect applied exactly once */
        CHECK_EQ_INT(fs.capturing, 0);
        CHECK_EQ_INT(fs.live_execs, 0);
        pf_graph_cache_stats st = pf_test_graph_cache_stats(gc);
        CHECK_EQ_INT(st.capture_failures, 1);
        CHECK_EQ_INT(st.direct_runs, 1);
        CHECK_EQ_INT(st.captures, 0);
        CHECK_EQ_INT(st.entries, 1);       /* the uncapturable marker */

        int begins = fs.begins;
        for (int i = 0; i < 5; i++) CHECK_OK(pf_graph_cache_run(gc, &s, "sync", 4, work_ops, &w));
        CHECK_EQ_INT(w.calls, 7);          /* one call per later run */
        CHECK_EQ_INT(fs.begins, begins);   /* no capture attempted again */
        CHECK(fs.acc == expect_after(0, &w, 6));
        st = pf_test_graph_cache_stats(gc);
        CHECK_EQ_INT(st.capture_failures, 1);
        CHECK_EQ_INT(st.direct_runs, 6);
        CHECK_EQ_INT(st.replays, 0);

        /* Other keys still capture. */
        work_ctx ok = make_work(2, 5);
        CHECK_OK(pf_graph_cache_run(gc, &s, "fine", 4, work_ops, &ok));
        CHECK_OK(pf_graph_cache_run(gc, &s, "fine", 4, work_ops, &ok));
        st = pf_test_graph_cache_stats(gc);
        CHECK_EQ_INT(st.captures, 1);
        CHECK_EQ_INT(st.replays, 1);
        pf_graph_cache_destroy(&gc);
        CHECK_EQ_INT(fs.live_execs, 0);
    }
}

/* Capture invalidated and the direct run fails too: the direct error comes
 * back and the key is not marked (it will be tried again). */
static void test_uncapturable_and_failing(void)
{
    pf_stream s;
    fake_stream fs;
    fake_stream_init(&s, &fs, &fake_dev0);
    pf_graph_cache *gc = new_cache(8);
    REQUIRE(gc != NULL);
    work_ctx w = make_work(2, 3);
    w.sync_mode = 1;
    w.ret = PF_ERR_FORMAT;
    CHECK_EQ_INT(pf_graph_cache_run(gc, &s, "bad", 3, work_ops, &w), PF_ERR_FORMAT);
    CHECK(strstr(pf_last_error(), "on purpose") != NULL);
    CHECK_EQ_INT(w.calls, 2);
    pf_graph_cache_stats st = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(st.capture_failures, 1);
    CHECK_EQ_INT(st.entries, 0);
    pf_graph_cache_destroy(&gc);
}

static void test_work_error_not_cached(void)
{
    pf_stream s;
    fake_stream fs;
    fake_stream_init(&s, &fs, &fake_dev0);
    pf_graph_cache *gc = new_cache(8);
    REQUIRE(gc != NULL);
    work_ctx w = make_work(3, 11);
    w.ret = PF_ERR_FORMAT;
    fs.acc = 12345;
    CHECK_EQ_INT(pf_graph_cache_run(gc, &s, "err", 3, work_ops, &w), PF_ERR_FORMAT);
    CHECK(strstr(pf_last_error(), "on purpose (code 42)") != NULL); /* unchanged message */
    CHECK_EQ_INT(w.calls, 1);          /* not re-run: capture itself was fine */
    CHECK(fs.acc == 12345);            /* recorded ops were discarded, not executed */
    CHECK_EQ_INT(fs.capturing, 0);     /* capture was ended */
    CHECK_EQ_INT(fs.live_execs, 0);    /* and its graph destroyed */
    pf_graph_cache_stats st = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(st.entries, 0);
    CHECK_EQ_INT(st.captures, 0);
    CHECK_EQ_INT(st.capture_failures, 0);

    /* A flow signal from work is not cached either. */
    w.ret = PF_EOF;
    CHECK_EQ_INT(pf_graph_cache_run(gc, &s, "err", 3, work_ops, &w), PF_EOF);
    CHECK_EQ_INT(pf_test_graph_cache_stats(gc).entries, 0);

    /* Once the work succeeds the key is captured normally. */
    w.ret = PF_OK;
    CHECK_OK(pf_graph_cache_run(gc, &s, "err", 3, work_ops, &w));
    CHECK_OK(pf_graph_cache_run(gc, &s, "err", 3, work_ops, &w));
    CHECK_EQ_INT(w.calls, 3);
    CHECK(fs.acc == expect_after(12345, &w, 2));
    st = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(st.captures, 1);
    CHECK_EQ_INT(st.replays, 1);
    pf_graph_cache_destroy(&gc);
    CHECK_EQ_INT(fs.live_execs, 0);
}

static void test_end_and_begin_failures(void)
{
    pf_stream s;
    fake_stream fs;
    fake_stream_init(&s, &fs, &fake_dev0);
    pf_graph_cache *gc = new_cache(8);
    REQUIRE(gc != NULL);

    /* graph_end fails (e.g. instantiation): direct run, key marked. */
    work_ctx w = make_work(2, 20);
    fs.fail_end = 1;
    CHECK_OK(pf_graph_cache_run(gc, &s, "inst", 4, work_ops, &w));
    CHECK_EQ_INT(w.calls, 2);
    CHECK(fs.acc == expect_after(0, &w, 1));
    pf_graph_cache_stats st = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(st.capture_failures, 1);
    CHECK_EQ_INT(st.direct_runs, 1);
    CHECK_EQ_INT(st.entries, 1);
    CHECK_OK(pf_graph_cache_run(gc, &s, "inst", 4, work_ops, &w));
    CHECK_EQ_INT(w.calls, 3);
    CHECK_EQ_INT(pf_test_graph_cache_stats(gc).direct_runs, 2);

    /* graph_begin fails: one direct call, no marker, next run captures. */
    work_ctx v = make_work(2, 40);
    fs.fail_begin = 1;
    uint64_t before = fs.acc;
    CHECK_OK(pf_graph_cache_run(gc, &s, "begin", 5, work_ops, &v));
    CHECK_EQ_INT(v.calls, 1);
    CHECK(fs.acc == expect_after(before, &v, 1));
    st = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(st.capture_failures, 2);
    CHECK_EQ_INT(st.direct_runs, 3);
    CHECK_EQ_INT(st.entries, 1);
    CHECK_OK(pf_graph_cache_run(gc, &s, "begin", 5, work_ops, &v));
    CHECK_EQ_INT(v.calls, 2);
    st = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(st.captures, 1);
    CHECK_EQ_INT(st.entries, 2);

    /* graph_launch fails on a replay: the error comes back and the entry is
     * dropped; the next run captures again. */
    fs.fail_launch = 1;
    CHECK_EQ_INT(pf_graph_cache_run(gc, &s, "begin", 5, work_ops, &v), PF_ERR_DEVICE);
    CHECK(strstr(pf_last_error(), "graph_launch refused") != NULL);
    st = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(st.entries, 1);
    CHECK_EQ_INT(fs.live_execs, 0);
    CHECK_OK(pf_graph_cache_run(gc, &s, "begin", 5, work_ops, &v));
    CHECK_EQ_INT(v.calls, 3);
    CHECK_EQ_INT(pf_test_graph_cache_stats(gc).captures, 2);

    /* graph_launch fails right after a capture: same. */
    work_ctx u = make_work(1, 60);
    fs.fail_launch = 1;
    CHECK_EQ_INT(pf_graph_cache_run(gc, &s, "first", 5, work_ops, &u), PF_ERR_DEVICE);
    CHECK_EQ_INT(pf_test_graph_cache_stats(gc).entries, 2);
    CHECK_EQ_INT(fs.live_execs, 1);
    pf_graph_cache_destroy(&gc);
    CHECK_EQ_INT(fs.live_execs, 0);
}

static void test_lru_eviction(void)
{
    pf_stream s;
    fake_stream fs;
    fake_stream_init(&s, &fs, &fake_dev0);
    pf_graph_cache *gc = new_cache(2);
    REQUIRE(gc != NULL);
    work_ctx w1 = make_work(1, 1), w2 = make_work(1, 2), w3 = make_work(1, 3);

    CHECK_OK(pf_graph_cache_run(gc, &s, "k1", 2, work_ops, &w1));
    CHECK_OK(pf_graph_cache_run(gc, &s, "k2", 2, work_ops, &w2));
    CHECK_OK(pf_graph_cache_run(gc, &s, "k1", 2, work_ops, &w1)); /* k1 most recent */
    CHECK_OK(pf_graph_cache_run(gc, &s, "k3", 2, work_ops, &w3)); /* evicts k2 */
    pf_graph_cache_stats st = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(st.captures, 3);
    CHECK_EQ_INT(st.replays, 1);
    CHECK_EQ_INT(st.evictions, 1);
    CHECK_EQ_INT(st.entries, 2);
    CHECK_EQ_INT(fs.live_execs, 2);

    CHECK_OK(pf_graph_cache_run(gc, &s, "k1", 2, work_ops, &w1)); /* still cached */
    CHECK_EQ_INT(w1.calls, 1);
    CHECK_OK(pf_graph_cache_run(gc, &s, "k2", 2, work_ops, &w2)); /* recaptured, evicts k3 */
    CHECK_EQ_INT(w2.calls, 2);
    CHECK_OK(pf_graph_cache_run(gc, &s, "k3", 2, work_ops, &w3)); /* recaptured, evicts k1 */
    CHECK_EQ_INT(w3.calls, 2);
    st = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(st.captures, 5);
    CHECK_EQ_INT(st.replays, 2);
    CHECK_EQ_INT(st.evictions, 3);
    CHECK_EQ_INT(st.entries, 2);
    CHECK_EQ_INT(fs.live_execs, 2);

    /* Markers take a slot and are evicted like graphs. */
    work_ctx bad = make_work(1, 9);
    bad.sync_mode = 1;
    CHECK_OK(pf_graph_cache_run(gc, &s, "bad", 3, work_ops, &bad)); /* evicts k2 */
    st = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(st.entries, 2);
    CHECK_EQ_INT(st.evictions, 4);
    CHECK_EQ_INT(fs.live_execs, 1);
    CHECK_OK(pf_graph_cache_run(gc, &s, "k1", 2, work_ops, &w1)); /* evicts k3 */
    CHECK_OK(pf_graph_cache_run(gc, &s, "k2", 2, work_ops, &w2)); /* evicts the marker */
    int calls = bad.calls;
    CHECK_OK(pf_graph_cache_run(gc, &s, "bad", 3, work_ops, &bad)); /* tried again */
    CHECK_EQ_INT(bad.calls, calls + 2);
    CHECK_EQ_INT(pf_test_graph_cache_stats(gc).capture_failures, 2);
    pf_graph_cache_destroy(&gc);
    CHECK_EQ_INT(fs.live_execs, 0);
}

static pf_status work_reenter(void *user, pf_stream *s)
{
    work_ctx *w = user;
    w->calls++;
    work_ctx inner = make_work(1, 0);
    w->inner = pf_graph_cache_run(w->gc, s, "inner", 5, work_ops, &inner);
    fake_op(s, 77);
    return PF_OK;
}

static void test_reentry_refused(void)
{
    pf_stream s;
    fake_stream fs;
    fake_stream_init(&s, &fs, &fake_dev0);
    pf_graph_cache *gc = new_cache(8);
    REQUIRE(gc != NULL);
    work_ctx w = make_work(0, 0);
    w.gc = gc;
    CHECK_OK(pf_graph_cache_run(gc, &s, "outer", 5, work_reenter, &w));
    CHECK_EQ_INT(w.inner, PF_ERR_BUSY);
    CHECK_EQ_INT(pf_test_graph_cache_stats(gc).captures, 1);
    /* The cache is usable afterwards. */
    work_ctx v = make_work(1, 4);
    CHECK_OK(pf_graph_cache_run(gc, &s, "next", 4, work_ops, &v));
    CHECK_EQ_INT(v.calls, 1);
    pf_graph_cache_destroy(&gc);
    CHECK_EQ_INT(fs.live_execs, 0);
}

int main(void)
{
    PF_RUN(test_create_and_args);
    PF_RUN(test_cpu_every_run_direct);
    PF_RUN(test_cpu_errors_propagate);
    PF_RUN(test_capture_then_replay);
    PF_RUN(test_key_handling);
    PF_RUN(test_many_random_keys);
    PF_RUN(test_uncapturable_falls_back);
    PF_RUN(test_uncapturable_and_failing);
    PF_RUN(test_work_error_not_cached);
    PF_RUN(test_end_and_begin_failures);
    PF_RUN(test_lru_eviction);
    PF_RUN(test_reentry_refused);
    return pf_test_finish();
}
