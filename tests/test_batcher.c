/* Dynamic batcher (src/pipeline/batcher.c) on a fake clock (times are passed
 * in): parameter errors, a full batch forms at once, max_delay forms a
 * partial batch exactly at the deadline and not before (the timer starting
 * at the batch's first frame, or at the take that left a request over),
 * max_delay 0, end of
 * stream flush, priorities, per-source round-robin fairness with a flooding
 * source and a rotating start, per-level rotation, order per source, many
 * distinct sources, capacity (PF_AGAIN, caller keeps the item), release on
 * destroy, and a seeded random run against a plain reference model of
 * pipeline.h's rules. */
#include <stdatomic.h>
#include <stdint.h>

#include "pf_test.h"
#include "pipeline/batcher.h"

/* Tracked items: each holds a host buffer whose free callback counts it. */
static atomic_int g_live;
static char g_byte;

static void on_free(void *opaque, void *data, size_t size)
{
    (void)opaque;
    (void)data;
    (void)size;
    atomic_fetch_sub(&g_live, 1);
}

static pf_item make_item(int32_t source, int64_t seq, int priority)
{
    pf_item it;
    memset(&it, 0, sizeof it);
    it.source = source;
    it.seq = seq;
    it.priority = priority;
    pf_buffer *buf = NULL;
    if (pf_buffer_wrap(&g_byte, 1, PF_MEM_HOST, NULL, on_free, NULL, &buf) != PF_OK) {
        fprintf(stderr, "pf_buffer_wrap: %s\n", pf_last_error());
        exit(1);
    }
    atomic_fetch_add(&g_live, 1);
    it.tensor.buf = buf;
    it.tensor.data = &g_byte;
    it.tensor.dtype = PF_DTYPE_U8;
    it.tensor.ndim = 1;
    it.tensor.shape[0] = 1;
    it.tensor.strides[0] = 1;
    return it;
}

static pf_batcher *make_batcher(int max_batch, int64_t max_delay_us, int capacity)
{
    pf_batch_params p = {.max_batch = max_batch, .max_delay_us = max_delay_us};
    pf_batcher *b = NULL;
    if (pf_batcher_create(&p, capacity, &b) != PF_OK)
        fprintf(stderr, "  pf_batcher_create: %s\n", pf_last_error());
    return b;
}

static void add(pf_batcher *b, int32_t source, int64_t seq, int priority, int64_t now)
{
    pf_item it = make_item(source, seq, priority);
    pf_status st = pf_batcher_add(b, &it, now);
    CHECK_OK(st);
    if (st == PF_OK) CHECK(it.tensor.buf == NULL); /* taken */
    else pf_item_unref(&it);
}

static void release_all(pf_item *items, int n)
{
    for (int i = 0; i < n; i++) pf_item_unref(&items[i]);
}

/* Parameters ------------------------------------------------------------------------------ */

static void test_create_errors(void)
{
    pf_batcher *b = (pf_batcher *)1;
    pf_batch_params p = {.max_batch = 0, .max_delay_us = 0};
    CHECK_EQ_INT(pf_batcher_create(&p, 4, &b), PF_ERR_INVALID);
    CHECK(b == NULL);
    CHECK(strstr(pf_last_error(), "max_batch 0") != NULL);
    p = (pf_batch_params){.max_batch = 4, .max_delay_us = -1};
    CHECK_EQ_INT(pf_batcher_create(&p, 4, &b), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "max_delay_us -1") != NULL);
    p = (pf_batch_params){.max_batch = 4, .max_delay_us = 10};
    CHECK_EQ_INT(pf_batcher_create(&p, 3, &b), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "capacity 3") != NULL);
    CHECK_EQ_INT(pf_batcher_create(&p, (1 << 20) + 1, &b), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_batcher_create(NULL, 4, &b), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_batcher_create(&p, 4, NULL), PF_ERR_INVALID);

    CHECK_OK(pf_batcher_create(&p, 4, &b));
    CHECK_EQ_INT(pf_batcher_count(b), 0);
    CHECK(!pf_batcher_ready(b, 0, false));
    CHECK(!pf_batcher_ready(b, INT64_MAX, true)); /* nothing waits */
    CHECK(pf_batcher_deadline(b) == INT64_MAX);
    pf_item out[4];
    CHECK_EQ_INT(pf_batcher_take(b, out, 0), 0);
    /* An item with neither part is refused and left to the caller. */
    pf_item it;
    memset(&it, 0, sizeof it);
    it.source = 3;
    it.seq = 8;
    CHECK_EQ_INT(pf_batcher_add(b, &it, 0), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "source 3, seq 8") != NULL);
    CHECK_EQ_INT(pf_batcher_add(b, NULL, 0), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_batcher_add(NULL, &it, 0), PF_ERR_INVALID);
    pf_batcher_destroy(&b);
    CHECK(b == NULL);
    pf_batcher_destroy(&b);
    pf_batcher_destroy(NULL);
    CHECK_EQ_INT(pf_batcher_count(NULL), 0);
    CHECK(!pf_batcher_ready(NULL, 0, true));
    CHECK(pf_batcher_deadline(NULL) == INT64_MAX);
    CHECK_EQ_INT(pf_batcher_take(NULL, out, 0), 0);
}

/* Forming batches -------------------------------------------------------------------------- */

static void test_full_batch_immediately(void)
{
    pf_batcher *b = make_batcher(4, 1000000, 16);
    REQUIRE(b);
    for (int i = 0; i < 3; i++) {
        add(b, 0, i, 0, 100);
        CHECK(!pf_batcher_ready(b, 100, false));
    }
    add(b, 0, 3, 0, 100);
    CHECK(pf_batcher_ready(b, 100, false)); /* the moment max_batch wait */
    add(b, 0, 4, 0, 100);
    pf_item out[4];
    CHECK_EQ_INT(pf_batcher_take(b, out, 100), 4);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(out[i].seq, i);
    release_all(out, 4);
    CHECK_EQ_INT(pf_batcher_count(b), 1);
    CHECK(!pf_batcher_ready(b, 100, false));
    pf_batcher_destroy(&b);
}

static void test_timeout_partial_batch(void)
{
    /* max_delay 500 us: the oldest (t = 1000 ns) is due at 501000 ns exactly. */
    pf_batcher *b = make_batcher(8, 500, 16);
    REQUIRE(b);
    add(b, 1, 0, 0, 1000);
    add(b, 2, 0, 0, 200000);
    add(b, 1, 1, 0, 300000);
    CHECK(pf_batcher_deadline(b) == 501000);
    CHECK(!pf_batcher_ready(b, 1000, false));
    CHECK(!pf_batcher_ready(b, 500999, false));
    CHECK(pf_batcher_ready(b, 501000, false));
    CHECK(pf_batcher_ready(b, 501001, false));
    pf_item out[8];
    CHECK_EQ_INT(pf_batcher_take(b, out, 501000), 3);
    /* round-robin: source 1, source 2, source 1 */
    CHECK_EQ_INT(out[0].source, 1);
    CHECK_EQ_INT(out[0].seq, 0);
    CHECK_EQ_INT(out[1].source, 2);
    CHECK_EQ_INT(out[2].source, 1);
    CHECK_EQ_INT(out[2].seq, 1);
    release_all(out, 3);
    CHECK(pf_batcher_deadline(b) == INT64_MAX);
    CHECK(!pf_batcher_ready(b, INT64_MAX, false));

    /* The timeout starts at the first frame of a batch (nvstreammux's
     * batched-push-timeout): a request left over from a take belongs to the
     * next batch, which starts collecting at that take - not at the
     * request's own arrival. max_batch 2. */
    pf_batcher_destroy(&b);
    b = make_batcher(2, 500, 16);
    REQUIRE(b);
    add(b, 5, 0, 0, 0);      /* oldest, source 5 */
    add(b, 5, 1, 0, 10);     /* source 5 again */
    add(b, 7, 0, 0, 20);     /* source 7 */
    CHECK_EQ_INT(pf_batcher_take(b, out, 30), 2); /* 5/0 and 7/0 */
    CHECK_EQ_INT(out[0].source, 5);
    CHECK_EQ_INT(out[0].seq, 0);
    CHECK_EQ_INT(out[1].source, 7);
    release_all(out, 2);
    CHECK(pf_batcher_deadline(b) == 30 + 500000); /* 5/1 (added at 10), taken over at 30 */
    CHECK(!pf_batcher_ready(b, 500010, false));
    CHECK(!pf_batcher_ready(b, 500029, false));
    CHECK(pf_batcher_ready(b, 500030, false));
    /* A leftover that waited longer than the delay behind a slow consumer
     * (taken at 2 ms, delay 0.5 ms) still gets the full delay for company. */
    add(b, 9, 0, 0, 40);
    CHECK_EQ_INT(pf_batcher_take(b, out, 2000000), 2); /* 5/1 and 9/0 */
    release_all(out, 2);
    add(b, 9, 1, 0, 2000001);
    add(b, 9, 2, 0, 2000002);
    add(b, 9, 3, 0, 2000003);
    CHECK(pf_batcher_ready(b, 2100000, false));
    CHECK_EQ_INT(pf_batcher_take(b, out, 2100000), 2); /* full, taken late */
    release_all(out, 2);
    CHECK(pf_batcher_deadline(b) == 2100000 + 500000); /* not 2000003 + 500000 */
    CHECK(!pf_batcher_ready(b, 2550000, false));
    CHECK(pf_batcher_ready(b, 2600000, false));
    /* A request arriving after the take starts its batch's timer itself. */
    CHECK_EQ_INT(pf_batcher_take(b, out, 2600000), 1);
    release_all(out, 1);
    add(b, 9, 4, 0, 2700000);
    CHECK(pf_batcher_deadline(b) == 2700000 + 500000);
    pf_batcher_destroy(&b);

    /* Huge delays saturate instead of overflowing. */
    b = make_batcher(2, INT64_MAX, 4);
    REQUIRE(b);
    add(b, 0, 0, 0, 1000);
    CHECK(pf_batcher_deadline(b) == INT64_MAX);
    CHECK(!pf_batcher_ready(b, INT64_MAX - 1, false));
    pf_batcher_destroy(&b);
    b = make_batcher(2, 1000, 4);
    REQUIRE(b);
    add(b, 0, 0, 0, INT64_MAX - 10);
    CHECK(pf_batcher_deadline(b) == INT64_MAX);
    pf_batcher_destroy(&b);
}

static void test_zero_delay(void)
{
    pf_batcher *b = make_batcher(8, 0, 8);
    REQUIRE(b);
    CHECK(!pf_batcher_ready(b, 0, false));
    add(b, 0, 0, 0, 5000);
    CHECK(pf_batcher_ready(b, 5000, false));
    CHECK(pf_batcher_ready(b, 0, false)); /* even with a clock behind it */
    CHECK(pf_batcher_deadline(b) == 5000);
    pf_item out[8];
    CHECK_EQ_INT(pf_batcher_take(b, out, 5000), 1);
    release_all(out, 1);
    pf_batcher_destroy(&b);
}

static void test_eos_flush(void)
{
    pf_batcher *b = make_batcher(8, 1000000, 32);
    REQUIRE(b);
    CHECK(!pf_batcher_ready(b, 0, true));
    add(b, 0, 0, 0, 0);
    add(b, 1, 0, 0, 1);
    add(b, 0, 1, 0, 2);
    CHECK(!pf_batcher_ready(b, 1000, false));
    CHECK(pf_batcher_ready(b, 1000, true));
    pf_item out[8];
    CHECK_EQ_INT(pf_batcher_take(b, out, 1000), 3);
    release_all(out, 3);
    CHECK(!pf_batcher_ready(b, 1000, true));
    /* More than a batch at EOS: flushed in max_batch pieces. */
    for (int i = 0; i < 19; i++) add(b, i % 2, i, 0, 2000);
    int total = 0, n;
    while (pf_batcher_ready(b, 2000, true)) {
        n = pf_batcher_take(b, out, 2000);
        CHECK(n >= 1 && n <= 8);
        total += n;
        release_all(out, n);
    }
    CHECK_EQ_INT(total, 19);
    CHECK_EQ_INT(pf_batcher_count(b), 0);
    pf_batcher_destroy(&b);
}

/* Priorities -------------------------------------------------------------------------------- */

static void test_priorities(void)
{
    pf_batcher *b = make_batcher(2, 1000, 16);
    REQUIRE(b);
    add(b, 1, 0, 0, 0);  /* low, arrived first */
    add(b, 2, 0, 0, 1);
    add(b, 3, 0, 5, 2);  /* high, later */
    add(b, 1, 1, 5, 3);  /* high: (priority 5, source 1) is its own queue */
    pf_item out[4];
    CHECK_EQ_INT(pf_batcher_take(b, out, 10), 2);
    CHECK_EQ_INT(out[0].priority, 5);
    CHECK_EQ_INT(out[1].priority, 5);
    CHECK_EQ_INT(out[0].source, 1); /* within the level: ascending source, no cursor yet */
    CHECK_EQ_INT(out[0].seq, 1);
    CHECK_EQ_INT(out[1].source, 3);
    release_all(out, 2);
    CHECK_EQ_INT(pf_batcher_take(b, out, 10), 2);
    CHECK_EQ_INT(out[0].priority, 0);
    CHECK_EQ_INT(out[0].source, 1);
    CHECK_EQ_INT(out[0].seq, 0);
    CHECK_EQ_INT(out[1].source, 2);
    release_all(out, 2);
    pf_batcher_destroy(&b);

    /* A batch not filled by the high level is topped up from lower ones,
     * highest first; negative priorities come last. */
    b = make_batcher(4, 1000, 16);
    REQUIRE(b);
    add(b, 0, 0, -3, 0);
    add(b, 0, 1, 0, 1);
    add(b, 0, 2, 0, 2);
    add(b, 0, 3, 9, 3);
    add(b, 0, 4, 2, 4);
    CHECK_EQ_INT(pf_batcher_take(b, out, 10), 4);
    const int64_t want[] = {3, 4, 1, 2};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(out[i].seq, want[i]);
    release_all(out, 4);
    CHECK_EQ_INT(pf_batcher_take(b, out, 10), 1);
    CHECK_EQ_INT(out[0].seq, 0);
    release_all(out, 1);
    pf_batcher_destroy(&b);
}

/* Fairness ---------------------------------------------------------------------------------- */

static void test_fairness_flooding_source(void)
{
    /* Source 10 floods (30 requests, all before the others); sources 20 and
     * 30 have 5 each. Batches of 3: one of each while all three wait, with
     * the first slot rotating 10, 20, 30, 10, ...; then source 10 alone. */
    pf_batcher *b = make_batcher(3, 1000, 64);
    REQUIRE(b);
    int64_t t = 0;
    for (int i = 0; i < 30; i++) add(b, 10, i, 0, t++);
    for (int i = 0; i < 5; i++) {
        add(b, 20, i, 0, t++);
        add(b, 30, i, 0, t++);
    }
    int64_t next[3] = {0, 0, 0}; /* next expected seq per source */
    const int32_t ids[3] = {10, 20, 30};
    pf_item out[3];
    for (int k = 0; k < 5; k++) {
        REQUIRE(pf_batcher_ready(b, t, false));
        CHECK_EQ_INT(pf_batcher_take(b, out, t), 3);
        int seen[3] = {0, 0, 0};
        for (int i = 0; i < 3; i++) {
            int s = out[i].source / 10 - 1;
            REQUIRE(s >= 0 && s < 3);
            seen[s]++;
            CHECK_EQ_INT(out[i].seq, next[s]); /* FIFO per source */
            next[s]++;
            /* rotation: batch k starts with source k % 3, then ascending cyclically */
            CHECK_EQ_INT(out[i].source, ids[(k + i) % 3]);
        }
        for (int s = 0; s < 3; s++) CHECK_EQ_INT(seen[s], 1);
        release_all(out, 3);
    }
    while (pf_batcher_count(b) > 0) {
        int n = pf_batcher_take(b, out, t);
        REQUIRE(n > 0);
        for (int i = 0; i < n; i++) {
            CHECK_EQ_INT(out[i].source, 10);
            CHECK_EQ_INT(out[i].seq, next[0]);
            next[0]++;
        }
        release_all(out, n);
    }
    CHECK_EQ_INT(next[0], 30);
    pf_batcher_destroy(&b);
}

/* The rotation carries on across batches that drain everything. */
static void test_rotation_after_drain(void)
{
    pf_batcher *b = make_batcher(3, 0, 16);
    REQUIRE(b);
    pf_item out[3];
    for (int round = 0; round < 6; round++) {
        for (int s = 0; s < 3; s++) add(b, s, round, 0, round);
        CHECK_EQ_INT(pf_batcher_take(b, out, round), 3);
        for (int i = 0; i < 3; i++) CHECK_EQ_INT(out[i].source, (round + i) % 3);
        release_all(out, 3);
    }
    /* A source that went away: the next start is the next id after the
     * previous first one that still waits (cyclically). Last first was 2. */
    add(b, 1, 100, 0, 10);
    add(b, 0, 100, 0, 10);
    CHECK_EQ_INT(pf_batcher_take(b, out, 10), 2);
    CHECK_EQ_INT(out[0].source, 0); /* nothing above 2: wrap to 0 */
    CHECK_EQ_INT(out[1].source, 1);
    release_all(out, 2);
    add(b, 1, 101, 0, 11);
    add(b, 2, 101, 0, 11);
    CHECK_EQ_INT(pf_batcher_take(b, out, 11), 2);
    CHECK_EQ_INT(out[0].source, 1); /* after 0 */
    CHECK_EQ_INT(out[1].source, 2);
    release_all(out, 2);
    pf_batcher_destroy(&b);
}

/* Each priority level keeps its own rotation: a high level that always has
 * one source does not pin the low level's start (which would starve some of
 * its sources). */
static void test_rotation_per_level(void)
{
    pf_batcher *b = make_batcher(2, 0, 64);
    REQUIRE(b);
    for (int i = 0; i < 10; i++) {
        add(b, 0, i, 0, i);
        add(b, 2, i, 0, i);
        add(b, 3, i, 0, i);
    }
    const int32_t low_order[] = {0, 2, 3, 0, 2, 3, 0, 2};
    pf_item out[2];
    for (int k = 0; k < 8; k++) {
        add(b, 1, k, 7, 100 + k);
        CHECK_EQ_INT(pf_batcher_take(b, out, 100 + k), 2);
        CHECK_EQ_INT(out[0].priority, 7);
        CHECK_EQ_INT(out[0].source, 1);
        CHECK_EQ_INT(out[1].priority, 0);
        CHECK_EQ_INT(out[1].source, low_order[k]);
        release_all(out, 2);
    }
    pf_batcher_destroy(&b);
}

/* Many distinct sources, including the extremes of int32. */
static void test_many_sources(void)
{
    const int nsrc = 3000;
    pf_batcher *b = make_batcher(256, 1000, 4096);
    REQUIRE(b);
    for (int i = 0; i < nsrc; i++) {
        int32_t s = i == 0 ? INT32_MIN : i == 1 ? INT32_MAX : i * 7919 - 10000000;
        add(b, s, i, i % 3, i);
        if (i % 5 == 0) add(b, s, i + nsrc, i % 3, i); /* a second request */
    }
    int expected = nsrc + (nsrc + 4) / 5;
    CHECK_EQ_INT(pf_batcher_count(b), expected);
    pf_item *out = calloc(256, sizeof *out);
    char *seen = calloc((size_t)2 * nsrc, 1);
    REQUIRE(out && seen);
    int total = 0, bad = 0, last_prio = 1 << 30;
    while (pf_batcher_count(b) > 0) {
        int n = pf_batcher_take(b, out, 5000);
        REQUIRE(n > 0);
        for (int i = 0; i < n; i++) {
            int64_t q = out[i].seq;
            if (q < 0 || q >= 2 * nsrc || seen[q]) bad++;
            else seen[q] = 1;
            /* a second request of a source never comes before its first */
            if (q >= nsrc && !seen[q - nsrc]) bad++;
            if (out[i].priority > last_prio) bad++; /* levels come out high to low */
            last_prio = out[i].priority;
        }
        total += n;
        release_all(out, n);
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(total, expected);
    free(out);
    free(seen);
    pf_batcher_destroy(&b);
}

/* Capacity and ownership --------------------------------------------------------------------- */

static void test_capacity(void)
{
    int live0 = atomic_load(&g_live);
    pf_batcher *b = make_batcher(2, 1000, 4);
    REQUIRE(b);
    for (int i = 0; i < 4; i++) add(b, i, 0, 0, i);
    pf_item it = make_item(9, 5, 0);
    pf_buffer *buf = it.tensor.buf;
    CHECK_EQ_INT(pf_batcher_add(b, &it, 10), PF_AGAIN);
    CHECK(strstr(pf_last_error(), "capacity 4") != NULL);
    CHECK(it.tensor.buf == buf && it.source == 9 && it.seq == 5); /* caller keeps it */
    CHECK_EQ_INT(pf_batcher_count(b), 4);
    pf_item out[2];
    CHECK_EQ_INT(pf_batcher_take(b, out, 10), 2);
    release_all(out, 2);
    CHECK_OK(pf_batcher_add(b, &it, 11));
    CHECK_EQ_INT(pf_batcher_count(b), 3);
    /* Reuse of freed slots over many rounds stays within capacity. */
    for (int r = 0; r < 1000; r++) {
        CHECK_EQ_INT(pf_batcher_take(b, out, 20 + r), 2);
        release_all(out, 2);
        add(b, r % 7, r, r % 2, 20 + r);
        add(b, (r * 3) % 5, r, 0, 20 + r);
    }
    pf_batcher_destroy(&b);
    CHECK_EQ_INT(atomic_load(&g_live), live0);
}

static void test_destroy_releases(void)
{
    int live0 = atomic_load(&g_live);
    pf_batcher *b = make_batcher(4, 1000, 32);
    REQUIRE(b);
    for (int i = 0; i < 20; i++) add(b, i % 3, i, i % 2, i);
    pf_item out[4];
    CHECK_EQ_INT(pf_batcher_take(b, out, 100), 4);
    release_all(out, 4);
    CHECK_EQ_INT(atomic_load(&g_live), live0 + 16);
    pf_batcher_destroy(&b);
    CHECK_EQ_INT(atomic_load(&g_live), live0);
}

/* Random run against a reference model ------------------------------------------------------- */

#define MODEL_MAX 64

typedef struct model_req {
    int priority;
    int32_t source;
    int64_t seq, t;
    int live;
} model_req;

typedef struct model {
    model_req req[4096];
    int nreq;
    int max_batch;
    int64_t delay_ns;
    int64_t t_take;            /* last take (INT64_MIN none): a batch's timer start */
    int cursor_prio[16];
    int32_t cursor_src[16];
    int ncursor;
} model;

static int model_count(const model *m)
{
    int n = 0;
    for (int i = 0; i < m->nreq; i++) n += m->req[i].live;
    return n;
}

static int64_t model_oldest(const model *m)
{
    for (int i = 0; i < m->nreq; i++)
        if (m->req[i].live) return m->req[i].t;
    return INT64_MAX;
}

static int int_cmp_desc(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x < y) - (x > y);
}

static int i32_cmp_asc(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The rules of pipeline.h, spelled out as plainly as possible. Writes the
 * indices of the chosen requests into idx[]; returns how many. */
static int model_take(model *m, int *idx)
{
    int n = 0;
    int prios[MODEL_MAX];
    int np = 0;
    for (int i = 0; i < m->nreq; i++) {
        if (!m->req[i].live) continue;
        int dup = 0;
        for (int k = 0; k < np; k++) dup |= prios[k] == m->req[i].priority;
        if (!dup) prios[np++] = m->req[i].priority;
    }
    qsort(prios, (size_t)np, sizeof *prios, int_cmp_desc);
    for (int l = 0; l < np && n < m->max_batch; l++) {
        int prio = prios[l];
        int32_t srcs[MODEL_MAX];
        int ns = 0;
        for (int i = 0; i < m->nreq; i++) {
            if (!m->req[i].live || m->req[i].priority != prio) continue;
            int dup = 0;
            for (int k = 0; k < ns; k++) dup |= srcs[k] == m->req[i].source;
            if (!dup) srcs[ns++] = m->req[i].source;
        }
        qsort(srcs, (size_t)ns, sizeof *srcs, i32_cmp_asc);
        int c = -1;
        for (int k = 0; k < m->ncursor; k++)
            if (m->cursor_prio[k] == prio) c = k;
        int start = 0;
        if (c >= 0) {
            while (start < ns && srcs[start] <= m->cursor_src[c]) start++;
            if (start == ns) start = 0;
        } else {
            c = m->ncursor++;
            m->cursor_prio[c] = prio;
        }
        m->cursor_src[c] = srcs[start];
        int took = 1;
        while (took && n < m->max_batch) {
            took = 0;
            for (int k = 0; k < ns && n < m->max_batch; k++) {
                int32_t s = srcs[(start + k) % ns];
                for (int i = 0; i < m->nreq; i++) {
                    model_req *r = &m->req[i];
                    if (r->live && r->priority == prio && r->source == s) {
                        r->live = 0;
                        idx[n++] = i;
                        took = 1;
                        break;
                    }
                }
            }
        }
    }
    return n;
}

static void test_random_vs_model(void)
{
    pf_test_seed(20261121);
    static model m;
    int live0 = atomic_load(&g_live);
    long mismatches = 0, batches = 0;
    for (int run = 0; run < 40; run++) {
        memset(&m, 0, sizeof m);
        m.t_take = INT64_MIN;
        m.max_batch = (int)pf_test_rand_range(1, 8);
        int64_t delay_us = pf_test_rand_range(0, 3) == 0 ? 0 : pf_test_rand_range(1, 2000);
        m.delay_ns = delay_us * 1000;
        int capacity = (int)pf_test_rand_range(m.max_batch, MODEL_MAX);
        int nsrc = (int)pf_test_rand_range(1, 9);
        int nprio = (int)pf_test_rand_range(1, 3);
        pf_batcher *b = make_batcher(m.max_batch, delay_us, capacity);
        REQUIRE(b);
        int64_t now = pf_test_rand_range(0, 1000000);
        int64_t seq = 0;
        for (int step = 0; step < 2000; step++) {
            int op = (int)pf_test_rand_range(0, 9);
            if (op < 6) { /* add */
                model_req r = {(int)pf_test_rand_range(0, nprio - 1) * 10 - 10,
                               (int32_t)pf_test_rand_range(0, nsrc - 1) * 1000 - 3000, seq++,
                               now, 1};
                pf_item it = make_item(r.source, r.seq, r.priority);
                pf_status st = pf_batcher_add(b, &it, now);
                if (model_count(&m) >= capacity) {
                    if (st != PF_AGAIN) mismatches++;
                    pf_item_unref(&it);
                } else if (st != PF_OK) {
                    mismatches++;
                    pf_item_unref(&it);
                } else {
                    m.req[m.nreq++] = r;
                }
            } else if (op < 8) { /* time passes */
                now += pf_test_rand_range(0, 3 * delay_us * 1000 / 2 + 1);
            } else { /* the worker looks */
                bool eos = pf_test_rand_range(0, 15) == 0;
                int cnt = model_count(&m);
                int64_t oldest = model_oldest(&m);
                if (cnt && oldest < m.t_take) oldest = m.t_take; /* the batch began at the take */
                int64_t dl = cnt ? oldest + m.delay_ns : INT64_MAX;
                bool want = cnt > 0 && (cnt >= m.max_batch || eos || now - oldest >= m.delay_ns);
                if (pf_batcher_deadline(b) != dl) mismatches++;
                if (pf_batcher_count(b) != cnt) mismatches++;
                bool ready = pf_batcher_ready(b, now, eos);
                if (ready != want) mismatches++;
                if (ready) {
                    pf_item out[8];
                    int idx[8];
                    int n = pf_batcher_take(b, out, now);
                    int mn = model_take(&m, idx);
                    m.t_take = now;
                    batches++;
                    if (n != mn) mismatches++;
                    for (int i = 0; i < n && i < mn; i++) {
                        const model_req *r = &m.req[idx[i]];
                        if (out[i].source != r->source || out[i].seq != r->seq ||
                            out[i].priority != r->priority)
                            mismatches++;
                    }
                    release_all(out, n);
                }
            }
            if (m.nreq > 4000) break;
        }
        pf_batcher_destroy(&b);
    }
    CHECK_EQ_INT(mismatches, 0);
    CHECK(batches > 1000);
    CHECK_EQ_INT(atomic_load(&g_live), live0);
    printf("  %ld batches compared\n", batches);
}

int main(void)
{
    PF_RUN(test_create_errors);
    PF_RUN(test_full_batch_immediately);
    PF_RUN(test_timeout_partial_batch);
    PF_RUN(test_zero_delay);
    PF_RUN(test_eos_flush);
    PF_RUN(test_priorities);
    PF_RUN(test_fairness_flooding_source);
    PF_RUN(test_rotation_after_drain);
    PF_RUN(test_rotation_per_level);
    PF_RUN(test_many_sources);
    PF_RUN(test_capacity);
    PF_RUN(test_destroy_releases);
    PF_RUN(test_random_vs_model);
    CHECK_EQ_INT(atomic_load(&g_live), 0);
    return pf_test_finish();
}
