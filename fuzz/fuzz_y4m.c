/* libFuzzer target: the Y4M parser (src/io/y4m.c) on arbitrary bytes.
 *
 * The bytes are read through fmemopen, as the reader reads a file or pipe:
 * the stream header, then frames until the end or an error. Whatever the
 * bytes, every call must return a status with a message on error (never
 * crash, hang or read out of bounds). Headers promising frames above 4
 * Mpixel are parsed but their frames not read, to keep runs fast.
 *
 *   cmake -S . -B build-fuzz -DPF_FUZZ=ON -DPF_CUDA=off -DCMAKE_C_COMPILER=clang
 *   cmake --build build-fuzz --target fuzz_y4m
 *   ./build-fuzz/fuzz/fuzz_y4m -max_len=65536
 */
#define _POSIX_C_SOURCE 200809L /* fmemopen */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "io/y4m.h"
#include "pixflow/pixflow.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) {
        pf_log_set_level(PF_LOG_QUIET);
        quiet = 1;
    }
    if (size == 0) return 0;
    FILE *fp = fmemopen((void *)data, size, "rb");
    if (!fp) return 0;
    pf_y4m_header h;
    pf_status st = pf_y4m_read_header(fp, "fuzz.y4m", &h);
    if (st != PF_OK && pf_last_error()[0] == '\0') __builtin_trap();
    if (st == PF_OK && (int64_t)h.width * h.height <= (4 << 20)) {
        pf_frame f = {0};
        uint8_t *scratch = malloc(pf_y4m_payload_size(&h));
        pf_pixfmt fmt = h.chroma == PF_Y4M_MONO ? PF_PIXFMT_GRAY8 : PF_PIXFMT_I420;
        if (scratch && pf_frame_alloc(&f, fmt, h.width, h.height, NULL, NULL) == PF_OK) {
            for (int64_t i = 0;; i++) {
                st = pf_y4m_read_frame(fp, "fuzz.y4m", &h, i, scratch, &f, NULL);
                if (st == PF_EOF) break;
                if (st != PF_OK) {
                    if (pf_last_error()[0] == '\0') __builtin_trap();
                    break;
                }
            }
        }
        pf_frame_unref(&f);
        free(scratch);
    }
    fclose(fp);
    return 0;
}
