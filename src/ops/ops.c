/* The pf_ops context: stream, CPU thread pool, reusable device scratch. */
#include <stdlib.h>

#include "../core/error.h"
#include "../device/backend.h"
#include "ops_impl.h"

typedef struct pf_ops_retired {
    void *ptr;
    struct pf_ops_retired *next;
} pf_ops_retired;

pf_ops_params pf_ops_params_default(void)
{
    pf_ops_params p = {.stream = NULL, .pool = NULL, .reference = false};
    return p;
}

pf_status pf_ops_create(const pf_ops_params *p, pf_ops **out)
{
    PF_CHECK_ARG(out, "pf_ops_create", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(p && p->stream, "pf_ops_create", "params.stream is NULL");
    pf_ops *ops = calloc(1, sizeof *ops);
    if (!ops) return pf_set_error(PF_ERR_NOMEM, "pf_ops_create: out of host memory");
    ops->stream = p->stream;
    ops->dev = pf_stream_device(p->stream);
    ops->reference = p->reference;
    ops->pool = p->pool;
    if (!ops->pool && ops->dev->props.type == PF_DEVICE_CPU && !p->reference) {
        pf_threadpool_params tp = pf_threadpool_params_default();
        tp.name = "pf-ops";
        pf_status st = pf_threadpool_create(&tp, &ops->pool);
        if (st != PF_OK) {
            free(ops);
            return st;
        }
        ops->own_pool = 1;
    }
    *out = ops;
    return PF_OK;
}

void pf_ops_destroy(pf_ops **pops)
{
    if (!pops || !*pops) return;
    pf_ops *ops = *pops;
    *pops = NULL;
    pf_stream_synchronize(ops->stream);
    if (ops->scratch) ops->dev->be->mem_free(ops->dev, PF_MEM_DEVICE, ops->scratch);
    while (ops->retired) {
        pf_ops_retired *r = ops->retired;
        ops->retired = r->next;
        ops->dev->be->mem_free(ops->dev, PF_MEM_DEVICE, r->ptr);
        free(r);
    }
    if (ops->cpu_cache) ops->cpu_cache_free(ops->cpu_cache);
    if (ops->own_pool) pf_threadpool_destroy(&ops->pool);
    free(ops);
}

pf_stream *pf_ops_stream(const pf_ops *ops) { return ops ? ops->stream : NULL; }

pf_status pf_ops_scratch(pf_ops *ops, size_t size, void **out)
{
    if (size > ops->scratch_size) {
        size_t want = ops->scratch_size + ops->scratch_size / 2;
        if (want < size) want = size;
        if (want < 4096) want = 4096;
        pf_ops_retired *r = NULL;
        if (ops->scratch) {
            r = malloc(sizeof *r);
            if (!r) return pf_set_error(PF_ERR_NOMEM, "pf_ops: out of host memory");
        }
        void *p = NULL;
        pf_status st = ops->dev->be->mem_alloc(ops->dev, PF_MEM_DEVICE, want, &p);
        if (st != PF_OK) {
            free(r);
            return st;
        }
        if (r) {
            r->ptr = ops->scratch;
            r->next = ops->retired;
            ops->retired = r;
        }
        ops->scratch = p;
        ops->scratch_size = want;
    }
    *out = ops->scratch;
    return PF_OK;
}
