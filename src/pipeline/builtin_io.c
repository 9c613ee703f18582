/* Built-in io stages: io.video_source, io.image_source, io.video_sink,
 * io.image_sink (pixflow/io.h underneath).
 *
 * Sources open their input in the constructor, so a YAML file naming a
 * missing or unreadable file fails at load with the file in the message.
 * Frames come from pools (the video reader's own; for images a pool sized
 * from the first image, with images of another size decoded into a fresh
 * frame, counted in the log), so the steady state allocates nothing. The
 * stages always work in host memory (`memory pinned` for pools that feed a
 * GPU): decoders and encoders run on the CPU, and the runtime moves frames
 * to and from device stages. Sinks write on one thread in arrival order
 * (video) or on any number of threads (images). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/error.h"
#include "../io/expand.h"
#include "../io/io_impl.h"
#include "builtin_io.h"
#include "frame_pool.h"
#include "pixflow/io.h"

static const char *const memories[] = {"host", "pinned", NULL};

/* Host or pinned output on any stage: io never produces device memory. */
static void io_domain(bi_stage *s, pf_stage_desc *d, pf_mem_domain m)
{
    s->domain = m;
    d->accepts = m;
    d->produces = m;
}

/* io.video_source ----------------------------------------------------------------------- */

typedef struct vsrc {
    bi_stage base;
    pf_video_reader_params rp;
    char *path, *container, *protocols;
    char shown[1024];          /* path as printed (pf_io_redact: no credentials) */
    bool loop;
    int32_t source;
    int64_t seq;
    pf_video_reader *r;
    bool r_held;               /* path is held as an input (no output may replace it) */
    bool damage_said;         /* this pass's damage was logged */
} vsrc;

static void vsrc_free(bi_stage *b)
{
    vsrc *s = (vsrc *)b;
    pf_video_reader_destroy(&s->r);
    if (s->r_held) pf_io_input_hold(s->path, false);
    free(s->path);
    free(s->container);
    free(s->protocols);
}

/* A live source's breaks, once at its end (the run's summary has no
 * column for them). */
static void vsrc_say_gaps(vsrc *s)
{
    pf_video_reader_stats rs;
    if (pf_video_reader_get_stats(s->r, &rs) != PF_OK ||
        (!rs.reconnects && !rs.reconnect_failures))
        return;
    PF_LOGW("io.video_source: %s: %llu frames, %llu reconnects (%llu failed attempts), "
            "gaps %.2f s, about %llu frames missed",
            s->shown, (unsigned long long)rs.frames, (unsigned long long)rs.reconnects,
            (unsigned long long)rs.reconnect_failures, rs.gap_us / 1e6,
            (unsigned long long)rs.frames_missed);
}

static pf_status vsrc_generate(void *user, pf_stage_ctx *ctx, pf_item *out)
{
    (void)ctx;
    vsrc *s = user;
    pf_frame f = {0};
    pf_status st = pf_video_reader_read(s->r, &f);
    pf_video_reader_stats rs;
    if (st == PF_EOF && !s->damage_said && pf_video_reader_get_stats(s->r, &rs) == PF_OK &&
        rs.corrupt_packets) {
        /* The run's summary has no column for it: say it once per pass. */
        s->damage_said = !s->loop;
        PF_LOGW("io.video_source: %s: %llu frames read, %llu damaged or missing packets "
                "skipped",
                s->shown, (unsigned long long)rs.frames, (unsigned long long)rs.corrupt_packets);
    }
    if (st == PF_EOF) vsrc_say_gaps(s);
    if (st == PF_EOF && s->loop) {
        pf_video_reader_destroy(&s->r);
        st = pf_video_reader_create(&s->rp, &s->r);
        if (st == PF_OK) st = pf_video_reader_read(s->r, &f);
    }
    /* PF_AGAIN: reconnecting; the runtime calls again (and sees a stop). */
    if (st == PF_AGAIN) return PF_AGAIN;
    if (st != PF_OK) return st == PF_EOF ? PF_EOF : pf_error_prefix(st, "io.video_source");
    f.source = s->source;
    memset(out, 0, sizeof *out);
    out->frame = f;
    out->source = s->source;
    out->seq = s->seq++;
    return PF_OK;
}

pf_status bi_video_source_create(bi_args *a, pf_stage_desc *d)
{
    pf_status st;
    vsrc *s = bi_stage_new(sizeof *s, a, d, &st);
    if (!s) return st;
    s->base.free_extra = vsrc_free;
    d->source = vsrc_generate;
    s->rp = pf_video_reader_params_default();
    const char *path = bi_str(a, "path");
    const char *container = bi_str(a, "container");
    int64_t pool, tmo, src, count, rw, rh;
    int mem;
    double fps;
    pf_pixfmt rawfmt = PF_PIXFMT_NONE;
    if (!path) st = bi_error(a, NULL, "missing required parameter 'path' (a video file or -)");
    if (st == PF_OK) st = bi_pixfmt(a, "format", PF_PIXFMT_NONE, false, &s->rp.format);
    if (st == PF_OK) st = bi_bool(a, "loop", false, &s->loop);
    if (st == PF_OK) st = bi_int(a, "pool", 8, 1, 1024, &pool);
    if (st == PF_OK) st = bi_int(a, "pool_timeout_ms", -1, -1, 3600000, &tmo);
    if (st == PF_OK) st = bi_int(a, "source", 0, 0, INT32_MAX, &src);
    if (st == PF_OK) st = bi_enum(a, "memory", memories, s->base.cuda ? 1 : 0, &mem);
    if (st == PF_OK) st = bi_num(a, "fps", 0, 0, false, 1e6, false, &fps);
    if (st == PF_OK) st = bi_int(a, "count", 0, 0, INT64_MAX, &count);
    if (st == PF_OK) st = bi_int(a, "raw_width", 0, 0, PF_FRAME_MAX_DIM, &rw);
    if (st == PF_OK) st = bi_int(a, "raw_height", 0, 0, PF_FRAME_MAX_DIM, &rh);
    if (st == PF_OK) st = bi_pixfmt(a, "raw_format", PF_PIXFMT_NONE, false, &rawfmt);
    bool realtime = false, low_latency = false;
    int64_t retries, rdelay, rmax, otmo, rtmo;
    const char *protocols = bi_str(a, "protocols");
    if (st == PF_OK) st = bi_bool(a, "realtime", false, &realtime);
    if (st == PF_OK) st = bi_bool(a, "low_latency", false, &low_latency);
    if (st == PF_OK) st = bi_int(a, "retries", 0, -1, INT32_MAX, &retries);
    if (st == PF_OK) st = bi_int(a, "retry_delay_ms", 500, 0, 3600000, &rdelay);
    if (st == PF_OK) st = bi_int(a, "retry_max_delay_ms", rdelay > 8000 ? rdelay : 8000, rdelay,
                                 3600000, &rmax);
    if (st == PF_OK) st = bi_int(a, "open_timeout_ms", 10000, 0, 3600000, &otmo);
    if (st == PF_OK) st = bi_int(a, "read_timeout_ms", 5000, 0, 3600000, &rtmo);
    if (st == PF_OK && s->loop && path && pf_io_is_live(path))
        st = bi_error(a, "loop", "loop: a live input (URL or camera) cannot be rewound; use "
                                 "retries to reconnect");
    if (st == PF_OK && s->loop && strcmp(path, "-") == 0)
        st = bi_error(a, "loop", "loop: stdin cannot be read twice");
    if (st == PF_OK) {
        s->path = strdup(path);
        s->container = container ? strdup(container) : NULL;
        s->protocols = protocols ? strdup(protocols) : NULL;
        pf_io_redact(path, s->shown, sizeof s->shown);
        s->rp.path = s->path;
        s->rp.container = s->container;
        s->rp.protocols = s->protocols;
        s->rp.realtime = realtime;
        s->rp.low_latency = low_latency;
        s->rp.retries = (int)retries;
        s->rp.retry_delay_ms = rdelay;
        s->rp.retry_max_delay_ms = rmax;
        s->rp.nonblocking_retry = true; /* a stop is seen while reconnecting */
        s->rp.open_timeout_ms = otmo;
        s->rp.read_timeout_ms = rtmo;
        s->rp.pool_size = (int)pool;
        s->rp.pool_timeout_us = tmo < 0 ? -1 : tmo * 1000;
        s->rp.domain = (pf_mem_domain)mem;
        s->rp.raw_width = (int)rw;
        s->rp.raw_height = (int)rh;
        s->rp.raw_format = rawfmt;
        s->source = (int32_t)src;
        d->fps = fps;
        d->max_items = count;
        io_domain(&s->base, d, (pf_mem_domain)mem);
        st = pf_video_reader_create(&s->rp, &s->r);
        if (st != PF_OK) st = bi_error(a, "path", "%s", pf_last_error());
    }
    if (st == PF_OK) {
        pf_io_input_hold(s->path, true);
        s->r_held = true;
    }
    return bi_create_end(s, d, st);
}

/* io.image_source ----------------------------------------------------------------------- */

typedef struct isrc {
    bi_stage base;
    char **files;
    int num_files;
    pf_pixfmt format;
    bool loop;
    int32_t source;
    int pool_frames;
    pf_mem_domain memory;
    pf_mutex lock;
    pf_frame_pool *pool;      /* sized from the first image */
    int pool_w, pool_h;
    pf_pixfmt pool_fmt;
    int64_t pool_timeout_us;
    int next;
    int64_t seq;
    bool warned;
    int num_held;              /* files[0..num_held) are held as inputs */
} isrc;

static void isrc_free(bi_stage *b)
{
    isrc *s = (isrc *)b;
    for (int i = 0; i < s->num_held; i++) pf_io_input_hold(s->files[i], false);
    for (int i = 0; i < s->num_files; i++) free(s->files[i]);
    free(s->files);
    pf_frame_pool_destroy(&s->pool);
    pf_mutex_destroy(&s->lock);
}

static bool add_file(isrc *s, const char *path)
{
    char **nf = realloc(s->files, sizeof *nf * (size_t)(s->num_files + 1));
    if (!nf) return false;
    s->files = nf;
    s->files[s->num_files] = strdup(path);
    return s->files[s->num_files++] != NULL;
}

/* One entry of `path`: a directory (its images, sorted), a glob pattern, or
 * a file (io/expand.h). */
static pf_status add_entry(isrc *s, bi_args *a, const char *entry)
{
    pf_path_list l = {0};
    pf_expand_what what;
    pf_status st = pf_expand_input(entry, PF_EXPAND_IMAGES, &l, &what);
    for (int i = 0; st == PF_OK && i < l.count; i++)
        if (!add_file(s, l.paths[i])) st = PF_ERR_NOMEM;
    int n = l.count;
    pf_path_list_free(&l);
    if (st == PF_ERR_NOMEM) return pf_set_error(PF_ERR_NOMEM, "io.image_source: out of host memory");
    if (what == PF_EXPAND_DIR && (st != PF_OK || n == 0))
        return bi_error(a, "path", "path: directory '%s' has no .png/.jpg/.jpeg files", entry);
    if (what == PF_EXPAND_GLOB && (st != PF_OK || n == 0))
        return bi_error(a, "path", "path: no file matches '%s'", entry);
    return st;
}

static pf_status isrc_generate(void *user, pf_stage_ctx *ctx, pf_item *out)
{
    (void)ctx;
    isrc *s = user;
    pf_mutex_lock(&s->lock);
    if (s->next >= s->num_files && s->loop) s->next = 0;
    if (s->next >= s->num_files) {
        pf_mutex_unlock(&s->lock);
        return PF_EOF;
    }
    const char *path = s->files[s->next++];
    int64_t seq = s->seq++;
    pf_mutex_unlock(&s->lock);
    pf_image_info info;
    pf_status st = pf_image_probe(path, &info);
    if (st != PF_OK) return pf_error_prefix(st, "io.image_source");
    pf_pixfmt fmt = s->format != PF_PIXFMT_NONE ? s->format : info.format;
    pf_mutex_lock(&s->lock);
    if (!s->pool) {
        pf_frame_pool_params pp = {.format = fmt, .width = info.width, .height = info.height,
                                   .count = s->pool_frames, .domain = s->memory,
                                   .name = s->base.name};
        st = pf_frame_pool_create(&pp, &s->pool);
        s->pool_w = info.width;
        s->pool_h = info.height;
        s->pool_fmt = fmt;
    }
    bool fits = s->pool_w == info.width && s->pool_h == info.height && s->pool_fmt == fmt;
    if (st == PF_OK && !fits && !s->warned) {
        s->warned = true;
        PF_LOGI("io.image_source %s: %s is %dx%d %s, not the first image's %dx%d %s: such images "
                "are decoded outside the pool",
                s->base.name, path, info.width, info.height, pf_pixfmt_name(fmt), s->pool_w,
                s->pool_h, pf_pixfmt_name(s->pool_fmt));
    }
    pf_mutex_unlock(&s->lock);
    if (st != PF_OK) return st;
    pf_frame f = {0};
    if (fits) {
        st = pf_frame_pool_acquire(s->pool, s->pool_timeout_us, &f);
        if (st == PF_TIMEOUT || st == PF_AGAIN)
            return pf_set_error(PF_ERR_BUSY,
                                "io.image_source: all %d pool frames still in use (downstream "
                                "holds them; raise 'pool')",
                                s->pool_frames);
        if (st == PF_OK) st = pf_image_read_into(path, &f);
    } else {
        st = pf_image_read(path, fmt, &f);
    }
    if (st != PF_OK) {
        pf_frame_unref(&f);
        return pf_error_prefix(st, "io.image_source");
    }
    f.pts = seq;
    f.index = seq;
    f.source = s->source;
    memset(out, 0, sizeof *out);
    out->frame = f;
    out->source = s->source;
    out->seq = seq;
    return PF_OK;
}

pf_status bi_image_source_create(bi_args *a, pf_stage_desc *d)
{
    pf_status st;
    isrc *s = bi_stage_new(sizeof *s, a, d, &st);
    if (!s) return st;
    pf_mutex_init(&s->lock);
    s->base.free_extra = isrc_free;
    d->source = isrc_generate;
    const char *path = bi_str(a, "path");
    int64_t pool, tmo, src, count;
    int mem;
    double fps;
    if (!path)
        st = bi_error(a, NULL,
                      "missing required parameter 'path' (image files, a directory or a glob, "
                      "comma-separated)");
    if (st == PF_OK) st = bi_pixfmt(a, "format", PF_PIXFMT_RGB24, false, &s->format);
    if (st == PF_OK && s->format != PF_PIXFMT_RGB24 && s->format != PF_PIXFMT_BGR24 &&
        s->format != PF_PIXFMT_RGBA && s->format != PF_PIXFMT_GRAY8)
        st = bi_error(a, "format", "format '%s': images decode to rgb24|bgr24|rgba|gray8",
                      pf_pixfmt_name(s->format));
    if (st == PF_OK) st = bi_bool(a, "loop", false, &s->loop);
    if (st == PF_OK) st = bi_int(a, "pool", 4, 1, 1024, &pool);
    if (st == PF_OK) st = bi_int(a, "pool_timeout_ms", -1, -1, 3600000, &tmo);
    if (st == PF_OK) st = bi_int(a, "source", 0, 0, INT32_MAX, &src);
    if (st == PF_OK) st = bi_enum(a, "memory", memories, s->base.cuda ? 1 : 0, &mem);
    if (st == PF_OK) st = bi_num(a, "fps", 0, 0, false, 1e6, false, &fps);
    if (st == PF_OK) st = bi_int(a, "count", 0, 0, INT64_MAX, &count);
    /* Split the comma-separated list into entries. */
    if (st == PF_OK) {
        char *list = strdup(path), *save = NULL;
        if (!list) st = pf_set_error(PF_ERR_NOMEM, "io.image_source: out of host memory");
        for (char *e = list ? strtok_r(list, ",", &save) : NULL; e && st == PF_OK;
             e = strtok_r(NULL, ",", &save)) {
            while (*e == ' ') e++;
            if (*e) st = add_entry(s, a, e);
        }
        free(list);
    }
    if (st == PF_OK && s->num_files == 0) st = bi_error(a, "path", "path '%s': no images", path);
    /* Check the first image now, so a bad path fails at load. */
    if (st == PF_OK) {
        pf_image_info info;
        if (pf_image_probe(s->files[0], &info) != PF_OK)
            st = bi_error(a, "path", "%s", pf_last_error());
    }
    if (st == PF_OK) {
        s->pool_frames = (int)pool;
        s->pool_timeout_us = tmo < 0 ? -1 : tmo * 1000;
        s->source = (int32_t)src;
        s->memory = (pf_mem_domain)mem;
        d->fps = fps;
        d->max_items = count;
        io_domain(&s->base, d, s->memory);
        /* No sink of this process may replace an image still to be read. */
        for (; s->num_held < s->num_files; s->num_held++)
            pf_io_input_hold(s->files[s->num_held], true);
    }
    return bi_create_end(s, d, st);
}

/* Sinks ---------------------------------------------------------------------------------- */

/* A sink's file is opened at its first item; refuse now (at load) what would
 * be refused then: an output that is a source's input (held by the sources
 * made before it; pf_output_open checks again), or one that exists under
 * a never-overwrite policy (enforced again, atomically, at commit). */
static pf_status check_output(bi_args *a, const char *path, bool url_ok)
{
    char scheme[32];
    if (pf_io_url_scheme(path, scheme, sizeof scheme)) {
        /* A network output (io.video_sink): no file to compare; a protocol
         * the writer would refuse is said at load, without credentials. */
        char shown[1024];
        pf_io_redact(path, shown, sizeof shown);
        if (!url_ok)
            return bi_error(a, "path", "%s: images are written to files, not to URLs", shown);
        if (strcmp(scheme, "file") != 0 &&
            pf_io_protocol_allowed(PF_IO_DEFAULT_OUTPUT_PROTOCOLS, scheme))
            return PF_OK;
        return bi_error(a, "path", "%s: URL protocol '%s' is not allowed for outputs (allowed: %s)",
                        shown, scheme, PF_IO_DEFAULT_OUTPUT_PROTOCOLS);
    }
    if (pf_io_check_not_input(path) != PF_OK) {
        char msg[1024]; /* bi_error formats into the error buffer: copy it first */
        snprintf(msg, sizeof msg, "%s", pf_last_error());
        return bi_error(a, "path", "%s", msg);
    }
    if ((pf_output_default_flags() & PF_OUTPUT_NO_OVERWRITE) && !pf_io_is_std(path) &&
        access(path, F_OK) == 0)
        return bi_error(a, "path", "%s: already exists (not overwritten: -n)", path);
    return PF_OK;
}

/* io.video_sink -------------------------------------------------------------------------- */

typedef struct vsink {
    bi_stage base;
    pf_video_writer_params wp;
    char *path, *container, *codec, *preset, *codec_pixfmt, *copy_streams, *muxer_options;
    bool fps_given;           /* `fps` in the YAML; else the frames' own rate */
    pf_video_writer *w;
    pf_status failed;
} vsink;

/* The frame rate of a stream whose first frame is f: from its duration
 * (decoders set one frame's length) or, for a time base that is one frame
 * (Y4M, raw, generated sources: pts = frame number), the time base itself.
 * {0,0} when neither says. */
static pf_rational frame_rate_of(const pf_frame *f)
{
    pf_rational tb = f->time_base;
    if (tb.num <= 0 || tb.den <= 0) return (pf_rational){0, 0};
    int64_t num = tb.den, den = (int64_t)tb.num * (f->duration > 0 ? f->duration : 1);
    if (f->duration <= 0 && (double)num / (double)den > 1000) return (pf_rational){0, 0};
    /* Reduced, so 24000/1001 stays exact and fits 32 bits. */
    pf_rational q = pf_rational_reduce(num, den);
    if (q.den == 0) return q;
    /* A coarse time base rounds durations (Matroska's 1 ms: 42 for 23.976
     * fps): a rate within 1% of a common one is taken to be that one. */
    static const pf_rational common[] = {{24000, 1001}, {24, 1}, {25, 1}, {30000, 1001},
                                         {30, 1}, {48, 1}, {50, 1}, {60000, 1001},
                                         {60, 1}, {120, 1}};
    double r = (double)q.num / (double)q.den, best = 1e300;
    size_t bi = 0;
    for (size_t i = 0; i < sizeof common / sizeof common[0]; i++) {
        double d = fabs(r - (double)common[i].num / common[i].den);
        if (d < best) best = d, bi = i;
    }
    if (best <= 0.01 * r) return common[bi];
    return q;
}

static void vsink_close(vsink *s)
{
    if (!s->w) return;
    if (pf_video_writer_close(s->w) != PF_OK)
        PF_LOGE("io.video_sink %s: %s", s->base.name, pf_last_error());
    pf_video_writer_destroy(&s->w);
}

static void vsink_free(bi_stage *b)
{
    vsink *s = (vsink *)b;
    vsink_close(s);
    free(s->path);
    free(s->container);
    free(s->codec);
    free(s->preset);
    free(s->codec_pixfmt);
    free(s->copy_streams);
    free(s->muxer_options);
}

static void vsink_stop(void *user)
{
    vsink *s = user;
    bi_stage_stop_common(&s->base);
    vsink_close(s);
}

static pf_status vsink_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    (void)ctx;
    vsink *s = user;
    pf_status st = PF_OK;
    for (int i = 0; i < n && st == PF_OK; i++) {
        const pf_frame *f = &items[i].frame;
        if (!f->data[0]) {
            st = bi_item_error(&s->base, &items[i], PF_ERR_INVALID, "io.video_sink: the item has no frame");
            break;
        }
        if (!s->w) {
            /* The first frame decides size and input format, and gives what
             * the stream keeps of its source: clock (time base, rate unless
             * `fps` is set: a 23.976 source stays on its 1001-tick grid),
             * colour and sample aspect ratio. */
            s->wp.width = f->width;
            s->wp.height = f->height;
            s->wp.input_format = f->format;
            s->wp.color = f->color;
            s->wp.sar = f->sar;
            if (f->time_base.num > 0 && f->time_base.den > 0) s->wp.time_base = f->time_base;
            pf_rational r = frame_rate_of(f);
            if (!s->fps_given) s->wp.fps = r.num > 0 ? r : (pf_rational){30, 1};
            st = pf_video_writer_create(&s->wp, &s->w);
            if (st != PF_OK) {
                st = bi_item_failed(&s->base, &items[i], st, "io.video_sink");
                break;
            }
        }
        st = pf_video_writer_write(s->w, f);
        if (st != PF_OK) st = bi_item_failed(&s->base, &items[i], st, "io.video_sink");
    }
    bi_unref_items(items, n);
    return st;
}

static char *dup_opt(const char *v)
{
    return v ? strdup(v) : NULL;
}

pf_status bi_video_sink_create(bi_args *a, pf_stage_desc *d)
{
    pf_status st;
    vsink *s = bi_stage_new(sizeof *s, a, d, &st);
    if (!s) return st;
    s->base.free_extra = vsink_free;
    d->process = vsink_process;
    d->stop = vsink_stop;
    d->threads = 1;
    io_domain(&s->base, d, PF_MEM_HOST);
    s->wp = pf_video_writer_params_default();
    const char *path = bi_str(a, "path");
    const char *codec = bi_str(a, "codec");
    const char *preset = bi_str(a, "preset");
    const char *container = bi_str(a, "container");
    const char *cpf = bi_str(a, "codec_pixfmt");
    const char *copy = bi_str(a, "copy_streams");
    const char *start = bi_str(a, "start");
    const char *duration = bi_str(a, "duration");
    /* Network outputs (path a URL): options of the protocol and muxer, and
     * the deadline of the connect and of each write. */
    const char *mux_opts = bi_str(a, "muxer_options");
    int64_t crf, gop, bitrate, threads, frames, timeout_ms;
    double fps;
    s->fps_given = bi_has(a, "fps");
    if (!path) st = bi_error(a, NULL, "missing required parameter 'path' (a video file or -)");
    if (st == PF_OK) st = bi_num(a, "fps", 30, 0, true, 1e6, false, &fps);
    if (st == PF_OK) st = bi_int(a, "crf", 23, -1, 63, &crf);
    if (st == PF_OK) st = bi_int(a, "gop", 0, 0, 100000, &gop);
    if (st == PF_OK) st = bi_int(a, "bitrate", 0, 0, INT64_MAX, &bitrate);
    if (st == PF_OK) st = bi_int(a, "codec_threads", 0, 0, 256, &threads);
    if (st == PF_OK) st = bi_int(a, "frames", 0, 0, INT64_MAX, &frames);
    if (st == PF_OK) st = bi_int(a, "timeout_ms", 0, 0, 3600000, &timeout_ms);
    if (st == PF_OK && codec && !pf_video_have_encoder(codec) && pf_io_have_ffmpeg())
        st = bi_error(a, "codec", "codec '%s': FFmpeg has no such video encoder", codec);
    if (st == PF_OK && start && pf_parse_time(start, &s->wp.start_s) != PF_OK)
        st = bi_error(a, "start", "start '%s': expected seconds (12.5) or [HH:]MM:SS[.frac]",
                      start);
    if (st == PF_OK && duration &&
        (pf_parse_time(duration, &s->wp.duration_s) != PF_OK || !(s->wp.duration_s > 0)))
        st = bi_error(a, "duration",
                      "duration '%s': expected a time > 0: seconds or [HH:]MM:SS[.frac]",
                      duration);
    if (st == PF_OK) {
        s->path = strdup(path);
        s->codec = dup_opt(codec);
        s->preset = dup_opt(preset);
        s->container = dup_opt(container);
        s->codec_pixfmt = dup_opt(cpf);
        s->copy_streams = dup_opt(copy);
        s->muxer_options = dup_opt(mux_opts);
        s->wp.muxer_options = s->muxer_options;
        if (timeout_ms > 0) s->wp.open_timeout_ms = s->wp.write_timeout_ms = timeout_ms;
        s->wp.copy_streams_from = s->copy_streams;
        s->wp.max_frames = frames;
        s->wp.path = s->path;
        if (s->codec) s->wp.codec = s->codec;
        if (s->preset) s->wp.preset = s->preset;
        s->wp.container = s->container;
        s->wp.codec_pixfmt = s->codec_pixfmt;
        s->wp.crf = (int)crf;
        s->wp.gop = (int)gop;
        s->wp.bitrate = bitrate;
        s->wp.threads = (int)threads;
        /* fps as a rational: integers exactly, the NTSC rates (23.976,
         * 29.97, 59.94...) as N*1000/1001, others in 1/1000 units. */
        if (fps == (double)(int32_t)fps) {
            s->wp.fps = (pf_rational){(int32_t)fps, 1};
        } else {
            s->wp.fps = (pf_rational){(int32_t)(fps * 1000 + 0.5), 1000};
            double k = round(fps * 1.001);
            if (k >= 1 && fabs(fps - k * 1000.0 / 1001.0) < 0.0015)
                s->wp.fps = (pf_rational){(int32_t)k * 1000, 1001};
        }
        if (!s->path) st = pf_set_error(PF_ERR_NOMEM, "io.video_sink: out of host memory");
    }
    if (st == PF_OK) st = check_output(a, path, true);
    return bi_create_end(s, d, st);
}

/* io.image_sink -------------------------------------------------------------------------- */

typedef struct isink {
    bi_stage base;
    char *pattern;
    pf_image_write_params wp;
} isink;

static void isink_free(bi_stage *b)
{
    free(((isink *)b)->pattern);
}

/* Expands {seq}, {source} and {index} (zero-padded to 6 digits). */
static bool expand(const char *pattern, const pf_item *it, char *out, size_t size)
{
    size_t n = 0;
    for (const char *p = pattern; *p;) {
        long long v = 0;
        size_t skip = 0;
        if (strncmp(p, "{seq}", 5) == 0) v = (long long)it->seq, skip = 5;
        else if (strncmp(p, "{source}", 8) == 0) v = it->source, skip = 8;
        else if (strncmp(p, "{index}", 7) == 0) v = (long long)it->frame.index, skip = 7;
        if (skip) {
            int k = snprintf(out + n, size - n, skip == 8 ? "%lld" : "%06lld", v);
            if (k < 0 || (size_t)k >= size - n) return false;
            n += (size_t)k;
            p += skip;
        } else {
            if (n + 1 >= size) return false;
            out[n++] = *p++;
        }
    }
    out[n] = '\0';
    return true;
}

static pf_status isink_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    (void)ctx;
    isink *s = user;
    pf_status st = PF_OK;
    for (int i = 0; i < n && st == PF_OK; i++) {
        char path[4096];
        if (!expand(s->pattern, &items[i], path, sizeof path)) {
            st = bi_item_error(&s->base, &items[i], PF_ERR_INVALID, "io.image_sink: path too long");
            break;
        }
        st = pf_image_write(path, &items[i].frame, &s->wp);
        if (st != PF_OK) st = bi_item_failed(&s->base, &items[i], st, "io.image_sink");
    }
    bi_unref_items(items, n);
    return st;
}

pf_status bi_image_sink_create(bi_args *a, pf_stage_desc *d)
{
    static const char *const formats[] = {"auto", "png", "jpeg", NULL};
    pf_status st;
    isink *s = bi_stage_new(sizeof *s, a, d, &st);
    if (!s) return st;
    s->base.free_extra = isink_free;
    d->process = isink_process;
    io_domain(&s->base, d, PF_MEM_HOST);
    s->wp = pf_image_write_params_default();
    const char *path = bi_str(a, "path");
    int64_t q, level;
    int fmt;
    bool s444;
    if (!path)
        st = bi_error(a, NULL,
                      "missing required parameter 'path' (e.g. out/frame_{seq}.png; {seq}, "
                      "{source}, {index} are replaced)");
    if (st == PF_OK) st = bi_enum(a, "format", formats, 0, &fmt);
    if (st == PF_OK) st = bi_int(a, "quality", 90, 1, 100, &q);
    if (st == PF_OK) st = bi_int(a, "compression", 6, 0, 9, &level);
    if (st == PF_OK) st = bi_bool(a, "chroma444", false, &s444);
    if (st == PF_OK && fmt == 0 && !strstr(path, ".png") && !strstr(path, ".jp") &&
        !strstr(path, ".PNG") && !strstr(path, ".JP"))
        st = bi_error(a, "path", "path '%s': no .png/.jpg extension; set 'format'", path);
    if (st == PF_OK && !strchr(path, '{')) st = check_output(a, path, false);
    if (st == PF_OK) {
        s->pattern = strdup(path);
        s->wp.format = (pf_image_format)fmt;
        s->wp.jpeg_quality = (int)q;
        s->wp.png_compression = (int)level;
        s->wp.jpeg_subsample_444 = s444;
        if (!s->pattern) st = pf_set_error(PF_ERR_NOMEM, "io.image_sink: out of host memory");
    }
    return bi_create_end(s, d, st);
}
