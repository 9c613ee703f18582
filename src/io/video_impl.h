/* Private: the FFmpeg side of pf_video_reader / pf_video_writer
 * (video_ffmpeg.c, video_ffmpeg_enc.c). Without FFmpeg in the build the
 * open calls return PF_ERR_UNSUPPORTED "built without FFmpeg". */
#ifndef PF_IO_VIDEO_IMPL_H
#define PF_IO_VIDEO_IMPL_H

#include "h264_es.h"
#include "pixflow/io.h"

#include <stdbool.h>
#include <stdio.h>

typedef struct pf_ffdec pf_ffdec;

/* An input that can be opened only once and not rewound (a pipe, a FIFO,
 * /dev/stdin, /dev/fd/N of a process substitution): the reader opens it
 * once and reads its first bytes to tell the format; whoever reads it next
 * takes head[pos..n) first, then the rest from fp. */
typedef struct pf_peeked {
    FILE *fp;
    uint8_t head[16];
    size_t n, pos;
} pf_peeked;

/* Opens p->path (name: for messages) and its best video stream's decoder;
 * fills info (width, height, fps, time base, counts, names; info->format is
 * set by the caller). `in` (borrowed until close; NULL for a regular file,
 * which FFmpeg opens itself): read the stream from there instead. */
pf_status pf_ffdec_open(const pf_video_reader_params *p, const char *name, pf_peeked *in,
                        pf_ffdec **out, pf_video_info *info);
/* Decodes the next frame into dst (a host frame of the output format at
 * info's size), setting dst->pts and dst->time_base. PF_EOF at the end.
 * Counts packets and corrupt packets into *stats. */
pf_status pf_ffdec_read(pf_ffdec *d, pf_frame *dst, pf_video_reader_stats *stats);
void pf_ffdec_close(pf_ffdec **d);

/* Packet mode, for NVDEC: the same open, but when the video stream is
 * H.264 or HEVC in 8-bit 4:2:0 (or a format the demuxer does not tell),
 * no CPU decoder is opened: pf_ffdec_read_au() hands out the stream's
 * packets as Annex B access units (through FFmpeg's mp4toannexb filter
 * for MP4, MKV and MOV, whose packets carry length-prefixed NAL units and
 * keep the parameter sets in extradata; MPEG-TS and raw streams are
 * Annex B already). *packets says which happened: false = a CPU decoder is open
 * (another codec, 10-bit, 4:2:2...) and pf_ffdec_read() works as usual,
 * with the reason logged at info level. *codec gets PF_ES_H264/HEVC. */
pf_status pf_ffdec_open_packets(const pf_video_reader_params *p, const char *name,
                                pf_peeked *in, pf_ffdec **out, pf_video_info *info,
                                bool *packets, pf_es_codec *codec);
/* The next access unit (packet mode): data and size stay valid until the
 * next call or close; pts in info.time_base units (PF_NOPTS if none).
 * Counts packets and damaged ones into *stats like pf_ffdec_read. PF_EOF
 * at the end. */
pf_status pf_ffdec_read_au(pf_ffdec *d, const uint8_t **data, size_t *size, int64_t *pts,
                           pf_video_reader_stats *stats);

typedef struct pf_ffenc pf_ffenc;

pf_status pf_ffenc_open(const pf_video_writer_params *p, const char *name, pf_ffenc **out);
/* Encodes f (p->input_format, p's size) with presentation time `pts` in
 * units of the writer's time base (p->time_base, else 1/fps), already
 * shifted by p->start_s. */
pf_status pf_ffenc_write(pf_ffenc *e, const pf_frame *f, int64_t pts);
/* The time base write() takes pts in: p->time_base, or 1/fps where the
 * codec needs its frame rate as time base (MPEG-4 Part 2, MPEG-1/2, H.263). */
pf_rational pf_ffenc_time_base(const pf_ffenc *e);
/* Writes the packets of p->copy_streams_from that start before `until`
 * (seconds on the source clock, before the start_s shift); no-op without
 * copied streams. */
pf_status pf_ffenc_copy_until(pf_ffenc *e, double until);
/* Flush, trailer, close the file. */
pf_status pf_ffenc_finish(pf_ffenc *e);
/* Frees without flushing the encoder or writing a trailer (a file about to
 * be deleted, a dead receiver): nothing more is encoded, and no blocking
 * write is waited for. Sets *e = NULL; accepts NULL. */
void pf_ffenc_discard(pf_ffenc **e);
/* Finishes (if not yet) and frees. */
void pf_ffenc_free(pf_ffenc **e);

#endif
