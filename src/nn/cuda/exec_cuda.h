/* Private to src/nn/cuda: the CUDA executor's context and plan, shared by
 * exec_cuda.c (plan building, runs, graphs), cudnn_conv.c (Conv and
 * ConvTranspose through cuDNN) and cublas_gemm.c (Gemm and MatMul through
 * cuBLAS). Design notes are in exec_cuda.c. */
#ifndef PF_NN_CUDA_EXEC_CUDA_H
#define PF_NN_CUDA_EXEC_CUDA_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "../backend.h"
#include "../plan_cache.h"
#include "cu_internal.h"
#include "dl_libs.h" /* cuDNN/cuBLAS calls go through run-time loaded tables */
#include "qconv.h"

typedef struct pf_cux_weight pf_cux_weight;

typedef struct pf_cux_ctx {
    pf_device *dev;
    pf_nn_exec_params p;
    bool fp16;
    pf_allocator *alloc;        /* weights, arenas; capped by p.memory_cap */
    pf_stream *own_stream;
    cudnnHandle_t cudnn;
    cublasHandle_t cublas;
    pf_buffer *cublas_ws;       /* cuBLAS workspace (set per run: graph-safe) */
    size_t cublas_ws_bytes;
    pf_cux_weight *weights;     /* uploaded constants, shared by all plans */
    size_t weight_bytes;
    void *last_plan;            /* the plan of the latest run (stats) */
    pf_plan_cache *cache;       /* tuned choices on disk; NULL = none (plan_cache.h) */
    int convs_tuned, convs_cached; /* conv choices timed / read from the cache */
} pf_cux_ctx;

/* Weight forms: the same constant uploaded for different uses. */
enum {
    PF_CUX_ROWMAJOR = 0,
    PF_CUX_FILTER_NHWC = 1, /* [K, C, R, S] -> [K, R, S, C] (cuDNN KRSC) */
    PF_CUX_FILTER_RSK = 2   /* depthwise [K, 1, R, S] -> [R, S, K] (dwconv.cu) */
};

/* A device copy of constant value `v` of g in the ctx precision (floats
 * F16 in FP16 mode), uploaded once per (name, bytes, form). */
pf_status pf_cux_weight_get(pf_cux_ctx *c, const pf_ir_graph *g, int v, int form,
                            const void **out);

/* The device dtype of an IR dtype in this ctx. */
pf_ir_dtype pf_cux_dtype(const pf_cux_ctx *c, pf_ir_dtype t);

/* cudnn_graph.c: an FP16 forward conv through cuDNN's graph API, the fastest
 * of the engines its heuristics offer (timed). Shapes in cuDNN's [N, C, H, W]
 * order with explicit strides; filter dims [K, C, R, S]. */
typedef struct pf_cux_gshape {
    int64_t xd[4], xs[4], wd[4], ws[4], yd[4], ys[4];
    int64_t pre[2], post[2], stride[2], dil[2];
} pf_cux_gshape;

#define PF_CUX_GCONV_KEEP 7
typedef struct pf_cux_gconv {
    cudnnBackendDescriptor_t graph, plan;
    cudnnBackendDescriptor_t keep[PF_CUX_GCONV_KEEP]; /* what the plan was built from */
    cudnnBackendDescriptor_t pack;      /* variant pack for the pointers below */
    const void *px, *pw, *py, *pws;
    size_t ws_bytes;
    int64_t engine;                     /* cuDNN's global engine index */
    int64_t rank;                       /* its position in the heuristics' list */
} pf_cux_gconv;

/* Builds and times every usable engine on the given scratch buffers
 * (workspace up to ws_cap) on stream s; keeps the fastest in *gc and its
 * time in *best_ms. 0 on success, else a cudnnStatus_t (none usable:
 * CUDNN_STATUS_NOT_SUPPORTED). log_name != NULL logs each engine. */
int pf_cux_gconv_tune(cudnnHandle_t h, const pf_cux_gshape *sh, const void *x, const void *w,
                      void *y, void *ws, size_t ws_cap, cudaStream_t s, pf_cux_gconv *gc,
                      float *best_ms, const char *log_name);
/* The same with only_rank >= 0: builds just the engine config at that
 * position of the heuristics' list, untimed (*best_ms = 0), provided its
 * engine is still only_engine and its workspace fits ws_cap (the plan
 * cache's choice; x, w, y, ws and s unused then). -1, -1 = pf_cux_gconv_tune. */
int pf_cux_gconv_build(cudnnHandle_t h, const pf_cux_gshape *sh, const void *x, const void *w,
                       void *y, void *ws, size_t ws_cap, cudaStream_t s, int64_t only_rank,
                       int64_t only_engine, pf_cux_gconv *gc, float *best_ms,
                       const char *log_name);
/* Runs the plan on the handle's stream; 0 or a cudnnStatus_t
 * (CUDNN_STATUS_BAD_PARAM for a pointer that is not 16-byte aligned). */
int pf_cux_gconv_run(cudnnHandle_t h, pf_cux_gconv *gc, const void *x, const void *w, void *y,
                     void *ws);
void pf_cux_gconv_release(pf_cux_gconv *gc);

typedef struct pf_cux_conv {
    bool transpose;
    bool nhwc;
    bool dw;                    /* depthwise: pixflow's kernel (dwp), no cuDNN */
    pf_cu_dw dwp;
    bool fc;                    /* 1x1 spatial in and out: pixflow's kernel (fcp) */
    pf_cu_fc fcp;
    bool ig;                    /* FP16 implicit GEMM: pixflow's kernel (igp), timed
                                   against cuDNN's best at plan time */
    pf_cu_ig igp;
    bool gr;                    /* FP16: cuDNN graph-API plan (grp), then pixflow's
                                   epilogue with igp's geometry; timed likewise */
    pf_cux_gconv grp;
    /* Residual: y = r_act(conv + bias + z), the Add that read this conv
     * absorbed (pf_cux_conv_set_residual); z has y's dims and strides. */
    bool resid;
    pf_nn_cu_tensor z;
    int r_act;
    float r_act_a, r_act_b;
    cudnnTensorDescriptor_t xd, yd, bd, td;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnActivationDescriptor_t ad;
    int algo;
    size_t ws_bytes;            /* cuDNN workspace */
    bool fused;                 /* bias + relu inside cudnnConvolutionBiasActivationForward */
    /* Asymmetric pads: Conv pads its input into tmp (explicit zero rows/
     * cols, then symmetric cuDNN pads); ConvTranspose computes a larger
     * output into tmp and crops it. tmp lies at the start of the workspace. */
    bool use_tmp;
    pf_nn_cu_tensor tmp;        /* data = NULL (offset 0 of the workspace) */
    int64_t crop[2];            /* ConvTranspose: tmp start per spatial axis */
    pf_cu_pad pad;              /* Conv: input -> tmp */
    size_t tmp_bytes;
    const void *w, *b;
} pf_cux_conv;

/* Plan time: descriptors, algorithm and workspace for node `node` with the
 * resolved x/y tensors. */
pf_status pf_cux_conv_prepare(pf_cux_ctx *c, const pf_ir_graph *g, int node,
                              const pf_nn_cu_tensor *x, const pf_nn_cu_tensor *y,
                              pf_cux_conv *cv);
pf_status pf_cux_conv_run(pf_cux_ctx *c, const pf_ir_graph *g, int node, pf_cux_conv *cv,
                          const pf_nn_cu_tensor *x, const pf_nn_cu_tensor *y, void *ws,
                          cudaStream_t s);
void pf_cux_conv_release(pf_cux_conv *cv);
/* The kernel family a prepared conv runs ("Conv/dw", "Conv/cudnn-precomp"...),
 * a static string for profiles. */
const char *pf_cux_conv_path(const pf_cux_conv *cv);
/* Whether a prepared conv can absorb a following Add (+ act) through
 * cudnnConvolutionBiasActivationForward's z input: cuDNN path, bias,
 * no activation of its own, and an Add activation cuDNN fuses with the
 * chosen algorithm. */
bool pf_cux_conv_can_residual(const pf_cux_conv *cv, const pf_ir_graph *g, int node,
                              pf_ir_act add_act);
/* Makes the conv compute act(conv + bias + z); z->data is set by the caller
 * once memory exists. Only after pf_cux_conv_can_residual said yes. */
pf_status pf_cux_conv_set_residual(pf_cux_ctx *c, const pf_ir_graph *g, int node,
                                   pf_cux_conv *cv, const pf_nn_cu_tensor *z, pf_ir_act add_act,
                                   float act_a, float act_b);

typedef struct pf_cux_gemm {
    bool matmul;
    int64_t m, n, k, batch;
    int64_t stride_a, stride_b, stride_y; /* elements; 0 = broadcast */
    bool trans_a, trans_b;
    int64_t lda, ldb;
    float alpha, beta;
} pf_cux_gemm;

pf_status pf_cux_gemm_prepare(pf_cux_ctx *c, const pf_ir_graph *g, int node,
                              const pf_nn_cu_tensor *in, const pf_nn_cu_tensor *y,
                              pf_cux_gemm *gm);
pf_status pf_cux_gemm_run(pf_cux_ctx *c, const pf_ir_graph *g, int node, const pf_cux_gemm *gm,
                          const pf_nn_cu_tensor *in, const pf_nn_cu_tensor *y, cudaStream_t s);

/* "node 3 'conv1' (Conv)" without depending on pf_ir_node_desc. */
const char *pf_cux_desc(const pf_ir_graph *g, int node, char *buf, size_t size);
size_t pf_cux_esz(pf_ir_dtype t);

/* qconv_exec.c: QCONV / QMATMUL steps (int8; qconv.h). The step owns mem. */
typedef struct pf_cux_qconv {
    bool matmul;
    bool ig;                    /* tensor-core implicit GEMM (else the direct kernel) */
    pf_cu_qconv p;
    pf_cu_qmm mm;
    pf_buffer *mem;             /* packed weights, scales, bias, zero points */
} pf_cux_qconv;
pf_status pf_cux_qconv_prepare(pf_cux_ctx *c, const pf_ir_graph *g, int node,
                               const pf_nn_cu_tensor *in, const pf_nn_cu_tensor *out,
                               pf_cux_qconv *q);
pf_status pf_cux_qconv_run(const pf_ir_graph *g, int node, pf_cux_qconv *q,
                           const pf_nn_cu_tensor *in, const pf_nn_cu_tensor *out, cudaStream_t s);
const char *pf_cux_qconv_path(const pf_cux_qconv *q);
void pf_cux_qconv_release(pf_cux_qconv *q);

#endif
