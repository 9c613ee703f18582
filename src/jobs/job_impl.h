/* Internals of the jobs module: the pf_job object every job kind fills
 * (job.c dispatches the public calls to its ops), the message sink, and
 * the input and output helpers the jobs share (files.c). */
#ifndef PF_JOBS_JOB_IMPL_H
#define PF_JOBS_JOB_IMPL_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "pixflow/jobs.h"
#include "pixflow/nn.h"

/* Where a job's messages go: the caller's on_message, else pf_log. */
typedef struct jobs_sink {
    pf_job_message_fn fn;
    void *user;
    pf_job_frame_fn on_frame; /* NULL = none (the params' on_frame) */
} jobs_sink;

/* Hands a finished frame to the sink's on_frame, if any. */
static inline void jobs_frame_done(const jobs_sink *s, int32_t source, int64_t seq,
                                   int64_t t_start_ns)
{
    if (!s || !s->on_frame) return;
    pf_job_frame f = {source, seq, t_start_ns, pf_time_ns()};
    s->on_frame(s->user, &f);
}

/* Formats one line and hands it to the sink. Thread-safe when the sink is. */
void jobs_say(const jobs_sink *s, pf_log_level level, const char *fmt, ...) PF_PRINTF(3, 4);

typedef struct job_ops {
    /* PF_TIMEOUT while running; else the job's end status (done: PF_OK),
     * with the result filled. Called by one thread. */
    pf_status (*wait)(pf_job *j, int64_t timeout_us);
    void (*cancel_async)(pf_job *j);     /* async-signal-safe */
    void (*progress)(pf_job *j, pf_job_progress *p);
    pf_status (*print_stats)(pf_job *j, FILE *f);
    void (*destroy)(pf_job *j);          /* cancels, waits, frees impl */
} job_ops;

/* warmup.c: threads that warm the nn code of a model on each CUDA device
 * (pf_nn_warmup) while the job probes its inputs. NULL when there is
 * nothing to do (CPU devices, PIXFLOW_WARMUP=0). finish joins and frees;
 * call it before the pipeline starts. */
typedef struct jobs_warmup jobs_warmup;
jobs_warmup *jobs_warmup_start(const char *model_path, pf_device *const *devs, int ndevs,
                               pf_nn_precision precision, int batch);
void jobs_warmup_finish(jobs_warmup **w);

struct pf_job {
    const job_ops *ops;
    void *impl;
    volatile sig_atomic_t cancelled;     /* pf_job_cancel_async was called */
    bool ended;                          /* wait returned the end: result is final */
    pf_status end_status;
    pf_job_result result;
};

/* A new job of `kind` around impl (NULL when out of memory). */
pf_job *jobs_new(pf_job_kind kind, const job_ops *ops, void *impl);

/* Inputs ----------------------------------------------------------------------------------
 *
 * What an input names: told by what the path is (stat) and, for a regular
 * file, by its first bytes before its extension, so a PNG or JPEG is always
 * read as an image (and gets the image reader's exact message when it is
 * damaged, empty or too large) whatever its name, and anything else is a
 * video. Inputs that can be read only once (a FIFO, /dev/stdin, /dev/fd/N, a
 * character device, "-") are never opened here: an image extension makes
 * them an image, anything else a video stream that the video reader sniffs
 * itself. A URL and a V4L2 camera are live videos, never touched here. */
typedef enum jobs_input_kind {
    JOBS_INPUT_MISSING = 0,  /* stat failed (errno tells why) */
    JOBS_INPUT_DIR,
    JOBS_INPUT_IMAGE,
    JOBS_INPUT_VIDEO
} jobs_input_kind;

/* *once (may be NULL): the input can be read only once. */
jobs_input_kind jobs_input_classify(const char *path, bool *once);
/* Whether the name ends in .png, .jpg or .jpeg (any case). */
bool jobs_image_name(const char *path);

/* Outputs ---------------------------------------------------------------------------------- */

/* A set of existing files by device and inode, to refuse an output that is
 * an input whatever its spelling (hard links, symlinks, ./a vs a). */
typedef struct jobs_file_id {
    unsigned long long dev, ino;
    int tag;               /* the caller's index of the file */
} jobs_file_id;

typedef struct jobs_file_set {
    jobs_file_id *ids;
    int count, cap;
    bool sorted;
} jobs_file_set;

/* Adds `path` with `tag` (skips "-" and paths that do not exist). False on
 * out of memory. */
bool jobs_file_set_add(jobs_file_set *s, const char *path, int tag);
/* The tag of the file `path` names, or -1 (also when it does not exist). */
int jobs_file_set_find(jobs_file_set *s, const char *path);
void jobs_file_set_free(jobs_file_set *s);

/* The path with its directory resolved (realpath), the file name kept; the
 * path unchanged when its directory does not exist. */
void jobs_canonical_path(const char *path, char *out, size_t size);

/* For each of n keys, first_of[i] = the smallest j < i with the same key
 * (strcmp), else -1. O(n log n). False on out of memory. */
bool jobs_find_same(const char *const *keys, int n, int *first_of);

/* With no_overwrite (or PF_OUTPUT_NO_OVERWRITE by default): false, saying
 * "PATH: already exists", when `path` is an existing regular file. */
bool jobs_may_write(const jobs_sink *s, bool no_overwrite, const char *path);

#endif
