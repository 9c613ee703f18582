/* Job entries: the schema checks (entry.h). Everything a worker refuses is
 * refused here, before a job reaches a runner, with a message that names
 * the field or the word, because the message is what an operator reads in
 * the dead-letter stream. */
#include "entry.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/error.h"

#define WORD_MAX 4096
#define TIMEOUT_MAX_S (7.0 * 24 * 3600)

static const char *const job_types[] = {"reproject", "segment", "run"};

int64_t pf_unix_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool pf_job_id_valid(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n >= PF_JOB_ID_MAX) return false;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-'))
            return false;
    }
    return true;
}

void pf_job_id_make(char *buf, size_t size)
{
    /* Unique across machines without coordination: 64 random bits (from the
     * kernel; the clock and pid as a fallback) after the time, which keeps
     * ids roughly in submission order. */
    unsigned long long r = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, &r, sizeof r) != (ssize_t)sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        r = ((unsigned long long)ts.tv_nsec << 20) ^ (unsigned long long)getpid() ^
            (unsigned long long)(uintptr_t)buf;
    }
    if (fd >= 0) close(fd);
    snprintf(buf, size, "j%012llx-%016llx", (unsigned long long)pf_unix_ms(), r);
}

/* Whether `path` has ".." as one of its '/'-separated components. */
static bool has_dotdot(const char *path)
{
    for (const char *p = path; (p = strstr(p, "..")) != NULL; p += 2) {
        bool start = p == path || p[-1] == '/';
        bool end = p[2] == '\0' || p[2] == '/';
        if (start && end) return true;
    }
    return false;
}

/* Whether absolute `path` is `root` or below it (root without trailing '/'). */
static bool under_root(const char *path, const char *root)
{
    size_t n = strlen(root);
    while (n > 1 && root[n - 1] == '/') n--;
    if (n == 1 && root[0] == '/') return true;
    return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

pf_status pf_job_words_check(int argc, const char *const *argv, const char *root)
{
    if (argc < 1 || !argv || !argv[0])
        return pf_set_error(PF_ERR_INVALID, "job: no command (argv is empty)");
    if (argc > PF_JOB_MAX_WORDS)
        return pf_set_error(PF_ERR_INVALID, "job: %d words, more than %d", argc, PF_JOB_MAX_WORDS);
    bool known = false;
    for (size_t i = 0; i < sizeof job_types / sizeof job_types[0]; i++)
        known |= strcmp(argv[0], job_types[i]) == 0;
    if (!known)
        return pf_set_error(PF_ERR_INVALID,
                            "job: unknown job type '%.64s' (reproject, segment or run)", argv[0]);
    for (int i = 1; i < argc; i++) {
        const char *w = argv[i];
        if (!w) return pf_set_error(PF_ERR_INVALID, "job: word %d is missing", i);
        size_t n = strlen(w);
        if (n > WORD_MAX)
            return pf_set_error(PF_ERR_INVALID, "job: word %d is %zu bytes, more than %d", i, n,
                                WORD_MAX);
        for (size_t k = 0; k < n; k++)
            if ((unsigned char)w[k] < 0x20 || w[k] == 0x7f)
                return pf_set_error(PF_ERR_INVALID, "job: word %d has a control character", i);
        if (strcmp(w, "-") == 0)
            return pf_set_error(PF_ERR_INVALID,
                                "job: word %d '-': stdin/stdout are not available to a queue job",
                                i);
        if (strcmp(w, "--list") == 0 || strncmp(w, "--list=", 7) == 0)
            return pf_set_error(PF_ERR_INVALID,
                                "job: word %d '--list' is not allowed in a queue job (name the "
                                "inputs in the job itself)", i);
        /* An option's value may be glued on with '=': check both parts. */
        const char *val = w;
        if (w[0] == '-' && w[1] == '-' && strchr(w, '=')) val = strchr(w, '=') + 1;
        if (has_dotdot(w) || has_dotdot(val))
            return pf_set_error(PF_ERR_INVALID,
                                "job: word %d '%.200s': '..' in a path is not allowed in a queue "
                                "job", i, w);
        if (root && val[0] == '/' && !under_root(val, root))
            return pf_set_error(PF_ERR_INVALID,
                                "job: word %d '%.200s': absolute path outside the worker's root "
                                "'%.200s'", i, w, root);
    }
    return PF_OK;
}

static pf_status field_error(const char *field, const char *want)
{
    return pf_set_error(PF_ERR_FORMAT, "job entry: field '%s' %s", field, want);
}

static pf_status copy_argv(pf_job_entry *e, int argc, const char *const *words)
{
    e->argv = calloc((size_t)argc + 1, sizeof *e->argv);
    if (!e->argv) return pf_set_error(PF_ERR_NOMEM, "job entry: out of host memory");
    for (int i = 0; i < argc; i++) {
        e->argv[i] = strdup(words[i]);
        if (!e->argv[i]) return pf_set_error(PF_ERR_NOMEM, "job entry: out of host memory");
        e->argc = i + 1;
    }
    return PF_OK;
}

static pf_status parse_fields(const pf_json *root, bool submission, const char *path_root,
                              pf_job_entry *e)
{
    if (root->type != PF_JSON_OBJECT)
        return pf_set_error(PF_ERR_FORMAT, "job entry: not a JSON object");
    const pf_json *v = pf_json_get(root, "v");
    bool full = v != NULL || !submission;
    static const char *const full_keys[] = {"v", "id", "type", "argv", "attempt",
                                            "submitted_ms", "timeout_s", "last_error"};
    static const char *const short_keys[] = {"argv", "id", "timeout_s"};
    const char *const *keys = full ? full_keys : short_keys;
    size_t nkeys = full ? sizeof full_keys / sizeof *full_keys
                        : sizeof short_keys / sizeof *short_keys;
    for (size_t i = 0; i < root->count; i++) {
        bool ok = false;
        for (size_t k = 0; k < nkeys; k++) ok |= strcmp(root->keys[i], keys[k]) == 0;
        if (!ok)
            return pf_set_error(PF_ERR_FORMAT, "job entry: unknown field '%.64s'%s",
                                root->keys[i], full ? "" : " (argv, id, timeout_s)");
    }
    if (full) {
        if (!v) return field_error("v", "(schema version) is missing");
        if (v->type != PF_JSON_NUMBER || !v->is_integer || v->integer < 1)
            return field_error("v", "must be a positive integer");
        if (v->integer > PF_JOB_SCHEMA_VERSION)
            return pf_set_error(PF_ERR_FORMAT,
                                "job entry: schema version %lld is newer than this worker's (%d): "
                                "upgrade pixflow", v->integer, PF_JOB_SCHEMA_VERSION);
        e->version = (int)v->integer;
    } else {
        e->version = PF_JOB_SCHEMA_VERSION;
    }

    const pf_json *id = pf_json_get(root, "id");
    if (id) {
        if (id->type != PF_JSON_STRING || !pf_job_id_valid(id->string))
            return field_error("id", "must be 1..127 characters of A-Z a-z 0-9 . _ : -");
        snprintf(e->id, sizeof e->id, "%s", id->string);
    } else if (full) {
        return field_error("id", "is missing");
    } else {
        pf_job_id_make(e->id, sizeof e->id);
    }

    const pf_json *argv = pf_json_get(root, "argv");
    if (!argv) return field_error("argv", "(the command line) is missing");
    if (argv->type != PF_JSON_ARRAY || argv->count == 0)
        return field_error("argv", "must be a non-empty array of strings");
    if (argv->count > PF_JOB_MAX_WORDS) return field_error("argv", "has too many words");
    const char **words = calloc(argv->count + 1, sizeof *words);
    if (!words) return pf_set_error(PF_ERR_NOMEM, "job entry: out of host memory");
    for (size_t i = 0; i < argv->count; i++) {
        if (argv->items[i].type != PF_JSON_STRING) {
            free(words);
            return pf_set_error(PF_ERR_FORMAT, "job entry: argv[%zu] is not a string", i);
        }
        words[i] = argv->items[i].string;
    }
    pf_status st = pf_job_words_check((int)argv->count, words, path_root);
    if (st == PF_OK) st = copy_argv(e, (int)argv->count, words);
    free(words);
    if (st != PF_OK) return st;
    snprintf(e->type, sizeof e->type, "%s", e->argv[0]);

    if (full) {
        const pf_json *type = pf_json_get(root, "type");
        if (!type) return field_error("type", "is missing");
        if (type->type != PF_JSON_STRING || strcmp(type->string, e->type) != 0)
            return field_error("type", "must be a string equal to argv[0]");
        const pf_json *att = pf_json_get(root, "attempt");
        if (!att) return field_error("attempt", "is missing");
        if (att->type != PF_JSON_NUMBER || !att->is_integer || att->integer < 0 ||
            att->integer > 1000000)
            return field_error("attempt", "must be an integer 0..1000000");
        e->attempt = (int)att->integer;
        const pf_json *sub = pf_json_get(root, "submitted_ms");
        if (!sub) return field_error("submitted_ms", "is missing");
        if (sub->type != PF_JSON_NUMBER || !sub->is_integer || sub->integer < 0)
            return field_error("submitted_ms", "must be a non-negative integer (Unix ms)");
        e->submitted_ms = sub->integer;
        const pf_json *le = pf_json_get(root, "last_error");
        if (le) {
            if (le->type != PF_JSON_STRING) return field_error("last_error", "must be a string");
            e->last_error = strdup(le->string);
            if (!e->last_error) return pf_set_error(PF_ERR_NOMEM, "job entry: out of host memory");
        }
    } else {
        e->submitted_ms = pf_unix_ms();
    }
    const pf_json *to = pf_json_get(root, "timeout_s");
    if (to) {
        if (to->type != PF_JSON_NUMBER || !(to->number > 0) || to->number > TIMEOUT_MAX_S)
            return field_error("timeout_s", "must be a number of seconds in (0, 604800]");
        e->timeout_s = to->number;
    }
    return PF_OK;
}

pf_status pf_job_entry_parse(const char *text, size_t len, bool submission, const char *root,
                             pf_job_entry *out)
{
    if (!out) return pf_set_error(PF_ERR_INVALID, "pf_job_entry_parse: out is NULL");
    memset(out, 0, sizeof *out);
    pf_json doc;
    pf_status st = pf_json_parse(text, len, "job entry", &doc);
    if (st != PF_OK) return st;
    st = parse_fields(&doc, submission, root, out);
    pf_json_free(&doc);
    if (st != PF_OK) pf_job_entry_free(out);
    return st;
}

pf_status pf_job_entry_from_spec(const pf_job_spec *spec, pf_job_entry *out)
{
    if (!out) return pf_set_error(PF_ERR_INVALID, "pf_job_entry_from_spec: out is NULL");
    memset(out, 0, sizeof *out);
    if (!spec) return pf_set_error(PF_ERR_INVALID, "job: spec is NULL");
    pf_status st = pf_job_words_check(spec->argc, spec->argv, NULL);
    if (st != PF_OK) return st;
    if (spec->id && !pf_job_id_valid(spec->id))
        return pf_set_error(PF_ERR_INVALID,
                            "job: id '%.64s' must be 1..127 characters of A-Z a-z 0-9 . _ : -",
                            spec->id);
    if (spec->timeout_s < 0 || spec->timeout_s > TIMEOUT_MAX_S || spec->timeout_s != spec->timeout_s)
        return pf_set_error(PF_ERR_INVALID, "job: timeout %g s is outside [0, 604800]",
                            spec->timeout_s);
    out->version = PF_JOB_SCHEMA_VERSION;
    if (spec->id) snprintf(out->id, sizeof out->id, "%s", spec->id);
    else pf_job_id_make(out->id, sizeof out->id);
    st = copy_argv(out, spec->argc, spec->argv);
    if (st != PF_OK) {
        pf_job_entry_free(out);
        return st;
    }
    snprintf(out->type, sizeof out->type, "%s", out->argv[0]);
    out->submitted_ms = pf_unix_ms();
    out->timeout_s = spec->timeout_s;
    return PF_OK;
}

void pf_job_entry_free(pf_job_entry *e)
{
    if (!e) return;
    if (e->argv)
        for (int i = 0; i < e->argc; i++) free(e->argv[i]);
    free(e->argv);
    free(e->last_error);
    memset(e, 0, sizeof *e);
}

void pf_job_entry_write(pf_sbuf *b, const pf_job_entry *e)
{
    /* Compact (one Redis field, one line); %.17g keeps timeout_s exact. */
    pf_json_writer w;
    pf_json_writer_init(&w, NULL, b, true, 17);
    pf_json_writer_object_begin(&w, NULL);
    pf_json_writer_int(&w, "v", PF_JOB_SCHEMA_VERSION);
    pf_json_writer_string(&w, "id", e->id);
    pf_json_writer_string(&w, "type", e->type);
    pf_json_writer_array_begin(&w, "argv");
    for (int i = 0; i < e->argc; i++) pf_json_writer_string(&w, NULL, e->argv[i]);
    pf_json_writer_array_end(&w);
    pf_json_writer_int(&w, "attempt", e->attempt);
    pf_json_writer_int(&w, "submitted_ms", (long long)e->submitted_ms);
    if (e->timeout_s > 0) pf_json_writer_double(&w, "timeout_s", e->timeout_s);
    if (e->last_error) pf_json_writer_string(&w, "last_error", e->last_error);
    pf_json_writer_object_end(&w);
    pf_json_writer_release(&w);
}

pf_status pf_job_validate_json(const char *json, size_t len)
{
    pf_job_entry e;
    pf_status st = pf_job_entry_parse(json, len, true, NULL, &e);
    pf_job_entry_free(&e);
    return st;
}
