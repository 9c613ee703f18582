/* `pixflow bench ops`: the image ops at the sizes the jobs use, on one
 * device, each timed alone between events (median of --iters after a
 * warm-up), against the device's own copy bandwidth measured in the same
 * run (a device-to-device memcpy of 256 MB on a GPU, memcpy on the CPU):
 * each op is reported as time per call and per frame, bytes moved (inputs
 * read once + outputs written once: its floor) and that floor's share of the
 * copy bandwidth. Inputs are deterministic patterns. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_model.h"

static const cli_option ops_options[] = {
    {"device", "SPEC", "cpu, cuda, cuda:N (default: $PIXFLOW_DEVICE or cpu)"},
    {"iters", "N", "timed calls per op (default 100; 10 on the CPU)"},
    {"only", "OP", "one op: copy, preprocess, convert, resize, reproject, composite"},
    {"json", NULL, "print one JSON object"},
    {"help", NULL, "show this help"},
    {NULL, NULL, NULL},
};

typedef struct op_env {
    model_dev d;
    pf_stream *s;           /* d.stream, or a CPU stream */
    pf_stream *cpu_stream;
    pf_ops *ops;
    pf_allocator *alloc;    /* frames and tensors where the ops read them */
    pf_event *e0, *e1;
    int iters, warmup;
} op_env;

typedef struct op_result {
    const char *name, *what;
    int frames;             /* per call */
    double ms;              /* median per call */
    double bytes;           /* floor: read once + written once */
} op_result;

typedef pf_status (*op_fn)(void *arg, op_env *e);

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static bool time_op(op_env *e, op_fn fn, void *arg, double *median_ms)
{
    double *v = calloc((size_t)e->iters, sizeof *v);
    bool ok = v != NULL;
    for (int i = -e->warmup; i < e->iters && ok; i++) {
        float ms = 0;
        ok = pf_event_record(e->e0, e->s) == PF_OK && fn(arg, e) == PF_OK &&
             pf_event_record(e->e1, e->s) == PF_OK && pf_event_synchronize(e->e1) == PF_OK &&
             pf_event_elapsed_ms(e->e0, e->e1, &ms) == PF_OK;
        if (ok && i >= 0) v[i] = ms;
    }
    if (ok) {
        qsort(v, (size_t)e->iters, sizeof *v, cmp_d);
        *median_ms = v[e->iters / 2];
    }
    free(v);
    return ok;
}

static pf_status frame(op_env *e, pf_frame *f, pf_pixfmt fmt, int w, int h, int seed)
{
    pf_status st = pf_frame_alloc(f, fmt, w, h, e->alloc, e->s);
    if (st != PF_OK) return st;
    pf_frame host;
    memset(&host, 0, sizeof host);
    st = pf_frame_alloc(&host, fmt, w, h, NULL, NULL);
    for (int p = 0; p < host.num_planes && st == PF_OK; p++) {
        size_t row, rows;
        pf_pixfmt_plane_size(fmt, w, h, p, &row, &rows);
        for (size_t y = 0; y < rows; y++)
            for (size_t x = 0; x < row; x++)
                ((unsigned char *)host.data[p])[y * host.stride[p] + x] =
                    (unsigned char)((x * 7 + y * 3 + (size_t)seed * 11) & 0xff);
    }
    if (st == PF_OK) st = pf_frame_copy_async(f, &host, e->s);
    if (st == PF_OK) st = pf_stream_synchronize(e->s);
    pf_frame_unref(&host);
    return st;
}

/* copy ------------------------------------------------------------------------------------ */

typedef struct copy_arg {
    pf_buffer *a, *b;
    size_t n;
} copy_arg;

static pf_status run_copy(void *arg, op_env *e)
{
    copy_arg *c = arg;
    return pf_memcpy_async(e->s, pf_buffer_data(c->b), pf_buffer_data(c->a), c->n);
}

/* preprocess ------------------------------------------------------------------------------ */

typedef struct pre_arg {
    const pf_frame *srcs[64];
    pf_tensor dst;
    pf_preprocess_params p;
    int n;
} pre_arg;

static pf_status run_pre(void *arg, op_env *e)
{
    pre_arg *a = arg;
    return pf_ops_preprocess(e->ops, a->srcs, NULL, a->n, &a->dst, &a->p, NULL);
}

/* convert, resize ------------------------------------------------------------------------- */

typedef struct two_frames {
    pf_frame src, dst;
} two_frames;

static pf_status run_convert(void *arg, op_env *e)
{
    two_frames *a = arg;
    return pf_ops_convert(e->ops, &a->src, &a->dst, NULL);
}

static pf_status run_resize(void *arg, op_env *e)
{
    two_frames *a = arg;
    return pf_ops_resize(e->ops, &a->src, &a->dst, PF_INTERP_BILINEAR);
}

/* reproject ------------------------------------------------------------------------------- */

typedef struct rp_arg {
    pf_frame src, views[8];
    pf_frame *dsts[8];
    pf_view v[8];
} rp_arg;

static pf_status run_reproject(void *arg, op_env *e)
{
    rp_arg *a = arg;
    return pf_ops_equirect_to_views(e->ops, &a->src, a->v, a->dsts, 8, PF_INTERP_BILINEAR);
}

/* composite ------------------------------------------------------------------------------- */

typedef struct comp_arg {
    pf_frame frame, dst;
    pf_tensor mask;
    pf_background bg;
} comp_arg;

static pf_status run_composite(void *arg, op_env *e)
{
    comp_arg *a = arg;
    return pf_ops_composite(e->ops, &a->frame, &a->mask, &a->bg, &a->dst);
}

/* ----------------------------------------------------------------------------------------- */

static bool want(const char *only, const char *name) { return !only || !strcmp(only, name); }

static void fail(const char *what)
{
    fprintf(stderr, "pixflow bench ops: %s: %s\n", what, pf_last_error());
}

int cmd_bench_ops(int argc, char **argv)
{
    cli_args a;
    if (!cli_parse("bench ops", ops_options, argc, argv, &a)) return CLI_EXIT_USAGE;
    if (cli_flag(ops_options, &a, "help")) {
        printf("usage: pixflow bench ops [--device SPEC] [--iters N] [--only OP] [--json]\n\n"
               "Times the image ops at job sizes (1080p frames, an 8K equirect) against the\n"
               "device's copy bandwidth measured in the same run.\n\noptions:\n");
        cli_print_options(stdout, ops_options);
        return CLI_EXIT_OK;
    }
    const char *only = cli_value(ops_options, &a, "only"), *v;
    static const char *const names[] = {"copy",      "preprocess", "convert", "resize",
                                        "reproject", "composite",  NULL};
    bool known = !only;
    for (int i = 0; names[i] && !known; i++) known = !strcmp(only, names[i]);
    if (!known) {
        fprintf(stderr, "pixflow bench ops: --only '%s': expected copy, preprocess, convert, "
                        "resize, reproject or composite\n", only);
        return CLI_EXIT_USAGE;
    }
    op_env e;
    memset(&e, 0, sizeof e);
    if (!model_dev_open(cli_value(ops_options, &a, "device"), &e.d)) {
        fprintf(stderr, "pixflow bench ops: --device: %s\n", pf_last_error());
        return CLI_EXIT_FAIL;
    }
    long iters = e.d.cuda ? 100 : 10;
    if ((v = cli_value(ops_options, &a, "iters")) && !cli_parse_long(v, 1, 100000, &iters)) {
        fprintf(stderr, "pixflow bench ops: --iters '%s': expected 1..100000\n", v);
        model_dev_close(&e.d);
        return CLI_EXIT_USAGE;
    }
    e.iters = (int)iters;
    e.warmup = e.d.cuda ? 5 : 1;
    const bool json = cli_flag(ops_options, &a, "json");
    pf_stream_params sp = pf_stream_params_default();
    if (!e.d.stream && pf_stream_create(&sp, &e.cpu_stream) != PF_OK) {
        fail("stream");
        model_dev_close(&e.d);
        return CLI_EXIT_FAIL;
    }
    e.s = e.d.stream ? e.d.stream : e.cpu_stream;
    pf_ops_params op = pf_ops_params_default();
    op.stream = e.s;
    pf_allocator_params ap = pf_allocator_params_default();
    ap.device = e.d.dev;
    ap.domain = e.d.cuda ? PF_MEM_DEVICE : PF_MEM_HOST;
    ap.name = "bench-ops";
    int rc = CLI_EXIT_OK;
    if (pf_ops_create(&op, &e.ops) != PF_OK || pf_allocator_create(&ap, &e.alloc) != PF_OK ||
        pf_event_create(e.d.dev, &e.e0) != PF_OK || pf_event_create(e.d.dev, &e.e1) != PF_OK) {
        fail("setup");
        rc = CLI_EXIT_FAIL;
    }
    op_result res[8];
    int nres = 0;
    double copy_gbps = 0;
    const int W = 1920, H = 1080;
    const int pre_n = e.d.cuda ? 32 : 8;

    /* copy: the reference bandwidth (read + write of each byte). */
    if (rc == CLI_EXIT_OK) {
        copy_arg c = {NULL, NULL, (size_t)256 << 20};
        double ms = 0;
        if (pf_allocator_alloc(e.alloc, c.n, e.s, &c.a) == PF_OK &&
            pf_allocator_alloc(e.alloc, c.n, e.s, &c.b) == PF_OK &&
            pf_memset_async(e.s, pf_buffer_data(c.a), 1, c.n) == PF_OK &&
            time_op(&e, run_copy, &c, &ms)) {
            copy_gbps = 2.0 * (double)c.n / (ms * 1e-3) / 1e9;
            if (want(only, "copy"))
                res[nres++] = (op_result){"copy", "256 MB memcpy on the device", 1, ms, 2.0 * c.n};
        } else {
            fail("copy");
            rc = CLI_EXIT_FAIL;
        }
        pf_buffer_unref(&c.a);
        pf_buffer_unref(&c.b);
    }
    if (rc == CLI_EXIT_OK && want(only, "preprocess")) {
        pre_arg *p = calloc(1, sizeof *p);
        pf_frame *fr = calloc((size_t)pre_n, sizeof *fr);
        bool ok = p && fr;
        for (int i = 0; i < pre_n && ok; i++) {
            ok = frame(&e, &fr[i], PF_PIXFMT_BGR24, W, H, i) == PF_OK;
            p->srcs[i] = &fr[i];
        }
        int64_t shape[4] = {pre_n, 3, 512, 512};
        pf_dtype dt = e.d.cuda ? PF_DTYPE_F16 : PF_DTYPE_F32;
        double ms = 0;
        if (ok) {
            p->n = pre_n;
            p->p = pf_preprocess_params_default();
            for (int c = 0; c < 3; c++) p->p.mean[c] = 0.5f, p->p.std[c] = 0.25f;
            ok = pf_tensor_alloc(&p->dst, dt, 4, shape, PF_LAYOUT_NCHW, e.alloc, e.s) == PF_OK &&
                 time_op(&e, run_pre, p, &ms);
        }
        if (ok)
            res[nres++] = (op_result){"preprocess",
                                      e.d.cuda ? "1080p BGR -> 512x512 RGB f16 NCHW, normalised"
                                               : "1080p BGR -> 512x512 RGB f32 NCHW, normalised",
                                      pre_n, ms,
                                      (double)pre_n * (W * H * 3 + 512 * 512 * 3 * (e.d.cuda ? 2 : 4))};
        else {
            fail("preprocess");
            rc = CLI_EXIT_FAIL;
        }
        for (int i = 0; fr && i < pre_n; i++) pf_frame_unref(&fr[i]);
        if (p) pf_tensor_unref(&p->dst);
        free(fr);
        free(p);
    }
    for (int k = 0; k < 2 && rc == CLI_EXIT_OK; k++) {
        const char *name = k ? "resize" : "convert";
        if (!want(only, name)) continue;
        two_frames t;
        memset(&t, 0, sizeof t);
        double ms = 0;
        bool ok = frame(&e, &t.src, k ? PF_PIXFMT_RGB24 : PF_PIXFMT_NV12, W, H, 1) == PF_OK &&
                  pf_frame_alloc(&t.dst, PF_PIXFMT_RGB24, k ? 1280 : W, k ? 720 : H, e.alloc,
                                 e.s) == PF_OK &&
                  time_op(&e, k ? run_resize : run_convert, &t, &ms);
        if (ok)
            res[nres++] = (op_result){name,
                                      k ? "1080p RGB -> 1280x720 RGB, bilinear"
                                        : "1080p NV12 -> RGB (BT.601 limited)",
                                      1, ms,
                                      k ? (double)W * H * 3 + 1280.0 * 720 * 3
                                        : (double)W * H * 1.5 + (double)W * H * 3};
        else {
            fail(name);
            rc = CLI_EXIT_FAIL;
        }
        pf_frame_unref(&t.src);
        pf_frame_unref(&t.dst);
    }
    if (rc == CLI_EXIT_OK && want(only, "reproject")) {
        rp_arg *r = calloc(1, sizeof *r);
        bool ok = r && frame(&e, &r->src, PF_PIXFMT_RGB24, 7680, 3840, 2) == PF_OK;
        for (int i = 0; i < 8 && ok; i++) {
            r->v[i] = (pf_view){.yaw = 45.0f * i, .pitch = 0, .roll = 0, .fov = 90,
                                .width = W, .height = H};
            ok = pf_frame_alloc(&r->views[i], PF_PIXFMT_RGB24, W, H, e.alloc, e.s) == PF_OK;
            r->dsts[i] = &r->views[i];
        }
        double ms = 0;
        if (ok) ok = time_op(&e, run_reproject, r, &ms);
        /* The floor: the views written once, the source read no more than once. */
        if (ok)
            res[nres++] = (op_result){"reproject", "7680x3840 equirect -> 8 views 1920x1080",
                                      1, ms, 8.0 * W * H * 3 + 8.0 * W * H * 3};
        else {
            fail("reproject");
            rc = CLI_EXIT_FAIL;
        }
        if (r) {
            pf_frame_unref(&r->src);
            for (int i = 0; i < 8; i++) pf_frame_unref(&r->views[i]);
        }
        free(r);
    }
    if (rc == CLI_EXIT_OK && want(only, "composite")) {
        comp_arg c;
        memset(&c, 0, sizeof c);
        int64_t ms_shape[4] = {1, 1, 256, 256};
        double ms = 0;
        bool ok = frame(&e, &c.frame, PF_PIXFMT_RGB24, W, H, 3) == PF_OK &&
                  pf_frame_alloc(&c.dst, PF_PIXFMT_RGB24, W, H, e.alloc, e.s) == PF_OK &&
                  pf_tensor_alloc(&c.mask, PF_DTYPE_F32, 4, ms_shape, PF_LAYOUT_NCHW, e.alloc,
                                  e.s) == PF_OK &&
                  pf_memset_async(e.s, c.mask.data, 0x3f, pf_tensor_nbytes(&c.mask)) == PF_OK;
        c.bg.kind = PF_BG_BLUR;
        c.bg.blur_sigma = 8.0f;
        if (ok) ok = time_op(&e, run_composite, &c, &ms);
        if (ok)
            res[nres++] = (op_result){"composite", "1080p RGB over its blur (sigma 8), 256x256 mask",
                                      1, ms, 2.0 * W * H * 3 + 256.0 * 256 * 4};
        else {
            fail("composite");
            rc = CLI_EXIT_FAIL;
        }
        pf_frame_unref(&c.frame);
        pf_frame_unref(&c.dst);
        pf_tensor_unref(&c.mask);
    }
    const pf_device_props *dp = pf_device_props_get(e.d.dev);
    if (json) {
        cli_json j;
        cli_json_init(&j, stdout);
        cli_json_object_begin(&j, NULL);
        cli_json_string(&j, "device", pf_device_spec(e.d.dev));
        cli_json_string(&j, "device_name", dp ? dp->name : NULL);
        cli_json_int(&j, "iters", e.iters);
        cli_json_double(&j, "copy_gbps", copy_gbps);
        cli_json_array_begin(&j, "ops");
        for (int i = 0; i < nres; i++) {
            cli_json_object_begin(&j, NULL);
            cli_json_string(&j, "op", res[i].name);
            cli_json_string(&j, "case", res[i].what);
            cli_json_int(&j, "frames", res[i].frames);
            cli_json_double(&j, "ms", res[i].ms);
            cli_json_double(&j, "us_per_frame", 1e3 * res[i].ms / res[i].frames);
            cli_json_double(&j, "gbps", res[i].bytes / (res[i].ms * 1e-3) / 1e9);
            cli_json_double(&j, "share_of_copy",
                            copy_gbps > 0 ? res[i].bytes / (res[i].ms * 1e-3) / 1e9 / copy_gbps : 0);
            cli_json_object_end(&j);
        }
        cli_json_array_end(&j);
        cli_json_object_end(&j);
        cli_json_finish(&j);
    } else {
        printf("pixflow bench ops: %s (%s), median of %d calls; copy bandwidth %.1f GB/s\n",
               pf_device_spec(e.d.dev), dp ? dp->name : "", e.iters, copy_gbps);
        printf("  %-11s %10s %12s %9s %8s  %s\n", "op", "ms/call", "us/frame", "GB/s", "of copy",
               "case");
        for (int i = 0; i < nres; i++) {
            double gbps = res[i].bytes / (res[i].ms * 1e-3) / 1e9;
            printf("  %-11s %10.4f %12.1f %9.1f %7.0f%%  %s\n", res[i].name, res[i].ms,
                   1e3 * res[i].ms / res[i].frames, gbps,
                   copy_gbps > 0 ? 100 * gbps / copy_gbps : 0.0, res[i].what);
        }
    }
    pf_event_destroy(&e.e0);
    pf_event_destroy(&e.e1);
    pf_allocator_destroy(&e.alloc);
    pf_ops_destroy(&e.ops);
    pf_stream_destroy(&e.cpu_stream);
    model_dev_close(&e.d);
    return rc;
}
