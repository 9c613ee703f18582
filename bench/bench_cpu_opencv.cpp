/* bench_cpu_opencv: pixflow's CPU ops next to OpenCV doing the same work on
 * the same inputs, in one run, as ratios (OpenCV time / pixflow time: above 1
 * means pixflow is faster).
 *
 *   bench_cpu_opencv [--iters N] [--json] [--only GROUP[,GROUP...]] [--single]
 *
 * --single: both sides on the calling thread alone (a pixflow pool of one
 * thread, cv::setNumThreads(1)), timed in that thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID) instead of wall time: a comparison that a busy
 * shared machine disturbs much less (time spent waiting for a core is not
 * counted; cache and memory contention still are).
 *
 * GROUP: preprocess, equirect, resize (resize and convert), mask, composite.
 * PF_CPU_SIMD=none|avx2 in the environment caps pixflow's SIMD kernels
 * (src/core/cpu_features.h): the scalar "before" on the same machine.
 *
 * Both sides use every core: pixflow through its pf_ops thread pool
 * (pf_cpu_count() threads), OpenCV through its own parallel backend
 * (cv::getNumThreads()). Each case runs once to warm up, then N times; the
 * median wall time is reported. Inputs are random (not zeros), outputs are
 * preallocated on both sides. The OpenCV recipe for each case is the usual
 * way to get the same result with OpenCV's API; where it computes something
 * slightly different (fixed-point bilinear weights, a different blur
 * approximation) the case's note says so. Built only where OpenCV is found. */
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "pixflow/pixflow.h"

namespace {

std::string g_only; /* comma-separated groups, empty: all */

bool want(const char *group)
{
    if (g_only.empty()) return true;
    std::string list = "," + g_only + ",";
    return list.find(std::string(",") + group + ",") != std::string::npos;
}

struct Case {
    std::string name, note;
    double pf_ms, cv_ms;
};

bool g_single = false; /* --single: one thread each, thread CPU time */

double thread_cpu_ms()
{
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

double median_ms(int iters, const std::function<void()> &fn)
{
    fn(); /* warm-up: first-touch, thread start, table building */
    std::vector<double> t;
    for (int i = 0; i < iters; i++) {
        if (g_single) {
            const double a = thread_cpu_ms();
            fn();
            t.push_back(thread_cpu_ms() - a);
            continue;
        }
        auto a = std::chrono::steady_clock::now();
        fn();
        auto b = std::chrono::steady_clock::now();
        t.push_back(std::chrono::duration<double, std::milli>(b - a).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

void check(pf_status st, const char *what)
{
    if (st != PF_OK) {
        std::fprintf(stderr, "bench_cpu_opencv: %s: %s: %s\n", what, pf_status_str(st),
                     pf_last_error());
        std::exit(1);
    }
}

/* A pixflow frame over the cv::Mat's pixels (no copy). */
pf_frame wrap(cv::Mat &m, pf_pixfmt fmt, int w, int h)
{
    pf_buffer *b = nullptr;
    check(pf_buffer_wrap(m.data, m.total() * m.elemSize(), PF_MEM_HOST, nullptr, nullptr, nullptr,
                         &b),
          "wrap");
    size_t strides[PF_FRAME_MAX_PLANES] = {m.step[0], 0, 0};
    if (fmt == PF_PIXFMT_NV12) strides[1] = m.step[0];
    if (fmt == PF_PIXFMT_I420) strides[1] = strides[2] = m.step[0] / 2;
    pf_frame f = {};
    check(pf_frame_wrap(&f, fmt, w, h, b, 0, strides), "frame wrap");
    pf_buffer_unref(&b);
    return f;
}

pf_tensor wrap_tensor(cv::Mat &m, pf_dtype dt)
{
    pf_buffer *b = nullptr;
    check(pf_buffer_wrap(m.data, m.total() * m.elemSize(), PF_MEM_HOST, nullptr, nullptr, nullptr,
                         &b),
          "wrap");
    int64_t shape[2] = {m.rows, m.cols};
    pf_tensor t = {};
    check(pf_tensor_wrap(&t, b, 0, dt, 2, shape, nullptr, PF_LAYOUT_NONE), "tensor wrap");
    pf_buffer_unref(&b);
    return t;
}

} // namespace

int main(int argc, char **argv)
{
    int iters = 10;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) iters = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--json")) json = true;
        else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) g_only = argv[++i];
        else if (!std::strcmp(argv[i], "--single")) g_single = true;
        else if (!std::strcmp(argv[i], "--device") && i + 1 < argc) ++i; /* always the CPU */
        else {
            std::fprintf(stderr, "usage: bench_cpu_opencv [--iters N] [--json] [--only GROUP,...] [--single]\n");
            return std::strcmp(argv[i], "--help") ? 2 : 0;
        }
    }

    pf_stream *s = nullptr;
    check(pf_stream_create(nullptr, &s), "stream");
    pf_ops_params op = pf_ops_params_default();
    op.stream = s;
    pf_threadpool *pool1 = nullptr;
    if (g_single) {
        pf_threadpool_params tp = pf_threadpool_params_default();
        tp.num_threads = 1; /* the calling thread only */
        check(pf_threadpool_create(&tp, &pool1), "pool");
        op.pool = pool1;
        cv::setNumThreads(1);
    }
    const int pf_threads = g_single ? 1 : pf_cpu_count();
    pf_ops *ops = nullptr;
    check(pf_ops_create(&op, &ops), "ops");
    cv::RNG rng(12345);
    std::vector<Case> cases;

    /* 1080p BGR -> 512x512 RGB f32 NCHW, ImageNet mean/std. */
    if (want("preprocess")) {
        cv::Mat bgr(1080, 1920, CV_8UC3);
        rng.fill(bgr, cv::RNG::UNIFORM, 0, 256);
        pf_frame f = wrap(bgr, PF_PIXFMT_BGR24, 1920, 1080);
        const pf_frame *srcs[1] = {&f};
        pf_tensor t = {};
        int64_t shape[4] = {1, 3, 512, 512};
        check(pf_tensor_alloc(&t, PF_DTYPE_F32, 4, shape, PF_LAYOUT_NCHW, nullptr, nullptr), "t");
        pf_preprocess_params pp = pf_preprocess_params_default();
        const float mean[3] = {0.485f, 0.456f, 0.406f}, sd[3] = {0.229f, 0.224f, 0.225f};
        for (int c = 0; c < 3; c++) {
            pp.mean[c] = mean[c];
            pp.std[c] = sd[c];
        }
        double pf = median_ms(iters, [&] { check(pf_ops_preprocess(ops, srcs, nullptr, 1, &t, &pp, nullptr), "pre"); });
        cv::Mat small, rgb, fl;
        std::vector<cv::Mat> planes(3);
        for (int c = 0; c < 3; c++) planes[c] = cv::Mat(512, 512, CV_32F, (float *)t.data + c * 512 * 512);
        double cvt = median_ms(iters, [&] {
            cv::resize(bgr, small, cv::Size(512, 512), 0, 0, cv::INTER_LINEAR);
            cv::cvtColor(small, rgb, cv::COLOR_BGR2RGB);
            rgb.convertTo(fl, CV_32FC3, 1.0 / 255.0);
            fl -= cv::Scalar(mean[0], mean[1], mean[2]);
            cv::divide(fl, cv::Scalar(sd[0], sd[1], sd[2]), fl);
            cv::split(fl, planes);
        });
        cases.push_back({"preprocess 1080p bgr -> 512x512 rgb f32 nchw", "cv: resize+cvtColor+convertTo+normalise+split", pf, cvt});
        pf_tensor_unref(&t);
        pf_frame_unref(&f);
    }

    /* Equirect 7680x3840 -> 8 views 1920x1080: cv::remap with maps from the
     * same formula, built outside the timed region (pixflow computes its
     * coordinates inside). */
    if (want("equirect")) {
        const int W = 7680, H = 3840, VW = 1920, VH = 1080, NV = 8;
        cv::Mat src(H, W, CV_8UC3);
        rng.fill(src, cv::RNG::UNIFORM, 0, 256);
        pf_frame f = wrap(src, PF_PIXFMT_RGB24, W, H);
        std::vector<cv::Mat> outs(NV), cvouts(NV), mapx(NV), mapy(NV);
        std::vector<pf_frame> of(NV);
        std::vector<pf_frame *> op_ptr(NV);
        pf_view views[NV];
        for (int v = 0; v < NV; v++) {
            views[v] = pf_view{45.0f * v, 0, 0, 90, VW, VH};
            outs[v].create(VH, VW, CV_8UC3);
            cvouts[v].create(VH, VW, CV_8UC3);
            of[v] = wrap(outs[v], PF_PIXFMT_RGB24, VW, VH);
            op_ptr[v] = &of[v];
            mapx[v].create(VH, VW, CV_32F);
            mapy[v].create(VH, VW, CV_32F);
            double yaw = views[v].yaw * M_PI / 180, fl = (VW / 2.0) / std::tan(M_PI / 4);
            for (int j = 0; j < VH; j++)
                for (int i = 0; i < VW; i++) {
                    double dx = i + 0.5 - VW / 2.0, dy = -(j + 0.5 - VH / 2.0), dz = fl;
                    double wx = dx * std::cos(yaw) + dz * std::sin(yaw), wz = -dx * std::sin(yaw) + dz * std::cos(yaw);
                    double lon = std::atan2(wx, wz), lat = std::asin(dy / std::sqrt(dx * dx + dy * dy + dz * dz));
                    mapx[v].at<float>(j, i) = (float)((lon / (2 * M_PI) + 0.5) * W - 0.5);
                    mapy[v].at<float>(j, i) = (float)((0.5 - lat / M_PI) * H - 0.5);
                }
        }
        double pf = median_ms(std::max(1, iters / 3), [&] {
            check(pf_ops_equirect_to_views(ops, &f, views, op_ptr.data(), NV, PF_INTERP_BILINEAR), "views");
        });
        double cvt = median_ms(std::max(1, iters / 3), [&] {
            for (int v = 0; v < NV; v++)
                cv::remap(src, cvouts[v], mapx[v], mapy[v], cv::INTER_LINEAR, cv::BORDER_WRAP);
        });
        cases.push_back({"equirect 8K -> 8 views 1080p bilinear", "cv: remap with precomputed maps", pf, cvt});
        for (auto &x : of) pf_frame_unref(&x);
        pf_frame_unref(&f);
    }

    /* Resize and colour conversion. */
    if (want("resize")) {
        cv::Mat bgr(1080, 1920, CV_8UC3), small(512, 512, CV_8UC3), cvsmall;
        rng.fill(bgr, cv::RNG::UNIFORM, 0, 256);
        pf_frame f = wrap(bgr, PF_PIXFMT_BGR24, 1920, 1080), d = wrap(small, PF_PIXFMT_BGR24, 512, 512);
        for (pf_interp in : {PF_INTERP_BILINEAR, PF_INTERP_AREA}) {
            int cvin = in == PF_INTERP_AREA ? cv::INTER_AREA : cv::INTER_LINEAR;
            double pf = median_ms(iters, [&] { check(pf_ops_resize(ops, &f, &d, in), "resize"); });
            double cvt = median_ms(iters, [&] { cv::resize(bgr, cvsmall, cv::Size(512, 512), 0, 0, cvin); });
            cases.push_back({std::string("resize 1080p -> 512x512 ") + (in == PF_INTERP_AREA ? "area" : "bilinear"),
                             "cv: resize", pf, cvt});
        }
        cv::Mat nv12(1080 * 3 / 2, 1920, CV_8UC1), rgb(1080, 1920, CV_8UC3), cvrgb;
        rng.fill(nv12, cv::RNG::UNIFORM, 0, 256);
        pf_frame yuv = wrap(nv12, PF_PIXFMT_NV12, 1920, 1080), out = wrap(rgb, PF_PIXFMT_RGB24, 1920, 1080);
        double pf = median_ms(iters, [&] { check(pf_ops_convert(ops, &yuv, &out, nullptr), "convert"); });
        double cvt = median_ms(iters, [&] { cv::cvtColor(nv12, cvrgb, cv::COLOR_YUV2RGB_NV12); });
        cases.push_back({"convert nv12 -> rgb24 1080p", "cv: cvtColor (BT.601 limited, fixed point)", pf, cvt});
        pf_frame_unref(&f);
        pf_frame_unref(&d);
        pf_frame_unref(&yuv);
        pf_frame_unref(&out);
    }

    /* Mask post-processing and refinement at 1080p. */
    if (want("mask")) {
        cv::Mat prob(1080, 1920, CV_32F), feat(1080, 1920, CV_32F), cvfeat, mask8(1080, 1920, CV_8U),
            out8(1080, 1920, CV_8U), cvout8, cvthr;
        rng.fill(prob, cv::RNG::UNIFORM, 0.0, 1.0);
        pf_tensor tp = wrap_tensor(prob, PF_DTYPE_F32), tf = wrap_tensor(feat, PF_DTYPE_F32);
        pf_tensor tm = wrap_tensor(mask8, PF_DTYPE_U8), to = wrap_tensor(out8, PF_DTYPE_U8);
        double pf = median_ms(iters, [&] { check(pf_ops_mask_threshold(ops, &tp, false, 0.5f, &tm), "thr"); });
        double cvt = median_ms(iters, [&] {
            cv::threshold(prob, cvthr, 0.5, 255.0, cv::THRESH_BINARY);
            cvthr.convertTo(cvout8, CV_8U);
        });
        cases.push_back({"mask threshold 1080p f32 -> u8", "cv: threshold + convertTo", pf, cvt});
        pf = median_ms(iters, [&] { check(pf_ops_mask_feather(ops, &tp, &tf, 4.0f), "feather"); });
        cvt = median_ms(iters, [&] { cv::GaussianBlur(prob, cvfeat, cv::Size(25, 25), 4.0, 4.0, cv::BORDER_REPLICATE); });
        cases.push_back({"mask feather 1080p sigma 4", "cv: GaussianBlur 25x25", pf, cvt});
        cv::Mat el = cv::getStructuringElement(cv::MORPH_RECT, cv::Size(7, 7));
        pf = median_ms(iters, [&] { check(pf_ops_mask_morph(ops, &tm, &to, PF_MORPH_CLOSE, 3), "morph"); });
        cvt = median_ms(iters, [&] { cv::morphologyEx(mask8, cvout8, cv::MORPH_CLOSE, el); });
        cases.push_back({"mask close 1080p radius 3", "cv: morphologyEx 7x7 rect", pf, cvt});
        pf_tensor_unref(&tp);
        pf_tensor_unref(&tf);
        pf_tensor_unref(&tm);
        pf_tensor_unref(&to);
    }

    /* Compositing 1080p RGB with a 256x256 model mask. */
    if (want("composite")) {
        cv::Mat rgb(1080, 1920, CV_8UC3), out(1080, 1920, CV_8UC3), m256(256, 256, CV_32F), cvout;
        rng.fill(rgb, cv::RNG::UNIFORM, 0, 256);
        rng.fill(m256, cv::RNG::UNIFORM, 0.0, 1.0);
        pf_frame f = wrap(rgb, PF_PIXFMT_RGB24, 1920, 1080), o = wrap(out, PF_PIXFMT_RGB24, 1920, 1080);
        pf_tensor tm = wrap_tensor(m256, PF_DTYPE_F32);
        cv::Mat colour(1080, 1920, CV_8UC3, cv::Scalar(0, 177, 64)), mbig, inv, blurred;
        for (float sigma : {0.0f, 32.0f}) {
            pf_background bg = {};
            bg.kind = sigma > 0 ? PF_BG_BLUR : PF_BG_COLOR;
            bg.color[0] = 0;
            bg.color[1] = 177;
            bg.color[2] = 64;
            bg.blur_sigma = sigma;
            double pf = median_ms(iters, [&] { check(pf_ops_composite(ops, &f, &tm, &bg, &o), "composite"); });
            double cvt = median_ms(iters, [&] {
                cv::resize(m256, mbig, cv::Size(1920, 1080), 0, 0, cv::INTER_LINEAR);
                inv = 1.0f - mbig;
                if (sigma > 0) {
                    cv::GaussianBlur(rgb, blurred, cv::Size(0, 0), sigma, sigma, cv::BORDER_REPLICATE);
                    cv::blendLinear(rgb, blurred, mbig, inv, cvout);
                } else {
                    cv::blendLinear(rgb, colour, mbig, inv, cvout);
                }
            });
            cases.push_back({sigma > 0 ? "composite 1080p over blur sigma 32" : "composite 1080p over colour",
                             sigma > 0 ? "cv: resize mask + GaussianBlur (exact, full res) + blendLinear; "
                                         "pixflow blurs at 1/8 resolution (ops.h)"
                                       : "cv: resize mask + blendLinear",
                             pf, cvt});
        }
        pf_tensor_unref(&tm);
        pf_frame_unref(&f);
        pf_frame_unref(&o);
    }

    if (json) {
        std::printf("{\"bench\": \"cpu_opencv\", \"threads\": %d, \"opencv_threads\": %d, \"opencv\": \"%s\", \"cases\": [",
                    pf_threads, cv::getNumThreads(), CV_VERSION);
        for (size_t i = 0; i < cases.size(); i++)
            std::printf("%s{\"name\": \"%s\", \"pixflow_ms\": %.4f, \"opencv_ms\": %.4f, \"ratio\": %.3f}",
                        i ? ", " : "", cases[i].name.c_str(), cases[i].pf_ms, cases[i].cv_ms,
                        cases[i].cv_ms / cases[i].pf_ms);
        std::printf("]}\n");
    } else {
        std::printf("bench_cpu_opencv: pixflow CPU ops (%d threads) vs OpenCV %s (%d threads), median of %d%s\n",
                    pf_threads, CV_VERSION, cv::getNumThreads(), iters,
                    g_single ? ", thread CPU time" : "");
        std::printf("PF_CPU_SIMD=%s\n\n", std::getenv("PF_CPU_SIMD") ? std::getenv("PF_CPU_SIMD") : "(unset: the CPU's best)");
        std::printf("%-46s %12s %12s %8s\n", "case", "pixflow ms", "OpenCV ms", "ratio");
        for (auto &c : cases)
            std::printf("%-46s %12.3f %12.3f %7.2fx   %s\n", c.name.c_str(), c.pf_ms, c.cv_ms,
                        c.cv_ms / c.pf_ms, c.note.c_str());
        std::printf("\nratio = OpenCV / pixflow (> 1: pixflow faster)\n");
    }
    pf_ops_destroy(&ops);
    if (pool1) pf_threadpool_destroy(&pool1);
    pf_stream_destroy(&s);
    return 0;
}
