/* Internal: job entries (schema version 1, docs/queue.md): parsing with
 * every check a worker makes before it runs anything, writing, and the
 * result entry. Pure code (no Redis), so the fuzzer and unit tests reach it
 * in every build. */
#ifndef PF_QUEUE_ENTRY_H
#define PF_QUEUE_ENTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "json.h"
#include "pixflow/queue.h"

typedef struct pf_job_entry {
    int version;
    char id[PF_JOB_ID_MAX];
    char type[16];
    int argc;
    char **argv;          /* argc words + NULL, owned */
    int attempt;          /* failed runs so far (0 when submitted) */
    int64_t submitted_ms; /* Unix time of submission, ms */
    double timeout_s;     /* 0: the worker's default */
    char *last_error;     /* NULL, or why the previous run failed (owned) */
} pf_job_entry;

/* Parses a job entry. `submission`: also accept the short form of
 * `queue add --from` lines ({"argv": [...]} with optional "id" and
 * "timeout_s"; the rest is filled in: a fresh id, attempt 0, the current
 * time). Checks the schema, the command and its words (pf_job_words_check
 * with `root`). PF_ERR_FORMAT (not JSON, missing or mistyped field, newer
 * schema) and PF_ERR_INVALID (a refused word) name the field or word;
 * *out is zeroed on failure. */
pf_status pf_job_entry_parse(const char *text, size_t len, bool submission, const char *root,
                             pf_job_entry *out);
void pf_job_entry_free(pf_job_entry *e);

/* Fills *out from a spec (copies the words; a fresh id when spec->id is NULL)
 * after the same checks. */
pf_status pf_job_entry_from_spec(const pf_job_spec *spec, pf_job_entry *out);

/* The entry as one JSON object (schema version 1). */
void pf_job_entry_write(pf_sbuf *b, const pf_job_entry *e);

/* What a queue job may contain (docs/queue.md): argv[0] one of reproject,
 * segment, run; no word with a ".." path component, no "-" (stdin/stdout),
 * no --list (its file's paths would escape these checks), no control
 * characters; with `root`, absolute paths (also as --opt=/path) must lie
 * under it. PF_ERR_INVALID naming the word and the rule. */
pf_status pf_job_words_check(int argc, const char *const *argv, const char *root);

/* 1..127 bytes of [A-Za-z0-9._:-]. */
bool pf_job_id_valid(const char *id);
/* A fresh id: "j" + 12 hex digits of Unix ms + "-" + 16 random hex digits. */
void pf_job_id_make(char *buf, size_t size);

/* Unix time in ms (wall clock: entries are read on other machines). */
int64_t pf_unix_ms(void);

#endif
