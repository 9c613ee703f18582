/* Shared by the `pixflow model` subcommands (cmd_model.c: inspect, run and
 * the dispatcher; cmd_model_test.c: test): the device an executor runs on and
 * moving host tensors to and from it. Public API only. */
#ifndef PF_TOOLS_CMD_MODEL_H
#define PF_TOOLS_CMD_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "cli.h"
#include "pixflow/pixflow.h"

/* The executor's device. On the CPU tensors stay where they are; on CUDA
 * they go through an allocator and a stream of that device. */
typedef struct model_dev {
    pf_device *dev;
    bool cuda;
    pf_stream *stream;
    pf_allocator *alloc;
} model_dev;

/* spec NULL = "cpu". Prints nothing; false with pf_last_error() set. */
bool model_dev_open(const char *spec, model_dev *d);
void model_dev_close(model_dev *d);
/* A tensor of this shape where the executor reads it (uninitialised). */
pf_status model_dev_alloc(model_dev *d, pf_dtype dt, int ndim, const int64_t *shape,
                          pf_tensor *out);
/* host -> a new tensor on the device (CPU: a new reference to the same data). */
pf_status model_dev_upload(model_dev *d, const pf_tensor *host, pf_tensor *out);
/* device tensor -> a new host tensor (CPU: a new reference); synchronises. */
pf_status model_dev_download(model_dev *d, const pf_tensor *src, pf_tensor *out);

/* "fp32"/"fp16" (NULL = fp32). */
bool model_parse_precision(const char *s, pf_nn_precision *out);

int cmd_model_test(int argc, char **argv);
int cmd_model_quantize(int argc, char **argv);
int cmd_model_compare(int argc, char **argv);
int cmd_model_convert(int argc, char **argv);

/* Shared by quantize and compare (cmd_model_quantize.c): --mean/--std/--scale
 * into q (left alone when none is given: the model's defaults apply),
 * --device and --calib-count; "\rWHAT n/total" progress on stderr. False
 * after printing why. */
bool model_quant_parse_norm(const char *cmd, const cli_option *opts, const cli_args *a,
                            pf_model *m, pf_quant_params *q);
bool model_quant_calib_opts(const char *cmd, const cli_option *opts, const cli_args *a,
                            pf_quant_params *q);
void model_quant_progress(void *user, int done, int total);

#endif
