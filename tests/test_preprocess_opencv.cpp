/* pf_ops_preprocess (the C reference and the CPU path) against OpenCV as an
 * independent oracle for its sampling and colour conversion. Built only
 * where OpenCV's development files exist.
 *
 * The preprocess runs with mean 0, std 1, bgr output and NHWC f32, so its
 * output times 255 is the resampled BGR image in 0..255 and compares
 * directly with OpenCV on the same bytes:
 *   bilinear = cv::resize INTER_LINEAR of the image converted to float
 *     (OpenCV's float path: same half-pixel positions and edge clamping, float
 *     weights; its positions are rounded to float once, ~1e-4 px at 1920
 *     px, so values may differ by up to ~0.03): bound 0.06.
 *   area (both axes shrinking) = INTER_AREA on float: the same overlap
 *     weights, summed in float in another order: bound 0.06.
 *   nearest = INTER_NEAREST_EXACT on u8, on sizes without ties (no
 *     (i + 0.5) W / w is an integer; where one is, OpenCV takes the pixel
 *     before, see test_opencv_oracle.cpp) whose scale W / w is exact in
 *     OpenCV's 16.16 fixed point (else its truncated step drifts): identical.
 *   ROI + letterbox = INTER_LINEAR of the ROI to the reported content size,
 *     placed at the reported offsets, pad value elsewhere: bound 0.06.
 *   NV12 / I420 (even sizes, Y >= 16, identity size so the conversion is
 *     seen alone) = cvtColor COLOR_YUV2BGR_NV12 / _I420 (BT.601 limited,
 *     20-bit fixed point, rounded to u8) against our unrounded float
 *     conversion: bound 1 (0.5 for OpenCV's rounding plus its fixed-point
 *     coefficients). */
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "pf_test.h"

static pf_stream *g_stream;
static pf_ops *g_ops[2]; /* reference, CPU path */
static cv::RNG g_rng;
static const char *g_name[2] = {"ref", "cpu"};

static void fill(cv::Mat m, bool smooth)
{
    g_rng.fill(m, cv::RNG::UNIFORM, 0, 256);
    if (smooth) {
        cv::GaussianBlur(m, m, cv::Size(0, 0), 3.0);
        cv::normalize(m, m, 0, 255, cv::NORM_MINMAX);
    }
}

/* Runs the preprocess on one frame into a W x H NHWC f32 tensor and returns
 * it as a CV_32FC3 image in 0..255 (BGR). */
static cv::Mat run(pf_ops *ops, const pf_frame *f, const pf_rect *roi, int W, int H,
                   pf_interp interp, bool letterbox, float pad, pf_letterbox_info *info)
{
    pf_tensor t = {};
    int64_t shape[4] = {1, H, W, 3};
    CHECK_OK(pf_tensor_alloc(&t, PF_DTYPE_F32, 4, shape, PF_LAYOUT_NHWC, NULL, NULL));
    pf_preprocess_params p = pf_preprocess_params_default();
    p.interp = interp;
    p.bgr = true;
    p.letterbox = letterbox;
    p.pad_value = pad;
    const pf_frame *srcs[1] = {f};
    CHECK_OK(pf_ops_preprocess(ops, srcs, roi, 1, &t, &p, info));
    cv::Mat out = cv::Mat(H, W, CV_32FC3, t.data).clone() * 255.0;
    pf_tensor_unref(&t);
    return out;
}

static double max_diff(const cv::Mat &a, const cv::Mat &b)
{
    cv::Mat fa, fb, d;
    a.convertTo(fa, CV_32F);
    b.convertTo(fb, CV_32F);
    cv::absdiff(fa, fb, d);
    double mx = 0;
    cv::minMaxLoc(d.reshape(1), NULL, &mx);
    return mx;
}

static void expect(const char *what, double d, double bound)
{
    printf("  %-62s max |diff| %.4f (bound %g)\n", what, d, bound);
    CHECK(d <= bound);
}

static void test_resize(void)
{
    const struct {
        int sw, sh, dw, dh;
    } cases[] = {{1920, 1080, 512, 512}, {640, 480, 213, 160}, {101, 77, 37, 29},
                 {800, 600, 200, 150},   {1921, 1081, 640, 360}, {64, 48, 200, 150},
                 {33, 17, 66, 34}};
    for (const auto &c : cases)
        for (int smooth = 0; smooth < 2; smooth++) {
            pf_frame f = {};
            CHECK_OK(pf_frame_alloc(&f, PF_PIXFMT_BGR24, c.sw, c.sh, NULL, NULL));
            cv::Mat s(c.sh, c.sw, CV_8UC3, f.data[0], f.stride[0]), sf, o;
            fill(s, smooth);
            s.convertTo(sf, CV_32FC3);
            const bool down = c.dw <= c.sw && c.dh <= c.sh;
            for (int k = 0; k < 2; k++) {
                char what[128];
                cv::Mat ours = run(g_ops[k], &f, NULL, c.dw, c.dh, PF_INTERP_BILINEAR, false, 0,
                                   NULL);
                cv::resize(sf, o, cv::Size(c.dw, c.dh), 0, 0, cv::INTER_LINEAR);
                snprintf(what, sizeof what, "%s %dx%d -> %dx%d %s: bilinear vs INTER_LINEAR",
                         g_name[k], c.sw, c.sh, c.dw, c.dh, smooth ? "smooth" : "noise");
                expect(what, max_diff(ours, o), 0.06);
                if (down) {
                    ours = run(g_ops[k], &f, NULL, c.dw, c.dh, PF_INTERP_AREA, false, 0, NULL);
                    cv::resize(sf, o, cv::Size(c.dw, c.dh), 0, 0, cv::INTER_AREA);
                    snprintf(what, sizeof what, "%s %dx%d -> %dx%d %s: area vs INTER_AREA",
                             g_name[k], c.sw, c.sh, c.dw, c.dh, smooth ? "smooth" : "noise");
                    expect(what, max_diff(ours, o), 0.06);
                }
                /* Nearest only where no destination pixel is a tie and the
                 * scale is exact in OpenCV's 16.16 fixed point (it
                 * truncates W / w to 1/65536: at 1921 -> 640 that drifts
                 * 0.004 px over the row and picks other pixels near
                 * boundaries). */
                bool skip = (int64_t)c.sw * 65536 % c.dw != 0 ||
                            (int64_t)c.sh * 65536 % c.dh != 0;
                for (int i = 0; i < c.dw && !skip; i++)
                    skip = ((int64_t)(2 * i + 1) * c.sw) % (2 * c.dw) == 0;
                for (int j = 0; j < c.dh && !skip; j++)
                    skip = ((int64_t)(2 * j + 1) * c.sh) % (2 * c.dh) == 0;
                if (!skip) {
                    ours = run(g_ops[k], &f, NULL, c.dw, c.dh, PF_INTERP_NEAREST, false, 0,
                               NULL);
                    cv::resize(s, o, cv::Size(c.dw, c.dh), 0, 0, cv::INTER_NEAREST_EXACT);
                    snprintf(what, sizeof what,
                             "%s %dx%d -> %dx%d %s: nearest vs INTER_NEAREST_EXACT", g_name[k],
                             c.sw, c.sh, c.dw, c.dh, smooth ? "smooth" : "noise");
                    expect(what, max_diff(ours, o), 1e-3);
                }
            }
            pf_frame_unref(&f);
        }
}

/* ROI + letterbox: OpenCV resizes the ROI to the content size we report and
 * pads around it. */
static void test_roi_letterbox(void)
{
    const struct {
        int sw, sh;
        pf_rect roi;
        int W, H;
    } cases[] = {{640, 480, {100, 50, 300, 200}, 160, 160},
                 {1920, 1080, {0, 0, 1920, 1080}, 640, 640},
                 {333, 222, {17, 9, 111, 190}, 96, 64},
                 {50, 40, {3, 5, 20, 20}, 70, 50}};
    for (const auto &c : cases) {
        pf_frame f = {};
        CHECK_OK(pf_frame_alloc(&f, PF_PIXFMT_BGR24, c.sw, c.sh, NULL, NULL));
        cv::Mat s(c.sh, c.sw, CV_8UC3, f.data[0], f.stride[0]), sf;
        fill(s, true);
        s.convertTo(sf, CV_32FC3);
        for (int k = 0; k < 2; k++) {
            pf_letterbox_info info = {};
            cv::Mat ours = run(g_ops[k], &f, &c.roi, c.W, c.H, PF_INTERP_BILINEAR, true, 114,
                               &info);
            cv::Mat want(c.H, c.W, CV_32FC3, cv::Scalar(114, 114, 114)), content;
            cv::resize(sf(cv::Rect(c.roi.x, c.roi.y, c.roi.width, c.roi.height)), content,
                       cv::Size(info.content_width, info.content_height), 0, 0,
                       cv::INTER_LINEAR);
            content.copyTo(want(cv::Rect(info.pad_left, info.pad_top, info.content_width,
                                         info.content_height)));
            char what[128];
            snprintf(what, sizeof what, "%s %dx%d roi {%d,%d %dx%d} -> letterbox %dx%d", g_name[k],
                     c.sw, c.sh, c.roi.x, c.roi.y, c.roi.width, c.roi.height, c.W, c.H);
            expect(what, max_diff(ours, want), 0.06);
        }
        pf_frame_unref(&f);
    }
}

/* NV12 and I420 at identity size (nearest): the colour conversion alone. */
static void test_yuv(void)
{
    const int sizes[][2] = {{64, 48}, {320, 240}, {2, 2}};
    const pf_pixfmt fmts[] = {PF_PIXFMT_NV12, PF_PIXFMT_I420};
    for (const auto &sz : sizes)
        for (pf_pixfmt fmt : fmts) {
            const int w = sz[0], h = sz[1];
            pf_buffer *b = NULL;
            CHECK_OK(pf_buffer_alloc_host((size_t)w * h * 3 / 2, &b));
            cv::Mat yuv(h * 3 / 2, w, CV_8UC1, pf_buffer_data(b));
            g_rng.fill(yuv, cv::RNG::UNIFORM, 0, 256);
            cv::Mat y = yuv(cv::Rect(0, 0, w, h));
            cv::max(y, 16, y); /* OpenCV clamps Y - 16 at 0 first; we do not */
            pf_frame f = {};
            CHECK_OK(pf_frame_wrap(&f, fmt, w, h, b, 0, NULL));
            cv::Mat o;
            cv::cvtColor(yuv, o, fmt == PF_PIXFMT_NV12 ? cv::COLOR_YUV2BGR_NV12
                                                       : cv::COLOR_YUV2BGR_I420);
            for (int k = 0; k < 2; k++) {
                cv::Mat ours = run(g_ops[k], &f, NULL, w, h, PF_INTERP_NEAREST, false, 0, NULL);
                char what[128];
                snprintf(what, sizeof what, "%s %s %dx%d BT.601 limited vs cvtColor", g_name[k],
                         pf_pixfmt_name(fmt), w, h);
                expect(what, max_diff(ours, o), 1.0);
            }
            pf_frame_unref(&f);
            pf_buffer_unref(&b);
        }
}

int main(void)
{
    pf_test_seed(20261127);
    g_rng = cv::RNG(pf_test_rand());
    cv::setNumThreads(1);
    if (pf_stream_create(NULL, &g_stream) != PF_OK) {
        fprintf(stderr, "stream: %s\n", pf_last_error());
        return 1;
    }
    for (int k = 0; k < 2; k++) {
        pf_ops_params op = pf_ops_params_default();
        op.stream = g_stream;
        op.reference = k == 0;
        if (pf_ops_create(&op, &g_ops[k]) != PF_OK) {
            fprintf(stderr, "ops: %s\n", pf_last_error());
            return 1;
        }
    }
    printf("OpenCV %s\n", CV_VERSION);
    PF_RUN(test_resize);
    PF_RUN(test_roi_letterbox);
    PF_RUN(test_yuv);
    pf_ops_destroy(&g_ops[0]);
    pf_ops_destroy(&g_ops[1]);
    pf_stream_destroy(&g_stream);
    return pf_test_finish();
}
