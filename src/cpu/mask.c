/* Multi-threaded CPU path of mask post-processing and refinement.
 *
 * Design
 * - Work is split by (ith, nth) over the context's pool
 *   (pf_threadpool_parallel_for): contiguous element ranges for threshold and
 *   temporal, contiguous pixel ranges for argmax, contiguous row ranges for
 *   each pass of the separable filters. nth is capped so that no thread gets
 *   a sliver (a few thousand elements or one row at least).
 * - Every output value is computed with the same float operations in the
 *   same order as the reference (src/cpu/mask_ref.c; the formulas are listed
 *   in src/ops/mask.h), so the two agree to the bit and the test compares
 *   them with memcmp. Speed comes from loop order only: loops run along x
 *   with the tap or class index outside, so the compiler vectorises across
 *   pixels without reassociating any per-pixel sum.
 * - Hot loops are written as blocks of PF_MK_VB (64) elements with a fixed
 *   trip count, restrict pointers and no branches (selects by masks), plus
 *   a scalar tail: the release build's -O2 uses GCC's "very cheap"
 *   vectoriser, which only vectorises a loop it can replace entirely (no
 *   epilogue, no alias checks); plain loops over a runtime length stay
 *   scalar there (measured: morphology about 10x slower).
 * - Argmax over NCHW works on chunks of ARG_CHUNK pixels: each class
 *   plane's chunk is read (streaming along the plane, not striding across
 *   planes per pixel) and converted once into per-thread scratch while the
 *   maximum is tracked, and the softmax pass reuses the floats (up to
 *   ARG_CACHE_C classes). NHWC reads each pixel's C contiguous values. The
 *   softmax costs C + 1 expf per pixel (glibc, scalar: that is what the
 *   reference defines), which dominates argmax with prob on the CPU.
 * - Separable passes (feather, morphology) go through intermediate planes in
 *   pf_ops_scratch (host memory on the CPU device; it grows once). Planes are
 *   processed in groups sized so the intermediates stay near SCRATCH_CAP,
 *   with one parallel_for per pass and group. A horizontal pass first copies
 *   its source row into a per-thread buffer padded by the radius on both
 *   sides with the edge values (edge clamp for the Gaussian; for min/max,
 *   repeating an edge pixel that is already inside the window changes
 *   nothing, so this equals "pixels outside ignored"), then accumulates tap
 *   by tap across the whole row. The vertical pass accumulates whole rows of
 *   the intermediate, clamped (feather) or clipped to the image (morphology).
 * - Morphology is the plain O(r) per pixel and pass (2r + 1 byte min/max per
 *   pass, 16 per SSE2 instruction); for r <= 64 that is fast enough on the
 *   CPU, so no van Herk/Gil-Werman. */
#include <math.h>
#include <string.h>

#include "../ops/mask.h"
#include "../ops/ops_impl.h"
#include "morph_stream.h"
#include "simd.h"

#define ALIGN64(x) (((x) + 63) & ~(size_t)63)
#define ARG_CHUNK 256                       /* pixels per argmax chunk */
#define XBLOCK 2048                         /* row block kept in L1 by the taps loops */
#define SCRATCH_CAP ((size_t)32 << 20)      /* intermediate planes per group */
#define MIN_ELEMS 16384                     /* elementwise work per thread, at least */

static int threads_for(const pf_ops *ops, int64_t units, int64_t min_per_thread)
{
    int nth = ops->pool ? pf_threadpool_size(ops->pool) : 1;
    int64_t cap = (units + min_per_thread - 1) / min_per_thread;
    if (nth > cap) nth = (int)cap;
    return nth < 1 ? 1 : nth;
}

static pf_status run(pf_ops *ops, int nth, pf_parallel_fn fn, void *job)
{
    if (nth <= 1 || !ops->pool) {
        fn(job, 0, 1);
        return PF_OK;
    }
    return pf_threadpool_parallel_for(ops->pool, nth, fn, job);
}

static inline void range(int64_t n, int ith, int nth, int64_t *lo, int64_t *hi)
{
    *lo = n * ith / nth;
    *hi = n * (ith + 1) / nth;
}

static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

#define VB PF_MK_VB

/* o[i] += w * b[i] */
static inline void axpy_vb(float *restrict o, const float *restrict b, float w)
{
    for (int i = 0; i < VB; i++) o[i] += w * b[i];
}
static void axpy(float *restrict o, const float *restrict b, float w, int n)
{
    int i = 0;
    for (; i + VB <= n; i += VB) axpy_vb(o + i, b + i, w);
    for (; i < n; i++) o[i] += w * b[i];
}

static inline void max_vb(uint8_t *restrict o, const uint8_t *restrict b)
{
    for (int i = 0; i < VB; i++) o[i] = o[i] > b[i] ? o[i] : b[i];
}
static inline void min_vb(uint8_t *restrict o, const uint8_t *restrict b)
{
    for (int i = 0; i < VB; i++) o[i] = o[i] < b[i] ? o[i] : b[i];
}
/* o = max(o, b) (is_max) or min(o, b), elementwise over n bytes. */
static void minmax(uint8_t *restrict o, const uint8_t *restrict b, int n, int is_max)
{
    int i = 0;
    if (is_max) {
        for (; i + VB <= n; i += VB) max_vb(o + i, b + i);
        for (; i < n; i++) o[i] = o[i] > b[i] ? o[i] : b[i];
    } else {
        for (; i + VB <= n; i += VB) min_vb(o + i, b + i);
        for (; i < n; i++) o[i] = o[i] < b[i] ? o[i] : b[i];
    }
}

/* n consecutive values from element `off` of src, as floats. */
static void load_floats(const void *src, int f16, int64_t off, int n, float *restrict out)
{
    if (f16) {
        const uint16_t *s = (const uint16_t *)src + off;
        int j = 0;
        for (; j + VB <= n; j += VB) pf_mk_f16_block(s + j, out + j);
        for (; j < n; j++) out[j] = pf_mk_f16_to_f32(s[j]);
    } else {
        memcpy(out, (const float *)src + off, sizeof(float) * (size_t)n);
    }
}

/* Threshold -------------------------------------------------------------------------------- */

/* d[i] = x[i] >= t ? 255 : 0, through an int mask (-1 narrows to 255). */
static inline void ge_vb(const float *restrict x, float t, uint8_t *restrict d)
{
    int32_t m[VB];
    for (int i = 0; i < VB; i++) m[i] = -(int32_t)(x[i] >= t);
    for (int i = 0; i < VB; i++) d[i] = (uint8_t)m[i];
}

static void threshold_job(void *user, int ith, int nth)
{
    const pf_mk_threshold *a = user;
    int64_t lo, hi;
    range(a->n, ith, nth, &lo, &hi);
    const float t = a->threshold;
    uint8_t *restrict dst = a->dst;
    if (!a->f16 && !a->logits) {
        const float *restrict src = a->src;
        int64_t i = lo;
        for (; i + VB <= hi; i += VB) ge_vb(src + i, t, dst + i);
        for (; i < hi; i++) dst[i] = src[i] >= t ? 255 : 0;
        return;
    }
    float buf[ARG_CHUNK];
    for (int64_t i = lo; i < hi; i += ARG_CHUNK) {
        int n = hi - i < ARG_CHUNK ? (int)(hi - i) : ARG_CHUNK;
        load_floats(a->src, a->f16, i, n, buf);
        if (a->logits)
            for (int j = 0; j < n; j++) buf[j] = 1.0f / (1.0f + expf(-buf[j]));
        for (int j = 0; j < n; j++) dst[i + j] = buf[j] >= t ? 255 : 0;
    }
}

pf_status pf_cpu_mask_threshold(pf_ops *ops, const pf_mk_threshold *a)
{
    int nth = threads_for(ops, a->n, a->logits ? MIN_ELEMS / 8 : MIN_ELEMS);
    return run(ops, nth, threshold_job, (void *)a);
}

/* Argmax / softmax ---------------------------------------------------------------------------- */

/* best = max(best, x) with label = c where x wins (strictly: the lowest
 * index wins ties; NaN never wins, as in the reference), by masks. */
static inline void argmax_vb(const float *restrict x, float *restrict best, int32_t *restrict label,
                             int32_t c)
{
    for (int i = 0; i < VB; i++) {
        int32_t m = -(int32_t)(x[i] > best[i]);
        best[i] = x[i] > best[i] ? x[i] : best[i];
        label[i] = (label[i] & ~m) | (c & m);
    }
}

/* Pixels [i0, i0 + n) of image img, NCHW (n <= ARG_CHUNK): each class plane
 * is read and converted into x[c * ARG_CHUNK ...] (per-thread scratch)
 * while the maximum is tracked; the softmax pass reuses the converted
 * values. With more than ARG_CACHE_C classes the cache would outgrow L2, so
 * x holds one row and the softmax pass reads the planes again. */
#define ARG_CACHE_C 1024
static void argmax_chunk_nchw(const pf_mk_argmax *a, int64_t img, int64_t i0, int n, float *x)
{
    float best[ARG_CHUNK], sum[ARG_CHUNK];
    int32_t label[ARG_CHUNK];
    const int64_t HW = a->hw, C = a->c;
    const int64_t base = img * C * HW + i0;
    const int64_t xs = C <= ARG_CACHE_C ? ARG_CHUNK : 0; /* row stride in x */
    const int nb = n - n % VB;
    load_floats(a->src, a->f16, base, n, x);
    memcpy(best, x, sizeof(float) * (size_t)n);
    memset(label, 0, sizeof(int32_t) * (size_t)n);
    for (int64_t c = 1; c < C; c++) {
        float *xc = x + c * xs;
        load_floats(a->src, a->f16, base + c * HW, n, xc);
        for (int j = 0; j < nb; j += VB) argmax_vb(xc + j, best + j, label + j, (int32_t)c);
        for (int j = nb; j < n; j++)
            if (xc[j] > best[j]) {
                best[j] = xc[j];
                label[j] = (int32_t)c;
            }
    }
    if (a->labels) {
        uint8_t *l = a->labels + img * HW + i0;
        for (int j = 0; j < n; j++) l[j] = (uint8_t)label[j];
    }
    if (!a->prob) return;
    for (int j = 0; j < n; j++) sum[j] = 0.0f;
    for (int64_t c = 0; c < C; c++) {
        float *xc = x + c * xs;
        if (!xs) load_floats(a->src, a->f16, base + c * HW, n, xc);
        for (int j = 0; j < n; j++) sum[j] += expf(xc[j] - best[j]);
    }
    float *xk = x + (int64_t)a->cls * xs;
    if (!xs) load_floats(a->src, a->f16, base + (int64_t)a->cls * HW, n, xk);
    float *prob = a->prob + img * HW + i0;
    for (int j = 0; j < n; j++) prob[j] = expf(xk[j] - best[j]) / sum[j];
}

/* One NHWC pixel: its C values are contiguous. */
static void argmax_pixel_nhwc(const pf_mk_argmax *a, int64_t p, float *x)
{
    const int C = a->c;
    load_floats(a->src, a->f16, p * C, C, x);
    float best = x[0];
    int label = 0;
    for (int c = 1; c < C; c++)
        if (x[c] > best) {
            best = x[c];
            label = c;
        }
    if (a->labels) a->labels[p] = (uint8_t)label;
    if (a->prob) {
        float s = 0.0f;
        for (int c = 0; c < C; c++) s += expf(x[c] - best);
        a->prob[p] = expf(x[a->cls] - best) / s;
    }
}

typedef struct argmax_job {
    const pf_mk_argmax *a;
    float *xbuf;          /* per thread: C * ARG_CHUNK (NCHW) or C (NHWC) floats */
    size_t xstride;
} argmax_job;

static void argmax_job_fn(void *user, int ith, int nth)
{
    const argmax_job *job = user;
    const pf_mk_argmax *a = job->a;
    float *x = job->xbuf + (size_t)ith * job->xstride;
    int64_t lo, hi;
    range(a->n * a->hw, ith, nth, &lo, &hi);
    if (a->nhwc) {
        for (int64_t p = lo; p < hi; p++) argmax_pixel_nhwc(a, p, x);
        return;
    }
    for (int64_t p = lo; p < hi;) {
        int64_t img = p / a->hw, i = p - img * a->hw;
        int64_t left = a->hw - i; /* a chunk never crosses images */
        if (left > hi - p) left = hi - p;
        int n = left < ARG_CHUNK ? (int)left : ARG_CHUNK;
        argmax_chunk_nchw(a, img, i, n, x);
        p += n;
    }
}

pf_status pf_cpu_mask_argmax(pf_ops *ops, const pf_mk_argmax *a)
{
    int64_t pixels = a->n * a->hw;
    int64_t work = (int64_t)a->c * (a->prob ? 4 : 1);
    int nth = threads_for(ops, pixels, MIN_ELEMS / (work < MIN_ELEMS ? work : MIN_ELEMS));
    size_t per = (size_t)a->c; /* NHWC: one pixel's classes */
    if (!a->nhwc) per = a->c <= ARG_CACHE_C ? per * ARG_CHUNK : ARG_CHUNK;
    argmax_job job = {.a = a, .xstride = ALIGN64(per * sizeof(float)) / sizeof(float)};
    void *mem = NULL;
    pf_status st = pf_ops_scratch(ops, job.xstride * sizeof(float) * (size_t)nth, &mem);
    if (st != PF_OK) return st;
    job.xbuf = mem;
    return run(ops, nth, argmax_job_fn, &job);
}

/* Temporal smoothing --------------------------------------------------------------------------- */

static inline void temporal_vb(float *restrict s, const float *restrict m, float al, float be)
{
    for (int i = 0; i < VB; i++) s[i] = al * m[i] + be * s[i];
}

static void temporal_job(void *user, int ith, int nth)
{
    const pf_mk_temporal *a = user;
    int64_t lo, hi;
    range(a->n, ith, nth, &lo, &hi);
    if (a->reset) {
        memcpy(a->state + lo, a->mask + lo, sizeof(float) * (size_t)(hi - lo));
        return;
    }
    float *restrict s = a->state;
    const float *restrict m = a->mask;
    const float al = a->alpha, be = 1.0f - a->alpha;
    int64_t i = lo;
    for (; i + VB <= hi; i += VB) temporal_vb(s + i, m + i, al, be);
    for (; i < hi; i++) s[i] = al * m[i] + be * s[i];
}

pf_status pf_cpu_mask_temporal(pf_ops *ops, const pf_mk_temporal *a)
{
    /* The scene-cut test reads every value once, single-threaded in index order like the
     * reference (one pass over a model-sized mask: cheap next to the model). */
    pf_mk_temporal b = *a;
    if (!b.reset && b.cut > 0 && pf_mk_mean_abs_diff(b.mask, b.state, b.n) > b.cut) b.reset = 1;
    return run(ops, threads_for(ops, b.n, MIN_ELEMS), temporal_job, &b);
}

/* Separable passes ----------------------------------------------------------------------------- */

typedef struct sep_job {
    const pf_mk_sep *a;
    int64_t rows;         /* rows of this group: planes * H */
    const void *in;       /* first plane of the group */
    void *out;
    int is_max;           /* morph pass: dilate (1) or erode (0) */
    int simd;             /* pf_cpu_simd_level() at the call */
    uint8_t *rowbuf;      /* per thread, rowbuf_stride bytes each */
    size_t rowbuf_stride;
} sep_job;

static void feather_h(void *user, int ith, int nth)
{
    const sep_job *job = user;
    const int W = job->a->width, R = job->a->radius;
    const size_t Ws = (size_t)W;
    const float *w = job->a->weights;
    float *restrict buf = (float *)(job->rowbuf + (size_t)ith * job->rowbuf_stride);
    int64_t lo, hi;
    range(job->rows, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const float *srow = (const float *)job->in + (size_t)r * Ws;
        float *restrict out = (float *)job->out + (size_t)r * Ws;
        /* buf[i] = srow[clamp(i - R, 0, W - 1)], i in 0 .. W + 2R - 1 */
        for (int i = 0; i < R; i++) buf[i] = srow[0];
        memcpy(buf + R, srow, sizeof(float) * Ws);
        for (int i = 0; i < R; i++) buf[R + W + i] = srow[W - 1];
        /* SIMD kernel first (whole vectors, same sums), the blocks finish */
        const int done = pf_simd_fir_taps(job->simd, out, buf, w, 2 * R + 1, 1, W);
        for (int x0 = done; x0 < W; x0 += XBLOCK) {
            const int n = W - x0 < XBLOCK ? W - x0 : XBLOCK;
            float *restrict o = out + x0;
            for (int x = 0; x < n; x++) o[x] = 0.0f;
            for (int k = 0; k <= 2 * R; k++) axpy(o, buf + x0 + k, w[k], n);
        }
    }
}

static void feather_v(void *user, int ith, int nth)
{
    const sep_job *job = user;
    const int H = job->a->height, W = job->a->width, R = job->a->radius;
    const size_t Ws = (size_t)W, plane = (size_t)H * Ws;
    const float *w = job->a->weights;
    int64_t lo, hi;
    range(job->rows, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const int64_t q = r / H;
        const int y = (int)(r - q * H);
        const float *in = (const float *)job->in + (size_t)q * plane;
        float *restrict out = (float *)job->out + (size_t)r * Ws;
        const float *rows[PF_MK_MAX_TAPS];
        for (int k = 0; k <= 2 * R; k++) rows[k] = in + (size_t)clampi(y + k - R, 0, H - 1) * Ws;
        const int done = pf_simd_fir_rows(job->simd, out, rows, w, 2 * R + 1, W);
        for (int x0 = done; x0 < W; x0 += XBLOCK) {
            const int n = W - x0 < XBLOCK ? W - x0 : XBLOCK;
            float *restrict o = out + x0;
            for (int x = 0; x < n; x++) o[x] = 0.0f;
            for (int k = 0; k <= 2 * R; k++)
                axpy(o, in + (size_t)clampi(y + k - R, 0, H - 1) * Ws + x0, w[k], n);
        }
    }
}

pf_status pf_cpu_mask_feather(pf_ops *ops, const pf_mk_sep *a)
{
    const int H = a->height, W = a->width, R = a->radius;
    const size_t plane = (size_t)H * (size_t)W * sizeof(float);
    const int64_t group = pf_mk_plane_group(a->planes, plane, SCRATCH_CAP);
    const int nth = threads_for(ops, group * H, 1);
    const size_t rowbuf_stride = ALIGN64(((size_t)W + 2 * (size_t)R) * sizeof(float));
    const size_t tmp_bytes = ALIGN64((size_t)group * plane);
    void *mem = NULL;
    pf_status st = pf_ops_scratch(ops, tmp_bytes + rowbuf_stride * (size_t)nth, &mem);
    if (st != PF_OK) return st;
    float *tmp = mem;
    sep_job job = {.a = a, .rowbuf = (uint8_t *)mem + tmp_bytes, .rowbuf_stride = rowbuf_stride,
                   .simd = pf_cpu_simd_level()};
    for (int64_t p0 = 0; p0 < a->planes; p0 += group) {
        const int64_t g = a->planes - p0 < group ? a->planes - p0 : group;
        const size_t off = (size_t)p0 * (size_t)H * (size_t)W;
        job.rows = g * H;
        job.in = (const float *)a->src + off;
        job.out = tmp;
        st = run(ops, nth, feather_h, &job);
        if (st != PF_OK) return st;
        job.in = tmp;
        job.out = (float *)a->dst + off;
        st = run(ops, nth, feather_v, &job);
        if (st != PF_OK) return st;
    }
    return PF_OK;
}

static void morph_h(void *user, int ith, int nth)
{
    const sep_job *job = user;
    const int W = job->a->width, r = job->a->radius;
    const size_t Ws = (size_t)W;
    uint8_t *restrict buf = job->rowbuf + (size_t)ith * job->rowbuf_stride;
    int64_t lo, hi;
    range(job->rows, ith, nth, &lo, &hi);
    for (int64_t row = lo; row < hi; row++) {
        const uint8_t *srow = (const uint8_t *)job->in + (size_t)row * Ws;
        uint8_t *restrict o = (uint8_t *)job->out + (size_t)row * Ws;
        memset(buf, srow[0], (size_t)r);
        memcpy(buf + r, srow, Ws);
        memset(buf + r + W, srow[W - 1], (size_t)r);
        const int done = pf_simd_minmax_taps(job->simd, o, buf, 2 * r + 1, W, job->is_max);
        memcpy(o + done, buf + done, Ws - (size_t)done);
        for (int k = 1; k <= 2 * r; k++) minmax(o + done, buf + k + done, W - done, job->is_max);
    }
}

static void morph_v(void *user, int ith, int nth)
{
    const sep_job *job = user;
    const int H = job->a->height, W = job->a->width, r = job->a->radius;
    const size_t Ws = (size_t)W, plane = (size_t)H * Ws;
    int64_t lo, hi;
    range(job->rows, ith, nth, &lo, &hi);
    for (int64_t row = lo; row < hi; row++) {
        const int64_t q = row / H;
        const int y = (int)(row - q * H);
        const uint8_t *in = (const uint8_t *)job->in + (size_t)q * plane;
        uint8_t *restrict o = (uint8_t *)job->out + (size_t)row * Ws;
        const int y0 = y - r < 0 ? 0 : y - r, y1 = y + r > H - 1 ? H - 1 : y + r;
        const uint8_t *rows[2 * PF_MK_MAX_MORPH_RADIUS + 1];
        for (int yy = y0; yy <= y1; yy++) rows[yy - y0] = in + (size_t)yy * Ws;
        const size_t d = (size_t)pf_simd_minmax_rows(job->simd, o, rows, y1 - y0 + 1, W, job->is_max);
        memcpy(o + d, in + (size_t)y0 * Ws + d, Ws - d);
        for (int yy = y0 + 1; yy <= y1; yy++)
            minmax(o + d, in + (size_t)yy * Ws + d, W - (int)d, job->is_max);
    }
}

/* One erosion or dilation of g planes: in -> (horizontal) a -> (vertical) out. */
static pf_status morph_stage(pf_ops *ops, int nth, sep_job *job, const uint8_t *in, uint8_t *mid,
                             uint8_t *out, int is_max)
{
    job->is_max = is_max;
    job->in = in;
    job->out = mid;
    pf_status st = run(ops, nth, morph_h, job);
    if (st != PF_OK) return st;
    job->in = mid;
    job->out = out;
    return run(ops, nth, morph_v, job);
}

pf_status pf_cpu_mask_morph(pf_ops *ops, const pf_mk_sep *a)
{
    /* With the SIMD kernels, the fused passes (morph_stream.c) when their
     * rings fit; the plane passes below otherwise and without SIMD. */
    const int simd = pf_cpu_simd_level();
    pf_status sst;
    if (simd >= PF_SIMD_AVX2 && pf_cpu_morph_stream(ops, a, simd, &sst)) return sst;
    const int H = a->height, W = a->width, r = a->radius;
    const size_t plane = (size_t)H * (size_t)W;
    const int two = a->op == PF_MORPH_OPEN || a->op == PF_MORPH_CLOSE;
    const int64_t group = pf_mk_plane_group(a->planes, plane * (two ? 2 : 1), SCRATCH_CAP);
    const int nth = threads_for(ops, group * H, 1);
    const size_t rowbuf_stride = ALIGN64((size_t)W + 2 * (size_t)r);
    const size_t tmp_bytes = ALIGN64((size_t)group * plane);
    void *mem = NULL;
    pf_status st = pf_ops_scratch(ops, tmp_bytes * (two ? 2 : 1) + rowbuf_stride * (size_t)nth,
                                  &mem);
    if (st != PF_OK) return st;
    uint8_t *ta = mem, *tb = ta + tmp_bytes;
    sep_job job = {.a = a, .rowbuf = ta + tmp_bytes * (two ? 2 : 1),
                   .rowbuf_stride = rowbuf_stride, .simd = simd};
    /* First and second stage: erode = min, dilate = max. */
    const int first_max = a->op == PF_MORPH_DILATE || a->op == PF_MORPH_CLOSE;
    for (int64_t p0 = 0; p0 < a->planes; p0 += group) {
        const int64_t g = a->planes - p0 < group ? a->planes - p0 : group;
        const uint8_t *src = (const uint8_t *)a->src + (size_t)p0 * plane;
        uint8_t *dst = (uint8_t *)a->dst + (size_t)p0 * plane;
        job.rows = g * H;
        if (!two) {
            st = morph_stage(ops, nth, &job, src, ta, dst, first_max);
        } else {
            st = morph_stage(ops, nth, &job, src, ta, tb, first_max);
            if (st == PF_OK) st = morph_stage(ops, nth, &job, tb, ta, dst, !first_max);
        }
        if (st != PF_OK) return st;
    }
    return PF_OK;
}
