/* Binary elementwise ops with numpy broadcasting (ADD .. XOR, PRELU).
 *
 * The broadcast iterator (ndutil.c) hands out runs in which each input moves
 * by a fixed step; the loops below specialise the common steps (1,1), (1,0)
 * and (0,1) so that same-shape, per-channel and scalar operands vectorise.
 *
 * Types: ADD SUB MUL DIV MAX MIN MOD on F32, I64, I32, I8, U8 (wrapping;
 * integer DIV truncates toward zero; integer division or MOD by zero gives 0
 * rather than a trap), F64 and F16 (computed in double, then stored);
 * POW on F32/I64/I32 bases and exponents (output = base type); PRELU on F32;
 * comparisons on F32, I64, I32 (EQUAL also BOOL) to BOOL; AND OR XOR on
 * BOOL. MOD: the IR has no fmod attribute, so attr.unary.alpha != 0 means
 * fmod = 1 (C fmod: sign of the dividend), else the sign follows the divisor
 * (Python's %). Fused node->act applies to F32 ADD, SUB, MUL, DIV.
 * The F32 rows are compiled for AVX-512 and AVX2 too (residual adds and the
 * per-channel Mul of squeeze-excite blocks are on the hot path of mobile
 * nets). */
#include "../../core/vectorize.h" /* first: compile flags for the row loops */

#include <math.h>
#include <string.h>

#include "ndutil.h"
#include "pixflow/tensor.h"

typedef struct bin_job {
    pf_ir_op op;
    pf_ir_dtype ta, tb;
    const void *a, *b;
    void *o;
    bool fmod;
    pf_ir_act act;
    float act_a, act_b;
    pf_nd_bcast bc;
} bin_job;

#define BIN_LOOP(TA, TB, TO, EXPR)                                              \
    do {                                                                        \
        const TA *pa = (const TA *)j->a + off[0];                               \
        const TB *pb = (const TB *)j->b + off[1];                               \
        TO *po = (TO *)j->o + oo;                                               \
        const int64_t sa = st[0], sb = st[1];                                   \
        if (sa == 1 && sb == 1) {                                               \
            for (int64_t i = 0; i < n; i++) { TA x = pa[i]; TB y = pb[i]; po[i] = (TO)(EXPR); } \
        } else if (sa == 1 && sb == 0) {                                        \
            const TB y = pb[0];                                                 \
            for (int64_t i = 0; i < n; i++) { TA x = pa[i]; po[i] = (TO)(EXPR); } \
        } else if (sa == 0 && sb == 1) {                                        \
            const TA x = pa[0];                                                 \
            for (int64_t i = 0; i < n; i++) { TB y = pb[i]; po[i] = (TO)(EXPR); } \
        } else {                                                                \
            for (int64_t i = 0; i < n; i++) {                                   \
                TA x = pa[i * sa]; TB y = pb[i * sb]; po[i] = (TO)(EXPR);       \
            }                                                                   \
        }                                                                       \
    } while (0)

static float py_fmodf(float x, float y)
{
    float r = fmodf(x, y);
    if (r != 0.0f && ((r < 0.0f) != (y < 0.0f))) r += y;
    return r;
}

WIDE_CLONES static void row_f32(const bin_job *j, int64_t oo, const int64_t *off, int64_t n,
                                const int64_t *st)
{
    switch (j->op) {
    case PF_IR_ADD: BIN_LOOP(float, float, float, x + y); break;
    case PF_IR_SUB: BIN_LOOP(float, float, float, x - y); break;
    case PF_IR_MUL: BIN_LOOP(float, float, float, x * y); break;
    case PF_IR_DIV: BIN_LOOP(float, float, float, x / y); break;
    case PF_IR_POW: BIN_LOOP(float, float, float, powf(x, y)); break;
    /* NaN in either operand propagates, as numpy's maximum/minimum */
    case PF_IR_MAX: BIN_LOOP(float, float, float, (x > y || x != x) ? x : y); break;
    case PF_IR_MIN: BIN_LOOP(float, float, float, (x < y || x != x) ? x : y); break;
    case PF_IR_MOD:
        if (j->fmod) BIN_LOOP(float, float, float, fmodf(x, y));
        else BIN_LOOP(float, float, float, py_fmodf(x, y));
        break;
    case PF_IR_PRELU: BIN_LOOP(float, float, float, x < 0.0f ? y * x : x); break;
    case PF_IR_EQUAL: BIN_LOOP(float, float, uint8_t, x == y); break;
    case PF_IR_LESS: BIN_LOOP(float, float, uint8_t, x < y); break;
    case PF_IR_GREATER: BIN_LOOP(float, float, uint8_t, x > y); break;
    case PF_IR_LESS_OR_EQUAL: BIN_LOOP(float, float, uint8_t, x <= y); break;
    case PF_IR_GREATER_OR_EQUAL: BIN_LOOP(float, float, uint8_t, x >= y); break;
    default: break;
    }
    if (j->act != PF_IR_ACT_NONE)
        pf_nn_cpu_apply_act((float *)j->o + oo, (size_t)n, j->act, j->act_a, j->act_b);
}

/* Wrapping arithmetic in the unsigned type: overflow is defined and equals
 * numpy's two's-complement result. */
#define INT_ROWS(T, UT, TMIN)                                                                 \
    static T div_##T(T x, T y)                                                                \
    {                                                                                         \
        if (y == 0) return 0;                                                                 \
        if (y == -1) return (T)(0u - (UT)x);                                                  \
        return x / y;                                                                         \
    }                                                                                         \
    static T mod_##T(T x, T y, bool c_fmod)                                                   \
    {                                                                                         \
        if (y == 0 || y == -1) return 0;                                                      \
        T r = x % y;                                                                          \
        if (!c_fmod && r != 0 && ((r < 0) != (y < 0))) r += y;                                \
        return r;                                                                             \
    }                                                                                         \
    static void row_##T(const bin_job *j, int64_t oo, const int64_t *off, int64_t n,          \
                        const int64_t *st)                                                    \
    {                                                                                         \
        switch (j->op) {                                                                      \
        case PF_IR_ADD: BIN_LOOP(T, T, T, (UT)x + (UT)y); break;                              \
        case PF_IR_SUB: BIN_LOOP(T, T, T, (UT)x - (UT)y); break;                              \
        case PF_IR_MUL: BIN_LOOP(T, T, T, (UT)x * (UT)y); break;                              \
        case PF_IR_DIV: BIN_LOOP(T, T, T, div_##T(x, y)); break;                              \
        case PF_IR_MAX: BIN_LOOP(T, T, T, x > y ? x : y); break;                              \
        case PF_IR_MIN: BIN_LOOP(T, T, T, x < y ? x : y); break;                              \
        case PF_IR_MOD: { bool c_fmod = j->fmod; BIN_LOOP(T, T, T, mod_##T(x, y, c_fmod)); break; } \
        case PF_IR_EQUAL: BIN_LOOP(T, T, uint8_t, x == y); break;                             \
        case PF_IR_LESS: BIN_LOOP(T, T, uint8_t, x < y); break;                               \
        case PF_IR_GREATER: BIN_LOOP(T, T, uint8_t, x > y); break;                            \
        case PF_IR_LESS_OR_EQUAL: BIN_LOOP(T, T, uint8_t, x <= y); break;                     \
        case PF_IR_GREATER_OR_EQUAL: BIN_LOOP(T, T, uint8_t, x >= y); break;                  \
        default: break;                                                                       \
        }                                                                                     \
    }
INT_ROWS(int64_t, uint64_t, INT64_MIN)
INT_ROWS(int32_t, uint32_t, INT32_MIN)
INT_ROWS(int8_t, uint8_t, INT8_MIN)

/* U8 arithmetic wraps modulo 256 as numpy's uint8; DIV/MOD by 0 give 0. */
static void row_u8(const bin_job *j, int64_t oo, const int64_t *off, int64_t n, const int64_t *st)
{
    switch (j->op) {
    case PF_IR_ADD: BIN_LOOP(uint8_t, uint8_t, uint8_t, x + y); break;
    case PF_IR_SUB: BIN_LOOP(uint8_t, uint8_t, uint8_t, x - y); break;
    case PF_IR_MUL: BIN_LOOP(uint8_t, uint8_t, uint8_t, x * y); break;
    case PF_IR_DIV: BIN_LOOP(uint8_t, uint8_t, uint8_t, y ? x / y : 0); break;
    case PF_IR_MAX: BIN_LOOP(uint8_t, uint8_t, uint8_t, x > y ? x : y); break;
    case PF_IR_MIN: BIN_LOOP(uint8_t, uint8_t, uint8_t, x < y ? x : y); break;
    case PF_IR_MOD: BIN_LOOP(uint8_t, uint8_t, uint8_t, y ? x % y : 0); break;
    default: break;
    }
}

static double py_fmod(double x, double y)
{
    double r = fmod(x, y);
    if (r != 0.0 && ((r < 0.0) != (y < 0.0))) r += y;
    return r;
}

/* F64 and F16 arithmetic (the conformance cases' Max/Min/Mod and friends),
 * computed in double. */
static double arith_d(pf_ir_op op, bool c_fmod, double x, double y)
{
    switch (op) {
    case PF_IR_ADD: return x + y;
    case PF_IR_SUB: return x - y;
    case PF_IR_MUL: return x * y;
    case PF_IR_DIV: return x / y;
    case PF_IR_MAX: return (x > y || x != x) ? x : y;
    case PF_IR_MIN: return (x < y || x != x) ? x : y;
    case PF_IR_MOD: return c_fmod ? fmod(x, y) : py_fmod(x, y);
    default: return 0.0;
    }
}

static void row_f64(const bin_job *j, int64_t oo, const int64_t *off, int64_t n, const int64_t *st)
{
    const pf_ir_op op = j->op;
    const bool c_fmod = j->fmod;
    BIN_LOOP(double, double, double, arith_d(op, c_fmod, x, y));
}

static void row_f16(const bin_job *j, int64_t oo, const int64_t *off, int64_t n, const int64_t *st)
{
    const pf_ir_op op = j->op;
    const bool c_fmod = j->fmod;
    BIN_LOOP(uint16_t, uint16_t, uint16_t,
             pf_f32_to_f16((float)arith_d(op, c_fmod, pf_f16_to_f32(x), pf_f16_to_f32(y))));
}

static void row_bool(const bin_job *j, int64_t oo, const int64_t *off, int64_t n, const int64_t *st)
{
    switch (j->op) {
    case PF_IR_AND: BIN_LOOP(uint8_t, uint8_t, uint8_t, x && y); break;
    case PF_IR_OR: BIN_LOOP(uint8_t, uint8_t, uint8_t, x || y); break;
    case PF_IR_XOR: BIN_LOOP(uint8_t, uint8_t, uint8_t, (x != 0) != (y != 0)); break;
    case PF_IR_EQUAL: BIN_LOOP(uint8_t, uint8_t, uint8_t, (x != 0) == (y != 0)); break;
    default: break;
    }
}

static double load_d(const void *p, pf_ir_dtype t, int64_t i)
{
    switch (t) {
    case PF_IR_F32: return ((const float *)p)[i];
    case PF_IR_I64: return (double)((const int64_t *)p)[i];
    default: return ((const int32_t *)p)[i];
    }
}

/* POW with mixed or integer types: in double, stored as the base type. */
static void row_pow_mixed(const bin_job *j, int64_t oo, const int64_t *off, int64_t n,
                          const int64_t *st)
{
    for (int64_t i = 0; i < n; i++) {
        double r = pow(load_d(j->a, j->ta, off[0] + i * st[0]), load_d(j->b, j->tb, off[1] + i * st[1]));
        pf_nd_store_double((unsigned char *)j->o + (oo + i) * (int64_t)pf_nd_esize(j->ta), j->ta, r);
    }
}

static void bin_row(void *p, int64_t oo, const int64_t *off, int64_t n, const int64_t *st)
{
    const bin_job *j = p;
    if (j->op == PF_IR_POW && (j->ta != PF_IR_F32 || j->tb != PF_IR_F32)) row_pow_mixed(j, oo, off, n, st);
    else if (j->ta == PF_IR_F32) row_f32(j, oo, off, n, st);
    else if (j->ta == PF_IR_I64) row_int64_t(j, oo, off, n, st);
    else if (j->ta == PF_IR_I32) row_int32_t(j, oo, off, n, st);
    else if (j->ta == PF_IR_I8) row_int8_t(j, oo, off, n, st);
    else if (j->ta == PF_IR_U8) row_u8(j, oo, off, n, st);
    else if (j->ta == PF_IR_F64) row_f64(j, oo, off, n, st);
    else if (j->ta == PF_IR_F16) row_f16(j, oo, off, n, st);
    else row_bool(j, oo, off, n, st);
}

static void bin_range(void *p, int64_t lo, int64_t hi)
{
    const bin_job *j = p;
    pf_nd_bcast_rows(&j->bc, lo, hi, bin_row, p);
}

static bool is_num(pf_ir_dtype t)
{
    return t == PF_IR_F32 || t == PF_IR_I64 || t == PF_IR_I32;
}

static bool types_ok(pf_ir_op op, pf_ir_dtype ta, pf_ir_dtype tb, pf_ir_dtype to)
{
    switch (op) {
    case PF_IR_ADD: case PF_IR_SUB: case PF_IR_MUL: case PF_IR_DIV: case PF_IR_MAX:
    case PF_IR_MIN: case PF_IR_MOD:
        return (is_num(ta) || ta == PF_IR_I8 || ta == PF_IR_U8 || ta == PF_IR_F64 ||
                ta == PF_IR_F16) &&
               tb == ta && to == ta;
    case PF_IR_POW: return is_num(ta) && is_num(tb) && to == ta;
    case PF_IR_PRELU: return ta == PF_IR_F32 && tb == ta && to == ta;
    case PF_IR_EQUAL:
        return (is_num(ta) || ta == PF_IR_BOOL) && tb == ta && to == PF_IR_BOOL;
    case PF_IR_LESS: case PF_IR_GREATER: case PF_IR_LESS_OR_EQUAL: case PF_IR_GREATER_OR_EQUAL:
        return is_num(ta) && tb == ta && to == PF_IR_BOOL;
    case PF_IR_AND: case PF_IR_OR: case PF_IR_XOR:
        return ta == PF_IR_BOOL && tb == ta && to == PF_IR_BOOL;
    default: return false;
    }
}

pf_status pf_nn_cpu_binary(const pf_nn_cpu_args *a)
{
    const pf_ir_node *n = a->node;
    const pf_ir_value *va = a->vin[0], *vb = a->vin[1], *vy = a->vout[0];
    if (n->n_in < 2 || !va || !vb || !a->in[0] || !a->in[1])
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "needs two inputs");
    if (!types_ok(n->op, va->dtype, vb->dtype, vy->dtype))
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED,
                              "dtypes %s, %s -> %s are not supported by %s on the CPU",
                              pf_ir_dtype_name(va->dtype), pf_ir_dtype_name(vb->dtype),
                              pf_ir_dtype_name(vy->dtype), pf_ir_op_name(n->op));
    bool act_op = n->op == PF_IR_ADD || n->op == PF_IR_SUB || n->op == PF_IR_MUL || n->op == PF_IR_DIV;
    if (n->act != PF_IR_ACT_NONE && (!act_op || va->dtype != PF_IR_F32))
        return pf_nn_cpu_fail(a, PF_ERR_UNSUPPORTED, "a fused activation needs F32 Add/Sub/Mul/Div");
    bin_job j;
    memset(&j, 0, sizeof j);
    const pf_ir_value *ins[2] = {va, vb};
    if (vy->ndim < 0 || !pf_nd_bcast_init(&j.bc, vy->ndim, vy->dims, 2, ins))
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "inputs '%s' and '%s' do not broadcast to output '%s'",
                              va->name, vb->name, vy->name);
    j.op = n->op;
    j.ta = va->dtype;
    j.tb = vb->dtype;
    j.a = a->in[0];
    j.b = a->in[1];
    j.o = a->out[0];
    j.fmod = n->attr.unary.alpha != 0.0f;
    j.act = n->act;
    j.act_a = n->act_a;
    j.act_b = n->act_b;
    pf_nd_parallel_range(a->pool, j.bc.total, 0, bin_range, &j);
    return PF_OK;
}
