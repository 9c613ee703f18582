/* libFuzzer target: the .npy reader of `pixflow model run` (tools/pixflow/
 * npy.c, compiled into this target since the CLI's sources are not in the
 * library) on arbitrary bytes.
 *
 * Whatever the bytes, npy_read_memory must return, never read out of bounds
 * or leak; a failure leaves *out zeroed with a message; a success gives an
 * array whose shape, count and byte size agree and whose data is readable
 * (walked here so ASan sees short buffers), and writing it back and reading
 * that gives the same array.
 *
 *   cmake -S . -B build-fuzz -DPF_FUZZ=ON -DPF_CUDA=off -DCMAKE_C_COMPILER=clang
 *   cmake --build build-fuzz --target fuzz_npy
 *   ./build-fuzz/fuzz/fuzz_npy -max_len=4096 corpus/
 */
/* getpid */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../tools/pixflow/npy.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile unsigned sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    npy_array a;
    char err[256] = "";
    if (!npy_read_memory(data, size, "fuzz.npy", &a, err, sizeof err)) {
        if (a.data || a.nbytes || !err[0]) __builtin_trap();
        return 0;
    }
    int64_t n = 1;
    for (int i = 0; i < a.ndim; i++) {
        if (a.shape[i] < 0) __builtin_trap();
        n *= a.shape[i];
    }
    if (n != a.numel || a.nbytes != (size_t)n * npy_dtype_size(a.dtype)) __builtin_trap();
    unsigned s = 0;
    for (size_t i = 0; i < a.nbytes; i++) s += ((const unsigned char *)a.data)[i];
    sink += s;
    /* Round trip through a file (small arrays only, to keep the fuzzer fast). */
    if (a.nbytes <= 4096) {
        char path[64];
        snprintf(path, sizeof path, "/tmp/fuzz_npy_%d.npy", (int)getpid());
        if (npy_write_file(path, a.dtype, a.ndim, a.shape, a.data, err, sizeof err)) {
            npy_array b;
            if (!npy_read_file(path, &b, err, sizeof err)) __builtin_trap();
            if (b.dtype != a.dtype || b.ndim != a.ndim || b.nbytes != a.nbytes ||
                memcmp(b.shape, a.shape, sizeof a.shape) ||
                (a.nbytes && memcmp(a.data, b.data, a.nbytes)))
                __builtin_trap();
            npy_free(&b);
        }
        remove(path);
    }
    npy_free(&a);
    return 0;
}
