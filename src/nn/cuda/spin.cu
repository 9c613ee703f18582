/* Timing helpers. A kernel that only waits: the per-node profile puts one
 * before each step's start event, so the host has queued the step's
 * launches (cuDNN's host work included) before the GPU reaches that event,
 * and the event pair times the step's GPU work alone, not the host's launch
 * gaps. And the event timer of the plan-time choices (conv configs, paths,
 * cuDNN engines). */
#include "cu_common.cuh"

namespace {

__global__ void spin_k(unsigned long long ns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        __nanosleep(1000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

} // namespace

extern "C" int pf_cu_time_ms(int (*launch)(void *), void *arg, void *stream, float *ms)
{
    enum { REPS = 5 };
    cudaStream_t s = (cudaStream_t)stream;
    cudaEvent_t e0 = NULL, e1 = NULL;
    *ms = -1.0f;
    int err = (int)cudaEventCreate(&e0);
    if (!err) err = (int)cudaEventCreate(&e1);
    if (!err) err = launch(arg); /* warm-up */
    if (!err) err = (int)cudaEventRecord(e0, s);
    for (int r = 0; r < REPS && !err; r++) err = launch(arg);
    if (!err) err = (int)cudaEventRecord(e1, s);
    if (!err) err = (int)cudaEventSynchronize(e1);
    if (!err) err = (int)cudaEventElapsedTime(ms, e0, e1);
    if (!err) *ms /= REPS;
    else *ms = -1.0f;
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    (void)cudaGetLastError();
    return err;
}

extern "C" int pf_cu_launch_spin(unsigned us, void *stream)
{
    spin_k<<<1, 1, 0, (cudaStream_t)stream>>>((unsigned long long)us * 1000ull);
    return (int)cudaGetLastError();
}
