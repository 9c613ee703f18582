/* pf_ops_preprocess on CUDA against the C reference (run on the CPU) on the
 * same inputs: every source format, 1x1 and odd sizes, padded strides and
 * unaligned starts (frames keep their host layout on the device), ROIs,
 * mixed sizes in one batch, more frames than one launch takes, both layouts
 * and dtypes, every interpolation, letterbox, channel order, mean/std, YUV
 * matrix and range; the benchmark's 1080p shape; pinned-memory sources; a
 * CUDA-graph capture and replay; memory the context cannot reach.
 * Tolerance (preprocess_check.h): f32 |diff| <= 1e-4 (1/|std| + |mean/std|)
 * per channel, f16 1 ulp or that bound. */
#include "../preprocess_check.h"

static pf_device *g_dev;
static pf_stream *g_cs, *g_hs; /* CUDA stream, CPU stream */
static pf_allocator *g_dalloc, *g_palloc;
static ppc_stats g_stats;

/* Runs the case on the reference (host) and on CUDA (frames uploaded from
 * `alloc`), compares; returns the number of values out of tolerance. */
static long run_and_compare(pf_ops *ref, pf_ops *cuda, const ppc_case *c, pf_allocator *alloc,
                            const char *label)
{
    const pf_frame *hsrc[PPC_MAX_N], *dsrc[PPC_MAX_N];
    pf_frame dev[PPC_MAX_N];
    memset(dev, 0, sizeof dev);
    long bad = -1;
    pf_tensor href = {0}, dout = {0};
    pf_letterbox_info ih[PPC_MAX_N], id[PPC_MAX_N];
    void *host = NULL;
    for (int i = 0; i < c->n; i++) {
        hsrc[i] = &c->src[i];
        dsrc[i] = &dev[i];
        pf_status st = otu_upload_frame(&c->src[i], alloc, g_cs, &dev[i]);
        CHECK_OK(st);
        if (st != PF_OK) goto out;
    }
    CHECK_OK(ppc_alloc_dst(c, &href, NULL, NULL));
    CHECK_OK(ppc_alloc_dst(c, &dout, g_dalloc, g_cs));
    if (!href.data || !dout.data) goto out;
    size_t nbytes = pf_tensor_nbytes(&dout);
    CHECK_OK(pf_memset_async(g_cs, dout.data, 0x7F, nbytes)); /* poison */
    const pf_rect *rois = c->use_rois ? c->rois : NULL;
    CHECK_OK(pf_ops_preprocess(ref, hsrc, rois, c->n, &href, &c->p, ih));
    pf_status st = pf_ops_preprocess(cuda, dsrc, rois, c->n, &dout, &c->p, id);
    CHECK_OK(st);
    host = malloc(nbytes);
    if (st != PF_OK || !host) goto out;
    CHECK_OK(pf_memcpy_async(g_cs, host, dout.data, nbytes));
    CHECK_OK(pf_stream_synchronize(g_cs));
    bad = ppc_compare(c, href.data, host, 1e-4, label, &g_stats);
    CHECK_EQ_INT(bad, 0);
    CHECK(memcmp(ih, id, sizeof(pf_letterbox_info) * (size_t)c->n) == 0);
out:
    free(host);
    pf_tensor_unref(&href);
    pf_tensor_unref(&dout);
    for (int i = 0; i < c->n; i++) pf_frame_unref(&dev[i]);
    return bad;
}

static void test_random(void)
{
    pf_ops *ref = otu_make_ops(g_hs, 1, NULL), *cuda = otu_make_ops(g_cs, 0, NULL);
    REQUIRE(ref && cuda);
    ppc_coverage cov;
    memset(&cov, 0, sizeof cov);
    for (int it = 0; it < 300; it++) {
        ppc_case c;
        CHECK_OK(ppc_random_case(&c, (int)pf_test_rand_range(1, 5), it < 200 ? 24 : 150));
        char label[32];
        snprintf(label, sizeof label, "random case %d", it);
        run_and_compare(ref, cuda, &c, g_dalloc, label);
        ppc_cover(&cov, &c);
        ppc_free(&c);
    }
    ppc_check_coverage(&cov);
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cuda);
}

/* Shapes that stress tiles and taps: wider and taller than one 128 x 16
 * tile, large downscales (many area taps, 64-bit tap arithmetic for the
 * 40000-wide one), upscales, 1x1 both ways; every format and interpolation. */
static void test_shapes(void)
{
    pf_ops *ref = otu_make_ops(g_hs, 1, NULL), *cuda = otu_make_ops(g_cs, 0, NULL);
    REQUIRE(ref && cuda);
    struct {
        int sw, sh, W, H;
    } shapes[] = {{301, 203, 130, 17}, {7, 5, 261, 37}, {64, 8, 129, 33}, {5, 90, 40, 6},
                  {1, 1, 13, 11}, {250, 3, 1, 1}, {40000, 2, 60000, 3}, {33, 17, 33, 17}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int fi = 0; fi < PPC_NFMT; fi++)
            for (int interp = 0; interp < 3; interp++) {
                ppc_case c;
                pf_layout lay = (interp + fi) & 1 ? PF_LAYOUT_NHWC : PF_LAYOUT_NCHW;
                pf_dtype dt = fi & 1 ? PF_DTYPE_F16 : PF_DTYPE_F32;
                CHECK_OK(ppc_shape_case(&c, ppc_formats[fi], shapes[s].sw, shapes[s].sh,
                                        shapes[s].W, shapes[s].H, lay, dt, (pf_interp)interp));
                char label[48];
                snprintf(label, sizeof label, "shape %zu fmt %d interp %d", s, fi, interp);
                run_and_compare(ref, cuda, &c, g_dalloc, label);
                ppc_free(&c);
            }
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cuda);
}

/* The benchmark's shape (1080p BGR24 and NV12 -> 512x512 f16 NCHW, ImageNet
 * mean/std), 70 mixed frames (two launches), and frames in pinned memory. */
static void test_batches_and_memory(void)
{
    pf_ops *ref = otu_make_ops(g_hs, 1, NULL), *cuda = otu_make_ops(g_cs, 0, NULL);
    REQUIRE(ref && cuda);
    const float mean[3] = {0.485f, 0.456f, 0.406f}, stdv[3] = {0.229f, 0.224f, 0.225f};
    for (int k = 0; k < 3; k++) {
        ppc_case c;
        memset(&c, 0, sizeof c);
        c.n = 3;
        CHECK_OK(ppc_make_frame(&c.src[0], PF_PIXFMT_BGR24, 1920, 1080, 0, 0));
        CHECK_OK(ppc_make_frame(&c.src[1], PF_PIXFMT_NV12, 1920, 1080, 0, 0));
        CHECK_OK(ppc_make_frame(&c.src[2], PF_PIXFMT_BGR24, 1920, 1080, 0, 0));
        c.W = c.H = 512;
        c.layout = PF_LAYOUT_NCHW;
        c.dtype = PF_DTYPE_F16;
        c.p = pf_preprocess_params_default();
        c.p.interp = (pf_interp)k;
        c.p.matrix = PF_YUV_BT709;
        memcpy(c.p.mean, mean, sizeof mean);
        memcpy(c.p.std, stdv, sizeof stdv);
        run_and_compare(ref, cuda, &c, g_dalloc, "1080p");
        ppc_free(&c);
    }
    ppc_case c;
    memset(&c, 0, sizeof c);
    for (int i = 0; i < 70; i++) {
        int w = (int)pf_test_rand_range(1, 40), h = (int)pf_test_rand_range(1, 40);
        CHECK_OK(ppc_make_frame(&c.src[i], ppc_formats[i % PPC_NFMT], w, h, 3, (size_t)(i & 3)));
        c.rois[i] = (pf_rect){0, 0, w, h};
        c.n = i + 1;
    }
    c.W = 37;
    c.H = 29;
    c.layout = PF_LAYOUT_NCHW;
    c.dtype = PF_DTYPE_F16;
    ppc_random_params(&c.p);
    run_and_compare(ref, cuda, &c, g_dalloc, "70 frames");
    /* The same frames read from pinned host memory. */
    run_and_compare(ref, cuda, &c, g_palloc, "70 frames, pinned");
    ppc_free(&c);
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cuda);
}

/* Graph capture: the launch is captured once and replayed; a replay reads
 * the frames' current bytes (the descriptors hold addresses, not data). */
typedef struct graph_work {
    pf_ops *ops;
    const pf_frame *const *srcs;
    pf_tensor *dst;
    const pf_preprocess_params *p;
} graph_work;

static pf_status graph_fn(void *user, pf_stream *s)
{
    graph_work *w = user;
    (void)s;
    return pf_ops_preprocess(w->ops, w->srcs, NULL, 2, w->dst, w->p, NULL);
}

static void test_graph_capture(void)
{
    pf_ops *ref = otu_make_ops(g_hs, 1, NULL), *cuda = otu_make_ops(g_cs, 0, NULL);
    pf_graph_cache *gc = NULL;
    CHECK_OK(pf_graph_cache_create(NULL, &gc));
    REQUIRE(ref && cuda && gc);
    ppc_case c;
    memset(&c, 0, sizeof c);
    c.n = 2;
    CHECK_OK(ppc_make_frame(&c.src[0], PF_PIXFMT_BGR24, 96, 64, 0, 0));
    CHECK_OK(ppc_make_frame(&c.src[1], PF_PIXFMT_I420, 50, 70, 0, 0));
    c.W = 40;
    c.H = 30;
    c.layout = PF_LAYOUT_NCHW;
    c.dtype = PF_DTYPE_F16;
    ppc_random_params(&c.p);
    pf_frame dev[2] = {{0}};
    CHECK_OK(otu_upload_frame(&c.src[0], g_dalloc, g_cs, &dev[0]));
    CHECK_OK(otu_upload_frame(&c.src[1], g_dalloc, g_cs, &dev[1]));
    pf_tensor dout = {0}, href = {0};
    CHECK_OK(ppc_alloc_dst(&c, &dout, g_dalloc, g_cs));
    CHECK_OK(ppc_alloc_dst(&c, &href, NULL, NULL));
    REQUIRE(dev[0].data[0] && dev[1].data[0] && dout.data && href.data);
    const pf_frame *dsrc[2] = {&dev[0], &dev[1]}, *hsrc[2] = {&c.src[0], &c.src[1]};
    graph_work w = {cuda, dsrc, &dout, &c.p};
    size_t nbytes = pf_tensor_nbytes(&dout);
    void *host = malloc(nbytes);
    REQUIRE(host);
    const char key[] = "pp";
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            /* New pixels at the same addresses, then replay. */
            for (int i = 0; i < 2; i++) {
                pf_buffer *hb = c.src[i].buf[0];
                uint8_t *d = pf_buffer_data(hb);
                for (size_t b = 0; b < pf_buffer_size(hb); b++) d[b] = (uint8_t)pf_test_rand();
                CHECK_OK(pf_memcpy_async(g_cs, pf_buffer_data(dev[i].buf[0]), d,
                                         pf_buffer_size(hb)));
            }
        }
        CHECK_OK(pf_memset_async(g_cs, dout.data, 0x7F, nbytes));
        CHECK_OK(pf_graph_cache_run(gc, g_cs, key, sizeof key, graph_fn, &w));
        CHECK_OK(pf_memcpy_async(g_cs, host, dout.data, nbytes));
        CHECK_OK(pf_stream_synchronize(g_cs));
        CHECK_OK(pf_ops_preprocess(ref, hsrc, NULL, 2, &href, &c.p, NULL));
        CHECK_EQ_INT(ppc_compare(&c, href.data, host, 1e-4, round ? "replay" : "capture",
                                 &g_stats),
                     0);
    }
    pf_graph_cache_stats gs = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(gs.captures, 1);
    CHECK_EQ_INT(gs.replays, 1);
    CHECK_EQ_INT(gs.capture_failures, 0);
    free(host);
    pf_tensor_unref(&dout);
    pf_tensor_unref(&href);
    pf_frame_unref(&dev[0]);
    pf_frame_unref(&dev[1]);
    ppc_free(&c);
    pf_graph_cache_destroy(&gc);
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cuda);
}

/* Pageable host memory is not reachable from a CUDA context; nor is a host
 * destination. Messages name the argument and the memory. */
static void test_unreachable(void)
{
    pf_ops *cuda = otu_make_ops(g_cs, 0, NULL);
    REQUIRE(cuda);
    pf_frame h = {0}, d = {0};
    CHECK_OK(ppc_make_frame(&h, PF_PIXFMT_RGB24, 16, 8, 0, 0));
    CHECK_OK(otu_upload_frame(&h, g_dalloc, g_cs, &d));
    pf_tensor dt = {0}, ht = {0};
    int64_t shape[4] = {1, 3, 8, 8};
    CHECK_OK(pf_tensor_alloc(&dt, PF_DTYPE_F16, 4, shape, PF_LAYOUT_NCHW, g_dalloc, g_cs));
    CHECK_OK(pf_tensor_alloc(&ht, PF_DTYPE_F16, 4, shape, PF_LAYOUT_NCHW, NULL, NULL));
    const pf_frame *hs[1] = {&h}, *ds[1] = {&d};
    pf_status st = pf_ops_preprocess(cuda, hs, NULL, 1, &dt, NULL, NULL);
    CHECK_EQ_INT(st, PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "srcs[0] plane 0 is host memory") != NULL);
    st = pf_ops_preprocess(cuda, ds, NULL, 1, &ht, NULL, NULL);
    CHECK_EQ_INT(st, PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "dst is host memory") != NULL);
    CHECK_OK(pf_ops_preprocess(cuda, ds, NULL, 1, &dt, NULL, NULL));
    CHECK_OK(pf_stream_synchronize(g_cs));
    pf_tensor_unref(&dt);
    pf_tensor_unref(&ht);
    pf_frame_unref(&h);
    pf_frame_unref(&d);
    pf_ops_destroy(&cuda);
}

int main(void)
{
    if (otu_cuda_setup(20261122, "pp", &g_dev, &g_cs, &g_hs, &g_dalloc, &g_palloc) != 0) return 1;
    PF_RUN(test_random);
    PF_RUN(test_shapes);
    PF_RUN(test_batches_and_memory);
    PF_RUN(test_graph_capture);
    PF_RUN(test_unreachable);
    printf("CUDA vs reference: %ld values, worst f32 |diff| / bound %.3f, worst f16 %d ulp\n",
           g_stats.values, g_stats.worst_f32, g_stats.worst_ulps);
    otu_cuda_teardown(&g_cs, &g_hs, &g_dalloc, &g_palloc);
    return pf_test_finish();
}
