/* `pixflow model test DIR...`: runs ONNX conformance cases (model.onnx +
 * test_data_set_N/{input,output}_K.pb, as in Debian's libonnx-testdata) and
 * compares the outputs.
 *
 * On the CPU each case runs in a child process (fork) unless --no-fork: a
 * crash or a hang (--timeout, default 120 s) in one case is reported as that
 * case's FAIL and the run goes on, so one broken kernel cannot hide the rest
 * of the suite. The child sends its verdict back through a pipe. On CUDA the
 * cases run in this process: a CUDA context does not survive fork(), and the
 * device check below has made one.
 *
 * Verdicts: PASS; SKIP when pixflow refuses the model or its data as
 * unsupported (PF_ERR_UNSUPPORTED: an op, attribute or dtype, named in the
 * reason); FAIL for everything else (a wrong value, a shape that disagrees,
 * a load error on a valid model, a crash).
 *
 * Inputs that pixflow needs constant (shape operands such as a Reshape's
 * shape or a Slice's starts, see pf_model_input_needs_value) are frozen to
 * the data set's values with pf_model_freeze_inputs before planning, as an
 * application would when it deploys such a model; every other input is fed.
 *
 * Comparison: integer outputs exactly; float outputs elementwise with
 * |actual - expected| <= atol + rtol * |expected| (NaN matches NaN, infinities
 * must be equal). Defaults: rtol 1e-3, atol 1e-5 for fp32; 1e-2, 1e-3 for
 * fp16.
 *
 * JSON (--json): {cases: [{name, dir, result, reason, max_abs_err}], passed,
 * failed, skipped, total}.
 */
/* fork, pipe, strdup, strsignal, mkdir */
#define _POSIX_C_SOURCE 200809L

#include "cmd_model.h"

#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

#define MAX_IO 64

static const cli_option test_options[] = {
    {"device", "SPEC", "cpu or cuda:N (default: $PIXFLOW_DEVICE, else cpu)"},
    {"precision", "P", "fp32 (default) or fp16 (CUDA only)"},
    {"rtol", "R", "relative tolerance (default 1e-3 for fp32, 1e-2 for fp16)"},
    {"atol", "A", "absolute tolerance (default 1e-5 for fp32, 1e-3 for fp16)"},
    {"timeout", "S", "seconds per case before it counts as failed (default 120)"},
    {"no-fork", NULL, "run cases in this process (a crash ends the run; always so on CUDA)"},
    {"quiet", NULL, "print only FAIL lines and the summary"},
    {"json", NULL, "print one JSON object (keys listed in cmd_model_test.c)"},
    {"help", NULL, "show this help"},
    {NULL, NULL, NULL},
};

static void test_usage(FILE *f)
{
    fprintf(f, "usage: pixflow model test DIR... [--device cpu|cuda:N] [--precision fp32|fp16]\n"
               "                          [--rtol R --atol A] [--json]\n\n"
               "Runs ONNX conformance cases. Each DIR is a case (model.onnx and\n"
               "test_data_set_*/input_*.pb, output_*.pb) or a folder of cases (one level).\n"
               "Prints PASS, FAIL or SKIP (with the reason: the unsupported op, attribute or\n"
               "dtype) per case and a summary line\n"
               "  onnx conformance: P passed, F failed, S skipped of T\n"
               "and exits 1 when any case fails. Float outputs must satisfy\n"
               "|actual - expected| <= atol + rtol * |expected|: rtol 1e-3, atol 1e-5 by\n"
               "default (fp16: 1e-2, 1e-3); integer and bool outputs must match exactly.\n"
               "Inputs pixflow needs constant (a Reshape's shape, a Slice's starts, Resize\n"
               "scales, ...) are frozen to the data set's values before planning.\n\n"
               "options:\n");
    cli_print_options(f, test_options);
}

typedef enum verdict { V_PASS = 0, V_FAIL = 1, V_SKIP = 2 } verdict;

typedef struct case_result {
    verdict v;
    double max_abs_err;
    char reason[1024];
} case_result;

typedef struct test_opts {
    const char *device;
    pf_nn_precision precision;
    double rtol, atol;
    int timeout_s;
    bool fork;
} test_opts;

static void set_result(case_result *r, verdict v, const char *fmt, ...) PF_PRINTF(3, 4);
static void set_result(case_result *r, verdict v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    r->v = v;
    vsnprintf(r->reason, sizeof r->reason, fmt, ap);
    va_end(ap);
}

/* A pixflow failure: unsupported -> SKIP, anything else -> FAIL. */
static void set_status(case_result *r, pf_status st, const char *what)
{
    const char *msg = pf_last_error();
    if (st == PF_ERR_UNSUPPORTED) set_result(r, V_SKIP, "unsupported: %s", msg);
    else set_result(r, V_FAIL, "%s%s%s (%s)", what ? what : "", what ? ": " : "", msg,
                    pf_status_str(st));
}

static bool file_exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

static bool dir_exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* --- comparison --------------------------------------------------------------------------- */

static double elem(const pf_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case PF_DTYPE_F32: return ((const float *)t->data)[i];
    case PF_DTYPE_F16: return pf_f16_to_f32(((const uint16_t *)t->data)[i]);
    case PF_DTYPE_I32: return ((const int32_t *)t->data)[i];
    default: return ((const uint8_t *)t->data)[i];
    }
}

static bool is_int(pf_dtype d) { return d == PF_DTYPE_I32 || d == PF_DTYPE_U8; }

static void shape_str(const pf_tensor *t, char *buf, size_t size)
{
    size_t k = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < t->ndim && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%lld", i ? "," : "", (long long)t->shape[i]);
    if (k < size) snprintf(buf + k, size - k, "]");
}

static bool compare(const pf_tensor *got, const pf_tensor *want, const char *name,
                    const test_opts *o, case_result *r)
{
    bool same_shape = got->ndim == want->ndim;
    for (int d = 0; same_shape && d < got->ndim; d++) same_shape = got->shape[d] == want->shape[d];
    if (!same_shape) {
        char a[128], b[128];
        shape_str(got, a, sizeof a);
        shape_str(want, b, sizeof b);
        set_result(r, V_FAIL, "output '%s': shape %s, expected %s", name, a, b);
        return false;
    }
    bool exact = is_int(got->dtype) && is_int(want->dtype);
    int64_t n = pf_tensor_numel(got), bad = -1, nbad = 0;
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double g = elem(got, i), w = elem(want, i);
        bool ok;
        if (exact) ok = g == w;
        else if (isnan(w)) ok = isnan(g);
        else if (isinf(w)) ok = g == w;
        else ok = fabs(g - w) <= o->atol + o->rtol * fabs(w);
        double err = isnan(g) || isnan(w) ? (isnan(g) == isnan(w) ? 0 : INFINITY) : fabs(g - w);
        if (!(isinf(w) && g == w) && err > worst) worst = err;
        if (!ok) {
            if (bad < 0) bad = i;
            nbad++;
        }
    }
    if (worst > r->max_abs_err) r->max_abs_err = worst;
    if (bad >= 0) {
        set_result(r, V_FAIL, "output '%s': %lld of %lld elements differ; first at %lld: got %.8g, "
                   "expected %.8g (max abs err %.3g)", name, (long long)nbad, (long long)n,
                   (long long)bad, elem(got, bad), elem(want, bad), worst);
        return false;
    }
    return true;
}

/* --- one case ----------------------------------------------------------------------------- */

typedef struct tset {
    pf_tensor t[MAX_IO];
    char names[MAX_IO][256];
    int n;
} tset;

static void tset_free(tset *s)
{
    for (int i = 0; i < MAX_IO; i++) pf_tensor_unref(&s->t[i]);
    s->n = 0;
}

/* Reads prefix_0.pb, prefix_1.pb, ... */
static bool read_set(const char *dir, const char *prefix, tset *s, case_result *r)
{
    for (s->n = 0; s->n < MAX_IO; s->n++) {
        char p[4200];
        if (snprintf(p, sizeof p, "%s/%s_%d.pb", dir, prefix, s->n) >= (int)sizeof p ||
            !file_exists(p))
            return true;
        pf_status st = pf_nn_read_onnx_tensor(p, &s->t[s->n], s->names[s->n], sizeof s->names[0]);
        if (st) {
            set_status(r, st, p);
            return false;
        }
    }
    set_result(r, V_FAIL, "%s: more than %d %s files", dir, MAX_IO, prefix);
    return false;
}

/* order[i] = the file index for model slot i: by name when every file names
 * a slot, else by position. */
static bool map_slots(const tset *s, const pf_model *m, bool inputs, int *order, case_result *r,
                      const char *dir)
{
    int n = inputs ? pf_model_num_inputs(m) : pf_model_num_outputs(m);
    if (s->n != n) {
        set_result(r, V_FAIL, "%s: %d %s files, the model has %d %s", dir, s->n,
                   inputs ? "input" : "output", n, inputs ? "inputs" : "outputs");
        return false;
    }
    bool by_name = true;
    for (int i = 0; i < n; i++) order[i] = -1;
    for (int k = 0; k < n && by_name; k++) {
        int slot = inputs ? pf_model_find_input(m, s->names[k]) : pf_model_find_output(m, s->names[k]);
        if (slot < 0 || order[slot] >= 0) by_name = false;
        else order[slot] = k;
    }
    if (!by_name)
        for (int i = 0; i < n; i++) order[i] = i;
    return true;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of entries in `dir` starting with `prefix` (caller frees). */
static int list_dir(const char *dir, const char *prefix, char ***out)
{
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d) return -1;
    char **v = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (prefix && strncmp(e->d_name, prefix, strlen(prefix))) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **nv = realloc(v, (size_t)cap * sizeof *nv);
            if (!nv) break;
            v = nv;
        }
        v[n] = strdup(e->d_name);
        if (v[n]) n++;
    }
    closedir(d);
    if (n) qsort(v, (size_t)n, sizeof *v, cmp_str);
    *out = v;
    return n;
}

static void free_list(char **v, int n)
{
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

/* Inputs pixflow needs constant (shape operands) are frozen to this set's
 * values; the rest are fed. Returns the model to run (m or a new one). */
static pf_model *freeze_shape_inputs(pf_model *m, const tset *in, const int *iord,
                                     case_result *r)
{
    const char *names[MAX_IO];
    pf_tensor vals[MAX_IO];
    int n = 0;
    for (int i = 0; i < pf_model_num_inputs(m); i++)
        if (pf_model_input_needs_value(m, i)) {
            names[n] = pf_model_input(m, i).name;
            vals[n++] = in->t[iord[i]];
        }
    if (!n) return m;
    pf_model *fm = NULL;
    pf_status st = pf_model_freeze_inputs(m, n, names, vals, &fm);
    if (st) {
        set_status(r, st, "freezing shape inputs");
        return NULL;
    }
    return fm;
}

static void run_one_set(pf_model *m, model_dev *dev, const char *sdir, const test_opts *o,
                        case_result *r)
{
    tset in, want;
    memset(&in, 0, sizeof in);
    memset(&want, 0, sizeof want);
    pf_tensor din[MAX_IO], dout[MAX_IO], hout[MAX_IO];
    memset(din, 0, sizeof din);
    memset(dout, 0, sizeof dout);
    memset(hout, 0, sizeof hout);
    int iord[MAX_IO], oord[MAX_IO];
    pf_model *fm = NULL;
    pf_nn_exec *x = NULL;
    if (!read_set(sdir, "input", &in, r) || !read_set(sdir, "output", &want, r)) goto out;
    if (!map_slots(&in, m, true, iord, r, sdir) || !map_slots(&want, m, false, oord, r, sdir))
        goto out;
    fm = freeze_shape_inputs(m, &in, iord, r);
    if (!fm) goto out;
    int nin = pf_model_num_inputs(fm), nout = pf_model_num_outputs(fm);
    /* fm's inputs by name among m's (freezing keeps the order of the rest). */
    const pf_tensor *feed[MAX_IO];
    for (int i = 0; i < nin; i++) {
        int k = pf_model_find_input(m, pf_model_input(fm, i).name);
        feed[i] = &in.t[iord[k < 0 ? 0 : k]];
    }
    int64_t batch = 1;
    for (int i = 0; i < nin; i++) {
        pf_model_io io = pf_model_input(fm, i);
        for (int d = 0; d < io.ndim && d < feed[i]->ndim; d++)
            if (io.shape[d] < 0 && feed[i]->shape[d] > batch) batch = feed[i]->shape[d];
    }
    pf_nn_exec_params p = pf_nn_exec_params_default();
    p.device = dev->dev;
    p.precision = o->precision;
    p.max_batch = batch > 1024 ? 1024 : (int)batch;
    pf_status st = pf_nn_exec_create(fm, &p, &x);
    if (st) {
        set_status(r, st, "executor");
        goto out;
    }
    for (int i = 0; i < nin; i++) {
        st = model_dev_upload(dev, feed[i], &din[i]);
        if (st) {
            set_status(r, st, "upload");
            goto out;
        }
    }
    for (int i = 0; i < nout; i++) {
        const pf_tensor *w = &want.t[oord[i]];
        st = model_dev_alloc(dev, pf_model_output(fm, i).dtype, w->ndim, w->shape, &dout[i]);
        if (st) {
            set_status(r, st, "output");
            goto out;
        }
    }
    st = pf_nn_exec_run(x, dev->stream, din, nin, dout, nout);
    if (st == PF_OK && dev->stream) st = pf_stream_synchronize(dev->stream);
    if (st) {
        set_status(r, st, NULL);
        goto out;
    }
    for (int i = 0; i < nout; i++) {
        st = model_dev_download(dev, &dout[i], &hout[i]);
        if (st) {
            set_status(r, st, "download");
            goto out;
        }
        if (!compare(&hout[i], &want.t[oord[i]], pf_model_output(fm, i).name, o, r)) goto out;
    }
out:
    for (int i = 0; i < MAX_IO; i++) {
        pf_tensor_unref(&din[i]);
        pf_tensor_unref(&dout[i]);
        pf_tensor_unref(&hout[i]);
    }
    pf_nn_exec_destroy(&x);
    if (fm != m) pf_model_free(&fm);
    tset_free(&in);
    tset_free(&want);
}

static void run_case(const char *dir, const test_opts *o, case_result *r)
{
    memset(r, 0, sizeof *r);
    r->v = V_PASS;
    char path[4200];
    if (snprintf(path, sizeof path, "%s/model.onnx", dir) >= (int)sizeof path) {
        set_result(r, V_FAIL, "path too long");
        return;
    }
    model_dev dev;
    if (!model_dev_open(o->device, &dev)) {
        set_status(r, PF_ERR_NO_DEVICE, "--device");
        return;
    }
    pf_model *m = NULL;
    pf_status st = pf_model_load(path, &m);
    if (st) {
        set_status(r, st, NULL);
        model_dev_close(&dev);
        return;
    }
    if (pf_model_num_inputs(m) > MAX_IO || pf_model_num_outputs(m) > MAX_IO) {
        set_result(r, V_SKIP, "unsupported: more than %d inputs or outputs", MAX_IO);
        goto out;
    }
    char **sets = NULL;
    int nsets = list_dir(dir, "test_data_set_", &sets);
    if (nsets <= 0) {
        set_result(r, V_FAIL, "%s: no test_data_set_* folders", dir);
        free_list(sets, nsets < 0 ? 0 : nsets);
        goto out;
    }
    for (int s = 0; s < nsets && r->v == V_PASS; s++) {
        char sdir[4096];
        if (snprintf(sdir, sizeof sdir, "%s/%s", dir, sets[s]) >= (int)sizeof sdir) continue;
        if (!dir_exists(sdir)) continue;
        /* A fresh executor per set: sets may differ in batch size and in
         * the values of frozen inputs. */
        run_one_set(m, &dev, sdir, o, r);
    }
    free_list(sets, nsets);
out:
    pf_model_free(&m);
    model_dev_close(&dev);
}

/* In a child process: a crash or a hang fails this case only. */
static void run_case_isolated(const char *dir, const test_opts *o, case_result *r)
{
    int fd[2];
    if (pipe(fd) != 0) {
        run_case(dir, o, r);
        return;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        run_case(dir, o, r);
        return;
    }
    if (pid == 0) {
        close(fd[0]);
        if (o->timeout_s > 0) alarm((unsigned)o->timeout_s);
        case_result cr;
        run_case(dir, o, &cr);
        const char *p = (const char *)&cr;
        size_t left = sizeof cr;
        while (left) {
            ssize_t w = write(fd[1], p, left);
            if (w <= 0) break;
            p += w;
            left -= (size_t)w;
        }
        _exit(0);
    }
    close(fd[1]);
    memset(r, 0, sizeof *r);
    char *p = (char *)r;
    size_t got = 0;
    while (got < sizeof *r) {
        ssize_t n = read(fd[0], p + got, sizeof *r - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (got != sizeof *r) {
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
            set_result(r, V_FAIL, "timed out after %d s", o->timeout_s);
        else if (WIFSIGNALED(status))
            set_result(r, V_FAIL, "crashed (signal %d: %s)", WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
        else
            set_result(r, V_FAIL, "the case's process exited with %d without a verdict",
                       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        r->max_abs_err = 0;
    }
    r->reason[sizeof r->reason - 1] = '\0';
}

/* --- the command -------------------------------------------------------------------------- */

typedef struct case_list {
    char **dirs;
    int n, cap;
} case_list;

static bool add_case(case_list *c, const char *dir)
{
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 256;
        char **nd = realloc(c->dirs, (size_t)cap * sizeof *nd);
        if (!nd) return false;
        c->dirs = nd;
        c->cap = cap;
    }
    c->dirs[c->n] = strdup(dir);
    if (!c->dirs[c->n]) return false;
    c->n++;
    return true;
}

static bool has_model(const char *dir)
{
    char p[4096];
    if (snprintf(p, sizeof p, "%s/model.onnx", dir) >= (int)sizeof p) return false;
    return file_exists(p);
}

/* "suite/case" from a case directory, for the report. */
static const char *case_name(const char *dir, char *buf, size_t size)
{
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/') len--;
    size_t i = len;
    int slashes = 0;
    while (i > 0) {
        if (dir[i - 1] == '/' && ++slashes == 2) break;
        i--;
    }
    snprintf(buf, size, "%.*s", (int)(len - i), dir + i);
    return buf;
}

static bool parse_double(const char *s, double *out)
{
    if (!s) return true;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || !end || *end || !(v >= 0)) return false;
    *out = v;
    return true;
}

int cmd_model_test(int argc, char **argv)
{
    cli_args a;
    if (!cli_parse("model test", test_options, argc, argv, &a)) return CLI_EXIT_USAGE;
    if (cli_flag(test_options, &a, "help")) {
        test_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (a.positional_count < 1) {
        fprintf(stderr, "pixflow model test: expected at least one case folder (see 'pixflow "
                        "model test --help')\n");
        return CLI_EXIT_USAGE;
    }
    test_opts o;
    memset(&o, 0, sizeof o);
    o.device = cli_value(test_options, &a, "device");
    if (!model_parse_precision(cli_value(test_options, &a, "precision"), &o.precision)) {
        fprintf(stderr, "pixflow model test: --precision: expected fp32 or fp16\n");
        return CLI_EXIT_USAGE;
    }
    o.rtol = o.precision == PF_NN_FP16 ? 1e-2 : 1e-3;
    o.atol = o.precision == PF_NN_FP16 ? 1e-3 : 1e-5;
    double timeout = 120;
    if (!parse_double(cli_value(test_options, &a, "rtol"), &o.rtol) ||
        !parse_double(cli_value(test_options, &a, "atol"), &o.atol) ||
        !parse_double(cli_value(test_options, &a, "timeout"), &timeout)) {
        fprintf(stderr, "pixflow model test: --rtol, --atol and --timeout take non-negative "
                        "numbers\n");
        return CLI_EXIT_USAGE;
    }
    o.timeout_s = (int)timeout;
    o.fork = !cli_flag(test_options, &a, "no-fork");
    bool json = cli_flag(test_options, &a, "json");
    bool quiet = cli_flag(test_options, &a, "quiet");
    {
        /* Check the device once up front: a typo should not fail every case. */
        model_dev d;
        if (!model_dev_open(o.device, &d)) {
            fprintf(stderr, "pixflow model test: --device: %s\n", pf_last_error());
            return CLI_EXIT_FAIL;
        }
        bool cuda = d.cuda;
        model_dev_close(&d);
        if (cuda) o.fork = false;
        if (!cuda && o.precision == PF_NN_FP16) {
            fprintf(stderr, "pixflow model test: --precision fp16 needs a CUDA device (the CPU "
                            "executor computes in fp32)\n");
            return CLI_EXIT_USAGE;
        }
    }

    case_list cases = {0};
    for (int i = 0; i < a.positional_count; i++) {
        const char *dir = a.positional[i];
        if (has_model(dir)) {
            add_case(&cases, dir);
            continue;
        }
        char **ents = NULL;
        int n = list_dir(dir, NULL, &ents);
        int found = 0;
        for (int k = 0; k < n; k++) {
            char sub[4096];
            if (snprintf(sub, sizeof sub, "%s/%s", dir, ents[k]) >= (int)sizeof sub) continue;
            if (has_model(sub) && add_case(&cases, sub)) found++;
        }
        free_list(ents, n < 0 ? 0 : n);
        if (!found) {
            fprintf(stderr, "pixflow model test: %s: no model.onnx in it or its subfolders\n", dir);
            for (int k = 0; k < cases.n; k++) free(cases.dirs[k]);
            free(cases.dirs);
            return CLI_EXIT_USAGE;
        }
    }

    cli_json j;
    if (json) {
        cli_json_init(&j, stdout);
        cli_json_object_begin(&j, NULL);
        cli_json_array_begin(&j, "cases");
    }
    int passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < cases.n; i++) {
        case_result r;
        if (o.fork) run_case_isolated(cases.dirs[i], &o, &r);
        else run_case(cases.dirs[i], &o, &r);
        char name[512];
        case_name(cases.dirs[i], name, sizeof name);
        static const char *const tag[] = {"PASS", "FAIL", "SKIP"};
        if (r.v == V_PASS) passed++;
        else if (r.v == V_FAIL) failed++;
        else skipped++;
        if (json) {
            cli_json_object_begin(&j, NULL);
            cli_json_string(&j, "name", name);
            cli_json_string(&j, "dir", cases.dirs[i]);
            cli_json_string(&j, "result", tag[r.v]);
            cli_json_string(&j, "reason", r.v == V_PASS ? NULL : r.reason);
            cli_json_double(&j, "max_abs_err", r.max_abs_err);
            cli_json_object_end(&j);
        } else if (!quiet || r.v == V_FAIL) {
            if (r.v == V_PASS) printf("PASS %s (max abs err %.3g)\n", name, r.max_abs_err);
            else printf("%s %s: %s\n", tag[r.v], name, r.reason);
            fflush(stdout);
        }
    }
    if (json) {
        cli_json_array_end(&j);
        cli_json_int(&j, "passed", passed);
        cli_json_int(&j, "failed", failed);
        cli_json_int(&j, "skipped", skipped);
        cli_json_int(&j, "total", cases.n);
        cli_json_object_end(&j);
        cli_json_finish(&j);
    } else {
        printf("onnx conformance: %d passed, %d failed, %d skipped of %d\n", passed, failed,
               skipped, cases.n);
    }
    for (int k = 0; k < cases.n; k++) free(cases.dirs[k]);
    free(cases.dirs);
    return failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
