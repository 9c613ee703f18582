/* pf_video_writer: Y4M and raw written here, other containers through FFmpeg
 * (video_ffmpeg_enc.c). Timestamps are decided here for all of them (io.h).
 *
 * Every kind writes through a pf_output (io.h): the file is made under a
 * temporary name (FFmpeg is handed that name; its extension is kept for the
 * muxer guess) and renamed over the path by close() only when the trailer
 * is written and the data is on disk; a writer whose create, write or close
 * failed removes its temporary instead, leaving the path untouched.
 *
 * A URL path (io.h "Network outputs") has no pf_output: FFmpeg opens the
 * protocol itself, and every message names the URL redacted (w->name). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/error.h"
#include "io_impl.h"
#include "pixflow/ops.h"
#include "url.h"
#include "video_impl.h"
#include "y4m.h"

typedef enum { DST_Y4M, DST_RAW, DST_FFMPEG } dst_kind;

struct pf_video_writer {
    dst_kind kind;
    char *name;
    char *path;
    pf_output *out;             /* NULL for FFmpeg patterns ("img%03d.png") */
    FILE *fp;                   /* pf_output_file(out) for Y4M and raw */
    pf_ffenc *ff;
    int width, height;
    pf_rational fps;
    pf_rational tb;             /* of output timestamps: params time_base, else 1/fps */
    pf_color_info color;        /* params.color: RGB -> YUV for Y4M */
    pf_rational sar;            /* params.sar: the Y4M A tag */
    bool y4m_full;              /* Y4M samples are full range (XCOLORRANGE=FULL) */
    double start_s, end_s;      /* trim window on the frames' clock; end_s < 0 = open */
    int64_t max_frames;         /* 0 = all */
    int64_t dropped;            /* frames outside the window */
    double last_end_s;          /* end of the last frame written, on the frames' clock */
    pf_pixfmt input_format;
    pf_pixfmt y4m_format;       /* I420 or GRAY8 */
    pf_frame scratch;           /* Y4M: input converted to y4m_format */
    pf_stream *stream;
    pf_ops *ops;
    int64_t frames;
    int64_t last_pts;           /* in tb units */
    bool closed;
    pf_status failed;
};

/* Whether path's file name holds a frame-number field as FFmpeg's image2
 * muxer reads it: %d or %0Nd ("%%" is a literal '%'). */
static bool frame_pattern(const char *path)
{
    const char *slash = strrchr(path, '/');
    for (const char *c = slash ? slash + 1 : path; *c; c++) {
        if (*c != '%') continue;
        if (c[1] == '%') {
            c++;
            continue;
        }
        const char *d = c + 1;
        while (*d >= '0' && *d <= '9') d++;
        if (*d == 'd') return true;
    }
    return false;
}

pf_video_writer_params pf_video_writer_params_default(void)
{
    pf_video_writer_params p;
    memset(&p, 0, sizeof p);
    p.fps = (pf_rational){30, 1};
    p.input_format = PF_PIXFMT_NONE;
    p.codec = NULL;             /* libx264, or the fallback in video_ffmpeg_enc.c */
    p.crf = 23;
    p.preset = "medium";
    p.open_timeout_ms = 10000;
    p.write_timeout_ms = 5000;
    return p;
}

static bool in_format_ok(pf_pixfmt f)
{
    return f == PF_PIXFMT_NV12 || f == PF_PIXFMT_I420 || f == PF_PIXFMT_RGB24 ||
           f == PF_PIXFMT_BGR24 || f == PF_PIXFMT_RGBA || f == PF_PIXFMT_GRAY8;
}

static dst_kind pick_kind(const pf_video_writer_params *p)
{
    const char *c = p->container;
    if (pf_io_is_url(p->path)) return DST_FFMPEG; /* y4m/raw refused in check_url */
    if (c && c[0]) {
        if (strcmp(c, "y4m") == 0 || strcmp(c, "yuv4mpegpipe") == 0) return DST_Y4M;
        if (strcmp(c, "raw") == 0 || strcmp(c, "rawvideo") == 0) return DST_RAW;
        return DST_FFMPEG;
    }
    if (pf_io_is_std(p->path) || pf_io_has_ext(p->path, ".y4m")) return DST_Y4M;
    if (pf_io_has_ext(p->path, ".raw") || pf_io_has_ext(p->path, ".yuv")) return DST_RAW;
    return DST_FFMPEG;
}

static pf_status open_file(pf_video_writer *w)
{
    w->fp = pf_output_file(w->out);
    return PF_OK;
}

static pf_status open_y4m(pf_video_writer *w)
{
    pf_status st = open_file(w);
    if (st != PF_OK) return st;
    w->y4m_format = w->input_format == PF_PIXFMT_GRAY8 ? PF_PIXFMT_GRAY8 : PF_PIXFMT_I420;
    if (w->input_format != w->y4m_format) {
        st = pf_stream_create(NULL, &w->stream);
        pf_ops_params op = pf_ops_params_default();
        op.stream = w->stream;
        if (st == PF_OK) st = pf_ops_create(&op, &w->ops);
        if (st == PF_OK)
            st = pf_frame_alloc(&w->scratch, w->y4m_format, w->width, w->height, NULL, NULL);
        if (st != PF_OK) return st;
    }
    /* The range is fixed here, in the header; frames converted from RGB
     * are encoded to it whatever their own colour says (write()). */
    w->y4m_full = w->color.range == PF_COLOR_RANGE_FULL;
    return pf_y4m_write_header(w->fp, w->name, w->width, w->height, w->fps,
                               w->y4m_format == PF_PIXFMT_GRAY8, w->sar, w->y4m_full);
}

/* A URL output: a scheme on the whitelist, an FFmpeg muxer, a timeout >= 0. */
static pf_status check_url(const pf_video_writer_params *p, const char *name)
{
    char scheme[32];
    pf_io_url_scheme(p->path, scheme, sizeof scheme);
    const char *list = p->protocols ? p->protocols : PF_IO_DEFAULT_OUTPUT_PROTOCOLS;
    if (!strcmp(scheme, "file"))
        return pf_set_error(PF_ERR_INVALID,
                            "pf_video_writer_create: %s: write to a path, not a file:// URL (a "
                            "path is written under a temporary name and renamed when complete)",
                            name);
    if (!pf_io_protocol_allowed(list, scheme))
        return pf_set_error(PF_ERR_UNSUPPORTED,
                            "pf_video_writer_create: %s: URL protocol '%s' is not allowed for "
                            "outputs (allowed: %s)",
                            name, scheme, list);
    const char *c = p->container;
    if (c && (!strcmp(c, "y4m") || !strcmp(c, "raw") || !strcmp(c, "rawvideo")))
        return pf_set_error(PF_ERR_UNSUPPORTED,
                            "pf_video_writer_create: %s: container '%s' is written to files "
                            "only; a URL takes an FFmpeg muxer (mpegts, flv, rtsp, ...)",
                            name, c);
    if (!(c && c[0]) && !pf_io_url_muxer(scheme))
        return pf_set_error(PF_ERR_UNSUPPORTED,
                            "pf_video_writer_create: %s: no muxer for '%s' outputs; set "
                            "params.container",
                            name, scheme);
    if (p->open_timeout_ms < 0 || p->write_timeout_ms < 0)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_video_writer_create: %s: open_timeout_ms %lld, write_timeout_ms "
                            "%lld (expected >= 0)",
                            name, (long long)p->open_timeout_ms, (long long)p->write_timeout_ms);
    return PF_OK;
}

pf_status pf_video_writer_create(const pf_video_writer_params *p, pf_video_writer **out)
{
    PF_CHECK_ARG(out, "pf_video_writer_create", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(p, "pf_video_writer_create", "params are NULL");
    PF_CHECK_ARG(p->path && p->path[0], "pf_video_writer_create", "path is NULL or empty");
    /* A URL is named without its credentials in every message. */
    char shown[1024];
    bool url = pf_io_is_url(p->path);
    const char *name = url ? pf_io_redact(p->path, shown, sizeof shown) : pf_io_out_name(p->path);
    if (url) {
        pf_status ust = check_url(p, name);
        if (ust != PF_OK) return ust;
    }
    if (p->width <= 0 || p->height <= 0 || p->width > PF_FRAME_MAX_DIM ||
        p->height > PF_FRAME_MAX_DIM)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_video_writer_create: %s: size %dx%d is out of range (1..%d)", name,
                            p->width, p->height, PF_FRAME_MAX_DIM);
    if (!in_format_ok(p->input_format))
        return pf_set_error(PF_ERR_INVALID,
                            "pf_video_writer_create: %s: input_format %s (expected rgb24, bgr24, "
                            "rgba, gray8, nv12 or i420)",
                            name, pf_pixfmt_name(p->input_format));
    if (p->fps.num <= 0 || p->fps.den <= 0)
        return pf_set_error(PF_ERR_INVALID, "pf_video_writer_create: %s: fps %d/%d", name,
                            p->fps.num, p->fps.den);
    if ((p->time_base.num != 0 || p->time_base.den != 0) &&
        (p->time_base.num <= 0 || p->time_base.den <= 0))
        return pf_set_error(PF_ERR_INVALID, "pf_video_writer_create: %s: time_base %d/%d", name,
                            p->time_base.num, p->time_base.den);
    if (!(p->start_s >= 0 && p->start_s < 1e9) || !(p->duration_s >= 0 && p->duration_s < 1e9) ||
        p->max_frames < 0)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_video_writer_create: %s: trim start_s %g, duration_s %g, "
                            "max_frames %lld (expected >= 0)",
                            name, p->start_s, p->duration_s, (long long)p->max_frames);
    pf_video_writer *w = calloc(1, sizeof *w);
    if (!w) return pf_set_error(PF_ERR_NOMEM, "pf_video_writer_create: out of host memory");
    w->name = strdup(name);
    w->path = strdup(p->path);
    w->width = p->width;
    w->height = p->height;
    w->fps = p->fps;
    w->tb = p->time_base.num > 0 && p->time_base.den > 0 ? p->time_base
                                                          : (pf_rational){p->fps.den, p->fps.num};
    w->color = p->color;
    w->sar = p->sar;
    w->start_s = p->start_s;
    w->end_s = p->duration_s > 0 ? p->start_s + p->duration_s : -1;
    w->max_frames = p->max_frames;
    w->last_end_s = p->start_s;
    w->input_format = p->input_format;
    w->last_pts = -1;
    w->kind = pick_kind(p);
    pf_status st = w->name && w->path ? PF_OK : pf_set_error(PF_ERR_NOMEM, "out of host memory");
    /* FFmpeg's image2 muxer writes one file per frame itself ("img%03d.png");
     * any other '%' ("clip 100%.mp4") is part of a plain file name. */
    bool pattern = w->kind == DST_FFMPEG && frame_pattern(p->path);
    if (st == PF_OK && !pattern && !url) st = pf_output_open(p->path, 0, &w->out);
    if (st == PF_OK) {
        pf_video_writer_params fp = *p;
        if (w->out && !pf_io_is_std(p->path)) fp.path = pf_output_write_path(w->out);
        switch (w->kind) {
        case DST_Y4M: st = open_y4m(w); break;
        case DST_RAW: st = open_file(w); break;
        case DST_FFMPEG:
            st = pf_ffenc_open(&fp, w->name, &w->ff);
            if (st == PF_OK) w->tb = pf_ffenc_time_base(w->ff);
            break;
        }
    }
    if (st != PF_OK) {
        w->closed = true;
        w->failed = st;
        pf_video_writer_destroy(&w); /* removes the temporary; path untouched */
        return st;
    }
    *out = w;
    return PF_OK;
}

/* Seconds on the frames' clock of frame f (pts * time_base), or from the
 * frame counter at fps when it has no timestamp. */
static double frame_time(const pf_video_writer *w, const pf_frame *f)
{
    if (f->pts != PF_NOPTS && f->time_base.num > 0 && f->time_base.den > 0)
        return (double)f->pts * f->time_base.num / f->time_base.den;
    return w->start_s + (double)(w->frames + w->dropped) * w->fps.den / w->fps.num;
}

/* How long frame f is shown: its duration, else one frame at fps. */
static double frame_length(const pf_video_writer *w, const pf_frame *f)
{
    if (f->duration > 0 && f->time_base.num > 0 && f->time_base.den > 0)
        return (double)f->duration * f->time_base.num / f->time_base.den;
    return (double)w->fps.den / w->fps.num;
}

/* The output timestamp in w->tb units: f's pts rescaled exactly (integer
 * arithmetic, rounded to nearest), shifted by the trim start. A frame
 * without one, or one not after the previous, gets the previous + one
 * frame at fps. */
static int64_t pick_pts(pf_video_writer *w, const pf_frame *f)
{
    long double step = (long double)w->fps.den * w->tb.den / ((long double)w->fps.num * w->tb.num);
    int64_t inc = step >= 1 ? (int64_t)(step + 0.5L) : 1;
    int64_t next = w->last_pts < 0 ? 0 : w->last_pts + inc;
    if (f->pts == PF_NOPTS || f->time_base.num <= 0 || f->time_base.den <= 0) return next;
    /* (pts * tbf.num / tbf.den - start) * tb.den / tb.num, in long double:
     * exact for 64-bit pts of any real stream. */
    long double t = (long double)f->pts * f->time_base.num / f->time_base.den - w->start_s;
    long double v = t * w->tb.den / w->tb.num;
    if (!(v > -9e15L && v < 9e15L)) return next;
    int64_t pts = (int64_t)(v < 0 ? v - 0.5L : v + 0.5L);
    return pts > w->last_pts ? pts : next;
}

static pf_status check_frame(const pf_video_writer *w, const pf_frame *f)
{
    if (!f) return pf_set_error(PF_ERR_INVALID, "pf_video_writer_write: %s: frame is NULL", w->name);
    if (f->format != w->input_format || f->width != w->width || f->height != w->height)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_video_writer_write: %s: frame %lld is %s %dx%d, the writer takes "
                            "%s %dx%d",
                            w->name, (long long)w->frames, pf_pixfmt_name(f->format), f->width,
                            f->height, pf_pixfmt_name(w->input_format), w->width, w->height);
    for (int i = 0; i < pf_pixfmt_num_planes(f->format); i++)
        if (!f->data[i])
            return pf_set_error(PF_ERR_INVALID, "pf_video_writer_write: %s: plane %d is NULL",
                                w->name, i);
    if (!pf_io_host_frame(f))
        return pf_set_error(PF_ERR_INVALID,
                            "pf_video_writer_write: %s: the frame is in device memory; copy it "
                            "to the host first",
                            w->name);
    return PF_OK;
}

pf_status pf_video_writer_write(pf_video_writer *w, const pf_frame *f)
{
    PF_CHECK_ARG(w, "pf_video_writer_write", "writer is NULL");
    if (w->closed)
        return pf_set_error(PF_ERR_CLOSED, "pf_video_writer_write: %s: the writer is closed",
                            w->name);
    if (w->failed != PF_OK)
        return pf_set_error(w->failed, "pf_video_writer_write: %s: an earlier write failed",
                            w->name);
    pf_status st = check_frame(w, f);
    if (st != PF_OK) return st;
    /* The trim window: a tick's tolerance so a frame exactly at start_s is
     * kept whatever the float rounding of its time. */
    double t = frame_time(w, f), eps = 1e-6;
    if (t < w->start_s - eps || (w->end_s >= 0 && t >= w->end_s - eps) ||
        (w->max_frames > 0 && w->frames >= w->max_frames)) {
        w->dropped++;
        return PF_OK;
    }
    int64_t pts = pick_pts(w, f);
    double end = t + frame_length(w, f);
    switch (w->kind) {
    case DST_Y4M: {
        const pf_frame *src = f;
        if (w->ops) {
            /* RGB -> YUV with the writer's colour (else the frame's). */
            pf_frame view = *f;
            if (w->color.range || w->color.matrix) view.color = w->color;
            view.color.range = w->y4m_full ? PF_COLOR_RANGE_FULL : PF_COLOR_RANGE_LIMITED;
            pf_color_params cp = pf_color_params_for(&view);
            st = pf_ops_convert(w->ops, f, &w->scratch, &cp);
            if (st == PF_OK) st = pf_stream_synchronize(w->stream);
            src = &w->scratch;
        }
        if (st == PF_OK) st = pf_y4m_write_frame(w->fp, w->name, src);
        break;
    }
    case DST_RAW: st = pf_raw_write_frame(w->fp, w->name, f); break;
    case DST_FFMPEG:
        /* Copied streams first up to the end of this frame, then the frame:
         * the muxer interleaves by time. */
        st = pf_ffenc_copy_until(w->ff, end);
        if (st == PF_OK) st = pf_ffenc_write(w->ff, f, pts);
        break;
    }
    if (st != PF_OK) {
        if (st == PF_ERR_IO) w->failed = st;
        return st;
    }
    w->last_pts = pts;
    w->last_end_s = end;
    w->frames++;
    return PF_OK;
}

pf_status pf_video_writer_close(pf_video_writer *w)
{
    PF_CHECK_ARG(w, "pf_video_writer_close", "writer is NULL");
    if (w->closed) return w->failed;
    w->closed = true;
    pf_status st = PF_OK;
    if (w->ff) {
        /* The rest of the copied streams: up to the end of the last frame
         * when the video was cut short (frames, duration), else all. */
        bool cut = w->max_frames > 0 || w->end_s >= 0;
        if (w->failed == PF_OK) st = pf_ffenc_copy_until(w->ff, cut ? w->last_end_s : 1e300);
        if (w->failed == PF_OK && st == PF_OK) {
            st = pf_ffenc_finish(w->ff);
        } else {
            /* The output is lost (a temporary to delete, a receiver gone):
             * flushing the encoder into it would only cost time. */
            pf_ffenc_discard(&w->ff);
        }
    }
    w->fp = NULL;
    if (w->failed == PF_OK) w->failed = st;
    /* Only a complete file gets the final name. */
    if (w->failed == PF_OK)
        w->failed = pf_output_commit(&w->out);
    else
        pf_output_abort(&w->out);
    return w->failed;
}

void pf_video_writer_destroy(pf_video_writer **pw)
{
    if (!pw || !*pw) return;
    pf_video_writer *w = *pw;
    *pw = NULL;
    if (!w->closed && pf_video_writer_close(w) != PF_OK)
        PF_LOGE("pf_video_writer_destroy: %s", pf_last_error());
    pf_ffenc_free(&w->ff);
    pf_output_abort(&w->out); /* only left after a failed create */
    pf_frame_unref(&w->scratch);
    pf_ops_destroy(&w->ops);
    pf_stream_destroy(&w->stream);
    free(w->name);
    free(w->path);
    free(w);
}

void pf_video_writer_discard(pf_video_writer **pw)
{
    if (!pw || !*pw) return;
    pf_video_writer *w = *pw;
    if (!w->closed) {
        /* No flush, no trailer: the temporary is removed below. */
        w->closed = true;
        w->failed = PF_ERR_CANCELLED;
        pf_ffenc_discard(&w->ff);
    }
    pf_video_writer_destroy(pw); /* aborts the pf_output still held */
}

int64_t pf_video_writer_frame_count(const pf_video_writer *w)
{
    return w ? w->frames : 0;
}

pf_status pf_parse_time(const char *text, double *seconds)
{
    PF_CHECK_ARG(text && seconds, "pf_parse_time", "NULL argument");
    /* Up to three ':'-separated fields, the last one may have a fraction:
     * [HH:]MM:SS[.frac] or plain seconds. */
    double fields[3] = {0, 0, 0};
    int n = 0;
    const char *p = text;
    for (;;) {
        if (n == 3) goto bad;
        char *end = NULL;
        if (*p < '0' || *p > '9') goto bad; /* no sign, no space, no empty field */
        double v = strtod(p, &end);
        if (end == p || !(v >= 0 && v < 1e12)) goto bad;
        fields[n++] = v;
        if (*end == '\0') break;
        if (*end != ':' || memchr(p, '.', (size_t)(end - p))) goto bad; /* fraction: last only */
        p = end + 1;
    }
    double s = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0 && fields[i] >= 60) goto bad; /* MM and SS below 60 after the first */
        s = s * 60 + fields[i];
    }
    *seconds = s;
    return PF_OK;
bad:
    return pf_set_error(PF_ERR_INVALID,
                        "time '%s': expected seconds (12.5) or [HH:]MM:SS[.frac] (00:01:02.5)",
                        text);
}
