/* Movement kernels that are not a strided copy: Pad (constant, reflect,
 * edge; negative pads crop) and Gather. Transpose, Slice, Concat, Split,
 * Expand, Tile and depth/space are views over pf_cu_launch_ew's copy (see
 * dispatch.c). One thread per output element. */
#include "cu_common.cuh"

using namespace pfcu;

namespace {

__global__ void pad_k(pf_cu_pad p, const void *in, void *out, int dt, float value, i64 n)
{
    const bool fl = is_float(dt);
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        i64 r = i, oo = 0, oi = 0;
        bool inside = true;
        for (int d = p.nd - 1; d >= 0; d--) {
            const i64 c = r % p.out_dims[d];
            r /= p.out_dims[d];
            oo += c * p.out_st[d];
            i64 s = c - p.begin[d];
            const i64 len = p.in_dims[d];
            if (s < 0 || s >= len) {
                if (p.mode == PF_IR_PADMODE_CONSTANT || len == 0) {
                    inside = false;
                } else if (p.mode == PF_IR_PADMODE_EDGE) {
                    s = s < 0 ? 0 : len - 1;
                } else { /* reflect, repeated for pads longer than the dim */
                    const i64 period = len > 1 ? 2 * (len - 1) : 1;
                    s %= period;
                    if (s < 0) s += period;
                    if (s >= len) s = period - s;
                }
            }
            oi += s * p.in_st[d];
        }
        if (!inside) {
            if (fl) stf(out, dt, oo, value);
            else sti(out, dt, oo, (i64)p.value);
        } else if (fl) {
            stf(out, dt, oo, ldf(in, dt, oi));
        } else {
            sti(out, dt, oo, ldi(in, dt, oi));
        }
    }
}

__global__ void gather_k(pf_cu_gather p, const void *data, const void *idx, int dti, void *out,
                         int dt, i64 n)
{
    const bool fl = is_float(dt);
    const int q = p.nd_idx;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        i64 r = i, oo = 0, od = 0, oidx = 0;
        for (int d = p.nd_out - 1; d >= 0; d--) {
            const i64 c = r % p.out_dims[d];
            r /= p.out_dims[d];
            oo += c * p.out_st[d];
            if (d < p.axis) od += c * p.data_st[d];
            else if (d < p.axis + q) oidx += c * p.idx_st[d - p.axis];
            else od += c * p.data_st[d - q + 1];
        }
        const i64 len = p.data_dims[p.axis];
        i64 k = ldi(idx, dti, oidx);
        if (k < 0) k += len;
        /* Out-of-range indices (invalid per ONNX) read as zero rather than
         * outside the tensor. */
        if (k < 0 || k >= len) {
            if (fl) stf(out, dt, oo, 0.0f);
            else sti(out, dt, oo, 0);
            continue;
        }
        od += k * p.data_st[p.axis];
        if (fl) stf(out, dt, oo, ldf(data, dt, od));
        else sti(out, dt, oo, ldi(data, dt, od));
    }
}

} // namespace

extern "C" int pf_cu_launch_pad(const pf_cu_pad *p, const void *in, void *out, int dt,
                                void *stream)
{
    i64 n = 1;
    for (int d = 0; d < p->nd; d++) n *= p->out_dims[d];
    if (n == 0) return 0;
    pad_k<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(*p, in, out, dt, (float)p->value, n);
    return (int)cudaGetLastError();
}

extern "C" int pf_cu_launch_gather(const pf_cu_gather *p, const void *data, const void *idx,
                                   int dt_idx, void *out, int dt, void *stream)
{
    i64 n = 1;
    for (int d = 0; d < p->nd_out; d++) n *= p->out_dims[d];
    if (n == 0) return 0;
    gather_k<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(*p, data, idx, dt_idx, out, dt, n);
    return (int)cudaGetLastError();
}
