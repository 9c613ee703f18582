/* pixflow/pixflow.h - the whole public API. */
#ifndef PIXFLOW_PIXFLOW_H
#define PIXFLOW_PIXFLOW_H

#include "version.h"
#include "core.h"
#include "buffer.h"
#include "frame.h"
#include "tensor.h"
#include "thread.h"
#include "device.h"
#include "ops.h"
#include "nn.h"
#include "io.h"
#include "pipeline.h"
#include "prof.h"
#include "jobs.h"
#include "queue.h"
#include "ipc.h"

#endif
