/* The nn graph IR: building, shape inference (ONNX rules and edge cases),
 * constant folding, specialisation, batch-norm folding, activation fusion,
 * dead-node removal and memory planning. Graphs are built by hand. */
#include <stdint.h>

#include "nn/cpu/kernels.h"
#include "nn/ir.h"
#include "pf_test.h"

#define BATCH PF_IR_DIM_BATCH
#define D(...) ((const int64_t[]){__VA_ARGS__})

static pf_ir_graph *G;

static void fresh(void)
{
    pf_ir_graph_destroy(&G);
    if (pf_ir_graph_create("test.onnx", &G) != PF_OK) {
        fprintf(stderr, "graph create: %s\n", pf_last_error());
        exit(1);
    }
}

/* A graph input of the given shape. */
static int input(pf_ir_dtype dt, int ndim, const int64_t *dims)
{
    int id = -1;
    const char *nm = pf_ir_unique_name(G, "in");
    CHECK_OK(pf_ir_add_value(G, nm, dt, ndim, dims, &id));
    CHECK_OK(pf_ir_mark_input(G, id));
    return id;
}

static int cst(pf_ir_dtype dt, int ndim, const int64_t *dims, const void *data)
{
    pf_ir_value t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.ndim = ndim;
    for (int i = 0; i < ndim; i++) t.dims[i] = dims[i];
    int id = -1;
    CHECK_OK(pf_ir_add_const(G, pf_ir_unique_name(G, "c"), dt, ndim, dims, data,
                             pf_ir_value_nbytes(&t), &id));
    return id;
}

static int cst_i64(int n, const int64_t *v) { return cst(PF_IR_I64, 1, D(n), v); }

/* A node with n_out fresh outputs (unknown shape); returns the node id. */
static int node(pf_ir_op op, const pf_ir_attr *a, int n_in, const int *in, int n_out)
{
    int outs[PF_IR_MAX_OUTPUTS];
    for (int i = 0; i < n_out; i++) {
        outs[i] = -1;
        CHECK_OK(pf_ir_add_value(G, pf_ir_unique_name(G, "t"), PF_IR_F32, -1, NULL, &outs[i]));
    }
    int id = -1;
    char name[32];
    snprintf(name, sizeof name, "n%d", G->n_nodes);
    CHECK_OK(pf_ir_add_node(G, op, name, NULL, in, n_in, outs, n_out, a, &id));
    return id;
}

static int out0(int node_id) { return G->nodes[node_id].out[0]; }
static const pf_ir_value *V(int id) { return &G->values[id]; }

static bool dims_are(int v, int ndim, const int64_t *d)
{
    const pf_ir_value *x = V(v);
    bool ok = x->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = x->dims[i] == d[i];
    if (!ok) {
        fprintf(stderr, "    '%s' has rank %d dims", x->name, x->ndim);
        for (int i = 0; i < x->ndim; i++) fprintf(stderr, " %lld", (long long)x->dims[i]);
        fprintf(stderr, ", expected rank %d\n", ndim);
    }
    return ok;
}

/* A one-node graph: infer, return the status. */
static pf_status infer_all(void) { return pf_ir_infer_shapes(G); }

static bool err_has(const char *s)
{
    bool ok = strstr(pf_last_error(), s) != NULL;
    if (!ok) fprintf(stderr, "    message '%s' lacks '%s'\n", pf_last_error(), s);
    return ok;
}

/* ---- building ---------------------------------------------------------------- */

static void test_names_and_sizes(void)
{
    for (int op = 1; op < PF_IR_OP_COUNT; op++) CHECK(strcmp(pf_ir_op_name((pf_ir_op)op), "?") != 0);
    CHECK(strcmp(pf_ir_op_name(PF_IR_CONV), "Conv") == 0);
    CHECK(strcmp(pf_ir_op_name(PF_IR_RELU), "Relu") == 0);
    CHECK(strcmp(pf_ir_op_name(PF_IR_OP_COUNT), "?") == 0);
    CHECK_EQ_INT(pf_ir_dtype_size(PF_IR_F32), 4);
    CHECK_EQ_INT(pf_ir_dtype_size(PF_IR_I64), 8);
    CHECK_EQ_INT(pf_ir_dtype_size(PF_IR_BOOL), 1);
    CHECK_EQ_INT(pf_ir_dtype_size(PF_IR_F16), 2);
    CHECK(strcmp(pf_ir_dtype_name(PF_IR_F32), "float32") == 0);
    pf_ir_value v;
    memset(&v, 0, sizeof v);
    v.dtype = PF_IR_F32;
    v.ndim = 0;
    CHECK_EQ_INT(pf_ir_value_numel(&v), 1);
    v.ndim = 2;
    v.dims[0] = BATCH;
    v.dims[1] = 3;
    CHECK_EQ_INT(pf_ir_value_numel(&v), -1);
    v.dims[0] = INT64_MAX / 2;
    CHECK_EQ_INT(pf_ir_value_numel(&v), -1);
    v.dims[0] = 5;
    CHECK_EQ_INT(pf_ir_value_nbytes(&v), 60);
}

static void test_build_validate_clone(void)
{
    fresh();
    int x = input(PF_IR_F32, 2, D(2, 3));
    int dup = -1;
    CHECK(pf_ir_add_value(G, V(x)->name, PF_IR_F32, 1, D(1), &dup) == PF_ERR_FORMAT);
    CHECK(err_has(V(x)->name));
    float data[3] = {1, 2, 3};
    CHECK(pf_ir_add_const(G, "bad", PF_IR_F32, 1, D(4), data, sizeof data, &dup) == PF_ERR_FORMAT);
    int c = cst(PF_IR_F32, 1, D(3), data);
    int n1 = node(PF_IR_ADD, NULL, 2, (int[]){x, c}, 1);
    int n2 = node(PF_IR_RELU, NULL, 1, (int[]){out0(n1)}, 1);
    CHECK_OK(pf_ir_mark_output(G, out0(n2)));
    /* A second producer for the same value is refused. */
    int again = -1;
    int o = out0(n2);
    CHECK(pf_ir_add_node(G, PF_IR_RELU, "dup", NULL, &x, 1, &o, 1, NULL, &again) == PF_ERR_FORMAT);
    CHECK_EQ_INT(V(x)->n_uses, 1);
    CHECK_EQ_INT(V(out0(n2))->n_uses, 1);
    CHECK_EQ_INT(V(out0(n1))->producer, n1);
    CHECK_OK(pf_ir_validate(G));
    CHECK_OK(infer_all());
    CHECK(dims_are(out0(n2), 2, D(2, 3)));

    pf_ir_graph *cl = NULL;
    CHECK_OK(pf_ir_graph_clone(G, &cl));
    REQUIRE(cl);
    CHECK_EQ_INT(cl->n_nodes, G->n_nodes);
    CHECK_EQ_INT(cl->n_values, G->n_values);
    CHECK(cl->values[c].data != V(c)->data);
    CHECK(memcmp(cl->values[c].data, data, sizeof data) == 0);
    CHECK(strcmp(cl->nodes[n2].name, G->nodes[n2].name) == 0);
    CHECK_OK(pf_ir_validate(cl));
    pf_ir_graph_destroy(&cl);
    CHECK(cl == NULL);

    /* Out of order: the relu reads a value produced after it. */
    G->nodes[n1].in[0] = out0(n2);
    CHECK(pf_ir_validate(G) == PF_ERR_FORMAT);
    CHECK(err_has("n0"));
    G->nodes[n1].in[0] = x;
    /* Arity. */
    G->nodes[n1].n_in = 1;
    CHECK(pf_ir_validate(G) == PF_ERR_FORMAT);
    G->nodes[n1].n_in = 2;

    /* Compact drops a dead node and the values only it used. */
    int d = node(PF_IR_SIGMOID, NULL, 1, (int[]){x}, 1);
    int dval = out0(d);
    G->nodes[d].dead = true;
    int before = G->n_values;
    CHECK_OK(pf_ir_compact(G));
    CHECK_EQ_INT(G->n_nodes, 2);
    CHECK_EQ_INT(G->n_values, before - 1);
    (void)dval;
    CHECK_OK(pf_ir_validate(G));
    CHECK_EQ_INT(G->values[G->outputs[0]].producer, 1);
    char buf[64];
    CHECK(strcmp(pf_ir_node_desc(G, 1, buf, sizeof buf), "node 1 'n1' (Relu)") == 0);
}

/* ---- shapes ------------------------------------------------------------------ */

static pf_ir_attr conv_attr(int64_t k, int64_t s, int64_t dil, pf_ir_auto_pad ap)
{
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.conv.nsp = 2;
    for (int i = 0; i < 2; i++) {
        a.conv.kernel[i] = k;
        a.conv.stride[i] = s;
        a.conv.dilation[i] = dil;
    }
    a.conv.group = 1;
    a.conv.auto_pad = ap;
    return a;
}

/* Conv on [1,2,h,h] with weight [4,2,k,k]: output H and resolved pads. */
static void conv_case(int64_t h, int64_t k, int64_t s, int64_t dil, pf_ir_auto_pad ap,
                      int64_t want_out, int64_t want_pb, int64_t want_pe)
{
    fresh();
    int x = input(PF_IR_F32, 4, D(1, 2, h, h));
    int w = input(PF_IR_F32, 4, D(4, 2, k, k));
    pf_ir_attr a = conv_attr(k, s, dil, ap);
    int n = node(PF_IR_CONV, &a, 2, (int[]){x, w}, 1);
    CHECK_OK(infer_all());
    CHECK(dims_are(out0(n), 4, D(1, 4, want_out, want_out)));
    const pf_ir_conv_attr *r = &G->nodes[n].attr.conv;
    CHECK_EQ_INT(r->pad_begin[0], want_pb);
    CHECK_EQ_INT(r->pad_end[0], want_pe);
    CHECK_EQ_INT(r->auto_pad, PF_IR_PAD_EXPLICIT);
    /* Re-inference keeps everything (specialisation re-infers). */
    CHECK_OK(infer_all());
    CHECK(dims_are(out0(n), 4, D(1, 4, want_out, want_out)));
    CHECK_EQ_INT(r->pad_begin[0], want_pb);
}

static void test_conv_shapes(void)
{
    conv_case(7, 3, 2, 1, PF_IR_PAD_SAME_UPPER, 4, 1, 1);
    conv_case(8, 3, 2, 1, PF_IR_PAD_SAME_UPPER, 4, 0, 1);
    conv_case(8, 3, 2, 1, PF_IR_PAD_SAME_LOWER, 4, 1, 0);
    conv_case(5, 4, 1, 1, PF_IR_PAD_SAME_UPPER, 5, 1, 2);
    conv_case(5, 4, 1, 1, PF_IR_PAD_SAME_LOWER, 5, 2, 1);
    conv_case(10, 3, 3, 2, PF_IR_PAD_SAME_UPPER, 4, 2, 2);
    conv_case(1, 3, 2, 1, PF_IR_PAD_SAME_UPPER, 1, 1, 1);
    conv_case(7, 3, 2, 1, PF_IR_PAD_VALID, 3, 0, 0);
    conv_case(7, 1, 1, 1, PF_IR_PAD_EXPLICIT, 7, 0, 0);

    /* Explicit asymmetric pads, 1D, symbolic batch carried. */
    fresh();
    int x = input(PF_IR_F32, 3, D(BATCH, 4, 11));
    int w = input(PF_IR_F32, 3, D(6, 2, 3));
    int b = input(PF_IR_F32, 1, D(6));
    pf_ir_attr a = conv_attr(3, 2, 1, PF_IR_PAD_EXPLICIT);
    a.conv.nsp = 1;
    a.conv.group = 2;
    a.conv.pad_begin[0] = 2;
    a.conv.pad_end[0] = 0;
    int n = node(PF_IR_CONV, &a, 3, (int[]){x, w, b}, 1);
    CHECK_OK(infer_all());
    CHECK(dims_are(out0(n), 3, D(BATCH, 6, 6))); /* (11+2-3)/2+1 */

    /* Channel mismatch names the node and both values. */
    fresh();
    x = input(PF_IR_F32, 4, D(1, 3, 8, 8));
    w = input(PF_IR_F32, 4, D(4, 2, 3, 3));
    a = conv_attr(3, 1, 1, PF_IR_PAD_EXPLICIT);
    node(PF_IR_CONV, &a, 2, (int[]){x, w}, 1);
    CHECK(infer_all() == PF_ERR_FORMAT);
    CHECK(err_has("node 0 'n0'"));
    CHECK(err_has("3 channels"));
    /* Kernel larger than the padded input. */
    fresh();
    x = input(PF_IR_F32, 4, D(1, 2, 2, 2));
    w = input(PF_IR_F32, 4, D(4, 2, 3, 3));
    a = conv_attr(3, 1, 1, PF_IR_PAD_EXPLICIT);
    node(PF_IR_CONV, &a, 2, (int[]){x, w}, 1);
    CHECK(infer_all() == PF_ERR_FORMAT);

    /* ConvTranspose: explicit, output_padding, output_shape + SAME_UPPER. */
    fresh();
    x = input(PF_IR_F32, 4, D(1, 4, 4, 4));
    w = input(PF_IR_F32, 4, D(4, 3, 3, 3));
    a = conv_attr(3, 2, 1, PF_IR_PAD_EXPLICIT);
    a.conv.pad_begin[0] = a.conv.pad_end[0] = a.conv.pad_begin[1] = a.conv.pad_end[1] = 1;
    a.conv.output_padding[0] = a.conv.output_padding[1] = 1;
    n = node(PF_IR_CONV_TRANSPOSE, &a, 2, (int[]){x, w}, 1);
    pf_ir_attr a2 = conv_attr(3, 2, 1, PF_IR_PAD_SAME_UPPER);
    a2.conv.output_shape[0] = a2.conv.output_shape[1] = 8;
    int n2 = node(PF_IR_CONV_TRANSPOSE, &a2, 2, (int[]){x, w}, 1);
    pf_ir_attr a3 = conv_attr(3, 2, 1, PF_IR_PAD_SAME_LOWER);
    int n3 = node(PF_IR_CONV_TRANSPOSE, &a3, 2, (int[]){x, w}, 1);
    CHECK_OK(infer_all());
    CHECK(dims_are(out0(n), 4, D(1, 3, 8, 8))); /* 2*3 + 1 + 3 - 2 */
    CHECK(dims_are(out0(n2), 4, D(1, 3, 8, 8)));
    CHECK_EQ_INT(G->nodes[n2].attr.conv.pad_begin[0], 0); /* total 1: extra at the end */
    CHECK_EQ_INT(G->nodes[n2].attr.conv.pad_end[0], 1);
    CHECK(dims_are(out0(n3), 4, D(1, 3, 8, 8)));
    CHECK_EQ_INT(G->nodes[n3].attr.conv.pad_begin[0], 1);
    CHECK_EQ_INT(G->nodes[n3].attr.conv.pad_end[0], 0);
    CHECK_OK(infer_all());
    CHECK(dims_are(out0(n2), 4, D(1, 3, 8, 8)));
}

static int64_t pool_out(int64_t h, int64_t k, int64_t s, int64_t pb, int64_t pe, bool ceil_mode,
                        pf_ir_auto_pad ap, int64_t dil)
{
    fresh();
    int x = input(PF_IR_F32, 4, D(2, 3, h, h));
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.pool.nsp = 2;
    for (int i = 0; i < 2; i++) {
        a.pool.kernel[i] = k;
        a.pool.stride[i] = s;
        a.pool.dilation[i] = dil;
        a.pool.pad_begin[i] = pb;
        a.pool.pad_end[i] = pe;
    }
    a.pool.ceil_mode = ceil_mode;
    a.pool.auto_pad = ap;
    int n = node(PF_IR_MAXPOOL, &a, 1, &x, 1);
    if (infer_all() != PF_OK) return -1;
    const pf_ir_value *y = V(out0(n));
    CHECK(y->ndim == 4 && y->dims[0] == 2 && y->dims[1] == 3 && y->dims[2] == y->dims[3]);
    return y->dims[2];
}

static void test_pool_shapes(void)
{
    CHECK_EQ_INT(pool_out(6, 3, 2, 0, 0, false, PF_IR_PAD_EXPLICIT, 1), 2);
    CHECK_EQ_INT(pool_out(6, 3, 2, 0, 0, true, PF_IR_PAD_EXPLICIT, 1), 3);
    /* The last window would start in the right padding: dropped. */
    CHECK_EQ_INT(pool_out(5, 2, 2, 1, 1, true, PF_IR_PAD_EXPLICIT, 1), 3);
    CHECK_EQ_INT(pool_out(5, 2, 2, 1, 1, false, PF_IR_PAD_EXPLICIT, 1), 3);
    CHECK_EQ_INT(pool_out(112, 3, 2, 1, 1, false, PF_IR_PAD_EXPLICIT, 1), 56);
    CHECK_EQ_INT(pool_out(7, 3, 2, 0, 0, false, PF_IR_PAD_SAME_UPPER, 1), 4);
    CHECK_EQ_INT(pool_out(7, 3, 2, 0, 0, false, PF_IR_PAD_VALID, 1), 3);
    CHECK_EQ_INT(pool_out(7, 2, 1, 0, 0, false, PF_IR_PAD_EXPLICIT, 2), 5);
    CHECK_EQ_INT(pool_out(2, 3, 1, 0, 0, false, PF_IR_PAD_EXPLICIT, 1), -1);
    fresh();
    int x = input(PF_IR_F32, 4, D(BATCH, 8, 5, 7));
    int n = node(PF_IR_GLOBAL_AVGPOOL, NULL, 1, &x, 1);
    CHECK_OK(infer_all());
    CHECK(dims_are(out0(n), 4, D(BATCH, 8, 1, 1)));
}

static void test_broadcast(void)
{
    fresh();
    int a = input(PF_IR_F32, 3, D(2, 3, 4));
    int b = input(PF_IR_F32, 2, D(3, 1));
    int c = input(PF_IR_F32, 4, D(BATCH, 3, 1, 5));
    int d = input(PF_IR_F32, 2, D(4, 1));
    int s = input(PF_IR_F32, 0, NULL);
    int n1 = node(PF_IR_ADD, NULL, 2, (int[]){a, b}, 1);
    int n2 = node(PF_IR_MUL, NULL, 2, (int[]){c, d}, 1);
    int n3 = node(PF_IR_LESS, NULL, 2, (int[]){s, a}, 1);
    int n4 = node(PF_IR_WHERE, NULL, 3, (int[]){out0(n3), a, b}, 1);
    int n5 = node(PF_IR_SUM, NULL, 3, (int[]){a, b, s}, 1);
    int n6 = node(PF_IR_PRELU, NULL, 2, (int[]){c, input(PF_IR_F32, 3, D(3, 1, 1))}, 1);
    CHECK_OK(infer_all());
    CHECK(dims_are(out0(n1), 3, D(2, 3, 4)));
    CHECK(dims_are(out0(n2), 4, D(BATCH, 3, 4, 5)));
    CHECK(dims_are(out0(n3), 3, D(2, 3, 4)));
    CHECK_EQ_INT(V(out0(n3))->dtype, PF_IR_BOOL);
    CHECK(dims_are(out0(n4), 3, D(2, 3, 4)));
    CHECK_EQ_INT(V(out0(n4))->dtype, PF_IR_F32);
    CHECK(dims_are(out0(n5), 3, D(2, 3, 4)));
    CHECK(dims_are(out0(n6), 4, D(BATCH, 3, 1, 5)));

    fresh();
    a = input(PF_IR_F32, 2, D(2, 3));
    b = input(PF_IR_F32, 1, D(4));
    node(PF_IR_ADD, NULL, 2, (int[]){a, b}, 1);
    CHECK(infer_all() == PF_ERR_FORMAT);
    CHECK(err_has("n0"));
    CHECK(err_has("[4]"));
    CHECK(err_has("[2,3]"));
    /* dtype mismatch */
    fresh();
    a = input(PF_IR_F32, 1, D(2));
    b = input(PF_IR_I64, 1, D(2));
    node(PF_IR_ADD, NULL, 2, (int[]){a, b}, 1);
    CHECK(infer_all() == PF_ERR_FORMAT);
}

static pf_ir_attr reshape_attr(pf_ir_reshape_kind k, int n, const int64_t *v)
{
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.reshape.kind = k;
    a.reshape.n = n;
    for (int i = 0; i < n; i++) {
        if (k == PF_IR_RESHAPE_SHAPE) a.reshape.shape[i] = v[i];
        else a.reshape.axes[i] = v[i];
    }
    return a;
}

static void test_reshape_family(void)
{
    fresh();
    int x = input(PF_IR_F32, 4, D(BATCH, 3, 4, 5));
    int y = input(PF_IR_F32, 3, D(2, 3, 4));
    int z = input(PF_IR_F32, 3, D(1, 3, 1));
    pf_ir_attr a = reshape_attr(PF_IR_RESHAPE_SHAPE, 2, D(0, -1));
    int n1 = node(PF_IR_RESHAPE, &a, 1, &x, 1);
    a = reshape_attr(PF_IR_RESHAPE_SHAPE, 2, D(-1, 60));
    int n2 = node(PF_IR_RESHAPE, &a, 1, &x, 1);
    a = reshape_attr(PF_IR_RESHAPE_SHAPE, 3, D(4, 0, -1));
    int n3 = node(PF_IR_RESHAPE, &a, 1, &y, 1);
    a = reshape_attr(PF_IR_RESHAPE_SHAPE, 2, D(-1, 6));
    int n4 = node(PF_IR_RESHAPE, &a, 1, &x, 1); /* depends on the batch: unknown */
    a = reshape_attr(PF_IR_RESHAPE_FLATTEN, 0, NULL);
    a.reshape.axis = -1;
    int n5 = node(PF_IR_RESHAPE, &a, 1, &y, 1);
    a.reshape.axis = 1;
    int n6 = node(PF_IR_RESHAPE, &a, 1, &x, 1);
    a = reshape_attr(PF_IR_RESHAPE_SQUEEZE, 1, D(-1));
    int n7 = node(PF_IR_RESHAPE, &a, 1, &z, 1);
    a = reshape_attr(PF_IR_RESHAPE_SQUEEZE, 0, NULL);
    int n8 = node(PF_IR_RESHAPE, &a, 1, &z, 1);
    a = reshape_attr(PF_IR_RESHAPE_UNSQUEEZE, 2, D(-1, 0));
    int n9 = node(PF_IR_RESHAPE, &a, 1, &y, 1);
    pf_ir_attr t;
    memset(&t, 0, sizeof t);
    int n10 = node(PF_IR_TRANSPOSE, &t, 1, &x, 1);
    t.transpose.n = 4;
    t.transpose.perm[0] = 0;
    t.transpose.perm[1] = 2;
    t.transpose.perm[2] = 3;
    t.transpose.perm[3] = -3;
    int n11 = node(PF_IR_TRANSPOSE, &t, 1, &x, 1);
    CHECK_OK(infer_all());
    CHECK(dims_are(out0(n1), 2, D(BATCH, 60)));
    CHECK(dims_are(out0(n2), 2, D(BATCH, 60)));
    CHECK(dims_are(out0(n3), 3, D(4, 3, 2)));
    CHECK_EQ_INT(V(out0(n4))->ndim, -1);
    CHECK(dims_are(out0(n5), 2, D(6, 4)));
    CHECK(dims_are(out0(n6), 2, D(BATCH, 60)));
    CHECK(dims_are(out0(n7), 2, D(1, 3)));
    CHECK(dims_are(out0(n8), 1, D(3)));
    CHECK(dims_are(out0(n9), 5, D(1, 2, 3, 4, 1)));
    CHECK_EQ_INT(G->nodes[n9].attr.reshape.axes[0], 4);
    CHECK(dims_are(out0(n10), 4, D(5, 4, 3, BATCH)));
    CHECK_EQ_INT(G->nodes[n10].attr.transpose.n, 4);
    CHECK(dims_are(out0(n11), 4, D(BATCH, 4, 5, 3)));
    CHECK_OK(infer_all());
    CHECK(dims_are(out0(n9), 5, D(1, 2, 3, 4, 1)));

    /* Errors: element count, squeezing a non-1 dim, allowzero with -1. */
    fresh();
    y = input(PF_IR_F32, 3, D(2, 3, 4));
    a = reshape_attr(PF_IR_RESHAPE_SHAPE, 2, D(5, -1));
    node(PF_IR_RESHAPE, &a, 1, &y, 1);
    CHECK(infer_all() == PF_ERR_FORMAT);
    CHECK(err_has("24 elements"));
    fresh();
    y = input(PF_IR_F32, 3, D(2, 3, 4));
    a = reshape_attr(PF_IR_RESHAPE_SQUEEZE, 1, D(1));
    node(PF_IR_RESHAPE, &a, 1, &y, 1);
    CHECK(infer_all() == PF_ERR_FORMAT);
    CHECK(err_has("squeeze axis 1"));
    fresh();
    y = input(PF_IR_F32, 2, D(0, 4));
    a = reshape_attr(PF_IR_RESHAPE_SHAPE, 2, D(0, 5));
    a.reshape.allowzero = true;
    int n = node(PF_IR_RESHAPE, &a, 1, &y, 1);
    CHECK_OK(infer_all());
    CHECK(dims_are(out0(n), 2, D(0, 5)));
    fresh();
    y = input(PF_IR_F32, 2, D(2, 4));
    a = reshape_attr(PF_IR_RESHAPE_UNSQUEEZE, 2, D(1, 1));
    node(PF_IR_RESHAPE, &a, 1, &y, 1);
    CHECK(infer_all() == PF_ERR_FORMAT);
}

static int slice1(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *rs, int64_t *re)
{
    fresh();
    int x = input(PF_IR_F32, 2, D(3, dim));
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.slice.n = 1;
    a.slice.axes[0] = -1;
    a.slice.starts[0] = start;
    a.slice.ends[0] = end;
    a.slice.steps[0] = step;
    int n = node(PF_IR_SLICE, &a, 1, &x, 1);
    if (infer_all() != PF_OK) return -1;
    int64_t len = V(out0(n))->dims[1];
    *rs = G->nodes[n].attr.slice.starts[0];
    *re = G->nodes[n].attr.slice.ends[0];
    CHECK_EQ_INT(G->nodes[n].attr.slice.axes[0], 1);
    /* Idempotent. */
    CHECK_OK(infer_all());
    CHECK_EQ_INT(V(out0(n))->dims[1], len);
    CHECK_EQ_INT(G->nodes[n].attr.slice.starts[0], *rs);
    CHECK_EQ_INT(G->nodes[n].attr.slice.ends[0], *re);
    return (int)len;
}

static void test_slice(void)
{
    int64_t s, e;
    CHECK_EQ_INT(slice1(10, -3, INT64_MAX, 1, &s, &e), 3);
    CHECK_EQ_INT(s, 7);
    CHECK_EQ_INT(e, 10);
    CHECK_EQ_INT(slice1(10, -1, INT64_MIN, -1, &s, &e), 10);
    CHECK_EQ_INT(s, 9);
    CHECK_EQ_INT(e, -1);
    CHECK_EQ_INT(slice1(10, 1, 8, 2, &s, &e), 4);
    CHECK_EQ_INT(slice1(10, 8, 1, -2, &s, &e), 4);
    CHECK_EQ_INT(slice1(10, 20, 30, 1, &s, &e), 0);
    CHECK_EQ_INT(s, 10);
    CHECK_EQ_INT(slice1(10, -100, -8, 1, &s, &e), 2);
    CHECK_EQ_INT(s, 0);
    CHECK_EQ_INT(slice1(10, 100, -100, -3, &s, &e), 4); /* 9, 6, 3, 0 */
    CHECK_EQ_INT(s, 9);
    CHECK_EQ_INT(slice1(10, 2, 5, -1, &s, &e), 0);
    CHECK_EQ_INT(slice1(10, 0, 10, 0, &s, &e), -1);

    /* Batch axis: the full range keeps it symbolic; other ranges are unknown. */
    fresh();
    int x = input(PF_IR_F32, 2, D(BATCH, 8));
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.slice.n = 2;
    a.slice.axes[0] = 0;
    a.slice.starts[0] = 0;
    a.slice.ends[0] = INT64_MAX;
    a.slice.steps[0] = 1;
    a.slice.axes[1] = 1;
    a.slice.starts[1] = 2;
    a.slice.ends[1] = -2;
    a.slice.steps[1] = 1;
    int n1 = node(PF_IR_SLICE, &a, 1, &x, 1);
    a.slice.ends[0] = 1;
    int n2 = node(PF_IR_SLICE, &a, 1, &x, 1);
    CHECK_OK(infer_all());
    CHECK(dims_are(out0(n1), 2, D(BATCH, 4)));
    CHECK_EQ_INT(V(out0(n2))->ndim, -1);
}

static void test_movement_shapes(void)
{
    fresh();
    int x = input(PF_IR_F32, 4, D(BATCH, 3, 5, 7));
    int64_t idx[2] = {0, -1};
    int ix = cst_i64(2, idx);
    int64_t one = 2;
    int sc = cst(PF_IR_I64, 0, NULL, &one);
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.pad.n = 4;
    a.pad.begin[2] = 1;
    a.pad.end[2] = 2;
    a.pad.begin[3] = -1;
    int np = node(PF_IR_PAD, &a, 1, &x, 1);
    memset(&a, 0, sizeof a);
    a.axis.axis = -1;
    int ng1 = node(PF_IR_GATHER, &a, 2, (int[]){x, ix}, 1);
    a.axis.axis = 1;
    int ng2 = node(PF_IR_GATHER, &a, 2, (int[]){x, sc}, 1);
    memset(&a, 0, sizeof a);
    a.reshape.kind = PF_IR_RESHAPE_SHAPE;
    a.reshape.n = 3;
    a.reshape.shape[0] = 2;
    a.reshape.shape[1] = 1;
    a.reshape.shape[2] = 4;
    int y = input(PF_IR_F32, 2, D(3, 1));
    int ne = node(PF_IR_EXPAND, &a, 1, &y, 1);
    memset(&a, 0, sizeof a);
    a.tile.n = 4;
    a.tile.repeats[0] = 1;
    a.tile.repeats[1] = 2;
    a.tile.repeats[2] = 1;
    a.tile.repeats[3] = 3;
    int nt = node(PF_IR_TILE, &a, 1, &x, 1);
    memset(&a, 0, sizeof a);
    a.split.axis = 3;
    a.split.n = 2;
    a.split.sizes[0] = 3;
    a.split.sizes[1] = 4;
    int ns = node(PF_IR_SPLIT, &a, 1, &x, 2);
    memset(&a, 0, sizeof a);
    a.split.axis = -3;
    int ns2 = node(PF_IR_SPLIT, &a, 1, &x, 3);
    memset(&a, 0, sizeof a);
    a.d2s.blocksize = 2;
    int z = input(PF_IR_F32, 4, D(1, 8, 3, 4));
    int nd = node(PF_IR_DEPTH_TO_SPACE, &a, 1, &z, 1);
    int nsd = node(PF_IR_SPACE_TO_DEPTH, &a, 1, (int[]){out0(nd)}, 1);
    memset(&a, 0, sizeof a);
    a.axis.axis = 1;
    int nc = node(PF_IR_CONCAT, &a, 2, (int[]){x, x}, 1);
    memset(&a, 0, sizeof a);
    a.slice.starts[0] = 1;
    a.slice.ends[0] = INT64_MAX;
    int nsh = node(PF_IR_SHAPE, &a, 1, &x, 1);
    a.slice.starts[0] = -2;
    int nsh2 = node(PF_IR_SHAPE, &a, 1, &x, 1);
    memset(&a, 0, sizeof a);
    a.cast.to = PF_IR_I32;
    int ncast = node(PF_IR_CAST, &a, 1, &x, 1);
    CHECK_OK(infer_all());
    CHECK(dims_are(out0(np), 4, D(BATCH, 3, 8, 6)));
    CHECK(dims_are(out0(ng1), 4, D(BATCH, 3, 5, 2)));
    CHECK(dims_are(out0(ng2), 3, D(BATCH, 5, 7)));
    CHECK(dims_are(out0(ne), 3, D(2, 3, 4)));
    CHECK(dims_are(out0(nt), 4, D(BATCH, 6, 5, 21)));
    CHECK(dims_are(G->nodes[ns].out[0], 4, D(BATCH, 3, 5, 3)));
    CHECK(dims_are(G->nodes[ns].out[1], 4, D(BATCH, 3, 5, 4)));
    CHECK(dims_are(G->nodes[ns2].out[2], 4, D(BATCH, 1, 5, 7)));
    CHECK(dims_are(out0(nd), 4, D(1, 2, 6, 8)));
    CHECK(dims_are(out0(nsd), 4, D(1, 8, 3, 4)));
    CHECK(dims_are(out0(nc), 4, D(BATCH, 6, 5, 7)));
    CHECK(dims_are(out0(nsh), 1, D(3)));
    CHECK_EQ_INT(V(out0(nsh))->dtype, PF_IR_I64);
    CHECK(dims_are(out0(nsh2), 1, D(2)));
    CHECK_EQ_INT(V(out0(ncast))->dtype, PF_IR_I32);
}

static void test_movement_errors(void)
{
    /* Concat with a mismatched non-axis dim. */
    fresh();
    int x = input(PF_IR_F32, 3, D(BATCH, 3, 5));
    int y = input(PF_IR_F32, 3, D(BATCH, 4, 6));
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.axis.axis = 1;
    node(PF_IR_CONCAT, &a, 2, (int[]){x, y}, 1);
    CHECK(infer_all() == PF_ERR_FORMAT);
    CHECK(err_has("dim 2"));
    /* Gather with an index out of range. */
    fresh();
    x = input(PF_IR_F32, 2, D(4, 3));
    int64_t bad[1] = {4};
    int ix = cst_i64(1, bad);
    memset(&a, 0, sizeof a);
    node(PF_IR_GATHER, &a, 2, (int[]){x, ix}, 1);
    CHECK(infer_all() == PF_ERR_FORMAT);
    CHECK(err_has("index 4"));
    /* Split that does not add up. */
    fresh();
    x = input(PF_IR_F32, 2, D(4, 7));
    memset(&a, 0, sizeof a);
    a.split.axis = 1;
    node(PF_IR_SPLIT, &a, 1, &x, 2);
    CHECK(infer_all() == PF_ERR_FORMAT);
    /* Concat of a symbolic batch along the batch axis: left unknown. */
    fresh();
    x = input(PF_IR_F32, 2, D(BATCH, 3));
    memset(&a, 0, sizeof a);
    int n = node(PF_IR_CONCAT, &a, 2, (int[]){x, x}, 1);
    CHECK_OK(infer_all());
    CHECK_EQ_INT(V(out0(n))->ndim, -1);
}

static void test_resize_reduce_linalg(void)
{
    fresh();
    int x = input(PF_IR_F32, 4, D(BATCH, 3, 5, 7));
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.resize.has_scales = true;
    a.resize.n = 4;
    a.resize.scale[0] = a.resize.scale[1] = 1.0;
    a.resize.scale[2] = 2.0;
    a.resize.scale[3] = 0.5;
    int nr = node(PF_IR_RESIZE, &a, 1, &x, 1);
    memset(&a, 0, sizeof a);
    int nr2 = node(PF_IR_RESIZE, &a, 1, &x, 1);
    pf_ir_value *yv = &G->values[out0(nr2)];
    yv->ndim = 4;
    yv->dims[0] = BATCH;
    yv->dims[1] = 3;
    yv->dims[2] = 15;
    yv->dims[3] = 14;
    memset(&a, 0, sizeof a);
    a.reduce.n = 2;
    a.reduce.axes[0] = -1;
    a.reduce.axes[1] = 2;
    int nred = node(PF_IR_REDUCE_MEAN, &a, 1, &x, 1);
    a.reduce.keepdims = true;
    int nred2 = node(PF_IR_REDUCE_SUM, &a, 1, &x, 1);
    memset(&a, 0, sizeof a);
    a.reduce.noop_with_empty_axes = true;
    int nred3 = node(PF_IR_REDUCE_MAX, &a, 1, &x, 1);
    a.reduce.noop_with_empty_axes = false;
    a.reduce.keepdims = true;
    int nred4 = node(PF_IR_REDUCE_L2, &a, 1, &x, 1);
    memset(&a, 0, sizeof a);
    a.reduce.n = 1;
    a.reduce.axes[0] = 1;
    int narg = node(PF_IR_ARGMAX, &a, 1, &x, 1);
    memset(&a, 0, sizeof a);
    a.axis.axis = -1;
    int nsm = node(PF_IR_SOFTMAX, &a, 1, &x, 1);
    CHECK_OK(infer_all());
    CHECK(dims_are(out0(nr), 4, D(BATCH, 3, 10, 3)));
    CHECK(dims_are(out0(nr2), 4, D(BATCH, 3, 15, 14)));
    CHECK(G->nodes[nr2].attr.resize.scale[2] == 3.0 && G->nodes[nr2].attr.resize.scale[3] == 2.0);
    CHECK(G->nodes[nr2].attr.resize.scale[1] == 1.0);
    CHECK(dims_are(out0(nred), 2, D(BATCH, 3)));
    CHECK_EQ_INT(G->nodes[nred].attr.reduce.axes[0], 3);
    CHECK(dims_are(out0(nred2), 4, D(BATCH, 3, 1, 1)));
    CHECK(dims_are(out0(nred3), 4, D(BATCH, 3, 5, 7)));
    CHECK(dims_are(out0(nred4), 4, D(1, 1, 1, 1)));
    CHECK(dims_are(out0(narg), 3, D(BATCH, 5, 7)));
    CHECK_EQ_INT(V(out0(narg))->dtype, PF_IR_I64);
    CHECK(dims_are(out0(nsm), 4, D(BATCH, 3, 5, 7)));
    CHECK_EQ_INT(G->nodes[nsm].attr.axis.axis, 3);

    fresh();
    int A = input(PF_IR_F32, 2, D(BATCH, 16));
    int Bt = input(PF_IR_F32, 2, D(10, 16));
    int C = input(PF_IR_F32, 1, D(10));
    memset(&a, 0, sizeof a);
    a.gemm.alpha = a.gemm.beta = 1.0f;
    a.gemm.trans_b = true;
    int ng = node(PF_IR_GEMM, &a, 3, (int[]){A, Bt, C}, 1);
    int v3 = input(PF_IR_F32, 1, D(3));
    int m34 = input(PF_IR_F32, 2, D(3, 4));
    int m2134 = input(PF_IR_F32, 4, D(2, 1, 3, 4));
    int m546 = input(PF_IR_F32, 3, D(5, 4, 6));
    int v4 = input(PF_IR_F32, 1, D(4));
    int nm1 = node(PF_IR_MATMUL, NULL, 2, (int[]){v3, m34}, 1);
    int nm2 = node(PF_IR_MATMUL, NULL, 2, (int[]){m2134, m546}, 1);
    int nm3 = node(PF_IR_MATMUL, NULL, 2, (int[]){v3, v3}, 1);
    int nm4 = node(PF_IR_MATMUL, NULL, 2, (int[]){m2134, v4}, 1);
    CHECK_OK(infer_all());
    CHECK(dims_are(out0(ng), 2, D(BATCH, 10)));
    CHECK(dims_are(out0(nm1), 1, D(4)));
    CHECK(dims_are(out0(nm2), 4, D(2, 5, 3, 6)));
    CHECK(dims_are(out0(nm3), 0, NULL));
    CHECK(dims_are(out0(nm4), 3, D(2, 1, 3)));
    node(PF_IR_MATMUL, NULL, 2, (int[]){m34, m34}, 1);
    CHECK(infer_all() == PF_ERR_FORMAT);
    CHECK(err_has("K 4 vs 3"));
}

/* ---- folding and specialisation ------------------------------------------------ */

static bool kernel_missing(pf_status st)
{
    return st == PF_ERR_UNSUPPORTED && strstr(pf_last_error(), "not built yet");
}

/* X[N,3,4,4] -> Shape -> Gather(0) -> Unsqueeze(0) -> Concat([-1]) -> Reshape(X). */
static void test_specialize_shape_chain(void)
{
    fresh();
    int x = input(PF_IR_F32, 4, D(BATCH, 3, 4, 4));
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.slice.starts[0] = 0;
    a.slice.ends[0] = INT64_MAX;
    int nsh = node(PF_IR_SHAPE, &a, 1, &x, 1);
    int64_t zero = 0;
    int iz = cst(PF_IR_I64, 0, NULL, &zero);
    memset(&a, 0, sizeof a);
    int ng = node(PF_IR_GATHER, &a, 2, (int[]){out0(nsh), iz}, 1);
    a = reshape_attr(PF_IR_RESHAPE_UNSQUEEZE, 1, D(0));
    int nu = node(PF_IR_RESHAPE, &a, 1, (int[]){out0(ng)}, 1);
    int64_t m1 = -1;
    int cm = cst_i64(1, &m1);
    memset(&a, 0, sizeof a);
    int nc = node(PF_IR_CONCAT, &a, 2, (int[]){out0(nu), cm}, 1);
    a = reshape_attr(PF_IR_RESHAPE_SHAPE, 0, NULL);
    int nr = node(PF_IR_RESHAPE, &a, 2, (int[]){x, out0(nc)}, 1);
    int nrelu = node(PF_IR_RELU, NULL, 1, (int[]){out0(nr)}, 1);
    CHECK_OK(pf_ir_mark_output(G, out0(nrelu)));
    CHECK_OK(infer_all());
    CHECK_OK(pf_ir_validate(G));
    CHECK(dims_are(out0(nsh), 1, D(4)));
    CHECK(dims_are(out0(nc), 1, D(2)));
    CHECK_EQ_INT(V(out0(nr))->ndim, -1); /* shape computed at runtime */

    pf_ir_graph *s = NULL;
    pf_status st = pf_ir_specialize(G, 3, &s);
    if (kernel_missing(st)) {
        printf("  NOTE: specialisation check skipped, a CPU kernel is missing: %s\n",
               pf_last_error());
        return;
    }
    CHECK_OK(st);
    REQUIRE(s);
    CHECK_OK(pf_ir_validate(s));
    /* Only the reshape and the relu survive, the reshape with its attr. */
    CHECK_EQ_INT(s->n_nodes, 2);
    const pf_ir_node *r = &s->nodes[0];
    CHECK_EQ_INT(r->op, PF_IR_RESHAPE);
    CHECK_EQ_INT(r->n_in, 1);
    CHECK_EQ_INT(r->attr.reshape.n, 2);
    CHECK_EQ_INT(r->attr.reshape.shape[0], 3);
    CHECK_EQ_INT(r->attr.reshape.shape[1], -1);
    const pf_ir_value *out = &s->values[s->outputs[0]];
    CHECK(out->ndim == 2 && out->dims[0] == 3 && out->dims[1] == 48);
    CHECK(s->values[s->inputs[0]].dims[0] == 3);
    pf_ir_graph_destroy(&s);
    /* The source graph is untouched. */
    CHECK_EQ_INT(V(x)->dims[0], BATCH);
    CHECK_EQ_INT(G->n_nodes, 6);

    /* A reshape whose shape is a graph input can never be specialised. */
    fresh();
    x = input(PF_IR_F32, 2, D(BATCH, 4));
    int shp = input(PF_IR_I64, 1, D(2));
    a = reshape_attr(PF_IR_RESHAPE_SHAPE, 0, NULL);
    nr = node(PF_IR_RESHAPE, &a, 2, (int[]){x, shp}, 1);
    CHECK_OK(pf_ir_mark_output(G, out0(nr)));
    CHECK_OK(infer_all());
    CHECK(pf_ir_specialize(G, 2, &s) == PF_ERR_UNSUPPORTED);
    CHECK(s == NULL);
    CHECK(err_has("node 0 'n0'"));
    CHECK(err_has("must be constant"));
    CHECK(pf_ir_specialize(G, 0, &s) == PF_ERR_INVALID);
}

static void test_fold_moves_inputs(void)
{
    /* Constant inputs at ONNX positions move into attrs. */
    fresh();
    int x = input(PF_IR_F32, 4, D(1, 3, 8, 8));
    int64_t pads[8] = {0, 0, 1, 2, 0, 0, 3, 4};
    int cp = cst_i64(8, pads);
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    int np = node(PF_IR_PAD, &a, 2, (int[]){x, cp}, 1);
    int64_t st[2] = {1, -1}, en[2] = {INT64_MAX, INT64_MIN}, ax[2] = {2, 3}, sp[2] = {2, -1};
    memset(&a, 0, sizeof a);
    int ns = node(PF_IR_SLICE, &a, 5,
                  (int[]){x, cst_i64(2, st), cst_i64(2, en), cst_i64(2, ax), cst_i64(2, sp)}, 1);
    float sc[4] = {1, 1, 2, 2};
    memset(&a, 0, sizeof a);
    int nrs = node(PF_IR_RESIZE, &a, 3, (int[]){x, -1, cst(PF_IR_F32, 1, D(4), sc)}, 1);
    int nup = node(PF_IR_RESIZE, &a, 2, (int[]){x, cst(PF_IR_F32, 1, D(4), sc)}, 1);
    int64_t sizes[4] = {1, 3, 4, 12};
    int nrs2 = node(PF_IR_RESIZE, &a, 4, (int[]){x, -1, -1, cst_i64(4, sizes)}, 1);
    float lo = 0.0f, hi = 6.0f;
    memset(&a, 0, sizeof a);
    a.unary.alpha = -1e30f;
    a.unary.beta = 1e30f;
    int ncl = node(PF_IR_CLIP, &a, 3,
                   (int[]){x, cst(PF_IR_F32, 0, NULL, &lo), cst(PF_IR_F32, 0, NULL, &hi)}, 1);
    int64_t axes[1] = {-1};
    memset(&a, 0, sizeof a);
    a.reduce.keepdims = true;
    int nred = node(PF_IR_REDUCE_SUM, &a, 2, (int[]){x, cst_i64(1, axes)}, 1);
    int64_t rep[4] = {1, 1, 2, 1};
    memset(&a, 0, sizeof a);
    int nt = node(PF_IR_TILE, &a, 2, (int[]){x, cst_i64(4, rep)}, 1);
    int64_t spl[2] = {2, 6};
    memset(&a, 0, sizeof a);
    a.split.axis = 2;
    int nsp = node(PF_IR_SPLIT, &a, 2, (int[]){x, cst_i64(2, spl)}, 2);
    int64_t eshape[4] = {2, 1, 1, 1};
    memset(&a, 0, sizeof a);
    int ne = node(PF_IR_EXPAND, &a, 2, (int[]){x, cst_i64(4, eshape)}, 1);
    for (int k = 0; k < G->n_nodes; k++)
        for (int i = 0; i < G->nodes[k].n_out; i++) CHECK_OK(pf_ir_mark_output(G, G->nodes[k].out[i]));
    CHECK_OK(infer_all());
    CHECK_EQ_INT(V(out0(np))->ndim, -1);
    int folded = -1;
    CHECK_OK(pf_ir_fold_constants(G, &folded));
    CHECK_EQ_INT(folded, 0);
    CHECK_EQ_INT(G->nodes[np].n_in, 1);
    CHECK(dims_are(out0(np), 4, D(1, 3, 12, 14)));
    CHECK_EQ_INT(G->nodes[ns].n_in, 1);
    CHECK(dims_are(out0(ns), 4, D(1, 3, 4, 8))); /* rows 1,3,5,7; cols 7..0 */
    CHECK_EQ_INT(G->nodes[ns].attr.slice.starts[1], 7);
    CHECK_EQ_INT(G->nodes[ns].attr.slice.ends[1], -1);
    CHECK(dims_are(out0(nrs), 4, D(1, 3, 16, 16)));
    CHECK(G->nodes[nrs].attr.resize.has_scales);
    CHECK_EQ_INT(G->nodes[nrs].n_in, 1);
    CHECK(dims_are(out0(nup), 4, D(1, 3, 16, 16)));
    CHECK_EQ_INT(G->nodes[nup].n_in, 1);
    CHECK(dims_are(out0(nrs2), 4, D(1, 3, 4, 12)));
    CHECK(G->nodes[nrs2].attr.resize.scale[2] == 0.5 && G->nodes[nrs2].attr.resize.scale[3] == 1.5);
    CHECK_EQ_INT(G->nodes[ncl].n_in, 1);
    CHECK(G->nodes[ncl].attr.unary.alpha == 0.0f && G->nodes[ncl].attr.unary.beta == 6.0f);
    CHECK(dims_are(out0(nred), 4, D(1, 3, 8, 1)));
    CHECK(dims_are(out0(nt), 4, D(1, 3, 16, 8)));
    CHECK(dims_are(G->nodes[nsp].out[1], 4, D(1, 3, 6, 8)));
    CHECK(dims_are(out0(ne), 4, D(2, 3, 8, 8)));
    pf_ir_recount(G);
    CHECK_OK(pf_ir_validate(G));
}

/* An integer Clip bound a float cannot hold (2^24 + 1) stays an input: in
 * the float attr it became 2^24 and clipped 2^24 + 1 to 2^24. */
static void test_fold_clip_int_bounds(void)
{
    fresh();
    int x = input(PF_IR_I64, 1, D(3));
    const int64_t lo = -5, hi = (1 << 24) + 1;
    pf_ir_attr a;
    memset(&a, 0, sizeof a);
    a.unary.alpha = -1e30f;
    a.unary.beta = 1e30f;
    int n = node(PF_IR_CLIP, &a, 3,
                 (int[]){x, cst(PF_IR_I64, 0, NULL, &lo), cst(PF_IR_I64, 0, NULL, &hi)}, 1);
    CHECK_OK(pf_ir_mark_output(G, out0(n)));
    CHECK_OK(infer_all());
    int folded = -1;
    CHECK_OK(pf_ir_fold_constants(G, &folded));
    const pf_ir_node *c = &G->nodes[n];
    CHECK(c->attr.unary.alpha == -5.0f); /* exact: folded */
    CHECK_EQ_INT(c->n_in, 3);
    CHECK(c->in[1] < 0 && c->in[2] >= 0 && V(c->in[2])->data != NULL);
    CHECK(c->attr.unary.beta == 1e30f);
}

static void test_fold_constant_nodes(void)
{
    /* Add of two constants folds to a constant when the kernel exists. */
    fresh();
    float a[4] = {1, 2, 3, 4}, b[2] = {10, 20};
    int ca = cst(PF_IR_F32, 2, D(2, 2), a), cb = cst(PF_IR_F32, 1, D(2), b);
    int x = input(PF_IR_F32, 2, D(2, 2));
    int n1 = node(PF_IR_ADD, NULL, 2, (int[]){ca, cb}, 1);
    int n2 = node(PF_IR_MUL, NULL, 2, (int[]){x, out0(n1)}, 1);
    CHECK_OK(pf_ir_mark_output(G, out0(n2)));
    CHECK_OK(infer_all());
    int folded = -1;
    CHECK_OK(pf_ir_fold_constants(G, &folded));
    const pf_ir_value *v = V(out0(n1));
    if (!v->data) {
        /* Leave the node when the kernel is missing. */
        CHECK_EQ_INT(folded, 0);
        CHECK(!G->nodes[n1].dead);
        printf("  NOTE: Add kernel missing, fold-by-kernel check skipped\n");
        return;
    }
    CHECK_EQ_INT(folded, 1);
    CHECK(G->nodes[n1].dead);
    const float *d = v->data;
    CHECK(d[0] == 11 && d[1] == 22 && d[2] == 13 && d[3] == 24);
    int removed = -1;
    CHECK_OK(pf_ir_remove_dead(G, &removed));
    CHECK_EQ_INT(G->n_nodes, 1);
    CHECK_OK(pf_ir_validate(G));
}

/* ---- batch-norm folding ------------------------------------------------------- */

static float frand(void) { return (float)((double)(pf_test_rand() >> 11) / 9007199254740992.0 * 2.0 - 1.0); }

/* Naive references (NCHW). */
static void ref_conv(const float *x, const float *w, const float *b, float *y, int64_t n,
                     int64_t c, int64_t h, int64_t wd, int64_t m, int64_t k, int64_t s, int64_t p,
                     int64_t grp, int64_t oh, int64_t ow)
{
    int64_t cg = c / grp, mg = m / grp;
    for (int64_t in = 0; in < n; in++)
        for (int64_t o = 0; o < m; o++)
            for (int64_t yy = 0; yy < oh; yy++)
                for (int64_t xx = 0; xx < ow; xx++) {
                    double acc = b ? b[o] : 0.0;
                    int64_t gi = o / mg;
                    for (int64_t ci = 0; ci < cg; ci++)
                        for (int64_t ky = 0; ky < k; ky++)
                            for (int64_t kx = 0; kx < k; kx++) {
                                int64_t iy = yy * s - p + ky, ix = xx * s - p + kx;
                                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                                acc += (double)x[((in * c + gi * cg + ci) * h + iy) * wd + ix] *
                                       w[((o * cg + ci) * k + ky) * k + kx];
                            }
                    y[((in * m + o) * oh + yy) * ow + xx] = (float)acc;
                }
}

static void ref_conv_t(const float *x, const float *w, const float *b, float *y, int64_t n,
                       int64_t c, int64_t h, int64_t wd, int64_t m, int64_t k, int64_t s,
                       int64_t p, int64_t grp, int64_t oh, int64_t ow)
{
    int64_t cg = c / grp, mg = m / grp;
    for (int64_t i = 0; i < n * m * oh * ow; i++) y[i] = b ? b[(i / (oh * ow)) % m] : 0.0f;
    for (int64_t in = 0; in < n; in++)
        for (int64_t ci = 0; ci < c; ci++)
            for (int64_t iy = 0; iy < h; iy++)
                for (int64_t ix = 0; ix < wd; ix++) {
                    float xv = x[((in * c + ci) * h + iy) * wd + ix];
                    int64_t gi = ci / cg;
                    for (int64_t j = 0; j < mg; j++)
                        for (int64_t ky = 0; ky < k; ky++)
                            for (int64_t kx = 0; kx < k; kx++) {
                                int64_t oy = iy * s - p + ky, ox = ix * s - p + kx;
                                if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
                                int64_t o = gi * mg + j;
                                y[((in * m + o) * oh + oy) * ow + ox] +=
                                    xv * w[((ci * mg + j) * k + ky) * k + kx];
                            }
                }
}

static void bn_case(bool transposed, int64_t grp, bool with_bias)
{
    fresh();
    const int64_t n = 2, c = 4, h = 6, wd = 5, m = 6, k = 3, s = transposed ? 2 : 1, p = 1;
    int64_t wdims[4];
    if (!transposed) {
        wdims[0] = m; wdims[1] = c / grp;
    } else {
        wdims[0] = c; wdims[1] = m / grp;
    }
    wdims[2] = wdims[3] = k;
    int64_t wn = wdims[0] * wdims[1] * k * k;
    float *w = malloc(sizeof(float) * (size_t)wn);
    float bias[6], sc[6], bb[6], mu[6], var[6];
    for (int64_t i = 0; i < wn; i++) w[i] = frand();
    for (int i = 0; i < m; i++) {
        bias[i] = frand();
        sc[i] = 0.5f + frand();
        bb[i] = frand();
        mu[i] = frand();
        var[i] = 0.1f + (frand() + 1.0f);
    }
    int x = input(PF_IR_F32, 4, D(n, c, h, wd));
    int cw = cst(PF_IR_F32, 4, wdims, w);
    int cb = with_bias ? cst(PF_IR_F32, 1, D(m), bias) : -1;
    pf_ir_attr a = conv_attr(k, s, 1, PF_IR_PAD_EXPLICIT);
    a.conv.group = grp;
    for (int i = 0; i < 2; i++) a.conv.pad_begin[i] = a.conv.pad_end[i] = p;
    int nc = node(transposed ? PF_IR_CONV_TRANSPOSE : PF_IR_CONV, &a, with_bias ? 3 : 2,
                  (int[]){x, cw, cb}, 1);
    pf_ir_attr ab;
    memset(&ab, 0, sizeof ab);
    ab.bn.epsilon = 1e-3f;
    int nb = node(PF_IR_BATCHNORM, &ab, 5,
                  (int[]){out0(nc), cst(PF_IR_F32, 1, D(m), sc), cst(PF_IR_F32, 1, D(m), bb),
                          cst(PF_IR_F32, 1, D(m), mu), cst(PF_IR_F32, 1, D(m), var)},
                  1);
    int yv = out0(nb);
    CHECK_OK(pf_ir_mark_output(G, yv));
    CHECK_OK(infer_all());
    const pf_ir_value *cy = V(out0(nc));
    REQUIRE(cy->ndim == 4);
    int64_t oh = cy->dims[2], ow = cy->dims[3];
    int64_t xn = n * c * h * wd, yn = n * m * oh * ow;
    float *xd = malloc(sizeof(float) * (size_t)xn);
    float *ref = malloc(sizeof(float) * (size_t)yn);
    float *got = malloc(sizeof(float) * (size_t)yn);
    float *kref = malloc(sizeof(float) * (size_t)yn);
    float *kgot = malloc(sizeof(float) * (size_t)yn);
    for (int64_t i = 0; i < xn; i++) xd[i] = frand();
    if (transposed)
        ref_conv_t(xd, w, with_bias ? bias : NULL, ref, n, c, h, wd, m, k, s, p, grp, oh, ow);
    else
        ref_conv(xd, w, with_bias ? bias : NULL, ref, n, c, h, wd, m, k, s, p, grp, oh, ow);
    for (int64_t i = 0; i < yn; i++) {
        int64_t o = (i / (oh * ow)) % m;
        ref[i] = (float)((ref[i] - mu[o]) / sqrt((double)var[o] + 1e-3) * sc[o] + bb[o]);
    }

    /* The same graph through the CPU kernels before folding (when they exist). */
    pf_ir_graph *orig = NULL;
    CHECK_OK(pf_ir_graph_clone(G, &orig));
    int folded = -1;
    CHECK_OK(pf_ir_fold_batchnorm(G, &folded));
    CHECK_EQ_INT(folded, 1);
    CHECK(G->nodes[nb].dead);
    CHECK_EQ_INT(G->nodes[nc].out[0], yv);
    CHECK_EQ_INT(V(yv)->producer, nc);
    CHECK_OK(pf_ir_compact(G));
    CHECK_OK(pf_ir_validate(G));
    REQUIRE(G->n_nodes == 1);
    const pf_ir_node *fc = &G->nodes[0];
    REQUIRE(fc->n_in == 3 && fc->in[2] >= 0);
    const float *nw = V(fc->in[1])->data, *nbias = V(fc->in[2])->data;
    if (transposed)
        ref_conv_t(xd, nw, nbias, got, n, c, h, wd, m, k, s, p, grp, oh, ow);
    else
        ref_conv(xd, nw, nbias, got, n, c, h, wd, m, k, s, p, grp, oh, ow);
    double maxerr = 0;
    for (int64_t i = 0; i < yn; i++) {
        double e = fabs((double)got[i] - ref[i]) / (1.0 + fabs((double)ref[i]));
        if (e > maxerr) maxerr = e;
    }
    CHECK(maxerr < 1e-4);

    /* Kernel check: conv+bn (two nodes) vs the folded conv, on pf_nn_cpu_run_node. */
    size_t sb0 = pf_nn_cpu_scratch_bytes(orig, nc), sb1 = pf_nn_cpu_scratch_bytes(G, 0);
    size_t sbm = sb0 > sb1 ? sb0 : sb1;
    void *scratch = sbm ? aligned_alloc(64, (sbm + 63) / 64 * 64) : NULL;
    float *mid = malloc(sizeof(float) * (size_t)yn);
    const void *in0[3] = {xd, w, with_bias ? bias : NULL};
    void *o0[1] = {mid};
    pf_status st = pf_nn_cpu_run_node(orig, nc, in0, o0, NULL, scratch, sb0);
    if (st == PF_ERR_UNSUPPORTED) {
        printf("  NOTE: %s kernel missing (%s): kernel BN-folding check skipped\n",
               transposed ? "ConvTranspose" : "Conv", pf_last_error());
    } else {
        CHECK_OK(st);
        const void *in1[5] = {mid, sc, bb, mu, var};
        void *o1[1] = {kref};
        pf_status st2 = pf_nn_cpu_run_node(orig, nb, in1, o1, NULL, NULL, 0);
        if (st2 == PF_ERR_UNSUPPORTED) {
            printf("  NOTE: BatchNormalization kernel missing: kernel BN-folding check skipped\n");
        } else {
            CHECK_OK(st2);
            const void *in2[3] = {xd, nw, nbias};
            void *o2[1] = {kgot};
            CHECK_OK(pf_nn_cpu_run_node(G, 0, in2, o2, NULL, scratch, sb1));
            double e1 = 0, e2 = 0;
            for (int64_t i = 0; i < yn; i++) {
                double d1 = fabs((double)kgot[i] - kref[i]) / (1.0 + fabs((double)kref[i]));
                double d2 = fabs((double)kref[i] - ref[i]) / (1.0 + fabs((double)ref[i]));
                if (d1 > e1) e1 = d1;
                if (d2 > e2) e2 = d2;
            }
            CHECK(e1 < 1e-4);
            CHECK(e2 < 1e-4);
            printf("  %s g%lld kernel check: folded vs conv+bn max rel err %.2e\n",
                   transposed ? "convT" : "conv", (long long)grp, e1);
        }
    }
    free(scratch);
    free(mid);
    pf_ir_graph_destroy(&orig);
    free(w);
    free(xd);
    free(ref);
    free(got);
    free(kref);
    free(kgot);
}

static void test_bn_fold(void)
{
    bn_case(false, 1, true);
    bn_case(false, 2, false);
    bn_case(true, 1, true);
    bn_case(true, 2, false);

    /* Not folded: the conv output has a second user. */
    fresh();
    int x = input(PF_IR_F32, 4, D(1, 2, 4, 4));
    float wz[2 * 2] = {1, 2, 3, 4}, p1[2] = {1, 1};
    pf_ir_attr a = conv_attr(1, 1, 1, PF_IR_PAD_EXPLICIT);
    int nc = node(PF_IR_CONV, &a, 2, (int[]){x, cst(PF_IR_F32, 4, D(2, 2, 1, 1), wz)}, 1);
    pf_ir_attr ab;
    memset(&ab, 0, sizeof ab);
    int c1 = cst(PF_IR_F32, 1, D(2), p1);
    int nb = node(PF_IR_BATCHNORM, &ab, 5, (int[]){out0(nc), c1, c1, c1, c1}, 1);
    CHECK_OK(pf_ir_mark_output(G, out0(nb)));
    CHECK_OK(pf_ir_mark_output(G, out0(nc)));
    CHECK_OK(infer_all());
    int folded = -1;
    CHECK_OK(pf_ir_fold_batchnorm(G, &folded));
    CHECK_EQ_INT(folded, 0);
}

/* ---- fusion and dead nodes ------------------------------------------------------ */

static void test_fuse_activations(void)
{
    fresh();
    int x = input(PF_IR_F32, 4, D(1, 2, 4, 4));
    float wz[4] = {1, 2, 3, 4};
    pf_ir_attr a = conv_attr(1, 1, 1, PF_IR_PAD_EXPLICIT);
    int w = cst(PF_IR_F32, 4, D(2, 2, 1, 1), wz);
    int c1 = node(PF_IR_CONV, &a, 2, (int[]){x, w}, 1);
    int r1 = node(PF_IR_RELU, NULL, 1, (int[]){out0(c1)}, 1);
    /* conv2's output also feeds an Add: no fusion. */
    int c2 = node(PF_IR_CONV, &a, 2, (int[]){out0(r1), w}, 1);
    int r2 = node(PF_IR_SIGMOID, NULL, 1, (int[]){out0(c2)}, 1);
    int ad = node(PF_IR_ADD, NULL, 2, (int[]){out0(c2), out0(r2)}, 1);
    pf_ir_attr cl;
    memset(&cl, 0, sizeof cl);
    cl.unary.alpha = 0.0f;
    cl.unary.beta = 6.0f;
    int r3 = node(PF_IR_CLIP, &cl, 1, (int[]){out0(ad)}, 1);
    /* MaxPool does not take a fused act. */
    pf_ir_attr pa;
    memset(&pa, 0, sizeof pa);
    pa.pool.kernel[0] = pa.pool.kernel[1] = 1;
    int mp = node(PF_IR_MAXPOOL, &pa, 1, (int[]){out0(r3)}, 1);
    int r4 = node(PF_IR_RELU, NULL, 1, (int[]){out0(mp)}, 1);
    /* A graph output feeding an activation stays unfused. */
    int c3 = node(PF_IR_CONV, &a, 2, (int[]){out0(r4), w}, 1);
    int r5 = node(PF_IR_TANH, NULL, 1, (int[]){out0(c3)}, 1);
    CHECK_OK(pf_ir_mark_output(G, out0(c3)));
    CHECK_OK(pf_ir_mark_output(G, out0(r5)));
    CHECK_OK(infer_all());
    int fused = -1;
    CHECK_OK(pf_ir_fuse_activations(G, &fused));
    CHECK_EQ_INT(fused, 2);
    CHECK_EQ_INT(G->nodes[c1].act, PF_IR_ACT_RELU);
    CHECK(G->nodes[r1].dead);
    CHECK_EQ_INT(G->nodes[c2].act, PF_IR_ACT_NONE);
    CHECK_EQ_INT(G->nodes[ad].act, PF_IR_ACT_CLIP);
    CHECK(G->nodes[ad].act_a == 0.0f && G->nodes[ad].act_b == 6.0f);
    CHECK(!G->nodes[r4].dead);
    CHECK(!G->nodes[r5].dead);
    CHECK_OK(pf_ir_compact(G));
    CHECK_OK(pf_ir_validate(G));
    CHECK_EQ_INT(G->n_nodes, 8);
}

static void test_remove_dead(void)
{
    fresh();
    int x = input(PF_IR_F32, 2, D(2, 3));
    int n1 = node(PF_IR_IDENTITY, NULL, 1, &x, 1);
    int n2 = node(PF_IR_RELU, NULL, 1, (int[]){out0(n1)}, 1);
    int d1 = node(PF_IR_EXP, NULL, 1, (int[]){out0(n2)}, 1); /* dead branch of two nodes */
    node(PF_IR_LOG, NULL, 1, (int[]){out0(d1)}, 1);
    int n3 = node(PF_IR_SIGMOID, NULL, 1, (int[]){out0(n2)}, 1);
    int n4 = node(PF_IR_IDENTITY, NULL, 1, (int[]){out0(n3)}, 1); /* into a graph output */
    const char *outname = V(out0(n4))->name;
    char keep[64];
    snprintf(keep, sizeof keep, "%s", outname);
    CHECK_OK(pf_ir_mark_output(G, out0(n4)));
    CHECK_OK(infer_all());
    int removed = -1;
    CHECK_OK(pf_ir_remove_dead(G, &removed));
    CHECK_EQ_INT(removed, 4);
    CHECK_EQ_INT(G->n_nodes, 2);
    CHECK_OK(pf_ir_validate(G));
    CHECK_EQ_INT(G->nodes[0].op, PF_IR_RELU);
    CHECK_EQ_INT(G->nodes[0].in[0], G->inputs[0]);
    CHECK_EQ_INT(G->nodes[1].op, PF_IR_SIGMOID);
    CHECK(strcmp(G->values[G->outputs[0]].name, keep) == 0);
    CHECK_EQ_INT(G->nodes[1].out[0], G->outputs[0]);

    /* optimize: all passes together keep the graph valid. */
    fresh();
    x = input(PF_IR_F32, 4, D(1, 2, 4, 4));
    float wz[4] = {1, 2, 3, 4}, p1[2] = {1, 2};
    pf_ir_attr a = conv_attr(1, 1, 1, PF_IR_PAD_EXPLICIT);
    int nc = node(PF_IR_CONV, &a, 2, (int[]){x, cst(PF_IR_F32, 4, D(2, 2, 1, 1), wz)}, 1);
    pf_ir_attr ab;
    memset(&ab, 0, sizeof ab);
    ab.bn.epsilon = 1e-5f;
    int c1 = cst(PF_IR_F32, 1, D(2), p1);
    int nb = node(PF_IR_BATCHNORM, &ab, 5, (int[]){out0(nc), c1, c1, c1, c1}, 1);
    int ni = node(PF_IR_IDENTITY, NULL, 1, (int[]){out0(nb)}, 1);
    int nr = node(PF_IR_RELU, NULL, 1, (int[]){out0(ni)}, 1);
    CHECK_OK(pf_ir_mark_output(G, out0(nr)));
    CHECK_OK(infer_all());
    pf_ir_opt_report rep;
    CHECK_OK(pf_ir_optimize(G, &rep));
    CHECK_EQ_INT(rep.bn_folded, 1);
    CHECK_EQ_INT(rep.act_fused, 1);
    CHECK(rep.removed >= 1);
    CHECK_EQ_INT(G->n_nodes, 1);
    CHECK_EQ_INT(G->nodes[0].act, PF_IR_ACT_RELU);
    CHECK_EQ_INT(G->nodes[0].out[0], G->outputs[0]);
}

/* ---- memory planning -------------------------------------------------------------- */

static void plan_random(int trial)
{
    fresh();
    int nn = (int)pf_test_rand_range(1, 60);
    int *vals = malloc(sizeof(int) * (size_t)(nn + 2));
    int nv = 0;
    int x = input(PF_IR_F32, 1, D(pf_test_rand_range(1, 100)));
    vals[nv++] = x;
    for (int k = 0; k < nn; k++) {
        int nin = (int)pf_test_rand_range(1, 3);
        int in[3];
        for (int i = 0; i < nin; i++) in[i] = vals[pf_test_rand_range(0, nv - 1)];
        int id = node(PF_IR_SUM, NULL, nin, in, 1);
        pf_ir_value *o = &G->values[out0(id)];
        o->ndim = 1;
        o->dims[0] = pf_test_rand_range(0, 5000);
        o->dtype = pf_test_rand_range(0, 3) ? PF_IR_F32 : PF_IR_U8;
        vals[nv++] = out0(id);
    }
    CHECK_OK(pf_ir_mark_output(G, vals[nv - 1]));
    if (pf_test_rand_range(0, 1)) CHECK_OK(pf_ir_mark_output(G, vals[nv / 2]));
    size_t align = pf_test_rand_range(0, 1) ? 64 : 256;
    /* Half the trials make some values live from an earlier node on (as a
     * residual sum computed inside the conv before its Add). */
    int *born = malloc(sizeof(int) * (size_t)G->n_values);
    const bool use_born = trial % 2;
    for (int v = 0; v < G->n_values; v++) born[v] = -1;
    for (int k = 0; use_born && k < G->n_nodes; k++)
        if (pf_test_rand_range(0, 3) == 0) born[G->nodes[k].out[0]] = (int)pf_test_rand_range(0, k);
    pf_ir_mem_plan p;
    CHECK_OK(use_born ? pf_ir_plan_memory_born(G, align, NULL, born, &p)
                      : pf_ir_plan_memory(G, align, NULL, &p));
    REQUIRE(p.offsets && p.n_values == G->n_values);
    /* Independent lifetimes. */
    int *first = malloc(sizeof(int) * (size_t)G->n_values), *last = malloc(sizeof(int) * (size_t)G->n_values);
    for (int v = 0; v < G->n_values; v++) first[v] = last[v] = -1;
    for (int k = 0; k < G->n_nodes; k++) {
        for (int i = 0; i < G->nodes[k].n_in; i++) last[G->nodes[k].in[i]] = k;
        const int o = G->nodes[k].out[0];
        first[o] = born[o] >= 0 && born[o] < k ? born[o] : k;
    }
    free(born);
    size_t maxsz = 0;
    int bad = 0;
    for (int v = 0; v < G->n_values; v++) {
        const pf_ir_value *val = V(v);
        bool arena = first[v] >= 0 && !val->is_output && !val->is_input && !val->data;
        if (!arena) {
            bad += p.offsets[v] != -1;
            continue;
        }
        size_t sz = pf_ir_value_nbytes(val);
        if (sz > maxsz) maxsz = sz;
        bad += p.offsets[v] < 0 || p.offsets[v] % (int64_t)align != 0 ||
               (size_t)p.offsets[v] + sz > p.arena_bytes;
        if (last[v] < first[v]) last[v] = first[v];
        for (int u = 0; u < v; u++) {
            if (p.offsets[u] < 0 || first[u] < 0) continue;
            size_t su = pf_ir_value_nbytes(V(u));
            bool live = first[u] <= last[v] && first[v] <= (last[u] < first[u] ? first[u] : last[u]);
            bool overl = sz && su && p.offsets[u] < p.offsets[v] + (int64_t)sz &&
                         p.offsets[v] < p.offsets[u] + (int64_t)su;
            if (live && overl) {
                bad++;
                fprintf(stderr, "  trial %d: '%s' and '%s' overlap\n", trial, V(u)->name, val->name);
            }
        }
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(p.arena_bytes <= p.naive_bytes);
    CHECK(p.arena_bytes >= maxsz);
    pf_ir_mem_plan_free(&p);
    CHECK(p.offsets == NULL);
    free(first);
    free(last);
    free(vals);
}

static void test_plan_memory(void)
{
    for (int t = 0; t < 300; t++) plan_random(t);
    /* A chain reuses: peak is two buffers, not ten. */
    fresh();
    int x = input(PF_IR_F32, 1, D(1000));
    int prev = x;
    for (int k = 0; k < 10; k++) prev = out0(node(PF_IR_RELU, NULL, 1, &prev, 1));
    CHECK_OK(pf_ir_mark_output(G, prev));
    CHECK_OK(infer_all());
    pf_ir_mem_plan p;
    CHECK_OK(pf_ir_plan_memory(G, 64, NULL, &p));
    CHECK_EQ_INT(p.naive_bytes, 9 * 4032);
    CHECK_EQ_INT(p.arena_bytes, 2 * 4032);
    pf_ir_mem_plan_free(&p);
    size_t es[PF_IR_DTYPE_COUNT] = {2, 2, 8, 4, 1, 1, 1, 8};
    CHECK_OK(pf_ir_plan_memory(G, 64, es, &p));
    CHECK_EQ_INT(p.arena_bytes, 2 * 2048);
    pf_ir_mem_plan_free(&p);
    CHECK(pf_ir_plan_memory(G, 32, NULL, &p) == PF_ERR_INVALID);
    /* born: a -> b -> c = Add(b, x): c may take a's memory (a dies at b's
     * node); born at b's node it must not (the conv computing b + x
     * would overwrite its own input). A dead node before shifts positions. */
    fresh();
    x = input(PF_IR_F32, 1, D(1000));
    int dead = node(PF_IR_RELU, NULL, 1, &x, 1);
    int a = out0(node(PF_IR_RELU, NULL, 1, &x, 1));
    int nb = node(PF_IR_RELU, NULL, 1, &a, 1), b = out0(nb);
    int xin[2] = {b, x};
    int c = out0(node(PF_IR_ADD, NULL, 2, xin, 1));
    int d = out0(node(PF_IR_RELU, NULL, 1, &c, 1));
    CHECK_OK(pf_ir_mark_output(G, d));
    CHECK_OK(infer_all());
    G->nodes[dead].dead = true;
    CHECK_OK(pf_ir_plan_memory(G, 64, NULL, &p));
    CHECK_EQ_INT(p.offsets[c], p.offsets[a]);
    pf_ir_mem_plan_free(&p);
    int *bn = malloc(sizeof(int) * (size_t)G->n_values);
    for (int v = 0; v < G->n_values; v++) bn[v] = -1;
    bn[c] = nb;
    CHECK_OK(pf_ir_plan_memory_born(G, 64, NULL, bn, &p));
    CHECK(p.offsets[c] != p.offsets[a] && p.offsets[c] != p.offsets[b]);
    pf_ir_mem_plan_free(&p);
    free(bn);
    /* Unknown shapes are refused. */
    G->values[G->nodes[3].out[0]].ndim = -1;
    CHECK(pf_ir_plan_memory(G, 64, NULL, &p) == PF_ERR_INVALID);
}

static void test_flops(void)
{
    fresh();
    int x = input(PF_IR_F32, 4, D(1, 4, 8, 8));
    int w = input(PF_IR_F32, 4, D(6, 2, 3, 3));
    pf_ir_attr a = conv_attr(3, 1, 1, PF_IR_PAD_SAME_UPPER);
    a.conv.group = 2;
    int nc = node(PF_IR_CONV, &a, 2, (int[]){x, w}, 1);
    int m1 = input(PF_IR_F32, 3, D(2, 5, 7));
    int m2 = input(PF_IR_F32, 2, D(7, 3));
    int nm = node(PF_IR_MATMUL, NULL, 2, (int[]){m1, m2}, 1);
    int nr = node(PF_IR_RELU, NULL, 1, (int[]){out0(nc)}, 1);
    CHECK_OK(infer_all());
    CHECK(pf_ir_node_flops(G, nc) == 2.0 * 6 * 64 * 2 * 9);
    CHECK(pf_ir_node_flops(G, nm) == 2.0 * 2 * 5 * 3 * 7);
    CHECK(pf_ir_node_flops(G, nr) == 6.0 * 64);
}

int main(void)
{
    pf_test_seed(20240611);
    PF_RUN(test_names_and_sizes);
    PF_RUN(test_build_validate_clone);
    PF_RUN(test_conv_shapes);
    PF_RUN(test_pool_shapes);
    PF_RUN(test_broadcast);
    PF_RUN(test_reshape_family);
    PF_RUN(test_slice);
    PF_RUN(test_movement_shapes);
    PF_RUN(test_movement_errors);
    PF_RUN(test_resize_reduce_linalg);
    PF_RUN(test_fold_moves_inputs);
    PF_RUN(test_fold_clip_int_bounds);
    PF_RUN(test_fold_constant_nodes);
    PF_RUN(test_specialize_shape_chain);
    PF_RUN(test_bn_fold);
    PF_RUN(test_fuse_activations);
    PF_RUN(test_remove_dead);
    PF_RUN(test_plan_memory);
    PF_RUN(test_flops);
    pf_ir_graph_destroy(&G);
    return pf_test_finish();
}
