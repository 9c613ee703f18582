/* The TFLite reader (src/nn/tflite_reader.c) on MediaPipe's models, on small
 * models built here field by field, and on damaged files.
 *
 * The models come from npm (scripts/setup.sh installs them under
 * $PF_SOURCE_DIR/node_modules/@mediapipe); a missing model is a failure, not
 * a skip. The figures asserted for them (shapes, op histograms, DEQUANTIZE
 * inputs, options) were read from the files with this reader and agree with
 * MediaPipe's model cards; the test prints them before checking.
 *
 * The hand-built models are laid out front to back by a tiny FlatBuffer
 * writer below (parents first, children after, offsets patched), with knobs
 * that break one field at a time, so each check of the reader is reached and
 * its message (file, path, value) is checked.
 *
 * Every model that opens is walked completely (names, shapes, index lists,
 * constant data, options), so under ASan a pointer handed out past the file
 * would be caught even when the reader reports success. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nn/tflite_reader.h"
#include "pf_test.h"

#define MP "node_modules/@mediapipe/"

/* --- helpers ---------------------------------------------------------------------- */

static char *model_path(const char *rel)
{
    const char *root = getenv("PF_SOURCE_DIR");
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", root ? root : ".", rel);
    return buf;
}

static uint8_t *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return b;
}

/* Opens a model from the npm package; NULL (with a failed CHECK saying what
 * to run) when it is missing. */
static pf_tflite *open_model(const char *rel)
{
    const char *path = model_path(rel);
    pf_tflite *m = NULL;
    pf_status st = pf_tflite_open(path, &m);
    if (st != PF_OK)
        fprintf(stderr, "  cannot open %s: %s (%s)\n  (models come from npm: run scripts/setup.sh, "
                        "which installs them under node_modules/@mediapipe%s)\n",
                path, pf_status_str(st), pf_last_error(),
                getenv("PF_SOURCE_DIR") ? "" : "; PF_SOURCE_DIR, set by ctest, is not set");
    CHECK(st == PF_OK);
    return m;
}

/* Reads every byte the view points at; returns a checksum so nothing is
 * optimised away. */
static uint64_t walk_model(const pf_tflite *m)
{
    uint64_t h = m->version + strlen(m->description);
    for (int32_t i = 0; i < m->n_opcodes; i++)
        h += (uint64_t)m->opcodes[i].builtin +
             (m->opcodes[i].custom_code ? strlen(m->opcodes[i].custom_code) : 0);
    for (int32_t i = 0; i < m->n_buffers; i++)
        for (size_t k = 0; k < m->buffers[i].size; k++) h += m->buffers[i].data[k];
    for (int32_t s = 0; s < m->n_subgraphs; s++) {
        const pf_tfl_subgraph *g = &m->subgraphs[s];
        h += strlen(g->name);
        for (int32_t i = 0; i < g->n_inputs; i++) h += (uint64_t)g->tensors[g->inputs[i]].ndim;
        for (int32_t i = 0; i < g->n_outputs; i++) h += (uint64_t)g->tensors[g->outputs[i]].ndim;
        for (int32_t i = 0; i < g->n_tensors; i++) {
            const pf_tfl_tensor *t = &g->tensors[i];
            h += strlen(t->name) + t->type;
            for (int32_t d = 0; d < t->ndim; d++) h += (uint64_t)t->shape[d];
            if (t->shape_signature)
                for (int32_t d = 0; d < t->ndim; d++) h += (uint64_t)t->shape_signature[d];
            for (size_t k = 0; k < t->data_size; k++) h += t->data[k];
            for (int32_t k = 0; k < t->n_quant; k++) {
                uint32_t bits; /* a float cast could overflow: add its bits */
                memcpy(&bits, &t->quant_scale[k], sizeof bits);
                h += bits;
            }
            for (int32_t k = 0; k < t->n_quant_zero_point; k++)
                h += (uint64_t)t->quant_zero_point[k];
        }
        for (int32_t i = 0; i < g->n_operators; i++) {
            const pf_tfl_operator *op = &g->operators[i];
            for (int32_t k = 0; k < op->n_inputs; k++)
                if (op->inputs[k] >= 0) h += (uint64_t)g->tensors[op->inputs[k]].ndim;
            for (int32_t k = 0; k < op->n_outputs; k++)
                if (op->outputs[k] >= 0) h += (uint64_t)g->tensors[op->outputs[k]].ndim;
            for (int32_t k = 0; k < op->n_intermediates; k++) h += (uint64_t)op->intermediates[k];
            for (size_t k = 0; k < op->custom_options_size; k++) h += op->custom_options[k];
            if (op->opts.kind == PF_TFL_OPTS_RESHAPE)
                for (int32_t k = 0; k < op->opts.u.reshape.n_new_shape; k++)
                    h += (uint64_t)op->opts.u.reshape.new_shape[k];
        }
    }
    return h;
}

static bool shape_is(const pf_tfl_tensor *t, int32_t n, const int32_t *dims)
{
    if (t->ndim != n) return false;
    for (int32_t i = 0; i < n; i++)
        if (t->shape[i] != dims[i]) return false;
    return true;
}

static void print_shape(const pf_tfl_tensor *t)
{
    printf("%s %s [", t->name, pf_tfl_type_name(t->type));
    for (int32_t i = 0; i < t->ndim; i++) printf("%s%d", i ? "x" : "", t->shape[i]);
    printf("]");
}

/* Op histogram: counts per builtin code, custom ops by name. */
typedef struct histo {
    int builtin[256];
    int transpose_bias, other_custom, kinds;
} histo;

static histo op_histogram(const pf_tflite *m, const char *label)
{
    histo h;
    memset(&h, 0, sizeof h);
    const pf_tfl_subgraph *g = &m->subgraphs[0];
    for (int32_t i = 0; i < g->n_operators; i++) {
        const pf_tfl_operator *op = &g->operators[i];
        if (op->builtin == PF_TFL_OP_CUSTOM) {
            if (!strcmp(op->custom_code, PF_TFL_CUSTOM_CONV2D_TRANSPOSE_BIAS))
                h.transpose_bias++;
            else
                h.other_custom++;
        } else if (op->builtin < 256) {
            h.builtin[op->builtin]++;
        }
    }
    printf("  %s: %d operators, %d tensors\n", label, g->n_operators, g->n_tensors);
    for (int c = 0; c < 256; c++)
        if (h.builtin[c]) {
            printf("    %-24s %4d\n", pf_tfl_builtin_name(c), h.builtin[c]);
            h.kinds++;
        }
    if (h.transpose_bias) {
        printf("    %-24s %4d\n", "custom " PF_TFL_CUSTOM_CONV2D_TRANSPOSE_BIAS, h.transpose_bias);
        h.kinds++;
    }
    if (h.other_custom) printf("    %-24s %4d\n", "other custom", h.other_custom);
    return h;
}

/* Every DEQUANTIZE turns a constant FLOAT16 tensor into a FLOAT32 tensor of
 * the same shape that no other op writes: the fp16 weights of SPEC. Returns
 * how many DEQUANTIZE ops were checked. */
static int check_fp16_dequantize(const pf_tflite *m)
{
    const pf_tfl_subgraph *g = &m->subgraphs[0];
    int n = 0;
    for (int32_t i = 0; i < g->n_operators; i++) {
        const pf_tfl_operator *op = &g->operators[i];
        if (op->builtin != PF_TFL_OP_DEQUANTIZE) continue;
        n++;
        CHECK_EQ_INT(op->n_inputs, 1);
        CHECK_EQ_INT(op->n_outputs, 1);
        if (op->n_inputs != 1 || op->n_outputs != 1) continue;
        const pf_tfl_tensor *in = &g->tensors[op->inputs[0]];
        const pf_tfl_tensor *out = &g->tensors[op->outputs[0]];
        CHECK_EQ_INT(in->type, PF_TFL_FLOAT16);
        CHECK(in->data != NULL);
        CHECK_EQ_INT(in->data_size, pf_tfl_tensor_numel(in) * 2);
        CHECK(!in->has_quantization);
        CHECK_EQ_INT(out->type, PF_TFL_FLOAT32);
        CHECK(out->data == NULL);
        CHECK(shape_is(out, in->ndim, in->shape));
        if (n <= 3) {
            printf("    DEQUANTIZE op %d: ", i);
            print_shape(in);
            printf(" (%zu bytes, first fp16 0x%04x) -> ", in->data_size,
                   in->data_size >= 2 ? (unsigned)(in->data[0] | in->data[1] << 8) : 0u);
            print_shape(out);
            printf("\n");
        }
    }
    return n;
}

/* Every CONV_2D / DEPTHWISE_CONV_2D / transpose-bias weight comes from a
 * DEQUANTIZE output (fp16 weights), and its bias too. */
static void check_weights_dequantized(const pf_tflite *m)
{
    const pf_tfl_subgraph *g = &m->subgraphs[0];
    int32_t *producer = malloc(sizeof *producer * (size_t)(g->n_tensors ? g->n_tensors : 1));
    REQUIRE(producer);
    for (int32_t i = 0; i < g->n_tensors; i++) producer[i] = -1;
    for (int32_t i = 0; i < g->n_operators; i++)
        for (int32_t k = 0; k < g->operators[i].n_outputs; k++)
            if (g->operators[i].outputs[k] >= 0) producer[g->operators[i].outputs[k]] = i;
    int convs = 0;
    for (int32_t i = 0; i < g->n_operators; i++) {
        const pf_tfl_operator *op = &g->operators[i];
        bool conv = op->builtin == PF_TFL_OP_CONV_2D ||
                    op->builtin == PF_TFL_OP_DEPTHWISE_CONV_2D ||
                    op->opts.kind == PF_TFL_OPTS_CONV2D_TRANSPOSE_BIAS;
        if (!conv) continue;
        convs++;
        CHECK_EQ_INT(op->n_inputs, 3);
        for (int32_t k = 1; k < op->n_inputs && k < 3; k++) {
            int32_t p = producer[op->inputs[k]];
            CHECK(p >= 0 && g->operators[p].builtin == PF_TFL_OP_DEQUANTIZE);
        }
    }
    CHECK(convs > 0);
    free(producer);
}

/* --- the MediaPipe models ------------------------------------------------------ */

static void test_selfie_segmentation(void)
{
    pf_tflite *m = open_model(MP "selfie_segmentation/selfie_segmentation.tflite");
    REQUIRE(m);
    printf("  description '%s', %zu bytes, %d buffers, %d opcodes\n", m->description, m->size,
           m->n_buffers, m->n_opcodes);
    CHECK_EQ_INT(m->version, 3);
    CHECK_EQ_INT(m->n_subgraphs, 1);
    CHECK_EQ_INT(m->extent, m->size);
    const pf_tfl_subgraph *g = &m->subgraphs[0];
    REQUIRE(g->n_inputs == 1 && g->n_outputs == 1);
    const pf_tfl_tensor *in = &g->tensors[g->inputs[0]], *out = &g->tensors[g->outputs[0]];
    printf("  input ");
    print_shape(in);
    printf(", output ");
    print_shape(out);
    printf("\n");
    CHECK(shape_is(in, 4, (const int32_t[]){1, 256, 256, 3}));
    CHECK(shape_is(out, 4, (const int32_t[]){1, 256, 256, 1}));
    CHECK_EQ_INT(in->type, PF_TFL_FLOAT32);
    CHECK_EQ_INT(out->type, PF_TFL_FLOAT32);
    CHECK(in->data == NULL && out->data == NULL);

    histo h = op_histogram(m, "selfie_segmentation");
    CHECK_EQ_INT(g->n_operators, 246);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_CONV_2D], 43);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_DEPTHWISE_CONV_2D], 11);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_DEQUANTIZE], 110);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_ADD], 14);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_MUL], 10);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_RELU], 22);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_HARD_SWISH], 11);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_LOGISTIC], 11);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_AVERAGE_POOL_2D], 10);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_RESIZE_BILINEAR], 3);
    CHECK_EQ_INT(h.transpose_bias, 1);
    CHECK_EQ_INT(h.other_custom, 0);
    CHECK_EQ_INT(h.kinds, 11);

    CHECK_EQ_INT(check_fp16_dequantize(m), 110);
    check_weights_dequantized(m);

    /* Options as the graph builder will read them. */
    int resize = 0, tbias = 0, pools = 0;
    for (int32_t i = 0; i < g->n_operators; i++) {
        const pf_tfl_operator *op = &g->operators[i];
        if (op->builtin == PF_TFL_OP_RESIZE_BILINEAR) {
            CHECK_EQ_INT(op->opts.kind, PF_TFL_OPTS_RESIZE);
            if (!resize++)
                printf("    RESIZE_BILINEAR: align_corners %d half_pixel_centers %d\n",
                       op->opts.u.resize.align_corners, op->opts.u.resize.half_pixel_centers);
            CHECK(!op->opts.u.resize.align_corners);
            CHECK(op->opts.u.resize.half_pixel_centers);
            CHECK_EQ_INT(op->n_inputs, 2);
        }
        if (op->builtin == PF_TFL_OP_CUSTOM) {
            CHECK_EQ_INT(op->opts.kind, PF_TFL_OPTS_CONV2D_TRANSPOSE_BIAS);
            CHECK_EQ_INT(op->custom_options_size, 12);
            const pf_tfl_conv2d_transpose_bias_opts *o = &op->opts.u.conv2d_transpose_bias;
            printf("    %s: padding %s stride %dx%d, weights ", op->custom_code,
                   o->padding == PF_TFL_PADDING_SAME ? "SAME" : "VALID", o->stride_w, o->stride_h);
            print_shape(&g->tensors[op->inputs[1]]);
            printf(" -> ");
            print_shape(&g->tensors[op->outputs[0]]);
            printf("\n");
            CHECK_EQ_INT(o->padding, PF_TFL_PADDING_SAME);
            CHECK_EQ_INT(o->stride_w, 2);
            CHECK_EQ_INT(o->stride_h, 2);
            /* It makes the 256x256 logits that the final LOGISTIC reads. */
            CHECK(shape_is(&g->tensors[op->outputs[0]], 4, (const int32_t[]){1, 256, 256, 1}));
            tbias++;
        }
        if (op->builtin == PF_TFL_OP_AVERAGE_POOL_2D) {
            CHECK_EQ_INT(op->opts.kind, PF_TFL_OPTS_POOL2D);
            CHECK(op->opts.u.pool2d.stride_w >= 1 && op->opts.u.pool2d.filter_w >= 1);
            pools++;
        }
        if (op->builtin == PF_TFL_OP_CONV_2D) {
            CHECK_EQ_INT(op->opts.kind, PF_TFL_OPTS_CONV2D);
            CHECK(op->opts.u.conv2d.dilation_w == 1 && op->opts.u.conv2d.dilation_h == 1);
        }
    }
    CHECK_EQ_INT(resize, 3);
    CHECK_EQ_INT(tbias, 1);
    CHECK_EQ_INT(pools, 10);
    /* The last op makes the output: LOGISTIC (the sigmoid mask). */
    const pf_tfl_operator *last = &g->operators[g->n_operators - 1];
    CHECK_EQ_INT(last->builtin, PF_TFL_OP_LOGISTIC);
    CHECK_EQ_INT(last->outputs[0], g->outputs[0]);
    /* The first conv: 16 filters of 3x3x3, stride 2 (256 -> 128). */
    const pf_tfl_tensor *k0 = &g->tensors[1];
    CHECK(!strcmp(k0->name, "conv2d/Kernel"));
    CHECK(shape_is(k0, 4, (const int32_t[]){16, 3, 3, 3}));
    CHECK_EQ_INT(k0->type, PF_TFL_FLOAT16);
    CHECK_EQ_INT(k0->data_size, 864);
    walk_model(m);
    pf_tflite_close(&m);
    CHECK(m == NULL);
}

static void test_selfie_segmentation_landscape(void)
{
    pf_tflite *m = open_model(MP "selfie_segmentation/selfie_segmentation_landscape.tflite");
    REQUIRE(m);
    CHECK_EQ_INT(m->version, 3);
    CHECK_EQ_INT(m->n_subgraphs, 1);
    CHECK_EQ_INT(m->extent, m->size);
    const pf_tfl_subgraph *g = &m->subgraphs[0];
    REQUIRE(g->n_inputs == 1 && g->n_outputs == 1);
    const pf_tfl_tensor *in = &g->tensors[g->inputs[0]], *out = &g->tensors[g->outputs[0]];
    printf("  input ");
    print_shape(in);
    printf(", output ");
    print_shape(out);
    printf("\n");
    CHECK(shape_is(in, 4, (const int32_t[]){1, 144, 256, 3}));
    CHECK(shape_is(out, 4, (const int32_t[]){1, 144, 256, 1}));
    CHECK_EQ_INT(in->type, PF_TFL_FLOAT32);

    /* The same network as the square model, except that squeeze-excite
     * pooling is MEAN over H, W (keep_dims) instead of AVERAGE_POOL_2D. */
    histo h = op_histogram(m, "selfie_segmentation_landscape");
    CHECK_EQ_INT(g->n_operators, 246);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_CONV_2D], 43);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_DEPTHWISE_CONV_2D], 11);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_DEQUANTIZE], 110);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_ADD], 14);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_MUL], 10);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_RELU], 22);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_HARD_SWISH], 11);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_LOGISTIC], 11);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_MEAN], 10);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_AVERAGE_POOL_2D], 0);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_RESIZE_BILINEAR], 3);
    CHECK_EQ_INT(h.transpose_bias, 1);
    CHECK_EQ_INT(h.kinds, 11);
    CHECK_EQ_INT(check_fp16_dequantize(m), 110);
    check_weights_dequantized(m);
    int means = 0;
    for (int32_t i = 0; i < g->n_operators; i++) {
        const pf_tfl_operator *op = &g->operators[i];
        if (op->builtin != PF_TFL_OP_MEAN) continue;
        CHECK_EQ_INT(op->opts.kind, PF_TFL_OPTS_REDUCER);
        CHECK(op->opts.u.reducer.keep_dims);
        REQUIRE(op->n_inputs == 2);
        const pf_tfl_tensor *axes = &g->tensors[op->inputs[1]];
        CHECK_EQ_INT(axes->type, PF_TFL_INT32);
        REQUIRE(axes->data && axes->data_size == 8);
        int32_t ax[2];
        memcpy(ax, axes->data, sizeof ax);
        if (!means++) printf("    MEAN axes [%d,%d] keep_dims %d\n", ax[0], ax[1],
                             op->opts.u.reducer.keep_dims);
        CHECK(ax[0] == 1 && ax[1] == 2);
    }
    CHECK_EQ_INT(means, 10);
    walk_model(m);
    pf_tflite_close(&m);
}

static void test_face_detection_short_range(void)
{
    pf_tflite *m = open_model(MP "face_detection/face_detection_short_range.tflite");
    REQUIRE(m);
    CHECK_EQ_INT(m->version, 3);
    CHECK_EQ_INT(m->n_subgraphs, 1);
    CHECK_EQ_INT(m->extent, m->size);
    const pf_tfl_subgraph *g = &m->subgraphs[0];
    REQUIRE(g->n_inputs == 1 && g->n_outputs == 2);
    const pf_tfl_tensor *in = &g->tensors[g->inputs[0]];
    const pf_tfl_tensor *o0 = &g->tensors[g->outputs[0]], *o1 = &g->tensors[g->outputs[1]];
    printf("  input ");
    print_shape(in);
    printf(", outputs ");
    print_shape(o0);
    printf(", ");
    print_shape(o1);
    printf("\n");
    CHECK(shape_is(in, 4, (const int32_t[]){1, 128, 128, 3}));
    CHECK(shape_is(o0, 3, (const int32_t[]){1, 896, 16}));
    CHECK(shape_is(o1, 3, (const int32_t[]){1, 896, 1}));
    CHECK_EQ_INT(o0->type, PF_TFL_FLOAT32);
    CHECK_EQ_INT(o1->type, PF_TFL_FLOAT32);

    histo h = op_histogram(m, "face_detection_short_range");
    CHECK_EQ_INT(g->n_operators, 164);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_CONV_2D], 21);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_DEPTHWISE_CONV_2D], 16);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_DEQUANTIZE], 74);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_ADD], 16);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_RELU], 17);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_PAD], 11);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_MAX_POOL_2D], 3);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_RESHAPE], 4);
    CHECK_EQ_INT(h.builtin[PF_TFL_OP_CONCATENATION], 2);
    CHECK_EQ_INT(h.transpose_bias + h.other_custom, 0);
    CHECK_EQ_INT(h.kinds, 9);
    CHECK_EQ_INT(check_fp16_dequantize(m), 74);
    check_weights_dequantized(m);

    int pads = 0, pools = 0, reshapes = 0, concats = 0;
    for (int32_t i = 0; i < g->n_operators; i++) {
        const pf_tfl_operator *op = &g->operators[i];
        switch (op->builtin) {
        case PF_TFL_OP_PAD: {
            /* Channel padding: a constant INT32 [4,2] paddings input. */
            CHECK_EQ_INT(op->opts.kind, PF_TFL_OPTS_PAD);
            REQUIRE(op->n_inputs == 2);
            const pf_tfl_tensor *p = &g->tensors[op->inputs[1]];
            CHECK_EQ_INT(p->type, PF_TFL_INT32);
            CHECK(shape_is(p, 2, (const int32_t[]){4, 2}));
            CHECK_EQ_INT(p->data_size, 32);
            pads++;
            break;
        }
        case PF_TFL_OP_MAX_POOL_2D: {
            const pf_tfl_pool2d_opts *o = &op->opts.u.pool2d;
            CHECK_EQ_INT(op->opts.kind, PF_TFL_OPTS_POOL2D);
            if (!pools++)
                printf("    MAX_POOL_2D: %s filter %dx%d stride %dx%d\n",
                       o->padding == PF_TFL_PADDING_SAME ? "SAME" : "VALID", o->filter_w,
                       o->filter_h, o->stride_w, o->stride_h);
            CHECK(o->filter_w == 2 && o->filter_h == 2 && o->stride_w == 2 && o->stride_h == 2);
            break;
        }
        case PF_TFL_OP_RESHAPE: {
            const pf_tfl_reshape_opts *o = &op->opts.u.reshape;
            CHECK_EQ_INT(op->opts.kind, PF_TFL_OPTS_RESHAPE);
            CHECK_EQ_INT(op->n_inputs, 1); /* the shape comes from the options */
            REQUIRE(o->n_new_shape == 3);
            if (!reshapes++)
                printf("    RESHAPE new_shape [%d,%d,%d]\n", o->new_shape[0], o->new_shape[1],
                       o->new_shape[2]);
            /* [1, -1, k]: the output has the anchors in place of -1. */
            const pf_tfl_tensor *out = &g->tensors[op->outputs[0]];
            REQUIRE(out->ndim == 3);
            CHECK(o->new_shape[0] == 1 && o->new_shape[1] == -1);
            CHECK(o->new_shape[2] == out->shape[2]);
            CHECK(out->shape[2] == 16 || out->shape[2] == 1);
            CHECK(pf_tfl_tensor_numel(out) == pf_tfl_tensor_numel(&g->tensors[op->inputs[0]]));
            break;
        }
        case PF_TFL_OP_CONCATENATION:
            CHECK_EQ_INT(op->opts.kind, PF_TFL_OPTS_CONCATENATION);
            CHECK_EQ_INT(op->opts.u.concat.axis, 1);
            CHECK_EQ_INT(op->opts.u.concat.activation, PF_TFL_ACT_NONE);
            concats++;
            break;
        default: break;
        }
    }
    CHECK_EQ_INT(pads, 11);
    CHECK_EQ_INT(pools, 3);
    CHECK_EQ_INT(reshapes, 4);
    CHECK_EQ_INT(concats, 2);
    walk_model(m);
    pf_tflite_close(&m);
}

/* --- a tiny FlatBuffer writer for hand-built models ----------------------------- */

typedef struct fbw {
    uint8_t *b;
    size_t n, cap;
} fbw;

static void w_put(fbw *f, const void *p, size_t k)
{
    if (f->n + k > f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 1024;
        while (cap < f->n + k) cap *= 2;
        f->b = realloc(f->b, cap);
        if (!f->b) abort();
        f->cap = cap;
    }
    if (p)
        memcpy(f->b + f->n, p, k);
    else
        memset(f->b + f->n, 0, k);
    f->n += k;
}

static void w_pad(fbw *f, size_t align)
{
    while (f->n % align) w_put(f, NULL, 1);
}

static void w_u32_at(fbw *f, size_t at, uint32_t v) { memcpy(f->b + at, &v, 4); }

/* Makes the offset slot at `at` point to `target` (which lies after it). */
static void w_link(fbw *f, size_t at, size_t target) { w_u32_at(f, at, (uint32_t)(target - at)); }

typedef struct wfield {
    int id;
    int size;     /* 1, 4 or 8; an offset field is 4 bytes with v 0, linked later */
    uint64_t v;
} wfield;

/* Writes a vtable, then the table; pos[i] receives where field i lies. */
static size_t w_table(fbw *f, const wfield *fl, int n, size_t *pos)
{
    uint16_t offs[32] = {0};
    int maxid = -1;
    uint16_t ts = 4;
    for (int i = 0; i < n; i++) {
        if (fl[i].id > maxid) maxid = fl[i].id;
        offs[fl[i].id] = ts;
        ts = (uint16_t)(ts + fl[i].size);
    }
    w_pad(f, 4);
    size_t vt = f->n;
    uint16_t hdr[2] = {(uint16_t)(4 + 2 * (maxid + 1)), ts};
    w_put(f, hdr, 4);
    w_put(f, offs, 2 * (size_t)(maxid + 1));
    w_pad(f, 4);
    size_t t = f->n;
    int32_t so = (int32_t)(t - vt);
    w_put(f, &so, 4);
    for (int i = 0; i < n; i++) {
        if (pos) pos[i] = f->n;
        w_put(f, &fl[i].v, (size_t)fl[i].size);
    }
    return t;
}

/* A vector of n elements of es bytes; returns the position of its length. */
static size_t w_vec(fbw *f, const void *el, uint32_t n, size_t es)
{
    w_pad(f, 4);
    if (es == 8 && (f->n + 4) % 8) w_put(f, NULL, 4);
    size_t at = f->n;
    w_put(f, &n, 4);
    w_put(f, el, n * es);
    return at;
}

static size_t w_str(fbw *f, const char *s)
{
    size_t at = w_vec(f, s, (uint32_t)strlen(s), 1);
    w_put(f, NULL, 1);
    return at;
}

/* A vector of n offsets to fill with w_link(f, slot + 4 + 4 * i, child). */
static size_t w_slots(fbw *f, uint32_t n) { return w_vec(f, NULL, n, 4); }

/* What to break in the tiny model (defaults: a valid model). */
typedef struct knobs {
    uint32_t version;
    char ident[5];
    int32_t add_input1;        /* ADD's second input (tensor 1) */
    uint32_t bias_buffer;      /* buffer of tensor 1 */
    int8_t bias_type;
    uint32_t bias_bytes;       /* bytes in buffer 1 (tensor 1 is FLOAT32 [2]: 8) */
    int32_t sig0;              /* shape_signature[0] of tensor 0 */
    uint8_t conv_opt_type;
    bool conv_no_options;
    int32_t conv_stride_w;
    int8_t conv_padding;
    int8_t conv_act;
    uint32_t tbias_bytes;      /* custom options bytes (12) */
    int32_t tbias_padding;
    uint32_t first_opcode;     /* opcode_index of operator 0 */
    int32_t graph_output;      /* subgraph 0 output tensor */
    uint32_t subgraph_aliases; /* extra subgraph slots pointing at subgraph 0 */
    bool bias_external;        /* buffer 1 as offset/size after the FlatBuffer (> 2 GB style) */
    uint64_t bias_offset_add;  /* added to that offset */
} knobs;

static knobs knobs_default(void)
{
    knobs k = {.version = 3, .ident = "TFL3", .add_input1 = 1, .bias_buffer = 1,
               .bias_type = PF_TFL_FLOAT32, .bias_bytes = 8, .sig0 = -1, .conv_opt_type = 1,
               .conv_stride_w = 2, .conv_padding = 1, .conv_act = 0, .tbias_bytes = 12,
               .tbias_padding = 1, .first_opcode = 0, .graph_output = 9};
    return k;
}

/* Where some parts of a built model lie (for byte-level damage). */
typedef struct layout {
    size_t model, tensors_vec, t0_shape_field, t0_shape_vec, t0_name;
} layout;

/* Subgraph 0 ("main"):
 *   T0 input   FLOAT32 [1,4,4,2] sig [-1,4,4,2]
 *   T1 bias    FLOAT32 [2]        buffer 1 {0.5, -1}, quantization scale 0.5 zp 3
 *   T2 add     FLOAT32 [1,4,4,2]
 *   T3 w16     FLOAT16 [2,1,1,2]  buffer 2, empty quantization table
 *   T4 w32     FLOAT32 [2,1,1,2]
 *   T5 conv    FLOAT32 [1,2,2,2]
 *   T6 tconv   FLOAT32 [1,4,4,2]
 *   T7 size    INT32   [2]        buffer 3 {8, 8}
 *   T8 resize  FLOAT32 [1,8,8,2]
 *   T9 gelu    FLOAT32 [1,8,8,2]
 *   op0 ADD(T0, T1) -> T2, RELU          op1 DEQUANTIZE(T3) -> T4
 *   op2 CONV_2D(T2, T4, -1) -> T5, VALID stride 2x2
 *   op3 Convolution2DTransposeBias(T5, T4, T1) -> T6, SAME 2x2
 *   op4 RESIZE_BILINEAR(T6, T7) -> T8, half-pixel
 *   op5 GELU(T8) -> T9 (code 150: builtin_code with 127 in the old byte)
 * Subgraph 1 ("second"): one tensor, no operators. */
static uint8_t *build_tiny(const knobs *k, size_t *size, layout *lay)
{
    fbw f = {0};
    size_t p[16];
    w_put(&f, NULL, 4);
    w_put(&f, k->ident, 4);
    size_t model = w_table(&f,
                           (const wfield[]){{0, 4, k->version}, {1, 4, 0}, {2, 4, 0}, {3, 4, 0},
                                            {4, 4, 0}},
                           5, p);
    size_t m_codes = p[1], m_subs = p[2], m_desc = p[3], m_bufs = p[4];
    w_link(&f, 0, model);
    w_link(&f, m_desc, w_str(&f, "tiny test model"));

    /* operator codes */
    size_t codes = w_slots(&f, 6);
    w_link(&f, m_codes, codes);
    const struct {
        int8_t dep;
        int32_t code;
        bool has_code;
        const char *custom;
        int32_t version;
    } oc[6] = {{0, 0, true, NULL, 1},
               {32, 32, true, PF_TFL_CUSTOM_CONV2D_TRANSPOSE_BIAS, 1},
               {3, 3, true, NULL, 2},
               {6, 6, true, NULL, 1},
               {23, 0, false, NULL, 1},
               {127, 150, true, NULL, 1}};
    for (int i = 0; i < 6; i++) {
        wfield fl[4] = {{0, 1, (uint8_t)oc[i].dep}, {2, 4, (uint32_t)oc[i].version}};
        int n = 2;
        if (oc[i].has_code) fl[n++] = (wfield){3, 4, (uint32_t)oc[i].code};
        if (oc[i].custom) fl[n++] = (wfield){1, 4, 0};
        size_t t = w_table(&f, fl, n, p);
        w_link(&f, codes + 4 + 4 * (size_t)i, t);
        if (oc[i].custom) w_link(&f, p[n - 1], w_str(&f, oc[i].custom));
    }

    /* buffers */
    size_t bufs = w_slots(&f, 4);
    w_link(&f, m_bufs, bufs);
    w_link(&f, bufs + 4, w_table(&f, NULL, 0, NULL));
    uint8_t bias[64] = {0};
    float bv[2] = {0.5f, -1.0f};
    memcpy(bias, bv, sizeof bv);
    const uint16_t w16[4] = {0x3c00, 0x4000, 0xbc00, 0x3800};
    const int32_t sz[2] = {8, 8};
    const void *bdata[3] = {bias, w16, sz};
    uint32_t blen[3] = {k->bias_bytes, 8, 8};
    size_t ext_offset_field = 0;
    for (int i = 0; i < 3; i++) {
        if (i == 0 && k->bias_external) {
            size_t t = w_table(&f, (const wfield[]){{1, 8, 0}, {2, 8, blen[0]}}, 2, p);
            w_link(&f, bufs + 8, t);
            ext_offset_field = p[0];
            continue;
        }
        size_t t = w_table(&f, (const wfield[]){{0, 4, 0}}, 1, p);
        w_link(&f, bufs + 8 + 4 * (size_t)i, t);
        w_pad(&f, 16);
        w_link(&f, p[0], w_vec(&f, bdata[i], blen[i], 1));
    }

    /* subgraphs: 2 real ones, then aliases of the first */
    uint32_t nsub = 2 + k->subgraph_aliases;
    size_t subs = w_slots(&f, nsub);
    w_link(&f, m_subs, subs);
    size_t sg = w_table(&f, (const wfield[]){{0, 4, 0}, {1, 4, 0}, {2, 4, 0}, {3, 4, 0}, {4, 4, 0}},
                        5, p);
    for (uint32_t i = 0; i < nsub; i++)
        if (i != 1) w_link(&f, subs + 4 + 4 * (size_t)i, sg);
    size_t s_tensors = p[0], s_in = p[1], s_out = p[2], s_ops = p[3], s_name = p[4];
    w_link(&f, s_name, w_str(&f, "main"));
    w_link(&f, s_in, w_vec(&f, (const int32_t[]){0}, 1, 4));
    w_link(&f, s_out, w_vec(&f, &k->graph_output, 1, 4));

    static const struct {
        const char *name;
        int8_t type;
        int ndim;
        int32_t shape[4];
        uint32_t buffer;
    } tt[10] = {{"input", 0, 4, {1, 4, 4, 2}, 0}, {"bias", 0, 1, {2}, 1},
                {"add", 0, 4, {1, 4, 4, 2}, 0},   {"w16", 1, 4, {2, 1, 1, 2}, 2},
                {"w32", 0, 4, {2, 1, 1, 2}, 0},   {"conv", 0, 4, {1, 2, 2, 2}, 0},
                {"tconv", 0, 4, {1, 4, 4, 2}, 0}, {"size", 2, 1, {2}, 3},
                {"resize", 0, 4, {1, 8, 8, 2}, 0}, {"gelu", 0, 4, {1, 8, 8, 2}, 0}};
    size_t tensors = w_slots(&f, 10);
    w_link(&f, s_tensors, tensors);
    if (lay) lay->tensors_vec = tensors;
    for (int i = 0; i < 10; i++) {
        int8_t type = i == 1 ? k->bias_type : tt[i].type;
        uint32_t buffer = i == 1 ? k->bias_buffer : tt[i].buffer;
        wfield fl[6] = {{0, 4, 0}, {1, 1, (uint8_t)type}, {2, 4, buffer}, {3, 4, 0}};
        int n = 4;
        if (i == 0) fl[n++] = (wfield){7, 4, 0};     /* shape_signature */
        if (i == 1 || i == 3) fl[n++] = (wfield){4, 4, 0}; /* quantization */
        size_t t = w_table(&f, fl, n, p);
        w_link(&f, tensors + 4 + 4 * (size_t)i, t);
        size_t shape = w_vec(&f, tt[i].shape, (uint32_t)tt[i].ndim, 4);
        w_link(&f, p[0], shape);
        size_t name = w_str(&f, tt[i].name);
        w_link(&f, p[3], name);
        if (i == 0 && lay) {
            lay->t0_shape_field = p[0];
            lay->t0_shape_vec = shape;
            lay->t0_name = name;
        }
        if (i == 0) {
            int32_t sig[4] = {k->sig0, 4, 4, 2};
            w_link(&f, p[4], w_vec(&f, sig, 4, 4));
        }
        if (i == 1) {
            size_t qf[2];
            size_t q = w_table(&f, (const wfield[]){{2, 4, 0}, {3, 4, 0}}, 2, qf);
            w_link(&f, p[4], q);
            w_link(&f, qf[0], w_vec(&f, (const float[]){0.5f}, 1, 4));
            w_link(&f, qf[1], w_vec(&f, (const int64_t[]){3}, 1, 8));
        }
        if (i == 3) w_link(&f, p[4], w_table(&f, NULL, 0, NULL));
    }

    /* operators */
    size_t ops = w_slots(&f, 6);
    w_link(&f, s_ops, ops);
    const int32_t in0[2] = {0, k->add_input1}, in2[3] = {2, 4, -1}, in3[3] = {5, 4, 1},
                  in4[2] = {6, 7};
    const struct {
        uint32_t opcode;
        const int32_t *in;
        uint32_t nin;
        int32_t out;
    } od[6] = {{k->first_opcode, in0, 2, 2}, {3, (const int32_t[]){3}, 1, 4},
               {2, in2, 3, 5},               {1, in3, 3, 6},
               {4, in4, 2, 8},               {5, (const int32_t[]){8}, 1, 9}};
    for (int i = 0; i < 6; i++) {
        wfield fl[6] = {{0, 4, od[i].opcode}, {1, 4, 0}, {2, 4, 0}};
        int n = 3, opt = -1, cust = -1;
        uint8_t otype = 0;
        if (i == 0) otype = 11;
        if (i == 2 && !k->conv_no_options) otype = k->conv_opt_type;
        if (i == 4) otype = 15;
        if (otype) {
            fl[n++] = (wfield){3, 1, otype};
            opt = n;
            fl[n++] = (wfield){4, 4, 0};
        }
        if (i == 3) {
            cust = n;
            fl[n++] = (wfield){5, 4, 0};
        }
        size_t t = w_table(&f, fl, n, p);
        w_link(&f, ops + 4 + 4 * (size_t)i, t);
        w_link(&f, p[1], w_vec(&f, od[i].in, od[i].nin, 4));
        w_link(&f, p[2], w_vec(&f, &od[i].out, 1, 4));
        if (opt >= 0) {
            size_t o;
            if (i == 0)
                o = w_table(&f, (const wfield[]){{0, 1, 1}}, 1, NULL); /* RELU */
            else if (i == 2)
                o = w_table(&f,
                            (const wfield[]){{0, 1, (uint8_t)k->conv_padding},
                                             {1, 4, (uint32_t)k->conv_stride_w},
                                             {2, 4, 2},
                                             {3, 1, (uint8_t)k->conv_act}},
                            4, NULL);
            else
                o = w_table(&f, (const wfield[]){{3, 1, 1}}, 1, NULL); /* half_pixel_centers */
            w_link(&f, p[opt], o);
        }
        if (cust >= 0) {
            int32_t co[4] = {k->tbias_padding, 2, 2, 0};
            w_link(&f, p[cust], w_vec(&f, co, k->tbias_bytes, 1));
        }
    }

    /* subgraph 1 */
    size_t sg1 = w_table(&f, (const wfield[]){{0, 4, 0}, {1, 4, 0}, {2, 4, 0}, {4, 4, 0}}, 4, p);
    w_link(&f, subs + 8, sg1);
    size_t t1 = w_slots(&f, 1);
    w_link(&f, p[0], t1);
    w_link(&f, p[1], w_vec(&f, (const int32_t[]){0}, 1, 4));
    w_link(&f, p[2], w_vec(&f, (const int32_t[]){0}, 1, 4));
    w_link(&f, p[3], w_str(&f, "second"));
    size_t tf[2];
    size_t tt1 = w_table(&f, (const wfield[]){{0, 4, 0}, {3, 4, 0}}, 2, tf);
    w_link(&f, t1 + 4, tt1);
    w_link(&f, tf[0], w_vec(&f, (const int32_t[]){3}, 1, 4));
    w_link(&f, tf[1], w_str(&f, "x"));

    if (k->bias_external) {
        w_pad(&f, 16);
        uint64_t off = f.n + k->bias_offset_add;
        memcpy(f.b + ext_offset_field, &off, 8);
        w_put(&f, bias, blen[0]);
    }
    if (lay) lay->model = model;
    *size = f.n;
    return f.b;
}

/* Opens a tiny model built with `k`; returns the status. */
static pf_status open_tiny(const knobs *k, pf_tflite **m)
{
    size_t size;
    uint8_t *b = build_tiny(k, &size, NULL);
    pf_status st = pf_tflite_open_memory(b, size, "tiny.tflite", m);
    free(b);
    return st;
}

/* --- hand-built models -------------------------------------------------------- */

static void test_tiny_model_fields(void)
{
    knobs k = knobs_default();
    pf_tflite *m = NULL;
    CHECK_OK(open_tiny(&k, &m));
    REQUIRE(m);
    CHECK_EQ_INT(m->version, 3);
    CHECK(!strcmp(m->description, "tiny test model"));
    CHECK(!strcmp(m->name, "tiny.tflite"));
    CHECK_EQ_INT(m->extent, m->size);
    CHECK((uintptr_t)m->data % 64 == 0);
    REQUIRE(m->n_opcodes == 6 && m->n_buffers == 4 && m->n_subgraphs == 2);
    CHECK_EQ_INT(m->opcodes[0].builtin, PF_TFL_OP_ADD);
    CHECK_EQ_INT(m->opcodes[1].builtin, PF_TFL_OP_CUSTOM);
    CHECK(m->opcodes[1].custom_code && !strcmp(m->opcodes[1].custom_code,
                                                PF_TFL_CUSTOM_CONV2D_TRANSPOSE_BIAS));
    CHECK_EQ_INT(m->opcodes[2].builtin, PF_TFL_OP_CONV_2D);
    CHECK_EQ_INT(m->opcodes[2].version, 2);
    CHECK(m->opcodes[2].custom_code == NULL);
    CHECK_EQ_INT(m->opcodes[4].builtin, PF_TFL_OP_RESIZE_BILINEAR); /* old byte only */
    CHECK_EQ_INT(m->opcodes[5].builtin, 150);                       /* extended code */
    CHECK(!strcmp(pf_tfl_builtin_name(150), "GELU"));
    CHECK(m->buffers[0].data == NULL && m->buffers[0].size == 0);
    CHECK_EQ_INT(m->buffers[1].size, 8);
    CHECK_EQ_INT(m->buffers[1].file_offset, (size_t)(m->buffers[1].data - m->data));

    const pf_tfl_subgraph *g = &m->subgraphs[0];
    CHECK(!strcmp(g->name, "main"));
    REQUIRE(g->n_tensors == 10 && g->n_operators == 6);
    CHECK(g->n_inputs == 1 && g->inputs[0] == 0);
    CHECK(g->n_outputs == 1 && g->outputs[0] == 9);
    const pf_tfl_tensor *t0 = &g->tensors[0];
    CHECK(!strcmp(t0->name, "input"));
    CHECK(shape_is(t0, 4, (const int32_t[]){1, 4, 4, 2}));
    REQUIRE(t0->shape_signature);
    CHECK(t0->shape_signature[0] == -1 && t0->shape_signature[1] == 4);
    CHECK(t0->data == NULL && !t0->has_quantization);
    const pf_tfl_tensor *t1 = &g->tensors[1];
    REQUIRE(t1->data && t1->data_size == 8);
    float bv[2];
    memcpy(bv, t1->data, sizeof bv);
    CHECK(bv[0] == 0.5f && bv[1] == -1.0f);
    CHECK(t1->has_quantization);
    CHECK(t1->n_quant == 1 && t1->quant_scale[0] == 0.5f);
    CHECK(t1->n_quant_zero_point == 1 && t1->quant_zero_point[0] == 3);
    CHECK(t1->shape_signature == NULL);
    const pf_tfl_tensor *t3 = &g->tensors[3];
    CHECK_EQ_INT(t3->type, PF_TFL_FLOAT16);
    CHECK(!t3->has_quantization); /* an empty table, as fp16 models have */
    CHECK(t3->data && t3->data[0] == 0x00 && t3->data[1] == 0x3c);
    CHECK_EQ_INT(g->tensors[7].type, PF_TFL_INT32);

    const pf_tfl_operator *op = g->operators;
    CHECK_EQ_INT(op[0].builtin, PF_TFL_OP_ADD);
    CHECK_EQ_INT(op[0].opts.kind, PF_TFL_OPTS_ELEMENTWISE);
    CHECK_EQ_INT(op[0].opts.u.elementwise.activation, PF_TFL_ACT_RELU);
    CHECK_EQ_INT(op[0].options_type, 11);
    CHECK_EQ_INT(op[1].builtin, PF_TFL_OP_DEQUANTIZE);
    CHECK_EQ_INT(op[1].opts.kind, PF_TFL_OPTS_NONE);
    CHECK_EQ_INT(op[2].builtin, PF_TFL_OP_CONV_2D);
    CHECK_EQ_INT(op[2].version, 2);
    REQUIRE(op[2].n_inputs == 3);
    CHECK_EQ_INT(op[2].inputs[2], -1); /* optional bias absent */
    CHECK_EQ_INT(op[2].opts.kind, PF_TFL_OPTS_CONV2D);
    CHECK_EQ_INT(op[2].opts.u.conv2d.padding, PF_TFL_PADDING_VALID);
    CHECK_EQ_INT(op[2].opts.u.conv2d.stride_w, 2);
    CHECK_EQ_INT(op[2].opts.u.conv2d.stride_h, 2);
    CHECK_EQ_INT(op[2].opts.u.conv2d.dilation_w, 1); /* schema default */
    CHECK_EQ_INT(op[2].opts.u.conv2d.dilation_h, 1);
    CHECK_EQ_INT(op[3].builtin, PF_TFL_OP_CUSTOM);
    CHECK(!strcmp(op[3].custom_code, PF_TFL_CUSTOM_CONV2D_TRANSPOSE_BIAS));
    CHECK_EQ_INT(op[3].custom_options_size, 12);
    CHECK_EQ_INT(op[3].opts.kind, PF_TFL_OPTS_CONV2D_TRANSPOSE_BIAS);
    CHECK_EQ_INT(op[3].opts.u.conv2d_transpose_bias.padding, PF_TFL_PADDING_SAME);
    CHECK_EQ_INT(op[3].opts.u.conv2d_transpose_bias.stride_w, 2);
    CHECK_EQ_INT(op[4].opts.kind, PF_TFL_OPTS_RESIZE);
    CHECK(!op[4].opts.u.resize.align_corners && op[4].opts.u.resize.half_pixel_centers);
    CHECK_EQ_INT(op[5].builtin, 150);
    CHECK_EQ_INT(op[5].opts.kind, PF_TFL_OPTS_NONE);

    const pf_tfl_subgraph *g1 = &m->subgraphs[1];
    CHECK(!strcmp(g1->name, "second"));
    CHECK(g1->n_tensors == 1 && g1->n_operators == 0 && g1->operators != NULL);
    CHECK(!strcmp(g1->tensors[0].name, "x") && g1->tensors[0].shape[0] == 3);
    walk_model(m);
    pf_tflite_close(&m);
    CHECK(m == NULL);
    pf_tflite_close(&m); /* NULL-safe */
    pf_tflite_close(NULL);

    /* Appended bytes (as with metadata archives) are allowed and not part
     * of the extent. */
    size_t size;
    uint8_t *b = build_tiny(&k, &size, NULL);
    uint8_t *b2 = realloc(b, size + 100);
    REQUIRE(b2);
    memset(b2 + size, 0xA5, 100);
    CHECK_OK(pf_tflite_open_memory(b2, size + 100, "appended", &m));
    CHECK(m && m->size == size + 100 && m->extent == size);
    pf_tflite_close(&m);
    free(b2);

    /* Buffer data outside the FlatBuffer (offset/size, as models > 2 GB). */
    k.bias_external = true;
    b = build_tiny(&k, &size, NULL);
    CHECK_OK(pf_tflite_open_memory(b, size, "external", &m));
    if (m) {
        const pf_tfl_buffer *eb = &m->buffers[1];
        CHECK(eb->size == 8 && eb->file_offset == size - 8 && eb->data == m->data + size - 8);
        const pf_tfl_tensor *t = &m->subgraphs[0].tensors[1];
        CHECK(t->data == eb->data && t->data_size == 8);
        float v[2];
        memcpy(v, t->data, sizeof v);
        CHECK(v[0] == 0.5f && v[1] == -1.0f);
        CHECK_EQ_INT(m->extent, size);
    }
    pf_tflite_close(&m);
    free(b);
}

/* Expects PF_ERR_FORMAT and every fragment in the message. */
static void expect_format_error(const char *label, pf_status st, pf_tflite *m, const char *frag1,
                                const char *frag2)
{
    const char *msg = pf_last_error();
    bool ok = st == PF_ERR_FORMAT && m == NULL && strstr(msg, frag1) &&
              (!frag2 || strstr(msg, frag2));
    if (!ok)
        fprintf(stderr, "  %s: got %s '%s', wanted '%s'%s%s\n", label, pf_status_str(st), msg,
                frag1, frag2 ? " and " : "", frag2 ? frag2 : "");
    else
        printf("    %-22s -> %s\n", label, msg);
    CHECK(ok);
}

static void test_tiny_model_errors(void)
{
    struct {
        const char *label;
        knobs k;
        const char *frag1, *frag2;
    } cases[24];
    int n = 0;
#define CASE(lbl, field, value, f1, f2) \
    do { \
        cases[n].label = lbl; \
        cases[n].k = knobs_default(); \
        cases[n].k.field = value; \
        cases[n].frag1 = f1; \
        cases[n].frag2 = f2; \
        n++; \
    } while (0)
    CASE("version", version, 2, "tiny.tflite: version: schema version 2", NULL);
    CASE("op input index", add_input1, 99,
         "tiny.tflite: subgraphs[0].operators[0].inputs[1]: tensor index 99 out of range",
         "(subgraph has 10 tensors)");
    CASE("op input -2", add_input1, -2, "operators[0].inputs[1]: tensor index -2", NULL);
    CASE("tensor buffer", bias_buffer, 17, "subgraphs[0].tensors[1].buffer: index 17 out of range",
         "(model has 4 buffers)");
    CASE("tensor type", bias_type, 42, "subgraphs[0].tensors[1].type: unknown TensorType 42",
         "'bias'");
    CASE("constant size", bias_bytes, 12,
         "subgraphs[0].tensors[1].buffer: tensor 'bias' FLOAT32 [2] needs 8 bytes",
         "buffers[1] holds 12");
    CASE("constant type", bias_type, PF_TFL_FLOAT16, "needs 4 bytes but buffers[1] holds 8", NULL);
    CASE("shape_signature", sig0, -2, "tensors[0].shape_signature: dimension 0 is -2", NULL);
    CASE("options type", conv_opt_type, 5,
         "operators[2].builtin_options_type: 5 does not match operator CONV_2D (expects 1)", NULL);
    CASE("missing options", conv_no_options, true,
         "operators[2].builtin_options: operator CONV_2D has no options", NULL);
    CASE("stride 0", conv_stride_w, 0,
         "subgraphs[0].operators[2].builtin_options.stride_w: 0 is below 1", NULL);
    CASE("padding", conv_padding, 7, "builtin_options.padding: unknown Padding 7", NULL);
    CASE("activation", conv_act, 9, "unknown ActivationFunctionType 9", NULL);
    CASE("custom size", tbias_bytes, 8,
         "operators[3].custom_options: 8 bytes for Convolution2DTransposeBias", NULL);
    CASE("custom padding", tbias_padding, 0, "operators[3].custom_options: padding 0", NULL);
    CASE("opcode index", first_opcode, 9,
         "operators[0].opcode_index: 9 out of range (model has 6 opcodes)", NULL);
    CASE("graph output", graph_output, 50, "subgraphs[0].outputs[0]: tensor index 50", NULL);
    CASE("graph output -1", graph_output, -1, "subgraphs[0].outputs[0]: tensor index -1", NULL);
    CASE("shared subgraphs", subgraph_aliases, 3000, "subgraphs[",
         "more records than a file of");
    CASE("external buffer", bias_offset_add, 1000, "buffers[1].offset: data at byte",
         "of 8 bytes lies outside the file");
    cases[n - 1].k.bias_external = true;
#undef CASE
    for (int i = 0; i < n; i++) {
        pf_tflite *m = (pf_tflite *)(uintptr_t)1; /* must be reset to NULL */
        pf_status st = open_tiny(&cases[i].k, &m);
        expect_format_error(cases[i].label, st, m, cases[i].frag1, cases[i].frag2);
        if (st == PF_OK) pf_tflite_close(&m);
    }
    /* A few aliases of a subgraph are legal FlatBuffers sharing. */
    knobs k = knobs_default();
    k.subgraph_aliases = 2;
    pf_tflite *m = NULL;
    CHECK_OK(open_tiny(&k, &m));
    CHECK(m && m->n_subgraphs == 4 && m->subgraphs[3].n_tensors == 10);
    pf_tflite_close(&m);
}

/* Damage at the byte level: identifier, offsets, lengths, terminators. */
static void test_tiny_model_bytes(void)
{
    knobs k = knobs_default();
    size_t size;
    layout lay;
    uint8_t *good = build_tiny(&k, &size, &lay);
    uint8_t *b = malloc(size);
    REQUIRE(good && b);
    pf_tflite *m = NULL;
    pf_status st;
#define DAMAGE(label, stmt, f1, f2) \
    do { \
        memcpy(b, good, size); \
        stmt; \
        m = NULL; \
        st = pf_tflite_open_memory(b, size, "bytes.tflite", &m); \
        expect_format_error(label, st, m, f1, f2); \
        pf_tflite_close(&m); \
    } while (0)
    DAMAGE("identifier", memcpy(b + 4, "TFL2", 4),
           "bytes.tflite: model: file identifier is \"TFL2\"",
           "expected \"TFL3\"");
    DAMAGE("binary identifier", memcpy(b + 4, "\x01\x02\"\xff", 4), "\\x01\\x02\\x22\\xff", NULL);
    DAMAGE("root offset", w_u32_at(&(fbw){.b = b}, 0, (uint32_t)size + 100), "root: offset",
           "points past the end of the file");
    DAMAGE("root misaligned", w_u32_at(&(fbw){.b = b}, 0, (uint32_t)lay.model + 1), "table at byte",
           "misaligned");
    DAMAGE("vtable offset", w_u32_at(&(fbw){.b = b}, lay.model, 0x7fffff00u), "vtable of the table",
           NULL);
    DAMAGE("vtable negative", w_u32_at(&(fbw){.b = b}, lay.model, 0x80000000u),
           "vtable of the table", NULL);
    DAMAGE("tensors length", w_u32_at(&(fbw){.b = b}, lay.tensors_vec, 0xffffffffu),
           "subgraphs[0].tensors: vector of 4294967295 elements of 4 bytes", "past the end");
    DAMAGE("shape length", w_u32_at(&(fbw){.b = b}, lay.t0_shape_vec, 0x40000000u),
           "subgraphs[0].tensors[0].shape: vector of 1073741824 elements", NULL);
    DAMAGE("shape misaligned", b[lay.t0_shape_field] += 2, "tensors[0].shape: vector at byte",
           "misaligned");
    DAMAGE("name length", w_u32_at(&(fbw){.b = b}, lay.t0_name, 0x7ffffff0u),
           "subgraphs[0].tensors[0].name: vector of", NULL);
    DAMAGE("name terminator", b[lay.t0_name + 4 + 5] = 'X', "tensors[0].name: string of 5 bytes",
           "no NUL terminator");
#undef DAMAGE
    /* Truncation anywhere is an error: the model refers to its last byte. */
    for (size_t len = 0; len < size; len++) {
        m = NULL;
        st = pf_tflite_open_memory(good, len, "cut.tflite", &m);
        if (st != PF_ERR_FORMAT || m) {
            fprintf(stderr, "  truncated to %zu of %zu bytes: %s\n", len, size, pf_status_str(st));
            CHECK(st == PF_ERR_FORMAT && m == NULL);
            pf_tflite_close(&m);
            break;
        }
    }
    free(b);
    free(good);
}

/* --- damaged real models ---------------------------------------------------------- */

static void fuzz_model(const char *rel, int mutations)
{
    size_t size = 0;
    uint8_t *good = read_file(model_path(rel), &size);
    if (!good) fprintf(stderr, "  cannot read %s (run scripts/setup.sh)\n", model_path(rel));
    REQUIRE(good);
    pf_tflite *m = NULL;
    CHECK_OK(pf_tflite_open_memory(good, size, rel, &m));
    REQUIRE(m);
    /* Byte ranges of weights, to aim half of the flips at the structure. */
    char *is_data = calloc(size, 1);
    REQUIRE(is_data);
    size_t data_bytes = 0;
    for (int32_t i = 0; i < m->n_buffers; i++) {
        memset(is_data + m->buffers[i].file_offset, 1, m->buffers[i].size);
        data_bytes += m->buffers[i].size;
    }
    pf_tflite_close(&m);

    /* Truncation: every 1/64 of the file and each of the first 256 lengths. */
    int cuts = 0, cut_fail = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < (pass ? 256u : 64u); i++) {
            size_t len = pass ? i : size * i / 64;
            pf_status st = pf_tflite_open_memory(good, len, "cut", &m);
            cuts++;
            if (st != PF_ERR_FORMAT || m || !pf_last_error()[0]) {
                if (!cut_fail++)
                    fprintf(stderr, "  %s cut to %zu bytes: %s\n", rel, len, pf_status_str(st));
                pf_tflite_close(&m);
            }
        }
    CHECK_EQ_INT(cut_fail, 0);

    /* Random flips (1..8 bytes each). */
    uint8_t *b = malloc(size);
    REQUIRE(b);
    int opened = 0, rejected = 0, bad_status = 0;
    for (int it = 0; it < mutations; it++) {
        memcpy(b, good, size);
        int flips = (int)pf_test_rand_range(1, 8);
        for (int f = 0; f < flips; f++) {
            size_t pos;
            do {
                pos = (size_t)pf_test_rand_range(0, (int64_t)size - 1);
            } while ((it & 1) && is_data[pos] && data_bytes < size);
            b[pos] ^= (uint8_t)pf_test_rand_range(1, 255);
        }
        pf_status st = pf_tflite_open_memory(b, size, "flipped", &m);
        if (st == PF_OK) {
            opened++;
            walk_model(m);
            pf_tflite_close(&m);
        } else if (st == PF_ERR_FORMAT && !m && pf_last_error()[0]) {
            rejected++;
        } else {
            bad_status++;
        }
    }
    printf("  %s: %zu bytes (%zu of weights); %d cuts all rejected; %d mutations: %d opened, %d "
           "rejected\n",
           rel, size, data_bytes, cuts, mutations, opened, rejected);
    CHECK_EQ_INT(bad_status, 0);
    CHECK(rejected > 0);
    free(b);
    free(is_data);
    free(good);
}

static void test_damaged_selfie(void)
{
    fuzz_model(MP "selfie_segmentation/selfie_segmentation.tflite", 1000);
}

static void test_damaged_face(void)
{
    fuzz_model(MP "face_detection/face_detection_short_range.tflite", 1000);
}

static void test_damaged_tiny(void)
{
    knobs k = knobs_default();
    size_t size;
    uint8_t *good = build_tiny(&k, &size, NULL);
    uint8_t *b = malloc(size);
    REQUIRE(good && b);
    int opened = 0, rejected = 0, bad_status = 0;
    for (int it = 0; it < 3000; it++) {
        memcpy(b, good, size);
        int flips = (int)pf_test_rand_range(1, 4);
        for (int f = 0; f < flips; f++) {
            size_t pos = (size_t)pf_test_rand_range(0, (int64_t)size - 1);
            /* Half the time a "large" value: lengths and offsets near limits. */
            if (it & 1)
                b[pos] = (uint8_t)(pf_test_rand() & 1 ? 0xff : 0x7f);
            else
                b[pos] ^= (uint8_t)pf_test_rand_range(1, 255);
        }
        pf_tflite *m = NULL;
        pf_status st = pf_tflite_open_memory(b, size, "tiny-flipped", &m);
        if (st == PF_OK) {
            opened++;
            walk_model(m);
            pf_tflite_close(&m);
        } else if (st == PF_ERR_FORMAT && !m && pf_last_error()[0]) {
            rejected++;
        } else {
            bad_status++;
        }
    }
    printf("  tiny model: %zu bytes; 3000 mutations: %d opened, %d rejected\n", size, opened,
           rejected);
    CHECK_EQ_INT(bad_status, 0);
    CHECK(rejected > 1000);
    free(b);
    free(good);
}

/* --- arguments and files ---------------------------------------------------------- */

static void test_open_errors(void)
{
    pf_tflite *m = (pf_tflite *)(uintptr_t)1;
    CHECK_EQ_INT(pf_tflite_open(NULL, &m), PF_ERR_INVALID);
    CHECK(m == NULL);
    CHECK_EQ_INT(pf_tflite_open("x.tflite", NULL), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_tflite_open_memory(NULL, 10, "x", &m), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "data is NULL"));

    CHECK_EQ_INT(pf_tflite_open("/nonexistent/dir/model.tflite", &m), PF_ERR_IO);
    CHECK(m == NULL);
    CHECK(strstr(pf_last_error(), "cannot open '/nonexistent/dir/model.tflite'"));
    CHECK_EQ_INT(pf_tflite_open("/", &m), PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "'/' is not a regular file"));

    /* Empty: from memory (NULL data is fine with size 0) and from a file. */
    CHECK_EQ_INT(pf_tflite_open_memory(NULL, 0, NULL, &m), PF_ERR_FORMAT);
    CHECK(!strcmp(pf_last_error(), "<memory>: model: file is empty (0 bytes)"));
    char path[] = "/tmp/pf_tflite_empty_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    CHECK_EQ_INT(pf_tflite_open(path, &m), PF_ERR_FORMAT);
    CHECK(strstr(pf_last_error(), "file is empty"));
    CHECK(strstr(pf_last_error(), path));
    /* Too short, and a file that is not a model at all. */
    CHECK_EQ_INT(pf_tflite_open_memory("TFL3", 4, "short", &m), PF_ERR_FORMAT);
    CHECK(strstr(pf_last_error(), "short: model: file of 4 bytes is too short"));
    FILE *f = fopen(path, "wb");
    REQUIRE(f);
    fputs("name: not a model\nstages: []\n", f);
    fclose(f);
    CHECK_EQ_INT(pf_tflite_open(path, &m), PF_ERR_FORMAT);
    CHECK(strstr(pf_last_error(), "file identifier is \": no\""));
    remove(path);

    /* Enum names. */
    CHECK(!strcmp(pf_tfl_type_name(PF_TFL_FLOAT16), "FLOAT16"));
    CHECK(!strcmp(pf_tfl_type_name(99), "?"));
    CHECK_EQ_INT(pf_tfl_type_size(PF_TFL_FLOAT16), 2);
    CHECK_EQ_INT(pf_tfl_type_size(PF_TFL_STRING), 0);
    CHECK(!strcmp(pf_tfl_builtin_name(PF_TFL_OP_HARD_SWISH), "HARD_SWISH"));
    CHECK(!strcmp(pf_tfl_builtin_name(PF_TFL_OP_RESIZE_NEAREST_NEIGHBOR),
                  "RESIZE_NEAREST_NEIGHBOR"));
    CHECK(!strcmp(pf_tfl_builtin_name(-1), "UNKNOWN"));
    CHECK(!strcmp(pf_tfl_builtin_name(100000), "UNKNOWN"));
}

int main(void)
{
    pf_test_seed(20261121);
    PF_RUN(test_open_errors);
    PF_RUN(test_tiny_model_fields);
    PF_RUN(test_tiny_model_errors);
    PF_RUN(test_tiny_model_bytes);
    PF_RUN(test_damaged_tiny);
    PF_RUN(test_selfie_segmentation);
    PF_RUN(test_selfie_segmentation_landscape);
    PF_RUN(test_face_detection_short_range);
    PF_RUN(test_damaged_selfie);
    PF_RUN(test_damaged_face);
    return pf_test_finish();
}
