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
    /* Device scratch memory for parameters uploaded per call (view tables,
     * per-frame descriptors): grown once, reused. */
    void *scratch;
    size_t scratch_size;
};

/* Returns device-side scratch of at least `size` bytes (growing it once,
 * after synchronizing the stream so nothing in flight still uses it). */
pf_status pf_ops_scratch(pf_ops *ops, size_t size, void **out);

#endif
