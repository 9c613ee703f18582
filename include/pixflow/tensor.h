/* pixflow/tensor.h - n-dimensional arrays on the host or a device.
 *
 * A pf_tensor is a small value holding one pf_buffer reference, like pf_frame.
 * Shapes are listed in memory order, outermost first; `layout` names what the
 * four dimensions of an image tensor mean (NCHW: [N, C, H, W]; NHWC:
 * [N, H, W, C]). Strides are in elements.
 *
 *   pf_tensor t = {0};
 *   int64_t shape[4] = {8, 3, 512, 512};
 *   pf_tensor_alloc(&t, PF_DTYPE_F16, 4, shape, PF_LAYOUT_NCHW, dev_alloc, stream);
 *   ...
 *   pf_tensor_unref(&t);
 */
#ifndef PIXFLOW_TENSOR_H
#define PIXFLOW_TENSOR_H

#include <stdbool.h>

#include "buffer.h"

PF_BEGIN_DECLS

typedef enum pf_dtype {
    PF_DTYPE_U8 = 0,
    PF_DTYPE_I32 = 1,
    PF_DTYPE_F16 = 2,
    PF_DTYPE_F32 = 3,
    PF_DTYPE_COUNT
} pf_dtype;

typedef enum pf_layout {
    PF_LAYOUT_NONE = 0, /* no image meaning attached */
    PF_LAYOUT_NCHW = 1,
    PF_LAYOUT_NHWC = 2
} pf_layout;

#define PF_TENSOR_MAX_DIMS 8

typedef struct pf_tensor {
    pf_dtype dtype;
    pf_layout layout;
    int ndim;                               /* 0 (scalar) .. PF_TENSOR_MAX_DIMS */
    int64_t shape[PF_TENSOR_MAX_DIMS];
    int64_t strides[PF_TENSOR_MAX_DIMS];    /* elements; >= 0 */
    void *data;                             /* address of element [0, 0, ...] */
    pf_buffer *buf;                         /* the reference keeping data alive */
} pf_tensor;

PF_API size_t pf_dtype_size(pf_dtype dt);
PF_API const char *pf_dtype_name(pf_dtype dt);
PF_API pf_status pf_dtype_parse(const char *name, pf_dtype *out);
PF_API const char *pf_layout_name(pf_layout layout);

/* Allocates a contiguous tensor. `alloc` NULL = host heap. Rejects negative
 * dims, ndim out of range, an NCHW/NHWC layout with ndim != 4, and sizes that
 * overflow. Zero-sized dims are allowed (an empty tensor). */
PF_API pf_status pf_tensor_alloc(pf_tensor *t, pf_dtype dtype, int ndim, const int64_t *shape,
                                 pf_layout layout, pf_allocator *alloc, pf_stream *stream);

/* Describes a tensor inside `buf` at byte `offset`, with `strides` in elements
 * (NULL = contiguous). Takes its own reference; checks every reachable element
 * is inside the buffer and aligned for the dtype. */
PF_API pf_status pf_tensor_wrap(pf_tensor *t, pf_buffer *buf, size_t offset, pf_dtype dtype,
                                int ndim, const int64_t *shape, const int64_t *strides,
                                pf_layout layout);

PF_API void pf_tensor_ref(pf_tensor *dst, const pf_tensor *src);
PF_API void pf_tensor_unref(pf_tensor *t);

/* Elements (product of the shape; 1 for a scalar). */
PF_API int64_t pf_tensor_numel(const pf_tensor *t);
/* Bytes spanned from the first to one past the last element. */
PF_API size_t pf_tensor_nbytes(const pf_tensor *t);
PF_API bool pf_tensor_is_contiguous(const pf_tensor *t);
PF_API pf_mem_domain pf_tensor_domain(const pf_tensor *t);

/* dst = src restricted to [start, start + len) along `dim` (a view sharing the
 * buffer: dst takes its own reference). */
PF_API pf_status pf_tensor_slice(pf_tensor *dst, const pf_tensor *src, int dim, int64_t start,
                                 int64_t len);

/* IEEE half precision conversions (round to nearest even; NaN and inf kept). */
PF_API uint16_t pf_f32_to_f16(float f);
PF_API float pf_f16_to_f32(uint16_t h);

PF_END_DECLS

#endif
