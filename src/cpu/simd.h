/* Private: the x86 SIMD kernels of the CPU paths (src/cpu/simd_*.c), one
 * file per op.
 *
 * Contract shared by every kernel here
 * - Called only when pf_cpu_simd_level() (src/core/cpu_features.h) is at
 *   least the level the kernel needs; each kernel is compiled for that level
 *   with a per-function target attribute, so the rest of the library stays
 *   baseline x86-64.
 * - Bit-exact with the scalar CPU path and the C reference: the same IEEE
 *   float operations (mul, add, sub; never an FMA, never a reassociated
 *   sum) in the same order per output value, vectorised across output
 *   values only. The tests compare SIMD and scalar outputs with memcmp.
 * - A kernel does the part of a row it can do in whole vectors and returns
 *   how far it got; the caller finishes the row with the scalar code (so
 *   widths that are not a multiple of the vector width, and 1-pixel images,
 *   go through both).
 * - No kernel reads or writes outside the bytes its scalar counterpart
 *   touches. */
#ifndef PF_CPU_SIMD_H
#define PF_CPU_SIMD_H

#include <stddef.h>
#include <stdint.h>

#include "../core/cpu_features.h"

#if PF_HAVE_X86_SIMD
#define PF_TARGET_AVX2 __attribute__((target("avx2")))
#define PF_TARGET_AVX512 __attribute__((target("avx2,avx512f,avx512bw,avx512dq,avx512vl")))
/* AVX-512 with VBMI (byte permutes): callers also check pf_cpu_has_avx512vbmi() */
#define PF_TARGET_AVX512VBMI \
    __attribute__((target("avx2,avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi")))
#endif

/* YUV 4:2:0 row -> RGB24 (pf_cv_yuv_to_rgb per pixel, k = decoding
 * coefficients): y luma row, u and v the chroma row's first U and V samples,
 * cstep 2 (NV12) or 1 (I420). Converts the first pixels of the row in
 * blocks of 16 (an even count) and returns how many; 0 when the level has
 * no kernel. */
int pf_simd_yuv_to_rgb(int level, const float *k, const uint8_t *y, const uint8_t *u,
                       const uint8_t *v, int cstep, int w, uint8_t *rgb);

/* Morphology: o[x] = max (is_max) or min of b[x + k], k = 0 .. taps - 1
 * (n outputs, b holds n + taps - 1 bytes). Returns how many outputs it
 * wrote (a multiple of 32). */
int pf_simd_minmax_taps(int level, uint8_t *o, const uint8_t *b, int taps, int n, int is_max);

/* Morphology, vertical: o[x] = max/min over rows[0 .. nrows)[x], n bytes.
 * Returns how many it wrote (a multiple of 32). */
int pf_simd_minmax_rows(int level, uint8_t *o, const uint8_t *const *rows, int nrows, int n,
                        int is_max);

/* Feather and blur, horizontal: o[x] = ((0 + w[0] b[x]) + w[1] b[x + step])
 * + ... over taps weights (the reference's order, no FMA; step 1 for a
 * mask, 3 for interleaved R, G, B). Returns how many of the n outputs it
 * wrote. */
int pf_simd_fir_taps(int level, float *o, const float *b, const float *w, int taps, int step,
                     int n);

/* Feather and blur, vertical: o[x] = ((0 + w[0] rows[0][x]) + w[1] rows[1][x]) + ...
 * Returns how many of the n outputs it wrote. */
int pf_simd_fir_rows(int level, float *o, const float *const *rows, const float *w, int taps,
                     int n);

/* Bilinear horizontal pass of u8 rows (resize.c's hpass, bilinear, u8, any
 * channel count), planned once per call: m = dw * C output values, value v
 * (pixel v / C, channel v % C) = w0[v] row[ia[v]] + w1[v] row[ib[v]] (the
 * reference's products and sum). The plan's arrays live in the caller's
 * scratch (pf_simd_bilin_bytes()). */
typedef struct pf_simd_bilin {
    int m, row_bytes;     /* values per output row; bytes per source row (sw * C) */
    int32_t *ia, *ib;     /* per value: source byte indices */
    float *w0, *w1;       /* per value: weights */
    int safe;             /* AVX2 gathers read 4 bytes: values [0, safe) stay inside */
    int32_t *base;        /* AVX-512 VBMI, per block of 16 values: first byte of its
                             128-byte window, -1 when the block spans more */
    uint8_t *rel;         /* per block: 16 + 16 byte offsets into the window (a, b) */
} pf_simd_bilin;

/* Scratch bytes for a plan of m values. */
size_t pf_simd_bilin_bytes(int m);

/* Fills the plan in mem from per-pixel taps k[2i], k[2i + 1] and weights
 * w[2i], w[2i + 1]: dw output pixels of C values; value c of a pixel reads
 * byte off[c] (off NULL: c) of the source pixel, bpp bytes apart; the
 * kernels read only bytes [0, row_bytes) of a source row. */
void pf_simd_bilin_plan(pf_simd_bilin *p, void *mem, const int32_t *k, const float *w, int dw,
                        int C, int bpp, const int *off, int row_bytes);

/* h[0 .. m) for one source row; returns m (the whole row, tail included). */
int pf_simd_bilinear_h_u8(int level, const pf_simd_bilin *p, const uint8_t *row, float *h);

/* u8 row of n values: round(w0 h0[x] + w1 h1[x]) clamped (resize.c's
 * vblend of two rows and store_row). Returns how many it wrote. */
int pf_simd_blend2_u8(int level, uint8_t *d, const float *h0, const float *h1, float w0, float w1,
                      int n);

/* Reprojection (reproject.c): whether the row kernel applies to the job
 * (bilinear, 3 or 4 channels, source width >= 2, byte offsets within 31
 * bits), and the kernel: view v's row j, pixels [i0, done) in whole vectors
 * with done <= i1, into out (the row's start); returns done. Source
 * coordinates (index i of the row): read from cfx, cfy when not NULL (a map
 * the kernel stored earlier), else computed, and stored into sfx, sfy when
 * those are not NULL. */
struct pf_rp_job;
int pf_simd_reproject_ok(int level, const struct pf_rp_job *job);
int pf_simd_reproject_row(int level, const struct pf_rp_job *job, int v, int j, int i0, int i1,
                          uint8_t *out, const float *cfx, const float *cfy, float *sfx,
                          float *sfy);

/* Composite (composite.c), AVX-512 only. YUV 4:2:0 row -> R, G, B floats
 * (pf_cmp_yuv2rgb per pixel, clamped to [0, 255]): y, u, v at an even
 * pixel, cstep 2 (NV12) or 1 (I420); converts the first pixels in blocks of
 * 16 and returns how many (0 without AVX-512). */
int pf_simd_yuv_to_rgbf(int level, const float *k, const uint8_t *y, const uint8_t *u,
                        const uint8_t *v, int cstep, int n, float *out);

/* Bilinear rows of R, G, B floats (composite.c's lerp_rows), planned once
 * per call from per-pixel column taps. */
typedef struct pf_simd_lerp3_map {
    int m, src_floats;    /* 3 w output values; 3 src_w floats per source row */
    int32_t *ia, *ib;     /* per value: source float indices */
    float *f;             /* per value: column weight */
    int32_t *base;        /* per block of 16 values: first float of a 32-float window, or -1 */
} pf_simd_lerp3_map;

size_t pf_simd_lerp3_bytes(int w);

/* Taps of pixel x at k0 + x * tap_stride bytes (k1, f likewise). */
void pf_simd_lerp3_plan(pf_simd_lerp3_map *p, void *mem, const int32_t *k0, const int32_t *k1,
                        const float *f, size_t tap_stride, int w, int src_w);

/* out[0 .. 3w) from rows r0, r1 and the row weight fy; returns 1, or 0 (nothing
 * done) without AVX-512. */
int pf_simd_lerp3(int level, const pf_simd_lerp3_map *p, const float *r0, const float *r1, float fy,
                  float *out);

/* Preprocess (preprocess.c), AVX-512 only: out[c][i] = acc[3 i + src_c[c]]
 * * sc[c] + bi[c] for i < n in blocks of 16; returns how many (0 without
 * AVX-512). */
int pf_simd_planar3_affine(int level, const float *acc, int n, const float *sc, const float *bi,
                           const int *src_c, float *const *out);

#endif
