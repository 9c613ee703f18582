/* Multi-threaded CPU path of pf_ops_resize and pf_ops_resize_mask.
 *
 * Design
 * - Separable: v = sum_t wy_t * h_t with h_t = sum_s wx_s * p(s, t) (resize.h
 *   gives the order). Per call, the source taps and weights of every
 *   destination column and row are computed once (pf_rs_* helpers: exact
 *   integer arithmetic and one float division, as the CUDA kernel does) into
 *   fixed-size tap lists in pf_ops_scratch.
 * - Work items are destination rows of all planes (plane-major), split
 *   contiguously by (ith, nth) over the context's pool, so a thread walks its
 *   rows in order and consecutive rows can reuse filtered source rows.
 * - Filtered rows are reused: each thread keeps a small ring of horizontally
 *   filtered source rows tagged with their row numbers (bilinear: 2, box:
 *   as many as one output row can need, up to PF_RS_RING_MAX), so a source
 *   row is filtered once however many output rows use it (an upscale, the
 *   rows shared by neighbouring area windows). A box with more taps than
 *   that (downscales beyond ~64x) streams: each source row of the window is
 *   filtered into one buffer and accumulated with its weight.
 * - The float operations and their order are exactly the reference's, so u8
 *   output is bit-identical and f32 output is too (the tests check both).
 *   A cached row is the same bits as a recomputed one.
 * - Channel count (1..4) and sample type (u8, f32) are compile-time constants
 *   of the horizontal loops (always-inline helpers instantiated by a switch,
 *   channel loops unrolled); the vertical blend and the u8 rounding
 *   (pf_cv_round_row) run over 256-value blocks that the compiler vectorizes.
 * - Nothing is allocated per call beyond pf_ops_scratch, which grows once. */
#include <string.h>

#include "../ops/ops_impl.h"
#include "../ops/resize.h"
#include "simd.h"

#if defined(__GNUC__)
#define RS_INLINE static inline __attribute__((always_inline))
#else
#define RS_INLINE static inline
#endif

#if defined(__GNUC__)
#define RS_UNROLL _Pragma("GCC unroll 4")
#else
#define RS_UNROLL
#endif

#define ALIGN64(x) (((x) + 63) & ~(size_t)63)

/* Tap lists of one axis: for destination index i, n[i] taps at
 * k[i * t + j] (source pixel) with weights w[i * t + j], j < n[i]. */
typedef struct rs_axis {
    int mode, t;
    int32_t *k, *n;
    float *w;
} rs_axis;

/* Row taps kept in a per-thread ring (more taps stream instead). */
#define PF_RS_RING_MAX 64

typedef struct rs_job {
    const pf_rs_plane *p;
    rs_axis x, y;
    int ring;                 /* slots of filtered rows per thread; 0 = stream */
    size_t row_floats;        /* floats per filtered row (dw * channels, padded) */
    float *buf;               /* per thread: max(ring, 2) rows, then ring tags */
    size_t buf_stride;        /* floats per thread */
    int simd;                 /* pf_cpu_simd_level() at the call */
    pf_simd_bilin *bx;        /* u8 bilinear horizontal pass planned for SIMD, or NULL */
} rs_job;

static int axis_taps(int mode, int c, int r)
{
    if (mode == PF_RS_NEAREST) return 1;
    if (mode == PF_RS_BOX) return pf_rs_box_max_taps(c, r);
    return 2;
}

static void fill_axis(rs_axis *a, int c, int r)
{
    for (int i = 0; i < c; i++) {
        int32_t *k = a->k + (size_t)i * a->t;
        float *w = a->w + (size_t)i * a->t;
        if (a->mode == PF_RS_NEAREST) {
            k[0] = pf_rs_nearest(i, c, r);
            w[0] = 1.0f;
            a->n[i] = 1;
        } else if (a->mode == PF_RS_BOX) {
            int k0, n = pf_rs_box_first(i, c, r, &k0);
            for (int j = 0; j < n; j++) {
                k[j] = k0 + j;
                w[j] = pf_rs_box_weight(i, c, r, k0 + j);
            }
            a->n[i] = n;
        } else {
            int k0, k1;
            float fx;
            pf_rs_bilinear(i, c, r, &k0, &k1, &fx);
            k[0] = k0;
            k[1] = k1;
            w[0] = CV_SUB(1.0f, fx);
            w[1] = fx;
            a->n[i] = 2;
        }
    }
}

RS_INLINE float load(const void *row, int64_t idx, int f32)
{
    if (f32) return ((const float *)row)[idx];
    return (float)((const uint8_t *)row)[idx];
}

/* Horizontal pass of one source row into h[dw * C]. The channel loops are
 * unrolled (C is a constant here) so the per-channel sums stay in registers;
 * box taps are consecutive source pixels, walked with a pointer. */
RS_INLINE void hpass(const void *row, const rs_axis *ax, int dw, int C, int f32, float *h)
{
    if (ax->mode == PF_RS_BILINEAR) {
        for (int i = 0; i < dw; i++) {
            const int64_t a = (int64_t)ax->k[2 * i] * C, b = (int64_t)ax->k[2 * i + 1] * C;
            const float w0 = ax->w[2 * i], w1 = ax->w[2 * i + 1];
            RS_UNROLL
            for (int c = 0; c < C; c++)
                h[i * C + c] =
                    CV_ADD(CV_MUL(w0, load(row, a + c, f32)), CV_MUL(w1, load(row, b + c, f32)));
        }
        return;
    }
    for (int i = 0; i < dw; i++) { /* box */
        const float *w = ax->w + (size_t)i * ax->t;
        const int n = ax->n[i];
        int64_t q = (int64_t)ax->k[(size_t)i * ax->t] * C;
        float acc[4];
        RS_UNROLL
        for (int c = 0; c < C; c++) acc[c] = CV_MUL(w[0], load(row, q + c, f32));
        for (int j = 1; j < n; j++) {
            q += C;
            RS_UNROLL
            for (int c = 0; c < C; c++) acc[c] = CV_ADD(acc[c], CV_MUL(w[j], load(row, q + c, f32)));
        }
        RS_UNROLL
        for (int c = 0; c < C; c++) h[i * C + c] = acc[c];
    }
}

static void hpass_any(const void *row, const rs_axis *ax, int dw, int C, int f32, float *h)
{
    if (f32) {
        hpass(row, ax, dw, 1, 1, h);
        return;
    }
    switch (C) {
    case 1: hpass(row, ax, dw, 1, 0, h); break;
    case 2: hpass(row, ax, dw, 2, 0, h); break;
    case 3: hpass(row, ax, dw, 3, 0, h); break;
    default: hpass(row, ax, dw, 4, 0, h); break;
    }
}

static void store_row(const pf_rs_plane *p, void *drow, const float *v, int n)
{
    if (p->f32) memcpy(drow, v, sizeof(float) * (size_t)n);
    else if (n == 256) pf_cv_round_row(drow, v, 256); /* vblend's full blocks */
    else pf_cv_round_row(drow, v, n);
}

/* Nearest: copy samples. */
static void nearest_row(const pf_rs_plane *p, const rs_axis *ax, const uint8_t *srow,
                        uint8_t *drow)
{
    const int es = p->f32 ? 4 : p->channels; /* bytes per pixel */
    switch (es) {
    case 1:
        for (int i = 0; i < p->dw; i++) drow[i] = srow[ax->k[i]];
        break;
    case 2:
        for (int i = 0; i < p->dw; i++) memcpy(drow + 2 * i, srow + 2 * (int64_t)ax->k[i], 2);
        break;
    case 3:
        for (int i = 0; i < p->dw; i++) memcpy(drow + 3 * i, srow + 3 * (int64_t)ax->k[i], 3);
        break;
    default:
        for (int i = 0; i < p->dw; i++) memcpy(drow + 4 * i, srow + 4 * (int64_t)ax->k[i], 4);
        break;
    }
}

/* v = w h and v += w h over m values (restrict: v never aliases a row, so
 * the compiler vectorizes these without run-time alias checks). */
RS_INLINE void scale_to(float *restrict v, const float *restrict h, float w, int m)
{
    for (int i = 0; i < m; i++) v[i] = CV_MUL(w, h[i]);
}
RS_INLINE void add_scaled(float *restrict v, const float *restrict h, float w, int m)
{
    for (int i = 0; i < m; i++) v[i] = CV_ADD(v[i], CV_MUL(w, h[i]));
}

/* Blends output row j from the filtered source rows h[0..n) with the row
 * weights w (resize.h's order: the first product, then add the others), a
 * block at a time on the stack, and rounds or copies it out. */
static void vblend(const pf_rs_plane *p, const float *const *h, const float *w, int n,
                   uint8_t *drow, int simd)
{
    enum { B = 256 };
    const int m_all = p->dw * p->channels;
    float v[B];
    /* two u8 rows: the SIMD kernel first, the blocks finish */
    const int from = n == 2 && !p->f32 ? pf_simd_blend2_u8(simd, drow, h[0], h[1], w[0], w[1], m_all)
                                       : 0;
    for (int i0 = from; i0 < m_all; i0 += B) {
        const int m = m_all - i0 < B ? m_all - i0 : B;
        if (m == B) { /* a constant trip count: vectorized even at -O2 */
            scale_to(v, h[0] + i0, w[0], B);
            for (int t = 1; t < n; t++) add_scaled(v, h[t] + i0, w[t], B);
        } else {
            scale_to(v, h[0] + i0, w[0], m);
            for (int t = 1; t < n; t++) add_scaled(v, h[t] + i0, w[t], m);
        }
        store_row(p, drow + (int64_t)i0 * (p->f32 ? 4 : 1), v, m);
    }
}

static void rs_rows(void *user, int ith, int nth)
{
    const rs_job *job = user;
    const pf_rs_plane *p = job->p;
    const int64_t total = (int64_t)p->count * p->dh;
    const int64_t r0 = total * ith / nth, r1 = total * (ith + 1) / nth;
    const int C = p->channels, n = p->dw * C;
    float *mine = job->buf + (size_t)ith * job->buf_stride;
    /* Ring of `ring` filtered source rows: source row key (plane-major)
     * lives in slot key % ring while tag[slot] == key. A destination row's
     * taps are consecutive rows, at most `ring` of them, so they never evict
     * each other. */
    const int ring = job->ring;
    int64_t *tag = (int64_t *)(mine + (size_t)(ring > 2 ? ring : 2) * job->row_floats);
    for (int q = 0; q < ring; q++) tag[q] = -1;
    for (int64_t r = r0; r < r1; r++) {
        const int plane = (int)(r / p->dh), j = (int)(r % p->dh);
        const uint8_t *src = (const uint8_t *)p->src + (int64_t)plane * p->src_plane;
        uint8_t *drow = (uint8_t *)p->dst + (int64_t)plane * p->dst_plane + j * p->dst_stride;
        const int32_t *yk = job->y.k + (size_t)j * job->y.t;
        const float *yw = job->y.w + (size_t)j * job->y.t;
        const int cnt = job->y.n[j];
        if (job->y.mode == PF_RS_NEAREST) {
            nearest_row(p, &job->x, src + yk[0] * p->src_stride, drow);
        } else if (ring) {
            const float *h[PF_RS_RING_MAX];
            for (int t = 0; t < cnt; t++) {
                const int64_t key = (int64_t)plane * p->sh + yk[t];
                const int slot = (int)(key % ring);
                float *buf = mine + (size_t)slot * job->row_floats;
                if (tag[slot] != key) {
                    if (job->bx)
                        pf_simd_bilinear_h_u8(job->simd, job->bx, src + yk[t] * p->src_stride, buf);
                    else
                        hpass_any(src + yk[t] * p->src_stride, &job->x, p->dw, C, p->f32, buf);
                    tag[slot] = key;
                }
                h[t] = buf;
            }
            vblend(p, h, yw, cnt, drow, job->simd);
        } else { /* box with too many taps to keep: stream the rows */
            float *hb = mine, *acc = mine + job->row_floats;
            for (int t = 0; t < cnt; t++) {
                hpass_any(src + yk[t] * p->src_stride, &job->x, p->dw, C, p->f32, hb);
                const float w = yw[t];
                if (t == 0)
                    for (int i = 0; i < n; i++) acc[i] = CV_MUL(w, hb[i]);
                else
                    for (int i = 0; i < n; i++) acc[i] = CV_ADD(acc[i], CV_MUL(w, hb[i]));
            }
            store_row(p, drow, acc, n);
        }
    }
}

pf_status pf_cpu_resize(pf_ops *ops, const pf_rs_plane *p)
{
    rs_job job;
    memset(&job, 0, sizeof job);
    job.p = p;
    job.x.mode = pf_rs_mode(p->interp, p->dw, p->sw);
    job.y.mode = pf_rs_mode(p->interp, p->dh, p->sh);
    job.x.t = axis_taps(job.x.mode, p->dw, p->sw);
    job.y.t = axis_taps(job.y.mode, p->dh, p->sh);

    const int64_t rows = (int64_t)p->count * p->dh;
    int nth = ops->pool ? pf_threadpool_size(ops->pool) : 1;
    /* At least ~16k destination samples per thread (a hand-off costs tens of
     * microseconds), and no more threads than rows. */
    const int64_t samples = rows * p->dw * p->channels;
    if (samples < (int64_t)nth * 16384) nth = samples / 16384 > 1 ? (int)(samples / 16384) : 1;
    if (nth > rows) nth = (int)rows;
    if (nth < 1) nth = 1;

    const size_t nx = (size_t)p->dw * (size_t)job.x.t, ny = (size_t)p->dh * (size_t)job.y.t;
    size_t off[6], need = 0;
    off[0] = need, need += ALIGN64(nx * sizeof(int32_t));
    off[1] = need, need += ALIGN64(nx * sizeof(float));
    off[2] = need, need += ALIGN64((size_t)p->dw * sizeof(int32_t));
    off[3] = need, need += ALIGN64(ny * sizeof(int32_t));
    off[4] = need, need += ALIGN64(ny * sizeof(float));
    off[5] = need, need += ALIGN64((size_t)p->dh * sizeof(int32_t));
    /* Per thread: the ring of filtered rows (bilinear: the two taps; box: up
     * to PF_RS_RING_MAX taps, about a 64x downscale, and at most 4 MiB), or
     * two rows to stream through, then the ring's tags. */
    const size_t row_bytes = ALIGN64((size_t)p->dw * (size_t)p->channels * sizeof(float));
    job.ring = job.y.mode == PF_RS_BILINEAR ? 2 : (job.y.mode == PF_RS_BOX ? job.y.t : 0);
    if (job.ring > PF_RS_RING_MAX || (size_t)job.ring * row_bytes > ((size_t)4 << 20))
        job.ring = 0;
    job.row_floats = row_bytes / sizeof(float);
    const size_t per_thread =
        (size_t)(job.ring > 2 ? job.ring : 2) * row_bytes + ALIGN64((size_t)job.ring * 8);
    const size_t buf_off = need;
    need += per_thread * (size_t)nth;
    /* u8 bilinear rows through the SIMD gather kernel: its plan */
    job.simd = pf_cpu_simd_level();
    const int plan = job.simd >= PF_SIMD_AVX2 && !p->f32 && job.x.mode == PF_RS_BILINEAR;
    const size_t plan_off = need;
    if (plan) need += ALIGN64(pf_simd_bilin_bytes(p->dw * p->channels));

    void *mem = NULL;
    pf_status st = pf_ops_scratch(ops, need, &mem);
    if (st != PF_OK) return st;
    uint8_t *base = mem;
    job.x.k = (int32_t *)(base + off[0]);
    job.x.w = (float *)(base + off[1]);
    job.x.n = (int32_t *)(base + off[2]);
    job.y.k = (int32_t *)(base + off[3]);
    job.y.w = (float *)(base + off[4]);
    job.y.n = (int32_t *)(base + off[5]);
    job.buf = (float *)(base + buf_off);
    job.buf_stride = per_thread / sizeof(float);
    fill_axis(&job.x, p->dw, p->sw);
    fill_axis(&job.y, p->dh, p->sh);
    pf_simd_bilin bx;
    if (plan) {
        pf_simd_bilin_plan(&bx, base + plan_off, job.x.k, job.x.w, p->dw, p->channels,
                           p->channels, NULL, p->sw * p->channels);
        job.bx = &bx;
    }
    if (nth == 1 || !ops->pool) {
        rs_rows(&job, 0, 1);
        return PF_OK;
    }
    return pf_threadpool_parallel_for(ops->pool, nth, rs_rows, &job);
}
