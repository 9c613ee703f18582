/* Fan-in: a process stage's workers taking items from several input edges.
 *
 * Design. Each input edge stays a plain bounded edge with its own capacity
 * and policy (a flooding producer fills only its own edge, and its policy
 * drops only its own items). All input edges of a stage signal one notifier
 * (edge.h, pf_edge_notify) on every push, close and cancel. A worker, under
 * the stage's in_mu, reads the notifier's generation, scans the edges
 * without blocking starting at the edge after the one served last
 * (round-robin, one item per scan, so no edge is starved by a busier one),
 * and sleeps on the notifier only when the scan found nothing and the
 * generation has not moved since it was read: no polling, no lost wake-up.
 *
 * End of input: an edge has ended once all its producers closed and it is
 * empty; the stage's input ends when every edge has (in_eos). The input list
 * may grow while running (live.c adds an edge under in_mu), which is why it
 * is read only under in_mu here. The same path serves a stage with one
 * input (it may gain more while running); a push costs the notifier one atomic add and one atomic load
 * unless a worker sleeps (then one signal).
 *
 * Lock order: in_mu, then an edge's lock or the notifier's lock, one at a
 * time (pipeline_impl.h). */
#include "../core/error.h"
#include "pipeline_impl.h"

pf_status pl_edge_open(pf_pipeline *p, pl_edge *e)
{
    pf_status st = pf_edge_create(&e->params, &p->clock, &e->e);
    if (st != PF_OK) return st;
    pf_edge_set_hooks(e->e, &e->to->notify, pl_stream_on_drop, p);
    pf_edge_add_producer(e->e);
    e->last_depth = -1;
    return PF_OK;
}

/* Notes that input edge i ended. in_mu held. */
static void edge_ended(pf_stage *s, int i)
{
    if (s->in[i]->ended) return;
    s->in[i]->ended = true;
    if (++s->in_ended >= s->nin) s->in_eos = true;
}

/* Caller holds in_mu; notes which edges ended. */
int pl_fanin_drain(pf_stage *s, pf_item *out, int max)
{
    int n = 0;
    /* A share of the room per edge and round, so that with little room every
     * edge still gets its turn; rounds repeat while edges give items. */
    bool took = true;
    while (n < max && took && !s->in_eos) {
        took = false;
        int live = s->nin - s->in_ended;
        int share = live > 0 ? (max - n) / live : 0;
        if (share < 1) share = 1;
        for (int k = 0; k < s->nin && n < max; k++) {
            int i = (s->in_rr + k) % s->nin;
            if (s->in[i]->ended) continue;
            pf_status state;
            int want = max - n < share ? max - n : share;
            int got = pf_edge_take(s->in[i]->e, out + n, want, &state);
            n += got;
            if (state == PF_ERR_CANCELLED) {
                /* What earlier edges of this pass gave is ours to release:
                 * the caller sees only the cancel (an ASan run of test_mux
                 * caught these items leaking when one edge was cancelled
                 * after another had given some). */
                for (int j = 0; j < n; j++) pf_item_unref(&out[j]);
                return PF_ERR_CANCELLED;
            }
            if (got > 0) {
                took = true;
                s->in_rr = (i + 1) % s->nin;
            }
            if (state == PF_EOF) edge_ended(s, i);
        }
    }
    return n;
}

void pl_fanin_wait(pf_stage *s, uint64_t seen, int64_t deadline_ns)
{
    /* in_mu is let go while asleep: the other workers, and an edge being
     * added while running (live.c), must not wait for this one. */
    pf_mutex_unlock(&s->in_mu);
    pf_edge_notify_wait(&s->notify, seen, deadline_ns);
    pf_mutex_lock(&s->in_mu);
}

pf_status pl_fanin_pop(pf_stage_ctx *ctx, pf_item *out)
{
    pf_stage *s = ctx->st;
    pf_pipeline *p = s->pl;
    pf_status res;
    pf_mutex_lock(&s->in_mu);
    for (;;) {
        if (atomic_load(&p->stopping)) {
            res = PF_ERR_CANCELLED;
            break;
        }
        uint64_t seen = pf_edge_notify_gen(&s->notify);
        int n = pl_fanin_drain(s, out, 1);
        if (n < 0) {
            res = PF_ERR_CANCELLED;
            break;
        }
        if (n == 1) {
            if (s->ordered) ctx->ticket = s->next_ticket++;
            res = PF_OK;
            break;
        }
        if (s->in_eos) {
            res = PF_EOF;
            break;
        }
        pl_fanin_wait(s, seen, INT64_MAX);
    }
    pf_mutex_unlock(&s->in_mu);
    return res;
}
