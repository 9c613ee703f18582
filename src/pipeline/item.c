/* Pipeline items (ownership helpers) and edge policy names/defaults. */
#include <string.h>

#include "pixflow/pipeline.h"

#include "../core/error.h"

void pf_item_unref(pf_item *item)
{
    if (!item) return;
    pf_frame_unref(&item->frame);
    pf_tensor_unref(&item->tensor);
    memset(item, 0, sizeof *item);
}

void pf_item_ref(pf_item *dst, const pf_item *src)
{
    if (!dst || !src || dst == src) return;
    /* The scalar fields first, then each part adds its own references
     * (pf_frame_ref / pf_tensor_ref copy the struct and ref its buffers). */
    *dst = *src;
    pf_frame_ref(&dst->frame, &src->frame);
    pf_tensor_ref(&dst->tensor, &src->tensor);
}

static const char *const policy_names[] = {"block", "drop_oldest", "drop_newest",
                                           "latest_only"};
#define NUM_POLICIES ((int)(sizeof policy_names / sizeof policy_names[0]))

const char *pf_edge_policy_name(pf_edge_policy p)
{
    if ((int)p < 0 || (int)p >= NUM_POLICIES) return "?";
    return policy_names[p];
}

pf_status pf_edge_policy_parse(const char *name, pf_edge_policy *out)
{
    if (!name || !out) return pf_set_error(PF_ERR_INVALID, "pf_edge_policy_parse: NULL argument");
    for (int i = 0; i < NUM_POLICIES; i++)
        if (!strcmp(name, policy_names[i])) {
            *out = (pf_edge_policy)i;
            return PF_OK;
        }
    return pf_set_error(PF_ERR_INVALID,
                        "unknown edge policy '%s' (expected block|drop_oldest|drop_newest|"
                        "latest_only)",
                        name);
}

pf_edge_params pf_edge_params_default(void)
{
    pf_edge_params p;
    memset(&p, 0, sizeof p);
    p.capacity = 4;
    p.policy = PF_EDGE_BLOCK;
    return p;
}
