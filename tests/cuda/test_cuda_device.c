/* CUDA device discovery, selection, memory information and the backend's
 * raw allocation slot. Exits 77 (skipped) without a usable GPU. */
#include <ctype.h>
#include <cuda_runtime.h>

#include "pf_test.h"

#include "device/backend.h"

static pf_device *dev;

static void test_discovery_props(void)
{
    int n = pf_device_count(PF_DEVICE_CUDA);
    int rt_n = 0;
    CHECK(cudaGetDeviceCount(&rt_n) == cudaSuccess);
    CHECK(n >= 1);
    CHECK(n <= rt_n);
    for (int i = 0; i < n; i++) {
        pf_device *d = NULL;
        CHECK_OK(pf_device_get(PF_DEVICE_CUDA, i, &d));
        REQUIRE(d != NULL);
        const pf_device_props *p = pf_device_props_get(d);
        REQUIRE(p != NULL);
        printf("  cuda:%d: %s, cc %d.%d, %d SMs, %.1f GiB, L2 %zu KiB, %d threads/block, "
               "%d copy engines, uva %d, managed %d, pci %s\n",
               i, p->name, p->cc_major, p->cc_minor, p->multiprocessors,
               (double)p->total_memory / (1 << 30), p->l2_cache_bytes >> 10,
               p->max_threads_per_block, p->async_engines, p->unified_addressing,
               p->concurrent_managed, p->pci_bus_id);
        CHECK_EQ_INT(p->type, PF_DEVICE_CUDA);
        CHECK_EQ_INT(p->index, i);
        CHECK(p->name[0] != '\0');
        CHECK(memchr(p->name, '\0', sizeof p->name) != NULL);
        CHECK(p->cc_major >= 7);
        CHECK(p->cc_minor >= 0 && p->cc_minor < 10);
        CHECK(p->multiprocessors > 0);
        CHECK(p->total_memory > ((size_t)1 << 30));
        CHECK(p->l2_cache_bytes > 0);
        CHECK(p->max_threads_per_block >= 512);
        CHECK(p->async_engines >= 1);
        CHECK(p->unified_addressing);
        /* "0000:1b:00.0": hex domain:bus:device.function, lower case. */
        size_t len = strlen(p->pci_bus_id);
        CHECK(len >= 12);
        CHECK(strchr(p->pci_bus_id, ':') != NULL && strchr(p->pci_bus_id, '.') != NULL);
        for (size_t k = 0; k < len; k++) CHECK(!isupper((unsigned char)p->pci_bus_id[k]));

        /* Cross-check against the runtime directly. */
        int v = 0;
        CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, i) == cudaSuccess);
        CHECK_EQ_INT(p->multiprocessors, v);
        CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, i) == cudaSuccess);
        CHECK_EQ_INT(p->cc_major, v);
        struct cudaDeviceProp cp;
        CHECK(cudaGetDeviceProperties(&cp, i) == cudaSuccess);
        CHECK(strcmp(cp.name, p->name) == 0);
        CHECK(cp.totalGlobalMem == p->total_memory);

        char spec[16];
        snprintf(spec, sizeof spec, "cuda:%d", i);
        CHECK(strcmp(pf_device_spec(d), spec) == 0);
        CHECK_EQ_INT(pf_device_get_type(d), PF_DEVICE_CUDA);
    }
    pf_device *d = NULL;
    CHECK_EQ_INT(pf_device_get(PF_DEVICE_CUDA, n, &d), PF_ERR_NO_DEVICE);
    CHECK(d == NULL);
    CHECK_EQ_INT(pf_device_get(PF_DEVICE_CUDA, -1, &d), PF_ERR_NO_DEVICE);
}

static void test_backend_info(void)
{
    pf_backend_info bi;
    CHECK_OK(pf_backend_info_get(PF_DEVICE_CUDA, &bi));
    printf("  cuda backend: %s\n", bi.detail);
    CHECK(bi.compiled);
    CHECK(bi.available);
    CHECK(bi.device_count >= 1);
    CHECK(strcmp(bi.name, "cuda") == 0);
    CHECK(strstr(bi.detail, "CUDA runtime ") != NULL);
    CHECK(strstr(bi.detail, "driver ") != NULL);
    int rt = 0;
    CHECK(cudaRuntimeGetVersion(&rt) == cudaSuccess);
    char want[32];
    snprintf(want, sizeof want, "CUDA runtime %d.%d", rt / 1000, (rt % 1000) / 10);
    CHECK(strstr(bi.detail, want) != NULL);
}

static void test_select(void)
{
    pf_device *d0 = NULL, *d = NULL;
    CHECK_OK(pf_device_get(PF_DEVICE_CUDA, 0, &d0));
    CHECK_OK(pf_device_select("cuda:0", &d));
    CHECK(d == d0);
    d = NULL;
    CHECK_OK(pf_device_select("cuda", &d));
    CHECK(d == d0);
    d = NULL;
    CHECK_OK(pf_device_select("auto", &d));
    CHECK(d == d0); /* a GPU is present: auto picks cuda:0 */
    d = NULL;
    CHECK_OK(pf_device_select("cpu", &d));
    REQUIRE(d != NULL);
    CHECK_EQ_INT(pf_device_get_type(d), PF_DEVICE_CPU);

    d = d0;
    pf_status st = pf_device_select("cuda:99", &d);
    CHECK(st < 0);
    CHECK(d == NULL);
    CHECK(strstr(pf_last_error(), "cuda:99") != NULL);
    CHECK(pf_device_select("cuda:x", &d) < 0);
    CHECK(pf_device_select("gpu", &d) < 0);
}

static void test_memory_info(void)
{
    size_t f0 = 0, t0 = 0;
    CHECK_OK(pf_device_memory(dev, &f0, &t0));
    const pf_device_props *p = pf_device_props_get(dev);
    CHECK(t0 > ((size_t)1 << 30));
    CHECK(f0 > 0 && f0 <= t0);
    /* cudaMemGetInfo's total may hide a little reserved memory. */
    CHECK(t0 <= p->total_memory);
    CHECK(t0 >= p->total_memory / 10 * 9);

    /* Free memory drops by about what we allocate. */
    const size_t n = (size_t)512 << 20;
    void *ptr = NULL;
    CHECK_OK(dev->be->mem_alloc(dev, PF_MEM_DEVICE, n, &ptr));
    REQUIRE(ptr != NULL);
    size_t f1 = 0, t1 = 0;
    CHECK_OK(pf_device_memory(dev, &f1, &t1));
    CHECK(t1 == t0);
    CHECK(f1 + (n / 2) <= f0);
    dev->be->mem_free(dev, PF_MEM_DEVICE, ptr);
    CHECK_OK(pf_device_synchronize(dev));
}

static void test_mem_alloc_domains(void)
{
    pf_test_seed(0xdec1u);
    for (int round = 0; round < 20; round++) {
        size_t n = round == 0 ? 1 : (size_t)pf_test_rand_range(1, 8 << 20);
        for (int dom = PF_MEM_HOST; dom <= PF_MEM_DEVICE; dom++) {
            void *ptr = NULL;
            CHECK_OK(dev->be->mem_alloc(dev, (pf_mem_domain)dom, n, &ptr));
            REQUIRE(ptr != NULL);
            CHECK(((uintptr_t)ptr & 255) == 0);
            struct cudaPointerAttributes a;
            memset(&a, 0, sizeof a);
            CHECK(cudaPointerGetAttributes(&a, ptr) == cudaSuccess);
            if (dom == PF_MEM_DEVICE) {
                CHECK_EQ_INT(a.type, cudaMemoryTypeDevice);
                CHECK_EQ_INT(a.device, 0);
            } else if (dom == PF_MEM_PINNED) {
                CHECK_EQ_INT(a.type, cudaMemoryTypeHost);
                ((volatile unsigned char *)ptr)[n - 1] = 1; /* host-writable */
            } else {
                CHECK_EQ_INT(a.type, cudaMemoryTypeUnregistered);
                ((volatile unsigned char *)ptr)[n - 1] = 1;
            }
            dev->be->mem_free(dev, (pf_mem_domain)dom, ptr);
        }
    }
    /* Size 0 still gives a pointer (callers treat NULL as failure). */
    void *z = NULL;
    CHECK_OK(dev->be->mem_alloc(dev, PF_MEM_DEVICE, 0, &z));
    CHECK(z != NULL);
    dev->be->mem_free(dev, PF_MEM_DEVICE, z);
}

static void test_out_of_memory(void)
{
    /* 1 PiB: more than any GPU has; the runtime's out-of-memory must come
     * back as PF_ERR_NOMEM with a message naming the call and the size. */
    void *ptr = (void *)&ptr;
    pf_status st = dev->be->mem_alloc(dev, PF_MEM_DEVICE, (size_t)1 << 50, &ptr);
    CHECK_EQ_INT(st, PF_ERR_NOMEM);
    CHECK(ptr == NULL);
    CHECK(strstr(pf_last_error(), "cudaMalloc(1024.00 TiB)") != NULL);
    CHECK(strstr(pf_last_error(), "cuda:0") != NULL);
    /* The handled error must not linger in the runtime's last-error slot. */
    CHECK(cudaGetLastError() == cudaSuccess);
    /* And the device still works. */
    void *ok = NULL;
    CHECK_OK(dev->be->mem_alloc(dev, PF_MEM_DEVICE, 4096, &ok));
    dev->be->mem_free(dev, PF_MEM_DEVICE, ok);
    /* (No pinned out-of-memory case: a huge cudaHostAlloc may start pinning
     * host pages before it fails, which would stress the whole machine.) */
}

/* The current device is set by each call: a thread whose current device is
 * another one still allocates on `dev`. Only meaningful with 2+ GPUs. */
static void test_multi_gpu_current_device(void)
{
    int n = pf_device_count(PF_DEVICE_CUDA);
    if (n < 2) {
        printf("  (one GPU: multi-GPU check skipped)\n");
        return;
    }
    pf_device *d1 = NULL;
    CHECK_OK(pf_device_get(PF_DEVICE_CUDA, 1, &d1));
    REQUIRE(d1 != NULL);
    CHECK(cudaSetDevice(0) == cudaSuccess);
    void *ptr = NULL;
    CHECK_OK(d1->be->mem_alloc(d1, PF_MEM_DEVICE, 1 << 20, &ptr));
    struct cudaPointerAttributes a;
    CHECK(cudaPointerGetAttributes(&a, ptr) == cudaSuccess);
    CHECK_EQ_INT(a.device, 1);
    d1->be->mem_free(d1, PF_MEM_DEVICE, ptr);
}

int main(void)
{
    dev = pf_test_cuda_device_or_skip();
    PF_RUN(test_discovery_props);
    PF_RUN(test_backend_info);
    PF_RUN(test_select);
    PF_RUN(test_memory_info);
    PF_RUN(test_mem_alloc_domains);
    PF_RUN(test_out_of_memory);
    PF_RUN(test_multi_gpu_current_device);
    return pf_test_finish();
}
