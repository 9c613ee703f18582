/* JPEG through libjpeg(-turbo).
 *
 * Same setjmp discipline as image_png.c: the setjmp sits in *_run functions
 * whose state lives in the caller's struct. libjpeg treats a truncated file
 * or a damaged entropy segment as a warning (it pads with gray and goes on);
 * here those warnings end the decode with PF_ERR_FORMAT, because a frame
 * with a gray lower half is worse than an error that names the file. Benign
 * warnings (extra bytes before a marker, an unknown JFIF revision) are only
 * logged. Output colour spaces use libjpeg-turbo's extensions (JCS_EXT_*),
 * so every wanted format is written straight into the frame's rows. */
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "io_impl.h"

bool pf_jpeg_sniff(const uint8_t *data, size_t size)
{
    return size >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff;
}

#ifdef PF_HAVE_JPEG

#include <setjmp.h>

#include <jpeglib.h>
#include <jerror.h>

#if !defined(JCS_EXTENSIONS) || !defined(JCS_ALPHA_EXTENSIONS)
#error "pixflow needs libjpeg-turbo's colour space extensions (JCS_EXT_*)"
#endif

typedef struct jpeg_job {
    struct jpeg_error_mgr err;   /* first: libjpeg passes &err as the common ptr's err */
    jmp_buf jmp;
    const char *name;
    const uint8_t *data;
    size_t size;
    pf_frame *dst;
    const pf_frame *src;
    int quality;
    bool s444;
    struct jpeg_decompress_struct d;
    struct jpeg_compress_struct c;
    bool d_made, c_made;
    JSAMPROW *rows;
    unsigned char *out;          /* jpeg_mem_dest's buffer (malloc'd by libjpeg) */
    unsigned long out_size;
    pf_buffer **icc;             /* probe: where the ICC profile goes (NULL: not wanted) */
    pf_image_info hdr;
    pf_status status;
    char msg[JMSG_LENGTH_MAX + 64];
} jpeg_job;

static void on_error_exit(j_common_ptr cinfo)
{
    jpeg_job *j = (jpeg_job *)cinfo->err;
    if (j->status == PF_OK) {
        j->status = PF_ERR_FORMAT;
        (*cinfo->err->format_message)(cinfo, j->msg);
    }
    longjmp(j->jmp, 1);
}

static bool fatal_warning(int code)
{
    switch (code) {
    case JWRN_JPEG_EOF:
    case JWRN_HIT_MARKER:
    case JWRN_HUFF_BAD_CODE:
    case JWRN_ARITH_BAD_CODE:
    case JWRN_MUST_RESYNC:
    case JWRN_NOT_SEQUENTIAL:
    case JWRN_BOGUS_PROGRESSION:
        return true;
    default:
        return false;
    }
}

static void on_emit(j_common_ptr cinfo, int level)
{
    jpeg_job *j = (jpeg_job *)cinfo->err;
    if (level >= 0) return; /* trace messages */
    char buf[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, buf);
    if (fatal_warning(cinfo->err->msg_code)) {
        if (j->status == PF_OK) {
            j->status = PF_ERR_FORMAT;
            snprintf(j->msg, sizeof j->msg, "%s", buf);
        }
        longjmp(j->jmp, 1);
    }
    pf_log(PF_LOG_DEBUG, "%s: libjpeg: %s", j->name, buf);
}

static void init_err(jpeg_job *j)
{
    jpeg_std_error(&j->err);
    j->err.error_exit = on_error_exit;
    j->err.emit_message = on_emit;
}

static pf_pixfmt native_format(J_COLOR_SPACE cs)
{
    return cs == JCS_GRAYSCALE ? PF_PIXFMT_GRAY8 : PF_PIXFMT_RGB24;
}

static J_COLOR_SPACE out_space(pf_pixfmt f)
{
    switch (f) {
    case PF_PIXFMT_BGR24: return JCS_EXT_BGR;
    case PF_PIXFMT_RGBA: return JCS_EXT_RGBA;
    case PF_PIXFMT_GRAY8: return JCS_GRAYSCALE;
    default: return JCS_EXT_RGB;
    }
}

/* The EXIF orientation and ICC profile of the saved markers (probe only). */
static pf_status probe_meta(jpeg_job *j)
{
    for (jpeg_saved_marker_ptr m = j->d.marker_list; m; m = m->next)
        if (m->marker == JPEG_APP0 + 1 && m->data_length > 6 && !memcmp(m->data, "Exif\0\0", 6)) {
            j->hdr.orientation = pf_exif_orientation(m->data + 6, m->data_length - 6);
            break;
        }
    JOCTET *prof = NULL;
    unsigned int prof_n = 0;
    /* Reassembles the APP2 chunks in sequence order; FALSE when absent or inconsistent. */
    if (jpeg_read_icc_profile(&j->d, &prof, &prof_n) && prof && prof_n) {
        j->hdr.icc_size = prof_n;
        pf_status st = j->icc ? pf_io_icc_buffer(prof, prof_n, j->name, j->icc) : PF_OK;
        free(prof); /* malloc'd by libjpeg */
        if (st != PF_OK) {
            j->status = st;
            snprintf(j->msg, sizeof j->msg, "out of host memory for the ICC profile");
            return st;
        }
    }
    return PF_OK;
}

static pf_status decode_run(jpeg_job *j)
{
    if (setjmp(j->jmp)) return j->status != PF_OK ? j->status : PF_ERR_FORMAT;
    j->d.err = &j->err;
    jpeg_create_decompress(&j->d);
    j->d_made = true;
    jpeg_mem_src(&j->d, j->data, (unsigned long)j->size);
    if (!j->dst) {
        /* Probe: keep APP1 (EXIF orientation) and APP2 (ICC profile chunks). */
        jpeg_save_markers(&j->d, JPEG_APP0 + 1, 0xffff);
        jpeg_save_markers(&j->d, JPEG_APP0 + 2, 0xffff);
    }
    jpeg_read_header(&j->d, TRUE);
    j->hdr.orientation = 1;
    j->hdr.width = (int)j->d.image_width;
    j->hdr.height = (int)j->d.image_height;
    j->hdr.container = PF_IMAGE_JPEG;
    j->hdr.bit_depth = j->d.data_precision;
    j->hdr.channels = j->d.num_components;
    j->hdr.format = native_format(j->d.jpeg_color_space);
    j->hdr.interlaced = j->d.progressive_mode != 0;
    if (j->d.jpeg_color_space == JCS_CMYK || j->d.jpeg_color_space == JCS_YCCK) {
        j->status = PF_ERR_UNSUPPORTED;
        snprintf(j->msg, sizeof j->msg, "CMYK/YCCK JPEGs are not supported");
        return j->status;
    }
    if (j->d.data_precision != 8) {
        j->status = PF_ERR_UNSUPPORTED;
        snprintf(j->msg, sizeof j->msg, "%d-bit JPEG samples are not supported (8 only)",
                 j->d.data_precision);
        return j->status;
    }
    if (!j->dst) return probe_meta(j);
    pf_frame *dst = j->dst;
    if (dst->width != j->hdr.width || dst->height != j->hdr.height) {
        j->status = PF_ERR_INVALID;
        snprintf(j->msg, sizeof j->msg, "the image is %dx%d but the frame is %dx%d",
                 j->hdr.width, j->hdr.height, dst->width, dst->height);
        return j->status;
    }
    j->d.out_color_space = out_space(dst->format);
    jpeg_start_decompress(&j->d);
    if ((int)j->d.output_width != dst->width || (int)j->d.output_height != dst->height) {
        j->status = PF_ERR_INTERNAL;
        snprintf(j->msg, sizeof j->msg, "libjpeg output size %ux%u", j->d.output_width,
                 j->d.output_height);
        return j->status;
    }
    for (int y = 0; y < dst->height; y++) j->rows[y] = dst->data[0] + (size_t)y * dst->stride[0];
    while (j->d.output_scanline < j->d.output_height) {
        JDIMENSION done = j->d.output_scanline;
        if (jpeg_read_scanlines(&j->d, &j->rows[done], j->d.output_height - done) == 0) {
            j->status = PF_ERR_FORMAT;
            snprintf(j->msg, sizeof j->msg, "no scanlines after row %u", done);
            return j->status;
        }
    }
    jpeg_finish_decompress(&j->d);
    return PF_OK;
}

static pf_status decode(const uint8_t *data, size_t size, const char *name, pf_frame *dst,
                        pf_image_info *info, pf_buffer **icc)
{
    if (icc) *icc = NULL;
    if (!pf_jpeg_sniff(data, size))
        return pf_set_error(PF_ERR_FORMAT, "%s: not a JPEG file (no SOI marker)", name);
    jpeg_job *j = calloc(1, sizeof *j);
    if (!j) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", name);
    j->name = name;
    j->data = data;
    j->size = size;
    j->dst = dst;
    j->icc = icc;
    init_err(j);
    pf_status st = PF_OK;
    if (dst) {
        j->rows = malloc(sizeof *j->rows * (size_t)dst->height);
        if (!j->rows) st = pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", name);
    }
    if (st == PF_OK) {
        st = decode_run(j);
        if (st != PF_OK)
            st = pf_set_error(st, "%s: %s%s", name, st == PF_ERR_FORMAT ? "corrupt JPEG: " : "",
                              j->msg[0] ? j->msg : "decoding failed");
    }
    if (j->d_made) jpeg_destroy_decompress(&j->d);
    if (st == PF_OK && info) *info = j->hdr;
    if (st != PF_OK && icc) pf_buffer_unref(icc);
    free(j->rows);
    free(j);
    return st;
}

pf_status pf_jpeg_probe(const uint8_t *data, size_t size, const char *name, pf_image_info *info,
                        pf_buffer **icc)
{
    return decode(data, size, name, NULL, info, icc);
}

pf_status pf_jpeg_decode(const uint8_t *data, size_t size, const char *name, pf_frame *dst)
{
    return decode(data, size, name, dst, NULL, NULL);
}

static pf_status encode_run(jpeg_job *j)
{
    if (setjmp(j->jmp)) return j->status != PF_OK ? j->status : PF_ERR_INTERNAL;
    const pf_frame *f = j->src;
    j->c.err = &j->err;
    jpeg_create_compress(&j->c);
    j->c_made = true;
    jpeg_mem_dest(&j->c, &j->out, &j->out_size);
    j->c.image_width = (JDIMENSION)f->width;
    j->c.image_height = (JDIMENSION)f->height;
    switch (f->format) {
    case PF_PIXFMT_GRAY8:
        j->c.input_components = 1;
        j->c.in_color_space = JCS_GRAYSCALE;
        break;
    case PF_PIXFMT_BGR24:
        j->c.input_components = 3;
        j->c.in_color_space = JCS_EXT_BGR;
        break;
    case PF_PIXFMT_RGBA:
        j->c.input_components = 4;
        j->c.in_color_space = JCS_EXT_RGBX; /* alpha ignored: JPEG has none */
        break;
    default:
        j->c.input_components = 3;
        j->c.in_color_space = JCS_RGB;
        break;
    }
    jpeg_set_defaults(&j->c);
    jpeg_set_quality(&j->c, j->quality, TRUE);
    if (j->s444 && j->c.num_components == 3) {
        j->c.comp_info[0].h_samp_factor = 1;
        j->c.comp_info[0].v_samp_factor = 1;
    }
    jpeg_start_compress(&j->c, TRUE);
    if (pf_io_icc_fits(f->icc, f->format))
        jpeg_write_icc_profile(&j->c, pf_buffer_data(f->icc), (unsigned)pf_buffer_size(f->icc));
    for (int y = 0; y < f->height; y++) j->rows[y] = f->data[0] + (size_t)y * f->stride[0];
    while (j->c.next_scanline < j->c.image_height) {
        JDIMENSION done = j->c.next_scanline;
        jpeg_write_scanlines(&j->c, &j->rows[done], j->c.image_height - done);
    }
    jpeg_finish_compress(&j->c);
    return PF_OK;
}

pf_status pf_jpeg_encode(const pf_frame *f, int quality, bool subsample_444, const char *name,
                         pf_membuf *out)
{
    jpeg_job *j = calloc(1, sizeof *j);
    if (!j) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", name);
    j->name = name;
    j->src = f;
    j->quality = quality;
    j->s444 = subsample_444;
    init_err(j);
    pf_status st = PF_OK;
    j->rows = malloc(sizeof *j->rows * (size_t)f->height);
    if (!j->rows) st = pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", name);
    if (st == PF_OK) {
        st = encode_run(j);
        if (st != PF_OK)
            st = pf_set_error(st, "%s: JPEG encoding failed: %s", name,
                              j->msg[0] ? j->msg : "libjpeg error");
    }
    if (j->c_made) jpeg_destroy_compress(&j->c);
    if (st == PF_OK && !pf_membuf_append(out, j->out, j->out_size))
        st = pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", name);
    free(j->out); /* jpeg_mem_dest allocates with malloc */
    free(j->rows);
    free(j);
    return st;
}

#else /* !PF_HAVE_JPEG */

static pf_status no_jpeg(const char *name)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: JPEG: pixflow was built without libjpeg", name);
}

pf_status pf_jpeg_probe(const uint8_t *data, size_t size, const char *name, pf_image_info *info,
                        pf_buffer **icc)
{
    (void)data, (void)size, (void)info;
    if (icc) *icc = NULL;
    return no_jpeg(name);
}

pf_status pf_jpeg_decode(const uint8_t *data, size_t size, const char *name, pf_frame *dst)
{
    (void)data, (void)size, (void)dst;
    return no_jpeg(name);
}

pf_status pf_jpeg_encode(const pf_frame *f, int quality, bool subsample_444, const char *name,
                         pf_membuf *out)
{
    (void)f, (void)quality, (void)subsample_444, (void)out;
    return no_jpeg(name);
}

#endif
