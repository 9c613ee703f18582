/* Built-in sinks and test stages: sink.null, sink.checksum, stage.sleep,
 * stage.fail.
 *
 * sink.checksum hashes what a frame shows (the visible bytes of each plane,
 * row by row, never the padding) and a tensor's elements in index order, so
 * two runs agree whatever the pools, strides or devices were; the per-item
 * hashes are summed, which makes the total independent of the order items
 * arrive in (several workers, several branches). Device memory is copied to
 * a host staging buffer that only ever grows (no allocation per item in the
 * steady state). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/error.h"
#include "builtin_impl.h"

/* sink.null ------------------------------------------------------------------------------------ */

typedef struct null_sink {
    bi_stage base;
    bool print;
    atomic_ullong items;
} null_sink;

static pf_status null_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    (void)ctx;
    null_sink *s = user;
    atomic_fetch_add(&s->items, (unsigned long long)n);
    bi_unref_items(items, n);
    return PF_OK;
}

static void null_stop(void *user)
{
    null_sink *s = user;
    bi_stage_stop_common(&s->base);
    if (s->print)
        fprintf(stderr, "sink %s: %llu items\n", s->base.name,
                (unsigned long long)atomic_load(&s->items));
}

pf_status bi_sink_null_create(bi_args *a, pf_stage_desc *d)
{
    pf_status st;
    null_sink *s = bi_stage_new(sizeof *s, a, d, &st);
    if (!s) return st;
    d->process = null_process;
    d->stop = null_stop;
    st = bi_bool(a, "print", false, &s->print);
    return bi_create_end(s, d, st);
}

/* sink.checksum --------------------------------------------------------------------------------- */

typedef struct checksum_sink {
    bi_stage base;
    char *file;
    pf_mutex lock;        /* staging and the totals */
    uint8_t *staging;
    size_t staging_size;
    uint64_t items, sum;
    bool reported;
} checksum_sink;

static void checksum_report(checksum_sink *s);

static void checksum_free(bi_stage *b)
{
    checksum_sink *s = (checksum_sink *)b;
    if (!s->reported) checksum_report(s); /* started but never stopped */
    free(s->file);
    free(s->staging);
    pf_mutex_destroy(&s->lock);
}

static pf_status staging(checksum_sink *s, size_t n, uint8_t **out)
{
    if (n > s->staging_size) {
        uint8_t *p = realloc(s->staging, n);
        if (!p)
            return pf_set_error(PF_ERR_NOMEM, "sink.checksum: no %zu bytes of host staging", n);
        s->staging = p;
        s->staging_size = n;
    }
    *out = s->staging;
    return PF_OK;
}

/* Host-readable copy of rows x row bytes at src (pitch), on the stage's stream. */
static pf_status host_rows(checksum_sink *s, pf_stage_ctx *ctx, pf_mem_domain dom,
                           const uint8_t *src, size_t pitch, size_t row, size_t rows,
                           const uint8_t **out, size_t *out_pitch)
{
    if (dom != PF_MEM_DEVICE) {
        *out = src;
        *out_pitch = pitch;
        return PF_OK;
    }
    uint8_t *dst = NULL;
    pf_status st = staging(s, row * rows, &dst);
    pf_stream *stream = pf_stage_stream(ctx);
    if (st == PF_OK) st = pf_memcpy2d_async(stream, dst, row, src, pitch, row, rows);
    if (st == PF_OK) st = pf_stream_synchronize(stream);
    *out = dst;
    *out_pitch = row;
    return st;
}

static pf_status hash_frame(checksum_sink *s, pf_stage_ctx *ctx, const pf_frame *f, uint64_t *h)
{
    pf_mem_domain dom = pf_frame_domain(f);
    for (int p = 0; p < f->num_planes; p++) {
        size_t row, rows, pitch;
        pf_status st = pf_pixfmt_plane_size(f->format, f->width, f->height, p, &row, &rows);
        const uint8_t *base;
        if (st == PF_OK) st = host_rows(s, ctx, dom, f->data[p], f->stride[p], row, rows, &base,
                                        &pitch);
        if (st != PF_OK) return st;
        for (size_t y = 0; y < rows; y++) *h = bi_fnv1a(*h, base + y * pitch, row);
    }
    return PF_OK;
}

static pf_status hash_tensor(checksum_sink *s, pf_stage_ctx *ctx, const pf_tensor *t, uint64_t *h)
{
    size_t es = pf_dtype_size(t->dtype), span = pf_tensor_nbytes(t);
    int64_t numel = pf_tensor_numel(t);
    if (numel == 0 || span == 0) return PF_OK;
    const uint8_t *base;
    size_t pitch;
    pf_status st = host_rows(s, ctx, pf_tensor_domain(t), t->data, span, span, 1, &base, &pitch);
    if (st != PF_OK) return st;
    if (pf_tensor_is_contiguous(t)) {
        *h = bi_fnv1a(*h, base, (size_t)numel * es);
        return PF_OK;
    }
    /* Strided: walk the index space in order. */
    int64_t idx[PF_TENSOR_MAX_DIMS] = {0};
    for (int64_t e = 0; e < numel; e++) {
        int64_t off = 0;
        for (int d = 0; d < t->ndim; d++) off += idx[d] * t->strides[d];
        *h = bi_fnv1a(*h, base + (size_t)off * es, es);
        for (int d = t->ndim - 1; d >= 0; d--) {
            if (++idx[d] < t->shape[d]) break;
            idx[d] = 0;
        }
    }
    return PF_OK;
}

static void le64(uint8_t out[8], uint64_t v)
{
    for (int i = 0; i < 8; i++) out[i] = (uint8_t)(v >> (8 * i));
}

static pf_status checksum_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    checksum_sink *s = user;
    pf_status st = PF_OK;
    pf_mutex_lock(&s->lock);
    for (int i = 0; i < n && st == PF_OK; i++) {
        pf_item *it = &items[i];
        uint8_t head[16];
        le64(head, (uint64_t)(int64_t)it->source);
        le64(head + 8, (uint64_t)it->seq);
        uint64_t h = bi_fnv1a(BI_FNV_OFFSET, head, sizeof head);
        if (it->frame.buf[0]) st = hash_frame(s, ctx, &it->frame, &h);
        if (st == PF_OK && it->tensor.buf) st = hash_tensor(s, ctx, &it->tensor, &h);
        if (st != PF_OK) {
            st = bi_item_failed(&s->base, it, st, NULL);
            break;
        }
        s->sum += h;
        s->items++;
    }
    pf_mutex_unlock(&s->lock);
    bi_unref_items(items, n);
    return st;
}

static void checksum_report(checksum_sink *s)
{
    pf_mutex_lock(&s->lock);
    bool first = !s->reported;
    s->reported = true;
    uint64_t items = s->items, sum = s->sum;
    pf_mutex_unlock(&s->lock);
    if (!first) return;
    FILE *f = stderr;
    if (s->file && !(f = fopen(s->file, "a"))) {
        PF_LOGE("stage '%s' (sink.checksum): cannot open '%s' for appending; result on stderr",
                s->base.name, s->file);
        f = stderr;
    }
    fprintf(f, "checksum %s: %llu items, 0x%016llx\n", s->base.name, (unsigned long long)items,
            (unsigned long long)sum);
    if (f != stderr) fclose(f);
}

static void checksum_stop(void *user)
{
    checksum_sink *s = user;
    bi_stage_stop_common(&s->base);
    checksum_report(s);
}

static pf_status checksum_start(void *user, pf_stage_ctx *ctx)
{
    checksum_sink *s = user;
    pf_mutex_lock(&s->lock);
    s->reported = false;
    pf_mutex_unlock(&s->lock);
    return bi_stage_start(user, ctx);
}

pf_status bi_sink_checksum_create(bi_args *a, pf_stage_desc *d)
{
    pf_status st;
    checksum_sink *s = bi_stage_new(sizeof *s, a, d, &st);
    if (!s) return st;
    pf_mutex_init(&s->lock);
    s->base.free_extra = checksum_free;
    s->reported = true; /* nothing to report until started */
    d->process = checksum_process;
    d->start = checksum_start;
    d->stop = checksum_stop;
    const char *file = bi_str(a, "file");
    if (file) {
        if (!file[0]) st = bi_error(a, "file", "file '': expected a path");
        else if (!(s->file = strdup(file)))
            st = pf_set_error(PF_ERR_NOMEM, "pf_stage_builtin: out of host memory");
    }
    return bi_create_end(s, d, st);
}

/* stage.sleep --------------------------------------------------------------------------------- */

typedef struct sleep_stage {
    bi_stage base;
    int64_t us;
    bool busy;
} sleep_stage;

static pf_status sleep_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    sleep_stage *s = user;
    if (s->busy) {
        int64_t end = pf_time_ns() + s->us * 1000;
        while (pf_time_ns() < end) {
        }
    } else if (s->us > 0) {
        struct timespec ts = {(time_t)(s->us / 1000000), (long)(s->us % 1000000) * 1000};
        while (nanosleep(&ts, &ts) != 0) {
        }
    }
    return bi_emit_all(ctx, items, n);
}

pf_status bi_sleep_create(bi_args *a, pf_stage_desc *d)
{
    pf_status st;
    sleep_stage *s = bi_stage_new(sizeof *s, a, d, &st);
    if (!s) return st;
    d->process = sleep_process;
    /* Pass-through: items stay wherever they live, no transfer is asked for. */
    st = bi_int_req(a, "us", 0, 60000000, &s->us);
    if (st == PF_OK) st = bi_bool(a, "busy", false, &s->busy);
    return bi_create_end(s, d, st);
}

/* stage.fail ------------------------------------------------------------------------------------ */

typedef struct fail_stage {
    bi_stage base;
    int64_t at;
    char *message;
    atomic_llong seen;
} fail_stage;

static void fail_free(bi_stage *b)
{
    free(((fail_stage *)b)->message);
}

static pf_status fail_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    fail_stage *s = user;
    pf_status st = PF_OK;
    for (int i = 0; i < n && st == PF_OK; i++) {
        int64_t k = atomic_fetch_add(&s->seen, 1);
        if (k == s->at)
            st = bi_item_error(&s->base, &items[i], PF_ERR_IO, "%s (item number %lld)",
                               s->message, (long long)k);
        else
            st = bi_emit(ctx, &items[i]);
    }
    bi_unref_items(items, n);
    return st;
}

pf_status bi_fail_create(bi_args *a, pf_stage_desc *d)
{
    pf_status st;
    fail_stage *s = bi_stage_new(sizeof *s, a, d, &st);
    if (!s) return st;
    s->base.free_extra = fail_free;
    d->process = fail_process;
    st = bi_int(a, "at", 0, 0, INT64_MAX, &s->at);
    const char *msg = st == PF_OK ? bi_str(a, "message") : NULL;
    if (st == PF_OK && !(s->message = strdup(msg ? msg : "injected failure")))
        st = pf_set_error(PF_ERR_NOMEM, "pf_stage_builtin: out of host memory");
    return bi_create_end(s, d, st);
}
