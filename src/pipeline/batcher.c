/* Dynamic batcher: the decision logic of pipeline.h, "Dynamic batcher".
 *
 * Design. Everything is sized by `capacity` (the most requests that may wait)
 * and allocated at create, so add and take never allocate:
 *  - nodes[capacity]: one per waiting request (the item and its arrival
 *    time), linked FIFO within its (priority, source) queue and, doubly, in
 *    one global arrival list whose head is the oldest waiting request (the
 *    max_delay deadline is O(1); removal from the middle, as fairness takes
 *    requests out of arrival order, is O(1) too).
 *  - queues[capacity]: one per (priority, source) pair that has requests
 *    waiting, found through a chained hash table. A queue exists only while
 *    non-empty, so there are never more queues than waiting requests: any
 *    number of distinct sources (int32) is served, only `capacity` of them
 *    at once, and the only refusal is PF_AGAIN at capacity.
 *  - active[]: the live queues sorted by (priority descending, source
 *    ascending), so a priority level is a contiguous run and the round-robin
 *    order within a level is by source id. Kept sorted by insertion on a
 *    queue's first request and removal when it empties (memmove of ints).
 *  - levels[max(capacity, 64)]: per priority, the source served first in
 *    the last batch that drew from that level (the round-robin cursor),
 *    sorted by priority. A level's cursor outlives its queues, so the
 *    rotation carries on across batches that drain a level; the record of a
 *    level with nothing waiting is recycled only when a new priority needs
 *    room (that level's rotation then restarts at its lowest source id; no
 *    request can starve, as a level with requests keeps its record).
 *
 * Take: levels from the highest priority down; within a level, starting at
 * the first source whose id is greater than the level's cursor (cyclically),
 * one request per source per pass until the batch is full or the level is
 * empty; FIFO within a source. Cost O(batch + queues in the levels touched).
 *
 * Times: arrival times are the caller's clock (the pipeline's pf_clock);
 * "oldest" is the request added first, which is the one that has waited
 * longest as long as the clock given to add is monotonic. The delay runs
 * from the first frame of the batch being collected (nvstreammux's
 * batched-push-timeout): the oldest request's arrival, or, for one left
 * over when the previous batch was taken, that take (t_take) - the next
 * batch starts collecting then, so leftovers that queued behind a full
 * batch get the whole delay to be joined by others instead of leaving at
 * once as a small batch.
 */
#include <stdint.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "batcher.h"

#include "../core/error.h"

#define BATCHER_MAX_CAPACITY (1 << 20)
#define NIL (-1)

typedef struct bnode {
    pf_item item;
    int64_t t_ns;
    int32_t next;          /* next in its queue, or free list link */
    int32_t gprev, gnext;  /* global arrival list */
} bnode;

typedef struct bqueue {
    int priority;
    int32_t source;
    int32_t head, tail;    /* nodes */
    int32_t hnext;         /* hash chain, or free list link */
} bqueue;

typedef struct blevel {
    int priority;
    int32_t cursor;        /* source served first in the last batch of this level */
    bool has_cursor;       /* false: no batch drew from it yet, start at the lowest id */
    int nqueues;           /* live queues at this priority */
} blevel;

struct pf_batcher {
    atomic_int max_batch;  /* lowered at run time by pf_batcher_limit */
    int64_t delay_ns;      /* INT64_MAX = never by time */
    int64_t t_take;        /* clock of the last take (INT64_MIN: none yet) */
    int capacity;
    int count;

    bnode *nodes;
    int32_t free_node;
    int32_t ghead, gtail;

    bqueue *queues;
    int32_t free_queue;
    int32_t *buckets;
    uint32_t bucket_mask;

    int32_t *active;       /* queue indices, sorted */
    int nactive;

    blevel *levels;        /* sorted by priority descending */
    int nlevels, levels_cap;
};

static uint32_t key_hash(int priority, int32_t source)
{
    uint64_t k = ((uint64_t)(uint32_t)priority << 32) | (uint32_t)source;
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (uint32_t)k;
}

/* Orders queues: higher priority first, then lower source id. */
static int queue_cmp(const bqueue *q, int priority, int32_t source)
{
    if (q->priority != priority) return q->priority > priority ? -1 : 1;
    if (q->source != source) return q->source < source ? -1 : 1;
    return 0;
}

pf_status pf_batcher_create(const pf_batch_params *p, int capacity, pf_batcher **out)
{
    PF_CHECK_ARG(out, "pf_batcher_create", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(p, "pf_batcher_create", "params is NULL");
    if (p->max_batch < 1)
        return pf_set_error(PF_ERR_INVALID, "pf_batcher_create: max_batch %d must be >= 1",
                            p->max_batch);
    if (p->max_delay_us < 0)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_batcher_create: max_delay_us %lld must be >= 0",
                            (long long)p->max_delay_us);
    if (capacity < p->max_batch || capacity > BATCHER_MAX_CAPACITY)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_batcher_create: capacity %d out of range max_batch (%d)..%d",
                            capacity, p->max_batch, BATCHER_MAX_CAPACITY);
    uint32_t nb = 16;
    while (nb < 2u * (uint32_t)capacity) nb <<= 1;

    pf_batcher *b = calloc(1, sizeof *b);
    if (b) {
        b->ghead = b->gtail = NIL; /* destroy walks this list, also on failure here */
        b->nodes = calloc((size_t)capacity, sizeof *b->nodes);
        b->queues = calloc((size_t)capacity, sizeof *b->queues);
        b->buckets = malloc((size_t)nb * sizeof *b->buckets);
        b->active = malloc((size_t)capacity * sizeof *b->active);
        b->levels_cap = capacity < 64 ? 64 : capacity;
        b->levels = calloc((size_t)b->levels_cap, sizeof *b->levels);
    }
    if (!b || !b->nodes || !b->queues || !b->buckets || !b->active || !b->levels) {
        pf_batcher_destroy(&b);
        return pf_set_error(PF_ERR_NOMEM, "pf_batcher_create: cannot allocate tables for %d "
                                          "requests",
                            capacity);
    }
    atomic_init(&b->max_batch, p->max_batch);
    b->delay_ns = p->max_delay_us > INT64_MAX / 1000 ? INT64_MAX : p->max_delay_us * 1000;
    b->capacity = capacity;
    b->t_take = INT64_MIN;
    for (int i = 0; i < capacity; i++) {
        b->nodes[i].next = i + 1 < capacity ? i + 1 : NIL;
        b->queues[i].hnext = i + 1 < capacity ? i + 1 : NIL;
    }
    b->free_node = 0;
    b->free_queue = 0;
    for (uint32_t i = 0; i < nb; i++) b->buckets[i] = NIL;
    b->bucket_mask = nb - 1;
    *out = b;
    return PF_OK;
}

void pf_batcher_destroy(pf_batcher **pb)
{
    if (!pb || !*pb) return;
    pf_batcher *b = *pb;
    if (b->nodes && b->count > 0)
        for (int32_t n = b->ghead; n != NIL; n = b->nodes[n].gnext)
            pf_item_unref(&b->nodes[n].item);
    free(b->nodes);
    free(b->queues);
    free(b->buckets);
    free(b->active);
    free(b->levels);
    free(b);
    *pb = NULL;
}

int pf_batcher_count(const pf_batcher *b) { return b ? b->count : 0; }

int pf_batcher_limit(pf_batcher *b, int max_batch)
{
    if (!b) return 0;
    int cur = atomic_load(&b->max_batch);
    while (max_batch >= 1 && max_batch < cur &&
           !atomic_compare_exchange_weak(&b->max_batch, &cur, max_batch)) {
    }
    return atomic_load(&b->max_batch);
}

/* Levels ----------------------------------------------------------------------- */

/* Index of the level record for `priority`, or where it would be inserted
 * (*found = false). */
static int level_search(const pf_batcher *b, int priority, bool *found)
{
    int lo = 0, hi = b->nlevels;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (b->levels[mid].priority > priority) lo = mid + 1;
        else hi = mid;
    }
    *found = lo < b->nlevels && b->levels[lo].priority == priority;
    return lo;
}

/* The level record for `priority`, made if needed. There is always room:
 * levels with queues number at most count < capacity <= levels_cap, so when
 * the table is full one record without queues can be recycled. */
static blevel *level_get(pf_batcher *b, int priority)
{
    bool found;
    int i = level_search(b, priority, &found);
    if (found) return &b->levels[i];
    if (b->nlevels == b->levels_cap) {
        int victim = 0;
        while (victim < b->nlevels && b->levels[victim].nqueues > 0) victim++;
        memmove(&b->levels[victim], &b->levels[victim + 1],
                (size_t)(b->nlevels - victim - 1) * sizeof *b->levels);
        b->nlevels--;
        if (victim < i) i--;
    }
    memmove(&b->levels[i + 1], &b->levels[i], (size_t)(b->nlevels - i) * sizeof *b->levels);
    b->nlevels++;
    b->levels[i].priority = priority;
    b->levels[i].cursor = 0;
    b->levels[i].has_cursor = false;
    b->levels[i].nqueues = 0;
    return &b->levels[i];
}

static blevel *level_find(pf_batcher *b, int priority)
{
    bool found;
    int i = level_search(b, priority, &found);
    return found ? &b->levels[i] : NULL;
}

/* Queues ------------------------------------------------------------------------ */

static int32_t queue_find(const pf_batcher *b, int priority, int32_t source)
{
    int32_t q = b->buckets[key_hash(priority, source) & b->bucket_mask];
    while (q != NIL && (b->queues[q].priority != priority || b->queues[q].source != source))
        q = b->queues[q].hnext;
    return q;
}

/* A new, empty queue, hashed and placed in active[] (a free record exists:
 * queues are at most count < capacity). */
static int32_t queue_open(pf_batcher *b, int priority, int32_t source)
{
    int32_t q = b->free_queue;
    b->free_queue = b->queues[q].hnext;
    bqueue *qq = &b->queues[q];
    qq->priority = priority;
    qq->source = source;
    qq->head = qq->tail = NIL;
    uint32_t h = key_hash(priority, source) & b->bucket_mask;
    qq->hnext = b->buckets[h];
    b->buckets[h] = q;

    int lo = 0, hi = b->nactive;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (queue_cmp(&b->queues[b->active[mid]], priority, source) < 0) lo = mid + 1;
        else hi = mid;
    }
    memmove(&b->active[lo + 1], &b->active[lo], (size_t)(b->nactive - lo) * sizeof *b->active);
    b->active[lo] = q;
    b->nactive++;
    level_get(b, priority)->nqueues++;
    return q;
}

/* Unhashes an empty queue and frees its record (active[] is compacted by the
 * caller). */
static void queue_release(pf_batcher *b, int32_t q)
{
    bqueue *qq = &b->queues[q];
    int32_t *link = &b->buckets[key_hash(qq->priority, qq->source) & b->bucket_mask];
    while (*link != q) link = &b->queues[*link].hnext;
    *link = qq->hnext;
    blevel *lv = level_find(b, qq->priority);
    if (lv) lv->nqueues--;
    qq->hnext = b->free_queue;
    b->free_queue = q;
}

/* Add / ready / take ---------------------------------------------------------------- */

pf_status pf_batcher_add(pf_batcher *b, pf_item *item, int64_t now_ns)
{
    PF_CHECK_ARG(b, "pf_batcher_add", "batcher is NULL");
    PF_CHECK_ARG(item, "pf_batcher_add", "item is NULL");
    if (!item->frame.buf[0] && !item->tensor.buf)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_batcher_add: item (source %d, seq %lld) has neither a frame "
                            "nor a tensor",
                            (int)item->source, (long long)item->seq);
    if (b->count >= b->capacity)
        return pf_set_error(PF_AGAIN,
                            "pf_batcher_add: %d requests already waiting (capacity %d); item "
                            "(source %d, seq %lld) not taken",
                            b->count, b->capacity, (int)item->source, (long long)item->seq);
    int32_t q = queue_find(b, item->priority, item->source);
    if (q == NIL) q = queue_open(b, item->priority, item->source);

    int32_t n = b->free_node;
    bnode *nd = &b->nodes[n];
    b->free_node = nd->next;
    nd->item = *item;
    memset(item, 0, sizeof *item);
    nd->t_ns = now_ns;
    nd->next = NIL;
    nd->gnext = NIL;
    nd->gprev = b->gtail;
    if (b->gtail != NIL) b->nodes[b->gtail].gnext = n;
    else b->ghead = n;
    b->gtail = n;

    bqueue *qq = &b->queues[q];
    if (qq->tail != NIL) b->nodes[qq->tail].next = n;
    else qq->head = n;
    qq->tail = n;
    b->count++;
    return PF_OK;
}

int64_t pf_batcher_deadline(const pf_batcher *b)
{
    if (!b || b->ghead == NIL) return INT64_MAX;
    int64_t t = b->nodes[b->ghead].t_ns;
    if (t < b->t_take) t = b->t_take; /* a leftover: its batch began at the take */
    if (b->delay_ns == INT64_MAX || t > INT64_MAX - b->delay_ns) return INT64_MAX;
    return t + b->delay_ns;
}

bool pf_batcher_ready(const pf_batcher *b, int64_t now_ns, bool eos)
{
    if (!b || b->count == 0) return false;
    if (b->count >= atomic_load(&b->max_batch) || eos || b->delay_ns == 0) return true;
    return now_ns >= pf_batcher_deadline(b);
}

/* Pops the head request of queue q into *out. */
static void queue_pop(pf_batcher *b, int32_t q, pf_item *out)
{
    bqueue *qq = &b->queues[q];
    int32_t n = qq->head;
    bnode *nd = &b->nodes[n];
    qq->head = nd->next;
    if (qq->head == NIL) qq->tail = NIL;
    if (nd->gprev != NIL) b->nodes[nd->gprev].gnext = nd->gnext;
    else b->ghead = nd->gnext;
    if (nd->gnext != NIL) b->nodes[nd->gnext].gprev = nd->gprev;
    else b->gtail = nd->gprev;
    *out = nd->item;
    memset(&nd->item, 0, sizeof nd->item);
    nd->next = b->free_node;
    b->free_node = n;
    b->count--;
}

int pf_batcher_take(pf_batcher *b, pf_item *out, int64_t now_ns)
{
    if (!b || !out) return 0;
    b->t_take = now_ns;
    int n = 0;
    int lo = 0;
    const int max_batch = atomic_load(&b->max_batch);
    while (n < max_batch && lo < b->nactive) {
        int priority = b->queues[b->active[lo]].priority;
        int hi = lo + 1;
        while (hi < b->nactive && b->queues[b->active[hi]].priority == priority) hi++;
        blevel *lv = level_find(b, priority);
        int len = hi - lo;
        /* First source after the cursor (sources ascend within the level). */
        int start = 0;
        if (lv->has_cursor) {
            while (start < len && b->queues[b->active[lo + start]].source <= lv->cursor) start++;
            if (start == len) start = 0;
        }
        lv->cursor = b->queues[b->active[lo + start]].source;
        lv->has_cursor = true;

        bool took = true;
        while (n < max_batch && took) {
            took = false;
            for (int k = 0; k < len && n < max_batch; k++) {
                int32_t q = b->active[lo + (start + k) % len];
                if (b->queues[q].head == NIL) continue;
                queue_pop(b, q, &out[n++]);
                took = true;
            }
        }
        /* Drop the emptied queues from the level's run. */
        int w = lo;
        for (int r = lo; r < hi; r++) {
            int32_t q = b->active[r];
            if (b->queues[q].head == NIL) queue_release(b, q);
            else b->active[w++] = q;
        }
        if (w < hi) {
            memmove(&b->active[w], &b->active[hi], (size_t)(b->nactive - hi) * sizeof *b->active);
            b->nactive -= hi - w;
        }
        lo = w;
    }
    return n;
}
