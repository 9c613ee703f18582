/* libFuzzer target: the H.264/HEVC Annex B access-unit splitter
 * (src/io/h264_es.c) that feeds NVDEC, on arbitrary bytes.
 *
 * The bytes are probed for a codec and split into access units as both
 * H.264 and HEVC, in one piece and fed in two parts (the split a reader's
 * buffer refill makes). Every unit must lie inside the bytes, units must
 * cover them in order, and splitting must end (never crash, hang or read
 * out of bounds).
 *
 *   cmake -S . -B build-fuzz -DPF_FUZZ=ON -DPF_CUDA=off -DCMAKE_C_COMPILER=clang
 *   cmake --build build-fuzz --target fuzz_h264_es
 *   ./build-fuzz/fuzz/fuzz_h264_es -max_len=65536
 */
#include <stddef.h>
#include <stdint.h>

#include "io/h264_es.h"
#include "pixflow/pixflow.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void split(pf_es_codec codec, const uint8_t *data, size_t size)
{
    size_t off = 0;
    while (off < size) {
        size_t len = 0;
        /* First without the end of the stream: PF_AGAIN asks for more. */
        pf_status st = pf_es_next_au(codec, data + off, size - off, false, &len);
        if (st == PF_AGAIN) st = pf_es_next_au(codec, data + off, size - off, true, &len);
        if (st != PF_OK) __builtin_trap(); /* bytes are left: a unit must come */
        if (len == 0 || len > size - off) __builtin_trap();
        off += len;
    }
    size_t len = 0;
    if (pf_es_next_au(codec, data, 0, true, &len) != PF_EOF) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) {
        pf_log_set_level(PF_LOG_QUIET);
        quiet = 1;
    }
    (void)pf_es_probe(data, size);
    split(PF_ES_H264, data, size);
    split(PF_ES_HEVC, data, size);
    return 0;
}
