/* pf_model_quantize, pf_model_save_onnx (nn.h; design in quantize.h). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "model.h"
#include "quantize.h"

pf_quant_params pf_quant_params_default(void)
{
    pf_quant_params p;
    memset(&p, 0, sizeof p);
    p.method = PF_QUANT_PERCENTILE;
    p.percentile = 99.99;
    p.scale = 1.0f / 255.0f;
    for (int c = 0; c < 3; c++) p.std[c] = 1;
    return p;
}

pf_status pf_model_save_onnx(const pf_model *m, const char *path)
{
    PF_CHECK_ARG(m && path, "pf_model_save_onnx", "NULL argument");
    pf_onnx_wmodel *w = NULL;
    pf_status st = pf_onnx_wmodel_from_ir(pf_model_graph(m), &w);
    if (st == PF_OK) st = pf_onnx_wmodel_save(w, path);
    pf_onnx_wmodel_destroy(&w);
    return st;
}

static pf_status check_params(const pf_quant_params *p)
{
    if (!p->calib || !*p->calib)
        return pf_set_error(PF_ERR_INVALID, "pf_model_quantize: no calibration images (calib)");
    if (p->method < PF_QUANT_MINMAX || p->method > PF_QUANT_ENTROPY)
        return pf_set_error(PF_ERR_INVALID, "pf_model_quantize: unknown method %d", (int)p->method);
    if (!(p->percentile > 0 && p->percentile <= 100))
        return pf_set_error(PF_ERR_INVALID, "pf_model_quantize: percentile %g outside (0, 100]",
                            p->percentile);
    if (p->calib_count < 0)
        return pf_set_error(PF_ERR_INVALID, "pf_model_quantize: calib_count %d (must be >= 0)",
                            p->calib_count);
    return PF_OK;
}

pf_status pf_model_quantize(pf_model *m, const pf_quant_params *p, const char *out_path,
                            pf_quant_report *r)
{
    PF_CHECK_ARG(m && p && out_path, "pf_model_quantize", "NULL argument");
    int64_t t0 = pf_time_ns();
    pf_quant_report rep;
    memset(&rep, 0, sizeof rep);
    pf_status st = check_params(p);
    if (st) return st;
    pf_calib_input in;
    st = pf_calib_input_for(m, p, &in, rep.norm, sizeof rep.norm);
    if (st) return st;
    pf_calib_images im = {0};
    pf_onnx_wmodel *w = NULL;
    pf_qdq_plan plan = {0};
    pf_calib c = {0};
    st = pf_calib_images_list(p->calib, p->calib_count, &im);
    if (st == PF_OK) st = pf_onnx_wmodel_from_ir(pf_model_graph(m), &w);
    if (st == PF_OK) st = pf_qdq_plan_make(w, &plan);
    if (st == PF_OK) st = pf_calib_init(&c, (const char *const *)plan.acts, plan.n_acts);
    int64_t t1 = pf_time_ns();
    if (st == PF_OK) st = pf_calib_run(m, p, &im, &c);
    rep.calib_s = (double)(pf_time_ns() - t1) / 1e9;
    if (st == PF_OK) {
        pf_calib_finish(&c, p->method, p->percentile);
        if (getenv("PF_QUANT_DEBUG"))
            for (int i = 0; i < c.n; i++)
                fprintf(stderr, "calib %-60s n %lld min %g max %g amax %g\n", c.t[i].name,
                        (long long)c.t[i].count, c.t[i].min, c.t[i].max, c.t[i].amax);
        st = pf_qdq_insert(w, &plan, &c, p->simulate, &rep.weights);
    }
    if (st == PF_OK) st = pf_onnx_wmodel_save(w, out_path);
    if (st == PF_OK && p->simulated_copy && !p->simulate) {
        /* The same ranges as float ops: lowered again (insertion rewrote w). */
        pf_onnx_wmodel *ws = NULL;
        int nw = 0;
        st = pf_onnx_wmodel_from_ir(pf_model_graph(m), &ws);
        if (st == PF_OK) st = pf_qdq_insert(ws, &plan, &c, true, &nw);
        if (st == PF_OK) st = pf_onnx_wmodel_save(ws, p->simulated_copy);
        pf_onnx_wmodel_destroy(&ws);
    }
    rep.images = im.n;
    rep.activations = plan.n_acts;
    rep.nodes = plan.nodes;
    rep.residual_adds = plan.residual_adds;
    rep.left_float = plan.left_float;
    pf_calib_free(&c);
    pf_qdq_plan_free(&plan);
    pf_onnx_wmodel_destroy(&w);
    pf_calib_images_free(&im);
    rep.total_s = (double)(pf_time_ns() - t0) / 1e9;
    if (r) *r = rep;
    return st;
}
