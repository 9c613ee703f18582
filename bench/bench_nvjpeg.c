/* bench_nvjpeg: the GPU JPEG codec's own bounds (src/io/nvjpeg*.c), without
 * file reads, kernels or writes: the files are loaded into pinned memory
 * first and decoded from there again and again.
 *
 *   bench_nvjpeg [--json] [--device SPEC] [--batch B] [--states S]
 *                [--encoders E] [--rounds R] FILE...
 *
 * Prints (images/s and megapixels/s):
 *   one      batch of 1, one decoder state, waiting for each image: one
 *            hardware engine at a time (plus the per-call latency)
 *   batch    batches of B on one decoder state, waiting per batch
 *   states   S threads, each a decoder state and stream, batches of B: all
 *            engines fed from several host threads
 *   encode   E threads, each an nvJPEG encoder and stream, encoding
 *            1920x1080 RGB device frames at q90 4:2:0 (views/s)
 * and the decode path of the files (hardware / gpu / cpu). Without FILEs
 * (as scripts/gpu-check runs every bench), 4 synthetic 7680x3840 q90 JPEGs
 * are made in memory first. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/nvjpeg.h"
#include "pixflow/pixflow.h"

typedef struct bench_file {
    uint8_t *data; /* pinned */
    size_t size;
    int w, h;
    pf_jpeg_path path;
    pf_buffer *buf;
} bench_file;

static bench_file *g_files;
static int g_nfiles, g_batch = 16, g_rounds = 2;
static pf_device *g_dev;

static void die(const char *what)
{
    fprintf(stderr, "bench_nvjpeg: %s: %s\n", what, pf_last_error());
    exit(1);
}

/* One decoder state + stream decoding images [first, first + count) of the
 * files (cyclically) in batches. */
typedef struct dec_worker {
    int batch, first, count;
    bool sync_each;
    double seconds;
    pf_status status;
} dec_worker;

static void *dec_run(void *arg)
{
    dec_worker *w = arg;
    pf_nvjpeg_dec *d = NULL;
    pf_stream *s = NULL;
    pf_allocator *a = NULL;
    pf_stream_params sp = pf_stream_params_default();
    sp.device = g_dev;
    pf_allocator_params ap = pf_allocator_params_default();
    ap.device = g_dev;
    ap.name = "bench-nvjpeg";
    pf_nvjpeg_item *items = calloc((size_t)w->batch, sizeof *items);
    pf_frame *frames = calloc((size_t)w->batch, sizeof *frames);
    if (!items || !frames || pf_stream_create(&sp, &s) != PF_OK ||
        pf_allocator_create(&ap, &a) != PF_OK || pf_nvjpeg_dec_create(g_dev, w->batch, &d) != PF_OK) {
        w->status = PF_ERR_DEVICE;
        return NULL;
    }
    /* Warm-up: one batch (first-use allocations inside nvJPEG). */
    for (int pass = 0; pass < 2; pass++) {
        int total = pass == 0 ? (w->batch < w->count ? w->batch : w->count) : w->count;
        int64_t t0 = pf_time_ns();
        for (int done = 0; done < total;) {
            int n = total - done < w->batch ? total - done : w->batch;
            for (int i = 0; i < n; i++) {
                bench_file *f = &g_files[(w->first + done + i) % g_nfiles];
                if (frames[i].width != f->w || frames[i].height != f->h) {
                    pf_frame_unref(&frames[i]);
                    if (pf_frame_alloc(&frames[i], PF_PIXFMT_RGB24, f->w, f->h, a, s) != PF_OK) {
                        w->status = PF_ERR_NOMEM;
                        return NULL;
                    }
                }
                memset(&items[i], 0, sizeof items[i]);
                items[i].data = f->data;
                items[i].size = f->size;
                items[i].name = "bench";
                items[i].path = f->path;
                items[i].dst = &frames[i];
            }
            pf_status st = pf_nvjpeg_dec_batch(d, items, n, s);
            if (st != PF_OK) w->status = st;
            if (w->sync_each) pf_stream_synchronize(s);
            done += n;
        }
        pf_stream_synchronize(s);
        w->seconds = (double)(pf_time_ns() - t0) * 1e-9;
    }
    for (int i = 0; i < w->batch; i++) pf_frame_unref(&frames[i]);
    free(frames);
    free(items);
    pf_nvjpeg_dec_destroy(&d);
    pf_allocator_destroy(&a);
    pf_stream_destroy(&s);
    return NULL;
}

/* images/s of `states` workers each decoding `per` images in batches. */
static double decode_rate(int states, int batch, int per, bool sync_each, double *mpix)
{
    pthread_t th[64];
    dec_worker w[64];
    for (int i = 0; i < states; i++) {
        w[i] = (dec_worker){batch, i * per, per, sync_each, 0, PF_OK};
        pthread_create(&th[i], NULL, dec_run, &w[i]);
    }
    double worst = 0;
    for (int i = 0; i < states; i++) {
        pthread_join(th[i], NULL);
        if (w[i].status != PF_OK) die("decode");
        if (w[i].seconds > worst) worst = w[i].seconds;
    }
    double images = (double)states * per;
    double px = 0;
    for (int i = 0; i < g_nfiles; i++) px += (double)g_files[i].w * g_files[i].h;
    *mpix = worst > 0 ? images * (px / g_nfiles) / worst * 1e-6 : 0;
    return worst > 0 ? images / worst : 0;
}

typedef struct enc_worker {
    int count;
    double seconds;
    size_t bytes;
    pf_status status;
} enc_worker;

static void *enc_run(void *arg)
{
    enc_worker *w = arg;
    pf_nvjpeg_enc *e = NULL;
    if (pf_nvjpeg_enc_create(g_dev, 90, false, &e) != PF_OK) {
        w->status = PF_ERR_DEVICE;
        return NULL;
    }
    pf_allocator_params ap = pf_allocator_params_default();
    ap.device = g_dev;
    pf_allocator *a = NULL;
    pf_frame host = {0}, dev = {0};
    if (pf_allocator_create(&ap, &a) != PF_OK ||
        pf_frame_alloc(&host, PF_PIXFMT_RGB24, 1920, 1080, NULL, NULL) != PF_OK ||
        pf_frame_alloc(&dev, PF_PIXFMT_RGB24, 1920, 1080, a, pf_nvjpeg_enc_stream(e)) != PF_OK) {
        w->status = PF_ERR_NOMEM;
        return NULL;
    }
    for (int y = 0; y < 1080; y++)
        for (int x = 0; x < 1920 * 3; x++)
            host.data[0][(size_t)y * host.stride[0] + x] = (uint8_t)((x * 7 + y * 3 + (x ^ y)) & 255);
    pf_frame_copy_async(&dev, &host, pf_nvjpeg_enc_stream(e));
    pf_stream_synchronize(pf_nvjpeg_enc_stream(e));
    const uint8_t *bytes;
    size_t n;
    pf_nvjpeg_enc_encode(e, &dev, "warm-up", &bytes, &n);
    int64_t t0 = pf_time_ns();
    for (int i = 0; i < w->count; i++) {
        if (pf_nvjpeg_enc_encode(e, &dev, "bench", &bytes, &n) != PF_OK) w->status = PF_ERR_DEVICE;
        w->bytes += n;
    }
    w->seconds = (double)(pf_time_ns() - t0) * 1e-9;
    pf_frame_unref(&host);
    pf_frame_unref(&dev);
    pf_allocator_destroy(&a);
    pf_nvjpeg_enc_destroy(&e);
    return NULL;
}

static double encode_rate(int threads, int per, double *kib)
{
    pthread_t th[64];
    enc_worker w[64];
    for (int i = 0; i < threads; i++) {
        w[i] = (enc_worker){per, 0, 0, PF_OK};
        pthread_create(&th[i], NULL, enc_run, &w[i]);
    }
    double worst = 0, bytes = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        if (w[i].status != PF_OK) die("encode");
        if (w[i].seconds > worst) worst = w[i].seconds;
        bytes += (double)w[i].bytes;
    }
    *kib = bytes / ((double)threads * per) / 1024;
    return worst > 0 ? (double)threads * per / worst : 0;
}

/* A 7680x3840 q90 4:2:0 JPEG of smooth fields, edges and noise, in pinned memory. */
static void synthetic(pf_allocator *pinned, int seed, bench_file *f)
{
    pf_frame img = {0};
    if (pf_frame_alloc(&img, PF_PIXFMT_RGB24, 7680, 3840, NULL, NULL) != PF_OK) die("frame");
    uint32_t r = 0x12345u + (uint32_t)seed * 7919u;
    for (int y = 0; y < img.height; y++) {
        uint8_t *row = img.data[0] + (size_t)y * img.stride[0];
        for (int x = 0; x < img.width; x++) {
            r = r * 1664525u + 1013904223u;
            int noise = (int)(r >> 29) - 4;
            int edge = ((x / 97 + y / 61 + seed) % 7 == 0) ? 50 : 0;
            int c[3] = {(x * 200 / img.width) + edge, 40 + (y * 170 / img.height) + edge / 2,
                        128 + ((x + 2 * y + seed * 500) % 256) / 3};
            for (int k = 0; k < 3; k++) {
                int v = c[k] + noise;
                row[(size_t)x * 3 + k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
        }
    }
    pf_image_write_params wp = pf_image_write_params_default();
    wp.format = PF_IMAGE_JPEG;
    wp.jpeg_quality = 90;
    pf_buffer *jpg = NULL;
    if (pf_image_encode(&img, &wp, &jpg) != PF_OK) die("encode");
    if (pf_allocator_alloc(pinned, pf_buffer_size(jpg), NULL, &f->buf) != PF_OK) die("pinned");
    f->data = pf_buffer_data(f->buf);
    f->size = pf_buffer_size(jpg);
    memcpy(f->data, pf_buffer_data(jpg), f->size);
    pf_buffer_unref(&jpg);
    pf_frame_unref(&img);
}

int main(int argc, char **argv)
{
    const char *spec = NULL;
    bool json = false;
    int states = 4, encoders = 8;
    int first_file = argc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) json = true;
        else if (!strcmp(a, "--device") && i + 1 < argc) spec = argv[++i];
        else if (!strcmp(a, "--batch") && i + 1 < argc) g_batch = atoi(argv[++i]);
        else if (!strcmp(a, "--states") && i + 1 < argc) states = atoi(argv[++i]);
        else if (!strcmp(a, "--encoders") && i + 1 < argc) encoders = atoi(argv[++i]);
        else if (!strcmp(a, "--rounds") && i + 1 < argc) g_rounds = atoi(argv[++i]);
        else if (a[0] == '-') {
            fprintf(stderr, "usage: bench_nvjpeg [--json] [--device SPEC] [--batch B] [--states S] "
                            "[--encoders E] [--rounds R] FILE...\n");
            return 2;
        } else {
            first_file = i;
            break;
        }
    }
    if (g_batch < 1 || g_batch > 256 || states < 1 || states > 64 || encoders < 1 ||
        encoders > 64 || g_rounds < 1) {
        fprintf(stderr, "bench_nvjpeg: bad options or no files\n");
        return 2;
    }
    if (pf_device_select(spec ? spec : "cuda", &g_dev) != PF_OK) die("device");
    char why[512];
    if (!pf_nvjpeg_available(why, sizeof why)) {
        fprintf(stderr, "bench_nvjpeg: %s\n", why);
        return 77;
    }
    pf_nvjpeg_dec *probe = NULL;
    if (pf_nvjpeg_dec_create(g_dev, 1, &probe) != PF_OK) die("decoder");
    pf_allocator_params ap = pf_allocator_params_default();
    ap.device = g_dev;
    ap.domain = PF_MEM_PINNED;
    pf_allocator *pinned = NULL;
    if (pf_allocator_create(&ap, &pinned) != PF_OK) die("pinned allocator");
    g_nfiles = argc > first_file ? argc - first_file : 4;
    g_files = calloc((size_t)g_nfiles, sizeof *g_files);
    if (!g_files) die("files");
    uint64_t paths[PF_JPEG_PATHS] = {0};
    double bytes = 0;
    for (int i = 0; i < g_nfiles; i++) {
        bench_file *f = &g_files[i];
        const char *path = argc > first_file ? argv[first_file + i] : "<synthetic>";
        if (argc > first_file) {
            FILE *fp = fopen(path, "rb");
            if (!fp) die(path);
            fseek(fp, 0, SEEK_END);
            long n = ftell(fp);
            fseek(fp, 0, SEEK_SET);
            if (n <= 0 || pf_allocator_alloc(pinned, (size_t)n, NULL, &f->buf) != PF_OK) die(path);
            f->data = pf_buffer_data(f->buf);
            f->size = fread(f->data, 1, (size_t)n, fp);
            fclose(fp);
        } else {
            synthetic(pinned, i, f);
        }
        if (pf_nvjpeg_dec_probe(probe, f->data, f->size, path, &f->w, &f->h, &f->path) != PF_OK)
            die(path);
        paths[f->path]++;
        bytes += (double)f->size;
    }
    int per = g_nfiles * g_rounds;
    double mp_one, mp_batch, mp_states, kib;
    int one_count = g_nfiles < 32 ? g_nfiles : 32;
    double one = decode_rate(1, 1, one_count, true, &mp_one);
    double batch = decode_rate(1, g_batch, per, false, &mp_batch);
    double all = decode_rate(states, g_batch, per, false, &mp_states);
    double enc = encode_rate(encoders, 200, &kib);
    if (json) {
        printf("{\n  \"bench\": \"nvjpeg\",\n  \"device\": \"%s\",\n  \"nvjpeg\": \"%s\",\n",
               pf_device_spec(g_dev), pf_nvjpeg_version());
        printf("  \"files\": %d,\n  \"width\": %d,\n  \"height\": %d,\n  \"kib_per_file\": %.0f,\n",
               g_nfiles, g_files[0].w, g_files[0].h, bytes / g_nfiles / 1024);
        printf("  \"paths\": {\"hardware\": %llu, \"gpu\": %llu, \"cpu\": %llu},\n",
               (unsigned long long)paths[0], (unsigned long long)paths[1],
               (unsigned long long)paths[2]);
        printf("  \"has_hardware\": %s,\n", pf_nvjpeg_dec_has_hw(probe) ? "true" : "false");
        printf("  \"decode_one_images_per_s\": %.2f,\n  \"decode_one_mpix_per_s\": %.0f,\n", one,
               mp_one);
        printf("  \"decode_batch\": %d,\n  \"decode_batch_images_per_s\": %.2f,\n"
               "  \"decode_batch_mpix_per_s\": %.0f,\n", g_batch, batch, mp_batch);
        printf("  \"decode_states\": %d,\n  \"decode_states_images_per_s\": %.2f,\n"
               "  \"decode_states_mpix_per_s\": %.0f,\n", states, all, mp_states);
        printf("  \"encode_threads\": %d,\n  \"encode_1080p_views_per_s\": %.1f,\n"
               "  \"encode_kib_per_view\": %.0f\n}\n", encoders, enc, kib);
    } else {
        printf("nvJPEG %s on %s (hardware engines: %s)\n", pf_nvjpeg_version(),
               pf_device_spec(g_dev), pf_nvjpeg_dec_has_hw(probe) ? "yes" : "no");
        printf("files      %d x %dx%d, %.0f KiB each; paths: %llu hardware, %llu gpu, %llu cpu\n",
               g_nfiles, g_files[0].w, g_files[0].h, bytes / g_nfiles / 1024,
               (unsigned long long)paths[0], (unsigned long long)paths[1],
               (unsigned long long)paths[2]);
        printf("decode     one at a time (batch 1, 1 state): %8.2f images/s %7.0f MPix/s\n", one, mp_one);
        printf("decode     batch %-3d, 1 state:               %8.2f images/s %7.0f MPix/s\n", g_batch,
               batch, mp_batch);
        printf("decode     batch %-3d, %2d states/threads:     %8.2f images/s %7.0f MPix/s\n",
               g_batch, states, all, mp_states);
        printf("encode     1920x1080 q90 4:2:0, %2d threads:  %8.1f views/s (%.0f KiB each)\n",
               encoders, enc, kib);
    }
    for (int i = 0; i < g_nfiles; i++) pf_buffer_unref(&g_files[i].buf);
    free(g_files);
    pf_allocator_destroy(&pinned);
    pf_nvjpeg_dec_destroy(&probe);
    return 0;
}
