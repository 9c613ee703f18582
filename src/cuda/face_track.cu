/* The device-resident face tracker's kernels (pf_cuda_face_track_pre/post,
 * src/jobs/faces_impl.h): everything between the detector and the landmark
 * model, and after the landmark model, for S streams at once, with the
 * tracker's state (tracks, ids, frame counters) in device memory. The CPU
 * tracker (src/jobs/faces_tracker.c) is the reference; the geometry is
 * faces_geom.h's, the crop arithmetic crop_rotated.h's, both shared.
 *
 * Design
 * - associate (one block per stream, one thread): the decisions are a few
 *   dozen comparisons in a fixed order (detections best first, tracks in
 *   list order), so one thread takes them exactly as the CPU loop does;
 *   parallelism would buy nothing at max_faces <= 256 and cost determinism.
 *   It also writes each slot's crop item (the source frame, the ROI, its
 *   cosine and sine computed in double like pf_ops_crop_rotated does), or
 *   an empty item for a free slot.
 * - crop: one thread per output pixel over all slots (grid.z); free slots
 *   return at once (the landmark model reads their stale rows; their
 *   results are never used).
 * - landmarks: one block per slot maps the 468 points to frame pixels and
 *   reduces their bounding box.
 * - finalize (one block per stream): thread 0 drops lost and duplicate
 *   faces and writes the next tracks in the CPU's order; then the block
 *   copies the kept faces' landmarks into the compact output, which the
 *   host fetches with one copy. */
#include <math.h>
#include <stdint.h>

#include <cuda_runtime.h>

extern "C" {
#include "../jobs/faces_geom.h"
#include "../ops/crop_rotated.h"
#include "cuda_internal.h"
}

namespace {

constexpr int FT_LM_THREADS = 256;
constexpr int FT_MAX_SLOTS = 256;
constexpr int FT_SIDE = PF_FACE_LANDMARK_INPUT;

/* A normalised detection into frame pixels through the stream's letterbox. */
__device__ pf_face_det ft_to_pixels(const pf_face_det &n, const pf_face_cuda_src &s, float size)
{
    pf_face_det d = n;
#define FT_MX(v) (((v) * size - s.lb_pad_left) / s.lb_scale_x)
#define FT_MY(v) (((v) * size - s.lb_pad_top) / s.lb_scale_y)
    d.box[0] = FT_MX(n.box[0]);
    d.box[2] = FT_MX(n.box[2]);
    d.box[1] = FT_MY(n.box[1]);
    d.box[3] = FT_MY(n.box[3]);
    for (int k = 0; k < PF_FACE_KEYPOINTS; k++) {
        d.kp[k][0] = FT_MX(n.kp[k][0]);
        d.kp[k][1] = FT_MY(n.kp[k][1]);
    }
#undef FT_MX
#undef FT_MY
    return d;
}

__global__ void ft_associate(const __grid_constant__ pf_face_cuda_track p)
{
    const int s = blockIdx.x;
    if (threadIdx.x != 0) return;
    pf_face_dhdr *h = &p.hdr[s];
    pf_face_dtrack *tr = p.tracks + (size_t)s * p.slots;
    const pf_face_cuda_src &src = p.src[s];
    const bool detect = p.dets && (h->n_tracks == 0 || h->frame % p.detect_every == 0);
    h->frame++;
    if (detect) {
        const pf_face_det *dets = p.dets + (size_t)s * p.det_max;
        const int n_det = min(p.det_counts[s], p.det_max);
        unsigned used[FT_MAX_SLOTS / 32];
        for (int w = 0; w < FT_MAX_SLOTS / 32; w++) used[w] = 0;
        for (int i = 0; i < n_det; i++) {
            const pf_face_det d = ft_to_pixels(dets[i], src, p.det_size);
            int best = -1;
            float best_iou = PF_FACE_MATCH_IOU;
            for (int j = 0; j < h->n_tracks; j++) {
                const float iou = pf_fg_iou(d.box, tr[j].box);
                if (!(used[j >> 5] >> (j & 31) & 1u) && iou >= best_iou) {
                    best = j;
                    best_iou = iou;
                }
            }
            if (best >= 0) {
                used[best >> 5] |= 1u << (best & 31);
                tr[best].det_score = d.score;
                continue;
            }
            if (h->n_tracks >= p.slots) continue; /* detections come best first */
            const int k = h->n_tracks++;
            pf_face_dtrack nt;
            nt.id = h->next_id++;
            nt.roi = pf_fg_roi(d.box, d.kp[0][0], d.kp[0][1], d.kp[1][0], d.kp[1][1]);
            for (int q = 0; q < 4; q++) nt.box[q] = d.box[q];
            nt.det_score = d.score;
            tr[k] = nt;
            used[k >> 5] |= 1u << (k & 31);
        }
    }
    /* The crop items, as pf_ops_crop_rotated fills them. */
    pf_cr_item *items = (pf_cr_item *)p.items + (size_t)s * p.slots;
    for (int i = 0; i < p.slots; i++) {
        pf_cr_item it;
        it.src = src.data;
        it.stride = src.stride;
        it.width = src.width;
        it.height = src.height;
        it.channels = src.channels;
        it.swap = src.swap;
        if (i < h->n_tracks) {
            const pf_face_roi r = tr[i].roi;
            it.cx = r.cx;
            it.cy = r.cy;
            it.w = r.w;
            it.h = r.h;
            it.cos_a = (float)cos((double)r.rotation);
            it.sin_a = (float)sin((double)r.rotation);
        } else {
            it.cx = it.cy = it.w = it.h = 0.0f; /* free slot: w == 0 */
            it.cos_a = 1.0f;
            it.sin_a = 0.0f;
        }
        items[i] = it;
    }
}

__global__ void ft_crop(const pf_cr_item *items, float *dst, float scale)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    const int i = blockIdx.z;
    if (x >= FT_SIDE || y >= FT_SIDE) return;
    const pf_cr_item it = items[i];
    if (!(it.w > 0.0f)) return;
    float sx, sy, v[3];
    pf_cr_point(&it, x, y, FT_SIDE, FT_SIDE, &sx, &sy);
    pf_cr_sample(&it, sx, sy, v);
    float *o = dst + (((size_t)i * FT_SIDE + y) * FT_SIDE + x) * 3;
    o[0] = v[0] * scale;
    o[1] = v[1] * scale;
    o[2] = v[2] * scale;
}

__global__ void __launch_bounds__(FT_LM_THREADS)
    ft_landmarks(const __grid_constant__ pf_face_cuda_track p)
{
    const int slot = blockIdx.x, s = blockIdx.y, t = threadIdx.x;
    if (slot >= p.hdr[s].n_tracks) return;
    const size_t g = (size_t)s * p.slots + slot;
    const pf_face_roi r = p.tracks[g].roi;
    const float *pts = p.lm_pts + g * PF_FACE_LANDMARKS * 3;
    float *lm = p.lm + g * PF_FACE_LANDMARKS * 3;
    float b[4] = {INFINITY, INFINITY, -INFINITY, -INFINITY};
    for (int k = t; k < PF_FACE_LANDMARKS; k += FT_LM_THREADS) {
        const float side = (float)FT_SIDE;
        float x, y;
        pf_fg_roi_to_frame(&r, pts[3 * k] / side, pts[3 * k + 1] / side, &x, &y);
        lm[3 * k] = x;
        lm[3 * k + 1] = y;
        lm[3 * k + 2] = pts[3 * k + 2] / side * r.w;
        b[0] = fminf(b[0], x);
        b[1] = fminf(b[1], y);
        b[2] = fmaxf(b[2], x);
        b[3] = fmaxf(b[3], y);
    }
    __shared__ float red[4][FT_LM_THREADS];
    for (int q = 0; q < 4; q++) red[q][t] = b[q];
    __syncthreads();
    for (int w = FT_LM_THREADS / 2; w > 0; w >>= 1) {
        if (t < w) {
            red[0][t] = fminf(red[0][t], red[0][t + w]);
            red[1][t] = fminf(red[1][t], red[1][t + w]);
            red[2][t] = fmaxf(red[2][t], red[2][t + w]);
            red[3][t] = fmaxf(red[3][t], red[3][t + w]);
        }
        __syncthreads();
    }
    if (t == 0) {
        for (int q = 0; q < 4; q++) p.slot_box[4 * g + q] = red[q][0];
        p.slot_presence[g] = pf_fg_score(p.lm_flag[g]);
    }
}

__global__ void __launch_bounds__(FT_LM_THREADS)
    ft_finalize(const __grid_constant__ pf_face_cuda_track p)
{
    const int s = blockIdx.x, t = threadIdx.x;
    __shared__ pf_face_dtrack next[FT_MAX_SLOTS];
    __shared__ short from[FT_MAX_SLOTS];
    __shared__ int kept;
    pf_face_dhdr *h = &p.hdr[s];
    pf_face_dtrack *tr = p.tracks + (size_t)s * p.slots;
    const size_t g0 = (size_t)s * p.slots;
    if (t == 0) {
        int k = 0;
        for (int i = 0; i < h->n_tracks; i++) {
            if (p.slot_presence[g0 + i] < PF_FACE_LOST_FLAG) continue;
            pf_face_dtrack d = tr[i];
            for (int q = 0; q < 4; q++) d.box[q] = p.slot_box[4 * (g0 + i) + q];
            bool dup = false;
            for (int j = 0; j < k && !dup; j++)
                dup = pf_fg_iou(d.box, next[j].box) > PF_FACE_MERGE_IOU;
            if (dup) continue;
            const float *lm = p.lm + (g0 + i) * PF_FACE_LANDMARKS * 3;
            d.roi = pf_fg_roi(d.box, lm[3 * PF_FG_EYE_R], lm[3 * PF_FG_EYE_R + 1],
                              lm[3 * PF_FG_EYE_L], lm[3 * PF_FG_EYE_L + 1]);
            next[k] = d;
            from[k] = (short)i;
            k++;
        }
        kept = k;
    }
    __syncthreads();
    const int n = kept;
    /* The slots' landmarks are read below, so the tracks' own array (not
     * the landmarks) is what gets overwritten. */
    for (int i = t; i < n; i += FT_LM_THREADS) tr[i] = next[i];
    pf_face *out = p.out + g0;
    for (int f = 0; f < n; f++) {
        const float *lm = p.lm + (g0 + from[f]) * PF_FACE_LANDMARKS * 3;
        float *dst = &out[f].landmarks[0][0];
        for (int k = t; k < PF_FACE_LANDMARKS * 3; k += FT_LM_THREADS) dst[k] = lm[k];
        if (t < PF_FACE_KEYPOINTS) {
            int a, b;
            pf_fg_keypoint_pair(t, &a, &b);
            out[f].keypoints[t][0] = 0.5f * (lm[3 * a] + lm[3 * b]);
            out[f].keypoints[t][1] = 0.5f * (lm[3 * a + 1] + lm[3 * b + 1]);
        }
        if (t == 0) {
            out[f].id = next[f].id;
            out[f].score = p.slot_presence[g0 + from[f]];
            out[f].detection_score = next[f].det_score;
            for (int q = 0; q < 4; q++) out[f].box[q] = next[f].box[q];
        }
    }
    if (t == 0) {
        h->n_tracks = n;
        p.out_counts[s] = n;
    }
}

pf_status ft_check(const char *what, int streams, int slots)
{
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        return pf_cuda_fail(err, "%s(%d streams x %d faces)", what, streams, slots);
    return PF_OK;
}

} /* namespace */

extern "C" pf_status pf_cuda_face_track_pre(const pf_face_cuda_track *p, void *stream)
{
    if (p->streams < 1 || p->streams > PF_FACE_MAX_STREAMS || p->slots < 1 ||
        p->slots > FT_MAX_SLOTS)
        return pf_set_error(PF_ERR_INVALID, "face tracker kernels: %d streams x %d faces "
                            "(at most %d x %d)", p->streams, p->slots, PF_FACE_MAX_STREAMS,
                            FT_MAX_SLOTS);
    cudaStream_t s = (cudaStream_t)stream;
    ft_associate<<<p->streams, 32, 0, s>>>(*p);
    pf_status st = ft_check("ft_associate", p->streams, p->slots);
    if (st != PF_OK) return st;
    const dim3 block(32, 8), grid((FT_SIDE + 31) / 32, (FT_SIDE + 7) / 8,
                                  (unsigned)(p->streams * p->slots));
    ft_crop<<<grid, block, 0, s>>>((const pf_cr_item *)p->items, p->crops, 1.0f / 255.0f);
    return ft_check("ft_crop", p->streams, p->slots);
}

extern "C" pf_status pf_cuda_face_track_post(const pf_face_cuda_track *p, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    ft_landmarks<<<dim3((unsigned)p->slots, (unsigned)p->streams), FT_LM_THREADS, 0, s>>>(*p);
    pf_status st = ft_check("ft_landmarks", p->streams, p->slots);
    if (st != PF_OK) return st;
    ft_finalize<<<p->streams, FT_LM_THREADS, 0, s>>>(*p);
    return ft_check("ft_finalize", p->streams, p->slots);
}
