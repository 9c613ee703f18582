/* The plain C reference of pf_ops_convert: the definition of correct.
 *
 * One thread, one pixel (and one 2x2 chroma block) at a time, straight from
 * ops.h: decode the source pixel to 8-bit R, G, B, encode it into the
 * destination. Shares with the fast paths only the per-pixel float formulas
 * of src/ops/convert.h (which must be the same operations for the outputs to
 * be bit-exact); addressing, plane layout, block edges and the order of work
 * are written here again, independently. */
#include <string.h>

#include "../ops/convert.h"
#include "../ops/ops_impl.h"

typedef struct ref_rgb {
    int r, g, b;
} ref_rgb;

static const uint8_t *at(const pf_cv_image *f, int plane, int x, int y, int bytes_per_sample)
{
    return f->plane[plane] + (int64_t)y * f->stride[plane] + (int64_t)x * bytes_per_sample;
}

/* Chroma samples covering pixel (x, y) of a YUV frame. */
static void ref_chroma(const pf_cv_image *f, int x, int y, int *u, int *v)
{
    if (f->format == PF_PIXFMT_NV12) {
        const uint8_t *uv = at(f, 1, x / 2, y / 2, 2);
        *u = uv[0];
        *v = uv[1];
    } else {
        *u = *at(f, 1, x / 2, y / 2, 1);
        *v = *at(f, 2, x / 2, y / 2, 1);
    }
}

static ref_rgb ref_decode(const pf_cv_params *p, int x, int y)
{
    const pf_cv_image *f = &p->src;
    ref_rgb o = {0, 0, 0};
    const uint8_t *q;
    switch (f->format) {
    case PF_PIXFMT_RGB24:
        q = at(f, 0, x, y, 3);
        o.r = q[0], o.g = q[1], o.b = q[2];
        break;
    case PF_PIXFMT_BGR24:
        q = at(f, 0, x, y, 3);
        o.r = q[2], o.g = q[1], o.b = q[0];
        break;
    case PF_PIXFMT_RGBA:
        q = at(f, 0, x, y, 4);
        o.r = q[0], o.g = q[1], o.b = q[2];
        break;
    case PF_PIXFMT_GRAY8:
        o.r = o.g = o.b = *at(f, 0, x, y, 1);
        break;
    default: { /* NV12, I420 */
        int u, v;
        uint8_t r, g, b;
        ref_chroma(f, x, y, &u, &v);
        pf_cv_yuv_to_rgb(p->k.dec, *at(f, 0, x, y, 1), u, v, &r, &g, &b);
        o.r = r, o.g = g, o.b = b;
        break;
    }
    }
    return o;
}

static void ref_encode_packed(const pf_cv_params *p, int x, int y, ref_rgb c)
{
    const pf_cv_image *f = &p->dst;
    uint8_t *q;
    switch (f->format) {
    case PF_PIXFMT_RGB24:
        q = (uint8_t *)at(f, 0, x, y, 3);
        q[0] = (uint8_t)c.r, q[1] = (uint8_t)c.g, q[2] = (uint8_t)c.b;
        break;
    case PF_PIXFMT_BGR24:
        q = (uint8_t *)at(f, 0, x, y, 3);
        q[0] = (uint8_t)c.b, q[1] = (uint8_t)c.g, q[2] = (uint8_t)c.r;
        break;
    case PF_PIXFMT_RGBA:
        q = (uint8_t *)at(f, 0, x, y, 4);
        q[0] = (uint8_t)c.r, q[1] = (uint8_t)c.g, q[2] = (uint8_t)c.b, q[3] = 255;
        break;
    default: /* GRAY8 */
        *(uint8_t *)at(f, 0, x, y, 1) = pf_cv_luma(c.r, c.g, c.b);
        break;
    }
}

/* NV12 <-> I420 (and a YUV format to itself): samples move unchanged. */
static void ref_repack(const pf_cv_params *p)
{
    const pf_cv_image *s = &p->src, *d = &p->dst;
    for (int y = 0; y < p->height; y++)
        for (int x = 0; x < p->width; x++) *(uint8_t *)at(d, 0, x, y, 1) = *at(s, 0, x, y, 1);
    for (int y = 0; y < (p->height + 1) / 2; y++)
        for (int x = 0; x < (p->width + 1) / 2; x++) {
            int u, v;
            ref_chroma(s, 2 * x, 2 * y, &u, &v);
            if (d->format == PF_PIXFMT_NV12) {
                uint8_t *uv = (uint8_t *)at(d, 1, x, y, 2);
                uv[0] = (uint8_t)u;
                uv[1] = (uint8_t)v;
            } else {
                *(uint8_t *)at(d, 1, x, y, 1) = (uint8_t)u;
                *(uint8_t *)at(d, 2, x, y, 1) = (uint8_t)v;
            }
        }
}

pf_status pf_ref_convert(pf_ops *ops, const pf_cv_params *p)
{
    (void)ops;
    const int sf = p->src.format, df = p->dst.format;
    if (PF_CV_IS_YUV(sf) && PF_CV_IS_YUV(df)) {
        ref_repack(p);
        return PF_OK;
    }
    if (!PF_CV_IS_YUV(df)) {
        for (int y = 0; y < p->height; y++)
            for (int x = 0; x < p->width; x++) {
                if (sf == df) { /* a packed format to itself: bytes unchanged */
                    int bpp = sf == PF_PIXFMT_RGBA ? 4 : (sf == PF_PIXFMT_GRAY8 ? 1 : 3);
                    memcpy((uint8_t *)at(&p->dst, 0, x, y, bpp), at(&p->src, 0, x, y, bpp),
                           (size_t)bpp);
                } else {
                    ref_encode_packed(p, x, y, ref_decode(p, x, y));
                }
            }
        return PF_OK;
    }
    /* Packed or gray -> YUV: luma per pixel, chroma per 2x2 block from the
     * mean R, G, B of the pixels the block has. */
    const pf_cv_image *d = &p->dst;
    for (int y = 0; y < p->height; y++)
        for (int x = 0; x < p->width; x++) {
            ref_rgb c = ref_decode(p, x, y);
            *(uint8_t *)at(d, 0, x, y, 1) =
                pf_cv_encode(p->k.enc[0], (float)c.r, (float)c.g, (float)c.b);
        }
    for (int by = 0; by < (p->height + 1) / 2; by++)
        for (int bx = 0; bx < (p->width + 1) / 2; bx++) {
            int sr = 0, sg = 0, sb = 0, n = 0;
            for (int y = 2 * by; y < 2 * by + 2 && y < p->height; y++)
                for (int x = 2 * bx; x < 2 * bx + 2 && x < p->width; x++) {
                    ref_rgb c = ref_decode(p, x, y);
                    sr += c.r, sg += c.g, sb += c.b, n++;
                }
            uint8_t u, v;
            pf_cv_chroma((const float(*)[4])p->k.enc, sr, sg, sb, n, &u, &v);
            if (d->format == PF_PIXFMT_NV12) {
                uint8_t *uv = (uint8_t *)at(d, 1, bx, by, 2);
                uv[0] = u;
                uv[1] = v;
            } else {
                *(uint8_t *)at(d, 1, bx, by, 1) = u;
                *(uint8_t *)at(d, 2, bx, by, 1) = v;
            }
        }
    return PF_OK;
}
