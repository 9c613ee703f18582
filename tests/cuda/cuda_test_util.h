/* cuda_test_util.h: helpers shared by the CUDA tests (tests/cuda/test_*.c):
 * raw runtime allocations that end the test on failure (a test that cannot
 * get its buffers has nothing to check), random fills, byte comparisons that
 * say where data first differs, and a checked stream constructor.
 *
 * Header-only (everything static inline, so a test that uses part of it has
 * no unused-function warnings); CMake globs tests/cuda/test_*.c as tests and
 * leaves this file alone. */
#ifndef PF_CUDA_TEST_UTIL_H
#define PF_CUDA_TEST_UTIL_H

#include <cuda_runtime.h>

#include "pf_test.h"

#define MiB ((size_t)1 << 20)
/* What first_mismatch() and first_not() return when every byte matches. */
#define NOWHERE ((size_t)-1)

/* Device memory from cudaMalloc; exits the test if the runtime refuses. */
static inline void *dmalloc(size_t n)
{
    void *p = NULL;
    if (cudaMalloc(&p, n) != cudaSuccess) {
        fprintf(stderr, "cudaMalloc(%zu) failed\n", n);
        exit(1);
    }
    return p;
}

/* Page-locked host memory (portable across devices); free with hfree(p, 1). */
static inline unsigned char *hmalloc_pinned(size_t n)
{
    void *p = NULL;
    if (cudaHostAlloc(&p, n, cudaHostAllocPortable) != cudaSuccess) {
        fprintf(stderr, "cudaHostAlloc(%zu) failed\n", n);
        exit(1);
    }
    return p;
}

/* Ordinary host memory, zeroed so its pages are really mapped before a copy
 * is timed or checked; free with hfree(p, 0). */
static inline unsigned char *hmalloc_pageable(size_t n)
{
    unsigned char *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "malloc(%zu) failed\n", n);
        exit(1);
    }
    memset(p, 0, n);
    return p;
}

static inline unsigned char *hmalloc(size_t n, int pinned)
{
    return pinned ? hmalloc_pinned(n) : hmalloc_pageable(n);
}

static inline void hfree(void *p, int pinned)
{
    if (pinned) cudaFreeHost(p);
    else free(p);
}

/* n bytes from the seeded test RNG (pf_test_rand), 8 at a time. */
static inline void fill_random(unsigned char *p, size_t n) { pf_test_fill_random(p, n); }

/* Index of the first byte where a and b differ, or NOWHERE. */
static inline size_t first_mismatch(const unsigned char *a, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return i;
    return NOWHERE;
}

/* Index of the first byte of a that is not v, or NOWHERE. */
static inline size_t first_not(const unsigned char *a, unsigned char v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != v) return i;
    return NOWHERE;
}

/* A stream on `d` with `priority` (clamped by the library); the creation is
 * a CHECK_OK, so a refusal fails the running case and returns NULL. */
static inline pf_stream *make_stream(pf_device *d, int priority)
{
    pf_stream_params sp = pf_stream_params_default();
    sp.device = d;
    sp.priority = priority;
    pf_stream *s = NULL;
    CHECK_OK(pf_stream_create(&sp, &s));
    return s;
}

#endif
