/* pf_frame: geometry of every format, alloc/wrap/ref/unref, copies. */
#include "pf_test.h"

static const pf_pixfmt all_formats[] = {PF_PIXFMT_RGB24, PF_PIXFMT_BGR24, PF_PIXFMT_RGBA,
                                        PF_PIXFMT_GRAY8, PF_PIXFMT_NV12, PF_PIXFMT_I420};
#define NFMT (int)(sizeof all_formats / sizeof all_formats[0])

static void test_names(void)
{
    for (int i = 0; i < NFMT; i++) {
        pf_pixfmt f;
        CHECK_OK(pf_pixfmt_parse(pf_pixfmt_name(all_formats[i]), &f));
        CHECK(f == all_formats[i]);
    }
    pf_pixfmt f;
    CHECK(pf_pixfmt_parse("yuv444", &f) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "'yuv444'") != NULL);
    CHECK_EQ_INT(pf_pixfmt_num_planes(PF_PIXFMT_NV12), 2);
    CHECK_EQ_INT(pf_pixfmt_num_planes(PF_PIXFMT_I420), 3);
    CHECK_EQ_INT(pf_pixfmt_num_planes(PF_PIXFMT_NONE), 0);
}

/* Plane sizes written out by hand for an odd size. */
static void test_plane_sizes(void)
{
    size_t row, rows;
    CHECK_OK(pf_pixfmt_plane_size(PF_PIXFMT_RGB24, 5, 3, 0, &row, &rows));
    CHECK(row == 15 && rows == 3);
    CHECK_OK(pf_pixfmt_plane_size(PF_PIXFMT_RGBA, 5, 3, 0, &row, &rows));
    CHECK(row == 20 && rows == 3);
    CHECK_OK(pf_pixfmt_plane_size(PF_PIXFMT_NV12, 5, 3, 1, &row, &rows));
    CHECK(row == 6 && rows == 2); /* 3 UV pairs x 2 rows */
    CHECK_OK(pf_pixfmt_plane_size(PF_PIXFMT_I420, 5, 3, 2, &row, &rows));
    CHECK(row == 3 && rows == 2);
    CHECK_OK(pf_pixfmt_plane_size(PF_PIXFMT_I420, 1, 1, 1, &row, &rows));
    CHECK(row == 1 && rows == 1);
    CHECK(pf_pixfmt_plane_size(PF_PIXFMT_NV12, 4, 4, 2, &row, &rows) == PF_ERR_INVALID);
    CHECK(pf_pixfmt_plane_size(PF_PIXFMT_RGB24, 0, 4, 0, &row, &rows) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "0x4") != NULL);
    CHECK(pf_pixfmt_plane_size(PF_PIXFMT_RGB24, 4, PF_FRAME_MAX_DIM + 1, 0, &row, &rows) ==
          PF_ERR_INVALID);
}

static void test_layout(void)
{
    size_t s[3], o[3], total;
    CHECK_OK(pf_frame_layout(PF_PIXFMT_I420, 1920, 1080, 1, s, o, &total));
    CHECK_EQ_INT(total, 1920 * 1080 * 3 / 2);
    CHECK(s[0] == 1920 && s[1] == 960 && s[2] == 960);
    CHECK(o[1] == 1920 * 1080 && o[2] == 1920 * 1080 + 960 * 540);
    CHECK_OK(pf_frame_layout(PF_PIXFMT_NV12, 33, 17, 64, s, o, &total));
    CHECK(s[0] == 64 && s[1] == 64 && o[1] == 64 * 17);
    CHECK(o[1] % 64 == 0);
    CHECK_EQ_INT(total, o[1] + 64 * 9);
    CHECK(pf_frame_layout(PF_PIXFMT_RGB24, 4, 4, 3, s, o, &total) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "power of two") != NULL);
}

static void fill_frame(pf_frame *f, uint8_t seed)
{
    for (int p = 0; p < f->num_planes; p++) {
        size_t row, rows;
        pf_pixfmt_plane_size(f->format, f->width, f->height, p, &row, &rows);
        for (size_t y = 0; y < rows; y++)
            for (size_t x = 0; x < row; x++)
                f->data[p][y * f->stride[p] + x] = (uint8_t)(seed + p * 31 + y * 7 + x);
    }
}

static int frames_equal(const pf_frame *a, const pf_frame *b)
{
    for (int p = 0; p < a->num_planes; p++) {
        size_t row, rows;
        pf_pixfmt_plane_size(a->format, a->width, a->height, p, &row, &rows);
        for (size_t y = 0; y < rows; y++)
            if (memcmp(a->data[p] + y * a->stride[p], b->data[p] + y * b->stride[p], row)) return 0;
    }
    return 1;
}

/* Every format at random and edge sizes: alloc, fill, copy, compare. */
static void test_alloc_copy_all_formats(void)
{
    pf_stream *s = NULL;
    CHECK_OK(pf_stream_create(NULL, &s));
    int sizes[][2] = {{1, 1}, {1, 7}, {7, 1}, {2, 2}, {3, 5}, {1920, 1080}, {33, 17}};
    for (int i = 0; i < NFMT; i++) {
        for (int k = 0; k < 7 + 5; k++) {
            int w = k < 7 ? sizes[k][0] : (int)pf_test_rand_range(1, 300);
            int h = k < 7 ? sizes[k][1] : (int)pf_test_rand_range(1, 300);
            pf_frame a = {0}, b = {0};
            CHECK_OK(pf_frame_alloc(&a, all_formats[i], w, h, NULL, NULL));
            CHECK_OK(pf_frame_alloc(&b, all_formats[i], w, h, NULL, NULL));
            REQUIRE(a.buf[0] && b.buf[0]);
            CHECK(a.pts == PF_NOPTS);
            for (int p = 0; p < a.num_planes; p++) {
                CHECK(a.stride[p] % 64 == 0);
                CHECK(((uintptr_t)a.data[p]) % 64 == 0);
                CHECK(a.buf[p] == a.buf[0]);
            }
            CHECK_EQ_INT(pf_buffer_refcount(a.buf[0]), a.num_planes);
            fill_frame(&a, (uint8_t)k);
            CHECK_OK(pf_frame_copy_async(&b, &a, s));
            CHECK(frames_equal(&a, &b));
            pf_frame_unref(&a);
            pf_frame_unref(&b);
            CHECK(a.buf[0] == NULL && a.format == PF_PIXFMT_NONE);
        }
    }
    pf_stream_destroy(&s);
}

static void test_wrap(void)
{
    pf_buffer *buf = NULL;
    /* 4x2 NV12 with strides 8 (Y) and 6 (UV): Y needs 8+4, UV 4 bytes at 16. */
    CHECK_OK(pf_buffer_alloc_host(100, &buf));
    size_t strides[3] = {8, 6, 0};
    pf_frame f = {0};
    CHECK_OK(pf_frame_wrap(&f, PF_PIXFMT_NV12, 4, 2, buf, 10, strides));
    CHECK(f.data[0] == (uint8_t *)pf_buffer_data(buf) + 10);
    CHECK(f.data[1] == (uint8_t *)pf_buffer_data(buf) + 26);
    CHECK_EQ_INT(pf_buffer_refcount(buf), 3);
    pf_frame g = {0};
    pf_frame_ref(&g, &f);
    CHECK_EQ_INT(pf_buffer_refcount(buf), 5);
    pf_frame_unref(&f);
    pf_frame_unref(&g);
    CHECK_EQ_INT(pf_buffer_refcount(buf), 1);

    /* packed 3x3 RGB24 needs exactly 27 bytes */
    pf_buffer *small = NULL;
    CHECK_OK(pf_buffer_view(buf, 0, 27, &small));
    CHECK_OK(pf_frame_wrap(&f, PF_PIXFMT_RGB24, 3, 3, small, 0, NULL));
    pf_frame_unref(&f);
    CHECK(pf_frame_wrap(&f, PF_PIXFMT_RGB24, 3, 3, small, 1, NULL) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "buffer has 27") != NULL);
    size_t bad[3] = {8, 0, 0}; /* stride smaller than a row */
    CHECK(pf_frame_wrap(&f, PF_PIXFMT_RGB24, 3, 3, small, 0, bad) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "stride 8 < row of 9") != NULL);
    CHECK(pf_frame_wrap(&f, PF_PIXFMT_I420, 0, 3, small, 0, NULL) == PF_ERR_INVALID);
    CHECK_EQ_INT(pf_buffer_refcount(small), 1); /* failures take no reference */
    pf_buffer_unref(&small);
    pf_buffer_unref(&buf);
}

static void test_metadata_ref(void)
{
    pf_frame f = {0}, g = {0};
    CHECK_OK(pf_frame_alloc(&f, PF_PIXFMT_GRAY8, 8, 8, NULL, NULL));
    CHECK_OK(pf_buffer_alloc_host(16, &f.meta));
    f.pts = 1234;
    f.time_base = (pf_rational){1, 90000};
    f.index = 7;
    f.source = 3;
    pf_frame_ref(&g, &f);
    CHECK(g.pts == 1234 && g.time_base.den == 90000 && g.index == 7 && g.source == 3);
    CHECK(g.meta == f.meta);
    CHECK_EQ_INT(pf_buffer_refcount(f.meta), 2);
    pf_frame_unref(&f);
    CHECK_EQ_INT(pf_buffer_refcount(g.meta), 1);
    pf_frame_unref(&g);
    pf_frame_unref(&g); /* unref of a zeroed frame is fine */
}

static void test_copy_mismatch(void)
{
    pf_stream *s = NULL;
    CHECK_OK(pf_stream_create(NULL, &s));
    pf_frame a = {0}, b = {0};
    CHECK_OK(pf_frame_alloc(&a, PF_PIXFMT_RGB24, 8, 8, NULL, NULL));
    CHECK_OK(pf_frame_alloc(&b, PF_PIXFMT_RGB24, 8, 9, NULL, NULL));
    CHECK(pf_frame_copy_async(&b, &a, s) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "8x9 rgb24") != NULL);
    pf_frame_unref(&a);
    pf_frame_unref(&b);
    pf_stream_destroy(&s);
}

/* Frames from a pool: strides aligned to 256 and memory in the pool's domain. */
static void test_alloc_from_pool(void)
{
    pf_allocator_params ap = pf_allocator_params_default();
    ap.name = "frames";
    pf_allocator *a = NULL;
    CHECK_OK(pf_allocator_create(&ap, &a));
    pf_frame f = {0};
    CHECK_OK(pf_frame_alloc(&f, PF_PIXFMT_I420, 101, 57, a, NULL));
    for (int p = 0; p < 3; p++) CHECK(f.stride[p] % 256 == 0 && (uintptr_t)f.data[p] % 256 == 0);
    CHECK(pf_frame_domain(&f) == PF_MEM_DEVICE);
    pf_frame_unref(&f);
    pf_allocator_destroy(&a);
}

static void test_rational_reduce(void)
{
    pf_rational q = pf_rational_reduce(48000, 2002);
    CHECK_EQ_INT(q.num, 24000);
    CHECK_EQ_INT(q.den, 1001);
    q = pf_rational_reduce(0, 5);
    CHECK_EQ_INT(q.num, 0);
    CHECK_EQ_INT(q.den, 1);
    q = pf_rational_reduce(1, 0);
    CHECK(q.num == 0 && q.den == 0);
    q = pf_rational_reduce(-1, 2);
    CHECK(q.num == 0 && q.den == 0);
    q = pf_rational_reduce((int64_t)1 << 40, 3); /* does not fit 32 bits */
    CHECK(q.num == 0 && q.den == 0);
    q = pf_rational_reduce((int64_t)3 << 40, (int64_t)1 << 40);
    CHECK_EQ_INT(q.num, 3);
    CHECK_EQ_INT(q.den, 1);
}

int main(void)
{
    pf_test_seed(1);
    PF_RUN(test_names);
    PF_RUN(test_rational_reduce);
    PF_RUN(test_plane_sizes);
    PF_RUN(test_layout);
    PF_RUN(test_alloc_copy_all_formats);
    PF_RUN(test_wrap);
    PF_RUN(test_metadata_ref);
    PF_RUN(test_copy_mismatch);
    PF_RUN(test_alloc_from_pool);
    return pf_test_finish();
}
