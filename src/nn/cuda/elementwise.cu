/* Elementwise kernels: unary, binary with broadcasting, Where, strided
 * copies with dtype conversion (Cast, layout changes, movement views), bias
 * + activation, and Reshape of a strided input.
 *
 * One kernel walks the simplified index space (see cu_internal.h). Float
 * operands compute in f32 (F16 loads widen, stores round to nearest even);
 * integer and bool operands compute in int64. When every operand is dense
 * in the same order the space is one dim and the index math is a multiply;
 * F16 copies/unary/binary ops of that shape move two halves per access. */
#include "cu_common.cuh"

using namespace pfcu;

namespace {

template <typename I> struct Space {
    int nd;
    I dims[PF_CU_MAXD];
    I st[PF_CU_MAXK][PF_CU_MAXD];
};

__device__ __forceinline__ float unary_f(int op, float x, float a, float b)
{
    switch (op) {
    case PF_IR_RELU: return x > 0.0f ? x : 0.0f;
    case PF_IR_SIGMOID: return sigmoidf_(x);
    case PF_IR_TANH: return tanhf(x);
    case PF_IR_HARD_SIGMOID: return fmaxf(0.0f, fminf(1.0f, a * x + b));
    case PF_IR_HARD_SWISH: return x * fmaxf(0.0f, fminf(1.0f, x / 6.0f + 0.5f));
    case PF_IR_LEAKY_RELU: return x >= 0.0f ? x : a * x;
    /* comparisons, not fminf/fmaxf: NaN stays NaN, as on the CPU */
    case PF_IR_CLIP: return x < a ? a : (x > b ? b : x);
    case PF_IR_ELU: return x >= 0.0f ? x : a * (expf(x) - 1.0f);
    case PF_IR_SELU: return x > 0.0f ? b * x : b * (a * expf(x) - a);
    case PF_IR_SOFTPLUS: return x > 20.0f ? x : log1pf(expf(x));
    case PF_IR_SOFTSIGN: return x / (1.0f + fabsf(x));
    case PF_IR_ABS: return fabsf(x);
    case PF_IR_NEG: return -x;
    case PF_IR_EXP: return expf(x);
    case PF_IR_LOG: return logf(x);
    case PF_IR_SQRT: return sqrtf(x);
    case PF_IR_RECIPROCAL: return 1.0f / x;
    case PF_IR_FLOOR: return floorf(x);
    case PF_IR_CEIL: return ceilf(x);
    case PF_IR_ROUND: return rintf(x);
    case PF_IR_ERF: return erff(x);
    case PF_IR_SIN: return sinf(x);
    case PF_IR_COS: return cosf(x);
    case PF_IR_NOT: return x == 0.0f ? 1.0f : 0.0f;
    case PF_IR_SIGN: return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f);
    case PF_CU_OP_SCALE: return x * a;
    default: return x; /* IDENTITY, CAST */
    }
}

/* Integer Clip bound from a float attribute (fold.c stores Clip's integer
 * min/max inputs there): values below ceil(lo) are raised to it; a bound
 * beyond the i64 range (the -inf/+inf defaults) clips nothing. */
__device__ __forceinline__ i64 clip_i(i64 x, float lo, float hi)
{
    if (lo > -9.2e18f && (float)x <= lo) {
        const i64 l = (i64)ceilf(lo);
        if (x < l) x = l;
    }
    if (hi < 9.2e18f && (float)x >= hi) {
        const i64 h = (i64)floorf(hi);
        if (x > h) x = h;
    }
    return x;
}

__device__ __forceinline__ i64 unary_i(int op, i64 x, float a, float b)
{
    switch (op) {
    case PF_IR_CLIP: return clip_i(x, a, b);
    case PF_IR_ABS: return x < 0 ? -x : x;
    case PF_IR_NEG: return -x;
    case PF_IR_SIGN: return x > 0 ? 1 : (x < 0 ? -1 : 0);
    case PF_IR_NOT: return x == 0;
    case PF_IR_RELU: return x > 0 ? x : 0;
    case PF_CU_OP_SCALE: return (i64)((float)x * a);
    default: return x;
    }
}

/* Mod: c_fmod (ONNX fmod = 1, attr unary.alpha != 0, e.a = 1) keeps the
 * dividend's sign as C's fmod and %; fmod = 0 takes the divisor's. */
__device__ __forceinline__ float binary_f(int op, float x, float y, bool c_fmod)
{
    switch (op) {
    case PF_IR_ADD: case PF_IR_SUM: return x + y;
    case PF_IR_SUB: return x - y;
    case PF_IR_MUL: return x * y;
    case PF_IR_DIV: return x / y;
    case PF_IR_POW: return powf(x, y);
    case PF_IR_MAX: return fmaxf(x, y);
    case PF_IR_MIN: return fminf(x, y);
    case PF_IR_MOD: {
        float r = fmodf(x, y);
        if (!c_fmod && r != 0.0f && ((r < 0.0f) != (y < 0.0f))) r += y;
        return r;
    }
    case PF_IR_PRELU: return x >= 0.0f ? x : x * y;
    case PF_IR_EQUAL: return x == y;
    case PF_IR_LESS: return x < y;
    case PF_IR_GREATER: return x > y;
    case PF_IR_LESS_OR_EQUAL: return x <= y;
    case PF_IR_GREATER_OR_EQUAL: return x >= y;
    case PF_IR_AND: return (x != 0.0f) && (y != 0.0f);
    case PF_IR_OR: return (x != 0.0f) || (y != 0.0f);
    case PF_IR_XOR: return (x != 0.0f) != (y != 0.0f);
    default: return 0.0f;
    }
}

__device__ __forceinline__ i64 binary_i(int op, i64 x, i64 y, bool c_fmod)
{
    switch (op) {
    case PF_IR_ADD: case PF_IR_SUM: return x + y;
    case PF_IR_SUB: return x - y;
    case PF_IR_MUL: return x * y;
    case PF_IR_DIV: return y ? x / y : 0;
    case PF_IR_POW: {
        i64 r = 1;
        for (i64 k = 0; k < y && k < 64; k++) r *= x;
        return y < 0 ? 0 : r;
    }
    case PF_IR_MAX: return x > y ? x : y;
    case PF_IR_MIN: return x < y ? x : y;
    case PF_IR_MOD: {
        /* by 0 gives 0 as on the CPU; by -1 is 0 without INT64_MIN % -1 */
        if (y == 0 || y == -1) return 0;
        i64 r = x % y;
        if (!c_fmod && r != 0 && ((r < 0) != (y < 0))) r += y;
        return r;
    }
    case PF_IR_PRELU: return x >= 0 ? x : x * y;
    case PF_IR_EQUAL: return x == y;
    case PF_IR_LESS: return x < y;
    case PF_IR_GREATER: return x > y;
    case PF_IR_LESS_OR_EQUAL: return x <= y;
    case PF_IR_GREATER_OR_EQUAL: return x >= y;
    case PF_IR_AND: return x && y;
    case PF_IR_OR: return x || y;
    case PF_IR_XOR: return (x != 0) != (y != 0);
    default: return 0;
    }
}

/* One element: operand offsets o[0] (out), o[1..]. */
__device__ __forceinline__ void ew_one(const pf_cu_ew &e, i64 o0, i64 o1, i64 o2, i64 o3)
{
    if (e.n_in == 3) { /* Where: cond, x, y */
        const bool c = ldi(e.in[0], e.dt_in[0], o1) != 0;
        if (is_float(e.dt_in[1]) || is_float(e.dt_out))
            stf(e.out, e.dt_out, o0, c ? ldf(e.in[1], e.dt_in[1], o2) : ldf(e.in[2], e.dt_in[2], o3));
        else
            sti(e.out, e.dt_out, o0, c ? ldi(e.in[1], e.dt_in[1], o2) : ldi(e.in[2], e.dt_in[2], o3));
        return;
    }
    const bool fin = is_float(e.dt_in[0]);
    if (e.n_in == 1) {
        if (fin) {
            float r = unary_f(e.op, ldf(e.in[0], e.dt_in[0], o1), e.a, e.b);
            stf(e.out, e.dt_out, o0, act_f(e.act, r, e.act_a, e.act_b));
        } else {
            sti(e.out, e.dt_out, o0, unary_i(e.op, ldi(e.in[0], e.dt_in[0], o1), e.a, e.b));
        }
        return;
    }
    if (fin || is_float(e.dt_in[1])) {
        float r = binary_f(e.op, ldf(e.in[0], e.dt_in[0], o1), ldf(e.in[1], e.dt_in[1], o2),
                           e.a != 0.0f);
        stf(e.out, e.dt_out, o0, act_f(e.act, r, e.act_a, e.act_b));
    } else {
        sti(e.out, e.dt_out, o0,
            binary_i(e.op, ldi(e.in[0], e.dt_in[0], o1), ldi(e.in[1], e.dt_in[1], o2),
                     e.a != 0.0f));
    }
}

template <typename I>
__global__ void ew_nd(Space<I> s, pf_cu_ew e, I n)
{
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I o[PF_CU_MAXK] = {0, 0, 0, 0};
        I r = i;
        for (int d = s.nd - 1; d > 0; d--) {
            const I c = r % s.dims[d];
            r /= s.dims[d];
#pragma unroll
            for (int k = 0; k < PF_CU_MAXK; k++) o[k] += c * s.st[k][d];
        }
#pragma unroll
        for (int k = 0; k < PF_CU_MAXK; k++) o[k] += r * s.st[k][0];
        ew_one(e, o[0], o[1], o[2], o[3]);
    }
}

/* Dense F16 fast paths: identity copy and unary/binary ops, two halves a
 * thread (n even, every pointer 4-byte aligned). */
__global__ void ew_dense_h2(pf_cu_ew e, i64 n2)
{
    const __half2 *a = (const __half2 *)e.in[0];
    const __half2 *b = (const __half2 *)e.in[1];
    __half2 *y = (__half2 *)e.out;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n2;
         i += (i64)gridDim.x * blockDim.x) {
        float2 x = __half22float2(a[i]);
        float r0, r1;
        if (e.n_in == 1) {
            r0 = unary_f(e.op, x.x, e.a, e.b);
            r1 = unary_f(e.op, x.y, e.a, e.b);
        } else {
            float2 z = __half22float2(b[i]);
            r0 = binary_f(e.op, x.x, z.x, e.a != 0.0f);
            r1 = binary_f(e.op, x.y, z.y, e.a != 0.0f);
        }
        r0 = act_f(e.act, r0, e.act_a, e.act_b);
        r1 = act_f(e.act, r1, e.act_a, e.act_b);
        y[i] = __floats2half2_rn(r0, r1);
    }
}

/* The same with 16-byte accesses (eight halves a thread): residual adds
 * of ResNet-sized maps reached ~1.8 TB/s with half2 accesses. */
__global__ void ew_dense_h8(pf_cu_ew e, i64 n8)
{
    const uint4 *a = (const uint4 *)e.in[0];
    const uint4 *b = (const uint4 *)e.in[1];
    uint4 *y = (uint4 *)e.out;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n8;
         i += (i64)gridDim.x * blockDim.x) {
        uint4 va = a[i], vb = e.n_in == 1 ? va : b[i], vy;
        const __half2 *ha = (const __half2 *)&va, *hb = (const __half2 *)&vb;
        __half2 *hy = (__half2 *)&vy;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            float2 x = __half22float2(ha[k]);
            float r0, r1;
            if (e.n_in == 1) {
                r0 = unary_f(e.op, x.x, e.a, e.b);
                r1 = unary_f(e.op, x.y, e.a, e.b);
            } else {
                float2 z = __half22float2(hb[k]);
                r0 = binary_f(e.op, x.x, z.x, e.a != 0.0f);
                r1 = binary_f(e.op, x.y, z.y, e.a != 0.0f);
            }
            r0 = act_f(e.act, r0, e.act_a, e.act_b);
            r1 = act_f(e.act, r1, e.act_a, e.act_b);
            hy[k] = __floats2half2_rn(r0, r1);
        }
        y[i] = vy;
    }
}

/* A dense F16 map [n, rows, c] (channels innermost) against a per-channel
 * operand [n, 1, c] (image stride bst, elements): squeeze-excite
 * multiplies and per-channel adds of NHWC values, eight halves a thread.
 * bcast_first: the per-channel operand is the op's first input. c8 = c / 8,
 * per_img = rows * c8. */
__global__ void ew_chan_h8(pf_cu_ew e, i64 n8, i64 c8, i64 per_img, i64 bst8, int bcast_first)
{
    const uint4 *a = (const uint4 *)e.in[bcast_first ? 1 : 0];
    const uint4 *b = (const uint4 *)e.in[bcast_first ? 0 : 1];
    uint4 *y = (uint4 *)e.out;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n8;
         i += (i64)gridDim.x * blockDim.x) {
        const i64 img = i / per_img, ch = i % c8;
        uint4 va = a[i], vb = b[img * bst8 + ch], vy;
        const __half2 *ha = (const __half2 *)&va, *hb = (const __half2 *)&vb;
        __half2 *hy = (__half2 *)&vy;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const float2 x = __half22float2(ha[k]), z = __half22float2(hb[k]);
            const bool cf = e.a != 0.0f;
            float r0 = bcast_first ? binary_f(e.op, z.x, x.x, cf) : binary_f(e.op, x.x, z.x, cf);
            float r1 = bcast_first ? binary_f(e.op, z.y, x.y, cf) : binary_f(e.op, x.y, z.y, cf);
            r0 = act_f(e.act, r0, e.act_a, e.act_b);
            r1 = act_f(e.act, r1, e.act_a, e.act_b);
            hy[k] = __floats2half2_rn(r0, r1);
        }
        y[i] = vy;
    }
}

/* Same-dtype copy of rows (contiguous, 16-byte multiples) between row
 * strides: channel slices of NHWC values (Concat parts, Split, Slice). */
__global__ void copy_rows16(uint4 *out, const uint4 *in, int rows, int cols, int ost, int ist)
{
    const int n = rows * cols;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const int r = i / cols, c = i - r * cols;
        out[r * ost + c] = in[r * ist + c];
    }
}

bool aligned4(const void *p) { return ((uintptr_t)p & 3) == 0; }
bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

template <typename I> Space<I> narrow(const pf_cu_nd *s)
{
    Space<I> t;
    t.nd = s->nd;
    for (int d = 0; d < PF_CU_MAXD; d++) {
        t.dims[d] = d < s->nd ? (I)s->dims[d] : 1;
        for (int k = 0; k < PF_CU_MAXK; k++) t.st[k][d] = d < s->nd ? (I)s->st[k][d] : 0;
    }
    return t;
}

/* Whether every offset the walk forms fits in 32-bit signed arithmetic. */
bool fits32(const pf_cu_nd *s, int64_t n)
{
    if (n >= (1ll << 31)) return false;
    for (int k = 0; k < PF_CU_MAXK; k++) {
        int64_t span = 0;
        for (int d = 0; d < s->nd; d++) {
            int64_t st = s->st[k][d] < 0 ? -s->st[k][d] : s->st[k][d];
            span += st * (s->dims[d] - 1);
            if (span >= (1ll << 30)) return false;
        }
    }
    return true;
}

__global__ void reshape_k(const void *in, int dti, int ind, pf_cu_nd ins, void *out, int dto,
                          int ond, pf_cu_nd outs, i64 n)
{
    const bool fl = is_float(dti) || is_float(dto);
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        i64 oi = 0, oo = 0, r = i;
        for (int d = ind - 1; d >= 0; d--) {
            oi += (r % ins.dims[d]) * ins.st[0][d];
            r /= ins.dims[d];
        }
        r = i;
        for (int d = ond - 1; d >= 0; d--) {
            oo += (r % outs.dims[d]) * outs.st[0][d];
            r /= outs.dims[d];
        }
        if (fl) stf(out, dto, oo, ldf(in, dti, oi));
        else sti(out, dto, oo, ldi(in, dti, oi));
    }
}

/* Whether s (simplified) is [n, rows, c] with operand 0 and operand `d`
 * dense and operand `b` per channel ({bst, 0, 1}), c % 8 == 0, all of it
 * 16-byte aligned; fills the launch numbers. */
bool chan_h8(const pf_cu_ew *e, const pf_cu_nd *s, int d, int bi, i64 *c8, i64 *per_img,
             i64 *bst8)
{
    i64 dims[3], st[3][3];
    const int ops[3] = {0, d, bi};
    if (s->nd == 3) {
        for (int j = 0; j < 3; j++) {
            dims[j] = s->dims[j];
            for (int k = 0; k < 3; k++) st[k][j] = s->st[ops[k]][j];
        }
    } else if (s->nd == 2) { /* one image */
        dims[0] = 1;
        for (int k = 0; k < 3; k++) st[k][0] = 0;
        for (int j = 0; j < 2; j++) {
            dims[j + 1] = s->dims[j];
            for (int k = 0; k < 3; k++) st[k][j + 1] = s->st[ops[k]][j];
        }
    } else {
        return false;
    }
    const i64 c = dims[2], rows = dims[1];
    if (c % 8 != 0 || rows < 1 || dims[0] < 1) return false;
    for (int k = 0; k < 2; k++)
        if (st[k][2] != 1 || st[k][1] != c || (dims[0] > 1 && st[k][0] != rows * c)) return false;
    if (st[2][2] != 1 || st[2][1] != 0 || st[2][0] < 0 || st[2][0] % 8 != 0) return false;
    if (!aligned16(e->out) || !aligned16(e->in[0]) || !aligned16(e->in[1])) return false;
    *c8 = c / 8;
    *per_img = rows * (c / 8);
    *bst8 = dims[0] > 1 ? st[2][0] / 8 : 0;
    return true;
}

} // namespace

extern "C" int pf_cu_launch_ew(const pf_cu_ew *e, const pf_cu_nd *s0, void *stream)
{
    pf_cu_nd s = *s0;
    pf_cu_nd_simplify(&s, e->n_in + 1);
    const int64_t n = pf_cu_nd_numel(&s);
    if (n == 0) return 0;
    cudaStream_t st = (cudaStream_t)stream;
    const int T = 256;
    bool dense = s.nd == 1;
    i64 c8 = 0, per_img = 0, bst8 = 0;
    bool bfirst = false;
    for (int k = 0; dense && k <= e->n_in; k++) dense = s.st[k][0] == 1;
    if (dense && e->n_in <= 2 && (n & 1) == 0 && e->dt_out == PF_IR_F16 &&
        e->dt_in[0] == PF_IR_F16 && (e->n_in == 1 || e->dt_in[1] == PF_IR_F16) &&
        aligned4(e->out) && aligned4(e->in[0]) && (e->n_in == 1 || aligned4(e->in[1])) &&
        e->op < PF_IR_EQUAL) {
        if ((n & 7) == 0 && aligned16(e->out) && aligned16(e->in[0]) &&
            (e->n_in == 1 || aligned16(e->in[1])))
            ew_dense_h8<<<grid_for(n / 8, T), T, 0, st>>>(*e, n / 8);
        else
            ew_dense_h2<<<grid_for(n / 2, T), T, 0, st>>>(*e, n / 2);
    } else if (e->n_in == 2 && e->dt_out == PF_IR_F16 && e->dt_in[0] == PF_IR_F16 &&
               e->dt_in[1] == PF_IR_F16 && e->op < PF_IR_EQUAL &&
               (chan_h8(e, &s, 1, 2, &c8, &per_img, &bst8) ||
                (bfirst = chan_h8(e, &s, 2, 1, &c8, &per_img, &bst8)))) {
        const i64 n8 = n / 8;
        ew_chan_h8<<<grid_for(n8, T), T, 0, st>>>(*e, n8, c8, per_img, bst8, bfirst ? 1 : 0);
    } else if (e->op == PF_IR_IDENTITY && e->n_in == 1 && e->dt_out == e->dt_in[0] &&
               e->dt_out == PF_IR_F16 && s.nd == 2 && s.st[0][1] == 1 && s.st[1][1] == 1 &&
               (s.dims[1] * 2) % 16 == 0 && (s.st[0][0] * 2) % 16 == 0 &&
               (s.st[1][0] * 2) % 16 == 0 && s.st[0][0] >= 0 && s.st[1][0] >= 0 &&
               aligned16(e->out) && aligned16(e->in[0]) && fits32(&s, n)) {
        const int cols = (int)(s.dims[1] / 8);
        copy_rows16<<<grid_for(n / 8, T), T, 0, st>>>((uint4 *)e->out, (const uint4 *)e->in[0],
                                                      (int)s.dims[0], cols, (int)(s.st[0][0] / 8),
                                                      (int)(s.st[1][0] / 8));
    } else if (fits32(&s, n)) {
        ew_nd<int><<<grid_for(n, T), T, 0, st>>>(narrow<int>(&s), *e, (int)n);
    } else {
        ew_nd<i64><<<grid_for(n, T), T, 0, st>>>(narrow<i64>(&s), *e, (i64)n);
    }
    return (int)cudaGetLastError();
}

extern "C" int pf_cu_launch_reshape(const void *in, int dt_in, int in_nd, const int64_t *in_dims,
                                    const int64_t *in_st, void *out, int dt_out, int out_nd,
                                    const int64_t *out_dims, const int64_t *out_st,
                                    void *stream)
{
    pf_cu_nd a, b;
    int64_t n = 1;
    for (int d = 0; d < in_nd; d++) {
        a.dims[d] = in_dims[d];
        a.st[0][d] = in_st[d];
    }
    for (int d = 0; d < out_nd; d++) {
        b.dims[d] = out_dims[d];
        b.st[0][d] = out_st[d];
        n *= out_dims[d];
    }
    if (n == 0) return 0;
    reshape_k<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(in, dt_in, in_nd, a, out, dt_out,
                                                                   out_nd, b, n);
    return (int)cudaGetLastError();
}

extern "C" const char *pf_cu_error_string(int err)
{
    return cudaGetErrorString((cudaError_t)err);
}
