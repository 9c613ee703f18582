/* pixflow/pipeline.h - the runtime: stages connected by bounded edges with
 * explicit drop policies, a dynamic batcher, statistics, tracing.
 *
 *   pf_pipeline_params pp = pf_pipeline_params_default();
 *   pf_pipeline *p = NULL;
 *   pf_pipeline_create(&pp, &p);
 *
 *   pf_stage_desc src = pf_stage_desc_default();
 *   src.name = "camera";
 *   src.source = my_generate;          // called until it returns PF_EOF
 *   src.fps = 30;                      // paced: timed ticks
 *   pf_stage_desc work = pf_stage_desc_default();
 *   work.name = "blur";
 *   work.process = my_process;         // gets items, emits items
 *   pf_stage *a, *b;
 *   pf_pipeline_add_stage(p, &src, &a);
 *   pf_pipeline_add_stage(p, &work, &b);
 *   pf_edge_params ep = pf_edge_params_default();   // capacity 4, block
 *   pf_pipeline_connect(p, a, b, &ep);
 *
 *   pf_pipeline_start(p);
 *   pf_pipeline_wait(p);               // until the sources end and all is drained
 *   pf_pipeline_print_stats(p, stderr);
 *   pf_pipeline_destroy(&p);
 *
 * Model. A pipeline is a directed acyclic graph of stages. Items (a frame, a
 * tensor or both, plus metadata) flow along edges; an edge is a bounded ring
 * buffer with a capacity and a policy saying what happens when it is full. A
 * stage has any number of input edges and output edges. Outputs: every
 * emitted item goes to all of them, each holding its own reference (fan-out),
 * or to one with pf_stage_emit_to (routing, e.g. the `demux` built-in).
 * Inputs (fan-in): each edge keeps its own capacity and policy, so a
 * flooding producer fills only its own edge; the workers take items from
 * all of them without polling (every input edge wakes the stage), round-
 * robin across edges, and the stage's input ends when every input edge has
 * ended (a source that ends just leaves; the others go on). Sources have no
 * input; sinks have no output edge.
 *
 * Many streams (nvstreammux-like). Give a stage several inputs and a batch
 * (max_batch > 1, max_delay_us): it is then a stream muxer - batches formed
 * across the streams round-robin by item.source (no stream starved by a
 * faster one), at most max_batch, the timeout counted from the first frame
 * of each batch (see "Dynamic batcher"), order within a stream kept, items
 * keeping their source. The built-in `mux` type is such a stage that passes
 * its batches on; `demux` routes items back to per-stream outputs by source
 * id. Per-stream statistics (pf_pipeline_stats.streams) sit beside the
 * pipeline's.
 *
 *   // cameras -> mux (batch 8, 40 ms) -> model -> demux -> one sink each
 *   pf_stage *cam[4], *mux, *model, *dmx, *out[4];
 *   ...add the stages (pf_stage_builtin("mux", ...), ("demux", routes
 *      "0:out0,1:out1,...")), then:
 *   for (int i = 0; i < 4; i++) pf_pipeline_connect(p, cam[i], mux, &ep);
 *   pf_pipeline_connect(p, mux, model, &ep);
 *   pf_pipeline_connect(p, model, dmx, &ep);
 *   for (int i = 0; i < 4; i++) pf_pipeline_connect(p, dmx, out[i], &ep);
 *   pf_pipeline_start(p);
 *   // later, a camera plugged in (see "Live changes"):
 *   pf_pipeline_add_stage(p, &cam4_desc, &cam[4]);
 *   pf_pipeline_connect(p, cam[4], mux, &ep);
 *   pf_pipeline_start_added(p);
 *
 * Threads. Each stage runs on its own worker thread(s) (`threads`, default 1;
 * with more than one, items may finish out of order unless `ordered` is set,
 * in which case emission is re-sequenced). Stages placed on a CUDA device get
 * a CUDA stream of their own (pf_stage_stream()); their process function
 * issues asynchronous work and emits at once; the runtime records events and
 * makes consumers wait on them, so the host never blocks on the GPU between
 * stages. The runtime also keeps a CUDA stage's input items alive until its
 * stream has passed the work queued for them, so process may drop its inputs
 * right after queueing work that reads them. With `ordered`, emits wait for
 * the turn of their input: work done before the first emit still overlaps.
 *
 * Memory domains. A stage declares the domain it accepts (`accepts`) and the
 * one it produces (`produces`). Where an edge joins a producer whose items live
 * on the other side (host vs device, or another device), the runtime inserts a
 * transfer stage with a pinned pool and a caching allocator, on its own
 * stream, and counts every copy (stats). With `strict_transfers` set, such an
 * edge makes pf_pipeline_start() fail instead, naming the edge. Before each
 * process call the runtime checks that the items' frames and tensors live
 * where the stage accepts them; one that does not stops the pipeline with an
 * error naming the stage, the item and both domains.
 *
 * Live changes. While the pipeline runs, stages may be added and connected
 * and then started together with pf_pipeline_start_added(): typically a new
 * source (a camera plugged in) joining a running muxer. An edge added while
 * running must join a new stage to a new or running one (a running stage
 * gains an input; outputs of a running stage are fixed), needs no transfer
 * (equal memory sides) and cannot feed a stage whose input has already
 * ended. A stream leaves when its source ends (PF_EOF): its edge closes and
 * the muxer goes on with the others. Nothing is removed before destroy.
 * Calls that change the graph come from one thread at a time (the
 * application's control thread); they are safe against the running workers,
 * get_stats and cancel (the pipeline lock guards the stage and edge tables,
 * each stage's input lock its input list).
 *
 * Lifecycle. create -> add stages, connect -> start -> (running) -> the
 * sources return PF_EOF -> end of stream flows through every edge; every item
 * in flight is processed -> wait returns PF_OK -> destroy. pf_pipeline_cancel()
 * (any thread, also from a signal handler through pf_pipeline_cancel_async)
 * stops the sources, drops what is queued (counted as cancelled, not as policy
 * drops) and unwinds; wait then returns PF_ERR_CANCELLED. A stage whose
 * process function returns an error stops the pipeline: wait returns that
 * status and pf_last_error() names the stage and the item (source, seq).
 */
#ifndef PIXFLOW_PIPELINE_H
#define PIXFLOW_PIPELINE_H

#include <stdbool.h>
#include <stdio.h>

#include "device.h"
#include "frame.h"
#include "tensor.h"

PF_BEGIN_DECLS

/* Items ------------------------------------------------------------------------
 *
 * What flows along edges: a value holding references (like pf_frame). An item
 * may carry a frame, a tensor, or both (e.g. a video frame and its mask travel
 * together down a segmentation chain): a part is present when its buffer
 * (frame.buf[0], tensor.buf) is not NULL. An item with neither is invalid. */
typedef struct pf_item {
    pf_frame frame;
    pf_tensor tensor;
    int32_t source;            /* source id (per-source fairness, ordering) */
    int64_t seq;               /* sequence number within its source */
    int64_t t_source_ns;       /* clock time when the source made it:
                                  end-to-end latency is measured from here */
    int priority;              /* 0 = normal; higher goes first in batchers */
    void *user;                /* free for the application; not referenced */
    pf_event *ready;           /* set by the runtime at emit: the device work
                                  producing this item is complete once this
                                  event is (NULL: ready now). Read only by the
                                  runtime, before process; not referenced */
} pf_item;

/* Drops the references held by the item and zeroes it. */
PF_API void pf_item_unref(pf_item *item);
/* dst = a second owner of src. */
PF_API void pf_item_ref(pf_item *dst, const pf_item *src);

/* Edges --------------------------------------------------------------------------
 *
 * Policies when an edge is full and a producer pushes:
 *   BLOCK        the producer waits for room (back-pressure; nothing lost)
 *   DROP_OLDEST  the oldest queued item is dropped, the new one enters
 *   DROP_NEWEST  the new item is dropped, the queue is unchanged
 *   LATEST_ONLY  everything queued is dropped, the new item enters (a consumer
 *                always gets the freshest item; capacity is forced to 1)
 * Every dropped item is released and counted on its edge. Nothing is lost
 * that the policy does not drop; order along an edge is FIFO. */

typedef enum pf_edge_policy {
    PF_EDGE_BLOCK = 0,
    PF_EDGE_DROP_OLDEST = 1,
    PF_EDGE_DROP_NEWEST = 2,
    PF_EDGE_LATEST_ONLY = 3
} pf_edge_policy;

PF_API const char *pf_edge_policy_name(pf_edge_policy p);
PF_API pf_status pf_edge_policy_parse(const char *name, pf_edge_policy *out);

typedef struct pf_edge_params {
    int capacity;              /* items, >= 1; default 4 */
    pf_edge_policy policy;     /* default BLOCK */
} pf_edge_params;

PF_API pf_edge_params pf_edge_params_default(void);

/* Dynamic batcher -------------------------------------------------------------------
 *
 * In front of a stage with max_batch > 1. Semantics (all times from the
 * pipeline's clock):
 *  - Requests wait in per-(priority, source) FIFO queues.
 *  - A batch is formed when (a) max_batch requests are waiting, or (b)
 *    max_delay_us has passed since the batch's first frame, or (c) the input
 *    has ended (end of stream flushes whatever waits). The batch's first
 *    frame is the oldest waiting request; one left over from the previous
 *    batch counts as arriving when that batch was taken (nvstreammux's
 *    batched-push-timeout: the timer starts when a new batch starts
 *    collecting, so a partial batch never leaves at once just because its
 *    frames waited behind a full one).
 *  - Filling a batch: higher priority levels first; within a level, sources
 *    are served round-robin one request at a time, starting after the source
 *    that was served first in the previous batch (no source starves another);
 *    within a source, FIFO (order per source is preserved).
 *  - The batch size histogram is reported in the stage's statistics.
 *  - The batcher holds up to max_batch + the input edges' capacities
 *    requests (it drains the edges to see every source, a share of the room
 *    per edge in turn, so a flooding edge cannot fill it); an edge's policy
 *    applies once it is full. Batching is off (max_batch 1) in
 *    PF_MODE_LATENCY. */

typedef struct pf_batch_params {
    int max_batch;             /* 1 = no batching (default) */
    int64_t max_delay_us;      /* 0 = never wait: batch whatever is there */
} pf_batch_params;

/* Stages ------------------------------------------------------------------------- */

typedef struct pf_pipeline pf_pipeline;
typedef struct pf_stage pf_stage;
typedef struct pf_stage_ctx pf_stage_ctx;

/* A source: fills *out with its next item and returns PF_OK, or returns
 * PF_EOF at the end, or an error. seq, source and t_source_ns are filled by
 * the runtime when left at zero/negative: seq counts from 0 per source stage,
 * source is the stage's ordinal among the sources (0, 1, ... in the order they
 * were added), t_source_ns is the clock when the call returned. */
typedef pf_status (*pf_source_fn)(void *user, pf_stage_ctx *ctx, pf_item *out);

/* A processing stage: gets `n` items (n > 1 only with batching), owns them
 * (must pf_item_unref or emit them), emits any number of items with
 * pf_stage_emit(). Returning an error stops the pipeline. */
typedef pf_status (*pf_process_fn)(void *user, pf_stage_ctx *ctx, pf_item *items, int n);

typedef struct pf_stage_desc {
    const char *name;           /* unique in the pipeline; copied */
    pf_source_fn source;        /* exactly one of source / process */
    pf_process_fn process;
    /* optional: runs on each worker thread before its first item (may emit);
     * an error stops the pipeline. A worker that begins after the pipeline
     * was stopped (error, cancel) skips it. */
    pf_status (*start)(void *user, pf_stage_ctx *ctx);
    /* optional: runs once per stage, after all its workers have finished
     * (also after an error or cancel), on the last worker thread */
    void (*stop)(void *user);
    /* Optional: frees `user`. Called exactly once, by pf_pipeline_destroy()
     * after every worker has stopped, for each stage that was added (never
     * when pf_pipeline_add_stage fails: the caller then still owns `user`).
     * Built-in stages (pf_stage_builtin) keep their state here. */
    void (*destroy)(void *user);
    void *user;
    pf_device *device;          /* NULL = CPU; a CUDA device gives the stage a stream */
    int threads;                /* worker threads, default 1 */
    bool ordered;               /* threads > 1: emit in input order */
    pf_mem_domain accepts;      /* domain of input items; default PF_MEM_HOST.
                                   HOST and PINNED both mean host-addressable;
                                   DEVICE means memory of `device` */
    pf_mem_domain produces;     /* domain of output items; default PF_MEM_HOST */
    pf_batch_params batch;      /* default no batching */
    double fps;                 /* sources: pace at this rate; 0 = as fast as possible */
    int64_t max_items;          /* sources: stop after this many; 0 = until PF_EOF */
    bool source_errors_leave;   /* sources: an error from the source function ends
                                   this source only (its stream leaves as at PF_EOF;
                                   logged, counted in its stage's errors) instead of
                                   stopping the pipeline. For one of many streams:
                                   retries belong in the source (return PF_AGAIN
                                   while reconnecting); this is what happens once
                                   it gives up. Default false */
} pf_stage_desc;

PF_API pf_stage_desc pf_stage_desc_default(void);

/* Emits an item to every output edge (the runtime takes ownership; fan-out
 * adds references). Blocks according to the edge policies. Only from inside
 * source/process/start. */
PF_API pf_status pf_stage_emit(pf_stage_ctx *ctx, pf_item *item);
/* Routing: emits to output edge `output` only (0 .. pf_stage_num_outputs()
 * - 1, in the order the edges were connected). Ownership, blocking and
 * readiness as pf_stage_emit; PF_ERR_INVALID (item released) for an index
 * out of range. Only from inside source/process/start. */
PF_API pf_status pf_stage_emit_to(pf_stage_ctx *ctx, int output, pf_item *item);
/* Number of output edges of the calling stage (fixed while it runs). */
PF_API int pf_stage_num_outputs(pf_stage_ctx *ctx);
/* The output edge leading to the stage named `name` (looking through a
 * transfer the runtime inserted), or -1. */
PF_API int pf_stage_output_index(pf_stage_ctx *ctx, const char *name);
/* Releases an item on purpose and counts it as dropped, both for the stage
 * (pf_stage_stats.dropped) and for its stream (pf_stream_stats.dropped). */
PF_API void pf_stage_drop(pf_stage_ctx *ctx, pf_item *item);
/* The stage's CUDA stream (a CPU stream for CPU stages), one per worker
 * thread. Work issued on it before pf_stage_emit() is what consumers wait
 * for (the runtime records an event at emit). */
PF_API pf_stream *pf_stage_stream(pf_stage_ctx *ctx);
PF_API pf_device *pf_stage_device(pf_stage_ctx *ctx);
/* Lowers the stage's batch size from now on (never raises it): the batcher
 * forms batches of at most max_batch items. For a stage that ran out of
 * memory at its batch size (nn.infer does this); counted in
 * pf_stage_stats.batch_limit. Returns the limit now in force. */
PF_API int pf_stage_limit_batch(pf_stage_ctx *ctx, int max_batch);
/* A caching allocator for the stage's device/domain, shared per pipeline
 * (NULL with pf_last_error() set if it cannot be made). Allocate on
 * pf_stage_stream(). Buffers allocated on a stage's stream must be released
 * before pf_pipeline_destroy(): their last unref records an event on that
 * stream. */
PF_API pf_allocator *pf_stage_allocator(pf_stage_ctx *ctx, pf_mem_domain domain);
/* Which worker thread of the stage runs this call (0 .. threads - 1). */
PF_API int pf_stage_thread_index(pf_stage_ctx *ctx);
PF_API const char *pf_stage_name(const pf_stage *stage);

/* Built-in stages -------------------------------------------------------------------
 *
 * Ready-made stage types, shared by C programs and YAML pipelines (a YAML
 * stage's `type` is one of these names and its other keys are the
 * parameters):
 *
 *   pf_stage_param kv[] = {{"width", "640"}, {"height", "360"}, {"interp", "area"}};
 *   pf_stage_config cfg = {.name = "small", .params = kv, .num_params = 3};
 *   pf_stage_desc d;
 *   if (pf_stage_builtin("ops.resize", &cfg, &d) < 0) ...;   // message names key and value
 *   d.threads = 2;                          // generic fields may be changed
 *   pf_pipeline_add_stage(p, &d, &stage);   // the pipeline now owns d.user
 *
 * Parameters are key/value strings; each type documents its keys, and an
 * unknown key, a missing required key or a value that does not parse or is
 * out of range fails with PF_ERR_INVALID and a message naming the stage,
 * the key and the value. Value syntax:
 *   int      decimal, e.g. "1920" (ranges given per key)
 *   number   decimal or exponent notation, finite, e.g. "0.5", "1e-3"
 *   bool     true|false|yes|no|on|off|1|0
 *   list     comma-separated values, e.g. "0.485,0.456,0.406" (YAML flow or
 *            block sequences of scalars are joined this way by the loader)
 *   enums    the names below (pixel formats as pf_pixfmt_parse accepts).
 * Items keep their source, seq, t_source_ns, priority and user through every
 * built-in; parts a stage does not touch pass through (a frame keeps its
 * tensor and the other way round). Stages on a CUDA device (cfg.device)
 * accept and produce device memory, CPU stages host memory; outputs come
 * from pf_stage_allocator() (cached: nothing is allocated per item in the
 * steady state), or from a pool the stage owns where noted.
 *
 *   source.synthetic   generated frames: a per-source gradient scrolling
 *                      `speed` pixels per frame, so consecutive frames differ.
 *     format rgb24 | width 640 (int 1..65536) | height 480 | source 0 (source
 *     id, int >= 0) | speed 4 (int >= 0; YUV formats use it rounded down to
 *     even) | pool 8 (frames preallocated at start, 1..1024; a frame returns
 *     to the pool when its last reference is dropped; the source waits for
 *     one when all are in flight, failing after `pool_timeout_ms` 10000) |
 *     memory host|pinned|device (default: device on a CUDA stage, else host)
 *     | fps 0 (number >= 0: sets desc.fps) | count 0 (int >= 0: sets
 *     desc.max_items; 0 = endless)
 *   io.video_source    frames of a video file, stdin, a URL or a camera
 *     (pixflow/io.h: pf_video_reader; Y4M and raw always, other containers,
 *     URLs and /dev/videoN with FFmpeg), from the reader's pool, in host or
 *     pinned memory (io stages never hold device memory: the runtime moves
 *     frames to device stages). The input is opened when the stage is made
 *     (a bad file, a refused protocol or a dead server fails there).
 *     path FILE|-|URL|/dev/videoN (required) | container NAME (y4m, raw or
 *     an FFmpeg demuxer; default by content/extension) | format (frames
 *     out; default the reader's: i420) | loop bool (false; not with - or a
 *     live input) | pool 8 (1..1024) | pool_timeout_ms -1 (-1 waits) |
 *     source 0 | memory host|pinned (pinned on a CUDA stage) | fps 0 |
 *     count 0 | raw_width, raw_height, raw_format (container raw) |
 *     realtime bool (false: a file at its own frame rate, by pts) |
 *     live inputs: low_latency bool (false: see pf_video_reader_params) |
 *     retries 0 (reopens in a row after an error, stall or
 *     end; -1 forever) | retry_delay_ms 500 (doubled per failed attempt)
 *     | retry_max_delay_ms 8000 | open_timeout_ms 10000 | read_timeout_ms
 *     5000 (no packet that long = a stall) | protocols LIST (comma-
 *     separated; default PF_IO_DEFAULT_PROTOCOLS). Reconnects, gaps and
 *     missed frames are logged, and summed at the end; seq and pts keep
 *     increasing across a reconnect; while reconnecting the source returns
 *     PF_AGAIN (a stop is seen at once); when the retries run out it ends
 *     (PF_EOF) like a file
 *   io.image_source    PNG/JPEG images, one item per image, in list order.
 *     path (required: files, directories (their images, sorted) or globs,
 *     comma-separated; the first image is probed when the stage is made) |
 *     format rgb24|bgr24|rgba|gray8 (rgb24) | loop bool (false) | pool 4
 *     (frames, sized from the first image; others are decoded outside it)
 *     | pool_timeout_ms -1 | source 0 | memory host|pinned | fps 0 | count 0
 *   ops.convert        colour conversion (pf_ops_convert).
 *     format (required) | matrix bt601|bt709 | range limited|full (matrix
 *     and range of convert, preprocess and composite default to each
 *     frame's own: pf_color_params_for)
 *   ops.resize         pf_ops_resize of the frame.
 *     width, height (required, 1..65536) | interp nearest|bilinear|area (bilinear)
 *   ops.preprocess     fused preprocess of the frame into a tensor; the item
 *     keeps its frame and gets a [1, 3, H, W] (or [1, H, W, 3]) tensor. With
 *     batching (desc.batch) one pf_ops_preprocess call makes an [N, ...]
 *     tensor and each item gets its slice of it (views of one buffer).
 *     width, height (required) | dtype f32|f16 (f32) | layout nchw|nhwc
 *     (nchw) | interp (bilinear) | letterbox bool (false) | pad_value 114
 *     (0..255) | bgr bool (false) | mean list of 3 (0,0,0) | std list of 3
 *     (1,1,1) | matrix | range
 *   ops.reproject      equirectangular frame -> perspective views
 *     (pf_ops_equirect_to_views); each view is emitted as its own item (same
 *     source and seq, in view order), or all views side by side in one
 *     frame with `mosaic`.
 *     views 4 (1..64: yaws evenly spaced from 0) or yaws (list of degrees) |
 *     pitch 0 | roll 0 | fov 90 (0 < fov < 180) | width 640 | height 480 |
 *     interp nearest|bilinear (bilinear) | mosaic bool (false)
 *   ops.mask_threshold the item's tensor (f32/f16, probabilities or logits)
 *     -> u8 mask 0/255 replacing it (pf_ops_mask_threshold).
 *     threshold 0.5 (number) | logits bool (false) | channel -1 (int: with
 *     >= 0, only that channel of an NCHW tensor, giving [N, 1, H, W])
 *   ops.composite      frame over a background through a mask (pf_ops_composite);
 *     the item's frame is replaced by the result, its tensor kept.
 *     mask auto|item|generated (auto: the item's tensor when it has one,
 *     else generated: a soft ellipse moving with seq, 64 positions made at
 *     start) | background blur|color|none (blur) | sigma 8 (0 < sigma <= 64)
 *     | color list of 3 ints 0..255 (0,177,64) | format rgb24|bgr24|rgba|nv12
 *     (output; default rgb24) | matrix | range
 *   nn.infer           runs a model (pixflow/nn.h) on the items' tensors;
 *     each item leaves with its rows of the chosen output (f32, or i32 for
 *     an integer output; [b, ...] in the model's output shape and layout,
 *     b = the rows it brought) in place of its tensor, its frame kept. The
 *     model is loaded and checked when the stage is made (a bad path or a
 *     model with several inputs fails there, naming the key). Items' tensors
 *     must match the model input past the batch dim (TFLite models are NHWC:
 *     ops.preprocess layout nhwc) and be f32 or f16 (converted in the run).
 *     With batching the items of a call run together, as a view when their
 *     tensors lie back to back in one buffer (ops.preprocess's slices), else
 *     gathered by stream-ordered copies; runs never exceed the effective
 *     max_batch (1 in PF_MODE_LATENCY), and a fixed-batch model runs at its
 *     batch. One executor per worker thread, made at start.
 *     model PATH (required: .onnx or .tflite) | precision fp32|fp16 (fp32;
 *     fp16 needs a CUDA device) | batch 1 (1..256: sets desc.batch.max_batch,
 *     like the stage-level `batch:` key of YAML files, which also works) |
 *     delay_us 0 (sets desc.batch.max_delay_us) | input NAME (the model
 *     input fed; default the only one) | output NAME (default output 0) |
 *     reserve false|true|max (false: plans each batch size on first use;
 *     true: all of 1..max_batch at start; max: max_batch at start, smaller
 *     batches padded into it until a size recurs: pf_nn_exec_reserve_batch)
 *   ops.mask_post      a model's output -> an f32 [1, 1, H, W] mask replacing
 *     the item's tensor (what ops.composite, ops.mask_threshold and mask
 *     writers take). Accepts [1, H, W, 1] (NHWC), [1, 1, H, W], [1, C, H,
 *     W] / [1, H, W, C] with `channel` or `softmax`, [1, H, W], [H, W]; a
 *     single channel is re-described without a copy. Then in this order:
 *     temporal smoothing per source (pf_ops_mask_temporal; state reset on a
 *     source's first item and whenever its seq does not increase; needs
 *     threads 1), feathering (pf_ops_mask_feather) and a resize to the
 *     item's frame (pf_ops_resize_mask).
 *     channel -1 (int: with C > 1, that channel of an NCHW tensor) |
 *     softmax bool (false: with true, the softmax probability of `class`
 *     over the channels, pf_ops_mask_argmax; f16 accepted) | class (int
 *     0..254, with softmax) | alpha 1 (number in (0, 1]: smoothing weight
 *     of the new mask; 1 = off) | feather 0 (sigma in mask pixels, 0..64;
 *     0 = off) | size model|frame (model) | interp nearest|bilinear|area
 *     (bilinear: the resize to the frame)
 *   sink.null          releases items; counts them.
 *     print bool (false: with true, prints "sink NAME: N items" at stop)
 *   sink.checksum      checksums every frame (visible bytes of each plane,
 *     row by row) and tensor (bytes of the elements in order), downloading
 *     device memory first. Per item h = FNV-1a 64 over (source, seq as 8
 *     little-endian bytes each, then the bytes); the total is the sum of h
 *     over items mod 2^64 (independent of arrival order). At stop prints
 *     "checksum NAME: N items, 0x%016x" to stderr, or appends it to `file`.
 *     file PATH (optional)
 *   io.video_sink      encodes the items' frames (host memory; one thread,
 *     arrival order) with pf_video_writer; the first frame sets size, input
 *     format, time base, colour and sample aspect ratio; closed (flushed)
 *     at stop.
 *     path FILE|- (required) | container | codec (libx264) | preset |
 *     codec_pixfmt | fps (number > 0; default the frames' own rate, else 30)
 *     | crf 23 (-1..63) | gop 0 | bitrate 0 (bits/s; 0 = crf) |
 *     codec_threads 0 | frames 0 (0 = all) | start, duration (seconds or
 *     [HH:]MM:SS[.frac] on the frames' clock) | copy_streams FILE (its
 *     audio/subtitles copied in: pf_video_writer_params.copy_streams_from)
 *   io.image_sink      writes each item's frame as an image file.
 *     path (required: a pattern where {seq}, {index} (6 digits) and
 *     {source} are replaced, e.g. out/frame_{seq}.png) | format
 *     auto|png|jpeg (auto: from the extension) | quality 90 (1..100) |
 *     compression 6 (0..9) | chroma444 bool (false)
 *   stage.sleep        passes items through after sleeping (or spinning with
 *     busy) for `us` microseconds per call: a stand-in for slow work.
 *     us (required, int 0..60000000) | busy bool (false)
 *   stage.fail         passes items through and fails with PF_ERR_IO on item
 *     number `at` (counting from 0 over all items it sees): for tests of
 *     error paths.
 *     at 0 (int >= 0) | message "injected failure"
 *   mux                the stream muxer (nvstreammux's role): give it
 *     several input edges, one per stream; it passes on the batches the
 *     runtime forms across them ("Many streams", "Dynamic batcher"): each
 *     batch round-robin over the streams with frames waiting, FIFO within
 *     a stream, at most `batch_size`, leaving when full, when `timeout_us`
 *     has passed since its first frame, or when every input has ended.
 *     Items pass unchanged (no copy; frames keep their source id), so a
 *     model right behind it with the same batch gets whole batches while
 *     it keeps up. Equivalently any stage, nn.infer included, becomes a
 *     muxer when given several inputs and a batch.
 *     batch_size 1 (1..256: sets desc.batch.max_batch) | timeout_us 0
 *     (0..60000000: sets desc.batch.max_delay_us; 0 = send what is there)
 *   demux              routes each item to one output edge by its source
 *     id (pf_stage_emit_to), unchanged.
 *     routes (list of SOURCE:OUTPUT, OUTPUT a stage name fed by this stage
 *     - through a transfer the runtime inserted, if any - or an output
 *     index in connect order; default: source k -> output k) | unmapped
 *     drop|error|all (drop: released and counted as the stage's and the
 *     stream's drops; error: the pipeline stops naming the stream; all:
 *     to every output). Routes naming no output edge fail the start.
 */

/* One parameter. `line` (> 0) is where it came from (a YAML line), used in
 * messages as "FILE:LINE: " together with pf_stage_config.file. */
typedef struct pf_stage_param {
    const char *key;
    const char *value;
    int line;
} pf_stage_param;

typedef struct pf_stage_config {
    const char *name;            /* stage name (desc.name; used in messages); required */
    const pf_stage_param *params;
    int num_params;
    pf_device *device;           /* where the stage runs; NULL = the CPU */
    const char *file;            /* messages: "FILE:LINE: " prefix; NULL = none */
    int line;                    /* line for errors tied to no parameter (a missing key) */
} pf_stage_config;

/* Makes the description of a built-in stage of type `type` (names above).
 * On success *out_desc is pf_stage_desc_default() with name, source or
 * process, start, stop, destroy, user, device, accepts/produces (and fps and
 * max_items for sources) filled in; out_desc->user holds the stage's state:
 * hand the desc to pf_pipeline_add_stage (the pipeline then frees it) or
 * call out_desc->destroy(out_desc->user). cfg and its strings need only live
 * for the call. PF_ERR_INVALID for an unknown type (the message lists the
 * known ones) or bad parameters. Thread-safe. */
PF_API pf_status pf_stage_builtin(const char *type, const pf_stage_config *cfg,
                                  pf_stage_desc *out_desc);

/* Kinds of built-in stages, for tools and loaders. */
typedef enum pf_builtin_kind {
    PF_BUILTIN_SOURCE = 0,     /* no input */
    PF_BUILTIN_PROCESS = 1,    /* inputs, emits */
    PF_BUILTIN_SINK = 2        /* inputs, emits nothing */
} pf_builtin_kind;

/* The i-th built-in type name (i from 0), NULL past the end; *kind (may be
 * NULL) receives its kind. */
PF_API const char *pf_stage_builtin_type(int i, pf_builtin_kind *kind);

/* Pipeline -------------------------------------------------------------------------- */

/* Clock used for pacing, batching delays and statistics; tests inject a fake
 * one. now_ns must be monotonic. NULL fields mean the real clock. */
typedef struct pf_clock {
    int64_t (*now_ns)(void *user);
    void *user;
} pf_clock;

typedef enum pf_pipeline_mode {
    PF_MODE_CUSTOM = 0,        /* every edge and batcher as configured */
    PF_MODE_LATENCY = 1,       /* batch 1, edges capacity <= 2, latest_only after sources
                                  and into stages with several inputs (the freshest
                                  frame per stream; drops counted per stream) */
    PF_MODE_THROUGHPUT = 2     /* edges block; configured batches kept */
} pf_pipeline_mode;

/* The longest device-counter period a trace takes (ms): one minute. */
#define PF_PIPELINE_TRACE_COUNTER_MS_MAX 60000

typedef struct pf_pipeline_params {
    const char *name;          /* for stats and traces */
    pf_pipeline_mode mode;     /* applied at start, overriding edge settings */
    bool strict_transfers;     /* refuse to start where a transfer would be inserted */
    const char *trace_path;    /* Chrome/Perfetto JSON trace (pixflow/prof.h), written
                                  when the pipeline is destroyed; NULL = none. It holds
                                  a span per item per stage on the stage's track (per
                                  worker thread), flow arrows linking an item's spans
                                  (same source and seq), a queue depth counter per
                                  edge, and for stages on a CUDA device the GPU time of
                                  each call (CUDA events around it on the stage's
                                  stream) on a GPU track of the same name, plus that
                                  device's counters. GPU time and counters cover the
                                  first CUDA device used by a stage (one device per
                                  tracer; stages on another device get no GPU track). */
    int trace_counter_ms;      /* with a trace and a CUDA stage: device counters (NVML
                                  utilisation, memory, power, temperature; without NVML
                                  memory used) sampled this often; default 100, 0 = off,
                                  at most PF_PIPELINE_TRACE_COUNTER_MS_MAX */
    size_t trace_max_events;   /* trace buffer in events (64 bytes each, allocated at
                                  start; events past it are counted and dropped); 0 =
                                  the tracer's default, 1 << 20. A run records about
                                  (stages + GPU stages) events per item */
    pf_clock clock;
    bool sources_wait_start;   /* sources produce nothing until every processing stage's
                                  start callback has returned (nn.infer's plans, a
                                  device context): realtime files and live cameras then
                                  do not queue frames behind start-up and count them as
                                  latency. Default false (a source may feed a stage that
                                  is still starting) */
} pf_pipeline_params;

PF_API pf_pipeline_params pf_pipeline_params_default(void);
PF_API pf_status pf_pipeline_create(const pf_pipeline_params *p, pf_pipeline **out);
/* Cancels if running, waits for the workers, releases everything. */
PF_API void pf_pipeline_destroy(pf_pipeline **p);

PF_API pf_status pf_pipeline_add_stage(pf_pipeline *p, const pf_stage_desc *d, pf_stage **out);
PF_API pf_status pf_pipeline_connect(pf_pipeline *p, pf_stage *from, pf_stage *to,
                                     const pf_edge_params *e);
PF_API pf_stage *pf_pipeline_find_stage(pf_pipeline *p, const char *name);
/* add_stage and connect also work while the pipeline runs ("Live changes"):
 * what they add waits until this call starts it (each added stage that is
 * not a source needs an input by then). PF_ERR_INVALID when the pipeline is
 * not running (finished, stopping, or never started: use pf_pipeline_start)
 * or nothing was added. On a failure to start the added stages' threads the
 * pipeline stops with that error. */
PF_API pf_status pf_pipeline_start_added(pf_pipeline *p);

/* Validates (names, sources, cycles, domains/transfers), inserts transfers,
 * starts the workers. */
PF_API pf_status pf_pipeline_start(pf_pipeline *p);
/* Waits until the pipeline has drained (PF_OK), failed (that error) or been
 * cancelled (PF_ERR_CANCELLED). timeout_us as in thread.h (PF_TIMEOUT). */
PF_API pf_status pf_pipeline_wait(pf_pipeline *p, int64_t timeout_us);
/* Thread-safe; idempotent. */
PF_API void pf_pipeline_cancel(pf_pipeline *p);
/* Async-signal-safe variant: only sets a flag the workers poll. */
PF_API void pf_pipeline_cancel_async(pf_pipeline *p);

/* YAML pipelines ---------------------------------------------------------------------------
 *
 * Builds a pipeline from a YAML file (format in docs/pipeline-yaml.md): global
 * settings (name, mode, device, trace, strict transfers), stages by built-in
 * type with their parameters, edges with capacity and policy, batcher
 * settings, source pacing. Unknown keys, wrong types, unknown stage types or
 * names, duplicate names, edges forming a cycle and bad values fail with
 * PF_ERR_FORMAT and a message "FILE:LINE: ...". `base` (may be NULL) gives
 * defaults the file can override. PF_ERR_UNSUPPORTED when this build has no
 * YAML support (libyaml missing at build time). */
PF_API pf_status pf_pipeline_load_yaml(const char *path, const pf_pipeline_params *base,
                                       pf_pipeline **out);

/* The same with overrides and in-memory text (tools, tests, fuzzing). */
typedef struct pf_pipeline_yaml_params {
    const char *path;           /* the file; with `text` set only used in messages */
    const char *text;           /* non-NULL: parse these text_len bytes instead of reading path */
    size_t text_len;
    pf_pipeline_params base;    /* defaults; what the file sets wins */
    /* Overrides: win over the file. */
    const char *device;         /* non-NULL: every stage runs on this device spec */
    int mode;                   /* -1: as the file says; else a pf_pipeline_mode */
    const char *trace_path;     /* non-NULL: trace here */
    int64_t count;              /* > 0: every source stops after this many items */
    int trace_counter_ms;       /* >= 0: device counter period in the trace (0 = off);
                                   -1: as the file says (key trace_counter_ms) */
} pf_pipeline_yaml_params;

/* path NULL, text NULL, base = pf_pipeline_params_default(), no overrides (mode -1,
 * trace_counter_ms -1). */
PF_API pf_pipeline_yaml_params pf_pipeline_yaml_params_default(void);
PF_API pf_status pf_pipeline_create_from_yaml(const pf_pipeline_yaml_params *p,
                                              pf_pipeline **out);

/* Statistics --------------------------------------------------------------------------- */

#define PF_STATS_MAX_BATCH 256

typedef struct pf_stage_stats {
    const char *name;
    uint64_t items_in, items_out;
    double fps;                 /* items_in per second of running time */
    double busy_fraction;       /* time inside process/source (less time blocked
                                   in emit) over running time x threads */
    double latency_p50_us, latency_p95_us, latency_p99_us; /* per call of process
                                   (or source), without time blocked in emit */
    uint64_t errors;
    uint64_t batches;
    uint64_t batch_hist[PF_STATS_MAX_BATCH + 1]; /* [k] = batches of size k */
    bool is_transfer;           /* inserted by the runtime */
    uint64_t transfers;         /* copies made by a transfer stage (one per
                                   frame or tensor copied) */
    uint64_t transfers_p2p;     /* of those, device to another device directly
                                   (pf_device_peer_access); the others between
                                   two devices went through pinned host memory */
    uint64_t dropped;           /* items the stage released on purpose
                                   (pf_stage_drop, e.g. demux's unmapped streams) */
    int batch_limit;            /* 0, or the max batch pf_stage_limit_batch lowered it
                                   to (nn.infer after an out-of-memory) */
    uint64_t batch_limits;      /* how many times it was lowered */
} pf_stage_stats;

/* Per stream: the items of one source id (pf_item.source). A stream appears
 * with its first item; at most 4096 streams are tracked (items of others
 * count only in the pipeline's figures). */
typedef struct pf_stream_stats {
    int32_t source;
    uint64_t items_in;          /* made by a source stage with this source id */
    uint64_t items_out;         /* reached a sink */
    uint64_t dropped;           /* dropped by an edge policy (e.g. latest_only in
                                   latency mode) or by a stage (pf_stage_drop) */
    double fps;                 /* items_out per second, from the stream's first
                                   item to its last output */
    double e2e_p50_us, e2e_p99_us; /* source timestamp -> sink */
} pf_stream_stats;

typedef struct pf_edge_stats {
    const char *from, *to;
    int capacity;
    pf_edge_policy policy;
    uint64_t pushed, popped, dropped, cancelled;
    double depth_mean;          /* time-weighted */
    int depth_max;
} pf_edge_stats;

typedef struct pf_pipeline_stats {
    double elapsed_s;
    uint64_t items_completed;   /* reached a sink */
    double fps;
    double e2e_p50_us, e2e_p95_us, e2e_p99_us; /* source timestamp -> sink */
    uint64_t dropped;           /* sum over edges */
    uint64_t transfers;
    uint64_t transfers_p2p;     /* of transfers: device to device peer-to-peer */
    int bottleneck;             /* index into stages: highest busy fraction */
    int num_stages, num_edges;
    const pf_stage_stats *stages; /* valid until the next get_stats or destroy */
    const pf_edge_stats *edges;
    int num_streams;            /* sorted by source id */
    const pf_stream_stats *streams;
} pf_pipeline_stats;

/* A consistent snapshot; callable while running (thread-safe). */
PF_API pf_status pf_pipeline_get_stats(pf_pipeline *p, pf_pipeline_stats *out);
/* The table printed at the end of a run (a per-stream table follows the
 * stages when there are several streams); JSON with the same content
 * ("streams": one object per source id with items_in, items_out, dropped,
 * fps and e2e_us p50/p99; each stage also has "dropped"). */
PF_API pf_status pf_pipeline_print_stats(pf_pipeline *p, FILE *f);
PF_API pf_status pf_pipeline_write_stats_json(pf_pipeline *p, FILE *f);

PF_END_DECLS

#endif
