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
 * alone: its message (naming the file) is reported and the others go on. */
#ifndef PF_JOBS_REPROJECT_RUN_H
#define PF_JOBS_REPROJECT_RUN_H

#include "jobs/job_impl.h"
#include "pixflow/pixflow.h"

#define RP_MAX_OUTPUTS PF_REPROJECT_MAX_VIEWS /* pf_ops_equirect_to_views takes 64 per call */

typedef pf_reproject_stage rp_stage;
#define RP_STAGE_READ PF_REPROJECT_READ
#define RP_STAGE_DECODE PF_REPROJECT_DECODE
#define RP_STAGE_UPLOAD PF_REPROJECT_UPLOAD
#define RP_STAGE_KERNEL PF_REPROJECT_KERNEL
#define RP_STAGE_DOWNLOAD PF_REPROJECT_DOWNLOAD
#define RP_STAGE_ENCODE PF_REPROJECT_ENCODE
#define RP_STAGE_WRITE PF_REPROJECT_WRITE
#define RP_STAGE_COUNT PF_REPROJECT_STAGES

/* What each input frame turns into. */
typedef enum rp_mode {
    RP_MODE_VIEWS = 0,     /* views: one file per view */
    RP_MODE_CUBE_FACES,    /* six face files */
    RP_MODE_CUBE_MOSAIC    /* one file 3x2 or 1x6 */
} rp_mode;

/* The job's configuration, made from pf_reproject_params (reproject.c). */
typedef struct rp_config {
    rp_mode mode;
    int num_outputs;                 /* files per input frame */
    pf_view views[RP_MAX_OUTPUTS];   /* VIEWS and CUBE_FACES */
    char suffix[RP_MAX_OUTPUTS][8];  /* file name part per output: view00, px, cube */
    int out_width[RP_MAX_OUTPUTS], out_height[RP_MAX_OUTPUTS];
    int cube_size;
    pf_cube_layout cube_layout;      /* CUBE_MOSAIC */
    pf_interp interp;

    const char *out_dir;
    pf_image_format format;          /* PNG or JPEG */
    const char *ext;                 /* "jpg" or "png" */
    int quality;                     /* JPEG 1..100 */
    int every;                       /* video: every Nth frame, >= 1 */

    const char *trace_path;
    int decoders, encoders;          /* 0 = from the core count */
    int ring;                        /* decoded frames held at once; 0 = auto */
    int inflight;                    /* frames on the GPU at once; 0 = auto */
    pf_reproject_codec codec;
    bool cpu_assist;                 /* GPU decode: CPU threads take JPEGs when a batch waits */
    int gpu_decoders;                /* GPU decode states; 0 = auto */
    const char *list_path;           /* more inputs, one per line */
    bool no_overwrite;
    const jobs_sink *sink;           /* messages */
} rp_config;

#include "jobs/reproject_inputs.h"

/* The run's figures: the job result's own (x: counts, stage times, waits,
 * sizes; its output_dir/format/quality/expand_failures are the job's to
 * fill) and those pf_job_result holds for every job. */
typedef struct rp_stats {
    double elapsed_s;            /* from the start of the stages to the last file */
    int64_t images_expected;     /* done + failed at the end; -1 while unknown */
    double latency_p50_ms, latency_p99_ms; /* read start -> last file */
    pf_reproject_result x;
} rp_stats;

typedef struct rp_run rp_run;

/* Sets everything up (pools sized from the first input that can be probed,
 * threads not started). Errors are reported through cfg->sink. */
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

/* Reports a failure through the job's sink. */
#define rp_report(sink, ...) jobs_say((sink), PF_LOG_ERROR, __VA_ARGS__)

#endif
