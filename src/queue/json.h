/* Internal: a small strict JSON parser (RFC 8259) for queue entries. The
 * queue writes its entries with the library's one writer (core/json.h).
 *
 * Queue entries come from the network (anyone who can XADD to the stream),
 * so the parser accepts exactly RFC 8259 and nothing more: one value, no
 * comments, no trailing commas, no NaN/Infinity, no leading zeros, strings of
 * valid UTF-8 with paired surrogates, no duplicate keys, no NUL characters
 * (\u0000: the values become C strings), bounded depth and size. A
 * rejection sets PF_ERR_FORMAT with the byte offset and what was expected.
 * fuzz/fuzz_queue_entry.c runs it on arbitrary bytes. */
#ifndef PF_QUEUE_JSON_H
#define PF_QUEUE_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "../core/json.h" /* the writer and pf_sbuf: JSON is written there */
#include "pixflow/core.h"

#define PF_JSON_MAX_DEPTH 16
#define PF_JSON_MAX_SIZE (1u << 20) /* 1 MiB: a job of ~20,000 file names */

typedef enum pf_json_type {
    PF_JSON_NULL,
    PF_JSON_BOOL,
    PF_JSON_NUMBER,
    PF_JSON_STRING,
    PF_JSON_ARRAY,
    PF_JSON_OBJECT,
} pf_json_type;

typedef struct pf_json pf_json;
struct pf_json {
    pf_json_type type;
    bool boolean;
    double number;
    bool is_integer;    /* a number written without fraction or exponent */
    long long integer;  /* its value when is_integer and it fits */
    char *string;       /* NUL-terminated UTF-8 (no embedded NUL) */
    size_t length;      /* of string */
    size_t count;       /* items of an array or members of an object */
    pf_json *items;     /* array items, object values */
    char **keys;        /* object keys (NUL-terminated), count of them */
};

/* Parses `size` bytes into *out (owned by the caller: pf_json_free). `what`
 * names the text in messages ("job entry"). PF_ERR_FORMAT with "WHAT: byte
 * N: ..." on anything but one well-formed value (surrounding whitespace
 * allowed), PF_ERR_NOMEM. *out is zeroed on failure. */
pf_status pf_json_parse(const char *text, size_t size, const char *what, pf_json *out);
void pf_json_free(pf_json *v);

/* The member `key` of an object, or NULL (also when v is not an object). */
const pf_json *pf_json_get(const pf_json *v, const char *key);

/* Whether `s` (n bytes) is valid UTF-8 without overlong forms or surrogates. */
bool pf_utf8_valid(const char *s, size_t n);

#endif
