/* Caching allocator on the CPU device: size classes, reuse, exact statistics,
 * the hard cap, trim, lifetime after destroy, poisoning, a multithreaded
 * stress run with data checks, and argument errors. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/sys.h"
#include "device/backend.h"
#include "pf_test.h"

#define KIB ((size_t)1024)
#define MIB (KIB * 1024)

/* On the CPU device (NULL). */
static pf_allocator *make(const char *name, pf_mem_domain domain, size_t cap)
{
    return pf_test_allocator_create(NULL, name, domain, cap);
}

/* Every invariant that holds between calls, whatever happened before. */
static void check_invariants(const pf_allocator_stats *s)
{
    CHECK_EQ_INT(s->bytes_reserved, s->bytes_in_use + s->bytes_cached);
    CHECK(s->peak_bytes_in_use >= s->bytes_in_use);
    CHECK(s->peak_bytes_reserved >= s->bytes_reserved);
    CHECK(s->peak_bytes_reserved >= s->peak_bytes_in_use);
    CHECK(s->cap_bytes == 0 || s->peak_bytes_reserved <= s->cap_bytes);
    CHECK(s->cache_hits + s->runtime_allocs == s->requests);
    CHECK(s->runtime_frees <= s->runtime_allocs);
}

static void test_size_classes(void)
{
    CHECK_EQ_INT(pf_allocator_size_class(0), 0);
    CHECK_EQ_INT(pf_allocator_size_class(1), 512);
    CHECK_EQ_INT(pf_allocator_size_class(512), 512);
    CHECK_EQ_INT(pf_allocator_size_class(513), 1024);
    CHECK_EQ_INT(pf_allocator_size_class(4096), 4096);
    CHECK_EQ_INT(pf_allocator_size_class(4097), 4608);
    CHECK_EQ_INT(pf_allocator_size_class(8192), 8192);
    CHECK_EQ_INT(pf_allocator_size_class(8193), 9216);
    CHECK_EQ_INT(pf_allocator_size_class(1920 * 1080 * 3), 6291456); /* 12 * 512 KiB */
    CHECK_EQ_INT(pf_allocator_size_class(SIZE_MAX), 0);
    CHECK_EQ_INT(pf_allocator_size_class(SIZE_MAX - 4096), 0);
    CHECK_EQ_INT(pf_allocator_size_class((size_t)1 << 63), (size_t)1 << 63);
    CHECK_EQ_INT(pf_allocator_size_class(((size_t)1 << 63) + 1), 0x9000000000000000ull);
    /* the largest class: 2^63 + 7 * 2^60 */
    CHECK_EQ_INT(pf_allocator_size_class(0xF000000000000000ull), 0xF000000000000000ull);
    CHECK_EQ_INT(pf_allocator_size_class(0xF000000000000001ull), 0);

    /* Exhaustive below 1 MiB: monotone, >= request, idempotent, bounded waste. */
    size_t prev = 0;
    int bad = 0;
    for (size_t n = 1; n <= MIB && bad < 5; n++) {
        size_t c = pf_allocator_size_class(n);
        int ok = c >= n && c >= prev && pf_allocator_size_class(c) == c;
        if (n <= 4096)
            ok = ok && c % 512 == 0 && c - n < 512;
        else
            ok = ok && (c - n) * 8 < n;
        if (!ok) {
            fprintf(stderr, "  size class of %zu is %zu (previous %zu)\n", n, c, prev);
            bad++;
        }
        prev = c;
    }
    CHECK_EQ_INT(bad, 0);

    /* Eight classes per power of two above 4 KiB. */
    for (int k = 12; k < 40; k++) {
        size_t lo = (size_t)1 << k, hi = lo << 1;
        int classes = 0;
        size_t c = lo;
        while (c < hi) {
            size_t next = pf_allocator_size_class(c + 1);
            CHECK(next > c);
            c = next;
            classes++;
        }
        CHECK_EQ_INT(classes, 8);
        CHECK_EQ_INT(c, hi);
    }

    /* Random large sizes: >= request, waste < 12.5%, monotone pairs. */
    pf_test_seed(11);
    for (int i = 0; i < 200000; i++) {
        size_t n = (size_t)(pf_test_rand() >> (pf_test_rand() % 60 + 2));
        if (n == 0) continue;
        size_t m = n + (size_t)(pf_test_rand() % 100000);
        size_t c = pf_allocator_size_class(n), cm = pf_allocator_size_class(m);
        if (!(c >= n && (n <= 4096 || (c - n) * 8 < n) && cm >= c)) {
            fprintf(stderr, "  size class of %zu is %zu, of %zu is %zu\n", n, c, m, cm);
            CHECK(0);
            break;
        }
    }
}

static void test_reuse(void)
{
    pf_allocator *a = make("reuse", PF_MEM_DEVICE, 0);
    REQUIRE(a);
    CHECK(!strcmp(pf_allocator_name(a), "reuse"));
    pf_buffer *b = NULL;
    CHECK_OK(pf_allocator_alloc(a, 10000, NULL, &b));
    REQUIRE(b);
    void *p = pf_buffer_data(b);
    CHECK(((uintptr_t)p & 255) == 0);
    CHECK_EQ_INT(pf_buffer_size(b), 10000);
    CHECK_EQ_INT(pf_buffer_domain(b), PF_MEM_DEVICE);
    CHECK(pf_buffer_device(b) == pf_cpu_device());
    CHECK_EQ_INT(pf_buffer_refcount(b), 1);
    memset(p, 0x5A, pf_allocator_size_class(10000)); /* the whole class is usable */
    pf_buffer_unref(&b);
    CHECK(b == NULL);

    pf_allocator_stats s = pf_test_allocator_stats(a);
    CHECK_EQ_INT(s.runtime_allocs, 1);
    CHECK_EQ_INT(s.cache_hits, 0);

    /* Same size, then another size of the same class: the same block. */
    CHECK_OK(pf_allocator_alloc(a, 10000, NULL, &b));
    CHECK(pf_buffer_data(b) == p);
    pf_buffer_unref(&b);
    CHECK_OK(pf_allocator_alloc(a, 9300, NULL, &b));
    CHECK(pf_buffer_data(b) == p);
    CHECK_EQ_INT(pf_buffer_size(b), 9300);
    s = pf_test_allocator_stats(a);
    CHECK_EQ_INT(s.cache_hits, 2);
    CHECK_EQ_INT(s.runtime_allocs, 1);
    CHECK_EQ_INT(s.requests, 3);

    /* An extra reference keeps the block out of the cache. */
    pf_buffer *r = pf_buffer_ref(b);
    pf_buffer_unref(&b);
    s = pf_test_allocator_stats(a);
    CHECK_EQ_INT(s.blocks_in_use, 1);
    CHECK_EQ_INT(s.bytes_cached, 0);
    pf_buffer_unref(&r);
    s = pf_test_allocator_stats(a);
    CHECK_EQ_INT(s.blocks_in_use, 0);
    CHECK_EQ_INT(s.bytes_cached, pf_allocator_size_class(10000));

    /* A different class does not take the cached block. */
    CHECK_OK(pf_allocator_alloc(a, 20000, NULL, &b));
    CHECK(pf_buffer_data(b) != p);
    s = pf_test_allocator_stats(a);
    CHECK_EQ_INT(s.runtime_allocs, 2);
    pf_buffer_unref(&b);

    /* CPU streams: reuse across streams needs no wait (CPU work is done when issued). */
    pf_stream *s1 = NULL, *s2 = NULL;
    CHECK_OK(pf_stream_create(NULL, &s1));
    CHECK_OK(pf_stream_create(NULL, &s2));
    CHECK_OK(pf_allocator_alloc(a, 10000, s1, &b));
    CHECK(pf_buffer_data(b) == p);
    CHECK_OK(pf_memset_async(s1, pf_buffer_data(b), 7, pf_buffer_size(b)));
    pf_buffer_unref(&b);
    CHECK_OK(pf_allocator_alloc(a, 10000, s2, &b));
    CHECK(pf_buffer_data(b) == p);
    pf_buffer_unref(&b);
    s = pf_test_allocator_stats(a);
    CHECK_EQ_INT(s.cross_stream_reuses, 0);
    check_invariants(&s);
    pf_stream_destroy(&s1);
    pf_stream_destroy(&s2);
    pf_allocator_destroy(&a);
    CHECK(a == NULL);
    pf_allocator_destroy(&a);   /* NULL-safe */
    pf_allocator_destroy(NULL);
}

static void test_domains(void)
{
    static const struct { pf_mem_domain asked, reported; } cases[] = {
        {PF_MEM_DEVICE, PF_MEM_DEVICE},
        {PF_MEM_HOST, PF_MEM_HOST},
        {PF_MEM_PINNED, PF_MEM_HOST}, /* pinned on the CPU device = host memory */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pf_allocator *a = make("dom", cases[i].asked, 0);
        REQUIRE(a);
        pf_buffer *b = NULL;
        CHECK_OK(pf_allocator_alloc(a, 777, NULL, &b));
        REQUIRE(b);
        CHECK_EQ_INT(pf_buffer_domain(b), cases[i].reported);
        CHECK(pf_buffer_device(b) == pf_cpu_device());
        CHECK(((uintptr_t)pf_buffer_data(b) & 255) == 0);
        pf_buffer_unref(&b);
        pf_allocator_destroy(&a);
    }
}

static void test_stats_script(void)
{
    pf_allocator *a = make("stats", PF_MEM_DEVICE, 0);
    REQUIRE(a);
    pf_allocator_stats s = pf_test_allocator_stats(a);
    CHECK_EQ_INT(s.bytes_in_use, 0);
    CHECK_EQ_INT(s.bytes_reserved, 0);
    CHECK_EQ_INT(s.cap_bytes, 0);
    CHECK_EQ_INT(s.requests, 0);

    /* classes: 1000 -> 1024, 5000 -> 5120, 100000 -> 106496, 3000 -> 3072 */
    CHECK_EQ_INT(pf_allocator_size_class(100000), 106496);
    pf_buffer *x = NULL, *y = NULL, *z = NULL, *w = NULL;
    CHECK_OK(pf_allocator_alloc(a, 1000, NULL, &x));
    CHECK_OK(pf_allocator_alloc(a, 5000, NULL, &y));
    CHECK_OK(pf_allocator_alloc(a, 100000, NULL, &z));
    s = pf_test_allocator_stats(a);
    CHECK_EQ_INT(s.bytes_in_use, 1024 + 5120 + 106496);
    CHECK_EQ_INT(s.bytes_cached, 0);
    CHECK_EQ_INT(s.blocks_in_use, 3);
    CHECK_EQ_INT(s.peak_bytes_in_use, 112640);

    pf_buffer_unref(&z); /* in use 6144, cached 106496 */
    CHECK_OK(pf_allocator_alloc(a, 3000, NULL, &w)); /* new class: runtime */
    s = pf_test_allocator_stats(a);
    CHECK_EQ_INT(s.bytes_in_use, 1024 + 5120 + 3072);
    CHECK_EQ_INT(s.bytes_cached, 106496);
    CHECK_EQ_INT(s.bytes_reserved, 1024 + 5120 + 3072 + 106496);
    CHECK_EQ_INT(s.peak_bytes_in_use, 112640);
    CHECK_EQ_INT(s.peak_bytes_reserved, 115712);

    CHECK_OK(pf_allocator_alloc(a, 99000, NULL, &z)); /* same class as 100000: hit */
    s = pf_test_allocator_stats(a);
    CHECK_EQ_INT(s.bytes_in_use, 1024 + 5120 + 3072 + 106496);
    CHECK_EQ_INT(s.bytes_cached, 0);
    CHECK_EQ_INT(s.peak_bytes_in_use, 115712);
    CHECK_EQ_INT(s.peak_bytes_reserved, 115712);
    CHECK_EQ_INT(s.requests, 5);
    CHECK_EQ_INT(s.cache_hits, 1);
    CHECK_EQ_INT(s.runtime_allocs, 4);
    CHECK_EQ_INT(s.runtime_frees, 0);
    CHECK_EQ_INT(s.blocks_in_use, 4);
    CHECK_EQ_INT(s.failures, 0);

    pf_buffer_unref(&x);
    pf_buffer_unref(&y);
    pf_buffer_unref(&z);
    pf_buffer_unref(&w);
    s = pf_test_allocator_stats(a);
    CHECK_EQ_INT(s.bytes_in_use, 0);
    CHECK_EQ_INT(s.blocks_in_use, 0);
    CHECK_EQ_INT(s.bytes_cached, 115712);
    CHECK_EQ_INT(s.bytes_reserved, 115712);
    check_invariants(&s);

    pf_allocator_trim(a);
    s = pf_test_allocator_stats(a);
    CHECK_EQ_INT(s.bytes_cached, 0);
    CHECK_EQ_INT(s.bytes_reserved, 0);
    CHECK_EQ_INT(s.runtime_frees, 4);
    CHECK_EQ_INT(s.peak_bytes_reserved, 115712); /* peaks survive a trim */
    pf_allocator_trim(a); /* idempotent */
    pf_allocator_trim(NULL);
    CHECK_EQ_INT(pf_test_allocator_stats(a).runtime_frees, 4);

    /* After a trim the next request goes to the runtime again. */
    CHECK_OK(pf_allocator_alloc(a, 1000, NULL, &x));
    s = pf_test_allocator_stats(a);
    CHECK_EQ_INT(s.runtime_allocs, 5);
    CHECK_EQ_INT(s.bytes_reserved, 1024);
    pf_buffer_unref(&x);
    pf_allocator_destroy(&a);
}

static void test_cap(void)
{
    const size_t cap = 64 * KIB;
    pf_allocator *a = make("capped", PF_MEM_DEVICE, cap);
    REQUIRE(a);
    CHECK_EQ_INT(pf_test_allocator_stats(a).cap_bytes, cap);
    pf_buffer *b[5] = {0};
    for (int i = 0; i < 4; i++) CHECK_OK(pf_allocator_alloc(a, 16 * KIB, NULL, &b[i]));
    pf_allocator_stats s = pf_test_allocator_stats(a);
    CHECK_EQ_INT(s.bytes_reserved, cap);

    pf_status st = pf_allocator_alloc(a, 1, NULL, &b[4]);
    CHECK_EQ_INT(st, PF_ERR_NOMEM);
    CHECK(b[4] == NULL);
    const char *msg = pf_last_error();
    CHECK(strstr(msg, "'capped'") != NULL);
    CHECK(strstr(msg, "cap") != NULL);
    CHECK(strstr(msg, "64.00 KiB") != NULL);   /* the cap */
    CHECK(strstr(msg, "in use 64.00 KiB") != NULL);
    s = pf_test_allocator_stats(a);
    CHECK_EQ_INT(s.failures, 1);
    CHECK_EQ_INT(s.requests, 4);

    /* Larger than the cap on its own. */
    CHECK_EQ_INT(pf_allocator_alloc(a, 65 * KIB, NULL, &b[4]), PF_ERR_NOMEM);
    CHECK(strstr(pf_last_error(), "exceeds the cap") != NULL);
    CHECK_EQ_INT(pf_test_allocator_stats(a).failures, 2);

    /* A cached block of the requested class is reused even at the cap. */
    void *p0 = pf_buffer_data(b[0]);
    pf_buffer_unref(&b[0]);
    CHECK_OK(pf_allocator_alloc(a, 16 * KIB, NULL, &b[0]));
    CHECK(pf_buffer_data(b[0]) == p0);

    /* Cached blocks of another class are released to fit a new request. */
    for (int i = 0; i < 4; i++) pf_buffer_unref(&b[i]);
    s = pf_test_allocator_stats(a);
    CHECK_EQ_INT(s.bytes_cached, cap);
    CHECK_EQ_INT(s.runtime_frees, 0);
    CHECK_OK(pf_allocator_alloc(a, 32 * KIB, NULL, &b[0]));
    s = pf_test_allocator_stats(a);
    CHECK_EQ_INT(s.runtime_frees, 2);      /* exactly as many as needed */
    CHECK_EQ_INT(s.bytes_in_use, 32 * KIB);
    CHECK_EQ_INT(s.bytes_cached, 32 * KIB);
    CHECK_EQ_INT(s.bytes_reserved, cap);
    CHECK_EQ_INT(s.peak_bytes_reserved, cap);
    check_invariants(&s);

    /* Everything cached goes if needed; then the cap still holds. */
    CHECK_OK(pf_allocator_alloc(a, 32 * KIB, NULL, &b[1]));
    CHECK_EQ_INT(pf_test_allocator_stats(a).runtime_frees, 4);
    CHECK_EQ_INT(pf_allocator_alloc(a, 512, NULL, &b[2]), PF_ERR_NOMEM);
    CHECK(strstr(pf_last_error(), "cached 0 B") != NULL);
    s = pf_test_allocator_stats(a);
    CHECK_EQ_INT(s.bytes_reserved, cap);
    CHECK_EQ_INT(s.failures, 3);
    check_invariants(&s);
    pf_buffer_unref(&b[0]);
    pf_buffer_unref(&b[1]);
    pf_allocator_destroy(&a);
}

static void test_destroy_with_buffers_out(void)
{
    pf_allocator *a = make("orphans", PF_MEM_HOST, 0);
    REQUIRE(a);
    pf_buffer *b[8] = {0}, *cached = NULL;
    CHECK_OK(pf_allocator_alloc(a, 50000, NULL, &cached));
    pf_buffer_unref(&cached); /* one cached block: destroy must free it */
    for (int i = 0; i < 8; i++) {
        CHECK_OK(pf_allocator_alloc(a, 1000 + (size_t)i * 3000, NULL, &b[i]));
        if (b[i]) memset(pf_buffer_data(b[i]), i, pf_buffer_size(b[i]));
    }
    pf_buffer *extra = pf_buffer_ref(b[3]);
    pf_allocator_destroy(&a);
    CHECK(a == NULL);
    /* Buffers stay valid and writable; their contents are intact. */
    for (int i = 0; i < 8; i++) {
        REQUIRE(b[i]);
        unsigned char *p = pf_buffer_data(b[i]);
        size_t n = pf_buffer_size(b[i]);
        CHECK(p[0] == i && p[n - 1] == i);
        memset(p, 0xEE, n);
    }
    /* Returned in a scrambled order; the last one frees the allocator. */
    static const int order[8] = {5, 0, 7, 3, 1, 6, 2, 4};
    for (int i = 0; i < 8; i++) pf_buffer_unref(&b[order[i]]);
    unsigned char *p = pf_buffer_data(extra);
    CHECK(p[0] == 0xEE);
    pf_buffer_unref(&extra); /* last block: ASan reports a leak or a use after free here */
}

static void test_poison(void)
{
    if (!pf_poison_enabled()) {
        printf("  (poisoning off in this build: not checked)\n");
        return;
    }
    pf_allocator *a = make("poison", PF_MEM_HOST, 0);
    REQUIRE(a);
    pf_buffer *b = NULL;
    CHECK_OK(pf_allocator_alloc(a, 3000, NULL, &b));
    REQUIRE(b);
    unsigned char *p = pf_buffer_data(b);
    memset(p, 0x11, 3000);
    pf_buffer_unref(&b);
    CHECK_OK(pf_allocator_alloc(a, 2600, NULL, &b)); /* same class (3072) */
    REQUIRE(b);
    CHECK(pf_buffer_data(b) == p);
    size_t bad = 0;
    for (size_t i = 0; i < 3072; i++) bad += p[i] != 0xDB; /* the whole class */
    CHECK_EQ_INT(bad, 0);
    pf_buffer_unref(&b);
    pf_allocator_destroy(&a);
}

static void test_invalid(void)
{
    pf_allocator_params p = pf_allocator_params_default();
    CHECK_EQ_INT(p.domain, PF_MEM_DEVICE);
    CHECK_EQ_INT(p.cap_bytes, 0);
    CHECK(p.device == NULL && p.name == NULL);
    pf_allocator *a = NULL;

    CHECK_EQ_INT(pf_allocator_create(&p, NULL), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_allocator_create(NULL, &a), PF_ERR_INVALID);
    CHECK(a == NULL);
    p.domain = (pf_mem_domain)7;
    a = (pf_allocator *)&p; /* must be reset to NULL on failure */
    CHECK_EQ_INT(pf_allocator_create(&p, &a), PF_ERR_INVALID);
    CHECK(a == NULL);
    CHECK(strstr(pf_last_error(), "domain 7") != NULL);

    /* The name is copied; a default is used when none is given. */
    char name[16] = "tmpname";
    p = pf_allocator_params_default();
    p.name = name;
    CHECK_OK(pf_allocator_create(&p, &a));
    REQUIRE(a);
    strcpy(name, "changed");
    CHECK(!strcmp(pf_allocator_name(a), "tmpname"));

    pf_buffer *b = (pf_buffer *)&p;
    CHECK_EQ_INT(pf_allocator_alloc(a, 0, NULL, &b), PF_ERR_INVALID);
    CHECK(b == NULL);
    CHECK(strstr(pf_last_error(), "size 0") != NULL);
    CHECK(strstr(pf_last_error(), "tmpname") != NULL);
    CHECK_EQ_INT(pf_allocator_alloc(a, 16, NULL, NULL), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_allocator_alloc(NULL, 16, NULL, &b), PF_ERR_INVALID);
    CHECK(b == NULL);
    CHECK_EQ_INT(pf_allocator_alloc(a, SIZE_MAX, NULL, &b), PF_ERR_NOMEM);
    CHECK(strstr(pf_last_error(), "tmpname") != NULL);
    CHECK(b == NULL);
    pf_allocator_stats s;
    CHECK_EQ_INT(pf_allocator_get_stats(NULL, &s), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_allocator_get_stats(a, NULL), PF_ERR_INVALID);
    s = pf_test_allocator_stats(a);
    CHECK_EQ_INT(s.failures, 1);  /* only the refused huge request counts */
    CHECK_EQ_INT(s.requests, 0);
    pf_allocator_destroy(&a);

    p = pf_allocator_params_default();
    CHECK_OK(pf_allocator_create(&p, &a));
    CHECK(a && !strcmp(pf_allocator_name(a), "allocator"));
    pf_allocator_destroy(&a);
}

/* Multithreaded stress ----------------------------------------------------- */

typedef struct stress_arg {
    pf_allocator *a;
    int id, iters;
    uint64_t rng;
    uint64_t allocs, nomem, errors, corrupt;
} stress_arg;

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

#define SLOTS 16

static void *stress_thread(void *p)
{
    stress_arg *t = p;
    pf_stream *stream = NULL;
    if (pf_stream_create(NULL, &stream) != PF_OK) t->errors++;
    pf_buffer *slot[SLOTS] = {0};
    unsigned char tag[SLOTS] = {0};
    for (int i = 0; i < t->iters; i++) {
        int k = (int)(xorshift(&t->rng) % SLOTS);
        if (slot[k]) {
            /* Check the whole buffer still holds our pattern, then free it. */
            const unsigned char *d = pf_buffer_data(slot[k]);
            size_t n = pf_buffer_size(slot[k]);
            for (size_t j = 0; j < n; j++)
                if (d[j] != tag[k]) {
                    t->corrupt++;
                    break;
                }
            pf_buffer_unref(&slot[k]);
        } else {
            /* Log-uniform sizes from 1 B to 64 KiB: many classes, many collisions. */
            int bits = (int)(xorshift(&t->rng) % 17);
            size_t n = 1 + (size_t)(xorshift(&t->rng) % ((size_t)1 << bits));
            pf_stream *s = (xorshift(&t->rng) & 1) ? stream : NULL;
            pf_status st = pf_allocator_alloc(t->a, n, s, &slot[k]);
            if (st == PF_ERR_NOMEM) {
                t->nomem++;
                continue;
            }
            if (st != PF_OK || !slot[k] || pf_buffer_size(slot[k]) != n ||
                ((uintptr_t)pf_buffer_data(slot[k]) & 255)) {
                t->errors++;
                pf_buffer_unref(&slot[k]);
                continue;
            }
            t->allocs++;
            tag[k] = (unsigned char)(t->id * 37 + i);
            memset(pf_buffer_data(slot[k]), tag[k], n);
        }
    }
    for (int k = 0; k < SLOTS; k++) pf_buffer_unref(&slot[k]);
    pf_stream_destroy(&stream);
    return NULL;
}

static void run_stress(size_t cap, int iters)
{
    enum { NT = 4 };
    pf_allocator *a = make(cap ? "stress-capped" : "stress", PF_MEM_DEVICE, cap);
    REQUIRE(a);
    stress_arg args[NT];
    pf_thread th[NT];
    for (int i = 0; i < NT; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].a = a;
        args[i].id = i;
        args[i].iters = iters;
        args[i].rng = pf_test_rand() | 1;
        CHECK_OK(pf_thread_start(&th[i], "stress", stress_thread, &args[i]));
    }
    uint64_t allocs = 0, nomem = 0;
    for (int i = 0; i < NT; i++) {
        pf_thread_join(th[i]);
        CHECK_EQ_INT(args[i].errors, 0);
        CHECK_EQ_INT(args[i].corrupt, 0);
        allocs += args[i].allocs;
        nomem += args[i].nomem;
    }
    pf_allocator_stats s = pf_test_allocator_stats(a);
    check_invariants(&s);
    CHECK_EQ_INT(s.bytes_in_use, 0);
    CHECK_EQ_INT(s.blocks_in_use, 0);
    CHECK_EQ_INT(s.requests, allocs);
    CHECK_EQ_INT(s.failures, nomem);
    CHECK(s.cache_hits > s.runtime_allocs); /* the cache does its job */
    if (cap) {
        CHECK(s.peak_bytes_reserved <= cap);
        CHECK(nomem > 0);   /* the cap was actually reached */
    } else {
        CHECK_EQ_INT(nomem, 0);
    }
    printf("  %s: %" PRIu64 " allocs, %" PRIu64 " hits, %" PRIu64 " runtime allocs, %" PRIu64
           " runtime frees, %" PRIu64 " refused, peak reserved %zu\n",
           pf_allocator_name(a), s.requests, s.cache_hits, s.runtime_allocs, s.runtime_frees,
           s.failures, s.peak_bytes_reserved);
    pf_allocator_trim(a);
    s = pf_test_allocator_stats(a);
    CHECK_EQ_INT(s.bytes_reserved, 0);
    CHECK_EQ_INT(s.runtime_allocs, s.runtime_frees);
    pf_allocator_destroy(&a);
}

static void test_stress(void) { run_stress(0, 20000); }

/* Under a cap some requests fail; the cap must hold under concurrency. */
static void test_stress_capped(void) { run_stress(256 * KIB, 20000); }

int main(void)
{
    /* Exercise poisoning in every build type (it is on by default in debug builds). */
    setenv("PIXFLOW_POISON", "1", 1);
    pf_test_seed(20240611);
    PF_RUN(test_size_classes);
    PF_RUN(test_reuse);
    PF_RUN(test_domains);
    PF_RUN(test_stats_script);
    PF_RUN(test_cap);
    PF_RUN(test_destroy_with_buffers_out);
    PF_RUN(test_poison);
    PF_RUN(test_invalid);
    PF_RUN(test_stress);
    PF_RUN(test_stress_capped);
    return pf_test_finish();
}
