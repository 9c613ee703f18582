/* Plain C reference of the 360° reprojection: one thread, one pixel at a
 * time, straight through the float formula of src/ops/reproject_math.h
 * (ops.h's definition; its accuracy against the exact double-precision
 * definition is checked in tests/test_reproject.c). The threaded CPU path and
 * the CUDA kernel must produce exactly these bytes. */
#include "../ops/reproject.h"

void pf_ref_equirect_to_views(const pf_rp_job *job)
{
    const int W = job->src_w, H = job->src_h, C = job->channels;
    for (int v = 0; v < job->n; v++) {
        const pf_rp_view *view = &job->views[v];
        for (int j = 0; j < view->height; j++) {
            uint8_t *out = job->dst[v] + (size_t)j * job->dst_stride[v];
            for (int i = 0; i < view->width; i++, out += C) {
                float fx, fy;
                pf_rp_map(view, i, j, W, H, &fx, &fy);
                if (job->interp == PF_INTERP_NEAREST) {
                    int x, y;
                    pf_rp_nearest(fx, fy, W, H, &x, &y);
                    const uint8_t *p = job->src + (size_t)y * job->src_stride + (size_t)x * C;
                    for (int c = 0; c < C; c++) out[c] = p[c];
                } else {
                    pf_rp_taps t = pf_rp_bilinear(fx, fy, W, H);
                    const uint8_t *r0 = job->src + (size_t)t.y0 * job->src_stride;
                    const uint8_t *r1 = job->src + (size_t)t.y1 * job->src_stride;
                    size_t o0 = (size_t)t.x0 * C, o1 = (size_t)t.x1 * C;
                    for (int c = 0; c < C; c++)
                        out[c] = pf_rp_blend(r0[o0 + c], r0[o1 + c], r1[o0 + c], r1[o1 + c],
                                             t.ax, t.ay);
                }
            }
        }
    }
}
