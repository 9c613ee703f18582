/* Tensors: dtype/layout metadata over a referenced buffer. */
#include <string.h>

#include "error.h"
#include "pixflow/device.h"
#include "pixflow/tensor.h"

static const struct {
    const char *name;
    size_t size;
} dtypes[PF_DTYPE_COUNT] = {
    [PF_DTYPE_U8] = {"u8", 1},
    [PF_DTYPE_I32] = {"i32", 4},
    [PF_DTYPE_F16] = {"f16", 2},
    [PF_DTYPE_F32] = {"f32", 4},
};

static int valid_dtype(pf_dtype dt) { return dt >= 0 && dt < PF_DTYPE_COUNT; }

size_t pf_dtype_size(pf_dtype dt) { return valid_dtype(dt) ? dtypes[dt].size : 0; }
const char *pf_dtype_name(pf_dtype dt) { return valid_dtype(dt) ? dtypes[dt].name : "?"; }

pf_status pf_dtype_parse(const char *name, pf_dtype *out)
{
    PF_CHECK_ARG(name && out, "pf_dtype_parse", "NULL argument");
    for (int i = 0; i < PF_DTYPE_COUNT; i++)
        if (!strcmp(name, dtypes[i].name)) {
            *out = (pf_dtype)i;
            return PF_OK;
        }
    return pf_set_error(PF_ERR_INVALID, "unknown dtype '%s' (expected u8, i32, f16, f32)", name);
}

const char *pf_layout_name(pf_layout layout)
{
    switch (layout) {
    case PF_LAYOUT_NONE: return "none";
    case PF_LAYOUT_NCHW: return "nchw";
    case PF_LAYOUT_NHWC: return "nhwc";
    }
    return "?";
}

/* Validates the description and computes contiguous strides and the element
 * count (with overflow checks) when `strides_out` is given. */
static pf_status check_shape(const char *fn, pf_dtype dtype, int ndim, const int64_t *shape,
                             pf_layout layout, int64_t *strides_out, int64_t *numel)
{
    if (!valid_dtype(dtype)) return pf_set_error(PF_ERR_INVALID, "%s: invalid dtype %d", fn, (int)dtype);
    if (ndim < 0 || ndim > PF_TENSOR_MAX_DIMS)
        return pf_set_error(PF_ERR_INVALID, "%s: ndim %d outside 0..%d", fn, ndim,
                            PF_TENSOR_MAX_DIMS);
    if (ndim > 0 && !shape) return pf_set_error(PF_ERR_INVALID, "%s: shape is NULL", fn);
    if (layout != PF_LAYOUT_NONE && layout != PF_LAYOUT_NCHW && layout != PF_LAYOUT_NHWC)
        return pf_set_error(PF_ERR_INVALID, "%s: invalid layout %d", fn, (int)layout);
    if (layout != PF_LAYOUT_NONE && ndim != 4)
        return pf_set_error(PF_ERR_INVALID, "%s: layout %s needs 4 dims, got %d", fn,
                            pf_layout_name(layout), ndim);
    int64_t n = 1;
    const int64_t limit = INT64_MAX / 16;
    for (int i = ndim - 1; i >= 0; i--) {
        if (shape[i] < 0)
            return pf_set_error(PF_ERR_INVALID, "%s: dim %d is negative (%lld)", fn, i,
                                (long long)shape[i]);
        if (strides_out) strides_out[i] = n;
        if (shape[i] > 0 && n > limit / shape[i])
            return pf_set_error(PF_ERR_INVALID, "%s: shape too large (overflow at dim %d)", fn, i);
        n *= shape[i];
    }
    *numel = n;
    return PF_OK;
}

static void tensor_set(pf_tensor *t, pf_dtype dtype, int ndim, const int64_t *shape,
                       const int64_t *strides, pf_layout layout, void *data, pf_buffer *buf)
{
    memset(t, 0, sizeof *t);
    t->dtype = dtype;
    t->layout = layout;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        t->shape[i] = shape[i];
        t->strides[i] = strides[i];
    }
    t->data = data;
    t->buf = buf;
}

pf_status pf_tensor_alloc(pf_tensor *t, pf_dtype dtype, int ndim, const int64_t *shape,
                          pf_layout layout, pf_allocator *alloc, pf_stream *stream)
{
    PF_CHECK_ARG(t, "pf_tensor_alloc", "tensor is NULL");
    int64_t strides[PF_TENSOR_MAX_DIMS], numel = 0;
    pf_status st = check_shape("pf_tensor_alloc", dtype, ndim, shape, layout, strides, &numel);
    if (st != PF_OK) return st;
    size_t bytes = (size_t)numel * pf_dtype_size(dtype);
    pf_buffer *buf = NULL;
    /* The caching allocator refuses 0 bytes; give empty tensors one byte. */
    st = alloc ? pf_allocator_alloc(alloc, bytes ? bytes : 1, stream, &buf)
               : pf_buffer_alloc_host(bytes, &buf);
    if (st != PF_OK) return st;
    tensor_set(t, dtype, ndim, shape, strides, layout, pf_buffer_data(buf), buf);
    return PF_OK;
}

pf_status pf_tensor_wrap(pf_tensor *t, pf_buffer *buf, size_t offset, pf_dtype dtype, int ndim,
                         const int64_t *shape, const int64_t *strides, pf_layout layout)
{
    PF_CHECK_ARG(t && buf, "pf_tensor_wrap", "tensor or buffer is NULL");
    int64_t contig[PF_TENSOR_MAX_DIMS], numel = 0;
    pf_status st = check_shape("pf_tensor_wrap", dtype, ndim, shape, layout, contig, &numel);
    if (st != PF_OK) return st;
    const int64_t *use = strides ? strides : contig;
    size_t esz = pf_dtype_size(dtype);
    /* Highest element offset reachable; strides are non-negative. */
    uint64_t last = 0;
    for (int i = 0; i < ndim; i++) {
        if (use[i] < 0)
            return pf_set_error(PF_ERR_INVALID, "pf_tensor_wrap: stride %d is negative (%lld)", i,
                                (long long)use[i]);
        if (shape[i] > 0) {
            if (use[i] > 0 && (uint64_t)(shape[i] - 1) > (UINT64_MAX / 4 - last) / (uint64_t)use[i])
                return pf_set_error(PF_ERR_INVALID, "pf_tensor_wrap: strides overflow at dim %d", i);
            last += (uint64_t)(shape[i] - 1) * (uint64_t)use[i];
        }
    }
    size_t size = pf_buffer_size(buf);
    size_t need = numel == 0 ? 0 : (size_t)(last + 1) * esz;
    if (offset > size || need > size - offset)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_tensor_wrap: %s tensor needs bytes [%zu, %zu) but the buffer has %zu",
                            pf_dtype_name(dtype), offset, offset + need, size);
    uintptr_t addr = (uintptr_t)pf_buffer_data(buf) + offset;
    if (addr % esz)
        return pf_set_error(PF_ERR_INVALID, "pf_tensor_wrap: offset %zu misaligned for %s", offset,
                            pf_dtype_name(dtype));
    tensor_set(t, dtype, ndim, shape, use, layout, (void *)addr, pf_buffer_ref(buf));
    return PF_OK;
}

void pf_tensor_ref(pf_tensor *dst, const pf_tensor *src)
{
    if (!dst || !src || dst == src) return;
    *dst = *src;
    pf_buffer_ref(dst->buf);
}

void pf_tensor_unref(pf_tensor *t)
{
    if (!t) return;
    pf_buffer_unref(&t->buf);
    memset(t, 0, sizeof *t);
}

int64_t pf_tensor_numel(const pf_tensor *t)
{
    if (!t) return 0;
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

size_t pf_tensor_nbytes(const pf_tensor *t)
{
    if (!t || pf_tensor_numel(t) == 0) return 0;
    uint64_t last = 0;
    for (int i = 0; i < t->ndim; i++) last += (uint64_t)(t->shape[i] - 1) * (uint64_t)t->strides[i];
    return (size_t)(last + 1) * pf_dtype_size(t->dtype);
}

bool pf_tensor_is_contiguous(const pf_tensor *t)
{
    if (!t) return false;
    int64_t expect = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->strides[i] != expect) return false;
        expect *= t->shape[i];
    }
    return true;
}

pf_mem_domain pf_tensor_domain(const pf_tensor *t)
{
    return (t && t->buf) ? pf_buffer_domain(t->buf) : PF_MEM_HOST;
}

pf_status pf_tensor_slice(pf_tensor *dst, const pf_tensor *src, int dim, int64_t start, int64_t len)
{
    PF_CHECK_ARG(dst && src, "pf_tensor_slice", "NULL argument");
    if (dim < 0 || dim >= src->ndim)
        return pf_set_error(PF_ERR_INVALID, "pf_tensor_slice: dim %d outside 0..%d", dim,
                            src->ndim - 1);
    if (start < 0 || len < 0 || start > src->shape[dim] || len > src->shape[dim] - start)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_tensor_slice: range [%lld, %lld + %lld) outside dim %d of size %lld",
                            (long long)start, (long long)start, (long long)len, dim,
                            (long long)src->shape[dim]);
    pf_tensor t = *src;
    t.shape[dim] = len;
    t.data = (char *)src->data + (size_t)(start * src->strides[dim]) * pf_dtype_size(src->dtype);
    t.buf = pf_buffer_ref(src->buf);
    if (dst != src) *dst = t;
    else {
        pf_buffer_unref(&dst->buf);
        *dst = t;
    }
    return PF_OK;
}

/* IEEE 754 binary16 <-> binary32, round to nearest even. */
uint16_t pf_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xFFu;
    uint32_t man = x & 0x7FFFFFu;
    if (exp == 0xFF) /* inf or NaN (keep a quiet NaN bit) */
        return (uint16_t)(sign | 0x7C00u | (man ? 0x200u | (man >> 13) : 0));
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7C00u); /* overflow -> inf */
    if (e <= 0) {
        if (e < -10) return (uint16_t)sign; /* underflow -> signed zero */
        man |= 0x800000u;                   /* subnormal: add implicit bit */
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) half++; /* may carry into exp: ok */
    return (uint16_t)half;
}

float pf_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t man = h & 0x3FFu;
    uint32_t x;
    if (exp == 0) {
        if (man == 0) x = sign;
        else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400u));
            x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3FFu) << 13);
        }
    } else if (exp == 31) {
        x = sign | 0x7F800000u | (man << 13);
    } else {
        x = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}
