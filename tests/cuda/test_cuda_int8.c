/* INT8 on CUDA against the CPU reference: QDQ conv graphs (int8_graphs.h)
 * fused into QCONV at load, run by the CPU executor (plain C reference) and
 * the CUDA executor (tensor-core implicit GEMM where qconv.h allows it,
 * else the direct kernel), on random inputs and edge shapes: channels not a
 * multiple of 32, stride 2, 1x1, 3x3, dilation 2, depthwise, uint8 with a
 * zero point, a quantized residual, float outputs.
 *
 * Tolerances:
 * - FP32 executor, float output (no final Q): within 1e-5 relative + 5e-5
 *   absolute. The int32 sums are exact on both sides; the float epilogue
 *   (scale, bias, float residual, activation) rounds in another order on
 *   the GPU. The first bound, 1e-6 relative, was written before any GPU
 *   run and failed on an H200 (2026-11-28): 3888 of 38400 outputs off, max
 *   3.05e-5 absolute (0.0496427 vs 0.0496425 at the first). An
 *   accumulation error would still show: it is at least one weight-scale
 *   step times an input step (~1e-4 in these cases).
 * - FP32 executor, quantized output (read back through a DequantizeLinear):
 *   within one output step (1 LSB). Why not exact: the CPU reference runs
 *   the same float operations, but the x86 build may keep the scale product
 *   and the division in other registers' precision, and a value at a
 *   rounding boundary then lands one step apart; in practice 0 differ.
 * - FP16 executor: the float input is rounded to half before the input's
 *   QuantizeLinear, which moves some inputs one int8 step: within 4 output
 *   steps for quantized outputs; for float outputs 2e-2 relative + 6e-2
 *   absolute (each moved input changes the sum by one tap's weight x the
 *   input scale; the first bound, 2e-2 absolute, was a guess: on the H200
 *   13 of 38400 outputs were beyond it, max 0.055, e.g. 0.178 vs 0.208). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_test_util.h"
#include "int8_graphs.h"
#include "nn/model.h"
#include "pixflow/nn.h"

static pf_device *g_dev;
static pf_allocator *g_alloc;
static pf_stream *g_stream;

static bool run_exec(pf_model *m, pf_device *dev, pf_nn_precision prec, pf_tensor *in, int n_in,
                     pf_tensor *out)
{
    pf_nn_exec_params p = pf_nn_exec_params_default();
    p.device = dev;
    p.precision = prec;
    p.max_batch = 1;
    pf_nn_exec *x = NULL;
    pf_status st = pf_nn_exec_create(m, &p, &x);
    for (int r = 0; r < 3 && st == PF_OK; r++) /* eager, capture, replay */
        st = pf_nn_exec_run(x, dev ? g_stream : NULL, in, n_in, out, 1);
    if (st == PF_OK && dev) st = pf_stream_synchronize(g_stream);
    if (st != PF_OK) fprintf(stderr, "  run: %s\n", pf_last_error());
    pf_nn_exec_destroy(&x);
    return st == PF_OK;
}

static void check_case(const conv_case *cc, const char *label)
{
    pf_ir_graph *g = NULL;
    float *xin = NULL, *rin = NULL;
    build_conv_case(cc, &g, &xin, &rin);
    REQUIRE(g != NULL);
    pf_model *m = NULL;
    CHECK_OK(pf_model_from_graph(g, &m));
    REQUIRE(m != NULL);
    const int n_in = pf_model_num_inputs(m);
    pf_tensor hin[2], din[2], href, hout, dout;
    memset(hin, 0, sizeof hin);
    memset(din, 0, sizeof din);
    memset(&href, 0, sizeof href);
    memset(&hout, 0, sizeof hout);
    memset(&dout, 0, sizeof dout);
    const float *src[2] = {xin, rin};
    for (int i = 0; i < n_in; i++) {
        pf_model_io mi = pf_model_input(m, i);
        CHECK_OK(pf_tensor_alloc(&hin[i], PF_DTYPE_F32, mi.ndim, mi.shape, PF_LAYOUT_NONE, NULL,
                                 NULL));
        memcpy(hin[i].data, src[i], pf_tensor_nbytes(&hin[i]));
        CHECK_OK(pf_tensor_alloc(&din[i], PF_DTYPE_F32, mi.ndim, mi.shape, PF_LAYOUT_NONE,
                                 g_alloc, g_stream));
        cudaMemcpy(din[i].data, hin[i].data, pf_tensor_nbytes(&hin[i]), cudaMemcpyHostToDevice);
    }
    pf_model_io mo = pf_model_output(m, 0);
    CHECK_EQ_INT(mo.dtype, PF_DTYPE_F32);
    CHECK_OK(pf_tensor_alloc(&href, PF_DTYPE_F32, mo.ndim, mo.shape, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&hout, PF_DTYPE_F32, mo.ndim, mo.shape, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&dout, PF_DTYPE_F32, mo.ndim, mo.shape, PF_LAYOUT_NONE, g_alloc,
                             g_stream));
    bool ok = run_exec(m, NULL, PF_NN_FP32, hin, n_in, &href);
    CHECK(ok);
    const int64_t n = pf_tensor_numel(&href);
    const float *r = href.data, *c = hout.data;
    for (int prec = 0; ok && prec < 2; prec++) {
        bool run_ok = run_exec(m, g_dev, prec ? PF_NN_FP16 : PF_NN_FP32, din, n_in, &dout);
        CHECK(run_ok);
        if (!run_ok) break;
        cudaMemcpy(hout.data, dout.data, pf_tensor_nbytes(&hout), cudaMemcpyDeviceToHost);
        int64_t diff = 0, bad = 0, first = -1;
        double maxe = 0;
        for (int64_t i = 0; i < n; i++) {
            const double e = fabs((double)c[i] - (double)r[i]);
            double tol;
            if (!cc->quant_out) tol = prec ? 2e-2 * fabs(r[i]) + 6e-2 : 1e-5 * fabs(r[i]) + 5e-5;
            else tol = (prec ? 4.0 : 1.0) * PF_INT8_TEST_YS * 1.001;
            if (e > 0) diff++;
            if (!(e <= tol)) {
                if (first < 0) first = i;
                bad++;
            }
            if (e > maxe) maxe = e;
        }
        printf("    %-28s %s: %lld outputs, %lld differ, max err %.3g%s\n", label,
               prec ? "fp16" : "fp32", (long long)n, (long long)diff, maxe,
               cc->quant_out ? " (1 LSB = 0.0236)" : "");
        if (bad)
            fprintf(stderr, "  %s %s: %lld out of tolerance, first at %lld: cuda %g cpu %g\n",
                    label, prec ? "fp16" : "fp32", (long long)bad, (long long)first,
                    (double)c[first], (double)r[first]);
        CHECK_EQ_INT(bad, 0);
    }
    for (int i = 0; i < n_in; i++) {
        pf_tensor_unref(&hin[i]);
        pf_tensor_unref(&din[i]);
    }
    pf_tensor_unref(&href);
    pf_tensor_unref(&hout);
    pf_tensor_unref(&dout);
    pf_model_free(&m);
    free(xin);
    free(rin);
}

static void test_qconv_cases(void)
{
    static const struct {
        conv_case c;
        const char *label;
    } cases[] = {
        /* C, H, W, M, k, stride, dil, group, pad, dtype, xzp, yzp, residual, quant_out, dq_out,
         * qdq_mid */
        {{32, 17, 19, 40, 3, 1, 1, 1, 1, PF_IR_I8, 0, 0, false, true, true, false}, "3x3 M=40 (igemm)"},
        {{48, 16, 15, 24, 3, 2, 1, 1, 1, PF_IR_I8, 0, -5, false, true, true, false}, "3x3 stride 2"},
        {{16, 9, 9, 8, 1, 1, 1, 1, 0, PF_IR_I8, 0, 0, false, true, true, false}, "1x1 C=16 M=8"},
        {{32, 12, 12, 32, 3, 1, 2, 1, 2, PF_IR_I8, 0, 0, true, true, true, false}, "dilated + residual"},
        {{64, 20, 20, 96, 3, 1, 1, 1, 1, PF_IR_I8, 0, 0, false, false, false, false}, "float out (exact)"},
        {{256, 33, 33, 130, 1, 1, 1, 1, 0, PF_IR_I8, 0, 3, true, true, true, false}, "1x1 256->130 + res"},
        {{32, 10, 10, 32, 3, 1, 1, 32, 1, PF_IR_I8, 0, 0, false, true, true, false}, "depthwise (direct)"},
        {{5, 9, 11, 7, 3, 1, 1, 1, 1, PF_IR_U8, 128, 0, false, true, true, false}, "C=5 uint8 (direct)"},
        {{24, 8, 8, 36, 3, 2, 1, 2, 1, PF_IR_I8, 0, 0, false, false, false, false}, "grouped float out"},
        {{64, 16, 16, 64, 1, 1, 1, 1, 0, PF_IR_I8, 0, 0, true, true, true, true}, "Q-DQ-Add residual"},
    };
    pf_test_seed(1818);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i].c, cases[i].label);
}

int main(void)
{
    g_dev = pf_test_cuda_device_or_skip();
    g_alloc = pf_test_allocator_create(g_dev, "test-cuda-int8", PF_MEM_DEVICE, 0);
    g_stream = make_stream(g_dev, 0);
    if (!g_alloc || !g_stream) return 1;
    PF_RUN(test_qconv_cases);
    pf_stream_destroy(&g_stream);
    pf_allocator_destroy(&g_alloc);
    return pf_test_finish();
}
