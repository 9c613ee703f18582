/* CUDA graph slots used by pf_graph_cache (src/device/graph_cache.c).
 *
 * Capture uses cudaStreamCaptureModeThreadLocal: only calls made by the
 * capturing thread are checked for capture safety, so other threads of the
 * pipeline may keep allocating and synchronising their own streams while a
 * stage captures. A forbidden call on the capturing thread (synchronising the
 * capturing stream, a blocking allocation...) invalidates the capture; the
 * runtime then fails cudaStreamEndCapture with cudaErrorStreamCaptureInvalidated
 * and leaves the stream out of capture mode, which is what graph_end reports
 * so the cache can fall back to running the work directly.
 */
#include <stdio.h>

#include "cuda_internal.h"

pf_status pf_cuda_graph_begin(void *stream)
{
    pf_status st = pf_cuda_use_stream_device((cudaStream_t)stream);
    if (st != PF_OK) return st;
    cudaError_t err =
        cudaStreamBeginCapture((cudaStream_t)stream, cudaStreamCaptureModeThreadLocal);
    if (err != cudaSuccess)
        return pf_cuda_fail(err, "cudaStreamBeginCapture(stream %p, thread-local)", stream);
    return PF_OK;
}

static const char *capture_hint(cudaError_t err)
{
    switch (err) {
    case cudaErrorStreamCaptureInvalidated:
    case cudaErrorStreamCaptureUnsupported:
        return " [the captured work made a call that capture forbids, e.g. a synchronize, "
               "a query or a blocking allocation]";
    case cudaErrorStreamCaptureUnjoined:
        return " [the captured work forked onto another stream and did not join back]";
    case cudaErrorStreamCaptureWrongThread:
        return " [capture must end on the thread that began it]";
    default: return "";
    }
}

pf_status pf_cuda_graph_end(void *stream, void **exec)
{
    *exec = NULL;
    cudaStream_t s = (cudaStream_t)stream;
    cudaGraph_t graph = NULL;
    cudaError_t err = cudaStreamEndCapture(s, &graph);
    if (err != cudaSuccess) {
        if (graph) (void)cudaGraphDestroy(graph);
        /* Capture normally ends even when it failed; if the stream were still
         * capturing, every later call on it would be captured, so say so. */
        enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
        cudaError_t qerr = cudaStreamIsCapturing(s, &cs);
        const char *still = (qerr == cudaSuccess && cs != cudaStreamCaptureStatusNone)
                                ? " [the stream is still in capture mode]"
                                : "";
        return pf_cuda_fail(err, "cudaStreamEndCapture(stream %p)%s%s", stream,
                            capture_hint(err), still);
    }
    if (!graph) {
        /* Not expected from the runtime, but a NULL graph cannot be launched. */
        return pf_set_error(PF_ERR_DEVICE, "cudaStreamEndCapture(stream %p) returned no graph",
                            stream);
    }
    cudaGraphExec_t ge = NULL;
    err = cudaGraphInstantiate(&ge, graph, 0);
    /* The executable graph is independent of the template: keep only it. */
    cudaError_t derr = cudaGraphDestroy(graph);
    if (err != cudaSuccess) return pf_cuda_fail(err, "cudaGraphInstantiate(stream %p)", stream);
    if (derr != cudaSuccess) {
        /* The executable is fine; at worst the template leaks. */
        (void)cudaGetLastError();
        PF_LOGD("cudaGraphDestroy after instantiation failed: %s", cudaGetErrorString(derr));
    }
    *exec = ge;
    return PF_OK;
}

pf_status pf_cuda_graph_launch(void *exec, void *stream)
{
    pf_status st = pf_cuda_use_stream_device((cudaStream_t)stream);
    if (st != PF_OK) return st;
    cudaError_t err = cudaGraphLaunch((cudaGraphExec_t)exec, (cudaStream_t)stream);
    if (err != cudaSuccess)
        return pf_cuda_fail(err, "cudaGraphLaunch(exec %p, stream %p)", exec, stream);
    return PF_OK;
}

void pf_cuda_graph_destroy(void *exec)
{
    if (!exec) return;
    cudaError_t err = cudaGraphExecDestroy((cudaGraphExec_t)exec);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        if (!pf_cuda_is_teardown_error(err))
            PF_LOGW("cudaGraphExecDestroy(%p) failed: %s (%s)", exec, cudaGetErrorString(err),
                    cudaGetErrorName(err));
    }
}
