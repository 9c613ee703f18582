/* pf_ops_equirect_to_views and pf_ops_equirect_to_cubemap (the C reference and
 * the threaded CPU path) against cv::remap as an independent oracle. Built
 * only where OpenCV's development files exist.
 *
 * Sample positions. The test computes, in double precision and with its own
 * code, ops.h's definition for every view pixel: camera ray
 * d = (i + 0.5 - w/2, -(j + 0.5 - h/2), f), f = (w/2) / tan(fov/2), rotated
 * by R_yaw(R_pitch(R_roll(d))), lon = atan2(dx, dz), lat = asin(dy / |d|),
 * x = (lon / 360° + 0.5) W - 0.5, y = (0.5 - lat / 180°) H - 0.5, so x lies in
 * [-0.5, W - 0.5] and y in [-0.5, H - 0.5]. Cube faces use the header's table
 * (+X yaw 90, -X yaw -90, +Y pitch 90, -Y pitch -90, +Z yaw 0, -Z yaw 180,
 * fov 90, roll 0), checked against pf_cube_face_view().
 *
 * Borders. pixflow wraps x and clamps y; no single OpenCV border mode does
 * both. So cv::remap runs on a padded copy of the equirect: columns W-2, W-1,
 * then the W source columns, then columns 0, 1 (width W + 4), with map x + 2
 * and BORDER_REPLICATE. x + 2 stays in [1.5, W + 1.5], so every x tap
 * (floor and floor + 1, in [1, W + 2]) is a real padded column holding source
 * column (tap - 2) mod W: the wrap, exactly; only y can leave the image, and
 * replicating rows is clamping each y tap to 0..H-1: exactly pixflow's
 * bilinear ("four neighbours, x wrapping, y clamped") and nearest.
 *
 * Bilinear = INTER_LINEAR. OpenCV rounds each coordinate to 1/32 pixel
 * (INTER_BITS = 5: error <= 1/64 px), blends with 15-bit fixed-point weights
 * (error < 0.03 of a level) and rounds; pixflow evaluates a float formula
 * (within 0.001 px of the definition, ops.h) and rounds half up. Next to a
 * pole lon is ill-conditioned: the ray's float components are off by about
 * 2^-23 |d|, which moves lon by that over |d_horiz| radians, so the test
 * budgets PF_ERR + W * 2e-8 * |d| / |d_horiz| px for x (2^-23 / 2 pi = 1.9e-8;
 * measured on pixflow's formula: at most 4e-9). Per axis the coordinates
 * then differ by at most e = 1/64 + 1e-4 (the map stored as float) + that
 * budget, the bilinear surface by at most gx * ex + gy * ey, where gx, gy are
 * the largest differences between neighbouring source pixels around the
 * sample, and two roundings turn a difference below 1 into at most 1. So:
 *   every pixel  |diff| <= 1 + floor(gx * ex + gy * ey + 0.03)
 *   smooth       |diff| <= 1: its gradient is at most 200 levels per radian,
 *                21 per pixel on the 64x31 source, and 2 * 21 * 0.018 + 0.03
 *                < 1
 *   noise        |diff| <= 1 + floor(255 * (ex + ey) + 0.03) = 9 (a 1/64 px
 *                error on a 255-step edge moves a value by 4, and the x and
 *                y errors can add up); measured: at most 7 (61 seeds).
 * Pixels whose x budget exceeds 0.002 px (within about 1° of a pole on the
 * 1024 wide source) keep only the per-pixel bound (and count as "next to a
 * pole"). Shifting the test's own coordinates by 0.01 px in x or y makes the
 * test fail (tried while writing it), so the bounds are not loose.
 *
 * Nearest = INTER_NEAREST: OpenCV rounds the float coordinate to the nearest
 * integer (ties to even), pixflow takes floor(x + 0.5) of its own float
 * coordinate; they pick different pixels only where the coordinate lies next
 * to a pixel boundary (a half-integer). Checked per pixel: pixflow's pixel
 * must be one of the candidate source pixels of the double coordinate (the
 * containing one, plus the neighbour across a boundary closer than 1/32 px),
 * and every pixel where pixflow and OpenCV differ must have its double x or y
 * within 1/32 px of a boundary (or pixflow's x budget, next to a pole).
 * Measured (61 seeds): differing pixels lie within 1e-4 px of a boundary.
 * Many are exact ties: with an odd face size the centre column of the back,
 * up and down cube faces has rays at lon = 180° exactly, x = W - 0.5 (the
 * seam); for odd W OpenCV rounds W + 1.5 to the even W + 1 (source column
 * W - 1), pixflow takes floor(W) = column 0 (or lands on either side).
 *
 * Sources: a smooth one (128 + three sines of the pixel centre's unit vector
 * per channel: continuous across the wrap and the poles, 28..228, at most
 * ~20 levels per pixel at the smallest source) and uniform noise; RGB24 and
 * GRAY8; 1024x512, 357x181 and 64x31. Views: random yaw (-540..540), pitch
 * (-100..100), roll (-180..180), fov in (10, 170) (including 10.5 and 169.5),
 * sizes from 1x1 to 320x180, odd and even, all in one call. Cube maps: face
 * sizes 1, 2, 37 and 64, layouts 3x2 and 1x6, every face compared with the
 * remap of its view. The reference and the CPU context must also give the
 * same bytes (ops.h). */
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <vector>

#include "pf_test.h"

static const double DPI = 3.14159265358979323846;
static const double QUANT = 1.0 / 64 + 1e-4; /* OpenCV's 1/32 px grid + float map */
static const double PF_ERR = 0.001;          /* pixflow's float formula, px */
static const double POLE = 2e-8;             /* pixflow's x error per W |d| / |d_horiz| */
static const double ILL = 0.002;             /* x budget beyond which lon is "near a pole" */

static pf_stream *g_stream;
static pf_ops *g_ops[2]; /* reference, CPU path */
static cv::RNG g_rng;

/* The double-precision sample positions of one view on a W x H source. */
struct vmap {
    pf_view v;
    int W, H;
    std::vector<double> x, y; /* ops.h's x in [-0.5, W - 0.5], y */
    std::vector<double> ex;   /* pixflow's error budget in x (px) */
    cv::Mat mx, my;           /* CV_32F maps into the padded source: x + 2, y */
};

static vmap make_map(const pf_view &v, int W, int H)
{
    vmap m;
    m.v = v;
    m.W = W;
    m.H = H;
    const size_t n = (size_t)v.width * (size_t)v.height;
    m.x.resize(n);
    m.y.resize(n);
    m.ex.resize(n);
    m.mx.create(v.height, v.width, CV_32F);
    m.my.create(v.height, v.width, CV_32F);
    const double r = v.roll * DPI / 180, p = v.pitch * DPI / 180, a = v.yaw * DPI / 180;
    const double cr = cos(r), sr = sin(r), cp = cos(p), sp = sin(p), ca = cos(a), sa = sin(a);
    const double f = (v.width / 2.0) / tan(v.fov * DPI / 360);
    for (int j = 0; j < v.height; j++)
        for (int i = 0; i < v.width; i++) {
            const double dx = i + 0.5 - v.width / 2.0, dy = -(j + 0.5 - v.height / 2.0), dz = f;
            const double x1 = dx * cr + dy * sr, y1 = -dx * sr + dy * cr, z1 = dz;  /* roll */
            const double x2 = x1, y2 = y1 * cp + z1 * sp, z2 = -y1 * sp + z1 * cp;  /* pitch */
            const double x3 = x2 * ca + z2 * sa, y3 = y2, z3 = -x2 * sa + z2 * ca;  /* yaw */
            const double len = sqrt(x3 * x3 + y3 * y3 + z3 * z3), horiz = hypot(x3, z3);
            const double lon = atan2(x3, z3);
            const double lat = asin(std::max(-1.0, std::min(1.0, y3 / len)));
            const double X = (lon / (2 * DPI) + 0.5) * W - 0.5;
            const double Y = (0.5 - lat / DPI) * H - 0.5;
            const size_t k = (size_t)j * v.width + i;
            m.x[k] = X;
            m.y[k] = Y;
            m.ex[k] = PF_ERR + (horiz > 0 ? std::min(1e9, W * POLE * len / horiz) : 1e9);
            m.mx.at<float>(j, i) = (float)(X + 2);
            m.my.at<float>(j, i) = (float)Y;
        }
    return m;
}

static const int g_src_sizes[][2] = {{1024, 512}, {357, 181}, {64, 31}};

/* Smooth content: per channel 128 + 50 sin(k1.u + p1) + 30 sin(k2.u + p2) +
 * 20 sin(k3.u + p3), u the unit vector of the pixel centre, |k| = 2. */
static double g_k[3][3][4]; /* [channel][term] = kx, ky, kz, phase */

static double rand01(void) { return (double)(pf_test_rand() >> 11) / 9007199254740992.0; }
static float rand_float(double lo, double hi) { return (float)(lo + (hi - lo) * rand01()); }

static void fill_smooth(cv::Mat m)
{
    const int W = m.cols, H = m.rows, C = m.channels();
    static const double amp[3] = {50, 30, 20};
    for (int y = 0; y < H; y++) {
        const double lat = (0.5 - (y + 0.5) / H) * DPI;
        uint8_t *row = m.ptr<uint8_t>(y);
        for (int x = 0; x < W; x++) {
            const double lon = ((x + 0.5) / W - 0.5) * 2 * DPI;
            const double u[3] = {cos(lat) * sin(lon), sin(lat), cos(lat) * cos(lon)};
            for (int c = 0; c < C; c++) {
                double v = 128;
                for (int t = 0; t < 3; t++) {
                    const double *k = g_k[c][t];
                    v += amp[t] * sin(k[0] * u[0] + k[1] * u[1] + k[2] * u[2] + k[3]);
                }
                row[x * C + c] = cv::saturate_cast<uint8_t>(v);
            }
        }
    }
}

/* The equirect with 2 wrapped columns on each side (see the top comment). */
static cv::Mat pad_wrap(const cv::Mat &s)
{
    const int W = s.cols;
    cv::Mat p(s.rows, W + 4, s.type());
    for (int k = 0; k < W + 4; k++) s.col(((k - 2) % W + W) % W).copyTo(p.col(k));
    return p;
}

/* Results of one comparison, accumulated over views / faces / contexts. */
struct agg {
    int max = 0;               /* largest |diff| of a value */
    int max_wc = 0;            /* ... over well-conditioned pixels */
    int max_ill = 0;           /* ... over pixels next to a pole */
    double max_bdist = 0;      /* nearest: the farthest a differing pixel lies from a boundary */
    long values = 0, differ = 0;
    long pixels = 0, pix_differ = 0;
    long near64 = 0;           /* nearest: pixels within 1/64 px of a boundary */
    long ill = 0;              /* pixels next to a pole (x budget > ILL) */
    long bad = 0;              /* violations of the per-pixel rules */
    long not_identical = 0;    /* reference and CPU outputs that differ */
};

static void describe(const vmap &m, int i, int j, const char *what)
{
    const size_t k = (size_t)j * m.v.width + i;
    fprintf(stderr,
            "  %s: view yaw %g pitch %g roll %g fov %g %dx%d on %dx%d, pixel (%d, %d): "
            "x %.5f y %.5f (x budget %.4f)\n",
            what, (double)m.v.yaw, (double)m.v.pitch, (double)m.v.roll, (double)m.v.fov,
            m.v.width, m.v.height, m.W, m.H, i, j, m.x[k], m.y[k], m.ex[k]);
}

static inline int wrapx(int x, int W) { return ((x % W) + W) % W; }
static inline int clampy(int y, int H) { return y < 0 ? 0 : (y >= H ? H - 1 : y); }

/* Distance of t to the nearest half-integer (a nearest-pixel boundary). */
static inline double boundary_dist(double t)
{
    const double u = t + 0.5;
    return fabs(u - floor(u + 0.5));
}

/* Bilinear: ours vs OpenCV's remap of the same view. */
static void compare_bilinear(const vmap &m, const cv::Mat &src, const cv::Mat &ours,
                             const cv::Mat &cvo, bool smooth, agg &a)
{
    const int C = src.channels(), W = m.W, H = m.H;
    int reported = 0;
    for (int j = 0; j < m.v.height; j++) {
        const uint8_t *po = ours.ptr<uint8_t>(j), *pc = cvo.ptr<uint8_t>(j);
        for (int i = 0; i < m.v.width; i++) {
            const size_t k = (size_t)j * m.v.width + i;
            const bool ill = m.ex[k] > ILL;
            a.pixels++;
            a.ill += ill;
            int pix_max = 0;
            for (int c = 0; c < C; c++) {
                const int d = abs((int)po[i * C + c] - (int)pc[i * C + c]);
                a.values++;
                a.differ += d != 0;
                pix_max = std::max(pix_max, d);
            }
            a.pix_differ += pix_max != 0;
            a.max = std::max(a.max, pix_max);
            if (ill) a.max_ill = std::max(a.max_ill, pix_max);
            else a.max_wc = std::max(a.max_wc, pix_max);
            if (pix_max <= 1) continue;
            /* The per-pixel bound from the neighbouring differences. */
            const double ex = QUANT + m.ex[k], ey = QUANT + PF_ERR;
            const int x0 = (int)floor(m.x[k]), y0 = (int)floor(m.y[k]);
            bool ok = true;
            for (int c = 0; c < C; c++) {
                int gx = 0, gy = 0;
                if (ex >= 0.5) {
                    gx = 255; /* x unknown: no claim beyond the y term */
                } else {
                    for (int r = y0 - 1; r <= y0 + 2; r++)
                        for (int q = x0 - 1; q <= x0 + 1; q++) {
                            const uint8_t *row = src.ptr<uint8_t>(clampy(r, H));
                            gx = std::max(gx, abs((int)row[wrapx(q + 1, W) * C + c] -
                                                  (int)row[wrapx(q, W) * C + c]));
                        }
                }
                for (int r = y0 - 1; r <= y0 + 1; r++)
                    for (int q = x0 - 1; q <= x0 + 2; q++) {
                        const int xx = wrapx(q, W) * C + c;
                        gy = std::max(gy, abs((int)src.ptr<uint8_t>(clampy(r + 1, H))[xx] -
                                              (int)src.ptr<uint8_t>(clampy(r, H))[xx]));
                    }
                const double lim = 1 + floor(gx * std::min(ex, 1.0) + gy * ey + 0.03);
                const int d = abs((int)po[i * C + c] - (int)pc[i * C + c]);
                if (d > lim || (smooth && !ill && d > 1)) {
                    ok = false;
                    if (reported < 3)
                        fprintf(stderr,
                                "    channel %d: ours %d, OpenCV %d, allowed %g (gx %d gy %d)\n", c,
                                po[i * C + c], pc[i * C + c], smooth && !ill ? 1.0 : lim, gx, gy);
                }
            }
            if (!ok) {
                a.bad++;
                if (reported++ < 3) describe(m, i, j, "bilinear bound exceeded");
            }
        }
    }
}

/* Nearest: ours against the candidate pixels and against OpenCV. */
static void compare_nearest(const vmap &m, const cv::Mat &src, const cv::Mat &ours,
                            const cv::Mat &cvo, agg &a)
{
    const int C = src.channels(), W = m.W, H = m.H;
    const double tol = 1.0 / 32;
    int reported = 0;
    for (int j = 0; j < m.v.height; j++) {
        const uint8_t *po = ours.ptr<uint8_t>(j), *pc = cvo.ptr<uint8_t>(j);
        for (int i = 0; i < m.v.width; i++) {
            const size_t k = (size_t)j * m.v.width + i;
            const double X = m.x[k], Y = m.y[k];
            const bool ill = m.ex[k] > ILL;
            const double bx = boundary_dist(X), by = boundary_dist(Y);
            const bool near_x = bx < std::max(tol, m.ex[k]), near_y = by < tol;
            a.pixels++;
            a.ill += ill;
            a.near64 += bx < 1.0 / 64 || by < 1.0 / 64;
            int pix_max = 0;
            for (int c = 0; c < C; c++) {
                const int d = abs((int)po[i * C + c] - (int)pc[i * C + c]);
                a.values++;
                a.differ += d != 0;
                pix_max = std::max(pix_max, d);
            }
            a.pix_differ += pix_max != 0;
            a.max = std::max(a.max, pix_max);
            if (ill) a.max_ill = std::max(a.max_ill, pix_max);
            else a.max_wc = std::max(a.max_wc, pix_max);
            if (pix_max) a.max_bdist = std::max(a.max_bdist, std::min(bx, by));
            /* Candidates: the containing pixel, and across a near boundary
             * the neighbour (any column when x is ill-conditioned). */
            const int xa = (int)floor(X + 0.5), ya = (int)floor(Y + 0.5);
            const int xb = X + 0.5 - xa < 0.5 ? xa - 1 : xa + 1;
            const int yb = Y + 0.5 - ya < 0.5 ? ya - 1 : ya + 1;
            const bool any_x = m.ex[k] >= 0.5;
            bool found = false;
            for (int sy = 0; sy < (near_y ? 2 : 1) && !found; sy++) {
                const uint8_t *row = src.ptr<uint8_t>(clampy(sy ? yb : ya, H));
                const int nx = any_x ? W : (near_x ? 2 : 1);
                for (int sx = 0; sx < nx && !found; sx++) {
                    const int xx = any_x ? sx : wrapx(sx ? xb : xa, W);
                    found = memcmp(row + (size_t)xx * C, po + (size_t)i * C, (size_t)C) == 0;
                }
            }
            const bool bad_pick = !found, bad_diff = pix_max != 0 && !near_x && !near_y;
            if (bad_pick || bad_diff) {
                a.bad++;
                if (reported++ < 3)
                    describe(m, i, j,
                             bad_pick ? "nearest: ours is not a candidate pixel"
                                      : "nearest: differs from OpenCV away from a boundary");
            }
        }
    }
}

static void report(const char *what, const agg &a, bool nearest, int bound)
{
    printf("  %-50s max |diff| %3d, %7.4f%% of values differ", what, a.max,
           100.0 * (double)a.differ / (double)std::max(1L, a.values));
    if (nearest) {
        printf(", %ld of %ld px differ", a.pix_differ, a.pixels);
        if (a.pix_differ) printf(" (each within %.1e px of a boundary)", a.max_bdist);
        printf(", %ld px within 1/64 px of one", a.near64);
    } else {
        printf(" (bound %d)", bound);
    }
    if (a.ill) printf("; %ld px next to a pole, max |diff| there %d", a.ill, a.max_ill);
    printf("\n");
    CHECK_EQ_INT(a.bad, 0);
    CHECK_EQ_INT(a.not_identical, 0);
    if (!nearest) CHECK(a.max_wc <= bound);
}

/* Noise bound over well-conditioned pixels: 1 + floor(255 (ex + ey) + 0.03)
 * with ex <= QUANT + ILL, ey = QUANT + PF_ERR: 1 + floor(8.81) = 9. */
static int noise_bound(void)
{
    return 1 + (int)floor(255 * (QUANT + ILL + QUANT + PF_ERR) + 0.03);
}

static cv::Mat frame_mat(pf_frame *f, pf_pixfmt fmt, int w, int h)
{
    CHECK_OK(pf_frame_alloc(f, fmt, w, h, NULL, NULL));
    return cv::Mat(h, w, fmt == PF_PIXFMT_GRAY8 ? CV_8UC1 : CV_8UC3, f->data[0], f->stride[0]);
}

static bool same_bytes(const cv::Mat &a, const cv::Mat &b)
{
    for (int y = 0; y < a.rows; y++)
        if (memcmp(a.ptr(y), b.ptr(y), a.cols * a.elemSize()) != 0) return false;
    return true;
}

static std::vector<pf_view> g_views;

static void make_views(void)
{
    static const int sizes[][2] = {{1, 1},   {2, 1},    {1, 6},     {3, 3},    {64, 48},
                                   {97, 61}, {128, 128}, {211, 117}, {320, 180}, {150, 151}};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        pf_view v = {};
        v.yaw = rand_float(-540, 540);
        v.pitch = rand_float(-100, 100);
        v.roll = rand_float(-180, 180);
        v.fov = k == 4 ? 10.5f : k == 8 ? 169.5f : rand_float(10.01, 169.99);
        v.width = sizes[k][0];
        v.height = sizes[k][1];
        g_views.push_back(v);
    }
}

static void test_views(void)
{
    const pf_pixfmt fmts[] = {PF_PIXFMT_RGB24, PF_PIXFMT_GRAY8};
    const int nv = (int)g_views.size();
    for (const auto &sz : g_src_sizes) {
        const int W = sz[0], H = sz[1];
        std::vector<vmap> maps;
        for (const pf_view &v : g_views) maps.push_back(make_map(v, W, H));
        for (pf_pixfmt fmt : fmts)
            for (int smooth = 1; smooth >= 0; smooth--) {
                pf_frame src = {};
                cv::Mat s = frame_mat(&src, fmt, W, H);
                if (smooth) fill_smooth(s);
                else g_rng.fill(s, cv::RNG::UNIFORM, 0, 256);
                const cv::Mat padded = pad_wrap(s);
                for (int nearest = 0; nearest < 2; nearest++) {
                    agg a;
                    std::vector<pf_frame> outs[2];
                    std::vector<cv::Mat> mats[2];
                    for (int c = 0; c < 2; c++) {
                        outs[c].resize(nv);
                        std::vector<pf_frame *> dsts;
                        for (int k = 0; k < nv; k++) {
                            outs[c][k] = pf_frame{};
                            mats[c].push_back(frame_mat(&outs[c][k], fmt, g_views[k].width,
                                                        g_views[k].height));
                            mats[c][k].setTo(cv::Scalar::all(0xCD));
                            dsts.push_back(&outs[c][k]);
                        }
                        CHECK_OK(pf_ops_equirect_to_views(
                            g_ops[c], &src, g_views.data(), dsts.data(), nv,
                            nearest ? PF_INTERP_NEAREST : PF_INTERP_BILINEAR));
                    }
                    for (int k = 0; k < nv; k++) {
                        cv::Mat o;
                        cv::remap(padded, o, maps[k].mx, maps[k].my,
                                  nearest ? cv::INTER_NEAREST : cv::INTER_LINEAR,
                                  cv::BORDER_REPLICATE);
                        a.not_identical += !same_bytes(mats[0][k], mats[1][k]);
                        for (int c = 0; c < 2; c++) {
                            if (nearest) compare_nearest(maps[k], s, mats[c][k], o, a);
                            else compare_bilinear(maps[k], s, mats[c][k], o, smooth, a);
                        }
                    }
                    char what[128];
                    snprintf(what, sizeof what, "ref+cpu %s %dx%d %s: %s", pf_pixfmt_name(fmt), W,
                             H, smooth ? "smooth" : "noise",
                             nearest ? "nearest vs INTER_NEAREST" : "bilinear vs INTER_LINEAR");
                    report(what, a, nearest, smooth ? 1 : noise_bound());
                    for (int c = 0; c < 2; c++)
                        for (auto &f : outs[c]) pf_frame_unref(&f);
                }
                pf_frame_unref(&src);
            }
    }
}

/* The header's face table: +X, -X, +Y, -Y, +Z, -Z. */
static const float g_faces[6][2] = {{90, 0}, {-90, 0}, {0, 90}, {0, -90}, {0, 0}, {180, 0}};

static bool same_angle(double a, double b)
{
    const double d = fmod(fabs(a - b), 360.0);
    return std::min(d, 360.0 - d) < 1e-4;
}

static void test_cubemap(void)
{
    const pf_pixfmt fmts[] = {PF_PIXFMT_RGB24, PF_PIXFMT_GRAY8};
    const int face_sizes[] = {1, 2, 37, 64};
    for (int si = 0; si < 2; si++) {
        const int W = g_src_sizes[si][0], H = g_src_sizes[si][1];
        std::vector<vmap> maps[4];
        for (int fs = 0; fs < 4; fs++)
            for (int face = 0; face < 6; face++) {
                pf_view v = {}, lib = {};
                v.yaw = g_faces[face][0];
                v.pitch = g_faces[face][1];
                v.fov = 90;
                v.width = v.height = face_sizes[fs];
                CHECK_OK(pf_cube_face_view(face, face_sizes[fs], &lib));
                const bool same = same_angle(lib.yaw, v.yaw) && same_angle(lib.pitch, v.pitch) &&
                                  same_angle(lib.roll, 0) && lib.fov == 90.0f &&
                                  lib.width == v.width && lib.height == v.height;
                CHECK(same);
                if (!same)
                    fprintf(stderr, "  face %d: pf_cube_face_view gives yaw %g pitch %g roll %g "
                                    "fov %g %dx%d\n", face, (double)lib.yaw, (double)lib.pitch,
                            (double)lib.roll, (double)lib.fov, lib.width, lib.height);
                maps[fs].push_back(make_map(v, W, H));
            }
        for (pf_pixfmt fmt : fmts)
            for (int smooth = 1; smooth >= 0; smooth--) {
                pf_frame src = {};
                cv::Mat s = frame_mat(&src, fmt, W, H);
                if (smooth) fill_smooth(s);
                else g_rng.fill(s, cv::RNG::UNIFORM, 0, 256);
                const cv::Mat padded = pad_wrap(s);
                for (int layout = 0; layout < 2; layout++)
                    for (int nearest = 0; nearest < 2; nearest++) {
                        agg a;
                        for (int fs = 0; fs < 4; fs++) {
                            const int n = face_sizes[fs];
                            const int cw = layout == PF_CUBE_3X2 ? 3 * n : n;
                            const int ch = layout == PF_CUBE_3X2 ? 2 * n : 6 * n;
                            pf_frame dst[2] = {};
                            cv::Mat d[2];
                            for (int c = 0; c < 2; c++) {
                                d[c] = frame_mat(&dst[c], fmt, cw, ch);
                                d[c].setTo(cv::Scalar::all(0xCD));
                                CHECK_OK(pf_ops_equirect_to_cubemap(
                                    g_ops[c], &src, &dst[c], n, (pf_cube_layout)layout,
                                    nearest ? PF_INTERP_NEAREST : PF_INTERP_BILINEAR));
                            }
                            a.not_identical += !same_bytes(d[0], d[1]);
                            for (int face = 0; face < 6; face++) {
                                const vmap &m = maps[fs][face];
                                const cv::Rect r = layout == PF_CUBE_3X2
                                                       ? cv::Rect(face % 3 * n, face / 3 * n, n, n)
                                                       : cv::Rect(0, face * n, n, n);
                                cv::Mat o;
                                cv::remap(padded, o, m.mx, m.my,
                                          nearest ? cv::INTER_NEAREST : cv::INTER_LINEAR,
                                          cv::BORDER_REPLICATE);
                                for (int c = 0; c < 2; c++) {
                                    if (nearest) compare_nearest(m, s, d[c](r), o, a);
                                    else compare_bilinear(m, s, d[c](r), o, smooth, a);
                                }
                            }
                            pf_frame_unref(&dst[0]);
                            pf_frame_unref(&dst[1]);
                        }
                        char what[128];
                        snprintf(what, sizeof what, "ref+cpu %s %dx%d %s cube %s: %s",
                                 pf_pixfmt_name(fmt), W, H, smooth ? "smooth" : "noise",
                                 layout == PF_CUBE_3X2 ? "3x2" : "1x6",
                                 nearest ? "nearest" : "bilinear");
                        report(what, a, nearest, smooth ? 1 : noise_bound());
                    }
                pf_frame_unref(&src);
            }
    }
}

int main(void)
{
    pf_test_seed(20261128);
    g_rng = cv::RNG(pf_test_rand());
    cv::setNumThreads(1);
    for (int c = 0; c < 3; c++)
        for (int t = 0; t < 3; t++) {
            /* A random direction of length 2, and a phase. */
            double k[3], n2;
            do {
                for (int q = 0; q < 3; q++) k[q] = 2 * rand01() - 1;
                n2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
            } while (n2 < 0.01 || n2 > 1);
            for (int q = 0; q < 3; q++) g_k[c][t][q] = 2 * k[q] / sqrt(n2);
            g_k[c][t][3] = 2 * DPI * rand01();
        }
    make_views();
    if (pf_stream_create(NULL, &g_stream) != PF_OK) {
        fprintf(stderr, "stream: %s\n", pf_last_error());
        return 1;
    }
    for (int c = 0; c < 2; c++) {
        pf_ops_params op = pf_ops_params_default();
        op.stream = g_stream;
        op.reference = c == 0;
        if (pf_ops_create(&op, &g_ops[c]) != PF_OK) {
            fprintf(stderr, "ops: %s\n", pf_last_error());
            return 1;
        }
    }
    printf("OpenCV %s\n", CV_VERSION);
    PF_RUN(test_views);
    PF_RUN(test_cubemap);
    pf_ops_destroy(&g_ops[0]);
    pf_ops_destroy(&g_ops[1]);
    pf_stream_destroy(&g_stream);
    return pf_test_finish();
}
