/* bench_alloc: per-frame allocation cost, caching allocator vs the raw
 * runtime (the backend's mem_alloc/mem_free: cudaMalloc/cudaFree on CUDA,
 * aligned malloc/free on the CPU).
 *
 *   bench_alloc [--device SPEC] [--iters N] [--json]
 *
 * Each case times N alloc+free pairs after a warm-up and reports the median
 * (and p99) in microseconds. "cached" allocates with no stream (host
 * ordering), "cached+stream" on a stream, which adds recording an event at
 * every free (the realistic pipeline case). The mixed case draws sizes from
 * 4 KiB to 96 MiB (log-uniform, fixed seed), the same sequence for every path.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_common.h"
#include "device/backend.h"
#include "pixflow/pixflow.h"

#define PROG "bench_alloc"

typedef struct bench_case {
    const char *name;
    size_t bytes;       /* 0: mixed sizes */
} bench_case;

static const bench_case cases[] = {
    {"1080p_rgb", (size_t)1920 * 1080 * 3},
    {"4k_rgb", (size_t)3840 * 2160 * 3},
    {"8k_equirect_rgb", (size_t)7680 * 3840 * 3},
    {"mixed", 0},
};
#define NCASES (sizeof cases / sizeof cases[0])

typedef struct timing {
    double median_us, p99_us;
} timing;

/* ns: one duration per iteration, in nanoseconds (whole numbers, exact in a
 * double); sorted by the call. */
static timing summarize(double *ns, int n)
{
    timing t;
    t.median_us = bench_median(ns, n) / 1e3;
    int i99 = (int)((double)(n - 1) * 0.99);
    t.p99_us = ns[i99] / 1e3;
    return t;
}

static uint64_t rng = 0x853C49E6748FEA9Bull;

/* Sizes for `n` iterations: fixed, or log-uniform in [4 KiB, 96 MiB]. */
static void fill_sizes(size_t *sizes, int n, size_t fixed)
{
    rng = 0x853C49E6748FEA9Bull;
    for (int i = 0; i < n; i++) {
        if (fixed) {
            sizes[i] = fixed;
            continue;
        }
        double u = (double)(bench_rand(&rng) >> 11) / 9007199254740992.0;
        double lo = 12.0, hi = 26.585; /* log2(4 KiB), log2(96 MiB) */
        sizes[i] = (size_t)exp2(lo + u * (hi - lo));
    }
}

static int time_raw(pf_device *dev, const size_t *sizes, int warm, int n, double *ns)
{
    for (int i = -warm; i < n; i++) {
        size_t sz = sizes[(i + warm) % n];
        void *p = NULL;
        int64_t t0 = pf_time_ns();
        pf_status st = dev->be->mem_alloc(dev, PF_MEM_DEVICE, sz, &p);
        if (st == PF_OK) dev->be->mem_free(dev, PF_MEM_DEVICE, p);
        int64_t t1 = pf_time_ns();
        if (st != PF_OK) {
            fprintf(stderr, PROG ": raw alloc of %zu bytes: %s\n", sz, pf_last_error());
            return -1;
        }
        if (i >= 0) ns[i] = (double)(t1 - t0);
    }
    return 0;
}

static int time_cached(pf_allocator *a, pf_stream *s, const size_t *sizes, int warm, int n,
                       double *ns)
{
    for (int i = -warm; i < n; i++) {
        size_t sz = sizes[(i + warm) % n];
        pf_buffer *b = NULL;
        int64_t t0 = pf_time_ns();
        pf_status st = pf_allocator_alloc(a, sz, s, &b);
        pf_buffer_unref(&b);
        int64_t t1 = pf_time_ns();
        if (st != PF_OK) {
            fprintf(stderr, PROG ": cached alloc of %zu bytes: %s\n", sz, pf_last_error());
            return -1;
        }
        if (i >= 0) ns[i] = (double)(t1 - t0);
    }
    return 0;
}

int main(int argc, char **argv)
{
    bench_args args = {.prog = PROG, .iters = 2000, .max_iters = 10000000,
                       .iters_help = "timed alloc+free pairs per case and path"};
    pf_device *dev = NULL;
    int rc = bench_start(argc, argv, &args, &dev);
    if (rc >= 0) return rc;
    const int iters = args.iters;

    pf_stream_params sp = pf_stream_params_default();
    sp.device = dev;
    pf_stream *stream = NULL;
    if (pf_stream_create(&sp, &stream) != PF_OK) return bench_fail(PROG, "pf_stream_create");
    pf_allocator_params ap = pf_allocator_params_default();
    ap.device = dev;
    ap.name = "bench";
    pf_allocator *alloc = NULL;
    if (pf_allocator_create(&ap, &alloc) != PF_OK) return bench_fail(PROG, "pf_allocator_create");

    const int warm = iters < 100 ? iters : 100;
    size_t *sizes = malloc(sizeof *sizes * (size_t)iters);
    double *ns = malloc(sizeof *ns * (size_t)iters);
    if (!sizes || !ns) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    timing raw[NCASES], cached[NCASES], streamed[NCASES];
    rc = 0;
    for (size_t c = 0; c < NCASES && rc == 0; c++) {
        fill_sizes(sizes, iters, cases[c].bytes);
        if (time_raw(dev, sizes, warm, iters, ns)) rc = 1;
        else raw[c] = summarize(ns, iters);
        /* Each cached path starts from an empty cache, so both see the same
         * misses (the mixed case meets classes the warm-up did not). */
        if (!rc && time_cached(alloc, NULL, sizes, warm, iters, ns)) rc = 1;
        else if (!rc) cached[c] = summarize(ns, iters);
        pf_allocator_trim(alloc);
        if (!rc && time_cached(alloc, stream, sizes, warm, iters, ns)) rc = 1;
        else if (!rc) streamed[c] = summarize(ns, iters);
        pf_allocator_trim(alloc);
        pf_device_synchronize(dev);
    }
    pf_allocator_stats st;
    pf_allocator_get_stats(alloc, &st);
    if (rc == 0) {
        const pf_device_props *props = pf_device_props_get(dev);
        if (args.json) {
            printf("{\"bench\":\"alloc\",\"device\":\"%s\",\"device_name\":\"",
                   pf_device_spec(dev));
            bench_json_str(props->name);
            printf("\",\"iters\":%d,\"unit\":\"us per alloc+free (median)\",\"cases\":[", iters);
            for (size_t c = 0; c < NCASES; c++)
                printf("%s{\"name\":\"%s\",\"bytes\":%zu,\"raw_us\":%.3f,\"raw_p99_us\":%.3f,"
                       "\"cached_us\":%.3f,\"cached_p99_us\":%.3f,\"cached_stream_us\":%.3f,"
                       "\"cached_stream_p99_us\":%.3f,\"speedup\":%.2f,\"speedup_stream\":%.2f}",
                       c ? "," : "", cases[c].name, cases[c].bytes, raw[c].median_us,
                       raw[c].p99_us, cached[c].median_us, cached[c].p99_us,
                       streamed[c].median_us, streamed[c].p99_us,
                       raw[c].median_us / cached[c].median_us,
                       raw[c].median_us / streamed[c].median_us);
            printf("],\"allocator\":{\"requests\":%llu,\"cache_hits\":%llu,\"runtime_allocs\":%llu,"
                   "\"runtime_frees\":%llu,\"peak_bytes_reserved\":%zu}}\n",
                   (unsigned long long)st.requests, (unsigned long long)st.cache_hits,
                   (unsigned long long)st.runtime_allocs, (unsigned long long)st.runtime_frees,
                   st.peak_bytes_reserved);
        } else {
            printf("bench_alloc on %s (%s), %d iterations per path, median (p99) us per "
                   "alloc+free\n\n",
                   pf_device_spec(dev), props->name, iters);
            printf("%-16s %12s %20s %20s %20s %9s\n", "case", "bytes", "raw runtime", "cached",
                   "cached+stream", "speedup");
            for (size_t c = 0; c < NCASES; c++) {
                char b[32], r[32], k[32], s[32];
                if (cases[c].bytes) snprintf(b, sizeof b, "%zu", cases[c].bytes);
                else snprintf(b, sizeof b, "4K..96M");
                snprintf(r, sizeof r, "%.2f (%.2f)", raw[c].median_us, raw[c].p99_us);
                snprintf(k, sizeof k, "%.3f (%.3f)", cached[c].median_us, cached[c].p99_us);
                snprintf(s, sizeof s, "%.3f (%.3f)", streamed[c].median_us, streamed[c].p99_us);
                printf("%-16s %12s %20s %20s %20s %8.1fx\n", cases[c].name, b, r, k, s,
                       raw[c].median_us / streamed[c].median_us);
            }
            printf("\nspeedup = raw / cached+stream. allocator: %llu requests, %llu cache hits, "
                   "%llu runtime allocs\n",
                   (unsigned long long)st.requests, (unsigned long long)st.cache_hits,
                   (unsigned long long)st.runtime_allocs);
        }
    }
    free(sizes);
    free(ns);
    pf_allocator_destroy(&alloc);
    pf_stream_destroy(&stream);
    return rc;
}
