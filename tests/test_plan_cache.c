/* The plan cache on disk (src/nn/plan_cache.c): round trip across opens,
 * a file of another key ignored, every kind of damage (truncation, a flipped
 * byte, a wrong version, trailing bytes) detected and the file rebuilt,
 * concurrent writers in separate processes keeping each other's entries,
 * a full disk (RLIMIT_FSIZE) and a read-only directory failing the write
 * without failing the caller, the directory rules, and pf_hash64's basics. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/hash.h"
#include "nn/plan_cache.h"
#include "pf_test.h"

static char dir[256];

static void set_dir(const char *sub)
{
    char d[300];
    snprintf(d, sizeof d, "%s/%s", dir, sub);
    setenv("PIXFLOW_CACHE_DIR", d, 1);
}

static void put_int(pf_plan_cache *c, const char *k, int v) { pf_plan_cache_put(c, k, &v, sizeof v); }

static int get_int(pf_plan_cache *c, const char *k)
{
    int v = -1;
    return pf_plan_cache_get(c, k, &v, sizeof v) ? v : -1;
}

static void test_round_trip(void)
{
    set_dir("rt");
    pf_plan_cache *c = pf_plan_cache_open("model A|dev X|fp16");
    REQUIRE(c != NULL);
    pf_plan_cache_stats s;
    pf_plan_cache_get_stats(c, &s);
    CHECK(!s.loaded && !s.rejected);
    CHECK_EQ_INT(get_int(c, "conv 1"), -1);
    put_int(c, "conv 1", 11);
    put_int(c, "conv 2", 22);
    put_int(c, "conv 1", 12); /* replaces */
    CHECK_EQ_INT(get_int(c, "conv 1"), 12);
    int wrong_size[2];
    CHECK(!pf_plan_cache_get(c, "conv 1", wrong_size, sizeof wrong_size));
    CHECK_OK(pf_plan_cache_flush(c));
    char path[4096];
    CHECK(pf_plan_cache_path(c, path, sizeof path));
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && sb.st_size > 0);
    char d[300];
    snprintf(d, sizeof d, "%s/rt", dir);
    CHECK(stat(d, &sb) == 0 && (sb.st_mode & 0777) == 0700);
    pf_plan_cache_close(&c);
    CHECK(c == NULL);

    c = pf_plan_cache_open("model A|dev X|fp16");
    pf_plan_cache_get_stats(c, &s);
    CHECK(s.loaded);
    CHECK_EQ_INT(get_int(c, "conv 1"), 12);
    CHECK_EQ_INT(get_int(c, "conv 2"), 22);
    CHECK_EQ_INT(get_int(c, "conv 3"), -1);
    pf_plan_cache_get_stats(c, &s);
    CHECK_EQ_INT(s.hits, 2);
    CHECK_EQ_INT(s.misses, 1);
    pf_plan_cache_close(&c);

    /* Another key: another file, nothing shared. */
    c = pf_plan_cache_open("model B|dev X|fp16");
    pf_plan_cache_get_stats(c, &s);
    CHECK(!s.loaded && !s.rejected);
    CHECK_EQ_INT(get_int(c, "conv 1"), -1);
    pf_plan_cache_close(&c);
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *b = malloc(1 << 20);
    *n = fread(b, 1, 1 << 20, f);
    fclose(f);
    return b;
}

static void spit(const char *path, const unsigned char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(b, 1, n, f);
    fclose(f);
}

/* Writes a damaged copy of the good file, opens, expects it rejected with
 * nothing loaded, then that a flush rebuilds a good file. */
static void expect_rejected(const char *key, const char *path, const unsigned char *b, size_t n,
                            const char *what)
{
    spit(path, b, n);
    pf_plan_cache *c = pf_plan_cache_open(key);
    pf_plan_cache_stats s;
    pf_plan_cache_get_stats(c, &s);
    if (!s.rejected) fprintf(stderr, "  not rejected: %s\n", what);
    CHECK(s.rejected && !s.loaded);
    CHECK_EQ_INT(get_int(c, "a"), -1);
    put_int(c, "a", 1);
    pf_plan_cache_close(&c);
    c = pf_plan_cache_open(key);
    pf_plan_cache_get_stats(c, &s);
    CHECK(s.loaded && !s.rejected);
    CHECK_EQ_INT(get_int(c, "a"), 1);
    pf_plan_cache_close(&c);
}

static void test_damage(void)
{
    set_dir("damage");
    const char *key = "damage key";
    pf_plan_cache *c = pf_plan_cache_open(key);
    REQUIRE(c != NULL);
    put_int(c, "a", 1);
    put_int(c, "bb", 2);
    char path[4096];
    pf_plan_cache_path(c, path, sizeof path);
    pf_plan_cache_close(&c);
    size_t n = 0;
    unsigned char *good = slurp(path, &n);
    REQUIRE(good && n > 40);
    unsigned char *b = malloc(n + 16);
    for (size_t cut = 1; cut < n; cut += 7) expect_rejected(key, path, good, cut, "truncated");
    for (size_t i = 0; i < n; i += 5) {
        memcpy(b, good, n);
        b[i] ^= 0x10;
        expect_rejected(key, path, b, n, "flipped byte");
    }
    memcpy(b, good, n);
    memcpy(b + n, "trailing", 8);
    expect_rejected(key, path, b, n + 8, "trailing bytes");
    /* A valid file of another key at our name (a hash collision, or a
     * copied file): refused by the key text inside. */
    pf_plan_cache *o = pf_plan_cache_open("other key");
    put_int(o, "a", 5);
    char opath[4096];
    pf_plan_cache_path(o, opath, sizeof opath);
    pf_plan_cache_close(&o);
    size_t on = 0;
    unsigned char *other = slurp(opath, &on);
    REQUIRE(other != NULL);
    expect_rejected(key, path, other, on, "another key");
    /* The parser alone: a wrong version with a right checksum. */
    memcpy(b, good, n);
    b[8] = 99;
    CHECK(pf_plan_cache_parse(b, n, key, NULL, NULL) == PF_ERR_FORMAT);
    CHECK(strstr(pf_last_error(), "checksum") != NULL);
    free(b);
    free(good);
    free(other);
}

/* Four processes add disjoint entries to one file at once, each flushing
 * after every entry; afterwards the file is valid, and every entry of the
 * last process to write is there (the earlier ones' may be lost to a rename
 * race, which the header allows: lost work, never a wrong value). */
static void test_concurrent(void)
{
    set_dir("conc");
    const char *key = "shared key";
    pid_t pids[4];
    for (int p = 0; p < 4; p++) {
        pids[p] = fork();
        if (pids[p] == 0) {
            pf_plan_cache *c = pf_plan_cache_open(key);
            for (int i = 0; i < 50; i++) {
                char k[32];
                snprintf(k, sizeof k, "p%d e%d", p, i);
                put_int(c, k, p * 1000 + i);
                if (pf_plan_cache_flush(c) != PF_OK) _exit(2);
            }
            pf_plan_cache_close(&c);
            _exit(0);
        }
    }
    for (int p = 0; p < 4; p++) {
        int ws = 0;
        waitpid(pids[p], &ws, 0);
        CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    }
    pf_plan_cache *c = pf_plan_cache_open(key);
    pf_plan_cache_stats s;
    pf_plan_cache_get_stats(c, &s);
    CHECK(s.loaded && !s.rejected);
    int found = 0, wrong = 0;
    for (int p = 0; p < 4; p++)
        for (int i = 0; i < 50; i++) {
            char k[32];
            snprintf(k, sizeof k, "p%d e%d", p, i);
            int v = get_int(c, k);
            if (v >= 0) found++;
            if (v >= 0 && v != p * 1000 + i) wrong++;
        }
    CHECK_EQ_INT(wrong, 0);
    CHECK(found >= 50);
    printf("  concurrent: %d of 200 entries survived 4 writers\n", found);
    pf_plan_cache_close(&c);
    /* No temporary files left behind. */
    char cmd[400];
    snprintf(cmd, sizeof cmd, "test $(ls -A '%s/conc' | wc -l) -eq 1", dir);
    CHECK(system(cmd) == 0);
}

static void test_write_failures(void)
{
    /* Full disk: a file size limit of 16 bytes (SIGXFSZ ignored: EFBIG). */
    set_dir("full");
    pf_plan_cache *c = pf_plan_cache_open("full key");
    for (int i = 0; i < 20; i++) {
        char k[32];
        snprintf(k, sizeof k, "entry %d", i);
        put_int(c, k, i);
    }
    struct rlimit old, small = {16, 16};
    getrlimit(RLIMIT_FSIZE, &old);
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &small);
    pf_status st = pf_plan_cache_flush(c);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, prev);
    CHECK(st == PF_ERR_IO);
    pf_plan_cache_stats s;
    pf_plan_cache_get_stats(c, &s);
    CHECK(s.write_failed);
    CHECK_EQ_INT(get_int(c, "entry 3"), 3); /* still usable in memory */
    pf_plan_cache_close(&c);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "test $(ls -A '%s/full' | wc -l) -eq 0", dir);
    CHECK(system(cmd) == 0); /* the partial temporary was removed */

    /* A directory that cannot be created (a file is in the way). */
    char blocker[300];
    snprintf(blocker, sizeof blocker, "%s/blocker", dir);
    spit(blocker, (const unsigned char *)"x", 1);
    set_dir("blocker/sub");
    c = pf_plan_cache_open("blocked key");
    put_int(c, "a", 1);
    CHECK(pf_plan_cache_flush(c) == PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "blocker") != NULL);
    pf_plan_cache_close(&c);
}

static void test_dirs(void)
{
    char b[4096];
    setenv("PIXFLOW_CACHE_DIR", "off", 1);
    CHECK(!pf_plan_cache_dir(b, sizeof b));
    CHECK(pf_plan_cache_open("k") == NULL);
    CHECK(!pf_plan_cache_get(NULL, "k", b, 4)); /* NULL is an empty cache */
    pf_plan_cache_put(NULL, "k", b, 4);
    CHECK_OK(pf_plan_cache_flush(NULL));
    unsetenv("PIXFLOW_CACHE_DIR");
    setenv("XDG_CACHE_HOME", "/x/cache", 1);
    CHECK(pf_plan_cache_dir(b, sizeof b) && !strcmp(b, "/x/cache/pixflow"));
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/home/u", 1);
    CHECK(pf_plan_cache_dir(b, sizeof b) && !strcmp(b, "/home/u/.cache/pixflow"));
}

static void test_hash(void)
{
    unsigned char buf[300];
    for (int i = 0; i < 300; i++) buf[i] = (unsigned char)(i * 7 + 3);
    uint64_t h = pf_hash64(buf, 300, 0);
    CHECK(h == pf_hash64(buf, 300, 0));
    CHECK(h != pf_hash64(buf, 300, 1));
    CHECK(h != pf_hash64(buf, 299, 0));
    /* Every single-bit flip at every length class changes the hash. */
    int same = 0;
    for (size_t n = 1; n < 70; n++)
        for (size_t i = 0; i < n; i++) {
            uint64_t a = pf_hash64(buf, n, 0);
            buf[i] ^= 1;
            same += a == pf_hash64(buf, n, 0);
            buf[i] ^= 1;
        }
    CHECK_EQ_INT(same, 0);
    /* Alignment does not matter. */
    CHECK(pf_hash64(buf + 1, 64, 0) == pf_hash64(memcpy(buf + 200, buf + 1, 64), 64, 0));
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/pf_plan_cache_XXXXXX");
    if (!mkdtemp(dir)) return 1;
    pf_log_set_level(PF_LOG_ERROR); /* the rejections' warnings are expected */
    PF_RUN(test_round_trip);
    PF_RUN(test_damage);
    PF_RUN(test_concurrent);
    PF_RUN(test_write_failures);
    PF_RUN(test_dirs);
    PF_RUN(test_hash);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) return 1;
    return pf_test_finish();
}
