/* NVDEC decoding (src/io/nvdec.c) and the elementary stream splitter
 * (src/io/h264_es.c).
 *
 * The splitter cases run everywhere (hand-built H.264 and HEVC streams with
 * known unit boundaries, random bytes, partial buffers). The decoder cases
 * need a GPU, libnvcuvid and the sample made by scripts/make-nvdec-sample.sh
 * in $PF_SOURCE_DIR/.data/nvdec/ (64 frames 1080p x264 with B-frames, and
 * ffmpeg's decode of it as one gray PNG per plane); without them the test
 * exits 77 (skipped) after the splitter cases. NVDEC output must equal
 * ffmpeg's bit for bit (H.264 decoding is exact); on a mismatch the PSNR is
 * printed. */
#include <pthread.h>

#include "cuda_test_util.h"
#include "io/h264_es.h"
#include "io/nvdec.h"

static char g_dir[1024];
static uint8_t *g_file;       /* test.h264 */
static size_t g_file_size;
static size_t g_au_off[256], g_au_len[256];
static int g_au_count;

/* Splitter ------------------------------------------------------------------------------ */

/* Appends a NAL with a 4-byte (long) or 3-byte start code. */
static size_t put_nal(uint8_t *b, size_t at, int long_sc, const uint8_t *nal, size_t n)
{
    if (long_sc) b[at++] = 0;
    b[at++] = 0;
    b[at++] = 0;
    b[at++] = 1;
    memcpy(b + at, nal, n);
    return at + n;
}

/* Splits b with eof and checks the unit lengths against want[]. */
static void check_split(pf_es_codec codec, const uint8_t *b, size_t size, const size_t *want,
                        int nwant)
{
    size_t at = 0;
    int k = 0;
    for (;;) {
        size_t len = 0;
        pf_status st = pf_es_next_au(codec, b + at, size - at, true, &len);
        if (st == PF_EOF) break;
        CHECK_OK(st);
        if (st != PF_OK || len == 0) return;
        if (k < nwant) CHECK_EQ_INT(len, want[k]);
        /* without eof, every unit but the last is already complete */
        size_t len2 = 0;
        pf_status st2 = pf_es_next_au(codec, b + at, size - at, false, &len2);
        if (at + len < size) {
            CHECK_OK(st2);
            CHECK_EQ_INT(len2, len);
        } else {
            CHECK_EQ_INT(st2, PF_AGAIN);
        }
        at += len;
        k++;
    }
    CHECK_EQ_INT(k, nwant);
    CHECK_EQ_INT(at, size);
}

static void test_split_h264(void)
{
    static const uint8_t aud[] = {0x09, 0xf0}, sps[] = {0x67, 0x42, 0xc0, 0x1e, 0x8c},
                         pps[] = {0x68, 0xce, 0x3c, 0x80}, sei[] = {0x06, 0x05, 0x01, 0x00, 0x80},
                         idr0[] = {0x65, 0x88, 0x84, 0x21, 0x00, 0x00, 0x03, 0x01},
                         idr1[] = {0x65, 0x04, 0x22, 0x10}, /* first_mb_in_slice != 0 */
                         p0[] = {0x41, 0x9a, 0x21, 0x6c}, eos[] = {0x0b};
    uint8_t b[256];
    size_t at = 0, want[4];
    int n = 0;
    size_t start = at;
    at = put_nal(b, at, 1, aud, sizeof aud);
    at = put_nal(b, at, 1, sps, sizeof sps);
    at = put_nal(b, at, 0, pps, sizeof pps);
    at = put_nal(b, at, 0, idr0, sizeof idr0);
    at = put_nal(b, at, 0, idr1, sizeof idr1); /* second slice: same picture */
    want[n++] = at - start;
    start = at;
    at = put_nal(b, at, 1, aud, sizeof aud);
    at = put_nal(b, at, 0, p0, sizeof p0);
    want[n++] = at - start;
    start = at;
    at = put_nal(b, at, 0, p0, sizeof p0); /* no AUD: a first slice starts the unit */
    want[n++] = at - start;
    start = at;
    at = put_nal(b, at, 1, sei, sizeof sei);
    at = put_nal(b, at, 0, p0, sizeof p0);
    at = put_nal(b, at, 0, eos, sizeof eos); /* end of sequence stays with its unit */
    want[n++] = at - start;
    check_split(PF_ES_H264, b, at, want, n);
    CHECK_EQ_INT(pf_es_probe(b, at), PF_ES_H264);
    CHECK_EQ_INT(pf_es_probe(b + want[0], at - want[0]), PF_ES_H264);

    /* bytes before the first start code go with the first unit */
    uint8_t g[300];
    g[0] = 0x12;
    g[1] = 0x34;
    memcpy(g + 2, b, at);
    size_t want_g[4] = {want[0] + 2, want[1], want[2], want[3]};
    check_split(PF_ES_H264, g, at + 2, want_g, 4);

    /* a cut header cannot be classified before more bytes come */
    size_t len = 0;
    CHECK_EQ_INT(pf_es_next_au(PF_ES_H264, b, want[0] + 4, false, &len), PF_AGAIN);
    CHECK_EQ_INT(pf_es_next_au(PF_ES_H264, b, 0, true, &len), PF_EOF);
    CHECK_EQ_INT(pf_es_next_au(PF_ES_UNKNOWN, b, at, true, &len), PF_ERR_INVALID);
}

static void test_split_hevc(void)
{
    static const uint8_t vps[] = {0x40, 0x01, 0x0c, 0x01}, sps[] = {0x42, 0x01, 0x01, 0x01},
                         pps[] = {0x44, 0x01, 0xc1, 0x72}, aud[] = {0x46, 0x01, 0x50},
                         idr0[] = {0x26, 0x01, 0xaf, 0x1d, 0x80},
                         idr1[] = {0x26, 0x01, 0x00, 0x4d, 0x80}, /* not the first segment */
                         trail[] = {0x02, 0x01, 0xd0, 0x11},
                         suffix_sei[] = {0x50, 0x01, 0x84, 0x00};
    uint8_t b[256];
    size_t at = 0, want[3];
    int n = 0;
    size_t start = at;
    at = put_nal(b, at, 1, vps, sizeof vps);
    at = put_nal(b, at, 1, sps, sizeof sps);
    at = put_nal(b, at, 1, pps, sizeof pps);
    at = put_nal(b, at, 1, idr0, sizeof idr0);
    at = put_nal(b, at, 0, idr1, sizeof idr1);
    at = put_nal(b, at, 0, suffix_sei, sizeof suffix_sei); /* suffix SEI: same unit */
    want[n++] = at - start;
    start = at;
    at = put_nal(b, at, 1, trail, sizeof trail);
    want[n++] = at - start;
    start = at;
    at = put_nal(b, at, 1, aud, sizeof aud);
    at = put_nal(b, at, 0, trail, sizeof trail);
    want[n++] = at - start;
    check_split(PF_ES_HEVC, b, at, want, n);
    CHECK_EQ_INT(pf_es_probe(b, at), PF_ES_HEVC);
    CHECK_EQ_INT(pf_es_probe(b + want[0] + want[1], want[2]), PF_ES_HEVC);
    CHECK_EQ_INT(pf_es_codec_from_path("a/B.HEVC"), PF_ES_HEVC);
    CHECK_EQ_INT(pf_es_codec_from_path("x.264"), PF_ES_H264);
    CHECK_EQ_INT(pf_es_codec_from_path("x.mp4"), PF_ES_UNKNOWN);
}

/* Random bytes (many start codes among them): units cover the buffer
 * exactly, each is non-empty, and nothing reads past the end (ASan). */
static void test_split_random(void)
{
    pf_test_seed(7);
    for (int iter = 0; iter < 2000; iter++) {
        size_t size = (size_t)pf_test_rand_range(0, 300);
        uint8_t *b = malloc(size ? size : 1);
        REQUIRE(b);
        for (size_t i = 0; i < size; i++) {
            uint64_t r = pf_test_rand() % 8;
            b[i] = r < 4 ? 0 : r == 4 ? 1 : (uint8_t)pf_test_rand();
        }
        pf_es_codec codec = iter % 2 ? PF_ES_H264 : PF_ES_HEVC;
        size_t at = 0;
        int guard = 0;
        while (at < size && guard++ < 1000) {
            size_t len = 0;
            pf_status st = pf_es_next_au(codec, b + at, size - at, true, &len);
            if (st != PF_OK || len == 0 || len > size - at) {
                CHECK(0);
                break;
            }
            size_t len2 = 0; /* a partial buffer never claims more than it has */
            st = pf_es_next_au(codec, b + at, size - at, false, &len2);
            if (st == PF_OK) CHECK(len2 == len);
            at += len;
        }
        CHECK_EQ_INT(at, size);
        (void)pf_es_probe(b, size);
        free(b);
    }
}

static int load_sample(void)
{
    const char *src = getenv("PF_SOURCE_DIR");
    snprintf(g_dir, sizeof g_dir, "%s/.data/nvdec", src && src[0] ? src : ".");
    char path[1100];
    snprintf(path, sizeof path, "%s/test.h264", g_dir);
    FILE *fp = fopen(path, "rb");
    if (!fp) return 0;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    g_file = malloc(n > 0 ? (size_t)n : 1);
    g_file_size = g_file && n > 0 ? fread(g_file, 1, (size_t)n, fp) : 0;
    fclose(fp);
    return g_file_size > 0;
}

/* The sample through the file reader: 64 units, the codec from the bytes. */
static void test_reader_sample(void)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/test.h264", g_dir);
    pf_es_reader *r = NULL;
    CHECK_OK(pf_es_reader_open(path, PF_ES_UNKNOWN, &r));
    REQUIRE(r);
    CHECK_EQ_INT(pf_es_reader_codec(r), PF_ES_H264);
    CHECK_EQ_INT(pf_es_probe(g_file, g_file_size), PF_ES_H264);
    const uint8_t *au = NULL;
    size_t n = 0, at = 0;
    pf_status st;
    while ((st = pf_es_reader_next(r, &au, &n)) == PF_OK) {
        if (g_au_count < 256) {
            g_au_off[g_au_count] = at;
            g_au_len[g_au_count] = n;
        }
        CHECK(at + n <= g_file_size && memcmp(au, g_file + at, n) == 0);
        at += n;
        g_au_count++;
    }
    CHECK_EQ_INT(st, PF_EOF);
    CHECK_EQ_INT(at, g_file_size);
    CHECK_EQ_INT(g_au_count, 64);
    CHECK_EQ_INT(pf_es_reader_count(r), 64);
    pf_es_reader_close(&r);
    CHECK(r == NULL);
    CHECK_EQ_INT(pf_es_reader_open("/nonexistent/x.h264", PF_ES_UNKNOWN, &r), PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "/nonexistent/x.h264") != NULL);
}

/* Decoder -------------------------------------------------------------------------------- */

static pf_device *g_dev;
static pf_stream *g_stream;
static pf_frame g_ref[64][3]; /* Y, U, V as GRAY8 host frames */
static uint64_t g_hash[64];   /* of the first decode */

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* Downloads a device NV12 frame into *host (allocated here). */
static pf_status download(const pf_frame *f, pf_frame *host)
{
    pf_status st = pf_frame_alloc(host, PF_PIXFMT_NV12, f->width, f->height, NULL, NULL);
    if (st == PF_OK) st = pf_frame_copy_async(host, f, g_stream);
    if (st == PF_OK) st = pf_stream_synchronize(g_stream);
    return st;
}

static uint64_t hash_nv12(const pf_frame *h)
{
    uint64_t x = 0xcbf29ce484222325ull;
    for (int y = 0; y < h->height; y++)
        x = fnv(x, h->data[0] + (size_t)y * h->stride[0], (size_t)h->width);
    for (int y = 0; y < (h->height + 1) / 2; y++)
        x = fnv(x, h->data[1] + (size_t)y * h->stride[1], 2 * (size_t)((h->width + 1) / 2));
    return x;
}

/* Squared error of NV12 host frame h against reference frame k. */
static double compare_ref(const pf_frame *h, int k, uint64_t *diff, uint64_t *count)
{
    double se = 0;
    const pf_frame *r = g_ref[k];
    for (int y = 0; y < h->height; y++)
        for (int x = 0; x < h->width; x++) {
            int a = h->data[0][(size_t)y * h->stride[0] + (size_t)x];
            int b = r[0].data[0][(size_t)y * r[0].stride[0] + (size_t)x];
            se += (double)(a - b) * (a - b);
            *diff += a != b;
            (*count)++;
        }
    int cw = (h->width + 1) / 2, ch = (h->height + 1) / 2;
    for (int y = 0; y < ch; y++)
        for (int x = 0; x < cw; x++)
            for (int c = 0; c < 2; c++) {
                int a = h->data[1][(size_t)y * h->stride[1] + 2 * (size_t)x + (size_t)c];
                int b = r[1 + c].data[0][(size_t)y * r[1 + c].stride[0] + (size_t)x];
                se += (double)(a - b) * (a - b);
                *diff += a != b;
                (*count)++;
            }
    return se;
}

static int load_refs(void)
{
    const char *pl = "yuv";
    for (int k = 0; k < 64; k++)
        for (int p = 0; p < 3; p++) {
            char path[1200];
            snprintf(path, sizeof path, "%s/ref/%c_%03d.png", g_dir, pl[p], k + 1);
            if (pf_image_read(path, PF_PIXFMT_GRAY8, &g_ref[k][p]) != PF_OK) {
                fprintf(stderr, "  reference: %s\n", pf_last_error());
                return 0;
            }
        }
    return 1;
}

static pf_nvdec *make_dec(int pool, int64_t timeout_us, pf_es_codec codec)
{
    pf_nvdec_params p = pf_nvdec_params_default();
    p.device = g_dev;
    p.pool_size = pool;
    p.pool_timeout_us = timeout_us;
    p.codec = codec;
    p.name = "test.h264";
    pf_nvdec *d = NULL;
    CHECK_OK(pf_nvdec_create(&p, &d));
    return d;
}

/* Receives all ready frames: hashes them into hashes[*n], checks metadata. */
static void drain(pf_nvdec *d, uint64_t *hashes, int *n, int64_t *pts, int max)
{
    pf_frame f = {0};
    pf_status st;
    while ((st = pf_nvdec_receive(d, &f)) == PF_OK) {
        CHECK_EQ_INT(pf_frame_domain(&f), PF_MEM_DEVICE);
        CHECK_EQ_INT(f.format, PF_PIXFMT_NV12);
        CHECK(f.index >= *n); /* display index: gaps only for skipped pictures */
        pf_frame h = {0};
        CHECK_OK(download(&f, &h));
        if (*n < max) {
            hashes[*n] = hash_nv12(&h);
            if (pts) pts[*n] = f.pts;
        }
        (*n)++;
        pf_frame_unref(&h);
        pf_frame_unref(&f);
    }
    CHECK(st == PF_AGAIN || st == PF_EOF);
}

static void test_bad_params(void)
{
    pf_nvdec_params p = pf_nvdec_params_default();
    pf_nvdec *d = NULL;
    CHECK_EQ_INT(pf_nvdec_create(&p, &d), PF_ERR_INVALID); /* no device */
    pf_device *cpu = NULL;
    CHECK_OK(pf_device_get(PF_DEVICE_CPU, 0, &cpu));
    p.device = cpu;
    CHECK_EQ_INT(pf_nvdec_create(&p, &d), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "CUDA") != NULL);
    p.device = g_dev;
    p.pool_size = 0;
    CHECK_EQ_INT(pf_nvdec_create(&p, &d), PF_ERR_INVALID);
    p.pool_size = 8;
    p.surfaces = 33;
    CHECK_EQ_INT(pf_nvdec_create(&p, &d), PF_ERR_INVALID);
    p.surfaces = 0;
    p.fps = (pf_rational){-30, 1};
    CHECK_EQ_INT(pf_nvdec_create(&p, &d), PF_ERR_INVALID);
    CHECK(d == NULL);
    pf_nvdec_destroy(&d);
    pf_nvdec_destroy(NULL);
}

/* Access units in, frames compared with ffmpeg's decode. */
static void test_decode_exact(void)
{
    pf_nvdec *d = make_dec(8, -1, PF_ES_UNKNOWN);
    REQUIRE(d);
    pf_nvdec_info info;
    CHECK_EQ_INT(pf_nvdec_get_info(d, &info), PF_AGAIN);
    int n = 0, exact = 0;
    double se = 0;
    uint64_t diff = 0, count = 0;
    int64_t t0 = pf_time_ns();
    for (int a = 0; a <= g_au_count; a++) {
        if (a < g_au_count)
            CHECK_OK(pf_nvdec_decode(d, g_file + g_au_off[a], g_au_len[a], PF_NOPTS));
        else
            CHECK_OK(pf_nvdec_flush(d));
        pf_frame f = {0};
        while (pf_nvdec_receive(d, &f) == PF_OK) {
            CHECK_EQ_INT(f.index, n);
            CHECK_EQ_INT(f.pts, n);
            CHECK(f.time_base.num == 1 && f.time_base.den == 30);
            CHECK_EQ_INT(pf_frame_domain(&f), PF_MEM_DEVICE);
            pf_frame h = {0};
            CHECK_OK(download(&f, &h));
            if (n < 64 && h.buf[0]) {
                g_hash[n] = hash_nv12(&h);
                uint64_t fd = 0;
                se += compare_ref(&h, n, &fd, &count);
                exact += fd == 0;
                diff += fd;
            }
            n++;
            pf_frame_unref(&h);
            pf_frame_unref(&f);
        }
    }
    double ms = (double)(pf_time_ns() - t0) / 1e6;
    pf_frame f = {0};
    CHECK_EQ_INT(pf_nvdec_receive(d, &f), PF_EOF);
    CHECK_EQ_INT(pf_nvdec_decode(d, g_file, 16, PF_NOPTS), PF_ERR_CLOSED);
    CHECK_EQ_INT(n, 64);
    CHECK_EQ_INT(exact, 64);
    double psnr = diff ? 10.0 * log10(255.0 * 255.0 / (se / (double)count)) : INFINITY;
    printf("  h264 1920x1080: %d frames, %d bit exact vs ffmpeg, %llu samples differ, PSNR "
           "%.2f dB (%.1f ms incl. downloads and compares)\n",
           n, exact, (unsigned long long)diff, psnr, ms);
    CHECK_OK(pf_nvdec_get_info(d, &info));
    CHECK_EQ_INT(info.codec, PF_ES_H264);
    CHECK_EQ_INT(info.width, 1920);
    CHECK_EQ_INT(info.height, 1080);
    CHECK_EQ_INT(info.coded_height, 1088);
    CHECK(info.progressive);
    CHECK(info.surfaces >= info.min_surfaces && info.min_surfaces > 0);
    printf("  surfaces %d (min %d), NVDEC engines for this format: %d, stream fps %d/%d\n",
           info.surfaces, info.min_surfaces, info.engines, info.fps.num, info.fps.den);
    pf_nvdec_stats s;
    CHECK_OK(pf_nvdec_get_stats(d, &s));
    CHECK_EQ_INT(s.frames, 64);
    CHECK_EQ_INT(s.pictures, 64);
    CHECK_EQ_INT(s.packets, 64);
    CHECK_EQ_INT(s.bytes, g_file_size);
    CHECK_EQ_INT(s.decode_errors, 0);
    CHECK_EQ_INT(s.dropped, 0);
    pf_nvdec_destroy(&d);
    CHECK(d == NULL);
}

/* Arbitrary chunks (the parser finds the pictures itself) give the same
 * frames; so do caller pts, which come back permuted into display order. */
static void test_decode_chunks_and_pts(void)
{
    pf_nvdec *d = make_dec(8, -1, PF_ES_H264);
    REQUIRE(d);
    uint64_t h[80];
    int n = 0;
    pf_test_seed(11);
    for (size_t at = 0; at < g_file_size;) {
        size_t len = (size_t)pf_test_rand_range(1, 48 << 10);
        if (len > g_file_size - at) len = g_file_size - at;
        CHECK_OK(pf_nvdec_decode(d, g_file + at, len, PF_NOPTS));
        at += len;
        drain(d, h, &n, NULL, 80);
    }
    CHECK_OK(pf_nvdec_flush(d));
    drain(d, h, &n, NULL, 80);
    CHECK_EQ_INT(n, 64);
    int same = 0;
    for (int k = 0; k < 64 && k < n; k++) same += h[k] == g_hash[k];
    CHECK_EQ_INT(same, 64);
    pf_nvdec_destroy(&d);

    d = make_dec(8, -1, PF_ES_H264);
    REQUIRE(d);
    int64_t pts[80];
    n = 0;
    for (int a = 0; a < g_au_count; a++) {
        CHECK_OK(pf_nvdec_decode(d, g_file + g_au_off[a], g_au_len[a], 1000 + 3000 * a));
        drain(d, h, &n, pts, 80);
    }
    CHECK_OK(pf_nvdec_flush(d));
    drain(d, h, &n, pts, 80);
    CHECK_EQ_INT(n, 64);
    /* every pts given comes out once, increasing in display order: the
     * parser treats them as presentation times (as containers store them),
     * not as labels of the picture in the packet (x264's B-frames here are
     * decoded out of display order) */
    int found = 0, increasing = 0;
    for (int a = 0; a < 64; a++)
        for (int k = 0; k < n && k < 64; k++)
            if (pts[k] == 1000 + 3000 * a) {
                found++;
                break;
            }
    for (int k = 1; k < n && k < 64; k++) increasing += pts[k] > pts[k - 1];
    CHECK_EQ_INT(found, 64);
    CHECK_EQ_INT(increasing, 63);
    same = 0;
    for (int k = 0; k < 64 && k < n; k++) same += h[k] == g_hash[k];
    CHECK_EQ_INT(same, 64);
    pf_nvdec_destroy(&d);
}

/* Damaged slices are decoded around or skipped and counted, garbage is
 * refused, a full pool drops frames with a clear error: never a crash. */
static void test_corrupt(void)
{
    uint8_t *bad = malloc(g_file_size);
    REQUIRE(bad);
    memcpy(bad, g_file, g_file_size);
    pf_test_seed(3);
    for (int a = 5; a < g_au_count; a += 9) /* damage inside the slice data */
        for (size_t i = 40; i < g_au_len[a]; i += 7) bad[g_au_off[a] + i] ^= (uint8_t)pf_test_rand();
    pf_nvdec *d = make_dec(8, -1, PF_ES_H264);
    REQUIRE(d);
    uint64_t h[80];
    int n = 0;
    for (int a = 0; a < g_au_count; a++) {
        pf_status st = pf_nvdec_decode(d, bad + g_au_off[a], g_au_len[a], PF_NOPTS);
        CHECK(st == PF_OK);
        drain(d, h, &n, NULL, 80);
    }
    CHECK_OK(pf_nvdec_flush(d));
    drain(d, h, &n, NULL, 80);
    pf_nvdec_stats s;
    CHECK_OK(pf_nvdec_get_stats(d, &s));
    int same = 0;
    for (int k = 0; k < 64 && k < n; k++) same += h[k] == g_hash[k];
    printf("  corrupted slices in 7 units: %d frames out, %d identical to the clean decode, "
           "%llu decode errors counted\n",
           n, same, (unsigned long long)s.decode_errors);
    CHECK(n >= 32 && n <= 64);
    CHECK(same >= 3 && same < 64); /* frames before the first damage are intact */
    pf_nvdec_destroy(&d);

    /* random bytes as H.264: nothing decodable, no sequence, no crash */
    pf_test_fill_random(bad, g_file_size);
    d = make_dec(8, -1, PF_ES_H264);
    REQUIRE(d);
    for (size_t at = 0; at < g_file_size; at += 65536) {
        size_t len = g_file_size - at < 65536 ? g_file_size - at : 65536;
        CHECK_OK(pf_nvdec_decode(d, bad + at, len, PF_NOPTS));
    }
    CHECK_OK(pf_nvdec_flush(d));
    n = 0;
    drain(d, h, &n, NULL, 80);
    CHECK_EQ_INT(n, 0);
    pf_nvdec_info info;
    CHECK_EQ_INT(pf_nvdec_get_info(d, &info), PF_AGAIN);
    pf_nvdec_destroy(&d);

    /* codec from garbage bytes: refused with a message */
    bad[0] = 0x12;
    d = make_dec(8, -1, PF_ES_UNKNOWN);
    REQUIRE(d);
    CHECK_EQ_INT(pf_nvdec_decode(d, bad, 4096, PF_NOPTS), PF_ERR_FORMAT);
    CHECK(strstr(pf_last_error(), "test.h264") != NULL);
    pf_nvdec_destroy(&d);
    free(bad);

    /* the whole file in one call with a 2-frame pool that never waits */
    d = make_dec(2, 0, PF_ES_H264);
    REQUIRE(d);
    pf_status st = pf_nvdec_decode(d, g_file, g_file_size, PF_NOPTS);
    CHECK_EQ_INT(st, PF_ERR_BUSY);
    CHECK(strstr(pf_last_error(), "dropped") != NULL);
    n = 0;
    drain(d, h, &n, NULL, 80);
    CHECK_OK(pf_nvdec_get_stats(d, &s));
    CHECK(s.dropped > 0);
    CHECK_EQ_INT(n, 2);
    /* still usable: the rest comes out once the frames are received */
    st = pf_nvdec_flush(d); /* may drop again: the pool still has 2 frames */
    CHECK(st == PF_OK || st == PF_ERR_BUSY);
    drain(d, h, &n, NULL, 80);
    CHECK_OK(pf_nvdec_get_stats(d, &s));
    CHECK_EQ_INT((uint64_t)n + s.dropped, 64);
    pf_nvdec_destroy(&d);
}

/* Several decoders on several threads at once (the engines run in
 * parallel): each output identical to the single decode. */
typedef struct worker {
    int id;
    int frames, same;
    pf_status st;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    pf_nvdec_params p = pf_nvdec_params_default();
    p.device = g_dev;
    pf_nvdec *d = NULL;
    w->st = pf_nvdec_create(&p, &d);
    if (w->st != PF_OK) return NULL;
    pf_stream_params sp = pf_stream_params_default();
    sp.device = g_dev;
    pf_stream *s = NULL;
    w->st = pf_stream_create(&sp, &s);
    for (int a = 0; a <= g_au_count && w->st == PF_OK; a++) {
        w->st = a < g_au_count ? pf_nvdec_decode(d, g_file + g_au_off[a], g_au_len[a], PF_NOPTS)
                               : pf_nvdec_flush(d);
        pf_frame f = {0};
        while (w->st == PF_OK && pf_nvdec_receive(d, &f) == PF_OK) {
            pf_frame h = {0};
            w->st = pf_frame_alloc(&h, PF_PIXFMT_NV12, f.width, f.height, NULL, NULL);
            if (w->st == PF_OK) w->st = pf_frame_copy_async(&h, &f, s);
            if (w->st == PF_OK) w->st = pf_stream_synchronize(s);
            if (w->st == PF_OK && w->frames < 64) w->same += hash_nv12(&h) == g_hash[w->frames];
            w->frames++;
            pf_frame_unref(&h);
            pf_frame_unref(&f);
        }
    }
    pf_stream_destroy(&s);
    pf_nvdec_destroy(&d);
    return NULL;
}

static void test_parallel(void)
{
    enum { N = 4 };
    pthread_t t[N];
    worker w[N];
    memset(w, 0, sizeof w);
    int64_t t0 = pf_time_ns();
    for (int i = 0; i < N; i++) {
        w[i].id = i;
        REQUIRE(pthread_create(&t[i], NULL, worker_main, &w[i]) == 0);
    }
    for (int i = 0; i < N; i++) pthread_join(t[i], NULL);
    double ms = (double)(pf_time_ns() - t0) / 1e6;
    for (int i = 0; i < N; i++) {
        if (w[i].st != PF_OK) fprintf(stderr, "  worker %d: %s\n", i, pf_status_str(w[i].st));
        CHECK_OK(w[i].st);
        CHECK_EQ_INT(w[i].frames, 64);
        CHECK_EQ_INT(w[i].same, 64);
    }
    printf("  %d decoders in parallel: %d x 64 frames identical, %.1f ms\n", N, N, ms);
}

int main(void)
{
    PF_RUN(test_split_h264);
    PF_RUN(test_split_hevc);
    PF_RUN(test_split_random);
    int have_sample = load_sample();
    if (have_sample) PF_RUN(test_reader_sample);
    if (pf_test_failed) return pf_test_finish();

    g_dev = pf_test_cuda_device_or_skip();
    char why[512];
    if (!pf_nvdec_available(why, sizeof why)) {
        printf("SKIP: NVDEC: %s\n", why);
        pf_test_finish();
        return 77;
    }
    if (!have_sample || g_au_count != 64 || !load_refs()) {
        printf("SKIP: no NVDEC sample in %s (run scripts/make-nvdec-sample.sh)\n", g_dir);
        pf_test_finish();
        return 77;
    }
    g_stream = make_stream(g_dev, 0);
    PF_RUN(test_bad_params);
    PF_RUN(test_decode_exact);
    PF_RUN(test_decode_chunks_and_pts);
    PF_RUN(test_corrupt);
    PF_RUN(test_parallel);
    pf_stream_destroy(&g_stream);
    for (int k = 0; k < 64; k++)
        for (int p = 0; p < 3; p++) pf_frame_unref(&g_ref[k][p]);
    free(g_file);
    return pf_test_finish();
}
