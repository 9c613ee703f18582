/* The CUDA nn executor (pf_nn_backend_cuda): plans, runs, CUDA graphs.
 *
 * Design
 * - Precision: in FP16 mode every float value lives as F16 on the device
 *   (math in f32 inside kernels; cuDNN/cuBLAS accumulate in f32); FP32 mode
 *   keeps F32 and uses TF32 only when the params allow it. Integer values
 *   keep their IR dtype.
 * - Layout: a 4D float value is stored NHWC (NHWC strides over its logical
 *   NCHW shape) when a convolution produces it, when it follows an
 *   NHWC input through a layout-agnostic op (elementwise, pooling, BN,
 *   resize, pad, concat, slice, depth/space, softmax ...), or when a
 *   convolution consumes it; everything else, and graph outputs no
 *   convolution reads, is row-major. The kernels read
 *   and write any strides, so only Gemm/MatMul (cuBLAS wants row-major)
 *   need a conversion step (pf_nn_cuda_copy into a side buffer).
 * - Memory: one device allocation per plan = the arena of intermediates
 *   from pf_ir_plan_memory (element size 2 for floats in FP16 mode; NHWC
 *   does not change sizes) + a side region (the plan's own copies of the
 *   graph inputs/outputs, layout conversions) + the workspace (cuDNN
 *   workspace and pad/crop temporaries, max over the nodes). Weights are
 *   uploaded once per executor and shared by its plans (same name, same
 *   bytes, same form). Nothing is allocated while running.
 * - I/O: a run copies the caller's inputs into the plan's input buffers
 *   (converting dtype and layout) and the plan's outputs into the caller's
 *   tensors on the caller's stream; the steps in between touch plan-owned
 *   memory only.
 * - CUDA graphs: the first run of a plan is eager (it loads modules and lets
 *   cuDNN/cuBLAS initialise); the next run captures the steps (not the I/O
 *   copies) on the plan's private stream and instantiates the graph once.
 *   Every later run copies the inputs on the caller's stream, launches the
 *   graph on the private stream after an event, and copies the outputs on
 *   the caller's stream after another: one capture per plan whatever
 *   tensors the caller passes (pipelines hand a new buffer every frame).
 *   Capturing on the caller's stream was wrong in pipelines: another thread
 *   recording an event there during the capture (the caching allocator
 *   does) had it swallowed into the graph. A capture that fails marks the
 *   plan eager-only.
 * - Residual fusion: a conv whose only reader is an Add (+ ReLU) of a
 *   same-shape, same-layout value computed before the conv writes the
 *   Add's output itself (cuDNN's fused call with z; residual_add says when
 *   the arena makes that safe); the Add's step then does nothing.
 * - Streams: runs go on the caller's stream (or the ctx's own); cuDNN and
 *   cuBLAS handles are per ctx, so executors on different streams are
 *   independent. One executor runs on one thread at a time (nn.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/error.h"
#include "exec_cuda.h"

#define ALIGN 256
#define CUBLAS_WS ((size_t)32 << 20)

struct pf_cux_weight {
    pf_cux_weight *next;
    char *name;
    int form;
    pf_ir_dtype dt;
    size_t nbytes;
    void *host;                 /* the source bytes, to compare exactly */
    pf_buffer *buf;
};

enum { K_KERNEL = 0, K_CONV, K_GEMM, K_CONVERT, K_ABSORBED /* an Add its conv computed */,
       K_QCONV /* int8 QCONV / QMATMUL */ };

typedef struct step {
    int node;                   /* IR node; for K_CONVERT the consumer's node */
    int kind;
    pf_nn_cu_tensor in[PF_IR_MAX_INPUTS];
    pf_nn_cu_tensor out[PF_IR_MAX_OUTPUTS];
    pf_cux_conv conv;
    pf_cux_gemm gemm;
    pf_cux_qconv qconv;
    int r_out, r_z;             /* K_CONV with a residual: the Add's output and z */
} step;

typedef struct plan {
    const pf_ir_graph *g;
    step *steps;
    int n_steps;
    pf_buffer *mem;
    size_t mem_bytes, arena_bytes, ws_bytes;
    void *ws;
    pf_nn_cu_tensor *vin, *vout; /* internal graph inputs / outputs */
    /* Graph state. */
    cudaGraphExec_t exec;
    bool uncapturable;
    int capture_failures;       /* a failed capture is retried once, then runs stay eager */
    int64_t batch;
    int64_t runs;
    int graphs;
    /* The graph runs on the plan's own stream, joined to the caller's by
     * events (see "CUDA graphs" above). */
    cudaStream_t gstream;
    cudaEvent_t ev_in, ev_done;
    cudaEvent_t ev0, ev1;
    bool timed;
} plan;

/* ---- small helpers ------------------------------------------------------------ */

size_t pf_cux_esz(pf_ir_dtype t)
{
    switch (t) {
    case PF_IR_F32: case PF_IR_I32: return 4;
    case PF_IR_F16: return 2;
    case PF_IR_I64: case PF_IR_F64: return 8;
    default: return 1;
    }
}

const char *pf_cux_desc(const pf_ir_graph *g, int node, char *buf, size_t size)
{
    const pf_ir_node *n = &g->nodes[node];
    snprintf(buf, size, "%s: node %d '%s' (%s)", g->name ? g->name : "model", node,
             n->name ? n->name : "", n->src_op ? n->src_op : "?");
    return buf;
}

pf_ir_dtype pf_cux_dtype(const pf_cux_ctx *c, pf_ir_dtype t)
{
    if (t == PF_IR_F32 || t == PF_IR_F16) return c->fp16 ? PF_IR_F16 : PF_IR_F32;
    return t;
}

static pf_status cu_fail(cudaError_t e, const char *what)
{
    (void)cudaGetLastError();
    return pf_set_error(e == cudaErrorMemoryAllocation ? PF_ERR_NOMEM : PF_ERR_DEVICE,
                        "nn cuda: %s failed: %s (%s)", what, cudaGetErrorString(e),
                        cudaGetErrorName(e));
}

static bool is_float(pf_ir_dtype t) { return t == PF_IR_F32 || t == PF_IR_F16; }

static float src_float(const pf_ir_value *v, size_t i)
{
    switch (v->dtype) {
    case PF_IR_F32: return ((const float *)v->data)[i];
    case PF_IR_F16: return pf_f16_to_f32(((const uint16_t *)v->data)[i]);
    case PF_IR_F64: return (float)((const double *)v->data)[i];
    default: return 0.0f;
    }
}

/* ---- weights ---------------------------------------------------------------------- */

pf_status pf_cux_weight_get(pf_cux_ctx *c, const pf_ir_graph *g, int vid, int form,
                            const void **out)
{
    const pf_ir_value *v = &g->values[vid];
    const pf_ir_dtype dt = pf_cux_dtype(c, v->dtype);
    for (pf_cux_weight *w = c->weights; w; w = w->next) {
        if (w->form == form && w->dt == dt && w->nbytes == v->nbytes &&
            strcmp(w->name, v->name) == 0 && (!v->nbytes || memcmp(w->host, v->data, v->nbytes) == 0)) {
            *out = pf_buffer_data(w->buf);
            return PF_OK;
        }
    }
    if (v->dtype == PF_IR_F64)
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: constant '%s' is double precision",
                            g->name ? g->name : "model", v->name);
    size_t numel = 1;
    for (int d = 0; d < v->ndim; d++) numel *= (size_t)v->dims[d];
    const size_t es = pf_cux_esz(dt);
    const size_t bytes = numel * es;
    pf_cux_weight *w = calloc(1, sizeof *w);
    void *stage = malloc(bytes ? bytes : 1);
    if (!w || !stage) {
        free(w);
        free(stage);
        return pf_set_error(PF_ERR_NOMEM, "nn cuda: out of host memory uploading '%s'", v->name);
    }
    w->name = malloc(strlen(v->name) + 1);
    w->host = malloc(v->nbytes ? v->nbytes : 1);
    if (!w->name || !w->host) {
        free(w->name);
        free(w->host);
        free(w);
        free(stage);
        return pf_set_error(PF_ERR_NOMEM, "nn cuda: out of host memory uploading '%s'", v->name);
    }
    strcpy(w->name, v->name);
    if (v->nbytes) memcpy(w->host, v->data, v->nbytes);
    w->form = form;
    w->dt = dt;
    w->nbytes = v->nbytes;
    if (form == PF_CUX_FILTER_NHWC && is_float(v->dtype) && (v->ndim == 4 || v->ndim == 3)) {
        /* [K, C, (R,) S] -> [K, (R,) S, C] */
        const size_t K = (size_t)v->dims[0], C = (size_t)v->dims[1];
        const size_t R = v->ndim == 4 ? (size_t)v->dims[2] : 1;
        const size_t S = (size_t)v->dims[v->ndim - 1];
        for (size_t k = 0; k < K; k++)
            for (size_t ch = 0; ch < C; ch++)
                for (size_t r = 0; r < R; r++)
                    for (size_t s = 0; s < S; s++) {
                        const size_t src = ((k * C + ch) * R + r) * S + s;
                        const size_t dst = ((k * R + r) * S + s) * C + ch;
                        const float f = src_float(v, src);
                        if (dt == PF_IR_F16) ((uint16_t *)stage)[dst] = pf_f32_to_f16(f);
                        else ((float *)stage)[dst] = f;
                    }
    } else if (form == PF_CUX_FILTER_RSK && is_float(v->dtype) && (v->ndim == 4 || v->ndim == 3) &&
               v->dims[1] == 1) {
        /* [K, 1, (R,) S] -> [(R,) S, K] */
        const size_t K = (size_t)v->dims[0];
        const size_t RS = numel / (K ? K : 1);
        for (size_t k = 0; k < K; k++)
            for (size_t q = 0; q < RS; q++) {
                const float f = src_float(v, k * RS + q);
                if (dt == PF_IR_F16) ((uint16_t *)stage)[q * K + k] = pf_f32_to_f16(f);
                else ((float *)stage)[q * K + k] = f;
            }
    } else if (is_float(v->dtype) && v->dtype != dt) {
        for (size_t i = 0; i < numel; i++) {
            const float f = src_float(v, i);
            if (dt == PF_IR_F16) ((uint16_t *)stage)[i] = pf_f32_to_f16(f);
            else ((float *)stage)[i] = f;
        }
    } else {
        if (v->nbytes != bytes) {
            free(w->name);
            free(w->host);
            free(w);
            free(stage);
            return pf_set_error(PF_ERR_FORMAT, "%s: constant '%s' holds %zu bytes, expected %zu",
                                g->name ? g->name : "model", v->name, v->nbytes, bytes);
        }
        memcpy(stage, v->data, bytes);
    }
    pf_status st = pf_allocator_alloc(c->alloc, bytes ? bytes : 1, NULL, &w->buf);
    if (st == PF_OK && bytes) {
        cudaError_t e = cudaMemcpy(pf_buffer_data(w->buf), stage, bytes, cudaMemcpyHostToDevice);
        if (e != cudaSuccess) st = cu_fail(e, "uploading weights");
    }
    free(stage);
    if (st != PF_OK) {
        pf_buffer_unref(&w->buf);
        free(w->name);
        free(w->host);
        free(w);
        return st;
    }
    c->weight_bytes += bytes;
    w->next = c->weights;
    c->weights = w;
    *out = pf_buffer_data(w->buf);
    return PF_OK;
}

/* ---- ctx ------------------------------------------------------------------------------ */

static void ctx_destroy(void *vc)
{
    pf_cux_ctx *c = vc;
    if (!c) return;
    if (c->own_stream) pf_stream_synchronize(c->own_stream);
    cudaDeviceSynchronize();
    while (c->weights) {
        pf_cux_weight *w = c->weights;
        c->weights = w->next;
        pf_buffer_unref(&w->buf);
        free(w->name);
        free(w->host);
        free(w);
    }
    pf_plan_cache_close(&c->cache);
    pf_buffer_unref(&c->cublas_ws);
    if (c->cublas) cublasDestroy(c->cublas);
    if (c->cudnn) cudnnDestroy(c->cudnn);
    pf_stream_destroy(&c->own_stream);
    pf_allocator_destroy(&c->alloc);
    free(c);
}

/* Opens the plan cache of this model on this device with these libraries
 * (plan_cache.h): the key names everything a tuned choice depends on
 * besides the problem itself, which each entry's key describes. */
static void ctx_bind_model(void *vc, uint64_t model_hash, const char *model_name)
{
    pf_cux_ctx *c = vc;
    const pf_device_props *dp = pf_device_props_get(c->dev);
    int drv = 0, rt = 0, blas = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    cublasGetVersion(c->cublas, &blas);
    const char *base = model_name ? strrchr(model_name, '/') : NULL;
    char key[1024];
    snprintf(key, sizeof key,
             "pixflow %s tuning 1 igemm %d|model %016llx %s|device %s sm_%d%d|driver %d "
             "runtime %d cudnn %zu cublas %d|%s",
             pf_version_string(), PF_CU_IG_CONFIGS, (unsigned long long)model_hash,
             base ? base + 1 : model_name ? model_name : "", dp ? dp->name : "?",
             dp ? dp->cc_major : 0, dp ? dp->cc_minor : 0, drv, rt, cudnnGetVersion(), blas,
             c->fp16 ? "fp16" : c->p.allow_tf32 ? "fp32 tf32" : "fp32");
    (void)cudaGetLastError();
    c->cache = pf_plan_cache_open(key);
}

static pf_status ctx_create(const pf_nn_exec_params *p, void **out)
{
    *out = NULL;
    if (p->precision != PF_NN_FP32 && p->precision != PF_NN_FP16)
        return pf_set_error(PF_ERR_INVALID, "nn cuda: unknown precision %d", (int)p->precision);
    /* cuDNN and cuBLAS are loaded now, not linked (dl_libs.h). */
    int64_t t0 = pf_time_ns();
    pf_status lst = pf_cux_libs_require();
    if (lst != PF_OK) return lst;
    int64_t t1 = pf_time_ns();
    pf_cux_ctx *c = calloc(1, sizeof *c);
    if (!c) return pf_set_error(PF_ERR_NOMEM, "nn cuda: out of host memory");
    c->dev = p->device;
    c->p = *p;
    c->fp16 = p->precision == PF_NN_FP16;
    cudaError_t e = cudaSetDevice(pf_device_props_get(c->dev)->index);
    if (e != cudaSuccess) {
        ctx_destroy(c);
        return cu_fail(e, "cudaSetDevice");
    }
    pf_allocator_params ap = pf_allocator_params_default();
    ap.device = c->dev;
    ap.domain = PF_MEM_DEVICE;
    ap.cap_bytes = p->memory_cap;
    ap.name = "nn-cuda";
    pf_status st = pf_allocator_create(&ap, &c->alloc);
    if (st == PF_OK) {
        pf_stream_params sp = pf_stream_params_default();
        sp.device = c->dev;
        st = pf_stream_create(&sp, &c->own_stream);
    }
    int64_t t2 = pf_time_ns(), t3 = t2;
    if (st == PF_OK) {
        cudnnStatus_t ds = cudnnCreate(&c->cudnn);
        t3 = pf_time_ns();
        if (ds != CUDNN_STATUS_SUCCESS)
            st = pf_set_error(PF_ERR_DEVICE, "nn cuda: cudnnCreate failed: %s",
                              cudnnGetErrorString(ds));
    }
    if (st == PF_OK) {
        cublasStatus_t bs = cublasCreate(&c->cublas);
        if (bs != CUBLAS_STATUS_SUCCESS)
            st = pf_set_error(PF_ERR_DEVICE, "nn cuda: cublasCreate failed: %s",
                              cublasGetStatusString(bs));
    }
    if (st == PF_OK) {
        c->cublas_ws_bytes = CUBLAS_WS;
        st = pf_allocator_alloc(c->alloc, CUBLAS_WS, NULL, &c->cublas_ws);
    }
    if (st != PF_OK) {
        ctx_destroy(c);
        return st;
    }
    PF_LOGD("nn cuda: libraries loaded in %.1f ms, allocator+stream %.1f ms, cudnnCreate %.1f ms, "
            "cublasCreate+workspace %.1f ms", (double)(t1 - t0) / 1e6, (double)(t2 - t1) / 1e6,
            (double)(t3 - t2) / 1e6, (double)(pf_time_ns() - t3) / 1e6);
    *out = c;
    return PF_OK;
}

/* Points the libraries at the run's stream (cublasSetStream drops the user
 * workspace, so it is set again: graph capture needs it). */
static pf_status bind_stream(pf_cux_ctx *c, cudaStream_t s)
{
    cudnnStatus_t ds = cudnnSetStream(c->cudnn, s);
    if (ds != CUDNN_STATUS_SUCCESS)
        return pf_set_error(PF_ERR_DEVICE, "nn cuda: cudnnSetStream: %s", cudnnGetErrorString(ds));
    cublasStatus_t bs = cublasSetStream(c->cublas, s);
    if (bs == CUBLAS_STATUS_SUCCESS)
        bs = cublasSetWorkspace(c->cublas, pf_buffer_data(c->cublas_ws), c->cublas_ws_bytes);
    if (bs == CUBLAS_STATUS_SUCCESS)
        bs = cublasSetMathMode(c->cublas, (!c->fp16 && c->p.allow_tf32)
                                              ? CUBLAS_TF32_TENSOR_OP_MATH
                                              : CUBLAS_DEFAULT_MATH);
    if (bs != CUBLAS_STATUS_SUCCESS)
        return pf_set_error(PF_ERR_DEVICE, "nn cuda: cuBLAS stream setup: %s",
                            cublasGetStatusString(bs));
    return PF_OK;
}

/* ---- plans ------------------------------------------------------------------------------ */

static bool is_conv_op(pf_ir_op op) { return op == PF_IR_CONV || op == PF_IR_CONV_TRANSPOSE; }

/* Ops whose output can take the layout of their input at no cost. */
static bool follows_layout(pf_ir_op op)
{
    if (op >= PF_IR_RELU && op <= PF_IR_CAST) return true;
    if (op >= PF_IR_ADD && op <= PF_IR_MEAN_N) return true;
    switch (op) {
    case PF_IR_BATCHNORM: case PF_IR_CONCAT: case PF_IR_SLICE: case PF_IR_PAD:
    case PF_IR_SPLIT: case PF_IR_DEPTH_TO_SPACE: case PF_IR_SPACE_TO_DEPTH: case PF_IR_RESIZE:
    case PF_IR_MAXPOOL: case PF_IR_AVGPOOL: case PF_IR_GLOBAL_AVGPOOL: case PF_IR_GLOBAL_MAXPOOL:
    case PF_IR_SOFTMAX: case PF_IR_LOG_SOFTMAX:
    case PF_IR_QUANTIZE_LINEAR: case PF_IR_DEQUANTIZE_LINEAR:
        return true;
    default:
        return false;
    }
}

/* 4D activations that may be stored channels-last (int8 ones feed QCONV). */
static bool float4d(const pf_ir_value *v)
{
    return !v->data && v->ndim == 4 &&
           (is_float(v->dtype) || v->dtype == PF_IR_I8 || v->dtype == PF_IR_U8);
}

static void set_strides(pf_nn_cu_tensor *t, bool nhwc)
{
    if (nhwc && t->ndim == 4) {
        const int64_t C = t->dims[1], H = t->dims[2], W = t->dims[3];
        t->strides[1] = 1;
        t->strides[3] = C;
        t->strides[2] = C * W;
        t->strides[0] = C * W * H;
        return;
    }
    int64_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        t->strides[d] = s;
        s *= t->dims[d];
    }
}

static size_t tensor_bytes(const pf_nn_cu_tensor *t)
{
    size_t n = pf_cux_esz(t->dtype);
    for (int d = 0; d < t->ndim; d++) n *= (size_t)t->dims[d];
    return n;
}

static size_t align_up(size_t v) { return (v + ALIGN - 1) & ~(size_t)(ALIGN - 1); }

static bool same_view(const pf_nn_cu_tensor *a, const pf_nn_cu_tensor *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->dims[d] != b->dims[d] || a->strides[d] != b->strides[d]) return false;
    return true;
}

/* The Add that conv node ci may absorb as a residual (returns its node, z
 * = the Add's other operand), or -1. The conv then writes the Add's output
 * while it runs, earlier than the arena plan expects: that is safe only if
 * no value whose bytes overlap that output is live from the conv to the
 * Add, which is checked here on the actual offsets (early[v] >= 0: v is
 * the output of an Add absorbed earlier, written from that node on). Also
 * required: the
 * conv's output is read by that Add only, z exists before the conv runs,
 * and z, the conv's output and the Add's output have one shape, dtype and
 * layout (no broadcasting). */
/* Steps during which value v holds its memory (an absorbed Add's sum from
 * its conv on: early[]). */
static void live_range(const pf_ir_graph *g, int v, const int *early, int *first, int *last)
{
    const pf_ir_value *val = &g->values[v];
    int f = (val->is_input || val->producer < 0) ? -1 : val->producer;
    if (early[v] >= 0 && early[v] < f) f = early[v];
    int l = val->is_output ? g->n_nodes : f;
    for (int i = 0; i < g->n_nodes; i++) {
        const pf_ir_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (int j = 0; j < n->n_in; j++)
            if (n->in[j] == v && i > l) l = i;
    }
    *first = f, *last = l;
}

/* A value other than skip[0..2] that overlaps bytes [o0, o1) of the arena
 * while steps lo..hi run, or -1. */
static int slot_conflict(const pf_ir_graph *g, const pf_nn_cu_tensor *vt, const int64_t *off,
                         const int *early, int64_t o0, int64_t o1, int lo, int hi,
                         const int skip[3])
{
    for (int v = 0; v < g->n_values; v++) {
        if (v == skip[0] || v == skip[1] || v == skip[2] || off[v] < 0 || g->values[v].data)
            continue;
        const int64_t b0 = off[v], b1 = b0 + (int64_t)tensor_bytes(&vt[v]);
        if (b1 <= o0 || o1 <= b0) continue;
        int first, last;
        live_range(g, v, early, &first, &last);
        if (first <= hi && last >= lo) return v;
    }
    return -1;
}

/* The Add that conv ci could absorb by shape alone (its output's only
 * reader, z produced before the conv, one view for all three), or -1. */
static int residual_shape(const pf_ir_graph *g, int ci, const pf_nn_cu_tensor *vt, int *zv_out,
                          const char **why)
{
    *why = NULL; /* set once an Add is found: the reason it cannot be absorbed */
    const pf_ir_node *cn = &g->nodes[ci];
    if (cn->op != PF_IR_CONV || cn->n_out != 1 || cn->act != PF_IR_ACT_NONE) return -1;
    const int cv = cn->out[0];
    if (cv < 0 || g->values[cv].is_output) return -1;
    int add = -1, uses = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const pf_ir_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (int j = 0; j < n->n_in; j++)
            if (n->in[j] == cv) uses++, add = i;
    }
    if (uses != 1 || add <= ci) return -1;
    const pf_ir_node *an = &g->nodes[add];
    if (an->op != PF_IR_ADD || an->n_in != 2 || an->n_out != 1 || an->out[0] < 0) return -1;
    const int zv = an->in[0] == cv ? an->in[1] : an->in[0];
    const int ov = an->out[0];
    *why = "z, conv output and sum differ in view";
    if (zv < 0 || zv == cv || ov == cv || g->values[zv].data) return -1;
    if (!is_float(vt[cv].dtype) || !same_view(&vt[zv], &vt[cv]) || !same_view(&vt[ov], &vt[cv]))
        return -1;
    *why = "z is produced after the conv";
    const int zp = g->values[zv].producer;
    if (!g->values[zv].is_input && (zp < 0 || zp >= ci)) return -1;
    *zv_out = zv;
    return add;
}

/* The Add that conv ci may absorb (residual_shape), or -1: the conv then
 * writes the sum at step ci, so the sum's memory must be free from ci to
 * the Add. The planner was told so (born[] in plan_create), so this holds
 * unless an earlier decision changed the picture; it is checked anyway. */
static int residual_add(const pf_ir_graph *g, int ci, const pf_nn_cu_tensor *vt,
                        const int64_t *off, const int *early, int *zv_out)
{
    const pf_ir_node *cn = &g->nodes[ci];
    const char *lg = getenv("PIXFLOW_NN_CONV_LOG");
    const bool log = lg && *lg == '1';
#define REJECT(...) \
    do { \
        if (log) { \
            fprintf(stderr, "residual: node %d '%s' keeps its Add: ", ci, \
                    cn->name ? cn->name : ""); \
            fprintf(stderr, __VA_ARGS__); \
            fputc('\n', stderr); \
        } \
        return -1; \
    } while (0)
    const char *why = NULL;
    int zv = -1;
    const int add = residual_shape(g, ci, vt, &zv, &why);
    if (add < 0) {
        if (why) REJECT("%s", why);
        return -1;
    }
    const int cv = cn->out[0], ov = g->nodes[add].out[0];
    if (off[cv] < 0 || off[zv] < 0 || off[ov] < 0) REJECT("z or the sum is not an arena value");
    const int skip[3] = {ov, cv, -1};
    const int bad = slot_conflict(g, vt, off, early, off[ov],
                                  off[ov] + (int64_t)tensor_bytes(&vt[ov]), ci, add, skip);
    if (bad >= 0)
        REJECT("the sum's memory holds value %d '%s' meanwhile", bad,
               g->values[bad].name ? g->values[bad].name : "");
    *zv_out = zv;
    return add;
#undef REJECT
}

static void plan_destroy(void *vc, void *vp)
{
    (void)vc;
    plan *p = vp;
    if (!p) return;
    cudaDeviceSynchronize();
    for (int i = 0; i < p->n_steps; i++) {
        if (p->steps[i].kind == K_CONV) pf_cux_conv_release(&p->steps[i].conv);
        if (p->steps[i].kind == K_QCONV) pf_cux_qconv_release(&p->steps[i].qconv);
    }
    if (p->exec) cudaGraphExecDestroy(p->exec);
    if (p->ev0) cudaEventDestroy(p->ev0);
    if (p->ev1) cudaEventDestroy(p->ev1);
    if (p->ev_in) cudaEventDestroy(p->ev_in);
    if (p->ev_done) cudaEventDestroy(p->ev_done);
    if (p->gstream) cudaStreamDestroy(p->gstream);
    pf_buffer_unref(&p->mem);
    free(p->steps);
    free(p->vin);
    free(p->vout);
    free(p);
}

static pf_status plan_create(void *vc, const pf_ir_graph *g, int64_t batch, void **out)
{
    pf_cux_ctx *c = vc;
    *out = NULL;
    char desc[200];
    cudaError_t ce = cudaSetDevice(pf_device_props_get(c->dev)->index);
    if (ce != cudaSuccess) return cu_fail(ce, "cudaSetDevice");
    /* Every node must be runnable before anything is allocated. */
    for (int i = 0; i < g->n_nodes; i++) {
        const pf_ir_node *n = &g->nodes[i];
        if (n->dead) continue;
        if (n->op == PF_IR_CONV || n->op == PF_IR_CONV_TRANSPOSE || n->op == PF_IR_GEMM ||
            n->op == PF_IR_MATMUL || n->op == PF_IR_QCONV || n->op == PF_IR_QMATMUL)
            continue;
        char why[160];
        if (!pf_nn_cuda_kernel_supports(g, i, why, sizeof why))
            return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not supported on CUDA: %s",
                                pf_cux_desc(g, i, desc, sizeof desc), why);
    }
    for (int v = 0; v < g->n_values; v++) {
        if (g->values[v].ndim < 0)
            return pf_set_error(PF_ERR_INVALID, "%s: value '%s' has no inferred shape",
                                g->name ? g->name : "model", g->values[v].name);
        if (g->values[v].dtype == PF_IR_F64 && (g->values[v].n_uses > 0 || g->values[v].is_output))
            return pf_set_error(PF_ERR_UNSUPPORTED, "%s: value '%s' is double precision",
                                g->name ? g->name : "model", g->values[v].name);
    }

    plan *p = calloc(1, sizeof *p);
    const int nv = g->n_values;
    pf_nn_cu_tensor *vt = calloc((size_t)nv + 1, sizeof *vt);
    bool *nhwc = calloc((size_t)nv + 1, sizeof *nhwc);
    bool *conv_in = calloc((size_t)nv + 1, sizeof *conv_in);
    int64_t *off = calloc((size_t)nv + 1, sizeof *off);
    /* Row-major copies of NHWC values that Gemm/MatMul read. */
    pf_nn_cu_tensor *rm = calloc((size_t)nv + 1, sizeof *rm);
    int64_t *rm_off = calloc((size_t)nv + 1, sizeof *rm_off);
    bool *absorbed = calloc((size_t)g->n_nodes + 1, sizeof *absorbed);
    int *early = malloc(((size_t)nv + 1) * sizeof *early);
    pf_ir_mem_plan mp;
    memset(&mp, 0, sizeof mp);
    pf_status st = PF_OK;
    if (!p || !vt || !nhwc || !conv_in || !off || !rm || !rm_off || !absorbed || !early) {
        st = pf_set_error(PF_ERR_NOMEM, "nn cuda: out of host memory planning");
        goto done;
    }
    p->g = g;
    p->batch = batch;
    for (int v = 0; v <= nv; v++) early[v] = -1;

    /* Layouts. */
    for (int i = 0; i < g->n_nodes; i++) {
        const pf_ir_node *n = &g->nodes[i];
        if (!n->dead && (is_conv_op(n->op) || n->op == PF_IR_QCONV) && n->in[0] >= 0)
            conv_in[n->in[0]] = true;
    }
    for (int k = 0; k < g->n_inputs; k++) {
        const int v = g->inputs[k];
        nhwc[v] = float4d(&g->values[v]) && conv_in[v];
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const pf_ir_node *n = &g->nodes[i];
        if (n->dead) continue;
        bool any_in = false;
        for (int j = 0; j < n->n_in; j++)
            if (n->in[j] >= 0 && nhwc[n->in[j]]) any_in = true;
        for (int j = 0; j < n->n_out; j++) {
            const int v = n->out[j];
            if (v < 0) continue;
            if (!float4d(&g->values[v])) continue;
            if (is_conv_op(n->op) || n->op == PF_IR_QCONV) nhwc[v] = true;
            else if (n->op == PF_IR_GEMM || n->op == PF_IR_MATMUL || n->op == PF_IR_QMATMUL)
                nhwc[v] = false;
            /* A graph output no conv reads stays row-major: the caller
             * wants NCHW, and the producer writing it directly is cheaper
             * than an NHWC value plus a transposing output copy (the final
             * 512x512 upsample of a segmentation model). */
            else if (g->values[v].is_output && !conv_in[v]) nhwc[v] = false;
            else nhwc[v] = (follows_layout(n->op) && any_in) || conv_in[v];
        }
    }
    for (int v = 0; v < nv; v++) {
        const pf_ir_value *val = &g->values[v];
        pf_nn_cu_tensor *t = &vt[v];
        t->dtype = pf_cux_dtype(c, val->dtype);
        t->ndim = val->ndim;
        for (int d = 0; d < val->ndim; d++) t->dims[d] = val->dims[d];
        set_strides(t, nhwc[v]);
        off[v] = -1;
    }

    /* Memory: the arena, then the side region, then the workspace. */
    size_t elem[PF_IR_DTYPE_COUNT];
    for (int t = 0; t < PF_IR_DTYPE_COUNT; t++) elem[t] = pf_cux_esz((pf_ir_dtype)t);
    if (c->fp16) elem[PF_IR_F32] = 2;
    /* A conv that may absorb its residual Add writes the sum at its own
     * step: the planner keeps the sum's memory free from the conv on. */
    int *born = malloc(sizeof(int) * (size_t)(nv ? nv : 1));
    if (!born) {
        st = pf_set_error(PF_ERR_NOMEM, "nn cuda: out of host memory planning");
        goto done;
    }
    for (int v = 0; v < nv; v++) born[v] = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        int zv = -1;
        const char *why = NULL;
        const int add = g->nodes[i].dead ? -1 : residual_shape(g, i, vt, &zv, &why);
        if (add >= 0) born[g->nodes[add].out[0]] = i;
    }
    st = pf_ir_plan_memory_born(g, ALIGN, elem, born, &mp);
    free(born);
    if (st != PF_OK) goto done;
    p->arena_bytes = align_up(mp.arena_bytes);
    size_t side = p->arena_bytes;
    for (int v = 0; v < nv; v++) {
        const pf_ir_value *val = &g->values[v];
        if (val->data) continue;
        if (!val->is_input && !val->is_output && v < mp.n_values && mp.offsets[v] >= 0) {
            off[v] = mp.offsets[v];
        } else if (val->producer >= 0 || val->is_input || val->is_output) {
            off[v] = (int64_t)side;
            side += align_up(tensor_bytes(&vt[v]));
        }
    }
    /* Steps: conversions before Gemm/MatMul, one step per live node. */
    int cap = 0;
    for (int i = 0; i < g->n_nodes; i++) cap += g->nodes[i].dead ? 0 : 1 + g->nodes[i].n_in;
    p->steps = calloc((size_t)cap + 1, sizeof *p->steps);
    if (!p->steps) {
        st = pf_set_error(PF_ERR_NOMEM, "nn cuda: out of host memory planning");
        goto done;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const pf_ir_node *n = &g->nodes[i];
        if (n->dead || (n->op != PF_IR_GEMM && n->op != PF_IR_MATMUL)) continue;
        for (int j = 0; j < n->n_in; j++) {
            const int v = n->in[j];
            if (v < 0 || !nhwc[v] || rm_off[v]) continue;
            rm[v] = vt[v];
            set_strides(&rm[v], false);
            rm_off[v] = (int64_t)side;
            side += align_up(tensor_bytes(&rm[v]));
        }
    }
    /* Weights and per-node preparation (descriptors need only shapes). */
    for (int v = 0; v < nv; v++) {
        const pf_ir_value *val = &g->values[v];
        if (!val->data) continue;
        bool rowmajor = val->is_output;
        for (int i = 0; i < g->n_nodes && !rowmajor; i++) {
            const pf_ir_node *n = &g->nodes[i];
            if (n->dead) continue;
            for (int j = 0; j < n->n_in; j++)
                if (n->in[j] == v && !(is_conv_op(n->op) && j == 1)) rowmajor = true;
        }
        if (!rowmajor) continue;
        const void *d = NULL;
        st = pf_cux_weight_get(c, g, v, PF_CUX_ROWMAJOR, &d);
        if (st != PF_OK) goto done;
        vt[v].data = (void *)d;
        set_strides(&vt[v], false);
    }
    size_t ws = 0;
    int64_t t_steps = pf_time_ns(), t_conv = 0;
    int n_conv = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const pf_ir_node *n = &g->nodes[i];
        if (n->dead) continue;
        step *s = &p->steps[p->n_steps];
        s->r_out = s->r_z = -1;
        if (absorbed[i]) {
            s->node = i;
            s->kind = K_ABSORBED;
            p->n_steps++;
            continue;
        }
        if (n->op == PF_IR_GEMM || n->op == PF_IR_MATMUL) {
            for (int j = 0; j < n->n_in; j++) {
                const int v = n->in[j];
                if (v < 0 || !rm_off[v]) continue;
                /* Converted once, right before its first Gemm/MatMul reader:
                 * later readers are later steps, the side copy stays valid. */
                bool done_before = false;
                for (int q = 0; q < p->n_steps; q++)
                    if (p->steps[q].kind == K_CONVERT && p->steps[q].node == -1 - v)
                        done_before = true;
                if (done_before) continue;
                s->node = -1 - v;
                s->kind = K_CONVERT;
                p->n_steps++;
                s = &p->steps[p->n_steps];
            }
        }
        s->node = i;
        s->kind = is_conv_op(n->op) ? K_CONV : (n->op == PF_IR_GEMM || n->op == PF_IR_MATMUL)
                                                   ? K_GEMM : K_KERNEL;
        if (n->op == PF_IR_QCONV || n->op == PF_IR_QMATMUL) s->kind = K_QCONV;
        for (int j = 0; j < n->n_in; j++) {
            const int v = n->in[j];
            if (v < 0) continue;
            s->in[j] = (s->kind == K_GEMM && rm_off[v]) ? rm[v] : vt[v];
        }
        for (int j = 0; j < n->n_out; j++)
            if (n->out[j] >= 0) s->out[j] = vt[n->out[j]];
        if (s->kind == K_CONV) {
            int64_t tc = pf_time_ns();
            st = pf_cux_conv_prepare(c, g, i, &s->in[0], &s->out[0], &s->conv);
            t_conv += pf_time_ns() - tc;
            n_conv++;
            if (st != PF_OK) {
                pf_cux_conv_release(&s->conv);
                goto done;
            }
            int zv = -1;
            const int add = residual_add(g, i, vt, off, early, &zv);
            if (add >= 0 && pf_cux_conv_can_residual(&s->conv, g, i, g->nodes[add].act)) {
                const pf_ir_node *an = &g->nodes[add];
                st = pf_cux_conv_set_residual(c, g, i, &s->conv, &vt[zv], an->act, an->act_a,
                                              an->act_b);
                if (st != PF_OK) {
                    pf_cux_conv_release(&s->conv);
                    goto done;
                }
                absorbed[add] = true;
                early[an->out[0]] = i;
                s->r_out = an->out[0];
                s->r_z = zv;
                s->out[0] = vt[s->r_out];
            }
            const size_t need = s->conv.tmp_bytes + s->conv.ws_bytes;
            if (need > ws) ws = need;
        } else if (s->kind == K_GEMM) {
            st = pf_cux_gemm_prepare(c, g, i, s->in, &s->out[0], &s->gemm);
            if (st != PF_OK) goto done;
        } else if (s->kind == K_QCONV) {
            st = pf_cux_qconv_prepare(c, g, i, s->in, &s->out[0], &s->qconv);
            if (st != PF_OK) {
                pf_cux_qconv_release(&s->qconv);
                goto done;
            }
        } else {
            const size_t need = pf_nn_cuda_kernel_scratch(g, i);
            if (need > ws) ws = need;
        }
        p->n_steps++;
    }
    p->ws_bytes = align_up(ws);
    p->mem_bytes = side + p->ws_bytes;
    int64_t t_alloc = pf_time_ns(), t_alloc0 = t_alloc;
    st = pf_allocator_alloc(c->alloc, p->mem_bytes ? p->mem_bytes : ALIGN, NULL, &p->mem);
    if (st != PF_OK) goto done;
    t_alloc = pf_time_ns() - t_alloc;
    char *base = pf_buffer_data(p->mem);
    p->ws = base + side;
    for (int v = 0; v < nv; v++) {
        if (off[v] >= 0) vt[v].data = base + off[v];
        if (rm_off[v]) rm[v].data = base + rm_off[v];
    }
    /* Resolve the steps' tensors now that the memory exists. */
    for (int q = 0; q < p->n_steps; q++) {
        step *s = &p->steps[q];
        if (s->kind == K_CONVERT) {
            const int v = -1 - s->node;
            s->in[0] = vt[v];
            s->out[0] = rm[v];
            continue;
        }
        const pf_ir_node *n = &g->nodes[s->node];
        for (int j = 0; j < n->n_in; j++) {
            const int v = n->in[j];
            if (v < 0) continue;
            s->in[j].data = (s->kind == K_GEMM && rm_off[v]) ? rm[v].data : vt[v].data;
        }
        for (int j = 0; j < n->n_out; j++)
            if (n->out[j] >= 0) s->out[j].data = vt[n->out[j]].data;
        if (s->kind == K_CONV && s->r_out >= 0) {
            s->out[0].data = vt[s->r_out].data;
            s->conv.z.data = vt[s->r_z].data;
        }
    }
    p->vin = calloc((size_t)g->n_inputs + 1, sizeof *p->vin);
    p->vout = calloc((size_t)g->n_outputs + 1, sizeof *p->vout);
    if (!p->vin || !p->vout) {
        st = pf_set_error(PF_ERR_NOMEM, "nn cuda: out of host memory planning");
        goto done;
    }
    for (int k = 0; k < g->n_inputs; k++) p->vin[k] = vt[g->inputs[k]];
    for (int k = 0; k < g->n_outputs; k++) p->vout[k] = vt[g->outputs[k]];
    ce = cudaEventCreate(&p->ev0);
    if (ce == cudaSuccess) ce = cudaEventCreate(&p->ev1);
    if (ce == cudaSuccess) ce = cudaEventCreateWithFlags(&p->ev_in, cudaEventDisableTiming);
    if (ce == cudaSuccess) ce = cudaEventCreateWithFlags(&p->ev_done, cudaEventDisableTiming);
    if (ce == cudaSuccess) ce = cudaStreamCreateWithFlags(&p->gstream, cudaStreamNonBlocking);
    if (ce != cudaSuccess) st = cu_fail(ce, "cudaEventCreate/cudaStreamCreate");
    /* Runs smaller than the plan's batch leave the last input rows as they
     * are (batch_view): zero them once so they are finite from the start.
     * Finished before the plan is returned: a plain cudaMemset is ordered
     * on the legacy stream only, which the caller's non-blocking stream
     * does not wait for, so under load it could land after the first run
     * had copied its input in and zero it (an all-zero first result). */
    for (int k = 0; st == PF_OK && k < g->n_inputs; k++) {
        if (!p->vin[k].data) continue;
        ce = cudaMemsetAsync(p->vin[k].data, 0, tensor_bytes(&p->vin[k]), p->gstream);
        if (ce != cudaSuccess) st = cu_fail(ce, "cudaMemsetAsync (plan inputs)");
    }
    if (st == PF_OK && p->gstream) {
        ce = cudaStreamSynchronize(p->gstream);
        if (ce != cudaSuccess) st = cu_fail(ce, "cudaStreamSynchronize (plan inputs)");
    }
    /* Weight uploads are cudaMemcpy from pageable memory, whose DMA may
     * still run on the legacy stream when the call returns; runs go on
     * non-blocking streams, which do not wait for it. */
    if (st == PF_OK) {
        ce = cudaStreamSynchronize(cudaStreamLegacy);
        if (ce != cudaSuccess) st = cu_fail(ce, "cudaStreamSynchronize (weights)");
    }
    if (st == PF_OK)
        PF_LOGD("nn cuda: plan for batch %lld: %d convs prepared in %.1f ms, other steps %.1f ms, "
                "%.1f MB allocated in %.1f ms, the rest %.1f ms", (long long)batch, n_conv,
                (double)t_conv / 1e6, (double)(t_alloc0 - t_steps - t_conv) / 1e6,
                (double)p->mem_bytes / 1e6, (double)t_alloc / 1e6,
                (double)(pf_time_ns() - t_alloc0 - t_alloc) / 1e6);

done:
    pf_ir_mem_plan_free(&mp);
    free(vt);
    free(nhwc);
    free(conv_in);
    free(off);
    free(rm);
    free(rm_off);
    free(absorbed);
    free(early);
    if (st != PF_OK) {
        plan_destroy(c, p);
        return st;
    }
    (void)pf_plan_cache_flush(c->cache); /* this plan's new choices, for the next process */
    *out = p;
    return PF_OK;
}

/* ---- runs ------------------------------------------------------------------------------- */

static pf_ir_dtype ir_of(pf_dtype t)
{
    switch (t) {
    case PF_DTYPE_F32: return PF_IR_F32;
    case PF_DTYPE_F16: return PF_IR_F16;
    case PF_DTYPE_I32: return PF_IR_I32;
    default: return PF_IR_U8;
    }
}

static pf_nn_cu_tensor user_tensor(const pf_tensor *t)
{
    pf_nn_cu_tensor u;
    memset(&u, 0, sizeof u);
    u.data = t->data;
    u.dtype = ir_of(t->dtype);
    u.ndim = t->ndim;
    for (int d = 0; d < t->ndim; d++) {
        u.dims[d] = t->shape[d];
        u.strides[d] = t->strides[d];
    }
    return u;
}

static pf_status run_step(pf_cux_ctx *c, plan *p, step *s, cudaStream_t cs)
{
    switch (s->kind) {
    case K_CONVERT: return pf_nn_cuda_copy(&s->in[0], &s->out[0], cs);
    case K_CONV: return pf_cux_conv_run(c, p->g, s->node, &s->conv, &s->in[0], &s->out[0], p->ws, cs);
    case K_GEMM: return pf_cux_gemm_run(c, p->g, s->node, &s->gemm, s->in, &s->out[0], cs);
    case K_ABSORBED: return PF_OK;
    case K_QCONV: return pf_cux_qconv_run(p->g, s->node, &s->qconv, s->in, &s->out[0], cs);
    default: return pf_nn_cuda_run_node(p->g, s->node, s->in, s->out, cs, p->ws, p->ws_bytes);
    }
}

/* A run may carry fewer rows than the plan's batch (exec.c rounds the batch
 * up to a planned size): the plan tensor is then viewed at the caller's
 * size in every dim where that is smaller (the batch dim, wherever a
 * Transpose put it: exec.c gives the run's batch to each dim equal to the
 * plan's). The copies take strides, so the view is the sub-box of the
 * first rows; the rows past it hold stale data that no row of the caller
 * reads (ops do not mix samples across the batch). */
static void batch_view(pf_nn_cu_tensor *plan_t, const pf_nn_cu_tensor *user)
{
    if (plan_t->ndim != user->ndim) return;
    for (int d = 0; d < plan_t->ndim; d++)
        if (user->dims[d] < plan_t->dims[d]) plan_t->dims[d] = user->dims[d];
}

/* The caller's inputs into the plan's input buffers (dtype and layout
 * conversion), on the caller's stream. */
static pf_status copy_inputs(plan *p, cudaStream_t cs, const pf_tensor *in)
{
    for (int k = 0; k < p->g->n_inputs; k++) {
        pf_nn_cu_tensor u = user_tensor(&in[k]);
        if (u.ndim != p->vin[k].ndim) {
            /* A rank mismatch exec.c let through (a scalar as [1]): view the
             * caller's data with the plan's shape, contiguous. */
            u.ndim = p->vin[k].ndim;
            memcpy(u.dims, p->vin[k].dims, sizeof u.dims);
            set_strides(&u, false);
        }
        pf_nn_cu_tensor v = p->vin[k];
        batch_view(&v, &u);
        pf_status st = pf_nn_cuda_copy(&u, &v, cs);
        if (st != PF_OK) return st;
    }
    return PF_OK;
}

/* The plan's outputs into the caller's tensors, on the caller's stream. */
static pf_status copy_outputs(plan *p, cudaStream_t cs, pf_tensor *out)
{
    for (int k = 0; k < p->g->n_outputs; k++) {
        pf_nn_cu_tensor u = user_tensor(&out[k]);
        if (u.ndim != p->vout[k].ndim) {
            u.ndim = p->vout[k].ndim;
            memcpy(u.dims, p->vout[k].dims, sizeof u.dims);
            set_strides(&u, false);
        }
        pf_nn_cu_tensor v = p->vout[k];
        batch_view(&v, &u);
        pf_status st = pf_nn_cuda_copy(&v, &u, cs);
        if (st != PF_OK) return st;
    }
    return PF_OK;
}

/* Every step, in stream order, on plan-owned memory only. With `evs`,
 * events around each step. */
static pf_status run_steps(pf_cux_ctx *c, plan *p, cudaStream_t cs, cudaEvent_t *evs)
{
    for (int q = 0; q < p->n_steps; q++) {
        /* Profiling: a wait long enough for the host to queue the step
         * (cuDNN's host side takes tens of us), so the events time the
         * GPU work only, as a graph replay sees it. */
        if (evs) {
            (void)pf_cu_launch_spin(300, cs); /* without it the times only include host work */
            cudaEventRecord(evs[2 * q], cs);
        }
        pf_status st = run_step(c, p, &p->steps[q], cs);
        if (st != PF_OK) return st;
        if (evs) cudaEventRecord(evs[2 * q + 1], cs);
    }
    return PF_OK;
}

/* The whole run in stream order. With `evs`, events around each step. */
static pf_status run_eager(pf_cux_ctx *c, plan *p, cudaStream_t cs, const pf_tensor *in,
                           pf_tensor *out, cudaEvent_t *evs)
{
    pf_status st = copy_inputs(p, cs, in);
    if (st == PF_OK) st = run_steps(c, p, cs, evs);
    if (st == PF_OK) st = copy_outputs(p, cs, out);
    return st;
}

/* Captures the steps on the plan's private stream. Private because the
 * caller's stream is shared: in a pipeline another thread may record an
 * event on it at any time (the caching allocator does, when a buffer is
 * freed), and during a capture that record would become a graph node
 * instead of happening, so the event would never complete. The cuDNN and
 * cuBLAS handles follow the capture stream and are bound back after. */
static pf_status capture(pf_cux_ctx *c, plan *p, cudaStream_t cs)
{
    pf_status st = bind_stream(c, p->gstream);
    if (st != PF_OK) return st;
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamBeginCapture(p->gstream, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
        bind_stream(c, cs);
        return cu_fail(e, "cudaStreamBeginCapture");
    }
    st = run_steps(c, p, p->gstream, NULL);
    e = cudaStreamEndCapture(p->gstream, &graph);
    pf_status bs = bind_stream(c, cs);
    if (bs != PF_OK) {
        if (graph) cudaGraphDestroy(graph);
        return bs;
    }
    if (st != PF_OK || e != cudaSuccess || !graph) {
        /* A step that failed inside the capture (a library call that cannot
         * be captured, or a capture invalidated under it: seen once on an
         * H200 right after a cold plan's tuning, "operation failed due to a
         * previous error during capture") fails the graph, not the run: the
         * run goes eager, which reports a real error if there is one. One
         * more capture is tried on the next run; a second failure keeps the
         * plan eager. */
        (void)cudaGetLastError();
        if (graph) cudaGraphDestroy(graph);
        if (++p->capture_failures >= 2) p->uncapturable = true;
        PF_LOGI("nn cuda: the batch-%lld plan could not be captured as a CUDA graph (%s); %s",
                (long long)p->batch,
                st != PF_OK ? pf_last_error() : cudaGetErrorString(e),
                p->uncapturable ? "it runs without one" : "this run goes without, the next tries again");
        return PF_AGAIN;
    }
    e = cudaGraphInstantiate(&p->exec, graph, 0);
    cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
        p->exec = NULL;
        (void)cudaGetLastError();
        p->uncapturable = true;
        return PF_AGAIN;
    }
    p->graphs++;
    return PF_OK;
}

/* One replay: inputs copied on the caller's stream, the graph on the plan's
 * stream after them, outputs copied on the caller's stream after the graph.
 * The graph touches plan-owned memory only, so it is captured once per plan
 * whatever tensors the caller passes. */
static pf_status replay(plan *p, cudaStream_t cs, const pf_tensor *in, pf_tensor *out)
{
    pf_status st = copy_inputs(p, cs, in);
    if (st != PF_OK) return st;
    cudaError_t e = cudaEventRecord(p->ev_in, cs);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(p->gstream, p->ev_in, 0);
    if (e == cudaSuccess) e = cudaGraphLaunch(p->exec, p->gstream);
    if (e == cudaSuccess) e = cudaEventRecord(p->ev_done, p->gstream);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(cs, p->ev_done, 0);
    if (e != cudaSuccess) return cu_fail(e, "cudaGraphLaunch (with its stream joins)");
    return copy_outputs(p, cs, out);
}

static cudaStream_t stream_of(pf_cux_ctx *c, pf_stream *s)
{
    return (cudaStream_t)pf_stream_native(s ? s : c->own_stream);
}

static pf_status plan_run(void *vc, void *vp, pf_stream *stream, const pf_tensor *in, int n_in,
                          pf_tensor *out, int n_out)
{
    pf_cux_ctx *c = vc;
    plan *p = vp;
    cudaStream_t cs = stream_of(c, stream);
    pf_status st = bind_stream(c, cs);
    if (st != PF_OK) return st;
    cudaEventRecord(p->ev0, cs);
    bool launched = false;
    if (c->p.cuda_graphs && !p->uncapturable && p->runs > 0) {
        if (!p->exec) {
            st = capture(c, p, cs);
            if (st != PF_OK && st != PF_AGAIN) return st;
        }
        if (p->exec && !p->uncapturable) {
            st = replay(p, cs, in, out);
            if (st != PF_OK) return st;
            launched = true;
        }
    }
    if (!launched) {
        st = run_eager(c, p, cs, in, out, NULL);
        if (st != PF_OK) return st;
    }
    cudaError_t e = cudaEventRecord(p->ev1, cs);
    if (e != cudaSuccess) return cu_fail(e, "cudaEventRecord");
    p->timed = true;
    p->runs++;
    c->last_plan = p;
    return PF_OK;
}

static pf_status plan_profile(void *vc, void *vp, pf_stream *stream, const pf_tensor *in,
                              int n_in, pf_tensor *out, int n_out, pf_nn_node_time *times,
                              int cap, int *n)
{
    (void)n_in;
    (void)n_out;
    pf_cux_ctx *c = vc;
    plan *p = vp;
    cudaStream_t cs = stream_of(c, stream);
    pf_status st = bind_stream(c, cs);
    if (st != PF_OK) return st;
    cudaEvent_t *evs = calloc((size_t)p->n_steps * 2 + 1, sizeof *evs);
    if (!evs) return pf_set_error(PF_ERR_NOMEM, "nn cuda: out of host memory profiling");
    int made = 0;
    cudaError_t e = cudaSuccess;
    for (; made < 2 * p->n_steps && e == cudaSuccess; made++) e = cudaEventCreate(&evs[made]);
    if (e != cudaSuccess) st = cu_fail(e, "cudaEventCreate");
    if (st == PF_OK) st = run_eager(c, p, cs, in, out, evs);
    if (st == PF_OK) {
        e = cudaStreamSynchronize(cs);
        if (e != cudaSuccess) st = cu_fail(e, "cudaStreamSynchronize");
    }
    /* One entry per IR node: a conversion step counts towards its reader. */
    int k = 0;
    float pending = 0.0f;
    for (int q = 0; st == PF_OK && q < p->n_steps; q++) {
        float ms = 0.0f;
        cudaEventElapsedTime(&ms, evs[2 * q], evs[2 * q + 1]);
        const step *s = &p->steps[q];
        if (s->kind == K_CONVERT) {
            pending += ms;
            continue;
        }
        if (k < cap) {
            const pf_ir_node *nd = &p->g->nodes[s->node];
            times[k].name = nd->name;
            times[k].op = s->kind == K_CONV    ? pf_cux_conv_path(&s->conv)
                          : s->kind == K_QCONV ? pf_cux_qconv_path(&s->qconv)
                                               : pf_ir_op_name(nd->op);
            if (!times[k].op) times[k].op = nd->src_op;
            times[k].ms = (double)(ms + pending);
        }
        pending = 0.0f;
        k++;
    }
    if (n) *n = k;
    for (int i = 0; i < made; i++)
        if (evs[i]) cudaEventDestroy(evs[i]);
    free(evs);
    return st;
}

static void plan_stats(void *vc, void *vp, pf_nn_exec_stats *acc)
{
    pf_cux_ctx *c = vc;
    plan *p = vp;
    acc->weight_bytes = c->weight_bytes;
    acc->convs_tuned = c->convs_tuned;
    acc->convs_cached = c->convs_cached;
    if (p) {
        acc->graphs += p->graphs;
        if (p->mem_bytes > acc->arena_bytes) acc->arena_bytes = p->mem_bytes;
        float ms = 0.0f;
        if (p->timed && c->last_plan == p && cudaEventQuery(p->ev1) == cudaSuccess &&
            cudaEventElapsedTime(&ms, p->ev0, p->ev1) == cudaSuccess)
            acc->last_run_ms = ms;
        (void)cudaGetLastError();
    }
}

static const pf_nn_backend cuda_backend = {
    .name = "cuda",
    .ctx_create = ctx_create,
    .ctx_destroy = ctx_destroy,
    .ctx_bind_model = ctx_bind_model,
    .plan_create = plan_create,
    .plan_destroy = plan_destroy,
    .plan_run = plan_run,
    .plan_profile = plan_profile,
    .plan_stats = plan_stats,
};

const pf_nn_backend *pf_nn_backend_cuda(void) { return &cuda_backend; }
