/* The Redis queue's pure parts (no server needed): the strict JSON parser
 * (accepted and refused texts, escapes, surrogates, depth, duplicates), the
 * JSON string writer (round trip through the parser, invalid UTF-8), job
 * entries (full and submission forms, every schema error names its field,
 * the word rules: "..", "-", --list, absolute paths under the root, job
 * types), the job id rules, and Redis URL parsing and redaction. */
#include <string.h>

#include "pf_test.h"
#include "queue/conn.h"
#include "queue/entry.h"
#include "queue/json.h"
#include "queue/keys.h"

static pf_status parse(const char *text, pf_json *v) { return pf_json_parse(text, strlen(text), "t", v); }

static void test_json_accepts(void)
{
    pf_json v;
    CHECK_OK(parse(" {\"a\": [1, -2.5e3, true, false, null, \"x\"], \"b\": {}} \n", &v));
    CHECK(v.type == PF_JSON_OBJECT && v.count == 2);
    const pf_json *a = pf_json_get(&v, "a");
    REQUIRE(a && a->type == PF_JSON_ARRAY && a->count == 6);
    CHECK(a->items[0].is_integer && a->items[0].integer == 1);
    CHECK(!a->items[1].is_integer && a->items[1].number == -2500.0);
    CHECK(a->items[2].type == PF_JSON_BOOL && a->items[2].boolean);
    CHECK(a->items[4].type == PF_JSON_NULL);
    CHECK(strcmp(a->items[5].string, "x") == 0);
    CHECK(pf_json_get(&v, "missing") == NULL);
    pf_json_free(&v);
    /* Escapes, a surrogate pair, raw UTF-8. */
    CHECK_OK(parse("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00 \xc3\xa9\"", &v));
    CHECK(strcmp(v.string, "\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80 \xc3\xa9") == 0);
    pf_json_free(&v);
    CHECK_OK(parse("0", &v));
    CHECK(v.is_integer && v.integer == 0);
    pf_json_free(&v);
    /* Nesting up to the limit. */
    char deep[2 * PF_JSON_MAX_DEPTH + 1];
    for (int i = 0; i < PF_JSON_MAX_DEPTH; i++) {
        deep[i] = '[';
        deep[2 * PF_JSON_MAX_DEPTH - 1 - i] = ']';
    }
    deep[2 * PF_JSON_MAX_DEPTH] = '\0';
    CHECK_OK(parse(deep, &v));
    pf_json_free(&v);
}

static void test_json_refuses(void)
{
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"", "empty"},
        {"{", "expected a string key"},
        {"[1,]", "expected a value"},
        {"{\"a\":1,}", "expected a string key"},
        {"{\"a\" 1}", "expected ':'"},
        {"{\"a\":1 \"b\":2}", "expected ',' or '}'"},
        {"[1 2]", "expected ',' or ']'"},
        {"01", "leading zero"},
        {"1.", "digit after '.'"},
        {"1e", "digit in the exponent"},
        {"-", "expected a digit"},
        {"NaN", "expected a value"},
        {"Infinity", "expected a value"},
        {"1e999", "out of range"},
        {"tru", "expected true or false"},
        {"nul", "expected null"},
        {"\"abc", "unterminated string"},
        {"\"a\x01\"", "control character"},
        {"\"\\x\"", "unknown escape"},
        {"\"\\u12\"", "4 hex digits"},
        {"\"\\ud800\"", "without its low surrogate"},
        {"\"\\udc00\"", "unpaired low surrogate"},
        {"\"\\u0000\"", "\\u0000 is not allowed"},
        {"\"\xc3\x28\"", "invalid UTF-8"},
        {"\"\xed\xa0\x80\"", "invalid UTF-8"},   /* an encoded surrogate */
        {"\"\xc0\xaf\"", "invalid UTF-8"},       /* overlong '/' */
        {"\"\xf4\x90\x80\x80\"", "invalid UTF-8"}, /* above U+10FFFF */
        {"{\"a\":1,\"a\":2}", "duplicate key"},
        {"{} {}", "text after the value"},
        {"[] x", "text after the value"},
        {"/* c */ 1", "expected a value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pf_json v;
        pf_status st = parse(bad[i].text, &v);
        CHECK_EQ_INT(st, PF_ERR_FORMAT);
        if (!strstr(pf_last_error(), bad[i].why) || strncmp(pf_last_error(), "t: byte ", 8) != 0)
            fprintf(stderr, "  case %zu '%s': message '%s' lacks '%s'\n", i, bad[i].text,
                    pf_last_error(), bad[i].why);
        CHECK(strstr(pf_last_error(), bad[i].why) != NULL);
        CHECK(v.type == PF_JSON_NULL && v.count == 0 && v.string == NULL);
    }
    /* Too deep by one. */
    char deep[2 * PF_JSON_MAX_DEPTH + 3];
    for (int i = 0; i <= PF_JSON_MAX_DEPTH; i++) {
        deep[i] = '[';
        deep[2 * PF_JSON_MAX_DEPTH + 1 - i] = ']';
    }
    deep[2 * PF_JSON_MAX_DEPTH + 2] = '\0';
    pf_json v;
    CHECK_EQ_INT(parse(deep, &v), PF_ERR_FORMAT);
    CHECK(strstr(pf_last_error(), "nested deeper") != NULL);
    /* Embedded NUL byte in the text (not a C string). */
    CHECK_EQ_INT(pf_json_parse("\"a\0b\"", 5, "t", &v), PF_ERR_FORMAT);
}

static void test_writer_round_trip(void)
{
    const char *samples[] = {"plain", "quote \" and \\ backslash", "tab\tnew\nline\x01",
                             "caf\xc3\xa9 \xf0\x9f\x98\x80", "bad \xff\xc3 utf8 \xe2\x82", ""};
    const char *expect[] = {"plain", "quote \" and \\ backslash", "tab\tnew\nline\x01",
                            "caf\xc3\xa9 \xf0\x9f\x98\x80",
                            "bad \xef\xbf\xbd\xef\xbf\xbd utf8 \xef\xbf\xbd\xef\xbf\xbd", ""};
    for (size_t i = 0; i < sizeof samples / sizeof *samples; i++) {
        pf_sbuf b = {0};
        pf_sbuf_json_string(&b, samples[i]);
        REQUIRE(!b.failed);
        pf_json v;
        CHECK_OK(pf_json_parse(b.data, b.len, "w", &v));
        CHECK(v.type == PF_JSON_STRING && strcmp(v.string, expect[i]) == 0);
        pf_json_free(&v);
        pf_sbuf_free(&b);
    }
}

static const char *job(const char *fields)
{
    static char buf[2048];
    snprintf(buf, sizeof buf, "{\"v\":1,\"id\":\"j1\",\"type\":\"reproject\",%s}", fields);
    return buf;
}

static void test_entry_full(void)
{
    pf_job_entry e;
    const char *ok = job("\"argv\":[\"reproject\",\"/data/a.jpg\",\"-o\",\"/data/out\",\"--views\","
                         "\"8\"],\"attempt\":2,\"submitted_ms\":1700000000000,\"timeout_s\":90.5,"
                         "\"last_error\":\"boom\"");
    CHECK_OK(pf_job_entry_parse(ok, strlen(ok), false, "/data", &e));
    CHECK(strcmp(e.id, "j1") == 0 && strcmp(e.type, "reproject") == 0);
    CHECK(e.argc == 6 && strcmp(e.argv[5], "8") == 0 && e.argv[6] == NULL);
    CHECK(e.attempt == 2 && e.submitted_ms == 1700000000000LL && e.timeout_s == 90.5);
    CHECK(e.last_error && strcmp(e.last_error, "boom") == 0);
    /* Written back and parsed again: the same entry. */
    pf_sbuf b = {0};
    pf_job_entry_write(&b, &e);
    pf_job_entry e2;
    CHECK_OK(pf_job_entry_parse(b.data, b.len, false, NULL, &e2));
    CHECK(e2.argc == e.argc && e2.attempt == 2 && e2.timeout_s == 90.5);
    CHECK(strcmp(e2.argv[1], "/data/a.jpg") == 0 && strcmp(e2.last_error, "boom") == 0);
    pf_job_entry_free(&e2);
    pf_sbuf_free(&b);
    pf_job_entry_free(&e);

    static const struct {
        const char *text, *why;
    } bad[] = {
        {"[1]", "not a JSON object"},
        {"{\"id\":\"x\"}", "field 'v' (schema version) is missing"},
        {"{\"v\":\"1\"}", "field 'v' must be a positive integer"},
        {"{\"v\":2,\"id\":\"x\"}", "schema version 2 is newer"},
        {"{\"v\":1,\"argv\":[\"reproject\"]}", "field 'id' is missing"},
        {"{\"v\":1,\"id\":\"a b\"}", "field 'id' must be"},
        {"{\"v\":1,\"id\":\"x\",\"argv\":[]}", "field 'argv' must be a non-empty array"},
        {"{\"v\":1,\"id\":\"x\",\"argv\":[\"reproject\",3]}", "argv[1] is not a string"},
        {"{\"v\":1,\"id\":\"x\",\"argv\":[\"reproject\"],\"attempt\":0,\"submitted_ms\":1}",
         "field 'type' is missing"},
        {"{\"v\":1,\"id\":\"x\",\"type\":\"segment\",\"argv\":[\"reproject\"],\"attempt\":0,"
         "\"submitted_ms\":1}", "field 'type' must be a string equal to argv[0]"},
        {"{\"v\":1,\"id\":\"x\",\"type\":\"reproject\",\"argv\":[\"reproject\"],\"submitted_ms\":1}",
         "field 'attempt' is missing"},
        {"{\"v\":1,\"id\":\"x\",\"type\":\"reproject\",\"argv\":[\"reproject\"],\"attempt\":-1,"
         "\"submitted_ms\":1}", "field 'attempt' must be"},
        {"{\"v\":1,\"id\":\"x\",\"type\":\"reproject\",\"argv\":[\"reproject\"],\"attempt\":0}",
         "field 'submitted_ms' is missing"},
        {"{\"v\":1,\"id\":\"x\",\"type\":\"reproject\",\"argv\":[\"reproject\"],\"attempt\":0,"
         "\"submitted_ms\":1,\"timeout_s\":0}", "field 'timeout_s' must be"},
        {"{\"v\":1,\"id\":\"x\",\"type\":\"reproject\",\"argv\":[\"reproject\"],\"attempt\":0,"
         "\"submitted_ms\":1,\"extra\":1}", "unknown field 'extra'"},
        {"{\"v\":1,\"id\":\"x\",\"type\":\"sh\",\"argv\":[\"sh\",\"-c\",\"x\"],\"attempt\":0,"
         "\"submitted_ms\":1}", "unknown job type 'sh'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pf_status st = pf_job_entry_parse(bad[i].text, strlen(bad[i].text), false, NULL, &e);
        CHECK(st == PF_ERR_FORMAT || st == PF_ERR_INVALID);
        if (!strstr(pf_last_error(), bad[i].why))
            fprintf(stderr, "  case %zu: message '%s' lacks '%s'\n", i, pf_last_error(), bad[i].why);
        CHECK(strstr(pf_last_error(), bad[i].why) != NULL);
        CHECK(e.argv == NULL && e.argc == 0);
    }
}

static void test_entry_submission(void)
{
    pf_job_entry e;
    const char *s = "{\"argv\":[\"segment\",\"in.mp4\",\"-o\",\"out.mp4\"],\"timeout_s\":5}";
    CHECK_OK(pf_job_entry_parse(s, strlen(s), true, NULL, &e));
    CHECK(pf_job_id_valid(e.id) && e.id[0] == 'j' && e.attempt == 0 && e.submitted_ms > 0);
    CHECK(strcmp(e.type, "segment") == 0 && e.timeout_s == 5);
    pf_job_entry_free(&e);
    /* The short form has no attempt etc.; a full entry is accepted too. */
    s = "{\"argv\":[\"run\",\"p.yaml\"],\"attempt\":3}";
    CHECK_EQ_INT(pf_job_entry_parse(s, strlen(s), true, NULL, &e), PF_ERR_FORMAT);
    CHECK(strstr(pf_last_error(), "unknown field 'attempt' (argv, id, timeout_s)") != NULL);
    s = job("\"argv\":[\"reproject\",\"a\"],\"attempt\":0,\"submitted_ms\":5");
    CHECK_OK(pf_job_entry_parse(s, strlen(s), true, NULL, &e));
    pf_job_entry_free(&e);
    /* The worker reads only full entries. */
    s = "{\"argv\":[\"run\",\"p.yaml\"]}";
    CHECK_EQ_INT(pf_job_entry_parse(s, strlen(s), false, NULL, &e), PF_ERR_FORMAT);
    CHECK_OK(pf_job_validate_json(s, strlen(s)));
    /* From a spec. */
    const char *words[] = {"reproject", "a.jpg", "-o", "out"};
    pf_job_spec spec = {.id = NULL, .argc = 4, .argv = words};
    CHECK_OK(pf_job_entry_from_spec(&spec, &e));
    CHECK(e.argc == 4 && pf_job_id_valid(e.id));
    char first[PF_JOB_ID_MAX];
    snprintf(first, sizeof first, "%s", e.id);
    pf_job_entry_free(&e);
    CHECK_OK(pf_job_entry_from_spec(&spec, &e));
    CHECK(strcmp(first, e.id) != 0); /* fresh ids differ */
    pf_job_entry_free(&e);
    spec.id = "bad id";
    CHECK_EQ_INT(pf_job_entry_from_spec(&spec, &e), PF_ERR_INVALID);
}

static void test_words(void)
{
    static const struct {
        const char *words[5];
        int argc;
        const char *root;
        const char *why; /* NULL: accepted */
    } cases[] = {
        {{"reproject", "a.jpg", "-o", "out"}, 4, NULL, NULL},
        {{"segment", "/data/in.mp4", "-o", "/data/x/out.mp4"}, 4, "/data", NULL},
        {{"segment", "/data/in.mp4", "--output=/data/o.mp4"}, 3, "/data/", NULL},
        {{"run", "/etc/p.yaml"}, 2, "/", NULL},
        {{"reproject", "a..b.jpg", "-o", "..out"}, 4, NULL, NULL}, /* not a component */
        {{"reproject", "../a.jpg"}, 2, NULL, "'..' in a path"},
        {{"reproject", "a/../../b"}, 2, NULL, "'..' in a path"},
        {{"reproject", "a", "-o", "x/.."}, 4, NULL, "'..' in a path"},
        {{"reproject", "a", "--output=.."}, 3, NULL, "'..' in a path"},
        {{"reproject", "/etc/passwd"}, 2, "/data", "outside the worker's root"},
        {{"reproject", "/database/a"}, 2, "/data", "outside the worker's root"},
        {{"reproject", "a", "--trace=/tmp/t.json"}, 3, "/data", "outside the worker's root"},
        {{"reproject", "-"}, 2, NULL, "stdin/stdout"},
        {{"reproject", "--list", "f.txt"}, 3, NULL, "'--list' is not allowed"},
        {{"reproject", "--list=f.txt"}, 2, NULL, "'--list' is not allowed"},
        {{"reproject", "a\nb"}, 2, NULL, "control character"},
        {{"info"}, 1, NULL, "unknown job type 'info'"},
        {{"queue", "add"}, 2, NULL, "unknown job type 'queue'"},
        {{"worker"}, 1, NULL, "unknown job type 'worker'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        pf_status st = pf_job_words_check(cases[i].argc, cases[i].words, cases[i].root);
        if (!cases[i].why) {
            CHECK_OK(st);
            continue;
        }
        CHECK_EQ_INT(st, PF_ERR_INVALID);
        if (!strstr(pf_last_error(), cases[i].why))
            fprintf(stderr, "  case %zu: message '%s' lacks '%s'\n", i, pf_last_error(),
                    cases[i].why);
        CHECK(strstr(pf_last_error(), cases[i].why) != NULL);
    }
    CHECK_EQ_INT(pf_job_words_check(0, NULL, NULL), PF_ERR_INVALID);
}

static void test_ids_and_names(void)
{
    CHECK(pf_job_id_valid("job-001"));
    CHECK(pf_job_id_valid("a.b_c:d-e"));
    CHECK(!pf_job_id_valid(""));
    CHECK(!pf_job_id_valid("a b"));
    CHECK(!pf_job_id_valid("a/b"));
    char long_id[200];
    memset(long_id, 'a', sizeof long_id - 1);
    long_id[sizeof long_id - 1] = '\0';
    CHECK(!pf_job_id_valid(long_id));
    pf_queue_keys k;
    CHECK_OK(pf_queue_keys_make("pano-1.x", &k));
    CHECK(strcmp(k.jobs, "pixflow:{pano-1.x}:jobs") == 0);
    CHECK(strcmp(k.done, "pixflow:{pano-1.x}:done") == 0);
    CHECK_EQ_INT(pf_queue_keys_make("a}b", &k), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_queue_keys_make("", &k), PF_ERR_INVALID);
}

static void test_urls(void)
{
    pf_conn c;
    memset(&c, 0, sizeof c);
    CHECK_OK(pf_redis_url_parse("redis://10.0.0.5:6380/2", &c));
    CHECK(strcmp(c.host, "10.0.0.5") == 0 && c.port == 6380 && c.db == 2 && !c.user);
    pf_conn_close(&c);
    CHECK_OK(pf_redis_url_parse("redis://alice@cache", &c));
    CHECK(strcmp(c.host, "cache") == 0 && c.port == 6379 && strcmp(c.user, "alice") == 0);
    CHECK(strcmp(c.redacted, "redis://***@cache") == 0);
    pf_conn_close(&c);
    CHECK_OK(pf_redis_url_parse("redis://[::1]:7000", &c));
    CHECK(strcmp(c.host, "::1") == 0 && c.port == 7000);
    pf_conn_close(&c);
    CHECK_OK(pf_redis_url_parse("unix:///run/redis.sock?db=3", &c));
    CHECK(strcmp(c.path, "/run/redis.sock") == 0 && c.db == 3);
    pf_conn_close(&c);
    CHECK_EQ_INT(pf_redis_url_parse("redis://bob:hunter2@h:1", &c), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "password in the URL") != NULL);
    CHECK(strstr(pf_last_error(), "hunter2") == NULL);
    pf_conn_close(&c);
    CHECK_EQ_INT(pf_redis_url_parse("rediss://h", &c), PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "TLS") != NULL);
    pf_conn_close(&c);
    const char *bad[] = {"", "h:6379", "redis://", "redis://h:0", "redis://h:99999",
                         "redis://h:x", "redis://h/db", "unix://rel.sock", "redis://h?x=1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK_EQ_INT(pf_redis_url_parse(bad[i], &c), PF_ERR_INVALID);
        pf_conn_close(&c);
    }
    char buf[128];
    CHECK(strcmp(pf_redis_url_redact("redis://u:p@h:1/0", buf, sizeof buf), "redis://***@h:1/0") == 0);
    CHECK(strcmp(pf_redis_url_redact("redis://h:1", buf, sizeof buf), "redis://h:1") == 0);
}

int main(void)
{
    PF_RUN(test_json_accepts);
    PF_RUN(test_json_refuses);
    PF_RUN(test_writer_round_trip);
    PF_RUN(test_entry_full);
    PF_RUN(test_entry_submission);
    PF_RUN(test_words);
    PF_RUN(test_ids_and_names);
    PF_RUN(test_urls);
    return pf_test_finish();
}
