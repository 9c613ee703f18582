/* Private backend interface.
 *
 * A backend is a table of function pointers; a device, stream or event is a
 * small struct pointing at its backend's table plus the backend's native
 * handle. The public wrappers in src/device/ validate every argument and set
 * the error messages, so a backend implements only the fast path and returns
 * a status (after calling pf_set_error for runtime failures with the runtime's
 * own error text).
 *
 * Slots marked OPTIONAL may be NULL; the wrappers then use the stated default.
 * The CPU backend (src/cpu/) is always registered; the CUDA backend
 * (src/cuda/) only when PF_HAVE_CUDA is defined. The core never includes a
 * backend header: backends are reached through pf_backend_get() only.
 */
#ifndef PF_DEVICE_BACKEND_H
#define PF_DEVICE_BACKEND_H

#include "pixflow/device.h"

typedef struct pf_backend pf_backend;

struct pf_device {
    const pf_backend *be;
    pf_device_props props;
    char spec[16];          /* "cpu", "cuda:3" */
};

struct pf_stream {
    const pf_backend *be;
    pf_device *dev;
    void *native;           /* cudaStream_t; NULL on the CPU */
};

struct pf_event {
    const pf_backend *be;
    pf_device *dev;
    void *native;           /* cudaEvent_t; CPU: heap int64 timestamp, -1 = never recorded */
    int recorded;
};

struct pf_backend {
    pf_device_type type;
    const char *name;

    /* Discovery: called once, under the registry's lock. Fills up to `max`
     * devices (be and props set by the backend, spec by the registry) and
     * returns their number; 0 with `detail` saying why when there are none.
     * `detail` also receives versions when devices are found. */
    int (*discover)(pf_device *devs, int max, char *detail, size_t detail_size);

    pf_status (*mem_info)(pf_device *dev, size_t *free_bytes, size_t *total_bytes);
    pf_status (*device_sync)(pf_device *dev);
    /* Peer-to-peer access between two devices of this backend: sets *ok and,
     * when the driver pairs them both ways, enables it both ways (idempotent).
     * NULL where there is no such thing (the CPU). */
    pf_status (*peer_enable)(pf_device *a, pf_device *b, bool *ok);

    /* Raw memory in a domain. PF_MEM_DEVICE and PF_MEM_PINNED for CUDA; the
     * CPU backend serves all three domains from the host heap. A failure for
     * lack of memory returns PF_ERR_NOMEM. */
    pf_status (*mem_alloc)(pf_device *dev, pf_mem_domain domain, size_t size, void **out);
    void (*mem_free)(pf_device *dev, pf_mem_domain domain, void *ptr);

    pf_status (*stream_create)(pf_device *dev, int priority, void **native);
    void (*stream_destroy)(pf_device *dev, void *native);
    pf_status (*stream_sync)(void *native);
    pf_status (*stream_query)(void *native);          /* PF_OK or PF_AGAIN */
    pf_status (*stream_launch_host)(void *native, void (*fn)(void *), void *user);

    pf_status (*event_create)(pf_device *dev, void **native);
    void (*event_destroy)(void *native);
    pf_status (*event_record)(void *event, void *stream);
    pf_status (*event_sync)(void *event);
    pf_status (*event_query)(void *event);            /* PF_OK or PF_AGAIN */
    pf_status (*event_elapsed)(void *start, void *end, float *ms);
    pf_status (*stream_wait_event)(void *stream, void *event); /* same backend */

    pf_status (*memcpy_async)(void *stream, void *dst, const void *src, size_t n);
    pf_status (*memcpy2d_async)(void *stream, void *dst, size_t dpitch, const void *src,
                                size_t spitch, size_t width, size_t rows);
    pf_status (*memset_async)(void *stream, void *dst, int value, size_t n);

    /* OPTIONAL graph capture (NULL: pf_graph_cache runs work directly).
     * graph_begin starts capturing the stream; graph_end stops it and returns
     * an instantiated executable graph, or an error when capture failed (the
     * stream is then out of capture mode again). */
    pf_status (*graph_begin)(void *stream);
    pf_status (*graph_end)(void *stream, void **exec);
    pf_status (*graph_launch)(void *exec, void *stream);
    void (*graph_destroy)(void *exec);
};

/* The backend table for a type, or NULL when not compiled in. */
const pf_backend *pf_backend_get(pf_device_type type);

extern const pf_backend pf_cpu_backend;
#ifdef PF_HAVE_CUDA
extern const pf_backend pf_cuda_backend;
#endif

/* The CPU device (always present). */
pf_device *pf_cpu_device(void);

#endif
