/* libFuzzer target: the TFLite model reader (src/nn/tflite_reader.c) and the
 * whole model loader (pf_model_load_memory, then a CPU run of small models:
 * fuzz_model.h) on arbitrary bytes.
 *
 * Whatever the bytes, pf_tflite_open_memory must return a status, never
 * crash, hang or leak; a success must give a model, a failure none and a
 * message. A model that opens is walked completely (every name, shape, index
 * list, constant buffer and option the view points at), so a pointer handed
 * out past the file is caught by ASan even when the reader says yes.
 *
 *   cmake -S . -B build-fuzz -DPF_FUZZ=ON -DPF_CUDA=off -DCMAKE_C_COMPILER=clang \
 *         -DCMAKE_CXX_COMPILER=clang++
 *   cmake --build build-fuzz --target fuzz_tflite
 *   fuzz/make-corpus.sh       # fuzz/corpus-tflite/: MediaPipe models + tflite_seeds.py
 *   nice -n 10 ./build-fuzz/fuzz/fuzz_tflite -max_len=1200000 -timeout=10 -rss_limit_mb=2048 \
 *       fuzz/corpus-tflite/
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The reader is private: reached by path, as the fuzz targets link the
 * static library and see only include/. */
#include "../src/nn/tflite_reader.h"
#include "fuzz_model.h"
#include "pixflow/core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

static uint64_t walk(const pf_tflite *m)
{
    uint64_t h = m->version + strlen(m->description);
    for (int32_t i = 0; i < m->n_opcodes; i++)
        h += m->opcodes[i].custom_code ? strlen(m->opcodes[i].custom_code) : 0;
    for (int32_t i = 0; i < m->n_buffers; i++)
        for (size_t k = 0; k < m->buffers[i].size; k++) h += m->buffers[i].data[k];
    for (int32_t s = 0; s < m->n_subgraphs; s++) {
        const pf_tfl_subgraph *g = &m->subgraphs[s];
        h += strlen(g->name);
        for (int32_t i = 0; i < g->n_inputs; i++) h += (uint64_t)g->tensors[g->inputs[i]].ndim;
        for (int32_t i = 0; i < g->n_outputs; i++) h += (uint64_t)g->tensors[g->outputs[i]].ndim;
        for (int32_t i = 0; i < g->n_tensors; i++) {
            const pf_tfl_tensor *t = &g->tensors[i];
            h += strlen(t->name) + (uint64_t)pf_tfl_tensor_numel(t);
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
            for (int32_t k = 0; k < op->n_intermediates; k++)
                if (op->intermediates[k] >= 0) h += (uint64_t)g->tensors[op->intermediates[k]].ndim;
            for (size_t k = 0; k < op->custom_options_size; k++) h += op->custom_options[k];
            h += strlen(pf_tfl_builtin_name(op->builtin));
            if (op->opts.kind == PF_TFL_OPTS_RESHAPE)
                for (int32_t k = 0; k < op->opts.u.reshape.n_new_shape; k++)
                    h += (uint64_t)op->opts.u.reshape.new_shape[k];
        }
    }
    return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) {
        pf_log_set_level(PF_LOG_QUIET);
        quiet = 1;
    }
    pf_tflite *m = NULL;
    pf_status st = pf_tflite_open_memory(data, size, "fuzz.tflite", &m);
    if ((st == PF_OK) != (m != NULL)) __builtin_trap();
    if (st != PF_OK && (st != PF_ERR_FORMAT || pf_last_error()[0] == '\0')) __builtin_trap();
    if (m) sink = walk(m);
    pf_tflite_close(&m);
    if (m) __builtin_trap();

    (void)fuzz_model_load(data, size, "fuzz.tflite");
    return 0;
}
