/* Multi-threaded CPU path of compositing.
 *
 * Design
 * - Row-oriented passes, each split by (ith, nth) over the context's pool
 *   (pf_threadpool_parallel_for returns when every row is done, which is the
 *   barrier between passes):
 *     blur, sigma <= 8:  H    frame rows -> t (W x H x 3 floats)
 *     blur, sigma > 8:   D    frame rows -> small (box average, bw x bh x 3)
 *                        H    small -> t,  V  t -> blurred
 *     always:            B    blend: output rows (NV12: row pairs)
 *   The vertical pass of the full-resolution blur is fused into the blend:
 *   each output row sums 2R + 1 rows of t into a row buffer.
 * - Every pass works on whole rows of interleaved R, G, B floats so its inner
 *   loops run over 3W contiguous values with the tap loop outside
 *   (acc[i] += w_k * src[i + 3k]): GCC vectorises them, and each element
 *   still receives its terms in the order ops.h defines (k ascending, from
 *   0), so results are the reference's bit for bit.
 * - Per-pixel arithmetic comes from src/ops/composite.h (shared with CUDA).
 *   Column taps of the mask, the background image and the blur upsampling
 *   are computed once per call; row taps once per row. Each thread keeps
 *   the two mask rows it last interpolated horizontally: a 256-row model
 *   mask over 1080 output rows changes rows only every ~4 output rows.
 *   The blend runs as one loop over 3W values (mask repeated per channel).
 * - The hot row loops are also built for AVX2 and AVX-512 (target_clones,
 *   see WIDE_CLONES): same operations, wider lanes, same bits.
 * - Time (1080p, one thread of the development machine's Xeon, CPU time):
 *   colour 4.5 ms, 1080p image 5 ms, blur sigma 4 25 ms, sigma 32 16 ms,
 *   NV12 -> NV12 colour 22 ms (bench/bench_composite.c --device cpu).
 * - Nothing is allocated per call: tap tables, blur images and per-thread row
 *   buffers are carved from pf_ops_scratch (host memory on the CPU device),
 *   which grows once. */
#include "../core/vectorize.h" /* first: compile flags for the row loops */

#include <string.h>

#include "../ops/composite.h"
#include "../ops/ops_impl.h"
#include "simd.h"

#define ALIGN64(x) (((x) + 63) & ~(size_t)63)

typedef struct cmp_tap {
    int32_t k0, k1;
    float f;
} cmp_tap;

typedef struct cpu_job {
    const pf_cmp_params *p;
    const cmp_tap *mx;      /* mask column taps [W] */
    const cmp_tap *bx;      /* image (IMAGE) or blur-upsampling (BLUR, q > 1) column taps [W] */
    const pf_simd_lerp3_map *bl; /* bx planned for the SIMD lerp kernel, or NULL */
    float *t;               /* blur horizontal pass (full: W x H x 3; small: bw x bh x 3) */
    float *small;           /* q > 1: box average */
    float *blurred;         /* q > 1: blurred small image */
    uint8_t *thread_mem;    /* per-thread row buffers */
    size_t thread_stride;   /* bytes */
    int nth;
    int units;              /* rows (or row pairs) of the running pass */
} cpu_job;

/* Per-thread row buffers, all carved from one block. */
typedef struct rowbufs {
    float *f;      /* frame row, 3W (NV12 out: two rows, 6W) */
    float *b;      /* background row, 3W (two for NV12 out) */
    float *m;      /* mask row, W (two for NV12 out) */
    float *m3;     /* mask row with each value repeated for R, G, B, 3W */
    float *mh[2];  /* mask rows interpolated horizontally, W each ... */
    int mrow[2];   /* ... and the mask rows they are (-1: none yet) */
    int color_done; /* PF_BG_COLOR: b holds the colour row(s) already */
    float *img;    /* two image / frame source rows, or a padded blur row */
    uint8_t *rgb;  /* RGB byte rows, 3W (NV12 out: two, 6W) */
} rowbufs;

/* Row conversion ------------------------------------------------------------------- */

/* Row y of an image as R, G, B floats: out[3x + c], x in [x0, x0 + n). */
WIDE_CLONES static void load_row(const pf_cmp_image *im, const float *k, int y, int x0, int n, float *out)
{
    const uint8_t *row = im->plane[0] + y * im->stride[0];
    switch (im->format) {
    case PF_PIXFMT_RGB24:
        for (int i = 0; i < 3 * n; i++) out[i] = row[3 * (int64_t)x0 + i];
        return;
    case PF_PIXFMT_BGR24:
        for (int x = 0; x < n; x++) {
            const uint8_t *q = row + 3 * (int64_t)(x0 + x);
            out[3 * x] = q[2], out[3 * x + 1] = q[1], out[3 * x + 2] = q[0];
        }
        return;
    case PF_PIXFMT_RGBA:
        for (int x = 0; x < n; x++) {
            const uint8_t *q = row + 4 * (int64_t)(x0 + x);
            out[3 * x] = q[0], out[3 * x + 1] = q[1], out[3 * x + 2] = q[2];
        }
        return;
    default: break;
    }
    const uint8_t *u, *v;
    int up;
    if (im->format == PF_PIXFMT_NV12) {
        u = im->plane[1] + (y >> 1) * im->stride[1];
        v = u + 1;
        up = 2;
    } else {
        u = im->plane[1] + (y >> 1) * im->stride[1];
        v = im->plane[2] + (y >> 1) * im->stride[2];
        up = 1;
    }
    /* whole blocks of 16 through the SIMD kernel (pairs of pixels share
     * chroma: from an even pixel), the loop finishes */
    int x = 0;
    if (!(x0 & 1))
        x = pf_simd_yuv_to_rgbf(pf_cpu_simd_level(), k, row + x0, u + (x0 >> 1) * up,
                                v + (x0 >> 1) * up, up, n, out);
    for (; x < n; x++) {
        int X = x0 + x;
        pf_cmp_yuv2rgb((float)row[X], (float)u[(X >> 1) * up], (float)v[(X >> 1) * up], k,
                       &out[3 * x], &out[3 * x + 1], &out[3 * x + 2]);
    }
}

/* Blur passes ------------------------------------------------------------------------ */

/* acc[i] = sum_k w_k src[i + 3k], i < n3, k = 0..2r, from 0 in increasing k. */
WIDE_CLONES static void filter_row(const float *src, const float *w, int r, int n3, float *restrict acc)
{
    /* the SIMD kernel's register-blocked sums first (same order), the loops
     * below finish the row */
    const int d = pf_simd_fir_taps(pf_cpu_simd_level(), acc, src, w, 2 * r + 1, 3, n3);
    src += d, acc += d, n3 -= d;
    for (int i = 0; i < n3; i++) acc[i] = 0.0f;
    for (int k = 0; k <= 2 * r; k++) {
        const float wk = w[k], *s = src + 3 * k;
        for (int i = 0; i < n3; i++) acc[i] = CMP_ADD(acc[i], CMP_MUL(wk, s[i]));
    }
}

/* Copies row[0..n) (3 floats each) into pad with r clamped pixels each side. */
static void pad_row(const float *row, int n, int r, float *pad)
{
    for (int k = 0; k < r; k++) memcpy(pad + 3 * k, row, 3 * sizeof(float));
    memcpy(pad + 3 * r, row, (size_t)n * 3 * sizeof(float));
    for (int k = 0; k < r; k++) memcpy(pad + 3 * (r + n + k), row + 3 * (n - 1), 3 * sizeof(float));
}

/* acc[i] = sum_k w_k rows[clamp(y + k - r)][i]. */
WIDE_CLONES static void filter_col(const float *img, size_t row_len, int h, int y, const float *w, int r,
                       float *restrict acc)
{
    const float *rows[PF_CMP_MAX_TAPS];
    for (int k = 0; k <= 2 * r; k++) {
        int yy = y + k - r;
        yy = yy < 0 ? 0 : (yy > h - 1 ? h - 1 : yy);
        rows[k] = img + (size_t)yy * row_len;
    }
    /* SIMD kernel first (same sums), the loops finish the row */
    const size_t d = (size_t)pf_simd_fir_rows(pf_cpu_simd_level(), acc, rows, w, 2 * r + 1,
                                              (int)row_len);
    for (size_t i = d; i < row_len; i++) acc[i] = 0.0f;
    for (int k = 0; k <= 2 * r; k++) {
        const float wk = w[k], *s = rows[k];
        for (size_t i = d; i < row_len; i++) acc[i] = CMP_ADD(acc[i], CMP_MUL(wk, s[i]));
    }
}

static rowbufs thread_bufs(const cpu_job *job, int ith)
{
    const pf_cmp_params *p = job->p;
    const size_t W = (size_t)p->width;
    uint8_t *base = job->thread_mem + (size_t)ith * job->thread_stride;
    rowbufs rb;
    size_t off = 0;
    rb.f = (float *)(base + off);
    off += ALIGN64(6 * W * sizeof(float));
    rb.b = (float *)(base + off);
    off += ALIGN64(6 * W * sizeof(float));
    rb.m = (float *)(base + off);
    off += ALIGN64(2 * W * sizeof(float));
    rb.m3 = (float *)(base + off);
    off += ALIGN64(3 * W * sizeof(float));
    for (int i = 0; i < 2; i++) {
        rb.mh[i] = (float *)(base + off);
        off += ALIGN64(W * sizeof(float));
        rb.mrow[i] = -1;
    }
    rb.color_done = 0;
    rb.rgb = base + off;
    off += ALIGN64(6 * W);
    rb.img = (float *)(base + off);
    return rb;
}

/* Bytes of one thread's buffers (thread_bufs' layout plus the largest of
 * the image rows, the padded blur row and the box-average accumulator). */
static size_t thread_bytes(const pf_cmp_params *p)
{
    const size_t W = (size_t)p->width;
    size_t img = 0;
    if (p->kind == PF_BG_IMAGE) img = 6 * (size_t)p->image.width;
    if (p->kind == PF_BG_BLUR) {
        size_t pad = 3 * ((size_t)p->blur_w + 2 * (size_t)p->blur_r);
        size_t box = 3 * W + 3 * (size_t)p->blur_w;
        img = pad > box ? pad : box;
    }
    return ALIGN64(6 * W * sizeof(float)) * 2 + ALIGN64(2 * W * sizeof(float)) +
           ALIGN64(3 * W * sizeof(float)) + 2 * ALIGN64(W * sizeof(float)) + ALIGN64(6 * W) +
           ALIGN64(img * sizeof(float));
}

static void range_of(const cpu_job *job, int ith, int nth, int *a, int *b)
{
    *a = (int)((int64_t)job->units * ith / nth);
    *b = (int)((int64_t)job->units * (ith + 1) / nth);
}

/* H pass at full resolution: frame row y -> t row y. */
static void pass_h_full(void *user, int ith, int nth)
{
    const cpu_job *job = user;
    const pf_cmp_params *p = job->p;
    rowbufs rb = thread_bufs(job, ith);
    const int W = p->width, r = p->blur_r;
    int y0, y1;
    range_of(job, ith, nth, &y0, &y1);
    for (int y = y0; y < y1; y++) {
        load_row(&p->frame, p->yuv, y, 0, W, rb.f);
        pad_row(rb.f, W, r, rb.img);
        filter_row(rb.img, p->blur_wt, r, 3 * W, job->t + (size_t)y * W * 3);
    }
}

/* Box average: small row j = mean of frame rows [qj, qj + q) over q-wide
 * blocks, summed row by row, left to right (ops.h). */
static void pass_down(void *user, int ith, int nth)
{
    const cpu_job *job = user;
    const pf_cmp_params *p = job->p;
    rowbufs rb = thread_bufs(job, ith);
    const int W = p->width, H = p->height, q = p->blur_q, bw = p->blur_w;
    float *acc = rb.img, *row = rb.img + 3 * (size_t)bw;
    int j0, j1;
    range_of(job, ith, nth, &j0, &j1);
    for (int j = j0; j < j1; j++) {
        for (int i = 0; i < 3 * bw; i++) acc[i] = 0.0f;
        const int ye = (j + 1) * q < H ? (j + 1) * q : H;
        for (int y = j * q; y < ye; y++) {
            load_row(&p->frame, p->yuv, y, 0, W, row);
            for (int i = 0; i < bw; i++) {
                const int xe = (i + 1) * q < W ? (i + 1) * q : W;
                float s0 = acc[3 * i], s1 = acc[3 * i + 1], s2 = acc[3 * i + 2];
                for (int x = i * q; x < xe; x++) {
                    s0 = CMP_ADD(s0, row[3 * x]);
                    s1 = CMP_ADD(s1, row[3 * x + 1]);
                    s2 = CMP_ADD(s2, row[3 * x + 2]);
                }
                acc[3 * i] = s0, acc[3 * i + 1] = s1, acc[3 * i + 2] = s2;
            }
        }
        float *out = job->small + (size_t)j * bw * 3;
        const int nrows = ye - j * q;
        for (int i = 0; i < bw; i++) {
            const int ncols = ((i + 1) * q < W ? (i + 1) * q : W) - i * q;
            const float n = (float)(nrows * ncols);
            for (int c = 0; c < 3; c++) out[3 * i + c] = CMP_DIV(acc[3 * i + c], n);
        }
    }
}

static void pass_h_small(void *user, int ith, int nth)
{
    const cpu_job *job = user;
    const pf_cmp_params *p = job->p;
    rowbufs rb = thread_bufs(job, ith);
    const int bw = p->blur_w, r = p->blur_r;
    int j0, j1;
    range_of(job, ith, nth, &j0, &j1);
    for (int j = j0; j < j1; j++) {
        pad_row(job->small + (size_t)j * bw * 3, bw, r, rb.img);
        filter_row(rb.img, p->blur_wt, r, 3 * bw, job->t + (size_t)j * bw * 3);
    }
}

static void pass_v_small(void *user, int ith, int nth)
{
    const cpu_job *job = user;
    const pf_cmp_params *p = job->p;
    const int bw = p->blur_w;
    int j0, j1;
    range_of(job, ith, nth, &j0, &j1);
    for (int j = j0; j < j1; j++)
        filter_col(job->t, (size_t)bw * 3, p->blur_h, j, p->blur_wt, p->blur_r,
                   job->blurred + (size_t)j * bw * 3);
}

/* Blend ------------------------------------------------------------------------------ */

/* Mask row r interpolated horizontally (raw values: u8 0..255 or f32). */
static void mask_hrow(const cpu_job *job, int r, float *h)
{
    const pf_cmp_params *p = job->p;
    const cmp_tap *t = job->mx;
    const int W = p->width;
    if (p->mask_u8) {
        const uint8_t *a = (const uint8_t *)p->mask + r * p->mask_stride;
        for (int x = 0; x < W; x++)
            h[x] = pf_cmp_lerp((float)a[t[x].k0], (float)a[t[x].k1], t[x].f);
    } else {
        const float *a = (const float *)p->mask + r * p->mask_stride;
        for (int x = 0; x < W; x++) h[x] = pf_cmp_lerp(a[t[x].k0], a[t[x].k1], t[x].f);
    }
}

/* The cached horizontal row of mask row r (two slots: consecutive output
 * rows mostly share both mask rows, and a model mask is several times
 * smaller than the frame). The slot of `keep` is not evicted. */
static const float *mask_cached(const cpu_job *job, rowbufs *rb, int r, int keep)
{
    for (int i = 0; i < 2; i++)
        if (rb->mrow[i] == r) return rb->mh[i];
    const int slot = rb->mrow[0] == keep ? 1 : 0;
    mask_hrow(job, r, rb->mh[slot]);
    rb->mrow[slot] = r;
    return rb->mh[slot];
}

WIDE_CLONES static void mask_row(const cpu_job *job, rowbufs *rb, int y, float *m)
{
    const pf_cmp_params *p = job->p;
    int y0, y1;
    float fy;
    pf_cmp_taps((2 * (int64_t)y + 1) * p->mask_h - p->height, 2 * (int64_t)p->height, p->mask_h,
                &y0, &y1, &fy);
    const float *h0 = mask_cached(job, rb, y0, y1);
    const float *h1 = mask_cached(job, rb, y1, y0);
    const int W = p->width;
    if (p->mask_u8) {
        for (int x = 0; x < W; x++) m[x] = pf_cmp_unit(CMP_DIV(pf_cmp_lerp(h0[x], h1[x], fy), 255.0f));
    } else {
        for (int x = 0; x < W; x++) m[x] = pf_cmp_unit(pf_cmp_lerp(h0[x], h1[x], fy));
    }
}

/* Bilinear row from two source rows of R, G, B floats with column taps t
 * (the SIMD kernel with its plan `pl` when there is one). */
static void lerp_rows(const float *r0, const float *r1, const cmp_tap *t, float fy, int W,
                      const pf_simd_lerp3_map *pl, float *out)
{
    if (pl && pf_simd_lerp3(pf_cpu_simd_level(), pl, r0, r1, fy, out)) return;
    for (int x = 0; x < W; x++) {
        const float *a0 = r0 + 3 * t[x].k0, *a1 = r0 + 3 * t[x].k1;
        const float *b0 = r1 + 3 * t[x].k0, *b1 = r1 + 3 * t[x].k1;
        for (int c = 0; c < 3; c++) {
            float h0 = pf_cmp_lerp(a0[c], a1[c], t[x].f);
            float h1 = pf_cmp_lerp(b0[c], b1[c], t[x].f);
            out[3 * x + c] = pf_cmp_lerp(h0, h1, fy);
        }
    }
}

static void background_row(const cpu_job *job, int y, rowbufs *rb, float *out)
{
    const pf_cmp_params *p = job->p;
    const int W = p->width;
    switch (p->kind) {
    case PF_BG_COLOR:
        if (rb->color_done) return; /* the rows still hold it */
        for (int x = 0; x < 2 * W; x++)
            for (int c = 0; c < 3; c++) rb->b[3 * x + c] = p->color[c];
        rb->color_done = 1;
        return;
    case PF_BG_FRAME: load_row(&p->image, p->yuv, y, 0, W, out); return;
    case PF_BG_IMAGE: {
        if (p->image.width == W && p->image.height == p->height) {
            /* Same size: every weight is 0 and a + 0 * (b - a) == a for the
             * finite values here, so the lerps would return the pixel
             * itself, bit for bit. */
            load_row(&p->image, p->yuv, y, 0, W, out);
            return;
        }
        int y0, y1;
        float fy;
        const int iw = p->image.width;
        pf_cmp_taps((2 * (int64_t)y + 1) * p->image.height - p->height, 2 * (int64_t)p->height,
                    p->image.height, &y0, &y1, &fy);
        float *r0 = rb->img, *r1 = rb->img + 3 * (size_t)iw;
        load_row(&p->image, p->yuv, y0, 0, iw, r0);
        if (y1 != y0) load_row(&p->image, p->yuv, y1, 0, iw, r1);
        else r1 = r0;
        lerp_rows(r0, r1, job->bx, fy, W, job->bl, out);
        return;
    }
    default: break; /* BLUR */
    }
    if (p->blur_q == 1) {
        filter_col(job->t, (size_t)W * 3, p->height, y, p->blur_wt, p->blur_r, out);
        return;
    }
    int y0, y1;
    float fy;
    pf_cmp_taps(2 * (int64_t)y + 1 - p->blur_q, 2 * (int64_t)p->blur_q, p->blur_h, &y0, &y1, &fy);
    const size_t rl = (size_t)p->blur_w * 3;
    lerp_rows(job->blurred + (size_t)y0 * rl, job->blurred + (size_t)y1 * rl, job->bx, fy, W,
              job->bl, out);
}

/* Output RGB bytes of one row into rgb[3W] (R, G, B order); m3 is scratch.
 * One loop over all 3W values so that it vectorises. */
WIDE_CLONES static void blend_row(const pf_cmp_params *p, const float *m, const float *f, const float *b,
                      float *restrict m3, uint8_t *restrict rgb)
{
    const int n = p->width;
    if (p->kind == PF_BG_NONE) {
        for (int i = 0; i < 3 * n; i++) rgb[i] = pf_cmp_q(f[i]);
        return;
    }
    for (int x = 0; x < n; x++) m3[3 * x] = m3[3 * x + 1] = m3[3 * x + 2] = m[x];
    for (int i = 0; i < 3 * n; i++) {
        const float mm = m3[i];
        rgb[i] = pf_cmp_q(pf_cmp_blend(mm, CMP_SUB(1.0f, mm), f[i], b[i]));
    }
}

static void store_packed(const pf_cmp_params *p, int y, const uint8_t *rgb, const float *m)
{
    uint8_t *o = p->dst[0] + y * p->dst_stride[0];
    const int n = p->width;
    switch (p->dst_format) {
    case PF_PIXFMT_RGB24: memcpy(o, rgb, 3 * (size_t)n); return;
    case PF_PIXFMT_BGR24:
        for (int x = 0; x < n; x++) {
            o[3 * x] = rgb[3 * x + 2];
            o[3 * x + 1] = rgb[3 * x + 1];
            o[3 * x + 2] = rgb[3 * x];
        }
        return;
    default: /* RGBA */
        for (int x = 0; x < n; x++) {
            o[4 * x] = rgb[3 * x];
            o[4 * x + 1] = rgb[3 * x + 1];
            o[4 * x + 2] = rgb[3 * x + 2];
            o[4 * x + 3] = pf_cmp_q(CMP_MUL(255.0f, m[x]));
        }
        return;
    }
}

/* One output row's RGB bytes (and its mask row in m). */
static void output_row(const cpu_job *job, rowbufs *rb, int y, float *f, float *b, float *m,
                       uint8_t *rgb)
{
    const pf_cmp_params *p = job->p;
    if (p->kind != PF_BG_NONE || p->dst_format == PF_PIXFMT_RGBA) mask_row(job, rb, y, m);
    load_row(&p->frame, p->yuv, y, 0, p->width, f);
    if (p->kind != PF_BG_NONE) background_row(job, y, rb, b);
    blend_row(p, m, f, b, rb->m3, rgb);
}

/* NV12 output of rows y and y + 1 (when inside) from their RGB bytes. */
WIDE_CLONES static void store_nv12(const pf_cmp_params *p, int y, int rows, const uint8_t *rgb)
{
    const int W = p->width;
    const float *cy = p->rgb2yuv, yoff = p->rgb2yuv[9];
    for (int r = 0; r < rows; r++) {
        const uint8_t *s = rgb + (size_t)r * 3 * W;
        uint8_t *o = p->dst[0] + (y + r) * p->dst_stride[0];
        for (int x = 0; x < W; x++)
            o[x] = pf_cmp_dot3(cy, yoff, (float)s[3 * x], (float)s[3 * x + 1], (float)s[3 * x + 2]);
    }
    uint8_t *uv = p->dst[1] + (y >> 1) * p->dst_stride[1];
    for (int bx = 0; bx < (W + 1) / 2; bx++) {
        int sum[3] = {0, 0, 0}, n = 0;
        for (int r = 0; r < rows; r++)
            for (int x = 2 * bx; x < 2 * bx + 2 && x < W; x++) {
                const uint8_t *s = rgb + (size_t)r * 3 * W + 3 * (size_t)x;
                sum[0] += s[0], sum[1] += s[1], sum[2] += s[2];
                n++;
            }
        const float fn = (float)n;
        const float R = CMP_DIV((float)sum[0], fn), G = CMP_DIV((float)sum[1], fn),
                    B = CMP_DIV((float)sum[2], fn);
        uv[2 * bx] = pf_cmp_dot3(cy + 3, 128.0f, R, G, B);
        uv[2 * bx + 1] = pf_cmp_dot3(cy + 6, 128.0f, R, G, B);
    }
}

/* PF_BG_NONE, YUV frame -> NV12: the frame's own samples. */
static void copy_nv12(const pf_cmp_params *p, int y, int rows)
{
    const int W = p->width, cw = (W + 1) / 2;
    for (int r = 0; r < rows; r++)
        memmove(p->dst[0] + (y + r) * p->dst_stride[0],
                p->frame.plane[0] + (y + r) * p->frame.stride[0], (size_t)W);
    uint8_t *uv = p->dst[1] + (y >> 1) * p->dst_stride[1];
    if (p->frame.format == PF_PIXFMT_NV12) {
        memmove(uv, p->frame.plane[1] + (y >> 1) * p->frame.stride[1], 2 * (size_t)cw);
        return;
    }
    const uint8_t *u = p->frame.plane[1] + (y >> 1) * p->frame.stride[1];
    const uint8_t *v = p->frame.plane[2] + (y >> 1) * p->frame.stride[2];
    for (int i = 0; i < cw; i++) uv[2 * i] = u[i], uv[2 * i + 1] = v[i];
}

static void pass_blend(void *user, int ith, int nth)
{
    const cpu_job *job = user;
    const pf_cmp_params *p = job->p;
    rowbufs rb = thread_bufs(job, ith);
    const size_t W = (size_t)p->width;
    int u0, u1;
    range_of(job, ith, nth, &u0, &u1);
    if (p->dst_format != PF_PIXFMT_NV12) {
        for (int y = u0; y < u1; y++) {
            output_row(job, &rb, y, rb.f, rb.b, rb.m, rb.rgb);
            store_packed(p, y, rb.rgb, rb.m);
        }
        return;
    }
    const int yuv_in = p->frame.format == PF_PIXFMT_NV12 || p->frame.format == PF_PIXFMT_I420;
    for (int j = u0; j < u1; j++) {
        const int y = 2 * j, rows = y + 1 < p->height ? 2 : 1;
        if (p->kind == PF_BG_NONE && yuv_in) {
            copy_nv12(p, y, rows);
            continue;
        }
        /* Both rows are read before anything is written (in place). */
        for (int r = 0; r < rows; r++)
            output_row(job, &rb, y + r, rb.f + 3 * W * r, rb.b + 3 * W * r, rb.m + W * r,
                       rb.rgb + 3 * W * r);
        store_nv12(p, y, rows, rb.rgb);
    }
}

/* Driver ----------------------------------------------------------------------------- */

static pf_status run_pass(pf_ops *ops, cpu_job *job, int units, pf_parallel_fn fn)
{
    job->units = units;
    int nth = job->nth < units ? job->nth : units;
    if (nth <= 1 || !ops->pool) {
        fn(job, 0, 1);
        return PF_OK;
    }
    return pf_threadpool_parallel_for(ops->pool, nth, fn, job);
}

static void fill_taps(cmp_tap *t, int n, int64_t mul, int64_t sub, int64_t den, int r)
{
    /* Position of index i: ((2i + 1) mul - sub) / den. */
    for (int i = 0; i < n; i++) {
        int k0, k1;
        float f;
        pf_cmp_taps((2 * (int64_t)i + 1) * mul - sub, den, r, &k0, &k1, &f);
        t[i].k0 = k0;
        t[i].k1 = k1;
        t[i].f = f;
    }
}

pf_status pf_cpu_composite(pf_ops *ops, const pf_cmp_params *p)
{
    const int W = p->width, H = p->height;
    int nth = ops->pool ? pf_threadpool_size(ops->pool) : 1;
    if (nth < 1) nth = 1;
    const int blur = p->kind == PF_BG_BLUR;
    const size_t small = blur ? (size_t)p->blur_w * p->blur_h * 3 : 0;

    size_t need = 0, off_mx, off_bx, off_t = 0, off_small = 0, off_blurred = 0, off_thr;
    off_mx = need;
    need += ALIGN64((size_t)W * sizeof(cmp_tap));
    off_bx = need;
    need += ALIGN64((size_t)W * sizeof(cmp_tap));
    if (blur) {
        off_t = need;
        need += ALIGN64((p->blur_q == 1 ? (size_t)W * H * 3 : small) * sizeof(float));
        if (p->blur_q > 1) {
            off_small = need;
            need += ALIGN64(small * sizeof(float));
            off_blurred = need;
            need += ALIGN64(small * sizeof(float));
        }
    }
    /* bx through the SIMD lerp kernel (AVX-512): its plan */
    const int lerp_w = p->kind == PF_BG_IMAGE ? p->image.width : (blur ? p->blur_w : 0);
    const int plan = pf_cpu_simd_level() >= PF_SIMD_AVX512 &&
                     (p->kind == PF_BG_IMAGE || (blur && p->blur_q > 1));
    const size_t off_plan = need;
    if (plan) need += ALIGN64(pf_simd_lerp3_bytes(W));
    off_thr = need;
    const size_t tb = thread_bytes(p);
    need += tb * (size_t)nth;

    void *mem = NULL;
    pf_status st = pf_ops_scratch(ops, need, &mem);
    if (st != PF_OK) return st;
    uint8_t *base = mem;
    cpu_job job = {.p = p, .nth = nth, .thread_mem = base + off_thr, .thread_stride = tb};
    cmp_tap *mx = (cmp_tap *)(base + off_mx), *bx = (cmp_tap *)(base + off_bx);
    fill_taps(mx, W, p->mask_w, W, 2 * (int64_t)W, p->mask_w);
    if (p->kind == PF_BG_IMAGE)
        fill_taps(bx, W, p->image.width, W, 2 * (int64_t)W, p->image.width);
    else if (blur && p->blur_q > 1)
        fill_taps(bx, W, 1, p->blur_q, 2 * (int64_t)p->blur_q, p->blur_w);
    job.mx = mx;
    job.bx = bx;
    pf_simd_lerp3_map bl;
    if (plan) {
        pf_simd_lerp3_plan(&bl, base + off_plan, &bx[0].k0, &bx[0].k1, &bx[0].f, sizeof(cmp_tap), W,
                           lerp_w);
        job.bl = &bl;
    }
    if (blur) {
        job.t = (float *)(base + off_t);
        if (p->blur_q == 1) {
            st = run_pass(ops, &job, H, pass_h_full);
        } else {
            job.small = (float *)(base + off_small);
            job.blurred = (float *)(base + off_blurred);
            st = run_pass(ops, &job, p->blur_h, pass_down);
            if (st == PF_OK) st = run_pass(ops, &job, p->blur_h, pass_h_small);
            if (st == PF_OK) st = run_pass(ops, &job, p->blur_h, pass_v_small);
        }
        if (st != PF_OK) return st;
    }
    return run_pass(ops, &job, p->dst_format == PF_PIXFMT_NV12 ? (H + 1) / 2 : H, pass_blend);
}
