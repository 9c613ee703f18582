/* Private: a validating reader of TensorFlow Lite model files (.tflite).
 *
 * A .tflite file is a FlatBuffer with the schema of TensorFlow's
 * tensorflow/lite/schema/schema.fbs (file identifier "TFL3", schema version
 * 3). This reader walks the FlatBuffer directly, with no flatc-generated code
 * and no FlatBuffers library, and turns it into the plain C view below:
 *
 *   pf_tflite *m = NULL;
 *   if (pf_tflite_open("selfie_segmentation.tflite", &m) != PF_OK)
 *       fprintf(stderr, "%s\n", pf_last_error());
 *   const pf_tfl_subgraph *g = &m->subgraphs[0];
 *   for (int32_t i = 0; i < g->n_operators; i++) {
 *       const pf_tfl_operator *op = &g->operators[i];
 *       if (op->builtin == PF_TFL_OP_CONV_2D)
 *           use(op->opts.conv2d.stride_w, g->tensors[op->inputs[1]].data);
 *   }
 *   pf_tflite_close(&m);
 *
 * Trust: the file is untrusted input. Before anything is read, every offset,
 * vtable, vector length (and length * element size), string, nested table and
 * union type is checked against the file size, and the structure is checked
 * against the schema's semantics: tensor, buffer and opcode indices in range,
 * known tensor types, non-negative shapes, constant data whose size matches
 * shape * element size, options whose union type matches the operator and
 * whose values are usable (strides >= 1, known padding and activation).
 * Any violation gives PF_ERR_FORMAT with a message naming the file, the path
 * in the structure and the bad value, e.g.
 *   "model.tflite: subgraphs[0].operators[12].inputs[1]: tensor index 977 out
 *    of range (subgraph has 230 tensors)".
 *
 * Ownership: the model owns a copy of the file bytes (64-byte aligned) for
 * its whole life; every pointer in the view (names, shapes, index lists,
 * constant data, custom options) points into that copy or into arrays the
 * model owns, and stays valid until pf_tflite_close(). Integer lists are
 * zero-copy views of the file, which is why the reader requires them to be
 * aligned, as FlatBuffers writers always make them (and as FlatBuffers' own
 * verifier requires). The view is read-only; a model may be read from
 * several threads at once. Little-endian hosts only (as TFLite itself).
 */
#ifndef PF_NN_TFLITE_READER_H
#define PF_NN_TFLITE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pixflow/core.h"

PF_BEGIN_DECLS

/* TensorType of schema.fbs (values are the file's). */
typedef enum pf_tfl_type {
    PF_TFL_FLOAT32 = 0,
    PF_TFL_FLOAT16 = 1,
    PF_TFL_INT32 = 2,
    PF_TFL_UINT8 = 3,
    PF_TFL_INT64 = 4,
    PF_TFL_STRING = 5,
    PF_TFL_BOOL = 6,
    PF_TFL_INT16 = 7,
    PF_TFL_COMPLEX64 = 8,
    PF_TFL_INT8 = 9,
    PF_TFL_FLOAT64 = 10,
    PF_TFL_COMPLEX128 = 11,
    PF_TFL_UINT64 = 12,
    PF_TFL_RESOURCE = 13,
    PF_TFL_VARIANT = 14,
    PF_TFL_UINT32 = 15,
    PF_TFL_UINT16 = 16,
    PF_TFL_INT4 = 17,
    PF_TFL_TYPE_COUNT
} pf_tfl_type;

/* Bytes per element; 0 for types without a fixed element size (STRING,
 * RESOURCE, VARIANT) and for INT4 (two per byte) or unknown values. */
size_t pf_tfl_type_size(int type);
/* "FLOAT32", "FLOAT16", ...; "?" for unknown values. Never NULL. */
const char *pf_tfl_type_name(int type);

/* BuiltinOperator codes of schema.fbs that pixflow's models use or that have
 * parsed options (the file may hold any other code; names for all codes up
 * to RIGHT_SHIFT come from pf_tfl_builtin_name). */
enum {
    PF_TFL_OP_ADD = 0,
    PF_TFL_OP_AVERAGE_POOL_2D = 1,
    PF_TFL_OP_CONCATENATION = 2,
    PF_TFL_OP_CONV_2D = 3,
    PF_TFL_OP_DEPTHWISE_CONV_2D = 4,
    PF_TFL_OP_DEQUANTIZE = 6,
    PF_TFL_OP_FULLY_CONNECTED = 9,
    PF_TFL_OP_L2_POOL_2D = 12,
    PF_TFL_OP_LOGISTIC = 14,
    PF_TFL_OP_MAX_POOL_2D = 17,
    PF_TFL_OP_MUL = 18,
    PF_TFL_OP_RELU = 19,
    PF_TFL_OP_RELU6 = 21,
    PF_TFL_OP_RESHAPE = 22,
    PF_TFL_OP_RESIZE_BILINEAR = 23,
    PF_TFL_OP_SOFTMAX = 25,
    PF_TFL_OP_TANH = 28,
    PF_TFL_OP_CUSTOM = 32,
    PF_TFL_OP_PAD = 34,
    PF_TFL_OP_MEAN = 40,
    PF_TFL_OP_SUB = 41,
    PF_TFL_OP_DIV = 42,
    PF_TFL_OP_TRANSPOSE_CONV = 67,
    PF_TFL_OP_SUM = 74,
    PF_TFL_OP_REDUCE_PROD = 81,
    PF_TFL_OP_REDUCE_MAX = 82,
    PF_TFL_OP_REDUCE_MIN = 89,
    PF_TFL_OP_REDUCE_ANY = 91,
    PF_TFL_OP_RESIZE_NEAREST_NEIGHBOR = 97,
    PF_TFL_OP_LEAKY_RELU = 98,
    PF_TFL_OP_HARD_SWISH = 117
};

/* "CONV_2D", ...; "UNKNOWN" for codes without a name here. Never NULL. */
const char *pf_tfl_builtin_name(int32_t code);

/* The custom code of MediaPipe's transposed convolution with bias. */
#define PF_TFL_CUSTOM_CONV2D_TRANSPOSE_BIAS "Convolution2DTransposeBias"

typedef enum pf_tfl_padding {
    PF_TFL_PADDING_SAME = 0,
    PF_TFL_PADDING_VALID = 1
} pf_tfl_padding;

/* ActivationFunctionType of schema.fbs. */
typedef enum pf_tfl_activation {
    PF_TFL_ACT_NONE = 0,
    PF_TFL_ACT_RELU = 1,
    PF_TFL_ACT_RELU_N1_TO_1 = 2,
    PF_TFL_ACT_RELU6 = 3,
    PF_TFL_ACT_TANH = 4,
    PF_TFL_ACT_SIGN_BIT = 5
} pf_tfl_activation;

/* Which member of pf_tfl_options is filled. It follows the operator, not only
 * the union type found in the file: an operator whose options table is
 * absent gets the schema's defaults (for the kinds where defaults are usable;
 * convolutions and pools must carry their options). */
typedef enum pf_tfl_opts_kind {
    PF_TFL_OPTS_NONE = 0,          /* no options, or options kept unparsed */
    PF_TFL_OPTS_CONV2D,            /* CONV_2D */
    PF_TFL_OPTS_DEPTHWISE_CONV2D,  /* DEPTHWISE_CONV_2D */
    PF_TFL_OPTS_POOL2D,            /* AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D */
    PF_TFL_OPTS_FULLY_CONNECTED,   /* FULLY_CONNECTED */
    PF_TFL_OPTS_SOFTMAX,           /* SOFTMAX */
    PF_TFL_OPTS_CONCATENATION,     /* CONCATENATION */
    PF_TFL_OPTS_ELEMENTWISE,       /* ADD, SUB, MUL, DIV */
    PF_TFL_OPTS_RESHAPE,           /* RESHAPE */
    PF_TFL_OPTS_RESIZE,            /* RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR */
    PF_TFL_OPTS_TRANSPOSE_CONV,    /* TRANSPOSE_CONV */
    PF_TFL_OPTS_PAD,               /* PAD (an empty table) */
    PF_TFL_OPTS_REDUCER,           /* MEAN, SUM, REDUCE_* */
    PF_TFL_OPTS_LEAKY_RELU,        /* LEAKY_RELU */
    PF_TFL_OPTS_CONV2D_TRANSPOSE_BIAS /* custom Convolution2DTransposeBias */
} pf_tfl_opts_kind;

typedef struct pf_tfl_conv2d_opts {
    pf_tfl_padding padding;
    int32_t stride_w, stride_h;         /* >= 1 */
    int32_t dilation_w, dilation_h;     /* >= 1 (default 1) */
    pf_tfl_activation activation;
} pf_tfl_conv2d_opts;

typedef struct pf_tfl_depthwise_opts {
    pf_tfl_padding padding;
    int32_t stride_w, stride_h;         /* >= 1 */
    int32_t depth_multiplier;           /* as stored (>= 0; newer TFLite ignores it) */
    int32_t dilation_w, dilation_h;     /* >= 1 (default 1) */
    pf_tfl_activation activation;
} pf_tfl_depthwise_opts;

typedef struct pf_tfl_pool2d_opts {
    pf_tfl_padding padding;
    int32_t stride_w, stride_h;         /* >= 1 */
    int32_t filter_w, filter_h;         /* >= 1 */
    pf_tfl_activation activation;
} pf_tfl_pool2d_opts;

typedef struct pf_tfl_fully_connected_opts {
    pf_tfl_activation activation;
    int32_t weights_format;             /* 0 DEFAULT, 1 SHUFFLED4x16INT8 */
    bool keep_num_dims;
} pf_tfl_fully_connected_opts;

typedef struct pf_tfl_softmax_opts {
    float beta;                         /* finite */
} pf_tfl_softmax_opts;

typedef struct pf_tfl_concat_opts {
    int32_t axis;                       /* as stored; may be negative */
    pf_tfl_activation activation;
} pf_tfl_concat_opts;

typedef struct pf_tfl_elementwise_opts {
    pf_tfl_activation activation;
} pf_tfl_elementwise_opts;

typedef struct pf_tfl_reshape_opts {
    const int32_t *new_shape;           /* NULL when absent (the shape input rules) */
    int32_t n_new_shape;
} pf_tfl_reshape_opts;

typedef struct pf_tfl_resize_opts {
    bool align_corners;
    bool half_pixel_centers;
} pf_tfl_resize_opts;

typedef struct pf_tfl_transpose_conv_opts {
    pf_tfl_padding padding;
    int32_t stride_w, stride_h;         /* >= 1 */
    pf_tfl_activation activation;
} pf_tfl_transpose_conv_opts;

typedef struct pf_tfl_reducer_opts {
    bool keep_dims;
} pf_tfl_reducer_opts;

typedef struct pf_tfl_leaky_relu_opts {
    float alpha;                        /* finite */
} pf_tfl_leaky_relu_opts;

/* MediaPipe's Convolution2DTransposeBias keeps TFLite's C struct
 * TfLiteTransposeConvParams as its 12 custom option bytes: int32 padding
 * (1 SAME, 2 VALID), int32 stride_width, int32 stride_height. Inputs are
 * (input, weights [O, kh, kw, I], bias [O]). */
typedef struct pf_tfl_conv2d_transpose_bias_opts {
    pf_tfl_padding padding;
    int32_t stride_w, stride_h;         /* >= 1 */
} pf_tfl_conv2d_transpose_bias_opts;

typedef struct pf_tfl_options {
    pf_tfl_opts_kind kind;
    union {
        pf_tfl_conv2d_opts conv2d;
        pf_tfl_depthwise_opts depthwise;
        pf_tfl_pool2d_opts pool2d;
        pf_tfl_fully_connected_opts fully_connected;
        pf_tfl_softmax_opts softmax;
        pf_tfl_concat_opts concat;
        pf_tfl_elementwise_opts elementwise;
        pf_tfl_reshape_opts reshape;
        pf_tfl_resize_opts resize;
        pf_tfl_transpose_conv_opts transpose_conv;
        pf_tfl_reducer_opts reducer;
        pf_tfl_leaky_relu_opts leaky_relu;
        pf_tfl_conv2d_transpose_bias_opts conv2d_transpose_bias;
    } u;
} pf_tfl_options;

typedef struct pf_tfl_buffer {
    const uint8_t *data;                /* NULL when the buffer is empty */
    size_t size;                        /* bytes */
    size_t file_offset;                 /* of data within pf_tflite.data (0 when empty) */
} pf_tfl_buffer;

typedef struct pf_tfl_tensor {
    const char *name;                   /* never NULL ("" when absent) */
    pf_tfl_type type;                   /* a known value (< PF_TFL_TYPE_COUNT) */
    int32_t ndim;                       /* entries of shape */
    const int32_t *shape;               /* each >= 0 (NULL when ndim == 0) */
    /* Shape with -1 for dimensions unknown at conversion (e.g. the batch);
     * NULL when the file has none. Same length as shape. */
    const int32_t *shape_signature;
    uint32_t buffer;                    /* index into pf_tflite.buffers */
    /* Constant data: the buffer's bytes when it has any, else NULL. For types
     * with a fixed element size and a dense tensor, size == numel * size. */
    const uint8_t *data;
    size_t data_size;
    bool is_variable;
    bool is_sparse;                     /* has SparsityParameters (data not dense) */
    /* Quantization: present when the table has scales, zero points or
     * details; an empty table (common in float models) counts as absent. */
    bool has_quantization;
    const float *quant_scale;           /* NULL or n_quant entries */
    const int64_t *quant_zero_point;    /* NULL or n_quant_zero_point entries */
    int32_t n_quant, n_quant_zero_point;
    int32_t quantized_dimension;
} pf_tfl_tensor;

typedef struct pf_tfl_opcode {
    int32_t builtin;                    /* max(deprecated_builtin_code, builtin_code) */
    const char *custom_code;            /* non-empty for CUSTOM, else NULL */
    int32_t version;                    /* default 1 */
} pf_tfl_opcode;

typedef struct pf_tfl_operator {
    uint32_t opcode_index;              /* < n_opcodes */
    int32_t builtin;                    /* the opcode's builtin code */
    const char *custom_code;            /* the opcode's custom code, NULL unless CUSTOM */
    int32_t version;                    /* the opcode's version */
    /* Tensor indices into the subgraph's tensors; -1 = an optional tensor
     * that is absent (TFLite allows it in inputs and outputs). */
    const int32_t *inputs;
    const int32_t *outputs;
    const int32_t *intermediates;
    int32_t n_inputs, n_outputs, n_intermediates;
    uint8_t options_type;               /* BuiltinOptions union type in the file (0 none) */
    pf_tfl_options opts;
    const uint8_t *custom_options;      /* raw bytes, NULL when none */
    size_t custom_options_size;
} pf_tfl_operator;

typedef struct pf_tfl_subgraph {
    const char *name;                   /* never NULL */
    pf_tfl_tensor *tensors;
    pf_tfl_operator *operators;         /* in execution order */
    const int32_t *inputs;              /* tensor indices, each in range */
    const int32_t *outputs;
    int32_t n_tensors, n_operators, n_inputs, n_outputs;
} pf_tfl_subgraph;

typedef struct pf_tflite {
    char *name;                         /* file name used in messages */
    const uint8_t *data;                /* the whole file (owned copy) */
    size_t size;
    uint32_t version;                   /* schema version: 3 */
    const char *description;            /* never NULL */
    pf_tfl_opcode *opcodes;
    pf_tfl_buffer *buffers;
    pf_tfl_subgraph *subgraphs;         /* [0] is the main graph */
    int32_t n_opcodes, n_buffers, n_subgraphs;
    /* One past the last byte of the file that the model refers to (tables,
     * vectors, strings, buffer data); bytes after it are padding or appended
     * data such as metadata archives. */
    size_t extent;
} pf_tflite;

/* Reads and validates the model in file `path`. On success *out owns the
 * model (free with pf_tflite_close). Errors: PF_ERR_INVALID (NULL
 * arguments), PF_ERR_IO (the file cannot be read), PF_ERR_FORMAT (not a
 * valid TFLite model; the message says where and why), PF_ERR_NOMEM.
 * On failure *out is NULL. Thread-safe (no shared state). */
pf_status pf_tflite_open(const char *path, pf_tflite **out);

/* The same for `size` bytes at `data`, which are copied (the caller keeps
 * its memory). `name_for_messages` (NULL: "<memory>") names the model in
 * error messages. */
pf_status pf_tflite_open_memory(const void *data, size_t size, const char *name_for_messages,
                                pf_tflite **out);

/* Frees the model and sets *m = NULL; accepts NULL and a pointer to NULL. */
void pf_tflite_close(pf_tflite **m);

/* Elements of a tensor's shape (1 for a scalar); -1 if it overflows int64. */
int64_t pf_tfl_tensor_numel(const pf_tfl_tensor *t);

PF_END_DECLS

#endif
