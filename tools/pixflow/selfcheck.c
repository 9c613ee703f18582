/* `pixflow info --self-check`: see selfcheck.h. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "selfcheck.h"

/* Self-check ------------------------------------------------------------------------------- */

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static void fill_pattern(unsigned char *p, size_t n, uint64_t seed)
{
    uint64_t s = seed ? seed : 1;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = xorshift(&s);
        size_t k = n - i < 8 ? n - i : 8;
        memcpy(p + i, &v, k);
    }
}

/* Records a failed step with the library's message; returns false. */
static bool step_failed(selfcheck_report *sc, const char *step, pf_status st)
{
    sc->ok = false;
    sc->failed_step = step;
    snprintf(sc->error, sizeof sc->error, "%s: %s", pf_status_str(st), pf_last_error());
    return false;
}

#define STEP(name, expr) \
    do { \
        pf_status st_ = (expr); \
        if (st_ != PF_OK) return step_failed(sc, (name), st_); \
    } while (0)

typedef struct selfcheck_ctx {
    pf_device *dev;
    pf_stream *stream;
    pf_event *ev[COPY_COUNT + 1];
    pf_allocator *alloc;
    pf_pinned_pool *pool;
    pf_buffer *src, *dst, *pinned, *da, *db;
} selfcheck_ctx;

/* One round: host -> pinned -> device A -> device B -> host, timed by events
 * between the copies, then a byte-exact comparison. */
static bool selfcheck_round(selfcheck_ctx *c, selfcheck_report *sc, int round)
{
    const size_t n = SELFCHECK_BYTES;
    STEP("allocate device block A", pf_allocator_alloc(c->alloc, n, c->stream, &c->da));
    STEP("allocate device block B", pf_allocator_alloc(c->alloc, n, c->stream, &c->db));

    unsigned char *src = pf_buffer_data(c->src), *dst = pf_buffer_data(c->dst);
    fill_pattern(src, n, sc->seed + (uint64_t)round);
    memset(dst, 0, n);

    /* Buffer-checked copies: they also verify that each buffer is as large
     * as asked and lives where this stream can reach it. */
    STEP("record event", pf_event_record(c->ev[0], c->stream));
    STEP("copy host->pinned", pf_buffer_copy_async(c->stream, c->pinned, 0, c->src, 0, n));
    STEP("record event", pf_event_record(c->ev[1], c->stream));
    STEP("copy pinned->device", pf_buffer_copy_async(c->stream, c->da, 0, c->pinned, 0, n));
    STEP("record event", pf_event_record(c->ev[2], c->stream));
    STEP("copy device->device", pf_buffer_copy_async(c->stream, c->db, 0, c->da, 0, n));
    STEP("record event", pf_event_record(c->ev[3], c->stream));
    STEP("copy device->host", pf_buffer_copy_async(c->stream, c->dst, 0, c->db, 0, n));
    STEP("record event", pf_event_record(c->ev[4], c->stream));
    STEP("synchronize stream", pf_stream_synchronize(c->stream));
    for (int i = 0; i < COPY_COUNT; i++)
        STEP("read event timing", pf_event_elapsed_ms(c->ev[i], c->ev[i + 1], &sc->copies[i].ms));

    if (memcmp(src, dst, n) != 0) {
        size_t at = 0;
        while (at < n && src[at] == dst[at]) at++;
        sc->ok = false;
        sc->failed_step = "verify";
        snprintf(sc->error, sizeof sc->error,
                 "round %d: byte %zu of %zu differs after the copies: got 0x%02x, want 0x%02x "
                 "(pattern seed %llu)", round, at, n, dst[at], src[at],
                 (unsigned long long)(sc->seed + (uint64_t)round));
        return false;
    }
    /* Back to the allocator's cache; same stream, so round 2 may reuse them. */
    pf_buffer_unref(&c->da);
    pf_buffer_unref(&c->db);
    return true;
}

static bool selfcheck_body(selfcheck_ctx *c, selfcheck_report *sc)
{
    pf_stream_params sp = pf_stream_params_default();
    sp.device = c->dev;
    STEP("create stream", pf_stream_create(&sp, &c->stream));
    for (int i = 0; i <= COPY_COUNT; i++) STEP("create event", pf_event_create(c->dev, &c->ev[i]));

    pf_allocator_params ap = pf_allocator_params_default();
    ap.device = c->dev;
    ap.domain = PF_MEM_DEVICE;
    ap.cap_bytes = SELFCHECK_CAP_BYTES;
    ap.name = "self-check";
    STEP("create caching allocator", pf_allocator_create(&ap, &c->alloc));

    pf_pinned_pool_params pp = pf_pinned_pool_params_default();
    pp.device = c->dev;
    pp.block_size = SELFCHECK_BYTES;
    pp.block_count = 1;
    pp.name = "self-check";
    STEP("create pinned pool", pf_pinned_pool_create(&pp, &c->pool));
    if (pf_device_get_type(c->dev) == PF_DEVICE_CUDA) {
        /* Unpinned staging memory would make every transfer a slow,
         * partly synchronous one: that is a failure here, not a detail. */
        pf_pinned_pool_stats ps;
        STEP("read pinned pool statistics", pf_pinned_pool_get_stats(c->pool, &ps));
        if (!ps.pinned) {
            sc->ok = false;
            sc->failed_step = "pinned pool is page-locked";
            snprintf(sc->error, sizeof sc->error,
                     "the pinned pool's memory is not page-locked on %s", pf_device_spec(c->dev));
            return false;
        }
    }
    STEP("acquire pinned block", pf_pinned_pool_acquire(c->pool, 5 * 1000 * 1000, &c->pinned));
    STEP("allocate host buffers", pf_buffer_alloc_host(SELFCHECK_BYTES, &c->src));
    STEP("allocate host buffers", pf_buffer_alloc_host(SELFCHECK_BYTES, &c->dst));

    if (!selfcheck_round(c, sc, 1)) return false;
    pf_allocator_stats before, after;
    STEP("read allocator statistics", pf_allocator_get_stats(c->alloc, &before));
    if (!selfcheck_round(c, sc, 2)) return false;
    STEP("read allocator statistics", pf_allocator_get_stats(c->alloc, &after));

    sc->round2_cache_hits = after.cache_hits - before.cache_hits;
    sc->round2_runtime_allocs = after.runtime_allocs - before.runtime_allocs;
    if (sc->round2_cache_hits != 2 || sc->round2_runtime_allocs != 0) {
        sc->ok = false;
        sc->failed_step = "allocator reuse";
        snprintf(sc->error, sizeof sc->error,
                 "second round of two %zu-byte blocks on the same stream made %llu runtime "
                 "allocation(s) and %llu cache hit(s); expected 0 and 2",
                 SELFCHECK_BYTES, (unsigned long long)sc->round2_runtime_allocs,
                 (unsigned long long)sc->round2_cache_hits);
        return false;
    }
    return true;
}

void run_selfcheck(pf_device *dev, selfcheck_report *sc)
{
    static const char *const names[COPY_COUNT] = {"host_to_pinned", "pinned_to_device",
                                                  "device_to_device", "device_to_host"};
    static const char *const labels[COPY_COUNT] = {"host->pinned", "pinned->device",
                                                   "device->device", "device->host"};
    memset(sc, 0, sizeof *sc);
    for (int i = 0; i < COPY_COUNT; i++) {
        sc->copies[i].name = names[i];
        sc->copies[i].label = labels[i];
    }
    sc->seed = (uint64_t)pf_time_ns();
    sc->ok = true;

    selfcheck_ctx c;
    memset(&c, 0, sizeof c);
    c.dev = dev;
    selfcheck_body(&c, sc);

    /* Waits for any work still queued after a failure before freeing. */
    if (c.stream) pf_stream_synchronize(c.stream);
    pf_buffer_unref(&c.da);
    pf_buffer_unref(&c.db);
    pf_buffer_unref(&c.pinned);
    pf_buffer_unref(&c.src);
    pf_buffer_unref(&c.dst);
    pf_pinned_pool_destroy(&c.pool);
    pf_allocator_destroy(&c.alloc);
    for (int i = 0; i <= COPY_COUNT; i++) pf_event_destroy(&c.ev[i]);
    pf_stream_destroy(&c.stream);
}

double selfcheck_gbps(float ms)
{
    return ms > 0 ? (double)SELFCHECK_BYTES / ((double)ms * 1e6) : 0.0;
}
