/* The executors' plan cache on disk: see plan_cache.h for what and why.
 *
 * File layout (little-endian):
 *   "PFPLANC\n"  u32 format  u32 key_len  key bytes  u32 count
 *   count x { u32 ekey_len  ekey bytes  u32 value_len  value bytes }
 *   u64 checksum = pf_hash64(every byte before it, CHECK_SEED)
 * Every length is bounded (plan_cache.h) and checked against the bytes left
 * before it is used, so a truncated or hostile file is refused, not read
 * past (fuzz/fuzz_plan_cache.c). */
#define _POSIX_C_SOURCE 200809L

#include "plan_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/error.h"
#include "../core/hash.h"
#include "../core/sys.h"

static const char MAGIC[8] = {'P', 'F', 'P', 'L', 'A', 'N', 'C', '\n'};
#define CHECK_SEED PF_PLAN_CACHE_CHECK_SEED
#define MAX_FILE ((size_t)64 << 20)

typedef struct entry {
    char *key;
    unsigned char *val;
    size_t size;
} entry;

struct pf_plan_cache {
    pf_mutex mu;
    char *key;
    char path[4096];
    entry *e;
    int n, cap;
    bool dirty;
    pf_plan_cache_stats st;
};

/* Directory ----------------------------------------------------------------------- */

bool pf_plan_cache_dir(char *buf, size_t size)
{
    const char *d = getenv("PIXFLOW_CACHE_DIR");
    if (d) {
        if (!*d || !strcmp(d, "off") || !strcmp(d, "0")) return false;
        return (size_t)snprintf(buf, size, "%s", d) < size;
    }
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && xdg[0] == '/') return (size_t)snprintf(buf, size, "%s/pixflow", xdg) < size;
    const char *home = getenv("HOME");
    if (home && home[0] == '/') return (size_t)snprintf(buf, size, "%s/.cache/pixflow", home) < size;
    return false;
}

/* mkdir -p, the last component with mode 0700 (the parents as usual). */
static bool make_dirs(const char *dir)
{
    char p[4096];
    if ((size_t)snprintf(p, sizeof p, "%s", dir) >= sizeof p) return false;
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST) return false;
        *s = '/';
    }
    return mkdir(p, 0700) == 0 || errno == EEXIST;
}

/* Entries ------------------------------------------------------------------------- */

static entry *find(pf_plan_cache *c, const char *k)
{
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->e[i].key, k)) return &c->e[i];
    return NULL;
}

/* Adds or replaces; false on out of memory. */
static bool set(pf_plan_cache *c, const char *k, const void *v, size_t size, bool replace)
{
    entry *e = find(c, k);
    if (e && !replace) return true;
    unsigned char *copy = malloc(size ? size : 1);
    if (!copy) return false;
    memcpy(copy, v, size);
    if (e) {
        free(e->val);
        e->val = copy;
        e->size = size;
        return true;
    }
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 64;
        entry *g = realloc(c->e, (size_t)cap * sizeof *g);
        if (!g) {
            free(copy);
            return false;
        }
        c->e = g;
        c->cap = cap;
    }
    char *kc = strdup(k);
    if (!kc) {
        free(copy);
        return false;
    }
    c->e[c->n++] = (entry){kc, copy, size};
    return true;
}

/* Parsing ------------------------------------------------------------------------- */

typedef struct reader {
    const unsigned char *p;
    size_t left;
} reader;

static bool take(reader *r, void *out, size_t n)
{
    if (r->left < n) return false;
    if (out) memcpy(out, r->p, n);
    r->p += n;
    r->left -= n;
    return true;
}

static bool take_u32(reader *r, uint32_t *v)
{
    unsigned char b[4];
    if (!take(r, b, 4)) return false;
    *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return true;
}

pf_status pf_plan_cache_parse(const void *data, size_t size, const char *key,
                              void (*add)(void *arg, const char *ekey, const void *val,
                                          size_t vsize),
                              void *arg)
{
    const unsigned char *d = data;
    if (size < sizeof MAGIC + 8 + 8 || memcmp(d, MAGIC, sizeof MAGIC) != 0)
        return pf_set_error(PF_ERR_FORMAT, "not a pixflow plan cache file");
    uint64_t sum = 0;
    for (int i = 0; i < 8; i++) sum |= (uint64_t)d[size - 8 + (size_t)i] << (8 * i);
    if (pf_hash64(d, size - 8, CHECK_SEED) != sum)
        return pf_set_error(PF_ERR_FORMAT, "checksum mismatch (a torn or damaged file)");
    reader r = {d + sizeof MAGIC, size - sizeof MAGIC - 8};
    uint32_t fmt = 0, klen = 0, count = 0;
    if (!take_u32(&r, &fmt) || fmt != PF_PLAN_CACHE_FORMAT)
        return pf_set_error(PF_ERR_FORMAT, "format version %u (this pixflow writes %d)",
                            (unsigned)fmt, PF_PLAN_CACHE_FORMAT);
    if (!take_u32(&r, &klen) || klen > PF_PLAN_CACHE_MAX_KEY || klen != strlen(key) ||
        r.left < klen || memcmp(r.p, key, klen) != 0)
        return pf_set_error(PF_ERR_FORMAT, "written for another model, device or library "
                            "version (key differs)");
    take(&r, NULL, klen);
    if (!take_u32(&r, &count) || count > PF_PLAN_CACHE_MAX_ENTRIES)
        return pf_set_error(PF_ERR_FORMAT, "entry count %u out of range", (unsigned)count);
    /* Two passes: check every entry first, so a bad one adds nothing. */
    for (int pass = 0; pass < 2; pass++) {
        reader q = r;
        for (uint32_t i = 0; i < count; i++) {
            uint32_t el = 0, vl = 0;
            char ek[PF_PLAN_CACHE_MAX_KEY + 1];
            if (!take_u32(&q, &el) || el == 0 || el > PF_PLAN_CACHE_MAX_KEY || !take(&q, ek, el))
                return pf_set_error(PF_ERR_FORMAT, "entry %u: bad key length", (unsigned)i);
            ek[el] = '\0';
            if (strlen(ek) != el)
                return pf_set_error(PF_ERR_FORMAT, "entry %u: NUL inside the key", (unsigned)i);
            if (!take_u32(&q, &vl) || vl > PF_PLAN_CACHE_MAX_VALUE || q.left < vl)
                return pf_set_error(PF_ERR_FORMAT, "entry %u: bad value length", (unsigned)i);
            if (pass == 1) add(arg, ek, q.p, vl);
            take(&q, NULL, vl);
        }
        if (q.left != 0)
            return pf_set_error(PF_ERR_FORMAT, "%zu bytes after the last entry", q.left);
    }
    return PF_OK;
}

typedef struct load_arg {
    pf_plan_cache *c;
    bool replace;
    bool nomem;
} load_arg;

static void add_entry(void *arg, const char *ekey, const void *val, size_t vsize)
{
    load_arg *a = arg;
    if (!set(a->c, ekey, val, vsize, a->replace)) a->nomem = true;
}

/* Reads the file whole (NULL when missing, unreadable or too large). */
static unsigned char *read_all(const char *path, size_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat sb;
    unsigned char *buf = NULL;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 &&
        (size_t)sb.st_size <= MAX_FILE)
        buf = malloc((size_t)sb.st_size);
    size_t got = 0;
    while (buf && got < (size_t)sb.st_size) {
        ssize_t k = read(fd, buf + got, (size_t)sb.st_size - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(fd);
    if (buf && got != (size_t)sb.st_size) {
        free(buf);
        buf = NULL;
    }
    *size = got;
    return buf;
}

/* Merges the file's entries into c (ours win when replace is false).
 * Returns 1 loaded, 0 no file, -1 a file that failed its checks (logged
 * when `warn`: once per open, not again when a flush re-reads it). */
static int load_file(pf_plan_cache *c, bool replace, bool warn)
{
    size_t size = 0;
    unsigned char *buf = read_all(c->path, &size);
    if (!buf) return 0;
    load_arg a = {c, replace, false};
    pf_status st = pf_plan_cache_parse(buf, size, c->key, add_entry, &a);
    free(buf);
    if (st != PF_OK) {
        if (warn) PF_LOGW("plan cache %s: ignored and rebuilt: %s", c->path, pf_last_error());
        return -1;
    }
    return 1;
}

/* Open / close -------------------------------------------------------------------- */

pf_plan_cache *pf_plan_cache_open(const char *key)
{
    char dir[4000];
    if (!key || strlen(key) > PF_PLAN_CACHE_MAX_KEY || !pf_plan_cache_dir(dir, sizeof dir))
        return NULL;
    pf_plan_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->key = strdup(key);
    if (!c->key) {
        free(c);
        return NULL;
    }
    pf_mutex_init(&c->mu);
    snprintf(c->path, sizeof c->path, "%s/plans-%016llx.bin", dir,
             (unsigned long long)pf_hash64(key, strlen(key), 0));
    int r = load_file(c, true, true);
    c->st.loaded = r > 0;
    c->st.rejected = r < 0;
    c->dirty = false;
    return c;
}

bool pf_plan_cache_get(pf_plan_cache *c, const char *ekey, void *val, size_t size)
{
    if (!c || !ekey) return false;
    pf_mutex_lock(&c->mu);
    entry *e = find(c, ekey);
    bool hit = e && e->size == size;
    if (hit) memcpy(val, e->val, size);
    if (hit) c->st.hits++;
    else c->st.misses++;
    pf_mutex_unlock(&c->mu);
    return hit;
}

void pf_plan_cache_put(pf_plan_cache *c, const char *ekey, const void *val, size_t size)
{
    if (!c || !ekey || !*ekey || strlen(ekey) > PF_PLAN_CACHE_MAX_KEY ||
        size > PF_PLAN_CACHE_MAX_VALUE)
        return;
    pf_mutex_lock(&c->mu);
    if (set(c, ekey, val, size, true)) {
        c->dirty = true;
        c->st.stored++;
    }
    pf_mutex_unlock(&c->mu);
}

/* Serialisation ------------------------------------------------------------------- */

typedef struct writer {
    unsigned char *p;
    size_t n, cap;
    bool nomem;
} writer;

static void put(writer *w, const void *d, size_t n)
{
    if (w->nomem) return;
    if (w->n + n > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap < w->n + n) cap *= 2;
        unsigned char *g = realloc(w->p, cap);
        if (!g) {
            w->nomem = true;
            return;
        }
        w->p = g;
        w->cap = cap;
    }
    memcpy(w->p + w->n, d, n);
    w->n += n;
}

static void put_u32(writer *w, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    put(w, b, 4);
}

static pf_status write_file(pf_plan_cache *c)
{
    writer w = {0};
    put(&w, MAGIC, sizeof MAGIC);
    put_u32(&w, PF_PLAN_CACHE_FORMAT);
    put_u32(&w, (uint32_t)strlen(c->key));
    put(&w, c->key, strlen(c->key));
    put_u32(&w, (uint32_t)c->n);
    for (int i = 0; i < c->n; i++) {
        put_u32(&w, (uint32_t)strlen(c->e[i].key));
        put(&w, c->e[i].key, strlen(c->e[i].key));
        put_u32(&w, (uint32_t)c->e[i].size);
        put(&w, c->e[i].val, c->e[i].size);
    }
    uint64_t sum = w.nomem ? 0 : pf_hash64(w.p, w.n, CHECK_SEED);
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(sum >> (8 * i));
    put(&w, b, 8);
    if (w.nomem) {
        free(w.p);
        return pf_set_error(PF_ERR_NOMEM, "out of host memory");
    }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", c->path);
    int fd = mkstemp(tmp);
    pf_status st = PF_OK;
    if (fd < 0) {
        st = pf_set_error(PF_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
    } else {
        size_t done = 0;
        while (done < w.n) {
            ssize_t k = write(fd, w.p + done, w.n - done);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) {
                st = pf_set_error(PF_ERR_IO, "writing %s: %s", tmp,
                                  k < 0 ? strerror(errno) : "no space");
                break;
            }
            done += (size_t)k;
        }
        if (close(fd) != 0 && st == PF_OK)
            st = pf_set_error(PF_ERR_IO, "closing %s: %s", tmp, strerror(errno));
        if (st == PF_OK && rename(tmp, c->path) != 0)
            st = pf_set_error(PF_ERR_IO, "renaming %s to %s: %s", tmp, c->path, strerror(errno));
        if (st != PF_OK) unlink(tmp);
    }
    free(w.p);
    return st;
}

pf_status pf_plan_cache_flush(pf_plan_cache *c)
{
    if (!c) return PF_OK;
    pf_mutex_lock(&c->mu);
    pf_status st = PF_OK;
    if (c->dirty) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", c->path);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = '\0';
        if (!make_dirs(dir)) {
            st = pf_set_error(PF_ERR_IO, "cannot create the directory %s: %s", dir,
                              strerror(errno));
        } else {
            /* Entries another process wrote meanwhile; ours win. */
            (void)load_file(c, false, false);
            st = write_file(c);
        }
        if (st != PF_OK && !c->st.write_failed)
            PF_LOGW("plan cache: not saved (tuning is redone next time): %s", pf_last_error());
        if (st != PF_OK) c->st.write_failed = true;
        c->dirty = false;
    }
    pf_mutex_unlock(&c->mu);
    return st;
}

void pf_plan_cache_get_stats(pf_plan_cache *c, pf_plan_cache_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!c) return;
    pf_mutex_lock(&c->mu);
    *out = c->st;
    pf_mutex_unlock(&c->mu);
}

bool pf_plan_cache_path(const pf_plan_cache *c, char *buf, size_t size)
{
    if (!c) return false;
    snprintf(buf, size, "%s", c->path);
    return true;
}

void pf_plan_cache_close(pf_plan_cache **pc)
{
    if (!pc || !*pc) return;
    pf_plan_cache *c = *pc;
    *pc = NULL;
    (void)pf_plan_cache_flush(c);
    for (int i = 0; i < c->n; i++) {
        free(c->e[i].key);
        free(c->e[i].val);
    }
    free(c->e);
    free(c->key);
    pf_mutex_destroy(&c->mu);
    free(c);
}
