/* The end-to-end device self-check behind `pixflow info --self-check`:
 * stream, caching allocator and pinned pool on one device, an 8 MiB random
 * pattern copied host->pinned->device->device->host twice, verified
 * byte-exact, timed with events, and the allocator's reuse checked. */
#ifndef PIXFLOW_TOOL_SELFCHECK_H
#define PIXFLOW_TOOL_SELFCHECK_H

#include <stdbool.h>

#include "pixflow/pixflow.h"

/* Self-check transfer size and allocator cap (room for its two blocks). */
#define SELFCHECK_BYTES ((size_t)8 << 20)
#define SELFCHECK_CAP_BYTES ((size_t)64 << 20)

typedef struct copy_timing {
    const char *name;   /* JSON key */
    const char *label;  /* text */
    float ms;
} copy_timing;

enum { COPY_H2P, COPY_P2D, COPY_D2D, COPY_D2H, COPY_COUNT };

typedef struct selfcheck_report {
    bool ok;
    const char *failed_step;
    char error[512];
    uint64_t seed;
    copy_timing copies[COPY_COUNT];
    uint64_t round2_cache_hits, round2_runtime_allocs;
} selfcheck_report;

/* Runs the check on `dev`; sc->ok says whether it passed, failed_step and
 * error say where and why not. */
void run_selfcheck(pf_device *dev, selfcheck_report *sc);
/* GB/s of one SELFCHECK_BYTES copy that took `ms`. */
double selfcheck_gbps(float ms);

#endif
