/* Public image calls (io.h "Images"): format detection by content, whole-file
 * reads, decode into a new or a given frame, encode to a file or memory.
 * Files are read whole and decoded from memory: one decode path for files
 * and memory, and truncation is seen as the end of the bytes. */
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "io_impl.h"

bool pf_io_have_png(void)
{
#ifdef PF_HAVE_PNG
    return true;
#else
    return false;
#endif
}

bool pf_io_have_jpeg(void)
{
#ifdef PF_HAVE_JPEG
    return true;
#else
    return false;
#endif
}

const char *pf_image_format_name(pf_image_format fmt)
{
    switch (fmt) {
    case PF_IMAGE_PNG: return "png";
    case PF_IMAGE_JPEG: return "jpeg";
    case PF_IMAGE_AUTO: return "auto";
    }
    return "unknown";
}

static pf_status sniff(const uint8_t *data, size_t size, const char *name, pf_image_format *fmt)
{
    if (pf_png_sniff(data, size)) {
        *fmt = PF_IMAGE_PNG;
        return PF_OK;
    }
    if (pf_jpeg_sniff(data, size)) {
        *fmt = PF_IMAGE_JPEG;
        return PF_OK;
    }
    if (size == 0) return pf_set_error(PF_ERR_FORMAT, "%s: empty file", name);
    return pf_set_error(PF_ERR_FORMAT, "%s: not a PNG or JPEG image (unknown signature)", name);
}

/* Header of the image: info in upright sizes (after the EXIF orientation) unless keep, the
 * stored sizes in *sw, *sh, and when icc is not NULL the ICC profile (caller's reference). */
static pf_status probe_full(const uint8_t *data, size_t size, const char *name, bool keep,
                            pf_image_info *info, int *sw, int *sh, pf_buffer **icc)
{
    if (icc) *icc = NULL;
    pf_image_format fmt;
    pf_status st = sniff(data, size, name, &fmt);
    if (st != PF_OK) return st;
    st = fmt == PF_IMAGE_PNG ? pf_png_probe(data, size, name, info, icc)
                             : pf_jpeg_probe(data, size, name, info, icc);
    if (st == PF_OK && (info->width <= 0 || info->height <= 0 ||
                        info->width > PF_FRAME_MAX_DIM || info->height > PF_FRAME_MAX_DIM))
        st = pf_set_error(PF_ERR_FORMAT, "%s: image size %dx%d is out of range (1..%d)", name,
                          info->width, info->height, PF_FRAME_MAX_DIM);
    if (st != PF_OK) {
        if (icc) pf_buffer_unref(icc);
        return st;
    }
    if (sw) *sw = info->width;
    if (sh) *sh = info->height;
    if (!keep)
        pf_image_oriented_size(info->orientation, info->width, info->height, &info->width,
                               &info->height);
    return PF_OK;
}

static pf_status probe_mem(const uint8_t *data, size_t size, const char *name,
                           pf_image_info *info)
{
    return probe_full(data, size, name, false, info, NULL, NULL, NULL);
}

static pf_status decode_mem(const uint8_t *data, size_t size, const char *name, pf_frame *dst)
{
    pf_image_format fmt;
    pf_status st = sniff(data, size, name, &fmt);
    if (st != PF_OK) return st;
    return fmt == PF_IMAGE_PNG ? pf_png_decode(data, size, name, dst)
                               : pf_jpeg_decode(data, size, name, dst);
}

/* Decodes into dst, turning the stored sw x sh pixels upright through a scratch frame when
 * `orientation` moves them (dst is already the upright size). */
static pf_status decode_oriented(const uint8_t *data, size_t size, const char *name,
                                 int orientation, int sw, int sh, pf_frame *dst)
{
    if (orientation <= 1 || orientation > 8) return decode_mem(data, size, name, dst);
    pf_frame stored = {0};
    pf_status st = pf_frame_alloc(&stored, dst->format, sw, sh, NULL, NULL);
    if (st != PF_OK) return pf_error_prefix(st, "%s", name);
    st = decode_mem(data, size, name, &stored);
    if (st == PF_OK) st = pf_image_orient(&stored, orientation, dst);
    pf_frame_unref(&stored);
    return st;
}

static bool image_format(pf_pixfmt f)
{
    return f == PF_PIXFMT_RGB24 || f == PF_PIXFMT_BGR24 || f == PF_PIXFMT_RGBA ||
           f == PF_PIXFMT_GRAY8;
}

pf_status pf_image_probe_memory(const void *data, size_t size, pf_image_info *out)
{
    PF_CHECK_ARG(out, "pf_image_probe_memory", "out is NULL");
    memset(out, 0, sizeof *out);
    PF_CHECK_ARG(data || size == 0, "pf_image_probe_memory", "data is NULL");
    return probe_mem(data, size, "<memory>", out);
}

pf_status pf_image_probe(const char *path, pf_image_info *out)
{
    PF_CHECK_ARG(out, "pf_image_probe", "out is NULL");
    memset(out, 0, sizeof *out);
    PF_CHECK_ARG(path, "pf_image_probe", "path is NULL");
    uint8_t *data = NULL;
    size_t size = 0;
    pf_status st = pf_io_read_file(path, &data, &size);
    if (st == PF_OK) st = probe_mem(data, size, pf_io_in_name(path), out);
    free(data);
    return st;
}

static pf_status check_want(const char *name, pf_pixfmt want)
{
    if (want != PF_PIXFMT_NONE && !image_format(want))
        return pf_set_error(PF_ERR_INVALID,
                            "%s: cannot decode an image to %s (rgb24, bgr24, rgba, gray8 or "
                            "none for the image's own)",
                            name, pf_pixfmt_name(want));
    return PF_OK;
}

static pf_status read_mem_new(const uint8_t *data, size_t size, const char *name, pf_pixfmt want,
                              bool keep, pf_frame *out, pf_image_info *info_out)
{
    pf_status st = check_want(name, want);
    if (st != PF_OK) return st;
    pf_image_info info;
    int sw = 0, sh = 0;
    pf_buffer *icc = NULL;
    st = probe_full(data, size, name, keep, &info, &sw, &sh, &icc);
    if (st != PF_OK) return st;
    if (want == PF_PIXFMT_NONE) want = info.format;
    st = pf_frame_alloc(out, want, info.width, info.height, NULL, NULL);
    if (st != PF_OK) {
        pf_buffer_unref(&icc);
        return pf_error_prefix(st, "%s", name);
    }
    st = decode_oriented(data, size, name, keep ? 1 : info.orientation, sw, sh, out);
    if (st != PF_OK) {
        pf_buffer_unref(&icc);
        pf_frame_unref(out);
        return st;
    }
    out->icc = icc;
    if (info_out) *info_out = info;
    return PF_OK;
}

pf_status pf_image_read_memory(const void *data, size_t size, const char *name, pf_pixfmt want,
                               pf_frame *out)
{
    PF_CHECK_ARG(out, "pf_image_read_memory", "out is NULL");
    memset(out, 0, sizeof *out);
    PF_CHECK_ARG(data || size == 0, "pf_image_read_memory", "data is NULL");
    return read_mem_new(data, size, name ? name : "<memory>", want, false, out, NULL);
}

/* pf_image_read and pf_image_read_with (`fn` names the caller in argument errors). */
static pf_status read_file_new(const char *fn, const char *path, pf_pixfmt want, bool keep,
                               pf_frame *out, pf_image_info *info)
{
    PF_CHECK_ARG(out, fn, "out is NULL");
    memset(out, 0, sizeof *out);
    if (info) memset(info, 0, sizeof *info);
    PF_CHECK_ARG(path, fn, "path is NULL");
    pf_status st = check_want(pf_io_in_name(path), want);
    if (st != PF_OK) return st;
    uint8_t *data = NULL;
    size_t size = 0;
    st = pf_io_read_file(path, &data, &size);
    if (st == PF_OK) st = read_mem_new(data, size, pf_io_in_name(path), want, keep, out, info);
    free(data);
    return st;
}

pf_status pf_image_read(const char *path, pf_pixfmt want, pf_frame *out)
{
    return read_file_new("pf_image_read", path, want, false, out, NULL);
}

pf_image_read_params pf_image_read_params_default(void)
{
    pf_image_read_params p;
    memset(&p, 0, sizeof p);
    p.want = PF_PIXFMT_NONE;
    return p;
}

pf_status pf_image_read_with(const char *path, const pf_image_read_params *p, pf_frame *out,
                             pf_image_info *info)
{
    pf_image_read_params def = pf_image_read_params_default();
    if (!p) p = &def;
    return read_file_new("pf_image_read_with", path, p->want, p->keep_orientation, out, info);
}

static pf_status read_mem_into(const uint8_t *data, size_t size, const char *name, pf_frame *dst)
{
    pf_status st = pf_io_check_image_frame("pf_image_read_into", name, dst);
    if (st != PF_OK) return st;
    pf_image_info info;
    int sw = 0, sh = 0;
    pf_buffer *icc = NULL;
    st = probe_full(data, size, name, false, &info, &sw, &sh, &icc);
    if (st != PF_OK) return st;
    if (dst->width != info.width || dst->height != info.height) {
        pf_buffer_unref(&icc);
        return pf_set_error(PF_ERR_INVALID, "%s: the image is %dx%d%s but the frame is %dx%d",
                            name, info.width, info.height,
                            info.orientation > 1 ? " (upright, after its EXIF orientation)" : "",
                            dst->width, dst->height);
    }
    st = decode_oriented(data, size, name, info.orientation, sw, sh, dst);
    if (st != PF_OK) {
        pf_buffer_unref(&icc);
        return st;
    }
    pf_buffer_unref(&dst->icc);
    dst->icc = icc;
    return PF_OK;
}

pf_status pf_image_read_memory_into(const void *data, size_t size, const char *name,
                                    pf_frame *dst)
{
    PF_CHECK_ARG(data || size == 0, "pf_image_read_memory_into", "data is NULL");
    return read_mem_into(data, size, name ? name : "<memory>", dst);
}

pf_status pf_image_read_into(const char *path, pf_frame *dst)
{
    PF_CHECK_ARG(path, "pf_image_read_into", "path is NULL");
    pf_status st = pf_io_check_image_frame("pf_image_read_into", pf_io_in_name(path), dst);
    if (st != PF_OK) return st;
    uint8_t *data = NULL;
    size_t size = 0;
    st = pf_io_read_file(path, &data, &size);
    if (st == PF_OK) st = read_mem_into(data, size, pf_io_in_name(path), dst);
    free(data);
    return st;
}

/* Writing ------------------------------------------------------------------------------- */

pf_image_write_params pf_image_write_params_default(void)
{
    pf_image_write_params p;
    memset(&p, 0, sizeof p);
    p.format = PF_IMAGE_AUTO;
    p.jpeg_quality = 90;
    p.jpeg_subsample_444 = false;
    p.png_compression = 6;
    return p;
}

static pf_status encode(const char *fn, const char *name, const pf_frame *f,
                        const pf_image_write_params *p, pf_image_format fmt, pf_membuf *out)
{
    pf_status st = pf_io_check_image_frame(fn, name, f);
    if (st != PF_OK) return st;
    if (p->jpeg_quality < 1 || p->jpeg_quality > 100)
        return pf_set_error(PF_ERR_INVALID, "%s: %s: jpeg_quality %d is out of range 1..100", fn,
                            name, p->jpeg_quality);
    if (p->png_compression < 0 || p->png_compression > 9)
        return pf_set_error(PF_ERR_INVALID, "%s: %s: png_compression %d is out of range 0..9", fn,
                            name, p->png_compression);
    if (fmt == PF_IMAGE_PNG) return pf_png_encode(f, p->png_compression, name, out);
    if (fmt == PF_IMAGE_JPEG)
        return pf_jpeg_encode(f, p->jpeg_quality, p->jpeg_subsample_444, name, out);
    return pf_set_error(PF_ERR_INVALID, "%s: %s: unknown image format %d", fn, name, (int)fmt);
}

pf_status pf_image_encode(const pf_frame *f, const pf_image_write_params *p, pf_buffer **out)
{
    PF_CHECK_ARG(out, "pf_image_encode", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(p, "pf_image_encode", "params are NULL (the format is needed)");
    if (p->format != PF_IMAGE_PNG && p->format != PF_IMAGE_JPEG)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_image_encode: format must be PF_IMAGE_PNG or PF_IMAGE_JPEG");
    pf_membuf m = {0};
    pf_status st = encode("pf_image_encode", "<memory>", f, p, p->format, &m);
    if (st != PF_OK) {
        pf_membuf_free(&m);
        return st;
    }
    return pf_membuf_to_buffer(&m, out);
}

pf_status pf_image_write(const char *path, const pf_frame *f, const pf_image_write_params *p)
{
    PF_CHECK_ARG(path && path[0], "pf_image_write", "path is NULL or empty");
    pf_image_write_params def = pf_image_write_params_default();
    if (!p) p = &def;
    pf_image_format fmt = p->format;
    if (fmt == PF_IMAGE_AUTO) {
        if (pf_io_has_ext(path, ".png"))
            fmt = PF_IMAGE_PNG;
        else if (pf_io_has_ext(path, ".jpg") || pf_io_has_ext(path, ".jpeg"))
            fmt = PF_IMAGE_JPEG;
        else
            return pf_set_error(PF_ERR_INVALID,
                                "pf_image_write: %s: cannot tell the format from the extension "
                                "(.png, .jpg, .jpeg); set params.format",
                                pf_io_out_name(path));
    }
    pf_membuf m = {0};
    pf_status st = encode("pf_image_write", pf_io_out_name(path), f, p, fmt, &m);
    /* Images come by the thousand into one directory: the data is fsync'ed,
     * the directory is not (PF_OUTPUT_NO_DIR_SYNC says why). */
    if (st == PF_OK) st = pf_output_write_file(path, m.data, m.size, PF_OUTPUT_NO_DIR_SYNC);
    pf_membuf_free(&m);
    return st;
}
