/* Streaming CPU morphology: both passes of one or two stages (erode,
 * dilate, open, close) fused per thread through rings of rows, so the only
 * plane-sized traffic is reading src and writing dst once.
 *
 * Why: with the SIMD min/max kernels the separate-pass path
 * (src/cpu/mask.c) spends its time moving full intermediate planes (4
 * passes of read + write for a close) and in 4 pool hand-offs; this keeps
 * the intermediates in per-thread rows that stay in L1/L2.
 *
 * Per thread (a contiguous range of output rows, plane-major):
 * - ring A: horizontally filtered source rows (stage 1's first pass);
 * - ring B (two stages only): stage 1's output rows, horizontally filtered
 *   by stage 2;
 * - an output row is the vertical min/max over the ring rows of its window.
 * Rows are computed on demand and tagged with their row number, so each is
 * computed once per thread; a window is 2r + 1 consecutive rows and a ring
 * has 2r + 1 slots, so a window's rows never evict each other.
 *
 * Values: min/max are exact and the windows are the reference's (edge
 * pixels repeated horizontally, rows clipped to the image vertically), so
 * the output is bit-identical to the separate passes and the reference.
 * Used when the rings fit the per-thread budget; the caller falls back to
 * the plane passes otherwise. */
#include <string.h>

#include "../ops/mask.h"
#include "../ops/ops_impl.h"
#include "morph_stream.h"
#include "simd.h"

#define ALIGN64(x) (((x) + 63) & ~(size_t)63)
#define RING_BUDGET ((size_t)2 << 20) /* bytes of rings per thread */

typedef struct ms_ring {
    uint8_t *rows;  /* slots * stride */
    int64_t *tag;   /* plane-major row number held by each slot, -1: none */
} ms_ring;

typedef struct ms_job {
    const pf_mk_sep *a;
    int two, first_max, simd, nth;
    size_t stride;          /* bytes per ring row */
    uint8_t *mem;           /* per thread: per_thread bytes */
    size_t per_thread;
} ms_job;

/* o = min/max(o, b) over n bytes (SIMD rows kernel on the pair, scalar tail). */
static void mm_rows(int simd, uint8_t *o, const uint8_t *const *rows, int nrows, int n,
                    int is_max)
{
    int x = pf_simd_minmax_rows(simd, o, rows, nrows, n, is_max);
    for (; x < n; x++) {
        uint8_t v = rows[0][x];
        for (int k = 1; k < nrows; k++) {
            const uint8_t b = rows[k][x];
            v = is_max ? (b > v ? b : v) : (b < v ? b : v);
        }
        o[x] = v;
    }
}

/* Horizontal pass of one row `s` (W bytes) into o, edge pixels repeated;
 * pad is a W + 2r scratch row. */
static void hpass(int simd, const uint8_t *s, int W, int r, int is_max, uint8_t *pad, uint8_t *o)
{
    memset(pad, s[0], (size_t)r);
    memcpy(pad + r, s, (size_t)W);
    memset(pad + r + W, s[W - 1], (size_t)r);
    const int taps = 2 * r + 1;
    int x = pf_simd_minmax_taps(simd, o, pad, taps, W, is_max);
    for (; x < W; x++) {
        uint8_t v = pad[x];
        for (int k = 1; k < taps; k++) {
            const uint8_t b = pad[x + k];
            v = is_max ? (b > v ? b : v) : (b < v ? b : v);
        }
        o[x] = v;
    }
}

typedef struct ms_thread {
    const ms_job *job;
    ms_ring A, B;
    uint8_t *pad, *mid; /* W + 2r; W */
    const uint8_t *win[2 * PF_MK_MAX_MORPH_RADIUS + 1];
} ms_thread;

/* Ring A slot of plane q's source row y, filtered on demand. */
static const uint8_t *row_a(ms_thread *t, int64_t q, int y)
{
    const ms_job *job = t->job;
    const pf_mk_sep *a = job->a;
    const int64_t key = q * a->height + y;
    const int slots = 2 * a->radius + 1;
    const int s = (int)(key % slots);
    uint8_t *row = t->A.rows + (size_t)s * job->stride;
    if (t->A.tag[s] != key) {
        const uint8_t *src = (const uint8_t *)a->src + (size_t)key * (size_t)a->width;
        hpass(job->simd, src, a->width, a->radius, job->first_max, t->pad, row);
        t->A.tag[s] = key;
    }
    return row;
}

/* Vertical window of plane q around row y over a row source. */
static int window(ms_thread *t, int64_t q, int y, int use_b);

/* Ring B slot: stage 1's output row y of plane q, filtered horizontally by
 * stage 2. */
static const uint8_t *row_b(ms_thread *t, int64_t q, int y)
{
    const ms_job *job = t->job;
    const pf_mk_sep *a = job->a;
    const int64_t key = q * a->height + y;
    const int slots = 2 * a->radius + 1;
    const int s = (int)(key % slots);
    uint8_t *row = t->B.rows + (size_t)s * job->stride;
    if (t->B.tag[s] != key) {
        const int n = window(t, q, y, 0);
        mm_rows(job->simd, t->mid, t->win, n, a->width, job->first_max);
        hpass(job->simd, t->mid, a->width, a->radius, !job->first_max, t->pad, row);
        t->B.tag[s] = key;
    }
    return row;
}

static int window(ms_thread *t, int64_t q, int y, int use_b)
{
    const pf_mk_sep *a = t->job->a;
    const int r = a->radius, H = a->height;
    const int y0 = y - r < 0 ? 0 : y - r, y1 = y + r > H - 1 ? H - 1 : y + r;
    /* fetch every row first: row_b reuses t->win for its own window */
    const uint8_t *rows[2 * PF_MK_MAX_MORPH_RADIUS + 1];
    for (int yy = y0; yy <= y1; yy++) rows[yy - y0] = use_b ? row_b(t, q, yy) : row_a(t, q, yy);
    memcpy(t->win, rows, sizeof(rows[0]) * (size_t)(y1 - y0 + 1));
    return y1 - y0 + 1;
}

static void ms_rows(void *user, int ith, int nth)
{
    const ms_job *job = user;
    const pf_mk_sep *a = job->a;
    const int64_t total = a->planes * a->height;
    const int64_t lo = total * ith / nth, hi = total * (ith + 1) / nth;
    const int slots = 2 * a->radius + 1;
    uint8_t *m = job->mem + (size_t)ith * job->per_thread;
    ms_thread t;
    t.job = job;
    t.A.rows = m, m += (size_t)slots * job->stride;
    t.B.rows = m, m += job->two ? (size_t)slots * job->stride : 0;
    t.pad = m, m += job->stride;
    t.mid = m, m += job->stride;
    t.A.tag = (int64_t *)(void *)m, m += ALIGN64((size_t)slots * sizeof(int64_t));
    t.B.tag = (int64_t *)(void *)m;
    for (int s = 0; s < slots; s++) t.A.tag[s] = t.B.tag[s] = -1;
    const int last_max = job->two ? !job->first_max : job->first_max;
    for (int64_t row = lo; row < hi; row++) {
        const int64_t q = row / a->height;
        const int y = (int)(row - q * a->height);
        const int n = window(&t, q, y, job->two);
        mm_rows(job->simd, (uint8_t *)a->dst + (size_t)row * (size_t)a->width, t.win, n, a->width,
                last_max);
    }
}

int pf_cpu_morph_stream(pf_ops *ops, const pf_mk_sep *a, int simd, pf_status *st)
{
    const int two = a->op == PF_MORPH_OPEN || a->op == PF_MORPH_CLOSE;
    const int slots = 2 * a->radius + 1;
    const size_t stride = ALIGN64((size_t)a->width + 2 * (size_t)a->radius);
    const size_t per_thread = (size_t)slots * stride * (two ? 2 : 1) + 2 * stride +
                              2 * ALIGN64((size_t)slots * sizeof(int64_t));
    if (per_thread > RING_BUDGET) return 0;
    const int64_t rows = a->planes * a->height;
    int nth = ops->pool ? pf_threadpool_size(ops->pool) : 1;
    /* each thread recomputes up to 2r rows of its window's margin: keep
     * shares well above that */
    const int64_t min_rows = 8 * (int64_t)slots;
    if (nth > rows / min_rows) nth = (int)(rows / min_rows);
    if (nth < 1) nth = 1;
    void *mem = NULL;
    *st = pf_ops_scratch(ops, per_thread * (size_t)nth, &mem);
    if (*st != PF_OK) return 1;
    ms_job job = {.a = a,
                  .two = two,
                  .first_max = a->op == PF_MORPH_DILATE || a->op == PF_MORPH_CLOSE,
                  .simd = simd,
                  .nth = nth,
                  .stride = stride,
                  .mem = mem,
                  .per_thread = per_thread};
    if (nth == 1 || !ops->pool) {
        ms_rows(&job, 0, 1);
        *st = PF_OK;
    } else {
        *st = pf_threadpool_parallel_for(ops->pool, nth, ms_rows, &job);
    }
    return 1;
}
