/* io images: PNG exact and JPEG (PSNR-bounded) round trips of random images
 * at odd sizes and every image format, decode conversions (16-bit, palette
 * with transparency, 1-bit gray, interlaced PNGs made by a small PNG writer
 * below), decode into a caller's strided frame, and errors that name the
 * file (missing, truncated, corrupt, unwritable directory). */
#include <unistd.h>

#include "pf_test.h"
#include "pixflow/io.h"

static char tmpdir[256];

static void tmp_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", tmpdir, name);
}

static int channels(pf_pixfmt f)
{
    return f == PF_PIXFMT_RGBA ? 4 : f == PF_PIXFMT_GRAY8 ? 1 : 3;
}

static void random_frame(pf_frame *f, pf_pixfmt fmt, int w, int h)
{
    memset(f, 0, sizeof *f);
    pf_frame_alloc(f, fmt, w, h, NULL, NULL);
    for (int y = 0; y < h; y++) pf_test_fill_random(f->data[0] + (size_t)y * f->stride[0],
                                                    (size_t)w * (size_t)channels(fmt));
}

/* Smooth content (what JPEG is for): low-frequency waves plus a little noise. */
static void smooth_frame(pf_frame *f, pf_pixfmt fmt, int w, int h)
{
    memset(f, 0, sizeof *f);
    pf_frame_alloc(f, fmt, w, h, NULL, NULL);
    int ch = channels(fmt);
    double ph[4];
    for (int c = 0; c < 4; c++) ph[c] = (double)pf_test_rand_range(0, 628) / 100.0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < ch; c++) {
                double v = 128 + 90 * sin(x * 0.05 + ph[c]) * cos(y * 0.04 + ph[(c + 1) & 3]) +
                           (double)pf_test_rand_range(-3, 3);
                f->data[0][(size_t)y * f->stride[0] + (size_t)x * ch + c] =
                    (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
}

static bool same_pixels(const pf_frame *a, const pf_frame *b)
{
    if (a->width != b->width || a->height != b->height || a->format != b->format) return false;
    size_t row = (size_t)a->width * (size_t)channels(a->format);
    for (int y = 0; y < a->height; y++)
        if (memcmp(a->data[0] + (size_t)y * a->stride[0], b->data[0] + (size_t)y * b->stride[0],
                   row) != 0)
            return false;
    return true;
}

static double psnr(const pf_frame *a, const pf_frame *b)
{
    int ch = channels(a->format);
    double se = 0;
    size_t n = 0;
    for (int y = 0; y < a->height; y++)
        for (int x = 0; x < a->width * ch; x++) {
            double d = (double)a->data[0][(size_t)y * a->stride[0] + x] -
                       b->data[0][(size_t)y * b->stride[0] + x];
            se += d * d;
            n++;
        }
    if (se == 0) return 99;
    return 10 * log10(255.0 * 255.0 / (se / (double)n));
}

static const int sizes[][2] = {{1, 1}, {7, 5}, {33, 17}, {64, 64}, {127, 3}, {2, 129}};
#define NSIZES (int)(sizeof sizes / sizeof sizes[0])
static const pf_pixfmt fmts[] = {PF_PIXFMT_RGB24, PF_PIXFMT_BGR24, PF_PIXFMT_RGBA,
                                 PF_PIXFMT_GRAY8};

static void test_png_roundtrip(void)
{
    if (!pf_io_have_png()) return;
    for (int s = 0; s < NSIZES; s++)
        for (int k = 0; k < 4; k++) {
            pf_frame src, dst = {0};
            random_frame(&src, fmts[k], sizes[s][0], sizes[s][1]);
            pf_image_write_params wp = pf_image_write_params_default();
            wp.png_compression = s % 3 == 0 ? 0 : 9;
            char path[512];
            tmp_path(path, sizeof path, "rt.png");
            CHECK_OK(pf_image_write(path, &src, &wp));
            CHECK_OK(pf_image_read(path, fmts[k], &dst));
            CHECK(same_pixels(&src, &dst));
            pf_image_info info;
            CHECK_OK(pf_image_probe(path, &info));
            CHECK(info.width == sizes[s][0] && info.height == sizes[s][1]);
            CHECK(info.container == PF_IMAGE_PNG && info.bit_depth == 8);
            /* native: BGR24 is stored as RGB */
            pf_pixfmt native = fmts[k] == PF_PIXFMT_BGR24 ? PF_PIXFMT_RGB24 : fmts[k];
            CHECK(info.format == native);
            pf_frame_unref(&dst);
            /* In memory too. */
            wp.format = PF_IMAGE_PNG;
            pf_buffer *enc = NULL;
            CHECK_OK(pf_image_encode(&src, &wp, &enc));
            REQUIRE(enc);
            CHECK_OK(pf_image_read_memory(pf_buffer_data(enc), pf_buffer_size(enc), "mem.png",
                                          fmts[k], &dst));
            CHECK(same_pixels(&src, &dst));
            pf_buffer_unref(&enc);
            pf_frame_unref(&dst);
            pf_frame_unref(&src);
        }
}

/* Reference conversions of io.h, checked on a PNG (lossless). */
static void test_png_conversions(void)
{
    if (!pf_io_have_png()) return;
    pf_frame rgba;
    random_frame(&rgba, PF_PIXFMT_RGBA, 37, 21);
    pf_buffer *enc = NULL;
    pf_image_write_params wp = pf_image_write_params_default();
    wp.format = PF_IMAGE_PNG;
    CHECK_OK(pf_image_encode(&rgba, &wp, &enc));
    REQUIRE(enc);
    const void *d = pf_buffer_data(enc);
    size_t n = pf_buffer_size(enc);
    pf_frame rgb = {0}, bgr = {0}, gray = {0}, native = {0};
    CHECK_OK(pf_image_read_memory(d, n, NULL, PF_PIXFMT_RGB24, &rgb));
    CHECK_OK(pf_image_read_memory(d, n, NULL, PF_PIXFMT_BGR24, &bgr));
    CHECK_OK(pf_image_read_memory(d, n, NULL, PF_PIXFMT_GRAY8, &gray));
    CHECK_OK(pf_image_read_memory(d, n, NULL, PF_PIXFMT_NONE, &native));
    CHECK(native.format == PF_PIXFMT_RGBA && same_pixels(&native, &rgba));
    int bad = 0, worst = 0;
    for (int y = 0; y < 21; y++)
        for (int x = 0; x < 37; x++) {
            const uint8_t *p = rgba.data[0] + y * rgba.stride[0] + x * 4;
            const uint8_t *q = rgb.data[0] + y * rgb.stride[0] + x * 3;
            const uint8_t *b = bgr.data[0] + y * bgr.stride[0] + x * 3;
            if (q[0] != p[0] || q[1] != p[1] || q[2] != p[2]) bad++;
            if (b[0] != p[2] || b[1] != p[1] || b[2] != p[0]) bad++;
            double l = 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2];
            int diff = abs((int)gray.data[0][y * gray.stride[0] + x] - (int)lround(l));
            if (diff > worst) worst = diff;
        }
    CHECK_EQ_INT(bad, 0);
    CHECK(worst <= 1); /* libpng's fixed-point luma */
    /* gray -> RGB replicates; RGB -> RGBA sets alpha 255 */
    pf_buffer *genc = NULL;
    CHECK_OK(pf_image_encode(&gray, &wp, &genc));
    REQUIRE(genc);
    pf_frame g3 = {0};
    CHECK_OK(pf_image_read_memory(pf_buffer_data(genc), pf_buffer_size(genc), NULL,
                                  PF_PIXFMT_RGBA, &g3));
    bad = 0;
    for (int y = 0; y < 21; y++)
        for (int x = 0; x < 37; x++) {
            const uint8_t *q = g3.data[0] + y * g3.stride[0] + x * 4;
            uint8_t v = gray.data[0][y * gray.stride[0] + x];
            if (q[0] != v || q[1] != v || q[2] != v || q[3] != 255) bad++;
        }
    CHECK_EQ_INT(bad, 0);
    pf_frame_unref(&g3);
    pf_buffer_unref(&genc);
    pf_frame_unref(&rgb);
    pf_frame_unref(&bgr);
    pf_frame_unref(&gray);
    pf_frame_unref(&native);
    pf_frame_unref(&rgba);
    pf_buffer_unref(&enc);
}

/* A small PNG writer (stored deflate blocks) for the layouts pixflow's
 * encoder never writes: 16-bit, palette + tRNS, 1-bit gray, Adam7. */
static uint32_t crc_table[256];

static uint32_t crc32_of(uint32_t crc, const uint8_t *p, size_t n)
{
    if (!crc_table[1])
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
            crc_table[i] = c;
        }
    crc = ~crc;
    for (size_t i = 0; i < n; i++) crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

typedef struct bytes {
    uint8_t *p;
    size_t n;
} bytes;

static void put(bytes *b, const void *d, size_t n)
{
    b->p = realloc(b->p, b->n + n);
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void put32(bytes *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    put(b, x, 4);
}

static void chunk(bytes *b, const char *type, const uint8_t *d, size_t n)
{
    put32(b, (uint32_t)n);
    size_t start = b->n;
    put(b, type, 4);
    if (n) put(b, d, n);
    put32(b, crc32_of(0, b->p + start, n + 4));
}

/* raw: filtered scanlines (filter byte 0 + packed samples). */
static void zlib_stored(bytes *out, const uint8_t *raw, size_t n)
{
    uint8_t hdr[2] = {0x78, 0x01};
    put(out, hdr, 2);
    size_t pos = 0;
    do {
        size_t len = n - pos > 65535 ? 65535 : n - pos;
        uint8_t bh[5] = {(uint8_t)(pos + len == n), (uint8_t)len, (uint8_t)(len >> 8),
                         (uint8_t)~len, (uint8_t)(~len >> 8)};
        put(out, bh, 5);
        put(out, raw + pos, len);
        pos += len;
    } while (pos < n);
    uint32_t a = 1, b2 = 0;
    for (size_t i = 0; i < n; i++) {
        a = (a + raw[i]) % 65521;
        b2 = (b2 + a) % 65521;
    }
    put32(out, (b2 << 16) | a);
}

/* Packs sample(x, y) values of `bits` bits for a w x h image with `spp`
 * samples per pixel; Adam7 when interlace. */
typedef unsigned (*sample_fn)(int x, int y, int c);

static bytes make_png(int w, int h, int depth, int color_type, int spp, bool interlace,
                      sample_fn sample, const uint8_t *plte, size_t plte_n, const uint8_t *trns,
                      size_t trns_n)
{
    static const int sx[7] = {0, 4, 0, 2, 0, 1, 0}, sy[7] = {0, 0, 4, 0, 2, 0, 1};
    static const int dx[7] = {8, 8, 4, 4, 2, 2, 1}, dy[7] = {8, 8, 8, 4, 4, 2, 2};
    bytes raw = {0}, png = {0};
    for (int pass = 0; pass < (interlace ? 7 : 1); pass++) {
        int x0 = interlace ? sx[pass] : 0, y0 = interlace ? sy[pass] : 0;
        int stepx = interlace ? dx[pass] : 1, stepy = interlace ? dy[pass] : 1;
        if (x0 >= w || y0 >= h) continue;
        for (int y = y0; y < h; y += stepy) {
            uint8_t f = 0;
            put(&raw, &f, 1);
            uint8_t acc = 0;
            int nbits = 0;
            for (int x = x0; x < w; x += stepx)
                for (int c = 0; c < spp; c++) {
                    unsigned v = sample(x, y, c);
                    if (depth == 16) {
                        uint8_t two[2] = {(uint8_t)(v >> 8), (uint8_t)v};
                        put(&raw, two, 2);
                    } else if (depth == 8) {
                        uint8_t one = (uint8_t)v;
                        put(&raw, &one, 1);
                    } else {
                        acc = (uint8_t)(acc | (v << (8 - depth - nbits)));
                        nbits += depth;
                        if (nbits == 8) {
                            put(&raw, &acc, 1);
                            acc = 0;
                            nbits = 0;
                        }
                    }
                }
            if (nbits) put(&raw, &acc, 1);
        }
    }
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    put(&png, sig, 8);
    uint8_t ihdr[13] = {(uint8_t)(w >> 24), (uint8_t)(w >> 16), (uint8_t)(w >> 8), (uint8_t)w,
                        (uint8_t)(h >> 24), (uint8_t)(h >> 16), (uint8_t)(h >> 8), (uint8_t)h,
                        (uint8_t)depth, (uint8_t)color_type, 0, 0, (uint8_t)interlace};
    chunk(&png, "IHDR", ihdr, 13);
    if (plte) chunk(&png, "PLTE", plte, plte_n);
    if (trns) chunk(&png, "tRNS", trns, trns_n);
    bytes z = {0};
    zlib_stored(&z, raw.p, raw.n);
    chunk(&png, "IDAT", z.p, z.n);
    chunk(&png, "IEND", NULL, 0);
    free(raw.p);
    free(z.p);
    return png;
}

static unsigned s16(int x, int y, int c)
{
    return (unsigned)((x * 7919 + y * 104729 + c * 31337) * 2654435761u) & 0xffff;
}
static unsigned s_idx(int x, int y, int c)
{
    (void)c;
    return (unsigned)(x + 3 * y) % 4;
}
static unsigned s_bit(int x, int y, int c)
{
    (void)c;
    return (unsigned)((x ^ y) & 1);
}
static unsigned s8(int x, int y, int c)
{
    return (unsigned)(x * 13 + y * 29 + c * 101) & 0xff;
}

static void test_png_layouts(void)
{
    if (!pf_io_have_png()) return;
    /* 16-bit RGB, also interlaced: rounded to 8 bits (v * 255 / 65535). */
    for (int il = 0; il < 2; il++) {
        bytes png = make_png(13, 9, 16, 2, 3, il, s16, NULL, 0, NULL, 0);
        pf_frame f = {0};
        CHECK_OK(pf_image_read_memory(png.p, png.n, "16bit.png", PF_PIXFMT_NONE, &f));
        CHECK(f.format == PF_PIXFMT_RGB24);
        int bad = 0;
        for (int y = 0; y < 9 && f.data[0]; y++)
            for (int x = 0; x < 13; x++)
                for (int c = 0; c < 3; c++) {
                    int want = (int)lround(s16(x, y, c) * 255.0 / 65535.0);
                    if (abs(f.data[0][y * f.stride[0] + x * 3 + c] - want) > 0) bad++;
                }
        CHECK_EQ_INT(bad, 0);
        pf_image_info info;
        CHECK_OK(pf_image_probe_memory(png.p, png.n, &info));
        CHECK(info.bit_depth == 16 && info.interlaced == (il == 1) && info.channels == 3);
        pf_frame_unref(&f);
        free(png.p);
    }
    /* Palette with transparency -> RGBA native; -> RGB24 without alpha. */
    {
        uint8_t plte[12] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30};
        uint8_t trns[2] = {0, 128};
        bytes png = make_png(11, 6, 2, 3, 1, false, s_idx, plte, 12, trns, 2);
        pf_frame f = {0}, g = {0};
        CHECK_OK(pf_image_read_memory(png.p, png.n, "pal.png", PF_PIXFMT_NONE, &f));
        CHECK_OK(pf_image_read_memory(png.p, png.n, "pal.png", PF_PIXFMT_RGB24, &g));
        CHECK(f.format == PF_PIXFMT_RGBA);
        int bad = 0;
        for (int y = 0; y < 6 && f.data[0] && g.data[0]; y++)
            for (int x = 0; x < 11; x++) {
                unsigned i = s_idx(x, y, 0);
                const uint8_t *p = f.data[0] + y * f.stride[0] + x * 4;
                const uint8_t *q = g.data[0] + y * g.stride[0] + x * 3;
                unsigned a = i < 2 ? trns[i] : 255;
                if (p[0] != plte[3 * i] || p[1] != plte[3 * i + 1] || p[2] != plte[3 * i + 2] ||
                    p[3] != a || memcmp(q, &plte[3 * i], 3) != 0)
                    bad++;
            }
        CHECK_EQ_INT(bad, 0);
        pf_frame_unref(&f);
        pf_frame_unref(&g);
        free(png.p);
    }
    /* 1-bit gray, interlaced: 0 -> 0, 1 -> 255. */
    {
        bytes png = make_png(19, 10, 1, 0, 1, true, s_bit, NULL, 0, NULL, 0);
        pf_frame f = {0};
        CHECK_OK(pf_image_read_memory(png.p, png.n, "bit.png", PF_PIXFMT_NONE, &f));
        CHECK(f.format == PF_PIXFMT_GRAY8);
        int bad = 0;
        for (int y = 0; y < 10 && f.data[0]; y++)
            for (int x = 0; x < 19; x++)
                if (f.data[0][y * f.stride[0] + x] != (s_bit(x, y, 0) ? 255 : 0)) bad++;
        CHECK_EQ_INT(bad, 0);
        pf_frame_unref(&f);
        free(png.p);
    }
    /* A bad CRC in IDAT is an error naming the file. */
    {
        bytes png = make_png(8, 8, 8, 2, 3, false, s8, NULL, 0, NULL, 0);
        png.p[png.n - 12 - 5] ^= 0x55; /* last byte of IDAT data */
        pf_frame f = {0};
        pf_status st = pf_image_read_memory(png.p, png.n, "crc.png", PF_PIXFMT_NONE, &f);
        CHECK(st == PF_ERR_FORMAT);
        CHECK(strstr(pf_last_error(), "crc.png") != NULL);
        CHECK(f.data[0] == NULL);
        free(png.p);
    }
}

static void test_jpeg_roundtrip(void)
{
    if (!pf_io_have_jpeg()) return;
    for (int s = 0; s < NSIZES; s++)
        for (int k = 0; k < 4; k++) {
            int w = sizes[s][0] * 3 + 5, h = sizes[s][1] * 2 + 3;
            pf_frame src, dst = {0};
            smooth_frame(&src, fmts[k], w, h);
            pf_image_write_params wp = pf_image_write_params_default();
            wp.jpeg_quality = 92;
            wp.jpeg_subsample_444 = s % 2 == 1;
            char path[512];
            tmp_path(path, sizeof path, "rt.JPG");
            CHECK_OK(pf_image_write(path, &src, &wp));
            /* RGBA has no alpha in a JPEG: read back as RGBA gives 255. */
            CHECK_OK(pf_image_read(path, fmts[k], &dst));
            REQUIRE(dst.data[0]);
            if (fmts[k] == PF_PIXFMT_RGBA) {
                int bad = 0;
                for (int y = 0; y < h; y++)
                    for (int x = 0; x < w; x++)
                        if (dst.data[0][y * dst.stride[0] + x * 4 + 3] != 255) bad++;
                CHECK_EQ_INT(bad, 0);
                for (int y = 0; y < h; y++)
                    for (int x = 0; x < w; x++) src.data[0][y * src.stride[0] + x * 4 + 3] = 255;
            }
            double p = psnr(&src, &dst);
            if (p < 30) fprintf(stderr, "  jpeg %s %dx%d: PSNR %.1f dB\n",
                                pf_pixfmt_name(fmts[k]), w, h, p);
            CHECK(p >= 30);
            pf_image_info info;
            CHECK_OK(pf_image_probe(path, &info));
            CHECK(info.container == PF_IMAGE_JPEG && info.width == w && info.height == h);
            CHECK(info.format == (fmts[k] == PF_PIXFMT_GRAY8 ? PF_PIXFMT_GRAY8 : PF_PIXFMT_RGB24));
            pf_frame_unref(&dst);
            pf_frame_unref(&src);
        }
}

static void test_read_into(void)
{
    if (!pf_io_have_png()) return;
    pf_frame src;
    random_frame(&src, PF_PIXFMT_RGB24, 45, 23);
    char path[512];
    tmp_path(path, sizeof path, "into.png");
    CHECK_OK(pf_image_write(path, &src, NULL));
    /* A padded frame inside a larger buffer, as a ring slot would be. */
    pf_buffer *b = NULL;
    CHECK_OK(pf_buffer_alloc_host(300 * 23 + 100, &b));
    memset(pf_buffer_data(b), 0xAB, pf_buffer_size(b));
    size_t strides[PF_FRAME_MAX_PLANES] = {300, 0, 0};
    pf_frame dst = {0};
    CHECK_OK(pf_frame_wrap(&dst, PF_PIXFMT_RGB24, 45, 23, b, 50, strides));
    dst.pts = 77;
    CHECK_OK(pf_image_read_into(path, &dst));
    CHECK(same_pixels(&src, &dst));
    CHECK(dst.pts == 77);
    const uint8_t *raw = pf_buffer_data(b);
    CHECK(raw[49] == 0xAB && raw[50 + 135] == 0xAB); /* padding untouched */
    pf_frame_unref(&dst);
    /* Wrong size: refused before any pixel is written, naming both sizes. */
    CHECK_OK(pf_frame_wrap(&dst, PF_PIXFMT_GRAY8, 44, 23, b, 0, NULL));
    CHECK(pf_image_read_into(path, &dst) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "45x23") && strstr(pf_last_error(), "44x23"));
    CHECK(strstr(pf_last_error(), "into.png") != NULL);
    pf_frame_unref(&dst);
    /* Not an image format. */
    CHECK_OK(pf_frame_alloc(&dst, PF_PIXFMT_NV12, 45, 23, NULL, NULL));
    CHECK(pf_image_read_into(path, &dst) == PF_ERR_INVALID);
    pf_frame_unref(&dst);
    pf_buffer_unref(&b);
    pf_frame_unref(&src);
}

static void write_bytes(const char *path, const void *d, size_t n)
{
    FILE *fp = fopen(path, "wb");
    if (!fp) return;
    fwrite(d, 1, n, fp);
    fclose(fp);
}

static void expect_error(const char *path, pf_status want, const char *detail)
{
    pf_frame f = {0};
    pf_status st = pf_image_read(path, PF_PIXFMT_NONE, &f);
    CHECK(st == want);
    CHECK(strstr(pf_last_error(), path) != NULL);
    if (detail && !strstr(pf_last_error(), detail))
        fprintf(stderr, "  %s: message '%s' lacks '%s'\n", path, pf_last_error(), detail);
    if (detail) CHECK(strstr(pf_last_error(), detail) != NULL);
    CHECK(f.data[0] == NULL);
    pf_frame_unref(&f);
}

static void test_bad_files(void)
{
    char path[512];
    tmp_path(path, sizeof path, "missing.png");
    expect_error(path, PF_ERR_IO, "No such file");
    expect_error(tmpdir, PF_ERR_IO, "directory");
    tmp_path(path, sizeof path, "empty.png");
    write_bytes(path, "", 0);
    expect_error(path, PF_ERR_FORMAT, "empty");
    tmp_path(path, sizeof path, "text.png");
    write_bytes(path, "hello, not an image", 19);
    expect_error(path, PF_ERR_FORMAT, "not a PNG or JPEG");

    pf_frame src;
    smooth_frame(&src, PF_PIXFMT_RGB24, 64, 48);
    for (int k = 0; k < 2; k++) {
        if (k == 0 ? !pf_io_have_png() : !pf_io_have_jpeg()) continue;
        pf_image_write_params wp = pf_image_write_params_default();
        wp.format = k == 0 ? PF_IMAGE_PNG : PF_IMAGE_JPEG;
        pf_buffer *enc = NULL;
        CHECK_OK(pf_image_encode(&src, &wp, &enc));
        REQUIRE(enc);
        const uint8_t *d = pf_buffer_data(enc);
        size_t n = pf_buffer_size(enc);
        /* Cut at many points: every cut is an error (never a partial image). */
        int cuts_ok = 0, cuts = 0;
        for (size_t cut = 1; cut < n; cut += n / 23 + 1) {
            tmp_path(path, sizeof path, k == 0 ? "cut.png" : "cut.jpg");
            write_bytes(path, d, cut);
            pf_frame f = {0};
            pf_status st = pf_image_read(path, PF_PIXFMT_NONE, &f);
            cuts++;
            if (st == PF_ERR_FORMAT && strstr(pf_last_error(), path)) cuts_ok++;
            else fprintf(stderr, "  cut %zu/%zu: %s (%s)\n", cut, n, pf_status_str(st),
                         pf_last_error());
            pf_frame_unref(&f);
        }
        CHECK_EQ_INT(cuts_ok, cuts);
        tmp_path(path, sizeof path, k == 0 ? "cut.png" : "cut.jpg");
        write_bytes(path, d, n / 2);
        expect_error(path, PF_ERR_FORMAT, k == 0 ? "truncated" : "Premature end");
        /* Random damage after the header: an error or an image, never a crash. */
        uint8_t *copy = malloc(n);
        for (int t = 0; t < 40; t++) {
            memcpy(copy, d, n);
            for (int j = 0; j < 8; j++)
                copy[pf_test_rand_range(20, (int64_t)n - 1)] = (uint8_t)pf_test_rand();
            pf_frame f = {0};
            pf_status st = pf_image_read_memory(copy, n, "damaged", PF_PIXFMT_RGB24, &f);
            CHECK(st == PF_OK || (st == PF_ERR_FORMAT && strstr(pf_last_error(), "damaged")));
            CHECK((st == PF_OK) == (f.data[0] != NULL));
            pf_frame_unref(&f);
        }
        free(copy);
        pf_buffer_unref(&enc);
    }
    /* Unwritable output directory; unknown extension. */
    CHECK(pf_image_write("/nonexistent-dir-pf/out.png", &src, NULL) == PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "/nonexistent-dir-pf/out.png") &&
          strstr(pf_last_error(), "directory does not exist"));
    tmp_path(path, sizeof path, "out.bmp");
    CHECK(pf_image_write(path, &src, NULL) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "out.bmp") != NULL);
    CHECK(access(path, F_OK) != 0);
    pf_image_write_params wp = pf_image_write_params_default();
    wp.jpeg_quality = 0;
    tmp_path(path, sizeof path, "q.jpg");
    CHECK(pf_image_write(path, &src, &wp) == PF_ERR_INVALID);
    /* Zero-sized / video-format frames are refused. */
    pf_frame empty = {0};
    empty.format = PF_PIXFMT_RGB24;
    CHECK(pf_image_write(path, &empty, NULL) == PF_ERR_INVALID);
    pf_frame nv = {0};
    CHECK_OK(pf_frame_alloc(&nv, PF_PIXFMT_NV12, 8, 8, NULL, NULL));
    CHECK(pf_image_write(path, &nv, NULL) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "nv12") != NULL);
    pf_frame_unref(&nv);
    pf_frame f = {0};
    CHECK(pf_image_read(path, PF_PIXFMT_I420, &f) == PF_ERR_INVALID);
    pf_frame_unref(&src);
}

static void test_samples(void)
{
    const char *root = getenv("PF_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/.data/astronaut.png", root ? root : ".");
    if (pf_io_have_png() && access(path, R_OK) == 0) {
        pf_frame f = {0};
        CHECK_OK(pf_image_read(path, PF_PIXFMT_NONE, &f));
        CHECK(f.width == 512 && f.height == 512 && f.format == PF_PIXFMT_RGB24);
        pf_frame_unref(&f);
    } else {
        printf("  (skipped astronaut.png: run scripts/fetch-media.sh)\n");
    }
    snprintf(path, sizeof path, "%s/.data/messi5.jpg", root ? root : ".");
    if (pf_io_have_jpeg() && access(path, R_OK) == 0) {
        pf_frame f = {0};
        CHECK_OK(pf_image_read(path, PF_PIXFMT_RGBA, &f));
        CHECK(f.width > 0 && f.height > 0);
        pf_frame_unref(&f);
    }
}

int main(void)
{
    pf_test_seed(20261121);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/pf_test_io_image.XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    PF_RUN(test_png_roundtrip);
    PF_RUN(test_png_conversions);
    PF_RUN(test_png_layouts);
    PF_RUN(test_jpeg_roundtrip);
    PF_RUN(test_read_into);
    PF_RUN(test_bad_files);
    PF_RUN(test_samples);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", tmpdir);
    return pf_test_finish();
}
