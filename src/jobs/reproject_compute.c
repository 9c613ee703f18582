/* The compute stage of the reproject pipeline (design in reproject_run.h).
 *
 * CPU: one call per frame, from the ring frame straight into the output
 * block (pf_ops splits the rows over its own thread pool).
 *
 * CUDA: K slots, each with device copies of a source and its views. A frame
 * is issued into a free slot as three steps on three streams, ordered by
 * events so that the upload of frame n + 1, the kernel of frame n and the
 * download of frame n - 1 run at the same time:
 *   s_up:     ev0  upload src -> dsrc  ev1
 *   s_kernel: wait ev1, ev2  views dsrc -> douts  ev3
 *   s_down:   wait ev3, ev4  douts -> output block (pinned)  ev5
 * A slot is retired (its frame handed to the encoders, its ring frame given
 * back) once ev5 completes; the oldest slot is retired first, so a slot is
 * reused only when all its work is done and no other ordering is needed.
 * Event pairs give each step's GPU time for the statistics and the trace.
 *
 * With nvJPEG (docs/codecs.md), S GPU decode threads (rp_gpu_decode_main),
 * each with its own decoder state and stream, take batches of up to B =
 * inflight / 2 compressed jobs, decode them into device frames owned by the
 * jobs (one pf_nvjpeg_dec_batch call, then a wait on their stream) and pass
 * them on; several states keep all the hardware engines busy, as one
 * state's calls come one after the other. The compute thread then issues
 * up to B jobs at a time: a GPU-decoded source needs no upload; a CPU-
 * decoded one is uploaded between ev0 and ev1 as before. With GPU encode
 * the views are device frames owned by the job (from the caching device
 * allocator), nothing is downloaded (ev4 = ev5 on s_kernel after the
 * kernel), and the job goes to the encoders once its kernel has run. */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "jobs/reproject_run_impl.h"

enum { EV_UP0, EV_UP1, EV_K0, EV_K1, EV_D0, EV_D1, EV_COUNT };

static void free_decoders(rp_run *r)
{
    for (int i = 0; r->nvdecs && i < r->gpu_states; i++) {
        if (r->dec_streams && r->dec_streams[i]) pf_stream_synchronize(r->dec_streams[i]);
        pf_nvjpeg_dec_destroy(&r->nvdecs[i]);
        if (r->dec_streams) pf_stream_destroy(&r->dec_streams[i]);
    }
    free(r->nvdecs);
    free(r->dec_streams);
    r->nvdecs = NULL;
    r->dec_streams = NULL;
    r->gpu_states = 0;
}

pf_status rp_compute_setup(rp_run *r)
{
    const rp_config *c = r->cfg;
    pf_stream_params sp = pf_stream_params_default();
    sp.device = r->dev;
    pf_status st = pf_stream_create(&sp, &r->s_kernel);
    if (st != PF_OK) return st;
    pf_ops_params op = pf_ops_params_default();
    op.stream = r->s_kernel;
    if ((st = pf_ops_create(&op, &r->ops)) != PF_OK) return st;
    if (!r->cuda) return PF_OK;

    if ((st = pf_stream_create(&sp, &r->s_up)) != PF_OK) return st;
    if ((st = pf_stream_create(&sp, &r->s_down)) != PF_OK) return st;
    pf_allocator_params ap = pf_allocator_params_default();
    ap.device = r->dev;
    ap.domain = PF_MEM_DEVICE;
    ap.name = "reproject-device";
    if ((st = pf_allocator_create(&ap, &r->dev_alloc)) != PF_OK) return st;
    r->slots = calloc((size_t)r->inflight, sizeof *r->slots);
    if (!r->slots) return PF_ERR_NOMEM;
    for (int k = 0; k < r->inflight; k++) {
        rp_slot *s = &r->slots[k];
        for (int e = 0; e < EV_COUNT; e++)
            if ((st = pf_event_create(r->dev, &s->ev[e])) != PF_OK) return st;
        for (int i = 0; i < c->num_outputs; i++) {
            st = pf_frame_alloc(&s->douts[i], PF_PIXFMT_RGB24, c->out_width[i], c->out_height[i],
                                r->dev_alloc, r->s_kernel);
            if (st != PF_OK) return st;
        }
        r->device_bytes += r->ring_block + r->out_block;
    }
    if (r->gpu_enc) r->device_bytes += r->out_block * (size_t)r->out_blocks;
    r->batch_jobs = calloc((size_t)r->batch, sizeof *r->batch_jobs);
    if (!r->batch_jobs) return PF_ERR_NOMEM;
    if (r->gpu_dec) {
        r->nvdecs = calloc((size_t)r->gpu_states, sizeof *r->nvdecs);
        r->dec_streams = calloc((size_t)r->gpu_states, sizeof *r->dec_streams);
        if (!r->nvdecs || !r->dec_streams) return PF_ERR_NOMEM;
        for (int i = 0; i < r->gpu_states && st == PF_OK; i++) {
            st = pf_nvjpeg_dec_create(r->dev, r->batch, &r->nvdecs[i]);
            if (st == PF_OK) st = pf_stream_create(&sp, &r->dec_streams[i]);
        }
        if (st != PF_OK) {
            jobs_say(c->sink, PF_LOG_WARN, "%s: JPEGs are decoded on the CPU", pf_last_error());
            free_decoders(r);
            r->gpu_dec = false;
            st = PF_OK;
        } else {
            jobs_say(c->sink, PF_LOG_INFO, "nvJPEG %s: decode on %s%s, %d states, batches of %d",
                     pf_nvjpeg_version(), pf_device_spec(r->dev),
                     pf_nvjpeg_dec_has_hw(r->nvdecs[0]) ? " (hardware engines)"
                                                        : " (no hardware engines: GPU-hybrid)",
                     r->gpu_states, r->batch);
        }
    }
    if (r->gpu_enc) {
        int n = r->encoders;
        r->nvenc = calloc((size_t)n, sizeof *r->nvenc);
        if (!r->nvenc) return PF_ERR_NOMEM;
        for (int i = 0; i < n && st == PF_OK; i++)
            st = pf_nvjpeg_enc_create(r->dev, c->quality, false, &r->nvenc[i]);
        if (st != PF_OK) {
            jobs_say(c->sink, PF_LOG_WARN, "%s: views are encoded on the CPU", pf_last_error());
            for (int i = 0; i < n; i++) pf_nvjpeg_enc_destroy(&r->nvenc[i]);
            free(r->nvenc);
            r->nvenc = NULL;
            r->gpu_enc = false;
            /* The output blocks were made as tokens: make them hold the views again. */
            pf_pinned_pool_destroy(&r->out_pool);
            pf_pinned_pool_params pp = pf_pinned_pool_params_default();
            pp.device = r->dev;
            pp.block_size = r->out_pool_block = r->out_block;
            pp.block_count = r->out_blocks;
            pp.name = "reproject-views";
            if ((st = pf_pinned_pool_create(&pp, &r->out_pool)) != PF_OK) return st;
            r->device_bytes -= r->out_block * (size_t)r->out_blocks;
        }
    }
    return pf_stream_synchronize(r->s_kernel);
}

void rp_compute_teardown(rp_run *r)
{
    if (r->s_up) pf_stream_synchronize(r->s_up);
    if (r->s_kernel) pf_stream_synchronize(r->s_kernel);
    if (r->s_down) pf_stream_synchronize(r->s_down);
    if (r->slots) {
        for (int k = 0; k < r->inflight; k++) {
            rp_slot *s = &r->slots[k];
            pf_frame_unref(&s->dsrc);
            for (int i = 0; i < RP_MAX_OUTPUTS; i++) pf_frame_unref(&s->douts[i]);
            for (int e = 0; e < EV_COUNT; e++) pf_event_destroy(&s->ev[e]);
        }
        free(r->slots);
        r->slots = NULL;
    }
    if (r->nvenc) {
        for (int i = 0; i < r->encoders; i++) pf_nvjpeg_enc_destroy(&r->nvenc[i]);
        free(r->nvenc);
        r->nvenc = NULL;
    }
    free_decoders(r);
    free(r->batch_jobs);
    r->batch_jobs = NULL;
    pf_ops_destroy(&r->ops);
    pf_allocator_destroy(&r->dev_alloc);
    pf_stream_destroy(&r->s_up);
    pf_stream_destroy(&r->s_down);
    pf_stream_destroy(&r->s_kernel);
}

/* The job's views as frames in one output block (pinned on CUDA). */
static pf_status take_outputs(rp_run *r, rp_job *j)
{
    const rp_config *c = r->cfg;
    int64_t t0 = pf_time_ns();
    pf_buffer *block = NULL;
    pf_status st = pf_pinned_pool_acquire(r->out_pool, PF_WAIT_FOREVER, &block);
    atomic_fetch_add(&r->output_wait_ns, pf_time_ns() - t0);
    if (st != PF_OK) return st;
    if (r->gpu_enc) {
        /* Device views owned by the job until its files are written. */
        j->out_token = block;
        for (int i = 0; i < c->num_outputs && st == PF_OK; i++)
            st = pf_frame_alloc(&j->outs[i], PF_PIXFMT_RGB24, c->out_width[i], c->out_height[i],
                                r->dev_alloc, r->s_kernel);
        return st;
    }
    for (int i = 0; i < c->num_outputs && st == PF_OK; i++)
        st = pf_frame_wrap(&j->outs[i], PF_PIXFMT_RGB24, c->out_width[i], c->out_height[i], block,
                           r->out_offset[i], NULL);
    pf_buffer_unref(&block);
    return st;
}

static pf_status reproject(rp_run *r, const pf_frame *src, pf_frame *dsts)
{
    const rp_config *c = r->cfg;
    if (c->mode == RP_MODE_CUBE_MOSAIC)
        return pf_ops_equirect_to_cubemap(r->ops, src, &dsts[0], c->cube_size, c->cube_layout,
                                          c->interp);
    pf_frame *ptrs[RP_MAX_OUTPUTS];
    for (int i = 0; i < c->num_outputs; i++) ptrs[i] = &dsts[i];
    return pf_ops_equirect_to_views(r->ops, src, c->views, ptrs, c->num_outputs, c->interp);
}

/* Gives the ring frame back and passes the job on. */
static void hand_over(rp_run *r, rp_job *j)
{
    pf_frame_unref(&j->src);
    pf_frame_unref(&j->dsrc);
    pf_buffer_unref(&j->ring_token);
    rp_job_drop_bits(j);
    rp_job_to_encoders(r, j);
}

/* CPU ------------------------------------------------------------------------------------ */

static void compute_cpu(rp_worker *w)
{
    rp_run *r = w->r;
    rp_job *j;
    while (pf_queue_pop(r->decoded, &j, PF_WAIT_FOREVER) == PF_OK) {
        if (take_outputs(r, j) != PF_OK) {
            rp_job_fail(r, j, "no output buffer");
            hand_over(r, j);
            continue;
        }
        int64_t t0 = pf_time_ns();
        pf_status st = reproject(r, &j->src, j->outs);
        int64_t t1 = pf_time_ns();
        rp_add_busy(r, RP_STAGE_KERNEL, t1 - t0);
        if (r->tracer) pf_trace_span(r->tracer, w->track, "reproject", t0, t1, 0, (int64_t)j->seq);
        if (st != PF_OK) rp_job_fail(r, j, "reprojection failed");
        hand_over(r, j);
    }
}

/* CUDA ----------------------------------------------------------------------------------- */

static pf_status issue_rest(rp_run *r, rp_slot *s, rp_job *j, const pf_frame *src);

static pf_status issue(rp_run *r, rp_slot *s, rp_job *j)
{
    pf_status st = PF_OK;
    if (s->dsrc.width != j->src.width || s->dsrc.height != j->src.height) {
        pf_frame_unref(&s->dsrc); /* the slot is retired: nothing uses it */
        st = pf_frame_alloc(&s->dsrc, PF_PIXFMT_RGB24, j->src.width, j->src.height,
                            r->dev_alloc, r->s_up);
        if (st != PF_OK) return st;
    }
    if ((st = pf_event_record(s->ev[EV_UP0], r->s_up)) != PF_OK) return st;
    if ((st = pf_frame_copy_async(&s->dsrc, &j->src, r->s_up)) != PF_OK) return st;
    if ((st = pf_event_record(s->ev[EV_UP1], r->s_up)) != PF_OK) return st;
    return issue_rest(r, s, j, &s->dsrc);
}

static void add_gpu_time(rp_run *r, rp_slot *s, rp_job *j, rp_stage stage, int e0, int track)
{
    float ms = 0;
    if (pf_event_elapsed_ms(s->ev[e0], s->ev[e0 + 1], &ms) == PF_OK)
        rp_add_busy(r, stage, (int64_t)((double)ms * 1e6));
    if (r->tracer)
        pf_trace_gpu_span(r->tracer, r->gpu_track[track], pf_reproject_stage_name((pf_reproject_stage)stage), s->ev[e0],
                          s->ev[e0 + 1], 0, (int64_t)j->seq);
}

/* A batch's decode/upload time, shared equally by its images. */
static void add_batch_time(rp_run *r, rp_slot *s, rp_job *j, rp_stage stage)
{
    float ms = 0;
    if (pf_event_elapsed_ms(s->ev[EV_UP0], s->ev[EV_UP1], &ms) == PF_OK)
        rp_add_busy(r, stage, (int64_t)((double)ms * 1e6 / s->batch));
    if (r->tracer)
        pf_trace_gpu_span(r->tracer, r->gpu_track[0], stage == RP_STAGE_DECODE ? "decode batch" : "upload",
                          s->ev[EV_UP0], s->ev[EV_UP1], 0, (int64_t)j->seq);
}

static void retire(rp_run *r, rp_slot *s)
{
    rp_job *j = s->job;
    s->job = NULL;
    pf_status st = pf_event_synchronize(s->ev[EV_D1]);
    if (st != PF_OK) {
        rp_job_fail(r, j, "GPU work failed");
    } else if (!atomic_load(&j->failed)) {
        if (s->gpu_decoded)
            ; /* decoded by a GPU decode thread, which counted it */
        else if (s->batch > 0)
            add_batch_time(r, s, j, RP_STAGE_UPLOAD);
        else
            add_gpu_time(r, s, j, RP_STAGE_UPLOAD, EV_UP0, 0);
        add_gpu_time(r, s, j, RP_STAGE_KERNEL, EV_K0, 1);
        if (!r->gpu_enc) add_gpu_time(r, s, j, RP_STAGE_DOWNLOAD, EV_D0, 2);
    }
    s->batch = 0;
    s->gpu_decoded = false;
    hand_over(r, j);
}

/* Retires the oldest of the busy slots (a ring from *head). */
static void retire_oldest(rp_run *r, int *head, int *count)
{
    retire(r, &r->slots[*head]);
    *head = (*head + 1) % r->inflight;
    (*count)--;
}

static void compute_cuda(rp_worker *w)
{
    rp_run *r = w->r;
    int k = r->inflight, head = 0, count = 0;
    for (;;) {
        while (count && pf_event_query(r->slots[head].ev[EV_D1]) == PF_OK)
            retire_oldest(r, &head, &count);
        if (count == k) retire_oldest(r, &head, &count);
        rp_job *j;
        pf_status st = pf_queue_pop(r->decoded, &j, count ? 500 : PF_WAIT_FOREVER);
        if (st == PF_TIMEOUT || st == PF_AGAIN) continue;
        if (st != PF_OK) break;
        if (take_outputs(r, j) != PF_OK) {
            rp_job_fail(r, j, "no output buffer");
            hand_over(r, j);
            continue;
        }
        rp_slot *s = &r->slots[(head + count) % k];
        int64_t t0 = pf_time_ns();
        st = issue(r, s, j);
        if (r->tracer) pf_trace_span(r->tracer, w->track, "issue", t0, pf_time_ns(), 0,
                                     (int64_t)j->seq);
        if (st != PF_OK) {
            rp_job_fail(r, j, "GPU reprojection failed");
            /* Let whatever was queued finish before the buffers are reused. */
            pf_stream_synchronize(r->s_up);
            pf_stream_synchronize(r->s_kernel);
            pf_stream_synchronize(r->s_down);
            hand_over(r, j);
            continue;
        }
        s->job = j;
        count++;
    }
    while (count) retire_oldest(r, &head, &count);
}

/* nvJPEG batches ------------------------------------------------------------------------- */

/* The slot's device source sized for the job (the slot is retired). */
static pf_status size_source(rp_run *r, rp_slot *s, int w, int h)
{
    if (s->dsrc.width == w && s->dsrc.height == h) return PF_OK;
    pf_frame_unref(&s->dsrc);
    return pf_frame_alloc(&s->dsrc, PF_PIXFMT_RGB24, w, h, r->dev_alloc, r->s_up);
}

/* Kernel, then the download (CPU encode) or nothing (GPU encode), after
 * the slot's ev1. */
static pf_status issue_rest(rp_run *r, rp_slot *s, rp_job *j, const pf_frame *src)
{
    const rp_config *c = r->cfg;
    pf_status st;
    if ((st = pf_stream_wait_event(r->s_kernel, s->ev[EV_UP1])) != PF_OK) return st;
    if ((st = pf_event_record(s->ev[EV_K0], r->s_kernel)) != PF_OK) return st;
    if ((st = reproject(r, src, r->gpu_enc ? j->outs : s->douts)) != PF_OK) return st;
    if ((st = pf_event_record(s->ev[EV_K1], r->s_kernel)) != PF_OK) return st;
    if (r->gpu_enc) {
        if ((st = pf_event_record(s->ev[EV_D0], r->s_kernel)) != PF_OK) return st;
        return pf_event_record(s->ev[EV_D1], r->s_kernel);
    }
    if ((st = pf_stream_wait_event(r->s_down, s->ev[EV_K1])) != PF_OK) return st;
    if ((st = pf_event_record(s->ev[EV_D0], r->s_down)) != PF_OK) return st;
    for (int i = 0; i < c->num_outputs && st == PF_OK; i++)
        st = pf_frame_copy_async(&j->outs[i], &s->douts[i], r->s_down);
    if (st != PF_OK) return st;
    return pf_event_record(s->ev[EV_D1], r->s_down);
}

/* Issues n jobs into the n slots after the busy ones: uploads for the
 * CPU-decoded ones (between every slot's ev0 and ev1), then each one's
 * kernel; a GPU-decoded source is already on the device (its decode thread
 * waited for it). A job that fails is finished at its turn in retire (its
 * slot's ev5 then covers everything queued so far on s_up). */
static void issue_batch(rp_run *r, rp_worker *w, rp_job **jobs, int n, int first)
{
    int k = r->inflight;
    int64_t t0 = pf_time_ns();
    for (int b = 0; b < n; b++) {
        rp_slot *s = &r->slots[(first + b) % k];
        rp_job *j = jobs[b];
        s->job = j;
        s->batch = n;
        s->gpu_decoded = j->dsrc.data[0] != NULL;
        if (atomic_load(&j->failed)) continue;
        if (take_outputs(r, j) != PF_OK) rp_job_fail(r, j, "no output buffer");
        else if (!s->gpu_decoded && size_source(r, s, j->src.width, j->src.height) != PF_OK)
            rp_job_fail(r, j, "no device frame for the source");
    }
    for (int b = 0; b < n; b++)
        pf_event_record(r->slots[(first + b) % k].ev[EV_UP0], r->s_up);
    for (int b = 0; b < n; b++) {
        rp_job *j = jobs[b];
        rp_slot *s = &r->slots[(first + b) % k];
        if (s->gpu_decoded || atomic_load(&j->failed)) continue;
        if (pf_frame_copy_async(&s->dsrc, &j->src, r->s_up) != PF_OK)
            rp_job_fail(r, j, "upload failed");
    }
    for (int b = 0; b < n; b++)
        pf_event_record(r->slots[(first + b) % k].ev[EV_UP1], r->s_up);
    for (int b = 0; b < n; b++) {
        rp_job *j = jobs[b];
        rp_slot *s = &r->slots[(first + b) % k];
        if (!atomic_load(&j->failed) &&
            issue_rest(r, s, j, s->gpu_decoded ? &j->dsrc : &s->dsrc) != PF_OK)
            rp_job_fail(r, j, "GPU reprojection failed");
        if (atomic_load(&j->failed)) {
            /* Retired in order: its ev5 waits for the work queued so far. */
            pf_event_record(s->ev[EV_D1], r->s_up);
        }
    }
    if (r->tracer) pf_trace_span(r->tracer, w->track, "issue batch", t0, pf_time_ns(), 0,
                                 (int64_t)jobs[0]->seq);
}

/* Up to max jobs from q: the first waiting up to timeout_us, the rest only
 * if already there. 0 when none came; *closed when q is closed and empty. */
static int pop_batch(pf_queue *q, rp_job **jobs, int max, int64_t timeout_us, bool *closed)
{
    rp_job *j;
    pf_status st = pf_queue_pop(q, &j, timeout_us);
    if (st != PF_OK) {
        *closed = st != PF_TIMEOUT && st != PF_AGAIN;
        return 0;
    }
    int n = 0;
    jobs[n++] = j;
    while (n < max) {
        st = pf_queue_pop(q, &j, 0);
        if (st != PF_OK) {
            *closed = st != PF_TIMEOUT && st != PF_AGAIN;
            break;
        }
        jobs[n++] = j;
    }
    return n;
}

static void compute_batched(rp_worker *w)
{
    rp_run *r = w->r;
    int k = r->inflight, head = 0, count = 0;
    pf_queue *in = r->gpu_dec ? r->ready : r->decoded;
    bool closed = false;
    while (!closed) {
        while (count && pf_event_query(r->slots[head].ev[EV_D1]) == PF_OK)
            retire_oldest(r, &head, &count);
        /* Whatever is ready, up to a batch: the queue is full when the GPU
         * is the bound, so batches are full exactly when it matters. */
        int n = pop_batch(in, r->batch_jobs, r->batch, count ? 500 : PF_WAIT_FOREVER, &closed);
        if (n == 0) continue;
        while (count + n > k) retire_oldest(r, &head, &count);
        issue_batch(r, w, r->batch_jobs, n, (head + count) % k);
        count += n;
    }
    while (count) retire_oldest(r, &head, &count);
}

/* GPU decode threads ---------------------------------------------------------------------- */

/* Decodes the compressed jobs among n into device frames of their own on
 * stream s and waits for them; failures are reported (naming the file).
 * The bits block stays with the job until its kernel has run, so the bits
 * pool bounds the device frames in flight as well. */
static void gpu_decode_batch(rp_run *r, rp_worker *w, int g, rp_job **jobs, int n)
{
    pf_nvjpeg_dec *d = r->nvdecs[g];
    pf_stream *s = r->dec_streams[g];
    pf_nvjpeg_item items[64];
    int item_of[64], ni = 0;
    int64_t t0 = pf_time_ns();
    for (int b = 0; b < n; b++) {
        rp_job *j = jobs[b];
        item_of[b] = -1;
        if (!j->bits) continue; /* decoded on the CPU: passed through */
        pf_nvjpeg_item *it = &items[ni];
        memset(it, 0, sizeof *it);
        const char *name = r->in->items[j->input].path;
        int pw = 0, ph = 0;
        pf_status st = pf_nvjpeg_dec_probe(d, j->bits, j->bits_size, name, &pw, &ph, &it->path);
        if (st == PF_OK && (pw != j->width || ph != j->height))
            st = pf_set_error(PF_ERR_FORMAT, "%s: header size changed", name);
        if (st == PF_OK)
            st = pf_frame_alloc(&j->dsrc, PF_PIXFMT_RGB24, pw, ph, r->dev_alloc, s);
        if (st != PF_OK) {
            rp_job_fail(r, j, NULL);
            continue;
        }
        it->data = j->bits;
        it->size = j->bits_size;
        it->name = name;
        it->dst = &j->dsrc;
        item_of[b] = ni++;
    }
    if (ni > 0) {
        pf_nvjpeg_dec_batch(d, items, ni, s);
        if (pf_stream_synchronize(s) != PF_OK)
            for (int i = 0; i < ni; i++)
                if (items[i].status == PF_OK) {
                    items[i].status = PF_ERR_DEVICE;
                    snprintf(items[i].error, sizeof items[i].error, "%s: GPU decode: %s",
                             items[i].name, pf_last_error());
                }
    }
    int64_t t1 = pf_time_ns();
    for (int b = 0; b < n; b++) {
        rp_job *j = jobs[b];
        if (item_of[b] < 0) continue;
        pf_nvjpeg_item *it = &items[item_of[b]];
        if (it->status == PF_OK) {
            atomic_fetch_add(&r->dec_count[it->path], 1);
            rp_add_busy(r, RP_STAGE_DECODE, (t1 - t0) / ni);
        } else {
            pf_set_error(it->status, "%s", it->error);
            rp_job_fail(r, j, NULL);
            pf_frame_unref(&j->dsrc);
        }
    }
    if (r->tracer && ni > 0)
        pf_trace_span(r->tracer, w->track, "gpu decode", t0, t1, 0, (int64_t)jobs[0]->seq);
}

void rp_gpu_decode_main(void *user)
{
    rp_worker *w = user;
    rp_run *r = w->r;
    int g = w->id - r->decoders - r->encoders - 1;
    rp_job *jobs[64];
    int max = r->batch < 64 ? r->batch : 64;
    bool closed = false;
    while (!closed) {
        int n = pop_batch(r->decoded, jobs, max, PF_WAIT_FOREVER, &closed);
        if (n == 0) continue;
        gpu_decode_batch(r, w, g, jobs, n);
        for (int b = 0; b < n; b++) {
            rp_job *j = jobs[b];
            if (atomic_load(&j->failed)) {
                rp_job_to_encoders(r, j); /* finishes it */
            } else if (pf_queue_push(r->ready, &j, PF_WAIT_FOREVER) != PF_OK) {
                rp_job_fail(r, j, "pipeline closed");
                rp_job_to_encoders(r, j);
            }
        }
    }
    if (atomic_fetch_sub(&r->gpu_left, 1) == 1) pf_queue_close(r->ready);
}

void rp_compute_main(void *user)
{
    rp_worker *w = user;
    rp_run *r = w->r;
    if (r->cuda && (r->gpu_dec || r->gpu_enc)) compute_batched(w);
    else if (r->cuda) compute_cuda(w);
    else compute_cpu(w);
    pf_queue_close(r->encode);
}
