/* Multi-threaded CPU path of the 360° reprojection.
 *
 * The rows of all views form one sequence that pf_threadpool_parallel_for
 * splits into contiguous ranges (more ranges than threads, claimed
 * dynamically, so views of different sizes still balance). Per row the
 * row-constant part of the ray is computed once; per chunk of 64 pixels the
 * source coordinates are computed in branch-free loops that GCC vectorises
 * (all but the square root), the bilinear taps are gathered (scalar) and
 * blended in one more vectorised loop over pixels x channels. Every value
 * comes from the same reproject_math.h operations as the reference, in the
 * same order, so the output is bit-identical to it. 8 views of 1920x1080
 * from an 8K source: about 0.3 s of CPU time per image on one core of the
 * development machine (bench/bench_reproject.c --device cpu). */
/* GCC: let the mapping loops vectorise (4 pixels per SSE instruction). At
 * -O2 GCC uses the "very cheap" cost model, which rejects loops with
 * selects; the atan2's selects become vector blends only when comparisons
 * may be evaluated for every lane (no-trapping-math: nothing here reads FP
 * exception flags). This precedes the include so that the math header's
 * inline functions are compiled with these options too. None of it changes a
 * result: vector and scalar IEEE operations round alike and contraction
 * stays off (ISO C mode), so the output is the reference's bit for bit
 * (tests/test_reproject.c checks it). */
#include "../core/vectorize.h" /* first: compile flags for the row loops */

#include "../ops/reproject.h"
#include "simd.h"

#define CHUNK 64

typedef struct cpu_task {
    const pf_rp_job *job;
    int64_t total_rows;
    int64_t first_row[PF_RP_MAX_VIEWS + 1]; /* rows of views before view v */
    int simd;                               /* SIMD row kernel's level, 0: none */
} cpu_task;


/* Source coordinates of pixels i0 .. i0 + CHUNK - 1 of one row (pixels past
 * the row's end are computed and ignored: a fixed trip count vectorises). */
static void map_chunk(const pf_rp_view *v, pf_rp_row row, int i0, int W, int H,
                      float *restrict fx, float *restrict fy)
{
    float wy[CHUNK], h[CHUNK];
    for (int k = 0; k < CHUNK; k++) {
        float wx, wz;
        pf_rp_ray(v, row, i0 + k, &wx, &wy[k], &wz);
        fx[k] = pf_rp_fx(wx, wz, W);
        h[k] = pf_rp_horiz2(wx, wz);
    }
    /* Scalar: GCC keeps sqrtf's errno branch whatever the options above say
     * (its builtins' attributes follow the command line), and a branch
     * stops a loop from vectorising. One sqrtss per pixel is cheap. */
    for (int k = 0; k < CHUNK; k++) h[k] = RP_SQRT(h[k]);
    for (int k = 0; k < CHUNK; k++) fy[k] = pf_rp_fy(wy[k], h[k], H);
}

#define DEFINE_SAMPLERS(C) \
    static void nearest_##C(const pf_rp_job *job, const float *fx, const float *fy, int cnt, \
                            uint8_t *out) \
    { \
        for (int k = 0; k < cnt; k++, out += C) { \
            int x, y; \
            pf_rp_nearest(fx[k], fy[k], job->src_w, job->src_h, &x, &y); \
            const uint8_t *p = job->src + (size_t)y * job->src_stride + (size_t)x * C; \
            for (int c = 0; c < C; c++) out[c] = p[c]; \
        } \
    } \
    static void bilinear_##C(const pf_rp_job *job, const float *fx, const float *fy, int cnt, \
                             uint8_t *out) \
    { \
        float a[CHUNK * C], b[CHUNK * C], c[CHUNK * C], d[CHUNK * C]; \
        float ax[CHUNK * C], ay[CHUNK * C]; \
        for (int k = 0; k < cnt; k++) { \
            pf_rp_taps t = pf_rp_bilinear(fx[k], fy[k], job->src_w, job->src_h); \
            const uint8_t *r0 = job->src + (size_t)t.y0 * job->src_stride; \
            const uint8_t *r1 = job->src + (size_t)t.y1 * job->src_stride; \
            size_t o0 = (size_t)t.x0 * C, o1 = (size_t)t.x1 * C; \
            for (int ch = 0; ch < C; ch++) { \
                int e = k * C + ch; \
                a[e] = r0[o0 + ch]; \
                b[e] = r0[o1 + ch]; \
                c[e] = r1[o0 + ch]; \
                d[e] = r1[o1 + ch]; \
                ax[e] = t.ax; \
                ay[e] = t.ay; \
            } \
        } \
        for (int e = 0; e < cnt * C; e++) \
            out[e] = pf_rp_blend_f(a[e], b[e], c[e], d[e], ax[e], ay[e]); \
    }

DEFINE_SAMPLERS(1)
DEFINE_SAMPLERS(3)
DEFINE_SAMPLERS(4)

typedef void (*sampler_fn)(const pf_rp_job *job, const float *fx, const float *fy, int cnt,
                           uint8_t *out);

static sampler_fn pick_sampler(int channels, pf_interp interp)
{
    int bil = interp == PF_INTERP_BILINEAR;
    switch (channels) {
    case 1: return bil ? bilinear_1 : nearest_1;
    case 3: return bil ? bilinear_3 : nearest_3;
    default: return bil ? bilinear_4 : nearest_4;
    }
}

static void render_row(const pf_rp_job *job, sampler_fn sample, int v, int j, int simd)
{
    const pf_rp_view *view = &job->views[v];
    pf_rp_row row = pf_rp_row_base(view, j);
    uint8_t *out = job->dst[v] + (size_t)j * job->dst_stride[v];
    float fx[CHUNK], fy[CHUNK];
    /* the SIMD kernel's whole vectors first (render_band), the chunks
     * finish the row */
    const int done = simd ? pf_simd_reproject_row(simd, job, v, j, 0, view->width, out) : 0;
    for (int i0 = done; i0 < view->width; i0 += CHUNK) {
        map_chunk(view, row, i0, job->src_w, job->src_h, fx, fy);
        int cnt = view->width - i0 < CHUNK ? view->width - i0 : CHUNK;
        sample(job, fx, fy, cnt, out + (size_t)i0 * (size_t)job->channels);
    }
}

/* SIMD: rows j0 .. j1 - 1 of view v in tiles of BAND_W columns: a tile's
 * source pixels are a compact region, where whole rows of a view sweep a
 * curve across hundreds of source rows (measured on an 8K source: a TLB
 * and cache miss per gather lane otherwise). Each row's last, partial
 * vector goes through the scalar chunks. */
#define BAND_H 8
#define BAND_W 128
static void render_band(const pf_rp_job *job, sampler_fn sample, int simd, int v, int j0, int j1)
{
    const pf_rp_view *view = &job->views[v];
    int done = 0;
    for (int x0 = 0; x0 < view->width; x0 += BAND_W) {
        const int x1 = view->width - x0 < BAND_W ? view->width : x0 + BAND_W;
        for (int j = j0; j < j1; j++)
            done = pf_simd_reproject_row(simd, job, v, j, x0, x1,
                                         job->dst[v] + (size_t)j * job->dst_stride[v]);
        if (done < x1) break; /* the partial vector at the end of the row */
    }
    if (done >= view->width) return;
    float fx[CHUNK], fy[CHUNK];
    for (int j = j0; j < j1; j++) {
        const pf_rp_row row = pf_rp_row_base(view, j);
        uint8_t *out = job->dst[v] + (size_t)j * job->dst_stride[v];
        for (int i0 = done; i0 < view->width; i0 += CHUNK) {
            map_chunk(view, row, i0, job->src_w, job->src_h, fx, fy);
            int cnt = view->width - i0 < CHUNK ? view->width - i0 : CHUNK;
            sample(job, fx, fy, cnt, out + (size_t)i0 * (size_t)job->channels);
        }
    }
}

static void render_rows(void *user, int ith, int nth)
{
    const cpu_task *t = user;
    const pf_rp_job *job = t->job;
    sampler_fn sample = pick_sampler(job->channels, job->interp);
    int64_t r0 = t->total_rows * ith / nth, r1 = t->total_rows * (ith + 1) / nth;
    int v = 0;
    for (int64_t r = r0; r < r1;) {
        while (r >= t->first_row[v + 1]) v++;
        const int j = (int)(r - t->first_row[v]);
        if (t->simd) { /* a band of rows, within this range and view */
            int64_t n = r1 - r < BAND_H ? r1 - r : BAND_H;
            if (n > t->first_row[v + 1] - r) n = t->first_row[v + 1] - r;
            render_band(job, sample, t->simd, v, j, j + (int)n);
            r += n;
        } else {
            render_row(job, sample, v, j, 0);
            r++;
        }
    }
}

pf_status pf_cpu_equirect_to_views(pf_ops *ops, const pf_rp_job *job)
{
    cpu_task t;
    t.job = job;
    t.first_row[0] = 0;
    for (int v = 0; v < job->n; v++) t.first_row[v + 1] = t.first_row[v] + job->views[v].height;
    t.total_rows = t.first_row[job->n];
    const int level = pf_cpu_simd_level();
    t.simd = pf_simd_reproject_ok(level, job) ? level : 0;
    if (!ops->pool) {
        render_rows(&t, 0, 1);
        return PF_OK;
    }
    /* About 8 ranges per thread: small enough to balance, large enough that
     * claiming costs nothing next to a row. */
    int64_t nth = (int64_t)pf_threadpool_size(ops->pool) * 8;
    if (nth > t.total_rows) nth = t.total_rows;
    return pf_threadpool_parallel_for(ops->pool, (int)nth, render_rows, &t);
}
