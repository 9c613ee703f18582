/* IPC faults and security: crafted messages sent over the socket to a
 * producer and from a fake producer to a consumer must be refused (the
 * sender disconnected, logged) without corrupting anything; a consumer that
 * stalls is disconnected; the socket and its folder are private and another
 * user cannot attach.
 *
 *   hostile_consumers   raw clients send bad magic, truncated and oversized
 *                       messages, a release before hello, bad slot indices,
 *                       releases of slots never received, double releases,
 *                       wrong sequences, descriptors attached, a second hello,
 *                       a producer-only message, no hello at all (2 s): each
 *                       is disconnected, a
 *                       well-behaved consumer alongside keeps getting intact
 *                       frames and every slot comes back
 *   hostile_producer    a fake producer sends bad configs (geometry, sizes,
 *                       descriptor counts, unsealed or short memfds, writable
 *                       mappings refused) and bad frames (slot out of range,
 *                       larger than the slot, offsets outside it, repeated
 *                       sequence, a slot re-sent while held, descriptors,
 *                       truncated, unknown type): PF_ERR_FORMAT, no crash;
 *                       EOF without end of stream is PF_ERR_CLOSED
 *   stalled_consumer    a BLOCK consumer that never releases is dropped after
 *                       the stall timeout and the producer goes on
 *   permissions         folder 0700, socket 0600; an unsafe folder, a file
 *                       in the way, a live producer are refused; a stale
 *                       socket is replaced; another uid cannot attach (as
 *                       root: a child switched to uid 65534, also through an
 *                       opened-up folder, where SO_PEERCRED refuses it)
 *   parser_edges        the message parser on sizes and fields at the edges */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "ipc/ipc_msg.h"
#include "ipc/ipc_sock.h"
#include "ipc_test_util.h"
#include "pf_test.h"

/* A raw client of `path`. */
static int raw_connect(const char *path)
{
    int fd = -1;
    if (ipc_connect(path, 1000, &fd) != PF_OK) return -1;
    return fd;
}

/* Whether the peer closed `fd` within 4 s (a refused sender is dropped). */
static bool closed_by_peer(int fd)
{
    unsigned char buf[IPC_MSG_MAX];
    for (int i = 0; i < 8; i++) {
        size_t len;
        int fds[PF_IPC_MAX_SLOTS], nfds, tr;
        pf_status st = ipc_recv(fd, buf, sizeof buf, &len, fds, PF_IPC_MAX_SLOTS, &nfds, &tr,
                                4000000);
        ipc_close_fds(fds, nfds);
        if (st == PF_EOF) return true;
        if (st != PF_OK) return false;
        /* a config or frame first: read on */
    }
    return false;
}

static void send_hello(int fd)
{
    ipc_hello h;
    memset(&h, 0, sizeof h);
    ipc_hdr_init(&h.h, IPC_MSG_HELLO);
    h.policy = PF_IPC_LATEST_ONLY;
    ipc_send(fd, &h, sizeof h, NULL, 0, false);
}

/* Reads the config (closing its descriptors). */
static bool read_config(int fd)
{
    unsigned char buf[IPC_MSG_MAX];
    size_t len;
    int fds[PF_IPC_MAX_SLOTS], nfds, tr;
    pf_status st = ipc_recv(fd, buf, sizeof buf, &len, fds, PF_IPC_MAX_SLOTS, &nfds, &tr,
                            2000000);
    ipc_close_fds(fds, nfds);
    ipc_msg m;
    return st == PF_OK && ipc_msg_parse(buf, len, nfds, tr, &m, NULL, 0) == PF_OK &&
           m.type == IPC_MSG_CONFIG;
}

static bool read_frame(int fd, ipc_frame *out)
{
    unsigned char buf[IPC_MSG_MAX];
    size_t len;
    int fds[4], nfds, tr;
    pf_status st = ipc_recv(fd, buf, sizeof buf, &len, fds, 4, &nfds, &tr, 2000000);
    ipc_close_fds(fds, nfds);
    ipc_msg m;
    if (st != PF_OK || ipc_msg_parse(buf, len, nfds, tr, &m, NULL, 0) != PF_OK ||
        m.type != IPC_MSG_FRAME)
        return false;
    *out = m.u.frame;
    return true;
}

static void send_release(int fd, uint32_t slot, uint64_t seq)
{
    ipc_release r;
    memset(&r, 0, sizeof r);
    ipc_hdr_init(&r.h, IPC_MSG_RELEASE);
    r.slot = slot;
    r.seq = seq;
    ipc_send(fd, &r, sizeof r, NULL, 0, false);
}

static void publish_one(pf_ipc_producer *p, uint64_t seq)
{
    pf_frame f;
    CHECK_OK(pf_ipc_producer_acquire(p, 2000000, &f));
    ipc_fill(&f, seq);
    CHECK_OK(pf_ipc_producer_publish(p, &f, NULL, 0));
}

/* The well-behaved consumer gets frame `seq`, intact. */
static void good_gets(pf_ipc_consumer *c, uint64_t seq)
{
    pf_frame f;
    pf_ipc_frame_info info;
    CHECK_OK(pf_ipc_consumer_recv(c, 2000000, NULL, &f, &info));
    CHECK_EQ_INT(info.seq, seq);
    CHECK(f.buf[0] && ipc_check(&f, seq));
    pf_frame_unref(&f);
}

enum { BAD_MAGIC, TRUNCATED, OVERSIZED, RELEASE_FIRST, BAD_SLOT, NEVER_SENT, DOUBLE_RELEASE,
       WRONG_SEQ, WITH_FDS, HELLO_TWICE, WRONG_TYPE, NUM_CASES };
static const char *const case_names[] = {"bad magic", "truncated", "oversized",
                                         "release before hello", "slot out of range",
                                         "never sent", "double release", "wrong sequence",
                                         "descriptors attached", "second hello",
                                         "producer-only type"};

static void hostile_consumers(void)
{
    char dir[256], path[300];
    ipc_test_dir(dir, sizeof dir, "h");
    snprintf(path, sizeof path, "%s/s.sock", dir);
    pf_log_set_level(PF_LOG_QUIET);
    pf_ipc_producer_params pp = ipc_test_params(path, PF_PIXFMT_I420, 31, 17, 4);
    pf_ipc_producer *p = NULL;
    REQUIRE(pf_ipc_producer_create(&pp, &p) == PF_OK);
    pf_ipc_consumer_params cp = pf_ipc_consumer_params_default();
    cp.path = path;
    pf_ipc_consumer *good = NULL;
    REQUIRE(pf_ipc_consumer_create(&cp, &good) == PF_OK);
    uint64_t seq = 0;
    for (int k = 0; k < NUM_CASES; k++) {
        int fd = raw_connect(path);
        REQUIRE(fd >= 0);
        ipc_release rel;
        memset(&rel, 0, sizeof rel);
        ipc_hdr_init(&rel.h, IPC_MSG_RELEASE);
        rel.slot = 0;
        rel.seq = 1;
        ipc_frame fr;
        switch (k) {
        case BAD_MAGIC: {
            ipc_hello h;
            memset(&h, 0, sizeof h);
            ipc_hdr_init(&h.h, IPC_MSG_HELLO);
            h.h.magic ^= 1;
            ipc_send(fd, &h, sizeof h, NULL, 0, false);
            break;
        }
        case TRUNCATED: {
            ipc_hello h;
            memset(&h, 0, sizeof h);
            ipc_hdr_init(&h.h, IPC_MSG_HELLO);
            ipc_send(fd, &h, sizeof h - 5, NULL, 0, false);
            break;
        }
        case OVERSIZED: {
            unsigned char big[4096];
            memset(big, 0, sizeof big);
            ipc_hdr_init((ipc_hdr *)(void *)big, IPC_MSG_HELLO);
            ipc_send(fd, big, sizeof big, NULL, 0, false);
            break;
        }
        case RELEASE_FIRST: ipc_send(fd, &rel, sizeof rel, NULL, 0, false); break;
        case BAD_SLOT:
            send_hello(fd);
            CHECK(read_config(fd));
            send_release(fd, 3, 1);   /* in the protocol's range, past this pool's... */
            break;
        case NEVER_SENT:
            send_hello(fd);
            CHECK(read_config(fd));
            send_release(fd, 1, seq + 1);
            break;
        case DOUBLE_RELEASE:
        case WRONG_SEQ:
            send_hello(fd);
            CHECK(read_config(fd));
            CHECK_OK(pf_ipc_producer_wait_consumers(p, 2, 2000000));
            publish_one(p, ++seq);
            good_gets(good, seq);
            REQUIRE(read_frame(fd, &fr));
            if (k == DOUBLE_RELEASE) {
                send_release(fd, fr.slot, fr.seq);
                send_release(fd, fr.slot, fr.seq);
            } else {
                send_release(fd, fr.slot, fr.seq + 1);
            }
            break;
        case WITH_FDS: {
            ipc_hello h;
            memset(&h, 0, sizeof h);
            ipc_hdr_init(&h.h, IPC_MSG_HELLO);
            int mfd = memfd_create("x", MFD_CLOEXEC);
            ipc_send(fd, &h, sizeof h, &mfd, 1, false);
            close(mfd);
            break;
        }
        case HELLO_TWICE:
            send_hello(fd);
            CHECK(read_config(fd));
            send_hello(fd);
            break;
        case WRONG_TYPE: {
            send_hello(fd);
            CHECK(read_config(fd));
            ipc_end e;
            memset(&e, 0, sizeof e);
            ipc_hdr_init(&e.h, IPC_MSG_END);
            ipc_send(fd, &e, sizeof e, NULL, 0, false);
            break;
        }
        }
        bool dropped = closed_by_peer(fd);
        if (!dropped) fprintf(stderr, "  case '%s' was not refused\n", case_names[k]);
        CHECK(dropped);
        close(fd);
        /* The pool is intact: the good consumer gets the next frame. */
        publish_one(p, ++seq);
        good_gets(good, seq);
    }
    /* Silence: a connection that never says hello is closed after 2 s
     * (it would hold one of the producer's consumer entries forever). */
    int64_t t_silent = pf_time_ns();
    int quiet = raw_connect(path);
    CHECK(closed_by_peer(quiet));
    double silent_s = (double)(pf_time_ns() - t_silent) / 1e9;
    CHECK(silent_s > 1.5 && silent_s < 5.0);
    close(quiet);
    /* A bad slot index must be outside the pool: send one past it. */
    int fd = raw_connect(path);
    send_hello(fd);
    CHECK(read_config(fd));
    send_release(fd, 4, 1);
    CHECK(closed_by_peer(fd));
    close(fd);
    pf_ipc_producer_stats s;
    for (int i = 0; i < 100; i++) { /* the service thread frees slots asynchronously */
        CHECK_OK(pf_ipc_producer_get_stats(p, &s));
        if (s.slots_free == pp.slots && s.consumers == 1) break;
        ipc_sleep_us(10000);
    }
    CHECK_EQ_INT(s.slots_free, pp.slots);
    CHECK_EQ_INT(s.consumers, 1);
    CHECK(s.consumers_dropped >= NUM_CASES);
    pf_ipc_consumer_destroy(&good);
    pf_ipc_producer_destroy(&p);
    pf_log_set_level(PF_LOG_WARN);
    rmdir(dir);
}

/* Fake producer ------------------------------------------------------------------------------ */

enum { CFG_OK, CFG_BAD_MAGIC, CFG_FRAME_PAST_SLOT, CFG_PLANE_PAST_FRAME, CFG_FEWER_FDS,
       CFG_UNSEALED, CFG_SHORT_MEMFD, CFG_HANDLES, CFG_NUM };

enum { FR_NONE, FR_SLOT_RANGE, FR_LARGER, FR_OFFSET, FR_SEQ_REPEAT, FR_HELD_AGAIN, FR_FDS,
       FR_TRUNCATED, FR_UNKNOWN_TYPE, FR_NUM };

typedef struct fake {
    char path[300];
    int cfg_case, frame_case;
    bool send_end;
    int listen_fd;
} fake;

static void make_config(ipc_config *c, int slots)
{
    memset(c, 0, sizeof *c);
    ipc_hdr_init(&c->h, IPC_MSG_CONFIG);
    c->backend = PF_IPC_BACKEND_MEMFD;
    c->format = PF_PIXFMT_GRAY8;
    c->width = 64;
    c->height = 4;
    c->num_slots = (uint32_t)slots;
    c->num_planes = 1;
    c->policy = PF_IPC_BLOCK;
    c->max_held = (uint32_t)slots;
    c->slot_size = 4096;
    c->frame_bytes = 256 * 4;
    c->stride[0] = 256;
    c->producer_pid = (int32_t)getpid();
}

static int sealed_memfd(size_t size, bool seal)
{
    int fd = memfd_create("fake-slot", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (ftruncate(fd, (off_t)size) != 0) return fd;
    if (seal) fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
    return fd;
}

static void fake_frame(ipc_frame *f, uint32_t slot, uint64_t seq)
{
    memset(f, 0, sizeof *f);
    ipc_hdr_init(&f->h, IPC_MSG_FRAME);
    f->slot = slot;
    f->seq = seq;
    f->size = 1024;
    f->format = PF_PIXFMT_GRAY8;
    f->width = 64;
    f->height = 4;
}

static void *fake_main(void *arg)
{
    fake *fk = arg;
    int fd = accept(fk->listen_fd, NULL, NULL);
    if (fd < 0) return NULL;
    unsigned char buf[256];
    size_t len;
    int fds[4], nfds, tr;
    ipc_recv(fd, buf, sizeof buf, &len, fds, 4, &nfds, &tr, 2000000); /* hello */
    ipc_config c;
    make_config(&c, 2);
    int slot_fds[2] = {sealed_memfd(4096, fk->cfg_case != CFG_UNSEALED),
                       sealed_memfd(fk->cfg_case == CFG_SHORT_MEMFD ? 1024 : 4096,
                                    fk->cfg_case != CFG_UNSEALED)};
    int nsend = 2;
    switch (fk->cfg_case) {
    case CFG_BAD_MAGIC: c.h.magic = 0; break;
    case CFG_FRAME_PAST_SLOT: c.frame_bytes = 8192; break;
    case CFG_PLANE_PAST_FRAME: c.stride[0] = 512; break;
    case CFG_FEWER_FDS: nsend = 1; break;
    case CFG_HANDLES: c.has_handles = 1; break;
    default: break;
    }
    ipc_send(fd, &c, sizeof c, slot_fds, nsend, false);
    ipc_close_fds(slot_fds, 2);
    ipc_frame f;
    fake_frame(&f, 0, 1);
    if (fk->frame_case != FR_NONE) {
        /* A good first frame, so that "held" and "sequence" cases have history. */
        ipc_send(fd, &f, sizeof f, NULL, 0, false);
        fake_frame(&f, 1, 2);
        int extra = -1;
        switch (fk->frame_case) {
        case FR_SLOT_RANGE: f.slot = 2; break;
        case FR_LARGER: f.width = 65; f.size = 2048; break;
        case FR_OFFSET: f.offset = 3584; break;
        case FR_SEQ_REPEAT: f.seq = 1; break;
        case FR_HELD_AGAIN: f.slot = 0; break;
        case FR_FDS: extra = sealed_memfd(4096, true); break;
        default: break;
        }
        if (fk->frame_case == FR_TRUNCATED) ipc_send(fd, &f, sizeof f - 8, NULL, 0, false);
        else if (fk->frame_case == FR_UNKNOWN_TYPE) {
            f.h.type = 99;
            ipc_send(fd, &f, sizeof f, NULL, 0, false);
        } else ipc_send(fd, &f, sizeof f, extra >= 0 ? &extra : NULL, extra >= 0, false);
        if (extra >= 0) close(extra);
    } else if (fk->send_end) {
        ipc_end e;
        memset(&e, 0, sizeof e);
        ipc_hdr_init(&e.h, IPC_MSG_END);
        ipc_send(fd, &e, sizeof e, NULL, 0, false);
    }
    ipc_sleep_us(50000); /* the consumer reads what is queued, then sees the close */
    close(fd);
    return NULL;
}

static pf_status run_fake(fake *fk, pf_status *recv1, pf_status *recv2)
{
    pthread_t t;
    pthread_create(&t, NULL, fake_main, fk);
    pf_ipc_consumer_params cp = pf_ipc_consumer_params_default();
    cp.path = fk->path;
    pf_ipc_consumer *c = NULL;
    pf_status st = pf_ipc_consumer_create(&cp, &c);
    if (st == PF_OK) {
        pf_frame f1, f2;
        *recv1 = pf_ipc_consumer_recv(c, 2000000, NULL, &f1, NULL);
        *recv2 = *recv1 == PF_OK ? pf_ipc_consumer_recv(c, 2000000, NULL, &f2, NULL) : *recv1;
        if (*recv1 == PF_OK) {
            /* The first, good frame really is the slot (zeros: memfds start empty). */
            CHECK(f1.data[0][0] == 0 && f1.data[0][255 + 3 * 256] == 0);
            pf_frame_unref(&f1);
        }
        if (*recv2 == PF_OK) pf_frame_unref(&f2);
        pf_ipc_consumer_destroy(&c);
    }
    pthread_join(t, NULL);
    return st;
}

static void hostile_producer(void)
{
    char dir[256];
    ipc_test_dir(dir, sizeof dir, "fp");
    fake fk = {0};
    snprintf(fk.path, sizeof fk.path, "%s/fake.sock", dir);
    REQUIRE(ipc_listen(fk.path, &fk.listen_fd) == PF_OK);
    pf_status r1 = PF_OK, r2 = PF_OK;
    for (int k = CFG_BAD_MAGIC; k < CFG_NUM; k++) {
        fk.cfg_case = k;
        fk.frame_case = FR_NONE;
        pf_status st = run_fake(&fk, &r1, &r2);
        if (st != PF_ERR_FORMAT) fprintf(stderr, "  config case %d: %s\n", k, pf_status_str(st));
        CHECK_EQ_INT(st, PF_ERR_FORMAT);
    }
    for (int k = FR_SLOT_RANGE; k < FR_NUM; k++) {
        fk.cfg_case = CFG_OK;
        fk.frame_case = k;
        r1 = r2 = PF_OK;
        CHECK_OK(run_fake(&fk, &r1, &r2));
        CHECK_EQ_INT(r1, PF_OK);
        if (r2 != PF_ERR_FORMAT) fprintf(stderr, "  frame case %d: %s\n", k, pf_status_str(r2));
        CHECK_EQ_INT(r2, PF_ERR_FORMAT);
    }
    /* Clean end vs a producer that just vanishes. */
    fk.cfg_case = CFG_OK;
    fk.frame_case = FR_NONE;
    fk.send_end = true;
    CHECK_OK(run_fake(&fk, &r1, &r2));
    CHECK_EQ_INT(r1, PF_EOF);
    fk.send_end = false;
    CHECK_OK(run_fake(&fk, &r1, &r2));
    CHECK_EQ_INT(r1, PF_ERR_CLOSED);
    CHECK(strstr(pf_last_error(), "without an end of stream") != NULL);
    close(fk.listen_fd);
    unlink(fk.path);
    rmdir(dir);
}

static void stalled_consumer(void)
{
    char dir[256], path[300];
    ipc_test_dir(dir, sizeof dir, "st");
    snprintf(path, sizeof path, "%s/s.sock", dir);
    pf_log_set_level(PF_LOG_QUIET);
    pf_ipc_producer_params pp = ipc_test_params(path, PF_PIXFMT_GRAY8, 8, 8, 2);
    pp.stall_timeout_ms = 200;
    pf_ipc_producer *p = NULL;
    REQUIRE(pf_ipc_producer_create(&pp, &p) == PF_OK);
    int fd = raw_connect(path);
    ipc_hello h;
    memset(&h, 0, sizeof h);
    ipc_hdr_init(&h.h, IPC_MSG_HELLO);
    h.policy = PF_IPC_BLOCK;
    ipc_send(fd, &h, sizeof h, NULL, 0, false);
    CHECK(read_config(fd));
    CHECK_OK(pf_ipc_producer_wait_consumers(p, 1, 2000000));
    int64_t t0 = pf_time_ns();
    for (int k = 1; k <= 6; k++) publish_one(p, (uint64_t)k); /* it never releases */
    double secs = (double)(pf_time_ns() - t0) / 1e9;
    pf_ipc_producer_stats s;
    CHECK_OK(pf_ipc_producer_get_stats(p, &s));
    CHECK_EQ_INT(s.consumers_dropped, 1);
    CHECK(secs >= 0.15 && secs < 3.0);
    close(fd);
    pf_ipc_producer_destroy(&p);
    pf_log_set_level(PF_LOG_WARN);
    rmdir(dir);
}

/* Child: tries to attach as uid/gid 65534; exit 0 = refused as it should be. */
static int foreign_attach(void *arg)
{
    const char *path = arg;
    if (setgid(65534) != 0 || setuid(65534) != 0) return 40;
    pf_log_set_level(PF_LOG_QUIET);
    pf_ipc_consumer_params cp = pf_ipc_consumer_params_default();
    cp.path = path;
    cp.connect_timeout_ms = 0;
    pf_ipc_consumer *c = NULL;
    pf_status st = pf_ipc_consumer_create(&cp, &c);
    if (st == PF_OK) {
        pf_ipc_consumer_destroy(&c);
        return 41; /* attached: wrong */
    }
    return 0;
}

static void permissions(void)
{
    char dir[256], path[320];
    ipc_test_dir(dir, sizeof dir, "perm");
    rmdir(dir); /* the producer makes it */
    snprintf(path, sizeof path, "%s/s.sock", dir);
    pf_ipc_producer_params pp = ipc_test_params(path, PF_PIXFMT_GRAY8, 8, 8, 2);
    pf_ipc_producer *p = NULL, *p2 = NULL;
    REQUIRE(pf_ipc_producer_create(&pp, &p) == PF_OK);
    struct stat sd, ss;
    REQUIRE(stat(dir, &sd) == 0 && stat(path, &ss) == 0);
    CHECK_EQ_INT(sd.st_mode & 0777, 0700);
    CHECK(S_ISSOCK(ss.st_mode));
    CHECK_EQ_INT(ss.st_mode & 0777, 0600);
    /* A live producer's path is refused. */
    CHECK_EQ_INT(pf_ipc_producer_create(&pp, &p2), PF_ERR_BUSY);
    if (geteuid() == 0) {
        pid_t c = ipc_spawn(foreign_attach, path, 20);
        CHECK_EQ_INT(ipc_wait(c, 20000), 0);
        /* Through an opened-up folder and socket the kernel lets it connect:
         * the producer's SO_PEERCRED check must refuse it. */
        chmod(dir, 0755);
        chmod(path, 0666);
        c = ipc_spawn(foreign_attach, path, 20);
        CHECK_EQ_INT(ipc_wait(c, 20000), 0);
        /* The child may give up first (it refuses a producer of another uid
         * too): the producer's own refusal comes when it accepts. */
        pf_ipc_producer_stats s;
        for (int i = 0; i < 200; i++) {
            CHECK_OK(pf_ipc_producer_get_stats(p, &s));
            if (s.consumers_refused) break;
            ipc_sleep_us(10000);
        }
        CHECK_EQ_INT(s.consumers_refused, 1);
        CHECK_EQ_INT(s.consumers_attached, 0);
        chmod(dir, 0700);
    } else {
        printf("  (not root: the other-uid attach is not tried)\n");
    }
    pf_ipc_producer_destroy(&p);
    struct stat gone;
    CHECK(stat(dir, &gone) != 0); /* made by the producer, removed with it */

    /* A folder others may write to is refused. */
    mkdir(dir, 0700);
    chmod(dir, 0777);
    CHECK_EQ_INT(pf_ipc_producer_create(&pp, &p2), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "writable") != NULL);
    chmod(dir, 0700);
    /* A file in the way is refused and left alone. */
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fputs("keep", f);
    fclose(f);
    CHECK_EQ_INT(pf_ipc_producer_create(&pp, &p2), PF_ERR_INVALID);
    REQUIRE(stat(path, &ss) == 0);
    CHECK(S_ISREG(ss.st_mode) && ss.st_size == 4);
    unlink(path);
    /* A stale socket (its producer died) is replaced. */
    int fd = -1;
    REQUIRE(ipc_listen(path, &fd) == PF_OK);
    close(fd);
    CHECK_OK(pf_ipc_producer_create(&pp, &p2));
    pf_ipc_producer_destroy(&p2);
    rmdir(dir);
}

static void parser_edges(void)
{
    unsigned char buf[IPC_MSG_MAX];
    ipc_msg m;
    char why[256];
    memset(buf, 0, sizeof buf);
    CHECK_EQ_INT(ipc_msg_parse(buf, 3, 0, 0, &m, why, sizeof why), PF_ERR_FORMAT);
    ipc_release r;
    memset(&r, 0, sizeof r);
    ipc_hdr_init(&r.h, IPC_MSG_RELEASE);
    r.slot = 1;
    r.seq = 5;
    CHECK_OK(ipc_msg_parse(&r, sizeof r, 0, 0, &m, why, sizeof why));
    CHECK_EQ_INT(m.u.release.seq, 5);
    CHECK_EQ_INT(ipc_msg_parse(&r, sizeof r, 0, 1, &m, why, sizeof why), PF_ERR_FORMAT);
    CHECK_EQ_INT(ipc_msg_parse(&r, sizeof r, 1, 0, &m, why, sizeof why), PF_ERR_FORMAT);
    r.seq = 0;
    CHECK_EQ_INT(ipc_msg_parse(&r, sizeof r, 0, 0, &m, why, sizeof why), PF_ERR_FORMAT);
    r.seq = 1;
    r.slot = PF_IPC_MAX_SLOTS;
    CHECK_EQ_INT(ipc_msg_parse(&r, sizeof r, 0, 0, &m, why, sizeof why), PF_ERR_FORMAT);
    ipc_config c;
    make_config(&c, 2);
    CHECK_OK(ipc_msg_parse(&c, sizeof c, 2, 0, &m, why, sizeof why));
    c.num_slots = PF_IPC_MAX_SLOTS + 1;
    CHECK_EQ_INT(ipc_msg_parse(&c, sizeof c, 2, 0, &m, why, sizeof why), PF_ERR_FORMAT);
    make_config(&c, 2);
    c.width = 0;
    CHECK_EQ_INT(ipc_msg_parse(&c, sizeof c, 2, 0, &m, why, sizeof why), PF_ERR_FORMAT);
    make_config(&c, 2);
    c.stride[0] = 63; /* shorter than a row */
    CHECK_EQ_INT(ipc_msg_parse(&c, sizeof c, 2, 0, &m, why, sizeof why), PF_ERR_FORMAT);
    make_config(&c, 2);
    c.stride[1] = 64; /* a plane GRAY8 does not have */
    CHECK_EQ_INT(ipc_msg_parse(&c, sizeof c, 2, 0, &m, why, sizeof why), PF_ERR_FORMAT);
    make_config(&c, 2);
    ipc_frame f;
    fake_frame(&f, 1, 9);
    CHECK_OK(ipc_frame_check(&f, &c, why, sizeof why));
    f.offset = 256;
    f.size = 4096 - 256;
    CHECK_OK(ipc_frame_check(&f, &c, why, sizeof why));
    f.size = 4096; /* one byte... a whole 256 past the slot */
    CHECK_EQ_INT(ipc_frame_check(&f, &c, why, sizeof why), PF_ERR_FORMAT);
    f.offset = 100;
    f.size = 1024;
    CHECK_EQ_INT(ipc_frame_check(&f, &c, why, sizeof why), PF_ERR_FORMAT); /* unaligned */
    fake_frame(&f, 1, 9);
    f.size = 1023; /* smaller than a frame */
    CHECK_EQ_INT(ipc_frame_check(&f, &c, why, sizeof why), PF_ERR_FORMAT);
    fake_frame(&f, 1, 9);
    f.flags = IPC_FRAME_FENCE; /* no fences on host pools */
    CHECK_EQ_INT(ipc_frame_check(&f, &c, why, sizeof why), PF_ERR_FORMAT);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    PF_RUN(parser_edges);
    PF_RUN(hostile_consumers);
    PF_RUN(hostile_producer);
    PF_RUN(stalled_consumer);
    PF_RUN(permissions);
    return pf_test_finish();
}
