/* pf_video_reader: Y4M and raw streams read here, other containers through
 * FFmpeg (video_ffmpeg.c); all hand out frames from one fixed pool.
 *
 * Design. The pool (pipeline/frame_pool.h) is made once, at create, with
 * the output format and size, so read() allocates nothing: it takes a free
 * pool frame, fills it and gives the caller the only reference; the frame
 * returns to the pool when the caller unrefs it, and the pool outlives the
 * reader while frames are out. Y4M/raw frames whose stored layout differs
 * from the wanted format are read into one scratch frame and converted with
 * pf_ops_convert on a CPU stream (both made once, at create).
 *
 * NVDEC (prefer_device on a CUDA device, H.264/HEVC in 8-bit 4:2:0):
 * frames come from the decoder's own device pool instead, NV12, never
 * touching the host. An elementary stream (.h264/.hevc) is split into
 * access units here; one decoder does ~700 1080p frames/s, so a regular
 * file gets one decoder per engine (up to 4) working GOP by GOP
 * (nvdec_gop.h); a pipe gets one. Any other container FFmpeg demuxes
 * (MP4, MKV, MOV, MPEG-TS, RTSP/SRT/UDP/TCP streams) gives its packets as
 * Annex B access units (pf_ffdec_open_packets) to one decoder per input:
 * several inputs (the multi-stream case) spread over the engines. Live
 * inputs decode with no display delay (a frame leaves as soon as it is
 * decoded) and reconnect as on the CPU path, with a new decoder. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../core/error.h"
#include "../pipeline/frame_pool.h"
#include "io_impl.h"
#include "pixflow/ops.h"
#include "video_impl.h"
#include "h264_es.h"
#include "nvdec.h"
#include "nvdec_gop.h"
#include "y4m.h"

typedef enum { SRC_Y4M, SRC_RAW, SRC_FFMPEG, SRC_NVDEC } src_kind;

struct pf_video_reader {
    src_kind kind;
    char *name;                 /* for messages */
    FILE *fp;                   /* Y4M / raw */
    bool own_fp;
    pf_peeked peeked;           /* a pipe or FIFO, sniffed (peeked.fp set) */
    pf_y4m_header y4m;
    pf_pixfmt stored;           /* layout read from the stream (Y4M: I420/GRAY8) */
    pf_frame scratch;           /* stored layout, when it differs from the output */
    uint8_t *chroma_scratch;    /* Y4M 4:2:2 / 4:4:4 */
    pf_stream *stream;          /* conversions */
    pf_ops *ops;
    pf_ffdec *ff;
    pf_es_reader *es;           /* SRC_NVDEC: access units of the .h264/.hevc file, or */
                                /* ff (packet mode): those of any other container */
    pf_nvdec *nv;               /* SRC_NVDEC: frames come from its device pool */
    pf_device *device;          /* of NVDEC, for a new decoder after a reconnect */
    pf_video_reader_stats au_stats; /* SRC_NVDEC on ff: the demuxer's counts */
    int64_t gop_pts0;           /* a container by GOP: frames' pts = gop_pts0 + index */
    bool gop_pts;               /* at the container's rate, in its time base */
    uint64_t nv_errors_done;    /* decode errors of decoders replaced by reconnects */
    pf_nvdec_gop *gop;          /* SRC_NVDEC on a file: several decoders, GOP by GOP */
    pf_frame_pool *pool;
    int64_t pool_timeout_us;
    pf_video_info info;
    pf_video_reader_stats stats;
    int64_t next_index;
    bool eof;
    pf_status failed;           /* sticky error of the input */
    /* Live input (see reopen()): a copy of the params with owned strings,
     * for reopening; timestamps made continuous across reopens. */
    pf_video_reader_params p;
    char *path, *protocols, *container;
    bool live;
    int attempts;               /* failed reopens in a row */
    int64_t last_frame_ns;      /* pf_time_ns() of the last frame out */
    int64_t last_pts;           /* output pts of the last frame out */
    int64_t conn_pts0;          /* first pts of this connection (its time base) */
    int64_t conn_base;          /* output pts of that first frame; PF_NOPTS = as read */
    bool reopened;              /* the next frame is the first after a reopen */
    bool reconnecting;          /* in reopen(): between a break and a frame */
    bool pending_open;          /* a live input not reachable at create: read() opens it */
    pf_status break_status;     /* what broke the stream (PF_EOF or an error) */
    int64_t delay_ms;           /* the next back-off wait */
    int64_t retry_at_ns;        /* pf_time_ns() of the next attempt */
    char why[512];              /* the last reason, for messages */
    /* realtime pacing (files): pts 0 of the clock and its wall time */
    bool pace_started;
    int64_t pace_pts0, pace_t0_ns;
};

pf_video_reader_params pf_video_reader_params_default(void)
{
    pf_video_reader_params p;
    memset(&p, 0, sizeof p);
    p.format = PF_PIXFMT_NONE;
    p.pool_size = 8;
    p.pool_timeout_us = -1;
    p.domain = PF_MEM_HOST;
    p.raw_fps = (pf_rational){30, 1};
    p.open_timeout_ms = 10000;
    p.read_timeout_ms = 5000;
    p.retry_delay_ms = 500;
    p.retry_max_delay_ms = 8000;
    return p;
}

bool pf_io_have_ffmpeg(void)
{
#ifdef PF_HAVE_FFMPEG
    return true;
#else
    return false;
#endif
}

static bool out_format_ok(pf_pixfmt f)
{
    return f == PF_PIXFMT_NV12 || f == PF_PIXFMT_I420 || f == PF_PIXFMT_RGB24 ||
           f == PF_PIXFMT_BGR24 || f == PF_PIXFMT_RGBA || f == PF_PIXFMT_GRAY8;
}

static bool y4m_magic(const uint8_t *b, size_t n)
{
    return n >= 10 && memcmp(b, "YUV4MPEG2", 9) == 0 && (b[9] == ' ' || b[9] == '\n');
}

static bool file_is_y4m(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return false;
    uint8_t magic[10] = {0};
    size_t n = fread(magic, 1, sizeof magic, fp);
    fclose(fp);
    return y4m_magic(magic, n);
}

/* "-" and anything that exists but is neither a regular file nor a
 * directory (a FIFO, /dev/stdin, /dev/fd/N of a process substitution, a
 * character device) can be read only once: it is opened once and its
 * first bytes are sniffed from that same stream. */
static bool is_stream(const char *path)
{
    if (pf_io_is_std(path)) return true;
    struct stat sb;
    return stat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode);
}

/* Opens a stream input and reads up to the Y4M signature's length. */
static pf_status peek_stream(pf_video_reader *r, const char *path)
{
    pf_peeked *in = &r->peeked;
    if (pf_io_is_std(path)) {
        in->fp = stdin;
    } else {
        in->fp = fopen(path, "rb");
        if (!in->fp) return pf_io_errno("open", path, errno);
        r->own_fp = true;
    }
    r->fp = in->fp;
    /* Unbuffered: FFmpeg then reads the descriptor itself, after the head,
     * with nothing read ahead into a stdio buffer. */
    setvbuf(in->fp, NULL, _IONBF, 0);
    in->n = fread(in->head, 1, 10, in->fp);
    if (in->n < 10 && ferror(in->fp)) return pf_io_errno("read", r->name, errno);
    if (in->n == 0) return pf_set_error(PF_ERR_FORMAT, "%s: empty input (no bytes)", r->name);
    return PF_OK;
}
/* NVDEC when asked for and possible: a CUDA device, NV12 (or default)
 * output, libnvcuvid present. */
static bool want_hw(const pf_video_reader_params *p)
{
    if (!p->prefer_device || !p->device || pf_device_get_type(p->device) != PF_DEVICE_CUDA)
        return false;
    if (p->format != PF_PIXFMT_NONE && p->format != PF_PIXFMT_NV12) return false;
    return pf_nvdec_available(NULL, 0);
}

/* ... on an elementary stream file, split into access units here. */
static bool want_nvdec_es(const pf_video_reader_params *p)
{
    bool es = p->container && p->container[0]
                  ? strcmp(p->container, "h264") == 0 || strcmp(p->container, "hevc") == 0
                  : pf_es_codec_from_path(p->path) != PF_ES_UNKNOWN;
    return es && !pf_io_is_std(p->path) && want_hw(p);
}

static pf_status pick_kind(pf_video_reader *r, const pf_video_reader_params *p, src_kind *kind)
{
    if (want_nvdec_es(p)) {
        *kind = SRC_NVDEC;
        return PF_OK;
    }
    if (pf_io_is_url(p->path) || pf_io_is_camera(p->path)) {
        struct stat sb;
        if (pf_io_is_camera(p->path) && stat(p->path, &sb) != 0)
            return pf_set_error(PF_ERR_IO, "%s: no such camera (V4L2 device): %s", r->name,
                                strerror(errno));
        *kind = SRC_FFMPEG; /* libavformat opens it (never sniffed as a stream) */
        return PF_OK;
    }
    const char *c = p->container;
    if ((!c || !c[0]) && is_stream(p->path)) {
        pf_status st = peek_stream(r, p->path);
        if (st != PF_OK) return st;
        *kind = y4m_magic(r->peeked.head, r->peeked.n) ? SRC_Y4M : SRC_FFMPEG;
        return PF_OK;
    }
    if (c && c[0]) {
        if (strcmp(c, "y4m") == 0 || strcmp(c, "yuv4mpegpipe") == 0)
            *kind = SRC_Y4M;
        else if (strcmp(c, "raw") == 0 || strcmp(c, "rawvideo") == 0)
            *kind = SRC_RAW;
        else
            *kind = SRC_FFMPEG;
        return PF_OK;
    }
    struct stat sb;
    if (stat(p->path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size == 0)
        return pf_set_error(PF_ERR_FORMAT, "%s: empty file", r->name);
    if (pf_io_has_ext(p->path, ".y4m") || file_is_y4m(p->path))
        *kind = SRC_Y4M;
    else if (pf_io_has_ext(p->path, ".raw") || pf_io_has_ext(p->path, ".yuv"))
        *kind = SRC_RAW;
    else
        *kind = SRC_FFMPEG;
    return PF_OK;
}

/* Conversion context for stored -> output (CPU). */
static pf_status make_converter(pf_video_reader *r)
{
    pf_status st = pf_stream_create(NULL, &r->stream);
    if (st != PF_OK) return st;
    pf_ops_params op = pf_ops_params_default();
    op.stream = r->stream;
    st = pf_ops_create(&op, &r->ops);
    if (st != PF_OK) return st;
    return pf_frame_alloc(&r->scratch, r->stored, r->info.width, r->info.height, NULL, NULL);
}

static pf_status open_file(pf_video_reader *r, const char *path)
{
    if (pf_io_is_std(path)) {
        r->fp = stdin;
        return PF_OK;
    }
    r->fp = fopen(path, "rb");
    if (!r->fp) return pf_io_errno("open", path, errno);
    r->own_fp = true;
    return PF_OK;
}

static pf_status open_y4m(pf_video_reader *r, const pf_video_reader_params *p)
{
    pf_status st = r->peeked.fp ? PF_OK : open_file(r, p->path);
    if (st != PF_OK) return st;
    st = pf_y4m_read_header_after(r->fp, r->name, r->peeked.head, r->peeked.n, &r->y4m);
    if (st != PF_OK) return st;
    pf_y4m_header *h = &r->y4m;
    r->info.width = h->width;
    r->info.height = h->height;
    r->stored = h->chroma == PF_Y4M_MONO ? PF_PIXFMT_GRAY8 : PF_PIXFMT_I420;
    r->info.color.range = h->range;
    if (h->aspect.num > 0 && h->aspect.den > 0) r->info.sar = h->aspect;
    if (h->fps.num > 0) {
        r->info.fps = h->fps;
        r->info.time_base = (pf_rational){h->fps.den, h->fps.num};
    } else {
        r->info.time_base = (pf_rational){1, 1}; /* pts = frame number */
    }
    if (h->chroma == PF_Y4M_422 || h->chroma == PF_Y4M_444) {
        PF_LOGI("%s: Y4M C%s chroma is averaged down to 4:2:0", r->name, h->chroma_tag);
        size_t chroma = pf_y4m_payload_size(h) - (size_t)h->width * (size_t)h->height;
        r->chroma_scratch = malloc(chroma);
        if (!r->chroma_scratch) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", r->name);
    }
    /* Frame count from the file size when the file is seekable and every
     * FRAME line is the bare "FRAME\n" (an estimate otherwise). */
    r->info.frame_count = -1;
    if (r->own_fp && !r->peeked.fp) {
        long here = ftell(r->fp);
        if (here >= 0 && fseek(r->fp, 0, SEEK_END) == 0) {
            long end = ftell(r->fp);
            size_t per = pf_y4m_payload_size(h) + 6;
            if (end >= here && per > 0) r->info.frame_count = (int64_t)((size_t)(end - here) / per);
            fseek(r->fp, here, SEEK_SET);
        }
    }
    snprintf(r->info.codec, sizeof r->info.codec, "rawvideo");
    snprintf(r->info.container, sizeof r->info.container, "y4m");
    snprintf(r->info.decoder, sizeof r->info.decoder, "y4m C%s (cpu)", h->chroma_tag);
    return PF_OK;
}

static pf_status open_raw(pf_video_reader *r, const pf_video_reader_params *p)
{
    if (p->raw_width <= 0 || p->raw_height <= 0 || p->raw_width > PF_FRAME_MAX_DIM ||
        p->raw_height > PF_FRAME_MAX_DIM)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_video_reader_create: %s: raw input needs raw_width and raw_height "
                            "in 1..%d (got %dx%d)",
                            r->name, PF_FRAME_MAX_DIM, p->raw_width, p->raw_height);
    if (!out_format_ok(p->raw_format))
        return pf_set_error(PF_ERR_INVALID,
                            "pf_video_reader_create: %s: raw_format %s is not a frame format",
                            r->name, pf_pixfmt_name(p->raw_format));
    if (p->raw_fps.num <= 0 || p->raw_fps.den <= 0)
        return pf_set_error(PF_ERR_INVALID, "pf_video_reader_create: %s: raw_fps %d/%d",
                            r->name, p->raw_fps.num, p->raw_fps.den);
    pf_status st = open_file(r, p->path);
    if (st != PF_OK) return st;
    r->info.width = p->raw_width;
    r->info.height = p->raw_height;
    r->info.fps = p->raw_fps;
    r->info.time_base = (pf_rational){p->raw_fps.den, p->raw_fps.num};
    r->stored = p->raw_format;
    r->info.frame_count = -1;
    size_t total = 0;
    size_t strides[PF_FRAME_MAX_PLANES], offsets[PF_FRAME_MAX_PLANES];
    pf_frame_layout(r->stored, r->info.width, r->info.height, 1, strides, offsets, &total);
    if (r->own_fp && total > 0 && fseek(r->fp, 0, SEEK_END) == 0) {
        long end = ftell(r->fp);
        if (end >= 0) r->info.frame_count = (int64_t)((size_t)end / total);
        fseek(r->fp, 0, SEEK_SET);
    }
    snprintf(r->info.codec, sizeof r->info.codec, "rawvideo");
    snprintf(r->info.container, sizeof r->info.container, "raw");
    snprintf(r->info.decoder, sizeof r->info.decoder, "raw %s (cpu)", pf_pixfmt_name(r->stored));
    return PF_OK;
}

/* How many NVDEC decoders to run on this input: its share of the engines
 * (engines / hw_share, up to 4: about 2700 1080p frames/s on an H100/H200,
 * more than the chain after it), for a regular file only: the GOP decoders
 * each read the file themselves, which a pipe or a live stream cannot give
 * them. PIXFLOW_NVDEC_DECODERS=N (1..8) overrides the count (1: the single
 * decoder, lowest start-up). */
static int nvdec_decoders(const pf_video_reader_params *p, const pf_nvdec_info *ni)
{
    struct stat sb;
    if (pf_io_is_live(p->path) || stat(p->path, &sb) != 0 || !S_ISREG(sb.st_mode)) return 1;
    int share = p->hw_share > 1 ? p->hw_share : 1;
    int k = ni->engines / share > 4 ? 4 : ni->engines / share;
    const char *env = getenv("PIXFLOW_NVDEC_DECODERS");
    if (env && *env) {
        char *end = NULL;
        long v = strtol(env, &end, 10);
        if (end && !*end && v >= 1 && v <= 8) k = (int)v;
    }
    return k < 1 ? 1 : k;
}

/* The next access unit for NVDEC: from the elementary stream, or from the
 * demuxer in packet mode (with its pts). */
static pf_status next_au(pf_video_reader *r, const uint8_t **au, size_t *n, int64_t *pts)
{
    if (r->es) {
        *pts = PF_NOPTS;
        pf_status st = pf_es_reader_next(r->es, au, n);
        if (st == PF_OK) r->stats.packets++;
        return st;
    }
    pf_status st = pf_ffdec_read_au(r->ff, au, n, pts, &r->au_stats);
    r->stats.packets = r->au_stats.packets;
    return st;
}

/* Damage so far: the demuxer's, and the decoders' (this one and those
 * replaced by reconnects). */
static void nvdec_damage(pf_video_reader *r)
{
    pf_nvdec_stats ns;
    uint64_t nv = r->nv && pf_nvdec_get_stats(r->nv, &ns) == PF_OK ? ns.decode_errors : 0;
    r->stats.corrupt_packets = r->au_stats.corrupt_packets + r->nv_errors_done + nv;
}

static void drop_nvdec(pf_video_reader *r)
{
    pf_nvdec_stats ns;
    if (r->nv && pf_nvdec_get_stats(r->nv, &ns) == PF_OK) r->nv_errors_done += ns.decode_errors;
    pf_nvdec_destroy(&r->nv);
}

/* Makes the NVDEC decoder and feeds access units until the first sequence
 * header has set the size (frames decoded on the way wait in the decoder
 * for read()). `tb`: of the pts the source gives (ignored for an
 * elementary stream, which has none). */
static pf_status start_nvdec(pf_video_reader *r, pf_es_codec codec, pf_rational tb,
                             pf_nvdec_params *np, pf_nvdec_info *ni)
{
    *np = pf_nvdec_params_default();
    np->device = r->device;
    np->codec = codec;
    np->pool_size = r->p.pool_size < 4 ? 4 : r->p.pool_size;
    np->pool_timeout_us = r->p.pool_timeout_us;
    np->name = r->name;
    if (tb.num > 0 && tb.den > 0) np->time_base = tb;
    /* Live: each frame leaves as soon as it is decoded (B-frames are rare
     * in live streams; with them the parser still orders the output). */
    if (r->live || r->p.low_latency) np->display_delay = 0;
    pf_status st = pf_nvdec_create(np, &r->nv);
    while (st == PF_OK && pf_nvdec_get_info(r->nv, ni) == PF_AGAIN) {
        const uint8_t *au;
        size_t n;
        int64_t pts;
        st = next_au(r, &au, &n, &pts);
        if (st == PF_EOF)
            return pf_set_error(PF_ERR_FORMAT, "%s: no decodable %s sequence header", r->name,
                                pf_es_codec_name(codec));
        if (st == PF_OK) st = pf_nvdec_decode(r->nv, au, n, pts);
    }
    return st;
}

/* Size, colour and names of an NVDEC input from its first sequence header
 * (`decoders`: 1, or that many by GOP). */
static void nvdec_info(pf_video_reader *r, const pf_nvdec_info *ni, int decoders)
{
    r->info.width = ni->width;
    r->info.height = ni->height;
    r->info.hw_decode = true;
    r->stored = PF_PIXFMT_NV12;
    char how[32] = "nvdec";
    if (decoders > 1) snprintf(how, sizeof how, "nvdec x%d by GOP", decoders);
    snprintf(r->info.decoder, sizeof r->info.decoder, "%s (%s, %s)",
             pf_es_codec_name(ni->codec), how, pf_device_spec(r->device));
}

/* Forgets the first decoder and demuxer of a container input (they told
 * the stream's facts) before it is opened again another way. */
static void drop_probe(pf_video_reader *r)
{
    pf_nvdec_destroy(&r->nv);
    pf_ffdec_close(&r->ff);
    memset(&r->stats, 0, sizeof r->stats);
    memset(&r->au_stats, 0, sizeof r->au_stats);
}

/* Opens the elementary stream and its NVDEC decoder(s). */
static pf_status open_nvdec(pf_video_reader *r, const pf_video_reader_params *p)
{
    pf_es_codec codec = p->container && strcmp(p->container, "hevc") == 0   ? PF_ES_HEVC
                        : p->container && strcmp(p->container, "h264") == 0 ? PF_ES_H264
                                                                            : PF_ES_UNKNOWN;
    pf_status st = pf_es_reader_open(p->path, codec, &r->es);
    if (st != PF_OK) return st;
    pf_nvdec_params np;
    pf_nvdec_info ni;
    st = start_nvdec(r, pf_es_reader_codec(r->es), (pf_rational){0, 0}, &np, &ni);
    if (st != PF_OK) return st;
    int k = nvdec_decoders(p, &ni);
    if (k > 1) {
        /* The first decoder told the size and the engines; the GOP decoders
         * start again from the beginning of the file. */
        pf_nvdec_destroy(&r->nv);
        pf_es_reader_close(&r->es);
        r->stats.packets = 0;
        np.pool_timeout_us = -1;
        if ((st = pf_nvdec_gop_open(p->path, false, &np, k, &r->gop)) != PF_OK) return st;
        pf_nvdec_gop_get_info(r->gop, &ni);
    }
    r->info.fps = ni.fps.num > 0 ? ni.fps : (pf_rational){30, 1};
    r->info.time_base = (pf_rational){r->info.fps.den, r->info.fps.num};
    r->info.frame_count = -1;
    r->info.duration_s = -1;
    r->info.color = ni.color;
    snprintf(r->info.codec, sizeof r->info.codec, "%s", pf_es_codec_name(np.codec));
    snprintf(r->info.container, sizeof r->info.container, "%s", pf_es_codec_name(np.codec));
    nvdec_info(r, &ni, k);
    return PF_OK;
}

/* Any other container on NVDEC: FFmpeg demuxes, NVDEC decodes. A stream
 * NVDEC cannot take (another codec, 10-bit...) decodes on the CPU: FFmpeg
 * opens its decoder instead, or, for what only the first sequence header
 * tells (a size past the engine's limits), the input is opened again for
 * the CPU when it can be (a file or URL; not a pipe already read from). */
static pf_status open_ffnv(pf_video_reader *r, const pf_video_reader_params *p)
{
    bool packets = false;
    pf_es_codec codec;
    pf_peeked *in = r->peeked.fp ? &r->peeked : NULL;
    pf_status st = pf_ffdec_open_packets(p, r->name, in, &r->ff, &r->info, &packets, &codec);
    if (st != PF_OK || !packets) return st;
    pf_nvdec_params np;
    pf_nvdec_info ni;
    st = start_nvdec(r, codec, r->info.time_base, &np, &ni);
    if (st == PF_ERR_UNSUPPORTED && !in) {
        PF_LOGI("%s: NVDEC cannot decode it (%s): decoding on the CPU", r->name, pf_last_error());
        pf_clear_error();
        drop_probe(r);
        return pf_ffdec_open(p, r->name, NULL, &r->ff, &r->info);
    }
    if (st != PF_OK) return st;
    r->kind = SRC_NVDEC;
    int k = in ? 1 : nvdec_decoders(p, &ni);
    if (k > 1) {
        /* The first decoder told the size and the engines; the GOP decoders
         * demux the file again from its start, each on its own. */
        drop_probe(r);
        np.pool_timeout_us = -1;
        if (r->info.fps.num > 0 && r->info.fps.den > 0) np.fps = r->info.fps;
        if ((st = pf_nvdec_gop_open(p->path, true, &np, k, &r->gop)) != PF_OK) return st;
        pf_nvdec_gop_get_info(r->gop, &ni);
        pf_rational tb = r->info.time_base;
        r->gop_pts = r->info.fps.num > 0 && r->info.fps.den > 0 && tb.num > 0 && tb.den > 0;
        r->gop_pts0 = r->gop_pts ? llround(r->info.start_time_s * tb.den / tb.num) : 0;
    }
    nvdec_info(r, &ni, k);
    return PF_OK;
}

/* Opens the input of kind r->kind: its decoder, the output format, the
 * pool. */
static pf_status open_input(pf_video_reader *r, const pf_video_reader_params *p)
{
    pf_status st = PF_OK;
    switch (r->kind) {
    case SRC_Y4M: st = open_y4m(r, p); break;
    case SRC_RAW: st = open_raw(r, p); break;
    case SRC_FFMPEG:
        r->stored = PF_PIXFMT_NONE;
        st = want_hw(p) ? open_ffnv(r, p)
                        : pf_ffdec_open(p, r->name, r->peeked.fp ? &r->peeked : NULL, &r->ff,
                                        &r->info);
        break;
    case SRC_NVDEC: st = open_nvdec(r, p); break;
    }
    if (st == PF_OK) {
        pf_pixfmt f = p->format;
        if (f == PF_PIXFMT_NONE && r->kind == SRC_NVDEC)
            f = PF_PIXFMT_NV12;
        else if (f == PF_PIXFMT_NONE)
            f = r->stored == PF_PIXFMT_GRAY8 && r->kind == SRC_Y4M ? PF_PIXFMT_GRAY8
                                                                   : PF_PIXFMT_I420;
        r->info.format = f;
        if (r->kind != SRC_FFMPEG && r->kind != SRC_NVDEC && r->stored != f) st = make_converter(r);
    }
    if (st == PF_OK && r->kind != SRC_NVDEC) { /* NVDEC frames come from its own pool */
        pf_frame_pool_params pp = {.format = r->info.format,
                                   .width = r->info.width,
                                   .height = r->info.height,
                                   .count = p->pool_size,
                                   .device = r->device,
                                   .domain = p->domain,
                                   .name = r->name};
        st = pf_frame_pool_create(&pp, &r->pool);
    }
    if (st == PF_OK && p->prefer_device && r->kind != SRC_NVDEC)
        PF_LOGI("%s: NVDEC not used (needs a CUDA device, H.264/HEVC in 8-bit 4:2:0, NV12 "
                "output and libnvcuvid): decoding on the CPU (%s)",
                r->name, r->info.decoder);
    return st;
}

pf_status pf_video_reader_create(const pf_video_reader_params *p, pf_video_reader **out)
{
    PF_CHECK_ARG(out, "pf_video_reader_create", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(p, "pf_video_reader_create", "params are NULL");
    PF_CHECK_ARG(p->path && p->path[0], "pf_video_reader_create", "path is NULL or empty");
    char shown[1024];
    const char *name = pf_io_redact(pf_io_in_name(p->path), shown, sizeof shown);
    PF_CHECK_ARG(p->retries >= -1 && p->retry_delay_ms >= 0 &&
                     p->retry_max_delay_ms >= p->retry_delay_ms && p->open_timeout_ms >= 0 &&
                     p->read_timeout_ms >= 0,
                 "pf_video_reader_create",
                 "retries must be >= -1, timeouts >= 0, retry_max_delay_ms >= retry_delay_ms");
    if (p->format != PF_PIXFMT_NONE && !out_format_ok(p->format))
        return pf_set_error(PF_ERR_INVALID, "pf_video_reader_create: %s: output format %s",
                            name, pf_pixfmt_name(p->format));
    if (p->pool_size < 1 || p->pool_size > 4096)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_video_reader_create: %s: pool_size %d is out of range 1..4096",
                            name, p->pool_size);
    if (p->domain != PF_MEM_HOST && p->domain != PF_MEM_PINNED)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_video_reader_create: %s: pool domain must be host or pinned "
                            "(decoders write with the CPU)",
                            name);
    pf_video_reader *r = calloc(1, sizeof *r);
    if (!r) return pf_set_error(PF_ERR_NOMEM, "pf_video_reader_create: out of host memory");
    r->name = strdup(name);
    r->pool_timeout_us = p->pool_timeout_us;
    r->p = *p;
    r->path = strdup(p->path);
    r->protocols = p->protocols ? strdup(p->protocols) : NULL;
    r->container = p->container ? strdup(p->container) : NULL;
    r->p.path = r->path;
    r->p.protocols = r->protocols;
    r->p.container = r->container;
    r->p.device = NULL; /* only the pool uses it, made once */
    r->live = pf_io_is_live(p->path);
    r->device = p->device;
    r->conn_base = PF_NOPTS;
    pf_status st = r->name && r->path && (r->protocols || !p->protocols) &&
                           (r->container || !p->container)
                       ? PF_OK
                       : pf_set_error(PF_ERR_NOMEM, "out of host memory");
    if (st == PF_OK) st = pick_kind(r, p, &r->kind);
    if (st == PF_OK) st = open_input(r, p);
    if (st == PF_ERR_IO && p->open_later && r->live && p->retries != 0 && r->kind == SRC_FFMPEG &&
        !r->nv) {
        /* A camera or server that is down when the run starts: the reader
         * is made anyway and read() opens it with back-off (retries), so
         * the other streams of a run start without it. */
        snprintf(r->why, sizeof r->why, "%s", pf_last_error());
        PF_LOGW("%s; opening it in the background (retries %d, first delay %lld ms)", r->why,
                p->retries, (long long)p->retry_delay_ms);
        pf_clear_error();
        pf_ffdec_close(&r->ff);
        memset(&r->info, 0, sizeof r->info);
        memset(&r->stats, 0, sizeof r->stats);
        r->info.format = p->format != PF_PIXFMT_NONE ? p->format : PF_PIXFMT_I420;
        r->info.frame_count = -1;
        r->info.duration_s = -1;
        snprintf(r->info.decoder, sizeof r->info.decoder, "(not open yet)");
        r->pending_open = true;
        r->delay_ms = p->retry_delay_ms;
        r->retry_at_ns = pf_time_ns() + r->delay_ms * 1000000;
        st = PF_OK;
    }
    if (st != PF_OK) {
        pf_video_reader_destroy(&r);
        return st;
    }
    *out = r;
    return PF_OK;
}

void pf_video_reader_destroy(pf_video_reader **pr)
{
    if (!pr || !*pr) return;
    pf_video_reader *r = *pr;
    *pr = NULL;
    pf_ffdec_close(&r->ff);
    pf_nvdec_gop_close(&r->gop);
    pf_nvdec_destroy(&r->nv);
    pf_es_reader_close(&r->es);
    if (r->own_fp && r->fp) fclose(r->fp);
    pf_frame_pool_destroy(&r->pool);
    pf_frame_unref(&r->scratch);
    pf_ops_destroy(&r->ops);
    pf_stream_destroy(&r->stream);
    free(r->chroma_scratch);
    free(r->name);
    free(r->path);
    free(r->protocols);
    free(r->container);
    free(r);
}

pf_status pf_video_reader_info(const pf_video_reader *r, pf_video_info *out)
{
    PF_CHECK_ARG(r && out, "pf_video_reader_info", "reader or out is NULL");
    *out = r->info;
    return PF_OK;
}

pf_status pf_video_reader_get_stats(const pf_video_reader *r, pf_video_reader_stats *out)
{
    PF_CHECK_ARG(r && out, "pf_video_reader_get_stats", "reader or out is NULL");
    *out = r->stats;
    return PF_OK;
}

/* GRAY8 -> I420/NV12 keeps the luma exactly and sets neutral chroma (a
 * colour conversion would map gray to limited-range Y). */
static void mono_to_yuv(const pf_frame *src, pf_frame *dst)
{
    for (int y = 0; y < src->height; y++)
        memcpy(dst->data[0] + (size_t)y * dst->stride[0], src->data[0] + (size_t)y * src->stride[0],
               (size_t)src->width);
    size_t cw = (size_t)(src->width + 1) / 2, ch = (size_t)(src->height + 1) / 2;
    size_t bytes = dst->format == PF_PIXFMT_NV12 ? 2 * cw : cw;
    for (int pl = 1; pl < dst->num_planes; pl++)
        for (size_t y = 0; y < ch; y++) memset(dst->data[pl] + y * dst->stride[pl], 128, bytes);
}

static pf_status read_stream(pf_video_reader *r, pf_frame *f)
{
    pf_frame *dst = r->scratch.buf[0] ? &r->scratch : f;
    bool cut = false;
    pf_status st = r->kind == SRC_Y4M
                       ? pf_y4m_read_frame(r->fp, r->name, &r->y4m, r->next_index,
                                           r->chroma_scratch, dst, &cut)
                       : pf_raw_read_frame(r->fp, r->name, r->next_index, dst, &cut);
    if (cut) {
        /* A stream cut inside a frame (a copy stopped early, a killed
         * writer): the frames before it are whole and were returned; the
         * partial one is dropped and counted, and the stream ends, as
         * ffmpeg does with a cut rawvideo stream. */
        PF_LOGW("%s: the input is truncated: frame %lld is incomplete and dropped; the %lld "
                "frames before it are kept",
                r->name, (long long)r->next_index, (long long)r->next_index);
        r->stats.corrupt_packets++;
        pf_clear_error(); /* counted and warned: the stream ends normally */
        return PF_EOF;
    }
    if (st == PF_ERR_FORMAT && r->next_index > 0) {
        /* A damaged FRAME line after whole frames: the stream cannot be
         * followed past it (frame lines carry no sync), so it ends there
         * like a cut one, instead of failing the job and its output. The
         * message is copied first: formatting the error into itself is
         * undefined. */
        char why[256];
        snprintf(why, sizeof why, "%s", pf_last_error());
        PF_LOGW("%s: the stream is damaged at frame %lld and ends there; the %lld frames "
                "before it are kept (%s)",
                r->name, (long long)r->next_index, (long long)r->next_index, why);
        r->stats.corrupt_packets++;
        pf_clear_error();
        return PF_EOF;
    }
    if (st != PF_OK) return st;
    r->stats.packets++;
    dst->color = r->info.color;
    dst->sar = r->info.sar;
    if (dst == f) return PF_OK;
    if (r->stored == PF_PIXFMT_GRAY8 &&
        (f->format == PF_PIXFMT_I420 || f->format == PF_PIXFMT_NV12)) {
        mono_to_yuv(dst, f);
        return PF_OK;
    }
    pf_color_params cp = pf_color_params_for(dst);
    st = pf_ops_convert(r->ops, dst, f, &cp);
    if (st == PF_OK) st = pf_stream_synchronize(r->stream);
    f->color = dst->color;
    f->sar = dst->sar;
    return st;
}

/* The next NVDEC frame (device NV12 from the decoder's pool): receive, and
 * feed one access unit whenever the decoder needs more. */
static pf_status read_nvdec(pf_video_reader *r, pf_frame *f)
{
    if (r->gop) {
        pf_status st = pf_nvdec_gop_read(r->gop, f);
        if (st == PF_OK && r->gop_pts) {
            /* Display index -> the container's clock (a constant rate, from
             * its first pts), rounded like FFmpeg's own rescaling. */
            pf_rational tb = r->info.time_base, fps = r->info.fps;
            int64_t num = f->pts * (int64_t)tb.den * fps.den, den = (int64_t)tb.num * fps.num;
            f->pts = r->gop_pts0 + (num + den / 2) / den;
            f->time_base = tb;
        }
        pf_nvdec_gop_stats gs;
        pf_nvdec_gop_get_stats(r->gop, &gs);
        r->stats.packets = gs.packets;
        r->stats.corrupt_packets = gs.decode_errors;
        return st;
    }
    if (!r->nv) return pf_set_error(PF_ERR_IO, "%s: no decoder (reconnecting)", r->name);
    for (;;) {
        pf_status st = pf_nvdec_receive(r->nv, f);
        if (st != PF_AGAIN) return st; /* PF_OK or PF_EOF */
        const uint8_t *au;
        size_t n;
        int64_t pts;
        st = next_au(r, &au, &n, &pts);
        if (st == PF_EOF) st = pf_nvdec_flush(r->nv);
        else if (st == PF_OK) st = pf_nvdec_decode(r->nv, au, n, pts);
        nvdec_damage(r);
        if (st != PF_OK) return st;
    }
}

static void sleep_ns(int64_t ns)
{
    if (ns <= 0) return;
    struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* pts in time base `tb` to nanoseconds (double: pts * tb fits easily). */
static int64_t pts_ns(int64_t pts, pf_rational tb)
{
    return tb.den > 0 ? (int64_t)((double)pts * tb.num / tb.den * 1e9) : 0;
}

/* Longest a consumer that fell behind is let catch up at full speed. */
#define PACE_CATCH_UP_NS 1000000000LL

/* realtime: frame f leaves no earlier than its pts says, measured from the
 * first frame on the monotonic clock. Sleeps (never spins). A reader more
 * than PACE_CATCH_UP_NS late moves its clock instead of bursting. */
static void pace(pf_video_reader *r, const pf_frame *f)
{
    /* Frames without pts (NVDEC's elementary streams) go by index and fps. */
    pf_rational fps = r->info.fps;
    bool by_pts = f->pts != PF_NOPTS && f->time_base.den > 0;
    if (!by_pts && (fps.num <= 0 || fps.den <= 0)) return;
    int64_t t = by_pts ? f->pts : f->index;
    pf_rational tb = by_pts ? f->time_base : (pf_rational){fps.den, fps.num};
    int64_t now = pf_time_ns();
    if (!r->pace_started) {
        r->pace_started = true;
        r->pace_pts0 = t;
        r->pace_t0_ns = now;
        return;
    }
    int64_t due = r->pace_t0_ns + pts_ns(t - r->pace_pts0, tb);
    if (due > now) sleep_ns(due - now);
    else if (now - due > PACE_CATCH_UP_NS) r->pace_t0_ns += now - due - PACE_CATCH_UP_NS;
}

/* Live frames keep increasing pts across reopens: each connection's pts
 * are shifted to continue from the last frame out plus the wall time the
 * break lasted (in the first connection's time base). */
static void live_timestamps(pf_video_reader *r, pf_frame *f)
{
    int64_t now = pf_time_ns();
    pf_rational tb = r->info.time_base;
    if (f->pts != PF_NOPTS && tb.num > 0 && tb.den > 0) {
        int64_t pts = f->pts;
        if (f->time_base.num != tb.num || f->time_base.den != tb.den)
            pts = (int64_t)((double)pts * f->time_base.num * tb.den /
                            ((double)f->time_base.den * tb.num));
        if (r->reopened) {
            int64_t gap_ticks = (int64_t)((double)(now - r->last_frame_ns) * tb.den /
                                          (1e9 * tb.num));
            r->conn_base = r->last_pts + (gap_ticks > 0 ? gap_ticks : 1);
            r->conn_pts0 = pts;
        }
        if (r->conn_base != PF_NOPTS) pts = r->conn_base + (pts - r->conn_pts0);
        f->pts = pts;
        f->time_base = tb;
        r->last_pts = pts;
    }
    if (r->reopened) {
        int64_t gap = now - r->last_frame_ns;
        r->stats.gap_us += gap / 1000;
        double fps = r->info.fps.den > 0 ? (double)r->info.fps.num / r->info.fps.den : 0;
        int64_t missed = fps > 0 ? (int64_t)(gap / 1e9 * fps + 0.5) - 1 : 0;
        if (missed > 0) r->stats.frames_missed += (uint64_t)missed;
        PF_LOGW("%s: stream resumed after %.2f s (about %lld frames missed; %llu reconnects "
                "so far)",
                r->name, gap / 1e9, (long long)(missed > 0 ? missed : 0),
                (unsigned long long)r->stats.reconnects);
        r->reopened = false;
    }
    r->last_frame_ns = now;
}

/* Under nonblocking_retry, read() returns PF_AGAIN at least this often
 * while it waits to reconnect. */
#define RETRY_SLICE_NS 100000000LL

/* The back-off of reopen() and first_open() before an attempt: waits until
 * retry_at_ns (under nonblocking_retry, PF_AGAIN while it is not due), then
 * counts the attempt and doubles the next delay. PF_EOF: attempts spent. */
static pf_status next_attempt(pf_video_reader *r)
{
    if (r->p.retries >= 0 && r->attempts >= r->p.retries) return PF_EOF;
    int64_t wait = r->retry_at_ns - pf_time_ns();
    if (wait > 0 && r->p.nonblocking_retry) {
        sleep_ns(wait < RETRY_SLICE_NS ? wait : RETRY_SLICE_NS);
        if (pf_time_ns() < r->retry_at_ns) return PF_AGAIN;
    } else if (wait > 0) {
        sleep_ns(wait);
    }
    r->attempts++;
    r->delay_ms = r->delay_ms * 2 > r->p.retry_max_delay_ms ? r->p.retry_max_delay_ms
                                                            : r->delay_ms * 2;
    return PF_OK;
}

/* A failed attempt (r->why says why): counted, said, the next scheduled. */
static void attempt_failed(pf_video_reader *r, const char *what)
{
    r->stats.reconnect_failures++;
    PF_LOGW("%s (%s attempt %d)", r->why, what, r->attempts);
    r->retry_at_ns = pf_time_ns() + r->delay_ms * 1000000;
}

/* A live input that could not be opened at create (pending_open): opens
 * it with back-off until it opens (PF_OK: the info, decoder and pool are
 * there now) or the attempts run out (an error). It decodes on the CPU
 * whatever the stream: the caller was told hw_decode = false at create
 * and planned for host frames. Resumable under nonblocking_retry like
 * reopen(). */
static pf_status first_open(pf_video_reader *r)
{
    for (;;) {
        pf_status wst = next_attempt(r);
        if (wst == PF_EOF)
            return pf_set_error(PF_ERR_IO, "%s; %d attempts to open it failed", r->why,
                                r->attempts);
        if (wst != PF_OK) return wst;
        pf_video_reader_params q = r->p;
        q.device = r->device;
        q.prefer_device = false;
        pf_video_info keep = r->info;
        pf_status st = open_input(r, &q);
        if (st == PF_OK) {
            PF_LOGI("%s: opened (attempt %d): %dx%d, %s", r->name, r->attempts, r->info.width,
                    r->info.height, r->info.decoder);
            r->pending_open = false;
            r->attempts = 0;
            return PF_OK;
        }
        snprintf(r->why, sizeof r->why, "%s", pf_last_error());
        pf_ffdec_close(&r->ff);
        r->info = keep;
        attempt_failed(r, "open");
        if (r->p.nonblocking_retry) return PF_AGAIN;
    }
}

/* One frame from the open FFmpeg or NVDEC source into f (for FFmpeg, a
 * pool frame). */
static pf_status read_one(pf_video_reader *r, pf_frame *f)
{
    return r->kind == SRC_NVDEC ? read_nvdec(r, f) : pf_ffdec_read(r->ff, f, &r->stats);
}

/* Opens a live input again: FFmpeg's decoder, or the demuxer in packet
 * mode with a new NVDEC decoder (the old one's state belongs to the old
 * connection). *w x *h: the size it came back with. */
static pf_status reconnect(pf_video_reader *r, int *w, int *h)
{
    pf_ffdec_close(&r->ff);
    pf_video_info ni;
    memset(&ni, 0, sizeof ni);
    if (r->kind != SRC_NVDEC) {
        pf_status st = pf_ffdec_open(&r->p, r->name, NULL, &r->ff, &ni);
        *w = ni.width, *h = ni.height;
        return st;
    }
    drop_nvdec(r);
    bool packets = false;
    pf_es_codec codec;
    pf_status st = pf_ffdec_open_packets(&r->p, r->name, NULL, &r->ff, &ni, &packets, &codec);
    if (st == PF_OK && !packets)
        st = pf_set_error(PF_ERR_FORMAT, "%s: the stream came back as %s, which NVDEC cannot "
                          "decode", r->name, ni.codec);
    pf_nvdec_params np;
    pf_nvdec_info nvi;
    if (st == PF_OK) st = start_nvdec(r, codec, ni.time_base, &np, &nvi);
    if (st == PF_OK) *w = nvi.width, *h = nvi.height;
    if (st != PF_OK) pf_ffdec_close(&r->ff), drop_nvdec(r);
    return st;
}


/* A live input failed (st < 0), stalled, or ended (PF_EOF): reopen it with
 * back-off until a frame comes (PF_OK, into *f) or the attempts run out
 * (PF_EOF when frames were read before, else the error). The pool and the
 * stream's size stay; a stream that comes back with another size is an
 * error. Resumable: under nonblocking_retry it returns PF_AGAIN between
 * waits and attempts, and the next read() goes on where it left. */
static pf_status reopen(pf_video_reader *r, pf_status st, pf_frame *f)
{
    if (!r->reconnecting) { /* a new break */
        /* Messages of the reader and the decoder start with the name already. */
        if (st == PF_EOF) snprintf(r->why, sizeof r->why, "%s: the stream ended", r->name);
        else snprintf(r->why, sizeof r->why, "%s", pf_last_error());
        PF_LOGW("%s; reconnecting (retries %d, first delay %lld ms)", r->why, r->p.retries,
                (long long)r->p.retry_delay_ms);
        r->reconnecting = true;
        r->break_status = st;
        r->delay_ms = r->p.retry_delay_ms;
        r->retry_at_ns = pf_time_ns() + r->delay_ms * 1000000;
    }
    for (;;) {
        pf_status wst = next_attempt(r);
        if (wst == PF_EOF) {
            r->reconnecting = false;
            PF_LOGW("%s: giving up after %d reconnect attempts", r->name, r->attempts);
            if (r->stats.frames > 0) return PF_EOF;
            return pf_set_error(r->break_status == PF_EOF ? PF_ERR_IO : r->break_status,
                                "%s; %d reconnect attempts failed", r->why, r->attempts);
        }
        if (wst != PF_OK) return wst;
        int w = 0, h = 0;
        st = reconnect(r, &w, &h);
        if (st == PF_OK && (w != r->info.width || h != r->info.height)) {
            pf_ffdec_close(&r->ff);
            drop_nvdec(r);
            r->reconnecting = false;
            return pf_set_error(PF_ERR_FORMAT,
                                "%s: the stream came back as %dx%d, not %dx%d as before",
                                r->name, w, h, r->info.width, r->info.height);
        }
        if (st == PF_OK) st = read_one(r, f);
        if (st == PF_OK) {
            r->stats.reconnects++;
            r->attempts = 0;
            r->reconnecting = false;
            r->reopened = r->last_frame_ns != 0;
            return PF_OK;
        }
        if (st == PF_EOF) snprintf(r->why, sizeof r->why, "%s: no frames", r->name);
        else snprintf(r->why, sizeof r->why, "%s", pf_last_error());
        attempt_failed(r, "reconnect");
        if (r->p.nonblocking_retry) return PF_AGAIN;
    }
}

pf_status pf_video_reader_read(pf_video_reader *r, pf_frame *out)
{
    PF_CHECK_ARG(r && out, "pf_video_reader_read", "reader or out is NULL");
    memset(out, 0, sizeof *out);
    if (r->failed != PF_OK)
        return pf_set_error(r->failed, "%s: the input failed earlier; no more frames", r->name);
    if (r->eof) return PF_EOF;
    if (r->pending_open) {
        pf_status st = first_open(r);
        if (st < 0) r->failed = st;
        if (st != PF_OK) return st;
    }
    pf_frame f = {0};
    pf_status st = PF_OK;
    if (r->kind != SRC_NVDEC) { /* NVDEC frames come from the decoder's pool */
        st = pf_frame_pool_acquire(r->pool, 0, &f);
        if (st == PF_AGAIN) {
            r->stats.pool_waits++;
            if (r->pool_timeout_us == 0)
                st = PF_TIMEOUT;
            else
                st = pf_frame_pool_acquire(r->pool, r->pool_timeout_us, &f);
        }
        if (st == PF_TIMEOUT || st == PF_AGAIN)
            return pf_set_error(PF_ERR_BUSY,
                                "%s: all %d pool frames are still referenced (unref frames or "
                                "raise pool_size)",
                                r->name, pf_frame_pool_count(r->pool));
        if (st != PF_OK) return st;
    }
    if (r->kind == SRC_FFMPEG || r->kind == SRC_NVDEC) {
        st = r->reconnecting || (!r->ff && r->kind == SRC_FFMPEG) ? PF_ERR_IO : read_one(r, &f);
        if (r->live && st != PF_OK && st != PF_ERR_NOMEM && st != PF_AGAIN && r->p.retries != 0)
            st = reopen(r, st, &f);
        if (st == PF_EOF && r->live && r->stats.frames == 0)
            st = pf_set_error(PF_ERR_IO, "%s: the stream ended before its first frame", r->name);
        if (st == PF_OK && r->live) live_timestamps(r, &f);
    } else {
        st = read_stream(r, &f);
        if (st == PF_OK) {
            f.time_base = r->info.time_base;
            f.pts = r->next_index;
        }
    }
    if (st != PF_OK) {
        pf_frame_unref(&f);
        if (st == PF_EOF)
            r->eof = true;
        else if (st < 0)
            r->failed = st;
        return st;
    }
    f.index = r->next_index++;
    r->stats.frames++;
    if (r->p.realtime && !r->live) pace(r, &f); /* live input is paced by its sender */
    *out = f;
    return PF_OK;
}
