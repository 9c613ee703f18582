/* The transfer stage the runtime inserts where an edge joins a producer and a
 * consumer on different sides (host vs device, or two devices).
 *
 * Per item part (frame, tensor) it compares where the part really lives with
 * what the consumer accepts; a part already in place is passed on by
 * reference, any other is copied and counted:
 *   host -> device  pageable data is first copied on the host into a pinned
 *                   staging block (DMA needs page-locked memory for a real
 *                   async copy), pinned data is copied directly; the device
 *                   buffer comes from the pipeline's caching allocator,
 *                   allocated on the transfer's stream for that device
 *   device -> host  into a pinned block, which becomes the output itself (no
 *                   second copy); the block goes back to the pool when the
 *                   consumer drops the item
 *   device -> device' directly (cudaMemcpy*Async over NVLink or PCIe P2P)
 *                   where pf_device_peer_access pairs the two devices (counted
 *                   apart: transfers_p2p), else through a pinned block
 * Staging blocks come from a pf_pinned_pool per device, sized from the first
 * item (grown when a larger one comes), with as many blocks as the consumer
 * can hold at once; when they are all out the pipeline's pinned allocator
 * serves instead, so a consumer that keeps items never deadlocks the copy.
 *
 * Simple and correct over clever: the stage waits for the producer's event
 * on the host, and synchronises its own stream before it emits, so what it
 * emits is ready (item.ready stays NULL) and staging blocks can be reused at
 * once. One worker thread owns all of this state: no locks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "../device/backend.h"
#include "pipeline_impl.h"

#define MAX_DEVS 4

struct pl_transfer {
    pf_pipeline *pl;
    pf_mem_domain want;       /* what the consumer accepts */
    pf_device *want_dev;      /* the consumer's device */
    struct {
        pf_device *dev;
        pf_stream *s;
    } streams[MAX_DEVS];
    int nstreams;
    struct {
        pf_device *dev;
        pf_pinned_pool *pool;
        size_t block;
    } pools[MAX_DEVS];
    int npools;
    int pool_count;
};

const char *pl_transfer_kind(const pf_stage *from, const pf_stage *to)
{
    bool fh = pl_domain_is_host(from->d.produces), th = pl_domain_is_host(to->d.accepts);
    return fh && !th ? "h2d" : !fh && th ? "d2h" : "d2d";
}

pf_status pl_transfer_create(pf_pipeline *p, pf_stage *from, pf_stage *to, pl_transfer **out)
{
    (void)from;
    pl_transfer *t = calloc(1, sizeof *t);
    if (!t) return pf_set_error(PF_ERR_NOMEM, "pf_pipeline_start: out of host memory");
    t->pl = p;
    t->want = to->d.accepts;
    t->want_dev = to->dev;
    t->pool_count = 4;
    *out = t;
    return PF_OK;
}

void pl_transfer_configure(pl_transfer *t, int out_capacity, int consumer_hold)
{
    t->pool_count = out_capacity + consumer_hold + 2;
}

void pl_transfer_destroy(pl_transfer **pt)
{
    if (!pt || !*pt) return;
    pl_transfer *t = *pt;
    *pt = NULL;
    for (int i = 0; i < t->npools; i++) pf_pinned_pool_destroy(&t->pools[i].pool);
    for (int i = 0; i < t->nstreams; i++) pf_stream_destroy(&t->streams[i].s);
    free(t);
}

static pf_status stream_for(pl_transfer *t, pf_device *dev, pf_stream **out)
{
    for (int i = 0; i < t->nstreams; i++)
        if (t->streams[i].dev == dev) {
            *out = t->streams[i].s;
            return PF_OK;
        }
    if (t->nstreams == MAX_DEVS)
        return pf_set_error(PF_ERR_UNSUPPORTED, "transfer: more than %d devices", MAX_DEVS);
    pf_stream_params sp = pf_stream_params_default();
    sp.device = dev;
    pf_status st = pf_stream_create(&sp, &t->streams[t->nstreams].s);
    if (st != PF_OK) return st;
    t->streams[t->nstreams].dev = dev;
    *out = t->streams[t->nstreams++].s;
    return PF_OK;
}

/* A host block of at least `size` bytes, page-locked for `dev`. */
static pf_status staging(pl_transfer *t, pf_device *dev, size_t size, pf_buffer **out)
{
    if (size == 0) size = 1;
    int k = -1;
    for (int i = 0; i < t->npools; i++)
        if (t->pools[i].dev == dev) k = i;
    if (k < 0 && t->npools < MAX_DEVS) {
        k = t->npools++;
        t->pools[k].dev = dev;
        t->pools[k].pool = NULL;
        t->pools[k].block = 0;
    }
    if (k >= 0 && t->pools[k].block < size) {
        /* Blocks of the old pool still out stay valid until they return. */
        pf_pinned_pool_destroy(&t->pools[k].pool);
        pf_pinned_pool_params pp = pf_pinned_pool_params_default();
        pp.device = dev;
        pp.block_size = (size + 4095) & ~(size_t)4095;
        pp.block_count = t->pool_count;
        char name[96];
        snprintf(name, sizeof name, "%s/staging/%s", t->pl->name, pf_device_spec(dev));
        pp.name = name;
        pf_status st = pf_pinned_pool_create(&pp, &t->pools[k].pool);
        if (st != PF_OK) return st;
        t->pools[k].block = pp.block_size;
    }
    if (k >= 0 && pf_pinned_pool_acquire(t->pools[k].pool, 0, out) == PF_OK) return PF_OK;
    /* Every block is out (the consumer holds them): the caching allocator. */
    pf_allocator *a = pl_get_allocator(t->pl, dev, PF_MEM_PINNED);
    if (!a) return PF_ERR_NOMEM;
    return pf_allocator_alloc(a, size, NULL, out);
}

static const char *where(const pf_buffer *b, char *buf, size_t n)
{
    snprintf(buf, n, "%s memory on %s", pf_mem_domain_name(pf_buffer_domain(b)),
             pf_device_spec(pf_buffer_device(b)));
    return buf;
}

static pf_status copy_frame(pl_transfer *t, pf_frame *dst, const pf_frame *src, int *copies,
                           int *p2p)
{
    pf_buffer *sb = src->buf[0];
    if (pl_location_matches(sb, t->want, t->want_dev)) {
        pf_frame_ref(dst, src);
        return PF_OK;
    }
    pf_device *sdev = pf_buffer_device(sb);
    bool src_host = pl_domain_is_host(pf_buffer_domain(sb));
    size_t strides[PF_FRAME_MAX_PLANES], offsets[PF_FRAME_MAX_PLANES], total;
    pf_status st = pf_frame_layout(src->format, src->width, src->height, 1, strides, offsets, &total);
    if (st != PF_OK) return st;
    pf_buffer *blk = NULL;
    pf_frame stage;
    memset(&stage, 0, sizeof stage);
    pf_stream *s = NULL, *ds = NULL;
    if (pl_domain_is_host(t->want)) {
        /* device -> host: the pinned block is the output */
        if ((st = stream_for(t, sdev, &s)) != PF_OK) return st;
        if ((st = staging(t, sdev, total, &blk)) != PF_OK) return st;
        st = pf_frame_wrap(dst, src->format, src->width, src->height, blk, 0, NULL);
        pf_buffer_unref(&blk);
        if (st == PF_OK) st = pf_frame_copy_async(dst, src, s);
        if (st == PF_OK) st = pf_stream_synchronize(s);
    } else {
        pf_allocator *a = pl_get_allocator(t->pl, t->want_dev, PF_MEM_DEVICE);
        if (!a) return PF_ERR_NOMEM;
        if ((st = stream_for(t, t->want_dev, &ds)) != PF_OK) return st;
        if ((st = pf_frame_alloc(dst, src->format, src->width, src->height, a, ds)) != PF_OK)
            return st;
        const pf_frame *from = src;
        const bool peer = !src_host && sdev != t->want_dev && pf_device_peer_access(sdev, t->want_dev);
        if (peer) (*p2p)++;
        if (!peer && (!src_host || pf_buffer_domain(sb) == PF_MEM_HOST)) {
            /* pageable host or another device: through a pinned block */
            pf_device *bdev = src_host ? t->want_dev : sdev;
            st = staging(t, bdev, total, &blk);
            if (st == PF_OK) st = pf_frame_wrap(&stage, src->format, src->width, src->height, blk, 0, NULL);
            pf_buffer_unref(&blk);
            if (st == PF_OK) {
                if (src_host) {
                    /* a CPU stream copies at once, on this thread */
                    pf_stream *hs = NULL;
                    if ((st = stream_for(t, pf_cpu_device(), &hs)) == PF_OK)
                        st = pf_frame_copy_async(&stage, src, hs);
                } else {
                    if ((st = stream_for(t, sdev, &s)) == PF_OK &&
                        (st = pf_frame_copy_async(&stage, src, s)) == PF_OK)
                        st = pf_stream_synchronize(s);
                }
            }
            from = &stage;
        }
        if (st == PF_OK) st = pf_frame_copy_async(dst, from, ds);
        if (st == PF_OK) st = pf_stream_synchronize(ds);
        pf_frame_unref(&stage);
    }
    if (st != PF_OK) {
        pf_frame_unref(dst);
        return st;
    }
    pf_frame_copy_props(dst, src); /* timing, colour, aspect, ICC: not only pts */
    dst->meta = pf_buffer_ref(src->meta);
    (*copies)++;
    return PF_OK;
}

static pf_status copy_tensor(pl_transfer *t, pf_tensor *dst, const pf_tensor *src, int *copies,
                            int *p2p)
{
    pf_buffer *sb = src->buf;
    if (pl_location_matches(sb, t->want, t->want_dev)) {
        pf_tensor_ref(dst, src);
        return PF_OK;
    }
    pf_device *sdev = pf_buffer_device(sb);
    bool src_host = pl_domain_is_host(pf_buffer_domain(sb));
    /* The span from the first to past the last element, strides kept: any
     * strided view copies as one range. */
    size_t nb = pf_tensor_numel(src) ? pf_tensor_nbytes(src) : 0;
    pf_buffer *blk = NULL, *dbuf = NULL;
    pf_stream *s = NULL, *ds = NULL;
    pf_status st;
    if (pl_domain_is_host(t->want)) {
        if ((st = stream_for(t, sdev, &s)) != PF_OK) return st;
        if ((st = staging(t, sdev, nb, &blk)) != PF_OK) return st;
        st = pf_tensor_wrap(dst, blk, 0, src->dtype, src->ndim, src->shape, src->strides,
                            src->layout);
        pf_buffer_unref(&blk);
        if (st == PF_OK && nb) st = pf_memcpy_async(s, dst->data, src->data, nb);
        if (st == PF_OK) st = pf_stream_synchronize(s);
    } else {
        pf_allocator *a = pl_get_allocator(t->pl, t->want_dev, PF_MEM_DEVICE);
        if (!a) return PF_ERR_NOMEM;
        if ((st = stream_for(t, t->want_dev, &ds)) != PF_OK) return st;
        if ((st = pf_allocator_alloc(a, nb ? nb : 1, ds, &dbuf)) != PF_OK) return st;
        st = pf_tensor_wrap(dst, dbuf, 0, src->dtype, src->ndim, src->shape, src->strides,
                            src->layout);
        pf_buffer_unref(&dbuf);
        if (st != PF_OK) return st;
        const void *from = src->data;
        const bool peer = !src_host && sdev != t->want_dev && pf_device_peer_access(sdev, t->want_dev);
        if (peer && nb) (*p2p)++;
        if (nb && !peer && (!src_host || pf_buffer_domain(sb) == PF_MEM_HOST)) {
            pf_device *bdev = src_host ? t->want_dev : sdev;
            st = staging(t, bdev, nb, &blk);
            if (st == PF_OK) {
                if (src_host) {
                    memcpy(pf_buffer_data(blk), src->data, nb);
                } else if ((st = stream_for(t, sdev, &s)) == PF_OK &&
                           (st = pf_memcpy_async(s, pf_buffer_data(blk), src->data, nb)) == PF_OK) {
                    st = pf_stream_synchronize(s);
                }
                from = pf_buffer_data(blk);
            }
        }
        if (st == PF_OK && nb) st = pf_memcpy_async(ds, dst->data, from, nb);
        if (st == PF_OK) st = pf_stream_synchronize(ds);
        pf_buffer_unref(&blk);
    }
    if (st != PF_OK) {
        pf_tensor_unref(dst);
        return st;
    }
    (*copies)++;
    return PF_OK;
}

pf_status pl_transfer_process(void *user, pf_stage_ctx *ctx, pf_item *items, int n)
{
    pl_transfer *t = user;
    for (int i = 0; i < n; i++) {
        pf_item *in = &items[i];
        pf_item out;
        memset(&out, 0, sizeof out);
        pf_status st = PF_OK;
        int copies = 0, p2p = 0;
        char w1[96], msg[512];
        msg[0] = 0;
        if (in->ready) {
            st = pf_event_synchronize(in->ready);
            if (st != PF_OK) snprintf(msg, sizeof msg, "waiting for the producer: %s", pf_last_error());
            in->ready = NULL;
        }
        if (st == PF_OK && in->frame.buf[0]) {
            st = copy_frame(t, &out.frame, &in->frame, &copies, &p2p);
            if (st != PF_OK)
                snprintf(msg, sizeof msg, "copying a %dx%d %s frame from %s: %s", in->frame.width,
                         in->frame.height, pf_pixfmt_name(in->frame.format),
                         where(in->frame.buf[0], w1, sizeof w1), pf_last_error());
        }
        if (st == PF_OK && in->tensor.buf) {
            st = copy_tensor(t, &out.tensor, &in->tensor, &copies, &p2p);
            if (st != PF_OK)
                snprintf(msg, sizeof msg, "copying a %s tensor of %lld elements from %s: %s",
                         pf_dtype_name(in->tensor.dtype), (long long)pf_tensor_numel(&in->tensor),
                         where(in->tensor.buf, w1, sizeof w1), pf_last_error());
        }
        out.source = in->source;
        out.seq = in->seq;
        out.t_source_ns = in->t_source_ns;
        out.priority = in->priority;
        out.user = in->user;
        pf_item_unref(in);
        if (st == PF_OK) {
            atomic_fetch_add_explicit(&ctx->st->transfers, (uint64_t)copies, memory_order_relaxed);
            atomic_fetch_add_explicit(&ctx->st->transfers_p2p, (uint64_t)p2p, memory_order_relaxed);
            st = pf_stage_emit(ctx, &out);
        } else {
            pf_item_unref(&out);
            pf_set_error(st, "%s", msg);
        }
        if (st != PF_OK) {
            for (int j = i + 1; j < n; j++) pf_item_unref(&items[j]);
            return st;
        }
    }
    return PF_OK;
}
