/* Private to src/io/nvjpeg*.c: the loaded function table and helpers. */
#ifndef PF_IO_NVJPEG_IMPL_H
#define PF_IO_NVJPEG_IMPL_H

#include "nvjpeg_api.h"
#include "pixflow/pixflow.h"

/* Complete when pf_nvjpeg_available() said true; never read it before. */
extern pf_nvjpeg_fns pf_nvjpeg;

/* PF_ERR_UNSUPPORTED, saying why, unless dev is a CUDA device and libnvjpeg
 * loaded; then makes dev current. */
pf_status pf_nvjpeg_require(pf_device *dev);

/* Makes dev current on the calling thread (nvJPEG works on the current
 * device); PF_OK without CUDA in the build. */
pf_status pf_nvjpeg_use_device(pf_device *dev);

static inline pfnv_cuda_stream pf_nvjpeg_native(pf_stream *s)
{
    return (pfnv_cuda_stream)pf_stream_native(s);
}

/* "bad JPEG", "JPEG not supported", ... for messages. */
const char *pf_nvjpeg_status_name(int st);

#endif
