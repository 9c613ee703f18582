/* Latency histogram: logarithmic buckets, lock-free recording.
 *
 * Design:
 * - Bucket 0 holds [0, 100 ns); bucket 1 + 16*e + s holds
 *   [100 ns * 2^(e + s/16), 100 ns * 2^(e + (s+1)/16)) for e in [0, 30),
 *   s in [0, 16); the last bucket holds everything from 100 ns * 2^30
 *   (~107 s) up. Geometric buckets (rather than linear sub-buckets, whose
 *   first one in each octave is 6.25% wide) are what make every bucket at
 *   most 2^(1/16) - 1 = 4.43% wide relative to its lower edge, so any value
 *   reported from inside the right bucket is within that of the truth.
 * - The bucket index needs no libm: the exponent e comes from the bits of
 *   the double v/100, and s from a binary search of its mantissa in [1, 2)
 *   over the 15 constants 2^(i/16). Recording is then a handful of
 *   instructions plus three relaxed atomic adds (bucket, count, sum) and a
 *   min/max check that only writes when an extreme moves.
 * - Quantiles read a snapshot of the buckets. The k-th smallest sample is
 *   estimated by finding its bucket and placing it linearly inside by its
 *   position among the bucket's samples, clamped to the exact [min, max]
 *   (which also bounds the open-ended first and last buckets); the value
 *   at rank q*(n-1) interpolates the estimates of the two samples around
 *   it, as numpy's default quantile does with the samples themselves.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "pixflow/prof.h"

#define SUB 16                      /* buckets per power of two */
#define OCTAVES 30                  /* 100 ns .. 100 ns * 2^30 (~107 s) */
#define NBUCKETS (1 + SUB * OCTAVES + 1)
#define BASE_NS 100.0

/* 2^(i/16) for i = 0..16. */
static const double k_pow16[SUB + 1] = {
    1.0,
    1.0442737824274138,
    1.0905077326652577,
    1.1387886347566916,
    1.1892071150027210,
    1.2418578120734840,
    1.2968395546510096,
    1.3542555469368927,
    1.4142135623730951,
    1.4768261459394993,
    1.5422108254079407,
    1.6104903319492543,
    1.6817928305074290,
    1.7562521603732995,
    1.8340080864093424,
    1.9152065613971474,
    2.0,
};

struct pf_histogram {
    _Atomic uint64_t buckets[NBUCKETS];
    _Atomic uint64_t count;
    _Atomic uint64_t sum;           /* ns; wraps after 584 years of total time */
    _Atomic int64_t min, max;
};

static int bucket_of(int64_t v)
{
    if (v < (int64_t)BASE_NS) return 0;
    double x = (double)v / BASE_NS;  /* >= 1 */
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    int e = (int)((bits >> 52) & 0x7ff) - 1023;
    if (e >= OCTAVES) return NBUCKETS - 1;
    /* Mantissa as a double in [1, 2): exponent bits set to 1023. */
    uint64_t mbits = (bits & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull;
    double m;
    memcpy(&m, &mbits, sizeof m);
    int lo = 0, hi = SUB; /* k_pow16[lo] <= m < k_pow16[hi] */
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (m >= k_pow16[mid]) lo = mid;
        else hi = mid;
    }
    return 1 + e * SUB + lo;
}

/* Bounds of bucket b in ns (the open-ended ones get the caller's min/max). */
static void bucket_bounds(int b, double *lo, double *hi)
{
    if (b == 0) {
        *lo = 0.0;
        *hi = BASE_NS;
        return;
    }
    if (b == NBUCKETS - 1) {
        *lo = *hi = ldexp(BASE_NS, OCTAVES);
        return;
    }
    int e = (b - 1) / SUB, s = (b - 1) % SUB;
    *lo = ldexp(BASE_NS * k_pow16[s], e);
    *hi = ldexp(BASE_NS * k_pow16[s + 1], e);
}

static void reset_fields(pf_histogram *h)
{
    for (int i = 0; i < NBUCKETS; i++) atomic_store_explicit(&h->buckets[i], 0, memory_order_relaxed);
    atomic_store_explicit(&h->count, 0, memory_order_relaxed);
    atomic_store_explicit(&h->sum, 0, memory_order_relaxed);
    atomic_store_explicit(&h->min, INT64_MAX, memory_order_relaxed);
    atomic_store_explicit(&h->max, INT64_MIN, memory_order_relaxed);
}

pf_status pf_histogram_create(pf_histogram **out)
{
    PF_CHECK_ARG(out, "pf_histogram_create", "out is NULL");
    *out = NULL;
    pf_histogram *h = malloc(sizeof *h);
    if (!h) return pf_set_error(PF_ERR_NOMEM, "pf_histogram_create: out of host memory");
    reset_fields(h);
    *out = h;
    return PF_OK;
}

void pf_histogram_destroy(pf_histogram **h)
{
    if (!h || !*h) return;
    free(*h);
    *h = NULL;
}

void pf_histogram_record(pf_histogram *h, int64_t value_ns)
{
    if (!h) return;
    int64_t v = value_ns < 0 ? 0 : value_ns;
    /* Extremes first, then the bucket with release order: a reader that
     * sees the bucket's count (acquire) also sees min/max covering it, so a
     * quantile read during recording stays within [min, max]. */
    int64_t cur = atomic_load_explicit(&h->min, memory_order_relaxed);
    while (v < cur &&
           !atomic_compare_exchange_weak_explicit(&h->min, &cur, v, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
    cur = atomic_load_explicit(&h->max, memory_order_relaxed);
    while (v > cur &&
           !atomic_compare_exchange_weak_explicit(&h->max, &cur, v, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
    atomic_fetch_add_explicit(&h->sum, (uint64_t)v, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->buckets[bucket_of(v)], 1, memory_order_release);
    /* Count last: pf_histogram_mean() pairs it with the sum. */
    atomic_fetch_add_explicit(&h->count, 1, memory_order_release);
}

uint64_t pf_histogram_count(const pf_histogram *h)
{
    return h ? atomic_load_explicit(&((pf_histogram *)h)->count, memory_order_acquire) : 0;
}

double pf_histogram_mean(const pf_histogram *h)
{
    if (!h) return 0.0;
    pf_histogram *m = (pf_histogram *)h;
    uint64_t n = atomic_load_explicit(&m->count, memory_order_acquire);
    if (n == 0) return 0.0;
    uint64_t s = atomic_load_explicit(&m->sum, memory_order_relaxed);
    return (double)s / (double)n;
}

/* Estimate of the k-th smallest sample (0-based) from a bucket snapshot:
 * the first and last are the exact min and max; others are spread evenly
 * through their bucket (sample j of c at (j + 0.5) / c of its width), the
 * bucket's edges clamped to [min, max]. */
static double sample_estimate(const uint64_t *snap, uint64_t n, uint64_t k, double mn, double mx)
{
    if (k == 0) return mn;
    if (k >= n - 1) return mx;
    uint64_t before = 0;
    int b = 0;
    for (; b < NBUCKETS - 1; b++) {
        if (before + snap[b] > k) break;
        before += snap[b];
    }
    double lo, hi;
    bucket_bounds(b, &lo, &hi);
    if (b == NBUCKETS - 1) hi = mx;
    if (lo < mn) lo = mn;
    if (hi > mx) hi = mx;
    if (hi < lo) hi = lo;
    double v = lo + ((double)(k - before) + 0.5) / (double)snap[b] * (hi - lo);
    return v < mn ? mn : v > mx ? mx : v;
}

double pf_histogram_quantile(const pf_histogram *h, double q)
{
    if (!h) return 0.0;
    pf_histogram *m = (pf_histogram *)h;
    uint64_t snap[NBUCKETS];
    uint64_t n = 0;
    for (int i = 0; i < NBUCKETS; i++) {
        snap[i] = atomic_load_explicit(&m->buckets[i], memory_order_acquire);
        n += snap[i];
    }
    if (n == 0) return 0.0;
    int64_t mn = atomic_load_explicit(&m->min, memory_order_relaxed);
    int64_t mx = atomic_load_explicit(&m->max, memory_order_relaxed);
    if (mn > mx) return 0.0; /* a reset raced the snapshot */
    if (isnan(q)) q = 0.5;
    if (q <= 0.0) return (double)mn;
    if (q >= 1.0) return (double)mx;
    /* Rank q*(n-1) between samples k and k+1: interpolate their estimates.
     * Each is within a bucket width (4.4%) of its sample, so the mix is
     * within 4.4% of the same mix of the true samples. */
    double rank = q * (double)(n - 1);
    uint64_t k = (uint64_t)rank;
    double f = rank - (double)k;
    double a = sample_estimate(snap, n, k, (double)mn, (double)mx);
    if (f == 0.0 || k + 1 >= n) return a;
    double b = sample_estimate(snap, n, k + 1, (double)mn, (double)mx);
    return a + f * (b - a);
}

void pf_histogram_reset(pf_histogram *h)
{
    if (h) reset_fields(h);
}
