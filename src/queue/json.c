/* A strict RFC 8259 parser into a small tree (json.h says what is refused
 * and why). Recursive descent with an explicit depth bound, so hostile
 * nesting costs at most PF_JSON_MAX_DEPTH frames; every allocation is
 * checked and a failure unwinds through pf_json_free. */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"

typedef struct parser {
    const unsigned char *p, *end, *start;
    const char *what;
    int depth;
    pf_status st; /* the first error; later ones keep it */
} parser;

static pf_status fail(parser *ps, const char *msg)
{
    if (ps->st == PF_OK)
        ps->st = pf_set_error(PF_ERR_FORMAT, "%s: byte %zu: %s", ps->what,
                              (size_t)(ps->p - ps->start), msg);
    return ps->st;
}

static pf_status nomem(parser *ps)
{
    if (ps->st == PF_OK)
        ps->st = pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", ps->what);
    return ps->st;
}

static void skip_ws(parser *ps)
{
    while (ps->p < ps->end &&
           (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

/* Length of the UTF-8 sequence at s (max n bytes), 0 when invalid: no
 * overlong forms, no surrogates (U+D800..DFFF), nothing above U+10FFFF. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else return 0;
    if (n < len) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return len;
}

bool pf_utf8_valid(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t l = utf8_seq(u + i, n - i);
        if (!l) return false;
        i += l;
    }
    return true;
}

static int hex4(const unsigned char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int c = p[i], d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return -1;
        v = v * 16 + d;
    }
    return v;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* At the opening quote. The decoded string is never longer than its source
 * (an escape of 6 or 12 bytes gives at most 4), so one allocation of the
 * source length suffices. */
static pf_status parse_string(parser *ps, char **out, size_t *out_len)
{
    ps->p++;
    const unsigned char *q = ps->p;
    while (q < ps->end && *q != '"') q += (*q == '\\' && q + 1 < ps->end) ? 2 : 1;
    if (q >= ps->end) return fail(ps, "unterminated string");
    char *s = malloc((size_t)(q - ps->p) + 1);
    if (!s) return nomem(ps);
    size_t n = 0;
    while (*ps->p != '"') {
        unsigned c = *ps->p;
        if (c < 0x20) {
            free(s);
            return fail(ps, "control character in a string (escape it)");
        }
        if (c != '\\') {
            size_t l = utf8_seq(ps->p, (size_t)(ps->end - ps->p));
            if (!l) {
                free(s);
                return fail(ps, "invalid UTF-8 in a string");
            }
            memcpy(s + n, ps->p, l);
            n += l;
            ps->p += l;
            continue;
        }
        unsigned char e = ps->p[1];
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            static const char map[] = "\"\\/\b\f\n\r\t";
            s[n++] = map[simple - "\"\\/bfnrt"];
            ps->p += 2;
            continue;
        }
        if (e != 'u') {
            free(s);
            return fail(ps, "unknown escape in a string");
        }
        int cp = ps->end - ps->p >= 6 ? hex4(ps->p + 2) : -1;
        if (cp < 0) {
            free(s);
            return fail(ps, "\\u needs 4 hex digits");
        }
        ps->p += 6;
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
            free(s);
            return fail(ps, "unpaired low surrogate \\u escape");
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            int lo = ps->end - ps->p >= 6 && ps->p[0] == '\\' && ps->p[1] == 'u'
                         ? hex4(ps->p + 2) : -1;
            if (lo < 0xDC00 || lo > 0xDFFF) {
                free(s);
                return fail(ps, "high surrogate \\u escape without its low surrogate");
            }
            ps->p += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        if (cp == 0) {
            free(s);
            return fail(ps, "\\u0000 is not allowed in a string");
        }
        n += put_utf8(s + n, (unsigned)cp);
    }
    ps->p++;
    s[n] = '\0';
    *out = s;
    if (out_len) *out_len = n;
    return PF_OK;
}

static pf_status parse_number(parser *ps, pf_json *v)
{
    const unsigned char *b = ps->p;
    bool integer = true;
    if (ps->p < ps->end && *ps->p == '-') ps->p++;
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') return fail(ps, "expected a digit");
    if (*ps->p == '0') {
        ps->p++;
        if (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            return fail(ps, "leading zero in a number");
    } else {
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
    }
    if (ps->p < ps->end && *ps->p == '.') {
        integer = false;
        ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
            return fail(ps, "expected a digit after '.'");
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        integer = false;
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-')) ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
            return fail(ps, "expected a digit in the exponent");
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
    }
    char buf[64];
    size_t len = (size_t)(ps->p - b);
    if (len >= sizeof buf) return fail(ps, "number longer than 63 characters");
    memcpy(buf, b, len);
    buf[len] = '\0';
    v->type = PF_JSON_NUMBER;
    v->number = strtod(buf, NULL);
    if (!isfinite(v->number)) return fail(ps, "number out of range");
    if (integer) {
        errno = 0;
        long long ll = strtoll(buf, NULL, 10);
        v->is_integer = errno == 0;
        v->integer = ll;
    }
    return PF_OK;
}

static pf_status parse_value(parser *ps, pf_json *v);

static pf_status parse_array(parser *ps, pf_json *v)
{
    v->type = PF_JSON_ARRAY;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return PF_OK;
    }
    size_t cap = 0;
    for (;;) {
        if (v->count == cap) {
            size_t nc = cap ? cap * 2 : 4;
            pf_json *ni = realloc(v->items, nc * sizeof *ni);
            if (!ni) return nomem(ps);
            v->items = ni;
            cap = nc;
        }
        pf_json *it = &v->items[v->count];
        memset(it, 0, sizeof *it);
        v->count++;
        if (parse_value(ps, it) != PF_OK) return ps->st;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            return PF_OK;
        }
        return fail(ps, "expected ',' or ']' in an array");
    }
}

static pf_status parse_object(parser *ps, pf_json *v)
{
    v->type = PF_JSON_OBJECT;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return PF_OK;
    }
    size_t cap = 0;
    for (;;) {
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != '"') return fail(ps, "expected a string key");
        if (v->count == cap) {
            size_t nc = cap ? cap * 2 : 4;
            pf_json *ni = realloc(v->items, nc * sizeof *ni);
            if (!ni) return nomem(ps);
            v->items = ni;
            char **nk = realloc(v->keys, nc * sizeof *nk);
            if (!nk) return nomem(ps);
            v->keys = nk;
            cap = nc;
        }
        const unsigned char *key_at = ps->p;
        char *key = NULL;
        if (parse_string(ps, &key, NULL) != PF_OK) return ps->st;
        for (size_t i = 0; i < v->count; i++) {
            if (strcmp(v->keys[i], key) == 0) {
                free(key);
                ps->p = key_at;
                return fail(ps, "duplicate key in an object");
            }
        }
        pf_json *it = &v->items[v->count];
        memset(it, 0, sizeof *it);
        v->keys[v->count] = key;
        v->count++;
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') return fail(ps, "expected ':' after a key");
        ps->p++;
        if (parse_value(ps, it) != PF_OK) return ps->st;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            return PF_OK;
        }
        return fail(ps, "expected ',' or '}' in an object");
    }
}

static bool literal(parser *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) return false;
    ps->p += n;
    return true;
}

static pf_status parse_value(parser *ps, pf_json *v)
{
    skip_ws(ps);
    if (ps->p >= ps->end) return fail(ps, "expected a value");
    switch (*ps->p) {
    case '{':
    case '[': {
        if (++ps->depth > PF_JSON_MAX_DEPTH) return fail(ps, "nested deeper than 16 levels");
        pf_status st = *ps->p == '{' ? parse_object(ps, v) : parse_array(ps, v);
        ps->depth--;
        return st;
    }
    case '"':
        v->type = PF_JSON_STRING;
        return parse_string(ps, &v->string, &v->length);
    case 't':
    case 'f':
        v->type = PF_JSON_BOOL;
        v->boolean = *ps->p == 't';
        if (!literal(ps, v->boolean ? "true" : "false")) return fail(ps, "expected true or false");
        return PF_OK;
    case 'n':
        v->type = PF_JSON_NULL;
        if (!literal(ps, "null")) return fail(ps, "expected null");
        return PF_OK;
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')) return parse_number(ps, v);
        return fail(ps, "expected a value");
    }
}

pf_status pf_json_parse(const char *text, size_t size, const char *what, pf_json *out)
{
    if (!out) return pf_set_error(PF_ERR_INVALID, "pf_json_parse: out is NULL");
    memset(out, 0, sizeof *out);
    if (!what) what = "JSON";
    if (!text && size) return pf_set_error(PF_ERR_INVALID, "%s: text is NULL", what);
    if (size > PF_JSON_MAX_SIZE)
        return pf_set_error(PF_ERR_FORMAT, "%s: %zu bytes, more than the %u allowed", what, size,
                            PF_JSON_MAX_SIZE);
    parser ps = {.p = (const unsigned char *)text, .end = (const unsigned char *)text + size,
                 .start = (const unsigned char *)text, .what = what};
    if (size == 0) return fail(&ps, "empty (expected a value)");
    if (parse_value(&ps, out) == PF_OK) {
        skip_ws(&ps);
        if (ps.p != ps.end) fail(&ps, "text after the value");
    }
    if (ps.st != PF_OK) pf_json_free(out);
    return ps.st;
}

void pf_json_free(pf_json *v)
{
    if (!v) return;
    for (size_t i = 0; i < v->count; i++) {
        if (v->items) pf_json_free(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
    memset(v, 0, sizeof *v);
}

const pf_json *pf_json_get(const pf_json *v, const char *key)
{
    if (!v || v->type != PF_JSON_OBJECT) return NULL;
    for (size_t i = 0; i < v->count; i++)
        if (strcmp(v->keys[i], key) == 0) return &v->items[i];
    return NULL;
}
