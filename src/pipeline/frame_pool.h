/* Private: a fixed pool of preallocated frames of one format and size (the
 * synthetic source's frames). Frames return to the pool when their last
 * plane reference is dropped, on any thread; acquiring waits for one.
 * Nothing is allocated after creation: each slot embeds its pf_buffer
 * record (buffer_impl.h) and all slots share one allocation. The pool lives
 * until it has been destroyed and its last frame has come back, so frames
 * may outlive the stage that made them.
 *
 * Stream safety: a slot comes back when its last reference is dropped; on a
 * CUDA device work still queued on another stream may read it then. The
 * pipeline runtime orders consumers before they release items, so the pool
 * adds nothing of its own. */
#ifndef PF_PIPELINE_FRAME_POOL_H
#define PF_PIPELINE_FRAME_POOL_H

#include "pixflow/device.h"
#include "pixflow/frame.h"

typedef struct pf_frame_pool pf_frame_pool;

typedef struct pf_frame_pool_params {
    pf_pixfmt format;
    int width, height;
    int count;              /* frames, >= 1 */
    pf_device *device;      /* NULL = CPU */
    pf_mem_domain domain;   /* host, pinned or device */
    const char *name;       /* messages */
} pf_frame_pool_params;

pf_status pf_frame_pool_create(const pf_frame_pool_params *p, pf_frame_pool **out);
/* Drops the handle (waiters get PF_ERR_CLOSED); memory goes with the last frame. */
void pf_frame_pool_destroy(pf_frame_pool **p);
/* A frame (format, size, strides of the pool; metadata reset). timeout_us as
 * in thread.h: PF_AGAIN / PF_TIMEOUT when none came free. */
pf_status pf_frame_pool_acquire(pf_frame_pool *p, int64_t timeout_us, pf_frame *out);
int pf_frame_pool_free_count(pf_frame_pool *p);
int pf_frame_pool_count(const pf_frame_pool *p);

#endif
