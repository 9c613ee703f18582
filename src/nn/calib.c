/* Calibration statistics and the three range methods (quantize.h).
 *
 * Two passes instead of TensorRT's growing histogram: pass 1 finds max |x|
 * of every tensor over all images, pass 2 bins |x| into a fixed
 * [0, max |x|] histogram. Re-running the model costs seconds for a few
 * hundred calibration images and keeps the bins exact (a histogram rebinned
 * while it grows smears counts across bin edges). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "quantize.h"

pf_status pf_calib_init(pf_calib *c, const char *const *names, int n)
{
    memset(c, 0, sizeof *c);
    c->t = calloc((size_t)(n ? n : 1), sizeof *c->t);
    if (!c->t) return pf_set_error(PF_ERR_NOMEM, "calibration: out of memory");
    c->n = n;
    c->pass = 1;
    for (int i = 0; i < n; i++) {
        c->t[i].name = strdup(names[i]);
        if (!c->t[i].name) {
            pf_calib_free(c);
            return pf_set_error(PF_ERR_NOMEM, "calibration: out of memory");
        }
        c->t[i].min = INFINITY;
        c->t[i].max = -INFINITY;
    }
    return PF_OK;
}

void pf_calib_free(pf_calib *c)
{
    for (int i = 0; c->t && i < c->n; i++) {
        free(c->t[i].name);
        free(c->t[i].hist);
    }
    free(c->t);
    memset(c, 0, sizeof *c);
}

pf_calib_tensor *pf_calib_find(pf_calib *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->t[i].name, name)) return &c->t[i];
    return NULL;
}

void pf_calib_observe(pf_calib *c, pf_calib_tensor *t, const float *x, int64_t n)
{
    if (c->pass == 1) {
        double lo = t->min, hi = t->max;
        for (int64_t k = 0; k < n; k++) {
            double v = x[k];
            if (v < lo) lo = v;
            if (v > hi) hi = v;   /* NaN compares false: ignored */
        }
        t->min = lo;
        t->max = hi;
        t->count += n;
        return;
    }
    if (!t->hist) return;
    double inv = t->hist_max > 0 ? PF_CALIB_BINS / t->hist_max : 0;
    for (int64_t k = 0; k < n; k++) {
        double a = fabs((double)x[k]) * inv;
        if (!(a >= 0)) continue;
        int b = a >= PF_CALIB_BINS - 1 ? PF_CALIB_BINS - 1 : (int)a;
        t->hist[b]++;
    }
}

static double absmax(const pf_calib_tensor *t)
{
    if (t->count == 0 || !isfinite(t->min) || !isfinite(t->max)) return 0;
    return fmax(fabs(t->min), fabs(t->max));
}

pf_status pf_calib_begin_histograms(pf_calib *c)
{
    c->pass = 2;
    for (int i = 0; i < c->n; i++) {
        c->t[i].hist = calloc(PF_CALIB_BINS, sizeof *c->t[i].hist);
        if (!c->t[i].hist) return pf_set_error(PF_ERR_NOMEM, "calibration: out of memory");
        c->t[i].hist_max = absmax(&c->t[i]);
    }
    return PF_OK;
}

double pf_calib_percentile_amax(const uint64_t *hist, int bins, double width, double percentile)
{
    double total = 0;
    for (int i = 0; i < bins; i++) total += (double)hist[i];
    if (total <= 0) return 0;
    double want = total * percentile / 100.0, acc = 0;
    for (int i = 0; i < bins; i++) {
        acc += (double)hist[i];
        if (acc >= want) return (i + 1) * width;
    }
    return bins * width;
}

/* TensorRT's entropy calibration: for each candidate threshold i (in bins,
 * 128..bins), the reference P is the histogram cut at i with the clipped
 * tail added to its last bin; Q spreads each of 128 equal groups of P's
 * bins evenly over the group's non-empty bins (what int8 can represent).
 * The threshold with the smallest KL(P || Q) wins (the last one on ties),
 * amax = i * width. */
double pf_calib_entropy_amax(const uint64_t *hist, int bins, double width)
{
    enum { LEVELS = 128 };
    if (bins <= LEVELS) return bins * width;
    double *tail = malloc(((size_t)bins + 1) * sizeof *tail);
    double *q = malloc((size_t)bins * sizeof *q);
    if (!tail || !q) {
        free(tail);
        free(q);
        return bins * width;
    }
    tail[bins] = 0;
    for (int i = bins - 1; i >= 0; i--) tail[i] = tail[i + 1] + (double)hist[i];
    if (tail[0] <= 0) {
        free(tail);
        free(q);
        return 0;
    }
    double best = INFINITY;
    int best_i = bins;
    double gsum[LEVELS];
    int gnz[LEVELS];
    for (int i = LEVELS; i <= bins; i++) {
        memset(gsum, 0, sizeof gsum);
        memset(gnz, 0, sizeof gnz);
        for (int j = 0; j < i; j++) {
            if (!hist[j]) continue;
            int g = (int)(((int64_t)j * LEVELS) / i);
            gsum[g] += (double)hist[j];
            gnz[g]++;
        }
        double qtot = 0;
        for (int j = 0; j < i; j++) {
            int g = (int)(((int64_t)j * LEVELS) / i);
            q[j] = hist[j] ? gsum[g] / gnz[g] : 0;
            qtot += q[j];
        }
        double ptot = tail[0];  /* the cut histogram plus its tail: every count */
        double kl = 0;
        for (int j = 0; j < i && isfinite(kl); j++) {
            double p = (double)hist[j] + (j == i - 1 ? tail[i] : 0);
            if (p <= 0) continue;
            if (q[j] <= 0) {
                kl = INFINITY;
                break;
            }
            double pn = p / ptot, qn = q[j] / qtot;
            kl += pn * log(pn / qn);
        }
        if (kl <= best) {
            best = kl;
            best_i = i;
        }
    }
    free(tail);
    free(q);
    return best_i * width;
}

void pf_calib_finish(pf_calib *c, pf_quant_method method, double percentile)
{
    for (int i = 0; i < c->n; i++) {
        pf_calib_tensor *t = &c->t[i];
        double am = absmax(t);
        if (method != PF_QUANT_MINMAX && t->hist && t->hist_max > 0) {
            double w = t->hist_max / PF_CALIB_BINS;
            am = method == PF_QUANT_PERCENTILE
                     ? pf_calib_percentile_amax(t->hist, PF_CALIB_BINS, w, percentile)
                     : pf_calib_entropy_amax(t->hist, PF_CALIB_BINS, w);
        }
        t->amax = am;
    }
}
