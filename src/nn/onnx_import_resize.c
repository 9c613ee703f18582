/* ONNX import: Resize (opsets 10..17) and Upsample (7..9) -> RESIZE.
 *
 * Computed scales/sizes stay node inputs at Resize-11's positions
 * (X, roi = -1, scales, sizes) whatever the source op, so the folder reads
 * one layout. Resize-10 and Upsample map coordinates "asymmetric" and pick
 * nearest pixels with floor, which is how those versions are defined. */
#include <string.h>

#include "../core/error.h"
#include "onnx_import_priv.h"

#define TRY(x) \
    do { \
        pf_status st_ = (x); \
        if (st_ != PF_OK) return st_; \
    } while (0)

static pf_status mode_of(pf_oimp *c, const pf_onnx_node *n, pf_ir_resize_mode *out)
{
    const char *s;
    TRY(pf_onnx_attr_string(c->m, n, "mode", "nearest", &s));
    if (!strcmp(s, "nearest")) *out = PF_IR_RESIZE_NEAREST;
    else if (!strcmp(s, "linear") || !strcmp(s, "bilinear")) *out = PF_IR_RESIZE_LINEAR;
    else return pf_oimp_unsupported_attr(c, n, "mode", s);
    return PF_OK;
}

/* Resize-11+ attributes beyond mode. */
static pf_status resize11_attrs(pf_oimp *c, const pf_onnx_node *n, pf_ir_resize_attr *r)
{
    const char *s;
    int64_t v;
    TRY(pf_onnx_attr_string(c->m, n, "coordinate_transformation_mode", "half_pixel", &s));
    if (!strcmp(s, "half_pixel")) r->coord = PF_IR_COORD_HALF_PIXEL;
    else if (!strcmp(s, "align_corners")) r->coord = PF_IR_COORD_ALIGN_CORNERS;
    else if (!strcmp(s, "asymmetric")) r->coord = PF_IR_COORD_ASYMMETRIC;
    else if (!strcmp(s, "pytorch_half_pixel")) r->coord = PF_IR_COORD_PYTORCH_HALF_PIXEL;
    else if (!strcmp(s, "tf_half_pixel_for_nn")) r->coord = PF_IR_COORD_TF_HALF_PIXEL_FOR_NN;
    else return pf_oimp_unsupported_attr(c, n, "coordinate_transformation_mode", s);
    TRY(pf_onnx_attr_string(c->m, n, "nearest_mode", "round_prefer_floor", &s));
    if (!strcmp(s, "round_prefer_floor")) r->nearest = PF_IR_NEAREST_ROUND_PREFER_FLOOR;
    else if (!strcmp(s, "round_prefer_ceil")) r->nearest = PF_IR_NEAREST_ROUND_PREFER_CEIL;
    else if (!strcmp(s, "floor")) r->nearest = PF_IR_NEAREST_FLOOR;
    else if (!strcmp(s, "ceil")) r->nearest = PF_IR_NEAREST_CEIL;
    else return pf_oimp_unsupported_attr(c, n, "nearest_mode", s);
    TRY(pf_onnx_attr_int(c->m, n, "exclude_outside", 0, &v));
    if (v) return pf_oimp_unsupported_attr(c, n, "exclude_outside", "1");
    return PF_OK;
}

/* Applies constant scales (non-empty) or sizes to the attr / output value.
 * Returns *done = false when neither gives the answer. */
static pf_status apply_scales(pf_oimp *c, const pf_onnx_node *n, int scales, pf_ir_attr *a,
                              bool *done)
{
    int cnt = 0;
    *done = false;
    if (scales < 0 || pf_ir_value_numel(pf_oimp_const(c, scales)) == 0) return PF_OK;
    TRY(pf_oimp_const_doubles(c, n, scales, "scales", a->resize.scale, PF_IR_MAX_RANK, &cnt));
    for (int i = 0; i < cnt; i++)
        if (!(a->resize.scale[i] > 0))
            return pf_oimp_fail(c, n, PF_ERR_FORMAT, "scale %d is %g (must be > 0)", i,
                                a->resize.scale[i]);
    a->resize.n = cnt;
    a->resize.has_scales = true;
    *done = true;
    return PF_OK;
}

static pf_status emit_resize(pf_oimp *c, const pf_onnx_node *n, const int *in4, bool all_const,
                             pf_ir_attr *a)
{
    int sizes = in4[3];
    if (!all_const) return pf_oimp_emit_final(c, n, PF_IR_RESIZE, in4, 4, a);
    bool done;
    TRY(apply_scales(c, n, in4[2], a, &done));
    int64_t dims[PF_IR_MAX_RANK];
    int nd = 0;
    if (!done) {
        if (sizes < 0)
            return pf_oimp_fail(c, n, PF_ERR_FORMAT, "neither scales nor sizes is given");
        TRY(pf_oimp_const_ints(c, n, sizes, "sizes", dims, PF_IR_MAX_RANK, &nd));
        for (int i = 0; i < nd; i++)
            if (dims[i] < 0)
                return pf_oimp_fail(c, n, PF_ERR_FORMAT, "size %d is %lld", i, (long long)dims[i]);
        a->resize.n = nd;
        a->resize.has_scales = false;
    } else if (sizes >= 0 && pf_ir_value_numel(pf_oimp_const(c, sizes)) > 0) {
        return pf_oimp_fail(c, n, PF_ERR_FORMAT, "both scales and sizes are given");
    }
    int node;
    TRY(pf_oimp_emit(c, n, PF_IR_RESIZE, in4, 1, 1, a, PF_IR_F32, &node));
    if (!done) {
        /* The output shape is the value's shape (ir.h): sizes are it. */
        pf_ir_value *out = &c->g->values[c->g->nodes[node].out[0]];
        out->ndim = nd;
        memcpy(out->dims, dims, (size_t)nd * sizeof dims[0]);
    }
    return PF_OK;
}

pf_status pf_oimp_convert_resize(pf_oimp *c, const pf_onnx_node *n, bool upsample)
{
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    int in4[4] = {-1, -1, -1, -1};
    TRY(pf_oimp_in_req(c, n, 0, &in4[0]));
    TRY(mode_of(c, n, &a.resize.mode));
    bool v11 = !upsample && n->opset >= 11;
    if (!v11) {
        a.resize.coord = PF_IR_COORD_ASYMMETRIC;
        a.resize.nearest = PF_IR_NEAREST_FLOOR;
    } else {
        TRY(resize11_attrs(c, n, &a.resize));
    }
    if (upsample && n->opset < 9) {
        const float *sc;
        size_t cnt;
        TRY(pf_onnx_attr_floats(c->m, n, "scales", &sc, &cnt));
        if (!sc) return pf_oimp_fail(c, n, PF_ERR_FORMAT, "attribute scales is missing");
        if (cnt > PF_IR_MAX_RANK)
            return pf_oimp_fail(c, n, PF_ERR_UNSUPPORTED, "%zu scales (at most %d)", cnt,
                                PF_IR_MAX_RANK);
        for (size_t i = 0; i < cnt; i++) {
            if (!(sc[i] > 0))
                return pf_oimp_fail(c, n, PF_ERR_FORMAT, "scale %zu is %g", i, (double)sc[i]);
            a.resize.scale[i] = sc[i];
        }
        a.resize.n = (int)cnt;
        a.resize.has_scales = true;
        return pf_oimp_emit_final(c, n, PF_IR_RESIZE, in4, 1, &a);
    }
    if (!v11) {
        /* Resize-10, Upsample-9: (X, scales). */
        TRY(pf_oimp_in_req(c, n, 1, &in4[2]));
        return emit_resize(c, n, in4, pf_oimp_const(c, in4[2]) != NULL, &a);
    }
    /* roi only matters for tf_crop_and_resize, which is refused above. */
    TRY(pf_oimp_in(c, n, 2, &in4[2]));
    TRY(pf_oimp_in(c, n, 3, &in4[3]));
    bool all_const = (in4[2] < 0 || pf_oimp_const(c, in4[2])) &&
                     (in4[3] < 0 || pf_oimp_const(c, in4[3]));
    return emit_resize(c, n, in4, all_const, &a);
}
