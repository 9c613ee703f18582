/* Private: the post-training quantizer's parts (pf_model_quantize in
 * quantize.c; calibration statistics in calib.c; calibration images and
 * observed runs in calib_run.c; Q/DQ insertion in quantize_qdq.c).
 *
 * Flow: the model's graph is lowered to ONNX nodes (onnx_writer.h); the
 * Q/DQ planner lists the activation tensors to quantize (inputs of
 * Conv/ConvTranspose/Gemm/MatMul and of residual Adds); calibration runs the
 * FP32 model over the images observing exactly those tensors (exec_observe.h)
 * and reduces each to an amax; the inserter adds Q/DQ pairs with scale =
 * amax / 127 and per-channel int8 weights, and the writer serialises. */
#ifndef PF_NN_QUANTIZE_H
#define PF_NN_QUANTIZE_H

#include <stdint.h>

#include "onnx_writer.h"
#include "pixflow/nn.h"
#include "pixflow/ops.h"

PF_BEGIN_DECLS

#define PF_CALIB_BINS 2048

/* One observed tensor. Pass 1 (every method) tracks min/max; pass 2
 * (percentile, entropy) fills a histogram of |x| over [0, absmax of pass 1]
 * with PF_CALIB_BINS bins (TensorRT's layout: bin 0 starts at 0). */
typedef struct pf_calib_tensor {
    char *name;
    double min, max;
    int64_t count;
    uint64_t *hist;           /* PF_CALIB_BINS counts, pass 2 */
    double hist_max;          /* the histogram's upper edge */
    double amax;              /* the result */
} pf_calib_tensor;

typedef struct pf_calib {
    pf_calib_tensor *t;
    int n;
    int pass;                 /* 1 or 2 */
} pf_calib;

pf_status pf_calib_init(pf_calib *c, const char *const *names, int n);
void pf_calib_free(pf_calib *c);
pf_calib_tensor *pf_calib_find(pf_calib *c, const char *name);
/* Adds n values to t for the current pass. */
void pf_calib_observe(pf_calib *c, pf_calib_tensor *t, const float *x, int64_t n);
/* Makes the histograms for pass 2 (after pass 1 saw every image). */
pf_status pf_calib_begin_histograms(pf_calib *c);
/* amax of each tensor by `method` (percentile in (0, 100]). */
void pf_calib_finish(pf_calib *c, pf_quant_method method, double percentile);
/* The reductions on one histogram (exposed for the tests): the amax whose
 * cumulative share of |x| reaches `percentile`, and TensorRT's entropy
 * threshold (bins >= 128; edges at i * width). */
double pf_calib_percentile_amax(const uint64_t *hist, int bins, double width, double percentile);
double pf_calib_entropy_amax(const uint64_t *hist, int bins, double width);

/* Calibration images: the paths under `arg` (pf_expand_input), the first
 * `count` (0 = all). PF_ERR_INVALID naming arg when there are none. */
typedef struct pf_calib_images {
    char **paths;
    int n;
} pf_calib_images;
pf_status pf_calib_images_list(const char *arg, int count, pf_calib_images *out);
void pf_calib_images_free(pf_calib_images *im);

/* One image as the model's input tensor (host F32, batch 1), see
 * pf_quant_params for the preprocessing. `ops` is a CPU ops context. */
typedef struct pf_calib_input {
    int ndim;
    int64_t shape[4];         /* batch 1 */
    pf_layout layout;
    float scale, mean[3], std[3];
} pf_calib_input;
pf_status pf_calib_input_for(const pf_model *m, const pf_quant_params *p, pf_calib_input *out,
                             char *norm, size_t norm_size);
pf_status pf_calib_load_image(pf_ops *ops, const pf_calib_input *in, const char *path,
                              pf_tensor *out);
pf_status pf_calib_ops_create(pf_ops **ops, pf_stream **stream);

/* Runs the calibration passes over the images (the method decides whether a
 * second, histogram pass runs) and leaves the amax of each tensor in c. */
pf_status pf_calib_run(pf_model *m, const pf_quant_params *p, const pf_calib_images *im,
                       pf_calib *c);

/* Q/DQ: the activation tensors the plan wants (names owned by w), and the
 * insertion once their amax is known. */
typedef struct pf_qdq_plan {
    char **acts;              /* activation tensors to quantize */
    int n_acts;
    int nodes, residual_adds;
    int left_float;           /* convs on 1x1 maps kept float (quantize_qdq.c) */
} pf_qdq_plan;
pf_status pf_qdq_plan_make(const pf_onnx_wmodel *w, pf_qdq_plan *out);
void pf_qdq_plan_free(pf_qdq_plan *p);
pf_status pf_qdq_insert(pf_onnx_wmodel *w, const pf_qdq_plan *plan, const pf_calib *c,
                        bool simulate, int *weights);

PF_END_DECLS

#endif
