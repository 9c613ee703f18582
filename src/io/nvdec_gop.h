/* Private: one H.264/HEVC file (an elementary stream, or any container
 * FFmpeg demuxes: MP4, MKV, MOV, MPEG-TS) decoded by several NVDEC decoders
 * at once, GOP by GOP, with the frames handed out in display order.
 *
 * One decoder manages ~700 1080p frames/s on an H100/H200, a third of what
 * the engines together do. A closed GOP (starting at an IDR picture) decodes
 * without anything before it, so decoder k of K takes GOPs k, k+K, k+2K...
 * of the file: each decoder thread reads the whole file with its own
 * pf_es_reader or FFmpeg demuxer, feeds its own GOPs' access units and
 * only the parameter sets (SPS/PPS, VPS) of the others, and queues its
 * frames tagged with the GOP they belong to. read() takes GOP 0 from decoder 0, GOP 1 from decoder
 * 1, and so on, which restores the file's display order.
 *
 * A GOP's frames are known from the pts given with each access unit (its
 * index in the file: libnvcuvid hands pts out sorted, so the frames of a
 * GOP carry exactly that GOP's indices). A GOP ends when as many frames as
 * it had access units have come out, or a frame of a later GOP comes out,
 * or the stream ends (so a picture the engine drops cannot hang the order).
 * GOPs start only at IDR pictures; a stream without IDRs after its start is
 * one GOP and decoder 0 does everything. Open GOPs (HEVC CRA, H.264
 * recovery points) are not split.
 *
 * Frames: NV12 in device memory from each decoder's pool (pool_size per
 * decoder), pts = display index, time_base = 1/fps, index = display index.
 * A decoder thread waits when it has queued pool_size / 2 frames, so the
 * caller and the pipeline behind it can hold the rest. As with one
 * pf_nvdec, a caller must not hold frames while it waits for more beyond
 * what the pool leaves for one decode() (an IDR may emit the previous
 * GOP's last few frames at once): with pool_size 8, three are safe. Release
 * every frame before pf_nvdec_gop_close (a decoder waiting for its pool is
 * joined). */
#ifndef PF_IO_NVDEC_GOP_H
#define PF_IO_NVDEC_GOP_H

#include "nvdec.h"

typedef struct pf_nvdec_gop pf_nvdec_gop;

/* Starts `decoders` (2..8) decoder threads on `path` (a regular file) with
 * the decoder parameters `np` (device, codec, pool_size, name), and waits
 * until the first frame's sequence is known (get_info). `demux`: the file
 * is a container, which each decoder thread demuxes itself with FFmpeg
 * (packet mode, video_impl.h); else an elementary stream. Errors name the
 * file (PF_ERR_IO, PF_ERR_FORMAT, PF_ERR_UNSUPPORTED, PF_ERR_DEVICE). */
pf_status pf_nvdec_gop_open(const char *path, bool demux, const pf_nvdec_params *np,
                            int decoders, pf_nvdec_gop **out);
/* Sets *g = NULL; accepts NULL. */
void pf_nvdec_gop_close(pf_nvdec_gop **g);

/* The sequence of the stream (decoder 0's). */
pf_status pf_nvdec_gop_get_info(const pf_nvdec_gop *g, pf_nvdec_info *out);

/* The next frame in display order: PF_OK, PF_EOF after the last, or the
 * error a decoder thread met (its message). */
pf_status pf_nvdec_gop_read(pf_nvdec_gop *g, pf_frame *out);

typedef struct pf_nvdec_gop_stats {
    int decoders;
    int64_t gops;              /* GOPs found so far (by decoder 0's scan) */
    uint64_t packets;          /* access units fed, over all decoders */
    uint64_t decode_errors;
    uint64_t dropped;
} pf_nvdec_gop_stats;

void pf_nvdec_gop_get_stats(pf_nvdec_gop *g, pf_nvdec_gop_stats *out);

#endif
