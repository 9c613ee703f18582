/* pf_model_find: a model by name or path (jobs.h).
 *
 * Names map to files of the npm packages the setup installs (table below;
 * more names, e.g. face models, are rows). Each file is looked for in a
 * directory as DIR/FILE (a flat directory such as the installed
 * share/pixflow/models) and in the npm layouts DIR/node_modules/@mediapipe/
 * PKG/FILE, DIR/@mediapipe/PKG/FILE and DIR/PKG/FILE, so PIXFLOW_MODELS may
 * name any of them. The installed directory is found from where this
 * library is loaded (dladdr), so an installed program needs no variable. */
#define _GNU_SOURCE /* dladdr */

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "pixflow/jobs.h"

typedef struct model_name {
    const char *name;
    const char *package;     /* npm package under @mediapipe/ */
    const char *file;
} model_name;

static const model_name models[] = {
    {"selfie", "selfie_segmentation", "selfie_segmentation.tflite"},
    {"general", "selfie_segmentation", "selfie_segmentation.tflite"},
    {"landscape", "selfie_segmentation", "selfie_segmentation_landscape.tflite"},
};

static bool is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static bool try_dir(char *out, size_t size, const char *dir, const model_name *m)
{
    const char *const fmts[] = {"%s/%.0s%s", "%s/node_modules/@mediapipe/%s/%s",
                                "%s/@mediapipe/%s/%s", "%s/%s/%s"};
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        int n = snprintf(out, size, fmts[i], dir, m->package, m->file);
        if (n > 0 && (size_t)n < size && is_file(out)) return true;
    }
    return false;
}

/* <directory of libpixflow>/../share/pixflow/models, "" when unknown. */
static void installed_dir(char *out, size_t size)
{
    Dl_info info;
    out[0] = '\0';
    if (!dladdr((void *)pf_model_find, &info) || !info.dli_fname) return;
    char lib[PATH_MAX];
    if (!realpath(info.dli_fname, lib)) return;
    char *slash = strrchr(lib, '/');
    if (!slash) return;
    *slash = '\0';
    if ((size_t)snprintf(out, size, "%.*s/../share/pixflow/models", (int)(size - 32), lib) >= size)
        out[0] = '\0';
}

pf_status pf_model_find(const char *name, char *path, size_t size)
{
    if (!path || size < 2)
        return pf_set_error(PF_ERR_INVALID, "pf_model_find: no buffer for the path");
    path[0] = '\0';
    const model_name *m = NULL;
    const char *want = name ? name : "selfie";
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
        if (!strcmp(want, models[i].name)) m = &models[i];
    if (!m) {
        if (!is_file(want))
            return pf_set_error(PF_ERR_IO, "model '%s': no such file (or use 'selfie' or "
                                "'landscape')", want);
        if (snprintf(path, size, "%s", want) >= (int)size)
            return pf_set_error(PF_ERR_INVALID, "pf_model_find: '%s' does not fit the buffer",
                                want);
        return PF_OK;
    }
    const char *env = getenv("PIXFLOW_MODELS");
    if (env && *env && try_dir(path, size, env, m)) return PF_OK;
    char inst[PATH_MAX];
    installed_dir(inst, sizeof inst);
    if (inst[0] && try_dir(path, size, inst, m)) return PF_OK;
    /* The source tree: build folders live inside it, so walk up from the
     * executable's directory. */
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        for (int up = 0; up < 6; up++) {
            char *slash = strrchr(exe, '/');
            if (!slash || slash == exe) break;
            *slash = '\0';
            if (try_dir(path, size, exe, m)) return PF_OK;
        }
    }
    if (try_dir(path, size, ".", m)) return PF_OK;
    path[0] = '\0';
    return pf_set_error(PF_ERR_IO, "model %s not found: looked in $PIXFLOW_MODELS%s, %s%s, the "
                        "source tree of this program and the current directory (npm ci "
                        "installs node_modules/@mediapipe/%s; or give a model file)",
                        m->file, env && *env ? "" : " (not set)",
                        inst[0] ? inst : "the installed models",
                        inst[0] ? " (installed models)" : "", m->package);
}
