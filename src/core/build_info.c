/* Build options, reported by `pixflow info`. */
#include "error.h"
#include "pf_build_config.h"

const pf_build_info *pf_get_build_info(void)
{
    static const pf_build_info info = {
        .version = PF_VERSION_STRING,
        .build_type = PF_BUILD_TYPE,
        .c_compiler = PF_BUILD_C_COMPILER,
#ifdef PF_HAVE_CUDA
        .cuda = 1,
        .cuda_compiler = PF_BUILD_CUDA_COMPILER,
        .cuda_arch = PF_BUILD_CUDA_ARCH,
#else
        .cuda = 0,
        .cuda_compiler = "",
        .cuda_arch = "",
#endif
        .sanitize = PF_BUILD_SANITIZE,
    };
    return &info;
}
