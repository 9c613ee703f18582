/* ops_test_util.h: what the pf_ops tests share - tests/test_{preprocess,
 * convert,resize,composite,mask,reproject}.c, their CUDA twins in
 * tests/cuda/, and the helpers of composite_check.h and preprocess_check.h:
 * the error-message check, contexts and thread pools, the CPU tests' stream,
 * the CUDA tests' setup (GPU, streams, allocators), memory of a stand-in GPU,
 * random host frames with padded strides and unaligned starts, copies of
 * them in device memory, whole-buffer comparisons that say where two frames
 * first differ, and the CUDA-graph capture and replay check of a frame op.
 *
 * Header-only, everything static inline (a test that uses part of it has no
 * unused-function warnings); CMake globs only tests/test_*.c and
 * tests/cuda/test_*.c as tests. Plain C on the library's API (and the device
 * record of device/backend.h), so CPU and CUDA tests alike include it. */
#ifndef PF_OPS_TEST_UTIL_H
#define PF_OPS_TEST_UTIL_H

#include "device/backend.h"
#include "pf_test.h"

/* `call` fails with `status` and a message containing `text`: two checks. */
#define EXPECT_ERR(call, status, text) \
    do { \
        pf_clear_error(); \
        pf_status otu_st_ = (call); \
        CHECK_EQ_INT(otu_st_, status); \
        const int otu_found_ = strstr(pf_last_error(), text) != NULL; \
        if (!otu_found_) \
            fprintf(stderr, "  %s:%d: message '%s' lacks '%s'\n", __FILE__, __LINE__, \
                    pf_last_error(), text); \
        CHECK(otu_found_); \
    } while (0)

/* Contexts, pools, streams ------------------------------------------------------------ */

/* A pf_ops context on stream `s` (pool NULL: its own, on the CPU); the
 * creation is a CHECK_OK, so a refusal fails the running case and gives NULL. */
static inline pf_ops *otu_make_ops(pf_stream *s, int reference, pf_threadpool *pool)
{
    pf_ops_params op = pf_ops_params_default();
    op.stream = s;
    op.reference = reference;
    op.pool = pool;
    pf_ops *ops = NULL;
    CHECK_OK(pf_ops_create(&op, &ops));
    return ops;
}

/* A thread pool of `threads` threads (CHECK_OK; NULL if refused). */
static inline pf_threadpool *otu_make_pool(int threads)
{
    pf_threadpool_params tp = pf_threadpool_params_default();
    tp.num_threads = threads;
    pf_threadpool *pool = NULL;
    CHECK_OK(pf_threadpool_create(&tp, &pool));
    return pool;
}

/* The CPU tests' stream, on the CPU device; NULL (with the message on
 * stderr) if it cannot be created. */
static inline pf_stream *otu_cpu_stream(void)
{
    pf_stream *s = NULL;
    if (pf_stream_create(NULL, &s) != PF_OK) fprintf(stderr, "stream: %s\n", pf_last_error());
    return s;
}

/* The CUDA tests' setup: the GPU (or exit 77: skipped), then the seed, a
 * stream on the GPU (*cs), a CPU stream for the reference (*hs), and
 * allocators of the GPU's device and pinned memory named "<name>-device" and
 * "<name>-pinned". Returns 0, or 1 (the test's exit code) after a message. */
static inline int otu_cuda_setup(uint64_t seed, const char *name, pf_device **dev, pf_stream **cs,
                                 pf_stream **hs, pf_allocator **dalloc, pf_allocator **palloc)
{
    *dev = pf_test_cuda_device_or_skip();
    pf_test_seed(seed);
    pf_stream_params sp = pf_stream_params_default();
    sp.device = *dev;
    if (pf_stream_create(&sp, cs) != PF_OK || pf_stream_create(NULL, hs) != PF_OK) {
        fprintf(stderr, "stream: %s\n", pf_last_error());
        return 1;
    }
    char dname[64], pname[64];
    snprintf(dname, sizeof dname, "%s-device", name);
    snprintf(pname, sizeof pname, "%s-pinned", name);
    *dalloc = pf_test_allocator_create(*dev, dname, PF_MEM_DEVICE, 0);
    *palloc = pf_test_allocator_create(*dev, pname, PF_MEM_PINNED, 0);
    return *dalloc && *palloc ? 0 : 1;
}

/* Waits for *cs, then destroys what otu_cuda_setup created (contexts on the
 * streams first). */
static inline void otu_cuda_teardown(pf_stream **cs, pf_stream **hs, pf_allocator **dalloc,
                                     pf_allocator **palloc)
{
    if (*cs) pf_stream_synchronize(*cs);
    pf_allocator_destroy(dalloc);
    pf_allocator_destroy(palloc);
    pf_stream_destroy(cs);
    pf_stream_destroy(hs);
}

/* A buffer over host bytes [p, p + n) that claims to be device memory of a
 * stand-in CUDA device, "cuda:<index>": the wrappers' reachability checks
 * read only a device record's type, index and name, so no GPU is needed, and
 * the calls under test must fail before touching the bytes. The record is
 * one static per test file, renamed by each call. CHECK_OK; NULL if refused. */
static inline pf_buffer *otu_fake_gpu_buffer(void *p, size_t n, int index)
{
    static pf_device fake;
    fake.props.type = PF_DEVICE_CUDA;
    fake.props.index = index;
    snprintf(fake.spec, sizeof fake.spec, "cuda:%d", index);
    pf_buffer *b = NULL;
    CHECK_OK(pf_buffer_wrap(p, n, PF_MEM_DEVICE, &fake, NULL, NULL, &b));
    return b;
}

/* Frames ------------------------------------------------------------------------------- */

/* What otu_make_frame fills a buffer with, besides a byte value 0..255. */
enum {
    OTU_RANDOM = -1,       /* one pf_test_rand() per byte */
    OTU_RANDOM_WORDS = -2, /* pf_test_fill_random: one per 8 bytes */
};

/* A host frame in a buffer of its own, starting `offset` bytes in (an
 * unaligned start when odd), each plane's stride its row + 0..pad_max bytes;
 * every byte of the buffer (padding included) is `fill`, or random
 * (OTU_RANDOM, OTU_RANDOM_WORDS). */
static inline pf_status otu_make_frame(pf_frame *f, pf_pixfmt fmt, int w, int h, int pad_max,
                                       size_t offset, int fill)
{
    size_t strides[PF_FRAME_MAX_PLANES] = {0}, total = offset;
    for (int p = 0; p < pf_pixfmt_num_planes(fmt); p++) {
        size_t row, rows;
        pf_status st = pf_pixfmt_plane_size(fmt, w, h, p, &row, &rows);
        if (st != PF_OK) return st;
        strides[p] = row + (size_t)(pad_max ? pf_test_rand_range(0, pad_max) : 0);
        total += strides[p] * rows;
    }
    pf_buffer *b = NULL;
    pf_status st = pf_buffer_alloc_host(total, &b);
    if (st != PF_OK) return st;
    uint8_t *d = pf_buffer_data(b);
    if (fill == OTU_RANDOM_WORDS) pf_test_fill_random(d, total);
    else
        for (size_t i = 0; i < total; i++)
            d[i] = (uint8_t)(fill == OTU_RANDOM ? (int)pf_test_rand() : fill);
    memset(f, 0, sizeof *f);
    st = pf_frame_wrap(f, fmt, w, h, b, offset, strides);
    pf_buffer_unref(&b);
    return st;
}

/* Byte offset of a frame's plane 0 in its buffer. */
static inline size_t otu_frame_offset(const pf_frame *f)
{
    return (size_t)(f->data[0] - (uint8_t *)pf_buffer_data(f->buf[0]));
}

/* The same geometry and bytes as host frame `src` in a new host buffer. */
static inline pf_status otu_clone_frame(pf_frame *f, const pf_frame *src)
{
    pf_buffer *sb = src->buf[0];
    size_t size = pf_buffer_size(sb);
    pf_buffer *b = NULL;
    pf_status st = pf_buffer_alloc_host(size, &b);
    if (st != PF_OK) return st;
    memcpy(pf_buffer_data(b), pf_buffer_data(sb), size);
    st = pf_frame_wrap(f, src->format, src->width, src->height, b, otu_frame_offset(src),
                       src->stride);
    pf_buffer_unref(&b);
    return st;
}

/* A copy of the whole buffer of host memory `hb` (padding included) in
 * memory from `alloc`, queued on `s`; *db gets a reference. */
static inline pf_status otu_upload_buffer(pf_buffer *hb, pf_allocator *alloc, pf_stream *s,
                                          pf_buffer **db)
{
    size_t size = pf_buffer_size(hb);
    pf_status st = pf_allocator_alloc(alloc, size, s, db);
    if (st == PF_OK) st = pf_memcpy_async(s, pf_buffer_data(*db), pf_buffer_data(hb), size);
    return st;
}

/* Host frame `h` in memory from `alloc` (device or pinned), with the same
 * offset, strides and bytes (padding included), copied on `s`. */
static inline pf_status otu_upload_frame(const pf_frame *h, pf_allocator *alloc, pf_stream *s,
                                         pf_frame *d)
{
    memset(d, 0, sizeof *d);
    pf_buffer *db = NULL;
    pf_status st = otu_upload_buffer(h->buf[0], alloc, s, &db);
    if (st == PF_OK)
        st = pf_frame_wrap(d, h->format, h->width, h->height, db, otu_frame_offset(h), h->stride);
    pf_buffer_unref(&db);
    return st;
}

/* Comparisons ----------------------------------------------------------------------------- */

/* Index of the first of n bytes where a and b differ, or (size_t)-1. */
static inline size_t otu_first_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return i;
    return (size_t)-1;
}

/* Prints where byte i of f's buffer is (plane, row, byte, or padding),
 * "<label>: <where>: <what> <got>, <want>". */
static inline void otu_print_diff(const pf_frame *f, size_t i, const char *label, const char *what,
                                  int got, int want)
{
    const uint8_t *base = pf_buffer_data(f->buf[0]);
    for (int p = f->num_planes - 1; p >= 0; p--) {
        size_t off = (size_t)(f->data[p] - base);
        if (i < off) continue;
        size_t row = (i - off) / f->stride[p], col = (i - off) % f->stride[p], rb, rows;
        pf_pixfmt_plane_size(f->format, f->width, f->height, p, &rb, &rows);
        if (row >= rows) break;
        fprintf(stderr, "  %s: %s %dx%d plane %d row %zu byte %zu%s: %s %d, %d\n", label,
                pf_pixfmt_name(f->format), f->width, f->height, p, row, col,
                col >= rb ? " (stride padding)" : "", what, got, want);
        return;
    }
    fprintf(stderr, "  %s: byte %zu outside the planes: %s %d, %d\n", label, i, what, got, want);
}

/* Whole buffers of host frames a and b equal (pixels and padding); else
 * prints the first difference. */
static inline int otu_same_bytes(const pf_frame *a, const pf_frame *b, const char *label)
{
    size_t n = pf_buffer_size(a->buf[0]);
    const uint8_t *pa = pf_buffer_data(a->buf[0]), *pb = pf_buffer_data(b->buf[0]);
    if (n != pf_buffer_size(b->buf[0])) {
        fprintf(stderr, "  %s: buffer sizes differ\n", label);
        return 0;
    }
    size_t i = otu_first_diff(pa, pb, n);
    if (i == (size_t)-1) return 1;
    otu_print_diff(a, i, label, "got vs", pa[i], pb[i]);
    return 0;
}

/* n bytes at `dev` (memory of the device of stream `s`) equal `host`;
 * copies them through `s` and waits. Else prints the first difference:
 * through `f` (a host frame whose buffer `host` is) when not NULL. */
static inline int otu_device_equal(pf_stream *s, const void *dev, const void *host, size_t n,
                                   const pf_frame *f, const char *label)
{
    uint8_t *got = malloc(n ? n : 1);
    if (!got) {
        CHECK(!"host memory");
        return 0;
    }
    CHECK_OK(pf_memcpy_async(s, got, dev, n));
    CHECK_OK(pf_stream_synchronize(s));
    size_t i = otu_first_diff(got, host, n);
    if (i != (size_t)-1) {
        int want = ((const uint8_t *)host)[i];
        if (f) otu_print_diff(f, i, label, "device vs reference", got[i], want);
        else
            fprintf(stderr, "  %s: byte %zu of %zu: device %d, reference %d\n", label, i, n,
                    got[i], want);
    }
    free(got);
    return i == (size_t)-1;
}

/* The whole buffer of device frame `dev` equals that of host frame `host`
 * (same layout); synchronizes `s`. */
static inline int otu_same_as_host(pf_stream *s, const pf_frame *dev, const pf_frame *host,
                                   const char *label)
{
    return otu_device_equal(s, pf_buffer_data(dev->buf[0]), pf_buffer_data(host->buf[0]),
                            pf_buffer_size(host->buf[0]), host, label);
}

/* CUDA graphs -------------------------------------------------------------------------- */

/* A frame-to-frame op with its other arguments fixed (pf_ops_convert with
 * default colour parameters, pf_ops_resize with one interpolation). */
typedef pf_status (*otu_frame_op)(pf_ops *ops, const pf_frame *src, pf_frame *dst);

typedef struct otu_graph_work {
    otu_frame_op op;
    pf_ops *ops;
    const pf_frame *src;
    pf_frame *dst;
} otu_graph_work;

static inline pf_status otu_graph_fn(void *user, pf_stream *s)
{
    const otu_graph_work *w = (const otu_graph_work *)user;
    (void)s;
    return w->op(w->ops, w->src, w->dst);
}

/* `op` on the CUDA context `cuda` (stream s) between uploads (memory from
 * `alloc`) of host frames hs and hd, through a graph cache under `key`:
 * captured in round 0, replayed in round 1 after new random bytes went to hs
 * and to its upload's addresses. After each round the upload of hd must
 * equal `op` on the reference context from hs into hd; the cache must count
 * one capture and one replay. */
static inline void otu_check_graph_replay(pf_ops *ref, pf_ops *cuda, pf_stream *s,
                                          pf_allocator *alloc, otu_frame_op op, const char *key,
                                          pf_frame *hs, pf_frame *hd)
{
    pf_graph_cache *gc = NULL;
    CHECK_OK(pf_graph_cache_create(NULL, &gc));
    pf_frame ds = {0}, dd = {0};
    CHECK_OK(otu_upload_frame(hs, alloc, s, &ds));
    CHECK_OK(otu_upload_frame(hd, alloc, s, &dd));
    CHECK(ds.data[0] && dd.data[0]);
    otu_graph_work w = {op, cuda, &ds, &dd};
    for (int round = 0; gc && ds.data[0] && dd.data[0] && round < 2; round++) {
        if (round == 1) {
            pf_test_fill_random(pf_buffer_data(hs->buf[0]), pf_buffer_size(hs->buf[0]));
            CHECK_OK(pf_memcpy_async(s, pf_buffer_data(ds.buf[0]), pf_buffer_data(hs->buf[0]),
                                     pf_buffer_size(hs->buf[0])));
        }
        CHECK_OK(pf_graph_cache_run(gc, s, key, strlen(key) + 1, otu_graph_fn, &w));
        CHECK_OK(op(ref, hs, hd));
        CHECK(otu_same_as_host(s, &dd, hd, round ? "replay" : "capture"));
    }
    if (gc && ds.data[0] && dd.data[0]) {
        pf_graph_cache_stats gs = pf_test_graph_cache_stats(gc);
        CHECK_EQ_INT(gs.captures, 1);
        CHECK_EQ_INT(gs.replays, 1);
    }
    pf_stream_synchronize(s);
    pf_frame_unref(&ds);
    pf_frame_unref(&dd);
    pf_graph_cache_destroy(&gc);
}

#endif
