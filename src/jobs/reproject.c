/* The reproject job (jobs.h: pf_reproject_start): the params made into the
 * run's configuration, the output directory prepared, the inputs expanded
 * and checked, then the pipeline of reproject_run.c started. The job's
 * result is the run's statistics. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "jobs/reproject_run.h"

#define RP_MAX_SIZE 16384

typedef struct rp_task {
    rp_config cfg;
    rp_inputs in;
    jobs_sink sink;
    pf_device *dev;
    char *out_dir, *trace, *list;
    rp_run *run;
    pf_status start_status;
    char start_err[1024];
} rp_task;

pf_reproject_params pf_reproject_params_default(void)
{
    pf_reproject_params p;
    memset(&p, 0, sizeof p);
    p.interp = PF_INTERP_BILINEAR;
    p.format = PF_IMAGE_JPEG;
    p.quality = 90;
    p.every = 1;
    return p;
}

/* Params --------------------------------------------------------------------------------------- */

static pf_status check_view(const pf_view *v, int i)
{
    if (!(isfinite(v->yaw) && isfinite(v->pitch) && isfinite(v->roll)))
        return pf_set_error(PF_ERR_INVALID, "views[%d]: yaw, pitch and roll must be finite", i);
    if (!(v->fov > 0.0f && v->fov < 180.0f))
        return pf_set_error(PF_ERR_INVALID, "views[%d]: fov %g is outside (0, 180) degrees", i,
                            (double)v->fov);
    if (v->width < 1 || v->width > RP_MAX_SIZE || v->height < 1 || v->height > RP_MAX_SIZE)
        return pf_set_error(PF_ERR_INVALID, "views[%d]: size %dx%d is not 1..%d pixels each", i,
                            v->width, v->height, RP_MAX_SIZE);
    return PF_OK;
}

static void add_output(rp_config *c, const pf_view *v, const char *suffix)
{
    int i = c->num_outputs++;
    if (v) {
        c->views[i] = *v;
        c->out_width[i] = v->width;
        c->out_height[i] = v->height;
    }
    snprintf(c->suffix[i], sizeof c->suffix[i], "%s", suffix);
}

/* Checks the params and fills the configuration (strings still the caller's). */
static pf_status make_config(const pf_reproject_params *p, rp_config *c)
{
    memset(c, 0, sizeof *c);
    if (!p->output_dir || !p->output_dir[0])
        return pf_set_error(PF_ERR_INVALID, "output_dir: no output directory");
    if (p->num_inputs < 0 || (p->num_inputs > 0 && !p->inputs) || (p->num_inputs == 0 && !p->list))
        return pf_set_error(PF_ERR_INVALID, "inputs: no input: give files, directories, globs "
                            "or a list file");
    for (int i = 0; i < p->num_inputs; i++)
        if (!p->inputs[i] || !p->inputs[i][0])
            return pf_set_error(PF_ERR_INVALID, "inputs[%d]: empty", i);
    if (p->format != PF_IMAGE_JPEG && p->format != PF_IMAGE_PNG)
        return pf_set_error(PF_ERR_INVALID, "format %d: expected PF_IMAGE_JPEG or PF_IMAGE_PNG",
                            (int)p->format);
    if (p->quality < 1 || p->quality > 100)
        return pf_set_error(PF_ERR_INVALID, "quality %d: expected 1..100", p->quality);
    if (p->interp != PF_INTERP_BILINEAR && p->interp != PF_INTERP_NEAREST)
        return pf_set_error(PF_ERR_INVALID, "interp %d: expected bilinear or nearest",
                            (int)p->interp);
    if (p->every < 1)
        return pf_set_error(PF_ERR_INVALID, "every %d: expected a positive integer", p->every);
    const int threads[4] = {p->decoders, p->encoders, p->ring, p->inflight};
    static const char *const names[4] = {"decoders", "encoders", "ring", "inflight"};
    for (int i = 0; i < 4; i++)
        if (threads[i] < 0 || threads[i] > 256)
            return pf_set_error(PF_ERR_INVALID, "%s %d: expected 1..256 (0 = auto)", names[i],
                                threads[i]);
    c->interp = p->interp;
    c->format = p->format;
    c->ext = p->format == PF_IMAGE_PNG ? "png" : "jpg";
    c->quality = p->quality;
    c->every = p->every;
    c->decoders = p->decoders;
    c->encoders = p->encoders;
    c->ring = p->ring;
    c->inflight = p->inflight;
    c->no_overwrite = p->no_overwrite;
    if (p->codec != PF_REPROJECT_CODEC_AUTO && p->codec != PF_REPROJECT_CODEC_CPU &&
        p->codec != PF_REPROJECT_CODEC_GPU)
        return pf_set_error(PF_ERR_INVALID, "codec %d: expected a pf_reproject_codec",
                            (int)p->codec);
    c->codec = p->codec;
    c->cpu_assist = !p->no_cpu_assist;
    if (p->gpu_decoders < 0 || p->gpu_decoders > 16)
        return pf_set_error(PF_ERR_INVALID, "gpu_decoders %d: expected 1..16 (0 = auto)",
                            p->gpu_decoders);
    c->gpu_decoders = p->gpu_decoders;
    if (p->cube == PF_REPROJECT_NO_CUBE) {
        if (p->num_views < 1 || p->num_views > RP_MAX_OUTPUTS || !p->views)
            return pf_set_error(PF_ERR_INVALID, "views: %d views, expected 1..%d (or a cube)",
                                p->num_views, RP_MAX_OUTPUTS);
        c->mode = RP_MODE_VIEWS;
        for (int i = 0; i < p->num_views; i++) {
            pf_status st = check_view(&p->views[i], i);
            if (st != PF_OK) return st;
            char suffix[8];
            snprintf(suffix, sizeof suffix, "view%02d", i % 100);
            add_output(c, &p->views[i], suffix);
        }
        return PF_OK;
    }
    if (p->num_views > 0)
        return pf_set_error(PF_ERR_INVALID, "cube: a cube map cannot be combined with views");
    if (p->cube_size < 1 || p->cube_size > RP_MAX_SIZE)
        return pf_set_error(PF_ERR_INVALID, "cube_size %d: expected a face size 1..%d",
                            p->cube_size, RP_MAX_SIZE);
    c->cube_size = p->cube_size;
    if (p->cube == PF_REPROJECT_CUBE_FACES) {
        static const char *const faces[6] = {"px", "nx", "py", "ny", "pz", "nz"};
        c->mode = RP_MODE_CUBE_FACES;
        for (int k = 0; k < 6; k++) {
            pf_view v;
            pf_status st = pf_cube_face_view(k, c->cube_size, &v);
            if (st != PF_OK) return st;
            add_output(c, &v, faces[k]);
        }
        return PF_OK;
    }
    if (p->cube != PF_REPROJECT_CUBE_3X2 && p->cube != PF_REPROJECT_CUBE_1X6)
        return pf_set_error(PF_ERR_INVALID, "cube %d: expected a pf_reproject_cube", (int)p->cube);
    bool wide = p->cube == PF_REPROJECT_CUBE_3X2;
    c->mode = RP_MODE_CUBE_MOSAIC;
    c->cube_layout = wide ? PF_CUBE_3X2 : PF_CUBE_1X6;
    add_output(c, NULL, "cube");
    c->out_width[0] = wide ? 3 * c->cube_size : c->cube_size;
    c->out_height[0] = wide ? 2 * c->cube_size : 6 * c->cube_size;
    if (c->out_height[0] > RP_MAX_SIZE)
        return pf_set_error(PF_ERR_INVALID, "cube_size %d: the %s mosaic is over %d pixels high",
                            c->cube_size, wide ? "3x2" : "1x6", RP_MAX_SIZE);
    return PF_OK;
}

/* Output directory ------------------------------------------------------------------------------ */

/* mkdir -p, then proves the directory writable by creating and removing a
 * file (access() says yes to root even on a read-only mount). */
static bool prepare_out_dir(const jobs_sink *sink, const char *dir)
{
    char path[PATH_MAX];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path - 64) {
        rp_report(sink, "output directory '%s': bad path", dir);
        return false;
    }
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0') continue;
        char keep = path[i];
        path[i] = '\0';
        struct stat st;
        if (stat(path, &st) != 0) {
            if (mkdir(path, 0777) != 0 && errno != EEXIST) {
                rp_report(sink, "%s: cannot create the output directory: %s", path,
                          strerror(errno));
                return false;
            }
        } else if (!S_ISDIR(st.st_mode)) {
            rp_report(sink, "%s: cannot be the output directory: %s is not a directory", dir,
                      path);
            return false;
        }
        path[i] = keep;
    }
    snprintf(path, sizeof path, "%s/.pixflow-write-test-%ld", dir, (long)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        rp_report(sink, "%s: the output directory is not writable: %s", dir, strerror(errno));
        return false;
    }
    close(fd);
    unlink(path);
    return true;
}

/* Job ops ---------------------------------------------------------------------------------------- */

static void fill_result(pf_job *j, const rp_task *t)
{
    rp_stats s;
    rp_run_get_stats(t->run, &s);
    pf_job_result *r = &j->result;
    pf_reproject_result *x = &r->reproject;
    *x = s.x;
    x->output_dir = t->cfg.out_dir;
    x->views_per_image = t->cfg.num_outputs;
    x->format = t->cfg.format;
    x->quality = t->cfg.quality;
    x->expand_failures = (uint64_t)t->in.expand_failures;
    const pf_device_props *dp = pf_device_props_get(t->dev);
    r->input = t->in.count == 1 ? t->in.items[0].path : "images";
    r->output = t->cfg.out_dir;
    r->device = pf_device_spec(t->dev);
    r->device_name = dp ? dp->name : "";
    r->frames = (int64_t)x->images_done;
    r->images = t->in.count;
    r->failed = (int64_t)(x->images_failed + x->expand_failures);
    r->elapsed_s = s.elapsed_s;
    r->fps = s.elapsed_s > 0 ? (double)x->images_done / s.elapsed_s : 0.0;
    r->latency_p50_ms = s.latency_p50_ms;
    r->latency_p99_ms = s.latency_p99_ms;
}

static pf_status rp_wait(pf_job *j, int64_t timeout_us)
{
    rp_task *t = j->impl;
    if (rp_run_wait(t->run, timeout_us) == PF_TIMEOUT) return PF_TIMEOUT;
    fill_result(j, t);
    j->result.status = t->start_status != PF_OK ? PF_JOB_FAILED
                       : j->cancelled           ? PF_JOB_INTERRUPTED
                                                : PF_JOB_DONE;
    if (t->start_status != PF_OK)
        return pf_set_error(t->start_status, "%s", t->start_err);
    return PF_OK;
}

static void rp_cancel_async(pf_job *j)
{
    rp_task *t = j->impl;
    if (t->run) rp_run_cancel(t->run);
}

static void rp_progress(pf_job *j, pf_job_progress *p)
{
    rp_task *t = j->impl;
    rp_stats s;
    rp_run_get_stats(t->run, &s);
    p->done = (int64_t)(s.x.images_done + s.x.images_failed);
    p->failed = (int64_t)s.x.images_failed;
    p->total = s.images_expected;
    p->elapsed_s = s.elapsed_s;
}

static double per_image_ms(const pf_reproject_result *x, int st)
{
    uint64_t images = x->images_done + x->images_failed;
    return images ? (double)x->busy_ns[st] * 1e-6 / (double)images : 0.0;
}

/* The stage table of the summary. */
static pf_status rp_print_stats(pf_job *j, FILE *f)
{
    const pf_job_result *r = &j->result;
    const pf_reproject_result *x = &r->reproject;
    fprintf(f, "  %-10s %9s %10s %8s %6s\n", "stage", "busy s", "ms/image", "threads", "util");
    for (int st = 0; st < RP_STAGE_COUNT; st++) {
        /* Copies exist on a GPU only. */
        if (x->busy_count[st] == 0 && (st == RP_STAGE_UPLOAD || st == RP_STAGE_DOWNLOAD))
            continue;
        double avail = r->elapsed_s * x->stage_threads[st];
        double util = avail > 0 ? (double)x->busy_ns[st] * 1e-9 / avail : 0.0;
        fprintf(f, "  %-10s %9.2f %10.2f %8d %5.0f%%\n",
                pf_reproject_stage_name((pf_reproject_stage)st), (double)x->busy_ns[st] * 1e-9,
                per_image_ms(x, st), x->stage_threads[st], util * 100);
    }
    return PF_OK;
}

static void task_free(rp_task *t)
{
    rp_run_destroy(&t->run); /* joins the threads, writes the trace */
    rp_inputs_free(&t->in);
    free(t->out_dir);
    free(t->trace);
    free(t->list);
    free(t);
}

static void rp_destroy(pf_job *j)
{
    task_free(j->impl);
}

static const job_ops rp_ops = {rp_wait, rp_cancel_async, rp_progress, rp_print_stats, rp_destroy};

/* Start ------------------------------------------------------------------------------------------ */

pf_status pf_reproject_start(const pf_reproject_params *p, pf_job **out)
{
    PF_CHECK_ARG(p && out, "pf_reproject_start", "params or out is NULL");
    *out = NULL;
    rp_task *t = calloc(1, sizeof *t);
    if (!t) return pf_set_error(PF_ERR_NOMEM, "pf_reproject_start: out of memory");
    pf_status st = make_config(p, &t->cfg);
    if (st != PF_OK) {
        free(t);
        return st;
    }
    t->sink = (jobs_sink){p->on_message, p->user, p->on_frame};
    t->cfg.sink = &t->sink;
    t->out_dir = strdup(p->output_dir);
    t->trace = p->trace ? strdup(p->trace) : NULL;
    t->list = p->list ? strdup(p->list) : NULL;
    t->cfg.out_dir = t->out_dir;
    t->cfg.trace_path = t->trace;
    t->cfg.list_path = t->list;
    if (!t->out_dir || (p->trace && !t->trace) || (p->list && !t->list)) {
        task_free(t);
        return pf_set_error(PF_ERR_NOMEM, "pf_reproject_start: out of memory");
    }
    t->dev = p->device;
    if (!t->dev && (st = pf_device_select(NULL, &t->dev)) != PF_OK)
        rp_report(&t->sink, "device: %s", pf_last_error());
    if (st == PF_OK && !prepare_out_dir(&t->sink, t->out_dir)) st = PF_ERR_IO;
    if (st == PF_OK && !rp_inputs_expand(&t->in, &t->sink, p->inputs, p->num_inputs, t->list))
        st = PF_ERR_IO;
    if (st == PF_OK && !rp_check_outputs(&t->in, &t->cfg)) st = PF_ERR_IO;
    if (st == PF_OK) st = rp_run_create(&t->cfg, &t->in, t->dev, &t->run);
    pf_job *j = st == PF_OK ? jobs_new(PF_JOB_REPROJECT, &rp_ops, t) : NULL;
    if (st == PF_OK && !j) st = pf_set_error(PF_ERR_NOMEM, "pf_reproject_start: out of memory");
    if (st != PF_OK) {
        char err[1024];
        snprintf(err, sizeof err, "%s", pf_last_error());
        task_free(t);
        return pf_set_error(st == PF_ERR_INVALID ? PF_ERR_FORMAT : st, "%s", err);
    }
    /* A start that fails is the run's failure (the summary still says so). */
    t->start_status = rp_run_start(t->run);
    if (t->start_status != PF_OK) snprintf(t->start_err, sizeof t->start_err, "%s", pf_last_error());
    *out = j;
    return PF_OK;
}
