/* Arena planning: runtime values live from their producer to their last
 * consumer (node positions, inclusive, so a node's inputs and outputs never
 * share bytes). Values are placed largest first, each into the smallest gap
 * left by already-placed values whose lifetimes overlap (best fit), else
 * above them; each placement is checked against the values it overlaps.
 *
 * Finding the already-placed values whose lifetimes overlap a new one goes
 * through a segment tree over node positions (each value stored at the
 * O(log n) tree nodes that cover its lifetime), so planning costs about
 * (values + overlapping pairs) * log n; scanning every placed value made a
 * 100k-node chain quadratic (tens of seconds in `pixflow model inspect`). */
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "ir.h"

typedef struct item {
    int v;
    int first, last; /* node positions */
    size_t size;     /* aligned */
    size_t off;
} item;

static int by_size_desc(const void *pa, const void *pb)
{
    const item *a = pa, *b = pb;
    if (a->size != b->size) return a->size < b->size ? 1 : -1;
    if (a->first != b->first) return a->first < b->first ? -1 : 1;
    return a->v - b->v;
}

static int by_off(const void *pa, const void *pb)
{
    const item *const *a = pa, *const *b = pb;
    if ((*a)->off != (*b)->off) return (*a)->off < (*b)->off ? -1 : 1;
    return (*a)->v - (*b)->v;
}

/* by_first: birth order for the overlap check. */
static int by_first(const void *pa, const void *pb)
{
    const item *const *a = pa, *const *b = pb;
    if ((*a)->first != (*b)->first) return (*a)->first < (*b)->first ? -1 : 1;
    return (*a)->v - (*b)->v;
}

/* Every pair of sized values alive at the same time has disjoint bytes
 * (see the call). order: ni pointers, live: ni ints of scratch. */
static pf_status check_overlaps(const pf_ir_graph *g, const item *items, int ni,
                                const item **order, int *live)
{
    for (int i = 0; i < ni; i++) order[i] = &items[i];
    qsort(order, (size_t)ni, sizeof *order, by_first);
    int nlive = 0;
    for (int i = 0; i < ni; i++) {
        const item *a = order[i];
        if (!a->size) continue;
        int k = 0;
        for (int j = 0; j < nlive; j++) {
            const item *b = &items[live[j]];
            if (b->last < a->first) continue; /* dead before a is born */
            live[k++] = live[j];
            if (a->off < b->off + b->size && b->off < a->off + a->size)
                return pf_set_error(PF_ERR_INTERNAL, "%s: memory plan overlaps '%s' and '%s'",
                                    g->name, g->values[a->v].name, g->values[b->v].name);
        }
        nlive = k;
        live[nlive++] = (int)(a - items);
    }
    return PF_OK;
}

/* Segment tree over node positions [0, npos). Tree node t lists the items whose lifetime covers
 * its range (and not its parent's); used[t] says whether t or a descendant lists any. */
typedef struct life_tree {
    int npos;
    int **list;
    int *len, *cap;
    bool *used;
} life_tree;

static bool tree_init(life_tree *t, int npos)
{
    memset(t, 0, sizeof *t);
    t->npos = npos;
    size_t n = 4 * (size_t)(npos ? npos : 1);
    t->list = calloc(n, sizeof *t->list);
    t->len = calloc(n, sizeof *t->len);
    t->cap = calloc(n, sizeof *t->cap);
    t->used = calloc(n, sizeof *t->used);
    return t->list && t->len && t->cap && t->used;
}

static void tree_free(life_tree *t)
{
    if (t->list)
        for (size_t i = 0; i < 4 * (size_t)(t->npos ? t->npos : 1); i++) free(t->list[i]);
    free(t->list);
    free(t->len);
    free(t->cap);
    free(t->used);
    memset(t, 0, sizeof *t);
}

static bool tree_add(life_tree *t, int node, int l, int r, const item *it, int id)
{
    if (it->last < l || r < it->first) return true;
    t->used[node] = true;
    if (it->first <= l && r <= it->last) {
        if (t->len[node] == t->cap[node]) {
            int nc = t->cap[node] ? t->cap[node] * 2 : 4;
            int *nl = realloc(t->list[node], sizeof(int) * (size_t)nc);
            if (!nl) return false;
            t->list[node] = nl;
            t->cap[node] = nc;
        }
        t->list[node][t->len[node]++] = id;
        return true;
    }
    int m = l + (r - l) / 2;
    return tree_add(t, 2 * node, l, m, it, id) && tree_add(t, 2 * node + 1, m + 1, r, it, id);
}

/* Appends to out[] (once each, through seen[] == stamp) the items whose lifetime overlaps it's. */
static void tree_query(const life_tree *t, int node, int l, int r, const item *it, int stamp,
                       int *seen, const item *items, const item **out, int *n_out)
{
    if (!t->used[node] || it->last < l || r < it->first) return;
    for (int k = 0; k < t->len[node]; k++) {
        int id = t->list[node][k];
        if (seen[id] == stamp) continue;
        seen[id] = stamp;
        out[(*n_out)++] = &items[id];
    }
    if (l == r) return;
    int m = l + (r - l) / 2;
    tree_query(t, 2 * node, l, m, it, stamp, seen, items, out, n_out);
    tree_query(t, 2 * node + 1, m + 1, r, it, stamp, seen, items, out, n_out);
}

void pf_ir_mem_plan_free(pf_ir_mem_plan *p)
{
    if (!p) return;
    free(p->offsets);
    memset(p, 0, sizeof *p);
}

pf_status pf_ir_plan_memory(const pf_ir_graph *g, size_t align, const size_t *elem_size,
                            pf_ir_mem_plan *out)
{
    return pf_ir_plan_memory_born(g, align, elem_size, NULL, out);
}

pf_status pf_ir_plan_memory_born(const pf_ir_graph *g, size_t align, const size_t *elem_size,
                                 const int *born, pf_ir_mem_plan *out)
{
    if (!g || !out) return pf_set_error(PF_ERR_INVALID, "pf_ir_plan_memory: NULL argument");
    memset(out, 0, sizeof *out);
    if (align < 64)
        return pf_set_error(PF_ERR_INVALID, "pf_ir_plan_memory: alignment %zu (>= 64)", align);
    int nv = g->n_values;
    out->offsets = malloc(sizeof(int64_t) * (size_t)(nv ? nv : 1));
    int *first = malloc(sizeof(int) * (size_t)(nv ? nv : 1));
    int *last = malloc(sizeof(int) * (size_t)(nv ? nv : 1));
    item *items = malloc(sizeof(item) * (size_t)(nv ? nv : 1));
    const item **placed = malloc(sizeof(item *) * (size_t)(nv ? nv : 1));
    int *seen = malloc(sizeof(int) * (size_t)(nv ? nv : 1));
    life_tree tree = {0};
    pf_status st = PF_OK;
    if (!out->offsets || !first || !last || !items || !placed || !seen) {
        st = pf_set_error(PF_ERR_NOMEM, "pf_ir_plan_memory: out of memory");
        goto done;
    }
    out->n_values = nv;
    for (int i = 0; i < nv; i++) {
        out->offsets[i] = -1;
        first[i] = last[i] = -1;
    }
    int pos = 0;
    for (int k = 0; k < g->n_nodes; k++) {
        const pf_ir_node *n = &g->nodes[k];
        if (n->dead) continue;
        for (int i = 0; i < n->n_in; i++)
            if (n->in[i] >= 0 && n->in[i] < nv) last[n->in[i]] = pos;
        for (int i = 0; i < n->n_out; i++)
            if (n->out[i] >= 0 && n->out[i] < nv && first[n->out[i]] < 0) first[n->out[i]] = pos;
        pos++;
    }
    if (born) {
        /* born[] counts IR nodes; positions skip dead ones. */
        int *pos_of = malloc(sizeof(int) * (size_t)(g->n_nodes ? g->n_nodes : 1));
        if (!pos_of) {
            st = pf_set_error(PF_ERR_NOMEM, "pf_ir_plan_memory: out of memory");
            goto done;
        }
        for (int k = 0, q = 0; k < g->n_nodes; k++) pos_of[k] = g->nodes[k].dead ? q : q++;
        for (int v = 0; v < nv; v++)
            if (born[v] >= 0 && born[v] < g->n_nodes && first[v] >= 0 &&
                pos_of[born[v]] < first[v])
                first[v] = pos_of[born[v]];
        free(pos_of);
    }
    int ni = 0;
    for (int v = 0; v < nv; v++) {
        const pf_ir_value *val = &g->values[v];
        if (first[v] < 0 || val->data || val->is_input || val->is_output) continue;
        int64_t numel = pf_ir_value_numel(val);
        size_t es = elem_size ? elem_size[val->dtype] : pf_ir_dtype_size(val->dtype);
        if (numel < 0 || (numel && es > SIZE_MAX / (uint64_t)numel)) {
            st = pf_set_error(PF_ERR_INVALID,
                              "%s: value '%s' has no concrete shape (plan after "
                              "pf_ir_specialize)",
                              g->name, val->name);
            goto done;
        }
        size_t bytes = (size_t)numel * es;
        if (bytes > SIZE_MAX - align) {
            st = pf_set_error(PF_ERR_INVALID, "%s: value '%s' is too large", g->name, val->name);
            goto done;
        }
        item *it = &items[ni++];
        it->v = v;
        it->first = first[v];
        it->last = last[v] < first[v] ? first[v] : last[v];
        it->size = (bytes + align - 1) / align * align;
        it->off = 0;
    }
    qsort(items, (size_t)ni, sizeof *items, by_size_desc);
    if (!tree_init(&tree, pos)) {
        st = pf_set_error(PF_ERR_NOMEM, "pf_ir_plan_memory: out of memory");
        goto done;
    }
    for (int i = 0; i < ni; i++) seen[i] = -1;
    size_t arena = 0, naive = 0;
    for (int i = 0; i < ni; i++) {
        item *it = &items[i];
        naive += it->size;
        int np = 0;
        tree_query(&tree, 1, 0, pos - 1, it, i, seen, items, placed, &np);
        qsort(placed, (size_t)np, sizeof *placed, by_off);
        size_t best = SIZE_MAX, best_gap = SIZE_MAX, cur = 0;
        for (int j = 0; j < np; j++) {
            if (placed[j]->off > cur) {
                size_t gap = placed[j]->off - cur;
                if (gap >= it->size && gap < best_gap) {
                    best_gap = gap;
                    best = cur;
                }
            }
            size_t end = placed[j]->off + placed[j]->size;
            if (end > cur) cur = end;
        }
        it->off = best != SIZE_MAX ? best : cur;
        if (it->off + it->size > arena) arena = it->off + it->size;
        /* Zero-size values take no bytes: nothing can overlap them. */
        if (it->size && !tree_add(&tree, 1, 0, pos - 1, it, i)) {
            st = pf_set_error(PF_ERR_NOMEM, "pf_ir_plan_memory: out of memory");
            goto done;
        }
    }
    /* Insurance against a planner bug turning into silent corruption, checked
     * without the interval tree the placement used (a value it failed to
     * report would pass a check through it): a sweep over the values in
     * order of birth, each against every value still alive then, must find
     * disjoint bytes. O(values x most alive at once): a 100k-node chain is
     * a few hundred thousand compares. `placed` is free again: it holds the
     * sweep's order, `seen` the live set. */
    if ((st = check_overlaps(g, items, ni, placed, seen)) != PF_OK) goto done;
    for (int i = 0; i < ni; i++) out->offsets[items[i].v] = (int64_t)items[i].off;
    out->arena_bytes = arena;
    out->naive_bytes = naive;
done:
    free(first);
    free(last);
    free(items);
    free(placed);
    free(seen);
    tree_free(&tree);
    if (st != PF_OK) pf_ir_mem_plan_free(out);
    return st;
}
