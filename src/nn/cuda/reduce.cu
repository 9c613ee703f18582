/* Row reductions: ReduceX, ArgMax/ArgMin, Softmax/LogSoftmax.
 *
 * The host splits the input's dims into kept dims (one row per kept
 * coordinate) and reduced dims (the row). A warp reduces a row of up to
 * 1024 elements (8 rows a block: small rows, many of them, as in per-pixel
 * channel softmax); longer rows get a whole 256-thread block. Sums
 * accumulate in f32 whatever the storage type. */
#include <math.h>

#include "cu_common.cuh"

using namespace pfcu;

namespace {

constexpr unsigned FULL = 0xffffffffu;

struct Acc {
    float v;
    i64 i;
};

__device__ __forceinline__ float combine(int op, float a, float b)
{
    switch (op) {
    case PF_IR_REDUCE_MAX: case PF_IR_SOFTMAX: return fmaxf(a, b);
    case PF_IR_REDUCE_MIN: return fminf(a, b);
    case PF_IR_REDUCE_PROD: return a * b;
    default: return a + b;
    }
}

__device__ __forceinline__ float identity(int op)
{
    switch (op) {
    case PF_IR_REDUCE_MAX: case PF_IR_SOFTMAX: return -INFINITY;
    case PF_IR_REDUCE_MIN: return INFINITY;
    case PF_IR_REDUCE_PROD: return 1.0f;
    default: return 0.0f;
    }
}

/* Reduces v over the group (a warp, or the block when BLK). */
template <bool BLK> __device__ float group_reduce(int op, float v, float *sh)
{
    for (int o = 16; o; o >>= 1) v = combine(op, v, __shfl_xor_sync(FULL, v, o));
    if (!BLK) return v;
    const int w = threadIdx.x >> 5, l = threadIdx.x & 31, nw = blockDim.x >> 5;
    __syncthreads();
    if (l == 0) sh[w] = v;
    __syncthreads();
    v = l < nw ? sh[l] : identity(op);
    for (int o = 16; o; o >>= 1) v = combine(op, v, __shfl_xor_sync(FULL, v, o));
    return v;
}

__device__ __forceinline__ bool better(Acc a, Acc b, bool is_max, bool last)
{
    /* Is a preferred over b? NaN never wins. */
    if (a.i < 0) return false;
    if (b.i < 0) return true;
    if (a.v != b.v) return is_max ? a.v > b.v : a.v < b.v;
    return last ? a.i > b.i : a.i < b.i;
}

template <bool BLK> __device__ Acc group_arg(Acc a, bool is_max, bool last, Acc *sh)
{
    for (int o = 16; o; o >>= 1) {
        Acc b;
        b.v = __shfl_xor_sync(FULL, a.v, o);
        b.i = __shfl_xor_sync(FULL, a.i, o);
        if (better(b, a, is_max, last)) a = b;
    }
    if (!BLK) return a;
    const int w = threadIdx.x >> 5, l = threadIdx.x & 31, nw = blockDim.x >> 5;
    __syncthreads();
    if (l == 0) sh[w] = a;
    __syncthreads();
    a.i = -1;
    a.v = 0.0f;
    if (l < nw) a = sh[l];
    for (int o = 16; o; o >>= 1) {
        Acc b;
        b.v = __shfl_xor_sync(FULL, a.v, o);
        b.i = __shfl_xor_sync(FULL, a.i, o);
        if (better(b, a, is_max, last)) a = b;
    }
    return a;
}

__device__ __forceinline__ void inner_off(const pf_cu_rows &r, i64 j, i64 &oi, i64 &oo)
{
    oi = 0;
    oo = 0;
    for (int d = r.ni - 1; d >= 0; d--) {
        const i64 c = j % r.idims[d];
        j /= r.idims[d];
        oi += c * r.ist_in[d];
        oo += c * r.ist_out[d];
    }
}

template <bool BLK>
__global__ void rows_k(pf_cu_rows r, int op, int flag, const void *in, int dti, void *out,
                       int dto)
{
    __shared__ float shf[32];
    __shared__ Acc sha[32];
    const i64 row = BLK ? (i64)blockIdx.x : (i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const int lane = BLK ? threadIdx.x : (threadIdx.x & 31);
    const int nt = BLK ? blockDim.x : 32;
    if (row >= r.n_rows) return; /* whole warps (or the whole block) leave together */
    i64 bi = 0, bo = 0, t = row;
    for (int d = r.no - 1; d >= 0; d--) {
        const i64 c = t % r.odims[d];
        t /= r.odims[d];
        bi += c * r.ost_in[d];
        bo += c * r.ost_out[d];
    }
    const i64 n = r.row_len;
    if (op == PF_IR_ARGMAX || op == PF_IR_ARGMIN) {
        Acc a;
        a.i = -1;
        a.v = 0.0f;
        const bool is_max = op == PF_IR_ARGMAX, last = flag != 0;
        for (i64 j = lane; j < n; j += nt) {
            i64 oi, oo;
            inner_off(r, j, oi, oo);
            Acc b;
            b.v = ldf(in, dti, bi + oi);
            b.i = b.v == b.v ? j : -1;
            if (better(b, a, is_max, last)) a = b;
        }
        a = group_arg<BLK>(a, is_max, last, sha);
        if (lane == 0) sti(out, dto, bo, a.i < 0 ? 0 : a.i);
        return;
    }
    if (op == PF_IR_SOFTMAX || op == PF_IR_LOG_SOFTMAX) {
        float m = -INFINITY;
        for (i64 j = lane; j < n; j += nt) {
            i64 oi, oo;
            inner_off(r, j, oi, oo);
            m = fmaxf(m, ldf(in, dti, bi + oi));
        }
        m = group_reduce<BLK>(PF_IR_SOFTMAX, m, shf);
        float s = 0.0f;
        for (i64 j = lane; j < n; j += nt) {
            i64 oi, oo;
            inner_off(r, j, oi, oo);
            s += expf(ldf(in, dti, bi + oi) - m);
        }
        s = group_reduce<BLK>(PF_IR_REDUCE_SUM, s, shf);
        const float inv = 1.0f / s, ls = logf(s);
        for (i64 j = lane; j < n; j += nt) {
            i64 oi, oo;
            inner_off(r, j, oi, oo);
            const float x = ldf(in, dti, bi + oi) - m;
            stf(out, dto, bo + oo, op == PF_IR_SOFTMAX ? expf(x) * inv : x - ls);
        }
        return;
    }
    const int cop = (op == PF_IR_REDUCE_MAX || op == PF_IR_REDUCE_MIN || op == PF_IR_REDUCE_PROD)
                        ? op : PF_IR_REDUCE_SUM;
    float acc = identity(cop);
    for (i64 j = lane; j < n; j += nt) {
        i64 oi, oo;
        inner_off(r, j, oi, oo);
        float x = ldf(in, dti, bi + oi);
        if (op == PF_IR_REDUCE_L2 || op == PF_IR_REDUCE_SUM_SQUARE) x *= x;
        acc = combine(cop, acc, x);
    }
    acc = group_reduce<BLK>(cop, acc, shf);
    if (lane == 0) {
        if (op == PF_IR_REDUCE_MEAN) acc = n ? acc / (float)n : NAN;
        else if (op == PF_IR_REDUCE_L2) acc = sqrtf(acc);
        stf(out, dto, bo, acc);
    }
}

} // namespace

extern "C" int pf_cu_launch_rows(const pf_cu_rows *r, int op, int flag, const void *in,
                                 int dt_in, void *out, int dt_out, void *stream)
{
    if (r->n_rows == 0) return 0;
    cudaStream_t st = (cudaStream_t)stream;
    if (r->row_len > 1024) {
        if (r->n_rows > 0x7fffffffll) return (int)cudaErrorInvalidValue;
        rows_k<true><<<(unsigned)r->n_rows, 256, 0, st>>>(*r, op, flag, in, dt_in, out, dt_out);
    } else {
        const long long blocks = (r->n_rows + 7) / 8;
        if (blocks > 0x7fffffffll) return (int)cudaErrorInvalidValue;
        rows_k<false><<<(unsigned)blocks, 256, 0, st>>>(*r, op, flag, in, dt_in, out, dt_out);
    }
    return (int)cudaGetLastError();
}
