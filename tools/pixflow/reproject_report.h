/* `pixflow reproject`: progress on stderr, the summary table and the JSON
 * document on stdout. */
#ifndef PF_TOOLS_REPROJECT_REPORT_H
#define PF_TOOLS_REPROJECT_REPORT_H

#include "reproject_run.h"

typedef struct rp_progress {
    bool tty, quiet;
    bool shown;              /* a TTY line is on screen */
    double last_print_s;
} rp_progress;

void rp_progress_init(rp_progress *pg, bool tty, bool quiet);
/* A bar with rate and ETA on a terminal (rewritten ~4 times a second), else
 * a plain line every second. */
void rp_progress_update(rp_progress *pg, rp_run *r);
void rp_progress_clear(rp_progress *pg);

/* `failures` = failed frames + arguments that named nothing. */
void rp_print_summary(FILE *f, const rp_config *cfg, pf_device *dev, const rp_stats *s,
                      uint64_t failures, bool interrupted);
void rp_print_json(FILE *f, const rp_config *cfg, pf_device *dev, const rp_stats *s,
                   uint64_t failures, bool interrupted);

#endif
