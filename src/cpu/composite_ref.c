/* The plain C reference of compositing: the definition of correct.
 *
 * One thread, one output pixel (NV12: one 2x2 block) at a time, straight
 * from the formulas in include/pixflow/ops.h (Compositing). ops.h defines
 * the result in single precision, operation by operation, so this file
 * computes in float in exactly the written order (ISO C: no contraction,
 * every operation rounded to float) - and shares nothing with the fast paths
 * but the parameter struct: tap positions, YUV coefficients, the blur's
 * factor, radius and weights are derived here again from the user's values.
 *
 * The blur's intermediate images (horizontal pass; or the box-averaged,
 * horizontally and vertically blurred small images) go to the context's
 * scratch memory; everything else is computed per pixel on the fly. */
#include <math.h>
#include <string.h>

#include "../ops/composite.h"
#include "../ops/ops_impl.h"

static float clamp255(float v) { return v < 0.0f ? 0.0f : (v > 255.0f ? 255.0f : v); }

/* (int)(clamp(v, 0, 255) + 0.5), NaN -> 0. */
static uint8_t round_u8(float v)
{
    if (!(v > 0.0f)) v = 0.0f;
    if (v > 255.0f) v = 255.0f;
    return (uint8_t)(int)(v + 0.5f);
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* ops.h's coefficients from Kr and Kb, in double, rounded once to float. */
static void ref_coeffs(int matrix, int range, float rgb[6], float yuv[10])
{
    double kr = matrix == PF_YUV_BT709 ? 0.2126 : 0.299;
    double kb = matrix == PF_YUV_BT709 ? 0.0722 : 0.114;
    double kg = 1.0 - kr - kb;
    int lim = range == PF_YUV_LIMITED;
    double cs = lim ? 255.0 / 224.0 : 1.0;
    rgb[0] = lim ? 16.0f : 0.0f;
    rgb[1] = (float)(lim ? 255.0 / 219.0 : 1.0);
    rgb[2] = (float)(2.0 * (1.0 - kr) * cs);
    rgb[3] = (float)(2.0 * kb * (1.0 - kb) / kg * cs);
    rgb[4] = (float)(2.0 * kr * (1.0 - kr) / kg * cs);
    rgb[5] = (float)(2.0 * (1.0 - kb) * cs);
    double ys = lim ? 219.0 / 255.0 : 1.0, c = lim ? 224.0 / 255.0 : 1.0;
    yuv[0] = (float)(kr * ys);
    yuv[1] = (float)(kg * ys);
    yuv[2] = (float)(kb * ys);
    yuv[3] = (float)(-kr * c / (2.0 * (1.0 - kb)));
    yuv[4] = (float)(-kg * c / (2.0 * (1.0 - kb)));
    yuv[5] = (float)(c / 2.0);
    yuv[6] = (float)(c / 2.0);
    yuv[7] = (float)(-kg * c / (2.0 * (1.0 - kr)));
    yuv[8] = (float)(-kb * c / (2.0 * (1.0 - kr)));
    yuv[9] = lim ? 16.0f : 0.0f;
}

/* F: R, G, B floats of pixel (x, y) of a frame or image. */
static void ref_pixel(const pf_cmp_image *im, int x, int y, const float k[6], float rgb[3])
{
    const uint8_t *p;
    switch (im->format) {
    case PF_PIXFMT_RGB24:
        p = im->plane[0] + y * im->stride[0] + 3 * (int64_t)x;
        rgb[0] = p[0], rgb[1] = p[1], rgb[2] = p[2];
        return;
    case PF_PIXFMT_BGR24:
        p = im->plane[0] + y * im->stride[0] + 3 * (int64_t)x;
        rgb[0] = p[2], rgb[1] = p[1], rgb[2] = p[0];
        return;
    case PF_PIXFMT_RGBA:
        p = im->plane[0] + y * im->stride[0] + 4 * (int64_t)x;
        rgb[0] = p[0], rgb[1] = p[1], rgb[2] = p[2];
        return;
    default: break;
    }
    float Y = im->plane[0][y * im->stride[0] + x], U, V;
    if (im->format == PF_PIXFMT_NV12) {
        const uint8_t *uv = im->plane[1] + (y / 2) * im->stride[1] + 2 * (int64_t)(x / 2);
        U = uv[0];
        V = uv[1];
    } else { /* I420 */
        U = im->plane[1][(y / 2) * im->stride[1] + x / 2];
        V = im->plane[2][(y / 2) * im->stride[2] + x / 2];
    }
    float yy = (Y - k[0]) * k[1], u = U - 128.0f, v = V - 128.0f;
    rgb[0] = clamp255(yy + k[2] * v);
    rgb[1] = clamp255((yy - k[3] * u) - k[4] * v);
    rgb[2] = clamp255(yy + k[5] * u);
}

/* Taps of position num / den: floor, floor + 1 (clamped to 0..n-1) and the
 * weight rem / den rounded once to float. floor through double is exact
 * here: num / den is at least 1 / den <= 2^-17 away from the next integer. */
static void ref_taps(int64_t num, int64_t den, int n, int *k0, int *k1, float *f)
{
    int64_t k = (int64_t)floor((double)num / (double)den);
    *f = (float)(num - k * den) / (float)den;
    *k0 = (int)(k < 0 ? 0 : (k > n - 1 ? n - 1 : k));
    *k1 = (int)(k + 1 < 0 ? 0 : (k + 1 > n - 1 ? n - 1 : k + 1));
}

/* Frame index i of an axis of c pixels over a source axis of r pixels. */
static void ref_axis(int i, int c, int r, int *k0, int *k1, float *f)
{
    ref_taps((int64_t)(2 * (int64_t)i + 1) * r - c, 2 * (int64_t)c, r, k0, k1, f);
}

static float lerp(float a, float b, float f) { return a + f * (b - a); }

static float ref_mask(const pf_cmp_params *p, int x, int y)
{
    int x0, x1, y0, y1;
    float fx, fy;
    ref_axis(x, p->width, p->mask_w, &x0, &x1, &fx);
    ref_axis(y, p->height, p->mask_h, &y0, &y1, &fy);
    float v[2][2];
    int ys[2] = {y0, y1}, xs[2] = {x0, x1};
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 2; i++) {
            int64_t idx = ys[j] * p->mask_stride + xs[i];
            v[j][i] = p->mask_u8 ? (float)((const uint8_t *)p->mask)[idx]
                                 : ((const float *)p->mask)[idx];
        }
    float h0 = lerp(v[0][0], v[0][1], fx), h1 = lerp(v[1][0], v[1][1], fx);
    float m = lerp(h0, h1, fy);
    if (p->mask_u8) m = m / 255.0f;
    if (!(m > 0.0f)) m = 0.0f;
    return m < 1.0f ? m : 1.0f;
}

/* Blur ------------------------------------------------------------------------------ */

typedef struct ref_blur {
    int q, r, bw, bh;
    float w[PF_CMP_MAX_TAPS];
    float *t;        /* horizontal pass: full: W x H x 3; small: bw x bh x 3 */
    float *small;    /* q > 1: box average, bw x bh x 3 */
    float *blurred;  /* q > 1: final small image, bw x bh x 3 */
} ref_blur;

static void ref_blur_geometry(float sigma, int W, int H, ref_blur *b)
{
    double s = sigma;
    b->q = 1;
    if (sigma > 8.0f) {
        b->q = (int)floor(s / 4.0);
        s = s / b->q;
    }
    b->r = (int)ceil(3.0 * s);
    double g[PF_CMP_MAX_TAPS], sum = 0.0;
    for (int k = -b->r; k <= b->r; k++) sum += g[k + b->r] = exp(-(double)(k * k) / (2.0 * s * s));
    for (int k = 0; k <= 2 * b->r; k++) b->w[k] = (float)(g[k] / sum);
    b->bw = (W + b->q - 1) / b->q;
    b->bh = (H + b->q - 1) / b->q;
}

/* Sum over k = -r..r of w_k v(clamp(x + k)), from 0, in increasing k. */
static void ref_blur_plane(const ref_blur *b, const float *src, float *dst, int w, int h,
                           int horizontal)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) {
                float acc = 0.0f;
                for (int k = -b->r; k <= b->r; k++) {
                    int xx = horizontal ? clampi(x + k, 0, w - 1) : x;
                    int yy = horizontal ? y : clampi(y + k, 0, h - 1);
                    acc = acc + b->w[k + b->r] * src[((size_t)yy * w + xx) * 3 + c];
                }
                dst[((size_t)y * w + x) * 3 + c] = acc;
            }
}

static pf_status ref_blur_prepare(pf_ops *ops, const pf_cmp_params *p, const float k[6],
                                  ref_blur *b)
{
    const int W = p->width, H = p->height;
    ref_blur_geometry(p->sigma, W, H, b);
    size_t small = (size_t)b->bw * b->bh * 3;
    size_t need = b->q == 1 ? (size_t)W * H * 3 : 3 * small;
    void *mem = NULL;
    pf_status st = pf_ops_scratch(ops, need * sizeof(float), &mem);
    if (st != PF_OK) return st;
    float *base = mem;
    if (b->q == 1) {
        /* Horizontal pass straight from the frame's pixels. */
        b->t = base;
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                float acc[3] = {0.0f, 0.0f, 0.0f};
                for (int kk = -b->r; kk <= b->r; kk++) {
                    float px[3];
                    ref_pixel(&p->frame, clampi(x + kk, 0, W - 1), y, k, px);
                    for (int c = 0; c < 3; c++) acc[c] = acc[c] + b->w[kk + b->r] * px[c];
                }
                for (int c = 0; c < 3; c++) b->t[((size_t)y * W + x) * 3 + c] = acc[c];
            }
        return PF_OK;
    }
    b->small = base;
    b->t = base + small;
    b->blurred = base + 2 * small;
    for (int j = 0; j < b->bh; j++)
        for (int i = 0; i < b->bw; i++) {
            float s[3] = {0.0f, 0.0f, 0.0f};
            int n = 0;
            for (int y = j * b->q; y < (j + 1) * b->q && y < H; y++)
                for (int x = i * b->q; x < (i + 1) * b->q && x < W; x++) {
                    float px[3];
                    ref_pixel(&p->frame, x, y, k, px);
                    for (int c = 0; c < 3; c++) s[c] = s[c] + px[c];
                    n++;
                }
            for (int c = 0; c < 3; c++) b->small[((size_t)j * b->bw + i) * 3 + c] = s[c] / (float)n;
        }
    ref_blur_plane(b, b->small, b->t, b->bw, b->bh, 1);
    ref_blur_plane(b, b->t, b->blurred, b->bw, b->bh, 0);
    return PF_OK;
}

static void ref_blur_at(const pf_cmp_params *p, const ref_blur *b, int x, int y, float out[3])
{
    if (b->q == 1) {
        for (int c = 0; c < 3; c++) {
            float acc = 0.0f;
            for (int k = -b->r; k <= b->r; k++) {
                int yy = clampi(y + k, 0, p->height - 1);
                acc = acc + b->w[k + b->r] * b->t[((size_t)yy * p->width + x) * 3 + c];
            }
            out[c] = acc;
        }
        return;
    }
    int x0, x1, y0, y1;
    float fx, fy;
    ref_taps(2 * (int64_t)x + 1 - b->q, 2 * (int64_t)b->q, b->bw, &x0, &x1, &fx);
    ref_taps(2 * (int64_t)y + 1 - b->q, 2 * (int64_t)b->q, b->bh, &y0, &y1, &fy);
    const float *r0 = b->blurred + (size_t)y0 * b->bw * 3, *r1 = b->blurred + (size_t)y1 * b->bw * 3;
    for (int c = 0; c < 3; c++) {
        float h0 = lerp(r0[x0 * 3 + c], r0[x1 * 3 + c], fx);
        float h1 = lerp(r1[x0 * 3 + c], r1[x1 * 3 + c], fx);
        out[c] = lerp(h0, h1, fy);
    }
}

/* One output pixel --------------------------------------------------------------------- */

/* Background pixel (x, y) for COLOR, IMAGE, FRAME, BLUR. */
static void ref_background(const pf_cmp_params *p, const ref_blur *b, const float k[6], int x,
                           int y, float out[3])
{
    switch (p->kind) {
    case PF_BG_COLOR:
        for (int c = 0; c < 3; c++) out[c] = p->color[c];
        return;
    case PF_BG_FRAME: ref_pixel(&p->image, x, y, k, out); return;
    case PF_BG_BLUR: ref_blur_at(p, b, x, y, out); return;
    default: break; /* IMAGE */
    }
    int x0, x1, y0, y1;
    float fx, fy, a[3], bb[3], c0[3], d[3];
    ref_axis(x, p->width, p->image.width, &x0, &x1, &fx);
    ref_axis(y, p->height, p->image.height, &y0, &y1, &fy);
    ref_pixel(&p->image, x0, y0, k, a);
    ref_pixel(&p->image, x1, y0, k, bb);
    ref_pixel(&p->image, x0, y1, k, c0);
    ref_pixel(&p->image, x1, y1, k, d);
    for (int c = 0; c < 3; c++) out[c] = lerp(lerp(a[c], bb[c], fx), lerp(c0[c], d[c], fx), fy);
}

/* The RGB bytes of output pixel (x, y) and the mask value there. */
static void ref_output(const pf_cmp_params *p, const ref_blur *b, const float k[6], int x, int y,
                       uint8_t rgb[3], float *m_out)
{
    float m = ref_mask(p, x, y), f[3];
    ref_pixel(&p->frame, x, y, k, f);
    *m_out = m;
    if (p->kind == PF_BG_NONE) {
        for (int c = 0; c < 3; c++) rgb[c] = round_u8(f[c]);
        return;
    }
    float bg[3];
    ref_background(p, b, k, x, y, bg);
    for (int c = 0; c < 3; c++) rgb[c] = round_u8(m * f[c] + (1.0f - m) * bg[c]);
}

static uint8_t ref_dot(const float *c, float off, float r, float g, float b)
{
    return round_u8(((c[0] * r + c[1] * g) + c[2] * b) + off);
}

pf_status pf_ref_composite(pf_ops *ops, const pf_cmp_params *p)
{
    float k[6], ky[10];
    ref_coeffs(p->matrix, p->range, k, ky);
    ref_blur b;
    memset(&b, 0, sizeof b);
    if (p->kind == PF_BG_BLUR) {
        pf_status st = ref_blur_prepare(ops, p, k, &b);
        if (st != PF_OK) return st;
    }
    const int W = p->width, H = p->height;
    if (p->dst_format != PF_PIXFMT_NV12) {
        const int bpp = p->dst_format == PF_PIXFMT_RGBA ? 4 : 3;
        const int bgr = p->dst_format == PF_PIXFMT_BGR24;
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                uint8_t rgb[3];
                float m;
                ref_output(p, &b, k, x, y, rgb, &m);
                uint8_t *o = p->dst[0] + y * p->dst_stride[0] + (int64_t)x * bpp;
                o[0] = bgr ? rgb[2] : rgb[0];
                o[1] = rgb[1];
                o[2] = bgr ? rgb[0] : rgb[2];
                if (bpp == 4) o[3] = round_u8(255.0f * m);
            }
        return PF_OK;
    }
    const int yuv_in = p->frame.format == PF_PIXFMT_NV12 || p->frame.format == PF_PIXFMT_I420;
    for (int by = 0; by < (H + 1) / 2; by++)
        for (int bx = 0; bx < (W + 1) / 2; bx++) {
            uint8_t *uv = p->dst[1] + by * p->dst_stride[1] + 2 * (int64_t)bx;
            if (p->kind == PF_BG_NONE && yuv_in) {
                /* Copies: Y of the block's pixels, its chroma sample. */
                for (int y = 2 * by; y < 2 * by + 2 && y < H; y++)
                    for (int x = 2 * bx; x < 2 * bx + 2 && x < W; x++)
                        p->dst[0][y * p->dst_stride[0] + x] =
                            p->frame.plane[0][y * p->frame.stride[0] + x];
                if (p->frame.format == PF_PIXFMT_NV12) {
                    const uint8_t *s = p->frame.plane[1] + by * p->frame.stride[1] + 2 * bx;
                    uv[0] = s[0];
                    uv[1] = s[1];
                } else {
                    uv[0] = p->frame.plane[1][by * p->frame.stride[1] + bx];
                    uv[1] = p->frame.plane[2][by * p->frame.stride[2] + bx];
                }
                continue;
            }
            int sum[3] = {0, 0, 0}, n = 0;
            for (int y = 2 * by; y < 2 * by + 2 && y < H; y++)
                for (int x = 2 * bx; x < 2 * bx + 2 && x < W; x++) {
                    uint8_t rgb[3];
                    float m;
                    ref_output(p, &b, k, x, y, rgb, &m);
                    p->dst[0][y * p->dst_stride[0] + x] =
                        ref_dot(ky, ky[9], rgb[0], rgb[1], rgb[2]);
                    for (int c = 0; c < 3; c++) sum[c] += rgb[c];
                    n++;
                }
            float r = (float)sum[0] / (float)n, g = (float)sum[1] / (float)n,
                  bl = (float)sum[2] / (float)n;
            uv[0] = ref_dot(ky + 3, 128.0f, r, g, bl);
            uv[1] = ref_dot(ky + 6, 128.0f, r, g, bl);
        }
    return PF_OK;
}
