/* pixflow/ops.h - image kernels on the CPU and CUDA backends.
 *
 * Every operation has a plain C reference (the definition of correct), a
 * multi-threaded CPU path and a CUDA kernel. Which one runs is decided by the
 * device of the stream in the pf_ops context; inputs and outputs must live
 * where that device can read them (host memory for the CPU; device memory for
 * CUDA, pinned host memory works too but is slow). Nothing allocates per call:
 * scratch memory grows once, on the first call that needs it.
 *
 * On x86-64 the CPU path runs AVX2 or AVX-512 kernels where the CPU has them
 * (YUV -> RGB decoding, bilinear resize of u8 images, feather, morphology,
 * bilinear reprojection of 3- and 4-channel images, parts of composite and
 * preprocess), chosen at run time; the environment variable
 * PF_CPU_SIMD=none|avx2 caps the choice. They evaluate the same
 * single-precision operations in the same order as the scalar path (no
 * fused multiply-adds, no fixed point), so every statement below about the
 * CPU path's agreement with the reference and with CUDA holds for them
 * unchanged: identical bytes where it says so. With them, a CPU context
 * keeps the reprojection's source coordinates between calls with the same
 * views and source size: host memory of 8 bytes per view pixel (none above
 * 256 MiB), held until pf_ops_destroy.
 *
 *   pf_ops_params op = pf_ops_params_default();
 *   op.stream = stream;                 // CUDA stream: kernels; CPU stream: threads
 *   pf_ops *ops = NULL;
 *   pf_ops_create(&op, &ops);
 *
 *   pf_view views[2] = {{.yaw = 0, .fov = 90, .width = 1920, .height = 1080},
 *                       {.yaw = 90, .fov = 90, .width = 1920, .height = 1080}};
 *   pf_frame *outs[2] = {&v0, &v1};     // allocated by the caller, RGB24 like src
 *   pf_ops_equirect_to_views(ops, &equirect, views, outs, 2, PF_INTERP_BILINEAR);
 *   pf_stream_synchronize(stream);
 *
 * All calls are asynchronous on CUDA (ordered on the context's stream) and
 * synchronous on the CPU. A pf_ops context is used by one thread at a time.
 */
#ifndef PIXFLOW_OPS_H
#define PIXFLOW_OPS_H

#include <stdbool.h>

#include "device.h"
#include "frame.h"
#include "tensor.h"
#include "thread.h"

PF_BEGIN_DECLS

/* Context ------------------------------------------------------------------- */

typedef struct pf_ops pf_ops;

typedef struct pf_ops_params {
    pf_stream *stream;        /* required; its device picks the backend */
    pf_threadpool *pool;      /* CPU paths: NULL = the context makes its own with
                                 pf_cpu_count() threads; borrowed, must outlive ops */
    bool reference;           /* CPU only: run the plain C references (one thread);
                                 for tests and checkers */
} pf_ops_params;

PF_API pf_ops_params pf_ops_params_default(void);
PF_API pf_status pf_ops_create(const pf_ops_params *p, pf_ops **out);
PF_API void pf_ops_destroy(pf_ops **ops);
PF_API pf_stream *pf_ops_stream(const pf_ops *ops);

/* Sampling ---------------------------------------------------------------------
 *
 * Pixel centres are at half-integer coordinates: destination pixel (i, j) of a
 * resize from W x H to w x h samples the source at
 * ((i + 0.5) * W / w - 0.5, (j + 0.5) * H / h - 0.5) (OpenCV's INTER_LINEAR and
 * PyTorch's align_corners=False). Bilinear clamps to the edge pixels. Nearest
 * takes floor((i + 0.5) * W / w) (clamped). Area averages every source pixel
 * the destination pixel covers, weighted by overlap (OpenCV's INTER_AREA for
 * downscales; it falls back to bilinear for upscales, as OpenCV does). */
typedef enum pf_interp {
    PF_INTERP_NEAREST = 0,
    PF_INTERP_BILINEAR = 1,
    PF_INTERP_AREA = 2
} pf_interp;

/* YUV <-> RGB matrices and ranges for NV12/I420 sources. */
typedef enum pf_yuv_matrix { PF_YUV_BT601 = 0, PF_YUV_BT709 = 1 } pf_yuv_matrix;
typedef enum pf_yuv_range { PF_YUV_LIMITED = 0, PF_YUV_FULL = 1 } pf_yuv_range;

/* Fused preprocess ----------------------------------------------------------------
 *
 * One pass from N source frames (RGB24, BGR24, RGBA, NV12, I420; any sizes and
 * strides, mixed in one batch) to one batch tensor: optional crop (roi) ->
 * resize or letterbox -> channel order -> normalise -> layout -> dtype.
 *   out[c] = (x[c] / 255 - mean[c]) / std[c]     (x in the source's 0..255)
 * dst: [N, 3, H, W] (PF_LAYOUT_NCHW) or [N, H, W, 3] (PF_LAYOUT_NHWC), dtype
 * PF_DTYPE_F32 or PF_DTYPE_F16, contiguous, on the context's device.
 * Letterbox keeps the aspect ratio: the scaled content (content_w x content_h,
 * rounded to nearest) is centred (pad_left = (W - content_w) / 2, likewise
 * top) and the rest is filled with pad_value (in 0..255 source units, then
 * normalised like pixels). The transform is reported per frame so boxes can
 * be mapped back: src_x = roi.x + (dst_x - pad_left) / scale_x.
 *
 * Geometry. Without letterbox the content box is the whole destination. With
 * it, s = min(W / roi.width, H / roi.height), content_w = round(roi.width * s)
 * (halves away from zero, at least 1), likewise content_h; scale_x =
 * content_w / roi.width and scale_y = content_h / roi.height exactly, so the
 * content box's edges map onto the ROI's edges. Content pixel (i, j) samples
 * the ROI as in Sampling with W x H = roi size and w x h = content size; taps
 * clamp to the ROI's edge pixels, so pixels outside the ROI never contribute.
 * Area is decided per axis: an axis that shrinks or keeps its size uses
 * overlap weights, an axis that grows uses the bilinear weights.
 *
 * YUV sources are converted per source pixel and then interpolated: each
 * tap is converted from its own Y and the chroma sample covering it (frame
 * coordinates (x / 2, y / 2): no chroma interpolation), clamped to 0..255 and
 * kept as a real number (not rounded), then the taps are weighted as for RGB.
 * With u = U - 128, v = V - 128 and y' = (Y - y_off) * y_scale:
 *   R = y' + rv * v,   G = y' - gu * u - gv * v,   B = y' + bu * u
 * where (from Kr, Kb = 0.299, 0.114 for BT.601 and 0.2126, 0.0722 for BT.709;
 * limited range scales chroma by 255/224 and Y by 255/219 after taking 16 off)
 *   matrix  range    y_off  y_scale   rv        gu        gv        bu
 *   BT.601  limited  16     1.164384  1.596027  0.391762  0.812968  2.017232
 *   BT.601  full      0     1         1.402     0.344136  0.714136  1.772
 *   BT.709  limited  16     1.164384  1.792741  0.213249  0.532909  2.112402
 *   BT.709  full      0     1         1.5748    0.187324  0.468124  1.8556
 * (rv = 2 (1 - Kr), bu = 2 (1 - Kb), gu = 2 Kb (1 - Kb) / Kg,
 * gv = 2 Kr (1 - Kr) / Kg, Kg = 1 - Kr - Kb; the code computes these in
 * double and uses them rounded once to float.) The defaults (zero values) are
 * BT.601 limited; HD video is usually BT.709.
 *
 * Precision. The plain C reference (pf_ops_params.reference) computes in
 * double; the CPU path and the CUDA kernel in float with the same taps and
 * weights (integer-exact coordinates). f16 output rounds to nearest even. Per
 * channel, with R = 1 / |std| and B = |mean / std|, the CPU path agrees with
 * the reference within 1e-5 (R + B) for f32 output and 1 ulp for f16 (the
 * CUDA kernel: 1e-4 (R + B), or 1 ulp).
 *
 * Errors (all checked before anything is written): PF_ERR_INVALID for NULL ops, srcs, srcs[i] or
 * dst, n < 1 or n != dst->shape[0], a frame with a bad size, stride, plane or
 * buffer range, a ROI that is empty or not inside its frame, dst not 4-D,
 * layout not NCHW/NHWC, channel dimension != 3, interp, matrix or range out
 * of range, pad_value outside 0..255, std[c] zero or not finite, mean[c] not
 * finite; PF_ERR_UNSUPPORTED for a GRAY8 source, dtype other than f32/f16, a
 * non-contiguous dst, and memory the context's device cannot reach (CPU:
 * another device's memory; CUDA: anything but its own device memory or
 * page-locked memory from a CUDA allocation); PF_ERR_DEVICE when a CUDA
 * launch fails. Batches of more than 64 frames are processed 64 at a time
 * (one CUDA launch each). */

typedef struct pf_rect {
    int x, y, width, height;
} pf_rect;

typedef struct pf_preprocess_params {
    pf_interp interp;         /* default bilinear */
    bool letterbox;
    float pad_value;          /* 0..255, default 114 (what YOLO-style models expect) */
    bool bgr;                 /* output channel order: false = RGB (default) */
    float mean[3], std[3];    /* in output channel order; default 0 and 1 */
    pf_yuv_matrix matrix;     /* NV12/I420 sources */
    pf_yuv_range range;
} pf_preprocess_params;

typedef struct pf_letterbox_info {
    float scale_x, scale_y;   /* destination pixels per source pixel */
    int pad_left, pad_top;
    int content_width, content_height;
} pf_letterbox_info;

PF_API pf_preprocess_params pf_preprocess_params_default(void);

/* srcs[n] frames, rois NULL (whole frames) or n rectangles inside them,
 * info NULL or n entries to fill. n == dst->shape[0]. p NULL = the defaults
 * (pf_preprocess_params_default()). On a CPU context created with
 * `reference` set, runs the plain C reference (ignored on CUDA). */
PF_API pf_status pf_ops_preprocess(pf_ops *ops, const pf_frame *const *srcs, const pf_rect *rois,
                                   int n, pf_tensor *dst, const pf_preprocess_params *p,
                                   pf_letterbox_info *info);

/* 360° reprojection -----------------------------------------------------------------
 *
 * Equirectangular source of W x H pixels: pixel (x, y) is centred at
 *   longitude = ((x + 0.5) / W - 0.5) * 360°,  latitude = (0.5 - (y + 0.5) / H) * 180°
 * (the centre column looks forward, the top row is the zenith). Longitude
 * wraps around; latitude clamps at the poles.
 *
 * A view: yaw, pitch, roll, fov in degrees (fov horizontal, 0 < fov < 180),
 * width x height pixels, square pixels. For view pixel (i, j), with
 * f = (width / 2) / tan(fov / 2), the camera ray is
 *   d = (i + 0.5 - width / 2, -(j + 0.5 - height / 2), f)
 * in a frame with x right, y up, z forward. The world ray is
 * R_yaw(R_pitch(R_roll(d))) with
 *   R_roll(t):  (x, y, z) -> (x cos t + y sin t, -x sin t + y cos t, z)   roll > 0 dips the right side
 *   R_pitch(p): (x, y, z) -> (x, y cos p + z sin p, -y sin p + z cos p)   pitch > 0 looks up
 *   R_yaw(a):   (x, y, z) -> (x cos a + z sin a, y, -x sin a + z cos a)   yaw > 0 turns right
 * and longitude = atan2(dx, dz), latitude = asin(dy / |d|). The source is
 * then sampled at x = (lon / 360° + 0.5) * W - 0.5, y = (0.5 - lat / 180°) * H - 0.5
 * (bilinear: four neighbours, x wrapping, y clamped; nearest: the pixel that
 * contains the point).
 *
 * Coordinates are computed in the kernel; several views of one source are
 * produced by one launch. Source and outputs: RGB24, BGR24, RGBA or GRAY8 (all
 * the same format).
 *
 * Rounding and precision. Bilinear blends the four taps in float and rounds
 * half up ((int)(v + 0.5f)); nearest takes pixel (floor(x + 0.5),
 * floor(y + 0.5)), x wrapped, y clamped. Every backend, the C reference
 * included, evaluates one single-precision formula (atan2 by a shared
 * polynomial, no fused multiply-adds, per-view constants computed once in
 * double), so CPU and CUDA outputs are identical bytes; that formula stays
 * within about 0.001 source pixels of the exact definition above at 8K.
 * Angles may be any finite value: they are reduced modulo 360° (yaw and
 * yaw + 360 give the same output when both are exact in float), and pitch
 * beyond ±90° looks over the pole.
 *
 * Memory: on the CPU host, pinned or CPU-device memory; on CUDA device memory
 * of the context's GPU or pinned memory (not pageable). Outputs must not
 * overlap the source or each other (views side by side in one mosaic frame
 * are fine). Errors, all checked before anything is written: PF_ERR_INVALID
 * for NULL arguments, n outside 1..64, a frame with a bad size, stride or
 * buffer range, a dst whose format or size does not match, fov outside
 * (0, 180), non-finite angles, sizes < 1, overlaps, face_size < 1 or a cube
 * map dst of the wrong size; PF_ERR_UNSUPPORTED for NV12/I420 sources,
 * PF_INTERP_AREA and memory the device cannot reach; PF_ERR_DEVICE when a
 * CUDA launch fails. On a CPU context created with `reference` set the plain
 * C reference runs (the flag is ignored on CUDA). */

typedef struct pf_view {
    float yaw, pitch, roll, fov;  /* degrees */
    int width, height;
} pf_view;

/* Reprojects `src` into n views; dsts[i] must be views[i].width x height in
 * src's format. At most 64 views per call. */
PF_API pf_status pf_ops_equirect_to_views(pf_ops *ops, const pf_frame *src, const pf_view *views,
                                          pf_frame *const *dsts, int n, pf_interp interp);

/* Cube map faces in the order +X (right, yaw 90), -X (left, yaw -90),
 * +Y (up, pitch 90), -Y (down, pitch -90), +Z (front, yaw 0), -Z (back,
 * yaw 180); each face is a 90° view of face_size x face_size (up and down
 * faces have the front direction towards their bottom / top edge
 * respectively, i.e. pitch ±90 with yaw 0 and roll 0).
 * Layout 3x2: row 0 = +X -X +Y, row 1 = -Y +Z -Z; 1x6: one column, same
 * order top to bottom. dst must be (3 * size) x (2 * size) or size x (6 * size). */
typedef enum pf_cube_layout { PF_CUBE_3X2 = 0, PF_CUBE_1X6 = 1 } pf_cube_layout;

/* The view that renders cube face `face` (0..5, order above). */
PF_API pf_status pf_cube_face_view(int face, int face_size, pf_view *out);

PF_API pf_status pf_ops_equirect_to_cubemap(pf_ops *ops, const pf_frame *src, pf_frame *dst,
                                            int face_size, pf_cube_layout layout,
                                            pf_interp interp);

/* Colour conversion -----------------------------------------------------------------
 *
 * Converts between any two of RGB24, BGR24, RGBA, GRAY8, NV12 and I420 of the
 * same size. Every conversion goes through 8-bit R, G, B: the source pixel is
 * decoded, then encoded into the destination format.
 *   Decode. RGB24/BGR24/RGBA: the channels (RGBA's alpha is dropped); GRAY8:
 *   R = G = B = gray; NV12/I420: the pixel's own Y and the chroma sample of
 *   its 2x2 block, with the matrices of the preprocess section, rounded.
 *   Encode. RGB24/BGR24/RGBA: the channels (RGBA alpha 255); GRAY8: the
 *   BT.601 luma (0.299 R + 0.587 G) + 0.114 B, full range, whatever
 *   the matrix (so NV12 -> GRAY8 equals NV12 -> RGB24 -> GRAY8, not the Y
 *   plane); NV12/I420: with Y' = Kr R + Kg G + Kb B (Kr, Kb of the matrix),
 *     Y = y_off + Y' / y_scale,   U = 128 + (B - Y') / bu,   V = 128 + (R - Y') / rv
 *   (the table's values: limited range gives Y 16..235 and chroma 16..240),
 *   luma per pixel, chroma per 2x2 block from the mean R, G, B of the pixels
 *   the block has (edge blocks of odd sizes: 1 or 2).
 * NV12 <-> I420 moves the samples unchanged (no matrix involved); a format
 * converted to itself is a copy (pf_memcpy2d_async per plane).
 * Rounding. Each output byte is computed in single precision from
 * coefficients computed in double and rounded once to float, in a fixed order
 * of operations without fused multiply-adds, then clamped to [0, 255] and
 * rounded half up ((int)(v + 0.5f)). The reference, the CPU path and the
 * CUDA kernel produce identical bytes (tests compare all 2^24 YUV and RGB
 * inputs). Against OpenCV's cvtColor (BT.601 limited, fixed point) the
 * results are at most 1 apart for Y >= 16; OpenCV clamps Y - 16 at 0 before
 * the matrix, this does not, so Y < 16 with colour gives darker values here.
 * Memory and errors: as for pf_ops_resize below. On CUDA one launch per
 * frame; asynchronous on the context's stream. */

typedef struct pf_color_params {
    pf_yuv_matrix matrix;     /* default BT.601 */
    pf_yuv_range range;       /* default limited */
} pf_color_params;

/* The matrix and range to convert frame f's YUV with (its pf_color_info,
 * completed by pf_color_effective): BT.709 for MatrixCoefficients 1 and
 * for BT.2020 (9, 10: the nearest these kernels have; not exact), BT.601
 * for the rest. f NULL = BT.601 limited. What stages pass for a frame's own
 * colour. */
PF_API pf_color_params pf_color_params_for(const pf_frame *f);

/* p NULL = BT.601 limited. src and dst sizes must match; same format = copy. */
PF_API pf_status pf_ops_convert(pf_ops *ops, const pf_frame *src, pf_frame *dst,
                                const pf_color_params *p);

/* Resize ------------------------------------------------------------------------------
 *
 * u8 frames of any format (src and dst the same format) and f32 masks, with
 * the Sampling section's rules. NV12/I420 planes are resized separately,
 * chroma at chroma size ((W + 1) / 2 x (H + 1) / 2 -> (w + 1) / 2 x
 * (h + 1) / 2; NV12's UV pairs as 2-channel pixels). Area is decided per
 * axis: an axis that shrinks or keeps its size averages by overlap, an axis
 * that grows uses the bilinear weights (OpenCV instead switches the whole
 * image to a sharper "area" upscale).
 * Arithmetic. Weights are exact fractions rounded once to float: bilinear
 * fx = ((2i + 1) W - w mod 2w) / 2w (the sample position's fraction), weights
 * 1 - fx and fx; area weight = overlap / (W / w). A value is
 *   v = sum over row taps t of wy_t * (sum over column taps s of wx_s * p(s, t))
 * in single precision, each sum in increasing source order from its first
 * product, no fused multiply-adds; u8 results are clamped to [0, 255] and
 * rounded half up ((int)(v + 0.5f)), f32 results are v; nearest copies the
 * sample. So the reference, the CPU path and the CUDA kernel produce
 * identical bytes, u8 and f32.
 * Correspondence (tests/test_opencv_oracle.cpp measures it): bilinear =
 * OpenCV INTER_LINEAR and PyTorch bilinear with align_corners=False,
 * antialias=False (OpenCV's u8 path uses 11-bit fixed-point weights: at most
 * 1 apart); area on downscales = OpenCV INTER_AREA and PyTorch area/adaptive
 * average pooling for integer factors (exact block means; OpenCV rounds
 * halves to even except at 2x, so at most 1 apart); nearest = PyTorch
 * nearest-exact, and OpenCV INTER_NEAREST_EXACT except where the sample
 * position is an exact integer (every pixel of an even-factor downscale),
 * where OpenCV takes the pixel before; not OpenCV INTER_NEAREST or PyTorch
 * "nearest", which take floor(i * W / w).
 * Memory: on the CPU host, pinned or CPU-device memory; on CUDA device memory
 * of the context's GPU or pinned memory (not pageable). src and dst must not
 * overlap. Errors, all checked before anything is written: PF_ERR_INVALID for
 * NULL arguments, an unknown format, a size outside 1..PF_FRAME_MAX_DIM, a
 * bad plane count, data pointer, stride or buffer range, src and dst formats
 * (resize) or sizes (convert) that differ, interp, matrix or range out of
 * range, overlapping src and dst, and for masks: fewer than 2 or unequal
 * numbers of dims, leading dims that differ, an empty dim, H or W above
 * PF_FRAME_MAX_DIM; PF_ERR_UNSUPPORTED for a mask that is not f32 or not
 * contiguous, and memory the context's device cannot reach; PF_ERR_DEVICE
 * when a CUDA launch fails. On CUDA one launch per plane (a mask tensor: one
 * launch for all its planes); asynchronous on the context's stream. On a CPU
 * context created with `reference` set the plain C references run (for
 * pf_ops_convert too). */

PF_API pf_status pf_ops_resize(pf_ops *ops, const pf_frame *src, pf_frame *dst, pf_interp interp);

/* src and dst f32 tensors whose last two dims are H and W; all leading dims
 * must match (e.g. [N, 1, H, W] -> [N, 1, h, w]). Contiguous. Values are not
 * clamped (logits work as well as probabilities). */
PF_API pf_status pf_ops_resize_mask(pf_ops *ops, const pf_tensor *src, pf_tensor *dst,
                                    pf_interp interp);

/* Mask post-processing ------------------------------------------------------------------
 *
 * Model outputs to masks. Tensors are contiguous; "[..., H, W]" means any
 * leading dims (batch, one channel). A tensor with a zero dimension is valid
 * and nothing is done. Inputs and outputs may not overlap in memory.
 *
 * Arithmetic (single precision, the same formula on every backend):
 *   sigmoid(x) = 1.0f / (1.0f + expf(-x))
 *   softmax: m = the maximum over c (the first one), s = sum over c = 0..C-1
 *            of expf(x_c - m) accumulated in that order,
 *            prob = expf(x_cls - m) / s
 * f16 inputs are converted to float exactly first. The CPU path produces the
 * same bits as the plain C reference (pf_ops_params.reference). CUDA uses
 * CUDA's expf (within 2 ulp of glibc's): labels and thresholds of
 * probabilities are identical; a logit whose sigmoid lies within about 1e-7
 * (the test allows 1e-6) of the threshold may land on the other side; prob
 * agrees within 1e-5 relative. NaN inputs threshold to 0; their labels and
 * probabilities are unspecified.
 *
 * Errors, all checked before anything is written: PF_ERR_INVALID for NULL
 * ops, src, dst, a tensor with a bad ndim, dtype value, negative dimension,
 * NULL data or a byte range outside its buffer, shapes that do not match, a
 * non-finite threshold, src not 4-D or its layout not NCHW/NHWC, C = 0,
 * C > 255 with labels, cls outside 0..C-1 with prob, labels and prob both
 * NULL, overlapping tensors; PF_ERR_UNSUPPORTED for a dtype other than the
 * ones listed, a non-contiguous tensor, and memory the context's device
 * cannot reach (CPU: another device's memory; CUDA: anything but its own
 * device memory or page-locked memory from a CUDA allocation);
 * PF_ERR_DEVICE when a CUDA launch fails. Messages name the argument and the
 * value. */

/* dst (u8, same shape as src) = 255 where p >= threshold else 0, with
 * p = src (probabilities) or sigmoid(src) when `logits`. src f32 or f16; any
 * finite threshold. */
PF_API pf_status pf_ops_mask_threshold(pf_ops *ops, const pf_tensor *src, bool logits,
                                       float threshold, pf_tensor *dst);

/* src f32 or f16 logits [N, C, H, W] (NCHW) or [N, H, W, C] (NHWC, by layout).
 * labels (u8 [N, H, W], may be NULL) = argmax over C (lowest index wins ties;
 * C <= 255). prob (f32 [N, H, W], may be NULL) = softmax probability of class
 * `cls` (0 <= cls < C): the soft person mask. At least one output. cls is
 * checked only when prob is asked for, and C <= 255 only when labels are. */
PF_API pf_status pf_ops_mask_argmax(pf_ops *ops, const pf_tensor *src, pf_tensor *labels,
                                    pf_tensor *prob, int cls);

/* Mask refinement -------------------------------------------------------------------------
 *
 * Same conventions, memory rules and errors as Mask post-processing (plus:
 * PF_ERR_INVALID for alpha outside (0, 1], sigma outside (0, 64], radius
 * outside 1..64, an unknown morphology op, fewer than 2 dimensions for
 * feather and morph, or H or W above 65536). Feather and morph pass through
 * intermediate planes in the context's scratch memory, which grows on the
 * first call that needs more (synchronizing the stream): make one call of
 * each size before capturing a CUDA graph. */

/* Exponential smoothing across frames for stable masks:
 * state = alpha * mask + (1 - alpha) * state, in place; with `reset` (first
 * frame of a stream, or after a cut) state = mask. f32 [H, W] (or any equal
 * shapes), 0 < alpha <= 1. The caller keeps one state tensor per stream.
 * Evaluated as alpha * mask + (1.0f - alpha) * state in float with two
 * roundings (no fused multiply-add), identical on every backend. */
PF_API pf_status pf_ops_mask_temporal(pf_ops *ops, pf_tensor *state, const pf_tensor *mask,
                                      float alpha, bool reset);

/* pf_ops_mask_temporal that also starts over at a scene cut: when the mean absolute difference
 * between mask and state, (1/n) * sum |mask - state|, exceeds `cut` (0 < cut <= 1; 0 = never),
 * state = mask as with reset, so the previous shot's mask does not ghost into the new one for
 * several frames. Masks are probabilities in [0, 1]: a cut of 0.1 means a tenth of the frame
 * changed from person to background (or the reverse) at once; a person moving between frames
 * stays far below it. The CPU sums in double in index order; CUDA sums in float on the device
 * (no host round trip), so a mean within float rounding of `cut` may be decided differently.
 * Errors as pf_ops_mask_temporal, and PF_ERR_INVALID for cut outside [0, 1]. */
PF_API pf_status pf_ops_mask_temporal_cut(pf_ops *ops, pf_tensor *state, const pf_tensor *mask,
                                          float alpha, float cut, bool reset);

/* Feathering: separable Gaussian blur of an f32 mask [..., H, W], standard
 * deviation `sigma` pixels (0 < sigma <= 64), kernel radius ceil(3 sigma),
 * weights normalised to sum 1, edges clamped. src and dst may not alias.
 * Precisely: R = ceil(3 sigma), w[k] = exp(-k^2 / (2 sigma^2)) / (sum over
 * j = -R..R of the same), k = -R..R, computed in double and rounded to float
 * once; a horizontal pass then a vertical pass, each output
 *   acc = 0; for k = -R..R: acc += w[k] * in[clamp(i + k)]
 * in float in that order (the horizontal result is kept in float). The CPU
 * path produces the reference's bits; CUDA uses fused multiply-adds and
 * agrees within 1e-5 relative for masks in [0, 1] (non-negative inputs). */
PF_API pf_status pf_ops_mask_feather(pf_ops *ops, const pf_tensor *src, pf_tensor *dst,
                                     float sigma);

typedef enum pf_morph_op {
    PF_MORPH_ERODE = 0,
    PF_MORPH_DILATE = 1,
    PF_MORPH_OPEN = 2,    /* erode then dilate: removes specks */
    PF_MORPH_CLOSE = 3    /* dilate then erode: fills holes */
} pf_morph_op;

/* Morphology on a u8 mask [..., H, W] with a (2 radius + 1)^2 square
 * (separable min/max), pixels outside the image ignored; 1 <= radius <= 64.
 * src and dst may not alias. Any u8 values (not only 0/255): erode takes the
 * minimum and dilate the maximum over the window clipped to the image.
 * Exact on every backend. */
PF_API pf_status pf_ops_mask_morph(pf_ops *ops, const pf_tensor *src, pf_tensor *dst,
                                   pf_morph_op op, int radius);

/* Compositing ----------------------------------------------------------------------------
 *
 * out = m * frame + (1 - m) * background, per pixel, m in [0, 1] from the
 * mask (f32 in 0..1, or u8 / 255; a mask of another size is sampled
 * bilinearly at the frame's pixel centres, so a 256x256 model mask needs no
 * separate resize). The frame is RGB24, BGR24, RGBA (its alpha is ignored),
 * NV12 or I420; the output, of the frame's size, RGB24, BGR24, RGBA (alpha =
 * round(255 m): a mask usable as transparency) or NV12.
 *
 *   pf_background bg = {.kind = PF_BG_BLUR, .blur_sigma = 12};   // BT.601 limited YUV
 *   pf_ops_composite(ops, &frame, &mask, &bg, &out);   // mask: the model's [1,1,256,256] f32
 *
 * Definition. Every backend (C reference, CPU threads, CUDA) evaluates the
 * formulas below in IEEE single precision, operation by operation in the
 * order written, without fused multiply-adds (constants computed in double
 * and rounded once to float), so all three give identical bytes.
 *
 * Axis taps (mask, image and blur upsampling): frame index i of an axis of c
 * pixels reads a source axis of r pixels at s = ((2i + 1) r - c) / (2c)
 * (Sampling's (i + 0.5) r / c - 0.5 as an exact fraction); k = floor(s), the
 * weight f = (s - k) rounded once to float, taps k and k + 1 clamped to
 * 0..r-1. Bilinear is in lerp form, rows first:
 *   h_j = v(k, j) + f * (v(k + 1, j) - v(k, j))  for the two rows j,
 *   value = h_0 + fy * (h_1 - h_0)
 * so a source of the frame's size reads exactly its own pixel and a constant
 * source stays exactly constant.
 *
 * Mask: f32 or u8, shape [..., H, W] whose leading dims are all 1 ([H, W],
 * [1, H, W], [1, 1, H, W]), any H x W; the last dim contiguous (stride 1),
 * rows may be padded (row stride >= W). m = the bilinear value at the frame
 * pixel (u8: interpolated on the raw 0..255 values, then divided by 255),
 * then clamped to [0, 1] with NaN counting as 0.
 *
 * Colour: F = the frame pixel as R, G, B floats: the bytes of RGB formats;
 * YUV pixels converted as in the Fused preprocess section (own Y, chroma
 * sample (x/2, y/2), R = y' + rv v, G = (y' - gu u) - gv v, B = y' + bu u,
 * each clamped to 0..255, not rounded) with pf_background.matrix and .range.
 * With Bg the background pixel as floats (below), per channel
 *   v = m * F + (1 - m) * Bg,   out = (int)(clamp(v, 0, 255) + 0.5)   (round half up)
 * and RGBA output alpha = (int)(255 m + 0.5). So m = 1 gives the frame's own
 * bytes and m = 0 the background exactly.
 *
 * NV12 output: the RGB24 output of the same call (bytes R, G, B per pixel)
 * converted with the same matrix and range. Y per pixel; U and V once per
 * 2x2 block (even x, y) from the mean R, G, B of the block's pixels inside
 * the frame (sum / count: 4, or 2 or 1 at the edges of odd sizes):
 *   Y = ((yr R + yg G) + yb B) + y_off,  U = ((ur R + ug G) + ub B) + 128,
 *   V = ((vr R + vg G) + vb B) + 128,    each rounded like out above,
 * with Kg = 1 - Kr - Kb, limited range ys = 219/255, cs = 224/255, y_off =
 * 16 (full range 1, 1, 0): yr, yg, yb = (Kr, Kg, Kb) ys; ur = -Kr cs / (2 (1
 * - Kb)), ug = -Kg cs / (2 (1 - Kb)), ub = vr = cs / 2; vg = -Kg cs / (2 (1 -
 * Kr)), vb = -Kb cs / (2 (1 - Kr)). BT.601 limited: 0.256788 0.504129
 * 0.097906 | -0.148223 -0.290993 0.439216 | 0.439216 -0.367788 -0.071427.
 *
 * Backgrounds:
 *   PF_BG_NONE   the frame itself: packed outputs get (int)(F + 0.5) (an RGB
 *                frame's own bytes; with RGBA output only alpha comes from
 *                the mask). NV12 output from an NV12 or I420 frame copies Y
 *                and chroma unchanged; from an RGB frame converts it as above.
 *   PF_BG_COLOR  Bg = color (R, G, B).
 *   PF_BG_IMAGE  `image` (RGB24, BGR24, RGBA, NV12, I420; any size) resized
 *                bilinearly to the output size on the fly: axis taps as
 *                above, each tap converted to R, G, B floats like F.
 *   PF_BG_FRAME  Bg = `image` pixel (x, y); image of exactly the output size.
 *   PF_BG_BLUR   the frame (F, floats) blurred with sigma = blur_sigma:
 *     sigma <= 8: separable Gaussian at full resolution. Radius R =
 *       ceil(3 sigma), weights w_k = exp(-k^2 / (2 sigma^2)), k = -R..R,
 *       divided by their sum (double, then float). t(x, y) = sum over k =
 *       -R..R (in that order, from 0) of w_k F(clamp(x + k), y); then
 *       Bg(x, y) = sum of w_k t(x, clamp(y + k)) likewise. Edges clamp;
 *       nothing is rounded in between.
 *     sigma > 8: q = floor(sigma / 4) (2..16). F is box-averaged over q x q
 *       blocks into a ceil(W/q) x ceil(H/q) image (block (i, j) covers
 *       x in [qi, qi + q), y in [qj, qj + q) within the frame; sum row by
 *       row, left to right, from 0, divided by the number of pixels
 *       present), that image is blurred as above with sigma / q (edges
 *       clamped to it), and Bg(x, y) samples it bilinearly with the axis
 *       taps at s = (2x + 1 - q) / (2q), i.e. (x + 0.5) / q - 0.5: block
 *       centres line up with the pixels they average.
 *     Cost: sigma <= 8 reads 2 (2R + 1) <= 98 taps per pixel and channel;
 *     larger sigma one pass over the frame, at most 2 * 37 taps per pixel
 *     of the q^2 times smaller image and 4 taps per pixel to upsample, so
 *     the time no longer grows with sigma. The box and the bilinear
 *     upsampling add about q^2 / 4 to the variance: the blur is at most
 *     0.8% wider than the exact Gaussian of sigma. Intermediates live in
 *     the context's scratch memory (12 bytes per pixel for sigma <= 8; 36
 *     bytes per pixel of the small image above), grown once.
 *
 * Memory and aliasing: every input and dst must be reachable by the context's
 * device (see Fused preprocess: CPU any host memory; CUDA its own device
 * memory or CUDA pinned memory). dst may be the frame itself (in place: same
 * format, planes and strides), for every background kind; any other overlap
 * of dst with the frame, the mask or the image (byte ranges from first to
 * last byte of each plane) is refused.
 *
 * Errors (all checked before anything is written): PF_ERR_INVALID for NULL
 * ops, frame, mask, bg or dst, a frame, image or dst with a bad size,
 * stride, plane or buffer range, dst or a PF_BG_FRAME image whose size
 * differs from the frame's, a mask that is not [..., H, W] with leading dims
 * 1, has a row stride < W or misaligned data, kind, matrix or range out of
 * range, blur_sigma outside (0, 64] or not finite, image NULL for
 * PF_BG_IMAGE / PF_BG_FRAME, overlaps; PF_ERR_UNSUPPORTED for GRAY8 frames
 * or images, I420 or GRAY8 output, a mask dtype other than f32/u8 or with a
 * non-contiguous last dim,
 * memory the device cannot reach; PF_ERR_DEVICE when a CUDA launch fails.
 * On a CPU context created with `reference` set, the plain C reference runs.
 * Asynchronous on CUDA: inputs must stay valid until the stream reaches the
 * call. */

typedef enum pf_background_kind {
    PF_BG_NONE = 0,   /* keep the frame; with RGBA output only the alpha changes */
    PF_BG_COLOR = 1,  /* a solid colour */
    PF_BG_IMAGE = 2,  /* another frame, resized bilinearly to the output size */
    PF_BG_BLUR = 3,   /* the frame itself, Gaussian-blurred with blur_sigma */
    PF_BG_FRAME = 4   /* another frame of exactly the output size (e.g. a 360° view) */
} pf_background_kind;

typedef struct pf_background {
    pf_background_kind kind;
    uint8_t color[3];         /* R, G, B for PF_BG_COLOR */
    const pf_frame *image;    /* PF_BG_IMAGE, PF_BG_FRAME */
    float blur_sigma;         /* PF_BG_BLUR, 0 < sigma <= 64 pixels */
    pf_yuv_matrix matrix;     /* YUV frames, YUV images and NV12 output; */
    pf_yuv_range range;       /* zero = BT.601 limited */
} pf_background;

PF_API pf_status pf_ops_composite(pf_ops *ops, const pf_frame *frame, const pf_tensor *mask,
                                  const pf_background *bg, pf_frame *dst);

/* Rotated crops ---------------------------------------------------------------------
 *
 * Samples n rotated rectangles of n frames (the same frame may repeat) into
 * a batch of H x W RGB crops, e.g. faces into a landmark model's input:
 *
 *     pf_rotated_rect r = {cx, cy, side, side, angle};
 *     pf_ops_crop_rotated(ops, &frame, &r, 1, &input, 1.0f / 255.0f, 0.0f);
 *
 * Output pixel (x, y) of crop i takes the source point
 *   (cx, cy) + R(angle) ((x + 0.5) / W - 0.5) width, ((y + 0.5) / H - 0.5) height)
 * with R(a) = [cos a, -sin a; sin a, cos a] (pixels, y down: a positive
 * angle turns the crop's x axis towards +y), sampled bilinearly between
 * pixel centres (pixel k spans [k, k + 1)); points outside the frame take
 * the nearest edge pixel. Channels come out in RGB order (BGR24 sources are
 * swapped, RGBA's alpha dropped) as value * scale + bias, value in 0..255.
 * The inverse map (crop coordinates to frame pixels) is the same formula.
 *
 * srcs: RGB24, BGR24 or RGBA frames the context's device can reach; dst: a
 * contiguous f32 tensor [n, H, W, 3] there, not overlapping any source.
 * CPU and CUDA compute the same sample points; outputs agree within 1e-4 of
 * the output range (float rounding of weights and FMA contraction).
 * Asynchronous on the context's stream; nothing allocated, at most one
 * launch per 32 crops (capturable in a CUDA graph).
 * Errors: PF_ERR_INVALID for NULL arguments, n < 1 or != dst->shape[0],
 * dst not [N, H, W, 3], a rectangle not finite or with a size <= 0, a bad
 * frame (named srcs[i]), overlap; PF_ERR_UNSUPPORTED for another format or
 * dtype, memory the device cannot reach. */
typedef struct pf_rotated_rect {
    float cx, cy;             /* centre, source pixels */
    float width, height;      /* source pixels, > 0 */
    float angle;              /* radians */
} pf_rotated_rect;

PF_API pf_status pf_ops_crop_rotated(pf_ops *ops, const pf_frame *const *srcs,
                                     const pf_rotated_rect *rects, int n, pf_tensor *dst,
                                     float scale, float bias);

PF_END_DECLS

#endif
