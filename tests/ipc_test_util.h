/* ipc_test_util.h: what the IPC tests share (tests/test_ipc*.c, and the CUDA
 * one): a frame pattern derived from the sequence number, child processes
 * with a bounded life, and a private socket folder per test run.
 *
 * Header-only, everything static (unused parts cost no warning). */
#ifndef PF_IPC_TEST_UTIL_H
#define PF_IPC_TEST_UTIL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pixflow/pixflow.h"

/* The byte at (x, y) of plane p of frame `seq`. */
static inline uint8_t ipc_pattern(uint64_t seq, int p, int x, int y)
{
    return (uint8_t)(seq * 31u + (unsigned)p * 17u + (unsigned)x + (unsigned)y * 7u);
}

static inline void ipc_fill(pf_frame *f, uint64_t seq)
{
    for (int p = 0; p < f->num_planes; p++) {
        size_t row, rows;
        pf_pixfmt_plane_size(f->format, f->width, f->height, p, &row, &rows);
        for (size_t y = 0; y < rows; y++)
            for (size_t x = 0; x < row; x++)
                f->data[p][y * f->stride[p] + x] = ipc_pattern(seq, p, (int)x, (int)y);
    }
}

/* Whether host frame f shows the pattern of `seq` in every visible byte. */
static inline bool ipc_check(const pf_frame *f, uint64_t seq)
{
    for (int p = 0; p < f->num_planes; p++) {
        size_t row, rows;
        pf_pixfmt_plane_size(f->format, f->width, f->height, p, &row, &rows);
        for (size_t y = 0; y < rows; y++)
            for (size_t x = 0; x < row; x++)
                if (f->data[p][y * f->stride[p] + x] != ipc_pattern(seq, p, (int)x, (int)y))
                    return false;
    }
    return true;
}

static inline void ipc_sleep_us(int64_t us)
{
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* Runs fn(arg) in a child that dies after `limit_s` at the latest (alarm);
 * its exit code is fn's return value. */
static inline pid_t ipc_spawn(int (*fn)(void *), void *arg, unsigned limit_s)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(limit_s);
        _exit(fn(arg));
    }
    return pid;
}

/* Waits for `pid` up to limit_ms (then kills it): its exit code, 128 + the
 * signal that ended it, or -1 when it had to be killed. */
static inline int ipc_wait(pid_t pid, int64_t limit_ms)
{
    int64_t waited = 0;
    for (;;) {
        int status = 0;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (r < 0) return -2;
        if (waited >= limit_ms) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        ipc_sleep_us(2000);
        waited += 2;
    }
}

/* Producer parameters for a small test pool at `path`. */
static inline pf_ipc_producer_params ipc_test_params(const char *path, pf_pixfmt fmt, int w, int h,
                                                     int slots)
{
    pf_ipc_producer_params pp = pf_ipc_producer_params_default();
    pp.path = path;
    pp.format = fmt;
    pp.width = w;
    pp.height = h;
    pp.slots = slots;
    return pp;
}

/* A fresh private folder for sockets: $TMPDIR/pf-ipc-test-PID-N (0700). */
static inline void ipc_test_dir(char *out, size_t size, const char *tag)
{
    static int n;
    const char *tmp = getenv("TMPDIR");
    snprintf(out, size, "%s/pf-ipc-%s-%d-%d", tmp && *tmp ? tmp : "/tmp", tag, (int)getpid(),
             n++);
    mkdir(out, 0700);
}

#endif
