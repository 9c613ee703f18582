/* Internal to the CUDA backend (src/cuda/): error conversion and device
 * selection helpers shared by cuda_backend.c, cuda_stream.c, cuda_graph.c.
 * Nothing outside src/cuda/ includes this header (the core reaches the
 * backend only through pf_backend_get()). */
#ifndef PF_CUDA_INTERNAL_H
#define PF_CUDA_INTERNAL_H

#include <cuda_runtime.h>

#include "../core/error.h"
#include "../device/backend.h"

/* Turns a failed runtime call into a status and the thread's error message:
 * "<call> failed: <cudaGetErrorString> (<cudaGetErrorName>)", where <call> is
 * formatted from fmt (e.g. "cudaMalloc(1.00 GiB) on cuda:0").
 * cudaErrorMemoryAllocation becomes PF_ERR_NOMEM, everything else
 * PF_ERR_DEVICE. Also clears the runtime's last-error slot, so a handled
 * error does not resurface in an unrelated cudaGetLastError() later. */
pf_status pf_cuda_fail(cudaError_t err, const char *fmt, ...) PF_PRINTF(2, 3);

/* cudaSetDevice(dev->props.index): every call that allocates or creates
 * per-device objects goes through this first, so a thread that last used
 * another GPU never creates objects on the wrong one. */
pf_status pf_cuda_use_device(const pf_device *dev);

/* For calls that name only a stream: with more than one GPU in the process,
 * makes the stream's device current (some runtime calls use the current
 * device's context). With one GPU it costs nothing. */
pf_status pf_cuda_use_stream_device(cudaStream_t stream);

/* Number of CUDA devices found by discovery (0 before it ran). */
extern int pf_cuda_device_total;

/* Whether a teardown-time error should be ignored silently (the runtime is
 * already unloading at process exit, or the context is gone). */
int pf_cuda_is_teardown_error(cudaError_t err);

/* Stream, event, copy and graph slots (cuda_stream.c, cuda_graph.c). */
pf_status pf_cuda_stream_create(pf_device *dev, int priority, void **native);
void pf_cuda_stream_destroy(pf_device *dev, void *native);
pf_status pf_cuda_stream_sync(void *native);
pf_status pf_cuda_stream_query(void *native);
pf_status pf_cuda_stream_launch_host(void *native, void (*fn)(void *), void *user);
pf_status pf_cuda_event_create(pf_device *dev, void **native);
void pf_cuda_event_destroy(void *native);
pf_status pf_cuda_event_record(void *event, void *stream);
pf_status pf_cuda_event_sync(void *event);
pf_status pf_cuda_event_query(void *event);
pf_status pf_cuda_event_elapsed(void *start, void *end, float *ms);
pf_status pf_cuda_stream_wait_event(void *stream, void *event);
pf_status pf_cuda_memcpy_async(void *stream, void *dst, const void *src, size_t n);
pf_status pf_cuda_memcpy2d_async(void *stream, void *dst, size_t dpitch, const void *src,
                                 size_t spitch, size_t width, size_t rows);
pf_status pf_cuda_memset_async(void *stream, void *dst, int value, size_t n);

pf_status pf_cuda_graph_begin(void *stream);
pf_status pf_cuda_graph_end(void *stream, void **exec);
pf_status pf_cuda_graph_launch(void *exec, void *stream);
void pf_cuda_graph_destroy(void *exec);

#endif
