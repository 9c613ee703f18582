/* pf_ops_convert on CUDA against the C reference (run on the CPU) on the same
 * bytes: every ordered pair of the six formats at random sizes (1x1, odd,
 * padded strides, unaligned starts: device frames keep the host layout),
 * sizes spanning many thread blocks, every (Y, U, V) and every (R, G, B)
 * for all four matrix/range pairs, pinned-memory frames, a CUDA-graph
 * capture and replay, and memory a CUDA context cannot reach.
 *
 * Tolerance: none. Outputs are u8 and must equal the reference byte for byte
 * (ops.h); the whole destination buffer is compared, so stride padding the
 * kernel must not touch is checked too. The kernel computes with __f*_rn
 * intrinsics (no FMA contraction) exactly the reference's float operations. */
#include "cuda_test_util.h"
#include "../ops_test_util.h"

#include "ops/convert.h"

static pf_device *g_dev;
static pf_stream *g_cs, *g_hs; /* CUDA stream, CPU stream */
static pf_allocator *g_dalloc, *g_palloc;

static const pf_pixfmt k_formats[] = {PF_PIXFMT_RGB24, PF_PIXFMT_BGR24, PF_PIXFMT_RGBA,
                                      PF_PIXFMT_GRAY8, PF_PIXFMT_NV12, PF_PIXFMT_I420};
#define NFMT 6

/* Converts `src` (host) with the reference and its upload (from `alloc`)
 * with CUDA into destinations that start as the same random bytes. */
static void compare(pf_ops *ref, pf_ops *cuda, const pf_frame *src, pf_pixfmt dfmt,
                    const pf_color_params *cp, pf_allocator *alloc, const char *label)
{
    pf_frame hd = {0}, ds = {0}, dd = {0};
    const size_t offset = (size_t)pf_test_rand_range(0, 3);
    CHECK_OK(otu_make_frame(&hd, dfmt, src->width, src->height, 5, offset, OTU_RANDOM_WORDS));
    CHECK_OK(otu_upload_frame(src, alloc, g_cs, &ds));
    CHECK_OK(otu_upload_frame(&hd, alloc, g_cs, &dd));
    if (ds.data[0] && dd.data[0]) {
        CHECK_OK(pf_ops_convert(ref, src, &hd, cp));
        pf_status st = pf_ops_convert(cuda, &ds, &dd, cp);
        CHECK_OK(st);
        if (st == PF_OK) CHECK(otu_same_as_host(g_cs, &dd, &hd, label));
    }
    CHECK_OK(pf_stream_synchronize(g_cs));
    pf_frame_unref(&ds);
    pf_frame_unref(&dd);
    pf_frame_unref(&hd);
}

static void test_random_pairs(void)
{
    pf_ops *ref = otu_make_ops(g_hs, 1, NULL), *cuda = otu_make_ops(g_cs, 0, NULL);
    REQUIRE(ref && cuda);
    for (int it = 0; it < 30; it++) {
        int w = it < 4 ? 1 + (it & 1) : (int)pf_test_rand_range(1, 90);
        int h = it < 4 ? 1 + (it >> 1) : (int)pf_test_rand_range(1, 50);
        if (it >= 26) w = (int)pf_test_rand_range(100, 700), h = (int)pf_test_rand_range(17, 90);
        pf_color_params cp = {(pf_yuv_matrix)(it & 1), (pf_yuv_range)((it >> 1) & 1)};
        for (int s = 0; s < NFMT; s++) {
            pf_frame src = {0};
            const size_t offset = (size_t)(it % 5);
            CHECK_OK(otu_make_frame(&src, k_formats[s], w, h, 6, offset, OTU_RANDOM_WORDS));
            for (int d = 0; d < NFMT; d++) {
                char label[80];
                snprintf(label, sizeof label, "case %d %s -> %s", it, pf_pixfmt_name(k_formats[s]),
                         pf_pixfmt_name(k_formats[d]));
                compare(ref, cuda, &src, k_formats[d], it == 5 ? NULL : &cp, g_dalloc, label);
            }
            pf_frame_unref(&src);
        }
    }
    /* 1080p NV12 -> RGB24 (the benchmark) and back, and frames in pinned
     * host memory. */
    pf_frame src = {0};
    CHECK_OK(otu_make_frame(&src, PF_PIXFMT_NV12, 1920, 1080, 0, 0, OTU_RANDOM_WORDS));
    pf_color_params bt709 = {PF_YUV_BT709, PF_YUV_LIMITED};
    compare(ref, cuda, &src, PF_PIXFMT_RGB24, &bt709, g_dalloc, "1080p nv12 -> rgb24");
    compare(ref, cuda, &src, PF_PIXFMT_BGR24, NULL, g_palloc, "1080p nv12 -> bgr24, pinned");
    pf_frame_unref(&src);
    CHECK_OK(otu_make_frame(&src, PF_PIXFMT_RGB24, 1921, 1081, 3, 1, OTU_RANDOM_WORDS));
    compare(ref, cuda, &src, PF_PIXFMT_NV12, &bt709, g_dalloc, "1921x1081 rgb24 -> nv12");
    compare(ref, cuda, &src, PF_PIXFMT_I420, NULL, g_palloc, "1921x1081 rgb24 -> i420, pinned");
    pf_frame_unref(&src);
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cuda);
}

/* Every (Y, U, V) -> RGB24, every (R, G, B) -> NV12 (luma) and -> GRAY8, on
 * CUDA against the reference, for every matrix and range: a 4096x4096 I420
 * frame holds each YUV triple once (block i: U = i >> 14, V = (i >> 6) & 255,
 * Y = 4 (i & 63) + 0..3), an RGB frame each RGB triple. This is where an FMA
 * contraction in the kernel would show. */
static void test_exhaustive(void)
{
    pf_ops *ref = otu_make_ops(g_hs, 1, NULL), *cuda = otu_make_ops(g_cs, 0, NULL);
    REQUIRE(ref && cuda);
    enum { S = 4096 };
    pf_frame yuv = {0}, rgb = {0};
    CHECK_OK(pf_frame_alloc(&yuv, PF_PIXFMT_I420, S, S, NULL, NULL));
    CHECK_OK(pf_frame_alloc(&rgb, PF_PIXFMT_RGB24, S, S, NULL, NULL));
    REQUIRE(yuv.data[0] && rgb.data[0]);
    for (int by = 0; by < S / 2; by++)
        for (int bx = 0; bx < S / 2; bx++) {
            int i = by * (S / 2) + bx;
            yuv.data[1][(size_t)by * yuv.stride[1] + (size_t)bx] = (uint8_t)(i >> 14);
            yuv.data[2][(size_t)by * yuv.stride[2] + (size_t)bx] = (uint8_t)((i >> 6) & 255);
            for (int k = 0; k < 4; k++)
                yuv.data[0][(size_t)(2 * by + (k >> 1)) * yuv.stride[0] + (size_t)(2 * bx + (k & 1))] =
                    (uint8_t)(4 * (i & 63) + k);
        }
    for (int y = 0; y < S; y++)
        for (int x = 0; x < S; x++) {
            int p = y * S + x;
            uint8_t *q = rgb.data[0] + (size_t)y * rgb.stride[0] + 3 * (size_t)x;
            q[0] = (uint8_t)(p >> 16), q[1] = (uint8_t)(p >> 8), q[2] = (uint8_t)p;
        }
    for (int combo = 0; combo < 4; combo++) {
        pf_color_params cp = {(pf_yuv_matrix)(combo & 1), (pf_yuv_range)(combo >> 1)};
        char label[64];
        snprintf(label, sizeof label, "exhaustive matrix %d range %d", combo & 1, combo >> 1);
        compare(ref, cuda, &yuv, PF_PIXFMT_RGB24, &cp, g_dalloc, label);
        compare(ref, cuda, &rgb, PF_PIXFMT_NV12, &cp, g_dalloc, label);
        if (combo == 0) compare(ref, cuda, &rgb, PF_PIXFMT_GRAY8, &cp, g_dalloc, label);
    }
    pf_frame_unref(&yuv);
    pf_frame_unref(&rgb);
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cuda);
}

static pf_status convert_default(pf_ops *ops, const pf_frame *src, pf_frame *dst)
{
    return pf_ops_convert(ops, src, dst, NULL);
}

/* Captured once, replayed on new bytes at the same addresses. */
static void test_graph_capture(void)
{
    pf_ops *ref = otu_make_ops(g_hs, 1, NULL), *cuda = otu_make_ops(g_cs, 0, NULL);
    REQUIRE(ref && cuda);
    pf_frame hs = {0}, hd = {0};
    CHECK_OK(otu_make_frame(&hs, PF_PIXFMT_NV12, 97, 63, 3, 1, OTU_RANDOM_WORDS));
    CHECK_OK(otu_make_frame(&hd, PF_PIXFMT_RGBA, 97, 63, 3, 0, OTU_RANDOM_WORDS));
    otu_check_graph_replay(ref, cuda, g_cs, g_dalloc, convert_default, "cv", &hs, &hd);
    pf_frame_unref(&hs);
    pf_frame_unref(&hd);
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cuda);
}

/* Pageable host memory is not reachable from a CUDA context; a format to
 * itself is a copy there too. */
static void test_unreachable_and_copy(void)
{
    pf_ops *cuda = otu_make_ops(g_cs, 0, NULL);
    REQUIRE(cuda);
    pf_frame h = {0}, h2 = {0}, d = {0}, d2 = {0};
    CHECK_OK(otu_make_frame(&h, PF_PIXFMT_I420, 33, 17, 4, 1, OTU_RANDOM_WORDS));
    CHECK_OK(otu_make_frame(&h2, PF_PIXFMT_I420, 33, 17, 2, 0, OTU_RANDOM_WORDS));
    CHECK_OK(otu_upload_frame(&h, g_dalloc, g_cs, &d));
    CHECK_OK(otu_upload_frame(&h2, g_dalloc, g_cs, &d2));
    pf_status st = pf_ops_convert(cuda, &h, &d2, NULL);
    CHECK_EQ_INT(st, PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "src plane 0 is host memory") != NULL);
    st = pf_ops_convert(cuda, &d, &h2, NULL);
    CHECK_EQ_INT(st, PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "dst plane 0 is host memory") != NULL);
    CHECK_OK(pf_ops_convert(cuda, &d, &d2, NULL));
    /* Expected: h2's padding with h's pixels. */
    for (int p = 0; p < 3; p++) {
        size_t row, rows;
        pf_pixfmt_plane_size(PF_PIXFMT_I420, 33, 17, p, &row, &rows);
        for (size_t y = 0; y < rows; y++)
            memcpy(h2.data[p] + y * h2.stride[p], h.data[p] + y * h.stride[p], row);
    }
    CHECK(otu_same_as_host(g_cs, &d2, &h2, "same-format copy"));
    pf_frame_unref(&h);
    pf_frame_unref(&h2);
    pf_frame_unref(&d);
    pf_frame_unref(&d2);
    pf_ops_destroy(&cuda);
}

int main(void)
{
    if (otu_cuda_setup(20261124, "cv", &g_dev, &g_cs, &g_hs, &g_dalloc, &g_palloc) != 0) return 1;
    PF_RUN(test_random_pairs);
    PF_RUN(test_exhaustive);
    PF_RUN(test_graph_capture);
    PF_RUN(test_unreachable_and_copy);
    otu_cuda_teardown(&g_cs, &g_hs, &g_dalloc, &g_palloc);
    return pf_test_finish();
}
