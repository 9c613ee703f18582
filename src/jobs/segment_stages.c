/* The segment job's own stages around the built-in ones.
 *
 *   reader (CPU source) -> ops.preprocess -> nn.infer -> ops.mask_post
 *     -> compositor (this file; on the device) -> writer (CPU sink)
 *
 * The reader decodes a video (frames from the reader's pool) or one image
 * per call; an image that cannot be read is reported, counted and skipped,
 * so the rest of a batch completes. The compositor is pf_ops_composite on
 * the stage's stream: unlike ops.composite it takes an image background,
 * uploaded once to the stage's device. The writer encodes the composited
 * frames (a video writer or one image file per input) and the masks as
 * 8-bit images or a gray video. The runtime moves frames between the CPU
 * stages and device stages (counted transfers).
 *
 * On a GPU with NVDEC decode the reader is a device stage (its frames are
 * NV12 in device memory), so preprocess, inference, mask and composite
 * never see host memory; with -o null and no masks the writer is a device
 * stage too and the run makes no transfer at all.
 *
 * Latency mode lets one frame in at a time: the reader waits until the
 * writer has finished the previous frame and stamps the new one before it
 * decodes it, so the pipeline's end-to-end figure is decode -> composite
 * done (written, with an output) without queueing. The wait gives up after
 * a second so that a frame lost to an error cannot hang the reader. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "jobs/segment_impl.h"

/* Latency gate ------------------------------------------------------------------------------ */

static void gate_enter(seg_job *job)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    pthread_mutex_lock(&job->gate_mu);
    while (job->in_flight > 0)
        if (pthread_cond_timedwait(&job->gate_cv, &job->gate_mu, &until) == ETIMEDOUT) break;
    job->in_flight++;
    pthread_mutex_unlock(&job->gate_mu);
}

static void gate_leave(seg_job *job, int n)
{
    pthread_mutex_lock(&job->gate_mu);
    job->in_flight = job->in_flight > n ? job->in_flight - n : 0;
    pthread_cond_signal(&job->gate_cv);
    pthread_mutex_unlock(&job->gate_mu);
}

/* Reader ------------------------------------------------------------------------------------ */

typedef struct seg_source {
    seg_job *job;
    int next;
    int64_t emitted;         /* video frames handed on (--frames) */
} seg_source;

/* Seconds of frame f on the source clock, counted from the stream's start. */
static double source_time(const seg_job *job, const pf_frame *f)
{
    if (f->pts != PF_NOPTS && f->time_base.num > 0 && f->time_base.den > 0)
        return (double)f->pts * f->time_base.num / f->time_base.den - job->info.start_time_s;
    if (job->info.fps.num > 0 && job->info.fps.den > 0)
        return (double)f->index * job->info.fps.den / job->info.fps.num;
    return (double)f->index / 30.0;
}

/* The next frame inside --start/--duration/--frames: frames before the
 * start are decoded and dropped here (frame-accurate, cheap next to
 * segmenting them); the end of the window is the end of the input. The
 * writer gets the same window, for the copied audio. */
static pf_status read_trimmed(seg_source *s, seg_job *job, pf_frame *out)
{
    for (;;) {
        if (job->max_frames > 0 && s->emitted >= job->max_frames) return PF_EOF;
        pf_status st = pf_video_reader_read(job->reader, out);
        if (st != PF_OK) return st;
        /* A camera opened after the start (open_later): its stream's facts
         * (rate, start time) are known from its first frame on; the writer
         * reads them after this frame reaches it. */
        if (job->info.width == 0) pf_video_reader_info(job->reader, &job->info);
        double t = source_time(job, out), eps = 1e-6;
        if (t < job->start_s - eps) {
            pf_frame_unref(out);
            continue;
        }
        if (job->duration_s > 0 && t >= job->start_s + job->duration_s - eps) {
            pf_frame_unref(out);
            return PF_EOF;
        }
        s->emitted++;
        return PF_OK;
    }
}

static pf_status source_fn(void *user, pf_stage_ctx *ctx, pf_item *out)
{
    (void)ctx;
    seg_source *s = user;
    seg_job *job = s->job;
    if (job->gate) {
        gate_enter(job);
        out->t_source_ns = pf_time_ns();
    }
    if (job->kind == SEG_VIDEO) {
        /* One of several streams whose output failed: it leaves the mux
         * (nothing would be written), the others go on. */
        if (atomic_load(&job->output_failed)) {
            if (job->gate) gate_leave(job, 1);
            return PF_EOF;
        }
        /* A broken stream stops the run (one of several: leaves it); the
         * reader's message names the file. */
        pf_status st = read_trimmed(s, job, &out->frame);
        if (st < 0 && job->stage_suffix[0])
            snprintf(job->stream_error, sizeof job->stream_error, "%s", pf_last_error());
        if (st != PF_OK && job->gate) gate_leave(job, 1);
        return st;
    }
    while (s->next < job->num_inputs) {
        int i = s->next++;
        pf_status st = pf_image_read(job->inputs[i], PF_PIXFMT_RGB24, &out->frame);
        if (st == PF_OK) {
            out->frame.index = i;
            out->user = (void *)(intptr_t)i;
            return PF_OK;
        }
        seg_error(job, "%s (skipped)", pf_last_error());
        atomic_fetch_add(&job->images_failed, 1);
    }
    if (job->gate) gate_leave(job, 1);
    return PF_EOF;
}

pf_status seg_add_source(pf_pipeline *p, seg_job *job, pf_stage **src)
{
    seg_source *s = calloc(1, sizeof *s);
    if (!s) return PF_ERR_NOMEM;
    s->job = job;
    char name[32];
    snprintf(name, sizeof name, "read%s", job->stage_suffix);
    pf_stage_desc d = pf_stage_desc_default();
    d.name = name;
    d.source = source_fn;
    /* One of several streams: a live input that gives up ends its stream
     * only; the others go on. */
    d.source_errors_leave = job->live && job->stage_suffix[0];
    d.destroy = free;
    d.user = s;
    if (job->info.hw_decode && job->dev) {
        d.device = job->dev;
        d.produces = PF_MEM_DEVICE;
    }
    pf_status st = pf_pipeline_add_stage(p, &d, src);
    if (st != PF_OK) free(s);
    return st;
}

/* Compositor ---------------------------------------------------------------------------------- */

typedef struct seg_comp {
    seg_job *job;
    bool cuda;
    pf_mem_domain domain;
    pf_pixfmt format;
    pf_background bg;
    pf_ops *ops;
    pf_frame image;          /* the background image where the stage runs */
} seg_comp;

static void comp_stop(void *user)
{
    seg_comp *s = user;
    pf_ops_destroy(&s->ops);
    pf_frame_unref(&s->image); /* stream-ordered memory: while the stream lives */
}

static void comp_destroy(void *user)
{
    comp_stop(user);
    free(user);
}

static pf_status comp_prepare(seg_comp *s, pf_stage_ctx *ctx)
{
    pf_stream *stream = pf_stage_stream(ctx);
    pf_status st = PF_OK;
    if (!s->ops) {
        pf_ops_params op = pf_ops_params_default();
        op.stream = stream;
        st = pf_ops_create(&op, &s->ops);
    }
    if (st == PF_OK && s->bg.kind == PF_BG_IMAGE && !s->image.buf[0]) {
        const pf_frame *host = &s->job->bg_image;
        if (!s->cuda) {
            pf_frame_ref(&s->image, host);
        } else {
            pf_allocator *a = pf_stage_allocator(ctx, PF_MEM_DEVICE);
            st = a ? pf_frame_alloc(&s->image, host->format, host->width, host->height, a, stream)
                   : PF_ERR_NOMEM;
            if (st == PF_OK) st = pf_frame_copy_async(&s->image, host, stream);
            /* The host image is pageable: wait before it could be released. */
            if (st == PF_OK) st = pf_stream_synchronize(stream);
        }
        s->bg.image = &s->image;
    }
    return st;
}

static pf_status comp_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    seg_comp *s = user;
    pf_status st = comp_prepare(s, ctx);
    pf_allocator *a = st == PF_OK ? pf_stage_allocator(ctx, s->domain) : NULL;
    if (st == PF_OK && !a) st = PF_ERR_NOMEM;
    for (int i = 0; i < n && st == PF_OK; i++) {
        pf_item *it = &items[i];
        pf_frame out = {0};
        st = pf_frame_alloc(&out, s->format, it->frame.width, it->frame.height, a,
                            pf_stage_stream(ctx));
        if (st == PF_OK) {
            /* YUV frames in their own matrix and range (full-range and
             * BT.709 input would otherwise come out off-colour). */
            pf_color_params cp = pf_color_params_for(&it->frame);
            s->bg.matrix = cp.matrix;
            s->bg.range = cp.range;
            st = pf_ops_composite(s->ops, &it->frame, &it->tensor, &s->bg, &out);
        }
        if (st == PF_OK) {
            pf_frame_copy_props(&out, &it->frame); /* with the input image's ICC profile */
            pf_frame_unref(&it->frame);
            it->frame = out;
            memset(&out, 0, sizeof out);
            /* Only the mask writer needs the mask past this point. */
            if (!s->job->mask_out[0]) pf_tensor_unref(&it->tensor);
            st = pf_stage_emit(ctx, it);
            memset(it, 0, sizeof *it);
        }
        pf_frame_unref(&out);
    }
    for (int i = 0; i < n; i++) pf_item_unref(&items[i]);
    return st;
}

void seg_background(const seg_job *job, pf_background *bg)
{
    bg->kind = job->bg == SEG_BG_BLUR    ? PF_BG_BLUR
               : job->bg == SEG_BG_COLOR ? PF_BG_COLOR
               : job->bg == SEG_BG_IMAGE ? PF_BG_IMAGE
                                         : PF_BG_NONE;
    bg->blur_sigma = 12.0f;
    memcpy(bg->color, job->color, 3);
}

pf_status seg_add_composite(pf_pipeline *p, seg_job *job, pf_device *dev, const char *name,
                            pf_stage **out)
{
    seg_comp *s = calloc(1, sizeof *s);
    if (!s) return PF_ERR_NOMEM;
    s->job = job;
    s->cuda = dev && pf_device_get_type(dev) == PF_DEVICE_CUDA;
    s->domain = s->cuda ? PF_MEM_DEVICE : PF_MEM_HOST;
    s->format = job->alpha ? PF_PIXFMT_RGBA : PF_PIXFMT_RGB24;
    seg_background(job, &s->bg);
    /* Video frames are converted with their own colour (comp_process). */
    pf_stage_desc d = pf_stage_desc_default();
    d.name = name;
    d.process = comp_process;
    d.stop = comp_stop;
    d.destroy = comp_destroy;
    d.user = s;
    d.device = dev;
    d.accepts = d.produces = s->domain;
    pf_status st = pf_pipeline_add_stage(p, &d, out);
    if (st != PF_OK) free(s);
    return st;
}

/* Writer ---------------------------------------------------------------------------------------- */

typedef struct seg_sink {
    seg_job *job;
    bool device;             /* -o null without masks on a GPU: a device stage */
    pf_video_writer *w, *mask_w;
    pf_frame gray;           /* the 8-bit mask, reused while the size stays */
    bool write_error;        /* a write failed and was reported: close() says it again */
    int64_t masks;           /* masks written (video: the frame number) */
} seg_sink;

static void writer_close(seg_job *job, pf_video_writer **w, bool reported)
{
    if (!*w) return;
    if (pf_video_writer_close(*w) != PF_OK) {
        if (!reported) seg_error(job, "%s", pf_last_error());
        atomic_store(&job->write_failed, 1);
    }
    pf_video_writer_destroy(w);
}

/* One of several streams: its output failed (a receiver gone, a full
 * disk). Reported once; the stream's writers are dropped (nothing more is
 * sent, no trailer waited for), its reader ends it, and the run goes on for
 * the other streams and fails at the end (write_failed). A single stream's
 * output error stops the run as before. */
static pf_status stream_output_failed(seg_sink *s, pf_status st)
{
    seg_job *job = s->job;
    if (!job->stage_suffix[0]) return st;
    if (!atomic_exchange(&job->output_failed, 1)) {
        /* The summary's "FAILED: ..." for this stream (read after the run). */
        snprintf(job->stream_error, sizeof job->stream_error, "%s", pf_last_error());
        seg_error(job, "stream %d (%s): output failed, the stream stops (the others go on): %s",
                  job->stream_index, job->input_label, job->stream_error);
        atomic_store(&job->write_failed, 1);
    }
    pf_video_writer_discard(&s->w);
    pf_video_writer_discard(&s->mask_w);
    return PF_OK;
}

static void sink_stop(void *user)
{
    seg_sink *s = user;
    writer_close(s->job, &s->w, s->write_error);
    writer_close(s->job, &s->mask_w, s->write_error);
}

static void sink_destroy(void *user)
{
    seg_sink *s = user;
    sink_stop(s);
    pf_frame_unref(&s->gray);
    free(s);
}

static pf_status open_writer(seg_job *job, const char *path, const pf_frame *f, bool alpha,
                             pf_video_writer **out)
{
    pf_video_writer_params wp = pf_video_writer_params_default();
    wp.path = path;
    wp.width = f->width;
    wp.height = f->height;
    wp.input_format = f->format;
    if (job->info.fps.num > 0 && job->info.fps.den > 0) wp.fps = job->info.fps;
    /* Kept from the input: clock, colour, aspect, rotation; the trim window
     * (on the source clock, so copied audio is cut the same way). */
    wp.time_base = f->time_base.num > 0 && f->time_base.den > 0 ? f->time_base
                                                                : job->info.time_base;
    wp.color = f->color;
    wp.sar = f->sar.num > 0 ? f->sar : job->info.sar;
    wp.rotation = job->info.rotation;
    wp.start_s = job->info.start_time_s + job->start_s;
    wp.duration_s = job->duration_s;
    wp.max_frames = job->max_frames;
    /* The other streams (audio...) of the input, except for the mask video
     * and inputs that cannot be read twice (stdin, a FIFO, /dev/fd/N: a
     * second open would hang or take bytes from the video reader). */
    struct stat in_sb;
    if (f->format != PF_PIXFMT_GRAY8 && !job->no_audio && job->info.other_streams > 0) {
        if (strcmp(job->inputs[0], "-") != 0 && stat(job->inputs[0], &in_sb) == 0 &&
            S_ISREG(in_sb.st_mode))
            wp.copy_streams_from = job->inputs[0];
        else
            jobs_say(job->sink, PF_LOG_WARN, "%s is %s: its audio and other streams are not "
                     "copied (it cannot be read twice)", job->input_label,
                     pf_io_is_live(job->inputs[0]) ? "a live stream" : "a pipe");
    }
    if (f->format == PF_PIXFMT_GRAY8) {
        /* A mask: no colour of the input's to keep. */
        memset(&wp.color, 0, sizeof wp.color);
        wp.color.range = PF_COLOR_RANGE_FULL;
    }
    if (job->output_timeout_ms > 0)
        wp.open_timeout_ms = wp.write_timeout_ms = job->output_timeout_ms;
    wp.muxer_options = job->output_options;
    if (job->codec) wp.codec = job->codec;
    if (job->preset) wp.preset = job->preset;
    if (job->crf != -2) wp.crf = job->crf;
    if (job->bitrate > 0) wp.bitrate = job->bitrate;
    if (alpha) {
        const char *ext = strrchr(path, '.');
        if (ext && !strcmp(ext, ".mkv")) {
            wp.codec = "ffv1";
            wp.codec_pixfmt = "bgra";
        } else if (ext && !strcmp(ext, ".webm")) {
            wp.codec = "libvpx-vp9";
            wp.codec_pixfmt = "yuva420p";
        } else {
            wp.codec = "qtrle";
            wp.codec_pixfmt = "argb";
        }
        wp.preset = NULL;
        wp.crf = -1;
    }
    return pf_video_writer_create(&wp, out);
}

pf_status seg_mask_to_gray(const pf_tensor *t, pf_frame *gray)
{
    if (t->dtype != PF_DTYPE_F32 || t->ndim < 2 || !pf_tensor_is_contiguous(t))
        return PF_ERR_INVALID;
    int h = (int)t->shape[t->ndim - 2], w = (int)t->shape[t->ndim - 1];
    if (gray->width != w || gray->height != h || !gray->buf[0]) {
        pf_frame_unref(gray);
        pf_status st = pf_frame_alloc(gray, PF_PIXFMT_GRAY8, w, h, NULL, NULL);
        if (st != PF_OK) return st;
    }
    const float *m = t->data;
    for (int y = 0; y < h; y++) {
        uint8_t *row = gray->data[0] + (size_t)y * gray->stride[0];
        for (int x = 0; x < w; x++) {
            float v = m[(size_t)y * (size_t)w + (size_t)x];
            v = v > 0 ? (v < 1 ? v : 1) : 0; /* NaN -> 0 */
            row[x] = (uint8_t)(v * 255.0f + 0.5f);
        }
    }
    return PF_OK;
}

static pf_status write_mask(seg_sink *s, const pf_item *it, int image)
{
    seg_job *job = s->job;
    if (!it->tensor.buf) return PF_OK;
    pf_status st = seg_mask_to_gray(&it->tensor, &s->gray);
    if (st != PF_OK) {
        seg_error(job, "cannot write the mask of %s: not an f32 mask",
                  job->kind == SEG_IMAGES ? job->inputs[image] : job->input_label);
        return PF_ERR_INTERNAL;
    }
    /* The mask video keeps the frames' timing (and trim window). */
    pf_frame_copy_props(&s->gray, &it->frame);
    pf_buffer_unref(&s->gray.icc); /* a mask, not the image's colours */
    if (job->kind == SEG_VIDEO && !job->mask_is_dir) {
        if (!s->mask_w) st = open_writer(job, job->mask_out, &s->gray, false, &s->mask_w);
        if (st == PF_OK) st = pf_video_writer_write(s->mask_w, &s->gray);
        s->masks++;
        return st;
    }
    char path[SEG_PATH_MAX];
    seg_image_output(job, job->kind == SEG_VIDEO ? (int)s->masks : image, true, path, sizeof path);
    s->masks++;
    st = pf_image_write(path, &s->gray, NULL);
    if (st != PF_OK && job->kind == SEG_IMAGES) {
        seg_error(job, "%s (mask not written)", pf_last_error());
        atomic_fetch_add(&job->images_failed, 1);
        return PF_OK;
    }
    return st;
}

static pf_status sink_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    seg_sink *s = user;
    seg_job *job = s->job;
    pf_status st = PF_OK;
    /* A device sink (-o null): done means the stream has passed the
     * composite, whose event the runtime made this stream wait for. */
    if (s->device) st = pf_stream_synchronize(pf_stage_stream(ctx));
    for (int i = 0; i < n && st == PF_OK; i++) {
        const pf_item *it = &items[i];
        int image = (int)(intptr_t)it->user;
        if (atomic_load(&job->output_failed)) {
            /* frames still in flight when the output failed: dropped */
        } else if (job->null_output) {
            /* composited; nothing to write */
        } else if (job->kind == SEG_VIDEO) {
            if (!s->w) st = open_writer(job, job->output, &it->frame, job->alpha, &s->w);
            if (st == PF_OK) st = pf_video_writer_write(s->w, &it->frame);
        } else {
            char path[SEG_PATH_MAX];
            seg_image_output(job, image, false, path, sizeof path);
            if (pf_image_write(path, &it->frame, NULL) != PF_OK) {
                seg_error(job, "%s (not written)", pf_last_error());
                atomic_fetch_add(&job->images_failed, 1);
            }
        }
        if (st == PF_OK && job->mask_out[0] && !atomic_load(&job->output_failed))
            st = write_mask(s, it, image);
        if (st != PF_OK && job->kind == SEG_VIDEO) {
            s->write_error = true; /* the pipeline reports it */
            st = stream_output_failed(s, st);
        }
        else if (st == PF_OK && !atomic_load(&job->output_failed)) {
            if (atomic_fetch_add(&job->frames_done, 1) == 0) {
                long long zero = 0;
                atomic_compare_exchange_strong(&job->first_out_ns, &zero, (long long)pf_time_ns());
            }
            jobs_frame_done(job->sink, it->source, it->seq, it->t_source_ns);
        }
    }
    for (int i = 0; i < n; i++) pf_item_unref(&items[i]);
    if (job->gate) gate_leave(job, n);
    return st;
}

pf_status seg_add_sink(pf_pipeline *p, seg_job *job, pf_stage **out)
{
    seg_sink *s = calloc(1, sizeof *s);
    if (!s) return PF_ERR_NOMEM;
    s->job = job;
    char name[32];
    snprintf(name, sizeof name, "write%s", job->stage_suffix);
    pf_stage_desc d = pf_stage_desc_default();
    d.name = name;
    d.process = sink_process;
    d.stop = sink_stop;
    d.destroy = sink_destroy;
    d.user = s;
    if (job->null_output && !job->mask_out[0] && job->dev &&
        pf_device_get_type(job->dev) == PF_DEVICE_CUDA) {
        s->device = true;
        d.device = job->dev;
        d.accepts = d.produces = PF_MEM_DEVICE;
    }
    pf_status st = pf_pipeline_add_stage(p, &d, out);
    if (st != PF_OK) free(s);
    return st;
}
