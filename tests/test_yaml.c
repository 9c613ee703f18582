/* Built-in stages, the YAML loader and the example pipelines.
 *
 * The examples are found through $PF_SOURCE_DIR/examples, else relative to
 * the working directory (ctest runs in BUILD/tests: ../../examples). Each is
 * run with a small count and its statistics are checked; YAML errors are
 * checked for "FILE:LINE: " and their message; built-in parameters for
 * messages naming the key and value; the synthetic source for its pool
 * (frames reused, never more than `pool` distinct buffers), its moving
 * pattern and sink.checksum for the documented hash. */
#include <stdint.h>
#include <unistd.h>

#include "pf_test.h"

static char tmpdir[256];

/* Helpers --------------------------------------------------------------------------------- */

static const char *write_temp(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    fputs(text, f);
    fclose(f);
    return path;
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 20]; /* a whole small trace, metadata at its end */
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static const pf_stage_stats *find_stage(const pf_pipeline_stats *s, const char *name)
{
    for (int i = 0; i < s->num_stages; i++)
        if (s->stages[i].name && strcmp(s->stages[i].name, name) == 0) return &s->stages[i];
    return NULL;
}

static const pf_edge_stats *find_edge(const pf_pipeline_stats *s, const char *from, const char *to)
{
    for (int i = 0; i < s->num_edges; i++)
        if (s->edges[i].from && s->edges[i].to && !strcmp(s->edges[i].from, from) &&
            !strcmp(s->edges[i].to, to))
            return &s->edges[i];
    return NULL;
}

/* Loads, runs to the end, fills stats (valid until destroy); returns the pipeline. */
static pf_pipeline *run_yaml(const char *path, const char *text, int64_t count, pf_status *wait_st,
                             pf_pipeline_stats *stats)
{
    pf_pipeline_yaml_params yp = pf_pipeline_yaml_params_default();
    yp.path = path;
    yp.text = text;
    yp.text_len = text ? strlen(text) : 0;
    yp.count = count;
    yp.device = "cpu";
    pf_pipeline *p = NULL;
    pf_status st = pf_pipeline_create_from_yaml(&yp, &p);
    if (st != PF_OK) {
        fprintf(stderr, "  load %s: %s: %s\n", path, pf_status_str(st), pf_last_error());
        return NULL;
    }
    st = pf_pipeline_start(p);
    if (st != PF_OK) {
        fprintf(stderr, "  start %s: %s\n", path, pf_last_error());
        pf_pipeline_destroy(&p);
        return NULL;
    }
    *wait_st = pf_pipeline_wait(p, 120 * 1000000ll);
    if (*wait_st != PF_OK) fprintf(stderr, "  wait %s: %s\n", path, pf_last_error());
    memset(stats, 0, sizeof *stats);
    CHECK_OK(pf_pipeline_get_stats(p, stats));
    return p;
}

static bool yaml_supported(void)
{
    pf_pipeline_yaml_params yp = pf_pipeline_yaml_params_default();
    yp.path = "probe.yaml";
    yp.text = "x";
    yp.text_len = 1;
    pf_pipeline *p = NULL;
    pf_status st = pf_pipeline_create_from_yaml(&yp, &p);
    pf_pipeline_destroy(&p);
    return st != PF_ERR_UNSUPPORTED;
}

/* Built-in stages through the C API --------------------------------------------------------- */

static void test_builtin_registry(void)
{
    int n = 0, sources = 0, sinks = 0;
    pf_builtin_kind k;
    for (; pf_stage_builtin_type(n, &k); n++) {
        if (k == PF_BUILTIN_SOURCE) sources++;
        if (k == PF_BUILTIN_SINK) sinks++;
    }
    CHECK_EQ_INT(n, 21);      /* with ipc.source and ipc.sink */
    CHECK_EQ_INT(sources, 4);
    CHECK_EQ_INT(sinks, 5);
    CHECK(pf_stage_builtin_type(-1, NULL) == NULL);
    CHECK(pf_stage_builtin_type(n, NULL) == NULL);

    pf_stage_param kv[] = {{"fps", "30", 0}, {"count", "5", 0}, {"format", "nv12", 0}};
    pf_stage_config cfg = {.name = "cam", .params = kv, .num_params = 3};
    pf_stage_desc d;
    CHECK_OK(pf_stage_builtin("source.synthetic", &cfg, &d));
    CHECK(d.source != NULL && d.process == NULL);
    CHECK(d.fps == 30.0);
    CHECK_EQ_INT(d.max_items, 5);
    CHECK(d.destroy != NULL && d.user != NULL);
    CHECK(d.name && strcmp(d.name, "cam") == 0);
    if (d.destroy) d.destroy(d.user);

    pf_stage_param rz[] = {{"width", "64", 0}, {"height", "32", 0}};
    cfg = (pf_stage_config){.name = "rz", .params = rz, .num_params = 2};
    CHECK_OK(pf_stage_builtin("ops.resize", &cfg, &d));
    CHECK(d.process != NULL && d.source == NULL);
    CHECK_EQ_INT(d.accepts, PF_MEM_HOST);
    if (d.destroy) d.destroy(d.user);
}

typedef struct param_case {
    const char *type;
    const char *key, *value; /* NULL key: no parameters */
    const char *expect;      /* substring of the message */
} param_case;

static void test_builtin_param_errors(void)
{
    static const param_case cases[] = {
        {"ops.resize", "width", "-5", "width '-5': expected an integer in 1..65536"},
        {"ops.resize", "width", "12x", "width '12x'"},
        {"ops.resize", NULL, NULL, "missing required parameter 'width'"},
        {"ops.resize", "interp", "cubic", "interp 'cubic': expected nearest|bilinear|area"},
        {"ops.resize", "widht", "5", "unknown parameter 'widht'"},
        {"ops.convert", "format", "yuv444", "format 'yuv444'"},
        {"ops.convert", NULL, NULL, "missing required parameter 'format'"},
        {"ops.preprocess", "std", "1,0,1", "std '1,0,1': values must not be 0"},
        {"ops.preprocess", "mean", "1,2", "mean '1,2': expected a list of 3 numbers"},
        {"ops.preprocess", "dtype", "f64", "dtype 'f64': expected f32|f16"},
        {"ops.reproject", "fov", "180", "fov '180': expected a number in (0, 180)"},
        {"ops.reproject", "views", "65", "views '65': expected an integer in 1..64"},
        {"ops.reproject", "yaws", "0,x", "yaws '0,x'"},
        {"ops.mask_threshold", "logits", "maybe", "logits 'maybe': expected true or false"},
        {"ops.composite", "color", "0,300,0", "color '0,300,0'"},
        {"ops.composite", "sigma", "0", "sigma '0'"},
        {"ops.composite", "background", "image", "background 'image'"},
        {"source.synthetic", "pool", "0", "pool '0': expected an integer in 1..1024"},
        {"source.synthetic", "fps", "-1", "fps '-1'"},
        {"source.synthetic", "memory", "gpu", "memory 'gpu': expected host|pinned|device"},
        {"stage.sleep", NULL, NULL, "missing required parameter 'us'"},
        {"stage.sleep", "us", "1e3", "us '1e3'"},
        {"sink.checksum", "file", "", "file ''"},
        {"sink.null", "print", "2", "print '2'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const param_case *c = &cases[i];
        pf_stage_param kv[3];
        int n = 0;
        /* Required keys are given unless the case is about them. */
        if (c->key) kv[n++] = (pf_stage_param){c->key, c->value, 7};
        bool sized = !strcmp(c->type, "ops.resize") || !strcmp(c->type, "ops.preprocess");
        if (sized && c->key && strcmp(c->key, "width") != 0)
            kv[n++] = (pf_stage_param){"width", "8", 0};
        if (sized && c->key && strcmp(c->key, "height") != 0)
            kv[n++] = (pf_stage_param){"height", "8", 0};
        pf_stage_config cfg = {.name = "bad", .params = kv, .num_params = n, .file = "f.yaml",
                               .line = 3};
        pf_stage_desc d;
        memset(&d, 0xAB, sizeof d);
        pf_status st = pf_stage_builtin(c->type, &cfg, &d);
        CHECK_EQ_INT(st, PF_ERR_INVALID);
        CHECK(d.user == NULL && d.process == NULL && d.source == NULL);
        const char *msg = pf_last_error();
        if (!strstr(msg, c->expect) || !strstr(msg, "stage 'bad'")) {
            fprintf(stderr, "  case %zu (%s): message '%s' lacks '%s'\n", i, c->type, msg,
                    c->expect);
            CHECK(0);
        }
        /* The message points at the parameter's line, or the stage's. */
        const char *where = c->key ? "f.yaml:7: " : "f.yaml:3: ";
        if (strncmp(msg, where, strlen(where)) != 0) {
            fprintf(stderr, "  case %zu: message '%s' does not start with '%s'\n", i, msg, where);
            CHECK(0);
        }
    }
    /* Unknown type, duplicate key, no name. */
    pf_stage_config cfg = {.name = "x"};
    pf_stage_desc d;
    CHECK_EQ_INT(pf_stage_builtin("ops.blur", &cfg, &d), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "unknown stage type 'ops.blur'") != NULL);
    CHECK(strstr(pf_last_error(), "ops.resize") != NULL); /* lists the known ones */
    pf_stage_param dup[] = {{"us", "1", 0}, {"us", "2", 0}};
    cfg = (pf_stage_config){.name = "x", .params = dup, .num_params = 2};
    CHECK_EQ_INT(pf_stage_builtin("stage.sleep", &cfg, &d), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "parameter 'us' given twice") != NULL);
    cfg = (pf_stage_config){.name = NULL};
    CHECK_EQ_INT(pf_stage_builtin("sink.null", &cfg, &d), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_stage_builtin("sink.null", NULL, &d), PF_ERR_INVALID);
}

/* The synthetic source's pool and pattern, and sink.checksum's hash -------------------------- */

#define SYN_W 64
#define SYN_H 48
#define SYN_COUNT 40
#define SYN_POOL 3
#define SYN_SPEED 6

typedef struct recorder {
    const void *ptrs[SYN_COUNT];
    int nptrs;
    uint8_t first_row[SYN_COUNT][SYN_W * 3];
    bool seen[SYN_COUNT];
    uint64_t sum;
    int items;
    bool bad;
} recorder;

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static pf_status record_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    (void)ctx;
    recorder *r = user;
    for (int i = 0; i < n; i++) {
        pf_item *it = &items[i];
        const pf_frame *f = &it->frame;
        if (f->format != PF_PIXFMT_RGB24 || f->width != SYN_W || f->height != SYN_H ||
            it->seq < 0 || it->seq >= SYN_COUNT) {
            r->bad = true;
        } else {
            bool known = false;
            for (int k = 0; k < r->nptrs; k++) known |= r->ptrs[k] == f->data[0];
            if (!known && r->nptrs < SYN_COUNT) r->ptrs[r->nptrs++] = f->data[0];
            memcpy(r->first_row[it->seq], f->data[0], SYN_W * 3);
            r->seen[it->seq] = true;
            uint8_t head[16];
            for (int b = 0; b < 8; b++) {
                head[b] = (uint8_t)((uint64_t)(int64_t)it->source >> (8 * b));
                head[8 + b] = (uint8_t)((uint64_t)it->seq >> (8 * b));
            }
            uint64_t h = fnv(0xcbf29ce484222325ull, head, 16);
            for (int y = 0; y < f->height; y++)
                h = fnv(h, f->data[0] + (size_t)y * f->stride[0], (size_t)f->width * 3);
            r->sum += h;
            r->items++;
        }
        pf_item_unref(it);
    }
    return PF_OK;
}

static void test_synthetic_pool_pattern_checksum(void)
{
    char sum_path[512];
    snprintf(sum_path, sizeof sum_path, "%s/syn.sum", tmpdir);
    remove(sum_path);
    pf_pipeline_params pp = pf_pipeline_params_default();
    pp.name = "syn";
    pf_pipeline *p = NULL;
    pf_status cst = pf_pipeline_create(&pp, &p);
    REQUIRE(cst == PF_OK);
    char w[16], h[16], count[16], pool[16], speed[16];
    snprintf(w, sizeof w, "%d", SYN_W);
    snprintf(h, sizeof h, "%d", SYN_H);
    snprintf(count, sizeof count, "%d", SYN_COUNT);
    snprintf(pool, sizeof pool, "%d", SYN_POOL);
    snprintf(speed, sizeof speed, "%d", SYN_SPEED);
    pf_stage_param kv[] = {{"width", w, 0},   {"height", h, 0}, {"count", count, 0},
                           {"pool", pool, 0}, {"source", "3", 0}, {"speed", speed, 0}};
    pf_stage_config cfg = {.name = "syn", .params = kv, .num_params = 6};
    pf_stage_desc d;
    pf_stage *src = NULL, *rec = NULL, *sum = NULL;
    CHECK_OK(pf_stage_builtin("source.synthetic", &cfg, &d));
    CHECK_OK(pf_pipeline_add_stage(p, &d, &src));

    recorder *r = calloc(1, sizeof *r);
    pf_stage_desc rd = pf_stage_desc_default();
    rd.name = "record";
    rd.process = record_process;
    rd.user = r;
    CHECK_OK(pf_pipeline_add_stage(p, &rd, &rec));

    pf_stage_param ck[] = {{"file", sum_path, 0}};
    cfg = (pf_stage_config){.name = "sum", .params = ck, .num_params = 1};
    CHECK_OK(pf_stage_builtin("sink.checksum", &cfg, &d));
    CHECK_OK(pf_pipeline_add_stage(p, &d, &sum));
    pf_edge_params ep = pf_edge_params_default();
    ep.capacity = 1;
    CHECK_OK(pf_pipeline_connect(p, src, rec, &ep));
    CHECK_OK(pf_pipeline_connect(p, src, sum, &ep));
    CHECK_OK(pf_pipeline_start(p));
    CHECK_OK(pf_pipeline_wait(p, 60 * 1000000ll));
    pf_pipeline_destroy(&p);

    CHECK(!r->bad);
    CHECK_EQ_INT(r->items, SYN_COUNT);
    /* Frames come from the pool: at most SYN_POOL distinct buffers were ever seen. */
    CHECK(r->nptrs >= 1 && r->nptrs <= SYN_POOL);
    /* A moving pattern: frame k is frame 0 scrolled left by k * speed pixels. */
    int mismatches = 0, equal_neighbours = 0;
    for (int k = 0; k < SYN_COUNT; k++) {
        if (!r->seen[k]) continue;
        for (int x = 0; x < SYN_W; x++) {
            int sx = (x + k * SYN_SPEED) % SYN_W;
            if (memcmp(&r->first_row[k][3 * x], &r->first_row[0][3 * sx], 3) != 0) mismatches++;
        }
        if (k > 0 && memcmp(r->first_row[k], r->first_row[k - 1], SYN_W * 3) == 0)
            equal_neighbours++;
    }
    CHECK_EQ_INT(mismatches, 0);
    CHECK_EQ_INT(equal_neighbours, 0);
    /* sink.checksum wrote the documented hash sum. */
    const char *text = read_text(sum_path);
    REQUIRE(text != NULL);
    char expect[128];
    snprintf(expect, sizeof expect, "checksum sum: %d items, 0x%016llx\n", SYN_COUNT,
             (unsigned long long)r->sum);
    if (strcmp(text, expect) != 0) {
        fprintf(stderr, "  checksum file '%s', expected '%s'\n", text, expect);
        CHECK(0);
    }
    free(r);
}

/* YAML errors ----------------------------------------------------------------------------- */

typedef struct yaml_case {
    const char *text;
    pf_status status;
    int line;
    const char *expect;
} yaml_case;

#define SRC "  - {name: cam, type: source.synthetic, width: 32, height: 16, count: 2}\n"

static void test_yaml_errors(void)
{
    static const yaml_case cases[] = {
        {"nmae: x\nstages:\n" SRC, PF_ERR_FORMAT, 1, "unknown key 'nmae'"},
        {"stages: foo\n", PF_ERR_FORMAT, 1, "'stages' must be a list, not a scalar"},
        {"name: a\n", PF_ERR_FORMAT, 1, "no 'stages' list"},
        {"", PF_ERR_FORMAT, 1, "the file is empty"},
        {"- a\n- b\n", PF_ERR_FORMAT, 1, "the top level must be a mapping, not a list"},
        {"stages:\n" SRC "  - name: r\n    type: ops.blur\n", PF_ERR_FORMAT, 4,
         "unknown stage type 'ops.blur'"},
        {"stages:\n" SRC "  - name: r\n    type: ops.resize\n    width: -5\n    height: 8\n",
         PF_ERR_FORMAT, 5, "width '-5': expected an integer in 1..65536"},
        {"stages:\n" SRC "  - name: r\n    type: ops.resize\n    width: 8\n    height: 8\n"
         "    widht: 5\n",
         PF_ERR_FORMAT, 7, "unknown parameter 'widht'"},
        {"stages:\n" SRC "  - name: r\n    type: ops.resize\n    width: [1, 2]\n    height: 8\n",
         PF_ERR_FORMAT, 5, "width '1,2'"},
        {"stages:\n" SRC "  - name: r\n    type: ops.resize\n    width: {a: 1}\n",
         PF_ERR_FORMAT, 5, "'width' must be a single value, not a mapping"},
        {"stages:\n" SRC "  - name: cam\n    type: sink.null\n", PF_ERR_FORMAT, 3,
         "duplicate stage name 'cam' (first on line 2)"},
        {"stages:\n" SRC "  - {name: out, type: sink.null}\nedges:\n  - {from: cam, to: outt}\n",
         PF_ERR_FORMAT, 5, "edge to 'outt': no stage has that name"},
        {"stages:\n" SRC "  - {name: out, type: sink.null}\nedges:\n"
         "  - {from: cam, to: out, policy: newest}\n",
         PF_ERR_FORMAT, 5, "policy 'newest'"},
        {"stages:\n" SRC "  - {name: out, type: sink.null}\nedges:\n"
         "  - {from: cam, to: out, capacity: 0}\n",
         PF_ERR_FORMAT, 5, "capacity '0'"},
        {"stages:\n" SRC "  - {name: out, type: sink.null}\nedges:\n"
         "  - {from: cam, to: out, colour: red}\n",
         PF_ERR_FORMAT, 5, "unknown key 'colour' in an edge"},
        {"stages:\n" SRC "  - {name: a, type: stage.sleep, us: 1}\n"
         "  - {name: b, type: stage.sleep, us: 1}\n  - {name: out, type: sink.null}\n"
         "edges:\n  - {from: cam, to: out}\n  - {from: a, to: b}\n  - {from: b, to: a}\n",
         PF_ERR_FORMAT, 9, "edges form a cycle: a -> b -> a"},
        {"stages:\n" SRC "  - {name: a, type: stage.sleep, us: 1}\n"
         "edges:\n  - {from: cam, to: a}\n  - {from: a, to: a}\n",
         PF_ERR_FORMAT, 6, "cycle onto itself"},
        {"stages:\n" SRC "  - {name: a, type: stage.sleep, us: 1}\n"
         "  - {name: b, type: sink.null}\n"
         "edges:\n  - {from: cam, to: a}\n  - {from: a, to: b}\n  - {from: cam, to: a}\n",
         PF_ERR_FORMAT, 8, "edge 'cam' -> 'a' is listed twice (first on line 6)"},
        {"stages:\n" SRC "  - {name: a, type: stage.sleep, us: 1}\n"
         "  - {name: b, type: stage.sleep, us: 1}\n  - {name: out, type: sink.null}\n"
         "edges:\n  - {from: cam, to: a}\n  - {from: a, to: b}\n  - {from: b, to: out}\n"
         "  - {from: b, to: a}\n",
         PF_ERR_FORMAT, 10, "edges form a cycle: a -> b -> a"},
        {"stages:\n" SRC "  - {name: a, type: stage.sleep, us: 1}\n  - {name: b, type: sink.null}\n"
         "edges:\n  - {from: cam, to: b}\n",
         PF_ERR_FORMAT, 3, "stage 'a' (stage.sleep) has no input"},
        {"stages:\n" SRC "  - {name: out, type: sink.null}\nedges:\n  - {from: out, to: cam}\n",
         PF_ERR_FORMAT, 5, "'cam' is a source (source.synthetic) and takes no input"},
        {"stages:\n" SRC "  - {name: out, type: sink.null}\n  - {name: x, type: sink.null}\n"
         "edges:\n  - {from: cam, to: out}\n  - {from: out, to: x}\n",
         PF_ERR_FORMAT, 7, "'out' is a sink (sink.null) and has no output"},
        {"stages:\n" SRC "  - {name: out, type: sink.null, fps: 30}\n", PF_ERR_FORMAT, 3,
         "'fps' applies to sources only"},
        {"stages:\n" SRC "  - {name: out, type: sink.null, threads: 0}\n", PF_ERR_FORMAT, 3,
         "threads '0'"},
        {"stages:\n" SRC "  - name: out\n    type: sink.null\n    batch: {max: 4, wait: 1}\n",
         PF_ERR_FORMAT, 5, "unknown key 'wait' in batch"},
        {"mode: fast\nstages:\n" SRC, PF_ERR_FORMAT, 1, "mode 'fast'"},
        {"strict_transfers: perhaps\nstages:\n" SRC, PF_ERR_FORMAT, 1,
         "strict_transfers 'perhaps'"},
        {"trace_counter_ms: -5\nstages:\n" SRC, PF_ERR_FORMAT, 1, "trace_counter_ms '-5'"},
        {"trace_max_events: 10\nstages:\n" SRC, PF_ERR_FORMAT, 1, "trace_max_events '10'"},
        {"name: a\nname: b\nstages:\n" SRC, PF_ERR_FORMAT, 2, "key 'name' given twice (first on line 1)"},
        {"stages:\n  - {type: sink.null}\n", PF_ERR_FORMAT, 2, "a stage needs a 'name'"},
        {"stages:\n  - {name: x}\n", PF_ERR_FORMAT, 2, "stage 'x' needs a 'type'"},
        {"stages: []\n", PF_ERR_FORMAT, 1, "'stages' is empty"},
        {"stages:\n  - {name: x, type: sink.null\n", PF_ERR_FORMAT, 3, "YAML syntax error"},
        {"stages:\n" SRC "\tbad: tab\n", PF_ERR_FORMAT, 3, "YAML syntax error"},
        {"stages:\n" SRC "---\nname: second\n", PF_ERR_FORMAT, 4, "a second YAML document"},
        {"device: gpu0\nstages:\n" SRC, PF_ERR_FORMAT, 1, "device 'gpu0'"},
        {"stages:\n" SRC "  - {name: o, type: sink.null, device: cuda:63}\n", PF_ERR_NO_DEVICE, 3,
         "device 'cuda:63'"},
        {"stages:\n  - &s {name: x, type: sink.null}\n  - *s\n", PF_ERR_FORMAT, 2,
         "duplicate stage name 'x'"},
        {"stages:\n  - name: x\n    type: sink.null\n    name: y\n", PF_ERR_FORMAT, 4,
         "key 'name' given twice"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const yaml_case *c = &cases[i];
        char name[64];
        snprintf(name, sizeof name, "case%zu.yaml", i);
        const char *path = write_temp(name, c->text);
        REQUIRE(path != NULL);
        char saved[512];
        snprintf(saved, sizeof saved, "%s", path);
        pf_pipeline *p = (pf_pipeline *)&p; /* must come back NULL */
        pf_status st = pf_pipeline_load_yaml(saved, NULL, &p);
        CHECK(p == NULL);
        char prefix[600];
        snprintf(prefix, sizeof prefix, "%s:%d: ", saved, c->line);
        const char *msg = pf_last_error();
        bool ok = st == c->status && strncmp(msg, prefix, strlen(prefix)) == 0 &&
                  strstr(msg, c->expect) != NULL;
        if (!ok) {
            fprintf(stderr, "  case %zu: got %s '%s'\n    expected %s '%s...%s'\n", i,
                    pf_status_str(st), msg, pf_status_str(c->status), prefix, c->expect);
            CHECK(0);
        }
        if (p) pf_pipeline_destroy(&p);
        remove(saved);
    }
    /* In-memory text and files that are not there. */
    pf_pipeline_yaml_params yp = pf_pipeline_yaml_params_default();
    yp.path = "mem.yaml";
    yp.text = "stages: 3\n";
    yp.text_len = strlen(yp.text);
    pf_pipeline *p = NULL;
    CHECK_EQ_INT(pf_pipeline_create_from_yaml(&yp, &p), PF_ERR_FORMAT);
    CHECK(strncmp(pf_last_error(), "mem.yaml:1: ", 12) == 0);
    CHECK_EQ_INT(pf_pipeline_load_yaml("/nonexistent/x.yaml", NULL, &p), PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "/nonexistent/x.yaml") != NULL);
    CHECK(p == NULL);
    yp.mode = 7;
    CHECK_EQ_INT(pf_pipeline_create_from_yaml(&yp, &p), PF_ERR_INVALID);
}

/* The examples ------------------------------------------------------------------------------- */

static char examples[512];

static bool find_examples(void)
{
    const char *env = getenv("PF_SOURCE_DIR");
    const char *candidates[] = {NULL, "../../examples", "../examples", "examples"};
    char buf[512];
    if (env) {
        snprintf(buf, sizeof buf, "%s/examples", env);
        candidates[0] = buf;
    }
    for (int i = 0; i < 4; i++) {
        if (!candidates[i]) continue;
        char probe[600];
        snprintf(probe, sizeof probe, "%s/latency.yaml", candidates[i]);
        FILE *f = fopen(probe, "r");
        if (f) {
            fclose(f);
            snprintf(examples, sizeof examples, "%s", candidates[i]);
            return true;
        }
    }
    return false;
}

static const char *example(const char *name)
{
    static char path[600];
    snprintf(path, sizeof path, "%s/%s", examples, name);
    return path;
}

static void test_example_latency(void)
{
    pf_status wst = PF_ERR_INTERNAL;
    pf_pipeline_stats s;
    const int count = 30;
    pf_pipeline *p = run_yaml(example("latency.yaml"), NULL, count, &wst, &s);
    REQUIRE(p != NULL);
    CHECK_OK(wst);
    const pf_stage_stats *cam = find_stage(&s, "camera"), *out = find_stage(&s, "out");
    REQUIRE(cam && out);
    CHECK_EQ_INT(cam->items_out, count);
    /* Every frame reached the sink or was dropped on an edge: none lost. */
    CHECK_EQ_INT(out->items_in + s.dropped, count);
    /* 60 fps into a 25 ms stage: latest_only had to drop. */
    CHECK(s.dropped > 0);
    CHECK(s.items_completed == out->items_in);
    /* Paced: 30 frames at 60 fps take at least ~0.48 s. */
    CHECK(s.elapsed_s > 0.45);
    pf_pipeline_destroy(&p);
}

static void test_example_throughput(void)
{
    pf_status wst = PF_ERR_INTERNAL;
    pf_pipeline_stats s;
    const int count = 48;
    pf_pipeline *p = run_yaml(example("throughput.yaml"), NULL, count, &wst, &s);
    REQUIRE(p != NULL);
    CHECK_OK(wst);
    const pf_stage_stats *pre = find_stage(&s, "preprocess"), *sink = find_stage(&s, "sink");
    REQUIRE(pre && sink);
    CHECK_EQ_INT(sink->items_in, count);
    CHECK_EQ_INT(s.dropped, 0);
    uint64_t items = 0, batches = 0;
    for (int k = 1; k <= PF_STATS_MAX_BATCH; k++) {
        items += (uint64_t)k * pre->batch_hist[k];
        batches += pre->batch_hist[k];
        if (k > 8) CHECK_EQ_INT(pre->batch_hist[k], 0);
    }
    CHECK_EQ_INT(items, count);
    CHECK(batches < (uint64_t)count); /* some batches held more than one frame */
    pf_pipeline_destroy(&p);
}

static void test_example_fanout(void)
{
    pf_status wst = PF_ERR_INTERNAL;
    pf_pipeline_stats s;
    const int count = 24;
    pf_pipeline *p = run_yaml(example("fanout.yaml"), NULL, count, &wst, &s);
    REQUIRE(p != NULL);
    CHECK_OK(wst);
    const pf_stage_stats *rec = find_stage(&s, "record_out"), *prev = find_stage(&s, "preview_out");
    REQUIRE(rec && prev);
    CHECK_EQ_INT(rec->items_in, count); /* the blocking branch sees every frame */
    CHECK(prev->items_in >= 1 && prev->items_in <= (uint64_t)count);
    const pf_edge_stats *e = find_edge(&s, "camera", "record");
    REQUIRE(e != NULL);
    CHECK_EQ_INT(e->dropped, 0);
    CHECK_EQ_INT(e->policy, PF_EDGE_BLOCK);
    e = find_edge(&s, "camera", "preview");
    REQUIRE(e != NULL);
    CHECK_EQ_INT(e->policy, PF_EDGE_LATEST_ONLY);
    /* The preview branch: what did not arrive was dropped on one of its edges. */
    const pf_edge_stats *e2 = find_edge(&s, "preview", "slow_preview");
    REQUIRE(e2 != NULL);
    CHECK_EQ_INT(prev->items_in + e->dropped + e2->dropped, count);
    pf_pipeline_destroy(&p);
}

static void test_example_reproject(void)
{
    pf_status wst = PF_ERR_INTERNAL;
    pf_pipeline_stats s;
    const int count = 3;
    pf_pipeline *p = run_yaml(example("reproject.yaml"), NULL, count, &wst, &s);
    REQUIRE(p != NULL);
    CHECK_OK(wst);
    const pf_stage_stats *views = find_stage(&s, "views"), *sum = find_stage(&s, "checksum");
    REQUIRE(views && sum);
    CHECK_EQ_INT(views->items_in, count);
    CHECK_EQ_INT(views->items_out, 4 * count); /* one item per view */
    CHECK_EQ_INT(sum->items_in, 4 * count);
    pf_pipeline_destroy(&p);
}

static void test_example_composite(void)
{
    pf_status wst = PF_ERR_INTERNAL;
    pf_pipeline_stats s;
    pf_pipeline *p = run_yaml(example("composite.yaml"), NULL, 6, &wst, &s);
    REQUIRE(p != NULL);
    CHECK_OK(wst);
    const pf_stage_stats *out = find_stage(&s, "out");
    REQUIRE(out != NULL);
    CHECK_EQ_INT(out->items_in + s.dropped, 6);
    CHECK(out->items_in >= 1);
    pf_pipeline_destroy(&p);
}

/* Determinism, overrides, failures ------------------------------------------------------------- */

/* Runs `text` with a checksum file; returns the file's content (static). */
static const char *checksum_of(const char *text_fmt, int count)
{
    static char out[256];
    char path[512], text[2048];
    snprintf(path, sizeof path, "%s/det.sum", tmpdir);
    remove(path);
    snprintf(text, sizeof text, text_fmt, count, path);
    pf_status wst = PF_ERR_INTERNAL;
    pf_pipeline_stats s;
    pf_pipeline *p = run_yaml("det.yaml", text, 0, &wst, &s);
    if (!p) return "";
    CHECK_OK(wst);
    pf_pipeline_destroy(&p); /* stop has run: the file is written */
    const char *t = read_text(path);
    snprintf(out, sizeof out, "%s", t ? t : "");
    return out;
}

static void test_checksum_determinism(void)
{
    static const char *const text =
        "name: det\n"
        "stages:\n"
        "  - {name: pano, type: source.synthetic, width: 256, height: 128, count: %d, pool: 3}\n"
        "  - {name: views, type: ops.reproject, yaws: [0, 120, 240], fov: 100, width: 64,\n"
        "     height: 48, threads: 2}\n"
        "  - {name: rgb, type: ops.convert, format: i420}\n"
        "  - {name: sum, type: sink.checksum, file: '%s'}\n";
    char a[256], b[256], c[256];
    snprintf(a, sizeof a, "%s", checksum_of(text, 5));
    snprintf(b, sizeof b, "%s", checksum_of(text, 5));
    snprintf(c, sizeof c, "%s", checksum_of(text, 6));
    CHECK(strncmp(a, "checksum sum: 15 items, 0x", 26) == 0);
    CHECK(strcmp(a, b) == 0); /* two workers, any order: the same sum */
    CHECK(strncmp(c, "checksum sum: 18 items, 0x", 26) == 0);
    CHECK(strcmp(a + 20, c + 20) != 0);
    if (strcmp(a, b) != 0) fprintf(stderr, "  '%s' vs '%s'\n", a, b);
}

static void test_generated_mask_and_mosaic(void)
{
    static const char *const text =
        "stages:\n"
        "  - {name: cam, type: source.synthetic, width: 96, height: 64, format: nv12, count: %d}\n"
        "  - {name: blend, type: ops.composite, mask: generated, background: color,\n"
        "     color: [0, 0, 255], format: rgba}\n"
        "  - {name: mos, type: ops.reproject, views: 2, width: 32, height: 32, mosaic: true}\n"
        "  - {name: sum, type: sink.checksum, file: '%s'}\n";
    char a[256], b[256];
    snprintf(a, sizeof a, "%s", checksum_of(text, 4));
    snprintf(b, sizeof b, "%s", checksum_of(text, 4));
    CHECK(strncmp(a, "checksum sum: 4 items, 0x", 25) == 0); /* one mosaic item per frame */
    CHECK(strcmp(a, b) == 0);
}

static void test_failure_and_overrides(void)
{
    /* A stage error stops the pipeline; the message names the stage and item. */
    static const char *const failing =
        "stages:\n"
        "  - {name: cam, type: source.synthetic, width: 32, height: 16, count: 50}\n"
        "  - {name: boom, type: stage.fail, at: 3, message: disk full}\n"
        "  - {name: out, type: sink.null}\n";
    pf_status wst = PF_OK;
    pf_pipeline_stats s;
    pf_pipeline *p = run_yaml("fail.yaml", failing, 0, &wst, &s);
    REQUIRE(p != NULL);
    CHECK_EQ_INT(wst, PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "disk full") != NULL);
    CHECK(strstr(pf_last_error(), "boom") != NULL);
    CHECK(s.items_completed <= 3);
    pf_pipeline_destroy(&p);

    /* Overrides: mode, trace and count win over the file. */
    char trace[512];
    snprintf(trace, sizeof trace, "%s/run.trace.json", tmpdir);
    remove(trace);
    pf_pipeline_yaml_params yp = pf_pipeline_yaml_params_default();
    yp.path = "ovr.yaml";
    yp.text = "mode: latency\ntrace: /nonexistent/dir/t.json\nstages:\n"
              "  - {name: cam, type: source.synthetic, width: 32, height: 16, count: 1000}\n"
              "  - {name: out, type: sink.null}\n";
    yp.text_len = strlen(yp.text);
    yp.mode = PF_MODE_THROUGHPUT;
    yp.trace_path = trace;
    yp.count = 7;
    yp.device = "cpu";
    CHECK_OK(pf_pipeline_create_from_yaml(&yp, &p));
    REQUIRE(p != NULL);
    CHECK_OK(pf_pipeline_start(p));
    CHECK_OK(pf_pipeline_wait(p, 60 * 1000000ll));
    memset(&s, 0, sizeof s);
    CHECK_OK(pf_pipeline_get_stats(p, &s));
    CHECK_EQ_INT(s.items_completed, 7);
    pf_pipeline_destroy(&p);
    const char *t = read_text(trace);
    CHECK(t != NULL && strchr(t, '{') != NULL);
    CHECK(t != NULL && strstr(t, "\"dropped_events\":0") != NULL);

    /* trace_max_events from the file bounds the trace buffer: 1024 events
     * cannot hold 2000 items' spans, the rest are counted as dropped. */
    remove(trace);
    yp = pf_pipeline_yaml_params_default();
    yp.path = "small_trace.yaml";
    yp.text = "trace_max_events: 1024\nstages:\n"
              "  - {name: cam, type: source.synthetic, width: 8, height: 8, count: 2000}\n"
              "  - {name: out, type: sink.null}\n";
    yp.text_len = strlen(yp.text);
    yp.trace_path = trace;
    yp.device = "cpu";
    CHECK_OK(pf_pipeline_create_from_yaml(&yp, &p));
    REQUIRE(p != NULL);
    CHECK_OK(pf_pipeline_start(p));
    CHECK_OK(pf_pipeline_wait(p, 60 * 1000000ll));
    pf_pipeline_destroy(&p);
    t = read_text(trace);
    CHECK(t != NULL && strstr(t, "\"max_events\":1024") != NULL);
    CHECK(t != NULL && strstr(t, "\"dropped_events\":0") == NULL &&
          strstr(t, "\"dropped_events\":") != NULL);

    /* The trace_counter_ms override is checked like the file's key. */
    static const int bad_ms[] = {-2, PF_PIPELINE_TRACE_COUNTER_MS_MAX + 1};
    for (int i = 0; i < 2; i++) {
        yp.trace_counter_ms = bad_ms[i];
        CHECK_EQ_INT(pf_pipeline_create_from_yaml(&yp, &p), PF_ERR_INVALID);
        CHECK(strstr(pf_last_error(), "trace_counter_ms") != NULL);
        CHECK(p == NULL);
    }
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/pf_test_yaml_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    PF_RUN(test_builtin_registry);
    PF_RUN(test_builtin_param_errors);
    PF_RUN(test_synthetic_pool_pattern_checksum);
    if (!yaml_supported()) {
        printf("YAML support not compiled in: pf_pipeline_load_yaml returns %s (%s)\n",
               pf_status_str(PF_ERR_UNSUPPORTED), pf_last_error());
    } else {
        PF_RUN(test_yaml_errors);
        PF_RUN(test_checksum_determinism);
        PF_RUN(test_generated_mask_and_mosaic);
        PF_RUN(test_failure_and_overrides);
        if (find_examples()) {
            printf("examples in %s\n", examples);
            PF_RUN(test_example_latency);
            PF_RUN(test_example_throughput);
            PF_RUN(test_example_fanout);
            PF_RUN(test_example_reproject);
            PF_RUN(test_example_composite);
        } else {
            fprintf(stderr, "FAIL: examples/ not found (set PF_SOURCE_DIR)\n");
            pf_test_failed++;
        }
    }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return pf_test_finish();
}
