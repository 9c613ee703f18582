/* The IPC consumer (pixflow/ipc.h).
 *
 * Design. The mapped slots live in a refcounted core shared by the handle
 * and every frame handed out, so frames stay valid after the handle is
 * destroyed and the mappings go with the last of them. A frame's planes
 * reference the slot's embedded pf_buffer record; its free callback sends
 * the release (slot, sequence) - the producer never re-sends a slot this
 * consumer holds, so one record per slot suffices. Every message from the
 * producer is parsed (ipc_msg.c) and checked against the session (slot in
 * range and not held here, sequence increasing, geometry equal to the
 * config); anything else ends the session with PF_ERR_FORMAT: a consumer
 * never reads memory a hostile or broken producer points it at. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ipc_mem.h"
#include "ipc_sock.h"
#include "ipc_util.h"

#include "../core/buffer_impl.h"
#include "../core/error.h"

typedef struct cslot {
    struct ccore *core;
    int index;
    ipc_slot_mem mem;
    _Atomic uint64_t held_seq;  /* 0: not held here */
    pf_buffer buf;
} cslot;

typedef struct ccore {
    atomic_int refs;            /* the handle + one per frame handed out */
    atomic_bool closed;         /* no more releases to send */
    int fd;
    ipc_config cfg;
    int nslots;
    cslot slots[PF_IPC_MAX_SLOTS];
} ccore;

struct pf_ipc_consumer {
    ccore *core;
    char *path;
    pf_device *device;
    uint64_t last_seq;
    int state;                  /* 0 running, 1 clean end, 2 producer gone, 3 protocol error */
    char end_msg[256];
    pf_ipc_consumer_info info;
};

pf_ipc_consumer_params pf_ipc_consumer_params_default(void)
{
    pf_ipc_consumer_params p = {0};
    p.policy = PF_IPC_DEFAULT;
    p.connect_timeout_ms = 10000;
    return p;
}

static void core_unref(ccore *k)
{
    if (atomic_fetch_sub(&k->refs, 1) != 1) return;
    for (int s = 0; s < k->nslots; s++) ipc_mem_free(&k->slots[s].mem);
    if (k->fd >= 0) close(k->fd);
    free(k);
}

static void slot_release(void *opaque, void *data, size_t size)
{
    (void)data;
    (void)size;
    cslot *s = opaque;
    ccore *k = s->core;
    uint64_t seq = atomic_exchange(&s->held_seq, 0);
    if (seq && !atomic_load(&k->closed)) {
        ipc_release r;
        memset(&r, 0, sizeof r);
        ipc_hdr_init(&r.h, IPC_MSG_RELEASE);
        r.slot = (uint32_t)s->index;
        r.seq = seq;
        /* A failure means the producer is gone: it holds nothing of ours then. */
        if (ipc_send(k->fd, &r, sizeof r, NULL, 0, false) != PF_OK) pf_clear_error();
    }
    core_unref(k);
}

/* Receives the config and imports the slots. */
static pf_status attach(pf_ipc_consumer *c, const pf_ipc_consumer_params *pp)
{
    ccore *k = c->core;
    ipc_hello h;
    memset(&h, 0, sizeof h);
    ipc_hdr_init(&h.h, IPC_MSG_HELLO);
    h.policy = (uint32_t)pp->policy;
    h.max_held = (uint32_t)(pp->max_held > 0 ? pp->max_held : 0);
    h.pid = (int32_t)getpid();
    snprintf(h.name, sizeof h.name, "%s", pp->name ? pp->name : "");
    pf_status st = ipc_send(k->fd, &h, sizeof h, NULL, 0, false);
    if (st != PF_OK) return pf_error_prefix(PF_ERR_IO, "ipc %s: hello", c->path);
    unsigned char *buf = malloc(IPC_MSG_MAX);
    if (!buf) return pf_set_error(PF_ERR_NOMEM, "ipc: out of host memory");
    size_t len;
    int fds[PF_IPC_MAX_SLOTS], nfds, trunc;
    int64_t wait_us = pp->connect_timeout_ms > 0 ? pp->connect_timeout_ms * 1000 : 5000000;
    st = ipc_recv(k->fd, buf, IPC_MSG_MAX, &len, fds, PF_IPC_MAX_SLOTS, &nfds, &trunc, wait_us);
    if (st == PF_EOF)
        st = pf_set_error(PF_ERR_IO, "ipc %s: the producer closed the connection before its "
                          "config (refused: another user, or too many consumers)", c->path);
    else if (st == PF_TIMEOUT || st == PF_AGAIN)
        st = pf_set_error(PF_ERR_IO, "ipc %s: no config from the producer", c->path);
    if (st != PF_OK) {
        free(buf);
        return st;
    }
    ipc_msg m;
    char why[256];
    st = ipc_msg_parse(buf, len, nfds, trunc, &m, why, sizeof why);
    if (st == PF_OK && m.type != IPC_MSG_CONFIG) {
        snprintf(why, sizeof why, "message type %d where the config belongs", m.type);
        st = PF_ERR_FORMAT;
    }
    if (st != PF_OK) {
        ipc_close_fds(fds, nfds);
        free(buf);
        return pf_set_error(PF_ERR_FORMAT, "ipc %s: malformed config: %s", c->path, why);
    }
    k->cfg = m.u.config;
    k->nslots = (int)k->cfg.num_slots;
    int fi = 0;
    st = PF_OK;
    uint8_t uuid[16];
    bool dev_cuda = c->device && pf_device_get_type(c->device) == PF_DEVICE_CUDA;
    /* CUDA slots and their events belong to one GPU: read them there. */
    if (k->cfg.backend != PF_IPC_BACKEND_MEMFD && dev_cuda &&
        ipc_mem_device_uuid(c->device, uuid) == PF_OK &&
        memcmp(uuid, k->cfg.device_uuid, sizeof uuid) != 0)
        st = pf_set_error(PF_ERR_UNSUPPORTED, "ipc %s: the producer's slots are on another GPU "
                          "than %s (device UUIDs differ): run the consumer on the producer's "
                          "GPU", c->path, pf_device_spec(c->device));
    for (int s = 0; s < k->nslots; s++) {
        cslot *sl = &k->slots[s];
        sl->core = k;
        sl->index = s;
        int fd = k->cfg.backend == PF_IPC_BACKEND_CUDA_LEGACY ? -1 : fds[fi];
        if (fd >= 0) fds[fi++] = -1;
        const ipc_slot_handles *hd = m.handles ? &m.handles[s] : NULL;
        if (st == PF_OK) {
            st = ipc_mem_import((pf_ipc_backend)k->cfg.backend, c->device, fd, hd,
                                k->cfg.slot_size, &sl->mem);
            if (st != PF_OK) {
                sl->mem.ptr = NULL;
                st = pf_error_prefix(st, "ipc %s: slot %d", c->path, s);
            }
        } else {
            ipc_close_fd_quiet(fd);
            sl->mem.fd = sl->mem.fd_send = -1;
        }
    }
    ipc_close_fds(fds, nfds);
    free(buf);
    if (st != PF_OK) return st;
    pf_ipc_consumer_info *in = &c->info;
    in->backend = (pf_ipc_backend)k->cfg.backend;
    in->policy = (pf_ipc_policy)k->cfg.policy;
    in->max_held = (int)k->cfg.max_held;
    in->format = (pf_pixfmt)k->cfg.format;
    in->width = (int)k->cfg.width;
    in->height = (int)k->cfg.height;
    in->slots = k->nslots;
    return PF_OK;
}

pf_status pf_ipc_consumer_create(const pf_ipc_consumer_params *pp, pf_ipc_consumer **out)
{
    PF_CHECK_ARG(out, "pf_ipc_consumer_create", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(pp && pp->path && pp->path[0], "pf_ipc_consumer_create", "params.path is empty");
    if (pp->policy < PF_IPC_DEFAULT || pp->policy > PF_IPC_LATEST_ONLY)
        return pf_set_error(PF_ERR_INVALID, "pf_ipc_consumer_create: policy %d", (int)pp->policy);
    if (pp->max_held < 0 || pp->max_held > PF_IPC_MAX_SLOTS)
        return pf_set_error(PF_ERR_INVALID, "pf_ipc_consumer_create: max_held %d (0..%d)",
                            pp->max_held, PF_IPC_MAX_SLOTS);
    pf_ipc_consumer *c = calloc(1, sizeof *c);
    ccore *k = calloc(1, sizeof *k);
    if (!c || !k || !(c->path = strdup(pp->path))) {
        free(k);
        if (c) free(c->path);
        free(c);
        return pf_set_error(PF_ERR_NOMEM, "pf_ipc_consumer_create: out of host memory");
    }
    atomic_init(&k->refs, 1);
    atomic_init(&k->closed, false);
    k->fd = -1;
    c->core = k;
    c->device = pp->device;
    pf_status st = ipc_connect(pp->path, pp->connect_timeout_ms, &k->fd);
    uid_t uid = (uid_t)-1;
    pid_t pid = -1;
    if (st == PF_OK) st = ipc_peer_cred(k->fd, &uid, &pid);
    /* The other direction of the producer's check: frames only from a
     * process of this user. */
    if (st == PF_OK && uid != geteuid())
        st = pf_set_error(PF_ERR_IO, "ipc %s: the producer (pid %d) runs as uid %d, not as this "
                          "user (%d): refused", pp->path, (int)pid, (int)uid, (int)geteuid());
    if (st == PF_OK) st = attach(c, pp);
    if (st != PF_OK) {
        pf_ipc_consumer_destroy(&c);
        return st;
    }
    *out = c;
    return PF_OK;
}

void pf_ipc_consumer_destroy(pf_ipc_consumer **pc)
{
    if (!pc || !*pc) return;
    pf_ipc_consumer *c = *pc;
    *pc = NULL;
    ccore *k = c->core;
    /* With frames still out, closing (or shutting down either direction,
     * which the producer sees too) would let the producer reclaim and
     * rewrite slots those frames show: the socket then closes with the
     * last of them instead (what arrives meanwhile is never released: a
     * BLOCK producer may wait up to its stall timeout). */
    core_unref(k);
    free(c->path);
    free(c);
}

/* Ends the session: state and message for every later recv. */
static pf_status end_session(pf_ipc_consumer *c, int state, pf_status st, const char *what,
                             const char *detail)
{
    c->state = state;
    snprintf(c->end_msg, sizeof c->end_msg, "ipc %s: %s%s", c->path, what, detail ? detail : "");
    if (state != 1) {
        atomic_store(&c->core->closed, true);
        shutdown(c->core->fd, SHUT_RDWR);
    }
    if (st < 0) return pf_set_error(st, "%s", c->end_msg);
    return st;
}

static pf_status replay_end(pf_ipc_consumer *c)
{
    switch (c->state) {
    case 1: return PF_EOF;
    case 2: return pf_set_error(PF_ERR_CLOSED, "%s", c->end_msg);
    default: return pf_set_error(PF_ERR_FORMAT, "%s", c->end_msg);
    }
}

/* One message: PF_OK with *got set when it was a frame (in *out). */
static pf_status read_one(pf_ipc_consumer *c, int64_t timeout_us, pf_frame *out,
                          pf_ipc_frame_info *info, bool *got)
{
    ccore *k = c->core;
    *got = false;
    unsigned char buf[sizeof(ipc_config) + 64];
    size_t len;
    int fds[4], nfds, trunc;
    pf_status st = ipc_recv(k->fd, buf, sizeof buf, &len, fds, 4, &nfds, &trunc, timeout_us);
    if (st == PF_EOF)
        return end_session(c, 2, PF_ERR_CLOSED, "the producer went away without an end of "
                           "stream (it crashed or was killed)", NULL);
    if (st != PF_OK) return st;
    ipc_close_fds(fds, nfds);
    ipc_msg m;
    char why[256];
    if (ipc_msg_parse(buf, len, nfds, trunc, &m, why, sizeof why) != PF_OK)
        return end_session(c, 3, PF_ERR_FORMAT, "refused a malformed message from the "
                           "producer: ", why);
    if (m.type == IPC_MSG_END) return end_session(c, 1, PF_EOF, "end of stream", NULL);
    if (m.type != IPC_MSG_FRAME) {
        snprintf(why, sizeof why, "message type %d after the config", m.type);
        return end_session(c, 3, PF_ERR_FORMAT, "refused: ", why);
    }
    const ipc_frame *f = &m.u.frame;
    if (ipc_frame_check(f, &k->cfg, why, sizeof why) != PF_OK)
        return end_session(c, 3, PF_ERR_FORMAT, "refused a frame: ", why);
    if (f->seq <= c->last_seq) {
        snprintf(why, sizeof why, "sequence %llu after %llu", (unsigned long long)f->seq,
                 (unsigned long long)c->last_seq);
        return end_session(c, 3, PF_ERR_FORMAT, "refused a frame: ", why);
    }
    cslot *sl = &k->slots[f->slot];
    if (atomic_load(&sl->held_seq)) {
        snprintf(why, sizeof why, "slot %u sent again while this consumer holds it", f->slot);
        return end_session(c, 3, PF_ERR_FORMAT, "refused a frame: ", why);
    }
    c->info.gaps += f->seq - c->last_seq - 1;
    c->last_seq = f->seq;
    atomic_store(&sl->held_seq, f->seq);
    atomic_fetch_add(&k->refs, 1);
    bool dev = k->cfg.backend != PF_IPC_BACKEND_MEMFD;
    pf_buffer_init_embedded(&sl->buf, sl->mem.ptr, sl->mem.size,
                            dev ? PF_MEM_DEVICE : PF_MEM_HOST, dev ? c->device : NULL,
                            slot_release, sl);
    pf_buffer *b = &sl->buf;
    ipc_frame_view(out, &k->cfg, b, sl->mem.ptr, f->offset);
    pf_buffer_unref(&b);
    out->source = f->source;
    out->pts = f->pts;
    out->index = f->index;
    out->duration = f->duration;
    out->time_base = (pf_rational){f->tb_num, f->tb_den};
    out->sar = (pf_rational){f->sar_num, f->sar_den};
    out->color.range = (pf_color_range)f->color_range;
    out->color.matrix = f->color_matrix;
    out->color.primaries = f->color_primaries;
    out->color.transfer = f->color_transfer;
    info->seq = f->seq;
    info->slot = (int)f->slot;
    info->t_source_ns = f->t_source_ns;
    info->t_publish_ns = f->t_publish_ns;
    c->info.received++;
    *got = true;
    return PF_OK;
}

pf_status pf_ipc_consumer_recv(pf_ipc_consumer *c, int64_t timeout_us, pf_stream *stream,
                               pf_frame *out, pf_ipc_frame_info *info)
{
    PF_CHECK_ARG(c && out, "pf_ipc_consumer_recv", "consumer or out is NULL");
    memset(out, 0, sizeof *out);
    pf_ipc_frame_info dummy;
    if (!info) info = &dummy;
    if (c->state) return replay_end(c);
    bool got = false;
    pf_status st = read_one(c, timeout_us, out, info, &got);
    if (st != PF_OK) return st;
    /* Latest only: newer frames already waiting replace this one (the
     * older goes straight back to the producer). An end of stream or an
     * error behind it is kept for the next call. */
    while (c->info.policy == PF_IPC_LATEST_ONLY && !c->state) {
        pf_frame next;
        pf_ipc_frame_info ni;
        bool more = false;
        if (read_one(c, 0, &next, &ni, &more) != PF_OK || !more) break;
        pf_frame_unref(out);
        *out = next;
        *info = ni;
        c->info.skipped++;
    }
    pf_clear_error();
    cslot *sl = &c->core->slots[info->slot];
    if (c->core->cfg.backend != PF_IPC_BACKEND_MEMFD) {
        st = ipc_mem_fence_wait(&sl->mem, stream);
        if (st != PF_OK) pf_frame_unref(out);
    }
    return st;
}

pf_status pf_ipc_consumer_get_info(pf_ipc_consumer *c, pf_ipc_consumer_info *out)
{
    PF_CHECK_ARG(c && out, "pf_ipc_consumer_get_info", "consumer or out is NULL");
    *out = c->info;
    return PF_OK;
}
