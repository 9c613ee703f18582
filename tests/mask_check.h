/* mask_check.h: helpers shared by the mask tests (tests/test_mask.c on the
 * CPU, tests/cuda/test_cuda_mask.c on CUDA): tensors, random inputs of the
 * kinds the mask ops see (logits, probabilities, values with ties, special
 * values, binary masks with specks and holes) and comparisons that say
 * where and by how much outputs differ.
 *
 * Header-only (everything static inline); CMake globs tests/test_*.c, so
 * this file is not taken for a test. */
#ifndef PF_MASK_CHECK_H
#define PF_MASK_CHECK_H

#include <float.h>

#include "pf_test.h"

/* A contiguous tensor from `alloc` (NULL: host heap); exits the test when
 * it cannot be allocated (the case has nothing to check without it). */
static inline pf_tensor mkc_new(pf_dtype dt, int ndim, const int64_t *shape, pf_layout layout,
                                pf_allocator *alloc, pf_stream *s)
{
    pf_tensor t;
    memset(&t, 0, sizeof t);
    if (pf_tensor_alloc(&t, dt, ndim, shape, layout, alloc, s) != PF_OK) {
        fprintf(stderr, "pf_tensor_alloc: %s\n", pf_last_error());
        exit(1);
    }
    return t;
}

/* Uniform in [0, 1). */
static inline double mkc_unit(void) { return (double)(pf_test_rand() >> 11) * 0x1p-53; }

/* Kinds of input values. */
enum {
    MKC_LOGITS = 0,   /* uniform in [-8, 8] */
    MKC_PROBS = 1,    /* uniform in [0, 1] */
    MKC_TIES = 2,     /* integers in -2..2: many exact ties */
    MKC_SPECIAL = 3,  /* logits mixed with 0, -0, +-inf, +-large, subnormals */
    MKC_KINDS = 4
};

static inline float mkc_value(int kind)
{
    switch (kind) {
    case MKC_PROBS: return (float)mkc_unit();
    case MKC_TIES: return (float)pf_test_rand_range(-2, 2);
    case MKC_SPECIAL: {
        static const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, 1e30f, -1e30f, 88.0f,
                                   -104.0f, FLT_MIN / 4, 1e-7f, -1e-7f, 0.5f};
        uint64_t r = pf_test_rand() % 24;
        if (r < sizeof sp / sizeof sp[0]) return sp[r];
        return (float)(mkc_unit() * 16.0 - 8.0);
    }
    default: return (float)(mkc_unit() * 16.0 - 8.0);
    }
}

/* Fills a host tensor of f32 or f16 with values of `kind`. f16 values are
 * the rounded floats (infinities and large values overflow to inf). */
static inline void mkc_fill(pf_tensor *t, int kind)
{
    int64_t n = pf_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        float v = mkc_value(kind);
        if (t->dtype == PF_DTYPE_F16) ((uint16_t *)t->data)[i] = pf_f32_to_f16(v);
        else ((float *)t->data)[i] = v;
    }
}

/* Element i of a host f32 or f16 tensor as float. */
static inline float mkc_get(const pf_tensor *t, int64_t i)
{
    return t->dtype == PF_DTYPE_F16 ? pf_f16_to_f32(((const uint16_t *)t->data)[i])
                                    : ((const float *)t->data)[i];
}

/* A u8 mask plane: background 0 with filled rectangles (255), specks of one
 * to three pixels (255), holes in the rectangles (0) and a few pixels of
 * other values (morphology must handle any u8, not only 0/255). */
static inline void mkc_fill_mask(uint8_t *p, int h, int w)
{
    memset(p, 0, (size_t)h * (size_t)w);
    int rects = 1 + (int)pf_test_rand_range(0, 3);
    for (int k = 0; k < rects; k++) {
        int x0 = (int)pf_test_rand_range(0, w - 1), y0 = (int)pf_test_rand_range(0, h - 1);
        int x1 = (int)pf_test_rand_range(x0, w - 1), y1 = (int)pf_test_rand_range(y0, h - 1);
        for (int y = y0; y <= y1; y++) memset(p + (size_t)y * w + x0, 255, (size_t)(x1 - x0 + 1));
    }
    int64_t spots = 1 + (int64_t)h * w / 40;
    for (int64_t k = 0; k < spots; k++) {
        int x = (int)pf_test_rand_range(0, w - 1), y = (int)pf_test_rand_range(0, h - 1);
        int s = (int)pf_test_rand_range(1, 3);
        uint8_t v = (uint8_t)(k % 5 == 0 ? pf_test_rand() : (k & 1 ? 255 : 0));
        for (int dy = 0; dy < s && y + dy < h; dy++)
            for (int dx = 0; dx < s && x + dx < w; dx++) p[(size_t)(y + dy) * w + x + dx] = v;
    }
}

/* Counts differing bytes; prints the first few with their index. */
static inline long mkc_cmp_bytes(const uint8_t *ref, const uint8_t *got, size_t n,
                                 const char *label)
{
    long bad = 0;
    for (size_t i = 0; i < n; i++)
        if (ref[i] != got[i]) {
            if (bad < 3)
                fprintf(stderr, "  %s: byte %zu is %d, reference %d\n", label, i, got[i], ref[i]);
            bad++;
        }
    return bad;
}

/* Counts floats outside |got - ref| <= rel * |ref| + abs (NaN must meet
 * NaN, infinities must be equal); *worst gets the largest
 * |got - ref| / (rel * |ref| + abs) seen. */
static inline long mkc_cmp_f32(const float *ref, const float *got, size_t n, double rel,
                               double abs, const char *label, double *worst)
{
    long bad = 0;
    for (size_t i = 0; i < n; i++) {
        double r = ref[i], g = got[i];
        int ok;
        double ratio = 0.0;
        if (isnan(r) || isnan(g)) ok = isnan(r) && isnan(g);
        else if (isinf(r) || isinf(g)) ok = r == g;
        else {
            double bound = rel * fabs(r) + abs;
            ratio = fabs(g - r) / bound;
            ok = fabs(g - r) <= bound;
        }
        if (worst && ratio > *worst) *worst = ratio;
        if (!ok) {
            if (bad < 3)
                fprintf(stderr, "  %s: value %zu is %.9g, reference %.9g\n", label, i, g, r);
            bad++;
        }
    }
    return bad;
}

#endif
