/* The per-pixel arithmetic of the 360° reprojection, shared word for word by
 * the C reference (src/cpu/reproject_ref.c), the threaded CPU path
 * (src/cpu/reproject.c) and the CUDA kernel (src/cuda/reproject.cu).
 *
 * Why one shared source: the output is u8, and the project compares integer
 * outputs bit-exactly across implementations. That only works if every
 * implementation performs the same IEEE single-precision operations in the
 * same order. So:
 *   - only correctly rounded operations are used (+ - * / sqrt, floor,
 *     comparisons, conversions); no libm transcendental (glibc's atan2f and
 *     CUDA's atan2f differ in the last bits), atan2 is a polynomial below;
 *   - every arithmetic operation goes through RP_MUL/RP_ADD/RP_SUB/RP_DIV/
 *     RP_SQRT: on CUDA these are the __f*_rn intrinsics, which nvcc never
 *     contracts into FMAs; in C they are tiny functions, so no compiler fuses
 *     across them (GCC also leaves contraction off in ISO C mode, which the
 *     build uses: CMAKE_C_EXTENSIONS OFF);
 *   - the per-view constants (rotation, focal length) are computed once on the
 *     host by pf_rp_view_setup() (src/ops/reproject.c) and handed to every
 *     backend, so they are the same bits everywhere.
 * The accuracy of this float formula against the header's exact definition
 * (double precision, libm) is checked by tests/test_reproject.c.
 *
 * Coordinates: fx, fy returned by pf_rp_map() are in "pixel area" units of the
 * source: pixel x covers [x, x + 1), its centre is at x + 0.5. So
 *   nearest:  the pixel containing the point = (floor(fx), floor(fy))
 *   bilinear: centre-based coordinates sx = fx - 0.5, sy = fy - 0.5
 * which is ops.h's  x = (lon / 360° + 0.5) * W - 0.5  for the bilinear case. */
#ifndef PF_OPS_REPROJECT_MATH_H
#define PF_OPS_REPROJECT_MATH_H

#ifdef __CUDACC__
#define PF_RP_FN static __device__ __forceinline__
#define RP_MUL(a, b) __fmul_rn((a), (b))
#define RP_ADD(a, b) __fadd_rn((a), (b))
#define RP_SUB(a, b) __fsub_rn((a), (b))
#define RP_DIV(a, b) __fdiv_rn((a), (b))
#define RP_SQRT(a) __fsqrt_rn(a)
#else
#include <math.h>
#define PF_RP_FN static inline
/* Separate functions (not macros) so that even a compiler that contracts
 * a * b + c within one expression (clang's default) sees no such expression. */
static inline float pf_rp_mul_(float a, float b) { return a * b; }
static inline float pf_rp_add_(float a, float b) { return a + b; }
static inline float pf_rp_sub_(float a, float b) { return a - b; }
static inline float pf_rp_div_(float a, float b) { return a / b; }
#define RP_MUL(a, b) pf_rp_mul_((a), (b))
#define RP_ADD(a, b) pf_rp_add_((a), (b))
#define RP_SUB(a, b) pf_rp_sub_((a), (b))
#define RP_DIV(a, b) pf_rp_div_((a), (b))
#define RP_SQRT(a) sqrtf(a)
#endif

#define PF_RP_PI_F 3.14159265f
#define PF_RP_PI_2_F 1.57079633f
#define PF_RP_PI_4_F 0.78539816f
#define PF_RP_INV_2PI_F 0.159154943f
#define PF_RP_INV_PI_F 0.318309886f

/* Per-view constants (pf_rp_view_setup). The world ray of view pixel (i, j)
 * is M * (xc, yc, f) with xc = i + 0.5 - width / 2, yc = height / 2 - 0.5 - j
 * (both exact in float); columns 0 and 1 of the rotation M are stored, and
 * column 2 already multiplied by f. */
typedef struct pf_rp_view {
    float m00, m01, m10, m11, m20, m21; /* m<row><column> */
    float c0, c1, c2;                   /* f * column 2 */
    int width, height;
} pf_rp_view;

/* Camera coordinates of column i / row j (exact: half-integers < 2^17). */
PF_RP_FN float pf_rp_cam_x(int width, int i)
{
    return RP_ADD((float)i, RP_SUB(0.5f, RP_MUL(0.5f, (float)width)));
}
PF_RP_FN float pf_rp_cam_y(int height, int j)
{
    return RP_SUB(RP_SUB(RP_MUL(0.5f, (float)height), 0.5f), (float)j);
}

/* atan2(y, x) in radians. Octant reduction to a = min/max in [0, 1], then
 * Cephes' atanf: for a > tan(pi/8), atan(a) = pi/4 + atan((a - 1) / (a + 1)),
 * so the polynomial only sees |t| <= 0.4142. Measured max |error| against
 * libm's double atan2: 2.6e-7 rad (tests/test_reproject.c), 0.0003 source
 * pixels at 8K. atan2(0, 0) = 0.
 * pf_rp_atan2_q1 is the first-quadrant part, atan2(ay, ax) for ay, ax >= +0;
 * pf_rp_atan2 adds the quadrant steps. */
PF_RP_FN float pf_rp_atan2_q1(float ay, float ax)
{
    float mx = ax > ay ? ax : ay;
    float mn = ax > ay ? ay : ax;
    int big = mn > RP_MUL(0.414213562f, mx);
    float num = big ? RP_SUB(mn, mx) : mn;
    float den = big ? RP_ADD(mn, mx) : mx;
    /* den == 0 only when x = y = 0 (then num = 0): divide by 1 instead, so
     * the division needs no branch (a vectorising compiler cannot speculate
     * a division that might trap). */
    float t = RP_DIV(num, den > 0.0f ? den : 1.0f);
    float z = RP_MUL(t, t);
    float p = RP_SUB(RP_MUL(8.05374449538e-2f, z), 1.38776856032e-1f);
    p = RP_ADD(RP_MUL(p, z), 1.99777106478e-1f);
    p = RP_SUB(RP_MUL(p, z), 3.33329491539e-1f);
    p = RP_ADD(RP_MUL(RP_MUL(p, z), t), t);
    float r = big ? RP_ADD(PF_RP_PI_4_F, p) : p;
    return ay > ax ? RP_SUB(PF_RP_PI_2_F, r) : r;
}

PF_RP_FN float pf_rp_atan2(float y, float x)
{
    float r = pf_rp_atan2_q1(fabsf(y), fabsf(x));
    r = x < 0.0f ? RP_SUB(PF_RP_PI_F, r) : r;
    return y < 0.0f ? -r : r;
}

/* The row-constant part of the world ray: M[:,1] * yc + f * M[:,2]. */
typedef struct pf_rp_row {
    float bx, by, bz;
} pf_rp_row;

PF_RP_FN pf_rp_row pf_rp_row_base(const pf_rp_view *v, int j)
{
    float yc = pf_rp_cam_y(v->height, j);
    pf_rp_row r;
    r.bx = RP_ADD(RP_MUL(v->m01, yc), v->c0);
    r.by = RP_ADD(RP_MUL(v->m11, yc), v->c1);
    r.bz = RP_ADD(RP_MUL(v->m21, yc), v->c2);
    return r;
}

/* The steps of pf_rp_map_row, separately callable so the CPU path can
 * vectorise all but the square root (see src/cpu/reproject.c). */
PF_RP_FN void pf_rp_ray(const pf_rp_view *v, pf_rp_row row, int i, float *wx, float *wy,
                        float *wz)
{
    float xc = pf_rp_cam_x(v->width, i);
    *wx = RP_ADD(RP_MUL(v->m00, xc), row.bx);
    *wy = RP_ADD(RP_MUL(v->m10, xc), row.by);
    *wz = RP_ADD(RP_MUL(v->m20, xc), row.bz);
}

/* Longitude -> source x. */
PF_RP_FN float pf_rp_fx(float wx, float wz, int src_w)
{
    float lon = pf_rp_atan2(wx, wz);
    return RP_MUL(RP_ADD(RP_MUL(lon, PF_RP_INV_2PI_F), 0.5f), (float)src_w);
}

/* Squared length of the ray's horizontal part; its square root is h below. */
PF_RP_FN float pf_rp_horiz2(float wx, float wz) { return RP_ADD(RP_MUL(wx, wx), RP_MUL(wz, wz)); }

/* Latitude -> source y. latitude = asin(wy / |w|) = atan2(wy, h), h the
 * horizontal length: the atan2 form keeps full precision near the poles,
 * where asin is ill-conditioned. */
PF_RP_FN float pf_rp_fy(float wy, float h, int src_h)
{
    /* pf_rp_atan2(wy, h) without its x < 0 step, which never fires: h is a
     * square root of a sum of squares, >= +0 (same bits, fewer operations). */
    float r = pf_rp_atan2_q1(fabsf(wy), h);
    float lat = wy < 0.0f ? -r : r;
    return RP_MUL(RP_SUB(0.5f, RP_MUL(lat, PF_RP_INV_PI_F)), (float)src_h);
}

/* Source position (pixel-area units, see above) of view pixel (i, row). */
PF_RP_FN void pf_rp_map_row(const pf_rp_view *v, pf_rp_row row, int i, int src_w, int src_h,
                            float *fx, float *fy)
{
    float wx, wy, wz;
    pf_rp_ray(v, row, i, &wx, &wy, &wz);
    *fx = pf_rp_fx(wx, wz, src_w);
    *fy = pf_rp_fy(wy, RP_SQRT(pf_rp_horiz2(wx, wz)), src_h);
}

PF_RP_FN void pf_rp_map(const pf_rp_view *v, int i, int j, int src_w, int src_h, float *fx,
                        float *fy)
{
    pf_rp_map_row(v, pf_rp_row_base(v, j), i, src_w, src_h, fx, fy);
}

/* |lon| <= pi (+ an ulp) keeps fx within [-1, W] after floor, so one
 * conditional step wraps it. */
PF_RP_FN int pf_rp_wrap_x(int x, int w)
{
    x = x < 0 ? x + w : x;
    return x >= w ? x - w : x;
}

PF_RP_FN int pf_rp_clamp_y(int y, int h) { return y < 0 ? 0 : (y >= h ? h - 1 : y); }

/* floor(v) as an int, exact for |v| < 2^31 (source coordinates stay within
 * about [-1, 65537]). Truncation plus a correction instead of floorf: without
 * SSE4.1 floorf is a library call per use, and the two are the same value. */
PF_RP_FN int pf_rp_ifloor(float v)
{
    int i = (int)v;
    return (float)i > v ? i - 1 : i;
}

/* Nearest: the source pixel that contains the point. */
PF_RP_FN void pf_rp_nearest(float fx, float fy, int src_w, int src_h, int *x, int *y)
{
    *x = pf_rp_wrap_x(pf_rp_ifloor(fx), src_w);
    *y = pf_rp_clamp_y(pf_rp_ifloor(fy), src_h);
}

/* Bilinear: the four neighbours (columns x0, x1 wrapped, rows y0, y1
 * clamped) and the weights of x1 and y1. */
typedef struct pf_rp_taps {
    int x0, x1, y0, y1;
    float ax, ay;
} pf_rp_taps;

PF_RP_FN pf_rp_taps pf_rp_bilinear(float fx, float fy, int src_w, int src_h)
{
    float sx = RP_SUB(fx, 0.5f), sy = RP_SUB(fy, 0.5f);
    int x0 = pf_rp_ifloor(sx), y0 = pf_rp_ifloor(sy);
    pf_rp_taps t;
    t.ax = RP_SUB(sx, (float)x0); /* exact: in [0, 1) */
    t.ay = RP_SUB(sy, (float)y0);
    t.x0 = pf_rp_wrap_x(x0, src_w);
    t.x1 = t.x0 + 1 >= src_w ? 0 : t.x0 + 1;
    t.y0 = pf_rp_clamp_y(y0, src_h);
    t.y1 = pf_rp_clamp_y(y0 + 1, src_h);
    return t;
}

/* Blends one channel of the four taps (a + t * (b - a) twice, then along y)
 * and rounds half up: (int)(v + 0.5f), v in [0, 255]. The taps are byte
 * values converted to float (exact). */
PF_RP_FN unsigned char pf_rp_blend_f(float a, float b, float c, float d, float ax, float ay)
{
    float top = RP_ADD(a, RP_MUL(ax, RP_SUB(b, a)));
    float bot = RP_ADD(c, RP_MUL(ax, RP_SUB(d, c)));
    float v = RP_ADD(top, RP_MUL(ay, RP_SUB(bot, top)));
    return (unsigned char)(int)RP_ADD(v, 0.5f);
}

PF_RP_FN unsigned char pf_rp_blend(unsigned char p00, unsigned char p01, unsigned char p10,
                                   unsigned char p11, float ax, float ay)
{
    return pf_rp_blend_f((float)p00, (float)p01, (float)p10, (float)p11, ax, ay);
}

#endif
