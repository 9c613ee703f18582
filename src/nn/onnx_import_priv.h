/* Private: shared state of the ONNX importer (onnx_import*.c). */
#ifndef PF_NN_ONNX_IMPORT_PRIV_H
#define PF_NN_ONNX_IMPORT_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "import.h"

/* Map value id for an ONNX output the IR does not produce (Dropout mask,
 * MaxPool indices, BatchNormalization training statistics). */
#define PF_OIMP_DROPPED (-2)

typedef struct pf_oimp {
    const pf_onnx_model *m;
    pf_ir_graph *g;
    /* ONNX value name -> IR value id (open addressing, keys borrowed from
     * the model, which outlives the import). */
    const char **keys;
    int *ids;
    size_t cap, count;
} pf_oimp;

/* Error "model.onnx: node 12 'name' (OpType): <fmt>" with `st`. */
pf_status pf_oimp_fail(const pf_oimp *c, const pf_onnx_node *n, pf_status st, const char *fmt,
                       ...) PF_PRINTF(4, 5);
pf_status pf_oimp_unsupported_attr(const pf_oimp *c, const pf_onnx_node *n, const char *attr,
                                   const char *value);

/* Value id of input k of n: -1 when k is past the inputs or the name is ""
 * (an omitted optional input). Unknown names give PF_ERR_FORMAT. */
pf_status pf_oimp_in(pf_oimp *c, const pf_onnx_node *n, size_t k, int *id);
/* Like pf_oimp_in but the input must be present. */
pf_status pf_oimp_in_req(pf_oimp *c, const pf_onnx_node *n, size_t k, int *id);
/* The value when it is a constant (has data), else NULL; -1 gives NULL. */
const pf_ir_value *pf_oimp_const(const pf_oimp *c, int id);
/* true when every present input k in [from, to] is a constant (absent ones count as
 * constant). */
bool pf_oimp_inputs_const(pf_oimp *c, const pf_onnx_node *n, size_t from, size_t to);
/* Integer elements (I64/I32/U8/I8/BOOL) of a constant, at most `max`; more or
 * another dtype gives PF_ERR_UNSUPPORTED / PF_ERR_FORMAT naming `what`. */
pf_status pf_oimp_const_ints(const pf_oimp *c, const pf_onnx_node *n, int id, const char *what,
                             int64_t *out, int max, int *count);
/* Float elements (F32/F64/F16, integers converted) of a constant. */
pf_status pf_oimp_const_doubles(const pf_oimp *c, const pf_onnx_node *n, int id,
                                const char *what, double *out, int max, int *count);

/* Binds an ONNX name to an IR value id. */
pf_status pf_oimp_bind(pf_oimp *c, const char *name, int id);

/* Adds the IR node for n: `n_out` outputs named after n's first outputs
 * (an output named "" gets a fresh name), of dtype `out_dtype` (a guess that
 * shape inference replaces unless the op fixes it: Cast, ConstantOfShape).
 * Further ONNX outputs of n are marked dropped. *node_id may be NULL. */
pf_status pf_oimp_emit(pf_oimp *c, const pf_onnx_node *n, pf_ir_op op, const int *in, int n_in,
                       int n_out, const pf_ir_attr *attr, pf_ir_dtype out_dtype, int *node_id);
/* An intermediate node with one fresh output (for lowering chains). */
pf_status pf_oimp_emit_tmp(pf_oimp *c, const pf_onnx_node *n, pf_ir_op op, const int *in,
                           int n_in, const pf_ir_attr *attr, int *out_value);
/* An intermediate node whose output takes n's first output name. */
pf_status pf_oimp_emit_final(pf_oimp *c, const pf_onnx_node *n, pf_ir_op op, const int *in,
                             int n_in, const pf_ir_attr *attr);

/* ONNX element type -> IR dtype; false when the IR has none. */
bool pf_oimp_dtype(int onnx_dtype, pf_ir_dtype *out);

/* Op converters, by family. Each returns PF_ERR_UNSUPPORTED (via
 * pf_oimp_fail) for attribute values it cannot express. `handled` is set to
 * false when the op type is not one of the family's. */
pf_status pf_oimp_convert_nn(pf_oimp *c, const pf_onnx_node *n, bool *handled);
pf_status pf_oimp_convert_elementwise(pf_oimp *c, const pf_onnx_node *n, bool *handled);
pf_status pf_oimp_convert_shape(pf_oimp *c, const pf_onnx_node *n, bool *handled);
/* Quantization ops (onnx_import_quant.c): QuantizeLinear, DequantizeLinear,
 * QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger. */
pf_status pf_oimp_convert_quant(pf_oimp *c, const pf_onnx_node *n, bool *handled);
/* Conv's attributes (kernel, strides, dilations, pads, auto_pad, group) of n
 * into a->conv; w = the weight's value id (for a missing kernel_shape). */
pf_status pf_oimp_conv_attr(pf_oimp *c, const pf_onnx_node *n, int w, pf_ir_attr *a);
/* Resize (opset 10..17) and Upsample (7..9); called by the shape family. */
pf_status pf_oimp_convert_resize(pf_oimp *c, const pf_onnx_node *n, bool upsample);

#endif
