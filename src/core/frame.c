/* Frames: pixel-format geometry, allocation, wrapping, references, copies. */
#include <string.h>

#include "error.h"
#include "pixflow/device.h"
#include "pixflow/frame.h"

typedef struct pixfmt_desc {
    const char *name;
    int planes;
    int bpp[PF_FRAME_MAX_PLANES];  /* bytes per sample group in each plane */
    int chroma_sub;                /* 1: planes >= 1 are subsampled 2x2 */
} pixfmt_desc;

static const pixfmt_desc formats[PF_PIXFMT_COUNT] = {
    [PF_PIXFMT_NONE] = {"none", 0, {0, 0, 0}, 0},
    [PF_PIXFMT_RGB24] = {"rgb24", 1, {3, 0, 0}, 0},
    [PF_PIXFMT_BGR24] = {"bgr24", 1, {3, 0, 0}, 0},
    [PF_PIXFMT_RGBA] = {"rgba", 1, {4, 0, 0}, 0},
    [PF_PIXFMT_GRAY8] = {"gray8", 1, {1, 0, 0}, 0},
    [PF_PIXFMT_NV12] = {"nv12", 2, {1, 2, 0}, 1},
    [PF_PIXFMT_I420] = {"i420", 3, {1, 1, 1}, 1},
};

static int valid_fmt(pf_pixfmt fmt) { return fmt > PF_PIXFMT_NONE && fmt < PF_PIXFMT_COUNT; }

const char *pf_pixfmt_name(pf_pixfmt fmt)
{
    return (fmt >= PF_PIXFMT_NONE && fmt < PF_PIXFMT_COUNT) ? formats[fmt].name : "?";
}

pf_status pf_pixfmt_parse(const char *name, pf_pixfmt *out)
{
    PF_CHECK_ARG(name && out, "pf_pixfmt_parse", "NULL argument");
    for (int i = 1; i < PF_PIXFMT_COUNT; i++)
        if (!strcmp(name, formats[i].name)) {
            *out = (pf_pixfmt)i;
            return PF_OK;
        }
    return pf_set_error(PF_ERR_INVALID,
                        "unknown pixel format '%s' (expected rgb24, bgr24, rgba, gray8, nv12, i420)",
                        name);
}

int pf_pixfmt_num_planes(pf_pixfmt fmt) { return valid_fmt(fmt) ? formats[fmt].planes : 0; }

static pf_status check_dims(const char *fn, pf_pixfmt fmt, int width, int height)
{
    if (!valid_fmt(fmt)) return pf_set_error(PF_ERR_INVALID, "%s: invalid pixel format %d", fn, (int)fmt);
    if (width < 1 || height < 1 || width > PF_FRAME_MAX_DIM || height > PF_FRAME_MAX_DIM)
        return pf_set_error(PF_ERR_INVALID, "%s: frame size %dx%d outside 1..%d", fn, width,
                            height, PF_FRAME_MAX_DIM);
    return PF_OK;
}

pf_status pf_pixfmt_plane_size(pf_pixfmt fmt, int width, int height, int plane,
                               size_t *row_bytes, size_t *rows)
{
    pf_status st = check_dims("pf_pixfmt_plane_size", fmt, width, height);
    if (st != PF_OK) return st;
    const pixfmt_desc *d = &formats[fmt];
    if (plane < 0 || plane >= d->planes)
        return pf_set_error(PF_ERR_INVALID, "pf_pixfmt_plane_size: %s has no plane %d", d->name,
                            plane);
    size_t w = (size_t)width, h = (size_t)height;
    if (plane > 0 && d->chroma_sub) {
        w = (w + 1) / 2;
        h = (h + 1) / 2;
    }
    if (row_bytes) *row_bytes = w * (size_t)d->bpp[plane];
    if (rows) *rows = h;
    return PF_OK;
}

pf_status pf_frame_layout(pf_pixfmt fmt, int width, int height, size_t align,
                          size_t strides[PF_FRAME_MAX_PLANES],
                          size_t offsets[PF_FRAME_MAX_PLANES], size_t *total_bytes)
{
    pf_status st = check_dims("pf_frame_layout", fmt, width, height);
    if (st != PF_OK) return st;
    if (align == 0 || (align & (align - 1)))
        return pf_set_error(PF_ERR_INVALID, "pf_frame_layout: alignment %zu is not a power of two",
                            align);
    size_t total = 0;
    for (int p = 0; p < PF_FRAME_MAX_PLANES; p++) {
        if (strides) strides[p] = 0;
        if (offsets) offsets[p] = 0;
    }
    for (int p = 0; p < formats[fmt].planes; p++) {
        size_t row, rows;
        pf_pixfmt_plane_size(fmt, width, height, p, &row, &rows);
        size_t stride = (row + align - 1) & ~(align - 1);
        /* Each plane starts aligned too, so a pool's alignment carries over. */
        total = (total + align - 1) & ~(align - 1);
        if (strides) strides[p] = stride;
        if (offsets) offsets[p] = total;
        total += stride * rows; /* <= 65536 * 4 * 65536: no overflow in size_t */
    }
    if (total_bytes) *total_bytes = total;
    return PF_OK;
}

static void frame_reset(pf_frame *f)
{
    memset(f, 0, sizeof *f);
    f->pts = PF_NOPTS;
}

pf_status pf_frame_wrap(pf_frame *f, pf_pixfmt fmt, int width, int height, pf_buffer *buf,
                        size_t offset, const size_t strides[PF_FRAME_MAX_PLANES])
{
    PF_CHECK_ARG(f && buf, "pf_frame_wrap", "frame or buffer is NULL");
    pf_status st = check_dims("pf_frame_wrap", fmt, width, height);
    if (st != PF_OK) return st;
    size_t packed_strides[PF_FRAME_MAX_PLANES], offsets[PF_FRAME_MAX_PLANES], total;
    pf_frame_layout(fmt, width, height, 1, packed_strides, offsets, &total);
    const size_t *use = strides ? strides : packed_strides;
    size_t size = pf_buffer_size(buf), pos = offset;
    size_t plane_off[PF_FRAME_MAX_PLANES] = {0};
    for (int p = 0; p < formats[fmt].planes; p++) {
        size_t row, rows;
        pf_pixfmt_plane_size(fmt, width, height, p, &row, &rows);
        if (use[p] < row)
            return pf_set_error(PF_ERR_INVALID,
                                "pf_frame_wrap: %s plane %d stride %zu < row of %zu bytes",
                                formats[fmt].name, p, use[p], row);
        /* Planes back to back with the given strides; the last row needs only
         * `row` bytes, not a whole stride. */
        size_t need = use[p] * (rows - 1) + row;
        if (pos > size || need > size - pos)
            return pf_set_error(PF_ERR_INVALID,
                                "pf_frame_wrap: %dx%d %s plane %d needs bytes [%zu, %zu) but the "
                                "buffer has %zu",
                                width, height, formats[fmt].name, p, pos, pos + need, size);
        plane_off[p] = pos;
        pos += use[p] * rows;
    }
    frame_reset(f);
    f->format = fmt;
    f->width = width;
    f->height = height;
    f->num_planes = formats[fmt].planes;
    for (int p = 0; p < f->num_planes; p++) {
        f->data[p] = (uint8_t *)pf_buffer_data(buf) + plane_off[p];
        f->stride[p] = use[p];
        f->buf[p] = pf_buffer_ref(buf);
    }
    return PF_OK;
}

pf_status pf_frame_alloc(pf_frame *f, pf_pixfmt fmt, int width, int height, pf_allocator *alloc,
                         pf_stream *stream)
{
    PF_CHECK_ARG(f, "pf_frame_alloc", "frame is NULL");
    /* Pool memory rows start on 256 bytes (whole 128-byte lines on the GPU,
     * pitch-friendly for textures); heap rows on 64 (a cache line, AVX-512). */
    size_t align = alloc ? 256 : 64;
    size_t strides[PF_FRAME_MAX_PLANES], offsets[PF_FRAME_MAX_PLANES], total;
    pf_status st = pf_frame_layout(fmt, width, height, align, strides, offsets, &total);
    if (st != PF_OK) return st;
    pf_buffer *buf = NULL;
    st = alloc ? pf_allocator_alloc(alloc, total, stream, &buf) : pf_buffer_alloc_host(total, &buf);
    if (st != PF_OK) return st;
    frame_reset(f);
    f->format = fmt;
    f->width = width;
    f->height = height;
    f->num_planes = formats[fmt].planes;
    for (int p = 0; p < f->num_planes; p++) {
        f->data[p] = (uint8_t *)pf_buffer_data(buf) + offsets[p];
        f->stride[p] = strides[p];
        f->buf[p] = p == 0 ? buf : pf_buffer_ref(buf);
    }
    return PF_OK;
}

void pf_frame_ref(pf_frame *dst, const pf_frame *src)
{
    if (!dst || !src) return;
    if (dst == src) return;
    *dst = *src;
    for (int p = 0; p < PF_FRAME_MAX_PLANES; p++) pf_buffer_ref(dst->buf[p]);
    pf_buffer_ref(dst->meta);
    pf_buffer_ref(dst->icc);
}

pf_rational pf_rational_reduce(int64_t num, int64_t den)
{
    if (den <= 0 || num < 0) return (pf_rational){0, 0};
    int64_t a = num, b = den;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    if (a > 1) {
        num /= a;
        den /= a;
    }
    if (num > INT32_MAX || den > INT32_MAX) return (pf_rational){0, 0};
    return (pf_rational){(int32_t)num, (int32_t)den};
}

void pf_frame_copy_props(pf_frame *dst, const pf_frame *src)
{
    if (!dst || !src || dst == src) return;
    dst->pts = src->pts;
    dst->time_base = src->time_base;
    dst->duration = src->duration;
    dst->index = src->index;
    dst->source = src->source;
    dst->color = src->color;
    dst->sar = src->sar;
    if (dst->icc != src->icc) {
        pf_buffer_unref(&dst->icc);
        dst->icc = pf_buffer_ref(src->icc);
    }
}

pf_color_info pf_color_effective(const pf_color_info *c, int height)
{
    pf_color_info e = {PF_COLOR_RANGE_UNSPECIFIED, 0, 0, 0};
    if (c) e = *c;
    if (e.range != PF_COLOR_RANGE_FULL) e.range = PF_COLOR_RANGE_LIMITED;
    /* 0 (RGB/identity), 2 (unspecified) and reserved codes: guess by size,
     * as players and FFmpeg's filters do. */
    if (e.matrix != 1 && e.matrix != 4 && e.matrix != 5 && e.matrix != 6 && e.matrix != 7 &&
        e.matrix != 9 && e.matrix != 10)
        e.matrix = height >= 720 ? 1 : 6;
    return e;
}

void pf_frame_unref(pf_frame *f)
{
    if (!f) return;
    for (int p = 0; p < PF_FRAME_MAX_PLANES; p++) pf_buffer_unref(&f->buf[p]);
    pf_buffer_unref(&f->meta);
    pf_buffer_unref(&f->icc);
    frame_reset(f);
}

pf_mem_domain pf_frame_domain(const pf_frame *f)
{
    return (f && f->buf[0]) ? pf_buffer_domain(f->buf[0]) : PF_MEM_HOST;
}

pf_status pf_frame_copy_async(pf_frame *dst, const pf_frame *src, pf_stream *stream)
{
    PF_CHECK_ARG(dst && src && stream, "pf_frame_copy_async", "NULL argument");
    if (dst->format != src->format || dst->width != src->width || dst->height != src->height)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_frame_copy_async: destination %dx%d %s does not match source "
                            "%dx%d %s",
                            dst->width, dst->height, pf_pixfmt_name(dst->format), src->width,
                            src->height, pf_pixfmt_name(src->format));
    for (int p = 0; p < src->num_planes; p++) {
        size_t row, rows;
        pf_status st = pf_pixfmt_plane_size(src->format, src->width, src->height, p, &row, &rows);
        if (st == PF_OK)
            st = pf_memcpy2d_async(stream, dst->data[p], dst->stride[p], src->data[p],
                                   src->stride[p], row, rows);
        if (st != PF_OK) return st;
    }
    return PF_OK;
}
