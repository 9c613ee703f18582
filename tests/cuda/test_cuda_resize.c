/* pf_ops_resize and pf_ops_resize_mask on CUDA against the C reference (run
 * on the CPU) on the same bytes: every format and interpolation at random
 * sizes (1x1, odd, padded strides, unaligned starts: device frames keep the
 * host layout), extreme factors (1920 -> 1, 1 -> 1920, 7680 -> 3), the
 * benchmark's 1080p -> 512x512 shapes, sizes spanning many thread blocks,
 * pinned-memory frames, masks of several leading shapes (and more planes
 * than one grid holds), a CUDA-graph capture and replay, and memory a CUDA
 * context cannot reach.
 *
 * Tolerance: none, for u8 and for f32. The kernel evaluates resize.h's taps,
 * weights and sums in the reference's order with __f*_rn intrinsics (no FMA
 * contraction), so any difference is a bug, not rounding noise. */
#include "cuda_test_util.h"

static pf_device *g_dev;
static pf_stream *g_cs, *g_hs;
static pf_allocator *g_dalloc, *g_palloc;

static const pf_pixfmt k_formats[] = {PF_PIXFMT_RGB24, PF_PIXFMT_BGR24, PF_PIXFMT_RGBA,
                                      PF_PIXFMT_GRAY8, PF_PIXFMT_NV12, PF_PIXFMT_I420};
#define NFMT 6

static pf_ops *make_ops(pf_stream *s, int reference)
{
    pf_ops_params op = pf_ops_params_default();
    op.stream = s;
    op.reference = reference;
    pf_ops *ops = NULL;
    CHECK_OK(pf_ops_create(&op, &ops));
    return ops;
}

static pf_status make_frame(pf_frame *f, pf_pixfmt fmt, int w, int h, int pad_max, size_t offset)
{
    size_t strides[PF_FRAME_MAX_PLANES] = {0}, total = offset;
    for (int p = 0; p < pf_pixfmt_num_planes(fmt); p++) {
        size_t row, rows;
        pf_status st = pf_pixfmt_plane_size(fmt, w, h, p, &row, &rows);
        if (st != PF_OK) return st;
        strides[p] = row + (size_t)(pad_max ? pf_test_rand_range(0, pad_max) : 0);
        total += strides[p] * rows;
    }
    pf_buffer *b = NULL;
    pf_status st = pf_buffer_alloc_host(total, &b);
    if (st != PF_OK) return st;
    fill_random(pf_buffer_data(b), total);
    st = pf_frame_wrap(f, fmt, w, h, b, offset, strides);
    pf_buffer_unref(&b);
    return st;
}

static pf_status upload_frame(const pf_frame *h, pf_allocator *alloc, pf_frame *d)
{
    pf_buffer *hb = h->buf[0];
    size_t size = pf_buffer_size(hb);
    size_t offset = (size_t)(h->data[0] - (uint8_t *)pf_buffer_data(hb));
    pf_buffer *db = NULL;
    pf_status st = pf_allocator_alloc(alloc, size, g_cs, &db);
    if (st == PF_OK) st = pf_memcpy_async(g_cs, pf_buffer_data(db), pf_buffer_data(hb), size);
    if (st == PF_OK) st = pf_frame_wrap(d, h->format, h->width, h->height, db, offset, h->stride);
    pf_buffer_unref(&db);
    return st;
}

/* n bytes at device address `dev` equal `host`; synchronizes. */
static int same_bytes(const void *dev, const void *host, size_t n, const char *label)
{
    unsigned char *got = hmalloc_pageable(n);
    CHECK_OK(pf_memcpy_async(g_cs, got, dev, n));
    CHECK_OK(pf_stream_synchronize(g_cs));
    size_t i = first_mismatch(got, host, n);
    if (i != NOWHERE)
        fprintf(stderr, "  %s: byte %zu of %zu: cuda %d, reference %d\n", label, i, n, got[i],
                ((const unsigned char *)host)[i]);
    hfree(got, 0);
    return i == NOWHERE;
}

static void compare(pf_ops *ref, pf_ops *cuda, const pf_frame *src, int dw, int dh,
                    pf_interp interp, pf_allocator *alloc, const char *label)
{
    pf_frame hd = {0}, ds = {0}, dd = {0};
    CHECK_OK(make_frame(&hd, src->format, dw, dh, 5, (size_t)pf_test_rand_range(0, 3)));
    CHECK_OK(upload_frame(src, alloc, &ds));
    CHECK_OK(upload_frame(&hd, alloc, &dd));
    if (ds.data[0] && dd.data[0]) {
        CHECK_OK(pf_ops_resize(ref, src, &hd, interp));
        pf_status st = pf_ops_resize(cuda, &ds, &dd, interp);
        CHECK_OK(st);
        if (st == PF_OK &&
            !same_bytes(pf_buffer_data(dd.buf[0]), pf_buffer_data(hd.buf[0]),
                        pf_buffer_size(hd.buf[0]), label)) {
            fprintf(stderr, "  %s: %s %dx%d -> %dx%d interp %d\n", label,
                    pf_pixfmt_name(src->format), src->width, src->height, dw, dh, (int)interp);
            CHECK(!"bit-exact");
        }
    }
    CHECK_OK(pf_stream_synchronize(g_cs));
    pf_frame_unref(&ds);
    pf_frame_unref(&dd);
    pf_frame_unref(&hd);
}

static void test_random(void)
{
    pf_ops *ref = make_ops(g_hs, 1), *cuda = make_ops(g_cs, 0);
    REQUIRE(ref && cuda);
    for (int it = 0; it < 40; it++) {
        int sw = (int)pf_test_rand_range(1, 80), sh = (int)pf_test_rand_range(1, 50);
        int dw = (int)pf_test_rand_range(1, 80), dh = (int)pf_test_rand_range(1, 50);
        if (it < 3) sw = sh = 1;
        if (it >= 3 && it < 6) dw = dh = 1;
        if (it >= 36) dw = (int)pf_test_rand_range(100, 600), dh = (int)pf_test_rand_range(9, 90);
        for (int f = 0; f < NFMT; f++) {
            pf_frame src = {0};
            CHECK_OK(make_frame(&src, k_formats[f], sw, sh, 6, (size_t)(it % 5)));
            for (int interp = 0; interp < 3; interp++) {
                char label[32];
                snprintf(label, sizeof label, "case %d", it);
                compare(ref, cuda, &src, dw, dh, (pf_interp)interp, g_dalloc, label);
            }
            pf_frame_unref(&src);
        }
    }
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cuda);
}

static void test_shapes(void)
{
    pf_ops *ref = make_ops(g_hs, 1), *cuda = make_ops(g_cs, 0);
    REQUIRE(ref && cuda);
    const struct {
        int sw, sh, dw, dh;
    } shapes[] = {{1920, 2, 1, 1}, {1, 1, 1920, 3}, {7680, 4, 3, 2}, {3, 7680, 2, 3},
                  {257, 129, 1023, 33}, {600, 400, 201, 133}, {97, 61, 97, 61}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int f = 0; f < NFMT; f++) {
            pf_frame src = {0};
            CHECK_OK(make_frame(&src, k_formats[f], shapes[s].sw, shapes[s].sh, 4, 1));
            for (int interp = 0; interp < 3; interp++) {
                char label[32];
                snprintf(label, sizeof label, "shape %zu", s);
                compare(ref, cuda, &src, shapes[s].dw, shapes[s].dh, (pf_interp)interp,
                        (s & 1) ? g_palloc : g_dalloc, label);
            }
            pf_frame_unref(&src);
        }
    const pf_pixfmt big[] = {PF_PIXFMT_RGB24, PF_PIXFMT_NV12, PF_PIXFMT_RGBA};
    for (int f = 0; f < 3; f++) {
        pf_frame src = {0};
        CHECK_OK(make_frame(&src, big[f], 1920, 1080, 0, 0));
        compare(ref, cuda, &src, 512, 512, PF_INTERP_BILINEAR, g_dalloc, "1080p bilinear");
        compare(ref, cuda, &src, 512, 512, PF_INTERP_AREA, g_dalloc, "1080p area");
        compare(ref, cuda, &src, 512, 512, PF_INTERP_NEAREST, g_dalloc, "1080p nearest");
        pf_frame_unref(&src);
    }
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cuda);
}

static pf_status make_mask(pf_tensor *t, int ndim, const int64_t *shape, pf_allocator *alloc)
{
    memset(t, 0, sizeof *t);
    pf_status st = pf_tensor_alloc(t, PF_DTYPE_F32, ndim, shape,
                                   ndim == 4 ? PF_LAYOUT_NCHW : PF_LAYOUT_NONE, alloc,
                                   alloc ? g_cs : NULL);
    if (st != PF_OK || alloc) return st;
    float *d = t->data;
    for (int64_t i = 0; i < pf_tensor_numel(t); i++)
        d[i] = -8.0f + 9.0f * (float)(pf_test_rand() % 1000001) / 1000000.0f;
    return PF_OK;
}

static void test_masks(void)
{
    pf_ops *ref = make_ops(g_hs, 1), *cuda = make_ops(g_cs, 0);
    REQUIRE(ref && cuda);
    for (int it = 0; it < 31; it++) {
        int ndim = 2 + it % 3;
        int64_t ss[4], ds[4];
        for (int d = 0; d < ndim - 2; d++) ss[d] = ds[d] = pf_test_rand_range(1, 3);
        ss[ndim - 2] = pf_test_rand_range(1, 300);
        ss[ndim - 1] = pf_test_rand_range(1, 300);
        ds[ndim - 2] = pf_test_rand_range(1, 300);
        ds[ndim - 1] = pf_test_rand_range(1, 300);
        if (it == 30) { /* more planes than gridDim.z takes: the kernel loops */
            ndim = 3;
            ss[0] = ds[0] = 70001;
            ss[1] = 3, ss[2] = 2, ds[1] = 2, ds[2] = 5;
        }
        pf_tensor hs, hd, dsrc, ddst;
        CHECK_OK(make_mask(&hs, ndim, ss, NULL));
        CHECK_OK(make_mask(&hd, ndim, ds, NULL));
        CHECK_OK(make_mask(&dsrc, ndim, ss, g_dalloc));
        CHECK_OK(make_mask(&ddst, ndim, ds, g_dalloc));
        CHECK_OK(pf_memcpy_async(g_cs, dsrc.data, hs.data, pf_tensor_nbytes(&hs)));
        for (int interp = 0; interp < 3; interp++) {
            CHECK_OK(pf_ops_resize_mask(ref, &hs, &hd, (pf_interp)interp));
            CHECK_OK(pf_ops_resize_mask(cuda, &dsrc, &ddst, (pf_interp)interp));
            char label[48];
            snprintf(label, sizeof label, "mask case %d interp %d", it, interp);
            CHECK(same_bytes(ddst.data, hd.data, pf_tensor_nbytes(&hd), label));
        }
        pf_tensor_unref(&hs);
        pf_tensor_unref(&hd);
        pf_tensor_unref(&dsrc);
        pf_tensor_unref(&ddst);
    }
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cuda);
}

typedef struct graph_work {
    pf_ops *ops;
    const pf_frame *src;
    pf_frame *dst;
} graph_work;

static pf_status graph_fn(void *user, pf_stream *s)
{
    graph_work *w = user;
    (void)s;
    return pf_ops_resize(w->ops, w->src, w->dst, PF_INTERP_AREA);
}

/* NV12 (two launches) captured once, replayed on new bytes. */
static void test_graph_capture(void)
{
    pf_ops *ref = make_ops(g_hs, 1), *cuda = make_ops(g_cs, 0);
    pf_graph_cache *gc = NULL;
    CHECK_OK(pf_graph_cache_create(NULL, &gc));
    REQUIRE(ref && cuda && gc);
    pf_frame hs = {0}, hd = {0}, ds = {0}, dd = {0};
    CHECK_OK(make_frame(&hs, PF_PIXFMT_NV12, 301, 171, 3, 1));
    CHECK_OK(make_frame(&hd, PF_PIXFMT_NV12, 97, 63, 3, 0));
    CHECK_OK(upload_frame(&hs, g_dalloc, &ds));
    CHECK_OK(upload_frame(&hd, g_dalloc, &dd));
    REQUIRE(ds.data[0] && dd.data[0]);
    graph_work w = {cuda, &ds, &dd};
    const char key[] = "rs";
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            fill_random(pf_buffer_data(hs.buf[0]), pf_buffer_size(hs.buf[0]));
            CHECK_OK(pf_memcpy_async(g_cs, pf_buffer_data(ds.buf[0]), pf_buffer_data(hs.buf[0]),
                                     pf_buffer_size(hs.buf[0])));
        }
        CHECK_OK(pf_graph_cache_run(gc, g_cs, key, sizeof key, graph_fn, &w));
        CHECK_OK(pf_ops_resize(ref, &hs, &hd, PF_INTERP_AREA));
        CHECK(same_bytes(pf_buffer_data(dd.buf[0]), pf_buffer_data(hd.buf[0]),
                         pf_buffer_size(hd.buf[0]), round ? "replay" : "capture"));
    }
    pf_graph_cache_stats gs = pf_test_graph_cache_stats(gc);
    CHECK_EQ_INT(gs.captures, 1);
    CHECK_EQ_INT(gs.replays, 1);
    pf_frame_unref(&hs);
    pf_frame_unref(&hd);
    pf_frame_unref(&ds);
    pf_frame_unref(&dd);
    pf_graph_cache_destroy(&gc);
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cuda);
}

static void test_unreachable(void)
{
    pf_ops *cuda = make_ops(g_cs, 0);
    REQUIRE(cuda);
    pf_frame h = {0}, d = {0}, hd = {0}, dd = {0};
    CHECK_OK(make_frame(&h, PF_PIXFMT_RGB24, 16, 8, 0, 0));
    CHECK_OK(make_frame(&hd, PF_PIXFMT_RGB24, 8, 4, 0, 0));
    CHECK_OK(upload_frame(&h, g_dalloc, &d));
    CHECK_OK(upload_frame(&hd, g_dalloc, &dd));
    pf_status st = pf_ops_resize(cuda, &h, &dd, PF_INTERP_BILINEAR);
    CHECK_EQ_INT(st, PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "src plane 0 is host memory") != NULL);
    st = pf_ops_resize(cuda, &d, &hd, PF_INTERP_BILINEAR);
    CHECK_EQ_INT(st, PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "dst plane 0 is host memory") != NULL);
    int64_t s2[2] = {8, 8};
    pf_tensor hm = {0}, dm = {0};
    CHECK_OK(pf_tensor_alloc(&hm, PF_DTYPE_F32, 2, s2, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_OK(pf_tensor_alloc(&dm, PF_DTYPE_F32, 2, s2, PF_LAYOUT_NONE, g_dalloc, g_cs));
    st = pf_ops_resize_mask(cuda, &hm, &dm, PF_INTERP_AREA);
    CHECK_EQ_INT(st, PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "src is host memory") != NULL);
    CHECK_OK(pf_stream_synchronize(g_cs));
    pf_tensor_unref(&hm);
    pf_tensor_unref(&dm);
    pf_frame_unref(&h);
    pf_frame_unref(&d);
    pf_frame_unref(&hd);
    pf_frame_unref(&dd);
    pf_ops_destroy(&cuda);
}

int main(void)
{
    g_dev = pf_test_cuda_device_or_skip();
    pf_test_seed(20261125);
    pf_stream_params sp = pf_stream_params_default();
    sp.device = g_dev;
    if (pf_stream_create(&sp, &g_cs) != PF_OK || pf_stream_create(NULL, &g_hs) != PF_OK) {
        fprintf(stderr, "streams: %s\n", pf_last_error());
        return 1;
    }
    g_dalloc = pf_test_allocator_create(g_dev, "rs-device", PF_MEM_DEVICE, 0);
    g_palloc = pf_test_allocator_create(g_dev, "rs-pinned", PF_MEM_PINNED, 0);
    if (!g_dalloc || !g_palloc) return 1;
    PF_RUN(test_random);
    PF_RUN(test_shapes);
    PF_RUN(test_masks);
    PF_RUN(test_graph_capture);
    PF_RUN(test_unreachable);
    pf_allocator_destroy(&g_dalloc);
    pf_allocator_destroy(&g_palloc);
    pf_stream_destroy(&g_cs);
    pf_stream_destroy(&g_hs);
    return pf_test_finish();
}
