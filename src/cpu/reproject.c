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

#include <stdlib.h>
#include <string.h>

#include "../ops/ops_impl.h"
#include "../ops/reproject.h"
#include "simd.h"

#define CHUNK 64

typedef struct cpu_task {
    const pf_rp_job *job;
    int64_t total_rows;
    int64_t first_row[PF_RP_MAX_VIEWS + 1]; /* rows of views before view v */
    int simd;                               /* SIMD row kernel's level, 0: none */
    /* The coordinate map (see rp_map below): per view, fx then fy of every
     * pixel, row-major; read (use) or written (fill) by the SIMD kernel. */
    float *map[PF_RP_MAX_VIEWS];
    int map_use, map_fill;
} cpu_task;

/* Coordinate maps kept between calls (pf_ops.cpu_cache). A job renders the
 * same views from sources of one size again and again (pixflow reproject,
 * a 360 video): the coordinates of every view pixel - the atan2s, the
 * division and the square root, two thirds of the SIMD kernel's time - are
 * then the same floats each call, so the first call stores them and later
 * calls read them (OpenCV's remap reads such maps too). The key is what
 * they depend on: source width and height and the views' constants. 8
 * bytes per view pixel, at most RP_MAP_CAP in all (8 views of 1080p: 133
 * MB); larger sets are computed every call. */
#define RP_MAP_CAP ((size_t)256 << 20)

typedef struct rp_map {
    int src_w, src_h, n, valid;
    pf_rp_view views[PF_RP_MAX_VIEWS];
    size_t bytes;
    float *data;
} rp_map;

static void rp_map_free(void *p)
{
    rp_map *m = p;
    free(m->data);
    free(m);
}

/* Sets t's map pointers for this job: use a valid map with the job's key,
 * or fill one (allocated or reused here); neither when the maps would
 * exceed the cap or memory is short (the kernel then computes). */
static void rp_map_attach(pf_ops *ops, const pf_rp_job *job, cpu_task *t)
{
    size_t floats = 0;
    for (int v = 0; v < job->n; v++)
        floats += 2 * (size_t)job->views[v].width * (size_t)job->views[v].height;
    const size_t bytes = floats * sizeof(float);
    if (bytes > RP_MAP_CAP) return;
    if (ops->cpu_cache && ops->cpu_cache_free != rp_map_free) return; /* another path's */
    rp_map *m = ops->cpu_cache;
    if (!m) {
        m = calloc(1, sizeof *m);
        if (!m) return;
        ops->cpu_cache = m;
        ops->cpu_cache_free = rp_map_free;
    }
    const int same = m->valid && m->src_w == job->src_w && m->src_h == job->src_h &&
                     m->n == job->n &&
                     !memcmp(m->views, job->views, sizeof(pf_rp_view) * (size_t)job->n);
    if (!same) {
        m->valid = 0;
        if (m->bytes != bytes) {
            free(m->data);
            m->bytes = 0;
            m->data = malloc(bytes);
            if (!m->data) return;
            m->bytes = bytes;
        }
        m->src_w = job->src_w, m->src_h = job->src_h, m->n = job->n;
        memcpy(m->views, job->views, sizeof(pf_rp_view) * (size_t)job->n);
    }
    float *p = m->data;
    for (int v = 0; v < job->n; v++) {
        t->map[v] = p;
        p += 2 * (size_t)job->views[v].width * (size_t)job->views[v].height;
    }
    t->map_use = same;
    t->map_fill = !same;
}


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

/* Pixels [from, width) of view v's row j (from > 0: the SIMD kernel did
 * the ones before, render_band). */
static void render_row(const pf_rp_job *job, sampler_fn sample, int v, int j, int from)
{
    const pf_rp_view *view = &job->views[v];
    pf_rp_row row = pf_rp_row_base(view, j);
    uint8_t *out = job->dst[v] + (size_t)j * job->dst_stride[v];
    float fx[CHUNK], fy[CHUNK];
    for (int i0 = from; i0 < view->width; i0 += CHUNK) {
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
static void render_band(const cpu_task *t, sampler_fn sample, int v, int j0, int j1)
{
    const pf_rp_job *job = t->job;
    const pf_rp_view *view = &job->views[v];
    const size_t plane = (size_t)view->width * (size_t)view->height;
    int done = 0;
    for (int x0 = 0; x0 < view->width; x0 += BAND_W) {
        const int x1 = view->width - x0 < BAND_W ? view->width : x0 + BAND_W;
        for (int j = j0; j < j1; j++) {
            float *mx = t->map[v] ? t->map[v] + (size_t)j * view->width : NULL;
            float *my = mx ? mx + plane : NULL;
            done = pf_simd_reproject_row(t->simd, job, v, j, x0, x1,
                                         job->dst[v] + (size_t)j * job->dst_stride[v],
                                         t->map_use ? mx : NULL, t->map_use ? my : NULL,
                                         t->map_fill ? mx : NULL, t->map_fill ? my : NULL);
        }
        if (done < x1) break; /* the partial vector at the end of the row */
    }
    if (done >= view->width) return;
    for (int j = j0; j < j1; j++) render_row(job, sample, v, j, done);
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
            render_band(t, sample, v, j, j + (int)n);
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
    memset(t.map, 0, sizeof t.map);
    t.map_use = t.map_fill = 0;
    if (t.simd) rp_map_attach(ops, job, &t);
    pf_status st = PF_OK;
    if (!ops->pool) {
        render_rows(&t, 0, 1);
    } else {
        /* About 8 ranges per thread: small enough to balance, large enough
         * that claiming costs nothing next to a row. */
        int64_t nth = (int64_t)pf_threadpool_size(ops->pool) * 8;
        if (nth > t.total_rows) nth = t.total_rows;
        st = pf_threadpool_parallel_for(ops->pool, (int)nth, render_rows, &t);
    }
    if (t.map_fill && st == PF_OK) ((rp_map *)ops->cpu_cache)->valid = 1;
    return st;
}
