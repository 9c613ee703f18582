/* Private: the YUV <-> RGB coefficients of ops.h as floats, in one place for
 * every wrapper that needs them (pf_ops_preprocess, pf_ops_convert,
 * pf_ops_composite).
 *
 * Computed in double from Kr and Kb and rounded once to float, on the host:
 * each wrapper hands the floats to its implementations (the CPU paths and the
 * CUDA kernels take them as parameters), so every fast path of every op
 * starts from the same bits. The C references derive their constants again
 * from the user's matrix and range, on purpose (a mistake here then shows up
 * as a test failure). */
#ifndef PF_OPS_YUV_H
#define PF_OPS_YUV_H

#include "pixflow/ops.h"

PF_BEGIN_DECLS

typedef struct pf_yuv_coeffs_t {
    /* YUV -> RGB (ops.h, Fused preprocess): y_off, y_scale, rv, gu, gv, bu. */
    float dec[6];
    /* RGB -> YUV, one row per output: {cr, cg, cb, offset} for Y, U, V. */
    float enc[3][4];
} pf_yuv_coeffs_t;

/* ops.h's coefficients for a validated matrix and range. */
void pf_yuv_coeffs(pf_yuv_matrix matrix, pf_yuv_range range, pf_yuv_coeffs_t *out);

PF_END_DECLS

#endif
