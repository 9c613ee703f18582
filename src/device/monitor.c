/* Device monitor: samples memory (runtime), pool usage (watched allocators)
 * and, on CUDA devices, NVML counters; raises threshold alerts.
 *
 * Design:
 * - One mutex guards the watch list, the latest sample, the alert states and
 *   the stop flag. A sample reads allocator statistics while holding it, so
 *   pf_monitor_unwatch() returning means no sample still touches that
 *   allocator (it may then be destroyed). The slow parts (runtime memory
 *   query, NVML: up to a few ms) run outside the lock.
 * - Alerts are edge-triggered per kind: "armed" until the value reaches its
 *   threshold, which fires the callback once and disarms; the kind re-arms
 *   when a later sample sees the value below 95% of the threshold, so noise
 *   around the threshold cannot produce a storm of callbacks. States change
 *   under the lock; callbacks run after it is released (a callback may call
 *   pf_monitor_latest / pf_monitor_sample without deadlocking).
 * - period_ms > 0 starts one sampling thread. It waits on a condition
 *   variable with a deadline instead of sleeping, so destroy wakes it at once
 *   and returns without waiting out the period.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/sys.h"
#include "device/backend.h"
#include "device/nvml.h"

#define MAX_WATCHED 16
#define ALERT_KINDS 3
#define REARM_FRACTION 0.95

struct pf_monitor {
    pf_device *dev;
    pf_monitor_params p;
    bool is_cuda;

    pf_mutex lock;
    pf_cond wake;                       /* signalled on stop */
    pf_allocator *watched[MAX_WATCHED];
    int watched_count;
    pf_device_sample latest;
    bool have_latest;
    bool armed[ALERT_KINDS];            /* true: a crossing fires the callback */
    bool stop;
    bool thread_started;
    pf_thread thread;
    pf_status last_thread_error;        /* logged once per distinct failure */
};

pf_monitor_params pf_monitor_params_default(void)
{
    pf_monitor_params p;
    memset(&p, 0, sizeof p);
    return p;
}

typedef struct fired_alert {
    pf_alert_kind kind;
    double value, threshold;
} fired_alert;

/* Under m->lock. Updates the edge states for `s` and lists the alerts that
 * fire; returns their number. */
static int evaluate_alerts_locked(pf_monitor *m, const pf_device_sample *s, fired_alert *fired)
{
    int n = 0;
    for (int k = 0; k < ALERT_KINDS; k++) {
        double threshold = 0, value = 0;
        bool have_value = false;
        switch ((pf_alert_kind)k) {
        case PF_ALERT_MEMORY:
            threshold = m->p.mem_alert_fraction;
            if (s->mem_total > 0) {
                size_t used = s->mem_total > s->mem_free ? s->mem_total - s->mem_free : 0;
                value = (double)used / (double)s->mem_total;
                have_value = true;
            }
            break;
        case PF_ALERT_TEMPERATURE:
            threshold = m->p.temp_alert_c;
            /* Without NVML there is no temperature: neither fire nor re-arm. */
            if (s->nvml) {
                value = (double)s->temperature_c;
                have_value = true;
            }
            break;
        case PF_ALERT_POOL:
            threshold = (double)m->p.pool_alert_bytes;
            value = (double)s->pool_bytes_reserved;
            have_value = true;
            break;
        }
        if (threshold <= 0 || !have_value) continue;
        if (m->armed[k] && value >= threshold) {
            m->armed[k] = false;
            fired[n].kind = (pf_alert_kind)k;
            fired[n].value = value;
            fired[n].threshold = threshold;
            n++;
        } else if (!m->armed[k] && value < REARM_FRACTION * threshold) {
            m->armed[k] = true;
        }
    }
    return n;
}

static pf_status take_sample(pf_monitor *m, pf_device_sample *out)
{
    pf_device_sample s;
    memset(&s, 0, sizeof s);
    s.time_ns = pf_time_ns();

    pf_status st = pf_device_memory(m->dev, &s.mem_free, &s.mem_total);
    if (st < 0) return st; /* message already set by pf_device_memory */

    if (m->is_cuda) pf_nvml_sample(pf_device_props_get(m->dev), &s);

    fired_alert fired[ALERT_KINDS];
    int nfired = 0;
    pf_mutex_lock(&m->lock);
    for (int i = 0; i < m->watched_count; i++) {
        pf_allocator_stats as;
        if (pf_allocator_get_stats(m->watched[i], &as) == PF_OK) {
            s.pool_bytes_reserved += as.bytes_reserved;
            s.pool_bytes_in_use += as.bytes_in_use;
        }
    }
    /* Concurrent samplers may finish out of order; latest keeps the newest. */
    if (!m->have_latest || s.time_ns >= m->latest.time_ns) {
        m->latest = s;
        m->have_latest = true;
    }
    nfired = evaluate_alerts_locked(m, &s, fired);
    pf_alert_fn alert = m->p.alert;
    void *user = m->p.user;
    pf_mutex_unlock(&m->lock);

    for (int i = 0; i < nfired && alert; i++)
        alert(user, fired[i].kind, fired[i].value, fired[i].threshold, &s);
    if (out) *out = s;
    return PF_OK;
}

static void *sampler_main(void *arg)
{
    pf_monitor *m = arg;
    const int64_t period_ns = (int64_t)m->p.period_ms * 1000000;
    int64_t next = pf_time_ns();
    for (;;) {
        pf_mutex_lock(&m->lock);
        while (!m->stop && pf_cond_timedwait_until(&m->wake, &m->lock, next)) {
        }
        bool stop = m->stop;
        pf_mutex_unlock(&m->lock);
        if (stop) break;

        pf_status st = take_sample(m, NULL);
        if (st < 0 && st != m->last_thread_error) {
            /* last_thread_error is only touched by this thread. */
            PF_LOGW("device monitor (%s): sampling failed: %s: %s", pf_device_spec(m->dev),
                    pf_status_str(st), pf_last_error());
        }
        m->last_thread_error = st < 0 ? st : PF_OK;

        /* Fixed cadence; after a stall (slow NVML, suspended process) resume
         * from now instead of firing a burst of catch-up samples. */
        next += period_ns;
        int64_t now = pf_time_ns();
        if (next <= now) next = now + period_ns;
    }
    return NULL;
}

pf_status pf_monitor_create(const pf_monitor_params *p, pf_monitor **out)
{
    static const char fn[] = "pf_monitor_create";
    PF_CHECK_ARG(out != NULL, fn, "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(p != NULL, fn, "params is NULL");
    if (p->period_ms < 0)
        return pf_set_error(PF_ERR_INVALID, "%s: period_ms %d is negative (0 = manual sampling)",
                            fn, p->period_ms);
    if (!(p->mem_alert_fraction >= 0 && p->mem_alert_fraction <= 1))
        return pf_set_error(PF_ERR_INVALID,
                            "%s: mem_alert_fraction %g is outside [0, 1] (0 = off)", fn,
                            p->mem_alert_fraction);
    if (!(p->temp_alert_c >= 0 && isfinite(p->temp_alert_c)))
        return pf_set_error(PF_ERR_INVALID, "%s: temp_alert_c %g is not a temperature >= 0 "
                            "(0 = off)", fn, p->temp_alert_c);

    pf_monitor *m = calloc(1, sizeof *m);
    if (!m) return pf_set_error(PF_ERR_NOMEM, "%s: out of memory", fn);
    m->p = *p;
    m->dev = p->device ? p->device : pf_cpu_device();
    m->is_cuda = pf_device_get_type(m->dev) == PF_DEVICE_CUDA;
    for (int k = 0; k < ALERT_KINDS; k++) m->armed[k] = true;
    pf_mutex_init(&m->lock);
    pf_cond_init(&m->wake);

    if (p->period_ms > 0) {
        char name[16];
        snprintf(name, sizeof name, "pf-mon-%.8s", pf_device_spec(m->dev));
        pf_status st = pf_thread_start(&m->thread, name, sampler_main, m);
        if (st < 0) {
            pf_cond_destroy(&m->wake);
            pf_mutex_destroy(&m->lock);
            free(m);
            return st;
        }
        m->thread_started = true;
    }
    *out = m;
    return PF_OK;
}

void pf_monitor_destroy(pf_monitor **pm)
{
    if (!pm || !*pm) return;
    pf_monitor *m = *pm;
    *pm = NULL;
    if (m->thread_started) {
        pf_mutex_lock(&m->lock);
        m->stop = true;
        pf_cond_broadcast(&m->wake);
        pf_mutex_unlock(&m->lock);
        pf_thread_join(m->thread);
    }
    pf_cond_destroy(&m->wake);
    pf_mutex_destroy(&m->lock);
    free(m);
}

pf_status pf_monitor_watch(pf_monitor *m, pf_allocator *a)
{
    static const char fn[] = "pf_monitor_watch";
    PF_CHECK_ARG(m != NULL, fn, "monitor is NULL");
    PF_CHECK_ARG(a != NULL, fn, "allocator is NULL");
    pf_status st = PF_OK;
    pf_mutex_lock(&m->lock);
    for (int i = 0; i < m->watched_count; i++) {
        if (m->watched[i] == a) {
            st = pf_set_error(PF_ERR_INVALID, "%s: allocator '%s' is already watched", fn,
                              pf_allocator_name(a));
            goto out;
        }
    }
    if (m->watched_count == MAX_WATCHED) {
        st = pf_set_error(PF_ERR_INVALID, "%s: cannot watch allocator '%s': already watching "
                          "%d allocators (the maximum)", fn, pf_allocator_name(a), MAX_WATCHED);
        goto out;
    }
    m->watched[m->watched_count++] = a;
out:
    pf_mutex_unlock(&m->lock);
    return st;
}

pf_status pf_monitor_unwatch(pf_monitor *m, pf_allocator *a)
{
    static const char fn[] = "pf_monitor_unwatch";
    PF_CHECK_ARG(m != NULL, fn, "monitor is NULL");
    PF_CHECK_ARG(a != NULL, fn, "allocator is NULL");
    pf_mutex_lock(&m->lock);
    for (int i = 0; i < m->watched_count; i++) {
        if (m->watched[i] == a) {
            memmove(&m->watched[i], &m->watched[i + 1],
                    (size_t)(m->watched_count - i - 1) * sizeof m->watched[0]);
            m->watched_count--;
            pf_mutex_unlock(&m->lock);
            return PF_OK;
        }
    }
    pf_mutex_unlock(&m->lock);
    return pf_set_error(PF_ERR_INVALID, "%s: allocator '%s' is not watched by this monitor", fn,
                        pf_allocator_name(a));
}

pf_status pf_monitor_sample(pf_monitor *m, pf_device_sample *out)
{
    PF_CHECK_ARG(m != NULL, "pf_monitor_sample", "monitor is NULL");
    PF_CHECK_ARG(out != NULL, "pf_monitor_sample", "out is NULL");
    return take_sample(m, out);
}

pf_status pf_monitor_latest(pf_monitor *m, pf_device_sample *out)
{
    PF_CHECK_ARG(m != NULL, "pf_monitor_latest", "monitor is NULL");
    PF_CHECK_ARG(out != NULL, "pf_monitor_latest", "out is NULL");
    pf_mutex_lock(&m->lock);
    bool have = m->have_latest;
    if (have) *out = m->latest;
    pf_mutex_unlock(&m->lock);
    return have ? PF_OK : PF_AGAIN;
}
