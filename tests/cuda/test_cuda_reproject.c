/* 360° reprojection on CUDA against the C reference.
 *
 * Tolerance: none. The kernel and the reference evaluate the same float
 * formula (src/ops/reproject_math.h: only correctly rounded operations, no
 * FMA contraction, atan2 as a shared polynomial, per-view constants computed
 * once on the host), so every output byte must be equal; on a mismatch the
 * test prints how many bytes differ and the largest difference.
 *
 * Frames: sources uploaded from random host frames; destinations in device
 * memory with padded strides and odd offsets (so rows are not word-aligned
 * and the kernel's byte-store path runs), filled with a sentinel first and
 * downloaded whole, so a write outside a frame shows. */
#include "ops/reproject.h"
#include "../ops_test_util.h"
#include "reproject_util.h"

static pf_device *g_dev;
static pf_stream *g_s, *g_cpu_s;
static pf_allocator *g_alloc, *g_pinned;
static pf_ops *g_cuda, *g_ref;

/* A frame in `alloc`'s memory laid out exactly like rp_frame_make(fmt, w, h,
 * pad, offset) lays out its host frame, every byte set to RP_SENTINEL. */
static pf_status dev_frame_make(pf_frame *f, pf_allocator *alloc, pf_pixfmt fmt, int w, int h,
                                size_t pad, size_t offset)
{
    size_t stride = (size_t)w * (size_t)rp_bpp(fmt) + pad, size = offset + stride * (size_t)h;
    size_t strides[PF_FRAME_MAX_PLANES] = {stride, 0, 0};
    pf_buffer *b = NULL;
    pf_status st = pf_allocator_alloc(alloc, size, g_s, &b);
    if (st != PF_OK) return st;
    st = pf_memset_async(g_s, pf_buffer_data(b), RP_SENTINEL, size);
    memset(f, 0, sizeof *f);
    if (st == PF_OK) st = pf_frame_wrap(f, fmt, w, h, b, offset, strides);
    pf_buffer_unref(&b);
    return st;
}

/* Copies the whole buffer of a device frame into the buffer of a host frame
 * of the same layout, and waits. */
static pf_status download(pf_frame *host, const pf_frame *dev)
{
    pf_status st = pf_memcpy_async(g_s, pf_buffer_data(host->buf[0]), pf_buffer_data(dev->buf[0]),
                                   pf_buffer_size(dev->buf[0]));
    return st == PF_OK ? pf_stream_synchronize(g_s) : st;
}

/* A host source frame and its device copy with the same layout. */
static pf_status make_src(pf_frame *host, pf_frame *dev, pf_allocator *alloc, pf_pixfmt fmt,
                          int w, int h, size_t pad, size_t offset)
{
    pf_status st = rp_frame_make(host, fmt, w, h, pad, offset);
    if (st != PF_OK) return st;
    rp_fill_random(host);
    st = dev_frame_make(dev, alloc, fmt, w, h, pad, offset);
    if (st != PF_OK) return st;
    st = pf_memcpy_async(g_s, pf_buffer_data(dev->buf[0]), pf_buffer_data(host->buf[0]),
                         pf_buffer_size(host->buf[0]));
    return st == PF_OK ? pf_stream_synchronize(g_s) : st;
}

/* n views of src: reference on the host, kernel on the device, compared
 * byte for byte, padding of the device outputs checked. */
static void compare_views(const pf_frame *hsrc, const pf_frame *dsrc, const pf_view *views, int n,
                          pf_interp interp, const char *what)
{
    pf_frame ref[64], dev[64], back[64];
    pf_frame *pr[64], *pd[64];
    int made = 0;
    pf_status st = PF_OK;
    for (; made < n && st == PF_OK; made++) {
        size_t pad = (size_t)(pf_test_rand() % 3 ? pf_test_rand_range(0, 9) : 0);
        size_t off = (size_t)(pf_test_rand() % 2 ? pf_test_rand_range(0, 7) : 0);
        const pf_view *v = &views[made];
        st = rp_frame_make(&ref[made], hsrc->format, v->width, v->height, 0, 0);
        if (st == PF_OK)
            st = dev_frame_make(&dev[made], g_alloc, hsrc->format, v->width, v->height, pad, off);
        if (st == PF_OK)
            st = rp_frame_make(&back[made], hsrc->format, v->width, v->height, pad, off);
        pr[made] = &ref[made];
        pd[made] = &dev[made];
    }
    CHECK_OK(st);
    if (st == PF_OK) {
        CHECK_OK(pf_ops_equirect_to_views(g_ref, hsrc, views, pr, n, interp));
        CHECK_OK(pf_ops_equirect_to_views(g_cuda, dsrc, views, pd, n, interp));
        CHECK_OK(pf_stream_synchronize(g_s));
        for (int i = 0; i < n; i++) {
            CHECK_OK(download(&back[i], &dev[i]));
            if (!rp_frames_equal(&ref[i], &back[i], what)) {
                CHECK(!"CUDA output equals the reference");
                fprintf(stderr,
                        "  view %d of %d: yaw %g pitch %g roll %g fov %g %dx%d, src %dx%d %s, %s\n",
                        i, n, (double)views[i].yaw, (double)views[i].pitch, (double)views[i].roll,
                        (double)views[i].fov, views[i].width, views[i].height, hsrc->width,
                        hsrc->height, pf_pixfmt_name(hsrc->format),
                        interp == PF_INTERP_NEAREST ? "nearest" : "bilinear");
            }
            CHECK(rp_padding_intact(&back[i]));
        }
    }
    for (int i = 0; i < made; i++) {
        pf_frame_unref(&ref[i]);
        pf_frame_unref(&dev[i]);
        pf_frame_unref(&back[i]);
    }
}

static void test_random_views(void)
{
    static const int src_sizes[][2] = {{1, 1}, {2, 1}, {1, 2}, {3, 5}, {64, 32}, {129, 65},
                                       {513, 255}, {1000, 500}};
    const int nsizes = (int)(sizeof src_sizes / sizeof src_sizes[0]);
    for (int iter = 0; iter < 96; iter++) {
        pf_pixfmt fmt = rp_formats[iter % RP_NFMT];
        pf_interp interp = (iter / RP_NFMT) % 2 ? PF_INTERP_BILINEAR : PF_INTERP_NEAREST;
        int sw, sh;
        if (iter % 3 == 0) {
            sw = src_sizes[(iter / 3) % nsizes][0];
            sh = src_sizes[(iter / 3) % nsizes][1];
        } else {
            sw = (int)pf_test_rand_range(1, 800);
            sh = (int)pf_test_rand_range(1, 400);
        }
        size_t pad = (size_t)pf_test_rand_range(0, 13), off = (size_t)pf_test_rand_range(0, 5);
        pf_frame hsrc, dsrc;
        RP_REQUIRE_OK(make_src(&hsrc, &dsrc, g_alloc, fmt, sw, sh, pad, off));
        int n = (int)pf_test_rand_range(1, 6);
        pf_view views[8];
        for (int i = 0; i < n; i++) views[i] = rp_random_view(300, 200);
        compare_views(&hsrc, &dsrc, views, n, interp, "random");
        pf_frame_unref(&dsrc);
        pf_frame_unref(&hsrc);
    }
}

/* 64 views of mixed sizes in one launch (blocks past a small view's size
 * exit), and a larger source with bigger views. */
static void test_many_views_and_large(void)
{
    pf_frame hsrc, dsrc;
    RP_REQUIRE_OK(make_src(&hsrc, &dsrc, g_alloc, PF_PIXFMT_RGB24, 640, 320, 0, 0));
    pf_view views[64];
    for (int i = 0; i < 64; i++) views[i] = rp_random_view(150, 90);
    compare_views(&hsrc, &dsrc, views, 64, PF_INTERP_BILINEAR, "64 views");
    compare_views(&hsrc, &dsrc, views, 64, PF_INTERP_NEAREST, "64 views");
    pf_frame_unref(&dsrc);
    pf_frame_unref(&hsrc);

    for (int f = 0; f < RP_NFMT; f++) {
        RP_REQUIRE_OK(make_src(&hsrc, &dsrc, g_alloc, rp_formats[f], 2048, 1024, 0, 0));
        pf_view big[3] = {
            {.yaw = 0, .pitch = 0, .roll = 0, .fov = 90, .width = 640, .height = 480},
            {.yaw = 179.5f, .pitch = 30, .roll = 10, .fov = 120, .width = 641, .height = 361},
            {.yaw = -45, .pitch = -89, .roll = 0, .fov = 60, .width = 333, .height = 500}};
        pf_interp interp = f % 2 ? PF_INTERP_NEAREST : PF_INTERP_BILINEAR;
        compare_views(&hsrc, &dsrc, big, 3, interp, "large");
        pf_frame_unref(&dsrc);
        pf_frame_unref(&hsrc);
    }
}

static void test_cubemaps(void)
{
    for (int k = 0; k < 8; k++) {
        pf_pixfmt fmt = rp_formats[k % RP_NFMT];
        pf_cube_layout layout = k % 2 ? PF_CUBE_1X6 : PF_CUBE_3X2;
        pf_interp interp = (k / 2) % 2 ? PF_INTERP_NEAREST : PF_INTERP_BILINEAR;
        int S = k == 7 ? 1 : (int)pf_test_rand_range(2, 300);
        int cols = layout == PF_CUBE_3X2 ? 3 : 1, rows = 6 / cols;
        size_t pad = (size_t)pf_test_rand_range(0, 5), off = (size_t)pf_test_rand_range(0, 3);
        pf_frame hsrc, dsrc, ref, dev, back;
        RP_REQUIRE_OK(make_src(&hsrc, &dsrc, g_alloc, fmt, 1200, 600, 0, 0));
        RP_REQUIRE_OK(rp_frame_make(&ref, fmt, cols * S, rows * S, 0, 0));
        RP_REQUIRE_OK(dev_frame_make(&dev, g_alloc, fmt, cols * S, rows * S, pad, off));
        RP_REQUIRE_OK(rp_frame_make(&back, fmt, cols * S, rows * S, pad, off));
        CHECK_OK(pf_ops_equirect_to_cubemap(g_ref, &hsrc, &ref, S, layout, interp));
        CHECK_OK(pf_ops_equirect_to_cubemap(g_cuda, &dsrc, &dev, S, layout, interp));
        CHECK_OK(download(&back, &dev));
        CHECK(rp_frames_equal(&ref, &back, layout == PF_CUBE_3X2 ? "cube 3x2" : "cube 1x6"));
        CHECK(rp_padding_intact(&back));
        pf_frame_unref(&back);
        pf_frame_unref(&dev);
        pf_frame_unref(&ref);
        pf_frame_unref(&dsrc);
        pf_frame_unref(&hsrc);
    }
}

/* Pinned host memory is readable by kernels: a pinned source works. */
static void test_pinned_source(void)
{
    pf_frame hsrc, psrc;
    RP_REQUIRE_OK(make_src(&hsrc, &psrc, g_pinned, PF_PIXFMT_RGBA, 300, 150, 4, 0));
    pf_view v[2] = {{.yaw = 30, .pitch = 10, .roll = 0, .fov = 100, .width = 130, .height = 70},
                    {.yaw = -150, .pitch = -40, .roll = 20, .fov = 70, .width = 61, .height = 33}};
    compare_views(&hsrc, &psrc, v, 2, PF_INTERP_BILINEAR, "pinned source");
    pf_frame_unref(&psrc);
    pf_frame_unref(&hsrc);
}

typedef struct graph_work {
    const pf_frame *src;
    const pf_view *views;
    pf_frame *const *dsts;
    int n;
} graph_work;

static pf_status graph_fn(void *user, pf_stream *s)
{
    (void)s;
    graph_work *w = user;
    return pf_ops_equirect_to_views(g_cuda, w->src, w->views, w->dsts, w->n, PF_INTERP_BILINEAR);
}

/* The launch takes its parameters by value, so it can be captured in a CUDA
 * graph and replayed (replays see a changed source). */
static void test_graph_capture(void)
{
    pf_frame hsrc, dsrc, ref, dev, back;
    RP_REQUIRE_OK(make_src(&hsrc, &dsrc, g_alloc, PF_PIXFMT_RGB24, 400, 200, 0, 0));
    pf_view v = {.yaw = 77, .pitch = 12, .roll = -8, .fov = 95, .width = 160, .height = 90};
    RP_REQUIRE_OK(rp_frame_make(&ref, PF_PIXFMT_RGB24, 160, 90, 0, 0));
    RP_REQUIRE_OK(dev_frame_make(&dev, g_alloc, PF_PIXFMT_RGB24, 160, 90, 0, 0));
    RP_REQUIRE_OK(rp_frame_make(&back, PF_PIXFMT_RGB24, 160, 90, 0, 0));
    pf_graph_cache *gc = NULL;
    CHECK_OK(pf_graph_cache_create(NULL, &gc));
    pf_frame *pd = &dev, *pr = &ref;
    graph_work w = {&dsrc, &v, &pd, 1};
    const char key[] = "reproject";
    for (int run = 0; run < 3; run++) {
        if (run == 2) { /* new source contents, same addresses */
            rp_fill_random(&hsrc);
            CHECK_OK(pf_memcpy_async(g_s, pf_buffer_data(dsrc.buf[0]), pf_buffer_data(hsrc.buf[0]),
                                     pf_buffer_size(hsrc.buf[0])));
        }
        CHECK_OK(pf_graph_cache_run(gc, g_s, key, sizeof key, graph_fn, &w));
        CHECK_OK(pf_ops_equirect_to_views(g_ref, &hsrc, &v, &pr, 1, PF_INTERP_BILINEAR));
        CHECK_OK(download(&back, &dev));
        CHECK(rp_frames_equal(&ref, &back, "graph replay"));
    }
    pf_graph_cache_stats gs = pf_test_graph_cache_stats(gc);
    CHECK(gs.captures + gs.direct_runs >= 1);
    printf("     graph: %llu captures, %llu replays, %llu direct runs\n",
           (unsigned long long)gs.captures, (unsigned long long)gs.replays,
           (unsigned long long)gs.direct_runs);
    pf_graph_cache_destroy(&gc);
    pf_frame_unref(&back);
    pf_frame_unref(&dev);
    pf_frame_unref(&ref);
    pf_frame_unref(&dsrc);
    pf_frame_unref(&hsrc);
}

static void test_reachability(void)
{
    pf_frame hsrc, dsrc, hdst, ddst;
    RP_REQUIRE_OK(make_src(&hsrc, &dsrc, g_alloc, PF_PIXFMT_RGB24, 64, 32, 0, 0));
    RP_REQUIRE_OK(rp_frame_make(&hdst, PF_PIXFMT_RGB24, 16, 8, 0, 0));
    RP_REQUIRE_OK(dev_frame_make(&ddst, g_alloc, PF_PIXFMT_RGB24, 16, 8, 0, 0));
    pf_view v = {.yaw = 0, .pitch = 0, .roll = 0, .fov = 90, .width = 16, .height = 8};
    pf_frame *ph = &hdst, *pd = &ddst;
    const pf_interp B = PF_INTERP_BILINEAR;
    char spec[64];
    snprintf(spec, sizeof spec, "device memory of %s", pf_device_spec(g_dev));

    CHECK_OK(pf_ops_equirect_to_views(g_cuda, &dsrc, &v, &pd, 1, B));
    EXPECT_ERR(pf_ops_equirect_to_views(g_cuda, &hsrc, &v, &pd, 1, B), PF_ERR_UNSUPPORTED,
               "src is pageable host memory");
    EXPECT_ERR(pf_ops_equirect_to_views(g_cuda, &dsrc, &v, &ph, 1, B), PF_ERR_UNSUPPORTED,
               "dsts[0] is pageable host memory");
    /* Heap memory merely labelled pinned (owned by the CPU device) is not
     * page-locked: kernels must refuse it like any pageable memory. */
    {
        pf_buffer *fake = NULL;
        CHECK_OK(pf_buffer_wrap(hdst.data[0], hdst.stride[0] * 8, PF_MEM_PINNED, NULL, NULL, NULL,
                                &fake));
        pf_frame fp;
        memset(&fp, 0, sizeof fp);
        CHECK_OK(pf_frame_wrap(&fp, PF_PIXFMT_RGB24, 16, 8, fake, 0, hdst.stride));
        pf_frame *pp = &fp;
        EXPECT_ERR(pf_ops_equirect_to_views(g_cuda, &dsrc, &v, &pp, 1, B), PF_ERR_UNSUPPORTED,
                   "dsts[0] is pinned memory of cpu");
        pf_frame_unref(&fp);
        pf_buffer_unref(&fake);
    }
    EXPECT_ERR(pf_ops_equirect_to_views(g_ref, &dsrc, &v, &ph, 1, B), PF_ERR_UNSUPPORTED, spec);
    EXPECT_ERR(pf_ops_equirect_to_views(g_ref, &hsrc, &v, &pd, 1, B), PF_ERR_UNSUPPORTED, spec);
    /* `reference` is ignored on CUDA: the kernel runs (on device memory). */
    pf_ops *refcuda = otu_make_ops(g_s, 1, NULL);
    if (refcuda) {
        pf_frame ref, back;
        RP_REQUIRE_OK(rp_frame_make(&ref, PF_PIXFMT_RGB24, 16, 8, 0, 0));
        RP_REQUIRE_OK(rp_frame_make(&back, PF_PIXFMT_RGB24, 16, 8, 0, 0));
        pf_frame *pr = &ref;
        CHECK_OK(pf_ops_equirect_to_views(refcuda, &dsrc, &v, &pd, 1, B));
        CHECK_OK(pf_ops_equirect_to_views(g_ref, &hsrc, &v, &pr, 1, B));
        CHECK_OK(download(&back, &ddst));
        CHECK(rp_frames_equal(&ref, &back, "reference flag on CUDA"));
        pf_frame_unref(&back);
        pf_frame_unref(&ref);
        pf_ops_destroy(&refcuda);
    }
    /* Device memory of a second GPU, where there is one. */
    pf_device *other = NULL;
    if (pf_device_count(PF_DEVICE_CUDA) > 1 && pf_device_get(PF_DEVICE_CUDA, 1, &other) == PF_OK) {
        pf_allocator *a1 = pf_test_allocator_create(other, "rp-gpu1", PF_MEM_DEVICE, 0);
        pf_buffer *b = NULL;
        if (a1 && pf_allocator_alloc(a1, 16 * 8 * 3, NULL, &b) == PF_OK) {
            pf_frame f1;
            memset(&f1, 0, sizeof f1);
            CHECK_OK(pf_frame_wrap(&f1, PF_PIXFMT_RGB24, 16, 8, b, 0, NULL));
            pf_frame *p1 = &f1;
            EXPECT_ERR(pf_ops_equirect_to_views(g_cuda, &dsrc, &v, &p1, 1, B), PF_ERR_UNSUPPORTED,
                       "not reachable from a stream of");
            pf_frame_unref(&f1);
            pf_buffer_unref(&b);
        }
        pf_allocator_destroy(&a1);
    }
    CHECK_OK(pf_stream_synchronize(g_s));
    pf_frame_unref(&ddst);
    pf_frame_unref(&hdst);
    pf_frame_unref(&dsrc);
    pf_frame_unref(&hsrc);
}

int main(void)
{
    if (otu_cuda_setup(0xC0BE360, "rp", &g_dev, &g_s, &g_cpu_s, &g_alloc, &g_pinned) != 0)
        return 1;
    g_cuda = otu_make_ops(g_s, 0, NULL);
    g_ref = otu_make_ops(g_cpu_s, 1, NULL);
    if (!g_cuda || !g_ref) return 1;

    PF_RUN(test_random_views);
    PF_RUN(test_many_views_and_large);
    PF_RUN(test_cubemaps);
    PF_RUN(test_pinned_source);
    PF_RUN(test_graph_capture);
    PF_RUN(test_reachability);

    pf_ops_destroy(&g_ref);
    pf_ops_destroy(&g_cuda);
    otu_cuda_teardown(&g_s, &g_cpu_s, &g_alloc, &g_pinned);
    return pf_test_finish();
}
