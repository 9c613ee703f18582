/* Inputs and outputs of the jobs (job_impl.h): what an input names, and
 * the checks that keep an output from destroying an input or another
 * output. */
#define _XOPEN_SOURCE 700 /* realpath */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "jobs/job_impl.h"

/* Inputs ---------------------------------------------------------------------------------- */

bool jobs_image_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash + 1 : path, '.');
    return dot && (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") ||
                   !strcasecmp(dot, ".jpeg"));
}

/* PNG's 8-byte signature or JPEG's SOI followed by a marker. */
static bool image_signature(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return false;
    unsigned char b[8] = {0};
    size_t n = fread(b, 1, sizeof b, fp);
    fclose(fp);
    static const unsigned char png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    return (n == 8 && !memcmp(b, png, 8)) || (n >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff);
}

jobs_input_kind jobs_input_classify(const char *path, bool *once)
{
    if (once) *once = false;
    if (!strcmp(path, "-")) {
        if (once) *once = true;
        return JOBS_INPUT_VIDEO;
    }
    /* A URL (network stream) and a V4L2 camera are live videos the reader
     * opens through libavformat: never stat'ed or sniffed here (a missing
     * camera gets the reader's own message). */
    if (pf_io_is_url(path) || pf_io_is_camera(path)) {
        if (once) *once = true;
        return JOBS_INPUT_VIDEO;
    }
    struct stat sb;
    if (stat(path, &sb) != 0) return JOBS_INPUT_MISSING;
    if (S_ISDIR(sb.st_mode)) return JOBS_INPUT_DIR;
    if (!S_ISREG(sb.st_mode)) {
        if (once) *once = true;
        return jobs_image_name(path) ? JOBS_INPUT_IMAGE : JOBS_INPUT_VIDEO;
    }
    return image_signature(path) || jobs_image_name(path) ? JOBS_INPUT_IMAGE : JOBS_INPUT_VIDEO;
}

/* Outputs --------------------------------------------------------------------------------- */

bool jobs_may_write(const jobs_sink *s, bool no_overwrite, const char *path)
{
    no_overwrite = no_overwrite || (pf_output_default_flags() & PF_OUTPUT_NO_OVERWRITE);
    if (!no_overwrite || !path || !strcmp(path, "-")) return true;
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return true;
    jobs_say(s, PF_LOG_ERROR, "%s: already exists (not overwritten: -n; -y overwrites)", path);
    return false;
}

static int cmp_id(const void *a, const void *b)
{
    const jobs_file_id *x = a, *y = b;
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
    return (x->tag > y->tag) - (x->tag < y->tag);
}

bool jobs_file_set_add(jobs_file_set *s, const char *path, int tag)
{
    struct stat sb;
    if (!path || !strcmp(path, "-") || stat(path, &sb) != 0) return true;
    if (s->count == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        jobs_file_id *grown = realloc(s->ids, (size_t)cap * sizeof *grown);
        if (!grown) return false;
        s->ids = grown;
        s->cap = cap;
    }
    s->ids[s->count++] = (jobs_file_id){(unsigned long long)sb.st_dev,
                                        (unsigned long long)sb.st_ino, tag};
    s->sorted = false;
    return true;
}

int jobs_file_set_find(jobs_file_set *s, const char *path)
{
    struct stat sb;
    if (!s->count || !path || !strcmp(path, "-") || stat(path, &sb) != 0) return -1;
    if (!s->sorted) {
        qsort(s->ids, (size_t)s->count, sizeof *s->ids, cmp_id);
        s->sorted = true;
    }
    jobs_file_id key = {(unsigned long long)sb.st_dev, (unsigned long long)sb.st_ino, INT_MIN};
    int lo = 0, hi = s->count; /* first id >= key */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (cmp_id(&s->ids[mid], &key) < 0) lo = mid + 1;
        else hi = mid;
    }
    if (lo < s->count && s->ids[lo].dev == key.dev && s->ids[lo].ino == key.ino)
        return s->ids[lo].tag;
    return -1;
}

void jobs_file_set_free(jobs_file_set *s)
{
    free(s->ids);
    memset(s, 0, sizeof *s);
}

void jobs_canonical_path(const char *path, char *out, size_t size)
{
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX], resolved[PATH_MAX];
    if (!slash) {
        snprintf(dir, sizeof dir, ".");
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        if (n >= sizeof dir) n = sizeof dir - 1;
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    const char *base = slash ? slash + 1 : path;
    if (!realpath(dir, resolved)) {
        snprintf(out, size, "%s", path);
        return;
    }
    snprintf(out, size, "%s%s%s", resolved, strcmp(resolved, "/") ? "/" : "", base);
}

typedef struct key_ref {
    const char *key;
    int index;
} key_ref;

static int cmp_key(const void *a, const void *b)
{
    const key_ref *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

bool jobs_find_same(const char *const *keys, int n, int *first_of)
{
    if (n <= 0) return true;
    key_ref *r = malloc((size_t)n * sizeof *r);
    if (!r) return false;
    for (int i = 0; i < n; i++) r[i] = (key_ref){keys[i], i};
    qsort(r, (size_t)n, sizeof *r, cmp_key);
    for (int i = 0; i < n; i++)
        first_of[r[i].index] = i > 0 && !strcmp(r[i].key, r[i - 1].key)
                                   ? (first_of[r[i - 1].index] >= 0 ? first_of[r[i - 1].index]
                                                                    : r[i - 1].index)
                                   : -1;
    free(r);
    return true;
}
