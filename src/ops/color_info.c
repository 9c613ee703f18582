/* pf_color_params_for: a frame's colour description (frame.h) as the matrix
 * and range the kernels take. */
#include "pixflow/ops.h"

pf_color_params pf_color_params_for(const pf_frame *f)
{
    pf_color_params p = {PF_YUV_BT601, PF_YUV_LIMITED};
    if (!f) return p;
    pf_color_info c = pf_color_effective(&f->color, f->height);
    p.matrix = c.matrix == 1 || c.matrix == 9 || c.matrix == 10 ? PF_YUV_BT709 : PF_YUV_BT601;
    p.range = c.range == PF_COLOR_RANGE_FULL ? PF_YUV_FULL : PF_YUV_LIMITED;
    return p;
}
