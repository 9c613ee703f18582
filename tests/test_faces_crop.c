/* pf_ops_crop_rotated on the CPU (src/cpu/crop_rotated_ref.c): identity and
 * quarter-turn crops against direct pixel indexing, edge replication, channel
 * order (BGR24, RGBA), the crop's sample points equal to the faces job's
 * inverse map (pf_face_roi_to_frame), and refused arguments. */
#include <math.h>

#include "jobs/faces_impl.h"
#include "ops/crop_rotated.h"
#include "ops_test_util.h"
#include "pf_test.h"

static pf_stream *g_stream;

static float px(const pf_frame *f, int x, int y, int c)
{
    return (float)f->data[0][(size_t)y * f->stride[0] + (size_t)x * 3 + (size_t)c];
}

/* Largest |dst - expected(x, y, c)| over a crop. */
typedef float (*expect_fn)(const pf_frame *f, int x, int y, int c);

static float worst_diff(const pf_tensor *t, int i, const pf_frame *f, expect_fn e)
{
    const int H = (int)t->shape[1], W = (int)t->shape[2];
    const float *d = (const float *)t->data + (size_t)i * H * W * 3;
    float worst = 0.0f;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < 3; c++)
                worst = fmaxf(worst, fabsf(d[((size_t)y * W + x) * 3 + c] - e(f, x, y, c)));
    return worst;
}

static float e_identity(const pf_frame *f, int x, int y, int c) { return px(f, x, y, c); }
/* angle +pi/2: the crop's x axis runs down the frame (+y), its y axis to -x:
 * crop (x, y) of a W x W frame is frame (W - 1 - y, x). */
static float e_quarter(const pf_frame *f, int x, int y, int c)
{
    return px(f, f->width - 1 - y, x, c);
}
static float e_bgr(const pf_frame *f, int x, int y, int c) { return px(f, x, y, 2 - c); }

static void test_identity_and_quarter_turn(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 1, NULL);
    REQUIRE(ops);
    pf_frame f;
    REQUIRE(otu_make_frame(&f, PF_PIXFMT_RGB24, 37, 37, 9, 3, OTU_RANDOM) == PF_OK);
    pf_tensor t = {0};
    const int64_t shape[4] = {2, 37, 37, 3};
    REQUIRE(pf_tensor_alloc(&t, PF_DTYPE_F32, 4, shape, PF_LAYOUT_NHWC, NULL, NULL) == PF_OK);
    const pf_frame *srcs[2] = {&f, &f};
    const pf_rotated_rect r[2] = {{18.5f, 18.5f, 37, 37, 0.0f},
                                  {18.5f, 18.5f, 37, 37, 1.57079632679f}};
    CHECK_OK(pf_ops_crop_rotated(ops, srcs, r, 2, &t, 1.0f, 0.0f));
    /* Sample points are float ((x + 0.5) / W - 0.5) * W, off by ~1e-6 px
     * where W is not a power of two; cos(pi/2) rounds to -4e-8. */
    const float id = worst_diff(&t, 0, &f, e_identity);
    CHECK(id < 1e-3f);
    const float q = worst_diff(&t, 1, &f, e_quarter);
    printf("    identity: max diff %g, quarter turn: %g (of 255)\n", (double)id, (double)q);
    CHECK(q < 1e-3f);
    pf_tensor_unref(&t);
    pf_frame_unref(&f);
    pf_ops_destroy(&ops);
}

static void test_edges_and_channels(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 1, NULL);
    REQUIRE(ops);
    pf_frame f, g;
    REQUIRE(otu_make_frame(&f, PF_PIXFMT_BGR24, 20, 10, 0, 0, OTU_RANDOM) == PF_OK);
    REQUIRE(otu_make_frame(&g, PF_PIXFMT_RGBA, 8, 8, 0, 0, 77) == PF_OK);
    pf_tensor t = {0};
    const int64_t shape[4] = {3, 10, 20, 3};
    REQUIRE(pf_tensor_alloc(&t, PF_DTYPE_F32, 4, shape, PF_LAYOUT_NHWC, NULL, NULL) == PF_OK);
    const pf_frame *srcs[3] = {&f, &f, &g};
    /* BGR identity with scale/bias; far outside the frame (edge replicated:
     * every output is the corner pixel); RGBA (alpha dropped). */
    const pf_rotated_rect r[3] = {{10, 5, 20, 10, 0}, {-500, -500, 4, 4, 0.3f}, {4, 4, 8, 8, 0}};
    CHECK_OK(pf_ops_crop_rotated(ops, srcs, r, 3, &t, 2.0f, -1.0f));
    const float *d = t.data;
    float worst = 0.0f;
    for (int y = 0; y < 10; y++)
        for (int x = 0; x < 20; x++)
            for (int c = 0; c < 3; c++)
                worst = fmaxf(worst, fabsf(d[(y * 20 + x) * 3 + c] - (e_bgr(&f, x, y, c) * 2 - 1)));
    CHECK(worst == 0.0f);
    const float *d1 = d + 10 * 20 * 3;
    for (int i = 0; i < 10 * 20; i++)
        for (int c = 0; c < 3; c++) CHECK(d1[i * 3 + c] == e_bgr(&f, 0, 0, c) * 2 - 1);
    const float *d2 = d1 + 10 * 20 * 3;
    CHECK(d2[0] == 153.0f && d2[1] == 153.0f && d2[2] == 153.0f);
    pf_tensor_unref(&t);
    pf_frame_unref(&f);
    pf_frame_unref(&g);
    pf_ops_destroy(&ops);
}

static void test_matches_inverse_map(void)
{
    /* The faces job maps landmarks back with pf_face_roi_to_frame: the crop
     * must sample exactly those points (pixel centres of the crop). */
    pf_face_roi roi = {123.0f, 77.5f, 64.0f, 64.0f, 0.4f};
    pf_cr_item it;
    memset(&it, 0, sizeof it);
    it.cx = roi.cx;
    it.cy = roi.cy;
    it.w = roi.w;
    it.h = roi.h;
    it.cos_a = (float)cos(0.4);
    it.sin_a = (float)sin(0.4);
    float worst = 0.0f;
    for (int y = 0; y < 192; y += 7)
        for (int x = 0; x < 192; x += 5) {
            float sx, sy, fx, fy;
            pf_cr_point(&it, x, y, 192, 192, &sx, &sy);
            pf_face_roi_to_frame(&roi, ((float)x + 0.5f) / 192.0f, ((float)y + 0.5f) / 192.0f, &fx,
                                 &fy);
            worst = fmaxf(worst, fmaxf(fabsf(sx - fx), fabsf(sy - fy)));
        }
    printf("    crop vs inverse map: max %g px\n", (double)worst);
    CHECK(worst < 1e-3f);
}

static void test_bad_input(void)
{
    pf_ops *ops = otu_make_ops(g_stream, 1, NULL);
    REQUIRE(ops);
    pf_frame f, n12;
    REQUIRE(otu_make_frame(&f, PF_PIXFMT_RGB24, 16, 16, 0, 0, 1) == PF_OK);
    REQUIRE(otu_make_frame(&n12, PF_PIXFMT_NV12, 16, 16, 0, 0, 1) == PF_OK);
    pf_tensor t = {0}, t3 = {0};
    const int64_t shape[4] = {1, 8, 8, 3}, shape3[3] = {1, 8, 8};
    REQUIRE(pf_tensor_alloc(&t, PF_DTYPE_F32, 4, shape, PF_LAYOUT_NHWC, NULL, NULL) == PF_OK);
    REQUIRE(pf_tensor_alloc(&t3, PF_DTYPE_F32, 3, shape3, PF_LAYOUT_NONE, NULL, NULL) == PF_OK);
    const pf_frame *srcs[1] = {&f}, *bad[1] = {&n12};
    pf_rotated_rect r = {8, 8, 8, 8, 0};
    CHECK(pf_ops_crop_rotated(ops, srcs, &r, 2, &t, 1, 0) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "n is 2") != NULL);
    CHECK(pf_ops_crop_rotated(ops, srcs, &r, 1, &t3, 1, 0) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "[N, H, W, 3]") != NULL);
    CHECK(pf_ops_crop_rotated(ops, bad, &r, 1, &t, 1, 0) != PF_OK);
    CHECK(strstr(pf_last_error(), "srcs[0]") != NULL);
    r.width = 0;
    CHECK(pf_ops_crop_rotated(ops, srcs, &r, 1, &t, 1, 0) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "rects[0]") != NULL);
    r.width = 8;
    r.angle = NAN;
    CHECK(pf_ops_crop_rotated(ops, srcs, &r, 1, &t, 1, 0) == PF_ERR_INVALID);
    pf_tensor_unref(&t);
    pf_tensor_unref(&t3);
    pf_frame_unref(&f);
    pf_frame_unref(&n12);
    pf_ops_destroy(&ops);
}

int main(void)
{
    pf_test_seed(20261127);
    if (!(g_stream = otu_cpu_stream())) return 1;
    PF_RUN(test_identity_and_quarter_turn);
    PF_RUN(test_edges_and_channels);
    PF_RUN(test_matches_inverse_map);
    PF_RUN(test_bad_input);
    pf_stream_destroy(&g_stream);
    return pf_test_finish();
}
