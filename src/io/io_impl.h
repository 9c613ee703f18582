/* Private: what the io files share: file names for messages, whole-file
 * reads, atomic file writes, a growable memory sink, frame checks, and the
 * PNG / JPEG codec entry points behind pf_image_*. */
#ifndef PF_IO_IMPL_H
#define PF_IO_IMPL_H

#include <stdbool.h>
#include <stdio.h>

#include "pixflow/io.h"

/* Largest file pf_image_read loads (a 65536^2 RGBA PNG compresses far below). */
#define PF_IO_MAX_FILE ((size_t)1 << 31)

/* "-" -> "<stdin>" / "<stdout>", NULL -> "<memory>", else the path. */
const char *pf_io_in_name(const char *path);
const char *pf_io_out_name(const char *path);
bool pf_io_is_std(const char *path);
/* Case-insensitive test of the path's extension (ext with the dot). */
bool pf_io_has_ext(const char *path, const char *ext);

/* Reads all of `path` into a malloc'd block (*data, *size); the caller frees. */
pf_status pf_io_read_file(const char *path, uint8_t **data, size_t *size);

/* Inputs this process is reading (output_file.c): hold(path, true) while a
 * reader or source has it open, hold(path, false) after (counted per path
 * string, so a file deleted meanwhile is still released; compared by device
 * and inode). pf_output_open refuses a held file with PF_ERR_INVALID naming
 * both paths; pf_io_check_not_input makes that check alone. */
void pf_io_input_hold(const char *path, bool hold);
pf_status pf_io_check_not_input(const char *path);
/* Error for a failed fopen/fwrite: names the path and strerror(errno), and
 * for a missing parent directory says so. */
pf_status pf_io_errno(const char *what, const char *path, int err);

/* Growable byte sink (encoders write into it). */
typedef struct pf_membuf {
    uint8_t *data;
    size_t size, cap;
    bool failed;    /* an append ran out of memory */
} pf_membuf;

bool pf_membuf_append(pf_membuf *m, const void *data, size_t n);
/* Hands the bytes over as a pf_buffer (the block is freed with it) and
 * empties m; frees them on failure. */
pf_status pf_membuf_to_buffer(pf_membuf *m, pf_buffer **out);
void pf_membuf_free(pf_membuf *m);

/* PF_OK when f is a non-empty host-addressable frame of an image format
 * (RGB24, BGR24, RGBA, GRAY8); else PF_ERR_INVALID "FN: NAME: ...". */
pf_status pf_io_check_image_frame(const char *fn, const char *name, const pf_frame *f);
/* Whether the frame's plane 0 can be read/written by the CPU. */
bool pf_io_host_frame(const pf_frame *f);

/* Image metadata (image_meta.c) ------------------------------------------------------------ */

/* The Orientation tag (1..8) of an EXIF TIFF block (from "II"/"MM" on); 1 when absent or
 * malformed. */
int pf_exif_orientation(const uint8_t *tiff, size_t n);
/* Size of a w x h stored image once `orientation` is applied (5..8 swap the sides). */
void pf_image_oriented_size(int orientation, int w, int h, int *ow, int *oh);
/* Writes src (stored order) turned/flipped upright into dst (same format, oriented size). */
pf_status pf_image_orient(const pf_frame *src, int orientation, pf_frame *dst);
/* A new host buffer holding a copy of the `size` profile bytes. */
pf_status pf_io_icc_buffer(const void *data, size_t size, const char *name, pf_buffer **out);
/* Whether the profile's colour space suits an image of format fmt ('GRAY' for GRAY8, else
 * 'RGB '): an encoder embeds only a profile that fits. */
bool pf_io_icc_fits(const pf_buffer *icc, pf_pixfmt fmt);

/* Codecs ----------------------------------------------------------------------------------
 * Decoders read `size` bytes at `data` (`name` for messages). probe fills
 * info from the header, in stored order (width and height before the EXIF
 * orientation, which it reports in info->orientation), and when icc is not
 * NULL sets *icc to a new buffer holding the embedded ICC profile (NULL if
 * none). decode writes into dst (already sized to the stored image and of an
 * image format), converting as io.h describes. Encoders append the file's
 * bytes to *out, with f->icc embedded when it fits the output. Without the
 * library each returns PF_ERR_UNSUPPORTED. */
bool pf_png_sniff(const uint8_t *data, size_t size);
bool pf_jpeg_sniff(const uint8_t *data, size_t size);
pf_status pf_png_probe(const uint8_t *data, size_t size, const char *name, pf_image_info *info,
                       pf_buffer **icc);
pf_status pf_png_decode(const uint8_t *data, size_t size, const char *name, pf_frame *dst);
pf_status pf_png_encode(const pf_frame *f, int level, const char *name, pf_membuf *out);
pf_status pf_jpeg_probe(const uint8_t *data, size_t size, const char *name, pf_image_info *info,
                        pf_buffer **icc);
pf_status pf_jpeg_decode(const uint8_t *data, size_t size, const char *name, pf_frame *dst);
pf_status pf_jpeg_encode(const pf_frame *f, int quality, bool subsample_444, const char *name,
                         pf_membuf *out);

#endif
