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

/* Stops the current case (after a failed precondition). */
#define REQUIRE(cond) \
    do { \
        CHECK(cond); \
        if (!(cond)) return; \
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
