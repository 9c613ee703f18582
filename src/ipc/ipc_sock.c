/* Unix socket plumbing for pixflow IPC (ipc_sock.h).
 *
 * Why SOCK_SEQPACKET: message boundaries are kept and a message too large
 * for the buffer is reported (MSG_TRUNC) instead of being split, so the
 * parser sees whole messages or a clear error; it is connection-oriented,
 * so a peer's death is an end of file, and it carries SCM_RIGHTS and
 * SO_PEERCRED like a stream socket. */
#define _GNU_SOURCE /* SO_PEERCRED, struct ucred, MSG_CMSG_CLOEXEC */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ipc_sock.h"

#include "../core/error.h"
#include "../core/sys.h"

static pf_status make_addr(const char *path, struct sockaddr_un *a)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    if (!path || !path[0]) return pf_set_error(PF_ERR_INVALID, "ipc: empty socket path");
    if (strlen(path) >= sizeof a->sun_path)
        return pf_set_error(PF_ERR_INVALID, "ipc: socket path '%s' is longer than %zu bytes",
                            path, sizeof a->sun_path - 1);
    memcpy(a->sun_path, path, strlen(path));
    return PF_OK;
}

pf_status ipc_private_dir(const char *path, bool *created)
{
    *created = false;
    char dir[PATH_MAX];
    if (!path || strlen(path) >= sizeof dir)
        return pf_set_error(PF_ERR_INVALID, "ipc: socket path too long");
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) dir[1] = '\0';
    else *slash = '\0';
    if (mkdir(dir, 0700) == 0) *created = true;
    else if (errno != EEXIST)
        return pf_set_error(PF_ERR_IO, "ipc: cannot create the socket folder %s: %s", dir,
                            strerror(errno));
    struct stat st;
    if (lstat(dir, &st) != 0)
        return pf_set_error(PF_ERR_IO, "ipc: %s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return pf_set_error(PF_ERR_INVALID, "ipc: the socket folder %s is not a folder "
                            "(a symbolic link is refused too)", dir);
    if (st.st_uid != geteuid())
        return pf_set_error(PF_ERR_INVALID, "ipc: the socket folder %s belongs to uid %u, not "
                            "to this user (%u): use a private folder such as "
                            "$XDG_RUNTIME_DIR/pixflow", dir, (unsigned)st.st_uid,
                            (unsigned)geteuid());
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return pf_set_error(PF_ERR_INVALID, "ipc: the socket folder %s is writable by %s (mode "
                            "%03o): others could replace the socket; use a private folder "
                            "(mode 0700) such as $XDG_RUNTIME_DIR/pixflow", dir,
                            (st.st_mode & S_IWOTH) ? "others" : "its group",
                            (unsigned)(st.st_mode & 0777));
    return PF_OK;
}

pf_status ipc_listen(const char *path, int *out_fd)
{
    *out_fd = -1;
    struct sockaddr_un a;
    pf_status st = make_addr(path, &a);
    if (st != PF_OK) return st;
    struct stat sb;
    if (lstat(path, &sb) == 0) {
        if (!S_ISSOCK(sb.st_mode))
            return pf_set_error(PF_ERR_INVALID, "ipc: %s exists and is not a socket: refusing "
                                "to replace it", path);
        int probe = -1;
        if (ipc_connect(path, 0, &probe) == PF_OK) {
            close(probe);
            return pf_set_error(PF_ERR_BUSY, "ipc: a producer is already serving %s", path);
        }
        pf_clear_error();
        if (unlink(path) != 0 && errno != ENOENT)
            return pf_set_error(PF_ERR_IO, "ipc: cannot remove the stale socket %s: %s", path,
                                strerror(errno));
    }
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) return pf_set_error(PF_ERR_IO, "ipc: socket(): %s", strerror(errno));
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        st = pf_set_error(PF_ERR_IO, "ipc: cannot bind %s: %s", path, strerror(errno));
        close(fd);
        return st;
    }
    /* The folder is private (0700) already, so the moment between bind and
     * chmod exposes nothing; chmod makes the socket itself owner-only too. */
    if (chmod(path, 0600) != 0 || listen(fd, 16) != 0) {
        st = pf_set_error(PF_ERR_IO, "ipc: cannot set up %s: %s", path, strerror(errno));
        close(fd);
        unlink(path);
        return st;
    }
    *out_fd = fd;
    return PF_OK;
}

pf_status ipc_connect(const char *path, int64_t timeout_ms, int *out_fd)
{
    *out_fd = -1;
    struct sockaddr_un a;
    pf_status st = make_addr(path, &a);
    if (st != PF_OK) return st;
    int64_t deadline = pf_time_ns() + timeout_ms * 1000000;
    for (;;) {
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0) return pf_set_error(PF_ERR_IO, "ipc: socket(): %s", strerror(errno));
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
            *out_fd = fd;
            return PF_OK;
        }
        int e = errno;
        close(fd);
        bool retry = e == ENOENT || e == ECONNREFUSED || e == EAGAIN;
        if (!retry || pf_time_ns() >= deadline)
            return pf_set_error(PF_ERR_IO, "ipc: cannot connect to %s: %s%s", path, strerror(e),
                                retry && timeout_ms > 0 ? " (gave up waiting for a producer)"
                                                        : "");
        struct timespec ts = {0, 20 * 1000000};
        nanosleep(&ts, NULL);
    }
}

pf_status ipc_peer_cred(int fd, uid_t *uid, pid_t *pid)
{
    struct ucred cr;
    socklen_t len = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || len != sizeof cr)
        return pf_set_error(PF_ERR_IO, "ipc: SO_PEERCRED: %s", strerror(errno));
    *uid = cr.uid;
    *pid = cr.pid;
    return PF_OK;
}

pf_status ipc_send(int fd, const void *buf, size_t len, const int *fds, int nfds, bool nonblock)
{
    struct iovec iov = {(void *)buf, len};
    struct msghdr m = {0};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    union {
        char buf[CMSG_SPACE(sizeof(int) * 64)];
        struct cmsghdr align;
    } ctl;
    if (nfds > 64) return pf_set_error(PF_ERR_INTERNAL, "ipc: %d descriptors in one message", nfds);
    if (nfds > 0) {
        memset(&ctl, 0, sizeof ctl);
        m.msg_control = ctl.buf;
        m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
    }
    for (;;) {
        ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL | (nonblock ? MSG_DONTWAIT : 0));
        if (n == (ssize_t)len) return PF_OK;
        if (n >= 0) return pf_set_error(PF_ERR_IO, "ipc: short send (%zd of %zu bytes)", n, len);
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return pf_set_error(PF_AGAIN, "ipc: the peer's socket is full");
        if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)
            return pf_set_error(PF_ERR_CLOSED, "ipc: the peer closed the connection");
        return pf_set_error(PF_ERR_IO, "ipc: send: %s", strerror(errno));
    }
}

void ipc_close_fds(int *fds, int n)
{
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0) {
            close(fds[i]);
            fds[i] = -1;
        }
}

pf_status ipc_recv(int fd, void *buf, size_t cap, size_t *len, int *fds, int max_fds, int *nfds,
                   int *truncated, int64_t timeout_us)
{
    *len = 0;
    *nfds = 0;
    *truncated = 0;
    if (timeout_us >= 0) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int64_t deadline = pf_time_ns() + timeout_us * 1000;
        for (;;) {
            int64_t left_ms = (deadline - pf_time_ns() + 999999) / 1000000;
            if (left_ms < 0) left_ms = 0;
            int r = poll(&p, 1, (int)(left_ms > INT_MAX ? INT_MAX : left_ms));
            if (r > 0) break;
            if (r < 0 && errno != EINTR)
                return pf_set_error(PF_ERR_IO, "ipc: poll: %s", strerror(errno));
            if (r == 0 && pf_time_ns() >= deadline) return timeout_us == 0 ? PF_AGAIN : PF_TIMEOUT;
        }
    }
    struct iovec iov = {buf, cap};
    union {
        char buf[CMSG_SPACE(sizeof(int) * 64)];
        struct cmsghdr align;
    } ctl;
    struct msghdr m = {0};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctl.buf;
    m.msg_controllen = sizeof ctl.buf;
    ssize_t n;
    do n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC | (timeout_us >= 0 ? MSG_DONTWAIT : 0));
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return PF_AGAIN;
        if (errno == ECONNRESET) return PF_EOF;
        return pf_set_error(PF_ERR_IO, "ipc: receive: %s", strerror(errno));
    }
    /* Descriptors first: whatever came is ours to close, even on errors. */
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
            *truncated = 1;
            continue;
        }
        int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int i = 0; i < k; i++) {
            int d;
            memcpy(&d, CMSG_DATA(c) + (size_t)i * sizeof(int), sizeof d);
            if (*nfds < max_fds) fds[(*nfds)++] = d;
            else {
                close(d);
                *truncated = 1;
            }
        }
    }
    if (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) *truncated = 1;
    if (n == 0 && *nfds == 0 && !*truncated) return PF_EOF;
    *len = (size_t)n;
    return PF_OK;
}
