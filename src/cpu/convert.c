/* Multi-threaded CPU path of pf_ops_convert.
 *
 * Design
 * - Work items are pairs of rows (a YUV destination's chroma row needs two
 *   luma rows; a YUV source's chroma row serves two), split contiguously by
 *   (ith, nth) over the context's pool.
 * - Every conversion goes through one row of 8-bit R, G, B (decode, then
 *   encode), exactly like the reference. A source already in RGB24 is used
 *   in place, and a destination in RGB24 is decoded into directly, so the
 *   common NV12 -> RGB24 and RGB24 -> NV12 touch no temporary row.
 * - Bit-exactness with the reference without giving up speed: the shared
 *   formulas of src/ops/convert.h are evaluated with the same operations in
 *   the same order, arranged for the compiler to vectorize. YUV decoding
 *   works on blocks of pixel pairs: chroma and the even and odd luma samples
 *   as float arrays, the arithmetic element-wise (restrict, constant block
 *   size), the rounding with pf_cv_round_row, then the interleaving. Where an operand is a single
 *   8-bit sample (luma from R, G, B; Y of a YUV destination) the products
 *   have only 256 possible values and are tabulated per call (a few KB on
 *   the stack, the same CV_MUL, hence the same bits). Chroma of a YUV
 *   destination (block means, not integers) uses the shared functions
 *   directly; it is a quarter of the pixels.
 * - Temporary rows (two per thread, for formats that need them) live in
 *   pf_ops_scratch (host memory on the CPU device): nothing is allocated per
 *   call once it has grown. */
#include <string.h>

#include "../ops/convert.h"
#include "../ops/ops_impl.h"
#include "simd.h"

#define ALIGN64(x) (((x) + 63) & ~(size_t)63)

typedef struct cv_tables {
    /* luma: 0.299 R, 0.587 G, 0.114 B */
    float lr[256], lg[256], lb[256];
    /* Y of a YUV destination: cr R, cg G, cb B */
    float er[256], eg[256], eb[256];
    int simd; /* pf_cpu_simd_level() at the call: YUV decoding's kernel */
} cv_tables;

typedef struct cv_job {
    const pf_cv_params *p;
    const cv_tables *t;
    uint8_t *tmp;             /* per thread: 2 rows of 3 * width bytes */
    size_t tmp_stride;        /* bytes per thread */
} cv_job;

static void build_tables(const pf_cv_params *p, cv_tables *t)
{
    for (int i = 0; i < 256; i++) {
        const float f = (float)i;
        t->lr[i] = CV_MUL(PF_CV_GRAY_R, f);
        t->lg[i] = CV_MUL(PF_CV_GRAY_G, f);
        t->lb[i] = CV_MUL(PF_CV_GRAY_B, f);
        t->er[i] = CV_MUL(p->k.enc[0][0], f);
        t->eg[i] = CV_MUL(p->k.enc[0][1], f);
        t->eb[i] = CV_MUL(p->k.enc[0][2], f);
    }
}

static inline const uint8_t *row_ptr(const pf_cv_image *f, int plane, int y)
{
    return f->plane[plane] + (int64_t)y * f->stride[plane];
}

#if defined(__GNUC__)
#define CV_INLINE static inline __attribute__((always_inline))
#else
#define CV_INLINE static inline
#endif

/* The unrounded R, G, B of n pixels from their Y and chroma (floats, chroma
 * minus 128): pf_cv_yuv_to_rgb's operations in its order, element-wise over
 * arrays, so the compiler vectorizes it (restrict: no aliasing). */
CV_INLINE void yuv_math(const float *k, const float *restrict y, const float *restrict cu,
                        const float *restrict cv, float *restrict r, float *restrict g,
                        float *restrict b, int n)
{
    for (int i = 0; i < n; i++) {
        const float yy = CV_MUL(CV_SUB(y[i], k[0]), k[1]);
        r[i] = CV_ADD(yy, CV_MUL(k[2], cv[i]));
        g[i] = CV_SUB(CV_SUB(yy, CV_MUL(k[3], cu[i])), CV_MUL(k[4], cv[i]));
        b[i] = CV_ADD(yy, CV_MUL(k[5], cu[i]));
    }
}

/* One block of n pixel pairs (n = P for full blocks: constant counts, so
 * every loop but the last vectorizes): chroma and the even and odd luma
 * samples of each pair as floats, the arithmetic and the rounding for the
 * even and the odd pixels, then the interleaving into R, G, B. CSTEP is 2
 * for NV12 (U, V interleaved), 1 for I420. */
enum { CV_P = 64 };
CV_INLINE void yuv_pairs(const float *k, const uint8_t *restrict yr, const uint8_t *restrict u,
                         const uint8_t *restrict v, int CSTEP, int n, uint8_t *restrict o)
{
    float cu[CV_P], cv[CV_P], ye[CV_P], yo[CV_P], f[6][CV_P];
    uint8_t q[6][CV_P];
    for (int j = 0; j < n; j++) {
        cu[j] = (float)(u[j * CSTEP] - 128);
        cv[j] = (float)(v[j * CSTEP] - 128);
        ye[j] = (float)yr[2 * j];
        yo[j] = (float)yr[2 * j + 1];
    }
    yuv_math(k, ye, cu, cv, f[0], f[1], f[2], n);
    yuv_math(k, yo, cu, cv, f[3], f[4], f[5], n);
    for (int c = 0; c < 6; c++) pf_cv_round_row(q[c], f[c], n);
    for (int j = 0; j < n; j++) {
        o[6 * j + 0] = q[0][j], o[6 * j + 1] = q[1][j], o[6 * j + 2] = q[2][j];
        o[6 * j + 3] = q[3][j], o[6 * j + 4] = q[4][j], o[6 * j + 5] = q[5][j];
    }
}

/* YUV row into rgb[3 * w]; u and v point at the chroma row. Whole pairs in
 * blocks of CV_P; an odd width's last pixel alone (same formula). */
CV_INLINE void decode_yuv_c(const float *k, const uint8_t *yr, const uint8_t *u, const uint8_t *v,
                            int CSTEP, int w, uint8_t *rgb)
{
    const int pairs = w / 2;
    int j0 = 0;
    for (; j0 + CV_P <= pairs; j0 += CV_P)
        yuv_pairs(k, yr + 2 * j0, u + j0 * CSTEP, v + j0 * CSTEP, CSTEP, CV_P, rgb + 6 * (size_t)j0);
    if (j0 < pairs)
        yuv_pairs(k, yr + 2 * j0, u + j0 * CSTEP, v + j0 * CSTEP, CSTEP, pairs - j0,
                  rgb + 6 * (size_t)j0);
    if (w & 1) {
        uint8_t *o = rgb + 3 * (size_t)(w - 1);
        pf_cv_yuv_to_rgb(k, yr[w - 1], u[pairs * CSTEP], v[pairs * CSTEP], &o[0], &o[1], &o[2]);
    }
}

static void decode_yuv(const float *k, const uint8_t *yr, const uint8_t *u, const uint8_t *v,
                       int cstep, int w, uint8_t *rgb, int simd)
{
    /* The SIMD kernel takes whole blocks of 16 pixels (pairs never split);
     * the scalar blocks finish the row. */
    const int done = pf_simd_yuv_to_rgb(simd, k, yr, u, v, cstep, w, rgb);
    if (done) {
        yr += done, u += done / 2 * cstep, v += done / 2 * cstep, rgb += 3 * (size_t)done;
        w -= done;
        if (!w) return;
    }
    if (cstep == 2) decode_yuv_c(k, yr, u, v, 2, w, rgb);
    else decode_yuv_c(k, yr, u, v, 1, w, rgb);
}

/* Source row y as R, G, B: the source row itself for RGB24, else decoded
 * into `out`. */
static const uint8_t *decode_row(const pf_cv_params *p, const cv_tables *t, int y, uint8_t *out)
{
    const pf_cv_image *f = &p->src;
    const int w = p->width;
    const uint8_t *s = row_ptr(f, 0, y);
    switch (f->format) {
    case PF_PIXFMT_RGB24:
        return s;
    case PF_PIXFMT_BGR24:
        for (int x = 0; x < w; x++) {
            out[3 * x + 0] = s[3 * x + 2];
            out[3 * x + 1] = s[3 * x + 1];
            out[3 * x + 2] = s[3 * x + 0];
        }
        break;
    case PF_PIXFMT_RGBA:
        for (int x = 0; x < w; x++) {
            out[3 * x + 0] = s[4 * x + 0];
            out[3 * x + 1] = s[4 * x + 1];
            out[3 * x + 2] = s[4 * x + 2];
        }
        break;
    case PF_PIXFMT_GRAY8:
        for (int x = 0; x < w; x++) out[3 * x + 0] = out[3 * x + 1] = out[3 * x + 2] = s[x];
        break;
    case PF_PIXFMT_NV12: {
        const uint8_t *uv = row_ptr(f, 1, y >> 1);
        decode_yuv(p->k.dec, s, uv, uv + 1, 2, w, out, t->simd);
        break;
    }
    default: /* I420 */
        decode_yuv(p->k.dec, s, row_ptr(f, 1, y >> 1), row_ptr(f, 2, y >> 1), 1, w, out,
                   t->simd);
        break;
    }
    return out;
}

/* d[x] = round(((tr[R] + tg[G]) + tb[B]) (+ *off)) over a row of R, G, B:
 * pf_cv_luma (off NULL) or the Y of pf_cv_encode, with the products looked
 * up; the sums go to a block on the stack and are rounded with
 * pf_cv_round_row. */
static void weighted_row(const float *tr, const float *tg, const float *tb, const float *off,
                         const uint8_t *rgb, uint8_t *d, int w)
{
    enum { B = 256 };
    float f[B];
    for (int x0 = 0; x0 < w; x0 += B) {
        const int n = w - x0 < B ? w - x0 : B;
        const uint8_t *q = rgb + 3 * (size_t)x0;
        for (int i = 0; i < n; i++)
            f[i] = CV_ADD(CV_ADD(tr[q[3 * i]], tg[q[3 * i + 1]]), tb[q[3 * i + 2]]);
        if (off)
            for (int i = 0; i < n; i++) f[i] = CV_ADD(f[i], *off);
        if (n == B) pf_cv_round_row(d + x0, f, B);
        else pf_cv_round_row(d + x0, f, n);
    }
}

/* R, G, B row into destination row y of a packed or gray format. */
static void encode_row(const pf_cv_params *p, const cv_tables *t, int y, const uint8_t *rgb)
{
    const int w = p->width;
    uint8_t *d = (uint8_t *)row_ptr(&p->dst, 0, y);
    switch (p->dst.format) {
    case PF_PIXFMT_RGB24:
        if (d != rgb) memcpy(d, rgb, (size_t)w * 3);
        break;
    case PF_PIXFMT_BGR24:
        for (int x = 0; x < w; x++) {
            d[3 * x + 0] = rgb[3 * x + 2];
            d[3 * x + 1] = rgb[3 * x + 1];
            d[3 * x + 2] = rgb[3 * x + 0];
        }
        break;
    case PF_PIXFMT_RGBA:
        for (int x = 0; x < w; x++) {
            d[4 * x + 0] = rgb[3 * x + 0];
            d[4 * x + 1] = rgb[3 * x + 1];
            d[4 * x + 2] = rgb[3 * x + 2];
            d[4 * x + 3] = 255;
        }
        break;
    default: /* GRAY8: pf_cv_luma */
        weighted_row(t->lr, t->lg, t->lb, NULL, rgb, d, w);
        break;
    }
}

/* Luma row of a YUV destination: pf_cv_encode with tabulated products. */
static void encode_y(const pf_cv_params *p, const cv_tables *t, const uint8_t *rgb, uint8_t *d)
{
    weighted_row(t->er, t->eg, t->eb, &p->k.enc[0][3], rgb, d, p->width);
}

/* Chroma row `cy` of a YUV destination from one or two R, G, B rows. */
static void encode_chroma(const pf_cv_params *p, int cy, const uint8_t *a, const uint8_t *b)
{
    const pf_cv_image *d = &p->dst;
    const int w = p->width, cw = (w + 1) / 2;
    uint8_t *u = (uint8_t *)row_ptr(d, 1, cy);
    uint8_t *v = d->format == PF_PIXFMT_NV12 ? u + 1 : (uint8_t *)row_ptr(d, 2, cy);
    const int step = d->format == PF_PIXFMT_NV12 ? 2 : 1;
    const float(*enc)[4] = (const float(*)[4])p->k.enc;
    for (int bx = 0; bx < cw; bx++) {
        const int x = 2 * bx, two = x + 1 < w;
        int sr = a[3 * x], sg = a[3 * x + 1], sb = a[3 * x + 2], n = 1;
        if (two) sr += a[3 * x + 3], sg += a[3 * x + 4], sb += a[3 * x + 5], n++;
        if (b) {
            sr += b[3 * x], sg += b[3 * x + 1], sb += b[3 * x + 2], n++;
            if (two) sr += b[3 * x + 3], sg += b[3 * x + 4], sb += b[3 * x + 5], n++;
        }
        pf_cv_chroma(enc, sr, sg, sb, n, &u[bx * step], &v[bx * step]);
    }
}

/* NV12 <-> I420: luma rows copied, chroma samples moved. */
static void repack_pair(const pf_cv_params *p, int cy, int y0, int rows)
{
    const pf_cv_image *s = &p->src, *d = &p->dst;
    const int w = p->width, cw = (w + 1) / 2;
    for (int y = y0; y < y0 + rows; y++)
        memcpy((uint8_t *)row_ptr(d, 0, y), row_ptr(s, 0, y), (size_t)w);
    const uint8_t *su = row_ptr(s, 1, cy);
    const uint8_t *sv = s->format == PF_PIXFMT_NV12 ? su + 1 : row_ptr(s, 2, cy);
    const int ss = s->format == PF_PIXFMT_NV12 ? 2 : 1;
    uint8_t *du = (uint8_t *)row_ptr(d, 1, cy);
    uint8_t *dv = d->format == PF_PIXFMT_NV12 ? du + 1 : (uint8_t *)row_ptr(d, 2, cy);
    const int ds = d->format == PF_PIXFMT_NV12 ? 2 : 1;
    for (int x = 0; x < cw; x++) {
        du[x * ds] = su[x * ss];
        dv[x * ds] = sv[x * ss];
    }
}

static void cv_rows(void *user, int ith, int nth)
{
    const cv_job *job = user;
    const pf_cv_params *p = job->p;
    const int pairs = (p->height + 1) / 2;
    const int q0 = (int)((int64_t)pairs * ith / nth), q1 = (int)((int64_t)pairs * (ith + 1) / nth);
    uint8_t *tmp0 = job->tmp + (size_t)ith * job->tmp_stride;
    uint8_t *tmp1 = tmp0 + job->tmp_stride / 2;
    const int sy = PF_CV_IS_YUV(p->src.format), dy = PF_CV_IS_YUV(p->dst.format);
    for (int q = q0; q < q1; q++) {
        const int y0 = 2 * q, rows = y0 + 1 < p->height ? 2 : 1;
        if (sy && dy) {
            repack_pair(p, q, y0, rows);
        } else if (dy) {
            const uint8_t *a = decode_row(p, job->t, y0, tmp0);
            const uint8_t *b = rows == 2 ? decode_row(p, job->t, y0 + 1, tmp1) : NULL;
            encode_y(p, job->t, a, (uint8_t *)row_ptr(&p->dst, 0, y0));
            if (b) encode_y(p, job->t, b, (uint8_t *)row_ptr(&p->dst, 0, y0 + 1));
            encode_chroma(p, q, a, b);
        } else {
            for (int y = y0; y < y0 + rows; y++) {
                /* An RGB24 destination row is its own temporary. */
                uint8_t *out = p->dst.format == PF_PIXFMT_RGB24
                                   ? (uint8_t *)row_ptr(&p->dst, 0, y)
                                   : tmp0;
                encode_row(p, job->t, y, decode_row(p, job->t, y, out));
            }
        }
    }
}

pf_status pf_cpu_convert(pf_ops *ops, const pf_cv_params *p)
{
    cv_tables t;
    build_tables(p, &t);
    t.simd = pf_cpu_simd_level();
    const int pairs = (p->height + 1) / 2;
    int nth = ops->pool ? pf_threadpool_size(ops->pool) : 1;
    if (nth > pairs) nth = pairs;
    if (nth < 1) nth = 1;
    /* A thread's share should be worth the hand-off to the pool (tens of
     * microseconds): at least 16k pixels each. */
    const int64_t pixels = (int64_t)p->width * p->height;
    if (pixels < (int64_t)nth * 16384) nth = pixels / 16384 > 1 ? (int)(pixels / 16384) : 1;
    const size_t row = ALIGN64((size_t)p->width * 3);
    void *mem = NULL;
    pf_status st = pf_ops_scratch(ops, 2 * row * (size_t)nth, &mem);
    if (st != PF_OK) return st;
    cv_job job = {.p = p, .t = &t, .tmp = mem, .tmp_stride = 2 * row};
    if (nth == 1 || !ops->pool) {
        cv_rows(&job, 0, 1);
        return PF_OK;
    }
    return pf_threadpool_parallel_for(ops->pool, nth, cv_rows, &job);
}
