/* Arena planning: runtime values live from their producer to their last
 * consumer (node positions, inclusive, so a node's inputs and outputs never
 * share bytes). Values are placed largest first, each into the smallest gap
 * left by already-placed values whose lifetimes overlap (best fit), else
 * above them; the result is checked pairwise before it is returned. */
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
    return 0;
}

static bool overlap_life(const item *a, const item *b)
{
    return a->first <= b->last && b->first <= a->last;
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
    item **placed = malloc(sizeof(item *) * (size_t)(nv ? nv : 1));
    pf_status st = PF_OK;
    if (!out->offsets || !first || !last || !items || !placed) {
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
    size_t arena = 0, naive = 0;
    for (int i = 0; i < ni; i++) {
        item *it = &items[i];
        naive += it->size;
        int np = 0;
        for (int j = 0; j < i; j++)
            if (overlap_life(&items[j], it) && items[j].size) placed[np++] = &items[j];
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
    }
    /* Cheap insurance against a planner bug turning into silent corruption. */
    for (int i = 0; i < ni; i++)
        for (int j = i + 1; j < ni; j++) {
            const item *a = &items[i], *b = &items[j];
            if (!a->size || !b->size || !overlap_life(a, b)) continue;
            if (a->off < b->off + b->size && b->off < a->off + a->size) {
                st = pf_set_error(PF_ERR_INTERNAL, "%s: memory plan overlaps '%s' and '%s'",
                                  g->name, g->values[a->v].name, g->values[b->v].name);
                goto done;
            }
        }
    for (int i = 0; i < ni; i++) out->offsets[items[i].v] = (int64_t)items[i].off;
    out->arena_bytes = arena;
    out->naive_bytes = naive;
done:
    free(first);
    free(last);
    free(items);
    free(placed);
    if (st != PF_OK) pf_ir_mem_plan_free(out);
    return st;
}
