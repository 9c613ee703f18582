/* Run-time loading helpers (dl.h). */
#define _GNU_SOURCE /* dlinfo, RTLD_DI_LINKMAP */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>

#include "dl.h"

void *pf_dl_open(const char *soname, char *why, size_t why_size)
{
    /* dlerror() is per thread: clear what an earlier failure left. */
    dlerror();
    void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!lib && why && why_size > 0) {
        const char *e = dlerror();
        snprintf(why, why_size, "%s not found (dlopen: %s)", soname, e ? e : "unknown error");
    }
    return lib;
}

bool pf_dl_path(void *lib, char *out, size_t size)
{
    if (size > 0) out[0] = '\0';
    struct link_map *lm = NULL;
    if (!lib || dlinfo(lib, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name || !lm->l_name[0])
        return false;
    snprintf(out, size, "%s", lm->l_name);
    return true;
}

void *pf_dl_sym(void *lib, const char *name)
{
    return lib ? dlsym(lib, name) : NULL;
}
