/* The scene-cut test of the temporal smoothing on CUDA (pf_ops_mask_temporal_cut) against the C
 * reference: sequences of 1..3M-value masks with shots that change (a block jumping across the
 * frame: mean |diff| far above the cut) and shots that drift (far below), at alpha 0.6 and cut
 * 0.1. The decision is made on the device from a float sum; away from the threshold it must
 * match the reference's, so every frame agrees within the smoothing's tolerance (1e-5), and the
 * frame after a cut equals the new mask exactly. */
#include "cuda_test_util.h"
#include "mask_check.h"
#include "ops_test_util.h"
#include "pf_test.h"

static pf_device *g_dev;
static pf_stream *g_cs, *g_hs;
static pf_allocator *g_dalloc, *g_palloc;
static pf_ops *g_ref, *g_cuda;

/* Rows x 256 mask: ones in columns [x0, x0 + 64), zeros elsewhere. */
static void bar(pf_tensor *t, int64_t rows, int x0)
{
    float *p = t->data;
    for (int64_t y = 0; y < rows; y++)
        for (int x = 0; x < 256; x++) p[y * 256 + x] = x >= x0 && x < x0 + 64 ? 1.0f : 0.0f;
}

static void test_cut_sequences(void)
{
    static const int64_t rows_of[3] = {3, 1024, 12000};
    for (int k = 0; k < 3; k++) {
        int64_t rows = rows_of[k], n = rows * 256;
        int64_t shape[2] = {rows, 256};
        pf_tensor hs = mkc_new(PF_DTYPE_F32, 2, shape, PF_LAYOUT_NONE, NULL, NULL);
        pf_tensor hm = mkc_new(PF_DTYPE_F32, 2, shape, PF_LAYOUT_NONE, NULL, NULL);
        pf_tensor got = mkc_new(PF_DTYPE_F32, 2, shape, PF_LAYOUT_NONE, NULL, NULL);
        pf_tensor ds = mkc_new(PF_DTYPE_F32, 2, shape, PF_LAYOUT_NONE, g_dalloc, g_cs);
        pf_tensor dm = mkc_new(PF_DTYPE_F32, 2, shape, PF_LAYOUT_NONE, g_dalloc, g_cs);
        /* x0 per frame: drift by 1 (smoothed), jump by 128 (cut), drift, jump back. */
        static const int x0s[8] = {0, 1, 2, 130, 131, 132, 4, 5};
        for (int f = 0; f < 8; f++) {
            bar(&hm, rows, x0s[f]);
            CHECK_OK(pf_memcpy_async(g_cs, dm.data, hm.data, sizeof(float) * (size_t)n));
            CHECK_OK(pf_ops_mask_temporal_cut(g_ref, &hs, &hm, 0.6f, 0.1f, f == 0));
            CHECK_OK(pf_ops_mask_temporal_cut(g_cuda, &ds, &dm, 0.6f, 0.1f, f == 0));
            CHECK_OK(pf_memcpy_async(g_cs, got.data, ds.data, sizeof(float) * (size_t)n));
            CHECK_OK(pf_stream_synchronize(g_cs));
            char label[64];
            snprintf(label, sizeof label, "rows %lld frame %d", (long long)rows, f);
            double worst = 0;
            CHECK_EQ_INT(mkc_cmp_f32(hs.data, got.data, (size_t)n, 1e-5, 0.0, label, &worst), 0);
            if (f == 3 || f == 6)
                CHECK(!memcmp(got.data, hm.data, sizeof(float) * (size_t)n)); /* after a cut */
            if (f == 1 || f == 4 || f == 7)
                CHECK(memcmp(got.data, hm.data, sizeof(float) * (size_t)n) != 0); /* smoothed */
        }
        pf_tensor *all[] = {&hs, &hm, &got, &ds, &dm};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) pf_tensor_unref(all[i]);
    }
}

int main(void)
{
    if (otu_cuda_setup(20261127, "scene-cut", &g_dev, &g_cs, &g_hs, &g_dalloc, &g_palloc) != 0)
        return 1;
    g_ref = otu_make_ops(g_hs, 1, NULL);
    g_cuda = otu_make_ops(g_cs, 0, NULL);
    if (!g_ref || !g_cuda) return pf_test_finish();
    PF_RUN(test_cut_sequences);
    pf_ops_destroy(&g_ref);
    pf_ops_destroy(&g_cuda);
    otu_cuda_teardown(&g_cs, &g_hs, &g_dalloc, &g_palloc);
    return pf_test_finish();
}
