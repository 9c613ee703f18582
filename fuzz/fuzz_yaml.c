/* libFuzzer target: the YAML pipeline loader on arbitrary bytes.
 *
 * The input is parsed in memory (pf_pipeline_create_from_yaml with `text`),
 * so no files are written. Whatever the bytes, the loader must return a
 * status (never crash, hang or leak); when it builds a pipeline, the
 * pipeline is destroyed without being started, so no frames are generated
 * and no device is needed: "auto" is forced to the CPU.
 *
 *   cmake -S . -B build-fuzz -DPF_FUZZ=ON -DPF_CUDA=off -DCMAKE_C_COMPILER=clang
 *   cmake --build build-fuzz --target fuzz_yaml
 *   ./build-fuzz/fuzz/fuzz_yaml -max_len=4096 examples/   # examples as the seed corpus
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pixflow/pixflow.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) {
        pf_log_set_level(PF_LOG_QUIET);
        quiet = 1;
    }
    pf_pipeline_yaml_params p = pf_pipeline_yaml_params_default();
    p.path = "fuzz.yaml";
    p.text = (const char *)data;
    p.text_len = size;
    p.device = "cpu";
    pf_pipeline *pl = NULL;
    pf_status st = pf_pipeline_create_from_yaml(&p, &pl);
    /* A success must give a pipeline, a failure none and a message. */
    if ((st == PF_OK) != (pl != NULL)) __builtin_trap();
    if (st != PF_OK && pf_last_error()[0] == '\0') __builtin_trap();
    pf_pipeline_destroy(&pl);
    return 0;
}
