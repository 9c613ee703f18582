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
 * Event pairs give each step's GPU time for the statistics and the trace. */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "jobs/reproject_run_impl.h"

enum { EV_UP0, EV_UP1, EV_K0, EV_K1, EV_D0, EV_D1, EV_COUNT };

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
    pf_buffer_unref(&j->ring_token);
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

static pf_status issue(rp_run *r, rp_slot *s, rp_job *j)
{
    const rp_config *c = r->cfg;
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

    if ((st = pf_stream_wait_event(r->s_kernel, s->ev[EV_UP1])) != PF_OK) return st;
    if ((st = pf_event_record(s->ev[EV_K0], r->s_kernel)) != PF_OK) return st;
    if ((st = reproject(r, &s->dsrc, s->douts)) != PF_OK) return st;
    if ((st = pf_event_record(s->ev[EV_K1], r->s_kernel)) != PF_OK) return st;

    if ((st = pf_stream_wait_event(r->s_down, s->ev[EV_K1])) != PF_OK) return st;
    if ((st = pf_event_record(s->ev[EV_D0], r->s_down)) != PF_OK) return st;
    for (int i = 0; i < c->num_outputs && st == PF_OK; i++)
        st = pf_frame_copy_async(&j->outs[i], &s->douts[i], r->s_down);
    if (st != PF_OK) return st;
    return pf_event_record(s->ev[EV_D1], r->s_down);
}

static void add_gpu_time(rp_run *r, rp_slot *s, rp_stage stage, int e0, int track)
{
    float ms = 0;
    if (pf_event_elapsed_ms(s->ev[e0], s->ev[e0 + 1], &ms) == PF_OK)
        rp_add_busy(r, stage, (int64_t)((double)ms * 1e6));
    if (r->tracer)
        pf_trace_gpu_span(r->tracer, r->gpu_track[track], pf_reproject_stage_name((pf_reproject_stage)stage), s->ev[e0],
                          s->ev[e0 + 1], 0, (int64_t)s->job->seq);
}

static void retire(rp_run *r, rp_slot *s)
{
    rp_job *j = s->job;
    s->job = NULL;
    pf_status st = pf_event_synchronize(s->ev[EV_D1]);
    if (st != PF_OK) {
        rp_job_fail(r, j, "GPU work failed");
    } else if (!atomic_load(&j->failed)) {
        add_gpu_time(r, s, RP_STAGE_UPLOAD, EV_UP0, 0);
        add_gpu_time(r, s, RP_STAGE_KERNEL, EV_K0, 1);
        add_gpu_time(r, s, RP_STAGE_DOWNLOAD, EV_D0, 2);
    }
    hand_over(r, j);
}

static void compute_cuda(rp_worker *w)
{
    rp_run *r = w->r;
    int k = r->inflight, head = 0, count = 0;
    for (;;) {
        while (count && pf_event_query(r->slots[head].ev[EV_D1]) == PF_OK) {
            retire(r, &r->slots[head]);
            head = (head + 1) % k;
            count--;
        }
        if (count == k) {
            retire(r, &r->slots[head]);
            head = (head + 1) % k;
            count--;
        }
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
    while (count) {
        retire(r, &r->slots[head]);
        head = (head + 1) % k;
        count--;
    }
}

void rp_compute_main(void *user)
{
    rp_worker *w = user;
    rp_run *r = w->r;
    if (r->cuda) compute_cuda(w);
    else compute_cpu(w);
    pf_queue_close(r->encode);
}
