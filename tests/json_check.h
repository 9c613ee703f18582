/* A small strict JSON parser for tests (RFC 8259 grammar: no trailing
 * commas, no raw control characters in strings, valid UTF-8, valid escapes
 * and numbers), building a DOM that keeps each number's text so tests can
 * compare timestamps exactly. Header-only: static functions, each test file
 * includes it once. */
#ifndef PF_TEST_JSON_CHECK_H
#define PF_TEST_JSON_CHECK_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval {
    jtype type;
    bool b;
    double num;
    char *raw;          /* J_NUM: the number's text */
    char *str;          /* J_STR: decoded UTF-8 */
    struct jval *items; /* J_ARR, J_OBJ */
    char **keys;        /* J_OBJ */
    size_t n, cap;
} jval;

typedef struct jparser {
    const char *s, *end;
    const char *err;    /* first error, NULL if none */
    size_t err_at;
    const char *start;
    int depth;
} jparser;

static void jfree(jval *v)
{
    if (!v) return;
    free(v->raw);
    free(v->str);
    for (size_t i = 0; i < v->n; i++) {
        jfree(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    memset(v, 0, sizeof *v);
}

static bool jfail(jparser *p, const char *why)
{
    if (!p->err) {
        p->err = why;
        p->err_at = (size_t)(p->s - p->start);
    }
    return false;
}

static void jws(jparser *p)
{
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
        p->s++;
}

/* Appends one code point as UTF-8 to buf (grown as needed). */
static bool jbuf_put(char **buf, size_t *len, size_t *cap, const char *bytes, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t nc = *cap ? *cap * 2 : 32;
        while (nc < *len + n + 1) nc *= 2;
        char *b = realloc(*buf, nc);
        if (!b) return false;
        *buf = b;
        *cap = nc;
    }
    memcpy(*buf + *len, bytes, n);
    *len += n;
    (*buf)[*len] = 0;
    return true;
}

static size_t jutf8_encode(unsigned cp, char *o)
{
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | cp >> 6); o[1] = (char)(0x80 | (cp & 63)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12); o[1] = (char)(0x80 | (cp >> 6 & 63));
        o[2] = (char)(0x80 | (cp & 63));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18); o[1] = (char)(0x80 | (cp >> 12 & 63));
    o[2] = (char)(0x80 | (cp >> 6 & 63)); o[3] = (char)(0x80 | (cp & 63));
    return 4;
}

static int jhex4(const char *s, const char *end, unsigned *out)
{
    if (end - s < 4) return 0;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

/* Strict UTF-8: the length of the sequence at s, 0 if invalid. */
static size_t jutf8_check(const unsigned char *s, const unsigned char *end)
{
    unsigned c = s[0];
    size_t n;
    unsigned cp;
    if (c < 0x80) return 1;
    else if ((c & 0xE0) == 0xC0) { n = 2; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { n = 3; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { n = 4; cp = c & 0x07; }
    else return 0;
    if ((size_t)(end - s) < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    static const unsigned min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

static bool jstring(jparser *p, char **out)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    p->s++; /* opening quote */
    if (!jbuf_put(&buf, &len, &cap, "", 0)) return jfail(p, "out of memory");
    for (;;) {
        if (p->s >= p->end) { free(buf); return jfail(p, "unterminated string"); }
        unsigned char c = (unsigned char)*p->s;
        if (c == '"') { p->s++; break; }
        if (c < 0x20) { free(buf); return jfail(p, "raw control character in string"); }
        if (c == '\\') {
            p->s++;
            if (p->s >= p->end) { free(buf); return jfail(p, "bad escape"); }
            char e = *p->s++;
            char one;
            switch (e) {
            case '"': one = '"'; break;
            case '\\': one = '\\'; break;
            case '/': one = '/'; break;
            case 'b': one = '\b'; break;
            case 'f': one = '\f'; break;
            case 'n': one = '\n'; break;
            case 'r': one = '\r'; break;
            case 't': one = '\t'; break;
            case 'u': {
                unsigned cp;
                if (!jhex4(p->s, p->end, &cp)) { free(buf); return jfail(p, "bad \\u escape"); }
                p->s += 4;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    unsigned lo;
                    if (p->end - p->s < 6 || p->s[0] != '\\' || p->s[1] != 'u' ||
                        !jhex4(p->s + 2, p->end, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                        free(buf);
                        return jfail(p, "lone high surrogate");
                    }
                    p->s += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    free(buf);
                    return jfail(p, "lone low surrogate");
                }
                char u[4];
                if (!jbuf_put(&buf, &len, &cap, u, jutf8_encode(cp, u))) {
                    free(buf);
                    return jfail(p, "out of memory");
                }
                continue;
            }
            default: free(buf); return jfail(p, "bad escape");
            }
            if (!jbuf_put(&buf, &len, &cap, &one, 1)) { free(buf); return jfail(p, "out of memory"); }
            continue;
        }
        size_t n = jutf8_check((const unsigned char *)p->s, (const unsigned char *)p->end);
        if (!n) { free(buf); return jfail(p, "invalid UTF-8"); }
        if (!jbuf_put(&buf, &len, &cap, p->s, n)) { free(buf); return jfail(p, "out of memory"); }
        p->s += n;
    }
    *out = buf;
    return true;
}

static bool jdigits(jparser *p)
{
    const char *st = p->s;
    while (p->s < p->end && *p->s >= '0' && *p->s <= '9') p->s++;
    return p->s > st;
}

static bool jnumber(jparser *p, jval *v)
{
    const char *st = p->s;
    if (*p->s == '-') p->s++;
    if (p->s < p->end && *p->s == '0') p->s++;
    else if (p->s < p->end && *p->s >= '1' && *p->s <= '9') jdigits(p);
    else return jfail(p, "bad number");
    if (p->s < p->end && *p->s == '.') {
        p->s++;
        if (!jdigits(p)) return jfail(p, "bad fraction");
    }
    if (p->s < p->end && (*p->s == 'e' || *p->s == 'E')) {
        p->s++;
        if (p->s < p->end && (*p->s == '+' || *p->s == '-')) p->s++;
        if (!jdigits(p)) return jfail(p, "bad exponent");
    }
    size_t n = (size_t)(p->s - st);
    v->type = J_NUM;
    v->raw = malloc(n + 1);
    if (!v->raw) return jfail(p, "out of memory");
    memcpy(v->raw, st, n);
    v->raw[n] = 0;
    v->num = strtod(v->raw, NULL);
    return true;
}

static bool jvalue(jparser *p, jval *v);

static bool jpush(jparser *p, jval *v, char *key)
{
    if (v->n == v->cap) {
        size_t nc = v->cap ? v->cap * 2 : 8;
        jval *it = realloc(v->items, nc * sizeof *it);
        if (!it) return jfail(p, "out of memory");
        v->items = it;
        if (v->type == J_OBJ) {
            char **k = realloc(v->keys, nc * sizeof *k);
            if (!k) return jfail(p, "out of memory");
            v->keys = k;
        }
        v->cap = nc;
    }
    memset(&v->items[v->n], 0, sizeof v->items[0]);
    if (v->type == J_OBJ) v->keys[v->n] = key;
    v->n++;
    return true;
}

static bool jcontainer(jparser *p, jval *v, bool obj)
{
    char close = obj ? '}' : ']';
    v->type = obj ? J_OBJ : J_ARR;
    if (++p->depth > 64) return jfail(p, "nesting too deep");
    p->s++;
    jws(p);
    if (p->s < p->end && *p->s == close) {
        p->s++;
        p->depth--;
        return true;
    }
    for (;;) {
        char *key = NULL;
        jws(p);
        if (obj) {
            if (p->s >= p->end || *p->s != '"') return jfail(p, "expected a key");
            if (!jstring(p, &key)) return false;
            jws(p);
            if (p->s >= p->end || *p->s != ':') { free(key); return jfail(p, "expected ':'"); }
            p->s++;
        }
        if (!jpush(p, v, key)) { free(key); return false; }
        if (!jvalue(p, &v->items[v->n - 1])) return false;
        jws(p);
        if (p->s < p->end && *p->s == ',') { p->s++; continue; }
        if (p->s < p->end && *p->s == close) { p->s++; break; }
        return jfail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
    p->depth--;
    return true;
}

static bool jvalue(jparser *p, jval *v)
{
    jws(p);
    if (p->s >= p->end) return jfail(p, "unexpected end");
    char c = *p->s;
    if (c == '{') return jcontainer(p, v, true);
    if (c == '[') return jcontainer(p, v, false);
    if (c == '"') {
        v->type = J_STR;
        return jstring(p, &v->str);
    }
    if (c == '-' || (c >= '0' && c <= '9')) return jnumber(p, v);
    static const struct { const char *lit; jtype t; bool b; } lits[] = {
        {"true", J_BOOL, true}, {"false", J_BOOL, false}, {"null", J_NULL, false}};
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(lits[i].lit);
        if ((size_t)(p->end - p->s) >= n && !memcmp(p->s, lits[i].lit, n)) {
            p->s += n;
            v->type = lits[i].t;
            v->b = lits[i].b;
            return true;
        }
    }
    return jfail(p, "unexpected character");
}

/* Parses text[0..len) into *out; on failure prints why and where. */
static bool jparse(const char *text, size_t len, jval *out)
{
    jparser p = {text, text + len, NULL, 0, text, 0};
    memset(out, 0, sizeof *out);
    bool ok = jvalue(&p, out);
    if (ok) {
        jws(&p);
        if (p.s != p.end) ok = jfail(&p, "trailing characters");
    }
    if (!ok) {
        fprintf(stderr, "  JSON error at byte %zu: %s\n", p.err_at, p.err);
        jfree(out);
    }
    return ok;
}

static const jval *jget(const jval *obj, const char *key)
{
    if (!obj || obj->type != J_OBJ) return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (!strcmp(obj->keys[i], key)) return &obj->items[i];
    return NULL;
}

/* Reads a whole file; NULL if it cannot. */
static char *jread_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = 0;
        *len = (size_t)n;
    }
    return buf;
}

#endif
