/* Built-in stage types: the registry, the parameter reader and the state
 * every built-in shares (pipeline.h, "Built-in stages").
 *
 * Design. A built-in is a constructor that validates all of its parameters
 * up front (so a YAML file fails at load, with the line of the bad value,
 * not minutes into a run) and returns an ordinary pf_stage_desc whose `user`
 * is its state. Heavy resources that need the stage's stream (pf_ops
 * contexts, pools on a device) are made in start() or on first use, once
 * per worker thread for ops contexts since a pf_ops is single-threaded.
 * The runtime calls start once per worker and stop once, after the last
 * worker has finished and while the stage's streams still exist: whatever
 * was made on those streams (ops contexts, stream-ordered buffers) goes in
 * stop; destroy frees the rest. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "builtin_impl.h"
#include "builtin_io.h"

/* Registry ------------------------------------------------------------------------------ */

typedef struct bi_type {
    const char *name;
    pf_builtin_kind kind;
    bi_ctor create;
} bi_type;

static const bi_type types[] = {
    {"source.synthetic", PF_BUILTIN_SOURCE, bi_synthetic_create},
    {"io.video_source", PF_BUILTIN_SOURCE, bi_video_source_create},
    {"io.image_source", PF_BUILTIN_SOURCE, bi_image_source_create},
    {"ops.convert", PF_BUILTIN_PROCESS, bi_convert_create},
    {"ops.resize", PF_BUILTIN_PROCESS, bi_resize_create},
    {"ops.preprocess", PF_BUILTIN_PROCESS, bi_preprocess_create},
    {"ops.reproject", PF_BUILTIN_PROCESS, bi_reproject_create},
    {"ops.mask_threshold", PF_BUILTIN_PROCESS, bi_mask_threshold_create},
    {"ops.mask_post", PF_BUILTIN_PROCESS, bi_mask_post_create},
    {"ops.composite", PF_BUILTIN_PROCESS, bi_composite_create},
    {"nn.infer", PF_BUILTIN_PROCESS, bi_infer_create},
    {"sink.null", PF_BUILTIN_SINK, bi_sink_null_create},
    {"sink.checksum", PF_BUILTIN_SINK, bi_sink_checksum_create},
    {"io.video_sink", PF_BUILTIN_SINK, bi_video_sink_create},
    {"io.image_sink", PF_BUILTIN_SINK, bi_image_sink_create},
    {"ipc.source", PF_BUILTIN_SOURCE, bi_ipc_source_create},
    {"ipc.sink", PF_BUILTIN_SINK, bi_ipc_sink_create},
    {"stage.sleep", PF_BUILTIN_PROCESS, bi_sleep_create},
    {"stage.fail", PF_BUILTIN_PROCESS, bi_fail_create},
    {"mux", PF_BUILTIN_PROCESS, bi_mux_create},
    {"demux", PF_BUILTIN_PROCESS, bi_demux_create},
};
#define NUM_TYPES ((int)(sizeof types / sizeof types[0]))

const char *pf_stage_builtin_type(int i, pf_builtin_kind *kind)
{
    if (i < 0 || i >= NUM_TYPES) return NULL;
    if (kind) *kind = types[i].kind;
    return types[i].name;
}

static void location(char *buf, size_t size, const pf_stage_config *cfg, int line)
{
    buf[0] = '\0';
    if (cfg && cfg->file && line > 0) snprintf(buf, size, "%s:%d: ", cfg->file, line);
}

pf_status pf_stage_builtin(const char *type, const pf_stage_config *cfg, pf_stage_desc *out_desc)
{
    PF_CHECK_ARG(out_desc, "pf_stage_builtin", "out_desc is NULL");
    *out_desc = pf_stage_desc_default();
    PF_CHECK_ARG(cfg, "pf_stage_builtin", "cfg is NULL");
    PF_CHECK_ARG(type, "pf_stage_builtin", "type is NULL");
    char where[512];
    location(where, sizeof where, cfg, cfg->line);
    if (!cfg->name || !cfg->name[0])
        return pf_set_error(PF_ERR_INVALID, "%spf_stage_builtin: a %s stage needs a name", where,
                            type);
    if (cfg->num_params < 0 || (cfg->num_params > 0 && !cfg->params))
        return pf_set_error(PF_ERR_INVALID,
                            "%sstage '%s': %d parameters but params is %s", where, cfg->name,
                            cfg->num_params, cfg->params ? "set" : "NULL");
    const bi_type *t = NULL;
    for (int i = 0; i < NUM_TYPES; i++)
        if (strcmp(types[i].name, type) == 0) t = &types[i];
    if (!t) {
        char known[512];
        size_t len = 0;
        known[0] = '\0';
        for (int i = 0; i < NUM_TYPES && len < sizeof known; i++)
            len += (size_t)snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "",
                                    types[i].name);
        return pf_set_error(PF_ERR_INVALID, "%sstage '%s': unknown stage type '%s' (known: %s)",
                            where, cfg->name, type, known);
    }
    bi_args a;
    pf_status st = bi_args_init(&a, t->name, cfg);
    if (st != PF_OK) return st;
    pf_stage_desc d = pf_stage_desc_default();
    st = t->create(&a, &d);
    if (st == PF_OK) st = bi_args_finish(&a);
    bi_args_free(&a);
    if (st != PF_OK) {
        if (d.destroy && d.user) d.destroy(d.user);
        *out_desc = pf_stage_desc_default();
        return st;
    }
    *out_desc = d;
    return PF_OK;
}

/* Value parsing --------------------------------------------------------------------------- */

static const char *skip_space(const char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    return s;
}

bool pf_parse_i64(const char *s, int64_t *out)
{
    if (!s) return false;
    s = skip_space(s);
    if (!*s) return false;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s) return false;
    end = (char *)skip_space(end);
    if (*end) return false;
    *out = v;
    return true;
}

bool pf_parse_f64(const char *s, double *out)
{
    if (!s) return false;
    s = skip_space(s);
    if (!*s) return false;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v)) return false;
    end = (char *)skip_space(end);
    if (*end) return false;
    *out = v;
    return true;
}

bool pf_parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1", "True", "TRUE", "Yes", "On"};
    static const char *const no[] = {"false", "no", "off", "0", "False", "FALSE", "No", "Off"};
    if (!s) return false;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (strcmp(s, yes[i]) == 0) return *out = true, true;
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (strcmp(s, no[i]) == 0) return *out = false, true;
    return false;
}

/* Parameter reader --------------------------------------------------------------------------- */

pf_status bi_args_init(bi_args *a, const char *type, const pf_stage_config *cfg)
{
    memset(a, 0, sizeof *a);
    a->cfg = cfg;
    a->type = type;
    int n = cfg->num_params;
    a->used = calloc(n > 0 ? (size_t)n : 1, sizeof *a->used);
    if (!a->used) return pf_set_error(PF_ERR_NOMEM, "pf_stage_builtin: out of host memory");
    for (int i = 0; i < n; i++) {
        const pf_stage_param *p = &cfg->params[i];
        if (!p->key || !p->key[0] || !p->value) {
            pf_status st = bi_error(a, NULL, "parameter %d has a %s %s", i,
                                    (!p->key || !p->key[0]) ? "missing" : "NULL",
                                    (!p->key || !p->key[0]) ? "key" : "value");
            bi_args_free(a);
            return st;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(cfg->params[j].key, p->key) == 0) {
                char where[512];
                location(where, sizeof where, cfg, p->line);
                pf_status st = pf_set_error(PF_ERR_INVALID,
                                            "%sstage '%s' (%s): parameter '%s' given twice",
                                            where, cfg->name, type, p->key);
                bi_args_free(a);
                return st;
            }
    }
    return PF_OK;
}

void bi_args_free(bi_args *a)
{
    free(a->used);
    a->used = NULL;
}

static int find_param(const bi_args *a, const char *key)
{
    for (int i = 0; i < a->cfg->num_params; i++)
        if (strcmp(a->cfg->params[i].key, key) == 0) return i;
    return -1;
}

static void remember_key(bi_args *a, const char *key)
{
    for (int i = 0; i < a->num_known; i++)
        if (strcmp(a->known[i], key) == 0) return;
    if (a->num_known < BI_MAX_KEYS) a->known[a->num_known++] = key;
}

pf_status bi_args_finish(bi_args *a)
{
    for (int i = 0; i < a->cfg->num_params; i++) {
        if (a->used[i]) continue;
        char known[512];
        size_t len = 0;
        known[0] = '\0';
        for (int k = 0; k < a->num_known && len < sizeof known; k++)
            len += (size_t)snprintf(known + len, sizeof known - len, "%s%s", k ? ", " : "",
                                    a->known[k]);
        return bi_error(a, a->cfg->params[i].key, "unknown parameter '%s' (%s takes: %s)",
                        a->cfg->params[i].key, a->type, a->num_known ? known : "none");
    }
    return PF_OK;
}

pf_status bi_error(const bi_args *a, const char *key, const char *fmt, ...)
{
    int line = a->cfg->line;
    int idx = key ? find_param(a, key) : -1;
    if (idx >= 0 && a->cfg->params[idx].line > 0) line = a->cfg->params[idx].line;
    char where[512], msg[1024];
    location(where, sizeof where, a->cfg, line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pf_set_error(PF_ERR_INVALID, "%sstage '%s' (%s): %s", where, a->cfg->name, a->type,
                        msg);
}

bool bi_has(const bi_args *a, const char *key)
{
    return find_param(a, key) >= 0;
}

const char *bi_str(bi_args *a, const char *key)
{
    remember_key(a, key);
    int i = find_param(a, key);
    if (i < 0) return NULL;
    a->used[i] = true;
    return a->cfg->params[i].value;
}

pf_status bi_int(bi_args *a, const char *key, int64_t def, int64_t lo, int64_t hi, int64_t *out)
{
    const char *v = bi_str(a, key);
    if (!v) {
        *out = def;
        return PF_OK;
    }
    int64_t x;
    if (!pf_parse_i64(v, &x) || x < lo || x > hi)
        return bi_error(a, key, "%s '%s': expected an integer in %lld..%lld", key, v,
                        (long long)lo, (long long)hi);
    *out = x;
    return PF_OK;
}

pf_status bi_int_req(bi_args *a, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    if (!bi_has(a, key)) {
        remember_key(a, key);
        return bi_error(a, NULL, "missing required parameter '%s' (an integer in %lld..%lld)", key,
                        (long long)lo, (long long)hi);
    }
    return bi_int(a, key, 0, lo, hi, out);
}

pf_status bi_num(bi_args *a, const char *key, double def, double lo, bool lo_open, double hi,
                 bool hi_open, double *out)
{
    const char *v = bi_str(a, key);
    if (!v) {
        *out = def;
        return PF_OK;
    }
    double x;
    bool ok = pf_parse_f64(v, &x);
    if (ok) ok = lo_open ? x > lo : x >= lo;
    if (ok) ok = hi_open ? x < hi : x <= hi;
    if (!ok) {
        if (isinf(hi))
            return bi_error(a, key, "%s '%s': expected a number %s %g", key, v,
                            lo_open ? ">" : ">=", lo);
        return bi_error(a, key, "%s '%s': expected a number in %s%g, %g%s", key, v,
                        lo_open ? "(" : "[", lo, hi, hi_open ? ")" : "]");
    }
    *out = x;
    return PF_OK;
}

pf_status bi_bool(bi_args *a, const char *key, bool def, bool *out)
{
    const char *v = bi_str(a, key);
    if (!v) {
        *out = def;
        return PF_OK;
    }
    if (!pf_parse_bool(v, out))
        return bi_error(a, key, "%s '%s': expected true or false", key, v);
    return PF_OK;
}

pf_status bi_enum(bi_args *a, const char *key, const char *const *names, int def, int *out)
{
    const char *v = bi_str(a, key);
    if (!v) {
        *out = def;
        return PF_OK;
    }
    char list[256];
    size_t len = 0;
    list[0] = '\0';
    for (int i = 0; names[i]; i++) {
        if (strcmp(names[i], v) == 0) {
            *out = i;
            return PF_OK;
        }
        if (len < sizeof list)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? "|" : "", names[i]);
    }
    return bi_error(a, key, "%s '%s': expected %s", key, v, list);
}

pf_status bi_num_list(bi_args *a, const char *key, double *vals, int n, int max, int *count)
{
    const char *v = bi_str(a, key);
    if (!v) {
        if (count) *count = 0;
        return PF_OK;
    }
    int limit = n > 0 ? n : max;
    int k = 0;
    const char *p = v;
    char tok[64];
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        double x;
        if (len >= sizeof tok) goto bad;
        memcpy(tok, p, len);
        tok[len] = '\0';
        if (!pf_parse_f64(tok, &x) || k >= limit) goto bad;
        vals[k++] = x;
        if (!comma) break;
        p = comma + 1;
    }
    if (n > 0 && k != n) goto bad;
    if (count) *count = k;
    return PF_OK;
bad:
    if (n > 0) return bi_error(a, key, "%s '%s': expected a list of %d numbers", key, v, n);
    return bi_error(a, key, "%s '%s': expected a list of 1 to %d numbers", key, v, max);
}

pf_status bi_pixfmt(bi_args *a, const char *key, pf_pixfmt def, bool required, pf_pixfmt *out)
{
    const char *v = bi_str(a, key);
    if (!v) {
        if (required)
            return bi_error(a, NULL,
                            "missing required parameter '%s' (rgb24|bgr24|rgba|gray8|nv12|i420)",
                            key);
        *out = def;
        return PF_OK;
    }
    if (pf_pixfmt_parse(v, out) != PF_OK || *out == PF_PIXFMT_NONE) {
        pf_clear_error();
        return bi_error(a, key, "%s '%s': expected rgb24|bgr24|rgba|gray8|nv12|i420", key, v);
    }
    return PF_OK;
}

pf_status bi_yuv(bi_args *a, pf_yuv_matrix *matrix, pf_yuv_range *range)
{
    static const char *const matrices[] = {"bt601", "bt709", NULL};
    static const char *const ranges[] = {"limited", "full", NULL};
    int m, r;
    pf_status st = bi_enum(a, "matrix", matrices, 0, &m);
    if (st == PF_OK) st = bi_enum(a, "range", ranges, 0, &r);
    if (st != PF_OK) return st;
    *matrix = (pf_yuv_matrix)m;
    *range = (pf_yuv_range)r;
    return PF_OK;
}

/* Shared stage state -------------------------------------------------------------------------- */

pf_status bi_stage_init(bi_stage *s, const bi_args *a, pf_stage_desc *d)
{
    s->name = strdup(a->cfg->name);
    if (!s->name) return pf_set_error(PF_ERR_NOMEM, "pf_stage_builtin: out of host memory");
    s->type = a->type;
    s->device = a->cfg->device;
    s->cuda = s->device && pf_device_get_type(s->device) == PF_DEVICE_CUDA;
    s->domain = s->cuda ? PF_MEM_DEVICE : PF_MEM_HOST;
    pf_mutex_init(&s->mu);
    d->name = s->name;
    d->device = s->device;
    d->accepts = s->domain;
    d->produces = s->domain;
    d->user = s;
    d->stop = bi_stage_stop;
    d->destroy = bi_stage_destroy;
    if (!d->start) d->start = bi_stage_start;
    return PF_OK;
}

void *bi_stage_new(size_t size, const bi_args *a, pf_stage_desc *d, pf_status *st)
{
    bi_stage *s = calloc(1, size);
    if (!s) {
        *st = pf_set_error(PF_ERR_NOMEM, "pf_stage_builtin: out of host memory");
        return NULL;
    }
    *st = bi_stage_init(s, a, d);
    if (*st != PF_OK) {
        free(s);
        return NULL;
    }
    return s;
}

pf_status bi_create_end(void *s, pf_stage_desc *d, pf_status st)
{
    if (st != PF_OK) {
        bi_stage_destroy(s);
        d->user = NULL;
    }
    return st;
}

pf_status bi_stage_start(void *user, pf_stage_ctx *ctx)
{
    (void)user;
    (void)ctx;
    return PF_OK;
}

static void release_ops(bi_stage *s)
{
    for (int i = 0; i < BI_MAX_THREADS; i++) pf_ops_destroy(&s->ops[i]);
}

void bi_stage_stop_common(bi_stage *s)
{
    pf_mutex_lock(&s->mu);
    release_ops(s);
    pf_mutex_unlock(&s->mu);
}

void bi_stage_stop(void *user)
{
    if (user) bi_stage_stop_common(user);
}

void bi_stage_destroy(void *user)
{
    bi_stage *s = user;
    if (!s) return;
    if (s->free_extra) s->free_extra(s);
    release_ops(s);
    pf_allocator_destroy(&s->own_alloc);
    pf_mutex_destroy(&s->mu);
    free(s->name);
    free(s);
}

pf_status bi_ops(bi_stage *s, pf_stage_ctx *ctx, pf_ops **out)
{
    int ti = pf_stage_thread_index(ctx);
    if (ti < 0 || ti >= BI_MAX_THREADS)
        return pf_set_error(PF_ERR_UNSUPPORTED,
                            "%s: worker thread %d; built-in stages support at most %d threads",
                            s->type, ti, BI_MAX_THREADS);
    /* Each worker only touches its own slot, but stop() may clear them all:
     * take the lock for the (rare) creation only. */
    if (s->ops[ti]) {
        *out = s->ops[ti];
        return PF_OK;
    }
    pf_ops_params op = pf_ops_params_default();
    op.stream = pf_stage_stream(ctx);
    if (!op.stream)
        return pf_set_error(PF_ERR_INTERNAL, "%s: the runtime gave no stream", s->type);
    pf_mutex_lock(&s->mu);
    pf_status st = PF_OK;
    if (!s->ops[ti]) st = pf_ops_create(&op, &s->ops[ti]);
    *out = s->ops[ti];
    pf_mutex_unlock(&s->mu);
    return st;
}

pf_status bi_alloc(bi_stage *s, pf_stage_ctx *ctx, pf_allocator **out)
{
    pf_allocator *a = pf_stage_allocator(ctx, s->domain);
    if (a) {
        *out = a;
        return PF_OK;
    }
    pf_mutex_lock(&s->mu);
    pf_status st = PF_OK;
    if (!s->own_alloc) {
        pf_allocator_params ap = pf_allocator_params_default();
        ap.device = s->device;
        ap.domain = s->cuda ? PF_MEM_DEVICE : PF_MEM_HOST;
        ap.name = s->name;
        st = pf_allocator_create(&ap, &s->own_alloc);
    }
    *out = s->own_alloc;
    pf_mutex_unlock(&s->mu);
    return st;
}

pf_status bi_frame_alloc(bi_stage *s, pf_stage_ctx *ctx, pf_frame *f, pf_pixfmt fmt, int w, int h)
{
    pf_allocator *a = NULL;
    pf_status st = bi_alloc(s, ctx, &a);
    if (st != PF_OK) return st;
    return pf_frame_alloc(f, fmt, w, h, a, pf_stage_stream(ctx));
}

pf_status bi_tensor_alloc(bi_stage *s, pf_stage_ctx *ctx, pf_tensor *t, pf_dtype dt, int ndim,
                          const int64_t *shape, pf_layout layout)
{
    pf_allocator *a = NULL;
    pf_status st = bi_alloc(s, ctx, &a);
    if (st != PF_OK) return st;
    return pf_tensor_alloc(t, dt, ndim, shape, layout, a, pf_stage_stream(ctx));
}

pf_status bi_item_error(const bi_stage *s, const pf_item *it, pf_status st, const char *fmt, ...)
{
    /* The runtime prefixes "stage NAME: item (source, seq): ", so only the
     * detail goes here. */
    (void)s;
    (void)it;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pf_set_error(st, "%s", msg);
}

pf_status bi_item_failed(const bi_stage *s, const pf_item *it, pf_status st, const char *what)
{
    if (st == PF_OK) return PF_OK;
    char msg[768];
    snprintf(msg, sizeof msg, "%s", pf_last_error());
    if (what) return bi_item_error(s, it, st, "%s: %s", what, msg);
    return bi_item_error(s, it, st, "%s", msg);
}

void bi_unref_items(pf_item *items, int n)
{
    for (int i = 0; i < n; i++) pf_item_unref(&items[i]);
}

pf_status bi_emit(pf_stage_ctx *ctx, pf_item *it)
{
    pf_status st = pf_stage_emit(ctx, it);
    memset(it, 0, sizeof *it); /* the runtime owns it now, whatever the status */
    return st;
}

pf_status bi_emit_all(pf_stage_ctx *ctx, pf_item *items, int n)
{
    pf_status st = PF_OK;
    for (int i = 0; i < n && st == PF_OK; i++) st = bi_emit(ctx, &items[i]);
    bi_unref_items(items, n);
    return st;
}

pf_status bi_emit_like(pf_stage_ctx *ctx, const pf_item *in, pf_item *out)
{
    out->source = in->source;
    out->seq = in->seq;
    out->t_source_ns = in->t_source_ns;
    out->priority = in->priority;
    out->user = in->user;
    return bi_emit(ctx, out);
}

uint64_t bi_fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
