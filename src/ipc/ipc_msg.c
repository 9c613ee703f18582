/* The IPC message parser (ipc_msg.h): everything a message says about
 * itself is checked here, before any field is used, so the producer and the
 * consumer only ever see messages of the right size with fields in range.
 * Fuzzed by fuzz/fuzz_ipc_msg.c. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ipc_msg.h"

#include "../core/error.h"

/* Slot allocations above this are refused (a hostile size cannot make a
 * consumer map terabytes). */
#define IPC_SLOT_MAX ((uint64_t)1 << 36)

static pf_status bad(char *why, size_t size, const char *fmt, ...) PF_PRINTF(3, 4);
static pf_status bad(char *why, size_t size, const char *fmt, ...)
{
    if (why && size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, size, fmt, ap);
        va_end(ap);
    }
    return PF_ERR_FORMAT;
}

void ipc_hdr_init(ipc_hdr *h, int type)
{
    h->magic = IPC_MAGIC;
    h->version = IPC_VERSION;
    h->type = (uint16_t)type;
}

static const char *type_name(int t)
{
    switch (t) {
    case IPC_MSG_HELLO: return "hello";
    case IPC_MSG_CONFIG: return "config";
    case IPC_MSG_FRAME: return "frame";
    case IPC_MSG_RELEASE: return "release";
    case IPC_MSG_END: return "end";
    default: return "?";
    }
}

static pf_status check_config(const ipc_config *c, int nfds, char *why, size_t ws)
{
    if (c->backend > PF_IPC_BACKEND_CUDA_LEGACY)
        return bad(why, ws, "config: backend %u unknown", c->backend);
    if (c->format <= PF_PIXFMT_NONE || c->format >= PF_PIXFMT_COUNT)
        return bad(why, ws, "config: pixel format %u unknown", c->format);
    if (c->width < 1 || c->width > PF_FRAME_MAX_DIM || c->height < 1 ||
        c->height > PF_FRAME_MAX_DIM)
        return bad(why, ws, "config: size %ux%u out of range 1..%d", c->width, c->height,
                   PF_FRAME_MAX_DIM);
    if (c->num_slots < 1 || c->num_slots > PF_IPC_MAX_SLOTS)
        return bad(why, ws, "config: %u slots (1..%d)", c->num_slots, PF_IPC_MAX_SLOTS);
    if (c->policy != PF_IPC_BLOCK && c->policy != PF_IPC_LATEST_ONLY)
        return bad(why, ws, "config: policy %u", c->policy);
    if (c->max_held < 1 || c->max_held > c->num_slots)
        return bad(why, ws, "config: max_held %u (1..%u)", c->max_held, c->num_slots);
    if (c->slot_size == 0 || c->slot_size > IPC_SLOT_MAX)
        return bad(why, ws, "config: slot size %llu bytes", (unsigned long long)c->slot_size);
    if (c->frame_bytes == 0 || c->frame_bytes > c->slot_size)
        return bad(why, ws, "config: frame of %llu bytes in a slot of %llu",
                   (unsigned long long)c->frame_bytes, (unsigned long long)c->slot_size);
    int planes = pf_pixfmt_num_planes((pf_pixfmt)c->format);
    if ((int)c->num_planes != planes)
        return bad(why, ws, "config: %u planes for %s (%d)", c->num_planes,
                   pf_pixfmt_name((pf_pixfmt)c->format), planes);
    for (int i = 0; i < planes; i++) {
        size_t row = 0, rows = 0;
        pf_pixfmt_plane_size((pf_pixfmt)c->format, (int)c->width, (int)c->height, i, &row, &rows);
        if (c->stride[i] < row || c->stride[i] > IPC_SLOT_MAX)
            return bad(why, ws, "config: plane %d stride %llu for rows of %zu bytes", i,
                       (unsigned long long)c->stride[i], row);
        /* All below < 2^36 * 2^16 < 2^64: no overflow. */
        uint64_t end = c->offset[i] + c->stride[i] * (rows - 1) + row;
        if (c->offset[i] > c->frame_bytes || end > c->frame_bytes)
            return bad(why, ws, "config: plane %d (offset %llu, stride %llu, %zu rows) ends at "
                       "%llu, past the frame's %llu bytes", i,
                       (unsigned long long)c->offset[i], (unsigned long long)c->stride[i], rows,
                       (unsigned long long)end, (unsigned long long)c->frame_bytes);
    }
    for (int i = planes; i < 3; i++)
        if (c->stride[i] || c->offset[i])
            return bad(why, ws, "config: unused plane %d has a stride or offset", i);
    bool cuda = c->backend != PF_IPC_BACKEND_MEMFD;
    if (c->has_handles != (cuda ? 1u : 0u))
        return bad(why, ws, "config: has_handles %u for backend %s", c->has_handles,
                   pf_ipc_backend_name((pf_ipc_backend)c->backend));
    int want_fds = c->backend == PF_IPC_BACKEND_CUDA_LEGACY ? 0 : (int)c->num_slots;
    if (nfds != want_fds)
        return bad(why, ws, "config: %d descriptors attached, %d expected", nfds, want_fds);
    return PF_OK;
}

static pf_status check_frame(const ipc_frame *f, char *why, size_t ws)
{
    if (f->slot >= PF_IPC_MAX_SLOTS) return bad(why, ws, "frame: slot %u", f->slot);
    if (f->seq == 0) return bad(why, ws, "frame: sequence 0");
    if (f->flags & ~IPC_FRAME_FENCE) return bad(why, ws, "frame: flags 0x%x", f->flags);
    if (f->offset > IPC_SLOT_MAX || f->size > IPC_SLOT_MAX || f->size == 0)
        return bad(why, ws, "frame: offset %llu size %llu", (unsigned long long)f->offset,
                   (unsigned long long)f->size);
    if (f->tb_num < 0 || f->tb_den < 0 || f->sar_num < 0 || f->sar_den < 0)
        return bad(why, ws, "frame: negative time base or aspect ratio");
    return PF_OK;
}

pf_status ipc_msg_parse(const void *buf, size_t len, int nfds, int truncated, ipc_msg *out,
                        char *why, size_t ws)
{
    memset(out, 0, sizeof *out);
    if (truncated) return bad(why, ws, "message or its descriptors truncated");
    if (!buf || len < sizeof(ipc_hdr))
        return bad(why, ws, "message of %zu bytes: shorter than a header", len);
    ipc_hdr h;
    memcpy(&h, buf, sizeof h);
    if (h.magic != IPC_MAGIC) return bad(why, ws, "bad magic 0x%08x", h.magic);
    if (h.version != IPC_VERSION)
        return bad(why, ws, "protocol version %u (this side speaks %d)", h.version, IPC_VERSION);
    size_t want = 0;
    switch (h.type) {
    case IPC_MSG_HELLO: want = sizeof(ipc_hello); break;
    case IPC_MSG_CONFIG: want = sizeof(ipc_config); break;
    case IPC_MSG_FRAME: want = sizeof(ipc_frame); break;
    case IPC_MSG_RELEASE: want = sizeof(ipc_release); break;
    case IPC_MSG_END: want = sizeof(ipc_end); break;
    default: return bad(why, ws, "unknown message type %u", h.type);
    }
    if (h.type == IPC_MSG_CONFIG && len >= sizeof(ipc_config)) {
        ipc_config c;
        memcpy(&c, buf, sizeof c);
        if (c.has_handles == 1 && c.num_slots <= PF_IPC_MAX_SLOTS)
            want += (size_t)c.num_slots * sizeof(ipc_slot_handles);
    }
    if (len != want)
        return bad(why, ws, "%s message of %zu bytes, expected %zu", type_name(h.type), len, want);
    if (h.type != IPC_MSG_CONFIG && nfds != 0)
        return bad(why, ws, "%s message carries %d descriptors", type_name(h.type), nfds);
    out->type = h.type;
    switch (h.type) {
    case IPC_MSG_HELLO:
        memcpy(&out->u.hello, buf, sizeof out->u.hello);
        if (out->u.hello.policy > PF_IPC_LATEST_ONLY)
            return bad(why, ws, "hello: policy %u", out->u.hello.policy);
        if (out->u.hello.max_held > PF_IPC_MAX_SLOTS)
            return bad(why, ws, "hello: max_held %u", out->u.hello.max_held);
        if (!memchr(out->u.hello.name, 0, sizeof out->u.hello.name))
            return bad(why, ws, "hello: name not terminated");
        return PF_OK;
    case IPC_MSG_CONFIG:
        memcpy(&out->u.config, buf, sizeof out->u.config);
        if (out->u.config.has_handles)
            out->handles = (const ipc_slot_handles *)(const void *)((const char *)buf +
                                                                      sizeof(ipc_config));
        return check_config(&out->u.config, nfds, why, ws);
    case IPC_MSG_FRAME:
        memcpy(&out->u.frame, buf, sizeof out->u.frame);
        return check_frame(&out->u.frame, why, ws);
    case IPC_MSG_RELEASE:
        memcpy(&out->u.release, buf, sizeof out->u.release);
        if (out->u.release.slot >= PF_IPC_MAX_SLOTS)
            return bad(why, ws, "release: slot %u", out->u.release.slot);
        if (out->u.release.seq == 0) return bad(why, ws, "release: sequence 0");
        return PF_OK;
    default:
        memcpy(&out->u.end, buf, sizeof out->u.end);
        return PF_OK;
    }
}

pf_status ipc_frame_check(const ipc_frame *f, const ipc_config *c, char *why, size_t ws)
{
    if (f->slot >= c->num_slots)
        return bad(why, ws, "frame: slot %u of %u", f->slot, c->num_slots);
    if (f->format != c->format || f->width != c->width || f->height != c->height)
        return bad(why, ws, "frame: %ux%u format %u, the pool's frames are %ux%u %s", f->width,
                   f->height, f->format, c->width, c->height,
                   pf_pixfmt_name((pf_pixfmt)c->format));
    if (f->offset % 256)
        return bad(why, ws, "frame: offset %llu not 256-byte aligned",
                   (unsigned long long)f->offset);
    if (f->offset > c->slot_size || f->size > c->slot_size - f->offset)
        return bad(why, ws, "frame: bytes %llu..%llu outside the slot's %llu",
                   (unsigned long long)f->offset, (unsigned long long)(f->offset + f->size),
                   (unsigned long long)c->slot_size);
    if (f->size < c->frame_bytes)
        return bad(why, ws, "frame: %llu bytes, a frame needs %llu",
                   (unsigned long long)f->size, (unsigned long long)c->frame_bytes);
    if ((f->flags & IPC_FRAME_FENCE) && c->backend == PF_IPC_BACKEND_MEMFD)
        return bad(why, ws, "frame: a fence on a host pool");
    return PF_OK;
}
