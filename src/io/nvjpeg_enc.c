/* JPEG encode of device RGB frames through nvJPEG's GPU encoder (nvjpeg.h).
 * The bitstream comes back into a pinned buffer of the encoder's that grows
 * to the largest file so far. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "nvjpeg.h"
#include "nvjpeg_impl.h"

struct pf_nvjpeg_enc {
    pf_device *dev;
    pf_stream *stream;
    nvjpegHandle_t h;
    nvjpegEncoderState_t state;
    nvjpegEncoderParams_t params;
    pf_allocator *pinned;
    pf_buffer *out;                 /* pinned bitstream buffer */
};


void pf_nvjpeg_enc_destroy(pf_nvjpeg_enc **ep)
{
    pf_nvjpeg_enc *e = ep ? *ep : NULL;
    if (!e) return;
    if (e->stream) pf_stream_synchronize(e->stream);
    if (e->dev) pf_nvjpeg_use_device(e->dev);
    if (e->params) pf_nvjpeg.nvjpegEncoderParamsDestroy(e->params);
    if (e->state) pf_nvjpeg.nvjpegEncoderStateDestroy(e->state);
    if (e->h) pf_nvjpeg.nvjpegDestroy(e->h);
    pf_buffer_unref(&e->out);
    pf_allocator_destroy(&e->pinned);
    pf_stream_destroy(&e->stream);
    free(e);
    *ep = NULL;
}

pf_status pf_nvjpeg_enc_create(pf_device *dev, int quality, bool subsample_444,
                               pf_nvjpeg_enc **out)
{
    PF_CHECK_ARG(dev && out, "pf_nvjpeg_enc_create", "dev or out is NULL");
    *out = NULL;
    if (quality < 1 || quality > 100)
        return pf_set_error(PF_ERR_INVALID, "nvJPEG encoder: quality %d: expected 1..100", quality);
    pf_status st0 = pf_nvjpeg_require(dev);
    if (st0 != PF_OK) return st0;
    pf_nvjpeg_enc *e = calloc(1, sizeof *e);
    if (!e) return pf_set_error(PF_ERR_NOMEM, "nvJPEG encoder: out of host memory");
    e->dev = dev;
    pf_stream_params sp = pf_stream_params_default();
    sp.device = dev;
    pf_status st = pf_stream_create(&sp, &e->stream);
    pf_allocator_params ap = pf_allocator_params_default();
    ap.device = dev;
    ap.domain = PF_MEM_PINNED;
    ap.name = "nvjpeg-bitstream";
    if (st == PF_OK) st = pf_allocator_create(&ap, &e->pinned);
    if (st == PF_OK) st = pf_nvjpeg_use_device(dev);
    if (st != PF_OK) {
        pf_nvjpeg_enc_destroy(&e);
        return st;
    }
    pfnv_cuda_stream s = pf_nvjpeg_native(e->stream);
    nvjpegStatus_t r = pf_nvjpeg.nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, NULL, NULL,
                                                NVJPEG_FLAGS_DEFAULT, &e->h);
    const char *what = "nvjpegCreateEx";
    if (r == NVJPEG_STATUS_SUCCESS) {
        what = "nvjpegEncoderStateCreate";
        r = pf_nvjpeg.nvjpegEncoderStateCreate(e->h, &e->state, s);
    }
    if (r == NVJPEG_STATUS_SUCCESS) {
        what = "nvjpegEncoderParamsCreate";
        r = pf_nvjpeg.nvjpegEncoderParamsCreate(e->h, &e->params, s);
    }
    if (r == NVJPEG_STATUS_SUCCESS) {
        what = "nvjpegEncoderParamsSetQuality";
        r = pf_nvjpeg.nvjpegEncoderParamsSetQuality(e->params, quality, s);
    }
    if (r == NVJPEG_STATUS_SUCCESS) {
        /* libjpeg's jpeg_set_defaults: the standard tables, not optimised ones. */
        what = "nvjpegEncoderParamsSetOptimizedHuffman";
        r = pf_nvjpeg.nvjpegEncoderParamsSetOptimizedHuffman(e->params, 0, s);
    }
    if (r == NVJPEG_STATUS_SUCCESS) {
        what = "nvjpegEncoderParamsSetSamplingFactors";
        r = pf_nvjpeg.nvjpegEncoderParamsSetSamplingFactors(
            e->params, subsample_444 ? NVJPEG_CSS_444 : NVJPEG_CSS_420, s);
    }
    if (r != NVJPEG_STATUS_SUCCESS) {
        pf_nvjpeg_enc_destroy(&e);
        return pf_set_error(PF_ERR_DEVICE, "nvJPEG encoder on %s: %s failed: %s (status %d)",
                            pf_device_spec(dev), what, pf_nvjpeg_status_name(r), r);
    }
    *out = e;
    return PF_OK;
}

pf_stream *pf_nvjpeg_enc_stream(pf_nvjpeg_enc *e)
{
    return e ? e->stream : NULL;
}

pf_status pf_nvjpeg_enc_encode(pf_nvjpeg_enc *e, const pf_frame *src, const char *name,
                               const uint8_t **data, size_t *size)
{
    PF_CHECK_ARG(e && src && data && size, "pf_nvjpeg_enc_encode", "an argument is NULL");
    *data = NULL;
    *size = 0;
    if (src->format != PF_PIXFMT_RGB24 || pf_frame_domain(src) != PF_MEM_DEVICE ||
        src->width < 1 || src->height < 1)
        return pf_set_error(PF_ERR_INVALID, "%s: nvJPEG encode needs a non-empty RGB24 device "
                            "frame (got %s %dx%d)", name, pf_pixfmt_name(src->format), src->width,
                            src->height);
    pf_status st = pf_nvjpeg_use_device(e->dev);
    if (st != PF_OK) return st;
    pfnv_cuda_stream s = pf_nvjpeg_native(e->stream);
    nvjpegImage_t im;
    memset(&im, 0, sizeof im);
    im.channel[0] = src->data[0];
    im.pitch[0] = src->stride[0];
    nvjpegStatus_t r = pf_nvjpeg.nvjpegEncodeImage(e->h, e->state, e->params, &im,
                                                   NVJPEG_INPUT_RGBI, src->width, src->height, s);
    size_t n = 0;
    if (r == NVJPEG_STATUS_SUCCESS)
        r = pf_nvjpeg.nvjpegEncodeRetrieveBitstream(e->h, e->state, NULL, &n, s);
    if (r != NVJPEG_STATUS_SUCCESS)
        return pf_set_error(PF_ERR_DEVICE, "%s: nvJPEG encode failed: %s (status %d)", name,
                            pf_nvjpeg_status_name(r), r);
    if ((st = pf_stream_synchronize(e->stream)) != PF_OK) return st;
    if (!e->out || pf_buffer_size(e->out) < n) {
        pf_buffer_unref(&e->out);
        size_t cap = n + n / 4 + 4096;
        if ((st = pf_allocator_alloc(e->pinned, cap, NULL, &e->out)) != PF_OK) return st;
    }
    uint8_t *buf = pf_buffer_data(e->out);
    r = pf_nvjpeg.nvjpegEncodeRetrieveBitstream(e->h, e->state, buf, &n, s);
    if (r != NVJPEG_STATUS_SUCCESS)
        return pf_set_error(PF_ERR_DEVICE, "%s: nvJPEG bitstream retrieval failed: %s (status %d)",
                            name, pf_nvjpeg_status_name(r), r);
    if ((st = pf_stream_synchronize(e->stream)) != PF_OK) return st;
    *data = buf;
    *size = n;
    return PF_OK;
}
