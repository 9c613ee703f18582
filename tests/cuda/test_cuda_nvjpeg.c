/* nvJPEG decode and encode on the GPU (src/io/nvjpeg_*.c) against
 * libjpeg-turbo, and the reproject job with the GPU codec against the CPU
 * codec. Exits 77 (skipped) without a GPU or without libnvjpeg.
 *
 * Tolerances (decoded pixels, nvJPEG vs libjpeg-turbo on the same file):
 *   4:4:4 and gray: IDCT and colour-conversion rounding only:
 *                   max abs diff <= 6 and PSNR >= 45 dB;
 *   4:2:0:          also the chroma upsampling filter (libjpeg-turbo's
 *                   "fancy" triangular filter; nvJPEG's own): max abs diff
 *                   <= 40 at the image's hard edges, PSNR >= 38 dB;
 *   progressive:    decoded by libjpeg-turbo itself: identical (max 0).
 * Encode: nvJPEG's file decoded by libjpeg vs the CPU encoder's file decoded
 * by libjpeg, same quality and 4:2:0: PSNR >= 40 dB (the bound);
 * the job's views with --codec gpu vs --codec cpu: PSNR >= 40 dB each.
 * Every measured figure is printed, so a failure shows by how much. */
#define _POSIX_C_SOURCE 200809L

#include "cuda_test_util.h"
#include "io/io_impl.h"
#include "io/nvjpeg.h"
#include "nvjpeg_test_util.h"

static pf_device *g_dev;
static pf_stream *g_stream;
static pf_allocator *g_alloc;

/* libjpeg-turbo's decode of the bytes into a host RGB24 frame. */
static pf_status cpu_decode(const uint8_t *data, size_t n, pf_frame *out)
{
    return pf_image_read_memory(data, n, "ref", PF_PIXFMT_RGB24, out);
}

/* The GPU decoder's output, copied back to a host RGB24 frame. */
static void download(const pf_frame *d, pf_frame *h)
{
    CHECK_OK(pf_frame_alloc(h, PF_PIXFMT_RGB24, d->width, d->height, NULL, NULL));
    CHECK_OK(pf_frame_copy_async(h, d, g_stream));
    CHECK_OK(pf_stream_synchronize(g_stream));
}

typedef struct img_case {
    const char *name;
    int w, h;
    pf_pixfmt fmt;
    bool s444;
    int max_abs;
    double min_psnr;
} img_case;

static void decode_against_libjpeg(void)
{
    static const img_case cases[] = {
        {"420.jpg", 640, 320, PF_PIXFMT_RGB24, false, 40, 38.0},
        {"444.jpg", 512, 256, PF_PIXFMT_RGB24, true, 6, 45.0},
        {"gray.jpg", 320, 160, PF_PIXFMT_GRAY8, false, 6, 45.0},
        {"odd420.jpg", 333, 251, PF_PIXFMT_RGB24, false, 40, 38.0},
        {"odd444.jpg", 97, 31, PF_PIXFMT_RGB24, true, 6, 45.0},
    };
    enum { N = sizeof cases / sizeof cases[0] };
    pf_nvjpeg_dec *dec = NULL;
    CHECK_OK(pf_nvjpeg_dec_create(g_dev, N, &dec));
    REQUIRE(dec);
    printf("  nvJPEG %s, hardware engines: %s\n", pf_nvjpeg_version(),
           pf_nvjpeg_dec_has_hw(dec) ? "yes" : "no");
    pf_buffer *files[N] = {0};
    pf_frame dev[N], ref[N];
    pf_nvjpeg_item items[N];
    memset(dev, 0, sizeof dev);
    memset(ref, 0, sizeof ref);
    memset(items, 0, sizeof items);
    for (int i = 0; i < N; i++) {
        const img_case *c = &cases[i];
        files[i] = nvt_jpeg(c->w, c->h, c->fmt, c->s444, (uint32_t)i + 10);
        REQUIRE(files[i]);
        const uint8_t *p = pf_buffer_data(files[i]);
        size_t n = pf_buffer_size(files[i]);
        CHECK_OK(cpu_decode(p, n, &ref[i]));
        int w = 0, h = 0;
        CHECK_OK(pf_nvjpeg_dec_probe(dec, p, n, c->name, &w, &h, &items[i].path));
        CHECK(w == c->w && h == c->h);
        CHECK(items[i].path != PF_JPEG_PATH_CPU);
        CHECK_OK(pf_frame_alloc(&dev[i], PF_PIXFMT_RGB24, w, h, g_alloc, g_stream));
        items[i].data = p;
        items[i].size = n;
        items[i].name = c->name;
        items[i].dst = &dev[i];
    }
    /* One batch (the hardware images together), then each alone (batch of 1). */
    for (int round = 0; round < 2; round++) {
        if (round == 0) CHECK_OK(pf_nvjpeg_dec_batch(dec, items, N, g_stream));
        else
            for (int i = 0; i < N; i++) CHECK_OK(pf_nvjpeg_dec_batch(dec, &items[i], 1, g_stream));
        for (int i = 0; i < N; i++) {
            const img_case *c = &cases[i];
            CHECK_OK(items[i].status);
            pf_frame got = {0};
            download(&dev[i], &got);
            int mx = 0;
            double psnr = nvt_psnr(&got, &ref[i], &mx);
            printf("  %-11s %4dx%-4d %-8s %s: max abs diff %d, PSNR %.2f dB (need <= %d, >= %.0f)\n",
                   c->name, c->w, c->h, pf_jpeg_path_name(items[i].path),
                   round ? "alone" : "batch", mx, psnr, c->max_abs, c->min_psnr);
            CHECK(mx <= c->max_abs);
            CHECK(psnr >= c->min_psnr);
            pf_frame_unref(&got);
            CHECK_OK(pf_memset_async(g_stream, dev[i].data[0], 0, dev[i].stride[0] * (size_t)c->h));
        }
    }
    for (int i = 0; i < N; i++) {
        pf_frame_unref(&dev[i]);
        pf_frame_unref(&ref[i]);
        pf_buffer_unref(&files[i]);
    }
    pf_nvjpeg_dec_destroy(&dec);
}

static void progressive_and_corrupt(void)
{
    pf_nvjpeg_dec *dec = NULL;
    CHECK_OK(pf_nvjpeg_dec_create(g_dev, 2, &dec));
    REQUIRE(dec);
    uint8_t *prog = NULL;
    size_t n = nvt_progressive_jpeg(200, 100, &prog);
    REQUIRE(n > 0);
    int w = 0, h = 0;
    pf_nvjpeg_item it[2];
    memset(it, 0, sizeof it);
    CHECK_OK(pf_nvjpeg_dec_probe(dec, prog, n, "prog.jpg", &w, &h, &it[0].path));
    CHECK_EQ_INT(it[0].path, PF_JPEG_PATH_CPU);
    pf_frame d0 = {0}, d1 = {0}, got = {0}, ref = {0};
    CHECK_OK(pf_frame_alloc(&d0, PF_PIXFMT_RGB24, w, h, g_alloc, g_stream));
    it[0].data = prog;
    it[0].size = n;
    it[0].name = "prog.jpg";
    it[0].dst = &d0;
    /* Truncated baseline: no EOI -> libjpeg, which refuses it naming the file. */
    pf_buffer *b = nvt_jpeg(200, 100, PF_PIXFMT_RGB24, false, 5);
    REQUIRE(b);
    size_t half = pf_buffer_size(b) / 2;
    CHECK_OK(pf_nvjpeg_dec_probe(dec, pf_buffer_data(b), half, "cut.jpg", &w, &h, &it[1].path));
    CHECK_EQ_INT(it[1].path, PF_JPEG_PATH_CPU);
    CHECK_OK(pf_frame_alloc(&d1, PF_PIXFMT_RGB24, w, h, g_alloc, g_stream));
    it[1].data = pf_buffer_data(b);
    it[1].size = half;
    it[1].name = "cut.jpg";
    it[1].dst = &d1;
    CHECK_EQ_INT(pf_nvjpeg_dec_batch(dec, it, 2, g_stream), PF_ERR_FORMAT);
    CHECK(strstr(pf_last_error(), "cut.jpg") != NULL);
    CHECK_OK(it[0].status);
    CHECK(it[1].status != PF_OK && strstr(it[1].error, "cut.jpg"));
    printf("  truncated: %s\n", it[1].error);
    download(&d0, &got);
    CHECK_OK(cpu_decode(prog, n, &ref));
    int mx = 0;
    double psnr = nvt_psnr(&got, &ref, &mx);
    printf("  progressive (cpu): max abs diff %d, PSNR %.2f dB (need identical)\n", mx, psnr);
    CHECK_EQ_INT(mx, 0);
    /* A damaged header: refused by the probe, naming the file. */
    uint8_t bad[16] = {0xff, 0xd8, 0xff, 0xe0, 0x40, 0x00, 'J', 'F', 'I', 'F'};
    CHECK_EQ_INT(pf_nvjpeg_dec_probe(dec, bad, sizeof bad, "bad.jpg", &w, &h, &it[0].path),
                 PF_ERR_FORMAT);
    CHECK(strstr(pf_last_error(), "bad.jpg") != NULL);
    free(prog);
    pf_buffer_unref(&b);
    pf_frame_unref(&d0);
    pf_frame_unref(&d1);
    pf_frame_unref(&got);
    pf_frame_unref(&ref);
    pf_nvjpeg_dec_destroy(&dec);
}

static void encode_round_trip(void)
{
    static const int sizes[][2] = {{1920, 1080}, {161, 121}};
    pf_nvjpeg_enc *enc = NULL;
    CHECK_OK(pf_nvjpeg_enc_create(g_dev, 90, false, &enc));
    REQUIRE(enc);
    for (int k = 0; k < 2; k++) {
        int w = sizes[k][0], h = sizes[k][1];
        pf_frame src = {0}, dsrc = {0};
        CHECK_OK(pf_frame_alloc(&src, PF_PIXFMT_RGB24, w, h, NULL, NULL));
        nvt_fill(&src, 9);
        CHECK_OK(pf_frame_alloc(&dsrc, PF_PIXFMT_RGB24, w, h, g_alloc, g_stream));
        CHECK_OK(pf_frame_copy_async(&dsrc, &src, g_stream));
        CHECK_OK(pf_stream_synchronize(g_stream));
        const uint8_t *bytes = NULL;
        size_t n = 0;
        CHECK_OK(pf_nvjpeg_enc_encode(enc, &dsrc, "view.jpg", &bytes, &n));
        REQUIRE(bytes && n > 0);
        pf_jpeg_header hd;
        CHECK_OK(pf_jpeg_scan(bytes, n, "view.jpg", &hd));
        CHECK(hd.sof == 0xc0 && hd.width == w && hd.height == h && hd.has_eoi);
        pf_frame gpu_dec = {0}, cpu_dec = {0};
        CHECK_OK(cpu_decode(bytes, n, &gpu_dec)); /* libjpeg reads nvJPEG's file */
        pf_image_write_params wp = pf_image_write_params_default();
        wp.format = PF_IMAGE_JPEG;
        wp.jpeg_quality = 90;
        pf_buffer *cpu_file = NULL;
        CHECK_OK(pf_image_encode(&src, &wp, &cpu_file));
        REQUIRE(cpu_file);
        CHECK_OK(cpu_decode(pf_buffer_data(cpu_file), pf_buffer_size(cpu_file), &cpu_dec));
        int mx = 0;
        double psnr = nvt_psnr(&gpu_dec, &cpu_dec, &mx);
        double psnr_src = nvt_psnr(&gpu_dec, &src, NULL);
        printf("  encode %dx%d q90 4:2:0: nvJPEG %zu bytes, libjpeg %zu bytes; GPU file vs CPU "
               "file PSNR %.2f dB (max %d), vs source %.2f dB (need >= 40)\n",
               w, h, n, pf_buffer_size(cpu_file), psnr, mx, psnr_src);
        CHECK(psnr >= 40.0);
        if (k == 0) CHECK(nvt_write(nvt_tmp("nvjpeg_1080p.jpg"), bytes, n));
        pf_buffer_unref(&cpu_file);
        pf_frame_unref(&gpu_dec);
        pf_frame_unref(&cpu_dec);
        pf_frame_unref(&src);
        pf_frame_unref(&dsrc);
    }
    pf_nvjpeg_enc_destroy(&enc);
}

/* The job: a good JPEG, a progressive one and a corrupt one with the GPU
 * codec; views vs the CPU codec's; the corrupt one named, nothing of it
 * written. */
static void job_gpu_vs_cpu(void)
{
    pf_buffer *a = nvt_jpeg(1024, 512, PF_PIXFMT_RGB24, false, 11);
    REQUIRE(a);
    REQUIRE(nvt_write(nvt_tmp("good.jpg"), pf_buffer_data(a), pf_buffer_size(a)));
    REQUIRE(nvt_write(nvt_tmp("cut.jpg"), pf_buffer_data(a), pf_buffer_size(a) / 3));
    pf_buffer_unref(&a);
    uint8_t *prog = NULL;
    size_t n = nvt_progressive_jpeg(512, 256, &prog);
    REQUIRE(nvt_write(nvt_tmp("prog.jpg"), prog, n));
    free(prog);
    const char *in[] = {nvt_tmp("good.jpg"), nvt_tmp("prog.jpg"), nvt_tmp("cut.jpg")};
    pf_job_result g, c;
    nvt_msgs = 0;
    pf_reproject_codec codec = PF_REPROJECT_CODEC_GPU;
    CHECK_OK(nvt_reproject(in, 3, nvt_tmp("gpu"), g_dev, codec, &g));
    CHECK(nvt_msgs >= 1 && strstr(nvt_msg, "cut.jpg"));
    CHECK(g.reproject.gpu_decode && g.reproject.gpu_encode);
    CHECK_EQ_INT(g.reproject.images_done, 2);
    CHECK_EQ_INT(g.reproject.images_failed, 1);
    CHECK_EQ_INT(g.reproject.decoded_hw + g.reproject.decoded_gpu, 1);
    CHECK_EQ_INT(g.reproject.decoded_cpu, 1);
    CHECK_EQ_INT(g.reproject.encoded_gpu, 4);
    CHECK(!nvt_exists(nvt_tmp("gpu/cut_view00.jpg")) && !nvt_exists(nvt_tmp("gpu/cut_view01.jpg")));
    printf("  job gpu: %llu hardware, %llu gpu, %llu cpu decodes; %llu gpu encodes\n",
           (unsigned long long)g.reproject.decoded_hw, (unsigned long long)g.reproject.decoded_gpu,
           (unsigned long long)g.reproject.decoded_cpu,
           (unsigned long long)g.reproject.encoded_gpu);
    CHECK_OK(nvt_reproject(in, 2, nvt_tmp("cpu"), g_dev, PF_REPROJECT_CODEC_CPU, &c));
    CHECK(!c.reproject.gpu_decode && !c.reproject.gpu_encode);
    CHECK_EQ_INT(c.reproject.encoded_cpu, 4);
    static const char *const outs[] = {"good_view00.jpg", "good_view01.jpg", "prog_view00.jpg",
                                       "prog_view01.jpg"};
    for (int i = 0; i < 4; i++) {
        char gp[64], cp[64];
        snprintf(gp, sizeof gp, "gpu/%s", outs[i]);
        snprintf(cp, sizeof cp, "cpu/%s", outs[i]);
        pf_frame fg = {0}, fc = {0};
        CHECK_OK(pf_image_read(nvt_tmp(gp), PF_PIXFMT_RGB24, &fg));
        CHECK_OK(pf_image_read(nvt_tmp(cp), PF_PIXFMT_RGB24, &fc));
        if (fg.width && fg.width == fc.width && fg.height == fc.height) {
            int mx = 0;
            double psnr = nvt_psnr(&fg, &fc, &mx);
            printf("  %s: GPU codec vs CPU codec PSNR %.2f dB (max %d; need >= 40)\n", outs[i],
                   psnr, mx);
            CHECK(psnr >= 40.0);
        } else {
            CHECK(!"view sizes differ");
        }
        pf_frame_unref(&fg);
        pf_frame_unref(&fc);
    }
}

int main(void)
{
    g_dev = pf_test_cuda_device_or_skip();
    char why[512];
    if (!pf_nvjpeg_available(why, sizeof why)) {
        printf("SKIP: %s\n", why);
        return 77;
    }
    pf_stream_params sp = pf_stream_params_default();
    sp.device = g_dev;
    if (pf_stream_create(&sp, &g_stream) != PF_OK) return 1;
    g_alloc = pf_test_allocator_create(g_dev, "nvjpeg-test", PF_MEM_DEVICE, 0);
    if (!g_alloc) return 1;
    nvt_make_dir();
    PF_RUN(decode_against_libjpeg);
    PF_RUN(progressive_and_corrupt);
    PF_RUN(encode_round_trip);
    PF_RUN(job_gpu_vs_cpu);
    /* Kept for ffprobe elsewhere when PF_NVJPEG_KEEP is set. */
    if (!getenv("PF_NVJPEG_KEEP")) nvt_remove_dir();
    else printf("  outputs kept in %s\n", nvt_dir);
    pf_allocator_destroy(&g_alloc);
    pf_stream_destroy(&g_stream);
    return pf_test_finish();
}
