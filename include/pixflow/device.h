/* pixflow/device.h - devices, streams, events, copies, memory pools, CUDA
 * graphs and device monitoring, on every backend (CPU always; CUDA when
 * compiled in and a GPU is present).
 *
 *   pf_device *dev = NULL;
 *   pf_device_select(NULL, &dev);          // $PIXFLOW_DEVICE, else "auto"
 *   pf_stream *s = NULL;
 *   pf_stream_params sp = pf_stream_params_default();
 *   sp.device = dev;
 *   pf_stream_create(&sp, &s);
 *
 *   pf_allocator_params ap = pf_allocator_params_default();
 *   ap.device = dev;                       // domain PF_MEM_DEVICE by default
 *   ap.cap_bytes = 2ull << 30;             // hard cap: 2 GiB
 *   pf_allocator *alloc = NULL;
 *   pf_allocator_create(&ap, &alloc);
 *
 *   pf_buffer *d = NULL;
 *   pf_allocator_alloc(alloc, n, s, &d);     // stream-ordered, cached
 *   pf_memcpy_async(s, pf_buffer_data(d), host_ptr, n);
 *   pf_stream_synchronize(s);
 *   pf_buffer_unref(&d);                      // back to the cache
 *
 * Devices are process-lifetime singletons: pointers from pf_device_get() and
 * pf_device_select() stay valid until exit and are never freed. The CPU device
 * always exists. On the CPU backend streams run work immediately on the
 * calling thread (a stream is then trivially in order), events record host
 * timestamps, and "device" memory is host memory.
 *
 * A device, stream or event of one backend may be mixed with another only
 * where this header says so (pf_stream_wait_event accepts any event).
 */
#ifndef PIXFLOW_DEVICE_H
#define PIXFLOW_DEVICE_H

#include <stdbool.h>

#include "buffer.h"

PF_BEGIN_DECLS

/* Devices -------------------------------------------------------------------- */

typedef enum pf_device_type {
    PF_DEVICE_CPU = 0,
    PF_DEVICE_CUDA = 1
} pf_device_type;

#define PF_DEVICE_TYPE_COUNT 2

typedef struct pf_device_props {
    pf_device_type type;
    int index;                  /* index among devices of its type */
    char name[128];             /* "NVIDIA H100 80GB HBM3", CPU model name */
    int cc_major, cc_minor;     /* CUDA compute capability; 0.0 for the CPU */
    int multiprocessors;        /* CUDA SMs; CPU: online cores */
    size_t total_memory;        /* bytes of device memory (CPU: physical RAM) */
    size_t l2_cache_bytes;      /* 0 if unknown */
    int max_threads_per_block;  /* 0 for the CPU */
    int async_engines;          /* copy engines able to overlap with compute */
    bool unified_addressing;    /* one address space with the host */
    bool concurrent_managed;    /* unused by pixflow today; reported for info */
    char pci_bus_id[32];        /* "0000:1b:00.0", "" for the CPU */
} pf_device_props;

PF_API const char *pf_device_type_name(pf_device_type type);

/* Number of usable devices of a type: 1 for the CPU, 0 for CUDA when it is
 * not compiled in or no GPU/driver is present. Thread-safe. */
PF_API int pf_device_count(pf_device_type type);

/* Returns the device, or PF_ERR_NO_DEVICE with a message saying why. */
PF_API pf_status pf_device_get(pf_device_type type, int index, pf_device **out);

/* Chooses a device from a spec: "auto" (first CUDA device if there is one,
 * else the CPU; falling back logs one PF_LOG_INFO line saying why), "cpu",
 * "cuda" (= "cuda:0") or "cuda:N". spec NULL or "" means the environment
 * variable PIXFLOW_DEVICE, or "auto" when that is unset or empty. A spec
 * naming a device that is not there is an error (no silent fallback). */
PF_API pf_status pf_device_select(const char *spec, pf_device **out);

/* Static properties; the pointer lives as long as the device (forever). */
PF_API const pf_device_props *pf_device_props_get(const pf_device *dev);
PF_API pf_device_type pf_device_get_type(const pf_device *dev);

/* Whether copies between devices a and b may go directly over NVLink or
 * PCIe peer-to-peer (either device's streams then address the other's
 * memory). The first call for a pair asks the driver and enables it both
 * ways, and logs the outcome (info); later calls return the cached answer.
 * False for the same device, the CPU, and pairs the driver does not
 * connect: copies between those go through pinned host memory (the
 * pipeline's transfers count each kind). Thread-safe. */
PF_API bool pf_device_peer_access(pf_device *a, pf_device *b);
/* "cpu", "cuda:0", ... */
PF_API const char *pf_device_spec(const pf_device *dev);

/* Current free and total memory in bytes (CPU: available and total RAM). */
PF_API pf_status pf_device_memory(pf_device *dev, size_t *free_bytes, size_t *total_bytes);

/* Waits for all work on the device (all streams). */
PF_API pf_status pf_device_synchronize(pf_device *dev);

/* Backends compiled into this build and whether they are usable here. */
typedef struct pf_backend_info {
    pf_device_type type;
    const char *name;      /* "cpu", "cuda" */
    bool compiled;         /* compiled into this build */
    bool available;        /* at least one usable device */
    int device_count;
    char detail[256];      /* runtime/driver versions, or why not available */
} pf_backend_info;

/* Fills info for `type`; always succeeds for a valid type. */
PF_API pf_status pf_backend_info_get(pf_device_type type, pf_backend_info *out);

/* Streams -------------------------------------------------------------------- */

typedef struct pf_stream_params {
    pf_device *device;   /* NULL = the CPU device */
    int priority;        /* 0 = default; negative = higher priority (CUDA's
                            convention), clamped to the device's range */
} pf_stream_params;

PF_API pf_stream_params pf_stream_params_default(void);

/* A stream is an in-order queue of device work (a non-blocking cudaStream_t
 * on CUDA). A stream may be used from several threads, but the order of work
 * issued concurrently from different threads is unspecified. */
PF_API pf_status pf_stream_create(const pf_stream_params *p, pf_stream **out);
/* Waits for the stream's work, destroys it, sets *s = NULL; accepts NULL. */
PF_API void pf_stream_destroy(pf_stream **s);
PF_API pf_status pf_stream_synchronize(pf_stream *s);
/* PF_OK when all work issued so far is complete, PF_AGAIN while some is not. */
PF_API pf_status pf_stream_query(pf_stream *s);
PF_API pf_device *pf_stream_device(const pf_stream *s);
/* The backend's handle (cudaStream_t for CUDA, NULL for the CPU). */
PF_API void *pf_stream_native(const pf_stream *s);

/* Runs fn(user) on a host thread once all work issued before it on `s` is
 * done; later work on `s` waits for fn to return. fn must not call device
 * APIs (CUDA forbids it inside host callbacks). CPU: runs fn now. */
PF_API pf_status pf_stream_launch_host(pf_stream *s, void (*fn)(void *user), void *user);

/* Events -------------------------------------------------------------------- */

typedef struct pf_event pf_event;

/* Events carry timing. An event never recorded counts as complete. */
PF_API pf_status pf_event_create(pf_device *dev, pf_event **out);
PF_API void pf_event_destroy(pf_event **e);
/* Captures the point in `s` reached so far (s must be on the event's device). */
PF_API pf_status pf_event_record(pf_event *e, pf_stream *s);
PF_API pf_status pf_event_synchronize(pf_event *e);
/* PF_OK when the recorded work is complete, PF_AGAIN while it is not. */
PF_API pf_status pf_event_query(pf_event *e);
/* Makes later work on `s` wait for `e` without blocking the host. Any
 * backend: a CUDA stream waiting on a CPU event returns at once (CPU work is
 * complete when recorded); a CPU stream waiting on a CUDA event blocks the
 * calling thread until the event completes. */
PF_API pf_status pf_stream_wait_event(pf_stream *s, pf_event *e);
/* Milliseconds between two events recorded on one device; PF_AGAIN while
 * either is not complete yet. */
PF_API pf_status pf_event_elapsed_ms(pf_event *start, pf_event *end, float *ms);

/* Copies ---------------------------------------------------------------------- */

/* Stream-ordered copies between any memory the stream's device can address:
 * host, pinned, or device memory (of this device). Returns at once on CUDA;
 * pageable host memory makes the CUDA copy partly synchronous (CUDA's rule).
 * The caller keeps both ranges alive and unmodified until the copy is done
 * (synchronize, query or an event). n == 0 is a no-op. */
PF_API pf_status pf_memcpy_async(pf_stream *s, void *dst, const void *src, size_t n);
/* `rows` rows of `width_bytes` bytes, with row pitches in bytes. */
PF_API pf_status pf_memcpy2d_async(pf_stream *s, void *dst, size_t dst_pitch, const void *src,
                                   size_t src_pitch, size_t width_bytes, size_t rows);
/* dst must be device or pinned memory on CUDA (the CPU backend takes any). */
PF_API pf_status pf_memset_async(pf_stream *s, void *dst, int value, size_t n);
/* Buffer-checked copy: fails with PF_ERR_INVALID naming the range when it
 * does not fit in either buffer, or PF_ERR_UNSUPPORTED when a buffer lives on
 * a device the stream cannot reach. */
PF_API pf_status pf_buffer_copy_async(pf_stream *s, pf_buffer *dst, size_t dst_offset,
                                      const pf_buffer *src, size_t src_offset, size_t n);

/* Caching allocator ----------------------------------------------------------------
 *
 * Hands out pf_buffers from memory it keeps: a freed block goes back to a
 * per-size-class free list instead of to cudaFree, so the steady state makes no
 * runtime allocation calls. Requests are rounded up to a size class
 * (pf_allocator_size_class(): multiples of 512 B up to 4 KiB, then 8 classes
 * per power of two, so at most 12.5% is lost to rounding).
 *
 * Stream-aware reuse: every block belongs to the stream it was allocated on.
 * When its last reference is dropped the allocator records an event on that
 * stream; the block is handed out again at once on the same stream (stream
 * order makes it safe), and on another stream only after making that stream
 * wait for the event. If the block was used on other streams too, the caller
 * must order that use before the owning stream's point at unref time.
 *
 * Hard cap: bytes held from the runtime (in use + cached) never exceed
 * cap_bytes. A request that would cross it first releases cached blocks, then
 * fails with PF_ERR_NOMEM and a message with the figures. A runtime
 * out-of-memory also releases the cache and retries once.
 *
 * Lifetime: pf_allocator_destroy() releases the cache and drops the caller's
 * handle; buffers still out stay valid, and the allocator's memory is freed
 * when the last of them comes back. All functions are thread-safe. */

typedef struct pf_allocator_params {
    pf_device *device;     /* NULL = the CPU device */
    pf_mem_domain domain;  /* default PF_MEM_DEVICE; PF_MEM_PINNED and PF_MEM_HOST
                              allowed (pinned on the CPU device = host memory) */
    size_t cap_bytes;      /* 0 = no cap */
    const char *name;      /* used in messages and statistics; copied */
} pf_allocator_params;

PF_API pf_allocator_params pf_allocator_params_default(void);
PF_API pf_status pf_allocator_create(const pf_allocator_params *p, pf_allocator **out);
PF_API void pf_allocator_destroy(pf_allocator **a);

/* A buffer of at least `size` bytes (pf_buffer_size() reports `size`), aligned
 * to 256 bytes, owned by `stream` (NULL = the device's default ordering:
 * synchronous reuse only). size 0 is invalid. `stream` must belong to the
 * allocator's device and stay alive until the buffer's last reference is
 * dropped (dropping it records an event on the stream). */
PF_API pf_status pf_allocator_alloc(pf_allocator *a, size_t size, pf_stream *stream,
                                    pf_buffer **out);

/* Returns all cached free blocks to the runtime (waiting for their pending
 * stream work first). Blocks in use are untouched. */
PF_API void pf_allocator_trim(pf_allocator *a);

typedef struct pf_allocator_stats {
    size_t bytes_in_use;        /* size-class bytes of blocks handed out */
    size_t bytes_cached;        /* free blocks kept for reuse */
    size_t bytes_reserved;      /* in use + cached: what counts against the cap */
    size_t peak_bytes_in_use;
    size_t peak_bytes_reserved;
    size_t cap_bytes;           /* 0 = none */
    uint64_t blocks_in_use;
    uint64_t requests;          /* successful pf_allocator_alloc calls */
    uint64_t cache_hits;        /* requests served from the cache */
    uint64_t runtime_allocs;    /* cudaMalloc/cudaHostAlloc/malloc calls */
    uint64_t runtime_frees;     /* blocks returned to the runtime (trim, cap, OOM) */
    uint64_t cross_stream_reuses; /* cache hits that needed a stream wait */
    uint64_t failures;          /* requests refused (cap or runtime OOM) */
} pf_allocator_stats;

PF_API pf_status pf_allocator_get_stats(const pf_allocator *a, pf_allocator_stats *out);
PF_API const char *pf_allocator_name(const pf_allocator *a);

/* The size a request is rounded up to. 0 for 0 or on overflow. */
PF_API size_t pf_allocator_size_class(size_t size);

/* Pinned host pool --------------------------------------------------------------
 *
 * block_count blocks of block_size bytes of page-locked host memory, all
 * allocated at creation (on the CPU device: ordinary host memory, reported as
 * PF_MEM_HOST). pf_pinned_pool_acquire() hands out a whole block as a
 * pf_buffer; the block comes back when its last reference is dropped, waking
 * one waiter. Drop the last reference only after any async copy reading or
 * writing the block is complete (debug poisoning makes that bug visible). Thread-safe. The pool's memory is freed when the pool has been
 * destroyed and its last block has come back. Debug builds poison returned
 * blocks with 0xDB. */

typedef struct pf_pinned_pool pf_pinned_pool;

typedef struct pf_pinned_pool_params {
    pf_device *device;     /* device the memory is pinned for; NULL = CPU */
    size_t block_size;     /* bytes, >= 1 */
    int block_count;       /* >= 1 */
    const char *name;      /* copied */
} pf_pinned_pool_params;

PF_API pf_pinned_pool_params pf_pinned_pool_params_default(void);
PF_API pf_status pf_pinned_pool_create(const pf_pinned_pool_params *p, pf_pinned_pool **out);
/* Closes the pool (waiters get PF_ERR_CLOSED), drops the handle, sets *p = NULL.
 * No thread may call acquire on the handle after this returns. */
PF_API void pf_pinned_pool_destroy(pf_pinned_pool **p);
/* Timeout semantics as in thread.h: 0 = PF_AGAIN when empty, < 0 wait,
 * > 0 PF_TIMEOUT after that many microseconds. */
PF_API pf_status pf_pinned_pool_acquire(pf_pinned_pool *p, int64_t timeout_us, pf_buffer **out);

typedef struct pf_pinned_pool_stats {
    size_t block_size;
    int block_count;
    int blocks_free;
    int min_blocks_free;        /* low-water mark */
    uint64_t acquires;
    uint64_t waits;             /* acquires that had to wait */
    uint64_t timeouts;          /* acquires that gave up (PF_AGAIN or PF_TIMEOUT) */
    bool pinned;                /* page-locked (false on the CPU device) */
} pf_pinned_pool_stats;

PF_API pf_status pf_pinned_pool_get_stats(const pf_pinned_pool *p, pf_pinned_pool_stats *out);

/* CUDA graphs -------------------------------------------------------------------
 *
 * Captures the device work a function issues on a stream, caches the
 * instantiated graph under a caller-given key (e.g. a shape signature), and
 * replays it on later calls with the same key: one launch instead of many.
 *
 * The work function must issue the same work for the same key, touching the
 * same addresses (a graph bakes in pointers: use buffers from pools sized at
 * start) and must not synchronize or allocate. It may be called twice for one
 * run: when capture fails (e.g. it calls something capture forbids) the work
 * is run again directly and the key is remembered as uncapturable, so later
 * runs of that key go straight to direct execution. On the CPU backend every
 * run is direct. Not thread-safe: one cache per stream/thread. */

typedef struct pf_graph_cache pf_graph_cache;
typedef pf_status (*pf_graph_work_fn)(void *user, pf_stream *stream);

typedef struct pf_graph_cache_params {
    int max_entries;       /* least recently used graphs evicted beyond this; 0 = 64 */
} pf_graph_cache_params;

PF_API pf_graph_cache_params pf_graph_cache_params_default(void);
PF_API pf_status pf_graph_cache_create(const pf_graph_cache_params *p, pf_graph_cache **out);
PF_API void pf_graph_cache_destroy(pf_graph_cache **gc);

/* Runs work(user, s) for key[0..key_len): replayed from the cache when
 * present, else captured (then launched) or run directly. An error returned
 * by work() during a valid capture is returned unchanged and nothing is
 * cached; if the capture itself was invalidated (work called something
 * capture forbids) the work runs again directly and that result counts.
 * Calling the same cache from inside work() fails with PF_ERR_BUSY. */
PF_API pf_status pf_graph_cache_run(pf_graph_cache *gc, pf_stream *s, const void *key,
                                    size_t key_len, pf_graph_work_fn work, void *user);

typedef struct pf_graph_cache_stats {
    uint64_t captures;      /* graphs captured and instantiated */
    uint64_t replays;       /* runs served by a cached graph */
    uint64_t direct_runs;   /* runs executed without a graph */
    uint64_t capture_failures;
    uint64_t evictions;
    int entries;
} pf_graph_cache_stats;

PF_API pf_status pf_graph_cache_get_stats(const pf_graph_cache *gc, pf_graph_cache_stats *out);

/* Monitoring ---------------------------------------------------------------------
 *
 * Samples a device's memory through its runtime and, for NVIDIA GPUs, NVML
 * (libnvidia-ml.so.1, loaded at run time; its absence is fine and reported by
 * pf_nvml_available()). With period_ms > 0 a background thread samples
 * periodically and calls `alert` when a threshold is crossed upwards (again
 * only after the value fell back below 95% of the threshold). */

typedef struct pf_device_sample {
    int64_t time_ns;            /* pf_time_ns() at sampling */
    size_t mem_free, mem_total; /* from the runtime (CPU: MemAvailable/MemTotal) */
    size_t pool_bytes_reserved; /* sum over watched allocators */
    size_t pool_bytes_in_use;
    bool nvml;                  /* the fields below are valid */
    unsigned gpu_util_pct;      /* % of time a kernel ran, last sample period */
    unsigned mem_util_pct;      /* % of time memory was read or written */
    unsigned temperature_c;
    unsigned power_mw;
    unsigned power_limit_mw;
    unsigned sm_clock_mhz, mem_clock_mhz;
    unsigned pcie_tx_kbps, pcie_rx_kbps; /* KB/s over the last ~20 ms */
    uint64_t nvml_mem_used, nvml_mem_total;
} pf_device_sample;

typedef enum pf_alert_kind {
    PF_ALERT_MEMORY = 0,      /* value: fraction of device memory in use */
    PF_ALERT_TEMPERATURE = 1, /* value: degrees C */
    PF_ALERT_POOL = 2         /* value: bytes reserved by watched allocators */
} pf_alert_kind;

typedef void (*pf_alert_fn)(void *user, pf_alert_kind kind, double value, double threshold,
                            const pf_device_sample *sample);

typedef struct pf_monitor_params {
    pf_device *device;           /* NULL = the CPU device */
    int period_ms;               /* 0 = sample only on pf_monitor_sample() */
    double mem_alert_fraction;   /* e.g. 0.9; 0 = off */
    double temp_alert_c;         /* 0 = off */
    size_t pool_alert_bytes;     /* 0 = off */
    pf_alert_fn alert;           /* may be NULL; called from the sampling thread or
                                    the thread calling pf_monitor_sample(), without
                                    the monitor's lock; must not destroy the monitor.
                                    Fires when a value reaches (>=) its threshold. */
    void *user;
} pf_monitor_params;

typedef struct pf_monitor pf_monitor;

PF_API pf_monitor_params pf_monitor_params_default(void);
PF_API pf_status pf_monitor_create(const pf_monitor_params *p, pf_monitor **out);
PF_API void pf_monitor_destroy(pf_monitor **m);
/* Allocators whose statistics join each sample. The allocator must outlive
 * the monitor or be unwatched first. At most 16. */
PF_API pf_status pf_monitor_watch(pf_monitor *m, pf_allocator *a);
PF_API pf_status pf_monitor_unwatch(pf_monitor *m, pf_allocator *a);
/* Takes a sample now (and checks the thresholds). Thread-safe. */
PF_API pf_status pf_monitor_sample(pf_monitor *m, pf_device_sample *out);
/* The latest sample taken by any means; PF_AGAIN if none yet. */
PF_API pf_status pf_monitor_latest(pf_monitor *m, pf_device_sample *out);

/* Whether NVML could be loaded; `detail` (may be NULL) receives the driver
 * version or the reason it is not there. Thread-safe; loads NVML once. */
PF_API bool pf_nvml_available(char *detail, size_t detail_size);

PF_END_DECLS

#endif
