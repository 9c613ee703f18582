/* Built-in source "source.synthetic": generated frames from a fixed pool.
 *
 * At start the stage renders one pattern frame (an RGB gradient with a
 * checkerboard, tinted by the source id, converted to the requested format
 * with pf_ops_convert) into a frame of the pool's memory. Frame k is that
 * pattern scrolled left by k * speed pixels: two 2-D copies per plane on the
 * stage's stream (plain memcpy on the CPU, device-to-device copies on a
 * GPU), so consecutive frames differ, the cost is one read and one write per
 * byte, and nothing is drawn pixel by pixel after start. Frames come from a
 * pf_frame_pool of `pool` frames made at start: the steady state allocates
 * nothing, and a source that outruns its consumers waits for a frame to
 * come back (the edges' policies decide how many are held downstream). */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "builtin_impl.h"
#include "frame_pool.h"

typedef struct synth {
    bi_stage base;
    pf_pixfmt format;
    int width, height;
    int32_t source;
    int speed;
    int pool_frames;
    int64_t pool_timeout_ms;
    pf_mem_domain memory;
    double fps;
    bool ready;
    pf_frame_pool *pool;
    pf_frame pattern;        /* in the pool's memory: one pool frame kept */
    atomic_llong next;       /* frames made */
} synth;

static void synth_free(bi_stage *b)
{
    synth *s = (synth *)b;
    pf_frame_unref(&s->pattern);
    pf_frame_pool_destroy(&s->pool);
}

/* The pattern in RGB24 on the host. */
static void draw_pattern(pf_frame *f, int32_t source)
{
    int w = f->width, h = f->height;
    unsigned tint = (unsigned)source * 53u;
    for (int y = 0; y < h; y++) {
        uint8_t *row = f->data[0] + (size_t)y * f->stride[0];
        for (int x = 0; x < w; x++) {
            int check = ((x >> 5) ^ (y >> 5)) & 1;
            row[3 * x + 0] = (uint8_t)(((unsigned)x * 255u / (unsigned)(w > 1 ? w - 1 : 1)) + tint);
            row[3 * x + 1] = (uint8_t)((unsigned)y * 255u / (unsigned)(h > 1 ? h - 1 : 1));
            row[3 * x + 2] = (uint8_t)(check ? 200 : 40);
        }
    }
}

/* Renders the pattern in the target format into `dst` (a pool frame, any
 * memory) through a host frame and the CPU backend's converter. */
static pf_status render_pattern(synth *s, pf_stream *stage_stream, pf_frame *dst)
{
    pf_frame rgb = {0}, conv = {0};
    pf_stream *cpu = NULL;
    pf_ops *ops = NULL;
    pf_status st = pf_frame_alloc(&rgb, PF_PIXFMT_RGB24, s->width, s->height, NULL, NULL);
    if (st != PF_OK) goto out;
    draw_pattern(&rgb, s->source);
    const pf_frame *host = &rgb;
    if (s->format != PF_PIXFMT_RGB24) {
        pf_stream_params sp = pf_stream_params_default();
        st = pf_stream_create(&sp, &cpu);
        if (st != PF_OK) goto out;
        pf_ops_params op = pf_ops_params_default();
        op.stream = cpu;
        st = pf_ops_create(&op, &ops);
        if (st == PF_OK) st = pf_frame_alloc(&conv, s->format, s->width, s->height, NULL, NULL);
        if (st == PF_OK) st = pf_ops_convert(ops, &rgb, &conv, NULL);
        if (st != PF_OK) goto out;
        host = &conv;
    }
    /* Host -> pool memory on the stage's stream (a GPU copy for device pools). */
    st = pf_frame_copy_async(dst, host, stage_stream);
    if (st == PF_OK) st = pf_stream_synchronize(stage_stream);
out:
    pf_ops_destroy(&ops);
    pf_stream_destroy(&cpu);
    pf_frame_unref(&conv);
    pf_frame_unref(&rgb);
    return st;
}

static pf_status synth_start(void *user, pf_stage_ctx *ctx)
{
    synth *s = user;
    pf_status st = bi_stage_start(user, ctx);
    if (st != PF_OK) return st;
    pf_mutex_lock(&s->base.mu);
    if (!s->ready) {
        pf_frame_pool_params pp = {
            .format = s->format,
            .width = s->width,
            .height = s->height,
            .count = s->pool_frames + 1, /* + the pattern */
            .device = s->base.device,
            .domain = s->memory,
            .name = s->base.name,
        };
        st = pf_frame_pool_create(&pp, &s->pool);
        if (st == PF_OK) st = pf_frame_pool_acquire(s->pool, 0, &s->pattern);
        if (st == PF_OK) st = render_pattern(s, pf_stage_stream(ctx), &s->pattern);
        if (st == PF_OK) {
            s->ready = true;
        } else {
            char msg[768];
            snprintf(msg, sizeof msg, "%s", pf_last_error());
            pf_frame_unref(&s->pattern);
            pf_frame_pool_destroy(&s->pool);
            st = pf_set_error(st, "source.synthetic: preparing %d frames of %dx%d %s in %s memory: %s",
                              s->pool_frames, s->width, s->height,
                              pf_pixfmt_name(s->format), pf_mem_domain_name(s->memory), msg);
        }
    }
    pf_mutex_unlock(&s->base.mu);
    return st;
}

/* Bytes per pixel of a plane (NV12's UV pairs count as one 2-byte pixel). */
static int plane_bpp(pf_pixfmt f, int plane)
{
    switch (f) {
    case PF_PIXFMT_RGB24:
    case PF_PIXFMT_BGR24: return 3;
    case PF_PIXFMT_RGBA: return 4;
    case PF_PIXFMT_NV12: return plane == 0 ? 1 : 2;
    default: return 1;
    }
}

static pf_status synth_generate(void *user, pf_stage_ctx *ctx, pf_item *out)
{
    synth *s = user;
    pf_frame f;
    int64_t timeout_us = s->pool_timeout_ms * 1000;
    pf_status st = pf_frame_pool_acquire(s->pool, timeout_us, &f);
    if (st == PF_TIMEOUT || st == PF_AGAIN)
        return pf_set_error(PF_ERR_BUSY,
                            "source.synthetic: all %d frames of its pool still in use after %lld "
                            "ms (downstream holds them; raise 'pool')",
                            s->pool_frames, (long long)s->pool_timeout_ms);
    if (st != PF_OK) return st;
    int64_t k = atomic_fetch_add(&s->next, 1);
    pf_stream *stream = pf_stage_stream(ctx);
    bool yuv = s->format == PF_PIXFMT_NV12 || s->format == PF_PIXFMT_I420;
    int64_t speed = yuv ? (s->speed & ~1) : s->speed;
    for (int p = 0; p < f.num_planes && st == PF_OK; p++) {
        size_t row, rows;
        pf_pixfmt_plane_size(f.format, f.width, f.height, p, &row, &rows);
        int bpp = plane_bpp(f.format, p);
        int64_t pw = (int64_t)(row / (size_t)bpp);
        int64_t step = (yuv && p > 0) ? speed / 2 : speed;
        size_t shift = (size_t)((k % pw) * (step % pw) % pw) * (size_t)bpp;
        const uint8_t *src = s->pattern.data[p];
        size_t ss = s->pattern.stride[p];
        st = pf_memcpy2d_async(stream, f.data[p], f.stride[p], src + shift, ss, row - shift, rows);
        if (st == PF_OK && shift)
            st = pf_memcpy2d_async(stream, f.data[p] + (row - shift), f.stride[p], src, ss, shift,
                                   rows);
    }
    if (st != PF_OK) {
        pf_frame_unref(&f);
        return st;
    }
    f.index = k;
    f.source = s->source;
    f.pts = k;
    if (s->fps > 0 && fabs(s->fps - round(s->fps)) < 1e-9 && s->fps < 2e9)
        f.time_base = (pf_rational){1, (int32_t)round(s->fps)};
    else if (s->fps > 0 && s->fps * 1000 < 2e9)
        f.time_base = (pf_rational){1000, (int32_t)round(s->fps * 1000)};
    memset(out, 0, sizeof *out);
    out->frame = f;
    out->source = s->source;
    out->seq = k;
    return PF_OK;
}

pf_status bi_synthetic_create(bi_args *a, pf_stage_desc *d)
{
    static const char *const memories[] = {"host", "pinned", "device", NULL};
    pf_status st;
    synth *s = bi_stage_new(sizeof *s, a, d, &st);
    if (!s) return st;
    s->base.free_extra = synth_free;
    d->start = synth_start;
    d->source = synth_generate;
    int64_t w, h, src, speed, pool, tmo, count;
    int mem;
    double fps;
    if (st == PF_OK) st = bi_pixfmt(a, "format", PF_PIXFMT_RGB24, false, &s->format);
    if (st == PF_OK) st = bi_int(a, "width", 640, 1, PF_FRAME_MAX_DIM, &w);
    if (st == PF_OK) st = bi_int(a, "height", 480, 1, PF_FRAME_MAX_DIM, &h);
    if (st == PF_OK) st = bi_int(a, "source", 0, 0, INT32_MAX, &src);
    if (st == PF_OK) st = bi_int(a, "speed", 4, 0, PF_FRAME_MAX_DIM, &speed);
    if (st == PF_OK) st = bi_int(a, "pool", 8, 1, 1024, &pool);
    if (st == PF_OK) st = bi_int(a, "pool_timeout_ms", 10000, 1, 3600000, &tmo);
    if (st == PF_OK) st = bi_enum(a, "memory", memories, s->base.cuda ? 2 : 0, &mem);
    if (st == PF_OK) st = bi_num(a, "fps", 0, 0, false, 1e6, false, &fps);
    if (st == PF_OK) st = bi_int(a, "count", 0, 0, INT64_MAX, &count);
    if (st == PF_OK) {
        s->width = (int)w;
        s->height = (int)h;
        s->source = (int32_t)src;
        s->speed = (int)speed;
        s->pool_frames = (int)pool;
        s->pool_timeout_ms = tmo;
        s->memory = (pf_mem_domain)mem;
        s->fps = fps;
        d->fps = fps;
        d->max_items = count;
        d->produces = s->memory;
        d->accepts = s->memory;
        /* Fail now rather than at start on sizes a frame cannot have. */
        size_t total;
        st = pf_frame_layout(s->format, s->width, s->height, 256, NULL, NULL, &total);
        if (st == PF_OK && total * (size_t)(pool + 1) > ((size_t)1 << 40))
            st = bi_error(a, "pool", "pool '%lld': %lld frames of %zu bytes is more than 1 TiB",
                          (long long)pool, (long long)pool + 1, total);
    }
    return bi_create_end(s, d, st);
}
