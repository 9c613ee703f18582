/* Index-space simplification for the nn CUDA kernels (see cu_internal.h). */
#include "cu_internal.h"

static int64_t iabs64(int64_t v) { return v < 0 ? -v : v; }

int64_t pf_cu_nd_numel(const pf_cu_nd *s)
{
    int64_t n = 1;
    for (int d = 0; d < s->nd; d++) n *= s->dims[d];
    return n;
}

void pf_cu_nd_simplify(pf_cu_nd *s, int k)
{
    pf_cu_nd t = *s;
    int nd = 0;
    for (int d = 0; d < s->nd; d++) {
        if (s->dims[d] == 0) { /* empty: keep one zero dim so numel says 0 */
            t.nd = 1;
            t.dims[0] = 0;
            for (int j = 0; j < PF_CU_MAXK; j++) t.st[j][0] = 0;
            *s = t;
            return;
        }
        if (s->dims[d] == 1) continue;
        t.dims[nd] = s->dims[d];
        for (int j = 0; j < PF_CU_MAXK; j++) t.st[j][nd] = j < k ? s->st[j][d] : 0;
        nd++;
    }
    t.nd = nd;
    /* Stable insertion sort by the output's |stride|, largest first, so the
     * innermost dim of the walk is the output's innermost. */
    for (int i = 1; i < nd; i++) {
        for (int j = i; j > 0 && iabs64(t.st[0][j - 1]) < iabs64(t.st[0][j]); j--) {
            int64_t v = t.dims[j];
            t.dims[j] = t.dims[j - 1];
            t.dims[j - 1] = v;
            for (int q = 0; q < PF_CU_MAXK; q++) {
                v = t.st[q][j];
                t.st[q][j] = t.st[q][j - 1];
                t.st[q][j - 1] = v;
            }
        }
    }
    /* Merge dim d into d + 1 when every operand steps over d exactly as over
     * d + 1 run to its end. */
    int w = 0;
    for (int d = 0; d < nd; d++) {
        if (w > 0) {
            int ok = 1;
            for (int q = 0; q < k && ok; q++)
                ok = t.st[q][w - 1] == t.st[q][d] * t.dims[d];
            if (ok) {
                t.dims[w - 1] *= t.dims[d];
                for (int q = 0; q < PF_CU_MAXK; q++) t.st[q][w - 1] = t.st[q][d];
                continue;
            }
        }
        t.dims[w] = t.dims[d];
        for (int q = 0; q < PF_CU_MAXK; q++) t.st[q][w] = t.st[q][d];
        w++;
    }
    t.nd = w;
    *s = t;
}
