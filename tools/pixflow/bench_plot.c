/* SVG plots for `pixflow bench` (bench_plot.h). Each plot is a 720x360
 * canvas: a frame, 5 labelled ticks per axis, the data as a polyline or
 * bars. Files are written through a temporary name and renamed. */
#define _POSIX_C_SOURCE 200809L

#include "bench_plot.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PW 720.0
#define PH 360.0
#define ML 70.0 /* margins */
#define MR 70.0
#define MT 40.0
#define MB 50.0

typedef struct plot {
    FILE *f;
    char path[4096], tmp[4200];
} plot;

static bool open_plot(plot *p, const char *dir, const char *name, const char *title)
{
    snprintf(p->path, sizeof p->path, "%s/%s.svg", dir, name);
    snprintf(p->tmp, sizeof p->tmp, "%s.tmp", p->path);
    p->f = fopen(p->tmp, "w");
    if (!p->f) {
        fprintf(stderr, "pixflow bench: %s: %s\n", p->tmp, strerror(errno));
        return false;
    }
    fprintf(p->f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "font-family=\"sans-serif\" font-size=\"11\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<text x=\"%.0f\" y=\"22\" font-size=\"14\">",
            PW, PH, ML);
    for (const char *c = title; *c; c++) { /* escape for XML */
        if (*c == '<') fputs("&lt;", p->f);
        else if (*c == '>') fputs("&gt;", p->f);
        else if (*c == '&') fputs("&amp;", p->f);
        else fputc(*c, p->f);
    }
    fprintf(p->f, "</text>\n<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" "
                  "fill=\"none\" stroke=\"#888\"/>\n",
            ML, MT, PW - ML - MR, PH - MT - MB);
    return true;
}

static bool close_plot(plot *p)
{
    fprintf(p->f, "</svg>\n");
    bool ok = !ferror(p->f);
    if (fclose(p->f) != 0) ok = false;
    if (ok && rename(p->tmp, p->path) != 0) ok = false;
    if (!ok) {
        fprintf(stderr, "pixflow bench: writing %s: %s\n", p->path, strerror(errno));
        remove(p->tmp);
    }
    return ok;
}

static double sx(double x, double x0, double x1)
{
    return ML + (x1 > x0 ? (x - x0) / (x1 - x0) : 0.5) * (PW - ML - MR);
}

static double sy(double y, double y0, double y1)
{
    return PH - MB - (y1 > y0 ? (y - y0) / (y1 - y0) : 0.5) * (PH - MT - MB);
}

/* Ticks and labels: x axis below, y axis left (or right). */
static void axes(plot *p, double x0, double x1, double y0, double y1, const char *xl,
                 const char *yl, bool right, const char *color)
{
    for (int k = 0; k <= 4; k++) {
        double yv = y0 + (y1 - y0) * k / 4, y = sy(yv, y0, y1);
        double xt = right ? PW - MR + 4 : ML - 4;
        fprintf(p->f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" fill=\"%s\">%.3g</text>\n",
                xt, y + 4, right ? "start" : "end", color, yv);
        if (!right)
            fprintf(p->f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#eee\"/>\n",
                    ML, y, PW - MR, y);
        if (right || !xl) continue;
        double xv = x0 + (x1 - x0) * k / 4;
        fprintf(p->f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%.4g</text>\n",
                sx(xv, x0, x1), PH - MB + 16, xv);
    }
    if (xl)
        fprintf(p->f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n",
                (ML + PW - MR) / 2, PH - 12, xl);
    fprintf(p->f, "<text transform=\"translate(%.0f,%.0f) rotate(-90)\" text-anchor=\"middle\" "
                  "fill=\"%s\">%s</text>\n",
            right ? PW - 14 : 16.0, (MT + PH - MB) / 2, color, yl);
}

static void range(const double *v, int n, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int i = 0; i < n; i++) {
        if (!isfinite(v[i])) continue;
        if (v[i] < *lo) *lo = v[i];
        if (v[i] > *hi) *hi = v[i];
    }
    if (!isfinite(*lo)) *lo = 0, *hi = 1;
    if (*lo > 0 && *lo < *hi * 0.5) *lo = 0; /* start at zero unless the range is narrow */
    if (*hi <= *lo) *hi = *lo + 1;
}

static void polyline(plot *p, const double *x, const double *y, int n, double x0, double x1,
                     double y0, double y1, const char *color)
{
    fprintf(p->f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.2\" points=\"", color);
    for (int i = 0; i < n; i++)
        fprintf(p->f, "%.1f,%.1f ", sx(x ? x[i] : i, x0, x1), sy(y[i], y0, y1));
    fprintf(p->f, "\"/>\n");
}

bool bench_plot_series(const char *dir, const char *name, const char *title, const double *v,
                       int n, double p50, double p99)
{
    plot p;
    if (!open_plot(&p, dir, name, title)) return false;
    double lo, hi;
    range(v, n, &lo, &hi);
    if (p99 > hi) hi = p99;
    axes(&p, 0, n > 1 ? n - 1 : 1, lo, hi, "iteration", "latency (ms)", false, "black");
    polyline(&p, NULL, v, n, 0, n > 1 ? n - 1 : 1, lo, hi, "#1f77b4");
    const struct { double v; const char *label, *color; } lines[] = {{p50, "p50", "#2ca02c"},
                                                                      {p99, "p99", "#d62728"}};
    for (int k = 0; k < 2; k++) {
        double y = sy(lines[k].v, lo, hi);
        fprintf(p.f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"%s\" "
                     "stroke-dasharray=\"4 3\"/>\n<text x=\"%.0f\" y=\"%.1f\" fill=\"%s\">%s "
                     "%.3f</text>\n",
                ML, y, PW - MR, y, lines[k].color, PW - MR + 4, y + 4, lines[k].color,
                lines[k].label, lines[k].v);
    }
    return close_plot(&p);
}

bool bench_plot_histogram(const char *dir, const char *name, const char *title, const double *v,
                          int n, int bins)
{
    if (bins < 1) bins = 1;
    double lo, hi;
    range(v, n, &lo, &hi);
    lo = INFINITY;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i]) && v[i] < lo) lo = v[i];
    if (!isfinite(lo) || hi <= lo) hi = (isfinite(lo) ? lo : 0) + 1, lo = isfinite(lo) ? lo : 0;
    int *count = calloc((size_t)bins, sizeof *count);
    if (!count) return false;
    int top = 1;
    for (int i = 0; i < n; i++) {
        if (!isfinite(v[i])) continue;
        int b = (int)((v[i] - lo) / (hi - lo) * bins);
        if (b >= bins) b = bins - 1;
        if (b < 0) b = 0;
        if (++count[b] > top) top = count[b];
    }
    plot p;
    bool ok = open_plot(&p, dir, name, title);
    if (ok) {
        axes(&p, lo, hi, 0, top, "latency (ms)", "iterations", false, "black");
        double w = (PW - ML - MR) / bins;
        for (int b = 0; b < bins; b++) {
            double y = sy(count[b], 0, top);
            fprintf(p.f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                         "fill=\"#1f77b4\"/>\n",
                    ML + b * w, y, w > 1.5 ? w - 1 : w, PH - MB - y);
        }
        ok = close_plot(&p);
    }
    free(count);
    return ok;
}

bool bench_plot_curve(const char *dir, const char *name, const char *title, const char *xlabel,
                      const char *ylabel, const char *y2label, const double *x, const double *y,
                      const double *y2, int n)
{
    plot p;
    if (!open_plot(&p, dir, name, title)) return false;
    double x0, x1, y0, y1;
    range(x, n, &x0, &x1);
    range(y, n, &y0, &y1);
    axes(&p, x0, x1, y0, y1, xlabel, ylabel, false, "#1f77b4");
    polyline(&p, x, y, n, x0, x1, y0, y1, "#1f77b4");
    for (int i = 0; i < n; i++)
        fprintf(p.f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#1f77b4\"/>\n",
                sx(x[i], x0, x1), sy(y[i], y0, y1));
    if (y2) {
        double z0, z1;
        range(y2, n, &z0, &z1);
        axes(&p, x0, x1, z0, z1, NULL, y2label, true, "#d62728");
        polyline(&p, x, y2, n, x0, x1, z0, z1, "#d62728");
    }
    return close_plot(&p);
}

/* Statistics --------------------------------------------------------------------------- */

int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_quantile(const double *sorted, size_t n, double q)
{
    if (!n) return NAN;
    long k = (long)ceil(q * (double)n) - 1;
    if (k < 0) k = 0;
    if ((size_t)k >= n) k = (long)n - 1;
    return sorted[k];
}
