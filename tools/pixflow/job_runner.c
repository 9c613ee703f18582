/* Runs a queue job as a child process: this pixflow binary, exec'd on the
 * job's words, so a job runs with exactly the code of the command line and
 * a job that crashes, leaks or hangs cannot take the worker down.
 *
 * Why fork + exec and not fork alone: the worker is multi-threaded (slot
 * threads, the heartbeat), and after fork() only async-signal-safe calls are
 * safe until exec (another thread may have held a lock, in malloc or in the
 * library's logger, at the moment of the fork). Exec gives the job a fresh
 * process; everything prepared for it (argv, environment, pipes) is built
 * before the fork.
 *
 * The child is its own process group (a timeout kills the whole group), dies
 * with the worker (PR_SET_PDEATHSIG: a worker killed with SIGKILL leaves no
 * orphan still writing outputs), reads /dev/null, writes its --json summary
 * to a pipe (the result's "figures") and its messages to another (the last
 * line becomes the error of a failed run). Its environment has no Redis
 * credentials. */
#define _GNU_SOURCE /* pipe2 */

#include "job_runner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

bool job_runner_init(job_runner *r, const char *device, bool dry_run)
{
    memset(r, 0, sizeof *r);
    r->device = device;
    r->dry_run = dry_run;
    ssize_t n = readlink("/proc/self/exe", r->exe, sizeof r->exe - 1);
    if (n <= 0) {
        fprintf(stderr, "pixflow worker: cannot find this binary (/proc/self/exe): %s\n",
                strerror(errno));
        return false;
    }
    r->exe[n] = '\0';
    return true;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool secret_env(const char *e)
{
    static const char *const names[] = {"PIXFLOW_REDIS_PASSWORD=", "PIXFLOW_REDIS_USER=",
                                        "REDISCLI_AUTH="};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strncmp(e, names[i], strlen(names[i])) == 0) return true;
    return false;
}

/* Removes the temporaries ".NAME.pftmp-PID-N.EXT" a killed child left in its
 * output directories (its outputs were never renamed into place). */
static void remove_temporaries(const pf_worker_job *job, pid_t pid)
{
    char tag[48];
    snprintf(tag, sizeof tag, ".pftmp-%ld-", (long)pid);
    for (int i = 1; i + 1 < job->argc; i++) {
        const char *w = job->argv[i];
        if (strcmp(w, "-o") && strcmp(w, "--output") && strcmp(w, "--mask-out") &&
            strcmp(w, "--trace"))
            continue;
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", job->argv[i + 1]);
        struct stat st;
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
            char *slash = strrchr(dir, '/');
            if (slash) *slash = '\0';
            else snprintf(dir, sizeof dir, ".");
        }
        DIR *d = opendir(dir);
        if (!d) continue;
        struct dirent *de;
        while ((de = readdir(d)) != NULL)
            if (de->d_name[0] == '.' && strstr(de->d_name, tag)) unlinkat(dirfd(d), de->d_name, 0);
        closedir(d);
    }
}

/* The last (up to 3) non-empty lines of s joined with " | ", into out: a
 * command's last line is often a summary ("1 input failed (named above)")
 * and the cause is the line before it. */
static void last_lines(const char *s, char *out, size_t size)
{
    const char *starts[3];
    size_t lens[3];
    int n = 0;
    size_t end = strlen(s);
    while (n < 3 && end > 0) {
        while (end > 0 && (s[end - 1] == '\n' || s[end - 1] == '\r' || s[end - 1] == ' ')) end--;
        size_t b = end;
        while (b > 0 && s[b - 1] != '\n') b--;
        if (end > b) {
            starts[n] = s + b;
            lens[n] = end - b;
            n++;
        }
        end = b;
    }
    out[0] = '\0';
    size_t used = 0;
    for (int i = n - 1; i >= 0 && used + 1 < size; i--) {
        int w = snprintf(out + used, size - used, "%s%.*s", used ? " | " : "", (int)lens[i],
                         starts[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
}

typedef struct capture {
    int fd;
    char *buf;
    size_t size, len;
    bool keep_tail; /* stderr: keep the last bytes, not the first */
} capture;

static void drain(capture *c)
{
    char tmp[4096];
    ssize_t n;
    while (c->fd >= 0 && (n = read(c->fd, tmp, sizeof tmp)) != 0) {
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) return;
            break;
        }
        size_t room = c->size - 1;
        if (c->keep_tail) {
            if ((size_t)n >= room) {
                memcpy(c->buf, tmp + n - room, room);
                c->len = room;
            } else {
                if (c->len + (size_t)n > room) {
                    size_t drop = c->len + (size_t)n - room;
                    memmove(c->buf, c->buf + drop, c->len - drop);
                    c->len -= drop;
                }
                memcpy(c->buf + c->len, tmp, (size_t)n);
                c->len += (size_t)n;
            }
        } else if (c->len < room) {
            size_t k = (size_t)n < room - c->len ? (size_t)n : room - c->len;
            memcpy(c->buf + c->len, tmp, k);
            c->len += k;
        }
        c->buf[c->len] = '\0';
    }
    close(c->fd);
    c->fd = -1;
}

void job_runner_run(void *arg, const pf_worker_job *job, pf_worker_outcome *out)
{
    job_runner *r = arg;
    if (r->dry_run) {
        snprintf(out->figures, sizeof out->figures, "{\"dry_run\":true}");
        return;
    }
    /* Everything the child needs, built before the fork. */
    int extra = 4 + (r->device ? 2 : 0);
    const char **argv = calloc((size_t)job->argc + (size_t)extra, sizeof *argv);
    size_t nenv = 0;
    while (environ[nenv]) nenv++;
    char **envp = calloc(nenv + 1, sizeof *envp);
    char err_tail[4096] = "";
    if (!argv || !envp) {
        free(argv);
        free(envp);
        out->exit_status = 1;
        snprintf(out->error, sizeof out->error, "worker: out of host memory");
        return;
    }
    int k = 0;
    argv[k++] = r->exe;
    for (int i = 0; i < job->argc; i++) argv[k++] = job->argv[i];
    if (r->device) {
        argv[k++] = "--device"; /* the last --device wins: the worker's */
        argv[k++] = r->device;
    }
    argv[k++] = "--json";
    argv[k++] = "--quiet";
    argv[k] = NULL;
    size_t e = 0;
    for (size_t i = 0; i < nenv; i++)
        if (!secret_env(environ[i])) envp[e++] = environ[i];
    envp[e] = NULL;

    int outp[2] = {-1, -1}, errp[2] = {-1, -1};
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0 || devnull < 0) {
        out->exit_status = 1;
        snprintf(out->error, sizeof out->error, "worker: cannot create pipes: %s",
                 strerror(errno));
        for (int i = 0; i < 2; i++) {
            if (outp[i] >= 0) close(outp[i]);
            if (errp[i] >= 0) close(errp[i]);
        }
        if (devnull >= 0) close(devnull);
        free(argv);
        free(envp);
        return;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        /* Async-signal-safe calls only until execve. */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127); /* the worker died before prctl */
        dup2(devnull, 0);
        dup2(outp[1], 1);
        dup2(errp[1], 2);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_DFL;
        sigaction(SIGPIPE, &sa, NULL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execve(r->exe, (char *const *)argv, envp);
        static const char msg[] = "pixflow worker: cannot run this binary (execve failed)\n";
        ssize_t ignored = write(2, msg, sizeof msg - 1);
        (void)ignored;
        _exit(127);
    }
    close(outp[1]);
    close(errp[1]);
    close(devnull);
    free(argv);
    free(envp);
    if (pid < 0) {
        close(outp[0]);
        close(errp[0]);
        out->exit_status = 1;
        snprintf(out->error, sizeof out->error, "worker: fork failed: %s", strerror(errno));
        return;
    }
    setpgid(pid, pid); /* also here: no race with the kill below */
    fcntl(outp[0], F_SETFL, O_NONBLOCK);
    fcntl(errp[0], F_SETFL, O_NONBLOCK);
    capture cap[2] = {{outp[0], out->figures, sizeof out->figures, 0, false},
                      {errp[0], err_tail, sizeof err_tail, 0, true}};

    int64_t start = mono_ms();
    int64_t deadline = start + (int64_t)(job->timeout_s * 1000);
    int64_t term_at = 0;
    bool timed_out = false, cancelled = false, reaped = false;
    int status = 0;
    while (!reaped) {
        struct pollfd pfd[2];
        int n = 0;
        for (int i = 0; i < 2; i++)
            if (cap[i].fd >= 0) pfd[n++] = (struct pollfd){.fd = cap[i].fd, .events = POLLIN};
        if (n) poll(pfd, (nfds_t)n, 50);
        else {
            struct timespec ts = {0, 20 * 1000000L};
            nanosleep(&ts, NULL);
        }
        for (int i = 0; i < 2; i++) {
            /* Reads to EAGAIN, or to EOF and closes the fd. */
            if (cap[i].fd >= 0) drain(&cap[i]);
        }
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid) reaped = true;
        int64_t now = mono_ms();
        if (!reaped && !timed_out && now >= deadline) {
            timed_out = true;
            kill(-pid, SIGKILL);
        }
        if (!reaped && !cancelled && !timed_out && pf_worker_job_cancelled(job)) {
            /* SIGTERM first: the command cancels and removes its temporaries. */
            cancelled = true;
            term_at = now;
            kill(-pid, SIGTERM);
        }
        if (!reaped && cancelled && now - term_at > 3000) kill(-pid, SIGKILL);
    }
    for (int i = 0; i < 2; i++)
        if (cap[i].fd >= 0) {
            drain(&cap[i]);
            if (cap[i].fd >= 0) close(cap[i].fd);
        }
    double secs = (double)(mono_ms() - start) / 1000.0;

    char line[900];
    last_lines(err_tail, line, sizeof line);
    bool killed = WIFSIGNALED(status);
    if (cancelled) {
        out->handed_back = true;
        out->exit_status = 130;
        snprintf(out->error, sizeof out->error, "stopped after %.1f s: the worker is stopping",
                 secs);
    } else if (timed_out) {
        out->exit_status = 124;
        snprintf(out->error, sizeof out->error, "timed out after %.1f s (killed)", secs);
    } else if (killed) {
        int sig = WTERMSIG(status);
        out->exit_status = 128 + sig;
        snprintf(out->error, sizeof out->error, "crashed: killed by signal %d (%s)%s%s", sig,
                 strsignal(sig), line[0] ? ": " : "", line);
    } else {
        out->exit_status = WEXITSTATUS(status);
        if (out->exit_status == 2) out->permanent = true; /* a bad command line stays bad */
        if (out->exit_status != 0)
            snprintf(out->error, sizeof out->error, "exit status %d%s%s", out->exit_status,
                     line[0] ? ": " : "", line);
    }
    if (out->exit_status != 0) out->figures[0] = '\0';
    if (killed || timed_out || cancelled) remove_temporaries(job, pid);
}
