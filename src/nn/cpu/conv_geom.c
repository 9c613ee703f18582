/* The geometry of a CONV or CONV_TRANSPOSE node, read and checked once for
 * both kernels (conv.c, conv_transpose.c); each then checks what only its
 * op defines (channel grouping of W, the output size formula). */
#include <stdio.h>
#include <string.h>

#include "kernels.h"

int pf_nn_conv_geom_read(const pf_ir_graph *g, const pf_ir_node *n, const char *what,
                         pf_nn_conv_geom *s, char *why, size_t why_size)
{
    const pf_ir_conv_attr *at = &n->attr.conv;
    if (n->n_in < 2 || n->n_out < 1 || n->in[0] < 0 || n->in[1] < 0) {
        snprintf(why, why_size, "needs inputs X and W");
        return -1;
    }
    const pf_ir_value *x = &g->values[n->in[0]], *w = &g->values[n->in[1]];
    const pf_ir_value *y = &g->values[n->out[0]];
    int nsp = at->nsp;
    if (nsp != 1 && nsp != 2) {
        snprintf(why, why_size, "%d spatial dims (only 1D and 2D)", nsp);
        return -1;
    }
    if (x->ndim != nsp + 2 || w->ndim != nsp + 2 || y->ndim != nsp + 2) {
        snprintf(why, why_size, "ranks X %d, W %d, Y %d for a %dD %s", x->ndim, w->ndim,
                 y->ndim, nsp, what);
        return -1;
    }
    if (x->dtype != PF_IR_F32 || w->dtype != PF_IR_F32 || y->dtype != PF_IR_F32) {
        snprintf(why, why_size, "dtype %s (only f32)", pf_ir_dtype_name(x->dtype));
        return -1;
    }
    memset(s, 0, sizeof *s);
    s->N = x->dims[0];
    s->C = x->dims[1];
    s->w0 = w->dims[0];
    s->w1 = w->dims[1];
    s->YN = y->dims[0];
    s->YC = y->dims[1];
    s->group = at->group > 0 ? at->group : 1;
    s->H = s->OH = s->kh = s->sh = s->dh = 1;
    int d = 0;
    if (nsp == 2) {
        s->H = x->dims[2];
        s->OH = y->dims[2];
        s->kh = w->dims[2];
        s->sh = at->stride[0];
        s->dh = at->dilation[0];
        s->pt = at->pad_begin[0];
        s->pb = at->pad_end[0];
        s->oph = at->output_padding[0];
        d = 1;
    }
    s->W = x->dims[nsp + 1];
    s->OW = y->dims[nsp + 1];
    s->kw = w->dims[nsp + 1];
    s->sw = at->stride[d];
    s->dw = at->dilation[d];
    s->pl = at->pad_begin[d];
    s->pr = at->pad_end[d];
    s->opw = at->output_padding[d];
    if (s->sh < 1 || s->sw < 1 || s->dh < 1 || s->dw < 1) {
        snprintf(why, why_size, "strides and dilations must be >= 1 (unresolved attrs?)");
        return -1;
    }
    return 0;
}

int pf_nn_conv_geom_finish(const pf_ir_graph *g, const pf_ir_node *n, pf_nn_conv_geom *s,
                           int64_t oh, int64_t ow, char *why, size_t why_size)
{
    s->Cg = s->C / s->group;
    s->Mg = s->M / s->group;
    if (s->YN != s->N || s->YC != s->M || s->OH != oh || s->OW != ow || oh < 1 || ow < 1) {
        snprintf(why, why_size, "output value has dims [%lld, %lld, %lld, %lld], expected "
                 "[%lld, %lld, %lld, %lld]", (long long)s->YN, (long long)s->YC,
                 (long long)s->OH, (long long)s->OW, (long long)s->N, (long long)s->M,
                 (long long)oh, (long long)ow);
        return -1;
    }
    if (n->n_in > 2 && n->in[2] >= 0) {
        const pf_ir_value *b = &g->values[n->in[2]];
        if (b->dtype != PF_IR_F32 || b->ndim != 1 || b->dims[0] != s->M) {
            snprintf(why, why_size, "bias must be f32 [%lld]", (long long)s->M);
            return -1;
        }
    }
    return 0;
}
