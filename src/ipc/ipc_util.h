/* Private: what the producer and the consumer share besides messages and
 * memory: turning a slot into a pf_frame. */
#ifndef PF_IPC_UTIL_H
#define PF_IPC_UTIL_H

#include "ipc_msg.h"

/* *out = the frame of config `c` at `base + offset` (a slot), each plane
 * holding a new reference on `b`. The config was checked by the parser, so
 * every plane lies inside the slot. */
void ipc_frame_view(pf_frame *out, const ipc_config *c, pf_buffer *b, uint8_t *base,
                    uint64_t offset);

#endif
