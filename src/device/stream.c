/* Public stream and event wrappers: validate, then call the backend. */
#include <stdlib.h>

#include "../core/error.h"
#include "backend.h"

pf_stream_params pf_stream_params_default(void)
{
    pf_stream_params p = {.device = NULL, .priority = 0};
    return p;
}

pf_status pf_stream_create(const pf_stream_params *p, pf_stream **out)
{
    PF_CHECK_ARG(out, "pf_stream_create", "out is NULL");
    *out = NULL;
    pf_stream_params def = pf_stream_params_default();
    if (!p) p = &def;
    pf_device *dev = p->device ? p->device : pf_cpu_device();
    pf_stream *s = calloc(1, sizeof *s);
    if (!s) return pf_set_error(PF_ERR_NOMEM, "pf_stream_create: out of host memory");
    s->be = dev->be;
    s->dev = dev;
    pf_status st = dev->be->stream_create(dev, p->priority, &s->native);
    if (st != PF_OK) {
        free(s);
        return st;
    }
    *out = s;
    return PF_OK;
}

void pf_stream_destroy(pf_stream **ps)
{
    if (!ps || !*ps) return;
    pf_stream *s = *ps;
    *ps = NULL;
    if (s->be->stream_sync(s->native) != PF_OK)
        PF_LOGW("pf_stream_destroy: pending work on %s failed: %s", s->dev->spec,
                pf_last_error());
    s->be->stream_destroy(s->dev, s->native);
    free(s);
}

pf_status pf_stream_synchronize(pf_stream *s)
{
    PF_CHECK_ARG(s, "pf_stream_synchronize", "stream is NULL");
    return s->be->stream_sync(s->native);
}

pf_status pf_stream_query(pf_stream *s)
{
    PF_CHECK_ARG(s, "pf_stream_query", "stream is NULL");
    return s->be->stream_query(s->native);
}

pf_device *pf_stream_device(const pf_stream *s) { return s ? s->dev : NULL; }
void *pf_stream_native(const pf_stream *s) { return s ? s->native : NULL; }

pf_status pf_stream_launch_host(pf_stream *s, void (*fn)(void *user), void *user)
{
    PF_CHECK_ARG(s && fn, "pf_stream_launch_host", "stream or fn is NULL");
    return s->be->stream_launch_host(s->native, fn, user);
}

/* Events ------------------------------------------------------------------- */

pf_status pf_event_create(pf_device *dev, pf_event **out)
{
    PF_CHECK_ARG(out, "pf_event_create", "out is NULL");
    *out = NULL;
    if (!dev) dev = pf_cpu_device();
    pf_event *e = calloc(1, sizeof *e);
    if (!e) return pf_set_error(PF_ERR_NOMEM, "pf_event_create: out of host memory");
    e->be = dev->be;
    e->dev = dev;
    pf_status st = dev->be->event_create(dev, &e->native);
    if (st != PF_OK) {
        free(e);
        return st;
    }
    *out = e;
    return PF_OK;
}

void pf_event_destroy(pf_event **pe)
{
    if (!pe || !*pe) return;
    pf_event *e = *pe;
    *pe = NULL;
    e->be->event_destroy(e->native);
    free(e);
}

pf_status pf_event_record(pf_event *e, pf_stream *s)
{
    PF_CHECK_ARG(e && s, "pf_event_record", "event or stream is NULL");
    if (e->dev != s->dev)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_event_record: event of %s recorded on a stream of %s",
                            e->dev->spec, s->dev->spec);
    pf_status st = e->be->event_record(e->native, s->native);
    if (st == PF_OK) e->recorded = 1;
    return st;
}

pf_status pf_event_synchronize(pf_event *e)
{
    PF_CHECK_ARG(e, "pf_event_synchronize", "event is NULL");
    return e->recorded ? e->be->event_sync(e->native) : PF_OK;
}

pf_status pf_event_query(pf_event *e)
{
    PF_CHECK_ARG(e, "pf_event_query", "event is NULL");
    return e->recorded ? e->be->event_query(e->native) : PF_OK;
}

pf_status pf_stream_wait_event(pf_stream *s, pf_event *e)
{
    PF_CHECK_ARG(s && e, "pf_stream_wait_event", "stream or event is NULL");
    if (!e->recorded) return PF_OK;
    if (e->be == s->be) return s->be->stream_wait_event(s->native, e->native);
    /* Across backends: CPU work is complete when recorded; a CPU stream
     * waiting for device work has no queue to defer to, so the host waits. */
    if (e->dev->props.type == PF_DEVICE_CPU) return PF_OK;
    return e->be->event_sync(e->native);
}

pf_status pf_event_elapsed_ms(pf_event *start, pf_event *end, float *ms)
{
    PF_CHECK_ARG(start && end && ms, "pf_event_elapsed_ms", "NULL argument");
    if (start->dev != end->dev)
        return pf_set_error(PF_ERR_INVALID, "pf_event_elapsed_ms: events of %s and %s",
                            start->dev->spec, end->dev->spec);
    if (!start->recorded || !end->recorded)
        return pf_set_error(PF_ERR_INVALID, "pf_event_elapsed_ms: event was never recorded");
    return start->be->event_elapsed(start->native, end->native, ms);
}
