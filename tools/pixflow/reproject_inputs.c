/* Inputs of `pixflow reproject` (see reproject_inputs.h). */
#define _POSIX_C_SOURCE 200809L

#include "reproject_inputs.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static const char *const video_exts[] = {"mp4", "mkv", "mov", "avi", "webm", "ts", "m4v",
                                         "y4m", "mpg", "mpeg", "flv", NULL};
static const char *const image_exts[] = {"jpg", "jpeg", "png", NULL};

static const char *extension(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash + 1 : path, '.');
    return dot && dot[1] ? dot + 1 : NULL;
}

static bool ext_in(const char *path, const char *const *list)
{
    const char *e = extension(path);
    if (!e) return false;
    for (int i = 0; list[i]; i++)
        if (!strcasecmp(e, list[i])) return true;
    return false;
}

static bool add(rp_inputs *in, const char *path)
{
    if (in->count == in->cap) {
        int cap = in->cap ? in->cap * 2 : 64;
        rp_input *n = realloc(in->items, (size_t)cap * sizeof *n);
        if (!n) return false;
        in->items = n;
        in->cap = cap;
    }
    rp_input *it = &in->items[in->count];
    it->path = strdup(path);
    if (!it->path) return false;
    const char *slash = strrchr(it->path, '/');
    it->stem = slash ? slash + 1 : it->path;
    const char *dot = strrchr(it->stem, '.');
    it->stem_len = dot && dot != it->stem ? (size_t)(dot - it->stem) : strlen(it->stem);
    it->kind = ext_in(path, video_exts) ? RP_INPUT_VIDEO : RP_INPUT_IMAGE;
    it->same_names_as = -1;
    in->count++;
    return true;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The directory's image and video files, sorted by name. */
static bool add_dir(rp_inputs *in, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "pixflow reproject: %s: cannot list the directory: %s\n", dir,
                strerror(errno));
        in->expand_failures++;
        return true;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    bool ok = true;
    struct dirent *e;
    while (ok && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (!ext_in(e->d_name, image_exts) && !ext_in(e->d_name, video_exts)) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) {
                ok = false;
                break;
            }
            names = nn;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        names[n] = malloc(len);
        if (!names[n]) {
            ok = false;
            break;
        }
        bool slash = dir[0] && dir[strlen(dir) - 1] == '/';
        snprintf(names[n], len, "%s%s%s", dir, slash ? "" : "/", e->d_name);
        n++;
    }
    closedir(d);
    if (ok) qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        /* Subdirectories named like images are not inputs. */
        if (ok && stat(names[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            free(names[i]);
            continue;
        }
        if (ok) ok = add(in, names[i]);
        free(names[i]);
    }
    free(names);
    if (ok && n == 0) {
        fprintf(stderr, "pixflow reproject: %s: no .jpg, .jpeg, .png or video files in the "
                        "directory\n", dir);
        in->expand_failures++;
    }
    return ok;
}

static bool add_glob(rp_inputs *in, const char *pattern)
{
    glob_t g;
    memset(&g, 0, sizeof g);
    int rc = glob(pattern, 0, NULL, &g);
    if (rc == GLOB_NOMATCH || (rc == 0 && g.gl_pathc == 0)) {
        fprintf(stderr, "pixflow reproject: %s: no file matches\n", pattern);
        in->expand_failures++;
        globfree(&g);
        return true;
    }
    if (rc != 0) {
        fprintf(stderr, "pixflow reproject: %s: %s\n", pattern,
                rc == GLOB_NOSPACE ? "out of memory" : "cannot read a directory of the pattern");
        in->expand_failures++;
        globfree(&g);
        return rc != GLOB_NOSPACE;
    }
    bool ok = true;
    for (size_t i = 0; ok && i < g.gl_pathc; i++) {
        struct stat st;
        if (stat(g.gl_pathv[i], &st) == 0 && S_ISDIR(st.st_mode)) continue;
        ok = add(in, g.gl_pathv[i]);
    }
    globfree(&g);
    return ok;
}

static bool add_arg(rp_inputs *in, const char *arg)
{
    struct stat st;
    if (stat(arg, &st) == 0) return S_ISDIR(st.st_mode) ? add_dir(in, arg) : add(in, arg);
    if (strpbrk(arg, "*?[")) return add_glob(in, arg);
    return add(in, arg); /* missing: reported with its name when read */
}

static bool add_list(rp_inputs *in, const char *list_path)
{
    FILE *f = fopen(list_path, "r");
    if (!f) {
        fprintf(stderr, "pixflow reproject: %s: cannot open the list: %s\n", list_path,
                strerror(errno));
        return false;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    bool ok = true;
    while (ok && (len = getline(&line, &cap, f)) >= 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
        if (len > 0) ok = add_arg(in, line);
    }
    if (ok && ferror(f)) {
        fprintf(stderr, "pixflow reproject: %s: read error\n", list_path);
        ok = false;
    }
    free(line);
    fclose(f);
    return ok;
}

typedef struct stem_ref {
    const rp_input *in;
    int index;
} stem_ref;

static int cmp_stem(const void *a, const void *b)
{
    const stem_ref *x = a, *y = b;
    size_t n = x->in->stem_len < y->in->stem_len ? x->in->stem_len : y->in->stem_len;
    int c = memcmp(x->in->stem, y->in->stem, n);
    if (c) return c;
    if (x->in->stem_len != y->in->stem_len) return x->in->stem_len < y->in->stem_len ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Inputs whose outputs would overwrite an earlier input's point at it. */
static bool mark_same_names(rp_inputs *in)
{
    if (in->count < 2) return true;
    stem_ref *r = malloc((size_t)in->count * sizeof *r);
    if (!r) return false;
    for (int i = 0; i < in->count; i++) r[i] = (stem_ref){&in->items[i], i};
    qsort(r, (size_t)in->count, sizeof *r, cmp_stem);
    for (int i = 1; i < in->count; i++) {
        const rp_input *a = r[i - 1].in, *b = r[i].in;
        if (a->stem_len == b->stem_len && !memcmp(a->stem, b->stem, a->stem_len)) {
            const rp_input *first = a;
            int first_index = r[i - 1].index;
            while (first->same_names_as >= 0) {
                first_index = first->same_names_as;
                first = &in->items[first_index];
            }
            in->items[r[i].index].same_names_as = first_index;
        }
    }
    free(r);
    return true;
}

bool rp_inputs_expand(rp_inputs *in, const char *const *args, int nargs, const char *list_path)
{
    memset(in, 0, sizeof *in);
    bool ok = true;
    for (int i = 0; ok && i < nargs; i++) ok = add_arg(in, args[i]);
    if (ok && list_path) ok = add_list(in, list_path);
    if (ok) ok = mark_same_names(in);
    if (!ok && errno == ENOMEM) fprintf(stderr, "pixflow reproject: out of memory\n");
    return ok;
}

void rp_inputs_free(rp_inputs *in)
{
    for (int i = 0; i < in->count; i++) free(in->items[i].path);
    free(in->items);
    memset(in, 0, sizeof *in);
}

bool rp_output_path(char *buf, size_t size, const char *dir, const rp_input *in, int64_t frame,
                    const char *suffix, const char *ext)
{
    bool slash = dir[0] && dir[strlen(dir) - 1] == '/';
    int n;
    if (frame < 0)
        n = snprintf(buf, size, "%s%s%.*s_%s.%s", dir, slash ? "" : "/", (int)in->stem_len,
                     in->stem, suffix, ext);
    else
        n = snprintf(buf, size, "%s%s%.*s_f%06lld_%s.%s", dir, slash ? "" : "/",
                     (int)in->stem_len, in->stem, (long long)frame, suffix, ext);
    return n > 0 && (size_t)n < size;
}
