/* Private: the Unix socket under pixflow IPC: a private folder, a 0600
 * SOCK_SEQPACKET socket, the peer's credentials, and messages with file
 * descriptors attached (SCM_RIGHTS). */
#ifndef PF_IPC_SOCK_H
#define PF_IPC_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "pixflow/core.h"

/* Checks the folder of `path` (creating it with mode 0700 when missing): it
 * must belong to the effective user and not be writable by group or
 * others. *created tells whether this call made it (the producer removes it
 * again when empty). */
pf_status ipc_private_dir(const char *path, bool *created);

/* A listening socket at `path` (mode 0600). A socket file nobody answers on
 * is a dead producer's and is replaced; a live one, or a file that is not a
 * socket, is refused. */
pf_status ipc_listen(const char *path, int *out_fd);

/* Connects to `path`, retrying every 20 ms while the socket is missing or
 * refuses, for up to timeout_ms (0: once). */
pf_status ipc_connect(const char *path, int64_t timeout_ms, int *out_fd);

/* The peer's user and process ids (SO_PEERCRED). */
pf_status ipc_peer_cred(int fd, uid_t *uid, pid_t *pid);

/* Sends one message with `nfds` descriptors attached. Never raises
 * SIGPIPE; `nonblock`: a full socket is an error (PF_AGAIN) rather than a
 * wait. PF_ERR_CLOSED when the peer is gone. */
pf_status ipc_send(int fd, const void *buf, size_t len, const int *fds, int nfds, bool nonblock);

/* Receives one message into buf (cap bytes), waiting up to timeout_us
 * (< 0: forever). Descriptors attached land in fds (at most max_fds, close-
 * on-exec; the caller owns them); a message or descriptor list cut short
 * sets *truncated (extra descriptors are closed). PF_EOF when the peer
 * closed, PF_TIMEOUT / PF_AGAIN when nothing came. */
pf_status ipc_recv(int fd, void *buf, size_t cap, size_t *len, int *fds, int max_fds, int *nfds,
                   int *truncated, int64_t timeout_us);

/* Closes fds[0..n) that are >= 0. */
void ipc_close_fds(int *fds, int n);

#endif
