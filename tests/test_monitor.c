/* Device monitor and run-time NVML: samples on the CPU device, pool figures
 * from watched allocators, edge-triggered alerts with 95% re-arm, the
 * periodic sampling thread, argument errors, and NVML's absence. The NVML
 * sampling path itself is driven through a fake function table on a fake
 * CUDA device (no GPU here); the real library is tried first. */
#include "pf_test.h"

#include "core/sys.h"
#include "device/backend.h"
#include "device/nvml.h"

/* Alert recorder --------------------------------------------------------------------- */

#define MAX_ALERTS 64

typedef struct alert_log {
    pf_mutex lock;
    int count;
    pf_alert_kind kind[MAX_ALERTS];
    double value[MAX_ALERTS], threshold[MAX_ALERTS];
    size_t sample_pool_reserved[MAX_ALERTS];
    double sample_mem_fraction[MAX_ALERTS];
    unsigned sample_temp[MAX_ALERTS];
} alert_log;

static void alert_log_init(alert_log *l)
{
    memset(l, 0, sizeof *l);
    pf_mutex_init(&l->lock);
}

static int alert_count(alert_log *l)
{
    pf_mutex_lock(&l->lock);
    int n = l->count;
    pf_mutex_unlock(&l->lock);
    return n;
}

static void record_alert(void *user, pf_alert_kind kind, double value, double threshold,
                         const pf_device_sample *s)
{
    alert_log *l = user;
    pf_mutex_lock(&l->lock);
    if (l->count < MAX_ALERTS) {
        int i = l->count;
        l->kind[i] = kind;
        l->value[i] = value;
        l->threshold[i] = threshold;
        l->sample_pool_reserved[i] = s->pool_bytes_reserved;
        l->sample_mem_fraction[i] =
            s->mem_total ? (double)(s->mem_total - s->mem_free) / (double)s->mem_total : -1;
        l->sample_temp[i] = s->temperature_c;
    }
    l->count++;
    pf_mutex_unlock(&l->lock);
}

static pf_allocator *make_allocator(const char *name)
{
    pf_allocator_params ap = pf_allocator_params_default();
    ap.name = name;
    pf_allocator *a = NULL;
    pf_status st = pf_allocator_create(&ap, &a);
    if (st != PF_OK) fprintf(stderr, "  allocator '%s': %s\n", name, pf_last_error());
    return a;
}

static void sleep_ms(int ms)
{
    /* A timed wait on a private condvar: the test needs no other sleep API. */
    pf_mutex m;
    pf_cond c;
    pf_mutex_init(&m);
    pf_cond_init(&c);
    int64_t deadline = pf_deadline_ns((int64_t)ms * 1000);
    pf_mutex_lock(&m);
    while (pf_cond_timedwait_until(&c, &m, deadline)) {
    }
    pf_mutex_unlock(&m);
    pf_cond_destroy(&c);
    pf_mutex_destroy(&m);
}

/* Cases ----------------------------------------------------------------------------------- */

static void test_sample_cpu(void)
{
    pf_monitor_params p = pf_monitor_params_default();
    CHECK(p.device == NULL && p.period_ms == 0 && p.alert == NULL);
    pf_monitor *m = NULL;
    CHECK_OK(pf_monitor_create(&p, &m));
    REQUIRE(m != NULL);

    pf_device_sample s;
    CHECK_EQ_INT(pf_monitor_latest(m, &s), PF_AGAIN);

    int64_t t0 = pf_time_ns();
    CHECK_OK(pf_monitor_sample(m, &s));
    int64_t t1 = pf_time_ns();
    CHECK(s.time_ns >= t0 && s.time_ns <= t1);
    CHECK(s.mem_total > 0);
    CHECK(s.mem_free <= s.mem_total);
    CHECK(s.mem_free > 0); /* a machine running this test has some RAM available */
    CHECK_EQ_INT(s.mem_total, pf_device_props_get(pf_cpu_device())->total_memory);
    CHECK(!s.nvml);
    CHECK_EQ_INT(s.temperature_c, 0);
    CHECK_EQ_INT(s.nvml_mem_total, 0);
    CHECK_EQ_INT(s.pool_bytes_reserved, 0);
    CHECK_EQ_INT(s.pool_bytes_in_use, 0);

    /* Cross-check with the runtime figure taken right after. */
    size_t f2 = 0, t2 = 0;
    CHECK_OK(pf_device_memory(pf_cpu_device(), &f2, &t2));
    CHECK_EQ_INT(t2, s.mem_total);

    pf_device_sample l;
    CHECK_OK(pf_monitor_latest(m, &l));
    CHECK_EQ_INT(l.time_ns, s.time_ns);
    CHECK_EQ_INT(l.mem_total, s.mem_total);

    pf_device_sample s2;
    CHECK_OK(pf_monitor_sample(m, &s2));
    CHECK(s2.time_ns >= s.time_ns);
    CHECK_OK(pf_monitor_latest(m, &l));
    CHECK_EQ_INT(l.time_ns, s2.time_ns);

    pf_monitor_destroy(&m);
    CHECK(m == NULL);
    pf_monitor_destroy(&m);
    pf_monitor_destroy(NULL);
}

static void test_pool_bytes_follow_allocators(void)
{
    pf_allocator *a = make_allocator("mon-a"), *b = make_allocator("mon-b");
    REQUIRE(a && b);
    pf_monitor_params p = pf_monitor_params_default();
    pf_monitor *m = NULL;
    CHECK_OK(pf_monitor_create(&p, &m));
    REQUIRE(m != NULL);
    CHECK_OK(pf_monitor_watch(m, a));

    enum { N = 40 };
    pf_buffer *bufs[N] = {0};
    size_t expect_in_use = 0;
    pf_device_sample s;
    for (int i = 0; i < N; i++) {
        size_t size = (size_t)pf_test_rand_range(1, 3 << 20);
        CHECK_OK(pf_allocator_alloc(a, size, NULL, &bufs[i]));
        expect_in_use += pf_allocator_size_class(size);
        CHECK_OK(pf_monitor_sample(m, &s));
        CHECK_EQ_INT(s.pool_bytes_in_use, expect_in_use);
        CHECK(s.pool_bytes_reserved >= s.pool_bytes_in_use);
        pf_allocator_stats st;
        CHECK_OK(pf_allocator_get_stats(a, &st));
        CHECK_EQ_INT(s.pool_bytes_reserved, st.bytes_reserved);
    }
    /* Freed blocks leave "in use" but stay reserved (cached). */
    size_t reserved_full = s.pool_bytes_reserved;
    for (int i = 0; i < N; i += 2) {
        expect_in_use -= pf_allocator_size_class(pf_buffer_size(bufs[i]));
        pf_buffer_unref(&bufs[i]);
    }
    CHECK_OK(pf_monitor_sample(m, &s));
    CHECK_EQ_INT(s.pool_bytes_in_use, expect_in_use);
    CHECK_EQ_INT(s.pool_bytes_reserved, reserved_full);

    /* A second allocator adds up. */
    pf_buffer *bb = NULL;
    CHECK_OK(pf_allocator_alloc(b, 100000, NULL, &bb));
    CHECK_OK(pf_monitor_watch(m, b));
    CHECK_OK(pf_monitor_sample(m, &s));
    CHECK_EQ_INT(s.pool_bytes_in_use, expect_in_use + pf_allocator_size_class(100000));
    CHECK_EQ_INT(s.pool_bytes_reserved, reserved_full + pf_allocator_size_class(100000));

    /* Trim drops the cached part. */
    pf_allocator_trim(a);
    CHECK_OK(pf_monitor_sample(m, &s));
    CHECK_EQ_INT(s.pool_bytes_reserved, expect_in_use + pf_allocator_size_class(100000));

    /* Unwatched allocators no longer count. */
    CHECK_OK(pf_monitor_unwatch(m, a));
    CHECK_OK(pf_monitor_sample(m, &s));
    CHECK_EQ_INT(s.pool_bytes_in_use, pf_allocator_size_class(100000));
    CHECK_EQ_INT(s.pool_bytes_reserved, pf_allocator_size_class(100000));
    CHECK_OK(pf_monitor_unwatch(m, b));
    CHECK_OK(pf_monitor_sample(m, &s));
    CHECK_EQ_INT(s.pool_bytes_in_use, 0);
    CHECK_EQ_INT(s.pool_bytes_reserved, 0);

    for (int i = 0; i < N; i++) pf_buffer_unref(&bufs[i]);
    pf_buffer_unref(&bb);
    pf_monitor_destroy(&m);
    pf_allocator_destroy(&a);
    pf_allocator_destroy(&b);
}

static void test_pool_alert_edges(void)
{
    const size_t block = 64 << 10;       /* an exact size class */
    const size_t threshold = 40 * block; /* 95% of it = 38 blocks */
    REQUIRE(pf_allocator_size_class(block) == block);
    pf_allocator *a = make_allocator("mon-alert");
    REQUIRE(a != NULL);
    alert_log log;
    alert_log_init(&log);
    pf_monitor_params p = pf_monitor_params_default();
    p.pool_alert_bytes = threshold;
    p.alert = record_alert;
    p.user = &log;
    pf_monitor *m = NULL;
    CHECK_OK(pf_monitor_create(&p, &m));
    REQUIRE(m != NULL);
    CHECK_OK(pf_monitor_watch(m, a));

    pf_buffer *bufs[48] = {0};
    int held = 0;
    pf_device_sample s;
#define HOLD(n) \
    do { \
        while (held < (n)) CHECK_OK(pf_allocator_alloc(a, block, NULL, &bufs[held++])); \
        while (held > (n)) pf_buffer_unref(&bufs[--held]); \
        pf_allocator_trim(a); \
        CHECK_OK(pf_monitor_sample(m, &s)); \
        CHECK_EQ_INT(s.pool_bytes_reserved, (size_t)held * block); \
    } while (0)

    HOLD(39); /* 97.5%: below the threshold */
    CHECK_EQ_INT(alert_count(&log), 0);
    HOLD(40); /* reaches it: fires */
    CHECK_EQ_INT(alert_count(&log), 1);
    CHECK_EQ_INT(log.kind[0], PF_ALERT_POOL);
    CHECK(log.value[0] == (double)threshold);
    CHECK(log.threshold[0] == (double)threshold);
    CHECK_EQ_INT(log.sample_pool_reserved[0], threshold);
    CHECK_OK(pf_monitor_sample(m, &s)); /* still above: silent */
    HOLD(41);
    CHECK_EQ_INT(alert_count(&log), 1);
    HOLD(39); /* 97.5%: not below 95%, stays disarmed */
    HOLD(38); /* exactly 95%: still not below */
    HOLD(40);
    CHECK_EQ_INT(alert_count(&log), 1);
    HOLD(37); /* 92.5%: re-arms, no alert */
    CHECK_EQ_INT(alert_count(&log), 1);
    HOLD(45); /* crosses again: fires once */
    CHECK_EQ_INT(alert_count(&log), 2);
    CHECK(log.value[1] == (double)(45 * block));
    HOLD(46);
    CHECK_EQ_INT(alert_count(&log), 2);
    HOLD(0);
    HOLD(40);
    CHECK_EQ_INT(alert_count(&log), 3);
    for (int i = 0; i < alert_count(&log) && i < MAX_ALERTS; i++)
        CHECK_EQ_INT(log.kind[i], PF_ALERT_POOL);
#undef HOLD

    CHECK_OK(pf_monitor_unwatch(m, a));
    while (held > 0) pf_buffer_unref(&bufs[--held]);
    pf_monitor_destroy(&m);
    pf_allocator_destroy(&a);
    pf_mutex_destroy(&log.lock);
}

static void test_memory_alert(void)
{
    /* Any running system uses some RAM: a tiny fraction fires on the first
     * sample, once; a fraction of 1 (everything used) never fires. */
    alert_log log;
    alert_log_init(&log);
    pf_monitor_params p = pf_monitor_params_default();
    p.mem_alert_fraction = 1e-9;
    p.temp_alert_c = 1; /* no temperature on the CPU: never fires */
    p.alert = record_alert;
    p.user = &log;
    pf_monitor *m = NULL;
    CHECK_OK(pf_monitor_create(&p, &m));
    REQUIRE(m != NULL);
    pf_device_sample s;
    CHECK_OK(pf_monitor_sample(m, &s));
    REQUIRE(s.mem_free < s.mem_total);
    CHECK_EQ_INT(alert_count(&log), 1);
    CHECK_EQ_INT(log.kind[0], PF_ALERT_MEMORY);
    CHECK(log.value[0] > 0 && log.value[0] <= 1);
    CHECK(fabs(log.value[0] - log.sample_mem_fraction[0]) < 1e-12);
    CHECK(log.threshold[0] == 1e-9);
    for (int i = 0; i < 5; i++) CHECK_OK(pf_monitor_sample(m, &s));
    CHECK_EQ_INT(alert_count(&log), 1);
    pf_monitor_destroy(&m);

    p.mem_alert_fraction = 1.0;
    CHECK_OK(pf_monitor_create(&p, &m));
    REQUIRE(m != NULL);
    for (int i = 0; i < 3; i++) CHECK_OK(pf_monitor_sample(m, &s));
    CHECK_EQ_INT(alert_count(&log), 1);
    pf_monitor_destroy(&m);
    pf_mutex_destroy(&log.lock);
}

static void test_periodic_thread(void)
{
    pf_allocator *a = make_allocator("mon-periodic");
    REQUIRE(a != NULL);
    pf_buffer *big = NULL;
    CHECK_OK(pf_allocator_alloc(a, 1 << 20, NULL, &big));

    alert_log log;
    alert_log_init(&log);
    pf_monitor_params p = pf_monitor_params_default();
    p.period_ms = 10;
    p.pool_alert_bytes = 512 << 10; /* already crossed: the thread fires it once */
    p.alert = record_alert;
    p.user = &log;
    pf_monitor *m = NULL;
    CHECK_OK(pf_monitor_create(&p, &m));
    REQUIRE(m != NULL);
    CHECK_OK(pf_monitor_watch(m, a));

    /* latest advances without any pf_monitor_sample() call. */
    pf_device_sample s;
    int64_t deadline = pf_time_ns() + 3000000000ll;
    int distinct = 0;
    int64_t last = -1;
    while (pf_time_ns() < deadline && distinct < 6) {
        if (pf_monitor_latest(m, &s) == PF_OK && s.time_ns != last) {
            CHECK(s.time_ns > last);
            CHECK(s.mem_total > 0);
            last = s.time_ns;
            distinct++;
        }
        sleep_ms(3);
    }
    CHECK(distinct >= 6);
    /* Wait for a sample that includes the watched allocator. */
    while (pf_time_ns() < deadline && alert_count(&log) == 0) sleep_ms(2);
    CHECK_EQ_INT(alert_count(&log), 1);
    CHECK_EQ_INT(log.kind[0], PF_ALERT_POOL);
    sleep_ms(50); /* several more samples, all above: no more alerts */
    CHECK_EQ_INT(alert_count(&log), 1);
    CHECK_OK(pf_monitor_latest(m, &s));
    CHECK_EQ_INT(s.pool_bytes_in_use, 1 << 20);

    int64_t t0 = pf_time_ns();
    pf_monitor_destroy(&m);
    int64_t took_ms = (pf_time_ns() - t0) / 1000000;
    CHECK(took_ms < 200);

    /* A long period: destroy wakes the thread instead of waiting it out. */
    p.period_ms = 5000;
    p.alert = NULL;
    CHECK_OK(pf_monitor_create(&p, &m));
    REQUIRE(m != NULL);
    deadline = pf_time_ns() + 2000000000ll;
    while (pf_time_ns() < deadline && pf_monitor_latest(m, &s) != PF_OK) sleep_ms(1);
    CHECK_OK(pf_monitor_latest(m, &s)); /* the first sample is taken at start */
    sleep_ms(20);                        /* the thread is now in its 5 s wait */
    t0 = pf_time_ns();
    pf_monitor_destroy(&m);
    took_ms = (pf_time_ns() - t0) / 1000000;
    printf("  destroy during a 5 s period took %lld ms\n", (long long)took_ms);
    CHECK(took_ms < 500);

    pf_buffer_unref(&big);
    pf_allocator_destroy(&a);
    pf_mutex_destroy(&log.lock);
}

static void test_invalid_params(void)
{
    pf_monitor *m = (pf_monitor *)&m; /* must be reset to NULL on failure */
    pf_monitor_params p = pf_monitor_params_default();

    CHECK_EQ_INT(pf_monitor_create(NULL, &m), PF_ERR_INVALID);
    CHECK(m == NULL);
    CHECK(strstr(pf_last_error(), "params") != NULL);
    CHECK_EQ_INT(pf_monitor_create(&p, NULL), PF_ERR_INVALID);

    p.period_ms = -1;
    CHECK_EQ_INT(pf_monitor_create(&p, &m), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "period_ms -1") != NULL);
    p.period_ms = 0;

    const double bad_fraction[] = {-0.1, 1.5, NAN};
    for (int i = 0; i < 3; i++) {
        p.mem_alert_fraction = bad_fraction[i];
        CHECK_EQ_INT(pf_monitor_create(&p, &m), PF_ERR_INVALID);
        CHECK(strstr(pf_last_error(), "mem_alert_fraction") != NULL);
        CHECK(m == NULL);
    }
    p.mem_alert_fraction = 0;
    p.temp_alert_c = -5;
    CHECK_EQ_INT(pf_monitor_create(&p, &m), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "temp_alert_c -5") != NULL);
    p.temp_alert_c = INFINITY;
    CHECK_EQ_INT(pf_monitor_create(&p, &m), PF_ERR_INVALID);
    p.temp_alert_c = 0;

    CHECK_OK(pf_monitor_create(&p, &m));
    REQUIRE(m != NULL);
    pf_device_sample s;
    CHECK_EQ_INT(pf_monitor_sample(NULL, &s), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_monitor_sample(m, NULL), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_monitor_latest(NULL, &s), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_monitor_latest(m, NULL), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_monitor_watch(m, NULL), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_monitor_unwatch(m, NULL), PF_ERR_INVALID);

    pf_allocator *as[17] = {0};
    char name[32];
    for (int i = 0; i < 17; i++) {
        snprintf(name, sizeof name, "watch-%d", i);
        as[i] = make_allocator(name);
        REQUIRE(as[i] != NULL);
    }
    CHECK_EQ_INT(pf_monitor_watch(NULL, as[0]), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_monitor_unwatch(m, as[0]), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "'watch-0' is not watched") != NULL);
    for (int i = 0; i < 16; i++) CHECK_OK(pf_monitor_watch(m, as[i]));
    CHECK_EQ_INT(pf_monitor_watch(m, as[3]), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "'watch-3' is already watched") != NULL);
    CHECK_EQ_INT(pf_monitor_watch(m, as[16]), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "'watch-16'") != NULL);
    CHECK(strstr(pf_last_error(), "16") != NULL);
    /* Unwatching frees a slot; the order of the rest does not matter. */
    CHECK_OK(pf_monitor_unwatch(m, as[5]));
    CHECK_EQ_INT(pf_monitor_unwatch(m, as[5]), PF_ERR_INVALID);
    CHECK_OK(pf_monitor_watch(m, as[16]));
    for (int i = 0; i < 17; i++)
        if (i != 5) CHECK_OK(pf_monitor_unwatch(m, as[i]));
    pf_monitor_destroy(&m);
    for (int i = 0; i < 17; i++) pf_allocator_destroy(&as[i]);
}

/* NVML, the real library -------------------------------------------------------------- */

typedef struct nvml_probe {
    bool ok;
    char detail[256];
} nvml_probe;

static void *probe_nvml(void *arg)
{
    nvml_probe *p = arg;
    p->ok = pf_nvml_available(p->detail, sizeof p->detail);
    return NULL;
}

static void test_nvml_real(void)
{
    /* Concurrent first calls: one load, one answer for all. */
    enum { T = 6 };
    nvml_probe probes[T];
    pf_thread th[T];
    memset(probes, 0, sizeof probes);
    for (int i = 0; i < T; i++) CHECK_OK(pf_thread_start(&th[i], "nvml-probe", probe_nvml, &probes[i]));
    for (int i = 0; i < T; i++) pf_thread_join(th[i]);

    char detail[256] = "unchanged";
    bool ok = pf_nvml_available(detail, sizeof detail);
    printf("  nvml: %s: %s\n", ok ? "available" : "not available", detail);
    CHECK(detail[0] != '\0');
    for (int i = 0; i < T; i++) {
        CHECK(probes[i].ok == ok);
        CHECK(strcmp(probes[i].detail, detail) == 0);
    }
    if (ok) {
        /* A GPU machine running the CPU tests. */
        CHECK(strncmp(detail, "NVML loaded", 11) == 0);
    } else {
        /* Either no library, or one whose init failed (driver without GPU). */
        CHECK(strstr(detail, "libnvidia-ml.so.1 not found (dlopen: ") == detail ||
              strstr(detail, "nvmlInit_v2 failed") == detail ||
              strstr(detail, "libnvidia-ml.so.1 lacks") == detail);
    }
    CHECK(pf_nvml_available(NULL, 0) == ok);
    char tiny[8];
    memset(tiny, 'x', sizeof tiny);
    CHECK(pf_nvml_available(tiny, sizeof tiny) == ok);
    CHECK(strlen(tiny) == 7 && strncmp(tiny, detail, 7) == 0);
    char one[1] = {'x'};
    CHECK(pf_nvml_available(one, 1) == ok);
    CHECK(one[0] == '\0');

    /* CPU devices never carry NVML figures. */
    pf_device_sample s;
    memset(&s, 0, sizeof s);
    CHECK(!pf_nvml_sample(pf_device_props_get(pf_cpu_device()), &s));
    CHECK(!s.nvml);
    CHECK(!pf_nvml_sample(NULL, &s));
}

/* NVML, a fake library on a fake CUDA device ----------------------------------------------- */

static struct { int a, b; } fake_gpus;           /* addresses used as handles */
#define FAKE_H_PCI ((pf_nvmlDevice_t)(void *)&fake_gpus.a)
#define FAKE_H_IDX ((pf_nvmlDevice_t)(void *)&fake_gpus.b)
static int fake_pci_lookups, fake_index_lookups;
static unsigned fake_temp = 50;

static pf_nvmlReturn_t fake_init(void) { return PF_NVML_SUCCESS; }
static pf_nvmlReturn_t fake_by_pci(const char *bus, pf_nvmlDevice_t *h)
{
    fake_pci_lookups++;
    if (strcmp(bus, "0000:1b:00.0") != 0) return 13; /* NVML_ERROR_NOT_FOUND */
    *h = FAKE_H_PCI;
    return PF_NVML_SUCCESS;
}
static pf_nvmlReturn_t fake_by_index(unsigned idx, pf_nvmlDevice_t *h)
{
    fake_index_lookups++;
    if (idx != 1) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *h = FAKE_H_IDX;
    return PF_NVML_SUCCESS;
}
static pf_nvmlReturn_t fake_util(pf_nvmlDevice_t h, pf_nvmlUtilization_t *u)
{
    u->gpu = h == FAKE_H_PCI ? 37 : 99;
    u->memory = 12;
    return PF_NVML_SUCCESS;
}
static pf_nvmlReturn_t fake_memory(pf_nvmlDevice_t h, pf_nvmlMemory_t *m)
{
    m->total = 85899345920ull;
    m->used = 1073741824ull;
    m->free = m->total - m->used;
    return PF_NVML_SUCCESS;
}
static pf_nvmlReturn_t fake_temperature(pf_nvmlDevice_t h, int sensor, unsigned *t)
{
    if (sensor != PF_NVML_TEMPERATURE_GPU) return 2;
    *t = fake_temp;
    return PF_NVML_SUCCESS;
}
static pf_nvmlReturn_t fake_power_fails(pf_nvmlDevice_t h, unsigned *mw)
{
    *mw = 123; /* garbage written on failure must not leak into the sample */
    return 3;  /* NVML_ERROR_NOT_SUPPORTED */
}
static pf_nvmlReturn_t fake_power_limit(pf_nvmlDevice_t h, unsigned *mw)
{
    *mw = 700000;
    return PF_NVML_SUCCESS;
}
static pf_nvmlReturn_t fake_clock(pf_nvmlDevice_t h, int type, unsigned *mhz)
{
    if (type == PF_NVML_CLOCK_SM) *mhz = 1980;
    else if (type == PF_NVML_CLOCK_MEM) *mhz = 2619;
    else return 2;
    return PF_NVML_SUCCESS;
}
static pf_nvmlReturn_t fake_pcie(pf_nvmlDevice_t h, int counter, unsigned *kbps)
{
    if (counter == PF_NVML_PCIE_UTIL_TX_BYTES) *kbps = 1234;
    else if (counter == PF_NVML_PCIE_UTIL_RX_BYTES) *kbps = 5678;
    else return 2;
    return PF_NVML_SUCCESS;
}

static pf_nvml_fns fake_fns(void)
{
    pf_nvml_fns f;
    memset(&f, 0, sizeof f);
    f.init = fake_init;
    f.handle_by_pci = fake_by_pci;
    f.handle_by_index = fake_by_index;
    f.utilization = fake_util;
    f.memory = fake_memory;
    f.temperature = fake_temperature;
    f.power_usage = fake_power_fails;
    f.power_limit = fake_power_limit;
    f.clock = fake_clock;
    f.pcie_throughput = fake_pcie;
    return f;
}

static void test_nvml_fake_sample(void)
{
    pf_nvml_fns f = fake_fns();
    pf_nvml_testing_install(&f, "999.1");
    char detail[128];
    CHECK(pf_nvml_available(detail, sizeof detail));
    CHECK(strcmp(detail, "NVML loaded, driver 999.1") == 0);

    pf_device_props props;
    memset(&props, 0, sizeof props);
    props.type = PF_DEVICE_CUDA;
    props.index = 0;
    snprintf(props.pci_bus_id, sizeof props.pci_bus_id, "0000:1b:00.0");

    pf_device_sample s;
    memset(&s, 0, sizeof s);
    s.mem_total = 42; /* fields outside NVML's are kept */
    s.power_mw = 777; /* and NVML's are reset even when their query fails */
    CHECK(pf_nvml_sample(&props, &s));
    CHECK(s.nvml);
    CHECK_EQ_INT(s.mem_total, 42);
    CHECK_EQ_INT(s.gpu_util_pct, 37); /* found by PCI bus id, not by index */
    CHECK_EQ_INT(s.mem_util_pct, 12);
    CHECK_EQ_INT(s.temperature_c, 50);
    CHECK_EQ_INT(s.power_mw, 0);
    CHECK_EQ_INT(s.power_limit_mw, 700000);
    CHECK_EQ_INT(s.sm_clock_mhz, 1980);
    CHECK_EQ_INT(s.mem_clock_mhz, 2619);
    CHECK_EQ_INT(s.pcie_tx_kbps, 1234);
    CHECK_EQ_INT(s.pcie_rx_kbps, 5678);
    CHECK(s.nvml_mem_total == 85899345920ull);
    CHECK(s.nvml_mem_used == 1073741824ull);
    CHECK_EQ_INT(fake_pci_lookups, 1);
    CHECK_EQ_INT(fake_index_lookups, 0);

    /* The handle is cached. */
    CHECK(pf_nvml_sample(&props, &s));
    CHECK_EQ_INT(fake_pci_lookups, 1);

    /* Unknown bus id: falls back to the CUDA index. */
    snprintf(props.pci_bus_id, sizeof props.pci_bus_id, "0000:ff:00.0");
    props.index = 1;
    memset(&s, 0, sizeof s);
    CHECK(pf_nvml_sample(&props, &s));
    CHECK_EQ_INT(s.gpu_util_pct, 99);
    CHECK_EQ_INT(fake_pci_lookups, 2);
    CHECK_EQ_INT(fake_index_lookups, 1);

    /* Neither lookup works: no sample, out untouched. */
    props.index = 5;
    snprintf(props.pci_bus_id, sizeof props.pci_bus_id, "0000:ee:00.0");
    memset(&s, 0xAB, sizeof s);
    pf_device_sample before = s;
    CHECK(!pf_nvml_sample(&props, &s));
    CHECK(memcmp(&s, &before, sizeof s) == 0);

    /* Missing optional symbols leave their fields 0. */
    f.clock = NULL;
    f.pcie_throughput = NULL;
    f.utilization = NULL;
    pf_nvml_testing_install(&f, "999.2");
    props.index = 0;
    snprintf(props.pci_bus_id, sizeof props.pci_bus_id, "0000:1b:00.0");
    memset(&s, 0, sizeof s);
    CHECK(pf_nvml_sample(&props, &s));
    CHECK(s.nvml);
    CHECK_EQ_INT(s.gpu_util_pct, 0);
    CHECK_EQ_INT(s.sm_clock_mhz, 0);
    CHECK_EQ_INT(s.pcie_rx_kbps, 0);
    CHECK_EQ_INT(s.temperature_c, 50);
    CHECK_EQ_INT(s.power_limit_mw, 700000);
    pf_nvml_testing_install(NULL, "testing: gone");
}

static void test_monitor_fake_cuda_temperature_alert(void)
{
    /* A CUDA-typed device served by the CPU backend's memory query: the
     * monitor takes the NVML path for it. */
    pf_nvml_fns f = fake_fns();
    pf_nvml_testing_install(&f, "999.3");
    static pf_device fake;
    memset(&fake, 0, sizeof fake);
    fake.be = &pf_cpu_backend;
    fake.props = *pf_device_props_get(pf_cpu_device());
    fake.props.type = PF_DEVICE_CUDA;
    fake.props.index = 0;
    snprintf(fake.props.pci_bus_id, sizeof fake.props.pci_bus_id, "0000:1b:00.0");
    snprintf(fake.spec, sizeof fake.spec, "cuda:0");

    alert_log log;
    alert_log_init(&log);
    pf_monitor_params p = pf_monitor_params_default();
    p.device = &fake;
    p.temp_alert_c = 80;
    p.alert = record_alert;
    p.user = &log;
    pf_monitor *m = NULL;
    CHECK_OK(pf_monitor_create(&p, &m));
    REQUIRE(m != NULL);

    pf_device_sample s;
    static const struct { unsigned temp; int alerts; } steps[] = {
        {70, 0}, {85, 1}, {90, 1}, {79, 1}, /* 79 >= 76 (95%): stays disarmed */
        {76, 1}, {80, 1}, {75, 1},          /* 75 < 76: re-armed */
        {80, 2}, {80, 2}, {10, 2}, {200, 3},
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        fake_temp = steps[i].temp;
        CHECK_OK(pf_monitor_sample(m, &s));
        CHECK(s.nvml);
        CHECK_EQ_INT(s.temperature_c, steps[i].temp);
        CHECK_EQ_INT(s.sm_clock_mhz, 1980);
        CHECK(s.mem_total == fake.props.total_memory);
        if (alert_count(&log) != steps[i].alerts)
            fprintf(stderr, "  step %zu (temp %u)\n", i, steps[i].temp);
        CHECK_EQ_INT(alert_count(&log), steps[i].alerts);
    }
    CHECK_EQ_INT(log.kind[0], PF_ALERT_TEMPERATURE);
    CHECK(log.value[0] == 85 && log.threshold[0] == 80);
    CHECK_EQ_INT(log.sample_temp[0], 85);
    CHECK(log.value[1] == 80);
    CHECK(log.value[2] == 200);
    pf_monitor_destroy(&m);

    /* NVML gone: the same monitor setup samples memory only, no alerts. */
    pf_nvml_testing_install(NULL, "testing: gone");
    CHECK_OK(pf_monitor_create(&p, &m));
    REQUIRE(m != NULL);
    CHECK_OK(pf_monitor_sample(m, &s));
    CHECK(!s.nvml);
    CHECK(s.mem_total > 0);
    CHECK_EQ_INT(alert_count(&log), 3);
    pf_monitor_destroy(&m);
    pf_mutex_destroy(&log.lock);
}

int main(void)
{
    pf_test_seed(20261121);
    PF_RUN(test_nvml_real); /* first: the real library, before any fake */
    PF_RUN(test_sample_cpu);
    PF_RUN(test_pool_bytes_follow_allocators);
    PF_RUN(test_pool_alert_edges);
    PF_RUN(test_memory_alert);
    PF_RUN(test_periodic_thread);
    PF_RUN(test_invalid_params);
    PF_RUN(test_nvml_fake_sample);
    PF_RUN(test_monitor_fake_cuda_temperature_alert);
    return pf_test_finish();
}
