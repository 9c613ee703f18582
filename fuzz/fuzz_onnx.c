/* libFuzzer target: the ONNX reader and the whole model loader on arbitrary
 * bytes.
 *
 * The same bytes go to pf_onnx_open_memory (as a ModelProto), to
 * pf_onnx_read_tensor_memory (as a TensorProto, the conformance data files)
 * and to pf_model_load_memory (reader, importer, shape inference, passes, and
 * a CPU run of small models: fuzz_model.h).
 * Whatever the bytes, each must return a status and never crash, hang or
 * leak; a failure leaves no model and a message; a success gives a view whose
 * every name, dim and data byte is readable (walked here, so ASan sees a view
 * pointing at freed or short memory) and whose sizes agree.
 *
 *   cmake -S . -B build-fuzz -DPF_FUZZ=ON -DPF_CUDA=off -DCMAKE_C_COMPILER=clang
 *   cmake --build build-fuzz --target fuzz_onnx
 *   fuzz/make-corpus.sh       # fuzz/corpus-onnx/: conformance models, lraspp, onnx_seeds.py
 *   nice -n 10 ./build-fuzz/fuzz/fuzz_onnx -dict=fuzz/onnx.dict -max_len=65536 -timeout=10 \
 *       -rss_limit_mb=2048 fuzz/corpus-onnx/
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_model.h"
#include "nn/onnx_reader.h"
#include "pixflow/pixflow.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile unsigned sink;

static void walk(const void *p, size_t n)
{
    unsigned s = 0;
    for (size_t i = 0; i < n; i++) s += ((const unsigned char *)p)[i];
    sink += s;
}

static void walk_str(const char *s)
{
    if (!s) __builtin_trap();
    walk(s, strlen(s));
}

static void walk_tensor(const pf_onnx_tensor *t)
{
    walk_str(t->name);
    if (!pf_onnx_dtype_supported((int)t->dtype)) __builtin_trap();
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->dims[i] < 0) __builtin_trap();
        n *= t->dims[i];
    }
    if (n != t->numel || t->nbytes != (size_t)n * pf_onnx_dtype_size((int)t->dtype))
        __builtin_trap();
    if ((t->data == NULL) != (t->nbytes == 0)) __builtin_trap();
    if (t->data) walk(t->data, t->nbytes);
}

static void walk_value_info(const pf_onnx_value_info *v)
{
    walk_str(v->name);
    if (!*v->name || v->ndim < -1) __builtin_trap();
    for (int i = 0; i < v->ndim; i++) {
        if (v->dims[i].value < -1) __builtin_trap();
        if (v->dims[i].param) walk_str(v->dims[i].param);
    }
}

static void walk_model(const pf_onnx_model *m)
{
    walk_str(m->name);
    walk_str(m->producer_name);
    walk_str(m->graph_name);
    for (size_t i = 0; i < m->n_opsets; i++) walk_str(m->opsets[i].domain);
    for (size_t i = 0; i < m->n_initializers; i++) {
        walk_tensor(&m->initializers[i]);
        if (pf_onnx_find_initializer(m, m->initializers[i].name) != &m->initializers[i])
            __builtin_trap();
    }
    for (size_t i = 0; i < m->n_inputs; i++) walk_value_info(&m->inputs[i]);
    for (size_t i = 0; i < m->n_outputs; i++) walk_value_info(&m->outputs[i]);
    for (size_t i = 0; i < m->n_value_infos; i++) walk_value_info(&m->value_infos[i]);
    for (size_t k = 0; k < m->n_nodes; k++) {
        const pf_onnx_node *n = &m->nodes[k];
        walk_str(n->op_type);
        walk_str(n->name);
        walk_str(n->domain);
        for (size_t j = 0; j < n->n_inputs; j++) {
            walk_str(n->inputs[j]);
            if (!*n->inputs[j]) continue;
            /* Defined before use: the reader's promise to the graph builder. */
            int prod = pf_onnx_find_producer(m, n->inputs[j], NULL);
            if (prod >= (int)k) __builtin_trap();
            if (prod < 0 && !pf_onnx_find_initializer(m, n->inputs[j]) &&
                !pf_onnx_find_value_info(m, n->inputs[j]))
                __builtin_trap();
        }
        for (size_t j = 0; j < n->n_outputs; j++) walk_str(n->outputs[j]);
        for (size_t a = 0; a < n->n_attrs; a++) {
            const pf_onnx_attr *at = &n->attrs[a];
            walk_str(at->name);
            switch (at->type) {
            case PF_ONNX_ATTR_STRING: walk_str(at->s); break;
            case PF_ONNX_ATTR_INTS: walk(at->ints, at->n * sizeof *at->ints); break;
            case PF_ONNX_ATTR_FLOATS: walk(at->floats, at->n * sizeof *at->floats); break;
            case PF_ONNX_ATTR_STRINGS:
                for (size_t s = 0; s < at->n; s++) walk_str(at->strings[s]);
                break;
            case PF_ONNX_ATTR_TENSOR: walk_tensor(at->t); break;
            case PF_ONNX_ATTR_FLOAT: case PF_ONNX_ATTR_INT: break;
            default: __builtin_trap();
            }
            int64_t iv;
            (void)pf_onnx_attr_int(m, n, at->name, 0, &iv); /* may be a type error */
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) {
        pf_log_set_level(PF_LOG_QUIET);
        quiet = 1;
    }
    pf_onnx_model *m = NULL;
    pf_status st = pf_onnx_open_memory(data, size, "fuzz.onnx", &m);
    if ((st == PF_OK) != (m != NULL)) __builtin_trap();
    if (st != PF_OK && pf_last_error()[0] == '\0') __builtin_trap();
    if (m) walk_model(m);
    pf_onnx_close(&m);

    pf_onnx_tensor_data t;
    st = pf_onnx_read_tensor_memory(data, size, "fuzz.pb", &t);
    if (st == PF_OK) {
        if (t.nbytes != (size_t)t.numel * pf_onnx_dtype_size((int)t.dtype)) __builtin_trap();
        if (t.data) walk(t.data, t.nbytes);
        for (int i = 0; i < t.ndim; i++) sink += (unsigned)t.dims[i];
    } else if (t.data || t.name || pf_last_error()[0] == '\0') {
        __builtin_trap();
    }
    pf_onnx_tensor_data_free(&t);

    (void)fuzz_model_load(data, size, "fuzz.onnx");
    return 0;
}
