/* PNG through libpng.
 *
 * libpng reports errors by longjmp. Each setjmp lives in a small function
 * (decode_run, encode_run) that keeps all state in a struct owned by its
 * caller: values changed after setjmp are then never locals of the function
 * that called setjmp (C11 7.13.2.1), and the caller frees everything on
 * both paths. The error callback copies libpng's message into that struct
 * so the status names the file and what libpng found wrong. */
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "io_impl.h"

bool pf_png_sniff(const uint8_t *data, size_t size)
{
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    return size >= 8 && memcmp(data, sig, 8) == 0;
}

#ifdef PF_HAVE_PNG

#include <png.h>

typedef struct png_job {
    const char *name;
    const uint8_t *data;    /* decode input */
    size_t size, pos;
    pf_frame *dst;          /* decode output (NULL: probe only) */
    const pf_frame *src;    /* encode input */
    int level;
    pf_membuf *out;         /* encode output */
    png_structp png;
    png_infop info;
    png_bytep *rows;
    pf_buffer **icc;        /* probe: where the ICC profile goes (NULL: not wanted) */
    pf_image_info hdr;
    pf_status status;       /* set before any longjmp */
    char msg[256];
} png_job;

static void on_error(png_structp png, png_const_charp msg)
{
    png_job *j = png_get_error_ptr(png);
    if (j->status == PF_OK) {
        j->status = PF_ERR_FORMAT;
        snprintf(j->msg, sizeof j->msg, "%s", msg);
    }
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg)
{
    png_job *j = png_get_error_ptr(png);
    pf_log(PF_LOG_DEBUG, "%s: libpng: %s", j->name, msg);
}

static void read_mem(png_structp png, png_bytep out, size_t n)
{
    png_job *j = png_get_io_ptr(png);
    if (n > j->size - j->pos) {
        snprintf(j->msg, sizeof j->msg, "truncated (the file ends after %zu bytes)", j->size);
        j->status = PF_ERR_FORMAT;
        png_longjmp(png, 1);
    }
    memcpy(out, j->data + j->pos, n);
    j->pos += n;
}

/* Native pixel format of the stored image (io.h: want = NONE). */
static pf_pixfmt native_format(int color_type, bool trns)
{
    bool alpha = (color_type & PNG_COLOR_MASK_ALPHA) || trns;
    if (alpha) return PF_PIXFMT_RGBA;
    return (color_type & PNG_COLOR_MASK_COLOR) ? PF_PIXFMT_RGB24 : PF_PIXFMT_GRAY8;
}

/* Sets up the transforms that turn the stored image into `want`. */
static void set_transforms(png_job *j, int color_type, int depth, pf_pixfmt want)
{
    png_structp png = j->png;
    bool color = (color_type & PNG_COLOR_MASK_COLOR) != 0;
    bool has_alpha = (color_type & PNG_COLOR_MASK_ALPHA) != 0 ||
                     png_get_valid(png, j->info, PNG_INFO_tRNS);
    png_set_expand(png); /* palette -> RGB, 1/2/4-bit gray -> 8, tRNS -> alpha */
    if (depth == 16) png_set_scale_16(png);
    if (want == PF_PIXFMT_GRAY8) {
        /* BT.601 luma, the same weights as a JPEG's Y (error_action 1: silent). */
        if (color || color_type == PNG_COLOR_TYPE_PALETTE)
            png_set_rgb_to_gray_fixed(png, 1, 29900, 58700);
        if (has_alpha) png_set_strip_alpha(png);
        return;
    }
    if (!color) png_set_gray_to_rgb(png);
    if (want == PF_PIXFMT_RGBA) {
        if (!has_alpha) png_set_add_alpha(png, 0xff, PNG_FILLER_AFTER);
    } else {
        if (has_alpha) png_set_strip_alpha(png);
        if (want == PF_PIXFMT_BGR24) png_set_bgr(png);
    }
}

static int channels_of(pf_pixfmt f)
{
    return f == PF_PIXFMT_RGBA ? 4 : f == PF_PIXFMT_GRAY8 ? 1 : 3;
}

static pf_status decode_run(png_job *j)
{
    if (setjmp(png_jmpbuf(j->png))) return j->status != PF_OK ? j->status : PF_ERR_FORMAT;
    png_set_user_limits(j->png, PF_FRAME_MAX_DIM, PF_FRAME_MAX_DIM);
    png_set_read_fn(j->png, j, read_mem);
    png_read_info(j->png, j->info);
    png_uint_32 w = 0, h = 0;
    int depth = 0, color_type = 0, interlace = 0;
    png_get_IHDR(j->png, j->info, &w, &h, &depth, &color_type, &interlace, NULL, NULL);
    bool trns = png_get_valid(j->png, j->info, PNG_INFO_tRNS) != 0;
    j->hdr.width = (int)w;
    j->hdr.height = (int)h;
    j->hdr.container = PF_IMAGE_PNG;
    j->hdr.bit_depth = depth;
    j->hdr.format = native_format(color_type, trns);
    j->hdr.channels = color_type == PNG_COLOR_TYPE_PALETTE ? (trns ? 4 : 3)
                                                           : (int)png_get_channels(j->png, j->info) +
                                                                 (trns ? 1 : 0);
    j->hdr.interlaced = interlace != PNG_INTERLACE_NONE;
    j->hdr.orientation = 1;
    if (!j->dst) {
        /* eXIf (PNG 1.5 extension) carries the same TIFF block as a JPEG's APP1. */
        png_uint_32 exif_n = 0;
        png_bytep exif = NULL;
        if (png_get_eXIf_1(j->png, j->info, &exif_n, &exif) && exif)
            j->hdr.orientation = pf_exif_orientation(exif, exif_n);
        png_charp icc_name = NULL;
        png_bytep prof = NULL;
        png_uint_32 prof_n = 0;
        int comp = 0;
        if (png_get_iCCP(j->png, j->info, &icc_name, &comp, &prof, &prof_n) && prof && prof_n) {
            j->hdr.icc_size = prof_n;
            if (j->icc && pf_io_icc_buffer(prof, prof_n, j->name, j->icc) != PF_OK) {
                j->status = PF_ERR_NOMEM;
                snprintf(j->msg, sizeof j->msg, "out of host memory for the ICC profile");
                return j->status;
            }
        }
        return PF_OK;
    }

    pf_frame *dst = j->dst;
    if (dst->width != (int)w || dst->height != (int)h) {
        j->status = PF_ERR_INVALID;
        snprintf(j->msg, sizeof j->msg, "the image is %ux%u but the frame is %dx%d", (unsigned)w,
                 (unsigned)h, dst->width, dst->height);
        return j->status;
    }
    set_transforms(j, color_type, depth, dst->format);
    png_set_interlace_handling(j->png);
    png_read_update_info(j->png, j->info);
    int ch = (int)png_get_channels(j->png, j->info);
    if (png_get_bit_depth(j->png, j->info) != 8 || ch != channels_of(dst->format) ||
        png_get_rowbytes(j->png, j->info) != (size_t)w * (size_t)ch) {
        j->status = PF_ERR_INTERNAL;
        snprintf(j->msg, sizeof j->msg, "libpng transforms gave %d channels of %d bits", ch,
                 png_get_bit_depth(j->png, j->info));
        return j->status;
    }
    for (png_uint_32 y = 0; y < h; y++) j->rows[y] = dst->data[0] + (size_t)y * dst->stride[0];
    png_read_image(j->png, j->rows);
    png_read_end(j->png, NULL);
    return PF_OK;
}

static pf_status decode(const uint8_t *data, size_t size, const char *name, pf_frame *dst,
                        pf_image_info *info, pf_buffer **icc)
{
    if (icc) *icc = NULL;
    if (!pf_png_sniff(data, size))
        return pf_set_error(PF_ERR_FORMAT, "%s: not a PNG file (bad signature)", name);
    png_job j = {.name = name, .data = data, .size = size, .dst = dst, .icc = icc};
    if (dst) {
        j.rows = malloc(sizeof *j.rows * (size_t)dst->height);
        if (!j.rows) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", name);
    }
    j.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &j, on_error, on_warning);
    if (j.png) j.info = png_create_info_struct(j.png);
    pf_status st;
    if (!j.png || !j.info) {
        st = pf_set_error(PF_ERR_NOMEM, "%s: cannot create a libpng decoder", name);
    } else {
        st = decode_run(&j);
        if (st != PF_OK)
            st = pf_set_error(st, "%s: %s%s", name, st == PF_ERR_FORMAT ? "corrupt PNG: " : "",
                              j.msg[0] ? j.msg : "decoding failed");
    }
    png_destroy_read_struct(j.png ? &j.png : NULL, j.info ? &j.info : NULL, NULL);
    free(j.rows);
    if (st == PF_OK && info) *info = j.hdr;
    if (st != PF_OK && icc) pf_buffer_unref(icc);
    return st;
}

pf_status pf_png_probe(const uint8_t *data, size_t size, const char *name, pf_image_info *info,
                       pf_buffer **icc)
{
    return decode(data, size, name, NULL, info, icc);
}

pf_status pf_png_decode(const uint8_t *data, size_t size, const char *name, pf_frame *dst)
{
    return decode(data, size, name, dst, NULL, NULL);
}

static void write_mem(png_structp png, png_bytep data, size_t n)
{
    png_job *j = png_get_io_ptr(png);
    if (!pf_membuf_append(j->out, data, n)) {
        j->status = PF_ERR_NOMEM;
        snprintf(j->msg, sizeof j->msg, "out of host memory");
        png_longjmp(png, 1);
    }
}

static void flush_mem(png_structp png)
{
    (void)png;
}

static pf_status encode_run(png_job *j)
{
    if (setjmp(png_jmpbuf(j->png))) return j->status != PF_OK ? j->status : PF_ERR_INTERNAL;
    const pf_frame *f = j->src;
    int color_type = f->format == PF_PIXFMT_GRAY8  ? PNG_COLOR_TYPE_GRAY
                     : f->format == PF_PIXFMT_RGBA ? PNG_COLOR_TYPE_RGBA
                                                   : PNG_COLOR_TYPE_RGB;
    png_set_write_fn(j->png, j, write_mem, flush_mem);
    png_set_compression_level(j->png, j->level);
    /* Level 0 is for speed: filtering would cost time and buy nothing. */
    if (j->level == 0) png_set_filter(j->png, 0, PNG_FILTER_NONE);
    png_set_IHDR(j->png, j->info, (png_uint_32)f->width, (png_uint_32)f->height, 8, color_type,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    /* The profile is carried as it came: no rewrite of "known incorrect" sRGB profiles (libpng
     * refuses those on write by default), and a profile libpng still rejects is left out with
     * a warning (logged) instead of failing the image. */
    png_set_option(j->png, PNG_SKIP_sRGB_CHECK_PROFILE, PNG_OPTION_ON);
    png_set_benign_errors(j->png, 1);
    if (pf_io_icc_fits(f->icc, f->format))
        png_set_iCCP(j->png, j->info, "ICC profile", PNG_COMPRESSION_TYPE_BASE,
                     pf_buffer_data(f->icc), (png_uint_32)pf_buffer_size(f->icc));
    png_write_info(j->png, j->info);
    if (f->format == PF_PIXFMT_BGR24) png_set_bgr(j->png);
    for (int y = 0; y < f->height; y++) j->rows[y] = f->data[0] + (size_t)y * f->stride[0];
    png_write_image(j->png, j->rows);
    png_write_end(j->png, NULL);
    return PF_OK;
}

pf_status pf_png_encode(const pf_frame *f, int level, const char *name, pf_membuf *out)
{
    png_job j = {.name = name, .src = f, .level = level, .out = out};
    j.rows = malloc(sizeof *j.rows * (size_t)f->height);
    if (!j.rows) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", name);
    j.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &j, on_error, on_warning);
    if (j.png) j.info = png_create_info_struct(j.png);
    pf_status st;
    if (!j.png || !j.info) {
        st = pf_set_error(PF_ERR_NOMEM, "%s: cannot create a libpng encoder", name);
    } else {
        st = encode_run(&j);
        if (st != PF_OK)
            st = pf_set_error(st, "%s: PNG encoding failed: %s", name,
                              j.msg[0] ? j.msg : "libpng error");
    }
    png_destroy_write_struct(j.png ? &j.png : NULL, j.info ? &j.info : NULL);
    free(j.rows);
    return st;
}

#else /* !PF_HAVE_PNG */

static pf_status no_png(const char *name)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: PNG: pixflow was built without libpng", name);
}

pf_status pf_png_probe(const uint8_t *data, size_t size, const char *name, pf_image_info *info,
                       pf_buffer **icc)
{
    (void)data, (void)size, (void)info;
    if (icc) *icc = NULL;
    return no_png(name);
}

pf_status pf_png_decode(const uint8_t *data, size_t size, const char *name, pf_frame *dst)
{
    (void)data, (void)size, (void)dst;
    return no_png(name);
}

pf_status pf_png_encode(const pf_frame *f, int level, const char *name, pf_membuf *out)
{
    (void)f, (void)level, (void)out;
    return no_png(name);
}

#endif
