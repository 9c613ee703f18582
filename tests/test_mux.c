/* Many streams through one pipeline: fan-in, the stream muxer (`mux`), the
 * demux, streams joining and leaving while running, per-stream statistics.
 *
 * Cases: per-edge fairness with one flooding stream (the slow streams finish
 * while the flooder has had about its fair share, order within each stream
 * kept, source ids kept); the batch timeout counted from the first frame of
 * the batch on a live pipeline (a partial batch leaves while the sources are
 * stalled, not before the timeout); drain when every source has ended (a
 * long timeout never holds the last items back); a source that ends early
 * leaves while the others go on; a source joining a running mux (and the
 * refusals: output of a running stage, after the mux's input ended); a
 * failing source that leaves (source_errors_leave, YAML on_error) while
 * the others finish;
 * cancel and a failing stage with several inputs; demux routing by source
 * id with an unmapped stream dropped and counted, and `unmapped: error`;
 * latency mode keeps the freshest frame per stream and counts each
 * stream's drops; per-stream statistics, table and JSON; ordered threads
 * behind a fan-in; a transfer inserted per input edge; 16 streams into a
 * 3-worker ordered muxer with 4 joining while running; tracing and the
 * GPU readiness path with several inputs; the examples/multistream.yaml pipeline (YAML `inputs:`,
 * mux and demux) when YAML support is built. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "device/backend.h"
#include "pipeline/pipeline_impl.h"
#include "pf_test.h"

static void sleep_us(int64_t us)
{
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* Recording sink ---------------------------------------------------------------------- */

#define REC_MAX 20000

typedef struct rec {
    pthread_mutex_t mu;
    int32_t source[REC_MAX];
    int64_t seq[REC_MAX];
    int batch[REC_MAX];        /* process call number of each item */
    int n, calls;
    int64_t sleep_us;          /* per call */
    atomic_int seen;
    atomic_int gate;           /* 1: the first call waits until it is 0 */
} rec;

static void rec_init(rec *r, int64_t sleep)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    r->sleep_us = sleep;
}

static void rec_fini(rec *r) { pthread_mutex_destroy(&r->mu); }

/* Records, then passes the items on (a sink when the stage has no output). */
static pf_status rec_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    rec *r = user;
    while (atomic_load(&r->gate)) sleep_us(1000);
    if (r->sleep_us) sleep_us(r->sleep_us);
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < n; i++) {
        if (r->n < REC_MAX) {
            r->source[r->n] = items[i].source;
            r->seq[r->n] = items[i].seq;
            r->batch[r->n] = r->calls;
            r->n++;
        }
    }
    r->calls++;
    pthread_mutex_unlock(&r->mu);
    atomic_fetch_add(&r->seen, n);
    pf_status st = PF_OK;
    for (int i = 0; i < n; i++) {
        if (st == PF_OK) st = pf_stage_emit(ctx, &items[i]);
        else pf_item_unref(&items[i]);
    }
    return st;
}

/* A recording stage's description (batching max_batch / delay_us). */
static pf_stage_desc rec_desc(const char *name, rec *r, int max_batch, int64_t delay_us)
{
    pf_stage_desc d = pf_stage_desc_default();
    d.name = name;
    d.process = rec_process;
    d.user = r;
    d.batch.max_batch = max_batch;
    d.batch.max_delay_us = delay_us;
    return d;
}

static pf_stage *add_rec(pf_pipeline *p, const char *name, rec *r, int max_batch,
                         int64_t delay_us)
{
    pf_stage_desc d = rec_desc(name, r, max_batch, delay_us);
    pf_stage *s = NULL;
    CHECK_OK(pf_pipeline_add_stage(p, &d, &s));
    return s;
}

/* Items of `source` in the record, in order; false if their seqs are not
 * 0, 1, 2, ... (order within a stream) or the count differs. */
static bool stream_in_order(const rec *r, int32_t source, int64_t expect)
{
    int64_t next = 0;
    for (int i = 0; i < r->n; i++) {
        if (r->source[i] != source) continue;
        if (r->seq[i] != next) {
            fprintf(stderr, "  stream %d: seq %lld where %lld was due\n", (int)source,
                    (long long)r->seq[i], (long long)next);
            return false;
        }
        next++;
    }
    if (next != expect)
        fprintf(stderr, "  stream %d: %lld items, expected %lld\n", (int)source, (long long)next,
                (long long)expect);
    return next == expect;
}

/* Built-in stages ------------------------------------------------------------------------ */

static pf_stage *add_builtin(pf_pipeline *p, const char *type, const char *name,
                             pf_stage_param *kv, int n)
{
    pf_stage_config cfg = {.name = name, .params = kv, .num_params = n};
    pf_stage_desc d;
    pf_status st = pf_stage_builtin(type, &cfg, &d);
    CHECK_OK(st);
    if (st != PF_OK) return NULL;
    pf_stage *s = NULL;
    st = pf_pipeline_add_stage(p, &d, &s);
    CHECK_OK(st);
    if (st != PF_OK && d.destroy) d.destroy(d.user);
    return s;
}

/* A small synthetic source: `source` id, `count` frames (0 endless), `fps`. */
static pf_stage *add_cam(pf_pipeline *p, const char *name, int source, int64_t count, double fps)
{
    char src[16], cnt[24], f[32];
    snprintf(src, sizeof src, "%d", source);
    snprintf(cnt, sizeof cnt, "%lld", (long long)count);
    snprintf(f, sizeof f, "%g", fps);
    pf_stage_param kv[] = {{"width", "16", 0},  {"height", "8", 0}, {"format", "gray8", 0},
                           {"source", src, 0},  {"count", cnt, 0},  {"fps", f, 0},
                           {"pool", "256", 0}};
    return add_builtin(p, "source.synthetic", name, kv, 7);
}

static void connect(pf_pipeline *p, pf_stage *a, pf_stage *b, int cap, pf_edge_policy pol)
{
    pf_edge_params ep = pf_edge_params_default();
    ep.capacity = cap;
    ep.policy = pol;
    CHECK_OK(pf_pipeline_connect(p, a, b, &ep));
}

static pf_pipeline *new_pipeline(const char *name, pf_pipeline_mode mode)
{
    pf_pipeline_params pp = pf_pipeline_params_default();
    pp.name = name;
    pp.mode = mode;
    pf_pipeline *p = NULL;
    CHECK_OK(pf_pipeline_create(&pp, &p));
    return p;
}

static const pf_stream_stats *find_stream(const pf_pipeline_stats *s, int32_t source)
{
    for (int i = 0; i < s->num_streams; i++)
        if (s->streams[i].source == source) return &s->streams[i];
    return NULL;
}

static const pf_stage_stats *find_stage(const pf_pipeline_stats *s, const char *name)
{
    for (int i = 0; i < s->num_stages; i++)
        if (!strcmp(s->stages[i].name, name)) return &s->stages[i];
    return NULL;
}

/* Cases --------------------------------------------------------------------------------- */

/* flood (source 0, deep edge) + slow1..3 -> mux (batch 4, `threads`
 * ordered workers, recording into r) -> sink (recording into out). */
static pf_pipeline *fairness_pipeline(int threads, int64_t slow, int64_t flood, rec *r, rec *out)
{
    pf_pipeline *p = new_pipeline("fair", PF_MODE_CUSTOM);
    if (!p) return NULL;
    pf_stage_desc d = rec_desc("mux", r, 4, 0);
    d.threads = threads;
    d.ordered = true; /* ordered workers behind a fan-in keep each stream's order */
    pf_stage *mux = NULL;
    CHECK_OK(pf_pipeline_add_stage(p, &d, &mux));
    pf_stage *sink = add_rec(p, "sink", out, 1, 0);
    connect(p, add_cam(p, "flood", 0, flood, 0), mux, 64, PF_EDGE_BLOCK);
    for (int k = 1; k <= 3; k++) {
        char name[16];
        snprintf(name, sizeof name, "slow%d", k);
        connect(p, add_cam(p, name, k, slow, 0), mux, (int)slow, PF_EDGE_BLOCK);
    }
    connect(p, mux, sink, 16, PF_EDGE_BLOCK);
    return p;
}

static void test_fairness_flooding_stream(void)
{
    /* One flooding stream (deep edge, many frames) and three slow ones, all
     * unpaced so every edge always has frames waiting: each batch of 4 takes
     * one frame per stream, so the slow streams finish while the flooder has
     * had about their share, not the flood's. */
    const int64_t slow = 30, flood = 3000;
    for (int threads = 1; threads <= 2; threads++) {
        rec r, out;
        rec_init(&r, 0);
        rec_init(&out, 0);
        /* The muxer's first call waits until every edge is full, so from
         * then on all streams have frames waiting whatever the scheduler
         * does: the batches are then the fairness rule's alone. */
        atomic_store(&r.gate, 1);
        pf_pipeline *p = fairness_pipeline(threads, slow, flood, &r, &out);
        REQUIRE(p);
        CHECK_OK(pf_pipeline_start(p));
        for (int i = 0; i < 10000; i++) {
            pf_pipeline_stats st;
            CHECK_OK(pf_pipeline_get_stats(p, &st));
            int full = 0;
            for (int k = 0; k < st.num_edges; k++)
                full += strcmp(st.edges[k].to, "mux") == 0 &&
                        st.edges[k].pushed >= (uint64_t)st.edges[k].capacity;
            if (full == 4) break;
            sleep_us(1000);
        }
        atomic_store(&r.gate, 0);
        CHECK_OK(pf_pipeline_wait(p, 60 * 1000000));
        CHECK_EQ_INT(out.n, flood + 3 * slow);
        for (int k = 0; k <= 3; k++) CHECK(stream_in_order(&out, k, k ? slow : flood));
        if (threads == 1) {
            /* flooder frames processed before the last slow frame */
            int last_slow = -1;
            for (int i = 0; i < r.n; i++)
                if (r.source[i] != 0) last_slow = i;
            int flood_before = 0;
            for (int i = 0; i < last_slow; i++) flood_before += r.source[i] == 0;
            printf("  flooder frames before the last slow frame: %d (slow streams %lld each)\n",
                   flood_before, (long long)slow);
            CHECK(last_slow >= 0);
            /* fair share: one per batch while the slow streams have frames
             * waiting (draining the flooder's edge first and batching in
             * arrival order gives its whole edge, 64, ahead of them) */
            CHECK(flood_before <= slow + 4);
        }
        pf_pipeline_destroy(&p);
        rec_fini(&r);
        rec_fini(&out);
    }
}

/* A source that emits `n` frames, then waits for the gate, then ends. */
typedef struct stall_src {
    int32_t source;
    int n, made;
    pf_buffer *buf;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool open;
} stall_src;

static pf_status stall_source(void *user, pf_stage_ctx *ctx, pf_item *out)
{
    (void)ctx;
    stall_src *s = user;
    if (s->made == s->n) {
        pthread_mutex_lock(&s->mu);
        while (!s->open) pthread_cond_wait(&s->cv, &s->mu);
        pthread_mutex_unlock(&s->mu);
        return PF_EOF;
    }
    int64_t shape[1] = {4};
    pf_status st = pf_tensor_wrap(&out->tensor, s->buf, 0, PF_DTYPE_U8, 1, shape, NULL,
                                  PF_LAYOUT_NONE);
    out->source = s->source;
    out->seq = s->made++;
    return st;
}

static void stall_open(stall_src *s)
{
    pthread_mutex_lock(&s->mu);
    s->open = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void test_timeout_from_first_frame(void)
{
    /* Two streams send 3 frames each and stall. The mux (batch 8, timeout
     * 150 ms) must send them as a partial batch once 150 ms have passed
     * since the first of them - not before, and not only at the end. */
    pf_buffer *buf = NULL;
    REQUIRE(pf_buffer_alloc_host(64, &buf) == PF_OK);
    stall_src ss[2];
    pf_pipeline *p = new_pipeline("timeout", PF_MODE_CUSTOM);
    REQUIRE(p);
    rec r;
    rec_init(&r, 0);
    pf_stage *mux = add_rec(p, "mux", &r, 8, 150000);
    for (int k = 0; k < 2; k++) {
        memset(&ss[k], 0, sizeof ss[k]);
        ss[k].source = 10 + k;
        ss[k].n = 3;
        ss[k].buf = buf;
        pthread_mutex_init(&ss[k].mu, NULL);
        pthread_cond_init(&ss[k].cv, NULL);
        pf_stage_desc d = pf_stage_desc_default();
        char name[16];
        snprintf(name, sizeof name, "cam%d", k);
        d.name = name;
        d.source = stall_source;
        d.user = &ss[k];
        pf_stage *s = NULL;
        CHECK_OK(pf_pipeline_add_stage(p, &d, &s));
        connect(p, s, mux, 8, PF_EDGE_BLOCK);
    }
    int64_t t0 = pf_time_ns();
    CHECK_OK(pf_pipeline_start(p));
    sleep_us(60000);
    CHECK_EQ_INT(atomic_load(&r.seen), 0); /* 60 ms < 150 ms: still collecting */
    int64_t t_batch = 0;
    while (pf_time_ns() - t0 < 5000000000LL) {
        if (atomic_load(&r.seen) > 0) {
            t_batch = pf_time_ns();
            break;
        }
        sleep_us(1000);
    }
    CHECK_EQ_INT(atomic_load(&r.seen), 6);
    CHECK_EQ_INT(r.calls, 1);
    CHECK(t_batch - t0 >= 150000000LL);
    printf("  partial batch of 6 after %.1f ms (timeout 150 ms)\n", (double)(t_batch - t0) / 1e6);
    for (int k = 0; k < 2; k++) stall_open(&ss[k]);
    CHECK_OK(pf_pipeline_wait(p, 10 * 1000000));
    CHECK(stream_in_order(&r, 10, 3) && stream_in_order(&r, 11, 3));
    pf_pipeline_destroy(&p);
    for (int k = 0; k < 2; k++) {
        pthread_mutex_destroy(&ss[k].mu);
        pthread_cond_destroy(&ss[k].cv);
    }
    rec_fini(&r);
    pf_buffer_unref(&buf);
}

static void test_drain_and_leave(void)
{
    /* Streams of different lengths; the mux's timeout (10 s) is far longer
     * than the run: the streams that end early just leave, and the last
     * items go as soon as every input has ended. */
    pf_pipeline *p = new_pipeline("drain", PF_MODE_CUSTOM);
    REQUIRE(p);
    rec r;
    rec_init(&r, 0);
    pf_stage_param kv[] = {{"batch_size", "8", 0}, {"timeout_us", "10000000", 0}};
    pf_stage *mux = add_builtin(p, "mux", "mux", kv, 2);
    pf_stage *sink = add_rec(p, "sink", &r, 1, 0);
    REQUIRE(mux && sink);
    const int64_t counts[4] = {5, 50, 123, 7};
    for (int k = 0; k < 4; k++) {
        char name[16];
        snprintf(name, sizeof name, "cam%d", k);
        connect(p, add_cam(p, name, k, counts[k], k == 2 ? 500 : 0), mux, 4, PF_EDGE_BLOCK);
    }
    connect(p, mux, sink, 8, PF_EDGE_BLOCK);
    int64_t t0 = pf_time_ns();
    CHECK_OK(pf_pipeline_start(p));
    CHECK_OK(pf_pipeline_wait(p, 30 * 1000000));
    double s = (double)(pf_time_ns() - t0) / 1e9;
    CHECK(s < 8); /* not held for the 10 s timeout */
    for (int k = 0; k < 4; k++) CHECK(stream_in_order(&r, k, counts[k]));
    pf_pipeline_stats st;
    CHECK_OK(pf_pipeline_get_stats(p, &st));
    CHECK_EQ_INT(st.num_streams, 4);
    for (int k = 0; k < 4; k++) {
        const pf_stream_stats *ss = find_stream(&st, k);
        REQUIRE(ss);
        CHECK_EQ_INT(ss->items_in, counts[k]);
        CHECK_EQ_INT(ss->items_out, counts[k]);
        CHECK_EQ_INT(ss->dropped, 0);
        CHECK(ss->e2e_p50_us > 0 && ss->e2e_p99_us >= ss->e2e_p50_us);
    }
    /* the paced stream (500 fps) reports about its rate (loosely: a loaded
     * machine delays frames, never speeds the pacing up) */
    const pf_stream_stats *paced = find_stream(&st, 2);
    CHECK(paced && paced->fps > 100 && paced->fps < 700);
    printf("  paced stream: %.0f fps (500 asked)\n", paced ? paced->fps : 0);
    const pf_stage_stats *ms = find_stage(&st, "mux");
    CHECK(ms && ms->batch_hist[8] > 0);
    /* the table and the JSON carry the streams */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    REQUIRE(f);
    CHECK_OK(pf_pipeline_print_stats(p, f));
    CHECK_OK(pf_pipeline_write_stats_json(p, f));
    fclose(f);
    CHECK(strstr(buf, "stream ") != NULL);
    CHECK(strstr(buf, "\"streams\":[{\"source\":0,\"items_in\":5,\"items_out\":5,\"dropped\":0") !=
          NULL);
    free(buf);
    pf_pipeline_destroy(&p);
    rec_fini(&r);
}

static void test_join_while_running(void)
{
    /* cam0 runs paced; cam1 and cam2 join the running mux; cam2 ends
     * early (leaves); the pipeline ends when all have. */
    pf_pipeline *p = new_pipeline("join", PF_MODE_CUSTOM);
    REQUIRE(p);
    rec r;
    rec_init(&r, 0);
    pf_stage_param kv[] = {{"batch_size", "4", 0}, {"timeout_us", "2000", 0}};
    pf_stage *mux = add_builtin(p, "mux", "mux", kv, 2);
    pf_stage *sink = add_rec(p, "sink", &r, 1, 0);
    pf_stage *cam0 = add_cam(p, "cam0", 0, 300, 1000);
    REQUIRE(mux && sink && cam0);
    connect(p, cam0, mux, 4, PF_EDGE_BLOCK);
    connect(p, mux, sink, 8, PF_EDGE_BLOCK);
    CHECK_EQ_INT(pf_pipeline_start_added(p), PF_ERR_INVALID); /* not running yet */
    CHECK_OK(pf_pipeline_start(p));
    sleep_us(30000);
    CHECK_EQ_INT(pf_pipeline_start_added(p), PF_ERR_INVALID); /* nothing added */
    pf_stage *cam1 = add_cam(p, "cam1", 1, 100, 0);
    pf_stage *cam2 = add_cam(p, "cam2", 2, 10, 0);
    REQUIRE(cam1 && cam2);
    /* a running stage cannot gain an output */
    pf_edge_params ep = pf_edge_params_default();
    CHECK_EQ_INT(pf_pipeline_connect(p, cam0, sink, &ep), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "'cam0' is running") != NULL);
    connect(p, cam1, mux, 4, PF_EDGE_BLOCK);
    connect(p, cam2, mux, 4, PF_EDGE_BLOCK);
    CHECK_OK(pf_pipeline_start_added(p));
    int seen_before_end = 0;
    pf_pipeline_stats st;
    for (int i = 0; i < 2000; i++) {
        CHECK_OK(pf_pipeline_get_stats(p, &st)); /* while stages are being added/run */
        const pf_stream_stats *s2 = find_stream(&st, 2);
        if (s2 && s2->items_out == 10) {
            const pf_stream_stats *s0 = find_stream(&st, 0);
            seen_before_end = s0 && s0->items_out < 300;
            break;
        }
        sleep_us(1000);
    }
    CHECK(seen_before_end); /* cam2 left while cam0 went on */
    CHECK_OK(pf_pipeline_wait(p, 30 * 1000000));
    CHECK(stream_in_order(&r, 0, 300));
    CHECK(stream_in_order(&r, 1, 100));
    CHECK(stream_in_order(&r, 2, 10));
    CHECK_OK(pf_pipeline_get_stats(p, &st));
    CHECK_EQ_INT(st.num_streams, 3);
    CHECK_EQ_INT(st.items_completed, 410);
    /* after the end: nothing joins */
    CHECK_EQ_INT(pf_pipeline_add_stage(p, &(pf_stage_desc){0}, NULL), PF_ERR_INVALID);
    pf_pipeline_destroy(&p);
    rec_fini(&r);

    /* A mux whose input has ended takes no new stream. */
    p = new_pipeline("ended", PF_MODE_CUSTOM);
    REQUIRE(p);
    rec r2, hold;
    rec_init(&r2, 0);
    rec_init(&hold, 0);
    pf_stage *m2 = add_rec(p, "mux", &r2, 1, 0);
    pf_stage *other = add_rec(p, "other", &hold, 1, 0);
    pf_stage *c0 = add_cam(p, "cam0", 0, 3, 0);
    pf_stage *c9 = add_cam(p, "cam9", 9, 0, 50); /* endless: keeps the pipeline running */
    REQUIRE(m2 && other && c0 && c9);
    connect(p, c0, m2, 4, PF_EDGE_BLOCK);
    connect(p, c9, other, 4, PF_EDGE_BLOCK);
    CHECK_OK(pf_pipeline_start(p));
    for (int i = 0; i < 2000 && atomic_load(&r2.seen) < 3; i++) sleep_us(1000);
    sleep_us(20000);
    pf_stage *late = add_cam(p, "late", 5, 3, 0);
    REQUIRE(late);
    CHECK_EQ_INT(pf_pipeline_connect(p, late, m2, &ep), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "has finished") != NULL ||
          strstr(pf_last_error(), "has ended") != NULL);
    pf_pipeline_cancel(p);
    CHECK_EQ_INT(pf_pipeline_wait(p, 10 * 1000000), PF_ERR_CANCELLED);
    pf_pipeline_destroy(&p); /* the never-started `late` is freed too */
    rec_fini(&r2);
    rec_fini(&hold);
}

static void test_cancel_and_error_with_inputs(void)
{
    /* cancel: four endless streams into a mux */
    pf_pipeline *p = new_pipeline("cancel", PF_MODE_CUSTOM);
    REQUIRE(p);
    rec r;
    rec_init(&r, 0);
    pf_stage *mux = add_rec(p, "mux", &r, 4, 1000);
    for (int k = 0; k < 4; k++) {
        char name[16];
        snprintf(name, sizeof name, "cam%d", k);
        connect(p, add_cam(p, name, k, 0, k ? 200 : 0), mux, 2, PF_EDGE_BLOCK);
    }
    CHECK_OK(pf_pipeline_start(p));
    for (int i = 0; i < 2000 && atomic_load(&r.seen) < 50; i++) sleep_us(1000);
    pf_pipeline_cancel(p);
    CHECK_EQ_INT(pf_pipeline_wait(p, 10 * 1000000), PF_ERR_CANCELLED);
    pf_pipeline_destroy(&p);
    rec_fini(&r);

    /* error: a failing stage behind the mux stops every stream */
    p = new_pipeline("error", PF_MODE_CUSTOM);
    REQUIRE(p);
    pf_stage_param kv[] = {{"batch_size", "4", 0}};
    mux = add_builtin(p, "mux", "mux", kv, 1);
    pf_stage_param fk[] = {{"at", "20", 0}};
    pf_stage *boom = add_builtin(p, "stage.fail", "boom", fk, 1);
    pf_stage_param nk[] = {{"print", "false", 0}};
    pf_stage *sink = add_builtin(p, "sink.null", "sink", nk, 1);
    REQUIRE(mux && boom && sink);
    for (int k = 0; k < 3; k++) {
        char name[16];
        snprintf(name, sizeof name, "cam%d", k);
        connect(p, add_cam(p, name, k, 0, 0), mux, 2, PF_EDGE_BLOCK);
    }
    connect(p, mux, boom, 4, PF_EDGE_BLOCK);
    connect(p, boom, sink, 4, PF_EDGE_BLOCK);
    CHECK_OK(pf_pipeline_start(p));
    CHECK_EQ_INT(pf_pipeline_wait(p, 10 * 1000000), PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "stage boom: item (source ") != NULL);
    pf_pipeline_destroy(&p);
}

/* A source that makes `n` tensors of source id `source`, then fails. */
typedef struct failing_src {
    int32_t source;
    int n, made;
    pf_buffer *buf;
} failing_src;

static pf_status failing_source(void *user, pf_stage_ctx *ctx, pf_item *out)
{
    (void)ctx;
    failing_src *s = user;
    if (s->made == s->n) return pf_set_error(PF_ERR_IO, "camera %d: connection lost", s->source);
    int64_t shape[1] = {4};
    out->source = s->source;
    out->seq = s->made++;
    return pf_tensor_wrap(&out->tensor, s->buf, 0, PF_DTYPE_U8, 1, shape, NULL, PF_LAYOUT_NONE);
}

static void test_failing_source_leaves(void)
{
    /* With source_errors_leave a failing source's stream ends; the others
     * go on to their end and the run succeeds. Without it the run stops. */
    pf_buffer *buf = NULL;
    REQUIRE(pf_buffer_alloc_host(64, &buf) == PF_OK);
    for (int leave = 1; leave >= 0; leave--) {
        pf_pipeline *p = new_pipeline("flaky", PF_MODE_CUSTOM);
        REQUIRE(p);
        rec r;
        rec_init(&r, 0);
        pf_stage *mux = add_rec(p, "mux", &r, 4, 1000);
        /* first: a source id 0 left to the runtime is the ordinal (pipeline.h) */
        connect(p, add_cam(p, "cam0", 0, 200, 2000), mux, 4, PF_EDGE_BLOCK);
        failing_src fs = {7, 5, 0, buf};
        pf_stage_desc d = pf_stage_desc_default();
        d.name = "flaky";
        d.source = failing_source;
        d.user = &fs;
        d.source_errors_leave = leave;
        pf_stage *fl = NULL;
        CHECK_OK(pf_pipeline_add_stage(p, &d, &fl));
        connect(p, fl, mux, 4, PF_EDGE_BLOCK);
        CHECK_OK(pf_pipeline_start(p));
        pf_status st = pf_pipeline_wait(p, 30 * 1000000);
        if (leave) {
            CHECK_OK(st);
            CHECK(stream_in_order(&r, 7, 5));
            CHECK(stream_in_order(&r, 0, 200));
            pf_pipeline_stats ps;
            CHECK_OK(pf_pipeline_get_stats(p, &ps));
            const pf_stage_stats *fss = find_stage(&ps, "flaky");
            CHECK(fss && fss->errors == 1);
        } else {
            CHECK_EQ_INT(st, PF_ERR_IO);
            CHECK(strstr(pf_last_error(), "camera 7: connection lost") != NULL);
        }
        pf_pipeline_destroy(&p);
        rec_fini(&r);
    }
    pf_buffer_unref(&buf);

    /* YAML: on_error is for sources, stop|leave */
    const char *bad[] = {
        "stages:\n  - {name: c, type: source.synthetic, on_error: retry}\n"
        "  - {name: o, type: sink.null}\n",
        "stages:\n  - {name: c, type: source.synthetic}\n"
        "  - {name: o, type: sink.null, on_error: leave}\n"};
    const char *want[] = {"on_error 'retry': expected stop|leave",
                          "'on_error' applies to sources only"};
    for (int i = 0; i < 2; i++) {
        pf_pipeline_yaml_params yp = pf_pipeline_yaml_params_default();
        yp.path = "t.yaml";
        yp.text = bad[i];
        yp.text_len = strlen(bad[i]);
        pf_pipeline *p = NULL;
        pf_status st = pf_pipeline_create_from_yaml(&yp, &p);
        if (st == PF_ERR_UNSUPPORTED) break;
        CHECK_EQ_INT(st, PF_ERR_FORMAT);
        CHECK(strstr(pf_last_error(), want[i]) != NULL);
        if (!strstr(pf_last_error(), want[i])) printf("  got: %s\n", pf_last_error());
    }
}

static void test_demux_routing(void)
{
    /* streams 0..2 routed by name and index; stream 3 has no route */
    pf_pipeline *p = new_pipeline("demux", PF_MODE_CUSTOM);
    REQUIRE(p);
    rec out[3];
    pf_stage_param mk[] = {{"batch_size", "4", 0}, {"timeout_us", "1000", 0}};
    pf_stage *mux = add_builtin(p, "mux", "mux", mk, 2);
    pf_stage_param dk[] = {{"routes", "0:out0, 1:out1,2:2", 0}};
    pf_stage *dmx = add_builtin(p, "demux", "demux", dk, 1);
    REQUIRE(mux && dmx);
    connect(p, mux, dmx, 8, PF_EDGE_BLOCK);
    for (int k = 0; k < 3; k++) {
        char name[16];
        snprintf(name, sizeof name, "out%d", k);
        rec_init(&out[k], 0);
        connect(p, dmx, add_rec(p, name, &out[k], 1, 0), 8, PF_EDGE_BLOCK);
    }
    const int64_t counts[4] = {40, 25, 60, 9};
    for (int k = 0; k < 4; k++) {
        char name[16];
        snprintf(name, sizeof name, "cam%d", k);
        connect(p, add_cam(p, name, k, counts[k], 0), mux, 4, PF_EDGE_BLOCK);
    }
    CHECK_OK(pf_pipeline_start(p));
    CHECK_OK(pf_pipeline_wait(p, 30 * 1000000));
    for (int k = 0; k < 3; k++) {
        CHECK_EQ_INT(out[k].n, counts[k]); /* only its own stream */
        CHECK(stream_in_order(&out[k], k, counts[k]));
    }
    pf_pipeline_stats st;
    CHECK_OK(pf_pipeline_get_stats(p, &st));
    const pf_stage_stats *ds = find_stage(&st, "demux");
    CHECK(ds && ds->dropped == 9);
    const pf_stream_stats *s3 = find_stream(&st, 3);
    CHECK(s3 && s3->items_in == 9 && s3->dropped == 9 && s3->items_out == 0);
    pf_pipeline_destroy(&p);
    for (int k = 0; k < 3; k++) rec_fini(&out[k]);

    /* unmapped: error stops the pipeline naming the stream; a route to a
     * stage that is not an output fails the start of the demux */
    for (int variant = 0; variant < 2; variant++) {
        p = new_pipeline("demux2", PF_MODE_CUSTOM);
        REQUIRE(p);
        pf_stage_param ek[] = {{"routes", variant ? "0:nowhere" : "0:sink", 0},
                               {"unmapped", "error", 0}};
        dmx = add_builtin(p, "demux", "demux", ek, 2);
        pf_stage_param nk[] = {{"print", "false", 0}};
        pf_stage *sink = add_builtin(p, "sink.null", "sink", nk, 1);
        REQUIRE(dmx && sink);
        connect(p, add_cam(p, "cam0", 0, 5, 0), dmx, 4, PF_EDGE_BLOCK);
        connect(p, add_cam(p, "cam7", 7, 5, 0), dmx, 4, PF_EDGE_BLOCK);
        connect(p, dmx, sink, 4, PF_EDGE_BLOCK);
        CHECK_OK(pf_pipeline_start(p));
        pf_status st2 = pf_pipeline_wait(p, 10 * 1000000);
        if (variant == 0) {
            CHECK_EQ_INT(st2, PF_ERR_INVALID);
            CHECK(strstr(pf_last_error(), "stream 7 has no route") != NULL);
        } else {
            CHECK_EQ_INT(st2, PF_ERR_INVALID);
            CHECK(strstr(pf_last_error(), "route 0:nowhere") != NULL);
        }
        pf_pipeline_destroy(&p);
    }
    /* bad routes fail when the stage is made */
    const char *bad[] = {"0", "x:out", "0:a,0:b", "-1:a", "0:"};
    for (int i = 0; i < 5; i++) {
        pf_stage_param bk[] = {{"routes", bad[i], 0}};
        pf_stage_config cfg = {.name = "d", .params = bk, .num_params = 1};
        pf_stage_desc d;
        CHECK_EQ_INT(pf_stage_builtin("demux", &cfg, &d), PF_ERR_INVALID);
        CHECK(strstr(pf_last_error(), "stage 'd' (demux): routes: ") != NULL);
    }
}

static void test_latency_mode_per_stream_drops(void)
{
    /* Latency mode: each source's edge keeps only its freshest frame; a slow
     * consumer makes each stream drop, counted per stream. */
    pf_pipeline *p = new_pipeline("latency", PF_MODE_LATENCY);
    REQUIRE(p);
    rec r;
    rec_init(&r, 2000);
    pf_stage *mux = add_rec(p, "mux", &r, 4, 0);
    REQUIRE(mux);
    /* stream 2 passes a per-stream stage first: the mux's edge from it is
     * made latest_only too (one edge per stream into a muxer) */
    rec pre;
    rec_init(&pre, 0);
    pf_stage *pre2 = add_rec(p, "pre2", &pre, 1, 0);
    for (int k = 0; k < 3; k++) {
        char name[16];
        snprintf(name, sizeof name, "cam%d", k);
        pf_stage *cam = add_cam(p, name, k, 200, 2000);
        if (k == 2) {
            connect(p, cam, pre2, 8, PF_EDGE_BLOCK);
            cam = pre2;
        }
        connect(p, cam, mux, 8, PF_EDGE_BLOCK);
    }
    CHECK_OK(pf_pipeline_start(p));
    CHECK_OK(pf_pipeline_wait(p, 30 * 1000000));
    pf_pipeline_stats st;
    CHECK_OK(pf_pipeline_get_stats(p, &st));
    uint64_t drops = 0;
    for (int k = 0; k < 3; k++) {
        const pf_stream_stats *s = find_stream(&st, k);
        REQUIRE(s);
        CHECK_EQ_INT(s->items_in, 200);
        CHECK_EQ_INT(s->items_in, s->items_out + s->dropped);
        CHECK(s->dropped > 0);
        drops += s->dropped;
        /* freshest kept: what arrives is in order, with gaps */
        int64_t last = -1;
        bool ordered = true;
        for (int i = 0; i < r.n; i++)
            if (r.source[i] == k) {
                ordered &= r.seq[i] > last;
                last = r.seq[i];
            }
        CHECK(ordered);
    }
    CHECK_EQ_INT(drops, st.dropped);
    const pf_stage_stats *ms = find_stage(&st, "mux");
    CHECK(ms && ms->batch_hist[1] == ms->batches); /* batching off in latency mode */
    for (int i = 0; i < st.num_edges; i++) CHECK_EQ_INT(st.edges[i].policy, PF_EDGE_LATEST_ONLY);
    pf_pipeline_destroy(&p);
    rec_fini(&r);
    rec_fini(&pre);
}

static void test_transfer_per_input_edge(void)
{
    /* A muxer that takes device memory (the CPU device standing in): each
     * host input edge gets its own transfer; streams stay whole. */
    pf_pipeline *p = new_pipeline("xfer", PF_MODE_CUSTOM);
    REQUIRE(p);
    rec r, out;
    rec_init(&r, 0);
    rec_init(&out, 0);
    pf_stage_desc d = rec_desc("mux", &r, 4, 1000);
    d.device = pf_cpu_device();
    d.accepts = d.produces = PF_MEM_DEVICE;
    pf_stage *mux = NULL, *sink = NULL;
    CHECK_OK(pf_pipeline_add_stage(p, &d, &mux));
    d.name = "sink";
    d.user = &out;
    d.batch.max_batch = 1;
    CHECK_OK(pf_pipeline_add_stage(p, &d, &sink));
    REQUIRE(mux && sink);
    connect(p, add_cam(p, "cam0", 0, 40, 0), mux, 4, PF_EDGE_BLOCK);
    connect(p, add_cam(p, "cam1", 1, 30, 0), mux, 2, PF_EDGE_DROP_NEWEST);
    connect(p, mux, sink, 4, PF_EDGE_BLOCK);
    CHECK_OK(pf_pipeline_start(p));
    CHECK_OK(pf_pipeline_wait(p, 30 * 1000000));
    pf_pipeline_stats st;
    CHECK_OK(pf_pipeline_get_stats(p, &st));
    const pf_stage_stats *t0 = find_stage(&st, "h2d:cam0->mux");
    const pf_stage_stats *t1 = find_stage(&st, "h2d:cam1->mux");
    REQUIRE(t0 && t1);
    CHECK(t0->is_transfer && t1->is_transfer);
    CHECK_EQ_INT(t0->transfers, 40);
    CHECK(stream_in_order(&out, 0, 40));
    /* cam1's edge drops the newest when full (before its transfer): what
     * arrives is in order; in + dropped add up per stream */
    const pf_stream_stats *s1 = find_stream(&st, 1);
    REQUIRE(s1);
    CHECK_EQ_INT(s1->items_in, 30);
    CHECK_EQ_INT(s1->items_out + s1->dropped, 30);
    CHECK_EQ_INT(t1->transfers, s1->items_out);
    pf_pipeline_destroy(&p);
    rec_fini(&r);
    rec_fini(&out);
}

static void test_many_streams_threads(void)
{
    /* 16 streams into a 3-worker muxer (ordered, batch 5, 100 us), four of
     * them joining while it runs, one at a time: every frame arrives once,
     * in order within its stream. */
    pf_pipeline *p = new_pipeline("many", PF_MODE_CUSTOM);
    REQUIRE(p);
    rec r, out;
    rec_init(&r, 0);
    rec_init(&out, 0);
    pf_stage_desc d = rec_desc("mux", &r, 5, 100);
    d.threads = 3;
    d.ordered = true;
    pf_stage *mux = NULL;
    CHECK_OK(pf_pipeline_add_stage(p, &d, &mux));
    pf_stage *sink = add_rec(p, "sink", &out, 1, 0);
    REQUIRE(mux && sink);
    connect(p, mux, sink, 8, PF_EDGE_BLOCK);
    for (int k = 0; k < 12; k++) {
        char name[16];
        snprintf(name, sizeof name, "cam%d", k);
        connect(p, add_cam(p, name, k, 100 + 10 * k, k % 3 ? 0 : 3000), mux, 1 + k % 4,
                PF_EDGE_BLOCK);
    }
    CHECK_OK(pf_pipeline_start(p));
    for (int k = 12; k < 16; k++) {
        sleep_us(5000);
        char name[16];
        snprintf(name, sizeof name, "cam%d", k);
        pf_stage *cam = add_cam(p, name, k, 100 + 10 * k, 0);
        REQUIRE(cam);
        connect(p, cam, mux, 2, PF_EDGE_BLOCK);
        CHECK_OK(pf_pipeline_start_added(p));
    }
    CHECK_OK(pf_pipeline_wait(p, 60 * 1000000));
    int64_t total = 0;
    for (int k = 0; k < 16; k++) {
        CHECK(stream_in_order(&out, k, 100 + 10 * k));
        total += 100 + 10 * k;
    }
    CHECK_EQ_INT(out.n, total);
    pf_pipeline_stats st;
    CHECK_OK(pf_pipeline_get_stats(p, &st));
    CHECK_EQ_INT(st.num_streams, 16);
    CHECK_EQ_INT(st.items_completed, total);
    pf_pipeline_destroy(&p);
    rec_fini(&r);
    rec_fini(&out);
}

static void test_trace_and_gpu_path(void)
{
    /* Tracing and the GPU path (ready events at emit, deferred release; on
     * CPU streams and events here) with several inputs: every frame once,
     * in order per stream; the trace has each input edge's queue track and
     * the muxer's spans. */
    char path[] = "/tmp/pf_test_mux_trace_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    pl_test_force_gpu_path = 1;
    pf_pipeline_params pp = pf_pipeline_params_default();
    pp.name = "traced";
    pp.trace_path = path;
    pf_pipeline *p = NULL;
    CHECK_OK(pf_pipeline_create(&pp, &p));
    rec r, out;
    rec_init(&r, 0);
    rec_init(&out, 0);
    pf_stage *mux = add_rec(p, "mux", &r, 4, 500);
    pf_stage *sink = add_rec(p, "sink", &out, 1, 0);
    for (int k = 0; k < 3; k++) {
        char name[16];
        snprintf(name, sizeof name, "cam%d", k);
        connect(p, add_cam(p, name, k, 50 + k, 0), mux, 3, PF_EDGE_BLOCK);
    }
    connect(p, mux, sink, 4, PF_EDGE_BLOCK);
    CHECK_OK(pf_pipeline_start(p));
    CHECK_OK(pf_pipeline_wait(p, 30 * 1000000));
    pl_test_force_gpu_path = 0;
    for (int k = 0; k < 3; k++) CHECK(stream_in_order(&out, k, 50 + k));
    pf_pipeline_destroy(&p); /* writes the trace */
    FILE *f = fopen(path, "rb");
    REQUIRE(f);
    static char text[8 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    remove(path);
    for (int k = 0; k < 3; k++) {
        char q[64];
        snprintf(q, sizeof q, "queue cam%d -> mux", k);
        CHECK(strstr(text, q) != NULL);
    }
    CHECK(strstr(text, "\"name\":\"mux\"") != NULL);
    rec_fini(&r);
    rec_fini(&out);
}

static void test_example_yaml(void)
{
    const char *dir = getenv("PF_SOURCE_DIR");
    if (!dir) {
        printf("  PF_SOURCE_DIR not set: example skipped\n");
        return;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/multistream.yaml", dir);
    pf_pipeline *p = NULL;
    pf_status st = pf_pipeline_load_yaml(path, NULL, &p);
    if (st == PF_ERR_UNSUPPORTED) {
        printf("  no YAML support in this build: skipped\n");
        return;
    }
    CHECK_OK(st);
    REQUIRE(p);
    CHECK_OK(pf_pipeline_start(p));
    CHECK_OK(pf_pipeline_wait(p, 60 * 1000000));
    pf_pipeline_stats s;
    CHECK_OK(pf_pipeline_get_stats(p, &s));
    CHECK_EQ_INT(s.num_streams, 4);
    for (int i = 0; i < s.num_streams; i++) {
        CHECK_EQ_INT(s.streams[i].items_in, 60);
        CHECK_EQ_INT(s.streams[i].items_out, 60);
    }
    pf_pipeline_print_stats(p, stdout);
    pf_pipeline_destroy(&p);
}

int main(void)
{
    PF_RUN(test_fairness_flooding_stream);
    PF_RUN(test_timeout_from_first_frame);
    PF_RUN(test_drain_and_leave);
    PF_RUN(test_join_while_running);
    PF_RUN(test_cancel_and_error_with_inputs);
    PF_RUN(test_failing_source_leaves);
    PF_RUN(test_demux_routing);
    PF_RUN(test_latency_mode_per_stream_drops);
    PF_RUN(test_transfer_per_input_edge);
    PF_RUN(test_many_streams_threads);
    PF_RUN(test_trace_and_gpu_path);
    PF_RUN(test_example_yaml);
    return pf_test_finish();
}
