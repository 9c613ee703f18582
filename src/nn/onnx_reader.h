/* Internal: the ONNX model reader, a plain C view of a validated .onnx file.
 *
 *   pf_onnx_model *m = NULL;
 *   if (pf_onnx_open("model.onnx", &m) != PF_OK) { puts(pf_last_error()); return; }
 *   for (size_t i = 0; i < m->n_nodes; i++) {
 *       const pf_onnx_node *n = &m->nodes[i];
 *       const int64_t *strides; size_t ns;
 *       if (!strcmp(n->op_type, "Conv") &&
 *           pf_onnx_attr_ints(m, n, "strides", &strides, &ns) != PF_OK) ...
 *   }
 *   pf_onnx_close(&m);
 *
 * The reader decodes the protobuf (protobuf-c, code generated at build time
 * from Debian's onnx.proto), checks it (see onnx_reader.c for the rules) and
 * exposes the graph through the structs below. No protobuf type appears here:
 * the graph builder needs only this header. Every pointer in a model (names,
 * dims, tensor data) stays valid until pf_onnx_close(), and nothing in the
 * view may be modified. A model is immutable after open, so concurrent reads
 * from several threads are safe.
 *
 * Built without protobuf-c (the GPU machine has none), pf_onnx_open*() and
 * pf_onnx_read_tensor_*() return PF_ERR_UNSUPPORTED; pf_onnx_available()
 * says which build this is.
 *
 * Errors: PF_ERR_FORMAT for a malformed file (the message names the file, the
 * node by index, name and op_type, and the value), PF_ERR_UNSUPPORTED for
 * valid ONNX this reader refuses (external data, a data type outside the
 * supported set, graph attributes, an opset outside 7..17, sparse tensors,
 * non-tensor graph inputs, model-local functions), PF_ERR_IO when the file
 * cannot be read, PF_ERR_NOMEM when decoding would exceed the memory cap. */
#ifndef PF_NN_ONNX_READER_H
#define PF_NN_ONNX_READER_H

#include <stddef.h>
#include <stdint.h>

#include "pixflow/core.h"

PF_BEGIN_DECLS

/* Opsets of the default ("" or "ai.onnx") domain the reader accepts. */
#define PF_ONNX_OPSET_MIN 7
#define PF_ONNX_OPSET_MAX 17
/* Highest IR version accepted (IR 3 introduced opset imports: the minimum). */
#define PF_ONNX_IR_VERSION_MAX 10
/* Largest file pf_onnx_open() reads (protobuf's own limit is 2 GiB). */
#define PF_ONNX_MAX_FILE_BYTES ((size_t)2 << 30)
/* Most dimensions of one tensor or value. */
#define PF_ONNX_MAX_RANK 64

/* ONNX TensorProto.DataType, same numbers. */
typedef enum pf_onnx_dtype {
    PF_ONNX_UNDEFINED = 0,
    PF_ONNX_FLOAT = 1,
    PF_ONNX_UINT8 = 2,
    PF_ONNX_INT8 = 3,
    PF_ONNX_UINT16 = 4,
    PF_ONNX_INT16 = 5,
    PF_ONNX_INT32 = 6,
    PF_ONNX_INT64 = 7,
    PF_ONNX_STRING = 8,
    PF_ONNX_BOOL = 9,
    PF_ONNX_FLOAT16 = 10,
    PF_ONNX_DOUBLE = 11,
    PF_ONNX_UINT32 = 12,
    PF_ONNX_UINT64 = 13,
    PF_ONNX_COMPLEX64 = 14,
    PF_ONNX_COMPLEX128 = 15,
    PF_ONNX_BFLOAT16 = 16
} pf_onnx_dtype;

/* "FLOAT", "FLOAT16", ... ("?" for unknown numbers). */
const char *pf_onnx_dtype_name(int dtype);
/* Bytes per element; 0 for UNDEFINED, STRING and unknown numbers. */
size_t pf_onnx_dtype_size(int dtype);
/* 1 for the types a model's initializers, constants and graph inputs and
 * outputs may have: FLOAT, FLOAT16, DOUBLE, INT64, INT32, INT8, UINT8, BOOL. */
int pf_onnx_dtype_supported(int dtype);

/* A constant tensor: an initializer or a TENSOR attribute. */
typedef struct pf_onnx_tensor {
    const char *name;     /* "" when unnamed (attribute tensors often are) */
    pf_onnx_dtype dtype;  /* one of the supported types */
    int ndim;             /* 0 for a scalar */
    const int64_t *dims;  /* ndim sizes, each >= 0 */
    int64_t numel;        /* product of dims (1 for a scalar) */
    size_t nbytes;        /* numel * pf_onnx_dtype_size(dtype) */
    const void *data;     /* nbytes of elements in host (little-endian) order, aligned
                           * for the type (BOOL: one byte, 0 or 1, checked); NULL when
                           * nbytes == 0 */
} pf_onnx_tensor;

/* One dimension of a graph input, output or value_info. */
typedef struct pf_onnx_dim {
    int64_t value;     /* >= 0 when fixed, -1 when symbolic or unknown */
    const char *param; /* the symbol ("N", "batch") when symbolic, else NULL */
} pf_onnx_dim;

typedef struct pf_onnx_value_info {
    const char *name;
    pf_onnx_dtype dtype;     /* element type; UNDEFINED when the value has no tensor type
                              * (possible in value_infos only) */
    int ndim;                /* -1 when the rank is unknown (no shape given) */
    const pf_onnx_dim *dims; /* ndim entries */
    int is_initializer;      /* graph inputs: an initializer of this name is its default */
} pf_onnx_value_info;

/* AttributeProto.AttributeType, same numbers; the types the reader accepts. */
typedef enum pf_onnx_attr_type {
    PF_ONNX_ATTR_FLOAT = 1,
    PF_ONNX_ATTR_INT = 2,
    PF_ONNX_ATTR_STRING = 3,
    PF_ONNX_ATTR_TENSOR = 4,
    PF_ONNX_ATTR_FLOATS = 6,
    PF_ONNX_ATTR_INTS = 7,
    PF_ONNX_ATTR_STRINGS = 8
} pf_onnx_attr_type;

/* "FLOAT", "INTS", "GRAPH", ... ("?" for unknown numbers). */
const char *pf_onnx_attr_type_name(int type);

typedef struct pf_onnx_attr {
    const char *name;
    pf_onnx_attr_type type;
    float f;                    /* FLOAT */
    int64_t i;                  /* INT */
    const char *s;              /* STRING: NUL-terminated (cut at an embedded NUL) */
    size_t s_len;               /* STRING: the length as stored */
    size_t n;                   /* FLOATS, INTS, STRINGS: element count (may be 0) */
    const float *floats;        /* FLOATS */
    const int64_t *ints;        /* INTS */
    const char *const *strings; /* STRINGS: n NUL-terminated strings */
    const pf_onnx_tensor *t;    /* TENSOR */
} pf_onnx_attr;

typedef struct pf_onnx_node {
    int index;                  /* position in the graph (nodes are in topological order) */
    const char *name;           /* "" when unnamed */
    const char *op_type;        /* never empty */
    const char *domain;         /* "" for the default ONNX domain ("ai.onnx" is mapped to "") */
    int64_t opset;              /* version of `domain` the model imports */
    size_t n_inputs;
    const char *const *inputs;  /* "" marks an omitted optional input */
    size_t n_outputs;
    const char *const *outputs; /* "" marks an omitted optional output */
    size_t n_attrs;
    const pf_onnx_attr *attrs;  /* names unique within the node */
} pf_onnx_node;

typedef struct pf_onnx_opset {
    const char *domain; /* "" for the default domain */
    int64_t version;
} pf_onnx_opset;

typedef struct pf_onnx_priv pf_onnx_priv;

typedef struct pf_onnx_model {
    const char *name;         /* the path, or the name given to pf_onnx_open_memory() */
    int64_t ir_version;
    int64_t opset;            /* default domain version, PF_ONNX_OPSET_MIN..MAX; 0 when the
                               * model imports only other domains */
    const char *producer_name;
    const char *producer_version;
    const char *graph_name;
    size_t n_opsets;
    const pf_onnx_opset *opsets;
    size_t n_nodes;
    const pf_onnx_node *nodes;
    size_t n_initializers;
    const pf_onnx_tensor *initializers; /* names unique and non-empty */
    size_t n_inputs;
    const pf_onnx_value_info *inputs;   /* every graph input, those with a default too */
    size_t n_outputs;
    const pf_onnx_value_info *outputs;
    size_t n_value_infos;
    const pf_onnx_value_info *value_infos;
    pf_onnx_priv *priv;
} pf_onnx_model;

/* Reads, decodes and checks `path`. On success *out owns everything (free
 * with pf_onnx_close); on failure *out is NULL and the message says why. */
pf_status pf_onnx_open(const char *path, pf_onnx_model **out);
/* The same from memory; `data` need only live for the call (everything is
 * copied). `name` (may be NULL) names the model in messages. */
pf_status pf_onnx_open_memory(const void *data, size_t size, const char *name,
                              pf_onnx_model **out);
/* NULL-safe; sets *m = NULL. */
void pf_onnx_close(pf_onnx_model **m);
/* 1 when this build can read ONNX (protobuf-c was found), else 0. */
int pf_onnx_available(void);

/* Lookups by value name, O(1); NULL (or -1) when there is none. */
const pf_onnx_tensor *pf_onnx_find_initializer(const pf_onnx_model *m, const char *name);
/* A graph input, else a graph output, else a value_info entry. */
const pf_onnx_value_info *pf_onnx_find_value_info(const pf_onnx_model *m, const char *name);
/* Index of the node that produces `name`, and which of its outputs it is. */
int pf_onnx_find_producer(const pf_onnx_model *m, const char *name, int *output_slot);

/* Attributes of node `n` of model `m` (m names the model in messages). */
const pf_onnx_attr *pf_onnx_node_attr(const pf_onnx_node *n, const char *name);
/* Typed getters: an absent attribute gives the default (ints: NULL, 0) and
 * PF_OK; one of another type gives PF_ERR_FORMAT naming the node. */
pf_status pf_onnx_attr_int(const pf_onnx_model *m, const pf_onnx_node *n, const char *name,
                           int64_t def, int64_t *out);
pf_status pf_onnx_attr_float(const pf_onnx_model *m, const pf_onnx_node *n, const char *name,
                             float def, float *out);
pf_status pf_onnx_attr_string(const pf_onnx_model *m, const pf_onnx_node *n, const char *name,
                              const char *def, const char **out);
pf_status pf_onnx_attr_ints(const pf_onnx_model *m, const pf_onnx_node *n, const char *name,
                            const int64_t **out, size_t *count);
pf_status pf_onnx_attr_floats(const pf_onnx_model *m, const pf_onnx_node *n, const char *name,
                              const float **out, size_t *count);
pf_status pf_onnx_attr_tensor(const pf_onnx_model *m, const pf_onnx_node *n, const char *name,
                              const pf_onnx_tensor **out);

/* A TensorProto on its own (the conformance cases' input_k.pb / output_k.pb),
 * owning its memory. Any fixed-width type is read (STRING is refused). */
typedef struct pf_onnx_tensor_data {
    char *name;           /* "" when the file names none */
    pf_onnx_dtype dtype;
    int ndim;
    int64_t *dims;        /* ndim sizes (NULL for a scalar) */
    int64_t numel;
    size_t nbytes;        /* numel * pf_onnx_dtype_size(dtype) */
    void *data;           /* nbytes, host order, malloc-aligned; NULL when nbytes == 0 */
} pf_onnx_tensor_data;

/* Fills *out (zeroed first; on failure left empty). Free with
 * pf_onnx_tensor_data_free. */
pf_status pf_onnx_read_tensor_file(const char *path, pf_onnx_tensor_data *out);
pf_status pf_onnx_read_tensor_memory(const void *data, size_t size, const char *name,
                                     pf_onnx_tensor_data *out);
/* NULL-safe; leaves *t zeroed. */
void pf_onnx_tensor_data_free(pf_onnx_tensor_data *t);

PF_END_DECLS

#endif
