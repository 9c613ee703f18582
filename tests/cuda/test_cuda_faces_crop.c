/* pf_ops_crop_rotated on CUDA against the CPU reference: random RGB24,
 * BGR24 and RGBA frames with padded strides, 40 random rectangles (inside,
 * straddling and outside the frame, any angle; 40 > 32 crosses a launch
 * chunk) into a 192x192 batch, compared within 1e-4 with scale 1/255 (the
 * same sample points; float weights and FMA contraction differ). Skips (77)
 * without a GPU. */
#include "ops_test_util.h"
#include "pf_test.h"

#define N 40

static pf_stream *g_cs, *g_hs;
static pf_allocator *g_dalloc, *g_palloc;

static float frand(float lo, float hi)
{
    return lo + (hi - lo) * (float)(pf_test_rand() >> 11) * (1.0f / 9007199254740992.0f);
}

static void test_random_crops(void)
{
    pf_ops *ref = otu_make_ops(g_hs, 1, NULL), *cuda = otu_make_ops(g_cs, 0, NULL);
    REQUIRE(ref && cuda);
    static const pf_pixfmt fmts[3] = {PF_PIXFMT_RGB24, PF_PIXFMT_BGR24, PF_PIXFMT_RGBA};
    pf_frame h[3], d[3];
    for (int i = 0; i < 3; i++) {
        REQUIRE(otu_make_frame(&h[i], fmts[i], 301 + 50 * i, 177 + 20 * i, 13, 0,
                               OTU_RANDOM_WORDS) == PF_OK);
        REQUIRE(otu_upload_frame(&h[i], g_dalloc, g_cs, &d[i]) == PF_OK);
    }
    const pf_frame *hs[N], *ds[N];
    pf_rotated_rect r[N];
    for (int i = 0; i < N; i++) {
        hs[i] = &h[i % 3];
        ds[i] = &d[i % 3];
        r[i].cx = frand(-50.0f, 400.0f);
        r[i].cy = frand(-50.0f, 250.0f);
        r[i].width = frand(5.0f, 300.0f);
        r[i].height = i % 2 ? r[i].width : frand(5.0f, 300.0f);
        r[i].angle = frand(-3.2f, 3.2f);
    }
    const int64_t shape[4] = {N, 192, 192, 3};
    pf_tensor ht = {0}, dt = {0}, back = {0};
    REQUIRE(pf_tensor_alloc(&ht, PF_DTYPE_F32, 4, shape, PF_LAYOUT_NHWC, NULL, NULL) == PF_OK);
    REQUIRE(pf_tensor_alloc(&back, PF_DTYPE_F32, 4, shape, PF_LAYOUT_NHWC, NULL, NULL) == PF_OK);
    REQUIRE(pf_tensor_alloc(&dt, PF_DTYPE_F32, 4, shape, PF_LAYOUT_NHWC, g_dalloc, g_cs) == PF_OK);
    CHECK_OK(pf_ops_crop_rotated(ref, hs, r, N, &ht, 1.0f / 255.0f, 0.0f));
    CHECK_OK(pf_ops_crop_rotated(cuda, ds, r, N, &dt, 1.0f / 255.0f, 0.0f));
    CHECK_OK(pf_memcpy_async(g_cs, back.data, dt.data, pf_tensor_nbytes(&dt)));
    CHECK_OK(pf_stream_synchronize(g_cs));
    const float *a = ht.data, *b = back.data;
    double worst = 0.0;
    size_t at = 0;
    for (size_t i = 0; i < (size_t)pf_tensor_numel(&ht); i++) {
        const double e = fabs((double)a[i] - (double)b[i]);
        if (e > worst) {
            worst = e;
            at = i;
        }
    }
    printf("    %d crops 192x192: max |cuda - cpu| %g at %zu\n", N, worst, at);
    CHECK(worst <= 1e-4);
    pf_tensor_unref(&ht);
    pf_tensor_unref(&dt);
    pf_tensor_unref(&back);
    for (int i = 0; i < 3; i++) {
        pf_frame_unref(&h[i]);
        pf_frame_unref(&d[i]);
    }
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cuda);
}

int main(void)
{
    pf_device *dev = NULL;
    if (otu_cuda_setup(20261127, "faces-crop", &dev, &g_cs, &g_hs, &g_dalloc, &g_palloc)) return 1;
    PF_RUN(test_random_crops);
    otu_cuda_teardown(&g_cs, &g_hs, &g_dalloc, &g_palloc);
    return pf_test_finish();
}
