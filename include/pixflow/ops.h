/* pixflow/ops.h - image kernels on the CPU and CUDA backends.
 *
 * Every operation has a plain C reference (the definition of correct), a
 * multi-threaded CPU path and a CUDA kernel. Which one runs is decided by the
 * device of the stream in the pf_ops context; inputs and outputs must live
 * where that device can read them (host memory for the CPU; device memory for
 * CUDA, pinned host memory works too but is slow). Nothing allocates per call:
 * scratch memory grows once, on the first call that needs it.
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
 * be mapped back: src_x = roi.x + (dst_x - pad_left) / scale_x. */

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
 * info NULL or n entries to fill. n == dst->shape[0]. */
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
 * the same format). */

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

PF_END_DECLS

#endif
