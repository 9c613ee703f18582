/* Internal: the ONNX writer, the counterpart of onnx_reader.h.
 *
 *   pf_onnx_wmodel *w = NULL;
 *   pf_onnx_wmodel_from_ir(pf_model_graph(m), &w);   // IR graph -> ONNX nodes
 *   ... optionally edit w (the quantizer inserts Q/DQ pairs) ...
 *   pf_onnx_wmodel_save(w, "out.onnx");               // protobuf wire format
 *   pf_onnx_wmodel_destroy(&w);
 *
 * Two steps on purpose: the IR has no QuantizeLinear/DequantizeLinear (and
 * fuses activations into their producer), so the writer first lowers an IR
 * graph into a plain list of ONNX nodes, initializers and typed values, which
 * a tool may rewrite in ONNX terms before serialising. The output is a
 * standard ModelProto (IR version 8, default-domain opset
 * PF_ONNX_WRITE_OPSET), written by hand in protobuf's wire format (no
 * protobuf library: the GPU machine has none). Constants become
 * initializers (raw_data, little-endian); every runtime value with a known
 * shape gets a value_info; the symbolic batch dimension is written as the
 * dim_param of the graph (the IR's batch_symbol, else "N").
 *
 * Ownership: a wmodel owns every string and the initializer bytes it copied;
 * initializers added with pf_onnx_wmodel_add_init_borrowed point into memory
 * the caller keeps alive until the model is saved or destroyed (the writer
 * borrows the IR's weights instead of copying hundreds of MB). Not
 * thread-safe. */
#ifndef PF_NN_ONNX_WRITER_H
#define PF_NN_ONNX_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir.h"

PF_BEGIN_DECLS

#define PF_ONNX_WRITE_OPSET 17
#define PF_ONNX_WRITE_IR_VERSION 8
#define PF_ONNX_WMAX_ATTRS 8

typedef enum pf_onnx_wattr_type {
    PF_ONNX_WATTR_FLOAT = 1, PF_ONNX_WATTR_INT = 2, PF_ONNX_WATTR_STRING = 3,
    PF_ONNX_WATTR_TENSOR = 4, PF_ONNX_WATTR_INTS = 7
} pf_onnx_wattr_type;

typedef struct pf_onnx_wattr {
    char *name;
    pf_onnx_wattr_type type;
    float f;
    int64_t i;
    char *s;
    int n;                 /* INTS */
    int64_t *ints;         /* INTS (owned) */
    int t_dtype;           /* TENSOR: a one-element tensor (ConstantOfShape's value) */
    double t_value;
} pf_onnx_wattr;

typedef struct pf_onnx_wnode {
    char *op_type, *name;
    int n_in, n_out;
    char **in, **out;      /* "" = omitted optional input */
    int n_attrs;
    pf_onnx_wattr attrs[PF_ONNX_WMAX_ATTRS];
} pf_onnx_wnode;

typedef struct pf_onnx_winit {
    char *name;
    int dtype;             /* ONNX TensorProto.DataType */
    int ndim;
    int64_t dims[PF_IR_MAX_RANK];
    const void *data;
    size_t nbytes;
    void *owned;           /* == data when copied, NULL when borrowed */
} pf_onnx_winit;

/* A dimension written with neither a value nor a symbol. */
#define PF_ONNX_DIM_UNKNOWN (-2)

typedef struct pf_onnx_wvalue {
    char *name;
    int dtype;
    int ndim;              /* -1: no shape written */
    int64_t dims[PF_IR_MAX_RANK]; /* PF_IR_DIM_BATCH = the batch symbol,
                                   * PF_ONNX_DIM_UNKNOWN = unknown */
} pf_onnx_wvalue;

typedef struct pf_onnx_wmodel {
    char *graph_name, *batch_symbol;
    pf_onnx_wnode *nodes;  int n_nodes, cap_nodes;   /* topological order */
    pf_onnx_winit *inits;  int n_inits, cap_inits;
    pf_onnx_wvalue *inputs; int n_inputs, cap_inputs;
    pf_onnx_wvalue *outputs; int n_outputs, cap_outputs;
    pf_onnx_wvalue *infos; int n_infos, cap_infos;
    int n_names;           /* counter for fresh names */
} pf_onnx_wmodel;

/* ONNX TensorProto.DataType of an IR dtype. */
int pf_onnx_dtype_of_ir(pf_ir_dtype t);

pf_status pf_onnx_wmodel_create(const char *graph_name, pf_onnx_wmodel **out);
void pf_onnx_wmodel_destroy(pf_onnx_wmodel **w);

/* Appends a node; in/out strings are copied; returns it (NULL = out of
 * memory, message set). Attributes are added with the helpers below. */
pf_onnx_wnode *pf_onnx_wmodel_add_node(pf_onnx_wmodel *w, const char *op_type, const char *name,
                                       const char *const *in, int n_in, const char *const *out,
                                       int n_out);
/* Inserts a node at position `pos` (0..n_nodes) instead of appending. */
pf_onnx_wnode *pf_onnx_wmodel_insert_node(pf_onnx_wmodel *w, int pos, const char *op_type,
                                          const char *name, const char *const *in, int n_in,
                                          const char *const *out, int n_out);
pf_status pf_onnx_wnode_attr_int(pf_onnx_wnode *n, const char *name, int64_t v);
pf_status pf_onnx_wnode_attr_float(pf_onnx_wnode *n, const char *name, float v);
pf_status pf_onnx_wnode_attr_string(pf_onnx_wnode *n, const char *name, const char *v);
pf_status pf_onnx_wnode_attr_ints(pf_onnx_wnode *n, const char *name, const int64_t *v, int count);
pf_status pf_onnx_wnode_attr_tensor1(pf_onnx_wnode *n, const char *name, int dtype, double v);
/* Replaces input k's name. */
pf_status pf_onnx_wnode_set_input(pf_onnx_wnode *n, int k, const char *name);

/* Initializers: copied, or borrowed (see Ownership). */
pf_status pf_onnx_wmodel_add_init(pf_onnx_wmodel *w, const char *name, int dtype, int ndim,
                                  const int64_t *dims, const void *data, size_t nbytes);
pf_status pf_onnx_wmodel_add_init_borrowed(pf_onnx_wmodel *w, const char *name, int dtype,
                                           int ndim, const int64_t *dims, const void *data,
                                           size_t nbytes);
/* An I64 1-D initializer (shapes, axes, pads) or an F32 one. */
pf_status pf_onnx_wmodel_add_i64s(pf_onnx_wmodel *w, const char *name, const int64_t *v, int n);
pf_status pf_onnx_wmodel_add_f32s(pf_onnx_wmodel *w, const char *name, const float *v, int n,
                                  bool scalar);
const pf_onnx_winit *pf_onnx_wmodel_find_init(const pf_onnx_wmodel *w, const char *name);

/* Graph inputs, outputs and value_infos (copied). */
pf_status pf_onnx_wmodel_add_value(pf_onnx_wmodel *w, int which /* 0 in, 1 out, 2 info */,
                                   const char *name, int dtype, int ndim, const int64_t *dims);
const pf_onnx_wvalue *pf_onnx_wmodel_find_info(const pf_onnx_wmodel *w, const char *name);
/* A name no value, node or initializer of w uses yet: prefix + suffix, or
 * with a counter added. Owned by w until it is destroyed. */
const char *pf_onnx_wmodel_fresh_name(pf_onnx_wmodel *w, const char *prefix, const char *suffix,
                                      char *buf, size_t size);

/* Lowers a graph whose shapes are inferred (a pf_model's graph, symbolic
 * batch allowed) into w (fresh). Fused activations become their own node;
 * attributes that the importers took from constant inputs (Reshape's shape,
 * Slice's starts..., Pad's pads, Resize's scales, Clip's bounds) become
 * initializers again. Constants are borrowed from g, which must outlive w.
 * Errors: PF_ERR_UNSUPPORTED naming the node for what opset 17 cannot say
 * (legacy 2-D Softmax on an inner axis). */
pf_status pf_onnx_wmodel_from_ir(const pf_ir_graph *g, pf_onnx_wmodel **out);

/* Serialises to a ModelProto in memory (*data malloc'ed, caller frees) or
 * to a file (written to PATH.tmp, then renamed). PF_ERR_IO names the file. */
pf_status pf_onnx_wmodel_serialize(const pf_onnx_wmodel *w, uint8_t **data, size_t *size);
pf_status pf_onnx_wmodel_save(const pf_onnx_wmodel *w, const char *path);

PF_END_DECLS

#endif
