/* cuDNN and cuBLAS loaded at run time (dl_libs.h says why and how).
 *
 * One mutex guards the load state and the tables. The first caller of
 * pf_cux_libs_require() or pf_nn_libraries() opens the three libraries and
 * resolves every function; the tables are published only for a library
 * that has all of them, so a slot is either NULL everywhere or usable.
 * Handles are never closed once a library is used. */
#define PF_CUX_DL_NO_MACROS
#include <stdio.h>
#include <string.h>

#include <dlfcn.h>

#include "../../core/error.h"
#include "../../core/sys.h"
#include "../../device/dl.h"
#include "dl_libs.h"
#include "pixflow/nn.h"

#define DL_STR_(x) #x
#define DL_STR(x) DL_STR_(x)

pf_cudnn_fns pf_cudnn;
pf_cublas_fns pf_cublas;
pf_cublaslt_fns pf_cublaslt;

/* The major versions the headers are: a library of another major has
 * another ABI (and soname). */
#define CUDNN_SONAME "libcudnn.so." DL_STR(CUDNN_MAJOR)
#define CUBLAS_SONAME "libcublas.so." DL_STR(CUBLAS_VER_MAJOR)
#define CUBLASLT_SONAME "libcublasLt.so." DL_STR(CUBLAS_VER_MAJOR)

enum { LIB_CUDNN, LIB_CUBLAS, LIB_CUBLASLT, LIB_COUNT };

typedef struct lib_state {
    const char *name;
    const char *soname;
    bool loaded;
    char version[32];
    char path[256];
    char detail[256];
} lib_state;

static pf_mutex g_lock = PTHREAD_MUTEX_INITIALIZER; /* see nvml.c: no init hook */
static bool g_tried;
static lib_state g_libs[LIB_COUNT] = {
    [LIB_CUDNN] = {.name = "cuDNN", .soname = CUDNN_SONAME},
    [LIB_CUBLAS] = {.name = "cuBLAS", .soname = CUBLAS_SONAME},
    [LIB_CUBLASLT] = {.name = "cuBLASLt", .soname = CUBLASLT_SONAME},
};

/* Resolves every function of a list into table t; `missing` receives the
 * first symbol not found. The slot names are the exported names (cuBLAS's
 * _v2 macros have expanded), and so are the strings. */
#define RESOLVE_SLOT(f) \
    PF_DL_RESOLVE(lib, t.f, DL_STR(f)); \
    if (!t.f && !missing) missing = DL_STR(f);

/* Opens l->soname; on failure l->detail says why. */
static void *open_lib(lib_state *l)
{
    l->loaded = false;
    l->version[0] = l->path[0] = l->detail[0] = '\0';
    void *lib = pf_dl_open(l->soname, l->detail, sizeof l->detail);
    if (lib) pf_dl_path(lib, l->path, sizeof l->path);
    return lib;
}

/* A library that lacks a function is closed and reported, never half used. */
static bool check_complete(lib_state *l, void *lib, const char *missing)
{
    if (!missing) return true;
    snprintf(l->detail, sizeof l->detail, "%s lacks %s (a different or broken build?)",
             l->path[0] ? l->path : l->soname, missing);
    dlclose(lib);
    return false;
}

static void load_cudnn(void)
{
    lib_state *l = &g_libs[LIB_CUDNN];
    void *lib = open_lib(l);
    if (!lib) return;
    pf_cudnn_fns t;
    memset(&t, 0, sizeof t);
    const char *missing = NULL;
    PF_CUDNN_FUNCS(RESOLVE_SLOT)
    if (!check_complete(l, lib, missing)) return;
    /* cuDNN 9: major * 10000 + minor * 100 + patch. */
    size_t v = t.cudnnGetVersion();
    snprintf(l->version, sizeof l->version, "%zu.%zu.%zu", v / 10000, v / 100 % 100, v % 100);
    pf_cudnn = t;
    l->loaded = true;
}

static void load_cublas(void)
{
    lib_state *l = &g_libs[LIB_CUBLAS];
    void *lib = open_lib(l);
    if (!lib) return;
    pf_cublas_fns t;
    memset(&t, 0, sizeof t);
    const char *missing = NULL;
    PF_CUBLAS_FUNCS(RESOLVE_SLOT)
    if (!check_complete(l, lib, missing)) return;
    int major = 0, minor = 0, patch = 0;
    t.cublasGetProperty(MAJOR_VERSION, &major);
    t.cublasGetProperty(MINOR_VERSION, &minor);
    t.cublasGetProperty(PATCH_LEVEL, &patch);
    snprintf(l->version, sizeof l->version, "%d.%d.%d", major, minor, patch);
    pf_cublas = t;
    l->loaded = true;
}

static void load_cublaslt(void)
{
    lib_state *l = &g_libs[LIB_CUBLASLT];
    void *lib = open_lib(l);
    if (!lib) return;
    pf_cublaslt_fns t;
    memset(&t, 0, sizeof t);
    const char *missing = NULL;
    PF_CUBLASLT_FUNCS(RESOLVE_SLOT)
    if (!check_complete(l, lib, missing)) return;
    size_t v = t.cublasLtGetVersion(); /* major * 10000 + minor * 100 + patch */
    snprintf(l->version, sizeof l->version, "%zu.%zu.%zu", v / 10000, v / 100 % 100, v % 100);
    pf_cublaslt = t;
    l->loaded = true;
}

/* Under g_lock. */
static void load_locked(void)
{
    if (g_tried) return;
    g_tried = true;
    memset(&pf_cudnn, 0, sizeof pf_cudnn);
    memset(&pf_cublas, 0, sizeof pf_cublas);
    memset(&pf_cublaslt, 0, sizeof pf_cublaslt);
    load_cudnn();
    load_cublaslt();
    load_cublas();
}

pf_status pf_cux_libs_require(void)
{
    pf_mutex_lock(&g_lock);
    load_locked();
    const lib_state *bad = NULL;
    for (int i = 0; i < LIB_COUNT && !bad; i++)
        if (!g_libs[i].loaded) bad = &g_libs[i];
    /* Copied under the lock: a test may reload meanwhile. */
    char name[32] = "", soname[64] = "", detail[256] = "";
    if (bad) {
        snprintf(name, sizeof name, "%s", bad->name);
        snprintf(soname, sizeof soname, "%s", bad->soname);
        snprintf(detail, sizeof detail, "%s", bad->detail);
    }
    pf_mutex_unlock(&g_lock);
    if (!bad) return PF_OK;
    return pf_set_error(PF_ERR_UNSUPPORTED,
                        "nn cuda: the CUDA nn executor needs %s (%s), which pixflow loads at "
                        "run time: %s; install it (or put it on LD_LIBRARY_PATH), or run the "
                        "model on the CPU",
                        name, soname, detail);
}

void pf_cux_libs_testing_reload(const char *cudnn, const char *cublas, const char *cublaslt)
{
    pf_mutex_lock(&g_lock);
    g_libs[LIB_CUDNN].soname = cudnn ? cudnn : CUDNN_SONAME;
    g_libs[LIB_CUBLAS].soname = cublas ? cublas : CUBLAS_SONAME;
    g_libs[LIB_CUBLASLT].soname = cublaslt ? cublaslt : CUBLASLT_SONAME;
    g_tried = false;
    load_locked();
    pf_mutex_unlock(&g_lock);
}

int pf_nn_libraries(pf_nn_library *out, int cap)
{
    pf_mutex_lock(&g_lock);
    load_locked();
    for (int i = 0; out && i < cap && i < LIB_COUNT; i++) {
        const lib_state *l = &g_libs[i];
        pf_nn_library *o = &out[i];
        memset(o, 0, sizeof *o);
        o->name = l->name;
        o->soname = l->soname;
        o->loaded = l->loaded;
        snprintf(o->version, sizeof o->version, "%s", l->version);
        snprintf(o->path, sizeof o->path, "%s", l->path);
        snprintf(o->detail, sizeof o->detail, "%s", l->detail);
    }
    pf_mutex_unlock(&g_lock);
    return LIB_COUNT;
}
