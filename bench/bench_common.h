/* bench_common.h: what every bench/bench_*.c program shares - the command
 * line (--device SPEC, --iters N, --json, --help) and the device it names,
 * the median of a sample, JSON string escaping and the one-line failure
 * report.
 *
 * Header-only on purpose: the bench CMake builds every bench/bench_*.c as a
 * program of its own, so a bench_common.c would be taken for a benchmark.
 * Everything here is static inline, so a program that uses only part of it
 * compiles without unused-function warnings. */
#ifndef PF_BENCH_COMMON_H
#define PF_BENCH_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pixflow/pixflow.h"

/* The options every bench takes. Fill prog, iters_help and the iteration
 * default and limit before bench_start(); it sets the rest. */
typedef struct bench_args {
    const char *prog;       /* program name, prefixes every message */
    const char *iters_help; /* what one iteration is, for --help */
    int iters;              /* in: the default; out: the value asked for */
    long max_iters;         /* --iters accepts 1..max_iters */
    const char *spec;       /* --device SPEC, NULL: $PIXFLOW_DEVICE or auto */
    int json;               /* --json */
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

/* bench_parse_args(), then selects the device --device names into *dev.
 * Returns -1 to go on with the run, or the exit code to return now. */
static inline int bench_start(int argc, char **argv, bench_args *a, pf_device **dev)
{
    int rc = bench_parse_args(argc, argv, a);
    if (rc >= 0) return rc;
    if (pf_device_select(a->spec, dev) != PF_OK) return bench_fail(a->prog, "device");
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

#endif
