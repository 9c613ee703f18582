/* CUDA copies: H2D/D2H/D2D/H2H with pinned and pageable host memory, odd
 * sizes and misaligned pointers, 2D copies with padded pitches (padding must
 * stay untouched), memset, and the range checks of pf_buffer_copy_async.
 * Exits 77 (skipped) without a usable GPU. */
#include "cuda_test_util.h"

static pf_device *dev;
static pf_stream *s;

/* host -> device -> device (shifted) -> host, and host -> host. */
static void roundtrip(size_t n, int pinned_host, int shift)
{
    unsigned char *src = hmalloc(n + 16, pinned_host), *dst = hmalloc(n + 16, pinned_host);
    unsigned char *d1 = dmalloc(n + 16), *d2 = dmalloc(n + 16);
    /* Odd offsets on both sides: copies must not assume alignment. */
    unsigned char *hs = src + (shift & 7), *hd = dst + ((shift >> 3) & 7);
    unsigned char *ds1 = d1 + (shift % 5), *ds2 = d2 + (shift % 11);
    fill_random(hs, n);
    memset(hd, 0, n);
    CHECK_OK(pf_memcpy_async(s, ds1, hs, n));
    CHECK_OK(pf_memcpy_async(s, ds2, ds1, n));
    CHECK_OK(pf_memcpy_async(s, hd, ds2, n));
    CHECK_OK(pf_stream_synchronize(s));
    size_t bad = first_mismatch(hs, hd, n);
    if (bad != NOWHERE)
        fprintf(stderr, "  n=%zu %s shift=%d: first difference at byte %zu\n", n,
                pinned_host ? "pinned" : "pageable", shift, bad);
    CHECK(bad == NOWHERE);

    /* Host to host through the stream. */
    memset(hd, 0, n);
    CHECK_OK(pf_memcpy_async(s, hd, hs, n));
    CHECK_OK(pf_stream_synchronize(s));
    CHECK(first_mismatch(hs, hd, n) == NOWHERE);

    cudaFree(d1);
    cudaFree(d2);
    hfree(src, pinned_host);
    hfree(dst, pinned_host);
}

static void test_roundtrip_sizes(void)
{
    pf_test_seed(0xc09ee5u);
    static const size_t fixed[] = {1, 2, 3, 15, 255, 257, 4095, 4097, 65537, MiB + 3, 64 * MiB};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        for (int p = 0; p <= 1; p++) roundtrip(fixed[i], p, (int)(pf_test_rand() & 63));
    for (int r = 0; r < 10; r++) {
        size_t n = (size_t)pf_test_rand_range(1, 16 * (int64_t)MiB);
        roundtrip(n, r & 1, (int)(pf_test_rand() & 63));
    }
    CHECK(cudaGetLastError() == cudaSuccess);
}

static void test_zero_bytes(void)
{
    CHECK_OK(pf_memcpy_async(s, NULL, NULL, 0));
    CHECK_OK(pf_memset_async(s, NULL, 0, 0));
    CHECK_OK(pf_memcpy2d_async(s, NULL, 0, NULL, 0, 0, 5));
    CHECK_OK(pf_stream_synchronize(s));
}

/* 2D copies: rows of `w` bytes between pitched layouts; the bytes between w
 * and the pitch must keep their sentinel. */
static void test_memcpy2d_pitched(void)
{
    pf_test_seed(0x2d2du);
    for (int r = 0; r < 24; r++) {
        size_t w = r == 0 ? 1 : (size_t)pf_test_rand_range(1, 3000);
        size_t rows = r == 1 ? 1 : (size_t)pf_test_rand_range(1, 300);
        size_t sp = w + (size_t)pf_test_rand_range(0, 97);
        size_t dp = w + (size_t)pf_test_rand_range(0, 131);
        size_t hp = w + (size_t)pf_test_rand_range(1, 64);
        if (r == 2) sp = dp = hp = w; /* tight rows: no padding */
        int use_pinned = r & 1;
        size_t sn = sp * rows, dn = dp * rows, hn = hp * rows;
        unsigned char *src = hmalloc(sn, use_pinned), *back = hmalloc(hn, use_pinned);
        unsigned char *whole = hmalloc_pageable(dn);
        unsigned char *d = dmalloc(dn), *d2 = dmalloc(dn);
        fill_random(src, sn);

        /* H2D into a sentinel-filled pitched device image. */
        CHECK_OK(pf_memset_async(s, d, 0xee, dn));
        CHECK_OK(pf_memcpy2d_async(s, d, dp, src, sp, w, rows));
        CHECK_OK(pf_memcpy_async(s, whole, d, dn));
        CHECK_OK(pf_stream_synchronize(s));
        int ok = 1;
        for (size_t y = 0; y < rows && ok; y++) {
            if (memcmp(whole + y * dp, src + y * sp, w) != 0) ok = 0;
            if (first_not(whole + y * dp + w, 0xee, dp - w) != NOWHERE) ok = 0;
            if (!ok)
                fprintf(stderr, "  w=%zu rows=%zu sp=%zu dp=%zu: H2D row %zu wrong\n", w, rows,
                        sp, dp, y);
        }
        CHECK(ok);

        /* D2D with the same layout, then D2H into a padded host image. */
        CHECK_OK(pf_memset_async(s, d2, 0x5a, dn));
        CHECK_OK(pf_memcpy2d_async(s, d2, dp, d, dp, w, rows));
        memset(back, 0xc3, hn);
        CHECK_OK(pf_memcpy2d_async(s, back, hp, d2, dp, w, rows));
        CHECK_OK(pf_stream_synchronize(s));
        ok = 1;
        for (size_t y = 0; y < rows && ok; y++) {
            if (memcmp(back + y * hp, src + y * sp, w) != 0) ok = 0;
            if (first_not(back + y * hp + w, 0xc3, hp - w) != NOWHERE) ok = 0;
            if (!ok)
                fprintf(stderr, "  w=%zu rows=%zu hp=%zu: D2H row %zu wrong\n", w, rows, hp, y);
        }
        CHECK(ok);
        /* The D2D copy left the destination's padding alone too. */
        CHECK_OK(pf_memcpy_async(s, whole, d2, dn));
        CHECK_OK(pf_stream_synchronize(s));
        for (size_t y = 0; y < rows; y++)
            if (first_not(whole + y * dp + w, 0x5a, dp - w) != NOWHERE) {
                CHECK(!"D2D 2D copy wrote into the padding");
                break;
            }

        cudaFree(d);
        cudaFree(d2);
        free(whole);
        hfree(src, use_pinned);
        hfree(back, use_pinned);
    }
    /* A row wider than a pitch is refused by the wrapper, naming the sizes. */
    unsigned char tmp[64];
    CHECK_EQ_INT(pf_memcpy2d_async(s, tmp, 16, tmp + 32, 32, 20, 1), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "20") != NULL);
}

static void test_memset_ranges(void)
{
    pf_test_seed(0x5e7u);
    const size_t n = 8 * MiB + 13;
    unsigned char *d = dmalloc(n), *h = hmalloc_pageable(n), *expect = hmalloc_pageable(n);
    CHECK_OK(pf_memset_async(s, d, 0, n));
    memset(expect, 0, n);
    for (int r = 0; r < 20; r++) {
        size_t off = (size_t)pf_test_rand_range(0, (int64_t)n - 1);
        size_t len = (size_t)pf_test_rand_range(1, (int64_t)(n - off));
        int v = (int)(pf_test_rand() & 0xff);
        /* Only the low byte of value counts, like memset. */
        CHECK_OK(pf_memset_async(s, d + off, v | 0x1200, len));
        memset(expect + off, v, len);
    }
    CHECK_OK(pf_memcpy_async(s, h, d, n));
    CHECK_OK(pf_stream_synchronize(s));
    CHECK(first_mismatch(h, expect, n) == NOWHERE);

    /* Pinned host memory is device-addressable (unified addressing), so a
     * stream memset reaches it as well. */
    unsigned char *ph = hmalloc_pinned(4 * MiB);
    memset(ph, 0, 4 * MiB);
    CHECK_OK(pf_memset_async(s, ph + 1, 0x6d, 4 * MiB - 2));
    CHECK_OK(pf_stream_synchronize(s));
    CHECK(ph[0] == 0 && ph[4 * MiB - 1] == 0);
    CHECK(first_not(ph + 1, 0x6d, 4 * MiB - 2) == NOWHERE);
    cudaFreeHost(ph);
    cudaFree(d);
    free(h);
    free(expect);
}

static void free_cuda(void *opaque, void *data, size_t size)
{
    (void)opaque;
    (void)size;
    cudaFree(data);
}

static void test_buffer_copy(void)
{
    pf_test_seed(0xb0ffu);
    const size_t n = 1000;
    void *dm = dmalloc(n);
    pf_buffer *db = NULL, *hb = NULL, *hb2 = NULL;
    CHECK_OK(pf_buffer_wrap(dm, n, PF_MEM_DEVICE, dev, free_cuda, NULL, &db));
    REQUIRE(db != NULL);
    CHECK_OK(pf_buffer_alloc_host(n, &hb));
    CHECK_OK(pf_buffer_alloc_host(n, &hb2));
    REQUIRE(hb && hb2);
    unsigned char *h = pf_buffer_data(hb), *h2 = pf_buffer_data(hb2);
    fill_random(h, n);
    memset(h2, 0, n);

    CHECK_OK(pf_buffer_copy_async(s, db, 0, hb, 0, n));
    CHECK_OK(pf_buffer_copy_async(s, db, 600, hb, 100, 300)); /* shift a range */
    CHECK_OK(pf_buffer_copy_async(s, hb2, 0, db, 0, n));
    CHECK_OK(pf_buffer_copy_async(s, hb2, n, db, n, 0));      /* empty, at the end */
    CHECK_OK(pf_stream_synchronize(s));
    CHECK(memcmp(h2, h, 600) == 0);
    CHECK(memcmp(h2 + 600, h + 100, 300) == 0);
    CHECK(memcmp(h2 + 900, h + 900, 100) == 0);

    /* Ranges outside a buffer: refused, message naming the range. */
    CHECK_EQ_INT(pf_buffer_copy_async(s, db, 900, hb, 0, 200), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "900") != NULL);
    CHECK(strstr(pf_last_error(), "1000") != NULL);
    CHECK(strstr(pf_last_error(), "dst") != NULL);
    CHECK_EQ_INT(pf_buffer_copy_async(s, hb2, 0, db, 999, 2), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "999") != NULL);
    CHECK(strstr(pf_last_error(), "src") != NULL);
    CHECK_EQ_INT(pf_buffer_copy_async(s, db, 1001, hb, 0, 0), PF_ERR_INVALID);
    /* offset + n would wrap around: still refused. */
    CHECK_EQ_INT(pf_buffer_copy_async(s, db, SIZE_MAX, hb, 0, 2), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_buffer_copy_async(s, db, 2, hb, 0, SIZE_MAX), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_buffer_copy_async(NULL, db, 0, hb, 0, 1), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_buffer_copy_async(s, NULL, 0, hb, 0, 1), PF_ERR_INVALID);
    CHECK_OK(pf_stream_synchronize(s));
    /* None of the refused copies touched anything. */
    memset(h2, 0, n);
    CHECK_OK(pf_buffer_copy_async(s, hb2, 0, db, 0, n));
    CHECK_OK(pf_stream_synchronize(s));
    CHECK(memcmp(h2 + 600, h + 100, 300) == 0);
    CHECK(memcmp(h2 + 900, h + 900, 100) == 0);

    /* A device view shares the storage. */
    pf_buffer *view = NULL;
    CHECK_OK(pf_buffer_view(db, 600, 300, &view));
    memset(h2, 0, n);
    CHECK_OK(pf_buffer_copy_async(s, hb2, 0, view, 0, 300));
    CHECK_OK(pf_stream_synchronize(s));
    CHECK(memcmp(h2, h + 100, 300) == 0);
    CHECK_EQ_INT(pf_buffer_copy_async(s, hb2, 0, view, 1, 300), PF_ERR_INVALID);

    pf_buffer_unref(&view);
    pf_buffer_unref(&db);
    pf_buffer_unref(&hb);
    pf_buffer_unref(&hb2);
}

/* Last on purpose: a runtime refusal must come back as PF_ERR_DEVICE naming
 * the call, and the stream must stay usable. (If this runtime ever accepted
 * the pitch, the copy would fault and poison the context - hence last.) */
static void test_runtime_error_reported(void)
{
    unsigned char *d = dmalloc(4096);
    unsigned char h[64] = {0};
    pf_status st = pf_memcpy2d_async(s, d, (size_t)1 << 40, h, 32, 16, 2);
    CHECK(st < 0);
    CHECK(strstr(pf_last_error(), "cudaMemcpy2DAsync") != NULL);
    printf("  refused as expected: %s\n", pf_last_error());
    CHECK(cudaGetLastError() == cudaSuccess);
    CHECK_OK(pf_memset_async(s, d, 1, 4096));
    CHECK_OK(pf_stream_synchronize(s));
    cudaFree(d);
}

int main(void)
{
    dev = pf_test_cuda_device_or_skip();
    s = make_stream(dev, 0);
    if (!s) return 1;
    PF_RUN(test_roundtrip_sizes);
    PF_RUN(test_zero_bytes);
    PF_RUN(test_memcpy2d_pitched);
    PF_RUN(test_memset_ranges);
    PF_RUN(test_buffer_copy);
    PF_RUN(test_runtime_error_reported);
    pf_stream_destroy(&s);
    return pf_test_finish();
}
