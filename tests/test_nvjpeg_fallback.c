/* The nvJPEG codec's parts that run without a GPU (src/io/nvjpeg_lib.c,
 * the reproject job's codec choice):
 *  - pf_jpeg_scan picks the decode path from the markers: baseline 4:2:0,
 *    4:4:4 and gray -> GPU; progressive, truncated (no EOI) -> CPU; not a
 *    JPEG or a marker running past the end -> refused naming the file;
 *  - the loader's refusal: PF_NVJPEG_LIBRARY naming a missing file makes
 *    pf_nvjpeg_available() false with the dlopen reason naming it, and a
 *    decoder / encoder cannot be created (PF_ERR_UNSUPPORTED, the reason);
 *  - the job: --codec gpu where nvJPEG cannot be used (the CPU device here;
 *    with a GPU, the missing library) falls back to the CPU with one
 *    message, and the counts say cpu; auto on the CPU says nothing.
 * Fails without the scan, the loader's refusal path or the codec counts. */
#define _POSIX_C_SOURCE 200809L

#include "io/nvjpeg.h"
#include "nvjpeg_test_util.h"

static void scan_paths(void)
{
    pf_jpeg_header h;
    pf_buffer *b420 = nvt_jpeg(97, 61, PF_PIXFMT_RGB24, false, 1);
    pf_buffer *b444 = nvt_jpeg(64, 48, PF_PIXFMT_RGB24, true, 2);
    pf_buffer *gray = nvt_jpeg(33, 17, PF_PIXFMT_GRAY8, false, 3);
    REQUIRE(b420 && b444 && gray);
    CHECK_OK(pf_jpeg_scan(pf_buffer_data(b420), pf_buffer_size(b420), "a.jpg", &h));
    CHECK_EQ_INT(h.width, 97);
    CHECK_EQ_INT(h.height, 61);
    CHECK_EQ_INT(h.components, 3);
    CHECK_EQ_INT(h.sof, 0xc0);
    CHECK(h.has_eoi && h.gpu_ok);
    CHECK_OK(pf_jpeg_scan(pf_buffer_data(b444), pf_buffer_size(b444), "b.jpg", &h));
    CHECK(h.gpu_ok && h.width == 64);
    CHECK_OK(pf_jpeg_scan(pf_buffer_data(gray), pf_buffer_size(gray), "g.jpg", &h));
    CHECK(h.gpu_ok && h.components == 1);

    uint8_t *prog = NULL;
    size_t n = nvt_progressive_jpeg(80, 40, &prog);
    REQUIRE(n > 0);
    CHECK_OK(pf_jpeg_scan(prog, n, "p.jpg", &h));
    CHECK_EQ_INT(h.sof, 0xc2);
    CHECK(!h.gpu_ok); /* progressive: libjpeg */
    free(prog);

    /* Truncated: no EOI, so libjpeg (which names what is missing) decodes it. */
    size_t half = pf_buffer_size(b420) / 2;
    CHECK_OK(pf_jpeg_scan(pf_buffer_data(b420), half, "t.jpg", &h));
    CHECK(!h.has_eoi && !h.gpu_ok);

    const uint8_t png[8] = {0x89, 'P', 'N', 'G', 13, 10, 26, 10};
    CHECK_EQ_INT(pf_jpeg_scan(png, sizeof png, "x.png", &h), PF_ERR_FORMAT);
    CHECK(strstr(pf_last_error(), "x.png") != NULL);
    /* A segment length that runs past the end of the file. */
    uint8_t bad[16] = {0xff, 0xd8, 0xff, 0xe0, 0x40, 0x00, 'J', 'F', 'I', 'F'};
    CHECK_EQ_INT(pf_jpeg_scan(bad, sizeof bad, "bad.jpg", &h), PF_ERR_FORMAT);
    CHECK(strstr(pf_last_error(), "bad.jpg") && strstr(pf_last_error(), "corrupt JPEG"));
    pf_buffer_unref(&b420);
    pf_buffer_unref(&b444);
    pf_buffer_unref(&gray);
}

static void loader_refusal(void)
{
    char why[512];
    CHECK(!pf_nvjpeg_available(why, sizeof why));
    CHECK(strstr(why, "/nonexistent/libnvjpeg-test.so") != NULL);
    CHECK(!strcmp(pf_nvjpeg_version(), ""));
    pf_device *dev = NULL;
    if (pf_device_get(PF_DEVICE_CUDA, 0, &dev) != PF_OK) pf_device_get(PF_DEVICE_CPU, 0, &dev);
    REQUIRE(dev);
    pf_clear_error();
    pf_nvjpeg_dec *d = NULL;
    CHECK_EQ_INT(pf_nvjpeg_dec_create(dev, 4, &d), PF_ERR_UNSUPPORTED);
    CHECK(!d);
    /* The CPU device: not CUDA; a GPU: the library's absence. */
    CHECK(strstr(pf_last_error(), "not a CUDA device") ||
          strstr(pf_last_error(), "/nonexistent/libnvjpeg-test.so"));
    pf_nvjpeg_enc *e = NULL;
    CHECK_EQ_INT(pf_nvjpeg_enc_create(dev, 90, false, &e), PF_ERR_UNSUPPORTED);
    CHECK(!e);
}

static void job_falls_back(void)
{
    pf_buffer *jpg = nvt_jpeg(256, 128, PF_PIXFMT_RGB24, false, 4);
    REQUIRE(jpg);
    REQUIRE(nvt_write(nvt_tmp("pano.jpg"), pf_buffer_data(jpg), pf_buffer_size(jpg)));
    pf_buffer_unref(&jpg);
    const char *in[] = {nvt_tmp("pano.jpg")};
    pf_device *cpu = NULL;
    REQUIRE(pf_device_get(PF_DEVICE_CPU, 0, &cpu) == PF_OK);

    /* auto on the CPU: the CPU codec, nothing said. */
    pf_job_result r;
    nvt_msgs = 0;
    CHECK_OK(nvt_reproject(in, 1, nvt_tmp("auto"), cpu, PF_REPROJECT_CODEC_AUTO, &r));
    CHECK_EQ_INT(nvt_msgs, 0);
    CHECK_EQ_INT(r.reproject.images_done, 1);
    CHECK(!r.reproject.gpu_decode && !r.reproject.gpu_encode);
    CHECK_EQ_INT(r.reproject.decoded_cpu, 1);
    CHECK_EQ_INT(r.reproject.decoded_hw + r.reproject.decoded_gpu, 0);
    CHECK_EQ_INT(r.reproject.encoded_cpu, 2);

    /* gpu asked for on the CPU: one message, then the CPU. */
    nvt_msgs = 0;
    CHECK_OK(nvt_reproject(in, 1, nvt_tmp("gpu"), cpu, PF_REPROJECT_CODEC_GPU, &r));
    CHECK_EQ_INT(nvt_msgs, 1);
    CHECK(strstr(nvt_msg, "--codec gpu") && strstr(nvt_msg, "CPU"));
    CHECK_EQ_INT(r.reproject.images_done, 1);
    CHECK_EQ_INT(r.reproject.files_written, 2);
    CHECK_EQ_INT(r.reproject.decoded_cpu, 1);
    CHECK_EQ_INT(r.reproject.encoded_cpu, 2);
    CHECK_EQ_INT(r.reproject.encoded_gpu, 0);
    CHECK(nvt_exists(nvt_tmp("gpu/pano_view00.jpg")) && nvt_exists(nvt_tmp("gpu/pano_view01.jpg")));

    /* With a GPU (the GPU machine): the missing library is the reason. */
    pf_device *cuda = NULL;
    if (pf_device_get(PF_DEVICE_CUDA, 0, &cuda) == PF_OK) {
        nvt_msgs = 0;
        CHECK_OK(nvt_reproject(in, 1, nvt_tmp("cuda"), cuda, PF_REPROJECT_CODEC_GPU, &r));
        CHECK_EQ_INT(nvt_msgs, 1);
        CHECK(strstr(nvt_msg, "nvJPEG not available") &&
              strstr(nvt_msg, "/nonexistent/libnvjpeg-test.so"));
        CHECK(!r.reproject.gpu_decode && !r.reproject.gpu_encode);
        CHECK_EQ_INT(r.reproject.decoded_cpu, 1);
        CHECK_EQ_INT(r.reproject.encoded_cpu, 2);
    }
    pf_clear_error();
}

int main(void)
{
    /* Before the first load: the loader reads it once. */
    setenv("PF_NVJPEG_LIBRARY", "/nonexistent/libnvjpeg-test.so", 1);
    nvt_make_dir();
    PF_RUN(scan_paths);
    PF_RUN(loader_refusal);
    PF_RUN(job_falls_back);
    nvt_remove_dir();
    return pf_test_finish();
}
