/* pf_ops_resize and pf_ops_convert (CPU path) against OpenCV as an
 * independent oracle. Built only where OpenCV's development files exist.
 *
 * For every case the test prints the largest absolute difference and the
 * share of values (bytes) that differ, and holds each to the bound that
 * follows from how the two libraries compute:
 *
 * Resize (RGB24 as CV_8UC3, GRAY8 as CV_8UC1; up, down, odd, integer and
 * fractional factors; noise and smooth content)
 *   bilinear = cv::INTER_LINEAR: same sample positions (half-pixel centres,
 *     edge clamping). OpenCV's 8-bit path rounds the weights to 11-bit fixed
 *     point (INTER_RESIZE_COEF_BITS) and the sums to integers with its own
 *     rounding, we blend in float: at most 1 apart.
 *   nearest = cv::INTER_NEAREST_EXACT where both pick the same source pixel.
 *     Ours is floor((i + 0.5) W / w) exactly (also PyTorch's nearest-exact and
 *     Pillow's); OpenCV evaluates (i + 0.5) W / w in 16.16 fixed point minus
 *     1/65536 (ifx = round(W 2^16 / w), (ifx / 2 - 1 + i ifx) >> 16), which
 *     lands one pixel lower exactly at ties, where the position is an integer
 *     k (source pixels k - 1 and k touch there): every pixel of a 2x (any
 *     even-factor) downscale, none of 1080p -> 512. The test checks every
 *     pixel of both outputs against its rule, requires identical output
 *     where the rules agree, and prints how many pixels they split. Not
 *     cv::INTER_NEAREST, which takes floor(i W / w) (top-left aligned, up to
 *     half a pixel off): printed too, to show it differs.
 *   area on downscales = cv::INTER_AREA. Integer factors k: both take the
 *     exact mean of each k x k block. A mean ending in .5 rounds up here; in
 *     OpenCV it rounds up for 2x (its fast 2x path adds 2 before shifting)
 *     and to even otherwise (4x: about 1/32 of values differ, by 1); odd k
 *     has no such ties (k^2 odd), so 2x and 3x must be identical (for 2x the
 *     test also checks that any difference would be a tie). Fractional
 *     factors: OpenCV sums float weights in its own order and rounds to
 *     even: at most 1 apart. Area upscales are not compared: OpenCV then
 *     uses its own sharper "area" weights, we use bilinear (ops.h).
 *
 * Colour (even sizes: OpenCV's 4:2:0 layouts need them)
 *   NV12/I420 -> RGB/BGR/RGBA = cv::cvtColor COLOR_YUV2{RGB,BGR,RGBA}_{NV12,I420}:
 *     both BT.601 limited range with the chroma sample of the 2x2 block.
 *     OpenCV uses 20-bit fixed-point coefficients (1.164, 1.596, 0.391,
 *     0.813, 2.018) and clamps Y - 16 at 0 before scaling: for Y in 16..255
 *     the results are at most 1 apart; for Y < 16 ours is darker (we do not
 *     clamp before the matrix), up to about 19. The test checks both claims.
 *   RGB24 -> GRAY8 = COLOR_RGB2GRAY: 0.299/0.587/0.114 in 14-bit fixed point
 *     there, float here: at most 1 apart.
 *   RGB24 -> I420 = COLOR_RGB2YUV_I420: BT.601 limited, luma at most 1 apart.
 *     OpenCV's chroma is not the 2x2 mean but the chroma of the block's
 *     top-left pixel: on content constant over 2x2 blocks both agree within
 *     1, and on noise OpenCV's chroma agrees within 1 with ours computed from
 *     a frame whose blocks repeat their top-left pixel (checked). */
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "pf_test.h"

static pf_stream *g_stream;
static pf_ops *g_ops;
static cv::RNG g_rng;

struct stats {
    int max;
    double share;
};

static stats diff(const cv::Mat &a, const cv::Mat &b)
{
    cv::Mat d;
    cv::absdiff(a, b, d);
    d = d.reshape(1);
    double mx = 0;
    cv::minMaxLoc(d, NULL, &mx);
    stats s;
    s.max = (int)mx;
    s.share = (double)cv::countNonZero(d) / (double)d.total();
    return s;
}

/* A host frame and an OpenCV header over the same bytes (packed formats). */
static cv::Mat frame_mat(pf_frame *f, pf_pixfmt fmt, int w, int h)
{
    CHECK_OK(pf_frame_alloc(f, fmt, w, h, NULL, NULL));
    int type = fmt == PF_PIXFMT_GRAY8 ? CV_8UC1 : (fmt == PF_PIXFMT_RGBA ? CV_8UC4 : CV_8UC3);
    return cv::Mat(h, w, type, f->data[0], f->stride[0]);
}

/* Noise, or smooth content (blurred noise stretched to 0..255). */
static void fill(cv::Mat m, bool smooth)
{
    g_rng.fill(m, cv::RNG::UNIFORM, 0, 256);
    if (smooth) {
        cv::GaussianBlur(m, m, cv::Size(0, 0), 4.0);
        cv::normalize(m, m, 0, 255, cv::NORM_MINMAX);
    }
}

static void report(const char *what, stats s)
{
    printf("  %-64s max |diff| %2d, %6.3f%% of values differ\n", what, s.max, 100.0 * s.share);
}

static void test_resize(void)
{
    const struct {
        int sw, sh, dw, dh;
    } cases[] = {{1920, 1080, 512, 512}, {640, 480, 320, 240}, {640, 480, 213, 160},
                 {1921, 1081, 640, 360}, {800, 600, 200, 150}, {101, 77, 37, 29},
                 {64, 48, 200, 150},     {33, 17, 66, 34},     {300, 200, 300, 200}};
    const pf_pixfmt fmts[] = {PF_PIXFMT_RGB24, PF_PIXFMT_GRAY8};
    for (const auto &c : cases)
        for (pf_pixfmt fmt : fmts)
            for (int smooth = 0; smooth < 2; smooth++) {
                pf_frame src = {}, dst = {};
                cv::Mat s = frame_mat(&src, fmt, c.sw, c.sh);
                cv::Mat d = frame_mat(&dst, fmt, c.dw, c.dh);
                fill(s, smooth);
                const bool down = c.dw <= c.sw && c.dh <= c.sh;
                const bool integer = down && c.sw % c.dw == 0 && c.sh % c.dh == 0 &&
                                     c.sw / c.dw == c.sh / c.dh;
                const int factor = integer ? c.sw / c.dw : 0;
                char what[128];
                cv::Mat o;
                const char *content = smooth ? "smooth" : "noise";

                CHECK_OK(pf_ops_resize(g_ops, &src, &dst, PF_INTERP_BILINEAR));
                cv::resize(s, o, d.size(), 0, 0, cv::INTER_LINEAR);
                stats st = diff(d, o);
                snprintf(what, sizeof what, "%s %dx%d -> %dx%d %s: bilinear vs INTER_LINEAR",
                         pf_pixfmt_name(fmt), c.sw, c.sh, c.dw, c.dh, content);
                report(what, st);
                CHECK(st.max <= 1);

                CHECK_OK(pf_ops_resize(g_ops, &src, &dst, PF_INTERP_NEAREST));
                cv::resize(s, o, d.size(), 0, 0, cv::INTER_NEAREST_EXACT);
                st = diff(d, o);
                snprintf(what, sizeof what, "%s %dx%d -> %dx%d %s: nearest vs INTER_NEAREST_EXACT",
                         pf_pixfmt_name(fmt), c.sw, c.sh, c.dw, c.dh, content);
                report(what, st);
                {
                    /* Every pixel of both outputs against its rule: ours
                     * floor((2i + 1) W / 2w); OpenCV's 16.16 fixed point
                     * (ifx = round(W 2^16 / w), x = (ifx / 2 - 1 + i ifx) >> 16).
                     * Count where the two pick different source pixels. */
                    long differ = 0, bad = 0;
                    const int C = s.channels();
                    const int64_t ifx = (((int64_t)c.sw << 16) + c.dw / 2) / c.dw;
                    const int64_t ify = (((int64_t)c.sh << 16) + c.dh / 2) / c.dh;
                    for (int y = 0; y < c.dh; y++) {
                        const int ky = (int)((int64_t)(2 * y + 1) * c.sh / (2 * c.dh));
                        int oy = (int)((ify / 2 - 1 + ify * y) >> 16);
                        oy = oy > c.sh - 1 ? c.sh - 1 : oy;
                        for (int x = 0; x < c.dw; x++) {
                            const int kx = (int)((int64_t)(2 * x + 1) * c.sw / (2 * c.dw));
                            int ox = (int)((ifx / 2 - 1 + ifx * x) >> 16);
                            ox = ox > c.sw - 1 ? c.sw - 1 : ox;
                            differ += kx != ox || ky != oy;
                            for (int ch = 0; ch < C; ch++) {
                                bad += d.ptr<uint8_t>(y)[x * C + ch] != s.ptr<uint8_t>(ky)[kx * C + ch];
                                bad += o.ptr<uint8_t>(y)[x * C + ch] != s.ptr<uint8_t>(oy)[ox * C + ch];
                            }
                        }
                    }
                    printf("  %-64s %ld of %d pixels sample another source pixel\n", "", differ,
                           c.dw * c.dh);
                    CHECK_EQ_INT(bad, 0);
                    if (!differ) CHECK_EQ_INT(st.max, 0);
                }
                cv::resize(s, o, d.size(), 0, 0, cv::INTER_NEAREST);
                st = diff(d, o);
                snprintf(what, sizeof what, "%s %dx%d -> %dx%d %s: nearest vs INTER_NEAREST",
                         pf_pixfmt_name(fmt), c.sw, c.sh, c.dw, c.dh, content);
                report(what, st);

                if (down) {
                    CHECK_OK(pf_ops_resize(g_ops, &src, &dst, PF_INTERP_AREA));
                    cv::resize(s, o, d.size(), 0, 0, cv::INTER_AREA);
                    st = diff(d, o);
                    snprintf(what, sizeof what, "%s %dx%d -> %dx%d %s: area vs INTER_AREA",
                             pf_pixfmt_name(fmt), c.sw, c.sh, c.dw, c.dh, content);
                    report(what, st);
                    CHECK(st.max <= 1);
                    if (factor == 1 || factor == 3) CHECK_EQ_INT(st.max, 0);
                    if (factor == 2) {
                        /* Every difference is a tie: block sum = 2 (mod 4). */
                        int ties_bad = 0;
                        const int C = s.channels();
                        for (int y = 0; y < d.rows; y++)
                            for (int x = 0; x < d.cols * C; x++) {
                                int a = d.ptr<uint8_t>(y)[x], b = o.ptr<uint8_t>(y)[x];
                                if (a == b) continue;
                                int ch = x % C, px = x / C, sum = 0;
                                for (int k = 0; k < 4; k++)
                                    sum += s.ptr<uint8_t>(2 * y + k / 2)[(2 * px + k % 2) * C + ch];
                                ties_bad += sum % 4 != 2 || a != (sum + 2) / 4;
                            }
                        CHECK_EQ_INT(ties_bad, 0);
                    }
                }
                pf_frame_unref(&src);
                pf_frame_unref(&dst);
            }
}

/* A YUV frame packed the way OpenCV expects it (planes back to back, no
 * padding: Y, then UV or U, V), and the single-channel Mat over it. */
static cv::Mat yuv_frame(pf_frame *f, pf_pixfmt fmt, int w, int h, pf_buffer **b)
{
    CHECK_OK(pf_buffer_alloc_host((size_t)w * h * 3 / 2, b));
    CHECK_OK(pf_frame_wrap(f, fmt, w, h, *b, 0, NULL));
    return cv::Mat(h * 3 / 2, w, CV_8UC1, pf_buffer_data(*b));
}

static void test_convert_yuv(void)
{
    const int sizes[][2] = {{1920, 1080}, {64, 48}, {2, 2}};
    const struct {
        pf_pixfmt src, dst;
        int code;
        const char *name;
    } pairs[] = {{PF_PIXFMT_NV12, PF_PIXFMT_RGB24, cv::COLOR_YUV2RGB_NV12, "COLOR_YUV2RGB_NV12"},
                 {PF_PIXFMT_NV12, PF_PIXFMT_BGR24, cv::COLOR_YUV2BGR_NV12, "COLOR_YUV2BGR_NV12"},
                 {PF_PIXFMT_NV12, PF_PIXFMT_RGBA, cv::COLOR_YUV2RGBA_NV12, "COLOR_YUV2RGBA_NV12"},
                 {PF_PIXFMT_I420, PF_PIXFMT_RGB24, cv::COLOR_YUV2RGB_I420, "COLOR_YUV2RGB_I420"},
                 {PF_PIXFMT_I420, PF_PIXFMT_BGR24, cv::COLOR_YUV2BGR_I420, "COLOR_YUV2BGR_I420"}};
    for (const auto &sz : sizes)
        for (const auto &pr : pairs)
            for (int legal = 0; legal < 2; legal++) {
                const int w = sz[0], h = sz[1];
                pf_frame src = {}, dst = {};
                pf_buffer *b = NULL;
                cv::Mat s = yuv_frame(&src, pr.src, w, h, &b);
                cv::Mat d = frame_mat(&dst, pr.dst, w, h);
                if (legal) {
                    /* Y 16..235, chroma 16..240 (what a video decoder emits). */
                    g_rng.fill(s.rowRange(0, h), cv::RNG::UNIFORM, 16, 236);
                    g_rng.fill(s.rowRange(h, h * 3 / 2), cv::RNG::UNIFORM, 16, 241);
                } else {
                    g_rng.fill(s, cv::RNG::UNIFORM, 0, 256);
                }
                CHECK_OK(pf_ops_convert(g_ops, &src, &dst, NULL));
                cv::Mat o;
                cv::cvtColor(s, o, pr.code);
                stats st = diff(d, o);
                char what[128];
                snprintf(what, sizeof what, "%s -> %s %dx%d %s: vs %s", pf_pixfmt_name(pr.src),
                         pf_pixfmt_name(pr.dst), w, h, legal ? "legal range" : "any bytes",
                         pr.name);
                report(what, st);
                /* Within 1 wherever Y >= 16; below that only darker here. */
                int bad = 0;
                const int C = d.channels();
                for (int y = 0; y < h; y++)
                    for (int x = 0; x < w; x++)
                        for (int c = 0; c < C; c++) {
                            int a = d.ptr<uint8_t>(y)[x * C + c], q = o.ptr<uint8_t>(y)[x * C + c];
                            int Y = s.ptr<uint8_t>(y)[x];
                            if (Y >= 16 ? abs(a - q) > 1 : a > q + 1) bad++;
                        }
                CHECK_EQ_INT(bad, 0);
                if (legal) CHECK(st.max <= 1);
                pf_frame_unref(&src);
                pf_frame_unref(&dst);
                pf_buffer_unref(&b);
            }
}

static void test_convert_rgb(void)
{
    for (int smooth = 0; smooth < 2; smooth++) {
        const int w = 640, h = 480;
        pf_frame src = {}, gray = {}, yuv = {};
        pf_buffer *b = NULL;
        cv::Mat s = frame_mat(&src, PF_PIXFMT_RGB24, w, h);
        fill(s, smooth);
        cv::Mat g = frame_mat(&gray, PF_PIXFMT_GRAY8, w, h), o;
        CHECK_OK(pf_ops_convert(g_ops, &src, &gray, NULL));
        cv::cvtColor(s, o, cv::COLOR_RGB2GRAY);
        stats st = diff(g, o);
        char what[128];
        snprintf(what, sizeof what, "rgb24 -> gray8 %dx%d %s: vs COLOR_RGB2GRAY", w, h,
                 smooth ? "smooth" : "noise");
        report(what, st);
        CHECK(st.max <= 1);

        /* RGB -> I420: luma everywhere; chroma on 2x2-constant content. */
        cv::Mat y = yuv_frame(&yuv, PF_PIXFMT_I420, w, h, &b);
        if (smooth) {
            cv::Mat half(h / 2, w / 2, CV_8UC3);
            g_rng.fill(half, cv::RNG::UNIFORM, 0, 256);
            cv::resize(half, s, s.size(), 0, 0, cv::INTER_NEAREST_EXACT);
        }
        CHECK_OK(pf_ops_convert(g_ops, &src, &yuv, NULL));
        cv::cvtColor(s, o, cv::COLOR_RGB2YUV_I420);
        st = diff(y.rowRange(0, h), o.rowRange(0, h));
        snprintf(what, sizeof what, "rgb24 -> i420 %dx%d %s: luma vs COLOR_RGB2YUV_I420", w, h,
                 smooth ? "2x2 blocks" : "noise");
        report(what, st);
        CHECK(st.max <= 1);
        st = diff(y.rowRange(h, h * 3 / 2), o.rowRange(h, h * 3 / 2));
        snprintf(what, sizeof what, "rgb24 -> i420 %dx%d %s: chroma vs COLOR_RGB2YUV_I420", w, h,
                 smooth ? "2x2 blocks" : "noise");
        report(what, st);
        if (smooth) CHECK(st.max <= 1);
        if (!smooth) {
            /* OpenCV's chroma = ours of the top-left pixel of each block. */
            cv::Mat tl;
            cv::resize(s, tl, cv::Size(w / 2, h / 2), 0, 0, cv::INTER_NEAREST); /* pixel 2i */
            cv::resize(tl, s, s.size(), 0, 0, cv::INTER_NEAREST);
            CHECK_OK(pf_ops_convert(g_ops, &src, &yuv, NULL));
            st = diff(y.rowRange(h, h * 3 / 2), o.rowRange(h, h * 3 / 2));
            snprintf(what, sizeof what,
                     "rgb24 -> i420 %dx%d noise: chroma vs OpenCV's, blocks = top-left pixel", w, h);
            report(what, st);
            CHECK(st.max <= 1);
        }
        pf_frame_unref(&src);
        pf_frame_unref(&gray);
        pf_frame_unref(&yuv);
        pf_buffer_unref(&b);
    }
}

int main(void)
{
    pf_test_seed(20261126);
    g_rng = cv::RNG(pf_test_rand());
    cv::setNumThreads(1);
    if (pf_stream_create(NULL, &g_stream) != PF_OK) {
        fprintf(stderr, "stream: %s\n", pf_last_error());
        return 1;
    }
    pf_ops_params op = pf_ops_params_default();
    op.stream = g_stream;
    if (pf_ops_create(&op, &g_ops) != PF_OK) {
        fprintf(stderr, "ops: %s\n", pf_last_error());
        return 1;
    }
    printf("OpenCV %s\n", CV_VERSION);
    PF_RUN(test_resize);
    PF_RUN(test_convert_yuv);
    PF_RUN(test_convert_rgb);
    pf_ops_destroy(&g_ops);
    pf_stream_destroy(&g_stream);
    return pf_test_finish();
}
