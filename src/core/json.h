/* Internal: the library's side of the JSON writer (public part in
 * pixflow/core.h) and the growing string it writes into.
 *
 * The writer's struct is here so library code can keep one on the stack
 * (pf_json_writer_init) and write into its own pf_sbuf (the queue's Redis
 * fields) without an allocation per entry. Two more calls serve writers whose
 * layout is fixed by a consumer rather than by the pretty/compact styles (the
 * trace file: one event per line, Perfetto reads it that way):
 * pf_json_writer_text() appends bytes as they are (the caller keeps the
 * document valid) and pf_json_writer_decimal() writes a scaled integer with a
 * fixed number of decimals without printf (a trace has millions of them). */
#ifndef PF_CORE_JSON_H
#define PF_CORE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pixflow/core.h"

/* A growing NUL-terminated string. Zero-initialise; pf_sbuf_free. */
typedef struct pf_sbuf {
    char *data;   /* NUL-terminated; NULL until the first append */
    size_t len, cap;
    bool failed;  /* an allocation failed: the content is incomplete */
} pf_sbuf;

void pf_sbuf_append(pf_sbuf *b, const char *s, size_t n);
void pf_sbuf_puts(pf_sbuf *b, const char *s);
void pf_sbuf_printf(pf_sbuf *b, const char *fmt, ...) PF_PRINTF(2, 3);
/* `s` as a JSON string literal with its quotes (the writer's escaping). */
void pf_sbuf_json_string(pf_sbuf *b, const char *s);
void pf_sbuf_free(pf_sbuf *b);

struct pf_json_writer {
    FILE *file;      /* file sink, or NULL */
    pf_sbuf *out;    /* where bytes go: `own` or the caller's buffer */
    pf_sbuf own;     /* a file sink's staging buffer; a created memory writer's text */
    bool compact;
    int digits;      /* pf_json_writer_params.double_digits */
    int depth;
    pf_status error; /* the first failure */
    int io_errno;
    bool has_items[PF_JSON_WRITER_MAX_DEPTH + 1]; /* a comma goes before the next item */
    bool is_obj[PF_JSON_WRITER_MAX_DEPTH + 1];    /* an object (items need keys), else an array */
};

/* Starts a writer in place: to `file` (staged in w->own, flushed in 64 KiB
 * pieces) or, with file NULL, appending to `dst` (not owned). Release with
 * pf_json_writer_release (flushes a file sink, frees w->own). */
void pf_json_writer_init(pf_json_writer *w, FILE *file, pf_sbuf *dst, bool compact, int digits);
void pf_json_writer_release(pf_json_writer *w);

/* n bytes as they are, outside the writer's structure (no separator, no
 * escaping). */
void pf_json_writer_text(pf_json_writer *w, const char *s, size_t n);
#define PF_JSON_TEXT(w, lit) pf_json_writer_text((w), "" lit, sizeof(lit) - 1)

/* value / 10^decimals with exactly `decimals` (0..9) digits after the point:
 * (12345, 3) -> 12.345, (-5, 3) -> -0.005. */
void pf_json_writer_decimal(pf_json_writer *w, const char *key, int64_t value, int decimals);

#endif
