/* The IPC producer (pixflow/ipc.h).
 *
 * Design. Slots are allocated once; a slot is free when the producer holds
 * no frame of it and no consumer holds it. Consumers are entries of a fixed
 * table; each one records, per slot, the sequence number it was sent (0 =
 * not held), so a release is accepted only for exactly what that consumer
 * holds: a double release, a release of a slot never sent, or one with the
 * wrong sequence is a protocol violation and disconnects it. A service
 * thread polls the listening socket and every consumer socket: it accepts
 * (checking the peer's uid), answers hellos with the config and the slots'
 * descriptors, applies releases and notices closed sockets, giving back
 * everything a departed consumer held at once. publish runs on the caller's
 * thread: it sends the frame message to each consumer without blocking
 * (messages are small and a consumer holds at most the slot count, so a
 * full socket means a broken peer: it is disconnected). acquire waits for a
 * free slot; while it waits, a consumer holding a slot past the stall
 * timeout is disconnected, so one stuck process cannot stop the rest.
 * All state is under one mutex; the condition variable signals slots
 * coming back and consumers arriving. */
#define _GNU_SOURCE /* accept4, pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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
#include "../core/sys.h"

/* A consumer must say hello this soon after connecting. */
#define HELLO_TIMEOUT_NS (2000 * 1000000LL)

typedef struct pslot {
    struct pf_ipc_producer *owner;
    int index;
    ipc_slot_mem mem;
    bool producer_ref;          /* a frame from acquire is alive */
    int consumer_refs;          /* consumers holding it */
    uint64_t seq;               /* last sequence published in it */
    int64_t t_sent_ns;          /* when it was last sent */
    pf_buffer buf;              /* record for the producer's frame */
} pslot;

typedef struct pcons {
    int fd;                     /* -1: entry free */
    bool ready;                 /* hello answered */
    int64_t t_connect_ns;
    pid_t pid;
    char name[32];
    pf_ipc_policy policy;
    int max_held;
    int held;
    uint64_t held_seq[PF_IPC_MAX_SLOTS];
} pcons;

struct pf_ipc_producer {
    char *path;
    bool dir_created;
    pf_device *device;
    pf_ipc_backend backend;
    pf_pixfmt format;
    int width, height;
    ipc_config cfg;             /* the template sent in hello answers */
    int nslots;
    pslot slots[PF_IPC_MAX_SLOTS];
    pf_ipc_policy default_policy;
    int default_max_held;
    int64_t stall_ns;
    int listen_fd;
    int wake[2];
    pcons cons[PF_IPC_MAX_CONSUMERS];
    pf_mutex mu;
    pf_cond cond;
    pf_thread thread;
    bool thread_started;
    bool stopping;
    uint64_t seq;
    pf_ipc_producer_stats stats;
};

pf_ipc_producer_params pf_ipc_producer_params_default(void)
{
    pf_ipc_producer_params p = {0};
    p.slots = 8;
    p.default_policy = PF_IPC_BLOCK;
    p.default_max_held = 2;
    p.stall_timeout_ms = 10000;
    return p;
}

/* Consumers ------------------------------------------------------------------------------ */

static int live_consumers(const pf_ipc_producer *p)
{
    int n = 0;
    for (int i = 0; i < PF_IPC_MAX_CONSUMERS; i++) n += p->cons[i].fd >= 0 && p->cons[i].ready;
    return n;
}

/* Disconnects consumer c, giving back what it held. Under p->mu. */
static void drop_consumer(pf_ipc_producer *p, pcons *c, bool violation, const char *why)
{
    if (c->fd < 0) return;
    int back = 0;
    for (int s = 0; s < p->nslots; s++)
        if (c->held_seq[s]) {
            c->held_seq[s] = 0;
            p->slots[s].consumer_refs--;
            back++;
        }
    p->stats.slots_reclaimed += (uint64_t)back;
    if (violation) {
        p->stats.consumers_dropped++;
        PF_LOGW("ipc %s: consumer '%s' (pid %d) disconnected: %s; %d slot(s) reclaimed",
                p->path, c->name, (int)c->pid, why, back);
    } else if (c->ready) {
        p->stats.consumers_gone++;
        PF_LOGI("ipc %s: consumer '%s' (pid %d) left; %d slot(s) reclaimed", p->path, c->name,
                (int)c->pid, back);
    }
    close(c->fd);
    memset(c, 0, sizeof *c);
    c->fd = -1;
    pf_cond_broadcast(&p->cond);
}

static void accept_one(pf_ipc_producer *p)
{
    int fd = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    uid_t uid = (uid_t)-1;
    pid_t pid = -1;
    if (ipc_peer_cred(fd, &uid, &pid) != PF_OK || uid != geteuid()) {
        PF_LOGW("ipc %s: refused a connection from uid %d (pid %d): only uid %d may attach",
                p->path, (int)uid, (int)pid, (int)geteuid());
        p->stats.consumers_refused++;
        close(fd);
        return;
    }
    for (int i = 0; i < PF_IPC_MAX_CONSUMERS; i++)
        if (p->cons[i].fd < 0) {
            pcons *c = &p->cons[i];
            memset(c, 0, sizeof *c);
            c->fd = fd;
            c->pid = pid;
            c->t_connect_ns = pf_time_ns();
            snprintf(c->name, sizeof c->name, "pid %d", (int)pid);
            return;
        }
    PF_LOGW("ipc %s: refused pid %d: %d consumers attached already", p->path, (int)pid,
            PF_IPC_MAX_CONSUMERS);
    p->stats.consumers_refused++;
    close(fd);
}

static void answer_hello(pf_ipc_producer *p, pcons *c, const ipc_hello *h)
{
    c->policy = h->policy == PF_IPC_DEFAULT ? p->default_policy : (pf_ipc_policy)h->policy;
    int mh = h->max_held ? (int)h->max_held : p->default_max_held;
    if (c->policy == PF_IPC_BLOCK) mh = p->nslots;
    /* A latest-only consumer may never hold every slot: the producer must
     * always find one that no such consumer keeps. */
    if (mh > p->nslots - 1) mh = p->nslots > 1 ? p->nslots - 1 : 1;
    c->max_held = mh < 1 ? 1 : mh;
    if (h->name[0]) snprintf(c->name, sizeof c->name, "%s", h->name);
    unsigned char buf[IPC_MSG_MAX];
    ipc_config cfg = p->cfg;
    cfg.policy = (uint32_t)c->policy;
    cfg.max_held = (uint32_t)c->max_held;
    memcpy(buf, &cfg, sizeof cfg);
    size_t len = sizeof cfg;
    int fds[PF_IPC_MAX_SLOTS];
    int nfds = 0;
    for (int s = 0; s < p->nslots; s++) {
        ipc_slot_mem *m = &p->slots[s].mem;
        if (cfg.has_handles) {
            memcpy(buf + len, &m->handles, sizeof m->handles);
            len += sizeof m->handles;
        }
        if (p->backend != PF_IPC_BACKEND_CUDA_LEGACY)
            fds[nfds++] = m->fd_send >= 0 ? m->fd_send : m->fd;
    }
    if (ipc_send(c->fd, buf, len, fds, nfds, true) != PF_OK) {
        char why[300];
        snprintf(why, sizeof why, "sending the config: %s", pf_last_error());
        drop_consumer(p, c, true, why);
        return;
    }
    c->ready = true;
    p->stats.consumers_attached++;
    PF_LOGI("ipc %s: consumer '%s' (pid %d) attached, policy %s, max_held %d", p->path, c->name,
            (int)c->pid, pf_ipc_policy_name(c->policy), c->max_held);
    pf_cond_broadcast(&p->cond);
}

static void handle_message(pf_ipc_producer *p, pcons *c, const ipc_msg *m)
{
    char why[256];
    if (m->type == IPC_MSG_HELLO) {
        if (c->ready) drop_consumer(p, c, true, "a second hello");
        else answer_hello(p, c, &m->u.hello);
        return;
    }
    if (!c->ready) {
        drop_consumer(p, c, true, "a message before hello");
        return;
    }
    if (m->type != IPC_MSG_RELEASE) {
        snprintf(why, sizeof why, "message type %d is not for a producer", m->type);
        drop_consumer(p, c, true, why);
        return;
    }
    uint32_t s = m->u.release.slot;
    uint64_t seq = m->u.release.seq;
    if ((int)s >= p->nslots) {
        snprintf(why, sizeof why, "release of slot %u (the pool has %d)", s, p->nslots);
        drop_consumer(p, c, true, why);
        return;
    }
    if (c->held_seq[s] != seq) {
        if (c->held_seq[s] == 0)
            snprintf(why, sizeof why, "release of slot %u seq %llu, which it does not hold "
                     "(never received, or released twice)", s, (unsigned long long)seq);
        else
            snprintf(why, sizeof why, "release of slot %u with seq %llu; it holds seq %llu", s,
                     (unsigned long long)seq, (unsigned long long)c->held_seq[s]);
        drop_consumer(p, c, true, why);
        return;
    }
    c->held_seq[s] = 0;
    c->held--;
    p->slots[s].consumer_refs--;
    pf_cond_broadcast(&p->cond);
}

/* Reads what consumer c sent. Under p->mu. */
static void service_consumer(pf_ipc_producer *p, pcons *c)
{
    for (int k = 0; k < 64 && c->fd >= 0; k++) {
        unsigned char buf[sizeof(ipc_hello) + 64];
        size_t len;
        int fds[8], nfds, trunc;
        pf_status st = ipc_recv(c->fd, buf, sizeof buf, &len, fds, 8, &nfds, &trunc, 0);
        if (st == PF_AGAIN || st == PF_TIMEOUT) return;
        if (st != PF_OK) {
            drop_consumer(p, c, false, st == PF_EOF ? "closed" : pf_last_error());
            return;
        }
        ipc_close_fds(fds, nfds); /* a consumer never sends descriptors */
        ipc_msg m;
        char why[256];
        if (ipc_msg_parse(buf, len, nfds, trunc, &m, why, sizeof why) != PF_OK) {
            drop_consumer(p, c, true, why);
            return;
        }
        handle_message(p, c, &m);
    }
}

static void *service_main(void *arg)
{
    pf_ipc_producer *p = arg;
    struct pollfd pfd[2 + PF_IPC_MAX_CONSUMERS];
    int who[2 + PF_IPC_MAX_CONSUMERS];
    for (;;) {
        pf_mutex_lock(&p->mu);
        if (p->stopping) {
            pf_mutex_unlock(&p->mu);
            break;
        }
        int n = 0;
        pfd[n] = (struct pollfd){.fd = p->wake[0], .events = POLLIN};
        who[n++] = -1;
        pfd[n] = (struct pollfd){.fd = p->listen_fd, .events = POLLIN};
        who[n++] = -2;
        int64_t now = pf_time_ns();
        for (int i = 0; i < PF_IPC_MAX_CONSUMERS; i++) {
            pcons *c = &p->cons[i];
            if (c->fd < 0) continue;
            if (!c->ready && now - c->t_connect_ns > HELLO_TIMEOUT_NS) {
                drop_consumer(p, c, true, "no hello within 2 s");
                continue;
            }
            pfd[n] = (struct pollfd){.fd = c->fd, .events = POLLIN};
            who[n++] = i;
        }
        pf_mutex_unlock(&p->mu);
        int r = poll(pfd, (nfds_t)n, 250);
        if (r < 0 && errno != EINTR) break;
        if (r <= 0) continue;
        if (pfd[0].revents) {
            char drain[64];
            while (read(p->wake[0], drain, sizeof drain) > 0) {
            }
        }
        pf_mutex_lock(&p->mu);
        if (pfd[1].revents & POLLIN) accept_one(p);
        for (int k = 2; k < n; k++)
            if (pfd[k].revents && p->cons[who[k]].fd == pfd[k].fd)
                service_consumer(p, &p->cons[who[k]]);
        pf_mutex_unlock(&p->mu);
    }
    return NULL;
}

/* Lifecycle ---------------------------------------------------------------------------- */

static pf_status make_slots(pf_ipc_producer *p)
{
    size_t strides[3], offsets[3], total;
    pf_status st = pf_frame_layout(p->format, p->width, p->height, 256, strides, offsets, &total);
    if (st != PF_OK) return st;
    ipc_config *c = &p->cfg;
    memset(c, 0, sizeof *c);
    ipc_hdr_init(&c->h, IPC_MSG_CONFIG);
    c->backend = (uint32_t)p->backend;
    c->format = (uint32_t)p->format;
    c->width = (uint32_t)p->width;
    c->height = (uint32_t)p->height;
    c->num_slots = (uint32_t)p->nslots;
    c->num_planes = (uint32_t)pf_pixfmt_num_planes(p->format);
    c->frame_bytes = total;
    for (int i = 0; i < 3; i++) {
        c->stride[i] = strides[i];
        c->offset[i] = offsets[i];
    }
    c->producer_pid = (int32_t)getpid();
    c->has_handles = p->backend != PF_IPC_BACKEND_MEMFD;
    st = ipc_mem_device_uuid(p->device, c->device_uuid);
    if (st != PF_OK) return st;
    for (int s = 0; s < p->nslots; s++) {
        pslot *sl = &p->slots[s];
        sl->owner = p;
        sl->index = s;
        st = ipc_mem_alloc(p->backend, p->device, total, &sl->mem);
        if (st != PF_OK) {
            sl->mem.ptr = NULL;
            return pf_error_prefix(st, "ipc %s: slot %d of %d", p->path, s, p->nslots);
        }
        c->slot_size = sl->mem.size; /* equal for every slot */
    }
    return PF_OK;
}

pf_status pf_ipc_producer_create(const pf_ipc_producer_params *pp, pf_ipc_producer **out)
{
    PF_CHECK_ARG(out, "pf_ipc_producer_create", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(pp && pp->path && pp->path[0], "pf_ipc_producer_create", "params.path is empty");
    if (pp->slots < 1 || pp->slots > PF_IPC_MAX_SLOTS)
        return pf_set_error(PF_ERR_INVALID, "pf_ipc_producer_create: slots %d (1..%d)", pp->slots,
                            PF_IPC_MAX_SLOTS);
    if (pp->default_policy != PF_IPC_BLOCK && pp->default_policy != PF_IPC_LATEST_ONLY)
        return pf_set_error(PF_ERR_INVALID, "pf_ipc_producer_create: default_policy %d",
                            (int)pp->default_policy);
    size_t total;
    pf_status st = pf_frame_layout(pp->format, pp->width, pp->height, 256, NULL, NULL, &total);
    if (st != PF_OK) return pf_error_prefix(st, "pf_ipc_producer_create");
    pf_ipc_producer *p = calloc(1, sizeof *p);
    if (!p) return pf_set_error(PF_ERR_NOMEM, "pf_ipc_producer_create: out of host memory");
    p->listen_fd = -1;
    p->wake[0] = p->wake[1] = -1;
    for (int i = 0; i < PF_IPC_MAX_CONSUMERS; i++) p->cons[i].fd = -1;
    for (int s = 0; s < PF_IPC_MAX_SLOTS; s++) p->slots[s].mem.fd = p->slots[s].mem.fd_send = -1;
    pf_mutex_init(&p->mu);
    pf_cond_init(&p->cond);
    p->path = strdup(pp->path);
    p->device = pp->device;
    p->format = pp->format;
    p->width = pp->width;
    p->height = pp->height;
    p->nslots = pp->slots;
    p->default_policy = pp->default_policy;
    p->default_max_held = pp->default_max_held > 0 ? pp->default_max_held : 2;
    p->stall_ns = pp->stall_timeout_ms * 1000000;
    if (!p->path) st = pf_set_error(PF_ERR_NOMEM, "pf_ipc_producer_create: out of host memory");
    if (st == PF_OK) st = ipc_mem_choose(p->device, &p->backend);
    if (st == PF_OK) st = make_slots(p);
    if (st == PF_OK) st = ipc_private_dir(p->path, &p->dir_created);
    if (st == PF_OK) st = ipc_listen(p->path, &p->listen_fd);
    if (st == PF_OK && pipe2(p->wake, O_CLOEXEC | O_NONBLOCK) != 0)
        st = pf_set_error(PF_ERR_IO, "ipc: pipe: %s", strerror(errno));
    if (st == PF_OK) {
        st = pf_thread_start(&p->thread, "pf-ipc", service_main, p);
        p->thread_started = st == PF_OK;
    }
    p->stats.backend = p->backend;
    if (st != PF_OK) {
        pf_ipc_producer_destroy(&p);
        return st;
    }
    PF_LOGI("ipc %s: serving %d slots of %dx%d %s (%s, %llu bytes each)", p->path, p->nslots,
            p->width, p->height, pf_pixfmt_name(p->format), pf_ipc_backend_name(p->backend),
            (unsigned long long)p->cfg.slot_size);
    *out = p;
    return PF_OK;
}

void pf_ipc_producer_destroy(pf_ipc_producer **pp)
{
    if (!pp || !*pp) return;
    pf_ipc_producer *p = *pp;
    *pp = NULL;
    pf_mutex_lock(&p->mu);
    p->stopping = true;
    ipc_end end;
    memset(&end, 0, sizeof end);
    ipc_hdr_init(&end.h, IPC_MSG_END);
    end.frames = p->seq;
    for (int i = 0; i < PF_IPC_MAX_CONSUMERS; i++)
        if (p->cons[i].fd >= 0 && p->cons[i].ready)
            (void)ipc_send(p->cons[i].fd, &end, sizeof end, NULL, 0, true);
    pf_mutex_unlock(&p->mu);
    if (p->wake[1] >= 0) (void)!write(p->wake[1], "x", 1);
    if (p->thread_started) pf_thread_join(p->thread);
    for (int i = 0; i < PF_IPC_MAX_CONSUMERS; i++)
        if (p->cons[i].fd >= 0) close(p->cons[i].fd);
    if (p->listen_fd >= 0) {
        close(p->listen_fd);
        unlink(p->path);
    }
    if (p->dir_created && p->path) {
        char *slash = strrchr(p->path, '/');
        if (slash && slash != p->path) {
            *slash = '\0';
            rmdir(p->path); /* only if empty */
        }
    }
    for (int s = 0; s < p->nslots; s++) ipc_mem_free(&p->slots[s].mem);
    ipc_close_fd_quiet(p->wake[0]);
    ipc_close_fd_quiet(p->wake[1]);
    pf_cond_destroy(&p->cond);
    pf_mutex_destroy(&p->mu);
    free(p->path);
    free(p);
}

/* Frames ------------------------------------------------------------------------------------ */

static void slot_back(void *opaque, void *data, size_t size)
{
    (void)data;
    (void)size;
    pslot *s = opaque;
    pf_ipc_producer *p = s->owner;
    pf_mutex_lock(&p->mu);
    s->producer_ref = false;
    pf_cond_broadcast(&p->cond);
    pf_mutex_unlock(&p->mu);
}

/* Disconnects the consumers holding the longest-held slot once it is past
 * the stall timeout. Under p->mu. Returns when to look again (ns clock). */
static int64_t reclaim_stalled(pf_ipc_producer *p, int64_t now)
{
    if (p->stall_ns <= 0) return INT64_MAX;
    int oldest = -1;
    for (int s = 0; s < p->nslots; s++)
        if (p->slots[s].consumer_refs > 0 &&
            (oldest < 0 || p->slots[s].t_sent_ns < p->slots[oldest].t_sent_ns))
            oldest = s;
    if (oldest < 0) return INT64_MAX;
    int64_t due = p->slots[oldest].t_sent_ns + p->stall_ns;
    if (now < due) return due;
    for (int i = 0; i < PF_IPC_MAX_CONSUMERS; i++)
        if (p->cons[i].fd >= 0 && p->cons[i].held_seq[oldest]) {
            char why[160];
            snprintf(why, sizeof why, "held slot %d for %lld ms while the producer needed it",
                     oldest, (long long)((now - p->slots[oldest].t_sent_ns) / 1000000));
            drop_consumer(p, &p->cons[i], true, why);
        }
    return now;
}

pf_status pf_ipc_producer_acquire(pf_ipc_producer *p, int64_t timeout_us, pf_frame *out)
{
    PF_CHECK_ARG(p && out, "pf_ipc_producer_acquire", "producer or out is NULL");
    memset(out, 0, sizeof *out);
    int64_t t0 = pf_time_ns();
    int64_t deadline = timeout_us < 0 ? INT64_MAX : t0 + timeout_us * 1000;
    pf_mutex_lock(&p->mu);
    int found = -1;
    for (;;) {
        /* The least recently sent free slot: consumers that keep a pointer
         * a little too long see old data rather than a torn frame. */
        for (int s = 0; s < p->nslots; s++) {
            pslot *sl = &p->slots[s];
            if (sl->producer_ref || sl->consumer_refs) continue;
            if (found < 0 || sl->seq < p->slots[found].seq) found = s;
        }
        if (found >= 0) break;
        int64_t now = pf_time_ns();
        int64_t next = reclaim_stalled(p, now);
        if (next <= now) continue;
        if (now >= deadline) break;
        pf_cond_timedwait_until(&p->cond, &p->mu, next < deadline ? next : deadline);
    }
    p->stats.wait_ns += (uint64_t)(pf_time_ns() - t0);
    if (found < 0) {
        pf_mutex_unlock(&p->mu);
        if (timeout_us == 0) return PF_AGAIN;
        return pf_set_error(PF_TIMEOUT, "ipc %s: no free slot within %lld ms (all %d held by "
                            "consumers)", p->path, (long long)(timeout_us / 1000), p->nslots);
    }
    pslot *sl = &p->slots[found];
    sl->producer_ref = true;
    pf_mutex_unlock(&p->mu);
    pf_buffer_init_embedded(&sl->buf, sl->mem.ptr, sl->mem.size,
                            p->backend == PF_IPC_BACKEND_MEMFD ? PF_MEM_HOST : PF_MEM_DEVICE,
                            p->device, slot_back, sl);
    pf_buffer *b = &sl->buf;
    ipc_frame_view(out, &p->cfg, b, sl->mem.ptr, 0);
    pf_buffer_unref(&b);
    return PF_OK;
}

static pslot *slot_of(pf_ipc_producer *p, const pf_frame *f)
{
    for (int s = 0; s < p->nslots; s++)
        if (f->buf[0] == &p->slots[s].buf) return &p->slots[s];
    return NULL;
}

pf_status pf_ipc_producer_publish(pf_ipc_producer *p, pf_frame *f, pf_stream *stream,
                                  int64_t t_source_ns)
{
    PF_CHECK_ARG(p && f, "pf_ipc_producer_publish", "producer or frame is NULL");
    pslot *sl = slot_of(p, f);
    if (!sl) {
        pf_frame_unref(f);
        return pf_set_error(PF_ERR_INVALID, "pf_ipc_producer_publish: the frame is not a slot of "
                            "%s (use pf_ipc_producer_acquire, or _send to copy)", p->path);
    }
    pf_status st = ipc_mem_fence_record(&sl->mem, stream);
    if (st != PF_OK) {
        pf_frame_unref(f);
        return st;
    }
    ipc_frame m;
    memset(&m, 0, sizeof m);
    ipc_hdr_init(&m.h, IPC_MSG_FRAME);
    m.slot = (uint32_t)sl->index;
    m.flags = p->backend != PF_IPC_BACKEND_MEMFD ? IPC_FRAME_FENCE : 0;
    m.offset = 0;
    m.size = p->cfg.frame_bytes;
    m.format = p->cfg.format;
    m.width = p->cfg.width;
    m.height = p->cfg.height;
    m.source = f->source;
    m.pts = f->pts;
    m.index = f->index;
    m.duration = f->duration;
    m.tb_num = f->time_base.num;
    m.tb_den = f->time_base.den;
    m.sar_num = f->sar.num;
    m.sar_den = f->sar.den;
    m.color_range = (int32_t)f->color.range;
    m.color_matrix = f->color.matrix;
    m.color_primaries = f->color.primaries;
    m.color_transfer = f->color.transfer;
    m.t_publish_ns = pf_time_ns();
    m.t_source_ns = t_source_ns > 0 ? t_source_ns : m.t_publish_ns;
    pf_mutex_lock(&p->mu);
    m.seq = ++p->seq;
    sl->seq = m.seq;
    sl->t_sent_ns = m.t_publish_ns;
    p->stats.published++;
    int sent = 0;
    for (int i = 0; i < PF_IPC_MAX_CONSUMERS; i++) {
        pcons *c = &p->cons[i];
        if (c->fd < 0 || !c->ready) continue;
        if (c->policy == PF_IPC_LATEST_ONLY && c->held >= c->max_held) {
            p->stats.dropped++;
            continue;
        }
        pf_status s2 = ipc_send(c->fd, &m, sizeof m, NULL, 0, true);
        if (s2 != PF_OK) {
            char why[300];
            snprintf(why, sizeof why, "sending frame %llu: %s", (unsigned long long)m.seq,
                     pf_last_error());
            drop_consumer(p, c, s2 != PF_ERR_CLOSED, why);
            continue;
        }
        c->held_seq[sl->index] = m.seq;
        c->held++;
        sl->consumer_refs++;
        sent++;
    }
    p->stats.sent += (uint64_t)sent;
    if (!sent) p->stats.unconsumed++;
    pf_mutex_unlock(&p->mu);
    pf_frame_unref(f); /* the producer's reference; consumers hold theirs */
    return PF_OK;
}

pf_status pf_ipc_producer_send(pf_ipc_producer *p, const pf_frame *src, pf_stream *stream,
                               int64_t t_source_ns, int64_t timeout_us)
{
    PF_CHECK_ARG(p && src, "pf_ipc_producer_send", "producer or frame is NULL");
    if (src->format != p->format || src->width != p->width || src->height != p->height)
        return pf_set_error(PF_ERR_INVALID, "ipc %s: a %dx%d %s frame for a pool of %dx%d %s",
                            p->path, src->width, src->height, pf_pixfmt_name(src->format),
                            p->width, p->height, pf_pixfmt_name(p->format));
    pf_frame slot;
    pf_status st = pf_ipc_producer_acquire(p, timeout_us, &slot);
    if (st != PF_OK) return st;
    st = pf_frame_copy_async(&slot, src, stream);
    if (st == PF_OK && p->backend == PF_IPC_BACKEND_MEMFD && stream)
        st = pf_stream_synchronize(stream); /* complete before the message leaves */
    if (st != PF_OK) {
        pf_frame_unref(&slot);
        return st;
    }
    pf_frame_copy_props(&slot, src);
    return pf_ipc_producer_publish(p, &slot, stream, t_source_ns);
}

pf_status pf_ipc_producer_wait_consumers(pf_ipc_producer *p, int n, int64_t timeout_us)
{
    PF_CHECK_ARG(p, "pf_ipc_producer_wait_consumers", "producer is NULL");
    int64_t deadline = timeout_us < 0 ? INT64_MAX : pf_time_ns() + timeout_us * 1000;
    pf_mutex_lock(&p->mu);
    pf_status st = PF_OK;
    while (live_consumers(p) < n) {
        if (!pf_cond_timedwait_until(&p->cond, &p->mu, deadline) && pf_time_ns() >= deadline) {
            st = PF_TIMEOUT;
            break;
        }
    }
    pf_mutex_unlock(&p->mu);
    return st;
}

pf_status pf_ipc_producer_get_stats(pf_ipc_producer *p, pf_ipc_producer_stats *out)
{
    PF_CHECK_ARG(p && out, "pf_ipc_producer_get_stats", "producer or out is NULL");
    pf_mutex_lock(&p->mu);
    *out = p->stats;
    out->consumers = live_consumers(p);
    out->slots_free = 0;
    for (int s = 0; s < p->nslots; s++)
        out->slots_free += !p->slots[s].producer_ref && !p->slots[s].consumer_refs;
    pf_mutex_unlock(&p->mu);
    return PF_OK;
}
