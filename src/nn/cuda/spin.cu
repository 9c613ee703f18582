/* A kernel that only waits: the per-node profile puts one before each
 * step's start event, so the host has queued the step's launches (cuDNN's
 * host work included) before the GPU reaches that event, and the event pair
 * times the step's GPU work alone, not the host's launch gaps. */
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

extern "C" int pf_cu_launch_spin(unsigned us, void *stream)
{
    spin_k<<<1, 1, 0, (cudaStream_t)stream>>>((unsigned long long)us * 1000ull);
    return (int)cudaGetLastError();
}
