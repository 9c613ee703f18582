/* pf_model_compare (nn.h): a model against a reference on the same images.
 *
 * Segmentation agreement is accumulated over all images before dividing
 * (sum of intersections over sum of unions per class), so a class that
 * appears in a few pixels of one image does not weigh as much as the
 * person filling half of every frame. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "model.h"
#include "quantize.h"

typedef struct seg_acc {
    int classes;
    double *inter, *uni;      /* per class */
    double same, pixels;
} seg_acc;

/* Layout of a 4-D output: channels at 1 (NCHW) or 3 (NHWC). The smaller of
 * dims 1 and 3 is the channel count (a segmentation head has fewer classes
 * than pixels a side); the model's layout decides a tie. Not the layout
 * alone: ONNX files report NCHW for every 4-D tensor, also for a TFLite
 * model's NHWC mask written as ONNX ([N, 256, 256, 1]). */
static int chan_axis(const pf_model_io *io)
{
    if (io->shape[3] != io->shape[1]) return io->shape[3] < io->shape[1] ? 3 : 1;
    return io->layout == PF_LAYOUT_NHWC ? 3 : 1;
}

static int label_at(const float *x, int64_t base, int64_t cstride, int classes)
{
    if (classes == 1) return x[base] > 0.5f;
    int best = 0;
    for (int c = 1; c < classes; c++)
        if (x[base + c * cstride] > x[base + best * cstride]) best = c;
    return best;
}

static void seg_add(seg_acc *s, const pf_tensor *a, const pf_tensor *b, int caxis)
{
    int64_t n = a->shape[0], h, w;
    int classes = (int)a->shape[caxis];
    int64_t cstride;
    if (caxis == 1) {
        h = a->shape[2];
        w = a->shape[3];
        cstride = h * w;
    } else {
        h = a->shape[1];
        w = a->shape[2];
        cstride = 1;
    }
    const float *pa = a->data, *pb = b->data;
    int nl = classes == 1 ? 2 : classes;
    for (int64_t i = 0; i < n; i++)
        for (int64_t y = 0; y < h; y++)
            for (int64_t x = 0; x < w; x++) {
                int64_t base = caxis == 1 ? i * classes * h * w + y * w + x
                                          : ((i * h + y) * w + x) * classes;
                int la = label_at(pa, base, cstride, classes), lb = label_at(pb, base, cstride, classes);
                s->same += la == lb;
                s->pixels++;
                for (int c = 0; c < nl; c++) {
                    bool ia = la == c, ib = lb == c;
                    s->inter[c] += ia && ib;
                    s->uni[c] += ia || ib;
                }
            }
}

pf_status pf_model_compare(pf_model *ref, pf_model *test, const pf_quant_params *p,
                           pf_quant_compare *out)
{
    PF_CHECK_ARG(ref && test && p && out, "pf_model_compare", "NULL argument");
    memset(out, 0, sizeof *out);
    int no = pf_model_num_outputs(ref);
    if (no != pf_model_num_outputs(test) || pf_model_num_inputs(test) != 1)
        return pf_set_error(PF_ERR_INVALID, "pf_model_compare: %s has %d outputs, %s has %d: "
                            "not the same model", pf_model_name(ref), no, pf_model_name(test),
                            pf_model_num_outputs(test));
    if (no > PF_QUANT_MAX_OUTPUTS) no = PF_QUANT_MAX_OUTPUTS;
    pf_calib_input in;
    pf_status st = pf_calib_input_for(ref, p, &in, NULL, 0);
    if (st) return st;
    pf_calib_images im = {0};
    st = pf_calib_images_list(p->calib, p->calib_count, &im);
    if (st) return st;
    pf_ops *ops = NULL;
    pf_stream *stream = NULL;
    pf_nn_exec *xa = NULL, *xb = NULL;
    pf_nn_exec_params ep = pf_nn_exec_params_default();
    st = pf_calib_ops_create(&ops, &stream);
    if (st == PF_OK) st = pf_nn_exec_create(ref, &ep, &xa);
    if (st == PF_OK) st = pf_nn_exec_create(test, &ep, &xb);
    pf_tensor oa[PF_QUANT_MAX_OUTPUTS], ob[PF_QUANT_MAX_OUTPUTS];
    memset(oa, 0, sizeof oa);
    memset(ob, 0, sizeof ob);
    seg_acc seg[PF_QUANT_MAX_OUTPUTS];
    memset(seg, 0, sizeof seg);
    double sum_abs[PF_QUANT_MAX_OUTPUTS] = {0}, count[PF_QUANT_MAX_OUTPUTS] = {0};
    int caxis[PF_QUANT_MAX_OUTPUTS] = {0};
    for (int i = 0; i < no && st == PF_OK; i++) {
        pf_model_io io = pf_model_output(ref, i), iot = pf_model_output(test, i);
        int64_t shape[PF_NN_MAX_DIMS];
        for (int d = 0; d < io.ndim; d++) shape[d] = io.shape[d] < 0 ? 1 : io.shape[d];
        if (io.ndim != iot.ndim || io.dtype != PF_DTYPE_F32)
            st = pf_set_error(PF_ERR_INVALID, "pf_model_compare: output %d '%s': %s has rank %d, "
                              "%s %d (or not float)", i, io.name, pf_model_name(ref), io.ndim,
                              pf_model_name(test), iot.ndim);
        if (st == PF_OK) st = pf_tensor_alloc(&oa[i], PF_DTYPE_F32, io.ndim, shape, PF_LAYOUT_NONE, NULL, NULL);
        if (st == PF_OK) st = pf_tensor_alloc(&ob[i], PF_DTYPE_F32, io.ndim, shape, PF_LAYOUT_NONE, NULL, NULL);
        snprintf(out->outputs[i].name, sizeof out->outputs[i].name, "%s", io.name);
        if (io.ndim == 4) {
            caxis[i] = chan_axis(&io);
            int64_t h = caxis[i] == 1 ? shape[2] : shape[1], w = caxis[i] == 1 ? shape[3] : shape[2];
            if (h >= 8 && w >= 8) {
                int classes = (int)shape[caxis[i]];
                int nl = classes == 1 ? 2 : classes;
                out->outputs[i].segmentation = true;
                out->outputs[i].classes = classes;
                seg[i].classes = classes;
                seg[i].inter = calloc((size_t)nl, sizeof(double));
                seg[i].uni = calloc((size_t)nl, sizeof(double));
                if (!seg[i].inter || !seg[i].uni)
                    st = pf_set_error(PF_ERR_NOMEM, "pf_model_compare: out of memory");
            }
        }
    }
    for (int k = 0; k < im.n && st == PF_OK; k++) {
        pf_tensor t;
        memset(&t, 0, sizeof t);
        st = pf_calib_load_image(ops, &in, im.paths[k], &t);
        if (st == PF_OK) st = pf_nn_exec_run(xa, NULL, &t, 1, oa, no);
        if (st == PF_OK) st = pf_nn_exec_run(xb, NULL, &t, 1, ob, no);
        pf_tensor_unref(&t);
        for (int i = 0; i < no && st == PF_OK; i++) {
            const float *a = oa[i].data, *b = ob[i].data;
            int64_t n = pf_tensor_numel(&oa[i]);
            for (int64_t e = 0; e < n; e++) {
                double d = fabs((double)a[e] - b[e]);
                if (d > out->outputs[i].max_abs || d != d) out->outputs[i].max_abs = d;
                sum_abs[i] += d;
            }
            count[i] += (double)n;
            if (out->outputs[i].segmentation) seg_add(&seg[i], &oa[i], &ob[i], caxis[i]);
        }
        if (p->progress) p->progress(p->user, k + 1, im.n);
    }
    out->images = im.n;
    out->n_outputs = no;
    for (int i = 0; i < no; i++) {
        out->outputs[i].mean_abs = count[i] > 0 ? sum_abs[i] / count[i] : 0;
        if (out->outputs[i].segmentation && seg[i].pixels > 0) {
            out->outputs[i].agreement = seg[i].same / seg[i].pixels;
            if (seg[i].classes == 1) {
                out->outputs[i].miou = seg[i].uni[1] > 0 ? seg[i].inter[1] / seg[i].uni[1] : 1;
            } else {
                double s = 0;
                int used = 0;
                for (int c = 0; c < seg[i].classes; c++)
                    if (seg[i].uni[c] > 0) {
                        s += seg[i].inter[c] / seg[i].uni[c];
                        used++;
                    }
                out->outputs[i].miou = used ? s / used : 1;
            }
        }
        free(seg[i].inter);
        free(seg[i].uni);
        pf_tensor_unref(&oa[i]);
        pf_tensor_unref(&ob[i]);
    }
    pf_nn_exec_destroy(&xa);
    pf_nn_exec_destroy(&xb);
    pf_ops_destroy(&ops);
    pf_stream_destroy(&stream);
    pf_calib_images_free(&im);
    return st;
}
