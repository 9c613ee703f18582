/* Q/DQ placement and insertion on the lowered ONNX nodes (quantize.h).
 *
 * Placement follows TensorRT's explicit-quantization guide: a Q/DQ pair on
 * every activation input of Conv, ConvTranspose, Gemm and MatMul (so the
 * op runs in int8), int8 weights behind a DequantizeLinear with one scale
 * per output channel, and on residual Adds a pair on the input that does not
 * come straight from a conv (the "identity" branch): the conv's own output
 * then stays in the conv's epilogue, where an int8 engine fuses the add.
 * Biases stay float: ONNX's QDQ form lets the runtime fold the bias into its
 * own int32 accumulator with sx * sw, and a float bias stays right if a later
 * pass changes either scale (an int32 bias written here would not). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "quantize.h"

#define TRY(x) do { pf_status st_ = (x); if (st_) return st_; } while (0)

static bool is_mm(const char *op)
{
    return !strcmp(op, "Conv") || !strcmp(op, "ConvTranspose") || !strcmp(op, "Gemm") ||
           !strcmp(op, "MatMul");
}

static const pf_onnx_wnode *producer(const pf_onnx_wmodel *w, const char *v)
{
    for (int i = 0; i < w->n_nodes; i++)
        for (int k = 0; k < w->nodes[i].n_out; k++)
            if (!strcmp(w->nodes[i].out[k], v)) return &w->nodes[i];
    return NULL;
}

/* Convs on a 1x1 map (squeeze-and-excitation blocks after a global pool)
 * stay float: they cost nothing next to the convs on full maps, and int8
 * there costs the MediaPipe selfie model most of its error (mask IoU vs
 * FP32 on photos 0.91 with them quantized, 0.95 without, percentile 99.99). */
static bool tiny_conv(const pf_onnx_wmodel *w, const pf_onnx_wnode *n)
{
    if (strcmp(n->op_type, "Conv") != 0 && strcmp(n->op_type, "ConvTranspose") != 0) return false;
    const pf_onnx_wvalue *x = n->n_in ? pf_onnx_wmodel_find_info(w, n->in[0]) : NULL;
    return x && x->ndim == 4 && x->dims[2] == 1 && x->dims[3] == 1;
}

/* A value that is computed (not an initializer) and is float. */
static bool runtime_float(const pf_onnx_wmodel *w, const char *v)
{
    if (!*v || pf_onnx_wmodel_find_init(w, v)) return false;
    const pf_onnx_wvalue *info = pf_onnx_wmodel_find_info(w, v);
    return !info || info->dtype == 1;
}

static pf_status add_act(pf_qdq_plan *p, const char *v)
{
    for (int i = 0; i < p->n_acts; i++)
        if (!strcmp(p->acts[i], v)) return PF_OK;
    char **a = realloc(p->acts, (size_t)(p->n_acts + 1) * sizeof *a);
    if (!a) return pf_set_error(PF_ERR_NOMEM, "quantize: out of memory");
    p->acts = a;
    if (!(p->acts[p->n_acts] = strdup(v))) return pf_set_error(PF_ERR_NOMEM, "quantize: out of memory");
    p->n_acts++;
    return PF_OK;
}

/* The Add's inputs have the same shape (a residual, not a bias or broadcast). */
static bool residual_add(const pf_onnx_wmodel *w, const pf_onnx_wnode *n)
{
    if (strcmp(n->op_type, "Add") != 0 || n->n_in != 2) return false;
    if (!runtime_float(w, n->in[0]) || !runtime_float(w, n->in[1])) return false;
    const pf_onnx_wvalue *a = pf_onnx_wmodel_find_info(w, n->in[0]);
    const pf_onnx_wvalue *b = pf_onnx_wmodel_find_info(w, n->in[1]);
    if (!a || !b || a->ndim != 4 || b->ndim != 4) return false;
    return !memcmp(a->dims, b->dims, 4 * sizeof a->dims[0]);
}

static bool from_conv(const pf_onnx_wmodel *w, const char *v)
{
    const pf_onnx_wnode *p = producer(w, v);
    if (!p) return false;
    if (is_mm(p->op_type)) return true;
    /* A conv's fused activation, written as its own node. */
    return p->n_in >= 1 && strstr(p->in[0], "/preact") && (p = producer(w, p->in[0])) &&
           is_mm(p->op_type);
}

pf_status pf_qdq_plan_make(const pf_onnx_wmodel *w, pf_qdq_plan *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < w->n_nodes; i++) {
        const pf_onnx_wnode *n = &w->nodes[i];
        if (is_mm(n->op_type) && tiny_conv(w, n)) {
            out->left_float++;
        } else if (is_mm(n->op_type)) {
            int n_act = !strcmp(n->op_type, "MatMul") ? 2 : 1;
            for (int k = 0; k < n_act && k < n->n_in; k++)
                if (runtime_float(w, n->in[k])) TRY(add_act(out, n->in[k]));
            out->nodes++;
        } else if (residual_add(w, n)) {
            bool c0 = from_conv(w, n->in[0]), c1 = from_conv(w, n->in[1]);
            /* The identity branch; both from convs: the second (the shortcut's
             * downsampling conv in ResNet order). */
            if (!c0) TRY(add_act(out, n->in[0]));
            if (!c1 || c0) TRY(add_act(out, n->in[1]));
            out->residual_adds++;
        }
    }
    return PF_OK;
}

void pf_qdq_plan_free(pf_qdq_plan *p)
{
    for (int i = 0; i < p->n_acts; i++) free(p->acts[i]);
    free(p->acts);
    memset(p, 0, sizeof *p);
}

/* Whether input k of n reads the dequantized value: the activation inputs
 * of quantized ops, and the planned inputs of residual Adds (`residual` is
 * decided before any input of the node is renamed). */
static bool consumer_wants(const pf_onnx_wmodel *w, const pf_qdq_plan *plan,
                           const pf_onnx_wnode *n, int k, bool residual)
{
    if (is_mm(n->op_type) && tiny_conv(w, n)) return false;
    if (is_mm(n->op_type)) {
        int n_act = !strcmp(n->op_type, "MatMul") ? 2 : 1;
        if (k >= n_act) return false;
    } else if (!residual) {
        return false;
    }
    for (int i = 0; i < plan->n_acts; i++)
        if (!strcmp(plan->acts[i], n->in[k])) return true;
    return false;
}

static float act_scale(const pf_calib *c, const char *v)
{
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->t[i].name, v)) {
            double am = c->t[i].amax;
            return am > 0 && isfinite(am) ? (float)(am / 127.0) : 1.0f / 127.0f;
        }
    return 0;
}

static int8_t q8(float x, float s)
{
    float r = nearbyintf(x / s);   /* round half to even, as QuantizeLinear */
    return (int8_t)(r > 127 ? 127 : r < -128 ? -128 : r);
}

/* Inserts the Q/DQ (or simulated) chain of activation v before node `pos`;
 * returns the dequantized name in dq (and how many nodes were inserted). */
static pf_status insert_act(pf_onnx_wmodel *w, int pos, const char *v, float s, bool simulate,
                            char *dq, size_t dq_size, int *added)
{
    char sn[512], zn[512], qn[512], buf[640];
    snprintf(sn, sizeof sn, "%s", pf_onnx_wmodel_fresh_name(w, v, "/scale", buf, sizeof buf));
    TRY(pf_onnx_wmodel_add_f32s(w, sn, &s, 1, true));
    snprintf(dq, dq_size, "%s", pf_onnx_wmodel_fresh_name(w, v, "/dequantized", buf, sizeof buf));
    if (!simulate) {
        int8_t z = 0;
        snprintf(zn, sizeof zn, "%s", pf_onnx_wmodel_fresh_name(w, v, "/zero_point", buf, sizeof buf));
        TRY(pf_onnx_wmodel_add_init(w, zn, 3, 0, NULL, &z, 1));
        snprintf(qn, sizeof qn, "%s", pf_onnx_wmodel_fresh_name(w, v, "/quantized", buf, sizeof buf));
        const char *qi[3] = {v, sn, zn}, *qo[1] = {qn};
        const char *di[3] = {qn, sn, zn}, *dout[1] = {dq};
        snprintf(buf, sizeof buf, "%s/QuantizeLinear", v);
        if (!pf_onnx_wmodel_insert_node(w, pos, "QuantizeLinear", buf, qi, 3, qo, 1)) return PF_ERR_NOMEM;
        snprintf(buf, sizeof buf, "%s/DequantizeLinear", v);
        if (!pf_onnx_wmodel_insert_node(w, pos + 1, "DequantizeLinear", buf, di, 3, dout, 1))
            return PF_ERR_NOMEM;
        *added = 2;
        return PF_OK;
    }
    /* Simulated: Div -> Round -> Clip(-128, 127) -> Mul, float throughout. */
    char t1[640], t2[640], t3[640], lo[512], hi[512];
    float lov = -128, hiv = 127;
    snprintf(lo, sizeof lo, "%s", pf_onnx_wmodel_fresh_name(w, v, "/qmin", buf, sizeof buf));
    TRY(pf_onnx_wmodel_add_f32s(w, lo, &lov, 1, true));
    snprintf(hi, sizeof hi, "%s", pf_onnx_wmodel_fresh_name(w, v, "/qmax", buf, sizeof buf));
    TRY(pf_onnx_wmodel_add_f32s(w, hi, &hiv, 1, true));
    snprintf(t1, sizeof t1, "%s/sim_div", v);
    snprintf(t2, sizeof t2, "%s/sim_round", v);
    snprintf(t3, sizeof t3, "%s/sim_clip", v);
    const char *i1[2] = {v, sn}, *o1[1] = {t1};
    const char *i2[1] = {t1}, *o2[1] = {t2};
    const char *i3[3] = {t2, lo, hi}, *o3[1] = {t3};
    const char *i4[2] = {t3, sn}, *o4[1] = {dq};
    if (!pf_onnx_wmodel_insert_node(w, pos, "Div", t1, i1, 2, o1, 1) ||
        !pf_onnx_wmodel_insert_node(w, pos + 1, "Round", t2, i2, 1, o2, 1) ||
        !pf_onnx_wmodel_insert_node(w, pos + 2, "Clip", t3, i3, 3, o3, 1) ||
        !pf_onnx_wmodel_insert_node(w, pos + 3, "Mul", dq, i4, 2, o4, 1))
        return PF_ERR_NOMEM;
    *added = 4;
    return PF_OK;
}

/* The output-channel axis of a weight, or -1 for one scale. */
static int weight_axis(const pf_onnx_wnode *n, const pf_onnx_winit *wt)
{
    if (!strcmp(n->op_type, "Conv")) return 0;
    if (!strcmp(n->op_type, "ConvTranspose")) {
        for (int k = 0; k < n->n_attrs; k++)
            if (!strcmp(n->attrs[k].name, "group") && n->attrs[k].i != 1) return -1;
        return 1;
    }
    if (wt->ndim != 2) return -1;
    if (!strcmp(n->op_type, "Gemm")) {
        for (int k = 0; k < n->n_attrs; k++)
            if (!strcmp(n->attrs[k].name, "transB") && n->attrs[k].i) return 0;
    }
    return 1;
}

static pf_status quantize_weight(pf_onnx_wmodel *w, int pos, const pf_onnx_wnode *n,
                                 const char *wname, bool simulate, char *dq, size_t dq_size,
                                 int *added)
{
    const pf_onnx_winit *wt = pf_onnx_wmodel_find_init(w, wname);
    int axis = weight_axis(n, wt);
    /* Adding initializers moves w->inits: keep what is needed of wt. */
    int ndim = wt->ndim;
    int64_t dims[PF_IR_MAX_RANK];
    memcpy(dims, wt->dims, sizeof dims);
    int64_t ch = axis < 0 ? 1 : wt->dims[axis];
    int64_t numel = (int64_t)(wt->nbytes / 4), inner = 1;
    for (int d = axis + 1; axis >= 0 && d < wt->ndim; d++) inner *= wt->dims[d];
    float *scale = calloc((size_t)ch, sizeof *scale);
    int8_t *q = malloc((size_t)(numel ? numel : 1));
    float *deq = simulate ? malloc((size_t)(numel ? numel : 1) * sizeof *deq) : NULL;
    int8_t *zp = calloc((size_t)ch, 1);
    pf_status st = PF_OK;
    if (!scale || !q || !zp || (simulate && !deq)) {
        st = pf_set_error(PF_ERR_NOMEM, "quantize: out of memory");
        goto done;
    }
    const float *x = wt->data;   /* the bytes do not move */
    for (int64_t k = 0; k < numel; k++) {
        int64_t c = axis < 0 ? 0 : (k / inner) % ch;
        float a = fabsf(x[k]);
        if (a > scale[c]) scale[c] = a;
    }
    for (int64_t c = 0; c < ch; c++) scale[c] = scale[c] > 0 ? scale[c] / 127.0f : 1.0f;
    for (int64_t k = 0; k < numel; k++) {
        int64_t c = axis < 0 ? 0 : (k / inner) % ch;
        q[k] = q8(x[k], scale[c]);
        if (deq) deq[k] = (float)q[k] * scale[c];
    }
    char buf[640], qn[512], sn[512], zn[512];
    snprintf(dq, dq_size, "%s", pf_onnx_wmodel_fresh_name(w, wname, "/dequantized", buf, sizeof buf));
    if (simulate) {
        st = pf_onnx_wmodel_add_init(w, dq, 1, ndim, dims, deq, (size_t)numel * 4);
        *added = 0;
        goto done;
    }
    snprintf(qn, sizeof qn, "%s", pf_onnx_wmodel_fresh_name(w, wname, "/quantized", buf, sizeof buf));
    snprintf(sn, sizeof sn, "%s", pf_onnx_wmodel_fresh_name(w, wname, "/scale", buf, sizeof buf));
    snprintf(zn, sizeof zn, "%s", pf_onnx_wmodel_fresh_name(w, wname, "/zero_point", buf, sizeof buf));
    if ((st = pf_onnx_wmodel_add_init(w, qn, 3, ndim, dims, q, (size_t)numel))) goto done;
    if ((st = pf_onnx_wmodel_add_f32s(w, sn, scale, (int)ch, axis < 0))) goto done;
    if ((st = pf_onnx_wmodel_add_init(w, zn, 3, axis < 0 ? 0 : 1, &ch, zp, (size_t)ch))) goto done;
    const char *di[3] = {qn, sn, zn}, *dout[1] = {dq};
    snprintf(buf, sizeof buf, "%s/DequantizeLinear", wname);
    pf_onnx_wnode *d = pf_onnx_wmodel_insert_node(w, pos, "DequantizeLinear", buf, di, 3, dout, 1);
    if (!d) {
        st = PF_ERR_NOMEM;
        goto done;
    }
    if (axis >= 0) st = pf_onnx_wnode_attr_int(d, "axis", axis);
    *added = 1;
done:
    free(scale);
    free(q);
    free(deq);
    free(zp);
    return st;
}

static bool used(const pf_onnx_wmodel *w, const char *name)
{
    for (int i = 0; i < w->n_nodes; i++)
        for (int k = 0; k < w->nodes[i].n_in; k++)
            if (!strcmp(w->nodes[i].in[k], name)) return true;
    for (int i = 0; i < w->n_outputs; i++)
        if (!strcmp(w->outputs[i].name, name)) return true;
    return false;
}

static void drop_unused_inits(pf_onnx_wmodel *w)
{
    int k = 0;
    for (int i = 0; i < w->n_inits; i++) {
        if (!used(w, w->inits[i].name)) {
            free(w->inits[i].name);
            free(w->inits[i].owned);
            continue;
        }
        w->inits[k++] = w->inits[i];
    }
    w->n_inits = k;
}

typedef struct done_map {
    char **from, **to;
    int n;
} done_map;

static const char *map_find(const done_map *m, const char *from)
{
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->from[i], from)) return m->to[i];
    return NULL;
}

static pf_status map_add(done_map *m, const char *from, const char *to)
{
    char **f = realloc(m->from, (size_t)(m->n + 1) * sizeof *f);
    if (f) m->from = f;
    char **t = realloc(m->to, (size_t)(m->n + 1) * sizeof *t);
    if (t) m->to = t;
    if (!f || !t) return pf_set_error(PF_ERR_NOMEM, "quantize: out of memory");
    m->from[m->n] = strdup(from);
    m->to[m->n] = strdup(to);
    m->n++;
    if (!m->from[m->n - 1] || !m->to[m->n - 1]) return pf_set_error(PF_ERR_NOMEM, "quantize: out of memory");
    return PF_OK;
}

static void map_free(done_map *m)
{
    for (int i = 0; i < m->n; i++) {
        free(m->from[i]);
        free(m->to[i]);
    }
    free(m->from);
    free(m->to);
}

pf_status pf_qdq_insert(pf_onnx_wmodel *w, const pf_qdq_plan *plan, const pf_calib *c,
                        bool simulate, int *weights)
{
    done_map acts = {0}, wts = {0};
    pf_status st = PF_OK;
    *weights = 0;
    char dq[512];
    for (int i = 0; i < w->n_nodes && st == PF_OK; i++) {
        /* Copy what is needed: inserting nodes moves w->nodes. */
        int n_in = w->nodes[i].n_in;
        bool residual = residual_add(w, &w->nodes[i]);
        for (int k = 0; k < n_in && st == PF_OK; k++) {
            const pf_onnx_wnode *n = &w->nodes[i];
            const char *v = n->in[k];
            int added = 0;
            if (consumer_wants(w, plan, n, k, residual)) {
                const char *to = map_find(&acts, v);
                if (!to) {
                    char vcopy[512];
                    snprintf(vcopy, sizeof vcopy, "%s", v);
                    st = insert_act(w, i, vcopy, act_scale(c, vcopy), simulate, dq, sizeof dq, &added);
                    if (st == PF_OK) st = map_add(&acts, vcopy, dq);
                    to = dq;
                }
                i += added;
                if (st == PF_OK) st = pf_onnx_wnode_set_input(&w->nodes[i], k, to);
            } else if (k == 1 && is_mm(n->op_type) && !tiny_conv(w, n) &&
                       pf_onnx_wmodel_find_init(w, v) && pf_onnx_wmodel_find_init(w, v)->dtype == 1) {
                const char *to = map_find(&wts, v);
                if (!to) {
                    char vcopy[512];
                    snprintf(vcopy, sizeof vcopy, "%s", v);
                    pf_onnx_wnode ncopy = *n;   /* attrs only read */
                    st = quantize_weight(w, i, &ncopy, vcopy, simulate, dq, sizeof dq, &added);
                    if (st == PF_OK) st = map_add(&wts, vcopy, dq);
                    if (st == PF_OK) (*weights)++;
                    to = dq;
                }
                i += added;
                if (st == PF_OK) st = pf_onnx_wnode_set_input(&w->nodes[i], k, to);
            }
        }
    }
    map_free(&acts);
    map_free(&wts);
    if (st == PF_OK) drop_unused_inits(w);
    return st;
}
