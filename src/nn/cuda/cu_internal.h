/* Private to src/nn/cuda: the C entry points of the kernel files (*.cu) and
 * the index-space description they share.
 *
 * Every kernel walks an index space (the output's logical shape) in
 * row-major order and finds each operand's element through per-operand
 * strides over that space. A view can therefore express broadcasting
 * (stride 0), transposition (permuted strides), slicing (offset base
 * pointer, scaled or negative strides), concat/split parts (a sub-view of
 * the output or input), tiling and depth/space shuffles (more dims than the
 * tensor has) and NHWC storage, and most movement ops become one strided
 * copy. pf_cu_nd_simplify() sorts and merges dims before a launch so dense
 * operands see one long dim (no index division on the fast path).
 *
 * Entry points return a cudaError_t as int (0 = launched); the C side turns
 * failures into a status naming the node. */
#ifndef PF_NN_CUDA_CU_INTERNAL_H
#define PF_NN_CUDA_CU_INTERNAL_H

#include <stdint.h>

#include "kernels.h"

PF_BEGIN_DECLS

#define PF_CU_MAXD 12 /* tile and depth/space views need up to twice a rank of 6 */
#define PF_CU_MAXK 4  /* operands of one elementwise launch, output included */

typedef struct pf_cu_nd {
    int nd;
    int64_t dims[PF_CU_MAXD];
    int64_t st[PF_CU_MAXK][PF_CU_MAXD]; /* operand 0 is the output */
} pf_cu_nd;

/* Drops size-1 dims, orders dims by the output's stride (largest first) and
 * merges neighbours that are contiguous for every one of the k operands. */
void pf_cu_nd_simplify(pf_cu_nd *s, int k);
int64_t pf_cu_nd_numel(const pf_cu_nd *s);

/* Internal elementwise op codes beyond pf_ir_op. */
#define PF_CU_OP_SCALE 1000 /* x * a */

typedef struct pf_cu_ew {
    int op;                 /* pf_ir_op (unary, binary, WHERE) or PF_CU_OP_* */
    int n_in;               /* 1, 2 or 3 (WHERE) */
    void *out;
    const void *in[3];
    int dt_out, dt_in[3];   /* pf_ir_dtype */
    float a, b;             /* unary attrs */
    int act;                /* pf_ir_act on the result */
    float act_a, act_b;
} pf_cu_ew;

/* elementwise.cu: out = op(in...) over s (operands out, in0, in1, in2). */
int pf_cu_launch_ew(const pf_cu_ew *e, const pf_cu_nd *s, void *stream);
/* out[i] = in[j] where i and j are the row-major positions over out_dims
 * and in_dims respectively (Reshape of a strided input). */
int pf_cu_launch_reshape(const void *in, int dt_in, int in_nd, const int64_t *in_dims,
                         const int64_t *in_st, void *out, int dt_out, int out_nd,
                         const int64_t *out_dims, const int64_t *out_st, void *stream);

/* movement.cu */
typedef struct pf_cu_pad {
    int nd;
    int64_t out_dims[PF_IR_MAX_RANK], out_st[PF_IR_MAX_RANK];
    int64_t in_dims[PF_IR_MAX_RANK], in_st[PF_IR_MAX_RANK];
    int64_t begin[PF_IR_MAX_RANK];
    int mode;               /* pf_ir_pad_mode */
    double value;
} pf_cu_pad;
int pf_cu_launch_pad(const pf_cu_pad *p, const void *in, void *out, int dt, void *stream);

typedef struct pf_cu_gather {
    int nd_out;
    int64_t out_dims[PF_IR_MAX_RANK], out_st[PF_IR_MAX_RANK];
    int nd_data;
    int64_t data_dims[PF_IR_MAX_RANK], data_st[PF_IR_MAX_RANK];
    int nd_idx;
    int64_t idx_st[PF_IR_MAX_RANK];
    int axis;
} pf_cu_gather;
int pf_cu_launch_gather(const pf_cu_gather *p, const void *data, const void *idx, int dt_idx,
                        void *out, int dt, void *stream);

/* reduce.cu: rows = the kept dims, each row reduced over the inner dims. */
typedef struct pf_cu_rows {
    int no;                 /* kept dims */
    int64_t odims[PF_IR_MAX_RANK], ost_in[PF_IR_MAX_RANK], ost_out[PF_IR_MAX_RANK];
    int ni;                 /* reduced dims */
    int64_t idims[PF_IR_MAX_RANK], ist_in[PF_IR_MAX_RANK], ist_out[PF_IR_MAX_RANK];
    int64_t n_rows, row_len;
} pf_cu_rows;
/* op: REDUCE_*, ARGMAX/ARGMIN (flag = select_last_index), SOFTMAX,
 * LOG_SOFTMAX (the output has the input's shape: ist_out used). */
int pf_cu_launch_rows(const pf_cu_rows *r, int op, int flag, const void *in, int dt_in,
                      void *out, int dt_out, void *stream);

/* pool.cu: 2D pooling over [N, C, H, W] views (1D: H = 1). */
typedef struct pf_cu_pool {
    int64_t n, c, h, w, oh, ow;
    int64_t in_st[4], out_st[4];
    int64_t kh, kw, sh, sw, dh, dw, ph, pw, peh, pew;
    int is_max, count_include_pad;
} pf_cu_pool;
int pf_cu_launch_pool(const pf_cu_pool *p, const void *in, void *out, int dt, void *stream);
/* Global pooling of a channels-last [n, hw pixels, c] map (channel stride 1,
 * pixel stride in_sp, image stride in_sn) into out[b * out_sn + c * out_sc];
 * n <= 65535, hw >= 1. */
int pf_cu_launch_gpool_cl(const void *in, void *out, int dt, int64_t n, int64_t c, int64_t hw,
                          int is_max, int64_t in_sn, int64_t in_sp, int64_t out_sn,
                          int64_t out_sc, void *stream);
/* The same with the pixels split into `slices` blocks per (image, 32
 * channels), partials in `part` (n * slices * c floats), then combined. */
int pf_cu_launch_gpool_split(const void *in, void *out, float *part, int dt, int64_t n,
                             int64_t c, int64_t hw, int64_t slices, int is_max, int64_t in_sn,
                             int64_t in_sp, int64_t out_sn, int64_t out_sc, void *stream);

/* resize.cu: any rank; linear mode interpolates up to 3 axes. */
typedef struct pf_cu_resize {
    int nd;
    int64_t in_dims[PF_IR_MAX_RANK], in_st[PF_IR_MAX_RANK];
    int64_t out_dims[PF_IR_MAX_RANK], out_st[PF_IR_MAX_RANK];
    float scale[PF_IR_MAX_RANK];
    /* ONNX's "resized length" scale * in_len (not the output length when
     * scales were given: in 4, scale 0.6 -> 2.4), which align_corners and
     * pytorch_half_pixel divide by; snapped to out_dims when they agree. */
    float rlen[PF_IR_MAX_RANK];
    int mode, coord, nearest;
} pf_cu_resize;
int pf_cu_launch_resize(const pf_cu_resize *p, const void *in, void *out, int dt, void *stream);

/* batchnorm.cu: y = (x - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c],
 * c = the coordinate of dim 1; params contiguous in dt_p; then act. */
typedef struct pf_cu_bn {
    int nd;
    int64_t dims[PF_IR_MAX_RANK], in_st[PF_IR_MAX_RANK], out_st[PF_IR_MAX_RANK];
    const void *scale, *bias, *mean, *var;
    int dt_p;
    float eps;
    int act;
    float act_a, act_b;
} pf_cu_bn;
int pf_cu_launch_bn(const pf_cu_bn *p, const void *in, void *out, int dt, void *stream);

/* dwconv.cu: depthwise conv of channels-last [N, C, H, W] views (channel
 * stride 1 in and out), weights [kh, kw, C], bias[C] or NULL, then act.
 * pf_cu_dw_ok says whether the shape/strides fit the kernel (32-bit). */
typedef struct pf_cu_dw {
    int64_t n, c, h, w, oh, ow;
    int64_t in_st[4], out_st[4];
    int kh, kw, sh, sw, dh, dw, ph, pw;
    int act;
    float act_a, act_b;
} pf_cu_dw;
int pf_cu_dw_ok(const pf_cu_dw *p);
int pf_cu_launch_dwconv(const pf_cu_dw *p, const void *x, const void *w, const void *bias,
                        void *y, int dt, void *stream);

/* fc1x1.cu: a conv whose input and output are 1x1 spatial (kernel 1x1,
 * group 1): y[b * y_sn + k * y_sc] = act(sum_c w[k * cin + c] *
 * x[b * x_sn + c * x_sc] + bias[k]); bias may be NULL. */
typedef struct pf_cu_fc {
    int64_t n, cin, cout;
    int64_t x_sn, x_sc, y_sn, y_sc;
    int act;
    float act_a, act_b;
} pf_cu_fc;
int pf_cu_fc_ok(const pf_cu_fc *p);
int pf_cu_launch_fc(const pf_cu_fc *p, const void *x, const void *w, const void *bias, void *y,
                    int dt, void *stream);

/* igemm.cu: FP16 conv as an implicit GEMM on tensor cores over
 * channels-last [N, C, H, W] views (channel stride 1), filter [K, KH, KW, C]
 * (PF_CUX_FILTER_NHWC), bias[K] or NULL:
 *   y = r_act(act(conv(x) + bias) + z)   (z optional, y's dims, strides z_st;
 *                                          z may be y itself: read before write)
 * ph/pw are the begin pads (the end pads follow from oh/ow). cfg/splits/k_per
 * come from pf_cu_ig_set or pf_cu_ig_tune. */
#define PF_CU_IG_CONFIGS 4
typedef struct pf_cu_ig {
    int n, c, h, w, k, oh, ow;
    int kh, kw, sh, sw, dh, dw, ph, pw;
    long long in_st[4], out_st[4], z_st[4];
    int act, r_act;
    float act_a, act_b, r_act_a, r_act_b;
    /* Derived (pf_cu_ig_set): GEMM sizes and the launch config. */
    int m, kk, cfg, splits, k_per, pairs, vec;
} pf_cu_ig;
int pf_cu_ig_ok(const pf_cu_ig *p);
/* Whether pf_cu_launch_ig_epi takes p's output geometry (32-bit offsets). */
int pf_cu_ig_epi_ok(const pf_cu_ig *p);
void pf_cu_ig_set(pf_cu_ig *p, int cfg, int splits);
/* Split-K partials: the workspace bytes a launch needs (0 without split). */
size_t pf_cu_ig_ws(const pf_cu_ig *p);
int pf_cu_launch_ig(const pf_cu_ig *p, const void *x, const void *w, const void *bias,
                    const void *z, void *y, void *ws, void *stream);
/* The epilogue alone, in place: y = r_act(act(y + bias) + z) over the
 * geometry, strides and activations of p (for a conv another path ran). */
int pf_cu_launch_ig_epi(const pf_cu_ig *p, const void *bias, const void *z, void *y,
                        void *stream);
/* Times every config and split count (split-K workspace up to ws_cap) on
 * the given buffers, keeps the fastest in p and its time in *best_ms. */
int pf_cu_ig_tune(pf_cu_ig *p, const void *x, const void *w, const void *bias, void *y,
                  void *ws, size_t ws_cap, void *stream, float *best_ms);

/* spin.cu: the mean GPU time of 5 launch(arg) calls on stream after one
 * warm-up (CUDA events) into *ms; 0, else the first launch's non-zero
 * result or CUDA error (*ms = -1 then). */
int pf_cu_time_ms(int (*launch)(void *), void *arg, void *stream, float *ms);
/* spin.cu: a one-thread kernel that waits `us` microseconds (profiling). */
int pf_cu_launch_spin(unsigned us, void *stream);

const char *pf_cu_error_string(int err);

PF_END_DECLS

#endif
