/* A segment job over several video inputs in one pipeline (`pixflow segment
 * IN1 IN2 URL ... -o 'out/{name}_seg.mp4'`). Each input becomes a stream job
 * (its reader, its outputs, its counts) under the parent job; segment.c connects one
 * reader per stream into the batched model and a demux routes each stream
 * to its own writer. Output names come from a pattern with {name} (the
 * input's stem, or pf_io_url_name for a URL) or {index} (its position). */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "jobs/segment_impl.h"

bool seg_multi_wanted(const char *const *args, int n)
{
    /* No image or directory among the arguments (an image among videos goes
     * to seg_collect_inputs, which says why they cannot be mixed); '-' and
     * missing files are refused later, each with its own message. */
    if (n < 2) return false;
    bool video = false;
    for (int i = 0; i < n; i++) {
        if (!strcmp(args[i], "-") || pf_io_is_url(args[i])) {
            video = true;
            continue;
        }
        jobs_input_kind k = jobs_input_classify(args[i], NULL);
        if (k == JOBS_INPUT_IMAGE || k == JOBS_INPUT_DIR) return false;
        video |= k == JOBS_INPUT_VIDEO;
    }
    return video;
}

bool seg_expand_pattern(const char *pattern, const char *input, int index, char *buf,
                        size_t size)
{
    char name[512];
    seg_stem(input, name, sizeof name);
    size_t o = 0;
    for (const char *c = pattern; *c;) {
        const char *put = NULL;
        char num[16];
        if (!strncmp(c, "{name}", 6)) {
            put = name;
            c += 6;
        } else if (!strncmp(c, "{index}", 7)) {
            snprintf(num, sizeof num, "%d", index);
            put = num;
            c += 7;
        }
        if (put) {
            size_t len = strlen(put);
            if (o + len >= size) return false;
            memcpy(buf + o, put, len);
            o += len;
        } else {
            if (o + 1 >= size) return false;
            buf[o++] = *c++;
        }
    }
    buf[o] = '\0';
    return true;
}

static bool has_key(const char *pattern)
{
    return strstr(pattern, "{name}") || strstr(pattern, "{index}");
}

/* A params error: not reported, named in pf_last_error (the caller's usage
 * message). */
static pf_status usage(const char *what, const char *arg)
{
    char shown[SEG_PATH_MAX]; /* a URL without its password */
    return pf_set_error(PF_ERR_INVALID, "%s '%s': several inputs need a pattern with {name} or "
                        "{index} (e.g. 'out/{name}_seg.mp4')", what,
                        seg_shown(arg, shown, sizeof shown));
}

/* An output of any stream, or the trace, that is the input of another
 * stream, the model or the background image (seg_check_outputs saw only
 * the stream's own input): e.g. `a.mp4 a_seg.mp4 -o '{name}_seg.mp4'`
 * would replace the second input with the first one's output. */
static bool check_cross_inputs(seg_job *job, const char *trace)
{
    for (int i = 0; i < job->num_streams; i++) {
        const seg_job *s = &job->streams[i];
        const char *outs[3] = {s->null_output ? NULL : s->output,
                               s->mask_out[0] ? s->mask_out : NULL, i == 0 ? trace : NULL};
        for (int k = 0; k < 3; k++) {
            if (!outs[k]) continue;
            for (int j = 0; j <= job->num_streams + 1; j++) {
                const char *in = j < job->num_streams ? job->streams[j].inputs[0]
                                 : j == job->num_streams ? job->model
                                                         : job->bg_path;
                if (!in || !in[0]) continue;
                char shown[SEG_PATH_MAX];
                if (seg_same_url(outs[k], in)) {
                    seg_error(job, "%s is %s, an input of this run (the same stream): choose "
                              "another output", seg_shown(outs[k], shown, sizeof shown),
                              job->streams[j].input_shown);
                    return false;
                }
                if (!pf_output_same_file(outs[k], in)) continue;
                seg_error(job, "%s would replace %s, an input of this run: choose another "
                          "output", outs[k], j < job->num_streams ? job->streams[j].input_shown
                                                                  : in);
                return false;
            }
        }
    }
    return true;
}

typedef struct open_task {
    seg_job *s;
    const char *path;
    atomic_bool *stop;        /* set by the first stream that fails */
    bool ok;
} open_task;

static void *open_thread(void *arg)
{
    open_task *t = arg;
    /* A live input that is down does not hold the run: its reader opens
     * it in the background (open_later, --retries). */
    t->ok = !atomic_load(t->stop) && seg_open_video(t->s, t->path);
    if (!t->ok) atomic_store(t->stop, true);
    return NULL;
}

/* Opens every stream's input at once: a live input's open waits for the
 * stream (connect, up to 1 s of probing, a UDP sender's first packets), so
 * one after the other 150 cameras would take minutes while the first ones'
 * frames pile up unread. The first input opens on this thread, before the
 * others start: one that fails ends the plan without touching the rest. */
static bool open_all(seg_job *job, const char *const *args, int n)
{
    atomic_bool stop = false;
    open_task *t = calloc((size_t)n, sizeof *t);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    bool *started = calloc((size_t)n, sizeof *started);
    if (!t || !th || !started) {
        free(t);
        free(th);
        free(started);
        seg_error(job, "out of memory");
        return false;
    }
    for (int i = 0; i < n; i++)
        t[i] = (open_task){.s = &job->streams[i], .path = args[i], .stop = &stop};
    open_thread(&t[0]);
    for (int i = 1; i < n && t[0].ok; i++)
        started[i] = pthread_create(&th[i], NULL, open_thread, &t[i]) == 0;
    bool ok = t[0].ok;
    for (int i = 1; i < n && t[0].ok; i++) {
        if (started[i]) pthread_join(th[i], NULL);
        else open_thread(&t[i]); /* no thread: here, in turn */
        ok &= t[i].ok;
    }
    free(t);
    free(th);
    free(started);
    return ok;
}

/* Outputs shared by two streams: one name for two files. */
static bool check_shared(seg_job *job)
{
    int n = 0;
    const char **keys = calloc((size_t)job->num_streams * 2, sizeof *keys);
    int *owner = calloc((size_t)job->num_streams * 2, sizeof *owner);
    int *first = calloc((size_t)job->num_streams * 2, sizeof *first);
    bool ok = keys && owner && first;
    for (int i = 0; ok && i < job->num_streams; i++) {
        seg_job *s = &job->streams[i];
        const char *paths[2] = {s->null_output ? NULL : s->output,
                                s->mask_out[0] ? s->mask_out : NULL};
        for (int k = 0; k < 2 && ok; k++) {
            if (!paths[k]) continue;
            char canon[SEG_PATH_MAX];
            if (pf_io_is_url(paths[k]))
                snprintf(canon, sizeof canon, "%s", paths[k]);
            else
                jobs_canonical_path(paths[k], canon, sizeof canon);
            owner[n] = i;
            ok = (keys[n++] = strdup(canon)) != NULL;
        }
    }
    if (ok) ok = jobs_find_same(keys, n, first);
    if (!ok) seg_error(job, "out of memory checking the outputs");
    for (int i = 0; ok && i < n; i++) {
        if (first[i] < 0) continue;
        char shown[SEG_PATH_MAX];
        seg_error(job, "%s and %s would both be written to %s (the same name): use {index} "
                  "in the pattern", job->streams[owner[first[i]]].input_shown,
                  job->streams[owner[i]].input_shown, seg_shown(keys[i], shown, sizeof shown));
        ok = false;
    }
    for (int i = 0; keys && i < n; i++) free((char *)keys[i]);
    free(keys);
    free(owner);
    free(first);
    return ok;
}

pf_status seg_multi_plan(seg_job *job, const char *const *args, int n, const char *out_arg,
                         const char *mask_arg, const char *trace, bool realtime)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(args[i], "-"))
            return pf_set_error(PF_ERR_INVALID, "inputs: '-' (stdin) is an input only on its "
                                "own");
    if (!job->null_output && (!out_arg || !has_key(out_arg)))
        return usage("output", out_arg ? out_arg : "(not given)");
    if (mask_arg && !has_key(mask_arg)) return usage("mask_out", mask_arg);
    job->streams = calloc((size_t)n, sizeof *job->streams);
    if (!job->streams) {
        seg_error(job, "out of memory");
        return PF_ERR_NOMEM;
    }
    /* Each stream's output names, expanded before anything is opened. */
    struct names {
        char out[SEG_PATH_MAX], mask[SEG_PATH_MAX];
    } *outs = calloc((size_t)n, sizeof *outs);
    if (!outs) {
        seg_error(job, "out of memory");
        return PF_ERR_NOMEM;
    }
    job->kind = SEG_VIDEO;
    job->input_label = "streams";
    /* Several GPUs: each stream on one device (the caller's list, else
     * round-robin), its NVDEC sessions shared with that device's streams. */
    int per_dev[SEG_MAX_DEVICES] = {0};
    for (int i = 0; i < n; i++)
        per_dev[job->ndevs > 1 ? (job->device_of ? job->device_of[i] : i % job->ndevs) : 0]++;
    for (int i = 0; i < n; i++) {
        seg_job *s = &job->streams[i];
        job->num_streams = i + 1;
        s->kind = SEG_VIDEO;
        int d = job->ndevs > 1 ? (job->device_of ? job->device_of[i] : i % job->ndevs) : 0;
        s->dev = job->ndevs > 1 ? job->devs[d] : job->dev;
        s->gate = job->gate;
        pthread_mutex_init(&s->gate_mu, NULL);
        pthread_cond_init(&s->gate_cv, NULL);
        s->realtime = realtime;
        s->retries = job->retries;
        s->output_timeout_ms = job->output_timeout_ms;
        s->output_options = job->output_options;
        s->alpha = job->alpha;
        s->null_output = job->null_output;
        s->codec = job->codec;
        s->preset = job->preset;
        s->crf = job->crf;
        s->bitrate = job->bitrate;
        s->max_frames = job->max_frames;
        s->start_s = job->start_s;
        s->duration_s = job->duration_s;
        s->no_audio = job->no_audio;
        s->sink = job->sink;
        s->no_overwrite = job->no_overwrite;
        s->stream_index = i;
        snprintf(s->stage_suffix, sizeof s->stage_suffix, "_%d", i);
        /* Each stream's share of the frames in flight (about four batches
         * of 64 between the mux and the writers, the fair mux giving each
         * stream 64/N of a batch) plus its own queue and the decoder's
         * holds: 150 cameras x 160 frames of 1080p would be 75 GB of
         * decoder pools, 150 x 25 is 12 GB. */
        s->reader_pool = 256 / n + 24 > 160 ? 160 : 256 / n + 24;
        s->hw_share = per_dev[d]; /* NVDEC engines spread over the device's streams */
        s->input_label = pf_io_redact(args[i], s->input_shown, sizeof s->input_shown);
        if ((!job->null_output &&
             !seg_expand_pattern(out_arg, args[i], i, outs[i].out, sizeof outs[i].out)) ||
            (mask_arg &&
             !seg_expand_pattern(mask_arg, args[i], i, outs[i].mask, sizeof outs[i].mask))) {
            seg_error(job, "%s: the output name is too long", s->input_label);
            free(outs);
            return PF_ERR_IO;
        }
    }
    bool ok = open_all(job, args, n);
    for (int i = 0; i < n && ok; i++) {
        seg_job *s = &job->streams[i];
        ok = seg_plan_outputs(s, job->null_output ? NULL : outs[i].out,
                              mask_arg ? outs[i].mask : NULL) &&
             seg_check_outputs(s, i == 0 ? trace : NULL);
    }
    free(outs);
    if (!ok) return PF_ERR_IO;
    if (!check_cross_inputs(job, trace) || !check_shared(job)) return PF_ERR_IO;
    /* A pattern may name a directory per stream: made once all is checked
     * (a URL has none). */
    for (int i = 0; i < n && !job->null_output && !pf_io_is_url(out_arg); i++) {
        char dir[SEG_PATH_MAX];
        snprintf(dir, sizeof dir, "%s", job->streams[i].output);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir) {
            *slash = '\0';
            if (!seg_make_dir(job, dir)) return PF_ERR_IO;
        }
    }
    return PF_OK;
}

void seg_multi_free(seg_job *job)
{
    for (int i = 0; i < job->num_streams; i++) {
        seg_job_free(&job->streams[i]);
        pthread_mutex_destroy(&job->streams[i].gate_mu);
        pthread_cond_destroy(&job->streams[i].gate_cv);
    }
    free(job->streams);
    job->streams = NULL;
    job->num_streams = 0;
}
