/* Safe output files (io.h): temporary name, fsync, rename; and the inputs
 * this process is reading, which no output may replace (io_impl.h).
 *
 * Why a temporary in the output's own directory: rename(2) is atomic only
 * within one file system, and a reader (or a crash) then sees either the
 * old file or the complete new one. The name is created with O_EXCL and
 * carries the pid and a per-process counter, so concurrent calls (threads
 * or processes) never share one; a stale name left by a killed process is
 * skipped, not reused. fsync before the rename orders the data before the
 * name on journalling file systems (ext4's auto_da_alloc covers only some
 * cases); the directory fsync makes the rename itself durable. */
#define _GNU_SOURCE /* renameat2, RENAME_NOREPLACE */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/error.h"
#include "../core/sys.h"
#include "io_impl.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

struct pf_output {
    FILE *f;
    char *path;       /* final */
    char *tmp;        /* NULL when in place */
    unsigned flags;
    bool is_stdout;
};

static atomic_uint g_default_flags;
static atomic_uint g_seq;

void pf_output_set_default_flags(unsigned flags) { atomic_store(&g_default_flags, flags); }
unsigned pf_output_default_flags(void) { return atomic_load(&g_default_flags); }

/* Inputs in use ------------------------------------------------------------------------ */

/* One entry per path string held (and its file's identity when held): the
 * release finds the entry by that string, never by a new stat, so a file
 * deleted or replaced while it was read is still released. */
typedef struct held_input {
    dev_t dev;
    ino_t ino;
    int refs;
    char *path;
} held_input;

static pf_mutex g_held_lock = PTHREAD_MUTEX_INITIALIZER;
static held_input *g_held;
static int g_held_count, g_held_cap;

static void held_add(const char *path, const struct stat *sb)
{
    for (int i = 0; i < g_held_count; i++)
        if (g_held[i].dev == sb->st_dev && g_held[i].ino == sb->st_ino &&
            !strcmp(g_held[i].path, path)) {
            g_held[i].refs++;
            return;
        }
    if (g_held_count == g_held_cap) {
        int cap = g_held_cap ? 2 * g_held_cap : 16;
        held_input *grown = realloc(g_held, (size_t)cap * sizeof *grown);
        if (!grown) return; /* out of memory: the CLI's own checks still hold */
        g_held = grown;
        g_held_cap = cap;
    }
    char *copy = strdup(path);
    if (copy) g_held[g_held_count++] = (held_input){sb->st_dev, sb->st_ino, 1, copy};
}

static void held_release(const char *path)
{
    /* The entry of this file if it is still there, else any of this name
     * (held before it was deleted or replaced). */
    struct stat sb;
    bool have = stat(path, &sb) == 0;
    int found = -1;
    for (int i = 0; i < g_held_count; i++) {
        if (strcmp(g_held[i].path, path) != 0) continue;
        if (found < 0) found = i;
        if (have && g_held[i].dev == sb.st_dev && g_held[i].ino == sb.st_ino) {
            found = i;
            break;
        }
    }
    if (found < 0 || --g_held[found].refs > 0) return;
    free(g_held[found].path);
    g_held[found] = g_held[--g_held_count];
}

void pf_io_input_hold(const char *path, bool hold)
{
    if (!path || pf_io_is_std(path)) return;
    struct stat sb;
    if (hold && (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))) return;
    pf_mutex_lock(&g_held_lock);
    if (hold)
        held_add(path, &sb);
    else
        held_release(path);
    pf_mutex_unlock(&g_held_lock);
}

pf_status pf_io_check_not_input(const char *path)
{
    struct stat sb;
    if (!path || pf_io_is_std(path) || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return PF_OK;
    pf_status st = PF_OK;
    pf_mutex_lock(&g_held_lock);
    for (int i = 0; i < g_held_count; i++)
        if (g_held[i].dev == sb.st_dev && g_held[i].ino == sb.st_ino) {
            st = pf_set_error(PF_ERR_INVALID,
                              "%s: refusing to write this output: it is the input %s (the same "
                              "file), which would be destroyed",
                              path, g_held[i].path);
            break;
        }
    pf_mutex_unlock(&g_held_lock);
    return st;
}

bool pf_output_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (!a || !b || pf_io_is_std(a) || pf_io_is_std(b)) return false;
    if (stat(a, &sa) != 0 || stat(b, &sb) != 0) return false;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Opening ------------------------------------------------------------------------------- */

static void output_free(pf_output *o)
{
    if (!o) return;
    free(o->path);
    free(o->tmp);
    free(o);
}

/* "DIR/.BASE.pftmp-PID-N.EXT" next to `path` (BASE shortened so the name
 * stays under NAME_MAX). */
static char *tmp_name(const char *path, unsigned seq)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t dirlen = (size_t)(base - path);
    const char *dot = strrchr(base, '.');
    const char *ext = dot && dot != base && strlen(dot) <= 16 ? dot : "";
    size_t baselen = strlen(base);
    if (baselen > 180) baselen = 180;
    size_t size = dirlen + baselen + strlen(ext) + 64;
    char *t = malloc(size);
    if (t)
        snprintf(t, size, "%.*s.%.*s.pftmp-%ld-%u%s", (int)dirlen, path, (int)baselen, base,
                 (long)getpid(), seq, ext);
    return t;
}

/* Sets o->tmp and o->f: a fresh temporary created with O_EXCL. */
static pf_status open_tmp(pf_output *o, const struct stat *existing)
{
    for (int attempt = 0; attempt < 64; attempt++) {
        free(o->tmp);
        o->tmp = tmp_name(o->path, atomic_fetch_add(&g_seq, 1));
        if (!o->tmp) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", o->path);
        int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno == EEXIST) continue; /* a stale name from a killed run */
        if (fd < 0) return pf_io_errno("create", o->path, errno);
        /* Replacing a file keeps its permissions (as writing it in place would). */
        if (existing) (void)fchmod(fd, existing->st_mode & 07777);
        o->f = fdopen(fd, "wb");
        if (!o->f) {
            int err = errno;
            close(fd);
            unlink(o->tmp);
            return pf_io_errno("create", o->path, err);
        }
        return PF_OK;
    }
    return pf_set_error(PF_ERR_IO, "%s: cannot create a temporary file beside it", o->path);
}

pf_status pf_output_open(const char *path, unsigned flags, pf_output **out)
{
    PF_CHECK_ARG(out, "pf_output_open", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(path && path[0], "pf_output_open", "path is NULL or empty");
    flags |= pf_output_default_flags();
    pf_output *o = calloc(1, sizeof *o);
    if (!o) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", path);
    o->flags = flags;
    if (pf_io_is_std(path)) {
        o->is_stdout = true;
        o->f = stdout;
        o->path = strdup("-");
        if (!o->path) {
            free(o);
            return pf_set_error(PF_ERR_NOMEM, "<stdout>: out of host memory");
        }
        *out = o;
        return PF_OK;
    }
    pf_status st = pf_io_check_not_input(path);
    if (st != PF_OK) {
        free(o);
        return st;
    }
    struct stat lsb, sb;
    bool exists = stat(path, &sb) == 0;
    bool link = lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode);
    if (exists && S_ISDIR(sb.st_mode)) {
        free(o);
        return pf_set_error(PF_ERR_INVALID, "%s: is a directory, not a file", path);
    }
    if (exists && S_ISREG(sb.st_mode) && (flags & PF_OUTPUT_NO_OVERWRITE)) {
        free(o);
        return pf_set_error(PF_ERR_IO, "%s: already exists (not overwritten: -n)", path);
    }
    /* /dev/stdout, /dev/fd/N, /proc/self/fd/N: the caller's open descriptor,
     * which a rename would leave pointing at the replaced file. */
    bool proc_link = link && (!strncmp(path, "/dev/", 5) || !strncmp(path, "/proc/", 6));
    if (link && exists && S_ISREG(sb.st_mode) && !proc_link) {
        char resolved[PATH_MAX];
        o->path = realpath(path, resolved) ? strdup(resolved) : NULL;
    } else {
        o->path = strdup(path);
    }
    if (!o->path) {
        free(o);
        return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", path);
    }
    if ((exists && !S_ISREG(sb.st_mode)) || (link && !exists) || proc_link) {
        /* A device, FIFO or socket (or a dangling link): written through. */
        o->f = fopen(path, "wb");
        if (!o->f) {
            st = pf_io_errno("open", path, errno);
            output_free(o);
            return st;
        }
        *out = o;
        return PF_OK;
    }
    st = open_tmp(o, exists ? &sb : NULL);
    if (st != PF_OK) {
        output_free(o);
        return st;
    }
    *out = o;
    return PF_OK;
}

FILE *pf_output_file(pf_output *o) { return o ? o->f : NULL; }
const char *pf_output_write_path(const pf_output *o) { return !o ? NULL : o->tmp ? o->tmp : o->path; }
const char *pf_output_path(const pf_output *o) { return o ? o->path : NULL; }
bool pf_output_in_place(const pf_output *o) { return o && !o->tmp; }

/* Committing ---------------------------------------------------------------------------- */

static void sync_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX];
    if (!slash) {
        snprintf(dir, sizeof dir, ".");
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        if (n >= sizeof dir) return;
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    (void)fsync(fd); /* best effort: some file systems refuse directory fsync */
    close(fd);
}

/* rename without replacing: renameat2 where the kernel and file system have
 * it, else link (fails with EEXIST) + unlink. */
static int rename_noreplace(const char *from, const char *to)
{
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return -1;
    if (link(from, to) != 0) return -1;
    unlink(from);
    return 0;
}

pf_status pf_output_commit(pf_output **po)
{
    if (!po || !*po) return PF_OK;
    pf_output *o = *po;
    *po = NULL;
    const char *name = o->is_stdout ? "<stdout>" : o->path;
    pf_status st = PF_OK;
    int err = 0;
    if (fflush(o->f) != 0 || ferror(o->f)) err = errno ? errno : EIO;
    if (!o->is_stdout) {
        /* fsync of an in-place FIFO or device fails with EINVAL: not an error. */
        if (!err && o->tmp && fsync(fileno(o->f)) != 0) err = errno;
        if (fclose(o->f) != 0 && !err) err = errno;
    }
    o->f = NULL;
    if (err) st = pf_io_errno("write", name, err);
    if (st == PF_OK && o->tmp) {
        int rc = (o->flags & PF_OUTPUT_NO_OVERWRITE) ? rename_noreplace(o->tmp, o->path)
                                                     : rename(o->tmp, o->path);
        if (rc != 0) {
            err = errno;
            st = err == EEXIST ? pf_set_error(PF_ERR_IO,
                                              "%s: already exists (created while this was "
                                              "written; not overwritten: -n)",
                                              o->path)
                               : pf_set_error(PF_ERR_IO, "%s: cannot rename the finished file %s over it: %s",
                                              o->path, o->tmp, strerror(err));
        } else if (!(o->flags & PF_OUTPUT_NO_DIR_SYNC)) {
            sync_dir(o->path);
        }
    }
    if (st != PF_OK && o->tmp) unlink(o->tmp);
    output_free(o);
    return st;
}

void pf_output_abort(pf_output **po)
{
    if (!po || !*po) return;
    pf_output *o = *po;
    *po = NULL;
    if (o->is_stdout)
        fflush(o->f);
    else if (o->f)
        fclose(o->f);
    if (o->tmp) unlink(o->tmp);
    output_free(o);
}

pf_status pf_output_write_file(const char *path, const void *data, size_t size, unsigned flags)
{
    pf_output *o = NULL;
    pf_status st = pf_output_open(path, flags, &o);
    if (st != PF_OK) return st;
    if (size && fwrite(data, 1, size, o->f) != size) {
        int err = errno ? errno : EIO;
        const char *name = o->is_stdout ? "<stdout>" : o->path;
        st = pf_io_errno("write", name, err);
        pf_output_abort(&o);
        return st;
    }
    return pf_output_commit(&o);
}
