/* libnvjpeg loaded at run time (nvjpeg.h says why), and the JPEG header scan
 * that picks a decode path without any library.
 *
 * One mutex guards the load; the table is published only when every
 * function resolved, so it is either complete or absent. The handle is
 * never closed once loaded. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dlfcn.h>

#include "../core/error.h"
#include "../core/sys.h"
#include "../device/dl.h"
#include "nvjpeg.h"
#include "nvjpeg_api.h"
#include "nvjpeg_impl.h"
#ifdef PF_HAVE_CUDA
#include "../cuda/cuda_internal.h"
#endif

pf_nvjpeg_fns pf_nvjpeg;

static pf_mutex g_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_tried, g_loaded;
static char g_why[512];
static char g_version[320];

#define NVJ_STR_(x) #x
#define NVJ_STR(x) NVJ_STR_(x)
#define RESOLVE_SLOT(name, params) \
    PF_DL_RESOLVE(lib, t.name, NVJ_STR(name)); \
    if (!t.name && !missing) missing = NVJ_STR(name);

/* Tries one soname; true when it loaded completely. */
static bool try_load(const char *soname, char *why, size_t why_size)
{
    void *lib = pf_dl_open(soname, why, why_size);
    if (!lib) return false;
    char path[256] = "";
    pf_dl_path(lib, path, sizeof path);
    pf_nvjpeg_fns t;
    memset(&t, 0, sizeof t);
    const char *missing = NULL;
    PF_NVJPEG_FUNCS(RESOLVE_SLOT)
    if (missing) {
        snprintf(why, why_size, "%s lacks %s (an nvJPEG older than CUDA 11?)",
                 path[0] ? path : soname, missing);
        dlclose(lib);
        return false;
    }
    int major = 0, minor = 0, patch = 0;
    t.nvjpegGetProperty(PFNV_MAJOR_VERSION, &major);
    t.nvjpegGetProperty(PFNV_MINOR_VERSION, &minor);
    t.nvjpegGetProperty(PFNV_PATCH_LEVEL, &patch);
    snprintf(g_version, sizeof g_version, "%d.%d.%d (%s)", major, minor, patch,
             path[0] ? path : soname);
    pf_nvjpeg = t;
    return true;
}

static void load_locked(void)
{
    if (g_tried) return;
    g_tried = true;
    const char *env = getenv("PF_NVJPEG_LIBRARY");
    char why1[192] = "", why2[192] = "";
    if (env && env[0]) {
        g_loaded = try_load(env, why1, sizeof why1);
        if (!g_loaded) snprintf(g_why, sizeof g_why, "%s", why1);
        return;
    }
    /* CUDA 13's soname first; an unversioned one (a -dev link or another
     * major with the same ABI for what we use) second. */
    g_loaded = try_load("libnvjpeg.so.13", why1, sizeof why1) ||
               try_load("libnvjpeg.so", why2, sizeof why2);
    if (!g_loaded) snprintf(g_why, sizeof g_why, "%s; %s", why1, why2);
}

bool pf_nvjpeg_available(char *why, size_t why_size)
{
    pf_mutex_lock(&g_lock);
    load_locked();
    bool ok = g_loaded;
    if (why && why_size) snprintf(why, why_size, "%s", ok ? "" : g_why);
    pf_mutex_unlock(&g_lock);
    return ok;
}

const char *pf_nvjpeg_version(void)
{
    return pf_nvjpeg_available(NULL, 0) ? g_version : "";
}

pf_status pf_nvjpeg_use_device(pf_device *dev)
{
#ifdef PF_HAVE_CUDA
    return pf_cuda_use_device(dev);
#else
    (void)dev;
    return PF_OK;
#endif
}

pf_status pf_nvjpeg_require(pf_device *dev)
{
    if (pf_device_get_type(dev) != PF_DEVICE_CUDA)
        return pf_set_error(PF_ERR_UNSUPPORTED, "nvJPEG: %s is not a CUDA device",
                            pf_device_spec(dev));
    char why[512];
    if (!pf_nvjpeg_available(why, sizeof why))
        return pf_set_error(PF_ERR_UNSUPPORTED, "nvJPEG is not available: %s", why);
    return pf_nvjpeg_use_device(dev);
}

const char *pf_jpeg_path_name(pf_jpeg_path p)
{
    switch (p) {
    case PF_JPEG_PATH_HW: return "hardware";
    case PF_JPEG_PATH_GPU: return "gpu";
    case PF_JPEG_PATH_CPU: return "cpu";
    default: return "?";
    }
}

const char *pf_nvjpeg_status_name(int st)
{
    static const char *const names[] = {
        "success", "not initialized", "invalid parameter", "bad JPEG", "JPEG not supported",
        "allocator failure", "execution failed", "architecture mismatch", "internal error",
        "implementation not supported", "incomplete bitstream"};
    return st >= 0 && st < (int)(sizeof names / sizeof names[0]) ? names[st] : "unknown status";
}

/* Header scan -------------------------------------------------------------------------------- */

static bool is_sof(int m)
{
    /* C0..CF except DHT (C4), JPG (C8) and DAC (CC). */
    return m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc;
}

pf_status pf_jpeg_scan(const uint8_t *p, size_t n, const char *name, pf_jpeg_header *h)
{
    memset(h, 0, sizeof *h);
    if (n < 4 || p[0] != 0xff || p[1] != 0xd8)
        return pf_set_error(PF_ERR_FORMAT, "%s: not a JPEG file (no SOI marker)", name);
    size_t i = 2;
    for (;;) {
        while (i < n && p[i] == 0xff && i + 1 < n && p[i + 1] == 0xff) i++; /* fill bytes */
        if (i + 4 > n || p[i] != 0xff)
            return pf_set_error(PF_ERR_FORMAT, "corrupt JPEG: %s: no frame header before byte %zu",
                                name, i);
        int m = p[i + 1];
        if (m == 0xd9 || m == 0xda)
            return pf_set_error(PF_ERR_FORMAT, "corrupt JPEG: %s: scan before the frame header",
                                name);
        if (m == 0x01 || (m >= 0xd0 && m <= 0xd7)) { /* standalone markers */
            i += 2;
            continue;
        }
        size_t len = (size_t)p[i + 2] << 8 | p[i + 3];
        if (len < 2 || i + 2 + len > n)
            return pf_set_error(PF_ERR_FORMAT, "corrupt JPEG: %s: marker 0xff%02x at byte %zu "
                                "runs past the end", name, m, i);
        if (is_sof(m)) {
            const uint8_t *s = p + i + 4;
            if (len < 8)
                return pf_set_error(PF_ERR_FORMAT, "corrupt JPEG: %s: short frame header", name);
            h->sof = m;
            h->precision = s[0];
            h->height = s[1] << 8 | s[2];
            h->width = s[3] << 8 | s[4];
            h->components = s[5];
            if ((size_t)h->components * 3 + 8 > len)
                return pf_set_error(PF_ERR_FORMAT, "corrupt JPEG: %s: frame header lists %d "
                                    "components in %zu bytes", name, h->components, len);
            break;
        }
        i += 2 + len;
    }
    /* EOI, possibly followed by padding some writers add. */
    for (size_t k = n, stop = n > 64 ? n - 64 : 0; k >= stop + 2; k--)
        if (p[k - 2] == 0xff && p[k - 1] == 0xd9) {
            h->has_eoi = true;
            break;
        }
    h->gpu_ok = (h->sof == 0xc0 || h->sof == 0xc1) && h->precision == 8 &&
                (h->components == 1 || h->components == 3) && h->has_eoi && h->width > 0 &&
                h->height > 0;
    return PF_OK;
}
