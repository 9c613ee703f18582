/* Private: the pf_ops context and the kernel entry points each backend
 * provides. Public wrappers in src/ops/ validate everything (formats, sizes,
 * domains, parameters) and set the messages; entry points only compute.
 *
 * Naming: pf_ref_<op>   plain C reference, single thread (src/cpu/<op>_ref.c)
 *         pf_cpu_<op>   multi-threaded CPU path (src/cpu/<op>.c)
 *         pf_cuda_<op>  CUDA kernel launcher (src/cuda/<op>.cu), asynchronous
 *                       on the given native stream. */
#ifndef PF_OPS_IMPL_H
#define PF_OPS_IMPL_H

#include "pixflow/ops.h"

struct pf_ops {
    pf_stream *stream;
    pf_device *dev;
    pf_threadpool *pool;
    int own_pool;
    int reference;
    /* Scratch memory on the context's device (host memory on the CPU):
     * intermediate planes of separable filters and the like. It only grows;
     * a block it outgrows is retired, not freed, until the context is
     * destroyed, because work already queued - or a CUDA graph captured
     * earlier - may still use its address. Growth is geometric, so a stream
     * of growing sizes retires O(log) blocks. */
    void *scratch;
    size_t scratch_size;
    struct pf_ops_retired *retired;
    /* Host data a CPU path keeps between calls (the reprojection's
     * coordinate maps, src/cpu/reproject.c), freed with the context by
     * cpu_cache_free. NULL: none. */
    void *cpu_cache;
    void (*cpu_cache_free)(void *cache);
};

/* Returns scratch of at least `size` bytes on the context's device. Growing
 * allocates (so do one call of each op and size before capturing a graph),
 * never synchronizes and never frees memory that queued work may use. The
 * previous contents are not kept. */
pf_status pf_ops_scratch(pf_ops *ops, size_t size, void **out);

#endif
