#define _DEFAULT_SOURCE /* mmap flags, sysconf */
/* 360° reprojection on the CPU: the threaded path against the C reference
 * (bit-exact: both run reproject_math.h's float formula), the float formula
 * against ops.h's definition evaluated in double with libm, geometric
 * properties of the output (view centre, 45° edges, yaw + 360, a lat/long
 * grid, cube seams), cube maps against single views, and every validation
 * with its message. */
#include <unistd.h>

#include "core/cpu_features.h"
#include "ops/reproject.h"
#include "device/backend.h"
#include "guard_page.h"
#include "ops_test_util.h"
#include "reproject_util.h"

#define DPI 3.14159265358979323846

static pf_stream *g_stream;
static pf_ops *g_ref, *g_cpu, *g_cpu3;

/* Renders views with both contexts and compares; checks the padding too. */
static void compare_views(pf_ops *fast, const pf_frame *src, const pf_view *views, int n,
                          pf_interp interp, size_t pad, size_t offset, const char *what)
{
    pf_frame ref[64], out[64];
    pf_frame *pr[64], *po[64];
    for (int i = 0; i < n; i++) {
        CHECK_OK(rp_frame_make(&ref[i], src->format, views[i].width, views[i].height, pad, offset));
        CHECK_OK(rp_frame_make(&out[i], src->format, views[i].width, views[i].height,
                               (pad * 7 + 3) % 17, (offset + (size_t)i) % 9));
        pr[i] = &ref[i];
        po[i] = &out[i];
    }
    CHECK_OK(pf_ops_equirect_to_views(g_ref, src, views, pr, n, interp));
    CHECK_OK(pf_ops_equirect_to_views(fast, src, views, po, n, interp));
    for (int i = 0; i < n; i++) {
        if (!rp_frames_equal(&ref[i], &out[i], what)) {
            CHECK(!"threaded output equals the reference");
            fprintf(stderr, "  view %d: yaw %g pitch %g roll %g fov %g %dx%d, src %dx%d %s, %s\n",
                    i, (double)views[i].yaw, (double)views[i].pitch, (double)views[i].roll,
                    (double)views[i].fov, views[i].width, views[i].height, src->width,
                    src->height, pf_pixfmt_name(src->format),
                    interp == PF_INTERP_NEAREST ? "nearest" : "bilinear");
        }
        CHECK(rp_padding_intact(&ref[i]));
        CHECK(rp_padding_intact(&out[i]));
        pf_frame_unref(&ref[i]);
        pf_frame_unref(&out[i]);
    }
}

static void test_threaded_matches_reference(void)
{
    static const int src_sizes[][2] = {{1, 1}, {2, 1}, {1, 2}, {3, 5}, {7, 3}, {64, 32},
                                       {129, 65}, {300, 150}, {17, 211}};
    const int nsizes = (int)(sizeof src_sizes / sizeof src_sizes[0]);
    for (int iter = 0; iter < 160; iter++) {
        pf_pixfmt fmt = rp_formats[iter % RP_NFMT];
        pf_interp interp = (iter / RP_NFMT) % 2 ? PF_INTERP_BILINEAR : PF_INTERP_NEAREST;
        int sw, sh;
        if (iter % 3 == 0) {
            sw = src_sizes[(iter / 3) % nsizes][0];
            sh = src_sizes[(iter / 3) % nsizes][1];
        } else {
            sw = (int)pf_test_rand_range(1, 400);
            sh = (int)pf_test_rand_range(1, 200);
        }
        size_t pad = pf_test_rand() % 3 ? (size_t)pf_test_rand_range(0, 13) : 0;
        size_t offset = (size_t)pf_test_rand_range(0, 7);
        pf_frame src;
        RP_REQUIRE_OK(rp_frame_make(&src, fmt, sw, sh, pad, offset));
        rp_fill_random(&src);
        int n = (int)pf_test_rand_range(1, 5);
        pf_view views[8];
        for (int i = 0; i < n; i++) views[i] = rp_random_view(90, 70);
        compare_views(iter % 2 ? g_cpu : g_cpu3, &src, views, n, interp, pad, offset, "random");
        pf_frame_unref(&src);
    }
}

/* The SIMD row kernel (src/cpu/simd_reproject.c: 8 or 16 pixels a vector,
 * tiles of 8 x 128, scalar chunks for each row's rest) at every level this
 * CPU has, the scalar path included, against the reference: view widths
 * around the vector widths and the tile width, 1-pixel views, sources of
 * width 1 and 2 (the kernel needs 2), 3 and 4 channels (the kernel) and 1
 * (scalar), both interpolations, padded strides. Tolerance: none. */
static void test_simd_levels(void)
{
    static const int vw[] = {1, 7, 15, 16, 17, 33, 129, 200};
    static const int src_sizes[][2] = {{1, 1}, {2, 1}, {2, 3}, {40, 20}, {301, 150}};
    const int top = pf_cpu_simd_detected();
    for (int level = PF_SIMD_NONE; level <= top; level++) {
        pf_cpu_simd_cap(level);
        for (int s = 0; s < 5; s++)
            for (int f = 0; f < RP_NFMT; f++) {
                const size_t pad = (size_t)(s + f) % 5, offset = (size_t)(s * 3 + f) % 7;
                pf_frame src;
                RP_REQUIRE_OK(rp_frame_make(&src, rp_formats[f], src_sizes[s][0], src_sizes[s][1],
                                            pad, offset));
                rp_fill_random(&src);
                pf_view views[8];
                for (int i = 0; i < 8; i++) {
                    views[i] = rp_random_view(90, 20);
                    views[i].width = vw[i];
                    views[i].height = 1 + (i * 5 + s) % 19;
                }
                char what[64];
                snprintf(what, sizeof what, "simd %s", pf_cpu_simd_name(level));
                for (int interp = 0; interp < 2; interp++)
                    compare_views((s + f) & 1 ? g_cpu3 : g_cpu, &src, views, 8,
                                  interp ? PF_INTERP_BILINEAR : PF_INTERP_NEAREST, pad, offset,
                                  what);
                pf_frame_unref(&src);
            }
    }
    pf_cpu_simd_cap(-1);
    printf("  simd levels checked: none .. %s\n", pf_cpu_simd_name(top));
}

/* The row kernel never reads past a source that ends at a page boundary:
 * its 4-byte gathers of 3-byte pixels read the last column from one byte
 * earlier. Views looking straight down sample the last row at every
 * longitude, so the last pixel too; 3 and 4 channels, every level, against
 * the reference. */
static void test_simd_source_end(void)
{
    static const pf_pixfmt fmts[] = {PF_PIXFMT_RGB24, PF_PIXFMT_RGBA};
    const int top = pf_cpu_simd_detected();
    for (int level = PF_SIMD_NONE; level <= top; level++) {
        pf_cpu_simd_cap(level);
        for (int f = 0; f < 2; f++) {
            pf_frame src = {0};
            void *map = NULL;
            size_t map_len = 0;
            CHECK_OK(guarded_frame(&src, fmts[f], 61, 30, &map, &map_len));
            if (!map) continue;
            pf_view views[4];
            for (int i = 0; i < 4; i++)
                views[i] = (pf_view){90.0f * (float)i + 7.0f, i & 1 ? -90.0f : 90.0f, 0, 120, 64, 40};
            compare_views(g_cpu, &src, views, 4, PF_INTERP_BILINEAR, 0, 0, "simd source end");
            pf_frame_unref(&src);
            munmap(map, map_len);
        }
    }
    pf_cpu_simd_cap(-1);
}

/* The coordinate maps the CPU path keeps between calls with the same views
 * and source size (src/cpu/reproject.c): a repeated call reads them, and a
 * change of any view, of the source size or of the view count computes new
 * ones; every call equals the reference (3 and 4 channels, strides that
 * differ between calls with the same key, both pools). */
static void test_map_cache(void)
{
    pf_view views[3];
    for (int i = 0; i < 3; i++) views[i] = (pf_view){33.0f * (float)i - 20.0f, 10.0f, 5.0f, 80, 70 + 9 * i, 21};
    pf_frame src[3];
    RP_REQUIRE_OK(rp_frame_make(&src[0], PF_PIXFMT_RGB24, 301, 150, 3, 1));
    RP_REQUIRE_OK(rp_frame_make(&src[1], PF_PIXFMT_RGBA, 301, 150, 0, 0));
    RP_REQUIRE_OK(rp_frame_make(&src[2], PF_PIXFMT_RGB24, 300, 150, 7, 2));
    for (int i = 0; i < 3; i++) rp_fill_random(&src[i]);
    for (int round = 0; round < 2; round++) {
        pf_ops *ops = round ? g_cpu3 : g_cpu;
        compare_views(ops, &src[0], views, 3, PF_INTERP_BILINEAR, 3, 1, "map fill");
        compare_views(ops, &src[0], views, 3, PF_INTERP_BILINEAR, 3, 1, "map reuse");
        compare_views(ops, &src[1], views, 3, PF_INTERP_BILINEAR, 0, 0, "map reuse, RGBA");
        views[1].yaw += 1.0f;
        compare_views(ops, &src[1], views, 3, PF_INTERP_BILINEAR, 0, 0, "a view changed");
        compare_views(ops, &src[2], views, 3, PF_INTERP_BILINEAR, 7, 2, "source width changed");
        compare_views(ops, &src[2], views, 2, PF_INTERP_BILINEAR, 7, 2, "fewer views");
        compare_views(ops, &src[2], views, 2, PF_INTERP_BILINEAR, 7, 2, "fewer views, reuse");
        compare_views(ops, &src[0], views, 3, PF_INTERP_NEAREST, 3, 1, "nearest");
    }
    for (int i = 0; i < 3; i++) pf_frame_unref(&src[i]);
}

/* The most views a call takes, of mixed sizes, and one wide view (several
 * 64-pixel chunks per row, rows spread over many threads). */
static void test_many_views_and_wide(void)
{
    pf_frame src;
    RP_REQUIRE_OK(rp_frame_make(&src, PF_PIXFMT_RGB24, 512, 256, 5, 1));
    rp_fill_random(&src);
    pf_view views[64];
    for (int i = 0; i < 64; i++) views[i] = rp_random_view(40, 30);
    compare_views(g_cpu, &src, views, 64, PF_INTERP_BILINEAR, 3, 2, "64 views");
    pf_view wide = {.yaw = 10, .pitch = -20, .roll = 5, .fov = 150, .width = 1000, .height = 37};
    compare_views(g_cpu3, &src, &wide, 1, PF_INTERP_BILINEAR, 0, 0, "wide");
    compare_views(g_cpu3, &src, &wide, 1, PF_INTERP_NEAREST, 1, 0, "wide");
    pf_frame_unref(&src);
}

/* ops.h's definition, literally, in double with libm. fx, fy in pixel-area
 * units (pixel x covers [x, x + 1)). */
static void oracle_map(const pf_view *v, double i, double j, int W, int H, double *fx, double *fy)
{
    double r = DPI / 180.0;
    double f = (v->width / 2.0) / tan(v->fov / 2.0 * r);
    double x = i + 0.5 - v->width / 2.0, y = -(j + 0.5 - v->height / 2.0), z = f;
    double t = v->roll * r, p = v->pitch * r, a = v->yaw * r;
    double x1 = x * cos(t) + y * sin(t), y1 = -x * sin(t) + y * cos(t), z1 = z;
    double y2 = y1 * cos(p) + z1 * sin(p), z2 = -y1 * sin(p) + z1 * cos(p), x2 = x1;
    double x3 = x2 * cos(a) + z2 * sin(a), y3 = y2, z3 = -x2 * sin(a) + z2 * cos(a);
    double lon = atan2(x3, z3), lat = asin(y3 / sqrt(x3 * x3 + y3 * y3 + z3 * z3));
    *fx = (lon / (2 * DPI) + 0.5) * W;
    *fy = (0.5 - lat / DPI) * H;
}

static void sphere_point(double fx, double fy, int W, int H, double p[3])
{
    double lon = (fx / W - 0.5) * 2 * DPI, lat = (0.5 - fy / H) * DPI;
    p[0] = cos(lat) * sin(lon);
    p[1] = sin(lat);
    p[2] = cos(lat) * cos(lon);
}

/* The float atan2 against libm's, over every octant and the special cases. */
static void test_atan2_accuracy(void)
{
    double worst = 0;
    static const float special[][2] = {{0, 0}, {0, 1}, {0, -1}, {1, 0}, {-1, 0}, {1, 1},
                                       {-1, 1}, {1, -1}, {-1, -1}, {1e-30f, 1}, {1, 1e-30f},
                                       {-1e-30f, -1}, {0.41421356f, 1}, {1, 0.41421356f}};
    for (int k = 0; k < (int)(sizeof special / sizeof special[0]); k++) {
        double e = fabs((double)pf_rp_atan2(special[k][0], special[k][1]) -
                        atan2((double)special[k][0], (double)special[k][1]));
        if (e > worst) worst = e;
    }
    CHECK(pf_rp_atan2(0.0f, -1.0f) > 3.14159f);
    for (int k = 0; k < 200000; k++) {
        float y = rp_rand_float(-1000.0f, 1000.0f), x = rp_rand_float(-1000.0f, 1000.0f);
        if (k % 4 == 0) y *= 1e-4f;
        if (k % 4 == 1) x *= 1e-4f;
        double e = fabs((double)pf_rp_atan2(y, x) - atan2((double)y, (double)x));
        if (e > worst) worst = e;
    }
    printf("     max |pf_rp_atan2 - atan2| = %.3g rad\n", worst);
    CHECK(worst < 1e-6);
}

/* The float mapping every backend uses, against the double definition: the
 * angle between the two sample directions on the sphere, in source pixels
 * (2*pi / W radians each). Stated bound: 0.01 pixel at 8K. */
static void test_mapping_accuracy(void)
{
    const int W = 7680, H = 3840;
    double worst = 0;
    for (int k = 0; k < 3000; k++) {
        pf_view v = rp_random_view(4000, 4000);
        if (v.fov < 1.0f) v.fov = 1.0f; /* sub-pixel views say nothing about accuracy */
        pf_rp_view g;
        pf_rp_view_setup(&v, &g);
        for (int s = 0; s < 8; s++) {
            int i = (int)pf_test_rand_range(0, v.width - 1);
            int j = (int)pf_test_rand_range(0, v.height - 1);
            float fx, fy;
            pf_rp_map(&g, i, j, W, H, &fx, &fy);
            double ox, oy, a[3], b[3];
            oracle_map(&v, i, j, W, H, &ox, &oy);
            sphere_point(fx, fy, W, H, a);
            sphere_point(ox, oy, W, H, b);
            double dot = a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
            double cx = a[1] * b[2] - a[2] * b[1], cy = a[2] * b[0] - a[0] * b[2],
                   cz = a[0] * b[1] - a[1] * b[0];
            double ang = atan2(sqrt(cx * cx + cy * cy + cz * cz), dot);
            double px = ang / (2 * DPI / W);
            if (px > worst) worst = px;
        }
    }
    printf("     max error of the float mapping at 7680x3840: %.4f source pixels\n", worst);
    CHECK(worst < 0.01);
}

/* The centre of an odd-sized view samples the equirect at (yaw, pitch),
 * whatever the roll and fov. */
static void test_view_centre(void)
{
    const int W = 1024, H = 512;
    pf_frame src;
    RP_REQUIRE_OK(rp_frame_make(&src, PF_PIXFMT_RGB24, W, H, 0, 0));
    rp_fill_coded(&src);
    for (int k = 0; k < 200; k++) {
        pf_view v;
        v.yaw = rp_rand_float(-540.0f, 540.0f);
        v.pitch = rp_rand_float(-85.0f, 85.0f);
        v.roll = rp_rand_float(-180.0f, 180.0f);
        v.fov = rp_rand_float(10.0f, 170.0f);
        v.width = 2 * (int)pf_test_rand_range(0, 30) + 1;
        v.height = 2 * (int)pf_test_rand_range(0, 30) + 1;
        pf_frame out;
        RP_REQUIRE_OK(rp_frame_make(&out, PF_PIXFMT_RGB24, v.width, v.height, 0, 0));
        pf_frame *po = &out;
        CHECK_OK(pf_ops_equirect_to_views(k % 2 ? g_cpu : g_ref, &src, &v, &po, 1,
                                          PF_INTERP_NEAREST));
        int x, y;
        rp_decode(out.data[0] + (size_t)(v.height / 2) * out.stride[0] + (size_t)(v.width / 2) * 3,
                  &x, &y);
        double lon = fmod(v.yaw, 360.0);
        if (lon >= 180) lon -= 360;
        if (lon < -180) lon += 360;
        int ex = ((int)floor((lon / 360.0 + 0.5) * W) + W) % W;
        int ey = (int)floor((0.5 - v.pitch / 180.0) * H);
        int dx = abs(x - ex);
        if (dx > W / 2) dx = W - dx;
        if (dx > 1 || abs(y - ey) > 1) {
            CHECK(!"view centre at (yaw, pitch)");
            fprintf(stderr, "  yaw %g pitch %g: centre shows source (%d, %d), expected (%d, %d)\n",
                    (double)v.yaw, (double)v.pitch, x, y, ex, ey);
        }
        pf_frame_unref(&out);
    }
    pf_frame_unref(&src);
}

/* A 90° view looking forward: its left and right edge pixel centres are 45°
 * off-axis less half an edge pixel; the top of the centre column is at half
 * the vertical fov less half a pixel. Source: 3600x1800 (0.1° pixels). */
static void test_edges_of_90_degree_view(void)
{
    const int W = 3600, H = 1800, w = 65, h = 33;
    pf_frame src, out;
    RP_REQUIRE_OK(rp_frame_make(&src, PF_PIXFMT_RGB24, W, H, 0, 0));
    RP_REQUIRE_OK(rp_frame_make(&out, PF_PIXFMT_RGB24, w, h, 0, 0));
    rp_fill_coded(&src);
    pf_view v = {.yaw = 0, .pitch = 0, .roll = 0, .fov = 90, .width = w, .height = h};
    pf_frame *po = &out;
    CHECK_OK(pf_ops_equirect_to_views(g_cpu, &src, &v, &po, 1, PF_INTERP_NEAREST));
    double f = w / 2.0, deg = 180.0 / DPI;
    double edge_lon = atan((w / 2.0 - 0.5) / f) * deg;  /* 44.56° */
    double half_edge_px = (45.0 - atan((w / 2.0 - 1.0) / f) * deg) / 2.0;
    CHECK(fabs(edge_lon - (45.0 - half_edge_px)) < 0.01); /* "45° less half a pixel" */
    const struct {
        int i, j;
        double lon, lat;
    } probes[] = {{0, h / 2, -edge_lon, 0},
                  {w - 1, h / 2, edge_lon, 0},
                  {w / 2, 0, 0, atan((h / 2.0 - 0.5) / f) * deg},
                  {w / 2, h - 1, 0, -atan((h / 2.0 - 0.5) / f) * deg}};
    for (int k = 0; k < 4; k++) {
        int x, y;
        rp_decode(out.data[0] + (size_t)probes[k].j * out.stride[0] + (size_t)probes[k].i * 3, &x,
                  &y);
        double lon = ((x + 0.5) / W - 0.5) * 360.0, lat = (0.5 - (y + 0.5) / H) * 180.0;
        /* Within one source pixel (0.1°) of the exact direction. */
        if (fabs(lon - probes[k].lon) > 0.1 || fabs(lat - probes[k].lat) > 0.1) {
            CHECK(!"edge direction");
            fprintf(stderr, "  probe (%d, %d): lon %.3f lat %.3f, expected %.3f %.3f\n",
                    probes[k].i, probes[k].j, lon, lat, probes[k].lon, probes[k].lat);
        }
    }
    pf_frame_unref(&out);
    pf_frame_unref(&src);
}

/* Angles that are exact in float after adding 360 give identical bytes. */
static void test_yaw_plus_360(void)
{
    pf_frame src;
    RP_REQUIRE_OK(rp_frame_make(&src, PF_PIXFMT_RGB24, 256, 128, 0, 0));
    rp_fill_random(&src);
    for (int k = 0; k < 20; k++) {
        pf_view v[4];
        v[0] = rp_random_view(48, 32);
        v[0].yaw = (float)pf_test_rand_range(-360 * 4, 360 * 4) / 4.0f;
        v[0].pitch = (float)pf_test_rand_range(-80 * 8, 80 * 8) / 8.0f;
        v[0].roll = (float)pf_test_rand_range(-90 * 2, 90 * 2) / 2.0f;
        v[1] = v[0];
        v[1].yaw += 360.0f;
        v[2] = v[0];
        v[2].yaw -= 720.0f;
        v[3] = v[0];
        v[3].roll += 360.0f;
        v[3].pitch -= 360.0f;
        pf_frame out[4];
        pf_frame *po[4];
        for (int i = 0; i < 4; i++) {
            RP_REQUIRE_OK(rp_frame_make(&out[i], PF_PIXFMT_RGB24, v[i].width, v[i].height, 0, 0));
            po[i] = &out[i];
        }
        CHECK_OK(pf_ops_equirect_to_views(g_cpu, &src, v, po, 4, PF_INTERP_BILINEAR));
        for (int i = 1; i < 4; i++) CHECK(rp_frames_equal(&out[0], &out[i], "yaw + 360"));
        for (int i = 0; i < 4; i++) pf_frame_unref(&out[i]);
    }
    pf_frame_unref(&src);
}

/* Lines every 30° of longitude and latitude, two source pixels wide (the
 * pixels either side of the line: their centres are half a pixel apart from
 * it, 0.25°), in a 720x360 GRAY8 equirect. */
static void fill_grid(pf_frame *f)
{
    for (int y = 0; y < f->height; y++) {
        double lat = (0.5 - (y + 0.5) / f->height) * 180.0;
        double dlat = fabs(lat - 30.0 * floor(lat / 30.0 + 0.5));
        for (int x = 0; x < f->width; x++) {
            double lon = ((x + 0.5) / f->width - 0.5) * 360.0;
            double dlon = fabs(lon - 30.0 * floor(lon / 30.0 + 0.5));
            f->data[0][(size_t)y * f->stride[0] + (size_t)x] =
                (dlat < 0.6 * 180.0 / f->height || dlon < 0.6 * 360.0 / f->width) ? 255 : 0;
        }
    }
}

/* Looking forward: the equator is the middle row and the meridian lon = 0 the
 * middle column, each a straight line through the centre; rows and columns a
 * few pixels away are mostly dark; the lon = 30° meridian crosses the middle
 * row where tan(30°) * f says. */
static void test_grid_lines(void)
{
    const int w = 121, h = 81;
    pf_frame src, out;
    RP_REQUIRE_OK(rp_frame_make(&src, PF_PIXFMT_GRAY8, 720, 360, 0, 0));
    RP_REQUIRE_OK(rp_frame_make(&out, PF_PIXFMT_GRAY8, w, h, 3, 0));
    fill_grid(&src);
    pf_view v = {.yaw = 0, .pitch = 0, .roll = 0, .fov = 90, .width = w, .height = h};
    pf_frame *po = &out;
    for (int interp = 0; interp < 2; interp++) {
        CHECK_OK(pf_ops_equirect_to_views(g_cpu, &src, &v, &po, 1, (pf_interp)interp));
        const uint8_t *p = out.data[0];
        size_t s = out.stride[0];
        int row_bright = 0, col_bright = 0, off_row_bright = 0, off_col_bright = 0;
        for (int i = 0; i < w; i++) {
            row_bright += p[(size_t)(h / 2) * s + (size_t)i] >= 250;
            off_row_bright += p[(size_t)(h / 2 - 6) * s + (size_t)i] >= 128;
        }
        for (int j = 0; j < h; j++) {
            col_bright += p[(size_t)j * s + (size_t)(w / 2)] >= 250;
            off_col_bright += p[(size_t)j * s + (size_t)(w / 2 + 6)] >= 128;
        }
        CHECK_EQ_INT(row_bright, w);
        CHECK_EQ_INT(col_bright, h);
        CHECK(off_row_bright < w / 4); /* only where meridians cross it */
        CHECK(off_col_bright < h / 4);
        int i30 = w / 2 + (int)floor(tan(30.0 * DPI / 180.0) * (w / 2.0) + 0.5);
        CHECK(p[(size_t)(h / 2 - 1) * s + (size_t)i30] >= 128);
        CHECK(p[(size_t)(h / 2 - 1) * s + (size_t)i30 + 3] < 128);
    }
    pf_frame_unref(&out);
    pf_frame_unref(&src);
}

/* A source that is smooth on the sphere: each channel a linear function of
 * the pixel centre's unit vector (no seam at the wrap or the poles). */
static void fill_smooth(pf_frame *f)
{
    static const double a[3][3] = {{0.6, 0.5, 0.62}, {-0.3, 0.8, 0.5}, {0.7, -0.2, -0.68}};
    int c = rp_bpp(f->format);
    for (int y = 0; y < f->height; y++)
        for (int x = 0; x < f->width; x++) {
            double p[3];
            sphere_point(x + 0.5, y + 0.5, f->width, f->height, p);
            for (int k = 0; k < c; k++) {
                const double *ak = a[k % 3];
                double v = 127.5 + 120.0 * (ak[0] * p[0] + ak[1] * p[1] + ak[2] * p[2]) / 1.05;
                f->data[0][(size_t)y * f->stride[0] + (size_t)x * c + k] = (uint8_t)(v + 0.5);
            }
        }
}

/* Max |difference| between two lines of n pixels (all channels). */
static int line_diff(const uint8_t *a, ptrdiff_t astep, const uint8_t *b, ptrdiff_t bstep, int n,
                     int c)
{
    int m = 0;
    for (int k = 0; k < n; k++)
        for (int ch = 0; ch < c; ch++) {
            int d = abs(a[k * astep + ch] - b[k * bstep + ch]);
            if (d > m) m = d;
        }
    return m;
}

/* Faces that touch in 3D agree along the shared edge (each side's pixel is
 * half a pixel from the edge, so on a smooth source they differ by about one
 * pixel's gradient). Layout 3x2: row 0 = +X -X +Y, row 1 = -Y +Z -Z. */
static void test_cube_seams(void)
{
    const int S = 48, C = 3;
    pf_frame src, cube;
    RP_REQUIRE_OK(rp_frame_make(&src, PF_PIXFMT_RGB24, 512, 256, 0, 0));
    RP_REQUIRE_OK(rp_frame_make(&cube, PF_PIXFMT_RGB24, 3 * S, 2 * S, 0, 0));
    fill_smooth(&src);
    CHECK_OK(pf_ops_equirect_to_cubemap(g_cpu, &src, &cube, S, PF_CUBE_3X2, PF_INTERP_BILINEAR));
    const ptrdiff_t px = C, row = (ptrdiff_t)cube.stride[0];
    const uint8_t *base = cube.data[0];
#define FACE(col, r) (base + (ptrdiff_t)(r) * S * row + (ptrdiff_t)(col) * S * px)
    const uint8_t *pX = FACE(0, 0), *nX = FACE(1, 0), *pY = FACE(2, 0), *nY = FACE(0, 1),
                  *pZ = FACE(1, 1), *nZ = FACE(2, 1);
#undef FACE
    int seams[5];
    /* +Z right column | +X left column */
    seams[0] = line_diff(pZ + (S - 1) * px, row, pX, row, S, C);
    /* -X right column | +Z left column */
    seams[1] = line_diff(nX + (S - 1) * px, row, pZ, row, S, C);
    /* +Y bottom row | +Z top row */
    seams[2] = line_diff(pY + (S - 1) * row, px, pZ, px, S, C);
    /* +Z bottom row | -Y top row */
    seams[3] = line_diff(pZ + (S - 1) * row, px, nY, px, S, C);
    /* +X right column | -Z left column */
    seams[4] = line_diff(pX + (S - 1) * px, row, nZ, row, S, C);
    for (int k = 0; k < 5; k++) {
        if (seams[k] > 3) fprintf(stderr, "  seam %d: max |diff| %d\n", k, seams[k]);
        CHECK(seams[k] <= 3);
    }
    /* Control: lines that do not meet differ a lot, so the check can fail. */
    CHECK(line_diff(pZ, row, pX, row, S, C) > 40);
    CHECK(line_diff(pY, px, pZ, px, S, C) > 40);
    pf_frame_unref(&cube);
    pf_frame_unref(&src);
}

/* Each face of a cube map equals the view pf_cube_face_view describes,
 * rendered alone; both layouts, both contexts, every format. */
static void test_cubemap_matches_views(void)
{
    for (int k = 0; k < 8; k++) {
        pf_pixfmt fmt = rp_formats[k % RP_NFMT];
        pf_cube_layout layout = k % 2 ? PF_CUBE_1X6 : PF_CUBE_3X2;
        pf_interp interp = (k / 2) % 2 ? PF_INTERP_NEAREST : PF_INTERP_BILINEAR;
        int S = k == 7 ? 1 : (int)pf_test_rand_range(2, 37);
        int cols = layout == PF_CUBE_3X2 ? 3 : 1, rows = 6 / cols, c = rp_bpp(fmt);
        pf_frame src, cube;
        RP_REQUIRE_OK(rp_frame_make(&src, fmt, 200, 100, 3, 1));
        RP_REQUIRE_OK(rp_frame_make(&cube, fmt, cols * S, rows * S, 5, 2));
        rp_fill_random(&src);
        pf_ops *ops = k % 3 == 0 ? g_ref : g_cpu;
        CHECK_OK(pf_ops_equirect_to_cubemap(ops, &src, &cube, S, layout, interp));
        CHECK(rp_padding_intact(&cube));
        for (int face = 0; face < 6; face++) {
            pf_view v;
            CHECK_OK(pf_cube_face_view(face, S, &v));
            pf_frame one, part;
            RP_REQUIRE_OK(rp_frame_make(&one, fmt, S, S, 0, 0));
            pf_frame *po = &one;
            CHECK_OK(pf_ops_equirect_to_views(g_ref, &src, &v, &po, 1, interp));
            /* The face's sub-rectangle of the cube map as a frame of its own. */
            size_t off = (size_t)(cube.data[0] - (uint8_t *)pf_buffer_data(cube.buf[0])) +
                         (size_t)(face / cols) * S * cube.stride[0] + (size_t)(face % cols) * S * c;
            size_t strides[PF_FRAME_MAX_PLANES] = {cube.stride[0], 0, 0};
            memset(&part, 0, sizeof part);
            CHECK_OK(pf_frame_wrap(&part, fmt, S, S, cube.buf[0], off, strides));
            CHECK(rp_frames_equal(&one, &part, "cube face"));
            pf_frame_unref(&part);
            pf_frame_unref(&one);
        }
        pf_frame_unref(&cube);
        pf_frame_unref(&src);
    }
}

/* Views written side by side into one mosaic frame do not overlap: allowed,
 * and each equals the view rendered alone. */
static void test_mosaic_dsts(void)
{
    pf_frame src, mosaic, a, b, alone;
    RP_REQUIRE_OK(rp_frame_make(&src, PF_PIXFMT_RGB24, 100, 50, 0, 0));
    RP_REQUIRE_OK(rp_frame_make(&mosaic, PF_PIXFMT_RGB24, 40, 10, 0, 0));
    rp_fill_random(&src);
    size_t strides[PF_FRAME_MAX_PLANES] = {mosaic.stride[0], 0, 0};
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    CHECK_OK(pf_frame_wrap(&a, PF_PIXFMT_RGB24, 20, 10, mosaic.buf[0], 0, strides));
    CHECK_OK(pf_frame_wrap(&b, PF_PIXFMT_RGB24, 20, 10, mosaic.buf[0], 60, strides));
    pf_view v[2] = {{.yaw = 0, .fov = 60, .width = 20, .height = 10},
                    {.yaw = 90, .fov = 60, .width = 20, .height = 10}};
    pf_frame *po[2] = {&a, &b};
    CHECK_OK(pf_ops_equirect_to_views(g_cpu, &src, v, po, 2, PF_INTERP_BILINEAR));
    RP_REQUIRE_OK(rp_frame_make(&alone, PF_PIXFMT_RGB24, 20, 10, 0, 0));
    pf_frame *pa = &alone;
    CHECK_OK(pf_ops_equirect_to_views(g_ref, &src, &v[1], &pa, 1, PF_INTERP_BILINEAR));
    CHECK(rp_frames_equal(&alone, &b, "mosaic"));
    /* Shifted by one pixel the two views share a column: refused. */
    pf_frame c;
    memset(&c, 0, sizeof c);
    CHECK_OK(pf_frame_wrap(&c, PF_PIXFMT_RGB24, 20, 10, mosaic.buf[0], 57, strides));
    po[1] = &c;
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &src, v, po, 2, PF_INTERP_BILINEAR), PF_ERR_INVALID,
               "dsts[1] overlaps dsts[0]");
    pf_frame_unref(&c);
    pf_frame_unref(&alone);
    pf_frame_unref(&a);
    pf_frame_unref(&b);
    pf_frame_unref(&mosaic);
    pf_frame_unref(&src);
}

static void test_cube_face_table(void)
{
    static const float expect[6][2] = {{90, 0}, {-90, 0}, {0, 90}, {0, -90}, {0, 0}, {180, 0}};
    for (int f = 0; f < 6; f++) {
        pf_view v;
        memset(&v, 0xAB, sizeof v);
        CHECK_OK(pf_cube_face_view(f, 37, &v));
        CHECK(v.yaw == expect[f][0] && v.pitch == expect[f][1] && v.roll == 0.0f);
        CHECK(v.fov == 90.0f && v.width == 37 && v.height == 37);
    }
    pf_view v;
    EXPECT_ERR(pf_cube_face_view(6, 10, &v), PF_ERR_INVALID, "face 6 outside 0..5");
    EXPECT_ERR(pf_cube_face_view(-1, 10, &v), PF_ERR_INVALID, "face -1");
    EXPECT_ERR(pf_cube_face_view(0, 0, &v), PF_ERR_INVALID, "face_size 0");
    EXPECT_ERR(pf_cube_face_view(0, 10, NULL), PF_ERR_INVALID, "out is NULL");
    /* The up face's bottom edge looks at the front: its bottom-centre pixel
     * ray points up and forward (+Z), the top-centre one up and back. */
    CHECK_OK(pf_cube_face_view(2, 9, &v));
    pf_rp_view g;
    pf_rp_view_setup(&v, &g);
    float fx, fy;
    pf_rp_map(&g, 4, 8, 360, 180, &fx, &fy);
    CHECK(fabsf(fx - 180.0f) < 0.5f && fy < 45.0f); /* lon 0, lat > 45 */
    pf_rp_map(&g, 4, 0, 360, 180, &fx, &fy);
    CHECK((fx < 1.0f || fx > 359.0f) && fy < 45.0f); /* lon 180 */
}

static void test_bad_inputs(void)
{
    pf_frame src, dst, nv12, other;
    RP_REQUIRE_OK(rp_frame_make(&src, PF_PIXFMT_RGB24, 64, 32, 0, 0));
    RP_REQUIRE_OK(rp_frame_make(&dst, PF_PIXFMT_RGB24, 16, 8, 0, 0));
    RP_REQUIRE_OK(rp_frame_make(&other, PF_PIXFMT_RGBA, 16, 8, 0, 0));
    RP_REQUIRE_OK(pf_frame_alloc(&nv12, PF_PIXFMT_NV12, 64, 32, NULL, NULL));
    pf_view v = {.yaw = 0, .pitch = 0, .roll = 0, .fov = 90, .width = 16, .height = 8};
    pf_frame *pd = &dst;
    const pf_interp B = PF_INTERP_BILINEAR;

    EXPECT_ERR(pf_ops_equirect_to_views(NULL, &src, &v, &pd, 1, B), PF_ERR_INVALID, "ops is NULL");
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, NULL, &v, &pd, 1, B), PF_ERR_INVALID, "src is NULL");
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &src, NULL, &pd, 1, B), PF_ERR_INVALID,
               "views is NULL");
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &src, &v, NULL, 1, B), PF_ERR_INVALID,
               "dsts is NULL");
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &src, &v, &pd, 0, B), PF_ERR_INVALID,
               "n = 0 outside 1..64");
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &src, &v, &pd, 65, B), PF_ERR_INVALID, "n = 65");
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &src, &v, &pd, 1, PF_INTERP_AREA),
               PF_ERR_UNSUPPORTED, "interp area not supported");
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &src, &v, &pd, 1, (pf_interp)9), PF_ERR_INVALID,
               "interp 9");
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &nv12, &v, &pd, 1, B), PF_ERR_UNSUPPORTED,
               "src format nv12 not supported");
    pf_frame bad = src;
    bad.format = (pf_pixfmt)42;
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &bad, &v, &pd, 1, B), PF_ERR_INVALID,
               "src format 42");
    bad = src;
    bad.data[0] = NULL;
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &bad, &v, &pd, 1, B), PF_ERR_INVALID,
               "src data[0] is NULL");
    bad = src;
    bad.stride[0] = 100;
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &bad, &v, &pd, 1, B), PF_ERR_INVALID,
               "src stride 100 < row of 192 bytes");
    bad = src;
    bad.stride[0] = (size_t)INT32_MAX + 1;
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &bad, &v, &pd, 1, B), PF_ERR_INVALID,
               "src stride 2147483648 exceeds 2147483647 bytes");
    bad = src;
    bad.width = 0;
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &bad, &v, &pd, 1, B), PF_ERR_INVALID,
               "src size 0x32");
    bad = src;
    bad.data[0] += 3; /* the last row now ends past the buffer */
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &bad, &v, &pd, 1, B), PF_ERR_INVALID,
               "src pixels (6144 bytes from offset 3) do not lie inside its buffer of 6144");

    /* Views. */
    pf_view w = v;
    w.fov = 0;
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &src, &w, &pd, 1, B), PF_ERR_INVALID,
               "views[0].fov = 0 outside (0, 180)");
    w.fov = 180;
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &src, &w, &pd, 1, B), PF_ERR_INVALID,
               "views[0].fov = 180 outside");
    w.fov = -5;
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &src, &w, &pd, 1, B), PF_ERR_INVALID,
               "views[0].fov = -5");
    w.fov = NAN;
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &src, &w, &pd, 1, B), PF_ERR_INVALID,
               "views[0].fov = nan");
    w = v;
    w.pitch = INFINITY;
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &src, &w, &pd, 1, B), PF_ERR_INVALID,
               "views[0].pitch = inf is not finite");
    w = v;
    w.yaw = NAN;
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &src, &w, &pd, 1, B), PF_ERR_INVALID,
               "views[0].yaw = nan");
    w = v;
    w.width = 0;
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &src, &w, &pd, 1, B), PF_ERR_INVALID,
               "views[0] size 0x8 outside 1..65536");
    w = v;
    w.width = PF_FRAME_MAX_DIM + 1;
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &src, &w, &pd, 1, B), PF_ERR_INVALID,
               "views[0] size 65537x8 outside 1..65536");
    w = v;
    w.height = -3;
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &src, &w, &pd, 1, B), PF_ERR_INVALID,
               "views[0] size 16x-3");

    /* Destinations: the second of two views is checked too. */
    pf_view two[2] = {v, v};
    pf_frame *pp[2] = {&dst, NULL};
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &src, two, pp, 2, B), PF_ERR_INVALID,
               "dsts[1] is NULL");
    pp[1] = &other;
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &src, two, pp, 2, B), PF_ERR_INVALID,
               "dsts[1] format rgba differs from src format rgb24");
    two[1].width = 17;
    pf_frame dst2;
    RP_REQUIRE_OK(rp_frame_make(&dst2, PF_PIXFMT_RGB24, 16, 8, 0, 0));
    pp[1] = &dst2;
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &src, two, pp, 2, B), PF_ERR_INVALID,
               "dsts[1] is 16x8 but views[1] is 17x8");
    two[1] = v;
    pp[1] = &dst;
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &src, two, pp, 2, B), PF_ERR_INVALID,
               "dsts[1] overlaps dsts[0]");
    /* A destination inside the source's memory. */
    pf_frame inside;
    memset(&inside, 0, sizeof inside);
    CHECK_OK(pf_frame_wrap(&inside, PF_PIXFMT_RGB24, 16, 8, src.buf[0], 100, NULL));
    pf_frame *pi = &inside;
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &src, &v, &pi, 1, B), PF_ERR_INVALID,
               "dsts[0] overlaps src");
    pf_frame_unref(&inside);

    /* Device memory of a device a CPU stream cannot reach (a stand-in
     * device record: this machine may have no GPU). */
    static uint8_t fake_mem[16 * 8 * 3];
    pf_buffer *db = otu_fake_gpu_buffer(fake_mem, sizeof fake_mem, 7);
    pf_frame dev;
    memset(&dev, 0, sizeof dev);
    CHECK_OK(pf_frame_wrap(&dev, PF_PIXFMT_RGB24, 16, 8, db, 0, NULL));
    pf_frame *pdev = &dev;
    EXPECT_ERR(pf_ops_equirect_to_views(g_cpu, &src, &v, &pdev, 1, B), PF_ERR_UNSUPPORTED,
               "dsts[0] is device memory of cuda:7, not reachable from the CPU stream");
    EXPECT_ERR(pf_ops_equirect_to_views(g_ref, &dev, &v, &pd, 1, B), PF_ERR_UNSUPPORTED,
               "src is device memory of cuda:7");
    pf_frame_unref(&dev);
    pf_buffer_unref(&db);
    /* "Device" memory of the CPU device is host memory: fine. */
    pf_allocator *cpu_dev = pf_test_allocator_create(NULL, "rp-dev", PF_MEM_DEVICE, 0);
    REQUIRE(cpu_dev);
    pf_frame cd;
    CHECK_OK(pf_frame_alloc(&cd, PF_PIXFMT_RGB24, 16, 8, cpu_dev, g_stream));
    pf_frame *pcd = &cd;
    CHECK_OK(pf_ops_equirect_to_views(g_cpu, &src, &v, &pcd, 1, B));
    pf_frame_unref(&cd);
    pf_allocator_destroy(&cpu_dev);

    /* Cube maps. */
    pf_frame cube;
    RP_REQUIRE_OK(rp_frame_make(&cube, PF_PIXFMT_RGB24, 30, 20, 0, 0));
    const pf_cube_layout L = PF_CUBE_3X2;
    CHECK_OK(pf_ops_equirect_to_cubemap(g_cpu, &src, &cube, 10, L, B));
    EXPECT_ERR(pf_ops_equirect_to_cubemap(NULL, &src, &cube, 10, L, B), PF_ERR_INVALID,
               "pf_ops_equirect_to_cubemap: ops is NULL");
    EXPECT_ERR(pf_ops_equirect_to_cubemap(g_cpu, NULL, &cube, 10, L, B), PF_ERR_INVALID,
               "src is NULL");
    EXPECT_ERR(pf_ops_equirect_to_cubemap(g_cpu, &src, NULL, 10, L, B), PF_ERR_INVALID,
               "dst is NULL");
    EXPECT_ERR(pf_ops_equirect_to_cubemap(g_cpu, &src, &cube, 0, L, B), PF_ERR_INVALID,
               "face_size 0 outside 1..65536");
    EXPECT_ERR(pf_ops_equirect_to_cubemap(g_cpu, &src, &cube, PF_FRAME_MAX_DIM + 1, L, B),
               PF_ERR_INVALID, "face_size 65537 outside 1..65536");
    EXPECT_ERR(pf_ops_equirect_to_cubemap(g_cpu, &src, &cube, 10, (pf_cube_layout)7, B),
               PF_ERR_INVALID, "layout 7 is not a pf_cube_layout");
    EXPECT_ERR(pf_ops_equirect_to_cubemap(g_cpu, &src, &cube, 11, L, B), PF_ERR_INVALID,
               "dst is 30x20 but a 3x2 cube map of face_size 11 is 33x22");
    EXPECT_ERR(pf_ops_equirect_to_cubemap(g_cpu, &src, &cube, 10, PF_CUBE_1X6, B), PF_ERR_INVALID,
               "dst is 30x20 but a 1x6 cube map of face_size 10 is 10x60");
    EXPECT_ERR(pf_ops_equirect_to_cubemap(g_cpu, &src, &cube, 10, L, PF_INTERP_AREA),
               PF_ERR_UNSUPPORTED, "interp area");
    EXPECT_ERR(pf_ops_equirect_to_cubemap(g_cpu, &nv12, &cube, 10, L, B), PF_ERR_UNSUPPORTED,
               "src format nv12");
    pf_frame cube4;
    RP_REQUIRE_OK(rp_frame_make(&cube4, PF_PIXFMT_RGBA, 30, 20, 0, 0));
    EXPECT_ERR(pf_ops_equirect_to_cubemap(g_cpu, &src, &cube4, 10, L, B), PF_ERR_INVALID,
               "dst format rgba differs from src format rgb24");
    bad = cube;
    bad.stride[0] = 10;
    EXPECT_ERR(pf_ops_equirect_to_cubemap(g_cpu, &src, &bad, 10, L, B), PF_ERR_INVALID,
               "dst stride 10 < row of 90 bytes");
    pf_frame cin;
    memset(&cin, 0, sizeof cin);
    CHECK_OK(pf_frame_wrap(&cin, PF_PIXFMT_RGB24, 30, 20, src.buf[0], 0, NULL));
    EXPECT_ERR(pf_ops_equirect_to_cubemap(g_cpu, &src, &cin, 10, L, B), PF_ERR_INVALID,
               "dst overlaps src");
    pf_frame_unref(&cin);
    pf_frame_unref(&cube4);
    pf_frame_unref(&cube);

    pf_frame_unref(&dst2);
    pf_frame_unref(&nv12);
    pf_frame_unref(&other);
    pf_frame_unref(&dst);
    pf_frame_unref(&src);
}

int main(void)
{
    pf_test_seed(0x360360);
    if (!(g_stream = otu_cpu_stream())) return 1;
    pf_threadpool_params tp = pf_threadpool_params_default();
    tp.num_threads = 3;
    pf_threadpool *pool3 = NULL;
    if (pf_threadpool_create(&tp, &pool3) != PF_OK) return 1;
    g_ref = otu_make_ops(g_stream, 1, NULL);
    g_cpu = otu_make_ops(g_stream, 0, NULL);
    g_cpu3 = otu_make_ops(g_stream, 0, pool3);
    if (!g_ref || !g_cpu || !g_cpu3) return 1;

    PF_RUN(test_cube_face_table);
    PF_RUN(test_atan2_accuracy);
    PF_RUN(test_mapping_accuracy);
    PF_RUN(test_threaded_matches_reference);
    PF_RUN(test_many_views_and_wide);
    PF_RUN(test_simd_levels);
    PF_RUN(test_simd_source_end);
    PF_RUN(test_map_cache);
    PF_RUN(test_view_centre);
    PF_RUN(test_edges_of_90_degree_view);
    PF_RUN(test_yaw_plus_360);
    PF_RUN(test_grid_lines);
    PF_RUN(test_cube_seams);
    PF_RUN(test_cubemap_matches_views);
    PF_RUN(test_mosaic_dsts);
    PF_RUN(test_bad_inputs);

    pf_ops_destroy(&g_cpu3);
    pf_ops_destroy(&g_cpu);
    pf_ops_destroy(&g_ref);
    pf_threadpool_destroy(&pool3);
    pf_stream_destroy(&g_stream);
    return pf_test_finish();
}
