/* pf_nn_sgemm: OpenBLAS's cblas_sgemm when libopenblas can be loaded,
 * otherwise packed, cache-blocked loops. PF_NN_BLAS=builtin in the environment
 * forces the built-in loops even with OpenBLAS (for comparisons and for the
 * tests, which check both paths). */
#define _GNU_SOURCE /* dlmopen, LM_ID_NEWLM */
#include <dlfcn.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

/* OpenBLAS is loaded at run time (dlopen), not linked, for two reasons:
 * - its DYNAMIC_ARCH build picks kernels from the CPU model when it loads, and
 *   on virtual machines that report a generic "Intel Xeon Processor" (this
 *   project's CI machines do) Debian's 0.3.21 falls back to its SSE3
 *   "Prescott" kernels, 3-5x slower than the AVX2/AVX-512 ones the CPU has.
 *   OpenBLAS reads OPENBLAS_CORETYPE only while loading, so pixflow sets it
 *   from the CPU's features (CPUID) before dlopen, unless the user set it;
 * - the build needs neither headers nor the library (the GPU machine has the
 *   library only), and a machine without it still runs (built-in loops).
 * When the process already holds libopenblas (OpenCV, NumPy and LAPACK users
 * link it, so it loads before pixflow runs), the variable comes too late and
 * dlopen returns that copy with whatever core it chose; on those VMs that is
 * Prescott, which made every sgemm ~4x slower inside such programs (bench_nn_opencv
 * measured pixflow at half its speed). So when the process already holds
 * one, pixflow loads a private copy in a new link-map namespace (dlmopen),
 * which reads the variable afresh and leaves the program's copy (its core,
 * its thread count) untouched; only where dlmopen fails is the program's copy
 * shared. A user-set OPENBLAS_CORETYPE is always obeyed.
 * OpenBLAS runs on one thread (set here): the kernels split products over
 * their own pool (pf_nn_sgemm_pool), as OpenBLAS's spinning workers and the
 * pool's threads fought over the cores of small shared machines.
 * The reference CBLAS enums and signature, which OpenBLAS exports: */
enum { PF_CBLAS_ROW_MAJOR = 101, PF_CBLAS_NO_TRANS = 111, PF_CBLAS_TRANS = 112 };
typedef void (*cblas_sgemm_fn)(int order, int trans_a, int trans_b, int m, int n, int k,
                               float alpha, const float *a, int lda, const float *b, int ldb,
                               float beta, float *c, int ldc);
typedef void (*set_threads_fn)(int n);
typedef char *(*get_str_fn)(void);

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static cblas_sgemm_fn blas_sgemm; /* NULL: built-in loops */
static char blas_name[200];

/* The OpenBLAS core matching the CPU's vector units, or NULL to let OpenBLAS
 * decide. AVX-512 needs F, BW, DQ, VL and the OS saving ZMM state; AVX2
 * needs FMA too and YMM state. */
static const char *core_for_cpu(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return NULL;
    const unsigned osxsave = 1u << 27, avx = 1u << 28, fma = 1u << 12;
    if ((c & (osxsave | avx | fma)) != (osxsave | avx | fma)) return NULL;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    if ((lo & 6u) != 6u) return NULL;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return NULL;
    const unsigned avx2 = 1u << 5, f = 1u << 16, dq = 1u << 17, bw = 1u << 30, vl = 1u << 31;
    if ((b & (f | dq | bw | vl)) == (f | dq | bw | vl) && (lo & 0xe0u) == 0xe0u) return "SkylakeX";
    if (b & avx2) return "Haswell";
#endif
    return NULL;
}

/* The handle to use: a private copy when the program already holds one
 * (see above), else the usual one; NULL when there is none. */
static void *blas_open(void)
{
    void *h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (h) {
        void *own = dlmopen(LM_ID_NEWLM, "libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
        if (own) return own;
        /* no private copy: share the program's, whatever its core */
        return h;
    }
    h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libopenblas.so", RTLD_NOW | RTLD_LOCAL);
    return h;
}

static void blas_init(void)
{
    const char *env = getenv("PF_NN_BLAS");
    snprintf(blas_name, sizeof blas_name, "built-in loops");
    if (env && !strcmp(env, "builtin")) return;
    const char *core = core_for_cpu();
    if (core && !getenv("OPENBLAS_CORETYPE")) setenv("OPENBLAS_CORETYPE", core, 0);
    snprintf(blas_name, sizeof blas_name, "built-in loops (libopenblas.so.0 not found)");
    void *h = blas_open();
    if (!h) return;
    cblas_sgemm_fn sg = (cblas_sgemm_fn)(uintptr_t)dlsym(h, "cblas_sgemm");
    set_threads_fn st = (set_threads_fn)(uintptr_t)dlsym(h, "openblas_set_num_threads");
    get_str_fn cfg = (get_str_fn)(uintptr_t)dlsym(h, "openblas_get_config");
    get_str_fn corename = (get_str_fn)(uintptr_t)dlsym(h, "openblas_get_corename");
    if (!sg) {
        snprintf(blas_name, sizeof blas_name, "built-in loops (no cblas_sgemm in libopenblas)");
        return; /* the handle stays open: harmless, and dlclose could race */
    }
    if (st) st(1); /* threads come from the kernels' pool (blas.h) */
    snprintf(blas_name, sizeof blas_name, "openblas %s, core %s", cfg ? cfg() : "?",
             corename ? corename() : "?");
    blas_sgemm = sg;
}

const char *pf_nn_blas_name(void)
{
    pthread_once(&blas_once, blas_init);
    return blas_name;
}

/* Built-in path. op(A) and op(B) are packed block by block so the inner
 * loop always runs over contiguous memory whatever the transposes: a row
 * block of op(A) (MB x KB) and a panel of op(B) (KB x NB), then
 * C[i, j0:j1] += a(i,k) * Bp[k, :] vectorises. Blocks stay on the stack
 * (64 KiB in all) so the fallback allocates nothing. */
enum { BLK_M = 32, BLK_K = 128, BLK_N = 96 };

static void gemm_builtin(int ta, int tb, int M, int N, int K, float alpha, const float *A,
                         int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    float ap[BLK_M * BLK_K];
    float bp[BLK_K * BLK_N];
    for (int i = 0; i < M; i++) {
        float *c = C + (size_t)i * ldc;
        if (beta == 0.0f) memset(c, 0, (size_t)N * sizeof *c);
        else if (beta != 1.0f)
            for (int j = 0; j < N; j++) c[j] *= beta;
    }
    if (alpha == 0.0f || K == 0) return;
    for (int j0 = 0; j0 < N; j0 += BLK_N) {
        int nb = N - j0 < BLK_N ? N - j0 : BLK_N;
        for (int k0 = 0; k0 < K; k0 += BLK_K) {
            int kb = K - k0 < BLK_K ? K - k0 : BLK_K;
            for (int k = 0; k < kb; k++)
                for (int j = 0; j < nb; j++)
                    bp[k * nb + j] = tb ? B[(size_t)(j0 + j) * ldb + k0 + k]
                                        : B[(size_t)(k0 + k) * ldb + j0 + j];
            for (int i0 = 0; i0 < M; i0 += BLK_M) {
                int mb = M - i0 < BLK_M ? M - i0 : BLK_M;
                for (int i = 0; i < mb; i++)
                    for (int k = 0; k < kb; k++)
                        ap[i * kb + k] = alpha * (ta ? A[(size_t)(k0 + k) * lda + i0 + i]
                                                     : A[(size_t)(i0 + i) * lda + k0 + k]);
                for (int i = 0; i < mb; i++) {
                    float *c = C + (size_t)(i0 + i) * ldc + j0;
                    const float *a = ap + i * kb;
                    for (int k = 0; k < kb; k++) {
                        const float av = a[k];
                        const float *b = bp + k * nb;
                        for (int j = 0; j < nb; j++) c[j] += av * b[j];
                    }
                }
            }
        }
    }
}

void pf_nn_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                 int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return;
    pthread_once(&blas_once, blas_init);
    if (blas_sgemm && K > 0) {
        blas_sgemm(PF_CBLAS_ROW_MAJOR, trans_a ? PF_CBLAS_TRANS : PF_CBLAS_NO_TRANS,
                   trans_b ? PF_CBLAS_TRANS : PF_CBLAS_NO_TRANS, M, N, K, alpha, A, lda, B, ldb,
                   beta, C, ldc);
        return;
    }
    gemm_builtin(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* ---- split over the pool ---------------------------------------------------- */

/* Products below this many multiply-adds run on the caller: waking the pool
 * costs more. Tiles hold about TILE_FLOATS floats of C (fits L2 next to the
 * packed panels), at least TILE_MIN_COLS columns wide. */
enum { SERIAL_MACS = 1 << 17, TILE_FLOATS = 1 << 16, TILE_MIN_COLS = 128, SPLIT_ALIGN = 16 };

typedef struct sgemm_job {
    int ta, tb, M, N, K;
    float alpha, beta;
    const float *A, *B;
    int lda, ldb, ldc;
    float *C;
    pf_nn_gemm_post_fn post;
    void *ctx;
    int split_cols;
} sgemm_job;

/* Tiles of C[i0:i1, j0:j1]. */
static void sgemm_range(const sgemm_job *j, int i0, int i1, int j0, int j1)
{
    int rows = i1 - i0;
    int nb = TILE_FLOATS / (rows > 0 ? rows : 1);
    nb = nb < TILE_MIN_COLS ? TILE_MIN_COLS : (nb + SPLIT_ALIGN - 1) / SPLIT_ALIGN * SPLIT_ALIGN;
    const float *a = j->ta ? j->A + i0 : j->A + (size_t)i0 * (size_t)j->lda;
    for (int c0 = j0; c0 < j1; c0 += nb) {
        int c1 = j1 - c0 < nb ? j1 : c0 + nb;
        const float *b = j->tb ? j->B + (size_t)c0 * (size_t)j->ldb : j->B + c0;
        pf_nn_sgemm(j->ta, j->tb, rows, c1 - c0, j->K, j->alpha, a, j->lda, b, j->ldb, j->beta,
                    j->C + (size_t)i0 * (size_t)j->ldc + c0, j->ldc);
        if (j->post) j->post(j->ctx, i0, i1, c0, c1);
    }
}

static void sgemm_worker(void *ctx, int ith, int nth)
{
    const sgemm_job *j = ctx;
    int n = j->split_cols ? j->N : j->M;
    /* split points on multiples of SPLIT_ALIGN (vector width, cache lines) */
    int64_t units = (n + SPLIT_ALIGN - 1) / SPLIT_ALIGN;
    int64_t u0 = units * ith / nth, u1 = units * (ith + 1) / nth;
    int lo = (int)(u0 * SPLIT_ALIGN), hi = (int)(u1 * SPLIT_ALIGN);
    if (hi > n) hi = n;
    if (lo >= hi) return;
    if (j->split_cols) sgemm_range(j, 0, j->M, lo, hi);
    else sgemm_range(j, lo, hi, 0, j->N);
}

void pf_nn_sgemm_pool(pf_threadpool *pool, int trans_a, int trans_b, int M, int N, int K,
                      float alpha, const float *A, int lda, const float *B, int ldb, float beta,
                      float *C, int ldc, pf_nn_gemm_post_fn post, void *ctx)
{
    if (M <= 0 || N <= 0) return;
    sgemm_job j = {trans_a, trans_b, M, N, K, alpha, beta, A, B, lda, ldb, ldc, C, post, ctx, 1};
    int nth = pool ? pf_threadpool_size(pool) : 1;
    double macs = (double)M * (double)N * (double)(K > 0 ? K : 1);
    if (nth <= 1 || macs < SERIAL_MACS) {
        sgemm_range(&j, 0, M, 0, N);
        return;
    }
    /* columns when every thread gets a full tile's width, else rows */
    if (N >= nth * TILE_MIN_COLS) j.split_cols = 1;
    else if (M >= nth * SPLIT_ALIGN) j.split_cols = 0;
    else j.split_cols = N >= M;
    pf_threadpool_parallel_for(pool, 0, sgemm_worker, &j);
}
