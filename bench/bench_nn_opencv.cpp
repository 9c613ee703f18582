/* bench_nn_opencv: pixflow's CPU inference next to OpenCV's DNN module on the
 * same ONNX model and the same input, in one run.
 *
 *   bench_nn_opencv --model FILE.onnx [--runs N] [--json]
 *
 * Both sides use every core (pixflow: its own pool of pf_cpu_count() threads
 * plus OpenBLAS; OpenCV: cv::getNumThreads()). The input is uniform random in
 * [-2, 2] with the model's shape at batch 1; each side runs once to warm up
 * (plan building, weight packing), then `runs` times; the median wall time is
 * reported, with the ratio OpenCV / pixflow (above 1: pixflow is faster) and
 * the largest absolute difference between the two outputs (first output).
 * Built only where OpenCV's dnn module is found. */
#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "pixflow/pixflow.h"

namespace {

double now_ms()
{
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int fail(const char *what)
{
    std::fprintf(stderr, "bench_nn_opencv: %s: %s\n", what, pf_last_error());
    return 1;
}

}  // namespace

int main(int argc, char **argv)
{
    const char *model = nullptr;
    int runs = 10;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--model") && i + 1 < argc) model = argv[++i];
        else if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) runs = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--json")) json = true;
        else if (!std::strcmp(argv[i], "--device") && i + 1 < argc) i++; /* CPU only */
        else {
            std::fprintf(stderr, "usage: bench_nn_opencv --model FILE.onnx [--runs N] [--json]\n");
            return 2;
        }
    }
    if (!model) {
        std::fprintf(stderr, "bench_nn_opencv: --model FILE.onnx is required\n");
        return 2;
    }
    if (runs < 1) runs = 1;

    pf_model *m = nullptr;
    if (pf_model_load(model, &m) != PF_OK) return fail("load");
    if (pf_model_num_inputs(m) != 1) {
        std::fprintf(stderr, "bench_nn_opencv: %s: models with one input only\n", model);
        return 1;
    }
    pf_model_io in = pf_model_input(m, 0), out = pf_model_output(m, 0);
    int64_t shape[PF_NN_MAX_DIMS];
    for (int d = 0; d < in.ndim; d++) shape[d] = in.shape[d] < 0 ? 1 : in.shape[d];
    pf_tensor tin, tout;
    if (pf_tensor_alloc(&tin, PF_DTYPE_F32, in.ndim, shape, in.layout, nullptr, nullptr))
        return fail("input");
    int64_t oshape[PF_NN_MAX_DIMS];
    for (int d = 0; d < out.ndim; d++) oshape[d] = out.shape[d] < 0 ? 1 : out.shape[d];
    if (pf_tensor_alloc(&tout, PF_DTYPE_F32, out.ndim, oshape, out.layout, nullptr, nullptr))
        return fail("output");
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    float *x = static_cast<float *>(tin.data);
    int64_t n_in = pf_tensor_numel(&tin);
    for (int64_t i = 0; i < n_in; i++) x[i] = dist(rng);

    pf_nn_exec_params p = pf_nn_exec_params_default();
    pf_nn_exec *ex = nullptr;
    if (pf_nn_exec_create(m, &p, &ex) != PF_OK) return fail("executor");
    if (pf_nn_exec_run(ex, nullptr, &tin, 1, &tout, 1) != PF_OK) return fail("run");
    std::vector<double> t_pf;
    for (int r = 0; r < runs; r++) {
        double t0 = now_ms();
        if (pf_nn_exec_run(ex, nullptr, &tin, 1, &tout, 1) != PF_OK) return fail("run");
        t_pf.push_back(now_ms() - t0);
    }

    cv::dnn::Net net = cv::dnn::readNetFromONNX(model);
    net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
    net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
    std::vector<int> sz(shape, shape + in.ndim);
    cv::Mat blob(static_cast<int>(sz.size()), sz.data(), CV_32F, tin.data);
    net.setInput(blob);
    cv::Mat cv_out = net.forward().clone();
    std::vector<double> t_cv;
    for (int r = 0; r < runs; r++) {
        double t0 = now_ms();
        net.setInput(blob);
        cv::Mat o = net.forward();
        t_cv.push_back(now_ms() - t0);
    }

    double max_diff = -1.0;
    int64_t n_out = pf_tensor_numel(&tout);
    if (static_cast<int64_t>(cv_out.total()) == n_out && cv_out.isContinuous()) {
        const float *a = static_cast<const float *>(tout.data);
        const float *b = cv_out.ptr<float>();
        max_diff = 0.0;
        for (int64_t i = 0; i < n_out; i++)
            max_diff = std::max(max_diff, static_cast<double>(std::fabs(a[i] - b[i])));
    }
    double pf_ms = median(t_pf), cv_ms = median(t_cv);
    const char *name = std::strrchr(model, '/') ? std::strrchr(model, '/') + 1 : model;
    if (json) {
        std::printf("{\"bench\":\"nn_opencv\",\"model\":\"%s\",\"threads_pixflow\":%d,"
                    "\"threads_opencv\":%d,\"pixflow_ms\":%.3f,\"opencv_ms\":%.3f,"
                    "\"ratio\":%.3f,\"max_abs_diff\":%.3g,\"opencv\":\"%s\"}\n",
                    name, pf_cpu_count(), cv::getNumThreads(), pf_ms, cv_ms, cv_ms / pf_ms,
                    max_diff, CV_VERSION);
    } else {
        std::printf("bench_nn_opencv: %s, batch 1, median of %d runs, %d cores\n", name, runs,
                    pf_cpu_count());
        std::printf("  pixflow CPU : %9.2f ms\n  OpenCV %-5s: %9.2f ms\n  OpenCV / pixflow: %.2fx"
                    "  (max |diff| %.3g)\n",
                    pf_ms, CV_VERSION, cv_ms, cv_ms / pf_ms, max_diff);
    }
    pf_nn_exec_destroy(&ex);
    pf_tensor_unref(&tin);
    pf_tensor_unref(&tout);
    pf_model_free(&m);
    return 0;
}
