/* pixflow/jobs.h - the flagship jobs as library calls: body segmentation
 * (pf_segment_start, pf_segmenter) and 360-degree reprojection
 * (pf_reproject_start). `pixflow segment` and `pixflow reproject` are thin
 * layers over these calls: what they print is the job's messages and
 * result.
 *
 *   const char *in[] = {"clip.mp4"};
 *   pf_segment_params sp = pf_segment_params_default();
 *   sp.inputs = in;
 *   sp.num_inputs = 1;
 *   sp.output = "clip_seg.mp4";          // NULL: clip_seg.mp4 in the current directory
 *   sp.background = "#00ff00";
 *   pf_job *job = NULL;
 *   if (pf_segment_start(&sp, &job) < 0) { fprintf(stderr, "%s\n", pf_last_error()); ... }
 *   pf_job_progress pg;
 *   while (pf_job_wait(job, 250000) == PF_TIMEOUT)       // 250 ms
 *       if (pf_job_get_progress(job, &pg) == PF_OK) ...;  // pg.done of pg.total frames
 *   pf_job_result r;
 *   pf_job_get_result(job, &r);           // r.status: PF_JOB_DONE, r.frames, r.fps, ...
 *   pf_job_destroy(&job);                 // writes the trace; frees r's strings
 *
 *   // One frame at a time, no pipeline:
 *   pf_segmenter_params gp = pf_segmenter_params_default();
 *   pf_segmenter *seg = NULL;
 *   pf_segmenter_create(&gp, &seg);
 *   pf_frame out = {0}, mask = {0};
 *   pf_segmenter_process(seg, &rgb, &out, &mask);   // RGB24 composite, GRAY8 mask
 *   pf_segmenter_destroy(&seg);
 *
 * A job runs on its own threads from start to the end of its inputs (or a
 * cancel). Its outputs are complete (a video's trailer written, every file
 * renamed into place from its temporary) when pf_job_wait returns anything
 * but PF_TIMEOUT; pf_job_destroy on a running job cancels it, waits, and
 * finishes the outputs the same way. Outputs never destroy inputs: an
 * output that is an input (same file, however named), two outputs on one
 * file, and with no_overwrite an existing output are refused before
 * anything is written.
 *
 * Messages. While it starts and runs a job reports what goes wrong (an
 * image it skips, an output that failed, a stream that left) through the
 * params' on_message callback, one whole line at a time without a trailing
 * newline, from whatever thread found it (so the callback must be
 * thread-safe); NULL sends them to pf_log. Errors in the params themselves
 * (a field out of range, a pattern without {name}) are not reported there:
 * the start call returns PF_ERR_INVALID and pf_last_error() names the field
 * and the value. Every other failed start has been reported through
 * on_message and returns the cause's status (PF_ERR_IO, PF_ERR_FORMAT,
 * PF_ERR_NO_DEVICE, ...).
 *
 * Threading: a pf_job is driven by one thread (wait, result, destroy);
 * pf_job_get_progress may be called from any thread, and
 * pf_job_cancel_async from any thread or a signal handler.
 * Units: times in seconds (_s) or milliseconds (_ms) as named, sizes in
 * pixels, rates in frames (or images) per second.
 */
#ifndef PIXFLOW_JOBS_H
#define PIXFLOW_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core.h"
#include "device.h"
#include "frame.h"
#include "io.h"
#include "ops.h"
#include "prof.h"

PF_BEGIN_DECLS

/* Jobs ------------------------------------------------------------------------------------- */

typedef struct pf_job pf_job;

/* A message of a running job (see "Messages" above): `msg` is valid for the
 * call only. */
typedef void (*pf_job_message_fn)(void *user, pf_log_level level, const char *msg);

/* One finished frame (segment: composited and written; reproject: an input
 * image or video frame all of whose views were written), for benchmarks
 * (`pixflow bench segment|reproject`). Times are pf_time_ns(). */
typedef struct pf_job_frame {
    int32_t source;          /* segment: the input stream (0 with one input); reproject: 0 */
    int64_t seq;             /* the frame's index within its source */
    int64_t t_start_ns;      /* when it was read (the pipeline's source timestamp) */
    int64_t t_done_ns;       /* when it was complete */
} pf_job_frame;
/* Called once per finished frame, from the thread that finished it (several
 * at once for reproject's writers: must be thread-safe and quick, it runs
 * inside the job's pipeline). `f` is valid for the call only. */
typedef void (*pf_job_frame_fn)(void *user, const pf_job_frame *f);

/* A stage of a job's pipeline and how busy it was (pf_job_result.stages). */
typedef struct pf_job_stage {
    const char *name;
    double busy;             /* busy fraction 0..1: time working / (running time x threads) */
    double items_per_s;
    uint64_t items;
} pf_job_stage;

typedef enum pf_job_kind { PF_JOB_SEGMENT = 0, PF_JOB_REPROJECT = 1 } pf_job_kind;

typedef enum pf_job_status {
    PF_JOB_RUNNING = 0,
    PF_JOB_DONE = 1,         /* every input was processed (some images may have failed:
                                pf_job_result.failed) */
    PF_JOB_INTERRUPTED = 2,  /* pf_job_cancel_async: the outputs so far are complete */
    PF_JOB_FAILED = 3        /* stopped by an error (reported through on_message) */
} pf_job_status;

/* "running", "done", "interrupted", "failed". */
PF_API const char *pf_job_status_name(pf_job_status s);

typedef struct pf_job_progress {
    int64_t done;            /* frames (segment) or input images/frames (reproject) finished */
    int64_t failed;          /* of those, failed (images that could not be read or written) */
    int64_t total;           /* expected at the end; -1 while unknown (a live input, a
                                video without a frame count) */
    double elapsed_s;        /* since the start */
} pf_job_progress;

/* One input of a segment job over several videos. */
typedef struct pf_job_stream {
    const char *input;       /* as given, a URL without its credentials */
    const char *output;      /* its output ("null": nothing written) */
    bool output_failed;      /* its output failed and the stream stopped */
    bool live;               /* a live input (URL, camera) */
    int64_t frames, dropped, reconnects;
    double fps, latency_p50_ms, latency_p99_ms;
    double gap_s;            /* live: seconds without frames while reconnecting */
    const char *error;       /* why it left the run, NULL if it did not */
    const char *device;      /* where it ran: "cpu", "cuda:1" */
} pf_job_stream;

typedef enum pf_reproject_stage {
    PF_REPROJECT_READ = 0,   /* file bytes into memory */
    PF_REPROJECT_DECODE,     /* JPEG/PNG (or video) decode into the ring frame */
    PF_REPROJECT_UPLOAD,     /* host -> device (GPU time between events) */
    PF_REPROJECT_KERNEL,     /* the reprojection (GPU time, or CPU wall time) */
    PF_REPROJECT_DOWNLOAD,   /* device -> host (GPU time) */
    PF_REPROJECT_ENCODE,     /* JPEG/PNG encode of one view */
    PF_REPROJECT_WRITE,      /* writing one view's file */
    PF_REPROJECT_STAGES
} pf_reproject_stage;

/* "read", "decode", ... */
PF_API const char *pf_reproject_stage_name(pf_reproject_stage s);

/* A reproject job's own figures (pf_job_result.reproject). */
typedef struct pf_reproject_result {
    const char *output_dir;
    int views_per_image;     /* files per input image or video frame */
    pf_image_format format;
    int quality;
    uint64_t images_done;    /* input frames all of whose views were written */
    uint64_t images_failed;  /* input frames (or inputs) that failed */
    uint64_t expand_failures;/* input arguments that named nothing */
    uint64_t files_written;
    double setup_s;          /* pools, device buffers, threads before the stages ran */
    double latency_mean_ms;  /* read start -> last file of a frame */
    int64_t busy_ns[PF_REPROJECT_STAGES];
    uint64_t busy_count[PF_REPROJECT_STAGES];
    int stage_threads[PF_REPROJECT_STAGES];
    int64_t ring_wait_ns;    /* decoders waiting for a free ring frame */
    int64_t output_wait_ns;  /* compute waiting for a free output block */
    int64_t encode_idle_ns;  /* encoders waiting for work */
    int decoders, encoders, ring, output_blocks, inflight;
    size_t host_bytes;       /* ring + output blocks */
    size_t device_bytes;     /* device slots (CUDA) */
    bool pinned;             /* ring and output blocks page-locked */
    uint64_t unpinned_fallbacks; /* frames bigger than a ring block, decoded on the heap */
    /* Codecs (pf_reproject_params.codec): what the run used, and the count per
     * path. decoded_hw: nvJPEG on the GPU's hardware JPEG engines; decoded_gpu:
     * nvJPEG's GPU-hybrid backend; decoded_cpu: libjpeg-turbo / libpng / video
     * decoders on CPU threads (progressive JPEGs, PNG, video frames, or all of
     * them with the CPU codec). */
    bool gpu_decode, gpu_encode;
    uint64_t decoded_hw, decoded_gpu, decoded_cpu;
    uint64_t encoded_gpu, encoded_cpu; /* files */
} pf_reproject_result;

/* A job's summary. Strings and arrays are owned by the job and valid until
 * pf_job_destroy. */
typedef struct pf_job_result {
    pf_job_kind kind;
    pf_job_status status;
    const char *input;       /* segment: the input, "images", "streams" or "<stdin>" */
    const char *output;      /* segment: file, directory, pattern, URL (without its
                                credentials), "-" (stdout) or "null"; reproject: the dir */
    const char *mask_out;    /* NULL: none */
    bool video;              /* segment: video input(s), else images */
    int64_t frames;          /* frames (images) written; reproject: images done */
    int64_t images;          /* segment on images: how many inputs */
    int64_t failed;          /* images that could not be read or written; reproject: failed
                                frames + arguments that named nothing */
    int64_t dropped, corrupt_packets, transfers;
    double fps, elapsed_s;   /* reproject: images per second */
    double latency_p50_ms, latency_p99_ms;
    double first_frame_ms;   /* segment: from the pipeline's start (inputs probed, model
                                loaded, stages built) to the first frame written: the
                                executors' start-up and the first batch; < 0: none */
    const char *decoder;     /* video: e.g. "ffmpeg h264", "nvdec h264"; NULL for images */
    bool latency_mode;
    int batch;
    const char *device;      /* spec: "cpu", "cuda:0" */
    const char *device_name;
    const char *model;       /* the model file */
    int model_width, model_height;
    const char *busiest_stage; /* NULL when unknown */
    double busiest_busy;     /* its busy fraction 0..1 */
    int num_streams;         /* several video inputs: one entry each, else 0 */
    const pf_job_stream *streams;
    int streams_failed;      /* streams that left the run */
    pf_reproject_result reproject;
    int num_stages;          /* segment: the pipeline's stages in order */
    const pf_job_stage *stages;
} pf_job_result;

/* Waits up to timeout_us (< 0: forever) for the job to end. PF_TIMEOUT
 * while it runs; PF_OK when it ended done or interrupted; else the error
 * that stopped it (already reported through on_message). The outputs are
 * complete when it returns anything but PF_TIMEOUT. */
PF_API pf_status pf_job_wait(pf_job *j, int64_t timeout_us);
/* Stops the job early: no new input is started, what is in flight is
 * finished and written, the result says PF_JOB_INTERRUPTED.
 * Async-signal-safe (a SIGINT handler may call it); idempotent; NULL is a
 * no-op. */
PF_API void pf_job_cancel_async(pf_job *j);
/* Frames (images) done so far. Any thread. */
PF_API pf_status pf_job_get_progress(pf_job *j, pf_job_progress *p);
/* The summary; PF_AGAIN while the job runs (pf_job_wait first). */
PF_API pf_status pf_job_get_result(const pf_job *j, pf_job_result *r);
/* The per-stage breakdown (items/s, busy, time per call, batch) of an
 * ended job, as `pixflow segment --stats` prints it. */
PF_API pf_status pf_job_print_stats(pf_job *j, FILE *f);
/* Cancels and waits for a running job, finishes its outputs, writes its
 * trace, frees it and everything its result points to; sets *j = NULL;
 * accepts NULL. */
PF_API void pf_job_destroy(pf_job **j);

/* Segmentation ------------------------------------------------------------------------------
 *
 *   read -> ops.preprocess -> nn.infer -> ops.mask_post -> composite -> write
 *
 * Inputs: a video file or stream, "-" (Y4M or a container on stdin), one
 * or more images (PNG/JPEG), a directory of images or a glob (a pattern with
 * a *, ? or [);
 * several videos or URLs run in one pipeline, each with its own outputs
 * (output and mask_out then must be patterns with {name} or {index}).
 * Defaults (output NULL): NAME_seg.EXT in the current directory, stdout for
 * stdin, the directory "segmented" for several images. Latency mode runs
 * batch 1 with one frame in flight; throughput mode batches. */

typedef struct pf_segment_params {
    const char *const *inputs; /* paths, directories, globs, URLs or "-" */
    int num_inputs;
    const char *output;      /* NULL = default; "null" = composite, write nothing;
                                "-" = Y4M on stdout; a file, directory or URL */
    const char *mask_out;    /* NULL = none; 8-bit masks: a directory, a file or a URL */
    const char *model;       /* NULL or "selfie", "landscape", or a model file (pf_model_find) */
    pf_device *device;       /* NULL = pf_device_select(NULL); borrowed, must outlive the job */
    /* Several GPUs (several video inputs only): devices[0..num_devices) replace `device`;
     * each input's stream runs on one of them (decode, preprocess, a model replica with its
     * own batches, composite), input i on devices[device_of[i]] when device_of is given,
     * else on devices[i % num_devices] (round-robin). Borrowed; NULL/0 = `device` alone. */
    pf_device *const *devices;
    int num_devices;
    const int *device_of;    /* num_inputs indices into devices, or NULL */
    const char *background;  /* NULL = "blur" ("none" with alpha), "#RRGGBB", "none", or an
                                image file */
    bool alpha;              /* RGBA output with the mask as alpha (PNG, .mov/.mkv/.webm) */
    int batch;               /* frames per inference batch, 1..256; 0 = 8 on the CPU, 64 on
                                a GPU (latency mode: 1) */
    bool latency;            /* one frame at a time */
    float smooth;            /* temporal smoothing weight of a new video mask, (0, 1];
                                default 0.6, 1 = off */
    const char *trace;       /* Chrome/Perfetto trace file, NULL = none */
    /* video output: NULL/negative = the writer's defaults */
    const char *codec, *preset;
    int crf;                 /* constant quality 0..63; -1 = the writer's default */
    int64_t bitrate;         /* bits/s >= 1000 instead of crf; 0 = not given */
    int64_t max_frames;      /* at most this many frames; 0 = all */
    double start_s;          /* start at this time of the input (frame-accurate) */
    double duration_s;       /* this long from start_s; 0 = to the end */
    bool no_audio;           /* leave out the input's audio and other streams */
    bool realtime;           /* read files at their native frame rate */
    int retries;             /* several inputs: a live input reopened up to this many times
                                in a row, -1 forever; default 3 */
    const char *output_options;/* protocol/muxer options "k=v:k=v" (FFmpeg names) */
    int64_t output_timeout_ms; /* network outputs' connect/write deadline; 0 = default */
    bool no_overwrite;       /* an existing output is an error (also when
                                pf_output_default_flags() has PF_OUTPUT_NO_OVERWRITE) */
    pf_job_message_fn on_message; /* NULL = pf_log */
    void *user;              /* for on_message and on_frame */
    pf_job_frame_fn on_frame;/* NULL = none; see pf_job_frame */
} pf_segment_params;

PF_API pf_segment_params pf_segment_params_default(void);

/* Checks the params, finds the model, lists the inputs, opens the readers,
 * plans and checks the outputs, builds the pipeline and starts it. On
 * success *out is a running job, owned by the caller (pf_job_destroy).
 * The params (and the strings they point to) need only live for the call. */
PF_API pf_status pf_segment_start(const pf_segment_params *p, pf_job **out);

/* One frame at a time, without a pipeline: the job's chain (preprocess,
 * model, mask, composite) on the caller's thread. */
typedef struct pf_segmenter pf_segmenter;

typedef struct pf_segmenter_params {
    const char *model;       /* as pf_segment_params.model */
    pf_device *device;       /* NULL = pf_device_select(NULL); borrowed */
    const char *background;  /* as pf_segment_params.background */
    bool alpha;              /* RGBA composite with the mask as alpha */
    float smooth;            /* weight of a new mask over the previous frame's, (0, 1];
                                default 1 (off: images are independent) */
} pf_segmenter_params;

PF_API pf_segmenter_params pf_segmenter_params_default(void);
/* Loads and plans the model. */
PF_API pf_status pf_segmenter_create(const pf_segmenter_params *p, pf_segmenter **out);
/* Segments `in` (RGB24, BGR24, RGBA, NV12, I420, ...; host memory, or
 * device memory of the segmenter's device). composite_out (may be NULL)
 * gets the frame with its background replaced, RGB24 (RGBA with alpha);
 * mask_out (may be NULL) the 8-bit mask at the frame's size, GRAY8. Both
 * are allocated by the call (pass zeroed frames; they are unref'ed first)
 * in the memory `in` lives in, and owned by the caller. Byte-equal to what
 * pf_segment_start writes for an image on the CPU. Not thread-safe: one
 * thread at a time per segmenter. */
PF_API pf_status pf_segmenter_process(pf_segmenter *s, const pf_frame *in,
                                      pf_frame *composite_out, pf_frame *mask_out);
PF_API void pf_segmenter_destroy(pf_segmenter **s);

/* Finds a model by name ("selfie", "landscape") or checks a path (any
 * other string, returned as given when it is a file). Names are looked up
 * in $PIXFLOW_MODELS, the installed models (<dir of libpixflow>/../share/
 * pixflow/models), the source tree the program runs from (its directory
 * and parents, node_modules/@mediapipe/...), and the current directory.
 * PF_ERR_IO "... not found: looked in ..." naming every place;
 * PF_ERR_INVALID for a NULL or too small buffer. NULL name = "selfie". */
PF_API pf_status pf_model_find(const char *name_or_path, char *path, size_t size);

/* Reprojection ------------------------------------------------------------------------------
 *
 * 360-degree equirect images or videos -> perspective views or cube maps,
 * one file per view: DIR/STEM_viewNN.EXT, DIR/STEM_FACE.EXT (px nx py ny pz
 * nz), DIR/STEM_cube.EXT (a mosaic), DIR/STEM_fNNNNNN_... for video
 * frames. A bad input fails alone (reported) and the others go on. */

typedef enum pf_reproject_cube {
    PF_REPROJECT_NO_CUBE = 0,    /* views[] */
    PF_REPROJECT_CUBE_FACES,     /* six files of cube_size^2 */
    PF_REPROJECT_CUBE_3X2,       /* one mosaic 3 x 2 faces */
    PF_REPROJECT_CUBE_1X6        /* one mosaic 1 x 6 faces */
} pf_reproject_cube;

#define PF_REPROJECT_MAX_VIEWS 64

/* Where JPEGs are decoded and encoded (docs/codecs.md). */
typedef enum pf_reproject_codec {
    PF_REPROJECT_CODEC_AUTO = 0, /* GPU on a CUDA device where libnvjpeg loads, else CPU */
    PF_REPROJECT_CODEC_CPU,      /* libjpeg-turbo on CPU threads */
    PF_REPROJECT_CODEC_GPU       /* nvJPEG; where it cannot (no CUDA device, no libnvjpeg),
                                    the CPU, said in one message */
} pf_reproject_codec;

typedef struct pf_reproject_params {
    const char *const *inputs; /* files, directories, globs */
    int num_inputs;
    const char *list;        /* a file with more inputs, one per line; NULL = none */
    const char *output_dir;  /* created when missing */
    const pf_view *views;    /* 1..64 views (cube NONE) */
    int num_views;
    pf_reproject_cube cube;
    int cube_size;           /* face size, 1..16384 (mosaic height too) */
    pf_interp interp;        /* default bilinear */
    pf_image_format format;  /* PF_IMAGE_JPEG (default) or PF_IMAGE_PNG */
    int quality;             /* JPEG 1..100, default 90 */
    int every;               /* video: every Nth frame, default 1 */
    pf_device *device;       /* NULL = pf_device_select(NULL); borrowed */
    const char *trace;
    int decoders, encoders;  /* threads, 0 = from the core count */
    int ring;                /* decoded frames held at once; 0 = auto */
    int inflight;            /* frames on the GPU at once; 0 = auto (3) */
    bool no_overwrite;       /* as pf_segment_params.no_overwrite */
    pf_job_message_fn on_message; /* NULL = pf_log */
    void *user;              /* for on_message and on_frame */
    pf_job_frame_fn on_frame;/* NULL = none; see pf_job_frame */
    pf_reproject_codec codec; /* default AUTO */
    /* GPU decode: decoder threads decode a JPEG on the CPU themselves when a
     * whole batch already waits for the GPU (the GPU is then the bound and the
     * CPU idle). true turns that off: every JPEG the GPU takes waits for it. */
    bool no_cpu_assist;
    int gpu_decoders;        /* GPU decode: decoder states, each a thread and stream decoding
                                batches of inflight / 2; 0 = auto (2) */
} pf_reproject_params;

PF_API pf_reproject_params pf_reproject_params_default(void);
/* Prepares the output directory, expands the inputs, checks the outputs,
 * sets up the pools and threads and starts. Inputs that name nothing are
 * reported and counted (result.failed), not a failed start. */
PF_API pf_status pf_reproject_start(const pf_reproject_params *p, pf_job **out);

/* Faces -------------------------------------------------------------------------------------
 *
 * MediaPipe's face detection and 468-point face mesh with stable ids, one
 * stream per tracker (docs/faces.md):
 *
 *   pf_face_tracker_params fp = pf_face_tracker_params_default();
 *   fp.max_faces = 8;
 *   fp.detect_every = 5;                   // detector on every 5th frame or when lost
 *   pf_face_tracker *ft = NULL;
 *   if (pf_face_tracker_create(&fp, &ft) < 0) ...;     // message names model and shapes
 *   pf_face faces[8];
 *   int n = 0;
 *   pf_face_tracker_process(ft, &rgb, faces, 8, &n);  // per frame, in stream order
 *   pf_face_tracker_destroy(&ft);
 *
 * Per frame the detector runs when the frame index is a multiple of
 * detect_every or no face is tracked; each detection matched (IoU >= 0.3)
 * to a tracked face keeps that face's id, others start new ids; every
 * tracked face is cropped (rotated by its eyes, MediaPipe's ROI rules) into
 * one landmark batch; a face whose face flag falls under 0.5 is dropped, and
 * the next frame's crop comes from this frame's landmarks.
 *
 * On a CUDA device the same chain runs on the device on one stream: the
 * frames are copied up, then letterbox + detector + decoding + weighted NMS
 * + matching + rotated crops + landmark model (one batch of streams x
 * max_faces, padded) + mapping to pixels + dropping lost faces, with the
 * tracker's state in device memory and one copy of the results back: the
 * host waits once per batch. With cuda_graph that chain is one CUDA graph
 * per frame shape. Results agree with the CPU's within the tolerances
 * tests/cuda/test_cuda_faces_tracker.c states. */

#define PF_FACE_KEYPOINTS 6      /* right eye, left eye, nose tip, mouth, right ear, left ear
                                    (the subject's right: the image's left) */
#define PF_FACE_LANDMARKS 468

typedef struct pf_face {
    int id;                       /* stable per tracker, from 1, never reused */
    float score;                  /* the landmark model's face flag (sigmoid), 0.5..1 */
    float detection_score;        /* the detector's score when the face was last detected */
    float box[4];                 /* x0, y0, x1, y1: the landmarks' bounding box, frame pixels */
    float keypoints[PF_FACE_KEYPOINTS][2]; /* MediaPipe's 6 detection keypoints, taken from
                                              the mesh (eye centres, nose tip, mouth centre,
                                              ear tragions), frame pixels */
    float landmarks[PF_FACE_LANDMARKS][3]; /* x, y frame pixels; z pixels, relative depth
                                              (smaller: nearer the camera) */
} pf_face;

typedef struct pf_face_tracker_params {
    const char *detector;         /* pf_model_find name or file; NULL = "face_detection"
                                     (short range, 128x128: faces within ~2 m); or
                                     "face_detection_full" (192x192, smaller faces) */
    const char *landmarks;        /* NULL = "face_landmark" */
    pf_device *device;            /* NULL = the CPU; or a CUDA device (the whole chain
                                     on the device, see below); borrowed */
    int max_faces;                /* 1..256, default 4 (per stream) */
    int detect_every;             /* >= 1, default 1 */
    int streams;                  /* 1..64 streams fed together through
                                     pf_face_tracker_process_batch; default 1. On
                                     CUDA streams x max_faces <= 4096 (the landmark
                                     batch) */
    bool fp16;                    /* CUDA: both models in fp16 (tensor cores); default
                                     false (fp32). The CPU refuses it */
    bool cuda_graph;              /* CUDA: the per-frame chain as one captured graph per
                                     frame shape, replayed (default true); false
                                     launches it op by op (to compare) */
    pf_tracer *tracer;            /* NULL = none; else per batch host spans ("upload",
                                     "launch", "wait", "results" on track "faces") and on
                                     CUDA the chain's device span ("faces chain");
                                     borrowed, must outlive the tracker */
} pf_face_tracker_params;

/* Per-tracker counters (pf_face_tracker_get_stats). */
typedef struct pf_face_tracker_stats {
    int64_t batches;              /* process / process_batch calls that ran */
    double gpu_ms;                /* CUDA: mean device time per batch, events around
                                     the chain (uploads excluded), over the steady
                                     batches (graph replays; without the graph from
                                     the 4th batch on): the first batches' events
                                     also bracket host work (planning, captures).
                                     Over all batches when none was steady. CPU: 0 */
    int64_t gpu_batches;          /* batches in gpu_ms's mean (0: it is over all) */
    int64_t graph_captures;       /* CUDA graphs captured */
    int64_t graph_replays;        /* batches served by a replayed graph */
} pf_face_tracker_stats;

typedef struct pf_face_tracker pf_face_tracker;

PF_API pf_face_tracker_params pf_face_tracker_params_default(void);
/* Loads and plans both models. PF_ERR_FORMAT, naming the file and the
 * expected shapes, for a model whose input or outputs are not a face
 * detector's ([N,128,128,3] -> [N,896,16] + [N,896,1], or the full range's
 * 192 / 2304) or the landmark model's ([N,192,192,3] -> [N,1,1,1404] +
 * [N,1,1,1]); PF_ERR_UNSUPPORTED for fp16 on the CPU. */
PF_API pf_status pf_face_tracker_create(const pf_face_tracker_params *p, pf_face_tracker **out);
/* Feeds the stream's next frame (RGB24, BGR24, RGBA, NV12 or I420, the YUV
 * ones converted with their own colour matrix: on CUDA after the upload, on
 * the device; host memory, on CUDA also device memory) of a one-stream
 * tracker and
 * writes up to cap faces (oldest id first) and their count to *n_faces.
 * Not thread-safe: one thread at a time per tracker; trackers are
 * independent. */
PF_API pf_status pf_face_tracker_process(pf_face_tracker *t, const pf_frame *f, pf_face *faces,
                                         int cap, int *n_faces);
/* The next frame of each of the tracker's `streams` streams at once
 * (frames[s] for stream s; n must equal streams): detection and landmarks
 * run batched across them. Stream s's faces go to faces[s * cap ..], its
 * count to n_faces[s]. Frames may be host memory or, on CUDA, device memory
 * of the tracker's device. */
PF_API pf_status pf_face_tracker_process_batch(pf_face_tracker *t, const pf_frame *const *frames,
                                               int n, pf_face *faces, int cap, int *n_faces);
PF_API pf_status pf_face_tracker_get_stats(const pf_face_tracker *t, pf_face_tracker_stats *out);
PF_API void pf_face_tracker_destroy(pf_face_tracker **t);

PF_END_DECLS

#endif
