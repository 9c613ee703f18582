/* The CUDA executor's INT8 steps: QCONV and QMATMUL nodes (the fused QDQ
 * convs and matmuls of passes_quant.c).
 *
 * Prepare (plan time): reads the node's constants on the host (per-tensor
 * scales and zero points; per-channel weight scales folded with x_scale
 * into one float per output channel; the float bias), packs the int8
 * weights (KRSC for the tensor-core path, as stored for the direct one),
 * uploads them into one device buffer the step owns, and picks the path:
 * the implicit GEMM when qconv.h's requirements hold, its tile config timed
 * on scratch buffers (or read from the plan cache, keyed by the conv's
 * geometry), else the direct kernel (depthwise and grouped convs, uint8 or
 * zero-point inputs, channel counts not a multiple of 16).
 *
 * cuDNN: its int8 convolutions (legacy CUDNN_DATA_INT8x4/x32 and the graph
 * API's int8 operation graphs) were not tried in this version: the
 * requantizing epilogue (per-channel float scale, residual, act, round and
 * saturate) would need a fused graph per conv, and the in-house kernel was
 * the first step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/error.h"
#include "exec_cuda.h"

static float host_f(const pf_ir_graph *g, const pf_ir_node *n, int i, int64_t k, float dflt)
{
    if (i >= n->n_in || n->in[i] < 0) return dflt;
    const pf_ir_value *v = &g->values[n->in[i]];
    if (!v->data) return dflt;
    int64_t cnt = pf_ir_value_numel(v);
    int64_t j = cnt == 1 ? 0 : k;
    switch (v->dtype) {
    case PF_IR_F32: return ((const float *)v->data)[j];
    case PF_IR_U8: return ((const uint8_t *)v->data)[j];
    case PF_IR_I8: return ((const int8_t *)v->data)[j];
    case PF_IR_I32: return (float)((const int32_t *)v->data)[j];
    default: return dflt;
    }
}

static bool is_const_in(const pf_ir_graph *g, const pf_ir_node *n, int i)
{
    return i < n->n_in && n->in[i] >= 0 && g->values[n->in[i]].data;
}

/* NCHW-order strides of a 3D/4D tensor (1D: H stride 0). */
static void st4(const pf_nn_cu_tensor *t, int64_t out[4])
{
    if (t->ndim == 4) {
        for (int d = 0; d < 4; d++) out[d] = t->strides[d];
    } else {
        out[0] = t->strides[0];
        out[1] = t->strides[1];
        out[2] = 0;
        out[3] = t->strides[2];
    }
}

static pf_status upload(pf_cux_ctx *c, pf_cux_qconv *q, const void *host, size_t bytes)
{
    pf_status st = pf_allocator_alloc(c->alloc, bytes ? bytes : 256, NULL, &q->mem);
    if (st != PF_OK) return st;
    cudaError_t e = cudaMemcpy(pf_buffer_data(q->mem), host, bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess)
        return pf_set_error(PF_ERR_DEVICE, "nn cuda: uploading int8 weights: %s",
                            cudaGetErrorString(e));
    return PF_OK;
}

typedef struct tune_arg {
    const pf_cu_qconv *p;
    const void *x;
    void *y;
    cudaStream_t s;
} tune_arg;

static int launch_tuned(void *a)
{
    const tune_arg *t = a;
    return pf_cu_launch_qconv_ig(t->p, t->x, NULL, t->y, t->s);
}

/* Times the igemm configs on scratch tensors; keeps the fastest. */
static pf_status tune_ig(pf_cux_ctx *c, const pf_nn_cu_tensor *x, const pf_nn_cu_tensor *y,
                         pf_cu_qconv *p, const char *desc)
{
    size_t xb = 1, yb = 1;
    for (int d = 0; d < x->ndim; d++) xb += (size_t)(x->dims[d] - 1) * (size_t)x->strides[d];
    for (int d = 0; d < y->ndim; d++) yb += (size_t)(y->dims[d] - 1) * (size_t)y->strides[d];
    yb *= pf_cux_esz(y->dtype);
    void *dx = NULL, *dy = NULL;
    if (cudaMalloc(&dx, xb + 16) != cudaSuccess || cudaMalloc(&dy, yb + 16) != cudaSuccess) {
        cudaFree(dx);
        (void)cudaGetLastError();
        p->cfg = 0;
        return PF_OK;
    }
    cudaMemset(dx, 0, xb);
    cudaStream_t s = NULL;
    float best = -1.0f;
    int best_cfg = 0;
    for (int i = 0; i < pf_cu_qconv_ig_configs(); i++) {
        pf_cu_qconv t = *p;
        t.cfg = i;
        tune_arg a = {&t, dx, dy, s};
        float ms = -1.0f;
        if (pf_cu_time_ms(launch_tuned, &a, s, &ms) != 0) {
            (void)cudaGetLastError();
            continue;
        }
        if (best < 0 || ms < best) best = ms, best_cfg = i;
    }
    cudaStreamSynchronize(s);
    cudaFree(dx);
    cudaFree(dy);
    const char *lg = getenv("PIXFLOW_NN_CONV_LOG");
    if (lg && *lg == '1') fprintf(stderr, "qconv: %s: igemm config %d %.4f ms\n", desc, best_cfg, best);
    (void)c;
    p->cfg = best_cfg;
    return PF_OK;
}

static pf_status prepare_conv(pf_cux_ctx *c, const pf_ir_graph *g, int node,
                              const pf_nn_cu_tensor *in, const pf_nn_cu_tensor *out,
                              pf_cux_qconv *q)
{
    const pf_ir_node *n = &g->nodes[node];
    const pf_ir_conv_attr *a = &n->attr.conv;
    char desc[200];
    pf_cux_desc(g, node, desc, sizeof desc);
    const pf_ir_value *wv = &g->values[n->in[3]];
    const pf_nn_cu_tensor *x = &in[0], *y = out;
    if ((x->ndim != 4 && x->ndim != 3) || !wv->data || wv->dtype != PF_IR_I8)
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: int8 conv needs 1D/2D data and int8 "
                            "constant weights", desc);
    for (int i = 1; i <= 13; i++)
        if (i != 3 && i != 9 && i < n->n_in && n->in[i] >= 0 && !is_const_in(g, n, i))
            return pf_set_error(PF_ERR_UNSUPPORTED, "%s: quantization parameter %d is not a "
                                "constant", desc, i);
    pf_cu_qconv *p = &q->p;
    memset(p, 0, sizeof *p);
    const bool d1 = x->ndim == 3;
    p->n = x->dims[0];
    p->c = x->dims[1];
    p->h = d1 ? 1 : x->dims[2];
    p->w = x->dims[x->ndim - 1];
    p->m = wv->dims[0];
    p->oh = d1 ? 1 : y->dims[2];
    p->ow = y->dims[y->ndim - 1];
    const int s = d1 ? 0 : 1;
    p->kh = d1 ? 1 : (int)a->kernel[0];
    p->kw = (int)a->kernel[s];
    p->sh = d1 ? 1 : (int)a->stride[0];
    p->sw = (int)a->stride[s];
    p->dh = d1 ? 1 : (int)a->dilation[0];
    p->dw = (int)a->dilation[s];
    p->ph = d1 ? 0 : (int)a->pad_begin[0];
    p->pw = (int)a->pad_begin[s];
    p->group = (int)a->group;
    p->cg = (int)(p->c / p->group);
    p->mg = (int)(p->m / p->group);
    st4(x, p->x_st);
    st4(y, p->y_st);
    p->x_dt = x->dtype;
    p->y_dt = y->dtype;
    p->x_zp = (int)host_f(g, n, 2, 0, 0.0f);
    p->y_scale = host_f(g, n, 7, 0, 0.0f);
    p->y_zp = (int)host_f(g, n, 8, 0, 0.0f);
    p->z_dt = -1;
    if (n->n_in > 9 && n->in[9] >= 0) {
        st4(&in[9], p->z_st);
        p->z_dt = in[9].dtype;
        p->z_scale = host_f(g, n, 10, 0, 1.0f);
        p->z_zp = (int)host_f(g, n, 11, 0, 0.0f);
    }
    if (n->n_in > 12 && n->in[12] >= 0) {
        p->m_scale = host_f(g, n, 12, 0, 0.0f);
        p->m_zp = (int)host_f(g, n, 13, 0, 0.0f);
        p->m_dt = n->n_in > 13 && n->in[13] >= 0 ? (int)g->values[n->in[13]].dtype : PF_IR_U8;
    }
    p->act = n->act;
    p->act_a = n->act_a;
    p->act_b = n->act_b;
    bool wzp_zero = true;
    for (int64_t m = 0; m < p->m; m++)
        if (host_f(g, n, 5, m, 0.0f) != 0.0f) wzp_zero = false;
    /* Host image of the device buffer: weights (256-aligned), scale, bias, w_zp. */
    const int64_t taps = (int64_t)p->cg * p->kh * p->kw;
    const size_t wbytes = ((size_t)(p->m * taps) + 255) & ~(size_t)255;
    const size_t off_s = wbytes, off_b = off_s + (size_t)p->m * 4, off_z = off_b + (size_t)p->m * 4;
    const size_t total = off_z + (size_t)p->m * 4;
    unsigned char *h = calloc(1, total);
    if (!h) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", desc);
    float xs = host_f(g, n, 1, 0, 1.0f);
    const bool has_bias = n->n_in > 6 && n->in[6] >= 0;
    for (int64_t m = 0; m < p->m; m++) {
        ((float *)(h + off_s))[m] = xs * host_f(g, n, 4, m, 1.0f);
        ((float *)(h + off_b))[m] = host_f(g, n, 6, m, 0.0f);
        ((int32_t *)(h + off_z))[m] = (int32_t)host_f(g, n, 5, m, 0.0f);
    }
    /* Try the tensor-core layout first; fall back to the stored one. */
    p->w_zp = wzp_zero ? NULL : (const int32_t *)(uintptr_t)1; /* ig_ok reads only NULL-ness */
    q->ig = pf_cu_qconv_ig_ok(p) != 0;
    const int8_t *src = wv->data;
    if (q->ig) {
        const int64_t C = p->c;
        for (int64_t m = 0; m < p->m; m++)
            for (int64_t ch = 0; ch < C; ch++)
                for (int ky = 0; ky < p->kh; ky++)
                    for (int kx = 0; kx < p->kw; kx++)
                        h[((m * p->kh + ky) * p->kw + kx) * C + ch] =
                            (unsigned char)src[((m * C + ch) * p->kh + ky) * p->kw + kx];
    } else {
        memcpy(h, src, (size_t)(p->m * taps));
    }
    pf_status st = upload(c, q, h, total);
    free(h);
    if (st != PF_OK) return st;
    unsigned char *d = pf_buffer_data(q->mem);
    p->wt = (const int8_t *)d;
    p->scale = (const float *)(d + off_s);
    p->bias = has_bias ? (const float *)(d + off_b) : NULL;
    p->w_zp = wzp_zero ? NULL : (const int32_t *)(d + off_z);
    if (q->ig) {
        char ekey[512];
        snprintf(ekey, sizeof ekey,
                 "qconv ig v1 n%lld c%lld h%lld w%lld m%lld oh%lld ow%lld k%dx%d s%dx%d d%dx%d "
                 "p%dx%d xst%lld,%lld,%lld,%lld ydt%d", (long long)p->n, (long long)p->c,
                 (long long)p->h, (long long)p->w, (long long)p->m, (long long)p->oh,
                 (long long)p->ow, p->kh, p->kw, p->sh, p->sw, p->dh, p->dw, p->ph, p->pw,
                 (long long)p->x_st[0], (long long)p->x_st[1], (long long)p->x_st[2],
                 (long long)p->x_st[3], p->y_dt);
        int32_t cfg = -1;
        if (c->cache && pf_plan_cache_get(c->cache, ekey, &cfg, sizeof cfg) && cfg >= 0 &&
            cfg < pf_cu_qconv_ig_configs()) {
            p->cfg = cfg;
            c->convs_cached++;
        } else {
            st = tune_ig(c, x, y, p, desc);
            if (st != PF_OK) return st;
            cfg = p->cfg;
            pf_plan_cache_put(c->cache, ekey, &cfg, sizeof cfg);
            c->convs_tuned++;
        }
    }
    return PF_OK;
}

static pf_status prepare_mm(pf_cux_ctx *c, const pf_ir_graph *g, int node,
                            const pf_nn_cu_tensor *in, const pf_nn_cu_tensor *out,
                            pf_cux_qconv *q)
{
    const pf_ir_node *n = &g->nodes[node];
    char desc[200];
    pf_cux_desc(g, node, desc, sizeof desc);
    const pf_ir_value *bv = &g->values[n->in[3]];
    const pf_nn_cu_tensor *a = &in[0], *y = out;
    if (!bv->data || bv->dtype != PF_IR_I8 || bv->ndim != 2)
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: int8 matmul needs a constant 2-D int8 B", desc);
    int64_t s = 1;
    for (int d = a->ndim - 1; d >= 0; d--) {
        if (a->dims[d] > 1 && a->strides[d] != s)
            return pf_set_error(PF_ERR_UNSUPPORTED, "%s: int8 matmul needs a row-major A", desc);
        s *= a->dims[d];
    }
    s = 1;
    for (int d = y->ndim - 1; d >= 0; d--) {
        if (y->dims[d] > 1 && y->strides[d] != s)
            return pf_set_error(PF_ERR_UNSUPPORTED, "%s: int8 matmul needs a row-major output", desc);
        s *= y->dims[d];
    }
    pf_cu_qmm *p = &q->mm;
    memset(p, 0, sizeof *p);
    p->k = bv->dims[0];
    p->n = bv->dims[1];
    p->rows = pf_ir_value_numel(&g->values[n->in[0]]) / p->k;
    p->a_rs = p->k;
    p->y_rs = p->n;
    p->a_dt = a->dtype;
    p->y_dt = y->dtype;
    p->a_zp = (int)host_f(g, n, 2, 0, 0.0f);
    p->y_scale = host_f(g, n, 7, 0, 0.0f);
    p->y_zp = (int)host_f(g, n, 8, 0, 0.0f);
    p->act = n->act;
    p->act_a = n->act_a;
    p->act_b = n->act_b;
    const size_t wbytes = ((size_t)(p->k * p->n) + 255) & ~(size_t)255;
    const size_t off_s = wbytes, off_b = off_s + (size_t)p->n * 4, off_z = off_b + (size_t)p->n * 4;
    const size_t total = off_z + (size_t)p->n * 4;
    unsigned char *h = calloc(1, total);
    if (!h) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", desc);
    memcpy(h, bv->data, (size_t)(p->k * p->n));
    float xs = host_f(g, n, 1, 0, 1.0f);
    bool zero = true;
    for (int64_t j = 0; j < p->n; j++) {
        ((float *)(h + off_s))[j] = xs * host_f(g, n, 4, j, 1.0f);
        ((float *)(h + off_b))[j] = host_f(g, n, 6, j, 0.0f);
        ((int32_t *)(h + off_z))[j] = (int32_t)host_f(g, n, 5, j, 0.0f);
        if (host_f(g, n, 5, j, 0.0f) != 0.0f) zero = false;
    }
    pf_status st = upload(c, q, h, total);
    free(h);
    if (st != PF_OK) return st;
    unsigned char *d = pf_buffer_data(q->mem);
    p->b = (const int8_t *)d;
    p->scale = (const float *)(d + off_s);
    p->bias = n->n_in > 6 && n->in[6] >= 0 ? (const float *)(d + off_b) : NULL;
    p->b_zp = zero ? NULL : (const int32_t *)(d + off_z);
    return PF_OK;
}

pf_status pf_cux_qconv_prepare(pf_cux_ctx *c, const pf_ir_graph *g, int node,
                               const pf_nn_cu_tensor *in, const pf_nn_cu_tensor *out,
                               pf_cux_qconv *q)
{
    memset(q, 0, sizeof *q);
    q->matmul = g->nodes[node].op == PF_IR_QMATMUL;
    return q->matmul ? prepare_mm(c, g, node, in, out, q) : prepare_conv(c, g, node, in, out, q);
}

pf_status pf_cux_qconv_run(const pf_ir_graph *g, int node, pf_cux_qconv *q,
                           const pf_nn_cu_tensor *in, const pf_nn_cu_tensor *out, cudaStream_t s)
{
    int e;
    if (q->matmul) {
        e = pf_cu_launch_qmm(&q->mm, in[0].data, out->data, s);
    } else {
        const pf_ir_node *n = &g->nodes[node];
        const void *z = n->n_in > 9 && n->in[9] >= 0 ? in[9].data : NULL;
        e = q->ig ? pf_cu_launch_qconv_ig(&q->p, in[0].data, z, out->data, s)
                  : pf_cu_launch_qconv_direct(&q->p, in[0].data, z, out->data, s);
    }
    if (e) {
        char desc[200];
        return pf_set_error(PF_ERR_DEVICE, "%s: int8 kernel launch failed: %s",
                            pf_cux_desc(g, node, desc, sizeof desc),
                            cudaGetErrorString((cudaError_t)e));
    }
    return PF_OK;
}

const char *pf_cux_qconv_path(const pf_cux_qconv *q)
{
    return q->matmul ? "QMatMul(direct)" : q->ig ? "QConv(int8 igemm)" : "QConv(int8 direct)";
}

void pf_cux_qconv_release(pf_cux_qconv *q)
{
    pf_buffer_unref(&q->mem);
}
