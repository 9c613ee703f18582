/* pixflow's FP16 implicit-GEMM conv (src/nn/cuda/igemm.cu) on the conv
 * shapes of the benchmark models, every tile config and split count, random
 * data: median of 20 launches between CUDA events after a warm-up; prints
 * us and TFLOP/s (2*M*N*K / time) per config, and the tuner's pick.
 *   bench_igemm [--reps N]
 * The floor per shape is max(FLOPs / dense fp16 rate, bytes / bandwidth). */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/cuda/cu_internal.h"

typedef struct shape {
    const char *name;
    int n, c, h, w, k, kh, kw, s, d, pad;
} shape;

static const shape k_shapes[] = {
    {"lraspp 1x1 160->960 @32x32", 1, 160, 32, 32, 960, 1, 1, 1, 1, 0},
    {"lraspp 1x1 960->160 @32x32", 1, 960, 32, 32, 160, 1, 1, 1, 1, 0},
    {"lraspp 1x1 24->72 @128x128", 1, 24, 128, 128, 72, 1, 1, 1, 1, 0},
    {"lraspp 1x1 16->64 @256x256", 1, 16, 256, 256, 64, 1, 1, 1, 1, 0},
    {"lraspp 1x1 160->960 @32x32 b8", 8, 160, 32, 32, 960, 1, 1, 1, 1, 0},
    {"r50 1x1 64->256 @128x128", 1, 64, 128, 128, 256, 1, 1, 1, 1, 0},
    {"r50 1x1 512->2048 @64x64", 1, 512, 64, 64, 2048, 1, 1, 1, 1, 0},
    {"r50 3x3 512->512 d4 @64x64", 1, 512, 64, 64, 512, 3, 3, 1, 4, 4},
    {"r50 3x3 256->256 d2 @64x64", 1, 256, 64, 64, 256, 3, 3, 1, 2, 2},
    {"aspp 3x3 2048->256 d12 @64x64", 1, 2048, 64, 64, 256, 3, 3, 1, 12, 12},
    {"aspp 3x3 2048->256 d12 @64x64 b8", 8, 2048, 64, 64, 256, 3, 3, 1, 12, 12},
};

static void *dev_random(size_t halves)
{
    unsigned short *h = malloc(halves * 2);
    unsigned s = 12345;
    for (size_t i = 0; i < halves; i++) {
        s = s * 1103515245u + 12345u;
        /* F16 in [-1, 1): sign, exponent 14 or below, random mantissa. */
        h[i] = (unsigned short)(((s >> 16) & 0x8000) | (0x3800 + ((s >> 8) & 0x3ff)));
    }
    void *d = NULL;
    cudaMalloc(&d, halves * 2);
    cudaMemcpy(d, h, halves * 2, cudaMemcpyHostToDevice);
    free(h);
    return d;
}

static int cmpf(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int reps = 20;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--reps")) reps = atoi(argv[++i]);
    if (reps < 1 || reps > 1000) reps = 20;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        fprintf(stderr, "bench_igemm: no CUDA device\n");
        return 1;
    }
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    void *ws = NULL;
    const size_t ws_cap = (size_t)64 << 20;
    cudaMalloc(&ws, ws_cap);
    for (size_t si = 0; si < sizeof k_shapes / sizeof *k_shapes; si++) {
        const shape *s = &k_shapes[si];
        const int oh = (s->h + 2 * s->pad - s->d * (s->kh - 1) - 1) / s->s + 1;
        const int ow = (s->w + 2 * s->pad - s->d * (s->kw - 1) - 1) / s->s + 1;
        const size_t nx = (size_t)s->n * s->h * s->w * s->c, nw = (size_t)s->k * s->kh * s->kw * s->c;
        const size_t ny = (size_t)s->n * oh * ow * s->k;
        void *x = dev_random(nx), *w = dev_random(nw), *b = dev_random((size_t)s->k), *y = NULL;
        cudaMalloc(&y, ny * 2);
        pf_cu_ig p;
        memset(&p, 0, sizeof p);
        p.n = s->n, p.c = s->c, p.h = s->h, p.w = s->w, p.k = s->k, p.oh = oh, p.ow = ow;
        p.kh = s->kh, p.kw = s->kw, p.sh = p.sw = s->s, p.dh = p.dw = s->d, p.ph = p.pw = s->pad;
        const long long xs[4] = {(long long)s->h * s->w * s->c, 1, (long long)s->w * s->c, s->c};
        const long long ys[4] = {(long long)oh * ow * s->k, 1, (long long)ow * s->k, s->k};
        for (int d = 0; d < 4; d++) p.in_st[d] = xs[d], p.out_st[d] = p.z_st[d] = ys[d];
        p.act = PF_IR_ACT_RELU;
        const double flop = 2.0 * s->n * oh * ow * (double)s->k * s->kh * s->kw * s->c;
        const double bytes = 2.0 * (nx + nw + ny);
        printf("%s: M %d N %d K %d, %.2f GFLOP, %.1f MB; floor %.1f us (989 TFLOP/s, 4.8 TB/s)\n",
               s->name, s->n * oh * ow, s->k, s->kh * s->kw * s->c, flop / 1e9, bytes / 1e6,
               1e6 * (flop / 989e12 > bytes / 4.8e12 ? flop / 989e12 : bytes / 4.8e12));
        static const int splits[] = {1, 2, 4, 8};
        for (int cfg = 0; cfg < PF_CU_IG_CONFIGS; cfg++) {
            printf("  cfg %d:", cfg);
            for (int k = 0; k < 4; k++) {
                pf_cu_ig q = p;
                pf_cu_ig_set(&q, cfg, splits[k]);
                if (pf_cu_ig_ws(&q) > ws_cap) continue;
                float t[1000];
                int err = pf_cu_launch_ig(&q, x, w, b, NULL, y, ws, NULL);
                for (int r = 0; r < reps && !err; r++) {
                    cudaEventRecord(e0, NULL);
                    err = pf_cu_launch_ig(&q, x, w, b, NULL, y, ws, NULL);
                    cudaEventRecord(e1, NULL);
                    cudaEventSynchronize(e1);
                    cudaEventElapsedTime(&t[r], e0, e1);
                }
                if (err) {
                    printf("  x%d error %d", q.splits, err);
                    continue;
                }
                qsort(t, (size_t)reps, sizeof *t, cmpf);
                const double us = 1e3 * t[reps / 2];
                printf("  x%d %.1f us %.0f TF", q.splits, us, flop / us / 1e6);
            }
            printf("\n");
        }
        pf_cu_ig t = p;
        float ms = 0;
        if (pf_cu_ig_tune(&t, x, w, b, y, ws, ws_cap, NULL, &ms) == 0)
            printf("  tuner: cfg %d x%d %.1f us\n", t.cfg, t.splits, 1e3 * ms);
        cudaFree(x), cudaFree(w), cudaFree(b), cudaFree(y);
    }
    cudaFree(ws);
    return 0;
}
