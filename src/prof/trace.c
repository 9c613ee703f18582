/* Tracer: recording spans, counters and instants into a fixed buffer, GPU
 * time calibration, and the background counter sampler. The JSON file is
 * written by trace_write.c.
 *
 * Design:
 * - Recording never blocks and never allocates: one relaxed fetch_add hands
 *   out a slot index in a buffer allocated (and pre-faulted) at creation;
 *   the caller fills the 64-byte slot and publishes it by storing its
 *   `ready` flag last with release order. The writer reads only slots whose
 *   flag it sees set (acquire), so it never reads half a slot; a slot still
 *   being filled when a flush runs simply appears in the next flush. When
 *   the buffer is full the event is counted as dropped. Names are pointers
 *   kept as given (prof.h says they must outlive the tracer).
 * - Tracks are a small table (name -> id) under a mutex; ids are indexes
 *   published with a release store of the count, so recording validates a
 *   track id with one acquire load.
 * - GPU time: CUDA event times are only comparable with each other, so at
 *   creation the tracer records a calibration event on a private stream and
 *   notes the host time at which it completed (midpoint of record..sync, the
 *   tightest of three tries). A GPU span's start is then
 *   calib.host_ns + elapsed(calib, start) and its end start + elapsed(start,
 *   end). elapsed() is a float in ms (24-bit mantissa: ~1 us resolution 16 s
 *   away), and the GPU and host clocks drift apart, so the background thread
 *   adds a new calibration point every 5 s and a span is measured from the
 *   latest point that precedes it. Events of the CPU backend hold host
 *   pf_time_ns() stamps and are read directly.
 * - A GPU span is resolved when it is recorded if its events are complete;
 *   otherwise it stays pending (the caller keeps the events; prof.h) and the
 *   next flush synchronizes and resolves it under the flush lock.
 * - The background thread (only with counters or a CUDA device) samples the
 *   device monitor every counter_period_ms into counter events and
 *   recalibrates; it waits on a condition variable so destroy stops it at
 *   once.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "pixflow/io.h"
#include "device/backend.h"
#include "prof/trace_impl.h"

#define CALIB_TRIES 3

pf_tracer_params pf_tracer_params_default(void)
{
    pf_tracer_params p;
    memset(&p, 0, sizeof p);
    p.max_events = (size_t)1 << 20;
    p.process_name = "pixflow";
    return p;
}

/* Recording ------------------------------------------------------------------ */

static pf_trace_slot *claim(pf_tracer *t)
{
    /* Once full, stop advancing `next` (so the slot count stays meaningful
     * and the hot counter is left alone) and count the drop. */
    if (atomic_load_explicit(&t->next, memory_order_relaxed) >= t->max_events) {
        atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
        return NULL;
    }
    uint64_t i = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed);
    if (i >= t->max_events) {
        atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
        return NULL;
    }
    return &t->slots[i];
}

static void publish(pf_trace_slot *s) { atomic_store_explicit(&s->ready, 1, memory_order_release); }

static void reject(pf_tracer *t) { atomic_fetch_add_explicit(&t->rejected, 1, memory_order_relaxed); }

/* Timestamps within +-2^61 ns (73 years) keep every difference the writer
 * takes (ts - origin, end - start) inside int64. */
#define TS_LIMIT ((int64_t)1 << 61)
static bool ts_ok(int64_t ts) { return ts > -TS_LIMIT && ts < TS_LIMIT; }

static bool track_ok(pf_tracer *t, int track)
{
    return track >= 0 && track < atomic_load_explicit(&t->track_count, memory_order_acquire);
}

void pf_trace_span(pf_tracer *t, int track, const char *name, int64_t start_ns, int64_t end_ns,
                   int32_t source, int64_t seq)
{
    if (!t) return;
    if (!name || end_ns < start_ns || !ts_ok(start_ns) || !ts_ok(end_ns) || !track_ok(t, track)) {
        reject(t);
        return;
    }
    pf_trace_slot *s = claim(t);
    if (!s) return;
    s->kind = PF_EV_SPAN;
    s->track = track;
    s->source = source;
    s->name = name;
    s->t0 = start_ns;
    s->t1 = end_ns;
    s->u.seq = seq;
    publish(s);
}

static void record_counter(pf_tracer *t, int pid, const char *name, int64_t ts_ns, double value)
{
    pf_trace_slot *s = claim(t);
    if (!s) return;
    s->kind = PF_EV_COUNTER;
    s->track = pid;
    s->source = -1;
    s->name = name;
    s->t0 = s->t1 = ts_ns;
    s->u.value = value;
    publish(s);
}

void pf_trace_counter(pf_tracer *t, const char *name, int64_t ts_ns, double value)
{
    if (!t) return;
    if (!name || !isfinite(value) || !ts_ok(ts_ns)) {
        reject(t);
        return;
    }
    record_counter(t, 1, name, ts_ns, value);
}

void pf_trace_instant(pf_tracer *t, int track, const char *name, int64_t ts_ns)
{
    if (!t) return;
    if (!name || !ts_ok(ts_ns) || !track_ok(t, track)) {
        reject(t);
        return;
    }
    pf_trace_slot *s = claim(t);
    if (!s) return;
    s->kind = PF_EV_INSTANT;
    s->track = track;
    s->source = -1;
    s->name = name;
    s->t0 = s->t1 = ts_ns;
    s->u.seq = -1;
    publish(s);
}

/* GPU spans -------------------------------------------------------------------- */

static int64_t ms_to_ns(float ms) { return (int64_t)llround((double)ms * 1e6); }

pf_status pf_trace_resolve_gpu(pf_tracer *t, pf_event *e0, pf_event *e1, int calib_hint,
                               bool wait, int64_t *t0, int64_t *t1)
{
    if (e0->dev != e1->dev)
        return pf_set_error(PF_ERR_INVALID, "GPU span with events of %s and %s", e0->dev->spec,
                            e1->dev->spec);
    if (!e0->recorded || !e1->recorded)
        return pf_set_error(PF_ERR_INVALID, "GPU span with an event never recorded");
    if (e0->dev->props.type == PF_DEVICE_CPU) {
        /* backend.h: a CPU event's native handle is its int64 host time. */
        int64_t a = *(const int64_t *)e0->native, b = *(const int64_t *)e1->native;
        if (a < 0 || b < 0)
            return pf_set_error(PF_ERR_INVALID, "GPU span with an event never recorded");
        if (b < a || !ts_ok(a) || !ts_ok(b))
            return pf_set_error(PF_ERR_INVALID, "GPU span ending before it starts (events "
                                                "recorded in the wrong order?)");
        *t0 = a;
        *t1 = b;
        return PF_OK;
    }
    if (!t->gpu_is_cuda || e0->dev != t->gpu)
        return pf_set_error(PF_ERR_UNSUPPORTED,
                            "GPU span with events of %s, but the tracer calibrates %s "
                            "(pf_tracer_params.gpu)",
                            e0->dev->spec, t->gpu ? t->gpu->spec : "no device");
    pf_status st;
    if (wait) {
        if ((st = pf_event_synchronize(e1)) != PF_OK) return st;
        if ((st = pf_event_synchronize(e0)) != PF_OK) return st;
    } else {
        if ((st = pf_event_query(e1)) != PF_OK) return st; /* PF_AGAIN: pending */
        if ((st = pf_event_query(e0)) != PF_OK) return st;
    }
    float dur_ms = 0.0f;
    if ((st = pf_event_elapsed_ms(e0, e1, &dur_ms)) != PF_OK) return st;
    /* Sanity bound (a day): keeps the ns arithmetic below far from overflow. */
    const float max_ms = 86400e3f;
    if (!(dur_ms >= 0.0f && dur_ms < max_ms))
        return pf_set_error(PF_ERR_INVALID, "GPU span of %g ms (events recorded in the wrong "
                                            "order?)",
                            (double)dur_ms);

    int n = atomic_load_explicit(&t->calib_count, memory_order_acquire);
    int j = calib_hint < 0 || calib_hint >= n ? n - 1 : calib_hint;
    if (j < 0) return pf_set_error(PF_ERR_INTERNAL, "GPU span: no calibration point");
    /* The latest calibration point that precedes the start on the GPU: the
     * one current at recording, unless the span's work was queued before it
     * (the offset is then negative), in which case step back. */
    float off_ms = 0.0f;
    bool have = false;
    int used = j;
    for (; j >= 0; j--) {
        float o = 0.0f;
        if (pf_event_elapsed_ms(t->calib[j].ev, e0, &o) != PF_OK) continue;
        off_ms = o;
        used = j;
        have = true;
        if (o >= 0.0f) break;
    }
    if (!have || !(off_ms > -max_ms && off_ms < 1000.0f * max_ms))
        return pf_set_error(PF_ERR_DEVICE, "GPU span: no usable elapsed time from the "
                                           "calibration event");
    *t0 = t->calib[used].host_ns + ms_to_ns(off_ms);
    *t1 = *t0 + ms_to_ns(dur_ms);
    return PF_OK;
}

void pf_trace_gpu_span(pf_tracer *t, int gpu_track, const char *name, pf_event *start,
                       pf_event *end, int32_t source, int64_t seq)
{
    if (!t) return;
    if (!name || !start || !end || !track_ok(t, gpu_track)) {
        reject(t);
        return;
    }
    pf_trace_slot *s = claim(t);
    if (!s) return;
    int hint = atomic_load_explicit(&t->calib_count, memory_order_acquire) - 1;
    int64_t a = 0, b = 0;
    pf_status st = pf_trace_resolve_gpu(t, start, end, hint, false, &a, &b);
    s->kind = PF_EV_GPU_SPAN;
    s->track = gpu_track;
    s->source = source;
    s->name = name;
    s->u.seq = seq;
    s->calib = (uint16_t)(hint < 0 ? 0 : hint);
    s->ev0 = s->ev1 = NULL;
    if (st == PF_OK) {
        s->gpu_state = PF_GPU_RESOLVED;
        s->t0 = a;
        s->t1 = b;
    } else if (st == PF_AGAIN) {
        s->gpu_state = PF_GPU_PENDING;
        s->ev0 = start;
        s->ev1 = end;
        atomic_fetch_add_explicit(&t->gpu_pending, 1, memory_order_relaxed);
    } else {
        s->gpu_state = PF_GPU_FAILED;
        atomic_fetch_add_explicit(&t->gpu_failed, 1, memory_order_relaxed);
        if (!atomic_exchange(&t->warned_gpu, 1))
            PF_LOGW("pf_trace_gpu_span: span '%s' left out: %s (logged once per tracer)", name,
                    pf_last_error());
    }
    publish(s);
}

/* Tracks ----------------------------------------------------------------------- */

static int track_get(pf_tracer *t, const char *name, bool gpu, const char *fn)
{
    if (!t || !name) {
        pf_set_error(PF_ERR_INVALID, "%s: %s is NULL", fn, t ? "name" : "tracer");
        return -1;
    }
    pf_mutex_lock(&t->track_lock);
    int n = atomic_load_explicit(&t->track_count, memory_order_relaxed);
    for (int i = 0; i < n; i++) {
        if (t->tracks[i].gpu == gpu && !strcmp(t->tracks[i].name, name)) {
            pf_mutex_unlock(&t->track_lock);
            return i;
        }
    }
    int id = -1;
    if (n >= PF_TRACE_MAX_TRACKS) {
        pf_set_error(PF_ERR_NOMEM, "%s: track '%s' refused: all %d tracks are in use", fn, name,
                     PF_TRACE_MAX_TRACKS);
    } else if (!(t->tracks[n].name = strdup(name))) {
        pf_set_error(PF_ERR_NOMEM, "%s: out of host memory for track '%s'", fn, name);
    } else {
        t->tracks[n].gpu = gpu;
        id = n;
        atomic_store_explicit(&t->track_count, n + 1, memory_order_release);
    }
    pf_mutex_unlock(&t->track_lock);
    return id;
}

int pf_trace_track(pf_tracer *t, const char *name)
{
    return track_get(t, name, false, "pf_trace_track");
}

int pf_trace_gpu_track(pf_tracer *t, const char *name)
{
    return track_get(t, name, true, "pf_trace_gpu_track");
}

/* Calibration and the sampler thread --------------------------------------------- */

/* Records an event on the private stream and waits for it, CALIB_TRIES
 * times; keeps the try with the shortest record..completion window. */
static pf_status take_calibration(pf_tracer *t, pf_trace_calib *out)
{
    pf_event *best = NULL, *trial = NULL;
    pf_status st = pf_event_create(t->gpu, &best);
    if (st == PF_OK) st = pf_event_create(t->gpu, &trial);
    int64_t best_w = INT64_MAX, best_host = 0;
    for (int i = 0; i < CALIB_TRIES && st == PF_OK; i++) {
        int64_t h0 = pf_time_ns();
        st = pf_event_record(trial, t->calib_stream);
        if (st == PF_OK) st = pf_event_synchronize(trial);
        int64_t h1 = pf_time_ns();
        if (st == PF_OK && h1 - h0 < best_w) {
            pf_event *x = best;
            best = trial;
            trial = x;
            best_w = h1 - h0;
            best_host = h0 + (h1 - h0) / 2;
        }
    }
    pf_event_destroy(&trial);
    if (st != PF_OK) {
        pf_event_destroy(&best);
        return st;
    }
    out->ev = best;
    out->host_ns = best_host;
    out->window_ns = best_w;
    return PF_OK;
}

static void recalibrate(pf_tracer *t)
{
    int n = atomic_load_explicit(&t->calib_count, memory_order_relaxed);
    if (n >= PF_TRACE_MAX_CALIB) return; /* keep measuring from the last point */
    if (take_calibration(t, &t->calib[n]) != PF_OK) {
        PF_LOGW("tracer: GPU time recalibration failed: %s", pf_last_error());
        return;
    }
    atomic_store_explicit(&t->calib_count, n + 1, memory_order_release);
}

static void sample_counters(pf_tracer *t)
{
    pf_device_sample s;
    if (pf_monitor_sample(t->monitor, &s) != PF_OK) {
        if (!atomic_exchange(&t->warned_counters, 1))
            PF_LOGW("tracer: device counters unavailable: %s (logged once)", pf_last_error());
        return;
    }
    const double mib = 1024.0 * 1024.0;
    if (s.nvml) {
        record_counter(t, 2, "GPU utilization %", s.time_ns, (double)s.gpu_util_pct);
        record_counter(t, 2, "GPU memory used MiB", s.time_ns, (double)s.nvml_mem_used / mib);
        record_counter(t, 2, "GPU power W", s.time_ns, (double)s.power_mw / 1000.0);
        record_counter(t, 2, "GPU temperature C", s.time_ns, (double)s.temperature_c);
    } else {
        double used = s.mem_total > s.mem_free ? (double)(s.mem_total - s.mem_free) / mib : 0.0;
        if (t->gpu_is_cuda) record_counter(t, 2, "GPU memory used MiB", s.time_ns, used);
        else record_counter(t, 1, "host memory used MiB", s.time_ns, used);
    }
}

static void *sampler_main(void *arg)
{
    pf_tracer *t = arg;
    const int64_t period = (int64_t)t->counter_period_ms * 1000000;
    int64_t now = pf_time_ns();
    int64_t next_counter = t->monitor ? now : INT64_MAX;
    int64_t next_calib = t->gpu_is_cuda ? now + PF_TRACE_RECALIB_NS : INT64_MAX;
    pf_mutex_lock(&t->sampler_lock);
    while (!t->sampler_stop) {
        int64_t due = next_counter < next_calib ? next_counter : next_calib;
        if (pf_time_ns() < due) {
            pf_cond_timedwait_until(&t->sampler_wake, &t->sampler_lock, due);
            continue;
        }
        pf_mutex_unlock(&t->sampler_lock);
        now = pf_time_ns();
        if (now >= next_counter) {
            sample_counters(t);
            next_counter += period;
            if (next_counter <= now) next_counter = now + period; /* fell behind: skip */
        }
        if (now >= next_calib) {
            recalibrate(t);
            next_calib = now + PF_TRACE_RECALIB_NS;
        }
        pf_mutex_lock(&t->sampler_lock);
    }
    pf_mutex_unlock(&t->sampler_lock);
    return NULL;
}

static void stop_sampler(pf_tracer *t)
{
    if (!t->sampler_running) return;
    pf_mutex_lock(&t->sampler_lock);
    t->sampler_stop = true;
    pf_cond_broadcast(&t->sampler_wake);
    pf_mutex_unlock(&t->sampler_lock);
    pf_thread_join(t->sampler);
    t->sampler_running = false;
}

/* Lifecycle ---------------------------------------------------------------------- */

static void tracer_free(pf_tracer *t)
{
    stop_sampler(t);
    pf_monitor_destroy(&t->monitor);
    if (t->calib) {
        int n = atomic_load(&t->calib_count);
        for (int i = 0; i < n; i++) pf_event_destroy(&t->calib[i].ev);
        free(t->calib);
    }
    pf_stream_destroy(&t->calib_stream);
    int n = atomic_load(&t->track_count);
    for (int i = 0; i < n; i++) free(t->tracks[i].name);
    pf_aligned_free(t->slots);
    free(t->path);
    free(t->process_name);
    pf_mutex_destroy(&t->track_lock);
    pf_mutex_destroy(&t->flush_lock);
    pf_mutex_destroy(&t->sampler_lock);
    pf_cond_destroy(&t->sampler_wake);
    pf_aligned_free(t);
}

pf_status pf_tracer_create(const pf_tracer_params *p, pf_tracer **out)
{
    PF_CHECK_ARG(out, "pf_tracer_create", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(p, "pf_tracer_create", "params is NULL");
    if (!p->path || !p->path[0])
        return pf_set_error(PF_ERR_INVALID, "pf_tracer_create: path is %s",
                            p->path ? "empty" : "NULL");
    size_t max_events = p->max_events ? p->max_events : (size_t)1 << 20;
    const size_t max_allowed = ((size_t)1 << 32) - 2; /* slot indexes are 32-bit when writing */
    if (max_events > max_allowed)
        return pf_set_error(PF_ERR_INVALID, "pf_tracer_create: max_events %zu exceeds %zu",
                            max_events, max_allowed);
    if (p->counter_period_ms < 0)
        return pf_set_error(PF_ERR_INVALID, "pf_tracer_create: counter_period_ms %d is negative",
                            p->counter_period_ms);
    if (p->counter_period_ms > 0 && !p->gpu)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_tracer_create: counter_period_ms %d needs params.gpu (the "
                            "device to sample)",
                            p->counter_period_ms);

    pf_tracer *t = pf_aligned_alloc(64, sizeof *t);
    if (!t) return pf_set_error(PF_ERR_NOMEM, "pf_tracer_create: out of host memory");
    memset(t, 0, sizeof *t);
    pf_mutex_init(&t->track_lock);
    pf_mutex_init(&t->flush_lock);
    pf_mutex_init(&t->sampler_lock);
    pf_cond_init(&t->sampler_wake);
    t->max_events = max_events;
    t->counter_period_ms = p->counter_period_ms;
    t->gpu = p->gpu;
    t->path = strdup(p->path);
    t->process_name = strdup(p->process_name && p->process_name[0] ? p->process_name : "pixflow");
    t->slots = pf_aligned_alloc(64, max_events * sizeof(pf_trace_slot));
    if (!t->path || !t->process_name || !t->slots) {
        char b[32];
        tracer_free(t);
        return pf_set_error(PF_ERR_NOMEM,
                            "pf_tracer_create: out of host memory for %zu events (%s)", max_events,
                            pf_fmt_bytes(b, sizeof b, max_events * sizeof(pf_trace_slot)));
    }
    /* Touch every page now: a first-touch page fault inside a recording call
     * would cost microseconds in the traced code. */
    memset(t->slots, 0, max_events * sizeof(pf_trace_slot));

    /* Fail now, not at the end of a long run, if the file cannot be written
     * (not probed for a path written in place: opening a FIFO would block). */
    if (!pf_trace_writes_in_place(t->path)) {
        pf_output *probe = NULL;
        pf_status st = pf_output_open(t->path, 0, &probe);
        if (st != PF_OK) {
            tracer_free(t);
            return pf_error_prefix(PF_ERR_IO, "pf_tracer_create"); /* a file it cannot write */
        }
        pf_output_abort(&probe);
    }

    t->origin_ns = pf_time_ns();
    if (p->gpu && pf_device_get_type(p->gpu) == PF_DEVICE_CUDA) {
        t->gpu_is_cuda = true;
        pf_stream_params sp = pf_stream_params_default();
        sp.device = p->gpu;
        pf_status st = pf_stream_create(&sp, &t->calib_stream);
        if (st == PF_OK) {
            t->calib = calloc(PF_TRACE_MAX_CALIB, sizeof *t->calib);
            if (!t->calib) st = pf_set_error(PF_ERR_NOMEM, "pf_tracer_create: out of host memory");
        }
        if (st == PF_OK) st = take_calibration(t, &t->calib[0]);
        if (st != PF_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", pf_last_error());
            tracer_free(t);
            return pf_set_error(st, "pf_tracer_create: GPU time calibration on %s failed: %s",
                                p->gpu->spec, why);
        }
        atomic_store(&t->calib_count, 1);
    }
    if (p->counter_period_ms > 0) {
        pf_monitor_params mp = pf_monitor_params_default();
        mp.device = p->gpu;
        pf_status st = pf_monitor_create(&mp, &t->monitor);
        if (st != PF_OK) {
            tracer_free(t);
            return st;
        }
    }
    if (t->monitor || t->gpu_is_cuda) {
        pf_status st = pf_thread_start(&t->sampler, "pf-trace", sampler_main, t);
        if (st != PF_OK) {
            tracer_free(t);
            return st;
        }
        t->sampler_running = true;
    }
    *out = t;
    return PF_OK;
}

pf_status pf_tracer_flush(pf_tracer *t)
{
    PF_CHECK_ARG(t, "pf_tracer_flush", "tracer is NULL");
    pf_mutex_lock(&t->flush_lock);
    pf_status st = pf_trace_write(t);
    pf_mutex_unlock(&t->flush_lock);
    return st;
}

void pf_tracer_destroy(pf_tracer **pt)
{
    if (!pt || !*pt) return;
    pf_tracer *t = *pt;
    *pt = NULL;
    stop_sampler(t); /* its last counters and calibration points are in */
    pf_mutex_lock(&t->flush_lock);
    if (pf_trace_write(t) != PF_OK) PF_LOGE("pf_tracer_destroy: trace not written: %s", pf_last_error());
    pf_mutex_unlock(&t->flush_lock);
    tracer_free(t);
}

pf_status pf_tracer_get_stats(pf_tracer *t, pf_tracer_stats *out)
{
    PF_CHECK_ARG(t && out, "pf_tracer_get_stats", "tracer or out is NULL");
    uint64_t n = atomic_load_explicit(&t->next, memory_order_relaxed);
    out->events = n < t->max_events ? n : t->max_events;
    out->dropped = atomic_load_explicit(&t->dropped, memory_order_relaxed);
    out->rejected = atomic_load_explicit(&t->rejected, memory_order_relaxed);
    out->gpu_pending = atomic_load_explicit(&t->gpu_pending, memory_order_relaxed);
    out->gpu_failed = atomic_load_explicit(&t->gpu_failed, memory_order_relaxed);
    return PF_OK;
}
