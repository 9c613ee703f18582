/* pf_yuv_coeffs: see yuv.h. */
#include "yuv.h"

void pf_yuv_coeffs(pf_yuv_matrix matrix, pf_yuv_range range, pf_yuv_coeffs_t *out)
{
    const double kr = matrix == PF_YUV_BT709 ? 0.2126 : 0.299;
    const double kb = matrix == PF_YUV_BT709 ? 0.0722 : 0.114;
    const double kg = 1.0 - kr - kb;
    const int lim = range == PF_YUV_LIMITED;
    /* Limited range: Y = 16 + 219/255 Y', chroma = 128 + 224/255 C'. */
    const double ys = lim ? 255.0 / 219.0 : 1.0, cs = lim ? 255.0 / 224.0 : 1.0;
    const double yoff = lim ? 16.0 : 0.0;
    out->dec[0] = (float)yoff;
    out->dec[1] = (float)ys;
    out->dec[2] = (float)(2.0 * (1.0 - kr) * cs);           /* R from V */
    out->dec[3] = (float)(2.0 * kb * (1.0 - kb) / kg * cs); /* G from U */
    out->dec[4] = (float)(2.0 * kr * (1.0 - kr) / kg * cs); /* G from V */
    out->dec[5] = (float)(2.0 * (1.0 - kb) * cs);           /* B from U */
    /* The inverse: Y' = Kr R + Kg G + Kb B, U' = (B - Y') / (2 (1 - Kb)),
     * V' = (R - Y') / (2 (1 - Kr)), then scaled into the range. */
    const double bu = 2.0 * (1.0 - kb), rv = 2.0 * (1.0 - kr);
    const double enc[3][4] = {
        {kr / ys, kg / ys, kb / ys, yoff},
        {-kr / bu / cs, -kg / bu / cs, (1.0 - kb) / bu / cs, 128.0},
        {(1.0 - kr) / rv / cs, -kg / rv / cs, -kb / rv / cs, 128.0},
    };
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) out->enc[i][j] = (float)enc[i][j];
}
