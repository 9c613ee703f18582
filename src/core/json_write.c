/* The JSON writer (pixflow/core.h, core/json.h): the only code in pixflow
 * that turns values into JSON text. The CLI's reports, the tracer's files and
 * the queue's entries all come through here, so escaping, number formatting
 * and the non-finite rule are the same everywhere.
 *
 * Design: every byte goes into a pf_sbuf. A memory writer's buffer is the
 * result; a file writer's is a 64 KiB staging buffer written out when full
 * and at finish/release, so a trace of millions of events costs a few
 * thousand fwrite calls. The hot path (room(), put(), plain strings and keys)
 * is one capacity check and a memcpy; the NUL terminator is written only when
 * the text is handed out (pf_json_writer_data, release, finish). Integers are
 * formatted by hand, two digits per division (numbers are most of a trace's
 * bytes; printf would dominate); doubles go through snprintf. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/json.h"

#define FLUSH_AT ((size_t)1 << 16)

/* Growing string ------------------------------------------------------------------ */

static bool reserve(pf_sbuf *b, size_t extra)
{
    if (b->failed) return false;
    if (b->len + extra + 1 <= b->cap) return true;
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->len + extra + 1) nc *= 2;
    char *nd = realloc(b->data, nc);
    if (!nd) {
        b->failed = true;
        return false;
    }
    b->data = nd;
    b->cap = nc;
    return true;
}

void pf_sbuf_append(pf_sbuf *b, const char *s, size_t n)
{
    if (!reserve(b, n)) return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void pf_sbuf_puts(pf_sbuf *b, const char *s) { pf_sbuf_append(b, s, strlen(s)); }

void pf_sbuf_printf(pf_sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        pf_sbuf_append(b, small, (size_t)n);
        return;
    }
    if (!reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void pf_sbuf_free(pf_sbuf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

/* Escaping ------------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one
 * (overlong forms, surrogates, code points above U+10FFFF, a cut sequence).
 * A NUL is never a continuation byte, so this never reads past the end. */
static int utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return (s[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        if (s[1] < lo || s[1] > hi) return 0;
        return (s[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        if (s[1] < lo || s[1] > hi) return 0;
        return (s[2] & 0xC0) == 0x80 && (s[3] & 0xC0) == 0x80 ? 4 : 0;
    }
    return 0;
}

/* The string literal, quotes included. Runs of plain bytes are appended in
 * one piece. DEL is escaped too: Perfetto's tokenizer rejects raw control
 * characters. */
void pf_sbuf_json_string(pf_sbuf *b, const char *str)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    pf_sbuf_append(b, "\"", 1);
    const unsigned char *run = s;
    while (*s) {
        unsigned c = *s;
        if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
            s++;
            continue;
        }
        int n = c < 0x80 ? 1 : utf8_len(s);
        if (n > 1) {
            s += n;
            continue;
        }
        pf_sbuf_append(b, (const char *)run, (size_t)(s - run));
        char e[6] = {'\\', (char)c, 0, 0, 0, 0};
        size_t len = 2;
        switch (c) {
        case '"': case '\\': break;
        case '\b': e[1] = 'b'; break;
        case '\f': e[1] = 'f'; break;
        case '\n': e[1] = 'n'; break;
        case '\r': e[1] = 'r'; break;
        case '\t': e[1] = 't'; break;
        default:
            if (n == 0) { /* not UTF-8: U+FFFD, so the text always parses */
                memcpy(e, "\\ufffd", 6);
            } else {
                memcpy(e, "\\u00", 4);
                e[4] = hex[c >> 4];
                e[5] = hex[c & 15];
            }
            len = 6;
            break;
        }
        pf_sbuf_append(b, e, len);
        s++;
        run = s;
    }
    pf_sbuf_append(b, (const char *)run, (size_t)(s - run));
    pf_sbuf_append(b, "\"", 1);
}

/* The writer -------------------------------------------------------------------------- */

pf_json_writer_params pf_json_writer_params_default(void)
{
    pf_json_writer_params p;
    memset(&p, 0, sizeof p);
    return p;
}

static void fail(pf_json_writer *w, pf_status st)
{
    if (w->error == PF_OK) w->error = st;
}

static void flush_file(pf_json_writer *w)
{
    pf_sbuf *b = w->out;
    if (!w->file || !b->len) return;
    if (fwrite(b->data, 1, b->len, w->file) != b->len && w->error == PF_OK) {
        w->io_errno = errno ? errno : EIO;
        fail(w, PF_ERR_IO);
    }
    b->len = 0;
    b->data[0] = '\0';
}

/* Room for n more bytes (and a NUL) at w->out->data + len: a file writer
 * flushes its stage first when full. False after an allocation failed. */
static inline bool room(pf_json_writer *w, size_t n)
{
    pf_sbuf *b = w->out;
    if (b->len + n + 1 <= b->cap) return true;
    if (w->file && b->len) {
        flush_file(w);
        if (b->len + n + 1 <= b->cap) return true;
    }
    return reserve(b, n);
}

static inline void put(pf_json_writer *w, const char *s, size_t n)
{
    if (!room(w, n)) return;
    memcpy(w->out->data + w->out->len, s, n);
    w->out->len += n;
}

/* A string literal; the common case (printable ASCII without quotes or
 * backslashes) in one copy, `suffix` (a key's ":" or ": ") included. */
static void put_string(pf_json_writer *w, const char *str, const char *suffix, size_t slen)
{
    const unsigned char *u = (const unsigned char *)str;
    size_t n = 0;
    while (u[n] >= 0x20 && u[n] < 0x7F && u[n] != '"' && u[n] != '\\') n++;
    if (u[n] == '\0') {
        if (!room(w, n + 2 + slen)) return;
        char *d = w->out->data + w->out->len;
        d[0] = '"';
        memcpy(d + 1, str, n);
        d[n + 1] = '"';
        memcpy(d + n + 2, suffix, slen);
        w->out->len += n + 2 + slen;
        return;
    }
    pf_sbuf_json_string(w->out, str);
    put(w, suffix, slen);
}

static void terminate(pf_json_writer *w)
{
    if (w->out->data && !w->out->failed) w->out->data[w->out->len] = '\0';
}

void pf_json_writer_text(pf_json_writer *w, const char *s, size_t n) { put(w, s, n); }

void pf_json_writer_init(pf_json_writer *w, FILE *file, pf_sbuf *dst, bool compact, int digits)
{
    memset(w, 0, sizeof *w);
    w->file = file;
    w->out = file || !dst ? &w->own : dst;
    w->compact = compact;
    w->digits = digits;
    /* The whole stage at once: flushes happen when it is full. */
    if (file) reserve(&w->own, FLUSH_AT);
}

void pf_json_writer_release(pf_json_writer *w)
{
    if (!w) return;
    flush_file(w);
    terminate(w);
    pf_sbuf_free(&w->own);
}

pf_status pf_json_writer_create(const pf_json_writer_params *p, pf_json_writer **out)
{
    PF_CHECK_ARG(out, "pf_json_writer_create", "out is NULL");
    *out = NULL;
    pf_json_writer_params d = pf_json_writer_params_default();
    if (!p) p = &d;
    if (p->double_digits < 0 || p->double_digits > 17)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_json_writer_create: double_digits %d is outside 0..17",
                            p->double_digits);
    pf_json_writer *w = malloc(sizeof *w);
    if (!w) return pf_set_error(PF_ERR_NOMEM, "pf_json_writer_create: out of host memory");
    pf_json_writer_init(w, p->file, NULL, p->compact, p->double_digits);
    *out = w;
    return PF_OK;
}

void pf_json_writer_destroy(pf_json_writer **w)
{
    if (!w || !*w) return;
    pf_json_writer_release(*w);
    free(*w);
    *w = NULL;
}

static void indent(pf_json_writer *w)
{
    static const char spaces[] = "                                                                ";
    size_t n = 2 * (size_t)w->depth;
    while (n) {
        size_t k = n < sizeof spaces - 1 ? n : sizeof spaces - 1;
        put(w, spaces, k);
        n -= k;
    }
}

/* Separator (and, pretty, newline and indentation) before an item, then its key. */
static void item(pf_json_writer *w, const char *key)
{
    if (w->depth > 0) {
        /* An object's items need a key, an array's must not have one. */
        if ((key != NULL) != w->is_obj[w->depth]) fail(w, PF_ERR_INVALID);
        if (w->has_items[w->depth]) put(w, ",", 1);
        w->has_items[w->depth] = true;
        if (!w->compact) {
            put(w, "\n", 1);
            indent(w);
        }
    }
    if (key) put_string(w, key, w->compact ? ":" : ": ", w->compact ? 1 : 2);
}

static void open_(pf_json_writer *w, const char *key, char c)
{
    item(w, key);
    put(w, &c, 1);
    if (w->depth == PF_JSON_WRITER_MAX_DEPTH) {
        fail(w, PF_ERR_INVALID);
        return;
    }
    w->depth++;
    w->has_items[w->depth] = false;
    w->is_obj[w->depth] = c == '{';
}

static void close_(pf_json_writer *w, char c)
{
    if (w->depth == 0) {
        fail(w, PF_ERR_INVALID);
        return;
    }
    if (w->is_obj[w->depth] != (c == '}')) fail(w, PF_ERR_INVALID); /* "[}" or "{]" */
    bool had = w->has_items[w->depth];
    w->depth--;
    if (had && !w->compact) {
        put(w, "\n", 1);
        indent(w);
    }
    put(w, &c, 1);
}

void pf_json_writer_object_begin(pf_json_writer *w, const char *key) { open_(w, key, '{'); }
void pf_json_writer_object_end(pf_json_writer *w) { close_(w, '}'); }
void pf_json_writer_array_begin(pf_json_writer *w, const char *key) { open_(w, key, '['); }
void pf_json_writer_array_end(pf_json_writer *w) { close_(w, ']'); }

void pf_json_writer_string(pf_json_writer *w, const char *key, const char *value)
{
    item(w, key);
    if (value) put_string(w, value, "", 0);
    else put(w, "null", 4);
}

/* Decimal digits of v, two per division. */
static void put_u64(pf_json_writer *w, uint64_t v)
{
    static const char pairs[] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    char tmp[24];
    int n = 24;
    while (v >= 100) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        tmp[--n] = pairs[2 * r + 1];
        tmp[--n] = pairs[2 * r];
    }
    if (v >= 10) {
        tmp[--n] = pairs[2 * v + 1];
        tmp[--n] = pairs[2 * v];
    } else {
        tmp[--n] = (char)('0' + v);
    }
    put(w, tmp + n, (size_t)(24 - n));
}

void pf_json_writer_int(pf_json_writer *w, const char *key, long long value)
{
    item(w, key);
    if (value < 0) {
        put(w, "-", 1);
        put_u64(w, (uint64_t)0 - (uint64_t)value);
    } else {
        put_u64(w, (uint64_t)value);
    }
}

void pf_json_writer_uint(pf_json_writer *w, const char *key, unsigned long long value)
{
    item(w, key);
    put_u64(w, value);
}

void pf_json_writer_decimal(pf_json_writer *w, const char *key, int64_t value, int decimals)
{
    item(w, key);
    if (decimals < 0) decimals = 0;
    if (decimals > 9) decimals = 9;
    uint64_t a = value < 0 ? (uint64_t)0 - (uint64_t)value : (uint64_t)value;
    if (value < 0) put(w, "-", 1);
    uint64_t scale = 1;
    for (int i = 0; i < decimals; i++) scale *= 10;
    put_u64(w, a / scale);
    if (!decimals) return;
    char frac[10];
    frac[0] = '.';
    uint64_t f = a % scale;
    for (int i = decimals; i >= 1; i--) {
        frac[i] = (char)('0' + f % 10);
        f /= 10;
    }
    put(w, frac, (size_t)decimals + 1);
}

void pf_json_writer_double(pf_json_writer *w, const char *key, double value)
{
    item(w, key);
    if (!isfinite(value)) {
        put(w, "null", 4);
        return;
    }
    char tmp[40];
    int n;
    if (w->digits > 0) {
        n = snprintf(tmp, sizeof tmp, "%.*g", w->digits, value);
    } else {
        /* The shorter of %.15g and %.17g that reads back as the same double. */
        n = snprintf(tmp, sizeof tmp, "%.15g", value);
        if (strtod(tmp, NULL) != value) n = snprintf(tmp, sizeof tmp, "%.17g", value);
    }
    put(w, tmp, (size_t)n);
}

void pf_json_writer_bool(pf_json_writer *w, const char *key, bool value)
{
    item(w, key);
    if (value) put(w, "true", 4);
    else put(w, "false", 5);
}

void pf_json_writer_null(pf_json_writer *w, const char *key)
{
    item(w, key);
    put(w, "null", 4);
}

pf_status pf_json_writer_finish(pf_json_writer *w)
{
    PF_CHECK_ARG(w, "pf_json_writer_finish", "w is NULL");
    if (w->depth != 0) fail(w, PF_ERR_INVALID);
    if (!w->compact) put(w, "\n", 1);
    flush_file(w);
    terminate(w);
    if (w->file && fflush(w->file) != 0 && w->error == PF_OK) {
        w->io_errno = errno ? errno : EIO;
        fail(w, PF_ERR_IO);
    }
    if (w->out->failed) fail(w, PF_ERR_NOMEM);
    switch (w->error) {
    case PF_OK: return PF_OK;
    case PF_ERR_IO:
        return pf_set_error(PF_ERR_IO, "JSON writer: writing failed: %s", strerror(w->io_errno));
    case PF_ERR_NOMEM: return pf_set_error(PF_ERR_NOMEM, "JSON writer: out of host memory");
    default:
        return pf_set_error(w->error, "JSON writer: malformed nesting (more than %d levels, an "
                                      "end without its begin or of the other kind, a key in an "
                                      "array or none in an object)",
                            PF_JSON_WRITER_MAX_DEPTH);
    }
}

const char *pf_json_writer_data(const pf_json_writer *w, size_t *len)
{
    if (len) *len = 0;
    if (!w || w->out->failed) return NULL;
    if (w->file || !w->out->data) return "";
    w->out->data[w->out->len] = '\0'; /* room() always leaves space for it */
    if (len) *len = w->out->len;
    return w->out->data;
}

void pf_json_write_string(FILE *f, const char *s)
{
    pf_sbuf b = {0};
    pf_sbuf_json_string(&b, s);
    if (!b.failed && b.len) fwrite(b.data, 1, b.len, f);
    pf_sbuf_free(&b);
}
