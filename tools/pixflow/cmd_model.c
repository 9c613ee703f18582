/* `pixflow model inspect|run|test`: look at a model, run it on .npy inputs,
 * check it against ONNX conformance data (cmd_model_test.c).
 *
 * Output names become file names in `run`: every byte outside
 * [A-Za-z0-9._-] is written as %XX (uppercase hex), so "logits/Softmax:0"
 * is saved as "logits%2FSoftmax%3A0.npy" and no name can escape the output
 * directory or collide with another (the escaping is reversible).
 *
 * JSON keys of `inspect --json`: file, format, opset, inputs/outputs
 * [{name, dtype, shape (-1 = batch), layout}], nodes_source, nodes, params,
 * flops, arena_bytes, naive_bytes, passes {folded, bn_folded, act_fused,
 * removed}, ops [{op, count}]. Of `run --json`: file, device, precision,
 * batch, run_ms (the first run: plans it), convs_tuned, convs_cached, outputs [{name,
 * file, dtype, shape, min, max, mean}].
 */
/* fork, pipe, strdup, strsignal, mkdir */
#define _POSIX_C_SOURCE 200809L

#include "cmd_model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "npy.h"

/* --- shared helpers (cmd_model.h) ----------------------------------------------------- */

bool model_dev_open(const char *spec, model_dev *d)
{
    memset(d, 0, sizeof *d);
    /* No --device: PIXFLOW_DEVICE, as for every command (pf_device_select(NULL) reads it and
     * names it in its errors), else the CPU. */
    if (!spec) {
        const char *env = getenv("PIXFLOW_DEVICE");
        if (!env || !*env) spec = "cpu";
    }
    if (pf_device_select(spec, &d->dev) != PF_OK) return false;
    d->cuda = pf_device_get_type(d->dev) == PF_DEVICE_CUDA;
    if (!d->cuda) return true;
    pf_stream_params sp = pf_stream_params_default();
    sp.device = d->dev;
    if (pf_stream_create(&sp, &d->stream) != PF_OK) return false;
    pf_allocator_params ap = pf_allocator_params_default();
    ap.device = d->dev;
    ap.domain = PF_MEM_DEVICE;
    ap.name = "model-cli";
    if (pf_allocator_create(&ap, &d->alloc) != PF_OK) {
        pf_stream_destroy(&d->stream);
        return false;
    }
    return true;
}

void model_dev_close(model_dev *d)
{
    if (d->stream) pf_stream_synchronize(d->stream);
    pf_allocator_destroy(&d->alloc);
    pf_stream_destroy(&d->stream);
    memset(d, 0, sizeof *d);
}

pf_status model_dev_alloc(model_dev *d, pf_dtype dt, int ndim, const int64_t *shape,
                          pf_tensor *out)
{
    pf_status st = pf_tensor_alloc(out, dt, ndim, shape, PF_LAYOUT_NONE, d->alloc, d->stream);
    /* Host outputs start zeroed so a kernel that skips an element shows. */
    if (st == PF_OK && !d->cuda && pf_tensor_nbytes(out)) memset(out->data, 0, pf_tensor_nbytes(out));
    return st;
}

pf_status model_dev_upload(model_dev *d, const pf_tensor *host, pf_tensor *out)
{
    if (!d->cuda) {
        pf_tensor_ref(out, host);
        return PF_OK;
    }
    pf_status st = pf_tensor_alloc(out, host->dtype, host->ndim, host->shape, host->layout,
                                   d->alloc, d->stream);
    size_t n = pf_tensor_nbytes(host);
    if (st == PF_OK && n) st = pf_memcpy_async(d->stream, out->data, host->data, n);
    if (st != PF_OK) pf_tensor_unref(out);
    return st;
}

pf_status model_dev_download(model_dev *d, const pf_tensor *src, pf_tensor *out)
{
    if (!d->cuda) {
        pf_tensor_ref(out, src);
        return PF_OK;
    }
    pf_status st = pf_tensor_alloc(out, src->dtype, src->ndim, src->shape, src->layout, NULL, NULL);
    size_t n = pf_tensor_nbytes(src);
    if (st == PF_OK && n) st = pf_memcpy_async(d->stream, out->data, src->data, n);
    if (st == PF_OK) st = pf_stream_synchronize(d->stream);
    if (st != PF_OK) pf_tensor_unref(out);
    return st;
}

bool model_parse_precision(const char *s, pf_nn_precision *out)
{
    if (!s || !strcmp(s, "fp32")) *out = PF_NN_FP32;
    else if (!strcmp(s, "fp16")) *out = PF_NN_FP16;
    else return false;
    return true;
}

static void print_shape(FILE *f, int ndim, const int64_t *shape)
{
    fputc('[', f);
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) fprintf(f, "%sN", i ? ", " : "");
        else fprintf(f, "%s%lld", i ? ", " : "", (long long)shape[i]);
    }
    fputc(']', f);
}

static void json_shape(cli_json *j, const char *key, int ndim, const int64_t *shape)
{
    cli_json_array_begin(j, key);
    for (int i = 0; i < ndim; i++) cli_json_int(j, NULL, (long long)shape[i]);
    cli_json_array_end(j);
}

/* --- inspect ----------------------------------------------------------------------------- */

static const cli_option inspect_options[] = {
    {"json", NULL, "print one JSON object (keys listed in cmd_model.c)"},
    {"help", NULL, "show this help"},
    {NULL, NULL, NULL},
};

static void inspect_usage(FILE *f)
{
    fprintf(f, "usage: pixflow model inspect FILE [--json]\n\n"
               "Loads an ONNX or TFLite model (format from its content) and prints its inputs\n"
               "and outputs (shape, dtype; N = symbolic batch), the histogram of the file's ops,\n"
               "parameters, FLOPs and the CPU fp32 arena at batch 1, and what the graph passes\n"
               "did (constants folded, batch norms folded, activations fused, nodes removed).\n\n"
               "options:\n");
    cli_print_options(f, inspect_options);
}

static void print_io_text(const char *title, const pf_model *m, int n, bool in)
{
    printf("%s:\n", title);
    for (int i = 0; i < n; i++) {
        pf_model_io io = in ? pf_model_input(m, i) : pf_model_output(m, i);
        printf("  %-24s %-4s ", io.name, pf_dtype_name(io.dtype));
        print_shape(stdout, io.ndim, io.shape);
        if (io.layout != PF_LAYOUT_NONE) printf(" %s", pf_layout_name(io.layout));
        printf("\n");
    }
}

static void json_io(cli_json *j, const char *key, const pf_model *m, int n, bool in)
{
    cli_json_array_begin(j, key);
    for (int i = 0; i < n; i++) {
        pf_model_io io = in ? pf_model_input(m, i) : pf_model_output(m, i);
        cli_json_object_begin(j, NULL);
        cli_json_string(j, "name", io.name);
        cli_json_string(j, "dtype", pf_dtype_name(io.dtype));
        json_shape(j, "shape", io.ndim, io.shape);
        cli_json_string(j, "layout", pf_layout_name(io.layout));
        cli_json_object_end(j);
    }
    cli_json_array_end(j);
}

static int cmd_inspect(int argc, char **argv)
{
    cli_args a;
    if (!cli_parse("model inspect", inspect_options, argc, argv, &a)) return CLI_EXIT_USAGE;
    if (cli_flag(inspect_options, &a, "help")) {
        inspect_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (a.positional_count != 1) {
        fprintf(stderr, "pixflow model inspect: expected one model file (see 'pixflow model "
                        "inspect --help')\n");
        return CLI_EXIT_USAGE;
    }
    const char *path = a.positional[0];
    pf_model *m = NULL;
    if (pf_model_load(path, &m) != PF_OK) {
        fprintf(stderr, "pixflow model inspect: %s\n", pf_last_error());
        return CLI_EXIT_FAIL;
    }
    pf_model_summary s;
    if (pf_model_get_summary(m, &s) != PF_OK) {
        fprintf(stderr, "pixflow model inspect: %s\n", pf_last_error());
        pf_model_free(&m);
        return CLI_EXIT_FAIL;
    }
    int nin = pf_model_num_inputs(m), nout = pf_model_num_outputs(m);
    if (cli_flag(inspect_options, &a, "json")) {
        cli_json j;
        cli_json_init(&j, stdout);
        cli_json_object_begin(&j, NULL);
        cli_json_string(&j, "file", path);
        cli_json_string(&j, "format", s.format);
        cli_json_int(&j, "opset", s.opset);
        json_io(&j, "inputs", m, nin, true);
        json_io(&j, "outputs", m, nout, false);
        cli_json_int(&j, "nodes_source", s.n_nodes_source);
        cli_json_int(&j, "nodes", s.n_nodes);
        cli_json_int(&j, "params", (long long)s.n_params);
        cli_json_double(&j, "flops", s.flops);
        cli_json_uint(&j, "arena_bytes", s.arena_bytes);
        cli_json_uint(&j, "naive_bytes", s.naive_bytes);
        cli_json_object_begin(&j, "passes");
        cli_json_int(&j, "folded", s.folded);
        cli_json_int(&j, "bn_folded", s.bn_folded);
        cli_json_int(&j, "act_fused", s.act_fused);
        cli_json_int(&j, "removed", s.removed);
        cli_json_object_end(&j);
        cli_json_array_begin(&j, "ops");
        for (int i = 0; i < s.n_op_kinds; i++) {
            cli_json_object_begin(&j, NULL);
            cli_json_string(&j, "op", s.ops[i].op);
            cli_json_int(&j, "count", s.ops[i].count);
            cli_json_object_end(&j);
        }
        cli_json_array_end(&j);
        cli_json_object_end(&j);
        cli_json_finish(&j);
    } else {
        char b1[32], b2[32];
        printf("%s: %s", path, s.format);
        if (s.opset) printf(" (opset %d)", s.opset);
        printf(", %d nodes in the file, %d after the passes\n", s.n_nodes_source, s.n_nodes);
        print_io_text("inputs", m, nin, true);
        print_io_text("outputs", m, nout, false);
        printf("params: %lld\n", (long long)s.n_params);
        printf("FLOPs (batch 1): %.4g G\n", s.flops / 1e9);
        printf("arena (CPU fp32, batch 1): %s (%s without reuse)\n",
               cli_fmt_bytes(b1, sizeof b1, s.arena_bytes), cli_fmt_bytes(b2, sizeof b2, s.naive_bytes));
        printf("passes: %d folded, %d batch norms folded, %d activations fused, %d removed\n",
               s.folded, s.bn_folded, s.act_fused, s.removed);
        printf("ops:\n");
        for (int i = 0; i < s.n_op_kinds; i++) printf("  %-28s %d\n", s.ops[i].op, s.ops[i].count);
    }
    pf_model_free(&m);
    return CLI_EXIT_OK;
}

/* --- run --------------------------------------------------------------------------------- */

static const cli_option run_options[] = {
    {"input", "NAME=FILE.npy", "an input (repeat for each; NAME= may be left out for a "
                               "one-input model)"},
    {"output-dir", "DIR", "where to write <escaped output name>.npy (created if missing)"},
    {"device", "SPEC", "cpu or cuda:N (default: $PIXFLOW_DEVICE, else cpu)"},
    {"precision", "P", "fp32 (default) or fp16 (CUDA only)"},
    {"no-cache", NULL, "CUDA: time every conv choice again instead of reading (and writing) "
                       "the plan cache ($PIXFLOW_CACHE_DIR, else ~/.cache/pixflow)"},
    {"json", NULL, "print one JSON object (keys listed in cmd_model.c)"},
    CLI_OVERWRITE_OPTIONS,
    {"help", NULL, "show this help"},
    {NULL, NULL, NULL},
};

static void run_usage(FILE *f)
{
    fprintf(f, "usage: pixflow model run FILE --input NAME=FILE.npy ... --output-dir DIR\n"
               "                         [--device cpu|cuda:N] [--precision fp32|fp16] [--json]\n\n"
               "Runs the model once on NumPy inputs (.npy v1-v3, little-endian, C order: f4, f2,\n"
               "i4, i8, u1, b1; i8 is converted to i32 when every value fits) and writes each\n"
               "output as DIR/<name>.npy. Names are escaped for the file system: bytes outside\n"
               "[A-Za-z0-9._-] become %%XX (uppercase hex), e.g. 'out/prob:0' -> out%%2Fprob%%3A0.npy.\n"
               "The batch size is taken from the inputs. Existing .npy files are overwritten\n"
               "(the default, or -y) unless -n is given; each is written under a temporary\n"
               "name and renamed when complete; an output that is an input (or the model) is\n"
               "refused before the model runs.\n\n"
               "options:\n");
    cli_print_options(f, run_options);
}

#define MAX_RUN_INPUTS 64

static void escape_name(const char *name, char *out, size_t size)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t k = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p && k + 4 < size; p++) {
        unsigned char c = *p;
        bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
        if (keep) {
            out[k++] = (char)c;
        } else {
            out[k++] = '%';
            out[k++] = hex[c >> 4];
            out[k++] = hex[c & 15];
        }
    }
    out[k] = '\0';
    /* "." and ".." are the only kept-byte names that mean something else. */
    if (!strcmp(out, ".") || !strcmp(out, "..")) {
        k = 0;
        for (const char *p = name; *p && k + 4 < size; p++) {
            out[k++] = '%';
            out[k++] = '2';
            out[k++] = 'E';
        }
        out[k] = '\0';
    }
}

/* A .npy array as a host tensor of the dtype pixflow exchanges. */
static bool npy_to_tensor(const npy_array *a, const char *path, pf_tensor *t)
{
    pf_dtype dt;
    switch (a->dtype) {
    case NPY_F4: dt = PF_DTYPE_F32; break;
    case NPY_F2: dt = PF_DTYPE_F16; break;
    case NPY_I4: case NPY_I8: dt = PF_DTYPE_I32; break;
    default: dt = PF_DTYPE_U8; break;
    }
    if (pf_tensor_alloc(t, dt, a->ndim, a->shape, PF_LAYOUT_NONE, NULL, NULL) != PF_OK) {
        fprintf(stderr, "pixflow model run: %s: %s\n", path, pf_last_error());
        return false;
    }
    if (a->dtype == NPY_I8) {
        for (int64_t i = 0; i < a->numel; i++) {
            int64_t v = ((const int64_t *)a->data)[i];
            if (v < INT32_MIN || v > INT32_MAX) {
                fprintf(stderr, "pixflow model run: %s: element %lld is %lld, outside i32 "
                                "(i64 inputs are converted to i32)\n",
                        path, (long long)i, (long long)v);
                pf_tensor_unref(t);
                return false;
            }
            ((int32_t *)t->data)[i] = (int32_t)v;
        }
    } else if (a->nbytes) {
        memcpy(t->data, a->data, a->nbytes);
    }
    return true;
}

static npy_dtype npy_of(pf_dtype d)
{
    switch (d) {
    case PF_DTYPE_F16: return NPY_F2;
    case PF_DTYPE_I32: return NPY_I4;
    case PF_DTYPE_U8: return NPY_U1;
    default: return NPY_F4;
    }
}

static void tensor_stats(const pf_tensor *t, double *mn, double *mx, double *mean)
{
    int64_t n = pf_tensor_numel(t);
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    for (int64_t i = 0; i < n; i++) {
        double v;
        switch (t->dtype) {
        case PF_DTYPE_F32: v = ((const float *)t->data)[i]; break;
        case PF_DTYPE_F16: v = pf_f16_to_f32(((const uint16_t *)t->data)[i]); break;
        case PF_DTYPE_I32: v = ((const int32_t *)t->data)[i]; break;
        default: v = ((const uint8_t *)t->data)[i]; break;
        }
        if (v < lo) lo = v;
        if (v > hi) hi = v;
        sum += v;
    }
    *mn = n ? lo : NAN;
    *mx = n ? hi : NAN;
    *mean = n ? sum / (double)n : NAN;
}

typedef struct run_state {
    model_dev dev;
    pf_model *m;
    pf_nn_exec *x;
    pf_tensor host_in[MAX_RUN_INPUTS], in[MAX_RUN_INPUTS];
    pf_tensor out[MAX_RUN_INPUTS], host_out[MAX_RUN_INPUTS];
    int nin, nout;
} run_state;

static void run_state_free(run_state *r)
{
    for (int i = 0; i < MAX_RUN_INPUTS; i++) {
        pf_tensor_unref(&r->host_in[i]);
        pf_tensor_unref(&r->in[i]);
        pf_tensor_unref(&r->out[i]);
        pf_tensor_unref(&r->host_out[i]);
    }
    pf_nn_exec_destroy(&r->x);
    pf_model_free(&r->m);
    model_dev_close(&r->dev);
}

static int run_fail(run_state *r, const char *what)
{
    fprintf(stderr, "pixflow model run: %s%s%s\n", what ? what : "", what ? ": " : "",
            pf_last_error());
    run_state_free(r);
    return CLI_EXIT_FAIL;
}

/* Before running: no output DIR/<name>.npy may be an input file or the model
 * (same device and inode: hard links and symlinks too), and with -n none may
 * exist. */
static bool check_outputs(const run_state *r, const char *outdir, const char *model,
                          const char *const *files, int nfiles)
{
    bool ok = true;
    for (int i = 0; ok && i < r->nout; i++) {
        char esc[1024], file[2048];
        escape_name(pf_model_output(r->m, i).name, esc, sizeof esc);
        snprintf(file, sizeof file, "%s/%s.npy", outdir, esc);
        /* A few outputs and inputs: pairwise (pf_output_same_file compares
         * device and inode). */
        int t = -1;
        for (int k = 0; t < 0 && k <= nfiles; k++)
            if (pf_output_same_file(file, k < nfiles ? files[k] : model)) t = k;
        if (t >= 0) {
            fprintf(stderr, "pixflow model run: output %s is the %s %s (the same file): writing "
                            "it would destroy it; choose another --output-dir\n", file,
                    t < nfiles ? "input" : "model", t < nfiles ? files[t] : model);
            ok = false;
        }
        if (ok) ok = cli_output_may_write("model run", file);
    }
    return ok;
}

static int cmd_run_model(int argc, char **argv)
{
    /* --input repeats, which cli_parse does not keep: collect them first. */
    const char *inputs[MAX_RUN_INPUTS];
    int n_inputs = 0;
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest) return CLI_EXIT_FAIL;
    int nrest = 0;
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        if (i > 0 && !strcmp(argv[i], "--input")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "pixflow model run: option --input needs a value\n");
                free(rest);
                return CLI_EXIT_USAGE;
            }
            v = argv[++i];
        } else if (i > 0 && !strncmp(argv[i], "--input=", 8)) {
            v = argv[i] + 8;
        } else {
            rest[nrest++] = argv[i];
            continue;
        }
        if (n_inputs == MAX_RUN_INPUTS) {
            fprintf(stderr, "pixflow model run: at most %d inputs\n", MAX_RUN_INPUTS);
            free(rest);
            return CLI_EXIT_USAGE;
        }
        inputs[n_inputs++] = v;
    }
    cli_args a;
    bool ok = cli_parse("model run", run_options, nrest, rest, &a);
    free(rest);
    if (!ok) return CLI_EXIT_USAGE;
    if (cli_flag(run_options, &a, "help")) {
        run_usage(stdout);
        return CLI_EXIT_OK;
    }
    const char *outdir = cli_value(run_options, &a, "output-dir");
    if (a.positional_count != 1 || !outdir || n_inputs == 0) {
        fprintf(stderr, "pixflow model run: expected FILE, --input and --output-dir (see "
                        "'pixflow model run --help')\n");
        return CLI_EXIT_USAGE;
    }
    pf_nn_precision prec;
    if (!model_parse_precision(cli_value(run_options, &a, "precision"), &prec)) {
        fprintf(stderr, "pixflow model run: --precision: expected fp32 or fp16\n");
        return CLI_EXIT_USAGE;
    }
    if (!cli_overwrite_setup("model run", run_options, &a)) return CLI_EXIT_USAGE;
    bool json = cli_flag(run_options, &a, "json");
    const char *path = a.positional[0];
    const char *spec = cli_value(run_options, &a, "device");

    run_state r;
    memset(&r, 0, sizeof r);
    if (!model_dev_open(spec, &r.dev)) return run_fail(&r, spec ? "--device" : NULL);
    if (pf_model_load(path, &r.m) != PF_OK) return run_fail(&r, NULL);
    r.nin = pf_model_num_inputs(r.m);
    r.nout = pf_model_num_outputs(r.m);
    if (r.nin > MAX_RUN_INPUTS || r.nout > MAX_RUN_INPUTS) {
        fprintf(stderr, "pixflow model run: %s: more than %d inputs or outputs\n", path,
                MAX_RUN_INPUTS);
        run_state_free(&r);
        return CLI_EXIT_FAIL;
    }
    bool given[MAX_RUN_INPUTS] = {false};
    const char *files[MAX_RUN_INPUTS];
    for (int k = 0; k < n_inputs; k++) {
        const char *eq = strchr(inputs[k], '=');
        char name[512];
        const char *file;
        int idx;
        if (eq) {
            snprintf(name, sizeof name, "%.*s", (int)(eq - inputs[k]), inputs[k]);
            file = eq + 1;
            idx = pf_model_find_input(r.m, name);
        } else {
            if (r.nin != 1) {
                fprintf(stderr, "pixflow model run: --input %s: the model has %d inputs; name "
                                "them (NAME=FILE.npy)\n", inputs[k], r.nin);
                run_state_free(&r);
                return CLI_EXIT_USAGE;
            }
            file = inputs[k];
            idx = 0;
            snprintf(name, sizeof name, "%s", pf_model_input(r.m, 0).name);
        }
        if (idx < 0) {
            fprintf(stderr, "pixflow model run: --input %s: the model has no input '%s'; its "
                            "inputs:", inputs[k], name);
            for (int i = 0; i < r.nin; i++) fprintf(stderr, " '%s'", pf_model_input(r.m, i).name);
            fprintf(stderr, "\n");
            run_state_free(&r);
            return CLI_EXIT_USAGE;
        }
        if (given[idx]) {
            fprintf(stderr, "pixflow model run: input '%s' given twice\n", name);
            run_state_free(&r);
            return CLI_EXIT_USAGE;
        }
        given[idx] = true;
        files[k] = file;
        npy_array arr;
        char err[512];
        if (!npy_read_file(file, &arr, err, sizeof err)) {
            fprintf(stderr, "pixflow model run: %s\n", err);
            run_state_free(&r);
            return CLI_EXIT_FAIL;
        }
        ok = npy_to_tensor(&arr, file, &r.host_in[idx]);
        npy_free(&arr);
        if (!ok) {
            run_state_free(&r);
            return CLI_EXIT_FAIL;
        }
    }
    for (int i = 0; i < r.nin; i++)
        if (!given[i]) {
            fprintf(stderr, "pixflow model run: missing --input %s=FILE.npy\n",
                    pf_model_input(r.m, i).name);
            run_state_free(&r);
            return CLI_EXIT_USAGE;
        }

    if (!check_outputs(&r, outdir, path, files, n_inputs)) {
        run_state_free(&r);
        return CLI_EXIT_FAIL;
    }

    /* The batch: from the inputs' symbolic dims. */
    int64_t batch = 1;
    for (int i = 0; i < r.nin; i++) {
        pf_model_io io = pf_model_input(r.m, i);
        for (int d = 0; d < io.ndim && d < r.host_in[i].ndim; d++)
            if (io.shape[d] < 0 && r.host_in[i].shape[d] > batch) batch = r.host_in[i].shape[d];
    }
    pf_nn_exec_params p = pf_nn_exec_params_default();
    p.device = r.dev.dev;
    p.precision = prec;
    p.max_batch = batch > INT32_MAX ? INT32_MAX : (int)batch;
    p.plan_cache = !cli_flag(run_options, &a, "no-cache");
    if (pf_nn_exec_create(r.m, &p, &r.x) != PF_OK) return run_fail(&r, NULL);
    for (int i = 0; i < r.nin; i++)
        if (model_dev_upload(&r.dev, &r.host_in[i], &r.in[i]) != PF_OK)
            return run_fail(&r, "upload");
    for (int i = 0; i < r.nout; i++) {
        pf_model_io io = pf_model_output(r.m, i);
        int64_t shape[PF_NN_MAX_DIMS];
        for (int d = 0; d < io.ndim; d++) shape[d] = io.shape[d] < 0 ? batch : io.shape[d];
        if (model_dev_alloc(&r.dev, io.dtype, io.ndim, shape, &r.out[i]) != PF_OK)
            return run_fail(&r, io.name);
    }
    int64_t t0 = pf_time_ns();
    if (pf_nn_exec_run(r.x, r.dev.stream, r.in, r.nin, r.out, r.nout) != PF_OK)
        return run_fail(&r, NULL);
    if (r.dev.stream && pf_stream_synchronize(r.dev.stream) != PF_OK) return run_fail(&r, NULL);
    double ms = (double)(pf_time_ns() - t0) / 1e6;
    pf_nn_exec_stats xs;
    if (pf_nn_exec_get_stats(r.x, &xs) != PF_OK) memset(&xs, 0, sizeof xs);
    for (int i = 0; i < r.nout; i++)
        if (model_dev_download(&r.dev, &r.out[i], &r.host_out[i]) != PF_OK)
            return run_fail(&r, "download");

    if (mkdir(outdir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "pixflow model run: %s: cannot create: %s\n", outdir, strerror(errno));
        run_state_free(&r);
        return CLI_EXIT_FAIL;
    }
    cli_json j;
    if (json) {
        cli_json_init(&j, stdout);
        cli_json_object_begin(&j, NULL);
        cli_json_string(&j, "file", path);
        cli_json_string(&j, "device", pf_device_spec(r.dev.dev));
        cli_json_string(&j, "precision", prec == PF_NN_FP16 ? "fp16" : "fp32");
        cli_json_int(&j, "batch", (long long)batch);
        cli_json_double(&j, "run_ms", ms);
        cli_json_int(&j, "convs_tuned", xs.convs_tuned);
        cli_json_int(&j, "convs_cached", xs.convs_cached);
        cli_json_array_begin(&j, "outputs");
    } else {
        printf("%s: ran on %s (%s, batch %lld) in %.3f ms\n", path, pf_device_spec(r.dev.dev),
               prec == PF_NN_FP16 ? "fp16" : "fp32", (long long)batch, ms);
        if (xs.convs_tuned + xs.convs_cached > 0)
            printf("  plan: %d conv choices timed, %d from the plan cache\n", xs.convs_tuned,
                   xs.convs_cached);
    }
    int rc = CLI_EXIT_OK;
    for (int i = 0; i < r.nout; i++) {
        const pf_tensor *t = &r.host_out[i];
        const char *name = pf_model_output(r.m, i).name;
        char esc[1024], file[2048], err[512];
        escape_name(name, esc, sizeof esc);
        snprintf(file, sizeof file, "%s/%s.npy", outdir, esc);
        if (!npy_write_file(file, npy_of(t->dtype), t->ndim, t->shape, t->data, err, sizeof err)) {
            fprintf(stderr, "pixflow model run: %s\n", err);
            rc = CLI_EXIT_FAIL;
            continue;
        }
        double mn, mx, mean;
        tensor_stats(t, &mn, &mx, &mean);
        if (json) {
            cli_json_object_begin(&j, NULL);
            cli_json_string(&j, "name", name);
            cli_json_string(&j, "file", file);
            cli_json_string(&j, "dtype", pf_dtype_name(t->dtype));
            json_shape(&j, "shape", t->ndim, t->shape);
            cli_json_double(&j, "min", mn);
            cli_json_double(&j, "max", mx);
            cli_json_double(&j, "mean", mean);
            cli_json_object_end(&j);
        } else {
            printf("  %s %s ", file, pf_dtype_name(t->dtype));
            print_shape(stdout, t->ndim, t->shape);
            printf(" min %.6g max %.6g mean %.6g\n", mn, mx, mean);
        }
    }
    if (json) {
        cli_json_array_end(&j);
        cli_json_object_end(&j);
        cli_json_finish(&j);
    }
    run_state_free(&r);
    return rc;
}

/* --- dispatch ---------------------------------------------------------------------------- */

static void model_usage(FILE *f)
{
    fprintf(f, "usage: pixflow model inspect FILE [--json]\n"
               "       pixflow model run FILE --input NAME=FILE.npy ... --output-dir DIR [options]\n"
               "       pixflow model test DIR... [options]\n"
               "       pixflow model quantize MODEL --calib DIR_OR_GLOB -o OUT.onnx [options]\n"
               "       pixflow model compare FP32_MODEL INT8_MODEL --inputs DIR_OR_GLOB [options]\n"
               "       pixflow model convert MODEL -o OUT.onnx\n\n"
               "ONNX (opsets 7..17) and TFLite models; the format is read from the file's\n"
               "content. 'pixflow model SUBCOMMAND --help' lists each one's options.\n");
}

int cmd_model(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        model_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    if (!strcmp(argv[1], "inspect")) return cmd_inspect(argc - 1, argv + 1);
    if (!strcmp(argv[1], "run")) return cmd_run_model(argc - 1, argv + 1);
    if (!strcmp(argv[1], "test")) return cmd_model_test(argc - 1, argv + 1);
    if (!strcmp(argv[1], "quantize")) return cmd_model_quantize(argc - 1, argv + 1);
    if (!strcmp(argv[1], "compare")) return cmd_model_compare(argc - 1, argv + 1);
    if (!strcmp(argv[1], "convert")) return cmd_model_convert(argc - 1, argv + 1);
    fprintf(stderr, "pixflow model: unknown subcommand '%s' (inspect, run, test, quantize, "
                    "compare, convert)\n", argv[1]);
    return CLI_EXIT_USAGE;
}
