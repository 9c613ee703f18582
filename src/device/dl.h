/* Private: helpers for libraries pixflow loads at run time instead of
 * linking them (NVML here; cuDNN and cuBLAS in src/nn/cuda/dl_libs.c), so
 * that a machine without them still loads libpixflow and reports what is
 * missing instead of failing in the dynamic loader. */
#ifndef PF_DEVICE_DL_H
#define PF_DEVICE_DL_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* dlopen(soname, RTLD_NOW | RTLD_LOCAL). NULL when it fails, with
 * "<soname> not found (dlopen: <reason>)" in why (may be NULL). Handles are
 * meant to stay open for the life of the process: function pointers taken
 * from them are kept in tables. Thread-safe. */
void *pf_dl_open(const char *soname, char *why, size_t why_size);

/* The file `lib` was loaded from (the path the loader resolved the soname
 * to); false, out = "", where the loader does not say. */
bool pf_dl_path(void *lib, char *out, size_t size);

/* dlsym into a function-pointer slot: dlsym returns void *, which POSIX
 * guarantees converts to a function pointer and ISO C does not, so the bits
 * are copied rather than cast. A missing symbol leaves the slot NULL. */
void *pf_dl_sym(void *lib, const char *name);
_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "function pointers differ from void *");
#define PF_DL_RESOLVE(lib, slot, name) \
    do { \
        void *sym_ = pf_dl_sym((lib), (name)); \
        memcpy(&(slot), &sym_, sizeof sym_); \
    } while (0)

#endif
