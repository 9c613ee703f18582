/* Multi-threaded CPU path of the fused preprocess.
 *
 * Design
 * - Every interpolation is separable: output = sum_y wy * (sum_x wx * pixel).
 *   Per frame, the source taps of every content column and every content row
 *   are computed once (pf_pp_taps_* in src/ops/preprocess.h: exact integer
 *   arithmetic, so the CUDA kernel gets the same indices and weights) and
 *   stored as fixed-size tap lists in the context's scratch memory; area
 *   columns that need fewer taps than the most any column needs are padded
 *   with zero weights.
 * - Work items are output rows of the whole chunk (frame-major), split
 *   contiguously by (ith, nth) over the context's pool. A content row filters
 *   each source row it needs horizontally into a per-thread buffer (RGB
 *   floats, YUV converted per tap) and accumulates it with its vertical
 *   weight; then the row is normalised (x * scale + bias) and written in the
 *   destination's layout and dtype. Padding rows and columns get pad_out.
 * - Float arithmetic in the same order as the reference's double arithmetic;
 *   the test holds it to 1e-5 of the output range (f32) or 1 ulp (f16).
 * - Nothing is allocated per call: tap tables and row buffers live in
 *   pf_ops_scratch, which grows once. */
#include <stdint.h>
#include <string.h>

#include "../ops/ops_impl.h"
#include "../ops/preprocess.h"
#include "simd.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define PP_HAVE_F16C_PATH 1
#endif

#if defined(__GNUC__)
#define PP_INLINE static inline __attribute__((always_inline))
#else
#define PP_INLINE static inline
#endif

#define ALIGN64(x) (((x) + 63) & ~(size_t)63)

typedef void (*to_f16_fn)(const float *in, uint16_t *out, size_t n);

typedef struct pp_taps {
    int tx, ty;          /* taps per column and per row */
    const int32_t *xk;   /* [content_w * tx] absolute source x */
    const float *xw;     /* [content_w * tx] */
    const int32_t *yk;   /* [content_h * ty] absolute source y */
    const float *yw;     /* [content_h * ty] */
} pp_taps;

typedef struct pp_job {
    const pf_pp_params *p;
    const pf_pp_frame *frames;
    const pp_taps *taps;
    float *rowbuf;       /* per thread: h, acc, ob; width * 3 floats each */
    size_t rowbuf_stride;
    to_f16_fn to_f16;
    int simd;                         /* pf_cpu_simd_level() at the call */
    const pf_simd_bilin *bl[PF_PP_MAX_FRAMES]; /* packed bilinear planned for SIMD, or NULL */
} pp_job;

static int axis_taps(int c, int r, int interp)
{
    if (interp == PF_INTERP_NEAREST) return 1;
    if (interp == PF_INTERP_AREA && r >= c) return pf_pp_area_max_taps(c, r);
    return 2;
}

/* Tap lists of one axis: c destination pixels over r source pixels starting
 * at `origin` (the ROI offset), t taps each. */
static void fill_axis(int c, int r, int origin, int interp, int t, int32_t *k, float *w)
{
    for (int i = 0; i < c; i++) {
        int32_t *ki = k + (size_t)i * t;
        float *wi = w + (size_t)i * t;
        if (interp == PF_INTERP_NEAREST) {
            ki[0] = origin + pf_pp_taps_nearest(i, c, r);
            wi[0] = 1.0f;
        } else if (interp == PF_INTERP_AREA && r >= c) {
            int k0, n = pf_pp_area_first(i, c, r, &k0);
            for (int j = 0; j < t; j++) {
                ki[j] = origin + (j < n ? k0 + j : k0);
                wi[j] = j < n ? pf_pp_area_weight(i, c, r, k0 + j) : 0.0f;
            }
        } else {
            int k0, k1;
            float fx;
            pf_pp_taps_bilinear(i, c, r, &k0, &k1, &fx);
            ki[0] = origin + k0;
            ki[1] = origin + k1;
            wi[0] = 1.0f - fx;
            wi[1] = fx;
        }
    }
}

/* Horizontal pass of one source row of a packed format into h[cw * 3]
 * (R, G, B). bpp and the channel offsets are constants after inlining. */
PP_INLINE void hrow_packed(const uint8_t *row, const pp_taps *t, int cw, int bpp, int ro, int go,
                           int bo, float *h)
{
    const int tx = t->tx;
    if (tx == 2) {
        for (int i = 0; i < cw; i++) {
            const uint8_t *a = row + (size_t)t->xk[2 * i] * bpp;
            const uint8_t *b = row + (size_t)t->xk[2 * i + 1] * bpp;
            float w0 = t->xw[2 * i], w1 = t->xw[2 * i + 1];
            h[3 * i + 0] = w0 * a[ro] + w1 * b[ro];
            h[3 * i + 1] = w0 * a[go] + w1 * b[go];
            h[3 * i + 2] = w0 * a[bo] + w1 * b[bo];
        }
        return;
    }
    for (int i = 0; i < cw; i++) {
        float r = 0.0f, g = 0.0f, b = 0.0f;
        for (int j = 0; j < tx; j++) {
            const uint8_t *q = row + (size_t)t->xk[i * tx + j] * bpp;
            float w = t->xw[i * tx + j];
            r += w * q[ro];
            g += w * q[go];
            b += w * q[bo];
        }
        h[3 * i + 0] = r;
        h[3 * i + 1] = g;
        h[3 * i + 2] = b;
    }
}

/* Both passes at once for a packed format with 2 x 2 taps (bilinear):
 * acc = wy0 * (row y0 filtered) + wy1 * (row y1 filtered), the same
 * arithmetic as the two-pass loop without the round trip through memory. */
PP_INLINE void bilinear_packed(const uint8_t *r0, const uint8_t *r1, float wy0, float wy1,
                               const pp_taps *t, int cw, int bpp, int ro, int go, int bo,
                               float *acc)
{
    for (int i = 0; i < cw; i++) {
        const size_t o0 = (size_t)t->xk[2 * i] * bpp, o1 = (size_t)t->xk[2 * i + 1] * bpp;
        const float w0 = t->xw[2 * i], w1 = t->xw[2 * i + 1];
        const uint8_t *a0 = r0 + o0, *b0 = r0 + o1, *a1 = r1 + o0, *b1 = r1 + o1;
        acc[3 * i + 0] = wy0 * (w0 * a0[ro] + w1 * b0[ro]) + wy1 * (w0 * a1[ro] + w1 * b1[ro]);
        acc[3 * i + 1] = wy0 * (w0 * a0[go] + w1 * b0[go]) + wy1 * (w0 * a1[go] + w1 * b1[go]);
        acc[3 * i + 2] = wy0 * (w0 * a0[bo] + w1 * b0[bo]) + wy1 * (w0 * a1[bo] + w1 * b1[bo]);
    }
}

/* The fused pass for RGB24, BGR24, RGBA; 0 when the format is not packed. */
static int bilinear_fused(const pf_pp_frame *f, const pp_taps *t, int j, float *acc)
{
    const float wy0 = t->yw[2 * (size_t)j], wy1 = t->yw[2 * (size_t)j + 1];
    const uint8_t *r0 = f->plane[0] + t->yk[2 * (size_t)j] * f->stride[0];
    const uint8_t *r1 = f->plane[0] + t->yk[2 * (size_t)j + 1] * f->stride[0];
    const int cw = f->content_w;
    switch (f->format) {
    case PF_PIXFMT_RGB24: bilinear_packed(r0, r1, wy0, wy1, t, cw, 3, 0, 1, 2, acc); return 1;
    case PF_PIXFMT_BGR24: bilinear_packed(r0, r1, wy0, wy1, t, cw, 3, 2, 1, 0, acc); return 1;
    case PF_PIXFMT_RGBA: bilinear_packed(r0, r1, wy0, wy1, t, cw, 4, 0, 1, 2, acc); return 1;
    default: return 0;
    }
}

static inline float clamp255f(float v) { return v < 0.0f ? 0.0f : (v > 255.0f ? 255.0f : v); }

/* YUV: every tap converted from its own Y and the chroma covering it. `u`
 * and `v` point at the chroma row; upitch is 2 for NV12 (interleaved), 1 for
 * I420. */
PP_INLINE void hrow_yuv(const uint8_t *yrow, const uint8_t *u, const uint8_t *v, int upitch,
                        const pp_taps *t, int cw, const float *k, float *h)
{
    const int tx = t->tx;
    for (int i = 0; i < cw; i++) {
        float r = 0.0f, g = 0.0f, b = 0.0f;
        for (int j = 0; j < tx; j++) {
            int x = t->xk[i * tx + j];
            float w = t->xw[i * tx + j];
            float yy = ((float)yrow[x] - k[0]) * k[1];
            float cu = (float)u[(x >> 1) * upitch] - 128.0f;
            float cv = (float)v[(x >> 1) * upitch] - 128.0f;
            r += w * clamp255f(yy + k[2] * cv);
            g += w * clamp255f(yy - k[3] * cu - k[4] * cv);
            b += w * clamp255f(yy + k[5] * cu);
        }
        h[3 * i + 0] = r;
        h[3 * i + 1] = g;
        h[3 * i + 2] = b;
    }
}

static void hrow(const pf_pp_params *p, const pf_pp_frame *f, const pp_taps *t, int sy, float *h)
{
    const int cw = f->content_w;
    const uint8_t *row = f->plane[0] + sy * f->stride[0];
    switch (f->format) {
    case PF_PIXFMT_RGB24: hrow_packed(row, t, cw, 3, 0, 1, 2, h); break;
    case PF_PIXFMT_BGR24: hrow_packed(row, t, cw, 3, 2, 1, 0, h); break;
    case PF_PIXFMT_RGBA: hrow_packed(row, t, cw, 4, 0, 1, 2, h); break;
    case PF_PIXFMT_NV12: {
        const uint8_t *uv = f->plane[1] + (sy >> 1) * f->stride[1];
        hrow_yuv(row, uv, uv + 1, 2, t, cw, p->yuv, h);
        break;
    }
    default: /* I420 */
        hrow_yuv(row, f->plane[1] + (sy >> 1) * f->stride[1],
                 f->plane[2] + (sy >> 1) * f->stride[2], 1, t, cw, p->yuv, h);
        break;
    }
}

/* Float -> IEEE half, round to nearest even: pf_f32_to_f16 per value, or
 * the F16C instruction (the same rounding, bit for bit, for the finite
 * values written here) 8 at a time where the CPU has it. The conversion was
 * 60% of the f16 path's time with the scalar function alone. */
static void to_f16_scalar(const float *in, uint16_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = pf_f32_to_f16(in[i]);
}

#ifdef PP_HAVE_F16C_PATH
__attribute__((target("f16c,avx"))) static void to_f16_f16c(const float *in, uint16_t *out,
                                                           size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128((__m128i *)(void *)(out + i), h);
    }
    to_f16_scalar(in + i, out + i, n - i);
}
#endif

#ifdef PP_HAVE_F16C_PATH
#include <cpuid.h>

/* F16C and AVX (with the OS saving YMM state) from CPUID and XGETBV directly:
 * clang 14 rejects __builtin_cpu_supports("f16c"), which broke fuzz builds. */
static int cpu_has_f16c(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    const unsigned osxsave = 1u << 27, avx = 1u << 28, f16c = 1u << 29;
    if ((c & (osxsave | avx | f16c)) != (osxsave | avx | f16c)) return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    return (lo & 6u) == 6u; /* XMM and YMM state enabled */
}
#endif

static to_f16_fn pick_to_f16(void)
{
#ifdef PP_HAVE_F16C_PATH
    if (cpu_has_f16c()) return to_f16_f16c;
#endif
    return to_f16_scalar;
}

/* Stores `n` floats at element `at` of the destination in its dtype. */
static void store(const pf_pp_params *p, to_f16_fn to_f16, size_t at, const float *v, size_t n)
{
    if (p->f16) to_f16(v, (uint16_t *)p->dst + at, n);
    else memcpy((float *)p->dst + at, v, n * sizeof(float));
}

/* Writes output row y of frame n: pad outside [x0, x0 + cw), acc (R, G, B
 * interleaved, content pixels) inside. The row is assembled as floats in
 * output order in `ob` (3 * width), then stored. */
static void write_row(const pf_pp_params *p, to_f16_fn to_f16, int n, int y, int x0, int cw,
                      const float *acc, float *ob, int simd)
{
    const size_t W = (size_t)p->width, H = (size_t)p->height;
    const int src_c[3] = {p->bgr ? 2 : 0, 1, p->bgr ? 0 : 2};
    if (p->nchw && simd >= PF_SIMD_AVX512) {
        /* the three planes at once (ob holds 3 W floats): the SIMD kernel
         * for whole blocks, the loop below for the rest */
        float *o3[3] = {ob, ob + W, ob + 2 * W}, *oc[3] = {ob + x0, ob + W + x0, ob + 2 * W + x0};
        const int d = pf_simd_planar3_affine(simd, acc, cw, p->scale, p->bias, src_c, oc);
        for (int c = 0; c < 3; c++) {
            const float sc = p->scale[c], bi = p->bias[c], pad = p->pad_out[c];
            const float *a = acc + src_c[c];
            float *o = o3[c];
            for (int x = 0; x < x0; x++) o[x] = pad;
            for (int i = d; i < cw; i++) o[x0 + i] = a[3 * i] * sc + bi;
            for (size_t x = (size_t)(x0 + cw); x < W; x++) o[x] = pad;
            store(p, to_f16, (((size_t)n * 3 + (size_t)c) * H + (size_t)y) * W, o, W);
        }
    } else if (p->nchw) {
        for (int c = 0; c < 3; c++) {
            const float sc = p->scale[c], bi = p->bias[c], pad = p->pad_out[c];
            const float *a = acc + src_c[c];
            for (int x = 0; x < x0; x++) ob[x] = pad;
            for (int i = 0; i < cw; i++) ob[x0 + i] = a[3 * i] * sc + bi;
            for (size_t x = (size_t)(x0 + cw); x < W; x++) ob[x] = pad;
            store(p, to_f16, (((size_t)n * 3 + (size_t)c) * H + (size_t)y) * W, ob, W);
        }
    } else {
        for (int c = 0; c < 3; c++) {
            const float sc = p->scale[c], bi = p->bias[c], pad = p->pad_out[c];
            const float *a = acc + src_c[c];
            for (int x = 0; x < x0; x++) ob[3 * x + c] = pad;
            for (int i = 0; i < cw; i++) ob[3 * (x0 + i) + c] = a[3 * i] * sc + bi;
            for (size_t x = (size_t)(x0 + cw); x < W; x++) ob[3 * x + c] = pad;
        }
        store(p, to_f16, ((size_t)n * H + (size_t)y) * W * 3, ob, 3 * W);
    }
}

/* acc = wy0 h0 + wy1 h1 (restrict: vectorised without alias checks). */
static void blend_rows(float *restrict acc, const float *restrict h0, const float *restrict h1,
                       float wy0, float wy1, int n)
{
    for (int i = 0; i < n; i++) acc[i] = wy0 * h0[i] + wy1 * h1[i];
}

static void pp_rows(void *user, int ith, int nth)
{
    const pp_job *job = user;
    const pf_pp_params *p = job->p;
    const int64_t total = (int64_t)p->n * p->height;
    const int64_t r0 = total * ith / nth, r1 = total * (ith + 1) / nth;
    float *h = job->rowbuf + (size_t)ith * job->rowbuf_stride;
    float *acc = h + (size_t)p->width * 3;
    float *ob = acc + (size_t)p->width * 3;
    for (int64_t r = r0; r < r1; r++) {
        const int n = (int)(r / p->height), y = (int)(r % p->height);
        const pf_pp_frame *f = &job->frames[n];
        const pp_taps *t = &job->taps[n];
        const int j = y - f->pad_top;
        if (j < 0 || j >= f->content_h) {
            write_row(p, job->to_f16, n, y, p->width, 0, acc, ob, job->simd); /* all padding */
            continue;
        }
        if (job->bl[n]) {
            /* SIMD: each source row filtered by the kernel (w0 a + w1 b per
             * value), then wy0 h0 + wy1 h1: bilinear_packed's operations in
             * its order, so the same bits */
            const float wy0 = t->yw[2 * (size_t)j], wy1 = t->yw[2 * (size_t)j + 1];
            const uint8_t *ra = f->plane[0] + t->yk[2 * (size_t)j] * f->stride[0];
            const uint8_t *rb = f->plane[0] + t->yk[2 * (size_t)j + 1] * f->stride[0];
            pf_simd_bilinear_h_u8(job->simd, job->bl[n], ra, h);
            pf_simd_bilinear_h_u8(job->simd, job->bl[n], rb, ob);
            blend_rows(acc, h, ob, wy0, wy1, 3 * f->content_w);
            write_row(p, job->to_f16, n, y, f->pad_left, f->content_w, acc, ob, job->simd);
            continue;
        }
        if (t->tx == 2 && t->ty == 2 && bilinear_fused(f, t, j, acc)) {
            write_row(p, job->to_f16, n, y, f->pad_left, f->content_w, acc, ob, job->simd);
            continue;
        }
        const int cw3 = f->content_w * 3;
        int first = 1;
        for (int k = 0; k < t->ty; k++) {
            float wy = t->yw[(size_t)j * t->ty + k];
            if (wy == 0.0f) continue; /* adds exactly nothing */
            hrow(p, f, t, t->yk[(size_t)j * t->ty + k], h);
            if (first) {
                for (int i = 0; i < cw3; i++) acc[i] = wy * h[i];
                first = 0;
            } else {
                for (int i = 0; i < cw3; i++) acc[i] += wy * h[i];
            }
        }
        if (first) memset(acc, 0, sizeof(float) * (size_t)cw3);
        write_row(p, job->to_f16, n, y, f->pad_left, f->content_w, acc, ob, job->simd);
    }
}

pf_status pf_cpu_preprocess(pf_ops *ops, const pf_pp_params *p, const pf_pp_frame *frames)
{
    pp_taps taps[PF_PP_MAX_FRAMES];
    size_t off[PF_PP_MAX_FRAMES][4];
    size_t need = 0;
    for (int n = 0; n < p->n; n++) {
        const pf_pp_frame *f = &frames[n];
        taps[n].tx = axis_taps(f->content_w, f->roi_w, p->interp);
        taps[n].ty = axis_taps(f->content_h, f->roi_h, p->interp);
        size_t nx = (size_t)f->content_w * (size_t)taps[n].tx;
        size_t ny = (size_t)f->content_h * (size_t)taps[n].ty;
        off[n][0] = need;
        need += ALIGN64(nx * sizeof(int32_t));
        off[n][1] = need;
        need += ALIGN64(nx * sizeof(float));
        off[n][2] = need;
        need += ALIGN64(ny * sizeof(int32_t));
        off[n][3] = need;
        need += ALIGN64(ny * sizeof(float));
    }
    int nth = ops->pool ? pf_threadpool_size(ops->pool) : 1;
    int64_t rows = (int64_t)p->n * p->height;
    if (nth > rows) nth = (int)rows;
    if (nth < 1) nth = 1;
    const size_t rowbuf_stride = ALIGN64((size_t)p->width * 3 * 3 * sizeof(float)) / sizeof(float);
    const size_t rowbuf_off = need;
    need += rowbuf_stride * sizeof(float) * (size_t)nth;

    /* packed bilinear frames through the SIMD row kernel: their plans */
    const int simd = pf_cpu_simd_level();
    size_t plan_off[PF_PP_MAX_FRAMES];
    for (int n = 0; n < p->n; n++) {
        const int32_t fmt = frames[n].format;
        plan_off[n] = SIZE_MAX; /* none */
        if (simd >= PF_SIMD_AVX2 && taps[n].tx == 2 && taps[n].ty == 2 &&
            (fmt == PF_PIXFMT_RGB24 || fmt == PF_PIXFMT_BGR24 || fmt == PF_PIXFMT_RGBA)) {
            plan_off[n] = need;
            need += ALIGN64(pf_simd_bilin_bytes(3 * frames[n].content_w));
        }
    }

    void *mem = NULL;
    pf_status st = pf_ops_scratch(ops, need, &mem);
    if (st != PF_OK) return st;
    uint8_t *base = mem;
    pf_simd_bilin plans[PF_PP_MAX_FRAMES];
    for (int n = 0; n < p->n; n++) {
        const pf_pp_frame *f = &frames[n];
        int32_t *xk = (int32_t *)(base + off[n][0]), *yk = (int32_t *)(base + off[n][2]);
        float *xw = (float *)(base + off[n][1]), *yw = (float *)(base + off[n][3]);
        fill_axis(f->content_w, f->roi_w, f->roi_x, p->interp, taps[n].tx, xk, xw);
        fill_axis(f->content_h, f->roi_h, f->roi_y, p->interp, taps[n].ty, yk, yw);
        taps[n].xk = xk;
        taps[n].xw = xw;
        taps[n].yk = yk;
        taps[n].yw = yw;
        if (plan_off[n] != SIZE_MAX) {
            const int bpp = f->format == PF_PIXFMT_RGBA ? 4 : 3;
            const int bgr[3] = {2, 1, 0}, rgb[3] = {0, 1, 2};
            int32_t kmax = 0; /* the plan reads no byte past the last tapped pixel */
            for (size_t i = 0; i < 2 * (size_t)f->content_w; i++) kmax = xk[i] > kmax ? xk[i] : kmax;
            pf_simd_bilin_plan(&plans[n], base + plan_off[n], xk, xw, f->content_w, 3, bpp,
                               f->format == PF_PIXFMT_BGR24 ? bgr : rgb, (kmax + 1) * bpp);
        }
    }
    pp_job job = {.p = p, .frames = frames, .taps = taps,
                  .rowbuf = (float *)(base + rowbuf_off), .rowbuf_stride = rowbuf_stride,
                  .to_f16 = pick_to_f16(), .simd = simd};
    for (int n = 0; n < p->n; n++) job.bl[n] = plan_off[n] != SIZE_MAX ? &plans[n] : NULL;
    if (nth == 1 || !ops->pool) {
        pp_rows(&job, 0, 1);
        return PF_OK;
    }
    return pf_threadpool_parallel_for(ops->pool, nth, pp_rows, &job);
}
