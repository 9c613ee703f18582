/* pf_ops_resize and pf_ops_resize_mask on CUDA against the C reference (run
 * on the CPU) on the same bytes: every format and interpolation at random
 * sizes (1x1, odd, padded strides, unaligned starts: device frames keep the
 * host layout), extreme factors (1920 -> 1, 1 -> 1920, 7680 -> 3), the
 * benchmark's 1080p -> 512x512 shapes, sizes spanning many thread blocks,
 * pinned-memory frames, masks of several leading shapes (and more planes
 * than one grid holds), a CUDA-graph capture and replay, and memory a CUDA
 * context cannot reach.
 *
 * Tolerance: none, for u8 and for f32. The kernel evaluates resize.h's taps,
 * weights and sums in the reference's order with __f*_rn intrinsics (no FMA
 * contraction), so any difference is a bug, not rounding noise. */
#include "cuda_test_util.h"
#include "../ops_test_util.h"

static pf_device *g_dev;
static pf_stream *g_cs, *g_hs;
static pf_allocator *g_dalloc, *g_palloc;

static const pf_pixfmt k_formats[] = {PF_PIXFMT_RGB24, PF_PIXFMT_BGR24, PF_PIXFMT_RGBA,
                                      PF_PIXFMT_GRAY8, PF_PIXFMT_NV12, PF_PIXFMT_I420};
#define NFMT 6

static void compare(pf_ops *ref, pf_ops *cuda, const pf_frame *src, int dw, int dh,
                    pf_interp interp, pf_allocator *alloc, const char *label)
{
    pf_frame hd = {0}, ds = {0}, dd = {0};
    const size_t offset = (size_t)pf_test_rand_range(0, 3);
    CHECK_OK(otu_make_frame(&hd, src->format, dw, dh, 5, offset, OTU_RANDOM_WORDS));
    CHECK_OK(otu_upload_frame(src, alloc, g_cs, &ds));
    CHECK_OK(otu_upload_frame(&hd, alloc, g_cs, &dd));
    if (ds.data[0] && dd.data[0]) {
        CHECK_OK(pf_ops_resize(ref, src, &hd, interp));
        pf_status st = pf_ops_resize(cuda, &ds, &dd, interp);
        CHECK_OK(st);
        if (st == PF_OK &&
            !otu_same_as_host(g_cs, &dd, &hd, label)) {
            fprintf(stderr, "  %s: %s %dx%d -> %dx%d interp %d\n", label,
                    pf_pixfmt_name(src->format), src->width, src->height, dw, dh, (int)interp);
            CHECK(!"bit-exact");
        }
    }
    CHECK_OK(pf_stream_synchronize(g_cs));
    pf_frame_unref(&ds);
    pf_frame_unref(&dd);
    pf_frame_unref(&hd);
}

static void test_random(void)
{
    pf_ops *ref = otu_make_ops(g_hs, 1, NULL), *cuda = otu_make_ops(g_cs, 0, NULL);
    REQUIRE(ref && cuda);
    for (int it = 0; it < 40; it++) {
        int sw = (int)pf_test_rand_range(1, 80), sh = (int)pf_test_rand_range(1, 50);
        int dw = (int)pf_test_rand_range(1, 80), dh = (int)pf_test_rand_range(1, 50);
        if (it < 3) sw = sh = 1;
        if (it >= 3 && it < 6) dw = dh = 1;
        if (it >= 36) dw = (int)pf_test_rand_range(100, 600), dh = (int)pf_test_rand_range(9, 90);
        for (int f = 0; f < NFMT; f++) {
            pf_frame src = {0};
            const size_t offset = (size_t)(it % 5);
            CHECK_OK(otu_make_frame(&src, k_formats[f], sw, sh, 6, offset, OTU_RANDOM_WORDS));
            for (int interp = 0; interp < 3; interp++) {
                char label[32];
                snprintf(label, sizeof label, "case %d", it);
                compare(ref, cuda, &src, dw, dh, (pf_interp)interp, g_dalloc, label);
            }
            pf_frame_unref(&src);
        }
    }
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cuda);
}

static void test_shapes(void)
{
    pf_ops *ref = otu_make_ops(g_hs, 1, NULL), *cuda = otu_make_ops(g_cs, 0, NULL);
    REQUIRE(ref && cuda);
    const struct {
        int sw, sh, dw, dh;
    } shapes[] = {{1920, 2, 1, 1}, {1, 1, 1920, 3}, {7680, 4, 3, 2}, {3, 7680, 2, 3},
                  {257, 129, 1023, 33}, {600, 400, 201, 133}, {97, 61, 97, 61}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int f = 0; f < NFMT; f++) {
            pf_frame src = {0};
            const int sw = shapes[s].sw, sh = shapes[s].sh;
            CHECK_OK(otu_make_frame(&src, k_formats[f], sw, sh, 4, 1, OTU_RANDOM_WORDS));
            for (int interp = 0; interp < 3; interp++) {
                char label[32];
                snprintf(label, sizeof label, "shape %zu", s);
                compare(ref, cuda, &src, shapes[s].dw, shapes[s].dh, (pf_interp)interp,
                        (s & 1) ? g_palloc : g_dalloc, label);
            }
            pf_frame_unref(&src);
        }
    const pf_pixfmt big[] = {PF_PIXFMT_RGB24, PF_PIXFMT_NV12, PF_PIXFMT_RGBA};
    for (int f = 0; f < 3; f++) {
        pf_frame src = {0};
        CHECK_OK(otu_make_frame(&src, big[f], 1920, 1080, 0, 0, OTU_RANDOM_WORDS));
        compare(ref, cuda, &src, 512, 512, PF_INTERP_BILINEAR, g_dalloc, "1080p bilinear");
        compare(ref, cuda, &src, 512, 512, PF_INTERP_AREA, g_dalloc, "1080p area");
        compare(ref, cuda, &src, 512, 512, PF_INTERP_NEAREST, g_dalloc, "1080p nearest");
        pf_frame_unref(&src);
    }
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cuda);
}

static pf_status make_mask(pf_tensor *t, int ndim, const int64_t *shape, pf_allocator *alloc)
{
    memset(t, 0, sizeof *t);
    pf_status st = pf_tensor_alloc(t, PF_DTYPE_F32, ndim, shape,
                                   ndim == 4 ? PF_LAYOUT_NCHW : PF_LAYOUT_NONE, alloc,
                                   alloc ? g_cs : NULL);
    if (st != PF_OK || alloc) return st;
    float *d = t->data;
    for (int64_t i = 0; i < pf_tensor_numel(t); i++)
        d[i] = -8.0f + 9.0f * (float)(pf_test_rand() % 1000001) / 1000000.0f;
    return PF_OK;
}

static void test_masks(void)
{
    pf_ops *ref = otu_make_ops(g_hs, 1, NULL), *cuda = otu_make_ops(g_cs, 0, NULL);
    REQUIRE(ref && cuda);
    for (int it = 0; it < 31; it++) {
        int ndim = 2 + it % 3;
        int64_t ss[4], ds[4];
        for (int d = 0; d < ndim - 2; d++) ss[d] = ds[d] = pf_test_rand_range(1, 3);
        ss[ndim - 2] = pf_test_rand_range(1, 300);
        ss[ndim - 1] = pf_test_rand_range(1, 300);
        ds[ndim - 2] = pf_test_rand_range(1, 300);
        ds[ndim - 1] = pf_test_rand_range(1, 300);
        if (it == 30) { /* more planes than gridDim.z takes: the kernel loops */
            ndim = 3;
            ss[0] = ds[0] = 70001;
            ss[1] = 3, ss[2] = 2, ds[1] = 2, ds[2] = 5;
        }
        pf_tensor hs, hd, dsrc, ddst;
        CHECK_OK(make_mask(&hs, ndim, ss, NULL));
        CHECK_OK(make_mask(&hd, ndim, ds, NULL));
        CHECK_OK(make_mask(&dsrc, ndim, ss, g_dalloc));
        CHECK_OK(make_mask(&ddst, ndim, ds, g_dalloc));
        CHECK_OK(pf_memcpy_async(g_cs, dsrc.data, hs.data, pf_tensor_nbytes(&hs)));
        for (int interp = 0; interp < 3; interp++) {
            CHECK_OK(pf_ops_resize_mask(ref, &hs, &hd, (pf_interp)interp));
            CHECK_OK(pf_ops_resize_mask(cuda, &dsrc, &ddst, (pf_interp)interp));
            char label[48];
            snprintf(label, sizeof label, "mask case %d interp %d", it, interp);
            CHECK(otu_device_equal(g_cs, ddst.data, hd.data, pf_tensor_nbytes(&hd), NULL, label));
        }
        pf_tensor_unref(&hs);
        pf_tensor_unref(&hd);
        pf_tensor_unref(&dsrc);
        pf_tensor_unref(&ddst);
    }
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cuda);
}

static pf_status resize_area(pf_ops *ops, const pf_frame *src, pf_frame *dst)
{
    return pf_ops_resize(ops, src, dst, PF_INTERP_AREA);
}

/* NV12 (two launches) captured once, replayed on new bytes. */
static void test_graph_capture(void)
{
    pf_ops *ref = otu_make_ops(g_hs, 1, NULL), *cuda = otu_make_ops(g_cs, 0, NULL);
    REQUIRE(ref && cuda);
    pf_frame hs = {0}, hd = {0};
    CHECK_OK(otu_make_frame(&hs, PF_PIXFMT_NV12, 301, 171, 3, 1, OTU_RANDOM_WORDS));
    CHECK_OK(otu_make_frame(&hd, PF_PIXFMT_NV12, 97, 63, 3, 0, OTU_RANDOM_WORDS));
    otu_check_graph_replay(ref, cuda, g_cs, g_dalloc, resize_area, "rs", &hs, &hd);
    pf_frame_unref(&hs);
    pf_frame_unref(&hd);
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cuda);
}

static void test_unreachable(void)
{
    pf_ops *cuda = otu_make_ops(g_cs, 0, NULL);
    REQUIRE(cuda);
    pf_frame h = {0}, d = {0}, hd = {0}, dd = {0};
    CHECK_OK(otu_make_frame(&h, PF_PIXFMT_RGB24, 16, 8, 0, 0, OTU_RANDOM_WORDS));
    CHECK_OK(otu_make_frame(&hd, PF_PIXFMT_RGB24, 8, 4, 0, 0, OTU_RANDOM_WORDS));
    CHECK_OK(otu_upload_frame(&h, g_dalloc, g_cs, &d));
    CHECK_OK(otu_upload_frame(&hd, g_dalloc, g_cs, &dd));
    pf_status st = pf_ops_resize(cuda, &h, &dd, PF_INTERP_BILINEAR);
    CHECK_EQ_INT(st, PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "src plane 0 is host memory") != NULL);
    st = pf_ops_resize(cuda, &d, &hd, PF_INTERP_BILINEAR);
    CHECK_EQ_INT(st, PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "dst plane 0 is host memory") != NULL);
    int64_t s2[2] = {8, 8};
    pf_tensor hm = {0}, dm = {0};
    CHECK_OK(pf_tensor_alloc(&hm, PF_DTYPE_F32, 2, s2, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&dm, PF_DTYPE_F32, 2, s2, PF_LAYOUT_NONE, g_dalloc, g_cs));
    st = pf_ops_resize_mask(cuda, &hm, &dm, PF_INTERP_AREA);
    CHECK_EQ_INT(st, PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "src is host memory") != NULL);
    CHECK_OK(pf_stream_synchronize(g_cs));
    pf_tensor_unref(&hm);
    pf_tensor_unref(&dm);
    pf_frame_unref(&h);
    pf_frame_unref(&d);
    pf_frame_unref(&hd);
    pf_frame_unref(&dd);
    pf_ops_destroy(&cuda);
}

int main(void)
{
    if (otu_cuda_setup(20261125, "rs", &g_dev, &g_cs, &g_hs, &g_dalloc, &g_palloc) != 0) return 1;
    PF_RUN(test_random);
    PF_RUN(test_shapes);
    PF_RUN(test_masks);
    PF_RUN(test_graph_capture);
    PF_RUN(test_unreachable);
    otu_cuda_teardown(&g_cs, &g_hs, &g_dalloc, &g_palloc);
    return pf_test_finish();
}
