/* NVML loaded at run time (see nvml.h for why).
 *
 * One mutex guards the load state, the resolved function table and a small
 * cache of device handles. The first caller of pf_nvml_available() or
 * pf_nvml_sample() does the dlopen + nvmlInit_v2 under the lock; everyone
 * after reads the outcome. NVML itself is thread-safe, so the queries run
 * outside the lock on a copy of the function table. The library handle is
 * never closed: handles and function pointers stay valid for the process.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/sys.h"
#include "dl.h"
#include "nvml.h"

#define NVML_LIBRARY "libnvidia-ml.so.1"
#define MAX_HANDLES 64

/* A static initializer instead of pf_mutex_init(): the lock must exist before
 * the first (possibly concurrent) call, with no init hook to run it from.
 * pf_mutex is a pthread_mutex_t, so this is sys.h's type, not a new API. */
static pf_mutex g_lock = PTHREAD_MUTEX_INITIALIZER;

enum { NVML_UNTRIED = 0, NVML_LOADED = 1, NVML_MISSING = -1 };
static int g_state = NVML_UNTRIED;
static pf_nvml_fns g_fns;
static char g_detail[256];

/* Handles by CUDA identity. The PCI bus id is the key when there is one,
 * because NVML enumerates in PCI order while CUDA (by default) puts the
 * fastest device first and honours CUDA_VISIBLE_DEVICES. */
typedef struct handle_entry {
    char pci_bus_id[32];
    int index;
    pf_nvmlDevice_t handle;
} handle_entry;
static handle_entry g_handles[MAX_HANDLES];
static int g_handle_count;

static const char *nvml_error(const pf_nvml_fns *f, pf_nvmlReturn_t rc)
{
    const char *s = f->error_string ? f->error_string(rc) : NULL;
    return s ? s : "unknown error";
}

/* Under g_lock. Sets g_state, g_fns and g_detail. */
static void nvml_load_locked(void)
{
    if (g_state != NVML_UNTRIED) return;
    g_state = NVML_MISSING;
    memset(&g_fns, 0, sizeof g_fns);

    void *lib = pf_dl_open(NVML_LIBRARY, g_detail, sizeof g_detail);
    if (!lib) return;

    pf_nvml_fns f;
    memset(&f, 0, sizeof f);
    PF_DL_RESOLVE(lib, f.init, "nvmlInit_v2");
    PF_DL_RESOLVE(lib, f.error_string, "nvmlErrorString");
    PF_DL_RESOLVE(lib, f.driver_version, "nvmlSystemGetDriverVersion");
    PF_DL_RESOLVE(lib, f.handle_by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
    PF_DL_RESOLVE(lib, f.handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
    PF_DL_RESOLVE(lib, f.utilization, "nvmlDeviceGetUtilizationRates");
    PF_DL_RESOLVE(lib, f.memory, "nvmlDeviceGetMemoryInfo");
    PF_DL_RESOLVE(lib, f.temperature, "nvmlDeviceGetTemperature");
    PF_DL_RESOLVE(lib, f.power_usage, "nvmlDeviceGetPowerUsage");
    PF_DL_RESOLVE(lib, f.power_limit, "nvmlDeviceGetEnforcedPowerLimit");
    PF_DL_RESOLVE(lib, f.clock, "nvmlDeviceGetClockInfo");
    PF_DL_RESOLVE(lib, f.pcie_throughput, "nvmlDeviceGetPcieThroughput");

    /* Without init or any way to find a device nothing else is usable; the
     * other symbols are optional (their fields stay 0). */
    const char *missing = !f.init ? "nvmlInit_v2"
                        : (!f.handle_by_pci && !f.handle_by_index) ? "nvmlDeviceGetHandleByIndex_v2"
                        : NULL;
    if (missing) {
        snprintf(g_detail, sizeof g_detail, "%s lacks %s (driver too old?)", NVML_LIBRARY, missing);
        dlclose(lib);
        return;
    }

    pf_nvmlReturn_t rc = f.init();
    if (rc != PF_NVML_SUCCESS) {
        snprintf(g_detail, sizeof g_detail, "nvmlInit_v2 failed: %s (NVML error %d)",
                 nvml_error(&f, rc), rc);
        dlclose(lib);
        return;
    }

    char ver[PF_NVML_DRIVER_VERSION_BUFFER] = "";
    if (f.driver_version && f.driver_version(ver, sizeof ver) == PF_NVML_SUCCESS && ver[0])
        snprintf(g_detail, sizeof g_detail, "NVML loaded, driver %s", ver);
    else
        snprintf(g_detail, sizeof g_detail, "NVML loaded, driver version unknown");
    g_fns = f;
    g_state = NVML_LOADED;
    g_handle_count = 0;
    /* lib stays open for the life of the process (see the top comment). */
}

bool pf_nvml_available(char *detail, size_t detail_size)
{
    pf_mutex_lock(&g_lock);
    nvml_load_locked();
    bool ok = g_state == NVML_LOADED;
    if (detail && detail_size > 0) snprintf(detail, detail_size, "%s", g_detail);
    pf_mutex_unlock(&g_lock);
    return ok;
}

/* Under g_lock, NVML loaded. */
static bool find_handle_locked(const pf_device_props *props, pf_nvmlDevice_t *out)
{
    for (int i = 0; i < g_handle_count; i++) {
        const handle_entry *e = &g_handles[i];
        if (props->pci_bus_id[0] ? strcmp(e->pci_bus_id, props->pci_bus_id) == 0
                                 : (!e->pci_bus_id[0] && e->index == props->index)) {
            *out = e->handle;
            return true;
        }
    }
    pf_nvmlDevice_t h = NULL;
    bool found = false;
    if (props->pci_bus_id[0] && g_fns.handle_by_pci)
        found = g_fns.handle_by_pci(props->pci_bus_id, &h) == PF_NVML_SUCCESS;
    if (!found && g_fns.handle_by_index && props->index >= 0)
        found = g_fns.handle_by_index((unsigned)props->index, &h) == PF_NVML_SUCCESS;
    if (!found) return false;
    if (g_handle_count < MAX_HANDLES) {
        handle_entry *e = &g_handles[g_handle_count++];
        memcpy(e->pci_bus_id, props->pci_bus_id, sizeof e->pci_bus_id);
        e->pci_bus_id[sizeof e->pci_bus_id - 1] = '\0';
        e->index = props->index;
        e->handle = h;
    }
    *out = h;
    return true;
}

bool pf_nvml_sample(const pf_device_props *props, pf_device_sample *out)
{
    if (!props || !out || props->type != PF_DEVICE_CUDA) return false;

    pf_mutex_lock(&g_lock);
    nvml_load_locked();
    pf_nvmlDevice_t h = NULL;
    bool ok = g_state == NVML_LOADED && find_handle_locked(props, &h);
    pf_nvml_fns f = g_fns;
    pf_mutex_unlock(&g_lock);
    if (!ok) return false;

    /* Each query is independent: one the GPU does not support (e.g. power on
     * some boards, PCIe counters under virtualisation) leaves its field 0. */
    unsigned v = 0;
    pf_device_sample s = *out;
    s.gpu_util_pct = s.mem_util_pct = s.temperature_c = 0;
    s.power_mw = s.power_limit_mw = s.sm_clock_mhz = s.mem_clock_mhz = 0;
    s.pcie_tx_kbps = s.pcie_rx_kbps = 0;
    s.nvml_mem_used = s.nvml_mem_total = 0;

    pf_nvmlUtilization_t u = {0, 0};
    if (f.utilization && f.utilization(h, &u) == PF_NVML_SUCCESS) {
        s.gpu_util_pct = u.gpu;
        s.mem_util_pct = u.memory;
    }
    pf_nvmlMemory_t m = {0, 0, 0};
    if (f.memory && f.memory(h, &m) == PF_NVML_SUCCESS) {
        s.nvml_mem_used = m.used;
        s.nvml_mem_total = m.total;
    }
    if (f.temperature && f.temperature(h, PF_NVML_TEMPERATURE_GPU, &v) == PF_NVML_SUCCESS)
        s.temperature_c = v;
    if (f.power_usage && f.power_usage(h, &v) == PF_NVML_SUCCESS) s.power_mw = v;
    if (f.power_limit && f.power_limit(h, &v) == PF_NVML_SUCCESS) s.power_limit_mw = v;
    if (f.clock && f.clock(h, PF_NVML_CLOCK_SM, &v) == PF_NVML_SUCCESS) s.sm_clock_mhz = v;
    if (f.clock && f.clock(h, PF_NVML_CLOCK_MEM, &v) == PF_NVML_SUCCESS) s.mem_clock_mhz = v;
    if (f.pcie_throughput &&
        f.pcie_throughput(h, PF_NVML_PCIE_UTIL_TX_BYTES, &v) == PF_NVML_SUCCESS)
        s.pcie_tx_kbps = v;
    if (f.pcie_throughput &&
        f.pcie_throughput(h, PF_NVML_PCIE_UTIL_RX_BYTES, &v) == PF_NVML_SUCCESS)
        s.pcie_rx_kbps = v;
    s.nvml = true;
    *out = s;
    return true;
}

void pf_nvml_testing_install(const pf_nvml_fns *fns, const char *driver_version)
{
    pf_mutex_lock(&g_lock);
    g_handle_count = 0;
    if (fns) {
        g_fns = *fns;
        g_state = NVML_LOADED;
        snprintf(g_detail, sizeof g_detail, "NVML loaded, driver %s",
                 driver_version ? driver_version : "unknown");
    } else {
        memset(&g_fns, 0, sizeof g_fns);
        g_state = NVML_MISSING;
        snprintf(g_detail, sizeof g_detail, "%s", driver_version ? driver_version : "");
    }
    pf_mutex_unlock(&g_lock);
}
