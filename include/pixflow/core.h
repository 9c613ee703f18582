/* pixflow/core.h - status codes, error messages, logging, clocks, a JSON writer.
 *
 * Every pixflow function that can fail returns a pf_status. Zero is success,
 * negative values are errors, positive values are flow signals (try again,
 * end of stream, timed out) that callers handle as part of normal control flow.
 * On an error the library also leaves a human-readable message naming the
 * file, field or value at fault in a thread-local slot read by pf_last_error():
 *
 *   pf_status st = pf_frame_alloc(&f, PF_PIXFMT_NV12, w, h, NULL, NULL);
 *   if (st < 0) {
 *       fprintf(stderr, "pixflow: %s: %s\n", pf_status_str(st), pf_last_error());
 *       return 1;
 *   }
 *
 * Logging goes to stderr by default at PF_LOG_WARN; the level can be set with
 * pf_log_set_level() or the environment variable PIXFLOW_LOG
 * (error|warn|info|debug|trace), and all output can be redirected with
 * pf_log_set_callback().
 */
#ifndef PIXFLOW_CORE_H
#define PIXFLOW_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>

#include "export.h"
#include "version.h"

PF_BEGIN_DECLS

typedef enum pf_status {
    PF_OK = 0,
    /* flow signals (> 0): not failures */
    PF_AGAIN = 1,       /* would block: retry later (non-blocking calls) */
    PF_EOF = 2,         /* end of stream: a closed queue is drained */
    PF_TIMEOUT = 3,     /* a timed wait expired before the condition held */
    /* errors (< 0) */
    PF_ERR_INVALID = -1,     /* bad argument or value; the message names it */
    PF_ERR_NOMEM = -2,       /* out of host or device memory, or over a pool cap */
    PF_ERR_UNSUPPORTED = -3, /* valid request this build or device cannot do */
    PF_ERR_NO_DEVICE = -4,   /* the requested device does not exist or is unusable */
    PF_ERR_DEVICE = -5,      /* a device runtime call failed (CUDA error etc.) */
    PF_ERR_IO = -6,          /* reading or writing a file or pipe failed */
    PF_ERR_FORMAT = -7,      /* malformed input data (file, model, config) */
    PF_ERR_CLOSED = -8,      /* the queue, pool or object was closed */
    PF_ERR_BUSY = -9,        /* resource still in use */
    PF_ERR_CANCELLED = -10,  /* the operation was cancelled */
    PF_ERR_INTERNAL = -11    /* a broken invariant inside pixflow: a bug */
} pf_status;

/* Short fixed name of a status, e.g. "invalid argument". Never NULL. */
PF_API const char *pf_status_str(pf_status status);

/* Detail of the last error set on the calling thread, "" when none.
 * The string stays valid until the next pixflow call on this thread. */
PF_API const char *pf_last_error(void);

/* Clears the calling thread's last error message. */
PF_API void pf_clear_error(void);

/* Version of the library actually loaded, "MAJOR.MINOR.PATCH". */
PF_API const char *pf_version_string(void);
PF_API int pf_version_code(void);

/* How this copy of the library was built (static strings, never NULL). */
typedef struct pf_build_info {
    const char *version;        /* "0.1.0" */
    const char *build_type;     /* "Release", "RelWithDebInfo", "Debug" */
    const char *c_compiler;     /* "GNU 12.2.0" */
    int cuda;                   /* 1 when the CUDA backend is compiled in */
    const char *cuda_compiler;  /* "NVIDIA 13.0.88", "" without CUDA */
    const char *cuda_arch;      /* CMake CUDA architectures, "" without CUDA */
    const char *sanitize;       /* sanitizers compiled in, "" for none */
} pf_build_info;

PF_API const pf_build_info *pf_get_build_info(void);

/* Logging ------------------------------------------------------------------ */

typedef enum pf_log_level {
    PF_LOG_QUIET = -1,
    PF_LOG_ERROR = 0,
    PF_LOG_WARN = 1,
    PF_LOG_INFO = 2,
    PF_LOG_DEBUG = 3,
    PF_LOG_TRACE = 4
} pf_log_level;

/* Receives each formatted message (no trailing newline). Called from whatever
 * thread logs; it must be thread-safe and must not call back into pixflow. */
typedef void (*pf_log_fn)(void *user, pf_log_level level, const char *msg);

/* Thread-safe. Messages above `level` are discarded. */
PF_API void pf_log_set_level(pf_log_level level);
PF_API pf_log_level pf_log_get_level(void);

/* Routes messages to `fn` (NULL restores the stderr logger). Thread-safe. */
PF_API void pf_log_set_callback(pf_log_fn fn, void *user);

/* Logs through the installed sink. Thread-safe. */
PF_API void pf_log(pf_log_level level, const char *fmt, ...) PF_PRINTF(2, 3);

PF_API const char *pf_log_level_name(pf_log_level level);

/* Parses "error", "warn", "info", "debug", "trace" or "quiet". */
PF_API pf_status pf_log_level_parse(const char *name, pf_log_level *out);

/* Clocks -------------------------------------------------------------------- */

/* Monotonic time in nanoseconds (CLOCK_MONOTONIC). */
PF_API int64_t pf_time_ns(void);

/* Number of online CPU cores (at least 1). */
PF_API int pf_cpu_count(void);

/* JSON writer ----------------------------------------------------------------
 *
 * One streaming JSON writer for everything pixflow writes as JSON (the CLI's
 * --json reports, trace files, queue entries):
 *
 *   pf_json_writer *w = NULL;
 *   pf_json_writer_params p = pf_json_writer_params_default();
 *   p.file = stdout;
 *   if (pf_json_writer_create(&p, &w) == PF_OK) {
 *       pf_json_writer_object_begin(w, NULL);
 *       pf_json_writer_double(w, "fps", 2010.5);
 *       pf_json_writer_object_end(w);
 *       pf_json_writer_finish(w);   // newline (pretty), flush; the status of it all
 *   }
 *   pf_json_writer_destroy(&w);
 *
 * Inside an object every value call takes its key; inside an array and for a
 * top-level value the key must be NULL. Strings are escaped per RFC 8259
 * (quote, backslash, control characters and DEL); bytes that are not valid
 * UTF-8 become \ufffd, so the output always parses. Non-finite doubles are
 * written as null. Value calls return nothing: the first failure (a write
 * error, out of memory, nesting deeper than PF_JSON_WRITER_MAX_DEPTH, an
 * end without its begin or of the other kind, a key inside an array or none
 * inside an object) is kept and reported by pf_json_writer_finish().
 * One writer per thread at a time (no locking). */

#define PF_JSON_WRITER_MAX_DEPTH 64

typedef struct pf_json_writer pf_json_writer;

typedef struct pf_json_writer_params {
    FILE *file;        /* the sink (not closed); NULL: memory (pf_json_writer_data) */
    bool compact;      /* no whitespace; default false: two-space indented lines */
    int double_digits; /* significant digits of doubles (%.Ng), 1..17; 0 (default):
                          the shortest text that reads back as the same double */
} pf_json_writer_params;

PF_API pf_json_writer_params pf_json_writer_params_default(void);
/* PF_ERR_INVALID (double_digits out of range), PF_ERR_NOMEM. */
PF_API pf_status pf_json_writer_create(const pf_json_writer_params *p, pf_json_writer **out);
/* Flushes what is buffered to the file (without the final newline), frees;
 * sets *w = NULL; accepts NULL. */
PF_API void pf_json_writer_destroy(pf_json_writer **w);

PF_API void pf_json_writer_object_begin(pf_json_writer *w, const char *key);
PF_API void pf_json_writer_object_end(pf_json_writer *w);
PF_API void pf_json_writer_array_begin(pf_json_writer *w, const char *key);
PF_API void pf_json_writer_array_end(pf_json_writer *w);
/* value NULL writes null. */
PF_API void pf_json_writer_string(pf_json_writer *w, const char *key, const char *value);
PF_API void pf_json_writer_int(pf_json_writer *w, const char *key, long long value);
PF_API void pf_json_writer_uint(pf_json_writer *w, const char *key, unsigned long long value);
PF_API void pf_json_writer_double(pf_json_writer *w, const char *key, double value);
PF_API void pf_json_writer_bool(pf_json_writer *w, const char *key, bool value);
PF_API void pf_json_writer_null(pf_json_writer *w, const char *key);

/* Ends the document: a newline (pretty writers only) and a flush of a file
 * sink. PF_OK, or the first failure: PF_ERR_IO (naming the errno),
 * PF_ERR_NOMEM, PF_ERR_INVALID (malformed nesting, see above). */
PF_API pf_status pf_json_writer_finish(pf_json_writer *w);

/* A memory writer's text so far (NUL-terminated, owned by the writer, valid
 * until its next call), its length in *len when len is not NULL; "" for a
 * file writer; NULL after an allocation failed. */
PF_API const char *pf_json_writer_data(const pf_json_writer *w, size_t *len);

/* Writes `s` as one JSON string literal, quotes included, to `f` (the same
 * escaping as the writer). */
PF_API void pf_json_write_string(FILE *f, const char *s);

PF_END_DECLS

#endif
