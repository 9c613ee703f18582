/* Private: the streaming (fused-pass) CPU morphology, morph_stream.c. */
#ifndef PF_CPU_MORPH_STREAM_H
#define PF_CPU_MORPH_STREAM_H

#include "../ops/mask.h"

/* Runs a's morphology with the passes fused per thread when its row rings
 * fit the per-thread budget: returns 1 with the outcome in *st, or 0
 * (nothing done) when they do not. simd: pf_cpu_simd_level(). */
int pf_cpu_morph_stream(pf_ops *ops, const pf_mk_sep *a, int simd, pf_status *st);

#endif
