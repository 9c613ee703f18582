/* Calibration images and runs (quantize.h): listing through the one input
 * expander (src/io/expand.c), preprocessing with pf_ops_preprocess on the
 * CPU, and the FP32 runs that observe the tensors to quantize
 * (exec_observe.h). */
#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../core/error.h"
#include "exec_observe.h"
#include "io/expand.h"
#include "model.h"
#include "pixflow/io.h"
#include "pixflow/ops.h"
#include "quantize.h"

pf_status pf_calib_images_list(const char *arg, int count, pf_calib_images *out)
{
    memset(out, 0, sizeof *out);
    if (!arg || !*arg) return pf_set_error(PF_ERR_INVALID, "calibration: no images given (calib)");
    pf_path_list l = {0};
    pf_expand_what what;
    pf_status st = pf_expand_input(arg, PF_EXPAND_IMAGES, &l, &what);
    if (st) {
        pf_path_list_free(&l);
        return pf_set_error(st, "calibration: cannot list %s", arg);
    }
    if (l.count == 0 || (what == PF_EXPAND_FILE && !pf_expand_has_ext(arg, PF_EXPAND_IMAGES))) {
        pf_path_list_free(&l);
        return pf_set_error(PF_ERR_INVALID, "calibration: %s names no PNG or JPEG image%s", arg,
                            what == PF_EXPAND_DIR ? " (an empty directory?)" : "");
    }
    int n = count > 0 && count < l.count ? count : l.count;
    out->paths = l.paths;
    out->n = n;
    for (int i = n; i < l.count; i++) free(l.paths[i]);
    return PF_OK;
}

void pf_calib_images_free(pf_calib_images *im)
{
    for (int i = 0; im->paths && i < im->n; i++) free(im->paths[i]);
    free(im->paths);
    memset(im, 0, sizeof *im);
}

static bool name_has(const char *name, const char *word)
{
    for (const char *p = name; *p; p++)
        if (!strncasecmp(p, word, strlen(word))) return true;
    return false;
}

void pf_quant_norm_default(const pf_model *m, float *scale, float mean[3], float std[3],
                           const char **preset)
{
    const char *name = m ? pf_model_name(m) : "";
    *scale = 1.0f / 255.0f;
    for (int c = 0; c < 3; c++) {
        mean[c] = 0;
        std[c] = 1;
    }
    const char *p = "[0,1]";
    if (m && pf_model_get_format(m) == PF_MODEL_TFLITE) {
        if (name_has(name, "face_detection") || name_has(name, "blazeface")) {
            for (int c = 0; c < 3; c++) mean[c] = std[c] = 0.5f;
            p = "[-1,1]";
        }
    } else if (m) {
        static const float im_mean[3] = {0.485f, 0.456f, 0.406f}, im_std[3] = {0.229f, 0.224f, 0.225f};
        memcpy(mean, im_mean, sizeof im_mean);
        memcpy(std, im_std, sizeof im_std);
        p = "imagenet";
    }
    if (preset) *preset = p;
}

pf_status pf_calib_input_for(const pf_model *m, const pf_quant_params *p, pf_calib_input *out,
                             char *norm, size_t norm_size)
{
    memset(out, 0, sizeof *out);
    const char *mname = pf_model_name(m);
    if (pf_model_num_inputs(m) != 1)
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: calibration from images needs a model with "
                            "one input (it has %d)", mname, pf_model_num_inputs(m));
    pf_model_io io = pf_model_input(m, 0);
    bool nchw = io.ndim == 4 && io.shape[1] == 3, nhwc = io.ndim == 4 && io.shape[3] == 3;
    if (io.dtype != PF_DTYPE_F32 || !(nchw || nhwc))
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: input '%s' is not a float image tensor with "
                            "3 channels (NCHW or NHWC): cannot calibrate from images", mname,
                            io.name);
    if (io.layout == PF_LAYOUT_NHWC || (!nchw && nhwc)) out->layout = PF_LAYOUT_NHWC;
    else out->layout = PF_LAYOUT_NCHW;
    out->ndim = 4;
    for (int d = 0; d < 4; d++) out->shape[d] = io.shape[d] < 0 ? 1 : io.shape[d];
    out->shape[0] = 1;
    const char *preset = "custom";
    if (p->norm_set) {
        out->scale = p->scale;
        memcpy(out->mean, p->mean, sizeof out->mean);
        memcpy(out->std, p->std, sizeof out->std);
    } else {
        pf_quant_norm_default(m, &out->scale, out->mean, out->std, &preset);
    }
    if (!(out->scale > 0))
        return pf_set_error(PF_ERR_INVALID, "calibration: scale %g (must be > 0)", out->scale);
    for (int c = 0; c < 3; c++)
        if (!(out->std[c] != 0))
            return pf_set_error(PF_ERR_INVALID, "calibration: std[%d] is 0", c);
    if (norm)
        snprintf(norm, norm_size, "%s: (pixel * %g - [%g %g %g]) / [%g %g %g], %s %lldx%lld",
                 preset, out->scale, out->mean[0], out->mean[1], out->mean[2], out->std[0],
                 out->std[1], out->std[2], out->layout == PF_LAYOUT_NHWC ? "NHWC" : "NCHW",
                 (long long)(out->layout == PF_LAYOUT_NHWC ? out->shape[2] : out->shape[3]),
                 (long long)(out->layout == PF_LAYOUT_NHWC ? out->shape[1] : out->shape[2]));
    return PF_OK;
}

pf_status pf_calib_ops_create(pf_ops **ops, pf_stream **stream)
{
    *ops = NULL;
    pf_stream_params sp = pf_stream_params_default();
    pf_status st = pf_stream_create(&sp, stream);
    if (st) return st;
    pf_ops_params op = pf_ops_params_default();
    op.stream = *stream;
    st = pf_ops_create(&op, ops);
    if (st) pf_stream_destroy(stream);
    return st;
}

pf_status pf_calib_load_image(pf_ops *ops, const pf_calib_input *in, const char *path,
                              pf_tensor *out)
{
    pf_frame f;
    memset(&f, 0, sizeof f);
    pf_status st = pf_image_read(path, PF_PIXFMT_RGB24, &f);
    if (st) return st;
    st = pf_tensor_alloc(out, PF_DTYPE_F32, 4, in->shape, in->layout, NULL, NULL);
    if (st == PF_OK) {
        /* pf_ops_preprocess computes (x / 255 - mean) / std; ours is
         * (x * scale - mean) / std = (x / 255 - mean / (255 scale)) / (std / (255 scale)). */
        pf_preprocess_params pp = pf_preprocess_params_default();
        for (int c = 0; c < 3; c++) {
            pp.mean[c] = in->mean[c] / (255.0f * in->scale);
            pp.std[c] = in->std[c] / (255.0f * in->scale);
        }
        const pf_frame *src = &f;
        st = pf_ops_preprocess(ops, &src, NULL, 1, out, &pp, NULL);
        if (st == PF_OK) st = pf_stream_synchronize(pf_ops_stream(ops));
        if (st) pf_tensor_unref(out);
    }
    pf_frame_unref(&f);
    return st;
}

typedef struct obs_ctx {
    pf_calib *c;
} obs_ctx;

static void on_value(void *user, const char *name, const pf_tensor *t)
{
    obs_ctx *o = user;
    pf_calib_tensor *ct = pf_calib_find(o->c, name);
    if (ct) pf_calib_observe(o->c, ct, t->data, pf_tensor_numel(t));
}

pf_status pf_calib_run(pf_model *m, const pf_quant_params *p, const pf_calib_images *im,
                       pf_calib *c)
{
    pf_calib_input in;
    pf_status st = pf_calib_input_for(m, p, &in, NULL, 0);
    if (st) return st;
    pf_ops *ops = NULL;
    pf_stream *stream = NULL;
    st = pf_calib_ops_create(&ops, &stream);
    if (st) return st;
    pf_nn_exec *x = NULL;
    pf_nn_exec_params ep = pf_nn_exec_params_default();
    st = pf_nn_exec_create(m, &ep, &x);
    int no = pf_model_num_outputs(m);
    pf_tensor *outs = calloc((size_t)(no ? no : 1), sizeof *outs);
    if (!outs && st == PF_OK) st = pf_set_error(PF_ERR_NOMEM, "calibration: out of memory");
    for (int i = 0; i < no && st == PF_OK; i++) {
        pf_model_io io = pf_model_output(m, i);
        int64_t shape[PF_NN_MAX_DIMS];
        for (int d = 0; d < io.ndim; d++) shape[d] = io.shape[d] < 0 ? 1 : io.shape[d];
        st = pf_tensor_alloc(&outs[i], io.dtype, io.ndim, shape, PF_LAYOUT_NONE, NULL, NULL);
    }
    const char **names = calloc((size_t)(c->n ? c->n : 1), sizeof *names);
    if (!names && st == PF_OK) st = pf_set_error(PF_ERR_NOMEM, "calibration: out of memory");
    for (int i = 0; names && i < c->n; i++) names[i] = c->t[i].name;
    int passes = p->method == PF_QUANT_MINMAX ? 1 : 2;
    obs_ctx o = {c};
    for (int pass = 1; pass <= passes && st == PF_OK; pass++) {
        if (pass == 2) st = pf_calib_begin_histograms(c);
        for (int k = 0; k < im->n && st == PF_OK; k++) {
            pf_tensor t;
            memset(&t, 0, sizeof t);
            st = pf_calib_load_image(ops, &in, im->paths[k], &t);
            /* The graph input itself may feed a conv: observed here, the
             * executor only reports computed values. */
            if (st == PF_OK) on_value(&o, pf_model_input(m, 0).name, &t);
            if (st == PF_OK)
                st = pf_nn_exec_run_observed(x, &t, 1, outs, no, names, c->n, on_value, &o);
            pf_tensor_unref(&t);
            if (p->progress) p->progress(p->user, (pass - 1) * im->n + k + 1, passes * im->n);
        }
    }
    free(names);
    for (int i = 0; outs && i < no; i++) pf_tensor_unref(&outs[i]);
    free(outs);
    pf_nn_exec_destroy(&x);
    pf_ops_destroy(&ops);
    pf_stream_destroy(&stream);
    return st;
}
