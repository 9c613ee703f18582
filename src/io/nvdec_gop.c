/* Several NVDEC decoders on one elementary stream file, GOP by GOP (design
 * in nvdec_gop.h). All queues share one mutex and condition: a few thousand
 * operations a second, far from contended. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "../core/sys.h"
#include "nvdec_gop.h"
#include "video_impl.h"

enum { E_FRAME, E_END, E_EOS, E_ERR };

typedef struct gop_entry {
    int kind;
    int64_t gop;
    pf_frame f;
} gop_entry;

/* A GOP this decoder has fed and whose end has not been queued yet. */
typedef struct fed_gop {
    int64_t gop, start;  /* start = index of its first access unit */
    int64_t count, out;  /* access units fed / frames out */
    bool closed;         /* the next GOP has begun: count is final */
} fed_gop;

typedef struct gop_dec {
    struct pf_nvdec_gop *g;
    int k;
    pf_thread th;
    bool started;
    /* queue (under g->mu): a growing ring */
    gop_entry *q;
    int cap, head, n, frames;
    pf_status err;
    char msg[512];
    uint64_t packets, decode_errors, dropped;
    /* thread-local */
    uint64_t fed_packets;
    fed_gop *fed;
    int fed_head, fed_n, fed_cap;
    uint8_t *ps;          /* parameter sets of a skipped access unit */
    size_t ps_cap;
} gop_dec;

struct pf_nvdec_gop {
    char *path;
    char *name;
    bool demux;           /* a container: each decoder demuxes it (video_impl.h) */
    pf_nvdec_params np;
    int n_dec;
    gop_dec *d;
    pf_mutex mu;
    pf_cond cv;
    bool stop;
    int max_queued;       /* frames a decoder queues before it waits */
    bool have_info;
    pf_nvdec_info info;
    int64_t gops;
    int64_t cur_gop;      /* read(): the GOP being handed out */
    int64_t next_index;
};

/* NAL units --------------------------------------------------------------------------- */

/* The next NAL unit of buf[*pos..n): its payload [*s, *e) without the start
 * code. false when there is none. */
static bool next_nal(const uint8_t *buf, size_t n, size_t *pos, size_t *s, size_t *e)
{
    size_t i = *pos;
    while (i + 3 <= n && !(buf[i] == 0 && buf[i + 1] == 0 && buf[i + 2] == 1)) i++;
    if (i + 3 > n) return false;
    *s = i + 3;
    size_t j = *s;
    while (j + 3 <= n && !(buf[j] == 0 && buf[j + 1] == 0 && buf[j + 2] == 1)) j++;
    if (j + 3 > n) j = n;
    *pos = j;
    /* trailing zeros belong to the next start code (00 00 00 01) */
    size_t end = j;
    while (end > *s && j < n && buf[end - 1] == 0) end--;
    *e = end;
    return *e > *s;
}

static int nal_type(pf_es_codec c, uint8_t b) { return c == PF_ES_HEVC ? (b >> 1) & 0x3f : b & 0x1f; }

static bool is_idr(pf_es_codec c, int t) { return c == PF_ES_HEVC ? t == 19 || t == 20 : t == 5; }

static bool is_param_set(pf_es_codec c, int t)
{
    return c == PF_ES_HEVC ? t >= 32 && t <= 34 : t == 7 || t == 8;
}

static bool au_has_idr(pf_es_codec c, const uint8_t *au, size_t n)
{
    size_t pos = 0, s, e;
    while (next_nal(au, n, &pos, &s, &e))
        if (is_idr(c, nal_type(c, au[s]))) return true;
    return false;
}

/* The parameter sets of an access unit, each behind a 4-byte start code,
 * into d->ps; returns their size (0: none). */
static size_t collect_param_sets(gop_dec *d, pf_es_codec c, const uint8_t *au, size_t n)
{
    size_t pos = 0, s, e, len = 0;
    while (next_nal(au, n, &pos, &s, &e)) {
        if (!is_param_set(c, nal_type(c, au[s]))) continue;
        size_t need = len + 4 + (e - s);
        if (need > d->ps_cap) {
            size_t cap = need * 2;
            uint8_t *p = realloc(d->ps, cap);
            if (!p) return 0;
            d->ps = p;
            d->ps_cap = cap;
        }
        static const uint8_t sc[4] = {0, 0, 0, 1};
        memcpy(d->ps + len, sc, 4);
        memcpy(d->ps + len + 4, au + s, e - s);
        len = need;
    }
    return len;
}

/* Queue --------------------------------------------------------------------------------- */

/* Appends an entry; a frame waits while the decoder has max_queued frames
 * queued. false when stopping (the frame is released). */
static bool push(gop_dec *d, int kind, int64_t gop, pf_frame *f)
{
    pf_nvdec_gop *g = d->g;
    pf_mutex_lock(&g->mu);
    while (kind == E_FRAME && !g->stop && d->frames >= g->max_queued) pf_cond_wait(&g->cv, &g->mu);
    if (g->stop) {
        pf_mutex_unlock(&g->mu);
        if (f) pf_frame_unref(f);
        return false;
    }
    if (d->n == d->cap) {
        int cap = d->cap ? d->cap * 2 : 64;
        gop_entry *q = malloc(sizeof *q * (size_t)cap);
        if (!q) {
            pf_mutex_unlock(&g->mu);
            if (f) pf_frame_unref(f);
            return false;
        }
        for (int i = 0; i < d->n; i++) q[i] = d->q[(d->head + i) % d->cap];
        free(d->q);
        d->q = q;
        d->cap = cap;
        d->head = 0;
    }
    gop_entry *e = &d->q[(d->head + d->n) % d->cap];
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->gop = gop;
    if (f) {
        e->f = *f;
        memset(f, 0, sizeof *f);
        d->frames++;
    }
    d->n++;
    pf_cond_broadcast(&g->cv);
    pf_mutex_unlock(&g->mu);
    return true;
}

static void push_error(gop_dec *d, pf_status st)
{
    pf_nvdec_gop *g = d->g;
    pf_mutex_lock(&g->mu);
    d->err = st;
    snprintf(d->msg, sizeof d->msg, "%s", pf_last_error());
    pf_mutex_unlock(&g->mu);
    push(d, E_ERR, -1, NULL);
}

/* Decoder thread ------------------------------------------------------------------------ */

static fed_gop *fed_front(gop_dec *d) { return d->fed_n ? &d->fed[d->fed_head] : NULL; }

static bool end_front(gop_dec *d)
{
    fed_gop *f = fed_front(d);
    d->fed_head++;
    d->fed_n--;
    return push(d, E_END, f->gop, NULL);
}

/* Ends the front GOPs that are complete: closed with all frames out. */
static bool end_complete(gop_dec *d)
{
    fed_gop *f;
    while ((f = fed_front(d)) && f->closed && f->out >= f->count)
        if (!end_front(d)) return false;
    return true;
}

static bool fed_append(gop_dec *d, int64_t gop, int64_t start)
{
    if (d->fed_head > 0 && d->fed_head + d->fed_n == d->fed_cap) {
        memmove(d->fed, d->fed + d->fed_head, sizeof *d->fed * (size_t)d->fed_n);
        d->fed_head = 0;
    }
    if (d->fed_head + d->fed_n == d->fed_cap) {
        int cap = d->fed_cap ? d->fed_cap * 2 : 16;
        fed_gop *p = realloc(d->fed, sizeof *p * (size_t)cap);
        if (!p) return false;
        d->fed = p;
        d->fed_cap = cap;
    }
    d->fed[d->fed_head + d->fed_n++] = (fed_gop){.gop = gop, .start = start};
    return true;
}

/* Queues a received frame under the GOP its pts (access unit index) says. */
static bool place(gop_dec *d, pf_frame *f)
{
    int64_t p = f->pts;
    while (d->fed_n > 1 && d->fed[d->fed_head + 1].start <= p)
        if (!end_front(d)) {
            pf_frame_unref(f);
            return false;
        }
    fed_gop *front = fed_front(d);
    if (!front) { /* a frame nobody fed: cannot happen with whole access units */
        pf_frame_unref(f);
        return true;
    }
    front->out++;
    if (!push(d, E_FRAME, front->gop, f)) return false;
    return end_complete(d);
}

static bool drain(gop_dec *d, pf_nvdec *nv, pf_status *st)
{
    pf_frame f = {0};
    pf_status r;
    while ((r = pf_nvdec_receive(nv, &f)) == PF_OK) {
        if (d->k == 0 && !d->g->have_info) {
            pf_nvdec_info ni;
            if (pf_nvdec_get_info(nv, &ni) == PF_OK) {
                pf_mutex_lock(&d->g->mu);
                d->g->info = ni;
                d->g->have_info = true;
                pf_cond_broadcast(&d->g->cv);
                pf_mutex_unlock(&d->g->mu);
            }
        }
        if (!place(d, &f)) return false;
    }
    *st = r == PF_AGAIN ? PF_OK : r;
    return true;
}

static void note_stats(gop_dec *d, pf_nvdec *nv)
{
    pf_nvdec_stats ns;
    if (pf_nvdec_get_stats(nv, &ns) != PF_OK) return;
    pf_mutex_lock(&d->g->mu);
    d->decode_errors = ns.decode_errors;
    d->dropped = ns.dropped;
    d->packets = d->fed_packets;
    pf_mutex_unlock(&d->g->mu);
}

/* A decoder's own reading of the file: the elementary stream splitter, or
 * FFmpeg's demuxer in packet mode (Annex B access units). */
typedef struct gop_src {
    pf_es_reader *es;
    pf_ffdec *ff;
    pf_video_reader_stats stats; /* the demuxer's counts (unused here) */
} gop_src;

static pf_status src_open(pf_nvdec_gop *g, gop_src *s, pf_es_codec *codec)
{
    if (!g->demux) {
        pf_status st = pf_es_reader_open(g->path, g->np.codec, &s->es);
        if (st == PF_OK) *codec = pf_es_reader_codec(s->es);
        return st;
    }
    pf_video_reader_params p = pf_video_reader_params_default();
    p.path = g->path;
    pf_video_info info;
    memset(&info, 0, sizeof info);
    bool packets = false;
    pf_status st = pf_ffdec_open_packets(&p, g->name, NULL, &s->ff, &info, &packets, codec);
    if (st == PF_OK && !packets)
        st = pf_set_error(PF_ERR_UNSUPPORTED, "%s: the stream is not one NVDEC decodes", g->name);
    return st;
}

static pf_status src_next(gop_src *s, const uint8_t **au, size_t *n)
{
    if (s->es) return pf_es_reader_next(s->es, au, n);
    int64_t pts;
    return pf_ffdec_read_au(s->ff, au, n, &pts, &s->stats);
}

static void src_close(gop_src *s)
{
    pf_es_reader_close(&s->es);
    pf_ffdec_close(&s->ff);
}

static pf_status decode_loop(gop_dec *d, gop_src *src, pf_nvdec *nv, pf_es_codec codec)
{
    pf_nvdec_gop *g = d->g;
    int64_t au_index = 0, gop = 0;
    const uint8_t *au;
    size_t n;
    pf_status st;
    while ((st = src_next(src, &au, &n)) == PF_OK) {
        if (au_index > 0 && au_has_idr(codec, au, n)) {
            fed_gop *last = d->fed_n ? &d->fed[d->fed_head + d->fed_n - 1] : NULL;
            if (last && last->gop == gop) last->closed = true;
            if (!end_complete(d)) return PF_OK;
            gop++;
            if (d->k == 0) {
                pf_mutex_lock(&g->mu);
                g->gops = gop + 1;
                pf_mutex_unlock(&g->mu);
            }
        }
        if (gop % g->n_dec == d->k) {
            fed_gop *last = d->fed_n ? &d->fed[d->fed_head + d->fed_n - 1] : NULL;
            if ((!last || last->gop != gop) && !fed_append(d, gop, au_index))
                return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", g->name);
            d->fed[d->fed_head + d->fed_n - 1].count++;
            st = pf_nvdec_decode(nv, au, n, au_index);
            d->fed_packets++;
        } else {
            size_t len = collect_param_sets(d, codec, au, n);
            st = len ? pf_nvdec_decode(nv, d->ps, len, PF_NOPTS) : PF_OK;
        }
        if (st == PF_ERR_BUSY) st = PF_OK; /* a frame lost to the pool: counted */
        if (st != PF_OK) return st;
        if (!drain(d, nv, &st)) return PF_OK;
        if (st != PF_OK) return st;
        au_index++;
        if ((au_index & 63) == 0) note_stats(d, nv);
        pf_mutex_lock(&g->mu);
        bool stop = g->stop;
        pf_mutex_unlock(&g->mu);
        if (stop) return PF_OK;
    }
    if (st != PF_EOF) return st;
    if ((st = pf_nvdec_flush(nv)) != PF_OK) return st;
    if (!drain(d, nv, &st)) return PF_OK;
    if (st != PF_EOF && st != PF_OK) return st;
    note_stats(d, nv);
    while (d->fed_n)
        if (!end_front(d)) return PF_OK;
    push(d, E_EOS, -1, NULL);
    return PF_OK;
}

static void *dec_main(void *arg)
{
    gop_dec *d = arg;
    pf_nvdec_gop *g = d->g;
    gop_src src;
    memset(&src, 0, sizeof src);
    pf_nvdec *nv = NULL;
    pf_es_codec codec = PF_ES_UNKNOWN;
    pf_status st = src_open(g, &src, &codec);
    if (st == PF_OK) {
        pf_nvdec_params np = g->np;
        np.codec = codec;
        st = pf_nvdec_create(&np, &nv);
    }
    if (st == PF_OK) st = decode_loop(d, &src, nv, codec);
    if (st != PF_OK) push_error(d, st);
    pf_nvdec_destroy(&nv);
    src_close(&src);
    return NULL;
}

/* API --------------------------------------------------------------------------------------- */

static char *dupstr(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

pf_status pf_nvdec_gop_open(const char *path, bool demux, const pf_nvdec_params *np,
                            int decoders, pf_nvdec_gop **out)
{
    PF_CHECK_ARG(out && path && np, "pf_nvdec_gop_open", "NULL argument");
    *out = NULL;
    if (decoders < 2 || decoders > 8)
        return pf_set_error(PF_ERR_INVALID, "pf_nvdec_gop_open: %d decoders (2..8)", decoders);
    pf_nvdec_gop *g = calloc(1, sizeof *g);
    if (!g) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", path);
    pf_mutex_init(&g->mu);
    pf_cond_init(&g->cv);
    g->np = *np;
    g->np.pool_timeout_us = -1;
    g->max_queued = np->pool_size / 2 > 1 ? np->pool_size / 2 : 1;
    g->n_dec = decoders;
    g->demux = demux;
    g->path = dupstr(path);
    g->name = dupstr(np->name ? np->name : path);
    g->d = calloc((size_t)decoders, sizeof *g->d);
    if (!g->path || !g->name || !g->d) {
        pf_nvdec_gop_close(&g);
        return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", path);
    }
    g->np.name = g->name;
    pf_status st = PF_OK;
    int64_t t0 = pf_time_ns();
    for (int k = 0; k < decoders && st == PF_OK; k++) {
        g->d[k].g = g;
        g->d[k].k = k;
        st = pf_thread_start(&g->d[k].th, "pf-nvdec-gop", dec_main, &g->d[k]);
        g->d[k].started = st == PF_OK;
    }
    /* Wait for the sequence: decoder 0's first frame, or its failure/end. */
    pf_mutex_lock(&g->mu);
    while (st == PF_OK && !g->have_info) {
        gop_dec *d0 = &g->d[0];
        bool done = false;
        for (int i = 0; i < d0->n; i++) {
            int kind = d0->q[(d0->head + i) % d0->cap].kind;
            if (kind == E_ERR || kind == E_EOS) done = true;
        }
        if (done) {
            st = d0->err ? pf_set_error(d0->err, "%s", d0->msg)
                         : pf_set_error(PF_ERR_FORMAT, "%s: no decodable frame", g->name);
            break;
        }
        pf_cond_wait(&g->cv, &g->mu);
    }
    pf_mutex_unlock(&g->mu);
    if (st == PF_OK)
        PF_LOGD("%s: %d NVDEC decoders by GOP, the first frame in %.1f ms", g->name, decoders,
                (double)(pf_time_ns() - t0) / 1e6);
    if (st != PF_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", pf_last_error());
        pf_nvdec_gop_close(&g);
        return pf_set_error(st, "%s", msg);
    }
    *out = g;
    return PF_OK;
}

void pf_nvdec_gop_close(pf_nvdec_gop **pg)
{
    if (!pg || !*pg) return;
    pf_nvdec_gop *g = *pg;
    *pg = NULL;
    pf_mutex_lock(&g->mu);
    g->stop = true;
    /* Queued frames go back to their pools, so a decoder waiting for one
     * can return and see the stop. */
    for (int k = 0; g->d && k < g->n_dec; k++) {
        gop_dec *d = &g->d[k];
        for (int i = 0; i < d->n; i++) pf_frame_unref(&d->q[(d->head + i) % d->cap].f);
        d->n = d->frames = 0;
    }
    pf_cond_broadcast(&g->cv);
    pf_mutex_unlock(&g->mu);
    for (int k = 0; g->d && k < g->n_dec; k++) {
        gop_dec *d = &g->d[k];
        if (d->started) pf_thread_join(d->th);
        free(d->q);
        free(d->fed);
        free(d->ps);
    }
    free(g->d);
    free(g->path);
    free(g->name);
    pf_cond_destroy(&g->cv);
    pf_mutex_destroy(&g->mu);
    free(g);
}

pf_status pf_nvdec_gop_get_info(const pf_nvdec_gop *g, pf_nvdec_info *out)
{
    PF_CHECK_ARG(g && out, "pf_nvdec_gop_get_info", "NULL argument");
    *out = g->info;
    return PF_OK;
}

pf_status pf_nvdec_gop_read(pf_nvdec_gop *g, pf_frame *out)
{
    PF_CHECK_ARG(g && out, "pf_nvdec_gop_read", "NULL argument");
    pf_mutex_lock(&g->mu);
    for (;;) {
        gop_dec *d = &g->d[g->cur_gop % g->n_dec];
        while (d->n == 0) pf_cond_wait(&g->cv, &g->mu);
        gop_entry *e = &d->q[d->head];
        if (e->kind == E_EOS) {
            pf_mutex_unlock(&g->mu);
            return PF_EOF;
        }
        if (e->kind == E_ERR) {
            pf_status st = pf_set_error(d->err ? d->err : PF_ERR_INTERNAL, "%s", d->msg);
            pf_mutex_unlock(&g->mu);
            return st;
        }
        d->head = (d->head + 1) % d->cap;
        d->n--;
        if (e->kind == E_END) {
            g->cur_gop++;
            continue;
        }
        *out = e->f;
        d->frames--;
        pf_cond_broadcast(&g->cv);
        int64_t idx = g->next_index++;
        pf_mutex_unlock(&g->mu);
        pf_rational fps = g->info.fps.num > 0 ? g->info.fps : (pf_rational){30, 1};
        out->pts = idx;
        out->index = idx;
        out->time_base = (pf_rational){fps.den, fps.num};
        return PF_OK;
    }
}

void pf_nvdec_gop_get_stats(pf_nvdec_gop *g, pf_nvdec_gop_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!g) return;
    pf_mutex_lock(&g->mu);
    out->decoders = g->n_dec;
    out->gops = g->gops;
    for (int k = 0; k < g->n_dec; k++) {
        out->packets += g->d[k].packets;
        out->decode_errors += g->d[k].decode_errors;
        out->dropped += g->d[k].dropped;
    }
    pf_mutex_unlock(&g->mu);
}
