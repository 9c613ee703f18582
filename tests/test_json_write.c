/* The JSON writer (pixflow/core.h, core/json.h): exact bytes of the pretty
 * style (what every `pixflow ... --json` prints) and the compact style (queue
 * entries, trace events), escaping (short escapes, \u00XX, DEL, invalid UTF-8
 * as \ufffd), numbers (integers at their limits, %.6g vs shortest round trip,
 * NaN/inf as null, fixed decimals), a file sink larger than its staging
 * buffer, misuse (unbalanced, too deep) reported by finish, write errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "pf_test.h"

static pf_json_writer *mem_writer(bool compact, int digits)
{
    pf_json_writer_params p = pf_json_writer_params_default();
    p.compact = compact;
    p.double_digits = digits;
    pf_json_writer *w = NULL;
    if (pf_json_writer_create(&p, &w) != PF_OK) return NULL;
    return w;
}

static void test_pretty_bytes(void)
{
    pf_json_writer *w = mem_writer(false, 6);
    REQUIRE(w);
    pf_json_writer_object_begin(w, NULL);
    pf_json_writer_string(w, "name", "x");
    pf_json_writer_int(w, "n", -3);
    pf_json_writer_double(w, "fps", 2010.56789);
    pf_json_writer_array_begin(w, "empty");
    pf_json_writer_array_end(w);
    pf_json_writer_array_begin(w, "list");
    pf_json_writer_uint(w, NULL, 18446744073709551615ull);
    pf_json_writer_object_begin(w, NULL);
    pf_json_writer_bool(w, "ok", true);
    pf_json_writer_object_end(w);
    pf_json_writer_array_end(w);
    pf_json_writer_string(w, "none", NULL);
    pf_json_writer_null(w, "z");
    pf_json_writer_object_end(w);
    CHECK_OK(pf_json_writer_finish(w));
    size_t len = 0;
    const char *s = pf_json_writer_data(w, &len);
    const char *expect = "{\n  \"name\": \"x\",\n  \"n\": -3,\n  \"fps\": 2010.57,\n"
                         "  \"empty\": [],\n  \"list\": [\n    18446744073709551615,\n    {\n"
                         "      \"ok\": true\n    }\n  ],\n  \"none\": null,\n  \"z\": null\n}\n";
    REQUIRE(s);
    CHECK(strcmp(s, expect) == 0);
    CHECK(len == strlen(expect));
    if (strcmp(s, expect) != 0) fprintf(stderr, "got:\n%s", s);
    pf_json_writer_destroy(&w);
    CHECK(w == NULL);
    pf_json_writer_destroy(&w); /* NULL is fine */
}

static void test_compact_and_numbers(void)
{
    pf_json_writer *w = mem_writer(true, 0);
    REQUIRE(w);
    pf_json_writer_object_begin(w, NULL);
    pf_json_writer_int(w, "min", (long long)(-9223372036854775807LL - 1));
    pf_json_writer_double(w, "tenth", 0.1);
    pf_json_writer_double(w, "third", 1.0 / 3.0);
    pf_json_writer_double(w, "nan", NAN);
    pf_json_writer_double(w, "inf", -INFINITY);
    pf_json_writer_decimal(w, "us", 12345, 3);
    pf_json_writer_decimal(w, "neg", -5, 3);
    pf_json_writer_decimal(w, "whole", 42, 0);
    pf_json_writer_array_begin(w, "a");
    pf_json_writer_int(w, NULL, 1);
    pf_json_writer_int(w, NULL, 2);
    pf_json_writer_array_end(w);
    pf_json_writer_object_end(w);
    CHECK_OK(pf_json_writer_finish(w));
    const char *s = pf_json_writer_data(w, NULL);
    const char *expect = "{\"min\":-9223372036854775808,\"tenth\":0.1,"
                         "\"third\":0.33333333333333331,\"nan\":null,\"inf\":null,"
                         "\"us\":12.345,\"neg\":-0.005,\"whole\":42,\"a\":[1,2]}";
    REQUIRE(s);
    CHECK(strcmp(s, expect) == 0);
    if (strcmp(s, expect) != 0) fprintf(stderr, "got: %s\n", s);
    pf_json_writer_destroy(&w);
}

static void test_escaping(void)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"plain", "\"plain\""},
        {"q\"b\\s/", "\"q\\\"b\\\\s/\""},
        {"\b\f\n\r\t", "\"\\b\\f\\n\\r\\t\""},
        {"\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\""},
        {"caf\xc3\xa9 \xf0\x9f\x8e\xa5", "\"caf\xc3\xa9 \xf0\x9f\x8e\xa5\""},
        {"bad\xff", "\"bad\\ufffd\""},
        {"cut\xe2\x82", "\"cut\\ufffd\\ufffd\""},
        {"overlong\xc0\xaf", "\"overlong\\ufffd\\ufffd\""},
        {"surrogate\xed\xa0\x80", "\"surrogate\\ufffd\\ufffd\\ufffd\""},
        {"", "\"\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        pf_sbuf b = {0};
        pf_sbuf_json_string(&b, cases[i].in);
        REQUIRE(!b.failed && b.data);
        CHECK(strcmp(b.data, cases[i].out) == 0);
        if (strcmp(b.data, cases[i].out) != 0) fprintf(stderr, "case %zu: got %s\n", i, b.data);
        pf_sbuf_free(&b);
    }
    /* Keys are escaped the same way. */
    pf_json_writer *w = mem_writer(true, 0);
    REQUIRE(w);
    pf_json_writer_object_begin(w, NULL);
    pf_json_writer_bool(w, "k\"\n", false);
    pf_json_writer_object_end(w);
    CHECK_OK(pf_json_writer_finish(w));
    CHECK(strcmp(pf_json_writer_data(w, NULL), "{\"k\\\"\\n\":false}") == 0);
    pf_json_writer_destroy(&w);
}

/* A document far larger than the 64 KiB staging buffer reaches the file
 * whole and in order. */
static void test_file_sink(void)
{
    FILE *f = tmpfile();
    REQUIRE(f);
    pf_json_writer_params p = pf_json_writer_params_default();
    p.file = f;
    p.compact = true;
    pf_json_writer *w = NULL;
    CHECK_OK(pf_json_writer_create(&p, &w));
    REQUIRE(w);
    pf_json_writer_array_begin(w, NULL);
    for (int i = 0; i < 100000; i++) pf_json_writer_int(w, NULL, i);
    pf_json_writer_array_end(w);
    CHECK_OK(pf_json_writer_finish(w));
    CHECK(strcmp(pf_json_writer_data(w, NULL), "") == 0);
    pf_json_writer_destroy(&w);
    long size = ftell(f);
    REQUIRE(size > 0);
    char *text = malloc((size_t)size + 1);
    REQUIRE(text);
    rewind(f);
    size_t got = fread(text, 1, (size_t)size, f);
    text[got] = '\0';
    fclose(f);
    CHECK(got == (size_t)size);
    CHECK(text[0] == '[' && text[got - 1] == ']');
    /* Every number in order. */
    long next = 0;
    bool ordered = true;
    for (char *s = text + 1; *s && *s != ']';) {
        char *end = NULL;
        long v = strtol(s, &end, 10);
        if (end == s || v != next++) {
            ordered = false;
            break;
        }
        s = *end == ',' ? end + 1 : end;
    }
    CHECK(ordered && next == 100000);
    free(text);
}

static void test_misuse_and_errors(void)
{
    pf_json_writer *w = mem_writer(false, 0);
    REQUIRE(w);
    pf_json_writer_object_end(w); /* end without a begin */
    CHECK_EQ_INT(pf_json_writer_finish(w), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "malformed nesting") != NULL);
    pf_json_writer_destroy(&w);

    w = mem_writer(true, 0);
    REQUIRE(w);
    for (int i = 0; i <= PF_JSON_WRITER_MAX_DEPTH; i++) pf_json_writer_array_begin(w, NULL);
    CHECK_EQ_INT(pf_json_writer_finish(w), PF_ERR_INVALID);
    pf_json_writer_destroy(&w);

    w = mem_writer(true, 0);
    REQUIRE(w);
    pf_json_writer_object_begin(w, NULL); /* never closed */
    CHECK_EQ_INT(pf_json_writer_finish(w), PF_ERR_INVALID);
    pf_json_writer_destroy(&w);

    /* An end of the other kind, a key in an array, an object item without one. */
    static const int cases = 3;
    for (int c = 0; c < cases; c++) {
        w = mem_writer(true, 0);
        REQUIRE(w);
        if (c == 0) {
            pf_json_writer_array_begin(w, NULL);
            pf_json_writer_object_end(w);
        } else if (c == 1) {
            pf_json_writer_array_begin(w, NULL);
            pf_json_writer_int(w, "k", 1);
            pf_json_writer_array_end(w);
        } else {
            pf_json_writer_object_begin(w, NULL);
            pf_json_writer_int(w, NULL, 1);
            pf_json_writer_object_end(w);
        }
        CHECK_EQ_INT(pf_json_writer_finish(w), PF_ERR_INVALID);
        CHECK(strstr(pf_last_error(), "malformed nesting") != NULL);
        pf_json_writer_destroy(&w);
    }

    pf_json_writer_params p = pf_json_writer_params_default();
    p.double_digits = 18;
    CHECK_EQ_INT(pf_json_writer_create(&p, &w), PF_ERR_INVALID);
    CHECK(w == NULL && strstr(pf_last_error(), "double_digits 18") != NULL);

    /* A write error (a full device) is reported, naming errno's text. */
    FILE *full = fopen("/dev/full", "w");
    if (full) {
        p = pf_json_writer_params_default();
        p.file = full;
        CHECK_OK(pf_json_writer_create(&p, &w));
        REQUIRE(w);
        pf_json_writer_string(w, NULL, "x");
        CHECK_EQ_INT(pf_json_writer_finish(w), PF_ERR_IO);
        CHECK(strstr(pf_last_error(), "writing failed") != NULL);
        pf_json_writer_destroy(&w);
        fclose(full);
    }
}

/* Library-internal use: a stack writer appending to the caller's buffer,
 * with raw text in between (the trace's layout). */
static void test_in_place(void)
{
    pf_sbuf b = {0};
    pf_sbuf_puts(&b, "prefix ");
    pf_json_writer w;
    pf_json_writer_init(&w, NULL, &b, true, 17);
    pf_json_writer_object_begin(&w, NULL);
    pf_json_writer_double(&w, "t", 90.5);
    PF_JSON_TEXT(&w, ",\"raw\":{}");
    pf_json_writer_object_end(&w);
    pf_json_writer_release(&w);
    REQUIRE(!b.failed && b.data);
    CHECK(strcmp(b.data, "prefix {\"t\":90.5,\"raw\":{}}") == 0);
    pf_sbuf_free(&b);
}

int main(void)
{
    PF_RUN(test_pretty_bytes);
    PF_RUN(test_compact_and_numbers);
    PF_RUN(test_escaping);
    PF_RUN(test_file_sink);
    PF_RUN(test_misuse_and_errors);
    PF_RUN(test_in_place);
    return pf_test_finish();
}
