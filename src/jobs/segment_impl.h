/* The segment job (pf_segment_start): what its files share. segment.c
 * checks the params, builds and runs the pipeline and fills the result;
 * segment_inputs.c finds the model and lists the inputs and output names;
 * segment_multi.c plans several video inputs; segment_stages.c holds the
 * job's own stages (the reader, the compositor with an image background,
 * the writer). */
#ifndef PF_JOBS_SEGMENT_IMPL_H
#define PF_JOBS_SEGMENT_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include "jobs/job_impl.h"
#include "pixflow/pixflow.h"

#define SEG_PATH_MAX 4096
#define SEG_MAX_DEVICES 16

typedef enum seg_kind {
    SEG_IMAGES = 0,    /* one or more image files (a directory, a glob, a list) */
    SEG_VIDEO = 1      /* a video file or Y4M on stdin */
} seg_kind;

typedef enum seg_bg { SEG_BG_BLUR, SEG_BG_COLOR, SEG_BG_IMAGE, SEG_BG_NONE } seg_bg;

typedef struct seg_job seg_job;
struct seg_job {
    /* what to do */
    seg_kind kind;
    char **inputs;              /* images: the files; video: one path ("-" = stdin) */
    int num_inputs;
    const char *input_label;    /* for messages and the summary */
    char input_shown[1024];     /* a URL input without its credentials (pf_io_redact) */
    char output[SEG_PATH_MAX];  /* a file, a directory (images), "-", or "null" */
    char output_shown[SEG_PATH_MAX]; /* output fit to print (no credentials; result) */
    char mask_shown[SEG_PATH_MAX];
    bool output_is_dir;
    bool null_output;           /* -o null: composite, then drop (benchmarks) */
    char mask_out[SEG_PATH_MAX];/* "" = none */
    bool mask_is_dir;
    bool alpha;
    seg_bg bg;
    uint8_t color[3];
    pf_frame bg_image;          /* host RGB24, SEG_BG_IMAGE */
    const char *bg_path;        /* its file (an input no output may replace) */
    float smooth;               /* temporal smoothing weight (video), 1 = off */
    char model[SEG_PATH_MAX];
    int model_w, model_h;       /* input size */
    bool model_nhwc;
    const jobs_sink *sink;      /* messages (the parent's for its streams) */
    bool no_overwrite;
    pf_device *dev;             /* where the device stages run (NVDEC decodes there) */
    /* Several GPUs (the parent of several streams): the devices, and each
     * input's index into them (segment_multi.c assigns; a stream's dev is
     * its device). ndevs <= 1: everything on dev. */
    pf_device *devs[SEG_MAX_DEVICES];
    int ndevs;
    const int *device_of;       /* borrowed from the params, or NULL (round-robin) */
    /* latency mode: one frame in flight (the reader waits for the writer) */
    bool gate;
    pthread_mutex_t gate_mu;
    pthread_cond_t gate_cv;
    int in_flight;
    /* video */
    pf_video_reader *reader;
    pf_video_info info;
    /* encoder and trim options (--codec ... --no-audio; cmd_segment.c) */
    const char *codec, *preset; /* NULL = the writer's defaults */
    int crf;                    /* -2 = not given (the writer's default) */
    int64_t bitrate;            /* bits/s, 0 = not given */
    int64_t max_frames;         /* --frames, 0 = all */
    double start_s, duration_s; /* --start/--duration; duration 0 = to the end */
    bool no_audio;
    /* results (written by the stages' threads) */
    atomic_llong frames_done;
    atomic_llong first_out_ns;  /* pf_time_ns() when the first frame was written, 0 = none */
    atomic_llong images_failed;
    atomic_int write_failed;    /* closing a video writer failed (reported) */
    atomic_int output_failed;   /* one of several streams: its output failed
                                   (reported); its reader ends the stream */
    /* Several video inputs in one pipeline (segment_multi.c): the parent
     * job holds one job per stream (its input, reader, outputs, counts);
     * the shared stages (model, compositor) use the parent's settings. */
    struct seg_job *streams;
    int num_streams;
    int stream_index;           /* a stream's input position (its source id) */
    char stage_suffix[16];      /* "" or "_N": stage names unique per stream */
    int reader_pool;            /* frames in the reader's pool; 0 = one input's default */
    int hw_share;               /* inputs sharing the GPU's decoders (reader hw_share) */
    char stream_error[512];     /* one of several streams: why its input failed (it left
                                   the run; written by its reader stage, read after) */
    bool live;                  /* a live input: its errors end its stream only */
    bool realtime;              /* --realtime: files read at their native rate */
    const char *output_options; /* --output-options: the writer's muxer_options */
    int64_t output_timeout_ms;  /* --output-timeout: network outputs' open and
                                   write deadline; 0 = the writer's defaults */
    int retries;                /* --retries: live input of several, reopened up to
                                   this many times in a row (-1 forever) */
};

/* Inputs and names (segment_inputs.c) ---------------------------------------------------- */

/* Resolves the model (NULL, "selfie", "landscape" or a path: pf_model_find)
 * into job->model. Reports the error; false on failure. */
bool seg_find_model(seg_job *job, const char *arg);

/* Loads job->model for its input geometry (job->model_w/h, model_nhwc) and
 * checks that it is a person segmenter (one image input, one one-channel
 * mask output). Reports the error; false on failure. */
bool seg_read_model(seg_job *job);

/* The background spec: NULL/"blur", "none", "#RRGGBB" or an image file.
 * check: PF_ERR_INVALID for a bad colour or an empty spec (not reported);
 * load: fills job->bg/color/bg_image (an image that cannot be read is
 * reported and its status returned). */
pf_status seg_check_background(const char *spec);
pf_status seg_load_background(seg_job *job, const char *spec);
/* The compositor's background for the job's settings (the image, if any,
 * still to be set where the compositor runs). */
void seg_background(const seg_job *job, pf_background *bg);

/* Fills job->kind and job->inputs from the positional arguments: "-" (Y4M on
 * stdin), a video file, an image, a directory of images or a glob. Opens the
 * video reader. Reports the error naming the file; false on failure. */
bool seg_collect_inputs(seg_job *job, const char *const *args, int n);

/* Chooses job->output (from -o or the default) and job->mask_out; creates
 * directories. Reports the error; false on failure. */
bool seg_plan_outputs(seg_job *job, const char *out_arg, const char *mask_arg);

/* Refuses, before anything is written, outputs that would destroy an input
 * or each other: an output (-o, --mask-out, each image's output and mask,
 * the trace) that is an input, the model or the background image (same
 * device and inode: hard links and symlinks too); two inputs whose outputs
 * land on one file (a.png and a.jpg masks, dir1/a.png and dir2/a.png),
 * naming both inputs and the output; two outputs on one file; and, with -n,
 * an output that exists. Reports the error; false on refusal. */
bool seg_check_outputs(seg_job *job, const char *trace);

/* The output path of image i (inside job->output when it is a directory). */
void seg_image_output(const seg_job *job, int i, bool mask, char *buf, size_t size);

void seg_job_free(seg_job *job);

/* Adds `path` as job's one video input and opens its reader. */
bool seg_open_video(seg_job *job, const char *path);
/* Creates a directory and its parents (mkdir -p). Reports the error. */
bool seg_make_dir(seg_job *job, const char *dir);
/* An input's stem (pf_io_url_name for a URL). */
void seg_stem(const char *path, char *out, size_t size);
/* Whether two URLs name one stream end: scheme, host, port and path equal
 * (scheme and host case-insensitively), credentials, query and fragment
 * ignored ("tcp://h:9000?listen=1" and "tcp://h:9000" are one port). False
 * unless both are URLs. */
bool seg_same_url(const char *a, const char *b);
/* `path` fit to print: a URL without its credentials (pf_io_redact), into
 * buf; returns buf. */
const char *seg_shown(const char *path, char *buf, size_t size);

/* Several inputs (segment_multi.c) ---------------------------------------------------------- */

/* Expands an output pattern for input `index` (path `input`): {name} is the
 * input's stem (pf_io_url_name for a URL), {index} its position from 0.
 * False when the result does not fit. */
bool seg_expand_pattern(const char *pattern, const char *input, int index, char *buf,
                        size_t size);

/* Fills job->streams from several video inputs ("-" is refused): each gets
 * its reader (a file that cannot be opened is an error here, before the
 * start) and its outputs from the -o / --mask-out patterns, which must
 * contain {name} or {index} (-o null excepted). Refuses outputs shared by
 * two streams or that are an input. PF_ERR_INVALID (not reported, named
 * in pf_last_error) for a "-" among them or an output without a pattern;
 * other failures are reported. */
pf_status seg_multi_plan(seg_job *job, const char *const *args, int n, const char *out_arg,
                   const char *mask_arg, const char *trace, bool realtime);

/* True when several positional arguments include a video (file or URL). */
bool seg_multi_wanted(const char *const *args, int n);

void seg_multi_free(seg_job *job);

/* Reports an error through the job's sink. */
void seg_error(seg_job *job, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* f32 [..., H, W] in [0, 1] (host, contiguous) -> GRAY8 H x W, rounded and
 * clamped (NaN -> 0); *gray is (re)allocated on the host when its size
 * differs. PF_ERR_INVALID for another tensor. */
pf_status seg_mask_to_gray(const pf_tensor *t, pf_frame *gray);

/* Stages (segment_stages.c) ----------------------------------------------------------------- */

typedef struct seg_stages seg_stages;

/* Adds the reader, and returns through *src: on the CPU, or on job->dev when
 * the video reader decodes there (NVDEC; frames stay in device memory). */
pf_status seg_add_source(pf_pipeline *p, seg_job *job, pf_stage **src);
/* Adds the compositor on `dev` (an image background is uploaded there). */
pf_status seg_add_composite(pf_pipeline *p, seg_job *job, pf_device *dev, const char *name,
                            pf_stage **out);
/* Adds the writer: outputs, masks, counting; on the CPU, except for -o null
 * without masks on a GPU, where it only waits for the device work (so
 * nothing is downloaded). Either way an item counts as done once its
 * composite is complete, and in latency mode the next frame is let in. */
pf_status seg_add_sink(pf_pipeline *p, seg_job *job, pf_stage **out);

#endif
