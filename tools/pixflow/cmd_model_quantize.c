/* `pixflow model quantize` (and `convert`): post-training int8 quantization into a QDQ ONNX
 * file (pf_model_quantize; docs/quantize.md).
 *
 * JSON keys of --json: file, output, method, percentile, images, norm,
 * weights, activations, nodes, residual_adds, left_float, calib_s, total_s. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_model.h"

static const cli_option quantize_options[] = {
    {"calib", "DIR_OR_GLOB", "calibration images (PNG/JPEG): a directory, a glob or one file"},
    {"output", "OUT.onnx", "(-o) the QDQ ONNX file to write"},
    {"method", "M", "activation ranges: minmax, percentile (default) or entropy"},
    {"percentile", "P", "percentile of |x| for --method percentile (default 99.99)"},
    {"calib-count", "N", "use at most the first N images (default: all)"},
    {"device", "SPEC", "where calibration runs (cpu only in this version)"},
    {"mean", "R,G,B", "input = (pixel * scale - mean) / std per channel (see below)"},
    {"std", "R,G,B", "per-channel divisor (default 1,1,1 when --mean/--scale is given)"},
    {"scale", "S", "pixel (0..255) multiplier (default 1/255)"},
    {"simulate", NULL, "write the quantization as float ops (Div/Round/Clip/Mul), no Q/DQ"},
    {"simulated-copy", "PATH", "also write the --simulate form to PATH (one calibration)"},
    {"json", NULL, "print the summary as one JSON object"},
    {"quiet", NULL, "no progress on stderr"},
    {"help", NULL, "this help"},
    {NULL, NULL, NULL},
};

static void quantize_usage(FILE *f)
{
    fprintf(f, "usage: pixflow model quantize MODEL --calib DIR_OR_GLOB -o OUT.onnx [options]\n\n"
               "Post-training int8 quantization of an ONNX or TFLite model into a standard QDQ\n"
               "ONNX file (opset 17) that pixflow, onnxruntime and TensorRT load: per-channel\n"
               "symmetric int8 weights (scale = max|w| / 127 per output channel), per-tensor\n"
               "symmetric int8 activations at the inputs of Conv/ConvTranspose/Gemm/MatMul and of\n"
               "residual Adds, ranges from running the FP32 model on the calibration images.\n\n"
               "Preprocessing: each image is resized to the model's input size, RGB, in the\n"
               "input's layout, value = (pixel * scale - mean) / std. Defaults by model:\n"
               "TFLite [0,1] (MediaPipe selfie), TFLite face detection [-1,1], ONNX torchvision\n"
               "ImageNet mean 0.485,0.456,0.406 std 0.229,0.224,0.225. Another model: give\n"
               "--mean/--std/--scale as it was trained (e.g. [-1,1]: --mean 0.5,0.5,0.5\n"
               "--std 0.5,0.5,0.5; raw 0..255: --scale 1).\n\n"
               "options:\n");
    cli_print_options(f, quantize_options);
}

static bool parse3(const char *s, float v[3])
{
    char *end;
    for (int c = 0; c < 3; c++) {
        v[c] = strtof(s, &end);
        if (end == s || !isfinite(v[c])) return false;
        s = end;
        if (c < 2) {
            if (*s != ',') {
                if (*s == 0 && c == 0) { /* one value for all channels */
                    v[1] = v[2] = v[0];
                    return true;
                }
                return false;
            }
            s++;
        }
    }
    return *s == 0;
}

bool model_quant_parse_norm(const char *cmd, const cli_option *opts, const cli_args *a,
                            pf_model *m, pf_quant_params *q)
{
    const char *mean = cli_value(opts, a, "mean"), *sd = cli_value(opts, a, "std");
    const char *scale = cli_value(opts, a, "scale");
    if (!mean && !sd && !scale) return true;
    /* Any of them given: start from the model's defaults, replace what is given. */
    q->norm_set = true;
    pf_quant_norm_default(m, &q->scale, q->mean, q->std, NULL);
    if (mean && !parse3(mean, q->mean)) {
        fprintf(stderr, "pixflow %s: --mean '%s': expected R,G,B (three numbers) or one number\n",
                cmd, mean);
        return false;
    }
    if (sd && (!parse3(sd, q->std) || !q->std[0] || !q->std[1] || !q->std[2])) {
        fprintf(stderr, "pixflow %s: --std '%s': expected R,G,B non-zero numbers\n", cmd, sd);
        return false;
    }
    if (scale) {
        char *end;
        q->scale = strtof(scale, &end);
        if (*end || !(q->scale > 0) || !isfinite(q->scale)) {
            fprintf(stderr, "pixflow %s: --scale '%s': expected a number > 0\n", cmd, scale);
            return false;
        }
    }
    return true;
}

bool model_quant_calib_opts(const char *cmd, const cli_option *opts, const cli_args *a,
                            pf_quant_params *q)
{
    const char *dev = cli_value(opts, a, "device");
    if (dev && strcmp(dev, "cpu") != 0) {
        fprintf(stderr, "pixflow %s: --device %s: calibration and comparison run on the CPU in "
                        "this version (the int8 model itself runs anywhere)\n", cmd, dev);
        return false;
    }
    const char *n = cli_value(opts, a, "calib-count");
    long v;
    if (n) {
        if (!cli_parse_long(n, 1, 1000000, &v)) {
            fprintf(stderr, "pixflow %s: --calib-count '%s': expected a whole number >= 1\n", cmd, n);
            return false;
        }
        q->calib_count = (int)v;
    }
    return true;
}

void model_quant_progress(void *user, int done, int total)
{
    const char *what = user;
    if (done == total || done % 10 == 0) {
        fprintf(stderr, "\r%s %d/%d", what, done, total);
        if (done == total) fputc('\n', stderr);
        fflush(stderr);
    }
}

int cmd_model_quantize(int argc, char **argv)
{
    const char *cmd = "model quantize";
    cli_args a;
    if (!cli_parse(cmd, quantize_options, argc, argv, &a)) return CLI_EXIT_USAGE;
    if (cli_flag(quantize_options, &a, "help")) {
        quantize_usage(stdout);
        return CLI_EXIT_OK;
    }
    const char *calib = cli_value(quantize_options, &a, "calib");
    const char *out = cli_value(quantize_options, &a, "output");
    if (a.positional_count != 1 || !calib || !out) {
        fprintf(stderr, "pixflow %s: expected MODEL --calib DIR_OR_GLOB -o OUT.onnx (see "
                        "'pixflow %s --help')\n", cmd, cmd);
        return CLI_EXIT_USAGE;
    }
    pf_quant_params q = pf_quant_params_default();
    q.calib = calib;
    const char *method = cli_value(quantize_options, &a, "method");
    if (method) {
        if (!strcmp(method, "minmax")) q.method = PF_QUANT_MINMAX;
        else if (!strcmp(method, "percentile")) q.method = PF_QUANT_PERCENTILE;
        else if (!strcmp(method, "entropy")) q.method = PF_QUANT_ENTROPY;
        else {
            fprintf(stderr, "pixflow %s: --method '%s': expected minmax, percentile or entropy\n",
                    cmd, method);
            return CLI_EXIT_USAGE;
        }
    }
    const char *pct = cli_value(quantize_options, &a, "percentile");
    if (pct) {
        char *end;
        q.percentile = strtod(pct, &end);
        if (*end || !(q.percentile > 0 && q.percentile <= 100)) {
            fprintf(stderr, "pixflow %s: --percentile '%s': expected a number in (0, 100]\n", cmd, pct);
            return CLI_EXIT_USAGE;
        }
        if (q.method != PF_QUANT_PERCENTILE)
            fprintf(stderr, "pixflow %s: note: --percentile is used by --method percentile only\n", cmd);
    }
    if (!model_quant_calib_opts(cmd, quantize_options, &a, &q)) return CLI_EXIT_USAGE;
    q.simulate = cli_flag(quantize_options, &a, "simulate");
    q.simulated_copy = cli_value(quantize_options, &a, "simulated-copy");
    if (q.simulated_copy && q.simulate) {
        fprintf(stderr, "pixflow %s: --simulated-copy with --simulate: the output is already "
                        "the simulated form\n", cmd);
        return CLI_EXIT_USAGE;
    }
    bool json = cli_flag(quantize_options, &a, "json");
    if (!cli_flag(quantize_options, &a, "quiet")) {
        q.progress = model_quant_progress;
        q.user = "calibrating: image";
    }
    pf_model *m = NULL;
    if (pf_model_load(a.positional[0], &m) != PF_OK) {
        fprintf(stderr, "pixflow %s: %s\n", cmd, pf_last_error());
        return CLI_EXIT_FAIL;
    }
    if (!model_quant_parse_norm(cmd, quantize_options, &a, m, &q)) {
        pf_model_free(&m);
        return CLI_EXIT_USAGE;
    }
    pf_quant_report r;
    pf_status st = pf_model_quantize(m, &q, out, &r);
    pf_model_free(&m);
    if (st) {
        fprintf(stderr, "pixflow %s: %s\n", cmd, pf_last_error());
        return CLI_EXIT_FAIL;
    }
    static const char *const names[] = {"minmax", "percentile", "entropy"};
    if (json) {
        cli_json j;
        cli_json_init(&j, stdout);
        cli_json_object_begin(&j, NULL);
        cli_json_string(&j, "file", a.positional[0]);
        cli_json_string(&j, "output", out);
        cli_json_string(&j, "method", names[q.method]);
        cli_json_double(&j, "percentile", q.percentile);
        cli_json_bool(&j, "simulate", q.simulate);
        cli_json_int(&j, "images", r.images);
        cli_json_string(&j, "norm", r.norm);
        cli_json_int(&j, "weights", r.weights);
        cli_json_int(&j, "activations", r.activations);
        cli_json_int(&j, "nodes", r.nodes);
        cli_json_int(&j, "residual_adds", r.residual_adds);
        cli_json_int(&j, "left_float", r.left_float);
        cli_json_double(&j, "calib_s", r.calib_s);
        cli_json_double(&j, "total_s", r.total_s);
        cli_json_object_end(&j);
        cli_json_finish(&j);
    } else {
        printf("%s -> %s%s\n", a.positional[0], out, q.simulate ? " (simulated: float ops)" : "");
        printf("  method      %s", names[q.method]);
        if (q.method == PF_QUANT_PERCENTILE) printf(" %g", q.percentile);
        printf("\n  images      %d (%s)\n", r.images, r.norm);
        printf("  quantized   %d nodes (Conv/ConvTranspose/Gemm/MatMul), %d weights per channel, "
               "%d activations, %d residual Adds; %d convs on 1x1 maps kept float\n", r.nodes,
               r.weights, r.activations, r.residual_adds, r.left_float);
        printf("  time        %.2f s calibration, %.2f s total\n", r.calib_s, r.total_s);
    }
    return CLI_EXIT_OK;
}

/* `pixflow model convert MODEL -o OUT.onnx`: the loaded model (TFLite
 * included) written as FP32 ONNX (pf_model_save_onnx), the reference other
 * runtimes compare a quantized file against (bench/quant_check.py). */
static const cli_option convert_options[] = {
    {"output", "OUT.onnx", "(-o) the ONNX file to write"},
    {"help", NULL, "this help"},
    {NULL, NULL, NULL},
};

int cmd_model_convert(int argc, char **argv)
{
    const char *cmd = "model convert";
    cli_args a;
    if (!cli_parse(cmd, convert_options, argc, argv, &a)) return CLI_EXIT_USAGE;
    if (cli_flag(convert_options, &a, "help")) {
        printf("usage: pixflow model convert MODEL -o OUT.onnx\n\n"
               "Writes an ONNX or TFLite model as it is loaded (after the graph passes:\n"
               "batch norms folded, constants folded) as an FP32 ONNX file, opset 17.\n\n"
               "options:\n");
        cli_print_options(stdout, convert_options);
        return CLI_EXIT_OK;
    }
    const char *out = cli_value(convert_options, &a, "output");
    if (a.positional_count != 1 || !out) {
        fprintf(stderr, "pixflow %s: expected MODEL -o OUT.onnx\n", cmd);
        return CLI_EXIT_USAGE;
    }
    pf_model *m = NULL;
    pf_status st = pf_model_load(a.positional[0], &m);
    if (st == PF_OK) st = pf_model_save_onnx(m, out);
    pf_model_free(&m);
    if (st) {
        fprintf(stderr, "pixflow %s: %s\n", cmd, pf_last_error());
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}
