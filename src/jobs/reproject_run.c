/* The reproject job's pipeline (design in reproject_run.h): setup, the
 * decode and encode stages, statistics. The compute stage is in
 * reproject_compute.c. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jobs/reproject_run_impl.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

static const char *const stage_names[RP_STAGE_COUNT] = {"read",     "decode", "upload", "kernel",
                                                        "download", "encode", "write"};

const char *pf_reproject_stage_name(pf_reproject_stage s)
{
    return s >= 0 && s < RP_STAGE_COUNT ? stage_names[s] : "?";
}

/* Reporting ------------------------------------------------------------------------------- */

/* pf_last_error() usually names the file already; make sure it does. */
static void report_error(const jobs_sink *sink, const char *path, const char *what)
{
    const char *msg = pf_last_error();
    if (!msg[0]) msg = "unknown error";
    /* pf_image_probe_memory() takes no name and says "<memory>": the path replaces it. */
    if (!strncmp(msg, "<memory>: ", 10)) msg += 10;
    if (strstr(msg, path)) rp_report(sink, "%s%s%s", what ? what : "", what ? ": " : "", msg);
    else rp_report(sink, "%s: %s%s%s", path, what ? what : "", what ? ": " : "", msg);
}

void rp_add_busy(rp_run *r, rp_stage s, int64_t ns)
{
    atomic_fetch_add(&r->busy_ns[s], ns);
    atomic_fetch_add(&r->busy_count[s], 1);
}

/* Jobs ---------------------------------------------------------------------------------------- */

static rp_job *job_new(rp_run *r, int input, int64_t frame, int64_t t_start)
{
    rp_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->input = input;
    j->frame = frame;
    j->t_start = t_start;
    j->seq = atomic_fetch_add(&r->next_seq, 1);
    atomic_init(&j->pending, 0);
    atomic_init(&j->failed, false);
    return j;
}

static void job_finish(rp_run *r, rp_job *j)
{
    if (atomic_load(&j->failed)) {
        atomic_fetch_add(&r->images_failed, 1);
    } else {
        pf_histogram_record(r->latency, pf_time_ns() - j->t_start);
        atomic_fetch_add(&r->images_done, 1);
        jobs_frame_done(r->cfg->sink, 0, (int64_t)j->seq, j->t_start);
    }
    pf_frame_unref(&j->src);
    pf_frame_unref(&j->dsrc);
    pf_buffer_unref(&j->ring_token);
    rp_job_drop_bits(j);
    for (int i = 0; i < RP_MAX_OUTPUTS; i++) pf_frame_unref(&j->outs[i]);
    pf_buffer_unref(&j->out_token);
    free(j);
}

void rp_job_drop_bits(rp_job *j)
{
    free(j->bits_heap);
    j->bits_heap = NULL;
    pf_buffer_unref(&j->bits_block);
    j->bits = NULL;
    j->bits_size = 0;
}

void rp_job_fail(rp_run *r, rp_job *j, const char *what)
{
    if (atomic_exchange(&j->failed, true)) return;
    const rp_input *in = &r->in->items[j->input];
    if (j->frame >= 0) {
        char where[64];
        snprintf(where, sizeof where, "frame %lld%s%s", (long long)j->frame, what ? ": " : "",
                 what ? what : "");
        report_error(r->cfg->sink, in->path, where);
    } else {
        report_error(r->cfg->sink, in->path, what);
    }
}

void rp_job_to_encoders(rp_run *r, rp_job *j)
{
    if (atomic_load(&j->failed)) {
        job_finish(r, j);
        return;
    }
    int n = r->cfg->num_outputs;
    atomic_store(&j->pending, n);
    for (int i = 0; i < n; i++) {
        rp_encode_task t = {j, i};
        /* Never blocks for long: the queue holds every view of every output block. */
        if (pf_queue_push(r->encode, &t, PF_WAIT_FOREVER) != PF_OK) {
            /* Closed: cannot happen while compute runs; account the views anyway. */
            if (atomic_fetch_sub(&j->pending, 1) == 1) job_finish(r, j);
        }
    }
}

/* Decoders ------------------------------------------------------------------------------------ */

/* A FIFO or /dev/fd/N (no size to read up front): to its end, at most 1 GiB. */
static pf_status read_stream(const jobs_sink *sink, FILE *f, const char *path, uint8_t **data, size_t *size)
{
    size_t cap = 1 << 20, n = 0;
    uint8_t *buf = malloc(cap);
    pf_status st = PF_OK;
    for (size_t got = 1; buf && got > 0;) {
        if (n == cap) {
            uint8_t *g = cap < ((size_t)1 << 30) ? realloc(buf, cap * 2) : NULL;
            if (!g) {
                rp_report(sink, "%s: %s", path, cap < ((size_t)1 << 30) ? "out of memory" : "over 1 GiB");
                st = PF_ERR_NOMEM;
                break;
            }
            buf = g;
            cap *= 2;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    }
    if (st == PF_OK && (!buf || ferror(f))) {
        rp_report(sink, "%s: cannot read: %s", path, buf ? strerror(errno) : "out of memory");
        st = buf ? PF_ERR_IO : PF_ERR_NOMEM;
    }
    fclose(f);
    if (st != PF_OK) {
        free(buf);
        return st;
    }
    *data = buf;
    *size = n;
    return PF_OK;
}

/* Reads the whole file (failures are reported here, naming it). */
static pf_status read_whole_file(const jobs_sink *sink, const char *path, uint8_t **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        rp_report(sink, "%s: cannot open: %s", path, strerror(errno));
        return PF_ERR_IO;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || S_ISDIR(st.st_mode)) {
        fclose(f);
        rp_report(sink, "%s: is a directory, not an image", path);
        return PF_ERR_IO;
    }
    if (!S_ISREG(st.st_mode)) return read_stream(sink, f, path, data, size);
    size_t n = (size_t)st.st_size;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        fclose(f);
        rp_report(sink, "%s: out of memory for %zu bytes", path, n);
        return PF_ERR_NOMEM;
    }
    size_t got = fread(buf, 1, n, f);
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (got != n && err) {
        free(buf);
        rp_report(sink, "%s: cannot read: %s", path, strerror(err));
        return PF_ERR_IO;
    }
    *data = buf;
    *size = got; /* a file that shrank meanwhile decodes as truncated, and is reported so */
    return PF_OK;
}

/* Read-ahead: the input a decoder will most likely take after the ones now
 * being read is announced to the kernel (posix_fadvise WILLNEED starts its
 * read in the background), so that with a cold page cache the storage,
 * not the threads, sets the pace. Cheap (an open, an advice, a close). */
static void read_ahead(rp_run *r, int idx)
{
    int next = idx + r->decoders;
    if (next >= r->in->count) return;
    const rp_input *in = &r->in->items[next];
    if (in->once || in->kind != RP_INPUT_IMAGE) return;
    int fd = open(in->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return; /* reported when it is read */
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
    close(fd);
}

/* GPU decode: the whole file in one read() sequence into a block of the
 * bits pool (page-locked: nvJPEG copies the bytes to the device from
 * there), or the heap when the file is bigger than a block (the block is
 * then held as a token, so the pool still bounds the files in flight).
 * *heap says which.
 * Failures are reported here, naming the file. */
static pf_status read_into_ring(rp_run *r, const char *path, pf_buffer **block, uint8_t **data,
                                size_t *size, bool *heap, int64_t *waited)
{
    const jobs_sink *sink = r->cfg->sink;
    *block = NULL;
    *data = NULL;
    *size = 0;
    *heap = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        rp_report(sink, "%s: cannot open: %s", path, strerror(errno));
        return PF_ERR_IO;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        /* A directory, a FIFO: the CPU path's reader says what it is. */
        return PF_ERR_UNSUPPORTED;
    }
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    size_t n = (size_t)sb.st_size;
    int64_t t0 = pf_time_ns();
    pf_status st = pf_pinned_pool_acquire(r->bits_pool, PF_WAIT_FOREVER, block);
    *waited = pf_time_ns() - t0;
    atomic_fetch_add(&r->ring_wait_ns, *waited);
    if (st != PF_OK) {
        close(fd);
        rp_report(sink, "%s: no ring block: %s", path, pf_last_error());
        return st;
    }
    uint8_t *buf = pf_buffer_data(*block);
    if (n > r->bits_block) {
        buf = malloc(n ? n : 1);
        *heap = true;
        if (!buf) {
            close(fd);
            pf_buffer_unref(block);
            rp_report(sink, "%s: out of memory for %zu bytes", path, n);
            return PF_ERR_NOMEM;
        }
    }
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, buf + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            int err = errno;
            close(fd);
            if (*heap) free(buf);
            pf_buffer_unref(block);
            rp_report(sink, "%s: cannot read: %s", path, strerror(err));
            return PF_ERR_IO;
        }
        if (k == 0) break; /* shrank meanwhile: decodes as truncated, and is reported so */
        got += (size_t)k;
    }
    close(fd);
    *data = buf;
    *size = got;
    return PF_OK;
}

/* A ring block for a w x h RGB24 frame in j->src: the frame lives in the
 * block, or on the heap (holding the block as a token) when it is bigger
 * than the blocks, which were sized from the first input. */
static pf_status take_ring_frame(rp_run *r, rp_job *j, int w, int h)
{
    int64_t t0 = pf_time_ns();
    pf_buffer *block = NULL;
    pf_status st = pf_pinned_pool_acquire(r->ring_pool, PF_WAIT_FOREVER, &block);
    atomic_fetch_add(&r->ring_wait_ns, pf_time_ns() - t0);
    if (st != PF_OK) return st;
    if ((size_t)w * (size_t)h * 3 <= r->ring_block) {
        st = pf_frame_wrap(&j->src, PF_PIXFMT_RGB24, w, h, block, 0, NULL);
        pf_buffer_unref(&block);
        return st;
    }
    j->ring_token = block;
    atomic_fetch_add(&r->unpinned, 1);
    return pf_frame_alloc(&j->src, PF_PIXFMT_RGB24, w, h, NULL, NULL);
}

static void push_decoded(rp_run *r, rp_job *j)
{
    if (pf_queue_push(r->decoded, &j, PF_WAIT_FOREVER) != PF_OK) {
        rp_job_fail(r, j, "pipeline closed");
        job_finish(r, j);
    }
}

static void decode_image(rp_worker *w, int idx)
{
    rp_run *r = w->r;
    const rp_input *in = &r->in->items[idx];
    int64_t t0 = pf_time_ns();
    rp_job *j = job_new(r, idx, -1, t0);
    if (!j) {
        rp_report(r->cfg->sink, "%s: out of memory", in->path);
        atomic_fetch_add(&r->images_failed, 1);
        return;
    }
    read_ahead(r, idx);
    uint8_t *data = NULL;
    size_t size = 0;
    pf_status st = PF_ERR_UNSUPPORTED;
    pf_buffer *block = NULL;
    bool heap = true;
    int64_t waited = 0; /* for a ring block: counted as a wait, not as reading */
    if (r->gpu_dec && !in->once)
        st = read_into_ring(r, in->path, &block, &data, &size, &heap, &waited);
    if (st == PF_ERR_UNSUPPORTED) st = read_whole_file(r->cfg->sink, in->path, &data, &size);
    int64_t t1 = pf_time_ns();
    rp_add_busy(r, RP_STAGE_READ, t1 - t0 - waited);
    if (r->tracer) pf_trace_span(r->tracer, w->track, "read", t0, t1, 0, (int64_t)j->seq);
    if (st != PF_OK) {
        atomic_store(&j->failed, true); /* reported by read_whole_file */
        job_finish(r, j);
        return;
    }
    if (block) {
        /* GPU decode for the JPEGs nvJPEG takes (sequential Huffman, 8-bit,
         * 1 or 3 components, complete): the compute thread decodes them. */
        pf_jpeg_header h;
        /* CPU assist: a whole batch already waits for the GPU, which is then
         * the bound; this thread decodes the image itself meanwhile. */
        bool assist = r->cfg->cpu_assist &&
                      pf_queue_size(r->decoded) >= (size_t)r->batch * (size_t)r->gpu_states;
        if (pf_jpeg_scan(data, size, in->path, &h) == PF_OK && h.gpu_ok && !assist) {
            j->bits = data;
            j->bits_size = size;
            j->bits_block = block;
            j->bits_heap = heap ? data : NULL;
            j->width = h.width;
            j->height = h.height;
            push_decoded(r, j);
            return;
        }
        pf_clear_error(); /* the CPU path below reports what is wrong, if anything */
        if (!heap) {
            /* The bytes leave the bits pool; the frame takes a ring block. */
            uint8_t *copy = malloc(size ? size : 1);
            if (copy) memcpy(copy, data, size);
            data = copy;
        }
        pf_buffer_unref(&block);
        if (!data) {
            rp_report(r->cfg->sink, "%s: out of memory for %zu bytes", in->path, size);
            atomic_store(&j->failed, true);
            job_finish(r, j);
            return;
        }
    }
    pf_image_info info;
    st = pf_image_probe_memory(data, size, &info);
    if (st == PF_OK && (info.width < 1 || info.height < 1)) {
        rp_report(r->cfg->sink, "%s: zero-sized image (%dx%d)", in->path, info.width, info.height);
        atomic_store(&j->failed, true);
        st = PF_ERR_FORMAT;
    } else if (st != PF_OK) {
        rp_job_fail(r, j, NULL);
    }
    if (st == PF_OK) {
        st = take_ring_frame(r, j, info.width, info.height);
        if (st != PF_OK) rp_job_fail(r, j, "no frame for the decoded image");
    }
    int64_t t2 = pf_time_ns();
    if (st == PF_OK) {
        st = pf_image_read_memory_into(data, size, in->path, &j->src);
        if (st != PF_OK) rp_job_fail(r, j, NULL);
        else atomic_fetch_add(&r->dec_count[PF_JPEG_PATH_CPU], 1);
    }
    free(data);
    int64_t t3 = pf_time_ns();
    rp_add_busy(r, RP_STAGE_DECODE, t3 - t2);
    if (r->tracer) pf_trace_span(r->tracer, w->track, "decode", t2, t3, 0, (int64_t)j->seq);
    if (st != PF_OK) {
        job_finish(r, j);
        return;
    }
    push_decoded(r, j);
}

static void copy_rows(pf_frame *dst, const pf_frame *src)
{
    size_t row = (size_t)src->width * 3;
    for (int y = 0; y < src->height; y++)
        memcpy(dst->data[0] + (size_t)y * dst->stride[0], src->data[0] + (size_t)y * src->stride[0],
               row);
}

static void decode_video(rp_worker *w, int idx)
{
    rp_run *r = w->r;
    const rp_input *in = &r->in->items[idx];
    pf_video_reader_params rp = pf_video_reader_params_default();
    rp.path = in->path;
    rp.format = PF_PIXFMT_RGB24;
    rp.pool_size = 2;
    pf_video_reader *vr = NULL;
    if (pf_video_reader_create(&rp, &vr) != PF_OK) {
        report_error(r->cfg->sink, in->path, NULL);
        atomic_fetch_add(&r->images_failed, 1);
        return;
    }
    pf_video_info info;
    pf_video_reader_info(vr, &info);
    int64_t estimate = info.frame_count > 0 ? (info.frame_count + r->cfg->every - 1) / r->cfg->every
                                            : -1;
    if (estimate > 0) atomic_fetch_add(&r->expected, estimate - 1);
    else atomic_store(&r->expected_unknown, true);
    int64_t made = 0;
    while (!r->cancel) {
        int64_t t0 = pf_time_ns();
        pf_frame f = {0};
        pf_status st = pf_video_reader_read(vr, &f);
        if (st == PF_EOF) break;
        if (st != PF_OK) {
            char where[64];
            snprintf(where, sizeof where, "after frame %lld", (long long)made);
            report_error(r->cfg->sink, in->path, where);
            atomic_fetch_add(&r->images_failed, 1);
            made++;
            break;
        }
        if (f.index % r->cfg->every != 0) {
            pf_frame_unref(&f);
            continue;
        }
        int64_t t1 = pf_time_ns();
        rp_job *j = job_new(r, idx, f.index, t0);
        if (!j) {
            pf_frame_unref(&f);
            rp_report(r->cfg->sink, "%s: frame %lld: out of memory", in->path, (long long)f.index);
            atomic_fetch_add(&r->images_failed, 1);
            made++;
            continue;
        }
        if (f.width < 1 || f.height < 1) {
            rp_report(r->cfg->sink, "%s: frame %lld: zero-sized frame", in->path, (long long)f.index);
            atomic_store(&j->failed, true);
        } else if (take_ring_frame(r, j, f.width, f.height) != PF_OK) {
            rp_job_fail(r, j, "no frame for the decoded image");
        } else {
            copy_rows(&j->src, &f);
            atomic_fetch_add(&r->dec_count[PF_JPEG_PATH_CPU], 1);
        }
        pf_frame_unref(&f);
        int64_t t2 = pf_time_ns();
        rp_add_busy(r, RP_STAGE_DECODE, (t1 - t0) + (t2 - t1));
        if (r->tracer) pf_trace_span(r->tracer, w->track, "decode", t0, t2, 0, (int64_t)j->seq);
        made++;
        if (atomic_load(&j->failed)) job_finish(r, j);
        else push_decoded(r, j);
    }
    /* Damage the decoder skipped is not a failure (the frames that decoded
     * are written) but is said, as segment's summary counts it. */
    pf_video_reader_stats vs;
    if (pf_video_reader_get_stats(vr, &vs) == PF_OK && vs.corrupt_packets)
        rp_report(r->cfg->sink, "%s: %llu damaged or missing packets skipped (%llu frames decoded)", in->path,
                  (unsigned long long)vs.corrupt_packets, (unsigned long long)vs.frames);
    pf_video_reader_destroy(&vr);
    /* The estimate becomes the count. */
    atomic_fetch_add(&r->expected, made - (estimate > 0 ? estimate : 1));
}

static void decoder_main(void *user)
{
    rp_worker *w = user;
    rp_run *r = w->r;
    for (;;) {
        if (r->cancel) break;
        int idx = atomic_fetch_add(&r->next_input, 1);
        if (idx >= r->in->count) break;
        const rp_input *in = &r->in->items[idx];
        if (in->same_names_as >= 0) {
            const rp_input *o = &r->in->items[in->same_names_as];
            rp_report(r->cfg->sink, "%s: skipped: its outputs would overwrite those of %s (same name "
                      "'%.*s'; rename one or use separate runs)",
                      in->path, o->path, (int)in->stem_len, in->stem);
            atomic_fetch_add(&r->images_failed, 1);
            continue;
        }
        if (in->kind == RP_INPUT_VIDEO) decode_video(w, idx);
        else decode_image(w, idx);
    }
    if (atomic_fetch_sub(&r->decoders_left, 1) == 1) pf_queue_close(r->decoded);
}

/* Encoders ---------------------------------------------------------------------------------- */

/* pf_output: a temporary beside PATH, renamed over it when complete, so a
 * failed write leaves no half file under PATH (and -n holds atomically). */
static bool write_file(const jobs_sink *sink, const char *path, const void *data, size_t n)
{
    /* Thousands of views into one directory: no directory fsync per file. */
    if (pf_output_write_file(path, data, n, PF_OUTPUT_NO_DIR_SYNC) == PF_OK) return true;
    rp_report(sink, "%s", pf_last_error());
    return false;
}

static void encode_one(rp_worker *w, rp_job *j, int i)
{
    rp_run *r = w->r;
    const rp_config *c = r->cfg;
    const rp_input *in = &r->in->items[j->input];
    char path[PATH_MAX];
    if (!rp_output_path(path, sizeof path, c->out_dir, in, j->frame, c->suffix[i], c->ext)) {
        rp_report(r->cfg->sink, "%s: the output path for it is too long", in->path);
        atomic_store(&j->failed, true);
        return;
    }
    int64_t t0 = pf_time_ns();
    pf_buffer *bytes = NULL;
    const uint8_t *data = NULL;
    size_t n = 0;
    pf_status st;
    if (r->gpu_enc) {
        /* nvJPEG: the view is a device frame whose kernel has run (compute
         * hands a job over only after its GPU work completed); the file's
         * bytes come back into the encoder's pinned buffer and are written
         * from there by this thread. */
        st = pf_nvjpeg_enc_encode(r->nvenc[w->id - r->decoders - 1], &j->outs[i], path, &data,
                                  &n);
    } else {
        pf_image_write_params wp = pf_image_write_params_default();
        wp.format = c->format;
        wp.jpeg_quality = c->quality;
        wp.png_compression = 3; /* most of zlib's gain at a fraction of level 6's time */
        st = pf_image_encode(&j->outs[i], &wp, &bytes);
        if (st == PF_OK) {
            data = pf_buffer_data(bytes);
            n = pf_buffer_size(bytes);
        }
    }
    int64_t t1 = pf_time_ns();
    rp_add_busy(r, RP_STAGE_ENCODE, t1 - t0);
    if (r->tracer) pf_trace_span(r->tracer, w->track, "encode", t0, t1, 0, (int64_t)j->seq);
    if (st != PF_OK) {
        rp_report(r->cfg->sink, "%s: cannot encode (from %s): %s", path, in->path, pf_last_error());
        atomic_store(&j->failed, true);
        return;
    }
    bool ok = write_file(r->cfg->sink, path, data, n);
    pf_buffer_unref(&bytes);
    int64_t t2 = pf_time_ns();
    rp_add_busy(r, RP_STAGE_WRITE, t2 - t1);
    if (r->tracer) pf_trace_span(r->tracer, w->track, "write", t1, t2, 0, (int64_t)j->seq);
    if (!ok) {
        atomic_store(&j->failed, true);
        return;
    }
    atomic_fetch_add(&r->views_written, 1);
    if (r->gpu_enc) atomic_fetch_add(&r->encoded_gpu, 1);
    else if (c->format == PF_IMAGE_JPEG) atomic_fetch_add(&r->encoded_cpu, 1);
}

static void encoder_main(void *user)
{
    rp_worker *w = user;
    rp_run *r = w->r;
    for (;;) {
        rp_encode_task t;
        int64_t t0 = pf_time_ns();
        pf_status st = pf_queue_pop(r->encode, &t, PF_WAIT_FOREVER);
        atomic_fetch_add(&r->encode_idle_ns, pf_time_ns() - t0);
        if (st != PF_OK) break;
        encode_one(w, t.job, t.index);
        if (atomic_fetch_sub(&t.job->pending, 1) == 1) job_finish(r, t.job);
    }
    if (atomic_fetch_sub(&r->encoders_left, 1) == 1) {
        r->t_end = pf_time_ns();
        int one = 1;
        pf_queue_push(r->done, &one, 0);
    }
}

/* Setup ------------------------------------------------------------------------------------------ */

/* Bytes of the first input that can be probed (ring blocks are sized from
 * it; a bigger input later is decoded on the heap). 0 when none can. */
static size_t first_frame_bytes(const rp_inputs *in)
{
    for (int i = 0; i < in->count; i++) {
        const rp_input *it = &in->items[i];
        if (it->once) continue; /* a pipe: probing would eat what the decoder needs */
        if (it->kind == RP_INPUT_IMAGE) {
            pf_image_info info;
            if (pf_image_probe(it->path, &info) == PF_OK && info.width > 0 && info.height > 0)
                return (size_t)info.width * (size_t)info.height * 3;
        } else {
            pf_video_reader_params p = pf_video_reader_params_default();
            p.path = it->path;
            p.format = PF_PIXFMT_RGB24;
            p.pool_size = 1;
            pf_video_reader *vr = NULL;
            if (pf_video_reader_create(&p, &vr) == PF_OK) {
                pf_video_info info;
                pf_status st = pf_video_reader_info(vr, &info);
                pf_video_reader_destroy(&vr);
                if (st == PF_OK && info.width > 0 && info.height > 0)
                    return (size_t)info.width * (size_t)info.height * 3;
            }
        }
    }
    pf_clear_error();
    return 0;
}

/* --codec: nvJPEG where asked (auto: on a CUDA device where it loads);
 * where it cannot be used, the CPU, said in one message. */
static void choose_codecs(rp_run *r)
{
    const rp_config *c = r->cfg;
    if (c->codec == PF_REPROJECT_CODEC_CPU) return;
    bool asked = c->codec == PF_REPROJECT_CODEC_GPU;
    if (!r->cuda) {
        if (asked)
            jobs_say(c->sink, PF_LOG_WARN, "--codec gpu: %s is not a CUDA device: JPEGs are "
                     "decoded and encoded on the CPU", pf_device_spec(r->dev));
        return;
    }
    char why[512];
    if (!pf_nvjpeg_available(why, sizeof why)) {
        jobs_say(c->sink, asked ? PF_LOG_WARN : PF_LOG_INFO,
                 "nvJPEG not available (%s): JPEGs are decoded and encoded on the CPU", why);
        return;
    }
    r->gpu_dec = true;
    r->gpu_enc = c->format == PF_IMAGE_JPEG;
}

/* GPU decode: bits pool blocks of twice the first image file's size (at
 * least 1 MiB); a bigger file later is read into the heap. */
static size_t first_file_bytes(const rp_inputs *in)
{
    for (int i = 0; i < in->count; i++) {
        const rp_input *it = &in->items[i];
        struct stat sb;
        if (it->once || it->kind != RP_INPUT_IMAGE || stat(it->path, &sb) != 0 ||
            !S_ISREG(sb.st_mode))
            continue;
        size_t n = (size_t)sb.st_size * 2;
        return n > ((size_t)1 << 20) ? n : (size_t)1 << 20;
    }
    return (size_t)1 << 20;
}

static pf_status fail_setup(const jobs_sink *sink, const char *what)
{
    rp_report(sink, "%s: %s", what, pf_last_error());
    return PF_ERR_INVALID;
}

pf_status rp_run_create(const rp_config *cfg, const rp_inputs *in, pf_device *dev, rp_run **out)
{
    *out = NULL;
    int64_t t_create = pf_time_ns();
    rp_run *r = calloc(1, sizeof *r);
    if (!r) return PF_ERR_NOMEM;
    r->cfg = cfg;
    r->in = in;
    r->dev = dev;
    r->cuda = pf_device_get_type(dev) == PF_DEVICE_CUDA;
    choose_codecs(r);
    int cores = pf_cpu_count();
    /* Decoding an 8K JPEG and encoding its views cost about the same CPU
     * time; the compute thread mostly waits. */
    r->decoders = cfg->decoders ? cfg->decoders : cores / 2 > 1 ? cores / 2 : 1;
    r->encoders = cfg->encoders ? cfg->encoders : cores / 2 > 1 ? cores / 2 : 1;
    if (r->decoders > in->count && in->count > 0) r->decoders = in->count;
    /* GPU decode: batches of inflight / 2 images, so one batch decodes while
     * the previous one's kernels run and its views are encoded. */
    r->inflight = r->cuda ? (cfg->inflight ? cfg->inflight : r->gpu_dec ? 16 : 3) : 1;
    r->batch = r->inflight / 2 > 1 ? r->inflight / 2 : 1;
    if (r->batch > 64) r->batch = 64; /* compute_batched's arrays */
    /* GPU decode: S threads (decoder states) decoding batches of B; the bits
     * pool holds the files read ahead, being decoded, and waiting for the
     * kernels: D + 2 S B + K + 2. The ring then holds only CPU-decoded
     * frames (progressive JPEGs, PNG, the CPU assist). */
    /* 2 states by default: of 2, 4 and 8 on an H200 (240 8K JPEGs -> 8
     * views, docs/benchmarks.md 2026-11-28) 2 was fastest (153 images/s
     * against 116 and 117): more states contend for the engines and the
     * pinned blocks without decoding more. */
    r->gpu_states = r->gpu_dec ? (cfg->gpu_decoders ? cfg->gpu_decoders : 2) : 0;
    r->bits_count = r->decoders + 2 * r->gpu_states * r->batch + r->inflight + 2;
    r->ring = cfg->ring ? cfg->ring : r->decoders + r->inflight + 2;
    int per_block = cfg->num_outputs;
    r->out_blocks = (r->encoders + per_block - 1) / per_block + r->inflight + 1;

    size_t off = 0;
    for (int i = 0; i < cfg->num_outputs; i++) {
        r->out_offset[i] = off;
        size_t bytes = (size_t)cfg->out_width[i] * (size_t)cfg->out_height[i] * 3;
        off += (bytes + 63) & ~(size_t)63;
    }
    r->out_block = off;
    r->ring_block = first_frame_bytes(in);
    if (r->ring_block == 0) r->ring_block = 64; /* nothing decodes: every input fails alone */
    r->bits_block = r->gpu_dec ? first_file_bytes(in) : 0;

    pf_status st;
    pf_pinned_pool_params pp = pf_pinned_pool_params_default();
    pp.device = dev;
    pp.block_size = r->ring_block;
    pp.block_count = r->ring;
    pp.name = "reproject-ring";
    if ((st = pf_pinned_pool_create(&pp, &r->ring_pool)) != PF_OK) goto fail;
    if (r->gpu_dec) {
        pp.block_size = r->bits_block;
        pp.block_count = r->bits_count;
        pp.name = "reproject-bits";
        if ((st = pf_pinned_pool_create(&pp, &r->bits_pool)) != PF_OK) goto fail;
    }
    /* GPU encode: the views live on the device; a block is only the token
     * that bounds the frames between compute and the encoders. */
    r->out_pool_block = r->gpu_enc ? 64 : r->out_block;
    pp.block_size = r->out_pool_block;
    pp.block_count = r->out_blocks;
    pp.name = "reproject-views";
    if ((st = pf_pinned_pool_create(&pp, &r->out_pool)) != PF_OK) goto fail;

    /* Every job holds a ring or bits block: pushes never wait for long. */
    pf_queue_params qp = {.capacity = (size_t)(r->ring + r->bits_count) + 1,
                          .item_size = sizeof(rp_job *)};
    if ((st = pf_queue_create(&qp, &r->decoded)) != PF_OK) goto fail;
    if ((st = pf_queue_create(&qp, &r->ready)) != PF_OK) goto fail;
    qp.capacity = (size_t)r->out_blocks * (size_t)cfg->num_outputs;
    qp.item_size = sizeof(rp_encode_task);
    if ((st = pf_queue_create(&qp, &r->encode)) != PF_OK) goto fail;
    qp.capacity = 1;
    qp.item_size = sizeof(int);
    if ((st = pf_queue_create(&qp, &r->done)) != PF_OK) goto fail;
    if ((st = pf_histogram_create(&r->latency)) != PF_OK) goto fail;

    if (cfg->trace_path) {
        pf_tracer_params tp = pf_tracer_params_default();
        tp.path = cfg->trace_path;
        tp.gpu = r->cuda ? dev : NULL;
        tp.process_name = "pixflow reproject";
        tp.max_events = 1 << 18;
        if ((st = pf_tracer_create(&tp, &r->tracer)) != PF_OK) goto fail;
        if (r->cuda) {
            r->gpu_track[0] = pf_trace_gpu_track(r->tracer, "upload");
            r->gpu_track[1] = pf_trace_gpu_track(r->tracer, "kernel");
            r->gpu_track[2] = pf_trace_gpu_track(r->tracer, "download");
        }
    }
    if ((st = rp_compute_setup(r)) != PF_OK) goto fail;

    pf_threadpool_params tpp = pf_threadpool_params_default();
    /* + compute + the GPU decode threads + the caller */
    tpp.num_threads = r->decoders + r->encoders + 2 + r->gpu_states;
    tpp.name = "reproject";
    if ((st = pf_threadpool_create(&tpp, &r->threads)) != PF_OK) goto fail;

    atomic_init(&r->expected, in->count);
    atomic_init(&r->next_input, 0);
    atomic_init(&r->decoders_left, r->decoders);
    atomic_init(&r->gpu_left, r->gpu_states);
    atomic_init(&r->encoders_left, r->encoders);
    r->setup_ns = pf_time_ns() - t_create;
    *out = r;
    return PF_OK;
fail:
    fail_setup(cfg->sink, "cannot set up the pipeline");
    rp_run_destroy(&r);
    return st;
}

pf_status rp_run_start(rp_run *r)
{
    int n = r->decoders + r->encoders + 1 + r->gpu_states;
    rp_worker *w = calloc((size_t)n, sizeof *w);
    if (!w) return PF_ERR_NOMEM;
    r->t0 = pf_time_ns();
    r->started = true;
    char name[32];
    for (int i = 0; i < n; i++) {
        w[i].r = r;
        w[i].id = i;
        w[i].track = -1;
        if (r->tracer) {
            if (i < r->decoders) snprintf(name, sizeof name, "decode %d", i);
            else if (i == r->decoders) snprintf(name, sizeof name, "compute");
            else if (i <= r->decoders + r->encoders)
                snprintf(name, sizeof name, "encode %d", i - r->decoders - 1);
            else snprintf(name, sizeof name, "gpu decode %d", i - r->decoders - r->encoders - 1);
            w[i].track = pf_trace_track(r->tracer, name);
        }
    }
    r->workers = w;
    for (int i = 0; i < n; i++) {
        pf_task_fn fn = i < r->decoders                  ? decoder_main
                        : i == r->decoders                 ? rp_compute_main
                        : i <= r->decoders + r->encoders ? encoder_main
                                                           : rp_gpu_decode_main;
        pf_status st = pf_threadpool_submit(r->threads, fn, &w[i]);
        if (st != PF_OK) {
            /* Cannot happen with a pool of this size; never leave a waiter hanging. */
            rp_report(r->cfg->sink, "cannot start thread %d: %s", i, pf_last_error());
            r->cancel = 1;
            pf_queue_close(r->decoded);
            pf_queue_close(r->ready);
            pf_queue_close(r->encode);
            int one = 1;
            pf_queue_push(r->done, &one, 0);
            return st;
        }
    }
    return PF_OK;
}

pf_status rp_run_wait(rp_run *r, int64_t timeout_us)
{
    if (r->finished) return PF_OK;
    int one;
    pf_status st = pf_queue_pop(r->done, &one, timeout_us);
    if (st == PF_OK || st == PF_EOF) {
        r->finished = true;
        if (!r->t_end) r->t_end = pf_time_ns();
        return PF_OK;
    }
    return PF_TIMEOUT;
}

void rp_run_cancel(rp_run *r)
{
    r->cancel = 1;
}

void rp_run_get_stats(rp_run *r, rp_stats *s)
{
    memset(s, 0, sizeof *s);
    int64_t end = r->finished && r->t_end ? r->t_end : pf_time_ns();
    s->elapsed_s = r->started ? (double)(end - r->t0) * 1e-9 : 0.0;
    s->x.setup_s = (double)r->setup_ns * 1e-9;
    s->x.images_done = atomic_load(&r->images_done);
    s->x.images_failed = atomic_load(&r->images_failed);
    s->images_expected = atomic_load(&r->expected_unknown) ? -1 : atomic_load(&r->expected);
    s->x.files_written = atomic_load(&r->views_written);
    s->latency_p50_ms = pf_histogram_quantile(r->latency, 0.5) * 1e-6;
    s->latency_p99_ms = pf_histogram_quantile(r->latency, 0.99) * 1e-6;
    s->x.latency_mean_ms = pf_histogram_mean(r->latency) * 1e-6;
    for (int i = 0; i < RP_STAGE_COUNT; i++) {
        s->x.busy_ns[i] = atomic_load(&r->busy_ns[i]);
        s->x.busy_count[i] = atomic_load(&r->busy_count[i]);
    }
    s->x.ring_wait_ns = atomic_load(&r->ring_wait_ns);
    s->x.output_wait_ns = atomic_load(&r->output_wait_ns);
    s->x.encode_idle_ns = atomic_load(&r->encode_idle_ns);
    s->x.decoders = r->decoders;
    s->x.encoders = r->encoders;
    s->x.ring = r->ring;
    s->x.output_blocks = r->out_blocks;
    s->x.inflight = r->inflight;
    s->x.gpu_decode = r->gpu_dec;
    s->x.gpu_encode = r->gpu_enc;
    s->x.decoded_hw = atomic_load(&r->dec_count[PF_JPEG_PATH_HW]);
    s->x.decoded_gpu = atomic_load(&r->dec_count[PF_JPEG_PATH_GPU]);
    s->x.decoded_cpu = atomic_load(&r->dec_count[PF_JPEG_PATH_CPU]);
    s->x.encoded_gpu = atomic_load(&r->encoded_gpu);
    s->x.encoded_cpu = atomic_load(&r->encoded_cpu);
    for (int i = 0; i < RP_STAGE_COUNT; i++)
        s->x.stage_threads[i] = i == RP_STAGE_DECODE && r->gpu_dec                ? r->gpu_states
                                : i == RP_STAGE_READ || i == RP_STAGE_DECODE     ? r->decoders
                                : i == RP_STAGE_ENCODE || i == RP_STAGE_WRITE ? r->encoders
                                                                              : 1;
    s->x.host_bytes = r->ring_block * (size_t)r->ring + r->out_pool_block * (size_t)r->out_blocks +
                      r->bits_block * (size_t)(r->bits_pool ? r->bits_count : 0);
    s->x.device_bytes = r->device_bytes;
    pf_pinned_pool_stats ps;
    s->x.pinned = r->ring_pool && pf_pinned_pool_get_stats(r->ring_pool, &ps) == PF_OK && ps.pinned;
    s->x.unpinned_fallbacks = atomic_load(&r->unpinned);
}

void rp_run_destroy(rp_run **rp)
{
    rp_run *r = rp ? *rp : NULL;
    if (!r) return;
    if (r->started) {
        r->cancel = 1;
        while (rp_run_wait(r, 100000) != PF_OK) {
        }
    }
    pf_threadpool_destroy(&r->threads); /* joins the stages */
    rp_compute_teardown(r);
    pf_tracer_destroy(&r->tracer);      /* writes the trace */
    pf_queue_destroy(&r->decoded);
    pf_queue_destroy(&r->ready);
    pf_pinned_pool_destroy(&r->bits_pool);
    pf_queue_destroy(&r->encode);
    pf_queue_destroy(&r->done);
    pf_pinned_pool_destroy(&r->ring_pool);
    pf_pinned_pool_destroy(&r->out_pool);
    pf_histogram_destroy(&r->latency);
    free(r->workers);
    free(r);
    *rp = NULL;
}
