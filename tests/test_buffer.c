/* pf_buffer: refcounting, ownership, views, free callbacks, threads. */
#include <pthread.h>

#include "pf_test.h"

static int freed_count;
static void *freed_data;
static void count_free(void *opaque, void *data, size_t size)
{
    freed_count++;
    freed_data = data;
    *(size_t *)opaque = size;
}

static void test_alloc_host(void)
{
    pf_buffer *b = NULL;
    CHECK_OK(pf_buffer_alloc_host(1000, &b));
    REQUIRE(b);
    CHECK(((uintptr_t)pf_buffer_data(b) % 64) == 0);
    CHECK_EQ_INT(pf_buffer_size(b), 1000);
    CHECK(pf_buffer_domain(b) == PF_MEM_HOST);
    CHECK(pf_device_get_type(pf_buffer_device(b)) == PF_DEVICE_CPU);
    CHECK_EQ_INT(pf_buffer_refcount(b), 1);
    memset(pf_buffer_data(b), 0xAB, 1000);
    pf_buffer_unref(&b);
    CHECK(b == NULL);
    pf_buffer_unref(&b); /* NULL-safe */
    pf_buffer_unref(NULL);

    CHECK_OK(pf_buffer_alloc_host(0, &b)); /* empty buffers are valid */
    CHECK_EQ_INT(pf_buffer_size(b), 0);
    pf_buffer_unref(&b);
}

static void test_wrap_free_once(void)
{
    static char storage[256];
    size_t seen = 0;
    freed_count = 0;
    pf_buffer *b = NULL;
    CHECK_OK(pf_buffer_wrap(storage, sizeof storage, PF_MEM_HOST, NULL, count_free, &seen, &b));
    pf_buffer *b2 = pf_buffer_ref(b);
    CHECK(b2 == b);
    CHECK_EQ_INT(pf_buffer_refcount(b), 2);
    pf_buffer_unref(&b);
    CHECK_EQ_INT(freed_count, 0);
    pf_buffer_unref(&b2);
    CHECK_EQ_INT(freed_count, 1);
    CHECK(freed_data == storage);
    CHECK_EQ_INT(seen, sizeof storage);
}

static void test_wrap_errors(void)
{
    pf_buffer *b = (pf_buffer *)1;
    CHECK(pf_buffer_wrap(NULL, 10, PF_MEM_HOST, NULL, NULL, NULL, &b) == PF_ERR_INVALID);
    CHECK(b == NULL);
    CHECK(strstr(pf_last_error(), "data is NULL") != NULL);
    char x;
    CHECK(pf_buffer_wrap(&x, 1, (pf_mem_domain)7, NULL, NULL, NULL, &b) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "domain 7") != NULL);
    CHECK(pf_buffer_wrap(&x, 1, PF_MEM_HOST, NULL, NULL, NULL, NULL) == PF_ERR_INVALID);
}

static void test_views(void)
{
    static char storage[100];
    size_t seen = 0;
    freed_count = 0;
    pf_buffer *b = NULL, *v = NULL, *vv = NULL;
    CHECK_OK(pf_buffer_wrap(storage, 100, PF_MEM_DEVICE, NULL, count_free, &seen, &b));
    CHECK_OK(pf_buffer_view(b, 10, 50, &v));
    CHECK(pf_buffer_data(v) == storage + 10);
    CHECK_EQ_INT(pf_buffer_size(v), 50);
    CHECK(pf_buffer_domain(v) == PF_MEM_DEVICE); /* inherits domain */
    CHECK_EQ_INT(pf_buffer_refcount(b), 2);
    CHECK_OK(pf_buffer_view(v, 5, 45, &vv)); /* up to the view's end */
    CHECK(pf_buffer_data(vv) == storage + 15);
    /* out of range: one byte too many, offset past the end, size overflow */
    pf_buffer *bad = NULL;
    CHECK(pf_buffer_view(v, 5, 46, &bad) == PF_ERR_INVALID && bad == NULL);
    CHECK(strstr(pf_last_error(), "outside a buffer of 50 bytes") != NULL);
    CHECK(pf_buffer_view(v, 51, 0, &bad) == PF_ERR_INVALID);
    CHECK(pf_buffer_view(v, 1, SIZE_MAX, &bad) == PF_ERR_INVALID);
    CHECK_OK(pf_buffer_view(v, 50, 0, &bad)); /* empty view at the end is fine */
    pf_buffer_unref(&bad);
    pf_buffer_unref(&b);
    pf_buffer_unref(&v);
    CHECK_EQ_INT(freed_count, 0); /* vv keeps the chain alive */
    CHECK(((char *)pf_buffer_data(vv))[0] == storage[15]);
    pf_buffer_unref(&vv);
    CHECK_EQ_INT(freed_count, 1);
}

/* Many threads ref/unref one buffer; it is freed exactly once, at the end. */
#define THREADS 8
#define ROUNDS 200000
static pf_buffer *shared;
static void *hammer(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        pf_buffer *r = pf_buffer_ref(shared);
        pf_buffer *v = NULL;
        if ((i & 1023) == 0 && pf_buffer_view(r, 1, 2, &v) == PF_OK) pf_buffer_unref(&v);
        pf_buffer_unref(&r);
    }
    return NULL;
}

static void test_concurrent_refcount(void)
{
    static char storage[4];
    size_t seen = 0;
    freed_count = 0;
    CHECK_OK(pf_buffer_wrap(storage, 4, PF_MEM_HOST, NULL, count_free, &seen, &shared));
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, hammer, NULL);
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    CHECK_EQ_INT(pf_buffer_refcount(shared), 1);
    CHECK_EQ_INT(freed_count, 0);
    pf_buffer_unref(&shared);
    CHECK_EQ_INT(freed_count, 1);
}

static void test_status_and_errors(void)
{
    CHECK(strcmp(pf_status_str(PF_OK), "ok") == 0);
    CHECK(strcmp(pf_status_str(PF_ERR_NOMEM), "out of memory") == 0);
    CHECK(strcmp(pf_status_str((pf_status)-999), "unknown status") == 0);
    for (int s = -11; s <= 3; s++) CHECK(strcmp(pf_status_str((pf_status)s), "unknown status") != 0);
    pf_clear_error();
    CHECK(strcmp(pf_last_error(), "") == 0);
    pf_buffer *b = NULL;
    CHECK(pf_buffer_view(NULL, 0, 0, &b) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "pf_buffer_view") != NULL);
    CHECK(strcmp(pf_version_string(), PF_VERSION_STRING) == 0);
    CHECK(pf_version_code() == PF_VERSION_CODE);
}

/* The message is per thread: another thread's error does not leak here. */
static void *set_error_elsewhere(void *arg)
{
    (void)arg;
    pf_buffer *b = NULL;
    pf_buffer_view(NULL, 0, 0, &b);
    return NULL;
}

static void test_error_thread_local(void)
{
    pf_clear_error();
    pthread_t t;
    pthread_create(&t, NULL, set_error_elsewhere, NULL);
    pthread_join(t, NULL);
    CHECK(strcmp(pf_last_error(), "") == 0);
}

typedef struct log_capture {
    int count;
    pf_log_level last_level;
    char last[256];
} log_capture;

static void capture_log(void *user, pf_log_level level, const char *msg)
{
    log_capture *c = user;
    c->count++;
    c->last_level = level;
    snprintf(c->last, sizeof c->last, "%s", msg);
}

static void test_logging(void)
{
    log_capture cap = {0};
    pf_log_level old = pf_log_get_level();
    pf_log_set_callback(capture_log, &cap);
    pf_log_set_level(PF_LOG_INFO);
    pf_log(PF_LOG_INFO, "hello %d", 42);
    pf_log(PF_LOG_DEBUG, "hidden");
    CHECK_EQ_INT(cap.count, 1);
    CHECK(strcmp(cap.last, "hello 42") == 0);
    CHECK(cap.last_level == PF_LOG_INFO);
    pf_log_set_level(PF_LOG_QUIET);
    pf_log(PF_LOG_ERROR, "quiet");
    CHECK_EQ_INT(cap.count, 1);
    pf_log_set_callback(NULL, NULL);
    pf_log_set_level(old);
    pf_log_level lv;
    CHECK_OK(pf_log_level_parse("debug", &lv));
    CHECK(lv == PF_LOG_DEBUG);
    CHECK(pf_log_level_parse("loud", &lv) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "'loud'") != NULL);
}

int main(void)
{
    PF_RUN(test_alloc_host);
    PF_RUN(test_wrap_free_once);
    PF_RUN(test_wrap_errors);
    PF_RUN(test_views);
    PF_RUN(test_concurrent_refcount);
    PF_RUN(test_status_and_errors);
    PF_RUN(test_error_thread_local);
    PF_RUN(test_logging);
    return pf_test_finish();
}
