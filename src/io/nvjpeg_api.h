/* Private: the part of NVIDIA's nvJPEG C API that pixflow uses, declared
 * here because pixflow loads libnvjpeg at run time (nvjpeg_lib.c) and builds
 * where the toolkit has no nvjpeg.h (this repository's build machine).
 *
 * Written from the nvJPEG Library Guide (docs.nvidia.com/cuda/nvjpeg, the
 * type declarations and the decoder / encoder API reference; releases 11.x
 * to 13.x keep these values and layouts: the library's ABI is stable within a
 * soname and these types have not changed since CUDA 11.0). Only what is used
 * is declared: opaque handles, the enum values passed or compared, the
 * nvjpegImage_t layout, and function pointer types. Every function returns
 * nvjpegStatus_t (an int-sized C enum). */
#ifndef PF_IO_NVJPEG_API_H
#define PF_IO_NVJPEG_API_H

#include <stddef.h>

/* Opaque handles (pointers to incomplete structs in the documented API). */
typedef struct pfnv_handle_s *nvjpegHandle_t;
typedef struct pfnv_state_s *nvjpegJpegState_t;
typedef struct pfnv_stream_s *nvjpegJpegStream_t;
typedef struct pfnv_enc_state_s *nvjpegEncoderState_t;
typedef struct pfnv_enc_params_s *nvjpegEncoderParams_t;
/* cudaStream_t is a pointer to the runtime's struct CUstream_st. */
typedef struct CUstream_st *pfnv_cuda_stream;

/* nvjpegStatus_t */
enum {
    NVJPEG_STATUS_SUCCESS = 0,
    NVJPEG_STATUS_NOT_INITIALIZED = 1,
    NVJPEG_STATUS_INVALID_PARAMETER = 2,
    NVJPEG_STATUS_BAD_JPEG = 3,
    NVJPEG_STATUS_JPEG_NOT_SUPPORTED = 4,
    NVJPEG_STATUS_ALLOCATOR_FAILURE = 5,
    NVJPEG_STATUS_EXECUTION_FAILED = 6,
    NVJPEG_STATUS_ARCH_MISMATCH = 7,
    NVJPEG_STATUS_INTERNAL_ERROR = 8,
    NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED = 9,
    NVJPEG_STATUS_INCOMPLETE_BITSTREAM = 10
};
typedef int nvjpegStatus_t;

/* nvjpegBackend_t */
enum {
    NVJPEG_BACKEND_DEFAULT = 0,
    NVJPEG_BACKEND_HYBRID = 1,     /* Huffman decode on the CPU */
    NVJPEG_BACKEND_GPU_HYBRID = 2, /* Huffman decode on the GPU (batched / large images) */
    NVJPEG_BACKEND_HARDWARE = 3    /* the NVJPG engines (A100, H100, H200), batched API only */
};
typedef int nvjpegBackend_t;

/* nvjpegChromaSubsampling_t */
enum {
    NVJPEG_CSS_444 = 0,
    NVJPEG_CSS_422 = 1,
    NVJPEG_CSS_420 = 2,
    NVJPEG_CSS_440 = 3,
    NVJPEG_CSS_411 = 4,
    NVJPEG_CSS_410 = 5,
    NVJPEG_CSS_GRAY = 6,
    NVJPEG_CSS_UNKNOWN = -1
};
typedef int nvjpegChromaSubsampling_t;

/* nvjpegOutputFormat_t: RGBI = interleaved RGB, written to channel[0] only. */
enum { NVJPEG_OUTPUT_RGBI = 5 };
typedef int nvjpegOutputFormat_t;

/* nvjpegInputFormat_t (encoder): RGBI = interleaved RGB in channel[0]. */
enum { NVJPEG_INPUT_RGBI = 5 };
typedef int nvjpegInputFormat_t;

/* libraryPropertyType (library_types.h) for nvjpegGetProperty. */
enum { PFNV_MAJOR_VERSION = 0, PFNV_MINOR_VERSION = 1, PFNV_PATCH_LEVEL = 2 };

/* nvjpegCreateEx flags */
#define NVJPEG_FLAGS_DEFAULT 0u

#define NVJPEG_MAX_COMPONENT 4
/* Destination / source image: per component a pointer and a row pitch in
 * bytes. For the interleaved formats only channel[0] / pitch[0] are used. */
typedef struct nvjpegImage_t {
    unsigned char *channel[NVJPEG_MAX_COMPONENT];
    size_t pitch[NVJPEG_MAX_COMPONENT];
} nvjpegImage_t;

/* The functions pixflow resolves: X(return-less name, parameter list). */
#define PF_NVJPEG_FUNCS(X) \
    X(nvjpegGetProperty, (int type, int *value)) \
    X(nvjpegCreateEx, (nvjpegBackend_t backend, void *dev_allocator, void *pinned_allocator, \
                       unsigned int flags, nvjpegHandle_t *handle)) \
    X(nvjpegDestroy, (nvjpegHandle_t handle)) \
    X(nvjpegJpegStateCreate, (nvjpegHandle_t handle, nvjpegJpegState_t *state)) \
    X(nvjpegJpegStateDestroy, (nvjpegJpegState_t state)) \
    X(nvjpegDecode, (nvjpegHandle_t handle, nvjpegJpegState_t state, const unsigned char *data, \
                     size_t length, nvjpegOutputFormat_t output_format, \
                     nvjpegImage_t *destination, pfnv_cuda_stream stream)) \
    X(nvjpegDecodeBatchedInitialize, (nvjpegHandle_t handle, nvjpegJpegState_t state, \
                                      int batch_size, int max_cpu_threads, \
                                      nvjpegOutputFormat_t output_format)) \
    X(nvjpegDecodeBatched, (nvjpegHandle_t handle, nvjpegJpegState_t state, \
                            const unsigned char *const *data, const size_t *lengths, \
                            nvjpegImage_t *destinations, pfnv_cuda_stream stream)) \
    X(nvjpegJpegStreamCreate, (nvjpegHandle_t handle, nvjpegJpegStream_t *stream)) \
    X(nvjpegJpegStreamDestroy, (nvjpegJpegStream_t stream)) \
    X(nvjpegJpegStreamParseHeader, (nvjpegHandle_t handle, const unsigned char *data, \
                                    size_t length, nvjpegJpegStream_t stream)) \
    X(nvjpegDecodeBatchedSupported, (nvjpegHandle_t handle, nvjpegJpegStream_t stream, \
                                     int *is_supported)) \
    X(nvjpegEncoderStateCreate, (nvjpegHandle_t handle, nvjpegEncoderState_t *state, \
                                 pfnv_cuda_stream stream)) \
    X(nvjpegEncoderStateDestroy, (nvjpegEncoderState_t state)) \
    X(nvjpegEncoderParamsCreate, (nvjpegHandle_t handle, nvjpegEncoderParams_t *params, \
                                  pfnv_cuda_stream stream)) \
    X(nvjpegEncoderParamsDestroy, (nvjpegEncoderParams_t params)) \
    X(nvjpegEncoderParamsSetQuality, (nvjpegEncoderParams_t params, const int quality, \
                                      pfnv_cuda_stream stream)) \
    X(nvjpegEncoderParamsSetOptimizedHuffman, (nvjpegEncoderParams_t params, \
                                               const int optimized, pfnv_cuda_stream stream)) \
    X(nvjpegEncoderParamsSetSamplingFactors, (nvjpegEncoderParams_t params, \
                                              const nvjpegChromaSubsampling_t css, \
                                              pfnv_cuda_stream stream)) \
    X(nvjpegEncodeImage, (nvjpegHandle_t handle, nvjpegEncoderState_t state, \
                          const nvjpegEncoderParams_t params, const nvjpegImage_t *source, \
                          nvjpegInputFormat_t input_format, int image_width, int image_height, \
                          pfnv_cuda_stream stream)) \
    X(nvjpegEncodeRetrieveBitstream, (nvjpegHandle_t handle, nvjpegEncoderState_t state, \
                                      unsigned char *data, size_t *length, \
                                      pfnv_cuda_stream stream))

#define PFNV_SLOT(name, params) nvjpegStatus_t(*name) params;
typedef struct pf_nvjpeg_fns {
    PF_NVJPEG_FUNCS(PFNV_SLOT)
} pf_nvjpeg_fns;
#undef PFNV_SLOT

#endif
