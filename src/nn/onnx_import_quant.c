/* ONNX import: quantization ops (QDQ pairs and the integer/QLinear ops).
 *
 * Each maps one to one onto an IR op with ONNX's input order (ir.h lists
 * them); dtype and shape rules are checked by shape inference, which names
 * the input. What is refused here: blocked quantization (opset 21
 * block_size), float8 and int4/int16 types (the IR has no such dtypes: the
 * tensor import already refuses them), and QuantizeLinear's output_dtype
 * where it disagrees with the zero point. */
#include <string.h>

#include "../core/error.h"
#include "onnx_import_priv.h"

#define TRY(x) \
    do { \
        pf_status st_ = (x); \
        if (st_ != PF_OK) return st_; \
    } while (0)

static pf_status convert_qdq(pf_oimp *c, const pf_onnx_node *n, pf_ir_op op)
{
    int in[3];
    TRY(pf_oimp_in_req(c, n, 0, &in[0]));
    TRY(pf_oimp_in_req(c, n, 1, &in[1]));
    TRY(pf_oimp_in(c, n, 2, &in[2]));
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    TRY(pf_onnx_attr_int(c->m, n, "axis", 1, &a.axis.axis));
    int64_t block;
    TRY(pf_onnx_attr_int(c->m, n, "block_size", 0, &block));
    if (block != 0) return pf_oimp_unsupported_attr(c, n, "block_size", "(blocked quantization)");
    if (op == PF_IR_QUANTIZE_LINEAR) {
        int64_t odt;
        TRY(pf_onnx_attr_int(c->m, n, "output_dtype", 0, &odt));
        pf_ir_dtype want;
        if (odt != 0 && (!pf_oimp_dtype((int)odt, &want) || (want != PF_IR_U8 && want != PF_IR_I8)))
            return pf_oimp_unsupported_attr(c, n, "output_dtype", "(not uint8/int8)");
        if (odt != 0 && in[2] >= 0 && c->g->values[in[2]].dtype != want)
            return pf_oimp_unsupported_attr(c, n, "output_dtype", "(differs from the zero point's)");
        if (odt != 0 && in[2] < 0 && want != PF_IR_U8) {
            /* No zero point: the IR takes the output type from it, so make one. */
            int8_t zero = 0;
            TRY(pf_ir_add_const(c->g, pf_ir_unique_name(c->g, "zero_point"), PF_IR_I8, 0, NULL,
                                &zero, 1, &in[2]));
        }
    }
    int n_in = in[2] >= 0 ? 3 : 2;
    return pf_oimp_emit(c, n, op, in, n_in, 1, &a,
                        op == PF_IR_DEQUANTIZE_LINEAR ? PF_IR_F32 : PF_IR_U8, NULL);
}

/* Inputs [0, n_req) required, [n_req, n_max) optional (trailing absent ones dropped). */
static pf_status inputs(pf_oimp *c, const pf_onnx_node *n, int n_req, int n_max, int *in,
                        int *n_in)
{
    *n_in = 0;
    for (int k = 0; k < n_max; k++) {
        if (k < n_req) TRY(pf_oimp_in_req(c, n, (size_t)k, &in[k]));
        else TRY(pf_oimp_in(c, n, (size_t)k, &in[k]));
        if (in[k] >= 0) *n_in = k + 1;
    }
    return PF_OK;
}

pf_status pf_oimp_convert_quant(pf_oimp *c, const pf_onnx_node *n, bool *handled)
{
    const char *t = n->op_type;
    int in[9], n_in;
    pf_ir_attr a;
    *handled = true;
    if (!strcmp(t, "QuantizeLinear")) return convert_qdq(c, n, PF_IR_QUANTIZE_LINEAR);
    if (!strcmp(t, "DequantizeLinear")) return convert_qdq(c, n, PF_IR_DEQUANTIZE_LINEAR);
    if (!strcmp(t, "QLinearConv")) {
        TRY(inputs(c, n, 8, 9, in, &n_in));
        TRY(pf_oimp_conv_attr(c, n, in[3], &a));
        return pf_oimp_emit(c, n, PF_IR_QLINEAR_CONV, in, n_in, 1, &a, PF_IR_U8, NULL);
    }
    if (!strcmp(t, "QLinearMatMul")) {
        TRY(inputs(c, n, 8, 8, in, &n_in));
        return pf_oimp_emit(c, n, PF_IR_QLINEAR_MATMUL, in, n_in, 1, NULL, PF_IR_U8, NULL);
    }
    if (!strcmp(t, "ConvInteger")) {
        TRY(inputs(c, n, 2, 4, in, &n_in));
        TRY(pf_oimp_conv_attr(c, n, in[1], &a));
        return pf_oimp_emit(c, n, PF_IR_CONV_INTEGER, in, n_in, 1, &a, PF_IR_I32, NULL);
    }
    if (!strcmp(t, "MatMulInteger")) {
        TRY(inputs(c, n, 2, 4, in, &n_in));
        return pf_oimp_emit(c, n, PF_IR_MATMUL_INTEGER, in, n_in, 1, NULL, PF_IR_I32, NULL);
    }
    *handled = false;
    return PF_OK;
}
