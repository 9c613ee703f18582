/* pixflow/frame.h - video frames: pixel formats, planes, strides, timestamps.
 *
 * A pf_frame is a small value (put it on the stack, in a queue, in an array)
 * that holds one pf_buffer reference per plane. Copying the struct does not
 * add references: use pf_frame_ref() for a second owner and pf_frame_unref()
 * to let go.
 *
 *   pf_frame f = {0};
 *   if (pf_frame_alloc(&f, PF_PIXFMT_NV12, 1920, 1080, NULL, NULL) < 0) ...;
 *   uint8_t *y = f.data[0], *uv = f.data[1];   // f.stride[i] bytes per row
 *   f.pts = 3003; f.time_base = (pf_rational){1, 30000};
 *   pf_frame_unref(&f);
 *
 * Plane geometry (chroma rounds up, so odd sizes are allowed):
 *   RGB24, BGR24: 1 plane, 3 bytes per pixel, interleaved in the named order
 *   RGBA:         1 plane, 4 bytes per pixel
 *   GRAY8:        1 plane, 1 byte per pixel
 *   NV12:         Y (w x h), interleaved UV ((w+1)/2 pairs x (h+1)/2 rows)
 *   I420:         Y (w x h), U and V ((w+1)/2 x (h+1)/2 each)
 * Frame fields are public for reading by kernels; change them only through
 * these functions, except the metadata fields (pts, time_base, duration,
 * index, source, color, sar), which stages copy from input to output frame
 * (pf_frame_copy_props).
 */
#ifndef PIXFLOW_FRAME_H
#define PIXFLOW_FRAME_H

#include "buffer.h"

PF_BEGIN_DECLS

typedef enum pf_pixfmt {
    PF_PIXFMT_NONE = 0,
    PF_PIXFMT_RGB24,
    PF_PIXFMT_BGR24,
    PF_PIXFMT_RGBA,
    PF_PIXFMT_GRAY8,
    PF_PIXFMT_NV12,
    PF_PIXFMT_I420,
    PF_PIXFMT_COUNT
} pf_pixfmt;

#define PF_FRAME_MAX_PLANES 3
#define PF_FRAME_MAX_DIM 65536 /* width and height limit */
#define PF_NOPTS ((int64_t)INT64_MIN)

typedef struct pf_rational {
    int32_t num, den;
} pf_rational;

/* num/den in lowest terms (24000/1001 stays exact); {0, 0} when den <= 0,
 * num < 0, or the reduced terms do not fit in 32 bits. */
PF_API pf_rational pf_rational_reduce(int64_t num, int64_t den);

/* Colour description of a video stream or frame (ITU-T H.273 code points,
 * the values FFmpeg's AVCOL_* enums use). 0 = unspecified everywhere, so a
 * zeroed frame says nothing about its colour. For NV12/I420 frames matrix
 * and range say how the samples encode RGB. RGB frames are full range by
 * definition; they keep the matrix and range of the YUV they were converted
 * from, so that a writer encodes them back the same way and tags its output
 * like the input. */
typedef enum pf_color_range {
    PF_COLOR_RANGE_UNSPECIFIED = 0,
    PF_COLOR_RANGE_LIMITED = 1,      /* "tv"/"mpeg": Y 16..235, chroma 16..240 */
    PF_COLOR_RANGE_FULL = 2          /* "pc"/"jpeg": 0..255 */
} pf_color_range;

typedef struct pf_color_info {
    pf_color_range range;
    int matrix;      /* MatrixCoefficients: 1 BT.709, 5 BT.470BG, 6 SMPTE 170M (both
                        BT.601), 9 BT.2020 non-constant; 0 or 2 unspecified */
    int primaries;   /* ColourPrimaries: 1 BT.709, 5 BT.470BG, 6 SMPTE 170M, 9 BT.2020 */
    int transfer;    /* TransferCharacteristics: 1 BT.709, 6 SMPTE 170M, 13 sRGB,
                        16 PQ, 18 HLG; 14/15 BT.2020 */
} pf_color_info;

/* The colour a YUV frame of `height` rows is converted with when `c` leaves
 * something unspecified, as players do: range limited; matrix BT.709 (1)
 * for height >= 720, else BT.601 (6). Primaries and transfer are returned
 * unchanged (pixflow does not convert between them). c NULL = all
 * unspecified. */
PF_API pf_color_info pf_color_effective(const pf_color_info *c, int height);

typedef struct pf_frame {
    pf_pixfmt format;
    int width, height;              /* in pixels of plane 0 */
    int num_planes;
    uint8_t *data[PF_FRAME_MAX_PLANES];   /* host or device addresses */
    size_t stride[PF_FRAME_MAX_PLANES];   /* bytes between rows */
    pf_buffer *buf[PF_FRAME_MAX_PLANES];  /* one reference per used plane */
    int64_t pts;                    /* in time_base units; PF_NOPTS if unknown */
    pf_rational time_base;          /* {0,0} if unknown */
    int64_t index;                  /* frame number within its source */
    int32_t source;                 /* source (stream/camera) id */
    pf_buffer *meta;                /* optional user metadata, referenced like planes */
    /* ICC colour profile of the pixels (issue 13): NULL when none. A host buffer holding exactly
     * the profile's bytes (pf_buffer_size), referenced like the planes, so pf_frame_ref() and
     * pf_frame_unref() share and release it. Set by pf_image_read* from a PNG iCCP chunk or
     * JPEG APP2 markers; pf_image_write/encode embed it again when its colour space fits the
     * output (RGB profile for colour, GRAY profile for gray). Stages that make a new frame from
     * an input frame carry it over (a reference). */
    pf_buffer *icc;
    /* Media description carried from the decoder to the encoder (zeroed =
     * unknown): */
    int64_t duration;               /* display time in time_base units; 0 unknown */
    pf_color_info color;            /* see pf_color_info */
    pf_rational sar;                /* sample (pixel) aspect ratio; {0,0} unknown = 1:1 */
} pf_frame;

PF_API const char *pf_pixfmt_name(pf_pixfmt fmt);
/* Accepts the names pf_pixfmt_name() returns ("rgb24", "nv12", ...). */
PF_API pf_status pf_pixfmt_parse(const char *name, pf_pixfmt *out);
PF_API int pf_pixfmt_num_planes(pf_pixfmt fmt);

/* Bytes per row (without padding) and rows of plane `plane` of a w x h frame. */
PF_API pf_status pf_pixfmt_plane_size(pf_pixfmt fmt, int width, int height, int plane,
                                      size_t *row_bytes, size_t *rows);

/* Layout of a frame packed in one buffer with each stride rounded up to
 * `align` bytes (a power of two; 1 = tightly packed). Fills strides[],
 * offsets[] (of each plane from the start) and *total_bytes. Rejects
 * zero, negative or > PF_FRAME_MAX_DIM sizes with PF_ERR_INVALID. */
PF_API pf_status pf_frame_layout(pf_pixfmt fmt, int width, int height, size_t align,
                                 size_t strides[PF_FRAME_MAX_PLANES],
                                 size_t offsets[PF_FRAME_MAX_PLANES], size_t *total_bytes);

/* Allocates *f with all planes in one buffer (strides aligned to 64 bytes on
 * the host, 256 on a device). `alloc` NULL = host heap, else the frame comes
 * from that pool (its domain and device) ordered on `stream`. *f must not hold
 * references (it is overwritten); metadata fields are reset. */
PF_API pf_status pf_frame_alloc(pf_frame *f, pf_pixfmt fmt, int width, int height,
                                pf_allocator *alloc, pf_stream *stream);

/* Describes a frame living inside `buf` from `offset` on, with the given
 * strides (NULL = packed with 1-byte alignment, planes back to back). Takes
 * its own references on buf; checks that every plane fits. */
PF_API pf_status pf_frame_wrap(pf_frame *f, pf_pixfmt fmt, int width, int height,
                               pf_buffer *buf, size_t offset,
                               const size_t strides[PF_FRAME_MAX_PLANES]);

/* dst becomes a second owner of src's planes and metadata (dst must not hold
 * references). */
PF_API void pf_frame_ref(pf_frame *dst, const pf_frame *src);
/* Copies the metadata that describes a frame's time and media (pts,
 * time_base, duration, index, source, color, sar, and icc as a new
 * reference, releasing dst's; not meta, not pixels) from src to dst: what a
 * stage does for the frame it makes from another. */
PF_API void pf_frame_copy_props(pf_frame *dst, const pf_frame *src);

/* Drops all references and zeroes *f. Accepts a zeroed frame. */
PF_API void pf_frame_unref(pf_frame *f);

/* Memory domain of plane 0 (PF_MEM_HOST for an empty frame). */
PF_API pf_mem_domain pf_frame_domain(const pf_frame *f);

/* Copies pixels (not metadata) plane by plane, stream-ordered; formats and
 * sizes must match. Works between any domains the stream's device reaches. */
PF_API pf_status pf_frame_copy_async(pf_frame *dst, const pf_frame *src, pf_stream *stream);

PF_END_DECLS

#endif
