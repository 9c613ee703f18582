/* Names and the slot-to-frame view shared by both ends of pixflow IPC. */
#include <string.h>

#include "ipc_util.h"

#include "../core/error.h"

const char *pf_ipc_policy_name(pf_ipc_policy p)
{
    switch (p) {
    case PF_IPC_DEFAULT: return "default";
    case PF_IPC_BLOCK: return "block";
    case PF_IPC_LATEST_ONLY: return "latest_only";
    }
    return "?";
}

pf_status pf_ipc_policy_parse(const char *name, pf_ipc_policy *out)
{
    PF_CHECK_ARG(name && out, "pf_ipc_policy_parse", "name or out is NULL");
    if (!strcmp(name, "default")) *out = PF_IPC_DEFAULT;
    else if (!strcmp(name, "block")) *out = PF_IPC_BLOCK;
    else if (!strcmp(name, "latest_only") || !strcmp(name, "drop")) *out = PF_IPC_LATEST_ONLY;
    else
        return pf_set_error(PF_ERR_INVALID, "ipc policy '%s': expected block, latest_only or drop",
                            name);
    return PF_OK;
}

const char *pf_ipc_backend_name(pf_ipc_backend b)
{
    switch (b) {
    case PF_IPC_BACKEND_MEMFD: return "memfd";
    case PF_IPC_BACKEND_CUDA_VMM: return "cuda-vmm";
    case PF_IPC_BACKEND_CUDA_LEGACY: return "cuda-legacy";
    }
    return "?";
}

void ipc_frame_view(pf_frame *out, const ipc_config *c, pf_buffer *b, uint8_t *base,
                    uint64_t offset)
{
    memset(out, 0, sizeof *out);
    out->format = (pf_pixfmt)c->format;
    out->width = (int)c->width;
    out->height = (int)c->height;
    out->num_planes = (int)c->num_planes;
    out->pts = PF_NOPTS;
    for (int i = 0; i < out->num_planes; i++) {
        out->data[i] = base + offset + c->offset[i];
        out->stride[i] = (size_t)c->stride[i];
        out->buf[i] = pf_buffer_ref(b);
    }
}
