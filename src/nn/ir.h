/* Private: the nn module's graph IR.
 *
 * Both loaders (ONNX, TFLite) build a pf_ir_graph; passes rewrite it; the
 * executors (src/nn/cpu, src/nn/cuda) run it. The flow of one model:
 *
 *   pf_ir_graph *g;                       // import: symbolic batch allowed
 *   pf_ir_from_onnx(onnx_model, &g);      //   or pf_ir_from_tflite()
 *   pf_ir_graph *s;                       // per batch size, executors do:
 *   pf_ir_specialize(g, batch, &s);       //   copy with every shape concrete
 *   pf_ir_optimize(s, &opt);              //   fold, fuse, dead-node removal
 *   pf_ir_plan_memory(s, align, &plan);   //   arena offsets by liveness
 *
 * Semantics are ONNX's (opset 17) for every op, whatever the source format:
 * the TFLite importer wraps NHWC graphs in explicit TRANSPOSE nodes at the
 * inputs/outputs and converts weights to ONNX layouts (conv weights
 * [O, I/g, kh, kw]) so that every executor sees one set of rules. Layout
 * choice (NHWC on tensor cores) is an executor decision, not an IR one.
 *
 * Values are tensors with a dtype and a shape. A dimension is >= 0, or
 * PF_IR_DIM_BATCH (-1) for the symbolic batch dimension before
 * specialisation (only graph inputs and values whose shape depends on them;
 * after pf_ir_specialize() no value has one). Constants (initializers,
 * folded values) carry host data, contiguous, row-major, little-endian.
 *
 * Ownership: the graph owns every value, node, name and constant buffer.
 * Indices (value ids, node ids) are stable until a pass runs
 * pf_ir_compact(). Not thread-safe; a finished graph may be read by several
 * threads at once.
 */
#ifndef PF_NN_IR_H
#define PF_NN_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pixflow/core.h"

PF_BEGIN_DECLS

#define PF_IR_MAX_RANK 8
#define PF_IR_MAX_INPUTS 16   /* per node (Concat/Sum/Max with more are refused at import) */
#define PF_IR_MAX_OUTPUTS 4
#define PF_IR_DIM_BATCH (-1)

typedef enum pf_ir_dtype {
    PF_IR_F32 = 0,
    PF_IR_F16,
    PF_IR_I64,
    PF_IR_I32,
    PF_IR_U8,
    PF_IR_I8,
    PF_IR_BOOL, /* one byte, 0 or 1 */
    PF_IR_F64,
    PF_IR_DTYPE_COUNT
} pf_ir_dtype;

size_t pf_ir_dtype_size(pf_ir_dtype t);
const char *pf_ir_dtype_name(pf_ir_dtype t);

/* Ops. Each comment lists inputs (? = optional, may be -1), outputs and the
 * attribute struct used. Unless stated, float ops compute in f32 (the CPU
 * executor supports F32 for float math; shape/index ops also I64/I32/BOOL/U8). */
typedef enum pf_ir_op {
    PF_IR_OP_INVALID = 0,
    /* Convolutions (attr conv). */
    PF_IR_CONV,           /* X[N,C,(H,)W], W[M,C/g,(kh,)kw], B?[M] -> Y. 1D and 2D. */
    PF_IR_CONV_TRANSPOSE, /* X, W[C, M/g, (kh,)kw], B?[M] -> Y */
    /* Normalisation (attr bn). */
    PF_IR_BATCHNORM,      /* X, scale[C], bias[C], mean[C], var[C] -> Y */
    /* Unary elementwise (attr unary: alpha, beta where the op has them). */
    PF_IR_RELU, PF_IR_SIGMOID, PF_IR_TANH, PF_IR_HARD_SIGMOID /* max(0,min(1,a*x+b)) */,
    PF_IR_HARD_SWISH, PF_IR_LEAKY_RELU /* alpha */, PF_IR_CLIP /* alpha=min beta=max */,
    PF_IR_ELU /* alpha */, PF_IR_SELU /* alpha, beta=gamma */, PF_IR_SOFTPLUS, PF_IR_SOFTSIGN,
    PF_IR_ABS, PF_IR_NEG, PF_IR_EXP, PF_IR_LOG, PF_IR_SQRT, PF_IR_RECIPROCAL, PF_IR_FLOOR,
    PF_IR_CEIL, PF_IR_ROUND, PF_IR_ERF, PF_IR_SIN, PF_IR_COS, PF_IR_NOT, PF_IR_SIGN,
    PF_IR_IDENTITY,       /* also Dropout in inference */
    PF_IR_CAST,           /* attr cast.to */
    /* Binary elementwise with numpy broadcasting (no attr; fused act in node->act). */
    PF_IR_ADD, PF_IR_SUB, PF_IR_MUL, PF_IR_DIV, PF_IR_POW, PF_IR_MAX, PF_IR_MIN, PF_IR_MOD,
    PF_IR_PRELU,          /* X, slope (unidirectional broadcast to X) */
    PF_IR_EQUAL, PF_IR_LESS, PF_IR_GREATER, PF_IR_LESS_OR_EQUAL, PF_IR_GREATER_OR_EQUAL,
    PF_IR_AND, PF_IR_OR, PF_IR_XOR,  /* comparisons/logic output BOOL */
    PF_IR_WHERE,          /* cond(BOOL), X, Y -> broadcast select */
    PF_IR_SUM, PF_IR_MEAN_N, /* variadic Sum/Mean of ONNX, broadcasting (importer may
                             * also lower Max/Min with >2 inputs to chains) */
    /* Shape and data movement. */
    PF_IR_CONCAT,         /* inputs... -> Y; attr axis.axis */
    PF_IR_RESHAPE,        /* X -> Y; the output shape is the value's shape (resolved by
                           * shape inference from attr reshape); Flatten, Squeeze,
                           * Unsqueeze and Reshape all become this op */
    PF_IR_TRANSPOSE,      /* attr transpose.perm */
    PF_IR_SLICE,          /* attr slice (starts/ends/axes/steps resolved, per axis) */
    PF_IR_PAD,            /* attr pad */
    PF_IR_GATHER,         /* data, indices(I64/I32) -> Y; attr axis.axis */
    PF_IR_EXPAND,         /* X -> Y (numpy broadcast to the value's shape) */
    PF_IR_TILE,           /* attr tile.repeats */
    PF_IR_SHAPE,          /* X -> I64[r] (attr slice.starts[0]/ends[0] = start/end);
                           * always folded once shapes are known */
    PF_IR_CONSTANT_OF_SHAPE, /* shape(I64) -> Y filled with attr fill (folded) */
    PF_IR_SPLIT,          /* X -> Y0..Yk along attr split.axis with attr split.sizes */
    PF_IR_DEPTH_TO_SPACE, PF_IR_SPACE_TO_DEPTH, /* attr d2s */
    /* Resampling (attr resize): output shape is the value's shape. */
    PF_IR_RESIZE,
    /* Pooling (attr pool). */
    PF_IR_MAXPOOL, PF_IR_AVGPOOL, PF_IR_GLOBAL_AVGPOOL, PF_IR_GLOBAL_MAXPOOL,
    /* Reductions (attr reduce). */
    PF_IR_REDUCE_MEAN, PF_IR_REDUCE_SUM, PF_IR_REDUCE_MAX, PF_IR_REDUCE_MIN,
    PF_IR_REDUCE_PROD, PF_IR_REDUCE_L2, PF_IR_REDUCE_SUM_SQUARE,
    PF_IR_ARGMAX, PF_IR_ARGMIN, /* attr reduce (axes[0], keepdims, select_last) -> I64 */
    PF_IR_SOFTMAX, PF_IR_LOG_SOFTMAX, /* attr axis (axis, legacy = opset < 13 2D coercion) */
    /* Linear algebra. */
    PF_IR_GEMM,           /* A, B, C? -> Y; attr gemm */
    PF_IR_MATMUL,         /* A, B -> Y, numpy matmul broadcasting */
    /* Quantization (ONNX semantics; see docs/int8.md). Scales are F32, zero
     * points U8 or I8 (the quantized tensor's dtype). "per-tensor" = a scalar
     * or one-element scale; "per-axis" = 1-D [dim(axis)] with attr axis.axis
     * (normalised to >= 0 by shape inference). Rounding is half to even,
     * results saturate to the output type's range. */
    PF_IR_QUANTIZE_LINEAR,   /* X(F32/I32), scale, zp? -> Y(zp's dtype, U8 when absent):
                              * saturate(round(x / scale) + zp); attr axis */
    PF_IR_DEQUANTIZE_LINEAR, /* X(U8/I8/I32), scale, zp? -> Y(F32) = (x - zp) * scale;
                              * attr axis */
    PF_IR_QLINEAR_CONV,      /* x, x_scale, x_zp, w, w_scale([M] or scalar), w_zp, y_scale,
                              * y_zp, B?(I32[M]) -> y(y_zp's dtype); attr conv */
    PF_IR_QLINEAR_MATMUL,    /* a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp -> y;
                              * scales/zps per tensor, b's also per column [N] */
    PF_IR_CONV_INTEGER,      /* x, w, x_zp?, w_zp?([M] or scalar) -> Y(I32); attr conv */
    PF_IR_MATMUL_INTEGER,    /* A, B, a_zp?, b_zp?([N] or scalar) -> Y(I32) */
    /* Fused INT8 convolution, made by pf_ir_fuse_quant() from
     * DQ(x) -> Conv(DQ(w), bias) [-> Add(DQ(r) or r)] [-> act] [-> Q]:
     *   0 x(U8/I8), 1 x_scale (scalar), 2 x_zp (scalar), 3 w(I8, const,
     *   [M, C/g, kh, kw]), 4 w_scale (scalar or [M]), 5 w_zp? (scalar or [M]),
     *   6 bias?(F32 [M]), 7 y_scale? (absent: Y is F32), 8 y_zp?,
     *   9 residual? (F32, or U8/I8 with 10 r_scale, 11 r_zp), 12 m_scale?,
     *   13 m_zp? (a Q -> DQ pair between the conv and the residual Add, kept
     *   as a requantization of f), attr conv, node act:
     *   acc = sum (x - x_zp)(w - w_zp) in int32 (exact)
     *   f = acc * (x_scale * w_scale[m]) + bias[m]
     *   [f = (saturate(round(f / m_scale) + m_zp) - m_zp) * m_scale]
     *   f (+ residual) -> act
     *   Y = y_scale ? saturate(round_half_even(f / y_scale) + y_zp) : f */
    PF_IR_QCONV,
    /* Fused INT8 matmul (DQ(a) x DQ(b) [+ bias] [-> act] [-> Q]), inputs as
     * PF_IR_QCONV with w = B (I8 const [K, N], w_scale scalar or [N]), bias [N],
     * no residual; A is [..., K], Y [..., N]. */
    PF_IR_QMATMUL,
    PF_IR_OP_COUNT
} pf_ir_op;

const char *pf_ir_op_name(pf_ir_op op);

/* A fused activation applied to the node's (first) output, set by the
 * activation-fusion pass or by TFLite's fused_activation_function. Allowed on
 * CONV, CONV_TRANSPOSE, GEMM, MATMUL, BATCHNORM and the binary arithmetic ops
 * ADD, SUB, MUL, DIV. */
typedef enum pf_ir_act {
    PF_IR_ACT_NONE = 0,
    PF_IR_ACT_RELU,
    PF_IR_ACT_CLIP,        /* clamp(x, act_a, act_b) (Relu6: 0, 6) */
    PF_IR_ACT_SIGMOID,
    PF_IR_ACT_TANH,
    PF_IR_ACT_LEAKY_RELU,  /* act_a = alpha */
    PF_IR_ACT_HARD_SIGMOID,/* act_a = alpha, act_b = beta */
    PF_IR_ACT_HARD_SWISH
} pf_ir_act;
/* (QCONV and QMATMUL also carry a fused act; it runs in float before the
 * final quantization.) */

typedef enum pf_ir_auto_pad {
    PF_IR_PAD_EXPLICIT = 0, PF_IR_PAD_SAME_UPPER, PF_IR_PAD_SAME_LOWER, PF_IR_PAD_VALID
} pf_ir_auto_pad;

/* Conv, ConvTranspose: nsp spatial dims (1 or 2); arrays indexed by spatial
 * axis (0 = H for 2D, the only axis for 1D). Shape inference resolves
 * auto_pad into pads and sets auto_pad = EXPLICIT; for ConvTranspose it also
 * resolves output_shape into pads. After inference every field is final. */
typedef struct pf_ir_conv_attr {
    int nsp;
    int64_t kernel[2], stride[2], dilation[2];
    int64_t pad_begin[2], pad_end[2];
    int64_t output_padding[2];          /* ConvTranspose */
    int64_t output_shape[2];            /* ConvTranspose: 0 = not given */
    int64_t group;
    pf_ir_auto_pad auto_pad;
} pf_ir_conv_attr;

typedef struct pf_ir_pool_attr {
    int nsp;                            /* 1 or 2 */
    int64_t kernel[2], stride[2], dilation[2], pad_begin[2], pad_end[2];
    pf_ir_auto_pad auto_pad;
    bool ceil_mode;
    bool count_include_pad;             /* AveragePool */
} pf_ir_pool_attr;

typedef struct pf_ir_bn_attr { float epsilon; } pf_ir_bn_attr;
typedef struct pf_ir_unary_attr { float alpha, beta; } pf_ir_unary_attr;
typedef struct pf_ir_cast_attr { pf_ir_dtype to; } pf_ir_cast_attr;
typedef struct pf_ir_axis_attr { int64_t axis; bool legacy; } pf_ir_axis_attr;

/* Reshape family. kind says how the output shape follows from the input:
 *   RESHAPE: shape[] as ONNX Reshape (0 copies the input dim unless allowzero,
 *            -1 infers); FLATTEN: axis; SQUEEZE/UNSQUEEZE: axes[] (n_axes == 0
 *            for Squeeze = all 1-dims). Shape inference fills the output value. */
typedef enum pf_ir_reshape_kind {
    PF_IR_RESHAPE_SHAPE = 0, PF_IR_RESHAPE_FLATTEN, PF_IR_RESHAPE_SQUEEZE,
    PF_IR_RESHAPE_UNSQUEEZE
} pf_ir_reshape_kind;
typedef struct pf_ir_reshape_attr {
    pf_ir_reshape_kind kind;
    int n;                              /* entries of shape or axes */
    int64_t shape[PF_IR_MAX_RANK];      /* RESHAPE */
    int64_t axes[PF_IR_MAX_RANK];       /* SQUEEZE/UNSQUEEZE */
    int64_t axis;                       /* FLATTEN */
    bool allowzero;
} pf_ir_reshape_attr;

typedef struct pf_ir_transpose_attr { int n; int64_t perm[PF_IR_MAX_RANK]; } pf_ir_transpose_attr;

/* Slice after import: per listed axis. Shape inference clamps starts/ends to
 * the dimension as ONNX does and stores the resolved values (then
 * 0 <= start <= dim for step > 0 ...). Also used by SHAPE (start/end). */
typedef struct pf_ir_slice_attr {
    int n;
    int64_t axes[PF_IR_MAX_RANK], starts[PF_IR_MAX_RANK], ends[PF_IR_MAX_RANK],
        steps[PF_IR_MAX_RANK];
} pf_ir_slice_attr;

typedef enum pf_ir_pad_mode { PF_IR_PADMODE_CONSTANT = 0, PF_IR_PADMODE_REFLECT, PF_IR_PADMODE_EDGE } pf_ir_pad_mode;
typedef struct pf_ir_pad_attr {
    int n;                              /* rank of the input */
    int64_t begin[PF_IR_MAX_RANK], end[PF_IR_MAX_RANK]; /* may be negative (crop) */
    pf_ir_pad_mode mode;
    double value;
} pf_ir_pad_attr;

typedef struct pf_ir_tile_attr { int n; int64_t repeats[PF_IR_MAX_RANK]; } pf_ir_tile_attr;
typedef struct pf_ir_fill_attr { double value; } pf_ir_fill_attr; /* ConstantOfShape; dtype = output's */
typedef struct pf_ir_split_attr { int64_t axis; int n; int64_t sizes[PF_IR_MAX_OUTPUTS]; } pf_ir_split_attr;
typedef struct pf_ir_d2s_attr { int64_t blocksize; bool crd; /* DepthToSpace mode CRD (else DCR) */ } pf_ir_d2s_attr;

typedef enum pf_ir_resize_mode { PF_IR_RESIZE_NEAREST = 0, PF_IR_RESIZE_LINEAR } pf_ir_resize_mode;
typedef enum pf_ir_coord_mode {
    PF_IR_COORD_HALF_PIXEL = 0, PF_IR_COORD_ALIGN_CORNERS, PF_IR_COORD_ASYMMETRIC,
    PF_IR_COORD_PYTORCH_HALF_PIXEL, PF_IR_COORD_TF_HALF_PIXEL_FOR_NN
} pf_ir_coord_mode;
typedef enum pf_ir_nearest_mode {
    PF_IR_NEAREST_ROUND_PREFER_FLOOR = 0, PF_IR_NEAREST_ROUND_PREFER_CEIL, PF_IR_NEAREST_FLOOR,
    PF_IR_NEAREST_CEIL
} pf_ir_nearest_mode;
/* Resize of any rank; linear interpolates every axis whose scale != 1
 * (ONNX's "linear" = bilinear on 4D NCHW with N, C scales 1). scale[d] is the
 * ratio used for coordinate mapping (out / in, or the given scale when
 * scales were given: ONNX maps with the given scale, not out/in). */
typedef struct pf_ir_resize_attr {
    pf_ir_resize_mode mode;
    pf_ir_coord_mode coord;
    pf_ir_nearest_mode nearest;
    int n;
    double scale[PF_IR_MAX_RANK];       /* resolved by shape inference */
    bool has_scales;                    /* importer: scales given (else sizes) */
    bool exclude_outside;               /* unsupported unless false */
} pf_ir_resize_attr;

typedef struct pf_ir_reduce_attr {
    int n;                              /* 0 = all axes (unless noop_with_empty_axes) */
    int64_t axes[PF_IR_MAX_RANK];       /* normalised to >= 0 by shape inference */
    bool keepdims;
    bool noop_with_empty_axes;
    bool select_last_index;             /* ArgMax/ArgMin */
} pf_ir_reduce_attr;

typedef struct pf_ir_gemm_attr { float alpha, beta; bool trans_a, trans_b; } pf_ir_gemm_attr;

typedef union pf_ir_attr {
    pf_ir_conv_attr conv;
    pf_ir_pool_attr pool;
    pf_ir_bn_attr bn;
    pf_ir_unary_attr unary;
    pf_ir_cast_attr cast;
    pf_ir_axis_attr axis;
    pf_ir_reshape_attr reshape;
    pf_ir_transpose_attr transpose;
    pf_ir_slice_attr slice;
    pf_ir_pad_attr pad;
    pf_ir_tile_attr tile;
    pf_ir_fill_attr fill;
    pf_ir_split_attr split;
    pf_ir_d2s_attr d2s;
    pf_ir_resize_attr resize;
    pf_ir_reduce_attr reduce;
    pf_ir_gemm_attr gemm;
} pf_ir_attr;

typedef struct pf_ir_value {
    char *name;                         /* unique in the graph, never NULL */
    pf_ir_dtype dtype;
    int ndim;                           /* -1 until shape inference has run */
    int64_t dims[PF_IR_MAX_RANK];
    /* Constant data (host, contiguous) or NULL for a runtime value. */
    void *data;
    size_t nbytes;
    int producer;                       /* node id, -1 for graph inputs and constants */
    int n_uses;                         /* node inputs + graph outputs referring to it */
    bool is_input, is_output;           /* graph input / output */
} pf_ir_value;

typedef struct pf_ir_node {
    pf_ir_op op;
    char *name;                         /* never NULL; "" allowed; for messages */
    char *src_op;                       /* the source op ("Conv", "CONV_2D"), for messages */
    int n_in, n_out;
    int in[PF_IR_MAX_INPUTS];           /* value ids; -1 = absent optional input */
    int out[PF_IR_MAX_OUTPUTS];
    pf_ir_attr attr;
    pf_ir_act act;                      /* fused activation on out[0] */
    float act_a, act_b;
    bool dead;                          /* removed by a pass, dropped by pf_ir_compact */
} pf_ir_node;

typedef struct pf_ir_graph {
    char *name;                         /* model file name, for messages */
    pf_ir_value *values;
    int n_values, cap_values;
    pf_ir_node *nodes;                  /* topological order */
    int n_nodes, cap_nodes;
    int *inputs, *outputs;              /* value ids, in model order */
    int n_inputs, n_outputs;
    char *batch_symbol;                 /* the symbolic batch name ("N"), NULL if none */
    char *source_format;                /* "onnx" or "tflite" */
    int opset;                          /* ONNX default-domain opset; 0 for TFLite */
} pf_ir_graph;

/* ---- Building (ir.c) --------------------------------------------------------
 * All return PF_ERR_NOMEM on allocation failure and leave the graph valid. */
pf_status pf_ir_graph_create(const char *name, pf_ir_graph **out);
void pf_ir_graph_destroy(pf_ir_graph **g);
/* Deep copy. */
pf_status pf_ir_graph_clone(const pf_ir_graph *g, pf_ir_graph **out);
/* New runtime value (ndim -1 = unknown). Names must be unique: a duplicate
 * gives PF_ERR_FORMAT naming it. *id receives the value id. */
pf_status pf_ir_add_value(pf_ir_graph *g, const char *name, pf_ir_dtype dtype, int ndim,
                          const int64_t *dims, int *id);
/* New constant value; copies `nbytes` of `data` (must equal numel * size). */
pf_status pf_ir_add_const(pf_ir_graph *g, const char *name, pf_ir_dtype dtype, int ndim,
                          const int64_t *dims, const void *data, size_t nbytes, int *id);
/* A fresh unique name from a prefix (the graph owns the string). */
const char *pf_ir_unique_name(pf_ir_graph *g, const char *prefix);
/* Appends a node (attr copied; NULL = zeroed) and wires producer/uses.
 * in/out ids must exist; an output must not already have a producer. */
pf_status pf_ir_add_node(pf_ir_graph *g, pf_ir_op op, const char *name, const char *src_op,
                         const int *in, int n_in, const int *out, int n_out,
                         const pf_ir_attr *attr, int *node_id);
pf_status pf_ir_mark_input(pf_ir_graph *g, int value);
pf_status pf_ir_mark_output(pf_ir_graph *g, int value);
/* Recomputes producer and n_uses of every value from the live nodes. */
void pf_ir_recount(pf_ir_graph *g);
/* Drops dead nodes and values nobody uses (keeping inputs/outputs); renumbers. */
pf_status pf_ir_compact(pf_ir_graph *g);
/* Checks the invariants (ids in range, topological order, single producer,
 * arity per op); PF_ERR_FORMAT with the node named. */
pf_status pf_ir_validate(const pf_ir_graph *g);

/* Elements of a value (1 for a scalar); -1 when a dim is unknown/symbolic or
 * the product overflows. */
int64_t pf_ir_value_numel(const pf_ir_value *v);
size_t pf_ir_value_nbytes(const pf_ir_value *v);
/* "node 12 'conv1' (Conv)" into buf, for messages. */
const char *pf_ir_node_desc(const pf_ir_graph *g, int node, char *buf, size_t size);

/* ---- Shape inference (shape.c) ----------------------------------------------
 * Infers dtype and shape of every node output in order, resolving attrs that
 * depend on shapes (auto_pad, reshape targets, slice bounds, resize scales,
 * negative axes). Inputs that must be constant (Reshape's shape, Slice's
 * starts/ends, Resize's scales/sizes, Pad's pads, Tile's repeats, Expand's
 * shape, ...) were moved into attrs by the importer when constant; when such
 * an input is still a runtime value, inference leaves the output unknown
 * (ndim -1) rather than failing, and pf_ir_specialize() refuses whatever is
 * still unknown after folding, naming the node (PF_ERR_UNSUPPORTED). Symbolic
 * batch dims propagate where the rule is clear (elementwise, conv, pool...).
 * Values over 2^40 bytes are refused (PF_ERR_FORMAT). Errors name node,
 * input and dims. */
pf_status pf_ir_infer_shapes(pf_ir_graph *g);
/* Infers one node (used by the importers and the folder). */
pf_status pf_ir_infer_node(pf_ir_graph *g, int node);

/* Copy of g with the batch dimension of every graph input that has one set to
 * `batch` (>= 1), shapes re-inferred and SHAPE-dependent subgraphs folded. */
pf_status pf_ir_specialize(const pf_ir_graph *g, int64_t batch, pf_ir_graph **out);

/* ---- Passes (passes.c, fold.c) ----------------------------------------------- */
typedef struct pf_ir_opt_report {
    int folded;          /* nodes replaced by constants */
    int bn_folded;       /* BatchNormalization merged into the preceding conv */
    int act_fused;       /* activations merged into their producer */
    int removed;         /* dead or identity nodes dropped */
    int quant_fused;     /* QDQ convs/matmuls turned into QCONV/QMATMUL */
} pf_ir_opt_report;

/* Constant folding: every node whose inputs are all constant is evaluated
 * on the CPU reference kernels (pf_nn_cpu_run_node) and replaced by a
 * constant; SHAPE of a value with a known shape folds too. */
pf_status pf_ir_fold_constants(pf_ir_graph *g, int *n_folded);
/* BatchNormalization whose input is a CONV/CONV_TRANSPOSE output used only
 * by it, with constant params: folded into the conv's weights and bias. */
pf_status pf_ir_fold_batchnorm(pf_ir_graph *g, int *n_folded);
/* Relu, Clip (constant bounds), Sigmoid, Tanh, LeakyRelu, HardSigmoid,
 * HardSwish following an op that allows a fused act (see pf_ir_act), when the
 * producer's output has no other use and is not a graph output. */
pf_status pf_ir_fuse_activations(pf_ir_graph *g, int *n_fused);
/* The fused form of activation node n (Relu, Clip with bounds in its attr,
 * Sigmoid, Tanh, LeakyRelu, HardSigmoid, HardSwish); false when it has none. */
bool pf_ir_act_of(const pf_ir_graph *g, const pf_ir_node *n, pf_ir_act *act, float *a, float *b);
/* QDQ fusion (passes_quant.c): DequantizeLinear(x_q) and DequantizeLinear(w_q
 * const) feeding a Conv (bias constant or DequantizeLinear'd int32; then
 * optionally an activation, a residual Add of the same shape, an activation)
 * and optionally a QuantizeLinear become one QCONV; the same for MatMul and
 * Gemm (alpha 1, no transposed A) as QMATMUL. Parameters must be constants
 * (scales per tensor, weight scales also per output channel). Unfused Q/DQ
 * nodes stay. Runs before constant folding (pf_ir_optimize does so). */
pf_status pf_ir_fuse_quant(pf_ir_graph *g, int *n_fused);
/* Identity/Dropout bypass, nodes whose outputs nobody uses; then compact. */
pf_status pf_ir_remove_dead(pf_ir_graph *g, int *n_removed);
/* All of the above to a fixed point, in a sensible order. */
pf_status pf_ir_optimize(pf_ir_graph *g, pf_ir_opt_report *report);

/* ---- Memory planning (plan.c) ---------------------------------------------------
 * Places every runtime value that is not a graph input, graph output or
 * constant into one arena: first-fit by size over the values' lifetimes
 * [producer node, last consumer node], offsets aligned to `align` bytes
 * (>= 64). `elem_size` overrides dtype sizes per dtype (NULL = real sizes;
 * the fp16 CUDA executor passes 2 for F32). offsets[v] = -1 for values
 * outside the arena. */
typedef struct pf_ir_mem_plan {
    int64_t *offsets;    /* n_values entries, caller frees with pf_ir_mem_plan_free */
    int n_values;
    size_t arena_bytes;  /* peak */
    size_t naive_bytes;  /* sum of the sizes without reuse, for reports */
} pf_ir_mem_plan;
pf_status pf_ir_plan_memory(const pf_ir_graph *g, size_t align, const size_t *elem_size,
                            pf_ir_mem_plan *out);
/* The same, where born[v] >= 0 makes value v live from node born[v] on
 * (earlier than its producer): an executor that computes a residual Add's
 * sum inside the conv before it keeps that memory free from the conv on.
 * born may be NULL. */
pf_status pf_ir_plan_memory_born(const pf_ir_graph *g, size_t align, const size_t *elem_size,
                                 const int *born, pf_ir_mem_plan *out);
void pf_ir_mem_plan_free(pf_ir_mem_plan *p);

/* ---- Statistics (stats.c) --------------------------------------------------- */
/* Multiply-accumulates x 2 of the node (conv, gemm, matmul; elementwise count
 * one per output element); shapes must be known. */
double pf_ir_node_flops(const pf_ir_graph *g, int node);

PF_END_DECLS

#endif
