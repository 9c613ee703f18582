/* `pixflow model compare`: a model (an int8 QDQ file, say) against its FP32
 * reference on the same images (pf_model_compare; docs/quantize.md).
 *
 * JSON keys of --json: reference, model, images, outputs [{name, max_abs,
 * mean_abs, segmentation, classes, agreement, miou}] (the last three only
 * for segmentation outputs). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cmd_model.h"

static const cli_option compare_options[] = {
    {"inputs", "DIR_OR_GLOB", "images (PNG/JPEG) to run both models on"},
    {"calib-count", "N", "use at most the first N images (default: all)"},
    {"device", "SPEC", "where both models run (cpu only in this version)"},
    {"mean", "R,G,B", "preprocessing as for 'model quantize' (default: the model's)"},
    {"std", "R,G,B", "per-channel divisor"},
    {"scale", "S", "pixel (0..255) multiplier (default 1/255)"},
    {"json", NULL, "print the figures as one JSON object"},
    {"quiet", NULL, "no progress on stderr"},
    {"help", NULL, "this help"},
    {NULL, NULL, NULL},
};

static void compare_usage(FILE *f)
{
    fprintf(f, "usage: pixflow model compare FP32_MODEL MODEL --inputs DIR_OR_GLOB [options]\n\n"
               "Runs both models on every image (preprocessed as 'pixflow model quantize' does,\n"
               "from FP32_MODEL's defaults or --mean/--std/--scale) and prints per output the\n"
               "max and mean |MODEL - FP32_MODEL|; for segmentation outputs (4-D, H, W >= 8) also\n"
               "the pixel agreement of the two label maps and their IoU: argmax over channels\n"
               "(mIoU over the classes either map uses) or, for one channel, mask > 0.5.\n"
               "Intersections and unions are summed over all images before dividing.\n\n"
               "options:\n");
    cli_print_options(f, compare_options);
}

int cmd_model_compare(int argc, char **argv)
{
    const char *cmd = "model compare";
    cli_args a;
    if (!cli_parse(cmd, compare_options, argc, argv, &a)) return CLI_EXIT_USAGE;
    if (cli_flag(compare_options, &a, "help")) {
        compare_usage(stdout);
        return CLI_EXIT_OK;
    }
    const char *inputs = cli_value(compare_options, &a, "inputs");
    if (a.positional_count != 2 || !inputs) {
        fprintf(stderr, "pixflow %s: expected FP32_MODEL MODEL --inputs DIR_OR_GLOB (see "
                        "'pixflow %s --help')\n", cmd, cmd);
        return CLI_EXIT_USAGE;
    }
    pf_quant_params q = pf_quant_params_default();
    q.calib = inputs;
    if (!model_quant_calib_opts(cmd, compare_options, &a, &q)) return CLI_EXIT_USAGE;
    if (!cli_flag(compare_options, &a, "quiet")) {
        q.progress = model_quant_progress;
        q.user = "comparing: image";
    }
    pf_model *ref = NULL, *test = NULL;
    if (pf_model_load(a.positional[0], &ref) != PF_OK || pf_model_load(a.positional[1], &test) != PF_OK) {
        fprintf(stderr, "pixflow %s: %s\n", cmd, pf_last_error());
        pf_model_free(&ref);
        return CLI_EXIT_FAIL;
    }
    int rc = CLI_EXIT_OK;
    pf_quant_compare r;
    if (!model_quant_parse_norm(cmd, compare_options, &a, ref, &q)) {
        rc = CLI_EXIT_USAGE;
    } else if (pf_model_compare(ref, test, &q, &r) != PF_OK) {
        fprintf(stderr, "pixflow %s: %s\n", cmd, pf_last_error());
        rc = CLI_EXIT_FAIL;
    } else if (cli_flag(compare_options, &a, "json")) {
        cli_json j;
        cli_json_init(&j, stdout);
        cli_json_object_begin(&j, NULL);
        cli_json_string(&j, "reference", a.positional[0]);
        cli_json_string(&j, "model", a.positional[1]);
        cli_json_int(&j, "images", r.images);
        cli_json_array_begin(&j, "outputs");
        for (int i = 0; i < r.n_outputs; i++) {
            cli_json_object_begin(&j, NULL);
            cli_json_string(&j, "name", r.outputs[i].name);
            cli_json_double(&j, "max_abs", r.outputs[i].max_abs);
            cli_json_double(&j, "mean_abs", r.outputs[i].mean_abs);
            cli_json_bool(&j, "segmentation", r.outputs[i].segmentation);
            if (r.outputs[i].segmentation) {
                cli_json_int(&j, "classes", r.outputs[i].classes);
                cli_json_double(&j, "agreement", r.outputs[i].agreement);
                cli_json_double(&j, "miou", r.outputs[i].miou);
            }
            cli_json_object_end(&j);
        }
        cli_json_array_end(&j);
        cli_json_object_end(&j);
        cli_json_finish(&j);
    } else {
        printf("%s vs %s: %d images\n", a.positional[1], a.positional[0], r.images);
        for (int i = 0; i < r.n_outputs; i++) {
            printf("  %s: max |d| %.4g, mean |d| %.4g", r.outputs[i].name, r.outputs[i].max_abs,
                   r.outputs[i].mean_abs);
            if (r.outputs[i].segmentation && r.outputs[i].classes == 1)
                printf(", mask (> 0.5) agreement %.4f%%, IoU %.4f", 100 * r.outputs[i].agreement,
                       r.outputs[i].miou);
            else if (r.outputs[i].segmentation)
                printf(", argmax agreement %.4f%%, mIoU %.4f (%d classes)",
                       100 * r.outputs[i].agreement, r.outputs[i].miou, r.outputs[i].classes);
            printf("\n");
        }
    }
    pf_model_free(&ref);
    pf_model_free(&test);
    return rc;
}
