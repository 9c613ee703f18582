/* pf_ops_equirect_to_views, pf_ops_equirect_to_cubemap, pf_cube_face_view:
 * the public wrappers of the 360° reprojection.
 *
 * Everything is checked here (frames, views, sizes, memory reachability,
 * overlaps) with messages naming the argument and value, so the three
 * implementations only compute. The wrapper also owns the per-view constants
 * (pf_rp_view_setup: rotation and focal length in double, rounded to float
 * once) so the reference, the CPU path and the CUDA kernel start from the
 * same bits and, sharing reproject_math.h, produce the same bytes. A cube
 * map is six views whose outputs are the layout's sub-rectangles of dst. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../core/error.h"
#include "../device/backend.h"
#include "check.h"
#include "ops_impl.h"
#include "reproject.h"

#define FN_VIEWS "pf_ops_equirect_to_views"
#define FN_CUBE "pf_ops_equirect_to_cubemap"
#define FN_FACE "pf_cube_face_view"

#define RP_PI 3.14159265358979323846

/* View constants ---------------------------------------------------------------- */

/* sin and cos of an angle in degrees, exact at multiples of 90° and the same
 * for deg and deg + 360k: reduce modulo 360 (fmod is exact), split off the
 * nearest quadrant (exact), evaluate the rest (|t| <= 45°) with libm. */
static void sincos_deg(double deg, double *s, double *c)
{
    double r = fmod(deg, 360.0);
    if (r <= 0.0) r += 360.0; /* (0, 360]: also turns -0 into +0 */
    int q = (int)floor(r / 90.0 + 0.5);
    double t = (r - 90.0 * q) * (RP_PI / 180.0);
    double st = sin(t), ct = cos(t);
    switch (q & 3) {
    case 0: *s = st; *c = ct; break;
    case 1: *s = ct; *c = -st; break;
    case 2: *s = -st; *c = -ct; break;
    default: *s = -ct; *c = st; break;
    }
}

void pf_rp_view_setup(const pf_view *view, pf_rp_view *out)
{
    double sy, cy, sp, cp, sr, cr, sf, cf;
    sincos_deg(view->yaw, &sy, &cy);
    sincos_deg(view->pitch, &sp, &cp);
    sincos_deg(view->roll, &sr, &cr);
    sincos_deg(0.5 * view->fov, &sf, &cf);
    double f = 0.5 * view->width * cf / sf;
    /* Columns of R = R_yaw R_pitch R_roll: the images of the camera axes,
     * written exactly as ops.h defines the three rotations. */
    double col[3][3];
    for (int k = 0; k < 3; k++) {
        double x = k == 0, y = k == 1, z = k == 2;
        double x1 = x * cr + y * sr, y1 = -x * sr + y * cr, z1 = z;   /* roll */
        double y2 = y1 * cp + z1 * sp, z2 = -y1 * sp + z1 * cp;       /* pitch */
        double x3 = x1 * cy + z2 * sy, z3 = -x1 * sy + z2 * cy;       /* yaw */
        col[k][0] = x3;
        col[k][1] = y2;
        col[k][2] = z3;
    }
    out->m00 = (float)col[0][0];
    out->m10 = (float)col[0][1];
    out->m20 = (float)col[0][2];
    out->m01 = (float)col[1][0];
    out->m11 = (float)col[1][1];
    out->m21 = (float)col[1][2];
    out->c0 = (float)(f * col[2][0]);
    out->c1 = (float)(f * col[2][1]);
    out->c2 = (float)(f * col[2][2]);
    out->width = view->width;
    out->height = view->height;
}

/* Cube faces ----------------------------------------------------------------------- */

static const struct {
    float yaw, pitch;
} cube_faces[6] = {
    {90.0f, 0.0f},  /* +X right */
    {-90.0f, 0.0f}, /* -X left */
    {0.0f, 90.0f},  /* +Y up: front towards its bottom edge */
    {0.0f, -90.0f}, /* -Y down: front towards its top edge */
    {0.0f, 0.0f},   /* +Z front */
    {180.0f, 0.0f}, /* -Z back */
};

pf_status pf_cube_face_view(int face, int face_size, pf_view *out)
{
    PF_CHECK_ARG(out, FN_FACE, "out is NULL");
    if (face < 0 || face > 5)
        return pf_set_error(PF_ERR_INVALID, FN_FACE ": face %d outside 0..5 (+X -X +Y -Y +Z -Z)",
                            face);
    if (face_size < 1 || face_size > PF_FRAME_MAX_DIM)
        return pf_set_error(PF_ERR_INVALID, FN_FACE ": face_size %d outside 1..%d", face_size,
                            PF_FRAME_MAX_DIM);
    pf_view v = {.yaw = cube_faces[face].yaw, .pitch = cube_faces[face].pitch, .roll = 0.0f,
                 .fov = 90.0f, .width = face_size, .height = face_size};
    *out = v;
    return PF_OK;
}

/* Validation ------------------------------------------------------------------------- */

static int format_channels(pf_pixfmt fmt)
{
    switch (fmt) {
    case PF_PIXFMT_RGB24:
    case PF_PIXFMT_BGR24: return 3;
    case PF_PIXFMT_RGBA: return 4;
    case PF_PIXFMT_GRAY8: return 1;
    default: return 0;
    }
}

/* Bytes a frame's plane 0 spans from data[0]: (h - 1) * stride + row. */
static size_t frame_extent(const pf_frame *f, int channels)
{
    return (size_t)(f->height - 1) * f->stride[0] + (size_t)f->width * (size_t)channels;
}

/* Format, size, pointer, stride and (when it has a buffer) that the pixels
 * lie inside the buffer. `name` is "src", "dst" or "dsts[3]". */
static pf_status check_frame(const char *fn, const char *name, const pf_frame *f, int *channels)
{
    int c = format_channels(f->format);
    if (!c) {
        if (f->format > PF_PIXFMT_NONE && f->format < PF_PIXFMT_COUNT)
            return pf_set_error(PF_ERR_UNSUPPORTED,
                                "%s: %s format %s not supported (rgb24, bgr24, rgba or gray8)", fn,
                                name, pf_pixfmt_name(f->format));
        return pf_set_error(PF_ERR_INVALID, "%s: %s format %d is not a pixel format", fn, name,
                            (int)f->format);
    }
    if (f->width < 1 || f->height < 1 || f->width > PF_FRAME_MAX_DIM ||
        f->height > PF_FRAME_MAX_DIM)
        return pf_set_error(PF_ERR_INVALID, "%s: %s size %dx%d outside 1..%d", fn, name, f->width,
                            f->height, PF_FRAME_MAX_DIM);
    if (!f->data[0]) return pf_set_error(PF_ERR_INVALID, "%s: %s data[0] is NULL", fn, name);
    size_t row = (size_t)f->width * (size_t)c;
    if (f->stride[0] < row)
        return pf_set_error(PF_ERR_INVALID, "%s: %s stride %zu < row of %zu bytes (%dx%d %s)", fn,
                            name, f->stride[0], row, f->width, f->height,
                            pf_pixfmt_name(f->format));
    if (f->stride[0] > (size_t)INT32_MAX)
        return pf_set_error(PF_ERR_INVALID, "%s: %s stride %zu exceeds %d bytes", fn, name,
                            f->stride[0], INT32_MAX);
    if (f->buf[0]) {
        uintptr_t base = (uintptr_t)pf_buffer_data(f->buf[0]), p = (uintptr_t)f->data[0];
        size_t size = pf_buffer_size(f->buf[0]), ext = frame_extent(f, c);
        if (p < base || p - base > size || ext > size - (p - base))
            return pf_set_error(PF_ERR_INVALID,
                                "%s: %s pixels (%zu bytes from offset %td) do not lie inside "
                                "its buffer of %zu bytes",
                                fn, name, ext, (ptrdiff_t)(p - base), size);
    }
    *channels = c;
    return PF_OK;
}

/* Host and pinned memory is host-addressable; device memory only from its own
 * device (on the CPU device "device" memory is host memory); CUDA kernels
 * read device memory of their device and pinned memory, never pageable. */
static pf_status check_reach(const char *fn, const char *name, const pf_frame *f,
                             const pf_ops *ops)
{
    pf_mem_domain d = pf_frame_domain(f);
    pf_device *owner = f->buf[0] ? pf_buffer_device(f->buf[0]) : pf_cpu_device();
    if (ops->dev->props.type == PF_DEVICE_CPU) {
        if (d == PF_MEM_DEVICE && owner->props.type != PF_DEVICE_CPU)
            return pf_set_error(PF_ERR_UNSUPPORTED,
                                "%s: %s is device memory of %s, not reachable from the CPU "
                                "stream of this pf_ops context (copy it to host memory first)",
                                fn, name, pf_device_spec(owner));
        return PF_OK;
    }
    if (d == PF_MEM_DEVICE && owner != ops->dev)
        return pf_set_error(PF_ERR_UNSUPPORTED,
                            "%s: %s is device memory of %s, not reachable from a stream of %s",
                            fn, name, pf_device_spec(owner), pf_device_spec(ops->dev));
    if (d == PF_MEM_HOST)
        return pf_set_error(PF_ERR_UNSUPPORTED,
                            "%s: %s is pageable host memory, which kernels on %s cannot read "
                            "(use device or pinned memory)",
                            fn, name, pf_device_spec(ops->dev));
    /* The remaining cases (own device memory, pinned memory, which must come
     * from a GPU to be page-locked) follow the rule every op shares. */
    return pf_ops_check_reachable(ops, fn, f->buf[0], name);
}

/* Whether two frames' plane-0 bytes can share an address. Frames with one
 * stride whose rows do not wrap around it are rectangles in a common grid
 * (several views written side by side into one mosaic frame are fine);
 * anything else is compared as byte intervals (conservative). */
static int frames_overlap(const pf_frame *a, int ca, const pf_frame *b, int cb)
{
    uintptr_t pa = (uintptr_t)a->data[0], pb = (uintptr_t)b->data[0];
    size_t ea = frame_extent(a, ca), eb = frame_extent(b, cb);
    if (pa + ea <= pb || pb + eb <= pa) return 0;
    size_t s = a->stride[0];
    if (s != b->stride[0]) return 1;
    uintptr_t lo = pa < pb ? pa : pb;
    size_t ra = (pa - lo) / s, xa = (pa - lo) % s, rb = (pb - lo) / s, xb = (pb - lo) % s;
    size_t wa = (size_t)a->width * (size_t)ca, wb = (size_t)b->width * (size_t)cb;
    if (xa + wa > s || xb + wb > s) return 1;
    int rows = ra < rb + (size_t)b->height && rb < ra + (size_t)a->height;
    int cols = xa < xb + wb && xb < xa + wa;
    return rows && cols;
}

static pf_status check_interp(const char *fn, pf_interp interp)
{
    if (interp == PF_INTERP_NEAREST || interp == PF_INTERP_BILINEAR) return PF_OK;
    if (interp == PF_INTERP_AREA)
        return pf_set_error(PF_ERR_UNSUPPORTED,
                            "%s: interp area not supported for reprojection (nearest or bilinear)",
                            fn);
    return pf_set_error(PF_ERR_INVALID, "%s: interp %d is not a pf_interp", fn, (int)interp);
}

static pf_status check_view(const char *fn, int i, const pf_view *v)
{
    const char *names[3] = {"yaw", "pitch", "roll"};
    float vals[3] = {v->yaw, v->pitch, v->roll};
    for (int k = 0; k < 3; k++)
        if (!isfinite(vals[k]))
            return pf_set_error(PF_ERR_INVALID, "%s: views[%d].%s = %g is not finite", fn, i,
                                names[k], (double)vals[k]);
    if (!(v->fov > 0.0f && v->fov < 180.0f))
        return pf_set_error(PF_ERR_INVALID,
                            "%s: views[%d].fov = %g outside (0, 180) degrees (exclusive)", fn, i,
                            (double)v->fov);
    if (v->width < 1 || v->height < 1 || v->width > PF_FRAME_MAX_DIM ||
        v->height > PF_FRAME_MAX_DIM)
        return pf_set_error(PF_ERR_INVALID, "%s: views[%d] size %dx%d outside 1..%d", fn, i,
                            v->width, v->height, PF_FRAME_MAX_DIM);
    return PF_OK;
}

/* The part shared by both ops: context, source, interpolation. */
static pf_status check_common(const char *fn, pf_ops *ops, const pf_frame *src, pf_interp interp,
                              int *channels)
{
    PF_CHECK_ARG(ops, fn, "ops is NULL");
    PF_CHECK_ARG(src, fn, "src is NULL");
    pf_status st = check_interp(fn, interp);
    if (st == PF_OK) st = check_frame(fn, "src", src, channels);
    if (st == PF_OK) st = check_reach(fn, "src", src, ops);
    return st;
}

static void job_init(pf_rp_job *job, const pf_frame *src, int channels, pf_interp interp)
{
    job->src = src->data[0];
    job->src_stride = src->stride[0];
    job->src_w = src->width;
    job->src_h = src->height;
    job->channels = channels;
    job->interp = interp;
    job->n = 0;
}

static pf_status run_job(const char *fn, pf_ops *ops, const pf_rp_job *job)
{
    pf_device_type type = ops->dev->props.type;
    if (type == PF_DEVICE_CPU) {
        if (ops->reference) {
            pf_ref_equirect_to_views(job);
            return PF_OK;
        }
        return pf_cpu_equirect_to_views(ops, job);
    }
    /* `reference` is a CPU-only flag (ops.h): ignored on CUDA, where the
     * data is not host-addressable. */
#ifdef PF_HAVE_CUDA
    if (type == PF_DEVICE_CUDA) return pf_cuda_equirect_to_views(ops, job);
#endif
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: no reprojection kernel for device %s", fn,
                        pf_device_spec(ops->dev));
}

/* Public ops ----------------------------------------------------------------------------- */

pf_status pf_ops_equirect_to_views(pf_ops *ops, const pf_frame *src, const pf_view *views,
                                   pf_frame *const *dsts, int n, pf_interp interp)
{
    int channels = 0;
    pf_status st = check_common(FN_VIEWS, ops, src, interp, &channels);
    if (st != PF_OK) return st;
    PF_CHECK_ARG(views, FN_VIEWS, "views is NULL");
    PF_CHECK_ARG(dsts, FN_VIEWS, "dsts is NULL");
    if (n < 1 || n > PF_RP_MAX_VIEWS)
        return pf_set_error(PF_ERR_INVALID, FN_VIEWS ": n = %d outside 1..%d", n,
                            PF_RP_MAX_VIEWS);
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "dsts[%d]", i);
        st = check_view(FN_VIEWS, i, &views[i]);
        if (st != PF_OK) return st;
        const pf_frame *d = dsts[i];
        if (!d) return pf_set_error(PF_ERR_INVALID, FN_VIEWS ": %s is NULL", name);
        int dc = 0;
        st = check_frame(FN_VIEWS, name, d, &dc);
        if (st != PF_OK) return st;
        if (d->format != src->format)
            return pf_set_error(PF_ERR_INVALID,
                                FN_VIEWS ": %s format %s differs from src format %s", name,
                                pf_pixfmt_name(d->format), pf_pixfmt_name(src->format));
        if (d->width != views[i].width || d->height != views[i].height)
            return pf_set_error(PF_ERR_INVALID, FN_VIEWS ": %s is %dx%d but views[%d] is %dx%d",
                                name, d->width, d->height, i, views[i].width, views[i].height);
        st = check_reach(FN_VIEWS, name, d, ops);
        if (st != PF_OK) return st;
        if (frames_overlap(d, channels, src, channels))
            return pf_set_error(PF_ERR_INVALID, FN_VIEWS ": %s overlaps src in memory", name);
        for (int k = 0; k < i; k++)
            if (frames_overlap(d, channels, dsts[k], channels))
                return pf_set_error(PF_ERR_INVALID, FN_VIEWS ": %s overlaps dsts[%d] in memory",
                                    name, k);
    }

    pf_rp_job job;
    job_init(&job, src, channels, interp);
    for (int i = 0; i < n; i++) {
        pf_rp_view_setup(&views[i], &job.views[i]);
        job.dst[i] = dsts[i]->data[0];
        job.dst_stride[i] = dsts[i]->stride[0];
    }
    job.n = n;
    return run_job(FN_VIEWS, ops, &job);
}

pf_status pf_ops_equirect_to_cubemap(pf_ops *ops, const pf_frame *src, pf_frame *dst,
                                     int face_size, pf_cube_layout layout, pf_interp interp)
{
    int channels = 0;
    pf_status st = check_common(FN_CUBE, ops, src, interp, &channels);
    if (st != PF_OK) return st;
    PF_CHECK_ARG(dst, FN_CUBE, "dst is NULL");
    if (face_size < 1 || face_size > PF_FRAME_MAX_DIM)
        return pf_set_error(PF_ERR_INVALID, FN_CUBE ": face_size %d outside 1..%d", face_size,
                            PF_FRAME_MAX_DIM);
    if (layout != PF_CUBE_3X2 && layout != PF_CUBE_1X6)
        return pf_set_error(PF_ERR_INVALID, FN_CUBE ": layout %d is not a pf_cube_layout",
                            (int)layout);
    int cols = layout == PF_CUBE_3X2 ? 3 : 1, rows = layout == PF_CUBE_3X2 ? 2 : 6;
    int dc = 0;
    st = check_frame(FN_CUBE, "dst", dst, &dc);
    if (st != PF_OK) return st;
    if (dst->format != src->format)
        return pf_set_error(PF_ERR_INVALID, FN_CUBE ": dst format %s differs from src format %s",
                            pf_pixfmt_name(dst->format), pf_pixfmt_name(src->format));
    /* 64-bit products: face_size may be up to 65536 here. */
    if ((int64_t)dst->width != (int64_t)cols * face_size ||
        (int64_t)dst->height != (int64_t)rows * face_size)
        return pf_set_error(PF_ERR_INVALID,
                            FN_CUBE ": dst is %dx%d but a %s cube map of face_size %d is "
                            "%lldx%lld",
                            dst->width, dst->height, layout == PF_CUBE_3X2 ? "3x2" : "1x6",
                            face_size, (long long)cols * face_size, (long long)rows * face_size);
    st = check_reach(FN_CUBE, "dst", dst, ops);
    if (st != PF_OK) return st;
    if (frames_overlap(dst, channels, src, channels))
        return pf_set_error(PF_ERR_INVALID, FN_CUBE ": dst overlaps src in memory");

    pf_rp_job job;
    job_init(&job, src, channels, interp);
    for (int face = 0; face < 6; face++) {
        pf_view v;
        pf_cube_face_view(face, face_size, &v);
        pf_rp_view_setup(&v, &job.views[face]);
        size_t r = (size_t)(face / cols), c = (size_t)(face % cols), fs = (size_t)face_size;
        job.dst[face] = dst->data[0] + r * fs * dst->stride[0] + c * fs * (size_t)channels;
        job.dst_stride[face] = dst->stride[0];
    }
    job.n = 6;
    return run_job(FN_CUBE, ops, &job);
}
