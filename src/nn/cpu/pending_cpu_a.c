/* TEMPORARY placeholders so the library links while this part is written;
 * the owner deletes this file when the real code lands. */
#include <stdarg.h>
#include "kernels.h"
#include "../../core/error.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"

pf_status pf_nn_cpu_conv(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_conv");
}

size_t pf_nn_cpu_conv_scratch(const pf_ir_graph *g, const pf_ir_node *n)
{
    return 0;
}

pf_status pf_nn_cpu_conv_transpose(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_conv_transpose");
}

size_t pf_nn_cpu_conv_transpose_scratch(const pf_ir_graph *g, const pf_ir_node *n)
{
    return 0;
}

pf_status pf_nn_cpu_gemm(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_gemm");
}

pf_status pf_nn_cpu_matmul(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_matmul");
}

pf_status pf_nn_cpu_pool(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_pool");
}

pf_status pf_nn_cpu_batchnorm(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_batchnorm");
}

pf_status pf_nn_cpu_resize(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_resize");
}
