/* Video encode through libavformat/libavcodec/libswscale (video_impl.h).
 *
 * The encoder's pixel format is p->codec_pixfmt, else the first the encoder
 * lists, except that RGBA input prefers a format with alpha so codecs that
 * can store it (png, qtrle, ffv1, prores_ks) keep it. One AVFrame is
 * allocated at open; each write converts into it with swscale (waiting for
 * the encoder to let go of it first: av_frame_make_writable).
 *
 * Fidelity: the stream is tagged with the input's colour (and RGB input is
 * encoded with that matrix and range), its sample aspect ratio and display
 * matrix. Codecs whose 4:2:0 layout needs even sizes (H.264, HEVC, MPEG-1/2/4,
 * H.263) get odd frames padded by one column/row repeating the edge: their
 * bitstreams crop in units of two pixels, so the extra line cannot be
 * cropped away (what `-vf pad=ceil(iw/2)*2:ceil(ih/2)*2` gives ffmpeg users).
 * Streams of p->copy_streams_from are copied packet by packet from a second
 * demuxer, pulled up to each frame's time so the muxer interleaves them.
 *
 * Network outputs (a URL path, io.h "Network outputs"): the protocol is
 * opened by libavformat with the whitelist, and every blocking call into it
 * (connect, RTSP handshake, a send into a full socket buffer) polls
 * interrupt_cb, which ends it once the deadline set before the call passes:
 * a receiver that vanished or stopped reading fails the writer within
 * open_timeout_ms / write_timeout_ms instead of hanging the job. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "io_impl.h"
#include "url.h"
#include "video_impl.h"

#ifdef PF_HAVE_FFMPEG

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/display.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libavutil/time.h>
#include <libswscale/swscale.h>

#include "ffmpeg_util.h"

/* Streams copied from another file (copy_streams_from). */
typedef struct copy_src {
    AVFormatContext *ic;
    int *map;                 /* input stream -> output stream, -1 = not copied */
    AVPacket *pkt;            /* read ahead: the next packet to copy */
    bool have_pkt, eof;
    double start_s, end_s;    /* window on the source clock; end_s < 0 = open */
    bool cut_start;           /* start_s is after the source's video start: packets
                                 before it go (else they stay, e.g. AAC priming) */
    int64_t copied;
} copy_src;

struct pf_ffenc {
    char *name;
    AVFormatContext *oc;
    AVCodecContext *enc;
    AVStream *st;
    AVFrame *frame;
    AVPacket *pkt;
    struct SwsContext *sws;
    enum AVPixelFormat in_fmt;
    int in_w, in_h;           /* frames given; the encoder's may be padded */
    copy_src copy;
    bool header_written, finished;
    /* Network output: deadline (av_gettime_relative() microseconds, 0 = none)
     * of the blocking call under way, polled by interrupt_cb; `abandon`
     * makes it fire at once (discard: never wait for a dead peer). */
    bool live;
    int64_t deadline_us, write_timeout_us;
    bool timed_out, abandon;
};

static int interrupt_cb(void *opaque)
{
    pf_ffenc *e = opaque;
    if (e->abandon || (e->deadline_us > 0 && av_gettime_relative() > e->deadline_us)) {
        e->timed_out = !e->abandon;
        return 1;
    }
    return 0;
}

/* Arms the deadline `us` from now for the next blocking call (live only). */
static void arm(pf_ffenc *e, int64_t us)
{
    e->timed_out = false;
    e->deadline_us = e->live && us > 0 ? av_gettime_relative() + us : 0;
}

static bool has_alpha(enum AVPixelFormat f)
{
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(f);
    return d && (d->flags & AV_PIX_FMT_FLAG_ALPHA);
}

static enum AVPixelFormat choose_pixfmt(const AVCodec *codec, const pf_video_writer_params *p,
                                        enum AVPixelFormat in)
{
    const enum AVPixelFormat *list = codec->pix_fmts;
    if (!list) return in == AV_PIX_FMT_NV12 ? AV_PIX_FMT_YUV420P : AV_PIX_FMT_YUV420P;
    if (p->input_format == PF_PIXFMT_RGBA)
        for (int i = 0; list[i] != AV_PIX_FMT_NONE; i++)
            if (has_alpha(list[i]) && av_pix_fmt_desc_get(list[i])->comp[0].depth == 8)
                return list[i];
    for (int i = 0; list[i] != AV_PIX_FMT_NONE; i++)
        if (list[i] == in) return in;
    return list[0];
}

static pf_status set_opt(pf_ffenc *e, const char *key, const char *val)
{
    int err = av_opt_set(e->enc->priv_data, key, val, 0);
    if (err == AVERROR_OPTION_NOT_FOUND) {
        pf_log(PF_LOG_DEBUG, "%s: encoder %s has no option '%s': ignored", e->name,
               e->enc->codec->name, key);
        return PF_OK;
    }
    if (err < 0) {
        char what[128];
        snprintf(what, sizeof what, "encoder option %s=%s", key, val);
        return pf_ff_fail(PF_ERR_INVALID, e->name, what, err);
    }
    return PF_OK;
}

/* Codecs that refuse odd sizes in a chroma-subsampled layout. */
static bool needs_even(enum AVCodecID id)
{
    return id == AV_CODEC_ID_H264 || id == AV_CODEC_ID_HEVC || id == AV_CODEC_ID_MPEG4 ||
           id == AV_CODEC_ID_MPEG2VIDEO || id == AV_CODEC_ID_MPEG1VIDEO ||
           id == AV_CODEC_ID_H263 || id == AV_CODEC_ID_H263P;
}

/* Codecs whose time base must be the frame rate (MPEG-4 Part 2 takes at most
 * 16-bit time bases, MPEG-1/2 and H.263 standard rates only). */
static bool needs_rate_timebase(enum AVCodecID id)
{
    return id == AV_CODEC_ID_MPEG4 || id == AV_CODEC_ID_MPEG2VIDEO ||
           id == AV_CODEC_ID_MPEG1VIDEO || id == AV_CODEC_ID_H263 || id == AV_CODEC_ID_H263P;
}

static bool is_full_range_fmt(enum AVPixelFormat f)
{
    return f == AV_PIX_FMT_YUVJ420P || f == AV_PIX_FMT_YUVJ422P || f == AV_PIX_FMT_YUVJ444P ||
           f == AV_PIX_FMT_YUVJ440P;
}

static bool is_yuv(enum AVPixelFormat f)
{
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(f);
    return d && !(d->flags & AV_PIX_FMT_FLAG_RGB) && d->nb_components >= 3;
}

static int sws_matrix(int h273)
{
    switch (h273) {
    case AVCOL_SPC_BT709: return SWS_CS_ITU709;
    case AVCOL_SPC_BT2020_NCL:
    case AVCOL_SPC_BT2020_CL: return SWS_CS_BT2020;
    case AVCOL_SPC_SMPTE240M: return SWS_CS_SMPTE240M;
    case AVCOL_SPC_FCC: return SWS_CS_FCC;
    default: return SWS_CS_ITU601;
    }
}

/* Tags from p->color; yuvj* formats are full range by definition. */
static void set_color_tags(AVCodecContext *c, const pf_color_info *col)
{
    c->color_range = col->range == PF_COLOR_RANGE_FULL      ? AVCOL_RANGE_JPEG
                     : col->range == PF_COLOR_RANGE_LIMITED ? AVCOL_RANGE_MPEG
                                                            : AVCOL_RANGE_UNSPECIFIED;
    if (is_full_range_fmt(c->pix_fmt)) c->color_range = AVCOL_RANGE_JPEG;
    if (col->matrix > 0 && col->matrix != AVCOL_SPC_UNSPECIFIED && col->matrix < AVCOL_SPC_NB &&
        is_yuv(c->pix_fmt))
        c->colorspace = (enum AVColorSpace)col->matrix;
    if (col->primaries > 0 && col->primaries < AVCOL_PRI_NB)
        c->color_primaries = (enum AVColorPrimaries)col->primaries;
    if (col->transfer > 0 && col->transfer < AVCOL_TRC_NB)
        c->color_trc = (enum AVColorTransferCharacteristic)col->transfer;
}

/* The swscale matrices and ranges between the input frames and the encoder's
 * layout: YUV in the frames' own matrix/range, RGB full range. */
static void set_sws_color(pf_ffenc *e, const pf_video_writer_params *p, enum AVPixelFormat pix)
{
    pf_color_info eff = pf_color_effective(&p->color, p->height);
    const int *coef = sws_getCoefficients(sws_matrix(eff.matrix));
    bool in_yuv = is_yuv(e->in_fmt), out_yuv = is_yuv(pix);
    int yuv_range = eff.range == PF_COLOR_RANGE_FULL ? 1 : 0;
    int src_range = in_yuv ? yuv_range : 1;
    int dst_range = !out_yuv ? 1 : is_full_range_fmt(pix) ? 1 : yuv_range;
    sws_setColorspaceDetails(e->sws, coef, src_range, coef, dst_range, 0, 1 << 16, 1 << 16);
}

/* Opens p->copy_streams_from and adds an output stream for each of its
 * audio, subtitle and data streams the muxer can hold. */
static pf_status open_copy(pf_ffenc *e, const pf_video_writer_params *p)
{
    copy_src *c = &e->copy;
    const char *src = p->copy_streams_from;
    c->start_s = p->start_s > 0 ? p->start_s : 0;
    c->end_s = p->duration_s > 0 ? c->start_s + p->duration_s : -1;
    pf_ff_log_reset();
    int err = avformat_open_input(&c->ic, src, NULL, NULL);
    if (err < 0) return pf_ff_fail(PF_ERR_IO, e->name, "cannot open copy_streams_from", err);
    err = avformat_find_stream_info(c->ic, NULL);
    if (err < 0)
        return pf_ff_fail(PF_ERR_FORMAT, e->name, "cannot read the streams of copy_streams_from",
                          err);
    c->map = malloc(sizeof *c->map * (c->ic->nb_streams ? c->ic->nb_streams : 1));
    c->pkt = av_packet_alloc();
    if (!c->map || !c->pkt) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", e->name);
    int copied = 0;
    for (unsigned i = 0; i < c->ic->nb_streams; i++) {
        AVStream *is = c->ic->streams[i];
        enum AVMediaType t = is->codecpar->codec_type;
        c->map[i] = -1;
        if (t != AVMEDIA_TYPE_AUDIO && t != AVMEDIA_TYPE_SUBTITLE && t != AVMEDIA_TYPE_DATA)
            continue;
        /* 1 = the muxer takes it; unknown (< 0) only for audio, which
         * every general-purpose container holds. */
        int ok = avformat_query_codec(e->oc->oformat, is->codecpar->codec_id, FF_COMPLIANCE_NORMAL);
        if (ok == 0 || (ok < 0 && t != AVMEDIA_TYPE_AUDIO)) {
            PF_LOGI("%s: %s stream %u (%s) not copied: the %s container cannot hold it", e->name,
                    av_get_media_type_string(t), i, avcodec_get_name(is->codecpar->codec_id),
                    e->oc->oformat->name);
            continue;
        }
        AVStream *os = avformat_new_stream(e->oc, NULL);
        if (!os) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", e->name);
        err = avcodec_parameters_copy(os->codecpar, is->codecpar);
        if (err < 0) return pf_ff_fail(PF_ERR_INTERNAL, e->name, "copying stream parameters", err);
        os->codecpar->codec_tag = 0; /* the muxer picks its own tag */
        os->time_base = is->time_base;
        os->disposition = is->disposition;
        av_dict_copy(&os->metadata, is->metadata, 0);
        c->map[i] = os->index;
        copied++;
    }
    if (!copied) {
        avformat_close_input(&c->ic);
        return PF_OK;
    }
    /* Packets before the window's start are cut only when the window starts
     * later than the source's video: a start at the video's first frame
     * keeps what comes just before it (an AAC priming packet at -1024
     * samples), as a stream copy by ffmpeg does. */
    int vi = av_find_best_stream(c->ic, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    double v0 = 0;
    if (vi >= 0 && c->ic->streams[vi]->start_time != AV_NOPTS_VALUE)
        v0 = (double)c->ic->streams[vi]->start_time * av_q2d(c->ic->streams[vi]->time_base);
    c->cut_start = c->start_s > v0 + 1e-6;
    /* Only the copied streams are demuxed. */
    for (unsigned i = 0; i < c->ic->nb_streams; i++)
        if (c->map[i] < 0) c->ic->streams[i]->discard = AVDISCARD_ALL;
    return PF_OK;
}

/* Seconds of a packet's time on the source clock (pts, else dts). */
static double pkt_time(const AVPacket *pkt, AVRational tb, bool end)
{
    int64_t t = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
    if (t == AV_NOPTS_VALUE) return -1e300;
    if (end && pkt->duration > 0) t += pkt->duration;
    return (double)t * av_q2d(tb);
}

/* Writes the copied packets whose time is before `until` (seconds on the
 * source clock) and inside the window, shifted by the window's start. */
static pf_status copy_until(pf_ffenc *e, double until)
{
    copy_src *c = &e->copy;
    if (!c->ic) return PF_OK;
    for (;;) {
        if (!c->have_pkt) {
            if (c->eof) return PF_OK;
            int err = av_read_frame(c->ic, c->pkt);
            if (err < 0) {
                c->eof = true; /* end or an input error: the copy stops, the video goes on */
                return PF_OK;
            }
            if (c->map[c->pkt->stream_index] < 0) {
                av_packet_unref(c->pkt);
                continue;
            }
            c->have_pkt = true;
        }
        AVStream *is = c->ic->streams[c->pkt->stream_index];
        double t = pkt_time(c->pkt, is->time_base, false);
        if (t >= until) return PF_OK;
        c->have_pkt = false;
        bool before = c->cut_start && pkt_time(c->pkt, is->time_base, true) <= c->start_s &&
                      (c->pkt->duration > 0 || t < c->start_s);
        bool after = c->end_s >= 0 && t >= c->end_s;
        if (before || after) {
            av_packet_unref(c->pkt);
            if (after) c->eof = true; /* packets come in time order per stream; close enough */
            continue;
        }
        AVStream *os = e->oc->streams[c->map[c->pkt->stream_index]];
        int64_t shift = (int64_t)llrint(c->start_s / av_q2d(is->time_base));
        if (c->pkt->pts != AV_NOPTS_VALUE) c->pkt->pts -= shift;
        if (c->pkt->dts != AV_NOPTS_VALUE) c->pkt->dts -= shift;
        av_packet_rescale_ts(c->pkt, is->time_base, os->time_base);
        c->pkt->stream_index = os->index;
        c->pkt->pos = -1;
        pf_ff_log_reset();
        int err = av_interleaved_write_frame(e->oc, c->pkt);
        if (err < 0) return pf_ff_fail(PF_ERR_IO, e->name, "cannot write a copied packet", err);
        c->copied++;
    }
}

pf_status pf_ffenc_copy_until(pf_ffenc *e, double until)
{
    return e && e->header_written && !e->finished ? copy_until(e, until) : PF_OK;
}

pf_rational pf_ffenc_time_base(const pf_ffenc *e)
{
    return (pf_rational){e->enc->time_base.num, e->enc->time_base.den};
}

bool pf_video_have_encoder(const char *name)
{
    const AVCodec *c = name && name[0] ? avcodec_find_encoder_by_name(name) : NULL;
    return c && c->type == AVMEDIA_TYPE_VIDEO;
}

/* Repeats the last column/row of the picture into the padding of the
 * encoder's frame (w x h inside the frame's size). */
static void pad_edges(AVFrame *fr, int w, int h)
{
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get((enum AVPixelFormat)fr->format);
    if (!d || (w == fr->width && h == fr->height)) return;
    for (int c = 0; c < d->nb_components; c++) {
        const AVComponentDescriptor *cd = &d->comp[c];
        bool chroma = (c == 1 || c == 2) && !(d->flags & AV_PIX_FMT_FLAG_RGB);
        int sw = chroma ? d->log2_chroma_w : 0, sh = chroma ? d->log2_chroma_h : 0;
        int used_w = -((-w) >> sw), used_h = -((-h) >> sh);
        int full_w = -((-fr->width) >> sw), full_h = -((-fr->height) >> sh);
        uint8_t *base = fr->data[cd->plane];
        int step = cd->step;
        for (int y = 0; y < used_h; y++) {
            uint8_t *row = base + (size_t)y * (size_t)fr->linesize[cd->plane];
            for (int x = used_w; x < full_w; x++)
                memcpy(row + (size_t)x * (size_t)step, row + (size_t)(used_w - 1) * (size_t)step,
                       (size_t)step);
        }
        size_t bytes = (size_t)full_w * (size_t)step;
        for (int y = used_h; y < full_h; y++)
            memcpy(base + (size_t)y * (size_t)fr->linesize[cd->plane],
                   base + (size_t)(used_h - 1) * (size_t)fr->linesize[cd->plane], bytes);
    }
}

/* The encoder when params.codec is NULL: libx264 where this FFmpeg has it
 * (what ffmpeg itself picks for MP4/MKV/MOV), else the container's own
 * default, else MPEG-4 Part 2, which every FFmpeg build has natively (the
 * GPU machine's static FFmpeg has no external codec libraries). The
 * fallback is logged, since its quality per bit is far below x264's. */
static const AVCodec *default_encoder(const AVOutputFormat *of, const char *name, bool live)
{
    /* A muxer without a codec list (MPEG-TS, RTSP) answers "unknown" (< 0):
     * for a live output H.264 is what receivers expect there, not MPEG-2. */
    const AVCodec *c = avcodec_find_encoder_by_name("libx264");
    int ok = c ? avformat_query_codec(of, c->id, FF_COMPLIANCE_NORMAL) : 0;
    if (c && (ok == 1 || (live && ok < 0))) return c;
    c = of->video_codec != AV_CODEC_ID_NONE ? avcodec_find_encoder(of->video_codec) : NULL;
    if (!c || avformat_query_codec(of, c->id, FF_COMPLIANCE_NORMAL) == 0) {
        const AVCodec *m = avcodec_find_encoder(AV_CODEC_ID_MPEG4);
        if (m && avformat_query_codec(of, m->id, FF_COMPLIANCE_NORMAL) != 0) c = m;
    }
    if (c)
        pf_log(PF_LOG_INFO, "%s: this FFmpeg has no libx264 for %s: encoding with %s", name,
               of->name, c->name);
    return c;
}

/* "NAME: WHAT: the receiver took no data for N ms (timed out)". */
static pf_status timed_out(pf_ffenc *e, const char *what, int64_t ms)
{
    return pf_set_error(PF_ERR_IO, "%s: %s: the receiver took no data for %lld ms (timed out)",
                        e->name, what, (long long)ms);
}

/* A network output: the whitelist on every open (nested ones too), the
 * deadline callback, packets flushed as they come, a short MPEG-TS mux
 * delay, and RTSP over TCP unless the caller chose. */
static pf_status live_setup(pf_ffenc *e, const pf_video_writer_params *p, AVDictionary **opts)
{
    const char *list = p->protocols ? p->protocols : PF_IO_DEFAULT_OUTPUT_PROTOCOLS;
    e->oc->protocol_whitelist = av_strdup(list);
    if (!e->oc->protocol_whitelist || av_dict_set(opts, "protocol_whitelist", list, 0) < 0)
        return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", e->name);
    e->oc->interrupt_callback = (AVIOInterruptCB){interrupt_cb, e};
    e->oc->flags |= AVFMT_FLAG_FLUSH_PACKETS;
    e->oc->flush_packets = 1;
    e->oc->max_delay = 100000; /* us: MPEG-TS's PCR lead, 0.7 s by default */
    e->write_timeout_us = p->write_timeout_ms > 0 ? p->write_timeout_ms * 1000 : 0;
    if (!strcmp(e->oc->oformat->name, "rtsp") &&
        av_dict_set(opts, "rtsp_transport", "tcp", AV_DICT_DONT_OVERWRITE) < 0)
        return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", e->name);
    /* MPEG-TS: the PES length written for video (frames under 64 KB), so a
     * demuxer hands the frame on when its last byte arrives instead of when
     * the next frame starts: 1280x720 30 fps over TCP, write -> read p50 41
     * -> 10 ms (bench_net_output, ultrafast). */
    if (!strcmp(e->oc->oformat->name, "mpegts") &&
        av_dict_set(opts, "omit_video_pes_length", "0", AV_DICT_DONT_OVERWRITE) < 0)
        return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", e->name);
    /* SRT in live mode drops what it has not sent yet at close (measured:
     * 32 of 50 frames arrived): linger until the receiver has it all, for
     * at most the write timeout. */
    char scheme[16], linger[24];
    pf_io_url_scheme(p->path, scheme, sizeof scheme);
    int64_t secs = e->write_timeout_us > 0 ? (e->write_timeout_us + 999999) / 1000000 : 5;
    snprintf(linger, sizeof linger, "%lld", (long long)secs);
    if (!strcmp(scheme, "srt") && av_dict_set(opts, "linger", linger, AV_DICT_DONT_OVERWRITE) < 0)
        return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", e->name);
    return PF_OK;
}

pf_status pf_ffenc_open(const pf_video_writer_params *p, const char *name, pf_ffenc **out)
{
    *out = NULL;
    pf_ff_init_log();
    pf_ffenc *e = calloc(1, sizeof *e);
    if (!e) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", name);
    e->name = strdup(name);
    pf_status st = PF_OK;
    const char *url = pf_io_is_std(p->path) ? "pipe:1" : p->path;
    const char *container = p->container && p->container[0] ? p->container : NULL;
    char scheme[16] = "";
    e->live = pf_io_url_scheme(p->path, scheme, sizeof scheme);
    if (e->live && !container) container = pf_io_url_muxer(scheme);
    /* muxer_options, then the protocol takes its own (avio_open2) and the
     * muxer the rest (avformat_write_header); anything left is unknown. */
    AVDictionary *opts = NULL;
    int err = avformat_alloc_output_context2(&e->oc, NULL, container, url);
    if (err < 0 || !e->oc) {
        st = container ? pf_set_error(PF_ERR_UNSUPPORTED, "%s: FFmpeg has no muxer named '%s'",
                                      name, container)
                       : pf_set_error(PF_ERR_UNSUPPORTED,
                                      "%s: cannot tell the container from the extension; set "
                                      "params.container",
                                      name);
        goto fail;
    }
    const char *codec_name = p->codec && p->codec[0] ? p->codec : NULL;
    const AVCodec *codec = codec_name ? avcodec_find_encoder_by_name(codec_name)
                                      : default_encoder(e->oc->oformat, name, e->live);
    if (!codec_name && codec) codec_name = codec->name;
    if (!codec) {
        if (!codec_name) {
            st = pf_set_error(PF_ERR_UNSUPPORTED,
                              "%s: this FFmpeg has no video encoder for the %s container "
                              "(set params.codec)", name, e->oc->oformat->name);
            goto fail;
        }
        st = pf_set_error(PF_ERR_UNSUPPORTED, "%s: FFmpeg has no encoder named '%s'", name,
                          codec_name);
        goto fail;
    }
    if (codec->type != AVMEDIA_TYPE_VIDEO) {
        st = pf_set_error(PF_ERR_INVALID, "%s: '%s' is not a video encoder", name, codec_name);
        goto fail;
    }
    if (avformat_query_codec(e->oc->oformat, codec->id, FF_COMPLIANCE_NORMAL) == 0) {
        st = pf_set_error(PF_ERR_UNSUPPORTED, "%s: the %s container cannot hold %s video", name,
                          e->oc->oformat->name, codec_name);
        goto fail;
    }
    e->in_fmt = pf_ff_pixfmt(p->input_format);
    e->st = avformat_new_stream(e->oc, NULL);
    e->enc = avcodec_alloc_context3(codec);
    e->frame = av_frame_alloc();
    e->pkt = av_packet_alloc();
    if (!e->name || !e->st || !e->enc || !e->frame || !e->pkt) {
        st = pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", name);
        goto fail;
    }
    enum AVPixelFormat pix = AV_PIX_FMT_NONE;
    if (p->codec_pixfmt && p->codec_pixfmt[0]) {
        pix = av_get_pix_fmt(p->codec_pixfmt);
        if (pix == AV_PIX_FMT_NONE) {
            st = pf_set_error(PF_ERR_INVALID, "%s: unknown codec_pixfmt '%s'", name,
                              p->codec_pixfmt);
            goto fail;
        }
    } else {
        pix = choose_pixfmt(codec, p, e->in_fmt);
    }
    e->in_w = p->width;
    e->in_h = p->height;
    int enc_w = p->width, enc_h = p->height;
    const AVPixFmtDescriptor *pd = av_pix_fmt_desc_get(pix);
    if (pd && needs_even(codec->id)) {
        int aw = 1 << pd->log2_chroma_w, ah = 1 << pd->log2_chroma_h;
        enc_w = (enc_w + aw - 1) / aw * aw;
        enc_h = (enc_h + ah - 1) / ah * ah;
        if (enc_w != p->width || enc_h != p->height)
            PF_LOGI("%s: %dx%d is padded to %dx%d for %s %s (the edge repeated)", name, p->width,
                    p->height, enc_w, enc_h, codec->name, pd->name);
    }
    e->enc->codec_id = codec->id;
    e->enc->width = enc_w;
    e->enc->height = enc_h;
    e->enc->pix_fmt = pix;
    bool own_tb = p->time_base.num > 0 && p->time_base.den > 0 && !needs_rate_timebase(codec->id);
    e->enc->time_base = own_tb ? (AVRational){p->time_base.num, p->time_base.den}
                               : (AVRational){p->fps.den, p->fps.num};
    e->enc->framerate = (AVRational){p->fps.num, p->fps.den};
    e->enc->sample_aspect_ratio = p->sar.num > 0 && p->sar.den > 0
                                      ? (AVRational){p->sar.num, p->sar.den}
                                      : (AVRational){1, 1};
    set_color_tags(e->enc, &p->color);
    e->enc->thread_count = p->threads > 0 ? p->threads : 0;
    if (p->gop > 0) e->enc->gop_size = p->gop;
    if (e->live) {
        /* A frame leaves the encoder when it is written (no B-frames to
         * reorder, no lookahead), and a receiver that joins late waits at
         * most 2 s for a keyframe. */
        int two_s = (int)(2.0 * p->fps.num / p->fps.den + 0.5);
        e->enc->max_b_frames = 0;
        if (p->gop <= 0) e->enc->gop_size = two_s > 0 ? two_s : 1;
    }
    if (p->bitrate > 0) e->enc->bit_rate = p->bitrate;
    if (e->oc->oformat->flags & AVFMT_GLOBALHEADER) e->enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    if (p->preset && p->preset[0]) st = set_opt(e, "preset", p->preset);
    /* libx264 (and x265): no lookahead and no frame threads for a live
     * output; encoders without a tune option ignore it (set_opt). */
    if (st == PF_OK && e->live) st = set_opt(e, "tune", "zerolatency");
    /* x265 prints its own info lines on stderr unless told otherwise. */
    if (st == PF_OK && codec->id == AV_CODEC_ID_HEVC && !strcmp(codec->name, "libx265"))
        st = set_opt(e, "x265-params", "log-level=error");
    if (st == PF_OK && p->crf >= 0 && p->bitrate <= 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", p->crf);
        if (av_opt_find(e->enc->priv_data, "crf", NULL, 0, 0)) {
            st = set_opt(e, "crf", v);
        } else if (codec->id == AV_CODEC_ID_MPEG4 || codec->id == AV_CODEC_ID_MJPEG ||
                   codec->id == AV_CODEC_ID_MPEG2VIDEO || codec->id == AV_CODEC_ID_MPEG1VIDEO ||
                   codec->id == AV_CODEC_ID_H263) {
            /* FFmpeg's own MPEG-1/2/4, H.263 and MJPEG encoders have no crf and would fall
             * back to their 200 kb/s default: constant quantizer instead,
             * crf 23 -> q 4, 18 -> 2, 51 -> 13 (1 best .. 31). */
            int q = (p->crf - 11) / 3;
            q = q < 1 ? 1 : q > 31 ? 31 : q;
            e->enc->flags |= AV_CODEC_FLAG_QSCALE;
            e->enc->global_quality = FF_QP2LAMBDA * q;
        }
    }
    if (st != PF_OK) goto fail;
    pf_ff_log_reset();
    err = avcodec_open2(e->enc, codec, NULL);
    if (err < 0) {
        st = pf_ff_fail(PF_ERR_UNSUPPORTED, name, "cannot open the encoder", err);
        goto fail;
    }
    err = avcodec_parameters_from_context(e->st->codecpar, e->enc);
    if (err < 0) {
        st = pf_ff_fail(PF_ERR_INTERNAL, name, "codec parameters", err);
        goto fail;
    }
    e->st->time_base = e->enc->time_base;
    e->st->avg_frame_rate = e->enc->framerate;
    e->st->sample_aspect_ratio = e->enc->sample_aspect_ratio;
    if (p->rotation != 0) {
        uint8_t *dm = av_stream_new_side_data(e->st, AV_PKT_DATA_DISPLAYMATRIX, 9 * sizeof(int32_t));
        if (!dm) {
            st = pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", name);
            goto fail;
        }
        /* av_display_rotation_set turns clockwise; _get (what readers
         * report) counter-clockwise: the angle goes in negated. */
        av_display_rotation_set((int32_t *)dm, -p->rotation);
    }
    if (p->copy_streams_from && p->copy_streams_from[0]) {
        st = open_copy(e, p);
        if (st != PF_OK) goto fail;
    }
    if (p->muxer_options && p->muxer_options[0] &&
        av_dict_parse_string(&opts, p->muxer_options, "=", ":", 0) < 0) {
        st = pf_set_error(PF_ERR_INVALID, "%s: muxer_options '%s': expected key=value:key=value",
                          name, p->muxer_options);
        goto fail;
    }
    if (e->live) {
        st = live_setup(e, p, &opts);
        if (st != PF_OK) goto fail;
    }
    pf_ff_log_reset();
    arm(e, p->open_timeout_ms * 1000);
    if (!(e->oc->oformat->flags & AVFMT_NOFILE)) {
        /* url is pf_output's temporary (video_writer.c renames it over the
         * path at close), or the URL; messages name the final path or the
         * redacted URL. */
        err = avio_open2(&e->oc->pb, url, AVIO_FLAG_WRITE, &e->oc->interrupt_callback, &opts);
        if (err < 0) {
            st = e->timed_out ? timed_out(e, "cannot connect", p->open_timeout_ms)
                 : e->live    ? pf_ff_fail(PF_ERR_IO, name, "cannot connect", err)
                              : pf_io_errno("create", name, AVUNERROR(err));
            goto fail;
        }
    }
    err = avformat_write_header(e->oc, &opts);
    if (err < 0) {
        st = e->timed_out ? timed_out(e, "cannot start the stream", p->open_timeout_ms)
                          : pf_ff_fail(PF_ERR_IO, name,
                                       e->live ? "cannot start the stream"
                                               : "cannot write the container header",
                                       err);
        goto fail;
    }
    e->header_written = true;
    arm(e, 0);
    if (av_dict_count(opts) > 0) {
        /* Left over: neither the protocol nor the muxer took it. */
        st = pf_set_error(PF_ERR_INVALID,
                          "%s: muxer_options: '%s' is an option of neither the %s muxer nor "
                          "the protocol",
                          name, av_dict_get(opts, "", NULL, AV_DICT_IGNORE_SUFFIX)->key,
                          e->oc->oformat->name);
        goto fail;
    }
    av_dict_free(&opts);
    e->frame->format = pix;
    e->frame->width = enc_w;
    e->frame->height = enc_h;
    err = av_frame_get_buffer(e->frame, 0);
    if (err < 0) {
        st = pf_ff_fail(PF_ERR_NOMEM, name, "frame buffer", err);
        goto fail;
    }
    e->sws = sws_getContext(p->width, p->height, e->in_fmt, p->width, p->height, pix,
                            SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INP, NULL, NULL, NULL);
    if (!e->sws) {
        st = pf_set_error(PF_ERR_UNSUPPORTED, "%s: swscale cannot convert %s to %s", name,
                          av_get_pix_fmt_name(e->in_fmt), av_get_pix_fmt_name(pix));
        goto fail;
    }
    set_sws_color(e, p, pix);
    *out = e;
    return PF_OK;
fail:
    av_dict_free(&opts);
    e->abandon = true; /* closing sends nothing more to a peer that failed */
    if (e->header_written) {
        pf_ffenc_discard(&e); /* started: RTSP's sockets close in the trailer */
    } else {
        e->finished = true; /* no trailer for a file that never started */
        pf_ffenc_free(&e);
    }
    return st;
}

/* Sends `frame` (NULL = flush) and writes every packet that comes out. */
static pf_status encode(pf_ffenc *e, AVFrame *frame)
{
    pf_ff_log_reset();
    int err = avcodec_send_frame(e->enc, frame);
    if (err < 0) return pf_ff_fail(PF_ERR_IO, e->name, "encoding failed", err);
    for (;;) {
        err = avcodec_receive_packet(e->enc, e->pkt);
        if (err == AVERROR(EAGAIN) || err == AVERROR_EOF) return PF_OK;
        if (err < 0) return pf_ff_fail(PF_ERR_IO, e->name, "encoding failed", err);
        av_packet_rescale_ts(e->pkt, e->enc->time_base, e->st->time_base);
        e->pkt->stream_index = e->st->index;
        arm(e, e->write_timeout_us);
        err = av_interleaved_write_frame(e->oc, e->pkt); /* takes the packet's data */
        bool late = e->timed_out;
        arm(e, 0);
        if (err < 0 && late) return timed_out(e, "cannot write", e->write_timeout_us / 1000);
        if (err < 0)
            return pf_ff_fail(PF_ERR_IO, e->name,
                              e->live ? "cannot write (the receiver is gone?)" : "cannot write",
                              err);
    }
}

pf_status pf_ffenc_write(pf_ffenc *e, const pf_frame *f, int64_t pts)
{
    int err = av_frame_make_writable(e->frame);
    if (err < 0) return pf_ff_fail(PF_ERR_NOMEM, e->name, "frame buffer", err);
    const uint8_t *src[4] = {f->data[0], f->data[1], f->data[2], NULL};
    int lines[4] = {(int)f->stride[0], (int)f->stride[1], (int)f->stride[2], 0};
    sws_scale(e->sws, src, lines, 0, f->height, e->frame->data, e->frame->linesize);
    pad_edges(e->frame, e->in_w, e->in_h);
    e->frame->pts = pts;
    return encode(e, e->frame);
}

pf_status pf_ffenc_finish(pf_ffenc *e)
{
    if (e->finished) return PF_OK;
    e->finished = true;
    pf_status st = encode(e, NULL);
    arm(e, e->write_timeout_us);
    int err = av_write_trailer(e->oc);
    if (err < 0 && st == PF_OK) st = pf_ff_fail(PF_ERR_IO, e->name, "cannot write the trailer", err);
    if (e->oc->pb && !(e->oc->oformat->flags & AVFMT_NOFILE)) {
        avio_flush(e->oc->pb);
        if (e->oc->pb->error < 0 && st == PF_OK)
            st = pf_ff_fail(PF_ERR_IO, e->name, "cannot write", e->oc->pb->error);
        err = avio_closep(&e->oc->pb);
        if (err < 0 && st == PF_OK) st = pf_ff_fail(PF_ERR_IO, e->name, "cannot close", err);
    }
    if (e->timed_out && st != PF_OK)
        st = timed_out(e, "cannot finish the stream", e->write_timeout_us / 1000);
    arm(e, 0);
    return st;
}

void pf_ffenc_discard(pf_ffenc **pe)
{
    if (!pe || !*pe) return;
    pf_ffenc *e = *pe;
    if (!e->finished) {
        e->finished = true;
        /* No encoder flush, no trailer into a file that is then deleted. A
         * network output never waits: every blocking call is interrupted at
         * once. The RTSP muxer (no AVIOContext of ours) closes its
         * connections only in its trailer, which then sends nothing. */
        e->abandon = true;
        if (e->header_written && e->oc && (e->oc->oformat->flags & AVFMT_NOFILE))
            av_write_trailer(e->oc);
    }
    pf_ffenc_free(pe);
}

void pf_ffenc_free(pf_ffenc **pe)
{
    if (!pe || !*pe) return;
    pf_ffenc *e = *pe;
    *pe = NULL;
    if (!e->finished && pf_ffenc_finish(e) != PF_OK)
        PF_LOGE("%s", pf_last_error());
    if (e->oc && e->oc->pb && !(e->oc->oformat->flags & AVFMT_NOFILE)) avio_closep(&e->oc->pb);
    avformat_close_input(&e->copy.ic);
    av_packet_free(&e->copy.pkt);
    free(e->copy.map);
    sws_freeContext(e->sws);
    av_packet_free(&e->pkt);
    av_frame_free(&e->frame);
    avcodec_free_context(&e->enc);
    avformat_free_context(e->oc);
    free(e->name);
    free(e);
}

#else /* !PF_HAVE_FFMPEG */

pf_status pf_ffenc_open(const pf_video_writer_params *p, const char *name, pf_ffenc **out)
{
    (void)p;
    *out = NULL;
    return pf_set_error(PF_ERR_UNSUPPORTED,
                        "%s: pixflow was built without FFmpeg: only .y4m and raw video can be "
                        "written",
                        name);
}

pf_status pf_ffenc_write(pf_ffenc *e, const pf_frame *f, int64_t pts)
{
    (void)e, (void)f, (void)pts;
    return pf_set_error(PF_ERR_UNSUPPORTED, "pixflow was built without FFmpeg");
}

pf_status pf_ffenc_finish(pf_ffenc *e)
{
    (void)e;
    return PF_OK;
}

pf_status pf_ffenc_copy_until(pf_ffenc *e, double until)
{
    (void)e, (void)until;
    return PF_OK;
}

pf_rational pf_ffenc_time_base(const pf_ffenc *e)
{
    (void)e;
    return (pf_rational){0, 0};
}

bool pf_video_have_encoder(const char *name)
{
    (void)name;
    return false;
}

void pf_ffenc_free(pf_ffenc **e)
{
    if (e) *e = NULL;
}

void pf_ffenc_discard(pf_ffenc **e)
{
    if (e) *e = NULL;
}

#endif
