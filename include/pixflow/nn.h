/* pixflow/nn.h - neural-network inference: ONNX and TFLite models on the CPU
 * and CUDA backends.
 *
 *   pf_model *m = NULL;
 *   if (pf_model_load("selfie_segmentation.tflite", &m) != PF_OK) die(pf_last_error());
 *   pf_model_io in = pf_model_input(m, 0), out = pf_model_output(m, 0);
 *
 *   pf_nn_exec_params p = pf_nn_exec_params_default();
 *   p.device = dev;                 // pf_device_select("cuda:0", &dev)
 *   p.precision = PF_NN_FP16;       // tensor cores; PF_NN_FP32 for exact work
 *   p.max_batch = 8;
 *   pf_nn_exec *x = NULL;
 *   pf_nn_exec_create(m, &p, &x);
 *
 *   pf_tensor input = ..., output = ...;  // on dev, shapes with batch <= 8
 *   pf_nn_exec_run(x, stream, &input, 1, &output, 1);   // async on `stream`
 *   pf_stream_synchronize(stream);
 *   pf_nn_exec_destroy(&x);
 *   pf_model_free(&m);
 *
 * Models. pf_model_load() reads .onnx (ONNX opsets 7..17) and .tflite
 * (schema 3, fp32 and fp16 weights, MediaPipe's Convolution2DTransposeBias);
 * the format is decided by content, not by name. Loading validates the whole
 * file, converts it to pixflow's graph IR (ONNX semantics), infers shapes and
 * runs the graph passes (constant folding, batch-norm folding, activation
 * fusion, dead-node removal). A model is immutable afterwards and may be
 * shared by several executors and threads.
 *
 * Shapes. A model input may have a symbolic batch dimension (ONNX dim_param,
 * TFLite shape_signature -1); it is reported as -1. TFLite files that fix
 * the batch at 1 without a signature (MediaPipe's) are made batchable at
 * load when they allow it: if every input has dim 0 == 1, the graph is
 * imported again with that 1 symbolic (RESHAPE targets starting with 1 copy
 * dim 0 instead) and kept only if it specialises at batch 2 and 3 with dim
 * 0 of every output equal to the batch; such a model then reports -1 too
 * and runs any batch 1..max_batch. Otherwise it keeps its fixed batch of 1.
 * TFLite models keep their NHWC input/output shapes; ONNX models their NCHW
 * ones.
 *
 * Executors. An executor binds a model to a device and a precision and owns
 * everything a run needs: a plan per batch size (built on first use, or all up
 * front with pf_nn_exec_reserve; on CUDA only powers of two up to max_batch
 * are planned and a run of n frames uses the next one, padded inside the
 * executor, so a dynamic batcher's many sizes cost few plans), one memory arena sized by liveness planning,
 * weights on the device, and on CUDA a captured CUDA graph per batch size.
 * Runs take tensors that are already where the executor's device can read
 * them (host for the CPU, device memory for CUDA): nothing is copied behind
 * the caller's back. Input tensors are F32 or F16 (converted on the device
 * inside the run); outputs are written in the dtype of the caller's tensor
 * (F32 or F16). Integer inputs/outputs (I32) are accepted where the model's
 * tensor is integer. Every tensor must be contiguous with the model's shape
 * except the batch dimension, which may be 1..max_batch (all inputs the
 * same).
 *
 * Threads: one executor runs on one thread at a time; several executors of
 * one model (e.g. one per stream) run concurrently.
 */
#ifndef PIXFLOW_NN_H
#define PIXFLOW_NN_H

#include <stdbool.h>
#include <stdint.h>

#include "device.h"
#include "tensor.h"
#include "thread.h"

PF_BEGIN_DECLS

typedef struct pf_model pf_model;
typedef struct pf_nn_exec pf_nn_exec;

#define PF_NN_MAX_DIMS 8

typedef enum pf_model_format { PF_MODEL_ONNX = 1, PF_MODEL_TFLITE = 2 } pf_model_format;

/* One model input or output. dtype is the model's element type mapped to
 * pf_dtype (F32 for float models; I32 for integer tensors, I64 ones included:
 * pixflow exchanges I64 as I32 and refuses values outside its range). */
typedef struct pf_model_io {
    const char *name;       /* valid while the model lives */
    pf_dtype dtype;
    int ndim;
    int64_t shape[PF_NN_MAX_DIMS]; /* -1 = symbolic batch (also for batch-1 TFLite
                                    * files made batchable at load, see Shapes) */
    pf_layout layout;       /* NCHW/NHWC when the loader knows (4D image tensors), else NONE */
} pf_model_io;

/* Loads and prepares a model. Errors: PF_ERR_IO (unreadable), PF_ERR_FORMAT
 * (corrupt; the message names the file, node and value), PF_ERR_UNSUPPORTED
 * (valid but unsupported: an op, attribute or dtype, named), PF_ERR_NOMEM. */
PF_API pf_status pf_model_load(const char *path, pf_model **out);
/* The same from memory; `data` is copied. `name` (NULL: "<memory>") appears
 * in messages. */
PF_API pf_status pf_model_load_memory(const void *data, size_t size, const char *name,
                                      pf_model **out);
/* NULL-safe; sets *m = NULL. Executors keep their own reference: a model
 * freed while executors live is released by the last of them. */
PF_API void pf_model_free(pf_model **m);

PF_API pf_model_format pf_model_get_format(const pf_model *m);
PF_API int pf_model_num_inputs(const pf_model *m);
PF_API int pf_model_num_outputs(const pf_model *m);
/* i in range, else a zeroed struct with name "". */
PF_API pf_model_io pf_model_input(const pf_model *m, int i);
PF_API pf_model_io pf_model_output(const pf_model *m, int i);
/* Index of the input/output with that name, or -1. */
PF_API int pf_model_find_input(const pf_model *m, const char *name);
PF_API int pf_model_find_output(const pf_model *m, const char *name);

/* Shape-giving inputs. pixflow plans with concrete shapes, so operands that
 * decide a shape or an attribute (Reshape's shape, Slice's starts/ends/axes/
 * steps, Resize's scales/sizes, Pad's pads, Clip's bounds, Tile's repeats,
 * Expand's shape, Split's sizes, ReduceX's axes, ConstantOfShape's shape)
 * must be constants of the model. A model that takes such an operand as a
 * graph input loads, but its executors refuse to plan (PF_ERR_UNSUPPORTED
 * naming the node) until the input is frozen to a value.
 *
 * pf_model_input_needs_value() is true when input i is consumed directly as
 * such an operand. pf_model_freeze_inputs() makes a new model (m is
 * unchanged) in which each named input is the constant `values[k]` (host,
 * contiguous, shape equal to the input's with a symbolic batch dim taken
 * from the value; dtype per the input as in pf_model_io: F32/F16 for float
 * inputs, I32 for integer ones (widened back to I64 where the model has
 * I64), U8 for U8/bool). The frozen inputs leave the input list; the graph
 * passes run again, so everything computed from them folds. Errors:
 * PF_ERR_INVALID naming the input and the mismatching dim or dtype. */
PF_API bool pf_model_input_needs_value(const pf_model *m, int i);
PF_API pf_status pf_model_freeze_inputs(const pf_model *m, int n, const char *const *names,
                                        const pf_tensor *values, pf_model **out);

/* Summary for `pixflow model inspect` (batch 1 where symbolic). */
#define PF_MODEL_MAX_OP_KINDS 96
typedef struct pf_model_summary {
    const char *format;          /* "onnx" / "tflite" */
    int opset;                   /* ONNX opset (0 for TFLite) */
    int n_nodes_source;          /* nodes/operators in the file */
    int n_nodes;                 /* IR nodes after the passes */
    int64_t n_params;            /* elements of float constants (weights) */
    double flops;                /* per batch of 1, 2 x MACs for conv/gemm */
    size_t arena_bytes;          /* CPU fp32 arena for batch 1 (peak intermediates) */
    size_t naive_bytes;          /* the same without reuse */
    int folded, bn_folded, act_fused, removed; /* pass report */
    int n_op_kinds;
    struct { const char *op; int count; } ops[PF_MODEL_MAX_OP_KINDS]; /* source op histogram */
} pf_model_summary;
PF_API pf_status pf_model_get_summary(const pf_model *m, pf_model_summary *out);

/* Executors -------------------------------------------------------------------- */

typedef enum pf_nn_precision { PF_NN_FP32 = 0, PF_NN_FP16 = 1 } pf_nn_precision;

typedef struct pf_nn_exec_params {
    pf_device *device;          /* NULL = CPU */
    pf_nn_precision precision;  /* CPU: FP32 only (FP16 -> PF_ERR_UNSUPPORTED) */
    int max_batch;              /* >= 1; default 1. Fixed-batch models: their batch */
    pf_threadpool *pool;        /* CPU: threads (NULL = the executor makes its own) */
    bool cuda_graphs;           /* CUDA: capture each batch size's run as a graph (default on) */
    bool allow_tf32;            /* CUDA FP32: allow TF32 tensor-core math (default off) */
    size_t memory_cap;          /* 0 = no cap. CUDA: device bytes for weights + arenas;
                                   CPU: host bytes of one plan's arena + scratch + I/O
                                   staging (over it: PF_ERR_NOMEM naming the sizes) */
    bool plan_cache;            /* CUDA: read and write plan-time tuning choices in the
                                   on-disk plan cache (default on; $PIXFLOW_CACHE_DIR,
                                   else $XDG_CACHE_HOME/pixflow or ~/.cache/pixflow;
                                   PIXFLOW_CACHE_DIR=off disables it everywhere) */
} pf_nn_exec_params;

PF_API pf_nn_exec_params pf_nn_exec_params_default(void);
PF_API pf_status pf_nn_exec_create(pf_model *m, const pf_nn_exec_params *p, pf_nn_exec **out);
PF_API void pf_nn_exec_destroy(pf_nn_exec **x);
/* Builds the plans (and CUDA graphs) of every batch size in [1, max_batch]
 * now, so no run pays for planning. Optional. */
PF_API pf_status pf_nn_exec_reserve(pf_nn_exec *x);
/* Builds the plan a run of `batch` rows uses (on CUDA: its power-of-two
 * bucket), now. A CUDA run of n rows whose bucket has no plan yet, while a
 * larger bucket has one, is padded into the smallest such plan, until that
 * bucket was wanted 4 times and gets its own: reserving max_batch alone
 * lets a throughput pipeline plan once while the rare partial batches (a
 * decoder starting, the end of a file) cost no plan in the middle of the
 * run. PF_ERR_INVALID: batch outside 1..max_batch. */
PF_API pf_status pf_nn_exec_reserve_batch(pf_nn_exec *x, int batch);

/* Loads what the first executor of a model in this process would load on
 * its first plan and run: on CUDA the cuDNN/cuBLAS libraries and the GPU
 * code (kernel modules) its plan uses, by planning `batch` and running it
 * once on zeros with a throwaway executor (p's device, precision, max_batch
 * >= batch), which is then destroyed (its device memory returned). Takes
 * ~0.2-0.3 s for the selfie model on an H200 with a warm plan cache; a job
 * calls it on a thread while it probes its inputs, so the executor it
 * creates next plans in ~10-25 ms and its first run does not load code.
 * On the CPU it returns PF_OK at once. Thread-safe with other executors. */
PF_API pf_status pf_nn_warmup(pf_model *m, const pf_nn_exec_params *p, int batch);

/* Runs the model on `stream` (NULL = the executor's own stream; on the CPU
 * the run is synchronous whatever the stream). inputs/outputs in model order,
 * n_in/n_out equal to the model's counts. On CUDA the call returns once the
 * work is queued; the outputs are ready when the stream reaches that point.
 * Errors: PF_ERR_INVALID naming the tensor and the mismatching dim or dtype. */
PF_API pf_status pf_nn_exec_run(pf_nn_exec *x, pf_stream *stream, const pf_tensor *inputs,
                                int n_in, pf_tensor *outputs, int n_out);

typedef struct pf_nn_exec_stats {
    int64_t runs;
    int plans;                  /* batch sizes planned so far */
    int graphs;                 /* CUDA graphs captured */
    size_t weight_bytes;        /* on the device */
    size_t arena_bytes;         /* largest arena */
    double last_run_ms;         /* CPU: wall time; CUDA: events around the last run
                                 * (read after the stream has passed it) */
    int convs_tuned;            /* CUDA: conv choices timed at plan time */
    int convs_cached;           /* CUDA: conv choices read from the plan cache */
} pf_nn_exec_stats;
PF_API pf_status pf_nn_exec_get_stats(pf_nn_exec *x, pf_nn_exec_stats *out);

/* Per-node timings for profiling: runs once at `batch` without graphs,
 * timing every IR node (events on CUDA), and fills up to `cap` entries.
 * *n receives the node count. Names are valid while the executor lives. */
typedef struct pf_nn_node_time {
    const char *name;
    const char *op;
    double ms;
} pf_nn_node_time;
PF_API pf_status pf_nn_exec_profile(pf_nn_exec *x, int batch, pf_nn_node_time *times, int cap,
                                    int *n);

/* Post-training quantization (docs/quantize.md) --------------------------------
 *
 *   pf_quant_params q = pf_quant_params_default();
 *   q.calib = "frames/";                 // a directory, a glob or one PNG/JPEG
 *   q.method = PF_QUANT_ENTROPY;
 *   pf_quant_report r;
 *   if (pf_model_quantize(m, &q, "model_int8.onnx", &r) != PF_OK) die(pf_last_error());
 *
 * pf_model_quantize runs the FP32 model on the CPU over the calibration
 * images, records the range of every tensor that feeds a quantized op and
 * writes a standard QDQ ONNX file (opset 17): weights of Conv,
 * ConvTranspose, Gemm and MatMul as int8 with one symmetric scale per output
 * channel (max |w| / 127, zero point 0) behind a DequantizeLinear;
 * QuantizeLinear -> DequantizeLinear pairs (per-tensor, symmetric int8, zero
 * point 0) on the activations entering those ops and on the inputs of
 * residual Adds (TensorRT's placement, so an int8 engine can fuse the add
 * into the conv); biases stay float (the runtime requantizes them; see
 * docs/quantize.md for why). The ranges: PF_QUANT_MINMAX max |x| seen;
 * PF_QUANT_PERCENTILE the `percentile` of |x| over a 2048-bin histogram;
 * PF_QUANT_ENTROPY the threshold minimising the KL divergence between the
 * clipped and the 128-level quantized histograms (TensorRT's calibrator).
 *
 * Images are preprocessed as the model expects: resized to the input's
 * H x W (bilinear, no letterbox), RGB, in the input's layout (NCHW or NHWC
 * from the model), value = (pixel * scale - mean[c]) / std[c] with pixel in
 * 0..255. With norm_set false the values come from the model
 * (pf_quant_norm_default): TFLite models [0, 1] (MediaPipe selfie), TFLite
 * face detectors [-1, 1], ONNX models torchvision's ImageNet mean/std. The
 * model must have one 4-D float input with 3 channels.
 *
 * simulate writes the same quantization as float ONNX ops instead of Q/DQ
 * (x -> Div(scale) -> Round -> Clip(-128, 127) -> Mul(scale); weights as
 * their dequantized float values): a model any FP32 runtime (pixflow
 * included) runs with the int8 rounding errors, for accuracy studies.
 *
 * Errors: PF_ERR_INVALID (no images under calib, a bad param, named),
 * PF_ERR_IO / PF_ERR_FORMAT (an image that cannot be read, named),
 * PF_ERR_UNSUPPORTED (a model without one 3-channel image input, or an op
 * the ONNX writer cannot express, named). Not thread-safe for one model's
 * executors; `progress` is called from the calling thread. */
typedef enum pf_quant_method {
    PF_QUANT_MINMAX = 0, PF_QUANT_PERCENTILE, PF_QUANT_ENTROPY
} pf_quant_method;

typedef struct pf_quant_params {
    const char *calib;          /* images: DIR, glob or file (required) */
    int calib_count;            /* at most this many images (the first, sorted); 0 = all */
    pf_quant_method method;     /* default PF_QUANT_PERCENTILE */
    double percentile;          /* (0, 100], default 99.99 */
    bool norm_set;              /* false: pf_quant_norm_default's values */
    float scale, mean[3], std[3]; /* value = (pixel * scale - mean[c]) / std[c] */
    bool simulate;              /* float "fake quant" ops instead of Q/DQ (see above) */
    const char *simulated_copy; /* also write the simulated form here, from the same
                                   calibration (NULL = no); ignored with simulate */
    void (*progress)(void *user, int done, int total); /* per image, may be NULL */
    void *user;
} pf_quant_params;

typedef struct pf_quant_report {
    int images;                 /* calibration images used */
    int weights;                /* weight tensors quantized per channel */
    int activations;            /* activation tensors given a Q/DQ pair */
    int nodes;                  /* Conv/ConvTranspose/Gemm/MatMul nodes quantized */
    int residual_adds;          /* Adds whose inputs were quantized */
    int left_float;             /* convs on a 1x1 map (squeeze-excitation) kept float */
    double calib_s, total_s;    /* wall time of calibration and of the whole call */
    char norm[128];             /* the preprocessing used, in words */
} pf_quant_report;

PF_API pf_quant_params pf_quant_params_default(void);
/* The model's default preprocessing (see above); *preset names it
 * ("[0,1]", "[-1,1]", "imagenet"). */
PF_API void pf_quant_norm_default(const pf_model *m, float *scale, float mean[3], float std[3],
                                  const char **preset);
/* out_path is written atomically (PATH.tmp, renamed). r may be NULL. */
PF_API pf_status pf_model_quantize(pf_model *m, const pf_quant_params *p, const char *out_path,
                                   pf_quant_report *r);
/* Writes the loaded (optimised) model as ONNX, opset 17: a TFLite model
 * becomes its ONNX equivalent. Errors: as pf_model_quantize's. */
PF_API pf_status pf_model_save_onnx(const pf_model *m, const char *path);

/* Accuracy of a model against a reference on the same images (the
 * calibration images' preprocessing: p->calib names them, p->calib_count,
 * norm_set/scale/mean/std as above; method and simulate are ignored). Per
 * output: max and mean |test - ref|; for segmentation outputs (4-D, H and W
 * >= 8) the pixel agreement of the two label maps and their IoU: argmax over
 * the channels (mIoU over the classes either map uses) or, for 1 channel,
 * mask > 0.5 (IoU of the masks). Both models need the same I/O shapes. */
#define PF_QUANT_MAX_OUTPUTS 8
typedef struct pf_quant_compare {
    int images;
    int n_outputs;
    struct {
        char name[128];
        double max_abs, mean_abs;
        bool segmentation;
        int classes;            /* channels (1 = a sigmoid mask) */
        double agreement;       /* fraction of pixels with the same label */
        double miou;            /* mean IoU over classes (1 channel: mask IoU) */
    } outputs[PF_QUANT_MAX_OUTPUTS];
} pf_quant_compare;
PF_API pf_status pf_model_compare(pf_model *ref, pf_model *test, const pf_quant_params *p,
                                  pf_quant_compare *out);

/* Run-time libraries --------------------------------------------------------- */

/* A library the nn executors load at run time instead of linking it. A
 * CUDA build loads cuDNN and cuBLAS (with cuBLASLt) only when the CUDA
 * executor is first made, so libpixflow loads and runs on the CPU where they
 * are absent; the CUDA executor then fails with PF_ERR_UNSUPPORTED naming
 * the missing library. */
typedef struct pf_nn_library {
    const char *name;       /* "cuDNN", "cuBLAS", "cuBLASLt" (static storage) */
    const char *soname;     /* the file looked for, e.g. "libcudnn.so.9" (static storage) */
    bool loaded;            /* found, with every function pixflow uses */
    char version[32];       /* the loaded library's own version ("9.14.0"), else "" */
    char path[256];         /* where it was loaded from, else "" */
    char detail[256];       /* why it is not usable, else "" */
} pf_nn_library;

/* Fills up to `cap` entries of `out` (may be NULL with cap 0) and returns
 * how many libraries this build loads at run time (0 without CUDA). Loads
 * them on the first call (tens of milliseconds). Thread-safe. */
PF_API int pf_nn_libraries(pf_nn_library *out, int cap);

/* Test data ------------------------------------------------------------------ */

/* Reads an ONNX TensorProto file (the conformance cases' input_k.pb and
 * output_k.pb) into a new contiguous host tensor in the pf_dtype pixflow
 * exchanges for it: FLOAT -> F32, FLOAT16 -> F16, DOUBLE -> F32 (rounded),
 * INT64/INT32/INT16/INT8/UINT16/UINT32/UINT64 -> I32 (every value must fit:
 * else PF_ERR_UNSUPPORTED naming the file and the element), UINT8/BOOL -> U8.
 * Integer results are exact, so comparisons of them are by value. `name`
 * (may be NULL) receives the TensorProto's name ("" when unnamed), cut to
 * name_size - 1 bytes. *out is overwritten (not unref'd first); on failure
 * it is left empty. Errors: PF_ERR_IO, PF_ERR_FORMAT (the file's fault,
 * named), PF_ERR_UNSUPPORTED (STRING/complex tensors, or a build without
 * the ONNX reader). Thread-safe. */
PF_API pf_status pf_nn_read_onnx_tensor(const char *path, pf_tensor *out, char *name,
                                        size_t name_size);

PF_END_DECLS

#endif
