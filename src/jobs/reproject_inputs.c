/* Inputs of the reproject job (see reproject_inputs.h). */
#define _POSIX_C_SOURCE 200809L

#include "io/expand.h"
#include "jobs/reproject_run.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

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

/* A directory's image and video files (sorted; kind by name) or a glob's
 * files (kind by content), through io/expand.h. An argument that names
 * nothing is reported and counted; false only when out of memory. */
static bool add_expanded(rp_inputs *in, const char *arg)
{
    pf_path_list l = {0};
    pf_expand_what what;
    pf_status st = pf_expand_input(arg, PF_EXPAND_IMAGES | PF_EXPAND_VIDEOS, &l, &what);
    int err = errno;
    bool ok = st != PF_ERR_NOMEM;
    if (st != PF_OK || l.count == 0) {
        if (what == PF_EXPAND_DIR && st != PF_OK)
            rp_report(in->sink, "%s: cannot list the directory: %s", arg, strerror(err));
        else if (what == PF_EXPAND_DIR)
            rp_report(in->sink, "%s: no .jpg, .jpeg, .png or video files in the directory", arg);
        else if (st != PF_OK)
            rp_report(in->sink, "%s: %s", arg,
                      st == PF_ERR_NOMEM ? "out of memory" : "cannot read a directory of the pattern");
        else
            rp_report(in->sink, "%s: no file matches", arg);
        in->expand_failures++;
    }
    for (int i = 0; ok && st == PF_OK && i < l.count; i++)
        ok = what == PF_EXPAND_DIR
                 ? add(in, l.paths[i],
                       pf_expand_has_ext(l.paths[i], PF_EXPAND_VIDEOS) ? RP_INPUT_VIDEO
                                                                       : RP_INPUT_IMAGE,
                       false)
                 : add_file(in, l.paths[i]);
    pf_path_list_free(&l);
    return ok;
}

static bool add_arg(rp_inputs *in, const char *arg)
{
    jobs_input_kind k = jobs_input_classify(arg, NULL);
    if (k == JOBS_INPUT_DIR || (k == JOBS_INPUT_MISSING && strpbrk(arg, "*?[")))
        return add_expanded(in, arg);
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
