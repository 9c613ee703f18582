/* The ONNX reader (src/nn/onnx_reader.c).
 *
 * - Every model.onnx of Debian's libonnx-testdata (node/, pytorch-converted/,
 *   pytorch-operator/, simple/): each either opens, and then its view obeys
 *   the reader's invariants (names resolve, topological order, byte sizes),
 *   or is refused as PF_ERR_UNSUPPORTED for one of the stated reasons. The
 *   summary prints counts by reason; the number that open is asserted.
 * - Every input_k.pb / output_k.pb of test_data_set_0: read with
 *   pf_onnx_read_tensor_file, sizes consistent, and where the model opened,
 *   type and fixed dims equal to the graph input or output they feed.
 * - A Conv's attributes read back as the file holds them (checked against the
 *   bytes by hand: kernel_shape 3,3 pads 1,1,1,1 strides 2,2).
 * - Models crafted in memory with the generated pack functions: external
 *   data, size mismatches, unsupported types and attributes, opsets, names,
 *   order, nesting bombs, the memory cap, narrowing of int32_data.
 * - Corruption of real models that open: every truncation of four, 1000 seeded
 *   mutations (1-4 random bytes) of each of two.
 *
 * Without protobuf-c the reader is a stub: its message is checked, then the
 * test reports itself skipped (77). */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nn/onnx_reader.h"
#include "pf_test.h"

#ifndef PF_HAVE_ONNX

int main(void)
{
    pf_onnx_model *m = (pf_onnx_model *)&m; /* must come back NULL */
    CHECK(!pf_onnx_available());
    CHECK_EQ_INT(pf_onnx_open("x.onnx", &m), PF_ERR_UNSUPPORTED);
    CHECK(m == NULL);
    CHECK(strstr(pf_last_error(), "built without ONNX support (protobuf-c not found)") != NULL);
    pf_onnx_tensor_data t;
    CHECK_EQ_INT(pf_onnx_read_tensor_file("input_0.pb", &t), PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "protobuf-c not found") != NULL);
    if (pf_test_failed_checks) return 1;
    printf("SKIP: built without ONNX support\n");
    return 77;
}

#else

#include "onnx.pb-c.h"

static const char *testdata_dir(void)
{
    const char *d = getenv("PF_ONNX_TESTDATA");
    return d && *d ? d : "/usr/share/libonnx-testdata/data";
}

static int file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static unsigned char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return b;
}

/* --- invariants of an opened model ------------------------------------------------- */

static int64_t prod_dims(int ndim, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= dims[i];
    return n;
}

static unsigned touch(const void *p, size_t n)
{
    /* Reads every byte, so ASan sees a view that points at freed or short memory. */
    unsigned s = 0;
    for (size_t i = 0; i < n; i++) s += ((const unsigned char *)p)[i];
    return s;
}

static int check_tensor_view(const pf_onnx_tensor *t)
{
    int bad = 0;
    bad |= !pf_onnx_dtype_supported((int)t->dtype);
    bad |= t->ndim < 0 || t->ndim > PF_ONNX_MAX_RANK;
    for (int i = 0; i < t->ndim && !bad; i++) bad |= t->dims[i] < 0;
    if (!bad) {
        bad |= t->numel != prod_dims(t->ndim, t->dims);
        bad |= t->nbytes != (size_t)t->numel * pf_onnx_dtype_size((int)t->dtype);
        bad |= (t->data == NULL) != (t->nbytes == 0);
        bad |= t->data && (uintptr_t)t->data % pf_onnx_dtype_size((int)t->dtype) != 0;
        if (!bad && t->data) (void)touch(t->data, t->nbytes);
    }
    return bad;
}

static int check_value_info(const pf_onnx_value_info *v, int strict)
{
    int bad = !v->name || !*v->name;
    if (strict) bad |= !pf_onnx_dtype_supported((int)v->dtype);
    bad |= v->ndim < -1 || v->ndim > PF_ONNX_MAX_RANK;
    for (int i = 0; i < v->ndim && !bad; i++) {
        bad |= v->dims[i].value < -1;
        bad |= v->dims[i].param && v->dims[i].value != -1;
        if (v->dims[i].param) bad |= !*v->dims[i].param;
    }
    return bad;
}

static int is_graph_input(const pf_onnx_model *m, const char *name)
{
    const pf_onnx_value_info *v = pf_onnx_find_value_info(m, name);
    for (size_t i = 0; v && i < m->n_inputs; i++)
        if (v == &m->inputs[i]) return 1;
    return 0;
}

/* Returns the number of broken invariants (0 for a sound view), printing each. */
static int check_view(const pf_onnx_model *m)
{
    int errors = 0;
#define VIEW_CHECK(cond, ...) \
    do { \
        if (!(cond)) { \
            errors++; \
            fprintf(stderr, "  %s: view invariant failed: %s: ", m->name, #cond); \
            fprintf(stderr, __VA_ARGS__); \
            fprintf(stderr, "\n"); \
        } \
    } while (0)
    VIEW_CHECK(m->opset == 0 || (m->opset >= PF_ONNX_OPSET_MIN && m->opset <= PF_ONNX_OPSET_MAX),
               "%lld", (long long)m->opset);
    VIEW_CHECK(m->ir_version >= 3 && m->ir_version <= PF_ONNX_IR_VERSION_MAX, "%lld",
               (long long)m->ir_version);
    VIEW_CHECK(m->n_opsets >= 1, "%zu", m->n_opsets);
    VIEW_CHECK(m->n_outputs >= 1, "%zu", m->n_outputs);
    for (size_t i = 0; i < m->n_initializers; i++) {
        const pf_onnx_tensor *t = &m->initializers[i];
        VIEW_CHECK(*t->name, "initializer %zu", i);
        VIEW_CHECK(!check_tensor_view(t), "initializer %zu '%s'", i, t->name);
        VIEW_CHECK(pf_onnx_find_initializer(m, t->name) == t, "initializer %zu '%s'", i,
                   t->name);
    }
    for (size_t i = 0; i < m->n_inputs; i++) {
        const pf_onnx_value_info *v = &m->inputs[i];
        VIEW_CHECK(!check_value_info(v, 1), "input %zu", i);
        VIEW_CHECK(pf_onnx_find_value_info(m, v->name) == v, "input %zu '%s'", i, v->name);
        VIEW_CHECK(v->is_initializer == (pf_onnx_find_initializer(m, v->name) != NULL),
                   "input %zu '%s'", i, v->name);
    }
    for (size_t k = 0; k < m->n_nodes; k++) {
        const pf_onnx_node *n = &m->nodes[k];
        VIEW_CHECK(n->index == (int)k, "node %zu index %d", k, n->index);
        VIEW_CHECK(n->op_type && *n->op_type, "node %zu", k);
        VIEW_CHECK(n->opset > 0 && n->domain && strcmp(n->domain, "ai.onnx"), "node %zu", k);
        for (size_t j = 0; j < n->n_inputs; j++) {
            const char *in = n->inputs[j];
            if (!*in) continue;
            int slot = -1;
            int prod = pf_onnx_find_producer(m, in, &slot);
            int ok = pf_onnx_find_initializer(m, in) || is_graph_input(m, in) ||
                     (prod >= 0 && prod < (int)k && slot >= 0 &&
                      (size_t)slot < m->nodes[prod].n_outputs &&
                      !strcmp(m->nodes[prod].outputs[slot], in));
            VIEW_CHECK(ok, "node %zu input %zu '%s' (producer %d)", k, j, in, prod);
        }
        for (size_t j = 0; j < n->n_outputs; j++) {
            if (!*n->outputs[j]) continue;
            int slot = -1;
            VIEW_CHECK(pf_onnx_find_producer(m, n->outputs[j], &slot) == (int)k &&
                           slot == (int)j, "node %zu output %zu '%s'", k, j, n->outputs[j]);
        }
        for (size_t a = 0; a < n->n_attrs; a++) {
            const pf_onnx_attr *at = &n->attrs[a];
            VIEW_CHECK(at->name && *at->name, "node %zu attr %zu", k, a);
            VIEW_CHECK(pf_onnx_node_attr(n, at->name) == at, "node %zu attr '%s' not unique", k,
                       at->name);
            switch (at->type) {
            case PF_ONNX_ATTR_FLOAT: case PF_ONNX_ATTR_INT: break;
            case PF_ONNX_ATTR_STRING:
                VIEW_CHECK(at->s && strlen(at->s) <= at->s_len, "node %zu attr '%s'", k,
                           at->name);
                break;
            case PF_ONNX_ATTR_FLOATS:
                VIEW_CHECK(!at->n || at->floats, "node %zu attr '%s'", k, at->name);
                if (at->n) (void)touch(at->floats, at->n * sizeof(float));
                break;
            case PF_ONNX_ATTR_INTS:
                VIEW_CHECK(!at->n || at->ints, "node %zu attr '%s'", k, at->name);
                if (at->n) (void)touch(at->ints, at->n * sizeof(int64_t));
                break;
            case PF_ONNX_ATTR_STRINGS:
                for (size_t s = 0; s < at->n; s++) (void)strlen(at->strings[s]);
                break;
            case PF_ONNX_ATTR_TENSOR:
                VIEW_CHECK(at->t && !check_tensor_view(at->t), "node %zu attr '%s'", k,
                           at->name);
                break;
            default:
                VIEW_CHECK(0, "node %zu attr '%s' type %d", k, at->name, (int)at->type);
            }
        }
    }
    for (size_t i = 0; i < m->n_outputs; i++) {
        const pf_onnx_value_info *v = &m->outputs[i];
        VIEW_CHECK(!check_value_info(v, 1), "output %zu", i);
        VIEW_CHECK(pf_onnx_find_initializer(m, v->name) || is_graph_input(m, v->name) ||
                       pf_onnx_find_producer(m, v->name, NULL) >= 0,
                   "output %zu '%s' has no source", i, v->name);
    }
    for (size_t i = 0; i < m->n_value_infos; i++)
        VIEW_CHECK(!check_value_info(&m->value_infos[i], 0), "value_info %zu", i);
#undef VIEW_CHECK
    return errors;
}

/* --- the conformance corpus ---------------------------------------------------------- */

/* The stated reasons a conformance model may be refused, matched in the message. */
static const struct {
    const char *key, *label;
} reasons[] = {
    {"external data", "external data"},
    {"graph attributes are not supported", "graph attribute (If/Loop/Scan)"},
    {"attribute type not supported", "other attribute type (sparse, tensors, type protos)"},
    {"non-tensor type", "sequence/map/optional graph input or output"},
    {"data type", "unsupported data type"},
    {"opset", "opset outside 7..17"},
    {"sparse", "sparse initializer"},
    {"model-local functions", "model-local functions"},
    {"IR version", "IR version"},
};
#define N_REASONS (sizeof reasons / sizeof reasons[0])

typedef struct case_list {
    char **dirs;
    size_t n, cap;
} case_list;

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void collect_cases(case_list *cl)
{
    static const char *const groups[] = {"node", "pytorch-converted", "pytorch-operator",
                                         "simple"};
    for (size_t g = 0; g < 4; g++) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/%s", testdata_dir(), groups[g]);
        DIR *d = opendir(dir);
        if (!d) continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char model[1400];
            snprintf(model, sizeof model, "%s/%s/model.onnx", dir, e->d_name);
            if (!file_exists(model)) continue;
            if (cl->n == cl->cap) {
                cl->cap = cl->cap ? 2 * cl->cap : 256;
                cl->dirs = realloc(cl->dirs, cl->cap * sizeof *cl->dirs);
            }
            model[strlen(model) - strlen("/model.onnx")] = '\0';
            cl->dirs[cl->n++] = strdup(model);
        }
        closedir(d);
    }
    qsort(cl->dirs, cl->n, sizeof *cl->dirs, cmp_cstr);
}

/* The graph input or output that data file k feeds or checks: by the tensor's
 * name when it has one, else by position (inputs without a default). */
static const pf_onnx_value_info *io_for(const pf_onnx_model *m, int is_input, int k,
                                        const char *tname)
{
    const pf_onnx_value_info *v = is_input ? m->inputs : m->outputs;
    size_t n = is_input ? m->n_inputs : m->n_outputs;
    if (*tname) {
        for (size_t i = 0; i < n; i++)
            if (!strcmp(v[i].name, tname)) return &v[i];
    }
    int pos = 0;
    for (size_t i = 0; i < n; i++) {
        if (is_input && v[i].is_initializer) continue;
        if (pos++ == k) return &v[i];
    }
    return NULL;
}

typedef struct tensor_stats {
    int files, read, failed_ok_model, io_checked, unmatched, string_refused, other_failures;
} tensor_stats;

static void check_data_files(const char *dir, const pf_onnx_model *m, tensor_stats *ts)
{
    for (int is_input = 1; is_input >= 0; is_input--) {
        for (int k = 0;; k++) {
            char path[1500];
            snprintf(path, sizeof path, "%s/test_data_set_0/%s_%d.pb", dir,
                     is_input ? "input" : "output", k);
            if (!file_exists(path)) break;
            ts->files++;
            pf_onnx_tensor_data t;
            memset(&t, 0x5A, sizeof t);
            pf_status st = pf_onnx_read_tensor_file(path, &t);
            if (st != PF_OK) {
                CHECK(t.data == NULL && t.dims == NULL && t.name == NULL);
                CHECK(strstr(pf_last_error(), path) != NULL);
                if (m) {
                    /* The model opened, so its inputs and outputs are tensors. */
                    ts->failed_ok_model++;
                    CHECK_OK(st);
                } else if (st == PF_ERR_UNSUPPORTED && strstr(pf_last_error(), "STRING")) {
                    ts->string_refused++;
                } else {
                    ts->other_failures++; /* sequences, maps, optionals: not TensorProtos */
                }
                continue;
            }
            ts->read++;
            CHECK(t.name != NULL);
            CHECK(t.ndim >= 0 && (t.ndim == 0 || t.dims));
            CHECK_EQ_INT(t.numel, prod_dims(t.ndim, t.dims));
            CHECK_EQ_INT(t.nbytes, (size_t)t.numel * pf_onnx_dtype_size((int)t.dtype));
            CHECK((t.data == NULL) == (t.nbytes == 0));
            if (t.data) (void)touch(t.data, t.nbytes);
            if (m) {
                const pf_onnx_value_info *v = io_for(m, is_input, k, t.name);
                if (!v) {
                    ts->unmatched++;
                } else {
                    ts->io_checked++;
                    int ok = v->dtype == t.dtype && (v->ndim < 0 || v->ndim == t.ndim);
                    for (int i = 0; ok && v->ndim >= 0 && i < t.ndim; i++)
                        ok = v->dims[i].value < 0 || v->dims[i].value == t.dims[i];
                    if (!ok)
                        fprintf(stderr, "  %s: %s (%s, rank %d) does not match '%s' (%s, rank "
                                "%d)\n", path, t.name, pf_onnx_dtype_name((int)t.dtype), t.ndim,
                                v->name, pf_onnx_dtype_name((int)v->dtype), v->ndim);
                    CHECK(ok);
                }
            }
            pf_onnx_tensor_data_free(&t);
            CHECK(t.data == NULL && t.name == NULL && t.dims == NULL);
        }
    }
}

/* Measured on libonnx-testdata 1.12.0-2 (Debian 12): see the printed summary.
 * A lower figure means the reader refuses a model it used to read. */
#define MIN_MODELS_OPENED 860 /* of 1072 */
#define MIN_TENSORS_READ 3122 /* of 3205 data files */

static const char *float16_model; /* a conformance model with FLOAT16 constants, if any */

static void test_conformance_corpus(void)
{
    case_list cl = {0};
    collect_cases(&cl);
    if (cl.n == 0) {
        printf("  no conformance cases under %s (libonnx-testdata not installed?): skipped\n",
               testdata_dir());
        return;
    }
    int opened = 0, refused[N_REASONS] = {0}, unexplained = 0, by_group[4] = {0};
    int nodes = 0, inits = 0, symbolic = 0, f16 = 0;
    tensor_stats ts = {0};
    static char f16_path[1500];
    for (size_t c = 0; c < cl.n; c++) {
        char path[1500];
        snprintf(path, sizeof path, "%s/model.onnx", cl.dirs[c]);
        pf_onnx_model *m = (pf_onnx_model *)&m;
        pf_clear_error();
        pf_status st = pf_onnx_open(path, &m);
        if (st == PF_OK) {
            REQUIRE(m != NULL);
            opened++;
            by_group[strstr(path, "/node/") ? 0 : strstr(path, "/pytorch-converted/") ? 1
                     : strstr(path, "/pytorch-operator/") ? 2 : 3]++;
            CHECK_EQ_INT(check_view(m), 0);
            CHECK(!strcmp(m->name, path));
            nodes += (int)m->n_nodes;
            inits += (int)m->n_initializers;
            for (size_t i = 0; i < m->n_inputs; i++)
                for (int d = 0; d < m->inputs[i].ndim; d++)
                    symbolic += m->inputs[i].dims[d].param != NULL;
            int has16 = 0;
            for (size_t i = 0; i < m->n_initializers; i++)
                has16 |= m->initializers[i].dtype == PF_ONNX_FLOAT16;
            for (size_t k = 0; k < m->n_nodes; k++)
                for (size_t a = 0; a < m->nodes[k].n_attrs; a++)
                    has16 |= m->nodes[k].attrs[a].t &&
                             m->nodes[k].attrs[a].t->dtype == PF_ONNX_FLOAT16;
            if (has16 && !f16++) {
                snprintf(f16_path, sizeof f16_path, "%s", path);
                float16_model = f16_path;
            }
        } else {
            CHECK(m == NULL);
            const char *msg = pf_last_error();
            CHECK(strstr(msg, path) != NULL); /* the message names the file */
            size_t r = 0;
            while (r < N_REASONS && !strstr(msg, reasons[r].key)) r++;
            if (st != PF_ERR_UNSUPPORTED || r == N_REASONS) {
                unexplained++;
                fprintf(stderr, "  unexplained refusal: %s -> %s: %s\n", path,
                        pf_status_str(st), msg);
            } else {
                refused[r]++;
            }
        }
        check_data_files(cl.dirs[c], st == PF_OK ? m : NULL, &ts);
        pf_onnx_close(&m);
        CHECK(m == NULL);
    }
    printf("  conformance models: %zu, opened %d (node %d, pytorch-converted %d, "
           "pytorch-operator %d, simple %d): %d nodes, %d initializers, %d symbolic input dims\n",
           cl.n, opened, by_group[0], by_group[1], by_group[2], by_group[3], nodes, inits,
           symbolic);
    for (size_t r = 0; r < N_REASONS; r++)
        if (refused[r]) printf("  refused: %4d  %s\n", refused[r], reasons[r].label);
    printf("  refused for no stated reason: %d\n", unexplained);
    printf("  data files: %d, read %d (%d checked against the model's inputs/outputs, %d not "
           "matched), STRING refused %d, not a TensorProto %d, failed for opened models %d\n",
           ts.files, ts.read, ts.io_checked, ts.unmatched, ts.string_refused,
           ts.other_failures, ts.failed_ok_model);
    printf("  models with FLOAT16 constants: %d%s%s\n", f16, f16 ? ", first " : "",
           f16 ? f16_path : "");
    CHECK_EQ_INT(unexplained, 0);
    CHECK_EQ_INT(ts.failed_ok_model, 0);
    CHECK(opened >= MIN_MODELS_OPENED);
    CHECK(ts.read >= MIN_TENSORS_READ);
    for (size_t c = 0; c < cl.n; c++) free(cl.dirs[c]);
    free(cl.dirs);
}

/* A Conv read back: the bytes of node/test_conv_with_strides_padding/model.onnx
 * hold kernel_shape [3,3], pads [1,1,1,1], strides [2,2] (read off its hex
 * dump), inputs x [1,1,7,5] and W [1,1,3,3]. */
static void test_conv_attributes(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/node/test_conv_with_strides_padding/model.onnx",
             testdata_dir());
    if (!file_exists(path)) {
        printf("  %s missing: skipped\n", path);
        return;
    }
    pf_onnx_model *m = NULL;
    CHECK_OK(pf_onnx_open(path, &m));
    REQUIRE(m);
    REQUIRE(m->n_nodes == 1);
    const pf_onnx_node *n = &m->nodes[0];
    CHECK(!strcmp(n->op_type, "Conv"));
    CHECK(!strcmp(n->domain, ""));
    CHECK_EQ_INT(n->opset, m->opset);
    REQUIRE(n->n_inputs == 2 && n->n_outputs == 1);
    CHECK(!strcmp(n->inputs[0], "x") && !strcmp(n->inputs[1], "W") && !strcmp(n->outputs[0], "y"));
    const int64_t *v;
    size_t cnt;
    CHECK_OK(pf_onnx_attr_ints(m, n, "kernel_shape", &v, &cnt));
    REQUIRE(cnt == 2);
    CHECK(v[0] == 3 && v[1] == 3);
    CHECK_OK(pf_onnx_attr_ints(m, n, "pads", &v, &cnt));
    REQUIRE(cnt == 4);
    CHECK(v[0] == 1 && v[1] == 1 && v[2] == 1 && v[3] == 1);
    CHECK_OK(pf_onnx_attr_ints(m, n, "strides", &v, &cnt));
    REQUIRE(cnt == 2);
    CHECK(v[0] == 2 && v[1] == 2);
    /* Absent: the default; wrong type: an error naming the node and both types. */
    CHECK_OK(pf_onnx_attr_ints(m, n, "dilations", &v, &cnt));
    CHECK(v == NULL && cnt == 0);
    int64_t group = -1;
    CHECK_OK(pf_onnx_attr_int(m, n, "group", 1, &group));
    CHECK_EQ_INT(group, 1);
    CHECK_EQ_INT(pf_onnx_attr_int(m, n, "pads", 0, &group), PF_ERR_FORMAT);
    CHECK(strstr(pf_last_error(), "node 0 (Conv)") && strstr(pf_last_error(), "'pads' is INTS, "
                                                               "expected INT"));
    CHECK(strstr(pf_last_error(), path) != NULL);
    const pf_onnx_value_info *x = pf_onnx_find_value_info(m, "x");
    REQUIRE(x && x->ndim == 4);
    CHECK(x->dtype == PF_ONNX_FLOAT);
    CHECK(x->dims[0].value == 1 && x->dims[1].value == 1 && x->dims[2].value == 7 &&
          x->dims[3].value == 5);
    const pf_onnx_value_info *w = pf_onnx_find_value_info(m, "W");
    REQUIRE(w && w->ndim == 4);
    CHECK(w->dims[2].value == 3 && w->dims[3].value == 3);
    CHECK(pf_onnx_find_value_info(m, "nope") == NULL);
    CHECK(pf_onnx_find_producer(m, "y", NULL) == 0);
    pf_onnx_close(&m);
    pf_onnx_close(&m); /* NULL-safe */
    pf_onnx_close(NULL);
}

/* --- crafted models ----------------------------------------------------------------- */

/* Y = Add(X, W): X float [N,2] (N symbolic), W float [2] initializer (raw_data),
 * Y float [N,2]. Each test changes one thing from this valid base. */
typedef struct craft {
    Onnx__ModelProto model;
    Onnx__OperatorSetIdProto opset[2], *opsets[2];
    Onnx__GraphProto graph;
    Onnx__ValueInfoProto vx, vy, *ins[2], *outs[1];
    Onnx__TypeProto tx, ty;
    Onnx__TypeProto__Tensor ttx, tty;
    Onnx__TensorShapeProto shx, shy;
    Onnx__TensorShapeProto__Dimension dx[2], dy[2], *pdx[2], *pdy[2];
    Onnx__TensorProto w, *inits[1];
    float wdata[2];
    Onnx__NodeProto node[2], *nodes[2];
    char *node_in[2][2], *node_out[2][1];
    Onnx__AttributeProto attr[2], *attrs[2];
    Onnx__StringStringEntryProto ext, *exts[1];
} craft;

static void craft_init(craft *c)
{
    memset(c, 0, sizeof *c);
    onnx__model_proto__init(&c->model);
    c->model.has_ir_version = 1;
    c->model.ir_version = 8;
    c->model.producer_name = "pixflow-test";
    for (int i = 0; i < 2; i++) {
        onnx__operator_set_id_proto__init(&c->opset[i]);
        c->opsets[i] = &c->opset[i];
    }
    c->opset[0].domain = "";
    c->opset[0].has_version = 1;
    c->opset[0].version = 13;
    c->model.n_opset_import = 1;
    c->model.opset_import = c->opsets;

    onnx__graph_proto__init(&c->graph);
    c->graph.name = "crafted";
    c->model.graph = &c->graph;

    Onnx__ValueInfoProto *v[2] = {&c->vx, &c->vy};
    Onnx__TypeProto *t[2] = {&c->tx, &c->ty};
    Onnx__TypeProto__Tensor *tt[2] = {&c->ttx, &c->tty};
    Onnx__TensorShapeProto *sh[2] = {&c->shx, &c->shy};
    Onnx__TensorShapeProto__Dimension *d[2] = {c->dx, c->dy};
    Onnx__TensorShapeProto__Dimension **pd[2] = {c->pdx, c->pdy};
    const char *names[2] = {"X", "Y"};
    for (int i = 0; i < 2; i++) {
        onnx__value_info_proto__init(v[i]);
        onnx__type_proto__init(t[i]);
        onnx__type_proto__tensor__init(tt[i]);
        onnx__tensor_shape_proto__init(sh[i]);
        v[i]->name = (char *)names[i];
        v[i]->type = t[i];
        t[i]->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        t[i]->tensor_type = tt[i];
        tt[i]->has_elem_type = 1;
        tt[i]->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
        tt[i]->shape = sh[i];
        for (int j = 0; j < 2; j++) {
            onnx__tensor_shape_proto__dimension__init(&d[i][j]);
            pd[i][j] = &d[i][j];
        }
        d[i][0].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
        d[i][0].dim_param = "N";
        d[i][1].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        d[i][1].dim_value = 2;
        sh[i]->n_dim = 2;
        sh[i]->dim = pd[i];
    }
    c->ins[0] = &c->vx;
    c->outs[0] = &c->vy;
    c->graph.n_input = 1;
    c->graph.input = c->ins;
    c->graph.n_output = 1;
    c->graph.output = c->outs;

    onnx__tensor_proto__init(&c->w);
    static int64_t wdims[1] = {2};
    c->w.name = "W";
    c->w.has_data_type = 1;
    c->w.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    c->w.n_dims = 1;
    c->w.dims = wdims;
    c->wdata[0] = 1.5f;
    c->wdata[1] = -2.0f;
    c->w.has_raw_data = 1;
    c->w.raw_data.data = (uint8_t *)c->wdata;
    c->w.raw_data.len = sizeof c->wdata;
    c->inits[0] = &c->w;
    c->graph.n_initializer = 1;
    c->graph.initializer = c->inits;

    for (int i = 0; i < 2; i++) {
        onnx__node_proto__init(&c->node[i]);
        onnx__attribute_proto__init(&c->attr[i]);
        c->nodes[i] = &c->node[i];
        c->attrs[i] = &c->attr[i];
    }
    c->node_in[0][0] = "X";
    c->node_in[0][1] = "W";
    c->node_out[0][0] = "Y";
    c->node[0].name = "add0";
    c->node[0].op_type = "Add";
    c->node[0].n_input = 2;
    c->node[0].input = c->node_in[0];
    c->node[0].n_output = 1;
    c->node[0].output = c->node_out[0];
    c->graph.n_node = 1;
    c->graph.node = c->nodes;
    onnx__string_string_entry_proto__init(&c->ext);
    c->exts[0] = &c->ext;
}

/* Packs and opens; *bytes (may be NULL) receives the packed model. */
static pf_status craft_open(craft *c, pf_onnx_model **m, unsigned char **bytes, size_t *len)
{
    size_t n = onnx__model_proto__get_packed_size(&c->model);
    unsigned char *buf = malloc(n ? n : 1);
    size_t packed = onnx__model_proto__pack(&c->model, buf);
    CHECK_EQ_INT(packed, n);
    pf_status st = pf_onnx_open_memory(buf, n, "crafted.onnx", m);
    if (bytes) {
        *bytes = buf;
        *len = n;
    } else {
        free(buf);
    }
    return st;
}

/* Opens and expects status `want` with every fragment in the message. */
static void expect_refusal(craft *c, pf_status want, const char *const *fragments, int line)
{
    pf_onnx_model *m = (pf_onnx_model *)&m;
    pf_status st = craft_open(c, &m, NULL, NULL);
    pf_test_checks++;
    int ok = st == want && m == NULL && strstr(pf_last_error(), "crafted.onnx");
    for (const char *const *f = fragments; ok && *f; f++) ok = strstr(pf_last_error(), *f) != NULL;
    if (!ok) {
        pf_test_failed_checks++;
        pf_test_case_failed = 1;
        fprintf(stderr, "  line %d: expected %s with the right message, got %s: %s\n", line,
                pf_status_str(want), pf_status_str(st), pf_last_error());
    }
    if (st == PF_OK) pf_onnx_close(&m);
}
#define EXPECT_REFUSAL(c, want, ...) \
    do { \
        const char *const frags_[] = {__VA_ARGS__, NULL}; \
        expect_refusal((c), (want), frags_, __LINE__); \
    } while (0)

static void test_crafted_valid(void)
{
    craft c;
    craft_init(&c);
    pf_onnx_model *m = NULL;
    CHECK_OK(craft_open(&c, &m, NULL, NULL));
    REQUIRE(m);
    CHECK_EQ_INT(check_view(m), 0);
    CHECK(!strcmp(m->name, "crafted.onnx"));
    CHECK_EQ_INT(m->ir_version, 8);
    CHECK_EQ_INT(m->opset, 13);
    CHECK(!strcmp(m->producer_name, "pixflow-test") && !strcmp(m->graph_name, "crafted"));
    REQUIRE(m->n_inputs == 1 && m->n_outputs == 1 && m->n_initializers == 1);
    /* The symbolic batch dimension keeps its name. */
    const pf_onnx_value_info *x = &m->inputs[0];
    REQUIRE(x->ndim == 2);
    CHECK(x->dims[0].value == -1 && x->dims[0].param && !strcmp(x->dims[0].param, "N"));
    CHECK(x->dims[1].value == 2 && x->dims[1].param == NULL);
    CHECK(!x->is_initializer);
    const pf_onnx_tensor *w = pf_onnx_find_initializer(m, "W");
    REQUIRE(w && w->dtype == PF_ONNX_FLOAT && w->ndim == 1 && w->dims[0] == 2);
    CHECK_EQ_INT(w->nbytes, 8);
    const float *wf = w->data;
    CHECK(wf[0] == 1.5f && wf[1] == -2.0f);
    CHECK(pf_onnx_find_initializer(m, "X") == NULL);
    int slot = 7;
    CHECK(pf_onnx_find_producer(m, "Y", &slot) == 0 && slot == 0);
    CHECK(pf_onnx_find_producer(m, "X", &slot) == -1 && slot == -1);
    pf_onnx_close(&m);
    CHECK(m == NULL);

    /* "ai.onnx" is the default domain; other domains are kept; an initializer
     * listed as a graph input (IR 3 style) is marked. */
    craft_init(&c);
    c.opset[0].domain = "ai.onnx";
    c.opset[1].domain = "com.example";
    c.opset[1].has_version = 1;
    c.opset[1].version = 2;
    c.model.n_opset_import = 2;
    c.node[0].domain = "com.example";
    Onnx__ValueInfoProto vw;
    Onnx__TypeProto tw;
    Onnx__TypeProto__Tensor ttw;
    onnx__value_info_proto__init(&vw);
    onnx__type_proto__init(&tw);
    onnx__type_proto__tensor__init(&ttw);
    vw.name = "W";
    vw.type = &tw;
    tw.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tw.tensor_type = &ttw;
    ttw.has_elem_type = 1;
    ttw.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    c.ins[1] = &vw;
    c.graph.n_input = 2;
    CHECK_OK(craft_open(&c, &m, NULL, NULL));
    REQUIRE(m);
    CHECK_EQ_INT(check_view(m), 0);
    CHECK(m->n_opsets == 2 && !strcmp(m->opsets[0].domain, "") &&
          !strcmp(m->opsets[1].domain, "com.example"));
    CHECK(!strcmp(m->nodes[0].domain, "com.example") && m->nodes[0].opset == 2);
    CHECK(m->inputs[1].is_initializer && m->inputs[1].ndim == -1);
    pf_onnx_close(&m);

    /* The same initializer declared INT64 as a graph input: refused. */
    ttw.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "graph input 1 'W' is declared INT64",
                   "initializer is FLOAT");
}

static void test_crafted_external_data(void)
{
    craft c;
    craft_init(&c);
    c.w.has_raw_data = 0;
    c.w.has_data_location = 1;
    c.w.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    c.ext.key = "location";
    c.ext.value = "weights.bin";
    c.w.n_external_data = 1;
    c.w.external_data = c.exts;
    EXPECT_REFUSAL(&c, PF_ERR_UNSUPPORTED, "initializer 0 'W'", "external data in 'weights.bin'",
                   "not supported");
    /* external_data entries without data_location: refused the same way. */
    c.w.has_data_location = 0;
    EXPECT_REFUSAL(&c, PF_ERR_UNSUPPORTED, "initializer 0 'W'", "external data");
    /* data_location EXTERNAL alone, in a Constant's tensor attribute. */
    craft_init(&c);
    c.w.has_data_location = 1;
    c.w.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    c.w.has_raw_data = 0;
    c.w.name = "";
    c.graph.n_initializer = 0;
    c.node[1] = c.node[0];
    c.node[0].op_type = "Constant";
    c.node[0].name = "const0";
    c.node[0].n_input = 0;
    c.node_out[1][0] = "W";
    c.node[0].output = c.node_out[1];
    c.attr[0].name = "value";
    c.attr[0].has_type = 1;
    c.attr[0].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    c.attr[0].t = &c.w;
    c.node[0].n_attribute = 1;
    c.node[0].attribute = c.attrs;
    c.graph.n_node = 2;
    EXPECT_REFUSAL(&c, PF_ERR_UNSUPPORTED, "node 0 'const0' (Constant): attribute 'value' tensor",
                   "external data");
    /* Control: the same Constant with its data inside opens. */
    c.w.has_data_location = 0;
    c.w.has_raw_data = 1;
    pf_onnx_model *m = NULL;
    CHECK_OK(craft_open(&c, &m, NULL, NULL));
    REQUIRE(m);
    CHECK_EQ_INT(check_view(m), 0);
    const pf_onnx_tensor *t = NULL;
    CHECK_OK(pf_onnx_attr_tensor(m, &m->nodes[0], "value", &t));
    REQUIRE(t && t->nbytes == 8);
    CHECK(((const float *)t->data)[1] == -2.0f);
    CHECK(pf_onnx_find_producer(m, "W", NULL) == 0);
    pf_onnx_close(&m);
}

static void test_crafted_tensor_data(void)
{
    craft c;
    craft_init(&c);
    c.w.raw_data.len = 7;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT,
                   "initializer 0 'W' (FLOAT, dims [2]) has 7 bytes of raw_data, expected 8");
    craft_init(&c);
    c.w.has_raw_data = 0;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "initializer 0 'W'", "has 2 elements but no data");
    /* Typed fields: float_data direct, wrong count, wrong field, two fields. */
    craft_init(&c);
    c.w.has_raw_data = 0;
    c.w.n_float_data = 2;
    c.w.float_data = c.wdata;
    pf_onnx_model *m = NULL;
    CHECK_OK(craft_open(&c, &m, NULL, NULL));
    if (m) CHECK(((const float *)m->initializers[0].data)[0] == 1.5f);
    pf_onnx_close(&m);
    c.w.n_float_data = 3;
    float three[3] = {1, 2, 3};
    c.w.float_data = three;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "has 3 values in float_data, expected 2");
    c.w.n_float_data = 0;
    int64_t i64[2] = {1, 2};
    c.w.n_int64_data = 2;
    c.w.int64_data = i64;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "data type FLOAT but stores its values in int64_data");
    c.w.n_float_data = 2;
    c.w.float_data = c.wdata;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "stores values in both float_data and int64_data");
    /* Negative dims, unknown type, no type. */
    craft_init(&c);
    int64_t neg[2] = {-1, 2};
    c.w.n_dims = 2;
    c.w.dims = neg;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "negative dimension: dims [-1,2]");
    craft_init(&c);
    c.w.data_type = 99;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "unknown data type 99");
    c.w.has_data_type = 0;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "initializer 0 'W' has no data type");
    /* Element count overflow: dims whose product passes 2^63. */
    craft_init(&c);
    int64_t huge[3] = {1ll << 32, 1ll << 32, 2};
    c.w.n_dims = 3;
    c.w.dims = huge;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "overflow");
    /* Types outside the supported set. */
    craft_init(&c);
    c.w.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__UINT16;
    c.w.raw_data.len = 4;
    EXPECT_REFUSAL(&c, PF_ERR_UNSUPPORTED, "initializer 0 'W' has data type UINT16: not supported");
    c.w.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__STRING;
    EXPECT_REFUSAL(&c, PF_ERR_UNSUPPORTED, "data type STRING");
    craft_init(&c);
    c.w.data_type = 17; /* FLOAT8E4M3FN: newer than Debian's schema, valid ONNX */
    EXPECT_REFUSAL(&c, PF_ERR_UNSUPPORTED, "initializer 0 'W' has data type FLOAT8E4M3FN: not "
                   "supported");
    craft_init(&c);
    c.ttx.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64;
    EXPECT_REFUSAL(&c, PF_ERR_UNSUPPORTED, "graph input 0 'X' has data type COMPLEX64");
    c.ttx.elem_type = 23;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "graph input 0 'X' has unknown data type 23");
    /* BOOL in raw_data: one byte 0 or 1 per element. */
    craft_init(&c);
    unsigned char bools[2] = {1, 2};
    c.w.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
    c.w.raw_data.data = bools;
    c.w.raw_data.len = 2;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "initializer 0 'W': BOOL element 1 is 2 in raw_data");
    bools[1] = 0;
    pf_onnx_model *mb = NULL;
    CHECK_OK(craft_open(&c, &mb, NULL, NULL));
    pf_onnx_close(&mb);
}

/* FLOAT16, INT8, UINT8 and BOOL arrive widened in int32_data: narrowed, range-checked. */
static void test_crafted_narrowing(void)
{
    static const struct {
        int dtype;
        int32_t v[2];
        unsigned char bytes[4]; /* expected little-endian result */
        size_t nbytes;
    } ok[] = {
        {ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16, {0x3C00, 0xC000}, {0x00, 0x3C, 0x00, 0xC0}, 4},
        {ONNX__TENSOR_PROTO__DATA_TYPE__INT8, {-128, 127}, {0x80, 0x7F}, 2},
        {ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, {0, 255}, {0x00, 0xFF}, 2},
        {ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, {1, 0}, {1, 0}, 2},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        craft c;
        craft_init(&c);
        int32_t vals[2] = {ok[i].v[0], ok[i].v[1]};
        c.w.data_type = ok[i].dtype;
        c.w.has_raw_data = 0;
        c.w.n_int32_data = 2;
        c.w.int32_data = vals;
        pf_onnx_model *m = NULL;
        CHECK_OK(craft_open(&c, &m, NULL, NULL));
        if (!m) continue;
        const pf_onnx_tensor *w = &m->initializers[0];
        CHECK_EQ_INT(w->dtype, ok[i].dtype);
        CHECK_EQ_INT(w->nbytes, ok[i].nbytes);
        CHECK(w->nbytes == ok[i].nbytes && !memcmp(w->data, ok[i].bytes, ok[i].nbytes));
        CHECK_EQ_INT(check_view(m), 0);
        pf_onnx_close(&m);
        /* One past the range. */
        vals[1] = ok[i].dtype == ONNX__TENSOR_PROTO__DATA_TYPE__INT8 ? 128
                  : ok[i].dtype == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL ? 2
                  : ok[i].dtype == ONNX__TENSOR_PROTO__DATA_TYPE__UINT8 ? 256 : 65536;
        EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "int32_data[1]", "is out of range for",
                       pf_onnx_dtype_name(ok[i].dtype));
    }
    /* FLOAT16 in raw_data: kept as stored. */
    craft c;
    craft_init(&c);
    uint16_t h[2] = {0x3C00, 0x7BFF};
    c.w.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16;
    c.w.raw_data.data = (uint8_t *)h;
    c.w.raw_data.len = 4;
    pf_onnx_model *m = NULL;
    CHECK_OK(craft_open(&c, &m, NULL, NULL));
    if (m) {
        const uint16_t *d = m->initializers[0].data;
        CHECK(d[0] == 0x3C00 && d[1] == 0x7BFF);
        pf_onnx_close(&m);
    }
}

/* A conformance model with FLOAT16 constants, when the corpus has one. */
static void test_float16_model(void)
{
    if (!float16_model) {
        printf("  no conformance model has FLOAT16 initializers or constants (crafted ones are "
               "tested in test_crafted_narrowing)\n");
        return;
    }
    pf_onnx_model *m = NULL;
    CHECK_OK(pf_onnx_open(float16_model, &m));
    REQUIRE(m);
    int found = 0;
    for (size_t i = 0; i < m->n_initializers; i++)
        if (m->initializers[i].dtype == PF_ONNX_FLOAT16) {
            found++;
            CHECK_EQ_INT(m->initializers[i].nbytes, 2 * (size_t)m->initializers[i].numel);
        }
    for (size_t k = 0; k < m->n_nodes; k++)
        for (size_t a = 0; a < m->nodes[k].n_attrs; a++) {
            const pf_onnx_tensor *t = m->nodes[k].attrs[a].t;
            if (t && t->dtype == PF_ONNX_FLOAT16) {
                found++;
                CHECK_EQ_INT(t->nbytes, 2 * (size_t)t->numel);
            }
        }
    printf("  %s: %d FLOAT16 constants\n", float16_model, found);
    CHECK(found > 0);
    pf_onnx_close(&m);
}

static void test_crafted_graph_rules(void)
{
    craft c;
    craft_init(&c);
    c.node_in[0][1] = "Z";
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "node 0 'add0' (Add): input 1 'Z' is not a graph input, an "
                   "initializer or the output of an earlier node");
    /* Optional inputs may be "". */
    craft_init(&c);
    c.node_in[0][1] = "";
    pf_onnx_model *m = NULL;
    CHECK_OK(craft_open(&c, &m, NULL, NULL));
    pf_onnx_close(&m);
    /* Order: node 0 reads what node 1 writes. */
    craft_init(&c);
    c.node[1] = c.node[0];
    c.node[1].name = "relu1";
    c.node[1].op_type = "Relu";
    c.node[1].n_input = 1;
    c.node_out[1][0] = "T";
    c.node[1].output = c.node_out[1];
    c.node_in[0][1] = "T";
    c.graph.n_node = 2;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "node 0 'add0' (Add): input 1 'T' is written by node 1 "
                   "'relu1' (Relu), which comes later");
    /* Two writers of one name; a node writing a graph input; its own output. */
    c.node_out[1][0] = "Y";
    c.node_in[0][1] = "W";
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT,
                   "node 1 'relu1' (Relu): output 'Y' is also written by node 0");
    c.node_out[1][0] = "X";
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "output 'X' has the name of graph input 0");
    c.node_out[1][0] = "W";
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "output 'W' has the name of initializer 0");
    craft_init(&c);
    c.node_in[0][1] = "Y";
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "input 1 'Y' is its own output");
    /* Node without op_type, in a domain not imported. */
    craft_init(&c);
    c.node[0].op_type = "";
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "node 0 'add0' () has no op_type");
    craft_init(&c);
    c.node[0].domain = "com.nowhere";
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "node 0 'add0' (Add) is in domain 'com.nowhere', which the "
                   "model does not import");
    /* Graph outputs: unwritten, duplicated, untyped, missing. */
    craft_init(&c);
    c.vy.name = "Q";
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "graph output 0 'Q' is not written by any node");
    craft_init(&c);
    c.vy.type = NULL;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "graph output 0 'Y' has no type");
    craft_init(&c);
    c.graph.n_output = 0;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "the graph has no outputs");
    /* Duplicate names: initializers, graph inputs. */
    craft_init(&c);
    Onnx__TensorProto *two[2] = {&c.w, &c.w};
    c.graph.initializer = two;
    c.graph.n_initializer = 2;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "initializer 1 'W' has the name of initializer 0");
    craft_init(&c);
    c.ins[1] = &c.vx;
    c.graph.n_input = 2;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "graph input 1 'X' has the name of graph input 0");
    /* Dims: negative refused, a sequence input refused as non-tensor. */
    craft_init(&c);
    c.dx[1].dim_value = -3;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "graph input 0 'X': dimension 1 is -3");
    craft_init(&c);
    Onnx__TypeProto__Sequence seq;
    onnx__type_proto__sequence__init(&seq);
    seq.elem_type = &c.ty;
    c.tx.value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    c.tx.sequence_type = &seq;
    EXPECT_REFUSAL(&c, PF_ERR_UNSUPPORTED, "graph input 0 'X' is a sequence (non-tensor type)");
    /* Model level: IR version, opsets, functions, sparse initializers, no graph. */
    craft_init(&c);
    c.model.has_ir_version = 0;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "has no IR version");
    c.model.has_ir_version = 1;
    c.model.ir_version = 11;
    EXPECT_REFUSAL(&c, PF_ERR_UNSUPPORTED, "IR version 11, newer than this reader knows");
    craft_init(&c);
    c.opset[0].version = 6;
    EXPECT_REFUSAL(&c, PF_ERR_UNSUPPORTED, "uses opset 6 of the default ONNX domain", "7..17");
    c.opset[0].version = 18;
    EXPECT_REFUSAL(&c, PF_ERR_UNSUPPORTED, "uses opset 18 of the default ONNX domain");
    c.opset[0].version = 17;
    CHECK_OK(craft_open(&c, &m, NULL, NULL));
    pf_onnx_close(&m);
    /* Only another domain imported: allowed (training ops do this), but then
     * a default-domain node is not imported. */
    c.opset[0].domain = "ai.onnx.ml";
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "node 0 'add0' (Add) is in domain '', which the model "
                   "does not import");
    c.node[0].domain = "ai.onnx.ml";
    CHECK_OK(craft_open(&c, &m, NULL, NULL));
    if (m) CHECK_EQ_INT(m->opset, 0);
    pf_onnx_close(&m);
    c.model.n_opset_import = 0;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "imports no operator set");
    craft_init(&c);
    c.opset[1] = c.opset[0];
    c.opset[1].version = 12;
    c.model.n_opset_import = 2;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "imports domain '' twice (versions 13 and 12)");
    craft_init(&c);
    Onnx__FunctionProto fn, *fns[1] = {&fn};
    onnx__function_proto__init(&fn);
    fn.name = "MyFn";
    c.model.n_functions = 1;
    c.model.functions = fns;
    EXPECT_REFUSAL(&c, PF_ERR_UNSUPPORTED, "model-local functions", "'MyFn'");
    craft_init(&c);
    Onnx__SparseTensorProto sp, *sps[1] = {&sp};
    onnx__sparse_tensor_proto__init(&sp);
    c.graph.n_sparse_initializer = 1;
    c.graph.sparse_initializer = sps;
    EXPECT_REFUSAL(&c, PF_ERR_UNSUPPORTED, "sparse initializers");
    craft_init(&c);
    c.model.graph = NULL;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "has no graph");
}

static void test_crafted_attributes(void)
{
    craft c;
    craft_init(&c);
    c.node[0].n_attribute = 2;
    c.node[0].attribute = c.attrs;
    int64_t ints[3] = {1, -2, 3};
    c.attr[0].name = "axes";
    c.attr[0].has_type = 1;
    c.attr[0].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    c.attr[0].n_ints = 3;
    c.attr[0].ints = ints;
    c.attr[1].name = "mode";
    c.attr[1].has_type = 1;
    c.attr[1].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    c.attr[1].has_s = 1;
    c.attr[1].s.data = (uint8_t *)"linear";
    c.attr[1].s.len = 6;
    pf_onnx_model *m = NULL;
    CHECK_OK(craft_open(&c, &m, NULL, NULL));
    if (m) {
        const pf_onnx_node *n = &m->nodes[0];
        const int64_t *v;
        size_t cnt;
        CHECK_OK(pf_onnx_attr_ints(m, n, "axes", &v, &cnt));
        CHECK(cnt == 3 && v[0] == 1 && v[1] == -2 && v[2] == 3);
        const char *s = NULL;
        CHECK_OK(pf_onnx_attr_string(m, n, "mode", "nearest", &s));
        CHECK(s && !strcmp(s, "linear"));
        CHECK_OK(pf_onnx_attr_string(m, n, "absent", "nearest", &s));
        CHECK(s && !strcmp(s, "nearest"));
        float f = 0;
        CHECK_EQ_INT(pf_onnx_attr_float(m, n, "mode", 1.0f, &f), PF_ERR_FORMAT);
        CHECK(strstr(pf_last_error(), "node 0 'add0' (Add): attribute 'mode' is STRING, expected "
                     "FLOAT") != NULL);
        pf_onnx_close(&m);
    }
    /* No type field (IR 1 style): inferred from the one value set. */
    c.attr[0].has_type = 0;
    CHECK_OK(craft_open(&c, &m, NULL, NULL));
    if (m) CHECK(m->nodes[0].attrs[0].type == PF_ONNX_ATTR_INTS);
    pf_onnx_close(&m);
    c.attr[0].has_i = 1;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "attribute 'axes' has no type and 2 value fields");
    c.attr[0].has_i = 0;
    c.attr[0].has_type = 1;
    /* Duplicates, unnamed, graph-valued, other refused types, function references. */
    c.attr[1].name = "axes";
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "node 0 'add0' (Add) has two attributes named 'axes'");
    c.attr[1].name = "";
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "node 0 'add0' (Add): attribute 1 has no name");
    c.attr[1].name = "then_branch";
    c.attr[1].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    Onnx__GraphProto sub;
    onnx__graph_proto__init(&sub);
    c.attr[1].has_s = 0;
    c.attr[1].g = &sub;
    EXPECT_REFUSAL(&c, PF_ERR_UNSUPPORTED, "attribute 'then_branch' of type GRAPH",
                   "graph attributes are not supported");
    c.attr[1].g = NULL;
    c.attr[1].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR;
    EXPECT_REFUSAL(&c, PF_ERR_UNSUPPORTED, "attribute 'then_branch' of type SPARSE_TENSOR");
    c.attr[1].type = 42;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "attribute 'then_branch' has unknown type 42");
    c.attr[1].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "TENSOR attribute 'then_branch' holds no tensor");
    c.attr[1].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    c.attr[1].ref_attr_name = "alpha";
    EXPECT_REFUSAL(&c, PF_ERR_FORMAT, "refers to attribute 'alpha' of an enclosing function");
    /* STRINGS and FLOATS. */
    c.attr[1].ref_attr_name = NULL;
    c.attr[1].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
    ProtobufCBinaryData strs[2] = {{5, (uint8_t *)"Sigmo"}, {4, (uint8_t *)"Tanh"}};
    c.attr[1].n_strings = 2;
    c.attr[1].strings = strs;
    c.attr[0].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    float fl[2] = {0.5f, -1.0f};
    c.attr[0].n_ints = 0;
    c.attr[0].n_floats = 2;
    c.attr[0].floats = fl;
    CHECK_OK(craft_open(&c, &m, NULL, NULL));
    if (m) {
        const pf_onnx_attr *a = pf_onnx_node_attr(&m->nodes[0], "then_branch");
        CHECK(a && a->type == PF_ONNX_ATTR_STRINGS && a->n == 2 && !strcmp(a->strings[0], "Sigmo")
              && !strcmp(a->strings[1], "Tanh"));
        const float *fv;
        size_t cnt;
        CHECK_OK(pf_onnx_attr_floats(m, &m->nodes[0], "axes", &fv, &cnt));
        CHECK(cnt == 2 && fv[0] == 0.5f && fv[1] == -1.0f);
        pf_onnx_close(&m);
    }
}

/* Appends bytes and varints to a growing buffer. */
typedef struct wbuf {
    unsigned char *p;
    size_t n, cap;
} wbuf;

static void wb_byte(wbuf *b, unsigned char c)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 256;
        b->p = realloc(b->p, b->cap);
    }
    b->p[b->n++] = c;
}

static void wb_varint(wbuf *b, uint64_t v)
{
    do {
        unsigned char c = v & 0x7f;
        v >>= 7;
        wb_byte(b, (unsigned char)(c | (v ? 0x80 : 0)));
    } while (v);
}

static size_t varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >>= 7) n++;
    return n;
}

/* 100000 nested TypeProtos in a graph input: protobuf-c alone overflows the
 * stack on this (it recurses without limit); the reader must refuse it. Each
 * message holds only the next one, so the bytes are every level's key and
 * length, outermost first, with lengths summed from the innermost out. */
static void test_nesting_bomb(void)
{
    enum { LEVELS = 2 * 100000 + 3 };
    unsigned *field = malloc(LEVELS * sizeof *field);
    uint64_t *len = malloc(LEVELS * sizeof *len);
    uint64_t total = 0; /* the innermost TypeProto is empty */
    for (size_t i = 0; i < LEVELS; i++) {
        /* Inside out: TypeProto.Sequence.elem_type (1) and TypeProto.sequence_type
         * (4) alternate, then ValueInfoProto.type (2), GraphProto.input (11),
         * ModelProto.graph (7). */
        field[i] = i < LEVELS - 3 ? (i % 2 == 0 ? 1 : 4) : i == LEVELS - 3 ? 2
                   : i == LEVELS - 2 ? 11 : 7;
        len[i] = total;
        total += varint_size((uint64_t)field[i] << 3 | 2) + varint_size(total) + 0;
    }
    wbuf b = {0};
    for (size_t i = LEVELS; i-- > 0;) {
        wb_varint(&b, (uint64_t)field[i] << 3 | 2);
        wb_varint(&b, len[i]);
    }
    CHECK_EQ_INT(b.n, total);
    pf_onnx_model *m = (pf_onnx_model *)&m;
    CHECK_EQ_INT(pf_onnx_open_memory(b.p, b.n, "bomb.onnx", &m), PF_ERR_FORMAT);
    CHECK(m == NULL);
    CHECK(strstr(pf_last_error(), "bomb.onnx") && strstr(pf_last_error(), "nested deeper than"));
    printf("  %zu bytes of nesting: %s\n", b.n, pf_last_error());
    free(b.p);
    free(field);
    free(len);
}

/* 1.5 M empty NodeProtos (3 MB): protobuf-c would allocate ~150 MB of
 * structs; the cap (8x + 64 MiB) refuses it first. */
static void test_memory_cap(void)
{
    wbuf g = {0}, mb = {0};
    for (int i = 0; i < 1500000; i++) {
        wb_byte(&g, 0x0a); /* GraphProto.node, length 0 */
        wb_byte(&g, 0x00);
    }
    wb_varint(&mb, 7 << 3 | 2); /* ModelProto.graph */
    wb_varint(&mb, g.n);
    for (size_t i = 0; i < g.n; i++) wb_byte(&mb, g.p[i]);
    pf_onnx_model *m = (pf_onnx_model *)&m;
    pf_status st = pf_onnx_open_memory(mb.p, mb.n, "many.onnx", &m);
    CHECK_EQ_INT(st, PF_ERR_NOMEM);
    CHECK(m == NULL);
    CHECK(strstr(pf_last_error(), "needs more than") != NULL);
    printf("  %s\n", pf_last_error());
    free(g.p);
    free(mb.p);
}

static void test_tensor_files_crafted(void)
{
    Onnx__TensorProto t;
    onnx__tensor_proto__init(&t);
    int64_t dims[2] = {1, 3};
    int32_t vals[3] = {0x3C00, 0x4000, 0xBC00};
    t.name = "input";
    t.has_data_type = 1;
    t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16;
    t.n_dims = 2;
    t.dims = dims;
    t.n_int32_data = 3;
    t.int32_data = vals;
    unsigned char buf[256];
    size_t n = onnx__tensor_proto__pack(&t, buf);
    pf_onnx_tensor_data d;
    CHECK_OK(pf_onnx_read_tensor_memory(buf, n, "t.pb", &d));
    CHECK(d.dtype == PF_ONNX_FLOAT16 && d.ndim == 2 && d.dims[0] == 1 && d.dims[1] == 3);
    CHECK(d.numel == 3 && d.nbytes == 6 && !strcmp(d.name, "input"));
    uint16_t h[3];
    if (d.data) memcpy(h, d.data, 6);
    CHECK(d.data && h[0] == 0x3C00 && h[1] == 0x4000 && h[2] == 0xBC00);
    pf_onnx_tensor_data_free(&d);
    pf_onnx_tensor_data_free(&d);
    pf_onnx_tensor_data_free(NULL);
    /* Any fixed-width type is read from a file (UINT16 here), STRING is not. */
    t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__UINT16;
    n = onnx__tensor_proto__pack(&t, buf);
    CHECK_OK(pf_onnx_read_tensor_memory(buf, n, "t.pb", &d));
    CHECK(d.dtype == PF_ONNX_UINT16 && d.nbytes == 6);
    pf_onnx_tensor_data_free(&d);
    t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__STRING;
    t.n_int32_data = 0;
    n = onnx__tensor_proto__pack(&t, buf);
    CHECK_EQ_INT(pf_onnx_read_tensor_memory(buf, n, "s.pb", &d), PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "ONNX tensor 's.pb': the tensor has data type STRING"));
    /* Every truncation of a real tensor file fails cleanly or reads consistently. */
    t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16;
    t.n_int32_data = 3;
    n = onnx__tensor_proto__pack(&t, buf);
    int failed = 0;
    for (size_t len = 0; len < n; len++) {
        pf_status st = pf_onnx_read_tensor_memory(buf, len, "cut.pb", &d);
        if (st != PF_OK) {
            failed++;
            CHECK(d.data == NULL && d.name == NULL);
        } else {
            CHECK_EQ_INT(d.nbytes, (size_t)d.numel * pf_onnx_dtype_size((int)d.dtype));
        }
        pf_onnx_tensor_data_free(&d);
    }
    CHECK(failed > 0);
    /* Files: missing, a directory. */
    CHECK_EQ_INT(pf_onnx_read_tensor_file("/nonexistent/input_0.pb", &d), PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "/nonexistent/input_0.pb") != NULL);
    CHECK_EQ_INT(pf_onnx_read_tensor_file("/", &d), PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "not a regular file") != NULL);
}

static void test_open_errors(void)
{
    pf_onnx_model *m = (pf_onnx_model *)&m;
    CHECK_EQ_INT(pf_onnx_open("/nonexistent/model.onnx", &m), PF_ERR_IO);
    CHECK(m == NULL);
    CHECK(strstr(pf_last_error(), "'/nonexistent/model.onnx'") != NULL);
    CHECK_EQ_INT(pf_onnx_open("/tmp", &m), PF_ERR_IO);
    CHECK_EQ_INT(pf_onnx_open(NULL, &m), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_onnx_open("x", NULL), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_onnx_open_memory("", 0, "empty.onnx", &m), PF_ERR_FORMAT);
    CHECK(strstr(pf_last_error(), "ONNX model 'empty.onnx': is empty") != NULL);
    /* Text is not protobuf. */
    const char *txt = "ir_version: 8\nproducer_name: \"x\"\n";
    CHECK_EQ_INT(pf_onnx_open_memory(txt, strlen(txt), "text.onnx", &m), PF_ERR_FORMAT);
    CHECK(strstr(pf_last_error(), "text.onnx") != NULL);
    CHECK(pf_onnx_available());
    CHECK(!strcmp(pf_onnx_dtype_name(PF_ONNX_FLOAT16), "FLOAT16"));
    CHECK(!strcmp(pf_onnx_dtype_name(99), "?") && !strcmp(pf_onnx_dtype_name(-1), "?"));
    CHECK_EQ_INT(pf_onnx_dtype_size(PF_ONNX_COMPLEX128), 16);
    CHECK_EQ_INT(pf_onnx_dtype_size(PF_ONNX_STRING), 0);
    CHECK(!strcmp(pf_onnx_attr_type_name(5), "GRAPH"));
}

/* --- corruption of real models ---------------------------------------------------------- */

/* Seeds: real models that open. PyTorch's exports in the corpus import opset 6,
 * which the reader refuses; test_operator_conv (Conv with weights, 7.7 KB) is
 * used with its opset import raised to 9 (its one byte "42 02 10 06" at the
 * end), which leaves Conv's meaning unchanged. */
static const struct {
    const char *path;
    int patch_opset;
} seeds[] = {
    {"pytorch-operator/test_operator_conv/model.onnx", 1},
    {"node/test_layer_normalization_3d_axis_negative_3_epsilon_expanded/model.onnx", 0},
    {"simple/test_sequence_model3/model.onnx", 0},
    {"node/test_conv_with_strides_padding/model.onnx", 0},
};
#define N_SEEDS (sizeof seeds / sizeof seeds[0])

static unsigned char *load_seed(size_t i, size_t *size)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", testdata_dir(), seeds[i].path);
    unsigned char *b = file_exists(path) ? slurp(path, size) : NULL;
    if (!b) {
        printf("  %s missing: skipped\n", path);
        return NULL;
    }
    if (seeds[i].patch_opset) {
        int patched = *size >= 4 && !memcmp(b + *size - 4, "\x42\x02\x10\x06", 4);
        CHECK(patched);
        if (!patched) {
            free(b);
            return NULL;
        }
        b[*size - 1] = 9;
    }
    return b;
}

/* Top-level field boundaries of a ModelProto, and whether the bytes before
 * each hold a graph (7) and an opset import (8): a cut there leaves a valid
 * shorter message, which may legitimately open. */
static int cut_may_open(const unsigned char *p, size_t len)
{
    size_t i = 0;
    int graph = 0, opset = 0;
    while (i < len) {
        uint64_t key = 0, v = 0;
        int s = 0;
        while (i < len && (p[i] & 0x80)) key |= (uint64_t)(p[i++] & 0x7f) << (7 * s++);
        if (i >= len) return 0;
        key |= (uint64_t)p[i++] << (7 * s);
        unsigned wt = key & 7;
        if (wt == 0) {
            while (i < len && (p[i] & 0x80)) i++;
            if (i++ >= len) return 0;
        } else if (wt == 2) {
            s = 0;
            while (i < len && (p[i] & 0x80)) v |= (uint64_t)(p[i++] & 0x7f) << (7 * s++);
            if (i >= len) return 0;
            v |= (uint64_t)p[i++] << (7 * s);
            if (v > len - i) return 0;
            i += v;
        } else {
            return 0;
        }
        graph |= (key >> 3) == 7;
        opset |= (key >> 3) == 8;
    }
    return graph && opset;
}

static void test_truncations(void)
{
    for (size_t mi = 0; mi < N_SEEDS; mi++) {
        size_t size;
        unsigned char *full = load_seed(mi, &size);
        if (!full) continue;
        pf_onnx_model *m0 = NULL;
        CHECK_OK(pf_onnx_open_memory(full, size, "whole.onnx", &m0)); /* the seed opens */
        pf_onnx_close(&m0);
        int failed = 0, opened = 0, said_truncated = 0;
        for (size_t len = 0; len < size; len++) {
            /* A fresh copy of exactly len bytes, so ASan sees any read past it. */
            unsigned char *cut = malloc(len ? len : 1);
            memcpy(cut, full, len);
            pf_onnx_model *m = NULL;
            pf_status st = pf_onnx_open_memory(cut, len, "cut.onnx", &m);
            if (st == PF_OK) {
                opened++;
                CHECK(cut_may_open(full, len)); /* only at a boundary after graph and opset */
                CHECK_EQ_INT(check_view(m), 0);
                pf_onnx_close(&m);
            } else {
                failed++;
                CHECK(m == NULL && strstr(pf_last_error(), "cut.onnx"));
                CHECK(st == PF_ERR_FORMAT || st == PF_ERR_UNSUPPORTED);
                said_truncated += strstr(pf_last_error(), "truncated") != NULL;
            }
            free(cut);
        }
        printf("  %s: %zu truncations: %d refused (%d say 'truncated'), %d open (cut between "
               "top-level fields after graph and opset)\n", seeds[mi].path, size, failed,
               said_truncated, opened);
        CHECK(failed > 0 && said_truncated > (int)size / 2);
        free(full);
    }
}

static void test_mutations(void)
{
    pf_test_seed(0x0ecc0de);
    for (size_t mi = 0; mi < 2; mi++) {
        size_t size;
        unsigned char *full = load_seed(mi, &size);
        if (!full) continue;
        pf_onnx_model *m = NULL;
        CHECK_OK(pf_onnx_open_memory(full, size, "orig.onnx", &m)); /* the seed opens */
        pf_onnx_close(&m);
        int opened = 0, by_status[16] = {0};
        const int rounds = 1000;
        unsigned char *buf = malloc(size);
        for (int r = 0; r < rounds; r++) {
            memcpy(buf, full, size);
            int flips = (int)pf_test_rand_range(1, 4);
            for (int f = 0; f < flips; f++) {
                size_t at = (size_t)pf_test_rand_range(0, (int64_t)size - 1);
                if (pf_test_rand() & 1)
                    buf[at] ^= (unsigned char)(1u << pf_test_rand_range(0, 7));
                else
                    buf[at] = (unsigned char)pf_test_rand();
            }
            pf_clear_error();
            pf_status st = pf_onnx_open_memory(buf, size, "mutant.onnx", &m);
            if (st == PF_OK) {
                opened++;
                CHECK_EQ_INT(check_view(m), 0);
                pf_onnx_close(&m);
            } else {
                CHECK(m == NULL && strstr(pf_last_error(), "mutant.onnx"));
                CHECK(st == PF_ERR_FORMAT || st == PF_ERR_UNSUPPORTED || st == PF_ERR_NOMEM);
                by_status[-st & 15]++;
            }
        }
        printf("  %s: %d mutants (1-4 random bytes each): %d open, %d malformed, %d "
               "unsupported, %d over the memory cap\n", seeds[mi].path, rounds, opened,
               by_status[-PF_ERR_FORMAT], by_status[-PF_ERR_UNSUPPORTED], by_status[-PF_ERR_NOMEM]);
        free(buf);
        free(full);
    }
}

int main(void)
{
    pf_log_set_level(PF_LOG_WARN);
    PF_RUN(test_open_errors);
    PF_RUN(test_crafted_valid);
    PF_RUN(test_crafted_external_data);
    PF_RUN(test_crafted_tensor_data);
    PF_RUN(test_crafted_narrowing);
    PF_RUN(test_crafted_graph_rules);
    PF_RUN(test_crafted_attributes);
    PF_RUN(test_nesting_bomb);
    PF_RUN(test_memory_cap);
    PF_RUN(test_tensor_files_crafted);
    PF_RUN(test_conformance_corpus);
    PF_RUN(test_float16_model);
    PF_RUN(test_conv_attributes);
    PF_RUN(test_truncations);
    PF_RUN(test_mutations);
    return pf_test_finish();
}

#endif
