/* Tracer tests: the written file is strict JSON with the structure prof.h
 * promises (checked by an in-test parser, tests/json_check.h), spans and
 * counters carry exact microsecond values for fixed ns inputs, flows link
 * the spans of one (source, seq) in time order, a full buffer drops and
 * counts while the file stays valid, 8 threads recording at once lose or
 * tear nothing, track ids are stable, GPU spans of CPU-backend events
 * resolve to the events' host times, and errors name what is wrong. */
#include <glob.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/sys.h"
#include "device/backend.h"
#include "json_check.h"
#include "pf_test.h"

static char g_dir[256];

static const char *tmp_path(const char *name)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", g_dir, name);
    return buf;
}

/* Whether a temporary of pf_output (".NAME.pftmp-*") for `name` is left. */
static bool temporary_left(const char *name)
{
    char pattern[600];
    snprintf(pattern, sizeof pattern, "%s/.%s.pftmp-*", g_dir, name);
    glob_t g;
    bool found = glob(pattern, GLOB_NOSORT, NULL, &g) == 0 && g.gl_pathc > 0;
    globfree(&g);
    return found;
}

/* A parsed trace: the root plus the events sorted by phase. */
typedef struct trace {
    jval root;
    const jval *events;   /* traceEvents */
    const jval *meta;     /* metadata */
    int64_t origin;
    size_t count_x, count_c, count_i, count_m, count_other;
} trace;

/* "-12.345" -> -12345 ns; requires exactly three decimals. */
static bool us_to_ns(const jval *v, int64_t *out)
{
    if (!v || v->type != J_NUM) return false;
    const char *s = v->raw;
    bool neg = *s == '-';
    if (neg) s++;
    int64_t whole = 0;
    if (*s < '0' || *s > '9') return false;
    while (*s >= '0' && *s <= '9') whole = whole * 10 + (*s++ - '0');
    if (s[0] != '.' || !s[1] || !s[2] || !s[3] || s[4]) return false;
    int64_t frac = 0;
    for (int i = 1; i <= 3; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        frac = frac * 10 + (s[i] - '0');
    }
    *out = (neg ? -1 : 1) * (whole * 1000 + frac);
    return true;
}

static int64_t jint(const jval *v)
{
    return v && v->type == J_NUM ? (int64_t)v->num : INT64_MIN;
}

static const char *jstr(const jval *v) { return v && v->type == J_STR ? v->str : NULL; }

/* Loads and checks the common structure; false (with CHECK failures) if the
 * file is missing, not JSON or not shaped like a trace. */
static bool load_trace(const char *path, trace *t)
{
    memset(t, 0, sizeof *t);
    size_t len = 0;
    char *text = jread_file(path, &len);
    CHECK(text != NULL);
    if (!text) return false;
    bool ok = jparse(text, len, &t->root);
    free(text);
    CHECK(ok);
    if (!ok) return false;
    t->events = jget(&t->root, "traceEvents");
    t->meta = jget(&t->root, "metadata");
    CHECK(t->events && t->events->type == J_ARR);
    CHECK(t->meta && t->meta->type == J_OBJ);
    CHECK(jstr(jget(&t->root, "displayTimeUnit")) &&
          !strcmp(jstr(jget(&t->root, "displayTimeUnit")), "ms"));
    if (!t->events || t->events->type != J_ARR || !t->meta) return false;
    t->origin = jint(jget(t->meta, "ts_origin_ns"));
    CHECK(t->origin > 0);
    int bad = 0;
    for (size_t i = 0; i < t->events->n; i++) {
        const jval *e = &t->events->items[i];
        const char *ph = jstr(jget(e, "ph"));
        int64_t ns;
        if (e->type != J_OBJ || !ph) {
            bad++;
            continue;
        }
        if (!strcmp(ph, "X")) {
            t->count_x++;
            if (!us_to_ns(jget(e, "ts"), &ns) || !us_to_ns(jget(e, "dur"), &ns) || ns < 0 ||
                jint(jget(e, "pid")) < 1 || jint(jget(e, "tid")) < 0 || !jstr(jget(e, "name")))
                bad++;
        } else if (!strcmp(ph, "C")) {
            t->count_c++;
            const jval *args = jget(e, "args");
            const jval *v = jget(args, "value");
            if (!us_to_ns(jget(e, "ts"), &ns) || !v || v->type != J_NUM || !jstr(jget(e, "name")))
                bad++;
        } else if (!strcmp(ph, "i")) {
            t->count_i++;
            if (!us_to_ns(jget(e, "ts"), &ns) || !jstr(jget(e, "name"))) bad++;
        } else if (!strcmp(ph, "M")) {
            t->count_m++;
            if (!jget(e, "args") || jint(jget(e, "pid")) < 1) bad++;
        } else {
            t->count_other++;
        }
        /* Perfetto's tokenizer refuses arrays inside an event. */
        for (size_t k = 0; k < e->n; k++)
            if (e->items[k].type == J_ARR) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(t->count_other, 0);
    return bad == 0;
}

static void free_trace(trace *t) { jfree(&t->root); }

/* The i-th event of phase ph named `name` (NULL: any name), or NULL. */
static const jval *find_event(const trace *t, const char *ph, const char *name, int nth)
{
    for (size_t i = 0; i < t->events->n; i++) {
        const jval *e = &t->events->items[i];
        const char *p = jstr(jget(e, "ph")), *nm = jstr(jget(e, "name"));
        if (p && !strcmp(p, ph) && nm && (!name || !strcmp(nm, name)) && nth-- == 0) return e;
    }
    return NULL;
}

/* The thread name metadata for (pid, tid), or NULL. */
static const char *thread_name(const trace *t, int64_t pid, int64_t tid)
{
    for (size_t i = 0; i < t->events->n; i++) {
        const jval *e = &t->events->items[i];
        const char *nm = jstr(jget(e, "name"));
        if (nm && !strcmp(nm, "thread_name") && jint(jget(e, "pid")) == pid &&
            jint(jget(e, "tid")) == tid)
            return jstr(jget(jget(e, "args"), "name"));
    }
    return NULL;
}

static pf_tracer *make_tracer(const char *file, size_t max_events)
{
    pf_tracer_params p = pf_tracer_params_default();
    p.path = tmp_path(file);
    p.max_events = max_events;
    pf_tracer *t = NULL;
    CHECK_OK(pf_tracer_create(&p, &t));
    return t;
}

static int64_t span_ns(const jval *e, const char *key)
{
    int64_t v = INT64_MIN;
    us_to_ns(jget(e, key), &v);
    return v;
}

/* ---------------------------------------------------------------------------- */

static void test_spans_exact_values(void)
{
    pf_tracer *t = make_tracer("spans.json", 1000);
    REQUIRE(t);
    int dec = pf_trace_track(t, "decode");
    int inf = pf_trace_track(t, "infer");
    REQUIRE(dec >= 0 && inf >= 0);
    int64_t base = pf_time_ns();
    /* Offsets chosen to exercise the three decimals: 1 ns, 999 ns, 1 us... */
    pf_trace_span(t, dec, "decode", base + 1, base + 1000, 0, 0);
    pf_trace_span(t, inf, "infer", base + 2001, base + 2001 + 1234567, 0, 0);
    pf_trace_span(t, dec, "decode", base + 5000000999, base + 5000001000, -1, -1);
    pf_trace_span(t, dec, "zero", base + 7, base + 7, -1, 3);
    /* Before the origin: a negative timestamp, still exact. */
    pf_trace_span(t, dec, "early", base - 10000000, base - 9999999, -1, -1);
    pf_tracer_destroy(&t);
    CHECK(t == NULL);

    trace tr;
    bool loaded = load_trace(tmp_path("spans.json"), &tr);
    REQUIRE(loaded);
    CHECK_EQ_INT(tr.count_x, 5);
    int64_t o = tr.origin;
    CHECK(o <= base);
    const jval *e = find_event(&tr, "X", "decode", 0);
    REQUIRE(e);
    CHECK_EQ_INT(span_ns(e, "ts"), base + 1 - o);
    CHECK_EQ_INT(span_ns(e, "dur"), 999);
    CHECK_EQ_INT(jint(jget(e, "pid")), 1);
    int64_t tid_dec = jint(jget(e, "tid"));
    CHECK_EQ_INT(jint(jget(jget(e, "args"), "source")), 0);
    CHECK_EQ_INT(jint(jget(jget(e, "args"), "seq")), 0);
    e = find_event(&tr, "X", "infer", 0);
    REQUIRE(e);
    CHECK_EQ_INT(span_ns(e, "ts"), base + 2001 - o);
    CHECK_EQ_INT(span_ns(e, "dur"), 1234567);
    CHECK(jint(jget(e, "tid")) != tid_dec);
    CHECK(thread_name(&tr, 1, tid_dec) && !strcmp(thread_name(&tr, 1, tid_dec), "decode"));
    CHECK(thread_name(&tr, 1, jint(jget(e, "tid"))) &&
          !strcmp(thread_name(&tr, 1, jint(jget(e, "tid"))), "infer"));
    e = find_event(&tr, "X", "decode", 1);
    REQUIRE(e);
    CHECK_EQ_INT(span_ns(e, "ts"), base + 5000000999 - o);
    CHECK_EQ_INT(span_ns(e, "dur"), 1);
    CHECK(jget(e, "args") == NULL); /* no source, no seq */
    e = find_event(&tr, "X", "zero", 0);
    REQUIRE(e);
    CHECK_EQ_INT(span_ns(e, "dur"), 0);
    CHECK(jget(jget(e, "args"), "source") == NULL);
    CHECK_EQ_INT(jint(jget(jget(e, "args"), "seq")), 3);
    e = find_event(&tr, "X", "early", 0);
    REQUIRE(e);
    CHECK_EQ_INT(span_ns(e, "ts"), base - 10000000 - o);
    CHECK(span_ns(e, "ts") < 0);
    /* The process is named. */
    const jval *pn = find_event(&tr, "M", "process_name", 0);
    CHECK(pn && jstr(jget(jget(pn, "args"), "name")) &&
          !strcmp(jstr(jget(jget(pn, "args"), "name")), "pixflow"));
    CHECK_EQ_INT(jint(jget(tr.meta, "recorded_events")), 5);
    CHECK_EQ_INT(jint(jget(tr.meta, "dropped_events")), 0);
    free_trace(&tr);
    /* No temporary file is left behind. */
    CHECK(!temporary_left("spans.json"));
}

static void test_names_escaped(void)
{
    pf_tracer_params p = pf_tracer_params_default();
    p.path = tmp_path("names.json");
    p.process_name = "proc \"quoted\" \\ name";
    pf_tracer *t = NULL;
    CHECK_OK(pf_tracer_create(&p, &t));
    REQUIRE(t);
    int tr_id = pf_trace_track(t, "track\twith\ttabs");
    REQUIRE(tr_id >= 0);
    static const char *names[] = {
        "quote\"back\\slash", "new\nline\r\x01\x1f", "del\x7f", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x8e\xa5",
        "bad\xff byte", "cut\xe2\x82", "overlong\xc0\xaf", "surrogate\xed\xa0\x80", "/slash/",
    };
    static const char *expect[] = {
        "quote\"back\\slash", "new\nline\r\x01\x1f", "del\x7f", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x8e\xa5",
        "bad\xef\xbf\xbd byte", "cut\xef\xbf\xbd\xef\xbf\xbd", "overlong\xef\xbf\xbd\xef\xbf\xbd",
        "surrogate\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", "/slash/",
    };
    const int n = (int)(sizeof names / sizeof names[0]);
    int64_t base = pf_time_ns();
    for (int i = 0; i < n; i++) pf_trace_span(t, tr_id, names[i], base + i, base + i + 1, -1, i);
    pf_trace_counter(t, "counter \"q\"", base, 1.0);
    CHECK_OK(pf_tracer_flush(t));
    pf_tracer_destroy(&t);

    size_t len = 0;
    char *text = jread_file(tmp_path("names.json"), &len);
    REQUIRE(text);
    /* Raw control characters and DEL never appear in the file. */
    int raw_ctrl = 0;
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)text[i] < 0x20 && text[i] != '\n') || text[i] == 0x7f) raw_ctrl++;
    CHECK_EQ_INT(raw_ctrl, 0);
    free(text);

    trace tr;
    bool loaded = load_trace(tmp_path("names.json"), &tr);
    REQUIRE(loaded);
    CHECK_EQ_INT(tr.count_x, n);
    for (int i = 0; i < n; i++) {
        const jval *e = NULL;
        for (size_t k = 0; k < tr.events->n; k++) {
            const jval *x = &tr.events->items[k];
            if (jstr(jget(x, "ph")) && !strcmp(jstr(jget(x, "ph")), "X") &&
                jint(jget(jget(x, "args"), "seq")) == i)
                e = x;
        }
        REQUIRE(e);
        if (strcmp(jstr(jget(e, "name")), expect[i])) {
            fprintf(stderr, "  name %d: got '%s'\n", i, jstr(jget(e, "name")));
            CHECK(0);
        }
    }
    const jval *pn = find_event(&tr, "M", "process_name", 0);
    CHECK(pn && !strcmp(jstr(jget(jget(pn, "args"), "name")), "proc \"quoted\" \\ name"));
    CHECK(thread_name(&tr, 1, jint(jget(find_event(&tr, "X", NULL, 0), "tid"))) &&
          !strcmp(thread_name(&tr, 1, jint(jget(find_event(&tr, "X", NULL, 0), "tid"))),
                  "track\twith\ttabs"));
    CHECK(find_event(&tr, "C", "counter \"q\"", 0) != NULL);
    free_trace(&tr);
}

/* Flow roles of the spans of one (source, seq), in time order. */
static void test_flows(void)
{
    pf_tracer *t = make_tracer("flows.json", 1000);
    REQUIRE(t);
    int tk[4];
    tk[0] = pf_trace_track(t, "decode");
    tk[1] = pf_trace_track(t, "preprocess");
    tk[2] = pf_trace_gpu_track(t, "infer");
    tk[3] = pf_trace_track(t, "encode");
    REQUIRE(tk[0] >= 0 && tk[1] >= 0 && tk[2] >= 0 && tk[3] >= 0);
    pf_test_seed(7);
    int64_t base = pf_time_ns();
    enum { SOURCES = 3, FRAMES = 20 };
    /* Each frame goes through the 4 stages in order; frames of the 3
     * sources overlap in time; recorded in a shuffled order. */
    typedef struct rec { int stage, src, seq; } rec;
    rec recs[SOURCES * FRAMES * 4];
    int nrec = 0;
    for (int s = 0; s < SOURCES; s++)
        for (int f = 0; f < FRAMES; f++)
            for (int k = 0; k < 4; k++) recs[nrec++] = (rec){k, s, f};
    for (int i = nrec - 1; i > 0; i--) {
        int j = (int)pf_test_rand_range(0, i);
        rec x = recs[i];
        recs[i] = recs[j];
        recs[j] = x;
    }
    for (int i = 0; i < nrec; i++) {
        int64_t st = base + (int64_t)recs[i].seq * 100000 + recs[i].stage * 20000 + recs[i].src * 7;
        static const char *nm[4] = {"decode", "preprocess", "infer", "encode"};
        pf_trace_span(t, tk[recs[i].stage], nm[recs[i].stage], st, st + 15000, recs[i].src,
                      recs[i].seq);
    }
    /* A lone span of a frame: no flow. No source: no flow. */
    pf_trace_span(t, tk[0], "lone", base, base + 5, 9, 1);
    pf_trace_span(t, tk[0], "noflow", base, base + 5, -1, 1);
    pf_trace_span(t, tk[0], "noflow", base, base + 5, 1, -1);
    pf_tracer_destroy(&t);

    trace tr;
    bool loaded = load_trace(tmp_path("flows.json"), &tr);
    REQUIRE(loaded);
    CHECK_EQ_INT(tr.count_x, nrec + 3);
    CHECK_EQ_INT(jint(jget(tr.meta, "flows")), SOURCES * FRAMES);
    /* For every (source, seq): 4 spans with one bind_id, roles by start time;
     * the bind_ids of different frames differ. */
    char *ids[SOURCES * FRAMES] = {0};
    int bad = 0;
    for (int s = 0; s < SOURCES; s++) {
        for (int f = 0; f < FRAMES; f++) {
            const jval *sp[4] = {0};
            int found = 0;
            for (size_t k = 0; k < tr.events->n; k++) {
                const jval *e = &tr.events->items[k];
                const jval *a = jget(e, "args");
                if (strcmp(jstr(jget(e, "ph")), "X") || jint(jget(a, "source")) != s ||
                    jint(jget(a, "seq")) != f)
                    continue;
                const char *nm = jstr(jget(e, "name"));
                int stage = !strcmp(nm, "decode") ? 0 : !strcmp(nm, "preprocess") ? 1
                          : !strcmp(nm, "infer") ? 2 : 3;
                sp[stage] = e;
                found++;
            }
            if (found != 4) {
                bad++;
                continue;
            }
            const char *id = jstr(jget(sp[0], "bind_id"));
            ids[s * FRAMES + f] = (char *)id;
            for (int k = 0; k < 4; k++) {
                const jval *in = jget(sp[k], "flow_in"), *outv = jget(sp[k], "flow_out");
                bool want_in = k > 0, want_out = k < 3;
                if (!jstr(jget(sp[k], "bind_id")) || !id || strcmp(jstr(jget(sp[k], "bind_id")), id))
                    bad++;
                if ((in != NULL) != want_in || (in && (in->type != J_BOOL || !in->b))) bad++;
                if ((outv != NULL) != want_out || (outv && (outv->type != J_BOOL || !outv->b)))
                    bad++;
            }
            /* The GPU-track span is on process 2. */
            if (jint(jget(sp[2], "pid")) != 2) bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
    int dup = 0;
    for (int i = 0; i < SOURCES * FRAMES; i++)
        for (int j = i + 1; j < SOURCES * FRAMES; j++)
            if (ids[i] && ids[j] && !strcmp(ids[i], ids[j])) dup++;
    CHECK_EQ_INT(dup, 0);
    const jval *lone = find_event(&tr, "X", "lone", 0);
    CHECK(lone && !jget(lone, "bind_id") && !jget(lone, "flow_in") && !jget(lone, "flow_out"));
    for (int k = 0; k < 2; k++) {
        const jval *nf = find_event(&tr, "X", "noflow", k);
        CHECK(nf && !jget(nf, "bind_id"));
    }
    /* Process 2 is named as the GPU side. */
    const jval *p2 = NULL;
    for (int k = 0; (p2 = find_event(&tr, "M", "process_name", k)); k++)
        if (jint(jget(p2, "pid")) == 2) break;
    CHECK(p2 && strstr(jstr(jget(jget(p2, "args"), "name")), "GPU"));
    free_trace(&tr);
}

/* Ties: spans of one frame with equal start times are ordered by end, and
 * every span still gets exactly one role set. */
static void test_flow_ties(void)
{
    pf_tracer *t = make_tracer("ties.json", 100);
    REQUIRE(t);
    int a = pf_trace_track(t, "a"), b = pf_trace_track(t, "b");
    int64_t base = pf_time_ns();
    pf_trace_span(t, b, "second", base + 100, base + 300, 4, 1ll << 45); /* hashed id range */
    pf_trace_span(t, a, "first", base + 100, base + 200, 4, 1ll << 45);
    pf_tracer_destroy(&t);
    trace tr;
    bool loaded = load_trace(tmp_path("ties.json"), &tr);
    REQUIRE(loaded);
    const jval *f = find_event(&tr, "X", "first", 0), *s = find_event(&tr, "X", "second", 0);
    REQUIRE(f && s);
    CHECK(jget(f, "flow_out") && !jget(f, "flow_in"));
    CHECK(jget(s, "flow_in") && !jget(s, "flow_out"));
    CHECK(jstr(jget(f, "bind_id")) && jstr(jget(s, "bind_id")) &&
          !strcmp(jstr(jget(f, "bind_id")), jstr(jget(s, "bind_id"))));
    CHECK_EQ_INT(jint(jget(jget(f, "args"), "seq")), 1ll << 45);
    free_trace(&tr);
}

static void test_counters_and_instants(void)
{
    pf_tracer *t = make_tracer("counters.json", 100);
    REQUIRE(t);
    int tk = pf_trace_track(t, "stage");
    int64_t base = pf_time_ns();
    static const double vals[] = {3.0, 2.5, 1e-7, -4.0, 123456789012.0, 0.1};
    const int n = (int)(sizeof vals / sizeof vals[0]);
    for (int i = 0; i < n; i++) pf_trace_counter(t, "queue a->b", base + i * 1001, vals[i]);
    pf_trace_counter(t, "bad", base, NAN);
    pf_trace_counter(t, "bad", base, INFINITY);
    pf_trace_counter(t, NULL, base, 1.0);
    pf_trace_instant(t, tk, "keyframe", base + 42);
    pf_trace_instant(t, 77, "bad track", base);
    pf_tracer_stats st;
    CHECK_OK(pf_tracer_get_stats(t, &st));
    CHECK_EQ_INT(st.events, n + 1);
    CHECK_EQ_INT(st.rejected, 4);
    CHECK_EQ_INT(st.dropped, 0);
    pf_tracer_destroy(&t);

    trace tr;
    bool loaded = load_trace(tmp_path("counters.json"), &tr);
    REQUIRE(loaded);
    CHECK_EQ_INT(tr.count_c, n);
    CHECK_EQ_INT(tr.count_i, 1);
    for (int i = 0; i < n; i++) {
        const jval *e = find_event(&tr, "C", "queue a->b", i);
        REQUIRE(e);
        CHECK_EQ_INT(span_ns(e, "ts"), base + i * 1001 - tr.origin);
        CHECK(jget(jget(e, "args"), "value")->num == vals[i]);
        CHECK_EQ_INT(jint(jget(e, "pid")), 1);
    }
    const jval *in = find_event(&tr, "i", "keyframe", 0);
    REQUIRE(in);
    CHECK_EQ_INT(span_ns(in, "ts"), base + 42 - tr.origin);
    CHECK(jstr(jget(in, "s")) && !strcmp(jstr(jget(in, "s")), "t"));
    CHECK_EQ_INT(jint(jget(tr.meta, "rejected_events")), 4);
    free_trace(&tr);
}

static void test_buffer_full_drops(void)
{
    pf_tracer *t = make_tracer("full.json", 10);
    REQUIRE(t);
    int tk = pf_trace_track(t, "s");
    int64_t base = pf_time_ns();
    for (int i = 0; i < 25; i++) pf_trace_span(t, tk, "s", base + i, base + i + 1, 0, i / 5);
    pf_trace_counter(t, "c", base, 1);
    pf_tracer_stats st;
    CHECK_OK(pf_tracer_get_stats(t, &st));
    CHECK_EQ_INT(st.events, 10);
    CHECK_EQ_INT(st.dropped, 16);
    CHECK_OK(pf_tracer_flush(t));
    trace tr;
    if (load_trace(tmp_path("full.json"), &tr)) {
        CHECK_EQ_INT(tr.count_x, 10);
        CHECK_EQ_INT(jint(jget(tr.meta, "dropped_events")), 16);
        CHECK_EQ_INT(jint(jget(tr.meta, "recorded_events")), 10);
        /* The first 10 were kept (frames 0 and 1, five spans each: two
         * flows; frames 2..4 were dropped whole). */
        CHECK_EQ_INT(jint(jget(jget(find_event(&tr, "X", "s", 9), "args"), "seq")), 1);
        CHECK_EQ_INT(jint(jget(tr.meta, "flows")), 2);
        free_trace(&tr);
    }
    pf_tracer_destroy(&t);
}

static void test_flush_repeatedly(void)
{
    pf_tracer *t = make_tracer("again.json", 100);
    REQUIRE(t);
    int tk = pf_trace_track(t, "s");
    int64_t base = pf_time_ns();
    CHECK_OK(pf_tracer_flush(t)); /* empty trace: still valid */
    trace tr;
    if (load_trace(tmp_path("again.json"), &tr)) {
        CHECK_EQ_INT(tr.count_x, 0);
        free_trace(&tr);
    }
    pf_trace_span(t, tk, "a", base, base + 1, -1, -1);
    CHECK_OK(pf_tracer_flush(t));
    if (load_trace(tmp_path("again.json"), &tr)) {
        CHECK_EQ_INT(tr.count_x, 1);
        free_trace(&tr);
    }
    pf_trace_span(t, tk, "b", base, base + 1, -1, -1);
    pf_tracer_destroy(&t);
    if (load_trace(tmp_path("again.json"), &tr)) {
        CHECK_EQ_INT(tr.count_x, 2);
        free_trace(&tr);
    }
}

/* Concurrency ---------------------------------------------------------------------- */

#define NTHREADS 8
#define PER_THREAD 4000

typedef struct worker {
    pf_tracer *t;
    int idx;
    int track;
    int64_t base;
    _Atomic int *go;
} worker;

static const char *k_thread_names[NTHREADS] = {"w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7"};

/* Span i of thread w: start and duration derived from (w, i), so a torn
 * slot (fields of two events) cannot pass the check. */
static int64_t w_start(int64_t base, int w, int i) { return base + (int64_t)i * 1000 + w * 10; }
static int64_t w_dur(int w, int i) { return 1 + w + (i % 97) * 8; }

static void *worker_main(void *arg)
{
    worker *w = arg;
    while (!atomic_load(w->go)) {
    }
    for (int i = 0; i < PER_THREAD; i++) {
        int64_t s = w_start(w->base, w->idx, i);
        pf_trace_span(w->t, w->track, k_thread_names[w->idx], s, s + w_dur(w->idx, i), w->idx, i);
        if (i % 500 == 0) pf_trace_counter(w->t, k_thread_names[w->idx], s, i);
    }
    return NULL;
}

static void run_workers(pf_tracer *t, int64_t base, bool flush_meanwhile)
{
    _Atomic int go = 0;
    worker w[NTHREADS];
    pf_thread th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        w[i] = (worker){t, i, pf_trace_track(t, k_thread_names[i]), base, &go};
        CHECK(w[i].track == i);
        CHECK_OK(pf_thread_start(&th[i], "trace-w", worker_main, &w[i]));
    }
    atomic_store(&go, 1);
    if (flush_meanwhile) {
        /* Flushes racing with the recording threads: each must be valid. */
        for (int k = 0; k < 3; k++) {
            CHECK_OK(pf_tracer_flush(t));
            trace tr;
            if (load_trace(tmp_path("mt.json"), &tr)) free_trace(&tr);
        }
    }
    for (int i = 0; i < NTHREADS; i++) pf_thread_join(th[i]);
}

static void test_concurrent_recording(void)
{
    const int per_counters = (PER_THREAD + 499) / 500;
    pf_tracer *t = make_tracer("mt.json", NTHREADS * (PER_THREAD + per_counters));
    REQUIRE(t);
    int64_t base = pf_time_ns();
    run_workers(t, base, true);
    pf_tracer_stats st;
    CHECK_OK(pf_tracer_get_stats(t, &st));
    CHECK_EQ_INT(st.events, NTHREADS * (PER_THREAD + per_counters));
    CHECK_EQ_INT(st.dropped, 0);
    pf_tracer_destroy(&t);

    trace tr;
    bool loaded = load_trace(tmp_path("mt.json"), &tr);
    REQUIRE(loaded);
    CHECK_EQ_INT(tr.count_x, NTHREADS * PER_THREAD);
    CHECK_EQ_INT(tr.count_c, NTHREADS * per_counters);
    unsigned char *seen = calloc(NTHREADS * PER_THREAD, 1);
    REQUIRE(seen);
    int torn = 0, dup = 0;
    for (size_t k = 0; k < tr.events->n; k++) {
        const jval *e = &tr.events->items[k];
        if (strcmp(jstr(jget(e, "ph")), "X")) continue;
        int64_t w = jint(jget(jget(e, "args"), "source")), i = jint(jget(jget(e, "args"), "seq"));
        if (w < 0 || w >= NTHREADS || i < 0 || i >= PER_THREAD) {
            torn++;
            continue;
        }
        if (seen[w * PER_THREAD + i]++) dup++;
        if (span_ns(e, "ts") != w_start(base, (int)w, (int)i) - tr.origin ||
            span_ns(e, "dur") != w_dur((int)w, (int)i) || jint(jget(e, "tid")) != 100 + w ||
            strcmp(jstr(jget(e, "name")), k_thread_names[w]))
            torn++;
        /* Every (source, seq) is unique here: no flows. */
        if (jget(e, "bind_id")) torn++;
    }
    int missing = 0;
    for (int i = 0; i < NTHREADS * PER_THREAD; i++) missing += !seen[i];
    CHECK_EQ_INT(torn, 0);
    CHECK_EQ_INT(dup, 0);
    CHECK_EQ_INT(missing, 0);
    free(seen);
    free_trace(&tr);
}

/* Too small a buffer under contention: kept + dropped == recorded calls,
 * exactly max_events kept. */
static void test_concurrent_drops(void)
{
    const int per_counters = (PER_THREAD + 499) / 500;
    const size_t cap = 5000;
    pf_tracer *t = make_tracer("mt.json", cap);
    REQUIRE(t);
    run_workers(t, pf_time_ns(), false);
    pf_tracer_stats st;
    CHECK_OK(pf_tracer_get_stats(t, &st));
    CHECK_EQ_INT(st.events, cap);
    CHECK_EQ_INT(st.events + st.dropped, NTHREADS * (PER_THREAD + per_counters));
    pf_tracer_destroy(&t);
    trace tr;
    if (load_trace(tmp_path("mt.json"), &tr)) {
        CHECK_EQ_INT(tr.count_x + tr.count_c, cap);
        CHECK_EQ_INT(jint(jget(tr.meta, "dropped_events")), st.dropped);
        free_trace(&tr);
    }
}

/* Tracks ------------------------------------------------------------------------ */

static void test_track_ids(void)
{
    pf_tracer *t = make_tracer("tracks.json", 100);
    REQUIRE(t);
    char name[32];
    CHECK_EQ_INT(pf_trace_track(t, "a"), 0);
    CHECK_EQ_INT(pf_trace_gpu_track(t, "a"), 1); /* GPU "a" is another track */
    CHECK_EQ_INT(pf_trace_track(t, "b"), 2);
    CHECK_EQ_INT(pf_trace_track(t, "a"), 0);
    CHECK_EQ_INT(pf_trace_gpu_track(t, "a"), 1);
    snprintf(name, sizeof name, "b"); /* a different pointer, same name */
    CHECK_EQ_INT(pf_trace_track(t, name), 2);
    /* The name is copied: changing the caller's buffer changes nothing. */
    snprintf(name, sizeof name, "temp");
    CHECK_EQ_INT(pf_trace_track(t, name), 3);
    snprintf(name, sizeof name, "XXXX");
    CHECK_EQ_INT(pf_trace_track(t, "temp"), 3);

    pf_clear_error();
    CHECK_EQ_INT(pf_trace_track(t, NULL), -1);
    CHECK(strstr(pf_last_error(), "pf_trace_track") && strstr(pf_last_error(), "name"));
    CHECK_EQ_INT(pf_trace_track(NULL, "x"), -1);
    CHECK_EQ_INT(pf_trace_gpu_track(NULL, "x"), -1);
    for (int i = 4; i < 256; i++) {
        snprintf(name, sizeof name, "t%d", i);
        if (pf_trace_track(t, name) != i) {
            CHECK(0);
            break;
        }
    }
    pf_clear_error();
    CHECK_EQ_INT(pf_trace_track(t, "one too many"), -1);
    CHECK(strstr(pf_last_error(), "one too many") && strstr(pf_last_error(), "256"));
    CHECK_EQ_INT(pf_trace_track(t, "t255"), 255); /* existing ones still found */

    int64_t b = pf_time_ns();
    pf_trace_span(t, 3, "on temp", b, b + 1, -1, -1);
    pf_trace_span(t, 256, "bad", b, b + 1, -1, -1);
    pf_trace_span(t, -1, "bad", b, b + 1, -1, -1);
    pf_trace_span(t, 0, NULL, b, b + 1, -1, -1);
    pf_trace_span(t, 0, "backwards", b + 1, b, -1, -1);
    pf_trace_span(t, 0, "huge", INT64_MIN, 0, -1, -1); /* would overflow ts - origin */
    pf_trace_span(t, 0, "huge", 0, INT64_MAX, -1, -1);
    pf_trace_instant(t, 0, "huge", INT64_MAX);
    pf_trace_counter(t, "huge", INT64_MIN, 1.0);
    pf_tracer_stats st;
    CHECK_OK(pf_tracer_get_stats(t, &st));
    CHECK_EQ_INT(st.events, 1);
    CHECK_EQ_INT(st.rejected, 8);
    pf_tracer_destroy(&t);
    trace tr;
    if (load_trace(tmp_path("tracks.json"), &tr)) {
        const jval *e = find_event(&tr, "X", "on temp", 0);
        CHECK(e && thread_name(&tr, 1, jint(jget(e, "tid"))) &&
              !strcmp(thread_name(&tr, 1, jint(jget(e, "tid"))), "temp"));
        CHECK(thread_name(&tr, 2, 101) && !strcmp(thread_name(&tr, 2, 101), "a"));
        CHECK_EQ_INT(jint(jget(tr.meta, "tracks")), 256);
        free_trace(&tr);
    }
}

/* GPU spans on the CPU backend ------------------------------------------------------ */

static int64_t cpu_event_time(pf_event *e) { return *(const int64_t *)e->native; }

static void test_gpu_span_cpu_events(void)
{
    pf_device *cpu = NULL;
    CHECK_OK(pf_device_get(PF_DEVICE_CPU, 0, &cpu));
    pf_tracer_params p = pf_tracer_params_default();
    p.path = tmp_path("gpu_cpu.json");
    p.gpu = cpu;
    pf_tracer *t = NULL;
    CHECK_OK(pf_tracer_create(&p, &t));
    REQUIRE(t);
    int g = pf_trace_gpu_track(t, "stream 0");
    pf_stream_params sp = pf_stream_params_default();
    sp.device = cpu;
    pf_stream *s = NULL;
    CHECK_OK(pf_stream_create(&sp, &s));
    pf_event *e0 = NULL, *e1 = NULL, *never = NULL;
    CHECK_OK(pf_event_create(cpu, &e0));
    CHECK_OK(pf_event_create(cpu, &e1));
    CHECK_OK(pf_event_create(cpu, &never));
    REQUIRE(s && e0 && e1 && never);

    int64_t want0[3], want1[3];
    for (int k = 0; k < 3; k++) {
        CHECK_OK(pf_event_record(e0, s));
        int64_t spin = pf_time_ns() + 20000 * (k + 1);
        while (pf_time_ns() < spin) {
        }
        CHECK_OK(pf_event_record(e1, s));
        want0[k] = cpu_event_time(e0);
        want1[k] = cpu_event_time(e1);
        /* Complete CPU events: resolved now, so re-recording them is fine. */
        pf_trace_gpu_span(t, g, "kernel", e0, e1, 0, k);
    }
    pf_trace_gpu_span(t, g, "never", never, e1, -1, -1);
    /* End recorded before start: left out, counted. */
    CHECK_OK(pf_event_record(e1, s));
    int64_t spin = pf_time_ns() + 1000;
    while (pf_time_ns() < spin) {
    }
    CHECK_OK(pf_event_record(e0, s));
    pf_trace_gpu_span(t, g, "reversed", e0, e1, -1, -1);
    pf_trace_gpu_span(t, g, "null", NULL, e1, -1, -1);
    pf_trace_gpu_span(t, 999, "bad track", e0, e1, -1, -1);
    pf_tracer_stats st;
    CHECK_OK(pf_tracer_get_stats(t, &st));
    CHECK_EQ_INT(st.gpu_pending, 0);
    CHECK_EQ_INT(st.gpu_failed, 2);
    CHECK_EQ_INT(st.rejected, 2);
    CHECK_EQ_INT(st.events, 5);
    pf_tracer_destroy(&t);
    pf_event_destroy(&e0);
    pf_event_destroy(&e1);
    pf_event_destroy(&never);
    pf_stream_destroy(&s);

    trace tr;
    bool loaded = load_trace(tmp_path("gpu_cpu.json"), &tr);
    REQUIRE(loaded);
    CHECK_EQ_INT(tr.count_x, 3);
    for (int k = 0; k < 3; k++) {
        const jval *e = find_event(&tr, "X", "kernel", k);
        REQUIRE(e);
        int64_t seq = jint(jget(jget(e, "args"), "seq"));
        REQUIRE(seq >= 0 && seq < 3);
        CHECK_EQ_INT(span_ns(e, "ts"), want0[seq] - tr.origin);
        CHECK_EQ_INT(span_ns(e, "dur"), want1[seq] - want0[seq]);
        CHECK(want1[seq] - want0[seq] >= 20000 * (seq + 1));
        CHECK_EQ_INT(jint(jget(e, "pid")), 2);
    }
    CHECK(find_event(&tr, "X", "never", 0) == NULL);
    CHECK(find_event(&tr, "X", "reversed", 0) == NULL);
    CHECK_EQ_INT(jint(jget(tr.meta, "gpu_spans_failed")), 2);
    CHECK(jstr(jget(tr.meta, "gpu_device")) && !strcmp(jstr(jget(tr.meta, "gpu_device")), "cpu"));
    free_trace(&tr);
}

/* The counter sampler on the CPU device: host memory samples every period. */
static void test_counter_sampler(void)
{
    pf_device *cpu = NULL;
    CHECK_OK(pf_device_get(PF_DEVICE_CPU, 0, &cpu));
    pf_tracer_params p = pf_tracer_params_default();
    p.path = tmp_path("sampler.json");
    p.gpu = cpu;
    p.counter_period_ms = 5;
    pf_tracer *t = NULL;
    /* Before create: the sampler may take its first sample inside it. */
    int64_t t0 = pf_time_ns();
    CHECK_OK(pf_tracer_create(&p, &t));
    REQUIRE(t);
    struct timespec nap = {0, 60 * 1000 * 1000};
    nanosleep(&nap, NULL);
    pf_tracer_destroy(&t);
    trace tr;
    bool loaded = load_trace(tmp_path("sampler.json"), &tr);
    REQUIRE(loaded);
    int n = 0, bad = 0;
    int64_t prev = INT64_MIN;
    for (const jval *e; (e = find_event(&tr, "C", "host memory used MiB", n)); n++) {
        int64_t ts = span_ns(e, "ts") + tr.origin;
        double v = jget(jget(e, "args"), "value")->num;
        if (ts < t0 - 1000000 || ts <= prev || !(v > 0.0)) bad++;
        prev = ts;
    }
    CHECK(n >= 4);  /* ~12 expected; slack for a loaded machine */
    CHECK_EQ_INT(bad, 0);
    free_trace(&tr);
}

/* Errors ------------------------------------------------------------------------ */

static void test_errors(void)
{
    pf_tracer *t = (pf_tracer *)1;
    pf_tracer_params p = pf_tracer_params_default();
    CHECK_EQ_INT(p.max_events, 1 << 20);
    CHECK(p.process_name && !strcmp(p.process_name, "pixflow"));
    CHECK_EQ_INT(pf_tracer_create(NULL, &t), PF_ERR_INVALID);
    CHECK(t == NULL);
    CHECK_EQ_INT(pf_tracer_create(&p, NULL), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_tracer_create(&p, &t), PF_ERR_INVALID); /* path NULL */
    CHECK(strstr(pf_last_error(), "path is NULL"));
    p.path = "";
    CHECK_EQ_INT(pf_tracer_create(&p, &t), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "path is empty"));
    p.path = "/nonexistent-dir-pf/trace.json";
    CHECK_EQ_INT(pf_tracer_create(&p, &t), PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "/nonexistent-dir-pf/trace.json"));
    p.path = tmp_path("err.json");
    p.counter_period_ms = 10;
    CHECK_EQ_INT(pf_tracer_create(&p, &t), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "counter_period_ms 10") && strstr(pf_last_error(), "gpu"));
    p.counter_period_ms = -1;
    CHECK_EQ_INT(pf_tracer_create(&p, &t), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "-1"));
    p.counter_period_ms = 0;
    p.max_events = (size_t)1 << 62;
    CHECK_EQ_INT(pf_tracer_create(&p, &t), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "max_events"));
    CHECK(t == NULL);
    p.max_events = 0; /* = the default */
    CHECK_OK(pf_tracer_create(&p, &t));
    pf_tracer_stats st;
    CHECK_EQ_INT(pf_tracer_get_stats(NULL, &st), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_tracer_get_stats(t, NULL), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_tracer_flush(NULL), PF_ERR_INVALID);
    /* NULL tracers are ignored by the recording calls. */
    pf_trace_span(NULL, 0, "x", 0, 1, -1, -1);
    pf_trace_gpu_span(NULL, 0, "x", NULL, NULL, -1, -1);
    pf_trace_counter(NULL, "x", 0, 1);
    pf_trace_instant(NULL, 0, "x", 0);
    pf_trace_track(t, "x");
    CHECK_OK(pf_tracer_flush(t));
    pf_tracer_destroy(&t);
    pf_tracer_destroy(&t); /* NULL-safe */
    pf_tracer_destroy(NULL);

    /* A directory in the way of the file (made after create): PF_ERR_IO naming it. */
    p.path = tmp_path("dir_in_way.json");
    CHECK_OK(pf_tracer_create(&p, &t));
    REQUIRE(t);
    char tmpname[600];
    snprintf(tmpname, sizeof tmpname, "%s", tmp_path("dir_in_way.json"));
    CHECK(mkdir(tmpname, 0700) == 0);
    CHECK_EQ_INT(pf_tracer_flush(t), PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "dir_in_way.json"));
    CHECK(!temporary_left("dir_in_way.json"));
    rmdir(tmpname);
    CHECK_OK(pf_tracer_flush(t));
    pf_tracer_destroy(&t);
}

/* A symlink (like /dev/stdout) is written through, not replaced. */
static void test_symlink_path(void)
{
    char target[600], link[600];
    snprintf(target, sizeof target, "%s", tmp_path("target.json"));
    snprintf(link, sizeof link, "%s", tmp_path("link.json"));
    FILE *f = fopen(target, "w");
    REQUIRE(f);
    fclose(f);
    REQUIRE(symlink(target, link) == 0);
    pf_tracer *t = make_tracer("link.json", 10);
    REQUIRE(t);
    int tk = pf_trace_track(t, "s");
    pf_trace_span(t, tk, "via link", 1000, 2000, -1, -1);
    CHECK_OK(pf_tracer_flush(t));
    pf_tracer_destroy(&t);
    struct stat st;
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(!temporary_left("link.json") && !temporary_left("target.json"));
    trace tr;
    bool loaded = load_trace(target, &tr);
    REQUIRE(loaded);
    CHECK(find_event(&tr, "X", "via link", 0) != NULL);
    free_trace(&tr);
    /* A device: /dev/null takes the trace and stays a device. */
    pf_tracer_params p = pf_tracer_params_default();
    p.path = "/dev/null";
    CHECK_OK(pf_tracer_create(&p, &t));
    CHECK_OK(pf_tracer_flush(t));
    pf_tracer_destroy(&t);
    CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "%s/pf_test_trace_XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    PF_RUN(test_spans_exact_values);
    PF_RUN(test_names_escaped);
    PF_RUN(test_flows);
    PF_RUN(test_flow_ties);
    PF_RUN(test_counters_and_instants);
    PF_RUN(test_buffer_full_drops);
    PF_RUN(test_flush_repeatedly);
    PF_RUN(test_concurrent_recording);
    PF_RUN(test_concurrent_drops);
    PF_RUN(test_track_ids);
    PF_RUN(test_gpu_span_cpu_events);
    PF_RUN(test_counter_sampler);
    PF_RUN(test_errors);
    PF_RUN(test_symlink_path);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    return pf_test_finish();
}
