/* `pixflow reproject`: the batch pipeline.
 *
 *   decoders (D threads)   read a file, decode it into a frame of the ring
 *        |                 (page-locked blocks of a pf_pinned_pool: at most R
 *        v                 decoded frames exist at once)
 *   compute (1 thread)     CPU: reprojects from the ring frame into an output
 *        |                 block; CUDA: upload, kernel and download of up to K
 *        v                 frames in flight on three streams ordered by events
 *   encoders (E threads)   encode one view each (JPEG/PNG) and write its file
 *                          (pf_output: a temporary renamed when complete)
 *
 * Everything between stages is a bounded queue or a fixed pool, so memory is
 * R source frames + O output blocks (+ K device slots) whatever the number of
 * inputs; the only per-input memory is the list of paths. A bad input fails
 * alone: its message (naming the file) goes to stderr and the others go on. */
#ifndef PF_TOOLS_REPROJECT_RUN_H
#define PF_TOOLS_REPROJECT_RUN_H

#include "reproject_inputs.h"
#include "reproject_opts.h"

typedef enum rp_stage {
    RP_STAGE_READ = 0,   /* file bytes into memory */
    RP_STAGE_DECODE,     /* JPEG/PNG (or video) decode into the ring frame */
    RP_STAGE_UPLOAD,     /* host -> device (GPU time between events) */
    RP_STAGE_KERNEL,     /* the reprojection (GPU time, or CPU wall time) */
    RP_STAGE_DOWNLOAD,   /* device -> host (GPU time) */
    RP_STAGE_ENCODE,     /* JPEG/PNG encode of one view */
    RP_STAGE_WRITE,      /* writing one view's file */
    RP_STAGE_COUNT
} rp_stage;

const char *rp_stage_name(rp_stage s);

typedef struct rp_stats {
    double elapsed_s;            /* from the start of the stages to the last file */
    double setup_s;              /* before: pools (pinning), device buffers, threads */
    uint64_t images_done;        /* input frames all of whose views were written */
    uint64_t images_failed;      /* input frames (or inputs) that failed */
    int64_t images_expected;     /* done + failed at the end; -1 while unknown */
    uint64_t views_written;
    double latency_p50_ms, latency_p99_ms, latency_mean_ms; /* read start -> last file */
    int64_t busy_ns[RP_STAGE_COUNT];
    uint64_t busy_count[RP_STAGE_COUNT];
    int64_t ring_wait_ns;        /* decoders waiting for a free ring frame */
    int64_t output_wait_ns;      /* compute waiting for a free output block */
    int64_t encode_idle_ns;      /* encoders waiting for work */
    int decoders, encoders, ring, output_blocks, inflight;
    size_t host_bytes;           /* ring + output blocks */
    size_t device_bytes;         /* device slots (CUDA) */
    bool pinned;                 /* ring and output blocks page-locked */
    uint64_t unpinned_fallbacks; /* frames bigger than a ring block, decoded on the heap */
} rp_stats;

typedef struct rp_run rp_run;

/* Sets everything up (pools sized from the first input that can be probed,
 * threads not started). Errors are reported on stderr. */
pf_status rp_run_create(const rp_config *cfg, const rp_inputs *in, pf_device *dev,
                        rp_run **out);
pf_status rp_run_start(rp_run *r);
/* PF_OK when every stage has finished, PF_TIMEOUT after timeout_us. */
pf_status rp_run_wait(rp_run *r, int64_t timeout_us);
/* Async-signal-safe: no new input is started; what is decoded completes. */
void rp_run_cancel(rp_run *r);
void rp_run_get_stats(rp_run *r, rp_stats *out);
/* Joins the threads (waits for the run to finish) and frees everything. */
void rp_run_destroy(rp_run **r);

/* Prints a failure line "pixflow reproject: MESSAGE" on stderr without
 * tearing a progress line (flockfile; erases a TTY line first). */
void rp_report(const char *fmt, ...) PF_PRINTF(1, 2);
void rp_report_set_tty(bool tty);

#endif
