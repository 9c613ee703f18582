/* Inputs of the reproject job (see reproject_inputs.h). */
#define _POSIX_C_SOURCE 200809L

#include "jobs/reproject_run.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
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

/* kind: what the path holds (directory entries: by name). */
static bool add(rp_inputs *in, const char *path, rp_input_kind kind, bool once)
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
    it->kind = kind;
    it->once = once;
    it->same_names_as = -1;
    in->count++;
    return true;
}

/* A file named on the command line (or by a glob or the list): an image
 * when its first bytes or its name say so, else a video (jobs_input_classify). A
 * missing one is an image: reported with its name when read. */
static bool add_file(rp_inputs *in, const char *path)
{
    bool once = false;
    jobs_input_kind k = jobs_input_classify(path, &once);
    return add(in, path, k == JOBS_INPUT_VIDEO ? RP_INPUT_VIDEO : RP_INPUT_IMAGE, once);
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
        rp_report(in->sink, "%s: cannot list the directory: %s", dir,
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
        if (ok) ok = add(in, names[i], ext_in(names[i], video_exts) ? RP_INPUT_VIDEO : RP_INPUT_IMAGE,
                         false);
        free(names[i]);
    }
    free(names);
    if (ok && n == 0) {
        rp_report(in->sink, "%s: no .jpg, .jpeg, .png or video files in the "
                        "directory", dir);
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
        rp_report(in->sink, "%s: no file matches", pattern);
        in->expand_failures++;
        globfree(&g);
        return true;
    }
    if (rc != 0) {
        rp_report(in->sink, "%s: %s", pattern,
                rc == GLOB_NOSPACE ? "out of memory" : "cannot read a directory of the pattern");
        in->expand_failures++;
        globfree(&g);
        return rc != GLOB_NOSPACE;
    }
    bool ok = true;
    for (size_t i = 0; ok && i < g.gl_pathc; i++) {
        struct stat st;
        if (stat(g.gl_pathv[i], &st) == 0 && S_ISDIR(st.st_mode)) continue;
        ok = add_file(in, g.gl_pathv[i]);
    }
    globfree(&g);
    return ok;
}

static bool add_arg(rp_inputs *in, const char *arg)
{
    jobs_input_kind k = jobs_input_classify(arg, NULL);
    if (k == JOBS_INPUT_DIR) return add_dir(in, arg);
    if (k == JOBS_INPUT_MISSING && strpbrk(arg, "*?[")) return add_glob(in, arg);
    return add_file(in, arg);
}

static bool add_list(rp_inputs *in, const char *list_path)
{
    FILE *f = fopen(list_path, "r");
    if (!f) {
        rp_report(in->sink, "%s: cannot open the list: %s", list_path,
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
        rp_report(in->sink, "%s: read error", list_path);
        ok = false;
    }
    free(line);
    fclose(f);
    return ok;
}

/* Inputs whose outputs would overwrite an earlier input's point at it
 * (the same check as segment's: jobs_find_same on the names). */
static bool mark_same_names(rp_inputs *in)
{
    if (in->count < 2) return true;
    char **stems = calloc((size_t)in->count, sizeof *stems);
    int *first = malloc((size_t)in->count * sizeof *first);
    bool ok = stems && first;
    for (int i = 0; ok && i < in->count; i++)
        ok = (stems[i] = strndup(in->items[i].stem, in->items[i].stem_len)) != NULL;
    if (ok) ok = jobs_find_same((const char *const *)stems, in->count, first);
    for (int i = 0; ok && i < in->count; i++) in->items[i].same_names_as = first[i];
    for (int i = 0; stems && i < in->count; i++) free(stems[i]);
    free(stems);
    free(first);
    if (!ok) errno = ENOMEM;
    return ok;
}

bool rp_check_outputs(const rp_inputs *in, const rp_config *c)
{
    jobs_file_set set = {0};
    bool ok = true;
    for (int i = 0; ok && i < in->count; i++) ok = jobs_file_set_add(&set, in->items[i].path, i);
    if (ok && c->list_path) ok = jobs_file_set_add(&set, c->list_path, in->count);
    if (!ok) rp_report(c->sink, "out of memory");
    if (ok && c->trace_path) {
        int t = jobs_file_set_find(&set, c->trace_path);
        if (t >= 0) {
            rp_report(c->sink, "--trace %s is the input %s (the same file): "
                            "writing it would destroy the input", c->trace_path,
                    t < in->count ? in->items[t].path : c->list_path);
            ok = false;
        }
        if (ok) ok = jobs_may_write(c->sink, c->no_overwrite, c->trace_path);
    }
    /* Every image's files, and a video's first frame's (later frames are
     * named alike; -n is enforced again when each file is renamed into place). */
    for (int i = 0; ok && i < in->count; i++) {
        const rp_input *it = &in->items[i];
        if (it->same_names_as >= 0) continue; /* skipped and reported by the run */
        for (int v = 0; ok && v < c->num_outputs; v++) {
            char path[PATH_MAX];
            if (!rp_output_path(path, sizeof path, c->out_dir, it,
                                it->kind == RP_INPUT_VIDEO ? 0 : -1, c->suffix[v], c->ext))
                continue; /* reported by the run */
            int t = jobs_file_set_find(&set, path);
            if (t >= 0) {
                rp_report(c->sink, "%s: the output for %s is the input %s (the "
                                "same file): writing it would destroy the input; choose another "
                                "-o", path, it->path,
                        t < in->count ? in->items[t].path : c->list_path);
                ok = false;
            }
            if (ok) ok = jobs_may_write(c->sink, c->no_overwrite, path);
        }
    }
    jobs_file_set_free(&set);
    return ok;
}

bool rp_inputs_expand(rp_inputs *in, const jobs_sink *sink, const char *const *args, int nargs,
                      const char *list_path)
{
    memset(in, 0, sizeof *in);
    in->sink = sink;
    bool ok = true;
    for (int i = 0; ok && i < nargs; i++) ok = add_arg(in, args[i]);
    if (ok && list_path) ok = add_list(in, list_path);
    if (ok) ok = mark_same_names(in);
    if (!ok && errno == ENOMEM) rp_report(in->sink, "out of memory");
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
