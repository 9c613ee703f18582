/* igemm.cu (FP16 implicit-GEMM conv) against a plain C conv on the same
 * F16 inputs, for every tile config and several split-K counts: 1x1 and
 * KxK, stride, dilation, asymmetric (TFLite SAME) pads, M, N and K off the
 * tile sizes (odd N, K not a multiple of 32), a strided output view whose
 * padding columns must stay untouched, activations, and the fused residual
 * with a separate z and with z being y itself (in place); then the tuner.
 *
 * Tolerance: |gpu - ref| <= 4e-3 |ref| + 1e-3 scale (scale = max |ref|): the
 * GPU rounds its f32 sum to F16 once (2^-11 relative); the rest is summation
 * order. */
#include <math.h>

#include "cuda_test_util.h"
#include "nn/cuda/cu_internal.h"

typedef struct shape {
    int n, c, h, w, k, kh, kw, sh, sw, dh, dw, ph, pw, peh, pew, act, resid;
    int ypad; /* extra channels per output pixel (a strided view) */
} shape;

static float h2f(uint16_t h) { return pf_f16_to_f32(h); }

static float act_ref(int act, float v)
{
    switch (act) {
    case PF_IR_ACT_RELU: return v > 0 ? v : 0;
    case PF_IR_ACT_HARD_SWISH: return v * fmaxf(0.0f, fminf(1.0f, v / 6.0f + 0.5f));
    case PF_IR_ACT_CLIP: return fminf(fmaxf(v, 0.0f), 6.0f);
    default: return v;
    }
}

static uint16_t *rand_f16(size_t n, float lo, float hi)
{
    uint16_t *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++) {
        const float u = (float)(pf_test_rand() >> 40) / (float)(1ull << 24);
        p[i] = pf_f32_to_f16(lo + (hi - lo) * u);
    }
    return p;
}

/* One shape: every config x split on the same data. resid: 0 none, 1 a
 * separate z (ReLU after the add), 2 z = y (in place, no activation). */
static void run_shape(const shape *s)
{
    const int oh = (s->h + s->ph + s->peh - s->dh * (s->kh - 1) - 1) / s->sh + 1;
    const int ow = (s->w + s->pw + s->pew - s->dw * (s->kw - 1) - 1) / s->sw + 1;
    const int ys = s->k + s->ypad; /* pixel stride of y and z */
    const size_t nx = (size_t)s->n * s->h * s->w * s->c;
    const size_t nw = (size_t)s->k * s->kh * s->kw * s->c;
    const size_t ny = (size_t)s->n * oh * ow * ys;
    const float wr = 1.0f / sqrtf((float)(s->c * s->kh * s->kw));
    uint16_t *x = rand_f16(nx, -1, 1), *w = rand_f16(nw, -wr, wr), *b = rand_f16(s->k, -0.5f, 0.5f);
    uint16_t *z = rand_f16(ny, -1, 1), *got = malloc(ny * 2);
    float *ref = malloc(ny * sizeof *ref);
    float scale = 0;
    for (int bi = 0; bi < s->n; bi++)
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++)
                for (int k = 0; k < s->k; k++) {
                    double acc = 0;
                    for (int ky = 0; ky < s->kh; ky++)
                        for (int kx = 0; kx < s->kw; kx++) {
                            const int iy = oy * s->sh - s->ph + ky * s->dh;
                            const int ix = ox * s->sw - s->pw + kx * s->dw;
                            if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->w) continue;
                            const uint16_t *xp = x + (((size_t)bi * s->h + iy) * s->w + ix) * s->c;
                            const uint16_t *wp = w + (((size_t)k * s->kh + ky) * s->kw + kx) * s->c;
                            for (int c = 0; c < s->c; c++) acc += (double)h2f(xp[c]) * h2f(wp[c]);
                        }
                    const size_t o = (((size_t)bi * oh + oy) * ow + ox) * ys + k;
                    float v = act_ref(s->resid ? PF_IR_ACT_NONE : s->act, (float)acc + h2f(b[k]));
                    if (s->resid) v = act_ref(s->resid == 1 ? PF_IR_ACT_RELU : 0, v + h2f(z[o]));
                    ref[o] = v;
                    if (fabsf(v) > scale) scale = fabsf(v);
                }
    void *dx = dmalloc(nx * 2), *dw = dmalloc(nw * 2), *db = dmalloc((size_t)s->k * 2);
    void *dy = dmalloc(ny * 2), *dz = dmalloc(ny * 2), *ws = dmalloc(64 * MiB);
    cudaMemcpy(dx, x, nx * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(dw, w, nw * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b, (size_t)s->k * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(dz, z, ny * 2, cudaMemcpyHostToDevice);
    pf_cu_ig p;
    memset(&p, 0, sizeof p);
    p.n = s->n, p.c = s->c, p.h = s->h, p.w = s->w, p.k = s->k, p.oh = oh, p.ow = ow;
    p.kh = s->kh, p.kw = s->kw, p.sh = s->sh, p.sw = s->sw, p.dh = s->dh, p.dw = s->dw;
    p.ph = s->ph, p.pw = s->pw;
    const long long xst[4] = {(long long)s->h * s->w * s->c, 1, (long long)s->w * s->c, s->c};
    const long long yst[4] = {(long long)oh * ow * ys, 1, (long long)ow * ys, ys};
    for (int d = 0; d < 4; d++) p.in_st[d] = xst[d], p.out_st[d] = p.z_st[d] = yst[d];
    p.act = s->resid ? PF_IR_ACT_NONE : s->act;
    p.act_a = 0.0f, p.act_b = 6.0f; /* CLIP's bounds (act_ref) */
    p.r_act = s->resid == 1 ? PF_IR_ACT_RELU : PF_IR_ACT_NONE;
    CHECK(pf_cu_ig_ok(&p));
    /* The tuner's pick (it times launches without a residual) is checked
     * like the fixed configs, as the last run of the loop below. */
    pf_cu_ig tuned = p;
    int have_tuned = 0;
    if (!s->resid) {
        float ms = -1;
        CHECK_EQ_INT(pf_cu_ig_tune(&tuned, dx, dw, db, dy, ws, 64 * MiB, NULL, &ms), 0);
        CHECK(ms > 0);
        CHECK(tuned.cfg >= 0 && tuned.cfg < PF_CU_IG_CONFIGS && tuned.splits >= 1);
        have_tuned = 1;
    }
    static const int splits[] = {1, 2, 3, 5};
    const int fixed = PF_CU_IG_CONFIGS * 4;
    for (int run = 0; run < fixed + have_tuned; run++) {
        pf_cu_ig q = run < fixed ? p : tuned;
        if (run < fixed) pf_cu_ig_set(&q, run / 4, splits[run % 4]);
        CHECK(pf_cu_ig_ws(&q) <= 64 * MiB);
        /* Sentinel everywhere, z copied in for the in-place case. */
        cudaMemset(dy, 0x7b, ny * 2);
        if (s->resid == 2) cudaMemcpy(dy, z, ny * 2, cudaMemcpyHostToDevice);
        const void *zp = s->resid == 1 ? dz : s->resid == 2 ? dy : NULL;
        CHECK_EQ_INT(pf_cu_launch_ig(&q, dx, dw, db, zp, dy, ws, NULL), 0);
        CHECK_EQ_INT(cudaMemcpy(got, dy, ny * 2, cudaMemcpyDeviceToHost), 0);
        int bad = 0;
        double worst = 0;
        for (size_t i = 0; i < ny; i++) {
            const size_t ch = i % (size_t)ys;
            if ((int)ch >= s->k) { /* padding column: untouched */
                const uint16_t want = s->resid == 2 ? z[i] : 0x7b7b;
                if (got[i] != want && bad++ < 3)
                    fprintf(stderr, "    padding %zu changed: %04x\n", i, got[i]);
                continue;
            }
            const double d = fabs((double)h2f(got[i]) - ref[i]);
            if (d > worst) worst = d;
            if (d > 4e-3 * fabs(ref[i]) + 1e-3 * scale && bad++ < 3)
                fprintf(stderr, "    [%zu] got %g want %g\n", i, h2f(got[i]), ref[i]);
        }
        if (bad)
            fprintf(stderr, "  n%d c%d %dx%d k%d %dx%d s%d d%d p%d/%d cfg %d splits %d: %d bad,"
                    " worst %g (scale %g)\n", s->n, s->c, s->h, s->w, s->k, s->kh, s->kw,
                    s->sh, s->dh, s->ph, s->peh, q.cfg, q.splits, bad, worst, scale);
        CHECK(bad == 0);
    }
    cudaFree(dx), cudaFree(dw), cudaFree(db), cudaFree(dy), cudaFree(dz), cudaFree(ws);
    free(x), free(w), free(b), free(z), free(got), free(ref);
}

static void test_shapes(void)
{
    static const shape cs[] = {
        /* n  c   h   w   k  kh kw sh sw dh dw ph pw peh pew act resid ypad */
        {1, 16, 7, 9, 24, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, PF_IR_ACT_RELU, 0, 0},
        {2, 160, 16, 16, 960, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, PF_IR_ACT_HARD_SWISH, 0, 0},
        {1, 680, 8, 8, 160, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, PF_IR_ACT_NONE, 0, 0},
        {2, 24, 13, 11, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, PF_IR_ACT_CLIP, 0, 0},
        {1, 16, 16, 12, 24, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, PF_IR_ACT_RELU, 0, 0}, /* SAME s2 */
        {1, 64, 20, 20, 33, 3, 3, 1, 1, 3, 3, 3, 3, 3, 3, PF_IR_ACT_NONE, 0, 0}, /* odd N */
        {1, 8, 10, 10, 16, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, PF_IR_ACT_RELU, 0, 0},
        {2, 32, 15, 15, 64, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, PF_IR_ACT_NONE, 0, 0}, /* downsample */
        {1, 512, 8, 8, 64, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, PF_IR_ACT_RELU, 0, 0},  /* K 4608 */
        {2, 32, 9, 10, 32, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 0},               /* z, ReLU */
        {2, 32, 9, 10, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 2, 0},               /* z = y */
        {1, 24, 6, 7, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, PF_IR_ACT_RELU, 0, 8},   /* view */
        {1, 24, 6, 7, 21, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 2, 3}, /* odd N, odd stride, z = y */
    };
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) run_shape(&cs[i]);
}

static void test_refuses(void)
{
    pf_cu_ig p;
    memset(&p, 0, sizeof p);
    p.n = 1, p.c = 12, p.h = 4, p.w = 4, p.k = 8, p.oh = 4, p.ow = 4;
    p.kh = p.kw = p.sh = p.sw = p.dh = p.dw = 1;
    const long long st[4] = {192, 1, 48, 12};
    for (int d = 0; d < 4; d++) p.in_st[d] = p.out_st[d] = p.z_st[d] = st[d];
    CHECK(!pf_cu_ig_ok(&p)); /* C % 8 */
    p.c = 16;
    p.in_st[0] = 256, p.in_st[2] = 64, p.in_st[3] = 16;
    CHECK(pf_cu_ig_ok(&p));
    p.in_st[1] = 2;
    CHECK(!pf_cu_ig_ok(&p)); /* channel stride */
}

int main(void)
{
    pf_device *dev = pf_test_cuda_device_or_skip();
    (void)dev;
    pf_test_seed(20261121);
    PF_RUN(test_refuses);
    PF_RUN(test_shapes);
    return pf_test_finish();
}
