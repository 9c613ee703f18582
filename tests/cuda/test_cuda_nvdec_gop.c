/* GOP-parallel NVDEC (src/io/nvdec_gop.c) and the video reader's NVDEC
 * route: the frames of several decoders, put back in order, must equal the
 * single decoder's frame for frame (hash of the NV12 planes), with the
 * display index as pts and index, and the reader must hand out the same.
 *
 * Input: $PF_SOURCE_DIR/.data/nvdec/gop24.h264 (640x360, 301 frames, IDR
 * every 24 frames, B-frames: 13 GOPs, the last one short; made by
 *   ffmpeg -f lavfi -i testsrc2=size=640x360:rate=30 -frames:v 301 -c:v libx264
 *     -preset veryfast -bf 2 -x264-params keyint=24:min-keyint=24:scenecut=0
 *     -pix_fmt yuv420p -f h264 gop24.h264)
 * and, when present, .data/bench/vtest_1080p.h264 (GOPs of 250). Exits 77
 * without a GPU, NVDEC or the file. */
#include <stdlib.h>

#include "cuda_test_util.h"
#include "io/nvdec_gop.h"
#include "pixflow/io.h"

#define MAXF 4096

static pf_device *g_dev;
static pf_stream *g_stream;

static uint64_t fnv(uint64_t x, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) x = (x ^ p[i]) * 0x100000001b3ull;
    return x;
}

static uint64_t hash_frame(const pf_frame *f)
{
    pf_frame h = {0};
    uint64_t x = 0xcbf29ce484222325ull;
    pf_status st = pf_frame_alloc(&h, PF_PIXFMT_NV12, f->width, f->height, NULL, NULL);
    if (st == PF_OK) st = pf_frame_copy_async(&h, f, g_stream);
    if (st == PF_OK) st = pf_stream_synchronize(g_stream);
    CHECK_OK(st);
    if (st != PF_OK) return 0;
    for (int y = 0; y < h.height; y++)
        x = fnv(x, h.data[0] + (size_t)y * h.stride[0], (size_t)h.width);
    for (int y = 0; y < (h.height + 1) / 2; y++)
        x = fnv(x, h.data[1] + (size_t)y * h.stride[1], 2 * (size_t)((h.width + 1) / 2));
    pf_frame_unref(&h);
    return x;
}

/* The single decoder's frames, in order. */
static int decode_single(const char *path, uint64_t *hashes)
{
    pf_es_reader *es = NULL;
    if (pf_es_reader_open(path, PF_ES_UNKNOWN, &es) != PF_OK) return -1;
    pf_nvdec_params p = pf_nvdec_params_default();
    p.device = g_dev;
    p.pool_size = 8;
    p.codec = pf_es_reader_codec(es);
    pf_nvdec *d = NULL;
    CHECK_OK(pf_nvdec_create(&p, &d));
    int n = 0;
    const uint8_t *au;
    size_t len;
    bool eof = false;
    while (d && !eof) {
        pf_status st = pf_es_reader_next(es, &au, &len);
        if (st == PF_EOF) {
            CHECK_OK(pf_nvdec_flush(d));
            eof = true;
        } else {
            CHECK_OK(st);
            CHECK_OK(pf_nvdec_decode(d, au, len, PF_NOPTS));
        }
        pf_frame f = {0};
        while (pf_nvdec_receive(d, &f) == PF_OK) {
            if (n < MAXF) hashes[n] = hash_frame(&f);
            n++;
            pf_frame_unref(&f);
        }
    }
    pf_nvdec_destroy(&d);
    pf_es_reader_close(&es);
    return n;
}

static void check_gop(const char *path, const uint64_t *want, int nwant, int k, int pool)
{
    pf_nvdec_params p = pf_nvdec_params_default();
    p.device = g_dev;
    p.pool_size = pool;
    p.name = path;
    pf_nvdec_gop *g = NULL;
    CHECK_OK(pf_nvdec_gop_open(path, false, &p, k, &g));
    if (!g) return;
    int n = 0, bad = 0, badmeta = 0;
    pf_frame f = {0};
    pf_status st;
    /* Hold a few frames at a time, as a pipeline does. */
    pf_frame held[3] = {{0}};
    while ((st = pf_nvdec_gop_read(g, &f)) == PF_OK) {
        if (n < nwant && hash_frame(&f) != want[n]) bad++;
        if (f.pts != n || f.index != n || pf_frame_domain(&f) != PF_MEM_DEVICE) badmeta++;
        pf_frame_unref(&held[n % 3]);
        held[n % 3] = f;
        memset(&f, 0, sizeof f);
        n++;
    }
    CHECK_EQ_INT(st, PF_EOF);
    CHECK_EQ_INT(pf_nvdec_gop_read(g, &f), PF_EOF); /* stays at the end */
    for (int i = 0; i < 3; i++) pf_frame_unref(&held[i]);
    pf_nvdec_gop_stats gs;
    pf_nvdec_gop_get_stats(g, &gs);
    printf("  %s: %d decoders, pool %d: %d frames, %lld GOPs, %d mismatches\n", path, k, pool, n,
           (long long)gs.gops, bad);
    fflush(stdout);
    CHECK_EQ_INT(n, nwant);
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(badmeta, 0);
    CHECK_EQ_INT((int)gs.dropped, 0);
    pf_nvdec_gop_close(&g);
}

/* Closing in the middle: threads stop, queued frames return. */
static void check_close_early(const char *path)
{
    pf_nvdec_params p = pf_nvdec_params_default();
    p.device = g_dev;
    p.pool_size = 8;
    pf_nvdec_gop *g = NULL;
    CHECK_OK(pf_nvdec_gop_open(path, false, &p, 3, &g));
    pf_frame f = {0};
    for (int i = 0; g && i < 30; i++) {
        CHECK_OK(pf_nvdec_gop_read(g, &f));
        pf_frame_unref(&f);
    }
    pf_nvdec_gop_close(&g);
    CHECK(g == NULL);
}

static void check_reader(const char *path, const uint64_t *want, int nwant, const char *decoders)
{
    setenv("PIXFLOW_NVDEC_DECODERS", decoders, 1);
    pf_video_reader_params rp = pf_video_reader_params_default();
    rp.path = path;
    rp.device = g_dev;
    rp.prefer_device = true;
    rp.pool_size = 16;
    pf_video_reader *r = NULL;
    CHECK_OK(pf_video_reader_create(&rp, &r));
    unsetenv("PIXFLOW_NVDEC_DECODERS");
    if (!r) return;
    pf_video_info info;
    CHECK_OK(pf_video_reader_info(r, &info));
    CHECK(info.hw_decode);
    CHECK_EQ_INT(info.format, PF_PIXFMT_NV12);
    int n = 0, bad = 0;
    pf_frame f = {0};
    pf_status st;
    while ((st = pf_video_reader_read(r, &f)) == PF_OK) {
        if (n < nwant && hash_frame(&f) != want[n]) bad++;
        if (f.index != n) bad++;
        pf_frame_unref(&f);
        n++;
    }
    CHECK_EQ_INT(st, PF_EOF);
    printf("  reader, PIXFLOW_NVDEC_DECODERS=%s: '%s', %d frames, %d mismatches\n", decoders,
           info.decoder, n, bad);
    fflush(stdout);
    CHECK_EQ_INT(n, nwant);
    CHECK_EQ_INT(bad, 0);
    pf_video_reader_destroy(&r);
}

static bool exists(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

static char g_small[1100], g_big[1100];
static uint64_t g_want[MAXF];
static int g_n;

static void test_gop_order(void)
{
    g_n = decode_single(g_small, g_want);
    CHECK_EQ_INT(g_n, 301);
    check_gop(g_small, g_want, g_n, 2, 8);
    check_gop(g_small, g_want, g_n, 4, 16);
    /* pool 8: the 3 frames held here plus what one decode() call may emit
     * at an IDR (display delay + reordering) must fit */
    check_gop(g_small, g_want, g_n, 7, 8);
}

static void test_close_early(void) { check_close_early(g_small); }

static void test_reader(void)
{
    check_reader(g_small, g_want, g_n, "4");
    check_reader(g_small, g_want, g_n, "1");
}

/* Long GOPs (250 frames) with pools far smaller than a GOP. */
static void test_long_gops(void)
{
    if (!exists(g_big)) {
        printf("  (%s absent)\n", g_big);
        return;
    }
    static uint64_t want[MAXF];
    int nb = decode_single(g_big, want);
    CHECK(nb > 0);
    check_gop(g_big, want, nb, 3, 64);
}

int main(void)
{
    const char *src = getenv("PF_SOURCE_DIR");
    snprintf(g_small, sizeof g_small, "%s/.data/nvdec/gop24.h264", src && *src ? src : ".");
    snprintf(g_big, sizeof g_big, "%s/.data/bench/vtest_1080p.h264", src && *src ? src : ".");
    g_dev = pf_test_cuda_device_or_skip();
    char why[512];
    if (!pf_nvdec_available(why, sizeof why)) {
        printf("SKIP: NVDEC: %s\n", why);
        pf_test_finish();
        return 77;
    }
    if (!exists(g_small)) {
        printf("SKIP: %s is missing (see the top of this file)\n", g_small);
        pf_test_finish();
        return 77;
    }
    setvbuf(stdout, NULL, _IONBF, 0); /* a hang still shows how far it got */
    g_stream = make_stream(g_dev, 0);
    PF_RUN(test_gop_order);
    PF_RUN(test_close_early);
    PF_RUN(test_reader);
    PF_RUN(test_long_gops);
    pf_stream_destroy(&g_stream);
    return pf_test_finish();
}
