/* dlpack.h - the DLPack ABI (https://dmlc.github.io/dlpack/latest/), written
 * from the specification: the structs a producer hands over in a PyCapsule
 * named "dltensor" (DLManagedTensor) or, from DLPack 1.0 on,
 * "dltensor_versioned" (DLManagedTensorVersioned). A consumer renames the
 * capsule to "used_dltensor" / "used_dltensor_versioned" and calls the
 * deleter when done; an unconsumed capsule's destructor calls it. */
#ifndef PFPY_DLPACK_H
#define PFPY_DLPACK_H

#include <stdint.h>

enum {
    PFDL_CPU = 1,
    PFDL_CUDA = 2,
    PFDL_CUDA_HOST = 3,        /* pinned host memory */
    PFDL_CUDA_MANAGED = 13
};

enum { PFDL_INT = 0, PFDL_UINT = 1, PFDL_FLOAT = 2, PFDL_BFLOAT = 4, PFDL_BOOL = 6 };

typedef struct {
    int32_t device_type;
    int32_t device_id;
} pfdl_device;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} pfdl_dtype;

typedef struct {
    void *data;
    pfdl_device device;
    int32_t ndim;
    pfdl_dtype dtype;
    int64_t *shape;
    int64_t *strides;          /* elements; NULL = compact row-major */
    uint64_t byte_offset;
} pfdl_tensor;

typedef struct pfdl_managed {
    pfdl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct pfdl_managed *self);
} pfdl_managed;

typedef struct {
    uint32_t major, minor;
} pfdl_version;

#define PFDL_FLAG_READ_ONLY (1ull << 0)
#define PFDL_FLAG_IS_COPIED (1ull << 1)

typedef struct pfdl_managed_versioned {
    pfdl_version version;
    void *manager_ctx;
    void (*deleter)(struct pfdl_managed_versioned *self);
    uint64_t flags;
    pfdl_tensor dl_tensor;
} pfdl_managed_versioned;

#endif
