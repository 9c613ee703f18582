/* The queue's JSON writing: a growing string and RFC 8259 string escaping.
 * Kept small and internal until the library has one JSON writer. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

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

void pf_sbuf_json_string(pf_sbuf *b, const char *s)
{
    pf_sbuf_append(b, "\"", 1);
    const unsigned char *u = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)u);
    for (size_t i = 0; i < n;) {
        unsigned c = u[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            pf_sbuf_append(b, e, 2);
            i++;
        } else if (c < 0x20) {
            pf_sbuf_printf(b, "\\u%04x", c);
            i++;
        } else if (c < 0x80) {
            pf_sbuf_append(b, (const char *)u + i, 1);
            i++;
        } else {
            /* One valid sequence at a time; anything else is one U+FFFD. */
            size_t l = 1;
            while (l < 4 && i + l < n && (u[i + l] & 0xC0) == 0x80) l++;
            while (l > 0 && !pf_utf8_valid((const char *)u + i, l)) l--;
            if (l == 0) {
                pf_sbuf_puts(b, "\xEF\xBF\xBD");
                i++;
            } else {
                pf_sbuf_append(b, (const char *)u + i, l);
                i += l;
            }
        }
    }
    pf_sbuf_append(b, "\"", 1);
}

void pf_sbuf_free(pf_sbuf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}
