/* The reproject job: the list of inputs (files, directories, globs, a list
 * file) and the names of the files written for them. */
#ifndef PF_JOBS_REPROJECT_INPUTS_H
#define PF_JOBS_REPROJECT_INPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jobs/job_impl.h"

typedef enum rp_input_kind { RP_INPUT_IMAGE = 0, RP_INPUT_VIDEO = 1 } rp_input_kind;

typedef struct rp_input {
    char *path;
    const char *stem;          /* file name without directory and extension (inside path) */
    size_t stem_len;
    rp_input_kind kind;
    bool once;                 /* readable only once (a FIFO, /dev/fd/N): never probed */
    int same_names_as;         /* index of an earlier input with the same stem, or -1 */
} rp_input;

typedef struct rp_inputs {
    rp_input *items;
    int count, cap;
    int expand_failures;       /* arguments that named nothing (reported) */
    const jobs_sink *sink;     /* where they are reported */
} rp_inputs;

/* Expands the arguments in order: a directory gives its .jpg/.jpeg/.png and
 * video files (sorted by name, not recursive), an argument with * ? or [
 * that is not an existing file is a glob (sorted), anything else is one file
 * (read later: a missing file fails then, with its name): an image when its
 * first bytes or its name say PNG/JPEG, else a video (jobs_input_classify; FIFOs
 * and /dev/fd/N are read once, never probed). `list_path` (may be
 * NULL) adds one input per non-empty line. Arguments that name nothing are
 * reported and counted in expand_failures. Returns false only when
 * out of memory or the list file cannot be read (reported). */
bool rp_inputs_expand(rp_inputs *in, const jobs_sink *sink, const char *const *args, int nargs,
                      const char *list_path);
void rp_inputs_free(rp_inputs *in);

struct rp_config;
/* Refuses, before anything is written (reported, false), an output
 * file that is one of the inputs (same device and inode, so hard links and
 * symlinks too), a --trace that is an input, and with -n an output that
 * exists. */
bool rp_check_outputs(const rp_inputs *in, const struct rp_config *c);

/* Writes "DIR/STEM[_fNNNNNN]_SUFFIX.EXT" into buf (frame < 0: an image).
 * false if it does not fit. */
bool rp_output_path(char *buf, size_t size, const char *dir, const rp_input *in, int64_t frame,
                    const char *suffix, const char *ext);

#endif
