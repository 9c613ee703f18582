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
 * - Output goes through the library's JSON writer (core/json.h: buffered,
 *   integers without printf, strings escaped and validated as UTF-8) in its
 *   compact style, one event per line, to a pf_output (a temporary beside
 *   path, renamed over it when complete): readers see the previous complete
 *   trace or the new one, never half a file. No event holds an array:
 *   Perfetto's tokenizer refuses arrays inside event dictionaries.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/json.h"
#include "pixflow/io.h"
#include "prof/trace_impl.h"

#define CPU_PID 1
#define GPU_PID 2
#define TID_BASE 100 /* track id -> tid; keeps tids clear of the pids (counters use tid = pid) */

enum { FLOW_OUT = 1, FLOW_IN = 2 };

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

typedef pf_json_writer jw;

static void out_sep(jw *w, bool *first)
{
    if (*first) *first = false;
    else PF_JSON_TEXT(w, ",\n");
}

/* A metadata event up to its open "args" object: {"ph":"M","name":"WHATSUFFIX",...,"args":{ */
static void meta_begin(jw *w, const char *what, const char *suffix, int pid, int tid)
{
    char key[64];
    snprintf(key, sizeof key, "%s%s", what, suffix);
    pf_json_writer_object_begin(w, NULL);
    pf_json_writer_string(w, "ph", "M");
    pf_json_writer_string(w, "name", key);
    pf_json_writer_int(w, "pid", pid);
    if (tid >= 0) pf_json_writer_int(w, "tid", tid);
    pf_json_writer_object_begin(w, "args");
}

static void out_meta(jw *w, bool *first, const char *what, int pid, int tid, const char *name,
                     int sort_index)
{
    out_sep(w, first);
    meta_begin(w, what, "_name", pid, tid);
    pf_json_writer_string(w, "name", name);
    pf_json_writer_object_end(w);
    pf_json_writer_object_end(w);
    PF_JSON_TEXT(w, ",\n");
    meta_begin(w, what, "_sort_index", pid, tid);
    pf_json_writer_int(w, "sort_index", sort_index);
    pf_json_writer_object_end(w);
    pf_json_writer_object_end(w);
}

/* "0x" and v in lowercase hex without leading zeros. */
static const char *hex_id(char buf[20], uint64_t v)
{
    static const char hex[] = "0123456789abcdef";
    char tmp[16];
    int n = 0;
    do {
        tmp[n++] = hex[v & 15];
        v >>= 4;
    } while (v);
    buf[0] = '0';
    buf[1] = 'x';
    for (int i = 0; i < n; i++) buf[2 + i] = tmp[n - 1 - i];
    buf[2 + n] = '\0';
    return buf;
}

static void out_event(pf_tracer *t, jw *w, const pf_trace_slot *s, uint8_t role)
{
    switch (s->kind) {
    case PF_EV_SPAN:
    case PF_EV_GPU_SPAN: {
        /* The hot path (a trace holds millions of spans): keys as literal
         * text around the writer's value calls (at depth 0 they add no
         * separator), 1.4x faster than one structural call per key. */
        bool gpu_track = t->tracks[s->track].gpu;
        PF_JSON_TEXT(w, "{\"ph\":\"X\",\"ts\":");
        pf_json_writer_decimal(w, NULL, s->t0 - t->origin_ns, 3); /* ns -> us */
        PF_JSON_TEXT(w, ",\"dur\":");
        pf_json_writer_decimal(w, NULL, s->t1 - s->t0, 3);
        PF_JSON_TEXT(w, ",\"pid\":");
        pf_json_writer_int(w, NULL, gpu_track ? GPU_PID : CPU_PID);
        PF_JSON_TEXT(w, ",\"tid\":");
        pf_json_writer_int(w, NULL, TID_BASE + s->track);
        PF_JSON_TEXT(w, ",\"name\":");
        pf_json_writer_string(w, NULL, s->name);
        if (s->source >= 0 || s->u.seq >= 0) {
            PF_JSON_TEXT(w, ",\"args\":{");
            if (s->source >= 0) {
                PF_JSON_TEXT(w, "\"source\":");
                pf_json_writer_int(w, NULL, s->source);
                if (s->u.seq >= 0) PF_JSON_TEXT(w, ",");
            }
            if (s->u.seq >= 0) {
                PF_JSON_TEXT(w, "\"seq\":");
                pf_json_writer_int(w, NULL, s->u.seq);
            }
            PF_JSON_TEXT(w, "}");
        }
        if (role) {
            char id[20];
            PF_JSON_TEXT(w, ",\"bind_id\":");
            pf_json_writer_string(w, NULL, hex_id(id, flow_id(s->source, s->u.seq)));
            if (role & FLOW_IN) PF_JSON_TEXT(w, ",\"flow_in\":true");
            if (role & FLOW_OUT) PF_JSON_TEXT(w, ",\"flow_out\":true");
        }
        PF_JSON_TEXT(w, "}");
        break;
    }
    case PF_EV_COUNTER:
        pf_json_writer_object_begin(w, NULL);
        pf_json_writer_string(w, "ph", "C");
        pf_json_writer_decimal(w, "ts", s->t0 - t->origin_ns, 3);
        pf_json_writer_int(w, "pid", s->track);
        pf_json_writer_int(w, "tid", s->track);
        pf_json_writer_string(w, "name", s->name);
        pf_json_writer_object_begin(w, "args");
        pf_json_writer_double(w, "value", s->u.value); /* finite: counters reject the others */
        pf_json_writer_object_end(w);
        pf_json_writer_object_end(w);
        break;
    case PF_EV_INSTANT:
        pf_json_writer_object_begin(w, NULL);
        pf_json_writer_string(w, "ph", "i");
        pf_json_writer_decimal(w, "ts", s->t0 - t->origin_ns, 3);
        pf_json_writer_int(w, "pid", t->tracks[s->track].gpu ? GPU_PID : CPU_PID);
        pf_json_writer_int(w, "tid", TID_BASE + s->track);
        pf_json_writer_string(w, "s", "t");
        pf_json_writer_string(w, "name", s->name);
        pf_json_writer_object_end(w);
        break;
    default:
        break;
    }
}

/* The metadata block is indented by hand: one key per line, as before the
 * writer existed (people read it with less). */
static void out_meta_u64(jw *w, const char *key, uint64_t v)
{
    PF_JSON_TEXT(w, ",\n  ");
    pf_json_writer_string(w, NULL, key);
    PF_JSON_TEXT(w, ":");
    pf_json_writer_uint(w, NULL, v);
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
    if (!ready || !roles) {
        free(ready);
        free(roles);
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
        return pf_set_error(PF_ERR_NOMEM, "pf_tracer_flush: out of host memory linking flows");
    }

    /* pf_output: a temporary renamed over the path when complete; a path
     * that is not a plain file (/dev/stdout, a FIFO, a device) in place. */
    pf_output *dst = NULL;
    pf_status ost = pf_output_open(t->path, 0, &dst);
    if (ost != PF_OK) {
        free(ready);
        free(roles);
        return pf_error_prefix(PF_ERR_IO, "pf_tracer_flush");
    }

    int ntracks = atomic_load_explicit(&t->track_count, memory_order_acquire);
    bool any_gpu = t->gpu_is_cuda;
    for (int i = 0; i < ntracks; i++) any_gpu |= t->tracks[i].gpu;

    pf_json_writer wr;
    jw *w = &wr;
    pf_json_writer_init(w, pf_output_file(dst), NULL, true, 0);
    bool first = true;
    PF_JSON_TEXT(w, "{\"traceEvents\":[\n");
    out_meta(w, &first, "process", CPU_PID, -1, t->process_name, CPU_PID);
    if (any_gpu) {
        char gname[300];
        snprintf(gname, sizeof gname, "%s GPU%s%s%s", t->process_name, t->gpu ? " (" : "",
                 t->gpu ? pf_device_spec(t->gpu) : "", t->gpu ? ")" : "");
        out_meta(w, &first, "process", GPU_PID, -1, gname, GPU_PID);
    }
    for (int i = 0; i < ntracks; i++)
        out_meta(w, &first, "thread", t->tracks[i].gpu ? GPU_PID : CPU_PID, TID_BASE + i,
                 t->tracks[i].name, i);

    uint64_t written = 0;
    for (uint64_t i = 0; i < n; i++) {
        const pf_trace_slot *s = &t->slots[i];
        if (!ready[i] || (s->kind == PF_EV_GPU_SPAN && s->gpu_state != PF_GPU_RESOLVED)) continue;
        out_sep(w, &first);
        out_event(t, w, s, roles[i]);
        written++;
    }

    char producer[128];
    snprintf(producer, sizeof producer, "pixflow %s", pf_version_string());
    PF_JSON_TEXT(w, "\n],\n\"displayTimeUnit\":\"ms\",\n\"metadata\":{\n  \"producer\":");
    pf_json_writer_string(w, NULL, producer);
    PF_JSON_TEXT(w, ",\n  \"clock\":\"pf_time_ns (CLOCK_MONOTONIC), ts in us from ts_origin_ns\"");
    PF_JSON_TEXT(w, ",\n  \"ts_origin_ns\":");
    pf_json_writer_int(w, NULL, t->origin_ns);
    out_meta_u64(w, "max_events", t->max_events);
    out_meta_u64(w, "recorded_events", n);
    out_meta_u64(w, "written_events", written);
    out_meta_u64(w, "dropped_events", atomic_load(&t->dropped));
    out_meta_u64(w, "rejected_events", atomic_load(&t->rejected));
    out_meta_u64(w, "incomplete_events", incomplete);
    out_meta_u64(w, "gpu_spans_failed", atomic_load(&t->gpu_failed));
    out_meta_u64(w, "gpu_spans_pending", atomic_load(&t->gpu_pending));
    out_meta_u64(w, "flows", (uint64_t)flows);
    out_meta_u64(w, "tracks", (uint64_t)ntracks);
    PF_JSON_TEXT(w, ",\n  \"gpu_device\":");
    pf_json_writer_string(w, NULL, t->gpu ? pf_device_spec(t->gpu) : NULL);
    if (t->gpu_is_cuda) {
        int nc = atomic_load_explicit(&t->calib_count, memory_order_acquire);
        int64_t worst = 0;
        for (int i = 0; i < nc; i++)
            if (t->calib[i].window_ns > worst) worst = t->calib[i].window_ns;
        out_meta_u64(w, "gpu_calibrations", (uint64_t)nc);
        out_meta_u64(w, "gpu_calibration_window_ns", (uint64_t)worst);
    }
    PF_JSON_TEXT(w, "\n}}\n");
    pf_status wst = pf_json_writer_finish(w); /* compact: adds nothing; flushes */
    pf_json_writer_release(w);

    free(ready);
    free(roles);
    if (wst != PF_OK) {
        pf_output_abort(&dst);
        return pf_error_prefix(wst, "pf_tracer_flush: '%s'", t->path);
    }
    pf_status cst = pf_output_commit(&dst);
    return cst == PF_OK ? PF_OK : pf_error_prefix(PF_ERR_IO, "pf_tracer_flush");
}
