/* pixflow/prof.h - tracing to Chrome/Perfetto JSON, and latency histograms.
 *
 *   pf_tracer_params tp = pf_tracer_params_default();
 *   tp.path = "run.trace.json";
 *   pf_tracer *t = NULL;
 *   pf_tracer_create(&tp, &t);
 *   int track = pf_trace_track(t, "decode");          // one row in the UI
 *   int64_t t0 = pf_time_ns();
 *   ...work...
 *   pf_trace_span(t, track, "decode", t0, pf_time_ns(), source, seq);
 *   pf_trace_counter(t, "queue decode->infer", pf_time_ns(), 3);
 *   pf_tracer_destroy(&t);                             // writes the file
 *
 * Open the file in https://ui.perfetto.dev or chrome://tracing. The tracer
 * keeps events in a fixed buffer sized at creation (no allocation while
 * tracing) and writes them when destroyed or flushed; when the buffer is
 * full, further events are counted and dropped (the count is written into
 * the trace's metadata), never blocking the traced code. All functions are
 * thread-safe; recording an event costs one atomic increment and a copy.
 *
 * The file: {"traceEvents": [...], "displayTimeUnit": "ms", "metadata": {...}}.
 * Timestamps ("ts", "dur") are microseconds with three decimals (exact ns)
 * counted from the tracer's creation; metadata.ts_origin_ns holds that
 * origin in pf_time_ns() units. CPU tracks are threads of process 1
 * (params.process_name), GPU tracks threads of process 2. Spans are "X"
 * events with args {source, seq}; counters "C" events with args {value};
 * instants "i" events. Each flush rewrites the whole file through
 * path.tmp renamed over it, so a reader never sees half a trace (a path
 * that is a symlink, FIFO or device, e.g. /dev/stdout, is written in place).
 *
 * GPU work: pf_trace_gpu_span() takes two recorded pf_events; they are
 * resolved to host time when complete (CUDA event time is offset from a
 * calibration event recorded at creation and again every few seconds) and
 * shown on their own GPU tracks. Events of the CPU backend hold host times
 * and are taken as they are.
 *
 * Frames are followed across stages by flow arrows: spans given the same
 * (source, seq) are linked in time order (Perfetto's flow v2 fields
 * "bind_id", "flow_in", "flow_out" on the spans themselves). */
#ifndef PIXFLOW_PROF_H
#define PIXFLOW_PROF_H

#include "device.h"

PF_BEGIN_DECLS

typedef struct pf_tracer pf_tracer;

typedef struct pf_tracer_params {
    const char *path;          /* output file; required */
    size_t max_events;         /* buffer size; default 1 << 20; 0 = default. 64
                                  bytes an event, allocated and touched at
                                  creation (64 MiB by default) */
    pf_device *gpu;            /* device whose events are traced and whose NVML
                                  counters are sampled; NULL = none. GPU spans
                                  of CUDA events need this to be their device. */
    int counter_period_ms;     /* device counters sampled this often (needs gpu;
                                  with NVML: utilisation %, memory used MiB,
                                  power W, temperature C; else memory used
                                  MiB from the runtime); 0 = off */
    const char *process_name;  /* shown in the UI; default "pixflow" */
} pf_tracer_params;

PF_API pf_tracer_params pf_tracer_params_default(void);
/* Errors: PF_ERR_INVALID for a missing path, max_events over 2^32 - 2, a
 * negative counter_period_ms or counters without gpu; PF_ERR_IO when the
 * file (path.tmp) cannot be written; the device's status when the GPU time
 * calibration fails. With a CUDA gpu or counters on, a background thread
 * samples the counters and recalibrates GPU time every 5 s. */
PF_API pf_status pf_tracer_create(const pf_tracer_params *p, pf_tracer **out);
/* Writes the trace (resolving pending GPU spans, waiting for their events)
 * and frees the tracer; sets *t = NULL, accepts NULL. No other call on the
 * tracer may run concurrently or follow. A failed write is logged. */
PF_API void pf_tracer_destroy(pf_tracer **t);
/* Writes everything recorded so far to the file now (a complete JSON file).
 * Pending GPU spans are resolved first, waiting for their events. May run
 * while other threads record; an event whose recording is still in progress
 * at that instant appears in the next flush. PF_ERR_IO names the file. */
PF_API pf_status pf_tracer_flush(pf_tracer *t);

/* A named row (thread-like track); the same name returns the same id. The
 * name is copied. Ids are small integers >= 0, stable for the tracer's life;
 * at most 256 tracks (CPU and GPU together). Returns -1 on a NULL argument or
 * a full table (message via pf_last_error()). */
PF_API int pf_trace_track(pf_tracer *t, const char *name);
/* A row on the GPU side (shown under a "GPU" process). A GPU track and a CPU
 * track of the same name are different tracks. */
PF_API int pf_trace_gpu_track(pf_tracer *t, const char *name);

/* A complete span [start_ns, end_ns] (pf_time_ns clock) on a track. `name`
 * must stay valid until the tracer is destroyed (use string literals or
 * stage names). source/seq < 0: not part of a frame's flow. Rejected (and
 * counted in pf_tracer_stats.rejected) when the track is unknown, name is
 * NULL, end_ns < start_ns or a time is beyond +-2^61 ns. */
PF_API void pf_trace_span(pf_tracer *t, int track, const char *name, int64_t start_ns,
                          int64_t end_ns, int32_t source, int64_t seq);
/* A span between two recorded pf_events (of params.gpu, or of the CPU
 * device). Event lifetime, the one rule to follow:
 *  - If both events are complete when this is called (after a synchronize,
 *    or once pf_event_query(end) returned PF_OK), the span is resolved at
 *    once and the events may be re-recorded or destroyed as soon as this
 *    returns. This is the intended use: e.g. trace a frame's event pair when
 *    the frame retires, just before the pair is reused.
 *  - Otherwise the span is kept pending (pf_tracer_stats.gpu_pending) and
 *    both events must stay alive and not be re-recorded until the next
 *    pf_tracer_flush() or pf_tracer_destroy(), which waits for them.
 * Costs two event queries and two elapsed-time reads when resolved at once
 * (bench/bench_trace measures it). Spans whose events cannot be resolved
 * (never recorded, end before start, a CUDA device other than params.gpu)
 * are counted in pf_tracer_stats.gpu_failed and left out of the file (the
 * first one per tracer is logged with the reason). */
PF_API void pf_trace_gpu_span(pf_tracer *t, int gpu_track, const char *name, pf_event *start,
                              pf_event *end, int32_t source, int64_t seq);
/* A counter track value (queue depths, memory, utilisation), shown under
 * process 1. `name` is kept like a span's. Non-finite values are rejected. */
PF_API void pf_trace_counter(pf_tracer *t, const char *name, int64_t ts_ns, double value);
/* An instant marker on a track; `name` is kept like a span's. */
PF_API void pf_trace_instant(pf_tracer *t, int track, const char *name, int64_t ts_ns);

typedef struct pf_tracer_stats {
    uint64_t events;           /* recorded (slots used, of max_events) */
    uint64_t dropped;          /* buffer full */
    uint64_t rejected;         /* invalid calls (unknown track, NULL name,
                                  end < start, a time beyond +-2^61 ns,
                                  non-finite counter value) */
    uint64_t gpu_pending;      /* GPU spans not yet resolved */
    uint64_t gpu_failed;       /* GPU spans that could not be resolved */
} pf_tracer_stats;

PF_API pf_status pf_tracer_get_stats(pf_tracer *t, pf_tracer_stats *out);

/* Latency histogram ------------------------------------------------------------
 *
 * Logarithmic buckets, 16 per power of two (each 2^(1/16) = 4.4% wider than
 * the one before) from 100 ns to ~107 s, plus one bucket below and one above:
 * quantiles within 4.4% relative error (linear interpolation inside a
 * bucket, clamped to the exact minimum and maximum seen), constant memory
 * (about 4 KiB), lock-free recording. */

typedef struct pf_histogram pf_histogram;

PF_API pf_status pf_histogram_create(pf_histogram **out);
PF_API void pf_histogram_destroy(pf_histogram **h);
/* Thread-safe, lock-free (atomic adds; the min/max update retries only
 * while another thread moves the same extreme). Negative values count as 0. */
PF_API void pf_histogram_record(pf_histogram *h, int64_t value_ns);
/* q in [0, 1] (clamped; NaN = 0.5): the value at rank q * (count - 1),
 * interpolated between the two samples around it (numpy's default), in ns;
 * 0 when empty. q = 0 and q = 1 return the exact min and max. Safe to call
 * while other threads record (reads a snapshot of the buckets). */
PF_API double pf_histogram_quantile(const pf_histogram *h, double q);
PF_API uint64_t pf_histogram_count(const pf_histogram *h);
/* Exact mean of the recorded values (after clamping negatives to 0); 0 when empty. */
PF_API double pf_histogram_mean(const pf_histogram *h);
/* Empties the histogram. Values recorded concurrently with a reset may be
 * partly kept; quiesce recorders for an exact reset. */
PF_API void pf_histogram_reset(pf_histogram *h);

PF_END_DECLS

#endif
