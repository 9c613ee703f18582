/* ONNX reader: decoding with protobuf-c, the checks, and the plain C view.
 *
 * Design
 * - The bytes are untrusted and go through two passes. First a scan of the
 *   protobuf wire format, driven by the descriptors protoc-c generated from
 *   onnx.proto, refuses length prefixes that run past their enclosing message
 *   (a truncated file gets a message saying so, with the offset and field)
 *   and messages nested deeper than PB_MAX_DEPTH: protobuf-c recurses into
 *   submessages without a limit, and a 400 KB file of nested TypeProtos
 *   overflows the stack. Then protobuf-c unpacks through an allocator capped
 *   at 8x the input plus 64 MiB, so a small file cannot make it allocate
 *   gigabytes (a 2-byte empty NodeProto becomes a ~100-byte struct).
 * - The view points into the unpacked message wherever the layout allows it:
 *   names, dims, raw_data and typed arrays whose element width matches (float,
 *   double, int32, int64), so weights are never copied. Types that ONNX keeps
 *   widened in int32_data (INT8, UINT8, BOOL, FLOAT16, ...) are narrowed into
 *   the model's arena, with a range check.
 * - Checks (first failure wins, messages name the file, the node by index,
 *   name and op_type, and the value): IR version 3..PF_ONNX_IR_VERSION_MAX;
 *   opset imports unique, the default domain's within 7..17 (opset 7 made
 *   broadcasting implicit; older Add/Mul/Gemm carry broadcast attributes the
 *   executors would have to honour); a graph with at
 *   least one output; initializer and attribute tensors of a supported type,
 *   inside the file, byte length == product(dims) * element size; graph
 *   inputs and outputs typed as tensors of a supported type, dims >= 0 or
 *   symbolic; names unique (initializers, graph inputs, node outputs, graph
 *   outputs); every node input a graph input, an initializer, the output of
 *   an EARLIER node (ONNX requires topological order) or "" (omitted); every
 *   node's domain imported; attributes named, unique, of an accepted type.
 *   Operator semantics (which inputs an op needs) are the graph builder's job.
 * - Name lookups go through one hash table built at open, so checking and
 *   later lookups stay linear in the model size.
 *
 * Without protobuf-c (PF_HAVE_ONNX undefined) only the protobuf-free helpers
 * are compiled and the readers return PF_ERR_UNSUPPORTED.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../core/error.h"
#include "onnx_reader.h"

#ifdef PF_HAVE_ONNX
#include "onnx.pb-c.h"
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ONNX reader keeps raw_data as stored (little-endian): little-endian hosts only"
#endif

/* --- protobuf-free helpers ------------------------------------------------------ */

/* 17..22 came after Debian's onnx.proto (IR 9 and 10): named for messages,
 * size 0 because the reader refuses them. */
static const char *const dtype_names[] = {
    "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING",
    "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",
    "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4"};
static const unsigned char dtype_sizes[] = {0, 4, 1, 1, 2, 2, 4, 8, 0, 1, 2, 8, 4, 8, 8, 16, 2};
#define DTYPE_NEWEST 22

const char *pf_onnx_dtype_name(int dtype)
{
    if (dtype < 0 || dtype >= (int)(sizeof dtype_names / sizeof dtype_names[0])) return "?";
    return dtype_names[dtype];
}

size_t pf_onnx_dtype_size(int dtype)
{
    if (dtype < 0 || dtype >= (int)sizeof dtype_sizes) return 0;
    return dtype_sizes[dtype];
}

int pf_onnx_dtype_supported(int dtype)
{
    switch (dtype) {
    case PF_ONNX_FLOAT: case PF_ONNX_FLOAT16: case PF_ONNX_DOUBLE: case PF_ONNX_INT64:
    case PF_ONNX_INT32: case PF_ONNX_INT8: case PF_ONNX_UINT8: case PF_ONNX_BOOL:
        return 1;
    default:
        return 0;
    }
}
#define SUPPORTED_DTYPES "FLOAT, FLOAT16, DOUBLE, INT64, INT32, INT8, UINT8, BOOL"

const char *pf_onnx_attr_type_name(int type)
{
    static const char *const names[] = {
        "UNDEFINED", "FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS", "INTS", "STRINGS",
        "TENSORS", "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
    if (type < 0 || type >= (int)(sizeof names / sizeof names[0])) return "?";
    return names[type];
}

/* One entry per distinct value name; -1 where the name has no such role. */
typedef struct name_entry {
    const char *name;
    int input, init, node, slot, output, vinfo;
} name_entry;

typedef struct arena_block {
    struct arena_block *next;
    max_align_t data[];
} arena_block;

#ifdef PF_HAVE_ONNX
/* protobuf-c allocations, counted against a cap. Each block carries its size
 * in a 16-byte header (which keeps malloc's alignment for raw_data). */
typedef struct pb_budget {
    size_t used, cap;
    int over;
} pb_budget;
#endif

struct pf_onnx_priv {
#ifdef PF_HAVE_ONNX
    Onnx__ModelProto *msg;
    pb_budget budget;
    ProtobufCAllocator pba;
#endif
    arena_block *arena;
    name_entry *table;
    size_t table_mask; /* capacity - 1, a power of two */
};

static uint64_t hash_name(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* The entry for `name`, created when `create` (the table is sized at open for
 * every name the model holds, so it never fills). NULL when absent. */
static name_entry *table_get(const pf_onnx_priv *p, const char *name, int create)
{
    if (!p || !p->table) return NULL;
    size_t i = (size_t)hash_name(name) & p->table_mask;
    for (;;) {
        name_entry *e = &p->table[i];
        if (!e->name) {
            if (!create) return NULL;
            e->name = name;
            e->input = e->init = e->node = e->slot = e->output = e->vinfo = -1;
            return e;
        }
        if (!strcmp(e->name, name)) return e;
        i = (i + 1) & p->table_mask;
    }
}

const pf_onnx_tensor *pf_onnx_find_initializer(const pf_onnx_model *m, const char *name)
{
    if (!m || !name) return NULL;
    const name_entry *e = table_get(m->priv, name, 0);
    return e && e->init >= 0 ? &m->initializers[e->init] : NULL;
}

const pf_onnx_value_info *pf_onnx_find_value_info(const pf_onnx_model *m, const char *name)
{
    if (!m || !name) return NULL;
    const name_entry *e = table_get(m->priv, name, 0);
    if (!e) return NULL;
    if (e->input >= 0) return &m->inputs[e->input];
    if (e->output >= 0) return &m->outputs[e->output];
    if (e->vinfo >= 0) return &m->value_infos[e->vinfo];
    return NULL;
}

int pf_onnx_find_producer(const pf_onnx_model *m, const char *name, int *output_slot)
{
    const name_entry *e = m && name ? table_get(m->priv, name, 0) : NULL;
    if (output_slot) *output_slot = e ? e->slot : -1;
    return e ? e->node : -1;
}

const pf_onnx_attr *pf_onnx_node_attr(const pf_onnx_node *n, const char *name)
{
    if (!n || !name) return NULL;
    for (size_t i = 0; i < n->n_attrs; i++)
        if (!strcmp(n->attrs[i].name, name)) return &n->attrs[i];
    return NULL;
}

/* "node 12 'conv1' (Conv)" or "node 12 (Conv)" for an unnamed node. */
static const char *node_desc(char *buf, size_t size, int index, const char *name,
                             const char *op_type)
{
    if (name && *name)
        snprintf(buf, size, "node %d '%.100s' (%.60s)", index, name, op_type);
    else
        snprintf(buf, size, "node %d (%.60s)", index, op_type);
    return buf;
}

/* The attribute `name` of node n, NULL when absent; PF_ERR_FORMAT when present
 * with another type than `want`. */
static pf_status attr_typed(const pf_onnx_model *m, const pf_onnx_node *n, const char *name,
                            pf_onnx_attr_type want, const pf_onnx_attr **out)
{
    *out = NULL;
    if (!m || !n || !name) return pf_set_error(PF_ERR_INVALID, "pf_onnx_attr: NULL argument");
    const pf_onnx_attr *a = pf_onnx_node_attr(n, name);
    if (!a) return PF_OK;
    if (a->type != want) {
        char nd[256];
        return pf_set_error(PF_ERR_FORMAT, "ONNX model '%.200s': %s: attribute '%.100s' is %s, "
                            "expected %s", m->name, node_desc(nd, sizeof nd, n->index, n->name,
                                                             n->op_type),
                            name, pf_onnx_attr_type_name((int)a->type),
                            pf_onnx_attr_type_name((int)want));
    }
    *out = a;
    return PF_OK;
}

pf_status pf_onnx_attr_int(const pf_onnx_model *m, const pf_onnx_node *n, const char *name,
                           int64_t def, int64_t *out)
{
    const pf_onnx_attr *a;
    pf_status st = attr_typed(m, n, name, PF_ONNX_ATTR_INT, &a);
    if (out) *out = a ? a->i : def;
    return st;
}

pf_status pf_onnx_attr_float(const pf_onnx_model *m, const pf_onnx_node *n, const char *name,
                             float def, float *out)
{
    const pf_onnx_attr *a;
    pf_status st = attr_typed(m, n, name, PF_ONNX_ATTR_FLOAT, &a);
    if (out) *out = a ? a->f : def;
    return st;
}

pf_status pf_onnx_attr_string(const pf_onnx_model *m, const pf_onnx_node *n, const char *name,
                              const char *def, const char **out)
{
    const pf_onnx_attr *a;
    pf_status st = attr_typed(m, n, name, PF_ONNX_ATTR_STRING, &a);
    if (out) *out = a ? a->s : def;
    return st;
}

pf_status pf_onnx_attr_ints(const pf_onnx_model *m, const pf_onnx_node *n, const char *name,
                            const int64_t **out, size_t *count)
{
    const pf_onnx_attr *a;
    pf_status st = attr_typed(m, n, name, PF_ONNX_ATTR_INTS, &a);
    if (out) *out = a ? a->ints : NULL;
    if (count) *count = a ? a->n : 0;
    return st;
}

pf_status pf_onnx_attr_floats(const pf_onnx_model *m, const pf_onnx_node *n, const char *name,
                              const float **out, size_t *count)
{
    const pf_onnx_attr *a;
    pf_status st = attr_typed(m, n, name, PF_ONNX_ATTR_FLOATS, &a);
    if (out) *out = a ? a->floats : NULL;
    if (count) *count = a ? a->n : 0;
    return st;
}

pf_status pf_onnx_attr_tensor(const pf_onnx_model *m, const pf_onnx_node *n, const char *name,
                              const pf_onnx_tensor **out)
{
    const pf_onnx_attr *a;
    pf_status st = attr_typed(m, n, name, PF_ONNX_ATTR_TENSOR, &a);
    if (out) *out = a ? a->t : NULL;
    return st;
}

void pf_onnx_tensor_data_free(pf_onnx_tensor_data *t)
{
    if (!t) return;
    free(t->name);
    free(t->dims);
    free(t->data);
    memset(t, 0, sizeof *t);
}

#ifndef PF_HAVE_ONNX

/* --- stubs: built without protobuf-c --------------------------------------------- */

#define NO_ONNX "built without ONNX support (protobuf-c not found)"

int pf_onnx_available(void) { return 0; }

pf_status pf_onnx_open(const char *path, pf_onnx_model **out)
{
    if (out) *out = NULL;
    return pf_set_error(PF_ERR_UNSUPPORTED, "pf_onnx_open: cannot read '%.200s': " NO_ONNX,
                        path ? path : "(null)");
}

pf_status pf_onnx_open_memory(const void *data, size_t size, const char *name,
                              pf_onnx_model **out)
{
    if (out) *out = NULL;
    return pf_set_error(PF_ERR_UNSUPPORTED, "pf_onnx_open_memory: cannot read '%.200s': " NO_ONNX,
                        name ? name : "(memory)");
}

void pf_onnx_close(pf_onnx_model **m)
{
    if (m) *m = NULL; /* nothing can have been opened */
}

pf_status pf_onnx_read_tensor_file(const char *path, pf_onnx_tensor_data *out)
{
    if (out) memset(out, 0, sizeof *out);
    return pf_set_error(PF_ERR_UNSUPPORTED, "pf_onnx_read_tensor_file: cannot read '%.200s': "
                        NO_ONNX, path ? path : "(null)");
}

pf_status pf_onnx_read_tensor_memory(const void *data, size_t size, const char *name,
                                     pf_onnx_tensor_data *out)
{
    if (out) memset(out, 0, sizeof *out);
    return pf_set_error(PF_ERR_UNSUPPORTED, "pf_onnx_read_tensor_memory: cannot read '%.200s': "
                        NO_ONNX, name ? name : "(memory)");
}

#else /* PF_HAVE_ONNX */

int pf_onnx_available(void) { return 1; }

/* --- reader state, messages, memory ------------------------------------------------ */

typedef struct reader {
    const char *kind; /* "ONNX model", "ONNX tensor" */
    const char *name;
    pf_onnx_priv *p;
} reader;

static pf_status fail(const reader *r, pf_status st, const char *fmt, ...) PF_PRINTF(3, 4);
static pf_status fail(const reader *r, pf_status st, const char *fmt, ...)
{
    char detail[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return pf_set_error(st, "%s '%.200s': %s", r->kind, r->name, detail);
}

static void arena_free(pf_onnx_priv *p)
{
    arena_block *b = p->arena;
    while (b) {
        arena_block *next = b->next;
        free(b);
        b = next;
    }
    p->arena = NULL;
}

static void *arena_alloc(pf_onnx_priv *p, size_t size)
{
    if (size > SIZE_MAX - sizeof(arena_block)) return NULL;
    arena_block *b = calloc(1, sizeof *b + size);
    if (!b) return NULL;
    b->next = p->arena;
    p->arena = b;
    return b->data;
}

/* calloc(n, size) from the arena, with an overflow check; NULL on failure. */
static void *arena_array(pf_onnx_priv *p, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) return NULL;
    size_t bytes = n * size;
    return arena_alloc(p, bytes ? bytes : 1);
}

#define PB_HEADER 16

static void *pb_alloc(void *data, size_t size)
{
    pb_budget *b = data;
    if (size > b->cap - b->used || size > SIZE_MAX - PB_HEADER) {
        b->over = 1;
        return NULL;
    }
    unsigned char *blk = malloc(size + PB_HEADER);
    if (!blk) {
        b->over = 1;
        return NULL;
    }
    memcpy(blk, &size, sizeof size);
    b->used += size;
    return blk + PB_HEADER;
}

static void pb_free(void *data, void *ptr)
{
    if (!ptr) return;
    pb_budget *b = data;
    unsigned char *blk = (unsigned char *)ptr - PB_HEADER;
    size_t size;
    memcpy(&size, blk, sizeof size);
    b->used -= size;
    free(blk);
}

static void budget_init(pf_onnx_priv *p, size_t input_size)
{
    const size_t extra = (size_t)64 << 20;
    p->budget.used = 0;
    p->budget.over = 0;
    p->budget.cap = input_size > (SIZE_MAX - extra) / 8 ? SIZE_MAX : input_size * 8 + extra;
    p->pba.alloc = pb_alloc;
    p->pba.free = pb_free;
    p->pba.allocator_data = &p->budget;
}

static const char *S(const char *s) { return s ? s : ""; }

/* "[64,3,7,7]", cut with "..." when long. */
static const char *fmt_dims(char *buf, size_t size, size_t n, const int64_t *dims)
{
    size_t o = 0;
    buf[0] = '\0';
    o += (size_t)snprintf(buf + o, size - o, "[");
    for (size_t i = 0; i < n && o < size; i++) {
        if (o + 24 >= size) {
            snprintf(buf + o, size - o, "...");
            o = size;
            break;
        }
        o += (size_t)snprintf(buf + o, size - o, "%s%lld", i ? "," : "", (long long)dims[i]);
    }
    if (o < size) snprintf(buf + o, size - o, "]");
    return buf;
}

/* --- wire-format pre-scan ------------------------------------------------------------ */

#define PB_MAX_DEPTH 100

typedef struct scan {
    const reader *r;
    const uint8_t *base;
} scan;

static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t x = 0;
    for (int i = 0; i < 10; i++) {
        if (*p >= end) return 0;
        uint8_t b = *(*p)++;
        x |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = x;
            return 1;
        }
    }
    return 0;
}

static pf_status pb_scan(const scan *s, const ProtobufCMessageDescriptor *d, const uint8_t *p,
                         const uint8_t *end, int depth)
{
    if (depth > PB_MAX_DEPTH)
        return fail(s->r, PF_ERR_FORMAT, "corrupt protobuf: messages nested deeper than %d levels "
                    "(a %s at byte %zu)", PB_MAX_DEPTH, d->short_name, (size_t)(p - s->base));
    while (p < end) {
        size_t at = (size_t)(p - s->base);
        uint64_t key, v;
        if (!read_varint(&p, end, &key))
            return fail(s->r, PF_ERR_FORMAT, "truncated or corrupt protobuf: field key at byte "
                        "%zu of a %s runs past its end", at, d->short_name);
        uint64_t num = key >> 3;
        unsigned wt = (unsigned)(key & 7);
        if (num == 0 || num > 0x1fffffff)
            return fail(s->r, PF_ERR_FORMAT, "corrupt protobuf: invalid field number %llu at byte "
                        "%zu of a %s", (unsigned long long)num, at, d->short_name);
        const ProtobufCFieldDescriptor *f =
            protobuf_c_message_descriptor_get_field(d, (unsigned)num);
        const char *fname = f ? f->name : "(unknown)";
        switch (wt) {
        case 0:
            if (!read_varint(&p, end, &v))
                return fail(s->r, PF_ERR_FORMAT, "truncated or corrupt protobuf: varint field "
                            "%s.%s at byte %zu runs past its end", d->short_name, fname, at);
            break;
        case 1:
        case 5: {
            size_t w = wt == 1 ? 8 : 4;
            if ((size_t)(end - p) < w)
                return fail(s->r, PF_ERR_FORMAT, "truncated protobuf: %zu-byte field %s.%s at "
                            "byte %zu runs past its end", w, d->short_name, fname, at);
            p += w;
            break;
        }
        case 2:
            if (!read_varint(&p, end, &v))
                return fail(s->r, PF_ERR_FORMAT, "truncated or corrupt protobuf: length of field "
                            "%s.%s at byte %zu runs past its end", d->short_name, fname, at);
            if (v > (uint64_t)(end - p))
                return fail(s->r, PF_ERR_FORMAT, "truncated or corrupt protobuf: field %s.%s at "
                            "byte %zu declares %llu bytes but only %zu remain%s", d->short_name,
                            fname, at, (unsigned long long)v, (size_t)(end - p),
                            depth == 0 ? " (truncated file?)" : "");
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
                pf_status st = pb_scan(s, f->descriptor, p, p + v, depth + 1);
                if (st != PF_OK) return st;
            }
            p += v;
            break;
        default:
            return fail(s->r, PF_ERR_FORMAT, "corrupt protobuf: wire type %u (field %s.%s) at "
                        "byte %zu is not valid%s", wt, d->short_name, fname, at,
                        wt == 3 || wt == 4 ? " (groups are not used by ONNX)" : "");
        }
    }
    return PF_OK;
}

/* Scans, then unpacks through the capped allocator into *out. */
static pf_status decode(const reader *r, const ProtobufCMessageDescriptor *d, const void *data,
                        size_t size, ProtobufCMessage **out)
{
    *out = NULL;
    scan s = {r, data};
    pf_status st = pb_scan(&s, d, data, (const uint8_t *)data + size, 0);
    if (st != PF_OK) return st;
    budget_init(r->p, size);
    ProtobufCMessage *msg = protobuf_c_message_unpack(d, &r->p->pba, size, data);
    if (!msg) {
        if (r->p->budget.over) {
            char b1[32], b2[32];
            return fail(r, PF_ERR_NOMEM, "decoding %s needs more than %s of memory (the cap for "
                        "a file of %s)", d->short_name,
                        pf_fmt_bytes(b1, sizeof b1, r->p->budget.cap),
                        pf_fmt_bytes(b2, sizeof b2, size));
        }
        return fail(r, PF_ERR_FORMAT, "corrupt protobuf: protobuf-c could not decode the %zu "
                    "bytes as a %s", size, d->short_name);
    }
    *out = msg;
    return PF_OK;
}

/* --- tensors -------------------------------------------------------------------------- */

/* Values ONNX keeps widened in int32_data, narrowed to the element width with
 * a range check. */
static pf_status narrow_int32(const reader *r, const char *what, int dt, const int32_t *src,
                              size_t n, void *dst)
{
    int32_t lo, hi;
    switch (dt) {
    case PF_ONNX_INT8: lo = INT8_MIN; hi = INT8_MAX; break;
    case PF_ONNX_UINT8: lo = 0; hi = UINT8_MAX; break;
    case PF_ONNX_BOOL: lo = 0; hi = 1; break;
    case PF_ONNX_INT16: lo = INT16_MIN; hi = INT16_MAX; break;
    default: lo = 0; hi = UINT16_MAX; break; /* UINT16, FLOAT16, BFLOAT16: bit patterns */
    }
    for (size_t i = 0; i < n; i++) {
        int32_t v = src[i];
        if (v < lo || v > hi)
            return fail(r, PF_ERR_FORMAT, "%s: int32_data[%zu] = %d is out of range for %s "
                        "(%d..%d)", what, i, v, pf_onnx_dtype_name(dt), lo, hi);
        if (pf_onnx_dtype_size(dt) == 1) {
            ((uint8_t *)dst)[i] = (uint8_t)v;
        } else {
            uint16_t u = (uint16_t)v;
            memcpy((uint8_t *)dst + 2 * i, &u, 2);
        }
    }
    return PF_OK;
}

/* Fills the view `out` of tensor `t`; `what` names it in messages. With
 * any_type, every fixed-width type is read (tensor files); otherwise only the
 * supported types are (model constants). */
static pf_status tensor_view(const reader *r, const Onnx__TensorProto *t, const char *what,
                             int any_type, pf_onnx_tensor *out)
{
    memset(out, 0, sizeof *out);
    out->name = S(t->name);
    if (t->n_external_data > 0 ||
        (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)) {
        const char *loc = "";
        for (size_t i = 0; i < t->n_external_data; i++)
            if (t->external_data[i] && !strcmp(S(t->external_data[i]->key), "location"))
                loc = S(t->external_data[i]->value);
        return fail(r, PF_ERR_UNSUPPORTED, "%s keeps its data outside the model (external data%s"
                    "%.200s%s): not supported; save the model with all tensors inside the .onnx "
                    "file", what, *loc ? " in '" : "", loc, *loc ? "'" : "");
    }
    if (t->segment)
        return fail(r, PF_ERR_UNSUPPORTED, "%s is one segment of a larger tensor: segmented "
                    "tensors are not supported", what);
    int dt = t->has_data_type ? t->data_type : 0;
    size_t es = pf_onnx_dtype_size(dt);
    if (dt == PF_ONNX_UNDEFINED)
        return fail(r, PF_ERR_FORMAT, "%s has no data type", what);
    if (dt == PF_ONNX_STRING || (dt > PF_ONNX_BFLOAT16 && dt <= DTYPE_NEWEST))
        return fail(r, PF_ERR_UNSUPPORTED, "%s has data type %s: not supported", what,
                    pf_onnx_dtype_name(dt));
    if (es == 0)
        return fail(r, PF_ERR_FORMAT, "%s has unknown data type %d", what, dt);
    if (!any_type && !pf_onnx_dtype_supported(dt))
        return fail(r, PF_ERR_UNSUPPORTED, "%s has data type %s: not supported (supported: "
                    SUPPORTED_DTYPES ")", what, pf_onnx_dtype_name(dt));
    if (t->n_dims > PF_ONNX_MAX_RANK)
        return fail(r, PF_ERR_UNSUPPORTED, "%s has %zu dimensions (at most %d)", what, t->n_dims,
                    PF_ONNX_MAX_RANK);
    char dims[160];
    fmt_dims(dims, sizeof dims, t->n_dims, t->dims);
    int64_t numel = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        int64_t d = t->dims[i];
        if (d < 0)
            return fail(r, PF_ERR_FORMAT, "%s has a negative dimension: dims %s", what, dims);
        if (d && numel > INT64_MAX / d)
            return fail(r, PF_ERR_FORMAT, "%s: dims %s overflow the element count", what, dims);
        numel *= d;
    }
    if ((uint64_t)numel > SIZE_MAX / es)
        return fail(r, PF_ERR_FORMAT, "%s: dims %s overflow the byte size", what, dims);
    size_t nbytes = (size_t)numel * es;
    out->dtype = (pf_onnx_dtype)dt;
    out->ndim = (int)t->n_dims;
    out->dims = t->n_dims ? t->dims : NULL;
    out->numel = numel;
    out->nbytes = nbytes;

    /* Where the values are: raw_data or exactly one typed field. */
    struct { const char *name; size_t n; } fields[] = {
        {"float_data", t->n_float_data},   {"int32_data", t->n_int32_data},
        {"int64_data", t->n_int64_data},   {"double_data", t->n_double_data},
        {"uint64_data", t->n_uint64_data}, {"string_data", t->n_string_data},
    };
    const char *present = t->has_raw_data ? "raw_data" : NULL;
    size_t n_values = 0;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (!fields[i].n) continue;
        if (present)
            return fail(r, PF_ERR_FORMAT, "%s (%s) stores values in both %s and %s", what,
                        pf_onnx_dtype_name(dt), present, fields[i].name);
        present = fields[i].name;
        n_values = fields[i].n;
    }
    if (t->has_raw_data) {
        if (t->raw_data.len != nbytes)
            return fail(r, PF_ERR_FORMAT, "%s (%s, dims %s) has %zu bytes of raw_data, expected "
                        "%zu (%lld elements x %zu bytes)", what, pf_onnx_dtype_name(dt), dims,
                        t->raw_data.len, nbytes, (long long)numel, es);
        if (!nbytes) return PF_OK;
        if (dt == PF_ONNX_BOOL) { /* one byte per element, 0 or 1 */
            const uint8_t *b = t->raw_data.data;
            for (size_t i = 0; i < nbytes; i++)
                if (b[i] > 1)
                    return fail(r, PF_ERR_FORMAT, "%s: BOOL element %zu is %u in raw_data (0 or "
                                "1)", what, i, b[i]);
        }
        /* protobuf-c's blocks are malloc-aligned; copy if that ever changes. */
        if ((uintptr_t)t->raw_data.data % es == 0) {
            out->data = t->raw_data.data;
        } else {
            void *copy = arena_alloc(r->p, nbytes);
            if (!copy) return fail(r, PF_ERR_NOMEM, "%s: out of memory", what);
            memcpy(copy, t->raw_data.data, nbytes);
            out->data = copy;
        }
        return PF_OK;
    }
    if (!present) {
        if (numel == 0) return PF_OK;
        return fail(r, PF_ERR_FORMAT, "%s (%s, dims %s) has %lld elements but no data", what,
                    pf_onnx_dtype_name(dt), dims, (long long)numel);
    }
    /* Which typed field each type uses, and how many values per element. */
    const char *want;
    size_t per = 1;
    switch (dt) {
    case PF_ONNX_FLOAT: want = "float_data"; break;
    case PF_ONNX_COMPLEX64: want = "float_data"; per = 2; break;
    case PF_ONNX_DOUBLE: want = "double_data"; break;
    case PF_ONNX_COMPLEX128: want = "double_data"; per = 2; break;
    case PF_ONNX_INT64: want = "int64_data"; break;
    case PF_ONNX_UINT32: case PF_ONNX_UINT64: want = "uint64_data"; break;
    default: want = "int32_data"; break;
    }
    if (strcmp(present, want))
        return fail(r, PF_ERR_FORMAT, "%s has data type %s but stores its values in %s (expected "
                    "%s or raw_data)", what, pf_onnx_dtype_name(dt), present, want);
    if ((uint64_t)numel > SIZE_MAX / per || n_values != (size_t)numel * per)
        return fail(r, PF_ERR_FORMAT, "%s (%s, dims %s) has %zu values in %s, expected %lld",
                    what, pf_onnx_dtype_name(dt), dims, n_values, want,
                    (long long)numel * (long long)per);
    switch (dt) {
    case PF_ONNX_FLOAT: case PF_ONNX_COMPLEX64: out->data = t->float_data; return PF_OK;
    case PF_ONNX_DOUBLE: case PF_ONNX_COMPLEX128: out->data = t->double_data; return PF_OK;
    case PF_ONNX_INT64: out->data = t->int64_data; return PF_OK;
    case PF_ONNX_UINT64: out->data = t->uint64_data; return PF_OK;
    case PF_ONNX_INT32: out->data = t->int32_data; return PF_OK;
    default: break;
    }
    void *dst = arena_alloc(r->p, nbytes);
    if (!dst) return fail(r, PF_ERR_NOMEM, "%s: out of memory for %zu bytes", what, nbytes);
    out->data = dst;
    if (dt == PF_ONNX_UINT32) {
        for (size_t i = 0; i < n_values; i++) {
            if (t->uint64_data[i] > UINT32_MAX)
                return fail(r, PF_ERR_FORMAT, "%s: uint64_data[%zu] = %llu is out of range for "
                            "UINT32", what, i, (unsigned long long)t->uint64_data[i]);
            uint32_t u = (uint32_t)t->uint64_data[i];
            memcpy((uint8_t *)dst + 4 * i, &u, 4);
        }
        return PF_OK;
    }
    return narrow_int32(r, what, dt, t->int32_data, n_values, dst);
}

/* --- value infos -------------------------------------------------------------------- */

static const char *type_case_name(Onnx__TypeProto__ValueCase c)
{
    switch (c) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE: return "tensor";
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE: return "sequence";
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE: return "map";
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE: return "optional";
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE: return "sparse tensor";
    default: return "unknown";
    }
}

/* `strict` for graph inputs and outputs: a tensor type of a supported element
 * type is required. value_info entries may be untyped or of any type (they
 * are hints); their dims are checked all the same. */
static pf_status value_info_view(const reader *r, const Onnx__ValueInfoProto *v, const char *role,
                                 size_t index, int strict, pf_onnx_value_info *out)
{
    memset(out, 0, sizeof *out);
    out->ndim = -1;
    out->name = S(v->name);
    if (!*out->name) return fail(r, PF_ERR_FORMAT, "%s %zu has no name", role, index);
    const Onnx__TypeProto *tp = v->type;
    if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET) {
        if (strict)
            return fail(r, PF_ERR_FORMAT, "%s %zu '%.100s' has no type", role, index, out->name);
        return PF_OK;
    }
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
        if (strict)
            return fail(r, PF_ERR_UNSUPPORTED, "%s %zu '%.100s' is a %s (non-tensor type): only "
                        "tensors are supported", role, index, out->name,
                        type_case_name(tp->value_case));
        return PF_OK;
    }
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    int dt = tt && tt->has_elem_type ? tt->elem_type : 0;
    if (strict) {
        if (dt == PF_ONNX_UNDEFINED)
            return fail(r, PF_ERR_FORMAT, "%s %zu '%.100s' has no element type", role, index,
                        out->name);
        if (dt < 0 || dt > DTYPE_NEWEST)
            return fail(r, PF_ERR_FORMAT, "%s %zu '%.100s' has unknown data type %d", role,
                        index, out->name, dt);
        if (!pf_onnx_dtype_supported(dt))
            return fail(r, PF_ERR_UNSUPPORTED, "%s %zu '%.100s' has data type %s: not "
                        "supported (supported: " SUPPORTED_DTYPES ")", role, index, out->name,
                        pf_onnx_dtype_name(dt));
    }
    out->dtype = (dt >= 0 && dt <= PF_ONNX_BFLOAT16) ? (pf_onnx_dtype)dt : PF_ONNX_UNDEFINED;
    if (!tt || !tt->shape) return PF_OK;
    const Onnx__TensorShapeProto *sh = tt->shape;
    if (sh->n_dim > PF_ONNX_MAX_RANK)
        return fail(r, PF_ERR_UNSUPPORTED, "%s %zu '%.100s' has %zu dimensions (at most %d)",
                    role, index, out->name, sh->n_dim, PF_ONNX_MAX_RANK);
    pf_onnx_dim *dims = arena_array(r->p, sh->n_dim, sizeof *dims);
    if (!dims) return fail(r, PF_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < sh->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = sh->dim[i];
        dims[i].value = -1;
        dims[i].param = NULL;
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (d->dim_value < 0)
                return fail(r, PF_ERR_FORMAT, "%s %zu '%.100s': dimension %zu is %lld", role,
                            index, out->name, i, (long long)d->dim_value);
            dims[i].value = d->dim_value;
        } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   d->dim_param && *d->dim_param) {
            dims[i].param = d->dim_param;
        }
    }
    out->ndim = (int)sh->n_dim;
    out->dims = dims;
    return PF_OK;
}

/* --- the model ------------------------------------------------------------------------ */

static const char *norm_domain(const char *d)
{
    d = S(d);
    return strcmp(d, "ai.onnx") ? d : "";
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Copies `len` bytes into the arena as a NUL-terminated string. */
static char *arena_strndup(pf_onnx_priv *p, const void *s, size_t len)
{
    if (len == SIZE_MAX) return NULL;
    char *c = arena_alloc(p, len + 1);
    if (!c) return NULL;
    if (len) memcpy(c, s, len);
    c[len] = '\0';
    return c;
}

static pf_status check_opsets(const reader *r, const Onnx__ModelProto *mp, pf_onnx_model *m)
{
    if (mp->n_opset_import == 0)
        return fail(r, PF_ERR_FORMAT, "imports no operator set (opset_import is empty)");
    if (mp->n_opset_import > 256)
        return fail(r, PF_ERR_FORMAT, "imports %zu operator sets (at most 256)",
                    mp->n_opset_import);
    pf_onnx_opset *ops = arena_array(r->p, mp->n_opset_import, sizeof *ops);
    if (!ops) return fail(r, PF_ERR_NOMEM, "out of memory");
    int have_default = 0;
    m->opset = 0;
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        ops[i].domain = norm_domain(o->domain);
        if (!o->has_version || o->version < 1)
            return fail(r, PF_ERR_FORMAT, "opset import %zu (domain '%.100s') has no valid "
                        "version", i, ops[i].domain);
        ops[i].version = o->version;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(ops[j].domain, ops[i].domain))
                return fail(r, PF_ERR_FORMAT, "imports domain '%.100s' twice (versions %lld and "
                            "%lld)", ops[i].domain, (long long)ops[j].version,
                            (long long)ops[i].version);
        if (!*ops[i].domain) {
            have_default = 1;
            m->opset = o->version;
        } else {
            PF_LOGI("%s '%.200s': imports domain '%.100s' version %lld (its nodes are left to "
                    "the graph builder)", r->kind, r->name, ops[i].domain, (long long)o->version);
        }
    }
    /* A model of other domains only (training ops, ML ops) may import no
     * default opset: then m->opset stays 0 and any default-domain node is
     * refused as not imported. */
    if (have_default && (m->opset < PF_ONNX_OPSET_MIN || m->opset > PF_ONNX_OPSET_MAX))
        return fail(r, PF_ERR_UNSUPPORTED, "uses opset %lld of the default ONNX domain: not "
                    "supported (opset %d..%d)", (long long)m->opset, PF_ONNX_OPSET_MIN,
                    PF_ONNX_OPSET_MAX);
    m->n_opsets = mp->n_opset_import;
    m->opsets = ops;
    return PF_OK;
}

static pf_status check_attr(const reader *r, const char *nd, const Onnx__AttributeProto *a,
                            size_t index, pf_onnx_attr *out)
{
    memset(out, 0, sizeof *out);
    out->name = S(a->name);
    if (!*out->name) return fail(r, PF_ERR_FORMAT, "%s: attribute %zu has no name", nd, index);
    if (a->ref_attr_name && *a->ref_attr_name)
        return fail(r, PF_ERR_FORMAT, "%s: attribute '%.100s' refers to attribute '%.100s' of "
                    "an enclosing function, which the main graph has not", nd, out->name,
                    a->ref_attr_name);
    int type = a->has_type ? (int)a->type : 0;
    if (!type) {
        /* IR 1 had no type field: infer it from the one value field set. */
        struct { int set, type; } f[] = {
            {a->has_f, 1}, {a->has_i, 2}, {a->has_s, 3}, {a->t != NULL, 4}, {a->g != NULL, 5},
            {a->n_floats > 0, 6}, {a->n_ints > 0, 7}, {a->n_strings > 0, 8},
            {a->n_tensors > 0, 9}, {a->n_graphs > 0, 10}, {a->sparse_tensor != NULL, 11},
            {a->n_sparse_tensors > 0, 12}, {a->tp != NULL, 13}, {a->n_type_protos > 0, 14}};
        int nset = 0;
        for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
            if (f[i].set) {
                nset++;
                type = f[i].type;
            }
        if (nset != 1)
            return fail(r, PF_ERR_FORMAT, "%s: attribute '%.100s' has no type and %d value "
                        "fields", nd, out->name, nset);
    }
    /* Scalars missing from the wire read as 0 (proto3 writers omit zeros). */
    switch (type) {
    case PF_ONNX_ATTR_FLOAT: out->f = a->f; break;
    case PF_ONNX_ATTR_INT: out->i = a->i; break;
    case PF_ONNX_ATTR_STRING:
        out->s_len = a->has_s ? a->s.len : 0;
        out->s = arena_strndup(r->p, a->s.data, out->s_len);
        if (!out->s) return fail(r, PF_ERR_NOMEM, "%s: out of memory", nd);
        break;
    case PF_ONNX_ATTR_FLOATS: out->n = a->n_floats; out->floats = a->floats; break;
    case PF_ONNX_ATTR_INTS: out->n = a->n_ints; out->ints = a->ints; break;
    case PF_ONNX_ATTR_STRINGS: {
        const char **v = arena_array(r->p, a->n_strings, sizeof *v);
        if (!v) return fail(r, PF_ERR_NOMEM, "%s: out of memory", nd);
        for (size_t i = 0; i < a->n_strings; i++)
            if (!(v[i] = arena_strndup(r->p, a->strings[i].data, a->strings[i].len)))
                return fail(r, PF_ERR_NOMEM, "%s: out of memory", nd);
        out->n = a->n_strings;
        out->strings = v;
        break;
    }
    case PF_ONNX_ATTR_TENSOR: {
        if (!a->t)
            return fail(r, PF_ERR_FORMAT, "%s: TENSOR attribute '%.100s' holds no tensor", nd,
                        out->name);
        pf_onnx_tensor *t = arena_alloc(r->p, sizeof *t);
        if (!t) return fail(r, PF_ERR_NOMEM, "%s: out of memory", nd);
        char what[400];
        snprintf(what, sizeof what, "%s: attribute '%.100s' tensor", nd, out->name);
        pf_status st = tensor_view(r, a->t, what, 0, t);
        if (st != PF_OK) return st;
        out->t = t;
        break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
        return fail(r, PF_ERR_UNSUPPORTED, "%s: attribute '%.100s' of type %s (a subgraph, as "
                    "in If, Loop or Scan): graph attributes are not supported", nd, out->name,
                    pf_onnx_attr_type_name(type));
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS:
        return fail(r, PF_ERR_UNSUPPORTED, "%s: attribute '%.100s' of type %s: attribute type "
                    "not supported", nd, out->name, pf_onnx_attr_type_name(type));
    default:
        return fail(r, PF_ERR_FORMAT, "%s: attribute '%.100s' has unknown type %d", nd,
                    out->name, type);
    }
    out->type = (pf_onnx_attr_type)type;
    return PF_OK;
}

static pf_status check_nodes(const reader *r, const Onnx__GraphProto *g, pf_onnx_model *m)
{
    pf_onnx_priv *p = r->p;
    pf_onnx_node *nodes = arena_array(p, g->n_node, sizeof *nodes);
    if (!nodes) return fail(r, PF_ERR_NOMEM, "out of memory for %zu nodes", g->n_node);
    m->nodes = nodes;
    m->n_nodes = g->n_node;
    char nd[256];

    /* Outputs first, so an input read before it is written can say by whom. */
    for (size_t k = 0; k < g->n_node; k++) {
        const Onnx__NodeProto *n = g->node[k];
        nodes[k].index = (int)k;
        nodes[k].name = S(n->name);
        nodes[k].op_type = S(n->op_type);
        node_desc(nd, sizeof nd, (int)k, nodes[k].name, nodes[k].op_type);
        if (!*nodes[k].op_type) return fail(r, PF_ERR_FORMAT, "%s has no op_type", nd);
        if (n->n_output > INT_MAX)
            return fail(r, PF_ERR_FORMAT, "%s has %zu outputs", nd, n->n_output);
        for (size_t j = 0; j < n->n_output; j++) {
            const char *o = n->output[j];
            if (!*o) continue;
            name_entry *e = table_get(p, o, 1);
            if (e->node >= 0) {
                char nd2[256];
                const pf_onnx_node *other = &nodes[e->node];
                return fail(r, PF_ERR_FORMAT, "%s: output '%.100s' is also written by %s", nd, o,
                            node_desc(nd2, sizeof nd2, e->node, other->name, other->op_type));
            }
            if (e->input >= 0)
                return fail(r, PF_ERR_FORMAT, "%s: output '%.100s' has the name of graph input "
                            "%d", nd, o, e->input);
            if (e->init >= 0)
                return fail(r, PF_ERR_FORMAT, "%s: output '%.100s' has the name of initializer "
                            "%d", nd, o, e->init);
            e->node = (int)k;
            e->slot = (int)j;
        }
    }

    size_t total_attrs = 0;
    for (size_t k = 0; k < g->n_node; k++) total_attrs += g->node[k]->n_attribute;
    pf_onnx_attr *attrs = arena_array(p, total_attrs, sizeof *attrs);
    const char **names = arena_array(p, total_attrs, sizeof *names); /* for the duplicate check */
    if (!attrs || !names) return fail(r, PF_ERR_NOMEM, "out of memory for %zu attributes",
                                      total_attrs);

    for (size_t k = 0; k < g->n_node; k++) {
        const Onnx__NodeProto *n = g->node[k];
        pf_onnx_node *v = &nodes[k];
        node_desc(nd, sizeof nd, (int)k, v->name, v->op_type);
        v->domain = norm_domain(n->domain);
        v->opset = 0;
        for (size_t i = 0; i < m->n_opsets; i++)
            if (!strcmp(m->opsets[i].domain, v->domain)) v->opset = m->opsets[i].version;
        if (!v->opset)
            return fail(r, PF_ERR_FORMAT, "%s is in domain '%.100s', which the model does not "
                        "import", nd, v->domain);
        v->n_inputs = n->n_input;
        v->inputs = (const char *const *)n->input;
        v->n_outputs = n->n_output;
        v->outputs = (const char *const *)n->output;

        v->attrs = attrs;
        v->n_attrs = n->n_attribute;
        for (size_t i = 0; i < n->n_attribute; i++) {
            pf_status st = check_attr(r, nd, n->attribute[i], i, &attrs[i]);
            if (st != PF_OK) return st;
            names[i] = attrs[i].name;
        }
        if (n->n_attribute > 1) {
            qsort(names, n->n_attribute, sizeof *names, cmp_str);
            for (size_t i = 1; i < n->n_attribute; i++)
                if (!strcmp(names[i - 1], names[i]))
                    return fail(r, PF_ERR_FORMAT, "%s has two attributes named '%.100s'", nd,
                                names[i]);
        }
        attrs += n->n_attribute;
        names += n->n_attribute;

        for (size_t j = 0; j < n->n_input; j++) {
            const char *in = n->input[j];
            if (!*in) continue;
            const name_entry *e = table_get(p, in, 0);
            if (e && (e->input >= 0 || e->init >= 0 || (e->node >= 0 && e->node < (int)k)))
                continue;
            if (e && e->node == (int)k)
                return fail(r, PF_ERR_FORMAT, "%s: input %zu '%.100s' is its own output", nd, j,
                            in);
            if (e && e->node > (int)k) {
                char nd2[256];
                const pf_onnx_node *w = &nodes[e->node];
                return fail(r, PF_ERR_FORMAT, "%s: input %zu '%.100s' is written by %s, which "
                            "comes later (nodes must be in topological order)", nd, j, in,
                            node_desc(nd2, sizeof nd2, e->node, w->name, w->op_type));
            }
            return fail(r, PF_ERR_FORMAT, "%s: input %zu '%.100s' is not a graph input, an "
                        "initializer or the output of an earlier node", nd, j, in);
        }
    }
    return PF_OK;
}

static pf_status check_model(const reader *r, const Onnx__ModelProto *mp, pf_onnx_model *m)
{
    pf_onnx_priv *p = r->p;
    if (!mp->has_ir_version || mp->ir_version < 1)
        return fail(r, PF_ERR_FORMAT, "has no IR version (ir_version is missing)");
    m->ir_version = mp->ir_version;
    if (mp->ir_version < 3)
        return fail(r, PF_ERR_UNSUPPORTED, "has IR version %lld: not supported (3..%d)",
                    (long long)mp->ir_version, PF_ONNX_IR_VERSION_MAX);
    if (mp->ir_version > PF_ONNX_IR_VERSION_MAX)
        return fail(r, PF_ERR_UNSUPPORTED, "has IR version %lld, newer than this reader knows "
                    "(3..%d)", (long long)mp->ir_version, PF_ONNX_IR_VERSION_MAX);
    m->producer_name = S(mp->producer_name);
    m->producer_version = S(mp->producer_version);
    pf_status st = check_opsets(r, mp, m);
    if (st != PF_OK) return st;
    if (mp->n_functions > 0)
        return fail(r, PF_ERR_UNSUPPORTED, "defines %zu model-local functions (first: "
                    "'%.100s'): model-local functions are not supported", mp->n_functions,
                    S(mp->functions[0]->name));
    const Onnx__GraphProto *g = mp->graph;
    if (!g) return fail(r, PF_ERR_FORMAT, "has no graph");
    m->graph_name = S(g->name);
    if (g->n_sparse_initializer > 0)
        return fail(r, PF_ERR_UNSUPPORTED, "has %zu sparse initializers: sparse tensors are not "
                    "supported", g->n_sparse_initializer);
    if (g->n_output == 0) return fail(r, PF_ERR_FORMAT, "the graph has no outputs");
    if (g->n_node > INT_MAX || g->n_initializer > INT_MAX || g->n_input > INT_MAX ||
        g->n_output > INT_MAX || g->n_value_info > INT_MAX)
        return fail(r, PF_ERR_FORMAT, "the graph is too large");

    /* The name table: sized for every name the graph can hold, at most half full. */
    size_t names = g->n_initializer + g->n_input + g->n_output + g->n_value_info;
    for (size_t k = 0; k < g->n_node; k++) names += g->node[k]->n_output;
    size_t cap = 16;
    while (cap < 2 * names + 16) cap *= 2;
    p->table = arena_array(p, cap, sizeof *p->table);
    if (!p->table) return fail(r, PF_ERR_NOMEM, "out of memory for %zu names", names);
    p->table_mask = cap - 1;

    pf_onnx_tensor *inits = arena_array(p, g->n_initializer, sizeof *inits);
    if (!inits) return fail(r, PF_ERR_NOMEM, "out of memory");
    m->initializers = inits;
    m->n_initializers = g->n_initializer;
    for (size_t i = 0; i < g->n_initializer; i++) {
        const Onnx__TensorProto *t = g->initializer[i];
        char what[200];
        snprintf(what, sizeof what, "initializer %zu '%.100s'", i, S(t->name));
        if (!t->name || !*t->name) return fail(r, PF_ERR_FORMAT, "initializer %zu has no name", i);
        st = tensor_view(r, t, what, 0, &inits[i]);
        if (st != PF_OK) return st;
        name_entry *e = table_get(p, t->name, 1);
        if (e->init >= 0)
            return fail(r, PF_ERR_FORMAT, "%s has the name of initializer %d", what, e->init);
        e->init = (int)i;
    }

    pf_onnx_value_info *ins = arena_array(p, g->n_input, sizeof *ins);
    pf_onnx_value_info *outs = arena_array(p, g->n_output, sizeof *outs);
    pf_onnx_value_info *vis = arena_array(p, g->n_value_info, sizeof *vis);
    if (!ins || !outs || !vis) return fail(r, PF_ERR_NOMEM, "out of memory");
    m->inputs = ins;
    m->n_inputs = g->n_input;
    m->outputs = outs;
    m->n_outputs = g->n_output;
    m->value_infos = vis;
    m->n_value_infos = g->n_value_info;
    for (size_t i = 0; i < g->n_input; i++) {
        st = value_info_view(r, g->input[i], "graph input", i, 1, &ins[i]);
        if (st != PF_OK) return st;
        name_entry *e = table_get(p, ins[i].name, 1);
        if (e->input >= 0)
            return fail(r, PF_ERR_FORMAT, "graph input %zu '%.100s' has the name of graph input "
                        "%d", i, ins[i].name, e->input);
        e->input = (int)i;
        if (e->init >= 0) {
            const pf_onnx_tensor *t = &inits[e->init];
            ins[i].is_initializer = 1;
            if (t->dtype != ins[i].dtype || (ins[i].ndim >= 0 && ins[i].ndim != t->ndim))
                return fail(r, PF_ERR_FORMAT, "graph input %zu '%.100s' is declared %s of rank "
                            "%d but its initializer is %s of rank %d", i, ins[i].name,
                            pf_onnx_dtype_name(ins[i].dtype), ins[i].ndim,
                            pf_onnx_dtype_name(t->dtype), t->ndim);
        }
    }

    st = check_nodes(r, g, m);
    if (st != PF_OK) return st;

    for (size_t i = 0; i < g->n_output; i++) {
        st = value_info_view(r, g->output[i], "graph output", i, 1, &outs[i]);
        if (st != PF_OK) return st;
        name_entry *e = table_get(p, outs[i].name, 1);
        if (e->input < 0 && e->init < 0 && e->node < 0)
            return fail(r, PF_ERR_FORMAT, "graph output %zu '%.100s' is not written by any node "
                        "(nor a graph input or initializer)", i, outs[i].name);
        if (e->output >= 0)
            return fail(r, PF_ERR_FORMAT, "graph output %zu '%.100s' is also graph output %d", i,
                        outs[i].name, e->output);
        e->output = (int)i;
    }
    for (size_t i = 0; i < g->n_value_info; i++) {
        st = value_info_view(r, g->value_info[i], "value_info", i, 0, &vis[i]);
        if (st != PF_OK) return st;
        name_entry *e = table_get(p, vis[i].name, 1);
        if (e->vinfo < 0) e->vinfo = (int)i;
    }
    return PF_OK;
}

void pf_onnx_close(pf_onnx_model **pm)
{
    if (!pm || !*pm) return;
    pf_onnx_model *m = *pm;
    pf_onnx_priv *p = m->priv;
    if (p) {
        if (p->msg) protobuf_c_message_free_unpacked(&p->msg->base, &p->pba);
        arena_free(p);
        free(p);
    }
    free(m);
    *pm = NULL;
}

pf_status pf_onnx_open_memory(const void *data, size_t size, const char *name,
                              pf_onnx_model **out)
{
    PF_CHECK_ARG(out, "pf_onnx_open_memory", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(data || !size, "pf_onnx_open_memory", "data is NULL");
    if (!name) name = "(memory)";
    if (size > PF_ONNX_MAX_FILE_BYTES)
        return pf_set_error(PF_ERR_UNSUPPORTED, "ONNX model '%.200s': %zu bytes, more than the "
                            "%zu a protobuf may hold", name, size, PF_ONNX_MAX_FILE_BYTES);
    pf_onnx_model *m = calloc(1, sizeof *m);
    pf_onnx_priv *p = calloc(1, sizeof *p);
    if (!m || !p) {
        free(m);
        free(p);
        return pf_set_error(PF_ERR_NOMEM, "pf_onnx_open_memory: out of memory");
    }
    m->priv = p;
    reader r = {"ONNX model", name, p};
    size_t nl = strlen(name);
    char *nm = arena_strndup(p, name, nl);
    pf_status st = nm ? PF_OK : fail(&r, PF_ERR_NOMEM, "out of memory");
    if (st == PF_OK) {
        m->name = r.name = nm;
        if (size == 0) st = fail(&r, PF_ERR_FORMAT, "is empty (0 bytes)");
    }
    ProtobufCMessage *msg = NULL;
    if (st == PF_OK) st = decode(&r, &onnx__model_proto__descriptor, data, size, &msg);
    if (st == PF_OK) {
        p->msg = (Onnx__ModelProto *)msg;
        st = check_model(&r, p->msg, m);
    }
    if (st != PF_OK) {
        pf_onnx_close(&m);
        return st;
    }
    *out = m;
    return PF_OK;
}

/* Reads a whole regular file of at most `limit` bytes into malloc'd memory. */
static pf_status read_file(const char *fn, const char *path, size_t limit, void **data,
                           size_t *size)
{
    *data = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return pf_set_error(PF_ERR_IO, "%s: cannot open '%.200s': %s", fn, path,
                            strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return pf_set_error(PF_ERR_IO, "%s: '%.200s' is not a regular file", fn, path);
    }
    if ((uint64_t)sb.st_size > limit) {
        fclose(f);
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: '%.200s' has %lld bytes, more than the %zu "
                            "a protobuf may hold", fn, path, (long long)sb.st_size, limit);
    }
    size_t n = (size_t)sb.st_size;
    unsigned char *buf = malloc(n ? n : 1);
    if (!buf) {
        fclose(f);
        return pf_set_error(PF_ERR_NOMEM, "%s: out of memory for the %zu bytes of '%.200s'", fn,
                            n, path);
    }
    size_t got = n ? fread(buf, 1, n, f) : 0;
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (got != n) {
        free(buf);
        return pf_set_error(PF_ERR_IO, "%s: read %zu of %zu bytes of '%.200s'%s%s", fn, got, n,
                            path, err ? ": " : "", err ? strerror(err) : "");
    }
    *data = buf;
    *size = n;
    return PF_OK;
}

pf_status pf_onnx_open(const char *path, pf_onnx_model **out)
{
    PF_CHECK_ARG(out, "pf_onnx_open", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(path, "pf_onnx_open", "path is NULL");
    void *data;
    size_t size;
    pf_status st = read_file("pf_onnx_open", path, PF_ONNX_MAX_FILE_BYTES, &data, &size);
    if (st != PF_OK) return st;
    /* protobuf-c copies every field it keeps, so the bytes go right after. */
    st = pf_onnx_open_memory(data, size, path, out);
    free(data);
    return st;
}

pf_status pf_onnx_read_tensor_memory(const void *data, size_t size, const char *name,
                                     pf_onnx_tensor_data *out)
{
    PF_CHECK_ARG(out, "pf_onnx_read_tensor_memory", "out is NULL");
    memset(out, 0, sizeof *out);
    PF_CHECK_ARG(data || !size, "pf_onnx_read_tensor_memory", "data is NULL");
    if (!name) name = "(memory)";
    pf_onnx_priv p = {0};
    reader r = {"ONNX tensor", name, &p};
    if (size > PF_ONNX_MAX_FILE_BYTES)
        return fail(&r, PF_ERR_UNSUPPORTED, "%zu bytes, more than the %zu a protobuf may hold",
                    size, PF_ONNX_MAX_FILE_BYTES);
    ProtobufCMessage *msg = NULL;
    pf_status st = decode(&r, &onnx__tensor_proto__descriptor, data, size, &msg);
    pf_onnx_tensor v;
    if (st == PF_OK) st = tensor_view(&r, (const Onnx__TensorProto *)msg, "the tensor", 1, &v);
    if (st == PF_OK) {
        out->name = strdup(v.name);
        out->dims = v.ndim ? malloc((size_t)v.ndim * sizeof *out->dims) : NULL;
        out->data = v.nbytes ? malloc(v.nbytes) : NULL;
        if (!out->name || (v.ndim && !out->dims) || (v.nbytes && !out->data)) {
            pf_onnx_tensor_data_free(out);
            st = fail(&r, PF_ERR_NOMEM, "out of memory for %zu bytes", v.nbytes);
        } else {
            out->dtype = v.dtype;
            out->ndim = v.ndim;
            if (v.ndim) memcpy(out->dims, v.dims, (size_t)v.ndim * sizeof *out->dims);
            out->numel = v.numel;
            out->nbytes = v.nbytes;
            if (v.nbytes) memcpy(out->data, v.data, v.nbytes);
        }
    }
    if (msg) protobuf_c_message_free_unpacked(msg, &p.pba);
    arena_free(&p);
    return st;
}

pf_status pf_onnx_read_tensor_file(const char *path, pf_onnx_tensor_data *out)
{
    PF_CHECK_ARG(out, "pf_onnx_read_tensor_file", "out is NULL");
    memset(out, 0, sizeof *out);
    PF_CHECK_ARG(path, "pf_onnx_read_tensor_file", "path is NULL");
    void *data;
    size_t size;
    pf_status st = read_file("pf_onnx_read_tensor_file", path, PF_ONNX_MAX_FILE_BYTES, &data,
                             &size);
    if (st != PF_OK) return st;
    st = pf_onnx_read_tensor_memory(data, size, path, out);
    free(data);
    return st;
}

#endif /* PF_HAVE_ONNX */
