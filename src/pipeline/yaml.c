/* YAML pipelines (pipeline.h, "YAML pipelines"; format in docs/pipeline-yaml.md).
 *
 * Design. libyaml loads the whole document into a node tree that keeps a
 * start mark (line, column) for every node; the loader then walks that tree
 * along the schema only (the root map, the stage and edge lists, a stage's
 * keys, `batch`), so its depth is fixed whatever the input: anchors and
 * aliases cannot make it recurse or loop, and sizes are capped (stages,
 * edges, parameters, joined list lengths), which keeps fuzzed inputs cheap.
 *
 * Everything is checked before a pipeline exists: keys, types, values,
 * stage types and their parameters (pf_stage_builtin validates them, given
 * each parameter's line), names, and the graph (one input per stage,
 * sources without inputs, sinks without outputs, no cycles). Each error
 * names FILE:LINE of the offending key or value and is PF_ERR_FORMAT, except
 * where the file is fine and the machine is not (a device that is not
 * there: PF_ERR_NO_DEVICE; an unreadable file: PF_ERR_IO). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "builtin_impl.h"

pf_pipeline_yaml_params pf_pipeline_yaml_params_default(void)
{
    pf_pipeline_yaml_params p;
    memset(&p, 0, sizeof p);
    p.base = pf_pipeline_params_default();
    p.mode = -1;
    p.trace_counter_ms = -1;
    return p;
}

pf_status pf_pipeline_load_yaml(const char *path, const pf_pipeline_params *base,
                                pf_pipeline **out)
{
    pf_pipeline_yaml_params p = pf_pipeline_yaml_params_default();
    p.path = path;
    if (base) p.base = *base;
    return pf_pipeline_create_from_yaml(&p, out);
}

#ifndef PF_HAVE_YAML

pf_status pf_pipeline_create_from_yaml(const pf_pipeline_yaml_params *p, pf_pipeline **out)
{
    if (out) *out = NULL;
    return pf_set_error(PF_ERR_UNSUPPORTED,
                        "%s: YAML pipelines are not available in this build of pixflow (libyaml "
                        "was not found when it was built); build the pipeline with the C API "
                        "(pf_stage_builtin) instead",
                        p && p->path ? p->path : "pf_pipeline_create_from_yaml");
}

#else

#include <yaml.h>

#define YL_MAX_FILE ((size_t)16 << 20)
#define YL_MAX_STAGES 1024
#define YL_MAX_EDGES 4096
#define YL_MAX_PARAMS 64
#define YL_MAX_LIST 4096 /* bytes of a joined list value */
/* Nesting of sequences and maps. The schema needs 5 (root map, stages, a stage, a parameter's
 * list or map, its items); libyaml's scanner does work proportional to the nesting at every
 * token, so 100k '[' took 46 s before it was bounded. */
#define YL_MAX_DEPTH 64

typedef struct ystage {
    const char *name, *type;
    int line;                  /* the stage's mapping */
    int name_line, type_line;
    pf_builtin_kind kind;
    const char *device;
    int device_line;
    int64_t threads;
    bool has_threads;
    bool ordered;
    int64_t batch_max, batch_delay;
    bool has_batch;
    pf_stage_param params[YL_MAX_PARAMS];
    char *joined[YL_MAX_PARAMS]; /* owned list values */
    int nparams;
    int input;                 /* an edge feeding it (the last listed), or -1 */
    yaml_node_t *inputs;       /* `inputs:` (a name or a list of names), or NULL */
    bool errors_leave;         /* on_error: leave (sources) */
    int noutputs;
} ystage;

typedef struct yedge {
    int from, to;              /* stage indices */
    int line, from_line, to_line;
    pf_edge_params params;
} yedge;

typedef struct yl {
    const char *file;
    yaml_document_t doc;
    bool have_doc;
    /* top level */
    const char *name, *mode, *device, *trace;
    int name_line, mode_line, device_line, trace_line;
    bool strict, has_strict;
    int64_t trace_counter_ms, trace_max_events; /* -1: not in the file */
    ystage *stages;
    int nstages;
    yedge *edges;
    int nedges;
    bool has_edges;
} yl;

static int line_of(const yaml_node_t *n)
{
    return n ? (int)n->start_mark.line + 1 : 0;
}

static pf_status yl_error(const yl *y, int line, pf_status st, const char *fmt, ...)
    PF_PRINTF(4, 5);
static pf_status yl_error(const yl *y, int line, pf_status st, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0) return pf_set_error(st, "%s:%d: %s", y->file, line, msg);
    return pf_set_error(st, "%s: %s", y->file, msg);
}

static const char *kind_name(yaml_node_type_t t)
{
    switch (t) {
    case YAML_SCALAR_NODE: return "a scalar";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "nothing";
    }
}

/* The scalar text of `n` (the value of `key`), or an error. */
static pf_status scalar(const yl *y, const yaml_node_t *n, const char *key, const char **out)
{
    if (!n || n->type != YAML_SCALAR_NODE)
        return yl_error(y, line_of(n), PF_ERR_FORMAT, "'%s' must be a single value, not %s", key,
                        n ? kind_name(n->type) : "nothing");
    const char *s = (const char *)n->data.scalar.value;
    if (strlen(s) != n->data.scalar.length)
        return yl_error(y, line_of(n), PF_ERR_FORMAT, "the value of '%s' contains a NUL byte",
                        key);
    *out = s;
    return PF_OK;
}

static pf_status nonempty(const yl *y, const yaml_node_t *n, const char *key, const char **out)
{
    pf_status st = scalar(y, n, key, out);
    if (st == PF_OK && !(*out)[0])
        return yl_error(y, line_of(n), PF_ERR_FORMAT, "'%s' must not be empty", key);
    return st;
}

/* nonempty, also noting the value's line. */
static pf_status nonempty_at(const yl *y, const yaml_node_t *n, const char *key, const char **out,
                             int *line)
{
    *line = line_of(n);
    return nonempty(y, n, key, out);
}

static pf_status int_value(const yl *y, const yaml_node_t *n, const char *key, int64_t lo,
                           int64_t hi, int64_t *out)
{
    const char *s = NULL;
    pf_status st = scalar(y, n, key, &s);
    if (st != PF_OK) return st;
    if (!pf_parse_i64(s, out) || *out < lo || *out > hi)
        return yl_error(y, line_of(n), PF_ERR_FORMAT,
                        "%s '%s': expected an integer in %lld..%lld", key, s, (long long)lo,
                        (long long)hi);
    return PF_OK;
}

static pf_status bool_value(const yl *y, const yaml_node_t *n, const char *key, bool *out)
{
    const char *s = NULL;
    pf_status st = scalar(y, n, key, &s);
    if (st != PF_OK) return st;
    if (!pf_parse_bool(s, out))
        return yl_error(y, line_of(n), PF_ERR_FORMAT, "%s '%s': expected true or false", key, s);
    return PF_OK;
}

/* Iterates a mapping's pairs checking keys are scalars and unique. */
typedef struct pair_iter {
    const yl *y;
    yaml_node_t *map;
    yaml_node_pair_t *pos;
} pair_iter;

static pf_status next_pair(pair_iter *it, const char **key, yaml_node_t **kn, yaml_node_t **vn,
                           bool *done)
{
    const yl *y = it->y;
    if (it->pos >= it->map->data.mapping.pairs.top) {
        *done = true;
        return PF_OK;
    }
    *done = false;
    yaml_node_pair_t *pair = it->pos++;
    yaml_node_t *k = yaml_document_get_node((yaml_document_t *)&y->doc, pair->key);
    yaml_node_t *v = yaml_document_get_node((yaml_document_t *)&y->doc, pair->value);
    if (!k || k->type != YAML_SCALAR_NODE)
        return yl_error(y, line_of(k), PF_ERR_FORMAT, "a key must be a plain name, not %s",
                        k ? kind_name(k->type) : "nothing");
    const char *ks = (const char *)k->data.scalar.value;
    if (strlen(ks) != k->data.scalar.length || !ks[0])
        return yl_error(y, line_of(k), PF_ERR_FORMAT, "empty key or key with a NUL byte");
    for (yaml_node_pair_t *p = it->map->data.mapping.pairs.start; p < pair; p++) {
        yaml_node_t *pk = yaml_document_get_node((yaml_document_t *)&y->doc, p->key);
        if (pk && pk->type == YAML_SCALAR_NODE && strcmp((const char *)pk->data.scalar.value, ks) == 0)
            return yl_error(y, line_of(k), PF_ERR_FORMAT, "key '%s' given twice (first on line %d)",
                            ks, line_of(pk));
    }
    *key = ks;
    *kn = k;
    *vn = v;
    return PF_OK;
}

static pf_status expect(const yl *y, const yaml_node_t *n, yaml_node_type_t t, const char *what)
{
    if (n && n->type == t) return PF_OK;
    return yl_error(y, line_of(n), PF_ERR_FORMAT, "%s must be %s, not %s", what, kind_name(t),
                    n ? kind_name(n->type) : "nothing");
}

/* Stages -------------------------------------------------------------------------------- */

static const char *const stage_keys =
    "name, type, device, threads, ordered, batch, inputs, fps, count, on_error, or the type's "
    "parameters";

static pf_status add_param(yl *y, ystage *s, const char *key, yaml_node_t *kn, yaml_node_t *vn)
{
    if (s->nparams == YL_MAX_PARAMS)
        return yl_error(y, line_of(kn), PF_ERR_FORMAT, "stage has more than %d parameters",
                        YL_MAX_PARAMS);
    pf_stage_param *p = &s->params[s->nparams];
    p->key = key;
    p->line = line_of(vn);
    if (vn && vn->type == YAML_SEQUENCE_NODE) {
        /* A list of scalars becomes "a,b,c" (pipeline.h, value syntax). */
        char *buf = malloc(YL_MAX_LIST);
        if (!buf) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", y->file);
        size_t len = 0;
        buf[0] = '\0';
        for (yaml_node_item_t *i = vn->data.sequence.items.start; i < vn->data.sequence.items.top;
             i++) {
            yaml_node_t *e = yaml_document_get_node(&y->doc, *i);
            const char *v = NULL;
            pf_status st = scalar(y, e, key, &v);
            if (st == PF_OK && strchr(v, ','))
                st = yl_error(y, line_of(e), PF_ERR_FORMAT,
                              "an element of '%s' contains a comma: '%s'", key, v);
            size_t vl = st == PF_OK ? strlen(v) : 0;
            if (st == PF_OK && len + vl + 2 > YL_MAX_LIST)
                st = yl_error(y, line_of(vn), PF_ERR_FORMAT, "the list '%s' is too long", key);
            if (st != PF_OK) {
                free(buf);
                return st;
            }
            if (len) buf[len++] = ',';
            memcpy(buf + len, v, vl + 1);
            len += vl;
        }
        s->joined[s->nparams] = buf;
        p->value = buf;
    } else {
        pf_status st = scalar(y, vn, key, &p->value);
        if (st != PF_OK) return st;
    }
    s->nparams++;
    return PF_OK;
}

static pf_status parse_batch(yl *y, ystage *s, yaml_node_t *vn)
{
    s->has_batch = true;
    s->batch_max = 1;
    s->batch_delay = 0;
    if (vn && vn->type == YAML_SCALAR_NODE) /* shorthand: batch: 8 */
        return int_value(y, vn, "batch", 1, PF_STATS_MAX_BATCH, &s->batch_max);
    pf_status st = expect(y, vn, YAML_MAPPING_NODE, "'batch'");
    if (st != PF_OK) return st;
    pair_iter it = {y, vn, vn->data.mapping.pairs.start};
    for (;;) {
        const char *key;
        yaml_node_t *kn, *v;
        bool done;
        st = next_pair(&it, &key, &kn, &v, &done);
        if (st != PF_OK || done) return st;
        if (!strcmp(key, "max"))
            st = int_value(y, v, "batch.max", 1, PF_STATS_MAX_BATCH, &s->batch_max);
        else if (!strcmp(key, "delay_us"))
            st = int_value(y, v, "batch.delay_us", 0, 60000000, &s->batch_delay);
        else
            st = yl_error(y, line_of(kn), PF_ERR_FORMAT,
                          "unknown key '%s' in batch (known: max, delay_us)", key);
        if (st != PF_OK) return st;
    }
}

static pf_builtin_kind kind_of(const char *type, bool *found)
{
    pf_builtin_kind k = PF_BUILTIN_PROCESS;
    *found = false;
    for (int i = 0;; i++) {
        const char *t = pf_stage_builtin_type(i, &k);
        if (!t) break;
        if (!strcmp(t, type)) {
            *found = true;
            return k;
        }
    }
    return PF_BUILTIN_PROCESS;
}

static pf_status parse_stage(yl *y, ystage *s, yaml_node_t *n)
{
    pf_status st = expect(y, n, YAML_MAPPING_NODE, "a stage");
    if (st != PF_OK) return st;
    memset(s, 0, sizeof *s);
    s->line = line_of(n);
    s->input = -1;
    yaml_node_t *fps_k = NULL, *fps_v = NULL, *count_k = NULL, *count_v = NULL, *on_error_k = NULL;
    const char *fps_key = NULL, *count_key = NULL;
    pair_iter it = {y, n, n->data.mapping.pairs.start};
    for (;;) {
        const char *key;
        yaml_node_t *kn, *v;
        bool done;
        st = next_pair(&it, &key, &kn, &v, &done);
        if (st != PF_OK) return st;
        if (done) break;
        if (!strcmp(key, "name")) {
            st = nonempty_at(y, v, "name", &s->name, &s->name_line);
        } else if (!strcmp(key, "type")) {
            st = nonempty_at(y, v, "type", &s->type, &s->type_line);
        } else if (!strcmp(key, "device")) {
            st = nonempty_at(y, v, "device", &s->device, &s->device_line);
        } else if (!strcmp(key, "threads")) {
            st = int_value(y, v, "threads", 1, BI_MAX_THREADS, &s->threads);
            s->has_threads = true;
        } else if (!strcmp(key, "ordered")) {
            st = bool_value(y, v, "ordered", &s->ordered);
        } else if (!strcmp(key, "batch")) {
            st = parse_batch(y, s, v);
        } else if (!strcmp(key, "inputs")) {
            s->inputs = v; /* names resolved once every stage is known */
        } else if (!strcmp(key, "on_error")) {
            const char *how;
            st = nonempty(y, v, "on_error", &how);
            if (st == PF_OK && strcmp(how, "stop") && strcmp(how, "leave"))
                st = yl_error(y, line_of(v), PF_ERR_FORMAT,
                              "stage '%s': on_error '%s': expected stop|leave",
                              s->name ? s->name : "?", how);
            s->errors_leave = st == PF_OK && !strcmp(how, "leave");
            on_error_k = kn;
        } else if (!strcmp(key, "fps")) {
            fps_key = key, fps_k = kn, fps_v = v;
        } else if (!strcmp(key, "count")) {
            count_key = key, count_k = kn, count_v = v;
        } else {
            st = add_param(y, s, key, kn, v);
        }
        if (st != PF_OK) return st;
    }
    if (!s->name)
        return yl_error(y, s->line, PF_ERR_FORMAT, "a stage needs a 'name' (keys: %s)",
                        stage_keys);
    if (!s->type)
        return yl_error(y, s->line, PF_ERR_FORMAT, "stage '%s' needs a 'type'", s->name);
    bool known;
    s->kind = kind_of(s->type, &known);
    if (!known) {
        char list[512];
        size_t len = 0;
        list[0] = '\0';
        for (int i = 0; pf_stage_builtin_type(i, NULL) && len < sizeof list; i++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "",
                                    pf_stage_builtin_type(i, NULL));
        return yl_error(y, s->type_line, PF_ERR_FORMAT,
                        "stage '%s': unknown stage type '%s' (known: %s)", s->name, s->type, list);
    }
    if (on_error_k && s->kind != PF_BUILTIN_SOURCE)
        return yl_error(y, line_of(on_error_k), PF_ERR_FORMAT,
                        "stage '%s': 'on_error' applies to sources only", s->name);
    /* Pacing and length belong to sources; a source type takes them as
     * parameters (so a C user sets them the same way). */
    const char *gk[2] = {fps_key, count_key};
    yaml_node_t *gkn[2] = {fps_k, count_k}, *gvn[2] = {fps_v, count_v};
    for (int i = 0; i < 2; i++) {
        if (!gk[i]) continue;
        if (s->kind != PF_BUILTIN_SOURCE)
            return yl_error(y, line_of(gkn[i]), PF_ERR_FORMAT,
                            "stage '%s': '%s' applies to sources only ('%s' is %s)", s->name,
                            gk[i], s->type, s->kind == PF_BUILTIN_SINK ? "a sink" : "a processing stage");
        st = add_param(y, s, gk[i], gkn[i], gvn[i]);
        if (st != PF_OK) return st;
    }
    return PF_OK;
}

static pf_status parse_stages(yl *y, yaml_node_t *n)
{
    pf_status st = expect(y, n, YAML_SEQUENCE_NODE, "'stages'");
    if (st != PF_OK) return st;
    int count = (int)(n->data.sequence.items.top - n->data.sequence.items.start);
    if (count == 0) return yl_error(y, line_of(n), PF_ERR_FORMAT, "'stages' is empty");
    if (count > YL_MAX_STAGES)
        return yl_error(y, line_of(n), PF_ERR_FORMAT, "%d stages; at most %d", count,
                        YL_MAX_STAGES);
    y->stages = calloc((size_t)count, sizeof *y->stages);
    if (!y->stages) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", y->file);
    for (int i = 0; i < count; i++) {
        yaml_node_t *sn = yaml_document_get_node(&y->doc, n->data.sequence.items.start[i]);
        y->nstages = i + 1; /* so its joined strings are freed whatever happens */
        st = parse_stage(y, &y->stages[i], sn);
        if (st != PF_OK) return st;
        for (int j = 0; j < i; j++)
            if (!strcmp(y->stages[j].name, y->stages[i].name))
                return yl_error(y, y->stages[i].name_line, PF_ERR_FORMAT,
                                "duplicate stage name '%s' (first on line %d)", y->stages[i].name,
                                y->stages[j].name_line);
    }
    return PF_OK;
}

/* Edges ---------------------------------------------------------------------------------- */

static int stage_index(const yl *y, const char *name)
{
    for (int i = 0; i < y->nstages; i++)
        if (!strcmp(y->stages[i].name, name)) return i;
    return -1;
}

static pf_status stage_ref(const yl *y, yaml_node_t *v, const char *key, int *out)
{
    const char *name;
    pf_status st = nonempty(y, v, key, &name);
    if (st != PF_OK) return st;
    *out = stage_index(y, name);
    if (*out < 0)
        return yl_error(y, line_of(v), PF_ERR_FORMAT, "edge %s '%s': no stage has that name", key,
                        name);
    return PF_OK;
}

static pf_status parse_edge(yl *y, yedge *e, yaml_node_t *n)
{
    pf_status st = expect(y, n, YAML_MAPPING_NODE, "an edge");
    if (st != PF_OK) return st;
    e->line = line_of(n);
    e->from = e->to = -1;
    e->params = pf_edge_params_default();
    pair_iter it = {y, n, n->data.mapping.pairs.start};
    for (;;) {
        const char *key = NULL, *s = NULL;
        yaml_node_t *kn, *v;
        bool done;
        st = next_pair(&it, &key, &kn, &v, &done);
        if (st != PF_OK) return st;
        if (done) break;
        if (!strcmp(key, "from")) {
            st = stage_ref(y, v, "from", &e->from);
            e->from_line = line_of(v);
        } else if (!strcmp(key, "to")) {
            st = stage_ref(y, v, "to", &e->to);
            e->to_line = line_of(v);
        } else if (!strcmp(key, "capacity")) {
            int64_t c;
            st = int_value(y, v, "capacity", 1, 1 << 20, &c);
            e->params.capacity = (int)c;
        } else if (!strcmp(key, "policy")) {
            st = scalar(y, v, "policy", &s);
            if (st == PF_OK && pf_edge_policy_parse(s, &e->params.policy) != PF_OK)
                st = yl_error(y, line_of(v), PF_ERR_FORMAT,
                              "policy '%s': expected block|drop_oldest|drop_newest|latest_only",
                              s);
        } else {
            st = yl_error(y, line_of(kn), PF_ERR_FORMAT,
                          "unknown key '%s' in an edge (known: from, to, capacity, policy)", key);
        }
        if (st != PF_OK) return st;
    }
    if (e->from < 0 || e->to < 0)
        return yl_error(y, e->line, PF_ERR_FORMAT, "an edge needs both 'from' and 'to'");
    return PF_OK;
}

static pf_status parse_edges(yl *y, yaml_node_t *n)
{
    pf_status st = expect(y, n, YAML_SEQUENCE_NODE, "'edges'");
    if (st != PF_OK) return st;
    int count = (int)(n->data.sequence.items.top - n->data.sequence.items.start);
    if (count > YL_MAX_EDGES)
        return yl_error(y, line_of(n), PF_ERR_FORMAT, "%d edges; at most %d", count, YL_MAX_EDGES);
    y->edges = calloc(count > 0 ? (size_t)count : 1, sizeof *y->edges);
    if (!y->edges) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", y->file);
    for (int i = 0; i < count; i++) {
        yaml_node_t *en = yaml_document_get_node(&y->doc, n->data.sequence.items.start[i]);
        st = parse_edge(y, &y->edges[i], en);
        if (st != PF_OK) return st;
        y->nedges = i + 1;
    }
    return PF_OK;
}

/* A stage's `inputs: [a, b]` (or `inputs: a`): one default edge from each,
 * appended after the `edges` list. */
static pf_status inputs_edges(yl *y)
{
    int extra = 0;
    for (int i = 0; i < y->nstages; i++) {
        yaml_node_t *n = y->stages[i].inputs;
        if (!n) continue;
        if (n->type == YAML_SEQUENCE_NODE)
            extra += (int)(n->data.sequence.items.top - n->data.sequence.items.start);
        else
            extra++;
    }
    if (y->nedges + extra > YL_MAX_EDGES)
        return yl_error(y, 0, PF_ERR_FORMAT, "%d edges with the stages' inputs; at most %d",
                        y->nedges + extra, YL_MAX_EDGES);
    yedge *ne = realloc(y->edges, (size_t)(y->nedges + extra + 1) * sizeof *ne);
    if (!ne) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", y->file);
    y->edges = ne;
    for (int i = 0; i < y->nstages; i++) {
        yaml_node_t *n = y->stages[i].inputs;
        if (!n) continue;
        int count = 1;
        if (n->type == YAML_SEQUENCE_NODE) {
            count = (int)(n->data.sequence.items.top - n->data.sequence.items.start);
            if (count == 0)
                return yl_error(y, line_of(n), PF_ERR_FORMAT, "stage '%s': 'inputs' is empty",
                                y->stages[i].name);
        }
        for (int k = 0; k < count; k++) {
            yaml_node_t *v = n->type == YAML_SEQUENCE_NODE
                                 ? yaml_document_get_node(&y->doc, n->data.sequence.items.start[k])
                                 : n;
            yedge *e = &y->edges[y->nedges];
            memset(e, 0, sizeof *e);
            pf_status st = stage_ref(y, v, "inputs", &e->from);
            if (st != PF_OK) return st;
            e->to = i;
            e->line = e->from_line = line_of(v);
            e->to_line = y->stages[i].name_line;
            e->params = pf_edge_params_default();
            y->nedges++;
        }
    }
    return PF_OK;
}

/* Without `edges` or `inputs`: the stages form a chain in the order listed. */
static pf_status chain_edges(yl *y)
{
    y->edges = calloc(y->nstages > 0 ? (size_t)y->nstages : 1, sizeof *y->edges);
    if (!y->edges) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", y->file);
    for (int i = 0; i + 1 < y->nstages; i++) {
        yedge *e = &y->edges[y->nedges++];
        e->from = i;
        e->to = i + 1;
        e->line = e->from_line = e->to_line = y->stages[i + 1].line;
        e->params = pf_edge_params_default();
    }
    return PF_OK;
}

/* Depth-first search upstream (against the edges) from stage v for a cycle.
 * nodes[0..depth] is the path walked (nodes[j] fed nodes[j - 1]). On finding
 * one, fills cyc[] with its stages in downstream order starting at its
 * first stage and returns the count; 0 when none is reachable from v. */
static int find_cycle(const yl *y, int v, int *color, int *nodes, int depth, int *cyc)
{
    color[v] = 1;
    nodes[depth] = v;
    for (int i = 0; i < y->nedges; i++) {
        const yedge *e = &y->edges[i];
        if (e->to != v) continue;
        int u = e->from;
        if (color[u] == 1) {
            /* u is on the path: u -> v (= nodes[depth]) -> nodes[depth-1] ... -> u */
            int k = depth;
            while (k > 0 && nodes[k] != u) k--;
            int n = 0;
            cyc[n++] = u;
            for (int j = depth; j > k; j--) cyc[n++] = nodes[j];
            return n;
        }
        if (color[u] == 0) {
            int n = find_cycle(y, u, color, nodes, depth + 1, cyc);
            if (n) return n;
        }
    }
    color[v] = 2;
    return 0;
}

/* The line of the edge a -> b listed last (the one that closed the cycle). */
static int last_edge(const yl *y, int a, int b)
{
    int last = -1;
    for (int i = 0; i < y->nedges; i++)
        if (y->edges[i].from == a && y->edges[i].to == b) last = i;
    return last;
}

/* No input for sources, no outputs from sinks, each pair of stages joined
 * at most once, no cycles, every non-source fed. A stage may have several
 * inputs (fan-in: a muxer). */
static pf_status check_graph(yl *y)
{
    for (int i = 0; i < y->nedges; i++) {
        yedge *e = &y->edges[i];
        ystage *from = &y->stages[e->from], *to = &y->stages[e->to];
        if (to->kind == PF_BUILTIN_SOURCE)
            return yl_error(y, e->to_line, PF_ERR_FORMAT,
                            "edge '%s' -> '%s': '%s' is a source (%s) and takes no input",
                            from->name, to->name, to->name, to->type);
        if (from->kind == PF_BUILTIN_SINK)
            return yl_error(y, e->from_line, PF_ERR_FORMAT,
                            "edge '%s' -> '%s': '%s' is a sink (%s) and has no output",
                            from->name, to->name, from->name, from->type);
        if (e->from == e->to)
            return yl_error(y, e->line, PF_ERR_FORMAT, "edge '%s' -> '%s' is a cycle onto itself",
                            from->name, to->name);
        for (int j = 0; j < i; j++)
            if (y->edges[j].from == e->from && y->edges[j].to == e->to)
                return yl_error(y, e->line, PF_ERR_FORMAT,
                                "edge '%s' -> '%s' is listed twice (first on line %d)", from->name,
                                to->name, y->edges[j].line);
        to->input = i;
        from->noutputs++;
    }
    int *color = calloc((size_t)y->nstages * 3, sizeof *color);
    if (!color) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", y->file);
    int *nodes = color + y->nstages, *cyc = nodes + y->nstages;
    for (int i = 0; i < y->nstages; i++) {
        if (color[i]) continue;
        int n = find_cycle(y, i, color, nodes, 0, cyc);
        if (!n) continue;
        /* Report the cycle's edge listed last, the loop spelled out from the
         * stage it feeds. */
        int last = -1, head = 0;
        for (int k = 0; k < n; k++) {
            int ei = last_edge(y, cyc[k], cyc[(k + 1) % n]);
            if (ei > last) {
                last = ei;
                head = (k + 1) % n;
            }
        }
        char loop[1024];
        size_t len = 0;
        for (int k = 0; k <= n && len < sizeof loop; k++)
            len += (size_t)snprintf(loop + len, sizeof loop - len, "%s%s", k ? " -> " : "",
                                    y->stages[cyc[(head + k) % n]].name);
        free(color);
        return yl_error(y, y->edges[last].line, PF_ERR_FORMAT, "edges form a cycle: %s", loop);
    }
    free(color);
    for (int i = 0; i < y->nstages; i++) {
        ystage *s = &y->stages[i];
        if (s->kind != PF_BUILTIN_SOURCE && s->input < 0)
            return yl_error(y, s->name_line, PF_ERR_FORMAT,
                            "stage '%s' (%s) has no input: add an edge to it", s->name, s->type);
    }
    return PF_OK;
}

/* Top level ------------------------------------------------------------------------------- */

static pf_status parse_root(yl *y, yaml_node_t *root)
{
    if (!root)
        return yl_error(y, 1, PF_ERR_FORMAT, "the file is empty; expected a mapping with 'stages'");
    pf_status st = expect(y, root, YAML_MAPPING_NODE, "the top level");
    if (st != PF_OK) return st;
    yaml_node_t *stages = NULL, *edges = NULL;
    pair_iter it = {y, root, root->data.mapping.pairs.start};
    for (;;) {
        const char *key;
        yaml_node_t *kn, *v;
        bool done;
        st = next_pair(&it, &key, &kn, &v, &done);
        if (st != PF_OK) return st;
        if (done) break;
        if (!strcmp(key, "name")) {
            st = nonempty_at(y, v, "name", &y->name, &y->name_line);
        } else if (!strcmp(key, "mode")) {
            st = nonempty_at(y, v, "mode", &y->mode, &y->mode_line);
        } else if (!strcmp(key, "device")) {
            st = nonempty_at(y, v, "device", &y->device, &y->device_line);
        } else if (!strcmp(key, "strict_transfers")) {
            st = bool_value(y, v, "strict_transfers", &y->strict);
            y->has_strict = true;
        } else if (!strcmp(key, "trace")) {
            st = nonempty_at(y, v, "trace", &y->trace, &y->trace_line);
        } else if (!strcmp(key, "trace_counter_ms")) {
            st = int_value(y, v, "trace_counter_ms", 0, PF_PIPELINE_TRACE_COUNTER_MS_MAX,
                           &y->trace_counter_ms);
        } else if (!strcmp(key, "trace_max_events")) {
            st = int_value(y, v, "trace_max_events", 1024, (int64_t)1 << 30, &y->trace_max_events);
        } else if (!strcmp(key, "stages")) {
            stages = v;
        } else if (!strcmp(key, "edges")) {
            edges = v;
        } else {
            st = yl_error(y, line_of(kn), PF_ERR_FORMAT,
                          "unknown key '%s' (known: name, mode, device, strict_transfers, trace, "
                          "trace_counter_ms, trace_max_events, stages, edges)",
                          key);
        }
        if (st != PF_OK) return st;
    }
    if (!stages) return yl_error(y, line_of(root), PF_ERR_FORMAT, "no 'stages' list");
    st = parse_stages(y, stages);
    if (st != PF_OK) return st;
    y->has_edges = edges != NULL;
    bool any_inputs = false;
    for (int i = 0; i < y->nstages; i++) any_inputs |= y->stages[i].inputs != NULL;
    st = edges ? parse_edges(y, edges) : any_inputs ? PF_OK : chain_edges(y);
    if (st == PF_OK && any_inputs) st = inputs_edges(y);
    if (st != PF_OK) return st;
    return check_graph(y);
}

static pf_status parse_mode(const yl *y, const char *s, int line, pf_pipeline_mode *out)
{
    if (!strcmp(s, "latency")) *out = PF_MODE_LATENCY;
    else if (!strcmp(s, "throughput")) *out = PF_MODE_THROUGHPUT;
    else if (!strcmp(s, "custom")) *out = PF_MODE_CUSTOM;
    else
        return yl_error(y, line, PF_ERR_FORMAT, "mode '%s': expected latency|throughput|custom", s);
    return PF_OK;
}

/* spec NULL: the file leaves the device to the machine (no key, or 'auto'), so PIXFLOW_DEVICE
 * decides as it does for every other command, else auto (pf_device_select(NULL)). */
static pf_status select_device(const yl *y, const char *spec, int line, pf_device **out)
{
    pf_status st = pf_device_select(spec, out);
    if (st == PF_OK) return PF_OK;
    char msg[768];
    snprintf(msg, sizeof msg, "%s", pf_last_error());
    if (!spec) return yl_error(y, line, st == PF_ERR_INVALID ? PF_ERR_FORMAT : st, "%s", msg);
    return yl_error(y, line, st == PF_ERR_INVALID ? PF_ERR_FORMAT : st, "device '%s': %s", spec,
                    msg);
}

/* Makes the pipeline from the checked description. */
static pf_status build(yl *y, const pf_pipeline_yaml_params *prm, pf_pipeline **out)
{
    pf_pipeline_params pp = prm->base;
    pf_status st;
    if (y->name) pp.name = y->name;
    if (y->mode) {
        st = parse_mode(y, y->mode, y->mode_line, &pp.mode);
        if (st != PF_OK) return st;
    }
    if (prm->mode >= 0) pp.mode = (pf_pipeline_mode)prm->mode;
    if (y->has_strict) pp.strict_transfers = y->strict;
    if (y->trace) pp.trace_path = y->trace;
    if (prm->trace_path) pp.trace_path = prm->trace_path;
    if (y->trace_counter_ms >= 0) pp.trace_counter_ms = (int)y->trace_counter_ms;
    if (y->trace_max_events >= 0) pp.trace_max_events = (size_t)y->trace_max_events;
    if (prm->trace_counter_ms >= 0) pp.trace_counter_ms = prm->trace_counter_ms;

    /* Devices first: a missing GPU fails before anything is made. */
    pf_device **devs = calloc((size_t)y->nstages, sizeof *devs);
    if (!devs) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", y->file);
    for (int i = 0; i < y->nstages; i++) {
        const ystage *s = &y->stages[i];
        const char *spec = NULL;
        int line = 0;
        if (prm->device) spec = prm->device;
        else if (s->device) spec = s->device, line = s->device_line;
        else if (y->device) spec = y->device, line = y->device_line;
        if (spec && !prm->device && !strcmp(spec, "auto")) spec = NULL;
        st = select_device(y, spec, line ? line : s->line, &devs[i]);
        if (st != PF_OK) {
            free(devs);
            return st;
        }
    }

    pf_pipeline *p = NULL;
    st = pf_pipeline_create(&pp, &p);
    if (st != PF_OK) {
        char msg[768];
        snprintf(msg, sizeof msg, "%s", pf_last_error());
        free(devs);
        return yl_error(y, 0, st, "%s", msg);
    }
    pf_stage **handles = calloc((size_t)y->nstages, sizeof *handles);
    if (!handles) st = pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", y->file);
    for (int i = 0; i < y->nstages && st == PF_OK; i++) {
        ystage *s = &y->stages[i];
        pf_stage_config cfg = {
            .name = s->name,
            .params = s->params,
            .num_params = s->nparams,
            .device = devs[i],
            .file = y->file,
            .line = s->line,
        };
        pf_stage_desc d;
        st = pf_stage_builtin(s->type, &cfg, &d);
        if (st != PF_OK) {
            /* The message has FILE:LINE already; invalid values are format errors here. */
            if (st == PF_ERR_INVALID) {
                char msg[1024];
                snprintf(msg, sizeof msg, "%s", pf_last_error());
                st = pf_set_error(PF_ERR_FORMAT, "%s", msg);
            }
            break;
        }
        if (s->has_threads) d.threads = (int)s->threads;
        d.ordered = s->ordered;
        if (s->has_batch) {
            d.batch.max_batch = (int)s->batch_max;
            d.batch.max_delay_us = s->batch_delay;
        }
        if (s->kind == PF_BUILTIN_SOURCE && prm->count > 0) d.max_items = prm->count;
        d.source_errors_leave = s->errors_leave;
        st = pf_pipeline_add_stage(p, &d, &handles[i]);
        if (st != PF_OK) {
            char msg[768];
            snprintf(msg, sizeof msg, "%s", pf_last_error());
            if (d.destroy) d.destroy(d.user); /* not the pipeline's on failure */
            st = yl_error(y, s->line, st == PF_ERR_INVALID ? PF_ERR_FORMAT : st, "stage '%s': %s",
                          s->name, msg);
        }
    }
    for (int i = 0; i < y->nedges && st == PF_OK; i++) {
        const yedge *e = &y->edges[i];
        st = pf_pipeline_connect(p, handles[e->from], handles[e->to], &e->params);
        if (st != PF_OK) {
            char msg[768];
            snprintf(msg, sizeof msg, "%s", pf_last_error());
            st = yl_error(y, e->line, st == PF_ERR_INVALID ? PF_ERR_FORMAT : st,
                          "edge '%s' -> '%s': %s", y->stages[e->from].name, y->stages[e->to].name,
                          msg);
        }
    }
    free(handles);
    free(devs);
    if (st != PF_OK) {
        pf_pipeline_destroy(&p);
        return st;
    }
    *out = p;
    return PF_OK;
}

static pf_status read_file(const char *path, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return pf_set_error(PF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    pf_status st = PF_OK;
    while (buf) {
        if (n == cap) {
            if (cap >= YL_MAX_FILE) {
                st = pf_set_error(PF_ERR_FORMAT, "%s: larger than %zu MiB; not a pipeline",
                                  path, YL_MAX_FILE >> 20);
                break;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) break;
            buf = nb;
            cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) {
            if (ferror(f)) st = pf_set_error(PF_ERR_IO, "%s: read error: %s", path, strerror(errno));
            break;
        }
    }
    fclose(f);
    if (!buf) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", path);
    if (st != PF_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    *len = n;
    return PF_OK;
}

/* Walks the events once and stops at the first collection nested deeper than YL_MAX_DEPTH, before
 * the whole document is loaded: the scan up to that point costs at most YL_MAX_DEPTH per token.
 * Syntax errors are left to load_document(), which reports them. */
static pf_status check_depth(yl *y, const unsigned char *text, size_t len)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return pf_set_error(PF_ERR_NOMEM, "%s: cannot initialise the YAML parser", y->file);
    yaml_parser_set_input_string(&parser, text, len);
    pf_status st = PF_OK;
    int depth = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) break;
        yaml_event_type_t t = ev.type;
        if (t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT) {
            if (++depth > YL_MAX_DEPTH)
                st = yl_error(y, (int)ev.start_mark.line + 1, PF_ERR_FORMAT,
                              "nested deeper than %d levels (lists and maps inside each other); "
                              "a pipeline needs at most a few",
                              YL_MAX_DEPTH);
        } else if (t == YAML_SEQUENCE_END_EVENT || t == YAML_MAPPING_END_EVENT) {
            depth--;
        }
        yaml_event_delete(&ev);
        if (st != PF_OK || t == YAML_STREAM_END_EVENT) break;
    }
    yaml_parser_delete(&parser);
    return st;
}

static pf_status load_document(yl *y, const unsigned char *text, size_t len)
{
    pf_status st = check_depth(y, text, len);
    if (st != PF_OK) return st;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return pf_set_error(PF_ERR_NOMEM, "%s: cannot initialise the YAML parser", y->file);
    yaml_parser_set_input_string(&parser, text, len);
    if (!yaml_parser_load(&parser, &y->doc)) {
        const yaml_mark_t *m = parser.problem ? &parser.problem_mark : &parser.context_mark;
        st = yl_error(y, (int)m->line + 1, parser.error == YAML_MEMORY_ERROR ? PF_ERR_NOMEM : PF_ERR_FORMAT,
                      "YAML syntax error: %s%s%s", parser.problem ? parser.problem : "malformed",
                      parser.context ? " " : "", parser.context ? parser.context : "");
    } else {
        y->have_doc = true;
        /* A second document would be ignored silently: refuse it. */
        yaml_document_t extra;
        if (yaml_parser_load(&parser, &extra)) {
            yaml_node_t *r = yaml_document_get_root_node(&extra);
            if (r)
                st = yl_error(y, line_of(r), PF_ERR_FORMAT,
                              "a second YAML document; a pipeline file holds one");
            yaml_document_delete(&extra);
        } else {
            const yaml_mark_t *m = parser.problem ? &parser.problem_mark : &parser.context_mark;
            st = yl_error(y, (int)m->line + 1, PF_ERR_FORMAT, "YAML syntax error: %s%s%s",
                          parser.problem ? parser.problem : "malformed", parser.context ? " " : "",
                          parser.context ? parser.context : "");
        }
    }
    yaml_parser_delete(&parser);
    return st;
}

pf_status pf_pipeline_create_from_yaml(const pf_pipeline_yaml_params *prm, pf_pipeline **out)
{
    PF_CHECK_ARG(out, "pf_pipeline_create_from_yaml", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(prm, "pf_pipeline_create_from_yaml", "params is NULL");
    PF_CHECK_ARG(prm->path || prm->text, "pf_pipeline_create_from_yaml",
                 "neither path nor text is set");
    if (prm->mode < -1 || prm->mode > PF_MODE_THROUGHPUT)
        return pf_set_error(PF_ERR_INVALID, "pf_pipeline_create_from_yaml: mode %d out of range",
                            prm->mode);
    if (prm->trace_counter_ms < -1 || prm->trace_counter_ms > PF_PIPELINE_TRACE_COUNTER_MS_MAX)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_pipeline_create_from_yaml: trace_counter_ms %d is not -1..%d",
                            prm->trace_counter_ms, PF_PIPELINE_TRACE_COUNTER_MS_MAX);
    yl y;
    memset(&y, 0, sizeof y);
    y.trace_counter_ms = -1;
    y.trace_max_events = -1;
    y.file = prm->path ? prm->path : "<string>";
    char *owned = NULL;
    const char *text = prm->text;
    size_t len = prm->text_len;
    pf_status st = PF_OK;
    if (!text) {
        st = read_file(prm->path, &owned, &len);
        text = owned;
    }
    if (st == PF_OK) st = load_document(&y, (const unsigned char *)text, len);
    if (st == PF_OK) st = parse_root(&y, yaml_document_get_root_node(&y.doc));
    if (st == PF_OK) st = build(&y, prm, out);
    for (int i = 0; i < y.nstages; i++)
        for (int k = 0; k < YL_MAX_PARAMS; k++) free(y.stages[i].joined[k]);
    free(y.stages);
    free(y.edges);
    if (y.have_doc) yaml_document_delete(&y.doc);
    free(owned);
    return st;
}

#endif /* PF_HAVE_YAML */
