/* Private: the structures shared by the pipeline runtime's files.
 *
 *   pipeline.c  graph building, validation, transfer insertion, modes,
 *               start / wait / cancel / destroy, the watcher thread
 *   stage.c     worker threads: source and process loops, batching, emit
 *               with fan-out, ordering, GPU readiness, error propagation
 *   transfer.c  the runtime-inserted host<->device copy stage
 *   stats.c     statistics snapshot, table and JSON
 *   streams.c   per-stream (source id) counters and latency
 *   fanin.c     taking items from several input edges (fan-in)
 *   live.c      adding and connecting stages while the pipeline runs
 *   demux.c, mux.c  the built-in `demux` and `mux` stage types
 *
 * Locking, outermost first: pipeline mu > stage in_mu > stage ord_mu > the
 * edge's own lock; a fan-in stage's notifier lock (edge.h) is taken under
 * in_mu by its consumer and alone by producers (after the edge lock is let
 * go), never together with an edge lock. Counters are atomics (relaxed) so
 * workers never take a lock to count.
 *
 * What may change while running (live.c): stages and edges are appended to
 * p->stages / p->edges under p->mu (every reader that runs concurrently -
 * get_stats, the watcher, pl_stop_all - holds p->mu); a consumer's input
 * list s->in grows under its in_mu (its workers read it under in_mu only).
 * Nothing is ever removed before destroy; a stage's outputs (s->out) are
 * fixed once it runs. */
#ifndef PF_PIPELINE_IMPL_H
#define PF_PIPELINE_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>

#include "pixflow/pipeline.h"
#include "pixflow/prof.h"
#include "pixflow/thread.h"

#include "../core/sys.h"
#include "batcher.h"
#include "edge.h"

/* Events per worker recorded at emit (GPU stages). A slot is re-recorded
 * every PL_READY_RING emits; a consumer still holding the older pointer then
 * waits for a later point of the same stream, which includes the work it
 * needs (stream order), so reuse is safe and only rarely waits longer. */
#define PL_READY_RING 8
/* Process calls of a GPU stage whose input items are kept alive until the
 * stage's stream has passed them (see stage.c, "deferred release"). */
#define PL_DEFER 4
/* Default period of the device counters in a trace (pf_pipeline_params). */
#define PL_TRACE_COUNTER_MS 100

typedef struct pl_edge {
    int index;
    pf_stage *from, *to;
    pf_edge_params params;     /* as configured (after mode: effective) */
    pf_edge *e;                /* created at start */
    char *label;               /* "from -> to" */
    char *counter;             /* "queue from -> to" (trace counter name) */
    int last_depth;            /* last value written to the trace */
    bool ended;                /* consumer side, under to->in_mu: EOF seen */
} pl_edge;

typedef struct pl_transfer pl_transfer;
typedef struct pl_streams pl_streams;

/* Per worker thread. */
struct pf_stage_ctx {
    pf_stage *st;
    int index;                 /* thread index */
    pf_stream *stream;
    pf_thread thread;
    bool thread_started;
    char track_name[96];
    int track;                 /* trace track */
    int64_t ticket;            /* ordered stages: batch being processed; -1 none */
    int64_t blocked_ns;        /* time blocked in emit during the current call */
    bool in_call;              /* inside source/process (emit allowed) */
    pf_allocator *alloc[3];    /* pf_stage_allocator() per domain, cached */
    pf_item *batch;            /* max_batch items being handed to process */
    pf_item *drain;            /* batching stages: batch_cap items moved from the
                                  input edges to the batcher in one pass */
    int32_t *m_source;         /* (source, seq, t_source) of the batch, kept */
    int64_t *m_seq, *m_tsrc;   /* because process owns the items */
    /* GPU stages */
    pf_event *ready[PL_READY_RING];
    unsigned ready_pos;
    pf_event *defer_ev[PL_DEFER];
    pf_item *defer_items;      /* PL_DEFER * max_batch */
    int defer_n[PL_DEFER];
    int defer_head, defer_count;
    /* GPU spans (tracing a GPU stage, stage.c "GPU spans"): per defer slot a
     * start event recorded before the call, an end event recorded at each
     * emit of the call (defer_ev is the end of a call that emitted nothing)
     * and the (source, seq) of its items, traced when the slot is released. */
    bool gspan_on;
    bool gspan_open;           /* a traced process call is running (emit records its end) */
    int gpu_track;             /* trace GPU track; -1 none */
    pf_event *gspan_ev[PL_DEFER];
    pf_event *gspan_end[PL_DEFER];
    bool gspan_end_set[PL_DEFER]; /* gspan_end holds the slot's end, else defer_ev */
    int32_t *gspan_source;     /* PL_DEFER * max_batch */
    int64_t *gspan_seq;
    int gspan_n[PL_DEFER];     /* spans to trace at release; 0 = none */
};

struct pf_stage {
    pf_pipeline *pl;
    int index;
    char *name;
    pf_stage_desc d;           /* d.name == name */
    pf_device *dev;            /* d.device or the CPU device */
    bool gpu;                  /* on a CUDA device (events, deferred release) */
    bool is_transfer;
    pl_transfer *xfer;
    int source_ordinal;        /* sources: 0, 1, ... in order of adding */
    bool live;                 /* added while the pipeline ran (live.c) */
    bool launched;             /* its workers were started (start or start_added) */
    pl_edge **in;              /* input edges (fan-in: several), under in_mu once running */
    int nin, cap_in;
    pl_edge **out;
    int nout, cap_out;
    int max_batch;             /* effective (mode applied) */
    bool ordered;              /* effective: d.ordered && threads > 1 */
    int nthreads;

    /* running */
    pf_stage_ctx *w;           /* nthreads */
    atomic_int active;         /* workers not finished */
    atomic_int started;        /* workers that ran their start callback */
    pf_mutex in_mu;            /* input side when shared by several workers */
    pf_batcher *batcher;
    int batch_cap;             /* requests the batcher may hold */
    bool in_eos;               /* every input edge has ended */
    int in_ended;              /* input edges that have ended (fan-in) */
    int in_rr;                 /* fan-in: the edge to look at first next time */
    pf_edge_notify notify;     /* every input edge signals it (from create to free) */
    int64_t next_ticket;
    pf_mutex ord_mu;
    pf_cond ord_cv;
    int64_t emit_turn;
    pf_mutex src_mu;           /* sources: claims, seq, pacing */
    int64_t claimed, next_seq, next_deadline, period_ns;

    /* statistics */
    atomic_uint_fast64_t items_in, items_out, errors, batches, busy_ns, transfers, dropped;
    atomic_uint_fast64_t transfers_p2p; /* of transfers: device to device directly */
    atomic_int batch_limit;            /* pf_stage_limit_batch's limit; 0 = never lowered */
    atomic_uint_fast64_t batch_limits; /* times it was lowered */
    atomic_uint_fast64_t batch_hist[PF_STATS_MAX_BATCH + 1];
    pf_histogram *lat;
    _Atomic int64_t t_end;     /* 0 while running */
};

enum { PL_CREATED = 0, PL_RUNNING = 1, PL_FINISHED = 2 };

typedef struct pl_alloc {
    pf_device *dev;
    pf_mem_domain domain;
    pf_allocator *a;
} pl_alloc;

struct pf_pipeline {
    char *name;
    pf_pipeline_mode mode;
    bool strict;
    char *trace_path;
    int trace_counter_ms;
    bool sources_wait_start;   /* params: the start barrier below */
    size_t trace_max_events;
    pf_device *trace_gpu;      /* CUDA device the tracer calibrates; NULL none */
    pf_clock clock;

    pf_stage **stages;
    int nstages, cap_stages, nsources;
    pl_edge **edges;
    int nedges, cap_edges;

    pf_mutex mu;
    pf_cond cv;                /* state changes, stop, pacing wake-ups */
    int state;
    bool broken;               /* a start failed half-way: no second try */
    int stages_running;
    /* Workers of processing stages whose start callback (a model's plans, a
     * device context) has not returned: sources produce nothing until it is
     * 0, so a realtime or live stream does not queue frames behind a
     * second of planning and report it as latency (under mu; cv). */
    int starting;
    pf_status status;          /* first error / cancel wins */
    bool status_set;
    char errmsg[1024];
    atomic_int stopping;       /* error or cancel: unwind */
    atomic_int cancel_flag;    /* set by cancel / cancel_async */
    atomic_int edges_cancelled;
    int64_t t_start, t_end;

    pf_mutex join_mu;
    bool joined;
    pf_thread watcher;
    bool watcher_started;

    pf_tracer *tracer;
    pf_histogram *e2e;
    pl_streams *streams;
    atomic_uint_fast64_t completed;

    pl_alloc allocs[8];
    int nallocs;

    /* get_stats snapshot storage */
    pf_stage_stats *snap_stages;
    pf_edge_stats *snap_edges;
    pf_stream_stats *snap_streams;
    int snap_ns, snap_ne, snap_nstr;
};

/* The pipeline's clock (injectable). */
static inline int64_t pl_now(const pf_pipeline *p)
{
    return p->clock.now_ns ? p->clock.now_ns(p->clock.user) : pf_time_ns();
}

/* A memory location: host side (any host-addressable domain) or a device. */
static inline bool pl_domain_is_host(pf_mem_domain d) { return d != PF_MEM_DEVICE; }

/* Tests only: treat every stage as a GPU stage (ready events at emit,
 * deferred release), so that logic also runs on CPU streams and events. */
extern int pl_test_force_gpu_path;

/* streams.c: per-stream statistics, keyed by item.source (lock-free
 * recording; a stream is made on its first item, at most PL_MAX_STREAMS). */
#define PL_MAX_STREAMS 4096
pf_status pl_streams_create(pl_streams **out);
void pl_streams_destroy(pl_streams **s);
void pl_stream_in(pl_streams *s, int32_t source, int64_t now_ns);
/* An item reached a sink: e2e_ns < 0 when it has no source timestamp. */
void pl_stream_out(pl_streams *s, int32_t source, int64_t now_ns, int64_t e2e_ns);
void pl_stream_drop(pl_streams *s, int32_t source);
/* The edges' drop hook (user = the pipeline). */
void pl_stream_on_drop(void *user, const pf_item *victim);
/* Snapshot sorted by source id into *arr (grown as needed, *cap its size);
 * returns the count. `now` ends the fps window of live streams. */
int pl_streams_snapshot(pl_streams *s, pf_stream_stats **arr, int *cap, int64_t now_ns);

/* fanin.c: a process worker's input (several edges, or one). */
pf_status pl_fanin_pop(pf_stage_ctx *ctx, pf_item *out);
/* Moves up to `max` queued items from the input edges into out[], fairly
 * (round-robin over the edges); notes edges that ended (s->in_eos once all
 * have). Caller holds in_mu. Returns the count, or a negative status when
 * cancelled. */
int pl_fanin_drain(pf_stage *s, pf_item *out, int max);
/* Waits (in_mu held) until an input edge may have changed or the absolute
 * deadline on the pf_time_ns clock passes (INT64_MAX: none). */
void pl_fanin_wait(pf_stage *s, uint64_t seen, int64_t deadline_ns);
/* Creates edge e's runtime edge (mode applied before), registering the hooks. */
pf_status pl_edge_open(pf_pipeline *p, pl_edge *e);

/* pipeline.c */
/* Records the first error (or cancel) and unwinds everything; thread-safe.
 * `msg` is the full message. */
void pl_fail(pf_pipeline *p, pf_status status, const char *msg);
/* Cancels every edge once (wakes all blocked workers). */
void pl_stop_all(pf_pipeline *p);
/* The mode's effect on one edge / stage (start, or live additions). */
void pl_apply_mode_edge(pf_pipeline *p, pl_edge *e);
void pl_apply_mode_stage(pf_pipeline *p, pf_stage *s);
/* Appends an edge record (pipeline.c; caller holds p->mu, and to->in_mu when
 * `to` runs); slot < 0: to's next input. */
pf_status pl_edge_new(pf_pipeline *p, pf_stage *from, pf_stage *to, const pf_edge_params *ep,
                      int slot, const char *fn, pl_edge **out);
/* Whether a producer's items can be read by a consumer without a transfer. */
bool pl_locations_match(const pf_stage *from, const pf_stage *to);

/* live.c: connect while running (pf_pipeline_connect after start). */
pf_status pl_live_connect(pf_pipeline *p, pf_stage *from, pf_stage *to, const pf_edge_params *e);
/* Called by the last worker of a stage. */
void pl_stage_finished(pf_pipeline *p, pf_stage *s);
/* The start barrier (pf_pipeline.starting): `workers` processing workers
 * are past their start callback; sources wait for all of them (or a stop). */
void pl_started(pf_pipeline *p, int workers);
void pl_wait_started(pf_pipeline *p);
pf_allocator *pl_get_allocator(pf_pipeline *p, pf_device *dev, pf_mem_domain domain);

/* stage.c */
pf_status pl_stage_prepare(pf_stage *s);   /* contexts, streams, events, batcher */
void pl_stage_release(pf_stage *s);        /* after the workers are joined */
void *pl_worker_main(void *arg);
void pl_stage_wake(pf_stage *s);           /* wakes ordered waiters after a stop */
/* Whether a part's buffer lives where the stage `accepts` (side and device). */
bool pl_location_matches(const pf_buffer *buf, pf_mem_domain want, pf_device *want_dev);

/* transfer.c */
/* Creates the transfer state for an edge from `from` to `to`. */
pf_status pl_transfer_create(pf_pipeline *p, pf_stage *from, pf_stage *to, pl_transfer **out);
void pl_transfer_destroy(pl_transfer **t);
pf_status pl_transfer_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n);
/* "h2d", "d2h" or "d2d" for the declared sides. */
const char *pl_transfer_kind(const pf_stage *from, const pf_stage *to);
/* Sets pool sizes once the consumer's effective settings are known. */
void pl_transfer_configure(pl_transfer *t, int out_capacity, int consumer_hold);

#endif
