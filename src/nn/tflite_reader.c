/* TFLite reader: a bounds-checked FlatBuffer walk that fills the plain view
 * of tflite_reader.h.
 *
 * Design. A FlatBuffer is a graph of tables, vectors and strings linked by
 * 32-bit offsets: each table starts with a signed offset to its vtable (a
 * list of 16-bit field positions, slot = the field's id in the schema; a
 * union field takes two slots, its type then its value), and a field that
 * holds a table, vector or string stores an unsigned offset to it, relative
 * to the field. None of these numbers can be trusted in a file, so every
 * access goes through the fb_* helpers below: they check, in 64-bit
 * arithmetic, that a table, its vtable, each field inside the table, each
 * vector (length * element size) and each string (with its NUL) lie inside
 * the file before handing out a pointer, and name the place and value in
 * the error. Child offsets are unsigned, so they only point forward and the
 * walk cannot loop; but a hostile file may let many parents share one child
 * (a vector of 100k offsets to one subgraph with 100k tensors), which would
 * multiply the records to decode. A budget of one record per 4 file bytes
 * (a record needs at least a 4-byte offset to it and its own table) stops
 * that without ever limiting a real model.
 *
 * Integer lists (shapes, tensor index lists) are handed out as pointers into
 * the file copy, which is 64-byte aligned, so a vector aligned in the file
 * is aligned in memory; FlatBuffers writers align every vector to its
 * element size, and misaligned ones are rejected. Scalars inside tables are
 * read with memcpy, so their alignment does not matter.
 *
 * Field ids used here are those of TensorFlow's schema.fbs (Model, SubGraph,
 * Tensor, QuantizationParameters, Operator, OperatorCode, Buffer and the
 * option tables); the ids of a table's fields are their order of
 * declaration, deprecated fields included. */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>

#include "../core/error.h"
#include "../core/sys.h"
#include "tflite_reader.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the TFLite reader hands out little-endian file data in place"
#endif

/* --- reading context, paths and errors -------------------------------------- */

typedef struct rd {
    const uint8_t *d;
    size_t n;
    const char *name;
    char path[256];       /* where the walk is: "subgraphs[0].operators[12]" */
    size_t plen;
    size_t records_left;  /* decode budget, see the design note */
    size_t extent;        /* one past the last byte referred to */
} rd;

static size_t path_push(rd *r, const char *fmt, ...) PF_PRINTF(2, 3);
static size_t path_push(rd *r, const char *fmt, ...)
{
    size_t old = r->plen;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(r->path + old, sizeof r->path - old, fmt, ap);
    va_end(ap);
    if (k > 0) r->plen = old + (size_t)k < sizeof r->path ? old + (size_t)k : sizeof r->path - 1;
    return old;
}

static void path_pop(rd *r, size_t old)
{
    r->plen = old;
    r->path[old] = '\0';
}

/* PF_ERR_FORMAT with "name: path.field: message". */
static pf_status bad(rd *r, const char *field, const char *fmt, ...) PF_PRINTF(3, 4);
static pf_status bad(rd *r, const char *field, const char *fmt, ...)
{
    char msg[512], where[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (r->plen && field)
        snprintf(where, sizeof where, "%s.%s", r->path, field);
    else if (r->plen)
        snprintf(where, sizeof where, "%s", r->path);
    else
        snprintf(where, sizeof where, "%s", field ? field : "model");
    return pf_set_error(PF_ERR_FORMAT, "%s: %s: %s", r->name, where, msg);
}

#define TRY(expr) \
    do { \
        pf_status st_ = (expr); \
        if (st_ != PF_OK) return st_; \
    } while (0)

static uint16_t ld_u16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}
static uint32_t ld_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}
static int32_t ld_i32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}
static uint64_t ld_u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static bool in_file(const rd *r, uint64_t pos, uint64_t len)
{
    return pos <= r->n && len <= r->n - pos;
}

static void touch(rd *r, uint64_t end)
{
    if (end > r->extent) r->extent = (size_t)end;
}

/* --- FlatBuffer primitives ------------------------------------------------------- */

typedef struct fbt {
    uint64_t pos;      /* the table */
    uint64_t vt;       /* its vtable */
    uint16_t vt_size;  /* bytes of the vtable */
    uint16_t size;     /* bytes of the table's inline part */
} fbt;

typedef struct fbv {
    const uint8_t *p;  /* first element */
    uint64_t pos;      /* its offset in the file */
    uint32_t n;        /* elements */
} fbv;

/* The table at `pos`; `field` names it in messages (NULL: the path does). */
static pf_status fb_table_at(rd *r, uint64_t pos, const char *field, fbt *t)
{
    if (pos % 4 || !in_file(r, pos, 4))
        return bad(r, field,
                   "table at byte %" PRIu64 " is misaligned or outside the file (%zu bytes)",
                   pos, r->n);
    int32_t so = ld_i32(r->d + pos);
    int64_t vt = (int64_t)pos - (int64_t)so;
    if (vt < 0 || vt % 2 || !in_file(r, (uint64_t)vt, 4))
        return bad(r, field,
                   "vtable of the table at byte %" PRIu64 " (soffset %" PRId32 ") is at %" PRId64
                   ", misaligned or outside the file (%zu bytes)",
                   pos, so, vt, r->n);
    uint16_t vs = ld_u16(r->d + vt), ts = ld_u16(r->d + vt + 2);
    if (vs < 4 || vs % 2 || !in_file(r, (uint64_t)vt, vs))
        return bad(r, field, "vtable at byte %" PRId64 " has a bad size of %u bytes (file has %zu)",
                   vt, (unsigned)vs, r->n);
    if (ts < 4 || !in_file(r, pos, ts))
        return bad(r, field, "table at byte %" PRIu64 " has a bad size of %u bytes (file has %zu)",
                   pos, (unsigned)ts, r->n);
    touch(r, (uint64_t)vt + vs);
    touch(r, pos + ts);
    t->pos = pos;
    t->vt = (uint64_t)vt;
    t->vt_size = vs;
    t->size = ts;
    return PF_OK;
}

/* Pointer to field `id` of `sz` bytes, NULL when the field is absent. */
static pf_status fb_scalar(rd *r, const fbt *t, int id, size_t sz, const char *field,
                           const uint8_t **p)
{
    *p = NULL;
    size_t slot = 4 + 2 * (size_t)id;
    if (slot + 2 > t->vt_size) return PF_OK;
    uint16_t off = ld_u16(r->d + t->vt + slot);
    if (!off) return PF_OK;
    /* Below 4 the field would overlap the table's vtable offset. */
    if (off < 4 || off + sz > t->size)
        return bad(r, field, "field at offset %u (%zu bytes) lies outside its table of %u bytes",
                   (unsigned)off, sz, (unsigned)t->size);
    *p = r->d + t->pos + off;
    return PF_OK;
}

static pf_status fb_u8(rd *r, const fbt *t, int id, const char *field, uint8_t def, uint8_t *out)
{
    const uint8_t *p;
    TRY(fb_scalar(r, t, id, 1, field, &p));
    *out = p ? *p : def;
    return PF_OK;
}

static pf_status fb_i8(rd *r, const fbt *t, int id, const char *field, int8_t def, int8_t *out)
{
    const uint8_t *p;
    TRY(fb_scalar(r, t, id, 1, field, &p));
    *out = p ? (int8_t)*p : def;
    return PF_OK;
}

static pf_status fb_bool(rd *r, const fbt *t, int id, const char *field, bool def, bool *out)
{
    uint8_t v;
    TRY(fb_u8(r, t, id, field, def ? 1 : 0, &v));
    *out = v != 0;
    return PF_OK;
}

static pf_status fb_i32(rd *r, const fbt *t, int id, const char *field, int32_t def, int32_t *out)
{
    const uint8_t *p;
    TRY(fb_scalar(r, t, id, 4, field, &p));
    *out = p ? ld_i32(p) : def;
    return PF_OK;
}

static pf_status fb_u32(rd *r, const fbt *t, int id, const char *field, uint32_t def,
                        uint32_t *out)
{
    const uint8_t *p;
    TRY(fb_scalar(r, t, id, 4, field, &p));
    *out = p ? ld_u32(p) : def;
    return PF_OK;
}

static pf_status fb_u64(rd *r, const fbt *t, int id, const char *field, uint64_t def,
                        uint64_t *out)
{
    const uint8_t *p;
    TRY(fb_scalar(r, t, id, 8, field, &p));
    *out = p ? ld_u64(p) : def;
    return PF_OK;
}

static pf_status fb_f32(rd *r, const fbt *t, int id, const char *field, float def, float *out)
{
    const uint8_t *p;
    TRY(fb_scalar(r, t, id, 4, field, &p));
    if (p)
        memcpy(out, p, sizeof *out);
    else
        *out = def;
    return PF_OK;
}

/* Follows the unsigned offset stored at `at`; `target` is where it points. */
static pf_status fb_follow(rd *r, const uint8_t *at, const char *field, uint64_t *target)
{
    uint64_t pos = (uint64_t)(at - r->d);
    uint32_t v = ld_u32(at);
    *target = 0;
    if (v == 0) return bad(r, field, "offset at byte %" PRIu64 " is 0", pos);
    *target = pos + v;
    if (*target >= r->n)
        return bad(r, field,
                   "offset %" PRIu32 " at byte %" PRIu64
                   " points past the end of the file (%zu bytes)",
                   v, pos, r->n);
    return PF_OK;
}

/* Offset field `id`: *target = 0 when absent. */
static pf_status fb_ref(rd *r, const fbt *t, int id, const char *field, uint64_t *target)
{
    const uint8_t *p;
    *target = 0;
    TRY(fb_scalar(r, t, id, 4, field, &p));
    if (!p) return PF_OK;
    return fb_follow(r, p, field, target);
}

/* The vector at `pos` of elements of `elem` bytes aligned to `align`. */
static pf_status fb_vector_at(rd *r, uint64_t pos, size_t elem, size_t align, const char *field,
                              fbv *v)
{
    if (pos % 4 || !in_file(r, pos, 4))
        return bad(r, field,
                   "vector at byte %" PRIu64 " is misaligned or outside the file (%zu bytes)",
                   pos, r->n);
    uint32_t len = ld_u32(r->d + pos);
    uint64_t start = pos + 4;
    if (start % align)
        return bad(r, field, "elements at byte %" PRIu64 " are not aligned to %zu bytes", start,
                   align);
    if ((uint64_t)len > (r->n - start) / elem)
        return bad(r, field,
                   "vector of %" PRIu32 " elements of %zu bytes at byte %" PRIu64
                   " runs past the end of the file (%zu bytes)",
                   len, elem, pos, r->n);
    if (len > INT32_MAX)
        return bad(r, field, "vector of %" PRIu32 " elements is too long", len);
    touch(r, start + (uint64_t)len * elem);
    v->p = r->d + start;
    v->pos = start;
    v->n = len;
    return PF_OK;
}

/* Vector field `id` (absent: p NULL, n 0). */
static pf_status fb_vector(rd *r, const fbt *t, int id, size_t elem, size_t align,
                           const char *field, fbv *v)
{
    uint64_t target = 0;
    v->p = NULL;
    v->pos = 0;
    v->n = 0;
    TRY(fb_ref(r, t, id, field, &target));
    if (!target) return PF_OK;
    return fb_vector_at(r, target, elem, align, field, v);
}

/* [int] field as a zero-copy array. */
static pf_status fb_ints(rd *r, const fbt *t, int id, const char *field, const int32_t **p,
                         int32_t *n)
{
    fbv v;
    TRY(fb_vector(r, t, id, 4, 4, field, &v));
    *p = v.n ? (const int32_t *)(const void *)v.p : NULL;
    *n = (int32_t)v.n;
    return PF_OK;
}

/* String field: NULL when absent; the NUL terminator must be in the file. */
static pf_status fb_string(rd *r, const fbt *t, int id, const char *field, const char **s)
{
    fbv v;
    *s = NULL;
    TRY(fb_vector(r, t, id, 1, 1, field, &v));
    if (!v.p) return PF_OK;
    if (!in_file(r, v.pos + v.n, 1) || r->d[v.pos + v.n] != '\0')
        return bad(r, field,
                   "string of %" PRIu32 " bytes at byte %" PRIu64 " has no NUL terminator",
                   v.n, v.pos - 4);
    touch(r, v.pos + v.n + 1);
    *s = (const char *)v.p;
    return PF_OK;
}

/* Table field `id`: present = false when absent. */
static pf_status fb_subtable(rd *r, const fbt *t, int id, const char *field, fbt *sub,
                             bool *present)
{
    uint64_t target = 0;
    *present = false;
    TRY(fb_ref(r, t, id, field, &target));
    if (!target) return PF_OK;
    TRY(fb_table_at(r, target, field, sub));
    *present = true;
    return PF_OK;
}

/* Element i of a vector of tables (the path names the element). */
static pf_status fb_vector_table(rd *r, const fbv *v, uint32_t i, fbt *t)
{
    uint64_t target = 0;
    TRY(fb_follow(r, v->p + 4 * (size_t)i, NULL, &target));
    return fb_table_at(r, target, NULL, t);
}

/* Charges `count` records to the decode budget. */
static pf_status spend(rd *r, const char *field, uint32_t count)
{
    if (count > r->records_left)
        return bad(r, field,
                   "%" PRIu32 " more records than a file of %zu bytes can hold (tables shared by "
                   "many parents?)",
                   count, r->n);
    r->records_left -= count;
    return PF_OK;
}

static void *alloc_array(size_t count, size_t size)
{
    return calloc(count ? count : 1, size);
}

static pf_status nomem(rd *r, const char *what, size_t count)
{
    return pf_set_error(PF_ERR_NOMEM, "%s: out of memory for %zu %s", r->name, count, what);
}

/* --- builtin options ------------------------------------------------------------ */

/* BuiltinOptions union type ids (schema.fbs order, NONE = 0). */
enum {
    OPT_CONV2D = 1,
    OPT_DEPTHWISE_CONV2D = 2,
    OPT_POOL2D = 5,
    OPT_FULLY_CONNECTED = 8,
    OPT_SOFTMAX = 9,
    OPT_CONCATENATION = 10,
    OPT_ADD = 11,
    OPT_RESIZE_BILINEAR = 15,
    OPT_RESHAPE = 17,
    OPT_MUL = 21,
    OPT_PAD = 22,
    OPT_REDUCER = 27,
    OPT_SUB = 28,
    OPT_DIV = 29,
    OPT_DEQUANTIZE = 38,
    OPT_TRANSPOSE_CONV = 49,
    OPT_RESIZE_NEAREST = 74,
    OPT_LEAKY_RELU = 75,
    OPT_HARD_SWISH = 91
};

/* What an operator's options must be: union type, kind, and whether the
 * options are required (ops whose schema defaults, e.g. stride 0, are not
 * usable). Returns 0 for operators whose options are not checked. */
static int expected_options(int32_t builtin, pf_tfl_opts_kind *kind, bool *required)
{
    *required = false;
    switch (builtin) {
    case PF_TFL_OP_CONV_2D: *kind = PF_TFL_OPTS_CONV2D; *required = true; return OPT_CONV2D;
    case PF_TFL_OP_DEPTHWISE_CONV_2D:
        *kind = PF_TFL_OPTS_DEPTHWISE_CONV2D;
        *required = true;
        return OPT_DEPTHWISE_CONV2D;
    case PF_TFL_OP_AVERAGE_POOL_2D:
    case PF_TFL_OP_MAX_POOL_2D:
    case PF_TFL_OP_L2_POOL_2D: *kind = PF_TFL_OPTS_POOL2D; *required = true; return OPT_POOL2D;
    case PF_TFL_OP_TRANSPOSE_CONV:
        *kind = PF_TFL_OPTS_TRANSPOSE_CONV;
        *required = true;
        return OPT_TRANSPOSE_CONV;
    case PF_TFL_OP_FULLY_CONNECTED: *kind = PF_TFL_OPTS_FULLY_CONNECTED; return OPT_FULLY_CONNECTED;
    case PF_TFL_OP_SOFTMAX: *kind = PF_TFL_OPTS_SOFTMAX; return OPT_SOFTMAX;
    case PF_TFL_OP_CONCATENATION: *kind = PF_TFL_OPTS_CONCATENATION; return OPT_CONCATENATION;
    case PF_TFL_OP_ADD: *kind = PF_TFL_OPTS_ELEMENTWISE; return OPT_ADD;
    case PF_TFL_OP_SUB: *kind = PF_TFL_OPTS_ELEMENTWISE; return OPT_SUB;
    case PF_TFL_OP_MUL: *kind = PF_TFL_OPTS_ELEMENTWISE; return OPT_MUL;
    case PF_TFL_OP_DIV: *kind = PF_TFL_OPTS_ELEMENTWISE; return OPT_DIV;
    case PF_TFL_OP_RESHAPE: *kind = PF_TFL_OPTS_RESHAPE; return OPT_RESHAPE;
    case PF_TFL_OP_RESIZE_BILINEAR: *kind = PF_TFL_OPTS_RESIZE; return OPT_RESIZE_BILINEAR;
    case PF_TFL_OP_RESIZE_NEAREST_NEIGHBOR: *kind = PF_TFL_OPTS_RESIZE; return OPT_RESIZE_NEAREST;
    case PF_TFL_OP_PAD: *kind = PF_TFL_OPTS_PAD; return OPT_PAD;
    case PF_TFL_OP_MEAN:
    case PF_TFL_OP_SUM:
    case PF_TFL_OP_REDUCE_PROD:
    case PF_TFL_OP_REDUCE_MAX:
    case PF_TFL_OP_REDUCE_MIN:
    case PF_TFL_OP_REDUCE_ANY: *kind = PF_TFL_OPTS_REDUCER; return OPT_REDUCER;
    case PF_TFL_OP_LEAKY_RELU: *kind = PF_TFL_OPTS_LEAKY_RELU; return OPT_LEAKY_RELU;
    /* Empty option tables: only their type is checked. */
    case PF_TFL_OP_DEQUANTIZE: *kind = PF_TFL_OPTS_NONE; return OPT_DEQUANTIZE;
    case PF_TFL_OP_HARD_SWISH: *kind = PF_TFL_OPTS_NONE; return OPT_HARD_SWISH;
    default: *kind = PF_TFL_OPTS_NONE; return 0;
    }
}

static pf_status get_padding(rd *r, const fbt *t, int id, pf_tfl_padding *out)
{
    int8_t v;
    TRY(fb_i8(r, t, id, "padding", 0, &v));
    if (v != PF_TFL_PADDING_SAME && v != PF_TFL_PADDING_VALID)
        return bad(r, "padding", "unknown Padding %d (SAME 0, VALID 1)", v);
    *out = (pf_tfl_padding)v;
    return PF_OK;
}

static pf_status get_activation(rd *r, const fbt *t, int id, pf_tfl_activation *out)
{
    int8_t v;
    TRY(fb_i8(r, t, id, "fused_activation_function", 0, &v));
    if (v < PF_TFL_ACT_NONE || v > PF_TFL_ACT_SIGN_BIT)
        return bad(r, "fused_activation_function", "unknown ActivationFunctionType %d", v);
    *out = (pf_tfl_activation)v;
    return PF_OK;
}

/* An int32 field that must be >= min (strides, dilations, filter sizes). */
static pf_status get_int_min(rd *r, const fbt *t, int id, const char *field, int32_t def,
                             int32_t min, int32_t *out)
{
    TRY(fb_i32(r, t, id, field, def, out));
    if (*out < min) return bad(r, field, "%" PRId32 " is below %" PRId32, *out, min);
    return PF_OK;
}

static pf_status get_finite(rd *r, const fbt *t, int id, const char *field, float *out)
{
    TRY(fb_f32(r, t, id, field, 0.0f, out));
    if (!isfinite(*out)) return bad(r, field, "%g is not finite", (double)*out);
    return PF_OK;
}

/* Fills op->opts from the options table `t` (NULL: absent, schema defaults). */
static pf_status parse_builtin_options(rd *r, pf_tfl_operator *op, const fbt *t,
                                       pf_tfl_opts_kind kind)
{
    /* An absent table reads as one whose vtable lists no field: fb_scalar
     * never looks past its 4-byte header, so `none` touches no file byte. */
    fbt none = {.pos = 0, .vt = 0, .vt_size = 4, .size = 4};
    if (!t) t = &none;
    op->opts.kind = kind;
    switch (kind) {
    case PF_TFL_OPTS_CONV2D: {
        pf_tfl_conv2d_opts *o = &op->opts.u.conv2d;
        TRY(get_padding(r, t, 0, &o->padding));
        TRY(get_int_min(r, t, 1, "stride_w", 0, 1, &o->stride_w));
        TRY(get_int_min(r, t, 2, "stride_h", 0, 1, &o->stride_h));
        TRY(get_activation(r, t, 3, &o->activation));
        TRY(get_int_min(r, t, 4, "dilation_w_factor", 1, 1, &o->dilation_w));
        TRY(get_int_min(r, t, 5, "dilation_h_factor", 1, 1, &o->dilation_h));
        break;
    }
    case PF_TFL_OPTS_DEPTHWISE_CONV2D: {
        pf_tfl_depthwise_opts *o = &op->opts.u.depthwise;
        TRY(get_padding(r, t, 0, &o->padding));
        TRY(get_int_min(r, t, 1, "stride_w", 0, 1, &o->stride_w));
        TRY(get_int_min(r, t, 2, "stride_h", 0, 1, &o->stride_h));
        TRY(get_int_min(r, t, 3, "depth_multiplier", 0, 0, &o->depth_multiplier));
        TRY(get_activation(r, t, 4, &o->activation));
        TRY(get_int_min(r, t, 5, "dilation_w_factor", 1, 1, &o->dilation_w));
        TRY(get_int_min(r, t, 6, "dilation_h_factor", 1, 1, &o->dilation_h));
        break;
    }
    case PF_TFL_OPTS_POOL2D: {
        pf_tfl_pool2d_opts *o = &op->opts.u.pool2d;
        TRY(get_padding(r, t, 0, &o->padding));
        TRY(get_int_min(r, t, 1, "stride_w", 0, 1, &o->stride_w));
        TRY(get_int_min(r, t, 2, "stride_h", 0, 1, &o->stride_h));
        TRY(get_int_min(r, t, 3, "filter_width", 0, 1, &o->filter_w));
        TRY(get_int_min(r, t, 4, "filter_height", 0, 1, &o->filter_h));
        TRY(get_activation(r, t, 5, &o->activation));
        break;
    }
    case PF_TFL_OPTS_FULLY_CONNECTED: {
        pf_tfl_fully_connected_opts *o = &op->opts.u.fully_connected;
        int8_t wf;
        TRY(get_activation(r, t, 0, &o->activation));
        TRY(fb_i8(r, t, 1, "weights_format", 0, &wf));
        if (wf != 0 && wf != 1)
            return bad(r, "weights_format", "unknown FullyConnectedOptionsWeightsFormat %d", wf);
        o->weights_format = wf;
        TRY(fb_bool(r, t, 2, "keep_num_dims", false, &o->keep_num_dims));
        break;
    }
    case PF_TFL_OPTS_SOFTMAX: TRY(get_finite(r, t, 0, "beta", &op->opts.u.softmax.beta)); break;
    case PF_TFL_OPTS_CONCATENATION:
        TRY(fb_i32(r, t, 0, "axis", 0, &op->opts.u.concat.axis));
        TRY(get_activation(r, t, 1, &op->opts.u.concat.activation));
        break;
    case PF_TFL_OPTS_ELEMENTWISE:
        TRY(get_activation(r, t, 0, &op->opts.u.elementwise.activation));
        break;
    case PF_TFL_OPTS_RESHAPE:
        if (t != &none)
            TRY(fb_ints(r, t, 0, "new_shape", &op->opts.u.reshape.new_shape,
                        &op->opts.u.reshape.n_new_shape));
        for (int32_t i = 0; i < op->opts.u.reshape.n_new_shape; i++)
            if (op->opts.u.reshape.new_shape[i] < -1)
                return bad(r, "new_shape", "entry %" PRId32 " is %" PRId32 " (below -1)", i,
                           op->opts.u.reshape.new_shape[i]);
        break;
    case PF_TFL_OPTS_RESIZE: {
        /* ResizeBilinearOptions keeps two deprecated fields (ids 0, 1) first. */
        int base = op->builtin == PF_TFL_OP_RESIZE_BILINEAR ? 2 : 0;
        TRY(fb_bool(r, t, base, "align_corners", false, &op->opts.u.resize.align_corners));
        TRY(fb_bool(r, t, base + 1, "half_pixel_centers", false,
                    &op->opts.u.resize.half_pixel_centers));
        if (op->opts.u.resize.align_corners && op->opts.u.resize.half_pixel_centers)
            return bad(r, "half_pixel_centers", "set together with align_corners");
        break;
    }
    case PF_TFL_OPTS_TRANSPOSE_CONV: {
        pf_tfl_transpose_conv_opts *o = &op->opts.u.transpose_conv;
        TRY(get_padding(r, t, 0, &o->padding));
        TRY(get_int_min(r, t, 1, "stride_w", 0, 1, &o->stride_w));
        TRY(get_int_min(r, t, 2, "stride_h", 0, 1, &o->stride_h));
        TRY(get_activation(r, t, 3, &o->activation));
        break;
    }
    case PF_TFL_OPTS_REDUCER:
        TRY(fb_bool(r, t, 0, "keep_dims", false, &op->opts.u.reducer.keep_dims));
        break;
    case PF_TFL_OPTS_LEAKY_RELU:
        TRY(get_finite(r, t, 0, "alpha", &op->opts.u.leaky_relu.alpha));
        break;
    case PF_TFL_OPTS_PAD:
    case PF_TFL_OPTS_NONE:
    case PF_TFL_OPTS_CONV2D_TRANSPOSE_BIAS: break;
    }
    return PF_OK;
}

/* MediaPipe's Convolution2DTransposeBias: TfLiteTransposeConvParams. */
static pf_status parse_transpose_bias(rd *r, pf_tfl_operator *op)
{
    pf_tfl_conv2d_transpose_bias_opts *o = &op->opts.u.conv2d_transpose_bias;
    if (op->custom_options_size != 12)
        return bad(r, "custom_options",
                   "%zu bytes for " PF_TFL_CUSTOM_CONV2D_TRANSPOSE_BIAS
                   ", expected 12 (padding, stride_w, stride_h as int32)",
                   op->custom_options_size);
    int32_t pad = ld_i32(op->custom_options);
    o->stride_w = ld_i32(op->custom_options + 4);
    o->stride_h = ld_i32(op->custom_options + 8);
    /* TfLitePadding: 0 unknown, 1 SAME, 2 VALID. */
    if (pad != 1 && pad != 2)
        return bad(r, "custom_options", "padding %" PRId32 " (TfLitePadding SAME 1, VALID 2)", pad);
    if (o->stride_w < 1 || o->stride_h < 1)
        return bad(r, "custom_options", "strides %" PRId32 " x %" PRId32 " (must be >= 1)",
                   o->stride_w, o->stride_h);
    o->padding = pad == 1 ? PF_TFL_PADDING_SAME : PF_TFL_PADDING_VALID;
    op->opts.kind = PF_TFL_OPTS_CONV2D_TRANSPOSE_BIAS;
    return PF_OK;
}

/* --- model tables ----------------------------------------------------------------- */

/* OperatorCode: deprecated_builtin_code 0 (byte), custom_code 1, version 2
 * (int = 1), builtin_code 3 (int). */
static pf_status read_opcode(rd *r, const fbt *t, pf_tfl_opcode *oc)
{
    int8_t dep;
    int32_t code;
    const char *custom;
    TRY(fb_i8(r, t, 0, "deprecated_builtin_code", 0, &dep));
    TRY(fb_string(r, t, 1, "custom_code", &custom));
    TRY(fb_i32(r, t, 2, "version", 1, &oc->version));
    TRY(fb_i32(r, t, 3, "builtin_code", 0, &code));
    /* Writers put codes < 127 in both fields and larger ones in builtin_code
     * with 127 in the old byte; older files have only the byte. TFLite
     * takes the larger of the two, and so do we. */
    oc->builtin = code > dep ? code : dep;
    if (oc->builtin < 0)
        return bad(r, "builtin_code", "negative operator code %" PRId32, oc->builtin);
    if (oc->builtin == PF_TFL_OP_CUSTOM) {
        if (!custom || !custom[0]) return bad(r, "custom_code", "CUSTOM operator without a name");
        oc->custom_code = custom;
    }
    return PF_OK;
}

/* Buffer: data 0 ([ubyte]), offset 1 (ulong), size 2 (ulong). Models over
 * 2 GB keep data outside the FlatBuffer, at offset/size from the file start
 * (offset > 1 marks it). */
static pf_status read_buffer(rd *r, const fbt *t, pf_tfl_buffer *b)
{
    fbv v;
    uint64_t off, size;
    TRY(fb_vector(r, t, 0, 1, 1, "data", &v));
    TRY(fb_u64(r, t, 1, "offset", 0, &off));
    TRY(fb_u64(r, t, 2, "size", 0, &size));
    if (off > 1) {
        if (!in_file(r, off, size))
            return bad(r, "offset",
                       "data at byte %" PRIu64 " of %" PRIu64
                       " bytes lies outside the file (%zu bytes)",
                       off, size, r->n);
        touch(r, off + size);
        if (size) {
            b->data = r->d + off;
            b->size = (size_t)size;
            b->file_offset = (size_t)off;
        }
    } else if (v.n) {
        b->data = v.p;
        b->size = v.n;
        b->file_offset = (size_t)v.pos;
    }
    return PF_OK;
}

int64_t pf_tfl_tensor_numel(const pf_tfl_tensor *t)
{
    int64_t n = 1;
    for (int32_t i = 0; i < t->ndim; i++) {
        int64_t d = t->shape[i];
        if (d < 0) return -1;
        if (d && n > INT64_MAX / d) return -1;
        n *= d;
    }
    return n;
}

static void fmt_shape(char *buf, size_t size, const int32_t *shape, int32_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    k += (size_t)snprintf(buf + k, size - k, "[");
    for (int32_t i = 0; i < n && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%" PRId32, i ? "," : "", shape[i]);
    if (k < size) snprintf(buf + k, size - k, "]");
}

/* QuantizationParameters: min 0, max 1, scale 2 ([float]), zero_point 3
 * ([long]), details_type 4, details 5, quantized_dimension 6. */
static pf_status read_quantization(rd *r, const fbt *q, pf_tfl_tensor *t)
{
    fbv scale, zp;
    uint8_t details;
    size_t old = path_push(r, ".quantization");
    TRY(fb_vector(r, q, 2, 4, 4, "scale", &scale));
    TRY(fb_vector(r, q, 3, 8, 8, "zero_point", &zp));
    TRY(fb_u8(r, q, 4, "details_type", 0, &details));
    TRY(fb_i32(r, q, 6, "quantized_dimension", 0, &t->quantized_dimension));
    if (zp.n && zp.n != scale.n)
        return bad(r, "zero_point", "%" PRIu32 " entries for %" PRIu32 " scales", zp.n, scale.n);
    if (scale.n > 1 && (t->quantized_dimension < 0 || t->quantized_dimension >= t->ndim))
        return bad(r, "quantized_dimension", "%" PRId32 " is not a dimension of a rank-%" PRId32
                   " tensor", t->quantized_dimension, t->ndim);
    if (scale.n > 1 && t->quantized_dimension < t->ndim &&
        (int64_t)scale.n != t->shape[t->quantized_dimension])
        return bad(r, "scale", "%" PRIu32 " scales for dimension %" PRId32 " of size %" PRId32,
                   scale.n, t->quantized_dimension, t->shape[t->quantized_dimension]);
    t->quant_scale = scale.n ? (const float *)(const void *)scale.p : NULL;
    t->quant_zero_point = zp.n ? (const int64_t *)(const void *)zp.p : NULL;
    t->n_quant = (int32_t)scale.n;
    t->n_quant_zero_point = (int32_t)zp.n;
    t->has_quantization = scale.n || zp.n || details;
    path_pop(r, old);
    return PF_OK;
}

/* Tensor: shape 0, type 1 (byte), buffer 2 (uint), name 3, quantization 4,
 * is_variable 5, sparsity 6, shape_signature 7. */
static pf_status read_tensor(rd *r, const pf_tflite *m, const fbt *tt, pf_tfl_tensor *t)
{
    int8_t type;
    fbt q, sp;
    bool has_q, has_sp;
    int32_t nsig;
    TRY(fb_ints(r, tt, 0, "shape", &t->shape, &t->ndim));
    TRY(fb_i8(r, tt, 1, "type", 0, &type));
    TRY(fb_u32(r, tt, 2, "buffer", 0, &t->buffer));
    TRY(fb_string(r, tt, 3, "name", &t->name));
    TRY(fb_subtable(r, tt, 4, "quantization", &q, &has_q));
    TRY(fb_bool(r, tt, 5, "is_variable", false, &t->is_variable));
    TRY(fb_subtable(r, tt, 6, "sparsity", &sp, &has_sp));
    TRY(fb_ints(r, tt, 7, "shape_signature", &t->shape_signature, &nsig));
    if (!t->name) t->name = "";
    if (type < 0 || type >= PF_TFL_TYPE_COUNT)
        return bad(r, "type", "unknown TensorType %d in tensor '%s'", type, t->name);
    t->type = (pf_tfl_type)type;
    for (int32_t i = 0; i < t->ndim; i++)
        if (t->shape[i] < 0)
            return bad(r, "shape", "dimension %" PRId32 " is %" PRId32 " in tensor '%s'", i,
                       t->shape[i], t->name);
    if (t->shape_signature) {
        if (nsig != t->ndim)
            return bad(r, "shape_signature", "%" PRId32 " entries for a rank-%" PRId32
                       " shape in tensor '%s'", nsig, t->ndim, t->name);
        for (int32_t i = 0; i < nsig; i++)
            if (t->shape_signature[i] < -1)
                return bad(r, "shape_signature", "dimension %" PRId32 " is %" PRId32
                           " in tensor '%s'", i, t->shape_signature[i], t->name);
    }
    if (t->buffer >= (uint32_t)m->n_buffers)
        return bad(r, "buffer", "index %" PRIu32 " out of range (model has %" PRId32
                   " buffers) in tensor '%s'", t->buffer, m->n_buffers, t->name);
    if (has_q) TRY(read_quantization(r, &q, t));
    t->is_sparse = has_sp;
    const pf_tfl_buffer *b = &m->buffers[t->buffer];
    t->data = b->data;
    t->data_size = b->size;
    size_t esize = pf_tfl_type_size(t->type);
    if (t->data && esize && !t->is_sparse) {
        int64_t numel = pf_tfl_tensor_numel(t);
        char shape[160];
        fmt_shape(shape, sizeof shape, t->shape, t->ndim);
        if (numel < 0 || (uint64_t)numel > SIZE_MAX / esize)
            return bad(r, "shape", "%s overflows in tensor '%s'", shape, t->name);
        if ((uint64_t)numel * esize != t->data_size)
            return bad(r, "buffer",
                       "tensor '%s' %s %s needs %" PRIu64 " bytes but buffers[%" PRIu32
                       "] holds %zu",
                       t->name, pf_tfl_type_name(t->type), shape, (uint64_t)numel * esize,
                       t->buffer, t->data_size);
    }
    return PF_OK;
}

/* Checks a list of tensor indices; `optional` allows -1. */
static pf_status check_indices(rd *r, const char *field, const int32_t *idx, int32_t n,
                               int32_t n_tensors, bool optional)
{
    for (int32_t i = 0; i < n; i++) {
        if (optional && idx[i] == -1) continue;
        if (idx[i] < 0 || idx[i] >= n_tensors) {
            char f[64];
            snprintf(f, sizeof f, "%s[%" PRId32 "]", field, i);
            return bad(r, f, "tensor index %" PRId32 " out of range (subgraph has %" PRId32
                       " tensors)", idx[i], n_tensors);
        }
    }
    return PF_OK;
}

/* Operator: opcode_index 0, inputs 1, outputs 2, builtin_options_type 3,
 * builtin_options 4, custom_options 5, custom_options_format 6,
 * mutating_variable_inputs 7, intermediates 8, large_custom_options_offset
 * 9, large_custom_options_size 10. */
static pf_status read_operator(rd *r, const pf_tflite *m, const pf_tfl_subgraph *g,
                               const fbt *ot, pf_tfl_operator *op)
{
    fbv custom;
    fbt opt;
    bool has_opt;
    uint64_t large_off, large_size;
    TRY(fb_u32(r, ot, 0, "opcode_index", 0, &op->opcode_index));
    if (op->opcode_index >= (uint32_t)m->n_opcodes)
        return bad(r, "opcode_index", "%" PRIu32 " out of range (model has %" PRId32 " opcodes)",
                   op->opcode_index, m->n_opcodes);
    const pf_tfl_opcode *oc = &m->opcodes[op->opcode_index];
    op->builtin = oc->builtin;
    op->custom_code = oc->custom_code;
    op->version = oc->version;
    TRY(fb_ints(r, ot, 1, "inputs", &op->inputs, &op->n_inputs));
    TRY(fb_ints(r, ot, 2, "outputs", &op->outputs, &op->n_outputs));
    TRY(fb_ints(r, ot, 8, "intermediates", &op->intermediates, &op->n_intermediates));
    TRY(check_indices(r, "inputs", op->inputs, op->n_inputs, g->n_tensors, true));
    TRY(check_indices(r, "outputs", op->outputs, op->n_outputs, g->n_tensors, true));
    TRY(check_indices(r, "intermediates", op->intermediates, op->n_intermediates, g->n_tensors,
                      true));

    TRY(fb_vector(r, ot, 5, 1, 1, "custom_options", &custom));
    TRY(fb_u64(r, ot, 9, "large_custom_options_offset", 0, &large_off));
    TRY(fb_u64(r, ot, 10, "large_custom_options_size", 0, &large_size));
    if (large_off > 1) {
        if (!in_file(r, large_off, large_size))
            return bad(r, "large_custom_options_offset",
                       "%" PRIu64 " bytes at byte %" PRIu64 " lie outside the file (%zu bytes)",
                       large_size, large_off, r->n);
        touch(r, large_off + large_size);
        op->custom_options = large_size ? r->d + large_off : NULL;
        op->custom_options_size = (size_t)large_size;
    } else if (custom.n) {
        op->custom_options = custom.p;
        op->custom_options_size = custom.n;
    }

    TRY(fb_u8(r, ot, 3, "builtin_options_type", 0, &op->options_type));
    TRY(fb_subtable(r, ot, 4, "builtin_options", &opt, &has_opt));
    pf_tfl_opts_kind kind;
    bool required;
    int want = expected_options(op->builtin, &kind, &required);
    if (want && op->options_type && op->options_type != want)
        return bad(r, "builtin_options_type", "%u does not match operator %s (expects %d)",
                   (unsigned)op->options_type, pf_tfl_builtin_name(op->builtin), want);
    /* A type without a table reads as absent options, as in TFLite. */
    bool present = want && op->options_type == want && has_opt;
    if (required && !present)
        return bad(r, "builtin_options", "operator %s has no options (%s)",
                   pf_tfl_builtin_name(op->builtin),
                   op->options_type ? "table missing" : "type NONE");
    size_t old = path_push(r, ".builtin_options");
    TRY(parse_builtin_options(r, op, present ? &opt : NULL, kind));
    path_pop(r, old);
    if (op->custom_code && !strcmp(op->custom_code, PF_TFL_CUSTOM_CONV2D_TRANSPOSE_BIAS))
        TRY(parse_transpose_bias(r, op));
    return PF_OK;
}

/* SubGraph: tensors 0, inputs 1, outputs 2, operators 3, name 4. */
static pf_status read_subgraph(rd *r, const pf_tflite *m, const fbt *st, pf_tfl_subgraph *g)
{
    fbv tensors, ops;
    TRY(fb_vector(r, st, 0, 4, 4, "tensors", &tensors));
    TRY(fb_ints(r, st, 1, "inputs", &g->inputs, &g->n_inputs));
    TRY(fb_ints(r, st, 2, "outputs", &g->outputs, &g->n_outputs));
    TRY(fb_vector(r, st, 3, 4, 4, "operators", &ops));
    TRY(fb_string(r, st, 4, "name", &g->name));
    if (!g->name) g->name = "";

    TRY(spend(r, "tensors", tensors.n));
    g->tensors = alloc_array(tensors.n, sizeof *g->tensors);
    if (!g->tensors) return nomem(r, "tensors", tensors.n);
    g->n_tensors = (int32_t)tensors.n;
    for (uint32_t i = 0; i < tensors.n; i++) {
        fbt t;
        size_t old = path_push(r, ".tensors[%" PRIu32 "]", i);
        TRY(fb_vector_table(r, &tensors, i, &t));
        TRY(read_tensor(r, m, &t, &g->tensors[i]));
        path_pop(r, old);
    }
    TRY(check_indices(r, "inputs", g->inputs, g->n_inputs, g->n_tensors, false));
    TRY(check_indices(r, "outputs", g->outputs, g->n_outputs, g->n_tensors, false));

    TRY(spend(r, "operators", ops.n));
    g->operators = alloc_array(ops.n, sizeof *g->operators);
    if (!g->operators) return nomem(r, "operators", ops.n);
    g->n_operators = (int32_t)ops.n;
    for (uint32_t i = 0; i < ops.n; i++) {
        fbt t;
        size_t old = path_push(r, ".operators[%" PRIu32 "]", i);
        TRY(fb_vector_table(r, &ops, i, &t));
        TRY(read_operator(r, m, g, &t, &g->operators[i]));
        path_pop(r, old);
    }
    return PF_OK;
}

/* Model: version 0, operator_codes 1, subgraphs 2, description 3, buffers 4. */
static pf_status read_model(rd *r, pf_tflite *m)
{
    if (r->n == 0) return bad(r, NULL, "file is empty (0 bytes)");
    if (r->n < 8)
        return bad(r, NULL, "file of %zu bytes is too short for a FlatBuffer (root offset and "
                   "identifier need 8)", r->n);
    if (memcmp(r->d + 4, "TFL3", 4)) {
        char id[20];
        size_t k = 0;
        for (int i = 4; i < 8; i++) {
            uint8_t c = r->d[i];
            k += (size_t)snprintf(id + k, sizeof id - k, c >= 0x20 && c < 0x7f && c != '"' &&
                                  c != '\\' ? "%c" : "\\x%02x", c);
        }
        return bad(r, NULL, "file identifier is \"%s\", expected \"TFL3\" (not a TFLite model)",
                   id);
    }
    touch(r, 8);
    uint64_t root = 0;
    fbt mt;
    TRY(fb_follow(r, r->d, "root", &root));
    TRY(fb_table_at(r, root, NULL, &mt));
    TRY(fb_u32(r, &mt, 0, "version", 0, &m->version));
    if (m->version != 3)
        return bad(r, "version", "schema version %" PRIu32 ", this reader reads version 3",
                   m->version);
    TRY(fb_string(r, &mt, 3, "description", &m->description));
    if (!m->description) m->description = "";

    fbv codes, bufs, subs;
    TRY(fb_vector(r, &mt, 1, 4, 4, "operator_codes", &codes));
    TRY(fb_vector(r, &mt, 2, 4, 4, "subgraphs", &subs));
    TRY(fb_vector(r, &mt, 4, 4, 4, "buffers", &bufs));
    if (!subs.n) return bad(r, "subgraphs", "the model has no subgraph");

    TRY(spend(r, "operator_codes", codes.n));
    m->opcodes = alloc_array(codes.n, sizeof *m->opcodes);
    if (!m->opcodes) return nomem(r, "opcodes", codes.n);
    m->n_opcodes = (int32_t)codes.n;
    for (uint32_t i = 0; i < codes.n; i++) {
        fbt t;
        size_t old = path_push(r, "operator_codes[%" PRIu32 "]", i);
        TRY(fb_vector_table(r, &codes, i, &t));
        TRY(read_opcode(r, &t, &m->opcodes[i]));
        path_pop(r, old);
    }

    TRY(spend(r, "buffers", bufs.n));
    m->buffers = alloc_array(bufs.n, sizeof *m->buffers);
    if (!m->buffers) return nomem(r, "buffers", bufs.n);
    m->n_buffers = (int32_t)bufs.n;
    for (uint32_t i = 0; i < bufs.n; i++) {
        fbt t;
        size_t old = path_push(r, "buffers[%" PRIu32 "]", i);
        TRY(fb_vector_table(r, &bufs, i, &t));
        TRY(read_buffer(r, &t, &m->buffers[i]));
        path_pop(r, old);
    }

    TRY(spend(r, "subgraphs", subs.n));
    m->subgraphs = alloc_array(subs.n, sizeof *m->subgraphs);
    if (!m->subgraphs) return nomem(r, "subgraphs", subs.n);
    m->n_subgraphs = (int32_t)subs.n;
    for (uint32_t i = 0; i < subs.n; i++) {
        fbt t;
        size_t old = path_push(r, "subgraphs[%" PRIu32 "]", i);
        TRY(fb_vector_table(r, &subs, i, &t));
        TRY(read_subgraph(r, m, &t, &m->subgraphs[i]));
        path_pop(r, old);
    }
    m->extent = r->extent;
    return PF_OK;
}

/* --- open and close ----------------------------------------------------------------- */

/* Takes ownership of `bytes` (from pf_aligned_alloc), also on failure. */
static pf_status open_owned(uint8_t *bytes, size_t size, const char *name, pf_tflite **out)
{
    pf_tflite *m = calloc(1, sizeof *m);
    char *name_copy = malloc(strlen(name) + 1);
    if (!m || !name_copy) {
        free(m);
        free(name_copy);
        pf_aligned_free(bytes);
        return pf_set_error(PF_ERR_NOMEM, "pf_tflite_open: out of memory for model '%s'", name);
    }
    memcpy(name_copy, name, strlen(name) + 1);
    m->name = name_copy;
    m->data = bytes;
    m->size = size;
    rd r = {.d = bytes, .n = size, .name = m->name, .records_left = size / 4};
    pf_status st = read_model(&r, m);
    if (st != PF_OK) {
        pf_tflite_close(&m);
        return st;
    }
    *out = m;
    return PF_OK;
}

pf_status pf_tflite_open_memory(const void *data, size_t size, const char *name_for_messages,
                                pf_tflite **out)
{
    PF_CHECK_ARG(out, "pf_tflite_open_memory", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(data || !size, "pf_tflite_open_memory", "data is NULL with a non-zero size");
    const char *name = name_for_messages ? name_for_messages : "<memory>";
    /* A private aligned copy: the caller's bytes may go away, and aligned
     * vectors in the file must be aligned in memory. */
    uint8_t *copy = pf_aligned_alloc(64, size);
    if (!copy)
        return pf_set_error(PF_ERR_NOMEM, "pf_tflite_open_memory: out of memory for %zu bytes of "
                            "model '%s'", size, name);
    if (size) memcpy(copy, data, size);
    return open_owned(copy, size, name, out);
}

pf_status pf_tflite_open(const char *path, pf_tflite **out)
{
    PF_CHECK_ARG(out, "pf_tflite_open", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(path, "pf_tflite_open", "path is NULL");
    FILE *f = fopen(path, "rb");
    if (!f)
        return pf_set_error(PF_ERR_IO, "pf_tflite_open: cannot open '%s': %s", path,
                            strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        int e = errno;
        fclose(f);
        return pf_set_error(PF_ERR_IO, "pf_tflite_open: '%s' is not a regular file%s%s", path,
                            e ? ": " : "", e ? strerror(e) : "");
    }
    if ((uint64_t)sb.st_size > SIZE_MAX) {
        fclose(f);
        return pf_set_error(PF_ERR_IO, "pf_tflite_open: '%s' is too large", path);
    }
    size_t size = (size_t)sb.st_size;
    uint8_t *bytes = pf_aligned_alloc(64, size);
    if (!bytes) {
        fclose(f);
        return pf_set_error(PF_ERR_NOMEM, "pf_tflite_open: out of memory for the %zu bytes of '%s'",
                            size, path);
    }
    size_t got = size ? fread(bytes, 1, size, f) : 0;
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (got != size) {
        pf_aligned_free(bytes);
        return pf_set_error(PF_ERR_IO, "pf_tflite_open: read %zu of %zu bytes of '%s'%s%s", got,
                            size, path, err ? ": " : "", err ? strerror(err) : "");
    }
    return open_owned(bytes, size, path, out);
}

void pf_tflite_close(pf_tflite **mp)
{
    if (!mp || !*mp) return;
    pf_tflite *m = *mp;
    for (int32_t i = 0; m->subgraphs && i < m->n_subgraphs; i++) {
        free(m->subgraphs[i].tensors);
        free(m->subgraphs[i].operators);
    }
    free(m->subgraphs);
    free(m->buffers);
    free(m->opcodes);
    pf_aligned_free((void *)(uintptr_t)m->data);
    free(m->name);
    free(m);
    *mp = NULL;
}
