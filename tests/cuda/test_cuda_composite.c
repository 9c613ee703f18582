/* pf_ops_composite on CUDA against the C reference (run on the CPU) on the
 * same inputs: every frame format x output format x background kind, random
 * sizes (1x1, odd), padded strides and unaligned starts (frames and masks
 * keep their host layout on the device), f32 and u8 masks of other sizes,
 * both blur regimes, both YUV matrices and ranges; the benchmark's 1080p
 * shapes (256x256 mask, 1080p image, sigma 4 and 32, NV12 -> NV12); odd
 * large sizes; in place; pinned-memory inputs; scratch growing between
 * calls; memory the context cannot reach.
 *
 * Tolerance: none. The kernels perform the reference's single-precision
 * operations in its order (__f*_rn intrinsics, never contracted to FMAs;
 * exact integer tap arithmetic), so the bytes must be identical. Each
 * comparison prints the share of differing bytes and the largest
 * difference when they are not, so a failure says whether it is an
 * off-by-one rounding (an operation order that drifted) or a real bug. */
#include "../composite_check.h"

static pf_device *g_dev;
static pf_stream *g_cs, *g_hs; /* CUDA stream, CPU stream */
static pf_allocator *g_dalloc, *g_palloc;
static long g_compared, g_bytes;

static pf_status upload_mask(const pf_tensor *h, pf_allocator *alloc, pf_tensor *d)
{
    memset(d, 0, sizeof *d);
    pf_buffer *db = NULL;
    size_t offset = (size_t)((uint8_t *)h->data - (uint8_t *)pf_buffer_data(h->buf));
    pf_status st = otu_upload_buffer(h->buf, alloc, g_cs, &db);
    if (st == PF_OK)
        st = pf_tensor_wrap(d, db, offset, h->dtype, h->ndim, h->shape, h->strides, h->layout);
    pf_buffer_unref(&db);
    return st;
}

/* Device frame d back into a host frame of the same layout. */
static pf_status download_frame(const pf_frame *d, pf_frame *h)
{
    memset(h, 0, sizeof *h);
    size_t size = pf_buffer_size(d->buf[0]);
    size_t offset = (size_t)(d->data[0] - (uint8_t *)pf_buffer_data(d->buf[0]));
    pf_buffer *hb = NULL;
    pf_status st = pf_buffer_alloc_host(size, &hb);
    if (st == PF_OK) st = pf_memcpy_async(g_cs, pf_buffer_data(hb), pf_buffer_data(d->buf[0]), size);
    if (st == PF_OK) st = pf_stream_synchronize(g_cs);
    if (st == PF_OK) st = pf_frame_wrap(h, d->format, d->width, d->height, hb, offset, d->stride);
    pf_buffer_unref(&hb);
    return st;
}

/* A poisoned output frame of the case's format in `alloc` memory. */
static pf_status alloc_dst(const cc_case *c, pf_allocator *alloc, pf_frame *d)
{
    memset(d, 0, sizeof *d);
    pf_status st = pf_frame_alloc(d, c->out, c->w, c->h, alloc, g_cs);
    if (st == PF_OK)
        st = pf_memset_async(g_cs, pf_buffer_data(d->buf[0]), 0xA5, pf_buffer_size(d->buf[0]));
    return st;
}

/* Reference on the host, CUDA on copies in `alloc` memory; compares. */
static void run_and_compare(pf_ops *ref, pf_ops *cuda, const cc_case *c, pf_allocator *alloc,
                            const char *label)
{
    pf_frame dframe = {0}, dimage = {0}, ddst = {0}, back = {0}, href = {0};
    pf_tensor dmask = {0};
    pf_background dbg = c->bg;
    pf_status st = otu_upload_frame(&c->frame, alloc, g_cs, &dframe);
    if (st == PF_OK) st = upload_mask(&c->mask, alloc, &dmask);
    if (st == PF_OK && c->bg.image) {
        st = otu_upload_frame(&c->image, alloc, g_cs, &dimage);
        dbg.image = &dimage;
    }
    if (st == PF_OK) st = alloc_dst(c, alloc, &ddst);
    CHECK_OK(st);
    if (st == PF_OK) {
        st = pf_ops_composite(cuda, &dframe, &dmask, &dbg, &ddst);
        CHECK_OK(st);
    }
    if (st == PF_OK) {
        st = download_frame(&ddst, &back);
        CHECK_OK(st);
    }
    if (st == PF_OK) {
        st = cc_make_frame(&href, c->out, c->w, c->h, 0, 0);
        if (st == PF_OK) st = pf_ops_composite(ref, &c->frame, &c->mask, &c->bg, &href);
        CHECK_OK(st);
    }
    if (st == PF_OK) {
        cc_diff d = cc_compare(&href, &back);
        g_compared++;
        g_bytes += d.bytes;
        if (d.differing) {
            cc_print_case(c, label);
            fprintf(stderr,
                    "    %ld of %ld bytes differ (%.4f%%), %ld by more than 1, max %d; first "
                    "plane %d byte %d row %d\n",
                    d.differing, d.bytes, 100.0 * d.differing / d.bytes, d.over1, d.max_abs,
                    d.plane, d.x, d.y);
        }
        CHECK_EQ_INT(d.differing, 0);
    } else {
        cc_print_case(c, label);
    }
    pf_frame_unref(&dframe);
    pf_frame_unref(&dimage);
    pf_frame_unref(&ddst);
    pf_frame_unref(&back);
    pf_frame_unref(&href);
    pf_tensor_unref(&dmask);
}

static void test_random_vs_reference(void)
{
    pf_ops *ref = otu_make_ops(g_hs, 1, NULL), *cuda = otu_make_ops(g_cs, 0, NULL);
    REQUIRE(ref && cuda);
    for (int i = 0; i < CC_SWEEP(6); i++) {
        cc_case c;
        char label[64];
        int rep;
        pf_status st = cc_sweep_case(&c, i, 40, 150, &rep, label, sizeof label);
        CHECK_OK(st);
        if (st == PF_OK) run_and_compare(ref, cuda, &c, g_dalloc, label);
        cc_free(&c);
    }
    printf("     %ld cases, %ld output bytes compared\n", g_compared, g_bytes);
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cuda);
}

/* The benchmark's shapes at full size, and odd large sizes (partial blocks
 * in every kernel's grid, odd NV12 chroma). */
static void test_large_shapes(void)
{
    pf_ops *ref = otu_make_ops(g_hs, 1, NULL), *cuda = otu_make_ops(g_cs, 0, NULL);
    REQUIRE(ref && cuda);
    const struct {
        pf_pixfmt in, out;
        int kind, w, h;
        float sigma;
        pf_pixfmt img;
        int iw, ih;
    } cases[] = {
        {PF_PIXFMT_RGB24, PF_PIXFMT_RGB24, PF_BG_COLOR, 1920, 1080, 0, 0, 0, 0},
        {PF_PIXFMT_RGB24, PF_PIXFMT_RGB24, PF_BG_IMAGE, 1920, 1080, 0, PF_PIXFMT_RGB24, 1920, 1080},
        {PF_PIXFMT_RGB24, PF_PIXFMT_RGB24, PF_BG_BLUR, 1920, 1080, 4.0f, 0, 0, 0},
        {PF_PIXFMT_RGB24, PF_PIXFMT_RGB24, PF_BG_BLUR, 1920, 1080, 32.0f, 0, 0, 0},
        {PF_PIXFMT_NV12, PF_PIXFMT_NV12, PF_BG_BLUR, 1920, 1080, 12.0f, 0, 0, 0},
        {PF_PIXFMT_NV12, PF_PIXFMT_NV12, PF_BG_COLOR, 1920, 1080, 0, 0, 0, 0},
        {PF_PIXFMT_I420, PF_PIXFMT_NV12, PF_BG_BLUR, 1001, 777, 8.0f, 0, 0, 0},
        {PF_PIXFMT_BGR24, PF_PIXFMT_RGBA, PF_BG_IMAGE, 1003, 501, 0, PF_PIXFMT_NV12, 333, 999},
        {PF_PIXFMT_RGBA, PF_PIXFMT_BGR24, PF_BG_FRAME, 641, 359, 0, PF_PIXFMT_I420, 641, 359},
        {PF_PIXFMT_NV12, PF_PIXFMT_RGB24, PF_BG_BLUR, 3, 4001, 64.0f, 0, 0, 0},
        {PF_PIXFMT_RGB24, PF_PIXFMT_NV12, PF_BG_BLUR, 4001, 3, 5.5f, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cc_case c;
        memset(&c, 0, sizeof c);
        c.w = cases[i].w;
        c.h = cases[i].h;
        c.out = cases[i].out;
        CHECK_OK(cc_make_frame(&c.frame, cases[i].in, c.w, c.h, (int)(i & 3) * 5, i & 1));
        CHECK_OK(cc_make_mask(&c.mask, (i & 1) ? PF_DTYPE_U8 : PF_DTYPE_F32, 256, 256, 4, 0,
                              (i & 2) ? CC_MASK_RANDOM : CC_MASK_RAMP));
        c.bg.kind = (pf_background_kind)cases[i].kind;
        c.bg.blur_sigma = cases[i].sigma;
        c.bg.color[0] = 20;
        c.bg.color[1] = 200;
        c.bg.color[2] = 90;
        c.bg.matrix = (i & 1) ? PF_YUV_BT709 : PF_YUV_BT601;
        c.bg.range = (i & 2) ? PF_YUV_FULL : PF_YUV_LIMITED;
        if (cases[i].img) {
            CHECK_OK(cc_make_frame(&c.image, cases[i].img, cases[i].iw, cases[i].ih, 3, 0));
            c.bg.image = &c.image;
        }
        char label[32];
        snprintf(label, sizeof label, "large case %zu", i);
        run_and_compare(ref, cuda, &c, g_dalloc, label);
        cc_free(&c);
    }
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cuda);
}

/* Inputs and output in CUDA pinned host memory. */
static void test_pinned(void)
{
    pf_ops *ref = otu_make_ops(g_hs, 1, NULL), *cuda = otu_make_ops(g_cs, 0, NULL);
    REQUIRE(ref && cuda && g_palloc);
    for (int kind = 0; kind < CC_NKIND; kind++) {
        cc_case c;
        CHECK_OK(cc_random_case(&c, cc_in_formats[kind % CC_NIN], cc_out_formats[kind % CC_NOUT],
                                kind, 60));
        run_and_compare(ref, cuda, &c, g_palloc, "pinned");
        cc_free(&c);
    }
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cuda);
}

/* Scratch grows between calls (small blur, large blur, small again, each
 * regime) and every call still matches. */
static void test_scratch_reuse(void)
{
    pf_ops *ref = otu_make_ops(g_hs, 1, NULL), *cuda = otu_make_ops(g_cs, 0, NULL);
    REQUIRE(ref && cuda);
    const int sizes[][2] = {{37, 21}, {640, 480}, {51, 9}, {1280, 720}, {17, 33}};
    const float sigmas[] = {3.0f, 20.0f, 7.5f, 2.0f, 40.0f};
    for (int i = 0; i < 5; i++) {
        cc_case c;
        memset(&c, 0, sizeof c);
        c.w = sizes[i][0];
        c.h = sizes[i][1];
        c.out = PF_PIXFMT_RGB24;
        CHECK_OK(cc_make_frame(&c.frame, PF_PIXFMT_NV12, c.w, c.h, 0, 0));
        CHECK_OK(cc_make_mask(&c.mask, PF_DTYPE_F32, 64, 48, 2, 0, CC_MASK_RAMP));
        c.bg.kind = PF_BG_BLUR;
        c.bg.blur_sigma = sigmas[i];
        run_and_compare(ref, cuda, &c, g_dalloc, "scratch reuse");
        cc_free(&c);
    }
    pf_ops_destroy(&ref);
    pf_ops_destroy(&cuda);
}

/* dst = frame on the device gives the out-of-place result. */
static void test_in_place(void)
{
    pf_ops *cuda = otu_make_ops(g_cs, 0, NULL);
    REQUIRE(cuda);
    const pf_pixfmt fmts[] = {PF_PIXFMT_RGB24, PF_PIXFMT_RGBA, PF_PIXFMT_NV12};
    for (int fi = 0; fi < 3; fi++)
        for (int kind = 0; kind < CC_NKIND; kind++) {
            cc_case c;
            CHECK_OK(cc_random_case(&c, fmts[fi], fmts[fi], kind, 90));
            if (kind == PF_BG_BLUR) c.bg.blur_sigma = (fi & 1) ? 3.0f : 20.0f;
            pf_frame dframe = {0}, dsep = {0}, dimg = {0}, a = {0}, b = {0};
            pf_tensor dmask = {0};
            pf_background dbg = c.bg;
            CHECK_OK(otu_upload_frame(&c.frame, g_dalloc, g_cs, &dframe));
            CHECK_OK(upload_mask(&c.mask, g_dalloc, &dmask));
            if (c.bg.image) {
                CHECK_OK(otu_upload_frame(&c.image, g_dalloc, g_cs, &dimg));
                dbg.image = &dimg;
            }
            CHECK_OK(alloc_dst(&c, g_dalloc, &dsep));
            CHECK_OK(pf_ops_composite(cuda, &dframe, &dmask, &dbg, &dsep));
            CHECK_OK(pf_ops_composite(cuda, &dframe, &dmask, &dbg, &dframe));
            CHECK_OK(download_frame(&dsep, &a));
            CHECK_OK(download_frame(&dframe, &b));
            cc_diff d = cc_compare(&a, &b);
            if (d.differing) cc_print_case(&c, "in place");
            CHECK_EQ_INT(d.differing, 0);
            pf_frame_unref(&dframe);
            pf_frame_unref(&dsep);
            pf_frame_unref(&dimg);
            pf_frame_unref(&a);
            pf_frame_unref(&b);
            pf_tensor_unref(&dmask);
            cc_free(&c);
        }
    pf_ops_destroy(&cuda);
}

/* Host (pageable) memory handed to the CUDA context is refused, naming the
 * argument; nothing is launched. */
static void test_unreachable(void)
{
    pf_ops *cuda = otu_make_ops(g_cs, 0, NULL);
    REQUIRE(cuda);
    cc_case c;
    CHECK_OK(cc_random_case(&c, PF_PIXFMT_RGB24, PF_PIXFMT_RGB24, PF_BG_COLOR, 20));
    pf_frame dframe = {0}, ddst = {0};
    pf_tensor dmask = {0};
    CHECK_OK(otu_upload_frame(&c.frame, g_dalloc, g_cs, &dframe));
    CHECK_OK(upload_mask(&c.mask, g_dalloc, &dmask));
    CHECK_OK(alloc_dst(&c, g_dalloc, &ddst));
    pf_status st = pf_ops_composite(cuda, &c.frame, &dmask, &c.bg, &ddst);
    CHECK_EQ_INT(st, PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "frame plane 0 is host memory") != NULL);
    st = pf_ops_composite(cuda, &dframe, &c.mask, &c.bg, &ddst);
    CHECK_EQ_INT(st, PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "mask is host memory") != NULL);
    /* And device memory handed to a CPU context. */
    pf_ops *cpu = otu_make_ops(g_hs, 0, NULL);
    pf_frame hdst = {0};
    CHECK_OK(cc_make_frame(&hdst, c.out, c.w, c.h, 0, 0));
    st = pf_ops_composite(cpu, &dframe, &c.mask, &c.bg, &hdst);
    CHECK_EQ_INT(st, PF_ERR_UNSUPPORTED);
    CHECK(strstr(pf_last_error(), "frame plane 0 is device memory of cuda:") != NULL);
    printf("     message: %s\n", pf_last_error());
    pf_frame_unref(&hdst);
    pf_ops_destroy(&cpu);
    pf_frame_unref(&dframe);
    pf_frame_unref(&ddst);
    pf_tensor_unref(&dmask);
    cc_free(&c);
    pf_ops_destroy(&cuda);
}

int main(void)
{
    if (otu_cuda_setup(20261123, "composite", &g_dev, &g_cs, &g_hs, &g_dalloc, &g_palloc) != 0)
        return 1;
    PF_RUN(test_random_vs_reference);
    PF_RUN(test_large_shapes);
    PF_RUN(test_pinned);
    PF_RUN(test_scratch_reuse);
    PF_RUN(test_in_place);
    PF_RUN(test_unreachable);
    otu_cuda_teardown(&g_cs, &g_hs, &g_dalloc, &g_palloc);
    return pf_test_finish();
}
