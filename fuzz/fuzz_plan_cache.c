/* libFuzzer target: the plan cache file parser (src/nn/plan_cache.c) on
 * arbitrary bytes. The input's first byte picks whether the checksum is
 * fixed up before parsing, so the fuzzer also reaches the structure checks
 * behind it (a file with a right checksum and hostile lengths).
 *
 * Whatever the bytes, pf_plan_cache_parse must return, never read out of
 * bounds or leak; on PF_OK every entry it reported has a NUL-terminated key
 * of at most PF_PLAN_CACHE_MAX_KEY bytes and a value of at most
 * PF_PLAN_CACHE_MAX_VALUE bytes (both read here so ASan sees them).
 *
 *   cmake -S . -B build-fuzz -DPF_FUZZ=ON -DPF_CUDA=off -DCMAKE_C_COMPILER=clang
 *   cmake --build build-fuzz --target fuzz_plan_cache
 *   ./build-fuzz/fuzz/fuzz_plan_cache -max_len=8192 corpus/
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "nn/plan_cache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile unsigned sink;

static void add(void *arg, const char *ekey, const void *val, size_t vsize)
{
    (void)arg;
    size_t k = strlen(ekey);
    if (k == 0 || k > PF_PLAN_CACHE_MAX_KEY || vsize > PF_PLAN_CACHE_MAX_VALUE) abort();
    const unsigned char *v = val;
    for (size_t i = 0; i < vsize; i++) sink += v[i];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    bool fix = data[0] & 1;
    data++, size--;
    unsigned char *b = malloc(size ? size : 1);
    if (!b) return 0;
    if (size) memcpy(b, data, size);
    if (fix && size >= 8) {
        uint64_t sum = pf_hash64(b, size - 8, PF_PLAN_CACHE_CHECK_SEED);
        for (int i = 0; i < 8; i++) b[size - 8 + (size_t)i] = (unsigned char)(sum >> (8 * i));
    }
    (void)pf_plan_cache_parse(b, size, "fuzz key", add, NULL);
    free(b);
    return 0;
}
