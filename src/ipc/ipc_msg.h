/* Private: the wire format of pixflow IPC (docs/ipc.md) and its parser.
 *
 * Messages travel over a SOCK_SEQPACKET Unix socket, so each one arrives
 * whole or not at all and a short or oversized read is visible (MSG_TRUNC):
 * every message has one exact size for its type (config: a fixed part plus
 * a per-slot handle block). Both ends run on one machine, so fields are in
 * host byte order. The parser checks everything a message can say about
 * itself (magic, version, type, size, ranges, descriptors attached); what
 * depends on the session (is that slot held, is that sequence the one sent)
 * is checked by the producer and the consumer. */
#ifndef PF_IPC_MSG_H
#define PF_IPC_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "pixflow/ipc.h"

#define IPC_MAGIC 0x50494650u /* "PFIP" in memory on little-endian hosts */
#define IPC_VERSION 1

enum {
    IPC_MSG_HELLO = 1,    /* consumer -> producer */
    IPC_MSG_CONFIG = 2,   /* producer -> consumer, with the slots' fds (memfd, VMM) */
    IPC_MSG_FRAME = 3,    /* producer -> consumer */
    IPC_MSG_RELEASE = 4,  /* consumer -> producer */
    IPC_MSG_END = 5       /* producer -> consumer: clean end of stream */
};

/* Handle bytes per slot for CUDA (a cudaIpcMemHandle_t and a
 * cudaIpcEventHandle_t, 64 bytes each). */
#define IPC_HANDLE_BYTES 64

typedef struct ipc_hdr {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
} ipc_hdr;

typedef struct ipc_hello {
    ipc_hdr h;
    uint32_t policy;      /* pf_ipc_policy */
    uint32_t max_held;    /* 0 = producer's default */
    int32_t pid;
    uint32_t reserved;
    char name[32];        /* NUL-terminated within the field */
} ipc_hello;

typedef struct ipc_slot_handles {
    uint8_t mem[IPC_HANDLE_BYTES];    /* legacy: cudaIpcMemHandle_t; else zero */
    uint8_t event[IPC_HANDLE_BYTES];  /* CUDA: cudaIpcEventHandle_t; else zero */
} ipc_slot_handles;

typedef struct ipc_config {
    ipc_hdr h;
    uint32_t backend;     /* pf_ipc_backend */
    uint32_t format;      /* pf_pixfmt */
    uint32_t width, height;
    uint32_t num_slots;   /* 1..PF_IPC_MAX_SLOTS */
    uint32_t num_planes;
    uint32_t policy;      /* applied to this consumer (BLOCK or LATEST_ONLY) */
    uint32_t max_held;
    uint64_t slot_size;   /* bytes of each slot allocation */
    uint64_t frame_bytes; /* bytes a frame spans from its offset */
    uint64_t stride[3];
    uint64_t offset[3];   /* of each plane from the frame's start */
    uint8_t device_uuid[16]; /* CUDA device of the slots; zero on the CPU */
    int32_t producer_pid;
    uint32_t has_handles; /* 1: num_slots ipc_slot_handles follow */
} ipc_config;

typedef struct ipc_frame {
    ipc_hdr h;
    uint32_t slot;
    uint32_t flags;       /* IPC_FRAME_FENCE: wait on the slot's event */
    uint64_t seq;         /* 1, 2, ... over the producer's life */
    uint64_t offset;      /* of the frame in the slot */
    uint64_t size;        /* bytes from offset: >= config.frame_bytes, within the slot */
    uint32_t format, width, height;
    int32_t source;
    int64_t pts, index, duration;
    int32_t tb_num, tb_den, sar_num, sar_den;
    int32_t color_range, color_matrix, color_primaries, color_transfer;
    int64_t t_source_ns, t_publish_ns;
} ipc_frame;

#define IPC_FRAME_FENCE 1u

typedef struct ipc_release {
    ipc_hdr h;
    uint32_t slot;
    uint32_t reserved;
    uint64_t seq;
} ipc_release;

typedef struct ipc_end {
    ipc_hdr h;
    uint64_t frames;      /* published over the producer's life */
} ipc_end;

/* The largest message (a config with every slot's handles). */
#define IPC_MSG_MAX (sizeof(ipc_config) + PF_IPC_MAX_SLOTS * sizeof(ipc_slot_handles))

typedef struct ipc_msg {
    int type;
    union {
        ipc_hello hello;
        ipc_config config;
        ipc_frame frame;
        ipc_release release;
        ipc_end end;
    } u;
    const ipc_slot_handles *handles; /* config with has_handles: into the parsed buffer */
} ipc_msg;

/* Parses `len` bytes received with `nfds` descriptors attached (truncated:
 * the kernel cut the message or its descriptors). Checks magic, version,
 * exact size for the type, descriptor count (config: num_slots for memfd
 * and VMM, none for legacy; no other message carries any) and every field's
 * range, including the geometry of a config (planes inside frame_bytes,
 * frame_bytes inside slot_size) and of a frame (offset + size inside any
 * slot is checked by the receiver, which knows slot_size). Returns PF_OK or
 * PF_ERR_FORMAT with `why` (size bytes) saying what is wrong. Pure: safe on
 * any input (fuzz/fuzz_ipc_msg.c). */
pf_status ipc_msg_parse(const void *buf, size_t len, int nfds, int truncated, ipc_msg *out,
                        char *why, size_t why_size);

/* Checks a frame message against its session's config: slot in range,
 * geometry equal, offset and size inside the slot, aligned offset. */
pf_status ipc_frame_check(const ipc_frame *f, const ipc_config *c, char *why, size_t why_size);

/* Fills a header. */
void ipc_hdr_init(ipc_hdr *h, int type);

#endif
