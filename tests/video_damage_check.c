/* Damaged-video checker for tests/video_damage.sh (not a CTest test itself).
 *
 *   video_damage_check [-t THREADS] [-o DIR] CLIP...
 *
 * For each clip, writes deterministic damaged copies into DIR (truncated at
 * 5%, 20%, 45%, 70% and 95%; bit flips at 3 seeds; 3 zeroed runs; a
 * duplicated range; 1% of the bytes random) and decodes the clip and every
 * copy with pf_video_reader, each in its own child process with a time
 * bound, so a crash or a hang names the file. For each it prints
 *
 *   FILE: frames N, corrupt C, packets P, end STATUS[: message]
 *
 * and fails (exit 1) when a decode crashed (a signal), hung (over
 * DAMAGE_TIMEOUT_S seconds), returned an error whose message does not name
 * the file, or when the undamaged clip itself had damage or no frames.
 * Damaged copies may give frames (with or without counted damage: a flip
 * in padding changes nothing) or a clean error naming the file. A last
 * line per clip sums up: copies read, frames, damage counted, clean
 * errors. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pixflow/pixflow.h"

#define DAMAGE_TIMEOUT_S 30

typedef struct result {
    int64_t frames;
    uint64_t corrupt, packets;
    int end;            /* pf_status of the last call */
    char message[400];
} result;

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    size_t cap = 1 << 16;
    uint8_t *d = malloc(cap);
    *n = 0;
    for (size_t got; d && (got = fread(d + *n, 1, cap - *n, fp)) > 0;) {
        *n += got;
        if (*n == cap) {
            uint8_t *g = realloc(d, cap *= 2);
            if (!g) free(d);
            d = g;
        }
    }
    fclose(fp);
    return d;
}

static int spill(const char *path, const uint8_t *d, size_t n)
{
    FILE *fp = fopen(path, "wb");
    if (!fp) return -1;
    size_t w = fwrite(d, 1, n, fp);
    return fclose(fp) == 0 && w == n ? 0 : -1;
}

/* Child: decode `path` to the end; the result goes through a pipe. */
static void decode(const char *path, int threads, result *res)
{
    memset(res, 0, sizeof *res);
    pf_video_reader_params rp = pf_video_reader_params_default();
    rp.path = path;
    rp.format = PF_PIXFMT_I420;
    rp.pool_size = 2;
    rp.threads = threads;
    pf_video_reader *r = NULL;
    pf_status st = pf_video_reader_create(&rp, &r);
    if (st == PF_OK) {
        pf_frame f = {0};
        while ((st = pf_video_reader_read(r, &f)) == PF_OK) {
            /* Touch the pixels: a frame must be whole memory. */
            volatile uint8_t sink = f.data[0][0] ^ f.data[0][(size_t)(f.height - 1) * f.stride[0]];
            (void)sink;
            res->frames++;
            pf_frame_unref(&f);
        }
        pf_video_reader_stats s;
        pf_video_reader_get_stats(r, &s);
        res->corrupt = s.corrupt_packets;
        res->packets = s.packets;
    }
    res->end = st;
    if (st != PF_OK && st != PF_EOF) snprintf(res->message, sizeof res->message, "%s", pf_last_error());
    pf_video_reader_destroy(&r);
}

/* Decodes in a child; 0 ok, else a description of the failure in `why`. */
static int check(const char *path, int threads, result *res, char *why, size_t why_size)
{
    int fds[2];
    if (pipe(fds) != 0) return snprintf(why, why_size, "pipe: %s", strerror(errno)), -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return snprintf(why, why_size, "fork: %s", strerror(errno)), -1;
    if (pid == 0) {
        close(fds[0]);
        alarm(DAMAGE_TIMEOUT_S);
        result r;
        decode(path, threads, &r);
        ssize_t w = write(fds[1], &r, sizeof r);
        _exit(w == (ssize_t)sizeof r ? 0 : 3);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], res, sizeof *res);
    close(fds[0]);
    int ws = 0;
    waitpid(pid, &ws, 0);
    if (WIFSIGNALED(ws))
        return snprintf(why, why_size, "%s (signal %d)",
                        WTERMSIG(ws) == SIGALRM ? "HANG: over the time bound" : "CRASH",
                        WTERMSIG(ws)),
               -1;
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0 || got != (ssize_t)sizeof *res)
        return snprintf(why, why_size, "child exit status %d", WEXITSTATUS(ws)), -1;
    if (res->end != PF_EOF && !strstr(res->message, path))
        return snprintf(why, why_size, "error does not name the file: %s", res->message), -1;
    return 0;
}

typedef struct damage {
    const char *name;
    int kind;           /* 0 cut, 1 flips, 2 zero run, 3 duplicate, 4 noise */
    double at;          /* where (fraction of the file) */
    int seed;
} damage;

static const damage damages[] = {
    {"cut05", 0, 0.05, 0},  {"cut20", 0, 0.20, 0},  {"cut45", 0, 0.45, 0},
    {"cut70", 0, 0.70, 0},  {"cut95", 0, 0.95, 0},  {"flip1", 1, 0, 1},
    {"flip2", 1, 0, 2},     {"flip3", 1, 0, 3},     {"zero30", 2, 0.30, 0},
    {"zero60", 2, 0.60, 0}, {"zero90", 2, 0.90, 0}, {"dup", 3, 0.40, 0},
    {"noise", 4, 0, 4},
};

/* Writes the damaged copy; returns its size (0 on failure). */
static size_t make_copy(const damage *dm, const uint8_t *d, size_t n, uint8_t *out)
{
    size_t size = n;
    memcpy(out, d, n);
    rng_state = 0x9E3779B97F4A7C15ull + (uint64_t)dm->seed * 7919u;
    /* Leave the first 64 bytes (the container's signature) alone for
     * flips and noise, so the damage reaches the demuxer and decoder
     * instead of failing the probe every time. */
    size_t lo = n > 256 ? 64 : 0;
    switch (dm->kind) {
    case 0: size = (size_t)(dm->at * (double)n); break;
    case 1:
        for (int i = 0; i < 24; i++) out[lo + rng() % (n - lo)] ^= (uint8_t)(1u << (rng() % 8));
        break;
    case 2: {
        size_t at = (size_t)(dm->at * (double)n), len = n / 50 + 16;
        if (at + len > n) len = n - at;
        memset(out + at, 0, len);
        break;
    }
    case 3: {
        /* A range repeated in place: bytes [a, a+len) appear twice. */
        size_t a = (size_t)(dm->at * (double)n), len = n / 10;
        memcpy(out + a + len, d + a, n - a);
        size = n + len;
        break;
    }
    case 4:
        for (size_t i = 0; i < n / 100; i++) out[lo + rng() % (n - lo)] = (uint8_t)rng();
        break;
    }
    return size;
}

int main(int argc, char **argv)
{
    int threads = 0, opt;
    const char *dir = ".";
    while ((opt = getopt(argc, argv, "t:o:")) != -1) {
        if (opt == 't') threads = atoi(optarg);
        else if (opt == 'o') dir = optarg;
        else return 2;
    }
    pf_log_set_level(PF_LOG_ERROR);
    int failures = 0;
    for (int a = optind; a < argc; a++) {
        const char *clip = argv[a];
        size_t n = 0;
        uint8_t *d = slurp(clip, &n);
        if (!d || n < 512) {
            fprintf(stderr, "%s: cannot read the clip (or under 512 bytes)\n", clip);
            failures++;
            free(d);
            continue;
        }
        uint8_t *copy = malloc(n + n / 10 + 1);
        result res;
        char why[600];
        if (check(clip, threads, &res, why, sizeof why) != 0 || res.end != PF_EOF ||
            res.frames == 0 || res.corrupt != 0) {
            fprintf(stderr, "FAIL %s (undamaged): %s frames %" PRId64 ", corrupt %" PRIu64 " %s\n",
                    clip, why, res.frames, res.corrupt, res.message);
            failures++;
        }
        int64_t clean_frames = res.frames;
        printf("%s: frames %" PRId64 ", packets %" PRIu64 " (undamaged)\n", clip, res.frames,
               res.packets);
        const char *base = strrchr(clip, '/');
        base = base ? base + 1 : clip;
        int read_ok = 0, damaged = 0, errors = 0;
        int64_t frames = 0;
        for (size_t k = 0; copy && k < sizeof damages / sizeof damages[0]; k++) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s.%s", dir, damages[k].name, base);
            size_t size = make_copy(&damages[k], d, n, copy);
            if (spill(path, copy, size) != 0) {
                fprintf(stderr, "%s: cannot write\n", path);
                failures++;
                continue;
            }
            memset(why, 0, sizeof why);
            int rc = check(path, threads, &res, why, sizeof why);
            printf("  %s: frames %" PRId64 ", corrupt %" PRIu64 ", packets %" PRIu64 ", end %s%s%s\n",
                   path, res.frames, res.corrupt, res.packets, pf_status_str(res.end),
                   res.message[0] ? ": " : "", res.message);
            if (rc != 0 || res.frames > 4 * clean_frames + 8) {
                fprintf(stderr, "FAIL %s: %s\n", path, rc ? why : "more frames than plausible");
                failures++;
                continue;
            }
            if (res.end == PF_EOF) {
                read_ok++;
                frames += res.frames;
                damaged += res.corrupt > 0;
            } else {
                errors++;
            }
        }
        printf("%s: %d damaged copies read to the end (%" PRId64 " frames, %d with damage "
               "counted), %d clean errors\n",
               clip, read_ok, frames, damaged, errors);
        free(copy);
        free(d);
    }
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
