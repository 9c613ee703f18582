/* Host slots: one memfd per slot, sealed so its size cannot change (a
 * consumer that mapped it can never be made to fault by a shrink), shared
 * through a read-only descriptor (a consumer cannot map it writable, so it
 * cannot scribble on frames other consumers read). */
#define _GNU_SOURCE /* memfd_create, F_ADD_SEALS */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipc_mem.h"

#include "../core/error.h"

void ipc_close_fd_quiet(int fd)
{
    if (fd >= 0) close(fd);
}

static uint64_t page_round(uint64_t n)
{
    uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
    return (n + pg - 1) / pg * pg;
}

pf_status ipc_host_alloc(uint64_t size, ipc_slot_mem *m)
{
    m->size = page_round(size);
    m->fd = memfd_create("pixflow-ipc-slot", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (m->fd < 0) return pf_set_error(PF_ERR_IO, "ipc: memfd_create: %s", strerror(errno));
    if (ftruncate(m->fd, (off_t)m->size) != 0 ||
        fcntl(m->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        pf_status st = pf_set_error(PF_ERR_NOMEM, "ipc: a %llu-byte memfd slot: %s",
                                    (unsigned long long)m->size, strerror(errno));
        ipc_host_free(m);
        return st;
    }
    void *p = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, m->fd, 0);
    if (p == MAP_FAILED) {
        pf_status st = pf_set_error(PF_ERR_NOMEM, "ipc: mapping a %llu-byte slot: %s",
                                    (unsigned long long)m->size, strerror(errno));
        ipc_host_free(m);
        return st;
    }
    m->ptr = p;
    /* A new open file description, read-only, of the same memfd. */
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", m->fd);
    m->fd_send = open(self, O_RDONLY | O_CLOEXEC);
    if (m->fd_send < 0) {
        pf_status st = pf_set_error(PF_ERR_IO, "ipc: a read-only descriptor of a slot (%s): %s",
                                    self, strerror(errno));
        ipc_host_free(m);
        return st;
    }
    return PF_OK;
}

pf_status ipc_host_import(int fd, uint64_t size, ipc_slot_mem *m)
{
    m->fd = fd;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        ipc_host_free(m);
        return pf_set_error(PF_ERR_FORMAT, "ipc: a slot descriptor cannot be read");
    }
    int seals = fcntl(fd, F_GET_SEALS);
    if (!S_ISREG(st.st_mode) || seals < 0 || !(seals & F_SEAL_SHRINK)) {
        ipc_host_free(m);
        return pf_set_error(PF_ERR_FORMAT, "ipc: a slot is not a memfd sealed against "
                            "shrinking (it could be cut under the mapping)");
    }
    if ((uint64_t)st.st_size < size) {
        ipc_host_free(m);
        return pf_set_error(PF_ERR_FORMAT, "ipc: a slot of %lld bytes, the config says %llu",
                            (long long)st.st_size, (unsigned long long)size);
    }
    void *p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        pf_status e = pf_set_error(PF_ERR_IO, "ipc: mapping a %llu-byte slot: %s",
                                   (unsigned long long)size, strerror(errno));
        ipc_host_free(m);
        return e;
    }
    m->ptr = p;
    m->size = size;
    /* The mapping keeps the memory; the descriptor is no longer needed. */
    close(m->fd);
    m->fd = -1;
    return PF_OK;
}

void ipc_host_free(ipc_slot_mem *m)
{
    if (m->ptr) munmap(m->ptr, m->size);
    m->ptr = NULL;
    ipc_close_fd_quiet(m->fd);
    ipc_close_fd_quiet(m->fd_send);
    m->fd = m->fd_send = -1;
}
