/* Pipeline edges (src/pipeline/edge.c): policy names, parameter errors,
 * every policy under a 4 x 4 producer/consumer load (nothing lost with BLOCK,
 * exact drop accounting otherwise, per-producer FIFO seen by every consumer),
 * exactly which items DROP_OLDEST / DROP_NEWEST drop behind a stalled
 * consumer, LATEST_ONLY freshness, close/drain with several producers,
 * cancel waking blocked threads, timeouts, pop_many, time-weighted mean depth
 * on a fake clock, the fan-in hooks (a notifier woken by pushes, closes and
 * cancels of several edges, no lost wake-up; the drop hook sees every
 * dropped item; pf_edge_take's end state), and release of every item
 * (tracked by the buffers' free callbacks; ASan checks the rest). */
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "core/sys.h"
#include "pf_test.h"
#include "pipeline/edge.h"

/* Tracked items ------------------------------------------------------------------------
 * Each test item holds one host buffer whose free callback counts the item as
 * released, by id, so the tests see exactly which items an edge let go. */

#define MAX_TRACK 4096

static atomic_int g_live;                 /* items made and not yet released */
static atomic_int g_released[MAX_TRACK];  /* releases per tracked id */
static char g_byte;

static void on_free(void *opaque, void *data, size_t size)
{
    (void)data;
    (void)size;
    intptr_t id = (intptr_t)opaque;
    atomic_fetch_sub(&g_live, 1);
    if (id >= 0 && id < MAX_TRACK) atomic_fetch_add(&g_released[id], 1);
}

static void reset_tracking(void)
{
    for (int i = 0; i < MAX_TRACK; i++) atomic_store(&g_released[i], 0);
}

/* An item with a tensor part; id >= 0 is tracked in g_released. */
static pf_item make_item(int32_t source, int64_t seq, intptr_t id)
{
    pf_item it;
    memset(&it, 0, sizeof it);
    it.source = source;
    it.seq = seq;
    pf_buffer *buf = NULL;
    if (pf_buffer_wrap(&g_byte, 1, PF_MEM_HOST, NULL, on_free, (void *)id, &buf) != PF_OK) {
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

static pf_edge *make_edge(int capacity, pf_edge_policy policy, const pf_clock *clock)
{
    pf_edge_params p = pf_edge_params_default();
    p.capacity = capacity;
    p.policy = policy;
    pf_edge *e = NULL;
    if (pf_edge_create(&p, clock, &e) != PF_OK)
        fprintf(stderr, "  pf_edge_create: %s\n", pf_last_error());
    return e;
}

static pf_edge_stats edge_stats(pf_edge *e)
{
    pf_edge_stats s;
    memset(&s, 0xAB, sizeof s); /* a field left unset reads as garbage */
    s.from = s.to = NULL;
    pf_edge_get_stats(e, &s);
    return s;
}

static void sleep_us(int64_t us)
{
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* Fake clock ---------------------------------------------------------------------------- */

static _Atomic int64_t g_fake_now;
static int64_t fake_now(void *user)
{
    (void)user;
    return atomic_load(&g_fake_now);
}

/* Names, defaults, parameter errors -------------------------------------------------------- */

static void test_names_and_defaults(void)
{
    const pf_edge_policy all[] = {PF_EDGE_BLOCK, PF_EDGE_DROP_OLDEST, PF_EDGE_DROP_NEWEST,
                                  PF_EDGE_LATEST_ONLY};
    const char *names[] = {"block", "drop_oldest", "drop_newest", "latest_only"};
    for (int i = 0; i < 4; i++) {
        CHECK(!strcmp(pf_edge_policy_name(all[i]), names[i]));
        pf_edge_policy p = (pf_edge_policy)99;
        CHECK_OK(pf_edge_policy_parse(names[i], &p));
        CHECK_EQ_INT(p, all[i]);
    }
    CHECK(!strcmp(pf_edge_policy_name((pf_edge_policy)7), "?"));
    CHECK(!strcmp(pf_edge_policy_name((pf_edge_policy)-1), "?"));
    pf_edge_policy p = PF_EDGE_DROP_NEWEST;
    CHECK_EQ_INT(pf_edge_policy_parse("drop-latest", &p), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "'drop-latest'") != NULL);
    CHECK(strstr(pf_last_error(), "latest_only") != NULL);
    CHECK_EQ_INT(p, PF_EDGE_DROP_NEWEST); /* untouched on failure */
    CHECK_EQ_INT(pf_edge_policy_parse("BLOCK", &p), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_edge_policy_parse(NULL, &p), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_edge_policy_parse("block", NULL), PF_ERR_INVALID);

    pf_edge_params d = pf_edge_params_default();
    CHECK_EQ_INT(d.capacity, 4);
    CHECK_EQ_INT(d.policy, PF_EDGE_BLOCK);
}

static void test_create_errors(void)
{
    pf_edge_params p = pf_edge_params_default();
    pf_edge *e = (pf_edge *)1;
    p.capacity = 0;
    CHECK_EQ_INT(pf_edge_create(&p, NULL, &e), PF_ERR_INVALID);
    CHECK(e == NULL);
    CHECK(strstr(pf_last_error(), "capacity 0") != NULL);
    p.capacity = -5;
    CHECK_EQ_INT(pf_edge_create(&p, NULL, &e), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "capacity -5") != NULL);
    p.capacity = (1 << 20) + 1;
    CHECK_EQ_INT(pf_edge_create(&p, NULL, &e), PF_ERR_INVALID);
    p = pf_edge_params_default();
    p.policy = (pf_edge_policy)4;
    CHECK_EQ_INT(pf_edge_create(&p, NULL, &e), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "policy 4") != NULL);
    CHECK_EQ_INT(pf_edge_create(&p, NULL, NULL), PF_ERR_INVALID);

    /* NULL params = defaults; LATEST_ONLY forces capacity 1. */
    CHECK_OK(pf_edge_create(NULL, NULL, &e));
    pf_edge_stats s = edge_stats(e);
    CHECK_EQ_INT(s.capacity, 4);
    CHECK_EQ_INT(s.policy, PF_EDGE_BLOCK);
    CHECK_EQ_INT(s.pushed, 0);
    CHECK_EQ_INT(s.popped, 0);
    CHECK_EQ_INT(s.dropped, 0);
    CHECK_EQ_INT(s.cancelled, 0);
    CHECK_EQ_INT(s.depth_max, 0);
    CHECK(s.depth_mean == 0.0);
    CHECK(s.from == NULL && s.to == NULL);
    pf_edge_destroy(&e);
    CHECK(e == NULL);
    pf_edge_destroy(&e); /* NULL-safe */
    pf_edge_destroy(NULL);

    e = make_edge(8, PF_EDGE_LATEST_ONLY, NULL);
    REQUIRE(e);
    s = edge_stats(e);
    CHECK_EQ_INT(s.capacity, 1);
    CHECK_EQ_INT(s.policy, PF_EDGE_LATEST_ONLY);
    pf_edge_destroy(&e);

    /* NULL arguments never crash. */
    pf_item it;
    memset(&it, 0, sizeof it);
    CHECK_EQ_INT(pf_edge_push(NULL, &it, 0), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_edge_pop(NULL, &it, 0), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_edge_pop_many(NULL, &it, 4), 0);
    CHECK_EQ_INT(pf_edge_depth(NULL), 0);
    pf_edge_close(NULL);
    pf_edge_cancel(NULL);
    pf_edge_add_producer(NULL);
}

/* An item with neither a frame nor a tensor is refused (and, as push always
 * takes the item, whatever it held is released). */
static void test_invalid_item(void)
{
    pf_edge *e = make_edge(2, PF_EDGE_BLOCK, NULL);
    REQUIRE(e);
    pf_item it;
    memset(&it, 0, sizeof it);
    it.source = 7;
    it.seq = 42;
    CHECK_EQ_INT(pf_edge_push(e, &it, 0), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "source 7, seq 42") != NULL);
    CHECK(strstr(pf_last_error(), "neither a frame nor a tensor") != NULL);
    CHECK_EQ_INT(pf_edge_depth(e), 0);
    CHECK_EQ_INT(edge_stats(e).pushed, 0);
    CHECK_EQ_INT(pf_edge_push(e, NULL, 0), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_edge_pop(e, NULL, 0), PF_ERR_INVALID);
    pf_edge_destroy(&e);
}

/* Items: ref / unref ------------------------------------------------------------------------- */

static void test_item_ref(void)
{
    int live0 = atomic_load(&g_live);
    pf_item a = make_item(3, 9, -1);
    a.priority = 2;
    a.t_source_ns = 1234;
    pf_item b;
    pf_item_ref(&b, &a);
    CHECK(b.tensor.buf == a.tensor.buf);
    CHECK_EQ_INT(pf_buffer_refcount(a.tensor.buf), 2);
    CHECK_EQ_INT(b.source, 3);
    CHECK_EQ_INT(b.seq, 9);
    CHECK_EQ_INT(b.priority, 2);
    CHECK_EQ_INT(b.t_source_ns, 1234);
    pf_item_ref(&a, &a); /* self: no-op */
    CHECK_EQ_INT(pf_buffer_refcount(a.tensor.buf), 2);
    pf_item_unref(&a);
    CHECK(a.tensor.buf == NULL && a.source == 0 && a.seq == 0);
    CHECK_EQ_INT(atomic_load(&g_live), live0 + 1);
    CHECK_EQ_INT(pf_buffer_refcount(b.tensor.buf), 1);
    pf_item_unref(&b);
    CHECK_EQ_INT(atomic_load(&g_live), live0);
    pf_item_unref(&b); /* a zeroed item */
    pf_item_unref(NULL);
    pf_item_ref(NULL, &b);
    pf_item_ref(&b, NULL);

    /* A frame part is referenced too. */
    pf_item f;
    memset(&f, 0, sizeof f);
    CHECK_OK(pf_frame_alloc(&f.frame, PF_PIXFMT_GRAY8, 4, 2, NULL, NULL));
    pf_item g;
    pf_item_ref(&g, &f);
    CHECK(g.frame.buf[0] == f.frame.buf[0]);
    CHECK_EQ_INT(pf_buffer_refcount(f.frame.buf[0]), 2);
    pf_item_unref(&f);
    CHECK_EQ_INT(pf_buffer_refcount(g.frame.buf[0]), 1);
    pf_item_unref(&g);
}

/* 4 producers x 4 consumers --------------------------------------------------------------- */

#define LOAD_PRODUCERS 4
#define LOAD_CONSUMERS 4
#define LOAD_ITEMS 10000 /* per producer */

typedef struct load_ctx {
    pf_edge *edge;
    atomic_int *seen; /* [producer * LOAD_ITEMS + seq] */
} load_ctx;

typedef struct load_thread {
    load_ctx *ctx;
    int index;
    /* consumer results, checked by the main thread */
    long popped;
    long order_errors;   /* an item of a producer at or before its last seen seq */
    long bad_items;      /* out of range source/seq */
    pf_status end;       /* what ended the loop */
    int64_t last[LOAD_PRODUCERS];
    /* producer results */
    long push_errors;
} load_thread;

static void *load_producer(void *arg)
{
    load_thread *t = arg;
    for (int i = 0; i < LOAD_ITEMS; i++) {
        pf_item it = make_item(t->index, i, -1);
        pf_status st = pf_edge_push(t->ctx->edge, &it, PF_WAIT_FOREVER);
        if (st != PF_OK) {
            t->push_errors++;
            pf_item_unref(&it);
        }
        if ((i & 1023) == 0) sched_yield();
    }
    pf_edge_close(t->ctx->edge);
    return NULL;
}

static void *load_consumer(void *arg)
{
    load_thread *t = arg;
    for (int p = 0; p < LOAD_PRODUCERS; p++) t->last[p] = -1;
    for (;;) {
        pf_item it;
        pf_status st = pf_edge_pop(t->ctx->edge, &it, PF_WAIT_FOREVER);
        if (st != PF_OK) {
            t->end = st;
            break;
        }
        t->popped++;
        if (it.source < 0 || it.source >= LOAD_PRODUCERS || it.seq < 0 || it.seq >= LOAD_ITEMS) {
            t->bad_items++;
        } else {
            if (it.seq <= t->last[it.source]) t->order_errors++;
            t->last[it.source] = it.seq;
            atomic_fetch_add(&t->ctx->seen[it.source * LOAD_ITEMS + it.seq], 1);
        }
        pf_item_unref(&it);
    }
    return NULL;
}

static void run_load(pf_edge_policy policy, int capacity)
{
    int live0 = atomic_load(&g_live);
    load_ctx ctx;
    ctx.edge = make_edge(capacity, policy, NULL);
    REQUIRE(ctx.edge);
    ctx.seen = calloc((size_t)LOAD_PRODUCERS * LOAD_ITEMS, sizeof *ctx.seen);
    REQUIRE(ctx.seen);
    load_thread prod[LOAD_PRODUCERS], cons[LOAD_CONSUMERS];
    pf_thread tp[LOAD_PRODUCERS], tc[LOAD_CONSUMERS];
    memset(prod, 0, sizeof prod);
    memset(cons, 0, sizeof cons);
    for (int i = 0; i < LOAD_PRODUCERS; i++) pf_edge_add_producer(ctx.edge);
    for (int i = 0; i < LOAD_CONSUMERS; i++) {
        cons[i].ctx = &ctx;
        cons[i].index = i;
        CHECK_OK(pf_thread_start(&tc[i], "edge-cons", load_consumer, &cons[i]));
    }
    for (int i = 0; i < LOAD_PRODUCERS; i++) {
        prod[i].ctx = &ctx;
        prod[i].index = i;
        CHECK_OK(pf_thread_start(&tp[i], "edge-prod", load_producer, &prod[i]));
    }
    for (int i = 0; i < LOAD_PRODUCERS; i++) pf_thread_join(tp[i]);
    for (int i = 0; i < LOAD_CONSUMERS; i++) pf_thread_join(tc[i]);

    long popped = 0;
    for (int i = 0; i < LOAD_PRODUCERS; i++) CHECK_EQ_INT(prod[i].push_errors, 0);
    for (int i = 0; i < LOAD_CONSUMERS; i++) {
        CHECK_EQ_INT(cons[i].end, PF_EOF);
        CHECK_EQ_INT(cons[i].order_errors, 0);
        CHECK_EQ_INT(cons[i].bad_items, 0);
        popped += cons[i].popped;
    }
    long dups = 0, missing = 0;
    for (long k = 0; k < (long)LOAD_PRODUCERS * LOAD_ITEMS; k++) {
        int n = atomic_load(&ctx.seen[k]);
        if (n > 1) dups++;
        if (n == 0) missing++;
    }
    CHECK_EQ_INT(dups, 0);
    pf_edge_stats s = edge_stats(ctx.edge);
    const long total = (long)LOAD_PRODUCERS * LOAD_ITEMS;
    CHECK_EQ_INT(s.pushed, total);
    CHECK_EQ_INT(s.popped, popped);
    CHECK_EQ_INT(s.cancelled, 0);
    CHECK_EQ_INT(s.pushed, s.popped + s.dropped);
    CHECK_EQ_INT(missing, (long)s.dropped); /* every item not seen was dropped */
    CHECK(s.depth_max >= 1 && s.depth_max <= s.capacity);
    CHECK(s.depth_mean >= 0.0 && s.depth_mean <= (double)s.capacity);
    if (policy == PF_EDGE_BLOCK) {
        CHECK_EQ_INT(s.dropped, 0);
        CHECK_EQ_INT(popped, total);
    }
    CHECK_EQ_INT(pf_edge_depth(ctx.edge), 0);
    CHECK_EQ_INT(atomic_load(&g_live), live0); /* every dropped item was released */
    printf("  %-11s cap %d: popped %ld dropped %llu depth mean %.2f max %d\n",
           pf_edge_policy_name(policy), s.capacity, popped, (unsigned long long)s.dropped,
           s.depth_mean, s.depth_max);
    free(ctx.seen);
    pf_edge_destroy(&ctx.edge);
}

static void test_load_block(void) { run_load(PF_EDGE_BLOCK, 4); }
static void test_load_drop_oldest(void) { run_load(PF_EDGE_DROP_OLDEST, 3); }
static void test_load_drop_newest(void) { run_load(PF_EDGE_DROP_NEWEST, 3); }
static void test_load_latest_only(void) { run_load(PF_EDGE_LATEST_ONLY, 4); }

/* Exactly which items are dropped --------------------------------------------------------- */

/* Single thread: the consumer is "stalled" by simply not popping. */
static void test_drop_exact_single_thread(void)
{
    /* DROP_OLDEST, capacity 4, 10 pushes: 0..5 dropped (each at the push
     * that overflowed), 6..9 delivered in order. */
    reset_tracking();
    pf_edge *e = make_edge(4, PF_EDGE_DROP_OLDEST, NULL);
    REQUIRE(e);
    for (int i = 0; i < 10; i++) {
        pf_item it = make_item(0, i, i);
        CHECK_OK(pf_edge_push(e, &it, 0));
        CHECK(it.tensor.buf == NULL); /* taken */
        /* after push i (i >= 4), items 0..i-4 have been released */
        for (int k = 0; k < 10; k++) CHECK_EQ_INT(atomic_load(&g_released[k]), k <= i - 4);
    }
    pf_edge_stats s = edge_stats(e);
    CHECK_EQ_INT(s.pushed, 10);
    CHECK_EQ_INT(s.dropped, 6);
    CHECK_EQ_INT(s.depth_max, 4);
    for (int i = 6; i < 10; i++) {
        pf_item it;
        CHECK_OK(pf_edge_pop(e, &it, 0));
        CHECK_EQ_INT(it.seq, i);
        pf_item_unref(&it);
    }
    pf_item it;
    CHECK_EQ_INT(pf_edge_pop(e, &it, 0), PF_AGAIN);
    pf_edge_destroy(&e);
    for (int k = 0; k < 10; k++) CHECK_EQ_INT(atomic_load(&g_released[k]), 1);

    /* DROP_NEWEST: 0..3 kept, 4..9 released at their own push. */
    reset_tracking();
    e = make_edge(4, PF_EDGE_DROP_NEWEST, NULL);
    REQUIRE(e);
    for (int i = 0; i < 10; i++) {
        pf_item x = make_item(0, i, i);
        CHECK_OK(pf_edge_push(e, &x, 0));
        CHECK(x.tensor.buf == NULL);
        for (int k = 0; k < 10; k++) CHECK_EQ_INT(atomic_load(&g_released[k]), k >= 4 && k <= i);
    }
    s = edge_stats(e);
    CHECK_EQ_INT(s.pushed, 10);
    CHECK_EQ_INT(s.dropped, 6);
    for (int i = 0; i < 4; i++) {
        CHECK_OK(pf_edge_pop(e, &it, 0));
        CHECK_EQ_INT(it.seq, i);
        pf_item_unref(&it);
    }
    pf_edge_destroy(&e);

    /* LATEST_ONLY: each push replaces what waits. */
    reset_tracking();
    e = make_edge(1, PF_EDGE_LATEST_ONLY, NULL);
    REQUIRE(e);
    for (int i = 0; i < 5; i++) {
        pf_item x = make_item(0, i, i);
        CHECK_OK(pf_edge_push(e, &x, 0));
        for (int k = 0; k < 5; k++) CHECK_EQ_INT(atomic_load(&g_released[k]), k < i);
    }
    CHECK_EQ_INT(pf_edge_depth(e), 1);
    CHECK_OK(pf_edge_pop(e, &it, 0));
    CHECK_EQ_INT(it.seq, 4);
    pf_item_unref(&it);
    s = edge_stats(e);
    CHECK_EQ_INT(s.pushed, 5);
    CHECK_EQ_INT(s.popped, 1);
    CHECK_EQ_INT(s.dropped, 4);
    pf_edge_destroy(&e);
}

/* SPSC with threads: the consumer pops item 0, then stalls on a gate while
 * the producer pushes 1..N; once the gate opens it drains. Deterministic:
 * the producer waits for the first pop before pushing on. */
typedef struct stall_ctx {
    pf_edge *edge;
    atomic_int gate;    /* 1 = consumer may drain */
    atomic_int first_popped;
    int64_t got[64];
    int ngot;
    pf_status end;
} stall_ctx;

static void *stall_consumer(void *arg)
{
    stall_ctx *c = arg;
    pf_item it;
    pf_status st = pf_edge_pop(c->edge, &it, PF_WAIT_FOREVER);
    if (st == PF_OK) {
        c->got[c->ngot++] = it.seq;
        pf_item_unref(&it);
    }
    atomic_store(&c->first_popped, 1);
    while (!atomic_load(&c->gate)) sleep_us(200);
    while ((st = pf_edge_pop(c->edge, &it, PF_WAIT_FOREVER)) == PF_OK) {
        if (c->ngot < 64) c->got[c->ngot++] = it.seq;
        pf_item_unref(&it);
    }
    c->end = st;
    return NULL;
}

static void run_stalled(pf_edge_policy policy)
{
    const int cap = 3, n = 12; /* items 0..11 */
    reset_tracking();
    stall_ctx c;
    memset(&c, 0, sizeof c);
    c.edge = make_edge(cap, policy, NULL);
    REQUIRE(c.edge);
    pf_edge_add_producer(c.edge);
    pf_thread th;
    CHECK_OK(pf_thread_start(&th, "edge-stall", stall_consumer, &c));
    pf_item it = make_item(0, 0, 0);
    CHECK_OK(pf_edge_push(c.edge, &it, PF_WAIT_FOREVER));
    while (!atomic_load(&c.first_popped)) sleep_us(200);
    for (int i = 1; i < n; i++) {
        it = make_item(0, i, i);
        CHECK_OK(pf_edge_push(c.edge, &it, PF_WAIT_FOREVER));
    }
    /* Before the consumer resumes, exactly the policy's victims are gone. */
    for (int k = 1; k < n; k++) {
        int expect = policy == PF_EDGE_DROP_OLDEST ? (k <= n - 1 - cap) : (k > cap);
        CHECK_EQ_INT(atomic_load(&g_released[k]), expect);
    }
    CHECK_EQ_INT(pf_edge_depth(c.edge), cap);
    pf_edge_close(c.edge);
    atomic_store(&c.gate, 1);
    pf_thread_join(th);
    CHECK_EQ_INT(c.end, PF_EOF);
    REQUIRE(c.ngot == 1 + cap);
    CHECK_EQ_INT(c.got[0], 0);
    for (int i = 0; i < cap; i++) {
        int64_t expect = policy == PF_EDGE_DROP_OLDEST ? n - cap + i : 1 + i;
        CHECK_EQ_INT(c.got[1 + i], expect);
    }
    pf_edge_stats s = edge_stats(c.edge);
    CHECK_EQ_INT(s.pushed, n);
    CHECK_EQ_INT(s.popped, 1 + cap);
    CHECK_EQ_INT(s.dropped, n - 1 - cap);
    for (int k = 0; k < n; k++) CHECK_EQ_INT(atomic_load(&g_released[k]), 1);
    pf_edge_destroy(&c.edge);
}

static void test_stalled_drop_oldest(void) { run_stalled(PF_EDGE_DROP_OLDEST); }
static void test_stalled_drop_newest(void) { run_stalled(PF_EDGE_DROP_NEWEST); }

/* LATEST_ONLY with a slow consumer ---------------------------------------------------------- */

#define LATEST_ITEMS 20000

typedef struct latest_ctx {
    pf_edge *edge;
    int64_t *got;
    int ngot;
    pf_status end;
} latest_ctx;

static void *latest_consumer(void *arg)
{
    latest_ctx *c = arg;
    pf_item it;
    pf_status st;
    while ((st = pf_edge_pop(c->edge, &it, PF_WAIT_FOREVER)) == PF_OK) {
        c->got[c->ngot++] = it.seq;
        pf_item_unref(&it);
        sleep_us(200); /* slow */
    }
    c->end = st;
    return NULL;
}

static void test_latest_only_slow_consumer(void)
{
    int live0 = atomic_load(&g_live);
    latest_ctx c;
    memset(&c, 0, sizeof c);
    c.edge = make_edge(1, PF_EDGE_LATEST_ONLY, NULL);
    REQUIRE(c.edge);
    c.got = calloc(LATEST_ITEMS, sizeof *c.got);
    REQUIRE(c.got);
    pf_edge_add_producer(c.edge);
    pf_thread th;
    CHECK_OK(pf_thread_start(&th, "edge-latest", latest_consumer, &c));
    for (int i = 0; i < LATEST_ITEMS; i++) {
        pf_item it = make_item(1, i, -1);
        CHECK_EQ_INT(pf_edge_push(c.edge, &it, 0), PF_OK); /* never blocks */
    }
    pf_edge_close(c.edge);
    pf_thread_join(th);
    CHECK_EQ_INT(c.end, PF_EOF);
    REQUIRE(c.ngot >= 1);
    int increasing = 1;
    for (int i = 1; i < c.ngot; i++)
        if (c.got[i] <= c.got[i - 1]) increasing = 0;
    CHECK(increasing);
    CHECK_EQ_INT(c.got[c.ngot - 1], LATEST_ITEMS - 1); /* the last item always arrives */
    pf_edge_stats s = edge_stats(c.edge);
    CHECK_EQ_INT(s.pushed, LATEST_ITEMS);
    CHECK_EQ_INT(s.popped, c.ngot);
    CHECK_EQ_INT(s.pushed, s.popped + s.dropped);
    CHECK(s.dropped > 0); /* 200 us per item against a producer that never waits */
    CHECK_EQ_INT(s.depth_max, 1);
    CHECK_EQ_INT(atomic_load(&g_live), live0);
    printf("  consumer saw %d of %d items\n", c.ngot, LATEST_ITEMS);
    free(c.got);
    pf_edge_destroy(&c.edge);
}

/* Close and drain ------------------------------------------------------------------------- */

static void test_close_drain(void)
{
    int live0 = atomic_load(&g_live);
    pf_edge *e = make_edge(8, PF_EDGE_BLOCK, NULL);
    REQUIRE(e);
    for (int i = 0; i < 3; i++) pf_edge_add_producer(e);
    for (int i = 0; i < 5; i++) {
        pf_item it = make_item(i % 3, i, -1);
        CHECK_OK(pf_edge_push(e, &it, 0));
    }
    pf_edge_close(e);
    pf_edge_close(e);
    /* Two of three closed: still open for the third. */
    pf_item it = make_item(2, 5, -1);
    CHECK_OK(pf_edge_push(e, &it, 0));
    for (int i = 0; i < 6; i++) {
        CHECK_OK(pf_edge_pop(e, &it, 0));
        CHECK_EQ_INT(it.seq, i);
        pf_item_unref(&it);
    }
    CHECK_EQ_INT(pf_edge_pop(e, &it, 0), PF_AGAIN);
    CHECK_EQ_INT(pf_edge_pop(e, &it, 1000), PF_TIMEOUT);
    it = make_item(2, 6, -1);
    CHECK_OK(pf_edge_push(e, &it, 0));
    pf_edge_close(e); /* the last producer: queued items still drain */
    CHECK_OK(pf_edge_pop(e, &it, PF_WAIT_FOREVER));
    CHECK_EQ_INT(it.seq, 6);
    pf_item_unref(&it);
    CHECK_EQ_INT(pf_edge_pop(e, &it, 0), PF_EOF);
    CHECK_EQ_INT(pf_edge_pop(e, &it, PF_WAIT_FOREVER), PF_EOF);
    CHECK_EQ_INT(pf_edge_pop(e, &it, 5000), PF_EOF);
    CHECK_EQ_INT(pf_edge_pop_many(e, &it, 1), 0);
    /* Pushing to a closed edge releases the item. */
    it = make_item(0, 99, -1);
    CHECK_EQ_INT(pf_edge_push(e, &it, 0), PF_ERR_CLOSED);
    CHECK(strstr(pf_last_error(), "closed") != NULL);
    CHECK(strstr(pf_last_error(), "seq 99") != NULL);
    CHECK(it.tensor.buf == NULL);
    pf_edge_close(e); /* one close too many: ignored with a warning */
    pf_edge_stats s = edge_stats(e);
    CHECK_EQ_INT(s.pushed, 7);
    CHECK_EQ_INT(s.popped, 7);
    pf_edge_destroy(&e);
    CHECK_EQ_INT(atomic_load(&g_live), live0);

    /* No producer declared: the first close ends the stream. */
    e = make_edge(2, PF_EDGE_DROP_OLDEST, NULL);
    REQUIRE(e);
    pf_edge_close(e);
    CHECK_EQ_INT(pf_edge_pop(e, &it, PF_WAIT_FOREVER), PF_EOF);
    pf_edge_destroy(&e);
}

typedef struct drain_prod {
    pf_edge *edge;
    int index, n;
    long errors;
} drain_prod;

static void *drain_producer(void *arg)
{
    drain_prod *p = arg;
    for (int i = 0; i < p->n; i++) {
        pf_item it = make_item(p->index, i, -1);
        if (pf_edge_push(p->edge, &it, PF_WAIT_FOREVER) != PF_OK) p->errors++;
    }
    pf_edge_close(p->edge);
    return NULL;
}

/* Three producers with different amounts close one after another while the
 * consumer (this thread, blocked in pop) drains: it sees every item, then EOF
 * only after the last close. Consumers blocked in pop on an empty edge are
 * woken by the final close. */
static void test_close_drain_threads(void)
{
    int live0 = atomic_load(&g_live);
    pf_edge *e = make_edge(2, PF_EDGE_BLOCK, NULL);
    REQUIRE(e);
    drain_prod p[3];
    pf_thread th[3];
    for (int i = 0; i < 3; i++) pf_edge_add_producer(e);
    for (int i = 0; i < 3; i++) {
        p[i] = (drain_prod){e, i, 500 * (i + 1), 0};
        CHECK_OK(pf_thread_start(&th[i], "edge-drain", drain_producer, &p[i]));
    }
    long got[3] = {0, 0, 0};
    int64_t last[3] = {-1, -1, -1};
    int order_ok = 1;
    pf_item it;
    pf_status st;
    while ((st = pf_edge_pop(e, &it, PF_WAIT_FOREVER)) == PF_OK) {
        if (it.seq != last[it.source] + 1) order_ok = 0;
        last[it.source] = it.seq;
        got[it.source]++;
        pf_item_unref(&it);
    }
    CHECK_EQ_INT(st, PF_EOF);
    CHECK(order_ok);
    for (int i = 0; i < 3; i++) {
        pf_thread_join(th[i]);
        CHECK_EQ_INT(p[i].errors, 0);
        CHECK_EQ_INT(got[i], 500 * (i + 1));
    }
    pf_edge_destroy(&e);
    CHECK_EQ_INT(atomic_load(&g_live), live0);
}

/* Cancel --------------------------------------------------------------------------------- */

typedef struct blocked_op {
    pf_edge *edge;
    int push;           /* 1 = push, 0 = pop */
    atomic_int done;
    pf_status st;
    int item_released;  /* push: the item was zeroed */
    char msg[256];
} blocked_op;

static void *blocked_thread(void *arg)
{
    blocked_op *b = arg;
    pf_item it;
    if (b->push) {
        it = make_item(5, 77, -1);
        b->st = pf_edge_push(b->edge, &it, PF_WAIT_FOREVER);
        b->item_released = it.tensor.buf == NULL;
    } else {
        b->st = pf_edge_pop(b->edge, &it, PF_WAIT_FOREVER);
    }
    snprintf(b->msg, sizeof b->msg, "%s", pf_last_error());
    atomic_store(&b->done, 1);
    return NULL;
}

static void test_cancel_wakes(void)
{
    int live0 = atomic_load(&g_live);
    pf_edge *full = make_edge(2, PF_EDGE_BLOCK, NULL);
    pf_edge *empty = make_edge(2, PF_EDGE_BLOCK, NULL);
    REQUIRE(full && empty);
    for (int i = 0; i < 2; i++) {
        pf_item it = make_item(0, i, -1);
        CHECK_OK(pf_edge_push(full, &it, 0));
    }
    blocked_op ops[4];
    pf_thread th[4];
    memset(ops, 0, sizeof ops);
    for (int i = 0; i < 4; i++) {
        ops[i].edge = i < 2 ? full : empty;
        ops[i].push = i < 2;
        CHECK_OK(pf_thread_start(&th[i], "edge-block", blocked_thread, &ops[i]));
    }
    sleep_us(50000);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(atomic_load(&ops[i].done), 0); /* still blocked */
    pf_edge_cancel(full);
    pf_edge_cancel(empty);
    for (int i = 0; i < 4; i++) {
        pf_thread_join(th[i]);
        CHECK_EQ_INT(ops[i].st, PF_ERR_CANCELLED);
        CHECK(strstr(ops[i].msg, "cancelled") != NULL);
        if (ops[i].push) CHECK(ops[i].item_released);
    }
    pf_edge_stats s = edge_stats(full);
    CHECK_EQ_INT(s.pushed, 2);
    CHECK_EQ_INT(s.cancelled, 2); /* the queued ones */
    CHECK_EQ_INT(s.dropped, 0);
    CHECK_EQ_INT(s.popped, 0);
    CHECK_EQ_INT(pf_edge_depth(full), 0);
    /* Released at once, not at destroy. */
    CHECK_EQ_INT(atomic_load(&g_live), live0);

    /* After cancel: everything fails fast, cancel is idempotent. */
    pf_item it = make_item(0, 9, -1);
    CHECK_EQ_INT(pf_edge_push(full, &it, PF_WAIT_FOREVER), PF_ERR_CANCELLED);
    CHECK(it.tensor.buf == NULL);
    CHECK_EQ_INT(pf_edge_pop(full, &it, PF_WAIT_FOREVER), PF_ERR_CANCELLED);
    CHECK(strstr(pf_last_error(), "cancelled") != NULL);
    CHECK_EQ_INT(pf_edge_pop_many(full, &it, 1), 0);
    pf_edge_cancel(full);
    pf_edge_close(full);
    CHECK_EQ_INT(edge_stats(full).cancelled, 2);
    CHECK_EQ_INT(atomic_load(&g_live), live0);
    pf_edge_destroy(&full);
    pf_edge_destroy(&empty);
}

/* Timeouts --------------------------------------------------------------------------------- */

typedef struct delayed_pop {
    pf_edge *edge;
    int64_t delay_us;
    pf_status st;
} delayed_pop;

static void *delayed_popper(void *arg)
{
    delayed_pop *d = arg;
    sleep_us(d->delay_us);
    pf_item it;
    d->st = pf_edge_pop(d->edge, &it, PF_WAIT_FOREVER);
    if (d->st == PF_OK) pf_item_unref(&it);
    return NULL;
}

static void *delayed_pusher(void *arg)
{
    delayed_pop *d = arg;
    sleep_us(d->delay_us);
    pf_item it = make_item(0, 1000, -1);
    d->st = pf_edge_push(d->edge, &it, PF_WAIT_FOREVER);
    return NULL;
}

static void test_timeouts(void)
{
    int live0 = atomic_load(&g_live);
    pf_edge *e = make_edge(1, PF_EDGE_BLOCK, NULL);
    REQUIRE(e);
    pf_item it;
    /* Empty: pop 0 -> AGAIN at once; pop 30 ms -> TIMEOUT after >= 30 ms. */
    CHECK_EQ_INT(pf_edge_pop(e, &it, 0), PF_AGAIN);
    int64_t t0 = pf_time_ns();
    CHECK_EQ_INT(pf_edge_pop(e, &it, 30000), PF_TIMEOUT);
    int64_t dt = pf_time_ns() - t0;
    CHECK(dt >= 30000000);
    CHECK(dt < 3000000000LL);

    /* Full: push 0 -> AGAIN and the caller keeps its item; push 30 ms ->
     * TIMEOUT, item kept too. */
    pf_item a = make_item(0, 0, -1);
    CHECK_OK(pf_edge_push(e, &a, 0));
    pf_item b = make_item(0, 1, -1);
    pf_buffer *bb = b.tensor.buf;
    CHECK_EQ_INT(pf_edge_push(e, &b, 0), PF_AGAIN);
    CHECK(b.tensor.buf == bb && b.seq == 1);
    t0 = pf_time_ns();
    CHECK_EQ_INT(pf_edge_push(e, &b, 30000), PF_TIMEOUT);
    dt = pf_time_ns() - t0;
    CHECK(dt >= 30000000);
    CHECK(dt < 3000000000LL);
    CHECK(b.tensor.buf == bb && b.seq == 1);
    pf_edge_stats s = edge_stats(e);
    CHECK_EQ_INT(s.pushed, 1);
    CHECK_EQ_INT(s.dropped, 0);

    /* A timed push that a consumer unblocks mid-wait succeeds early. */
    delayed_pop d = {e, 20000, PF_ERR_INTERNAL};
    pf_thread th;
    CHECK_OK(pf_thread_start(&th, "edge-dpop", delayed_popper, &d));
    t0 = pf_time_ns();
    CHECK_OK(pf_edge_push(e, &b, 10000000));
    dt = pf_time_ns() - t0;
    pf_thread_join(th);
    CHECK_OK(d.st);
    CHECK(dt < 5000000000LL);
    CHECK(b.tensor.buf == NULL);

    /* A timed pop that a producer satisfies mid-wait succeeds early. */
    CHECK_OK(pf_edge_pop(e, &it, 0));
    CHECK_EQ_INT(it.seq, 1);
    pf_item_unref(&it);
    d = (delayed_pop){e, 20000, PF_ERR_INTERNAL};
    CHECK_OK(pf_thread_start(&th, "edge-dpush", delayed_pusher, &d));
    CHECK_OK(pf_edge_pop(e, &it, 10000000));
    CHECK_EQ_INT(it.seq, 1000);
    pf_item_unref(&it);
    pf_thread_join(th);
    CHECK_OK(d.st);

    /* Policies other than BLOCK never wait, whatever the timeout. */
    pf_edge *dn = make_edge(1, PF_EDGE_DROP_NEWEST, NULL);
    REQUIRE(dn);
    for (int i = 0; i < 3; i++) {
        pf_item x = make_item(0, i, -1);
        CHECK_OK(pf_edge_push(dn, &x, PF_WAIT_FOREVER));
    }
    CHECK_EQ_INT(edge_stats(dn).dropped, 2);
    pf_edge_destroy(&dn);

    pf_edge_destroy(&e);
    CHECK_EQ_INT(atomic_load(&g_live), live0);
}

/* pop_many ------------------------------------------------------------------------------- */

static void test_pop_many(void)
{
    int live0 = atomic_load(&g_live);
    pf_edge *e = make_edge(8, PF_EDGE_BLOCK, NULL);
    REQUIRE(e);
    pf_item out[10];
    CHECK_EQ_INT(pf_edge_pop_many(e, out, 10), 0);
    /* wrap the ring: push 6, pop 4, push 5 -> items 4..10 with head at 4 */
    for (int i = 0; i < 6; i++) {
        pf_item it = make_item(0, i, -1);
        CHECK_OK(pf_edge_push(e, &it, 0));
    }
    CHECK_EQ_INT(pf_edge_pop_many(e, out, 4), 4);
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_INT(out[i].seq, i);
        pf_item_unref(&out[i]);
    }
    for (int i = 6; i < 11; i++) {
        pf_item it = make_item(0, i, -1);
        CHECK_OK(pf_edge_push(e, &it, 0));
    }
    CHECK_EQ_INT(pf_edge_depth(e), 7);
    CHECK_EQ_INT(pf_edge_pop_many(e, out, 3), 3);
    CHECK_EQ_INT(pf_edge_pop_many(e, out + 3, 10), 4);
    for (int i = 0; i < 7; i++) {
        CHECK_EQ_INT(out[i].seq, 4 + i);
        pf_item_unref(&out[i]);
    }
    CHECK_EQ_INT(pf_edge_pop_many(e, out, 0), 0);
    CHECK_EQ_INT(pf_edge_pop_many(e, out, -1), 0);
    CHECK_EQ_INT(pf_edge_pop_many(e, NULL, 1), 0);
    pf_edge_stats s = edge_stats(e);
    CHECK_EQ_INT(s.pushed, 11);
    CHECK_EQ_INT(s.popped, 11);
    CHECK_EQ_INT(s.depth_max, 7);
    pf_edge_destroy(&e);
    CHECK_EQ_INT(atomic_load(&g_live), live0);
}

/* Fan-in hooks ------------------------------------------------------------------------------ */

typedef struct drop_log {
    int n;
    int64_t seq[16];
} drop_log;

static void on_drop(void *user, const pf_item *victim)
{
    drop_log *d = user;
    if (d->n < 16) d->seq[d->n] = victim->seq;
    d->n++;
}

typedef struct fanin_producer {
    pf_edge *e;
    int n;
    pf_thread th;
} fanin_producer;

static void *fanin_produce(void *arg)
{
    fanin_producer *f = arg;
    for (int i = 0; i < f->n; i++) {
        pf_item it = make_item(0, i, -1);
        if (pf_edge_push(f->e, &it, PF_WAIT_FOREVER) != PF_OK) break;
        if (i % 7 == 0) sched_yield();
    }
    pf_edge_close(f->e);
    return NULL;
}

static void test_fanin_hooks(void)
{
    int live0 = atomic_load(&g_live);
    pf_edge_notify nt;
    pf_edge_notify_init(&nt);
    drop_log dl = {0};
    pf_edge *a = make_edge(2, PF_EDGE_DROP_OLDEST, NULL);
    pf_edge *b = make_edge(2, PF_EDGE_BLOCK, NULL);
    REQUIRE(a && b);
    pf_edge_set_hooks(a, &nt, on_drop, &dl);
    pf_edge_set_hooks(b, &nt, on_drop, &dl);
    pf_edge_add_producer(a);
    pf_edge_add_producer(b);
    /* a push bumps the generation; a timed wait with it unchanged expires */
    uint64_t g = pf_edge_notify_gen(&nt);
    pf_item it = make_item(0, 0, -1);
    CHECK_OK(pf_edge_push(a, &it, 0));
    CHECK(pf_edge_notify_gen(&nt) != g);
    g = pf_edge_notify_gen(&nt);
    int64_t t0 = pf_time_ns();
    pf_edge_notify_wait(&nt, g, t0 + 20000000);
    CHECK(pf_time_ns() - t0 >= 19000000);
    pf_edge_notify_wait(&nt, g - 1, INT64_MAX); /* already changed: returns at once */
    /* drops: the hook sees each victim (seq 0, then 1), before release */
    for (int i = 1; i <= 3; i++) {
        it = make_item(0, i, -1);
        CHECK_OK(pf_edge_push(a, &it, 0));
    }
    CHECK_EQ_INT(dl.n, 2);
    CHECK_EQ_INT(dl.seq[0], 0);
    CHECK_EQ_INT(dl.seq[1], 1);
    /* take reports the end only once closed and empty */
    pf_item out[4];
    pf_status state;
    CHECK_EQ_INT(pf_edge_take(a, out, 1, &state), 1);
    CHECK_EQ_INT(state, PF_OK);
    pf_item_unref(&out[0]);
    g = pf_edge_notify_gen(&nt);
    pf_edge_close(a);
    CHECK(pf_edge_notify_gen(&nt) != g);
    CHECK_EQ_INT(pf_edge_take(a, out, 4, &state), 1);
    CHECK_EQ_INT(state, PF_EOF);
    pf_item_unref(&out[0]);
    CHECK_EQ_INT(pf_edge_take(b, out, 4, &state), 0);
    CHECK_EQ_INT(state, PF_OK);
    /* cancel wakes and reports */
    g = pf_edge_notify_gen(&nt);
    pf_edge_cancel(b);
    CHECK(pf_edge_notify_gen(&nt) != g);
    CHECK_EQ_INT(pf_edge_take(b, out, 4, &state), 0);
    CHECK_EQ_INT(state, PF_ERR_CANCELLED);
    pf_edge_destroy(&a);
    pf_edge_destroy(&b);

    /* Two producers, one consumer scanning both and sleeping on the
     * notifier: every item arrives, both ends are seen, no wake-up lost
     * (a lost one would hang here; the test's time limit catches it). */
    enum { N = 5000 };
    fanin_producer fp[2];
    for (int k = 0; k < 2; k++) {
        fp[k].e = make_edge(3, PF_EDGE_BLOCK, NULL);
        REQUIRE(fp[k].e);
        pf_edge_set_hooks(fp[k].e, &nt, NULL, NULL);
        pf_edge_add_producer(fp[k].e);
        fp[k].n = N;
    }
    for (int k = 0; k < 2; k++)
        CHECK_OK(pf_thread_start(&fp[k].th, "fanin", fanin_produce, &fp[k]));
    int got[2] = {0, 0}, ended = 0;
    bool order = true;
    while (ended < 2) {
        uint64_t seen = pf_edge_notify_gen(&nt);
        int took = 0;
        ended = 0;
        for (int k = 0; k < 2; k++) {
            int n = pf_edge_take(fp[k].e, out, 4, &state);
            for (int i = 0; i < n; i++) {
                order &= out[i].seq == got[k]++;
                pf_item_unref(&out[i]);
            }
            took += n;
            ended += state == PF_EOF;
        }
        if (!took && ended < 2) pf_edge_notify_wait(&nt, seen, INT64_MAX);
    }
    for (int k = 0; k < 2; k++) pf_thread_join(fp[k].th);
    CHECK_EQ_INT(got[0], N);
    CHECK_EQ_INT(got[1], N);
    CHECK(order);
    for (int k = 0; k < 2; k++) pf_edge_destroy(&fp[k].e);
    pf_edge_notify_destroy(&nt);
    CHECK_EQ_INT(atomic_load(&g_live), live0);
}

/* Mean depth on a fake clock --------------------------------------------------------------- */

static void set_now(int64_t t) { atomic_store(&g_fake_now, t); }

static void push_at(pf_edge *e, int64_t t, int seq)
{
    set_now(t);
    pf_item it = make_item(0, seq, -1);
    CHECK_OK(pf_edge_push(e, &it, 0));
}

static void pop_at(pf_edge *e, int64_t t)
{
    set_now(t);
    pf_item it;
    CHECK_OK(pf_edge_pop(e, &it, 0));
    pf_item_unref(&it);
}

static void test_mean_depth_fake_clock(void)
{
    pf_clock clock = {fake_now, NULL};
    set_now(0);
    pf_edge *e = make_edge(3, PF_EDGE_DROP_NEWEST, &clock);
    REQUIRE(e);
    set_now(500);
    CHECK(edge_stats(e).depth_mean == 0.0); /* nothing pushed yet */
    /* depth: 1 on [1000,1500), 2 on [1500,2000), 3 on [2000,4000) (a drop at
     * 3000 leaves it unchanged), 2 on [4000,5000), 0 on [5000,7000), 1 from 7000 */
    push_at(e, 1000, 0);
    push_at(e, 1500, 1);
    push_at(e, 2000, 2);
    push_at(e, 3000, 3); /* dropped: full */
    pop_at(e, 4000);
    set_now(5000);
    pf_item two[2];
    CHECK_EQ_INT(pf_edge_pop_many(e, two, 2), 2);
    pf_item_unref(&two[0]);
    pf_item_unref(&two[1]);
    push_at(e, 7000, 4);
    set_now(8000);
    /* area 1*500 + 2*500 + 3*2000 + 2*1000 + 0*2000 + 1*1000 = 10500 over 7000 */
    pf_edge_stats s = edge_stats(e);
    CHECK(s.depth_mean == 1.5);
    CHECK_EQ_INT(s.depth_max, 3);
    CHECK_EQ_INT(s.dropped, 1);
    if (s.depth_mean != 1.5) printf("  depth_mean %.17g, expected 1.5\n", s.depth_mean);
    /* the window grows with the clock while the edge is live */
    set_now(9000);
    CHECK(edge_stats(e).depth_mean == 1.4375); /* 11500 / 8000 */
    /* close, then the last pop at 11000 ends the window: 13500 / 10000 */
    pf_edge_close(e);
    pop_at(e, 11000);
    s = edge_stats(e);
    CHECK(s.depth_mean == 1.35);
    set_now(1000000); /* frozen after the end */
    CHECK(edge_stats(e).depth_mean == 1.35);
    pf_edge_destroy(&e);

    /* Cancel ends the window too: depth 2 from 100 to 300, cancelled at 300. */
    set_now(0);
    e = make_edge(4, PF_EDGE_BLOCK, &clock);
    REQUIRE(e);
    push_at(e, 100, 0);
    push_at(e, 100, 1);
    set_now(200);
    CHECK(edge_stats(e).depth_mean == 2.0);
    set_now(300);
    pf_edge_cancel(e);
    set_now(900);
    s = edge_stats(e);
    CHECK(s.depth_mean == 2.0);
    CHECK_EQ_INT(s.cancelled, 2);
    pf_edge_destroy(&e);

    /* The real clock (no now_ns): a mean between 0 and the capacity. */
    pf_clock real = {NULL, NULL};
    e = make_edge(4, PF_EDGE_BLOCK, &real);
    REQUIRE(e);
    for (int i = 0; i < 3; i++) {
        pf_item it = make_item(0, i, -1);
        CHECK_OK(pf_edge_push(e, &it, 0));
    }
    sleep_us(2000);
    s = edge_stats(e);
    CHECK(s.depth_mean > 0.0 && s.depth_mean <= 3.0);
    pf_edge_destroy(&e);
}

/* Destroy releases what is queued ------------------------------------------------------------ */

static void test_destroy_releases(void)
{
    int live0 = atomic_load(&g_live);
    const pf_edge_policy pol[] = {PF_EDGE_BLOCK, PF_EDGE_DROP_OLDEST, PF_EDGE_DROP_NEWEST,
                                  PF_EDGE_LATEST_ONLY};
    for (int k = 0; k < 4; k++) {
        pf_edge *e = make_edge(5, pol[k], NULL);
        REQUIRE(e);
        /* wrap the ring before destroying */
        for (int i = 0; i < 4; i++) {
            pf_item it = make_item(0, i, -1);
            CHECK_OK(pf_edge_push(e, &it, 0));
        }
        pf_item it;
        CHECK_OK(pf_edge_pop(e, &it, 0));
        pf_item_unref(&it);
        for (int i = 4; i < 7; i++) {
            it = make_item(0, i, -1);
            pf_status st = pf_edge_push(e, &it, 0);
            CHECK(st == PF_OK || (pol[k] == PF_EDGE_BLOCK && st == PF_AGAIN));
            if (st != PF_OK) pf_item_unref(&it);
        }
        CHECK(atomic_load(&g_live) > live0);
        pf_edge_destroy(&e);
        CHECK_EQ_INT(atomic_load(&g_live), live0);
    }
}

int main(void)
{
    PF_RUN(test_names_and_defaults);
    PF_RUN(test_create_errors);
    PF_RUN(test_invalid_item);
    PF_RUN(test_item_ref);
    PF_RUN(test_load_block);
    PF_RUN(test_load_drop_oldest);
    PF_RUN(test_load_drop_newest);
    PF_RUN(test_load_latest_only);
    PF_RUN(test_drop_exact_single_thread);
    PF_RUN(test_stalled_drop_oldest);
    PF_RUN(test_stalled_drop_newest);
    PF_RUN(test_latest_only_slow_consumer);
    PF_RUN(test_close_drain);
    PF_RUN(test_close_drain_threads);
    PF_RUN(test_cancel_wakes);
    PF_RUN(test_timeouts);
    PF_RUN(test_pop_many);
    PF_RUN(test_fanin_hooks);
    PF_RUN(test_mean_depth_fake_clock);
    PF_RUN(test_destroy_releases);
    CHECK_EQ_INT(atomic_load(&g_live), 0);
    return pf_test_finish();
}
