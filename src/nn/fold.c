/* Constant folding.
 *
 * One forward pass in topological order (repeated while it changes
 * anything). For each node:
 *   1. "must be constant" inputs that the importer had to keep as runtime
 *      inputs (computed by a subgraph) are moved into the node's attr as soon
 *      as they are constant, the input slot set to -1 and trailing absent
 *      inputs trimmed from n_in; the node is re-inferred. Input positions are
 *      ONNX's:
 *        RESHAPE  in[1]: shape (kind SHAPE) or axes (kind SQUEEZE/UNSQUEEZE)
 *        EXPAND   in[1]: shape -> attr.reshape (kind SHAPE, n, shape[])
 *        TILE     in[1]: repeats -> attr.tile
 *        SLICE    in[1..4]: starts, ends, axes, steps -> attr.slice; an array
 *                 given as an input replaces the attr's; when attr.slice.n
 *                 differs from the inputs' length the attr holds nothing and
 *                 the absent arrays take ONNX's defaults (axes 0..n-1, steps 1)
 *        PAD      in[1]: pads [b0..br-1, e0..er-1], in[2]: constant value
 *        RESIZE   in[1] roi (ignored), in[2] scales, in[3] sizes, for every
 *                 opset (the importer puts Upsample/Resize-10 scales at
 *                 in[2]); a node with n_in == 2 is read as (X, scales).
 *                 Sizes set the output value's dims and has_scales = false
 *        CLIP     in[1]: min -> unary.alpha, in[2]: max -> unary.beta (when a
 *                 float holds the bound exactly)
 *        REDUCE_* in[1]: axes -> attr.reduce
 *        SPLIT    in[1]: sizes -> attr.split
 *   2. SHAPE of a value whose dims are all concrete becomes an I64 constant.
 *   3. A node whose present inputs are all constant runs on the CPU kernel
 *      (pf_nn_cpu_run_node) and its outputs become constants in place (same
 *      value ids and names). A kernel that answers PF_ERR_UNSUPPORTED leaves
 *      the node as it is.
 * Folded nodes are marked dead; pf_ir_compact() (run by pf_ir_remove_dead)
 * drops them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "cpu/kernels.h"
#include "ir.h"

/* Folding a node whose outputs exceed this would only bloat the model. */
#define FOLD_MAX_BYTES ((size_t)64 << 20)

static const pf_ir_value *const_in(const pf_ir_graph *g, const pf_ir_node *n, int i)
{
    if (i >= n->n_in || n->in[i] < 0) return NULL;
    const pf_ir_value *v = &g->values[n->in[i]];
    return v->data ? v : NULL;
}

static bool is_pending(const pf_ir_graph *g, const pf_ir_node *n, int i)
{
    return i < n->n_in && n->in[i] >= 0 && !g->values[n->in[i]].data;
}

static pf_status bad_const(const pf_ir_graph *g, int node, int i, const char *what)
{
    char d[192];
    const pf_ir_node *n = &g->nodes[node];
    return pf_set_error(PF_ERR_FORMAT, "%s: input %d '%s': %s", pf_ir_node_desc(g, node, d, sizeof d),
                        i, g->values[n->in[i]].name, what);
}

/* Reads an integer tensor (1D or scalar) of at most `max` entries. */
static pf_status read_ints(const pf_ir_graph *g, int node, int i, int64_t *out, int max, int *count)
{
    const pf_ir_value *v = &g->values[g->nodes[node].in[i]];
    int64_t n = pf_ir_value_numel(v);
    if (v->ndim > 1 || n < 0) return bad_const(g, node, i, "must be a 1D tensor");
    if (n > max) return bad_const(g, node, i, "too many entries");
    for (int64_t k = 0; k < n; k++) {
        if (v->dtype == PF_IR_I64) out[k] = ((const int64_t *)v->data)[k];
        else if (v->dtype == PF_IR_I32) out[k] = ((const int32_t *)v->data)[k];
        else return bad_const(g, node, i, "must be int64 or int32");
    }
    *count = (int)n;
    return PF_OK;
}

static pf_status read_doubles(const pf_ir_graph *g, int node, int i, double *out, int max,
                              int *count)
{
    const pf_ir_value *v = &g->values[g->nodes[node].in[i]];
    int64_t n = pf_ir_value_numel(v);
    if (v->ndim > 1 || n < 0) return bad_const(g, node, i, "must be a 1D tensor");
    if (n > max) return bad_const(g, node, i, "too many entries");
    for (int64_t k = 0; k < n; k++) {
        switch (v->dtype) {
        case PF_IR_F32: out[k] = ((const float *)v->data)[k]; break;
        case PF_IR_F64: out[k] = ((const double *)v->data)[k]; break;
        case PF_IR_I64: out[k] = (double)((const int64_t *)v->data)[k]; break;
        case PF_IR_I32: out[k] = ((const int32_t *)v->data)[k]; break;
        case PF_IR_U8: case PF_IR_BOOL: out[k] = ((const uint8_t *)v->data)[k]; break;
        case PF_IR_I8: out[k] = ((const int8_t *)v->data)[k]; break;
        default: return bad_const(g, node, i, "unsupported dtype");
        }
    }
    *count = (int)n;
    return PF_OK;
}

static void drop_input(pf_ir_graph *g, pf_ir_node *n, int i)
{
    if (n->in[i] >= 0 && g->values[n->in[i]].n_uses > 0) g->values[n->in[i]].n_uses--;
    n->in[i] = -1;
    while (n->n_in > 1 && n->in[n->n_in - 1] < 0) n->n_in--;
}

/* The importer places Resize's inputs at Resize-11 positions whatever the
 * opset (Upsample/Resize-10 scales go to in[2]); a two-input node is read as
 * the raw (X, scales) layout. */
static bool is_upsample_style(const pf_ir_node *n)
{
    return n->n_in == 2;
}

static pf_status resolve_slice(pf_ir_graph *g, int node, bool *changed)
{
    pf_ir_node *n = &g->nodes[node];
    for (int i = 1; i < n->n_in && i <= 4; i++)
        if (is_pending(g, n, i)) return PF_OK; /* all at once: the arrays go together */
    bool any = false;
    for (int i = 1; i < n->n_in && i <= 4; i++) any = any || const_in(g, n, i);
    if (!any) return PF_OK;
    pf_ir_slice_attr *a = &n->attr.slice;
    int64_t arr[4][PF_IR_MAX_RANK];
    int cnt[4] = {-1, -1, -1, -1};
    int len = -1;
    for (int i = 1; i < n->n_in && i <= 4; i++) {
        if (!const_in(g, n, i)) continue;
        pf_status st = read_ints(g, node, i, arr[i - 1], PF_IR_MAX_RANK, &cnt[i - 1]);
        if (st != PF_OK) return st;
        if (len >= 0 && cnt[i - 1] != len)
            return bad_const(g, node, i, "length differs from the other slice inputs");
        len = cnt[i - 1];
    }
    bool attr_valid = a->n == len;
    int64_t *dst[4] = {a->starts, a->ends, a->axes, a->steps};
    for (int j = 0; j < 4; j++) {
        if (cnt[j] >= 0) {
            memcpy(dst[j], arr[j], sizeof(int64_t) * (size_t)len);
        } else if (!attr_valid) {
            if (j < 2) {
                char d[192];
                return pf_set_error(PF_ERR_FORMAT, "%s: slice %s missing",
                                    pf_ir_node_desc(g, node, d, sizeof d), j ? "ends" : "starts");
            }
            for (int k = 0; k < len; k++) dst[j][k] = j == 2 ? k : 1;
        }
    }
    a->n = len;
    for (int i = 4; i >= 1; i--)
        if (i < n->n_in && n->in[i] >= 0) drop_input(g, n, i);
    *changed = true;
    return PF_OK;
}

static pf_status resolve_resize(pf_ir_graph *g, int node, bool *changed)
{
    pf_ir_node *n = &g->nodes[node];
    pf_ir_resize_attr *a = &n->attr.resize;
    int scales_at = 2, sizes_at = 3, roi_at = 1;
    if (is_upsample_style(n)) {
        scales_at = 1;
        sizes_at = -1;
        roi_at = -1;
    }
    if (roi_at > 0 && const_in(g, n, roi_at)) {
        drop_input(g, n, roi_at);
        *changed = true;
    }
    if (const_in(g, n, scales_at)) {
        double s[PF_IR_MAX_RANK];
        int cnt = 0;
        const pf_ir_value *v = const_in(g, n, scales_at);
        if (pf_ir_value_numel(v) > 0) {
            pf_status st = read_doubles(g, node, scales_at, s, PF_IR_MAX_RANK, &cnt);
            if (st != PF_OK) return st;
            a->n = cnt;
            for (int i = 0; i < cnt; i++) a->scale[i] = s[i];
            a->has_scales = true;
        }
        drop_input(g, n, scales_at);
        *changed = true;
    }
    if (sizes_at > 0 && const_in(g, n, sizes_at)) {
        int64_t s[PF_IR_MAX_RANK];
        int cnt = 0;
        pf_status st = read_ints(g, node, sizes_at, s, PF_IR_MAX_RANK, &cnt);
        if (st != PF_OK) return st;
        pf_ir_value *y = &g->values[n->out[0]];
        y->ndim = cnt;
        for (int i = 0; i < cnt; i++) {
            if (s[i] < 0) return bad_const(g, node, sizes_at, "negative size");
            y->dims[i] = s[i];
        }
        a->has_scales = false;
        drop_input(g, n, sizes_at);
        *changed = true;
    }
    return PF_OK;
}

/* Step 1 of the file comment. */
static pf_status resolve_attr_inputs(pf_ir_graph *g, int node, bool *changed)
{
    pf_ir_node *n = &g->nodes[node];
    if (n->n_in < 2) return PF_OK;
    pf_status st = PF_OK;
    int cnt = 0;
    switch (n->op) {
    case PF_IR_RESHAPE:
        if (!const_in(g, n, 1)) return PF_OK;
        if (n->attr.reshape.kind == PF_IR_RESHAPE_SQUEEZE ||
            n->attr.reshape.kind == PF_IR_RESHAPE_UNSQUEEZE)
            st = read_ints(g, node, 1, n->attr.reshape.axes, PF_IR_MAX_RANK, &cnt);
        else
            st = read_ints(g, node, 1, n->attr.reshape.shape, PF_IR_MAX_RANK, &cnt);
        if (st != PF_OK) return st;
        n->attr.reshape.n = cnt;
        break;
    case PF_IR_EXPAND:
        if (!const_in(g, n, 1)) return PF_OK;
        st = read_ints(g, node, 1, n->attr.reshape.shape, PF_IR_MAX_RANK, &cnt);
        if (st != PF_OK) return st;
        n->attr.reshape.kind = PF_IR_RESHAPE_SHAPE;
        n->attr.reshape.n = cnt;
        break;
    case PF_IR_TILE:
        if (!const_in(g, n, 1)) return PF_OK;
        st = read_ints(g, node, 1, n->attr.tile.repeats, PF_IR_MAX_RANK, &cnt);
        if (st != PF_OK) return st;
        n->attr.tile.n = cnt;
        break;
    case PF_IR_REDUCE_MEAN: case PF_IR_REDUCE_SUM: case PF_IR_REDUCE_MAX: case PF_IR_REDUCE_MIN:
    case PF_IR_REDUCE_PROD: case PF_IR_REDUCE_L2: case PF_IR_REDUCE_SUM_SQUARE:
        if (!const_in(g, n, 1)) return PF_OK;
        st = read_ints(g, node, 1, n->attr.reduce.axes, PF_IR_MAX_RANK, &cnt);
        if (st != PF_OK) return st;
        n->attr.reduce.n = cnt;
        break;
    case PF_IR_SPLIT:
        if (!const_in(g, n, 1)) return PF_OK;
        st = read_ints(g, node, 1, n->attr.split.sizes, PF_IR_MAX_OUTPUTS, &cnt);
        if (st != PF_OK) return st;
        n->attr.split.n = cnt;
        break;
    case PF_IR_SLICE: return resolve_slice(g, node, changed);
    case PF_IR_RESIZE: return resolve_resize(g, node, changed);
    case PF_IR_PAD: {
        if (const_in(g, n, 1)) {
            int64_t p[2 * PF_IR_MAX_RANK];
            st = read_ints(g, node, 1, p, 2 * PF_IR_MAX_RANK, &cnt);
            if (st != PF_OK) return st;
            if (cnt % 2) return bad_const(g, node, 1, "pads needs an even number of entries");
            int r = cnt / 2;
            n->attr.pad.n = r;
            for (int i = 0; i < r; i++) {
                n->attr.pad.begin[i] = p[i];
                n->attr.pad.end[i] = p[r + i];
            }
            drop_input(g, n, 1);
            *changed = true;
        }
        if (const_in(g, n, 2)) {
            double v[1];
            const pf_ir_value *cv = const_in(g, n, 2);
            if (pf_ir_value_numel(cv) > 1) return bad_const(g, node, 2, "must be a scalar");
            if (pf_ir_value_numel(cv) == 1) {
                st = read_doubles(g, node, 2, v, 1, &cnt);
                if (st != PF_OK) return st;
                n->attr.pad.value = v[0];
            }
            drop_input(g, n, 2);
            *changed = true;
        }
        return PF_OK;
    }
    case PF_IR_CLIP: {
        for (int i = 1; i <= 2; i++) {
            const pf_ir_value *cv = const_in(g, n, i);
            if (!cv) continue;
            double v[1];
            if (pf_ir_value_numel(cv) != 1) return bad_const(g, node, i, "must be a scalar");
            st = read_doubles(g, node, i, v, 1, &cnt);
            if (st != PF_OK) return st;
            /* The attrs are floats: an integer bound they cannot hold
             * exactly (above 2^24) stays an input, which the CPU reads as
             * it is (the CUDA kernel takes attrs only and refuses it). */
            if ((double)(float)v[0] != v[0]) continue;
            if (i == 1) n->attr.unary.alpha = (float)v[0];
            else n->attr.unary.beta = (float)v[0];
            drop_input(g, n, i);
            *changed = true;
        }
        return PF_OK;
    }
    default: return PF_OK;
    }
    drop_input(g, n, 1);
    *changed = true;
    return PF_OK;
}

/* Makes output value `v` a constant holding `data` (taken). */
static void make_const(pf_ir_graph *g, int v, void *data, size_t nbytes)
{
    pf_ir_value *val = &g->values[v];
    free(val->data);
    val->data = data;
    val->nbytes = nbytes;
    val->producer = -1;
}

static void kill_node(pf_ir_graph *g, pf_ir_node *n)
{
    n->dead = true;
    for (int i = 0; i < n->n_in; i++)
        if (n->in[i] >= 0 && g->values[n->in[i]].n_uses > 0) g->values[n->in[i]].n_uses--;
}

static pf_status fold_shape(pf_ir_graph *g, int node, bool *folded)
{
    pf_ir_node *n = &g->nodes[node];
    if (n->in[0] < 0) return PF_OK;
    const pf_ir_value *x = &g->values[n->in[0]];
    pf_ir_value *y = &g->values[n->out[0]];
    if (x->ndim < 0 || y->ndim != 1 || y->dims[0] < 0) return PF_OK;
    int64_t s = n->attr.slice.starts[0], cnt = y->dims[0];
    for (int64_t i = 0; i < cnt; i++)
        if (x->dims[s + i] < 0) return PF_OK;
    int64_t *d = malloc(sizeof(int64_t) * (size_t)(cnt ? cnt : 1));
    if (!d) return pf_set_error(PF_ERR_NOMEM, "constant folding: out of memory");
    for (int64_t i = 0; i < cnt; i++) d[i] = x->dims[s + i];
    make_const(g, n->out[0], d, sizeof(int64_t) * (size_t)cnt);
    kill_node(g, n);
    *folded = true;
    return PF_OK;
}

static pf_status fold_by_kernel(pf_ir_graph *g, int node, bool *folded)
{
    pf_ir_node *n = &g->nodes[node];
    const void *in[PF_IR_MAX_INPUTS] = {NULL};
    void *out[PF_IR_MAX_OUTPUTS] = {NULL};
    size_t sizes[PF_IR_MAX_OUTPUTS] = {0}, total = 0;
    for (int i = 0; i < n->n_in; i++) {
        if (n->in[i] < 0) continue;
        const pf_ir_value *v = &g->values[n->in[i]];
        if (!v->data) return PF_OK;
        in[i] = v->data;
    }
    for (int k = 0; k < n->n_out; k++) {
        const pf_ir_value *v = &g->values[n->out[k]];
        int64_t numel = pf_ir_value_numel(v);
        if (v->ndim < 0 || numel < 0 || v->is_input) return PF_OK;
        sizes[k] = pf_ir_value_nbytes(v);
        /* nbytes is 0 on overflow: never fold into a buffer smaller than the count. */
        if (numel > 0 && sizes[k] == 0) return PF_OK;
        total += sizes[k];
    }
    if (total > FOLD_MAX_BYTES) return PF_OK;
    char why[64];
    if (!pf_nn_cpu_supports(g, node, why, sizeof why)) return PF_OK;
    size_t sb = pf_nn_cpu_scratch_bytes(g, node);
    void *scratch = NULL;
    pf_status st = PF_OK;
    if (sb) {
        scratch = aligned_alloc(64, (sb + 63) / 64 * 64);
        if (!scratch) return pf_set_error(PF_ERR_NOMEM, "constant folding: out of memory");
    }
    for (int k = 0; k < n->n_out && st == PF_OK; k++) {
        out[k] = aligned_alloc(64, (sizes[k] + 63) / 64 * 64 + 64);
        if (!out[k]) st = pf_set_error(PF_ERR_NOMEM, "constant folding: out of memory");
    }
    if (st == PF_OK) st = pf_nn_cpu_run_node(g, node, in, out, NULL, scratch, sb);
    free(scratch);
    if (st != PF_OK) {
        for (int k = 0; k < n->n_out; k++) free(out[k]);
        if (st == PF_ERR_UNSUPPORTED) {
            pf_clear_error();
            return PF_OK;
        }
        return st;
    }
    for (int k = 0; k < n->n_out; k++) make_const(g, n->out[k], out[k], sizes[k]);
    kill_node(g, n);
    *folded = true;
    return PF_OK;
}

pf_status pf_ir_fold_constants(pf_ir_graph *g, int *n_folded)
{
    if (n_folded) *n_folded = 0;
    if (!g) return pf_set_error(PF_ERR_INVALID, "pf_ir_fold_constants: graph is NULL");
    int folded = 0;
    for (int pass = 0; pass < 16; pass++) {
        bool changed = false;
        for (int k = 0; k < g->n_nodes; k++) {
            if (g->nodes[k].dead) continue;
            pf_status st = resolve_attr_inputs(g, k, &changed);
            if (st == PF_OK) st = pf_ir_infer_node(g, k);
            if (st != PF_OK) return st;
            bool f = false;
            if (g->nodes[k].op == PF_IR_SHAPE) st = fold_shape(g, k, &f);
            else st = fold_by_kernel(g, k, &f);
            if (st != PF_OK) return st;
            if (f) {
                folded++;
                changed = true;
            }
        }
        if (!changed) break;
    }
    pf_ir_recount(g);
    if (n_folded) *n_folded = folded;
    return PF_OK;
}
