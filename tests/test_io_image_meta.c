/* Image metadata: EXIF orientation applied on read, ICC profiles carried to the output.
 *
 * Orientation: an upright 32x16 image of eight 8x8 colour cells is stored as a camera would
 * store it for each EXIF orientation 1..8 (turned or mirrored the other way), encoded as a
 * JPEG (quality 100, 4:4:4) and given an APP1 "Exif" segment written here (big- and
 * little-endian TIFF alternately). Reading must give the upright image back (every pixel within
 * 12 of it: JPEG), info.orientation the tag and sizes swapped for 5..8, through pf_image_read,
 * pf_image_read_into and pf_image_probe; keep_orientation gives the stored pixels.
 *
 * ICC: a small valid RGB profile (header, no tags) on a frame is written into PNG and JPEG and
 * must read back byte-identical on the frame; a GRAY profile is not put on a colour output.
 *
 * Also a tool for tests/core_images_cli.cmake:
 *   test_io_image_meta --write-icc DIR      writes DIR/icc.png, DIR/icc.jpg with the profile
 *   test_io_image_meta --same-icc A B       exit 0 when A and B hold byte-identical profiles */
#include <unistd.h>

#include "pf_test.h"
#include "pixflow/io.h"

#define W 32
#define H 16

static char tmpdir[256];

static const uint8_t k_cells[8][3] = {{230, 30, 30},  {30, 230, 30},  {30, 30, 230},
                                      {230, 230, 30}, {230, 30, 230}, {30, 230, 230},
                                      {240, 240, 240}, {20, 20, 20}};

static void upright_image(pf_frame *f)
{
    memset(f, 0, sizeof *f);
    pf_frame_alloc(f, PF_PIXFMT_RGB24, W, H, NULL, NULL);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            memcpy(f->data[0] + (size_t)y * f->stride[0] + 3 * (size_t)x,
                   k_cells[(y / 8) * 4 + x / 8], 3);
}

/* Where upright pixel (x, y) is stored, for a stored image of sw x sh (EXIF 2.3, 4.6.4 A,
 * Orientation: which stored row is the visual top and which stored column the visual left). */
static void stored_pos(int o, int x, int y, int sw, int sh, int *sx, int *sy)
{
    switch (o) {
    case 2: *sx = sw - 1 - x, *sy = y; break;          /* row 0 top, column 0 right */
    case 3: *sx = sw - 1 - x, *sy = sh - 1 - y; break; /* row 0 bottom, column 0 right */
    case 4: *sx = x, *sy = sh - 1 - y; break;          /* row 0 bottom, column 0 left */
    case 5: *sx = y, *sy = x; break;                   /* row 0 left, column 0 top */
    case 6: *sx = y, *sy = sh - 1 - x; break;          /* row 0 right, column 0 top */
    case 7: *sx = sw - 1 - y, *sy = sh - 1 - x; break; /* row 0 right, column 0 bottom */
    case 8: *sx = sw - 1 - y, *sy = x; break;          /* row 0 left, column 0 bottom */
    default: *sx = x, *sy = y; break;
    }
}

static void stored_image(const pf_frame *up, int o, pf_frame *st)
{
    int sw = o >= 5 ? H : W, sh = o >= 5 ? W : H;
    memset(st, 0, sizeof *st);
    pf_frame_alloc(st, PF_PIXFMT_RGB24, sw, sh, NULL, NULL);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            int sx, sy;
            stored_pos(o, x, y, sw, sh, &sx, &sy);
            memcpy(st->data[0] + (size_t)sy * st->stride[0] + 3 * (size_t)sx,
                   up->data[0] + (size_t)y * up->stride[0] + 3 * (size_t)x, 3);
        }
}

/* The JPEG bytes of `f` with an APP1 Exif segment holding Orientation = o after SOI. */
static uint8_t *jpeg_with_exif(const pf_frame *f, int o, bool le, size_t *size)
{
    pf_image_write_params wp = pf_image_write_params_default();
    wp.format = PF_IMAGE_JPEG;
    wp.jpeg_quality = 100;
    wp.jpeg_subsample_444 = true;
    pf_buffer *b = NULL;
    if (pf_image_encode(f, &wp, &b) != PF_OK) return NULL;
    const uint8_t *j = pf_buffer_data(b);
    size_t n = pf_buffer_size(b);
    /* TIFF: header (8), IFD0 with one entry (2 + 12 + 4). */
    uint8_t tiff[26] = {0};
    memcpy(tiff, le ? "II*\0" : "MM\0*", 4);
    tiff[le ? 4 : 7] = 8;                       /* IFD0 at 8 */
    tiff[le ? 8 : 9] = 1;                       /* one entry */
    tiff[le ? 10 : 11] = 0x12, tiff[le ? 11 : 10] = 0x01; /* tag 0x0112 */
    tiff[le ? 12 : 13] = 3;                     /* SHORT */
    tiff[le ? 14 : 17] = 1;                     /* count 1 */
    tiff[le ? 18 : 19] = (uint8_t)o;            /* value */
    size_t seg = 2 + 6 + sizeof tiff;           /* length field counts itself */
    uint8_t *out = malloc(n + 2 + seg);
    if (!out) return NULL;
    memcpy(out, j, 2);                          /* SOI */
    out[2] = 0xff, out[3] = 0xe1, out[4] = (uint8_t)(seg >> 8), out[5] = (uint8_t)seg;
    memcpy(out + 6, "Exif\0\0", 6);
    memcpy(out + 12, tiff, sizeof tiff);
    memcpy(out + 12 + sizeof tiff, j + 2, n - 2);
    *size = n + 2 + seg;
    pf_buffer_unref(&b);
    return out;
}

static int max_diff(const pf_frame *a, const pf_frame *b)
{
    if (a->width != b->width || a->height != b->height) return 999;
    int m = 0;
    for (int y = 0; y < a->height; y++)
        for (int i = 0; i < a->width * 3; i++) {
            int d = abs((int)a->data[0][(size_t)y * a->stride[0] + (size_t)i] -
                        (int)b->data[0][(size_t)y * b->stride[0] + (size_t)i]);
            if (d > m) m = d;
        }
    return m;
}

static void test_exif_orientations(void)
{
    pf_frame up;
    upright_image(&up);
    for (int o = 1; o <= 8; o++) {
        pf_frame st;
        stored_image(&up, o, &st);
        size_t n = 0;
        uint8_t *jpg = jpeg_with_exif(&st, o, o % 2 == 1, &n);
        REQUIRE(jpg);
        pf_image_info info;
        CHECK_OK(pf_image_probe_memory(jpg, n, &info));
        CHECK_EQ_INT(info.orientation, o);
        CHECK_EQ_INT(info.width, W);
        CHECK_EQ_INT(info.height, H);
        pf_frame got = {0};
        CHECK_OK(pf_image_read_memory(jpg, n, "exif.jpg", PF_PIXFMT_RGB24, &got));
        int d = max_diff(&got, &up);
        if (d > 12) fprintf(stderr, "  orientation %d: max difference %d\n", o, d);
        CHECK(d <= 12);
        /* Into a caller's frame of the upright size. */
        pf_frame into = {0};
        CHECK_OK(pf_frame_alloc(&into, PF_PIXFMT_RGB24, W, H, NULL, NULL));
        CHECK_OK(pf_image_read_memory_into(jpg, n, "exif.jpg", &into));
        CHECK(max_diff(&into, &up) <= 12);
        /* Stored order on request. */
        char path[512];
        snprintf(path, sizeof path, "%s/o%d.jpg", tmpdir, o);
        FILE *f = fopen(path, "wb");
        REQUIRE(f);
        fwrite(jpg, 1, n, f);
        fclose(f);
        pf_image_read_params rp = pf_image_read_params_default();
        rp.keep_orientation = true;
        rp.want = PF_PIXFMT_RGB24;
        pf_frame kept = {0};
        pf_image_info kinfo;
        CHECK_OK(pf_image_read_with(path, &rp, &kept, &kinfo));
        CHECK(max_diff(&kept, &st) <= 12);
        CHECK_EQ_INT(kinfo.orientation, o);
        CHECK_EQ_INT(kinfo.width, st.width);
        pf_frame dflt = {0};
        CHECK_OK(pf_image_read_with(path, NULL, &dflt, &kinfo));
        CHECK(max_diff(&dflt, &up) <= 12);
        unlink(path);
        pf_frame_unref(&dflt);
        pf_frame_unref(&kept);
        pf_frame_unref(&into);
        pf_frame_unref(&got);
        pf_frame_unref(&st);
        free(jpg);
    }
    pf_frame_unref(&up);
}

/* A malformed EXIF block is no orientation (and no crash): offsets past the end, wrong type. */
static void test_exif_malformed(void)
{
    pf_frame up;
    upright_image(&up);
    size_t n = 0;
    uint8_t *jpg = jpeg_with_exif(&up, 6, false, &n);
    REQUIRE(jpg);
    jpg[12 + 7] = 200; /* IFD0 offset beyond the block */
    pf_image_info info;
    CHECK_OK(pf_image_probe_memory(jpg, n, &info));
    CHECK_EQ_INT(info.orientation, 1);
    free(jpg);
    jpg = jpeg_with_exif(&up, 6, false, &n);
    REQUIRE(jpg);
    jpg[12 + 8 + 2 + 3] = 4; /* LONG instead of SHORT */
    CHECK_OK(pf_image_probe_memory(jpg, n, &info));
    CHECK_EQ_INT(info.orientation, 1);
    free(jpg);
    pf_frame_unref(&up);
}

/* A minimal ICC v2 display profile: header only (libpng checks the header's fields). */
static pf_buffer *make_icc(const char *space)
{
    pf_buffer *b = NULL;
    if (pf_buffer_alloc_host(132, &b) != PF_OK) return NULL;
    uint8_t *p = pf_buffer_data(b);
    memset(p, 0, 132);
    p[3] = 132;                        /* size */
    memcpy(p + 4, "pxfl", 4);          /* CMM */
    p[8] = 2, p[9] = 0x10;             /* version 2.1 */
    memcpy(p + 12, "mntr", 4);         /* display device */
    memcpy(p + 16, space, 4);          /* data colour space */
    memcpy(p + 20, "XYZ ", 4);         /* PCS */
    p[25] = 26, p[27] = 11, p[29] = 27; /* 2026-11-27 */
    memcpy(p + 36, "acsp", 4);
    static const uint8_t d50[12] = {0, 0, 0xf6, 0xd6, 0, 1, 0, 0, 0, 0, 0xd3, 0x2d};
    memcpy(p + 68, d50, 12);           /* PCS illuminant */
    memcpy(p + 80, "pxfl", 4);         /* creator */
    for (int i = 100; i < 128; i++) p[i] = (uint8_t)(i * 7); /* something to compare */
    return b;                          /* tag count (128..131) 0 */
}

static bool same_icc(const pf_buffer *a, const pf_buffer *b)
{
    return a && b && pf_buffer_size(a) == pf_buffer_size(b) &&
           !memcmp(pf_buffer_data(a), pf_buffer_data(b), pf_buffer_size(a));
}

static void test_icc_roundtrip(void)
{
    static const char *const exts[2] = {"png", "jpg"};
    for (int k = 0; k < 2; k++) {
        pf_frame f;
        upright_image(&f);
        f.icc = make_icc("RGB ");
        REQUIRE(f.icc);
        char path[512];
        snprintf(path, sizeof path, "%s/icc.%s", tmpdir, exts[k]);
        CHECK_OK(pf_image_write(path, &f, NULL));
        pf_image_info info;
        CHECK_OK(pf_image_probe(path, &info));
        CHECK_EQ_INT(info.icc_size, 132);
        pf_frame got = {0};
        CHECK_OK(pf_image_read(path, PF_PIXFMT_NONE, &got));
        CHECK(same_icc(got.icc, f.icc));
        /* Into a caller's frame: replaced (the old reference dropped: ASan would see a leak). */
        pf_frame into = {0};
        CHECK_OK(pf_frame_alloc(&into, PF_PIXFMT_RGB24, W, H, NULL, NULL));
        into.icc = make_icc("RGB ");
        CHECK_OK(pf_image_read_into(path, &into));
        CHECK(same_icc(into.icc, f.icc));
        /* pf_frame_ref shares it. */
        pf_frame second = {0};
        pf_frame_ref(&second, &got);
        CHECK(second.icc == got.icc);
        pf_frame_unref(&second);
        /* A gray profile does not describe a colour output: not embedded. */
        pf_buffer_unref(&f.icc);
        f.icc = make_icc("GRAY");
        CHECK_OK(pf_image_write(path, &f, NULL));
        CHECK_OK(pf_image_probe(path, &info));
        CHECK_EQ_INT(info.icc_size, 0);
        unlink(path);
        pf_frame_unref(&into);
        pf_frame_unref(&got);
        pf_frame_unref(&f);
    }
    /* No profile: none on the frame. */
    pf_frame f;
    upright_image(&f);
    char path[512];
    snprintf(path, sizeof path, "%s/plain.png", tmpdir);
    CHECK_OK(pf_image_write(path, &f, NULL));
    pf_frame got = {0};
    CHECK_OK(pf_image_read(path, PF_PIXFMT_NONE, &got));
    CHECK(got.icc == NULL);
    unlink(path);
    pf_frame_unref(&got);
    pf_frame_unref(&f);
}

static int write_icc_inputs(const char *dir)
{
    pf_frame f;
    upright_image(&f);
    f.icc = make_icc("RGB ");
    char path[512];
    snprintf(path, sizeof path, "%s/icc.png", dir);
    pf_status st = pf_image_write(path, &f, NULL);
    snprintf(path, sizeof path, "%s/icc.jpg", dir);
    if (st == PF_OK) st = pf_image_write(path, &f, NULL);
    pf_frame_unref(&f);
    if (st != PF_OK) fprintf(stderr, "%s\n", pf_last_error());
    return st == PF_OK ? 0 : 1;
}

static int compare_icc(const char *a, const char *b)
{
    pf_frame fa = {0}, fb = {0};
    if (pf_image_read(a, PF_PIXFMT_NONE, &fa) != PF_OK ||
        pf_image_read(b, PF_PIXFMT_NONE, &fb) != PF_OK) {
        fprintf(stderr, "%s\n", pf_last_error());
        return 1;
    }
    bool same = same_icc(fa.icc, fb.icc);
    fprintf(stderr, "%s: %zu-byte ICC profile; %s: %zu bytes; %s\n", a,
            fa.icc ? pf_buffer_size(fa.icc) : 0, b, fb.icc ? pf_buffer_size(fb.icc) : 0,
            same ? "identical" : "DIFFERENT");
    pf_frame_unref(&fa);
    pf_frame_unref(&fb);
    return same ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--write-icc")) return write_icc_inputs(argv[2]);
    if (argc == 4 && !strcmp(argv[1], "--same-icc")) return compare_icc(argv[2], argv[3]);
    if (!pf_io_have_png() || !pf_io_have_jpeg()) {
        printf("SKIP: needs libpng and libjpeg\n");
        return 77;
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/pf_image_meta_XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    PF_RUN(test_exif_orientations);
    PF_RUN(test_exif_malformed);
    PF_RUN(test_icc_roundtrip);
    rmdir(tmpdir);
    return pf_test_finish();
}
