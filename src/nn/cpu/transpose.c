/* TRANSPOSE, EXPAND, DEPTH_TO_SPACE and SPACE_TO_DEPTH: each is a strided
 * view of the input copied out by pf_nd_copy_strided, which merges dims and
 * tiles transposes (NCHW <-> NHWC becomes a batched 2D transpose, blocked
 * for the cache). */
#include <string.h>

#include "ndutil.h"

pf_status pf_nn_cpu_transpose(const pf_nn_cpu_args *a)
{
    const pf_ir_transpose_attr *t = &a->node->attr.transpose;
    const pf_ir_value *vx = a->vin[0], *vy = a->vout[0];
    if (!vx || !a->in[0]) return pf_nn_cpu_fail(a, PF_ERR_INVALID, "missing input");
    const int r = vx->ndim;
    int64_t perm[PF_IR_MAX_RANK];
    bool seen[PF_IR_MAX_RANK] = {false};
    if (t->n == 0) {
        for (int d = 0; d < r; d++) perm[d] = r - 1 - d;   /* ONNX default: reverse */
    } else if (t->n != r) {
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "perm has %d entries, input rank %d", t->n, r);
    } else {
        memcpy(perm, t->perm, sizeof(int64_t) * (size_t)r);
    }
    if (vy->ndim != r || vy->dtype != vx->dtype)
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "output '%s' rank/dtype differ from input", vy->name);
    int64_t ist[PF_IR_MAX_RANK], st[PF_IR_MAX_RANK];
    pf_nd_strides(r, vx->dims, ist);
    for (int d = 0; d < r; d++) {
        int64_t p = perm[d] < 0 ? perm[d] + r : perm[d];
        if (p < 0 || p >= r || seen[p])
            return pf_nn_cpu_fail(a, PF_ERR_INVALID, "perm[%d] = %lld is not a permutation", d, (long long)perm[d]);
        seen[p] = true;
        if (vy->dims[d] != vx->dims[p])
            return pf_nn_cpu_fail(a, PF_ERR_INVALID, "output dim %d is %lld, input dim %lld is %lld", d,
                                  (long long)vy->dims[d], (long long)p, (long long)vx->dims[p]);
        st[d] = ist[p];
    }
    pf_nd_copy_strided(a->out[0], a->in[0], pf_nd_esize(vx->dtype), r, vy->dims, 0, st, a->pool);
    return PF_OK;
}

pf_status pf_nn_cpu_expand(const pf_nn_cpu_args *a)
{
    const pf_ir_value *vx = a->vin[0], *vy = a->vout[0];
    if (!vx || !a->in[0]) return pf_nn_cpu_fail(a, PF_ERR_INVALID, "missing input");
    if (vy->dtype != vx->dtype || vy->ndim < vx->ndim)
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "output '%s' rank/dtype cannot hold input '%s'", vy->name, vx->name);
    const int r = vy->ndim, lead = vy->ndim - vx->ndim;
    int64_t ist[PF_IR_MAX_RANK], st[PF_IR_MAX_RANK];
    pf_nd_strides(vx->ndim, vx->dims, ist);
    for (int d = 0; d < r; d++) {
        int64_t id = d < lead ? 1 : vx->dims[d - lead];
        if (id != vy->dims[d] && id != 1)
            return pf_nn_cpu_fail(a, PF_ERR_INVALID, "input '%s' dim %d (%lld) does not broadcast to %lld",
                                  vx->name, d - lead, (long long)id, (long long)vy->dims[d]);
        st[d] = (d < lead || id == 1) ? 0 : ist[d - lead];
    }
    pf_nd_copy_strided(a->out[0], a->in[0], pf_nd_esize(vx->dtype), r, vy->dims, 0, st, a->pool);
    return PF_OK;
}

/* DepthToSpace as ONNX defines it (reshape, transpose, reshape), as one
 * 6D strided view: output [N, C', H, b, W, b]. DCR reads channel
 * (b1 * b + b2) * C' + c, CRD reads c * b * b + b1 * b + b2.
 * SpaceToDepth: output [N, b, b, C, H', W'] reading x[n, c, h*b+b1, w*b+b2]. */
pf_status pf_nn_cpu_depth_space(const pf_nn_cpu_args *a)
{
    const pf_ir_node *n = a->node;
    const pf_ir_value *vx = a->vin[0], *vy = a->vout[0];
    if (!vx || !a->in[0]) return pf_nn_cpu_fail(a, PF_ERR_INVALID, "missing input");
    const int64_t b = n->attr.d2s.blocksize;
    if (vx->ndim != 4 || vy->ndim != 4 || b < 1 || vx->dtype != vy->dtype)
        return pf_nn_cpu_fail(a, PF_ERR_INVALID, "needs 4D input/output and blocksize >= 1 (got %lld)",
                              (long long)b);
    const int64_t N = vx->dims[0], C = vx->dims[1], H = vx->dims[2], W = vx->dims[3];
    int64_t dims[6], st[6];
    if (n->op == PF_IR_DEPTH_TO_SPACE) {
        if (C % (b * b) || vy->dims[0] != N || vy->dims[1] != C / (b * b) || vy->dims[2] != H * b ||
            vy->dims[3] != W * b)
            return pf_nn_cpu_fail(a, PF_ERR_INVALID, "shapes do not fit blocksize %lld", (long long)b);
        const int64_t Cp = C / (b * b), hw = H * W;
        int64_t s_c, s_b1, s_b2;
        if (n->attr.d2s.crd) {
            s_c = b * b * hw; s_b1 = b * hw; s_b2 = hw;
        } else {
            s_b1 = b * Cp * hw; s_b2 = Cp * hw; s_c = hw;
        }
        int64_t d6[6] = {N, Cp, H, b, W, b}, s6[6] = {C * hw, s_c, W, s_b1, 1, s_b2};
        memcpy(dims, d6, sizeof dims);
        memcpy(st, s6, sizeof st);
    } else {
        if (H % b || W % b || vy->dims[0] != N || vy->dims[1] != C * b * b || vy->dims[2] != H / b ||
            vy->dims[3] != W / b)
            return pf_nn_cpu_fail(a, PF_ERR_INVALID, "shapes do not fit blocksize %lld", (long long)b);
        int64_t d6[6] = {N, b, b, C, H / b, W / b}, s6[6] = {C * H * W, W, 1, H * W, b * W, b};
        memcpy(dims, d6, sizeof dims);
        memcpy(st, s6, sizeof st);
    }
    pf_nd_copy_strided(a->out[0], a->in[0], pf_nd_esize(vx->dtype), 6, dims, 0, st, a->pool);
    return PF_OK;
}
