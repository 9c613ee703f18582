/* libFuzzer target: the IPC message parser (src/ipc/ipc_msg.c) on arbitrary
 * bytes, as a producer or a consumer would receive them from a hostile peer.
 *
 * The first byte sets the descriptor count and truncation flag the socket
 * layer would report; the rest is the message. Whatever the bytes, the
 * parser returns PF_OK or PF_ERR_FORMAT with a reason, never reads past the
 * message, and what it accepts is consistent: a config's planes lie inside
 * its frame and the frame inside its slots; a frame that passes the session
 * check (against a fixed config, and against the parsed config itself)
 * lies inside its slot.
 *
 *   cmake -S . -B build-fuzz -DPF_FUZZ=ON -DPF_CUDA=off -DCMAKE_C_COMPILER=clang
 *   cmake --build build-fuzz --target fuzz_ipc_msg
 *   ./build-fuzz/fuzz/fuzz_ipc_msg -max_len=9000
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/ipc_msg.h"
#include "pixflow/pixflow.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_frame_in(const ipc_frame *f, const ipc_config *c)
{
    char why[256];
    if (ipc_frame_check(f, c, why, sizeof why) != PF_OK) {
        if (!why[0]) __builtin_trap();
        return;
    }
    if (f->slot >= c->num_slots || f->offset + f->size > c->slot_size ||
        f->size < c->frame_bytes || f->width != c->width || f->height != c->height)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    int nfds = data[0] & 0x7f;
    int truncated = data[0] >> 7;
    /* A copy of exactly the message, so reading past it is caught. */
    size_t n = size - 1;
    uint8_t *msg = malloc(n ? n : 1);
    if (!msg) return 0;
    memcpy(msg, data + 1, n);
    ipc_msg m;
    char why[256];
    why[0] = '\0';
    pf_status st = ipc_msg_parse(msg, n, nfds, truncated, &m, why, sizeof why);
    if (st != PF_OK && (st != PF_ERR_FORMAT || !why[0])) __builtin_trap();
    if (st == PF_OK && m.type == IPC_MSG_CONFIG) {
        const ipc_config *c = &m.u.config;
        if (c->frame_bytes > c->slot_size || c->num_slots < 1 ||
            c->num_slots > PF_IPC_MAX_SLOTS)
            __builtin_trap();
        for (uint32_t p = 0; p < c->num_planes; p++) {
            size_t row, rows;
            pf_pixfmt_plane_size((pf_pixfmt)c->format, (int)c->width, (int)c->height, (int)p,
                                 &row, &rows);
            if (c->offset[p] + c->stride[p] * (rows - 1) + row > c->frame_bytes) __builtin_trap();
        }
        if (c->has_handles) { /* the handle block lies inside the message */
            volatile uint8_t sink = 0;
            for (uint32_t s = 0; s < c->num_slots; s++) sink ^= m.handles[s].event[63];
            (void)sink;
        }
    }
    if (st == PF_OK && m.type == IPC_MSG_FRAME) {
        ipc_config c;
        memset(&c, 0, sizeof c);
        c.backend = PF_IPC_BACKEND_MEMFD;
        c.format = PF_PIXFMT_NV12;
        c.width = 64;
        c.height = 32;
        c.num_slots = 4;
        c.num_planes = 2;
        c.slot_size = 4096;
        c.frame_bytes = 64 * 32 + 64 * 16;
        c.stride[0] = c.stride[1] = 64;
        c.offset[1] = 64 * 32;
        check_frame_in(&m.u.frame, &c);
    }
    free(msg);
    return 0;
}
