/* libFuzzer target: the Redis queue's entry parser (src/queue/json.c and
 * entry.c) on arbitrary bytes, as a worker meets them in the stream.
 *
 * Whatever the bytes, the parsers must return, never read out of bounds or
 * leak; a failure leaves the output zeroed with a message; an accepted job
 * entry, written back, parses again to the same words, and any bytes
 * written as a JSON string parse back as a string.
 *
 *   cmake -S . -B build-fuzz -DPF_FUZZ=ON -DPF_CUDA=off -DCMAKE_C_COMPILER=clang \
 *         -DCMAKE_CXX_COMPILER=clang++
 *   cmake --build build-fuzz --target fuzz_queue_entry
 *   ./build-fuzz/fuzz/fuzz_queue_entry -max_len=4096 corpus/
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "queue/entry.h"
#include "queue/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_entry(const char *text, size_t size, bool submission, const char *root)
{
    pf_job_entry e;
    if (pf_job_entry_parse(text, size, submission, root, &e) != PF_OK) {
        if (e.argv || e.argc || e.last_error || !pf_last_error()[0]) __builtin_trap();
        return;
    }
    if (e.argc < 1 || !e.argv || e.argv[e.argc] || !pf_job_id_valid(e.id)) __builtin_trap();
    pf_sbuf b = {0};
    pf_job_entry_write(&b, &e);
    if (b.failed) __builtin_trap();
    pf_job_entry again;
    if (pf_job_entry_parse(b.data, b.len, false, root, &again) != PF_OK) __builtin_trap();
    if (again.argc != e.argc || again.attempt != e.attempt || strcmp(again.id, e.id) != 0)
        __builtin_trap();
    for (int i = 0; i < e.argc; i++)
        if (strcmp(again.argv[i], e.argv[i]) != 0) __builtin_trap();
    pf_job_entry_free(&again);
    pf_sbuf_free(&b);
    pf_job_entry_free(&e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    pf_json v;
    if (pf_json_parse(text, size, "fuzz", &v) == PF_OK) pf_json_free(&v);
    else if (v.count || v.items || v.string) __builtin_trap();

    check_entry(text, size, false, NULL);
    check_entry(text, size, true, "/data");

    /* Any bytes (up to the first NUL) written as a JSON string parse back. */
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    pf_sbuf b = {0};
    pf_sbuf_json_string(&b, s);
    if (!b.failed && b.len <= PF_JSON_MAX_SIZE) {
        if (pf_json_parse(b.data, b.len, "fuzz", &v) != PF_OK) {
            /* Only \u0000 can be refused, and the writer never makes one. */
            __builtin_trap();
        }
        if (v.type != PF_JSON_STRING) __builtin_trap();
        if (pf_utf8_valid(s, strlen(s)) && strcmp(v.string, s) != 0) __builtin_trap();
        pf_json_free(&v);
    }
    pf_sbuf_free(&b);
    free(s);
    return 0;
}
