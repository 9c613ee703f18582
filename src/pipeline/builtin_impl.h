/* Private: what the built-in stage types (pipeline.h, "Built-in stages")
 * share: the parameter reader with its error messages, the per-thread pf_ops
 * contexts, output allocation, and the type table entries each file defines.
 *
 * A type is a constructor that reads its parameters through bi_args and
 * fills the desc; its state starts with a bi_stage so the shared helpers
 * (messages, ops contexts, allocators) work on any of them. */
#ifndef PF_PIPELINE_BUILTIN_IMPL_H
#define PF_PIPELINE_BUILTIN_IMPL_H

#include <stdbool.h>

#include "../core/sys.h"
#include "pixflow/ops.h"
#include "pixflow/pipeline.h"

/* Worker threads a built-in keeps a pf_ops context for (thread index). */
#define BI_MAX_THREADS 64
/* Keys one type may ask for (for the "known keys" list of messages). */
#define BI_MAX_KEYS 24

/* Parameter reader ------------------------------------------------------------------
 *
 * Every getter looks the key up (the last occurrence wins is not allowed:
 * duplicates are refused by bi_args_init), marks it used, parses and range
 * checks it; bi_args_finish then refuses keys no getter asked for. Errors
 * are PF_ERR_INVALID with "[FILE:LINE: ]stage 'NAME' (TYPE): ..." naming the
 * key and the value. */
typedef struct bi_args {
    const pf_stage_config *cfg;
    const char *type;
    bool *used;                      /* per param */
    const char *known[BI_MAX_KEYS];  /* keys asked for, in order */
    int num_known;
} bi_args;

pf_status bi_args_init(bi_args *a, const char *type, const pf_stage_config *cfg);
/* Refuses unused keys; frees the reader (also call on error paths: it is
 * safe after init whatever happened). */
pf_status bi_args_finish(bi_args *a);
void bi_args_free(bi_args *a);

/* Error about key `key` (NULL: the stage as a whole). printf-style. */
pf_status bi_error(const bi_args *a, const char *key, const char *fmt, ...) PF_PRINTF(3, 4);

/* The value of `key`, or NULL when absent (marks it used). */
const char *bi_str(bi_args *a, const char *key);
bool bi_has(const bi_args *a, const char *key);
pf_status bi_int(bi_args *a, const char *key, int64_t def, int64_t lo, int64_t hi, int64_t *out);
pf_status bi_int_req(bi_args *a, const char *key, int64_t lo, int64_t hi, int64_t *out);
/* lo/hi inclusive unless the *_open flag says exclusive. */
pf_status bi_num(bi_args *a, const char *key, double def, double lo, bool lo_open, double hi,
                 bool hi_open, double *out);
pf_status bi_bool(bi_args *a, const char *key, bool def, bool *out);
/* names[] NULL-terminated; *out = index. */
pf_status bi_enum(bi_args *a, const char *key, const char *const *names, int def, int *out);
/* Exactly n numbers (or 1..max when n < 0: *count receives how many). */
pf_status bi_num_list(bi_args *a, const char *key, double *vals, int n, int max, int *count);
pf_status bi_pixfmt(bi_args *a, const char *key, pf_pixfmt def, bool required, pf_pixfmt *out);
pf_status bi_yuv(bi_args *a, pf_yuv_matrix *matrix, pf_yuv_range *range);

/* Value parsing shared with the YAML loader (no messages; false = bad). */
bool pf_parse_i64(const char *s, int64_t *out);
bool pf_parse_f64(const char *s, double *out);
bool pf_parse_bool(const char *s, bool *out);

/* Stage state shared by every built-in ------------------------------------------------- */

typedef struct bi_stage {
    char *name;                 /* copied */
    const char *type;           /* static */
    pf_device *device;          /* NULL = CPU */
    bool cuda;                  /* runs on a CUDA device */
    pf_mem_domain domain;       /* what it accepts and produces */
    pf_mutex mu;                /* guards the lazily made members below */
    pf_ops *ops[BI_MAX_THREADS];
    pf_allocator *own_alloc;    /* when the runtime offers no stage allocator */
    void (*free_extra)(struct bi_stage *s); /* type-specific cleanup, may be NULL */
} bi_stage;

/* Initialises the common part and the desc fields every built-in shares
 * (name, device, domains, user, stop, destroy). */
pf_status bi_stage_init(bi_stage *s, const bi_args *a, pf_stage_desc *d);
/* A zeroed state of `size` bytes (starting with a bi_stage) initialised by
 * bi_stage_init; NULL with *st set when that fails (nothing left to free). */
void *bi_stage_new(size_t size, const bi_args *a, pf_stage_desc *d, pf_status *st);
/* End of a constructor: on error destroys the state `s` and clears d->user.
 * Returns st. */
pf_status bi_create_end(void *s, pf_stage_desc *d, pf_status st);
/* The pf_ops context of the calling worker (made on first use on the
 * stage's stream). */
pf_status bi_ops(bi_stage *s, pf_stage_ctx *ctx, pf_ops **out);
/* Allocator for outputs in the stage's domain. */
pf_status bi_alloc(bi_stage *s, pf_stage_ctx *ctx, pf_allocator **out);
/* An output frame / tensor from that allocator, ordered on the stage's stream. */
pf_status bi_frame_alloc(bi_stage *s, pf_stage_ctx *ctx, pf_frame *f, pf_pixfmt fmt, int w, int h);
pf_status bi_tensor_alloc(bi_stage *s, pf_stage_ctx *ctx, pf_tensor *t, pf_dtype dt, int ndim,
                          const int64_t *shape, pf_layout layout);
/* Error of a process call: the detail only (the runtime adds the stage and
 * the item's source and seq). */
pf_status bi_item_error(const bi_stage *s, const pf_item *it, pf_status st, const char *fmt, ...)
    PF_PRINTF(4, 5);
/* bi_item_error with the detail of the call that failed (pf_last_error),
 * prefixed by "WHAT: " unless what is NULL. PF_OK when st is PF_OK. */
pf_status bi_item_failed(const bi_stage *s, const pf_item *it, pf_status st, const char *what);
/* Releases items[0..n). */
void bi_unref_items(pf_item *items, int n);
/* pf_stage_emit, then zeroes *it (the runtime owns it from the call on). */
pf_status bi_emit(pf_stage_ctx *ctx, pf_item *it);
/* Pass-through: emits items[0..n) unchanged, in order (after a failed emit
 * the rest are released); returns the first error. */
pf_status bi_emit_all(pf_stage_ctx *ctx, pf_item *items, int n);
/* Emits `out` (taking it) after copying the metadata of `in` into it. */
pf_status bi_emit_like(pf_stage_ctx *ctx, const pf_item *in, pf_item *out);

/* desc.start, desc.stop and desc.destroy of every built-in (a type with its
 * own start calls bi_stage_start from it). */
pf_status bi_stage_start(void *user, pf_stage_ctx *ctx);
void bi_stage_stop(void *user);
/* bi_stage_stop's work (releases the ops contexts). */
void bi_stage_stop_common(bi_stage *s);
void bi_stage_destroy(void *user);

/* Constructors (one per type) ------------------------------------------------------------ */

typedef pf_status (*bi_ctor)(bi_args *a, pf_stage_desc *d);

pf_status bi_synthetic_create(bi_args *a, pf_stage_desc *d);
pf_status bi_convert_create(bi_args *a, pf_stage_desc *d);
pf_status bi_resize_create(bi_args *a, pf_stage_desc *d);
pf_status bi_preprocess_create(bi_args *a, pf_stage_desc *d);
pf_status bi_reproject_create(bi_args *a, pf_stage_desc *d);
pf_status bi_mask_threshold_create(bi_args *a, pf_stage_desc *d);
pf_status bi_composite_create(bi_args *a, pf_stage_desc *d);
pf_status bi_infer_create(bi_args *a, pf_stage_desc *d);        /* builtin_nn.c */
pf_status bi_mask_post_create(bi_args *a, pf_stage_desc *d);    /* builtin_nn.c */
pf_status bi_sink_null_create(bi_args *a, pf_stage_desc *d);
pf_status bi_sink_checksum_create(bi_args *a, pf_stage_desc *d);
pf_status bi_sleep_create(bi_args *a, pf_stage_desc *d);
pf_status bi_fail_create(bi_args *a, pf_stage_desc *d);
pf_status bi_mux_create(bi_args *a, pf_stage_desc *d);          /* mux.c */
pf_status bi_demux_create(bi_args *a, pf_stage_desc *d);        /* demux.c */
pf_status bi_ipc_source_create(bi_args *a, pf_stage_desc *d);   /* builtin_ipc.c */
pf_status bi_ipc_sink_create(bi_args *a, pf_stage_desc *d);     /* builtin_ipc.c */

/* FNV-1a 64 (sink.checksum; exposed for tests through the documented rule). */
uint64_t bi_fnv1a(uint64_t h, const void *data, size_t n);
#define BI_FNV_OFFSET 0xcbf29ce484222325ull

#endif
