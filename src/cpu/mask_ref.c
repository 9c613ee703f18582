/* Plain C references of mask post-processing and refinement: one thread, one
 * output value at a time, written straight from the definitions in ops.h and
 * src/ops/mask.h. They are the definition of correct for the CPU path and the
 * CUDA kernels. Deliberate differences from the fast paths, so that a mistake
 * in one is not copied into the other:
 * - half floats are read with the public pf_f16_to_f32 (the CPU path has its
 *   own inline conversion);
 * - edge clamping is done per tap with explicit index clamps (the fast paths
 *   use padded row buffers or clamped tile loads);
 * - morphology takes the minimum or maximum over the whole (2r + 1)^2 window
 *   clipped to the image, directly in two dimensions: the separable passes of
 *   the fast paths must reproduce it.
 * The feather is separable by definition (its float rounding is defined by
 * the horizontal-then-vertical order), so the reference runs the two passes
 * too, through one intermediate plane in the context's scratch memory. */
#include <math.h>
#include <string.h>

#include "../ops/mask.h"
#include "../ops/ops_impl.h"

static inline float load(const void *src, int f16, int64_t i)
{
    return f16 ? pf_f16_to_f32(((const uint16_t *)src)[i]) : ((const float *)src)[i];
}

static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

pf_status pf_ref_mask_threshold(pf_ops *ops, const pf_mk_threshold *a)
{
    (void)ops;
    for (int64_t i = 0; i < a->n; i++) {
        float x = load(a->src, a->f16, i);
        float p = a->logits ? 1.0f / (1.0f + expf(-x)) : x;
        a->dst[i] = p >= a->threshold ? 255 : 0;
    }
    return PF_OK;
}

pf_status pf_ref_mask_argmax(pf_ops *ops, const pf_mk_argmax *a)
{
    (void)ops;
    const int64_t C = a->c, HW = a->hw;
    for (int64_t img = 0; img < a->n; img++)
        for (int64_t i = 0; i < HW; i++) {
            /* Element index of class c of this pixel. */
            const int64_t base = a->nhwc ? (img * HW + i) * C : img * C * HW + i;
            const int64_t step = a->nhwc ? 1 : HW;
            float best = load(a->src, a->f16, base);
            int label = 0;
            for (int64_t c = 1; c < C; c++) {
                float v = load(a->src, a->f16, base + c * step);
                if (v > best) { /* strict: the lowest index wins ties */
                    best = v;
                    label = (int)c;
                }
            }
            if (a->labels) a->labels[img * HW + i] = (uint8_t)label;
            if (a->prob) {
                float s = 0.0f;
                for (int64_t c = 0; c < C; c++)
                    s += expf(load(a->src, a->f16, base + c * step) - best);
                float e = expf(load(a->src, a->f16, base + a->cls * step) - best);
                a->prob[img * HW + i] = e / s;
            }
        }
    return PF_OK;
}

double pf_mk_mean_abs_diff(const float *a, const float *b, int64_t n)
{
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += fabs((double)a[i] - (double)b[i]);
    return n > 0 ? sum / (double)n : 0.0;
}

pf_status pf_ref_mask_temporal(pf_ops *ops, const pf_mk_temporal *a)
{
    (void)ops;
    bool reset = a->reset || (a->cut > 0 && pf_mk_mean_abs_diff(a->mask, a->state, a->n) > a->cut);
    for (int64_t i = 0; i < a->n; i++)
        a->state[i] = reset ? a->mask[i]
                            : a->alpha * a->mask[i] + (1.0f - a->alpha) * a->state[i];
    return PF_OK;
}

pf_status pf_ref_mask_feather(pf_ops *ops, const pf_mk_sep *a)
{
    const int H = a->height, W = a->width, R = a->radius;
    const size_t plane = (size_t)H * (size_t)W;
    const float *w = a->weights;
    void *mem = NULL;
    pf_status st = pf_ops_scratch(ops, plane * sizeof(float), &mem);
    if (st != PF_OK) return st;
    float *tmp = mem;
    for (int64_t p = 0; p < a->planes; p++) {
        const float *src = (const float *)a->src + (size_t)p * plane;
        float *dst = (float *)a->dst + (size_t)p * plane;
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                float acc = 0.0f;
                for (int k = -R; k <= R; k++)
                    acc += w[k + R] * src[(size_t)y * W + (size_t)clampi(x + k, 0, W - 1)];
                tmp[(size_t)y * W + x] = acc;
            }
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                float acc = 0.0f;
                for (int k = -R; k <= R; k++)
                    acc += w[k + R] * tmp[(size_t)clampi(y + k, 0, H - 1) * W + x];
                dst[(size_t)y * W + x] = acc;
            }
    }
    return PF_OK;
}

/* One erosion (is_max 0) or dilation (is_max 1) of an H x W plane: the
 * extreme value over the (2r + 1)^2 window clipped to the image. */
static void morph2d(const uint8_t *src, uint8_t *dst, int H, int W, int r, int is_max)
{
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            int y0 = y - r < 0 ? 0 : y - r, y1 = y + r > H - 1 ? H - 1 : y + r;
            int x0 = x - r < 0 ? 0 : x - r, x1 = x + r > W - 1 ? W - 1 : x + r;
            int v = is_max ? 0 : 255;
            for (int yy = y0; yy <= y1; yy++)
                for (int xx = x0; xx <= x1; xx++) {
                    int s = src[(size_t)yy * W + xx];
                    v = is_max ? (s > v ? s : v) : (s < v ? s : v);
                }
            dst[(size_t)y * W + x] = (uint8_t)v;
        }
}

pf_status pf_ref_mask_morph(pf_ops *ops, const pf_mk_sep *a)
{
    const int H = a->height, W = a->width, r = a->radius;
    const size_t plane = (size_t)H * (size_t)W;
    const int two = a->op == PF_MORPH_OPEN || a->op == PF_MORPH_CLOSE;
    uint8_t *tmp = NULL;
    if (two) {
        void *mem = NULL;
        pf_status st = pf_ops_scratch(ops, plane, &mem);
        if (st != PF_OK) return st;
        tmp = mem;
    }
    for (int64_t p = 0; p < a->planes; p++) {
        const uint8_t *src = (const uint8_t *)a->src + (size_t)p * plane;
        uint8_t *dst = (uint8_t *)a->dst + (size_t)p * plane;
        switch (a->op) {
        case PF_MORPH_ERODE: morph2d(src, dst, H, W, r, 0); break;
        case PF_MORPH_DILATE: morph2d(src, dst, H, W, r, 1); break;
        case PF_MORPH_OPEN:
            morph2d(src, tmp, H, W, r, 0);
            morph2d(tmp, dst, H, W, r, 1);
            break;
        default: /* close */
            morph2d(src, tmp, H, W, r, 1);
            morph2d(tmp, dst, H, W, r, 0);
            break;
        }
    }
    return PF_OK;
}
