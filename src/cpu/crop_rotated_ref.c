/* Rotated crop, plain C: the reference the CUDA kernel is checked against,
 * and the CPU path (a landmark crop is 192x192: threads would cost more to
 * start than the work). */
#include "../ops/crop_rotated.h"

pf_status pf_ref_crop_rotated(pf_ops *ops, const pf_cr_params *p, const pf_cr_item *items)
{
    (void)ops;
    for (int i = 0; i < p->n; i++) {
        float *dst = p->dst + (size_t)i * p->width * p->height * 3;
        for (int y = 0; y < p->height; y++)
            for (int x = 0; x < p->width; x++) {
                float sx, sy, v[3];
                pf_cr_point(&items[i], x, y, p->width, p->height, &sx, &sy);
                pf_cr_sample(&items[i], sx, sy, v);
                float *o = dst + ((size_t)y * p->width + x) * 3;
                for (int c = 0; c < 3; c++) o[c] = v[c] * p->scale + p->bias;
            }
    }
    return PF_OK;
}
