/* bench_common.h: what every bench/bench_*.c program shares - the command
 * line (--device SPEC, --iters N, --json, --help) and the device it names,
 * the median of a sample, JSON string escaping and the one-line failure
 * report - and what the pf_ops benchmarks (bench_mask, bench_resize,
 * bench_composite, bench_reproject, bench_preprocess) share: their stream,
 * events, context and allocator, timing between two events, the copy
 * bandwidth their floors are measured against, the lines that report it, and
 * the generated source patterns their PyTorch peers reproduce.
 *
 * Header-only on purpose: the bench CMake builds every bench/bench_*.c as a
 * program of its own, so a bench_common.c would be taken for a benchmark.
 * Everything here is static inline, so a program that uses only part of it
 * compiles without unused-function warnings. */
#ifndef PF_BENCH_COMMON_H
#define PF_BENCH_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pixflow/pixflow.h"

/* The options every bench takes. Fill prog, iters_help and the iteration
 * default and limit (and cpu_iters) before bench_start(); it sets the rest. */
typedef struct bench_args {
    const char *prog;       /* program name, prefixes every message */
    const char *iters_help; /* what one iteration is, for --help */
    int iters;              /* in: the default; out: the value asked for */
    long max_iters;         /* --iters accepts 1..max_iters */
    int cpu_iters;          /* nonzero: bench_start's default on the CPU device */
    const char *spec;       /* --device SPEC, NULL: $PIXFLOW_DEVICE or auto */
    int json;               /* --json */
    int iters_given;        /* --iters was on the command line */
} bench_args;

static inline void bench_usage(const bench_args *a, int default_iters, FILE *f)
{
    fprintf(f,
            "usage: %s [--device SPEC] [--iters N] [--json]\n"
            "  --device SPEC  auto, cpu, cuda, cuda:N (default: $PIXFLOW_DEVICE or auto)\n"
            "  --iters N      %s (default %d)\n"
            "  --json         print one JSON object instead of a table\n",
            a->prog, a->iters_help, default_iters);
}

/* Parses argv into *a. Returns -1 to go on with the run, or the exit code to
 * return now: 0 after --help, 2 after a bad argument (message on stderr). */
static inline int bench_parse_args(int argc, char **argv, bench_args *a)
{
    const int default_iters = a->iters;
    a->spec = NULL;
    a->json = 0;
    a->iters_given = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            a->spec = argv[++i];
        } else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
            char *end = NULL;
            long v = strtol(argv[++i], &end, 10);
            if (!end || *end || v < 1 || v > a->max_iters) {
                fprintf(stderr, "%s: bad --iters '%s' (1..%ld)\n", a->prog, argv[i],
                        a->max_iters);
                return 2;
            }
            a->iters = (int)v;
            a->iters_given = 1;
        } else if (!strcmp(argv[i], "--json")) {
            a->json = 1;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            bench_usage(a, default_iters, stdout);
            return 0;
        } else {
            fprintf(stderr, "%s: unknown argument '%s'\n", a->prog, argv[i]);
            bench_usage(a, default_iters, stderr);
            return 2;
        }
    }
    return -1;
}

/* Reports a failed library call with the library's message; returns the
 * program's exit code (1). */
static inline int bench_fail(const char *prog, const char *what)
{
    fprintf(stderr, "%s: %s: %s\n", prog, what, pf_last_error());
    return 1;
}

/* bench_parse_args(), then selects the device --device names into *dev;
 * without --iters, a->iters becomes a->cpu_iters (when set) on the CPU device.
 * Returns -1 to go on with the run, or the exit code to return now. */
static inline int bench_start(int argc, char **argv, bench_args *a, pf_device **dev)
{
    int rc = bench_parse_args(argc, argv, a);
    if (rc >= 0) return rc;
    if (pf_device_select(a->spec, dev) != PF_OK) return bench_fail(a->prog, "device");
    if (!a->iters_given && a->cpu_iters && pf_device_get_type(*dev) == PF_DEVICE_CPU)
        a->iters = a->cpu_iters;
    return -1;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v[0..n) in place (so v[0] is then the minimum, v[k] the k-th
 * smallest) and returns its median. n >= 1. */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* xorshift64*: the next pseudo-random number of the sequence *state holds
 * (nonzero), for generated inputs that do not depend on the C library. */
static inline uint64_t bench_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* Prints s as the body of a JSON string (escapes quotes, backslashes and
 * control characters); the caller prints the surrounding quotes. */
static inline void bench_json_str(const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
}

/* The pf_ops benchmarks ---------------------------------------------------------------- */

/* The copy the floors are measured against: 256 MiB, device to device (on
 * the CPU device a host memcpy), counting bytes read + written. */
#define BENCH_COPY_BYTES ((size_t)256 << 20)

/* What a run on one device uses: a stream, two events that time the work
 * between them, a pf_ops context on the stream and an allocator of the
 * device's memory. */
typedef struct bench_env {
    const char *prog;
    pf_device *dev;
    const pf_device_props *props;
    int is_cpu;
    pf_stream *s;
    pf_event *e0, *e1;
    pf_ops *ops;
    pf_allocator *alloc; /* named after the program */
} bench_env;

/* Creates them on `dev`. Returns 0, or the exit code after the message. */
static inline int bench_env_open(bench_env *b, const char *prog, pf_device *dev)
{
    memset(b, 0, sizeof *b);
    b->prog = prog;
    b->dev = dev;
    b->props = pf_device_props_get(dev);
    b->is_cpu = pf_device_get_type(dev) == PF_DEVICE_CPU;
    pf_stream_params sp = pf_stream_params_default();
    sp.device = dev;
    if (pf_stream_create(&sp, &b->s) != PF_OK) return bench_fail(prog, "pf_stream_create");
    if (pf_event_create(dev, &b->e0) != PF_OK || pf_event_create(dev, &b->e1) != PF_OK)
        return bench_fail(prog, "pf_event_create");
    pf_ops_params op = pf_ops_params_default();
    op.stream = b->s;
    if (pf_ops_create(&op, &b->ops) != PF_OK) return bench_fail(prog, "pf_ops_create");
    pf_allocator_params ap = pf_allocator_params_default();
    ap.device = dev;
    ap.name = prog;
    if (pf_allocator_create(&ap, &b->alloc) != PF_OK)
        return bench_fail(prog, "pf_allocator_create");
    return 0;
}

/* Waits for the stream, then destroys what bench_env_open created (release
 * the buffers of the allocator first). */
static inline void bench_env_close(bench_env *b)
{
    if (b->s) pf_stream_synchronize(b->s);
    pf_allocator_destroy(&b->alloc);
    pf_ops_destroy(&b->ops);
    pf_event_destroy(&b->e0);
    pf_event_destroy(&b->e1);
    pf_stream_destroy(&b->s);
}

/* bench_start(), then bench_env_open() on the device it selected. Returns
 * -1 to go on with the run, or the exit code to return now. */
static inline int bench_open(int argc, char **argv, bench_args *a, bench_env *b)
{
    pf_device *dev = NULL;
    memset(b, 0, sizeof *b);
    int rc = bench_start(argc, argv, a, &dev);
    if (rc >= 0) return rc;
    rc = bench_env_open(b, a->prog, dev);
    return rc ? rc : -1;
}

/* Timing of work queued on b->s between the two calls: e0 before, e1 after,
 * then waits for e1; *ms = the time between them. Each returns 0, or the
 * exit code after the message. */
static inline int bench_timer_start(const bench_env *b)
{
    if (pf_event_record(b->e0, b->s) != PF_OK) return bench_fail(b->prog, "pf_event_record");
    return 0;
}

static inline int bench_timer_stop(const bench_env *b, float *ms)
{
    *ms = 0;
    if (pf_event_record(b->e1, b->s) != PF_OK) return bench_fail(b->prog, "pf_event_record");
    if (pf_event_synchronize(b->e1) != PF_OK) return bench_fail(b->prog, "pf_event_synchronize");
    if (pf_event_elapsed_ms(b->e0, b->e1, ms) != PF_OK)
        return bench_fail(b->prog, "pf_event_elapsed_ms");
    return 0;
}

/* Times copies of BENCH_COPY_BYTES from src to dst (memory of b->dev): two
 * untimed, then `iters` each alone between the events. *median_ms = their
 * median, *gbps = read + write bytes per second at that median, in GB/s.
 * scratch holds >= iters values. Returns 0, or the exit code. */
static inline int bench_time_copies(const bench_env *b, void *dst, const void *src, int iters,
                                    double *scratch, double *median_ms, double *gbps)
{
    for (int i = -2; i < iters; i++) {
        float ms = 0;
        int rc = bench_timer_start(b);
        if (!rc && pf_memcpy_async(b->s, dst, src, BENCH_COPY_BYTES) != PF_OK)
            rc = bench_fail(b->prog, "copy");
        if (!rc) rc = bench_timer_stop(b, &ms);
        if (rc) return rc;
        if (i >= 0) scratch[i] = ms;
    }
    *median_ms = bench_median(scratch, iters);
    *gbps = 2.0 * (double)BENCH_COPY_BYTES / (*median_ms * 1e-3) / 1e9;
    return 0;
}

/* bench_time_copies between two buffers of b->alloc, both written first (so
 * no page is first touched in a timed copy) and released after. */
static inline int bench_copy_bandwidth(const bench_env *b, int iters, double *scratch,
                                       double *gbps)
{
    pf_buffer *ca = NULL, *cb = NULL;
    double median_ms = 0;
    int rc = 0;
    if (pf_allocator_alloc(b->alloc, BENCH_COPY_BYTES, b->s, &ca) != PF_OK ||
        pf_allocator_alloc(b->alloc, BENCH_COPY_BYTES, b->s, &cb) != PF_OK)
        rc = bench_fail(b->prog, "copy buffers");
    else if (pf_memset_async(b->s, pf_buffer_data(ca), 0x5A, BENCH_COPY_BYTES) != PF_OK ||
             pf_memset_async(b->s, pf_buffer_data(cb), 0x00, BENCH_COPY_BYTES) != PF_OK)
        rc = bench_fail(b->prog, "pf_memset_async");
    else
        rc = bench_time_copies(b, pf_buffer_data(cb), pf_buffer_data(ca), iters, scratch,
                               &median_ms, gbps);
    pf_buffer_unref(&ca);
    pf_buffer_unref(&cb);
    return rc;
}

/* Seconds an ideal kernel needs to move `bytes` at the copy bandwidth: the
 * floor the benchmarks compare their medians with. */
static inline double bench_floor_s(double bytes, double gbps) { return bytes / (gbps * 1e9); }

/* "copy bandwidth (device-to-device 256 MiB, read + write): 2900.0 GB/s",
 * without a newline. */
static inline void bench_print_copy(const bench_env *b, double gbps)
{
    printf("copy bandwidth (%s 256 MiB, read + write): %.1f GB/s",
           b->is_cpu ? "host memcpy" : "device-to-device", gbps);
}

/* "50 frames per op after 5 warm-up, each alone between two events", then
 * an empty line. */
static inline void bench_print_method(int iters, const char *what, int warm)
{
    printf("%d %s after %d warm-up, each alone between two events\n\n", iters, what, warm);
}

/* Opens the --json object: {"bench":"<bench>","impl":"pixflow","device":
 * "<spec>","device_name":"<name>" - the caller goes on with ,"key":... */
static inline void bench_json_begin(const bench_env *b, const char *bench)
{
    printf("{\"bench\":\"%s\",\"impl\":\"pixflow\",\"device\":\"%s\",\"device_name\":\"", bench,
           pf_device_spec(b->dev));
    bench_json_str(b->props->name);
    putchar('"');
}

/* Generated sources: integer triangle waves that the PyTorch peers
 * (bench/peer_torch_*.py) reproduce bit for bit. */

/* Triangle wave of period p (even) over 0..255, integer-exact. */
static inline int bench_tri(int t, int p) { return abs((t % p) - p / 2) * 510 / p; }

/* An RGB24 frame: R = tri(x + 64 v, 512), G = tri(y + 32 v, 256),
 * B = tri(x + 2 y, v ? 640 : 1536) for variant v. Variant 0's periods
 * divide 7680, so on an equirect of that width it is continuous across the
 * longitude wrap. */
static inline void bench_fill_rgb(pf_frame *f, int variant)
{
    for (int y = 0; y < f->height; y++) {
        uint8_t *row = f->data[0] + (size_t)y * f->stride[0];
        for (int x = 0; x < f->width; x++) {
            row[3 * x + 0] = (uint8_t)bench_tri(x + 64 * variant, 512);
            row[3 * x + 1] = (uint8_t)bench_tri(y + 32 * variant, 256);
            row[3 * x + 2] = (uint8_t)bench_tri(x + 2 * y, variant ? 640 : 1536);
        }
    }
}

/* An NV12 frame: Y = tri(x + y, 512), U = tri(x, 256), V = tri(y, 128) (in
 * chroma coordinates); `limited` maps them into 16..235 (Y, as
 * 16 + v * 219 / 255) and 16..240 (chroma, 16 + v * 224 / 255). */
static inline void bench_fill_nv12(pf_frame *f, int limited)
{
    for (int y = 0; y < f->height; y++)
        for (int x = 0; x < f->width; x++) {
            int v = bench_tri(x + y, 512);
            f->data[0][(size_t)y * f->stride[0] + (size_t)x] =
                (uint8_t)(limited ? 16 + v * 219 / 255 : v);
        }
    for (int y = 0; y < (f->height + 1) / 2; y++)
        for (int x = 0; x < (f->width + 1) / 2; x++) {
            uint8_t *uv = f->data[1] + (size_t)y * f->stride[1] + 2 * (size_t)x;
            int u = bench_tri(x, 256), v = bench_tri(y, 128);
            uv[0] = (uint8_t)(limited ? 16 + u * 224 / 255 : u);
            uv[1] = (uint8_t)(limited ? 16 + v * 224 / 255 : v);
        }
}

#endif
