/* Device layer on the CPU backend: discovery, selection and fallback,
 * streams, events, copies and their argument checks. Runs everywhere. */
#include <stdlib.h>

#include "pf_test.h"

typedef struct log_capture {
    int count;
    char last[512];
} log_capture;

static void capture_log(void *user, pf_log_level level, const char *msg)
{
    log_capture *c = user;
    c->count++;
    snprintf(c->last, sizeof c->last, "%s", msg);
}

static void test_discovery(void)
{
    CHECK_EQ_INT(pf_device_count(PF_DEVICE_CPU), 1);
    pf_device *cpu = NULL;
    CHECK_OK(pf_device_get(PF_DEVICE_CPU, 0, &cpu));
    const pf_device_props *p = pf_device_props_get(cpu);
    REQUIRE(p);
    CHECK(p->type == PF_DEVICE_CPU && p->index == 0);
    CHECK(p->name[0] != '\0');
    CHECK(p->multiprocessors >= 1);
    CHECK(p->total_memory > (size_t)64 << 20);
    CHECK(strcmp(pf_device_spec(cpu), "cpu") == 0);
    size_t fr = 0, tot = 0;
    CHECK_OK(pf_device_memory(cpu, &fr, &tot));
    CHECK(tot == p->total_memory && fr > 0 && fr <= tot);
    CHECK_OK(pf_device_synchronize(cpu));
    pf_device *d = NULL;
    CHECK(pf_device_get(PF_DEVICE_CPU, 1, &d) == PF_ERR_NO_DEVICE && d == NULL);
    CHECK(strstr(pf_last_error(), "cpu:1") != NULL);

    pf_backend_info bi;
    CHECK_OK(pf_backend_info_get(PF_DEVICE_CPU, &bi));
    CHECK(bi.compiled && bi.available && bi.device_count == 1);
    CHECK_OK(pf_backend_info_get(PF_DEVICE_CUDA, &bi));
    CHECK(bi.compiled == (pf_get_build_info()->cuda == 1));
    CHECK(bi.available == (pf_device_count(PF_DEVICE_CUDA) > 0));
    if (!bi.available) CHECK(bi.detail[0] != '\0'); /* says why */
    printf("  cuda backend: compiled=%d available=%d (%s)\n", bi.compiled, bi.available, bi.detail);
}

/* auto falls back to the CPU with one info line when no GPU is present;
 * explicit specs never fall back. */
static void test_select(void)
{
    log_capture cap = {0};
    pf_log_level old = pf_log_get_level();
    pf_log_set_callback(capture_log, &cap);
    pf_log_set_level(PF_LOG_INFO);
    unsetenv("PIXFLOW_DEVICE");
    pf_device *d = NULL;
    CHECK_OK(pf_device_select("auto", &d));
    int have_cuda = pf_device_count(PF_DEVICE_CUDA) > 0;
    CHECK(pf_device_get_type(d) == (have_cuda ? PF_DEVICE_CUDA : PF_DEVICE_CPU));
    if (!have_cuda) {
        CHECK_EQ_INT(cap.count, 1);
        CHECK(strstr(cap.last, "using the CPU") != NULL);
    }
    CHECK_OK(pf_device_select(NULL, &d)); /* no env: auto */
    CHECK_OK(pf_device_select("cpu", &d));
    CHECK(pf_device_get_type(d) == PF_DEVICE_CPU);

    CHECK(pf_device_select("cuda:99", &d) == PF_ERR_NO_DEVICE);
    CHECK(strstr(pf_last_error(), "cuda:99") != NULL);
    if (!have_cuda) {
        CHECK(pf_device_select("cuda", &d) == PF_ERR_NO_DEVICE);
        CHECK(pf_device_select("cuda:0", &d) == PF_ERR_NO_DEVICE);
    }
    CHECK(pf_device_select("gpu", &d) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "unknown device 'gpu'") != NULL);
    CHECK(pf_device_select("cuda:x", &d) == PF_ERR_INVALID);
    CHECK(pf_device_select("cuda:-1", &d) == PF_ERR_INVALID);
    CHECK(pf_device_select("cuda0", &d) == PF_ERR_INVALID);

    setenv("PIXFLOW_DEVICE", "cpu", 1);
    CHECK_OK(pf_device_select(NULL, &d));
    CHECK(pf_device_get_type(d) == PF_DEVICE_CPU);
    setenv("PIXFLOW_DEVICE", "tpu", 1);
    CHECK(pf_device_select("", &d) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "PIXFLOW_DEVICE") != NULL);
    CHECK_OK(pf_device_select("cpu", &d)); /* an explicit spec wins over the env */
    unsetenv("PIXFLOW_DEVICE");
    pf_log_set_callback(NULL, NULL);
    pf_log_set_level(old);
}

static int host_fn_calls;
static void host_fn(void *user) { host_fn_calls += *(int *)user; }

static void test_streams_events(void)
{
    pf_stream *s = NULL;
    pf_stream_params sp = pf_stream_params_default();
    sp.priority = -1;
    CHECK_OK(pf_stream_create(&sp, &s));
    REQUIRE(s);
    CHECK(pf_device_get_type(pf_stream_device(s)) == PF_DEVICE_CPU);
    CHECK(pf_stream_query(s) == PF_OK);
    pf_event *a = NULL, *b = NULL;
    CHECK_OK(pf_event_create(NULL, &a));
    CHECK_OK(pf_event_create(NULL, &b));
    CHECK(pf_event_query(a) == PF_OK); /* never recorded: complete */
    float ms = -1;
    CHECK(pf_event_elapsed_ms(a, b, &ms) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "never recorded") != NULL);
    CHECK_OK(pf_event_record(a, s));
    int one = 1;
    CHECK_OK(pf_stream_launch_host(s, host_fn, &one));
    CHECK_EQ_INT(host_fn_calls, 1);
    int64_t t0 = pf_time_ns();
    while (pf_time_ns() - t0 < 2000000) {
    }
    CHECK_OK(pf_event_record(b, s));
    CHECK_OK(pf_event_synchronize(b));
    CHECK_OK(pf_event_elapsed_ms(a, b, &ms));
    CHECK(ms >= 1.9f && ms < 1000.0f);
    CHECK_OK(pf_stream_wait_event(s, b));
    CHECK_OK(pf_stream_synchronize(s));
    pf_event_destroy(&a);
    pf_event_destroy(&b);
    CHECK(a == NULL);
    pf_event_destroy(&a);
    pf_stream_destroy(&s);
    CHECK(s == NULL);
    pf_stream_destroy(&s);
    CHECK(pf_stream_synchronize(NULL) == PF_ERR_INVALID);
    CHECK(pf_event_record(NULL, NULL) == PF_ERR_INVALID);
}

static void test_copies(void)
{
    pf_stream *s = NULL;
    CHECK_OK(pf_stream_create(NULL, &s));
    size_t n = 1 << 16;
    pf_buffer *x = NULL, *y = NULL;
    CHECK_OK(pf_buffer_alloc_host(n, &x));
    CHECK_OK(pf_buffer_alloc_host(n, &y));
    uint8_t *px = pf_buffer_data(x), *py = pf_buffer_data(y);
    for (size_t i = 0; i < n; i++) px[i] = (uint8_t)pf_test_rand();
    CHECK_OK(pf_memset_async(s, py, 0x5A, n));
    CHECK(py[0] == 0x5A && py[n - 1] == 0x5A);
    CHECK_OK(pf_memcpy_async(s, py, px, n));
    CHECK(memcmp(px, py, n) == 0);
    CHECK_OK(pf_memcpy_async(s, NULL, NULL, 0)); /* empty copy is a no-op */
    CHECK(pf_memcpy_async(s, py, NULL, 4) == PF_ERR_INVALID);

    /* 2D: 10 rows of 30 bytes from pitch 64 into pitch 40; padding untouched */
    memset(py, 0xEE, n);
    CHECK_OK(pf_memcpy2d_async(s, py, 40, px, 64, 30, 10));
    int ok = 1;
    for (int r = 0; r < 10; r++) {
        if (memcmp(py + r * 40, px + r * 64, 30)) ok = 0;
        for (int c = 30; c < 40; c++)
            if (py[r * 40 + c] != 0xEE) ok = 0;
    }
    CHECK(ok);
    CHECK(pf_memcpy2d_async(s, py, 20, px, 64, 30, 10) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "wider than a pitch") != NULL);

    CHECK_OK(pf_buffer_copy_async(s, y, 100, x, 200, 1000));
    CHECK(memcmp(py + 100, px + 200, 1000) == 0);
    CHECK(pf_buffer_copy_async(s, y, n - 10, x, 0, 11) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "dst range") != NULL);
    CHECK(pf_buffer_copy_async(s, y, 0, x, SIZE_MAX, 2) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "src range") != NULL);
    pf_buffer_unref(&x);
    pf_buffer_unref(&y);
    pf_stream_destroy(&s);
}

int main(void)
{
    pf_test_seed(3);
    PF_RUN(test_discovery);
    PF_RUN(test_select);
    PF_RUN(test_streams_events);
    PF_RUN(test_copies);
    return pf_test_finish();
}
