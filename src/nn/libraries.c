/* pf_nn_libraries() in builds without CUDA: the CPU executor loads nothing
 * that this list covers. CUDA builds define it in src/nn/cuda/dl_libs.c,
 * beside the loader. */
#include "pixflow/nn.h"

#ifndef PF_HAVE_CUDA
int pf_nn_libraries(pf_nn_library *out, int cap)
{
    (void)out;
    (void)cap;
    return 0;
}
#endif
