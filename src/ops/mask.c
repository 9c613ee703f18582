/* pf_ops_mask_threshold, pf_ops_mask_argmax, pf_ops_mask_temporal,
 * pf_ops_mask_feather, pf_ops_mask_morph: the public wrappers of mask
 * post-processing and refinement.
 *
 * Everything is checked here (NULLs, dtypes, shapes, contiguity, parameter
 * ranges, overlaps, buffer ranges, memory reachability) before anything is
 * written, with messages naming the argument and its value, so the three
 * implementations only compute. The wrapper also owns the feather weights
 * (pf_mk_gauss_weights: one place, double arithmetic rounded to float once),
 * so the reference, the CPU path and the CUDA kernels filter with the same
 * float weights. Empty tensors (a zero dimension) are valid and do nothing. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../core/error.h"
#include "../device/backend.h"
#include "check.h"
#include "mask.h"
#include "ops_impl.h"

#define FN_THRESHOLD "pf_ops_mask_threshold"
#define FN_ARGMAX "pf_ops_mask_argmax"
#define FN_TEMPORAL "pf_ops_mask_temporal"
#define FN_FEATHER "pf_ops_mask_feather"
#define FN_MORPH "pf_ops_mask_morph"

int pf_mk_gauss_weights(float sigma, float *w)
{
    const double s = sigma;
    int r = (int)ceil(3.0 * s);
    if (r < 1) r = 1;
    if (r > PF_MK_MAX_RADIUS) r = PF_MK_MAX_RADIUS; /* sigma <= 64 is validated */
    double e[PF_MK_MAX_TAPS], sum = 0.0;
    for (int k = -r; k <= r; k++) {
        e[k + r] = exp(-(double)k * k / (2.0 * s * s));
        sum += e[k + r];
    }
    for (int k = 0; k <= 2 * r; k++) w[k] = (float)(e[k] / sum);
    return r;
}

/* Validation ------------------------------------------------------------------------ */

/* "[2, 3, 5]" into buf. */
static const char *shape_str(const pf_tensor *t, char *buf, size_t n)
{
    size_t len = 0;
    len += (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < t->ndim && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%lld", i ? ", " : "",
                                (long long)t->shape[i]);
    if (len < n) snprintf(buf + len, n - len, "]");
    return buf;
}

static int same_shape(const pf_tensor *a, const pf_tensor *b)
{
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

/* The checks every tensor argument gets: structure, contiguity, the bytes it
 * claims inside its buffer, reachability. Op-specific checks (dtype, shape)
 * follow in the callers. */
static pf_status check_tensor(const pf_ops *ops, const char *fn, const pf_tensor *t,
                              const char *name)
{
    if (!t) return pf_set_error(PF_ERR_INVALID, "%s: %s is NULL", fn, name);
    if (t->ndim < 0 || t->ndim > PF_TENSOR_MAX_DIMS)
        return pf_set_error(PF_ERR_INVALID, "%s: %s has %d dimensions (0..%d)", fn, name, t->ndim,
                            PF_TENSOR_MAX_DIMS);
    if ((int)t->dtype < 0 || t->dtype >= PF_DTYPE_COUNT)
        return pf_set_error(PF_ERR_INVALID, "%s: %s has unknown dtype %d", fn, name,
                            (int)t->dtype);
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0)
            return pf_set_error(PF_ERR_INVALID, "%s: %s shape[%d] is %lld", fn, name, i,
                                (long long)t->shape[i]);
        if (t->shape[i] && n > INT64_MAX / 8 / t->shape[i])
            return pf_set_error(PF_ERR_INVALID, "%s: %s has too many elements", fn, name);
        n *= t->shape[i];
    }
    if (!pf_tensor_is_contiguous(t)) {
        char sh[96], st[96];
        size_t len = 0;
        for (int i = 0; i < t->ndim && len < sizeof st; i++)
            len += (size_t)snprintf(st + len, sizeof st - len, "%s%lld", i ? " " : "",
                                    (long long)t->strides[i]);
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: %s is not contiguous (shape %s, strides %s)",
                            fn, name, shape_str(t, sh, sizeof sh), st);
    }
    if (n == 0) return PF_OK; /* empty: nothing is read or written */
    if (!t->data) return pf_set_error(PF_ERR_INVALID, "%s: %s data is NULL", fn, name);
    size_t bytes = (size_t)n * pf_dtype_size(t->dtype);
    return pf_ops_check_memory(ops, fn, t->buf, t->data, bytes, name);
}

static int overlap(const pf_tensor *a, const pf_tensor *b)
{
    size_t na = (size_t)pf_tensor_numel(a) * pf_dtype_size(a->dtype);
    size_t nb = (size_t)pf_tensor_numel(b) * pf_dtype_size(b->dtype);
    if (!na || !nb) return 0;
    uintptr_t pa = (uintptr_t)a->data, pb = (uintptr_t)b->data;
    return pa < pb + nb && pb < pa + na;
}

static pf_status check_dtype(const char *fn, const pf_tensor *t, const char *name, int allow_f16,
                             pf_dtype want)
{
    if (t->dtype == want || (allow_f16 && t->dtype == PF_DTYPE_F16)) return PF_OK;
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: %s dtype %s; expected %s%s", fn, name,
                        pf_dtype_name(t->dtype), pf_dtype_name(want), allow_f16 ? " or f16" : "");
}

static pf_status check_same_shape(const char *fn, const pf_tensor *a, const char *an,
                                  const pf_tensor *b, const char *bn)
{
    if (same_shape(a, b)) return PF_OK;
    char sa[96], sb[96];
    return pf_set_error(PF_ERR_INVALID, "%s: %s shape %s does not match %s shape %s", fn, an,
                        shape_str(a, sa, sizeof sa), bn, shape_str(b, sb, sizeof sb));
}

/* [..., H, W] with H and W in 0..PF_FRAME_MAX_DIM; *planes = product of the
 * leading dimensions. */
static pf_status check_planes(const char *fn, const pf_tensor *t, const char *name,
                              int64_t *planes, int *h, int *w)
{
    if (t->ndim < 2)
        return pf_set_error(PF_ERR_INVALID, "%s: %s has %d dimension%s; expected [..., H, W]", fn,
                            name, t->ndim, t->ndim == 1 ? "" : "s");
    int64_t H = t->shape[t->ndim - 2], W = t->shape[t->ndim - 1];
    if (H > PF_FRAME_MAX_DIM || W > PF_FRAME_MAX_DIM)
        return pf_set_error(PF_ERR_INVALID, "%s: %s plane is %lld x %lld (H x W); at most %d each",
                            fn, name, (long long)H, (long long)W, PF_FRAME_MAX_DIM);
    int64_t p = 1;
    for (int i = 0; i < t->ndim - 2; i++) p *= t->shape[i];
    *planes = p;
    *h = (int)H;
    *w = (int)W;
    return PF_OK;
}

static int is_cpu(const pf_ops *ops) { return ops->dev->props.type == PF_DEVICE_CPU; }

/* Threshold ------------------------------------------------------------------------------ */

pf_status pf_ops_mask_threshold(pf_ops *ops, const pf_tensor *src, bool logits, float threshold,
                                pf_tensor *dst)
{
    PF_CHECK_ARG(ops, FN_THRESHOLD, "ops is NULL");
    pf_status st = check_tensor(ops, FN_THRESHOLD, src, "src");
    if (st == PF_OK) st = check_tensor(ops, FN_THRESHOLD, dst, "dst");
    if (st == PF_OK) st = check_dtype(FN_THRESHOLD, src, "src", 1, PF_DTYPE_F32);
    if (st == PF_OK) st = check_dtype(FN_THRESHOLD, dst, "dst", 0, PF_DTYPE_U8);
    if (st == PF_OK) st = check_same_shape(FN_THRESHOLD, dst, "dst", src, "src");
    if (st != PF_OK) return st;
    if (!isfinite(threshold))
        return pf_set_error(PF_ERR_INVALID, FN_THRESHOLD ": threshold %g (must be finite)",
                            (double)threshold);
    if (overlap(src, dst))
        return pf_set_error(PF_ERR_INVALID, FN_THRESHOLD ": dst overlaps src in memory");
    pf_mk_threshold a = {.src = src->data, .dst = dst->data, .n = pf_tensor_numel(src),
                         .f16 = src->dtype == PF_DTYPE_F16, .logits = logits,
                         .threshold = threshold};
    if (a.n == 0) return PF_OK;
    if (is_cpu(ops))
        return ops->reference ? pf_ref_mask_threshold(ops, &a) : pf_cpu_mask_threshold(ops, &a);
#ifdef PF_HAVE_CUDA
    return pf_cuda_mask_threshold(ops, &a);
#else
    return pf_ops_no_backend(ops, FN_THRESHOLD);
#endif
}

/* Argmax / softmax ------------------------------------------------------------------------ */

static pf_status check_per_pixel(const pf_tensor *t, const char *name, pf_dtype want,
                                 const int64_t nhw[3], const char *src_layout)
{
    pf_status st = check_dtype(FN_ARGMAX, t, name, 0, want);
    if (st != PF_OK) return st;
    if (t->ndim == 3 && t->shape[0] == nhw[0] && t->shape[1] == nhw[1] && t->shape[2] == nhw[2])
        return PF_OK;
    char s[96];
    return pf_set_error(PF_ERR_INVALID,
                        FN_ARGMAX ": %s shape %s does not match [N, H, W] = [%lld, %lld, %lld] of "
                        "src (%s)",
                        name, shape_str(t, s, sizeof s), (long long)nhw[0], (long long)nhw[1],
                        (long long)nhw[2], src_layout);
}

pf_status pf_ops_mask_argmax(pf_ops *ops, const pf_tensor *src, pf_tensor *labels,
                             pf_tensor *prob, int cls)
{
    PF_CHECK_ARG(ops, FN_ARGMAX, "ops is NULL");
    pf_status st = check_tensor(ops, FN_ARGMAX, src, "src");
    if (st != PF_OK) return st;
    if (!labels && !prob)
        return pf_set_error(PF_ERR_INVALID,
                            FN_ARGMAX ": labels and prob are both NULL (at least one output)");
    if (src->ndim != 4)
        return pf_set_error(PF_ERR_INVALID,
                            FN_ARGMAX ": src has %d dimensions, expected 4 ([N, C, H, W] or "
                            "[N, H, W, C])",
                            src->ndim);
    if (src->layout != PF_LAYOUT_NCHW && src->layout != PF_LAYOUT_NHWC)
        return pf_set_error(PF_ERR_INVALID, FN_ARGMAX ": src layout is %s, expected nchw or nhwc",
                            pf_layout_name(src->layout));
    st = check_dtype(FN_ARGMAX, src, "src", 1, PF_DTYPE_F32);
    if (st != PF_OK) return st;
    const int nhwc = src->layout == PF_LAYOUT_NHWC;
    const int cdim = nhwc ? 3 : 1;
    const int64_t C = src->shape[cdim];
    const int64_t nhw[3] = {src->shape[0], nhwc ? src->shape[1] : src->shape[2],
                            nhwc ? src->shape[2] : src->shape[3]};
    const char *lay = nhwc ? "nhwc" : "nchw";
    if (C < 1)
        return pf_set_error(PF_ERR_INVALID, FN_ARGMAX ": src (%s) has 0 classes (dimension %d)",
                            lay, cdim);
    if (labels && C > 255)
        return pf_set_error(PF_ERR_INVALID,
                            FN_ARGMAX ": src (%s) has %lld classes (dimension %d); labels are u8, "
                            "so C must be <= 255",
                            lay, (long long)C, cdim);
    if (C > INT32_MAX)
        return pf_set_error(PF_ERR_INVALID, FN_ARGMAX ": src (%s) has %lld classes (at most %d)",
                            lay, (long long)C, INT32_MAX);
    if (prob && (cls < 0 || cls >= C))
        return pf_set_error(PF_ERR_INVALID,
                            FN_ARGMAX ": cls %d outside 0..%lld (src has %lld classes)", cls,
                            (long long)C - 1, (long long)C);
    if (labels) {
        st = check_tensor(ops, FN_ARGMAX, labels, "labels");
        if (st == PF_OK) st = check_per_pixel(labels, "labels", PF_DTYPE_U8, nhw, lay);
        if (st != PF_OK) return st;
        if (overlap(labels, src))
            return pf_set_error(PF_ERR_INVALID, FN_ARGMAX ": labels overlaps src in memory");
    }
    if (prob) {
        st = check_tensor(ops, FN_ARGMAX, prob, "prob");
        if (st == PF_OK) st = check_per_pixel(prob, "prob", PF_DTYPE_F32, nhw, lay);
        if (st != PF_OK) return st;
        if (overlap(prob, src))
            return pf_set_error(PF_ERR_INVALID, FN_ARGMAX ": prob overlaps src in memory");
        if (labels && overlap(prob, labels))
            return pf_set_error(PF_ERR_INVALID, FN_ARGMAX ": prob overlaps labels in memory");
    }
    pf_mk_argmax a = {.src = src->data, .labels = labels ? labels->data : NULL,
                      .prob = prob ? prob->data : NULL, .n = nhw[0], .hw = nhw[1] * nhw[2],
                      .c = (int32_t)C, .cls = prob ? cls : 0, .nhwc = nhwc,
                      .f16 = src->dtype == PF_DTYPE_F16};
    if (a.n == 0 || a.hw == 0) return PF_OK;
    if (is_cpu(ops))
        return ops->reference ? pf_ref_mask_argmax(ops, &a) : pf_cpu_mask_argmax(ops, &a);
#ifdef PF_HAVE_CUDA
    return pf_cuda_mask_argmax(ops, &a);
#else
    return pf_ops_no_backend(ops, FN_ARGMAX);
#endif
}

/* Temporal smoothing ----------------------------------------------------------------------- */

pf_status pf_ops_mask_temporal(pf_ops *ops, pf_tensor *state, const pf_tensor *mask, float alpha,
                               bool reset)
{
    return pf_ops_mask_temporal_cut(ops, state, mask, alpha, 0.0f, reset);
}

pf_status pf_ops_mask_temporal_cut(pf_ops *ops, pf_tensor *state, const pf_tensor *mask,
                                   float alpha, float cut, bool reset)
{
    PF_CHECK_ARG(ops, FN_TEMPORAL, "ops is NULL");
    pf_status st = check_tensor(ops, FN_TEMPORAL, state, "state");
    if (st == PF_OK) st = check_tensor(ops, FN_TEMPORAL, mask, "mask");
    if (st == PF_OK) st = check_dtype(FN_TEMPORAL, state, "state", 0, PF_DTYPE_F32);
    if (st == PF_OK) st = check_dtype(FN_TEMPORAL, mask, "mask", 0, PF_DTYPE_F32);
    if (st == PF_OK) st = check_same_shape(FN_TEMPORAL, mask, "mask", state, "state");
    if (st != PF_OK) return st;
    if (!(alpha > 0.0f && alpha <= 1.0f)) /* also rejects NaN */
        return pf_set_error(PF_ERR_INVALID, FN_TEMPORAL ": alpha %g outside (0, 1]",
                            (double)alpha);
    if (!(cut >= 0.0f && cut <= 1.0f)) /* also rejects NaN */
        return pf_set_error(PF_ERR_INVALID, FN_TEMPORAL ": scene-cut threshold %g outside [0, 1]",
                            (double)cut);
    if (overlap(state, mask))
        return pf_set_error(PF_ERR_INVALID, FN_TEMPORAL ": mask overlaps state in memory");
    pf_mk_temporal a = {.state = state->data, .mask = mask->data, .n = pf_tensor_numel(state),
                        .alpha = alpha, .reset = reset, .cut = cut};
    if (a.n == 0) return PF_OK;
    if (is_cpu(ops))
        return ops->reference ? pf_ref_mask_temporal(ops, &a) : pf_cpu_mask_temporal(ops, &a);
#ifdef PF_HAVE_CUDA
    return pf_cuda_mask_temporal(ops, &a);
#else
    return pf_ops_no_backend(ops, FN_TEMPORAL);
#endif
}

/* Feather and morphology --------------------------------------------------------------------- */

/* Shared by feather and morph: both tensors valid, of `dtype`, the same
 * [..., H, W] shape, not overlapping. */
static pf_status check_sep(pf_ops *ops, const char *fn, const pf_tensor *src,
                           const pf_tensor *dst, pf_dtype dtype, pf_mk_sep *a)
{
    pf_status st = check_tensor(ops, fn, src, "src");
    if (st == PF_OK) st = check_tensor(ops, fn, dst, "dst");
    if (st == PF_OK) st = check_dtype(fn, src, "src", 0, dtype);
    if (st == PF_OK) st = check_dtype(fn, dst, "dst", 0, dtype);
    if (st == PF_OK) st = check_same_shape(fn, dst, "dst", src, "src");
    int64_t planes = 0;
    int h = 0, w = 0;
    if (st == PF_OK) st = check_planes(fn, src, "src", &planes, &h, &w);
    if (st != PF_OK) return st;
    if (overlap(src, dst))
        return pf_set_error(PF_ERR_INVALID, "%s: dst overlaps src in memory (they may not alias)",
                            fn);
    memset(a, 0, sizeof *a);
    a->src = src->data;
    a->dst = dst->data;
    a->planes = planes;
    a->height = h;
    a->width = w;
    return PF_OK;
}

pf_status pf_ops_mask_feather(pf_ops *ops, const pf_tensor *src, pf_tensor *dst, float sigma)
{
    PF_CHECK_ARG(ops, FN_FEATHER, "ops is NULL");
    pf_mk_sep a;
    pf_status st = check_sep(ops, FN_FEATHER, src, dst, PF_DTYPE_F32, &a);
    if (st != PF_OK) return st;
    if (!(sigma > 0.0f && sigma <= 64.0f))
        return pf_set_error(PF_ERR_INVALID, FN_FEATHER ": sigma %g outside (0, 64]",
                            (double)sigma);
    float w[PF_MK_MAX_TAPS];
    a.radius = pf_mk_gauss_weights(sigma, w);
    a.weights = w;
    if (a.planes == 0 || a.height == 0 || a.width == 0) return PF_OK;
    if (is_cpu(ops))
        return ops->reference ? pf_ref_mask_feather(ops, &a) : pf_cpu_mask_feather(ops, &a);
#ifdef PF_HAVE_CUDA
    return pf_cuda_mask_feather(ops, &a);
#else
    return pf_ops_no_backend(ops, FN_FEATHER);
#endif
}

pf_status pf_ops_mask_morph(pf_ops *ops, const pf_tensor *src, pf_tensor *dst, pf_morph_op op,
                            int radius)
{
    PF_CHECK_ARG(ops, FN_MORPH, "ops is NULL");
    pf_mk_sep a;
    pf_status st = check_sep(ops, FN_MORPH, src, dst, PF_DTYPE_U8, &a);
    if (st != PF_OK) return st;
    if ((int)op < PF_MORPH_ERODE || (int)op > PF_MORPH_CLOSE)
        return pf_set_error(PF_ERR_INVALID,
                            FN_MORPH ": op %d is not erode (0), dilate (1), open (2) or close (3)",
                            (int)op);
    if (radius < 1 || radius > PF_MK_MAX_MORPH_RADIUS)
        return pf_set_error(PF_ERR_INVALID, FN_MORPH ": radius %d outside 1..%d", radius,
                            PF_MK_MAX_MORPH_RADIUS);
    a.radius = radius;
    a.op = (int32_t)op;
    if (a.planes == 0 || a.height == 0 || a.width == 0) return PF_OK;
    if (is_cpu(ops))
        return ops->reference ? pf_ref_mask_morph(ops, &a) : pf_cpu_mask_morph(ops, &a);
#ifdef PF_HAVE_CUDA
    return pf_cuda_mask_morph(ops, &a);
#else
    return pf_ops_no_backend(ops, FN_MORPH);
#endif
}
