/* libFuzzer target: the video reader (src/io/video_reader.c and, through
 * FFmpeg, src/io/video_ffmpeg.c; Y4M through y4m.c) on arbitrary files.
 *
 * The bytes are written to a file (FFmpeg's demuxers seek, as they do in a
 * real file) and read with pf_video_reader to the end. Whatever the bytes,
 * create and read must return (never crash, abort, hang or read out of
 * bounds), errors must carry a message naming the file, and a reader that
 * ended cleanly must have returned whole frames. To keep executions fast:
 * one decoder thread (deterministic), at most 4 Mpixel frames and 64 frames
 * per input. Seed corpus: fuzz/make-corpus.sh makes fuzz/corpus-video/
 * (small clips of mpeg4, h264, hevc, vp9, mjpeg, ffv1 and Y4M).
 *
 *   cmake -S . -B build-fuzz -DPF_FUZZ=ON -DPF_CUDA=off -DCMAKE_C_COMPILER=clang
 *   cmake --build build-fuzz --target fuzz_video
 *   fuzz/make-corpus.sh
 *   ./build-fuzz/fuzz/fuzz_video -max_len=65536 -timeout=10 fuzz/corpus-video
 */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pixflow/pixflow.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) {
        pf_log_set_level(PF_LOG_QUIET);
        /* tmpfs when there is one: a file per execution. */
        snprintf(path, sizeof path, "%s/pf_fuzz_video.%ld",
                 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (long)getpid());
    }
    FILE *fp = fopen(path, "wb");
    if (!fp) return 0;
    size_t w = fwrite(data, 1, size, fp);
    if (fclose(fp) != 0 || w != size) return 0;

    pf_video_reader_params rp = pf_video_reader_params_default();
    rp.path = path;
    rp.format = PF_PIXFMT_I420;
    rp.pool_size = 2;
    rp.threads = 1;
    pf_video_reader *r = NULL;
    pf_status st = pf_video_reader_create(&rp, &r);
    if (st != PF_OK) {
        if (r || !strstr(pf_last_error(), path)) __builtin_trap();
        return 0;
    }
    pf_video_info info;
    if (pf_video_reader_info(r, &info) != PF_OK) __builtin_trap();
    if ((int64_t)info.width * info.height <= (4 << 20)) {
        pf_frame f = {0};
        for (int i = 0; i < 64 && (st = pf_video_reader_read(r, &f)) == PF_OK; i++) {
            if (f.width != info.width || f.height != info.height || !f.data[0]) __builtin_trap();
            /* Whole frames: the last row of each plane is memory. */
            volatile uint8_t sink = f.data[0][(size_t)(f.height - 1) * f.stride[0] + f.width - 1];
            (void)sink;
            pf_frame_unref(&f);
        }
        if (st != PF_OK && st != PF_EOF && !strstr(pf_last_error(), path)) __builtin_trap();
    }
    pf_video_reader_destroy(&r);
    return 0;
}
