/* CUDA rotated crop (pf_ops_crop_rotated): one thread per output pixel, the
 * crops of a chunk along grid.z, the item descriptors passed by value as a
 * kernel parameter (nothing uploaded: capturable in a CUDA graph). The sample
 * point and bilinear arithmetic are the reference's (pf_cr_point,
 * pf_cr_sample in src/ops/crop_rotated.h); source reads are scattered along
 * the rotation and come from L1/L2 (a 192x192 crop touches ~100 KB). */
#include <string.h>

#include <cuda_runtime.h>

extern "C" {
#include "../ops/crop_rotated.h"
#include "../ops/ops_impl.h"
#include "cuda_internal.h"
}

namespace {

struct cr_items {
    pf_cr_item it[PF_CR_MAX_ITEMS];
};

__global__ void crop_rotated_kernel(pf_cr_params p, const __grid_constant__ cr_items items)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    const int i = blockIdx.z;
    if (x >= p.width || y >= p.height) return;
    const pf_cr_item *it = &items.it[i];
    float sx, sy, v[3];
    pf_cr_point(it, x, y, p.width, p.height, &sx, &sy);
    pf_cr_sample(it, sx, sy, v);
    float *o = p.dst + (((size_t)i * p.height + y) * p.width + x) * 3;
    o[0] = v[0] * p.scale + p.bias;
    o[1] = v[1] * p.scale + p.bias;
    o[2] = v[2] * p.scale + p.bias;
}

} /* namespace */

extern "C" pf_status pf_cuda_crop_rotated(pf_ops *ops, const pf_cr_params *p,
                                          const pf_cr_item *items)
{
    cudaStream_t s = (cudaStream_t)pf_stream_native(ops->stream);
    pf_status st = pf_cuda_use_stream_device(s);
    if (st != PF_OK) return st;
    cr_items all;
    memcpy(all.it, items, (size_t)p->n * sizeof *items);
    const dim3 block(32, 8), grid((unsigned)(p->width + 31) / 32, (unsigned)(p->height + 7) / 8,
                                  (unsigned)p->n);
    crop_rotated_kernel<<<grid, block, 0, s>>>(*p, all);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        return pf_cuda_fail(err, "crop_rotated_kernel(%d crops of %dx%d)", p->n, p->width,
                            p->height);
    return PF_OK;
}
