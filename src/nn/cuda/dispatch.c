/* pf_nn_cuda_run_node: maps each IR op that pixflow runs with its own CUDA
 * kernels to a launch. Movement ops become strided views over the
 * elementwise copy (cu_internal.h says how); everything here only builds
 * descriptors on the host, so it is cheap and capturable. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../core/error.h"
#include "cu_internal.h"
#include "qconv.h"


/* Pixel slices for global pooling of a channels-last [n, c, hw] map: enough
 * (image, 32 channels, slice) blocks to keep HBM busy (~1024: each thread
 * has one 2-4 byte load in flight per chain; 128 blocks left DeepLabV3's
 * ASPP pooling at batch 1, 16 MB, at 75 us = 0.2 TB/s), each slice at least
 * 64 pixels; 1 = the unsplit kernel. */
static int64_t gpool_slices(int64_t n, int64_t c, int64_t hw)
{
    const int64_t blocks = n * ((c + 31) / 32);
    if (blocks >= 1024) return 1;
    int64_t s = (1024 + blocks - 1) / blocks;
    if (s > hw / 64) s = hw / 64;
    if (s > 256) s = 256;
    return s < 1 ? 1 : s;
}

/* The split kernel's f32 partials for an [n, c, hw] map (0 unsplit). */
static size_t gpool_scratch(int64_t n, int64_t c, int64_t hw)
{
    const int64_t slices = gpool_slices(n, c, hw);
    return slices > 1 ? (size_t)(n * slices * c) * sizeof(float) : 0;
}

static size_t esz(pf_ir_dtype t)
{
    switch (t) {
    case PF_IR_F32: case PF_IR_I32: return 4;
    case PF_IR_F16: return 2;
    case PF_IR_I64: case PF_IR_F64: return 8;
    default: return 1;
    }
}

static pf_status launch_fail(const pf_ir_graph *g, int node, int err)
{
    char d[160];
    snprintf(d, sizeof d, "node %d '%s' (%s)", node, g->nodes[node].name,
             g->nodes[node].src_op ? g->nodes[node].src_op : "?");
    return pf_set_error(PF_ERR_DEVICE, "%s: CUDA kernel launch failed: %s", d,
                        pf_cu_error_string(err));
}

#define LAUNCH(expr) \
    do { \
        int e_ = (expr); \
        if (e_) return launch_fail(g, node, e_); \
    } while (0)

/* Index space of `out`'s dims with operand 0 = out. */
static void space_of(pf_cu_nd *s, const pf_nn_cu_tensor *out)
{
    memset(s, 0, sizeof *s);
    s->nd = out->ndim;
    for (int d = 0; d < out->ndim; d++) {
        s->dims[d] = out->dims[d];
        s->st[0][d] = out->strides[d];
    }
}

/* Operand k reads `t` broadcast (numpy, right-aligned) to the space. */
static void bcast(pf_cu_nd *s, int k, const pf_nn_cu_tensor *t)
{
    const int off = s->nd - t->ndim;
    for (int d = 0; d < s->nd; d++) {
        const int j = d - off;
        s->st[k][d] = (j < 0 || t->dims[j] == 1) ? 0 : t->strides[j];
    }
}

static pf_cu_ew ew_init(int op, int n_in, const pf_nn_cu_tensor *out)
{
    pf_cu_ew e;
    memset(&e, 0, sizeof e);
    e.op = op;
    e.n_in = n_in;
    e.out = out->data;
    e.dt_out = out->dtype;
    return e;
}

static int copy_view(const pf_cu_nd *s, const void *src, int dt_src, void *dst, int dt_dst,
                     void *stream)
{
    pf_cu_ew e;
    memset(&e, 0, sizeof e);
    e.op = PF_IR_IDENTITY;
    e.n_in = 1;
    e.out = dst;
    e.dt_out = dt_dst;
    e.in[0] = src;
    e.dt_in[0] = dt_src;
    return pf_cu_launch_ew(&e, s, stream);
}

static bool row_major(const pf_nn_cu_tensor *t)
{
    int64_t st = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->dims[d] != 1 && t->strides[d] != st) return false;
        st *= t->dims[d];
    }
    return true;
}

pf_status pf_nn_cuda_copy(const pf_nn_cu_tensor *src, const pf_nn_cu_tensor *dst, void *stream)
{
    if (src->ndim != dst->ndim)
        return pf_set_error(PF_ERR_INVALID, "pf_nn_cuda_copy: rank %d vs %d", src->ndim,
                            dst->ndim);
    pf_cu_nd s;
    space_of(&s, dst);
    for (int d = 0; d < dst->ndim; d++) {
        if (src->dims[d] != dst->dims[d])
            return pf_set_error(PF_ERR_INVALID, "pf_nn_cuda_copy: dim %d is %lld vs %lld", d,
                                (long long)src->dims[d], (long long)dst->dims[d]);
        s.st[1][d] = src->strides[d];
    }
    int e = copy_view(&s, src->data, src->dtype, dst->data, dst->dtype, stream);
    if (e)
        return pf_set_error(PF_ERR_DEVICE, "pf_nn_cuda_copy: CUDA kernel launch failed: %s",
                            pf_cu_error_string(e));
    return PF_OK;
}

pf_status pf_nn_cuda_bias_act(const pf_nn_cu_tensor *src, const pf_nn_cu_tensor *dst,
                              const void *bias, pf_ir_act act, float a, float b, void *stream)
{
    pf_cu_nd s;
    space_of(&s, dst);
    for (int d = 0; d < dst->ndim; d++) s.st[1][d] = src->strides[d];
    pf_cu_ew e = ew_init(bias ? PF_IR_ADD : PF_IR_IDENTITY, bias ? 2 : 1, dst);
    e.in[0] = src->data;
    e.dt_in[0] = src->dtype;
    if (bias) {
        e.in[1] = bias;
        e.dt_in[1] = dst->dtype;
        for (int d = 0; d < dst->ndim; d++) s.st[2][d] = d == 1 ? 1 : 0;
    }
    e.act = act;
    e.act_a = a;
    e.act_b = b;
    int err = pf_cu_launch_ew(&e, &s, stream);
    if (err)
        return pf_set_error(PF_ERR_DEVICE, "pf_nn_cuda_bias_act: CUDA kernel launch failed: %s",
                            pf_cu_error_string(err));
    return PF_OK;
}

pf_status pf_nn_cuda_add_act(const pf_nn_cu_tensor *a, const pf_nn_cu_tensor *b,
                             const pf_nn_cu_tensor *dst, pf_ir_act act, float aa, float ab,
                             void *stream)
{
    if (a->ndim != dst->ndim || b->ndim != dst->ndim)
        return pf_set_error(PF_ERR_INVALID, "pf_nn_cuda_add_act: rank mismatch");
    pf_cu_nd s;
    space_of(&s, dst);
    for (int d = 0; d < dst->ndim; d++) {
        if (a->dims[d] != dst->dims[d] || b->dims[d] != dst->dims[d])
            return pf_set_error(PF_ERR_INVALID, "pf_nn_cuda_add_act: dim %d differs", d);
        s.st[1][d] = a->strides[d];
        s.st[2][d] = b->strides[d];
    }
    pf_cu_ew e = ew_init(PF_IR_ADD, 2, dst);
    e.in[0] = a->data;
    e.dt_in[0] = a->dtype;
    e.in[1] = b->data;
    e.dt_in[1] = b->dtype;
    e.act = act;
    e.act_a = aa;
    e.act_b = ab;
    int err = pf_cu_launch_ew(&e, &s, stream);
    if (err)
        return pf_set_error(PF_ERR_DEVICE, "pf_nn_cuda_add_act: CUDA kernel launch failed: %s",
                            pf_cu_error_string(err));
    return PF_OK;
}

/* Rows over `in` with the axes in `mask` reduced; out strides per kept dim
 * (keepdims: at the same dim; else compacted), or the full output strides
 * for softmax (same shape). */
static void rows_of(pf_cu_rows *r, const pf_nn_cu_tensor *in, const pf_nn_cu_tensor *out,
                    unsigned mask, bool keepdims, bool same_shape)
{
    memset(r, 0, sizeof *r);
    r->n_rows = 1;
    r->row_len = 1;
    int ko = 0;
    for (int d = 0; d < in->ndim; d++) {
        if (mask & (1u << d)) {
            r->idims[r->ni] = in->dims[d];
            r->ist_in[r->ni] = in->strides[d];
            r->ist_out[r->ni] = same_shape ? out->strides[d] : 0;
            r->ni++;
            r->row_len *= in->dims[d];
            if (keepdims && !same_shape) ko++;
        } else {
            r->odims[r->no] = in->dims[d];
            r->ost_in[r->no] = in->strides[d];
            r->ost_out[r->no] = (same_shape || keepdims) ? out->strides[d] : out->strides[ko];
            r->no++;
            ko++;
            r->n_rows *= in->dims[d];
        }
    }
}

static pf_status run_pool(const pf_ir_graph *g, int node, const pf_nn_cu_tensor *x,
                          const pf_nn_cu_tensor *y, void *stream)
{
    const pf_ir_node *n = &g->nodes[node];
    const pf_ir_pool_attr *a = &n->attr.pool;
    pf_cu_pool p;
    memset(&p, 0, sizeof p);
    p.n = x->dims[0];
    p.c = x->dims[1];
    p.is_max = n->op == PF_IR_MAXPOOL;
    p.count_include_pad = a->count_include_pad;
    p.in_st[0] = x->strides[0];
    p.in_st[1] = x->strides[1];
    p.out_st[0] = y->strides[0];
    p.out_st[1] = y->strides[1];
    if (a->nsp == 1) {
        p.h = p.oh = 1;
        p.w = x->dims[2];
        p.ow = y->dims[2];
        p.in_st[3] = x->strides[2];
        p.out_st[3] = y->strides[2];
        p.kh = p.sh = p.dh = 1;
        p.kw = a->kernel[0];
        p.sw = a->stride[0];
        p.dw = a->dilation[0] ? a->dilation[0] : 1;
        p.pw = a->pad_begin[0];
        p.pew = a->pad_end[0];
    } else {
        p.h = x->dims[2];
        p.w = x->dims[3];
        p.oh = y->dims[2];
        p.ow = y->dims[3];
        p.in_st[2] = x->strides[2];
        p.in_st[3] = x->strides[3];
        p.out_st[2] = y->strides[2];
        p.out_st[3] = y->strides[3];
        p.kh = a->kernel[0];
        p.kw = a->kernel[1];
        p.sh = a->stride[0];
        p.sw = a->stride[1];
        p.dh = a->dilation[0] ? a->dilation[0] : 1;
        p.dw = a->dilation[1] ? a->dilation[1] : 1;
        p.ph = a->pad_begin[0];
        p.pw = a->pad_begin[1];
        p.peh = a->pad_end[0];
        p.pew = a->pad_end[1];
    }
    LAUNCH(pf_cu_launch_pool(&p, x->data, y->data, y->dtype, stream));
    return PF_OK;
}

/* Depth/space shuffles as 6D views [N, C', H, b1, W, b2] (see ir.h). */
static pf_status run_d2s(const pf_ir_graph *g, int node, const pf_nn_cu_tensor *x,
                         const pf_nn_cu_tensor *y, void *stream)
{
    const pf_ir_node *n = &g->nodes[node];
    const int64_t bs = n->attr.d2s.blocksize;
    pf_cu_nd s;
    memset(&s, 0, sizeof s);
    s.nd = 6;
    const bool d2s = n->op == PF_IR_DEPTH_TO_SPACE;
    /* The space side (`sp`: H*bs, W*bs) and the depth side (`dp`: C*bs*bs). */
    const pf_nn_cu_tensor *sp = d2s ? y : x, *dp = d2s ? x : y;
    const int64_t cs = sp->dims[1];
    const int64_t h = dp->dims[2], w = dp->dims[3];
    const int64_t dims[6] = {sp->dims[0], cs, h, bs, w, bs};
    const int64_t sps[6] = {sp->strides[0], sp->strides[1], bs * sp->strides[2], sp->strides[2],
                            bs * sp->strides[3], sp->strides[3]};
    int64_t dps[6] = {dp->strides[0], 0, dp->strides[2], 0, dp->strides[3], 0};
    const int64_t sc = dp->strides[1];
    if (d2s && n->attr.d2s.crd) { /* channel = c' * bs * bs + b1 * bs + b2 */
        dps[1] = bs * bs * sc;
        dps[3] = bs * sc;
        dps[5] = sc;
    } else { /* DCR (and SpaceToDepth): channel = (b1 * bs + b2) * C' + c' */
        dps[1] = sc;
        dps[3] = bs * cs * sc;
        dps[5] = cs * sc;
    }
    for (int d = 0; d < 6; d++) {
        s.dims[d] = dims[d];
        s.st[0][d] = d2s ? sps[d] : dps[d];
        s.st[1][d] = d2s ? dps[d] : sps[d];
    }
    LAUNCH(copy_view(&s, x->data, x->dtype, y->data, y->dtype, stream));
    return PF_OK;
}

pf_status pf_nn_cuda_run_node(const pf_ir_graph *g, int node, const pf_nn_cu_tensor *in,
                              const pf_nn_cu_tensor *out, void *stream, void *scratch,
                              size_t scratch_bytes)
{
    (void)scratch;
    (void)scratch_bytes;
    const pf_ir_node *n = &g->nodes[node];
    const pf_nn_cu_tensor *x = &in[0], *y = &out[0];
    pf_cu_nd s;
    pf_cu_ew e;
    switch (n->op) {
    case PF_IR_RELU: case PF_IR_SIGMOID: case PF_IR_TANH: case PF_IR_HARD_SIGMOID:
    case PF_IR_HARD_SWISH: case PF_IR_LEAKY_RELU: case PF_IR_CLIP: case PF_IR_ELU:
    case PF_IR_SELU: case PF_IR_SOFTPLUS: case PF_IR_SOFTSIGN: case PF_IR_ABS: case PF_IR_NEG:
    case PF_IR_EXP: case PF_IR_LOG: case PF_IR_SQRT: case PF_IR_RECIPROCAL: case PF_IR_FLOOR:
    case PF_IR_CEIL: case PF_IR_ROUND: case PF_IR_ERF: case PF_IR_SIN: case PF_IR_COS:
    case PF_IR_NOT: case PF_IR_SIGN: case PF_IR_IDENTITY: case PF_IR_CAST:
        space_of(&s, y);
        bcast(&s, 1, x);
        e = ew_init(n->op, 1, y);
        e.in[0] = x->data;
        e.dt_in[0] = x->dtype;
        e.a = n->attr.unary.alpha;
        e.b = n->attr.unary.beta;
        if (n->op == PF_IR_CAST || n->op == PF_IR_IDENTITY) e.a = e.b = 0.0f;
        e.act = n->act;
        e.act_a = n->act_a;
        e.act_b = n->act_b;
        LAUNCH(pf_cu_launch_ew(&e, &s, stream));
        return PF_OK;
    case PF_IR_ADD: case PF_IR_SUB: case PF_IR_MUL: case PF_IR_DIV: case PF_IR_POW:
    case PF_IR_MAX: case PF_IR_MIN: case PF_IR_MOD: case PF_IR_PRELU: case PF_IR_EQUAL:
    case PF_IR_LESS: case PF_IR_GREATER: case PF_IR_LESS_OR_EQUAL:
    case PF_IR_GREATER_OR_EQUAL: case PF_IR_AND: case PF_IR_OR: case PF_IR_XOR:
    case PF_IR_WHERE: {
        const int k = n->op == PF_IR_WHERE ? 3 : 2;
        space_of(&s, y);
        e = ew_init(n->op, k, y);
        for (int i = 0; i < k; i++) {
            bcast(&s, i + 1, &in[i]);
            e.in[i] = in[i].data;
            e.dt_in[i] = in[i].dtype;
        }
        /* Mod's fmod flag (the IR keeps it in unary.alpha): e.a = 1 selects
         * C's sign of the dividend, 0 the divisor's. */
        if (n->op == PF_IR_MOD) e.a = n->attr.unary.alpha != 0.0f ? 1.0f : 0.0f;
        e.act = n->act;
        e.act_a = n->act_a;
        e.act_b = n->act_b;
        LAUNCH(pf_cu_launch_ew(&e, &s, stream));
        return PF_OK;
    }
    case PF_IR_SUM: case PF_IR_MEAN_N: {
        /* out = in0 + in1, then out += in_k, each step reading out in place
         * (same element, same thread), then the mean's scale. */
        space_of(&s, y);
        bcast(&s, 1, &in[0]);
        if (n->n_in == 1) {
            LAUNCH(copy_view(&s, in[0].data, in[0].dtype, y->data, y->dtype, stream));
        }
        for (int i = 1; i < n->n_in; i++) {
            e = ew_init(PF_IR_ADD, 2, y);
            if (i == 1) {
                e.in[0] = in[0].data;
                e.dt_in[0] = in[0].dtype;
                bcast(&s, 1, &in[0]);
            } else {
                e.in[0] = y->data;
                e.dt_in[0] = y->dtype;
                bcast(&s, 1, y);
            }
            e.in[1] = in[i].data;
            e.dt_in[1] = in[i].dtype;
            bcast(&s, 2, &in[i]);
            LAUNCH(pf_cu_launch_ew(&e, &s, stream));
        }
        if (n->op == PF_IR_MEAN_N && n->n_in > 1) {
            space_of(&s, y);
            bcast(&s, 1, y);
            e = ew_init(PF_CU_OP_SCALE, 1, y);
            e.in[0] = y->data;
            e.dt_in[0] = y->dtype;
            e.a = 1.0f / (float)n->n_in;
            LAUNCH(pf_cu_launch_ew(&e, &s, stream));
        }
        return PF_OK;
    }
    case PF_IR_CONCAT: {
        int64_t axis = n->attr.axis.axis;
        if (axis < 0) axis += y->ndim;
        int64_t at = 0;
        for (int i = 0; i < n->n_in; i++) {
            const pf_nn_cu_tensor *t = &in[i];
            if (!t->data) continue;
            space_of(&s, t);
            for (int d = 0; d < y->ndim; d++) {
                s.st[0][d] = y->strides[d];
                s.st[1][d] = t->strides[d];
            }
            char *dst = (char *)y->data + (size_t)(at * y->strides[axis]) * esz(y->dtype);
            LAUNCH(copy_view(&s, t->data, t->dtype, dst, y->dtype, stream));
            at += t->dims[axis];
        }
        return PF_OK;
    }
    case PF_IR_SPLIT: {
        int64_t axis = n->attr.split.axis;
        if (axis < 0) axis += x->ndim;
        int64_t at = 0;
        for (int i = 0; i < n->n_out; i++) {
            const pf_nn_cu_tensor *t = &out[i];
            if (t->data) {
                space_of(&s, t);
                for (int d = 0; d < x->ndim; d++) s.st[1][d] = x->strides[d];
                const char *src =
                    (const char *)x->data + (size_t)(at * x->strides[axis]) * esz(x->dtype);
                LAUNCH(copy_view(&s, src, x->dtype, t->data, t->dtype, stream));
            }
            at += t->dims[axis];
        }
        return PF_OK;
    }
    case PF_IR_RESHAPE:
        if (row_major(x)) {
            space_of(&s, y);
            int64_t st = 1;
            for (int d = y->ndim - 1; d >= 0; d--) {
                s.st[1][d] = st;
                st *= y->dims[d];
            }
            LAUNCH(copy_view(&s, x->data, x->dtype, y->data, y->dtype, stream));
        } else {
            LAUNCH(pf_cu_launch_reshape(x->data, x->dtype, x->ndim, x->dims, x->strides, y->data,
                                        y->dtype, y->ndim, y->dims, y->strides, stream));
        }
        return PF_OK;
    case PF_IR_TRANSPOSE:
        space_of(&s, y);
        for (int d = 0; d < y->ndim; d++) s.st[1][d] = x->strides[n->attr.transpose.perm[d]];
        LAUNCH(copy_view(&s, x->data, x->dtype, y->data, y->dtype, stream));
        return PF_OK;
    case PF_IR_SLICE: {
        space_of(&s, y);
        int64_t st[PF_IR_MAX_RANK];
        int64_t off = 0;
        for (int d = 0; d < x->ndim; d++) st[d] = x->strides[d];
        const pf_ir_slice_attr *a = &n->attr.slice;
        for (int i = 0; i < a->n; i++) {
            int64_t ax = a->axes[i];
            if (ax < 0) ax += x->ndim;
            if (y->dims[ax] > 0) off += a->starts[i] * x->strides[ax];
            st[ax] = x->strides[ax] * a->steps[i];
        }
        for (int d = 0; d < y->ndim; d++) s.st[1][d] = st[d];
        const char *src = (const char *)x->data + off * (int64_t)esz(x->dtype);
        LAUNCH(copy_view(&s, src, x->dtype, y->data, y->dtype, stream));
        return PF_OK;
    }
    case PF_IR_EXPAND:
        space_of(&s, y);
        bcast(&s, 1, x);
        LAUNCH(copy_view(&s, x->data, x->dtype, y->data, y->dtype, stream));
        return PF_OK;
    case PF_IR_TILE: {
        /* [r0, d0, r1, d1, ...]: the output steps over whole copies of the
         * input on the even dims, the input never does. */
        memset(&s, 0, sizeof s);
        s.nd = 2 * x->ndim;
        for (int d = 0; d < x->ndim; d++) {
            s.dims[2 * d] = x->dims[d] ? y->dims[d] / x->dims[d] : 0;
            s.dims[2 * d + 1] = x->dims[d];
            s.st[0][2 * d] = x->dims[d] * y->strides[d];
            s.st[0][2 * d + 1] = y->strides[d];
            s.st[1][2 * d] = 0;
            s.st[1][2 * d + 1] = x->strides[d];
        }
        LAUNCH(copy_view(&s, x->data, x->dtype, y->data, y->dtype, stream));
        return PF_OK;
    }
    case PF_IR_DEPTH_TO_SPACE: case PF_IR_SPACE_TO_DEPTH:
        return run_d2s(g, node, x, y, stream);
    case PF_IR_PAD: {
        pf_cu_pad p;
        memset(&p, 0, sizeof p);
        p.nd = x->ndim;
        for (int d = 0; d < x->ndim; d++) {
            p.out_dims[d] = y->dims[d];
            p.out_st[d] = y->strides[d];
            p.in_dims[d] = x->dims[d];
            p.in_st[d] = x->strides[d];
            p.begin[d] = n->attr.pad.begin[d];
        }
        p.mode = n->attr.pad.mode;
        p.value = n->attr.pad.value;
        LAUNCH(pf_cu_launch_pad(&p, x->data, y->data, y->dtype, stream));
        return PF_OK;
    }
    case PF_IR_GATHER: {
        pf_cu_gather p;
        memset(&p, 0, sizeof p);
        int64_t axis = n->attr.axis.axis;
        if (axis < 0) axis += x->ndim;
        p.axis = (int)axis;
        p.nd_out = y->ndim;
        p.nd_data = x->ndim;
        p.nd_idx = in[1].ndim;
        for (int d = 0; d < y->ndim; d++) {
            p.out_dims[d] = y->dims[d];
            p.out_st[d] = y->strides[d];
        }
        for (int d = 0; d < x->ndim; d++) {
            p.data_dims[d] = x->dims[d];
            p.data_st[d] = x->strides[d];
        }
        for (int d = 0; d < in[1].ndim; d++) p.idx_st[d] = in[1].strides[d];
        LAUNCH(pf_cu_launch_gather(&p, x->data, in[1].data, in[1].dtype, y->data, y->dtype,
                                   stream));
        return PF_OK;
    }
    case PF_IR_RESIZE: {
        pf_cu_resize p;
        memset(&p, 0, sizeof p);
        const pf_ir_resize_attr *a = &n->attr.resize;
        p.nd = x->ndim;
        for (int d = 0; d < x->ndim; d++) {
            p.in_dims[d] = x->dims[d];
            p.in_st[d] = x->strides[d];
            p.out_dims[d] = y->dims[d];
            p.out_st[d] = y->strides[d];
            const double sc = d < a->n && a->scale[d] > 0
                                  ? a->scale[d]
                                  : (double)y->dims[d] / (double)(x->dims[d] ? x->dims[d] : 1);
            p.scale[d] = (float)sc;
            /* as the CPU's rs_coord: scale * in, or the output length when
             * the two agree (a scale = out / in that rounds) */
            double len = sc * (double)x->dims[d];
            const double od = (double)y->dims[d];
            if (fabs(len - od) <= 1e-6 * (od > 1.0 ? od : 1.0)) len = od;
            p.rlen[d] = (float)len;
        }
        p.mode = a->mode;
        p.coord = a->coord;
        p.nearest = a->nearest;
        LAUNCH(pf_cu_launch_resize(&p, x->data, y->data, y->dtype, stream));
        return PF_OK;
    }
    case PF_IR_MAXPOOL: case PF_IR_AVGPOOL:
        return run_pool(g, node, x, y, stream);
    case PF_IR_GLOBAL_AVGPOOL: case PF_IR_GLOBAL_MAXPOOL: {
        /* Channels-last 4D input: a coalesced kernel over (image, 32
         * channels) blocks (the row reduction strides by C through every
         * row: 0.49 ms for DeepLabV3's ASPP pooling at batch 8), the pixels
         * split over more blocks when those are few (gpool_slices); the row
         * kernel otherwise. */
        if (x->ndim == 4 && x->strides[1] == 1 && x->dims[1] > 1 && x->dims[2] * x->dims[3] > 0 &&
            x->strides[2] == x->dims[3] * x->strides[3] && x->dims[0] <= 65535 &&
            x->dtype == y->dtype) {
            const int64_t slices = gpool_slices(x->dims[0], x->dims[1], x->dims[2] * x->dims[3]);
            if (slices == 1) {
                LAUNCH(pf_cu_launch_gpool_cl(x->data, y->data, y->dtype, x->dims[0], x->dims[1],
                                             x->dims[2] * x->dims[3],
                                             n->op == PF_IR_GLOBAL_MAXPOOL, x->strides[0],
                                             x->strides[3], y->strides[0], y->strides[1], stream));
                return PF_OK;
            }
            /* Few channel blocks (SE blocks at batch 1): split the pixels too. */
            const size_t need = gpool_scratch(x->dims[0], x->dims[1], x->dims[2] * x->dims[3]);
            if (scratch && need <= scratch_bytes) {
                LAUNCH(pf_cu_launch_gpool_split(x->data, y->data, scratch, y->dtype, x->dims[0],
                                                x->dims[1], x->dims[2] * x->dims[3], slices,
                                                n->op == PF_IR_GLOBAL_MAXPOOL, x->strides[0],
                                                x->strides[3], y->strides[0], y->strides[1],
                                                stream));
                return PF_OK;
            }
        }
        pf_cu_rows r;
        unsigned mask = 0;
        for (int d = 2; d < x->ndim; d++) mask |= 1u << d;
        rows_of(&r, x, y, mask, true, false);
        LAUNCH(pf_cu_launch_rows(&r, n->op == PF_IR_GLOBAL_AVGPOOL ? PF_IR_REDUCE_MEAN
                                                                  : PF_IR_REDUCE_MAX,
                                 0, x->data, x->dtype, y->data, y->dtype, stream));
        return PF_OK;
    }
    case PF_IR_REDUCE_MEAN: case PF_IR_REDUCE_SUM: case PF_IR_REDUCE_MAX: case PF_IR_REDUCE_MIN:
    case PF_IR_REDUCE_PROD: case PF_IR_REDUCE_L2: case PF_IR_REDUCE_SUM_SQUARE: {
        const pf_ir_reduce_attr *a = &n->attr.reduce;
        unsigned mask = 0;
        if (a->n == 0 && a->noop_with_empty_axes) { /* ONNX: the output is the input */
            space_of(&s, y);
            bcast(&s, 1, x);
            LAUNCH(copy_view(&s, x->data, x->dtype, y->data, y->dtype, stream));
            return PF_OK;
        }
        if (a->n == 0) {
            mask = (1u << x->ndim) - 1;
        } else {
            for (int i = 0; i < a->n; i++) {
                int64_t ax = a->axes[i] < 0 ? a->axes[i] + x->ndim : a->axes[i];
                mask |= 1u << ax;
            }
        }
        pf_cu_rows r;
        rows_of(&r, x, y, mask, a->keepdims || mask == 0, false);
        LAUNCH(pf_cu_launch_rows(&r, n->op, 0, x->data, x->dtype, y->data, y->dtype, stream));
        return PF_OK;
    }
    case PF_IR_ARGMAX: case PF_IR_ARGMIN: {
        const pf_ir_reduce_attr *a = &n->attr.reduce;
        int64_t ax = a->n > 0 ? a->axes[0] : 0;
        if (ax < 0) ax += x->ndim;
        pf_cu_rows r;
        rows_of(&r, x, y, 1u << ax, a->keepdims, false);
        LAUNCH(pf_cu_launch_rows(&r, n->op, a->select_last_index, x->data, x->dtype, y->data,
                                 y->dtype, stream));
        return PF_OK;
    }
    case PF_IR_SOFTMAX: case PF_IR_LOG_SOFTMAX: {
        int64_t ax = n->attr.axis.axis;
        if (ax < 0) ax += x->ndim;
        unsigned mask = 0;
        if (n->attr.axis.legacy) {
            for (int d = (int)ax; d < x->ndim; d++) mask |= 1u << d;
        } else {
            mask = 1u << ax;
        }
        pf_cu_rows r;
        rows_of(&r, x, y, mask, true, true);
        LAUNCH(pf_cu_launch_rows(&r, n->op, 0, x->data, x->dtype, y->data, y->dtype, stream));
        return PF_OK;
    }
    case PF_IR_QUANTIZE_LINEAR: case PF_IR_DEQUANTIZE_LINEAR: {
        /* Per-tensor constants only (kernel_supports checks): read on the host. */
        const pf_ir_value *sv = &g->values[n->in[1]];
        const pf_ir_value *zv = n->n_in > 2 && n->in[2] >= 0 ? &g->values[n->in[2]] : NULL;
        const float scale = ((const float *)sv->data)[0];
        int zp = 0;
        if (zv) zp = zv->dtype == PF_IR_U8 ? ((const uint8_t *)zv->data)[0]
                   : zv->dtype == PF_IR_I8 ? ((const int8_t *)zv->data)[0]
                                           : ((const int32_t *)zv->data)[0];
        space_of(&s, y);
        bcast(&s, 1, x);
        pf_cu_nd_simplify(&s, 2);
        LAUNCH(pf_cu_launch_qdq(&s, n->op == PF_IR_QUANTIZE_LINEAR, x->data, x->dtype, y->data,
                                y->dtype, scale, zp, stream));
        return PF_OK;
    }
    case PF_IR_BATCHNORM: {
        pf_cu_bn p;
        memset(&p, 0, sizeof p);
        p.nd = x->ndim;
        for (int d = 0; d < x->ndim; d++) {
            p.dims[d] = x->dims[d];
            p.in_st[d] = x->strides[d];
            p.out_st[d] = y->strides[d];
        }
        p.scale = in[1].data;
        p.bias = in[2].data;
        p.mean = in[3].data;
        p.var = in[4].data;
        p.dt_p = in[1].dtype;
        p.eps = n->attr.bn.epsilon;
        p.act = n->act;
        p.act_a = n->act_a;
        p.act_b = n->act_b;
        LAUNCH(pf_cu_launch_bn(&p, x->data, y->data, y->dtype, stream));
        return PF_OK;
    }
    default: {
        char why[160];
        pf_nn_cuda_kernel_supports(g, node, why, sizeof why);
        return pf_set_error(PF_ERR_UNSUPPORTED, "node %d '%s': %s", node, n->name, why);
    }
    }
}

bool pf_nn_cuda_kernel_supports(const pf_ir_graph *g, int node, char *why, size_t why_size)
{
    const pf_ir_node *n = &g->nodes[node];
    const char *opn = n->src_op ? n->src_op : "?";
    for (int i = 0; i < n->n_in; i++) {
        if (n->in[i] >= 0 && g->values[n->in[i]].dtype == PF_IR_F64) {
            snprintf(why, why_size, "%s: double-precision tensors are not supported on CUDA", opn);
            return false;
        }
    }
    switch (n->op) {
    case PF_IR_CONV: case PF_IR_CONV_TRANSPOSE: case PF_IR_GEMM: case PF_IR_MATMUL:
        snprintf(why, why_size, "%s runs through cuDNN/cuBLAS, not a pixflow kernel", opn);
        return false;
    case PF_IR_SHAPE: case PF_IR_CONSTANT_OF_SHAPE:
        snprintf(why, why_size, "%s must be constant-folded before a CUDA plan", opn);
        return false;
    case PF_IR_QUANTIZE_LINEAR: case PF_IR_DEQUANTIZE_LINEAR:
        for (int k = 1; k < n->n_in; k++) {
            const pf_ir_value *v = n->in[k] >= 0 ? &g->values[n->in[k]] : NULL;
            if (v && (!v->data || pf_ir_value_numel(v) != 1 ||
                      (k == 1 && v->dtype != PF_IR_F32))) {
                snprintf(why, why_size, "%s: only per-tensor constant scales and zero points on "
                         "CUDA ('%s')", opn, v->name);
                return false;
            }
        }
        return true;
    case PF_IR_QCONV: case PF_IR_QMATMUL:
        snprintf(why, why_size, "%s runs as an int8 step (qconv_exec.c), not a plain kernel", opn);
        return false;
    case PF_IR_QLINEAR_CONV: case PF_IR_QLINEAR_MATMUL: case PF_IR_CONV_INTEGER:
    case PF_IR_MATMUL_INTEGER:
        snprintf(why, why_size, "%s: ONNX's integer ops run on the CPU only (QDQ models run "
                 "on CUDA)", opn);
        return false;
    case PF_IR_TILE:
        if (g->values[n->in[0]].ndim > PF_CU_MAXD / 2) {
            snprintf(why, why_size, "%s: rank %d above %d", opn, g->values[n->in[0]].ndim,
                     PF_CU_MAXD / 2);
            return false;
        }
        return true;
    case PF_IR_CLIP:
        /* Bounds are constant by now (specialize.c) and folded into the
         * float attrs, the only bounds the kernel reads, except an integer
         * bound a float cannot hold (fold.c keeps it an input): refused
         * rather than ignored. */
        for (int k = 1; k <= 2 && k < n->n_in; k++) {
            if (n->in[k] >= 0) {
                snprintf(why, why_size, "%s: its %s '%s' is not exact as a float (the CUDA "
                         "Clip takes float bounds)", opn, k == 1 ? "min" : "max",
                         g->values[n->in[k]].name);
                return false;
            }
        }
        return true;
    case PF_IR_RESIZE:
        if (n->attr.resize.exclude_outside) {
            snprintf(why, why_size, "%s: exclude_outside is not supported", opn);
            return false;
        }
        return true;
    case PF_IR_MAXPOOL: case PF_IR_AVGPOOL:
        if (n->attr.pool.nsp < 1 || n->attr.pool.nsp > 2) {
            snprintf(why, why_size, "%s: %dD pooling is not supported", opn, n->attr.pool.nsp);
            return false;
        }
        return true;
    default:
        if (n->op <= PF_IR_OP_INVALID || n->op >= PF_IR_OP_COUNT) {
            snprintf(why, why_size, "op %d unknown", (int)n->op);
            return false;
        }
        return true;
    }
}

size_t pf_nn_cuda_kernel_scratch(const pf_ir_graph *g, int node)
{
    const pf_ir_node *n = &g->nodes[node];
    if (n->op != PF_IR_GLOBAL_AVGPOOL && n->op != PF_IR_GLOBAL_MAXPOOL) return 0;
    const pf_ir_value *x = &g->values[n->in[0]];
    if (x->ndim != 4 || x->dims[2] * x->dims[3] <= 0) return 0;
    return gpool_scratch(x->dims[0], x->dims[1], x->dims[2] * x->dims[3]);
}
