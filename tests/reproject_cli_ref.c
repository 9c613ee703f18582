/* reproject_cli_ref: the independent side of the `pixflow reproject` CLI
 * tests (tests/reproject_cli.sh) and the input generator of
 * bench/bench_reproject_job.sh. Built by tests/reproject_cli.cmake; not a
 * test by itself (CMake globs only tests/test_*.c).
 *
 *   reproject_cli_ref gen FILE W H SEED [QUALITY]
 *       a synthetic equirect (smooth colour fields, edges, mild noise; PNG or
 *       JPEG by extension), different for every seed
 *   reproject_cli_ref gen-zero-png FILE
 *       a PNG whose header says 0 x 0 pixels (valid chunk CRCs)
 *   reproject_cli_ref check-view INPUT FILE Y,P,R,FOV,WxH [nearest]
 *   reproject_cli_ref check-face INPUT FILE SIZE FACE
 *   reproject_cli_ref check-cube INPUT FILE SIZE 3x2|1x6
 *       decodes INPUT (RGB24), reprojects it with the library on the CPU and
 *       compares with FILE (a PNG written by the CLI) byte for byte; prints
 *       the first difference and exits 1 when they differ
 *   reproject_cli_ref size FILE
 *       prints WxH
 * Exit status 0 ok, 1 mismatch or error (message on stderr), 2 usage. */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pixflow/io.h"
#include "pixflow/pixflow.h"

static int fail(const char *what)
{
    fprintf(stderr, "reproject_cli_ref: %s: %s\n", what, pf_last_error());
    return 1;
}

/* Generator ------------------------------------------------------------------------------ */

static uint32_t hash32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

static int cmd_gen(const char *path, int w, int h, uint32_t seed, int quality)
{
    pf_frame f = {0};
    if (pf_frame_alloc(&f, PF_PIXFMT_RGB24, w, h, NULL, NULL) != PF_OK) return fail("alloc");
    /* Per-seed phases; integer arithmetic only (fast at 8K, identical everywhere). */
    uint32_t s1 = hash32(seed * 3 + 1), s2 = hash32(seed * 3 + 2), s3 = hash32(seed * 3 + 3);
    int cell = w / 48 > 4 ? w / 48 : 4;
    for (int y = 0; y < h; y++) {
        uint8_t *row = f.data[0] + (size_t)y * f.stride[0];
        int gy = (y * 255) / (h > 1 ? h - 1 : 1);
        for (int x = 0; x < w; x++) {
            int gx = (x * 255) / (w > 1 ? w - 1 : 1);
            int cx = (x + (int)(s1 % (uint32_t)cell)) / cell, cy = y / cell;
            int check = ((cx + cy) & 1) ? 40 : -40;
            uint32_t n = hash32((uint32_t)(y * w + x) ^ s2);
            int noise = (int)(n & 15) - 8;
            int r = gx + check / 2 + noise;
            int g = gy + (int)((s3 >> (x & 7)) & 31) + noise;
            int b = ((gx + gy + (int)(s1 & 255)) & 255) - check / 2 + noise;
            row[3 * x + 0] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
            row[3 * x + 1] = (uint8_t)(g < 0 ? 0 : g > 255 ? 255 : g);
            row[3 * x + 2] = (uint8_t)(b < 0 ? 0 : b > 255 ? 255 : b);
        }
    }
    pf_image_write_params wp = pf_image_write_params_default();
    wp.jpeg_quality = quality;
    pf_status st = pf_image_write(path, &f, &wp);
    pf_frame_unref(&f);
    return st == PF_OK ? 0 : fail(path);
}

static uint32_t crc32_png(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFU;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320U & (0U - (c & 1)));
    }
    return c ^ 0xFFFFFFFFU;
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static int cmd_gen_zero_png(const char *path)
{
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    uint8_t ihdr[25] = {0, 0, 0, 13, 'I', 'H', 'D', 'R'};
    /* width 0, height 0, depth 8, colour type 2 (RGB) */
    ihdr[16] = 8;
    ihdr[17] = 2;
    put32(ihdr + 21, crc32_png(ihdr + 4, 17));
    uint8_t iend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D'};
    put32(iend + 8, crc32_png(iend + 4, 4));
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        return 1;
    }
    fwrite(sig, 1, sizeof sig, f);
    fwrite(ihdr, 1, sizeof ihdr, f);
    fwrite(iend, 1, sizeof iend, f);
    return fclose(f) == 0 ? 0 : 1;
}

/* Checks --------------------------------------------------------------------------------- */

static int compare(const pf_frame *want, const char *file)
{
    pf_frame got = {0};
    if (pf_image_read(file, PF_PIXFMT_RGB24, &got) != PF_OK) return fail(file);
    int rc = 0;
    if (got.width != want->width || got.height != want->height) {
        fprintf(stderr, "reproject_cli_ref: %s: %dx%d, expected %dx%d\n", file, got.width,
                got.height, want->width, want->height);
        rc = 1;
    }
    for (int y = 0; !rc && y < want->height; y++) {
        const uint8_t *a = want->data[0] + (size_t)y * want->stride[0];
        const uint8_t *b = got.data[0] + (size_t)y * got.stride[0];
        for (int x = 0; x < want->width * 3; x++)
            if (a[x] != b[x]) {
                fprintf(stderr, "reproject_cli_ref: %s: pixel (%d, %d) channel %d is %d, the "
                                "library gives %d\n", file, x / 3, y, x % 3, b[x], a[x]);
                rc = 1;
                break;
            }
    }
    pf_frame_unref(&got);
    return rc;
}

/* Runs fn on a CPU pf_ops context over the decoded input. */
typedef pf_status (*work_fn)(pf_ops *ops, const pf_frame *src, pf_frame *dst, void *user);

static int check_with(const char *input, const char *file, int w, int h, work_fn fn, void *user)
{
    pf_frame src = {0}, dst = {0};
    if (pf_image_read(input, PF_PIXFMT_RGB24, &src) != PF_OK) return fail(input);
    pf_stream *s = NULL;
    pf_ops *ops = NULL;
    pf_stream_params sp = pf_stream_params_default();
    int rc = 1;
    if (pf_stream_create(&sp, &s) != PF_OK) goto out;
    pf_ops_params op = pf_ops_params_default();
    op.stream = s;
    if (pf_ops_create(&op, &ops) != PF_OK) goto out;
    if (pf_frame_alloc(&dst, PF_PIXFMT_RGB24, w, h, NULL, NULL) != PF_OK) goto out;
    if (fn(ops, &src, &dst, user) != PF_OK) goto out;
    rc = compare(&dst, file);
    goto done;
out:
    fprintf(stderr, "reproject_cli_ref: %s\n", pf_last_error());
done:
    pf_frame_unref(&dst);
    pf_frame_unref(&src);
    pf_ops_destroy(&ops);
    pf_stream_destroy(&s);
    return rc;
}

typedef struct view_job {
    pf_view v;
    pf_interp interp;
} view_job;

static pf_status do_view(pf_ops *ops, const pf_frame *src, pf_frame *dst, void *user)
{
    view_job *j = user;
    pf_frame *d[1] = {dst};
    return pf_ops_equirect_to_views(ops, src, &j->v, d, 1, j->interp);
}

typedef struct cube_job {
    int size;
    pf_cube_layout layout;
} cube_job;

static pf_status do_cube(pf_ops *ops, const pf_frame *src, pf_frame *dst, void *user)
{
    cube_job *j = user;
    return pf_ops_equirect_to_cubemap(ops, src, dst, j->size, j->layout, PF_INTERP_BILINEAR);
}

static int cmd_check_view(const char *input, const char *file, const char *spec, bool nearest)
{
    view_job j = {.interp = nearest ? PF_INTERP_NEAREST : PF_INTERP_BILINEAR};
    if (sscanf(spec, "%f,%f,%f,%f,%dx%d", &j.v.yaw, &j.v.pitch, &j.v.roll, &j.v.fov,
               &j.v.width, &j.v.height) != 6) {
        fprintf(stderr, "reproject_cli_ref: bad view '%s'\n", spec);
        return 2;
    }
    return check_with(input, file, j.v.width, j.v.height, do_view, &j);
}

static int cmd_check_face(const char *input, const char *file, int size, int face)
{
    view_job j = {.interp = PF_INTERP_BILINEAR};
    if (pf_cube_face_view(face, size, &j.v) != PF_OK) return fail("pf_cube_face_view");
    return check_with(input, file, size, size, do_view, &j);
}

static int cmd_check_cube(const char *input, const char *file, int size, const char *layout)
{
    cube_job j = {.size = size, .layout = strcmp(layout, "1x6") ? PF_CUBE_3X2 : PF_CUBE_1X6};
    int w = j.layout == PF_CUBE_3X2 ? 3 * size : size;
    int h = j.layout == PF_CUBE_3X2 ? 2 * size : 6 * size;
    return check_with(input, file, w, h, do_cube, &j);
}

static int cmd_size(const char *file)
{
    pf_image_info info;
    if (pf_image_probe(file, &info) != PF_OK) return fail(file);
    printf("%dx%d\n", info.width, info.height);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 6 && !strcmp(argv[1], "gen"))
        return cmd_gen(argv[2], atoi(argv[3]), atoi(argv[4]), (uint32_t)strtoul(argv[5], NULL, 10),
                       argc > 6 ? atoi(argv[6]) : 90);
    if (argc == 3 && !strcmp(argv[1], "gen-zero-png")) return cmd_gen_zero_png(argv[2]);
    if ((argc == 5 || argc == 6) && !strcmp(argv[1], "check-view"))
        return cmd_check_view(argv[2], argv[3], argv[4], argc == 6 && !strcmp(argv[5], "nearest"));
    if (argc == 6 && !strcmp(argv[1], "check-face"))
        return cmd_check_face(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]));
    if (argc == 6 && !strcmp(argv[1], "check-cube"))
        return cmd_check_cube(argv[2], argv[3], atoi(argv[4]), argv[5]);
    if (argc == 3 && !strcmp(argv[1], "size")) return cmd_size(argv[2]);
    fprintf(stderr, "usage: see the comment at the top of tests/reproject_cli_ref.c\n");
    return 2;
}
