/* The CPU backend: always present, the fallback for every feature.
 *
 * A CPU stream executes each piece of work immediately on the calling
 * thread, so it is trivially in order and always idle when queried. Events
 * record a host timestamp at record time. All memory domains are host heap
 * memory aligned to 256 bytes (the same alignment cudaMalloc gives, so code
 * that relies on it behaves the same on both backends). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/error.h"
#include "../core/sys.h"
#include "../device/backend.h"

static size_t meminfo_field(const char *key)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    size_t klen = strlen(key), kib = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, key, klen) && line[klen] == ':') {
            kib = (size_t)strtoull(line + klen + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kib * 1024;
}

static void cpu_model_name(char *out, size_t size)
{
    snprintf(out, size, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "model name", 10)) {
            char *colon = strchr(line, ':');
            if (colon) {
                colon++;
                while (*colon == ' ' || *colon == '\t') colon++;
                colon[strcspn(colon, "\n")] = '\0';
                snprintf(out, size, "%s", colon);
            }
            break;
        }
    }
    fclose(f);
}

static int cpu_discover(pf_device *devs, int max, char *detail, size_t detail_size)
{
    if (max < 1) return 0;
    pf_device_props *p = &devs[0].props;
    memset(p, 0, sizeof *p);
    cpu_model_name(p->name, sizeof p->name);
    p->multiprocessors = pf_cpu_count();
    p->total_memory = meminfo_field("MemTotal");
    if (!p->total_memory)
        p->total_memory = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
    p->unified_addressing = true;
    snprintf(detail, detail_size, "%d cores", p->multiprocessors);
    return 1;
}

static pf_status cpu_mem_info(pf_device *dev, size_t *free_bytes, size_t *total_bytes)
{
    *total_bytes = dev->props.total_memory;
    *free_bytes = meminfo_field("MemAvailable");
    if (*free_bytes > *total_bytes) *free_bytes = *total_bytes;
    return PF_OK;
}

static pf_status cpu_device_sync(pf_device *dev) { return PF_OK; }

static pf_status cpu_mem_alloc(pf_device *dev, pf_mem_domain domain, size_t size, void **out)
{
    *out = pf_aligned_alloc(256, size);
    if (!*out) {
        char b[32];
        return pf_set_error(PF_ERR_NOMEM, "cannot allocate %s of host memory",
                            pf_fmt_bytes(b, sizeof b, size));
    }
    return PF_OK;
}

static void cpu_mem_free(pf_device *dev, pf_mem_domain domain, void *ptr) { pf_aligned_free(ptr); }

static pf_status cpu_stream_create(pf_device *dev, int priority, void **native)
{
    *native = NULL;
    return PF_OK;
}

static void cpu_stream_destroy(pf_device *dev, void *native) {}
static pf_status cpu_stream_sync(void *native) { return PF_OK; }
static pf_status cpu_stream_query(void *native) { return PF_OK; }

static pf_status cpu_stream_launch_host(void *native, void (*fn)(void *), void *user)
{
    fn(user);
    return PF_OK;
}

/* Event: the host time of the last record, -1 when never recorded. */
static pf_status cpu_event_create(pf_device *dev, void **native)
{
    int64_t *t = malloc(sizeof *t);
    if (!t) return pf_set_error(PF_ERR_NOMEM, "pf_event_create: out of host memory");
    *t = -1;
    *native = t;
    return PF_OK;
}

static void cpu_event_destroy(void *native) { free(native); }

static pf_status cpu_event_record(void *event, void *stream)
{
    *(int64_t *)event = pf_time_ns();
    return PF_OK;
}

static pf_status cpu_event_sync(void *event) { return PF_OK; }
static pf_status cpu_event_query(void *event) { return PF_OK; }

static pf_status cpu_event_elapsed(void *start, void *end, float *ms)
{
    int64_t a = *(int64_t *)start, b = *(int64_t *)end;
    if (a < 0 || b < 0)
        return pf_set_error(PF_ERR_INVALID, "pf_event_elapsed_ms: event was never recorded");
    *ms = (float)((double)(b - a) / 1e6);
    return PF_OK;
}

static pf_status cpu_stream_wait_event(void *stream, void *event) { return PF_OK; }

static pf_status cpu_memcpy_async(void *stream, void *dst, const void *src, size_t n)
{
    memmove(dst, src, n);
    return PF_OK;
}

static pf_status cpu_memcpy2d_async(void *stream, void *dst, size_t dpitch, const void *src,
                                    size_t spitch, size_t width, size_t rows)
{
    for (size_t r = 0; r < rows; r++)
        memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
    return PF_OK;
}

static pf_status cpu_memset_async(void *stream, void *dst, int value, size_t n)
{
    memset(dst, value, n);
    return PF_OK;
}

const pf_backend pf_cpu_backend = {
    .type = PF_DEVICE_CPU,
    .name = "cpu",
    .discover = cpu_discover,
    .mem_info = cpu_mem_info,
    .device_sync = cpu_device_sync,
    .mem_alloc = cpu_mem_alloc,
    .mem_free = cpu_mem_free,
    .stream_create = cpu_stream_create,
    .stream_destroy = cpu_stream_destroy,
    .stream_sync = cpu_stream_sync,
    .stream_query = cpu_stream_query,
    .stream_launch_host = cpu_stream_launch_host,
    .event_create = cpu_event_create,
    .event_destroy = cpu_event_destroy,
    .event_record = cpu_event_record,
    .event_sync = cpu_event_sync,
    .event_query = cpu_event_query,
    .event_elapsed = cpu_event_elapsed,
    .stream_wait_event = cpu_stream_wait_event,
    .memcpy_async = cpu_memcpy_async,
    .memcpy2d_async = cpu_memcpy2d_async,
    .memset_async = cpu_memset_async,
    /* no graph slots: pf_graph_cache runs work directly */
};
