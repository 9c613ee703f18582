/* Tracer: writing the Chrome trace-event JSON file.
 *
 * Design:
 * - Called under the tracer's flush lock. It first resolves pending GPU
 *   spans (waiting for their events), then links spans into flows, then
 *   writes every published slot, in recording order (viewers sort by ts).
 * - Flows: spans (CPU or resolved GPU) with source >= 0 and seq >= 0 are
 *   grouped by (source, seq) and each group is ordered by (start, end);
 *   each group of two or more becomes one flow whose id is derived from
 *   (source, seq). The first span gets
 *   "flow_out", the last "flow_in", those between both: Perfetto's flow v2
 *   form (bind_id on the slice itself), which binds to exactly that slice,
 *   unlike v1 "s"/"f" events that bind by timestamp to an enclosing or next
 *   slice. chrome://tracing reads the same fields.
 * - Output goes through a 64 KiB buffer with hand-written number
 *   formatting (a trace has millions of numbers; printf would dominate) to a
 *   pf_output (a temporary beside path, renamed over it when complete): readers
 *   see the previous complete trace or the new one, never half a file.
 * - Strings are escaped for JSON and validated as UTF-8 (invalid bytes
 *   become U+FFFD); DEL is escaped too because Perfetto's tokenizer rejects
 *   raw control characters. No event holds an array: Perfetto's tokenizer
 *   refuses arrays inside event dictionaries.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "pixflow/io.h"
#include "prof/trace_impl.h"

#define CPU_PID 1
#define GPU_PID 2
#define TID_BASE 100 /* track id -> tid; keeps tids clear of the pids (counters use tid = pid) */

enum { FLOW_OUT = 1, FLOW_IN = 2 };

typedef struct out {
    FILE *f;
    size_t len;
    bool err;
    char buf[1 << 16];
} out;

static void out_flush(out *o)
{
    if (o->len && fwrite(o->buf, 1, o->len, o->f) != o->len) o->err = true;
    o->len = 0;
}

/* Makes room for n bytes (n <= sizeof buf). */
static inline char *out_room(out *o, size_t n)
{
    if (o->len + n > sizeof o->buf) out_flush(o);
    return o->buf + o->len;
}

static void out_mem(out *o, const char *s, size_t n)
{
    if (n > sizeof o->buf / 2) {
        out_flush(o);
        if (fwrite(s, 1, n, o->f) != n) o->err = true;
        return;
    }
    memcpy(out_room(o, n), s, n);
    o->len += n;
}

#define OUT_LIT(o, lit) out_mem((o), "" lit, sizeof(lit) - 1)

static inline void out_char(out *o, char c)
{
    *out_room(o, 1) = c;
    o->len++;
}

static void out_u64(out *o, uint64_t v)
{
    /* Two digits per division: numbers are most of a trace's bytes. */
    static const char pairs[] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    char tmp[24];
    int n = 24;
    while (v >= 100) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        tmp[--n] = pairs[2 * r + 1];
        tmp[--n] = pairs[2 * r];
    }
    if (v >= 10) {
        tmp[--n] = pairs[2 * v + 1];
        tmp[--n] = pairs[2 * v];
    } else {
        tmp[--n] = (char)('0' + v);
    }
    size_t len = (size_t)(24 - n);
    memcpy(out_room(o, len), tmp + n, len);
    o->len += len;
}

static void out_hex(out *o, uint64_t v)
{
    static const char hex[] = "0123456789abcdef";
    char tmp[16];
    int n = 0;
    do {
        tmp[n++] = hex[v & 15];
        v >>= 4;
    } while (v);
    char *d = out_room(o, (size_t)n);
    for (int i = 0; i < n; i++) d[i] = tmp[n - 1 - i];
    o->len += (size_t)n;
}

static void out_i64(out *o, int64_t v)
{
    if (v < 0) {
        out_char(o, '-');
        out_u64(o, (uint64_t)0 - (uint64_t)v);
    } else {
        out_u64(o, (uint64_t)v);
    }
}

/* ns as microseconds with exactly three decimals: 12345 -> "12.345". */
static void out_us(out *o, int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    if (ns < 0) out_char(o, '-');
    out_u64(o, a / 1000);
    unsigned f = (unsigned)(a % 1000);
    char *d = out_room(o, 4);
    d[0] = '.';
    d[1] = (char)('0' + f / 100);
    d[2] = (char)('0' + f / 10 % 10);
    d[3] = (char)('0' + f % 10);
    o->len += 4;
}

/* The shortest of %.15g / %.17g that reads back as the same double. Only
 * finite values reach here (counters reject the others). */
static void out_double(out *o, double v)
{
    char tmp[40];
    int n = snprintf(tmp, sizeof tmp, "%.15g", v);
    if (strtod(tmp, NULL) != v) n = snprintf(tmp, sizeof tmp, "%.17g", v);
    out_mem(o, tmp, (size_t)n);
}

/* Length of a valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static int utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return (s[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        if (s[1] < lo || s[1] > hi) return 0;
        return (s[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        if (s[1] < lo || s[1] > hi) return 0;
        return (s[2] & 0xC0) == 0x80 && (s[3] & 0xC0) == 0x80 ? 4 : 0;
    }
    return 0;
}

/* A JSON string with its quotes. (The checks above stop at a NUL, which is
 * never a continuation byte, so they never read past the terminator.) */
static void out_str(out *o, const char *str)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    out_char(o, '"');
    while (*s) {
        unsigned c = *s;
        if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
            out_char(o, (char)c);
            s++;
        } else if (c == '"' || c == '\\') {
            char *d = out_room(o, 2);
            d[0] = '\\';
            d[1] = (char)c;
            o->len += 2;
            s++;
        } else if (c < 0x80) { /* control characters and DEL */
            char *d = out_room(o, 6);
            memcpy(d, "\\u00", 4);
            d[4] = hex[c >> 4];
            d[5] = hex[c & 15];
            o->len += 6;
            s++;
        } else {
            int n = utf8_len(s);
            if (n) {
                out_mem(o, (const char *)s, (size_t)n);
                s += n;
            } else {
                OUT_LIT(o, "\\ufffd");
                s++;
            }
        }
    }
    out_char(o, '"');
}

/* Flows ------------------------------------------------------------------------- */

typedef struct flow_key {
    int64_t seq;
    int32_t source;
} flow_key;

/* A span of a flow, for ordering the members of one group. */
typedef struct flow_member {
    int64_t t0, t1;
    uint32_t idx;
} flow_member;

static int member_cmp(const void *pa, const void *pb)
{
    const flow_member *a = pa, *b = pb;
    if (a->t0 != b->t0) return a->t0 < b->t0 ? -1 : 1;
    if (a->t1 != b->t1) return a->t1 < b->t1 ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Exact for source < 2^22 and seq < 2^40 (every practical frame); beyond,
 * a 64-bit mix with the top bit set, so it cannot meet an exact id. */
static uint64_t flow_id(int32_t source, int64_t seq)
{
    if (source < (1 << 22) && seq < ((int64_t)1 << 40))
        return ((uint64_t)source << 40 | (uint64_t)seq) + 1;
    uint64_t z = (uint64_t)source * 0x9E3779B97F4A7C15ull ^ (uint64_t)seq;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (z ^ (z >> 31)) | (1ull << 63);
}

static uint64_t key_hash(int32_t source, int64_t seq)
{
    uint64_t z = (uint64_t)seq * 0x9E3779B97F4A7C15ull + (uint64_t)(uint32_t)source;
    z = (z ^ (z >> 31)) * 0xBF58476D1CE4E5B9ull;
    return z ^ (z >> 29);
}

static bool is_span(const pf_trace_slot *s)
{
    return s->kind == PF_EV_SPAN || (s->kind == PF_EV_GPU_SPAN && s->gpu_state == PF_GPU_RESOLVED);
}

static bool in_flow(const pf_trace_slot *s) { return is_span(s) && s->source >= 0 && s->u.seq >= 0; }

/* roles[i] gets FLOW_OUT/FLOW_IN bits for slot i; returns the flow count or
 * -1 when out of memory. Groups spans by (source, seq) in a hash table
 * (linear: a sort of a million keys cost most of a flush), then orders each
 * group by (start, end, slot) - groups are as small as a pipeline is long. */
static int64_t link_flows(pf_tracer *t, const uint8_t *ready, uint64_t n, uint8_t *roles)
{
    uint64_t m = 0;
    for (uint64_t i = 0; i < n; i++)
        if (ready[i] && in_flow(&t->slots[i])) m++;
    if (m < 2) return 0;
    uint64_t cap = 16;
    while (cap < 2 * m) cap <<= 1;
    /* table: 1 + the first slot of each group (0 = empty), with the group's
     * key beside it (no cache miss into the slots while probing); next: the
     * next slot of the same group, in slot order; last: the group's tail. */
    uint32_t *table = calloc(cap, sizeof *table);
    flow_key *keys = malloc(cap * sizeof *keys);
    uint32_t *next = malloc(n * sizeof *next);
    uint32_t *last = malloc(cap * sizeof *last);
    uint32_t *count = calloc(cap, sizeof *count);
    size_t mcap = 64;
    flow_member *mem = malloc(mcap * sizeof *mem);
    int64_t flows = -1;
    if (!table || !keys || !next || !last || !count || !mem) goto done;
    for (uint64_t i = 0; i < n; i++) {
        const pf_trace_slot *s = &t->slots[i];
        if (!ready[i] || !in_flow(s)) continue;
        uint64_t h = key_hash(s->source, s->u.seq) & (cap - 1);
        for (;;) {
            if (!table[h]) {
                table[h] = (uint32_t)i + 1;
                keys[h] = (flow_key){s->u.seq, s->source};
                last[h] = (uint32_t)i;
                count[h] = 1;
                break;
            }
            if (keys[h].source == s->source && keys[h].seq == s->u.seq) {
                next[last[h]] = (uint32_t)i;
                last[h] = (uint32_t)i;
                count[h]++;
                break;
            }
            h = (h + 1) & (cap - 1);
        }
    }
    flows = 0;
    for (uint64_t h = 0; h < cap; h++) {
        uint32_t c = count[h];
        if (c < 2) continue;
        if (c > mcap) {
            flow_member *nm = realloc(mem, c * sizeof *nm);
            if (!nm) {
                flows = -1;
                goto done;
            }
            mem = nm;
            mcap = c;
        }
        uint32_t i = table[h] - 1;
        for (uint32_t k = 0; k < c; k++) {
            mem[k] = (flow_member){t->slots[i].t0, t->slots[i].t1, i};
            i = next[i];
        }
        /* Usually recorded in time order already: insertion sort is linear
         * then; long groups go to qsort. */
        if (c <= 32) {
            for (uint32_t a = 1; a < c; a++) {
                flow_member x = mem[a];
                uint32_t b = a;
                while (b > 0 && member_cmp(&mem[b - 1], &x) > 0) {
                    mem[b] = mem[b - 1];
                    b--;
                }
                mem[b] = x;
            }
        } else {
            qsort(mem, c, sizeof *mem, member_cmp);
        }
        for (uint32_t k = 0; k < c; k++)
            roles[mem[k].idx] = (uint8_t)((k > 0 ? FLOW_IN : 0) | (k + 1 < c ? FLOW_OUT : 0));
        flows++;
    }
done:
    free(table);
    free(keys);
    free(next);
    free(last);
    free(count);
    free(mem);
    return flows;
}

/* Events ------------------------------------------------------------------------ */

static void out_sep(out *o, bool *first)
{
    if (*first) *first = false;
    else OUT_LIT(o, ",\n");
}

static void out_meta(out *o, bool *first, const char *what, int pid, int tid, const char *name,
                     int sort_index)
{
    out_sep(o, first);
    OUT_LIT(o, "{\"ph\":\"M\",\"name\":\"");
    out_mem(o, what, strlen(what));
    OUT_LIT(o, "_name\",\"pid\":");
    out_i64(o, pid);
    if (tid >= 0) {
        OUT_LIT(o, ",\"tid\":");
        out_i64(o, tid);
    }
    OUT_LIT(o, ",\"args\":{\"name\":");
    out_str(o, name);
    OUT_LIT(o, "}},\n{\"ph\":\"M\",\"name\":\"");
    out_mem(o, what, strlen(what));
    OUT_LIT(o, "_sort_index\",\"pid\":");
    out_i64(o, pid);
    if (tid >= 0) {
        OUT_LIT(o, ",\"tid\":");
        out_i64(o, tid);
    }
    OUT_LIT(o, ",\"args\":{\"sort_index\":");
    out_i64(o, sort_index);
    OUT_LIT(o, "}}");
}

static void out_event(pf_tracer *t, out *o, const pf_trace_slot *s, uint8_t role)
{
    switch (s->kind) {
    case PF_EV_SPAN:
    case PF_EV_GPU_SPAN: {
        bool gpu_track = t->tracks[s->track].gpu;
        OUT_LIT(o, "{\"ph\":\"X\",\"ts\":");
        out_us(o, s->t0 - t->origin_ns);
        OUT_LIT(o, ",\"dur\":");
        out_us(o, s->t1 - s->t0);
        OUT_LIT(o, ",\"pid\":");
        out_i64(o, gpu_track ? GPU_PID : CPU_PID);
        OUT_LIT(o, ",\"tid\":");
        out_i64(o, TID_BASE + s->track);
        OUT_LIT(o, ",\"name\":");
        out_str(o, s->name);
        if (s->source >= 0 || s->u.seq >= 0) {
            OUT_LIT(o, ",\"args\":{");
            if (s->source >= 0) {
                OUT_LIT(o, "\"source\":");
                out_i64(o, s->source);
                if (s->u.seq >= 0) out_char(o, ',');
            }
            if (s->u.seq >= 0) {
                OUT_LIT(o, "\"seq\":");
                out_i64(o, s->u.seq);
            }
            out_char(o, '}');
        }
        if (role) {
            OUT_LIT(o, ",\"bind_id\":\"0x");
            out_hex(o, flow_id(s->source, s->u.seq));
            out_char(o, '"');
            if (role & FLOW_IN) OUT_LIT(o, ",\"flow_in\":true");
            if (role & FLOW_OUT) OUT_LIT(o, ",\"flow_out\":true");
        }
        out_char(o, '}');
        break;
    }
    case PF_EV_COUNTER:
        OUT_LIT(o, "{\"ph\":\"C\",\"ts\":");
        out_us(o, s->t0 - t->origin_ns);
        OUT_LIT(o, ",\"pid\":");
        out_i64(o, s->track);
        OUT_LIT(o, ",\"tid\":");
        out_i64(o, s->track);
        OUT_LIT(o, ",\"name\":");
        out_str(o, s->name);
        OUT_LIT(o, ",\"args\":{\"value\":");
        out_double(o, s->u.value);
        OUT_LIT(o, "}}");
        break;
    case PF_EV_INSTANT:
        OUT_LIT(o, "{\"ph\":\"i\",\"ts\":");
        out_us(o, s->t0 - t->origin_ns);
        OUT_LIT(o, ",\"pid\":");
        out_i64(o, t->tracks[s->track].gpu ? GPU_PID : CPU_PID);
        OUT_LIT(o, ",\"tid\":");
        out_i64(o, TID_BASE + s->track);
        OUT_LIT(o, ",\"s\":\"t\",\"name\":");
        out_str(o, s->name);
        out_char(o, '}');
        break;
    default:
        break;
    }
}

static void out_meta_u64(out *o, const char *key, uint64_t v)
{
    OUT_LIT(o, ",\n  ");
    out_str(o, key);
    out_char(o, ':');
    out_u64(o, v);
}

bool pf_trace_writes_in_place(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && !S_ISREG(st.st_mode);
}

pf_status pf_trace_write(pf_tracer *t)
{
    uint64_t n = atomic_load_explicit(&t->next, memory_order_relaxed);
    if (n > t->max_events) n = t->max_events;
    /* One acquire load per slot, kept: the flows and the output must agree
     * on which slots are in, even if more become ready meanwhile. */
    uint8_t *ready = malloc(n ? n : 1);
    uint8_t *roles = calloc(n ? n : 1, 1);
    out *o = malloc(sizeof *o);
    if (!ready || !roles || !o) {
        free(ready);
        free(roles);
        free(o);
        return pf_set_error(PF_ERR_NOMEM, "pf_tracer_flush: out of host memory for %llu events",
                            (unsigned long long)n);
    }
    uint64_t incomplete = 0, failed = 0;
    for (uint64_t i = 0; i < n; i++) {
        pf_trace_slot *s = &t->slots[i];
        ready[i] = (uint8_t)atomic_load_explicit(&s->ready, memory_order_acquire);
        if (!ready[i]) {
            incomplete++;
            continue;
        }
        if (s->kind == PF_EV_GPU_SPAN && s->gpu_state == PF_GPU_PENDING) {
            int64_t a = 0, b = 0;
            if (pf_trace_resolve_gpu(t, s->ev0, s->ev1, s->calib, true, &a, &b) == PF_OK) {
                s->t0 = a;
                s->t1 = b;
                s->gpu_state = PF_GPU_RESOLVED;
            } else {
                s->gpu_state = PF_GPU_FAILED;
                atomic_fetch_add_explicit(&t->gpu_failed, 1, memory_order_relaxed);
                if (!failed++)
                    PF_LOGW("tracer: GPU span '%s' left out: %s (first of this flush)", s->name,
                            pf_last_error());
            }
            s->ev0 = s->ev1 = NULL;
            atomic_fetch_sub_explicit(&t->gpu_pending, 1, memory_order_relaxed);
        }
    }
    int64_t flows = link_flows(t, ready, n, roles);
    if (flows < 0) {
        free(ready);
        free(roles);
        free(o);
        return pf_set_error(PF_ERR_NOMEM, "pf_tracer_flush: out of host memory linking flows");
    }

    /* pf_output: a temporary renamed over the path when complete; a path
     * that is not a plain file (/dev/stdout, a FIFO, a device) in place. */
    pf_output *dst = NULL;
    pf_status ost = pf_output_open(t->path, 0, &dst);
    o->f = dst ? pf_output_file(dst) : NULL;
    o->len = 0;
    o->err = false;
    if (ost != PF_OK) {
        free(ready);
        free(roles);
        free(o);
        return pf_error_prefix(PF_ERR_IO, "pf_tracer_flush");
    }

    int ntracks = atomic_load_explicit(&t->track_count, memory_order_acquire);
    bool any_gpu = t->gpu_is_cuda;
    for (int i = 0; i < ntracks; i++) any_gpu |= t->tracks[i].gpu;

    bool first = true;
    OUT_LIT(o, "{\"traceEvents\":[\n");
    out_meta(o, &first, "process", CPU_PID, -1, t->process_name, CPU_PID);
    if (any_gpu) {
        char gname[300];
        snprintf(gname, sizeof gname, "%s GPU%s%s%s", t->process_name, t->gpu ? " (" : "",
                 t->gpu ? pf_device_spec(t->gpu) : "", t->gpu ? ")" : "");
        out_meta(o, &first, "process", GPU_PID, -1, gname, GPU_PID);
    }
    for (int i = 0; i < ntracks; i++)
        out_meta(o, &first, "thread", t->tracks[i].gpu ? GPU_PID : CPU_PID, TID_BASE + i,
                 t->tracks[i].name, i);

    uint64_t written = 0;
    for (uint64_t i = 0; i < n; i++) {
        const pf_trace_slot *s = &t->slots[i];
        if (!ready[i] || (s->kind == PF_EV_GPU_SPAN && s->gpu_state != PF_GPU_RESOLVED)) continue;
        out_sep(o, &first);
        out_event(t, o, s, roles[i]);
        written++;
    }

    char producer[128];
    snprintf(producer, sizeof producer, "pixflow %s", pf_version_string());
    OUT_LIT(o, "\n],\n\"displayTimeUnit\":\"ms\",\n\"metadata\":{\n  \"producer\":");
    out_str(o, producer);
    OUT_LIT(o, ",\n  \"clock\":\"pf_time_ns (CLOCK_MONOTONIC), ts in us from ts_origin_ns\"");
    OUT_LIT(o, ",\n  \"ts_origin_ns\":");
    out_i64(o, t->origin_ns);
    out_meta_u64(o, "max_events", t->max_events);
    out_meta_u64(o, "recorded_events", n);
    out_meta_u64(o, "written_events", written);
    out_meta_u64(o, "dropped_events", atomic_load(&t->dropped));
    out_meta_u64(o, "rejected_events", atomic_load(&t->rejected));
    out_meta_u64(o, "incomplete_events", incomplete);
    out_meta_u64(o, "gpu_spans_failed", atomic_load(&t->gpu_failed));
    out_meta_u64(o, "gpu_spans_pending", atomic_load(&t->gpu_pending));
    out_meta_u64(o, "flows", (uint64_t)flows);
    out_meta_u64(o, "tracks", (uint64_t)ntracks);
    OUT_LIT(o, ",\n  \"gpu_device\":");
    if (t->gpu) out_str(o, pf_device_spec(t->gpu));
    else OUT_LIT(o, "null");
    if (t->gpu_is_cuda) {
        int nc = atomic_load_explicit(&t->calib_count, memory_order_acquire);
        int64_t worst = 0;
        for (int i = 0; i < nc; i++)
            if (t->calib[i].window_ns > worst) worst = t->calib[i].window_ns;
        out_meta_u64(o, "gpu_calibrations", (uint64_t)nc);
        out_meta_u64(o, "gpu_calibration_window_ns", (uint64_t)worst);
    }
    OUT_LIT(o, "\n}}\n");
    out_flush(o);

    bool err = o->err || ferror(o->f);
    free(ready);
    free(roles);
    free(o);
    if (err) {
        pf_output_abort(&dst);
        return pf_set_error(PF_ERR_IO, "pf_tracer_flush: writing '%s' failed: %s", t->path,
                            strerror(EIO));
    }
    pf_status cst = pf_output_commit(&dst);
    return cst == PF_OK ? PF_OK : pf_error_prefix(PF_ERR_IO, "pf_tracer_flush");
}
