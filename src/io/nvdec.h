/* Private: H.264 / HEVC decoding on NVIDIA's video engines (NVDEC), into
 * NV12 frames that stay in device memory.
 *
 * libcuda and libnvcuvid are loaded at run time (the ffnvcodec headers,
 * Debian libffmpeg-nvenc-dev, declare them), so a build with NVDEC runs on
 * machines without it and reports why here. The bytes fed are Annex B
 * (start codes): an elementary stream (h264_es.h) or FFmpeg packets after
 * the h264_mp4toannexb / hevc_mp4toannexb bitstream filter.
 *
 *   pf_nvdec_params p = pf_nvdec_params_default();
 *   p.device = cuda_dev;                        // codec: from the first bytes
 *   pf_nvdec *d = NULL;
 *   if (pf_nvdec_create(&p, &d) < 0) ...;
 *   while (pf_es_reader_next(es, &au, &n) == PF_OK) {
 *       if (pf_nvdec_decode(d, au, n, PF_NOPTS) < 0) ...;   // corrupt data: counted, PF_OK
 *       pf_frame f = {0};
 *       while (pf_nvdec_receive(d, &f) == PF_OK) { use(&f); pf_frame_unref(&f); }
 *   }
 *   pf_nvdec_flush(d);                          // end of stream
 *   while (pf_nvdec_receive(d, &f) == PF_OK) ...; // then PF_EOF
 *   pf_nvdec_destroy(&d);
 *
 * Frames. receive() hands out frames in display order from a pool of
 * pool_size device NV12 frames of the displayed size (cropping applied),
 * made once when the first sequence header arrives (again only if the size
 * changes): no allocation per frame. The pixels are complete when a frame
 * is handed out (the copy out of the decode surface is waited for), so any
 * stream may read it at once; it goes back to the pool at its last unref,
 * on any thread. pts: libnvcuvid's parser takes the pts given to decode()
 * as presentation times and hands them out in increasing order with the
 * frames in display order (measured: pts given in decode order to a stream
 * with B-frames come back sorted), so give each packet its presentation
 * time, as containers store it; time_base = params.time_base. A stream fed
 * without pts (PF_NOPTS) gets the display index at params.fps (time_base =
 * 1/fps). index = display index. Every frame handed out counts in
 * stats.frames.
 *
 * Flow control. Each decode() call may finish any number of frames (one
 * access unit: at most a few; a large chunk: many), and they wait in the
 * decoder until received. When the pool runs out during decode(), it waits
 * up to pool_timeout_us for the caller's frames to come back (another
 * thread unrefs them); if every pool frame is still waiting to be received
 * it cannot, so the frame is dropped, counted in stats.dropped and decode()
 * returns PF_ERR_BUSY (the data was consumed; the decoder stays usable).
 * Feed access units and receive until PF_AGAIN after each, with pool_size
 * >= 4, and this never happens.
 *
 * Several decoders. One pf_nvdec decodes one stream on one engine at a
 * time. Hopper has 7 NVDEC engines (info.engines: how many take this
 * format): to use them, run one decoder per stream or per GOP-aligned
 * segment of a stream, each driven by its own thread; the driver spreads
 * the sessions over the engines (bench/bench_nvdec.c measures 1..7). Each
 * has its own copy stream, context lock and pool; all share the device's
 * primary context (the one the CUDA runtime uses), so their frames work
 * with every pixflow CUDA call. Decoders are independent: nothing is shared
 * but the loaded libraries.
 *
 * Threading: a decoder is used by one thread at a time; create/destroy of
 * different decoders may run concurrently. */
#ifndef PF_IO_NVDEC_H
#define PF_IO_NVDEC_H

#include <stdbool.h>

#include "h264_es.h"
#include "pixflow/device.h"
#include "pixflow/frame.h"

typedef struct pf_nvdec pf_nvdec;

typedef struct pf_nvdec_params {
    pf_device *device;       /* a CUDA device (required) */
    pf_es_codec codec;       /* H264, HEVC; UNKNOWN (default) = from the first bytes */
    int pool_size;           /* output frames, 1..256, default 8 */
    int surfaces;            /* decode surfaces, 0 (default) = the stream's minimum + 4;
                                never below the minimum, at most 32 */
    int display_delay;       /* pictures the parser holds before display, 0..4,
                                default 2: lets the engine run ahead of the copies
                                (0 = lowest latency) */
    int64_t pool_timeout_us; /* see "Flow control": < 0 waits, 0 never waits,
                                > 0 waits that long; default -1 */
    pf_rational fps;         /* frames of a stream fed without pts; {0,0} (default) =
                                the stream's rate (VUI), else 30/1 */
    pf_rational time_base;   /* of the pts given to decode(); default 1/90000 */
    const char *name;        /* for messages (a file name); copied; NULL = "nvdec" */
} pf_nvdec_params;

pf_nvdec_params pf_nvdec_params_default(void);

/* Whether this build has NVDEC and libcuda + libnvcuvid load here; `detail`
 * (may be NULL) gets the reason when not. Thread-safe; loads once. */
bool pf_nvdec_available(char *detail, size_t detail_size);

/* Makes the decoder (the parser and hardware decoder come with the first
 * data). Errors: PF_ERR_INVALID (parameters, not a CUDA device),
 * PF_ERR_UNSUPPORTED (built without NVDEC, libnvcuvid missing: the message
 * says which), PF_ERR_DEVICE. */
pf_status pf_nvdec_create(const pf_nvdec_params *p, pf_nvdec **out);
/* Frees everything; frames still held stay valid until unref'd. Sets *d =
 * NULL; accepts NULL. */
void pf_nvdec_destroy(pf_nvdec **d);

/* Feeds `size` bytes of Annex B data (any chunking; size 0 is a no-op);
 * `pts` (PF_NOPTS = none) goes with the first picture that starts in them.
 * Data the parser or engine rejects is skipped and counted in
 * stats.decode_errors (PF_OK). Errors: PF_ERR_UNSUPPORTED (a stream the
 * engine cannot decode: 10-bit, 4:2:2/4:4:4, too large; the message has the
 * values; the decoder is then unusable), PF_ERR_FORMAT (codec UNKNOWN and
 * the first bytes are neither H.264 nor HEVC), PF_ERR_BUSY (frame dropped,
 * see above), PF_ERR_CLOSED (after flush), PF_ERR_DEVICE. */
pf_status pf_nvdec_decode(pf_nvdec *d, const void *data, size_t size, int64_t pts);

/* End of stream: decodes what the parser still holds; the remaining frames
 * then come from receive(), followed by PF_EOF. */
pf_status pf_nvdec_flush(pf_nvdec *d);

/* The next decoded frame into *out (which must hold no references): PF_OK,
 * PF_AGAIN when more data is needed, PF_EOF after flush and the last frame. */
pf_status pf_nvdec_receive(pf_nvdec *d, pf_frame *out);

typedef struct pf_nvdec_info {
    pf_es_codec codec;
    int width, height;              /* of the frames (display area) */
    int coded_width, coded_height;
    pf_rational fps;                /* from the stream (VUI); {0,0} if absent */
    bool progressive;
    int surfaces, min_surfaces;     /* decode surfaces made / the stream's minimum */
    int engines;                    /* NVDECs able to decode this format, 0 if unknown */
    int pool_size;
    pf_color_info color;            /* from the VUI's video signal description; a
                                       range not signalled stays unspecified */
} pf_nvdec_info;

/* PF_AGAIN until the first sequence header has been decoded. */
pf_status pf_nvdec_get_info(const pf_nvdec *d, pf_nvdec_info *out);

typedef struct pf_nvdec_stats {
    uint64_t packets;          /* decode() calls with data */
    uint64_t bytes;
    uint64_t pictures;         /* pictures sent to the engine */
    uint64_t frames;           /* frames handed out by receive() */
    uint64_t decode_errors;    /* rejected data, failed or concealed pictures */
    uint64_t dropped;          /* frames lost to a full pool (PF_ERR_BUSY) */
    uint64_t pool_waits;       /* times the pool was empty when a frame was ready */
} pf_nvdec_stats;

pf_status pf_nvdec_get_stats(const pf_nvdec *d, pf_nvdec_stats *out);

#endif
