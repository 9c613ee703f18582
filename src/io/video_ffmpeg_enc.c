/* Video encode through libavformat/libavcodec/libswscale (video_impl.h).
 *
 * The encoder's pixel format is p->codec_pixfmt, else the first the encoder
 * lists, except that RGBA input prefers a format with alpha so codecs that
 * can store it (png, qtrle, ffv1, prores_ks) keep it. One AVFrame is
 * allocated at open; each write converts into it with swscale (waiting for
 * the encoder to let go of it first: av_frame_make_writable). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "io_impl.h"
#include "video_impl.h"

#ifdef PF_HAVE_FFMPEG

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

#include "ffmpeg_util.h"

struct pf_ffenc {
    char *name;
    AVFormatContext *oc;
    AVCodecContext *enc;
    AVStream *st;
    AVFrame *frame;
    AVPacket *pkt;
    struct SwsContext *sws;
    enum AVPixelFormat in_fmt;
    bool header_written, finished;
};

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
    const char *codec_name = p->codec && p->codec[0] ? p->codec : "libx264";
    const AVCodec *codec = avcodec_find_encoder_by_name(codec_name);
    if (!codec) {
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
    e->enc->codec_id = codec->id;
    e->enc->width = p->width;
    e->enc->height = p->height;
    e->enc->pix_fmt = pix;
    e->enc->time_base = (AVRational){p->fps.den, p->fps.num};
    e->enc->framerate = (AVRational){p->fps.num, p->fps.den};
    e->enc->sample_aspect_ratio = (AVRational){1, 1};
    e->enc->thread_count = p->threads > 0 ? p->threads : 0;
    if (p->gop > 0) e->enc->gop_size = p->gop;
    if (p->bitrate > 0) e->enc->bit_rate = p->bitrate;
    if (e->oc->oformat->flags & AVFMT_GLOBALHEADER) e->enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    if (p->preset && p->preset[0]) st = set_opt(e, "preset", p->preset);
    if (st == PF_OK && p->crf >= 0 && p->bitrate <= 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", p->crf);
        st = set_opt(e, "crf", v);
    }
    if (st != PF_OK) goto fail;
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
    if (!(e->oc->oformat->flags & AVFMT_NOFILE)) {
        /* url is pf_output's temporary (video_writer.c renames it over the
         * path at close); messages name the final path. */
        err = avio_open(&e->oc->pb, url, AVIO_FLAG_WRITE);
        if (err < 0) {
            st = pf_io_errno("create", name, AVUNERROR(err));
            goto fail;
        }
    }
    err = avformat_write_header(e->oc, NULL);
    if (err < 0) {
        st = pf_ff_fail(PF_ERR_IO, name, "cannot write the container header", err);
        goto fail;
    }
    e->header_written = true;
    e->frame->format = pix;
    e->frame->width = p->width;
    e->frame->height = p->height;
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
    *out = e;
    return PF_OK;
fail:
    e->finished = true; /* no trailer for a file that never started */
    pf_ffenc_free(&e);
    return st;
}

/* Sends `frame` (NULL = flush) and writes every packet that comes out. */
static pf_status encode(pf_ffenc *e, AVFrame *frame)
{
    int err = avcodec_send_frame(e->enc, frame);
    if (err < 0) return pf_ff_fail(PF_ERR_IO, e->name, "encoding failed", err);
    for (;;) {
        err = avcodec_receive_packet(e->enc, e->pkt);
        if (err == AVERROR(EAGAIN) || err == AVERROR_EOF) return PF_OK;
        if (err < 0) return pf_ff_fail(PF_ERR_IO, e->name, "encoding failed", err);
        av_packet_rescale_ts(e->pkt, e->enc->time_base, e->st->time_base);
        e->pkt->stream_index = e->st->index;
        err = av_interleaved_write_frame(e->oc, e->pkt); /* takes the packet's data */
        if (err < 0) return pf_ff_fail(PF_ERR_IO, e->name, "cannot write", err);
    }
}

pf_status pf_ffenc_write(pf_ffenc *e, const pf_frame *f, int64_t pts)
{
    int err = av_frame_make_writable(e->frame);
    if (err < 0) return pf_ff_fail(PF_ERR_NOMEM, e->name, "frame buffer", err);
    const uint8_t *src[4] = {f->data[0], f->data[1], f->data[2], NULL};
    int lines[4] = {(int)f->stride[0], (int)f->stride[1], (int)f->stride[2], 0};
    sws_scale(e->sws, src, lines, 0, f->height, e->frame->data, e->frame->linesize);
    e->frame->pts = pts;
    return encode(e, e->frame);
}

pf_status pf_ffenc_finish(pf_ffenc *e)
{
    if (e->finished) return PF_OK;
    e->finished = true;
    pf_status st = encode(e, NULL);
    int err = av_write_trailer(e->oc);
    if (err < 0 && st == PF_OK) st = pf_ff_fail(PF_ERR_IO, e->name, "cannot write the trailer", err);
    if (e->oc->pb && !(e->oc->oformat->flags & AVFMT_NOFILE)) {
        avio_flush(e->oc->pb);
        if (e->oc->pb->error < 0 && st == PF_OK)
            st = pf_ff_fail(PF_ERR_IO, e->name, "cannot write", e->oc->pb->error);
        err = avio_closep(&e->oc->pb);
        if (err < 0 && st == PF_OK) st = pf_ff_fail(PF_ERR_IO, e->name, "cannot close", err);
    }
    return st;
}

void pf_ffenc_free(pf_ffenc **pe)
{
    if (!pe || !*pe) return;
    pf_ffenc *e = *pe;
    *pe = NULL;
    if (!e->finished && pf_ffenc_finish(e) != PF_OK)
        PF_LOGE("%s", pf_last_error());
    if (e->oc && e->oc->pb && !(e->oc->oformat->flags & AVFMT_NOFILE)) avio_closep(&e->oc->pb);
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

void pf_ffenc_free(pf_ffenc **e)
{
    if (e) *e = NULL;
}

#endif
