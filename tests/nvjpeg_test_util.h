/* nvjpeg_test_util.h: what the nvJPEG tests share (tests/test_nvjpeg_fallback.c,
 * tests/cuda/test_cuda_nvjpeg.c): a synthetic photo-like image, JPEG files
 * of it (baseline through pf_image_encode, progressive through libjpeg
 * directly), a temporary directory, job messages, and PSNR / max abs diff.
 * Header-only (static inline). */
#ifndef PF_NVJPEG_TEST_UTIL_H
#define PF_NVJPEG_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jpeglib.h>

#include "pf_test.h"
#include "pixflow/pixflow.h"

static char nvt_dir[256];

static inline const char *nvt_tmp(const char *name)
{
    static char buf[8][512];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, sizeof buf[0], "%s/%s", nvt_dir, name);
    return b;
}

static inline void nvt_make_dir(void)
{
    snprintf(nvt_dir, sizeof nvt_dir, "/tmp/pf-nvjpeg-XXXXXX");
    if (!mkdtemp(nvt_dir)) {
        perror("mkdtemp");
        exit(1);
    }
}

static inline void nvt_remove_dir(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", nvt_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", nvt_dir);
}

static inline bool nvt_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Smooth colour fields, a few hard edges and mild noise: photo-like content
 * whose chroma is mostly smooth (4:2:0 upsampling filters differ between
 * decoders only at sharp chroma edges). */
static inline void nvt_fill(pf_frame *f, uint32_t seed)
{
    uint64_t s = 0x9E3779B97F4A7C15ull ^ seed;
    int ch = f->format == PF_PIXFMT_GRAY8 ? 1 : 3;
    for (int y = 0; y < f->height; y++) {
        uint8_t *row = f->data[0] + (size_t)y * f->stride[0];
        for (int x = 0; x < f->width; x++) {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            int noise = (int)((s * 0x2545F4914F6CDD1Dull) >> 62) - 1; /* -1..2: sensor-like */
            double u = (double)x / f->width, v = (double)y / f->height;
            int edge = ((x / 37 + y / 29) % 5 == 0) ? 40 : 0;
            int c[3] = {(int)(200 * u + 30 * sin(9 * v)) + edge,
                        (int)(60 + 150 * v) + edge / 2,
                        (int)(128 + 100 * sin(6 * u + 4 * v + seed))};
            for (int k = 0; k < ch; k++) {
                int val = c[k] + noise;
                row[(size_t)x * ch + k] = (uint8_t)(val < 0 ? 0 : val > 255 ? 255 : val);
            }
        }
    }
}

/* A JPEG of a w x h synthetic image (GRAY8 or RGB24) at quality 90. */
static inline pf_buffer *nvt_jpeg(int w, int h, pf_pixfmt fmt, bool s444, uint32_t seed)
{
    pf_frame f = {0};
    if (pf_frame_alloc(&f, fmt, w, h, NULL, NULL) != PF_OK) return NULL;
    nvt_fill(&f, seed);
    pf_image_write_params wp = pf_image_write_params_default();
    wp.format = PF_IMAGE_JPEG;
    wp.jpeg_quality = 90;
    wp.jpeg_subsample_444 = s444;
    pf_buffer *out = NULL;
    if (pf_image_encode(&f, &wp, &out) != PF_OK) out = NULL;
    pf_frame_unref(&f);
    return out;
}

/* A progressive RGB JPEG through libjpeg (pixflow writes baseline only).
 * malloc'd bytes in *out. */
static inline size_t nvt_progressive_jpeg(int w, int h, uint8_t **out)
{
    pf_frame f = {0};
    *out = NULL;
    if (pf_frame_alloc(&f, PF_PIXFMT_RGB24, w, h, NULL, NULL) != PF_OK) return 0;
    nvt_fill(&f, 7);
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr err;
    c.err = jpeg_std_error(&err);
    jpeg_create_compress(&c);
    unsigned char *mem = NULL;
    unsigned long size = 0;
    jpeg_mem_dest(&c, &mem, &size);
    c.image_width = (JDIMENSION)w;
    c.image_height = (JDIMENSION)h;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 90, TRUE);
    jpeg_simple_progression(&c);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = f.data[0] + (size_t)c.next_scanline * f.stride[0];
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    pf_frame_unref(&f);
    *out = mem; /* malloc'd by libjpeg */
    return size;
}

static inline bool nvt_write(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* PSNR (dB, 99 when equal) and max abs difference of two host frames of one
 * size and format. */
static inline double nvt_psnr(const pf_frame *a, const pf_frame *b, int *max_abs)
{
    int bpp = a->format == PF_PIXFMT_GRAY8 ? 1 : 3;
    double se = 0;
    int mx = 0;
    for (int y = 0; y < a->height; y++) {
        const uint8_t *p = a->data[0] + (size_t)y * a->stride[0];
        const uint8_t *q = b->data[0] + (size_t)y * b->stride[0];
        for (int x = 0; x < a->width * bpp; x++) {
            int d = abs((int)p[x] - (int)q[x]);
            if (d > mx) mx = d;
            se += (double)d * d;
        }
    }
    if (max_abs) *max_abs = mx;
    double mse = se / ((double)a->width * a->height * bpp);
    return mse > 0 ? 10 * log10(255.0 * 255.0 / mse) : 99.0;
}

/* Job messages: the last one kept, counted. */
static char nvt_msg[2048];
static int nvt_msgs;
static inline void nvt_on_message(void *user, pf_log_level level, const char *msg)
{
    (void)user;
    (void)level;
    snprintf(nvt_msg, sizeof nvt_msg, "%s", msg);
    nvt_msgs++;
    fprintf(stderr, "  job: %s\n", msg);
}

/* Runs a reproject job to its end: 2 views of 160x120 (or a 64 cube). */
static inline pf_status nvt_reproject(const char *const *inputs, int n, const char *out_dir,
                                      pf_device *dev, pf_reproject_codec codec,
                                      pf_job_result *res)
{
    static const pf_view views[2] = {{0, 0, 0, 90, 160, 120}, {90, 10, 0, 75, 161, 121}};
    pf_reproject_params p = pf_reproject_params_default();
    p.inputs = inputs;
    p.num_inputs = n;
    p.output_dir = out_dir;
    p.views = views;
    p.num_views = 2;
    p.device = dev;
    p.codec = codec;
    p.on_message = nvt_on_message;
    pf_job *job = NULL;
    pf_status st = pf_reproject_start(&p, &job);
    if (st != PF_OK) return st;
    while ((st = pf_job_wait(job, 100000)) == PF_TIMEOUT) {
    }
    pf_job_get_result(job, res);
    pf_job_destroy(&job);
    return st;
}

#endif
