/* TEMPORARY placeholders so the library links while this part is written;
 * the owner deletes this file when the real code lands. */
#include <stdarg.h>
#include "kernels.h"
#include "../../core/error.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"

pf_status pf_nn_cpu_unary(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_unary");
}

pf_status pf_nn_cpu_cast(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_cast");
}

pf_status pf_nn_cpu_binary(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_binary");
}

pf_status pf_nn_cpu_where(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_where");
}

pf_status pf_nn_cpu_variadic(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_variadic");
}

pf_status pf_nn_cpu_reduce(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_reduce");
}

pf_status pf_nn_cpu_argminmax(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_argminmax");
}

pf_status pf_nn_cpu_softmax(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_softmax");
}

pf_status pf_nn_cpu_concat(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_concat");
}

pf_status pf_nn_cpu_reshape(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_reshape");
}

pf_status pf_nn_cpu_transpose(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_transpose");
}

pf_status pf_nn_cpu_slice(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_slice");
}

pf_status pf_nn_cpu_pad(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_pad");
}

pf_status pf_nn_cpu_gather(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_gather");
}

pf_status pf_nn_cpu_expand(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_expand");
}

pf_status pf_nn_cpu_tile(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_tile");
}

pf_status pf_nn_cpu_split(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_split");
}

pf_status pf_nn_cpu_depth_space(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_depth_space");
}

pf_status pf_nn_cpu_shape(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_shape");
}

pf_status pf_nn_cpu_constant_of_shape(const pf_nn_cpu_args *a)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_nn_cpu_constant_of_shape");
}
