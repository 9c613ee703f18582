/* Internals of the reproject pipeline shared by its stage files
 * (reproject_run.c: setup, decoders, encoders; reproject_compute.c: the
 * compute stage). Not used elsewhere. */
#ifndef PF_JOBS_REPROJECT_RUN_IMPL_H
#define PF_JOBS_REPROJECT_RUN_IMPL_H

#include <signal.h>
#include <stdatomic.h>

#include "io/nvjpeg.h"
#include "jobs/reproject_run.h"

/* One input frame on its way through the pipeline. Allocated by a decoder,
 * freed by the encoder that finishes its last view. */
typedef struct rp_job {
    int input;                         /* index into rp_run.in->items */
    int64_t frame;                     /* video frame index, -1 for an image */
    uint64_t seq;                      /* order of creation (trace flows) */
    int64_t t_start;                   /* pf_time_ns() when its read began */
    pf_frame src;                      /* decoded RGB24, in a ring block (or the heap) */
    pf_frame dsrc;                     /* GPU decode: the decoded device frame */
    pf_buffer *ring_token;             /* the ring block when src lives on the heap */
    pf_frame outs[RP_MAX_OUTPUTS];     /* views, in one output block (GPU encode: device frames) */
    pf_buffer *out_token;              /* GPU encode: the output block held as a token */
    /* GPU decode: the file's bytes, in bits_block (pinned) or bits_heap. */
    const uint8_t *bits;
    size_t bits_size;
    uint8_t *bits_heap;
    pf_buffer *bits_block;
    int width, height;                 /* from the JPEG header */
    atomic_int pending;                /* views not yet written */
    atomic_bool failed;
} rp_job;

typedef struct rp_encode_task {
    rp_job *job;
    int index;
} rp_encode_task;

/* CUDA: one frame in flight (device copies and the events that order them). */
typedef struct rp_slot {
    rp_job *job;
    pf_frame dsrc;
    pf_frame douts[RP_MAX_OUTPUTS];
    pf_event *ev[6];                   /* upload start/end, kernel start/end, download start/end */
    int batch;                         /* images decoded/uploaded with this one (stats) */
    bool gpu_decoded;                  /* decoded by nvJPEG (ev 0..1 time is decode) */
} rp_slot;

typedef struct rp_worker {
    struct rp_run *r;
    int id;
    int track;                         /* trace track, -1 without --trace */
} rp_worker;

struct rp_run {
    const rp_config *cfg;
    const rp_inputs *in;
    pf_device *dev;
    bool cuda;

    int decoders, encoders, ring, out_blocks, inflight;
    size_t ring_block, out_block;      /* bytes */
    size_t out_offset[RP_MAX_OUTPUTS]; /* of each view inside an output block */
    pf_pinned_pool *ring_pool, *out_pool;
    pf_queue *decoded;                 /* rp_job * */
    pf_queue *encode;                  /* rp_encode_task */
    pf_queue *done;                    /* one int when the last encoder leaves */
    pf_threadpool *threads;
    rp_worker *workers;

    /* compute */
    pf_stream *s_up, *s_kernel, *s_down;
    pf_ops *ops;
    pf_allocator *dev_alloc;
    rp_slot *slots;
    size_t device_bytes;

    /* codecs (docs/codecs.md) */
    bool gpu_dec, gpu_enc;             /* nvJPEG decode / encode in use */
    int gpu_states;                    /* GPU decode threads, each a decoder and a stream */
    pf_nvjpeg_dec **nvdecs;
    pf_stream **dec_streams;
    pf_queue *ready;                   /* rp_job *: GPU-decoded (or passed through) for compute */
    atomic_int gpu_left;               /* GPU decode threads still running */
    pf_pinned_pool *bits_pool;         /* the files' bytes for GPU decode */
    size_t bits_block;
    int bits_count;
    pf_nvjpeg_enc **nvenc;             /* one per encoder thread */
    int batch;                         /* images per decode call */
    rp_job **batch_jobs;               /* compute's */
    size_t out_pool_block;             /* bytes per output block (a token with GPU encode) */
    atomic_uint_fast64_t dec_count[PF_JPEG_PATHS], encoded_gpu, encoded_cpu;

    pf_tracer *tracer;
    int gpu_track[3];
    pf_histogram *latency;

    atomic_int next_input;
    atomic_int decoders_left, encoders_left;
    atomic_uint_fast64_t next_seq;
    volatile sig_atomic_t cancel;      /* rp_run_cancel (a signal handler) */
    bool started, finished;
    int64_t t0, t_end, setup_ns;

    atomic_uint_fast64_t images_done, images_failed, views_written, unpinned;
    atomic_int_fast64_t expected;      /* image inputs + known video frame counts */
    atomic_bool expected_unknown;
    atomic_int_fast64_t busy_ns[RP_STAGE_COUNT];
    atomic_uint_fast64_t busy_count[RP_STAGE_COUNT];
    atomic_int_fast64_t ring_wait_ns, output_wait_ns, encode_idle_ns;
};

void rp_add_busy(rp_run *r, rp_stage s, int64_t ns);

/* Reports the job's failure (once per job) with a message naming its input. */
void rp_job_fail(rp_run *r, rp_job *j, const char *what);
/* Frees the job's compressed bytes (GPU decode) and gives their ring block back. */
void rp_job_drop_bits(rp_job *j);
/* Queues the job's views for encoding (or finishes a failed job at once). */
void rp_job_to_encoders(rp_run *r, rp_job *j);

/* The compute stage (reproject_compute.c). */
pf_status rp_compute_setup(rp_run *r);
void rp_compute_teardown(rp_run *r);
void rp_compute_main(void *user);
/* A GPU decode thread (reproject_compute.c): batches from `decoded` into
 * device frames, then on to `ready`. */
void rp_gpu_decode_main(void *user);

#endif
