/* Conv and ConvTranspose through cuDNN's legacy API.
 *
 * Activations are NHWC (strides) with an NHWC (KRSC) filter so FP16 runs on
 * tensor cores; 1D convs are 2D ones with H = 1. Descriptors take explicit
 * strides, so the layout is whatever the executor chose for the value.
 * Forward algorithms are timed at plan time (cudnnFindConvolutionForward-
 * Algorithm, per plan, so per batch size; the fastest within the workspace
 * limit), ConvTranspose takes cudnnGetConvolutionBackwardDataAlgorithm_v7's
 * heuristics; the workspace is part of the plan's one device allocation.
 * Depthwise convs on channels-last values run pixflow's own kernel
 * (dwconv.cu), convs on 1x1 spatial maps another (fc1x1.cu). A conv whose
 * only reader is a residual Add may absorb it (z input of the fused call;
 * exec_cuda.c decides when that is safe). Bias + ReLU fuse into
 * cudnnConvolutionBiasActivationForward; when cuDNN refuses that call for a
 * shape (checked on the first, eager run) or for other activations, the
 * conv is followed by pf_nn_cuda_bias_act. cuDNN pads symmetrically only:
 * asymmetric pads (TFLite SAME with stride 2) go through an explicit pad
 * into the workspace for Conv, and a larger output cropped by the bias
 * kernel for ConvTranspose. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/error.h"
#include "../plan_cache.h"
#include "exec_cuda.h"

#define WS_LIMIT ((size_t)256 << 20)

static pf_status dnn_fail(const pf_ir_graph *g, int node, const char *call, cudnnStatus_t st)
{
    char d[160];
    return pf_set_error(st == CUDNN_STATUS_NOT_SUPPORTED ? PF_ERR_UNSUPPORTED : PF_ERR_DEVICE,
                        "%s: %s failed: %s", pf_cux_desc(g, node, d, sizeof d), call,
                        cudnnGetErrorString(st));
}

#define DNN(call) \
    do { \
        cudnnStatus_t s_ = (call); \
        if (s_ != CUDNN_STATUS_SUCCESS) return dnn_fail(g, node, #call, s_); \
    } while (0)

/* The tensor as [N, C, H, W] (H = 1 for 3D values). */
static void as4d(const pf_nn_cu_tensor *t, int64_t d[4], int64_t s[4])
{
    if (t->ndim == 4) {
        for (int i = 0; i < 4; i++) {
            d[i] = t->dims[i];
            s[i] = t->strides[i];
        }
    } else {
        d[0] = t->dims[0], d[1] = t->dims[1], d[2] = 1, d[3] = t->dims[2];
        s[0] = t->strides[0], s[1] = t->strides[1], s[3] = t->strides[2];
        s[2] = t->strides[2] * t->dims[2];
    }
}

static cudnnStatus_t set_tensor(cudnnTensorDescriptor_t td, cudnnDataType_t dt,
                                const int64_t d[4], const int64_t s[4])
{
    return cudnnSetTensor4dDescriptorEx(td, dt, (int)d[0], (int)d[1], (int)d[2], (int)d[3],
                                        (int)s[0], (int)s[1], (int)s[2], (int)s[3]);
}

/* Contiguous strides for [N, C, H, W] in NHWC or NCHW order. */
static void packed(const int64_t d[4], bool nhwc, int64_t s[4])
{
    if (nhwc) {
        s[1] = 1, s[3] = d[1], s[2] = d[1] * d[3], s[0] = d[1] * d[2] * d[3];
    } else {
        s[3] = 1, s[2] = d[3], s[1] = d[2] * d[3], s[0] = d[1] * d[2] * d[3];
    }
}

static bool is_nhwc(const int64_t s[4], const int64_t d[4])
{
    return d[1] == 1 || (s[1] == 1 && s[3] >= d[1]);
}

/* Elements a strided [N, C, H, W] view spans. */
static int64_t span4(const int64_t d[4], const int64_t s[4])
{
    int64_t e = 1;
    for (int i = 0; i < 4; i++) e += s[i] * (d[i] - 1);
    return e;
}

/* PIXFLOW_NN_CONV forces the FP16 conv path for convs more than one can
 * run: "cudnn" (legacy API), "pixflow" (implicit GEMM), "cudnn-graph"
 * (graph API + pixflow's epilogue); tests use it to cover each. Anything
 * else, or unset, takes the fastest at plan time. */
enum { PATH_AUTO = 0, PATH_LEGACY = 1, PATH_IGEMM = 2, PATH_GRAPH = 3 };

static int conv_choice(void)
{
    const char *e = getenv("PIXFLOW_NN_CONV");
    if (e && !strcmp(e, "cudnn")) return PATH_LEGACY;
    if (e && !strcmp(e, "pixflow")) return PATH_IGEMM;
    if (e && !strcmp(e, "cudnn-graph")) return PATH_GRAPH;
    return PATH_AUTO;
}

/* pixflow's epilogue alone on y, bias + act (what the graph path adds). */
typedef struct epi_arg {
    const pf_cu_ig *q;
    const void *b;
    void *y;
    cudaStream_t s;
} epi_arg;

static int launch_epi(void *p)
{
    const epi_arg *a = p;
    return pf_cu_launch_ig_epi(a->q, a->b, NULL, a->y, a->s);
}

/* cuDNN's legacy pick (cv->algo) on the given buffers. Timed here because
 * cudnnFind's own figures run 2-4x above what the algorithm takes in a
 * graph, so they cannot be compared with the other paths' times. */
typedef struct legacy_arg {
    pf_cux_ctx *c;
    pf_cux_conv *cv;
    const void *x;
    void *y, *ws;
} legacy_arg;

static int launch_legacy(void *p)
{
    const legacy_arg *a = p;
    const float one = 1.0f, zero = 0.0f;
    return (int)cudnnConvolutionForward(a->c->cudnn, &one, a->cv->xd, a->x, a->cv->wd, a->cv->w,
                                        a->cv->cd, (cudnnConvolutionFwdAlgo_t)a->cv->algo, a->ws,
                                        a->cv->ws_bytes, &zero, a->cv->yd, a->y);
}

static float time_legacy(pf_cux_ctx *c, pf_cux_conv *cv, const void *x, void *y, void *ws,
                         cudaStream_t s)
{
    cudaStream_t old = NULL;
    cudnnGetStream(c->cudnn, &old);
    if (cudnnSetStream(c->cudnn, s) != CUDNN_STATUS_SUCCESS) return -1.0f;
    legacy_arg a = {c, cv, x, y, ws};
    float ms = -1.0f;
    (void)pf_cu_time_ms(launch_legacy, &a, s, &ms);
    cudnnSetStream(c->cudnn, old);
    return ms;
}

/* Whether the FP16 paths (implicit GEMM, graph API) may run this conv;
 * fills cv->igp's geometry (the epilogue's too) and *ig_ok (the implicit
 * GEMM itself can run it). */
static bool fp16_paths_apply(const pf_cux_ctx *c, const pf_ir_node *n, pf_cux_conv *cv,
                             int choice, const int64_t xd[4], const int64_t xs[4],
                             const int64_t yd[4], const int64_t ys[4], const int64_t k[2],
                             const int64_t st[2], const int64_t dil[2], const int64_t pb[2],
                             bool *ig_ok)
{
    const int64_t group = n->attr.conv.group ? n->attr.conv.group : 1;
    *ig_ok = false;
    if (!c->fp16 || cv->transpose || !cv->nhwc || group != 1 || choice == PATH_LEGACY)
        return false;
    pf_cu_ig *q = &cv->igp;
    memset(q, 0, sizeof *q);
    q->n = (int)xd[0], q->c = (int)xd[1], q->h = (int)xd[2], q->w = (int)xd[3];
    q->k = (int)yd[1], q->oh = (int)yd[2], q->ow = (int)yd[3];
    q->kh = (int)k[0], q->kw = (int)k[1], q->sh = (int)st[0], q->sw = (int)st[1];
    q->dh = (int)dil[0], q->dw = (int)dil[1], q->ph = (int)pb[0], q->pw = (int)pb[1];
    for (int i = 0; i < 4; i++) q->in_st[i] = xs[i], q->out_st[i] = q->z_st[i] = ys[i];
    q->act = n->act, q->act_a = n->act_a, q->act_b = n->act_b;
    if (xd[1] > INT32_MAX || yd[1] > INT32_MAX) return false;
    /* The implicit GEMM needs C % 8 == 0 (16-byte loads); the graph path
     * only an output its epilogue kernel can address (e.g. a first conv
     * on 3 channels). */
    *ig_ok = pf_cu_ig_ok(q) != 0;
    if (!*ig_ok && (choice == PATH_IGEMM || !pf_cu_ig_epi_ok(q))) return false;
    pf_cu_ig_set(q, 0, 1);
    return true;
}

/* The conv in cuDNN graph-API terms ([N, C, H, W] with strides; KRSC filter). */
static void gshape_of(pf_cux_gshape *sh, const int64_t xd[4], const int64_t xs[4],
                      const int64_t yd[4], const int64_t ys[4], const int64_t k[2],
                      const int64_t st[2], const int64_t dil[2], const int64_t pb[2],
                      const int64_t pe[2])
{
    memset(sh, 0, sizeof *sh);
    for (int i = 0; i < 4; i++) {
        sh->xd[i] = xd[i], sh->xs[i] = xs[i], sh->yd[i] = yd[i], sh->ys[i] = ys[i];
    }
    sh->wd[0] = yd[1], sh->wd[1] = xd[1], sh->wd[2] = k[0], sh->wd[3] = k[1];
    sh->ws[0] = xd[1] * k[0] * k[1], sh->ws[1] = 1, sh->ws[2] = k[1] * xd[1], sh->ws[3] = xd[1];
    for (int i = 0; i < 2; i++) {
        sh->pre[i] = pb[i], sh->post[i] = pe[i], sh->stride[i] = st[i], sh->dil[i] = dil[i];
    }
}

/* The scratch workspace the FP16 paths are timed (and so chosen) with. */
static size_t fp16_ws_cap(const pf_cux_conv *cv)
{
    size_t ws_cap = (size_t)64 << 20;
    if (cv->algo >= 0 && cv->ws_bytes > ws_cap) ws_cap = cv->ws_bytes;
    return ws_cap;
}

/* FP16 group-1 convs on channels-last views: times
 * pixflow's implicit GEMM (igemm.cu), cuDNN's graph-API engines (plus
 * pixflow's epilogue pass they need) and cuDNN's legacy pick (cv->algo, -1
 * for none) on the same scratch buffers, and sets *path to the fastest
 * (PATH_LEGACY when that is the legacy one or nothing else runs). cv->igp
 * then holds the geometry (and the tuned launch for PATH_IGEMM), cv->grp
 * the plan for PATH_GRAPH. */
static pf_status tune_fp16(pf_cux_ctx *c, const pf_ir_graph *g, int node, pf_cux_conv *cv,
                           const int64_t xd[4], const int64_t xs[4], const int64_t yd[4],
                           const int64_t ys[4], const int64_t k[2], const int64_t st[2],
                           const int64_t dil[2], const int64_t pb[2], const int64_t pe[2],
                           int *path)
{
    const pf_ir_node *n = &g->nodes[node];
    *path = PATH_LEGACY;
    const int choice = conv_choice();
    bool ig_ok = false;
    if (!fp16_paths_apply(c, n, cv, choice, xd, xs, yd, ys, k, st, dil, pb, &ig_ok)) return PF_OK;
    pf_cu_ig *q = &cv->igp;
    size_t ws_cap = fp16_ws_cap(cv);
    int64_t xe = span4(xd, xs), ye = span4(yd, ys);
    if (cv->use_tmp && (int64_t)(cv->tmp_bytes / 2) > xe) xe = (int64_t)(cv->tmp_bytes / 2);
    void *bx = NULL, *by = NULL, *bws = NULL;
    cudaStream_t s = NULL;
    cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaMalloc(&bx, (size_t)xe * 2);
    if (e == cudaSuccess) e = cudaMalloc(&by, (size_t)ye * 2);
    if (e == cudaSuccess && cudaMalloc(&bws, ws_cap) != cudaSuccess) {
        (void)cudaGetLastError();
        bws = NULL, ws_cap = 0; /* no split-K, no engine with a workspace */
    }
    if (e == cudaSuccess) e = cudaMemsetAsync(bx, 0x3c, (size_t)xe * 2, s); /* ~1.05 */
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    char d[160];
    const char *log = getenv("PIXFLOW_NN_CONV_LOG");
    const bool logging = log && *log == '1', verbose = log && *log == '2';
    pf_cux_desc(g, node, d, sizeof d);
    float ig_ms = -1.0f, gr_ms = -1.0f, epi_ms = 0.0f, legacy_ms = -1.0f;
    int ke = 0, ge = 0;
    if (e == cudaSuccess && choice != PATH_GRAPH && ig_ok) {
        pf_cu_ig t = *q;
        ke = pf_cu_ig_tune(&t, bx, cv->w, cv->b, by, bws, ws_cap, s, &ig_ms);
        if (!ke) e = cudaStreamSynchronize(s);
        if (!ke) *q = t;
        else ig_ms = -1.0f;
        (void)cudaGetLastError();
    }
    if (e == cudaSuccess && choice != PATH_IGEMM) {
        pf_cux_gshape sh;
        gshape_of(&sh, xd, xs, yd, ys, k, st, dil, pb, pe);
        ge = pf_cux_gconv_tune(c->cudnn, &sh, bx, cv->w, by, bws, ws_cap, s, &cv->grp, &gr_ms,
                               verbose ? d : NULL);
        if (!ge && (cv->b || n->act != PF_IR_ACT_NONE)) {
            epi_arg a = {q, cv->b, by, s};
            (void)pf_cu_time_ms(launch_epi, &a, s, &epi_ms);
            if (epi_ms < 0) {
                pf_cux_gconv_release(&cv->grp);
                ge = -1;
            }
        }
        if (ge) gr_ms = -1.0f;
    }
    if (e == cudaSuccess && choice == PATH_AUTO && cv->algo >= 0 && (bws || !cv->ws_bytes))
        legacy_ms = time_legacy(c, cv, bx, by, bws, s);
    if (bx) cudaFree(bx);
    if (by) cudaFree(by);
    if (bws) cudaFree(bws);
    if (s) cudaStreamDestroy(s);
    (void)cudaGetLastError();
    if (e != cudaSuccess) {
        pf_cux_gconv_release(&cv->grp);
        if (cv->algo >= 0 && choice == PATH_AUTO) {
            /* No scratch memory: cuDNN's legacy path runs as before. */
            if (logging)
                fprintf(stderr, "conv choice: %s: paths not timed (%s) -> cuDNN legacy\n", d,
                        cudaGetErrorString(e));
            return PF_OK;
        }
        return pf_set_error(e == cudaErrorMemoryAllocation ? PF_ERR_NOMEM : PF_ERR_DEVICE,
                            "%s: timing the FP16 conv paths failed: %s", d, cudaGetErrorString(e));
    }
    if (choice == PATH_IGEMM && ig_ms < 0)
        return pf_set_error(PF_ERR_DEVICE, "%s: timing the implicit-GEMM conv failed: %s", d,
                            pf_cu_error_string(ke));
    if (choice == PATH_GRAPH && gr_ms < 0 && ge != (int)CUDNN_STATUS_NOT_SUPPORTED)
        return pf_set_error(PF_ERR_DEVICE, "%s: timing cuDNN's graph-API engines failed: %s", d,
                            ge > 0 ? cudnnGetErrorString((cudnnStatus_t)ge) : "epilogue launch");
    /* Forced to the graph API where it has no engine: the legacy path. */
    const float gr_total = gr_ms >= 0 ? gr_ms + epi_ms : -1.0f;
    /* Fastest timed path; an untimed legacy pick (no workspace for it) is
     * kept only when nothing else runs. */
    float best = legacy_ms;
    *path = PATH_LEGACY;
    if (ig_ms >= 0 && (best < 0 || ig_ms < best)) best = ig_ms, *path = PATH_IGEMM;
    if (gr_total >= 0 && (best < 0 || gr_total < best)) best = gr_total, *path = PATH_GRAPH;
    if (*path != PATH_GRAPH) pf_cux_gconv_release(&cv->grp);
    if (logging || verbose)
        fprintf(stderr,
                "conv choice: %s: M %d N %d K %d: cuDNN legacy %.4f ms, cuDNN graph %.4f + "
                "epilogue %.4f ms (engine %lld), igemm cfg %d x%d %.4f ms -> %s\n",
                d, q->m, q->k, q->kk, legacy_ms, gr_ms, epi_ms,
                (long long)(*path == PATH_GRAPH ? cv->grp.engine : -1), q->cfg, q->splits, ig_ms,
                *path == PATH_IGEMM ? "igemm" : *path == PATH_GRAPH ? "cuDNN graph" : "cuDNN");
    return PF_OK;
}

/* The plan cache's record of a Conv's tuned choice (plan_cache.h): the
 * legacy algorithm and math type cudnnFind picked, the path that won the
 * FP16 timing, the implicit GEMM's launch config and the graph engine. */
typedef struct conv_rec {
    int32_t algo, math, path, ig_cfg, ig_splits, pad;
    int64_t gr_rank, gr_engine;
} conv_rec;

/* The entry key: everything the timing depended on (shapes and strides,
 * which include the batch; kernel, stride, dilation, pads, group, the
 * activation and bias the epilogue runs, precision, TF32, a forced path). */
static void conv_key(const pf_cux_ctx *c, const pf_ir_node *n, const pf_cux_conv *cv,
                     const int64_t xd[4], const int64_t xs[4], const int64_t yd[4],
                     const int64_t ys[4], const int64_t k[2], const int64_t st[2],
                     const int64_t dil[2], const int64_t pb[2], const int64_t pe[2],
                     int64_t group, char *buf, size_t size)
{
    snprintf(buf, size,
             "conv %s tf32 %d path %d x %lld,%lld,%lld,%lld/%lld,%lld,%lld,%lld "
             "y %lld,%lld,%lld,%lld/%lld,%lld,%lld,%lld k %lld,%lld s %lld,%lld d %lld,%lld "
             "p %lld,%lld,%lld,%lld g %lld act %d bias %d",
             c->fp16 ? "fp16" : "fp32", c->p.allow_tf32 ? 1 : 0, conv_choice(),
             (long long)xd[0], (long long)xd[1], (long long)xd[2], (long long)xd[3],
             (long long)xs[0], (long long)xs[1], (long long)xs[2], (long long)xs[3],
             (long long)yd[0], (long long)yd[1], (long long)yd[2], (long long)yd[3],
             (long long)ys[0], (long long)ys[1], (long long)ys[2], (long long)ys[3],
             (long long)k[0], (long long)k[1], (long long)st[0], (long long)st[1],
             (long long)dil[0], (long long)dil[1], (long long)pb[0], (long long)pb[1],
             (long long)pe[0], (long long)pe[1], (long long)group, (int)n->act, cv->b ? 1 : 0);
}

/* Applies a cached choice, checking that it still fits (the algorithm's
 * workspace within the limit, the launch config valid for this geometry,
 * the graph engine still offered by cuDNN's heuristics at the same rank).
 * False when it does not: the conv is tuned as if nothing were cached. */
static bool apply_rec(pf_cux_ctx *c, const pf_ir_node *n, pf_cux_conv *cv, const conv_rec *r,
                      const int64_t xd[4], const int64_t xs[4], const int64_t yd[4],
                      const int64_t ys[4], const int64_t k[2], const int64_t st[2],
                      const int64_t dil[2], const int64_t pb[2], const int64_t pe[2], int *path)
{
    if (r->algo < -1 || r->algo >= CUDNN_CONVOLUTION_FWD_ALGO_COUNT) return false;
    if (r->path == PATH_LEGACY && r->algo < 0) return false;
    cv->algo = r->algo;
    cv->ws_bytes = 0;
    if (r->algo >= 0) {
        if (c->fp16 && r->math >= 0 &&
            cudnnSetConvolutionMathType(cv->cd, (cudnnMathType_t)r->math) != CUDNN_STATUS_SUCCESS)
            return false;
        if (cudnnGetConvolutionForwardWorkspaceSize(c->cudnn, cv->xd, cv->wd, cv->cd, cv->yd,
                                                    (cudnnConvolutionFwdAlgo_t)r->algo,
                                                    &cv->ws_bytes) != CUDNN_STATUS_SUCCESS ||
            cv->ws_bytes > WS_LIMIT)
            return false;
    }
    *path = PATH_LEGACY;
    if (r->path == PATH_LEGACY) return true;
    const int choice = conv_choice();
    bool ig_ok = false;
    if (!fp16_paths_apply(c, n, cv, choice, xd, xs, yd, ys, k, st, dil, pb, &ig_ok)) return false;
    if (r->path == PATH_IGEMM) {
        if (!ig_ok || choice == PATH_GRAPH || r->ig_cfg < 0 || r->ig_cfg >= PF_CU_IG_CONFIGS ||
            r->ig_splits < 1)
            return false;
        pf_cu_ig t = cv->igp;
        pf_cu_ig_set(&t, r->ig_cfg, r->ig_splits);
        if (t.cfg != r->ig_cfg || t.splits != r->ig_splits || pf_cu_ig_ws(&t) > fp16_ws_cap(cv))
            return false;
        cv->igp = t;
        *path = PATH_IGEMM;
        return true;
    }
    if (r->path != PATH_GRAPH || choice == PATH_IGEMM || r->gr_rank < 0) return false;
    pf_cux_gshape sh;
    gshape_of(&sh, xd, xs, yd, ys, k, st, dil, pb, pe);
    float ms = -1.0f;
    if (pf_cux_gconv_build(c->cudnn, &sh, NULL, NULL, NULL, NULL, fp16_ws_cap(cv), NULL,
                           r->gr_rank, r->gr_engine, &cv->grp, &ms, NULL) != 0) {
        (void)cudaGetLastError();
        return false;
    }
    *path = PATH_GRAPH;
    return true;
}

/* The timed choice of a forward Conv's algorithm and path (nothing
 * cached): cv->algo, its workspace and math type, *path, and the record
 * for the plan cache. */
static pf_status tune_conv(pf_cux_ctx *c, const pf_ir_graph *g, int node, pf_cux_conv *cv,
                           const int64_t xd[4], const int64_t xs[4], const int64_t yd[4],
                           const int64_t ys[4], const int64_t k[2], const int64_t st[2],
                           const int64_t dil[2], const int64_t pb[2], const int64_t pe[2],
                           int *path, conv_rec *rec)
{
    const pf_ir_node *n = &g->nodes[node];
    char desc[160];
    *path = PATH_LEGACY;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int got = 0;
    /* Timed choice: cuDNN runs every algorithm on buffers it allocates
     * itself (plan time, outside any capture) and sorts by time.
     * Heuristics remain the fallback when timing fails (e.g. no memory
     * for its buffers). A conv with a bias and no activation or ReLU
     * prefers IMPLICIT_PRECOMP_GEMM when it is nearly as fast: that
     * algorithm runs bias + act in its epilogue (identity activation is
     * allowed with it only), where others need extra passes over the
     * output; those passes cost more than the timing difference (at
     * batch 1 the timed-best algorithms made LRASPP 1.5x slower). */
    const bool fusable = cv->b && (n->act == PF_IR_ACT_RELU || n->act == PF_IR_ACT_NONE);
    int pick = -1;
    if (cudnnFindConvolutionForwardAlgorithm(c->cudnn, cv->xd, cv->wd, cv->cd, cv->yd,
                                             CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got,
                                             perf) == CUDNN_STATUS_SUCCESS) {
        for (int i = 0; i < got; i++) {
            if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > WS_LIMIT) continue;
            /* FP32 without TF32 must not take a tensor-op (TF32) result. */
            if (!c->fp16 && !c->p.allow_tf32 && perf[i].mathType == CUDNN_TENSOR_OP_MATH)
                continue;
            if (pick < 0) pick = i;
            if (fusable && perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM &&
                perf[i].time <= perf[pick].time * 1.3f + 0.005f) {
                pick = i;
                break;
            }
        }
    }
    (void)cudaGetLastError();
    if (pick < 0) {
        got = 0;
        DNN(cudnnGetConvolutionForwardAlgorithm_v7(c->cudnn, cv->xd, cv->wd, cv->cd, cv->yd,
                                                   CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got,
                                                   perf));
        for (int i = 0; i < got && pick < 0; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= WS_LIMIT) pick = i;
    } else if (c->fp16) {
        DNN(cudnnSetConvolutionMathType(cv->cd, perf[pick].mathType));
    }
    cv->algo = pick >= 0 ? (int)perf[pick].algo : -1;
    if (pick >= 0)
        DNN(cudnnGetConvolutionForwardWorkspaceSize(c->cudnn, cv->xd, cv->wd, cv->cd, cv->yd,
                                                    perf[pick].algo, &cv->ws_bytes));
    /* pixflow's implicit GEMM or cuDNN's graph API where faster, all
     * timed alike. */
    pf_status ps = tune_fp16(c, g, node, cv, xd, xs, yd, ys, k, st, dil, pb, pe, path);
    if (ps != PF_OK) return ps;
    if (pick < 0 && *path == PATH_LEGACY)
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: cuDNN has no forward algorithm for it",
                            pf_cux_desc(g, node, desc, sizeof desc));
    *rec = (conv_rec){.algo = cv->algo,
                      .math = pick >= 0 && c->fp16 ? (int32_t)perf[pick].mathType : -1,
                      .path = *path,
                      .ig_cfg = cv->igp.cfg,
                      .ig_splits = cv->igp.splits,
                      .gr_rank = *path == PATH_GRAPH ? cv->grp.rank : -1,
                      .gr_engine = *path == PATH_GRAPH ? cv->grp.engine : -1};
    return PF_OK;
}

pf_status pf_cux_conv_prepare(pf_cux_ctx *c, const pf_ir_graph *g, int node,
                              const pf_nn_cu_tensor *x, const pf_nn_cu_tensor *y,
                              pf_cux_conv *cv)
{
    const pf_ir_node *n = &g->nodes[node];
    const pf_ir_conv_attr *a = &n->attr.conv;
    char desc[160];
    memset(cv, 0, sizeof *cv);
    cv->transpose = n->op == PF_IR_CONV_TRANSPOSE;
    if (a->nsp != 1 && a->nsp != 2)
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: %dD convolution is not supported on CUDA",
                            pf_cux_desc(g, node, desc, sizeof desc), a->nsp);
    const cudnnDataType_t dt = c->fp16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    int64_t xd[4], xs[4], yd[4], ys[4];
    as4d(x, xd, xs);
    as4d(y, yd, ys);
    cv->nhwc = is_nhwc(xs, xd);
    const int sp = a->nsp;
    /* Spatial params as (H, W), H trivial for 1D. */
    int64_t k[2] = {1, a->kernel[0]}, st[2] = {1, a->stride[0]}, dil[2] = {1, a->dilation[0]};
    int64_t pb[2] = {0, a->pad_begin[0]}, pe[2] = {0, a->pad_end[0]};
    if (sp == 2) {
        for (int i = 0; i < 2; i++) {
            k[i] = a->kernel[i], st[i] = a->stride[i], dil[i] = a->dilation[i];
            pb[i] = a->pad_begin[i], pe[i] = a->pad_end[i];
        }
    }
    for (int i = 0; i < 2; i++) {
        if (!dil[i]) dil[i] = 1;
        if (!st[i]) st[i] = 1;
    }
    int64_t sym[2];
    bool asym = false;
    for (int i = 0; i < 2; i++) {
        sym[i] = pb[i] < pe[i] ? pb[i] : pe[i];
        if (pb[i] != pe[i]) asym = true;
        if (sym[i] < 0)
            return pf_set_error(PF_ERR_UNSUPPORTED, "%s: negative pads are not supported on CUDA",
                                pf_cux_desc(g, node, desc, sizeof desc));
    }
    const pf_ir_value *wv = &g->values[n->in[1]];
    if (!wv->data)
        return pf_set_error(PF_ERR_UNSUPPORTED,
                            "%s: the weights are a runtime tensor; CUDA needs constant weights",
                            pf_cux_desc(g, node, desc, sizeof desc));
    pf_status ps = PF_OK;
    cv->b = NULL;
    if (n->n_in > 2 && n->in[2] >= 0) {
        if (!g->values[n->in[2]].data)
            return pf_set_error(PF_ERR_UNSUPPORTED, "%s: runtime bias is not supported on CUDA",
                                pf_cux_desc(g, node, desc, sizeof desc));
        ps = pf_cux_weight_get(c, g, n->in[2], PF_CUX_ROWMAJOR, &cv->b);
        if (ps != PF_OK) return ps;
    }
    const int64_t group = a->group ? a->group : 1;
    if (!cv->transpose && group > 1 && group == xd[1] && wv->dims[0] == group && wv->dims[1] == 1 &&
        yd[1] == group && xs[1] == 1 && ys[1] == 1) {
        /* Depthwise: pixflow's kernel (see dwconv.cu for why). It pads
         * asymmetrically by itself, so no tmp. */
        pf_cu_dw *q = &cv->dwp;
        q->n = xd[0], q->c = xd[1], q->h = xd[2], q->w = xd[3];
        q->oh = yd[2], q->ow = yd[3];
        for (int i = 0; i < 4; i++) q->in_st[i] = xs[i], q->out_st[i] = ys[i];
        q->kh = (int)k[0], q->kw = (int)k[1], q->sh = (int)st[0], q->sw = (int)st[1];
        q->dh = (int)dil[0], q->dw = (int)dil[1], q->ph = (int)pb[0], q->pw = (int)pb[1];
        q->act = n->act;
        q->act_a = n->act_a;
        q->act_b = n->act_b;
        if (pf_cu_dw_ok(q) && pb[0] >= 0 && pb[1] >= 0) {
            ps = pf_cux_weight_get(c, g, n->in[1], PF_CUX_FILTER_RSK, &cv->w);
            if (ps != PF_OK) return ps;
            cv->dw = true;
            return PF_OK;
        }
    }
    if (!cv->transpose && group == 1 && k[0] == 1 && k[1] == 1 && pb[0] == 0 && pb[1] == 0 &&
        pe[0] == 0 && pe[1] == 0 && xd[2] == 1 && xd[3] == 1 && yd[2] == 1 && yd[3] == 1 &&
        wv->ndim == 2 + sp && wv->dims[0] == yd[1] && wv->dims[1] == xd[1] && yd[0] == xd[0]) {
        /* 1x1 spatial in and out: a matrix-vector product per item. */
        pf_cu_fc *q = &cv->fcp;
        q->n = xd[0], q->cin = xd[1], q->cout = yd[1];
        q->x_sn = xs[0], q->x_sc = xs[1], q->y_sn = ys[0], q->y_sc = ys[1];
        q->act = n->act;
        q->act_a = n->act_a;
        q->act_b = n->act_b;
        if (pf_cu_fc_ok(q)) {
            ps = pf_cux_weight_get(c, g, n->in[1], PF_CUX_ROWMAJOR, &cv->w);
            if (ps != PF_OK) return ps;
            cv->fc = true;
            return PF_OK;
        }
    }
    ps = pf_cux_weight_get(c, g, n->in[1], cv->nhwc ? PF_CUX_FILTER_NHWC : PF_CUX_ROWMAJOR,
                           &cv->w);
    if (ps != PF_OK) return ps;

    DNN(cudnnCreateTensorDescriptor(&cv->xd));
    DNN(cudnnCreateTensorDescriptor(&cv->yd));
    DNN(cudnnCreateFilterDescriptor(&cv->wd));
    DNN(cudnnCreateConvolutionDescriptor(&cv->cd));
    /* Filter [K, C/g, kh, kw]: K = out channels for Conv, in channels for
     * ConvTranspose (cuDNN's forward-conv view of the backward pass). */
    const int64_t fk = wv->dims[0], fc = wv->dims[1];
    DNN(cudnnSetFilter4dDescriptor(cv->wd, dt, cv->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                   (int)fk, (int)fc, (int)k[0], (int)k[1]));
    DNN(cudnnSetConvolution2dDescriptor(cv->cd, (int)sym[0], (int)sym[1], (int)st[0], (int)st[1],
                                        (int)dil[0], (int)dil[1], CUDNN_CROSS_CORRELATION,
                                        CUDNN_DATA_FLOAT));
    DNN(cudnnSetConvolutionGroupCount(cv->cd, (int)(a->group ? a->group : 1)));
    cudnnMathType_t math = c->fp16 ? CUDNN_TENSOR_OP_MATH
                                   : (c->p.allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH);
    DNN(cudnnSetConvolutionMathType(cv->cd, math));
    const size_t es = c->fp16 ? 2 : 4;

    if (!cv->transpose) {
        int64_t id[4] = {xd[0], xd[1], xd[2], xd[3]}, is[4];
        if (asym) {
            cv->use_tmp = true;
            id[2] = xd[2] + (pb[0] - sym[0]) + (pe[0] - sym[0]);
            id[3] = xd[3] + (pb[1] - sym[1]) + (pe[1] - sym[1]);
            packed(id, cv->nhwc, is);
            memset(&cv->pad, 0, sizeof cv->pad);
            cv->pad.nd = 4;
            for (int i = 0; i < 4; i++) {
                cv->pad.out_dims[i] = id[i];
                cv->pad.out_st[i] = is[i];
                cv->pad.in_dims[i] = xd[i];
                cv->pad.in_st[i] = xs[i];
            }
            cv->pad.begin[2] = pb[0] - sym[0];
            cv->pad.begin[3] = pb[1] - sym[1];
            cv->tmp_bytes = (size_t)(id[0] * id[1] * id[2] * id[3]) * es;
            DNN(set_tensor(cv->xd, dt, id, is));
        } else {
            DNN(set_tensor(cv->xd, dt, xd, xs));
        }
        DNN(set_tensor(cv->yd, dt, yd, ys));
        /* A choice from the plan cache skips the timing below (~all of
         * plan time); a stale or unusable one is tuned again. */
        char ekey[640];
        conv_key(c, n, cv, xd, xs, yd, ys, k, st, dil, pb, pe, group, ekey, sizeof ekey);
        conv_rec rec;
        int path = PATH_LEGACY;
        const bool cached = c->cache && pf_plan_cache_get(c->cache, ekey, &rec, sizeof rec) &&
                            apply_rec(c, n, cv, &rec, xd, xs, yd, ys, k, st, dil, pb, pe, &path);
        if (cached) {
            c->convs_cached++;
        } else {
            ps = tune_conv(c, g, node, cv, xd, xs, yd, ys, k, st, dil, pb, pe, &path, &rec);
            if (ps != PF_OK) return ps;
            pf_plan_cache_put(c->cache, ekey, &rec, sizeof rec);
            c->convs_tuned++;
        }
        if (path != PATH_LEGACY) {
            cv->ig = path == PATH_IGEMM;
            cv->gr = path == PATH_GRAPH;
            cv->use_tmp = false; /* both pad asymmetrically by themselves */
            cv->tmp_bytes = 0;
            cv->ws_bytes = cv->ig ? pf_cu_ig_ws(&cv->igp) : cv->grp.ws_bytes;
            cv->ws_bytes = (cv->ws_bytes + 255) & ~(size_t)255;
            return PF_OK;
        }
        const bool precomp = cv->algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
        if (cv->b && (n->act == PF_IR_ACT_RELU || (n->act == PF_IR_ACT_NONE && precomp))) {
            cv->fused = true;
            DNN(cudnnCreateTensorDescriptor(&cv->bd));
            DNN(cudnnSetTensor4dDescriptor(cv->bd, CUDNN_TENSOR_NCHW, dt, 1, (int)yd[1], 1, 1));
            DNN(cudnnCreateActivationDescriptor(&cv->ad));
            DNN(cudnnSetActivationDescriptor(cv->ad,
                                             n->act == PF_IR_ACT_RELU ? CUDNN_ACTIVATION_RELU
                                                                      : CUDNN_ACTIVATION_IDENTITY,
                                             CUDNN_NOT_PROPAGATE_NAN, 0.0));
        }
    } else {
        /* dy = x (fk channels), dx = y (or the uncropped tmp). */
        int64_t od[4] = {yd[0], yd[1], yd[2], yd[3]}, os[4];
        DNN(set_tensor(cv->xd, dt, xd, xs));
        if (asym) {
            cv->use_tmp = true;
            od[2] = yd[2] + (pb[0] - sym[0]) + (pe[0] - sym[0]);
            od[3] = yd[3] + (pb[1] - sym[1]) + (pe[1] - sym[1]);
            packed(od, cv->nhwc, os);
            cv->crop[0] = pb[0] - sym[0];
            cv->crop[1] = pb[1] - sym[1];
            cv->tmp_bytes = (size_t)(od[0] * od[1] * od[2] * od[3]) * es;
            DNN(set_tensor(cv->yd, dt, od, os));
        } else {
            DNN(set_tensor(cv->yd, dt, yd, ys));
        }
        if (cv->use_tmp) {
            /* The crop view of tmp, as the 4D tensor bias_act reads. */
            memset(&cv->tmp, 0, sizeof cv->tmp);
            cv->tmp.dtype = c->fp16 ? PF_IR_F16 : PF_IR_F32;
            cv->tmp.ndim = 4;
            for (int i = 0; i < 4; i++) {
                cv->tmp.dims[i] = yd[i];
                cv->tmp.strides[i] = os[i];
            }
        }
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        int got = 0;
        DNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(c->cudnn, cv->wd, cv->xd, cv->cd, cv->yd,
                                                        CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                        &got, perf));
        int pick = -1;
        for (int i = 0; i < got && pick < 0; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= WS_LIMIT) pick = i;
        if (pick < 0)
            return pf_set_error(PF_ERR_UNSUPPORTED,
                                "%s: cuDNN has no backward-data algorithm for it",
                                pf_cux_desc(g, node, desc, sizeof desc));
        cv->algo = perf[pick].algo;
        DNN(cudnnGetConvolutionBackwardDataWorkspaceSize(c->cudnn, cv->wd, cv->xd, cv->cd, cv->yd,
                                                         perf[pick].algo, &cv->ws_bytes));
    }
    cv->tmp_bytes = (cv->tmp_bytes + 255) & ~(size_t)255;
    return PF_OK;
}

/* PF_OK for a launch result of 0, else the error naming the node and kernel. */
static pf_status launched(const pf_ir_graph *g, int node, const char *what, int e)
{
    if (!e) return PF_OK;
    char d[160];
    return pf_set_error(PF_ERR_DEVICE, "%s: %s launch failed: %s",
                        pf_cux_desc(g, node, d, sizeof d), what, pf_cu_error_string(e));
}

pf_status pf_cux_conv_run(pf_cux_ctx *c, const pf_ir_graph *g, int node, pf_cux_conv *cv,
                          const pf_nn_cu_tensor *x, const pf_nn_cu_tensor *y, void *ws,
                          cudaStream_t s)
{
    const pf_ir_node *n = &g->nodes[node];
    const float one = 1.0f, zero = 0.0f;
    char *tmp = (char *)ws;
    char *dws = tmp + cv->tmp_bytes;
    if (cv->dw) {
        int e = pf_cu_launch_dwconv(&cv->dwp, x->data, cv->w, cv->b, y->data,
                                    c->fp16 ? PF_IR_F16 : PF_IR_F32, s);
        return launched(g, node, "depthwise conv", e);
    }
    if (cv->ig) {
        int e = pf_cu_launch_ig(&cv->igp, x->data, cv->w, cv->b, cv->resid ? cv->z.data : NULL,
                                y->data, ws, s);
        return launched(g, node, "implicit-GEMM conv", e);
    }
    if (cv->gr) {
        int e = pf_cux_gconv_run(c->cudnn, &cv->grp, x->data, cv->w, y->data, ws);
        if (e) return dnn_fail(g, node, "cudnnBackendExecute", (cudnnStatus_t)e);
        if (!cv->b && n->act == PF_IR_ACT_NONE && !cv->resid) return PF_OK;
        e = pf_cu_launch_ig_epi(&cv->igp, cv->b, cv->resid ? cv->z.data : NULL, y->data, s);
        return launched(g, node, "conv epilogue", e);
    }
    if (cv->fc) {
        int e = pf_cu_launch_fc(&cv->fcp, x->data, cv->w, cv->b, y->data,
                                c->fp16 ? PF_IR_F16 : PF_IR_F32, s);
        return launched(g, node, "1x1 spatial conv", e);
    }
    if (!cv->transpose) {
        const void *src = x->data;
        if (cv->use_tmp) {
            int e = pf_cu_launch_pad(&cv->pad, x->data, tmp, c->fp16 ? PF_IR_F16 : PF_IR_F32, s);
            if (e) return launched(g, node, "pad", e);
            src = tmp;
        }
        if (cv->fused) {
            cudnnStatus_t st = cudnnConvolutionBiasActivationForward(
                c->cudnn, &one, cv->xd, src, cv->wd, cv->w, cv->cd,
                (cudnnConvolutionFwdAlgo_t)cv->algo, dws, cv->ws_bytes, cv->resid ? &one : &zero,
                cv->yd, cv->resid ? cv->z.data : y->data, cv->bd, cv->b, cv->ad, cv->yd, y->data);
            if (st == CUDNN_STATUS_SUCCESS) return PF_OK;
            if (st != CUDNN_STATUS_NOT_SUPPORTED && st != CUDNN_STATUS_BAD_PARAM)
                return dnn_fail(g, node, "cudnnConvolutionBiasActivationForward", st);
            cv->fused = false; /* cuDNN refuses the fusion here: conv + bias_act from now on */
        }
        DNN(cudnnConvolutionForward(c->cudnn, &one, cv->xd, src, cv->wd, cv->w, cv->cd,
                                    (cudnnConvolutionFwdAlgo_t)cv->algo, dws, cv->ws_bytes, &zero,
                                    cv->yd, y->data));
        if (cv->resid) {
            if (cv->b) {
                pf_status ps = pf_nn_cuda_bias_act(y, y, cv->b, PF_IR_ACT_NONE, 0, 0, s);
                if (ps != PF_OK) return ps;
            }
            return pf_nn_cuda_add_act(y, &cv->z, y, (pf_ir_act)cv->r_act, cv->r_act_a,
                                      cv->r_act_b, s);
        }
        if (cv->b || n->act != PF_IR_ACT_NONE)
            return pf_nn_cuda_bias_act(y, y, cv->b, n->act, n->act_a, n->act_b, s);
        return PF_OK;
    }
    void *dx = cv->use_tmp ? (void *)tmp : y->data;
    DNN(cudnnConvolutionBackwardData(c->cudnn, &one, cv->wd, cv->w, cv->xd, x->data, cv->cd,
                                     (cudnnConvolutionBwdDataAlgo_t)cv->algo, dws, cv->ws_bytes,
                                     &zero, cv->yd, dx));
    if (cv->use_tmp) {
        pf_nn_cu_tensor src = cv->tmp;
        const size_t es = c->fp16 ? 2 : 4;
        src.data = tmp + (size_t)(cv->crop[0] * src.strides[2] + cv->crop[1] * src.strides[3]) * es;
        pf_nn_cu_tensor y4 = *y;
        if (y->ndim == 3) {
            as4d(y, y4.dims, y4.strides);
            y4.ndim = 4;
        }
        return pf_nn_cuda_bias_act(&src, &y4, cv->b, n->act, n->act_a, n->act_b, s);
    }
    if (cv->b || n->act != PF_IR_ACT_NONE)
        return pf_nn_cuda_bias_act(y, y, cv->b, n->act, n->act_a, n->act_b, s);
    return PF_OK;
}

bool pf_cux_conv_can_residual(const pf_cux_conv *cv, const pf_ir_graph *g, int node,
                              pf_ir_act add_act)
{
    if (cv->ig || cv->gr) return g->nodes[node].act == PF_IR_ACT_NONE; /* any Add activation */
    if (cv->dw || cv->fc || cv->transpose || !cv->b || g->nodes[node].act != PF_IR_ACT_NONE)
        return false;
    /* cuDNN runs the identity activation with IMPLICIT_PRECOMP_GEMM only. */
    return add_act == PF_IR_ACT_RELU ||
           (add_act == PF_IR_ACT_NONE &&
            cv->algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
}

pf_status pf_cux_conv_set_residual(pf_cux_ctx *c, const pf_ir_graph *g, int node,
                                   pf_cux_conv *cv, const pf_nn_cu_tensor *z, pf_ir_act add_act,
                                   float act_a, float act_b)
{
    cv->resid = true;
    cv->z = *z;
    cv->r_act = add_act;
    cv->r_act_a = act_a;
    cv->r_act_b = act_b;
    if (cv->ig || cv->gr) {
        int64_t zd[4], zs[4];
        as4d(z, zd, zs);
        for (int i = 0; i < 4; i++) cv->igp.z_st[i] = zs[i];
        cv->igp.r_act = add_act;
        cv->igp.r_act_a = act_a;
        cv->igp.r_act_b = act_b;
        return PF_OK;
    }
    const cudnnDataType_t dt = c->fp16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    if (!cv->bd) {
        DNN(cudnnCreateTensorDescriptor(&cv->bd));
        DNN(cudnnSetTensor4dDescriptor(cv->bd, CUDNN_TENSOR_NCHW, dt, 1, (int)z->dims[1], 1, 1));
    }
    if (!cv->ad) DNN(cudnnCreateActivationDescriptor(&cv->ad));
    DNN(cudnnSetActivationDescriptor(cv->ad,
                                     add_act == PF_IR_ACT_RELU ? CUDNN_ACTIVATION_RELU
                                                               : CUDNN_ACTIVATION_IDENTITY,
                                     CUDNN_NOT_PROPAGATE_NAN, 0.0));
    cv->fused = true;
    return PF_OK;
}

const char *pf_cux_conv_path(const pf_cux_conv *cv)
{
    static const char *const fwd[] = {"Conv/cudnn-implicit", "Conv/cudnn-precomp",
                                      "Conv/cudnn-gemm",     "Conv/cudnn-direct",
                                      "Conv/cudnn-fft",      "Conv/cudnn-fft-tiling",
                                      "Conv/cudnn-winograd", "Conv/cudnn-winograd-nf"};
    if (cv->ig) return "Conv/igemm";
    if (cv->gr) return "Conv/cudnn-graph";
    if (cv->dw) return "Conv/dw";
    if (cv->fc) return "Conv/fc";
    if (cv->transpose) return "ConvTranspose/cudnn";
    if (cv->algo >= 0 && cv->algo < (int)(sizeof fwd / sizeof *fwd)) return fwd[cv->algo];
    return "Conv/cudnn";
}

void pf_cux_conv_release(pf_cux_conv *cv)
{
    pf_cux_gconv_release(&cv->grp);
    if (cv->xd) cudnnDestroyTensorDescriptor(cv->xd);
    if (cv->yd) cudnnDestroyTensorDescriptor(cv->yd);
    if (cv->bd) cudnnDestroyTensorDescriptor(cv->bd);
    if (cv->td) cudnnDestroyTensorDescriptor(cv->td);
    if (cv->wd) cudnnDestroyFilterDescriptor(cv->wd);
    if (cv->cd) cudnnDestroyConvolutionDescriptor(cv->cd);
    if (cv->ad) cudnnDestroyActivationDescriptor(cv->ad);
    memset(cv, 0, sizeof *cv);
}
