/* CPU vector extension detection (cpu_features.h). CPUID and XGETBV are read
 * directly rather than through __builtin_cpu_supports, which clang 14
 * rejects for some features (the fuzz builds use clang). */
#include "cpu_features.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if PF_HAVE_X86_SIMD
#include <cpuid.h>
#endif

static atomic_int g_detected = -1; /* -1: not yet */
static atomic_int g_env_cap = -2;  /* -2: not read yet, -1: none */
static atomic_int g_cap = -1;      /* -1: none */

static int detect(void)
{
#if PF_HAVE_X86_SIMD
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return PF_SIMD_NONE;
    const unsigned osxsave = 1u << 27, avx = 1u << 28, fma = 1u << 12;
    if ((c & (osxsave | avx | fma)) != (osxsave | avx | fma)) return PF_SIMD_NONE;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    if ((lo & 6u) != 6u) return PF_SIMD_NONE; /* XMM and YMM state */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return PF_SIMD_NONE;
    const unsigned avx2 = 1u << 5, f = 1u << 16, dq = 1u << 17, bw = 1u << 30, vl = 1u << 31;
    if (!(b & avx2)) return PF_SIMD_NONE;
    /* opmask, ZMM_Hi256 and Hi16_ZMM state too for AVX-512 */
    if ((b & (f | dq | bw | vl)) == (f | dq | bw | vl) && (lo & 0xe0u) == 0xe0u)
        return PF_SIMD_AVX512;
    return PF_SIMD_AVX2;
#else
    return PF_SIMD_NONE;
#endif
}

static atomic_int g_vbmi = -1;

int pf_cpu_has_avx512vbmi(void)
{
    int v = atomic_load(&g_vbmi);
    if (v < 0) {
        v = 0;
#if PF_HAVE_X86_SIMD
        unsigned a, b, c, d;
        if (pf_cpu_simd_detected() >= PF_SIMD_AVX512 && __get_cpuid_count(7, 0, &a, &b, &c, &d))
            v = (c >> 1) & 1u; /* CPUID.7.0:ECX bit 1 */
#endif
        atomic_store(&g_vbmi, v);
    }
    return v;
}

static int parse_level(const char *s)
{
    if (!s || !*s) return -1;
    if (!strcmp(s, "none") || !strcmp(s, "off") || !strcmp(s, "0")) return PF_SIMD_NONE;
    if (!strcmp(s, "avx2")) return PF_SIMD_AVX2;
    return -1; /* "avx512" or anything else: no cap */
}

int pf_cpu_simd_detected(void)
{
    int v = atomic_load(&g_detected);
    if (v < 0) {
        v = detect();
        atomic_store(&g_detected, v);
    }
    return v;
}

int pf_cpu_simd_level(void)
{
    int v = pf_cpu_simd_detected();
    int env = atomic_load(&g_env_cap);
    if (env == -2) {
        env = parse_level(getenv("PF_CPU_SIMD"));
        atomic_store(&g_env_cap, env);
    }
    if (env >= 0 && env < v) v = env;
    const int cap = atomic_load(&g_cap);
    if (cap >= 0 && cap < v) v = cap;
    return v;
}

int pf_cpu_simd_cap(int level)
{
    return atomic_exchange(&g_cap, level < 0 ? -1 : level);
}

const char *pf_cpu_simd_name(int level)
{
    switch (level) {
    case PF_SIMD_AVX512: return "avx512";
    case PF_SIMD_AVX2: return "avx2";
    default: return "none";
    }
}
