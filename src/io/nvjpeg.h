/* Private: JPEG decode and encode on a CUDA device through nvJPEG, loaded at
 * run time (nvjpeg_lib.c), with libjpeg-turbo on the CPU for what the GPU
 * does not take. Used by the reproject job (src/jobs/reproject*.c).
 *
 * Decode paths, chosen per image (pf_nvjpeg_dec_probe):
 *   HW   the NVJPG hardware engines (NVJPEG_BACKEND_HARDWARE, batched API):
 *        baseline Huffman JPEGs the engines accept (nvjpegDecodeBatchedSupported)
 *   GPU  nvJPEG's GPU-hybrid backend (Huffman decode on the GPU): other
 *        baseline / extended sequential Huffman 8-bit JPEGs (and everything
 *        when the GPU has no engines)
 *   CPU  libjpeg-turbo: progressive, arithmetic-coded, lossless, 12-bit,
 *        CMYK, truncated (no EOI) files; libjpeg's own messages for those it
 *        refuses
 * Output is RGB24 interleaved in device frames; a grayscale JPEG gives
 * R = G = B as libjpeg's JCS_EXT_RGB does.
 *
 * Memory: nvJPEG's own device and pinned allocators (cudaMalloc /
 * cudaHostAlloc inside nvJPEG, kept in its states across calls); passing
 * ours would need C callbacks without a user pointer (no way to reach a
 * pf_allocator), so we do not. The compressed bytes are the caller's
 * (the reproject job reads them into pinned ring blocks).
 *
 * Threading: a decoder or encoder object is used by one thread at a time
 * (nvJPEG's states are per thread); create one per thread. */
#ifndef PF_IO_NVJPEG_H
#define PF_IO_NVJPEG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pixflow/pixflow.h"

/* Loader ----------------------------------------------------------------------------------- */

/* Whether libnvjpeg could be loaded with every function pixflow uses. The
 * first call tries $PF_NVJPEG_LIBRARY when set (tests point it at a missing
 * file), else libnvjpeg.so.13, then libnvjpeg.so. On false, why (may be
 * NULL) says what failed. Thread-safe; the answer is kept. */
bool pf_nvjpeg_available(char *why, size_t why_size);
/* "13.0.1 (/usr/.../libnvjpeg.so.13)" after a successful load, else "". */
const char *pf_nvjpeg_version(void);

/* Header scan (no library) ------------------------------------------------------------------- */

typedef enum pf_jpeg_path {
    PF_JPEG_PATH_HW = 0,
    PF_JPEG_PATH_GPU = 1,
    PF_JPEG_PATH_CPU = 2,
    PF_JPEG_PATHS = 3
} pf_jpeg_path;

/* "hardware", "gpu", "cpu" */
const char *pf_jpeg_path_name(pf_jpeg_path p);

typedef struct pf_jpeg_header {
    int width, height, components, precision;
    int sof;                /* the frame marker's low byte: 0xc0 baseline, 0xc2 progressive... */
    bool has_eoi;           /* the file ends with an EOI marker (not truncated) */
    bool gpu_ok;            /* sequential Huffman, 8-bit, 1 or 3 components, EOI present */
} pf_jpeg_header;

/* Walks the markers up to the frame header. PF_ERR_FORMAT naming `name`
 * when the bytes are not a JPEG or its header is damaged. */
pf_status pf_jpeg_scan(const uint8_t *data, size_t size, const char *name, pf_jpeg_header *h);

/* Decoder ------------------------------------------------------------------------------------ */

typedef struct pf_nvjpeg_dec pf_nvjpeg_dec;

/* For a CUDA device; max_batch >= 1 images per pf_nvjpeg_dec_batch call.
 * PF_ERR_UNSUPPORTED (message saying why) when the device is not CUDA or
 * libnvjpeg is missing. Without hardware engines every GPU image takes the
 * GPU path (pf_nvjpeg_dec_has_hw says so). */
pf_status pf_nvjpeg_dec_create(pf_device *dev, int max_batch, pf_nvjpeg_dec **out);
void pf_nvjpeg_dec_destroy(pf_nvjpeg_dec **d);
bool pf_nvjpeg_dec_has_hw(const pf_nvjpeg_dec *d);

/* The image's size and the path it will take. PF_ERR_FORMAT naming `name`
 * for a damaged header. */
pf_status pf_nvjpeg_dec_probe(pf_nvjpeg_dec *d, const uint8_t *data, size_t size,
                              const char *name, int *width, int *height, pf_jpeg_path *path);

typedef struct pf_nvjpeg_item {
    const uint8_t *data;    /* the file's bytes (pinned memory is faster), borrowed */
    size_t size;
    const char *name;       /* for messages */
    pf_frame *dst;          /* RGB24 device frame of the image's size */
    pf_jpeg_path path;      /* from pf_nvjpeg_dec_probe; on return the path that decoded it */
    pf_status status;       /* out: PF_OK or the failure (pf_last_error() holds the last one) */
    char error[256];        /* out: the failure's message, naming the file */
} pf_nvjpeg_item;

/* Decodes n <= max_batch images into their frames on `stream` (asynchronous
 * for the GPU paths: the frames are ready when the stream's work so far has
 * run; a CPU-path image is decoded here and its upload queued). HW images
 * go in one batched call; if that call fails, each is retried alone on the
 * GPU path, then on the CPU, so a bad file fails alone. Returns PF_OK when
 * every item decoded, else the first failure (each item has its own). */
pf_status pf_nvjpeg_dec_batch(pf_nvjpeg_dec *d, pf_nvjpeg_item *items, int n, pf_stream *stream);

/* Encoder ------------------------------------------------------------------------------------ */

typedef struct pf_nvjpeg_enc pf_nvjpeg_enc;

/* quality 1..100 and 4:2:0 (subsample_444 false) or 4:4:4 chroma, as
 * pf_image_write_params; standard (not optimised) Huffman tables as
 * libjpeg's defaults. Owns a stream on dev. */
pf_status pf_nvjpeg_enc_create(pf_device *dev, int quality, bool subsample_444,
                               pf_nvjpeg_enc **out);
void pf_nvjpeg_enc_destroy(pf_nvjpeg_enc **e);
pf_stream *pf_nvjpeg_enc_stream(pf_nvjpeg_enc *e);

/* Encodes an RGB24 device frame (ready on the encoder's stream: make it wait
 * on an event first when another stream wrote it) and returns the file's
 * bytes in *data / *size: the encoder's pinned buffer, valid until its next
 * call. Waits for the encode. */
pf_status pf_nvjpeg_enc_encode(pf_nvjpeg_enc *e, const pf_frame *src, const char *name,
                               const uint8_t **data, size_t *size);

#endif
