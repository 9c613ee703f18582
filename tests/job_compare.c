/* job_compare: compares two outputs of a pixflow job, sample by sample, and
 * checks them against stated tolerances. The GPU parity tests
 * (tests/jobs_gpu.sh) run a job on cuda:0 and on the CPU and compare what
 * each wrote with this program. Built by tests/jobs_gpu.cmake; not a test
 * by itself.
 *
 *   job_compare A B [--max-mean M] [--over T --max-over-frac F] [--min-psnr P]
 *
 * A and B are images (PNG/JPEG, compared in their native layout, which must
 * be the same) or videos (Y4M, or any container this build's FFmpeg reads:
 * every frame compared as RGB24, frame counts must match). Prints one line:
 *   A vs B: N frame(s) WxH C ch, max D, mean E, >T: F%, PSNR G dB
 * and exits 0 when every given limit holds, 1 when one does not (or the two
 * differ in size, layout or frame count, or a file cannot be read), 2 on
 * bad usage. Why these measures: fp16 inference on the GPU and fp32 on the
 * CPU give masks that differ by a few levels along the person's outline and
 * nowhere else, so a mean and a share of pixels past a threshold say more
 * than the maximum (printed, not checked). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pixflow/io.h"
#include "pixflow/pixflow.h"

typedef struct tally {
    uint64_t samples, over, sum_abs;
    double sum_sq;
    int max_abs;
} tally;

static bool has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

static int channels_of(pf_pixfmt f)
{
    switch (f) {
    case PF_PIXFMT_GRAY8: return 1;
    case PF_PIXFMT_RGBA: return 4;
    default: return 3;
    }
}

static void add_frame(tally *t, const pf_frame *a, const pf_frame *b, int thr)
{
    size_t row = (size_t)a->width * (size_t)channels_of(a->format);
    for (int y = 0; y < a->height; y++) {
        const uint8_t *pa = a->data[0] + (size_t)y * a->stride[0];
        const uint8_t *pb = b->data[0] + (size_t)y * b->stride[0];
        for (size_t x = 0; x < row; x++) {
            int d = abs((int)pa[x] - (int)pb[x]);
            t->sum_abs += (uint64_t)d;
            t->sum_sq += (double)d * d;
            if (d > thr) t->over++;
            if (d > t->max_abs) t->max_abs = d;
        }
        t->samples += row;
    }
}

static bool same_shape(const char *an, const pf_frame *a, const char *bn, const pf_frame *b)
{
    if (a->width == b->width && a->height == b->height && a->format == b->format) return true;
    fprintf(stderr, "job_compare: %s is %dx%d %s, %s is %dx%d %s\n", an, a->width, a->height,
            pf_pixfmt_name(a->format), bn, b->width, b->height, pf_pixfmt_name(b->format));
    return false;
}

static int compare_images(const char *an, const char *bn, int thr, tally *t, pf_frame *shape)
{
    pf_frame a = {0}, b = {0};
    if (pf_image_read(an, PF_PIXFMT_NONE, &a) != PF_OK ||
        pf_image_read(bn, PF_PIXFMT_NONE, &b) != PF_OK) {
        fprintf(stderr, "job_compare: %s\n", pf_last_error());
        pf_frame_unref(&a);
        return -1;
    }
    int n = -1;
    if (same_shape(an, &a, bn, &b)) {
        add_frame(t, &a, &b, thr);
        *shape = a;
        n = 1;
    }
    pf_frame_unref(&a);
    pf_frame_unref(&b);
    return n;
}

static pf_video_reader *open_video(const char *path)
{
    pf_video_reader_params p = pf_video_reader_params_default();
    p.path = path;
    p.format = PF_PIXFMT_RGB24;
    pf_video_reader *r = NULL;
    if (pf_video_reader_create(&p, &r) != PF_OK) {
        fprintf(stderr, "job_compare: %s\n", pf_last_error());
        return NULL;
    }
    return r;
}

static int compare_videos(const char *an, const char *bn, int thr, tally *t, pf_frame *shape)
{
    pf_video_reader *ra = open_video(an), *rb = ra ? open_video(bn) : NULL;
    int n = ra && rb ? 0 : -1;
    while (n >= 0) {
        pf_frame a = {0}, b = {0};
        pf_status sa = pf_video_reader_read(ra, &a), sb = pf_video_reader_read(rb, &b);
        if (sa == PF_EOF && sb == PF_EOF) break;
        if (sa != PF_OK || sb != PF_OK) {
            if (sa == PF_EOF || sb == PF_EOF)
                fprintf(stderr, "job_compare: %s ends after %d frames, %s does not\n",
                        sa == PF_EOF ? an : bn, n, sa == PF_EOF ? bn : an);
            else
                fprintf(stderr, "job_compare: frame %d: %s\n", n, pf_last_error());
            n = -1;
        } else if (!same_shape(an, &a, bn, &b)) {
            n = -1;
        } else {
            add_frame(t, &a, &b, thr);
            shape->width = a.width;
            shape->height = a.height;
            shape->format = a.format;
            n++;
        }
        pf_frame_unref(&a);
        pf_frame_unref(&b);
    }
    pf_video_reader_destroy(&ra);
    pf_video_reader_destroy(&rb);
    return n;
}

static int usage(void)
{
    fprintf(stderr, "usage: job_compare A B [--max-mean M] [--over T --max-over-frac F] "
                    "[--min-psnr P]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 3) return usage();
    double max_mean = -1, max_over_frac = -1, min_psnr = -1;
    int thr = 8;
    for (int i = 3; i < argc; i++) {
        if (i + 1 >= argc) return usage();
        double v = atof(argv[i + 1]);
        if (!strcmp(argv[i], "--max-mean")) max_mean = v;
        else if (!strcmp(argv[i], "--over")) thr = (int)v;
        else if (!strcmp(argv[i], "--max-over-frac")) max_over_frac = v;
        else if (!strcmp(argv[i], "--min-psnr")) min_psnr = v;
        else return usage();
        i++;
    }
    tally t = {0};
    pf_frame shape = {0};
    bool video = !(has_suffix(argv[1], ".png") || has_suffix(argv[1], ".jpg") ||
                   has_suffix(argv[1], ".jpeg"));
    int frames = video ? compare_videos(argv[1], argv[2], thr, &t, &shape)
                       : compare_images(argv[1], argv[2], thr, &t, &shape);
    if (frames <= 0) {
        if (frames == 0) fprintf(stderr, "job_compare: %s has no frames\n", argv[1]);
        return 1;
    }
    double mean = (double)t.sum_abs / (double)t.samples;
    double frac = (double)t.over / (double)t.samples;
    double mse = t.sum_sq / (double)t.samples;
    double psnr = mse > 0 ? 10.0 * log10(255.0 * 255.0 / mse) : INFINITY;
    printf("%s vs %s: %d frame(s) %dx%d %d ch, max %d, mean %.4f, >%d: %.4f%%, PSNR %.2f dB\n",
           argv[1], argv[2], frames, shape.width, shape.height, channels_of(shape.format),
           t.max_abs, mean, thr, 100.0 * frac, psnr);
    bool ok = true;
    if (max_mean >= 0 && mean > max_mean) {
        printf("  FAIL: mean %.4f > %.4f\n", mean, max_mean);
        ok = false;
    }
    if (max_over_frac >= 0 && frac > max_over_frac) {
        printf("  FAIL: %.4f%% of samples differ by more than %d (limit %.4f%%)\n", 100 * frac,
               thr, 100 * max_over_frac);
        ok = false;
    }
    if (min_psnr >= 0 && psnr < min_psnr) {
        printf("  FAIL: PSNR %.2f dB < %.2f dB\n", psnr, min_psnr);
        ok = false;
    }
    return ok ? 0 : 1;
}
