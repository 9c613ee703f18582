/* The segment job: the model, the inputs and the output names.
 *
 * An input is classified by what it is (jobs_input_classify): "-" is a video on
 * stdin; a directory lists its PNG/JPEG files (sorted); a pattern with
 * wildcards is expanded with glob(); a file whose first bytes are a PNG or
 * JPEG signature, or named .png/.jpg/.jpeg, is an image (so a damaged one
 * gets the image reader's exact message, as in a directory); anything else,
 * FIFOs and /dev/fd/N included, is opened as a video (Y4M by pixflow, other
 * containers through FFmpeg when the build has it), whose errors name it. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/expand.h"
#include "jobs/segment_impl.h"

void seg_error(seg_job *job, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    jobs_say(job ? job->sink : NULL, PF_LOG_ERROR, "%s", msg);
}

static bool is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Model ---------------------------------------------------------------------------------- */

bool seg_find_model(seg_job *job, const char *arg)
{
    if (pf_model_find(arg, job->model, sizeof job->model) == PF_OK) return true;
    seg_error(job, "%s", pf_last_error());
    return false;
}

/* Inputs --------------------------------------------------------------------------------- */

static bool add_input(seg_job *job, const char *path)
{
    char **grown = realloc(job->inputs, sizeof *grown * (size_t)(job->num_inputs + 1));
    if (!grown) return false;
    job->inputs = grown;
    job->inputs[job->num_inputs] = strdup(path);
    if (!job->inputs[job->num_inputs]) return false;
    job->num_inputs++;
    return true;
}

/* A directory's images or a glob's files (io/expand.h), in order. */
static bool add_expanded(seg_job *job, const char *arg)
{
    pf_path_list l = {0};
    pf_expand_what what;
    pf_status st = pf_expand_input(arg, PF_EXPAND_IMAGES, &l, &what);
    int err = errno;
    bool ok = st == PF_OK;
    if (st == PF_ERR_NOMEM)
        seg_error(job, "out of memory %s %s", what == PF_EXPAND_DIR ? "listing" : "expanding", arg);
    else if (!ok && what == PF_EXPAND_DIR)
        seg_error(job, "%s: cannot open directory: %s", arg, strerror(err));
    else if (!ok)
        seg_error(job, "%s: cannot expand this pattern", arg);
    else if (l.count == 0 && what == PF_EXPAND_DIR)
        seg_error(job, "%s: no .png or .jpg images in this directory", arg);
    else if (l.count == 0)
        seg_error(job, "%s: no file matches this pattern", arg);
    ok = ok && l.count > 0;
    for (int i = 0; ok && i < l.count; i++) ok = add_input(job, l.paths[i]);
    if (ok != (st == PF_OK && l.count > 0)) seg_error(job, "out of memory listing %s", arg);
    pf_path_list_free(&l);
    return ok;
}

bool seg_open_video(seg_job *job, const char *path)
{
    if (!add_input(job, path)) return false;
    job->kind = SEG_VIDEO;
    pf_video_reader_params rp = pf_video_reader_params_default();
    rp.path = job->inputs[job->num_inputs - 1]; /* the job's copy: the reader may keep it */
    /* Frames wait in the pipeline's queues and batches: enough of them
     * (two batches of 64 and the queues; latency mode holds one; one of
     * several streams its share, set by segment_multi.c). */
    rp.pool_size = job->gate ? 8 : job->reader_pool > 0 ? job->reader_pool : 160;
    rp.realtime = job->realtime;
    /* One of several streams: a live input that drops is reopened (bounded)
     * while the others go on. */
    job->live = pf_io_is_live(path);
    if (job->live && job->stage_suffix[0]) {
        rp.retries = job->retries;
        rp.open_later = true; /* a camera down at the start joins when it comes up */
        rp.retry_max_delay_ms = 2000;
    }
    /* On a GPU, NVDEC where the input allows it (H.264/HEVC in 8-bit 4:2:0,
     * any container): NV12 frames in device memory, never on the host. */
    if (job->dev && pf_device_get_type(job->dev) == PF_DEVICE_CUDA) {
        rp.device = job->dev;
        rp.prefer_device = true;
        rp.hw_share = job->hw_share;
    }
    if (pf_video_reader_create(&rp, &job->reader) != PF_OK) {
        seg_error(job, "%s", pf_last_error());
        return false;
    }
    pf_video_reader_info(job->reader, &job->info);
    return true;
}

bool seg_collect_inputs(seg_job *job, const char *const *args, int n)
{
    job->kind = SEG_IMAGES;
    for (int i = 0; i < n; i++) {
        const char *a = args[i];
        errno = 0;
        jobs_input_kind kind = jobs_input_classify(a, NULL);
        int err = errno;
        if (kind == JOBS_INPUT_VIDEO) {
            /* A URL is shown without its password everywhere (messages,
             * summary, --json). */
            const char *shown = pf_io_redact(a, job->input_shown, sizeof job->input_shown);
            if (n != 1) {
                seg_error(job, "%s: videos and images cannot be mixed in one run (several videos can)",
                          shown);
                return false;
            }
            job->input_label = strcmp(a, "-") ? shown : "<stdin>";
            return seg_open_video(job, a);
        }
        bool ok;
        if (kind == JOBS_INPUT_DIR || (kind == JOBS_INPUT_MISSING && strpbrk(a, "*?[")))
            ok = add_expanded(job, a);
        else if (kind == JOBS_INPUT_MISSING) {
            seg_error(job, "%s: %s", a, strerror(err ? err : ENOENT));
            ok = false;
        } else
            ok = add_input(job, a); /* an image: its reader's message if it is damaged */
        if (!ok) return false;
    }
    if (job->num_inputs == 0) {
        seg_error(job, "no input images");
        return false;
    }
    if (n == 1) snprintf(job->input_shown, sizeof job->input_shown, "%s", args[0]);
    job->input_label = n == 1 ? job->input_shown : "images";
    return true;
}

/* Outputs --------------------------------------------------------------------------------- */

/* Last path component without its extension; for a URL a name made from
 * host, port and path (never its credentials). */
void seg_stem(const char *path, char *out, size_t size)
{
    if (pf_io_is_url(path)) {
        pf_io_url_name(path, out, size);
        return;
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(out, size, "%s", base);
    char *dot = strrchr(out, '.');
    if (dot && dot != out) *dot = '\0';
}

static const char *extension(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    return dot ? dot : "";
}

bool seg_make_dir(seg_job *job, const char *dir)
{
    if (is_dir(dir)) return true;
    char tmp[SEG_PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (!is_dir(tmp) && mkdir(tmp, 0777) != 0 && errno != EEXIST) break;
        *p = '/';
    }
    if (mkdir(tmp, 0777) != 0 && errno != EEXIST) {
        seg_error(job, "%s: cannot create directory: %s", dir, strerror(errno));
        return false;
    }
    return true;
}

/* A path names a directory when it is one, ends with '/', or (for several
 * images) has no extension. */
static bool names_dir(const char *path, bool several)
{
    size_t len = strlen(path);
    if (is_dir(path) || (len && path[len - 1] == '/')) return true;
    return several && extension(path)[0] == '\0';
}

static bool ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if ((*a | 0x20) != (*b | 0x20)) return false;
    return *a == *b;
}

/* scheme://[user@]host[:port]/path of a URL, lower-cased up to the path,
 * without credentials, query and fragment. */
static void url_key(const char *url, char *buf, size_t size)
{
    const char *rest = strstr(url, "://");
    size_t at = 0;
    if (!rest || size == 0) return;
    const char *auth = rest + 3;
    size_t alen = strcspn(auth, "/?#");
    const char *host = auth;
    for (size_t i = 0; i < alen; i++)
        if (auth[i] == '@') host = auth + i + 1;
    for (const char *c = url; c < auth && at + 1 < size; c++)
        buf[at++] = (char)(*c >= 'A' && *c <= 'Z' ? *c | 0x20 : *c);
    for (const char *c = host; c < auth + alen && at + 1 < size; c++)
        buf[at++] = (char)(*c >= 'A' && *c <= 'Z' ? *c | 0x20 : *c);
    size_t plen = strcspn(auth + alen, "?#");
    for (size_t i = 0; i < plen && at + 1 < size; i++) buf[at++] = auth[alen + i];
    buf[at] = '\0';
}

bool seg_same_url(const char *a, const char *b)
{
    if (!a || !b || !pf_io_is_url(a) || !pf_io_is_url(b)) return false;
    char ka[SEG_PATH_MAX], kb[SEG_PATH_MAX];
    url_key(a, ka, sizeof ka);
    url_key(b, kb, sizeof kb);
    return strcmp(ka, kb) == 0;
}

const char *seg_shown(const char *path, char *buf, size_t size)
{
    return pf_io_redact(path, buf, size);
}

bool seg_plan_outputs(seg_job *job, const char *out_arg, const char *mask_arg)
{
    char st[512];
    if (job->kind == SEG_IMAGES) {
        bool several = job->num_inputs > 1;
        if (job->null_output) {
            snprintf(job->output, sizeof job->output, "null");
        } else if (out_arg) {
            snprintf(job->output, sizeof job->output, "%s", out_arg);
            job->output_is_dir = names_dir(out_arg, several);
            if (several && !job->output_is_dir) {
                seg_error(job, "-o %s: several images need an output directory", out_arg);
                return false;
            }
        } else if (several) {
            snprintf(job->output, sizeof job->output, "segmented");
            job->output_is_dir = true;
        } else {
            seg_stem(job->inputs[0], st, sizeof st);
            const char *ext = extension(job->inputs[0]);
            snprintf(job->output, sizeof job->output, "%s_seg%s", st,
                     job->alpha || !ext[0] ? ".png" : ext);
        }
        if (!job->null_output && !job->output_is_dir && job->alpha &&
            !ieq(extension(job->output), ".png")) {
            seg_error(job, "-o %s: --alpha writes RGBA, which needs a .png file", job->output);
            return false;
        }
        if (job->output_is_dir && !seg_make_dir(job, job->output)) return false;
        if (mask_arg) {
            snprintf(job->mask_out, sizeof job->mask_out, "%s", mask_arg);
            job->mask_is_dir = names_dir(mask_arg, several);
            if (several && !job->mask_is_dir) {
                seg_error(job, "--mask-out %s: several images need a directory", mask_arg);
                return false;
            }
            if (job->mask_is_dir && !seg_make_dir(job, job->mask_out)) return false;
        }
        return true;
    }
    /* Video. */
    bool from_stdin = !strcmp(job->inputs[0], "-");
    if (job->null_output) {
        snprintf(job->output, sizeof job->output, "null");
        out_arg = NULL;
    }
    /* A URL (udp://, tcp://, rtsp://, ...) is a network output: no
     * directory, no file checks but "not an input URL" (seg_check_outputs). */
    if (out_arg && strcmp(out_arg, "-") != 0 && !pf_io_is_url(out_arg) &&
        names_dir(out_arg, false)) {
        seg_error(job, "-o %s: a video is written to a file (or '-'), not a directory", out_arg);
        return false;
    }
    if (job->null_output) {
        /* nothing written but masks */
    } else if (out_arg) {
        snprintf(job->output, sizeof job->output, "%s", out_arg);
    } else if (from_stdin) {
        snprintf(job->output, sizeof job->output, "-");
    } else {
        seg_stem(job->inputs[0], st, sizeof st);
        const char *ext = job->alpha                    ? ".mov"
                          : ieq(extension(job->inputs[0]), ".y4m") || !pf_io_have_ffmpeg()
                              ? ".y4m"
                              : ".mp4";
        snprintf(job->output, sizeof job->output, "%s_seg%s", st, ext);
    }
    if (job->alpha && !job->null_output) {
        const char *ext = extension(job->output);
        if (!ieq(ext, ".mov") && !ieq(ext, ".mkv") && !ieq(ext, ".webm")) {
            char shown[SEG_PATH_MAX];
            seg_error(job, "-o %s: --alpha on video needs a container and codec that store "
                      "alpha: .mov (qtrle), .mkv (ffv1) or .webm (vp9); Y4M and network "
                      "outputs have none",
                      seg_shown(job->output, shown, sizeof shown));
            return false;
        }
    }
    if (mask_arg) {
        snprintf(job->mask_out, sizeof job->mask_out, "%s", mask_arg);
        job->mask_is_dir = !pf_io_is_url(mask_arg) && names_dir(mask_arg, true);
        if (job->mask_is_dir && !seg_make_dir(job, job->mask_out)) return false;
    }
    return true;
}

/* Every file this run would write, with the input it comes from (-1: none).
 * Images: two per input at most; video: the output, the mask file or the
 * first mask image; plus the trace. */
typedef struct seg_out {
    char path[SEG_PATH_MAX];
    int input;
    const char *what;          /* "output", "mask", "trace" */
} seg_out;

static int list_outputs(const seg_job *job, const char *trace, seg_out **out)
{
    int cap = 2 * job->num_inputs + 3, n = 0;
    seg_out *o = calloc((size_t)cap, sizeof *o);
    if (!o) return -1;
    bool write_main = !job->null_output;
    if (job->kind == SEG_IMAGES) {
        for (int i = 0; i < job->num_inputs; i++) {
            if (write_main) {
                seg_image_output(job, i, false, o[n].path, sizeof o[n].path);
                o[n].input = i;
                o[n++].what = "output";
            }
            if (job->mask_out[0]) {
                seg_image_output(job, i, true, o[n].path, sizeof o[n].path);
                o[n].input = i;
                o[n++].what = "mask";
            }
        }
    } else {
        if (write_main && strcmp(job->output, "-") != 0) {
            snprintf(o[n].path, sizeof o[n].path, "%s", job->output);
            o[n].input = 0;
            o[n++].what = "output";
        }
        if (job->mask_out[0]) {
            seg_image_output(job, 0, true, o[n].path, sizeof o[n].path);
            o[n].input = 0;
            o[n++].what = "mask";
        }
    }
    if (trace) {
        snprintf(o[n].path, sizeof o[n].path, "%s", trace);
        o[n].input = -1;
        o[n++].what = "trace";
    }
    *out = o;
    return n;
}

bool seg_check_outputs(seg_job *job, const char *trace)
{
    seg_out *o = NULL;
    int n = list_outputs(job, trace, &o);
    jobs_file_set ins = {0};
    const char **keys = n > 0 ? calloc((size_t)n, sizeof *keys) : NULL;
    int *first = n > 0 ? malloc((size_t)n * sizeof *first) : NULL;
    bool ok = n >= 0 && (n == 0 || (keys && first));
    /* Inputs: tags 0..num_inputs-1; the model and background after them. */
    for (int i = 0; ok && i < job->num_inputs; i++) ok = jobs_file_set_add(&ins, job->inputs[i], i);
    if (ok) ok = jobs_file_set_add(&ins, job->model, job->num_inputs);
    if (ok && job->bg_path) ok = jobs_file_set_add(&ins, job->bg_path, job->num_inputs + 1);
    if (!ok) {
        seg_error(job, "out of memory checking the outputs");
        n = 0;
    }
    /* A network output: a protocol the writer takes (said now, not at the
     * first frame), and not an input URL of this run (a loop). */
    for (int i = 0; ok && i < n; i++) {
        char scheme[32], shown[SEG_PATH_MAX];
        if (!pf_io_url_scheme(o[i].path, scheme, sizeof scheme)) continue;
        if (strcmp(scheme, "file") != 0 &&
            pf_io_protocol_allowed(PF_IO_DEFAULT_OUTPUT_PROTOCOLS, scheme))
            continue;
        seg_error(job, "%s %s: URL protocol '%s' is not allowed for outputs (allowed: %s%s)",
                  !strcmp(o[i].what, "mask") ? "--mask-out" : "-o",
                  seg_shown(o[i].path, shown, sizeof shown), scheme,
                  PF_IO_DEFAULT_OUTPUT_PROTOCOLS,
                  !strcmp(scheme, "file") ? "; a file is a path" : "");
        ok = false;
    }
    for (int i = 0; ok && i < n; i++)
        for (int k = 0; ok && k < job->num_inputs; k++) {
            if (!seg_same_url(o[i].path, job->inputs[k])) continue;
            char a[SEG_PATH_MAX], b[SEG_PATH_MAX];
            seg_error(job, "%s %s is the input %s (the same stream): choose another %s",
                      o[i].what, seg_shown(o[i].path, a, sizeof a),
                      seg_shown(job->inputs[k], b, sizeof b),
                      !strcmp(o[i].what, "mask") ? "--mask-out" : "-o");
            ok = false;
        }
    for (int i = 0; ok && i < n; i++) {
        if (pf_io_is_url(o[i].path)) continue; /* no file to compare */
        int t = jobs_file_set_find(&ins, o[i].path);
        if (t < 0) continue;
        const char *in = t < job->num_inputs ? job->inputs[t]
                         : t == job->num_inputs ? job->model
                                                : job->bg_path;
        seg_error(job, "%s %s is the input %s (the same file): writing it would destroy the "
                  "input; choose another %s", o[i].what, o[i].path, in,
                  !strcmp(o[i].what, "trace") ? "--trace file"
                  : !strcmp(o[i].what, "mask") ? "--mask-out" : "-o");
        ok = false;
    }
    /* Outputs may not exist yet: compare their names with the directory
     * resolved ("out/x.png" and "./out/x.png" are one file). */
    for (int i = 0; ok && i < n; i++) {
        char canon[SEG_PATH_MAX];
        if (pf_io_is_url(o[i].path))
            snprintf(canon, sizeof canon, "%s", o[i].path);
        else
            jobs_canonical_path(o[i].path, canon, sizeof canon);
        if (!(keys[i] = strdup(canon))) {
            seg_error(job, "out of memory checking the outputs");
            ok = false;
        }
    }
    if (ok && n > 0 && !jobs_find_same(keys, n, first)) {
        seg_error(job, "out of memory checking the outputs");
        ok = false;
    }
    for (int i = 0; ok && i < n; i++) {
        int j = first[i];
        if (j < 0) continue;
        char shown[SEG_PATH_MAX];
        seg_shown(o[i].path, shown, sizeof shown);
        if (o[i].input >= 0 && o[j].input >= 0 && o[i].input != o[j].input)
            seg_error(job, "%s and %s would both be written to %s (the same name): rename one "
                      "or segment them in separate runs", job->inputs[o[j].input],
                      job->inputs[o[i].input], shown);
        else
            seg_error(job, "the %s and the %s would both be written to %s: choose different "
                      "names", o[j].what, o[i].what, shown);
        ok = false;
    }
    for (int i = 0; ok && i < n; i++) ok = jobs_may_write(job->sink, job->no_overwrite, o[i].path);
    jobs_file_set_free(&ins);
    for (int i = 0; keys && i < n; i++) free((char *)keys[i]);
    free(keys);
    free(first);
    free(o);
    return ok;
}

void seg_image_output(const seg_job *job, int i, bool mask, char *buf, size_t size)
{
    const char *where = mask ? job->mask_out : job->output;
    bool dir = mask ? job->mask_is_dir : job->output_is_dir;
    if (!dir) {
        snprintf(buf, size, "%s", where);
        return;
    }
    char st[512];
    if (job->kind == SEG_VIDEO) {
        snprintf(buf, size, "%s/mask_%06d.png", where, i);
        return;
    }
    seg_stem(job->inputs[i], st, sizeof st);
    const char *ext = extension(job->inputs[i]);
    if (mask || job->alpha || !ext[0]) ext = ".png";
    snprintf(buf, size, "%s/%s%s", where, st, ext);
}

void seg_job_free(seg_job *job)
{
    for (int i = 0; i < job->num_inputs; i++) free(job->inputs[i]);
    free(job->inputs);
    job->inputs = NULL;
    job->num_inputs = 0;
    pf_video_reader_destroy(&job->reader);
    pf_frame_unref(&job->bg_image);
}
