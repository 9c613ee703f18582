/* Image metadata that changes what the pixels mean: the EXIF orientation (read from a TIFF
 * structure, as JPEG APP1 "Exif" and PNG eXIf carry it) and the turn or flip that makes stored
 * pixels upright, and ICC profiles held in pf_buffers (frame.h: pf_frame.icc).
 *
 * The EXIF reader looks only at IFD0's Orientation tag (0x0112) and checks every offset against
 * the bytes it was given: the block comes from an untrusted file. */
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "io_impl.h"

static unsigned rd16(const uint8_t *p, bool le)
{
    return le ? (unsigned)p[0] | (unsigned)p[1] << 8 : (unsigned)p[0] << 8 | (unsigned)p[1];
}

static uint32_t rd32(const uint8_t *p, bool le)
{
    return le ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24
              : (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

int pf_exif_orientation(const uint8_t *tiff, size_t n)
{
    if (!tiff || n < 8) return 1;
    bool le;
    if (tiff[0] == 'I' && tiff[1] == 'I') le = true;
    else if (tiff[0] == 'M' && tiff[1] == 'M') le = false;
    else return 1;
    if (rd16(tiff + 2, le) != 42) return 1;
    uint32_t ifd = rd32(tiff + 4, le);
    if (ifd > n - 2) return 1;
    unsigned count = rd16(tiff + ifd, le);
    for (unsigned i = 0; i < count; i++) {
        size_t e = (size_t)ifd + 2 + (size_t)i * 12;
        if (e + 12 > n) return 1;
        if (rd16(tiff + e, le) != 0x0112) continue;
        /* SHORT (3), count 1: the value sits in the first two bytes of the value field. */
        if (rd16(tiff + e + 2, le) != 3 || rd32(tiff + e + 4, le) != 1) return 1;
        unsigned v = rd16(tiff + e + 8, le);
        return v >= 1 && v <= 8 ? (int)v : 1;
    }
    return 1;
}

void pf_image_oriented_size(int orientation, int w, int h, int *ow, int *oh)
{
    bool swap = orientation >= 5 && orientation <= 8;
    *ow = swap ? h : w;
    *oh = swap ? w : h;
}

pf_status pf_image_orient(const pf_frame *src, int orientation, pf_frame *dst)
{
    int w = src->width, h = src->height, ow, oh;
    pf_image_oriented_size(orientation, w, h, &ow, &oh);
    if (dst->format != src->format || dst->width != ow || dst->height != oh)
        return pf_set_error(PF_ERR_INTERNAL, "pf_image_orient: %dx%d %s -> %dx%d %s", w, h,
                            pf_pixfmt_name(src->format), dst->width, dst->height,
                            pf_pixfmt_name(dst->format));
    size_t bpp = src->format == PF_PIXFMT_RGBA ? 4 : src->format == PF_PIXFMT_GRAY8 ? 1 : 3;
    /* Upright pixel (x, y) comes from stored pixel (sx, sy) = (ax*x + bx*y + cx, ay*x + by*y + cy):
     * EXIF's definitions of where stored row 0 and column 0 are to be shown. */
    int ax = 1, bx = 0, cx = 0, ay = 0, by = 1, cy = 0;
    switch (orientation) {
    case 2: ax = -1, cx = w - 1; break;                                  /* mirrored */
    case 3: ax = -1, cx = w - 1, by = -1, cy = h - 1; break;             /* turned 180 */
    case 4: by = -1, cy = h - 1; break;                                  /* upside down */
    case 5: ax = 0, bx = 1, ay = 1, by = 0; break;                       /* transposed */
    case 6: ax = 0, bx = 1, ay = -1, by = 0, cy = h - 1; break;          /* turn 90 cw */
    case 7: ax = 0, bx = -1, cx = w - 1, ay = -1, by = 0, cy = h - 1; break; /* transverse */
    case 8: ax = 0, bx = -1, cx = w - 1, ay = 1, by = 0; break;          /* turn 90 ccw */
    default: break;
    }
    for (int y = 0; y < oh; y++) {
        uint8_t *d = dst->data[0] + (size_t)y * dst->stride[0];
        for (int x = 0; x < ow; x++, d += bpp) {
            int sx = ax * x + bx * y + cx, sy = ay * x + by * y + cy;
            memcpy(d, src->data[0] + (size_t)sy * src->stride[0] + (size_t)sx * bpp, bpp);
        }
    }
    return PF_OK;
}

pf_status pf_io_icc_buffer(const void *data, size_t size, const char *name, pf_buffer **out)
{
    *out = NULL;
    pf_status st = pf_buffer_alloc_host(size, out);
    if (st != PF_OK) return pf_error_prefix(st, "%s: ICC profile", name);
    memcpy(pf_buffer_data(*out), data, size);
    return PF_OK;
}

bool pf_io_icc_fits(const pf_buffer *icc, pf_pixfmt fmt)
{
    /* Profile header: the data colour space signature at bytes 16..19. */
    if (!icc || pf_buffer_size(icc) < 132) return false;
    const uint8_t *p = pf_buffer_data(icc);
    return !memcmp(p + 16, fmt == PF_PIXFMT_GRAY8 ? "GRAY" : "RGB ", 4);
}
