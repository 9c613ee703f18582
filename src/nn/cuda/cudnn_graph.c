/* A forward conv through cuDNN's graph (backend) API.
 *
 * The legacy API (cudnnFindConvolutionForwardAlgorithm, cudnn_conv.c) picks
 * among eight algorithm families and on Hopper reaches few of cuDNN's
 * fastest kernels: at batch 1 it took 0.20-0.33 ms for DeepLabV3's 1x1
 * convs that PyTorch, through this API, runs in ~12 us. Here the conv is an
 * operation graph of one node; the heuristics (mode A) list engine
 * configs, each becomes an execution plan, and every plan that builds is
 * timed on the caller's scratch buffers (what PyTorch's cudnn.benchmark
 * does). Engines that compile at run time, reduce in reduced precision,
 * use FFT or Winograd, or are nondeterministic are left out: plan time
 * stays bounded, FP16 accuracy stays that of an FP32-accumulating GEMM, and
 * CUDA-graph replays stay bit-exact. Bias, activation and residual are not
 * in the graph: pixflow's epilogue kernel (pf_cu_launch_ig_epi) runs after,
 * and the caller adds its time before comparing paths. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "exec_cuda.h"

enum { UID_X = 1, UID_W = 2, UID_Y = 3, MAX_CFGS = 24 };

#define BE(call) \
    do { \
        if ((st = (call)) != CUDNN_STATUS_SUCCESS) goto out; \
    } while (0)

static cudnnStatus_t make_tensor(cudnnBackendDescriptor_t *t, int64_t uid, cudnnDataType_t dt,
                                 const int64_t d[4], const int64_t s[4])
{
    cudnnStatus_t st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, t);
    const int64_t align = 16;
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1,
                                      &dt);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, d);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, s);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1,
                                      &align);
    if (st == CUDNN_STATUS_SUCCESS) st = cudnnBackendFinalize(*t);
    return st;
}

/* Whether an engine's notes allow it here (see the file comment). */
static bool engine_ok(cudnnBackendDescriptor_t cfg, int64_t *index)
{
    cudnnBackendDescriptor_t eng = NULL;
    bool ok = false;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) !=
        CUDNN_STATUS_SUCCESS)
        return false;
    int64_t n = 0;
    if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                 1, &n, &eng) != CUDNN_STATUS_SUCCESS)
        goto done;
    cudnnBackendNumericalNote_t num[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    cudnnBackendBehaviorNote_t beh[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
    int64_t nn = 0, nb = 0;
    if (cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                 CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &nn, num) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                 CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &nb, beh) !=
            CUDNN_STATUS_SUCCESS)
        goto done;
    *index = -1;
    cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, index);
    ok = true;
    for (int64_t i = 0; i < nn && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; i++)
        if (num[i] != CUDNN_NUMERICAL_NOTE_TENSOR_CORE &&
            num[i] != CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS &&
            num[i] != CUDNN_NUMERICAL_NOTE_STRICT_NAN_PROP)
            ok = false;
    for (int64_t i = 0; i < nb && i < CUDNN_BEHAVIOR_NOTE_TYPE_COUNT; i++)
        if (beh[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) ok = false;
done:
    cudnnBackendDestroyDescriptor(eng);
    return ok;
}

static cudnnStatus_t make_pack(cudnnBackendDescriptor_t *pack, const void *x, const void *w,
                               void *y, void *ws)
{
    const int64_t uids[3] = {UID_X, UID_W, UID_Y};
    void *ptrs[3] = {(void *)x, (void *)w, y};
    cudnnStatus_t st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, pack);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(*pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                                      3, uids);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(*pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                      CUDNN_TYPE_VOID_PTR, 3, ptrs);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(*pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                      CUDNN_TYPE_VOID_PTR, 1, &ws);
    if (st == CUDNN_STATUS_SUCCESS) st = cudnnBackendFinalize(*pack);
    return st;
}

typedef struct plan_arg {
    cudnnHandle_t h;
    cudnnBackendDescriptor_t plan, pack;
} plan_arg;

static int launch_plan(void *p)
{
    const plan_arg *a = p;
    return (int)cudnnBackendExecute(a->h, a->plan, a->pack);
}

int pf_cux_gconv_tune(cudnnHandle_t h, const pf_cux_gshape *sh, const void *x, const void *w,
                      void *y, void *ws, size_t ws_cap, cudaStream_t s, pf_cux_gconv *gc,
                      float *best_ms, const char *log_name)
{
    return pf_cux_gconv_build(h, sh, x, w, y, ws, ws_cap, s, -1, -1, gc, best_ms, log_name);
}

int pf_cux_gconv_build(cudnnHandle_t h, const pf_cux_gshape *sh, const void *x, const void *w,
                       void *y, void *ws, size_t ws_cap, cudaStream_t s, int64_t only_rank,
                       int64_t only_engine, pf_cux_gconv *gc, float *best_ms,
                       const char *log_name)
{
    memset(gc, 0, sizeof *gc);
    *best_ms = -1.0f;
    cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
    const cudnnDataType_t dt = CUDNN_DATA_HALF;
    const cudnnDataType_t acc = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t tx = NULL, tw = NULL, ty = NULL, conv = NULL, op = NULL,
                             heur = NULL, cfgs[MAX_CFGS] = {0};
    int64_t ncfg = 0, best_cfg = -1;
    cudaStream_t old = NULL;
    cudnnGetStream(h, &old);
    BE(cudnnSetStream(h, s));
    BE(make_tensor(&tx, UID_X, dt, sh->xd, sh->xs));
    BE(make_tensor(&tw, UID_W, dt, sh->wd, sh->ws));
    BE(make_tensor(&ty, UID_Y, dt, sh->yd, sh->ys));
    BE(cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &conv));
    {
        const int64_t nsp = 2;
        const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
        BE(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE,
                                    1, &acc));
        BE(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                                    CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
        BE(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64,
                                    1, &nsp));
        BE(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2,
                                    sh->dil));
        BE(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
                                    CUDNN_TYPE_INT64, 2, sh->stride));
        BE(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64,
                                    2, sh->pre));
        BE(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64,
                                    2, sh->post));
        BE(cudnnBackendFinalize(conv));
    }
    BE(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &op));
    {
        const float alpha = 1.0f, beta = 0.0f;
        BE(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tx));
        BE(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tw));
        BE(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &ty));
        BE(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv));
        BE(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                                    CUDNN_TYPE_FLOAT, 1, &alpha));
        BE(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
                                    CUDNN_TYPE_FLOAT, 1, &beta));
        BE(cudnnBackendFinalize(op));
    }
    BE(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &gc->graph));
    BE(cudnnBackendSetAttribute(gc->graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                &h));
    BE(cudnnBackendSetAttribute(gc->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op));
    BE(cudnnBackendFinalize(gc->graph));
    BE(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));
    {
        const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
        BE(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &gc->graph));
        BE(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1,
                                    &mode));
        BE(cudnnBackendFinalize(heur));
    }
    BE(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &ncfg, NULL));
    if (ncfg > MAX_CFGS) ncfg = MAX_CFGS;
    for (int64_t i = 0; i < ncfg; i++)
        BE(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[i]));
    if (ncfg > 0)
        BE(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, ncfg, &ncfg, cfgs));
    for (int64_t i = 0; i < ncfg; i++) {
        int64_t index = -1, wsb = 0, n = 0;
        if (only_rank >= 0 && i != only_rank) continue;
        if (!engine_ok(cfgs[i], &index)) continue;
        if (only_rank >= 0 && index != only_engine) continue; /* heuristics changed */
        cudnnBackendDescriptor_t plan = NULL, pack = NULL;
        float ms = -1.0f;
        if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) ==
                CUDNN_STATUS_SUCCESS &&
            cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                     &h) == CUDNN_STATUS_SUCCESS &&
            cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[i]) ==
                CUDNN_STATUS_SUCCESS &&
            cudnnBackendFinalize(plan) == CUDNN_STATUS_SUCCESS &&
            cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                     CUDNN_TYPE_INT64, 1, &n, &wsb) == CUDNN_STATUS_SUCCESS &&
            wsb >= 0 && (size_t)wsb <= ws_cap) {
            if (only_rank >= 0) {
                ms = 0.0f; /* the cached choice: built, not timed */
            } else if (make_pack(&pack, x, w, y, ws) == CUDNN_STATUS_SUCCESS) {
                plan_arg a = {h, plan, pack};
                (void)pf_cu_time_ms(launch_plan, &a, s, &ms);
            }
        }
        if (log_name)
            fprintf(stderr, "conv choice: %s: cuDNN engine %lld (heuristic rank %lld): %s\n",
                    log_name, (long long)index, (long long)i,
                    ms >= 0 ? "timed" : "does not build or run");
        if (log_name && ms >= 0) fprintf(stderr, "  %.4f ms, workspace %lld\n", ms, (long long)wsb);
        if (pack) cudnnBackendDestroyDescriptor(pack);
        if (ms >= 0 && (*best_ms < 0 || ms < *best_ms)) {
            if (gc->plan) cudnnBackendDestroyDescriptor(gc->plan);
            gc->plan = plan;
            gc->ws_bytes = (size_t)wsb;
            gc->engine = index;
            gc->rank = i;
            best_cfg = i;
            *best_ms = ms;
        } else if (plan) {
            cudnnBackendDestroyDescriptor(plan);
        }
    }
out:
    cudnnSetStream(h, old);
    /* The API does not say whether a finalized plan still refers to the
     * descriptors it was built from, so the chosen plan's engine config,
     * the heuristics, the operation and its tensors live as long as the plan
     * (pf_cux_gconv_release); the other configs' plans are gone already. */
    {
        cudnnBackendDescriptor_t chain[] = {best_cfg >= 0 ? cfgs[best_cfg] : NULL, heur, op, conv,
                                            tx, tw, ty};
        if (best_cfg >= 0) cfgs[best_cfg] = NULL;
        for (int64_t i = 0; i < MAX_CFGS; i++)
            if (cfgs[i]) cudnnBackendDestroyDescriptor(cfgs[i]);
        for (size_t i = 0; i < sizeof chain / sizeof *chain; i++) {
            if (gc->plan) gc->keep[i] = chain[i];
            else if (chain[i]) cudnnBackendDestroyDescriptor(chain[i]);
        }
    }
    (void)cudaGetLastError();
    if (!gc->plan) {
        pf_cux_gconv_release(gc);
        return st != CUDNN_STATUS_SUCCESS ? (int)st : (int)CUDNN_STATUS_NOT_SUPPORTED;
    }
    return 0;
}

int pf_cux_gconv_run(cudnnHandle_t h, pf_cux_gconv *gc, const void *x, const void *w, void *y,
                     void *ws)
{
    /* The tensors were described as 16-byte aligned (the executor's arena
     * is; a caller's tensor might not be). */
    if (((uintptr_t)x | (uintptr_t)w | (uintptr_t)y | (uintptr_t)ws) & 15)
        return (int)CUDNN_STATUS_BAD_PARAM;
    if (!gc->pack || gc->px != x || gc->pw != w || gc->py != y || gc->pws != ws) {
        if (gc->pack) cudnnBackendDestroyDescriptor(gc->pack);
        gc->pack = NULL;
        cudnnStatus_t st = make_pack(&gc->pack, x, w, y, ws);
        if (st != CUDNN_STATUS_SUCCESS) {
            if (gc->pack) cudnnBackendDestroyDescriptor(gc->pack);
            gc->pack = NULL;
            return (int)st;
        }
        gc->px = x, gc->pw = w, gc->py = y, gc->pws = ws;
    }
    return (int)cudnnBackendExecute(h, gc->plan, gc->pack);
}

void pf_cux_gconv_release(pf_cux_gconv *gc)
{
    if (gc->pack) cudnnBackendDestroyDescriptor(gc->pack);
    if (gc->plan) cudnnBackendDestroyDescriptor(gc->plan);
    for (int i = 0; i < PF_CUX_GCONV_KEEP; i++)
        if (gc->keep[i]) cudnnBackendDestroyDescriptor(gc->keep[i]);
    if (gc->graph) cudnnBackendDestroyDescriptor(gc->graph);
    memset(gc, 0, sizeof *gc);
}
