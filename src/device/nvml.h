/* Private: NVML (libnvidia-ml.so.1) loaded at run time.
 *
 * pixflow never links NVML: the library is opened with dlopen on first use,
 * once per process, and the few functions used are resolved by name. A
 * machine without the NVIDIA driver (CI, CPU-only hosts) simply reports NVML
 * as unavailable. There is no nvml.h at build time, so the handful of types
 * used are declared here; they mirror NVML's stable C ABI (the same layouts
 * and enum values since NVML 2.x; the _v2 entry points exist since driver
 * 325). Only what pixflow calls is declared.
 *
 * NVML is initialised once and never shut down: a monitor thread may be
 * sampling at any moment, and the driver cleans up at process exit.
 */
#ifndef PF_DEVICE_NVML_H
#define PF_DEVICE_NVML_H

#include <stdbool.h>
#include <stddef.h>

#include "pixflow/device.h"

/* --- NVML ABI (mirrors nvml.h) ------------------------------------------------ */

typedef int pf_nvmlReturn_t;                    /* nvmlReturn_t: 0 = NVML_SUCCESS */
typedef struct pf_nvmlDevice_st *pf_nvmlDevice_t; /* opaque device handle */

typedef struct pf_nvmlUtilization_t {
    unsigned int gpu;    /* % of the last sample period a kernel was running */
    unsigned int memory; /* % of the last sample period memory was read/written */
} pf_nvmlUtilization_t;

typedef struct pf_nvmlMemory_t {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} pf_nvmlMemory_t;

#define PF_NVML_SUCCESS 0
#define PF_NVML_TEMPERATURE_GPU 0   /* nvmlTemperatureSensors_t */
#define PF_NVML_CLOCK_SM 1          /* nvmlClockType_t (GRAPHICS = 0, SM = 1, MEM = 2) */
#define PF_NVML_CLOCK_MEM 2
#define PF_NVML_PCIE_UTIL_TX_BYTES 0 /* nvmlPcieUtilCounter_t; the value is KB/s */
#define PF_NVML_PCIE_UTIL_RX_BYTES 1
#define PF_NVML_DRIVER_VERSION_BUFFER 80 /* NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE */

/* The entry points pixflow uses. A NULL slot means the symbol is missing from
 * the loaded library; queries through it then leave their fields 0. */
typedef struct pf_nvml_fns {
    pf_nvmlReturn_t (*init)(void);                                   /* nvmlInit_v2 */
    const char *(*error_string)(pf_nvmlReturn_t);                    /* nvmlErrorString */
    pf_nvmlReturn_t (*driver_version)(char *, unsigned int);         /* nvmlSystemGetDriverVersion */
    pf_nvmlReturn_t (*handle_by_pci)(const char *, pf_nvmlDevice_t *); /* ..HandleByPciBusId_v2 */
    pf_nvmlReturn_t (*handle_by_index)(unsigned int, pf_nvmlDevice_t *); /* ..HandleByIndex_v2 */
    pf_nvmlReturn_t (*utilization)(pf_nvmlDevice_t, pf_nvmlUtilization_t *);
    pf_nvmlReturn_t (*memory)(pf_nvmlDevice_t, pf_nvmlMemory_t *);
    pf_nvmlReturn_t (*temperature)(pf_nvmlDevice_t, int, unsigned int *);
    pf_nvmlReturn_t (*power_usage)(pf_nvmlDevice_t, unsigned int *);       /* mW */
    pf_nvmlReturn_t (*power_limit)(pf_nvmlDevice_t, unsigned int *);       /* enforced, mW */
    pf_nvmlReturn_t (*clock)(pf_nvmlDevice_t, int, unsigned int *);        /* MHz */
    pf_nvmlReturn_t (*pcie_throughput)(pf_nvmlDevice_t, int, unsigned int *); /* KB/s */
} pf_nvml_fns;

/* --- pixflow side --------------------------------------------------------------- */

/* pf_nvml_available() (public, device.h) loads NVML on first use. */

/* Fills the NVML fields of `out` (gpu_util_pct .. nvml_mem_total) for the
 * CUDA device described by `props` and sets out->nvml = true. The device is
 * found by props->pci_bus_id, else by props->index (NVML's order may differ
 * from CUDA's, so the index is only a fallback). A query that fails leaves
 * its field 0. Returns false (out untouched) when NVML is unavailable, the
 * device is not a CUDA device, or NVML does not know it. Thread-safe. */
bool pf_nvml_sample(const pf_device_props *props, pf_device_sample *out);

/* Tests only: replaces the loaded NVML (or its absence) with `fns` and
 * `driver_version`, or, with fns NULL, with "not available" and the reason
 * `driver_version`. Forgets cached device handles. Not for concurrent use
 * with sampling. */
void pf_nvml_testing_install(const pf_nvml_fns *fns, const char *driver_version);

#endif
