/* pf_segmenter on a GPU (jobs.h): a host frame (uploaded, the composite
 * downloaded) and a device frame give the same composite, and both match
 * the CPU segmenter within the job parity test's tolerance (the model runs
 * in fp16 there, fp32 on the CPU: masks differ along the outline only);
 * the mask comes back as a host GRAY8 frame; an image background and
 * smoothing run there too. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pf_test.h"

static pf_device *g_dev;
static pf_frame g_img;

/* Mean |a - b| over the samples, and the share of samples off by more than 8. */
static void diff(const pf_frame *a, const pf_frame *b, double *mean, double *over)
{
    int bpp = a->format == PF_PIXFMT_GRAY8 ? 1 : a->format == PF_PIXFMT_RGBA ? 4 : 3;
    double sum = 0;
    long n = 0, big = 0;
    for (int y = 0; y < a->height; y++)
        for (int x = 0; x < a->width * bpp; x++) {
            int d = abs(a->data[0][(size_t)y * a->stride[0] + x] - b->data[0][(size_t)y * b->stride[0] + x]);
            sum += d;
            big += d > 8;
            n++;
        }
    *mean = n ? sum / (double)n : 1e9;
    *over = n ? (double)big / (double)n : 1;
}

static pf_segmenter *make(pf_device *dev, const char *bg, float smooth)
{
    pf_segmenter_params p = pf_segmenter_params_default();
    p.device = dev;
    p.background = bg;
    p.smooth = smooth;
    pf_segmenter *s = NULL;
    CHECK_OK(pf_segmenter_create(&p, &s));
    return s;
}

static void gpu_matches_cpu(void)
{
    pf_device *cpu = NULL;
    CHECK_OK(pf_device_get(PF_DEVICE_CPU, 0, &cpu));
    pf_segmenter *sc = make(cpu, NULL, 1.0f), *sg = make(g_dev, NULL, 1.0f);
    REQUIRE(sc && sg);
    pf_frame cc = {0}, cm = {0}, gc = {0}, gm = {0};
    CHECK_OK(pf_segmenter_process(sc, &g_img, &cc, &cm));
    CHECK_OK(pf_segmenter_process(sg, &g_img, &gc, &gm));
    REQUIRE(gc.buf[0] && gm.buf[0] && cc.buf[0]);
    CHECK(pf_frame_domain(&gc) != PF_MEM_DEVICE); /* back where the input was */
    CHECK_EQ_INT(gm.format, PF_PIXFMT_GRAY8);
    double mean, over;
    diff(&cc, &gc, &mean, &over);
    printf("  composite: mean %.4f, %.3f%% over 8\n", mean, 100 * over);
    CHECK(mean <= 0.5 && over <= 0.005);
    diff(&cm, &gm, &mean, &over);
    printf("  mask: mean %.4f, %.3f%% over 8\n", mean, 100 * over);
    CHECK(mean <= 0.5 && over <= 0.005);

    /* A device frame in: the composite stays there, the same bytes. */
    pf_allocator *a = pf_test_allocator_create(g_dev, "test-segmenter", PF_MEM_DEVICE, 0);
    pf_stream_params spp = pf_stream_params_default();
    spp.device = g_dev;
    pf_stream *st = NULL;
    CHECK_OK(pf_stream_create(&spp, &st));
    REQUIRE(a && st);
    pf_frame din = {0}, dc = {0}, hc = {0}, dm = {0};
    CHECK_OK(pf_frame_alloc(&din, g_img.format, g_img.width, g_img.height, a, st));
    CHECK_OK(pf_frame_copy_async(&din, &g_img, st));
    CHECK_OK(pf_stream_synchronize(st));
    CHECK_OK(pf_segmenter_process(sg, &din, &dc, &dm));
    REQUIRE(dc.buf[0]);
    CHECK(pf_frame_domain(&dc) == PF_MEM_DEVICE);
    CHECK_OK(pf_frame_alloc(&hc, dc.format, dc.width, dc.height, NULL, NULL));
    CHECK_OK(pf_frame_copy_async(&hc, &dc, st));
    CHECK_OK(pf_stream_synchronize(st));
    diff(&gc, &hc, &mean, &over);
    CHECK(mean == 0);
    diff(&gm, &dm, &mean, &over);
    CHECK(mean == 0);
    pf_frame_unref(&din);
    pf_frame_unref(&dc);
    pf_frame_unref(&hc);
    pf_frame_unref(&dm);
    pf_frame_unref(&cc);
    pf_frame_unref(&cm);
    pf_frame_unref(&gc);
    pf_frame_unref(&gm);
    pf_segmenter_destroy(&sc);
    pf_segmenter_destroy(&sg);
    pf_stream_destroy(&st);
    pf_allocator_destroy(&a);
}

static void image_background_and_smoothing(void)
{
    char bg[1200];
    const char *root = getenv("PF_SOURCE_DIR");
    snprintf(bg, sizeof bg, "%s/.data/astronaut.png", root && *root ? root : ".");
    pf_segmenter *s = make(g_dev, bg, 0.6f);
    REQUIRE(s);
    pf_frame c = {0};
    for (int i = 0; i < 3; i++) CHECK_OK(pf_segmenter_process(s, &g_img, &c, NULL));
    /* The background is the image itself: the composite is close to it. */
    double mean, over;
    diff(&g_img, &c, &mean, &over);
    printf("  image background: mean %.4f\n", mean);
    CHECK(mean < 2.0);
    pf_frame_unref(&c);
    pf_segmenter_destroy(&s);
}

int main(void)
{
    g_dev = pf_test_cuda_device_or_skip();
    char model[4096], img[1200];
    const char *root = getenv("PF_SOURCE_DIR");
    snprintf(img, sizeof img, "%s/.data/astronaut.png", root && *root ? root : ".");
    struct stat sb;
    if (pf_model_find("selfie", model, sizeof model) != PF_OK || stat(img, &sb) != 0) {
        printf("SKIP: needs the selfie model and %s\n", img);
        return 77;
    }
    if (pf_image_read(img, PF_PIXFMT_RGB24, &g_img) != PF_OK) {
        fprintf(stderr, "%s\n", pf_last_error());
        return 1;
    }
    PF_RUN(gpu_matches_cpu);
    PF_RUN(image_background_and_smoothing);
    pf_frame_unref(&g_img);
    return pf_test_finish();
}
