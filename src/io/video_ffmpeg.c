/* Video decode through libavformat/libavcodec/libswscale (video_impl.h).
 *
 * One AVPacket and one AVFrame are allocated at open and reused; decoded
 * frames are converted by swscale straight into the caller's pool frame
 * (a format the decoder already produces is converted too: swscale copies
 * it).
 *
 * Damage is decoded as far as it can be and counted, as the ffmpeg tool
 * does: the decoder conceals what it can (no AV_EF_EXPLODE: with it, some
 * decoders reach internal assertions on damaged input, e.g. MPEG-4 Part 2
 * in FFmpeg 5.1 aborts the process), a packet it rejects is skipped, a
 * frame it could not convert is dropped, and decoding goes on with the
 * next packet. What counts as one damage event (stats.corrupt_packets): a
 * rejected packet, an output frame the decoder flagged or logged an error
 * for, a demuxer call that failed or logged an error while resynchronising.
 * Only a demuxer that cannot go on (MAX_DEMUX_ERRORS failures in a row)
 * ends the stream with an error. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/error.h"
#include "../core/sys.h"
#include "io_impl.h"
#include "video_impl.h"

#ifdef PF_HAVE_FFMPEG

#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavformat/avformat.h>
#ifdef PF_HAVE_AVDEVICE
#include <libavdevice/avdevice.h>
#endif
#include <libavutil/display.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libavutil/time.h>
#include <libswscale/swscale.h>

#include "ffmpeg_util.h"
#include "url.h"

/* Consecutive demuxer errors tolerated before the input counts as broken. */
#define MAX_DEMUX_ERRORS 64

struct pf_ffdec {
    char *name;
    AVFormatContext *fmt;
    AVCodecContext *dec;
    AVPacket *pkt;
    AVFrame *frame;
    struct SwsContext *sws;
    int stream;
    AVRational time_base;
    int out_w, out_h;
    enum AVPixelFormat out_fmt;
    bool draining, done;
    bool cut_seen;          /* the demuxer hit the end inside a packet */
    AVIOContext *avio;      /* custom I/O over `in` (a pipe), else NULL */
    pf_peeked *in;          /* borrowed from the reader */
    /* Errors FFmpeg logged for this decoder, from any thread (frame
     * threads log on their own); `seen` is the part already counted. */
    atomic_uint_fast64_t dec_logged;
    uint64_t dec_seen;
    pf_ffdec *next;         /* in the list of open decoders (decoders_lock) */
    pf_color_info color;    /* the stream's tags (frames may override) */
    pf_rational sar;
    int64_t frame_ticks;    /* one frame at the average rate, in time_base units */
    /* FFmpeg's blocking calls (connect, read) poll interrupt_cb, which
     * ends them once av_gettime_relative() passes `deadline_us` (0 = no
     * limit): a dead server or a stalled stream never hangs the job. */
    int64_t deadline_us;
    int64_t read_timeout_us; /* per packet, live input only */
    bool timed_out;         /* interrupt_cb fired */
    bool live;
    /* Packet mode (pf_ffdec_open_packets): no decoder; access units out
     * of d->au, through the Annex B filter when the container needs it. */
    bool packets;
    AVBSFContext *bsf;
    AVPacket *au;
};

static int interrupt_cb(void *opaque)
{
    pf_ffdec *d = opaque;
    if (d->deadline_us > 0 && av_gettime_relative() > d->deadline_us) {
        d->timed_out = true;
        return 1;
    }
    return 0;
}

/* The last error FFmpeg logged on this thread since pf_ff_log_reset(): the
 * reason behind a generic AVERROR ("Generic error in an external library"
 * from libx264 is "width not divisible by 2 (5x5)" in its log). */
static _Thread_local char tls_last_log[256];

void pf_ff_log_reset(void) { tls_last_log[0] = '\0'; }

pf_status pf_ff_fail(pf_status st, const char *name, const char *what, int err)
{
    char buf[AV_ERROR_MAX_STRING_SIZE] = {0};
    av_strerror(err, buf, sizeof buf);
    pf_status r = tls_last_log[0]
                      ? pf_set_error(st, "%s: %s: %s (FFmpeg: %s)", name, what, buf, tls_last_log)
                      : pf_set_error(st, "%s: %s: %s", name, what, buf);
    tls_last_log[0] = '\0';
    return r;
}

enum AVPixelFormat pf_ff_pixfmt(pf_pixfmt f)
{
    switch (f) {
    case PF_PIXFMT_RGB24: return AV_PIX_FMT_RGB24;
    case PF_PIXFMT_BGR24: return AV_PIX_FMT_BGR24;
    case PF_PIXFMT_RGBA: return AV_PIX_FMT_RGBA;
    case PF_PIXFMT_GRAY8: return AV_PIX_FMT_GRAY8;
    case PF_PIXFMT_NV12: return AV_PIX_FMT_NV12;
    case PF_PIXFMT_I420: return AV_PIX_FMT_YUV420P;
    default: return AV_PIX_FMT_NONE;
    }
}

/* Damage the demuxer resynchronises over (a dropped block, a file that ends
 * inside a packet) shows only as an error in FFmpeg's log, on the thread
 * that called it. So calls into FFmpeg made by a reader point this at the
 * reader's counter, and the log callback counts errors logged meanwhile. */
static _Thread_local uint64_t *tls_error_counter;

/* Decoders log concealed damage from their frame threads too, with a copy
 * of the codec context whose `opaque` is the pf_ffdec's. The callback finds
 * the decoder by that pointer in this list (compared, never dereferenced
 * unless listed, so other FFmpeg users' contexts are safe). */
static pf_mutex decoders_lock = PTHREAD_MUTEX_INITIALIZER;
static pf_ffdec *decoders;

static void decoders_add(pf_ffdec *d)
{
    pf_mutex_lock(&decoders_lock);
    d->next = decoders;
    decoders = d;
    pf_mutex_unlock(&decoders_lock);
}

static void decoders_remove(pf_ffdec *d)
{
    pf_mutex_lock(&decoders_lock);
    for (pf_ffdec **pp = &decoders; *pp; pp = &(*pp)->next)
        if (*pp == d) {
            *pp = d->next;
            break;
        }
    pf_mutex_unlock(&decoders_lock);
}

/* Counts an error logged by one of our decoders; false for other sources. */
static bool count_decoder_error(void *avcl)
{
    if (!avcl || *(const AVClass **)avcl != avcodec_get_class()) return false;
    void *key = ((AVCodecContext *)avcl)->opaque;
    if (!key) return false;
    bool found = false;
    pf_mutex_lock(&decoders_lock);
    for (pf_ffdec *d = decoders; d; d = d->next)
        if (d == key) {
            atomic_fetch_add(&d->dec_logged, 1);
            found = true;
            break;
        }
    pf_mutex_unlock(&decoders_lock);
    return found;
}

/* FFmpeg logs through its own callback; route it to pixflow's log at debug
 * level (FFmpeg's errors about a corrupt packet are expected here). */
static void av_log_to_pf(void *avcl, int level, const char *fmt, va_list vl)
{
    if (level <= AV_LOG_ERROR && !count_decoder_error(avcl) && tls_error_counter)
        (*tls_error_counter)++;
    bool keep = level <= AV_LOG_ERROR;
    if (!keep && (level > AV_LOG_WARNING || pf_log_get_level() < PF_LOG_DEBUG)) return;
    char raw[512], line[512];
    vsnprintf(raw, sizeof raw, fmt, vl);
    /* FFmpeg names the URL it failed on, password and all. */
    pf_io_redact_text(raw, line, sizeof line);
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == ' ')) line[--n] = '\0';
    if (keep && n) {
        /* "[libx264] width not divisible by 2 (5x5)": the component's name,
         * not the address FFmpeg's own prefix prints. */
        const AVClass *cls = avcl ? *(const AVClass *const *)avcl : NULL;
        const char *who = cls && cls->item_name ? cls->item_name(avcl) : NULL;
        if (who && who[0])
            snprintf(tls_last_log, sizeof tls_last_log, "[%.40s] %.200s", who, line);
        else
            snprintf(tls_last_log, sizeof tls_last_log, "%.250s", line);
    }
    if (level > AV_LOG_WARNING || pf_log_get_level() < PF_LOG_DEBUG) return;
    pf_log(PF_LOG_DEBUG, "ffmpeg: %s", line);
}

static void set_log_callback(void) { av_log_set_callback(av_log_to_pf); }

void pf_ff_init_log(void)
{
    /* Once, and safe from readers opening on several threads at once
     * (`pixflow segment` opens its streams in parallel). */
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, set_log_callback);
}

static void copy_name(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

/* Colour, aspect, rotation, depth, start time and the other streams. */
static void stream_info(AVFormatContext *fmt, AVStream *vs, const AVCodecContext *dec,
                        pf_video_info *info)
{
    const AVCodecParameters *par = vs->codecpar;
    enum AVPixelFormat pf = dec && dec->pix_fmt != AV_PIX_FMT_NONE
                                ? dec->pix_fmt
                                : (enum AVPixelFormat)par->format;
    info->color.range = par->color_range == AVCOL_RANGE_JPEG   ? PF_COLOR_RANGE_FULL
                        : par->color_range == AVCOL_RANGE_MPEG ? PF_COLOR_RANGE_LIMITED
                                                               : PF_COLOR_RANGE_UNSPECIFIED;
    /* yuvj* (MJPEG, JPEG-coded streams) is full range whatever the tag says. */
    if (pf == AV_PIX_FMT_YUVJ420P || pf == AV_PIX_FMT_YUVJ422P || pf == AV_PIX_FMT_YUVJ444P ||
        pf == AV_PIX_FMT_YUVJ440P)
        info->color.range = PF_COLOR_RANGE_FULL;
    info->color.matrix = par->color_space == AVCOL_SPC_UNSPECIFIED ? 0 : (int)par->color_space;
    info->color.primaries =
        par->color_primaries == AVCOL_PRI_UNSPECIFIED ? 0 : (int)par->color_primaries;
    info->color.transfer = par->color_trc == AVCOL_TRC_UNSPECIFIED ? 0 : (int)par->color_trc;
    AVRational sar = av_guess_sample_aspect_ratio(fmt, vs, NULL);
    info->sar = sar.num > 0 && sar.den > 0 ? (pf_rational){sar.num, sar.den} : (pf_rational){0, 0};
    const uint8_t *dm = av_stream_get_side_data(vs, AV_PKT_DATA_DISPLAYMATRIX, NULL);
    info->rotation = 0;
    if (dm) {
        double r = av_display_rotation_get((const int32_t *)dm);
        if (r == r) { /* NaN for a matrix that is not a rotation */
            r = fmod(r, 360.0);
            if (r < 0) r += 360.0;
            info->rotation = r;
        }
    }
    const AVPixFmtDescriptor *desc = av_pix_fmt_desc_get(pf);
    info->bit_depth = desc ? desc->comp[0].depth : 0;
    copy_name(info->stream_pixfmt, sizeof info->stream_pixfmt, desc ? desc->name : "");
    info->start_time_s = vs->start_time != AV_NOPTS_VALUE ? (double)vs->start_time * av_q2d(vs->time_base) : 0;
    info->other_streams = 0;
    for (unsigned i = 0; i < fmt->nb_streams; i++) {
        enum AVMediaType t = fmt->streams[i]->codecpar->codec_type;
        if (t == AVMEDIA_TYPE_AUDIO || t == AVMEDIA_TYPE_SUBTITLE || t == AVMEDIA_TYPE_DATA)
            info->other_streams++;
    }
}

/* AVIOContext read callback over a pf_peeked input: its first bytes, then
 * the stream. */
static int peeked_read(void *opaque, uint8_t *buf, int size)
{
    pf_peeked *in = opaque;
    if (size <= 0) return 0;
    if (in->pos < in->n) {
        size_t k = in->n - in->pos < (size_t)size ? in->n - in->pos : (size_t)size;
        memcpy(buf, in->head + in->pos, k);
        in->pos += k;
        return (int)k;
    }
    /* read(), not fread(): it returns what the pipe has now instead of
     * waiting for `size` bytes (a live feed). The reader made the stream
     * unbuffered before peeking, so stdio holds nothing back. */
    ssize_t got;
    do
        got = read(fileno(in->fp), buf, (size_t)size);
    while (got < 0 && errno == EINTR);
    if (got > 0) return (int)got;
    return got == 0 ? AVERROR_EOF : AVERROR(errno);
}

/* A format context reading `in` through custom I/O (not seekable). */
static int open_peeked(pf_ffdec *d, pf_peeked *in)
{
    enum { AVIO_BUF = 1 << 16 };
    d->in = in;
    d->fmt = avformat_alloc_context();
    uint8_t *buf = av_malloc(AVIO_BUF);
    if (buf) d->avio = avio_alloc_context(buf, AVIO_BUF, 0, in, peeked_read, NULL, NULL);
    if (!d->fmt || !d->avio) {
        if (!d->avio) av_free(buf);
        return AVERROR(ENOMEM);
    }
    d->avio->seekable = 0;
    d->fmt->pb = d->avio;
    d->fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
    return 0;
}

/* The demuxer of a camera (V4L2 through libavdevice) and the protocol
 * check of a URL: a scheme outside the whitelist is refused here, naming
 * it, before FFmpeg would refuse it with a generic error. */
static pf_status live_format(const pf_video_reader_params *p, const char *name,
                             const AVInputFormat **ifmt)
{
    char scheme[32];
    if (pf_io_url_scheme(p->path, scheme, sizeof scheme) &&
        !pf_io_protocol_allowed(p->protocols, scheme))
        return pf_set_error(PF_ERR_UNSUPPORTED,
                            "%s: URL protocol '%s' is not allowed (allowed: %s)", name, scheme,
                            p->protocols ? p->protocols : PF_IO_DEFAULT_PROTOCOLS);
    if (!pf_io_is_camera(p->path) || *ifmt) return PF_OK;
#ifdef PF_HAVE_AVDEVICE
    avdevice_register_all(); /* idempotent (an unlocked static flag would race) */
    *ifmt = av_find_input_format("video4linux2");
#endif
    if (!*ifmt)
        return pf_set_error(PF_ERR_UNSUPPORTED,
                            "%s: a V4L2 camera needs libavdevice, which this build of pixflow "
                            "lacks",
                            name);
    return PF_OK;
}

/* avformat_open_input options: the whitelist on every input (nested opens
 * of playlists and RTSP's transports included), and for live inputs at
 * most 1 s of stream analysis at open instead of FFmpeg's 5 s, and UDP
 * overruns counted as damage instead of ending the stream. The packets
 * read for the analysis are kept and come out at once after the open (a
 * one-time burst; later reads block on the socket, so no latency builds
 * up). fflags nobuffer is not used: it discards those packets, the first
 * keyframe among them, and a short stream then has no frames at all. */
static void open_options(const pf_video_reader_params *p, bool live, AVDictionary **opts)
{
    av_dict_set(opts, "protocol_whitelist", p->protocols ? p->protocols : PF_IO_DEFAULT_PROTOCOLS,
                0);
    if (!live) return;
    av_dict_set(opts, "analyzeduration", "1000000", 0);
    av_dict_set(opts, "probesize", "1000000", 0);
    char scheme[16];
    pf_io_url_scheme(p->path, scheme, sizeof scheme);
    if (!strcmp(scheme, "udp")) av_dict_set(opts, "overrun_nonfatal", "1", 0);
    /* FFmpeg's frame parser holds each frame until the next one starts
     * (it cannot tell where a frame ends before): one frame of latency on
     * top of MPEG-TS's own (a video PES without a length ends at the next).
     * Without it every packet must be one whole frame, which senders that
     * put a frame per PES (FFmpeg, GStreamer, cameras) do. */
    if (p->low_latency) av_dict_set(opts, "fflags", "noparse+nofillin", 0);
}

/* The codec NVDEC would decode this stream as: H.264 or HEVC in 8-bit
 * 4:2:0, or a pixel format the demuxer did not tell (NVDEC then says at
 * the first sequence header). PF_ES_UNKNOWN with the reason in `why`. */
static pf_es_codec nvdec_codec(const AVCodecParameters *par, char *why, size_t n)
{
    pf_es_codec c = par->codec_id == AV_CODEC_ID_H264   ? PF_ES_H264
                    : par->codec_id == AV_CODEC_ID_HEVC ? PF_ES_HEVC
                                                        : PF_ES_UNKNOWN;
    if (c == PF_ES_UNKNOWN) {
        snprintf(why, n, "the codec is %s (NVDEC here takes H.264 and HEVC)",
                 avcodec_get_name(par->codec_id));
        return c;
    }
    enum AVPixelFormat f = (enum AVPixelFormat)par->format;
    if (f != AV_PIX_FMT_NONE && f != AV_PIX_FMT_YUV420P && f != AV_PIX_FMT_YUVJ420P) {
        const char *fn = av_get_pix_fmt_name(f);
        snprintf(why, n, "the stream is %s (NVDEC here takes 8-bit 4:2:0)", fn ? fn : "?");
        return PF_ES_UNKNOWN;
    }
    return c;
}

/* Packet mode's output packet, and the Annex B filter when the stream's
 * extradata is an avcC/hvcC record (configurationVersion 1: MP4, MKV,
 * MOV, FLV), whose packets are length-prefixed. Extradata that is absent
 * or starts with a start code (MPEG-TS, raw streams) means Annex B
 * already. A missing filter leaves the reason in `why` (the CPU decoder
 * is used instead). */
static pf_status open_annexb(pf_ffdec *d, AVStream *vs, pf_es_codec c, char *why, size_t n)
{
    d->au = av_packet_alloc();
    d->pkt = av_packet_alloc();
    if (!d->au || !d->pkt) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", d->name);
    const AVCodecParameters *par = vs->codecpar;
    if (par->extradata_size < 7 || par->extradata[0] != 1) return PF_OK;
    const char *fname = c == PF_ES_H264 ? "h264_mp4toannexb" : "hevc_mp4toannexb";
    const AVBitStreamFilter *f = av_bsf_get_by_name(fname);
    if (!f) {
        snprintf(why, n, "this FFmpeg has no %s filter", fname);
        return PF_OK;
    }
    int err = av_bsf_alloc(f, &d->bsf);
    if (err >= 0) err = avcodec_parameters_copy(d->bsf->par_in, par);
    if (err >= 0) {
        d->bsf->time_base_in = vs->time_base;
        err = av_bsf_init(d->bsf);
    }
    if (err < 0) return pf_ff_fail(PF_ERR_FORMAT, d->name, "cannot set up the Annex B filter", err);
    return PF_OK;
}

/* info from the stream (and the decoder when one is open). */
static pf_status fill_info(pf_ffdec *d, AVStream *vs, const AVCodec *codec,
                           pf_video_info *info)
{
    int w = d->dec ? d->dec->width : vs->codecpar->width;
    int h = d->dec ? d->dec->height : vs->codecpar->height;
    if (w <= 0 || h <= 0 || w > PF_FRAME_MAX_DIM || h > PF_FRAME_MAX_DIM)
        return pf_set_error(PF_ERR_FORMAT, "%s: video size %dx%d is out of range (1..%d)",
                            d->name, w, h, PF_FRAME_MAX_DIM);
    d->time_base = vs->time_base;
    info->width = d->out_w = w;
    info->height = d->out_h = h;
    AVRational fr = av_guess_frame_rate(d->fmt, vs, NULL);
    info->fps = fr.num > 0 && fr.den > 0 ? (pf_rational){fr.num, fr.den} : (pf_rational){0, 0};
    info->time_base = (pf_rational){vs->time_base.num, vs->time_base.den};
    info->frame_count = vs->nb_frames > 0 ? vs->nb_frames : -1;
    info->duration_s = -1;
    if (vs->duration > 0)
        info->duration_s = (double)vs->duration * av_q2d(vs->time_base);
    else if (d->fmt->duration > 0)
        info->duration_s = (double)d->fmt->duration / AV_TIME_BASE;
    if (info->frame_count < 0 && info->duration_s > 0 && fr.num > 0)
        info->frame_count = (int64_t)(info->duration_s * av_q2d(fr) + 0.5);
    stream_info(d->fmt, vs, d->dec, info);
    copy_name(info->codec, sizeof info->codec, avcodec_get_name(vs->codecpar->codec_id));
    copy_name(info->container, sizeof info->container, d->fmt->iformat->name);
    if (codec) snprintf(info->decoder, sizeof info->decoder, "%s (cpu)", codec->name);
    d->color = info->color;
    d->sar = info->sar;
    d->frame_ticks = fr.num > 0 && fr.den > 0 ? av_rescale_q(1, av_inv_q(fr), vs->time_base) : 0;
    info->hw_decode = false;
    return PF_OK;
}

/* Opens the input and its video stream; then the CPU decoder, or, when
 * `packets` is given and NVDEC can take the stream, the Annex B path. */
static pf_status ff_open(const pf_video_reader_params *p, const char *name, pf_peeked *in,
                         pf_ffdec **out, pf_video_info *info, bool *packets, pf_es_codec *codec_out)
{
    *out = NULL;
    pf_ff_init_log();
    pf_ff_log_reset(); /* an older reader's FFmpeg line is not this open's reason */
    pf_ffdec *d = calloc(1, sizeof *d);
    if (!d) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", name);
    d->name = strdup(name);
    d->stream = -1;
    pf_status st = PF_OK;
    const AVInputFormat *ifmt = NULL;
    if (!d->name) {
        st = pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", name);
        goto fail;
    }
    if (p->container && p->container[0]) {
        ifmt = av_find_input_format(p->container);
        if (!ifmt) {
            st = pf_set_error(PF_ERR_UNSUPPORTED, "%s: FFmpeg has no demuxer named '%s'", name,
                              p->container);
            goto fail;
        }
    }
    const char *url = pf_io_is_std(p->path) ? "pipe:0" : p->path;
    d->live = pf_io_is_live(p->path);
    if ((st = live_format(p, name, &ifmt)) != PF_OK) goto fail;
    AVDictionary *opts = NULL;
    int err = in ? open_peeked(d, in) : 0;
    if (err == 0 && !d->fmt) {
        d->fmt = avformat_alloc_context();
        if (!d->fmt) err = AVERROR(ENOMEM);
    }
    if (err == 0) {
        open_options(p, d->live, &opts);
        d->fmt->interrupt_callback = (AVIOInterruptCB){interrupt_cb, d};
        /* Live inputs only, like the read timeout: a pipe or file whose
         * producer is slow to send its first seconds is not a dead server. */
        d->deadline_us = d->live && p->open_timeout_ms > 0
                             ? av_gettime_relative() + p->open_timeout_ms * 1000
                             : 0;
        d->read_timeout_us = d->live && p->read_timeout_ms > 0 ? p->read_timeout_ms * 1000 : 0;
        err = avformat_open_input(&d->fmt, url, ifmt, &opts);
    }
    av_dict_free(&opts);
    if (err < 0) {
        st = d->timed_out
                 ? pf_set_error(PF_ERR_IO, "%s: cannot open: timed out after %lld ms", name,
                                (long long)p->open_timeout_ms)
                 : pf_ff_fail(err == AVERROR(ENOENT) || err == AVERROR(EACCES) ||
                                      err == AVERROR(EISDIR) || d->live
                                  ? PF_ERR_IO
                                  : PF_ERR_FORMAT,
                              name, "cannot open", err);
        goto fail;
    }
    err = avformat_find_stream_info(d->fmt, NULL);
    if (err < 0 || (d->live && d->timed_out)) {
        st = d->timed_out ? pf_set_error(PF_ERR_IO,
                                         "%s: cannot read stream info: no data within %lld ms",
                                         name, (long long)p->open_timeout_ms)
                          : pf_ff_fail(d->live ? PF_ERR_IO : PF_ERR_FORMAT, name,
                                       "cannot read stream info", err);
        goto fail;
    }
    d->deadline_us = 0;
    const AVCodec *codec = NULL;
    d->stream = av_find_best_stream(d->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
    if (d->stream == AVERROR_STREAM_NOT_FOUND) {
        st = pf_set_error(PF_ERR_FORMAT, "%s: no video stream", name);
        goto fail;
    }
    AVStream *vs = d->stream >= 0 ? d->fmt->streams[d->stream] : NULL;
    if (packets && vs) {
        char why[128] = "";
        pf_es_codec c = nvdec_codec(vs->codecpar, why, sizeof why);
        if (c != PF_ES_UNKNOWN && (st = open_annexb(d, vs, c, why, sizeof why)) != PF_OK)
            goto fail;
        if (c != PF_ES_UNKNOWN && why[0] == '\0') {
            *packets = d->packets = true;
            *codec_out = c;
            st = fill_info(d, vs, NULL, info);
            if (st != PF_OK) goto fail;
            *out = d;
            return PF_OK;
        }
        *packets = false;
        PF_LOGI("%s: NVDEC not used: %s; decoding on the CPU", name, why);
    }
    if (d->stream < 0 || !codec) {
        AVStream *s0 = d->stream >= 0 ? d->fmt->streams[d->stream] : NULL;
        st = pf_set_error(PF_ERR_UNSUPPORTED, "%s: no decoder for the video codec %s", name,
                          s0 ? avcodec_get_name(s0->codecpar->codec_id) : "(unknown)");
        goto fail;
    }
    d->dec = avcodec_alloc_context3(codec);
    if (!d->pkt) d->pkt = av_packet_alloc();
    d->frame = av_frame_alloc();
    if (!d->dec || !d->pkt || !d->frame) {
        st = pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", name);
        goto fail;
    }
    err = avcodec_parameters_to_context(d->dec, vs->codecpar);
    if (err < 0) {
        st = pf_ff_fail(PF_ERR_FORMAT, name, "bad codec parameters", err);
        goto fail;
    }
    d->dec->thread_count = p->threads > 0 ? p->threads : 0;
    if (d->live) {
        /* Frame threads hold one frame each before the first comes out:
         * on a live stream that is latency, so slice threads only. */
        d->dec->flags |= AV_CODEC_FLAG_LOW_DELAY;
        d->dec->thread_type = FF_THREAD_SLICE;
    }
    d->dec->pkt_timebase = vs->time_base;
    /* Errors the decoder logs are this decoder's damage (see the top of
     * the file); its frame threads copy `opaque`. */
    d->dec->opaque = d;
    decoders_add(d);
    err = avcodec_open2(d->dec, codec, NULL);
    if (err < 0) {
        st = pf_ff_fail(PF_ERR_UNSUPPORTED, name, "cannot open the decoder", err);
        goto fail;
    }
    if ((st = fill_info(d, vs, codec, info)) != PF_OK) goto fail;
    *out = d;
    return PF_OK;
fail:
    pf_ffdec_close(&d);
    return st;
}

pf_status pf_ffdec_open(const pf_video_reader_params *p, const char *name, pf_peeked *in,
                        pf_ffdec **out, pf_video_info *info)
{
    return ff_open(p, name, in, out, info, NULL, NULL);
}

pf_status pf_ffdec_open_packets(const pf_video_reader_params *p, const char *name,
                                pf_peeked *in, pf_ffdec **out, pf_video_info *info,
                                bool *packets, pf_es_codec *codec)
{
    *packets = false;
    *codec = PF_ES_UNKNOWN;
    return ff_open(p, name, in, out, info, packets, codec);
}

void pf_ffdec_close(pf_ffdec **pd)
{
    if (!pd || !*pd) return;
    pf_ffdec *d = *pd;
    *pd = NULL;
    sws_freeContext(d->sws);
    av_frame_free(&d->frame);
    av_packet_free(&d->pkt);
    av_packet_free(&d->au);
    av_bsf_free(&d->bsf);
    avcodec_free_context(&d->dec);
    decoders_remove(d); /* after the decoder's threads are gone */
    avformat_close_input(&d->fmt);
    if (d->avio) { /* custom I/O is the caller's to free */
        av_freep(&d->avio->buffer);
        avio_context_free(&d->avio);
    }
    free(d->name);
    free(d);
}

static int sws_cs(enum AVColorSpace cs)
{
    switch (cs) {
    case AVCOL_SPC_BT709: return SWS_CS_ITU709;
    case AVCOL_SPC_BT2020_NCL:
    case AVCOL_SPC_BT2020_CL: return SWS_CS_BT2020;
    case AVCOL_SPC_SMPTE240M: return SWS_CS_SMPTE240M;
    default: return SWS_CS_ITU601;
    }
}

/* The colour, aspect and duration of decoded frame fr, into dst: the
 * frame's own tags, else the stream's. */
static void frame_color(const pf_ffdec *d, const AVFrame *fr, pf_frame *dst)
{
    pf_color_info c = d->color;
    if (fr->color_range == AVCOL_RANGE_JPEG) c.range = PF_COLOR_RANGE_FULL;
    else if (fr->color_range == AVCOL_RANGE_MPEG && c.range != PF_COLOR_RANGE_FULL)
        c.range = PF_COLOR_RANGE_LIMITED;
    enum AVPixelFormat f = (enum AVPixelFormat)fr->format;
    if (f == AV_PIX_FMT_YUVJ420P || f == AV_PIX_FMT_YUVJ422P || f == AV_PIX_FMT_YUVJ444P ||
        f == AV_PIX_FMT_YUVJ440P)
        c.range = PF_COLOR_RANGE_FULL;
    if (fr->colorspace != AVCOL_SPC_UNSPECIFIED && fr->colorspace != AVCOL_SPC_RGB)
        c.matrix = (int)fr->colorspace;
    if (fr->color_primaries != AVCOL_PRI_UNSPECIFIED) c.primaries = (int)fr->color_primaries;
    if (fr->color_trc != AVCOL_TRC_UNSPECIFIED) c.transfer = (int)fr->color_trc;
    dst->color = c;
    dst->sar = fr->sample_aspect_ratio.num > 0 && fr->sample_aspect_ratio.den > 0
                   ? (pf_rational){fr->sample_aspect_ratio.num, fr->sample_aspect_ratio.den}
                   : d->sar;
    dst->duration = fr->pkt_duration > 0 ? fr->pkt_duration : d->frame_ticks;
}

/* Converts d->frame into dst (output format and size) and stamps its colour. */
static pf_status convert(pf_ffdec *d, pf_frame *dst)
{
    AVFrame *fr = d->frame;
    enum AVPixelFormat out_fmt = pf_ff_pixfmt(dst->format);
    d->sws = sws_getCachedContext(d->sws, fr->width, fr->height, (enum AVPixelFormat)fr->format,
                                  dst->width, dst->height, out_fmt,
                                  SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, NULL, NULL,
                                  NULL);
    if (!d->sws)
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: swscale cannot convert %s %dx%d to %s",
                            d->name, av_get_pix_fmt_name((enum AVPixelFormat)fr->format),
                            fr->width, fr->height, av_get_pix_fmt_name(out_fmt));
    frame_color(d, fr, dst);
    /* The frame's own colour, completed as players do (an untagged HD
     * stream is BT.709): swscale would take untagged as BT.601 and every
     * yuv420p as limited range. YUV output keeps the samples' range (the
     * frame says which); RGB output is full range. */
    pf_color_info eff = pf_color_effective(&dst->color, fr->height);
    int src_range = eff.range == PF_COLOR_RANGE_FULL ? 1 : 0;
    bool out_yuv = dst->format == PF_PIXFMT_NV12 || dst->format == PF_PIXFMT_I420;
    const int *coef = sws_getCoefficients(sws_cs((enum AVColorSpace)eff.matrix));
    sws_setColorspaceDetails(d->sws, coef, src_range, coef, out_yuv ? src_range : 1, 0, 1 << 16,
                             1 << 16);
    uint8_t *data[4] = {dst->data[0], dst->data[1], dst->data[2], NULL};
    int lines[4] = {(int)dst->stride[0], (int)dst->stride[1], (int)dst->stride[2], 0};
    sws_scale(d->sws, (const uint8_t *const *)fr->data, fr->linesize, 0, fr->height, data, lines);
    return PF_OK;
}

static bool frame_damaged(const AVFrame *fr)
{
#ifdef AV_FRAME_FLAG_CORRUPT
    if (fr->flags & AV_FRAME_FLAG_CORRUPT) return true;
#endif
    return fr->decode_error_flags != 0;
}

/* One damage event for the decoder; errors it logged so far belong to it. */
static void count_decode_damage(pf_ffdec *d, pf_video_reader_stats *stats)
{
    stats->corrupt_packets++;
    d->dec_seen = atomic_load(&d->dec_logged);
}

/* Whether the decoder logged errors since the last damage it was counted for. */
static bool decoder_logged(pf_ffdec *d)
{
    return atomic_load(&d->dec_logged) > d->dec_seen;
}

static pf_status read_frame(pf_ffdec *d, pf_frame *dst, pf_video_reader_stats *stats,
                            uint64_t *demux_logged);

/* At the end: a container that gave the stream's packet count (AVI's
 * header, MP4's sample table) and a stream that ended before it was cut
 * at a packet boundary, which no demuxer or decoder error shows (an AVI
 * without its index is read to the cut). Counted once, and said. */
static void check_short(pf_ffdec *d, pf_video_reader_stats *stats)
{
    int64_t want = d->fmt->streams[d->stream]->nb_frames;
    if (d->cut_seen || want <= 0 || (int64_t)stats->packets >= want) return;
    stats->corrupt_packets++;
    PF_LOGW("%s: the input is truncated: it ends after %llu of the %lld video packets its "
            "container lists",
            d->name, (unsigned long long)stats->packets, (long long)want);
}

pf_status pf_ffdec_read(pf_ffdec *d, pf_frame *dst, pf_video_reader_stats *stats)
{
    if (d->done) return PF_EOF;
    pf_ff_log_reset();
    uint64_t logged = 0;
    tls_error_counter = &logged;
    pf_status st = read_frame(d, dst, stats, &logged);
    tls_error_counter = NULL;
    return st;
}

/* The next packet of the video stream into d->pkt: PF_OK, PF_EOF, or an
 * error once the demuxer has failed MAX_DEMUX_ERRORS times in a row. A
 * failed call, or one that logged an error (a block skipped while
 * resynchronising), counts one damage event. */
static pf_status next_packet(pf_ffdec *d, pf_video_reader_stats *stats, uint64_t *demux_logged)
{
    for (int failures = 0;;) {
        *demux_logged = 0;
        d->deadline_us = d->read_timeout_us ? av_gettime_relative() + d->read_timeout_us : 0;
        d->timed_out = false;
        int err = av_read_frame(d->fmt, d->pkt);
        d->deadline_us = 0;
        bool logged = *demux_logged > 0;
        if (d->timed_out)
            return pf_set_error(PF_ERR_IO, "%s: stalled: no data for %lld ms", d->name,
                                (long long)(d->read_timeout_us / 1000));
        if (d->live && err == AVERROR_EOF)
            return PF_EOF; /* the sender closed: the reader decides (reconnect) */
        if (err == AVERROR_EOF || (err < 0 && d->fmt->pb && avio_feof(d->fmt->pb))) {
            if (logged || err != AVERROR_EOF) { /* cut inside a packet */
                stats->corrupt_packets++;
                d->cut_seen = true;
                PF_LOGW("%s: the input is truncated or damaged at its end (after %llu video "
                        "packets)",
                        d->name, (unsigned long long)stats->packets);
            }
            return PF_EOF;
        }
        if (err == AVERROR(EAGAIN)) continue;
        if (err < 0 || logged) stats->corrupt_packets++;
        if (err < 0) {
            if (++failures > MAX_DEMUX_ERRORS)
                return pf_ff_fail(PF_ERR_IO, d->name, "reading packets failed repeatedly", err);
            continue;
        }
        if (d->pkt->stream_index != d->stream) {
            av_packet_unref(d->pkt);
            continue;
        }
        stats->packets++;
        if ((d->pkt->flags & AV_PKT_FLAG_CORRUPT) && !logged) stats->corrupt_packets++;
        return PF_OK;
    }
}

/* The end of the stream: damage not yet counted, a short stream. */
static pf_status finish(pf_ffdec *d, pf_video_reader_stats *stats)
{
    if (decoder_logged(d)) count_decode_damage(d, stats); /* frames that never came out */
    check_short(d, stats);
    d->done = true;
    return PF_EOF;
}

static pf_status read_frame(pf_ffdec *d, pf_frame *dst, pf_video_reader_stats *stats,
                            uint64_t *demux_logged)
{
    int recv_errors = 0;
    for (;;) {
        int err = avcodec_receive_frame(d->dec, d->frame);
        if (err == 0) {
            if (frame_damaged(d->frame) || decoder_logged(d)) count_decode_damage(d, stats);
            /* A damaged stream can change size or pixel format mid-way; a
             * frame swscale cannot take is dropped and counted, not fatal. */
            AVFrame *fr = d->frame;
            pf_status st = fr->width > 0 && fr->height > 0 && fr->width <= PF_FRAME_MAX_DIM &&
                                   fr->height <= PF_FRAME_MAX_DIM
                               ? convert(d, dst)
                               : PF_ERR_FORMAT;
            int64_t ts = fr->best_effort_timestamp;
            av_frame_unref(fr);
            if (st != PF_OK) {
                PF_LOGD("%s: frame dropped: %s", d->name,
                        st == PF_ERR_FORMAT ? "size out of range" : pf_last_error());
                count_decode_damage(d, stats);
                continue;
            }
            dst->pts = ts == AV_NOPTS_VALUE ? PF_NOPTS : ts;
            dst->time_base = (pf_rational){d->time_base.num, d->time_base.den};
            return PF_OK;
        }
        if (err == AVERROR_EOF) return finish(d, stats);
        if (err != AVERROR(EAGAIN)) {
            /* A decoder error while receiving: the frame is lost; go on
             * with the next (bounded, in case a decoder repeats an error
             * without making progress). */
            count_decode_damage(d, stats);
            if (++recv_errors <= MAX_DEMUX_ERRORS) continue;
            if (d->draining) return finish(d, stats);
        }
        recv_errors = 0;
        /* EAGAIN while draining should not happen; end rather than spin. */
        if (d->draining) return finish(d, stats);
        pf_status st = next_packet(d, stats, demux_logged);
        if (st == PF_EOF) {
            d->draining = true;
            avcodec_send_packet(d->dec, NULL);
            continue;
        }
        if (st != PF_OK) return st;
        err = avcodec_send_packet(d->dec, d->pkt);
        av_packet_unref(d->pkt);
        if (err < 0 && err != AVERROR(EAGAIN)) count_decode_damage(d, stats); /* skipped */
    }
}

/* Packet mode: the next packet of the video stream through the Annex B
 * filter (when there is one) into d->au. A packet the filter rejects (a
 * NAL length past the packet's end) is dropped and counted. */
static pf_status next_au(pf_ffdec *d, pf_video_reader_stats *stats, uint64_t *demux_logged)
{
    av_packet_unref(d->au);
    for (;;) {
        if (d->bsf) {
            int err = av_bsf_receive_packet(d->bsf, d->au);
            if (err == 0) return PF_OK;
            if (err == AVERROR_EOF) return finish(d, stats);
            if (err != AVERROR(EAGAIN)) stats->corrupt_packets++;
        }
        if (d->draining) return finish(d, stats);
        pf_status st = next_packet(d, stats, demux_logged);
        if (st == PF_EOF) {
            d->draining = true;
            if (d->bsf) av_bsf_send_packet(d->bsf, NULL);
            continue;
        }
        if (st != PF_OK) return st;
        if (!d->bsf) {
            av_packet_move_ref(d->au, d->pkt);
            return PF_OK;
        }
        int err = av_bsf_send_packet(d->bsf, d->pkt);
        if (err < 0) {
            av_packet_unref(d->pkt);
            stats->corrupt_packets++;
        }
    }
}

pf_status pf_ffdec_read_au(pf_ffdec *d, const uint8_t **data, size_t *size, int64_t *pts,
                           pf_video_reader_stats *stats)
{
    if (!d->packets)
        return pf_set_error(PF_ERR_INVALID, "%s: not opened for packets", d->name);
    if (d->done) return PF_EOF;
    pf_ff_log_reset();
    uint64_t logged = 0;
    tls_error_counter = &logged;
    pf_status st = next_au(d, stats, &logged);
    tls_error_counter = NULL;
    if (st != PF_OK) return st;
    *data = d->au->data;
    *size = (size_t)d->au->size;
    *pts = d->au->pts != AV_NOPTS_VALUE ? d->au->pts : PF_NOPTS;
    return PF_OK;
}

#else /* !PF_HAVE_FFMPEG */

pf_status pf_ffdec_open(const pf_video_reader_params *p, const char *name, pf_peeked *in,
                        pf_ffdec **out, pf_video_info *info)
{
    (void)p, (void)info, (void)in;
    *out = NULL;
    return pf_set_error(PF_ERR_UNSUPPORTED,
                        "%s: pixflow was built without FFmpeg: only .y4m and raw video can be "
                        "read",
                        name);
}

pf_status pf_ffdec_read(pf_ffdec *d, pf_frame *dst, pf_video_reader_stats *stats)
{
    (void)d, (void)dst, (void)stats;
    return pf_set_error(PF_ERR_UNSUPPORTED, "pixflow was built without FFmpeg");
}

pf_status pf_ffdec_open_packets(const pf_video_reader_params *p, const char *name,
                                pf_peeked *in, pf_ffdec **out, pf_video_info *info,
                                bool *packets, pf_es_codec *codec)
{
    *packets = false;
    *codec = PF_ES_UNKNOWN;
    return pf_ffdec_open(p, name, in, out, info);
}

pf_status pf_ffdec_read_au(pf_ffdec *d, const uint8_t **data, size_t *size, int64_t *pts,
                           pf_video_reader_stats *stats)
{
    (void)d, (void)data, (void)size, (void)pts, (void)stats;
    return pf_set_error(PF_ERR_UNSUPPORTED, "pixflow was built without FFmpeg");
}

void pf_ffdec_close(pf_ffdec **d)
{
    if (d) *d = NULL;
}

#endif
