/* Private: which x86 vector extensions the CPU paths may use.
 *
 * The SIMD kernels (src/cpu/simd_*.c) are compiled for AVX2 or AVX-512
 * with per-function target attributes and called only when
 * pf_cpu_simd_level() says the CPU and the OS support them, so the library
 * still runs on any x86-64 (and on other architectures, where the level is
 * always PF_SIMD_NONE and the kernels are not built).
 *
 * The level is detected once (CPUID + XGETBV: the OS must save the YMM,
 * resp. ZMM state) and may be capped:
 *   - by the environment variable PF_CPU_SIMD=none|avx2|avx512, read once at
 *     the first query (benchmarks: before/after on the same machine);
 *   - by pf_cpu_simd_cap() (tests: the SIMD path against the scalar one in
 *     one process).
 * Thread-safe: the level is an atomic int. */
#ifndef PF_CORE_CPU_FEATURES_H
#define PF_CORE_CPU_FEATURES_H

enum {
    PF_SIMD_NONE = 0,   /* scalar / compiler-vectorised SSE2 paths */
    PF_SIMD_AVX2 = 1,   /* AVX2 (FMA present too, though the kernels use none) */
    PF_SIMD_AVX512 = 2, /* AVX-512 F, BW, DQ, VL */
};

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define PF_HAVE_X86_SIMD 1
#else
#define PF_HAVE_X86_SIMD 0
#endif

/* The level the CPU paths use now: min(detected, environment cap, cap). */
int pf_cpu_simd_level(void);

/* The detected level, before any cap. */
int pf_cpu_simd_detected(void);

/* Caps the level at `level` (PF_SIMD_*; a negative value removes the cap)
 * and returns the previous cap (-1: none). For tests; process-wide. */
int pf_cpu_simd_cap(int level);

/* AVX-512 VBMI (byte permutes) on top of PF_SIMD_AVX512; detected once. */
int pf_cpu_has_avx512vbmi(void);

/* "none", "avx2", "avx512". */
const char *pf_cpu_simd_name(int level);

#endif
