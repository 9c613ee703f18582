/* The built-in `demux` stage: routes items to per-stream outputs by their
 * source id (pipeline.h, "Built-in stages").
 *
 * Routes are parsed when the stage is made (a bad entry fails there, naming
 * it) and resolved against the stage's output edges on its first start
 * (stage names become output indices; an unknown name or an index past the
 * outputs fails the start, naming the route). Items are emitted with
 * pf_stage_emit_to, unchanged. An item of a stream with no route follows
 * `unmapped`: drop (released, counted through pf_stage_drop: the stage's
 * `dropped` and its stream's), error (the pipeline stops naming the
 * stream), or all (to every output). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "builtin_impl.h"

#define DEMUX_MAX_ROUTES 4096

enum { UNMAPPED_DROP = 0, UNMAPPED_ERROR = 1, UNMAPPED_ALL = 2 };

typedef struct demux_route {
    int32_t source;
    char *target;              /* stage name, or NULL when given as an index */
    int output;                /* resolved output index */
} demux_route;

typedef struct demux_stage {
    bi_stage base;
    demux_route *routes;
    int nroutes;
    int unmapped;
    bool identity;             /* no routes given: source k -> output k */
    bool resolved;             /* under base.mu */
} demux_stage;

static void demux_free(bi_stage *b)
{
    demux_stage *s = (demux_stage *)b;
    for (int i = 0; i < s->nroutes; i++) free(s->routes[i].target);
    free(s->routes);
}

static pf_status demux_start(void *user, pf_stage_ctx *ctx)
{
    demux_stage *s = user;
    pf_status st = PF_OK;
    pf_mutex_lock(&s->base.mu);
    if (!s->resolved) {
        int nout = pf_stage_num_outputs(ctx);
        for (int i = 0; i < s->nroutes && st == PF_OK; i++) {
            demux_route *r = &s->routes[i];
            if (r->target) r->output = pf_stage_output_index(ctx, r->target);
            if (r->output < 0 || r->output >= nout)
                st = pf_set_error(PF_ERR_INVALID,
                                  "stage '%s' (demux): route %d:%s: %s (it has %d output(s))",
                                  s->base.name, (int)r->source,
                                  r->target ? r->target : "",
                                  r->target ? "no output edge leads to that stage"
                                            : "output index out of range",
                                  nout);
        }
        s->resolved = st == PF_OK;
    }
    pf_mutex_unlock(&s->base.mu);
    if (st != PF_OK) return st;
    return bi_stage_start(user, ctx);
}

static int route_of(const demux_stage *s, int32_t source, int nout)
{
    if (s->identity) return source >= 0 && source < nout ? (int)source : -1;
    for (int i = 0; i < s->nroutes; i++)
        if (s->routes[i].source == source) return s->routes[i].output;
    return -1;
}

static pf_status demux_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    demux_stage *s = user;
    int nout = pf_stage_num_outputs(ctx);
    pf_status st = PF_OK;
    for (int i = 0; i < n && st == PF_OK; i++) {
        int out = route_of(s, items[i].source, nout);
        if (out >= 0) {
            st = pf_stage_emit_to(ctx, out, &items[i]);
            memset(&items[i], 0, sizeof items[i]);
        } else if (s->unmapped == UNMAPPED_ALL) {
            st = bi_emit(ctx, &items[i]);
        } else if (s->unmapped == UNMAPPED_ERROR) {
            st = bi_item_error(&s->base, &items[i], PF_ERR_INVALID,
                               "stream %d has no route (unmapped: error)", (int)items[i].source);
        } else {
            pf_stage_drop(ctx, &items[i]);
        }
    }
    bi_unref_items(items, n);
    return st;
}

/* "SRC:TARGET,SRC:TARGET,..." (YAML lists are joined with commas). */
static pf_status parse_routes(bi_args *a, demux_stage *s, const char *text)
{
    int cap = 1;
    for (const char *c = text; *c; c++) cap += *c == ',';
    if (cap > DEMUX_MAX_ROUTES)
        return bi_error(a, "routes", "routes: %d routes; at most %d", cap, DEMUX_MAX_ROUTES);
    s->routes = calloc((size_t)cap, sizeof *s->routes);
    if (!s->routes) return pf_set_error(PF_ERR_NOMEM, "pf_stage_builtin: out of host memory");
    const char *p = text;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char entry[256];
        if (len >= sizeof entry) return bi_error(a, "routes", "routes: entry '%.40s...' is too long", p);
        memcpy(entry, p, len);
        entry[len] = 0;
        char *b = entry;
        while (*b == ' ') b++;
        char *colon = strchr(b, ':');
        if (!colon) return bi_error(a, "routes", "routes: entry '%s' is not SOURCE:OUTPUT", b);
        *colon = 0;
        char *t = colon + 1;
        while (*t == ' ') t++;
        for (char *e = t + strlen(t); e > t && e[-1] == ' ';) *--e = 0;
        int64_t src, idx;
        if (!pf_parse_i64(b, &src) || src < 0 || src > INT32_MAX)
            return bi_error(a, "routes", "routes: entry '%s:%s': source '%s' is not an int 0..%d", b, t,
                            b, INT32_MAX);
        if (!*t) return bi_error(a, "routes", "routes: entry '%s:': no output", b);
        for (int i = 0; i < s->nroutes; i++)
            if (s->routes[i].source == (int32_t)src)
                return bi_error(a, "routes", "routes: source %lld is routed twice", (long long)src);
        demux_route *r = &s->routes[s->nroutes++];
        r->source = (int32_t)src;
        if (pf_parse_i64(t, &idx)) {
            if (idx < 0 || idx > INT32_MAX)
                return bi_error(a, "routes", "routes: entry '%s:%s': output index out of range", b, t);
            r->output = (int)idx;
        } else if (!(r->target = strdup(t))) {
            return pf_set_error(PF_ERR_NOMEM, "pf_stage_builtin: out of host memory");
        }
        p = end ? end + 1 : p + len;
    }
    return PF_OK;
}

pf_status bi_demux_create(bi_args *a, pf_stage_desc *d)
{
    static const char *const policies[] = {"drop", "error", "all", NULL};
    pf_status st;
    d->start = demux_start;
    demux_stage *s = bi_stage_new(sizeof *s, a, d, &st);
    if (!s) return st;
    s->base.free_extra = demux_free;
    d->process = demux_process;
    const char *routes = bi_str(a, "routes");
    s->identity = !routes || !*routes;
    if (!s->identity) st = parse_routes(a, s, routes);
    if (st == PF_OK) st = bi_enum(a, "unmapped", policies, UNMAPPED_DROP, &s->unmapped);
    return bi_create_end(s, d, st);
}
