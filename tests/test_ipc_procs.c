/* IPC between processes on the CPU backend (memfd slots): a producer and
 * consumers in separate processes exchange frames whose every byte is
 * derived from the sequence number, so a torn, stale or misplaced frame
 * fails the check; kill -9 of either side at random moments in a loop.
 *
 *   exchange_10000      producer + 2 BLOCK consumers, 10,000 frames each,
 *                       contents checked, no gap, clean end (PF_EOF)
 *   mixed_policies      a slow LATEST_ONLY consumer does not slow a BLOCK
 *                       one: it gets fewer frames, all intact
 *   kill_consumer_loop  a consumer killed mid-stream (holding slots): the
 *                       producer finishes and the other consumer still gets
 *                       every frame; 6 rounds
 *   kill_producer_loop  the producer killed mid-stream: consumers end with
 *                       PF_ERR_CLOSED (not a clean end) within 5 s; the next
 *                       round's producer replaces the stale socket; 6 rounds
 *   late_consumer       a consumer attaching after frames were published
 *                       starts at the next frame
 *   kill_reclaim_time   a consumer killed while holding 3 slots: the
 *                       producer has them back within 1 s (measured: the
 *                       close is seen at once) */
#include <errno.h>
#include <fcntl.h>

#include "ipc_test_util.h"
#include "pf_test.h"

typedef struct prod_args {
    const char *path;
    int frames;
    int slots;
    int wait;                 /* consumers to wait for (2 s, then go on) */
    int64_t gap_us;           /* pause between frames */
} prod_args;

static int producer_main(void *arg)
{
    prod_args *a = arg;
    pf_log_set_level(PF_LOG_ERROR);
    pf_ipc_producer_params pp = pf_ipc_producer_params_default();
    pp.path = a->path;
    pp.format = PF_PIXFMT_NV12;
    pp.width = 34;
    pp.height = 20;
    pp.slots = a->slots;
    pf_ipc_producer *p = NULL;
    if (pf_ipc_producer_create(&pp, &p) != PF_OK) {
        fprintf(stderr, "producer: %s\n", pf_last_error());
        return 10;
    }
    if (a->wait) pf_ipc_producer_wait_consumers(p, a->wait, 2000000);
    for (int k = 1; k <= a->frames; k++) {
        pf_frame f;
        if (pf_ipc_producer_acquire(p, 20000000, &f) != PF_OK) {
            fprintf(stderr, "producer: frame %d: %s\n", k, pf_last_error());
            return 12;
        }
        ipc_fill(&f, (uint64_t)k);
        f.index = k;
        f.source = 7;
        if (pf_ipc_producer_publish(p, &f, NULL, 0) != PF_OK) return 13;
        if (a->gap_us) ipc_sleep_us(a->gap_us);
    }
    pf_ipc_producer_stats s;
    pf_ipc_producer_get_stats(p, &s);
    pf_ipc_producer_destroy(&p);
    return s.published == (uint64_t)a->frames ? 0 : 14;
}

typedef struct cons_args {
    const char *path;
    pf_ipc_policy policy;
    int expect;               /* frames that must arrive (0: any number) */
    int64_t hold_us;          /* time each frame is held */
    bool expect_crash;        /* the producer will be killed */
    int ready_fd;             /* a byte written here after the first frame; -1 */
} cons_args;

static int consumer_main(void *arg)
{
    cons_args *a = arg;
    pf_log_set_level(PF_LOG_ERROR);
    pf_ipc_consumer_params cp = pf_ipc_consumer_params_default();
    cp.path = a->path;
    cp.policy = a->policy;
    cp.name = "test";
    pf_ipc_consumer *c = NULL;
    if (pf_ipc_consumer_create(&cp, &c) != PF_OK) {
        fprintf(stderr, "consumer: %s\n", pf_last_error());
        return 20;
    }
    uint64_t last = 0;
    int n = 0, code = 0;
    for (;;) {
        pf_frame f;
        pf_ipc_frame_info info;
        pf_status st = pf_ipc_consumer_recv(c, 10000000, NULL, &f, &info);
        if (st == PF_EOF) {
            code = a->expect_crash ? 26 : 0;
            break;
        }
        if (st == PF_ERR_CLOSED) {
            code = a->expect_crash ? 3 : 23;
            break;
        }
        if (st != PF_OK) {
            fprintf(stderr, "consumer: %s: %s\n", pf_status_str(st), pf_last_error());
            code = 24;
            break;
        }
        if (!ipc_check(&f, info.seq) || f.index != (int64_t)info.seq || f.source != 7) {
            fprintf(stderr, "consumer: frame %llu has wrong contents\n",
                    (unsigned long long)info.seq);
            code = 21;
        }
        if (a->policy == PF_IPC_BLOCK && last && info.seq != last + 1) {
            fprintf(stderr, "consumer: frame %llu after %llu\n", (unsigned long long)info.seq,
                    (unsigned long long)last);
            code = 22;
        }
        last = info.seq;
        if (++n == 1 && a->ready_fd >= 0) (void)!write(a->ready_fd, "r", 1);
        if (a->hold_us) ipc_sleep_us(a->hold_us);
        pf_frame_unref(&f);
        if (code) break;
    }
    if (!code && a->expect && n != a->expect) {
        fprintf(stderr, "consumer: %d frames, expected %d\n", n, a->expect);
        code = 25;
    }
    pf_ipc_consumer_destroy(&c);
    return code;
}

static void exchange_10000(void)
{
    char dir[256], path[300];
    ipc_test_dir(dir, sizeof dir, "x");
    snprintf(path, sizeof path, "%s/s.sock", dir);
    prod_args pa = {path, 10000, 8, 2, 0};
    cons_args ca = {path, PF_IPC_BLOCK, 10000, 0, false, -1};
    int64_t t0 = pf_time_ns();
    pid_t prod = ipc_spawn(producer_main, &pa, 60);
    pid_t c1 = ipc_spawn(consumer_main, &ca, 60);
    pid_t c2 = ipc_spawn(consumer_main, &ca, 60);
    CHECK_EQ_INT(ipc_wait(c1, 60000), 0);
    CHECK_EQ_INT(ipc_wait(c2, 60000), 0);
    CHECK_EQ_INT(ipc_wait(prod, 60000), 0);
    printf("  10000 frames to 2 consumers in %.2f s\n", (double)(pf_time_ns() - t0) / 1e9);
    struct stat sb;
    CHECK(stat(path, &sb) != 0); /* the producer removed its socket */
    rmdir(dir);
}

static void mixed_policies(void)
{
    char dir[256], path[300];
    ipc_test_dir(dir, sizeof dir, "m");
    snprintf(path, sizeof path, "%s/s.sock", dir);
    prod_args pa = {path, 2000, 6, 2, 0};
    cons_args fast = {path, PF_IPC_BLOCK, 2000, 0, false, -1};
    cons_args slow = {path, PF_IPC_LATEST_ONLY, 0, 2000, false, -1};
    int64_t t0 = pf_time_ns();
    pid_t prod = ipc_spawn(producer_main, &pa, 60);
    pid_t c1 = ipc_spawn(consumer_main, &fast, 60);
    pid_t c2 = ipc_spawn(consumer_main, &slow, 60);
    CHECK_EQ_INT(ipc_wait(prod, 60000), 0);
    double secs = (double)(pf_time_ns() - t0) / 1e9;
    CHECK_EQ_INT(ipc_wait(c1, 60000), 0);
    CHECK_EQ_INT(ipc_wait(c2, 60000), 0);
    /* 2000 frames held 2 ms each would take 4 s if the slow one set the pace. */
    printf("  producer done in %.2f s with a 2 ms/frame latest_only consumer\n", secs);
    CHECK(secs < 3.0);
    rmdir(dir);
}

static void kill_consumer_loop(void)
{
    char dir[256], path[300];
    ipc_test_dir(dir, sizeof dir, "kc");
    snprintf(path, sizeof path, "%s/s.sock", dir);
    for (int round = 0; round < 6; round++) {
        int ready[2];
        REQUIRE(pipe(ready) == 0);
        prod_args pa = {path, 3000, 4, 2, 100};
        cons_args keep = {path, PF_IPC_BLOCK, 3000, 0, false, -1};
        cons_args victim = {path, round % 2 ? PF_IPC_LATEST_ONLY : PF_IPC_BLOCK, 0,
                            (int64_t)(round * 150), false, ready[1]};
        pid_t prod = ipc_spawn(producer_main, &pa, 60);
        pid_t c1 = ipc_spawn(consumer_main, &keep, 60);
        pid_t c2 = ipc_spawn(consumer_main, &victim, 60);
        char b;
        CHECK(read(ready[0], &b, 1) == 1);
        ipc_sleep_us(pf_test_rand_range(0, 150000));
        kill(c2, SIGKILL);
        int64_t t0 = pf_time_ns();
        CHECK_EQ_INT(ipc_wait(c2, 5000), 128 + SIGKILL);
        CHECK_EQ_INT(ipc_wait(prod, 30000), 0);
        CHECK_EQ_INT(ipc_wait(c1, 30000), 0);
        double after = (double)(pf_time_ns() - t0) / 1e9;
        CHECK(after < 10.0);
        close(ready[0]);
        close(ready[1]);
    }
    rmdir(dir);
}

static void kill_producer_loop(void)
{
    char dir[256], path[300];
    ipc_test_dir(dir, sizeof dir, "kp");
    snprintf(path, sizeof path, "%s/s.sock", dir);
    for (int round = 0; round < 6; round++) {
        int ready[2];
        REQUIRE(pipe(ready) == 0);
        prod_args pa = {path, 1000000, 4, 2, 50};
        cons_args c = {path, PF_IPC_BLOCK, 0, 0, true, ready[1]};
        cons_args l = {path, PF_IPC_LATEST_ONLY, 0, 300, true, -1};
        pid_t prod = ipc_spawn(producer_main, &pa, 60);
        pid_t c1 = ipc_spawn(consumer_main, &c, 60);
        pid_t c2 = ipc_spawn(consumer_main, &l, 60);
        char b;
        CHECK(read(ready[0], &b, 1) == 1);
        ipc_sleep_us(pf_test_rand_range(0, 100000));
        kill(prod, SIGKILL);
        CHECK_EQ_INT(ipc_wait(prod, 5000), 128 + SIGKILL);
        /* Both see the crash (3), not a clean end, and quickly. */
        CHECK_EQ_INT(ipc_wait(c1, 5000), 3);
        CHECK_EQ_INT(ipc_wait(c2, 5000), 3);
        close(ready[0]);
        close(ready[1]);
    }
    unlink(path); /* the last killed producer's stale socket */
    rmdir(dir);
}

static void late_consumer(void)
{
    char dir[256], path[300];
    ipc_test_dir(dir, sizeof dir, "late");
    snprintf(path, sizeof path, "%s/s.sock", dir);
    pf_ipc_producer_params pp = ipc_test_params(path, PF_PIXFMT_GRAY8, 16, 8, 2);
    pf_ipc_producer *p = NULL;
    REQUIRE(pf_ipc_producer_create(&pp, &p) == PF_OK);
    for (int k = 1; k <= 5; k++) {
        pf_frame f;
        CHECK_OK(pf_ipc_producer_acquire(p, 1000000, &f));
        ipc_fill(&f, (uint64_t)k);
        CHECK_OK(pf_ipc_producer_publish(p, &f, NULL, 0));
    }
    pf_ipc_consumer_params cp = pf_ipc_consumer_params_default();
    cp.path = path;
    pf_ipc_consumer *c = NULL;
    CHECK_OK(pf_ipc_consumer_create(&cp, &c));
    CHECK_OK(pf_ipc_producer_wait_consumers(p, 1, 2000000));
    pf_frame f;
    pf_ipc_frame_info info;
    CHECK_EQ_INT(pf_ipc_consumer_recv(c, 100000, NULL, &f, &info), PF_TIMEOUT);
    CHECK_OK(pf_ipc_producer_acquire(p, 1000000, &f));
    ipc_fill(&f, 6);
    CHECK_OK(pf_ipc_producer_publish(p, &f, NULL, 0));
    CHECK_OK(pf_ipc_consumer_recv(c, 2000000, NULL, &f, &info));
    CHECK_EQ_INT(info.seq, 6);
    CHECK(ipc_check(&f, 6));
    pf_ipc_producer_stats s;
    CHECK_OK(pf_ipc_producer_get_stats(p, &s));
    CHECK_EQ_INT(s.unconsumed, 5);
    CHECK_EQ_INT(s.slots_free, 1);       /* the consumer holds one */
    pf_frame_unref(&f);
    pf_ipc_producer_destroy(&p);
    CHECK_EQ_INT(pf_ipc_consumer_recv(c, 2000000, NULL, &f, &info), PF_EOF);
    CHECK_EQ_INT(pf_ipc_consumer_recv(c, 0, NULL, &f, &info), PF_EOF);
    pf_ipc_consumer_destroy(&c);
    rmdir(dir);
}

typedef struct holder_args {
    const char *path;
    int hold_fd;
} holder_args;

/* Receives 3 frames, keeps them, says so, and waits to be killed. */
static int holder_main(void *arg)
{
    holder_args *a = arg;
    pf_ipc_consumer_params cp = pf_ipc_consumer_params_default();
    cp.path = a->path;
    pf_ipc_consumer *c = NULL;
    if (pf_ipc_consumer_create(&cp, &c) != PF_OK) return 20;
    pf_frame f[3];
    for (int i = 0; i < 3; i++)
        if (pf_ipc_consumer_recv(c, 10000000, NULL, &f[i], NULL) != PF_OK) return 21;
    (void)!write(a->hold_fd, "h", 1);
    for (;;) ipc_sleep_us(1000000);
}

static void kill_reclaim_time(void)
{
    char dir[256], path[300];
    ipc_test_dir(dir, sizeof dir, "rc");
    snprintf(path, sizeof path, "%s/s.sock", dir);
    int held[2];
    REQUIRE(pipe(held) == 0);
    holder_args ha = {path, held[1]};
    /* Forked before the producer's thread exists; it retries connecting. */
    pid_t child = ipc_spawn(holder_main, &ha, 30);
    pf_ipc_producer_params pp = ipc_test_params(path, PF_PIXFMT_GRAY8, 64, 64, 4);
    pf_ipc_producer *p = NULL;
    REQUIRE(pf_ipc_producer_create(&pp, &p) == PF_OK);
    CHECK_OK(pf_ipc_producer_wait_consumers(p, 1, 5000000));
    for (int k = 1; k <= 3; k++) {
        pf_frame f;
        CHECK_OK(pf_ipc_producer_acquire(p, 1000000, &f));
        CHECK_OK(pf_ipc_producer_publish(p, &f, NULL, 0));
    }
    char b;
    CHECK(read(held[0], &b, 1) == 1);
    pf_ipc_producer_stats s;
    CHECK_OK(pf_ipc_producer_get_stats(p, &s));
    CHECK_EQ_INT(s.slots_free, 1);
    kill(child, SIGKILL);
    int64_t t0 = pf_time_ns();
    for (;;) {
        CHECK_OK(pf_ipc_producer_get_stats(p, &s));
        if (s.slots_free == 4 || pf_time_ns() - t0 > 2000000000) break;
        ipc_sleep_us(1000);
    }
    double ms = (double)(pf_time_ns() - t0) / 1e6;
    printf("  3 slots back %.1f ms after kill -9\n", ms);
    CHECK_EQ_INT(s.slots_free, 4);
    CHECK_EQ_INT(s.slots_reclaimed, 3);
    CHECK(ms < 1000);
    CHECK_EQ_INT(ipc_wait(child, 5000), 128 + SIGKILL);
    pf_ipc_producer_destroy(&p);
    close(held[0]);
    close(held[1]);
    rmdir(dir);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    pf_test_seed((uint64_t)time(NULL));
    PF_RUN(exchange_10000);
    PF_RUN(mixed_policies);
    PF_RUN(kill_consumer_loop);
    PF_RUN(kill_producer_loop);
    PF_RUN(late_consumer);
    PF_RUN(kill_reclaim_time);
    return pf_test_finish();
}
