/* SVG plots for `pixflow bench --plot DIR`: latency over the iterations and
 * its histogram, and a batch sweep's curve. Plain SVG 1.1 a browser opens;
 * no library. Public API only (none needed). Also the statistics the bench
 * subcommands share. */
#ifndef PF_TOOLS_BENCH_PLOT_H
#define PF_TOOLS_BENCH_PLOT_H

#include <stdbool.h>
#include <stddef.h>

/* Writes DIR/NAME.svg: values[i] (ms) against i, with a p50 and a p99 line.
 * False with a message on stderr ("pixflow bench: ...") on an I/O error. */
/* qsort comparator of doubles, ascending. */
int bench_cmp_double(const void *a, const void *b);
/* The q-quantile (0..1) of n sorted values, nearest rank; NAN when n is 0. */
double bench_quantile(const double *sorted, size_t n, double q);

bool bench_plot_series(const char *dir, const char *name, const char *title, const double *v,
                       int n, double p50, double p99);
/* DIR/NAME.svg: a histogram of values (ms) in `bins` bins. */
bool bench_plot_histogram(const char *dir, const char *name, const char *title, const double *v,
                          int n, int bins);
/* DIR/NAME.svg: y[i] against x[i] (a sweep: throughput against batch), with
 * a second series y2 (p99 latency, right axis) when y2 is not NULL. */
bool bench_plot_curve(const char *dir, const char *name, const char *title, const char *xlabel,
                      const char *ylabel, const char *y2label, const double *x, const double *y,
                      const double *y2, int n);

#endif
