/* Private: the argument checks that the pf_ops wrappers of preprocess,
 * convert, resize, composite and mask (src/ops/) share.
 *
 * Every wrapper validates everything before an implementation runs, with a
 * message that starts with the public function's name (`fn`), names the
 * argument (`name` or `what`: "src", "srcs[3]", "bg->image plane 1", "mask")
 * and says what is wrong with which value. What several wrappers check in the
 * same words lives here: frames (format, size, planes, pointers, strides),
 * that memory lies inside its buffer and that the context's device can reach
 * it, overlaps, interpolation, YUV matrix and range. Checks only one op
 * makes (tensor shapes, its own parameters) stay in its wrapper.
 *
 * The 360° reprojection wrapper (reproject.c) keeps its own frame checks: it
 * takes packed single-plane formats only, and its messages (which its tests
 * check) and reachability rule differ from these. */
#ifndef PF_OPS_CHECK_H
#define PF_OPS_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "pixflow/ops.h"

PF_BEGIN_DECLS

/* The bit of pixel format `f` in pf_ops_frame_rule.formats. */
#define PF_OPS_FMT(f) (1u << (unsigned)(f))

/* What a frame argument may be beyond what every frame must be. */
typedef struct pf_ops_frame_rule {
    /* PF_OPS_FMT bits of the accepted formats; 0: any pixel format. */
    unsigned formats;
    /* With `formats`: the rejection reads "<fn>: <name> is <format>; <formats_text>". */
    const char *formats_text;
    /* Nonzero: a plane's stride above it is rejected ("exceeds N bytes"),
     * for implementations that index rows with 32 bits. */
    size_t max_stride;
    /* A plane's stride times its rows must not exceed this (0: INT64_MAX),
     * so byte offsets cannot overflow ("stride N too large"). */
    int64_t max_extent;
} pf_ops_frame_rule;

/* Byte ranges [lo, hi) of the planes of a checked frame, for overlap checks. */
typedef struct pf_ops_span {
    uintptr_t lo[PF_FRAME_MAX_PLANES], hi[PF_FRAME_MAX_PLANES];
    int n;
} pf_ops_span;

/* Frame `f` (NULL is an error) named `name`: format known and allowed by
 * `rule` (NULL: no extra rule), size 1..PF_FRAME_MAX_DIM, plane count, data
 * pointers, strides, every plane inside its buffer and reachable by the
 * context's device (pf_ops_check_memory). Fills `span` when not NULL. */
pf_status pf_ops_check_frame(const pf_ops *ops, const char *fn, const char *name,
                             const pf_frame *f, const pf_ops_frame_rule *rule, pf_ops_span *span);

/* [p, p + n) inside b's bytes (nothing to check when b is NULL), then
 * pf_ops_check_reachable. */
pf_status pf_ops_check_memory(const pf_ops *ops, const char *fn, const pf_buffer *b, const void *p,
                              size_t n, const char *what);
/* Whether memory of buffer `b` can be read and written by the context's
 * device. Memory without a buffer counts as pageable host memory (what
 * pf_frame_domain / pf_tensor_domain report). CPU: anything but another
 * device's memory. CUDA: its own device memory, or page-locked memory that a
 * CUDA device allocated (a CPU-device "pinned" buffer is ordinary heap). */
pf_status pf_ops_check_reachable(const pf_ops *ops, const char *fn, const pf_buffer *b,
                                 const char *what);

/* Whether some plane of `a` overlaps some plane of `b`. */
int pf_ops_spans_overlap(const pf_ops_span *a, const pf_ops_span *b);
/* PF_ERR_INVALID, naming the first two planes that overlap, when frames
 * `src` and `dst` share bytes (the op does not work in place). */
pf_status pf_ops_check_no_overlap(const char *fn, const pf_ops_span *src, const pf_ops_span *dst);

/* interp is nearest, bilinear or area. */
pf_status pf_ops_check_interp(const char *fn, pf_interp interp);
/* matrix is BT.601 or BT.709 and range limited or full; `prefix` goes
 * before the argument names in messages ("" or "bg->"). */
pf_status pf_ops_check_yuv(const char *fn, const char *prefix, pf_yuv_matrix matrix,
                           pf_yuv_range range);

/* The error of a non-CPU context in a build without the CUDA backend. */
pf_status pf_ops_no_backend(const pf_ops *ops, const char *fn);

PF_END_DECLS

#endif
