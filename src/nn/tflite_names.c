/* Names and sizes of TFLite's enums (TensorType, BuiltinOperator), for the
 * reader's checks and for messages and model summaries. The values are the
 * schema's (tensorflow/lite/schema/schema.fbs), which only ever appends. */
#include "tflite_reader.h"

static const struct {
    const char *name;
    size_t size;
} type_info[PF_TFL_TYPE_COUNT] = {
    [PF_TFL_FLOAT32] = {"FLOAT32", 4},     [PF_TFL_FLOAT16] = {"FLOAT16", 2},
    [PF_TFL_INT32] = {"INT32", 4},         [PF_TFL_UINT8] = {"UINT8", 1},
    [PF_TFL_INT64] = {"INT64", 8},         [PF_TFL_STRING] = {"STRING", 0},
    [PF_TFL_BOOL] = {"BOOL", 1},           [PF_TFL_INT16] = {"INT16", 2},
    [PF_TFL_COMPLEX64] = {"COMPLEX64", 8}, [PF_TFL_INT8] = {"INT8", 1},
    [PF_TFL_FLOAT64] = {"FLOAT64", 8},     [PF_TFL_COMPLEX128] = {"COMPLEX128", 16},
    [PF_TFL_UINT64] = {"UINT64", 8},       [PF_TFL_RESOURCE] = {"RESOURCE", 0},
    [PF_TFL_VARIANT] = {"VARIANT", 0},     [PF_TFL_UINT32] = {"UINT32", 4},
    [PF_TFL_UINT16] = {"UINT16", 2},       [PF_TFL_INT4] = {"INT4", 0},
};

size_t pf_tfl_type_size(int type)
{
    return type >= 0 && type < PF_TFL_TYPE_COUNT ? type_info[type].size : 0;
}

const char *pf_tfl_type_name(int type)
{
    return type >= 0 && type < PF_TFL_TYPE_COUNT ? type_info[type].name : "?";
}

/* BuiltinOperator 0 .. 161 (RIGHT_SHIFT); index = code. */
static const char *const builtin_names[] = {
    "ADD", "AVERAGE_POOL_2D", "CONCATENATION", "CONV_2D", "DEPTHWISE_CONV_2D", "DEPTH_TO_SPACE",
    "DEQUANTIZE", "EMBEDDING_LOOKUP", "FLOOR", "FULLY_CONNECTED", "HASHTABLE_LOOKUP",
    "L2_NORMALIZATION", "L2_POOL_2D", "LOCAL_RESPONSE_NORMALIZATION", "LOGISTIC",
    "LSH_PROJECTION", "LSTM", "MAX_POOL_2D", "MUL", "RELU", "RELU_N1_TO_1", "RELU6", "RESHAPE",
    "RESIZE_BILINEAR", "RNN", "SOFTMAX", "SPACE_TO_DEPTH", "SVDF", "TANH", "CONCAT_EMBEDDINGS",
    "SKIP_GRAM", "CALL", "CUSTOM", "EMBEDDING_LOOKUP_SPARSE", "PAD",
    "UNIDIRECTIONAL_SEQUENCE_RNN", "GATHER", "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND",
    "TRANSPOSE", "MEAN", "SUB", "DIV", "SQUEEZE", "UNIDIRECTIONAL_SEQUENCE_LSTM", "STRIDED_SLICE",
    "BIDIRECTIONAL_SEQUENCE_RNN", "EXP", "TOPK_V2", "SPLIT", "LOG_SOFTMAX", "DELEGATE",
    "BIDIRECTIONAL_SEQUENCE_LSTM", "CAST", "PRELU", "MAXIMUM", "ARG_MAX", "MINIMUM", "LESS",
    "NEG", "PADV2", "GREATER", "GREATER_EQUAL", "LESS_EQUAL", "SELECT", "SLICE", "SIN",
    "TRANSPOSE_CONV", "SPARSE_TO_DENSE", "TILE", "EXPAND_DIMS", "EQUAL", "NOT_EQUAL", "LOG",
    "SUM", "SQRT", "RSQRT", "SHAPE", "POW", "ARG_MIN", "FAKE_QUANT", "REDUCE_PROD", "REDUCE_MAX",
    "PACK", "LOGICAL_OR", "ONE_HOT", "LOGICAL_AND", "LOGICAL_NOT", "UNPACK", "REDUCE_MIN",
    "FLOOR_DIV", "REDUCE_ANY", "SQUARE", "ZEROS_LIKE", "FILL", "FLOOR_MOD", "RANGE",
    "RESIZE_NEAREST_NEIGHBOR", "LEAKY_RELU", "SQUARED_DIFFERENCE", "MIRROR_PAD", "ABS", "SPLIT_V",
    "UNIQUE", "CEIL", "REVERSE_V2", "ADD_N", "GATHER_ND", "COS", "WHERE", "RANK", "ELU",
    "REVERSE_SEQUENCE", "MATRIX_DIAG", "QUANTIZE", "MATRIX_SET_DIAG", "ROUND", "HARD_SWISH", "IF",
    "WHILE", "NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5", "SCATTER_ND", "SELECT_V2",
    "DENSIFY", "SEGMENT_SUM", "BATCH_MATMUL", "PLACEHOLDER_FOR_GREATER_OP_CODES", "CUMSUM",
    "CALL_ONCE", "BROADCAST_TO", "RFFT2D", "CONV_3D", "IMAG", "REAL", "COMPLEX_ABS", "HASHTABLE",
    "HASHTABLE_FIND", "HASHTABLE_IMPORT", "HASHTABLE_SIZE", "REDUCE_ALL", "CONV_3D_TRANSPOSE",
    "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "BROADCAST_ARGS", "RANDOM_STANDARD_NORMAL",
    "BUCKETIZE", "RANDOM_UNIFORM", "MULTINOMIAL", "GELU", "DYNAMIC_UPDATE_SLICE", "RELU_0_TO_1",
    "UNSORTED_SEGMENT_PROD", "UNSORTED_SEGMENT_MAX", "UNSORTED_SEGMENT_SUM", "ATAN2",
    "UNSORTED_SEGMENT_MIN", "SIGN", "BITCAST", "BITWISE_XOR", "RIGHT_SHIFT",
};

const char *pf_tfl_builtin_name(int32_t code)
{
    if (code < 0 || (size_t)code >= sizeof builtin_names / sizeof builtin_names[0])
        return "UNKNOWN";
    return builtin_names[code];
}
