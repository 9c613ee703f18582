/* Histogram tests: quantiles within 4.4% of the exact sorted quantiles
 * (numpy's linear interpolation) on uniform, exponential, log-uniform and
 * tiny samples; exact min/max/mean/count; bucket edges; concurrent
 * recording from 8 threads; reset; empty; errors. */
#include <stdatomic.h>

#include "core/sys.h"
#include "pf_test.h"

/* 2^(1/16) - 1: the widest bucket relative to its lower edge. */
#define TOL 0.0443

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* numpy.quantile(v, q) with the default 'linear' method; v sorted. */
static double exact_quantile(const int64_t *v, size_t n, double q)
{
    double r = q * (double)(n - 1);
    size_t k = (size_t)r;
    double f = r - (double)k;
    if (k + 1 >= n) return (double)v[n - 1];
    return (double)v[k] + f * ((double)v[k + 1] - (double)v[k]);
}

static const double k_qs[] = {0.0,  0.0001, 0.001, 0.01, 0.05, 0.1,   0.25,   0.5,
                              0.75, 0.9,    0.95,  0.99, 0.999, 0.9999, 1.0};

/* The range the 4.4% bound covers (prof.h): 100 ns .. 100 ns * 2^30. */
#define RANGE_LO 100.0
#define RANGE_HI 107374182400.0

/* Records v[0..n) (any order), then checks every quantile in k_qs, count
 * and mean: within TOL of the exact value inside the bucketed range;
 * outside it (the open-ended first and last buckets) only between the
 * exact min and max and monotonic in q. Returns the worst relative error
 * seen inside the range. */
static double check_against_exact(const char *what, int64_t *v, size_t n)
{
    pf_histogram *h = NULL;
    CHECK_OK(pf_histogram_create(&h));
    if (!h) return 1.0;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        pf_histogram_record(h, v[i]);
        sum += (double)v[i];
    }
    qsort(v, n, sizeof *v, cmp_i64);
    CHECK_EQ_INT(pf_histogram_count(h), n);
    CHECK(fabs(pf_histogram_mean(h) - sum / (double)n) <= 1e-9 * (sum / (double)n) + 1e-9);
    double worst = 0, prev = -1;
    int outside = 0;
    for (size_t i = 0; i < sizeof k_qs / sizeof k_qs[0]; i++) {
        double ex = exact_quantile(v, n, k_qs[i]);
        double got = pf_histogram_quantile(h, k_qs[i]);
        CHECK(got >= prev && got >= (double)v[0] && got <= (double)v[n - 1]);
        prev = got;
        if (ex < RANGE_LO || ex >= RANGE_HI) {
            outside++;
            continue;
        }
        double err = ex > 0 ? fabs(got - ex) / ex : fabs(got);
        if (err > worst) worst = err;
        if (!(err <= TOL)) {
            fprintf(stderr, "  %s q=%g: got %.1f, exact %.1f (%.2f%%)\n", what, k_qs[i], got, ex,
                    100 * err);
            CHECK(0);
        }
    }
    CHECK_EQ_INT((int64_t)pf_histogram_quantile(h, 0.0), v[0]);
    CHECK_EQ_INT((int64_t)pf_histogram_quantile(h, 1.0), v[n - 1]);
    pf_histogram_destroy(&h);
    CHECK(h == NULL);
    printf("  %-22s n=%-7zu worst quantile error %.3f%% (%d of the quantiles outside the "
           "range)\n", what, n, 100 * worst, outside);
    return worst;
}

static double rand01(void) { return (double)(pf_test_rand() >> 11) / 9007199254740992.0; }

static void test_uniform(void)
{
    pf_test_seed(11);
    size_t n = 200000;
    int64_t *v = malloc(n * sizeof *v);
    REQUIRE(v);
    for (size_t i = 0; i < n; i++) v[i] = pf_test_rand_range(1000, 10000000); /* 1 us .. 10 ms */
    double w = check_against_exact("uniform 1us..10ms", v, n);
    /* Interpolation inside buckets does much better than the bound on a
     * smooth distribution; a broken interpolation would not. */
    CHECK(w < 0.01);
    free(v);
}

static void test_exponential(void)
{
    pf_test_seed(12);
    size_t n = 200000;
    int64_t *v = malloc(n * sizeof *v);
    REQUIRE(v);
    for (size_t i = 0; i < n; i++) {
        double u = rand01();
        v[i] = 50000 + (int64_t)(-log(1.0 - u) * 2e6); /* 50 us + Exp(mean 2 ms) */
    }
    double w = check_against_exact("exponential mean 2ms", v, n);
    CHECK(w < 0.01);
    free(v);
}

/* Every bucket, both open ends included: 10 ns .. 500 s, log-uniform. */
static void test_log_uniform_full_range(void)
{
    pf_test_seed(13);
    size_t n = 100000;
    int64_t *v = malloc(n * sizeof *v);
    REQUIRE(v);
    for (size_t i = 0; i < n; i++) v[i] = (int64_t)exp2(log2(100.0) + rand01() * (log2(1e11) - log2(100.0)));
    check_against_exact("log-uniform 100ns..100s", v, n);
    for (size_t i = 0; i < n; i++) v[i] = (int64_t)exp2(log2(10.0) + rand01() * (log2(5e11) - log2(10.0)));
    check_against_exact("log-uniform 10ns..500s", v, n);
    /* Spread over 30 octaves, each bucket sees few samples: the bound still
     * holds but interpolation helps less. */
    free(v);
}

/* Tiny samples: interpolation between two samples in far-apart buckets. */
static void test_small_samples(void)
{
    pf_test_seed(14);
    for (int trial = 0; trial < 300; trial++) {
        size_t n = (size_t)pf_test_rand_range(1, 12);
        int64_t v[12];
        for (size_t i = 0; i < n; i++) v[i] = pf_test_rand_range(1, 5000000);
        pf_histogram *h = NULL;
        CHECK_OK(pf_histogram_create(&h));
        REQUIRE(h);
        for (size_t i = 0; i < n; i++) pf_histogram_record(h, v[i]);
        qsort(v, n, sizeof v[0], cmp_i64);
        int bad = 0;
        for (int k = 0; k <= 20; k++) {
            double q = k / 20.0;
            double ex = exact_quantile(v, n, q), got = pf_histogram_quantile(h, q);
            if (fabs(got - ex) > TOL * ex) {
                if (!bad) fprintf(stderr, "  n=%zu q=%g: got %.1f exact %.1f\n", n, q, got, ex);
                bad++;
            }
        }
        CHECK_EQ_INT(bad, 0);
        pf_histogram_destroy(&h);
        if (bad) break;
    }
}

/* One value: every quantile is that value exactly (min = max). Values on
 * and next to bucket edges land consistently. */
static void test_single_values_and_edges(void)
{
    int bad = 0;
    for (int b = 0; b <= 16 * 31; b++) {
        double edge = 100.0 * exp2(b / 16.0);
        for (int d = -1; d <= 1; d++) {
            int64_t x = (int64_t)llround(edge) + d;
            pf_histogram *h = NULL;
            pf_histogram_create(&h);
            if (!h) {
                bad++;
                continue;
            }
            pf_histogram_record(h, x);
            for (int k = 0; k <= 4; k++)
                if (pf_histogram_quantile(h, k / 4.0) != (double)x) bad++;
            /* Two values on either side of an edge. */
            pf_histogram_record(h, x + 1);
            double med = pf_histogram_quantile(h, 0.5);
            if (fabs(med - ((double)x + 0.5)) > TOL * (double)x) bad++;
            pf_histogram_destroy(&h);
        }
    }
    CHECK_EQ_INT(bad, 0);
}

static void test_empty_negative_and_args(void)
{
    pf_histogram *h = NULL;
    CHECK_OK(pf_histogram_create(&h));
    REQUIRE(h);
    CHECK_EQ_INT(pf_histogram_count(h), 0);
    CHECK(pf_histogram_quantile(h, 0.5) == 0.0);
    CHECK(pf_histogram_quantile(h, 0.0) == 0.0);
    CHECK(pf_histogram_mean(h) == 0.0);
    /* Negative values count as 0. */
    pf_histogram_record(h, -5);
    pf_histogram_record(h, 0);
    CHECK_EQ_INT(pf_histogram_count(h), 2);
    CHECK(pf_histogram_quantile(h, 1.0) == 0.0);
    CHECK(pf_histogram_mean(h) == 0.0);
    pf_histogram_record(h, 1000);
    /* q outside [0, 1] is clamped; NaN reads as the median. */
    CHECK(pf_histogram_quantile(h, -3.0) == 0.0);
    CHECK(pf_histogram_quantile(h, 7.0) == 1000.0);
    CHECK(pf_histogram_quantile(h, NAN) == pf_histogram_quantile(h, 0.5));
    /* Huge values go to the top bucket and are still exact at q = 1. */
    pf_histogram_record(h, INT64_MAX / 4);
    CHECK(pf_histogram_quantile(h, 1.0) == (double)(INT64_MAX / 4));
    pf_histogram_destroy(&h);
    pf_histogram_destroy(&h); /* NULL-safe */
    pf_histogram_destroy(NULL);
    /* NULL histograms read as empty and ignore records. */
    pf_histogram_record(NULL, 5);
    CHECK_EQ_INT(pf_histogram_count(NULL), 0);
    CHECK(pf_histogram_quantile(NULL, 0.5) == 0.0);
    CHECK(pf_histogram_mean(NULL) == 0.0);
    pf_histogram_reset(NULL);
    pf_clear_error();
    CHECK_EQ_INT(pf_histogram_create(NULL), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "pf_histogram_create") && strstr(pf_last_error(), "out"));
}

static void test_reset(void)
{
    pf_histogram *h = NULL;
    CHECK_OK(pf_histogram_create(&h));
    REQUIRE(h);
    for (int i = 1; i <= 1000; i++) pf_histogram_record(h, i * 1000);
    CHECK_EQ_INT(pf_histogram_count(h), 1000);
    pf_histogram_reset(h);
    CHECK_EQ_INT(pf_histogram_count(h), 0);
    CHECK(pf_histogram_quantile(h, 0.5) == 0.0);
    CHECK(pf_histogram_mean(h) == 0.0);
    /* After a reset, min and max start over too. */
    pf_histogram_record(h, 7777);
    pf_histogram_record(h, 8888);
    CHECK(pf_histogram_quantile(h, 0.0) == 7777.0);
    CHECK(pf_histogram_quantile(h, 1.0) == 8888.0);
    CHECK(pf_histogram_mean(h) == (7777.0 + 8888.0) / 2);
    pf_histogram_destroy(&h);
}

/* Concurrency ---------------------------------------------------------------------- */

#define NTHREADS 8
#define PER_THREAD 100000

typedef struct rec_arg {
    pf_histogram *h;
    int idx;
    _Atomic int *go;
} rec_arg;

static int64_t mt_value(int t, int i) { return 1000 + (int64_t)((i * 7919 + t * 104729) % 1000000) * 10; }

static void *recorder(void *arg)
{
    rec_arg *a = arg;
    while (!atomic_load(a->go)) {
    }
    for (int i = 0; i < PER_THREAD; i++) pf_histogram_record(a->h, mt_value(a->idx, i));
    return NULL;
}

static void test_concurrent(void)
{
    pf_histogram *h = NULL;
    CHECK_OK(pf_histogram_create(&h));
    REQUIRE(h);
    _Atomic int go = 0;
    rec_arg args[NTHREADS];
    pf_thread th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        args[i] = (rec_arg){h, i, &go};
        CHECK_OK(pf_thread_start(&th[i], "hist-rec", recorder, &args[i]));
    }
    atomic_store(&go, 1);
    /* Reading while recording: a value between min and max, never garbage. */
    int bad_reads = 0;
    for (int k = 0; k < 200; k++) {
        uint64_t c = pf_histogram_count(h); /* first: count > 0 => the quantile sees a sample */
        double q = pf_histogram_quantile(h, 0.5);
        if (c > 0 && (q < 1000 || q > 1000 + 10 * 1000000.0)) bad_reads++;
    }
    for (int i = 0; i < NTHREADS; i++) pf_thread_join(th[i]);
    CHECK_EQ_INT(bad_reads, 0);

    size_t n = (size_t)NTHREADS * PER_THREAD;
    int64_t *v = malloc(n * sizeof *v);
    REQUIRE(v);
    double sum = 0;
    for (int t = 0; t < NTHREADS; t++)
        for (int i = 0; i < PER_THREAD; i++) {
            v[(size_t)t * PER_THREAD + (size_t)i] = mt_value(t, i);
            sum += (double)mt_value(t, i);
        }
    qsort(v, n, sizeof *v, cmp_i64);
    CHECK_EQ_INT(pf_histogram_count(h), n);
    CHECK(pf_histogram_mean(h) == sum / (double)n); /* integer sums: exact */
    CHECK(pf_histogram_quantile(h, 0.0) == (double)v[0]);
    CHECK(pf_histogram_quantile(h, 1.0) == (double)v[n - 1]);
    for (size_t i = 0; i < sizeof k_qs / sizeof k_qs[0]; i++) {
        double ex = exact_quantile(v, n, k_qs[i]), got = pf_histogram_quantile(h, k_qs[i]);
        if (fabs(got - ex) > TOL * ex) {
            fprintf(stderr, "  concurrent q=%g: got %.1f exact %.1f\n", k_qs[i], got, ex);
            CHECK(0);
        }
    }
    free(v);
    pf_histogram_destroy(&h);
}

int main(void)
{
    PF_RUN(test_uniform);
    PF_RUN(test_exponential);
    PF_RUN(test_log_uniform_full_range);
    PF_RUN(test_small_samples);
    PF_RUN(test_single_values_and_edges);
    PF_RUN(test_empty_negative_and_args);
    PF_RUN(test_reset);
    PF_RUN(test_concurrent);
    return pf_test_finish();
}
