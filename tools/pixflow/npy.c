/* NumPy .npy reading and writing: see npy.h.
 *
 * The header is a Python dict literal; this parser accepts exactly the
 * subset NumPy writes (strings in single or double quotes, True/False,
 * tuples of non-negative integers) with any whitespace, and refuses the
 * rest. Every read goes through a cursor bounded by the header length. */
#include "npy.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pixflow/io.h"

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

static const struct {
    const char *descr, *name;
    size_t size;
} npy_types[NPY_DTYPE_COUNT] = {
    [NPY_F4] = {"<f4", "f32", 4}, [NPY_F2] = {"<f2", "f16", 2}, [NPY_I4] = {"<i4", "i32", 4},
    [NPY_I8] = {"<i8", "i64", 8}, [NPY_U1] = {"|u1", "u8", 1},  [NPY_B1] = {"|b1", "bool", 1},
};

size_t npy_dtype_size(npy_dtype t) { return t < NPY_DTYPE_COUNT ? npy_types[t].size : 0; }
const char *npy_dtype_descr(npy_dtype t) { return t < NPY_DTYPE_COUNT ? npy_types[t].descr : "?"; }
const char *npy_dtype_name(npy_dtype t) { return t < NPY_DTYPE_COUNT ? npy_types[t].name : "?"; }

static bool fail(char *err, size_t n, const char *fmt, ...)
{
    if (err && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, n, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* --- header dictionary ------------------------------------------------------------ */

typedef struct cursor {
    const char *p, *end;
} cursor;

static void skip_ws(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static bool eat(cursor *c, char ch)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* A quoted string into buf (no escapes: NumPy never writes them here). */
static bool parse_string(cursor *c, char *buf, size_t size)
{
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return false;
    char q = *c->p++;
    size_t k = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || k + 1 >= size) return false;
        buf[k++] = *c->p++;
    }
    if (c->p >= c->end) return false;
    c->p++;
    buf[k] = '\0';
    return true;
}

static bool parse_word(cursor *c, const char *w)
{
    skip_ws(c);
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n)) return false;
    c->p += n;
    return true;
}

static bool parse_shape(cursor *c, int *ndim, int64_t *shape, const char *name, char *err,
                        size_t err_size)
{
    if (!eat(c, '(')) return fail(err, err_size, "%s: header: 'shape' is not a tuple", name);
    *ndim = 0;
    for (;;) {
        if (eat(c, ')')) return true;
        skip_ws(c);
        if (c->p >= c->end || *c->p < '0' || *c->p > '9')
            return fail(err, err_size, "%s: header: 'shape' holds something other than "
                        "non-negative integers", name);
        int64_t v = 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            if (v > (INT64_MAX - 9) / 10)
                return fail(err, err_size, "%s: header: a 'shape' dim is too large", name);
            v = v * 10 + (*c->p++ - '0');
        }
        if (c->p < c->end && *c->p == 'L') c->p++; /* Python 2 longs */
        if (*ndim >= NPY_MAX_DIMS)
            return fail(err, err_size, "%s: more than %d dimensions", name, NPY_MAX_DIMS);
        shape[(*ndim)++] = v;
        if (eat(c, ',')) continue;
        if (eat(c, ')')) return true;
        return fail(err, err_size, "%s: header: malformed 'shape' tuple", name);
    }
}

static bool parse_descr(const char *d, npy_dtype *out, const char *name, char *err,
                        size_t err_size)
{
    size_t n = strlen(d);
    if (n < 2) return fail(err, err_size, "%s: header: bad 'descr' '%s'", name, d);
    char order = d[0];
    const char *code = d + 1;
    if (order != '<' && order != '>' && order != '|' && order != '=')
        return fail(err, err_size, "%s: unsupported dtype '%s' (expected one of <f4 <f2 <i4 <i8 "
                    "|u1 |b1)", name, d);
    static const struct {
        const char *code;
        npy_dtype t;
    } codes[] = {{"f4", NPY_F4}, {"f2", NPY_F2}, {"i4", NPY_I4}, {"i8", NPY_I8},
                 {"u1", NPY_U1}, {"b1", NPY_B1}};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        if (strcmp(code, codes[i].code)) continue;
        if (order == '>' && npy_types[codes[i].t].size > 1)
            return fail(err, err_size, "%s: big-endian data ('%s') is not supported; save it "
                        "little-endian (arr.astype('<%s'))", name, d, code);
        *out = codes[i].t;
        return true;
    }
    return fail(err, err_size, "%s: unsupported dtype '%s' (expected one of <f4 <f2 <i4 <i8 |u1 "
                "|b1)", name, d);
}

static bool parse_header(const char *h, size_t len, npy_array *a, const char *name, char *err,
                         size_t err_size)
{
    if (len == 0 || h[len - 1] != '\n')
        return fail(err, err_size, "%s: header does not end with a newline", name);
    cursor c = {h, h + len};
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    if (!eat(&c, '{')) return fail(err, err_size, "%s: header is not a dictionary", name);
    for (;;) {
        if (eat(&c, '}')) break;
        char key[32];
        if (!parse_string(&c, key, sizeof key) || !eat(&c, ':'))
            return fail(err, err_size, "%s: header: malformed dictionary", name);
        if (!strcmp(key, "descr")) {
            char d[32];
            if (seen_descr) return fail(err, err_size, "%s: header: 'descr' given twice", name);
            if (!parse_string(&c, d, sizeof d))
                return fail(err, err_size, "%s: header: 'descr' is not a simple dtype string "
                            "(structured arrays are not supported)", name);
            if (!parse_descr(d, &a->dtype, name, err, err_size)) return false;
            seen_descr = true;
        } else if (!strcmp(key, "fortran_order")) {
            if (seen_fortran) return fail(err, err_size, "%s: header: 'fortran_order' given twice", name);
            if (parse_word(&c, "True"))
                return fail(err, err_size, "%s: fortran_order is True; only C-order arrays are "
                            "supported (save np.ascontiguousarray(a))", name);
            if (!parse_word(&c, "False"))
                return fail(err, err_size, "%s: header: 'fortran_order' is not True/False", name);
            seen_fortran = true;
        } else if (!strcmp(key, "shape")) {
            if (seen_shape) return fail(err, err_size, "%s: header: 'shape' given twice", name);
            if (!parse_shape(&c, &a->ndim, a->shape, name, err, err_size)) return false;
            seen_shape = true;
        } else {
            return fail(err, err_size, "%s: header: unexpected key '%s'", name, key);
        }
        if (eat(&c, ',')) continue;
        if (eat(&c, '}')) break;
        return fail(err, err_size, "%s: header: malformed dictionary", name);
    }
    skip_ws(&c);
    if (c.p != c.end) return fail(err, err_size, "%s: header: trailing bytes after the dictionary", name);
    if (!seen_descr || !seen_fortran || !seen_shape)
        return fail(err, err_size, "%s: header lacks '%s'", name,
                    !seen_descr ? "descr" : !seen_fortran ? "fortran_order" : "shape");
    return true;
}

/* --- reading ---------------------------------------------------------------------- */

bool npy_read_memory(const void *data, size_t size, const char *name, npy_array *out, char *err,
                     size_t err_size)
{
    const unsigned char *b = data;
    if (!name) name = "<memory>";
    memset(out, 0, sizeof *out);
    if (!data || size < 10 || memcmp(b, npy_magic, sizeof npy_magic))
        return fail(err, err_size, "%s: not a .npy file (no \\x93NUMPY magic)", name);
    unsigned major = b[6], minor = b[7];
    size_t hlen, pre;
    if (major == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        pre = 10;
    } else if (major == 2 || major == 3) {
        if (size < 12) return fail(err, err_size, "%s: truncated header", name);
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        pre = 12;
    } else {
        return fail(err, err_size, "%s: unsupported .npy version %u.%u (1.0, 2.0, 3.0 known)",
                    name, major, minor);
    }
    if (minor != 0)
        return fail(err, err_size, "%s: unsupported .npy version %u.%u", name, major, minor);
    if (hlen > size - pre)
        return fail(err, err_size, "%s: header of %zu bytes runs past the end of the file "
                    "(%zu bytes)", name, hlen, size);
    npy_array a;
    memset(&a, 0, sizeof a);
    if (!parse_header((const char *)b + pre, hlen, &a, name, err, err_size)) return false;
    int64_t n = 1;
    for (int i = 0; i < a.ndim; i++) {
        if (a.shape[i] && n > INT64_MAX / a.shape[i])
            return fail(err, err_size, "%s: the shape's element count overflows", name);
        n *= a.shape[i];
    }
    size_t isz = npy_dtype_size(a.dtype);
    if ((uint64_t)n > SIZE_MAX / isz)
        return fail(err, err_size, "%s: the shape's byte size overflows", name);
    size_t need = (size_t)n * isz, have = size - pre - hlen;
    if (have != need)
        return fail(err, err_size, "%s: the shape needs %zu data bytes but the file has %zu "
                    "after its header", name, need, have);
    a.numel = n;
    a.nbytes = need;
    if (need) {
        a.data = malloc(need);
        if (!a.data) return fail(err, err_size, "%s: out of memory (%zu bytes)", name, need);
        memcpy(a.data, b + pre + hlen, need);
    }
    if (a.dtype == NPY_B1)
        for (size_t i = 0; i < need; i++)
            if (((unsigned char *)a.data)[i] > 1) {
                unsigned v = ((unsigned char *)a.data)[i];
                free(a.data);
                return fail(err, err_size, "%s: bool element %zu is %u (not 0 or 1)", name, i, v);
            }
    *out = a;
    return true;
}

bool npy_read_file(const char *path, npy_array *out, char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return fail(err, err_size, "%s: cannot open: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return fail(err, err_size, "%s: cannot seek", path);
    }
    long len = ftell(f);
    rewind(f);
    if (len < 0) {
        fclose(f);
        return fail(err, err_size, "%s: cannot tell its size", path);
    }
    void *buf = malloc(len ? (size_t)len : 1);
    if (!buf) {
        fclose(f);
        return fail(err, err_size, "%s: out of memory (%ld bytes)", path, len);
    }
    size_t got = fread(buf, 1, (size_t)len, f);
    fclose(f);
    if (got != (size_t)len) {
        free(buf);
        return fail(err, err_size, "%s: read error", path);
    }
    bool ok = npy_read_memory(buf, (size_t)len, path, out, err, err_size);
    free(buf);
    return ok;
}

void npy_free(npy_array *a)
{
    if (!a) return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

/* --- writing ---------------------------------------------------------------------- */

bool npy_write_file(const char *path, npy_dtype dtype, int ndim, const int64_t *shape,
                    const void *data, char *err, size_t err_size)
{
    if (dtype >= NPY_DTYPE_COUNT || ndim < 0 || ndim > NPY_MAX_DIMS)
        return fail(err, err_size, "%s: bad dtype or rank", path);
    char dict[512];
    size_t k = (size_t)snprintf(dict, sizeof dict,
                                "{'descr': '%s', 'fortran_order': False, 'shape': (",
                                npy_dtype_descr(dtype));
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return fail(err, err_size, "%s: negative dim", path);
        n *= shape[i];
        k += (size_t)snprintf(dict + k, sizeof dict - k, "%lld%s", (long long)shape[i],
                              ndim == 1 ? "," : i + 1 < ndim ? ", " : "");
    }
    k += (size_t)snprintf(dict + k, sizeof dict - k, "), }");
    /* preamble (10 bytes for v1) + dict + padding + '\n' = multiple of 64 */
    size_t total = 10 + k + 1;
    size_t padded = (total + 63) & ~(size_t)63;
    size_t hlen = padded - 10;
    unsigned char pre[10];
    memcpy(pre, npy_magic, 6);
    pre[6] = 1;
    pre[7] = 0;
    pre[8] = (unsigned char)(hlen & 0xff);
    pre[9] = (unsigned char)(hlen >> 8);
    /* pf_output: a temporary beside path, renamed over it when complete. */
    pf_output *o = NULL;
    if (pf_output_open(path, 0, &o) != PF_OK) return fail(err, err_size, "%s", pf_last_error());
    FILE *f = pf_output_file(o);
    bool ok = fwrite(pre, 1, sizeof pre, f) == sizeof pre && fwrite(dict, 1, k, f) == k;
    for (size_t i = k; ok && i + 1 < hlen; i++) ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    size_t nbytes = (size_t)n * npy_dtype_size(dtype);
    if (ok && nbytes) ok = fwrite(data, 1, nbytes, f) == nbytes;
    if (!ok) {
        int e = errno;
        pf_output_abort(&o);
        return fail(err, err_size, "%s: write error: %s", path, strerror(e));
    }
    if (pf_output_commit(&o) != PF_OK) return fail(err, err_size, "%s", pf_last_error());
    return true;
}
