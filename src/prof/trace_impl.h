/* Internal: the tracer's state, shared by trace.c (recording, tracks, GPU
 * time calibration, the counter sampler) and trace_write.c (the JSON file). */
#ifndef PF_PROF_TRACE_IMPL_H
#define PF_PROF_TRACE_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/sys.h"
#include "pixflow/prof.h"

#define PF_TRACE_MAX_TRACKS 256
#define PF_TRACE_MAX_CALIB 4096          /* calibration points kept (5 s apart: ~5.7 h) */
#define PF_TRACE_RECALIB_NS 5000000000ll /* new calibration point this often */

enum {
    PF_EV_SPAN = 1,
    PF_EV_GPU_SPAN = 2,
    PF_EV_COUNTER = 3,
    PF_EV_INSTANT = 4
};

/* State of a GPU span's timing. */
enum {
    PF_GPU_RESOLVED = 0,
    PF_GPU_PENDING = 1,
    PF_GPU_FAILED = 2
};

/* One recorded event: 64 bytes, one cache line. `ready` is stored last with
 * release order by the recording thread; the writer reads a slot only after
 * an acquire load sees it set, so it never sees a half-written slot. Slots
 * are never reused. */
typedef struct pf_trace_slot {
    _Atomic uint32_t ready;
    uint8_t kind;           /* PF_EV_* */
    uint8_t gpu_state;      /* PF_GPU_* (GPU spans only; written by the flush
                               that resolves a pending span, under flush_lock) */
    uint16_t calib;         /* GPU spans: latest calibration point at recording */
    int32_t track;          /* spans, instants: track id; counters: pid (1 or 2) */
    int32_t source;
    const char *name;
    int64_t t0, t1;         /* start/end ns (pf_time_ns clock); counter/instant: t0 */
    union {
        int64_t seq;
        double value;       /* counters */
    } u;
    pf_event *ev0, *ev1;    /* GPU spans until resolved */
} pf_trace_slot;

typedef struct pf_trace_track_info {
    char *name;             /* copied */
    bool gpu;
} pf_trace_track_info;

/* A calibration point: the calibration event's completion happened at
 * host_ns (pf_time_ns clock), within +- window_ns / 2. */
typedef struct pf_trace_calib {
    pf_event *ev;
    int64_t host_ns;
    int64_t window_ns;
} pf_trace_calib;

struct pf_tracer {
    char *path;
    char *process_name;
    size_t max_events;
    pf_trace_slot *slots;
    int64_t origin_ns;      /* ts 0 in the file */

    _Atomic int track_count; /* tracks [0, track_count) are complete */

    /* Written by every recording call: alone on its cache line, so the
     * read-mostly fields above (read by every call too) do not bounce. The
     * struct is allocated 64-byte aligned for this. */
    _Alignas(64) _Atomic uint64_t next; /* slots handed out (may pass max_events by a few) */
    _Alignas(64) _Atomic uint64_t dropped;
    _Atomic uint64_t rejected, gpu_pending, gpu_failed;
    _Atomic int warned_gpu, warned_counters; /* log a kind of failure once */

    pf_mutex track_lock;
    pf_trace_track_info tracks[PF_TRACE_MAX_TRACKS];

    /* GPU time: only when params.gpu is a CUDA device. */
    pf_device *gpu;
    bool gpu_is_cuda;
    pf_stream *calib_stream;
    pf_trace_calib *calib;   /* PF_TRACE_MAX_CALIB entries */
    _Atomic int calib_count; /* entries [0, calib_count) are complete */

    /* Background thread: counters and recalibration. */
    int counter_period_ms;
    pf_monitor *monitor;
    bool sampler_running;
    pf_thread sampler;
    pf_mutex sampler_lock;
    pf_cond sampler_wake;
    bool sampler_stop;

    pf_mutex flush_lock;     /* one flush (and pending GPU resolution) at a time */
};

/* Resolves a GPU span's events into host ns. wait: synchronize them first
 * (else PF_AGAIN while either is incomplete). PF_OK, PF_AGAIN, or an error
 * (the span cannot be resolved). */
pf_status pf_trace_resolve_gpu(pf_tracer *t, pf_event *ev0, pf_event *ev1, int calib_hint,
                               bool wait, int64_t *t0, int64_t *t1);

/* Whether `path` exists and is not a plain file (a symlink, FIFO or device):
 * then it is not probed at create (opening a FIFO would block). Writing goes
 * through pf_output (pixflow/io.h), which writes such paths in place. */
bool pf_trace_writes_in_place(const char *path);

/* Writes the whole trace to t->path (caller holds flush_lock). */
pf_status pf_trace_write(pf_tracer *t);

#endif
