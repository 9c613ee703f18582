/* Private: how the CPU row loops are compiled. Include FIRST in a .c file
 * (before any other header), so the pragma covers every function after it.
 *
 * GCC's -O2 "very cheap" vectoriser cost model refuses most pixel and
 * tensor row loops; the dynamic model vectorises them, and clamps become
 * vector selects only when comparisons may be evaluated for every lane
 * (no-trapping-math: nothing here reads FP exception flags). Vector and
 * scalar IEEE operations round alike and contraction stays off (ISO C), so
 * no result changes.
 *
 * WIDE_CLONES marks a hot loop to be built also for AVX2 and AVX-512
 * (target_clones, chosen once at load time by the ifunc resolver): 2-4
 * lanes wider than the SSE2 baseline, the same bits. */
#ifndef PF_CORE_VECTORIZE_H
#define PF_CORE_VECTORIZE_H

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math", "tree-vectorize", "vect-cost-model=dynamic")
#endif

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define WIDE_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define WIDE_CLONES
#endif

#endif
