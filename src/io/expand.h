/* Internal: the one expander of input arguments (a directory, a glob or a
 * file) into paths, shared by the jobs (segment, reproject) and the
 * io.image_source stage. Callers say what is wrong in their own words: this
 * only lists. */
#ifndef PF_IO_EXPAND_H
#define PF_IO_EXPAND_H

#include <stdbool.h>

#include "pixflow/core.h"

#define PF_EXPAND_IMAGES 1u   /* .png .jpg .jpeg (any case) */
#define PF_EXPAND_VIDEOS 2u   /* .mp4 .mkv .mov .avi .webm .ts .m4v .y4m .mpg .mpeg .flv */

typedef enum pf_expand_what {
    PF_EXPAND_FILE = 0,       /* the argument itself (it may not exist: the reader says so) */
    PF_EXPAND_DIR,            /* a directory: its files with the wanted extensions */
    PF_EXPAND_GLOB            /* a pattern (*, ?, [) naming no existing path: its matches */
} pf_expand_what;

typedef struct pf_path_list {
    char **paths;             /* owned, each malloc'ed */
    int count, cap;
} pf_path_list;

/* Appends what `arg` names to `out`: a directory's files whose names have
 * one of the `exts` (PF_EXPAND_*), not hidden, subdirectories left out,
 * sorted by name (no "//" when arg ends with '/'); a glob's matches,
 * directories left out, in glob's order (sorted); else `arg` itself.
 * *what says which (0 paths from a directory or a glob is PF_OK: the caller
 * says why). PF_ERR_IO with errno set when the directory cannot be listed
 * or the glob cannot read a directory; PF_ERR_NOMEM. No message is set. */
pf_status pf_expand_input(const char *arg, unsigned exts, pf_path_list *out,
                          pf_expand_what *what);

/* Whether the file name has one of `exts` (PF_EXPAND_*). */
bool pf_expand_has_ext(const char *path, unsigned exts);

/* Adds a copy of `path`. False when out of memory. */
bool pf_path_list_add(pf_path_list *l, const char *path);
void pf_path_list_free(pf_path_list *l);

#endif
