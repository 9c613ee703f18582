/* Device registry: discovers each backend's devices once, on first use, and
 * keeps them for the life of the process (devices are never freed, so
 * pointers handed out stay valid everywhere, including in buffers). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "../core/sys.h"
#include "backend.h"

#define PF_MAX_DEVICES_PER_TYPE 16

typedef struct backend_slot {
    const pf_backend *be;
    int discovered;
    int count;
    pf_device devs[PF_MAX_DEVICES_PER_TYPE];
    char detail[256];
} backend_slot;

static pf_mutex registry_lock = PTHREAD_MUTEX_INITIALIZER;
static backend_slot slots[PF_DEVICE_TYPE_COUNT];
/* pf_device_peer_access's answers by device index: 0 unknown, 1 yes, -1 no.
 * Read without the lock once known: the transfer stage and every cross-device
 * copy ask per frame. */
static atomic_schar peer_state[PF_MAX_DEVICES_PER_TYPE][PF_MAX_DEVICES_PER_TYPE];

const pf_backend *pf_backend_get(pf_device_type type)
{
    switch (type) {
    case PF_DEVICE_CPU: return &pf_cpu_backend;
    case PF_DEVICE_CUDA:
#ifdef PF_HAVE_CUDA
        return &pf_cuda_backend;
#else
        return NULL;
#endif
    }
    return NULL;
}

const char *pf_device_type_name(pf_device_type type)
{
    switch (type) {
    case PF_DEVICE_CPU: return "cpu";
    case PF_DEVICE_CUDA: return "cuda";
    }
    return "?";
}

static backend_slot *slot_for(pf_device_type type)
{
    if ((unsigned)type >= PF_DEVICE_TYPE_COUNT) return NULL;
    backend_slot *s = &slots[type];
    pf_mutex_lock(&registry_lock);
    if (!s->discovered) {
        s->discovered = 1;
        s->be = pf_backend_get(type);
        if (!s->be) {
            snprintf(s->detail, sizeof s->detail, "not compiled in (build with PF_CUDA=on)");
        } else {
            int n = s->be->discover(s->devs, PF_MAX_DEVICES_PER_TYPE, s->detail,
                                    sizeof s->detail);
            s->count = n < 0 ? 0 : n;
            for (int i = 0; i < s->count; i++) {
                s->devs[i].be = s->be;
                s->devs[i].props.type = type;
                s->devs[i].props.index = i;
                if (type == PF_DEVICE_CPU)
                    snprintf(s->devs[i].spec, sizeof s->devs[i].spec, "cpu");
                else
                    snprintf(s->devs[i].spec, sizeof s->devs[i].spec, "%s:%d",
                             pf_device_type_name(type), i);
            }
        }
    }
    pf_mutex_unlock(&registry_lock);
    return s;
}

bool pf_device_peer_access(pf_device *a, pf_device *b)
{
    if (!a || !b || a == b || a->be != b->be || !a->be->peer_enable) return false;
    int ia = a->props.index, ib = b->props.index;
    if (ia < 0 || ib < 0 || ia >= PF_MAX_DEVICES_PER_TYPE || ib >= PF_MAX_DEVICES_PER_TYPE)
        return false;
    signed char known = atomic_load_explicit(&peer_state[ia][ib], memory_order_acquire);
    if (known) return known > 0;
    pf_mutex_lock(&registry_lock);
    if (!atomic_load_explicit(&peer_state[ia][ib], memory_order_relaxed)) {
        bool ok = false;
        pf_status st = a->be->peer_enable(a, b, &ok);
        atomic_store_explicit(&peer_state[ib][ia], ok ? 1 : -1, memory_order_release);
        atomic_store_explicit(&peer_state[ia][ib], ok ? 1 : -1, memory_order_release);
        if (st != PF_OK)
            PF_LOGW("%s <-> %s: %s; copies between them go through host memory", a->spec,
                    b->spec, pf_last_error());
        else
            PF_LOGI("%s <-> %s: %s", a->spec, b->spec,
                    ok ? "peer-to-peer access enabled (direct copies)"
                       : "no peer-to-peer access (copies go through host memory)");
    }
    bool yes = atomic_load_explicit(&peer_state[ia][ib], memory_order_relaxed) > 0;
    pf_mutex_unlock(&registry_lock);
    return yes;
}

pf_device *pf_cpu_device(void)
{
    backend_slot *s = slot_for(PF_DEVICE_CPU);
    return &s->devs[0];
}

int pf_device_count(pf_device_type type)
{
    backend_slot *s = slot_for(type);
    return s ? s->count : 0;
}

pf_status pf_device_get(pf_device_type type, int index, pf_device **out)
{
    PF_CHECK_ARG(out, "pf_device_get", "out is NULL");
    *out = NULL;
    backend_slot *s = slot_for(type);
    if (!s) return pf_set_error(PF_ERR_INVALID, "pf_device_get: unknown device type %d", (int)type);
    if (s->count == 0)
        return pf_set_error(PF_ERR_NO_DEVICE, "%s unavailable: %s", pf_device_type_name(type),
                            s->detail);
    if (index < 0 || index >= s->count)
        return pf_set_error(PF_ERR_NO_DEVICE, "no device %s:%d (%d %s device%s present)",
                            pf_device_type_name(type), index, s->count,
                            pf_device_type_name(type), s->count == 1 ? "" : "s");
    *out = &s->devs[index];
    return PF_OK;
}

pf_status pf_backend_info_get(pf_device_type type, pf_backend_info *out)
{
    PF_CHECK_ARG(out, "pf_backend_info_get", "out is NULL");
    backend_slot *s = slot_for(type);
    if (!s)
        return pf_set_error(PF_ERR_INVALID, "pf_backend_info_get: unknown device type %d",
                            (int)type);
    memset(out, 0, sizeof *out);
    out->type = type;
    out->name = pf_device_type_name(type);
    out->compiled = s->be != NULL;
    out->available = s->count > 0;
    out->device_count = s->count;
    snprintf(out->detail, sizeof out->detail, "%s", s->detail);
    return PF_OK;
}

pf_status pf_device_select(const char *spec, pf_device **out)
{
    PF_CHECK_ARG(out, "pf_device_select", "out is NULL");
    *out = NULL;
    const char *from = NULL; /* where the spec came from, when not the caller */
    if (!spec || !*spec) {
        spec = getenv("PIXFLOW_DEVICE");
        from = " (from PIXFLOW_DEVICE)";
        if (!spec || !*spec) {
            spec = "auto";
            from = " (default)";
        }
    }
    if (!from) from = "";
    if (!strcmp(spec, "auto")) {
        if (pf_device_count(PF_DEVICE_CUDA) > 0) return pf_device_get(PF_DEVICE_CUDA, 0, out);
        PF_LOGI("device auto: using the CPU (cuda %s)", slot_for(PF_DEVICE_CUDA)->detail);
        return pf_device_get(PF_DEVICE_CPU, 0, out);
    }
    if (!strcmp(spec, "cpu")) return pf_device_get(PF_DEVICE_CPU, 0, out);
    if (!strncmp(spec, "cuda", 4)) {
        const char *rest = spec + 4;
        long idx = 0;
        if (*rest == ':') {
            char *end = NULL;
            idx = strtol(rest + 1, &end, 10);
            if (end == rest + 1 || *end || idx < 0 || idx > 1024)
                return pf_set_error(PF_ERR_INVALID,
                                    "bad device '%s'%s: expected cuda:N with N >= 0",
                                    spec, from);
        } else if (*rest) {
            goto bad;
        }
        pf_status st = pf_device_get(PF_DEVICE_CUDA, (int)idx, out);
        if (st != PF_OK) {
            char why[768];
            snprintf(why, sizeof why, "%s", pf_last_error());
            return pf_set_error(st, "device '%s'%s: %s", spec, from, why);
        }
        return PF_OK;
    }
bad:
    return pf_set_error(PF_ERR_INVALID,
                        "unknown device '%s'%s: expected auto, cpu, cuda or cuda:N",
                        spec, from);
}

const pf_device_props *pf_device_props_get(const pf_device *dev) { return dev ? &dev->props : NULL; }
pf_device_type pf_device_get_type(const pf_device *dev) { return dev ? dev->props.type : PF_DEVICE_CPU; }
const char *pf_device_spec(const pf_device *dev) { return dev ? dev->spec : "?"; }

pf_status pf_device_memory(pf_device *dev, size_t *free_bytes, size_t *total_bytes)
{
    PF_CHECK_ARG(dev && free_bytes && total_bytes, "pf_device_memory", "NULL argument");
    return dev->be->mem_info(dev, free_bytes, total_bytes);
}

pf_status pf_device_synchronize(pf_device *dev)
{
    PF_CHECK_ARG(dev, "pf_device_synchronize", "device is NULL");
    return dev->be->device_sync(dev);
}
