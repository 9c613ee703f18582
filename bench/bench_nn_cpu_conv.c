/* bench_nn_cpu_conv: GFLOP/s of the nn CPU conv kernel on shapes that
 * dominate mobile segmentation nets (MobileNetV3/LRASPP, MediaPipe selfie):
 * depthwise 3x3/5x5, pointwise 1x1 (thin ones on conv_pw.c's loops, wide
 * ones on sgemm), full 3x3 convs, and a 1x1 GEMM-like head. CPU only
 * (--device is accepted and ignored). Each shape runs with one thread and
 * with a pool of pf_cpu_count() threads (OpenBLAS itself runs on one thread;
 * the kernels split products over the pool). FLOPs = 2 * N * M * OH * OW *
 * C/g * kh * kw. */
#include <math.h>

#include "bench_common.h"
#include "nn/cpu/blas.h"
#include "nn/cpu/kernels.h"

typedef struct shape {
    const char *what;
    int64_t C, H, W, M, k, s, group;
} shape;

static const shape shapes[] = {
    {"dw3x3 s1  64x128x128", 64, 128, 128, 64, 3, 1, 64},
    {"dw3x3 s2  72x128x128", 72, 128, 128, 72, 3, 2, 72},
    {"dw5x5 s1 240x32x32", 240, 32, 32, 240, 5, 1, 240},
    {"pw1x1  16->16 128x128", 16, 128, 128, 16, 1, 1, 1},
    {"pw1x1  16->64 128x128", 16, 128, 128, 64, 1, 1, 1},
    {"pw1x1  24->72 64x64", 24, 64, 64, 72, 1, 1, 1},
    {"pw1x1  64->24 128x128", 64, 128, 128, 24, 1, 1, 1},
    {"pw1x1 160->960 32x32", 160, 32, 32, 960, 1, 1, 1},
    {"pw1x1  96->576 32x32", 96, 32, 32, 576, 1, 1, 1},
    {"pw1x1 960->128 16x16", 960, 16, 16, 128, 1, 1, 1},
    {"3x3 s2   3->16 512x512", 3, 512, 512, 16, 3, 2, 1},
    {"3x3 s1  64->64 64x64", 64, 64, 64, 64, 3, 1, 1},
};

static double now_s(void) { return (double)pf_time_ns() * 1e-9; }

static int run_shape(const shape *sh, pf_threadpool *pool, int iters, double *gflops)
{
    pf_ir_value v[4];
    pf_ir_node n;
    pf_ir_graph g;
    memset(v, 0, sizeof v);
    memset(&n, 0, sizeof n);
    memset(&g, 0, sizeof g);
    int64_t pad = sh->k / 2, OH = (sh->H + 2 * pad - sh->k) / sh->s + 1;
    int64_t OW = (sh->W + 2 * pad - sh->k) / sh->s + 1;
    int64_t dims[4][4] = {{1, sh->C, sh->H, sh->W}, {sh->M, sh->C / sh->group, sh->k, sh->k},
                          {sh->M, 0, 0, 0}, {1, sh->M, OH, OW}};
    const char *names[4] = {"x", "w", "b", "y"};
    int ndim[4] = {4, 4, 1, 4};
    for (int i = 0; i < 4; i++) {
        v[i].name = (char *)names[i];
        v[i].dtype = PF_IR_F32;
        v[i].ndim = ndim[i];
        memcpy(v[i].dims, dims[i], sizeof dims[i]);
        v[i].producer = -1;
    }
    n.op = PF_IR_CONV;
    n.name = (char *)"conv";
    n.src_op = (char *)"Conv";
    n.n_in = 3;
    n.n_out = 1;
    n.in[0] = 0;
    n.in[1] = 1;
    n.in[2] = 2;
    n.out[0] = 3;
    n.act = PF_IR_ACT_RELU;
    pf_ir_conv_attr *at = &n.attr.conv;
    at->nsp = 2;
    at->group = sh->group;
    for (int d = 0; d < 2; d++) {
        at->kernel[d] = sh->k;
        at->stride[d] = sh->s;
        at->dilation[d] = 1;
        at->pad_begin[d] = at->pad_end[d] = pad;
    }
    g.name = (char *)"bench";
    g.values = v;
    g.n_values = 4;
    g.nodes = &n;
    g.n_nodes = 1;
    float *buf[4];
    for (int i = 0; i < 4; i++) {
        int64_t e = 1;
        for (int d = 0; d < ndim[i]; d++) e *= dims[i][d];
        buf[i] = aligned_alloc(64, ((size_t)e * 4 + 63) & ~(size_t)63);
        if (!buf[i]) return bench_fail("bench_nn_cpu_conv", "out of memory");
        for (int64_t j = 0; j < e; j++) buf[i][j] = (float)((j * 7919 % 1000) - 500) * 1e-3f;
    }
    size_t sb = pf_nn_cpu_scratch_bytes(&g, 0);
    void *scratch = sb ? aligned_alloc(64, sb) : NULL;
    const void *in[3] = {buf[0], buf[1], buf[2]};
    void *out[1] = {buf[3]};
    double *t = malloc((size_t)iters * sizeof *t);
    int rc = 0;
    for (int it = -2; it < iters && !rc; it++) {
        double t0 = now_s();
        if (pf_nn_cpu_run_node(&g, 0, in, out, pool, scratch, sb) != PF_OK) {
            fprintf(stderr, "bench_nn_cpu_conv: %s: %s\n", sh->what, pf_last_error());
            rc = 1;
        }
        if (it >= 0) t[it] = now_s() - t0;
    }
    double flops = 2.0 * (double)(sh->M * OH * OW) * (double)(sh->C / sh->group * sh->k * sh->k);
    *gflops = rc ? 0.0 : flops / bench_median(t, iters) * 1e-9;
    free(t);
    free(scratch);
    for (int i = 0; i < 4; i++) free(buf[i]);
    return rc;
}

int main(int argc, char **argv)
{
    bench_args a = {.prog = "bench_nn_cpu_conv", .iters_help = "timed runs per shape",
                    .iters = 20, .max_iters = 100000};
    int rc = bench_parse_args(argc, argv, &a);
    if (rc >= 0) return rc;
    pf_threadpool *pool = NULL;
    pf_threadpool_params tp = pf_threadpool_params_default();
    if (pf_threadpool_create(&tp, &pool) != PF_OK)
        return bench_fail(a.prog, "thread pool");
    int nth = pf_threadpool_size(pool);
    if (a.json) {
        printf("{\"bench\": \"nn_cpu_conv\", \"blas\": \"");
        bench_json_str(pf_nn_blas_name());
        printf("\", \"threads\": %d, \"results\": [", nth);
    } else {
        printf("blas: %s\nthreads: %d, median of %d runs, fused ReLU and bias\n",
               pf_nn_blas_name(), nth, a.iters);
        printf("%-26s %12s %12s\n", "shape (C->M, HxW)", "1 thr GF/s", "pool GF/s");
    }
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        double g1 = 0, gp = 0;
        if (run_shape(&shapes[i], NULL, a.iters, &g1) || run_shape(&shapes[i], pool, a.iters, &gp)) {
            pf_threadpool_destroy(&pool);
            return 1;
        }
        if (a.json) {
            printf("%s{\"shape\": \"", i ? ", " : "");
            bench_json_str(shapes[i].what);
            printf("\", \"gflops_1\": %.3f, \"gflops_pool\": %.3f}", g1, gp);
        } else {
            printf("%-26s %12.2f %12.2f\n", shapes[i].what, g1, gp);
        }
    }
    if (a.json) printf("]}\n");
    pf_threadpool_destroy(&pool);
    return 0;
}
