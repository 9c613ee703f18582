/* The heavy nn CPU kernels (conv, conv_transpose, gemm/matmul, pool,
 * batchnorm, resize, sgemm) against plain references computed here in
 * double, on random inputs (fixed seed, PF_TEST_SEED overrides) and edge
 * geometries (1x1, odd sizes, stride > kernel, big pads, group = C,
 * dilation 2, 1D), each run without a pool and with a 3-thread pool; plus
 * ONNX conformance cases where the ONNX reader is built and the test data
 * is installed.
 *
 * Graphs are one-node pf_ir_graph structs filled in directly (shapes and
 * resolved attrs as shape inference leaves them), so the kernels are tested
 * independently of ir.c.
 *
 * Tolerance for sums of products: |got - ref| <= 1e-4 * sum(|terms|) + 1e-6
 * (f32 accumulation over at most a few thousand terms stays well inside it);
 * x2 after a fused activation (slopes up to 1.5). */
#include <float.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nn/cpu/blas.h"
#include "nn/cpu/kernels.h"
#include "nn/onnx_reader.h"
#include "pf_test.h"

static pf_threadpool *g_pool;

/* ---- one-node graphs --------------------------------------------------------- */

typedef struct tnode {
    pf_ir_graph g;
    pf_ir_value v[8];
    pf_ir_node n;
    char names[8][8];
} tnode;

static void tn_init(tnode *t, pf_ir_op op)
{
    memset(t, 0, sizeof *t);
    t->g.name = (char *)"test";
    t->g.values = t->v;
    t->g.nodes = &t->n;
    t->g.n_nodes = t->g.cap_nodes = 1;
    t->n.op = op;
    t->n.name = (char *)"k";
    t->n.src_op = (char *)"test";
}

static int tn_value(tnode *t, pf_ir_dtype dt, int ndim, const int64_t *dims)
{
    int id = t->g.n_values++;
    pf_ir_value *v = &t->v[id];
    snprintf(t->names[id], sizeof t->names[id], "v%d", id);
    v->name = t->names[id];
    v->dtype = dt;
    v->ndim = ndim;
    for (int i = 0; i < ndim; i++) v->dims[i] = dims[i];
    v->producer = -1;
    return id;
}

static void tn_in(tnode *t, int id) { t->n.in[t->n.n_in++] = id; }
static void tn_out(tnode *t, int id) { t->n.out[t->n.n_out++] = id; }

static int64_t numel(const int64_t *d, int n)
{
    int64_t e = 1;
    for (int i = 0; i < n; i++) e *= d[i];
    return e;
}

static pf_status tn_run(tnode *t, const void *const *in, void *const *out, pf_threadpool *pool)
{
    size_t sb = pf_nn_cpu_scratch_bytes(&t->g, 0);
    void *scratch = sb ? aligned_alloc(64, (sb + 63) & ~(size_t)63) : NULL;
    if (sb && !scratch) return PF_ERR_NOMEM;
    if (scratch) memset(scratch, 0xFF, sb); /* NaN garbage: a kernel must not read it unwritten */
    pf_status st = pf_nn_cpu_run_node(&t->g, 0, in, out, pool, scratch, sb);
    free(scratch);
    return st;
}

static float *rand_floats(int64_t n)
{
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)((double)(pf_test_rand() >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    return p;
}

/* Compares got with ref (tolerance from mag, see the top). Returns failures. */
static int compare(const char *what, const float *got, const double *ref, const double *mag,
                   int64_t n, double tol_scale)
{
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double tol = tol_scale * (1e-4 * (mag ? mag[i] : fabs(ref[i])) + 1e-6);
        double d = fabs((double)got[i] - ref[i]);
        if (!(d <= tol)) {
            if (bad < 5)
                fprintf(stderr, "  %s: [%lld] got %.7g want %.7g (tol %.3g)\n", what,
                        (long long)i, got[i], ref[i], tol);
            bad++;
        }
    }
    if (bad) fprintf(stderr, "  %s: %d of %lld differ\n", what, bad, (long long)n);
    return bad;
}

static void act_ref(double *y, int64_t n, pf_ir_act act, float a, float b)
{
    for (int64_t i = 0; i < n; i++) y[i] = pf_nn_act_scalar((float)y[i], act, a, b);
}

/* ---- conv ---------------------------------------------------------------------- */

typedef struct conv_case {
    int nsp;
    int64_t N, C, H, W, M, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, group;
    int bias;
    pf_ir_act act;
    float act_a, act_b;
} conv_case;

static void conv_out_dims(const conv_case *c, int64_t *oh, int64_t *ow)
{
    *oh = (c->H + c->pt + c->pb - ((c->kh - 1) * c->dh + 1)) / c->sh + 1;
    *ow = (c->W + c->pl + c->pr - ((c->kw - 1) * c->dw + 1)) / c->sw + 1;
}

static void conv_ref(const conv_case *c, const float *x, const float *w, const float *b,
                     double *y, double *mag)
{
    int64_t OH, OW, Cg = c->C / c->group, Mg = c->M / c->group;
    conv_out_dims(c, &OH, &OW);
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t m = 0; m < c->M; m++)
            for (int64_t oy = 0; oy < OH; oy++)
                for (int64_t ox = 0; ox < OW; ox++) {
                    double s = b ? b[m] : 0.0, a = b ? fabs(b[m]) : 0.0;
                    int64_t g = m / Mg;
                    for (int64_t ci = 0; ci < Cg; ci++)
                        for (int64_t ky = 0; ky < c->kh; ky++)
                            for (int64_t kx = 0; kx < c->kw; kx++) {
                                int64_t iy = oy * c->sh - c->pt + ky * c->dh;
                                int64_t ix = ox * c->sw - c->pl + kx * c->dw;
                                if (iy < 0 || iy >= c->H || ix < 0 || ix >= c->W) continue;
                                double t = (double)x[((n * c->C + g * Cg + ci) * c->H + iy) * c->W + ix] *
                                           w[((m * Cg + ci) * c->kh + ky) * c->kw + kx];
                                s += t;
                                a += fabs(t);
                            }
                    int64_t o = ((n * c->M + m) * OH + oy) * OW + ox;
                    y[o] = s;
                    mag[o] = a;
                }
}

static void conv_setup(tnode *t, const conv_case *c, pf_ir_op op)
{
    tn_init(t, op);
    pf_ir_conv_attr *at = &t->n.attr.conv;
    at->nsp = c->nsp;
    int d = c->nsp == 2 ? 1 : 0;
    if (c->nsp == 2) {
        at->kernel[0] = c->kh;
        at->stride[0] = c->sh;
        at->dilation[0] = c->dh;
        at->pad_begin[0] = c->pt;
        at->pad_end[0] = c->pb;
    }
    at->kernel[d] = c->kw;
    at->stride[d] = c->sw;
    at->dilation[d] = c->dw;
    at->pad_begin[d] = c->pl;
    at->pad_end[d] = c->pr;
    at->group = c->group;
    t->n.act = c->act;
    t->n.act_a = c->act_a;
    t->n.act_b = c->act_b;
}

/* Spatial dims of a [N, C, (H,) W] shape. */
static int make_dims(int64_t *d, int nsp, int64_t a, int64_t b, int64_t h, int64_t w)
{
    d[0] = a;
    d[1] = b;
    if (nsp == 2) {
        d[2] = h;
        d[3] = w;
    } else {
        d[2] = w;
    }
    return nsp + 2;
}

static int run_conv_case(const conv_case *c, pf_threadpool *pool)
{
    tnode t;
    conv_setup(&t, c, PF_IR_CONV);
    int64_t OH, OW, xd[4], wd[4], yd[4], bd[1] = {c->M};
    conv_out_dims(c, &OH, &OW);
    int r = make_dims(xd, c->nsp, c->N, c->C, c->H, c->W);
    make_dims(wd, c->nsp, c->M, c->C / c->group, c->kh, c->kw);
    make_dims(yd, c->nsp, c->N, c->M, OH, OW);
    tn_in(&t, tn_value(&t, PF_IR_F32, r, xd));
    tn_in(&t, tn_value(&t, PF_IR_F32, r, wd));
    if (c->bias) tn_in(&t, tn_value(&t, PF_IR_F32, 1, bd));
    tn_out(&t, tn_value(&t, PF_IR_F32, r, yd));
    int64_t ny = numel(yd, r);
    float *x = rand_floats(numel(xd, r)), *w = rand_floats(numel(wd, r)), *b = rand_floats(c->M);
    float *y = malloc((size_t)ny * sizeof *y);
    double *ref = malloc((size_t)ny * sizeof *ref), *mag = malloc((size_t)ny * sizeof *mag);
    conv_ref(c, x, w, c->bias ? b : NULL, ref, mag);
    act_ref(ref, ny, c->act, c->act_a, c->act_b);
    const void *in[3] = {x, w, b};
    void *out[1] = {y};
    pf_status st = tn_run(&t, in, out, pool);
    int bad = st != PF_OK;
    if (bad) fprintf(stderr, "  conv: %s\n", pf_last_error());
    else bad = compare("conv", y, ref, mag, ny, c->act ? 2.0 : 1.0);
    if (bad)
        fprintf(stderr, "  case: %dD N%lld C%lld %lldx%lld M%lld k%lldx%lld s%lld,%lld d%lld,%lld "
                "p%lld,%lld,%lld,%lld g%lld pool %d\n", c->nsp, (long long)c->N,
                (long long)c->C, (long long)c->H, (long long)c->W, (long long)c->M,
                (long long)c->kh, (long long)c->kw, (long long)c->sh, (long long)c->sw,
                (long long)c->dh, (long long)c->dw, (long long)c->pt, (long long)c->pl,
                (long long)c->pb, (long long)c->pr, (long long)c->group, pool != NULL);
    free(x);
    free(w);
    free(b);
    free(y);
    free(ref);
    free(mag);
    return bad;
}

/* nsp N C H W M kh kw sh sw dh dw pt pl pb pr group bias act a b */
static const conv_case conv_cases[] = {
    {2, 1, 8, 7, 7, 16, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, PF_IR_ACT_RELU, 0, 0},
    {2, 1, 5, 9, 11, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, PF_IR_ACT_NONE, 0, 0},
    {2, 1, 4, 13, 10, 6, 3, 3, 2, 2, 1, 1, 1, 0, 2, 1, 1, 0, PF_IR_ACT_NONE, 0, 0},
    {2, 1, 16, 15, 15, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16, 1, PF_IR_ACT_HARD_SWISH, 0, 0},
    {2, 1, 12, 14, 9, 12, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 12, 1, PF_IR_ACT_CLIP, 0, 6},
    {2, 2, 6, 11, 17, 6, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 6, 1, PF_IR_ACT_NONE, 0, 0},
    {2, 1, 5, 12, 12, 5, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 5, 0, PF_IR_ACT_SIGMOID, 0, 0},
    {2, 1, 4, 8, 9, 8, 3, 3, 1, 2, 1, 1, 1, 1, 1, 1, 4, 1, PF_IR_ACT_NONE, 0, 0},
    {2, 1, 3, 1, 1, 3, 3, 3, 1, 1, 1, 1, 4, 4, 4, 4, 3, 1, PF_IR_ACT_NONE, 0, 0},
    {2, 1, 3, 2, 40, 3, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 3, 1, PF_IR_ACT_NONE, 0, 0},
    {2, 1, 6, 10, 9, 4, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 2, 1, PF_IR_ACT_LEAKY_RELU, 0.1f, 0},
    {2, 1, 3, 11, 10, 4, 2, 2, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, PF_IR_ACT_NONE, 0, 0},
    {2, 2, 6, 9, 8, 5, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1, 1, PF_IR_ACT_NONE, 0, 0},
    {2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, PF_IR_ACT_NONE, 0, 0},
    {2, 1, 2, 4, 5, 3, 3, 3, 1, 1, 1, 1, 3, 3, 3, 3, 1, 1, PF_IR_ACT_NONE, 0, 0},
    {2, 1, 4, 3, 3, 2, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 1, 0, PF_IR_ACT_NONE, 0, 0},
    {2, 2, 8, 7, 6, 6, 3, 3, 2, 1, 1, 2, 1, 2, 0, 1, 2, 1, PF_IR_ACT_TANH, 0, 0},
    {2, 1, 32, 80, 80, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, PF_IR_ACT_NONE, 0, 0},
    /* rows too wide for the padded-row ring: the bounds-checked depthwise path */
    {2, 1, 2, 4, 6200, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, PF_IR_ACT_HARD_SWISH, 0, 0},
    {2, 1, 2, 5, 5000, 2, 5, 3, 2, 2, 1, 2, 2, 2, 2, 2, 2, 1, PF_IR_ACT_NONE, 0, 0},
    {2, 1, 64, 9, 9, 8, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 4, 1, PF_IR_ACT_NONE, 0, 0},
    {1, 1, 3, 1, 17, 5, 1, 5, 1, 2, 1, 1, 0, 2, 0, 1, 1, 1, PF_IR_ACT_NONE, 0, 0},
    {1, 2, 4, 1, 9, 4, 1, 3, 1, 1, 1, 2, 0, 2, 0, 2, 4, 1, PF_IR_ACT_RELU, 0, 0},
    {1, 1, 6, 1, 1, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 0, PF_IR_ACT_NONE, 0, 0},
};

static void test_conv_random(void)
{
    for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++) {
        CHECK(run_conv_case(&conv_cases[i], NULL) == 0);
        CHECK(run_conv_case(&conv_cases[i], g_pool) == 0);
    }
}

/* Random geometries: every path, shapes drawn from small ranges. */
static void test_conv_fuzz(void)
{
    for (int it = 0; it < 60; it++) {
        conv_case c;
        memset(&c, 0, sizeof c);
        c.nsp = it % 5 == 0 ? 1 : 2;
        int dw = it % 3 == 0;
        c.group = dw ? pf_test_rand_range(1, 6) : pf_test_rand_range(1, 2);
        c.C = c.group * (dw ? 1 : pf_test_rand_range(1, 4));
        c.M = c.group * pf_test_rand_range(1, 3);
        c.N = pf_test_rand_range(1, 2);
        c.kw = pf_test_rand_range(1, 5);
        c.sw = pf_test_rand_range(1, 3);
        c.dw = pf_test_rand_range(1, 2);
        c.pl = pf_test_rand_range(0, 3);
        c.pr = pf_test_rand_range(0, 3);
        c.W = pf_test_rand_range(1, 19);
        c.H = c.kh = c.sh = c.dh = 1;
        if (c.nsp == 2) {
            c.kh = pf_test_rand_range(1, 5);
            c.sh = pf_test_rand_range(1, 3);
            c.dh = pf_test_rand_range(1, 2);
            c.pt = pf_test_rand_range(0, 3);
            c.pb = pf_test_rand_range(0, 3);
            c.H = pf_test_rand_range(1, 19);
        }
        int64_t oh, ow;
        conv_out_dims(&c, &oh, &ow);
        if (oh < 1 || ow < 1 || c.H + c.pt + c.pb < (c.kh - 1) * c.dh + 1 ||
            c.W + c.pl + c.pr < (c.kw - 1) * c.dw + 1) {
            it--;
            continue;
        }
        c.bias = (int)pf_test_rand_range(0, 1);
        CHECK(run_conv_case(&c, it & 1 ? g_pool : NULL) == 0);
    }
}

static void test_conv_errors(void)
{
    conv_case c = {2, 1, 4, 5, 5, 4, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, PF_IR_ACT_NONE, 0, 0};
    tnode t;
    conv_setup(&t, &c, PF_IR_CONV);
    int64_t xd[4] = {1, 4, 5, 5}, wd[4] = {4, 4, 3, 3}, yd[4] = {1, 4, 5, 5}; /* wrong: 3x3 */
    tn_in(&t, tn_value(&t, PF_IR_F32, 4, xd));
    tn_in(&t, tn_value(&t, PF_IR_F32, 4, wd));
    tn_out(&t, tn_value(&t, PF_IR_F32, 4, yd));
    float x[100] = {0}, w[144] = {0}, y[100];
    const void *in[2] = {x, w};
    void *out[1] = {y};
    CHECK(tn_run(&t, in, out, NULL) != PF_OK);
    t.v[2].dims[2] = t.v[2].dims[3] = 3;
    t.v[1].dims[1] = 3; /* channels do not match the group */
    CHECK(tn_run(&t, in, out, NULL) != PF_OK);
    t.v[1].dims[1] = 4;
    t.v[0].dtype = PF_IR_F16;
    CHECK(tn_run(&t, in, out, NULL) == PF_ERR_UNSUPPORTED);
    t.v[0].dtype = PF_IR_F32;
    CHECK_OK(tn_run(&t, in, out, NULL));
}

/* ---- conv transpose -------------------------------------------------------- */

typedef struct ct_case {
    int nsp;
    int64_t N, C, H, W, M, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, oph, opw, group;
    int bias;
    pf_ir_act act;
} ct_case;

static void ct_out_dims(const ct_case *c, int64_t *oh, int64_t *ow)
{
    *oh = c->sh * (c->H - 1) + c->oph + (c->kh - 1) * c->dh + 1 - c->pt - c->pb;
    *ow = c->sw * (c->W - 1) + c->opw + (c->kw - 1) * c->dw + 1 - c->pl - c->pr;
}

static int run_ct_case(const ct_case *c, pf_threadpool *pool)
{
    tnode t;
    tn_init(&t, PF_IR_CONV_TRANSPOSE);
    pf_ir_conv_attr *at = &t.n.attr.conv;
    at->nsp = c->nsp;
    int d = c->nsp == 2;
    if (c->nsp == 2) {
        at->kernel[0] = c->kh;
        at->stride[0] = c->sh;
        at->dilation[0] = c->dh;
        at->pad_begin[0] = c->pt;
        at->pad_end[0] = c->pb;
        at->output_padding[0] = c->oph;
    }
    at->kernel[d] = c->kw;
    at->stride[d] = c->sw;
    at->dilation[d] = c->dw;
    at->pad_begin[d] = c->pl;
    at->pad_end[d] = c->pr;
    at->output_padding[d] = c->opw;
    at->group = c->group;
    t.n.act = c->act;
    int64_t OH, OW, Cg = c->C / c->group, Mg = c->M / c->group;
    ct_out_dims(c, &OH, &OW);
    int64_t xd[4], wd[4], yd[4], bd[1] = {c->M};
    int r = make_dims(xd, c->nsp, c->N, c->C, c->H, c->W);
    make_dims(wd, c->nsp, c->C, Mg, c->kh, c->kw);
    make_dims(yd, c->nsp, c->N, c->M, OH, OW);
    tn_in(&t, tn_value(&t, PF_IR_F32, r, xd));
    tn_in(&t, tn_value(&t, PF_IR_F32, r, wd));
    if (c->bias) tn_in(&t, tn_value(&t, PF_IR_F32, 1, bd));
    tn_out(&t, tn_value(&t, PF_IR_F32, r, yd));
    int64_t ny = numel(yd, r);
    float *x = rand_floats(numel(xd, r)), *w = rand_floats(numel(wd, r)), *b = rand_floats(c->M);
    float *y = malloc((size_t)ny * sizeof *y);
    double *ref = calloc((size_t)ny, sizeof *ref), *mag = calloc((size_t)ny, sizeof *mag);
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t m = 0; m < c->M; m++)
            for (int64_t i = 0; i < OH * OW; i++) {
                ref[(n * c->M + m) * OH * OW + i] = c->bias ? b[m] : 0.0;
                mag[(n * c->M + m) * OH * OW + i] = c->bias ? fabs(b[m]) : 0.0;
            }
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t ci = 0; ci < c->C; ci++)
            for (int64_t iy = 0; iy < c->H; iy++)
                for (int64_t ix = 0; ix < c->W; ix++)
                    for (int64_t m = 0; m < Mg; m++)
                        for (int64_t ky = 0; ky < c->kh; ky++)
                            for (int64_t kx = 0; kx < c->kw; kx++) {
                                int64_t oy = iy * c->sh - c->pt + ky * c->dh;
                                int64_t ox = ix * c->sw - c->pl + kx * c->dw;
                                if (oy < 0 || oy >= OH || ox < 0 || ox >= OW) continue;
                                int64_t mo = ci / Cg * Mg + m;
                                double tv = (double)x[((n * c->C + ci) * c->H + iy) * c->W + ix] *
                                            w[((ci * Mg + m) * c->kh + ky) * c->kw + kx];
                                int64_t o = ((n * c->M + mo) * OH + oy) * OW + ox;
                                ref[o] += tv;
                                mag[o] += fabs(tv);
                            }
    act_ref(ref, ny, c->act, 0, 0);
    const void *in[3] = {x, w, b};
    void *out[1] = {y};
    pf_status st = tn_run(&t, in, out, pool);
    int bad = st != PF_OK;
    if (bad) fprintf(stderr, "  convT: %s\n", pf_last_error());
    else bad = compare("convT", y, ref, mag, ny, c->act ? 2.0 : 1.0);
    free(x);
    free(w);
    free(b);
    free(y);
    free(ref);
    free(mag);
    return bad;
}

/* nsp N C H W M kh kw sh sw dh dw pt pl pb pr oph opw group bias act */
static const ct_case ct_cases[] = {
    {2, 1, 4, 5, 6, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, PF_IR_ACT_NONE},
    {2, 1, 4, 4, 5, 6, 3, 2, 3, 2, 2, 2, 1, 2, 0, 1, 0, 0, 2, 1, PF_IR_ACT_RELU},
    {2, 2, 6, 5, 7, 4, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, PF_IR_ACT_SIGMOID},
    {2, 2, 3, 3, 4, 2, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, PF_IR_ACT_NONE},
    {2, 1, 2, 1, 1, 3, 4, 4, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, PF_IR_ACT_NONE},
    {2, 1, 6, 3, 3, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 6, 1, PF_IR_ACT_NONE},
    {2, 1, 3, 3, 3, 2, 3, 3, 3, 2, 1, 1, 0, 0, -1, 0, 0, 0, 1, 0, PF_IR_ACT_NONE},
    {2, 1, 2, 2, 2, 2, 2, 2, 5, 5, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, PF_IR_ACT_NONE},
    {2, 1, 16, 40, 40, 8, 4, 4, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, PF_IR_ACT_NONE},
    {1, 1, 3, 1, 9, 2, 1, 4, 1, 2, 1, 1, 0, 1, 0, 1, 0, 1, 1, 1, PF_IR_ACT_NONE},
    {1, 2, 4, 1, 5, 4, 1, 3, 1, 3, 1, 2, 0, 0, 0, 2, 0, 0, 2, 0, PF_IR_ACT_NONE},
};

static void test_conv_transpose(void)
{
    for (size_t i = 0; i < sizeof ct_cases / sizeof ct_cases[0]; i++) {
        CHECK(run_ct_case(&ct_cases[i], NULL) == 0);
        CHECK(run_ct_case(&ct_cases[i], g_pool) == 0);
    }
}

/* ---- gemm / matmul --------------------------------------------------------------- */

static int run_gemm(int64_t M, int64_t N, int64_t K, int ta, int tb, float alpha, float beta,
                    int cnd, int64_t cm, int64_t cn, pf_ir_act act)
{
    tnode t;
    tn_init(&t, PF_IR_GEMM);
    t.n.attr.gemm = (pf_ir_gemm_attr){alpha, beta, ta != 0, tb != 0};
    t.n.act = act;
    int64_t ad[2] = {ta ? K : M, ta ? M : K}, bd[2] = {tb ? N : K, tb ? K : N}, yd[2] = {M, N};
    int64_t cd[2];
    if (cnd == 2) {
        cd[0] = cm;
        cd[1] = cn;
    } else {
        cd[0] = cn;
    }
    tn_in(&t, tn_value(&t, PF_IR_F32, 2, ad));
    tn_in(&t, tn_value(&t, PF_IR_F32, 2, bd));
    if (cnd >= 0) tn_in(&t, tn_value(&t, PF_IR_F32, cnd, cd));
    tn_out(&t, tn_value(&t, PF_IR_F32, 2, yd));
    float *A = rand_floats(M * K), *B = rand_floats(K * N), *C = rand_floats(M * N);
    float *y = malloc((size_t)(M * N + 1) * sizeof *y);
    double *ref = malloc((size_t)(M * N + 1) * sizeof *ref), *mag = malloc((size_t)(M * N + 1) * sizeof *mag);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0, a = 0;
            for (int64_t k = 0; k < K; k++) {
                double tv = (double)(ta ? A[k * M + i] : A[i * K + k]) *
                            (tb ? B[j * K + k] : B[k * N + j]);
                s += tv;
                a += fabs(tv);
            }
            s *= alpha;
            a *= fabs(alpha);
            if (cnd >= 0) {
                double cv = C[(cnd == 2 && cm > 1 ? i : 0) * (cnd >= 1 ? cn : 1) +
                              (cnd >= 1 && cn > 1 ? j : 0)];
                s += beta * cv;
                a += fabs(beta * cv);
            }
            ref[i * N + j] = s;
            mag[i * N + j] = a;
        }
    act_ref(ref, M * N, act, 0, 0);
    const void *in[3] = {A, B, C};
    void *out[1] = {y};
    pf_status st = tn_run(&t, in, out, g_pool);
    int bad = st != PF_OK;
    if (bad) fprintf(stderr, "  gemm: %s\n", pf_last_error());
    else bad = compare("gemm", y, ref, mag, M * N, act ? 2.0 : 1.0);
    free(A);
    free(B);
    free(C);
    free(y);
    free(ref);
    free(mag);
    return bad;
}

static void test_gemm(void)
{
    CHECK(run_gemm(7, 5, 9, 0, 0, 1.0f, 1.0f, -1, 0, 0, PF_IR_ACT_NONE) == 0);
    CHECK(run_gemm(7, 5, 9, 1, 0, 0.5f, 2.0f, 1, 1, 5, PF_IR_ACT_NONE) == 0);
    CHECK(run_gemm(7, 5, 9, 0, 1, 1.0f, 1.0f, 2, 7, 1, PF_IR_ACT_RELU) == 0);
    CHECK(run_gemm(7, 5, 9, 1, 1, -1.5f, 0.25f, 2, 1, 5, PF_IR_ACT_NONE) == 0);
    CHECK(run_gemm(7, 5, 9, 0, 1, 1.0f, 1.0f, 2, 7, 5, PF_IR_ACT_NONE) == 0);
    CHECK(run_gemm(7, 5, 9, 0, 0, 1.0f, 3.0f, 0, 1, 1, PF_IR_ACT_NONE) == 0);
    CHECK(run_gemm(1, 1, 1, 0, 0, 1.0f, 1.0f, 1, 1, 1, PF_IR_ACT_NONE) == 0);
    CHECK(run_gemm(1, 1000, 1280, 0, 1, 1.0f, 1.0f, 1, 1, 1000, PF_IR_ACT_NONE) == 0);
    CHECK(run_gemm(130, 70, 300, 1, 1, 1.0f, 0.0f, 2, 130, 70, PF_IR_ACT_NONE) == 0);
    /* K mismatch is an error, not a crash */
    tnode t;
    tn_init(&t, PF_IR_GEMM);
    t.n.attr.gemm = (pf_ir_gemm_attr){1, 1, false, false};
    int64_t ad[2] = {2, 3}, bd[2] = {4, 2}, yd[2] = {2, 2};
    tn_in(&t, tn_value(&t, PF_IR_F32, 2, ad));
    tn_in(&t, tn_value(&t, PF_IR_F32, 2, bd));
    tn_out(&t, tn_value(&t, PF_IR_F32, 2, yd));
    float a[8] = {0}, b[8] = {0}, y[4];
    const void *in[2] = {a, b};
    void *out[1] = {y};
    CHECK(tn_run(&t, in, out, NULL) == PF_ERR_FORMAT);
}

static int run_matmul(int ra, const int64_t *ad, int rb, const int64_t *bd, int ry,
                      const int64_t *yd, pf_ir_act act)
{
    tnode t;
    tn_init(&t, PF_IR_MATMUL);
    t.n.act = act;
    tn_in(&t, tn_value(&t, PF_IR_F32, ra, ad));
    tn_in(&t, tn_value(&t, PF_IR_F32, rb, bd));
    tn_out(&t, tn_value(&t, PF_IR_F32, ry, yd));
    int64_t na = numel(ad, ra), nb = numel(bd, rb), ny = numel(yd, ry);
    float *A = rand_floats(na), *B = rand_floats(nb), *y = malloc((size_t)ny * sizeof *y);
    double *ref = malloc((size_t)ny * sizeof *ref), *mag = malloc((size_t)ny * sizeof *mag);
    /* promote to rank-8 broadcast form */
    int64_t A8[8], B8[8], Y8[8];
    int64_t M = ra >= 2 ? ad[ra - 2] : 1, K = ad[ra - 1], N = rb >= 2 ? bd[rb - 1] : 1;
    int nba = ra > 2 ? ra - 2 : 0, nbb = rb > 2 ? rb - 2 : 0;
    for (int i = 0; i < 6; i++) {
        int ia = i - (6 - nba), ib = i - (6 - nbb);
        A8[i] = ia >= 0 ? ad[ia] : 1;
        B8[i] = ib >= 0 ? bd[ib] : 1;
        Y8[i] = A8[i] > B8[i] ? A8[i] : B8[i];
    }
    int64_t batch = numel(Y8, 6);
    for (int64_t bt = 0; bt < batch; bt++) {
        int64_t idx[6], rem = bt, oa = 0, ob = 0;
        for (int i = 5; i >= 0; i--) {
            idx[i] = rem % Y8[i];
            rem /= Y8[i];
        }
        for (int i = 0; i < 6; i++) {
            oa = oa * A8[i] + (A8[i] == 1 ? 0 : idx[i]);
            ob = ob * B8[i] + (B8[i] == 1 ? 0 : idx[i]);
        }
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0, a = 0;
                for (int64_t k = 0; k < K; k++) {
                    double tv = (double)A[oa * M * K + i * K + k] * B[ob * K * N + k * N + j];
                    s += tv;
                    a += fabs(tv);
                }
                ref[(bt * M + i) * N + j] = s;
                mag[(bt * M + i) * N + j] = a;
            }
    }
    act_ref(ref, ny, act, 0, 0);
    const void *in[2] = {A, B};
    void *out[1] = {y};
    pf_status st = tn_run(&t, in, out, g_pool);
    int bad = st != PF_OK;
    if (bad) fprintf(stderr, "  matmul: %s\n", pf_last_error());
    else bad = compare("matmul", y, ref, mag, ny, act ? 2.0 : 1.0);
    free(A);
    free(B);
    free(y);
    free(ref);
    free(mag);
    return bad;
}

static void test_matmul(void)
{
    { int64_t a[] = {2, 3, 5, 4}, b[] = {4, 6}, y[] = {2, 3, 5, 6};
      CHECK(run_matmul(4, a, 2, b, 4, y, PF_IR_ACT_RELU) == 0); }
    { int64_t a[] = {5}, b[] = {3, 5, 2}, y[] = {3, 2};
      CHECK(run_matmul(1, a, 3, b, 2, y, PF_IR_ACT_NONE) == 0); }
    { int64_t a[] = {2, 1, 3, 4}, b[] = {1, 5, 4, 2}, y[] = {2, 5, 3, 2};
      CHECK(run_matmul(4, a, 4, b, 4, y, PF_IR_ACT_NONE) == 0); }
    { int64_t a[] = {4}, b[] = {4}, y[] = {1};
      CHECK(run_matmul(1, a, 1, b, 0, y, PF_IR_ACT_NONE) == 0); }
    { int64_t a[] = {3, 4}, b[] = {4}, y[] = {3};
      CHECK(run_matmul(2, a, 1, b, 1, y, PF_IR_ACT_NONE) == 0); }
    { int64_t a[] = {3, 7, 4}, b[] = {3, 4, 5}, y[] = {3, 7, 5};
      CHECK(run_matmul(3, a, 3, b, 3, y, PF_IR_ACT_NONE) == 0); }
    { int64_t a[] = {7, 4}, b[] = {2, 3, 4, 5}, y[] = {2, 3, 7, 5};
      CHECK(run_matmul(2, a, 4, b, 4, y, PF_IR_ACT_NONE) == 0); }
    { int64_t a[] = {2, 3, 4}, b[] = {4, 5}, y[] = {2, 3, 6}; /* wrong output */
      CHECK(run_matmul(3, a, 2, b, 3, y, PF_IR_ACT_NONE) != 0); }
}

/* sgemm directly: all transposes, padded leading dimensions, beta. */
static int check_sgemm(void)
{
    int bad = 0;
    const int M = 37, N = 29, K = 53, pad = 3;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
            float *A = rand_floats((int64_t)lda * (ta ? K : M));
            float *B = rand_floats((int64_t)ldb * (tb ? N : K));
            float *C = rand_floats((int64_t)ldc * M);
            double *ref = malloc((size_t)(M * N) * sizeof *ref), *mag = malloc((size_t)(M * N) * sizeof *mag);
            float *got = malloc((size_t)(M * N) * sizeof *got);
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    double s = 0.5 * C[i * ldc + j], a = fabs(s);
                    for (int k = 0; k < K; k++) {
                        double tv = 1.5 * (ta ? A[k * lda + i] : A[i * lda + k]) *
                                    (tb ? B[j * ldb + k] : B[k * ldb + j]);
                        s += tv;
                        a += fabs(tv);
                    }
                    ref[i * N + j] = s;
                    mag[i * N + j] = a;
                }
            float keep = C[N]; /* a padding element: must stay */
            pf_nn_sgemm(ta, tb, M, N, K, 1.5f, A, lda, B, ldb, 0.5f, C, ldc);
            bad += C[N] != keep;
            for (int i = 0; i < M; i++) memcpy(got + i * N, C + i * ldc, (size_t)N * sizeof *got);
            bad += compare("sgemm", got, ref, mag, M * N, 1.0);
            free(A);
            free(B);
            free(C);
            free(ref);
            free(mag);
            free(got);
        }
    return bad;
}

static void test_sgemm(void)
{
    printf("  blas: %s\n", pf_nn_blas_name());
    CHECK(check_sgemm() == 0);
}

/* The built-in loops, in a child process (the choice is made once per
 * process): sgemm, and convs through them. */
static void test_sgemm_builtin(void)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        setenv("PF_NN_BLAS", "builtin", 1);
        int bad = strcmp(pf_nn_blas_name(), "built-in loops") != 0;
        bad += check_sgemm();
        for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++)
            bad += run_conv_case(&conv_cases[i], NULL);
        bad += run_ct_case(&ct_cases[1], NULL);
        fflush(stderr);
        _exit(bad ? 1 : 0);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- pooling ------------------------------------------------------------------- */

typedef struct pool_case {
    pf_ir_op op;
    int nsp;
    int64_t N, C, H, W, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
    bool ceil_mode, include_pad;
} pool_case;

static int64_t pool_len(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pa, int64_t pb,
                        bool ceil_mode)
{
    int64_t span = in + pa + pb - ((k - 1) * d + 1);
    int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    /* the last window must start inside the input or the begin pad */
    if (ceil_mode && (o - 1) * s >= in + pa) o--;
    return o;
}

static int run_pool_case(const pool_case *c, pf_ir_dtype dt, pf_threadpool *pool, bool indices)
{
    tnode t;
    tn_init(&t, c->op);
    pf_ir_pool_attr *at = &t.n.attr.pool;
    at->nsp = c->nsp;
    int d = c->nsp == 2;
    if (c->nsp == 2) {
        at->kernel[0] = c->kh;
        at->stride[0] = c->sh;
        at->dilation[0] = c->dh;
        at->pad_begin[0] = c->pt;
        at->pad_end[0] = c->pb;
    }
    at->kernel[d] = c->kw;
    at->stride[d] = c->sw;
    at->dilation[d] = c->dw;
    at->pad_begin[d] = c->pl;
    at->pad_end[d] = c->pr;
    at->ceil_mode = c->ceil_mode;
    at->count_include_pad = c->include_pad;
    bool global = c->op == PF_IR_GLOBAL_AVGPOOL || c->op == PF_IR_GLOBAL_MAXPOOL;
    int64_t OH = 1, OW = 1;
    if (!global) {
        if (c->nsp == 2) OH = pool_len(c->H, c->kh, c->sh, c->dh, c->pt, c->pb, c->ceil_mode);
        OW = pool_len(c->W, c->kw, c->sw, c->dw, c->pl, c->pr, c->ceil_mode);
    }
    int64_t xd[4], yd[4];
    int r = make_dims(xd, c->nsp, c->N, c->C, c->H, c->W);
    make_dims(yd, c->nsp, c->N, c->C, OH, OW);
    tn_in(&t, tn_value(&t, dt, r, xd));
    tn_out(&t, tn_value(&t, dt, r, yd));
    if (indices) tn_out(&t, tn_value(&t, PF_IR_I64, r, yd));
    int64_t nx = numel(xd, r), ny = numel(yd, r);
    float *xf = rand_floats(nx);
    uint8_t *xu = malloc((size_t)nx);
    for (int64_t i = 0; i < nx; i++) xu[i] = (uint8_t)pf_test_rand();
    double *ref = malloc((size_t)ny * sizeof *ref);
    int64_t *iref = malloc((size_t)ny * sizeof *iref);
    int64_t H = c->nsp == 2 ? c->H : 1, kh = c->nsp == 2 ? c->kh : 1, sh = c->nsp == 2 ? c->sh : 1;
    int64_t dh = c->nsp == 2 ? c->dh : 1, pt = c->nsp == 2 ? c->pt : 0, pb = c->nsp == 2 ? c->pb : 0;
    for (int64_t p = 0; p < c->N * c->C; p++)
        for (int64_t oy = 0; oy < OH; oy++)
            for (int64_t ox = 0; ox < OW; ox++) {
                double best = -INFINITY, sum = 0;
                int64_t cnt = 0, cnt_pad = 0, arg = -1;
                int64_t kyn = global ? H : kh, kxn = global ? c->W : c->kw;
                for (int64_t ky = 0; ky < kyn; ky++)
                    for (int64_t kx = 0; kx < kxn; kx++) {
                        int64_t iy = global ? ky : oy * sh - pt + ky * dh;
                        int64_t ix = global ? kx : ox * c->sw - c->pl + kx * c->dw;
                        if (iy >= -pt && iy < H + pb && ix >= -c->pl && ix < c->W + c->pr)
                            cnt_pad++;
                        if (iy < 0 || iy >= H || ix < 0 || ix >= c->W) continue;
                        int64_t e = (p * H + iy) * c->W + ix;
                        double v = dt == PF_IR_U8 ? xu[e] : xf[e];
                        if (v > best) {
                            best = v;
                            arg = e;
                        }
                        sum += v;
                        cnt++;
                    }
                int64_t o = (p * OH + oy) * OW + ox;
                iref[o] = arg;
                if (c->op == PF_IR_MAXPOOL || c->op == PF_IR_GLOBAL_MAXPOOL) ref[o] = best;
                else ref[o] = sum / (double)(c->include_pad ? cnt_pad : cnt);
            }
    float *y = malloc((size_t)ny * sizeof *y);
    uint8_t *yu = malloc((size_t)ny);
    int64_t *yi = malloc((size_t)ny * sizeof *yi);
    const void *in[1] = {dt == PF_IR_U8 ? (const void *)xu : xf};
    void *out[2] = {dt == PF_IR_U8 ? (void *)yu : y, yi};
    pf_status st = tn_run(&t, in, out, pool);
    int bad = st != PF_OK;
    if (bad) fprintf(stderr, "  pool: %s\n", pf_last_error());
    for (int64_t i = 0; !bad && i < ny; i++) {
        double g = dt == PF_IR_U8 ? yu[i] : y[i];
        if (fabs(g - ref[i]) > 1e-5 + 1e-5 * fabs(ref[i]) || (indices && yi[i] != iref[i])) {
            fprintf(stderr, "  pool op %d: [%lld] got %g want %g (index %lld vs %lld)\n",
                    (int)c->op, (long long)i, g, ref[i], indices ? (long long)yi[i] : 0LL,
                    (long long)iref[i]);
            bad = 1;
        }
    }
    free(xf);
    free(xu);
    free(ref);
    free(iref);
    free(y);
    free(yu);
    free(yi);
    return bad;
}

static const pool_case pool_cases[] = {
    /* op nsp N C H W kh kw sh sw dh dw pt pl pb pr ceil incl */
    {PF_IR_MAXPOOL, 2, 1, 3, 9, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, false},
    {PF_IR_MAXPOOL, 2, 2, 2, 10, 7, 3, 2, 2, 3, 1, 1, 0, 1, 0, 1, true, false},
    {PF_IR_MAXPOOL, 2, 1, 2, 9, 9, 2, 3, 1, 2, 2, 2, 1, 2, 1, 2, false, false},
    {PF_IR_MAXPOOL, 2, 1, 1, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false},
    {PF_IR_MAXPOOL, 1, 2, 3, 1, 13, 1, 3, 1, 2, 1, 1, 0, 1, 0, 1, true, false},
    {PF_IR_AVGPOOL, 2, 1, 3, 9, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, false},
    {PF_IR_AVGPOOL, 2, 1, 3, 9, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, true},
    {PF_IR_AVGPOOL, 2, 1, 2, 10, 11, 3, 3, 2, 2, 1, 1, 1, 0, 2, 1, true, true},
    {PF_IR_AVGPOOL, 2, 1, 2, 7, 7, 2, 2, 3, 3, 1, 1, 0, 0, 0, 0, false, false},
    {PF_IR_AVGPOOL, 1, 1, 2, 1, 11, 1, 4, 1, 3, 1, 1, 0, 2, 0, 2, true, true},
    {PF_IR_GLOBAL_AVGPOOL, 2, 2, 5, 7, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, false, false},
    {PF_IR_GLOBAL_MAXPOOL, 2, 2, 5, 7, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, false, false},
    {PF_IR_GLOBAL_AVGPOOL, 1, 1, 4, 1, 13, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, false, false},
};

static void test_pool(void)
{
    for (size_t i = 0; i < sizeof pool_cases / sizeof pool_cases[0]; i++) {
        CHECK(run_pool_case(&pool_cases[i], PF_IR_F32, NULL, false) == 0);
        CHECK(run_pool_case(&pool_cases[i], PF_IR_F32, g_pool, false) == 0);
    }
    CHECK(run_pool_case(&pool_cases[0], PF_IR_F32, g_pool, true) == 0);
    CHECK(run_pool_case(&pool_cases[2], PF_IR_F32, NULL, true) == 0);
    CHECK(run_pool_case(&pool_cases[1], PF_IR_U8, g_pool, false) == 0);
}

/* ---- batchnorm ------------------------------------------------------------------- */

static int run_bn(int rank, const int64_t *dims, pf_ir_act act)
{
    tnode t;
    tn_init(&t, PF_IR_BATCHNORM);
    t.n.attr.bn.epsilon = 1e-3f;
    t.n.act = act;
    int64_t C = dims[1], cd[1] = {C};
    tn_in(&t, tn_value(&t, PF_IR_F32, rank, dims));
    for (int i = 0; i < 4; i++) tn_in(&t, tn_value(&t, PF_IR_F32, 1, cd));
    tn_out(&t, tn_value(&t, PF_IR_F32, rank, dims));
    int64_t n = numel(dims, rank), inner = n / (dims[0] * C);
    float *x = rand_floats(n), *sc = rand_floats(C), *bi = rand_floats(C), *mu = rand_floats(C);
    float *var = rand_floats(C), *y = malloc((size_t)n * sizeof *y);
    for (int64_t c = 0; c < C; c++) var[c] = fabsf(var[c]) + 0.01f;
    double *ref = malloc((size_t)n * sizeof *ref);
    for (int64_t i = 0; i < n; i++) {
        int64_t c = i / inner % C;
        ref[i] = ((double)x[i] - mu[c]) / sqrt((double)var[c] + (double)1e-3f) * sc[c] + bi[c];
    }
    act_ref(ref, n, act, 0, 0);
    const void *in[5] = {x, sc, bi, mu, var};
    void *out[1] = {y};
    pf_status st = tn_run(&t, in, out, g_pool);
    int bad = st != PF_OK;
    if (bad) fprintf(stderr, "  bn: %s\n", pf_last_error());
    else bad = compare("bn", y, ref, NULL, n, 10.0);
    free(x);
    free(sc);
    free(bi);
    free(mu);
    free(var);
    free(y);
    free(ref);
    return bad;
}

static void test_batchnorm(void)
{
    { int64_t d[] = {3, 5}; CHECK(run_bn(2, d, PF_IR_ACT_NONE) == 0); }
    { int64_t d[] = {2, 4, 9}; CHECK(run_bn(3, d, PF_IR_ACT_RELU) == 0); }
    { int64_t d[] = {2, 3, 5, 7}; CHECK(run_bn(4, d, PF_IR_ACT_HARD_SWISH) == 0); }
    { int64_t d[] = {1, 2, 3, 4, 5}; CHECK(run_bn(5, d, PF_IR_ACT_NONE) == 0); }
}

/* ---- resize ------------------------------------------------------------------------ */

/* The ONNX reference implementation's per-axis rule, written out directly:
 * x_ori from the coordinate mode with output length scale * in, then the two
 * neighbours (edge-padded) and their coefficients. */
static void ref_axis(const pf_ir_resize_attr *at, int d, int64_t xo, int64_t in_len,
                     int64_t idx[2], double cf[2])
{
    double s = at->scale[d], olen = s * (double)in_len, x;
    switch (at->coord) {
    case PF_IR_COORD_ALIGN_CORNERS:
        x = olen == 1.0 ? 0.0 : (double)xo * (double)(in_len - 1) / (olen - 1.0);
        break;
    case PF_IR_COORD_ASYMMETRIC: x = (double)xo / s; break;
    case PF_IR_COORD_PYTORCH_HALF_PIXEL:
        x = olen == 1.0 ? -0.5 : ((double)xo + 0.5) / s - 0.5;
        break;
    case PF_IR_COORD_TF_HALF_PIXEL_FOR_NN: x = ((double)xo + 0.5) / s; break;
    default: x = ((double)xo + 0.5) / s - 0.5; break;
    }
    double f = floor(x);
    double ratio = x == f ? 1.0 : x - f;
    int64_t i0 = x == f ? (int64_t)f - 1 : (int64_t)f;
    idx[0] = i0 < 0 ? 0 : (i0 >= in_len ? in_len - 1 : i0);
    idx[1] = i0 + 1 < 0 ? 0 : (i0 + 1 >= in_len ? in_len - 1 : i0 + 1);
    if (at->mode == PF_IR_RESIZE_LINEAR) {
        cf[0] = 1.0 - ratio;
        cf[1] = ratio;
        return;
    }
    bool second;
    if (ratio == 1.0) second = true;
    else if (at->nearest == PF_IR_NEAREST_ROUND_PREFER_FLOOR) second = ratio > 0.5;
    else if (at->nearest == PF_IR_NEAREST_ROUND_PREFER_CEIL) second = ratio >= 0.5;
    else if (at->nearest == PF_IR_NEAREST_FLOOR) second = false;
    else second = true;
    cf[0] = second ? 0.0 : 1.0;
    cf[1] = second ? 1.0 : 0.0;
}

static void ref_resize(const pf_ir_resize_attr *at, int r, const int64_t *id, const int64_t *od,
                       const float *x, double *y)
{
    int64_t ny = numel(od, r);
    for (int64_t o = 0; o < ny; o++) {
        int64_t idx[PF_IR_MAX_RANK][2], rem = o;
        double cf[PF_IR_MAX_RANK][2];
        for (int d = r - 1; d >= 0; d--) {
            int64_t xo = rem % od[d];
            rem /= od[d];
            /* ir.h: linear leaves unscaled axes alone. The ONNX reference
             * maps them too, which is the identity for every mode except
             * tf_half_pixel_for_nn (x + 0.5: a nearest-only mode in practice) */
            if (at->mode == PF_IR_RESIZE_LINEAR && at->scale[d] == 1.0 && od[d] == id[d]) {
                idx[d][0] = idx[d][1] = xo;
                cf[d][0] = 1.0;
                cf[d][1] = 0.0;
                continue;
            }
            ref_axis(at, d, xo, id[d], idx[d], cf[d]);
        }
        double s = 0;
        for (int c = 0; c < (1 << r); c++) {
            double w = 1;
            int64_t off = 0;
            for (int d = 0; d < r; d++) {
                int b = c >> (r - 1 - d) & 1;
                w *= cf[d][b];
                off = off * id[d] + idx[d][b];
            }
            if (w != 0.0) s += w * x[off];
        }
        y[o] = s;
    }
}

static int run_resize(pf_ir_resize_mode mode, pf_ir_coord_mode coord, pf_ir_nearest_mode nm,
                      int r, const int64_t *id, const int64_t *od, const double *scale,
                      pf_ir_dtype dt, pf_threadpool *pool)
{
    tnode t;
    tn_init(&t, PF_IR_RESIZE);
    pf_ir_resize_attr *at = &t.n.attr.resize;
    at->mode = mode;
    at->coord = coord;
    at->nearest = nm;
    at->n = r;
    for (int d = 0; d < r; d++)
        at->scale[d] = scale ? scale[d] : (double)od[d] / (double)id[d];
    tn_in(&t, tn_value(&t, dt, r, id));
    tn_out(&t, tn_value(&t, dt, r, od));
    int64_t nx = numel(id, r), ny = numel(od, r);
    float *x = rand_floats(nx), *y = malloc((size_t)ny * sizeof *y);
    uint8_t *xu = malloc((size_t)nx), *yu = malloc((size_t)ny);
    for (int64_t i = 0; i < nx; i++) {
        xu[i] = (uint8_t)pf_test_rand();
        if (dt == PF_IR_U8) x[i] = xu[i];
    }
    double *ref = malloc((size_t)ny * sizeof *ref);
    ref_resize(at, r, id, od, x, ref);
    const void *in[1] = {dt == PF_IR_U8 ? (const void *)xu : x};
    void *out[1] = {dt == PF_IR_U8 ? (void *)yu : y};
    pf_status st = tn_run(&t, in, out, pool);
    int bad = st != PF_OK;
    if (bad) fprintf(stderr, "  resize: %s\n", pf_last_error());
    if (!bad && dt == PF_IR_U8)
        for (int64_t i = 0; i < ny; i++) y[i] = yu[i];
    if (!bad) bad = compare("resize", y, ref, NULL, ny, 10.0);
    if (bad) fprintf(stderr, "  resize mode %d coord %d nearest %d rank %d\n", (int)mode,
                     (int)coord, (int)nm, r);
    free(x);
    free(y);
    free(xu);
    free(yu);
    free(ref);
    return bad;
}

static void test_resize(void)
{
    int64_t i4[] = {1, 3, 7, 9}, up[] = {1, 3, 14, 18}, dn[] = {1, 3, 4, 3}, o1[] = {1, 3, 1, 5};
    double s_up[] = {1, 1, 2, 2}, s_06[] = {1, 1, 0.6, 0.6}, s_frac[] = {1, 1, 1.1, 1.3};
    int64_t f_out[] = {1, 3, 7, 11};
    for (int c = 0; c <= PF_IR_COORD_TF_HALF_PIXEL_FOR_NN; c++) {
        pf_threadpool *p = c & 1 ? g_pool : NULL;
        CHECK(run_resize(PF_IR_RESIZE_LINEAR, c, 0, 4, i4, up, s_up, PF_IR_F32, p) == 0);
        CHECK(run_resize(PF_IR_RESIZE_LINEAR, c, 0, 4, i4, dn, NULL, PF_IR_F32, p) == 0);
        CHECK(run_resize(PF_IR_RESIZE_LINEAR, c, 0, 4, i4, o1, NULL, PF_IR_F32, p) == 0);
        int64_t o06[] = {1, 3, 4, 5};
        CHECK(run_resize(PF_IR_RESIZE_LINEAR, c, 0, 4, i4, o06, s_06, PF_IR_F32, p) == 0);
        CHECK(run_resize(PF_IR_RESIZE_LINEAR, c, 0, 4, i4, f_out, s_frac, PF_IR_F32, p) == 0);
        for (int nm = 0; nm <= PF_IR_NEAREST_CEIL; nm++) {
            CHECK(run_resize(PF_IR_RESIZE_NEAREST, c, nm, 4, i4, up, s_up, PF_IR_F32, p) == 0);
            CHECK(run_resize(PF_IR_RESIZE_NEAREST, c, nm, 4, i4, dn, NULL, PF_IR_F32, p) == 0);
            CHECK(run_resize(PF_IR_RESIZE_NEAREST, c, nm, 4, i4, o06, s_06, PF_IR_F32, p) == 0);
        }
    }
    /* every axis interpolated (rank 3), rank 1, rank 5, u8 nearest, wide rows */
    { int64_t a[] = {2, 5, 7}, b[] = {3, 9, 4};
      CHECK(run_resize(PF_IR_RESIZE_LINEAR, PF_IR_COORD_HALF_PIXEL, 0, 3, a, b, NULL, PF_IR_F32, g_pool) == 0);
      CHECK(run_resize(PF_IR_RESIZE_LINEAR, PF_IR_COORD_ALIGN_CORNERS, 0, 3, a, b, NULL, PF_IR_F32, NULL) == 0); }
    { int64_t a[] = {4}, b[] = {8};
      CHECK(run_resize(PF_IR_RESIZE_LINEAR, PF_IR_COORD_TF_HALF_PIXEL_FOR_NN, 0, 1, a, b, NULL, PF_IR_F32, NULL) == 0); }
    { int64_t a[] = {6}, b[] = {13};
      CHECK(run_resize(PF_IR_RESIZE_LINEAR, PF_IR_COORD_ASYMMETRIC, 0, 1, a, b, NULL, PF_IR_F32, NULL) == 0); }
    { int64_t a[] = {1, 2, 3, 4, 5}, b[] = {1, 2, 6, 2, 10};
      CHECK(run_resize(PF_IR_RESIZE_LINEAR, PF_IR_COORD_PYTORCH_HALF_PIXEL, 0, 5, a, b, NULL, PF_IR_F32, g_pool) == 0);
      CHECK(run_resize(PF_IR_RESIZE_NEAREST, PF_IR_COORD_ASYMMETRIC, 0, 5, a, b, NULL, PF_IR_U8, g_pool) == 0); }
    { int64_t a[] = {1, 2, 3, 700}, b[] = {1, 2, 7, 1500};
      CHECK(run_resize(PF_IR_RESIZE_LINEAR, PF_IR_COORD_HALF_PIXEL, 0, 4, a, b, NULL, PF_IR_F32, g_pool) == 0);
      CHECK(run_resize(PF_IR_RESIZE_NEAREST, PF_IR_COORD_HALF_PIXEL, 0, 4, a, b, NULL, PF_IR_F32, NULL) == 0); }
}

/* ---- ONNX conformance cases ---------------------------------------------------- */

#define ONNX_NODE_DIR "/usr/share/libonnx-testdata/data/node"

typedef struct onnx_case {
    const char *name;
    pf_ir_op op;
    int n_in;
    /* conv/pool attrs, [h, w] or [w] for 1D (nsp from the input rank) */
    int64_t k[2], s[2], d[2], pb[2], pe[2], op_pad[2];
    int auto_pad;           /* 0 explicit, 1 SAME_UPPER, 2 SAME_LOWER */
    bool ceil_mode, include_pad;
    pf_ir_resize_mode mode;
    pf_ir_coord_mode coord;
    pf_ir_nearest_mode nearest;
} onnx_case;

static const onnx_case onnx_cases[] = {
    {"test_conv_with_strides_padding", PF_IR_CONV, 2, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 0, false, false, 0, 0, 0},
    {"test_conv_with_strides_no_padding", PF_IR_CONV, 2, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, 0, false, false, 0, 0, 0},
    {"test_conv_with_strides_and_asymmetric_padding", PF_IR_CONV, 2, {3, 3}, {2, 2}, {1, 1}, {1, 0}, {1, 0}, {0, 0}, 0, false, false, 0, 0, 0},
    {"test_conv_with_autopad_same", PF_IR_CONV, 2, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, 2, false, false, 0, 0, 0},
    {"test_convtranspose", PF_IR_CONV_TRANSPOSE, 2, {3, 3}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, 0, false, false, 0, 0, 0},
    {"test_convtranspose_1d", PF_IR_CONV_TRANSPOSE, 2, {0, 3}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, 0, false, false, 0, 0, 0},
    {"test_convtranspose_dilations", PF_IR_CONV_TRANSPOSE, 2, {2, 2}, {1, 1}, {2, 2}, {0, 0}, {0, 0}, {0, 0}, 0, false, false, 0, 0, 0},
    {"test_convtranspose_pad", PF_IR_CONV_TRANSPOSE, 2, {3, 3}, {3, 2}, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 0, false, false, 0, 0, 0},
    {"test_convtranspose_pads", PF_IR_CONV_TRANSPOSE, 2, {3, 3}, {3, 2}, {1, 1}, {1, 2}, {1, 2}, {0, 0}, 0, false, false, 0, 0, 0},
    {"test_convtranspose_output_shape", PF_IR_CONV_TRANSPOSE, 2, {3, 3}, {3, 2}, {1, 1}, {0, 0}, {-1, -1}, {0, 0}, 0, false, false, 0, 0, 0},
    {"test_maxpool_2d_default", PF_IR_MAXPOOL, 1, {2, 2}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, 0, false, false, 0, 0, 0},
    {"test_maxpool_1d_default", PF_IR_MAXPOOL, 1, {0, 2}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, 0, false, false, 0, 0, 0},
    {"test_maxpool_2d_ceil", PF_IR_MAXPOOL, 1, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, 0, true, false, 0, 0, 0},
    {"test_maxpool_2d_dilations", PF_IR_MAXPOOL, 1, {2, 2}, {1, 1}, {2, 2}, {0, 0}, {0, 0}, {0, 0}, 0, false, false, 0, 0, 0},
    {"test_maxpool_2d_pads", PF_IR_MAXPOOL, 1, {3, 3}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, {0, 0}, 0, false, false, 0, 0, 0},
    {"test_maxpool_2d_precomputed_pads", PF_IR_MAXPOOL, 1, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, {0, 0}, 0, false, false, 0, 0, 0},
    {"test_maxpool_2d_precomputed_strides", PF_IR_MAXPOOL, 1, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, 0, false, false, 0, 0, 0},
    {"test_maxpool_2d_precomputed_same_upper", PF_IR_MAXPOOL, 1, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, 1, false, false, 0, 0, 0},
    {"test_maxpool_2d_same_lower", PF_IR_MAXPOOL, 1, {2, 2}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, 2, false, false, 0, 0, 0},
    {"test_maxpool_2d_strides", PF_IR_MAXPOOL, 1, {5, 5}, {3, 3}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, 0, false, false, 0, 0, 0},
    {"test_maxpool_2d_uint8", PF_IR_MAXPOOL, 1, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, {0, 0}, 0, false, false, 0, 0, 0},
    {"test_averagepool_2d_default", PF_IR_AVGPOOL, 1, {2, 2}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, 0, false, false, 0, 0, 0},
    {"test_averagepool_1d_default", PF_IR_AVGPOOL, 1, {0, 2}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, 0, false, false, 0, 0, 0},
    {"test_averagepool_2d_ceil", PF_IR_AVGPOOL, 1, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, 0, true, false, 0, 0, 0},
    {"test_averagepool_2d_pads", PF_IR_AVGPOOL, 1, {3, 3}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, {0, 0}, 0, false, false, 0, 0, 0},
    {"test_averagepool_2d_pads_count_include_pad", PF_IR_AVGPOOL, 1, {3, 3}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, {0, 0}, 0, false, true, 0, 0, 0},
    {"test_averagepool_2d_precomputed_pads_count_include_pad", PF_IR_AVGPOOL, 1, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, {0, 0}, 0, false, true, 0, 0, 0},
    {"test_averagepool_2d_precomputed_same_upper", PF_IR_AVGPOOL, 1, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, 1, false, false, 0, 0, 0},
    {"test_averagepool_2d_same_lower", PF_IR_AVGPOOL, 1, {2, 2}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, 2, false, false, 0, 0, 0},
    {"test_averagepool_2d_strides", PF_IR_AVGPOOL, 1, {5, 5}, {3, 3}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, 0, false, false, 0, 0, 0},
    {"test_resize_upsample_scales_linear", PF_IR_RESIZE, 3, {0}, {0}, {0}, {0}, {0}, {0}, 0, false, false, PF_IR_RESIZE_LINEAR, PF_IR_COORD_HALF_PIXEL, 0},
    {"test_resize_upsample_scales_linear_align_corners", PF_IR_RESIZE, 3, {0}, {0}, {0}, {0}, {0}, {0}, 0, false, false, PF_IR_RESIZE_LINEAR, PF_IR_COORD_ALIGN_CORNERS, 0},
    {"test_resize_downsample_scales_linear", PF_IR_RESIZE, 3, {0}, {0}, {0}, {0}, {0}, {0}, 0, false, false, PF_IR_RESIZE_LINEAR, PF_IR_COORD_HALF_PIXEL, 0},
    {"test_resize_downsample_scales_linear_align_corners", PF_IR_RESIZE, 3, {0}, {0}, {0}, {0}, {0}, {0}, 0, false, false, PF_IR_RESIZE_LINEAR, PF_IR_COORD_ALIGN_CORNERS, 0},
    {"test_resize_downsample_sizes_linear_pytorch_half_pixel", PF_IR_RESIZE, 3, {0}, {0}, {0}, {0}, {0}, {0}, 0, false, false, PF_IR_RESIZE_LINEAR, PF_IR_COORD_PYTORCH_HALF_PIXEL, 0},
    {"test_resize_upsample_scales_nearest", PF_IR_RESIZE, 3, {0}, {0}, {0}, {0}, {0}, {0}, 0, false, false, PF_IR_RESIZE_NEAREST, PF_IR_COORD_HALF_PIXEL, PF_IR_NEAREST_ROUND_PREFER_FLOOR},
    {"test_resize_downsample_scales_nearest", PF_IR_RESIZE, 3, {0}, {0}, {0}, {0}, {0}, {0}, 0, false, false, PF_IR_RESIZE_NEAREST, PF_IR_COORD_HALF_PIXEL, PF_IR_NEAREST_ROUND_PREFER_FLOOR},
    {"test_resize_upsample_sizes_nearest", PF_IR_RESIZE, 3, {0}, {0}, {0}, {0}, {0}, {0}, 0, false, false, PF_IR_RESIZE_NEAREST, PF_IR_COORD_HALF_PIXEL, PF_IR_NEAREST_ROUND_PREFER_FLOOR},
    {"test_resize_downsample_sizes_nearest", PF_IR_RESIZE, 3, {0}, {0}, {0}, {0}, {0}, {0}, 0, false, false, PF_IR_RESIZE_NEAREST, PF_IR_COORD_HALF_PIXEL, PF_IR_NEAREST_ROUND_PREFER_FLOOR},
    {"test_resize_upsample_sizes_nearest_ceil_half_pixel", PF_IR_RESIZE, 3, {0}, {0}, {0}, {0}, {0}, {0}, 0, false, false, PF_IR_RESIZE_NEAREST, PF_IR_COORD_HALF_PIXEL, PF_IR_NEAREST_CEIL},
    {"test_resize_upsample_sizes_nearest_floor_align_corners", PF_IR_RESIZE, 3, {0}, {0}, {0}, {0}, {0}, {0}, 0, false, false, PF_IR_RESIZE_NEAREST, PF_IR_COORD_ALIGN_CORNERS, PF_IR_NEAREST_FLOOR},
    {"test_resize_upsample_sizes_nearest_round_prefer_ceil_asymmetric", PF_IR_RESIZE, 3, {0}, {0}, {0}, {0}, {0}, {0}, 0, false, false, PF_IR_RESIZE_NEAREST, PF_IR_COORD_ASYMMETRIC, PF_IR_NEAREST_ROUND_PREFER_CEIL},
    {"test_resize_downsample_sizes_nearest_tf_half_pixel_for_nn", PF_IR_RESIZE, 2, {0}, {0}, {0}, {0}, {0}, {0}, 0, false, false, PF_IR_RESIZE_NEAREST, PF_IR_COORD_TF_HALF_PIXEL_FOR_NN, PF_IR_NEAREST_ROUND_PREFER_FLOOR},
};

static pf_ir_dtype ir_dtype_of(pf_onnx_dtype t)
{
    switch (t) {
    case PF_ONNX_FLOAT: return PF_IR_F32;
    case PF_ONNX_UINT8: return PF_IR_U8;
    case PF_ONNX_INT64: return PF_IR_I64;
    default: return PF_IR_DTYPE_COUNT;
    }
}

static int run_onnx_case(const onnx_case *oc)
{
    char path[512];
    pf_onnx_tensor_data in[4], out;
    memset(in, 0, sizeof in);
    memset(&out, 0, sizeof out);
    int bad = 0, nfile = 0;
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s/test_data_set_0/input_%d.pb", ONNX_NODE_DIR, oc->name, i);
        if (access(path, R_OK)) break;
        if (pf_onnx_read_tensor_file(path, &in[i]) != PF_OK) {
            fprintf(stderr, "  %s: %s\n", path, pf_last_error());
            bad = 1;
        }
        nfile++;
    }
    snprintf(path, sizeof path, "%s/%s/test_data_set_0/output_0.pb", ONNX_NODE_DIR, oc->name);
    if (!bad && pf_onnx_read_tensor_file(path, &out) != PF_OK) {
        fprintf(stderr, "  %s: %s\n", path, pf_last_error());
        bad = 1;
    }
    tnode t;
    tn_init(&t, oc->op);
    int rank = in[0].ndim, nsp = rank - 2;
    if (!bad && (nfile < 1 || rank < 3 || rank > 4 || out.ndim != rank) && oc->op != PF_IR_RESIZE) {
        fprintf(stderr, "  %s: unexpected ranks\n", oc->name);
        bad = 1;
    }
    if (!bad && oc->op == PF_IR_RESIZE) {
        pf_ir_resize_attr *at = &t.n.attr.resize;
        at->mode = oc->mode;
        at->coord = oc->coord;
        at->nearest = oc->nearest;
        at->n = rank;
        /* scales when the last file holds floats, else sizes: out / in */
        const pf_onnx_tensor_data *last = &in[nfile - 1];
        bool scales = nfile >= 2 && last->dtype == PF_ONNX_FLOAT && last->numel == rank;
        for (int d = 0; d < rank; d++)
            at->scale[d] = scales ? ((const float *)last->data)[d]
                                  : (double)out.dims[d] / (double)in[0].dims[d];
    } else if (!bad && (oc->op == PF_IR_CONV || oc->op == PF_IR_CONV_TRANSPOSE)) {
        pf_ir_conv_attr *at = &t.n.attr.conv;
        at->nsp = nsp;
        at->group = 1;
        for (int i = 0; i < nsp; i++) {
            int j = nsp == 2 ? i : 1;
            at->kernel[i] = in[1].dims[2 + i];
            at->stride[i] = oc->s[j];
            at->dilation[i] = oc->d[j];
            at->pad_begin[i] = oc->pb[j];
            at->pad_end[i] = oc->pe[j];
            at->output_padding[i] = oc->op_pad[j];
            if (oc->auto_pad) {
                int64_t o = (in[0].dims[2 + i] + at->stride[i] - 1) / at->stride[i];
                int64_t tot = (o - 1) * at->stride[i] + at->kernel[i] - in[0].dims[2 + i];
                if (tot < 0) tot = 0;
                at->pad_begin[i] = oc->auto_pad == 1 ? tot / 2 : tot - tot / 2;
                at->pad_end[i] = tot - at->pad_begin[i];
            }
        }
    } else if (!bad) {
        pf_ir_pool_attr *at = &t.n.attr.pool;
        at->nsp = nsp;
        at->ceil_mode = oc->ceil_mode;
        at->count_include_pad = oc->include_pad;
        for (int i = 0; i < nsp; i++) {
            int j = nsp == 2 ? i : 1;
            at->kernel[i] = oc->k[j];
            at->stride[i] = oc->s[j];
            at->dilation[i] = oc->d[j];
            at->pad_begin[i] = oc->pb[j];
            at->pad_end[i] = oc->pe[j];
            if (oc->auto_pad) {
                int64_t o = (in[0].dims[2 + i] + at->stride[i] - 1) / at->stride[i];
                int64_t tot = (o - 1) * at->stride[i] + at->kernel[i] - in[0].dims[2 + i];
                if (tot < 0) tot = 0;
                at->pad_begin[i] = oc->auto_pad == 1 ? tot / 2 : tot - tot / 2;
                at->pad_end[i] = tot - at->pad_begin[i];
            }
        }
    }
    if (!bad) {
        int n_graph_in = oc->op == PF_IR_RESIZE ? 1 : oc->n_in;
        for (int i = 0; i < n_graph_in; i++)
            tn_in(&t, tn_value(&t, ir_dtype_of(in[i].dtype), in[i].ndim, in[i].dims));
        tn_out(&t, tn_value(&t, ir_dtype_of(out.dtype), out.ndim, out.dims));
        void *y = malloc(out.nbytes ? out.nbytes : 1);
        const void *ins[4] = {in[0].data, in[1].data, in[2].data, in[3].data};
        void *outs[1] = {y};
        pf_status st = tn_run(&t, ins, outs, g_pool);
        if (st != PF_OK) {
            fprintf(stderr, "  %s: %s\n", oc->name, pf_last_error());
            bad = 1;
        }
        for (int64_t i = 0; !bad && i < out.numel; i++) {
            double g, w;
            if (out.dtype == PF_ONNX_UINT8) {
                g = ((uint8_t *)y)[i];
                w = ((uint8_t *)out.data)[i];
            } else {
                g = ((float *)y)[i];
                w = ((float *)out.data)[i];
            }
            if (fabs(g - w) > 1e-5 + 1e-4 * fabs(w)) {
                fprintf(stderr, "  %s: [%lld] got %g want %g\n", oc->name, (long long)i, g, w);
                bad = 1;
            }
        }
        free(y);
    }
    for (int i = 0; i < 4; i++) pf_onnx_tensor_data_free(&in[i]);
    pf_onnx_tensor_data_free(&out);
    return bad;
}

static void test_onnx_conformance(void)
{
    if (!pf_onnx_available() || access(ONNX_NODE_DIR, R_OK)) {
        printf("  note: ONNX reader or %s missing, conformance cases not run\n", ONNX_NODE_DIR);
        return;
    }
    int n = 0;
    for (size_t i = 0; i < sizeof onnx_cases / sizeof onnx_cases[0]; i++) {
        int bad = run_onnx_case(&onnx_cases[i]);
        if (bad) fprintf(stderr, "  conformance FAIL %s\n", onnx_cases[i].name);
        CHECK(bad == 0);
        n++;
    }
    printf("  %d conformance cases\n", n);
}

int main(void)
{
    pf_test_seed(20240611);
    PF_RUN(test_sgemm_builtin); /* first: forks before any thread exists */
    pf_threadpool_params tp = pf_threadpool_params_default();
    tp.num_threads = 3;
    if (pf_threadpool_create(&tp, &g_pool) != PF_OK) {
        fprintf(stderr, "pool: %s\n", pf_last_error());
        return 1;
    }
    PF_RUN(test_sgemm);
    PF_RUN(test_conv_random);
    PF_RUN(test_conv_fuzz);
    PF_RUN(test_conv_errors);
    PF_RUN(test_conv_transpose);
    PF_RUN(test_gemm);
    PF_RUN(test_matmul);
    PF_RUN(test_pool);
    PF_RUN(test_batchnorm);
    PF_RUN(test_resize);
    PF_RUN(test_onnx_conformance);
    pf_threadpool_destroy(&g_pool);
    return pf_test_finish();
}
