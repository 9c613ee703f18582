/* Minimal test harness: CHECK macros that count and report, a seeded RNG,
 * and a closing "N passed, N failed" line. A test file defines its cases as
 * static functions and calls them from main() through PF_RUN(). */
#ifndef PF_TEST_H
#define PF_TEST_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pixflow/pixflow.h"

static int pf_test_checks, pf_test_failed_checks, pf_test_passed, pf_test_failed;
static int pf_test_case_failed;

#define CHECK(cond) \
    do { \
        pf_test_checks++; \
        if (!(cond)) { \
            pf_test_failed_checks++; \
            pf_test_case_failed = 1; \
            fprintf(stderr, "  %s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        } \
    } while (0)

/* A status check that prints the library's message on failure. */
#define CHECK_OK(expr) \
    do { \
        pf_status st_ = (expr); \
        pf_test_checks++; \
        if (st_ != PF_OK) { \
            pf_test_failed_checks++; \
            pf_test_case_failed = 1; \
            fprintf(stderr, "  %s:%d: %s -> %s (%s)\n", __FILE__, __LINE__, #expr, \
                    pf_status_str(st_), pf_last_error()); \
        } \
    } while (0)

#define CHECK_EQ_INT(a, b) \
    do { \
        long long a_ = (long long)(a), b_ = (long long)(b); \
        pf_test_checks++; \
        if (a_ != b_) { \
            pf_test_failed_checks++; \
            pf_test_case_failed = 1; \
            fprintf(stderr, "  %s:%d: %s == %s failed: %lld vs %lld\n", __FILE__, __LINE__, \
                    #a, #b, a_, b_); \
        } \
    } while (0)

/* Stops the current case (after a failed precondition). Evaluates `cond`
 * once: it may have side effects (a parse, an allocation). */
#define REQUIRE(cond) \
    do { \
        int req_ok_ = !!(cond); \
        pf_test_checks++; \
        if (!req_ok_) { \
            pf_test_failed_checks++; \
            pf_test_case_failed = 1; \
            fprintf(stderr, "  %s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #cond); \
            return; \
        } \
    } while (0)

#define PF_RUN(fn) \
    do { \
        pf_test_case_failed = 0; \
        pf_clear_error(); \
        fn(); \
        if (pf_test_case_failed) { \
            pf_test_failed++; \
            fprintf(stderr, "FAIL %s\n", #fn); \
        } else { \
            pf_test_passed++; \
            printf("ok   %s\n", #fn); \
        } \
        fflush(stdout); \
    } while (0)

/* Prints the closing line and returns the process exit code. */
static inline int pf_test_finish(void)
{
    printf("%d passed, %d failed (%d checks)\n", pf_test_passed, pf_test_failed, pf_test_checks);
    return pf_test_failed ? 1 : 0;
}

/* xorshift64*: deterministic per seed; PF_TEST_SEED overrides the seed. */
static uint64_t pf_test_rng_state = 0x9E3779B97F4A7C15ull;
static inline void pf_test_seed(uint64_t seed)
{
    const char *env = getenv("PF_TEST_SEED");
    if (env) seed = strtoull(env, NULL, 0);
    pf_test_rng_state = seed ? seed : 1;
    printf("seed %" PRIu64 "\n", seed);
}
static inline uint64_t pf_test_rand(void)
{
    uint64_t x = pf_test_rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    pf_test_rng_state = x;
    return x * 0x2545F4914F6CDD1Dull;
}
/* Uniform in [lo, hi] inclusive. */
static inline int64_t pf_test_rand_range(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(pf_test_rand() % (uint64_t)(hi - lo + 1));
}
/* n random bytes, 8 per pf_test_rand(). */
static inline void pf_test_fill_random(void *p, size_t n)
{
    unsigned char *d = (unsigned char *)p;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t r = pf_test_rand();
        memcpy(d + i, &r, 8);
    }
    for (; i < n; i++) d[i] = (unsigned char)pf_test_rand();
}

/* Statistics snapshots, shared by the CPU and CUDA tests of the allocator,
 * pinned pool and graph cache. The struct is filled with a garbage pattern
 * first, so a field the library forgets to set reads as an absurd value
 * instead of a lucky 0, and the call's status is checked. CHECK is not
 * thread-safe: call these from the test's main thread. */
static inline pf_allocator_stats pf_test_allocator_stats(const pf_allocator *a)
{
    pf_allocator_stats s;
    memset(&s, 0xAB, sizeof s);
    CHECK_OK(pf_allocator_get_stats(a, &s));
    return s;
}
static inline pf_pinned_pool_stats pf_test_pinned_pool_stats(const pf_pinned_pool *p)
{
    pf_pinned_pool_stats s;
    memset(&s, 0xAB, sizeof s);
    CHECK_OK(pf_pinned_pool_get_stats(p, &s));
    return s;
}
static inline pf_graph_cache_stats pf_test_graph_cache_stats(const pf_graph_cache *gc)
{
    pf_graph_cache_stats s;
    memset(&s, 0xAB, sizeof s);
    CHECK_OK(pf_graph_cache_get_stats(gc, &s));
    return s;
}

/* A caching allocator on `dev` (NULL: the CPU device); NULL, with the
 * library's message on stderr, if it cannot be created. */
static inline pf_allocator *pf_test_allocator_create(pf_device *dev, const char *name,
                                                     pf_mem_domain domain, size_t cap)
{
    pf_allocator_params p = pf_allocator_params_default();
    p.device = dev;
    p.domain = domain;
    p.cap_bytes = cap;
    p.name = name;
    pf_allocator *a = NULL;
    if (pf_allocator_create(&p, &a) != PF_OK) fprintf(stderr, "  create: %s\n", pf_last_error());
    return a;
}

/* CUDA tests: exit 77 (CTest "skipped") when no GPU is usable here. */
static inline pf_device *pf_test_cuda_device_or_skip(void)
{
    pf_device *dev = NULL;
    if (pf_device_get(PF_DEVICE_CUDA, 0, &dev) != PF_OK) {
        printf("SKIP: no CUDA device (%s)\n", pf_last_error());
        exit(77);
    }
    return dev;
}

#endif
