/* CUDA streams, events and stream-ordered copies.
 *
 * Streams are created non-blocking (cudaStreamNonBlocking) so they never
 * serialise with the legacy default stream that other libraries in the
 * process may use. Copies use cudaMemcpyDefault: with unified addressing the
 * runtime infers the direction from the pointers, so one call serves
 * host/pinned/device in any combination (pageable host memory is staged by
 * the driver and makes the call partly synchronous, CUDA's rule).
 *
 * Calls that name only a stream or an event need no cudaSetDevice for the
 * operations used here (the runtime documents copies, queries, syncs and
 * stream waits as working on any device's stream); memset and graph calls
 * still make the stream's device current when the process sees several GPUs.
 */
#include <stdio.h>

#include "cuda_internal.h"

/* cudaErrorNotReady is a flow signal (PF_AGAIN), not a failure. Make sure it
 * is not left in the last-error slot, where a later cudaGetLastError() after
 * a kernel launch would misreport it. */
static pf_status not_ready(void)
{
    if (cudaPeekAtLastError() == cudaErrorNotReady) (void)cudaGetLastError();
    return PF_AGAIN;
}

static void warn_teardown(cudaError_t err, const char *call, void *handle)
{
    (void)cudaGetLastError();
    if (!pf_cuda_is_teardown_error(err))
        PF_LOGW("%s(%p) failed: %s (%s)", call, handle, cudaGetErrorString(err),
                cudaGetErrorName(err));
}

/* Streams ------------------------------------------------------------------------ */

pf_status pf_cuda_stream_create(pf_device *dev, int priority, void **native)
{
    *native = NULL;
    pf_status st = pf_cuda_use_device(dev);
    if (st != PF_OK) return st;
    /* CUDA's convention: lower numbers are higher priority; the range is
     * [greatest, least], e.g. [-5, 0]. Out-of-range requests are clamped as
     * device.h promises. */
    int least = 0, greatest = 0;
    cudaError_t err = cudaDeviceGetStreamPriorityRange(&least, &greatest);
    if (err != cudaSuccess)
        return pf_cuda_fail(err, "cudaDeviceGetStreamPriorityRange on %s", dev->spec);
    int prio = priority;
    if (prio < greatest) prio = greatest;
    if (prio > least) prio = least;
    cudaStream_t s = NULL;
    err = cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, prio);
    if (err != cudaSuccess)
        return pf_cuda_fail(err, "cudaStreamCreateWithPriority(non-blocking, priority %d) on %s",
                            prio, dev->spec);
    *native = s;
    return PF_OK;
}

void pf_cuda_stream_destroy(pf_device *dev, void *native)
{
    if (!native) return;
    cudaError_t err = cudaStreamDestroy((cudaStream_t)native);
    if (err != cudaSuccess) warn_teardown(err, "cudaStreamDestroy", native);
}

pf_status pf_cuda_stream_sync(void *native)
{
    cudaError_t err = cudaStreamSynchronize((cudaStream_t)native);
    if (err != cudaSuccess) return pf_cuda_fail(err, "cudaStreamSynchronize(%p)", native);
    return PF_OK;
}

pf_status pf_cuda_stream_query(void *native)
{
    cudaError_t err = cudaStreamQuery((cudaStream_t)native);
    if (err == cudaSuccess) return PF_OK;
    if (err == cudaErrorNotReady) return not_ready();
    return pf_cuda_fail(err, "cudaStreamQuery(%p)", native);
}

pf_status pf_cuda_stream_launch_host(void *native, void (*fn)(void *), void *user)
{
    cudaError_t err = cudaLaunchHostFunc((cudaStream_t)native, fn, user);
    if (err != cudaSuccess) return pf_cuda_fail(err, "cudaLaunchHostFunc(stream %p)", native);
    return PF_OK;
}

/* Events --------------------------------------------------------------------------- */

pf_status pf_cuda_event_create(pf_device *dev, void **native)
{
    *native = NULL;
    pf_status st = pf_cuda_use_device(dev);
    if (st != PF_OK) return st;
    /* cudaEventDefault keeps timing on (pf_event_elapsed_ms) and lets
     * cudaEventSynchronize spin-then-yield, the runtime's default. */
    cudaEvent_t e = NULL;
    cudaError_t err = cudaEventCreateWithFlags(&e, cudaEventDefault);
    if (err != cudaSuccess)
        return pf_cuda_fail(err, "cudaEventCreateWithFlags(default) on %s", dev->spec);
    *native = e;
    return PF_OK;
}

void pf_cuda_event_destroy(void *native)
{
    if (!native) return;
    cudaError_t err = cudaEventDestroy((cudaEvent_t)native);
    if (err != cudaSuccess) warn_teardown(err, "cudaEventDestroy", native);
}

pf_status pf_cuda_event_record(void *event, void *stream)
{
    cudaError_t err = cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream);
    if (err != cudaSuccess)
        return pf_cuda_fail(err, "cudaEventRecord(event %p, stream %p)", event, stream);
    return PF_OK;
}

pf_status pf_cuda_event_sync(void *event)
{
    cudaError_t err = cudaEventSynchronize((cudaEvent_t)event);
    if (err != cudaSuccess) return pf_cuda_fail(err, "cudaEventSynchronize(%p)", event);
    return PF_OK;
}

pf_status pf_cuda_event_query(void *event)
{
    cudaError_t err = cudaEventQuery((cudaEvent_t)event);
    if (err == cudaSuccess) return PF_OK;
    if (err == cudaErrorNotReady) return not_ready();
    return pf_cuda_fail(err, "cudaEventQuery(%p)", event);
}

pf_status pf_cuda_event_elapsed(void *start, void *end, float *ms)
{
    *ms = 0.0f;
    float v = 0.0f;
    cudaError_t err = cudaEventElapsedTime(&v, (cudaEvent_t)start, (cudaEvent_t)end);
    if (err == cudaErrorNotReady) {
        not_ready();
        return pf_set_error(PF_AGAIN,
                            "pf_event_elapsed_ms: an event has not completed yet "
                            "(synchronize the end event first)");
    }
    if (err != cudaSuccess)
        return pf_cuda_fail(err, "cudaEventElapsedTime(start %p, end %p)", start, end);
    *ms = v;
    return PF_OK;
}

pf_status pf_cuda_stream_wait_event(void *stream, void *event)
{
    cudaError_t err = cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0);
    if (err != cudaSuccess)
        return pf_cuda_fail(err, "cudaStreamWaitEvent(stream %p, event %p)", stream, event);
    return PF_OK;
}

/* Copies ---------------------------------------------------------------------------- */

pf_status pf_cuda_memcpy_async(void *stream, void *dst, const void *src, size_t n)
{
    cudaError_t err = cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, (cudaStream_t)stream);
    if (err != cudaSuccess) {
        char b[32];
        return pf_cuda_fail(err, "cudaMemcpyAsync(dst %p, src %p, %s, stream %p)", dst, src,
                            pf_fmt_bytes(b, sizeof b, n), stream);
    }
    return PF_OK;
}

pf_status pf_cuda_memcpy2d_async(void *stream, void *dst, size_t dpitch, const void *src,
                                 size_t spitch, size_t width, size_t rows)
{
    cudaError_t err = cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows, cudaMemcpyDefault,
                                        (cudaStream_t)stream);
    if (err != cudaSuccess)
        return pf_cuda_fail(err,
                            "cudaMemcpy2DAsync(dst %p pitch %zu, src %p pitch %zu, %zu x %zu rows, "
                            "stream %p)",
                            dst, dpitch, src, spitch, width, rows, stream);
    return PF_OK;
}

pf_status pf_cuda_memset_async(void *stream, void *dst, int value, size_t n)
{
    pf_status st = pf_cuda_use_stream_device((cudaStream_t)stream);
    if (st != PF_OK) return st;
    /* Only the low byte counts, as for memset() and the CPU backend. */
    cudaError_t err = cudaMemsetAsync(dst, value & 0xff, n, (cudaStream_t)stream);
    if (err != cudaSuccess) {
        char b[32];
        return pf_cuda_fail(err, "cudaMemsetAsync(%p, 0x%02x, %s, stream %p)", dst,
                            (unsigned)value & 0xffu, pf_fmt_bytes(b, sizeof b, n), stream);
    }
    return PF_OK;
}
