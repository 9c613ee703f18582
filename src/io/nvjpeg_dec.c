/* The GPU JPEG decoder object (nvjpeg.h): the hardware engines for what they
 * accept, nvJPEG's GPU-hybrid backend for other sequential JPEGs, libjpeg-
 * turbo for the rest. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "../device/backend.h"
#include "io_impl.h"
#include "nvjpeg.h"
#include "nvjpeg_impl.h"

struct pf_nvjpeg_dec {
    pf_device *dev;
    int max_batch;
    nvjpegHandle_t hw, gpu;
    nvjpegJpegState_t hw_state, gpu_state;
    nvjpegJpegStream_t parse;       /* on the hardware handle: the support check */
    int hw_batch;                   /* batch size the hardware state is set up for */
    bool gpu_is_default;            /* the GPU handle fell back to the default backend */
    pf_allocator *pinned;           /* host frames of CPU-path images */
    const unsigned char **ptrs;
    size_t *lens;
    nvjpegImage_t *imgs;
    int *which;
};


void pf_nvjpeg_dec_destroy(pf_nvjpeg_dec **dp)
{
    pf_nvjpeg_dec *d = dp ? *dp : NULL;
    if (!d) return;
    if (d->dev) pf_nvjpeg_use_device(d->dev);
    if (d->parse) pf_nvjpeg.nvjpegJpegStreamDestroy(d->parse);
    if (d->hw_state) pf_nvjpeg.nvjpegJpegStateDestroy(d->hw_state);
    if (d->gpu_state) pf_nvjpeg.nvjpegJpegStateDestroy(d->gpu_state);
    if (d->hw) pf_nvjpeg.nvjpegDestroy(d->hw);
    if (d->gpu) pf_nvjpeg.nvjpegDestroy(d->gpu);
    pf_allocator_destroy(&d->pinned);
    free(d->ptrs);
    free(d->lens);
    free(d->imgs);
    free(d->which);
    free(d);
    *dp = NULL;
}

/* The GPU path's handle: GPU-hybrid, or the default backend where the
 * library refuses GPU-hybrid for single images. */
static nvjpegStatus_t make_gpu_handle(pf_nvjpeg_dec *d, int backend)
{
    if (d->gpu_state) pf_nvjpeg.nvjpegJpegStateDestroy(d->gpu_state);
    if (d->gpu) pf_nvjpeg.nvjpegDestroy(d->gpu);
    d->gpu = NULL;
    d->gpu_state = NULL;
    nvjpegStatus_t s = pf_nvjpeg.nvjpegCreateEx(backend, NULL, NULL, NVJPEG_FLAGS_DEFAULT, &d->gpu);
    if (s == NVJPEG_STATUS_SUCCESS) s = pf_nvjpeg.nvjpegJpegStateCreate(d->gpu, &d->gpu_state);
    d->gpu_is_default = backend == NVJPEG_BACKEND_DEFAULT;
    return s;
}

pf_status pf_nvjpeg_dec_create(pf_device *dev, int max_batch, pf_nvjpeg_dec **out)
{
    PF_CHECK_ARG(dev && out && max_batch >= 1, "pf_nvjpeg_dec_create",
                 "dev or out is NULL or max_batch < 1");
    *out = NULL;
    pf_status st = pf_nvjpeg_require(dev);
    if (st != PF_OK) return st;
    pf_nvjpeg_dec *d = calloc(1, sizeof *d);
    if (!d) return pf_set_error(PF_ERR_NOMEM, "nvJPEG decoder: out of host memory");
    d->dev = dev;
    d->max_batch = max_batch;
    d->ptrs = calloc((size_t)max_batch, sizeof *d->ptrs);
    d->lens = calloc((size_t)max_batch, sizeof *d->lens);
    d->imgs = calloc((size_t)max_batch, sizeof *d->imgs);
    d->which = calloc((size_t)max_batch, sizeof *d->which);
    if (!d->ptrs || !d->lens || !d->imgs || !d->which) {
        pf_nvjpeg_dec_destroy(&d);
        return pf_set_error(PF_ERR_NOMEM, "nvJPEG decoder: out of host memory");
    }
    /* The hardware backend exists only on GPUs with NVJPG engines: its
     * creation failing is the answer "none here", not an error. */
    nvjpegStatus_t s = pf_nvjpeg.nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, NULL, NULL,
                                                NVJPEG_FLAGS_DEFAULT, &d->hw);
    if (s == NVJPEG_STATUS_SUCCESS) s = pf_nvjpeg.nvjpegJpegStateCreate(d->hw, &d->hw_state);
    if (s == NVJPEG_STATUS_SUCCESS) s = pf_nvjpeg.nvjpegJpegStreamCreate(d->hw, &d->parse);
    if (s != NVJPEG_STATUS_SUCCESS) {
        pf_log(PF_LOG_DEBUG, "nvJPEG: no hardware decoder on %s (%s)", pf_device_spec(dev),
               pf_nvjpeg_status_name(s));
        if (d->parse) pf_nvjpeg.nvjpegJpegStreamDestroy(d->parse);
        if (d->hw_state) pf_nvjpeg.nvjpegJpegStateDestroy(d->hw_state);
        if (d->hw) pf_nvjpeg.nvjpegDestroy(d->hw);
        d->parse = NULL;
        d->hw_state = NULL;
        d->hw = NULL;
    }
    s = make_gpu_handle(d, NVJPEG_BACKEND_GPU_HYBRID);
    if (s != NVJPEG_STATUS_SUCCESS) s = make_gpu_handle(d, NVJPEG_BACKEND_DEFAULT);
    if (s != NVJPEG_STATUS_SUCCESS) {
        pf_nvjpeg_dec_destroy(&d);
        return pf_set_error(PF_ERR_DEVICE, "nvJPEG: cannot create a decoder on %s: %s (status %d)",
                            pf_device_spec(dev), pf_nvjpeg_status_name(s), s);
    }
    pf_allocator_params ap = pf_allocator_params_default();
    ap.device = dev;
    ap.domain = PF_MEM_PINNED;
    ap.name = "nvjpeg-cpu-path";
    if ((st = pf_allocator_create(&ap, &d->pinned)) != PF_OK) {
        pf_nvjpeg_dec_destroy(&d);
        return st;
    }
    *out = d;
    return PF_OK;
}

bool pf_nvjpeg_dec_has_hw(const pf_nvjpeg_dec *d)
{
    return d && d->hw;
}

pf_status pf_nvjpeg_dec_probe(pf_nvjpeg_dec *d, const uint8_t *data, size_t size,
                              const char *name, int *width, int *height, pf_jpeg_path *path)
{
    pf_jpeg_header h;
    pf_status st = pf_jpeg_scan(data, size, name, &h);
    if (st != PF_OK) return st;
    *width = h.width;
    *height = h.height;
    *path = PF_JPEG_PATH_CPU;
    if (!h.gpu_ok) return PF_OK;
    *path = PF_JPEG_PATH_GPU;
    if (!d->hw) return PF_OK;
    int unsupported = 1;
    if (pf_nvjpeg.nvjpegJpegStreamParseHeader(d->hw, data, size, d->parse) ==
            NVJPEG_STATUS_SUCCESS &&
        pf_nvjpeg.nvjpegDecodeBatchedSupported(d->hw, d->parse, &unsupported) ==
            NVJPEG_STATUS_SUCCESS &&
        unsupported == 0) /* 0 = the engines take it */
        *path = PF_JPEG_PATH_HW;
    return PF_OK;
}

static void item_fail(pf_nvjpeg_item *it, pf_status st)
{
    it->status = st;
    snprintf(it->error, sizeof it->error, "%s", pf_last_error());
}

static nvjpegImage_t image_of(const pf_frame *f)
{
    nvjpegImage_t im;
    memset(&im, 0, sizeof im);
    im.channel[0] = f->data[0];
    im.pitch[0] = f->stride[0];
    return im;
}

static bool dst_ok(pf_nvjpeg_item *it)
{
    const pf_frame *f = it->dst;
    if (f && f->format == PF_PIXFMT_RGB24 && f->data[0] && pf_frame_domain(f) == PF_MEM_DEVICE)
        return true;
    item_fail(it, pf_set_error(PF_ERR_INVALID, "%s: nvJPEG decode needs an RGB24 device frame",
                               it->name));
    return false;
}

static pf_status decode_cpu(pf_nvjpeg_dec *d, pf_nvjpeg_item *it, pf_stream *s)
{
    pf_frame hf;
    memset(&hf, 0, sizeof hf);
    pf_status st = pf_frame_alloc(&hf, PF_PIXFMT_RGB24, it->dst->width, it->dst->height,
                                  d->pinned, s);
    if (st == PF_OK) st = pf_jpeg_decode(it->data, it->size, it->name, &hf);
    if (st == PF_OK) st = pf_frame_copy_async(it->dst, &hf, s);
    /* Stream-owned: the block is reused only after the copy has run. */
    pf_frame_unref(&hf);
    it->path = PF_JPEG_PATH_CPU;
    return st;
}

static pf_status decode_gpu(pf_nvjpeg_dec *d, pf_nvjpeg_item *it, pf_stream *s)
{
    nvjpegImage_t im = image_of(it->dst);
    nvjpegStatus_t r = pf_nvjpeg.nvjpegDecode(d->gpu, d->gpu_state, it->data, it->size,
                                              NVJPEG_OUTPUT_RGBI, &im, pf_nvjpeg_native(s));
    /* Where the GPU-hybrid backend refuses single images (the guide lists it
     * for the batched and decoupled APIs), the default backend (nvJPEG's
     * own choice of hybrid / GPU Huffman decode) serves from then on. */
    if (r != NVJPEG_STATUS_SUCCESS && r != NVJPEG_STATUS_BAD_JPEG && !d->gpu_is_default &&
        make_gpu_handle(d, NVJPEG_BACKEND_DEFAULT) == NVJPEG_STATUS_SUCCESS) {
        pf_log(PF_LOG_DEBUG, "nvJPEG: the GPU-hybrid backend said %s; using the default backend",
               pf_nvjpeg_status_name(r));
        r = pf_nvjpeg.nvjpegDecode(d->gpu, d->gpu_state, it->data, it->size, NVJPEG_OUTPUT_RGBI,
                                   &im, pf_nvjpeg_native(s));
    }
    it->path = PF_JPEG_PATH_GPU;
    if (r == NVJPEG_STATUS_SUCCESS) return PF_OK;
    return pf_set_error(PF_ERR_FORMAT, "%s: nvJPEG GPU decode failed: %s (status %d)", it->name,
                        pf_nvjpeg_status_name(r), r);
}

/* GPU, then the CPU (libjpeg's message when it refuses too). */
static void decode_one(pf_nvjpeg_dec *d, pf_nvjpeg_item *it, pf_stream *s)
{
    pf_status st = PF_ERR_FORMAT;
    if (it->path != PF_JPEG_PATH_CPU) {
        st = decode_gpu(d, it, s);
        if (st != PF_OK) pf_log(PF_LOG_DEBUG, "%s; trying libjpeg", pf_last_error());
    }
    if (st != PF_OK) st = decode_cpu(d, it, s);
    it->status = st;
    if (st != PF_OK) item_fail(it, st);
}

pf_status pf_nvjpeg_dec_batch(pf_nvjpeg_dec *d, pf_nvjpeg_item *items, int n, pf_stream *stream)
{
    PF_CHECK_ARG(d && (items || n == 0) && n >= 0 && stream, "pf_nvjpeg_dec_batch",
                 "d, items or stream is NULL, or n < 0");
    if (n > d->max_batch)
        return pf_set_error(PF_ERR_INVALID, "pf_nvjpeg_dec_batch: %d images, more than the "
                            "decoder's max_batch %d", n, d->max_batch);
    pf_status st = pf_nvjpeg_use_device(d->dev);
    if (st != PF_OK) return st;
    int nh = 0;
    for (int i = 0; i < n; i++) {
        pf_nvjpeg_item *it = &items[i];
        it->status = PF_OK;
        it->error[0] = '\0';
        if (!dst_ok(it)) continue;
        if (it->path == PF_JPEG_PATH_HW && d->hw) {
            d->ptrs[nh] = it->data;
            d->lens[nh] = it->size;
            d->imgs[nh] = image_of(it->dst);
            d->which[nh++] = i;
        } else {
            if (it->path == PF_JPEG_PATH_HW) it->path = PF_JPEG_PATH_GPU;
            decode_one(d, it, stream);
        }
    }
    if (nh > 0) {
        nvjpegStatus_t r = NVJPEG_STATUS_SUCCESS;
        if (d->hw_batch != nh) {
            r = pf_nvjpeg.nvjpegDecodeBatchedInitialize(d->hw, d->hw_state, nh, 1,
                                                        NVJPEG_OUTPUT_RGBI);
            d->hw_batch = r == NVJPEG_STATUS_SUCCESS ? nh : 0;
        }
        if (r == NVJPEG_STATUS_SUCCESS)
            r = pf_nvjpeg.nvjpegDecodeBatched(d->hw, d->hw_state, d->ptrs, d->lens, d->imgs,
                                              pf_nvjpeg_native(stream));
        if (r != NVJPEG_STATUS_SUCCESS) {
            /* One bad image fails the whole call: each goes again alone. */
            pf_log(PF_LOG_DEBUG, "nvJPEG: hardware batch of %d failed: %s (status %d); decoding "
                   "them one by one", nh, pf_nvjpeg_status_name(r), r);
            for (int k = 0; k < nh; k++) {
                pf_nvjpeg_item *it = &items[d->which[k]];
                it->path = PF_JPEG_PATH_GPU;
                decode_one(d, it, stream);
            }
        }
    }
    for (int i = 0; i < n; i++)
        if (items[i].status != PF_OK) {
            pf_set_error(items[i].status, "%s", items[i].error);
            return items[i].status;
        }
    return PF_OK;
}
