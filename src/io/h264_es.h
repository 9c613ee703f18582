/* Private: H.264 / HEVC Annex B elementary streams (.h264, .264, .h265,
 * .hevc, .265), split into access units for the NVDEC decoder (nvdec.h).
 *
 * An elementary stream is NAL units behind 00 00 01 / 00 00 00 01 start
 * codes and nothing else: no timestamps (frames get them from a counter and
 * a frame rate) and no index. Access units are found by the rules of H.264
 * 7.4.1.2.3 and HEVC 7.4.2.4.4: after a picture's slices, an AUD, parameter
 * set, prefix SEI, or a slice that begins a new picture (first_mb_in_slice
 * == 0, first_slice_segment_in_pic_flag == 1) starts the next unit. The
 * parser in libnvcuvid accepts arbitrary chunks too; whole units let the
 * caller give each one a timestamp and mark it complete (lower latency).
 *
 *   pf_es_reader *r = NULL;
 *   if (pf_es_reader_open("in.h264", PF_ES_UNKNOWN, &r) < 0) ...;
 *   const uint8_t *au; size_t n;
 *   while (pf_es_reader_next(r, &au, &n) == PF_OK) feed(au, n);  // PF_EOF at the end
 *   pf_es_reader_close(&r);
 *
 * Malformed input never crashes: bytes before the first start code go with
 * the first unit, a stream without start codes is one unit, and a unit over
 * PF_ES_MAX_AU bytes is PF_ERR_FORMAT. Not thread-safe (one reader per
 * thread); the free functions are. */
#ifndef PF_IO_H264_ES_H
#define PF_IO_H264_ES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pixflow/core.h"

typedef enum pf_es_codec {
    PF_ES_UNKNOWN = 0,
    PF_ES_H264 = 1,
    PF_ES_HEVC = 2
} pf_es_codec;

#define PF_ES_MAX_AU ((size_t)256 << 20) /* largest access unit accepted */

/* "h264", "hevc", "unknown". */
const char *pf_es_codec_name(pf_es_codec c);

/* From the extension (case-insensitive): .h264 .264 .avc -> H264, .h265 .hevc
 * .265 -> HEVC, else UNKNOWN. */
pf_es_codec pf_es_codec_from_path(const char *path);

/* From the first NAL header in data[0..size): an H.264 AUD/SPS/SEI/slice or
 * an HEVC VPS/SPS/PPS/AUD/SEI header. UNKNOWN when neither fits. */
pf_es_codec pf_es_probe(const uint8_t *data, size_t size);

/* The length of the first access unit of buf[0..size) in *au_len. PF_OK;
 * PF_AGAIN when !eof and the unit may go on past `size` (read more and call
 * again with the longer buffer); PF_EOF when size == 0. With eof, the rest
 * of the buffer ends the last unit. */
pf_status pf_es_next_au(pf_es_codec codec, const uint8_t *buf, size_t size, bool eof,
                        size_t *au_len);

typedef struct pf_es_reader pf_es_reader;

/* Opens `path` ("-" = stdin). codec UNKNOWN = from the extension, else from
 * the first bytes; PF_ERR_FORMAT "not an H.264/HEVC elementary stream" when
 * neither tells. Errors name the file. */
pf_status pf_es_reader_open(const char *path, pf_es_codec codec, pf_es_reader **out);
void pf_es_reader_close(pf_es_reader **r);
pf_es_codec pf_es_reader_codec(const pf_es_reader *r);

/* The next access unit: *data stays valid until the next call or close.
 * PF_OK, PF_EOF after the last one, PF_ERR_IO on a read error, PF_ERR_FORMAT
 * for a unit over PF_ES_MAX_AU. */
pf_status pf_es_reader_next(pf_es_reader *r, const uint8_t **data, size_t *size);

/* Access units returned so far. */
int64_t pf_es_reader_count(const pf_es_reader *r);

#endif
