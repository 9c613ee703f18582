/* Private: YUV4MPEG2 stream parsing and writing, and raw planes, on stdio
 * streams (files, pipes, stdin/stdout, fmemopen for the fuzzer).
 *
 * The parser is strict because its input is untrusted: the signature, every
 * tag and every number are checked, header lines are bounded, sizes are
 * limited to PF_FRAME_MAX_DIM, and a frame is read only after its header
 * parsed. Unknown tag letters and high bit depths are refused with a message
 * naming the tag. */
#ifndef PF_IO_Y4M_H
#define PF_IO_Y4M_H

#include <stdbool.h>
#include <stdio.h>

#include "pixflow/frame.h"

#define PF_Y4M_MAX_LINE 1024   /* stream or frame header, with the newline */

typedef enum pf_y4m_chroma {
    PF_Y4M_420 = 0,   /* C420jpeg, C420, C420mpeg2, C420paldv (siting ignored) */
    PF_Y4M_422,
    PF_Y4M_444,
    PF_Y4M_MONO
} pf_y4m_chroma;

typedef struct pf_y4m_header {
    int width, height;
    pf_rational fps;        /* {0,0} when absent or F0:0 */
    pf_rational aspect;     /* {0,0} when absent */
    char interlace;         /* 'p', 't', 'b', 'm', '?' or 0 when absent */
    pf_y4m_chroma chroma;
    char chroma_tag[16];    /* as written, without the C ("420jpeg"); "" when absent */
    pf_color_range range;   /* XCOLORRANGE=FULL|LIMITED (FFmpeg's extension); else unspecified */
} pf_y4m_header;

/* Reads and checks the stream header line. PF_ERR_FORMAT "NAME: ..." when
 * malformed, PF_ERR_UNSUPPORTED for valid but unhandled chroma modes,
 * PF_ERR_IO when the stream cannot be read. */
pf_status pf_y4m_read_header(FILE *fp, const char *name, pf_y4m_header *h);
/* The same when the stream's first `n` bytes (`head`) were already read from
 * fp (a pipe that was sniffed cannot be rewound). */
pf_status pf_y4m_read_header_after(FILE *fp, const char *name, const uint8_t *head, size_t n,
                                   pf_y4m_header *h);

/* Bytes of one frame's payload. */
size_t pf_y4m_payload_size(const pf_y4m_header *h);

/* Reads frame number `index` (for messages): its FRAME line and payload.
 * dst: I420 (GRAY8 for mono) of the header's size, host memory, any strides.
 * 4:2:2 and 4:4:4 chroma are read into `scratch` (>= the payload's chroma
 * bytes; NULL for 4:2:0/mono) and averaged down to 4:2:0 (rounded).
 * Returns PF_OK, PF_EOF at a clean end (no byte of a next frame), or
 * PF_ERR_FORMAT for a bad FRAME line or a truncated frame; *cut (may be
 * NULL) tells the last: the stream ended inside the frame (its FRAME line or
 * payload), so the frames before it are whole. */
pf_status pf_y4m_read_frame(FILE *fp, const char *name, const pf_y4m_header *h, int64_t index,
                            uint8_t *scratch, pf_frame *dst, bool *cut);

/* Writes "YUV4MPEG2 W H F Ip A C420jpeg|Cmono [XCOLORRANGE=FULL]\n"; sar {0,0} = A1:1.
 * full_range: the samples are full range (FFmpeg's extension tag; without it
 * readers take limited range). */
pf_status pf_y4m_write_header(FILE *fp, const char *name, int width, int height, pf_rational fps,
                              bool mono, pf_rational sar, bool full_range);
/* Writes "FRAME\n" and the planes of an I420 or GRAY8 host frame. */
pf_status pf_y4m_write_frame(FILE *fp, const char *name, const pf_frame *f);

/* Raw planes: reads/writes the planes of `f` (its format and size) tightly
 * packed. Read returns PF_EOF at a clean end, PF_ERR_FORMAT when cut short
 * (*cut = true; cut may be NULL). */
pf_status pf_raw_read_frame(FILE *fp, const char *name, int64_t index, pf_frame *f, bool *cut);
pf_status pf_raw_write_frame(FILE *fp, const char *name, const pf_frame *f);

#endif
