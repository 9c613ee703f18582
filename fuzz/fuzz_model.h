/* Shared by fuzz_onnx.c and fuzz_tflite.c: the whole model loader on
 * arbitrary bytes, and one CPU run of what loads, where that is cheap.
 *
 * pf_model_load_memory takes the bytes through the reader, the importer to
 * the IR, shape inference and the graph passes (constant folding included).
 * Whatever the bytes it must return a status with a message and never crash,
 * hang or leak. A model that loads is inspected (its inputs, outputs and
 * summary: specialisation to batch 1 and memory planning) and, when small
 * enough that a fuzzed model cannot make the fuzzer run out of memory or
 * time, run once on a CPU executor with zero inputs. The caps are on what
 * the summary reports: input elements, the planned arena and the flops.
 *
 * It also fails when a load error does not name the file (the issue asks
 * every message to name file, node and value); FUZZ_MODEL_STRICT=0 turns
 * that check off.
 *
 * tests/test_fuzz_regress.c replays the saved findings through the same
 * code, defining FUZZ_FAIL to a counting check instead of a trap. */
#ifndef PF_FUZZ_MODEL_H
#define PF_FUZZ_MODEL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pixflow/nn.h"
#include "pixflow/pixflow.h"

#ifndef FUZZ_FAIL
#define FUZZ_FAIL(what) \
    do { \
        fprintf(stderr, "fuzz_model: %s: %s\n", what, pf_last_error()); \
        __builtin_trap(); \
    } while (0)
#endif

#define FUZZ_MAX_IN_ELEMS ((int64_t)1 << 20)
#define FUZZ_MAX_OUT_ELEMS ((int64_t)1 << 22)
#define FUZZ_MAX_ARENA ((size_t)64 << 20)
#define FUZZ_MAX_FLOPS 1e7

/* A model may plan arenas of hundreds of GB; the library turns a failed
 * allocation into PF_ERR_NOMEM, which is what the fuzzers must see (ASan's
 * default aborts on such requests instead of returning NULL). */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

static volatile uint64_t fuzz_model_sink;
static int fuzz_model_strict = -1; /* -1: from FUZZ_MODEL_STRICT (default on) */
/* How deep inputs get; printed at exit when FUZZ_MODEL_STATS=1, to see
 * whether a corpus reaches the executor at all. */
static struct { long inputs, loaded, summarised, ran, ran_ok; } fuzz_model_stats;

static void fuzz_model_print_stats(void)
{
    fprintf(stderr, "fuzz_model: %ld inputs, %ld loaded, %ld summarised, %ld run, %ld ran ok\n",
            fuzz_model_stats.inputs, fuzz_model_stats.loaded, fuzz_model_stats.summarised,
            fuzz_model_stats.ran, fuzz_model_stats.ran_ok);
}

static pf_threadpool *fuzz_pool(void)
{
    /* One thread: the fuzzer is one process on a shared machine, and a pool
     * made per input would dominate the time. */
    static pf_threadpool *tp;
    if (!tp) {
        pf_threadpool_params p = pf_threadpool_params_default();
        p.num_threads = 1;
        if (pf_threadpool_create(&p, &tp) != PF_OK) FUZZ_FAIL("threadpool");
    }
    return tp;
}

/* Every failure carries a message; a load failure blamed on the file names
 * it (strict mode). */
static void fuzz_check_error(pf_status st, const char *file, int is_load)
{
    const char *msg = pf_last_error();
    if (!msg || !msg[0]) FUZZ_FAIL("a failure without a message");
    if (fuzz_model_strict < 0) {
        const char *e = getenv("FUZZ_MODEL_STRICT");
        fuzz_model_strict = !(e && e[0] == '0');
    }
    if (fuzz_model_strict && is_load && (st == PF_ERR_FORMAT || st == PF_ERR_UNSUPPORTED) &&
        msg && !strstr(msg, file))
        FUZZ_FAIL("a load error that does not name the file");
}

/* Shape of io with a symbolic batch taken as 1; false when not concrete. */
static int fuzz_io_shape(const pf_model_io *io, int64_t *shape, int64_t *numel)
{
    int64_t n = 1;
    if (io->ndim < 0 || io->ndim > PF_NN_MAX_DIMS) return 0;
    for (int d = 0; d < io->ndim; d++) {
        int64_t v = io->shape[d];
        if (v == -1 && d == 0) v = 1;
        if (v < 0) return 0;
        shape[d] = v;
        if (v && n > INT64_MAX / v) return 0;
        n *= v;
    }
    *numel = n;
    return 1;
}

/* Summarises and runs a loaded model on the CPU (zero inputs) when it is
 * small enough; returns the first failure's status, PF_OK when it ran or
 * was too large to run. */
static pf_status fuzz_model_run(pf_model *m, const char *file)
{
    pf_model_summary s;
    pf_status st = pf_model_get_summary(m, &s);
    if (st != PF_OK) {
        fuzz_check_error(st, file, 0);
        return st;
    }
    fuzz_model_stats.summarised++;
    fuzz_model_sink += (uint64_t)s.n_nodes + (uint64_t)s.n_params + s.arena_bytes;
    for (int i = 0; i < s.n_op_kinds; i++) fuzz_model_sink += strlen(s.ops[i].op);
    if (s.arena_bytes > FUZZ_MAX_ARENA || !(s.flops <= FUZZ_MAX_FLOPS)) return PF_OK;

    int n_in = pf_model_num_inputs(m), n_out = pf_model_num_outputs(m);
    if (n_in < 0 || n_out < 1 || n_in > 64 || n_out > 64) return PF_OK;
    pf_tensor *in = calloc((size_t)n_in + 1, sizeof *in);
    pf_tensor *out = calloc((size_t)n_out, sizeof *out);
    if (!in || !out) FUZZ_FAIL("calloc");
    int64_t total_in = 0, total_out = 0;
    int ok = 1;
    st = PF_OK;
    for (int i = 0; i < n_in && ok; i++) {
        pf_model_io io = pf_model_input(m, i);
        int64_t shape[PF_NN_MAX_DIMS], n = 0;
        fuzz_model_sink += strlen(io.name) + (uint64_t)pf_model_input_needs_value(m, i);
        ok = fuzz_io_shape(&io, shape, &n) && n <= FUZZ_MAX_IN_ELEMS - total_in;
        if (ok) total_in += n;
        if (ok && pf_tensor_alloc(&in[i], io.dtype, io.ndim, shape, PF_LAYOUT_NONE, NULL, NULL))
            ok = 0;
        if (ok) memset(in[i].data, 0, pf_tensor_nbytes(&in[i])); /* the run sees zeros */
    }
    for (int i = 0; i < n_out && ok; i++) {
        pf_model_io io = pf_model_output(m, i);
        int64_t shape[PF_NN_MAX_DIMS], n = 0;
        fuzz_model_sink += strlen(io.name);
        ok = fuzz_io_shape(&io, shape, &n) && n <= FUZZ_MAX_OUT_ELEMS - total_out;
        if (ok) total_out += n;
        if (ok && pf_tensor_alloc(&out[i], io.dtype, io.ndim, shape, PF_LAYOUT_NONE, NULL, NULL))
            ok = 0;
    }
    if (ok) {
        pf_nn_exec_params p = pf_nn_exec_params_default();
        p.pool = fuzz_pool();
        p.memory_cap = (size_t)1 << 30; /* a 10 GB arena is a clean NOMEM, not an OOM kill */
        pf_nn_exec *x = NULL;
        st = pf_nn_exec_create(m, &p, &x);
        if (st == PF_OK) {
            fuzz_model_stats.ran++;
            st = pf_nn_exec_run(x, NULL, in, n_in, out, n_out);
            if (st == PF_OK) {
                fuzz_model_stats.ran_ok++;
                /* The outputs were written: read them so ASan sees short ones. */
                for (int i = 0; i < n_out; i++) {
                    const unsigned char *b = out[i].data;
                    size_t nb = pf_tensor_nbytes(&out[i]);
                    uint64_t h = 0;
                    for (size_t k = 0; k < nb; k++) h += b[k];
                    fuzz_model_sink += h;
                }
            }
            pf_nn_exec_destroy(&x);
            if (x) FUZZ_FAIL("pf_nn_exec_destroy left the executor");
        }
        if (st != PF_OK) fuzz_check_error(st, file, 0);
    }
    for (int i = 0; i < n_in; i++) pf_tensor_unref(&in[i]);
    for (int i = 0; i < n_out; i++) pf_tensor_unref(&out[i]);
    free(in);
    free(out);
    return st;
}

/* Returns the load status, or when the model loaded, fuzz_model_run's. */
static pf_status fuzz_model_load(const uint8_t *data, size_t size, const char *file)
{
    static int stats_hooked;
    if (!stats_hooked) {
        const char *e = getenv("FUZZ_MODEL_STATS");
        if (e && e[0] == '1') atexit(fuzz_model_print_stats);
        stats_hooked = 1;
    }
    fuzz_model_stats.inputs++;
    pf_model *m = NULL;
    pf_status st = pf_model_load_memory(data, size, file, &m);
    if ((st == PF_OK) != (m != NULL)) FUZZ_FAIL("status and model disagree");
    if (st != PF_OK) {
        fuzz_check_error(st, file, 1);
        pf_model_free(&m);
        return st;
    }
    fuzz_model_stats.loaded++;
    fuzz_model_sink += (uint64_t)pf_model_get_format(m);
    st = fuzz_model_run(m, file);
    pf_model_free(&m);
    if (m) FUZZ_FAIL("pf_model_free left the model");
    return st;
}

#endif
