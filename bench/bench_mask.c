/* bench_mask: mask post-processing and refinement at 1080p (1920 x 1080),
 * one frame per call:
 *   threshold   f32 probabilities [1, 1, H, W] -> u8 mask (0.5)
 *   argmax      f16 logits [1, 21, H, W] (NCHW) -> u8 labels + f32
 *               softmax probability of class 15
 *   temporal    f32 state [1, 1, H, W] = 0.3 mask + 0.7 state, in place
 *   feather     f32 [1, 1, H, W], sigma 4 (radius 12) and sigma 16 (radius 48)
 *   morph       u8 [H, W] close (dilate then erode), radius 3 and 15
 *
 *   bench_mask [--device SPEC] [--iters N] [--json]
 *
 * Each call is timed alone between two pf_events after a warm-up; the table
 * reports the median and the fastest in microseconds per frame. Inputs are
 * deterministic smooth patterns (a soft blob for the masks, gradients for
 * the logits) in the device's memory.
 *
 * The floor: the bytes an ideal kernel moves (each input read once and each
 * output written once; temporal reads its state and writes it back; the
 * separable filters' intermediate planes are not counted, since an ideal
 * kernel keeps them on chip) over the copy bandwidth measured in the same
 * run: a 256 MiB device-to-device pf_memcpy_async timed with events,
 * counting read + write bytes. "Share" is floor / median: the fraction of
 * copy bandwidth the op reaches.
 *
 * On the CPU device the same runs on the pf_ops thread pool (default 5
 * frames instead of 50) and the copy is one host memcpy on one thread, so
 * the cheap elementwise ops, spread over the pool, can exceed 100%. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "pixflow/pixflow.h"

#define PROG "bench_mask"
#define FW 1920
#define FH 1080
#define CLASSES 21
#define CLS 15

static int fail(const char *what) { return bench_fail(PROG, what); }

typedef enum {
    OP_THRESHOLD,
    OP_ARGMAX,
    OP_TEMPORAL,
    OP_FEATHER4,
    OP_FEATHER16,
    OP_CLOSE3,
    OP_CLOSE15,
    OP_COUNT
} op_id;

static const struct {
    const char *name, *label;
    double bytes_per_px; /* ideal: inputs read once + outputs written once */
} op_info[OP_COUNT] = {
    {"threshold", "threshold f32 prob -> u8", 4 + 1},
    {"argmax21_prob", "argmax 21 cls f16 -> u8 + prob", CLASSES * 2 + 1 + 4},
    {"temporal", "temporal f32 (in place)", 4 + 4 + 4},
    {"feather_sigma4", "feather f32 sigma 4", 4 + 4},
    {"feather_sigma16", "feather f32 sigma 16", 4 + 4},
    {"morph_close_r3", "morph close u8 radius 3", 1 + 1},
    {"morph_close_r15", "morph close u8 radius 15", 1 + 1},
};

typedef struct tensors {
    pf_tensor prob, mask_u8, logits, labels, soft, state, feathered, bin, closed;
} tensors;

static pf_status run_op(pf_ops *ops, op_id op, tensors *t)
{
    switch (op) {
    case OP_THRESHOLD: return pf_ops_mask_threshold(ops, &t->prob, false, 0.5f, &t->mask_u8);
    case OP_ARGMAX: return pf_ops_mask_argmax(ops, &t->logits, &t->labels, &t->soft, CLS);
    case OP_TEMPORAL: return pf_ops_mask_temporal(ops, &t->state, &t->prob, 0.3f, false);
    case OP_FEATHER4: return pf_ops_mask_feather(ops, &t->prob, &t->feathered, 4.0f);
    case OP_FEATHER16: return pf_ops_mask_feather(ops, &t->prob, &t->feathered, 16.0f);
    case OP_CLOSE3: return pf_ops_mask_morph(ops, &t->bin, &t->closed, PF_MORPH_CLOSE, 3);
    default: return pf_ops_mask_morph(ops, &t->bin, &t->closed, PF_MORPH_CLOSE, 15);
    }
}

/* A soft elliptic blob (a "person") with a ragged edge: values in [0, 1]. */
static float blob(int x, int y)
{
    double dx = (x - 0.5 * FW) / (0.22 * FW), dy = (y - 0.55 * FH) / (0.4 * FH);
    double r = sqrt(dx * dx + dy * dy) + 0.05 * sin(x * 0.07) * cos(y * 0.05);
    double v = 1.0 / (1.0 + exp((r - 1.0) * 12.0));
    return (float)v;
}

/* Allocates t on `alloc` and fills it from host memory `src`. */
static pf_status make(pf_tensor *t, pf_dtype dt, int ndim, const int64_t *shape, pf_layout layout,
                      pf_allocator *alloc, pf_stream *s, const void *src)
{
    pf_status st = pf_tensor_alloc(t, dt, ndim, shape, layout, alloc, s);
    if (st == PF_OK && src) st = pf_memcpy_async(s, t->data, src, pf_tensor_nbytes(t));
    return st;
}

int main(int argc, char **argv)
{
    bench_args args = {.prog = PROG, .iters = 50, .cpu_iters = 5, .max_iters = 100000,
                       .iters_help = "timed frames per op; 5 on the CPU"};
    bench_env env;
    int rc = bench_open(argc, argv, &args, &env);
    if (rc >= 0) return rc;
    const int is_cpu = env.is_cpu, iters = args.iters;
    const int warm = is_cpu ? 1 : 5;
    const int copy_iters = is_cpu ? 3 : 10;

    /* Host patterns, uploaded once. */
    const size_t px = (size_t)FW * FH;
    float *hprob = malloc(px * sizeof(float));
    uint8_t *hbin = malloc(px);
    uint16_t *hlog = malloc(px * CLASSES * sizeof(uint16_t));
    if (!hprob || !hbin || !hlog) return fail("host memory");
    for (int y = 0; y < FH; y++)
        for (int x = 0; x < FW; x++) {
            float v = blob(x, y);
            hprob[(size_t)y * FW + x] = v;
            /* Binary mask with specks and pinholes for the close. */
            int speck = ((x * 7919 + y * 104729) % 997) == 0;
            hbin[(size_t)y * FW + x] = (uint8_t)((v >= 0.5f) != speck ? 255 : 0);
            for (int c = 0; c < CLASSES; c++) {
                float l = c == CLS ? 8.0f * (v - 0.5f)
                                   : (float)(0.5 * sin(0.01 * (x + 37 * c)) * cos(0.013 * y));
                hlog[(size_t)c * px + (size_t)y * FW + x] = pf_f32_to_f16(l);
            }
        }
    tensors t;
    memset(&t, 0, sizeof t);
    int64_t s4p[4] = {1, 1, FH, FW}, s4l[4] = {1, CLASSES, FH, FW}, s3[3] = {1, FH, FW},
            s2[2] = {FH, FW};
    if (make(&t.prob, PF_DTYPE_F32, 4, s4p, PF_LAYOUT_NCHW, env.alloc, env.s, hprob) != PF_OK ||
        make(&t.mask_u8, PF_DTYPE_U8, 4, s4p, PF_LAYOUT_NCHW, env.alloc, env.s, NULL) != PF_OK ||
        make(&t.logits, PF_DTYPE_F16, 4, s4l, PF_LAYOUT_NCHW, env.alloc, env.s, hlog) != PF_OK ||
        make(&t.labels, PF_DTYPE_U8, 3, s3, PF_LAYOUT_NONE, env.alloc, env.s, NULL) != PF_OK ||
        make(&t.soft, PF_DTYPE_F32, 3, s3, PF_LAYOUT_NONE, env.alloc, env.s, NULL) != PF_OK ||
        make(&t.state, PF_DTYPE_F32, 4, s4p, PF_LAYOUT_NCHW, env.alloc, env.s, hprob) != PF_OK ||
        make(&t.feathered, PF_DTYPE_F32, 4, s4p, PF_LAYOUT_NCHW, env.alloc, env.s, NULL) != PF_OK ||
        make(&t.bin, PF_DTYPE_U8, 2, s2, PF_LAYOUT_NONE, env.alloc, env.s, hbin) != PF_OK ||
        make(&t.closed, PF_DTYPE_U8, 2, s2, PF_LAYOUT_NONE, env.alloc, env.s, NULL) != PF_OK)
        return fail("tensors");
    if (pf_stream_synchronize(env.s) != PF_OK) return fail("upload");

    double *ms = malloc(sizeof(double) * (size_t)(iters > copy_iters ? iters : copy_iters));
    if (!ms) return fail("host memory");
    double median_us[OP_COUNT], best_us[OP_COUNT];
    for (int o = 0; o < OP_COUNT; o++) {
        for (int i = -warm; i < iters; i++) {
            float v = 0;
            if ((rc = bench_timer_start(&env)) != 0) return rc;
            if (run_op(env.ops, (op_id)o, &t) != PF_OK) return fail(op_info[o].name);
            if ((rc = bench_timer_stop(&env, &v)) != 0) return rc;
            if (i >= 0) ms[i] = v;
        }
        median_us[o] = 1e3 * bench_median(ms, iters);
        best_us[o] = 1e3 * ms[0];
    }

    /* A look at the results (also keeps the work honest): share of person
     * pixels in the labels and in the closed mask. */
    uint8_t *hl = malloc(px), *hc = malloc(px);
    if (!hl || !hc) return fail("host memory");
    if (pf_memcpy_async(env.s, hl, t.labels.data, px) != PF_OK ||
        pf_memcpy_async(env.s, hc, t.closed.data, px) != PF_OK ||
        pf_stream_synchronize(env.s) != PF_OK)
        return fail("download");
    size_t person = 0, closed = 0;
    for (size_t i = 0; i < px; i++) {
        person += hl[i] == CLS;
        closed += hc[i] == 255;
    }

    /* Copy bandwidth in the same run. */
    double copy_gbps = 0;
    if ((rc = bench_copy_bandwidth(&env, copy_iters, ms, &copy_gbps)) != 0) return rc;

    double floor_us[OP_COUNT], share[OP_COUNT];
    for (int o = 0; o < OP_COUNT; o++) {
        floor_us[o] = bench_floor_s(op_info[o].bytes_per_px * (double)px, copy_gbps) * 1e6;
        share[o] = floor_us[o] / median_us[o];
    }

    if (args.json) {
        bench_json_begin(&env, "mask");
        printf(",\"frame\":\"%dx%d\",\"iters\":%d,\"warmup\":%d,\"timing\":\"events\","
               "\"copy_gbps\":%.2f,\"copy_bytes\":%zu,\"person_fraction\":%.4f,"
               "\"closed_fraction\":%.4f,\"ops\":[",
               FW, FH, iters, warm, copy_gbps, 2 * BENCH_COPY_BYTES, (double)person / px,
               (double)closed / px);
        for (int o = 0; o < OP_COUNT; o++)
            printf("%s{\"op\":\"%s\",\"median_us\":%.2f,\"min_us\":%.2f,\"bytes\":%.0f,"
                   "\"floor_us\":%.2f,\"share_of_copy_bandwidth\":%.4f}",
                   o ? "," : "", op_info[o].name, median_us[o], best_us[o],
                   op_info[o].bytes_per_px * (double)px, floor_us[o], share[o]);
        printf("]}\n");
    } else {
        printf("bench_mask on %s (%s): %dx%d frames, one per call\n", pf_device_spec(env.dev),
               env.props->name, FW, FH);
        bench_print_method(iters, "frames per op", warm);
        printf("%-32s %10s %10s %9s %10s %6s\n", "", "us/frame", "fastest", "MB moved",
                "floor us", "share");
        for (int o = 0; o < OP_COUNT; o++)
            printf("%-32s %10.1f %10.1f %9.1f %10.1f %5.1f%%\n", op_info[o].label, median_us[o],
                   best_us[o], op_info[o].bytes_per_px * (double)px / 1e6, floor_us[o],
                   100.0 * share[o]);
        printf("\n");
        bench_print_copy(&env, copy_gbps);
        printf("\nfloor = bytes moved (inputs read once, outputs written once) / copy bandwidth\n");
        printf("labels: %.1f%% class %d; closed mask: %.1f%% set\n", 100.0 * person / px, CLS,
               100.0 * closed / px);
    }

    free(ms);
    free(hl);
    free(hc);
    free(hprob);
    free(hbin);
    free(hlog);
    pf_tensor *all[] = {&t.prob, &t.mask_u8, &t.logits, &t.labels, &t.soft,
                        &t.state, &t.feathered, &t.bin, &t.closed};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) pf_tensor_unref(all[i]);
    bench_env_close(&env);
    return 0;
}
