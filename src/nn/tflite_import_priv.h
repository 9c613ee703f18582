/* Private: shared state of the TFLite importer (tflite_import*.c).
 *
 * Layout invariant: every rank-4 runtime tensor of the file (NHWC) is held in
 * the IR as NCHW; every other tensor keeps the file's layout. Constants stay
 * host data in the slot (file bytes, or an owned F32 copy after a folded
 * DEQUANTIZE) until an op asks for them in a particular layout. */
#ifndef PF_NN_TFLITE_IMPORT_PRIV_H
#define PF_NN_TFLITE_IMPORT_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "import.h"

typedef struct pf_timp_slot {
    int value;           /* IR value in IR layout (NCHW when rank 4), -1 until made */
    const void *cdata;   /* constant data in the file's layout, NULL for runtime tensors */
    size_t cbytes;
    pf_ir_dtype cdtype;
    void *owned;         /* cdata when the importer made it (folded DEQUANTIZE) */
    int out_value;       /* pre-made graph output value (exact file name), -1 if none */
} pf_timp_slot;

typedef struct pf_timp {
    const pf_tflite *m;
    const pf_tfl_subgraph *sg;
    pf_ir_graph *g;
    pf_timp_slot *slots; /* one per tensor */
    int op_index;        /* operator being converted, for messages */
    bool batch_all;      /* every runtime tensor with dim 0 == 1 has the symbolic batch
                          * (pf_ir_from_tflite_batched) */
} pf_timp;

/* "model.tflite: operator 12 (CONV_2D) -> 'name': <fmt>" with st. */
pf_status pf_timp_fail(const pf_timp *c, pf_status st, const char *fmt, ...) PF_PRINTF(3, 4);

bool pf_timp_dtype(int tfl_type, pf_ir_dtype *out);
/* The file's shape of tensor t (batch as PF_IR_DIM_BATCH when its signature says
 * -1) into dims; returns the rank. */
int pf_timp_shape(const pf_timp *c, int t, int64_t *dims);
/* True when dim 0 of tensor t is the symbolic batch: its signature says -1,
 * or (batch_all) it is a runtime tensor whose file dim 0 is 1. */
bool pf_timp_batched(const pf_timp *c, int t);
/* Tensor t as an IR value in IR layout (constants materialised on first use). */
pf_status pf_timp_value(pf_timp *c, int t, int *id);
/* Tensor t (rank <= 4) as a rank-4 NCHW value, NHWC broadcasting rules kept:
 * lower ranks are aligned to the trailing NHWC dims first. */
pf_status pf_timp_value_nchw4(pf_timp *c, int t, int *id);
/* A new constant from host data (copied); fresh name from `prefix`. */
pf_status pf_timp_const(pf_timp *c, const char *prefix, pf_ir_dtype dt, int ndim,
                        const int64_t *dims, const void *data, size_t nbytes, int *id);
/* Constant data of t permuted by perm (rank 4), as a new IR constant. */
pf_status pf_timp_const_permuted(pf_timp *c, int t, const int *perm, int *id);
/* The IR value that tensor t's producer writes (made on first call). */
pf_status pf_timp_out_value(pf_timp *c, int t, int *id);
/* A node with one fresh intermediate output. */
pf_status pf_timp_node_tmp(pf_timp *c, pf_ir_op op, const int *in, int n_in,
                           const pf_ir_attr *attr, int *out);
/* A node writing tensor t's value. */
pf_status pf_timp_node_out(pf_timp *c, pf_ir_op op, const int *in, int n_in,
                           const pf_ir_attr *attr, int t, int *node_id);
/* TRANSPOSE of v by perm (rank 4) into a fresh value. */
pf_status pf_timp_transpose(pf_timp *c, int v, const int64_t *perm, int *out);

/* Like pf_ir_from_tflite, for a model whose inputs all have a fixed batch of
 * 1: every runtime tensor's leading 1 becomes the symbolic batch and RESHAPE
 * targets starting with 1 (or -1) copy dim 0 instead. The result is only a
 * candidate: the caller must check that it specialises at batch > 1 with
 * every output's dim 0 equal to the batch (model.c does), since a model may
 * move its batch elsewhere. */
pf_status pf_ir_from_tflite_batched(const pf_tflite *m, pf_ir_graph **out);

/* Per-operator conversion (tflite_import_ops.c). */
pf_status pf_timp_convert_op(pf_timp *c, const pf_tfl_operator *op);

extern const int64_t pf_timp_to_nchw[4]; /* {0, 3, 1, 2} */
extern const int64_t pf_timp_to_nhwc[4]; /* {0, 2, 3, 1} */

#endif
