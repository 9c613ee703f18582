/* Input arguments into paths (expand.h). */
#define _POSIX_C_SOURCE 200809L

#include "io/expand.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static const char *const image_exts[] = {"png", "jpg", "jpeg", NULL};
static const char *const video_exts[] = {"mp4", "mkv", "mov",  "avi", "webm", "ts",
                                         "m4v", "y4m", "mpg", "mpeg", "flv", NULL};

static bool ext_in(const char *ext, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (!strcasecmp(ext, list[i])) return true;
    return false;
}

bool pf_expand_has_ext(const char *path, unsigned exts)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash + 1 : path, '.');
    if (!dot || !dot[1]) return false;
    return ((exts & PF_EXPAND_IMAGES) && ext_in(dot + 1, image_exts)) ||
           ((exts & PF_EXPAND_VIDEOS) && ext_in(dot + 1, video_exts));
}

bool pf_path_list_add(pf_path_list *l, const char *path)
{
    if (l->count == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        char **grown = realloc(l->paths, (size_t)cap * sizeof *grown);
        if (!grown) return false;
        l->paths = grown;
        l->cap = cap;
    }
    char *copy = strdup(path);
    if (!copy) return false;
    l->paths[l->count++] = copy;
    return true;
}

void pf_path_list_free(pf_path_list *l)
{
    for (int i = 0; i < l->count; i++) free(l->paths[i]);
    free(l->paths);
    memset(l, 0, sizeof *l);
}

static bool is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static pf_status add_dir(const char *dir, unsigned exts, pf_path_list *out)
{
    DIR *d = opendir(dir);
    if (!d) return PF_ERR_IO; /* errno says why */
    int first = out->count;
    bool slash = dir[0] && dir[strlen(dir) - 1] == '/';
    bool ok = true;
    for (struct dirent *e; ok && (e = readdir(d));) {
        if (e->d_name[0] == '.' || !pf_expand_has_ext(e->d_name, exts)) continue;
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        char *path = malloc(len);
        if (!path) {
            ok = false;
            break;
        }
        snprintf(path, len, "%s%s%s", dir, slash ? "" : "/", e->d_name);
        /* Subdirectories named like images are not inputs. */
        if (!is_dir(path)) ok = pf_path_list_add(out, path);
        free(path);
    }
    closedir(d);
    if (!ok) {
        errno = ENOMEM;
        return PF_ERR_NOMEM;
    }
    if (out->count > first) /* paths may still be NULL */
        qsort(out->paths + first, (size_t)(out->count - first), sizeof *out->paths, cmp_str);
    return PF_OK;
}

static pf_status add_glob(const char *pattern, pf_path_list *out)
{
    glob_t g;
    memset(&g, 0, sizeof g);
    int rc = glob(pattern, 0, NULL, &g);
    if (rc == GLOB_NOMATCH) {
        globfree(&g);
        return PF_OK;
    }
    if (rc != 0) {
        globfree(&g);
        errno = rc == GLOB_NOSPACE ? ENOMEM : EIO;
        return rc == GLOB_NOSPACE ? PF_ERR_NOMEM : PF_ERR_IO;
    }
    bool ok = true;
    for (size_t i = 0; ok && i < g.gl_pathc; i++)
        if (!is_dir(g.gl_pathv[i])) ok = pf_path_list_add(out, g.gl_pathv[i]);
    globfree(&g);
    if (!ok) errno = ENOMEM;
    return ok ? PF_OK : PF_ERR_NOMEM;
}

pf_status pf_expand_input(const char *arg, unsigned exts, pf_path_list *out,
                          pf_expand_what *what)
{
    struct stat sb;
    bool there = stat(arg, &sb) == 0;
    if (there && S_ISDIR(sb.st_mode)) {
        *what = PF_EXPAND_DIR;
        return add_dir(arg, exts, out);
    }
    if (!there && strpbrk(arg, "*?[")) {
        *what = PF_EXPAND_GLOB;
        return add_glob(arg, out);
    }
    *what = PF_EXPAND_FILE;
    if (pf_path_list_add(out, arg)) return PF_OK;
    errno = ENOMEM;
    return PF_ERR_NOMEM;
}
