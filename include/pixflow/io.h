/* pixflow/io.h - images (PNG, JPEG), Y4M and raw streams, video files.
 *
 * Images decode into host frames (or into a frame the caller allocated, e.g.
 * from a pinned pool) and encode from them. Video readers hand out frames
 * from a pool they own (no allocation per frame once the pool is warm) and
 * keep timestamps; writers take frames of any host pixel format and convert
 * them for the encoder. Y4M and raw frames are read and written by pixflow
 * itself (always available, on files or pipes: "-" is stdin/stdout); every
 * other container and codec goes through FFmpeg's libraries when the build
 * has them (pf_io_have_ffmpeg()), else PF_ERR_UNSUPPORTED "built without
 * FFmpeg".
 *
 *   pf_frame img = {0};
 *   if (pf_image_read("in.jpg", PF_PIXFMT_RGB24, &img) < 0) ...;  // message names the file
 *   pf_image_write_params wp = pf_image_write_params_default();
 *   wp.jpeg_quality = 95;
 *   pf_image_write("out.jpg", &img, &wp);                          // format from ".jpg"
 *   pf_frame_unref(&img);
 *
 *   pf_video_reader_params rp = pf_video_reader_params_default();
 *   rp.path = "in.mp4";
 *   rp.format = PF_PIXFMT_NV12;
 *   pf_video_reader *r = NULL;
 *   if (pf_video_reader_create(&rp, &r) < 0) ...;
 *   pf_video_info info;
 *   pf_video_reader_info(r, &info);
 *   pf_video_writer_params wp2 = pf_video_writer_params_default();
 *   wp2.path = "out.mp4"; wp2.width = info.width; wp2.height = info.height;
 *   wp2.fps = info.fps; wp2.input_format = PF_PIXFMT_NV12;
 *   pf_video_writer *w = NULL;
 *   pf_video_writer_create(&wp2, &w);
 *   pf_frame f = {0};
 *   while (pf_video_reader_read(r, &f) == PF_OK) {   // PF_EOF at the end
 *       pf_video_writer_write(w, &f);                  // pts kept
 *       pf_frame_unref(&f);                            // back to the reader's pool
 *   }
 *   pf_video_writer_close(w);                          // flushes; reports errors
 *   pf_video_writer_destroy(&w);
 *   pf_video_reader_destroy(&r);
 *
 * Errors: PF_ERR_IO (missing file, unreadable, unwritable directory, short
 * write), PF_ERR_FORMAT (truncated or corrupt data, not the format it claims),
 * PF_ERR_UNSUPPORTED (valid but not handled here: 16-bit Y4M, CMYK JPEG, a
 * codec FFmpeg lacks, no FFmpeg in this build), PF_ERR_INVALID (bad
 * parameters: zero sizes, a pixel format the call does not take). The message
 * always names the file ("-" reads as "<stdin>"/"<stdout>") and what is wrong.
 *
 * Threading: the free functions are thread-safe (each call has its own
 * decoder state). A reader or writer is used by one thread at a time; the
 * frames it hands out may be used and released on any thread.
 */
#ifndef PIXFLOW_IO_H
#define PIXFLOW_IO_H

#include <stdbool.h>
#include <stdio.h>

#include "device.h"
#include "frame.h"

PF_BEGIN_DECLS

/* Build capabilities ---------------------------------------------------------------- */

/* Whether this build reads/writes PNG (libpng), JPEG (libjpeg-turbo) and
 * video containers through FFmpeg. Without PNG or JPEG the image calls
 * return PF_ERR_UNSUPPORTED for that format. */
PF_API bool pf_io_have_png(void);
PF_API bool pf_io_have_jpeg(void);
PF_API bool pf_io_have_ffmpeg(void);

/* Images -------------------------------------------------------------------------------
 *
 * Pixel formats an image call takes or produces: RGB24, BGR24, RGBA, GRAY8.
 * `want` = PF_PIXFMT_NONE ("native") keeps the image's own layout: GRAY8 for
 * gray, RGB24 for colour, RGBA for anything with alpha (a PNG alpha channel,
 * gray+alpha, or a palette with transparency).
 * Conversions on decode: 16-bit PNG samples are scaled to 8 bits (rounded);
 * palette and 1/2/4-bit gray are expanded; interlaced PNGs are de-interlaced;
 * colour -> GRAY8 is the BT.601 luma (0.299 R + 0.587 G + 0.114 B, the Y of a
 * JPEG); gray -> colour replicates; alpha is dropped (not composited) when the
 * wanted format has none and set to 255 when the source has none.
 * CMYK/YCCK JPEGs are refused (PF_ERR_UNSUPPORTED).
 *
 * Orientation: the EXIF Orientation tag (JPEG APP1 "Exif", PNG eXIf) is
 * applied on read, as image viewers and ffmpeg do: pixels come out upright,
 * and tags 5..8 swap width and height. pf_image_info.orientation says which
 * tag was found (1 = none); pf_image_read_with(keep_orientation) gives the
 * stored order instead. Output files carry no orientation tag (their pixels
 * are upright).
 * ICC profiles (PNG iCCP, JPEG APP2 "ICC_PROFILE") are attached to the frame
 * read (pf_frame.icc) and embedded by pf_image_write/encode when the frame
 * has one that fits the output (an RGB profile on colour, GRAY on gray). */

typedef enum pf_image_format {
    PF_IMAGE_AUTO = 0,   /* by content when reading, by extension when writing */
    PF_IMAGE_PNG = 1,
    PF_IMAGE_JPEG = 2
} pf_image_format;

/* "png", "jpeg" ("auto" for PF_IMAGE_AUTO). */
PF_API const char *pf_image_format_name(pf_image_format fmt);

typedef struct pf_image_info {
    int width, height;
    pf_pixfmt format;         /* what want = NONE would produce (RGB24/RGBA/GRAY8) */
    pf_image_format container;/* PNG or JPEG */
    int bit_depth;            /* bits per sample as stored (1..16) */
    int channels;             /* as stored: 1 gray, 2 gray+alpha, 3 colour, 4 colour+alpha
                                 (a palette counts as 3, or 4 with transparency) */
    bool interlaced;          /* PNG Adam7 / progressive JPEG */
    /* Metadata (issue 13). width and height above are upright: after `orientation`. */
    int orientation;          /* EXIF Orientation found, 1..8 (1: none, or absent), which
                                 pf_image_read applies: 2 mirror, 3 turn 180, 4 flip, 5
                                 transpose, 6 turn 90 clockwise, 7 transverse, 8 turn 90
                                 counter-clockwise (5..8 swap the stored width and height) */
    size_t icc_size;          /* bytes of the embedded ICC profile, 0 when none */
} pf_image_info;

/* Reads only the header of `path` (the format comes from the first bytes,
 * not the extension). Thread-safe. Errors: PF_ERR_IO when the file cannot be
 * opened or read, PF_ERR_FORMAT when it is neither a valid PNG nor JPEG
 * header. */
PF_API pf_status pf_image_probe(const char *path, pf_image_info *out);
/* The same on `size` bytes at `data` (borrowed for the call). */
PF_API pf_status pf_image_probe_memory(const void *data, size_t size, pf_image_info *out);

/* Decodes `path` into a new host frame *out (pf_frame_alloc on the heap,
 * 64-byte aligned strides) in format `want` (see above). *out must not hold
 * references; the caller owns the result and releases it with
 * pf_frame_unref(). On error *out is left zeroed. Metadata: pts = PF_NOPTS,
 * index = 0. Thread-safe. Truncated or corrupt files give PF_ERR_FORMAT with
 * "FILE: what" (never a partial frame). */
PF_API pf_status pf_image_read(const char *path, pf_pixfmt want, pf_frame *out);

/* pf_image_read on `size` bytes at `data` (borrowed for the call). `name`
 * (may be NULL: "<memory>") is used in messages only. */
PF_API pf_status pf_image_read_memory(const void *data, size_t size, const char *name,
                                      pf_pixfmt want, pf_frame *out);

/* Decodes `path` straight into the caller's frame `dst` (host or pinned
 * memory: any host-addressable domain; any strides), which must already have
 * the image's width and height (upright, as pf_image_probe reports them) and
 * an image pixel format (RGB24, BGR24, RGBA or GRAY8: the conversion rules
 * above apply). Nothing is allocated for the pixels, so frames from a pinned
 * ring can be filled directly. dst's metadata is not changed, except dst->icc
 * (below). On error the pixels of dst are unspecified (possibly
 * partly written). Errors: PF_ERR_INVALID naming the size or format that
 * does not match (checked from the header, before any pixel is written);
 * otherwise as pf_image_read. Thread-safe for distinct dst frames. */
PF_API pf_status pf_image_read_into(const char *path, pf_frame *dst);
PF_API pf_status pf_image_read_memory_into(const void *data, size_t size, const char *name,
                                           pf_frame *dst);
/* (read_into: dst->icc is the one metadata field these set: replaced by the image's profile,
 * or NULL; the old reference is dropped.) */

/* Reading with options. */
typedef struct pf_image_read_params {
    pf_pixfmt want;           /* as pf_image_read's want; default PF_PIXFMT_NONE */
    bool keep_orientation;    /* true: pixels in stored order, the EXIF orientation is not
                                 applied (info->width/height are then the stored ones);
                                 default false */
} pf_image_read_params;

PF_API pf_image_read_params pf_image_read_params_default(void);

/* pf_image_read with params `p` (NULL = defaults); when `info` is not NULL it receives the
 * image's header (sizes as returned in *out). Same ownership, threading and errors. */
PF_API pf_status pf_image_read_with(const char *path, const pf_image_read_params *p,
                                    pf_frame *out, pf_image_info *info);

typedef struct pf_image_write_params {
    pf_image_format format;   /* AUTO = from the path's extension (.png, .jpg, .jpeg,
                                 case-insensitive); pf_image_encode needs PNG or JPEG */
    int jpeg_quality;         /* 1..100, default 90 */
    bool jpeg_subsample_444;  /* false (default): 4:2:0 chroma; true: full chroma */
    int png_compression;      /* zlib level 0..9, default 6 (0 = store, fastest) */
} pf_image_write_params;

PF_API pf_image_write_params pf_image_write_params_default(void);

/* Encodes host frame `f` (RGB24, BGR24, RGBA or GRAY8; any strides) and writes
 * it to `path` (p NULL = defaults). PNG keeps RGBA (alpha channel) and GRAY8
 * (gray image) exactly; JPEG stores RGBA without its alpha, GRAY8 as a gray
 * JPEG. The file is written through pf_output (below): a temporary beside
 * `path`, renamed over it when complete, so a failed write never leaves a half
 * file under `path`. Thread-safe. Errors: PF_ERR_INVALID
 * (format, empty frame, device memory), PF_ERR_IO naming the path (unwritable
 * directory, disk full). */
PF_API pf_status pf_image_write(const char *path, const pf_frame *f,
                                const pf_image_write_params *p);

/* Encodes `f` as above into a new host buffer *out holding exactly the file's
 * bytes (pf_buffer_size() = their count). p->format must be PNG or JPEG. The
 * caller owns the reference in *out. Thread-safe. */
PF_API pf_status pf_image_encode(const pf_frame *f, const pf_image_write_params *p,
                                 pf_buffer **out);

/* Video: reading ----------------------------------------------------------------------
 *
 * Containers: ".y4m" files and "-" (stdin) are read as YUV4MPEG2 by pixflow's
 * own parser; container "raw" reads headerless frames of raw_format at
 * raw_width x raw_height; everything else (mp4, mkv, avi, mov, webm, ts, ...)
 * through libavformat/libavcodec with any decoder FFmpeg has.
 * Y4M input: C420jpeg, C420, C420mpeg2, C420paldv (and no C tag) -> I420;
 * Cmono -> GRAY8; C444 and C422 are converted to 4:2:0 by averaging chroma
 * (lossy; the reader logs it once); high bit depths (C420p10, ...) are
 * refused. Interlacing (I), aspect (A) and comment (X) tags are accepted and
 * ignored; the frame rate (F) sets fps and time_base = 1/fps. A stream header
 * or frame header that does not follow the format is PF_ERR_FORMAT; a last
 * frame cut short is PF_ERR_FORMAT "truncated frame N" (Y4M has no packets to
 * skip). */

typedef struct pf_video_reader pf_video_reader;

typedef struct pf_video_reader_params {
    const char *path;          /* file, or "-" for stdin (Y4M unless container says) */
    const char *container;     /* NULL = by content/extension; "y4m", "raw", or an
                                  FFmpeg demuxer name ("mp4", "matroska", ...) */
    pf_pixfmt format;          /* frames out: NV12, I420, RGB24, BGR24, RGBA, GRAY8;
                                  NONE (default) = I420 (GRAY8 for Cmono Y4M) */
    int pool_size;             /* frames in the pool, >= 1, default 8 */
    int64_t pool_timeout_us;   /* read() when every pool frame is still held by the
                                  caller: < 0 waits (default; another thread must
                                  unref), 0 fails at once with PF_ERR_BUSY, > 0 waits
                                  that long then PF_ERR_BUSY */
    pf_device *device;         /* pool memory owner: NULL = CPU */
    pf_mem_domain domain;      /* PF_MEM_HOST (default) or PF_MEM_PINNED: decoders
                                  write with the CPU, so never PF_MEM_DEVICE */
    bool prefer_device;        /* NVDEC when possible: `device` is CUDA, the stream is
                                  H.264/HEVC in 8-bit 4:2:0 (an elementary stream
                                  .h264/.264/.hevc/.265, or any container FFmpeg
                                  demuxes: MP4, MKV, MOV, MPEG-TS, live URLs), format
                                  NONE or NV12 and libnvcuvid loads. Frames are then
                                  NV12 in device memory of `device` (from the decoders'
                                  own pools of pool_size frames each; domain is
                                  ignored), hw_decode. A regular file is decoded by
                                  several decoders GOP by GOP, frames still in order
                                  (see hw_share); PIXFLOW_NVDEC_DECODERS=N (1..8) sets
                                  the count. Otherwise CPU decode as without it */
    int hw_share;              /* inputs decoding at once on this device (0/1: this one
                                  alone). A regular file gets engines / hw_share NVDEC
                                  decoders (at least 1, at most 4): alone it uses four
                                  of the 7 engines of an H100/H200; one of many cameras
                                  gets one decoder and the sessions spread over the
                                  engines */
    int threads;               /* decoder threads, 0 = FFmpeg's choice */
    /* Live inputs (URLs and cameras, pf_io_is_live) and pacing: */
    const char *protocols;     /* URL protocols FFmpeg may open, comma-separated (its
                                  protocol_whitelist, nested opens included); NULL =
                                  PF_IO_DEFAULT_PROTOCOLS. A URL whose scheme is not
                                  listed is refused (PF_ERR_UNSUPPORTED naming it) */
    int64_t open_timeout_ms;   /* connecting and reading the stream header, default
                                  10000; 0 = no limit. Past it: PF_ERR_IO "timed out" */
    int64_t read_timeout_ms;   /* live input: no packet for this long is a stall
                                  (an error, or a reconnect under `retries`);
                                  default 5000; 0 = no limit. Files: unused */
    bool realtime;             /* a file (not live) is read no faster than its
                                  timestamps (pts against a monotonic clock; a
                                  consumer that fell behind catches up for at most
                                  1 s, then the clock is reset). Live input is paced
                                  by its producer and ignores this */
    bool low_latency;          /* live input: packets go to the decoder as the
                                  demuxer gives them, without FFmpeg's frame parser
                                  (which holds each frame until the next starts):
                                  one frame less latency (33 ms at 30 fps), for
                                  senders that put one whole frame per packet/PES
                                  (FFmpeg, GStreamer, RTSP cameras). Default false */
    int retries;               /* live input that fails, stalls or ends: reopen it up
                                  to this many times in a row (a frame read resets
                                  the count); -1 = forever; 0 (default) = never. When
                                  they run out the reader ends with PF_EOF if it gave
                                  frames, else the error */
    int64_t retry_delay_ms;    /* first wait before a reopen, default 500; doubled
                                  after each failed attempt up to: */
    int64_t retry_max_delay_ms; /* default 8000 */
    bool nonblocking_retry;    /* while reconnecting, read() returns PF_AGAIN (no
                                  frame; call again) at least every 100 ms and after
                                  each failed attempt instead of blocking until the
                                  stream is back: for callers that must notice a stop
                                  (io.video_source sets it). One attempt still blocks
                                  up to open_timeout_ms. Default false */
    bool open_later;           /* a live input (URL, camera) with retries that cannot be
                                  opened at create (PF_ERR_IO: refused, timed out, no
                                  such camera yet) is still created: info has width 0
                                  and decoder "(not open yet)" until read() opens it,
                                  with the same back-off and retry bound as a
                                  reconnect; it then decodes on the CPU (hw_decode
                                  stays false, as announced). For a run of many cameras
                                  that must start while some are down. Default false */
    /* container "raw" only: */
    int raw_width, raw_height;
    pf_pixfmt raw_format;      /* layout of each raw frame (tightly packed planes) */
    pf_rational raw_fps;       /* default 30/1 */
} pf_video_reader_params;

PF_API pf_video_reader_params pf_video_reader_params_default(void);

typedef struct pf_video_info {
    int width, height;
    pf_pixfmt format;          /* of the frames read() returns */
    pf_rational fps;           /* average frame rate; {0,0} if unknown */
    pf_rational time_base;     /* of frame pts */
    int64_t frame_count;       /* estimate from the container; -1 if unknown */
    double duration_s;         /* estimate; < 0 if unknown */
    char codec[32];            /* "h264", "rawvideo", ... */
    char container[32];        /* "y4m", "raw", "mov,mp4,m4a,3gp,3g2,mj2" (FFmpeg's name) */
    char decoder[64];          /* decoder that runs: "h264 (cpu)", "y4m (cpu)" */
    bool hw_decode;            /* true when decoding runs on the device (NVDEC) */
    /* What the stream says about itself (FFmpeg input; Y4M/raw/NVDEC leave
     * these zero = unknown): */
    pf_color_info color;       /* as tagged (0 = unspecified; pf_color_effective
                                  gives what conversions use). Frames carry their
                                  own (a stream may change) */
    pf_rational sar;           /* sample aspect ratio; {0,0} unknown (1:1) */
    double rotation;           /* degrees a player turns the picture counter-clockwise
                                  for display (display matrix): 0, 90, 180, 270 */
    int bit_depth;             /* bits per sample of the coded stream (8, 10, 12);
                                  frames are always 8-bit (converted with rounding) */
    char stream_pixfmt[32];    /* FFmpeg's name of the coded layout: "yuv420p10le" */
    double start_time_s;       /* timestamp of the first frame in seconds (the pts
                                  clock: frames' pts * time_base); 0 if unknown */
    int other_streams;         /* audio/subtitle/data streams in the input (what
                                  pf_video_writer_params.copy_streams_from copies) */
} pf_video_info;

typedef struct pf_video_reader_stats {
    uint64_t frames;           /* frames returned by read() */
    uint64_t packets;          /* packets read from the container (Y4M: frames) */
    uint64_t corrupt_packets;  /* packets the decoder rejected or flagged corrupt
                                  (skipped, never fatal) */
    uint64_t pool_waits;       /* read() calls that found the pool empty */
    /* Live input under `retries`: */
    uint64_t reconnects;       /* reopens that gave a frame again */
    uint64_t reconnect_failures; /* reopen attempts that failed */
    int64_t gap_us;            /* wall time between the last frame before each
                                  break and the first after it, summed */
    uint64_t frames_missed;    /* frames the gaps would have held at info.fps
                                  (an estimate; 0 when fps is unknown) */
} pf_video_reader_stats;

/* Live inputs --------------------------------------------------------------------------
 *
 * A path "scheme://..." is a URL opened by libavformat: with Debian 12's
 * FFmpeg 5.1, rtsp://, srt://, udp://, tcp://, rtp://, http:// and https://
 * (the default whitelist below; FFmpeg's other protocols only when
 * pf_video_reader_params.protocols lists them). "/dev/videoN" is a V4L2
 * camera read through libavdevice (when the build has it). Both are live:
 * read() blocks until the producer has the next frame (never polls), and
 * nothing buffers ahead: a low-delay decoder with slice threads only (frame
 * threads would hold frames back), at most 1 s of stream analysis at open
 * (its packets come out at once after it), and a stall is an error after
 * read_timeout_ms.
 * A live input that cannot be read is an error naming the URL, never an
 * empty stream. Credentials in a URL ("user:pass@", "?passphrase=...")
 * never appear in messages: every name shown goes through pf_io_redact. */

#define PF_IO_DEFAULT_PROTOCOLS "file,pipe,tcp,udp,rtp,rtsp,srt,http,https,tls,httpproxy,crypto"

/* Whether `path` is "scheme://..." (a scheme of 2 or more characters). */
PF_API bool pf_io_is_url(const char *path);
/* The lower-cased scheme of a URL into buf ("" and false when not a URL). */
PF_API bool pf_io_url_scheme(const char *path, char *buf, size_t size);
/* Whether `path` names a V4L2 camera: "/dev/video" and digits. */
PF_API bool pf_io_is_camera(const char *path);
/* A URL other than file:/pipe:, or a camera: produced in real time. */
PF_API bool pf_io_is_live(const char *path);
/* Whether `scheme` is in the comma-separated `list` (NULL = the default). */
PF_API bool pf_io_protocol_allowed(const char *list, const char *scheme);
/* `path` fit to print into buf (always NUL-terminated, truncated to size):
 * a URL's password becomes "***" ("rtsp://user:***@host/x"), as do secret
 * query values (passphrase, password, key, token, ...); anything else is
 * copied. Returns buf. Thread-safe. */
PF_API const char *pf_io_redact(const char *path, char *buf, size_t size);

/* A file-system-safe name for a URL (for output names): the text after '#'
 * when the URL ends with "#NAME", else host, port and path, every run of
 * other characters than letters, digits, '-', '.', '_' made one '_'
 * ("rtsp://u:p@10.0.0.5:554/live/main" -> "10.0.0.5_554_live_main"); never
 * the credentials. "" when `url` is not a URL. Returns buf. Thread-safe. */
PF_API const char *pf_io_url_name(const char *url, char *buf, size_t size);

/* Opens p->path, reads the stream header, chooses the decoder and makes the
 * frame pool. The caller owns *out (pf_video_reader_destroy). Errors:
 * PF_ERR_IO (cannot open), PF_ERR_FORMAT (not a video / bad header),
 * PF_ERR_UNSUPPORTED (no decoder, "built without FFmpeg"), PF_ERR_INVALID
 * (parameters). */
PF_API pf_status pf_video_reader_create(const pf_video_reader_params *p, pf_video_reader **out);
/* Closes the input; frames still held by the caller stay valid (the pool
 * lives until its last frame comes back). Sets *r = NULL; accepts NULL. */
PF_API void pf_video_reader_destroy(pf_video_reader **r);

PF_API pf_status pf_video_reader_info(const pf_video_reader *r, pf_video_info *out);

/* The next frame, in display order, into *out (which must not hold
 * references): a pool frame of info.format and size with pts (PF_NOPTS if the
 * container has none), time_base and index (0, 1, 2, ... in output order)
 * set; the caller owns the reference and gives the frame back with
 * pf_frame_unref(). Returns PF_OK, PF_EOF after the last frame (and on every
 * call after), PF_AGAIN (nonblocking_retry only: reconnecting, no frame yet),
 * or an error: PF_ERR_IO / PF_ERR_FORMAT for an input that
 * cannot go on (a read error, a broken container), PF_ERR_BUSY (pool, see
 * pool_timeout_us). A packet the decoder rejects is skipped and counted in
 * stats.corrupt_packets. */
PF_API pf_status pf_video_reader_read(pf_video_reader *r, pf_frame *out);

PF_API pf_status pf_video_reader_get_stats(const pf_video_reader *r, pf_video_reader_stats *out);

/* Video: writing -----------------------------------------------------------------------
 *
 * Containers: ".y4m" and "-" write YUV4MPEG2 (C420jpeg from I420/NV12/RGB
 * input, Cmono from GRAY8); container "raw" writes frames as given (tightly
 * packed); anything else through FFmpeg, the muxer chosen from the extension
 * (or `container`). Input frames in another layout than the encoder's are
 * converted with libswscale (FFmpeg) or pf_ops_convert (Y4M), with the
 * matrix and range of params.color (pf_color_effective). Alpha is kept only
 * by codecs that store it, with a codec pixel format that has it: e.g.
 * codec "png", "qtrle" (.mov) or "ffv1" (.mkv) with codec_pixfmt
 * "rgba"/"argb"/"bgra" and RGBA input. Odd sizes: codecs whose 4:2:0
 * layout needs even sizes (H.264, HEVC, MPEG-1/2/4, H.263) get one column
 * and/or row more, repeating the edge (their bitstreams crop only in steps
 * of 2, so the stored size is the even one); others keep the size. */

typedef struct pf_video_writer pf_video_writer;

typedef struct pf_video_writer_params {
    const char *path;          /* file, "-" for stdout (Y4M unless container says), or
                                  a URL (udp://, tcp://, srt://, rtsp://, rtmp://: see
                                  "Network outputs" below) */
    const char *container;     /* NULL = from the extension (a URL: from its scheme);
                                  "y4m", "raw" or an FFmpeg muxer name ("mp4",
                                  "matroska", "mov", "mpegts", ...) */
    int width, height;         /* > 0 */
    pf_rational fps;           /* default 30/1; also the time base unless frames carry one */
    pf_pixfmt input_format;    /* of the frames passed to write(): RGB24, BGR24, RGBA,
                                  GRAY8, NV12, I420 */
    const char *codec;         /* FFmpeg encoder name; NULL (default) = libx264 when this
                                  FFmpeg has it, else the container's default encoder,
                                  else "mpeg4" (logged at info level) */
    int crf;                   /* constant quality for x264/x265/vpx (0..51), default 23;
                                  -1 = codec default */
    const char *preset;        /* encoder preset, default "medium" (x264); NULL = none */
    int64_t bitrate;           /* bits/s, 0 = quality mode (crf) */
    int gop;                   /* keyframe interval, 0 = codec default */
    const char *codec_pixfmt;  /* FFmpeg pixel format name for the encoder ("yuv420p",
                                  "rgba", ...); NULL = the encoder's first supported,
                                  preferring one with alpha for RGBA input */
    int threads;               /* encoder threads, 0 = FFmpeg's choice */
    /* Fidelity to the input (all zero = unknown/none). Pass the reader's
     * pf_video_info fields (or the first frame's) to keep them: */
    pf_rational time_base;     /* of the output stream; {0,0} = 1/fps. Frames' pts are
                                  rescaled into it exactly (a 1/24000 source keeps its
                                  1001-tick steps); fps stays the nominal rate */
    pf_color_info color;       /* tags written to the stream (color_range, colorspace,
                                  color_primaries, color_trc) and the matrix/range
                                  RGB input is encoded with (pf_color_effective) */
    pf_rational sar;           /* sample aspect ratio to store; {0,0} = 1:1 */
    double rotation;           /* display matrix to store: degrees counter-clockwise
                                  (pf_video_info.rotation); 0 = none */
    const char *copy_streams_from; /* a media file (normally the input) whose audio,
                                  subtitle and data streams are copied into the output
                                  unchanged (packets, no re-encode), timestamps
                                  rescaled on the same clock as the frames' pts, so
                                  they stay in sync; streams the container cannot
                                  hold are left out (logged). The writer opens its
                                  own demuxer on it. NULL = video only */
    /* Trimming, on the frames' clock (seconds = pts * time_base). Frames and
     * copied packets outside [start_s, start_s + duration_s) are dropped
     * (write() returns PF_OK for them); timestamps are shifted by start_s so
     * the output starts at 0. */
    double start_s;            /* default 0 */
    double duration_s;         /* > 0 limits the length; 0 = to the end */
    int64_t max_frames;        /* > 0: frames after this many are dropped, and copied
                                  streams end with the last frame; 0 = all */
    /* Network outputs (path is a URL, see "Network outputs" below): */
    const char *protocols;     /* URL protocols the muxer may open, comma-separated
                                  (FFmpeg's protocol_whitelist, nested opens such as
                                  RTSP's RTP/TCP included); NULL =
                                  PF_IO_DEFAULT_OUTPUT_PROTOCOLS. A URL whose scheme
                                  is not listed is refused (PF_ERR_UNSUPPORTED naming
                                  the scheme) */
    int64_t open_timeout_ms;   /* connecting and writing the stream header (RTSP's
                                  ANNOUNCE/SETUP/RECORD), default 10000; 0 = no
                                  limit. Past it: PF_ERR_IO "timed out" */
    int64_t write_timeout_ms;  /* one write() (encode + send) blocked this long on
                                  the receiver (a full socket buffer: a stalled or
                                  vanished peer) fails with PF_ERR_IO naming the
                                  URL, default 5000; 0 = no limit */
    const char *muxer_options; /* "key=value:key=value" for the protocol (avio_open2:
                                  "send_buffer_size=65536", "pkt_size=1316",
                                  "latency=200000" for SRT) and the muxer
                                  ("rtsp_transport=udp",
                                  "mpegts_flags=resend_headers"), files too; NULL =
                                  none. A key neither takes is PF_ERR_INVALID */
} pf_video_writer_params;

PF_API pf_video_writer_params pf_video_writer_params_default(void);

/* Network outputs ----------------------------------------------------------------------
 *
 * A path "scheme://..." is sent through a libavformat muxer instead of a
 * file: no temporary, no rename (pf_output is for files). The muxer comes
 * from the scheme unless `container` names one: MPEG-TS for udp://, tcp://,
 * srt:// and rtp:// (RTP/MPEG-TS), RTSP (ANNOUNCE + RECORD, RTP interleaved
 * in the TCP connection unless muxer_options says rtsp_transport=udp) for
 * rtsp://, FLV for rtmp:// and rtmps://. "file://" is refused (write to a
 * path: it gets the safe temporary), and so are the "y4m" and "raw"
 * containers (pixflow's own writers are files only).
 * Live settings: packets are flushed to the protocol as they come out of the
 * encoder (flush_packets), the MPEG-TS mux delay is 0.1 s instead of 0.7 and
 * video PES packets carry their length (a receiver's demuxer passes a frame
 * on when it is complete, not when the next one starts: one frame less
 * latency),
 * no B-frames, libx264 gets tune=zerolatency (no lookahead, no frame
 * threads: a frame leaves the encoder when it is written), without
 * params.gop a keyframe comes every 2 s so a receiver that joins late
 * starts within 2 s, and SRT lingers at close (up to write_timeout_ms) so
 * the last frames are delivered (live mode drops them otherwise). Pacing
 * is the caller's: write() sends a frame as soon as it is given (use the
 * reader's realtime for a file source).
 * Failure: a receiver that stops reading blocks a write until
 * write_timeout_ms, then PF_ERR_IO "cannot write: ... timed out"; one that
 * closes the connection (tcp, rtsp, rtmp, srt) fails the next write at once
 * (connection reset / broken pipe; never SIGPIPE). udp:// is connectionless:
 * a missing receiver is not noticed (packets are dropped by the network).
 * After an error the writer is unusable; close() then returns the error
 * without flushing to the dead peer. Credentials in the URL ("user:pass@",
 * "?passphrase=") never appear in messages (pf_io_redact). Data safety:
 * a URL output is never compared with input files (no inode); callers
 * refuse an output URL equal to an input URL (the CLI does). */

#define PF_IO_DEFAULT_OUTPUT_PROTOCOLS "tcp,udp,rtp,rtsp,srt,rtmp,rtmps,tls"

/* Opens a temporary beside p->path for writing (the output directory must
 * exist and be writable; "-" and special files are written in place), or
 * connects to a URL and writes the stream header (within open_timeout_ms),
 * and sets up the encoder. The caller owns *out. Errors:
 * PF_ERR_IO naming the path, PF_ERR_UNSUPPORTED (unknown codec or muxer,
 * "built without FFmpeg"), PF_ERR_INVALID (sizes, formats). */
PF_API pf_status pf_video_writer_create(const pf_video_writer_params *p, pf_video_writer **out);

/* Encodes one host frame (input_format, width x height; any strides; the
 * writer never keeps a reference). Timestamps: f->pts rescaled from
 * f->time_base when both are set and increase, else the frame counter at
 * fps. Errors: PF_ERR_INVALID (format, size, device memory), PF_ERR_IO
 * (write failed; the writer is then unusable). */
PF_API pf_status pf_video_writer_write(pf_video_writer *w, const pf_frame *f);

/* Flushes the encoder, writes the trailer and closes the file; returns the
 * first error of the whole write (PF_ERR_IO on a short write). The file is
 * written under a temporary name (pf_output, below) and renamed over `path`
 * here, only when all of it is written: until then an existing `path` is
 * untouched, and after any error it stays so (the temporary is removed).
 * Further write() calls fail with PF_ERR_CLOSED. Idempotent. */
PF_API pf_status pf_video_writer_close(pf_video_writer *w);

/* Closes (if not yet closed, logging an error it returns) and frees. Sets
 * *w = NULL; accepts NULL. */
PF_API void pf_video_writer_destroy(pf_video_writer **w);

/* Drops the output instead of closing it: the encoder is freed without
 * flushing the frames it still holds and without a trailer (nothing more is
 * encoded or written; a network output is not waited for), the temporary
 * file removed, and an existing `path` left as it
 * was (for a job that failed or was cancelled and wants nothing written).
 * After a successful close() the file is already in place and stays. Sets
 * *w = NULL; accepts NULL. */
PF_API void pf_video_writer_discard(pf_video_writer **w);

/* Frames written so far (not counting frames dropped by the trim window). */
PF_API int64_t pf_video_writer_frame_count(const pf_video_writer *w);

/* Safe output files ----------------------------------------------------------------------
 *
 * Every file pixflow writes (video, Y4M, raw, images, masks, JSON, traces,
 * .npy) goes through this: the bytes are written under a temporary name in
 * the output's own directory, ".NAME.pftmp-PID-N.EXT" (unique per process and
 * call, created with O_EXCL; the extension is kept so libraries that choose a
 * format from the name, like FFmpeg's muxers, still can), then flushed,
 * fsync'ed and renamed over `path` only when complete, and the directory is
 * fsync'ed. A failure, a full disk, a crash or a cancelled write therefore
 * never leaves a truncated file under `path` (whatever was there stays
 * intact until the rename), and two processes writing the same path leave
 * one complete file, never a mix. Abort removes the temporary file; only a
 * crash or SIGKILL can leave one behind (hidden, named as above).
 *
 * Written in place (no temporary, no rename): "-" (stdout), and an existing
 * path that is not a regular file (/dev/null, a FIFO, a character device):
 * renaming over those would replace the node itself. A symlink to a regular
 * file is resolved: the target is replaced, the link kept.
 *
 *   pf_output *o = NULL;
 *   if (pf_output_open("out.json", 0, &o) < 0) ...;       // message names the path
 *   fprintf(pf_output_file(o), "{...}\n");
 *   if (pf_output_commit(&o) < 0) ...;                      // or pf_output_abort(&o)
 *
 * A library that opens files by name (FFmpeg's avio_open) writes to
 * pf_output_write_path(o) instead, closes its own handle, then commits.
 *
 * Threading: a pf_output is used by one thread at a time; distinct outputs
 * may be opened, written and committed concurrently. */

typedef struct pf_output pf_output;

/* Flags of pf_output_open (or'ed). */
#define PF_OUTPUT_NO_OVERWRITE 1u  /* never replace an existing file: checked at open
                                      (PF_ERR_IO "PATH: already exists", before
                                      anything is written) and again atomically at commit
                                      (renameat2 RENAME_NOREPLACE, else link + unlink),
                                      so a file created meanwhile is kept too. Special
                                      files written in place are not refused */
#define PF_OUTPUT_NO_DIR_SYNC 2u   /* skip the directory fsync after the rename. The data
                                      is still fsync'ed before it, so the file under the
                                      path is the old one or the complete new one even
                                      after a power loss; only the rename itself may be
                                      undone by one. For jobs writing many small files
                                      into one directory, where that fsync costs more
                                      than the data's. pf_image_write and reproject's
                                      views use it. Measured: reproject of 60 inputs to
                                      480 JPEG views of 256x256 (ext4, 2 shared cores),
                                      4 interleaved runs: 0.72-1.07 s with the directory
                                      fsync, 0.68-0.82 s without, 0.56-0.66 s with no
                                      fsync at all; under load from other builds
                                      4.7-5.4, 2.7-3.1 and 1.9-2.1 s */

/* Process-wide policy or'ed into the flags of every pf_output_open (and so of
 * every writer of this library, e.g. pf_image_write, pf_video_writer,
 * traces): a program with an "-n, never overwrite" option sets
 * PF_OUTPUT_NO_OVERWRITE once at start. Default 0. Thread-safe (atomic). */
PF_API void pf_output_set_default_flags(unsigned flags);
PF_API unsigned pf_output_default_flags(void);

/* Creates the temporary file for `path` (or opens it in place, see above).
 * The caller owns *out and must end it with pf_output_commit or
 * pf_output_abort. Errors: PF_ERR_INVALID (NULL/empty path, a directory),
 * PF_ERR_IO naming the path (it exists under PF_OUTPUT_NO_OVERWRITE; a
 * missing or unwritable directory). Thread-safe. */
PF_API pf_status pf_output_open(const char *path, unsigned flags, pf_output **out);

/* The stdio stream to write to (binary mode; owned by the output: never
 * fclose it). */
PF_API FILE *pf_output_file(pf_output *o);
/* The name the bytes go to now: the temporary path, or `path` itself when
 * written in place ("-" for stdout). Valid until commit/abort. */
PF_API const char *pf_output_write_path(const pf_output *o);
/* The final path (a resolved symlink's target); "-" for stdout. */
PF_API const char *pf_output_path(const pf_output *o);
/* True when there is no temporary (stdout, special files). */
PF_API bool pf_output_in_place(const pf_output *o);

/* Flushes, fsyncs and closes the file, renames it over the final path and
 * fsyncs the directory (unless PF_OUTPUT_NO_DIR_SYNC). Always frees *o and
 * sets it to NULL (accepts NULL: PF_OK). On any error (a short write seen
 * now, disk full, "already exists" under PF_OUTPUT_NO_OVERWRITE: all
 * PF_ERR_IO) the temporary file is removed, the final path is untouched, and
 * the message names the final path. */
PF_API pf_status pf_output_commit(pf_output **o);
/* Closes and removes the temporary file (in place: just closes); the final
 * path is untouched. Frees *o, sets it to NULL; accepts NULL. */
PF_API void pf_output_abort(pf_output **o);

/* Writes `size` bytes at `data` as the whole of `path` through the above
 * (open, write, commit). "-" writes to stdout. Thread-safe. */
PF_API pf_status pf_output_write_file(const char *path, const void *data, size_t size,
                                      unsigned flags);

/* Whether `a` and `b` name the same existing file (same device and inode, so
 * hard links, symlinks and different spellings match); false when either
 * does not exist. Used to refuse an output that is an input. */
PF_API bool pf_output_same_file(const char *a, const char *b);

/* Whether `name` is a video encoder this build can write with: an FFmpeg
 * encoder name ("libx264", "mpeg4", ...); false without FFmpeg. Thread-safe. */
PF_API bool pf_video_have_encoder(const char *name);

/* Parses a time as given to --start/--duration: seconds ("12", "1.5") or
 * [HH:]MM:SS[.frac] ("00:01:02.5"). Non-negative and finite; PF_ERR_INVALID
 * naming the text otherwise. */
PF_API pf_status pf_parse_time(const char *text, double *seconds);

PF_END_DECLS

#endif
