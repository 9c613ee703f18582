/* pixflow/ipc.h - zero-copy frames between processes.
 *
 * A producer exports a pool of frame slots; consumer processes attach over a
 * Unix domain socket and receive the slots once, as file descriptors
 * (SCM_RIGHTS), then one small message per frame naming the slot. Nothing is
 * copied between processes: a consumer's frame is a view of the producer's
 * slot, returned to the producer when the consumer's last reference to it is
 * dropped.
 *
 *   // producer process
 *   pf_ipc_producer_params pp = pf_ipc_producer_params_default();
 *   pp.path = "/run/user/1000/pixflow/cam0.sock";   // its folder: private (0700)
 *   pp.format = PF_PIXFMT_NV12; pp.width = 1920; pp.height = 1080;
 *   pf_ipc_producer *prod = NULL;
 *   if (pf_ipc_producer_create(&pp, &prod) < 0) ...;
 *   for (;;) {
 *       pf_frame slot = {0};
 *       pf_ipc_producer_acquire(prod, PF_WAIT_FOREVER, &slot);  // a free slot
 *       ... write the picture into slot.data[] (or copy with pf_frame_copy_async) ...
 *       pf_ipc_producer_publish(prod, &slot, stream);           // consumers get it
 *   }
 *   pf_ipc_producer_destroy(&prod);      // consumers see a clean end of stream
 *
 *   // consumer process
 *   pf_ipc_consumer_params cp = pf_ipc_consumer_params_default();
 *   cp.path = "/run/user/1000/pixflow/cam0.sock";
 *   cp.policy = PF_IPC_LATEST_ONLY;      // a live viewer: never slows the producer
 *   pf_ipc_consumer *cons = NULL;
 *   if (pf_ipc_consumer_create(&cp, &cons) < 0) ...;
 *   pf_frame f; pf_ipc_frame_info info;
 *   while (pf_ipc_consumer_recv(cons, 1000000, NULL, &f, &info) == PF_OK) {
 *       ... read f (read-only memory) ...
 *       pf_frame_unref(&f);              // the slot goes back to the producer
 *   }
 *   pf_ipc_consumer_destroy(&cons);
 *
 * Memory. On the CPU each slot is its own memfd (sealed against shrinking
 * and growing, sent read-only): consumers map it read-only. On a CUDA device
 * each slot is its own allocation: through the virtual memory management API
 * with POSIX file-descriptor handles (cuMemCreate, exported with
 * cuMemExportToShareableHandle, mapped by consumers), or, where VMM sharing
 * is unavailable, cudaMalloc + cudaIpcGetMemHandle (legacy). The environment
 * variable PIXFLOW_IPC_CUDA=legacy|vmm forces one (vmm fails where it is not
 * supported). Slots are whole, aligned allocations: a consumer never sees
 * memory that is not a slot.
 *
 * Fences. On CUDA each slot has an interprocess event that the producer
 * records on its stream after writing the frame; a consumer's recv makes its
 * stream wait on it (cudaStreamWaitEvent): the host never waits. On the CPU
 * the frame is complete before its message is sent.
 *
 * Protocol (docs/ipc.md has the wire format): hello (consumer: version,
 * policy) -> config (producer: backend, geometry, slot count, the slots'
 * handles) -> frame (slot, sequence, timestamps, source id) ... -> release
 * (consumer: slot, sequence) -> the producer reuses a slot once every
 * consumer it was sent to has released it -> end (clean end of stream).
 * Each consumer has its own policy: BLOCK gets every frame and the producer
 * waits for it to release slots; LATEST_ONLY (alias "drop") gets a frame
 * only while it holds fewer than `max_held` of them, so it never slows the
 * producer and always receives the newest frame; what it missed is counted
 * as dropped for it alone. A consumer that attaches late starts at the next
 * frame published.
 *
 * Faults. A consumer that dies (socket closed) gives back every slot it
 * held at once. A consumer that holds a slot the producer needs for longer
 * than `stall_timeout_ms` is disconnected. Any malformed or out-of-protocol
 * message (bad slot, wrong sequence, double release, release of a slot never
 * received, bad sizes or offsets, truncated messages, file descriptors where
 * none belong) disconnects its sender, logged, and changes nothing else. A
 * consumer tells a clean end of stream (PF_EOF) from a producer that died
 * (PF_ERR_CLOSED).
 *
 * Security. The socket's folder must be private: it is created with mode
 * 0700 when missing, and an existing one must belong to the caller and not
 * be writable by group or others. The socket has mode 0600; the producer
 * refuses a peer of another user id (SO_PEERCRED) and a consumer refuses a
 * producer of another user id.
 *
 * Pipelines: the built-in stages "ipc.sink" and "ipc.source" (docs/ipc.md
 * lists their keys) wrap a producer and a consumer.
 *
 * Threads. A producer runs one service thread (accepting consumers, reading
 * releases); its functions may be called from any thread, publish from one
 * at a time. A consumer's recv is called from one thread at a time; frames
 * it returned may be released on any thread.
 */
#ifndef PIXFLOW_IPC_H
#define PIXFLOW_IPC_H

#include <stdbool.h>

#include "device.h"
#include "frame.h"

PF_BEGIN_DECLS

/* At most this many slots in a pool (fds travel in one SCM_RIGHTS message). */
#define PF_IPC_MAX_SLOTS 64
/* At most this many consumers attached to one producer at a time. */
#define PF_IPC_MAX_CONSUMERS 32

typedef enum pf_ipc_policy {
    PF_IPC_DEFAULT = 0,      /* consumer: whatever the producer's default is */
    PF_IPC_BLOCK = 1,        /* every frame; the producer waits for its releases */
    PF_IPC_LATEST_ONLY = 2   /* only while it holds < max_held frames; never waits */
} pf_ipc_policy;

/* "default", "block", "latest_only" (also "drop"). */
PF_API const char *pf_ipc_policy_name(pf_ipc_policy p);
PF_API pf_status pf_ipc_policy_parse(const char *name, pf_ipc_policy *out);

/* How slots are shared. */
typedef enum pf_ipc_backend {
    PF_IPC_BACKEND_MEMFD = 0,       /* host memory, memfd */
    PF_IPC_BACKEND_CUDA_VMM = 1,    /* cuMemCreate + POSIX fd handles */
    PF_IPC_BACKEND_CUDA_LEGACY = 2  /* cudaIpcGetMemHandle */
} pf_ipc_backend;

PF_API const char *pf_ipc_backend_name(pf_ipc_backend b);

/* Producer -------------------------------------------------------------------------- */

typedef struct pf_ipc_producer pf_ipc_producer;

typedef struct pf_ipc_producer_params {
    const char *path;           /* socket path (required); copied */
    pf_device *device;          /* NULL or CPU: memfd slots; CUDA: device slots */
    pf_pixfmt format;           /* geometry of every frame (required) */
    int width, height;
    int slots;                  /* 1..PF_IPC_MAX_SLOTS; default 8 */
    pf_ipc_policy default_policy; /* for consumers asking PF_IPC_DEFAULT; default BLOCK */
    int default_max_held;       /* LATEST_ONLY consumers' limit when they ask 0; default 2 */
    int64_t stall_timeout_ms;   /* a consumer holding a needed slot this long is
                                   disconnected; default 10000; 0 = never */
} pf_ipc_producer_params;

PF_API pf_ipc_producer_params pf_ipc_producer_params_default(void);

/* Creates the slots and the socket (replacing a stale socket left by a dead
 * producer; refusing a path where a producer is alive or that is not a
 * socket) and starts the service thread. */
PF_API pf_status pf_ipc_producer_create(const pf_ipc_producer_params *p, pf_ipc_producer **out);
/* Sends a clean end of stream to every consumer, closes and unlinks the
 * socket, waits for the service thread and frees the slots (consumers keep
 * their mappings until they release them). Accepts NULL. */
PF_API void pf_ipc_producer_destroy(pf_ipc_producer **p);

/* A free slot as a frame to write into (memory of the producer's device; on
 * CUDA, write it on the stream later given to publish). Waits up to
 * timeout_us (thread.h conventions: PF_AGAIN / PF_TIMEOUT). Dropping the
 * frame without publishing returns the slot. */
PF_API pf_status pf_ipc_producer_acquire(pf_ipc_producer *p, int64_t timeout_us, pf_frame *out);
/* Sends the slot in *slot (from acquire, metadata fields set by the caller)
 * to the consumers whose policy takes it, records the slot's fence on
 * `stream` (CUDA; may be NULL on the CPU), and takes the frame (*slot is
 * zeroed). `t_source_ns` (pf_time_ns clock, 0 = now) travels with it.
 * PF_OK also when no consumer is attached (the frame is then dropped). */
PF_API pf_status pf_ipc_producer_publish(pf_ipc_producer *p, pf_frame *slot, pf_stream *stream,
                                         int64_t t_source_ns);
/* acquire + copy `src` (any memory `stream`'s device reaches; its geometry
 * must be the pool's) + publish: one copy into the slot. */
PF_API pf_status pf_ipc_producer_send(pf_ipc_producer *p, const pf_frame *src, pf_stream *stream,
                                      int64_t t_source_ns, int64_t timeout_us);
/* Waits until at least `n` consumers are attached (PF_TIMEOUT after
 * timeout_us). */
PF_API pf_status pf_ipc_producer_wait_consumers(pf_ipc_producer *p, int n, int64_t timeout_us);

typedef struct pf_ipc_producer_stats {
    pf_ipc_backend backend;
    uint64_t published;         /* frames published */
    uint64_t unconsumed;        /* published while no consumer took them */
    uint64_t sent;              /* frame messages sent (over all consumers) */
    uint64_t dropped;           /* frames LATEST_ONLY consumers did not get */
    uint64_t consumers_attached;   /* attaches accepted so far */
    uint64_t consumers_refused;    /* other uid, bad hello, over the limit */
    uint64_t consumers_dropped;    /* protocol violations and stalls */
    uint64_t consumers_gone;       /* closed their socket (exit or crash) */
    uint64_t slots_reclaimed;      /* slots given back by a consumer's disconnect */
    int consumers;              /* attached now */
    int slots_free;             /* now */
    uint64_t wait_ns;           /* time acquire waited for a free slot */
} pf_ipc_producer_stats;

PF_API pf_status pf_ipc_producer_get_stats(pf_ipc_producer *p, pf_ipc_producer_stats *out);

/* Consumer ---------------------------------------------------------------------------- */

typedef struct pf_ipc_consumer pf_ipc_consumer;

typedef struct pf_ipc_consumer_params {
    const char *path;           /* the producer's socket (required) */
    pf_device *device;          /* NULL/CPU for memfd producers; the CUDA device that
                                   will read the frames for CUDA producers */
    pf_ipc_policy policy;       /* default PF_IPC_DEFAULT (the producer's choice) */
    int max_held;               /* LATEST_ONLY: frames held at once; 0 = producer's */
    int64_t connect_timeout_ms; /* retry while the socket is missing or refusing; default
                                   10000; 0 = one try */
    const char *name;           /* for the producer's log; may be NULL */
} pf_ipc_consumer_params;

PF_API pf_ipc_consumer_params pf_ipc_consumer_params_default(void);

/* Connects, says hello, checks and maps the producer's slots. Errors:
 * PF_ERR_IO (no producer within the timeout, or refused), PF_ERR_FORMAT
 * (a malformed configuration), PF_ERR_UNSUPPORTED (CUDA memory on a CPU
 * consumer, or the other way round). */
PF_API pf_status pf_ipc_consumer_create(const pf_ipc_consumer_params *p, pf_ipc_consumer **out);
/* Disconnects (the producer gets every slot back that no frame still
 * holds) and drops this handle; mappings live until the frames returned by
 * recv are released. Accepts NULL. */
PF_API void pf_ipc_consumer_destroy(pf_ipc_consumer **c);

typedef struct pf_ipc_frame_info {
    uint64_t seq;               /* producer's sequence number (1, 2, ...) */
    int slot;
    int64_t t_source_ns;        /* given to publish (pf_time_ns clock; same machine) */
    int64_t t_publish_ns;       /* when the producer sent it */
} pf_ipc_frame_info;

/* The next frame (a view of the slot: read-only host memory, or device
 * memory of the consumer's device), waiting up to timeout_us. On CUDA,
 * `stream` (required there) is made to wait on the slot's fence. Returns
 * PF_OK; PF_TIMEOUT / PF_AGAIN; PF_EOF at a clean end of stream;
 * PF_ERR_CLOSED when the producer went away without one (crash); PF_ERR_FORMAT
 * when it sent a malformed message (the consumer is then disconnected). */
PF_API pf_status pf_ipc_consumer_recv(pf_ipc_consumer *c, int64_t timeout_us, pf_stream *stream,
                                      pf_frame *out, pf_ipc_frame_info *info);

typedef struct pf_ipc_consumer_info {
    pf_ipc_backend backend;
    pf_ipc_policy policy;       /* as the producer applies it */
    int max_held;
    pf_pixfmt format;
    int width, height;
    int slots;
    uint64_t received;          /* frames received */
    uint64_t skipped;           /* LATEST_ONLY: received but replaced by a newer one */
    uint64_t gaps;              /* frames the producer published that did not reach us */
} pf_ipc_consumer_info;

PF_API pf_status pf_ipc_consumer_get_info(pf_ipc_consumer *c, pf_ipc_consumer_info *out);

PF_END_DECLS

#endif
