/* pf_nn_read_onnx_tensor: an ONNX TensorProto file as a public pf_tensor,
 * for `pixflow model test` and users checking models against ONNX data. The
 * wider ONNX types are narrowed to the dtypes pixflow exchanges (see nn.h);
 * integers are range-checked, never wrapped. */
#include <stdio.h>
#include <string.h>

#include "../core/error.h"
#include "onnx_reader.h"
#include "pixflow/nn.h"

static int64_t load_int(const void *p, pf_onnx_dtype t, int64_t i, bool *unsigned_big)
{
    *unsigned_big = false;
    switch (t) {
    case PF_ONNX_INT64: return ((const int64_t *)p)[i];
    case PF_ONNX_INT32: return ((const int32_t *)p)[i];
    case PF_ONNX_INT16: return ((const int16_t *)p)[i];
    case PF_ONNX_INT8: return ((const int8_t *)p)[i];
    case PF_ONNX_UINT16: return ((const uint16_t *)p)[i];
    case PF_ONNX_UINT32: return ((const uint32_t *)p)[i];
    case PF_ONNX_UINT64: {
        uint64_t u = ((const uint64_t *)p)[i];
        if (u > (uint64_t)INT64_MAX) *unsigned_big = true;
        return (int64_t)(u & (uint64_t)INT64_MAX);
    }
    default: return 0;
    }
}

static pf_status convert(const pf_onnx_tensor_data *td, const char *path, pf_tensor *out)
{
    int64_t n = td->numel;
    switch (td->dtype) {
    case PF_ONNX_FLOAT:
        if (n) memcpy(out->data, td->data, (size_t)n * 4);
        return PF_OK;
    case PF_ONNX_FLOAT16:
        if (n) memcpy(out->data, td->data, (size_t)n * 2);
        return PF_OK;
    case PF_ONNX_DOUBLE:
        for (int64_t i = 0; i < n; i++) ((float *)out->data)[i] = (float)((const double *)td->data)[i];
        return PF_OK;
    case PF_ONNX_UINT8: case PF_ONNX_BOOL:
        if (n) memcpy(out->data, td->data, (size_t)n);
        return PF_OK;
    default:
        for (int64_t i = 0; i < n; i++) {
            bool big;
            int64_t x = load_int(td->data, td->dtype, i, &big);
            if (big || x < INT32_MIN || x > INT32_MAX)
                return pf_set_error(PF_ERR_UNSUPPORTED,
                                    "%s: element %lld of the %s tensor does not fit in i32 "
                                    "(pixflow exchanges integers as i32)",
                                    path, (long long)i, pf_onnx_dtype_name((int)td->dtype));
            ((int32_t *)out->data)[i] = (int32_t)x;
        }
        return PF_OK;
    }
}

pf_status pf_nn_read_onnx_tensor(const char *path, pf_tensor *out, char *name, size_t name_size)
{
    PF_CHECK_ARG(path && out, "pf_nn_read_onnx_tensor", "NULL argument");
    memset(out, 0, sizeof *out);
    if (name && name_size) name[0] = '\0';
    pf_onnx_tensor_data td;
    pf_status st = pf_onnx_read_tensor_file(path, &td);
    if (st) return st;
    pf_dtype dt;
    switch (td.dtype) {
    case PF_ONNX_FLOAT: case PF_ONNX_DOUBLE: dt = PF_DTYPE_F32; break;
    case PF_ONNX_FLOAT16: dt = PF_DTYPE_F16; break;
    case PF_ONNX_UINT8: case PF_ONNX_BOOL: dt = PF_DTYPE_U8; break;
    case PF_ONNX_INT64: case PF_ONNX_INT32: case PF_ONNX_INT16: case PF_ONNX_INT8:
    case PF_ONNX_UINT16: case PF_ONNX_UINT32: case PF_ONNX_UINT64: dt = PF_DTYPE_I32; break;
    default:
        st = pf_set_error(PF_ERR_UNSUPPORTED, "%s: %s tensors are not supported", path,
                          pf_onnx_dtype_name((int)td.dtype));
        pf_onnx_tensor_data_free(&td);
        return st;
    }
    if (td.ndim > PF_TENSOR_MAX_DIMS) {
        st = pf_set_error(PF_ERR_UNSUPPORTED, "%s: %d dims (at most %d)", path, td.ndim,
                          PF_TENSOR_MAX_DIMS);
        pf_onnx_tensor_data_free(&td);
        return st;
    }
    st = pf_tensor_alloc(out, dt, td.ndim, td.dims, PF_LAYOUT_NONE, NULL, NULL);
    if (st == PF_OK) st = convert(&td, path, out);
    if (st == PF_OK && name && name_size) snprintf(name, name_size, "%s", td.name ? td.name : "");
    if (st) pf_tensor_unref(out);
    pf_onnx_tensor_data_free(&td);
    return st;
}
