/* `pixflow info`: what this build is, what it can use here, and (with
 * --self-check) whether the selected device really works.
 *
 * Everything is gathered first into one report, then printed as text or as
 * JSON, so both outputs always say the same thing.
 *
 * JSON keys (stable; new keys may be added, none renamed or removed):
 *   version            string  library version actually loaded
 *   tool_version       string  version the tool was built with
 *   build              object  version, build_type, c_compiler, cuda (bool),
 *                              cuda_compiler, cuda_arch, sanitize   (pf_get_build_info)
 *   backends           array   {name, type, compiled, available, device_count, detail}
 *   devices            array   {spec, type, index, name, cc_major, cc_minor,
 *                              multiprocessors, max_threads_per_block, async_engines,
 *                              unified_addressing, concurrent_managed, l2_cache_bytes,
 *                              pci_bus_id, memory_total, memory_free (null when the
 *                              query failed), memory_error (string|null),
 *                              nvml (null, or {gpu_util_pct, mem_util_pct, temperature_c,
 *                              power_mw, power_limit_mw, sm_clock_mhz, mem_clock_mhz,
 *                              pcie_tx_kbps, pcie_rx_kbps, mem_used, mem_total})}
 *   nvml               object  {available, detail}
 *   nn_libraries       array   libraries the nn executors load at run time (CUDA
 *                              builds: cuDNN, cuBLAS, cuBLASLt; empty otherwise):
 *                              {name, soname, loaded, version (string|null),
 *                              path (string|null), detail (string|null)}
 *   selected_device    object  {spec, requested, source ("--device", "PIXFLOW_DEVICE"
 *                              or "default")}
 *   defaults           object  {device_allocator_cap_fraction, device_allocator_cap_bytes,
 *                              pinned_pool_blocks, pinned_pool_block_bytes,
 *                              pinned_pool_bytes}
 *   self_check         object  only with --self-check: {ok, device, bytes, rounds,
 *                              failed_step (string|null), error (string|null),
 *                              copies: {host_to_pinned, pinned_to_device,
 *                              device_to_device, device_to_host} each {ms, gbps}
 *                              (second round), allocator: {second_round_cache_hits,
 *                              second_round_runtime_allocs}}
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "selfcheck.h"
#include "pixflow/pixflow.h"

/* Pool defaults the pixflow job commands (segment, reproject, run, ...) use
 * unless told otherwise: the device allocator may hold at most this fraction
 * of the device's memory (the rest stays for cuDNN/cuBLAS workspaces, other
 * processes and the driver), and host<->device transfers go through a pinned
 * pool of 8 blocks of 32 MiB (one 4K RGBA frame is 31.6 MiB; 8 blocks keep
 * decode, upload and download overlapped with room to spare). */
#define INFO_DEVICE_CAP_FRACTION 0.90
#define INFO_PINNED_BLOCKS 8
#define INFO_PINNED_BLOCK_BYTES ((size_t)32 << 20)


#define MAX_DEVICES 64
#define MAX_NN_LIBS 8

static const cli_option info_options[] = {
    {"json", NULL, "print one JSON object instead of text (keys listed in cmd_info.c)"},
    {"device", "SPEC", "device to select: auto, cpu, cuda, cuda:N (default $PIXFLOW_DEVICE, else auto)"},
    {"self-check", NULL, "copy 8 MiB host->pinned->device->device->host on the selected "
                         "device, verify, time"},
    {"help", NULL, "show this help"},
    {NULL, NULL, NULL},
};

static void info_usage(FILE *f)
{
    fprintf(f, "usage: pixflow info [--json] [--device SPEC] [--self-check]\n\n"
               "Shows the version and build, the backends compiled in and whether they are\n"
               "usable, every device with its properties, NVML counters for NVIDIA GPUs, the\n"
               "libraries loaded at run time (cuDNN, cuBLAS) with their versions, the\n"
               "device selected, and the pool defaults the pixflow jobs use.\n\n"
               "options:\n");
    cli_print_options(f, info_options);
    fprintf(f, "\nexit status: 0 ok; 1 the device is not there or the self-check failed;\n"
               "2 bad usage, including a malformed --device or PIXFLOW_DEVICE spec\n");
}

/* Report ---------------------------------------------------------------------------------- */

typedef struct device_report {
    pf_device *dev;
    const pf_device_props *props;
    bool mem_ok;
    size_t mem_free, mem_total;
    char mem_error[256];
    bool have_nvml;
    pf_device_sample sample;
} device_report;


typedef struct info_report {
    const pf_build_info *build;
    pf_backend_info backends[PF_DEVICE_TYPE_COUNT];
    device_report devices[MAX_DEVICES];
    int device_count;
    bool nvml;
    char nvml_detail[256];
    pf_nn_library nn_libs[MAX_NN_LIBS];
    int nn_lib_count;
    pf_device *selected;
    const char *requested;
    const char *source;
    bool ran_selfcheck;
    selfcheck_report sc;
} info_report;

static void gather_device(device_report *d, pf_device *dev)
{
    d->dev = dev;
    d->props = pf_device_props_get(dev);
    pf_status st = pf_device_memory(dev, &d->mem_free, &d->mem_total);
    d->mem_ok = st == PF_OK;
    if (!d->mem_ok)
        snprintf(d->mem_error, sizeof d->mem_error, "%s: %s", pf_status_str(st), pf_last_error());
    if (pf_device_get_type(dev) != PF_DEVICE_CUDA) return;

    /* One NVML sample through the public monitor (no thread: period 0). */
    pf_monitor_params mp = pf_monitor_params_default();
    mp.device = dev;
    pf_monitor *mon = NULL;
    if (pf_monitor_create(&mp, &mon) == PF_OK && pf_monitor_sample(mon, &d->sample) == PF_OK)
        d->have_nvml = d->sample.nvml;
    pf_monitor_destroy(&mon);
}

static void gather(info_report *r)
{
    r->build = pf_get_build_info();
    for (int t = 0; t < PF_DEVICE_TYPE_COUNT; t++)
        pf_backend_info_get((pf_device_type)t, &r->backends[t]);
    for (int t = 0; t < PF_DEVICE_TYPE_COUNT; t++) {
        int n = pf_device_count((pf_device_type)t);
        for (int i = 0; i < n && r->device_count < MAX_DEVICES; i++) {
            pf_device *dev = NULL;
            if (pf_device_get((pf_device_type)t, i, &dev) == PF_OK)
                gather_device(&r->devices[r->device_count++], dev);
        }
    }
    r->nvml = pf_nvml_available(r->nvml_detail, sizeof r->nvml_detail);
    int n = pf_nn_libraries(r->nn_libs, MAX_NN_LIBS);
    r->nn_lib_count = n < MAX_NN_LIBS ? n : MAX_NN_LIBS;
}


/* Text output ---------------------------------------------------------------------------- */

static void print_nvml_sample(const pf_device_sample *s)
{
    char used[32], total[32];
    printf("           nvml: gpu %u%%, memory %u%%, %u C, power %.1f W of %.1f W, "
           "SM %u MHz, mem %u MHz,\n"
           "                 PCIe tx %u KB/s rx %u KB/s, %s used of %s\n",
           s->gpu_util_pct, s->mem_util_pct, s->temperature_c, s->power_mw / 1000.0,
           s->power_limit_mw / 1000.0, s->sm_clock_mhz, s->mem_clock_mhz, s->pcie_tx_kbps,
           s->pcie_rx_kbps, cli_fmt_bytes(used, sizeof used, s->nvml_mem_used),
           cli_fmt_bytes(total, sizeof total, s->nvml_mem_total));
}

static void print_text(const info_report *r)
{
    const pf_build_info *b = r->build;
    char x[32], y[32], z[32];
    printf("pixflow %s (libpixflow %s)\n", PF_VERSION_STRING, pf_version_string());
    printf("build:     %s, %s, sanitizers: %s\n", b->build_type, b->c_compiler,
           b->sanitize[0] ? b->sanitize : "none");
    if (b->cuda)
        printf("           CUDA backend built with %s for arch %s\n", b->cuda_compiler,
               b->cuda_arch);
    else
        printf("           CUDA backend not compiled in\n");

    printf("backends:\n");
    for (int t = 0; t < PF_DEVICE_TYPE_COUNT; t++) {
        const pf_backend_info *bi = &r->backends[t];
        if (!bi->compiled)
            printf("  %-8s not compiled in\n", bi->name);
        else if (bi->available)
            printf("  %-8s compiled in, available, %d device%s%s%s\n", bi->name,
                   bi->device_count, bi->device_count == 1 ? "" : "s", bi->detail[0] ? ": " : "",
                   bi->detail);
        else
            printf("  %-8s compiled in, not available: %s\n", bi->name,
                   bi->detail[0] ? bi->detail : "no device");
    }

    printf("devices:\n");
    for (int i = 0; i < r->device_count; i++) {
        const device_report *d = &r->devices[i];
        const pf_device_props *p = d->props;
        printf("  %-8s %s\n", pf_device_spec(d->dev), p->name);
        if (p->type == PF_DEVICE_CUDA) {
            printf("           compute capability %d.%d, %d SMs, %d threads/block, "
                   "%d copy engines\n", p->cc_major, p->cc_minor, p->multiprocessors,
                   p->max_threads_per_block, p->async_engines);
        } else {
            printf("           %d cores\n", p->multiprocessors);
        }
        if (d->mem_ok)
            printf("           memory %s total, %s free", cli_fmt_bytes(x, sizeof x, d->mem_total),
                   cli_fmt_bytes(y, sizeof y, d->mem_free));
        else
            printf("           memory %s total (free unknown: %s)",
                   cli_fmt_bytes(x, sizeof x, p->total_memory), d->mem_error);
        if (p->l2_cache_bytes) printf(", L2 %s", cli_fmt_bytes(z, sizeof z, p->l2_cache_bytes));
        if (p->pci_bus_id[0]) printf(", PCI %s", p->pci_bus_id);
        printf("\n");
        if (p->type == PF_DEVICE_CUDA) {
            printf("           unified addressing %s, concurrent managed memory %s\n",
                   p->unified_addressing ? "yes" : "no", p->concurrent_managed ? "yes" : "no");
            if (d->have_nvml)
                print_nvml_sample(&d->sample);
            else
                printf("           nvml: no sample (%s)\n",
                       r->nvml ? "NVML does not know this device" : "NVML not available");
        }
    }

    printf("nvml:      %s: %s\n", r->nvml ? "available" : "not available", r->nvml_detail);
    if (r->nn_lib_count == 0)
        printf("nn libs:   none loaded at run time (CUDA not compiled in)\n");
    for (int i = 0; i < r->nn_lib_count; i++) {
        const pf_nn_library *l = &r->nn_libs[i];
        printf("%s%-9s ", i ? "           " : "nn libs:   ", l->name);
        if (l->loaded)
            printf("%s (%s)\n", l->version, l->path[0] ? l->path : l->soname);
        else
            printf("not available: %s\n", l->detail);
    }

    printf("selected:  %s (spec \"%s\" from %s", pf_device_spec(r->selected), r->requested,
           strcmp(r->source, "default") == 0 ? "the default; PIXFLOW_DEVICE is unset"
                                             : r->source);
    if (strcmp(r->requested, "auto") == 0 &&
        pf_device_get_type(r->selected) == PF_DEVICE_CPU)
        printf("; no usable CUDA device");
    printf(")\n");

    const pf_device_props *sp = pf_device_props_get(r->selected);
    size_t cap = (size_t)((double)sp->total_memory * INFO_DEVICE_CAP_FRACTION);
    printf("defaults for pixflow jobs:\n");
    printf("  device allocator cap  %.0f%% of device memory (%s on %s)\n",
           INFO_DEVICE_CAP_FRACTION * 100, cli_fmt_bytes(x, sizeof x, cap),
           pf_device_spec(r->selected));
    printf("  pinned host pool      %d blocks x %s = %s\n", INFO_PINNED_BLOCKS,
           cli_fmt_bytes(y, sizeof y, INFO_PINNED_BLOCK_BYTES),
           cli_fmt_bytes(z, sizeof z, INFO_PINNED_BLOCK_BYTES * INFO_PINNED_BLOCKS));

    if (!r->ran_selfcheck) return;
    const selfcheck_report *sc = &r->sc;
    if (!sc->ok) {
        printf("self-check: FAILED on %s at step '%s': %s\n", pf_device_spec(r->selected),
               sc->failed_step, sc->error);
        return;
    }
    printf("self-check: ok (%s, %s x 2 rounds byte-exact; allocator reused 2/2 blocks; "
           "round 2:", pf_device_spec(r->selected), cli_fmt_bytes(x, sizeof x, SELFCHECK_BYTES));
    for (int i = 0; i < COPY_COUNT; i++)
        printf("%s %s %.3f ms %.2f GB/s", i ? "," : "", sc->copies[i].label, sc->copies[i].ms,
               selfcheck_gbps(sc->copies[i].ms));
    printf(")\n");
}

/* JSON output ----------------------------------------------------------------------------- */

static void print_json(const info_report *r)
{
    cli_json j;
    cli_json_init(&j, stdout);
    const pf_build_info *b = r->build;
    cli_json_object_begin(&j, NULL);
    cli_json_string(&j, "version", pf_version_string());
    cli_json_string(&j, "tool_version", PF_VERSION_STRING);

    cli_json_object_begin(&j, "build");
    cli_json_string(&j, "version", b->version);
    cli_json_string(&j, "build_type", b->build_type);
    cli_json_string(&j, "c_compiler", b->c_compiler);
    cli_json_bool(&j, "cuda", b->cuda != 0);
    cli_json_string(&j, "cuda_compiler", b->cuda_compiler);
    cli_json_string(&j, "cuda_arch", b->cuda_arch);
    cli_json_string(&j, "sanitize", b->sanitize);
    cli_json_object_end(&j);

    cli_json_array_begin(&j, "backends");
    for (int t = 0; t < PF_DEVICE_TYPE_COUNT; t++) {
        const pf_backend_info *bi = &r->backends[t];
        cli_json_object_begin(&j, NULL);
        cli_json_string(&j, "name", bi->name);
        cli_json_string(&j, "type", pf_device_type_name(bi->type));
        cli_json_bool(&j, "compiled", bi->compiled);
        cli_json_bool(&j, "available", bi->available);
        cli_json_int(&j, "device_count", bi->device_count);
        cli_json_string(&j, "detail", bi->detail);
        cli_json_object_end(&j);
    }
    cli_json_array_end(&j);

    cli_json_array_begin(&j, "devices");
    for (int i = 0; i < r->device_count; i++) {
        const device_report *d = &r->devices[i];
        const pf_device_props *p = d->props;
        cli_json_object_begin(&j, NULL);
        cli_json_string(&j, "spec", pf_device_spec(d->dev));
        cli_json_string(&j, "type", pf_device_type_name(p->type));
        cli_json_int(&j, "index", p->index);
        cli_json_string(&j, "name", p->name);
        cli_json_int(&j, "cc_major", p->cc_major);
        cli_json_int(&j, "cc_minor", p->cc_minor);
        cli_json_int(&j, "multiprocessors", p->multiprocessors);
        cli_json_int(&j, "max_threads_per_block", p->max_threads_per_block);
        cli_json_int(&j, "async_engines", p->async_engines);
        cli_json_bool(&j, "unified_addressing", p->unified_addressing);
        cli_json_bool(&j, "concurrent_managed", p->concurrent_managed);
        cli_json_uint(&j, "l2_cache_bytes", p->l2_cache_bytes);
        cli_json_string(&j, "pci_bus_id", p->pci_bus_id);
        cli_json_uint(&j, "memory_total", d->mem_ok ? d->mem_total : p->total_memory);
        if (d->mem_ok) {
            cli_json_uint(&j, "memory_free", d->mem_free);
            cli_json_null(&j, "memory_error");
        } else {
            cli_json_null(&j, "memory_free");
            cli_json_string(&j, "memory_error", d->mem_error);
        }
        if (d->have_nvml) {
            const pf_device_sample *s = &d->sample;
            cli_json_object_begin(&j, "nvml");
            cli_json_uint(&j, "gpu_util_pct", s->gpu_util_pct);
            cli_json_uint(&j, "mem_util_pct", s->mem_util_pct);
            cli_json_uint(&j, "temperature_c", s->temperature_c);
            cli_json_uint(&j, "power_mw", s->power_mw);
            cli_json_uint(&j, "power_limit_mw", s->power_limit_mw);
            cli_json_uint(&j, "sm_clock_mhz", s->sm_clock_mhz);
            cli_json_uint(&j, "mem_clock_mhz", s->mem_clock_mhz);
            cli_json_uint(&j, "pcie_tx_kbps", s->pcie_tx_kbps);
            cli_json_uint(&j, "pcie_rx_kbps", s->pcie_rx_kbps);
            cli_json_uint(&j, "mem_used", s->nvml_mem_used);
            cli_json_uint(&j, "mem_total", s->nvml_mem_total);
            cli_json_object_end(&j);
        } else {
            cli_json_null(&j, "nvml");
        }
        cli_json_object_end(&j);
    }
    cli_json_array_end(&j);

    cli_json_object_begin(&j, "nvml");
    cli_json_bool(&j, "available", r->nvml);
    cli_json_string(&j, "detail", r->nvml_detail);
    cli_json_object_end(&j);

    cli_json_array_begin(&j, "nn_libraries");
    for (int i = 0; i < r->nn_lib_count; i++) {
        const pf_nn_library *l = &r->nn_libs[i];
        cli_json_object_begin(&j, NULL);
        cli_json_string(&j, "name", l->name);
        cli_json_string(&j, "soname", l->soname);
        cli_json_bool(&j, "loaded", l->loaded);
        cli_json_string(&j, "version", l->version[0] ? l->version : NULL);
        cli_json_string(&j, "path", l->path[0] ? l->path : NULL);
        cli_json_string(&j, "detail", l->detail[0] ? l->detail : NULL);
        cli_json_object_end(&j);
    }
    cli_json_array_end(&j);

    cli_json_object_begin(&j, "selected_device");
    cli_json_string(&j, "spec", pf_device_spec(r->selected));
    cli_json_string(&j, "requested", r->requested);
    cli_json_string(&j, "source", r->source);
    cli_json_object_end(&j);

    const pf_device_props *sp = pf_device_props_get(r->selected);
    cli_json_object_begin(&j, "defaults");
    cli_json_double(&j, "device_allocator_cap_fraction", INFO_DEVICE_CAP_FRACTION);
    cli_json_uint(&j, "device_allocator_cap_bytes",
                  (size_t)((double)sp->total_memory * INFO_DEVICE_CAP_FRACTION));
    cli_json_int(&j, "pinned_pool_blocks", INFO_PINNED_BLOCKS);
    cli_json_uint(&j, "pinned_pool_block_bytes", INFO_PINNED_BLOCK_BYTES);
    cli_json_uint(&j, "pinned_pool_bytes", INFO_PINNED_BLOCK_BYTES * INFO_PINNED_BLOCKS);
    cli_json_object_end(&j);

    if (r->ran_selfcheck) {
        const selfcheck_report *sc = &r->sc;
        cli_json_object_begin(&j, "self_check");
        cli_json_bool(&j, "ok", sc->ok);
        cli_json_string(&j, "device", pf_device_spec(r->selected));
        cli_json_uint(&j, "bytes", SELFCHECK_BYTES);
        cli_json_int(&j, "rounds", 2);
        cli_json_string(&j, "failed_step", sc->ok ? NULL : sc->failed_step);
        cli_json_string(&j, "error", sc->ok ? NULL : sc->error);
        cli_json_object_begin(&j, "copies");
        for (int i = 0; i < COPY_COUNT; i++) {
            cli_json_object_begin(&j, sc->copies[i].name);
            cli_json_double(&j, "ms", sc->copies[i].ms);
            cli_json_double(&j, "gbps", selfcheck_gbps(sc->copies[i].ms));
            cli_json_object_end(&j);
        }
        cli_json_object_end(&j);
        cli_json_object_begin(&j, "allocator");
        cli_json_uint(&j, "second_round_cache_hits", sc->round2_cache_hits);
        cli_json_uint(&j, "second_round_runtime_allocs", sc->round2_runtime_allocs);
        cli_json_object_end(&j);
        cli_json_object_end(&j);
    }
    cli_json_object_end(&j);
    cli_json_finish(&j);
}

/* Command ------------------------------------------------------------------------------------ */

int cmd_info(int argc, char **argv)
{
    cli_args a;
    if (!cli_parse("info", info_options, argc, argv, &a)) return CLI_EXIT_USAGE;
    if (cli_flag(info_options, &a, "help")) {
        info_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (a.positional_count > 0) {
        fprintf(stderr, "pixflow info: unexpected argument '%s' (see 'pixflow info --help')\n",
                a.positional[0]);
        return CLI_EXIT_USAGE;
    }

    info_report *r = calloc(1, sizeof *r);
    if (!r) {
        fprintf(stderr, "pixflow info: out of memory\n");
        return CLI_EXIT_FAIL;
    }
    const char *opt_device = cli_value(info_options, &a, "device");
    const char *env_device = getenv("PIXFLOW_DEVICE");
    if (opt_device && opt_device[0]) {
        r->requested = opt_device;
        r->source = "--device";
    } else if (env_device && env_device[0]) {
        r->requested = env_device;
        r->source = "PIXFLOW_DEVICE";
    } else {
        r->requested = "auto";
        r->source = "default";
    }
    /* A device that is asked for and not there is an error, before anything
     * else is printed, so the message is not lost in the report. NULL lets
     * the library read PIXFLOW_DEVICE itself (its message names the source). */
    pf_status st = pf_device_select(opt_device && opt_device[0] ? opt_device : NULL,
                                    &r->selected);
    if (st != PF_OK) {
        fprintf(stderr, "pixflow info: %s: %s\n", pf_status_str(st), pf_last_error());
        fprintf(stderr, "pixflow info: devices here:");
        for (int t = 0; t < PF_DEVICE_TYPE_COUNT; t++) {
            int n = pf_device_count((pf_device_type)t);
            for (int i = 0; i < n; i++) {
                pf_device *d = NULL;
                if (pf_device_get((pf_device_type)t, i, &d) == PF_OK)
                    fprintf(stderr, " %s", pf_device_spec(d));
            }
        }
        fprintf(stderr, "\n");
        free(r);
        /* A malformed spec is a usage error; a well-formed one naming a
         * device that is not here is a failure of the run. */
        return st == PF_ERR_INVALID ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
    }

    gather(r);
    if (cli_flag(info_options, &a, "self-check")) {
        r->ran_selfcheck = true;
        run_selfcheck(r->selected, &r->sc);
    }
    if (cli_flag(info_options, &a, "json"))
        print_json(r);
    else
        print_text(r);
    fflush(stdout);

    int rc = CLI_EXIT_OK;
    if (r->ran_selfcheck && !r->sc.ok) {
        fprintf(stderr, "pixflow info: self-check failed on %s at step '%s': %s\n",
                pf_device_spec(r->selected), r->sc.failed_step, r->sc.error);
        rc = CLI_EXIT_FAIL;
    }
    free(r);
    return rc;
}
