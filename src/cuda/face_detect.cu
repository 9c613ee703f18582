/* CUDA face detection post-processing: decode, score threshold and weighted
 * NMS for a batch of detector outputs, one thread block per image, with the
 * face count written to device memory, so the host never waits between the
 * detector and the landmark crops (and the whole step can be captured in a
 * CUDA graph). src/jobs/faces_detect.c is the reference; the rules are
 * MediaPipe's (src/jobs/faces_impl.h).
 *
 * Design
 * - Candidates: the block walks the anchors in chunks of 256, thresholds
 *   the score and compacts the survivors with a block-wide prefix sum, so the
 *   candidate list is in anchor order (deterministic, no atomics). At most
 *   FD_CAND (1024) are kept, the first in anchor order; the detector's
 *   threshold (0.5/0.6) leaves a few dozen on real frames.
 * - Ordering: a bitonic sort in shared memory on (score desc, anchor asc),
 *   the CPU's total order.
 * - NMS rounds: the list head is the round's best; every thread flags its
 *   share of the list (overlapping the head or not), a prefix sum compacts
 *   the survivors into the other buffer in order, and 17 threads each sum one
 *   value (score and 16 coordinates) over the group in list order, in double,
 *   exactly as the CPU loop does, so the blended boxes match it to rounding
 *   of the float results.
 * - Arithmetic: products and sums that nvcc could contract into FMAs are
 *   written with __fmul_rn/__fadd_rn so decoded boxes and IoUs are the CPU's
 *   bit for bit; only expf (within 2 ulp of glibc's) differs, so a score
 *   within ~1e-7 of the threshold may fall on the other side.
 * - Boxes are decoded from the regressors when needed (16 floats per
 *   candidate from L1/L2) rather than kept in shared memory. */
#include <cuda_runtime.h>

extern "C" {
#include "../jobs/faces_impl.h"
#include "cuda_internal.h"
}

namespace {

constexpr int FD_THREADS = 256;
constexpr int FD_CAND = 1024;

struct fd_args {
    const float *reg, *cls;      /* [batch][anchors][16], [batch][anchors] */
    const pf_face_anchor *anchors;
    int num_anchors;
    float scale, min_score, iou;
    int max_out;
    pf_face_det *out;            /* [batch][max_out] */
    int *counts;                 /* [batch] */
};

__device__ float fd_score(float logit)
{
    const float c = logit < -100.0f ? -100.0f : (logit > 100.0f ? 100.0f : logit);
    return 1.0f / (1.0f + expf(-c));
}

/* Box of anchor i (xmin, ymin, xmax, ymax), as pf_face_decode_one. */
__device__ void fd_box(const fd_args &a, const float *reg, int i, float b[4])
{
    const float *r = reg + (size_t)i * PF_FACE_COORDS;
    const pf_face_anchor an = a.anchors[i];
    const float xc = __fadd_rn(r[0] / a.scale, an.x), yc = __fadd_rn(r[1] / a.scale, an.y);
    const float w = r[2] / a.scale, h = r[3] / a.scale;
    b[0] = __fsub_rn(xc, __fmul_rn(0.5f, w));
    b[1] = __fsub_rn(yc, __fmul_rn(0.5f, h));
    b[2] = __fadd_rn(xc, __fmul_rn(0.5f, w));
    b[3] = __fadd_rn(yc, __fmul_rn(0.5f, h));
}

/* Value v of anchor i's detection: 0..3 box, 4..15 keypoints (x, y pairs). */
__device__ float fd_value(const fd_args &a, const float *reg, int i, int v)
{
    if (v < 4) {
        float b[4];
        fd_box(a, reg, i, b);
        return b[v];
    }
    const float *r = reg + (size_t)i * PF_FACE_COORDS;
    const pf_face_anchor an = a.anchors[i];
    return __fadd_rn(r[v] / a.scale, (v & 1) ? an.y : an.x);
}

__device__ float fd_iou(const float *p, const float *q)
{
    const float ap = __fmul_rn(p[2] - p[0], p[3] - p[1]);
    const float aq = __fmul_rn(q[2] - q[0], q[3] - q[1]);
    if (!(ap > 0.0f) || !(aq > 0.0f)) return 0.0f;
    const float iw = fminf(p[2], q[2]) - fmaxf(p[0], q[0]);
    const float ih = fminf(p[3], q[3]) - fmaxf(p[1], q[1]);
    if (iw <= 0.0f || ih <= 0.0f) return 0.0f;
    const float inter = __fmul_rn(iw, ih);
    return inter / __fsub_rn(__fadd_rn(ap, aq), inter);
}

/* Exclusive prefix sum of flag over the block; returns this thread's offset
 * and writes the total to *total. sh holds FD_THREADS ints. */
__device__ int fd_scan(int flag, int *sh, int *total)
{
    const int t = threadIdx.x;
    sh[t] = flag;
    __syncthreads();
    for (int d = 1; d < FD_THREADS; d <<= 1) {
        const int v = t >= d ? sh[t - d] : 0;
        __syncthreads();
        sh[t] += v;
        __syncthreads();
    }
    const int incl = sh[t];
    *total = sh[FD_THREADS - 1];
    __syncthreads();
    return incl - flag;
}

__device__ bool fd_before(float sa, int ia, float sb, int ib)
{
    return sa > sb || (sa == sb && ia < ib);
}

__global__ void __launch_bounds__(FD_THREADS) face_detect_kernel(fd_args a)
{
    __shared__ int idx[FD_CAND];
    __shared__ float score[FD_CAND];
    __shared__ int list[2][FD_CAND];
    __shared__ int scan[FD_THREADS];
    __shared__ float best_box[4];
    __shared__ double sums[1 + PF_FACE_COORDS];
    __shared__ int n_cand;

    const int img = blockIdx.x, t = threadIdx.x;
    const float *reg = a.reg + (size_t)img * a.num_anchors * PF_FACE_COORDS;
    const float *cls = a.cls + (size_t)img * a.num_anchors;

    /* 1. Threshold and compact in anchor order. */
    if (t == 0) n_cand = 0;
    __syncthreads();
    for (int base = 0; base < a.num_anchors; base += FD_THREADS) {
        const int i = base + t;
        const float s = i < a.num_anchors ? fd_score(cls[i]) : 0.0f;
        const int keep = i < a.num_anchors && s >= a.min_score;
        int total;
        const int off = fd_scan(keep, scan, &total);
        const int pos = n_cand + off;
        if (keep && pos < FD_CAND) {
            idx[pos] = i;
            score[pos] = s;
        }
        __syncthreads();
        if (t == 0) n_cand = min(FD_CAND, n_cand + total);
        __syncthreads();
    }
    const int n = n_cand;

    /* 2. Bitonic sort of the padded power of two (pads sort last). */
    int m = 1;
    while (m < n) m <<= 1;
    for (int i = n + t; i < m; i += FD_THREADS) {
        idx[i] = 0x7fffffff;
        score[i] = -1.0f;
    }
    __syncthreads();
    for (int k = 2; k <= m; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int i = t; i < m; i += FD_THREADS) {
                const int p = i ^ j;
                if (p > i) {
                    const bool up = (i & k) == 0;
                    const bool swap = up ? fd_before(score[p], idx[p], score[i], idx[i])
                                         : fd_before(score[i], idx[i], score[p], idx[p]);
                    if (swap) {
                        const float s = score[i];
                        score[i] = score[p];
                        score[p] = s;
                        const int q = idx[i];
                        idx[i] = idx[p];
                        idx[p] = q;
                    }
                }
            }
            __syncthreads();
        }
    for (int i = t; i < n; i += FD_THREADS) list[0][i] = i; /* positions into idx/score */
    __syncthreads();

    /* 3. Weighted NMS rounds. */
    int left = n, cur = 0, count = 0;
    pf_face_det *out = a.out + (size_t)img * a.max_out;
    while (left > 0 && count < a.max_out) {
        const int head = list[cur][0];
        if (t == 0) fd_box(a, reg, idx[head], best_box);
        __syncthreads();
        /* Flag the group in chunks; survivors compacted into the other buffer. */
        int kept = 0;
        for (int base = 0; base < left; base += FD_THREADS) {
            const int j = base + t;
            int grp = 0;
            if (j < left) {
                float b[4];
                fd_box(a, reg, idx[list[cur][j]], b);
                grp = j == 0 || fd_iou(best_box, b) > a.iou;
            }
            int total;
            const int off = fd_scan(j < left && !grp, scan, &total);
            if (j < left && !grp) list[cur ^ 1][kept + off] = list[cur][j];
            kept += total;
        }
        /* The group's sums, one value per thread, in list order like the CPU. */
        if (t <= PF_FACE_COORDS) {
            double acc = 0.0;
            for (int j = 0; j < left; j++) {
                const int pos = list[cur][j];
                float b[4];
                fd_box(a, reg, idx[pos], b);
                if (!(j == 0 || fd_iou(best_box, b) > a.iou)) continue;
                const double s = score[pos];
                acc += t == 0 ? s : s * (double)fd_value(a, reg, idx[pos], t - 1);
            }
            sums[t] = acc;
        }
        __syncthreads();
        if (t == 0) {
            pf_face_det d;
            const double sum = sums[0];
            d.score = score[head];
            for (int v = 0; v < PF_FACE_COORDS; v++) {
                const float own = fd_value(a, reg, idx[head], v);
                const float w = sum > 0.0 ? (float)(sums[1 + v] / sum) : own;
                if (v < 4) d.box[v] = w;
                else d.kp[(v - 4) >> 1][v & 1] = w;
            }
            out[count] = d;
        }
        count++;
        left = kept;
        cur ^= 1;
        __syncthreads();
    }
    if (t == 0) a.counts[img] = count;
}

} /* namespace */

extern "C" pf_status pf_cuda_face_detect(const pf_face_cuda_detect *p, void *stream)
{
    if (p->batch <= 0) return PF_OK;
    fd_args a;
    a.reg = p->reg;
    a.cls = p->cls;
    a.anchors = p->anchors;
    a.num_anchors = p->params.num_anchors;
    a.scale = p->params.scale;
    a.min_score = p->params.min_score;
    a.iou = p->params.iou_threshold;
    a.max_out = p->max_out;
    a.out = p->out;
    a.counts = p->counts;
    cudaStream_t s = (cudaStream_t)stream;
    face_detect_kernel<<<p->batch, FD_THREADS, 0, s>>>(a);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        return pf_cuda_fail(err, "face_detect_kernel(batch %d, %d anchors)", p->batch,
                            a.num_anchors);
    return PF_OK;
}
